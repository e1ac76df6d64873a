#!/usr/bin/env python3
"""scripts/cuda_source_commands.py, the rewrite behind
scripts/check-cuda-sources.sh --tree, on compile commands of the shape a GCC
Ninja build of bnn writes (taken from `ninja -t commands`, paths shortened):
each word of the result, and the files it writes.

    python3 tests/scripts/cuda_source_commands_test.py   (ctest: CheckCudaSources.CommandRewrite)
"""
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

from script_test_support import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "cuda_source_commands.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import cuda_source_commands as rw  # noqa: E402

DEFINES = "/usr/bin/c++ -DFMT_SHARED -DSPDLOG_FMT_EXTERNAL -DUSE_C10D_GLOO -DUSE_DISTRIBUTED"
FLAGS = "-O3 -DNDEBUG -Wall -fopenmp -D_GLIBCXX_USE_CXX11_ABI=1 -std=c++17 -Winvalid-pch"
PCH = ("-x c++-header -include /b/CMakeFiles/bnn_pch.dir/cmake_pch.hxx -MD -MT CMakeFiles/bnn_pch.dir/cmake_pch.hxx.gch "
       "-MF CMakeFiles/bnn_pch.dir/cmake_pch.hxx.gch.d -o CMakeFiles/bnn_pch.dir/cmake_pch.hxx.gch "
       "-c /b/CMakeFiles/bnn_pch.dir/cmake_pch.hxx.cxx")
PCH_LINE = f"{DEFINES} -I/s -isystem /usr/include/torch/csrc/api/include {FLAGS} {PCH}"
# process_group.cpp: c10d, and /usr/include named as a system folder (Gloo's).
SOURCE_LINE = (f"{DEFINES} -DBNN_HAVE_C10D -DBNN_HAVE_C10D_GLOO -isystem /usr/include -I/s "
               f"-isystem /usr/include/torch/csrc/api/include {FLAGS} -include /b/CMakeFiles/bnn_pch.dir/cmake_pch.hxx "
               "-MD -MT src/pg.o -MF src/pg.o.d -o src/pg.o -c /s/src/distributed/process_group.cpp")
KERNEL_LINE = ("/usr/bin/c++ -I/s -O3 -std=c++17 -fno-math-errno -ffp-contract=off -MD -MT k.o -MF k.o.d -o k.o "
               "-c /s/samplers/normal_kernel.cpp")
OTHER_LINES = [": && /usr/bin/cmake -E rm -f libbnn_pch.a && /usr/bin/ar qc libbnn_pch.a pch.cpp.o && :",
               "/usr/local/cuda/bin/nvcc -c /s/samplers/buffered_passes.cu -o b.o", ""]

W, P, CUDA = "/w", "libtorch-dev", "/usr/local/cuda/include"
TORCH_INCLUDES = ["-isystem", "/w/libtorch-dev/usr/include", "-isystem", "/w/libtorch-dev/usr/include/torch/csrc/api/include",
                  "-isystem", "/w/shim", "-isystem", CUDA]
CUDA_DEFINES = ["-DBNN_HAVE_C10_CUDA=1", "-DBNN_CUDA_KERNELS=1", "-H"]
DEFINE_WORDS = DEFINES.split()
FLAG_WORDS = FLAGS.split()


