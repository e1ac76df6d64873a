#!/usr/bin/env python3
"""The compile commands of scripts/check-cuda-sources.sh --tree: a GCC Ninja
build's own commands (`ninja -t commands`), rewritten to compile each C++
source syntax-only against the headers of a CUDA LibTorch 2.x, as a build
against a CUDA pip wheel compiles it.

    cuda_source_commands.py WORK CUDA_INCLUDE PACKAGE VERSION

reads WORK/commands.txt and writes WORK/pch.sh (the precompiled header's
command) and WORK/sources.txt (a command per source). PACKAGE's headers are
unpacked in WORK/PACKAGE/usr/include; WORK/shim holds the headers a CPU
LibTorch lacks. VERSION is the package's Debian version.
"""
import os
import re
import shlex
import sys


def wants_cxx20(version):
    """cmake/cxx_standard.cmake builds as C++20 from LibTorch 2.14. The
    version is Debian's, so an epoch ("1:") may come first."""
    match = re.search(r"(\d+)\.(\d+)", version)
    if match is None:
        raise ValueError(f"'{version}' is not a LibTorch version")
    return (int(match.group(1)), int(match.group(2))) >= (2, 14)


def rewrite(args, work, package, cuda_include, cxx20):
    """One compile command of the build (its words), rewritten; returns
    (words, is_the_precompiled_header). The source itself is left to the
    caller, which adds -fsyntax-only and it (or the header's output)."""
    torch = os.path.join(work, package, "usr", "include")
    header = "-x" in args
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a == "-isystem" and args[i + 1].endswith("/torch/csrc/api/include"):
            # The build's LibTorch: both its include folders name this one.
            out += ["-isystem", torch, "-isystem", os.path.join(torch, "torch/csrc/api/include"),
                    "-isystem", os.path.join(work, "shim"), "-isystem", cuda_include]
            i += 2
        elif a == "-isystem" and args[i + 1] in ("/usr/include", "/usr/local/include"):
            i += 2   # the compiler's own: named, it would come before libstdc++'s
        elif cxx20 and re.fullmatch(r"-std=(gnu|c)\+\+17", a):
            out.append(a.replace("17", "20"))
            i += 1
        elif a == "-include" and args[i + 1].endswith("cmake_pch.hxx"):
            out += [] if header else ["-include", os.path.join(work, "pch.h")]
            i += 2
        elif a in ("-MT", "-MF", "-o", "-c", "-x"):
            i += 2
        elif a == "-MD":
            i += 1
        else:
            out.append(a)
            i += 1
    # -H lists every header read, so that one of the build's own LibTorch
    # (still on the compiler's default path) would be seen.
    out += ["-DBNN_HAVE_C10_CUDA=1", "-DBNN_CUDA_KERNELS=1", "-H"]
    if "-DBNN_HAVE_C10D" in out:   # a wheel's c10d has NCCL
        out += ["-DBNN_HAVE_C10D_NCCL", "-DUSE_C10D_NCCL"]
    return out, header


def commands(lines, work, package, cuda_include, version):
    """(the precompiled header's command, [a command per source]) from the
    lines of `ninja -t commands`; lines that compile no C++ are skipped."""
    cxx20 = wants_cxx20(version)
    pch, sources = None, []
    for line in lines:
        args = shlex.split(line)
        if not args or not args[0].endswith(("c++", "g++", "clang++")) or "-c" not in args:
            continue
        source = args[args.index("-c") + 1]
        out, header = rewrite(args, work, package, cuda_include, cxx20)
        if header:
            pch = out + ["-x", "c++-header", os.path.join(work, "pch.h"), "-o", os.path.join(work, "pch.h.gch")]
        else:
            sources.append(out + ["-fsyntax-only", source])
    if pch is None:
        raise ValueError("the build folder compiles no precompiled header")
    return pch, sources


def main(argv):
    if len(argv) != 4:
        sys.exit("usage: cuda_source_commands.py WORK CUDA_INCLUDE PACKAGE VERSION")
    work, cuda_include, package, version = argv
    with open(os.path.join(work, "commands.txt")) as f:
        try:
            pch, sources = commands(f, work, package, cuda_include, version)
        except ValueError as e:
            sys.exit(f"check-cuda-sources: {e}")
    with open(os.path.join(work, "pch.sh"), "w") as f:
        f.write(shlex.join(pch) + "\n")
    with open(os.path.join(work, "sources.txt"), "w") as f:
        f.write("".join(shlex.join(s) + "\n" for s in sources))


if __name__ == "__main__":
    main(sys.argv[1:])
