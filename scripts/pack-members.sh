#!/usr/bin/env bash
# Carries finished members from the machine that trained them to the one that
# evaluates them, where the two share no filesystem: a lent GPU that is given
# back bare after each command and returns a few files of 16 MiB at most, a
# batch node whose scratch is wiped. `pack` writes a run's finished members
# (status.json "done") into archives of at most MAX each, with what `bnn
# evaluate` reads: the run's bnn.json, config.yaml, labels.npy and
# preprocess.json, and per member its probabilities (*_probs.npy, samples/
# step_*.npy, ood/), BatchNorm statistics, trace.csv, status.json and
# hessian.json. The weights (*_weights.npy, samples/weights_* and buffers_*),
# checkpoint.pt, model.pt and the lock stay behind, so the unpacked run can be
# evaluated but not resumed, predicted with or probed by bnn hessian.
#
#   scripts/pack-members.sh pack RUN_DIR PREFIX [MAX]   (MAX: N MiB or NK KiB; default 15)
#       writes PREFIX_01.tar, PREFIX_02.tar, ... and prints one line per archive
#   scripts/pack-members.sh unpack RUN_DIR ARCHIVE...
#       puts the archives' members into RUN_DIR (made if missing), then:
#       bnn evaluate RUN_DIR
#
# unpack refuses, before it changes anything, an archive of another
# experiment than RUN_DIR's (their bnn.json differ) and a member that RUN_DIR
# holds with other results; a member it holds with the same status.json (the
# same member packed twice) is left as it is.
set -euo pipefail

usage="usage: scripts/pack-members.sh pack RUN_DIR PREFIX [MAX] | unpack RUN_DIR ARCHIVE..."
die() {
  echo "pack-members: $*" >&2
  exit 2
}

top_files=(bnn.json config.yaml labels.npy preprocess.json)

# member_files MEMBER_DIR: the member's files that evaluation reads, relative to its run directory.
member_files() {
  local member="$1" name
  name="$(basename "$member")"
  (cd "$member/.." && find "$name" -type f \
    ! -name '*_weights.npy' ! -name 'checkpoint.pt*' ! -name lock \
    ! -path "$name/samples/weights_*" ! -path "$name/samples/buffers_*" \
    ! -path "$name/ood/*/samples/weights_*" ! -path "$name/ood/*/samples/buffers_*" | sort)
}

