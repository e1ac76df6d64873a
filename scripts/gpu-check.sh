#!/usr/bin/env bash
# The checks that need a GPU, in one go, on a machine with a CUDA pip PyTorch,
# CMake and a compiler (docs/performance.md, "GPU"): build with
# scripts/build-pip-torch.sh with bnn's CUDA kernels (BNN_CUDA_KERNELS=ON),
# `bnn version`, the whole ctest (the CUDA tests must run, not skip), then
# bnn_bench_sampling on the GPU. Logs go to OUT_DIR.
#
#   scripts/gpu-check.sh OUT_DIR [DEBS_DIR]
#
# DEBS_DIR: .deb files from scripts/fetch-debs.sh --with-data (omit it where
# the -dev packages and /usr/share/datasets/fashion-mnist are installed).
# BNN_CTEST_TIMEOUT and BNN_BENCH_TIMEOUT (seconds) bound the two long steps.
set -uo pipefail

out="${1:?usage: scripts/gpu-check.sh OUT_DIR [DEBS_DIR]}"
debs="${2:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-torch"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
start=$(date +%s)
if ! BNN_CUDA_KERNELS=ON bash "$root/scripts/build-pip-torch.sh" --build "$build" ${debs:+--debs "$debs" --with-data} \
    > "$out/build.log" 2>&1; then
  tail -30 "$out/build.log"
  echo "gpu-check: build failed (log: $out/build.log)"
  exit 1
fi
echo "gpu-check: build $(( $(date +%s) - start )) s"
"$build/src/bnn" version | tee "$out/version.txt"

start=$(date +%s)
(cd "$build" && timeout "${BNN_CTEST_TIMEOUT:-300}" ctest -j"$(nproc)" --output-on-failure > "$out/ctest.log" 2>&1)
echo "gpu-check: ctest exit $?, $(( $(date +%s) - start )) s"
grep -E "tests passed|tests failed|\*\*\*(Failed|Exception)|Not Run|Timeout" "$out/ctest.log" | tail -20
# The CUDA tests' lines, to show that none of them skipped.
grep -E "Test +#[0-9]+: (Cuda|LinkOrder)" "$out/ctest.log" > "$out/cuda_tests.txt"
echo "gpu-check: CUDA tests: $(grep -c Passed "$out/cuda_tests.txt") passed," \
  "$(grep -c Skipped "$out/cuda_tests.txt") skipped, of $(grep -c Cuda "$out/cuda_tests.txt")"

timeout "${BNN_BENCH_TIMEOUT:-120}" "$build/bench/bnn_bench_sampling" --device cuda --repeats 3 \
  > "$out/bench_sampling.txt" 2>&1
echo "gpu-check: bnn_bench_sampling exit $?"
tail -20 "$out/bench_sampling.txt"
