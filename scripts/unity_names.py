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
files: comments, string and character literals (raw ones too),
preprocessor lines and attributes are dropped; a declaration's name is the
identifier before its parameter list (a function; std::function<int(int)>
is a type and decltype(...) no name), after struct/class/union/enum, after
`using`, or before its `=`, `{` or `[` (a variable). Macro calls at
namespace scope (TEST(...), all capitals) declare nothing. It does not see
the second name of `int a, b;`, a variable declared with its struct
(`struct S {} s;`), unscoped enumerators, or what an inline namespace
holds; bnn's sources have none of these file-local.

Prints "FOLDER: NAME in FILE, FILE" for each shared name and exits 1, or
prints "no file-local name is shared within a target" and exits 0; exits 2
for a ROOT that is not a folder, or more than one argument.

    scripts/unity_names.py [ROOT]      (default: the repository)

Standard library only.
"""
import os
import re
import sys

LIBRARY_FOLDERS = ["samplers", "data_loaders", "models"]
# Operators of two characters are one token, so that `->`, `==` or `>=` is
# not read as a bracket or an initialiser's `=`.
TOKEN = re.compile(r"[A-Za-z_]\w*|::|->|==|!=|<=|>=|<<|>>|&&|\|\||\S")
# Attributes ([[nodiscard]], __attribute__((...)), alignas(...)) declare nothing.
ATTRIBUTE = re.compile(r"\[\[.*?\]\]|__attribute__\s*\(\(.*?\)\)|\balignas\s*\([^()]*\)", re.S)
# Words before a parenthesis that is not a function's parameter list.
NOT_A_NAME = {"decltype", "alignas", "noexcept", "sizeof", "alignof", "static_assert", "catch", "throw",
              "return", "typeid", "requires"}
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
    text = ATTRIBUTE.sub(" ", text)
    return TOKEN.findall(text)


def template_prefix_end(head):
    """The index after the `>` that closes a leading `template <...>` (`>>`
    closes two), len(head) + 1 while it is still open, 0 without one."""
    if not head or head[0] != "template":
        return 0
    depth = 0
    for i, t in enumerate(head):
        if t == "<":
            depth += 1
        elif t in (">", ">>"):
            depth -= len(t)
            if depth <= 0:
                return i + 1
    return len(head) + 1


def strip_templates(head):
    """The head without `template <...>` prefixes."""
    while head and head[0] == "template":
        head = head[template_prefix_end(head):]
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
            return function_name(head)
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


def function_name(head):
    """The name before a declaration's parameter list: the first parenthesis
    outside angle brackets (std::function<int(int)> is a type) that follows
    a name, not decltype(...) and the like; None for a member defined out of
    its class (A::f) or where there is no such name."""
    angles, i = 0, 0
    while i < len(head):
        t = head[i]
        if t == "<":
            angles += 1
        elif t in (">", ">>"):
            angles = max(0, angles - len(t))
        elif t == "(" and angles == 0:
            before = head[i - 1] if i else ""
            if re.match(r"[A-Za-z_]\w*$", before) and before not in NOT_A_NAME:
                return None if i >= 2 and head[i - 2] == "::" else before
            depth = 0  # skip decltype(...) and the like
            while i < len(head):
                depth += {"(": 1, ")": -1}.get(head[i], 0)
                if depth == 0:
                    break
                i += 1
        elif t in ("=", "{") and angles == 0:
            return None
        i += 1
    return None


def open_brackets(head):
    """How many parentheses, and the angle brackets of a leading `template <`,
    are open at the end of head: an `=` there is a default argument, not an
    initialiser."""
    depth = sum({"(": 1, ")": -1}.get(t, 0) for t in head)
    return depth + (1 if template_prefix_end(head) > len(head) else 0)


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
        first = statement.index("(") if "(" in statement else len(statement)
        local = "anon" in scopes or "static" in statement[:first]
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
            if t == "=" and not in_initialiser and head and open_brackets(head) == 0:
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
    if not os.path.isdir(root):
        print(f"unity_names: {root} is not a folder; give the repository's root", file=sys.stderr)
        return 2
    found = shared(root)
    for group, name, paths in found:
        print(f"{group}: {name} in {', '.join(paths)}")
    if not found:
        print("no file-local name is shared within a target")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
