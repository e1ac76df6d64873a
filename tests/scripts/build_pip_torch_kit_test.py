#!/usr/bin/env python3
"""scripts/build-pip-torch.sh --save-kit / --from-kit with stand-ins.

A lent GPU machine starts bare, so each session would pay bnn's build again;
a kit is one build's bnn that later sessions carry. It may be used only
where it fits: the same torch, the same sources, and a bnn that starts
there; anywhere else the script must say why and build. The script runs
from a copy in a small stand-in checkout (so that its sources can change),
with stand-ins for python3's torch and cmake on PATH.

    python3 tests/scripts/build_pip_torch_kit_test.py   (ctest: BuildPipTorch.Kit)
"""
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

from script_test_support import ROOT, write_executable

STAND_INS = {
    "python3": """
case "$*" in
  *cmake_prefix_path*) echo "$FAKE_ROOT/site-packages/torch/share/cmake" ;;
  *torch*) echo "${FAKE_TORCH:-2.11.0+cu130 13.0}" ;;
  *) exit 1 ;;
esac
""",
    # A build writes the stand-in bnn and a mark that it was built in this folder.
    "cmake": """
echo "cmake $*" >> "$FAKE_CALLS"
# A folder's first configure keeps the environment's flags in its cache, as CMake's does.
if [[ "$1" == -S ]]; then
  mkdir -p "$4" && touch "$4/build.ninja"
  [[ -f "$4/CMakeCache.txt" ]] ||
    printf 'CMAKE_CXX_FLAGS:STRING=%s\nCMAKE_CUDA_FLAGS:STRING=%s\nCMAKE_EXE_LINKER_FLAGS:STRING=%s\n' \
      "${CXXFLAGS:-}" "${CUDAFLAGS:-}" "${LDFLAGS:-}" > "$4/CMakeCache.txt"
fi
if [[ "$1" == --build && -z "${FAKE_BUILDS_NO_BNN:-}" ]]; then
  mkdir -p "$2/src" && cp "$FAKE_ROOT/programs/bnn" "$2/src/bnn" && touch "$2/built_here"
fi
""",
}
# bnn: `version` answers; with FAKE_KIT_BNN_CANNOT_START set, only in the
# folder it was built in (as a binary whose libraries are elsewhere).
BNN = """#!/usr/bin/env bash
echo "bnn $* (library path: ${LD_LIBRARY_PATH:-})" >> "$FAKE_CALLS"
if [[ -n "${FAKE_KIT_BNN_CANNOT_START:-}" && ! -e "$(dirname "$0")/../built_here" ]]; then
  echo "bnn: error while loading shared libraries: libfmt.so.9: cannot open shared object file" >&2
  exit 127
fi
echo "bnn 0.1.0 (stand-in)"
"""


