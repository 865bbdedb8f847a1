#!/usr/bin/env bash
# Weak and strong scaling of distributed runs (docs/parallel.md): runs
#   mpirun -np P hooke bench scale ...
# for each P (default 1 2 4), keeps each run's Markdown table and JSON in OUTDIR, and prints one
# table of the series over P (weak: the slab n x n x nP, weak-cube: the cube of about P n^3 cells,
# and the whole run of each; --weak and --run-shape choose). Every figure of a run stands beside
# its one-process baseline measured in that run (hooke bench scale), so runs on a busy machine
# still compare.
#
# usage: scripts/bench-scale.sh [OUTDIR] [-- bench options]
#   NPS="1 2 4 8"   process counts      BUILD=build   HOOKE=$BUILD/hooke
#   MPIRUN="mpirun" (add --oversubscribe on a machine with fewer cores than processes)
# examples:
#   scripts/bench-scale.sh /tmp/scale -- --backend cpu                       (2 cores: NPS="1 2")
#   scripts/bench-scale.sh out -- --backend cuda --size large                (a 4-GPU host)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-scale}
shift || true
[ "${1:-}" = "--" ] && shift
BUILD=${BUILD:-build}
HOOKE=${HOOKE:-$BUILD/hooke}
NPS=${NPS:-1 2 4}
read -r -a MPIRUN <<<"${MPIRUN:-mpirun}"
mkdir -p "$OUT"
# NVLink multicast stays off (docs/gpu-host.md). Waiting processes spin (Open MPI's default):
# a sum costs 0.2 us on two free cores, 350 us with OMPI_MCA_mpi_yield_when_idle=1 on a busy
# machine, where spinning takes the cores of other jobs instead.
export NCCL_NVLS_ENABLE=0
for np in $NPS; do
  echo "bench-scale: -np $np" >&2
  "${MPIRUN[@]}" -np "$np" "$HOOKE" bench scale --json "$OUT/scale-$np.json" "$@" \
    | tee "$OUT/scale-$np.md"
done
python3 - "$OUT" $NPS <<'PY'
import json, os, sys
out, nps = sys.argv[1], [int(p) for p in sys.argv[2:]]
runs = {}
def dofs(x):
    return "%.2fM" % (x / 1e6) if x >= 1e6 else "%d" % int(x)  # the table's DOFs P / P, rounded down
for p in nps:
    path = os.path.join(out, "scale-%d.json" % p)
    if os.path.exists(path):
        runs[p] = json.load(open(path))
if not runs:
    sys.exit("bench-scale: no results")
print("\n## Scaling over processes (each against one process in the same run)\n")
print("| series | method | " + " | ".join("P = %d" % p for p in sorted(runs)) + " |")
print("|---|---|" + "---:|" * len(runs))
keys = []
for r in runs.values():
    for s in r["solver"]:
        if (s["series"], s["method"]) not in keys:
            keys.append((s["series"], s["method"]))
for series, method in keys:
    cells = []
    for p in sorted(runs):
        hit = [s for s in runs[p]["solver"] if s["series"] == series and s["method"] == method]
        if not hit:
            cells.append("–")
        elif series.startswith("weak"):
            s = hit[0]
            cells.append("%.0f %% (%.0f %% per iteration, %d/%d it., DOFs a process %s/%s)" % (
                100 * s["efficiency"], 100 * s["efficiency_per_iteration"], s["iterations_1"],
                s["iterations_p"], dofs(s["dofs_1"]), dofs(s["dofs_per_process_p"])))
        else:
            s = hit[0]
            cells.append("%.2fx (%.2fx per iteration)" % (s["speedup"], s["speedup_per_iteration"]))
    print("| %s | %s | %s |" % (series, method, " | ".join(cells)))
for key, series in (("run", "weak"), ("run_cube", "weak-cube")):
    if not any(key in r for r in runs.values()):
        continue
    cells = []
    for p in sorted(runs):
        r = runs[p].get(key)
        cells.append("%.0f %% (%.2f s vs %.2f s)" % (100 * r["efficiency"], r["seconds_p"],
                                                     r["seconds_1"]) if r else "–")
    print("| %s | whole run | %s |" % (series, " | ".join(cells)))
PY
