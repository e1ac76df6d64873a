#!/usr/bin/env bash
# Builds bnn (and its tests and benchmarks) against the LibTorch inside a pip
# PyTorch install, on a machine that has a compiler and CMake but not
# Debian's -dev packages: a GPU node, a container, a cluster account without
# root. bnn's other build dependencies (fmt, spdlog, yaml-cpp, cxxopts,
# nlohmann-json, GoogleTest, zlib headers) come from a folder of Debian .deb
# files (scripts/fetch-debs.sh makes one), unpacked into a prefix with
# dpkg-deb -x or, without dpkg, ar + tar. Nothing is installed system-wide.
# Without --debs the system's packages are used (the CUDA Dockerfile target).
#
#   scripts/build-pip-torch.sh [--python PY] [--debs DIR] [--build DIR]
#                              [--no-tests] [--target T] [--jobs N] [--keep-going]
#
#   --python PY   the Python whose torch to build against (default python3)
#   --debs DIR    .deb files to unpack into DIR/../<build>/deps
#   --build DIR   build folder (default build-torch)
#   --no-tests    skip GoogleTest and the benchmarks (no googletest .debs needed)
#   --target T    build only target T (e.g. bnn)
#   --jobs N      parallel compile jobs (default: all cores)
#   --keep-going  build all that does not depend on a source that failed
#                 (the log then names every error, not only the first)
#   --with-data   also unpack dataset-fashion-mnist from --debs into / (needs
#                 root; the tests and configs read /usr/share/datasets)
#
# Afterwards: BUILD/src/bnn version (must say std::filesystem from
# .../libstdc++.so.6), then (cd BUILD && ctest -j"$(nproc)" --output-on-failure).
# OpenCV is optional and not looked for in the prefix: without the system's
# OpenCV headers the image-file loaders and their tests are left out.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
python=python3
debs=""
build="$root/build-torch"
tests=ON
target=""
jobs="$(nproc)"
with_data=0
keep_going=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --debs) debs="$(cd "$2" && pwd)"; shift 2 ;;
    --build) build="$(mkdir -p "$2" && cd "$2" && pwd)"; shift 2 ;;
    --no-tests) tests=OFF; shift ;;
    --target) target="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --with-data) with_data=1; shift ;;
    --keep-going) keep_going=1; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "build-pip-torch: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

torch_prefix="$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)" ||
  { echo "build-pip-torch: '$python' cannot import torch (give --python)" >&2; exit 2; }
torch_version="$("$python" -c 'import torch; print(torch.__version__, torch.version.cuda or "cpu")')"
site="$(dirname "$(dirname "$(dirname "$torch_prefix")")")"  # torch_prefix is .../site-packages/torch/share/cmake
echo "build-pip-torch: torch $torch_version, CMake prefix $torch_prefix"

# One .deb into the prefix. dpkg-deb where it exists; else the .deb's ar
# archive holds data.tar.{xz,zst,gz}.
unpack_deb() {
  local deb="$1" dest="$2"
  if command -v dpkg-deb > /dev/null; then
    dpkg-deb -x "$deb" "$dest"
  else
    local tmp
    tmp="$(mktemp -d)"
    (cd "$tmp" && ar x "$deb")
    tar -xf "$tmp"/data.tar.* -C "$dest"
    rm -rf "$tmp"
  fi
}

prefix_paths="$torch_prefix"
if [[ -n "$debs" ]]; then
  prefix="$build/deps"
  mkdir -p "$prefix"
  count=0
  for deb in "$debs"/*.deb; do
    case "$(basename "$deb")" in
      dataset-*) continue ;;
      googletest_*|libgtest-dev_*|libgmock-dev_*) [[ $tests == ON ]] || continue ;;
    esac
    unpack_deb "$deb" "$prefix"
    count=$((count + 1))
  done
  [[ $count -gt 0 ]] || { echo "build-pip-torch: no .deb files in $debs" >&2; exit 2; }
  # Debian's absolute symlinks (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13)
  # would point outside the prefix: make them point inside it.
  while IFS= read -r link; do
    target_path="$(readlink "$link")"
    if [[ "$target_path" == /* && -e "$prefix$target_path" ]]; then ln -sfn "$prefix$target_path" "$link"; fi
  done < <(find "$prefix" -type l)
  prefix_paths="$prefix/usr;$prefix_paths"   # first: its packages win over any the torch prefix holds
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "build-pip-torch: $count packages unpacked into $prefix"
fi
if [[ $with_data == 1 ]]; then
  data_deb="$(ls "$debs"/dataset-fashion-mnist_*.deb 2> /dev/null | head -1)"
  [[ -n "$data_deb" ]] || { echo "build-pip-torch: --with-data: no dataset-fashion-mnist .deb in $debs" >&2; exit 2; }
  unpack_deb "$data_deb" /
fi

generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
# NCCL's header comes with the wheel's nvidia-nccl package: with it,
# data-parallel chains (bnn run --distributed) use NCCL (cmake/c10d.cmake).
nccl_include="$(ls -d "$site"/nvidia/nccl/include 2> /dev/null | head -1 || true)"
# The CUDA toolkit's headers (for c10/cuda) and nvcc, if the machine has them:
# CMake's FindCUDAToolkit looks on PATH and in /usr/local/cuda. nvcc also
# builds bnn's CUDA kernels (cmake/cuda_kernels.cmake): BNN_CUDA_KERNELS=ON in
# the environment makes their absence an error, OFF leaves them out.
# BNN_DISTRIBUTED=OFF in the environment leaves torch.distributed out.
nvcc="$(command -v nvcc || true)"
if [[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]]; then nvcc=/usr/local/cuda/bin/nvcc; fi
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DBNN_CUDA_KERNELS="${BNN_CUDA_KERNELS:-AUTO}" -DBNN_DISTRIBUTED="${BNN_DISTRIBUTED:-ON}" \
  ${nvcc:+-DCMAKE_CUDA_COMPILER="$nvcc"} \
  -DCMAKE_PREFIX_PATH="$prefix_paths" -DBNN_BUILD_TESTS="$tests" -DBNN_BUILD_BENCH="$tests" \
  ${nccl_include:+-DBNN_C10D_INCLUDE_DIRS="$nccl_include"} \
  ${debs:+-DCMAKE_BUILD_RPATH="$build/deps/usr/lib/x86_64-linux-gnu"}
native=()  # the build tool's own keep-going option: Ninja's -k 0, Make's -k
if [[ $keep_going == 1 ]]; then
  if [[ -f "$build/build.ninja" ]]; then native=(-- -k 0); else native=(-- -k); fi
fi
cmake --build "$build" -j "$jobs" ${target:+--target "$target"} "${native[@]}"
echo "build-pip-torch: built in $build"
if [[ -x "$build/src/bnn" ]]; then "$build/src/bnn" version; fi
