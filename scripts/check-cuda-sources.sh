#!/usr/bin/env bash
# Compiles (syntax only) the sources that are built only against a CUDA
# LibTorch, on a machine without CUDA: tests/src/pipeline/cuda_sync_test.cpp with
# BNN_HAVE_C10_CUDA, against this machine's LibTorch headers (Debian's
# libtorch-dev ships c10/cuda/) and the CUDA runtime headers of Debian's
# nvidia-cuda-dev (non-free; about 770 MB, downloaded into a temporary
# folder, nothing installed). Not part of CI: it is the check to run after
# touching that file when no GPU machine is at hand.
#
#   scripts/check-cuda-sources.sh [WORK_DIR]     (default: a new temporary folder)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work/lists/partial" "$work/cuda" "$work/shim/c10/cuda/impl"

torch_include=/usr/include/torch/csrc/api/include
[[ -f /usr/include/c10/cuda/CUDAFunctions.h ]] ||
  { echo "check-cuda-sources: no /usr/include/c10/cuda/CUDAFunctions.h (install libtorch-dev)" >&2; exit 2; }

if [[ ! -f "$work/cuda/usr/include/cuda_runtime_api.h" ]]; then
  echo "deb http://deb.debian.org/debian bookworm non-free" > "$work/sources.list"
  apt_opts=(-o "Dir::Etc::sourcelist=$work/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$work/lists")
  apt-get "${apt_opts[@]}" update -qq
  (cd "$work" && apt-get "${apt_opts[@]}" download -qq nvidia-cuda-dev)
  dpkg-deb --fsys-tarfile "$work"/nvidia-cuda-dev_*.deb | tar -x -C "$work/cuda" --wildcards './usr/include/*'
fi
# CMake generates this header when it builds c10_cuda; a CPU LibTorch has none.
echo '#define C10_CUDA_BUILD_SHARED_LIBS' > "$work/shim/c10/cuda/impl/cuda_cmake_macros.h"

source=tests/src/pipeline/cuda_sync_test.cpp
g++ -std=c++17 -fsyntax-only -Wall -Wextra -Wno-unused-parameter -D_GLIBCXX_USE_CXX11_ABI=1 \
  -DBNN_HAVE_C10_CUDA=1 -I"$root" -isystem "$torch_include" -isystem "$work/shim" \
  -isystem "$work/cuda/usr/include" "$root/$source"
cuda_version="$(grep -m1 -o 'CUDART_VERSION *[0-9]*' "$work/cuda/usr/include/cuda_runtime_api.h" | grep -o '[0-9]*$')"
echo "check-cuda-sources: $source compiles with BNN_HAVE_C10_CUDA" \
  "(libtorch-dev $(dpkg-query -W -f='${Version}' libtorch-dev 2>/dev/null || echo '?'), CUDART_VERSION $cuda_version)"
