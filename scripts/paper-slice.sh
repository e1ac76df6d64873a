#!/usr/bin/env bash
# One slice of the paper's run on a machine that keeps nothing from one
# command to the next, such as a lent GPU given back bare after each session
# (docs/performance.md, "A GPU session in 15 minutes"). In one command that
# ends by its deadline: bnn from the carried kit (or built), the members
# MEMBERS trained, and the finished ones packed into archives small enough
# to come back, with the slice's record:
#
#   scripts/paper-slice.sh NAME MEMBERS OUT_DIR [bnn run OPTION...]
#
# NAME (letters, digits, '-') names the slice's files, MEMBERS is bnn run's
# --members (0-3, 4-19), and the OPTIONs go to bnn run (--device cuda,
# --members-per-device 8; not --members, --time-limit, --out or --config,
# which the slice sets; an OPTION bnn refuses ends the slice with exit 2,
# leaving NAME free). Into
# OUT_DIR:
#
#   NAME_01.tar, ...  the finished members (scripts/pack-members.sh, at most
#                     15 MiB each): scripts/pack-members.sh unpack, then bnn
#                     evaluate, on the machine that gathers the slices
#   NAME.tsv          the slice's rows of paper-run.sh's slices.tsv, for
#                     paper-run.sh --assemble (the wall time, the commands);
#                     a slice resumed on the same machine writes all its
#                     rows again: keep the last NAME.tsv
#   NAME.log          how bnn was had (kit or build), bnn's log, the pack's lines
#   bnn-kit.tar.gz    where bnn had to be built: that build, for the next
#                     slices to carry (build-pip-torch.sh --save-kit)
#
# Every slice runs with evaluation.save_sample_probs=false: a paper member
# then packs into about 1.25 MB instead of 7.2 (its metrics are the same).
# Slices must share their settings, or unpack refuses a slice's members as
# another experiment's. The run folder stays in BNN_SLICE_WORK/NAME: called
# again on the same machine with the same MEMBERS, config and OPTIONs, the
# slice resumes it; with others, it is refused.
#
# Time. BNN_SLICE_DEADLINE (seconds from the start, default 530, at least
# 60) is when the script ends: bnn's --time-limit is what is left after bnn
# was had less 30 s, with --whole-members (bnn starts a member only where a
# whole member would end in time, as long as the longest it trained so far,
# and stops the others at epoch ends), and training is stopped outright 10 s
# before the deadline, leaving those seconds for packing. So MEMBERS may
# name more members than the time finishes: those not started are left for
# a later slice.
#
# Members at once. With BNN_SLICE_THROUGHPUT, a members_per_device.csv of
# bench/members_per_device.sh measured on this kind of device (scripts/gpu-check.sh
# leaves one in build-torch/members_table/), bnn run chooses them for the
# most members that end whole in its time (--throughput); an OPTION
# --members-per-device other than auto is then refused. A table that is
# missing or holds no finished run is named in NAME.log, and the members
# are trained one at a time (the table comes from a check that may not
# have got that far; bnn's default would start up to 8 at once before any
# is timed, which in a slice's minutes could finish none).
#
# Environment: BNN_SLICE_BNN, a bnn to use as it is (default: bnn built by
# scripts/build-pip-torch.sh, from BNN_SLICE_KIT where it fits, else
# compiled); BNN_SLICE_KIT (default gpu-kit/bnn-kit.tar.gz, where it
# exists); BNN_SLICE_DEBS (default debs, where it exists); BNN_SLICE_BUILD,
# the build folder (default build-torch in the checkout); BNN_SLICE_CONFIG
# (default configs/fashion_mnist_paper.yaml); BNN_SLICE_WORK (default
# /tmp/bnn-slice); BNN_COMMIT as for paper-run.sh.
#
# Exit: 0 when every member finished and is packed; 75 when the deadline
# stopped some, or another process holds some (those that finished are
# packed: train the others in a later slice, or call again on the same
# machine); 2 for bad arguments; 1 for anything else that failed (no bnn,
# no time left to train, training failed, packing failed), NAME.log says
# what. A TERM, INT or HUP to the script stops bnn too.
set -uo pipefail

usage="usage: scripts/paper-slice.sh NAME MEMBERS OUT_DIR [bnn run OPTION...]"
slice_script=paper-slice
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/scripts/slice-common.sh" || exit 1
name="${1:-}"
members="${2:-}"
out="${3:-}"
[[ -n "$out" ]] || { echo "$usage" >&2; exit 2; }
shift 3
slice_name_and_deadline "$name" 60
[[ "$members" =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] ||
  bad "MEMBERS '$members' is not a member list such as 0-3 or 4,6-9"
slice_options --members-per-device "members per device" "$@"
options=("$@")
for option in "${options[@]}"; do
  case "$option" in
    --members | --members=*) bad "--members is MEMBERS, the second argument: give it there" ;;
  esac
