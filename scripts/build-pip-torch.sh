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
#                              [--no-tests] [--target T] [--jobs N | --max-jobs N] [--keep-going]
#                              [--save-kit FILE | --from-kit FILE]
#
#   --python PY   the Python whose torch to build against (default python3)
#   --debs DIR    .deb files to unpack into DIR/../<build>/deps
#   --build DIR   build folder (default build-torch)
#   --no-tests    skip GoogleTest and the benchmarks (no googletest .debs needed)
#   --target T    build only target T (e.g. bnn)
#   --jobs N      parallel compile jobs (default: all cores, within the
#                 cgroup's CPU quota, at most one per 2 GiB of available memory)
#   --max-jobs N  the default, but at most N (where nproc may count a
#                 sandbox's host's CPUs)
#   --keep-going  build all that does not depend on a source that failed
#                 (the log then names every error, not only the first)
#   --with-data   also unpack dataset-fashion-mnist from --debs into / (needs
#                 root; the tests and configs read /usr/share/datasets)
#   --save-kit FILE  after a build of bnn, write FILE (.tar.gz): the built
#                 bnn, its `bnn version` and kit.txt (the torch it was built
#                 against, a digest of the sources that go into bnn, the build's
#                 settings, the commit, the time); with the tests to build
#                 too, bnn and FILE come before them
#   --from-kit FILE  take bnn from FILE instead of compiling it, if it was
#                 built against this Python's torch, from these sources, with
#                 these settings (BNN_CUDA_KERNELS, BNN_DISTRIBUTED, the C++
#                 compiler, nvcc, NCCL's header, the compile and link flags
#                 CXXFLAGS, CUDAFLAGS and LDFLAGS, the .debs) and starts here;
#                 else say why and build as usual, and then write --save-kit's
#                 FILE if given (needs --no-tests: a kit holds bnn alone)
#
# A kit is for machines that start bare each time, such as a lent GPU whose
# sessions each pay the build again: one session's build comes back as a
# file and the next ones carry it. The deps folder is found from the binary's
# place ($ORIGIN/../deps), so the build folder may move.
#
# Afterwards: BUILD/src/bnn version (must say std::filesystem from
# .../libstdc++.so.6), then (cd BUILD && ctest -j"$(nproc)" --output-on-failure).
# OpenCV is optional and not looked for in the prefix: without the system's
# OpenCV headers the image-file loaders and their tests are left out. bnn's
# CUDA kernels need an nvcc of the CUDA major version torch was built with
# (else the process would load two CUDA runtimes): with another, they are
# left out, or refused where BNN_CUDA_KERNELS=ON.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
python=python3
debs=""
build="$root/build-torch"
tests=ON
target=""
# All cores, but no more than the cgroup's CPU quota grants, nor more jobs
# than memory holds at 2 GiB each (a compile against LibTorch 2.x takes one
# to two): a sandbox such as gVisor may report the host's CPUs.
jobs="$(nproc)"
read -r quota period 2> /dev/null < /sys/fs/cgroup/cpu.max || true
if [[ "${quota:-}" =~ ^[0-9]+$ && "${period:-}" =~ ^[1-9][0-9]*$ ]] &&
  (( jobs > (quota + period - 1) / period )); then
  jobs=$(( (quota + period - 1) / period ))
fi
available_kib="$(sed -n 's/^MemAvailable: *\([0-9]*\) kB$/\1/p' /proc/meminfo 2> /dev/null | head -1 || true)"
if [[ -n "$available_kib" ]] && (( jobs > available_kib / 2097152 )); then
  jobs=$(( available_kib / 2097152 > 0 ? available_kib / 2097152 : 1 ))
