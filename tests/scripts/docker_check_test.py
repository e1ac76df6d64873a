#!/usr/bin/env python3
"""scripts/docker-check.sh with a stand-in `docker` that runs the host's bnn for `docker run`.

The script is run by hand where a Docker engine is at hand (an image build
takes 12 to 17 minutes): this checks on any machine that it refuses without
an engine or a way to make its base image, names the log of a failed build
or tiny run and an image whose bnn cannot start, runs
`bnn version` and the tiny run through the mounted folder, and compares that
run with the host build's byte for byte.

    BNN_BINARY=build/src/bnn python3 tests/scripts/docker_check_test.py
    (ctest: DockerCheckScript.*)
"""
import os
import shutil
import subprocess
import tempfile
import unittest

from script_test_support import BNN, ROOT, skip_without_fashion_mnist, write_executable

SCRIPT = os.path.join(ROOT, "scripts", "docker-check.sh")

# docker, as far as the script uses it. `run ... -v HOST:/runs ... bnn:cpu ARGS`
# runs the host's bnn on ARGS, with /runs and /opt/bnn read as HOST and the
# repository, and FAKE_DOCKER_EXTRA's arguments appended to a `run` (an image
# that computes differently); with FAKE_DOCKER_BROKEN_IMAGE its bnn cannot start.
FAKE_DOCKER = """#!{python}
import os, sys
args = sys.argv[1:]
with open({calls!r}, "a") as f:
    f.write(" ".join(args) + "\\n")
env = os.environ.get
if args[0] == "info":
    sys.exit(1 if env("FAKE_DOCKER_NO_ENGINE") else 0)
if args[0] == "image":
    sys.exit(1 if env("FAKE_DOCKER_NO_BASE") else 0)
if args[0] == "pull":
    sys.exit(1)
if args[0] == "build":
    print("Step 1/9 : FROM debian:bookworm")
    if env("FAKE_DOCKER_BUILD_FAILS"):
        print("make: *** [Makefile:17: build] Error 2")
        sys.exit(1)
    sys.exit(0)
if args[0] == "run":
    if env("FAKE_DOCKER_BROKEN_IMAGE"):
        print("bnn: error while loading shared libraries: libtorch_cpu.so: cannot open shared object file")
        sys.exit(127)
    image = args.index("bnn:cpu")
    host = args[args.index("-v") + 1].rsplit(":/runs", 1)[0]
    rest = [a.replace("/opt/bnn", {root!r}, 1).replace("/runs", host, 1) for a in args[image + 1:]]
    if rest[:1] == ["run"]:  # bnn version takes no options
        rest += env("FAKE_DOCKER_EXTRA", "").split()
    os.execv({bnn!r}, [{bnn!r}] + rest)
sys.exit("fake docker: unexpected " + " ".join(args))
"""


class DockerCheckScript(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bnn_docker_check_script")
        self.addCleanup(shutil.rmtree, self.dir)
        self.bin = os.path.join(self.dir, "bin")
        os.mkdir(self.bin)
        self.calls = os.path.join(self.dir, "calls")
        write_executable(os.path.join(self.bin, "docker"),
                         FAKE_DOCKER.format(python=shutil.which("python3"), calls=self.calls, root=ROOT, bnn=BNN))
        self.out = os.path.join(self.dir, "out")

    def run_script(self, *args, **fake):
        # /usr/sbin left out: no debootstrap unless a test puts one in bin.
        env = dict(os.environ, PATH=self.bin + os.pathsep + "/usr/bin:/bin", **fake)
        return subprocess.run(["/bin/bash", SCRIPT, *args, self.out], capture_output=True, text=True, env=env,
                              timeout=300)

    def docker_calls(self, full=False):
        with open(self.calls) as f:
            return [line if full else line.split()[0] for line in f]

    def need_data(self):
        skip_without_fashion_mnist(self)

    def test_no_engine_is_named_and_nothing_is_built(self):
        r = self.run_script(FAKE_DOCKER_NO_ENGINE="1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("no Docker engine answers ('docker info' failed); start dockerd first", r.stderr)
        self.assertEqual(self.docker_calls(), ["info"])

    def test_no_base_image_and_no_debootstrap_is_named(self):
        r = self.run_script(FAKE_DOCKER_NO_BASE="1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("debian:bookworm cannot be pulled and debootstrap is not installed", r.stderr)
        self.assertEqual(self.docker_calls(), ["info", "image", "pull"])

    def test_unknown_option_is_named(self):
        r = self.run_script("--gpu")
        self.assertEqual(r.returncode, 2)
        self.assertIn("docker-check: unknown option '--gpu'", r.stderr)

    def test_a_failed_build_names_its_log_and_runs_nothing(self):
        r = self.run_script(FAKE_DOCKER_BUILD_FAILS="1")
        self.assertEqual(r.returncode, 1, r.stderr)
        log = os.path.join(self.out, "build-cpu.log")
        self.assertIn(f"docker-check: FAIL: the cpu target did not build (log: {log})", r.stderr)
        with open(log) as f:
            self.assertIn("Error 2", f.read())
        self.assertNotIn("run", self.docker_calls())

    def test_an_image_whose_bnn_cannot_start_is_named(self):
        r = self.run_script(FAKE_DOCKER_BROKEN_IMAGE="1")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("docker-check: FAIL: 'bnn version' failed in the image: bnn: error while loading shared "
                      "libraries: libtorch_cpu.so", r.stderr)
        self.assertEqual(self.docker_calls().count("run"), 1)

    def test_a_failed_tiny_run_names_its_log(self):
        self.need_data()
        r = self.run_script(FAKE_DOCKER_EXTRA="--set run.members=0")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        log = os.path.join(self.out, "tiny.log")
        self.assertIn(f"docker-check: FAIL: the tiny run failed in the image (log: {log})", r.stderr)
        with open(log) as f:
            self.assertIn("run.members", f.read())

    def test_the_image_run_equals_the_host_run(self):
        self.need_data()
        r = self.run_script("--host-bnn", BNN)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("docker-check: the image's tiny run equals the host build's byte for byte", r.stdout)
        self.assertTrue(r.stdout.endswith("docker-check: PASS\n"), r.stdout)
        with open(os.path.join(self.out, "version.txt")) as f:
            self.assertIn("LibTorch", f.read())
        runs = [line for line in self.docker_calls(full=True) if line.startswith("run ")]
        self.assertEqual(len(runs), 2)
        for line in runs:  # as the caller, with no network, the output folder mounted
            self.assertIn(f"--network none --user {os.getuid()}:{os.getgid()} -v {self.out}:/runs bnn:cpu", line)
        self.assertIn("--config /opt/bnn/configs/tiny.yaml --out /runs/tiny --threads 1", runs[1])

    def test_an_image_that_computes_differently_fails(self):
        self.need_data()
        r = self.run_script("--host-bnn", BNN, FAKE_DOCKER_EXTRA="--set run.seed=8")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        tiny = os.path.join(self.out, "tiny")
        self.assertIn(f"the image's metrics.json differs from the host build's ({tiny}, {tiny}-host)", r.stderr)


if __name__ == "__main__":
    unittest.main()
