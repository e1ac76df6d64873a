#!/usr/bin/env bash
# How much slower bnn's epochs get when another CPU-bound process shares the
# cores (Note [OpenMP wait policy] in src/runtime/threads.h):
#
#   bench/shared_cores.sh BNN OUT_DIR [CASE ...]
#
# One `bnn run` of configs/demo.yaml (the mlp, one member, 12,000 training
# images, default threads), alone and then beside each CASE:
#   busy     a one-thread busy loop (python3)
#   bnn1     another bnn run with --threads 1
#   bnn2     another bnn run with --threads 2
#   busy2    two busy loops
#   late     a busy loop started 1 s after the measured run (bnn chose its
#            OpenMP wait policy alone, Note [OpenMP wait policy]; its company
#            watch then shortens the spin, Note [Company watch])
# (default: busy bnn1 bnn2 late). The neighbour starts first (except late)
# and runs until the measured run ends. Epoch times come from the measured run's trace.csv:
# the median Adam epoch and the median sampling epoch, as a ratio to the
# solo run's. Extra environment for the measured run (and its bnn
# neighbours), e.g. OMP_WAIT_POLICY=active to compare with the old
# behaviour, goes in BNN_BENCH_ENV. Writes OUT_DIR/shared_cores.csv.
set -euo pipefail

bnn="${1:?usage: bench/shared_cores.sh BNN OUT_DIR [CASE ...]}"
out="${2:?usage: bench/shared_cores.sh BNN OUT_DIR [CASE ...]}"
shift 2
cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=(busy bnn1 bnn2 late)
root="$(cd "$(dirname "$0")/.." && pwd)"
config="$root/configs/demo.yaml"
extra_env=(${BNN_BENCH_ENV:-})
schedule=(--set data.train_limit=12000 --set run.members=1 --set adam.epochs=4 --set swa.epochs=1
          --set sampler.epochs=6 --set sampler.burn_in=1)
mkdir -p "$out"
csv="$out/shared_cores.csv"
echo "case,adam_epoch_s,sample_epoch_s,adam_ratio,sample_ratio" > "$csv"

# median_epochs RUN_DIR: the median Adam and sampling epoch seconds.
median_epochs() {
  python3 - "$1/member_000/trace.csv" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for phase in ("adam", "sample"):
    print(statistics.median(float(r["seconds"]) for r in rows if r["phase"] == phase), end=" ")
print()
EOF
}

neighbour_pids=()
start_neighbour() {
  case "$1" in
    busy) python3 -c 'while True: pass' & neighbour_pids+=($!) ;;
    busy2) for _ in 1 2; do python3 -c 'while True: pass' & neighbour_pids+=($!); done ;;
    bnn1 | bnn2)
      rm -rf "$out/neighbour"
      env "${extra_env[@]}" "$bnn" run --config "$config" --out "$out/neighbour" --threads "${1#bnn}" \
        --set data.train_limit=12000 --set run.members=1 --set adam.epochs=1000 > "$out/neighbour.log" 2>&1 &
      neighbour_pids+=($!)
      sleep 3 ;;  # past its data loading, into Adam
    late) (sleep 1; exec python3 -c 'while True: pass') & neighbour_pids+=($!) ;;
    *) echo "unknown case '$1' (busy, busy2, bnn1, bnn2, late)" >&2; exit 2 ;;
  esac
}
stop_neighbours() {
  for pid in "${neighbour_pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${neighbour_pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  neighbour_pids=()
}
trap stop_neighbours EXIT

measure() {
  rm -rf "$out/run_$1"
  env "${extra_env[@]}" "$bnn" run --config "$config" --out "$out/run_$1" "${schedule[@]}" > "$out/run_$1.log" 2>&1
  median_epochs "$out/run_$1"
}

read -r solo_adam solo_sample < <(measure solo)
echo "solo,$solo_adam,$solo_sample,1,1" >> "$csv"
for c in "${cases[@]}"; do
  start_neighbour "$c"
  read -r adam sample < <(measure "$c")
  stop_neighbours
  python3 -c "print('$c,$adam,$sample,%.2f,%.2f' % ($adam / $solo_adam, $sample / $solo_sample))" >> "$csv"
done
column -s, -t < "$csv"
