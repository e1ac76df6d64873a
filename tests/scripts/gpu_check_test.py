#!/usr/bin/env python3
"""scripts/gpu-check.sh end to end with stand-ins for the GPU machine's tools.

A GPU session has a few minutes of device time, so the script must run its
steps in order of worth, keep the required ones their time, stop a slow step
at its limit and end by its deadline with the eight files that come back.
Stand-ins on PATH play python3's torch (a CMake prefix), cmake (a "build"
that writes stand-in programs), ctest, nvidia-smi and the built programs,
each logging how it was called and sleeping as long as a test asks.

    python3 tests/scripts/gpu_check_test.py   (ctest: GpuCheckScript.WithStandIns)
"""
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

from script_test_support import ROOT, run_in_own_group, write_executable

SCRIPT = os.path.join(ROOT, "scripts", "gpu-check.sh")

GPU_TESTS = ["CudaSamplers.StationaryMomentsOnTheGpu", "CudaSync.SamplingStepsDoNotWaitForTheGpu",
             "CudaRun.TinyRunOnTheGpuScoresAsOnTheCpu"]
OTHER_TESTS = ["Resume.KilledInTheMiddleOfSamplingResumesBitIdentically", "LinkOrder.LibstdcxxComesFirst"]


def ctest_lines(names):
    return "\n".join(f"{i}/{len(names)} Test #{i}: {name} {'.' * (60 - len(name))}   Passed    0.20 sec"
                     for i, name in enumerate(names, 1))


# Each stand-in appends "name args" to $FAKE_CALLS and sleeps $FAKE_<NAME>_SECONDS.
STAND_INS = {
    "python3": f"""
case "$*" in
  *cmake_prefix_path*) echo "$FAKE_ROOT/site-packages/torch/share/cmake"; exit 0 ;;
  *torch*) echo "2.11.0 13.0"; exit 0 ;;
esac
exec {sys.executable} "$@"
""",
    "cmake": """
echo "cmake $*" >> "$FAKE_CALLS"
if [[ -n "${FAKE_KERNELS_CONFIGURE_FAILS:-}" && "$*" == *-DBNN_CUDA_KERNELS=ON* ]]; then
  mkdir -p "$4/CMakeFiles"
  echo "nvcc fatal : Unsupported gpu architecture 'compute_50'" > "$4/CMakeFiles/CMakeConfigureLog.yaml"
  echo "CMake Error at cmake/cuda_kernels.cmake:37 (enable_language): ..."
  echo "-- Configuring incomplete, errors occurred!"
  exit 1
fi
if [[ "$1" == -S ]]; then
  # A Ninja build folder (a Make one with FAKE_GENERATOR=make), configured with these options.
  mkdir -p "$4" && echo "$*" > "$4/configured_with"
  if [[ "${FAKE_GENERATOR:-ninja}" == make ]]; then touch "$4/Makefile"; else touch "$4/build.ninja"; fi
fi
if [[ "$1" == --build ]]; then
  # FAKE_COMPILE_FAILS: "always", or "distributed" where torch.distributed is on.
  if [[ "${FAKE_COMPILE_FAILS:-}" == always ]] ||
     [[ "${FAKE_COMPILE_FAILS:-}" == distributed && "$(cat "$2/configured_with")" == *-DBNN_DISTRIBUTED=ON* ]]; then
    echo "src/distributed/process_group.cpp:1: error: ..."
    exit 1
  fi
  # FAKE_BUILD_SECONDS before bnn is built, FAKE_TESTS_BUILD_SECONDS after (for the rest).
  sleep "${FAKE_BUILD_SECONDS:-0}"
  mkdir -p "$2/src" "$2/bench"
  cp "$FAKE_ROOT/programs/bnn" "$2/src/bnn"
  # The reduced build's bnn says so, for the kit's test.
  if [[ "$(cat "$2/configured_with")" == *-DBNN_CUDA_KERNELS=OFF* ]]; then echo "# reduced" >> "$2/src/bnn"; fi
  [[ "$*" != *"--target bnn"* ]] || exit 0
  sleep "${FAKE_TESTS_BUILD_SECONDS:-0}"
  # FAKE_TESTS_COMPILE_FAILS: bnn builds, a test's source does not.
  [[ -z "${FAKE_TESTS_COMPILE_FAILS:-}" ]] || { echo "tests/src/some_test.cpp:1: error: ..."; exit 1; }
  mkdir -p "$2/tests"
  cp "$FAKE_ROOT/programs/bench" "$2/tests/bnn_tests"
  cp "$FAKE_ROOT/programs/bench" "$2/bench/bnn_bench_sampling"
  cp "$FAKE_ROOT/programs/bench" "$2/bench/bnn_bench_members"
fi
""",
    "ctest": f"""
echo "ctest $* in $PWD" >> "$FAKE_CALLS"
echo "Test project $PWD"
if [[ "$*" == *" -R "* ]]; then
  cat << 'EOF'
{ctest_lines(GPU_TESTS)}
EOF
  sleep "${{FAKE_GPU_TESTS_SECONDS:-0}}"
else
  cat << 'EOF'
{ctest_lines(OTHER_TESTS)}
EOF
  # A test that shrugs off SIGTERM and has started a process of its own.
  if [[ -n "${{FAKE_CTEST_IGNORES_TERM:-}}" ]]; then trap '' TERM; sleep "$FAKE_CTEST_IGNORES_TERM" & wait; fi
  sleep "${{FAKE_CTEST_SECONDS:-0}}"
fi
echo "100% tests passed, 0 tests failed"
""",
    "nvidia-smi": """
case "$*" in
  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)" ;;
  *-lms*) while true; do echo 1500; sleep 0.2; done ;;
  *memory.used*) echo 500 ;;
  *compute_cap*) echo "9.0" ;;
  *) echo "name, memory.total [MiB], driver_version"; echo "NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04" ;;
esac
""",
}
PROGRAMS = {
    # bnn: `version` answers; a run (members_per_device.sh) cannot train here.
    "bnn": """
echo "bnn $*" >> "$FAKE_CALLS"
if [[ "$1" == version ]]; then echo "bnn 0.1.0; std::filesystem from: /lib/x86_64-linux-gnu/libstdc++.so.6"; exit 0; fi
echo "bnn: the stand-in does not train" >&2
exit 3
""",
    "bench": """
echo "$(basename "$0") $*" >> "$FAKE_CALLS"
sleep "${FAKE_BENCH_SECONDS:-0}"
echo "sms_ubu ratio 1.04"
""",
}


