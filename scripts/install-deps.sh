#!/usr/bin/env bash
# Installs everything bnn needs on Debian 12 from Debian's archive. Idempotent:
# packages already present are skipped, so a second run costs a dpkg query.
#
# BNN_LIBTORCH=cuda installs Debian's CUDA build of LibTorch instead of its CPU
# build (Debian 13 or newer, with the contrib and non-free components; the two
# conflict): libtorch-cuda-dev and python3-torch-cuda, with the CUDA toolkit
# (nvcc, for bnn's kernels), the CUDA build of Gloo and NCCL's headers. Its
# cuDNN comes from the nvidia-cudnn package, which downloads it from NVIDIA at
# install time. LibTorch's package also brings Debian's libcuda1 (the driver's
# user-space library, 550 in Debian 13), which must match the kernel's driver
# on a GPU machine: there, use Debian's driver packages of the same version.
set -euo pipefail

packages=(
  cmake g++ make ninja-build pkg-config
  libtorch-dev libgloo-dev  # see BNN_LIBTORCH below
  libcxxopts-dev libfmt-dev libspdlog-dev
  libyaml-cpp-dev nlohmann-json3-dev zlib1g-dev
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  googletest libgtest-dev
  dataset-fashion-mnist
  libopenblas0-pthread libopenblas0-openmp  # the second only where BNN_BLAS=openmp selects it
  python3 python3-numpy python3-torch
  python3-sklearn  # its handwritten digits are the demo's OOD set (scripts/make_digits_ood.py)
  gnuplot-nox
)

case "${BNN_LIBTORCH:-cpu}" in
  cpu) ;;
  cuda)
    for i in "${!packages[@]}"; do
      case "${packages[$i]}" in
        libtorch-dev) packages[i]=libtorch-cuda-dev ;;
        libgloo-dev) packages[i]=libgloo-cuda-dev ;;
        python3-torch) packages[i]=python3-torch-cuda ;;
      esac
    done
    packages+=(nvidia-cuda-toolkit libnccl-dev)
    ;;
  *) echo "install-deps: BNN_LIBTORCH must be cpu or cuda, got '$BNN_LIBTORCH'" >&2; exit 2 ;;
esac

blas_variant="${BNN_BLAS:-pthread}"
case "$blas_variant" in
  pthread | openmp) ;;
  *) echo "install-deps: BNN_BLAS must be pthread or openmp, got '$blas_variant'" >&2; exit 2 ;;
esac

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# Debian's LibTorch calls the system libblas.so.3; make sure the alternative
# points at OpenBLAS (the reference BLAS is about 7x slower). BNN_BLAS=openmp
# picks OpenBLAS's OpenMP build, which shares LibTorch's threads: small
# networks train 1.3-1.9x faster on 2 cores when bnn has them to itself, but
# 3x slower beside another busy process, and their results then depend on
# the thread count (docs/performance.md, Threads).
blas=$(ls "/usr/lib/x86_64-linux-gnu/openblas-${blas_variant}/libblas.so.3" 2>/dev/null || true)
if [ -n "$blas" ]; then
  "${sudo_cmd[@]}" update-alternatives --set libblas.so.3-x86_64-linux-gnu "$blas" >/dev/null || true
fi
