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
#       writes PREFIX_01.tar, PREFIX_02.tar, ... (removing PREFIX_NN.tar
#       files of an earlier pack of the same run beyond them; PREFIX_NN.tar
#       files of another run are refused) and prints one line per archive;
#       exits 1 if a member alone does not fit in MAX (its archive is written)
#   scripts/pack-members.sh unpack RUN_DIR ARCHIVE...
#       puts the archives' members into RUN_DIR (made if missing), then:
#       bnn evaluate RUN_DIR
#
# unpack refuses, before it changes anything: a folder that is neither empty
# nor a bnn run; an archive of another experiment than RUN_DIR's (their
# bnn.json differ); a member that RUN_DIR or an earlier archive holds with
# other results, or that RUN_DIR holds unfinished. A member held with the same
# status.json (the same member packed twice) is left as it is. Members are
# copied beside RUN_DIR's own under a hidden folder and moved in whole, so an
# interrupted unpack leaves no partial member for bnn evaluate to count.
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

# tar_bytes RUN_DIR < PATHS: what the paths take in a tar archive: per file a
# 512-byte header (two more blocks for a name over 99 bytes, GNU's long name)
# and its data padded to 512 bytes.
tar_bytes() {
  (cd "$1" && xargs -d '\n' stat -c '%s %n') |
    awk '{ size = $1; name = substr($0, length($1) + 2)
           blocks = 1 + int((size + 511) / 512)
           if (length(name) > 99) blocks += 1 + int((length(name) + 1 + 511) / 512)
           total += 512 * blocks }
         END { print total + 0 }'
}

is_done() { [[ -f "$1/status.json" ]] && grep -q '"status": *"done"' "$1/status.json"; }

