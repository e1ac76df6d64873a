#!/usr/bin/env python3
"""scripts/paper-slice.sh: one slice of the paper's run, on tiny.yaml and the CPU.

Members trained in slices on machines that keep nothing must come back as
archives that, unpacked together and evaluated, score exactly as the same
members trained in one run; a slice stopped before any member finished
resumes on the same machine; bnn comes from the kit where one fits; bad
arguments are named before anything runs.

    python3 tests/scripts/paper_slice_test.py   (ctest: PaperSliceScript.Script; BNN_BINARY: the bnn)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from script_test_support import BNN, ROOT, skip_without_fashion_mnist, write_executable

SLICE = os.path.join(ROOT, "scripts", "paper-slice.sh")
PACK = os.path.join(ROOT, "scripts", "pack-members.sh")
TINY = os.path.join(ROOT, "configs", "tiny.yaml")


class PaperSliceScript(unittest.TestCase):
    def setUp(self):
        skip_without_fashion_mnist(self)
        self.tmp = tempfile.mkdtemp(prefix="bnn_paper_slice")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.out = os.path.join(self.tmp, "out")

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def slice(self, name, members, *options, path_first=None, out=None, **env):
        base = {k: v for k, v in os.environ.items() if not k.startswith(("BNN_", "FAKE_"))}
        settings = dict(BNN_SLICE_BNN=BNN, BNN_SLICE_CONFIG=TINY, BNN_SLICE_WORK=self.path("work"),
                        BNN_COMMIT="test-commit")
        settings.update(env)
        if path_first:
            base["PATH"] = path_first + ":" + base["PATH"]
        return subprocess.run(["bash", SLICE, name, members, out or self.out, "--device", "cpu", "--threads", "1",
                               *options], capture_output=True, text=True, env=dict(base, **settings), timeout=300)

    def bnn_wrapper(self, name, body):
        # A bnn that does as the real one, but for what `body` does first.
        path = self.path(name)
        write_executable(path, f"#!/usr/bin/env bash\n{body}\nexec {BNN} \"$@\"\n")
        return path

    def read(self, *parts):
        with open(self.path(*parts)) as f:
            return f.read()

    def test_slices_trained_apart_score_as_one_run(self):
        for name, members in (("a", "0"), ("b", "1")):
            r = self.slice(name, members)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["a.log", "a.tsv", "a_01.tar", "b.log", "b.tsv", "b_01.tar"])
        rows = self.read("out", "a.tsv").splitlines()
        self.assertEqual(rows[0], "started_utc\tseconds\texit_code\tcommand")
        self.assertEqual(len(rows), 2)
        self.assertIn("\t0\t" + BNN + " run --config " + TINY, rows[1])
        self.assertRegex(rows[1], r" --members 0 --set evaluation.save_sample_probs=false --time-limit \d+s "
                                  r"--whole-members --device cpu --threads 1$")
        self.assertIn("paper-slice: done in", self.read("out", "b.log"))
        self.assertIn("b_01.tar: 1 member(s) (member_001)", self.read("out", "b.log"))

        reference = self.path("reference")
        subprocess.run([BNN, "run", "--config", TINY, "--out", reference, "--device", "cpu", "--threads", "1",
                        "--set", "evaluation.save_sample_probs=false"], check=True, capture_output=True)
        merged = self.path("merged")
        subprocess.run(["bash", PACK, "unpack", merged, self.path("out", "a_01.tar"), self.path("out", "b_01.tar")],
                       check=True, capture_output=True)
        subprocess.run([BNN, "evaluate", merged], check=True, capture_output=True)
        for name in ("metrics.json", "metrics.csv"):
            self.assertEqual(self.read("merged", name), self.read("reference", name), name)

        # A new slice "a" (another machine's work folder) does not write over
        # the first one's files.
        r = self.slice("a", "1", BNN_SLICE_WORK=self.path("work2"))
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, f"paper-slice: {self.out} already holds slice a's files: give another NAME or "
                                   "OUT_DIR\n")
        self.assertEqual(self.read("out", "a.tsv").count("\n"), 2)

    def test_a_slice_stopped_before_any_member_finished_resumes_on_the_same_machine(self):
        # The first run's time is up at once (bnn takes the last --time-limit given).
        stops = self.bnn_wrapper("bnn-stops", f"""if [[ "$1" == run && ! -e {self.tmp}/stopped ]]; then
  touch {self.tmp}/stopped; exec {BNN} "$@" --time-limit 0.001
