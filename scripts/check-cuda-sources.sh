#!/usr/bin/env bash
# Compiles (syntax only) the sources that are built only against a CUDA
# LibTorch, on a machine without CUDA: tests/src/pipeline/cuda_sync_test.cpp,
# samplers/fused_step.cpp, bench/member_designs.cpp and src/runtime/device_streams.cpp with
# BNN_HAVE_C10_CUDA (and BNN_CUDA_KERNELS), against
# this machine's LibTorch headers (Debian's
# libtorch-dev ships c10/cuda/) and the CUDA runtime headers of Debian's
# nvidia-cuda-dev (non-free; about 770 MB, downloaded into a temporary
# folder, nothing installed); then samplers/buffered_passes.cu with nvcc where
# one is installed. Not part of CI: it is the check to run after touching
# those files when no GPU machine is at hand.
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

cuda_version="$(grep -m1 -o 'CUDART_VERSION *[0-9]*' "$work/cuda/usr/include/cuda_runtime_api.h" | grep -o '[0-9]*$')"
for source in tests/src/pipeline/cuda_sync_test.cpp samplers/fused_step.cpp bench/member_designs.cpp \
    src/runtime/device_streams.cpp; do
  g++ -std=c++17 -fsyntax-only -Wall -Wextra -Wno-unused-parameter -D_GLIBCXX_USE_CXX11_ABI=1 \
    -DBNN_HAVE_C10_CUDA=1 -DBNN_CUDA_KERNELS=1 -I"$root" -isystem "$torch_include" -isystem "$work/shim" \
    -isystem "$work/cuda/usr/include" "$root/$source"
  echo "check-cuda-sources: $source compiles with BNN_HAVE_C10_CUDA and BNN_CUDA_KERNELS" \
    "(libtorch-dev $(dpkg-query -W -f='${Version}' libtorch-dev 2>/dev/null || echo '?'), CUDART_VERSION $cuda_version)"
done
# The kernels themselves (Note [CUDA kernels]), where a CUDA compiler is at hand.
nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
if [[ -x "$nvcc" ]]; then
  "$nvcc" -std=c++17 -O3 -arch=sm_90 -Xcompiler=-Wall,-Wextra -Werror all-warnings -I"$root" -c "$root/samplers/buffered_passes.cu" \
    -o "$work/buffered_passes.o"
  echo "check-cuda-sources: samplers/buffered_passes.cu compiles for sm_90 ($("$nvcc" --version | tail -1))"
else
  echo "check-cuda-sources: no nvcc: samplers/buffered_passes.cu not compiled"
fi
