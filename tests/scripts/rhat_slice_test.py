#!/usr/bin/env python3
"""scripts/rhat-slice.sh: one slice of bnn rhat, on tiny.yaml and the CPU.

Repeats run in slices on machines that keep nothing must come back as
archives from which, gathered, bnn rhat writes the tables of one command,
byte for byte; each slice runs only the repeats the earlier archives lack;
repeats saved before the deadline stops bnn are archived, and a slice
stopped after the last one is done; the throughput
table reaches bnn; bad arguments and archives are named.

    python3 tests/scripts/rhat_slice_test.py   (ctest: RhatSliceScript.Script; BNN_BINARY: the bnn)
"""
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import unittest

from script_test_support import BNN, ROOT, skip_without_fashion_mnist, write_executable

SLICE = os.path.join(ROOT, "scripts", "rhat-slice.sh")
TINY = os.path.join(ROOT, "configs", "tiny.yaml")
# Two chains a repeat, four sampling epochs after burn-in (bnn rhat's least).
RHAT = ["--chains", "2", "--repeats", "3", "--set", "sampler.epochs=5", "--threads", "1"]
TABLES = ("chains.csv", "rhat.csv", "summary.json")


class RhatSliceScript(unittest.TestCase):
    def setUp(self):
        skip_without_fashion_mnist(self)
        self.tmp = tempfile.mkdtemp(prefix="bnn_rhat_slice")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.out = self.path("out")
        self.saved = self.path("saved")
        os.makedirs(self.saved)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def read(self, *parts):
        with open(self.path(*parts)) as f:
            return f.read()

    def slice(self, name, *options, out=None, **env):
        base = {k: v for k, v in os.environ.items() if not k.startswith("BNN_")}
        settings = dict(BNN_SLICE_BNN=BNN, BNN_SLICE_CONFIG=TINY, BNN_SLICE_WORK=self.path("work"),
                        BNN_SLICE_SAVED=self.saved)
        settings.update(env)
        return subprocess.run(["bash", SLICE, name, out or self.out, "--device", "cpu", *RHAT, *options],
                              capture_output=True, text=True, env=dict(base, **settings), timeout=300)

    def bnn_wrapper(self, name, body):
        # A bnn that does as the real one, but for what `body` does first.
        path = self.path(name)
        write_executable(path, f"#!/usr/bin/env bash\n{body}\nexec {BNN} \"$@\"\n")
        return path

    def archived(self, name):
        with tarfile.open(self.path("out", f"rhat_{name}.tar")) as t:
            return sorted(t.getnames())

    def test_slices_gathered_give_the_tables_of_one_command(self):
        r = self.slice("a", "--only", "1")
        self.assertEqual(r.returncode, 75, r.stdout + r.stderr)
        self.assertIn("rhat-slice: bnn rhat exited 75\n", r.stdout)
        self.assertIn("rhat-slice: rhat_a.tar: 1 saved repeat(s); done in", r.stdout)
        self.assertEqual(self.archived("a"), ["bnn.json", "member_001/chains.json"])
        self.assertIn("1 of 3 repeats saved in ", self.read("out", "rhat_a.log"))
        self.assertRegex(self.read("out", "rhat_a.log"), r"rhat-slice: running repeats for at most \d+ s")

        # The next slice carries a's archive: it runs repeats 0 and 2 alone,
        # and its archive holds all three.
        shutil.copy(self.path("out", "rhat_a.tar"), self.saved)
        r = self.slice("b")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("rhat-slice: rhat_a.tar: 1 saved repeat(s)\n", r.stdout)
        self.assertIn("rhat-slice: rhat_b.tar: 3 saved repeat(s); done in", r.stdout)
        log = self.read("out", "rhat_b.log")
        self.assertIn("repeat 1: its chains from ", log)
        self.assertNotIn("member 1 chain 0 epoch", log)
        self.assertIn("member 0 chain 0 epoch", log)
        self.assertEqual(self.archived("b"), ["bnn.json", "member_000/chains.json", "member_001/chains.json",
                                              "member_002/chains.json"])

        # Gathered here: no chain runs, and the tables are one command's.
        gathered = self.path("gathered")
        os.makedirs(gathered)
        with tarfile.open(self.path("out", "rhat_b.tar")) as t:
            if hasattr(tarfile, "data_filter"):  # Python's extraction filters (3.12, backported to 3.11.4)
                t.extractall(gathered, filter="data")
            else:
                t.extractall(gathered)
        r = subprocess.run([BNN, "rhat", "--config", TINY, *RHAT, "--no-figures", "--out", gathered],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn(" chain 0 epoch ", r.stdout + r.stderr)
        reference = self.path("reference")
        subprocess.run([BNN, "rhat", "--config", TINY, *RHAT, "--no-figures", "--out", reference], check=True,
                       capture_output=True)
        for table in TABLES:
            self.assertEqual(self.read("gathered", table), self.read("reference", table), table)

        # A new slice "b" (another machine's work folder) does not write over
        # the first one's files.
        r = self.slice("b", BNN_SLICE_WORK=self.path("work2"))
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, f"rhat-slice: {self.out} already holds slice b's files: give another NAME or "
                                   "OUT_DIR\n")

    def test_repeats_saved_before_the_deadline_or_a_failure_are_archived(self):
        # bnn saves two repeats, then hangs in the third: the slice stops it
        # 10 s before the deadline and archives the two.
        hangs = self.bnn_wrapper("bnn-hangs", f"""if [[ "$1" == rhat ]]; then {BNN} "$@" --only 0,1; exec sleep 600; fi""")
        r = self.slice("a", BNN_SLICE_BNN=hangs, BNN_SLICE_DEADLINE="60")
        self.assertEqual(r.returncode, 75, r.stdout + r.stderr)
        self.assertIn("rhat-slice: bnn rhat was stopped at the deadline (exit 124)\n", r.stdout)
        self.assertIn("rhat-slice: 2 of 3 repeats saved: the one bnn was running is lost; run a later slice\n",
                      r.stdout)
        self.assertIn("rhat-slice: rhat_a.tar: 2 saved repeat(s); done in", r.stdout)
        done = re.search(r"done in (\d+) s", r.stdout)
        self.assertTrue(done and 45 <= int(done.group(1)) <= 60, r.stdout)
        self.assertEqual(self.archived("a"), ["bnn.json", "member_000/chains.json", "member_001/chains.json"])
        self.assertNotIn("repeats are saved", r.stdout)
        self.assertNotIn("bnn rhat exited", r.stdout)

        # Carrying a's archive, a slice saves the last repeat before the
        # stop: every repeat is in its archive, so it ends as done (0).
        shutil.copy(self.path("out", "rhat_a.tar"), self.saved)
        last = self.bnn_wrapper("bnn-saves-the-last", f"""if [[ "$1" == rhat ]]; then {BNN} "$@" --only 2
  exec sleep 600; fi""")
        r = self.slice("c", BNN_SLICE_BNN=last, BNN_SLICE_DEADLINE="60", BNN_SLICE_WORK=self.path("work3"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("rhat-slice: bnn rhat was stopped at the deadline (exit 124)", r.stdout)
        self.assertIn("rhat-slice: all 3 repeats are saved: the archive holds the experiment\n", r.stdout)
        self.assertNotIn("lost", r.stdout)
        self.assertEqual(self.archived("c"), ["bnn.json"] + [f"member_00{r}/chains.json" for r in range(3)])
        os.remove(os.path.join(self.saved, "rhat_a.tar"))

        # bnn saves a repeat, then fails (a repeat out of memory): the slice
        # fails, and the saved repeat comes back all the same.
        fails = self.bnn_wrapper("bnn-fails", f"""if [[ "$1" == rhat ]]; then {BNN} "$@" --only 2
  echo "bnn: error: CUDA out of memory" >&2; exit 3; fi""")
        r = self.slice("b", BNN_SLICE_BNN=fails)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rhat-slice: bnn rhat exited 3\n", r.stdout)
        self.assertIn("bnn: error: CUDA out of memory", self.read("out", "rhat_b.log"))
        self.assertEqual(self.archived("b"), ["bnn.json", "member_002/chains.json"])

        # Called again on the same machine, a slice keeps its own files
        # where an archive it unpacks holds others (here another folder's
        # repeat 2, of the same experiment but not the same bytes).
        kept = self.read("work", "rhat_b", "rhat", "member_002", "chains.json")
        other = self.path("other")
        os.makedirs(os.path.join(other, "member_002"))
        shutil.copy(self.path("work", "rhat_b", "rhat", "bnn.json"), other)
        with open(os.path.join(other, "member_002", "chains.json"), "w") as f:
            f.write(kept.replace("\n", "\n\n"))
        with tarfile.open(os.path.join(self.saved, "rhat_other.tar"), "w") as t:
            t.add(other, arcname=".")
        r = self.slice("b", "--only", "2")
        self.assertEqual(r.returncode, 75, r.stdout + r.stderr)
        self.assertIn("rhat-slice: rhat_other.tar: 1 saved repeat(s)\n", r.stdout)
        self.assertEqual(self.read("work", "rhat_b", "rhat", "member_002", "chains.json"), kept)

    def test_the_throughput_table_reaches_bnn(self):
        table = self.path("members_per_device.csv")
        with open(table, "w") as f:
            f.write("design,members,exit,wall_s,member_epochs_per_s,peak_gpu_mib,mib_per_member\n"
                    "streams,1,0,10,50.0,0,0\nstreams,2,0,10,100.0,0,0\n")
        # Two threads: on the CPU bnn takes no more repeats at once than threads.
        r = self.slice("a", "--threads", "2", BNN_SLICE_THROUGHPUT=table)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"rhat-slice: repeats at once from {table} (bnn rhat --throughput)\n", r.stdout)
        self.assertIn("2 repeats at a time on cpu", self.read("out", "rhat_a.log"))
        r = self.slice("b", BNN_SLICE_THROUGHPUT=self.path("none.csv"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"rhat-slice: not using BNN_SLICE_THROUGHPUT={self.path('none.csv')}: no such file, or no "
                      "finished streams run in it; one of the repeats at a time (--repeats-at-once 1), since K at "
                      "once before any is timed could leave none finished\n", r.stdout)
        self.assertNotIn("repeats at a time on cpu", self.read("out", "rhat_b.log"))
        r = self.slice("c", "--repeats-at-once", "2", BNN_SLICE_THROUGHPUT=table)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, "rhat-slice: BNN_SLICE_THROUGHPUT chooses the repeats at once: drop "
                                   "--repeats-at-once 2\n")

    def test_bad_arguments_and_archives_are_named(self):
        for args, env, message in (
                (["a b"], {}, "NAME 'a b' must be letters, digits and '-' (it names the files that come back)"),
                (["a"], dict(BNN_SLICE_DEADLINE="59"),
                 "BNN_SLICE_DEADLINE '59' is not a whole number of seconds, at least 60"),
                # bnn takes the last --out or --config given, so the slice's own would lose.
                (["a", "--out", "x"], {}, "--out is set from BNN_SLICE_WORK: set that instead"),
                (["a", "-o", "x"], {}, "--out is set from BNN_SLICE_WORK: set that instead"),
                (["a", "-cx.yaml"], {}, "--config is set from BNN_SLICE_CONFIG: set that instead"),
                (["a", "--time-limit=5"], {}, "--time-limit is set from BNN_SLICE_DEADLINE: set that instead"),
                (["a"], dict(BNN_SLICE_CONFIG=self.path("none.yaml")), f"no config file {self.path('none.yaml')}")):
            r = self.slice(*args, **env)
            self.assertEqual((r.returncode, r.stderr), (2, f"rhat-slice: {message}\n"), args)
        self.assertFalse(os.path.exists(self.out))
        r = subprocess.run(["bash", SLICE, "a"], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stderr), (2, "usage: scripts/rhat-slice.sh NAME OUT_DIR [bnn rhat "
                                                       "OPTION...]\n"))

        with open(os.path.join(self.saved, "rhat_x.tar"), "w") as f:
            f.write("not an archive")
        r = self.slice("a")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"rhat-slice: {self.saved}/rhat_x.tar does not unpack (the log above): remove it from "
                      f"{self.saved} or mend it\n", r.stdout)
        self.assertEqual(os.listdir(self.out), ["rhat_a.log"])

        # An archive of another experiment (other chains): bnn names the file.
        os.remove(os.path.join(self.saved, "rhat_x.tar"))
        r = self.slice("other", "--only", "0", "--chains", "3")
        self.assertEqual(r.returncode, 75, r.stdout + r.stderr)
        shutil.copy(self.path("out", "rhat_other.tar"), self.saved)
        r = self.slice("c")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rhat-slice: bnn rhat exited 2\nrhat-slice: (the slice sets --out: for other options, give the "
                      "slice another NAME)\n", r.stdout)
        self.assertIn("holds R-hat chains of this experiment with other options (rhat.chains: 3 there, 2 now",
                      self.read("out", "rhat_c.log"))
        # What the folder holds comes back as it came: bnn ran no repeat.
        self.assertEqual(self.archived("c"), ["bnn.json", "member_000/chains.json"])

        r = self.slice("d", BNN_SLICE_BNN=self.path("no-bnn"), BNN_SLICE_SAVED=self.path("none"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"rhat-slice: {self.path('no-bnn')} is not an executable bnn\n", r.stdout)


if __name__ == "__main__":
    unittest.main()
