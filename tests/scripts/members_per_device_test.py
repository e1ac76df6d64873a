#!/usr/bin/env python3
"""bench/members_per_device.sh run on the CPU with configs/tiny.yaml and a stand-in nvidia-smi.

The script is meant for a GPU session, where a mistake in it costs device time:
this checks on any machine that it runs each design, counts member-epochs and
memory as its header says, carries on past a failed run, and stops its memory
sampler however it ends.

    BNN_BINARY=build/src/bnn python3 tests/scripts/members_per_device_test.py
    (ctest: MembersPerDeviceScript.*)
"""
import csv
import glob
import os
import shutil
import tempfile
import unittest

from script_test_support import BNN, ROOT, run_in_own_group, skip_without_fashion_mnist, write_executable

SCRIPT = os.path.join(ROOT, "bench", "members_per_device.sh")

# Memory used: 500 MiB before the runs; while a run goes, 1000, 1200 and 900.
FAKE_SMI = """#!/bin/sh
case " $* " in
  *" -lms "*)
    echo $$ >> "{pids}"; echo 1000; echo 1200; echo 900
    while kill -0 $PPID 2> /dev/null; do sleep 0.1; done ;;
  *) echo 500 ;;
esac
"""

# bnn, except that a run with --members-per-device 2 fails as a GPU out of memory would
# (after a moment, as a real run would: the memory sampler has started by then).
FAKE_BNN = """#!/bin/sh
case " $* " in
  *" --members-per-device 2 "*)
    sleep 0.5; echo "out of memory on cuda:0: asked for 2.00 GiB, 1.05 GiB free" >&2; exit 3 ;;
esac
exec "{bnn}" "$@"
"""

# bnn, writing each call's arguments to a file first.
LOGGING_BNN = """#!/bin/sh
echo "$*" >> "{calls}"
exec "{bnn}" "$@"
"""

EPOCHS_AFTER_THE_FIRST = 4  # the script's schedule: 2 Adam + 1 SWA + 2 sampling epochs


def member_traces(run):
    traces = []
    for path in sorted(glob.glob(os.path.join(run, "member_*", "trace.csv"))):
        with open(path) as f:
            traces.append(list(csv.DictReader(f)))
    return traces


