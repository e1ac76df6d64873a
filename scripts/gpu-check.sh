#!/usr/bin/env bash
# The checks that need a GPU, as one command that ends on time, on a machine
# with a CUDA pip PyTorch, CMake and a compiler (docs/performance.md, "A GPU
# session in 15 minutes"). In this order, each step in the time the steps
# before it left, so that what matters most is done first:
#   1. build with scripts/build-pip-torch.sh, bnn's CUDA kernels
#      (BNN_CUDA_KERNELS=ON) and torch.distributed; if that fails, again
#      without both, so that the steps below still run on what could be
#      built (the verdict fails on the first build);
#   2. `bnn version` (the libstdc++ binding, the arithmetic on each GPU) and
#      nvidia-smi;
#   3. the GPU tests (CudaSamplers.*, CudaSync.*, CudaRun.*), which must run,
#      not skip;
#   4. bnn_bench_sampling --device cuda (sampling epoch / SGD epoch);
#   5. the rest of ctest;
#   6. bench/members_per_device.sh (member-epochs/s with K members at once)
#      and 7. bnn_bench_members (the designs side by side): measurements,
#      outside the verdict.
# Logs go to OUT_DIR in eight files, so that they come back from a machine
# that returns few: summary.txt (each step's exit code and seconds, each GPU
# test's result, the verdict last), build.log, version.txt, ctest.log,
# bench_sampling.txt, members_per_device.csv, bench_members.txt and
# bnn-kit.tar.gz, the bnn this check built (build-pip-torch.sh --save-kit),
# which later sessions on a machine like this one carry instead of building
# (--from-kit).
#
#   scripts/gpu-check.sh OUT_DIR [DEBS_DIR]
#   scripts/gpu-check.sh --verdict OUT_DIR     (the last step alone, on the logs)
#
# DEBS_DIR: .deb files from scripts/fetch-debs.sh --with-data (omit it where
# the -dev packages and /usr/share/datasets/fashion-mnist are installed).
#
# Time. BNN_GPU_DEADLINE (seconds, default 540) is when the script ends,
# counted from its start (a step stopped at its limit may take 5 s more to
# die). A step may take its own bound or what is left once each required
# step after it (GPU tests, benchmark, ctest) is promised
# BNN_GPU_STEP_MINIMUM seconds (default 60), whichever is less; a step that
# the deadline leaves less than half that minimum (and less than its bound)
# does not run, and summary.txt says so. Bounds (seconds):
# BNN_CUDA_TESTS_TIMEOUT 120, BNN_BENCH_TIMEOUT 120,
# BNN_CTEST_TIMEOUT 300, BNN_MEMBERS_TABLE_TIMEOUT 240, BNN_MEMBERS_TIMEOUT
# 120 for each of bnn_bench_members' two runs; the build has none but the
# deadline. BNN_GPU_BUILD_DIR: the build folder (default build-torch in the
# repository). BNN_GPU_MEMBERS: step 6's member counts (default "1 2 4 8 16";
# empty: step 6 does not run); BNN_BENCH_STACKED, BNN_BENCH_PROCESSES and
# BNN_BENCH_CUDNN_BENCHMARK pass on to it.
#
# The verdict, the last line and in summary.txt, is PASS (exit 0) only if
# the build, the GPU tests, the benchmark and the rest of ctest exited 0 and
# every GPU test ran and passed, save that a test needing two GPUs may skip
# on a machine with one; else FAIL (exit 1) with each reason.
set -uo pipefail

# Tests that need two or more GPUs: on a one-GPU machine they skip, rightly.
multi_gpu_tests=" CudaRun.DevicesAllSpreadsMembersOverTheGpus "

