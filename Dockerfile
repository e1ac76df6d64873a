# bnn container images.
#
#   docker build -t bnn:cuda .                 # default: CUDA target (NVIDIA GPUs)
#   docker build -t bnn:cpu --target cpu .     # CPU target on Debian bookworm (runtime only)
#   docker run --rm --gpus all -v $PWD/data:/data -v $PWD/runs:/runs bnn:cuda \
#       run --config /opt/bnn/configs/fashion_mnist_paper.yaml --out /runs/paper
#
# The CPU build stage runs exactly what CI runs (scripts/install-deps.sh, then
# the Makefile's build), so CI exercises its steps; the CPU target keeps its
# binary and the packages that binary needs. The CUDA target builds against
# the LibTorch inside a pip PyTorch wheel (torch >= 2.7 wheels use the C++11
# ABI, like the distribution's fmt, spdlog and yaml-cpp) on an Ubuntu 24.04
# CUDA image, then copies the binary and the libraries it needs into a slim
# CUDA base image. scripts/docker-check.sh builds and runs the CPU target (it
# has passed); the CUDA target needs Docker Hub, PyPI and Ubuntu's archive,
# which the machine bnn is developed on cannot reach, so it has not been built.

ARG CUDA_VERSION=12.6.3
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu126
ARG TORCH_VERSION=2.7.1

# ---------------------------------------------------------- CPU build stage
# CI's steps: every -dev package, the whole build and the tests (ctest runs in
# /opt/bnn/build); usable as an image itself (--target cpu-build).
FROM debian:bookworm AS cpu-build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /opt/bnn
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN apt-get update -q && apt-get install -y -q --no-install-recommends make \
    && bash scripts/install-deps.sh \
    && rm -rf /var/lib/apt/lists/*
COPY . .
RUN make build && ln -s /opt/bnn/build/src/bnn /usr/local/bin/bnn \
    && bash scripts/runtime-packages.sh build/src/bnn > /opt/bnn/runtime-packages.txt
WORKDIR /runs
ENTRYPOINT ["bnn"]
CMD ["--help"]

# ---------------------------------------------------------------- CPU target
# The binary on a fresh bookworm with the runtime packages of the libraries
# it links (scripts/runtime-packages.sh; apt brings their dependencies),
# OpenBLAS (else apt's first choice for LibTorch's BLAS is the reference
# one), gnuplot for the figures and Fashion-MNIST: no compiler, -dev
# packages or build folder.
FROM debian:bookworm AS cpu
ENV DEBIAN_FRONTEND=noninteractive
COPY --from=cpu-build /opt/bnn/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -q \
    && xargs -a /tmp/runtime-packages.txt apt-get install -y -q --no-install-recommends \
        libopenblas0-pthread gnuplot-nox dataset-fashion-mnist \
    && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
COPY --from=cpu-build /opt/bnn/build/src/bnn /usr/local/bin/bnn
COPY configs /opt/bnn/configs
WORKDIR /runs
ENTRYPOINT ["bnn"]
CMD ["--help"]

# ------------------------------------------------------- CUDA build stage
FROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu24.04 AS cuda-build
ARG TORCH_INDEX
ARG TORCH_VERSION
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q && apt-get install -y -q --no-install-recommends \
        cmake g++ make pkg-config python3 python3-venv \
        libcxxopts-dev libfmt-dev libspdlog-dev libyaml-cpp-dev nlohmann-json3-dev zlib1g-dev \
        libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/torch \
    && /opt/torch/bin/pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"
WORKDIR /opt/bnn
COPY . .
# The same script builds bnn on a GPU machine without Docker (README,
# "Building by hand"); here the -dev packages come from Ubuntu's archive, and
# the image's nvcc builds bnn's CUDA kernels (required: BNN_CUDA_KERNELS=ON).
RUN BNN_CUDA_KERNELS=ON bash scripts/build-pip-torch.sh --python /opt/torch/bin/python --build build --no-tests --target bnn \
    && mkdir -p /opt/bnn-dist/lib \
    && cp build/src/bnn /opt/bnn-dist/ \
    && cp -P /opt/torch/lib/python3*/site-packages/torch/lib/*.so* /opt/bnn-dist/lib/ \
    && cp -P /opt/torch/lib/python3*/site-packages/nvidia/*/lib/*.so* /opt/bnn-dist/lib/

# ------------------------------------------------------- CUDA runtime (default)
# The CUDA libraries LibTorch was built against (cuBLAS, cuDNN, NCCL, ...) come
# with the wheel's nvidia-* packages and are copied above, so the base image
# needs only the driver interface.
FROM nvidia/cuda:${CUDA_VERSION}-base-ubuntu24.04 AS cuda
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q && apt-get install -y -q --no-install-recommends \
        libfmt9 libspdlog1.12 libyaml-cpp0.8 zlib1g libgomp1 \
        libopencv-core406t64 libopencv-imgproc406t64 libopencv-imgcodecs406t64 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=cuda-build /opt/bnn-dist /opt/bnn
COPY configs /opt/bnn/configs
ENV LD_LIBRARY_PATH=/opt/bnn/lib
RUN ln -s /opt/bnn/bnn /usr/local/bin/bnn
WORKDIR /runs
ENTRYPOINT ["bnn"]
CMD ["--help"]