class BuildPipTorchKit(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bnn_kit_test")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.root = os.path.join(self.tmp, "checkout")
        for folder in ("scripts", "cmake", "src", "models", "samplers", "data_loaders", "configs"):
            os.makedirs(os.path.join(self.root, folder))
        shutil.copy(os.path.join(ROOT, "scripts", "build-pip-torch.sh"), os.path.join(self.root, "scripts"))
        for name, text in (("CMakeLists.txt", "project(bnn)\n"), ("src/main.cpp", "int main() {}\n"),
                           ("samplers/ubu.cpp", "// ubu\n"), ("configs/tiny.yaml", "seed: 1\n")):
            with open(os.path.join(self.root, name), "w") as f:
                f.write(text)
        for folder in ("bin", "programs", "site-packages/torch/share/cmake"):
            os.makedirs(os.path.join(self.tmp, folder))
        for name, body in STAND_INS.items():
            write_executable(os.path.join(self.tmp, "bin", name), "#!/usr/bin/env bash\n" + body.lstrip())
        write_executable(os.path.join(self.tmp, "programs", "bnn"), BNN)
        self.calls = os.path.join(self.tmp, "calls.txt")
        self.kit = os.path.join(self.tmp, "kits", "bnn-kit.tar.gz")

    def build(self, *args, **env):
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("BNN_", "FAKE_")) and k not in ("CXXFLAGS", "CUDAFLAGS", "LDFLAGS")}
        path = os.path.join(self.tmp, "bin") + ":" + os.environ["PATH"]
        if "PATH_FIRST" in env:
            path = env.pop("PATH_FIRST") + ":" + path
        full_env = dict(base, PATH=path, FAKE_ROOT=self.tmp, FAKE_CALLS=self.calls, **env)
        if os.path.exists(self.calls):
            os.remove(self.calls)
        r = subprocess.run(["bash", os.path.join(self.root, "scripts", "build-pip-torch.sh"), *args],
                           capture_output=True, text=True, env=full_env, timeout=60)
        self.call_lines = []
        if os.path.exists(self.calls):
            with open(self.calls) as f:
                self.call_lines = f.read().splitlines()
        return r

    def folder(self, name):
        return os.path.join(self.tmp, name)

    def save(self, **env):
        r = self.build("--build", self.folder("a"), "--no-tests", "--target", "bnn", "--save-kit", self.kit,
                       BNN_COMMIT="abc123", **env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r

    def reuse(self, *extra, **env):
        return self.build("--build", self.folder("b"), "--no-tests", "--from-kit", self.kit, *extra, **env)

    def compiled(self):
        return [line for line in self.call_lines if line.startswith("cmake --build")]

    def assert_refused_and_built(self, r, reason, what=None):
        # The kit was not used, for `reason`, and bnn was compiled once instead.
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"build-pip-torch: not using the kit {self.kit}: {reason}; building bnn", r.stdout, what)
        self.assertEqual(len(self.compiled()), 1, what)

    def test_a_kit_is_used_in_another_folder_and_nothing_is_compiled(self):
        r = self.save()
        self.assertIn(f"build-pip-torch: kit written to {self.kit}", r.stdout)
        self.assertEqual(os.listdir(os.path.dirname(self.kit)), ["bnn-kit.tar.gz"])  # moved in whole
        with tarfile.open(self.kit) as kit:
            self.assertEqual(sorted(kit.getnames()), ["bnn", "kit.txt", "version.txt"])
            fields = dict(line.split("=", 1) for line in kit.extractfile("kit.txt").read().decode().splitlines())
            self.assertEqual(kit.extractfile("version.txt").read().decode(), "bnn 0.1.0 (stand-in)\n")
        self.assertEqual(sorted(fields), ["built", "commit", "settings", "sources", "torch"])
        self.assertTrue(fields["settings"].startswith("kernels AUTO, distributed ON, NCCL header none, C++ "),
                        fields["settings"])
        self.assertTrue(fields["settings"].endswith(", build Release, CXXFLAGS '', CUDAFLAGS '', LDFLAGS '', "
                                                    "packages the system's"), fields["settings"])
        self.assertEqual(fields["torch"], "2.11.0+cu130 13.0")
        self.assertEqual(fields["commit"], "abc123")
        self.assertRegex(fields["sources"], r"^[0-9a-f]{64}$")
        self.assertRegex(fields["built"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

        r = self.reuse("--target", "bnn")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual([line for line in self.call_lines if line.startswith("cmake")], [])
        self.assertRegex(r.stdout, f"build-pip-torch: bnn from the kit {self.kit} \\(commit abc123, built "
                                   r"\d{4}-[-0-9T:]+Z\), nothing compiled\nbnn 0.1.0 \(stand-in\)\n$")
        with open(self.folder("b/src/bnn"), "rb") as f, open(self.folder("programs/bnn"), "rb") as g:
            self.assertEqual(f.read(), g.read())
        self.assertTrue(os.access(self.folder("b/src/bnn"), os.X_OK))
        with open(self.folder("b/kit.txt")) as f:
            self.assertIn("commit=abc123\n", f.read())
        # The files outside bnn (configs, scripts) and files of other kinds do not count.
        with open(os.path.join(self.root, "configs", "tiny.yaml"), "a") as f:
            f.write("members: 2\n")
        open(os.path.join(self.root, "src", "main.cpp~"), "w").close()
        r = self.reuse()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.compiled(), [])

    def test_a_kit_for_another_torch_or_other_sources_is_not_used(self):
        self.save()
        r = self.reuse(FAKE_TORCH="2.12.0+cu130 13.0")
        self.assert_refused_and_built(r, "it was built against torch 2.11.0+cu130 13.0, this Python has 2.12.0+cu130 "
                                         "13.0")
        self.assertFalse(os.path.exists(self.folder("b/kit.txt")))

        for change in ("src/main.cpp", "samplers/new.cpp", "CMakeLists.txt", "cmake/flags.cmake", "models/cnn.h",
                       "data_loaders/cifar.cpp", "src/kernels.cu"):  # edits, new files
            with open(os.path.join(self.root, change), "a") as f:
                f.write("// changed\n")
            shutil.rmtree(self.folder("b"))
            r = self.reuse()
            self.assert_refused_and_built(r, "it was built from other sources (commit abc123) than these", change)

    def test_a_kit_built_with_other_settings_is_not_used_and_a_new_one_is_saved(self):
        self.save(BNN_CUDA_KERNELS="OFF")
        fresh = self.folder("fresh.tar.gz")
        r = self.reuse("--save-kit", fresh, BNN_CUDA_KERNELS="ON")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, f"not using the kit {self.kit}: it was built with kernels OFF, distributed ON, "
                                   ".*; this build would have kernels ON, distributed ON, .*; building bnn")
        self.assertEqual(len(self.compiled()), 1)
        # The build it made instead is the new kit; a kit that fits is not written again.
        with tarfile.open(fresh) as kit:
            self.assertIn("settings=kernels ON, distributed ON, ", kit.extractfile("kit.txt").read().decode())
        os.remove(fresh)
        r = self.build("--build", self.folder("c"), "--no-tests", "--from-kit", self.kit, "--save-kit", fresh,
                       BNN_CUDA_KERNELS="OFF")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.compiled(), [])
        self.assertFalse(os.path.exists(fresh))

    def test_a_kit_built_with_other_flags_is_not_used(self):
        # Flags in the environment: a kit fits the same flags (whitespace aside), and no others.
        self.save(CXXFLAGS=" -O1  -g", CUDAFLAGS="-G", LDFLAGS="-Wl,--as-needed")
        with tarfile.open(self.kit) as kit:
            self.assertIn(", build Release, CXXFLAGS '-O1 -g', CUDAFLAGS '-G', LDFLAGS '-Wl,--as-needed', ",
                          kit.extractfile("kit.txt").read().decode())
        r = self.reuse(CXXFLAGS="-O1 -g", CUDAFLAGS="-G", LDFLAGS="-Wl,--as-needed")
        self.assertEqual((r.returncode, self.compiled()), (0, []), r.stdout + r.stderr)
        for flags in ({}, {"CXXFLAGS": "-O1 -g", "LDFLAGS": "-Wl,--as-needed"}, {"CXXFLAGS": "-O3", "CUDAFLAGS": "-G"}):
            shutil.rmtree(self.folder("b"))
            r = self.reuse(**flags)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertRegex(r.stdout, "it was built with .*, build Release, CXXFLAGS '-O1 -g', CUDAFLAGS '-G', "
                                       "LDFLAGS '-Wl,--as-needed', .*; this build would have .*; building bnn")
            self.assertEqual(len(self.compiled()), 1, flags)
        # A build folder configured before keeps its first flags (CMake's cache), whatever this run's
        # environment says: the kit records those, so it fits a build that has them and no other.
        os.remove(self.kit)
        shutil.rmtree(self.folder("a"))
        self.assertEqual(self.build("--build", self.folder("a"), "--no-tests", CXXFLAGS="-O3",
                                    CUDAFLAGS="-G -lineinfo").returncode, 0)
        shutil.rmtree(os.path.join(self.folder("a"), "src"))
        self.save()
        with tarfile.open(self.kit) as kit:
            self.assertIn(", build Release, CXXFLAGS '-O3', CUDAFLAGS '-G -lineinfo', LDFLAGS '', ",
                          kit.extractfile("kit.txt").read().decode())
        shutil.rmtree(self.folder("b"))
        self.assertEqual(len(self.compiled()), 1)
        r = self.reuse()
        self.assertIn("CXXFLAGS '-O3'", r.stdout)
        self.assertEqual(len(self.compiled()), 1)
        shutil.rmtree(self.folder("b"))
        r = self.reuse(CXXFLAGS="-O3")
        self.assertIn("CUDAFLAGS '-G -lineinfo'", r.stdout)
        self.assertEqual(len(self.compiled()), 1)
        shutil.rmtree(self.folder("b"))
        r = self.reuse(CXXFLAGS="-O3", CUDAFLAGS="-G  -lineinfo")
        self.assertEqual((r.returncode, self.compiled()), (0, []), r.stdout + r.stderr)
        # A cache without CUDA flags (CUDA never enabled in that folder): the environment's, as before.
        with open(os.path.join(self.folder("a"), "CMakeCache.txt")) as f:
            lines = [line for line in f if not line.startswith("CMAKE_CUDA_FLAGS:")]
        with open(os.path.join(self.folder("a"), "CMakeCache.txt"), "w") as f:
            f.writelines(lines)
        os.remove(self.kit)
        self.save(CUDAFLAGS="-O2")
        with tarfile.open(self.kit) as kit:
            self.assertIn(", CXXFLAGS '-O3', CUDAFLAGS '-O2', ", kit.extractfile("kit.txt").read().decode())

    def test_an_nvcc_of_another_cuda_than_torch_s_builds_no_kernels(self):
        # torch cu130 with CUDA 12.4's nvcc first on the PATH: the kernels would link libcudart.so.12 beside
        # torch's .so.13. Refused when asked for, left out otherwise; a matching nvcc changes nothing.
        bin_dir = self.folder("nvcc-bin")
        os.makedirs(bin_dir)
        nvcc = os.path.join(bin_dir, "nvcc")

        def nvcc_of(release):
            write_executable(nvcc, "#!/usr/bin/env bash\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                                   f"echo 'Cuda compilation tools, release {release}, V{release}.41'\n")
        nvcc_of("12.4")
        r = self.build("--build", self.folder("a"), "--no-tests", PATH_FIRST=bin_dir, BNN_CUDA_KERNELS="ON")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(r.stderr, f"build-pip-torch: {nvcc} is CUDA 12's nvcc, and torch was built with CUDA 13.0: "
                                   "bnn's kernels would bring a second CUDA runtime into the process; put CUDA 13's "
                                   "nvcc first on the PATH, or set BNN_CUDA_KERNELS=OFF\n")
        self.assertEqual(self.compiled(), [])
        for kernels in ({}, {"BNN_CUDA_KERNELS": "AUTO"}):
            r = self.build("--build", self.folder("a"), "--no-tests", PATH_FIRST=bin_dir, **kernels)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn(f"build-pip-torch: {nvcc} is CUDA 12's nvcc, and torch was built with CUDA 13.0: bnn's "
                          "kernels would bring a second CUDA runtime into the process; building without them "
                          "(BNN_CUDA_KERNELS=OFF)\n", r.stdout)
            configure = [line for line in self.call_lines if line.startswith("cmake -S")]
            self.assertIn(" -DBNN_CUDA_KERNELS=OFF ", configure[0])
        nvcc_of("13.1")
        r = self.build("--build", self.folder("a"), "--no-tests", PATH_FIRST=bin_dir, BNN_CUDA_KERNELS="ON")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("second CUDA runtime", r.stdout)
        self.assertIn(" -DBNN_CUDA_KERNELS=ON ", [line for line in self.call_lines if line.startswith("cmake -S")][0])
        # A CPU torch has no runtime of its own to clash with.
        nvcc_of("12.4")
        r = self.build("--build", self.folder("a"), "--no-tests", PATH_FIRST=bin_dir, BNN_CUDA_KERNELS="ON",
                       FAKE_TORCH="2.11.0+cpu cpu")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("second CUDA runtime", r.stdout)

    def test_a_kit_that_cannot_be_written_fails_the_build_and_leaves_nothing(self):
        bin_dir = self.folder("failing-tar")
        os.makedirs(bin_dir)
        write_executable(os.path.join(bin_dir, "tar"), f"""#!/usr/bin/env bash
if [[ "$1" == -czf ]]; then echo "tar: write error" >&2; exit 2; fi
exec {shutil.which("tar")} "$@"
""")
        r = self.build("--build", self.folder("a"), "--no-tests", "--save-kit", self.kit,
                       PATH_FIRST=bin_dir)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"build-pip-torch: --save-kit: could not write {self.kit}\n", r.stderr)
        self.assertEqual(os.listdir(os.path.dirname(self.kit)), [])
        # A build that made no bnn has nothing to put in a kit.
        r = self.build("--build", self.folder("none"), "--no-tests", "--save-kit", self.kit, FAKE_BUILDS_NO_BNN="1")
        self.assertEqual((r.returncode, r.stderr), (1, "build-pip-torch: --save-kit: the build made no bnn\n"))
        self.assertFalse(os.path.exists(self.kit))

    def test_a_kit_whose_bnn_does_not_start_here_is_built_again(self):
        self.save(FAKE_KIT_BNN_CANNOT_START="1")
        r = self.reuse(FAKE_KIT_BNN_CANNOT_START="1")
        self.assert_refused_and_built(r, "its bnn does not start here: bnn: error while loading shared libraries: "
                                         "libfmt.so.9: cannot open shared object file ")
        self.assertTrue(os.path.exists(self.folder("b/built_here")))

    def test_bad_kit_arguments_are_named(self):
        missing = self.folder("none.tar.gz")
        r = self.build("--no-tests", "--from-kit", missing)
        self.assertEqual((r.returncode, r.stderr), (2, f"build-pip-torch: --from-kit: no file '{missing}'\n"))
        not_a_kit = self.folder("notes.tar.gz")
        with tarfile.open(not_a_kit, "w:gz") as tar:
            tar.add(os.path.join(self.root, "CMakeLists.txt"), arcname="CMakeLists.txt")
        r = self.build("--build", self.folder("b"), "--no-tests", "--from-kit", not_a_kit)
        self.assertEqual((r.returncode, r.stderr), (2, f"build-pip-torch: --from-kit: '{not_a_kit}' is not a kit "
                                                       "(a .tar.gz with kit.txt and bnn, from --save-kit)\n"))
        self.assertFalse(os.path.exists(self.folder("b/src")))
        self.save()
        r = self.build("--from-kit", self.kit)
        self.assertEqual((r.returncode, r.stderr), (2, "build-pip-torch: --from-kit gives bnn alone: add --no-tests "
                                                       "(and no --target other than bnn)\n"))
        r = self.build("--no-tests", "--target", "bnn_bench_sampling", "--from-kit", self.kit)
        self.assertEqual(r.returncode, 2)
        r = self.build("--target", "bnn_tests", "--save-kit", self.folder("other.tar.gz"))
        self.assertEqual((r.returncode, r.stderr),
                         (2, "build-pip-torch: --save-kit needs bnn built: no --target other than bnn\n"))
        for option, value in [("--jobs", "four"), ("--max-jobs", "0"), ("--jobs", "-2"), ("--max-jobs", "")]:
            r = self.build("--no-tests", option, value)
            self.assertEqual((r.returncode, r.stderr),
                             (2, f"build-pip-torch: {option} takes a whole number >= 1\n"), (option, value))
        self.assertEqual(self.call_lines, [])

    def test_with_debs_the_libraries_are_found_from_the_binary_s_place(self):
        # A build folder that moves (a kit's bnn in another folder) finds the
        # unpacked .debs through $ORIGIN, not through the first folder's path.
        package = self.folder("pkg")
        os.makedirs(os.path.join(package, "DEBIAN"))
        os.makedirs(os.path.join(package, "usr/lib/x86_64-linux-gnu"))
        with open(os.path.join(package, "DEBIAN/control"), "w") as f:
            f.write("Package: libstandin\nVersion: 1\nArchitecture: all\nMaintainer: bnn\nDescription: stand-in\n")
        open(os.path.join(package, "usr/lib/x86_64-linux-gnu/libstandin.so.1"), "w").close()
        os.makedirs(self.folder("debs"))
        subprocess.run(["dpkg-deb", "--build", package, self.folder("debs/libstandin_1_all.deb")], check=True,
                       capture_output=True)
        r = self.build("--build", self.folder("a"), "--no-tests", "--debs", self.folder("debs"), "--save-kit", self.kit)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        configure = next(line for line in self.call_lines if line.startswith("cmake -S"))
        self.assertIn(" -DCMAKE_BUILD_RPATH=$ORIGIN/../deps/usr/lib/x86_64-linux-gnu", configure)
        self.assertNotIn(self.folder("a"), configure.split("-DCMAKE_BUILD_RPATH=")[1])
        self.assertTrue(os.path.exists(self.folder("a/deps/usr/lib/x86_64-linux-gnu/libstandin.so.1")))
        with tarfile.open(self.kit) as kit:
            self.assertRegex(kit.extractfile("kit.txt").read().decode(),
                             r"\nsettings=kernels AUTO, .*, packages libstandin_1_all\.deb\n")
        # The kit's bnn is checked with the library path the caller's later
        # commands have, not this script's, which adds the deps.
        r = self.build("--build", self.folder("b"), "--no-tests", "--debs", self.folder("debs"), "--from-kit", self.kit,
                       LD_LIBRARY_PATH="/opt/callers")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("bnn from the kit", r.stdout)
        self.assertEqual([line for line in self.call_lines if line.startswith("bnn ")],
                         ["bnn version (library path: /opt/callers)"])
        # Other packages: another build.
        shutil.copy(self.folder("debs/libstandin_1_all.deb"), self.folder("debs/libother_1_all.deb"))
        r = self.build("--build", self.folder("c"), "--no-tests", "--debs", self.folder("debs"), "--from-kit", self.kit)
        self.assertIn("packages libother_1_all.deb libstandin_1_all.deb; building bnn", r.stdout)


if __name__ == "__main__":
    unittest.main()
