#!/usr/bin/env bash
# Member-epochs per second on one GPU against the number of members trained
# at once (Note [Members per device] in src/runtime/device_streams.h), with
# the paper's Fashion-MNIST network and batch size on the real data set:
#
#   bench/members_per_device.sh BNN OUT_DIR [K ...]     (default K: 1 2 4 8 16)
#
# For each K, one `bnn run` of configs/fashion_mnist_paper.yaml with K
# members and --members-per-device K on a short schedule (2 Adam, 1 SWA, 2
# SMS-UBU epochs); each epoch ends with the test-set prediction, as in a real
# run. Throughput counts the epochs after each member's first (CUDA and cuDNN
# warm-up), from the members' trace.csv: K x epochs / the slowest member's
# time for them. With BNN_BENCH_PROCESSES="4 8" it also runs that many
# separate one-member processes side by side (the alternative design), and
# with BNN_BENCH_CUDNN_BENCHMARK=K one run with --cudnn-benchmark, and with
# BNN_BENCH_STACKED="8 16" runs with --member-design stacked (Note [Stacked
# members in a run] in src/pipeline/stacked_group.h), each stacked K right
# after the streams of that K. GPU memory is nvidia-smi's whole-device
# figure, sampled every 200 ms (the columns stay empty where nvidia-smi
# gives no number). Writes
# OUT_DIR/members_per_device.csv and prints it as a table.
#
# A run that fails (out of memory at a large K, say) is a row with its exit
# code, and the script goes on with the next; it exits 1 at the end if any
# failed. BNN_BENCH_DEVICE (default cuda) and BNN_BENCH_CONFIG (default
# configs/fashion_mnist_paper.yaml) let the script itself be checked on a CPU
# with a small config (tests/scripts/members_per_device_test.py); the TFLOP/s
# column is given for the paper's network only.
set -uo pipefail

