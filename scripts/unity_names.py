#!/usr/bin/env python3
"""Finds file-local names that two sources of one target share.

With unity builds (Note [Unity builds] in cmake/unity_build.cmake) the
sources of a target are compiled in batches, one translation unit per batch,
so what each file declared for itself alone (in an anonymous namespace, or
`static` at namespace scope) meets the other files' names. Two definitions
of one name are a compile error, but two functions of one name with other
parameters become overloads of each other, and a call may silently pick the
other file's. This names every such pair before the compiler can miss it.

A target's sources: every .cpp of samplers/, data_loaders/ and models/;
every .cpp of one folder of src/; every *_test.cpp under tests/ (one test
program; tests/data holds fixtures). The parser knows enough C++ for bnn's
files: comments, string and character literals (raw ones too) and
preprocessor lines are dropped; a declaration's name is the identifier
before its first parenthesis (a function), after struct/class/union/enum,
after `using`, or before its `=`, `{` or `[` (a variable). Macro calls at
namespace scope (TEST(...), all capitals) declare nothing.

Prints "FOLDER: NAME in FILE, FILE" for each shared name and exits 1, or
prints "no file-local name is shared within a target" and exits 0.

    scripts/unity_names.py [ROOT]      (default: the repository)

Standard library only.
"""
import os
import re
import sys

LIBRARY_FOLDERS = ["samplers", "data_loaders", "models"]
TOKEN = re.compile(r"[A-Za-z_]\w*|::|\S")
RAW_STRING = re.compile(r'R"([^()\\\s]{0,16})\(.*?\)\1"', re.S)
LITERAL_OR_COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
PREPROCESSOR = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
MACRO = re.compile(r"^[A-Z][A-Z0-9_]*$")
TYPE_KEYS = {"struct", "class", "union", "enum"}


def groups(root):
    """{group name: [source paths relative to root]}."""
    found = {}

    def add(group, directory, keep):
        full = os.path.join(root, directory)
        if not os.path.isdir(full):
            return
        for folder, subfolders, names in os.walk(full):
            subfolders.sort()
            if os.path.relpath(folder, root).split(os.sep)[:2] == ["tests", "data"]:
                subfolders[:] = []
                continue
            for name in sorted(names):
                if keep(name):
                    found.setdefault(group, []).append(os.path.relpath(os.path.join(folder, name), root))
            if group != "tests":
                subfolders[:] = []  # a library is one folder

    for folder in LIBRARY_FOLDERS:
        add(folder, folder, lambda n: n.endswith(".cpp"))
    src = os.path.join(root, "src")
    if os.path.isdir(src):
        for sub in sorted(os.listdir(src)):
            add("src/" + sub, os.path.join("src", sub), lambda n: n.endswith(".cpp"))
    add("tests", "tests", lambda n: n.endswith("_test.cpp"))
    return found


def tokens(text):
    text = RAW_STRING.sub(" 0 ", text)
    text = LITERAL_OR_COMMENT.sub(lambda m: " " if m.group().startswith("/") else " 0 ", text)
    text = PREPROCESSOR.sub(" ", text)
    return TOKEN.findall(text)


def strip_templates(head):
    """The head without `template <...>` prefixes."""
    while head and head[0] == "template":
        depth, i = 0, 1
        while i < len(head):
            if head[i] == "<":
                depth += 1
            elif head[i] == ">":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        head = head[i + 1:]
    return head