class CommandRewrite(unittest.TestCase):
    def test_cxx20_from_libtorch_2_14_whatever_the_debian_version_around_it(self):
        for version, expected in [("2.6.0+dfsg-7+b1", False), ("2.9.1", False), ("2.10.0", False),
                                  ("2.13.0~rc1", False), ("2.14.1+dfsg-1", True), ("2.20.0", True), ("3.0.0", True),
                                  ("1:2.14.1+dfsg-1", True), ("3:2.6.0", False)]:
            self.assertEqual(rw.wants_cxx20(version), expected, version)
        with self.assertRaisesRegex(ValueError, "'unknown' is not a LibTorch version"):
            rw.wants_cxx20("unknown")

    def test_a_source_compiles_against_the_cuda_libtorch_syntax_only(self):
        pch, sources = rw.commands([PCH_LINE, SOURCE_LINE], W, P, CUDA, "2.6.0+dfsg-7+b1")
        self.assertEqual(len(sources), 1)
        self.assertEqual(sources[0], DEFINE_WORDS + ["-DBNN_HAVE_C10D", "-DBNN_HAVE_C10D_GLOO", "-I/s"] + TORCH_INCLUDES
                         + FLAG_WORDS + ["-include", "/w/pch.h"] + CUDA_DEFINES
                         + ["-DBNN_HAVE_C10D_NCCL", "-DUSE_C10D_NCCL", "-fsyntax-only", "/s/src/distributed/process_group.cpp"])
        # The precompiled header: made from /w/pch.h, not the build's, and no NCCL (it has no c10d).
        self.assertEqual(pch, DEFINE_WORDS + ["-I/s"] + TORCH_INCLUDES + FLAG_WORDS + CUDA_DEFINES
                         + ["-x", "c++-header", "/w/pch.h", "-o", "/w/pch.h.gch"])

    def test_against_2_14_every_command_is_cxx20_and_the_rest_is_the_same(self):
        pch6, sources6 = rw.commands([PCH_LINE, SOURCE_LINE, KERNEL_LINE], W, P, CUDA, "2.6.0")
        pch14, sources14 = rw.commands([PCH_LINE, SOURCE_LINE, KERNEL_LINE], W, P, CUDA, "2.14.1")
        self.assertEqual([c.count("-std=c++17") for c in [pch6] + sources6], [1, 1, 1])
        self.assertEqual([c.count("-std=c++20") for c in [pch14] + sources14], [1, 1, 1])
        swap = [[w.replace("-std=c++17", "-std=c++20") for w in c] for c in [pch6] + sources6]
        self.assertEqual(swap, [pch14] + sources14)
        gnu = rw.commands([PCH_LINE.replace("-std=c++17", "-std=gnu++17")], W, P, CUDA, "2.14.1")[0]
        self.assertIn("-std=gnu++20", gnu)

    def test_a_source_without_libtorch_keeps_its_own_flags(self):
        # The kernels' files include no LibTorch and take no precompiled header.
        _, sources = rw.commands([PCH_LINE, KERNEL_LINE], W, P, CUDA, "2.6.0")
        self.assertEqual(sources, [["/usr/bin/c++", "-I/s", "-O3", "-std=c++17", "-fno-math-errno", "-ffp-contract=off"]
                                   + CUDA_DEFINES + ["-fsyntax-only", "/s/samplers/normal_kernel.cpp"]])

    def test_lines_that_compile_no_cpp_are_skipped_and_a_build_without_a_pch_is_refused(self):
        _, sources = rw.commands(OTHER_LINES + [PCH_LINE] + OTHER_LINES, W, P, CUDA, "2.6.0")
        self.assertEqual(sources, [])
        with self.assertRaisesRegex(ValueError, "compiles no precompiled header"):
            rw.commands([SOURCE_LINE] + OTHER_LINES, W, P, CUDA, "2.6.0")

    def test_the_files_it_writes_are_the_commands_shell_quoted(self):
        work = tempfile.mkdtemp(prefix="bnn_cuda_source_commands")
        self.addCleanup(shutil.rmtree, work)
        with open(os.path.join(work, "commands.txt"), "w") as f:
            f.write("\n".join([PCH_LINE, SOURCE_LINE.replace("-I/s ", "-I'/s p' "), KERNEL_LINE] + OTHER_LINES))
        r = subprocess.run([sys.executable, SCRIPT, work, CUDA, P, "2.14.1"], capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        with open(os.path.join(work, "sources.txt")) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 2)
        self.assertIn("-I/s p", shlex.split(lines[0]))
        self.assertEqual(shlex.split(lines[1])[-1], "/s/samplers/normal_kernel.cpp")
        with open(os.path.join(work, "pch.sh")) as f:
            self.assertEqual(shlex.split(f.read())[-3:], [os.path.join(work, "pch.h"), "-o", os.path.join(work, "pch.h.gch")])
        # No precompiled header: one line naming it, exit 1.
        with open(os.path.join(work, "commands.txt"), "w") as f:
            f.write(KERNEL_LINE + "\n")
        r = subprocess.run([sys.executable, SCRIPT, work, CUDA, P, "2.14.1"], capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stderr), (1, "check-cuda-sources: the build folder compiles no precompiled header\n"))


if __name__ == "__main__":
    unittest.main()