pack() {
  local run="$1" prefix="$2" max="${3:-15}" limit
  [[ -f "$run/bnn.json" ]] || die "$run holds no bnn run (no bnn.json)"
  if [[ "$max" =~ ^[1-9][0-9]*$ ]]; then
    limit=$((max * 1024 * 1024))
  elif [[ "$max" =~ ^[1-9][0-9]*K$ ]]; then
    limit=$((${max%K} * 1024))
  else
    die "MAX must be a whole number of MiB (15) or of KiB (500K), got '$max'"
  fi
  local f
  for f in "${top_files[@]}"; do
    [[ -f "$run/$f" ]] || die "$run/$f is missing: not a finished bnn run"
  done
  local members=() member
  for member in "$run"/member_*; do
    [[ -f "$member/status.json" ]] || continue
    grep -q '"status": *"done"' "$member/status.json" && members+=("$member")
  done
  [[ ${#members[@]} -gt 0 ]] || die "$run has no finished member to pack"
  mkdir -p "$(dirname "$prefix")"
  local top_bytes=0 batch=() batch_bytes=0 archive=0
  # A file's bytes in a tar: its size, a 512-byte header and up to 511 bytes of padding.
  for f in "${top_files[@]}"; do top_bytes=$((top_bytes + $(stat -c %s "$run/$f") + 1024)); done
  top_bytes=$((top_bytes + 10240))  # the archive's end (tar rounds to 10 KiB records)
  flush() {
    [[ ${#batch[@]} -gt 0 ]] || return 0
    archive=$((archive + 1))
    local name
    name="$(printf '%s_%02d.tar' "$prefix" "$archive")"
    local list=("${top_files[@]}") m
    for m in "${batch[@]}"; do mapfile -t -O "${#list[@]}" list < <(member_files "$run/$m"); done
    tar -cf "$name.tmp" -C "$run" -- "${list[@]}"
    mv "$name.tmp" "$name"
    echo "pack-members: $name: ${#batch[@]} member(s) (${batch[*]}), $(($(stat -c %s "$name") / 1024)) KiB"
    batch=()
    batch_bytes=0
  }
  local bytes
  for member in "${members[@]}"; do
    bytes=$(member_files "$member" | (cd "$run" && xargs -d '\n' stat -c %s) | awk '{s += $1 + 1024} END {print s + 0}')
    if [[ ${#batch[@]} -gt 0 && $((top_bytes + batch_bytes + bytes)) -gt $limit ]]; then
      flush
    fi
    if [[ $((top_bytes + bytes)) -gt $limit ]]; then
      echo "pack-members: warning: $(basename "$member") alone is $((bytes / 1024)) KiB, over $max" >&2
    fi
    batch+=("$(basename "$member")")
    batch_bytes=$((batch_bytes + bytes))
  done
  flush
}

unpack() {
  local run="$1"
  shift
  [[ $# -gt 0 ]] || die "$usage"
  local archive i=0
  staging="$(mktemp -d "${TMPDIR:-/tmp}/pack-members.XXXXXX")"
  trap 'rm -rf "$staging"' EXIT
  # Every archive is read and checked before RUN_DIR changes.
  for archive in "$@"; do
    [[ -f "$archive" ]] || die "no archive $archive"
    i=$((i + 1))
    mkdir "$staging/$i"
    tar -xf "$archive" -C "$staging/$i" 2> "$staging/tar.err" ||
      die "$archive is not a tar archive: $(head -1 "$staging/tar.err")"
    [[ -f "$staging/$i/bnn.json" ]] || die "$archive is not an archive of pack-members.sh (no bnn.json)"
    local reference="$run/bnn.json"
    [[ -f "$reference" ]] || reference="$staging/1/bnn.json"
    cmp -s "$staging/$i/bnn.json" "$reference" ||
      die "$archive holds members of another experiment than $reference (their bnn.json differ);" \
        "unpack it into another folder"
    local member
    for member in "$staging/$i"/member_*; do
      [[ -d "$member" ]] || continue
      local name there=""
      name="$(basename "$member")"
      if [[ -d "$run/$name" ]]; then
        there="$run/$name"
      elif [[ -d "$staging/seen/$name" ]]; then
        there="$staging/seen/$name"
      fi
      if [[ -n "$there" ]] && ! cmp -s "$member/status.json" "$there/status.json"; then
        [[ "$there" == "$run/$name" ]] || there="an earlier archive"
        die "$name in $archive differs from the $name in $there (their status.json differ)"
      fi
      mkdir -p "$staging/seen"
      [[ -d "$staging/seen/$name" ]] || ln -s "$member" "$staging/seen/$name"
    done
  done
  mkdir -p "$run"
  local f
  for f in "${top_files[@]}"; do
    [[ -f "$run/$f" ]] || cp "$staging/1/$f" "$run/$f.tmp.$$"
    [[ -f "$run/$f" ]] || mv "$run/$f.tmp.$$" "$run/$f"
  done
  local added=0 kept=0 member name
  for member in "$staging/seen"/member_*; do
    name="$(basename "$member")"
    if [[ -d "$run/$name" ]]; then
      kept=$((kept + 1))
      continue
    fi
    cp -r "$(readlink "$member")" "$run/$name.tmp.$$"
    mv "$run/$name.tmp.$$" "$run/$name"
    added=$((added + 1))
  done
  echo "pack-members: $run: $added member(s) added, $kept already there"
}

case "${1:-}" in
  pack)
    [[ $# -ge 3 && $# -le 4 ]] || die "$usage"
    pack "$2" "$3" "${4:-15}"
    ;;
  unpack)
    [[ $# -ge 3 ]] || die "$usage"
    run="$2"
    shift 2
    unpack "$run" "$@"
    ;;
  *) die "$usage" ;;
esac
