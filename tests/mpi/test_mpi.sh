#!/usr/bin/env bash
# Distributed runs on the CPU backend (docs/parallel.md): hooke solve and hooke run under
# mpirun -np 2 and -np 3 against one process, the displacements to 1e-8 relative, and the
# distributed layer's own checks (hooke_mpi_tests). Run by scripts/test.sh when Hooke is built
# with MPI; about a minute on 2 cores.
#
# usage: tests/mpi/test_mpi.sh [BUILD]      (default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
H=$BUILD/hooke
[ -x "$BUILD/hooke_mpi_tests" ] || { echo "test_mpi: $BUILD has no hooke_mpi_tests (built without MPI?)"; exit 1; }
# CI runs as root; the machine may have fewer cores than processes
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=1
# a waiting process yields its core (the machine may be shared)
export OMPI_MCA_mpi_yield_when_idle=1
MPI=(mpirun --oversubscribe)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "  ok    $*"; }
bad() { echo "  FAIL  $*"; fails=$((fails + 1)); }
# every mpirun is bounded: a hang is a failure, not a stuck CI job
mpi() { timeout 120 "${MPI[@]}" "$@"; }

echo "test_mpi: the distributed layer"
for np in 2 3; do
  if mpi -np $np "$BUILD/hooke_mpi_tests" >"$T/layer$np.log" 2>&1; then
    ok "hooke_mpi_tests -np $np"
  else
    bad "hooke_mpi_tests -np $np"; cat "$T/layer$np.log"
  fi
done
set +e; out=$(mpi -np 1 "$BUILD/hooke_mpi_tests" 2>&1); rc=$?; set -e
if [ $rc = 1 ] && grep -q "run it as 2 or more processes" <<<"$out"; then
  ok "hooke_mpi_tests on one process: refused in one sentence"
else bad "hooke_mpi_tests on one process: exit $rc"; echo "$out" | head -5; fi

# a transport failing on one process mid-SpMV ends the run: mpirun returns, with the sentence
set +e; out=$(mpi -np 2 "$BUILD/hooke_mpi_tests" --fatal 2>&1); rc=$?; set -e
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "ending the run" <<<"$out"; then
  ok "a transport failing on one process ends the run (exit $rc)"
else bad "a transport failing on one process: exit $rc"; echo "$out" | head -5; fi

# threads: without OMP_NUM_THREADS each process takes its share of the cores (OpenMP's default
# would give each every core of its mask: all of them with --bind-to none); with it, its count
m=$(nproc); o=$(nproc --all); e=$((o / 2)); [ $e -lt 1 ] && e=1; [ $m -lt $e ] && e=$m
out=$(env -u OMP_NUM_THREADS timeout 60 "${MPI[@]}" --bind-to none -np 2 "$H" info 2>&1 || true)
if grep -q "backend cpu: OpenMP, $e threads" <<<"$out"; then
  ok "2 processes without OMP_NUM_THREADS: $e thread(s) each of $o cores"
else bad "2 processes without OMP_NUM_THREADS: expected $e threads"; grep "backend cpu" <<<"$out"; fi
out=$(OMP_NUM_THREADS=3 timeout 60 "${MPI[@]}" --bind-to none -np 2 "$H" info 2>&1 || true)
if grep -q "backend cpu: OpenMP, 3 threads" <<<"$out"; then ok "OMP_NUM_THREADS=3 kept"
else bad "OMP_NUM_THREADS=3 not kept"; grep "backend cpu" <<<"$out"; fi

echo "test_mpi: hooke solve (x against one process, 1e-8)"
G=elasticity3d:6
for mp in "cg pc=jacobi" "pipecg pc=poly" "scg pc=jacobi" "gmres pc=bjacobi" \
          "bicgstab pc=none" "cgcg pc=poly" "fcg pc=jacobi precision=mixed" "cg pc=amg" \
          "fcg pc=amg pc.amg.precision=fp64 pc.amg.smoother=bjacobi pc.amg.cycle=w" \
          "pipecg pc=jacobi dist.comm=mpi"; do
  set -- $mp
  opts="method=$1 ${*:2} tol=1e-12"
  "$H" solve --generate $G $opts -o "$T/x1.mtx" >"$T/s1.log" 2>&1 || { bad "one process: $opts"; continue; }
  for np in 2 3; do
    if mpi -np $np "$H" solve --generate $G $opts -o "$T/x$np.mtx" >"$T/s$np.log" 2>&1 &&
       r=$(python3 tests/mpi/compare_mtx.py "$T/x1.mtx" "$T/x$np.mtx" 1e-8); then
      ok "-np $np $opts: ${r#compare_mtx: }"
    else
      bad "-np $np $opts: ${r:-}"; tail -3 "$T/s$np.log"
    fi
  done
done

# a level that is the coarsest only at its aggregation (threshold 0: level 2's 12 rows do not
# coarsen), below the first level on every process (gather_rows=1): the P above it, split at
# its creation for the exchanges' overlap, is put back in order (it reads the whole
# correction); the gathered levels make the distributed cycle's sums, so x is byte for byte
# that of gather_rows=0
opts="pc=amg pc.amg.threshold=0 pc.amg.coarse_size=10 tol=1e-12"
if mpi -np 2 "$H" solve --generate elasticity3d:8 $opts pc.amg.dist.gather_rows=0 -o "$T/u0.mtx" >"$T/u0.log" 2>&1 &&
   mpi -np 2 "$H" solve --generate elasticity3d:8 $opts pc.amg.dist.gather_rows=1 -o "$T/u1.mtx" >"$T/u1.log" 2>&1 &&
   grep -q "3 levels: 2187, 168, 12 rows" "$T/u1.log" && cmp -s "$T/u0.mtx" "$T/u1.mtx"; then
  ok "-np 2 $opts, the coarsest level found at its aggregation: gather_rows=1 x as gather_rows=0's, byte for byte"
else bad "-np 2 $opts: gather_rows=1 against 0"; tail -3 "$T/u1.log"; fi

# pc=amg's rigid-body modes from --generate's and --coords's coordinates: the one-process
# iterations (translations alone need about 60 % more here), and a bad --coords refused
its_of() { sed -n 's/^iterations: //p' "$1"; }
"$H" solve --generate elasticity3d:12 pc=amg >"$T/c1.log" 2>&1 || true
for np in 2 3; do
  mpi -np $np "$H" solve --generate elasticity3d:12 pc=amg >"$T/c$np.log" 2>&1 || true
  i1=$(its_of "$T/c1.log"); inp=$(its_of "$T/c$np.log")
  if grep -q "6 rigid-body modes" "$T/c$np.log" && [ -n "$inp" ] && [ "$inp" -le $((i1 + 1)) ]; then
    ok "-np $np pc=amg on --generate: rigid-body modes, $inp iterations (one process: $i1)"
  else bad "-np $np pc=amg on --generate: ${inp:-no} iterations, one process $i1"; tail -3 "$T/c$np.log"; fi
done
printf '%%%%MatrixMarket matrix array real general\n2 3\n0\n0\n0\n1\n1\n1\n' >"$T/xyz.mtx"
rc=0; out=$(mpi -np 2 "$H" solve --generate elasticity3d:4 --coords "$T/xyz.mtx" pc=amg 2>&1) || rc=$?
if [ $rc = 2 ] && echo "$out" | grep -q -- "--coords .* has 2 rows of 3 coordinates"; then
  ok "-np 2 --coords of the wrong length refused (exit 2)"
else bad "-np 2 --coords of the wrong length: exit $rc"; echo "$out" | head -3; fi