def declared_name(head):
    """The name a namespace-scope declaration with these leading tokens declares, or None."""
    head = strip_templates(head)
    if not head or (MACRO.match(head[0]) and head[1:2] == ["("]) or "operator" in head:
        return None
    if head[0] == "using":
        return head[1] if len(head) > 2 and head[2] == "=" else None
    if head[0] in ("typedef", "friend", "extern"):
        return None
    for i, t in enumerate(head):
        if t in TYPE_KEYS:
            j = i + 1
            while j < len(head) and head[j] in ("class", "struct"):
                j += 1
            name = head[j] if j < len(head) else None
            return name if name and re.match(r"[A-Za-z_]", name) else None
        if t == "(":
            # A function (or a variable initialised with parentheses).
            if i == 0 or not re.match(r"[A-Za-z_]", head[i - 1]) or (i >= 2 and head[i - 2] == "::"):
                return None
            return head[i - 1]
        if t in ("=", "[", "{"):
            break
    cut = len(head)
    for k, t in enumerate(head):
        if t in ("=", "[", "{"):
            cut = k
            break
    last = [t for t in head[:cut] if re.match(r"[A-Za-z_]\w*$", t)]
    if len(last) < 2 or (cut >= 2 and head[cut - 2] == "::"):
        return None  # a lone expression, or a member defined out of its class
    return last[-1]


def nesting(head):
    """How many parentheses and angle brackets are open at the end of head."""
    depth = 0
    for t in head:
        if t in ("(", "<"):
            depth += 1
        elif t in (")", ">"):
            depth -= 1
    return depth


def local_names(text):
    """The names a source file declares for itself alone: at namespace scope,
    inside an anonymous namespace or `static`."""
    names = set()
    scopes = []  # "ns", "anon" or "other"
    head, in_initialiser = [], False
    toks = tokens(text)
    i = 0

    def at_namespace_scope():
        return all(s in ("ns", "anon") for s in scopes)

    def note(statement):
        if not statement:
            return
        local = "anon" in scopes or statement[0] == "static"
        body = [t for t in statement if t not in ("static", "inline", "constexpr", "const", "thread_local")]
        name = declared_name(body) if local else None
        if name:
            names.add(name)

    while i < len(toks):
        t = toks[i]
        if at_namespace_scope():
            if t == "namespace" and not head:
                j = i + 1
                while j < len(toks) and toks[j] not in ("{", "=", ";"):
                    j += 1
                if j < len(toks) and toks[j] == "{":
                    scopes.append("anon" if j == i + 1 else "ns")
                    i = j + 1
                    continue
                while j < len(toks) and toks[j] != ";":  # an alias
                    j += 1
                i = j + 1
                continue
            if t == "extern" and i + 2 < len(toks) and toks[i + 1] == "0" and toks[i + 2] == "{":
                scopes.append("ns")  # extern "C" {
                i += 3
                continue
            if t == "{":
                if not in_initialiser:
                    note(head)
                scopes.append("other")
                i += 1
                continue
            if t == "}":
                if scopes:
                    scopes.pop()
                head, in_initialiser = [], False
                i += 1
                continue
            if t == ";":
                if not in_initialiser:
                    note(head)
                head, in_initialiser = [], False
                i += 1
                continue
            if t == "=" and not in_initialiser and head and nesting(head) == 0:
                note(head + ["="])
                in_initialiser = True
            head.append(t)
            i += 1
            continue
        # Inside a body: only braces matter.
        if t == "{":
            scopes.append("other")
        elif t == "}":
            scopes.pop()
            if at_namespace_scope() and not in_initialiser:
                # The end of a function or class body; `};` and `} x;` follow a class.
                j = i + 1
                if j < len(toks) and toks[j] == ";":
                    i = j
                head = [] if not in_initialiser else head
        i += 1
    return names


def shared(root):
    """[(group, name, [files])] for names declared file-locally by two or more files of a group."""
    out = []
    for group, files in sorted(groups(root).items()):
        where = {}
        for path in files:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                for name in local_names(f.read()):
                    where.setdefault(name, []).append(path)
        out += [(group, name, paths) for name, paths in sorted(where.items()) if len(paths) > 1]
    return out


def main(argv):
    if len(argv) > 2:
        print("usage: scripts/unity_names.py [ROOT]", file=sys.stderr)
        return 2
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    found = shared(root)
    for group, name, paths in found:
        print(f"{group}: {name} in {', '.join(paths)}")
    if not found:
        print("no file-local name is shared within a target")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
