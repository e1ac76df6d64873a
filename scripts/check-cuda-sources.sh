#!/usr/bin/env bash
# Compiles (syntax only) the code that is built only against a CUDA
# LibTorch, on a machine without CUDA. Not part of CI: it is the check to
# run after touching that code when no GPU machine is at hand, and before a
# GPU session, whose few minutes a build error would waste.
#
#   scripts/check-cuda-sources.sh [WORK_DIR]
#   scripts/check-cuda-sources.sh --tree BUILD_DIR [--libtorch PACKAGE] [WORK_DIR]
#
# Without --tree: tests/src/pipeline/cuda_sync_test.cpp,
# samplers/fused_step.cpp, bench/member_designs.cpp and
# src/runtime/device_streams.cpp with BNN_HAVE_C10_CUDA (and
# BNN_CUDA_KERNELS), against this machine's LibTorch headers (Debian's
# libtorch-dev ships c10/cuda/) and CUDA's runtime headers: the toolkit's in
# /usr/local/cuda where it is installed, else those of Debian's
# nvidia-cuda-dev (non-free; about 770 MB, downloaded into WORK_DIR, nothing
# installed); then samplers/buffered_passes.cu with nvcc where one is
# installed. WORK_DIR defaults to a new temporary folder.
#
# --tree BUILD_DIR: every C++ source that BUILD_DIR (a Ninja build folder, as
# `make build` makes) compiles, with its own flags, against the headers of a
# CUDA LibTorch 2.x instead: Debian sid's libtorch-cuda-dev (contrib, 2.4 MB,
# downloaded into WORK_DIR), as a build against a CUDA pip wheel compiles
# them: with BNN_HAVE_C10_CUDA, BNN_CUDA_KERNELS, and NCCL for the
# distributed code; CUDA's runtime headers as above. It fails too where a
# header of the build's own LibTorch is read instead (-H lists them), and
# it compiles samplers/buffered_passes.cu as above. A GCC build folder
# only. Each failure is named with its first errors; warnings are counted
# and shown. Exit 1 if any source fails.
#
# --libtorch PACKAGE: whose headers --tree compiles against.
#   libtorch-cuda-dev (the default): sid's CUDA build (contrib), 2.6;
#   libtorch-dev: sid's newest LibTorch (main; 2.14 on 2026-11-27), a CPU
#     build that still ships c10/cuda, ATen/cuda and c10d's NCCL headers.
# The GPU machine's torch (2.11) lies between the two: an API that both
# have is taken to be in it. From LibTorch 2.14 the sources are compiled as
# C++20, as cmake/cxx_standard.cmake builds them.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
tree=""
if [[ "${1:-}" == "--tree" ]]; then
  tree="${2:?usage: scripts/check-cuda-sources.sh --tree BUILD_DIR [--libtorch PACKAGE] [WORK_DIR]}"
  [[ -f "$tree/build.ninja" ]] ||
    { echo "check-cuda-sources: --tree: '$tree' is not a Ninja build folder (make build makes one)" >&2; exit 2; }
  tree="$(cd "$tree" && pwd)"
  # The rewrite knows GCC's precompiled-header options (clang's differ: its
  # build folder's header, made from the build's LibTorch, would be used).
  compiler_id="$(sed -n 's/^set(CMAKE_CXX_COMPILER_ID "\(.*\)")$/\1/p' "$tree"/CMakeFiles/*/CMakeCXXCompiler.cmake |
    head -1)"
  [[ "$compiler_id" == GNU ]] ||
    { echo "check-cuda-sources: --tree: '$tree' compiles with '$compiler_id', not GCC" >&2; exit 2; }
  shift 2
  package=libtorch-cuda-dev
  if [[ "${1:-}" == "--libtorch" ]]; then
    package="${2:-}"
    shift 2 || true
  fi
  case "$package" in
    libtorch-cuda-dev) component=contrib ;;
    libtorch-dev) component=main ;;
    *) echo "check-cuda-sources: --libtorch: '$package' is not libtorch-cuda-dev or libtorch-dev" >&2; exit 2 ;;
  esac
