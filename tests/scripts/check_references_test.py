#!/usr/bin/env python3
"""scripts/check_references.py on this repository and on trees written here with known faults.

    python3 tests/scripts/check_references_test.py   (ctest: References.Script)
"""
# check_references: skip this file (its texts are broken references on purpose)
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "check_references.py")

INDEX = """# Design

## Index of Notes

| Note | where |
| --- | --- |
| Alpha | `src/a.h` |
| Beta steps | `src/b.cpp` |
"""


class CheckReferences(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bnn_check_references")
        self.addCleanup(shutil.rmtree, self.dir)

    def tree(self, files):
        for name, text in files.items():
            path = os.path.join(self.dir, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        return subprocess.run([sys.executable, SCRIPT, self.dir], capture_output=True, text=True)

    def test_this_repository_resolves(self):
        r = subprocess.run([sys.executable, SCRIPT, ROOT], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)

    def test_a_sound_tree_passes(self):
        r = self.tree({
            "docs/design.md": INDEX + "\nSee docs/design.md.\n",
            "src/a.h": "// Note [Alpha]: the definition.\n",
            # A name broken over comment lines, a path without its folders, prose that is no path.
            "src/b.cpp": "// Note [Beta steps]\n// as Note [Alpha] in a.h says, and Note [Beta\n// steps] in the "
                         "header.\n",
            # A Markdown link is no citation, and "in e.g." no path.
            "README.md": "Note [Alpha] in src/a.h; Note [Name] is how notes are cited; Note [the docs](x.md); "
                         "Note [Alpha] in e.g. headers.\n",
        })
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)

    def test_each_fault_is_one_line(self):
        r = self.tree({
            "docs/design.md": INDEX.replace("| Alpha | `src/a.h` |\n", "") + "| Alpha | `src/a.h` |\n"
                              "| Gamma | `src/gone.h` |\n",
            "src/a.h": "// Note [Alpha]\n",
            "src/b.cpp": "// Beta, undefined here.\n",
            # A path on the next comment line is checked too.
            "src/c.cpp": "\n// Note [Delta] and Note [Alpha] in src/b.cpp,\n// docs/missing.md, Note [Alpha]\n"
                         "// in src/c.cpp\n",
        })
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stdout.splitlines(), [
            "docs/design.md:3: the Index of Notes is not in alphabetical order",
            "docs/design.md:7: Note [Beta steps] is not in src/b.cpp",
            "docs/design.md:9: Note [Gamma]: no file src/gone.h",
            "src/c.cpp:2: Note [Delta] is not in docs/design.md's Index of Notes",
            "src/c.cpp:2: Note [Alpha] is in src/a.h, not src/b.cpp",
            "src/c.cpp:3: Note [Alpha] is in src/a.h, not src/c.cpp",
            "src/c.cpp:3: docs/missing.md does not exist",
        ])

    def test_the_index_ends_at_the_next_section_and_lists_each_note_once(self):
        r = self.tree({
            "docs/design.md": INDEX + "| Beta steps | `src/b.cpp` |  \n\n## After\n\n| Zeta | `src/z.h` |\n",
            "src/a.h": "// Note [Alpha]\n",
            "src/b.cpp": "// Note [Beta steps]\n",
            "src/z.h": "// Note [Zeta]\n",
        })
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stdout.splitlines(), [
            "docs/design.md:9: Note [Beta steps] is listed twice in the Index of Notes",
            "src/z.h:1: Note [Zeta] is not in docs/design.md's Index of Notes",
        ])

    def test_no_index_and_bad_usage(self):
        r = self.tree({"docs/design.md": "# Design\n"})
        self.assertEqual((r.returncode, r.stdout), (1, "docs/design.md: no '## Index of Notes' section\n"))
        r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage: scripts/check_references.py ROOT", r.stderr)


if __name__ == "__main__":
    unittest.main()
