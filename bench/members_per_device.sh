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
# with BNN_BENCH_CUDNN_BENCHMARK=K one run with --cudnn-benchmark. GPU memory
# is nvidia-smi's whole-device figure, sampled every 200 ms. Writes
# OUT_DIR/members_per_device.csv and prints it as a table.
set -euo pipefail

bnn="${1:?usage: bench/members_per_device.sh BNN OUT_DIR [K ...]}"
out="${2:?usage: bench/members_per_device.sh BNN OUT_DIR [K ...]}"
shift 2
ks=("$@")
[[ ${#ks[@]} -gt 0 ]] || ks=(1 2 4 8 16)
root="$(cd "$(dirname "$0")/.." && pwd)"
config="$root/configs/fashion_mnist_paper.yaml"
schedule=(--set adam.epochs=2 --set swa.epochs=1 --set sampler.epochs=2 --set sampler.burn_in=1)
mkdir -p "$out"
csv="$out/members_per_device.csv"
echo "design,members,wall_s,member_epochs_per_s,peak_gpu_mib,mib_per_member" > "$csv"

idle_mib="$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)"

# Samples device memory into $1 until killed.
sample_memory() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$1"; }

# throughput RUN_DIR... : K x epochs / slowest member's seconds, epochs after the first.
throughput() {
  python3 - "$@" <<'EOF'
import csv, glob, sys
totals, epochs = [], 0
for run in sys.argv[1:]:
    for trace in sorted(glob.glob(run + "/member_*/trace.csv")):
        rows = list(csv.DictReader(open(trace)))[1:]
        totals.append(sum(float(r["seconds"]) for r in rows))
        epochs += len(rows)
print(f"{epochs / max(totals):.4f}" if totals else "nan")
EOF
}

# record DESIGN MEMBERS WALL MEMFILE RUN_DIR...
record() {
  local design="$1" k="$2" wall="$3" mem="$4"
  shift 4
  local peak rate
  peak="$(sort -n "$mem" | tail -1)"
  rate="$(throughput "$@")"
  echo "$design,$k,$wall,$rate,$peak,$(( (peak - idle_mib) / k ))" >> "$csv"
}

for k in "${ks[@]}"; do
  run="$out/threads_k$k"
  rm -rf "$run"
  sample_memory "$out/mem_k$k.txt" & sampler=$!
  start=$(date +%s.%N)
  "$bnn" run --config "$config" --out "$run" --device cuda --members-per-device "$k" \
    --set run.members="$k" "${schedule[@]}" > "$out/log_k$k.txt" 2>&1
  wall=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
  kill $sampler; wait $sampler 2> /dev/null || true
  record streams "$k" "$wall" "$out/mem_k$k.txt" "$run"
done

for p in ${BNN_BENCH_PROCESSES:-}; do
  runs=()
  sample_memory "$out/mem_p$p.txt" & sampler=$!
  start=$(date +%s.%N)
  pids=()
  for ((i = 0; i < p; i++)); do
    run="$out/processes_p${p}_$i"
    rm -rf "$run"
    runs+=("$run")
    "$bnn" run --config "$config" --out "$run" --device cuda --members 0 --seed "$i" \
      --set run.members=1 "${schedule[@]}" > "$out/log_p${p}_$i.txt" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  wall=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
  kill $sampler; wait $sampler 2> /dev/null || true
  record processes "$p" "$wall" "$out/mem_p$p.txt" "${runs[@]}"
done

if [[ -n "${BNN_BENCH_CUDNN_BENCHMARK:-}" ]]; then
  k="$BNN_BENCH_CUDNN_BENCHMARK"
  run="$out/cudnn_benchmark_k$k"
  rm -rf "$run"
  sample_memory "$out/mem_cudnn_k$k.txt" & sampler=$!
  start=$(date +%s.%N)
  "$bnn" run --config "$config" --out "$run" --device cuda --members-per-device "$k" --cudnn-benchmark \
    --set run.members="$k" "${schedule[@]}" > "$out/log_cudnn_k$k.txt" 2>&1
  wall=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
  kill $sampler; wait $sampler 2> /dev/null || true
  record streams+cudnn_benchmark "$k" "$wall" "$out/mem_cudnn_k$k.txt" "$run"
fi

# 0.65 GFLOP per training example (forward and backward of fmnist_cnn), 60,000
# examples per epoch; the per-epoch test prediction is not counted.
python3 - "$csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
base = next((float(r["member_epochs_per_s"]) for r in rows if r["design"] == "streams" and r["members"] == "1"), None)
print(f"{'design':<24}{'K':>4}{'wall s':>9}{'member-epochs/s':>17}{'speed-up':>10}{'TFLOP/s':>9}{'peak MiB':>10}{'MiB/member':>12}")
for r in rows:
    rate = float(r["member_epochs_per_s"])
    up = f"{rate / base:.2f}" if base else "-"
    print(f"{r['design']:<24}{r['members']:>4}{r['wall_s']:>9}{rate:>17.3f}{up:>10}{rate * 60000 * 0.65e9 / 1e12:>9.1f}"
          f"{r['peak_gpu_mib']:>10}{r['mib_per_member']:>12}")
EOF
