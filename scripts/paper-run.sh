#!/usr/bin/env bash
# The paper's Fashion-MNIST experiment (configs/fashion_mnist_paper.yaml, 64
# members) in slices that each end in time, for machines that give a command
# only so long (a lent GPU's ten minutes, a batch job's wall time). Each call
# is one slice: it starts the run into RUN_DIR, or resumes it, with the bnn
# run OPTIONS given (say --device cuda --time-limit 9m: Note [Time limit]),
# and records in OUT_DIR what a results folder needs:
#
#   scripts/paper-run.sh [--config FILE] BNN RUN_DIR OUT_DIR [OPTION...]
#
#   OUT_DIR/slices.tsv          one row per slice: start (UTC), seconds, exit code, command
#   OUT_DIR/slice_N.log         bnn's log of slice N
#   OUT_DIR/members/            each member's trace.csv and status.json so far
#   OUT_DIR/results/            once the run has finished: metrics.json, metrics.csv,
#                               metrics.txt, report.md, uncertainty.json, figures/,
#                               config.yaml, README.md (the commands, the device,
#                               the bnn commit, the wall time) and, for Fashion-MNIST,
#                               paper_comparison.md (scripts/paper_comparison.py)
#
# Exits with bnn's code: 0 finished, 75 stopped by --time-limit (call it again
# with the same arguments), anything else failed (slice_N.log says why). The
# commit is BNN_COMMIT if set (a copy of the tree without .git), else git's.
#
#   scripts/paper-run.sh --assemble RUN_DIR OUT_DIR [SLICES_TSV...]
#
# assembles OUT_DIR/results from a run folder evaluated elsewhere: members
# trained in slices on machines that did not keep them, carried back by
# scripts/pack-members.sh, unpacked into RUN_DIR and scored there by `bnn
# evaluate`. The SLICES_TSV files (each command's slices.tsv) are joined
# into OUT_DIR/slices.tsv for the wall time; the device is read from the
# members' arithmetic records (status.json), not from this machine; and
# BNN_COMMIT must name the commit that trained the members (this checkout's
# may be another).
set -euo pipefail

# assemble RUN_DIR OUT_DIR DEVICE VERSION CLOSING: OUT_DIR/results from
# RUN_DIR's evaluation and OUT_DIR/slices.tsv, assembled beside it and moved
# in whole; CLOSING, if not empty, is the README's last line.
assemble() {
  local run="$1" out="$2" device="$3" version="$4" closing="$5" root
  root="$(cd "$(dirname "$0")/.." && pwd)"
  local results="$out/results" f
  staging="$out/results.tmp.$$"
  trap 'rm -rf "$staging"' EXIT
  rm -rf "$staging"
  mkdir -p "$staging"
  for f in metrics.json metrics.csv metrics.txt report.md uncertainty.json config.yaml; do
    if [[ -f "$run/$f" ]]; then cp "$run/$f" "$staging/"; fi
  done
  if [[ -d "$run/figures" ]]; then cp -r "$run/figures" "$staging/"; fi
  # A Fashion-MNIST run gets the table beside the paper's (scripts/paper_comparison.py);
  # if that fails, the results are still assembled.
  if grep -qE '^ +dataset: fashion_mnist$' "$run/config.yaml" 2> /dev/null; then
    python3 "$root/scripts/paper_comparison.py" "$staging/metrics.json" "$staging/paper_comparison.md" ||
      echo "paper-run: no paper_comparison.md (above: why); the results are assembled without it" >&2
  fi
  local commit="${BNN_COMMIT:-$(git -C "$root" rev-parse HEAD 2> /dev/null || echo unknown)}"
  python3 - "$out/slices.tsv" "$staging/README.md" "$commit" "$device" "$version" "$closing" "$root" <<'EOF'
import csv, json, os, sys
slices_file, readme, commit, device, version, closing, root = sys.argv[1:]
rows = list(csv.DictReader(open(slices_file), delimiter="\t"))
for number, r in enumerate(rows, start=2):
    try:
        float(r["seconds"] or "")
    except (ValueError, KeyError):
        sys.exit(f"paper-run: {slices_file} line {number}: seconds {r.get('seconds')!r} is not a number")
total = sum(float(r["seconds"]) for r in rows)
# The title names what was run, from the run's own config.yaml.
sys.path.insert(0, os.path.join(root, "scripts"))
from paper_comparison import BadMetrics, read_setting
try:
    setting = read_setting(os.path.join(os.path.dirname(readme), "config.yaml"))
except BadMetrics:
    setting = {}
# The members are those the evaluation scored (metrics.json), not the config's run.members.
try:
    scored = len(json.load(open(os.path.join(os.path.dirname(readme), "metrics.json")))["members"])
except (OSError, ValueError, KeyError, TypeError):
    scored = None
members = f"{scored} of {setting['run.members']} members" if scored is not None and setting.get("run.members") and \
    str(scored) != str(setting["run.members"]) else (f"{scored} members" if scored is not None else None)
title = ", ".join(filter(None, [setting.get("data.dataset"), setting.get("model.name"), members]))
lines = [
    f"# {title or 'A run'}: results of bnn",
    "",
    f"- bnn commit: `{commit}`",
    f"- bnn: {version.strip(';').replace(';', '; ')}",
    f"- device: {device}",
    f"- wall time: {total:.0f} s ({total / 60:.1f} min) over {len(rows)} command(s)",
    "",
    "| started (UTC) | seconds | exit code | command |",
    "| --- | --- | --- | --- |",
]
lines += [f"| {r['started_utc']} | {r['seconds']} | {r['exit_code']} | `{r['command']}` |" for r in rows]
lines += ["", closing, ""] if closing else [""]
open(readme, "w").write("\n".join(lines))
EOF
  # Only an earlier assembly is replaced: a folder of anyone else's stays.
  if [[ -e "$results" ]] && ! head -1 "$results/README.md" 2> /dev/null | grep -q ': results of bnn$'; then
    echo "paper-run: $results is not results this script assembled (no README.md of its own): move it away" >&2
    exit 2
  fi
  rm -rf "$results.old"
  if [[ -d "$results" ]]; then mv "$results" "$results.old"; fi
  mv "$staging" "$results"
  rm -rf "$results.old"
  echo "paper-run: finished; results in $results"
}