class MembersPerDeviceScript(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bnn_members_per_device_script")
        self.addCleanup(shutil.rmtree, self.dir)
        self.bin = os.path.join(self.dir, "bin")
        os.mkdir(self.bin)
        self.pids = os.path.join(self.dir, "sampler_pids")
        write_executable(os.path.join(self.bin, "nvidia-smi"), FAKE_SMI.format(pids=self.pids))
        self.out = os.path.join(self.dir, "out")

    def run_script(self, bnn, ks, processes="", path=None, cudnn_benchmark="", stacked=""):
        env = dict(os.environ, BNN_BENCH_DEVICE="cpu", BNN_BENCH_CONFIG=os.path.join(ROOT, "configs", "tiny.yaml"),
                   BNN_BENCH_PROCESSES=processes, BNN_BENCH_CUDNN_BENCHMARK=cudnn_benchmark,
                   BNN_BENCH_STACKED=stacked,
                   PATH=path or self.bin + os.pathsep + os.environ["PATH"])
        return run_in_own_group(["/bin/bash", SCRIPT, bnn, self.out] + ks, env, timeout=300)

    def need_data(self):
        skip_without_fashion_mnist(self)

    def rows(self):
        with open(os.path.join(self.out, "members_per_device.csv")) as f:
            return list(csv.DictReader(f))

    def assert_samplers_stopped(self, runs):
        with open(self.pids) as f:
            pids = [int(line) for line in f]
        self.assertEqual(len(pids), runs)
        for pid in pids:
            with self.assertRaises(ProcessLookupError, msg=f"memory sampler {pid} still running"):
                os.kill(pid, 0)

    def assert_rate_from_traces(self, row, runs):
        # K x epochs after each member's first / the slowest member's seconds for them.
        traces = [t for run in runs for t in member_traces(run)]
        self.assertEqual(len(traces), int(row["members"]))
        for rows in traces:
            self.assertEqual([r["phase"] for r in rows], ["adam", "adam", "swa", "sample", "sample"])
        slowest = max(sum(float(r["seconds"]) for r in rows[1:]) for rows in traces)
        expected = len(traces) * EPOCHS_AFTER_THE_FIRST / slowest
        self.assertAlmostEqual(float(row["member_epochs_per_s"]), expected, delta=1e-4 + 1e-4 * expected)

    def test_each_design_is_a_row_with_its_rate_and_memory(self):
        self.need_data()
        fake_bnn = os.path.join(self.bin, "bnn")
        write_executable(fake_bnn, LOGGING_BNN.format(bnn=BNN, calls=os.path.join(self.dir, "calls")))
        r = self.run_script(fake_bnn, ["1", "2"], processes="2", cudnn_benchmark="2", stacked="1 3")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.rows()
        # A stacked K right after the streams of that K; one no streams run has, after them all.
        self.assertEqual([(x["design"], x["members"], x["exit"]) for x in rows],
                         [("streams", "1", "0"), ("stacked", "1", "0"), ("streams", "2", "0"), ("stacked", "3", "0"),
                          ("processes", "2", "0"), ("streams+cudnn_benchmark", "2", "0")])
        # Peak 1200 MiB over the 500 MiB idle, shared by the members.
        self.assertEqual([x["peak_gpu_mib"] for x in rows], ["1200"] * 6)
        self.assertEqual([x["mib_per_member"] for x in rows], ["700", "700", "350", "233", "350", "350"])
        self.assert_rate_from_traces(rows[0], [os.path.join(self.out, "threads_k1")])
        self.assert_rate_from_traces(rows[1], [os.path.join(self.out, "stacked_k1")])
        self.assert_rate_from_traces(rows[2], [os.path.join(self.out, "threads_k2")])
        self.assert_rate_from_traces(rows[3], [os.path.join(self.out, "stacked_k3")])
        processes = [os.path.join(self.out, f"processes_p2_{i}") for i in range(2)]
        self.assert_rate_from_traces(rows[4], processes)
        self.assert_rate_from_traces(rows[5], [os.path.join(self.out, "cudnn_benchmark_k2")])
        # Only the last run asks for cuDNN's benchmark mode, only the second and fourth for stacked members.
        with open(os.path.join(self.dir, "calls")) as f:
            calls = f.read().splitlines()
        self.assertEqual(["--cudnn-benchmark" in c.split() for c in calls], [False] * 6 + [True])
        self.assertEqual(["--member-design stacked" in c for c in calls], [False, True, False, True] + [False] * 3)
        # The side-by-side processes are different chains (--seed i).
        first_losses = [member_traces(run)[0][0]["loss"] for run in processes]
        self.assertNotEqual(first_losses[0], first_losses[1])
        # The table: a speed-up against one member, no TFLOP/s for a config other than the paper's.
        table = r.stdout.splitlines()
        self.assertIn("member-epochs/s", table[0])
        self.assertEqual(table[1].split()[:3] + table[1].split()[5:7], ["streams", "1", "0", "1.00", "-"])
        self.assertEqual(len(table), 7)
        self.assert_samplers_stopped(6)

    def test_a_failed_run_is_a_row_and_the_others_go_on(self):
        self.need_data()
        fake_bnn = os.path.join(self.bin, "bnn")
        write_executable(fake_bnn, FAKE_BNN.format(bnn=BNN))
        r = self.run_script(fake_bnn, ["2", "1"])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        rows = self.rows()
        self.assertEqual([(x["design"], x["members"], x["exit"], x["member_epochs_per_s"]) for x in rows][0],
                         ("streams", "2", "3", "nan"))
        self.assertEqual((rows[1]["design"], rows[1]["members"], rows[1]["exit"]), ("streams", "1", "0"))
        self.assert_rate_from_traces(rows[1], [os.path.join(self.out, "threads_k1")])
        self.assertIn("members_per_device: streams with 2 members failed (exit 3); the end of", r.stderr)
        self.assertIn("out of memory on cuda:0: asked for 2.00 GiB, 1.05 GiB free", r.stderr)
        self.assert_samplers_stopped(2)

    def test_memory_that_nvidia_smi_does_not_give_is_left_empty(self):
        # As a container may answer ([N/A]): the rates, which bnn run --throughput reads, still come.
        self.need_data()
        write_executable(os.path.join(self.bin, "nvidia-smi"), """#!/bin/sh
echo "[N/A]"
case " $* " in *" -lms "*) while kill -0 $PPID 2> /dev/null; do sleep 0.1; done ;; esac
""")
        r = self.run_script(BNN, ["1"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("members_per_device: nvidia-smi gave '[N/A]' for the memory used: the memory columns stay empty",
                      r.stderr)
        rows = self.rows()
        self.assertEqual([(x["design"], x["members"], x["exit"], x["peak_gpu_mib"], x["mib_per_member"])
                          for x in rows], [("streams", "1", "0", "", "")])
        self.assert_rate_from_traces(rows[0], [os.path.join(self.out, "threads_k1")])

    def test_bad_arguments_are_named_before_any_run(self):
        for ks, processes, message in [
                (["0"], "", "members_per_device: '0' is not a member count (a whole number >= 1)"),
                (["1", "x"], "", "members_per_device: 'x' is not a member count (a whole number >= 1)"),
                (["1"], "two", "members_per_device: 'two' is not a member count (a whole number >= 1)")]:
            r = self.run_script(BNN, ks, processes=processes)
            self.assertEqual((r.returncode, r.stderr.strip()), (2, message))
        r = self.run_script(BNN, ["1"], stacked="1 x")
        self.assertEqual((r.returncode, r.stderr.strip()),
                         (2, "members_per_device: 'x' is not a member count (a whole number >= 1)"))
        r = self.run_script(os.path.join(self.dir, "no_bnn"), ["1"])
        self.assertEqual((r.returncode, r.stderr.strip()),
                         (2, f"members_per_device: '{os.path.join(self.dir, 'no_bnn')}' is not an executable bnn"))
        empty = os.path.join(self.dir, "empty_path")
        os.mkdir(empty)
        r = self.run_script(BNN, ["1"], path=empty)
        self.assertEqual((r.returncode, r.stderr.strip()),
                         (2, "members_per_device: no nvidia-smi on PATH (GPU memory is read with it)"))
        self.assertFalse(os.path.exists(self.out))
        self.assertFalse(os.path.exists(self.pids))


if __name__ == "__main__":
    unittest.main()