fi
with_data=0
max_jobs=""
keep_going=0
save_kit=""
from_kit=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --debs) debs="$(cd "$2" && pwd)"; shift 2 ;;
    --build) build="$(mkdir -p "$2" && cd "$2" && pwd)"; shift 2 ;;
    --no-tests) tests=OFF; shift ;;
    --target) target="$2"; shift 2 ;;
    --jobs | --max-jobs)
      [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "build-pip-torch: $1 takes a whole number >= 1" >&2; exit 2; }
      if [[ "$1" == --jobs ]]; then jobs="$2"; else max_jobs="$2"; fi
      shift 2 ;;
    --with-data) with_data=1; shift ;;
    --keep-going) keep_going=1; shift ;;
    --save-kit) save_kit="${2:?--save-kit needs a file}"; shift 2 ;;
    --from-kit) from_kit="${2:?--from-kit needs a file}"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo pipefail$/{/^set /d;p;}' "$0"; exit 0 ;;
    *) echo "build-pip-torch: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [[ -n "$max_jobs" ]] && (( jobs > max_jobs )); then jobs="$max_jobs"; fi
[[ -z "$save_kit" || -z "$target" || "$target" == bnn ]] ||
  { echo "build-pip-torch: --save-kit needs bnn built: no --target other than bnn" >&2; exit 2; }
if [[ -n "$from_kit" ]]; then
  [[ $tests == OFF && ( -z "$target" || "$target" == bnn ) ]] ||
    { echo "build-pip-torch: --from-kit gives bnn alone: add --no-tests (and no --target other than bnn)" >&2; exit 2; }
  [[ -f "$from_kit" ]] || { echo "build-pip-torch: --from-kit: no file '$from_kit'" >&2; exit 2; }
  from_kit="$(cd "$(dirname "$from_kit")" && pwd)/$(basename "$from_kit")"
fi
# The library path the caller's later commands will have (the deps below are
# added to it for this script's own calls).
caller_library_path="${LD_LIBRARY_PATH:-}"

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
  data_debs=("$debs"/dataset-fashion-mnist_*.deb)
  data_deb="${data_debs[0]}"
  [[ -f "$data_deb" ]] || { echo "build-pip-torch: --with-data: no dataset-fashion-mnist .deb in $debs" >&2; exit 2; }
  unpack_deb "$data_deb" /
fi

# NCCL's header comes with the wheel's nvidia-nccl package: with it,
# data-parallel chains (bnn run --distributed) use NCCL (cmake/c10d.cmake).
nccl_include=""
[[ -d "$site/nvidia/nccl/include" ]] && nccl_include="$site/nvidia/nccl/include"
# The CUDA toolkit's headers (for c10/cuda) and nvcc, if the machine has them:
# CMake's FindCUDAToolkit looks on PATH and in /usr/local/cuda. nvcc also
# builds bnn's CUDA kernels (cmake/cuda_kernels.cmake): BNN_CUDA_KERNELS=ON in
# the environment makes their absence an error, OFF leaves them out.
# BNN_DISTRIBUTED=OFF in the environment leaves torch.distributed out.
nvcc="$(command -v nvcc || true)"
if [[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]]; then nvcc=/usr/local/cuda/bin/nvcc; fi
# The kernels launch through the runtime of nvcc's toolkit (libcudart.so.N,
# N its major version), and the wheel's torch loads the runtime of the CUDA
# it was built with: where the two majors differ, one process would hold two
# CUDA runtimes. The kernels are then left out (BNN_CUDA_KERNELS unset or
# AUTO) or refused (ON).
torch_cuda="${torch_version##* }"  # "13.0", or "cpu"
if [[ -n "$nvcc" && "$torch_cuda" != cpu && "${BNN_CUDA_KERNELS:-AUTO}" != OFF ]]; then
  nvcc_cuda="$("$nvcc" --version 2> /dev/null | sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p' | head -1)"
  if [[ -n "$nvcc_cuda" && "$nvcc_cuda" != "${torch_cuda%%.*}" ]]; then
    clash="$nvcc is CUDA $nvcc_cuda's nvcc, and torch was built with CUDA $torch_cuda: bnn's kernels would bring a"
    clash+=" second CUDA runtime into the process"
    if [[ "${BNN_CUDA_KERNELS:-AUTO}" == ON ]]; then
      echo "build-pip-torch: $clash; put CUDA ${torch_cuda%%.*}'s nvcc first on the PATH, or set BNN_CUDA_KERNELS=OFF" >&2
      exit 2
    fi
    echo "build-pip-torch: $clash; building without them (BNN_CUDA_KERNELS=OFF)"
    export BNN_CUDA_KERNELS=OFF
  fi