pack() {
  local run="$1" prefix="$2" max="$3" limit
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
  local members=() skipped=() member
  for member in "$run"/member_*; do
    [[ -d "$member" ]] || continue
    if is_done "$member"; then members+=("$member"); else skipped+=("$(basename "$member")"); fi
  done
  [[ ${#skipped[@]} -eq 0 ]] || echo "pack-members: not finished, left out: ${skipped[*]}"
  [[ ${#members[@]} -gt 0 ]] || die "$run has no finished member to pack"
  # Archives already at PREFIX are replaced only where they are this run's
  # (an earlier pack of it): another run's may be the only copy of its members.
  local old
  for old in "${prefix}"_[0-9][0-9].tar; do
    [[ -f "$old" ]] || continue
    cmp -s <(tar -xOf "$old" bnn.json 2> /dev/null) "$run/bnn.json" ||
      die "$old holds another run's members (its bnn.json is not $run's): give another PREFIX, or move it away"
  done
  mkdir -p "$(dirname "$prefix")"
  # An archive: the run's files, its members' files, then two zero blocks,
  # all rounded up to tar's 10 KiB records.
  local top_bytes
  top_bytes=$(printf '%s\n' "${top_files[@]}" | tar_bytes "$run")
  local batch=() batch_bytes=0 archive=0 too_big=0
  declare -A files=()  # member name -> its files, listed once for both the sizing and the archive
  flush() {
    [[ ${#batch[@]} -gt 0 ]] || return 0
    archive=$((archive + 1))
    local name list=("${top_files[@]}") m
    name="$(printf '%s_%02d.tar' "$prefix" "$archive")"
    for m in "${batch[@]}"; do mapfile -t -O "${#list[@]}" list <<< "${files[$m]}"; done
    tar -cf "$name.tmp" -C "$run" -- "${list[@]}" || { rm -f "$name.tmp"; die "tar could not write $name"; }
    mv "$name.tmp" "$name"
    echo "pack-members: $name: ${#batch[@]} member(s) (${batch[*]}), $(($(stat -c %s "$name") / 1024)) KiB"
    batch=()
    batch_bytes=0
  }
  archived() { echo $(( (top_bytes + $1 + 1024 + 10239) / 10240 * 10240 )); }
  local bytes member_name
  for member in "${members[@]}"; do
    member_name="$(basename "$member")"
    files[$member_name]="$(member_files "$member")"
    bytes=$(tar_bytes "$run" <<< "${files[$member_name]}")
    if [[ ${#batch[@]} -gt 0 && $(archived $((batch_bytes + bytes))) -gt $limit ]]; then flush; fi
    if [[ $(archived "$bytes") -gt $limit ]]; then
      echo "pack-members: $member_name alone makes an archive of $(($(archived "$bytes") / 1024)) KiB," \
        "over the $max limit ($((limit / 1024)) KiB)" >&2
      too_big=1
    fi
    batch+=("$member_name")
    batch_bytes=$((batch_bytes + bytes))
  done
  flush
  # An earlier pack's archives beyond these would be unpacked with them.
  local stale
  for stale in "${prefix}"_[0-9][0-9].tar; do
    [[ -f "$stale" ]] || continue
    local n="${stale%.tar}"
    n="${n##*_}"
    if ((10#$n > archive)); then
      rm -f "$stale"
      echo "pack-members: removed $stale, left by an earlier pack"
    fi
  done
  return "$too_big"
}

unpack() {
  local run="$1"
  shift
  [[ $# -gt 0 ]] || die "$usage"
  if [[ -e "$run" && ! -f "$run/bnn.json" ]]; then
    [[ -d "$run" ]] || die "$run is not a folder"
    [[ -z "$(ls -A "$run")" ]] || die "$run is neither empty nor a bnn run (no bnn.json); give a new folder"
  fi
  staging="$(mktemp -d "${TMPDIR:-/tmp}/pack-members.XXXXXX")"
  staging="$(cd "$staging" && pwd)"
  trap 'rm -rf "$staging" ${incoming:+"$incoming"}' EXIT
  # Every archive is read and checked before RUN_DIR changes.
  declare -A seen=()  # member name -> its folder in the staging area
  local archive i=0 reference="$run/bnn.json" reference_name="$run/bnn.json" member name
  [[ -f "$reference" ]] || reference=""
  for archive in "$@"; do
    [[ -f "$archive" ]] || die "no archive $archive"
    i=$((i + 1))
    mkdir "$staging/$i"
    tar -xf "$archive" -C "$staging/$i" 2> "$staging/tar.err" ||
      die "$archive is not a tar archive: $(head -1 "$staging/tar.err")"
    [[ -f "$staging/$i/bnn.json" ]] || die "$archive is not an archive of pack-members.sh (no bnn.json)"
    if [[ -z "$reference" ]]; then
      reference="$staging/$i/bnn.json"
      reference_name="$archive"
    fi
    cmp -s "$staging/$i/bnn.json" "$reference" ||
      die "$archive holds members of another experiment than $reference_name (their bnn.json differ);" \
        "unpack it into another folder"
    for member in "$staging/$i"/member_*; do
      [[ -d "$member" ]] || continue
      name="$(basename "$member")"
      if [[ -d "$run/$name" ]] && ! is_done "$run/$name"; then
        die "$run/$name is not finished (or is being trained there); let it finish, or remove it, then unpack again"
      elif [[ -d "$run/$name" ]] && ! cmp -s "$member/status.json" "$run/$name/status.json"; then
        die "$name in $archive differs from $run/$name (their status.json differ)"
      elif [[ -n "${seen[$name]:-}" ]] && ! cmp -s "$member/status.json" "${seen[$name]}/status.json"; then
        die "$name in $archive differs from the $name in an earlier archive (their status.json differ)"
      fi
      [[ -n "${seen[$name]:-}" ]] || seen[$name]="$member"
    done
  done
  mkdir -p "$run"
  incoming="$run/.pack-members.$$"
  mkdir "$incoming"
  local f
  for f in "${top_files[@]}"; do
    if [[ ! -f "$run/$f" ]]; then
      cp "$staging/1/$f" "$incoming/$f"
      mv -T "$incoming/$f" "$run/$f"
    fi
  done
  local added=0 kept=0
  for name in $(printf '%s\n' "${!seen[@]}" | sort); do
    if [[ -d "$run/$name" ]]; then
      kept=$((kept + 1))
      continue
    fi
    cp -r "${seen[$name]}" "$incoming/$name"
    mv -T "$incoming/$name" "$run/$name"
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
    shift
    unpack "$@"
    ;;
  *) die "$usage" ;;
esac
