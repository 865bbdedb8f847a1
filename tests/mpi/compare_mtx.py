#!/usr/bin/env python3
"""max |a - b| / max |a| of two Matrix Market arrays (hooke solve -o); exit 1 above TOL.

usage: compare_mtx.py ONE.mtx MANY.mtx TOL"""
import sys


def read(path):
    vals, header = [], True
    for line in open(path):
        if line.startswith("%"):
            continue
        if header:
            header = False
            continue
        vals.append(float(line.split()[0]))
    return vals


a, b, tol = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
if len(a) != len(b):
    print("compare_mtx: %d and %d entries" % (len(a), len(b)))
    sys.exit(1)
scale = max(abs(v) for v in a) or 1.0
rel = max(abs(x - y) for x, y in zip(a, b)) / scale
print("compare_mtx: %d entries, relative difference %.3e (tolerance %g)" % (len(a), rel, tol))
sys.exit(0 if rel <= tol else 1)