echo "test_mpi: hooke run (displacements against one process, 1e-8)"
# name | case | np | options | what the pieces must show
runs=(
  "box-corner|cases/box/box.yaml|3|--set geometry.generate.cells=[8,8,8] --set solver.pc=jacobi --set solver.dist.mesh=whole|corner"
  "bar-no-support|cases/box/box.yaml|3|--set geometry.generate.size=[6,1,1] --set geometry.generate.cells=[24,3,3] --set solver.pc=poly|unsupported"
  "kirsch-2d|cases/kirsch/kirsch.yaml|2|--set solver.pc=poly|"
  "box-amg|cases/box/box.yaml|3|--set geometry.generate.cells=[10,10,10] --set solver.pc=amg --set solver.dist.mesh=whole|corner"
  "bar-amg-no-support|cases/box/box.yaml|3|--set geometry.generate.size=[6,1,1] --set geometry.generate.cells=[24,3,3] --set solver.pc=amg --set solver.tol=1e-11|unsupported"
  "part-owning-nothing-amg|cases/box/box.yaml|3|--set geometry.generate.cells=[1,1,2] --set solver.pc=amg|"
  "springs|cases/springs/springs.yaml|3||"
  "thermal|cases/thermal/clamped_bar.yaml|2|--set solver.pc=jacobi --assembly host|"
  "part-owning-nothing|cases/box/box.yaml|3|--set geometry.generate.cells=[1,1,2] --set solver.pc=jacobi|"
  "box-hex20|cases/box/box.yaml|2|--set geometry.generate.element=hex20 --set geometry.generate.cells=[6,4,4] --set solver.method=pipecg --set solver.pc=jacobi|"
  "bracket-pipecg|cases/bracket/bracket.yaml|2|--set solver.method=pipecg --set solver.pc=jacobi --set solver.tol=1e-10|"
)
for spec in "${runs[@]}"; do
  IFS='|' read -r name case np opts want <<<"$spec"
  set -- $opts
  common=(--set solver.tol=1e-12 --set output.ascii=true -q "$@")
  if ! "$H" run "$case" "${common[@]}" -o "$T/$name-1.vtu" >"$T/$name-1.log" 2>&1; then
    bad "$name: one process"; tail -3 "$T/$name-1.log"; continue
  fi
  if mpi -np "$np" "$H" run "$case" "${common[@]}" -o "$T/$name.vtu" >"$T/$name.log" 2>&1 &&
     r=$(python3 tests/mpi/compare_vtu.py "$T/$name-1.vtu" "$T/$name.pvtu" 1e-8 $want); then
    ok "$name -np $np: ${r#compare_vtu: }"
  else
    bad "$name -np $np: ${r:-}"; tail -5 "$T/$name.log"
  fi
done

echo "test_mpi: the cut on the coarse mesh (solver.dist.partition; displacements against one process, 1e-8)"
# the coarse mesh is cut by METIS only (without it, contiguous blocks of the cells as before)
metis=0; "$H" info 2>/dev/null | grep -q "^partitions: metis" && metis=1
[ $metis = 1 ] || echo "  (skipped: built without METIS)"
cuts=()
# name | case | np | options | what the partition line must say (a grep -E pattern); rank 0's
# cut is checked with solver.dist.mesh=whole (the default, parts, cuts on every process: below)
[ $metis = 1 ] && cuts=(
  "kirsch-auto2|cases/kirsch/kirsch.yaml|2|--set geometry.refine=1 --set solver.dist.mesh=whole|by metis on the coarse mesh \([0-9]+ cells\) in"
  "kirsch-auto3|cases/kirsch/kirsch.yaml|3|--set geometry.refine=1 --set solver.dist.mesh=whole|by metis on the coarse mesh \([0-9]+ cells\) in"
  "kirsch-fine|cases/kirsch/kirsch.yaml|3|--set geometry.refine=1 --set solver.dist.partition=fine|by metis on the fine mesh \([0-9]+ cells\) in"
  "kirsch-few|cases/kirsch/kirsch.yaml|3|--set geometry.refine=2 --set solver.dist.mesh=whole|by metis on the fine mesh \([0-9]+ cells; the coarse mesh's [0-9]+ cells are under 32 a part\)"
  "kirsch-coarse|cases/kirsch/kirsch.yaml|3|--set geometry.refine=2 --set solver.dist.partition=coarse|by metis on the coarse mesh"
  "unrefined|cases/kirsch/kirsch.yaml|2|--set geometry.refine=0 --set solver.dist.partition=coarse|by metis on the mesh \([0-9]+ cells; no coarse mesh: Hooke did not refine this one\)"
  "bracket-auto2|cases/bracket/bracket.yaml|2|--set geometry.refine=1 --set solver.pc=amg --set solver.tol=1e-10 --set solver.dist.mesh=whole|by metis on the coarse mesh \([0-9]+ cells\) in"
  "bracket-auto3|cases/bracket/bracket.yaml|3|--set geometry.refine=1 --set solver.pc=amg --set solver.tol=1e-10 --set solver.dist.mesh=whole|by metis on the coarse mesh \([0-9]+ cells\) in"
  "bracket-fine|cases/bracket/bracket.yaml|2|--set geometry.refine=1 --set solver.pc=amg --set solver.tol=1e-10 --set solver.dist.partition=fine|by metis on the fine mesh"
)
for spec in "${cuts[@]}"; do
  IFS='|' read -r name case np opts want <<<"$spec"
  set -- $opts
  common=(--set solver.tol=1e-12 --set output.ascii=true "$@")
  # the key is read on one process too (and has nothing to do there)
  if ! "$H" run "$case" "${common[@]}" -q -o "$T/cut-$name-1.vtu" >"$T/cut-$name-1.log" 2>&1; then
    bad "$name: one process"; tail -3 "$T/cut-$name-1.log"; continue
  fi
  if mpi -np "$np" "$H" run "$case" "${common[@]}" -o "$T/cut-$name.vtu" >/dev/null 2>"$T/cut-$name.err" &&
     r=$(python3 tests/mpi/compare_vtu.py "$T/cut-$name-1.vtu" "$T/cut-$name.pvtu" 1e-8); then
    if grep -qE "partition: $np parts $want" "$T/cut-$name.err"; then
      ok "$name -np $np: $(grep -oE 'on the [a-z ]*mesh \([^)]*\)' "$T/cut-$name.err"), ${r#compare_vtu: }"
    else bad "$name -np $np: the partition line"; grep "partition:" "$T/cut-$name.err"; fi
  else
    bad "$name -np $np: ${r:-}"; tail -5 "$T/cut-$name.err"
  fi
done
# the coarse cut: the same pieces on 1 and 2 threads
[ $metis = 1 ] && OMP_NUM_THREADS=2 mpi -np 3 "$H" run cases/bracket/bracket.yaml --set solver.tol=1e-12 --set output.ascii=true \
  --set geometry.refine=1 --set solver.pc=amg --set solver.tol=1e-10 --set solver.dist.mesh=whole -o "$T/cut-t2.vtu" >/dev/null 2>&1 || true
if [ $metis = 0 ]; then :
elif cmp -s "$T/cut-bracket-auto3-p0.vtu" "$T/cut-t2-p0.vtu" && cmp -s "$T/cut-bracket-auto3-p1.vtu" "$T/cut-t2-p1.vtu" &&
   cmp -s "$T/cut-bracket-auto3-p2.vtu" "$T/cut-t2-p2.vtu"; then
  ok "bracket refined, coarse cut -np 3 with 1 and 2 threads: the pieces byte for byte"
else bad "bracket refined, coarse cut -np 3: 2 threads give other bytes than 1"; fi

