#!/usr/bin/env python3
"""Sums Nsight Compute's per-launch CSV (--csv --page raw, metrics gpu__time_duration.sum,
dram__bytes_read.sum, dram__bytes_write.sum) by kernel: launches, total ms, GB moved, GB/s,
share of the time. Used by scripts/gpu-session.sh's ncu steps; reads the CSV on stdin."""
import csv
import re
import sys

rows = [r for r in csv.reader(sys.stdin) if len(r) > 3]
head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if head is None:
    sys.exit("ncu-sum: no 'Kernel Name' column in the input")
cols = rows[head]
name_at, units = cols.index("Kernel Name"), rows[head + 1]


def column(metric):
    return cols.index(metric) if metric in cols else None


t_at, r_at, w_at = (column(m) for m in ("gpu__time_duration.sum", "dram__bytes_read.sum",
                                        "dram__bytes_write.sum"))
scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3, "nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3,
         "byte": 1e-9, "Kbyte": 1e-6, "Mbyte": 1e-3, "Gbyte": 1.0, "KB": 1e-6, "MB": 1e-3,
         "GB": 1.0, "B": 1e-9}


def value(r, at):
    if at is None or at >= len(r):
        return 0.0
    try:
        return float(r[at].replace(",", "")) * scale.get(units[at], 1.0)
    except ValueError:
        return 0.0


sums = {}
for r in rows[head + 2:]:
    name = re.sub(r"\(.*$", "", r[name_at]).replace("void ", "")[:60]
    s = sums.setdefault(name, [0, 0.0, 0.0])
    s[0] += 1
    s[1] += value(r, t_at)
    s[2] += value(r, r_at) + value(r, w_at)
total = sum(s[1] for s in sums.values()) or 1.0
print(f"| kernel | launches | ms | GB | GB/s | share |\n|---|---:|---:|---:|---:|---:|")
for name, (n, ms, gb) in sorted(sums.items(), key=lambda kv: -kv[1][1])[:int(sys.argv[1]) if len(sys.argv) > 1 else 60]:
    print(f"| {name} | {n} | {ms:.3f} | {gb:.3f} | {gb / ms * 1e3 if ms else 0:.0f} | {100 * ms / total:.1f} % |")
print(f"| all {sum(s[0] for s in sums.values())} launches | | {total:.3f} | | | |")