fi""")
        r = self.slice("a", "0-1", BNN_SLICE_BNN=stops)
        self.assertEqual(r.returncode, 75, r.stdout + r.stderr)
        self.assertIn("paper-slice: no member finished in time: nothing to pack (call again on this machine to "
                      f"resume {self.path('work', 'a', 'run')})", r.stdout)
        self.assertEqual(sorted(os.listdir(self.out)), ["a.log", "a.tsv"])
        # Resumed with other members: refused, the folder untouched.
        r = self.slice("a", "0")
        self.assertEqual(r.returncode, 2)
        self.assertRegex(r.stderr, f"^paper-slice: {re.escape(self.path('work', 'a'))} holds a slice started with "
                                   r"other settings \(members 0-1; config [0-9a-f]{16}; options --device cpu --threads "
                                   r"1\), not members 0; .*: give another NAME or remove that folder\n$")
        r = self.slice("a", "0-1", BNN_SLICE_BNN=stops)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"paper-slice: resuming {self.path('work', 'a', 'run')}", r.stdout)
        self.assertIn("a_01.tar: 2 member(s) (member_000 member_001)", r.stdout)
        rows = self.read("out", "a.tsv").splitlines()[1:]
        self.assertEqual([row.split("\t")[2] for row in rows], ["75", "0"])
        self.assertRegex(rows[1], re.escape(" run --resume " + self.path("work", "a", "run")) +
                         r" --members 0-1 --time-limit \d+s --whole-members --device cpu --threads 1")
        self.assertNotIn("--set", rows[1])

    def test_bnn_comes_from_the_kit_where_it_fits_else_it_is_built(self):
        # Stand-ins: python3's torch, and cmake whose "build" (of
        # $FAKE_BUILD_SECONDS) is a bnn that hands every command but
        # `version` to the real one.
        bin_dir = self.path("bin")
        os.makedirs(bin_dir)
        os.makedirs(self.path("site-packages", "torch", "share", "cmake"))
        write_executable(os.path.join(bin_dir, "python3"), f"""#!/usr/bin/env bash
case "$*" in
  *cmake_prefix_path*) echo "{self.tmp}/site-packages/torch/share/cmake"; exit 0 ;;
  *"import torch;"*) echo "2.11.0+cu130 13.0"; exit 0 ;;
esac
exec {sys.executable} "$@"
""")
        built = self.bnn_wrapper("bnn-built", 'if [[ "$1" == version ]]; then echo "bnn (the test\'s build)"; exit 0; fi')
        write_executable(os.path.join(bin_dir, "cmake"), f"""#!/usr/bin/env bash
echo "cmake $*" >> {self.tmp}/cmake_calls
if [[ "$1" == --build ]]; then
  [[ -z "${{FAKE_BUILD_FAILS:-}}" ]] || {{ echo "src/main.cpp:1: error: ..."; exit 1; }}
  sleep "${{FAKE_BUILD_SECONDS:-0}}"; mkdir -p "$2/src" && cp {built} "$2/src/bnn"