# members_arithmetic RUN_DIR: the members' own record of where they ran
# (Note [Arithmetic platform]), each entry once.
members_arithmetic() {
  python3 - "$1" <<'EOF'
import glob, json, os, sys
seen = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "member_*", "status.json"))):
    for entry in json.load(open(path)).get("arithmetic", []):
        if entry not in seen:
            seen.append(entry)
print("; ".join(seen) if seen else "not recorded by the members")
EOF
}

if [[ "${1:-}" == "--assemble" ]]; then
  usage="usage: scripts/paper-run.sh --assemble RUN_DIR OUT_DIR [SLICES_TSV...]"
  [[ $# -ge 3 ]] || { echo "$usage" >&2; exit 2; }
  run="$2"
  out="$3"
  shift 3
  [[ -f "$run/metrics.json" ]] ||
    { echo "paper-run: $run/metrics.json is missing: run bnn evaluate $run first" >&2; exit 2; }
  # Members unpacked after the evaluation would be missing from its tables.
  python3 - "$run" <<'EOF' || exit 2
import glob, json, os, sys
run = sys.argv[1]
scored = json.load(open(os.path.join(run, "metrics.json"))).get("members", [])
done = [os.path.basename(os.path.dirname(p)) for p in sorted(glob.glob(os.path.join(run, "member_*", "status.json")))
        if json.load(open(p)).get("status") == "done"]
if sorted(scored) != done:
    sys.exit(f"paper-run: {run}/metrics.json scores {len(scored)} member(s), but {len(done)} are finished there: "
             f"run bnn evaluate {run} again first")
EOF
  [[ -n "${BNN_COMMIT:-}" ]] ||
    { echo "paper-run: --assemble needs BNN_COMMIT=<the commit that trained the members>" >&2; exit 2; }
  mkdir -p "$out"
  if [[ $# -gt 0 ]]; then
    # Each command's table, its header checked, joined under one header.
    python3 - "$out/slices.tsv.tmp" "$@" <<'EOF' || exit 2
import sys
header = "started_utc\tseconds\texit_code\tcommand"
joined, tables = [header], sys.argv[2:]
for table in tables:
    try:
        lines = open(table).read().splitlines()
    except OSError as e:
        sys.exit(f"paper-run: no slices table {table} ({e.strerror})")
    if not lines or lines[0] != header:
        sys.exit(f"paper-run: {table} is not a slices table of paper-run.sh (its first line is not {header!r})")
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        try:
            float(fields[1] if len(fields) == 4 else "")
        except ValueError:
            sys.exit(f"paper-run: {table} line {number}: not a slice (four fields, the seconds a number): {line!r}")
        joined.append(line)
open(sys.argv[1], "w").write("\n".join(joined) + "\n")
EOF
    mv "$out/slices.tsv.tmp" "$out/slices.tsv"
  fi
  [[ -f "$out/slices.tsv" ]] || { echo "paper-run: no $out/slices.tsv and no SLICES_TSV given" >&2; exit 2; }
  device="$(members_arithmetic "$run" || echo "not readable in the members' status.json")"
  assemble "$run" "$out" "$device (the members' records)" \
    "the commit above, trained by the commands below and evaluated apart" \
    "Each command trained the members it names on a machine that did not keep them; scripts/pack-members.sh \
carried the finished ones back, and bnn evaluate scored them together."
  exit 0
fi

config="$(cd "$(dirname "$0")/.." && pwd)/configs/fashion_mnist_paper.yaml"
if [[ "${1:-}" == "--config" ]]; then
  [[ -n "${2:-}" ]] || { echo "paper-run: --config needs a file" >&2; exit 2; }
  config="$2"
  shift 2
fi
usage="usage: scripts/paper-run.sh [--config FILE] BNN RUN_DIR OUT_DIR [OPTION...]"
[[ $# -ge 3 ]] || { echo "$usage" >&2; exit 2; }
bnn="$1"
run="$2"
out="$3"
shift 3
root="$(cd "$(dirname "$0")/.." && pwd)"
[[ -x "$bnn" ]] || { echo "paper-run: $bnn is not an executable bnn" >&2; exit 2; }
[[ -f "$config" ]] || { echo "paper-run: no config file $config" >&2; exit 2; }
mkdir -p "$out/members"

if [[ -f "$run/config.yaml" ]]; then
  command=("$bnn" run --resume "$run" "$@")
else
  command=("$bnn" run --config "$config" --out "$run" "$@")
fi
[[ -f "$out/slices.tsv" ]] || printf 'started_utc\tseconds\texit_code\tcommand\n' > "$out/slices.tsv"
slice=$(( $(wc -l < "$out/slices.tsv") ))
# A killed call wrote no row: its log keeps its number, and this one takes the next.
while [[ -e "$out/slice_$slice.log" ]]; do slice=$((slice + 1)); done
started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
t0=$(date +%s.%N)
set +e
"${command[@]}" > "$out/slice_$slice.log" 2>&1
code=$?
set -e
seconds=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
printf '%s\t%s\t%s\t%s\n' "$started" "$seconds" "$code" "${command[*]}" >> "$out/slices.tsv"
tail -3 "$out/slice_$slice.log"
echo "paper-run: slice $slice: exit $code after $seconds s"

for member in "$run"/member_*; do
  [[ -d "$member" ]] || continue
  mkdir -p "$out/members/$(basename "$member")"
  for f in trace.csv status.json; do
    if [[ -f "$member/$f" ]]; then cp "$member/$f" "$out/members/$(basename "$member")/"; fi
  done
done

if [[ $code -ne 0 ]]; then
  [[ $code -eq 75 ]] && echo "paper-run: not finished; call again with the same arguments"
  exit "$code"
fi

gpu="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2> /dev/null | head -1 || true)"
arithmetic="$(members_arithmetic "$run" || echo "not readable in the members' status.json")"
device="${gpu:-no GPU (nvidia-smi not found)}; $arithmetic (the members' records)"
closing=""
if awk -F'\t' 'NR > 1 && $3 == 75 { found = 1 } END { exit !found }' "$out/slices.tsv"; then
  closing="Exit code 75: stopped by \`--time-limit\` at epoch ends; the next command resumed the run."
fi
assemble "$run" "$out" "$device" "$("$bnn" version 2>&1 | head -4 | tr '\n' ';')" \
  "$closing"