# verdict OUT_DIR: reads summary.txt (each step's exit code, gpus=N) and
# ctest.log; appends the GPU tests' result lines and the verdict to
# summary.txt.
verdict() {
  local out="$1" reasons=() step code gpus
  for step in build gpu_tests bench ctest; do
    code="$(sed -n "s/^${step}_exit=//p" "$out/summary.txt" 2> /dev/null | tail -1)"
    if [[ -z "$code" ]]; then
      reasons+=("$step did not run")
    elif [[ "$code" == 124 ]]; then
      reasons+=("$step ran out of time (exit 124)")
    elif [[ "$code" == 137 ]]; then
      reasons+=("$step was killed (exit 137)")
    elif [[ "$code" != 0 ]]; then
      reasons+=("$step exited $code")
    fi
  done
  gpus="$(sed -n 's/^gpus=//p' "$out/summary.txt" 2> /dev/null | tail -1)"
  gpus="${gpus:-0}"
  # The GPU tests' result lines (ctest prints "N/M Test #K: Name .... Passed  0.45 sec"
  # or "...***Skipped  0.45 sec"): name and result.
  local tests total=0 passed=0 excused=0 name result
  tests="$(grep -E "Test +#[0-9]+: Cuda(Samplers|Sync|Run)\." "$out/ctest.log" 2> /dev/null)"
  while IFS='|' read -r name result; do
    total=$((total + 1))
    if [[ "$result" == Passed ]]; then
      passed=$((passed + 1))
    elif [[ "$result" == Skipped && $gpus -lt 2 && "$multi_gpu_tests" == *" $name "* ]]; then
      excused=$((excused + 1))
    else
      reasons+=("GPU test $name: $result")
    fi
  done < <([[ -z "$tests" ]] || sed -E 's/.*Test +#[0-9]+: ([^ ]+) [. ]*(\*\*\*)?(.*[^ ]) +[0-9.]+ sec.*/\1|\3/' <<< "$tests")
  [[ -z "$tests" ]] || echo "$tests" >> "$out/summary.txt"
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

out="${1:?usage: scripts/gpu-check.sh OUT_DIR [DEBS_DIR]}"
debs="${2:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BNN_GPU_BUILD_DIR:-$root/build-torch}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# What an earlier check left in OUT_DIR would be read as this one's.
(cd "$out" && rm -f summary.txt build.log version.txt ctest.log bench_sampling.txt \
  members_per_device.csv bench_members.txt bnn-kit.tar.gz)
: > "$out/summary.txt"
budget="${BNN_GPU_DEADLINE:-540}"
deadline=$(( $(date +%s) + budget ))
minimum="${BNN_GPU_STEP_MINIMUM:-60}"
echo "gpu-check: ends within $budget s; each required step still to come is promised $minimum s" |
  tee -a "$out/summary.txt"

# step NAME LATER BOUND LOG COMMAND...: runs COMMAND with its output
# appended to LOG, for at most BOUND seconds and at most what is left once
# LATER required steps have their minimum; records NAME's exit code and
# seconds in summary.txt. Where the deadline leaves it less than its bound
# and less than half the minimum, or no time at all, it does not run
# (status 125) and summary.txt says so. A step still going at its limit is
# sent SIGTERM, and SIGKILL 5 s later (its whole process group: ctest's
# tests, members_per_device.sh's runs), so the script ends at most a few
# seconds past the deadline.
step() {
  local name="$1" later="$2" bound="$3" log="$4" left limit start code
  shift 4
  left=$(( deadline - $(date +%s) - later * minimum ))
  limit=$(( left < bound ? left : bound ))
  if (( limit <= 0 || (limit < bound && left * 2 < minimum) )); then
    echo "gpu-check: $name not run: ${left} s left for it" | tee -a "$out/summary.txt"
    return 125
  fi
  start=$(date +%s)
  timeout -k 5 "$limit" "$@" >> "$log" 2>&1
  code=$?
  echo "${name}_exit=$code" >> "$out/summary.txt"
  local line="gpu-check: $name exit $code, $(( $(date +%s) - start )) s"
  [[ $code != 124 ]] || line+=" (stopped at its limit of $limit s)"
  [[ $code != 137 ]] || line+=" (killed: still going 5 s past its limit of $limit s, or out of memory)"
  echo "$line" | tee -a "$out/summary.txt"
  return "$code"
}

# ctest's jobs: the CPUs, at most 16 (the machine's; a sandbox such as
# gVisor may report the host's, and each test's bnn takes every CPU it
# sees).
cpus="$(nproc)"
test_jobs=$(( cpus > 16 ? 16 : cpus ))
echo "cpus=$cpus" >> "$out/summary.txt"

# The GPU tests, which step 3 runs first and step 5 leaves out.
gpu_tests='^Cuda(Samplers|Sync|Run)\.'
# Step 6's settings are not the tests': the tests of the benchmark scripts
# must see none of them.
tests_env=(env -u BNN_BENCH_STACKED -u BNN_BENCH_PROCESSES -u BNN_BENCH_CUDNN_BENCHMARK)

echo "gpus=$(timeout 30 nvidia-smi -L 2> /dev/null | grep -c '^GPU ')" >> "$out/summary.txt"
# build_with NAME OPTIONAL: the build step, with bnn's CUDA kernels and
# torch.distributed ON or OFF; it goes on past a failed source, so that
# build.log names every error and what does not need that source is built.
# A build that succeeds leaves its bnn in OUT_DIR as a kit.
build_with() {
  step "$1" 3 "$budget" "$out/build.log" env BNN_CUDA_KERNELS="$2" BNN_DISTRIBUTED="$2" \
    bash "$root/scripts/build-pip-torch.sh" --build "$build" ${debs:+--debs "$debs" --with-data} --keep-going \
    --max-jobs "$test_jobs" \
    --save-kit "$out/bnn-kit.tar.gz"
}
# The parts of bnn that no GPU build has compiled yet (the kernels, whose
# configure CMake has never run against a pip LibTorch, and the NCCL
# process group) are the likeliest to fail: if the build fails, it is built
# again without them in the same folder (only fused_step.cpp and
# process_group.cpp compile again), so that the tests and benchmarks still
# run on a bnn this check built. The verdict fails on the first build all
# the same. But build-pip-torch.sh builds bnn and writes its kit before the
# tests and benchmarks: where the first build got that far (the kit is in
# OUT_DIR, removed above and written whole), the steps run on that bnn,
# with its kernels, and those whose programs were not built say so. A build
# stopped at its limit leaves no time for another.
started="$(mktemp)" || exit 2
trap 'rm -f "$started"' EXIT
no_bnn() { tail -30 "$out/build.log"; verdict "$out"; exit 1; }
has_kit() { [[ -x "$build/src/bnn" && -s "$out/bnn-kit.tar.gz" ]]; }
tests_built=1
build_with build ON
case $? in
  0) ;;
  124 | 137)  # stopped at its limit
    has_kit || no_bnn
    tests_built=0
    echo "gpu-check: the build was stopped after it built bnn and its kit: the steps below run on that bnn" |
      tee -a "$out/summary.txt"
    ;;
  *)
    if has_kit; then
      echo "gpu-check: building failed after bnn and its kit were built (build.log): the steps below run on what" \
        "was built" | tee -a "$out/summary.txt"
    else
      what="building"
      grep -q "Configuring incomplete" "$out/build.log" && what="configuring"
      echo "gpu-check: $what failed (build.log); building again without bnn's CUDA kernels and torch.distributed" |
        tee -a "$out/summary.txt"
      build_with build_reduced OFF
      [[ "$build/src/bnn" -nt "$started" ]] || no_bnn
    fi
    ;;