fi
""")
        settings = dict(path_first=bin_dir, BNN_SLICE_BNN="", BNN_SLICE_DEBS=self.path("no-debs"),
                        BNN_SLICE_BUILD=self.path("build"), BNN_SLICE_KIT=self.path("none.tar.gz"))
        # A build that fails: no bnn, and nothing trained.
        r = self.slice("y", "0", out=self.path("out-y"), FAKE_BUILD_FAILS="1", **settings)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("paper-slice: no bnn: scripts/build-pip-torch.sh exited 1 (the log above)\n", r.stdout)
        self.assertIn("src/main.cpp:1: error", self.read("out-y", "y.log"))
        self.assertFalse(os.path.exists(self.path("work", "y", "run")))
        # A build that leaves under 30 s before the deadline's last 30: no training.
        r = self.slice("z", "0", out=self.path("out-z"), BNN_SLICE_DEADLINE="60", FAKE_BUILD_SECONDS="3",
                       **settings)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"paper-slice: no time left to train: (1?\d|2[0-7]) s after bnn was had \(deadline "
                                   r"60 s, 30 s kept for scoring and packing\)")
        self.assertFalse(os.path.exists(self.path("work", "z", "run")))

        r = self.slice("a", "0", out=self.path("out-a"), **settings)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"paper-slice: bnn from scripts/build-pip-torch.sh --build {self.path('build')} --no-tests "
                      "--target bnn\n", r.stdout)
        self.assertIn("a_01.tar: 1 member(s) (member_000)", r.stdout)
        self.assertTrue(os.path.exists(self.path("cmake_calls")))
        # It had to build, so its build comes back as the kit for the next slices.
        kit = self.path("out-a", "bnn-kit.tar.gz")
        self.assertEqual(sorted(os.listdir(self.path("out-a"))), ["a.log", "a.tsv", "a_01.tar", "bnn-kit.tar.gz"])

        os.remove(self.path("cmake_calls"))
        shutil.rmtree(self.path("build"))
        settings["BNN_SLICE_KIT"] = kit
        r = self.slice("b", "1", out=self.path("out-b"), **settings)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"--target bnn --from-kit {kit}\n", r.stdout)
        self.assertIn(f"build-pip-torch: bnn from the kit {kit}", r.stdout)
        self.assertFalse(os.path.exists(self.path("cmake_calls")))
        self.assertEqual(sorted(os.listdir(self.path("out-b"))), ["b.log", "b.tsv", "b_01.tar"])

    def test_training_that_outlasts_its_time_limit_is_stopped_by_the_deadline(self):
        # bnn trains, then hangs (as a run might in its scoring): the slice
        # stops it 10 s before the deadline, records the slice and packs
        # what finished.
        hangs = self.bnn_wrapper("bnn-hangs", f"""if [[ "$1" == run ]]; then {BNN} "$@"; exec sleep 600; fi""")
        # 66 s: 30 to train and 30 kept, with 6 for the seconds before training on a busy machine.
        r = self.slice("a", "0", BNN_SLICE_BNN=hangs, BNN_SLICE_DEADLINE="66")
        self.assertEqual(r.returncode, 75, r.stdout + r.stderr)
        self.assertIn("paper-slice: training was stopped at the deadline (exit 124)", r.stdout)
        self.assertIn("a_01.tar: 1 member(s) (member_000)", r.stdout)
        done = re.search(r"paper-slice: done in (\d+) s", r.stdout)
        self.assertTrue(done and int(done.group(1)) <= 66, r.stdout)
        rows = self.read("out", "a.tsv").splitlines()[1:]
        self.assertEqual(len(rows), 1)
        started, seconds, code, command = rows[0].split("\t")
        # Stopped 20 s after its time limit, itself 30 s before the deadline
        # (50-56 s), and a few seconds more to start and stop on a loaded
        # machine (57 s seen while two other builds ran); the slice's own
        # deadline is the bound checked above.
        self.assertTrue(50 <= int(seconds) <= 60, rows[0])
        self.assertEqual((code, command), ("124", "scripts/paper-slice.sh a 0 (training stopped at the slice's deadline)"))

    def test_training_that_fails_fails_the_slice_with_bnn_s_log(self):
        fails = self.bnn_wrapper("bnn-fails", """if [[ "$1" == run ]]; then echo "bnn: error: out of memory" >&2; exit 3; fi""")
        r = self.slice("a", "0", BNN_SLICE_BNN=fails)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("paper-slice: paper-run.sh exited 3\n", r.stdout)
        self.assertIn("bnn: error: out of memory", self.read("out", "a.log"))
        self.assertEqual(sorted(os.listdir(self.out)), ["a.log", "a.tsv"])
        self.assertIn("\t3\t" + fails + " run --config ", self.read("out", "a.tsv"))

    def test_members_that_cannot_be_packed_fail_the_slice_and_leave_no_archive(self):
        # Training finishes, but tar fails part-way through an archive (a full disk, say), leaving what it
        # wrote: the slice exits 1 naming the pack, leaves no half archive, and keeps its record and log;
        # the trained member stays in the work folder, so a call again on the same machine packs it without
        # training again.
        bin_dir = self.path("failing-tar")
        os.makedirs(bin_dir)
        write_executable(os.path.join(bin_dir, "tar"), f"""#!/usr/bin/env bash
if [[ "$1" == -cf ]]; then
  head -c 5000 /dev/zero > "$2"
  echo "tar: write error: No space left on device" >&2
  exit 2
