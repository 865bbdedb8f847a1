#!/usr/bin/env python3
"""Compare the displacements of a distributed run's .pvtu (its pieces) with one process's .vtu.

usage: compare_vtu.py ONE.vtu MANY.pvtu TOL [corner] [unsupported] [stress]

Both written with output.ascii: true. Nodes are matched by their coordinates (a node on a
partition boundary appears in several pieces: every copy must agree). Checks that the .pvtu
lists the pieces' arrays with their types and components (what ParaView needs to open them as
one model), that every node of the one-process mesh is in a piece and no piece has another,
that the pieces hold each cell once, and prints the relative difference of the displacements
max_i |u_many - u_one| / max_i |u_one|; exits 1 above TOL. With `corner` a node must lie in
three pieces or more (partitions meeting at a corner), with `unsupported` a piece must hold no
reaction at all (a part without a support), with `stress` the nodal stresses and von Mises
stresses must agree too, max_i |s_many - s_one| / max_i |s_one| within TOL (the recovery on
each part against the whole model's)."""
import math
import os
import sys
import xml.etree.ElementTree as ET


def arrays(piece):
    """name -> (type, components, values) of a Piece's point and cell data, and the points."""
    out = {}
    for sec in ("PointData", "CellData", "Points", "Cells"):
        node = piece.find(sec)
        if node is None:
            continue
        for a in node.findall("DataArray"):
            name = a.get("Name") or sec
            vals = [float(v) for v in a.text.split()] if a.text else []
            out[(sec, name)] = (a.get("type"), int(a.get("NumberOfComponents") or 1), vals)
    return out


def read_vtu(path):
    root = ET.parse(path).getroot()
    piece = root.find("UnstructuredGrid").find("Piece")
    return int(piece.get("NumberOfPoints")), int(piece.get("NumberOfCells")), arrays(piece)


def nodes(a, name="displacement", width=3):
    pts = a[("Points", "Points")][2]
    u = a[("PointData", name)][2]
    return [((round(pts[3 * i], 9), round(pts[3 * i + 1], 9), round(pts[3 * i + 2], 9)),
             u[width * i:width * i + width]) for i in range(len(pts) // 3)]


def field_difference(one, pieces, name, width):
    """max |many - one| / max |one| of a nodal field, every piece's copy of a node compared."""
    ref = dict(nodes(one, name, width))
    smax = max(max(abs(v) for v in s) for s in ref.values())
    d = 0.0
    for a in pieces:
        for x, s in nodes(a, name, width):
            d = max(d, max(abs(p - q) for p, q in zip(s, ref[x])))
    return d / smax if smax > 0 else d


def fail(msg):
    print("compare_vtu: " + msg)
    sys.exit(1)


def main():
    one, many, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
    n1, c1, a1 = read_vtu(one)
    ref = dict(nodes(a1))
    if len(ref) != n1:
        fail("%s has nodes at the same coordinates" % one)
    root = ET.parse(many).getroot()
    if root.get("type") != "PUnstructuredGrid":
        fail("%s is not a PUnstructuredGrid" % many)
    grid = root.find("PUnstructuredGrid")
    listed = {}
    for sec in ("PPointData", "PCellData"):
        for a in grid.find(sec).findall("PDataArray"):
            listed[(sec[1:], a.get("Name"))] = (a.get("type"), int(a.get("NumberOfComponents")))
    got, cells, count, bare, pieces = {}, 0, {}, 0, []
    for p in grid.findall("Piece"):
        path = os.path.join(os.path.dirname(many), p.get("Source"))
        n, c, a = read_vtu(path)
        pieces.append(a)
        cells += c
        have = {k: (v[0], v[1]) for k, v in a.items() if k[0] in ("PointData", "CellData")}
        if have != listed:
            fail("%s holds %s but %s lists %s" % (path, sorted(have), many, sorted(listed)))
        react = a.get(("PointData", "reaction"))
        if react and all(v == 0 for v in react[2]):
            bare += 1
        for x, u in nodes(a):
            count[x] = count.get(x, 0) + 1
            if x not in ref:
                fail("%s has a node at %s that the one-process mesh lacks" % (path, x))
            if x in got and max(abs(s - t) for s, t in zip(got[x], u)) != 0:
                fail("two pieces disagree at %s: %s and %s" % (x, got[x], u))
            got[x] = u
    if len(got) != len(ref):
        fail("the pieces hold %d of the %d nodes" % (len(got), len(ref)))
    if cells != c1:
        fail("the pieces hold %d cells, the one-process mesh %d" % (cells, c1))
    corners = sum(1 for k in count.values() if k >= 3)
    if "corner" in sys.argv[4:] and corners == 0:
        fail("no node lies in three pieces; the test wants partitions meeting at a corner")
    if "unsupported" in sys.argv[4:] and bare == 0:
        fail("every piece holds a reaction; the test wants a part without a support")
    umax = max(math.sqrt(sum(v * v for v in u)) for u in ref.values())
    dmax = max(math.sqrt(sum((s - t) ** 2 for s, t in zip(got[x], u))) for x, u in ref.items())
    rel = dmax / umax if umax > 0 else dmax
    extra, worst = "", rel
    if "stress" in sys.argv[4:]:
        ds = field_difference(a1, pieces, "stress", 6)
        dv = field_difference(a1, pieces, "von_mises", 1)
        extra = ", stress %.3e, von Mises %.3e" % (ds, dv)
        worst = max(rel, ds, dv)
    print("compare_vtu: %d nodes, %d cells, %d in 3+ pieces, %d pieces without reactions, "
          "max |u| %.6e, relative difference %.3e%s (tolerance %g)"
          % (len(ref), cells, corners, bare, umax, rel, extra, tol))
    sys.exit(0 if worst <= tol else 1)


main()