fi
# The GPUs' architectures for torch's CMake config, where the environment
# names none and nvidia-smi gives them (9.0 on an H100 or H200): without
# TORCH_CUDA_ARCH_LIST, torch's config detects them itself and, where that
# fails, falls back to a list down to compute_50, which CUDA 13's nvcc
# refuses ("Unsupported gpu architecture"). bnn's own kernels take
# BNN_CUDA_ARCHITECTURES (cmake/cuda_kernels.cmake).
if [[ -z "${TORCH_CUDA_ARCH_LIST:-}" && "$torch_cuda" != cpu ]] && command -v nvidia-smi > /dev/null; then
  arch_list="$(timeout 30 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null |
    grep -E '^ *[0-9]+\.[0-9]+ *$' | tr -d ' ' | sort -u | paste -sd';' || true)"
  if [[ -n "$arch_list" ]]; then
    export TORCH_CUDA_ARCH_LIST="$arch_list"
    echo "build-pip-torch: TORCH_CUDA_ARCH_LIST=$arch_list (this machine's GPUs, from nvidia-smi)"
  fi
fi

# The source files that go into bnn, as one digest (a kit's bnn is reused
# only where they are these; files of other kinds, such as editors' backups,
# do not count).
sources_digest() {
  (cd "$root" && find CMakeLists.txt cmake src models samplers data_loaders -type f \( -name CMakeLists.txt \
    -o -name '*.cmake' -o -name '*.cpp' -o -name '*.c' -o -name '*.h' -o -name '*.hpp' -o -name '*.inc' \
    -o -name '*.in' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64)
}
# What else decides the binary: the options, the compilers, NCCL's header
# and the .debs whose headers are compiled in.
build_settings() {
  local cxx cuda="none" packages="the system's"
  cxx="$("${CXX:-c++}" --version 2> /dev/null | head -1)"
  [[ -z "$nvcc" ]] || cuda="$("$nvcc" --version 2> /dev/null | tail -1)"
  if [[ -n "$debs" ]]; then
    packages=""
    local deb
    for deb in "$debs"/*.deb; do  # a glob expands sorted
      case "$(basename "$deb")" in dataset-*) ;; *) packages+="$(basename "$deb") " ;; esac
    done
  fi
  echo "kernels ${BNN_CUDA_KERNELS:-AUTO}, distributed ${BNN_DISTRIBUTED:-ON}, NCCL header" \
    "${nccl_include:-none}, C++ ${cxx:-unknown}, nvcc ${cuda}, $(build_flags), packages ${packages% }"
}
# The build type (this script's, always Release) and the compile and link
# flags: those that CMake gives a new build folder from the environment
# (CXXFLAGS, CUDAFLAGS, LDFLAGS), or, given the folder's CMakeCache.txt, the
# flags its first configure kept (a later run of this script does not change
# them; the CUDA flags are there where CUDA was enabled, and LibTorch's
# config adds its own to the variable, not to the cache). Whitespace runs
# count as one space.
squeeze() {
  local s
  s="$(printf '%s' "$1" | tr -s '[:space:]' ' ')"
  s="${s# }"
  printf '%s' "${s% }"
}
build_flags() {
  local cache="${1:-}" cxx="${CXXFLAGS:-}" cuda="${CUDAFLAGS:-}" ld="${LDFLAGS:-}"
  if [[ -n "$cache" && -f "$cache" ]]; then
    cxx="$(sed -n 's/^CMAKE_CXX_FLAGS:STRING=//p' "$cache" | head -1)"
    ld="$(sed -n 's/^CMAKE_EXE_LINKER_FLAGS:STRING=//p' "$cache" | head -1)"
    if grep -q '^CMAKE_CUDA_FLAGS:' "$cache"; then
      cuda="$(sed -n 's/^CMAKE_CUDA_FLAGS:[A-Z]*=//p' "$cache" | head -1)"
    fi
  fi
  echo "build Release, CXXFLAGS '$(squeeze "$cxx")', CUDAFLAGS '$(squeeze "$cuda")'," \
    "LDFLAGS '$(squeeze "$ld")'"
}
kit_value() { sed -n "s/^$1=//p" "$2" | head -1; }
# Both are fixed for this script's run: taken once, where a kit is read or written.
if [[ -n "$from_kit$save_kit" ]]; then
  sources="$(sources_digest)"
  settings="$(build_settings)"
fi

# use_kit: bnn from $from_kit into $build/src, if it fits this machine and
# these sources (returns 0); else says why and returns 1. A file that is not
# a kit is an error.
use_kit() {
  local tmp reason="" version
  tmp="$(mktemp -d)"
  if ! tar -xzf "$from_kit" -C "$tmp" kit.txt bnn 2> /dev/null || [[ ! -s "$tmp/kit.txt" || ! -f "$tmp/bnn" ]]; then
    rm -rf "$tmp"
    echo "build-pip-torch: --from-kit: '$from_kit' is not a kit (a .tar.gz with kit.txt and bnn, from --save-kit)" >&2
    exit 2
  fi
  if [[ "$(kit_value torch "$tmp/kit.txt")" != "$torch_version" ]]; then
    reason="it was built against torch $(kit_value torch "$tmp/kit.txt"), this Python has $torch_version"
  elif [[ "$(kit_value sources "$tmp/kit.txt")" != "$sources" ]]; then
    reason="it was built from other sources (commit $(kit_value commit "$tmp/kit.txt")) than these"
  elif [[ "$(kit_value settings "$tmp/kit.txt")" != "$settings" ]]; then
    reason="it was built with $(kit_value settings "$tmp/kit.txt"); this build would have $settings"
  elif ! { mkdir -p "$build/src" && rm -f "$build/src/bnn" && install -m 755 "$tmp/bnn" "$build/src/bnn.tmp.$$" &&
           mv -f "$build/src/bnn.tmp.$$" "$build/src/bnn"; }; then
    reason="its bnn could not be put into $build/src"
  else
    if ! version="$(LD_LIBRARY_PATH="$caller_library_path" "$build/src/bnn" version 2>&1)"; then
      rm -f "$build/src/bnn"
      reason="its bnn does not start here: $(echo "$version" | head -3 | tr '\n' ' ')"
    fi
  fi
  if [[ -n "$reason" ]]; then
    rm -rf "$tmp"
    echo "build-pip-torch: not using the kit $from_kit: $reason; building bnn"
    return 1
  fi
  echo "build-pip-torch: bnn from the kit $from_kit (commit $(kit_value commit "$tmp/kit.txt"), built" \
    "$(kit_value built "$tmp/kit.txt")), nothing compiled"
  cp "$tmp/kit.txt" "$build/kit.txt" || true  # a record only
  rm -rf "$tmp"
  echo "$version"
}
if [[ -n "$from_kit" ]] && use_kit; then exit 0; fi

rm -f "$build/kit.txt"  # it names a kit's bnn, and this one is compiled
generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
# A configure that fails says why in CMake's own log, which stays in the
# build folder: its end is printed too, so that a log that comes back from
# a machine that keeps nothing has it.
if ! cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DBNN_CUDA_KERNELS="${BNN_CUDA_KERNELS:-AUTO}" -DBNN_DISTRIBUTED="${BNN_DISTRIBUTED:-ON}" \
  ${nvcc:+-DCMAKE_CUDA_COMPILER="$nvcc"} \
  -DCMAKE_PREFIX_PATH="$prefix_paths" -DBNN_BUILD_TESTS="$tests" -DBNN_BUILD_BENCH="$tests" \
  ${nccl_include:+-DBNN_C10D_INCLUDE_DIRS="$nccl_include"} \
  ${debs:+"-DCMAKE_BUILD_RPATH=\$ORIGIN/../deps/usr/lib/x86_64-linux-gnu"}; then
  for cmake_log in "$build/CMakeFiles/CMakeConfigureLog.yaml" "$build/CMakeFiles/CMakeError.log"; do
    if [[ -s "$cmake_log" ]]; then
      echo "build-pip-torch: configuring failed; the last 120 lines of $cmake_log:"
      tail -120 "$cmake_log"
      break
    fi
  done
  exit 1
fi
native=()  # the build tool's own keep-going option: Ninja's -k 0, Make's -k
if [[ $keep_going == 1 ]]; then
  if [[ -f "$build/build.ninja" ]]; then native=(-- -k 0); else native=(-- -k); fi
fi
# The kit: written beside its place and moved there whole.
write_kit() {
  [[ -x "$build/src/bnn" ]] || { echo "build-pip-torch: --save-kit: the build made no bnn" >&2; exit 1; }
  kit_dir="$(mktemp -d)"
  trap 'rm -rf "$kit_dir" "$save_kit.tmp.$$"' EXIT
  cp "$build/src/bnn" "$kit_dir/bnn"
  "$build/src/bnn" version > "$kit_dir/version.txt" 2>&1 || true
  {
    echo "torch=$torch_version"
    echo "sources=$sources"
    # The flags the build folder really has: where it was configured before with others, not the ones
    # this run's environment names (the kit then fits a build with those).
    echo "settings=${settings/"$(build_flags)"/"$(build_flags "$build/CMakeCache.txt")"}"
    echo "commit=${BNN_COMMIT:-$(git -C "$root" rev-parse HEAD 2> /dev/null || echo unknown)}"
    echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } > "$kit_dir/kit.txt"
  mkdir -p "$(dirname "$save_kit")"
  if ! { tar -czf "$save_kit.tmp.$$" -C "$kit_dir" kit.txt bnn version.txt && mv -f "$save_kit.tmp.$$" "$save_kit"; }
  then
    echo "build-pip-torch: --save-kit: could not write $save_kit" >&2
    exit 1
  fi
  echo "build-pip-torch: kit written to $save_kit ($(du -k "$save_kit" | cut -f1) KiB)"
  rm -rf "$kit_dir"
}

# With --save-kit and the tests to build too, bnn and its kit come first: a
# build stopped at a time limit while it compiles the tests (as
# scripts/gpu-check.sh's may be) leaves them. Where bnn fails, the build
# ends there, with --keep-going too (which has then named every error of
# bnn's sources): the tests need bnn's libraries, and a caller against the
# clock (scripts/gpu-check.sh builds again without the parts that may have
# failed) needs the minutes the rest would take.
kit_written=0
if [[ -n "$save_kit" && -z "$target" && $tests == ON ]]; then
  if cmake --build "$build" -j "$jobs" --target bnn "${native[@]}"; then
    echo "build-pip-torch: bnn built in $build; its kit first"
    write_kit
    kit_written=1
  else
    echo "build-pip-torch: bnn did not build (above); the tests and benchmarks are not built either" >&2
    exit 1
  fi
fi
cmake --build "$build" -j "$jobs" ${target:+--target "$target"} "${native[@]}"
echo "build-pip-torch: built in $build"
if [[ -x "$build/src/bnn" ]]; then "$build/src/bnn" version; fi
if [[ -n "$save_kit" && $kit_written == 0 ]]; then write_kit; fi
