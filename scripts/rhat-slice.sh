#!/usr/bin/env bash
# One slice of the paper's R-hat experiment (bnn rhat: repeats of x* with
# several chains each) on a machine that keeps nothing from one command to
# the next, such as a lent GPU (docs/performance.md, "bnn rhat in the
# paper's setting, in slices"). In one command that ends by its deadline:
# the repeats that earlier slices brought back put in the folder, bnn from
# the carried kit (or built), as many of the other repeats as end in time,
# and every saved repeat archived:
#
#   scripts/rhat-slice.sh NAME OUT_DIR [bnn rhat OPTION...]
#
# NAME (letters, digits, '-') names the slice's files; the OPTIONs go to
# bnn rhat (--chains 4 --repeats 16 --device cuda; not --out, --config or
# --time-limit, which the slice sets; --only picks repeats as in bnn rhat).
# Into OUT_DIR:
#
#   rhat_NAME.tar  bnn.json and every saved repeat's member_NNN/chains.json
#                  (a few kB a repeat): this slice's and the earlier ones'
#   rhat_NAME.log  the archives unpacked, how bnn was had, bnn's log
#   bnn-kit.tar.gz where bnn had to be built: that build, for the next
#                  slices to carry (build-pip-torch.sh --save-kit)
#
# Earlier slices' archives, BNN_SLICE_SAVED/rhat_*.tar (default gpu-kit/,
# carried), are unpacked first, so bnn runs only the repeats none of them
# holds, and the last slice's archive holds them all. Then, with a bnn of
# the same commit, on the machine that gathers: `mkdir g && tar xf
# rhat_NAME.tar -C g`, and bnn rhat with the slices' OPTIONs (less --device
# and --throughput) and --out g writes the tables and the figure without
# running a chain.
#
# Time. BNN_SLICE_DEADLINE (seconds from the start, default 530, at least
# 60) is when the script ends: bnn's --time-limit is what is left after bnn
# was had less 30 s (bnn rhat starts a repeat only where a whole one, as
# long as the longest it ran so far, ends in time), and bnn is stopped
# outright 10 s before the deadline, leaving those seconds for the archive.
# A repeat stopped part-way is lost; those saved stay saved (each is
# written atomically as it ends) and are archived even where bnn failed.
#
# Repeats at once. With BNN_SLICE_THROUGHPUT, a members_per_device.csv of
# bench/members_per_device.sh measured on this kind of device, bnn rhat
# chooses them for the most repeats that end whole in its time
# (--throughput); an OPTION --repeats-at-once other than auto is then
# refused. A table that is missing or holds no finished run is named in
# the log, and the repeats run one at a time (as in paper-slice.sh).
#
# Environment: BNN_SLICE_BNN, BNN_SLICE_KIT, BNN_SLICE_DEBS and
# BNN_SLICE_BUILD as for scripts/paper-slice.sh; BNN_SLICE_CONFIG (default
# configs/fashion_mnist_paper.yaml); BNN_SLICE_WORK (default /tmp/bnn-slice):
# the folder is BNN_SLICE_WORK/rhat_NAME/rhat, and a slice called again on
# the same machine goes on in it.
#
# Exit: 0 when every repeat is saved (bnn wrote the tables in its folder,
# which stays on the machine, or was stopped after the last repeat: the
# gathering writes them again); 75 when
# some may not be (rhat_NAME.log names them, or says the deadline stopped
# bnn: run a later slice); 2 for bad arguments, before anything runs; 1 for
# anything else (an archive that does not unpack, no bnn, no time left,
# bnn failed: its saved repeats are archived all the same), the log says
# what.
set -uo pipefail

usage="usage: scripts/rhat-slice.sh NAME OUT_DIR [bnn rhat OPTION...]"
slice_script=rhat-slice
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/scripts/slice-common.sh" || exit 1
name="${1:-}"
out="${2:-}"
[[ -n "$out" ]] || { echo "$usage" >&2; exit 2; }
shift 2
slice_name_and_deadline "$name" 60
slice_options --repeats-at-once "repeats at once" "$@"

start=$(date +%s)
slice_config
saved="${BNN_SLICE_SAVED:-$root/gpu-kit}"
work="${BNN_SLICE_WORK:-/tmp/bnn-slice}/rhat_$name"
[[ -e "$work" ]] || ! compgen -G "$out/rhat_$name.*" > /dev/null ||
  bad "$out already holds slice $name's files: give another NAME or OUT_DIR"
