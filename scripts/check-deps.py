#!/usr/bin/env python3
"""Check Hooke's dependency rules (docs/architecture.md, "Allowed dependencies").

  python3 scripts/check-deps.py BUILD_DIR

1. Folder layering: every #include "..." of every .c/.h/.cu/.cuh file must resolve to a header
   of its own folder or of a folder that the table in docs/architecture.md allows. The table is
   read from that page, so the page and the check cannot disagree.
2. No call cycles between files: from the objects of BUILD_DIR (nm's defined and undefined
   symbols of the project's own objects, CUDA's included when built), the graph "file A calls
   a function defined in file B" must have no circle (a reference to a table of functions is
   not a call). Each strongly connected set of more than one file is printed with one called
   function for each use between its files.

Exits 1 on any violation, 2 on bad usage; prints one summary line on success.
"""
import os
import re
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join("docs", "architecture.md")
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
TABLE_HEADING = "## Allowed dependencies"
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def fail_usage(msg):
    print(f"check-deps: {msg}", file=sys.stderr)
    sys.exit(2)


def read_table():
    """The folder table of docs/architecture.md: {folder: set of folders it may include from}."""
    path = os.path.join(ROOT, DOC)
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        fail_usage(f"cannot read {DOC}: {e.strerror}")
    try:
        start = lines.index(TABLE_HEADING)
    except ValueError:
        fail_usage(f'{DOC} has no "{TABLE_HEADING}" section: put the folder table back')
    table, lineno = {}, {}
    in_table = False
    for i in range(start + 1, len(lines)):
        line = lines[i].strip()
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if in_table:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if not in_table:  # the header row
            in_table = True
            continue
        if set(cells[0]) <= set("-: "):
            continue
        folder = cells[0].strip("`").rstrip("/")
        allowed = set()
        for item in cells[1].split(","):
            item = item.strip().strip("`").rstrip("/")
            if item and item not in ("-", "—", "nothing"):
                allowed.add(item)
        if folder in table:
            fail_usage(f"{DOC}:{i + 1}: folder {folder} is in the table twice")
        table[folder], lineno[folder] = allowed, i + 1
    if not table:
        fail_usage(f'{DOC}: no table under "{TABLE_HEADING}"')
    for folder, allowed in table.items():
        for a in sorted(allowed - set(table)):
            fail_usage(f"{DOC}:{lineno[folder]}: {folder} may use {a}, which is not in the table")
    return table


def folder_of(rel, table):
    """A file's row of the table, the longest that fits (app/case/x.c: app/case, else app)."""
    parts = rel.split("/")[:-1]
    for n in range(len(parts), 0, -1):
        f = "/".join(parts[:n])
        if f in table:
            return f
    return None


def may_use(table, folder, other):
    return other is None or other == folder or other in table[folder]


def source_files():
    out = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel_dir = os.path.relpath(dirpath, ROOT)
        # not hidden folders, nor build folders (CMake's own test sources are in them)
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith((".", "build")) and d != "out"
            and not os.path.isfile(os.path.join(dirpath, d, "CMakeCache.txt")))
        for name in sorted(filenames):
            if name.endswith(SOURCE_EXT):
                out.append(os.path.normpath(os.path.join(rel_dir, name)).replace(os.sep, "/"))
    return out


