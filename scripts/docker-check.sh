#!/usr/bin/env bash
# Builds bnn's CPU container image (the Dockerfile's `cpu` target: the
# binary that the `cpu-build` stage makes with CI's steps, on Debian bookworm
# with its runtime packages) and runs it as a user would: `bnn version`,
# then configs/tiny.yaml on the image's Fashion-MNIST, writing into a host
# folder mounted at /runs, as the calling user. Where a host build is given,
# its run of the same config must give the same metrics.json byte for byte
# (same sources, compiler and LibTorch, one thread). With --cuda it then
# builds the default CUDA target, which needs Docker Hub, PyPI and Ubuntu's
# archive.
#
# Not part of CI: the image build is a full build (12 to 17 minutes on two
# cores). It is the check to run after touching the Dockerfile, the build
# or install-deps.sh where a Docker engine is at hand.
#
#   scripts/docker-check.sh [--cuda] [--host-bnn PATH] [OUT_DIR]
#
# Where Docker Hub cannot be reached but Debian's archive can, the
# debian:bookworm base image is made with debootstrap (as root, package
# debootstrap) with the official image's package sources. The engine needs
# no bridge: builds and runs use the host's network, runs none.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cuda=0
host_bnn=""
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cuda) cuda=1 ;;
    --host-bnn) host_bnn="${2:?--host-bnn needs a path}"; shift ;;
    -*) echo "docker-check: unknown option '$1'" >&2; exit 2 ;;
    *) out="$1" ;;
  esac
  shift
done
out="${out:-$(mktemp -d)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

fail() { echo "docker-check: FAIL: $*" >&2; exit 1; }

docker info > /dev/null 2>&1 ||
  { echo "docker-check: no Docker engine answers ('docker info' failed); start dockerd first" >&2; exit 2; }

# The base image: pulled where Docker Hub answers, else made from Debian's archive.
if ! docker image inspect debian:bookworm > /dev/null 2>&1 && ! docker pull -q debian:bookworm > /dev/null 2>&1; then
  command -v debootstrap > /dev/null ||
    { echo "docker-check: debian:bookworm cannot be pulled and debootstrap is not installed" >&2; exit 2; }
  echo "docker-check: Docker Hub unreachable; making debian:bookworm with debootstrap"
  rootfs="$(mktemp -d)"
  trap 'rm -rf "$rootfs"' EXIT
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian > "$out/debootstrap.log" 2>&1 ||
    fail "debootstrap failed (log: $out/debootstrap.log)"
  rm -f "$rootfs/etc/apt/sources.list" "$rootfs"/var/cache/apt/archives/*.deb
  cat > "$rootfs/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  tar -C "$rootfs" -c . | docker import -q - debian:bookworm > /dev/null
fi

start=$(date +%s)
docker build --network host --target cpu -t bnn:cpu "$root" > "$out/build-cpu.log" 2>&1 ||
  fail "the cpu target did not build (log: $out/build-cpu.log)"
size="$(docker image inspect --format '{{.Size}}' bnn:cpu 2> /dev/null || true)"
[[ "$size" =~ ^[0-9]+$ ]] && size=", $((size / 1000000)) MB" || size=""
echo "docker-check: bnn:cpu built in $(($(date +%s) - start)) s$size"

run_in_image() {
  docker run --rm --network none --user "$(id -u):$(id -g)" -v "$out:/runs" bnn:cpu "$@"
}
run_in_image version > "$out/version.txt" 2>&1 || fail "'bnn version' failed in the image: $(cat "$out/version.txt")"
grep -q "LibTorch" "$out/version.txt" || fail "'bnn version' printed no LibTorch line: $(cat "$out/version.txt")"
rm -rf "$out/tiny"
run_in_image run --config /opt/bnn/configs/tiny.yaml --out /runs/tiny --threads 1 > "$out/tiny.log" 2>&1 ||
  fail "the tiny run failed in the image (log: $out/tiny.log)"
for f in metrics.json metrics.csv report.md member_000 member_001; do
  [[ -e "$out/tiny/$f" ]] || fail "the tiny run wrote no $f into the mounted folder"
done
[[ "$(stat -c %u "$out/tiny/metrics.json")" == "$(id -u)" ]] || fail "the run's files are not owned by the caller"
echo "docker-check: bnn version and a tiny run in bnn:cpu: ok ($out/tiny)"

if [[ -n "$host_bnn" ]]; then
  rm -rf "$out/tiny-host"
  "$host_bnn" run --config "$root/configs/tiny.yaml" --out "$out/tiny-host" --threads 1 > "$out/tiny-host.log" 2>&1 ||
    fail "the host build's tiny run failed (log: $out/tiny-host.log)"
  cmp -s "$out/tiny/metrics.json" "$out/tiny-host/metrics.json" ||
    fail "the image's metrics.json differs from the host build's ($out/tiny, $out/tiny-host)"
  echo "docker-check: the image's tiny run equals the host build's byte for byte"
fi

if [[ "$cuda" == 1 ]]; then
  start=$(date +%s)
  docker build --network host -t bnn:cuda "$root" > "$out/build-cuda.log" 2>&1 ||
    fail "the cuda target did not build (log: $out/build-cuda.log)"
  echo "docker-check: bnn:cuda built in $(($(date +%s) - start)) s"
  docker run --rm --network none bnn:cuda version > "$out/version-cuda.txt" 2>&1 ||
    fail "'bnn version' failed in bnn:cuda: $(cat "$out/version-cuda.txt")"
fi
echo "docker-check: PASS"
