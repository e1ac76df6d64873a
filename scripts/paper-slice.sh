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
# --members-per-device 8). Into OUT_DIR:
#
#   NAME_01.tar, ...  the finished members (scripts/pack-members.sh, at most
#                     15 MiB each): scripts/pack-members.sh unpack, then bnn
#                     evaluate, on the machine that gathers the slices
#   NAME.tsv          the slice's rows of paper-run.sh's slices.tsv, for
#                     paper-run.sh --assemble (the wall time, the commands)
#   NAME.log          how bnn was had (kit or build), bnn's log, the pack's lines
#
# Every slice runs with evaluation.save_sample_probs=false: a paper member
# then packs into about 1.25 MB instead of 7.2 (its metrics are the same).
# Slices must share their settings, or unpack refuses a slice's members as
# another experiment's. The run folder stays in BNN_SLICE_WORK/NAME: called
# again on the same machine, the slice resumes it.
#
# Environment: BNN_SLICE_DEADLINE, seconds from the start by which the script
# ends (default 530, for a ten-minute command with the machine's start
# outside it); BNN_SLICE_BNN, a bnn to use as it is (default: bnn built by
# scripts/build-pip-torch.sh into build-torch, from BNN_SLICE_KIT where it
# fits, else compiled); BNN_SLICE_KIT (default gpu-kit/bnn-kit.tar.gz, where
# it exists); BNN_SLICE_DEBS (default debs, where it exists);
# BNN_SLICE_BUILD, the build folder (default build-torch in the checkout);
# BNN_SLICE_CONFIG (default configs/fashion_mnist_paper.yaml);
# BNN_SLICE_WORK (default /tmp/bnn-slice); BNN_COMMIT as for paper-run.sh.
#
# Exit: 0 when every member finished and is packed; 75 when the deadline
# stopped some (those that finished are packed: train the others in a later
# slice, or call again on the same machine); 2 for bad arguments; 1 when there is no time left to train or no
# bnn; else paper-run.sh's or pack-members.sh's code.
set -uo pipefail

usage="usage: scripts/paper-slice.sh NAME MEMBERS OUT_DIR [bnn run OPTION...]"
name="${1:-}"
members="${2:-}"
out="${3:-}"
[[ -n "$out" ]] || { echo "$usage" >&2; exit 2; }
shift 3
[[ "$name" =~ ^[A-Za-z0-9-]+$ ]] ||
  { echo "paper-slice: NAME '$name' must be letters, digits and '-' (it names the files that come back)" >&2; exit 2; }
[[ "$members" =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] ||
  { echo "paper-slice: MEMBERS '$members' is not a member list such as 0-3 or 4,6-9" >&2; exit 2; }
deadline_s="${BNN_SLICE_DEADLINE:-530}"
[[ "$deadline_s" =~ ^[0-9]+$ ]] ||
  { echo "paper-slice: BNN_SLICE_DEADLINE '$deadline_s' is not a whole number of seconds" >&2; exit 2; }

start=$(date +%s)
root="$(cd "$(dirname "$0")/.." && pwd)"
config="${BNN_SLICE_CONFIG:-$root/configs/fashion_mnist_paper.yaml}"
[[ -f "$config" ]] || { echo "paper-slice: no config file $config" >&2; exit 2; }
work="${BNN_SLICE_WORK:-/tmp/bnn-slice}/$name"
mkdir -p "$out" "$work" || exit 2
out="$(cd "$out" && pwd)"
log="$out/$name.log"
: > "$log"
say() { echo "paper-slice: $*" | tee -a "$log"; }

# bnn: as given, or from the kit, or built.
bnn="${BNN_SLICE_BNN:-}"
if [[ -z "$bnn" ]]; then
  kit="${BNN_SLICE_KIT:-$root/gpu-kit/bnn-kit.tar.gz}"
  debs="${BNN_SLICE_DEBS:-$root/debs}"
  build="${BNN_SLICE_BUILD:-$root/build-torch}"
  build_args=(--build "$build" --no-tests --target bnn)
  [[ -f "$kit" ]] && build_args+=(--from-kit "$kit")
  [[ -d "$debs" ]] && build_args+=(--debs "$debs" --with-data)
  say "bnn from scripts/build-pip-torch.sh ${build_args[*]}"
  timeout -k 5 $((deadline_s - ($(date +%s) - start))) env BNN_CUDA_KERNELS="${BNN_CUDA_KERNELS:-ON}" \
    bash "$root/scripts/build-pip-torch.sh" "${build_args[@]}" >> "$log" 2>&1
  code=$?
  [[ $code -eq 0 ]] || { say "no bnn: scripts/build-pip-torch.sh exited $code (the log above)"; exit 1; }
  bnn="$build/src/bnn"
  grep -E "^build-pip-torch: (bnn from the kit|not using the kit|built in)" "$log" | tail -2
fi
[[ -x "$bnn" ]] || { say "$bnn is not an executable bnn"; exit 1; }

# What the deadline leaves for training: packing and copying take seconds,
# and bnn's --time-limit stops members at the epoch ends before it.
reserve=20
left=$((deadline_s - ($(date +%s) - start) - reserve))
if [[ $left -lt 30 ]]; then
  say "no time left to train: $left s after bnn was had (deadline $deadline_s s, $reserve s kept for packing)"
  exit 1
fi
# A run this slice began on this machine resumes with its own config
# (bnn run --resume takes no --set).
setting=(--set evaluation.save_sample_probs=false)
if [[ -f "$work/run/config.yaml" ]]; then
  setting=()
  say "resuming $work/run"
fi
say "training members $members for at most $left s ($(date -u +%H:%M:%SZ))"
bash "$root/scripts/paper-run.sh" --config "$config" "$bnn" "$work/run" "$work/log" \
  --members "$members" "${setting[@]}" --time-limit "${left}s" "$@" >> "$log" 2>&1
code=$?
for slice_log in "$work"/log/slice_*.log; do
  [[ -f "$slice_log" ]] && { echo "--- $(basename "$slice_log")"; cat "$slice_log"; } >> "$log"
done
cp "$work/log/slices.tsv" "$out/$name.tsv.tmp" 2> /dev/null && mv "$out/$name.tsv.tmp" "$out/$name.tsv"
say "paper-run.sh exited $code"
if [[ $code -ne 0 && $code -ne 75 ]]; then exit "$code"; fi
if ! grep -qs '"status": *"done"' "$work"/run/member_*/status.json; then
  say "no member finished in time: nothing to pack (call again on this machine to resume $work/run)"
  exit "$code"
fi

bash "$root/scripts/pack-members.sh" pack "$work/run" "$out/$name" 15 2>&1 | tee -a "$log"
pack=${PIPESTATUS[0]}
[[ $pack -eq 0 ]] || { say "scripts/pack-members.sh exited $pack"; exit "$pack"; }
say "done in $(($(date +%s) - start)) s"
exit "$code"
