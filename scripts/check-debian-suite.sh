#!/usr/bin/env bash
# Builds bnn and runs its whole test suite inside a chroot of another Debian
# suite (trixie, sid, ...): the check that bnn builds and passes against a
# newer LibTorch, compiler, fmt, spdlog, yaml-cpp and GoogleTest than
# bookworm's. Needs root, debootstrap and Debian's archive, nothing else.
#
#   scripts/check-debian-suite.sh SUITE CHROOT_DIR OUT_DIR
#
# A chroot made by an earlier call is reused (apt brings it up to date). The
# repository's HEAD, not the working tree, is cloned into CHROOT_DIR/src/bnn
# afresh. OUT_DIR gets the logs: deps.log, configure.log, build.log,
# ctest.log, and versions.txt (compiler, LibTorch, the libraries).
# BNN_CTEST_TIMEOUT (seconds, default 1800) bounds the test run;
# BNN_DEBIAN_MIRROR names the archive, BNN_DEBOOTSTRAP the debootstrap to run.
set -uo pipefail

usage() { echo "usage: scripts/check-debian-suite.sh SUITE CHROOT_DIR OUT_DIR ($1)" >&2; exit 2; }
[ "$#" -eq 3 ] || usage "got $# arguments"
for a in "$@"; do [ -n "$a" ] || usage "an argument is empty"; done
suite="$1" dir="$2" out="$3"
root="$(cd "$(dirname "$0")/.." && pwd)"
mirror="${BNN_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
debootstrap="${BNN_DEBOOTSTRAP:-debootstrap}"  # or a debootstrap run from its source tree

[ "$(id -u)" -eq 0 ] ||
  { echo "check-debian-suite: needs root (debootstrap, chroot and bind mounts); running as uid $(id -u)" >&2; exit 2; }
command -v "$debootstrap" > /dev/null || {
  echo "check-debian-suite: needs debootstrap: '$debootstrap' not found (apt-get install debootstrap," \
    "or BNN_DEBOOTSTRAP=PATH)" >&2
  exit 2
}
mkdir -p "$out" && out="$(cd "$out" && pwd)"

if [ ! -x "$dir/usr/bin/apt-get" ]; then
  echo "check-debian-suite: debootstrap $suite into $dir"
  "$debootstrap" --variant=minbase --include=ca-certificates "$suite" "$dir" "$mirror" \
    > "$out/debootstrap.log" 2>&1 ||
    { tail -5 "$out/debootstrap.log"; echo "check-debian-suite: debootstrap failed" >&2; exit 1; }
fi
# A mirror that is a snapshot serves Release files past their Valid-Until.
echo 'Acquire::Check-Valid-Until "false";' > "$dir/etc/apt/apt.conf.d/99bnn-snapshot"
cp /etc/resolv.conf "$dir/etc/resolv.conf"

mounted=()
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() { for m in "${mounted[@]}"; do umount "$m" 2> /dev/null; done; }
trap cleanup EXIT
for m in proc sys dev; do
  if ! mountpoint -q "$dir/$m"; then
    mount --bind "/$m" "$dir/$m" && mounted=("$dir/$m" "${mounted[@]}")
  fi
done

rm -rf "$dir/src/bnn" && mkdir -p "$dir/src" && git clone -q "$root" "$dir/src/bnn" || exit 1
echo "check-debian-suite: bnn $(git -C "$dir/src/bnn" log --oneline -1)"

in_chroot() { chroot "$dir" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin bash -c "cd /src/bnn && $1"; }

step() {  # step NAME COMMAND: runs COMMAND in the chroot, its output in OUT_DIR/NAME.log
  local start=$SECONDS
  if in_chroot "$2" > "$out/$1.log" 2>&1; then
    echo "check-debian-suite: $1 done, $(( SECONDS - start )) s"
  else
    tail -30 "$out/$1.log"
    echo "check-debian-suite: $1 failed (log: $out/$1.log)" >&2
    exit 1
  fi
}

step deps "apt-get update -q && apt-get upgrade -y -q && bash scripts/install-deps.sh"
in_chroot "g++ --version | head -1; cmake --version | head -1;
  dpkg-query -W -f='\${Package} \${Version}\n' libtorch-dev libfmt-dev libspdlog-dev \
    libyaml-cpp-dev libcxxopts-dev nlohmann-json3-dev libgtest-dev python3-torch python3-numpy" \
  | tee "$out/versions.txt"
step configure "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release"
grep "bnn: C++" "$out/configure.log"
step build "cmake --build build -j $(nproc)"
start=$SECONDS
in_chroot "cd build && timeout ${BNN_CTEST_TIMEOUT:-1800} ctest -j $(nproc) --output-on-failure" > "$out/ctest.log" 2>&1
status=$?
grep -E "tests passed|\*\*\*(Failed|Exception|Timeout)|Failed +[0-9.]+ sec" "$out/ctest.log" | tail -30
echo "check-debian-suite: ctest exit $status, $(( SECONDS - start )) s"
exit "$status"
