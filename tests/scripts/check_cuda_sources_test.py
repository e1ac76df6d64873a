#!/usr/bin/env python3
"""scripts/check-cuda-sources.sh --tree refuses a build folder it cannot check,
or LibTorch headers it does not know, with one line naming it and exit 2,
before it downloads anything.

    python3 tests/scripts/check_cuda_sources_test.py   (ctest: CheckCudaSources.Refusals)
"""
import os
import shutil
import subprocess
import tempfile
import unittest

from script_test_support import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "check-cuda-sources.sh")


class CheckCudaSources(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bnn_check_cuda_sources")
        self.addCleanup(shutil.rmtree, self.dir)
        self.build = os.path.join(self.dir, "build")
        os.makedirs(os.path.join(self.build, "CMakeFiles", "3.25.1"))

    def check(self, *options):
        work = os.path.join(self.dir, "work")
        r = subprocess.run(["bash", SCRIPT, "--tree", self.build, *options, work], capture_output=True, text=True,
                           timeout=60)
        self.assertFalse(os.path.exists(os.path.join(work, "commands.txt")), "it went on past the refusal")
        return r

    def test_a_folder_without_build_ninja_is_refused(self):
        r = self.check()
        self.assertEqual((r.returncode, r.stderr),
                         (2, f"check-cuda-sources: --tree: '{self.build}' is not a Ninja build folder "
                             "(make build makes one)\n"))

    def compiled_with(self, compiler_id):
        open(os.path.join(self.build, "build.ninja"), "w").close()
        with open(os.path.join(self.build, "CMakeFiles", "3.25.1", "CMakeCXXCompiler.cmake"), "w") as f:
            f.write(f'set(CMAKE_CXX_COMPILER_ID "{compiler_id}")\n')

    def test_a_build_not_compiled_with_gcc_is_refused(self):
        self.compiled_with("Clang")
        r = self.check()
        self.assertEqual((r.returncode, r.stderr),
                         (2, f"check-cuda-sources: --tree: '{self.build}' compiles with 'Clang', not GCC\n"))

    def test_a_libtorch_package_it_does_not_know_is_refused(self):
        self.compiled_with("GNU")
        r = self.check("--libtorch", "python3-torch")
        self.assertEqual((r.returncode, r.stderr),
                         (2, "check-cuda-sources: --libtorch: 'python3-torch' is not libtorch-cuda-dev or "
                             "libtorch-dev\n"))

    def test_a_misplaced_option_is_refused(self):
        # --libtorch after the work folder, or without --tree, would be taken
        # for a folder, or ignored.
        self.compiled_with("GNU")
        work = os.path.join(self.dir, "work")
        for args in (["--tree", self.build, work, "--libtorch", "libtorch-dev"], ["--libtorch", "libtorch-dev"]):
            r = subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, args)
            self.assertRegex(r.stderr, r"^check-cuda-sources: '.*': expected at most a work folder here \(usage: ")
            self.assertFalse(os.path.exists(work))


if __name__ == "__main__":
    unittest.main()
