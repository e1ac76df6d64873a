#!/usr/bin/env python3
"""scripts/gpu-check.sh --verdict on logs written here, with known answers.

The verdict decides whether a GPU session's check passed, so it must not pass
a run whose GPU tests skipped, failed or never ran, nor one whose benchmark
or ctest failed.

    python3 tests/scripts/gpu_check_verdict_test.py   (ctest: GpuCheckVerdict.Script)
"""
import os
import shutil
import subprocess
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "gpu-check.sh")


def test_line(number, name, result):
    # ctest's line for one test, as in ctest.log.
    dots = "." * max(3, 60 - len(name))
    mark = f"   {result}" if result == "Passed" else f"***{result}"
    return f"{number}/400 Test #{number}: {name} {dots}{mark}    0.45 sec"


PASSED = [test_line(1, "CudaSamplers.StationaryMomentsOnTheGpu", "Passed"),
          test_line(2, "CudaSync.AdamStepsDoNotWaitForTheGpu", "Passed"),
          test_line(3, "CudaRun.TinyRunOnTheGpuScoresAsOnTheCpu", "Passed"),
          # Not GPU tests: CMake option checks and the link-order probe.
          test_line(4, "CudaKernelsOption.BadValueIsNamed", "Passed"),
          test_line(5, "LinkOrder.LibstdcxxComesFirst", "Passed")]


class GpuCheckVerdict(unittest.TestCase):
    def verdict(self, exits, ctest_lines):
        out = tempfile.mkdtemp(prefix="bnn_gpu_check_verdict")
        self.addCleanup(shutil.rmtree, out)
        with open(os.path.join(out, "summary.txt"), "w") as f:
            # gpus=N as gpu-check writes it; the others are steps' exit codes.
            f.write("".join(f"{key}={value}\n" if key == "gpus" else f"{key}_exit={value}\n"
                            for key, value in exits.items()))
        if ctest_lines is not None:
            with open(os.path.join(out, "ctest.log"), "w") as f:
                f.write("\n".join(["Test project /build"] + ctest_lines + ["", "100% tests passed"]) + "\n")
        r = subprocess.run(["bash", SCRIPT, "--verdict", out], capture_output=True, text=True)
        with open(os.path.join(out, "summary.txt")) as f:
            summary = f.read()
        return r, summary

    def test_all_ran_and_passed(self):
        r, summary = self.verdict({"build": 0, "gpu_tests": 0, "bench": 0, "ctest": 0}, PASSED)
        self.assertEqual((r.returncode, r.stdout), (0, "gpu-check: GPU tests: 3 of 3 passed\ngpu-check: PASS\n"))
        self.assertTrue(summary.endswith("gpu-check: GPU tests: 3 of 3 passed\ngpu-check: PASS\n"))

    def test_skipped_and_failed_gpu_tests_are_named(self):
        lines = PASSED[:1] + [test_line(6, "CudaSync.SamplingStepsDoNotWaitForTheGpu", "Skipped"),
                              test_line(7, "CudaRun.DevicesAllSpreadsMembersOverTheGpus", "Failed"),
                              test_line(8, "CudaRun.MembersTrainedTogetherOnOneGpuAgreeWithOneByOne", "Timeout")]
        r, _ = self.verdict({"build": 0, "gpu_tests": 8, "bench": 0, "ctest": 0}, lines)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout.splitlines(), [
            "gpu-check: GPU tests: 1 of 4 passed",
            "gpu-check: FAIL: gpu_tests exited 8; GPU test CudaSync.SamplingStepsDoNotWaitForTheGpu: Skipped; "
            "GPU test CudaRun.DevicesAllSpreadsMembersOverTheGpus: Failed; "
            "GPU test CudaRun.MembersTrainedTogetherOnOneGpuAgreeWithOneByOne: Timeout"])

    def test_the_multi_gpu_test_may_skip_on_one_gpu_only(self):
        lines = PASSED + [test_line(9, "CudaRun.DevicesAllSpreadsMembersOverTheGpus", "Skipped")]
        r, _ = self.verdict({"build": 0, "gpu_tests": 0, "bench": 0, "ctest": 0, "gpus": 1}, lines)
        self.assertEqual((r.returncode, r.stdout),
                         (0, "gpu-check: GPU tests: 3 of 4 passed, 1 skipped as they need 2 GPUs (1 here)\n"
                             "gpu-check: PASS\n"))
        r, _ = self.verdict({"build": 0, "gpu_tests": 0, "bench": 0, "ctest": 0, "gpus": 2}, lines)
        self.assertEqual((r.returncode, r.stdout.splitlines()[-1]),
                         (1, "gpu-check: FAIL: GPU test CudaRun.DevicesAllSpreadsMembersOverTheGpus: Skipped"))
        # Only that test is excused.
        lines = PASSED + [test_line(9, "CudaRun.TinyRunOnTheGpuScoresAsOnTheCpu", "Not Run")]
        r, _ = self.verdict({"build": 0, "gpu_tests": 8, "bench": 0, "ctest": 0, "gpus": 1}, lines)
        self.assertEqual((r.returncode, r.stdout.splitlines()[-1]),
                         (1, "gpu-check: FAIL: gpu_tests exited 8; "
                             "GPU test CudaRun.TinyRunOnTheGpuScoresAsOnTheCpu: Not Run"))

    def test_no_gpu_test_in_the_log_fails(self):
        # The GPU tests' ctest stopped at its limit before any finished, say.
        r, _ = self.verdict({"build": 0, "gpu_tests": 124, "bench": 0, "ctest": 0}, PASSED[3:])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout.splitlines()[-1],
                         "gpu-check: FAIL: gpu_tests ran out of time (exit 124); no GPU test in ctest.log")

    def test_steps_that_failed_or_did_not_run(self):
        r, _ = self.verdict({"build": 0, "gpu_tests": 0, "bench": 134, "ctest": 0}, PASSED)
        self.assertEqual((r.returncode, r.stdout.splitlines()[-1]), (1, "gpu-check: FAIL: bench exited 134"))
        # The GPU tests passed but another test failed, or the rest of ctest was stopped.
        r, _ = self.verdict({"build": 0, "gpu_tests": 0, "bench": 0, "ctest": 8}, PASSED)
        self.assertEqual((r.returncode, r.stdout.splitlines()[-1]), (1, "gpu-check: FAIL: ctest exited 8"))
        r, _ = self.verdict({"build": 0, "gpu_tests": 0, "bench": 0, "ctest": 137}, PASSED)
        self.assertEqual((r.returncode, r.stdout.splitlines()[-1]),
                         (1, "gpu-check: FAIL: ctest was killed (exit 137)"))
        r, _ = self.verdict({"build": 2}, None)
        self.assertEqual((r.returncode, r.stdout.splitlines()[-1]),
                         (1, "gpu-check: FAIL: build exited 2; gpu_tests did not run; bench did not run; "
                             "ctest did not run; no GPU test in ctest.log"))

    def test_a_folder_is_needed(self):
        r = subprocess.run(["bash", SCRIPT, "--verdict", "/nonexistent/logs"], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stderr),
                         (2, "usage: scripts/gpu-check.sh --verdict OUT_DIR (a folder of gpu-check's logs)\n"))


if __name__ == "__main__":
    unittest.main()
