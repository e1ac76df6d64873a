#!/usr/bin/env python3
"""scripts/runtime-packages.sh: the Debian packages a binary needs to start,
on bnn itself and on programs built here that link libraries of no package,
or a library that is gone.

    python3 tests/scripts/runtime_packages_test.py   (ctest: RuntimePackagesScript.OnBuiltPrograms)
"""
import os
import shutil
import subprocess
import tempfile
import unittest

from script_test_support import BNN, ROOT

SCRIPT = os.path.join(ROOT, "scripts", "runtime-packages.sh")


def run(*args):
    return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True)


def debian_owns_libtorch():
    """Whether the LibTorch bnn links belongs to a Debian package (not a pip wheel's)."""
    ldd = subprocess.run(["ldd", BNN], capture_output=True, text=True).stdout
    paths = [line.split("=>")[1].split()[0] for line in ldd.splitlines() if "libtorch_cpu" in line and "=>" in line]
    return bool(paths) and subprocess.run(["dpkg-query", "-S", os.path.realpath(paths[0])],
                                          capture_output=True).returncode == 0


class RuntimePackagesScript(unittest.TestCase):
    def setUp(self):
        missing = [tool for tool in ("dpkg-query", "readelf", "ldd", "cc") if shutil.which(tool) is None]
        if missing:
            self.skipTest("needs " + ", ".join(missing) + " (a Debian system with a C compiler)")
        self.dir = tempfile.mkdtemp(prefix="bnn_runtime_packages")
        self.addCleanup(shutil.rmtree, self.dir)

    def build(self, name, source, *flags):
        path = os.path.join(self.dir, name)
        with open(path + ".c", "w") as f:
            f.write(source)
        subprocess.run(["cc", "-o", path, path + ".c", *flags], check=True, cwd=self.dir)
        return path

    def test_bnn_needs_libtorch_and_every_package_listed_is_installed(self):
        if not debian_owns_libtorch():
            self.skipTest("bnn links a LibTorch that no Debian package holds (a pip wheel's): it has no package list")
        r = run(BNN)
        self.assertEqual(r.returncode, 0, r.stderr)
        packages = r.stdout.splitlines()
        self.assertEqual(packages, sorted(set(packages)))
        self.assertTrue(any(p.startswith("libtorch") for p in packages), packages)
        for p in ["libc6", "libstdc++6"]:
            self.assertIn(p, packages)
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}\\n", *packages], capture_output=True, text=True)
        self.assertEqual(status.stdout.splitlines(), ["install ok installed"] * len(packages))

    def test_a_library_of_no_package_or_not_found_is_named(self):
        self.build("libnowhere.so", "int nowhere(void) { return 3; }\n", "-shared", "-fPIC")
        program = self.build("uses_nowhere", "int nowhere(void);\nint main(void) { return nowhere(); }\n",
                             "-L.", "-lnowhere", f"-Wl,-rpath,{self.dir}")
        r = run(program)
        self.assertEqual((r.returncode, r.stdout, r.stderr),
                         (1, "", f"runtime-packages: libnowhere.so ({self.dir}/libnowhere.so) "
                                 "belongs to no Debian package\n"))
        os.remove(os.path.join(self.dir, "libnowhere.so"))
        r = run(program)
        self.assertEqual((r.returncode, r.stderr),
                         (1, f"runtime-packages: libnowhere.so is not found (ldd {program})\n"))

    def test_a_plain_c_program_needs_libc_only(self):
        program = self.build("plain", "int main(void) { return 0; }\n")
        r = run(program)
        self.assertEqual((r.returncode, r.stdout), (0, "libc6\n"))

    def test_not_a_program(self):
        r = run(os.path.join(ROOT, "README.md"))
        self.assertEqual((r.returncode, r.stderr),
                         (2, f"runtime-packages: {ROOT}/README.md links no shared library "
                             "(not a dynamic ELF file?)\n"))
        r = run(os.path.join(self.dir, "missing"))
        self.assertEqual((r.returncode, r.stderr), (2, f"runtime-packages: no file {self.dir}/missing\n"))


if __name__ == "__main__":
    unittest.main()