done
design=streams
for ((i = 0; i < ${#options[@]}; ++i)); do
  case "${options[i]}" in
    --member-design=*) design="${options[i]#*=}" ;;
    --member-design) design="${options[i + 1]:-}" ;;
  esac
done

start=$(date +%s)
slice_config
work="${BNN_SLICE_WORK:-/tmp/bnn-slice}/$name"
# What the run folder was started with: a folder of other settings is not resumed.
identity="members $members; config $(sha256sum < "$config" | cut -c1-16); options $*"
resume=0
if [[ -e "$work/run" ]]; then
  [[ "$(cat "$work/slice.txt" 2> /dev/null)" == "$identity" ]] ||
    bad "$work holds a slice started with other settings ($(cat "$work/slice.txt" 2> /dev/null ||
      echo 'not by paper-slice.sh')), not $identity: give another NAME or remove that folder"
  resume=1
elif compgen -G "$out/$name.tsv" > /dev/null || compgen -G "$out/${name}_[0-9][0-9].tar" > /dev/null; then
  bad "$out already holds slice $name's files: give another NAME or OUT_DIR"
fi
mkdir -p "$out" "$work" || exit 1
out="$(cd "$out" && pwd)"
echo "$identity" > "$work/slice.txt"
log="$out/$name.log"
: > "$log"

slice_bnn

left=$((deadline_s - $(elapsed) - 30))
if [[ $left -lt 30 ]]; then
  say "no time left to train: $left s after bnn was had (deadline $deadline_s s, 30 s kept for scoring and packing)"
  exit 1
fi
# A run this slice began on this machine resumes with its own config
# (bnn run --resume takes no --set).
setting=(--set evaluation.save_sample_probs=false)
if [[ $resume == 1 ]]; then
  setting=()
  say "resuming $work/run"
fi
slice_throughput "$design" run members --members-per-device
say "training members $members for at most $left s ($(date -u +%H:%M:%SZ))"
started_utc="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
t0=$(date +%s)
# The rows of slices.tsv below its header: paper-run.sh writes one per command it ends.
table_rows() {
  if [[ -s "$work/log/slices.tsv" ]]; then echo $(($(wc -l < "$work/log/slices.tsv") - 1)); else echo 0; fi
}
rows=$(table_rows)
# --whole-members: a member starts only where a whole member fits the time
# left, since one stopped part-way is lost with the machine (its checkpoint
# does not travel) and would slow those that can finish.
run_stoppable timeout -k 5 $((left + 20)) bash "$root/scripts/paper-run.sh" --config "$config" "$bnn" "$work/run" \
  "$work/log" --members "$members" "${setting[@]}" --time-limit "${left}s" --whole-members "$@" "${throughput[@]}" \
  >> "$log" 2>&1
if [[ $code -eq 2 && $resume == 0 && ! -e "$work/run" ]]; then
  # bnn refused an OPTION before it made the run folder (it does so only
  # once the data and model loaded): nothing was trained, and the NAME
  # stays free. An exit 2 later (a file bnn refused), or 74 (the storage
  # failed a write), keeps everything.
  sed -n '/^bnn: error: /p' "$work"/log/slice_*.log 2> /dev/null
  cat "$work"/log/slice_*.log >> "$log" 2> /dev/null
  rm -rf "$work"
  say "bnn run refused its arguments (exit 2; $log has its log): nothing was trained, and $name may be used again"
  exit 2
fi
deadline=0
[[ $code -eq 124 || $code -eq 137 ]] && deadline=1
if [[ $(table_rows) -eq $rows ]]; then
  # Stopped outright: paper-run.sh wrote no row for it.
  why="training stopped by a signal"
  [[ $deadline == 1 ]] && why="training stopped at the slice's deadline"
  [[ -s "$work/log/slices.tsv" ]] || printf 'started_utc\tseconds\texit_code\tcommand\n' > "$work/log/slices.tsv"
  printf '%s\t%s\t%s\t%s\n' "$started_utc" "$(($(date +%s) - t0))" "$code" \
    "scripts/paper-slice.sh $name $members ($why)" >> "$work/log/slices.tsv"
fi
if [[ $deadline == 1 ]]; then
  say "training was stopped at the deadline (exit $code)"
  code=75
fi
for slice_log in "$work"/log/slice_*.log; do
  [[ -f "$slice_log" ]] && { echo "--- $(basename "$slice_log")"; cat "$slice_log"; } >> "$log"
done
cp "$work/log/slices.tsv" "$out/$name.tsv.tmp" 2> /dev/null && mv "$out/$name.tsv.tmp" "$out/$name.tsv"
say "paper-run.sh exited $code"
if [[ $code -ne 0 && $code -ne 75 ]]; then exit 1; fi
if ! grep -qs '"status": *"done"' "$work"/run/member_*/status.json; then
  say "no member finished in time: nothing to pack (call again on this machine to resume $work/run)"
  exit "$code"
fi

rm -f "$work/pack.txt"
bash "$root/scripts/pack-members.sh" pack "$work/run" "$out/$name" 15 2>&1 | tee -a "$log" "$work/pack.txt"
pack=${PIPESTATUS[0]}
[[ $pack -eq 0 ]] || { say "scripts/pack-members.sh exited $pack"; exit 1; }
# bnn exits 0 where another process holds the members it has left (one an
# interrupted call of this slice left running, say): they are not packed.
if [[ $code -eq 0 ]] && grep -q "^pack-members: not finished, left out: " "$work/pack.txt"; then
  say "members not finished (another process may still be training them): call again on this machine"
  code=75
fi
say "done in $(elapsed) s"
exit "$code"