echo "test_mpi: each process meshes its own part (solver.dist.mesh=parts; displacements against one process, 1e-8)"
# every process meshes the coarse mesh, cuts it as rank 0 would and refines its own coarse cells
# with their neighbours; the nodes compared by coordinates (the numbering is the parts')
parts=()
# name | case | np | options | compare_vtu's checks | what the partition line must say
[ $metis = 1 ] && parts=(
  "kirsch2|cases/kirsch/kirsch.yaml|2|--set geometry.refine=1|stress|on the coarse mesh \([0-9]+ cells\) on every process"
  "kirsch3|cases/kirsch/kirsch.yaml|3|--set geometry.refine=1|stress|on the coarse mesh \([0-9]+ cells\) on every process"
  "bracket2|cases/bracket/bracket.yaml|2|--set geometry.refine=1 --set solver.pc=amg --set solver.tol=1e-10|stress|on the coarse mesh \([0-9]+ cells\) on every process"
  "bracket3|cases/bracket/bracket.yaml|3|--set geometry.refine=1 --set solver.pc=amg --set solver.tol=1e-10|stress|on the coarse mesh \([0-9]+ cells\) on every process"
  "forces3|tests/mpi/bracket_forces.yaml|3|--set solver.tol=1e-10|stress unsupported|on the coarse mesh \([0-9]+ cells\) on every process"
  "remote3|tests/mpi/tube_remote.yaml|3|--set solver.tol=1e-10|stress unsupported|on the coarse mesh \\([0-9]+ cells\\) on every process"
  "hybrid3|cases/hybrid/hybrid.yaml|3|--set geometry.refine=1 --set solver.tol=1e-9|stress|on the coarse mesh \([0-9]+ cells\) on every process"
  "few-coarse|cases/kirsch/kirsch.yaml|3|--set geometry.refine=2||not applied \(the coarse mesh's [0-9]+ cells are under 32 a part\)"
)
# a generated grid: each process makes its slab of cell layers and the layers beside it (no
# METIS); forces by area and node count with parts holding no support; 2D and 3D, hex and tet
slab="slabs of the grid along [xyz] \([0-9]+ cell layers\) on every process"
parts+=(
  "grid-hex8-2|cases/box/box.yaml|2|--set geometry.generate.cells=[6,5,8] --set solver.pc=jacobi|stress|${slab/\[xyz\]/z}"
  "grid-hex8-3|cases/box/box.yaml|3|--set geometry.generate.cells=[7,5,4] --set solver.pc=amg|stress|$slab"
  "grid-tet10-3|cases/box/box.yaml|3|--set geometry.generate.element=tet10 --set geometry.generate.cells=[4,5,3] --set solver.pc=jacobi|stress|$slab"
  "grid-hex20-2|cases/box/box.yaml|2|--set geometry.generate.element=hex20 --set geometry.generate.cells=[4,4,6] --set solver.pc=jacobi|stress|$slab"
  "grid-forces-3|tests/mpi/grid_forces.yaml|3|--set solver.tol=1e-10|stress unsupported|$slab"
  "grid-forces-tet4-2|tests/mpi/grid_forces.yaml|2|--set geometry.generate.element=tet4 --set solver.tol=1e-10|stress unsupported|$slab"
  "plate-quad8-2|tests/mpi/plate_grid.yaml|2|--set solver.tol=1e-10|stress unsupported|$slab"
  "plate-tri6-3|tests/mpi/plate_grid.yaml|3|--set geometry.generate.element=tri6 --set solver.tol=1e-10|stress unsupported|$slab"
  "grid-few-layers|cases/box/box.yaml|3|--set geometry.generate.cells=[2,2,2] --set solver.pc=jacobi||not applied \(the grid's 2 cell layers along x, its longest axis, are fewer than the 3 processes\)"
  "grid-fine|cases/box/box.yaml|2|--set geometry.generate.cells=[6,6,6] --set solver.pc=jacobi --set solver.dist.partition=fine||not applied \(solver.dist.partition=fine cuts the fine mesh\)"
)
for spec in "${parts[@]}"; do
  IFS='|' read -r name case np opts checks want <<<"$spec"
  set -- $opts
  common=(--set solver.tol=1e-12 --set output.ascii=true "$@")
  if ! "$H" run "$case" "${common[@]}" -q -o "$T/pm-$name-1.vtu" >/dev/null 2>&1; then
    bad "parts $name: one process"; continue
  fi
  if mpi -np "$np" "$H" run "$case" "${common[@]}" --set solver.dist.mesh=parts -o "$T/pm-$name.vtu" \
       >/dev/null 2>"$T/pm-$name.err" &&
     r=$(python3 tests/mpi/compare_vtu.py "$T/pm-$name-1.vtu" "$T/pm-$name.pvtu" 1e-8 $checks); then
    if grep -qE "partition: .*$want" "$T/pm-$name.err"; then
      ok "parts $name -np $np: ${r#compare_vtu: }"
    else bad "parts $name -np $np: the partition line"; grep "partition:" "$T/pm-$name.err"; fi
  else
    bad "parts $name -np $np: ${r:-}"; tail -5 "$T/pm-$name.err"
  fi
done
# a part that cannot fit in memory: refused before meshing, in one sentence naming the process
set +e
out=$(mpi -np 2 "$H" run cases/box/box.yaml --backend cpu --set "geometry.generate.cells=[600,600,1200]" \
  --set solver.dist.mesh=parts -o "$T/pm-big.vtu" 2>&1); rc=$?
