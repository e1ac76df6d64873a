#!/usr/bin/env python3
"""Do the project's cross-references resolve?

    scripts/check_references.py ROOT

Long explanations live beside the code as `Note [Name]` comments and are
cited by name elsewhere, often as "Note [Name] in path/file.h"; design notes
live in docs/*.md. This reads every text file under ROOT (the files git
tracks when ROOT is a git work tree, else every file outside hidden and build
folders) and checks that:

- every Note cited is listed in docs/design.md's "Index of Notes" (a table
  of `| Name | `file` |` rows, in alphabetical order), and every row names
  a file that holds the Note;
- a citation's "in PATH" names the file the index gives (PATH may leave out
  leading folders: "in run_directory.h");
- every docs/*.md file cited exists.

A file holding the line "check_references: skip this file" (a test of this
script, whose texts are broken on purpose) is not read.

Prints one line per broken reference (file:line: what is wrong) and exits 1
if there is one, 0 if every reference resolves, 2 for bad usage.
Standard library only.
"""
import os
import re
import subprocess
import sys

INDEX_HEADING = "## Index of Notes"
# "Note [Name]" (not a Markdown link "Note [text](url)"), its name possibly broken over comment lines; an
# optional " in PATH" after it, perhaps on the next comment line, where PATH has a folder or a source file's
# extension (so "in the header" and "in e.g." are no paths).
_GAP = r"(?:\s|//|#)+"
CITATION = re.compile(r"Note\s+\[([^\]]+)\](?!\()(?:" + _GAP + "in" + _GAP +
                      r"`?([\w-]+/[\w./-]*\w|[\w-]+\.(?:h|cpp|cu|cmake|py|sh|md|yaml|txt))\b)?")
PLACEHOLDERS = {"Name", "..."}
SKIP_MARK = re.compile(r"^\W*check_references: skip this file\b", re.M)


def text_files(root):
    try:
        listed = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True)
        names = listed.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        names = []
        for folder, subfolders, files in os.walk(root):
            # Hidden folders and build folders are not the project's.
            subfolders[:] = [s for s in subfolders if not s.startswith(".")
                             and not os.path.exists(os.path.join(folder, s, "CMakeCache.txt"))]
            names += [os.path.relpath(os.path.join(folder, f), root) for f in files]
    texts = {}
    for name in names:
        try:
            with open(os.path.join(root, name), encoding="utf-8") as f:
                texts[name] = f.read()
        except (OSError, UnicodeDecodeError):
            pass  # a binary file, or one deleted but still listed
    return texts


def line_of(text, position):
    return text.count("\n", 0, position) + 1


def note_pattern(name):
    # The name as the code may write it: broken over comment lines.
    return re.compile(r"Note\s+\[" + r"(?:\s|//|#)+".join(map(re.escape, name.split())) + r"\]")


def check(root):
    texts = text_files(root)
    problems = []
    design = texts.get("docs/design.md")
    if design is None or INDEX_HEADING not in design:
        return [f"docs/design.md: no '{INDEX_HEADING}' section"]
    start = design.index(INDEX_HEADING)
    end = design.find("\n## ", start + 1)
    section = design[start:end if end >= 0 else len(design)]
    index, order = {}, []
    for m in re.finditer(r"^\| ([^|`]+?) \| `([^`]+)` \|[ \t]*$", section, re.M):
        line = line_of(design, start + m.start())
        if m.group(1) in index:
            problems.append(f"docs/design.md:{line}: Note [{m.group(1)}] is listed twice in the Index of Notes")
        index[m.group(1)] = (m.group(2), line)
        order.append(m.group(1))
    if order != sorted(order, key=str.casefold):
        problems.append(f"docs/design.md:{line_of(design, start)}: the Index of Notes is not in alphabetical order")
    for name, (path, line) in index.items():
        if path not in texts:
            problems.append(f"docs/design.md:{line}: Note [{name}]: no file {path}")
        elif not note_pattern(name).search(texts[path]):
            problems.append(f"docs/design.md:{line}: Note [{name}] is not in {path}")
    for path, text in sorted(texts.items()):
        if SKIP_MARK.search(text):
            continue
        for m in CITATION.finditer(text):
            name = " ".join(re.sub(r"(//|#)", " ", m.group(1)).split())
            if name in PLACEHOLDERS or "{" in name:  # a placeholder, or a format string's
                continue
            where = f"{path}:{line_of(text, m.start())}"
            if name not in index:
                problems.append(f"{where}: Note [{name}] is not in docs/design.md's Index of Notes")
            elif m.group(2) and not ("/" + index[name][0]).endswith("/" + m.group(2)):
                problems.append(f"{where}: Note [{name}] is in {index[name][0]}, not {m.group(2)}")
        for m in re.finditer(r"\bdocs/[\w-]+\.md\b", text):
            if m.group(0) not in texts:
                problems.append(f"{path}:{line_of(text, m.start())}: {m.group(0)} does not exist")
    return problems


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: scripts/check_references.py ROOT", file=sys.stderr)
        return 2
    problems = check(argv[1])
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
