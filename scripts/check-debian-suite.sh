#!/usr/bin/env bash
# Builds bnn and runs its whole test suite inside a chroot of another Debian
# suite (trixie, sid, ...): the check that bnn builds and passes against a
# newer LibTorch, compiler, fmt, spdlog, yaml-cpp and GoogleTest than
# bookworm's. Needs root, debootstrap and Debian's archive, nothing else.
#
#   scripts/check-debian-suite.sh [--cuda CUDNN_DIR] SUITE CHROOT_DIR OUT_DIR
#
# A chroot made by an earlier call is reused (apt brings it up to date). The
# repository's HEAD, not the working tree, is cloned into CHROOT_DIR/src/bnn
# afresh. OUT_DIR gets the logs: deps.log, configure.log, build.log,
# ctest.log, versions.txt (compiler, LibTorch, the libraries) and
# version.txt (`bnn version`).
# BNN_CTEST_TIMEOUT (seconds, default 1800) bounds the test run;
# BNN_DEBIAN_MIRROR names the archive, BNN_DEBOOTSTRAP the debootstrap to run.
#
# --cuda builds against Debian's CUDA LibTorch instead (libtorch-cuda-dev:
# trixie or newer, contrib and non-free; BNN_LIBTORCH=cuda in install-deps.sh),
# with bnn's CUDA kernels (-DBNN_CUDA_KERNELS=ON, the toolkit's nvcc) and NCCL,
# and runs the suite on the CPU: the check that bnn links against a CUDA
# LibTorch and that its CPU paths and refusals hold where LibTorch has CUDA and
# the machine no GPU. Debian's nvidia-cudnn only downloads cuDNN from NVIDIA at
# install time; here a placeholder package stands in for it and the cuDNN 9
# libraries are copied from CUDNN_DIR (a folder with libcudnn.so.9, such as a
# pip nvidia-cudnn wheel's lib/) into the chroot (placeholder.log). After the
# build it checks that no program's link line names a folder that configure
# left out (Note [The CUDA host compiler's runtime]). A chroot serves one mode:
# the first call marks it (etc/bnn-check-mode), and a call in the other mode
# is refused, since apt would keep the other mode's packages around.
set -uo pipefail

usage() { echo "usage: scripts/check-debian-suite.sh [--cuda CUDNN_DIR] SUITE CHROOT_DIR OUT_DIR ($1)" >&2; exit 2; }
cudnn=""
if [ "${1:-}" = "--cuda" ]; then
  [ "$#" -ge 2 ] || usage "--cuda needs CUDNN_DIR"
  cudnn="$2"
  shift 2
  compgen -G "$cudnn/libcudnn.so.9*" > /dev/null || usage "--cuda: '$cudnn' holds no libcudnn.so.9"
  cudnn="$(cd "$cudnn" && pwd)"
fi
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
mode=cpu
[ -z "$cudnn" ] || mode=cuda
marked="$(cat "$dir/etc/bnn-check-mode" 2> /dev/null || echo "$mode")"
[ "$marked" = "$mode" ] || {
  echo "check-debian-suite: $dir was set up for a $marked build, not $mode: give another CHROOT_DIR" >&2
  exit 2
}
echo "$mode" > "$dir/etc/bnn-check-mode"
if [ -n "$cudnn" ]; then
  echo "deb $mirror $suite main contrib non-free" > "$dir/etc/apt/sources.list"
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

torch_packages="libtorch-dev python3-torch"
configure_options=""
if [ -n "$cudnn" ]; then
  # The placeholder for nvidia-cudnn: no files, no install-time download.
  # Its version is the archive's with a suffix, so it sorts above it and
  # meets libtorch-cuda's dependency, and it is held, so apt keeps it.
  if ! { rm -rf "$dir/tmp/bnn-cudnn" "$dir/usr/local/lib/bnn-cudnn" &&
    mkdir -p "$dir/tmp/bnn-cudnn/DEBIAN" "$dir/usr/local/lib/bnn-cudnn" &&
    cp -L "$cudnn"/libcudnn*.so* "$dir/usr/local/lib/bnn-cudnn/" &&
    echo /usr/local/lib/bnn-cudnn > "$dir/etc/ld.so.conf.d/bnn-cudnn.conf"; }; then
    echo "check-debian-suite: could not copy cuDNN from $cudnn into $dir" >&2
    exit 1
  fi
  step placeholder "apt-get update -q &&
    version=\$(apt-cache show nvidia-cudnn | sed -n 's/^Version: //p' | grep -v bnnplaceholder | sort -V | tail -1) &&
    [ -n \"\$version\" ] && printf '%s\n' 'Package: nvidia-cudnn' \"Version: \$version+bnnplaceholder\" \
      'Architecture: all' 'Maintainer: bnn check-debian-suite <nobody@invalid>' \
      'Description: placeholder for cuDNN (copied into /usr/local/lib/bnn-cudnn)' > /tmp/bnn-cudnn/DEBIAN/control &&
    { apt-mark unhold nvidia-cudnn > /dev/null 2>&1 || true; } && dpkg-deb --build /tmp/bnn-cudnn /tmp/nvidia-cudnn.deb &&
    dpkg -i /tmp/nvidia-cudnn.deb && apt-mark hold nvidia-cudnn && ldconfig"
  torch_packages="libtorch-cuda-dev python3-torch-cuda nvidia-cuda-toolkit libnccl-dev nvidia-cudnn"
  configure_options="-DBNN_CUDA_KERNELS=ON"
fi

step deps "apt-get update -q && apt-get upgrade -y -q &&
  BNN_LIBTORCH=${cudnn:+cuda} bash scripts/install-deps.sh"
in_chroot "g++ --version | head -1; cmake --version | head -1; (nvcc --version 2> /dev/null | tail -1);
  dpkg-query -W -f='\${Package} \${Version}\n' $torch_packages libfmt-dev libspdlog-dev \
    libyaml-cpp-dev libcxxopts-dev nlohmann-json3-dev libgtest-dev python3-numpy" \
  | tee "$out/versions.txt"
step configure "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release $configure_options"
grep -E "bnn: (C\+\+|CUDA|c10)|torch.distributed" "$out/configure.log"
step build "cmake --build build -j $(nproc)"
if [ -n "$cudnn" ]; then
  left_out="$(sed -n 's/.*CUDA link folders left out (another compiler.s C++ runtime): //p' "$out/configure.log")"
  for folder in ${left_out//,/ }; do
    [ "$folder" = none ] && continue
    if in_chroot "grep -rlF --include=link.txt --include=build.ninja -e '-L$folder' build"; then
      echo "check-debian-suite: a link line still names $folder, which configure left out" >&2
      exit 1
    fi
  done
  echo "check-debian-suite: no link line names a folder configure left out (${left_out:-no line in configure.log})"
fi
in_chroot "build/src/bnn version" > "$out/version.txt" 2>&1
cat "$out/version.txt"
start=$SECONDS
in_chroot "cd build && timeout ${BNN_CTEST_TIMEOUT:-1800} ctest -j $(nproc) --output-on-failure" > "$out/ctest.log" 2>&1
status=$?
grep -E "tests passed|\*\*\*(Failed|Exception|Timeout)|Failed +[0-9.]+ sec" "$out/ctest.log" | tail -30
echo "check-debian-suite: ctest exit $status, $(( SECONDS - start )) s"
exit "$status"
