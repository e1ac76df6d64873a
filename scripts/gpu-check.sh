#!/usr/bin/env bash
# The checks that need a GPU, in one go, on a machine with a CUDA pip PyTorch,
# CMake and a compiler (docs/performance.md, "GPU"): build with
# scripts/build-pip-torch.sh with bnn's CUDA kernels (BNN_CUDA_KERNELS=ON),
# `bnn version`, the whole ctest (the GPU tests must run, not skip), then
# bnn_bench_sampling and bnn_bench_members on the GPU. Logs go to OUT_DIR
# (eight files, so that they come back from a machine that returns few).
#
#   scripts/gpu-check.sh OUT_DIR [DEBS_DIR]
#   scripts/gpu-check.sh --verdict OUT_DIR     (the last step alone, on the logs)
#
# DEBS_DIR: .deb files from scripts/fetch-debs.sh --with-data (omit it where
# the -dev packages and /usr/share/datasets/fashion-mnist are installed).
# BNN_CTEST_TIMEOUT, BNN_BENCH_TIMEOUT and BNN_MEMBERS_TIMEOUT (seconds)
# bound the long steps.
#
# The verdict, the last line and OUT_DIR/summary.txt, is PASS (exit 0) only
# if the build, ctest and the benchmark exited 0 and every GPU test
# (CudaSamplers.*, CudaSync.*, CudaRun.*) ran and passed, save that a test
# needing two GPUs may skip on a machine with one; else FAIL (exit 1) with
# each reason.
set -uo pipefail

# Tests that need two or more GPUs: on a one-GPU machine they skip, rightly.
multi_gpu_tests=" CudaRun.DevicesAllSpreadsMembersOverTheGpus "

# verdict OUT_DIR: reads summary.txt (each step's exit code, gpus=N) and
# ctest.log; writes cuda_tests.txt and appends the verdict to summary.txt.
verdict() {
  local out="$1" reasons=() step code gpus
  for step in build ctest bench; do
    code="$(sed -n "s/^${step}_exit=//p" "$out/summary.txt" 2> /dev/null | tail -1)"
    if [[ -z "$code" ]]; then
      reasons+=("$step did not run")
    elif [[ "$code" != 0 ]]; then
      reasons+=("$step exited $code")
    fi
  done
  gpus="$(sed -n 's/^gpus=//p' "$out/summary.txt" 2> /dev/null | tail -1)"
  gpus="${gpus:-0}"
  # The GPU tests' result lines (ctest prints "N/M Test #K: Name .... Passed  0.45 sec"
  # or "...***Skipped  0.45 sec"): name and result.
  grep -E "Test +#[0-9]+: Cuda(Samplers|Sync|Run)\." "$out/ctest.log" > "$out/cuda_tests.txt" 2> /dev/null
  local total=0 passed=0 excused=0 name result
  while IFS='|' read -r name result; do
    total=$((total + 1))
    if [[ "$result" == Passed ]]; then
      passed=$((passed + 1))
    elif [[ "$result" == Skipped && $gpus -lt 2 && "$multi_gpu_tests" == *" $name "* ]]; then
      excused=$((excused + 1))
    else
      reasons+=("GPU test $name: $result")
    fi
  done < <(sed -E 's/.*Test +#[0-9]+: ([^ ]+) [. ]*(\*\*\*)?(.*[^ ]) +[0-9.]+ sec.*/\1|\3/' "$out/cuda_tests.txt")
  local line="gpu-check: GPU tests: $passed of $total passed"
  [[ $excused -eq 0 ]] || line+=", $excused skipped as they need 2 GPUs ($gpus here)"
  echo "$line" | tee -a "$out/summary.txt"
  [[ $total -gt 0 ]] || reasons+=("no GPU test in ctest.log")
  if [[ ${#reasons[@]} -eq 0 ]]; then
    echo "gpu-check: PASS" | tee -a "$out/summary.txt"
    return 0
  fi
  local IFS=';'
  echo "gpu-check: FAIL: ${reasons[*]}" | sed 's/;/; /g' | tee -a "$out/summary.txt"
  return 1
}

if [[ "${1:-}" == "--verdict" ]]; then
  if [[ ! -d "${2:-}" ]]; then
    echo "usage: scripts/gpu-check.sh --verdict OUT_DIR (a folder of gpu-check's logs)" >&2
    exit 2
  fi
  verdict "$2"
  exit
fi

# finished STEP LABEL START CODE: STEP's exit code for the verdict, and a line with its time.
finished() {
  echo "$1_exit=$4" >> "$out/summary.txt"
  echo "gpu-check: $2 exit $4, $(( $(date +%s) - $3 )) s" | tee -a "$out/summary.txt"
}

out="${1:?usage: scripts/gpu-check.sh OUT_DIR [DEBS_DIR]}"
debs="${2:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-torch"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
: > "$out/summary.txt"

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
echo "gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ')" >> "$out/summary.txt"
start=$(date +%s)
BNN_CUDA_KERNELS=ON bash "$root/scripts/build-pip-torch.sh" --build "$build" ${debs:+--debs "$debs" --with-data} \
  > "$out/build.log" 2>&1
code=$?
finished build build "$start" "$code"
if [[ $code -ne 0 ]]; then
  tail -30 "$out/build.log"
  verdict "$out"
  exit 1
fi
"$build/src/bnn" version | tee "$out/version.txt"

start=$(date +%s)
(cd "$build" && timeout "${BNN_CTEST_TIMEOUT:-300}" ctest -j"$(nproc)" --output-on-failure > "$out/ctest.log" 2>&1)
code=$?
finished ctest ctest "$start" "$code"
grep -E "tests passed|tests failed|\*\*\*(Failed|Exception)|Not Run|Timeout" "$out/ctest.log" | tail -20

start=$(date +%s)
timeout "${BNN_BENCH_TIMEOUT:-120}" "$build/bench/bnn_bench_sampling" --device cuda --repeats 3 \
  > "$out/bench_sampling.txt" 2>&1
code=$?
finished bench bnn_bench_sampling "$start" "$code"
tail -20 "$out/bench_sampling.txt"

# The designs for several members on one GPU (bench/member_designs.cpp), a
# measurement rather than a check: its exit code is in summary.txt, outside
# the verdict (1 where a design failed: its row says why). fmnist_cnn once
# more with channels-last; the exit code is the first run's, else the second's.
start=$(date +%s)
timeout "${BNN_MEMBERS_TIMEOUT:-120}" "$build/bench/bnn_bench_members" --device cuda --cudnn-benchmark \
  > "$out/bench_members.txt" 2>&1
code=$?
timeout "${BNN_MEMBERS_TIMEOUT:-120}" "$build/bench/bnn_bench_members" --device cuda --cudnn-benchmark \
  --channels-last --models fmnist_cnn >> "$out/bench_members.txt" 2>&1
second=$?
[[ $code -ne 0 ]] || code=$second
finished members bnn_bench_members "$start" "$code"
cat "$out/bench_members.txt"
verdict "$out"
