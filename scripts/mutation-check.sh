#!/usr/bin/env bash
# Does the test suite catch a wrong factor of two? Applies each mutation of
# MUTATIONS (a one-line change to bnn's maths: a variance doubled, a step
# halved), rebuilds, runs the tests of TEST_REGEX (less MutationCheck.*,
# which reads the sources), and reports which tests failed, or SURVIVED
# where none did. Every mutation is undone afterwards, also when the script
# is interrupted. It takes a few minutes per mutation, so it is not part of
# ctest; docs/design.md ("What the tests catch") has its last results.
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
# The sampler and metric tests (about a minute on 2 cores).
default_regex="SamplerFamily|FusedSteps|SmsUbuGaussian|UbuConstants|Bounce|^Samplers\.|SghmcGaussian|Obabo|Sgnht"
default_regex+="|CyclicalSghmc|Bias|Nogin|LogPosteriorHvp|Logistic|CoupledBias|Metrics|Ensemble|Reliability"
default_regex+="|BatchOrder|LangevinOptions|Rhat\.|RhatByEpoch|EffectiveSampleSize|Diagnostics\.|OptimiserPhases"
default_regex+="|StochasticGradient|PairedMargin|OodDetection|OodTable|Uncertainty|StudentT|Augmentation"
regex="${3:-$default_regex}"
# MutationCheck.* reads the mutated sources themselves: a mutation applied
# makes its own line not apply, which would read as a catch.
exclude='^MutationCheck\.'
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

# The file being mutated is backed up in the build folder, with its name, so
# that a run killed outright (SIGKILL skips every trap) is mended by the next.
logs="${build}/mutation-check"
backup="$logs/backup" backup_name="$logs/backup.file"
if [[ $dry_run == 0 && -f "$backup_name" ]]; then
  stale="$(cat "$backup_name")"
  cp "$backup" "$root/$stale" && rm -f "$backup_name"
  echo "mutation-check: restored $stale, left mutated by an interrupted run"
fi

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
    echo "mutation-check: $file has uncommitted changes; commit or stash them first (git checkout -- $file" \
         "drops them)" >&2
    exit 2
  fi
  names+=("$name") files+=("$file") expressions+=("$expression")
done < "$mutations"

if [[ $dry_run == 1 ]]; then
  status=0
  copy="$(mktemp)"
  for i in "${!names[@]}"; do
    if ! sed "${expressions[$i]}" "$root/${files[$i]}" > "$copy" 2> "$copy.err"; then
      echo "${names[$i]}: not a sed expression: $(head -1 "$copy.err")"
      status=1
    elif cmp -s "$copy" "$root/${files[$i]}"; then
      echo "${names[$i]}: NOT APPLIED (${files[$i]} no longer has the line)"
      status=1
    fi
  done
  rm -f "$copy" "$copy.err"
  echo "mutation-check: ${#names[@]} mutations, $([[ $status == 0 ]] && echo "each applies" || echo "not all apply")"
  exit "$status"
fi

mkdir -p "$logs"
current="" child=""
restore() {
  if [[ -n "$current" ]]; then
    cp "$backup" "$root/$current" && rm -f "$backup_name"
    current=""
  fi
}
# Build and ctest run in the background so that a signal is handled at once:
# the trap stops them and restores the source.
# shellcheck disable=SC2317  # called by the trap
on_signal() {
  if [[ -n "$child" ]]; then kill -- -"$child" 2> /dev/null || kill "$child" 2> /dev/null; fi
  exit 130
}
trap restore EXIT
trap on_signal INT TERM HUP
set -m  # each background step in its own process group, which on_signal stops whole

# run LOG COMMAND...: COMMAND's output into LOG; its exit code.
run() {
  local log="$1"
  shift
  "$@" > "$log" 2>&1 &
  child=$!
  wait "$child"
  local code=$?
  child=""
  return "$code"
}

# ctest's list of the tests that did not pass, from its summary: "  12 - Name (Failed)".
failed_tests() {
  sed -nE '/^The following tests FAILED:/,$ s/^[[:space:]]+[0-9]+ - ([^ ]+) \(.+\)$/\1/p' "$1" | tr '\n' ' '
}

# Whether a ctest log shows tests run and all passed.
all_passed() { grep -qE "^100% tests passed, 0 tests failed out of [1-9]" "$1"; }

# The clean sources first: a test that fails already would "catch" every mutation.
if ! run "$logs/clean.build.log" cmake --build "$build" -j "$(nproc)"; then
  echo "mutation-check: the unmutated sources do not build (log: $logs/clean.build.log)" >&2
  exit 2
fi
if ! run "$logs/clean.ctest.log" ctest --test-dir "$build" -j "$(nproc)" -R "$regex" -E "$exclude" ||
   ! all_passed "$logs/clean.ctest.log"; then
  echo "mutation-check: without any mutation the tests fail or none ran: $(failed_tests "$logs/clean.ctest.log")" \
       "(log: $logs/clean.ctest.log); mend that first" >&2
  exit 2
fi

status=0
for i in "${!names[@]}"; do
  name="${names[$i]}" file="${files[$i]}"
  cp "$root/$file" "$backup"
  echo "$file" > "$backup_name"
  current="$file"
  sed -i "${expressions[$i]}" "$root/$file"
  if cmp -s "$root/$file" "$backup"; then
    echo "$name: NOT APPLIED"
    status=1
    restore
    continue
  fi
  if ! run "$logs/$name.build.log" cmake --build "$build" -j "$(nproc)"; then
    echo "$name: did not build (log: $logs/$name.build.log): a mutation must compile"
    status=1
    restore
    continue
  fi
  run "$logs/$name.ctest.log" ctest --test-dir "$build" -j "$(nproc)" -R "$regex" -E "$exclude"
  code=$?
  failed="$(failed_tests "$logs/$name.ctest.log")"
  if [[ -n "$failed" ]]; then
    echo "$name: caught by $failed"
  elif [[ $code -eq 0 ]] && all_passed "$logs/$name.ctest.log"; then
    echo "$name: SURVIVED"
    status=1
  else
    echo "$name: ctest did not run the tests (exit $code; log: $logs/$name.ctest.log)"
    status=1
  fi
  restore
done
run "$logs/restored.build.log" cmake --build "$build" -j "$(nproc)" ||
  echo "mutation-check: the rebuild of the restored sources failed (log: $logs/restored.build.log)" >&2
exit "$status"
