#!/usr/bin/env bash
# Does the test suite catch a wrong factor of two? Applies each mutation of
# MUTATIONS (a one-line change to bnn's maths: a variance doubled, a step
# halved), rebuilds, runs the tests of TEST_REGEX, and reports which tests
# failed, or SURVIVED where none did. Every mutation is undone afterwards,
# also when the script is interrupted. It takes a few minutes per mutation,
# so it is not part of ctest; docs/design.md ("What the tests catch") has
# its last results.
#
#   scripts/mutation-check.sh BUILD_DIR [MUTATIONS] [TEST_REGEX]
#   scripts/mutation-check.sh --dry-run [MUTATIONS]   (only that each one applies)
#
# MUTATIONS (default tests/data/mutations.txt): one per line,
#   NAME|FILE|SED_EXPRESSION
# with FILE relative to the repository root and a sed `s` command whose
# delimiter may be '|'; blank lines and lines starting with '#' are skipped.
# A mutation that changes nothing is reported NOT APPLIED (the code moved:
# update the line). The script refuses to start if a FILE has uncommitted
# changes, since it restores files from its own copies. Exit code: 0 if every
# mutation was caught, 1 if one survived or did not apply, 2 for bad usage.
set -uo pipefail

usage="usage: scripts/mutation-check.sh BUILD_DIR [MUTATIONS] [TEST_REGEX] | --dry-run [MUTATIONS]"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:?$usage}"
mutations="${2:-$root/tests/data/mutations.txt}"
regex="${3:-SamplerFamily|FusedSteps|SmsUbuGaussian|UbuConstants|Bounce|^Samplers\.|SghmcGaussian|Obabo|Sgnht|CyclicalSghmc|Bias|Nogin|LogPosteriorHvp|Logistic|CoupledBias|Metrics|Ensemble|Reliability|BatchOrder|LangevinOptions}"
dry_run=0
if [[ "$build" == --dry-run ]]; then
  dry_run=1
elif [[ ! -f "$build/CTestTestfile.cmake" ]]; then
  echo "mutation-check: $build is not a configured build folder" >&2
  exit 2
else
  build="$(cd "$build" && pwd)"
fi
[[ -f "$mutations" ]] || { echo "mutation-check: no mutations file $mutations" >&2; exit 2; }

# The mutations, checked before anything is changed.
names=() files=() expressions=()
while IFS= read -r line; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  IFS='|' read -r name file expression <<< "$line"
  if [[ -z "$name" || -z "$expression" || ! -f "$root/$file" ]]; then
    echo "mutation-check: $mutations: '$line' is not NAME|FILE|SED_EXPRESSION with an existing FILE" >&2
    exit 2
  fi
  if [[ $dry_run == 0 ]] && ! git -C "$root" diff --quiet -- "$file"; then
    echo "mutation-check: $file has uncommitted changes; commit or stash them first" >&2
    exit 2
  fi
  names+=("$name") files+=("$file") expressions+=("$expression")
done < "$mutations"

if [[ $dry_run == 1 ]]; then
  status=0
  copy="$(mktemp)"
  for i in "${!names[@]}"; do
    sed "${expressions[$i]}" "$root/${files[$i]}" > "$copy"
    if cmp -s "$copy" "$root/${files[$i]}"; then
      echo "${names[$i]}: NOT APPLIED (${files[$i]} no longer has the line)"
      status=1
    fi
  done
  rm -f "$copy"
  echo "mutation-check: ${#names[@]} mutations, $([[ $status == 0 ]] && echo "each applies" || echo "not all apply")"
  exit "$status"
fi

saved="$(mktemp)"
current=""
restore() {
  if [[ -n "$current" ]]; then cp "$saved" "$root/$current"; current=""; fi
}
trap 'restore; rm -f "$saved"' EXIT
trap 'exit 130' INT TERM

logs="$build/mutation-check"
mkdir -p "$logs"
status=0
for i in "${!names[@]}"; do
  name="${names[$i]}" file="${files[$i]}"
  cp "$root/$file" "$saved"
  current="$file"
  sed -i "${expressions[$i]}" "$root/$file"
  if cmp -s "$root/$file" "$saved"; then
    echo "$name: NOT APPLIED"
    status=1
    restore
    continue
  fi
  if ! cmake --build "$build" -j "$(nproc)" > "$logs/$name.build.log" 2>&1; then
    echo "$name: caught by the compiler (log: $logs/$name.build.log)"
    restore
    continue
  fi
  (cd "$build" && ctest -j "$(nproc)" -R "$regex" > "$logs/$name.ctest.log" 2>&1)
  code=$?
  failed="$(sed -nE 's/^[[:space:]]+[0-9]+ - ([^ ]+) \((Failed|Timeout|SEGFAULT|Exception|Subprocess aborted)\)$/\1/p' \
    "$logs/$name.ctest.log" | tr '\n' ' ')"
  if [[ -n "$failed" ]]; then
    echo "$name: caught by $failed"
  elif [[ $code -eq 0 ]] && grep -qE "^100% tests passed, 0 tests failed out of [1-9]" "$logs/$name.ctest.log"; then
    echo "$name: SURVIVED"
    status=1
  else
    echo "$name: ctest did not run the tests (exit $code; log: $logs/$name.ctest.log)"
    status=1
  fi
  restore
done
cmake --build "$build" -j "$(nproc)" > "$logs/restored.build.log" 2>&1 ||
  echo "mutation-check: the rebuild of the restored sources failed (log: $logs/restored.build.log)" >&2
exit "$status"