set -e
if [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
   grep -qE "box.yaml: process 0 of this run needs about .* of host memory \(its share of a 600 x 600 x 1200 grid" <<<"$out"; then
  ok "parts: a part too large for the memory refused, naming the process"
else bad "parts: a part too large for the memory: exit $rc"; echo "$out" | head -3; fi
# the parts' meshes on 1 and 2 threads: the same pieces byte for byte
OMP_NUM_THREADS=2 mpi -np 3 "$H" run tests/mpi/grid_forces.yaml --set solver.tol=1e-12 --set output.ascii=true \
  --set solver.tol=1e-10 --set solver.dist.mesh=parts -o "$T/pm-grid-t2.vtu" >/dev/null 2>&1 || true
same=1
for q in 0 1 2; do cmp -s "$T/pm-grid-forces-3-p$q.vtu" "$T/pm-grid-t2-p$q.vtu" || same=0; done
if [ $same = 1 ]; then ok "parts of a generated grid -np 3 with 1 and 2 threads: the pieces byte for byte"
else bad "parts of a generated grid -np 3: 2 threads give other bytes than 1"; fi
# binary pieces (docs/output.md): written during the solve (the default) and at the end
# (HOOKE_OUTPUT_EARLY=0), on 1 and 2 threads, and Float32 zlib on 1 and 2 threads: byte for byte
pieces() { # name threads early options...
  local name=$1 th=$2 early=$3; shift 3
  HOOKE_OUTPUT_EARLY=$early OMP_NUM_THREADS=$th mpi -np 3 "$H" run tests/mpi/grid_forces.yaml \
    --set solver.tol=1e-10 "$@" -o "$T/bin-$name.vtu" >/dev/null 2>&1
}
same=1
pieces t1 1 1 && pieces t2 2 1 && pieces t2-end 2 0 && pieces z1 1 1 --set output.precision=float32 \
  --set output.compression=zlib && pieces z2 2 1 --set output.precision=float32 \
  --set output.compression=zlib || same=0
for q in 0 1 2; do
  for v in t2 t2-end; do cmp -s "$T/bin-t1-p$q.vtu" "$T/bin-$v-p$q.vtu" || same=0; done
  cmp -s "$T/bin-z1-p$q.vtu" "$T/bin-z2-p$q.vtu" || same=0
done
sed 's/bin-t2-end-p/bin-t1-p/' "$T/bin-t2-end.pvtu" | cmp -s "$T/bin-t1.pvtu" - || same=0 # names aside
if [ $same = 1 ]; then ok "binary pieces -np 3: during the solve or at the end, 1 or 2 threads, byte for byte"
else bad "binary pieces -np 3: other bytes with 2 threads or written at the end"; fi
if [ $metis = 1 ]; then
  OMP_NUM_THREADS=2 mpi -np 3 "$H" run cases/bracket/bracket.yaml --set solver.tol=1e-12 --set output.ascii=true \
    --set geometry.refine=1 --set solver.pc=amg --set solver.tol=1e-10 --set solver.dist.mesh=parts \
    -o "$T/pm-t2.vtu" >/dev/null 2>&1 || true
  same=1
  for q in 0 1 2; do cmp -s "$T/pm-bracket3-p$q.vtu" "$T/pm-t2-p$q.vtu" || same=0; done
  if [ $same = 1 ]; then ok "parts bracket -np 3 with 1 and 2 threads: the pieces byte for byte"
  else bad "parts bracket -np 3: 2 threads give other bytes than 1"; fi
  # the quality line from the parts' own cells (each cell once, by its owner) is whole's to the
  # printed digits; each process's memory estimate of its part is made and printed
  for np in 2 3; do
    q=()
    for how in whole parts; do
      mpi -np $np "$H" run cases/bracket/bracket.yaml --set geometry.refine=1 --set solver.pc=amg \
        --set solver.tol=1e-8 --set solver.dist.mesh=$how -o "$T/pq-$how.vtu" >"$T/pq-$how.out" \
        2>"$T/pq-$how.err" || true
      q+=("$(grep -oE 'quality min [0-9.]+ mean [0-9.]+ -> min [0-9.]+ mean [0-9.]+' "$T/pq-$how.err" | head -1)")
    done
    if [ -n "${q[0]}" ] && [ "${q[0]}" = "${q[1]}" ]; then
      ok "parts bracket -np $np: the quality line is whole's (${q[1]})"
    else bad "parts bracket -np $np: quality '${q[1]}', whole's '${q[0]}'"; grep meshing: "$T/pq-parts.err"; fi
    if grep -qE "memory: about [1-9][0-9]* MB of host memory needed by the largest part" "$T/pq-parts.err" &&
       grep -qE "memory +host peak [0-9]+ MB \(estimate [1-9][0-9]* MB" "$T/pq-parts.out"; then
      ok "parts bracket -np $np: the memory estimate of each part"
    else bad "parts bracket -np $np: no memory estimate"; grep -h memory "$T/pq-parts.err" "$T/pq-parts.out"; fi
  done
  # a temperature file (values matched to the nodes by coordinates) on every process's own nodes:
  # the Kirsch plate refined once, heated by dT = 2000 x + 500 y at every node of its mesh
  python3 - "$T" "$PWD" <<'PY'
import sys, xml.etree.ElementTree as ET
t, root = sys.argv[1], sys.argv[2]
piece = ET.parse(t + "/pm-kirsch2-1.vtu").getroot().find("UnstructuredGrid").find("Piece")
pts = [float(v) for a in piece.find("Points").findall("DataArray") for v in a.text.split()]
with open(t + "/T.csv", "w") as f:
    f.write("x,y,dT\n")
    for i in range(len(pts) // 3):
        x, y = pts[3 * i], pts[3 * i + 1]
        f.write("%.17g,%.17g,%.17g\n" % (x, y, 2000 * x + 500 * y))
with open(t + "/heat.yaml", "w") as f:
    f.write("title: plate with a hole, heated\ngeometry: {file: %s/cases/kirsch/kirsch.geo, order: 2, "
            "refine: 1}\nanalysis: {type: plane_stress, thickness: 0.005}\nmaterials:\n"
            "  - {name: steel, E: 200e9, nu: 0.3, alpha: 1.2e-5}\nsupports:\n"
            "  - {boundary: left, fix: [x]}\n  - {boundary: bottom, fix: [y]}\nloads:\n"
            "  - temperature: {file: T.csv}\nsolver: {method: cg, pc: jacobi, tol: 1e-12}\n" % root)
PY
  if "$H" run "$T/heat.yaml" --set output.ascii=true -q -o "$T/pm-heat-1.vtu" >/dev/null 2>&1 &&
     mpi -np 2 "$H" run "$T/heat.yaml" --set output.ascii=true --set solver.dist.mesh=parts \
       -o "$T/pm-heat.vtu" >/dev/null 2>"$T/pm-heat.err" &&
     grep -q "on the coarse mesh ([0-9]* cells) on every process" "$T/pm-heat.err" &&
     r=$(python3 tests/mpi/compare_vtu.py "$T/pm-heat-1.vtu" "$T/pm-heat.pvtu" 1e-8 stress); then
    ok "parts kirsch with a temperature file -np 2: ${r#compare_vtu: }"
  else bad "parts kirsch with a temperature file -np 2: ${r:-}"; tail -3 "$T/pm-heat.err"; fi
  # the parts assembled and recovered on their devices (emulated): one process's answer
  if HOOKE_FEM_EMULATE=1 mpi -np 2 "$H" run cases/bracket/bracket.yaml --backend cpu --set solver.tol=1e-10 \
       --set output.ascii=true --set geometry.refine=1 --set solver.pc=amg --set solver.dist.mesh=parts \
       -o "$T/pm-dev.vtu" >/dev/null 2>"$T/pm-dev.err" &&
     grep -q "assembly: [0-9].* (rows of each part) on cpu$" "$T/pm-dev.err" &&
     r=$(python3 tests/mpi/compare_vtu.py "$T/pm-bracket2-1.vtu" "$T/pm-dev.pvtu" 1e-8 stress); then
    ok "parts bracket -np 2 on the devices' path (emulated): ${r#compare_vtu: }"
  else bad "parts bracket -np 2 on the devices' path (emulated): ${r:-}"; tail -3 "$T/pm-dev.err"; fi
fi

echo "test_mpi: each process assembles and recovers its part on its device (emulated: HOOKE_FEM_EMULATE=1)"
# The device's steps run on the cpu backend through the emulation, which gives the host's
# bytes: the pieces are those of the host's path byte for byte (where it runs too), the
# displacements and stresses one process's to 1e-8, the stage lines say where each stage ran.
# name | case | np | options | host path too (cmp)
dev=(
  "box-amg|cases/box/box.yaml|3|--set geometry.generate.cells=[10,10,10] --set solver.pc=amg --set solver.dist.mesh=whole|cmp"
  "thermal|cases/thermal/clamped_bar.yaml|2|--set solver.pc=jacobi|cmp"
  "kirsch-2d|cases/kirsch/kirsch.yaml|2|--set solver.pc=poly|cmp"
  "part-owning-nothing|cases/box/box.yaml|3|--set geometry.generate.cells=[1,1,2] --set solver.pc=jacobi|cmp"
  "bracket-amg|cases/bracket/bracket.yaml|2|--set solver.pc=amg --set solver.tol=1e-10|"
)
for spec in "${dev[@]}"; do
  IFS='|' read -r name case np opts host <<<"$spec"
  set -- $opts
  common=(--backend cpu --set solver.tol=1e-12 --set output.ascii=true "$@")
  if ! "$H" run "$case" "${common[@]}" --assembly host -q -o "$T/dv-$name-1.vtu" >/dev/null 2>&1; then
    bad "device $name: one process"; continue
  fi
  if [ -n "$host" ] && ! mpi -np "$np" "$H" run "$case" "${common[@]}" --assembly host -q \
       -o "$T/dv-$name-h.vtu" >/dev/null 2>&1; then
    bad "device $name: the host's path -np $np"; continue
  fi
  for mode in auto device; do
    [ $mode = device ] && [ "$name" != box-amg ] && continue
    if ! HOOKE_FEM_EMULATE=1 mpi -np "$np" "$H" run "$case" "${common[@]}" --assembly $mode \
         -o "$T/dv-$name.vtu" >/dev/null 2>"$T/dv-$name.err"; then
      bad "device $name --assembly $mode -np $np: failed"; tail -3 "$T/dv-$name.err"; continue
    fi
    same=1
    for ((q = 0; q < np; q++)); do
      [ -z "$host" ] || cmp -s "$T/dv-$name-h-p$q.vtu" "$T/dv-$name-p$q.vtu" || same=0
    done
    if ! grep -q "assembly: [0-9].* (rows of each part) on cpu$" "$T/dv-$name.err" ||
       ! grep -q "postproc: strains, stresses, reactions in [0-9.]* s on cpu$" "$T/dv-$name.err"; then
      bad "device $name --assembly $mode -np $np: the stage lines do not say cpu"
      grep -E "assembly: [0-9]|postproc:" "$T/dv-$name.err"
    elif [ $same = 0 ]; then
      bad "device $name --assembly $mode -np $np: other bytes than the host's path"
    elif r=$(python3 tests/mpi/compare_vtu.py "$T/dv-$name-1.vtu" "$T/dv-$name.pvtu" 1e-8 stress); then
      bytes=""; [ -n "$host" ] && bytes="the host path's bytes, "
      ok "device $name --assembly $mode -np $np: $bytes${r#compare_vtu: }"
    else bad "device $name --assembly $mode -np $np: $r"; fi
  done
done
# the rows' values left on the device for the solver (the default above) against their
# download first (HOOKE_DIST_RESIDENT=0), and on the device's path of the layer
# (HOOKE_DIST_STAGED=1: the pattern and the gather indices uploaded, the values gathered and
# checked in the backend's memory): the host path's pieces byte for byte
name=box-amg
for env in HOOKE_DIST_RESIDENT=0 HOOKE_DIST_STAGED=1 "HOOKE_DIST_STAGED=1 HOOKE_DIST_RESIDENT=0"; do
  same=1
  if mpi -np 3 env $env HOOKE_FEM_EMULATE=1 "$H" run cases/box/box.yaml --backend cpu \
       --set solver.tol=1e-12 --set output.ascii=true --set geometry.generate.cells=[10,10,10] \
       --set solver.pc=amg --set solver.dist.mesh=whole -q -o "$T/dr.vtu" >/dev/null 2>"$T/dr.err"; then
    for ((q = 0; q < 3; q++)); do cmp -s "$T/dv-$name-h-p$q.vtu" "$T/dr-p$q.vtu" || same=0; done
  else same=0; tail -3 "$T/dr.err"; fi
  if [ $same = 1 ]; then ok "device $name -np 3 with $env: the host path's bytes"
  else bad "device $name -np 3 with $env: failed or other bytes than the host path's"; fi
done
if ! HOOKE_DIST_RESIDENT=yes HOOKE_FEM_EMULATE=1 mpi -np 2 "$H" run cases/box/box.yaml --backend cpu \
     -q -o "$T/dr.vtu" >/dev/null 2>"$T/dr.err" && grep -q "HOOKE_DIST_RESIDENT=yes: set it to 1" "$T/dr.err"; then
  ok "HOOKE_DIST_RESIDENT=yes: refused in one sentence"
else bad "HOOKE_DIST_RESIDENT=yes: not refused by name"; cat "$T/dr.err"; fi
# HOOKE_RUN_PROFILE=1: each process's times of the parts, assembly and postproc stages and
# its device stages on rank 0's log, every second from the mesh to the assembly named, the
# pieces the same bytes; another value refused by name
same=1
if HOOKE_RUN_PROFILE=1 HOOKE_FEM_EMULATE=1 mpi -np 3 "$H" run cases/box/box.yaml --backend cpu \
     --set solver.tol=1e-12 --set output.ascii=true --set geometry.generate.cells=[10,10,10] \
     --set solver.pc=amg --set solver.dist.mesh=whole -o "$T/rp.vtu" >/dev/null 2>"$T/rp.err"; then
  for ((q = 0; q < 3; q++)); do cmp -s "$T/dv-box-amg-h-p$q.vtu" "$T/rp-p$q.vtu" || same=0; done
else same=0; tail -3 "$T/rp.err"; fi
if [ $same = 1 ] &&
   grep -q "parts: per process (s): received (waiting too) [0-9.]*/[0-9.]*/[0-9.]*, unpacked" "$T/rp.err" &&
   grep -q "parts: [0-9.]* s from the mesh to the parts' assembly: .*, other -\?[0-9.]* s$" "$T/rp.err" &&
   grep -q "assembly: per process (s): rows [0-9.]*/[0-9.]*/[0-9.]*," "$T/rp.err" &&
   grep -q "assembly: process 2 on its device (ms): .*pattern [0-9.]*, .*numeric [0-9.]*" "$T/rp.err" &&
   grep -q "postproc: per process (s): halo made [0-9.]*/[0-9.]*/[0-9.]*," "$T/rp.err" &&
   grep -q "postproc: process 1 on its device (ms): .*recover [0-9.]*" "$T/rp.err"; then
  ok "HOOKE_RUN_PROFILE=1 -np 3: each process's stage times on rank 0's log, the same bytes"
else bad "HOOKE_RUN_PROFILE=1 -np 3: lines missing or other bytes"; grep -E "per process|on its device|parts:" "$T/rp.err"; fi
if ! HOOKE_RUN_PROFILE=on mpi -np 2 "$H" run cases/box/box.yaml --backend cpu -q -o "$T/rp.vtu" \
     >/dev/null 2>"$T/rp.err" && grep -q "HOOKE_RUN_PROFILE=on: set it to 1" "$T/rp.err"; then
  ok "HOOKE_RUN_PROFILE=on: refused in one sentence"
else bad "HOOKE_RUN_PROFILE=on: not refused by name"; cat "$T/rp.err"; fi
# the fields' arrays made before the solve and their pages taken on a thread meanwhile
# (HOOKE_RUN_FIELDS_AHEAD, on for a device's recovery): the same bytes as without, the bytes
# taken in the profile; another value refused by name
same=1
for fa in 1 0; do
  HOOKE_RUN_FIELDS_AHEAD=$fa HOOKE_RUN_PROFILE=1 HOOKE_FEM_EMULATE=1 mpi -np 2 "$H" run \
    cases/box/box.yaml --backend cpu --set geometry.generate.cells=[12,12,12] \
    -o "$T/fa$fa.vtu" >/dev/null 2>"$T/fa$fa.err" || { same=0; tail -3 "$T/fa$fa.err"; }
done
for ((q = 0; q < 2; q++)); do cmp -s "$T/fa1-p$q.vtu" "$T/fa0-p$q.vtu" || same=0; done
if [ $same = 1 ] &&
   grep -q "solver freed [0-9.]*/[0-9.]*, fields .*on a thread [0-9.]*/[0-9.]*, MB [0-9.]*/[0-9.]*$" "$T/fa1.err" &&
   ! grep "postproc: per process" "$T/fa1.err" | grep -q "MB 0.00/\|/0.00$" &&
   grep -q "on a thread 0.00/0.00, MB 0.00/0.00$" "$T/fa0.err"; then
  ok "HOOKE_RUN_FIELDS_AHEAD 1 and 0 -np 2: the fields' pages taken during the solve or not, the same bytes"
else bad "HOOKE_RUN_FIELDS_AHEAD 1 and 0 -np 2: other bytes or profile lines"; grep -h "postproc: per" "$T"/fa*.err; fi
if ! HOOKE_RUN_FIELDS_AHEAD=yes mpi -np 2 "$H" run cases/box/box.yaml --backend cpu -q -o "$T/fa.vtu" \
     >/dev/null 2>"$T/fa.err" && grep -q "HOOKE_RUN_FIELDS_AHEAD=yes: set it to 1" "$T/fa.err"; then
  ok "HOOKE_RUN_FIELDS_AHEAD=yes: refused in one sentence"
else bad "HOOKE_RUN_FIELDS_AHEAD=yes: not refused by name"; cat "$T/fa.err"; fi
# the solver kept through a device recovery with room beside it and freed on a thread during
# the output (HOOKE_RUN_SOLVER_FREE, on by default) or before the recovery: the same bytes, on
# 1 and 2 threads, -np 2 and 3; the thread's free in the profile; another value refused by name
same=1
for np in 2 3; do
  for th in 1 2; do
    for sf in 1 0; do
      OMP_NUM_THREADS=$th HOOKE_RUN_SOLVER_FREE=$sf HOOKE_RUN_PROFILE=1 HOOKE_FEM_EMULATE=1 \
        mpi -np $np "$H" run cases/box/box.yaml --backend cpu --set solver.pc=amg \
        --set geometry.generate.cells=[12,12,12] -o "$T/sf$sf.vtu" >/dev/null 2>"$T/sf$sf.err" ||
        { same=0; tail -3 "$T/sf$sf.err"; }
    done
    for ((q = 0; q < np; q++)); do cmp -s "$T/sf1-p$q.vtu" "$T/sf0-p$q.vtu" || same=0; done
    grep -q "output: rank 0's solver freed on a thread in [0-9.]* s" "$T/sf1.err" || same=0
    ! grep -q "solver freed on a thread" "$T/sf0.err" || same=0
  done
done
if [ $same = 1 ]; then
  ok "HOOKE_RUN_SOLVER_FREE 1 and 0 -np 2 and 3, 1 and 2 threads: the solver freed during the output or before the recovery, the same bytes"
else bad "HOOKE_RUN_SOLVER_FREE 1 and 0: other bytes or profile lines"; grep -h "solver freed" "$T"/sf*.err; fi
if ! HOOKE_RUN_SOLVER_FREE=yes mpi -np 2 "$H" run cases/box/box.yaml --backend cpu -q -o "$T/sf.vtu" \
     >/dev/null 2>"$T/sf.err" && grep -q "HOOKE_RUN_SOLVER_FREE=yes: set it to 1" "$T/sf.err"; then
  ok "HOOKE_RUN_SOLVER_FREE=yes: refused in one sentence"
else bad "HOOKE_RUN_SOLVER_FREE=yes: not refused by name"; cat "$T/sf.err"; fi
# a model the device assembly lacks (springs): auto assembles on the host and says why, the
# recovery stays on the device, as on one process
if HOOKE_FEM_EMULATE=1 mpi -np 3 "$H" run cases/springs/springs.yaml --backend cpu -o "$T/dsp.vtu" \
     >/dev/null 2>"$T/dsp.err" &&
   grep -q "(rows of each part) on the host (spring supports add their stiffness to K on the host)$" "$T/dsp.err" &&
   grep -q "postproc: .* on cpu$" "$T/dsp.err"; then
  ok "springs --assembly auto -np 3: assembled on the host (said why), recovered on the device"
else bad "springs --assembly auto -np 3 on the device's path"; grep -E "assembly: [0-9]|postproc:|hooke" "$T/dsp.err"; fi
# a device too small on one process (the emulated device reports 1000 bytes free there):
# --assembly auto leaves that process's stages to the host and the lines say so with its
# sentence, the others stay on theirs, the answer one process's; --assembly device stops
small=(run cases/box/box.yaml --backend cpu --set geometry.generate.cells=[8,8,8] --set solver.pc=jacobi
       --set solver.tol=1e-12 --set output.ascii=true)
"$H" "${small[@]}" -q -o "$T/sm1.vtu" >/dev/null 2>&1 || true
if mpi -np 1 env HOOKE_FEM_EMULATE=1 "$H" "${small[@]}" -o "$T/sm.vtu" : \
       -np 1 env HOOKE_FEM_EMULATE=1 HOOKE_FEM_EMULATE_FREE=1000 "$H" "${small[@]}" -o "$T/sm.vtu" \
       >/dev/null 2>"$T/sm.err" &&
   grep -q "(rows of each part) on cpu, on the host on 1 of 2 processes (the device assembly needs .* GB is free; .*)$" "$T/sm.err" &&
   grep -q "postproc: .* on cpu, on the host on 1 of 2 processes (.*)$" "$T/sm.err" &&
   r=$(python3 tests/mpi/compare_vtu.py "$T/sm1.vtu" "$T/sm.pvtu" 1e-8 stress); then
  ok "a device too small on 1 of 2 processes: that one on the host, said so; ${r#compare_vtu: }"
else bad "a device too small on 1 of 2 processes: ${r:-}"; grep -E "assembly: [0-9]|postproc:|hooke" "$T/sm.err"; fi
set +e
out=$(mpi -np 1 env HOOKE_FEM_EMULATE=1 "$H" "${small[@]}" --assembly device -o "$T/sm.vtu" : \
      -np 1 env HOOKE_FEM_EMULATE=1 HOOKE_FEM_EMULATE_FREE=1000 "$H" "${small[@]}" --assembly device \
      -o "$T/sm.vtu" 2>&1); rc=$?
set -e
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "^hooke run: the device assembly needs .* GB is free" <<<"$out"; then
  ok "a device too small on 1 of 2 processes, --assembly device: its sentence, exit $rc"
else bad "a device too small, --assembly device: exit $rc"; echo "$out" | head -5; fi
# the JSON summary names where the stages ran: the device's on every process, or the host
on_of() { python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); print(j["assembled_on"], j["recovered_on"])'; }
dj=$(HOOKE_FEM_EMULATE=1 mpi -np 2 "$H" run cases/box/box.yaml --backend cpu --json -q -o "$T/dj.vtu" 2>/dev/null | on_of)
hj=$(HOOKE_FEM_EMULATE=1 mpi -np 2 "$H" run cases/box/box.yaml --backend cpu --assembly host --json -q -o "$T/hj.vtu" 2>/dev/null | on_of)
if [ "$dj" = "cpu cpu" ] && [ "$hj" = "host host" ]; then
  ok "--json -np 2: assembled_on and recovered_on the device's (cpu), with --assembly host the host"
else bad "--json -np 2: assembled_on, recovered_on '$dj' and with --assembly host '$hj'"; fi

echo "test_mpi: hooke bench scale (iterations of the host path, --resident and HOOKE_DIST_STAGED=1)"
# --resident hands each process's K over in the backend's memory (hk_solver_create_resident on
# one process, hk_solver_create_dist_resident on two; on the cpu that memory is the host's);
# HOOKE_DIST_STAGED=1 sends the host rows the device's way (uploaded once, put in order there):
# the same problems, so the same iterations in every row, one process's and two's
its() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(" ".join("%s:%s:%d/%d" % (s["series"], s["method"], s["iterations_1"], s["iterations_p"]) for s in j["solver"]))' "$1"; }
scale=(bench scale --backend cpu --pc amg --methods cg,pipecg --n 6 --run-cells 0)
if mpi -np 2 "$H" "${scale[@]}" --json "$T/sh.json" >"$T/sh.log" 2>&1 &&
   mpi -np 2 "$H" "${scale[@]}" --resident --json "$T/sr.json" >"$T/sr.log" 2>&1 &&
   HOOKE_DIST_STAGED=1 mpi -np 2 "$H" "${scale[@]}" --json "$T/ss.json" >"$T/ss.log" 2>&1 &&
   grep -q '"resident": 1' "$T/sr.json" && sh=$(its "$T/sh.json") && [ -n "$sh" ] &&
   [ "$sh" = "$(its "$T/sr.json")" ] && [ "$sh" = "$(its "$T/ss.json")" ]; then
  ok "bench scale -np 2 pc=amg: --resident and HOOKE_DIST_STAGED=1 as the host path ($sh)"
else bad "bench scale -np 2: host '$(its "$T/sh.json" 2>/dev/null)', --resident '$(its "$T/sr.json" 2>/dev/null)', staged '$(its "$T/ss.json" 2>/dev/null)'"
  tail -3 "$T/sh.log" "$T/sr.log" "$T/ss.log"; fi

# the weak series of both shapes against one process of 6^3 cells (3 x 7^3 = 1029 DOFs): the slab
# 6 x 6 x 12 (3 x 7 x 7 x 13 = 1911 DOFs), the cube 8^3 (8 the multiple of 2 nearest 6 x 2^(1/3)
# = 7.6: 3 x 9^3 = 2187 DOFs), each row's DOFs a process and weak-cube's efficiency per DOF a
# process from the row's own times; the whole run of 3^3 cells (192 DOFs) against the slab
# 3 x 3 x 6 (336) and the cube 4^3 (375); --weak and --run-shape keep one shape each
rows() { python3 - "$@" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
want = {"weak": 1911, "weak-cube": 2187, "strong": 1911}
got = []
for s in j["solver"]:
    one = s["dofs_1"] if s["series"] != "strong" else s["dofs"]
    t1, tp = s["setup_1"] + s["solve_1"], s["setup_p"] + s["solve_p"]
    per_dof = s["dofs"] / 2 / s["dofs_1"] if s["series"] == "weak-cube" else 1
    ratio = s["efficiency"] if s["series"].startswith("weak") else s["speedup"]
    assert s["dofs"] == want[s["series"]] and one == (1029 if s["series"] != "strong" else 1911)
    assert s["dofs_per_process_p"] == s["dofs"] / 2
    assert abs(ratio - per_dof * t1 / tp) <= 1e-4 * ratio, s  # the JSON's 6 digits
    got.append("%s:%s" % (s["series"], s["method"]))
for key, dofs, cells in (("run", 336, None), ("run_cube", 375, 4)):
    if key in j:
        r = j[key]
        assert r["dofs"] == dofs and r["dofs_1"] == 192 and r.get("cube_cells") == cells, r
        got.append(key)
assert j.get("cube_cells", 8) == 8
print(" ".join(got))
PY
}
cube=(bench scale --backend cpu --pc jacobi --methods cg --n 6 --run-cells 3)
if r1=$(rows "$T/sh.json") &&
   [ "$r1" = "weak:cg strong:cg weak:pipecg strong:pipecg weak-cube:cg weak-cube:pipecg" ] &&
   mpi -np 2 "$H" "${cube[@]}" --json "$T/wc.json" >"$T/wc.md" 2>&1 &&
   [ "$(rows "$T/wc.json")" = "weak:cg strong:cg weak-cube:cg run run_cube" ] &&
   grep -q '^| weak-cube | cg | mpi | 1029 | 2187 (1093) | ' "$T/wc.md" &&
   grep -q '^| weak | cg | mpi | 1029 | 1911 (955) | ' "$T/wc.md" &&
   grep -q '^| cube | auto | 2 | 192 | 375 (187) | ' "$T/wc.md" && grep -q '^| slab | auto | 2 | 192 | 336 (168) | ' "$T/wc.md" &&
   mpi -np 2 "$H" "${cube[@]}" --weak cube --no-strong --run-shape slab --json "$T/wo.json" >"$T/wo.md" 2>&1 &&
   [ "$(rows "$T/wo.json")" = "weak-cube:cg run" ] &&
   mpi -np 2 "$H" "${cube[@]}" --weak slab --json "$T/ws.json" >"$T/ws.md" 2>&1 &&
   [ "$(rows "$T/ws.json")" = "weak:cg strong:cg run" ]; then
  ok "bench scale -np 2: weak (6x6x12) and weak-cube (8^3) rows, their DOFs, per-DOF efficiency, the whole run's slab and cube, --weak and --run-shape"
else bad "bench scale -np 2 weak-cube: rows '${r1:-}', '$(rows "$T/wc.json" 2>&1 | tail -1)', '$(rows "$T/wo.json" 2>&1 | tail -1)', '$(rows "$T/ws.json" 2>&1 | tail -1)'"
  tail -5 "$T/wc.md" "$T/wo.md" "$T/ws.md" 2>/dev/null; fi
set +e; out=$("$H" bench scale --backend cpu --weak cubes 2>&1); rc=$?; set -e
if [ $rc = 2 ] && [ "$out" = "hooke bench scale: --weak 'cubes' is not slab, cube or both" ]; then
  ok "bench scale --weak cubes: refused in one sentence"
else bad "bench scale --weak cubes: exit $rc: $out"; fi
# --comm with two transports: every series' row and the whole run once with each
if mpi -np 2 "$H" bench scale --backend cpu --pc jacobi --methods cg --n 4 --run-cells 3 --no-strong \
     --weak slab --run-shape slab --comm mpi,auto --json "$T/two.json" >"$T/two.md" 2>&1 &&
   r=$(python3 - "$T/two.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
rows = [(s["series"], s["comm"]) for s in j["solver"]]
assert rows == [("weak", "mpi"), ("weak", "mpi")], rows  # auto is mpi: the row names it
assert j["run_mpi"]["comm"] == "mpi" and j["run_auto"]["comm"] == "auto", j
print(len(rows), "rows")
PY
) && grep -q '^| slab | mpi | 2 | ' "$T/two.md" && grep -q '^| slab | auto | 2 | ' "$T/two.md"; then
  ok "bench scale --comm mpi,auto: every series and the whole run with each ($r)"
else bad "bench scale --comm mpi,auto: ${r:-}"; tail -5 "$T/two.md"; fi
set +e; out=$("$H" bench scale --backend cpu --comm mpi,foo 2>&1); rc=$?; set -e
if [ $rc = 2 ] && grep -q "^hooke bench scale: --comm 'mpi,foo': give up to 3 of auto, mpi, nccl" <<<"$out"; then
  ok "bench scale --comm mpi,foo: refused in one sentence"
else bad "bench scale --comm mpi,foo: exit $rc: $out"; fi

echo "test_mpi: summaries, determinism, refusals"
# the summary's reduced numbers: the one-process reactions and maxima to rounding
one=$("$H" run cases/springs/springs.yaml --json -q -o "$T/j1.vtu" 2>/dev/null)
many=$(mpi -np 3 "$H" run cases/springs/springs.yaml --json -q -o "$T/j3.vtu" 2>/dev/null)
if python3 - "$one" "$many" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def close(x, y, tol=1e-8):
    return abs(x - y) <= tol * max(abs(x), abs(y), 1e-300)
ok = a["dofs"] == b["dofs"] and a["nonzeros"] == b["nonzeros"] and a["elements"] == b["elements"]
ok &= close(a["max_displacement"], b["max_displacement"]) and close(a["max_von_mises"], b["max_von_mises"])
scale = max(abs(v) for r in a["reactions"] for v in r["force"])  # the load carried
for ra, rb in zip(a["reactions"], b["reactions"]):
    ok &= all(abs(x - y) <= 1e-8 * scale for x, y in zip(ra["force"], rb["force"]))
sys.exit(0 if ok else 1)
PY
then ok "springs --json -np 3: DOFs, nonzeros, max |u|, max von Mises, reactions as one process"
else bad "springs --json -np 3: the summary differs from one process's"; fi
# distributed AMG: iterations within 30 % of one process's (elasticity, rigid-body modes)
its() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["iterations"])'; }
amg=(cases/box/box.yaml --set geometry.generate.cells=[12,12,12] --set solver.pc=amg --json -q)
i1=$("$H" run "${amg[@]}" -o "$T/a1.vtu" 2>/dev/null | its)
for np in 2 3; do
  inp=$(HOOKE_AMG_PROFILE=1 mpi -np $np "$H" run "${amg[@]}" -o "$T/a$np.vtu" 2>"$T/a$np.err" | its)
  if [ -n "$inp" ] && [ "$inp" -le $((i1 * 13 / 10)) ]; then
    ok "box amg -np $np: $inp iterations (one process: $i1)"
  else bad "box amg -np $np: ${inp:-no} iterations, one process $i1"; fi
done
# HOOKE_AMG_PROFILE: rank 0's one line of the set-up's phases, and one of their steps
if [ "$(grep -c 'amg set-up (distributed, 2 processes' "$T/a2.err")" = 1 ] &&
   grep -q 'ghost rows [0-9.]* ([0-9.]*), P smoothing .*, R .*, total [0-9.]* ([0-9.]*); before it (wall): layout [0-9.]*, .*; since the layout [0-9.]*$' "$T/a2.err" &&
   [ "$(grep -c '^amg set-up steps' "$T/a2.err")" = 1 ] &&
   grep -q '^amg set-up steps (.*): operators: halo plans [0-9.]* ([0-9.]*), .*Galerkin: products [0-9.]* ([0-9.]*), .*coarsest: unsplit .*, inverse [0-9.]* ([0-9.]*); layout (wall): check [0-9.]*, .*, host values [0-9.]*$' "$T/a2.err"; then
  ok "HOOKE_AMG_PROFILE -np 2: one line of phases, one of their steps"
else bad "HOOKE_AMG_PROFILE -np 2: no line of phases or of steps"; cat "$T/a2.err"; fi
# the set-up's threads change no byte (its loops fill rows apart)
OMP_NUM_THREADS=3 mpi -np 2 "$H" run "${amg[@]}" -o "$T/t3.vtu" >/dev/null 2>&1
if cmp -s "$T/a2-p0.vtu" "$T/t3-p0.vtu" && cmp -s "$T/a2-p1.vtu" "$T/t3-p1.vtu"; then
  ok "box amg -np 2 with 1 and 3 threads: the pieces repeat byte for byte"
else bad "box amg -np 2: 3 threads give other bytes than 1"; fi
# pc.amg.dist.gather_rows: the small levels on every process (the default) against every level
# distributed (0): x to 1e-10 with the same iterations, the bytes of 1 thread on 3; and
# HOOKE_DIST_PROFILE's one line: with the levels gathered no exchange below level 0 but R0 and
# the gather of level 1 (G1), without them the coarse levels' A, P and R
gs=(solve --generate elasticity3d:12 method=cg pc=amg pc.amg.coarse_size=40)
for np in 2 3; do
  mpi -np $np "$H" "${gs[@]}" pc.amg.dist.gather_rows=0 -o "$T/g0.mtx" >"$T/g0.log" 2>"$T/g0.err" || true
  HOOKE_DIST_PROFILE=1 mpi -np $np "$H" "${gs[@]}" pc.amg.dist.gather_rows=0 -o "$T/gp.mtx" >/dev/null 2>"$T/gp.err" || true
  HOOKE_DIST_PROFILE=1 mpi -np $np "$H" "${gs[@]}" -o "$T/g1.mtx" >"$T/g1.log" 2>"$T/g1.err" || true
  OMP_NUM_THREADS=3 mpi -np $np "$H" "${gs[@]}" -o "$T/g3.mtx" >/dev/null 2>&1 || true
  i0=$(grep -o 'iterations: [0-9]*' "$T/g0.log" || true); i1=$(grep -o 'iterations: [0-9]*' "$T/g1.log" || true)
  if [ -n "$i0" ] && [ "$i0" = "$i1" ] && r=$(python3 tests/mpi/compare_mtx.py "$T/g0.mtx" "$T/g1.mtx" 1e-10) &&
     cmp -s "$T/g1.mtx" "$T/g3.mtx"; then
    ok "amg levels on every process -np $np: ${r#compare_mtx: }, $i1 as distributed, 1 and 3 threads byte for byte"
  else bad "amg levels on every process -np $np: ${i0:-no} / ${i1:-no} iterations, ${r:-}"; tail -3 "$T/g1.err"; fi
  line="dist profile \\($np processes, mpi; the slowest process's wall seconds\\): solve [0-9.]+ s, [0-9]+ iterations; exchanges [0-9]+ \\([0-9.]+ an iteration\\) [0-9.]+ s \\(staging [0-9.]+, transport [0-9.]+\\):"
  if [ "$(grep -c 'dist profile' "$T/g1.err")" = 1 ] && grep -Eq "$line A0 [0-9]+ [0-9.]+ \\([0-9.]+, [0-9.]+\\), R0 [0-9]+ [0-9.]+ \\([0-9.]+, [0-9.]+\\), G1 [0-9]+ [0-9.]+ \\([0-9.]+, [0-9.]+\\); sums [0-9]+ \\([0-9.]+ an iteration\\) .*waited [0-9.]+ s of [0-9.]+ \\([0-9.]+ %\\)$" "$T/g1.err" &&
     grep -Eq "$line A0 .*, A1 .*, P0 .*, R0 .*; sums" "$T/gp.err" && ! grep -q 'dist profile' "$T/g0.err"; then
    ok "HOOKE_DIST_PROFILE -np $np: one line, exchanges by level (gathered: A0, R0, G1)"
  else bad "HOOKE_DIST_PROFILE -np $np: no line or not the exchanges expected"; cat "$T/g1.err" "$T/gp.err"; fi
  # its second line: the solve's steps outside the iterations
  steps="^dist solve steps \\(the slowest process's wall seconds\\): all [0-9.]+ s; check b, x [0-9.]+, upload [0-9.]+, b's norm [0-9.]+; method [0-9.]+ \\(first residual [0-9.]+, first pc [0-9.]+, iterations [0-9.]+\\); true residual [0-9.]+, last sync [0-9.]+; download x [0-9.]+$"
  if [ "$(grep -c 'dist solve steps' "$T/g1.err")" = 1 ] && grep -Eq "$steps" "$T/g1.err" &&
     ! grep -q 'dist solve steps' "$T/g0.err"; then
    ok "HOOKE_DIST_PROFILE -np $np: the solve's steps in a second line"
  else bad "HOOKE_DIST_PROFILE -np $np: no steps line or not its form"; cat "$T/g1.err"; fi
done
# hooke run's stage around the solve call (rank 0's line)
HOOKE_DIST_PROFILE=1 mpi -np 2 "$H" run cases/box/box.yaml --set geometry.generate.cells=[8,8,8] --set solver.pc=amg -o "$T/pr.vtu" >/dev/null 2>"$T/pr.err" || true
if [ "$(grep -c 'dist solve stage' "$T/pr.err")" = 1 ] &&
   grep -Eq "^dist solve stage \\(rank 0\\): [0-9.]+ s: the assembled K freed [0-9.]+, the solve call [0-9.]+, the rest -?[0-9.]+$" "$T/pr.err"; then
  ok "HOOKE_DIST_PROFILE hooke run -np 2: the solve stage around the call in one line"
else bad "HOOKE_DIST_PROFILE hooke run -np 2: no stage line or not its form"; cat "$T/pr.err"; fi
# three parts (two neighbours each side, routed coarse rows): the layout's chunks of rows and
# the set-up's fills on 2 threads give the bytes of 1
OMP_NUM_THREADS=2 mpi -np 3 "$H" run "${amg[@]}" -o "$T/t23.vtu" >/dev/null 2>&1
if cmp -s "$T/a3-p0.vtu" "$T/t23-p0.vtu" && cmp -s "$T/a3-p1.vtu" "$T/t23-p1.vtu" &&
   cmp -s "$T/a3-p2.vtu" "$T/t23-p2.vtu"; then
  ok "box amg -np 3 with 1 and 2 threads: the pieces repeat byte for byte"
else bad "box amg -np 3: 2 threads give other bytes than 1"; fi
# a device's path of the distributed layer and the AMG set-up (copies, downloads, uploads,
# staged halos instead of views) on the cpu: the same bytes
HOOKE_DIST_STAGED=1 mpi -np 2 "$H" run "${amg[@]}" -o "$T/s2.vtu" >/dev/null 2>&1
if cmp -s "$T/a2-p0.vtu" "$T/s2-p0.vtu" && cmp -s "$T/a2-p1.vtu" "$T/s2-p1.vtu"; then
  ok "box amg -np 2 on the device's path (HOOKE_DIST_STAGED=1): the pieces byte for byte"
else bad "box amg -np 2: the device's path (HOOKE_DIST_STAGED=1) gives other bytes"; fi
if ! HOOKE_DIST_STAGED=yes mpi -np 2 "$H" run "${amg[@]}" -o "$T/s3.vtu" >/dev/null 2>"$T/s3.err" &&
   grep -q "HOOKE_DIST_STAGED=yes: set it to 1" "$T/s3.err"; then
  ok "HOOKE_DIST_STAGED=yes: refused in one sentence"
else bad "HOOKE_DIST_STAGED=yes: not refused by name"; cat "$T/s3.err"; fi
# the same run twice: the same bytes
mpi -np 2 "$H" run cases/kirsch/kirsch.yaml -q -o "$T/d1.vtu" >/dev/null 2>&1
mpi -np 2 "$H" run cases/kirsch/kirsch.yaml -q -o "$T/d2.vtu" >/dev/null 2>&1
if cmp -s "$T/d1-p0.vtu" "$T/d2-p0.vtu" && cmp -s "$T/d1-p1.vtu" "$T/d2-p1.vtu"; then
  ok "kirsch -np 2 twice: the pieces repeat byte for byte"
else bad "kirsch -np 2 twice: the pieces differ"; fi
# refusals: one sentence, exit 1, every process stops
refuse() { # what | expected text | command...
  local what=$1 text=$2; shift 2
  set +e; out=$(mpi -np 2 "$@" 2>&1); rc=$?; set -e
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q -- "$text" <<<"$out"; then ok "$what"
  else bad "$what (exit $rc)"; echo "$out" | head -5; fi
}
refuse "pc.amg.format refused by name" "pc.amg.format=csr is not distributed" \
  "$H" run cases/box/box.yaml --set solver.pc=amg --set solver.pc.amg.format=csr -q -o "$T/r.vtu"
refuse "pc=ilu0 refused by name" "pc=ilu0 is not distributed yet" \
  "$H" solve --generate poisson:8 pc=ilu0 method=gmres
refuse "method=cholesky refused by name" "method=cholesky (the sparse direct solver) runs on one process" \
  "$H" solve --generate poisson:8 method=cholesky
refuse "a missing case file: rank 0's sentence" "cannot open case file" \
  "$H" run "$T/none.yaml"
refuse "load_cases refused" "load_cases run on one process" \
  "$H" run cases/remote/tube.yaml -q -o "$T/r.vtu"
refuse "hooke mesh on one process only" "runs on one process" "$H" mesh cases/box/box.yaml
# what main runs on one process only: refused by name under mpirun, not run wrongly
refuse "a modal case refused" "a modal analysis runs on one process" \
  "$H" run cases/modal/strip.yaml -q -o "$T/r.vtu"
refuse "--assembly device on the cpu backend refused" "--assembly device needs the solve on a device" \
  "$H" run cases/box/box.yaml --backend cpu --assembly device -q -o "$T/r.vtu"
refuse "--assembly device with springs refused" "--assembly device: spring supports add their stiffness" \
  env HOOKE_FEM_EMULATE=1 "$H" run cases/springs/springs.yaml --backend cpu --assembly device -q -o "$T/r.vtu"
refuse "hooke solve --eigen refused" "--eigen runs on one process" \
  "$H" solve --generate poisson:8 --eigen 2
refuse "solver.dist.partition of a bad value refused" "solver.dist.partition 'corse' is not valid; choose auto" \
  "$H" run cases/kirsch/kirsch.yaml --set solver.dist.partition=corse -q -o "$T/r.vtu"
refuse "solver.dist.mesh of a bad value refused" "solver.dist.mesh 'part' is not valid; choose whole" \
  "$H" run cases/kirsch/kirsch.yaml --set solver.dist.mesh=part -q -o "$T/r.vtu"
refuse "dist.comm=nccl on the cpu refused" "dist.comm=nccl" \
  "$H" solve --generate poisson:8 --backend cpu dist.comm=nccl

if [ $fails -ne 0 ]; then echo "test_mpi: $fails failed"; exit 1; fi
echo "test_mpi: all passed"