def check_includes(table):
    files = source_files()
    headers = {f for f in files if f.endswith((".h", ".cuh"))}
    by_tail = defaultdict(set)  # "pc/pc_impl.h" and "pc_impl.h" -> solver/pc/pc_impl.h
    for h in headers:
        parts = h.split("/")
        for n in range(1, len(parts) + 1):
            by_tail["/".join(parts[-n:])].add(h)
    errors, count = [], 0
    for rel in files:
        folder = folder_of(rel, table)
        if folder is None:
            errors.append(f"{rel}: its folder is in no row of the table in {DOC}: add one")
            continue
        with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as fh:
            for ln, line in enumerate(fh, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                count += 1
                name = m.group(1)
                # as the compiler does: first beside the including file, then the include
                # paths (any project folder holding a header of that relative path)
                beside = os.path.normpath(os.path.join(os.path.dirname(rel), name))
                beside = beside.replace(os.sep, "/")
                if beside in headers:
                    found = {beside}
                else:
                    found = by_tail.get(os.path.normpath(name).replace(os.sep, "/"), set())
                    if not found:
                        continue  # not a project header (a library's, or a generated one)
                bad = sorted(t for t in found if not may_use(table, folder, folder_of(t, table)))
                if not bad:
                    continue
                bad_folders = ", ".join(sorted({folder_of(t, table) for t in bad}))
                if len(bad) == len(found):
                    errors.append(f"{rel}:{ln}: includes {' or '.join(bad)} from folder "
                                  f"{bad_folders}, which folder {folder} may not use")
                else:
                    errors.append(f"{rel}:{ln}: includes {name}, which names several headers "
                                  f"({', '.join(sorted(found))}); {', '.join(bad)} is in folder "
                                  f"{bad_folders}, which folder {folder} may not use: give the "
                                  f"path of the one meant")
    return errors, len(files), count


def project_objects(build):
    """(source file, object path) for every object of the project's own targets."""
    cmf = os.path.join(build, "CMakeFiles")
    if not os.path.isdir(cmf):
        fail_usage(f"{build} has no CMakeFiles folder: build first (cmake --build {build})")
    # objects the build still makes (an old folder may hold those of a source since removed
    # from a target, say CUDA's after a reconfiguration without it)
    built = None
    ninja = os.path.join(build, "build.ninja")
    if os.path.isfile(ninja):
        with open(ninja, encoding="utf-8", errors="replace") as fh:
            built = set(re.findall(r"CMakeFiles/[^\s:$|]+?\.o(?=[\s:|]|$)", fh.read(), re.M))
    out = []
    for target in sorted(os.listdir(cmf)):
        if not target.endswith(".dir"):
            continue
        tdir = os.path.join(cmf, target)
        for dirpath, _, filenames in os.walk(tdir):
            for name in filenames:
                if not name.endswith(".o"):
                    continue
                obj = os.path.join(dirpath, name)
                src = os.path.relpath(obj, tdir)[: -len(".o")].replace(os.sep, "/")
                rel = os.path.relpath(obj, build).replace(os.sep, "/")
                if os.path.isfile(os.path.join(ROOT, src)) and (built is None or rel in built):
                    out.append((src, obj))
    return out


def read_symbols(objects):
    """{source: (defined globals, undefined)} from one nm run over all objects."""
    syms = {}
    obj_to_src = {obj: src for src, obj in objects}
    try:
        res = subprocess.run(["nm", "-A", "--defined-only", "-g"] + [o for _, o in objects],
                             capture_output=True, text=True, check=True)
        res_u = subprocess.run(["nm", "-A", "-u"] + [o for _, o in objects],
                               capture_output=True, text=True, check=True)
    except FileNotFoundError:
        fail_usage("nm not found (binutils)")
    except subprocess.CalledProcessError as e:
        fail_usage(f"nm failed: {e.stderr.strip()}")
    for src, _ in objects:
        syms[src] = (set(), set())
    for line in res.stdout.splitlines():
        # "path.o:0000000000000000 T name"; symbol names (not demangled) hold no colon
        obj, _, rest = line.rpartition(":")
        fields = rest.split()
        if len(fields) < 2 or obj not in obj_to_src:
            continue
        kind, name = fields[-2], fields[-1]
        # functions only: a table of functions (an ops table, a registry) is how a lower file
        # reaches a higher one without calling it. Weak definitions (C++ inline functions,
        # templates) live in every user.
        if kind != "T":
            continue
        syms[obj_to_src[obj]][0].add(name)
    for line in res_u.stdout.splitlines():
        obj, _, rest = line.rpartition(":")
        fields = rest.split()
        if not fields or obj not in obj_to_src:
            continue
        syms[obj_to_src[obj]][1].add(fields[-1])
    return syms


def demangle(names):
    names = sorted(names)
    if not any(n.startswith("_Z") for n in names):
        return {n: n for n in names}
    try:
        res = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                             check=True)
        out = res.stdout.splitlines()
        if len(out) == len(names):
            return dict(zip(names, out))
    except (OSError, subprocess.CalledProcessError):
        pass
    return {n: n for n in names}


def strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative; components in a stable order."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return comps


def check_cycles(build):
    objects = project_objects(build)
    if not objects:
        fail_usage(f"no object files of the project under {build}/CMakeFiles: build first")
    syms = read_symbols(objects)
    definer = defaultdict(set)
    for src, (defined, _) in syms.items():
        for s in defined:
            definer[s].add(src)
    uses = defaultdict(lambda: defaultdict(list))  # uses[a][b] = symbols of b that a uses
    for src, (defined, undefined) in syms.items():
        for s in undefined:
            for d in definer.get(s, ()):
                if d != src:
                    uses[src][d].append(s)
    nodes = sorted(syms)
    edges = {n: set(uses[n]) for n in nodes}
    comps = [c for c in strongly_connected(nodes, edges) if len(c) > 1]
    comps.sort(key=lambda c: c[0])
    errors = []
    for comp in comps:
        members = set(comp)
        lines = [f"call cycle between {len(comp)} files: {', '.join(comp)}"]
        pairs = [(a, b) for a in comp for b in sorted(uses[a]) if b in members]
        names = demangle({min(uses[a][b]) for a, b in pairs})
        for a, b in pairs:
            first = min(uses[a][b])
            more = len(uses[a][b]) - 1
            lines.append(f"  {a} -> {b}: {names[first]}" + (f" (+{more} more)" if more else ""))
        errors.append("\n".join(lines))
    nedges = sum(len(e) for e in edges.values())
    return errors, len(nodes), nedges


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    build = sys.argv[1]
    table = read_table()
    inc_errors, nfiles, nincludes = check_includes(table)
    cyc_errors, nobjects, nedges = check_cycles(build)
    for e in inc_errors + cyc_errors:
        print(e)
    if inc_errors or cyc_errors:
        print(f"check-deps: {len(inc_errors)} include violation(s), {len(cyc_errors)} call "
              f"cycle(s); the rules are in {DOC}")
        sys.exit(1)
    print(f"check-deps: ok ({nincludes} includes in {nfiles} files follow {DOC}; "
          f"{nobjects} objects, {nedges} file-to-file uses, no cycle)")


if __name__ == "__main__":
    main()