bnn="${1:?usage: bench/members_per_device.sh BNN OUT_DIR [K ...]}"
out="${2:?usage: bench/members_per_device.sh BNN OUT_DIR [K ...]}"
shift 2
ks=("$@")
[[ ${#ks[@]} -gt 0 ]] || ks=(1 2 4 8 16)
for k in "${ks[@]}" ${BNN_BENCH_PROCESSES:-} ${BNN_BENCH_CUDNN_BENCHMARK:-} ${BNN_BENCH_STACKED:-}; do
  if [[ ! "$k" =~ ^[1-9][0-9]*$ ]]; then
    echo "members_per_device: '$k' is not a member count (a whole number >= 1)" >&2
    exit 2
  fi
done
[[ -x "$bnn" ]] || { echo "members_per_device: '$bnn' is not an executable bnn" >&2; exit 2; }
if ! command -v nvidia-smi > /dev/null; then
  echo "members_per_device: no nvidia-smi on PATH (GPU memory is read with it)" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
config="${BNN_BENCH_CONFIG:-$root/configs/fashion_mnist_paper.yaml}"
device="${BNN_BENCH_DEVICE:-cuda}"
# 0.65 GFLOP per training example (forward and backward of fmnist_cnn), 60,000
# examples per epoch; the per-epoch test prediction is not counted.
flop_per_epoch=0
if [[ -z "${BNN_BENCH_CONFIG:-}" ]]; then flop_per_epoch=3.9e13; fi
schedule=(--set adam.epochs=2 --set swa.epochs=1 --set sampler.epochs=2 --set sampler.burn_in=1)
mkdir -p "$out"
csv="$out/members_per_device.csv"
echo "design,members,exit,wall_s,member_epochs_per_s,peak_gpu_mib,mib_per_member" > "$csv"
failed=0

idle_mib="$(nvidia-smi -i 0 --query-gpu=memory.used --format=csv,noheader,nounits | head -1)"
if [[ ! "$idle_mib" =~ ^[0-9]+$ ]]; then
  # A container may hide it ([N/A]); the rates, which bnn run --throughput
  # reads, do not need it.
  echo "members_per_device: nvidia-smi gave '$idle_mib' for the memory used: the memory columns stay empty" >&2
  idle_mib=""
fi

# Samples device memory into $1 until stopped; stopped on any exit, as are
# runs still going (an interrupted script leaves nothing on the GPU).
sampler="" pids=()
start_sampling() {
  nvidia-smi -i 0 --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$1" &
  sampler=$!
}
stop_sampling() {
  if [[ -n "$sampler" ]]; then kill "$sampler" 2> /dev/null; wait "$sampler" 2> /dev/null; sampler=""; fi
  return 0
}
# shellcheck disable=SC2317  # called by the trap
stop_all() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null; done
  stop_sampling
}
trap stop_all EXIT
trap 'exit 130' INT TERM HUP

# throughput RUN_DIR... : K x epochs / slowest member's seconds, epochs after the first.
throughput() {
  python3 - "$@" <<'PY'
import csv, glob, sys
totals, epochs = [], 0
for run in sys.argv[1:]:
    for trace in sorted(glob.glob(run + "/member_*/trace.csv")):
        rows = list(csv.DictReader(open(trace)))[1:]
        totals.append(sum(float(r["seconds"]) for r in rows))
        epochs += len(rows)
print(f"{epochs / max(totals):.4f}" if totals and max(totals) > 0 else "nan")
PY
}

seconds_since() { python3 -c "import time; print(f'{time.time() - $1:.1f}')"; }

# record DESIGN MEMBERS EXIT WALL MEMFILE LOG RUN_DIR...
record() {
  local design="$1" k="$2" rc="$3" wall="$4" mem="$5" log="$6"
  shift 6
  local peak="" rate per_member=""
  if [[ -n "$idle_mib" ]]; then
    peak="$(grep -E '^[0-9]+$' "$mem" | sort -n | tail -1)"
    peak="${peak:-$idle_mib}"
    per_member=$(( (peak - idle_mib) / k ))
  fi
  if [[ "$rc" == 0 ]]; then
    rate="$(throughput "$@")"
  else
    rate=nan
    failed=1
    echo "members_per_device: $design with $k members failed (exit $rc); the end of $log:" >&2
    tail -3 "$log" >&2
  fi
  echo "$design,$k,$rc,$wall,$rate,$peak,$per_member" >> "$csv"
}

# streams_run DESIGN K RUN_DIR MEMFILE LOG [FLAG...]: one bnn run of K members
# trained at once, recorded as DESIGN.
streams_run() {
  local design="$1" k="$2" run="$3" mem="$4" log="$5" start rc wall
  shift 5
  rm -rf "$run"
  start_sampling "$mem"
  start=$(date +%s.%N)
  "$bnn" run --config "$config" --out "$run" --device "$device" --members-per-device "$k" "$@" \
    --set run.members="$k" "${schedule[@]}" > "$log" 2>&1 &
  pids=($!)
  wait "${pids[0]}"
  rc=$?
  pids=()
  wall="$(seconds_since "$start")"
  stop_sampling
  record "$design" "$k" "$rc" "$wall" "$mem" "$log" "$run"
}

stacked_run() {
  streams_run stacked "$1" "$out/stacked_k$1" "$out/mem_stacked_k$1.txt" "$out/log_stacked_k$1.txt" \
    --member-design stacked
}
# A stacked K runs right after the streams of the same K, so that a step
# stopped at its time limit has the two designs side by side for the Ks it
# reached; the stacked Ks that no streams run has come last.
for k in "${ks[@]}"; do
  streams_run streams "$k" "$out/threads_k$k" "$out/mem_k$k.txt" "$out/log_k$k.txt"
  [[ " ${BNN_BENCH_STACKED:-} " != *" $k "* ]] || stacked_run "$k"
done
for k in ${BNN_BENCH_STACKED:-}; do
  [[ " ${ks[*]} " == *" $k "* ]] || stacked_run "$k"
done

for p in ${BNN_BENCH_PROCESSES:-}; do
  runs=()
  start_sampling "$out/mem_p$p.txt"
  start=$(date +%s.%N)
  pids=()
  for ((i = 0; i < p; i++)); do
    run="$out/processes_p${p}_$i"
    rm -rf "$run"
    runs+=("$run")
    "$bnn" run --config "$config" --out "$run" --device "$device" --members 0 --seed "$i" \
      --set run.members=1 "${schedule[@]}" > "$out/log_p${p}_$i.txt" 2>&1 &
    pids+=($!)
  done
  rc=0 failed_log="$out/log_p${p}_0.txt"
  for ((i = 0; i < p; i++)); do
    wait "${pids[$i]}" || { rc=$?; failed_log="$out/log_p${p}_$i.txt"; }
  done
  pids=()
  wall="$(seconds_since "$start")"
  stop_sampling
  record processes "$p" "$rc" "$wall" "$out/mem_p$p.txt" "$failed_log" "${runs[@]}"
done

if [[ -n "${BNN_BENCH_CUDNN_BENCHMARK:-}" ]]; then
  k="$BNN_BENCH_CUDNN_BENCHMARK"
  streams_run streams+cudnn_benchmark "$k" "$out/cudnn_benchmark_k$k" "$out/mem_cudnn_k$k.txt" \
    "$out/log_cudnn_k$k.txt" --cudnn-benchmark
fi

python3 - "$csv" "$flop_per_epoch" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
flop_per_epoch = float(sys.argv[2])
base = next((float(r["member_epochs_per_s"]) for r in rows
             if r["design"] == "streams" and r["members"] == "1" and r["exit"] == "0"), None)
print(f"{'design':<24}{'K':>4}{'exit':>5}{'wall s':>9}{'member-epochs/s':>17}{'speed-up':>10}{'TFLOP/s':>9}"
      f"{'peak MiB':>10}{'MiB/member':>12}")
for r in rows:
    rate = float(r["member_epochs_per_s"])
    up = f"{rate / base:.2f}" if base and not math.isnan(rate) else "-"
    tflops = f"{rate * flop_per_epoch / 1e12:.1f}" if flop_per_epoch and not math.isnan(rate) else "-"
    print(f"{r['design']:<24}{r['members']:>4}{r['exit']:>5}{r['wall_s']:>9}{rate:>17.3f}{up:>10}{tflops:>9}"
          f"{r['peak_gpu_mib']:>10}{r['mib_per_member']:>12}")
PY
exit "$failed"