fi
if [[ $# -gt 1 || "${1:-}" == -* ]]; then
  echo "check-cuda-sources: '$*': expected at most a work folder here (usage: scripts/check-cuda-sources.sh" \
    "[--tree BUILD_DIR [--libtorch PACKAGE]] [WORK_DIR])" >&2
  exit 2
fi
work="${1:-$(mktemp -d)}"
mkdir -p "$work/lists/partial" "$work/cuda" "$work/shim/c10/cuda/impl"
work="$(cd "$work" && pwd)"

# fetch SUITE COMPONENT PACKAGE: PACKAGE's .deb from Debian's archive into
# WORK_DIR (apt's lists for it in WORK_DIR too; nothing is installed).
fetch() {
  local list="$work/lists/$1-$2"
  mkdir -p "$list/partial"
  echo "deb http://deb.debian.org/debian $1 $2" > "$list.list"
  local apt_opts=(-o "Dir::Etc::sourcelist=$list.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$list")
  apt-get "${apt_opts[@]}" update -qq
  (cd "$work" && apt-get "${apt_opts[@]}" download -qq "$3") 2>&1 | { grep -v "unsandboxed as root" || true; }
  local debs=("$work/$3"_*.deb)
  [[ -e "${debs[0]}" ]] || { echo "check-cuda-sources: $3 was not downloaded" >&2; exit 1; }
  [[ ${#debs[@]} -eq 1 ]] || { echo "check-cuda-sources: several $3 .debs in $work" >&2; exit 1; }
}

# CUDA's runtime headers: the installed toolkit's, else nvidia-cuda-dev's.
cuda_include="$work/cuda/usr/include"
if [[ -f /usr/local/cuda/include/cuda_runtime_api.h ]]; then cuda_include=/usr/local/cuda/include; fi
if [[ ! -f "$cuda_include/cuda_runtime_api.h" ]]; then
  fetch bookworm non-free nvidia-cuda-dev
  dpkg-deb --fsys-tarfile "$work"/nvidia-cuda-dev_*.deb | tar -x -C "$work/cuda" --wildcards './usr/include/*'
fi
cuda_version="$(grep -m1 -o 'CUDART_VERSION *[0-9]*' "$cuda_include/cuda_runtime_api.h" | grep -o '[0-9]*$')"

# The kernels themselves (Note [CUDA kernels]), where a CUDA compiler is at hand.
kernels() {
  local nvcc
  nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  if [[ -x "$nvcc" ]]; then
    "$nvcc" -std=c++17 -O3 -arch=sm_90 -Xcompiler=-Wall,-Wextra -Werror all-warnings -I"$root" \
      -c "$root/samplers/buffered_passes.cu" -o "$work/buffered_passes.o"
    echo "check-cuda-sources: samplers/buffered_passes.cu compiles for sm_90 ($("$nvcc" --version | tail -1))"
  else
    echo "check-cuda-sources: no nvcc: samplers/buffered_passes.cu not compiled"
  fi
}

if [[ -n "$tree" ]]; then
  if [[ ! -f "$work/$package/usr/include/c10/cuda/CUDAFunctions.h" ]]; then
    fetch sid "$component" "$package"
    dpkg-deb -x "$work/$package"_*.deb "$work/$package"
  fi
  torch_version="$(sed -n 's/^Version: //p' < <(dpkg-deb -f "$work/$package"_*.deb))"
  # CMake writes this header when it builds c10_cuda; a CPU LibTorch has none.
  [[ -f "$work/$package/usr/include/c10/cuda/impl/cuda_cmake_macros.h" ]] ||
    echo '#define C10_CUDA_BUILD_SHARED_LIBS' > "$work/shim/c10/cuda/impl/cuda_cmake_macros.h"
  # The build's own compile commands, rewritten: the CUDA LibTorch's headers
  # for the build's, syntax only, a precompiled header of its own
  # (scripts/cuda_source_commands.py).
  ninja -C "$tree" -t commands > "$work/commands.txt"
  python3 "$root/scripts/cuda_source_commands.py" "$work" "$cuda_include" "$package" "$torch_version"
  # As a file of its own, the header is no system header.
  grep -v "pragma GCC system_header" "$tree/CMakeFiles/bnn_pch.dir/cmake_pch.hxx" > "$work/pch.h"
  bash "$work/pch.sh" 2> "$work/pch.txt" || { cat "$work/pch.txt" >&2; exit 1; }
  rm -rf "$work/results"
  mkdir -p "$work/results"
  # Line N of sources.txt: its messages in results/N.txt, and the source's
  # name in results/N.failed if it failed.
  cat > "$work/one.sh" <<'SH'
command="$(sed -n "$1p" "$2")"
bash -c "$command" > "$3/$1.txt" 2>&1 || echo "${command##* }" > "$3/$1.failed"
SH
  total="$(wc -l < "$work/sources.txt")"
  seq "$total" | xargs -P "$(nproc)" -I{} bash "$work/one.sh" {} "$work/sources.txt" "$work/results"
  warnings="$(cat "$work"/results/*.txt | grep -c ': warning:' || true)"
  failed=("$work"/results/*.failed)
  [[ -e "${failed[0]}" ]] || failed=()
  compiled=$((total - ${#failed[@]}))
  for f in "${failed[@]}"; do
    echo "check-cuda-sources: $(cat "$f") fails:" >&2
    grep -m5 -E ': (fatal )?error:' "${f%.failed}.txt" >&2 || tail -5 "${f%.failed}.txt" >&2
  done
  { grep -h ': warning:' "$work"/results/*.txt || true; } | sort -u | head -20
  # A header of the build's LibTorch read instead of the CUDA LibTorch's.
  system_torch="$(cat "$work/pch.txt" "$work"/results/*.txt |
    grep -E '^\.+ /usr/(local/)?include/(torch|ATen|c10|caffe2)/' | sed 's/^\.* //' | sort -u || true)"
  if [[ -n "$system_torch" ]]; then
    echo "check-cuda-sources: headers of the build's own LibTorch were read:" >&2
    head -5 <<< "$system_torch" >&2
    failed+=(system-headers)
  fi
  echo "check-cuda-sources: $compiled of $total sources compile against $package" \
    "$torch_version with BNN_HAVE_C10_CUDA, BNN_CUDA_KERNELS and NCCL (CUDART_VERSION $cuda_version);" \
    "$warnings warnings"
  kernels
  [[ ${#failed[@]} -eq 0 ]]
  exit
fi

torch_include=/usr/include/torch/csrc/api/include
[[ -f /usr/include/c10/cuda/CUDAFunctions.h ]] ||
  { echo "check-cuda-sources: no /usr/include/c10/cuda/CUDAFunctions.h (install libtorch-dev)" >&2; exit 2; }

# CMake generates this header when it builds c10_cuda; a CPU LibTorch has none.
echo '#define C10_CUDA_BUILD_SHARED_LIBS' > "$work/shim/c10/cuda/impl/cuda_cmake_macros.h"

for source in tests/src/pipeline/cuda_sync_test.cpp samplers/fused_step.cpp bench/member_designs.cpp \
    src/runtime/device_streams.cpp; do
  g++ -std=c++17 -fsyntax-only -Wall -Wextra -Wno-unused-parameter -D_GLIBCXX_USE_CXX11_ABI=1 \
    -DBNN_HAVE_C10_CUDA=1 -DBNN_CUDA_KERNELS=1 -I"$root" -isystem "$torch_include" -isystem "$work/shim" \
    -isystem "$cuda_include" "$root/$source"
  echo "check-cuda-sources: $source compiles with BNN_HAVE_C10_CUDA and BNN_CUDA_KERNELS" \
    "(libtorch-dev $(dpkg-query -W -f='${Version}' libtorch-dev 2>/dev/null || echo '?'), CUDART_VERSION $cuda_version)"
done
kernels
