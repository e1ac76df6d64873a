#!/usr/bin/env bash
# Downloads, without installing anything, the Debian bookworm packages that
# scripts/build-pip-torch.sh unpacks into a prefix on a machine that has a
# compiler, CMake and a pip PyTorch but none of bnn's -dev packages (a GPU
# node of a cluster, a container without root). Run it where Debian's archive
# is reachable (any Debian 12 machine, or `docker run debian:bookworm`), then
# copy the folder to the build machine.
#
#   scripts/fetch-debs.sh DIR [--with-data]
#
# --with-data also fetches dataset-fashion-mnist (31 MB; the tests and the
# paper config read /usr/share/datasets/fashion-mnist).
set -euo pipefail

dir="${1:?usage: scripts/fetch-debs.sh DIR [--with-data]}"
packages=(
  libfmt-dev libfmt9
  libspdlog-dev libspdlog1.10
  libyaml-cpp-dev libyaml-cpp0.7
  nlohmann-json3-dev libcxxopts-dev
  googletest libgtest-dev libgmock-dev
  zlib1g-dev zlib1g
)
if [[ "${2:-}" == "--with-data" ]]; then packages+=(dataset-fashion-mnist); fi

mkdir -p "$dir"
cd "$dir"
# apt-get download writes into the current folder and needs no root; the
# _apt sandbox warning for a root-owned folder is harmless.
apt-get download "${packages[@]}" 2>&1 | grep -v "unsandboxed as root" || true
for p in "${packages[@]}"; do
  ls "${p}"_*.deb > /dev/null 2>&1 || { echo "fetch-debs: ${p} was not downloaded" >&2; exit 1; }
done
echo "fetch-debs: ${#packages[@]} packages in $(pwd)"
