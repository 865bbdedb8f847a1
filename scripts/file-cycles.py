#!/usr/bin/env python3
"""File-level call graph of the object files of one or more source folders, and its cycles.

    scripts/file-cycles.py BUILD_DIR [FOLDER ...] [--graph]

FOLDER (default: assembly) names a source folder; its objects are BUILD_DIR/**/FOLDER/*.o.
From `nm`, file A calls file B when A has an undefined symbol that B defines. Prints every
simple cycle between files (none: "no cycles"), with --graph also each file's calls and the
symbols behind them. Exits 1 when there is a cycle. Calls to files outside the folders given
(mesh/, common/, ...) are not followed; static functions and inline headers are invisible.
"""
import glob
import os
import subprocess
import sys


def symbols(obj):
    """(defined, undefined) global symbols of one object file."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        name, kind = f[0], f[1]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper():  # global: T, D, B, R, C, ...
            defined.add(name)
    return defined, undefined


def cycles(graph):
    """Every simple cycle, each listed once from its smallest file."""
    found = []
    nodes = sorted(graph)
    for start in nodes:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph[node]):
                if nxt == start:
                    found.append(path + [start])
                elif nxt > start and nxt not in path:
                    stack.append((nxt, path + [nxt]))
    return sorted(found, key=lambda c: (len(c), c))


def main(argv):
    show_graph = "--graph" in argv
    args = [a for a in argv if a != "--graph"]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args else 2
    build, folders = args[0], args[1:] or ["assembly"]
    objs = []
    for folder in folders:
        found = sorted(glob.glob(os.path.join(build, "**", folder, "*.o"), recursive=True))
        if not found:
            print(f"file-cycles: no object files under {build}/**/{folder}/; build first "
                  f"(cmake --build {build})", file=sys.stderr)
            return 2
        objs += [(f"{folder}/{os.path.basename(o)[:-2]}", o) for o in found]
    defs, undefs, owner = {}, {}, {}
    for name, obj in objs:
        defs[name], undefs[name] = symbols(obj)
        for s in defs[name]:
            owner[s] = name
    graph = {name: {} for name, _ in objs}
    for name, _ in objs:
        for s in sorted(undefs[name]):
            if s in owner and owner[s] != name:
                graph[name].setdefault(owner[s], []).append(s)
    if show_graph:
        for name in sorted(graph):
            calls = graph[name]
            print(f"{name} ->" + ("" if calls else " (nothing)"))
            for dst in sorted(calls):
                print(f"    {dst}: {', '.join(calls[dst])}")
        print()
    found = cycles(graph)
    for c in found:
        print("cycle: " + " -> ".join(c))
    print(f"{len(found)} cycle(s) among {len(objs)} files" if found else
          f"no cycles among {len(objs)} files")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