esac
# step_if_built NAME PROGRAM STEP-ARGUMENTS...: the step, where PROGRAM (a
# test binary, a benchmark) was built; else a line that says it was not. A
# build stopped at its limit (tests_built=0) may have left an older folder's
# test binary: the tests count as not built.
step_if_built() {
  local name="$1" program="$2"
  shift 2
  if [[ -x "$program" && ( $tests_built == 1 || "$program" != */tests/* ) ]]; then
    step "$name" "$@"
  else
    echo "gpu-check: $name not run: $(basename "$program") was not built" | tee -a "$out/summary.txt"
  fi
}
build="$(cd "$build" && pwd)"
cd "$build" || { verdict "$out"; exit 1; }  # ctest runs here
{ timeout 30 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
  echo "nproc $cpus; cgroup cpu.max $(cat /sys/fs/cgroup/cpu.max 2> /dev/null || echo none); kernel $(uname -r);" \
    "cgroup $(head -3 /proc/self/cgroup 2> /dev/null | tr '\n' ' ')"
  timeout 30 "$build/src/bnn" version 2>&1; } | tee "$out/version.txt"

step_if_built gpu_tests "$build/tests/bnn_tests" 2 "${BNN_CUDA_TESTS_TIMEOUT:-120}" "$out/ctest.log" \
  "${tests_env[@]}" ctest -j"$test_jobs" --output-on-failure -R "$gpu_tests"
step_if_built bench "$build/bench/bnn_bench_sampling" 1 "${BNN_BENCH_TIMEOUT:-120}" "$out/bench_sampling.txt" \
  "$build/bench/bnn_bench_sampling" --device cuda --repeats 3
tail -20 "$out/bench_sampling.txt" 2> /dev/null
step_if_built ctest "$build/tests/bnn_tests" 0 "${BNN_CTEST_TIMEOUT:-300}" "$out/ctest.log" \
  "${tests_env[@]}" ctest -j"$test_jobs" --output-on-failure -E "$gpu_tests"
grep -E "tests passed|tests failed|\*\*\*(Failed|Exception)|Not Run|Timeout" "$out/ctest.log" | tail -20

# Measurements: their exit codes are in summary.txt, outside the verdict.
# Member-epochs per second with K members at once in `bnn run` (its runs in
# the build folder, its table in bench_members.txt, its rows in the csv).
read -r -a members <<< "${BNN_GPU_MEMBERS-1 2 4 8 16}"
if [[ ${#members[@]} -gt 0 ]]; then
  rm -rf "$build/members_table"
  step members_table 0 "${BNN_MEMBERS_TABLE_TIMEOUT:-240}" "$out/bench_members.txt" \
    bash "$root/bench/members_per_device.sh" "$build/src/bnn" "$build/members_table" "${members[@]}"
  cp "$build/members_table/members_per_device.csv" "$out/" 2> /dev/null
fi
# The designs (bench/member_designs.cpp); fmnist_cnn once more with
# channels-last. A design that fails is a row that says why (exit 1).
step_if_built members "$build/bench/bnn_bench_members" 0 "${BNN_MEMBERS_TIMEOUT:-120}" "$out/bench_members.txt" \
  "$build/bench/bnn_bench_members" --device cuda --cudnn-benchmark
step_if_built members_channels_last "$build/bench/bnn_bench_members" 0 "${BNN_MEMBERS_TIMEOUT:-120}" \
  "$out/bench_members.txt" \
  "$build/bench/bnn_bench_members" --device cuda --cudnn-benchmark --channels-last --models fmnist_cnn
cat "$out/bench_members.txt" 2> /dev/null
verdict "$out"