mkdir -p "$out" "$work/rhat" || exit 1
out="$(cd "$out" && pwd)"
log="$out/rhat_$name.log"
# A slice called again adds to its log: the earlier call's lines stay.
[[ -s "$log" ]] && echo "--- called again $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$log"

# The repeats earlier slices saved, into the folder: bnn rhat reads them
# (and refuses a file of another experiment by name). A file already there
# (this machine's, in a slice called again) is kept as it is.
for archive in "$saved"/rhat_*.tar; do
  [[ -f "$archive" ]] || continue
  if ! tar -xf "$archive" -C "$work/rhat" --skip-old-files 2>> "$log"; then
    say "$archive does not unpack (the log above): remove it from $saved or mend it"
    exit 1
  fi
  say "$(basename "$archive"): $(tar -tf "$archive" | grep -c '/chains\.json$') saved repeat(s)"
done

slice_bnn

# bnn's clock starts after its libraries load (seconds, with CUDA's): 20 s
# of room between its time limit and the stop, as in paper-slice.sh.
left=$((deadline_s - $(elapsed) - 30))
if [[ $left -lt 5 ]]; then
  say "no time left to sample: $left s after bnn was had (deadline $deadline_s s, 30 s kept for the stop and" \
    "the archive)"
  exit 1
fi
slice_throughput streams rhat repeats --repeats-at-once
say "running repeats for at most $left s ($(date -u +%H:%M:%SZ))"
t0=$(date +%s)
run_stoppable timeout -k 5 $((left + 20)) "$bnn" rhat "$@" "${throughput[@]}" --no-figures --time-limit "${left}s" \
  --config "$config" --out "$work/rhat" >> "$log" 2>&1
stopped=0
if [[ $code -eq 124 || ($code -eq 137 && $(($(date +%s) - t0)) -ge $((left + 20))) ]]; then
  say "bnn rhat was stopped at the deadline (exit $code)"
  stopped=1
  code=75
else
  say "bnn rhat exited $code"
  if [[ $code -eq 2 ]] && grep -q "give --out a new folder" "$log"; then
    say "(the slice sets --out: for other options, give the slice another NAME)"
  fi
fi

# Every saved repeat is archived, also where bnn failed (a repeat that ran
# out of memory does not take those that ended before it).
repeats=()
while IFS= read -r file; do repeats+=("$file"); done < <(cd "$work/rhat" && find . -path './member_*/chains.json' |
  sed 's|^\./||' | sort)
if [[ ${#repeats[@]} -eq 0 ]]; then
  say "no repeat saved: nothing to archive"
  [[ $code -eq 0 || $code -eq 75 ]] || exit 1
  # bnn ran every repeat yet none is in the folder: not where the script looks.
  [[ $code -eq 75 ]] || { say "bnn rhat exited 0 with no repeat in $work/rhat"; exit 1; }
  exit 75
fi
if ! { tar -cf "$out/rhat_$name.tar.tmp" -C "$work/rhat" bnn.json "${repeats[@]}" &&
  mv "$out/rhat_$name.tar.tmp" "$out/rhat_$name.tar"; }; then
  say "the archive rhat_$name.tar could not be written"
  rm -f "$out/rhat_$name.tar.tmp"
  exit 1
fi
say "rhat_$name.tar: ${#repeats[@]} saved repeat(s); done in $(elapsed) s"
[[ $code -eq 0 || $code -eq 75 ]] || exit 1
# A stop at the deadline loses the repeat bnn was running, if it was running
# one: stopped after the last was saved (writing its tables), it lost
# nothing, every repeat the folder's bnn.json names is in the archive, and
# no later slice is needed.
if [[ $stopped -eq 1 ]]; then
  wanted=$(sed -n 's/^ *"rhat\.repeats": *"\([0-9][0-9]*\)",\{0,1\}$/\1/p' "$work/rhat/bnn.json")
  have=0
  for r in $(seq 0 $((${wanted:-0} - 1))); do
    [[ -f "$work/rhat/$(printf 'member_%03d' "$r")/chains.json" ]] && have=$((have + 1))
  done
  if [[ -n "$wanted" && $have -eq $wanted ]]; then
    say "all $wanted repeats are saved: the archive holds the experiment"
    exit 0
  fi
  say "$have of ${wanted:-the} repeats saved: the one bnn was running is lost; run a later slice"
fi
exit "$code"