class GpuCheckScript(unittest.TestCase):
    def setUp(self):
        fake = tempfile.mkdtemp(prefix="bnn_gpu_check")
        self.addCleanup(shutil.rmtree, fake)
        for folder in ("bin", "programs", "site-packages/torch/share/cmake"):
            os.makedirs(os.path.join(fake, folder))
        for name, body in STAND_INS.items():
            write_executable(os.path.join(fake, "bin", name), "#!/usr/bin/env bash\n" + body.lstrip())
        for name, body in PROGRAMS.items():
            write_executable(os.path.join(fake, "programs", name), "#!/usr/bin/env bash\n" + body.lstrip())
        self.fake = fake
        self.out = os.path.join(fake, "out")
        self.calls = os.path.join(fake, "calls.txt")
        self.build = os.path.join(fake, "build")

    def run_check(self, **env):
        # The script's settings come from the test alone, not from the
        # environment ctest runs in (gpu-check.sh's own, on a GPU machine).
        base = {k: v for k, v in os.environ.items() if not k.startswith(("BNN_", "FAKE_"))}
        full_env = dict(base, PATH=os.path.join(self.fake, "bin") + ":" + os.environ["PATH"], FAKE_ROOT=self.fake,
                        FAKE_CALLS=self.calls, BNN_GPU_BUILD_DIR=self.build, **env)
        if os.path.exists(self.calls):
            os.remove(self.calls)
        start = time.monotonic()
        r = run_in_own_group(["bash", SCRIPT, self.out], full_env, timeout=120)
        self.seconds = time.monotonic() - start
        with open(os.path.join(self.out, "summary.txt")) as f:
            self.summary = f.read()
        with open(self.calls) as f:
            self.call_lines = f.read().splitlines()
        return r

    def read(self, name):
        with open(os.path.join(self.out, name)) as f:
            return f.read()

    def read_program(self, name):
        with open(os.path.join(self.fake, "programs", name), "rb") as f:
            return f.read()

    def kit_bnn(self):
        with tarfile.open(os.path.join(self.out, "bnn-kit.tar.gz")) as kit:
            return kit.extractfile("bnn").read()

    def gpu_test_lines(self):
        # The GPU tests' result lines in summary.txt, up to their names.
        return [line.split(" ..")[0] for line in self.summary.splitlines() if " Test #" in line]

    def steps(self):
        # The steps in summary.txt in the order they ran, with their exit codes.
        return [line.split("=") for line in self.summary.splitlines() if "_exit=" in line]

    def test_steps_run_in_order_of_worth_into_eight_files(self):
        r = self.run_check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.splitlines()[-2:], ["gpu-check: GPU tests: 3 of 3 passed", "gpu-check: PASS"])
        self.assertTrue(self.summary.startswith(
            "gpu-check: ends within 540 s; each required step still to come is promised 60 s\n"))
        self.assertEqual(self.steps(), [["build_exit", "0"], ["gpu_tests_exit", "0"], ["bench_exit", "0"],
                                        ["ctest_exit", "0"], ["members_table_exit", "1"], ["members_exit", "0"],
                                        ["members_channels_last_exit", "0"]])
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["bench_members.txt", "bench_sampling.txt", "bnn-kit.tar.gz", "build.log", "ctest.log",
                          "members_per_device.csv", "summary.txt", "version.txt"])
        # The kit holds the bnn this check built, for later sessions to carry.
        self.assertEqual(self.kit_bnn(), self.read_program("bnn"))
        # The GPU tests first and alone, then the rest without them, both in the build folder.
        ctests = [line for line in self.call_lines if line.startswith("ctest ")]
        gpu_regex = r"^Cuda(Samplers|Sync|Run)\."
        self.assertEqual(len(ctests), 2)
        # nproc's count (which OMP_NUM_THREADS also sets), at most 16.
        cpus = int(subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout)
        jobs = f"-j{min(cpus, 16)} --output-on-failure"
        self.assertEqual(ctests, [f"ctest {jobs} -R {gpu_regex} in {self.build}",
                                  f"ctest {jobs} -E {gpu_regex} in {self.build}"])
        self.assertIn("bnn_bench_sampling --device cuda --repeats 3", self.call_lines)
        self.assertIn("-DBNN_CUDA_KERNELS=ON", next(line for line in self.call_lines if " -S " in line))
        # The build's jobs are at most ctest's (a sandbox's nproc may count the host's CPUs), within
        # build-pip-torch.sh's own caps, and torch's config gets the GPUs' architectures from nvidia-smi.
        for line in self.call_lines:
            if line.startswith("cmake --build"):
                jobs = int(re.search(r" -j (\d+) ", line).group(1))
                self.assertTrue(1 <= jobs <= min(cpus, 16), line)
        self.assertIn("build-pip-torch: TORCH_CUDA_ARCH_LIST=9.0 (this machine's GPUs, from nvidia-smi)",
                      self.read("build.log"))
        version = self.read("version.txt")
        self.assertIn("NVIDIA H100 80GB HBM3, 81559 MiB", version)
        self.assertRegex(version, rf"\nnproc {cpus}; cgroup cpu.max .+; kernel .+\n")
        self.assertIn("std::filesystem from: /lib/x86_64-linux-gnu/libstdc++.so.6", version)
        self.assertEqual(self.gpu_test_lines(), [f"{i}/3 Test #{i}: {name}" for i, name in enumerate(GPU_TESTS, 1)])
        # The member table's rows (each K a run the stand-in could not train)
        # are a measurement: its exit code does not fail the check.
        rows = self.read("members_per_device.csv").splitlines()
        self.assertEqual([row.split(",")[:3] for row in rows[1:]],
                         [["streams", k, "3"] for k in ("1", "2", "4", "8", "16")])
        self.assertEqual([line for line in self.call_lines if line.startswith("bnn_bench_members")],
                         ["bnn_bench_members --device cuda --cudnn-benchmark",
                          "bnn_bench_members --device cuda --cudnn-benchmark --channels-last --models fmnist_cnn"])

        # Again into the same folder, without the table: nothing of the first
        # check is left to be read as this one's.
        r = self.run_check(BNN_GPU_MEMBERS="")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(self.gpu_test_lines()), 3)
        self.assertEqual(self.read("ctest.log").count("100% tests passed"), 2)
        self.assertFalse(os.path.exists(os.path.join(self.out, "members_per_device.csv")))
        self.assertNotIn("members_table", self.summary)

    def test_a_slow_step_stops_at_the_deadline_and_later_steps_say_they_did_not_run(self):
        # 16 s, 4 promised to each required step: the stand-in build, which
        # takes a moment, has 4 s even on a machine busy with other work.
        r = self.run_check(BNN_GPU_DEADLINE="16", BNN_GPU_STEP_MINIMUM="4", FAKE_CTEST_SECONDS="600")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertLess(self.seconds, 16 + 2)
        self.assertEqual(r.stdout.splitlines()[-1], "gpu-check: FAIL: ctest ran out of time (exit 124)")
        self.assertEqual(self.steps(), [["build_exit", "0"], ["gpu_tests_exit", "0"], ["bench_exit", "0"],
                                        ["ctest_exit", "124"]])
        limit = re.search(r"gpu-check: ctest exit 124, \d+ s \(stopped at its limit of (\d+) s\)", self.summary)
        self.assertTrue(limit and 4 <= int(limit.group(1)) <= 16, self.summary)
        for step in ("members_table", "members", "members_channels_last"):
            self.assertRegex(self.summary, f"gpu-check: {step} not run: -?\\d+ s left for it\n")
        self.assertFalse(any(line.startswith("bnn_bench_members") for line in self.call_lines))
        # What ran before the deadline is kept.
        log = self.read("ctest.log")
        self.assertIn(GPU_TESTS[0], log)
        self.assertIn(OTHER_TESTS[0], log)

    def test_the_build_leaves_the_required_steps_their_minimum(self):
        # 10 s in all, 2 s promised to each of the three required steps after
        # the build: the build is stopped after 4 s (3 where a second turns
        # between the script's start and the build's) and the verdict says why.
        r = self.run_check(BNN_GPU_DEADLINE="10", BNN_GPU_STEP_MINIMUM="2", FAKE_BUILD_SECONDS="600")
        self.assertEqual(r.returncode, 1)
        self.assertRegex(self.summary, r"gpu-check: build exit 124, [345] s \(stopped at its limit of [34] s\)")
        # Stopped at its limit, it leaves no time to build again.
        self.assertNotIn("building again", self.summary)
        self.assertEqual(self.steps(), [["build_exit", "124"]])
        self.assertEqual(r.stdout.splitlines()[-1],
                         "gpu-check: FAIL: build ran out of time (exit 124); gpu_tests did not run; "
                         "bench did not run; ctest did not run; no GPU test in ctest.log")
        self.assertLess(self.seconds, 10)

    def test_a_build_stopped_after_it_built_bnn_leaves_bnn_and_its_kit_to_the_measurements(self):
        # bnn and its kit come first; the tests' build is stopped at its
        # limit: the tests (not built) do not run, the member table does.
        r = self.run_check(BNN_GPU_DEADLINE="30", BNN_GPU_STEP_MINIMUM="5", FAKE_TESTS_BUILD_SECONDS="600",
                           BNN_GPU_MEMBERS="1", BNN_MEMBERS_TABLE_TIMEOUT="5")
        self.assertEqual(r.returncode, 1)
        self.assertRegex(self.summary, r"gpu-check: build exit 124, \d+ s \(stopped at its limit of \d+ s\)\n"
                                       r"gpu-check: the build was stopped after it built bnn and its kit: the steps "
                                       r"below run on that bnn\n")
        for line in ("gpu_tests not run: bnn_tests was not built", "bench not run: bnn_bench_sampling was not built",
                     "ctest not run: bnn_tests was not built", "members not run: bnn_bench_members was not built"):
            self.assertIn(f"gpu-check: {line}\n", self.summary)
        self.assertEqual([step for step, _ in self.steps()], ["build_exit", "members_table_exit"])
        self.assertEqual(self.kit_bnn(), self.read_program("bnn"))
        self.assertEqual(r.stdout.splitlines()[-1], "gpu-check: FAIL: build ran out of time (exit 124); gpu_tests did "
                                                    "not run; bench did not run; ctest did not run; no GPU test in "
                                                    "ctest.log")

    def test_a_build_that_fails_after_it_built_bnn_goes_on_with_that_bnn(self):
        # The kit has bnn with its kernels: no build without them, whose bnn
        # would replace it; the tests that were not built do not run.
        r = self.run_check(FAKE_TESTS_COMPILE_FAILS="1", BNN_GPU_MEMBERS="")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(self.configures()), 1)
        self.assertIn("gpu-check: building failed after bnn and its kit were built (build.log): the steps below run "
                      "on what was built\n", self.summary)
        self.assertEqual([step for step, _ in self.steps()], ["build_exit"])
        self.assertEqual(self.kit_bnn(), self.read_program("bnn"))
        self.assertIn("tests/src/some_test.cpp:1: error", self.read("build.log"))
        self.assertTrue(r.stdout.splitlines()[-1].startswith("gpu-check: FAIL: build exited 1; gpu_tests did not run"),
                        r.stdout)

    def test_a_bound_of_its_own_stops_a_step_and_the_others_go_on(self):
        r = self.run_check(BNN_BENCH_TIMEOUT="2", BNN_MEMBERS_TIMEOUT="1", FAKE_BENCH_SECONDS="600",
                           BNN_GPU_MEMBERS="")
        self.assertEqual(r.returncode, 1)
        self.assertRegex(self.summary, r"gpu-check: bench exit 124, [23] s \(stopped at its limit of 2 s\)")
        # bnn_bench_members is a measurement: stopped at its bound, outside the verdict.
        self.assertEqual(r.stdout.splitlines()[-1], "gpu-check: FAIL: bench ran out of time (exit 124)")
        self.assertEqual(self.steps(), [["build_exit", "0"], ["gpu_tests_exit", "0"], ["bench_exit", "124"],
                                        ["ctest_exit", "0"], ["members_exit", "124"],
                                        ["members_channels_last_exit", "124"]])
        # No member counts: no member table.
        self.assertFalse(os.path.exists(os.path.join(self.out, "members_per_device.csv")))


    def test_slow_gpu_tests_leave_the_later_required_steps_their_minimum(self):
        # 16 s in all and 4 promised to each of the benchmark and the rest of
        # ctest: the GPU tests are stopped 8 s before the deadline, and both
        # later steps run.
        r = self.run_check(BNN_GPU_DEADLINE="16", BNN_GPU_STEP_MINIMUM="4", FAKE_GPU_TESTS_SECONDS="600",
                           BNN_GPU_MEMBERS="")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        limit = re.search(r"gpu-check: gpu_tests exit 124, \d+ s \(stopped at its limit of (\d+) s\)", self.summary)
        self.assertTrue(limit and 1 <= int(limit.group(1)) <= 8, self.summary)
        self.assertEqual([step for step, _ in self.steps()][:4], ["build_exit", "gpu_tests_exit", "bench_exit",
                                                                   "ctest_exit"])
        self.assertEqual(r.stdout.splitlines()[-1], "gpu-check: FAIL: gpu_tests ran out of time (exit 124)")

    def test_a_step_that_ignores_sigterm_is_killed_with_what_it_started(self):
        # A child that only SIGKILL stops, recognisable by its argument.
        child = str(700 + os.getpid() % 1000)
        r = self.run_check(BNN_CTEST_TIMEOUT="2", FAKE_CTEST_IGNORES_TERM=child, BNN_GPU_MEMBERS="",
                           BNN_MEMBERS_TIMEOUT="1")
        self.assertEqual(r.returncode, 1)
        # 2 s, 5 more to die, and a second turning on a busy machine.
        self.assertRegex(self.summary, r"gpu-check: ctest exit 137, [789] s \(killed: still going 5 s past its "
                                       r"limit of 2 s, or out of memory\)")
        self.assertEqual(r.stdout.splitlines()[-1], "gpu-check: FAIL: ctest was killed (exit 137)")
        # Processes whose command line is "sleep CHILD", read from /proc (an image may have no pgrep).
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if f.read() == f"sleep\0{child}\0".encode():
                        left.append(pid)
            except OSError:
                pass  # ended meanwhile
        self.assertEqual(left, [], "the stopped step's child outlived it")


    def configures(self):
        return [line for line in self.call_lines if line.startswith("cmake -S")]

    def test_when_configuring_the_kernels_fails_the_rest_is_built_without_them(self):
        r = self.run_check(FAKE_KERNELS_CONFIGURE_FAILS="1", BNN_GPU_MEMBERS="")
        self.assertEqual(r.returncode, 1)
        configures = self.configures()
        self.assertEqual(len(configures), 2)
        self.assertIn("-DBNN_CUDA_KERNELS=ON -DBNN_DISTRIBUTED=ON", configures[0])
        self.assertIn("-DBNN_CUDA_KERNELS=OFF -DBNN_DISTRIBUTED=OFF", configures[1])
        self.assertIn("gpu-check: configuring failed (build.log); building again without bnn's CUDA kernels and "
                      "torch.distributed", self.summary)
        # The tests and benchmarks ran on the reduced build; the verdict
        # fails on the first build, whose error stays in build.log.
        self.assertEqual([step for step, _ in self.steps()][:5],
                         ["build_exit", "build_reduced_exit", "gpu_tests_exit", "bench_exit", "ctest_exit"])
        self.assertEqual(r.stdout.splitlines()[-1], "gpu-check: FAIL: build exited 1")
        self.assertIn("Configuring incomplete", self.read("build.log"))
        # CMake's own log of why, which stays in the build folder on the machine, comes back in build.log.
        self.assertIn("CMakeConfigureLog.yaml:\nnvcc fatal : Unsupported gpu architecture 'compute_50'",
                      self.read("build.log"))

    def test_when_a_source_fails_to_compile_the_rest_is_built_without_the_optional_parts(self):
        r = self.run_check(FAKE_COMPILE_FAILS="distributed", BNN_GPU_MEMBERS="")
        self.assertEqual(r.returncode, 1)
        # Both builds go on past a failed source (Ninja's -k 0), so that
        # build.log names every error: each builds bnn (and its kit) first,
        # then the rest; where bnn failed, the first build ends there, and
        # the reduced build has the minutes the rest would have taken.
        builds = [line for line in self.call_lines if line.startswith("cmake --build")]
        self.assertEqual(["--target bnn" in line for line in builds], [True, True, False])
        for line in builds:
            self.assertTrue(line.endswith(" -- -k 0"), line)
        self.assertIn("-DBNN_CUDA_KERNELS=OFF -DBNN_DISTRIBUTED=OFF", self.configures()[1])
        self.assertIn("gpu-check: building failed (build.log); building again without bnn's CUDA kernels and "
                      "torch.distributed", self.summary)
        self.assertEqual(self.steps()[:5], [["build_exit", "1"], ["build_reduced_exit", "0"],
                                            ["gpu_tests_exit", "0"], ["bench_exit", "0"], ["ctest_exit", "0"]])
        self.assertEqual(r.stdout.splitlines()[-1], "gpu-check: FAIL: build exited 1")
        self.assertIn("process_group.cpp:1: error", self.read("build.log"))
        # The kit is the reduced build's bnn, the one the steps ran on, and
        # says so (a slice that asks for the kernels builds instead).
        self.assertEqual(self.kit_bnn(), self.read_program("bnn") + b"# reduced\n")
        with tarfile.open(os.path.join(self.out, "bnn-kit.tar.gz")) as kit:
            self.assertIn("settings=kernels OFF, distributed OFF, ", kit.extractfile("kit.txt").read().decode())

    def test_a_make_build_goes_on_past_a_failed_source_with_make_s_own_option(self):
        # Where the machine has no ninja, CMake writes Makefiles: Make's -k,
        # not Ninja's -k 0, which Make would read as a target named 0.
        r = self.run_check(FAKE_GENERATOR="make", FAKE_COMPILE_FAILS="distributed", BNN_GPU_MEMBERS="")
        self.assertEqual(r.returncode, 1)
        builds = [line for line in self.call_lines if line.startswith("cmake --build")]
        self.assertEqual(len(builds), 3)
        for line in builds:
            self.assertTrue(line.endswith(" -- -k"), line)
        self.assertEqual(self.steps()[:2], [["build_exit", "1"], ["build_reduced_exit", "0"]])

    def test_where_no_bnn_is_built_even_then_the_check_stops(self):
        # A bnn from before this check (an older build in the same folder) is not this check's.
        os.makedirs(os.path.join(self.build, "src"))
        old = os.path.join(self.build, "src", "bnn")
        shutil.copy(os.path.join(self.fake, "programs", "bnn"), old)
        os.utime(old, (time.time() - 3600, time.time() - 3600))
        r = self.run_check(FAKE_COMPILE_FAILS="always")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len([line for line in self.call_lines if line.startswith("cmake --build")]), 2)
        self.assertEqual(self.steps(), [["build_exit", "1"], ["build_reduced_exit", "1"]])
        self.assertFalse(any(line.startswith("bnn ") for line in self.call_lines))
        self.assertFalse(os.path.exists(os.path.join(self.out, "bnn-kit.tar.gz")))
        self.assertEqual(r.stdout.splitlines()[-1], "gpu-check: FAIL: build exited 1; gpu_tests did not run; "
                                                    "bench did not run; ctest did not run; no GPU test in ctest.log")


if __name__ == "__main__":
    unittest.main()
