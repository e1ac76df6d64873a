#!/usr/bin/env python3
"""Finds include cycles between units of bnn's sources.

A unit is a header and its source file (src/pipeline/run.h + run.cpp). Unit A
depends on unit B when A's header or source includes B's header. A cycle
(run includes evaluate, evaluate includes run) means neither can be
understood or tested without the other. Prints each cycle and exits 1, or
prints "no include cycles" and exits 0.

    scripts/include_cycles.py [ROOT]      (default: the repository)
"""
import os
import re
import sys

FOLDERS = ["src", "samplers", "models", "data_loaders"]


def unit_graph(root):
    graph = {}
    for folder in FOLDERS:
        for directory, _, names in os.walk(os.path.join(root, folder)):
            for name in names:
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.relpath(os.path.join(directory, name), root)
                unit = os.path.splitext(path)[0]
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    for header in re.findall(r'^#include "([^"]+)"', f.read(), re.M):
                        target = os.path.splitext(header)[0]
                        if target != unit and os.path.exists(os.path.join(root, header)):
                            graph.setdefault(unit, set()).add(target)
    return graph


def cycles(graph):
    found, state = [], {}

    def visit(unit, stack):
        state[unit] = "open"
        stack.append(unit)
        for nxt in sorted(graph.get(unit, ())):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[unit] = "done"

    for unit in sorted(graph):
        if unit not in state:
            visit(unit, [])
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    found = cycles(unit_graph(root))
    for cycle in found:
        print("include cycle: " + " -> ".join(cycle))
    if not found:
        print("no include cycles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