fi
exec {shutil.which("tar")} "$@"
""")
        r = self.slice("a", "0", path_first=bin_dir)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("tar: write error: No space left on device", r.stdout + r.stderr)
        self.assertIn("pack-members: tar could not write " + os.path.join(self.out, "a_01.tar") +
                      "\npaper-slice: scripts/pack-members.sh exited 2\n", r.stdout)
        self.assertEqual(sorted(os.listdir(self.out)), ["a.log", "a.tsv"])
        self.assertIn("paper-slice: scripts/pack-members.sh exited 2", self.read("out", "a.log"))
        r = self.slice("a", "0")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("paper-slice: resuming", r.stdout)
        self.assertIn("a_01.tar: 1 member(s) (member_000)", r.stdout)
        self.assertRegex(self.read("out", "a.log"), r"member 0 already finished in .*/work/a/run; skipping")

    def test_a_throughput_table_chooses_the_members_at_once(self):
        # tiny.yaml's members of 6 epochs: 0.066 s alone, 0.0132 s two at once (Note [Members for a time
        # limit]); the bench's failed row is not read as a rate.
        table = self.path("members_per_device.csv")
        with open(table, "w") as f:
            f.write("design,members,exit,wall_s,member_epochs_per_s,peak_gpu_mib,mib_per_member\n"
                    "streams,1,0,10,100,1,1\nstreams,2,0,10,1000,1,1\nstreams,4,1,10,nan,1,1\n")
        # Two threads: on the CPU bnn takes no more members at once than threads.
        r = self.slice("a", "0-1", "--threads", "2", "--members-per-device", "auto", BNN_SLICE_THROUGHPUT=table)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"paper-slice: members at once from {table} (bnn run --throughput)", r.stdout)
        log = self.read("out", "a.log")
        self.assertIn(f"cpu: 2 member(s) at a time by --throughput {table}: ", log)
        self.assertIn("2 workers on cpu: 2 members at a time per device", log)
        self.assertRegex(self.read("out", "a.tsv"), r"--time-limit \d+s --whole-members --device cpu --threads 1 "
                         "--threads 2 --members-per-device auto --throughput " + re.escape(table) + "\n")
        self.assertIn("a_01.tar: 2 member(s) (member_000 member_001)", r.stdout)
        # A table that is not there (the check did not get to it), or holds no finished run bnn could
        # choose for the streams design (a failed one, another design's, a rate of 0): the slice goes on,
        # one member at a time (after the caller's auto, so that bnn takes it), and says so.
        with open(self.path("failed.csv"), "w") as f:
            f.write("design,members,exit,wall_s,member_epochs_per_s,peak_gpu_mib,mib_per_member\n"
                    "streams,1,3,10,nan,1,1\nstacked,2,0,10,1000,1,1\nstreams,2,0,10,0,1,1\n")
        for name, missing in (("b", self.path("none.csv")), ("c", self.path("failed.csv"))):
            r = self.slice(name, "0", "--members-per-device", "auto", BNN_SLICE_THROUGHPUT=missing)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn(f"paper-slice: not using BNN_SLICE_THROUGHPUT={missing}: no such file, or no finished "
                          "streams run in it; one of the members at a time (--members-per-device 1), since K at "
                          "once before any is timed could leave none finished", r.stdout)
            self.assertNotIn("--throughput", self.read("out", name + ".tsv"))
            self.assertRegex(self.read("out", name + ".tsv"), r"--members-per-device auto --members-per-device 1\n")

    def test_members_another_process_holds_leave_the_slice_unfinished(self):
        # bnn exits 0 where another process holds the members it has left (a killed call's bnn still
        # training, say): here member 1 is left so, and the slice says it is not done.
        status = self.path("work", "a", "run", "member_001", "status.json")
        holds = self.bnn_wrapper("bnn-holds", f'if [[ "$1" == run ]]; then\n'
                                              f'  {BNN} "$@"; code=$?; rm -f {status}; exit $code\nfi')
        r = self.slice("a", "0-1", BNN_SLICE_BNN=holds)
        self.assertEqual(r.returncode, 75, r.stdout + r.stderr)
        self.assertIn("pack-members: not finished, left out: member_001", r.stdout)
        self.assertIn("paper-slice: members not finished (another process may still be training them): call again "
                      "on this machine", r.stdout)
        self.assertIn("a_01.tar: 1 member(s) (member_000)", r.stdout)

    def test_an_option_bnn_refuses_leaves_the_name_free(self):
        r = self.slice("a", "0", "--set", "nosuch.key=1")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("nosuch.key", r.stdout)
        self.assertIn("paper-slice: bnn run refused its arguments (exit 2; ", r.stdout)
        self.assertFalse(os.path.exists(self.path("work", "a")))
        r = self.slice("a", "0")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_an_exit_2_after_training_began_keeps_the_work(self):
        # A failed write (a full disk) is exit 2 too: the run folder and its members stay.
        body = f'if [[ "$1" == run ]]; then\n  {BNN} "$@"; echo "bnn: error: cannot write x" >&2; exit 2\nfi'
        writes_fail = self.bnn_wrapper("bnn-write-fails", body)
        r = self.slice("a", "0", BNN_SLICE_BNN=writes_fail)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("paper-slice: paper-run.sh exited 2\n", r.stdout)
        self.assertTrue(os.path.exists(self.path("work", "a", "run", "member_000", "status.json")))

    def test_pack_refuses_to_replace_another_run_s_archives(self):
        r = self.slice("a", "0")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(self.path("out", "a_01.tar"), "rb") as f:
            archive = f.read()
        other = self.path("other")
        subprocess.run([BNN, "run", "--config", TINY, "--out", other, "--members", "0", "--device", "cpu",
                        "--threads", "1", "--set", "run.seed=9"], check=True, capture_output=True)
        r = subprocess.run(["bash", PACK, "pack", other, self.path("out", "a")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(f"pack-members: {self.path('out', 'a_01.tar')} holds another run's members (its bnn.json is "
                      f"not {other}'s): give another PREFIX, or move it away", r.stderr)
        with open(self.path("out", "a_01.tar"), "rb") as f:
            self.assertEqual(f.read(), archive)
        # The same run packed again replaces its own archives.
        r = subprocess.run(["bash", PACK, "pack", self.path("work", "a", "run"), self.path("out", "a")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_bad_arguments_are_named_before_anything_runs(self):
        cases = [
            (("a/b", "0"), {}, 2,
             re.escape("paper-slice: NAME 'a/b' must be letters, digits and '-' (it names the files that come back)")),
            (("a", "first"), {}, 2,
             re.escape("paper-slice: MEMBERS 'first' is not a member list such as 0-3 or 4,6-9")),
            (("a", "0"), {"BNN_SLICE_DEADLINE": "9m"}, 2,
             re.escape("paper-slice: BNN_SLICE_DEADLINE '9m' is not a whole number of seconds, at least 60")),
            (("a", "0"), {"BNN_SLICE_DEADLINE": "59"}, 2,
             re.escape("paper-slice: BNN_SLICE_DEADLINE '59' is not a whole number of seconds, at least 60")),
            (("a", "0", "--time-limit", "9m"), {}, 2,
             re.escape("paper-slice: --time-limit is set from BNN_SLICE_DEADLINE: set that instead")),
            # bnn takes the last --out or --config given, so the slice's own would lose.
            (("a", "0", "-o", self.path("elsewhere")), {}, 2,
             re.escape("paper-slice: --out is set from BNN_SLICE_WORK: set that instead")),
            (("a", "0", "--config=x.yaml"), {}, 2,
             re.escape("paper-slice: --config is set from BNN_SLICE_CONFIG: set that instead")),
            (("a", "0"), {"BNN_SLICE_CONFIG": self.path("none.yaml")}, 2,
             re.escape(f"paper-slice: no config file {self.path('none.yaml')}")),
            (("a", "0", "--members-per-device", "2"), {"BNN_SLICE_THROUGHPUT": self.path("t.csv")}, 2,
             re.escape("paper-slice: BNN_SLICE_THROUGHPUT chooses the members per device: drop "
                       "--members-per-device 2")),
            (("a", "0", "--members-per-device=4"), {"BNN_SLICE_THROUGHPUT": self.path("t.csv")}, 2,
             re.escape("paper-slice: BNN_SLICE_THROUGHPUT chooses the members per device: drop "
                       "--members-per-device 4")),
            (("a", "0-1", "--members", "2"), {}, 2,
             re.escape("paper-slice: --members is MEMBERS, the second argument: give it there")),
            (("a", "0-1", "--members=3"), {}, 2,
             re.escape("paper-slice: --members is MEMBERS, the second argument: give it there")),
            (("a", "0"), {"BNN_SLICE_BNN": self.path("none")}, 1,
             re.escape(f"paper-slice: {self.path('none')} is not an executable bnn")),
        ]
        for args, env, code, message in cases:
            r = self.slice(*args, **env)
            self.assertEqual(r.returncode, code, (args, env, r.stdout, r.stderr))
            self.assertRegex(r.stdout + r.stderr, message, (args, env))
        self.assertFalse(os.path.exists(self.path("work", "a", "run")))
        r = subprocess.run(["bash", SLICE, "a", "0"], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stderr), (2, "usage: scripts/paper-slice.sh NAME MEMBERS OUT_DIR "
                                                       "[bnn run OPTION...]\n"))


if __name__ == "__main__":
    unittest.main()
