#!/usr/bin/env bash
# One device call of a development session (not used by CI): build on the GPU host from the
# bundle, then run the steps given as arguments, each writing OUT/<name>.md (at most 8 files
# come back). Steps: tests=SUITES (comma list), spmv, app, pipecg, pcs, mpk and the others of
# the case list below (wide, pipeformats: issue 11's open measurements; seedkrylov: issue 30's
# cgcg and pipecg variants; pcpapers: issue 30's preconditioner experiments; tri2, tri2ncu,
# mpk2: issue 30's sync-free triangular solve and matrix powers staged in shared memory;
# prof: issue 25's stages at 19M DOFs; ncuasm: Nsight Compute on the device assembly's kernels;
# numvar: issue 25's variants of the device assembly's numeric kernel (HOOKE_FEM_NUMERIC);
# femvar: the numeric kernel's (HOOKE_FEM_NUMERIC) and the recovery's (HOOKE_FEM_RECOVER)
# variants beside the defaults at 19.3M DOFs, with the recovery's parts (60 s at most);
# amgsweep: issue 29's AMG knobs and values-only update at three bracket sizes; amgsetup2: issue
# 29's AMG set-up and update phases side by side at 2.52M and 19.3M DOFs; dist: issue 26's
# distributed runs on a host with 2 GPUs, one process each; distamg: distributed AMG on 1 and 2 GPUs;
# scale: weak and strong scaling on 1, 2 and 4 GPUs; iodiag, outsweep: the .vtu writer's threads
# in pwrite beside the file system's one-writer (dd-like) speed).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?}
scripts/gpu-check.sh "$OUT/check" info > "$OUT/check.log" 2>&1
export LD_LIBRARY_PATH=/tmp/hooke-prefix/fallback:/tmp/hooke-prefix/gmsh/lib
export OMP_WAIT_POLICY=passive
B=build-gpu
# the device's copy of .git may be older than the tree sent with the call: say how many tracked
# files differ from the commit named, so a figure is not credited to that commit alone
{ git log --oneline -1
  echo "tracked files differing from that commit: $(git diff --name-only HEAD 2>/dev/null | wc -l)"
  cat "$OUT/check/info.txt"; tail -3 "$OUT/check/build.log"; } > "$OUT/info.md" 2>&1
rm -rf "$OUT/check"

# The stacks of the hooke processes running case $1 (a run that has not ended in time).
dist_stacks() {
  local p r
  for p in $(pgrep -f "hooke run $1"); do
    [ "$(basename "$(readlink /proc/$p/exe)")" = hooke ] || continue # not timeout, mpirun
    r=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -m1 '^OMPI_COMM_WORLD_RANK=')
    echo "== process $p, rank ${r:-(no mpirun)}"
    if command -v gdb > /dev/null; then # the main thread (MPI's and CUDA's own wait anyway)
      timeout 20 gdb -p $p -batch -ex 'thread apply 1 bt 16' 2>/dev/null | grep -E '^#' | head -16
    else
      echo "no gdb; wait channel $(cat /proc/$p/wchan 2>/dev/null), state $(awk '{print $3}' /proc/$p/stat 2>/dev/null)"
    fi
  done
}

# One bracket run of step dist (size, method, processes, dist.comm or - on one process, name;
# T, B, BR, MPI as there), reported as it ends; its exit status appended to $T/status as
# "status method processes comm".
dist_run() {
  local size=$1 m=$2 np=$3 comm=$4 n=$5 t0=$SECONDS rc watch
  local run=($B/hooke run $BR --backend cuda --json --set geometry.size=$size
             --set solver.method=$m --set solver.pc=jacobi -o $T/$n.vtu)
  [ $comm != - ] && run+=(--set solver.dist.comm=$comm)
  ( sleep 50; dist_stacks "$BR" ) > $T/$n.stacks 2>&1 &
  watch=$!
  if [ $np = 1 ]; then timeout -k 5 60 "${run[@]}" > $T/$n.json 2> $T/$n.err
  else timeout -k 5 60 "${MPI[@]}" -np $np "${run[@]}" > $T/$n.json 2> $T/$n.err; fi
  rc=$?
  kill $watch 2>/dev/null; wait $watch 2>/dev/null
  echo "$rc $m $np $comm" >> $T/status
  echo "$m at $size on $np process(es), dist.comm $comm: exit $rc$( [ $rc = 124 ] && echo ' (timed out)') in $((SECONDS - t0)) s"
  grep -v 'solve: iteration' $T/$n.err | tail -3 | sed 's/^/    /'
  grep 'solve: iteration' $T/$n.err | tail -1 | sed 's/^/    /'
  [ -s $T/$n.stacks ] && { echo "    stacks at 50 s:"; sed 's/^/      /' $T/$n.stacks | head -80; }
  [ $n = small ] && rm -f $T/$n.json $T/$n.err # not in the table below
  return 0
}

# Step dist (issue 26, docs/parallel.md; a host with 2 GPUs, the build with MPI): the device
# suite cuda_dist, the distributed layer's tests on cuda under mpirun -np 2 (both transports,
# dist.comm=mpi and nccl, against one process, nccl's bytes repeated; a transport failing on one
# process ends the run), then the bracket at geometry.size=0.0015 (631k DOFs) with pc=jacobi on
# one process and under mpirun -np 2 (one GPU per process, chosen by its local rank) with
# dist.comm=mpi and nccl: max |u| against one process, ms per iteration of cg and pipecg; last
# hooke bench scale's steady-state solves (medians) on 1 and 2 GPUs, for each transport.
dist_step() {
  local ngpu T=/tmp/hooke-dist BR=cases/bracket/bracket.yaml
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  echo "# dist: $(git log --oneline -1 | cut -c1-60), $ngpu GPUs"
  nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
  echo; $B/hooke info | grep -E "^(mpi|partitions)"
  if [ ! -x $B/hooke_mpi_tests ]; then
    echo "built without MPI (see check.log's configure): nothing distributed to run"; return 1
  fi
  if [ "$ngpu" -lt 2 ]; then echo "needs 2 GPUs, this host has $ngpu: run on nvidia-h100-x2"; return 1; fi
  # root in the container; no cross-memory attach between the processes' shared memory
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  local MPI=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=8
             -x OMP_WAIT_POLICY -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE)
  echo; echo "## hooke_tests cuda_dist"; echo '```'
  timeout 120 $B/hooke_tests cuda_dist 2>&1 | tail -6; echo "exit ${PIPESTATUS[0]}"; echo '```'
  echo; echo "## mpirun -np 2 hooke_mpi_tests on cuda"; echo '```'
  timeout 180 "${MPI[@]}" -x HOOKE_TEST_BACKEND=cuda -np 2 $B/hooke_mpi_tests 2>&1 | grep -v ' ok$'
  echo "exit ${PIPESTATUS[0]}"; echo '```'
  echo; echo "## mpirun -np 2 hooke_mpi_tests --fatal on cuda (must end, not 0, not 124)"; echo '```'
  timeout 60 "${MPI[@]}" -x HOOKE_TEST_BACKEND=cuda -np 2 $B/hooke_mpi_tests --fatal 2>&1 | head -4
  echo "exit ${PIPESTATUS[0]}"; echo '```'
  rm -rf $T; mkdir -p $T
  # each run bounded by 60 s (seconds expected) and reported as it ends, with rank 0's last
  # stage lines (no -q), so that a run cut off shows where it stopped; 50 s in, a run still going
  # has its processes' stacks taken (gdb where the host has it, else the kernel's wait channel).
  # First a small run on 2 processes (65k DOFs): if it does not end, the large ones are skipped.
  echo; echo "## the runs as they end (bracket, pc=jacobi, --backend cuda)"; echo '```'
  dist_run 0.004 cg 2 nccl small
  if [ "$(tail -1 $T/status | cut -d' ' -f1)" = 124 ]; then
    echo "the small run did not end: the runs at 0.0015 are skipped"
  else
    for m in cg pipecg; do
      dist_run 0.0015 $m 1 - $m-1
      for comm in mpi nccl; do dist_run 0.0015 $m 2 $comm $m-2-$comm; done
    done
  fi
  echo '```'
  echo; echo "## bracket, geometry.size=0.0015, pc=jacobi, --backend cuda"; echo
  python3 - $T <<'PY'
import json, os, sys
T = sys.argv[1]
st = {tuple(l.split()[1:]): l.split()[0] for l in open(os.path.join(T, "status"))}
print("| method | processes | dist.comm | exit | DOFs | iterations | set-up s | solve s | ms/iteration | max abs(u) | rel. diff to 1 process | assembled on |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
base, rows = {}, []
for m in ("cg", "pipecg"):
    for np, comm in (("1", "-"), ("2", "mpi"), ("2", "nccl")):
        name = "%s-%s" % (m, np) + ("" if comm == "-" else "-" + comm)
        try:
            j = json.loads(open(os.path.join(T, name + ".json")).read())
        except Exception:
            try:
                err = open(os.path.join(T, name + ".err")).read().strip().splitlines()
            except OSError:
                err = ["not run"]
            print("| %s | %s | %s | %s | | | | | | | | %s |" % (m, np, comm, st.get((m, np, comm), "?"), (err or ["no output"])[-1][:120]))
            continue
        s, it, u = j["seconds"], j["iterations"], j["max_displacement"]
        if np == "1": base[m] = u
        d = abs(u - base[m]) / abs(base[m]) if m in base and base[m] else float("nan")
        print("| %s | %s | %s | %s | %d | %d | %.3f | %.3f | %.4f | %.9e | %.1e | %s |" % (m, np, comm, st.get((m, np, comm), "?"), j["dofs"], it, s["solver_setup"], s["solve"], 1e3 * s["solve"] / max(it, 1), u, d, j.get("assembled_on", "")))
PY
  echo; echo "solver lines:"; grep -h '"solver"' $T/*.json | sort -u
  for f in $T/*.err; do [ -s $f ] && { echo "== $f"; tail -4 $f; }; done
  for comm in mpi nccl; do
    echo; echo "## mpirun -np 2 hooke bench scale --backend cuda --comm $comm (cg, pipecg, jacobi; medians of 3 solves)"
    timeout 120 "${MPI[@]}" -np 2 $B/hooke bench scale --backend cuda --comm $comm \
      --methods cg,pipecg --pc jacobi --n 64 --run-cells 0 2>&1 | tail -12
  done
  rm -rf $T
}
# Step numvar (issue 25, docs/assembly.md): the device assembly's numeric kernel per variant of
# HOOKE_FEM_NUMERIC on the bracket at geometry.size=0.001 (meshed once), three runs each: the
# "numeric" stage (ms) and the run's assembly (s); medians, the fastest first. The solve is cut
# to one jacobi iteration (not measured here; such a run exits 1, not converged). Then Nsight
# Compute on k_numeric at geometry.size=0.0015, d3 (the default's reference) and the fastest.
numvar_step() {
  local T=/tmp/hooke-numvar BR=cases/bracket/bracket.yaml v r rc num asm best
  local VARIANTS="d3,sorted d3 sorted plain"
  rm -rf $T; mkdir -p $T
  echo "# numvar: $(git log --oneline -1 | cut -c1-60)"
  nvidia-smi --query-gpu=name --format=csv,noheader
  timeout 120 $B/hooke mesh $BR --set geometry.size=0.001 -o $T/b.msh --quiet || { echo "meshing failed"; return 1; }
  for v in $VARIANTS; do
    for r in 1 2 3; do
      HOOKE_FEM_NUMERIC=$v HOOKE_ASSEMBLY_PROFILE=1 timeout 120 $B/hooke run $BR --backend cuda \
        --set geometry.file=$T/b.msh --set solver.pc=jacobi --set solver.maxit=1 \
        -o $T/x.vtu > $T/run.log 2>&1
      rc=$?
      num=$(grep -m1 'device assembly: numeric' $T/run.log | awk '{print $(NF-1)}')
      asm=$(grep -m1 -E 'assembly: .* nonzeros in .* on cuda' $T/run.log | sed -E 's/.* in ([0-9.]+) s.*/\1/')
      echo "$v $r $rc ${num:--} ${asm:--}" >> $T/times
      grep -E 'DOFs|error|hooke:' $T/run.log | grep -v iteration | head -2 > $T/last.log
    done
  done
  echo; echo "## numeric stage per variant (bracket, geometry.size=0.001; 3 runs)"; echo
  head -1 $T/last.log
  best=$(python3 - $T/times <<'PY'
import sys, statistics
rows = {}
for l in open(sys.argv[1]):
    f = l.split()
    v, rc = f[0], f[2]
    num = float(f[3]) if f[3] != "-" else None
    asm = float(f[4]) if f[4] != "-" else None
    rows.setdefault(v, []).append((rc, num, asm))
print("| HOOKE_FEM_NUMERIC | numeric ms (runs) | median | assembly s (median) | exits |", file=sys.stderr)
print("|---|---|---:|---:|---|", file=sys.stderr)
done = []
for v, rs in rows.items():
    nums = [r[1] for r in rs if r[1] is not None]
    asms = [r[2] for r in rs if r[2] is not None]
    med = statistics.median(nums) if nums else float("inf")
    done.append((med, v, nums, asms, [r[0] for r in rs]))
for med, v, nums, asms, rcs in sorted(done):
    print("| %s | %s | %.2f | %s | %s |" % (v, " ".join("%.2f" % x for x in nums), med,
          "%.3f" % statistics.median(asms) if asms else "", " ".join(rcs)), file=sys.stderr)
ok = [d for d in sorted(done) if d[0] != float("inf")]
print(ok[0][1] if ok else "d3")
PY
  )
  echo; echo "fastest: $best"
  for v in d3 $best; do
    echo; echo "## ncu k_numeric, HOOKE_FEM_NUMERIC=$v (bracket, geometry.size=0.0015)"; echo '```'
    HOOKE_FEM_NUMERIC=$v timeout 240 ncu --kernel-name regex:k_numeric --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
      --section WarpStateStats --section LaunchStats --section SchedulerStats \
      $B/hooke run $BR --backend cuda --set geometry.size=0.0015 --set solver.pc=jacobi \
      --set solver.maxit=1 -o $T/n.vtu 2>&1 |
      grep -vE 'solve: iteration|^\[' | tail -120
    echo '```'
    [ $v = d3 ] && [ $best = d3 ] && break
  done
  rm -rf $T
}
# Step femvar (issue 25, docs/assembly.md): the device assembly's numeric stage per
# HOOKE_FEM_NUMERIC and the recovery's recover stage per HOOKE_FEM_RECOVER, the defaults first,
# on the bracket at geometry.size=0.0005 (19.3M DOFs, meshed by the run: faster than reading a
# written .msh of that size); FEMVAR_SIZES, FEMVAR_NUM, FEMVAR_REC: other sizes and lists. Run
# k sets the k-th of both lists (their stages do not meet; the shorter list goes on with its
# default), so each run times one numeric and one recovery variant; each run's line is printed
# as it ends with the recover stage's parts (HOOKE_ASSEMBLY_PROFILE), then the tables give the
# stage and the sum of all the device assembly's (recovery's) stages. The solve is cut to one
# jacobi iteration (such a run exits 1, not converged) and only the displacement is written.
# The step stops at 60 s: each run gets what is left of it (40 s at most), none starts with
# less than 15 s left.
FEMVAR_NUM=${FEMVAR_NUM:-"d3,sorted d3"}
FEMVAR_REC=${FEMVAR_REC:-"plain keep"}
femvar_step() {
  local T=/tmp/hooke-femvar BR=cases/bracket/bracket.yaml size runs k r nv rv num rec asm rtot
  local left t0=$SECONDS
  local -a NUMS=($FEMVAR_NUM) RECS=($FEMVAR_REC)
  rm -rf $T; mkdir -p $T; : > $T/times
  echo "# femvar: $(git log --oneline -1 | cut -c1-60)"
  nvidia-smi --query-gpu=name --format=csv,noheader
  for size in ${FEMVAR_SIZES:-0.0005}; do
    runs=1; [ $size = 0.001 ] && runs=2
    for k in $(seq 0 $(( (${#NUMS[@]} > ${#RECS[@]} ? ${#NUMS[@]} : ${#RECS[@]}) - 1 ))); do
      nv=${NUMS[$k]:-d3,sorted} rv=${RECS[$k]:-plain}
      for r in $(seq $runs); do
        left=$((60 - (SECONDS - t0))); [ $left -gt 40 ] && left=40
        if [ $left -lt 15 ]; then echo "$size numeric $nv, recover $rv: not run (60 s)"; continue; fi
        HOOKE_FEM_NUMERIC=$nv HOOKE_FEM_RECOVER=$rv HOOKE_ASSEMBLY_PROFILE=1 timeout $left \
          $B/hooke run $BR --backend cuda --set geometry.size=$size --set solver.pc=jacobi \
          --set solver.maxit=1 --set 'output.fields=[displacement]' -o $T/x.vtu > $T/run.log 2>&1
        num=$(grep -m1 'device assembly: numeric' $T/run.log | awk '{print $(NF-1)}')
        rec=$(grep -m1 'device recovery: recover' $T/run.log | awk '{print $(NF-1)}')
        asm=$(grep 'device assembly: ' $T/run.log | awk '{s += $(NF-1)} END {print s + 0}')
        rtot=$(grep 'device recovery: ' $T/run.log | awk '{s += $(NF-1)} END {print s + 0}')
        echo "$size num $nv ${num:--} $asm" >> $T/times
        echo "$size rec $rv ${rec:--} $rtot" >> $T/times
        echo "$size numeric $nv ${num:--} ms (all $asm), recover $rv ${rec:--} ms (all $rtot)"
        grep 'device recovery (recover)' $T/run.log | sed 's/^/    /'
        grep -m1 -E 'DOFs' $T/run.log > $T/dofs.$size
        grep -E 'error|hooke:' $T/run.log | head -2
      done
    done
    rm -f $T/x.vtu
  done
  python3 - $T/times <<'PY'
import sys, statistics
rows = {}
for l in open(sys.argv[1]):
    size, stage, v, t, tot = l.split()
    rows.setdefault((size, stage), {}).setdefault(v, []).append(
        (float(t) if t != "-" else None, float(tot) if tot != "-" else None))
name = {"num": "numeric stage (HOOKE_FEM_NUMERIC)", "rec": "recover stage (HOOKE_FEM_RECOVER)"}
for (size, stage), vs in rows.items():
    print("\n## %s, geometry.size=%s\n" % (name[stage], size))
    print("| variant | ms (runs) | median | vs default | all stages ms (median) |")
    print("|---|---|---:|---:|---:|")
    base = None
    for v, rs in vs.items():
        ts = [r[0] for r in rs if r[0] is not None]
        med = statistics.median(ts) if ts else float("nan")
        base = med if base is None else base
        tot = [r[1] for r in rs if r[1] is not None]
        print("| %s | %s | %.1f | %.2fx | %s |" % (v, " ".join("%.1f" % x for x in ts), med,
              base / med if med == med and med else float("nan"),
              "%.1f" % statistics.median(tot) if tot else ""))
PY
  cat $T/dofs.* 2>/dev/null
  rm -rf $T
}

for step in "$@"; do
  case $step in
    tests=*) suites=${step#tests=}; [ "$suites" = all ] && suites=
             $B/hooke_tests ${suites//,/ } > "$OUT/tests.md" 2>&1
             grep -E "FAIL|hooke_tests:" "$OUT/tests.md" | tail -25 ;;
    spmv) $B/hooke bench spmv --backend cuda --paper --formats csr,cusparse-csr,pcsr,sbell,bsr \
            --json "$OUT/spmv.json" > "$OUT/spmv.md" 2>&1 ;;
    app) $B/hooke bench app --backend cuda --size large --json "$OUT/app.json" > "$OUT/app.md" 2>&1 ;;
    apphuge) # issue 25 item 7: the 16M-DOF bracket end to end, then the device assembly's and
             # recovery's stages at 2.3M (HOOKE_ASSEMBLY_PROFILE)
      { timeout 300 $B/hooke bench app --backend cuda --size huge --json "$OUT/apphuge.json"
        echo "== HOOKE_ASSEMBLY_PROFILE=1 hooke run, geometry.size=0.001"
        HOOKE_ASSEMBLY_PROFILE=1 timeout 120 $B/hooke run cases/bracket/bracket.yaml --backend cuda \
          --set geometry.size=0.001 -o /tmp/apphuge.vtu 2>&1 | tail -40; } > "$OUT/apphuge.md" 2>&1 ;;
    prof) # issue 25: every stage of the 19M-DOF bracket run (geometry.size 0.0005) with the
          # device assembly's, AMG set-up's, recovery's and output's phases, and the file's size
      { HOOKE_OUTPUT_PROFILE=1 HOOKE_ASSEMBLY_PROFILE=1 HOOKE_AMG_PROFILE=1 timeout 200 \
          $B/hooke run cases/bracket/bracket.yaml --backend cuda --set geometry.size=0.0005 \
          -o /tmp/prof.vtu 2>&1 | grep -v 'solve: iteration' | tail -80
        ls -l /tmp/prof.vtu; rm -f /tmp/prof.vtu; } > "$OUT/prof.md" 2>&1 ;;
    iodiag) # issue 25 item 6: what the host's file system does with one writer (dd) against the
            # .vtu writer at 32, 16, 8 and 4 threads (bench output, 14.5M DOFs)
      { nproc; df -T /tmp .; grep -E ' /tmp | / ' /proc/mounts
        for d in /tmp .; do
          echo "== dd 1.4 GB into $d, one thread"
          dd if=/dev/zero of=$d/dd.bin bs=8M count=170 2>&1 | tail -1; rm -f $d/dd.bin
        done
        for t in 32 16 8 4; do
          echo "== OMP_NUM_THREADS=$t"
          OMP_NUM_THREADS=$t timeout 120 $B/hooke bench output --size large --no-baseline --reps 1 \
            2>&1 | grep -E 'direct|threads'
        done; } > "$OUT/iodiag.md" 2>&1 ;;
    ncuasm) # issue 25: Nsight Compute on the device assembly's numeric kernel (the default,
            # d3,sorted, and its reference d3) and the recovery's kernels (k_rec_elem: one thread
            # per cell, k_rec_gather: one per node) (bracket, geometry.size=0.0015, 787k DOFs)
      for kv in k_numeric:d3,sorted k_numeric:d3 k_rec_elem: k_rec_gather:; do
        kn=${kv%%:*}
        echo "== $kn ${kv#*:}"
        HOOKE_FEM_NUMERIC=${kv#*:} timeout 150 ncu --kernel-name regex:$kn --launch-count 1 --section SpeedOfLight \
          --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis \
          --section ComputeWorkloadAnalysis --section LaunchStats \
          $B/hooke run cases/bracket/bracket.yaml --backend cuda --set geometry.size=0.0015 \
          -o /tmp/ncuasm.vtu 2>&1 | grep -v 'solve: iteration' | tail -120
      done > "$OUT/ncuasm.md" 2>&1; rm -f /tmp/ncuasm.vtu ;;
    pipecg) $B/hooke bench pcs --backend cuda --no-cpu --method cg,pipecg --pcs jacobi,poly \
              --problem 'cases/bracket/bracket.yaml geometry.size=0.0015' \
              --problem 'cases/bracket/bracket.yaml geometry.size=0.001' > "$OUT/pipecg.md" 2>&1 ;;
    pcs) $B/hooke bench pcs --backend cuda --size large --no-cpu --json "$OUT/pcs.json" > "$OUT/pcs.md" 2>&1 ;;
    cpucg) $B/hooke bench cg --backend cpu --size medium > "$OUT/cpucg.md" 2>&1 ;;
    ic0) for pc in "pc=jacobi" "pc=ic0" "pc=ic0 pc.tri=syncfree" "pc=ic0 pc.ordering=natural" "pc=ic0 pc.ic0.sweeps=3" "pc=ic0 pc.ic0.block=1" "pc=ilu0"; do
           echo "== cg $pc"; $B/hooke solve --generate elasticity3d:60 --backend cuda method=cg $pc 2>&1 | tail -4
         done > "$OUT/ic0.md" 2>&1 ;;
    mlilu) for pc in "pc=ilu0" "pc=mlilu"; do
           for g in convdiff:256 convdiff:1024; do
             echo "== gmres $pc $g"; $B/hooke solve --generate $g --backend cuda method=gmres restart=50 $pc 2>&1 | tail -4
           done
         done > "$OUT/mlilu.md" 2>&1 ;;
    mpk) for z in small medium; do $B/hooke bench mpk --backend cuda --size $z; done > "$OUT/mpk.md" 2>&1 ;;
    setup) $B/hooke bench pcs --backend cuda --no-cpu --pcs jacobi,poly \
             --problem 'cases/box/box.yaml geometry.generate.cells=[69,69,69]' > "$OUT/setup.md" 2>&1 ;;
    tune) # threads per block row for SBELL on the paper's matrices (format.sigma=auto)
          for t in 0 1 2 4 8; do
            echo "== format.tpr=$t"
            $B/hooke bench spmv --backend cuda --paper --matrices tet,trirand,hex,tri,quad \
              --formats sbell --min-time 0.1 format.tpr=$t | grep '^| [a-z]'
          done > "$OUT/tune.md" 2>&1 ;;
    pcsgen) { $B/hooke bench pcs --backend cuda --method gmres --pcs jacobi,ilu0,mlilu --generate convdiff:256
              $B/hooke bench pcs --backend cuda --no-cpu --method gmres --pcs ilu0,mlilu --generate convdiff:1024
              $B/hooke bench pcs --backend cuda --no-cpu --pcs jacobi,poly,ic0,mlilu,amg --generate elasticity3d:60 \
                --problem 'cases/bracket/bracket.yaml geometry.size=0.0015'; } > "$OUT/pcsgen.md" 2>&1 ;;
    ncu) for p in fp64 fp32; do
           ncu --kernel-name regex:k_sell --launch-skip 4 --launch-count 1 --section SpeedOfLight \
             --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
             --section LaunchStats --section SchedulerStats \
             $B/hooke bench spmv --backend cuda --matrices hex --cells 69 --formats sbell \
             --precisions $p --min-time 0
         done > "$OUT/ncu.md" 2>&1 ;;
    fsai) for g in elasticity3d:30 elasticity3d:60; do for be in cuda cpu; do
            [ $g = elasticity3d:60 ] && [ $be = cpu ] && continue
            echo "== $g $be pc=fsai"; $B/hooke solve --generate $g --backend $be method=cg pc=fsai 2>&1 | tail -2
          done; done > "$OUT/fsai.md" 2>&1 ;;
    pipepoly) for m in "method=cg" "method=pipecg" "method=pipecg graphs=0"; do
            echo "== $m pc=poly"; $B/hooke solve --generate elasticity3d:22 --backend cuda $m pc=poly 2>&1 | tail -2
          done > "$OUT/pipepoly.md" 2>&1 ;;
    extra) for a in "elasticity3d:60 pc=fsai" "elasticity3d:60 pc=fsai pc.fsai.k=4" "elasticity3d:60 pc=jacobi" \
                   "elasticity3d:30 pc=jacobi" "elasticity3d:30 pc=ic0" "elasticity3d:30 pc=mlilu"; do
             echo "== cg $a"; $B/hooke solve --generate ${a%% *} --backend cuda method=cg ${a#* } 2>&1 | tail -3
           done > "$OUT/extra.md" 2>&1 ;;
    ncutri) for k in syncfree spsv; do
              ncu --kernel-name regex:$k --launch-skip 2 --launch-count 1 --section SpeedOfLight \
                --section WarpStateStats --section SchedulerStats --section Occupancy \
                $B/hooke solve --generate elasticity3d:30 --backend cuda method=cg pc=ic0 \
                pc.tri=$([ $k = spsv ] && echo cusparse || echo syncfree) maxit=3
            done > "$OUT/ncutri.md" 2>&1 ;;
    wide) # lanes per slice on the bracket at three sizes: auto (table) against a fixed
          # format.tpr (no table; the auto base is the low end of the lanes column)
          for h in "" "--mesh-size 0.0015" "--mesh-size 0.001"; do
            for t in 0 4 8; do
              echo "== bracket $h format.tpr=$t"
              $B/hooke bench spmv --backend cuda --mesh cases/bracket/bracket.geo --order 2 $h \
                --formats sbell,bsr,csr --precisions fp64 --min-time 0.1 format.tpr=$t | grep '^| [a-z]'
            done
          done > "$OUT/wide.md" 2>&1 ;;
    pipeformats) # issue 11's per-iteration comparison in the steady state, per storage format
          { for f in sbell bsr csr; do
              $B/hooke bench pcs --backend cuda --no-cpu --method cg,pipecg --pcs jacobi,poly \
                --problem "cases/bracket/bracket.yaml solver.format=$f"
            done
            $B/hooke bench pcs --backend cuda --no-cpu --method cg,pipecg --pcs jacobi,poly \
              --generate elasticity3d:22; } > "$OUT/pipeformats.md" 2>&1 ;;
    eigen) { $B/hooke bench eigen --backend cuda --size medium
             $B/hooke bench eigen --backend cuda --size large --pcs amg --no-dense; } > "$OUT/eigen.md" 2>&1 ;;
    modal) $B/hooke bench modal --backend cuda --size large --no-jacobi --json "$OUT/modal.json" \
             > "$OUT/modal.md" 2>&1 ;;
    output) $B/hooke bench output --size large > "$OUT/output.md" 2>&1 ;;
    outsweep) # issue 25 item 6: threads in pwrite at once (HOOKE_OUTPUT_WRITERS 1, 2, 4, 8, all)
          # beside a dd-like write of the same bytes (the file system's speed), on all cores
          # and on 16; about 2 minutes
      { nproc; df -T /tmp .
        for t in all 16; do
          echo "== OMP_NUM_THREADS=$t"
          if [ $t = all ]; then
            (unset OMP_NUM_THREADS; timeout 100 $B/hooke bench output --size large --sweep --reps 2)
          else
            OMP_NUM_THREADS=$t timeout 100 $B/hooke bench output --size large --sweep --reps 2
          fi
        done; } > "$OUT/outsweep.md" 2>&1 ;;
    seedkrylov) # issue 30 items 2-3: steady ms per iteration of cg, cgcg (thesis fusion), pipecg's
          # variants (auto = fused, paper = Algorithm 2 as written, gv = Ghysels-Vanroose), ratios
          # to cg; then at 2M DOFs the SpMV fusion forced on (today's fused variant, limited to
          # 2^18 rows) and off (cgcg and the paper variant, fused at every size). About 2 minutes,
          # mostly meshing the 631k and 2M brackets.
          M='cg,cgcg,pipecg,pipecg pipecg.variant=paper,pipecg pipecg.variant=gv'
          BR=cases/bracket/bracket.yaml
          { $B/hooke bench pcs --backend cuda --no-cpu --method "$M" --pcs jacobi,none,poly \
              --problem $BR --generate elasticity3d:19
            $B/hooke bench pcs --backend cuda --no-cpu --method "$M" --pcs jacobi \
              --problem "$BR geometry.size=0.0015" --problem "$BR geometry.size=0.001"
            echo "== HOOKE_CUDA_FUSE=1"
            HOOKE_CUDA_FUSE=1 $B/hooke bench pcs --backend cuda --no-cpu --method cg,pipecg \
              --pcs jacobi --problem "$BR geometry.size=0.001"
            echo "== HOOKE_CUDA_FUSE=0"
            HOOKE_CUDA_FUSE=0 $B/hooke bench pcs --backend cuda --no-cpu \
              --method 'cg,cgcg,pipecg pipecg.variant=paper' --pcs jacobi \
              --problem "$BR geometry.size=0.001"; } > "$OUT/seedkrylov.md" 2>&1 ;;
    tri2) # issue 30 item 1: the paper's sync-free solve against cuSPARSE and the flag-based one:
          # the device suites (correctness first; a hang would be a bug, hence the timeout), the
          # L/U solve table (bracket 37k and 632k, elasticity3d 30^3 and 60^3, ic0/ilu0,
          # natural/colour), then cg+ic0 per pc.tri on elasticity3d:60
          { timeout 180 $B/hooke_tests syncfree_cuda
            if [ $? -eq 124 ]; then echo "syncfree_cuda timed out (a solve waits forever?): timings skipped"
            else
              timeout 240 $B/hooke_tests trisolve_timing_cuda
              for om in "colour syncfree" "colour cusparse" "colour syncfree-flags" \
                        "natural syncfree" "natural cusparse"; do
                read -r o m <<< "$om"
                echo "== cg pc=ic0 pc.ordering=$o pc.tri=$m"
                timeout 60 $B/hooke solve --generate elasticity3d:60 --backend cuda method=cg pc=ic0 \
                  pc.ordering=$o pc.tri=$m 2>&1 | grep -E "^(solver|reason|iterations|setup)"
              done
            fi; } > "$OUT/tri2.md" 2>&1
          grep -E "FAIL|hooke_tests:" "$OUT/tri2.md" | tail -5 ;;
    tri2ncu) # one L solve of each kernel on the IC(0) factor of elasticity3d:30, both orderings;
             # then the case the sync-free solve loses (elasticity3d:60, colour order): ours by
             # Nsight Compute, cuSPARSE's kernels by name and time (nsys; its names are its own)
          for k in "k_tri_sentinel syncfree colour 30" "k_tri_sentinel syncfree natural 30" \
                   "syncfree_flags syncfree-flags colour 30" "k_tri_sentinel syncfree colour 60"; do
            read -r kn tri ord n <<< "$k"
            echo "== $tri ($kn), pc.ordering=$ord, elasticity3d:$n"
            timeout 90 ncu --kernel-name regex:$kn --launch-skip 2 --launch-count 1 --section SpeedOfLight \
              --section WarpStateStats --section SchedulerStats --section Occupancy \
              --section MemoryWorkloadAnalysis --section LaunchStats \
              $B/hooke solve --generate elasticity3d:$n --backend cuda method=cg pc=ic0 \
              pc.tri=$tri pc.ordering=$ord maxit=3
          done > "$OUT/tri2ncu.md" 2>&1
          if command -v nsys > /dev/null; then
            for tri in cusparse syncfree; do
              echo "== nsys: pc.tri=$tri, colour order, elasticity3d:60, 20 iterations"
              nsys profile --trace=cuda --force-overwrite=true -o /tmp/tri60 \
                $B/hooke solve --generate elasticity3d:60 --backend cuda method=cg pc=ic0 \
                pc.tri=$tri maxit=20 > /dev/null 2>&1
              { nsys stats -r cuda_gpu_kern_sum -f csv /tmp/tri60.nsys-rep 2>/dev/null ||
                nsys stats -r gpukernsum -f csv /tmp/tri60.nsys-rep; } | cut -c1-220 | head -14
            done >> "$OUT/tri2ncu.md" 2>&1
          fi ;;
    mpk2) # issue 30 item 4: matrix powers staged in shared memory (the thesis's 6.3.2) against
          # k SpMVs, the same ghost zones from memory and the wavefront, k = 2..8, 2D and 3D in
          # L2 (small) and beyond it (medium); then what scg's tuner picks
          { for z in small medium; do
              timeout 200 $B/hooke bench mpk --backend cuda --size $z --no-solve --schedules shared,wavefront
            done
            for g in elasticity2d:200 elasticity3d:20 elasticity2d:500 elasticity3d:40; do
              echo "== scg ksp.s=8 pc=jacobi $g"
              timeout 60 $B/hooke solve --generate $g --backend cuda method=scg ksp.s=8 pc=jacobi 2>&1 |
                grep -E "^(solver|reason|iterations|setup)"
            done; } > "$OUT/mpk2.md" 2>&1 ;;
    pipesmall) $B/hooke bench pcs --backend cuda --no-cpu --method cg,pipecg --pcs jacobi,poly \
                 --problem 'cases/bracket/bracket.yaml' --problem 'cases/bracket/bracket.yaml' \
                 > "$OUT/pipesmall.md" 2>&1 ;;
    amgprof) # issue 29: AMG's set-up phases (s and fine SpMVs), fp32 / fp64 / mixed levels, the
             # values-only re-set-up, bytes per DOF; the cycle's knobs as time to solution at
             # 631k and on elasticity3d:60; the set-up's kernels (nsys); 14.4M last (~1 min)
      { BR=cases/bracket/bracket.yaml
        $B/hooke bench pcs --backend cuda --no-cpu --json "$OUT/amg2m.json" \
          --pcs 'amg,amg pc.amg.precision=fp64,amg precision=mixed,jacobi' \
          --problem "$BR geometry.size=0.001"
        $B/hooke bench pcs --backend cuda --no-cpu --json "$OUT/amgsweep.json" \
          --problem "$BR geometry.size=0.0015" --generate elasticity3d:60 \
          --pcs 'amg,amg pc.amg.precision=fp64,amg pc.amg.degree=1,amg pc.amg.degree=3,amg pc.amg.threshold=0,amg pc.amg.threshold=0.04,amg pc.amg.threshold=0.08,amg pc.amg.omega=1,amg pc.amg.omega=1.6,amg pc.amg.coarse_size=3000,amg pc.amg.max_levels=3,amg pc.amg.cycle=w,amg pc.amg.smoother=l1-jacobi,amg pc.amg.pre=2 pc.amg.post=2 pc.amg.degree=1,amg pc.amg.ratio=10'
        if command -v nsys > /dev/null; then # the kernels and API calls (cudaMalloc/Free) of set-up + solve
          nsys profile --trace=cuda --force-overwrite=true -o /tmp/amg2m \
            $B/hooke solve --generate elasticity3d:90 --backend cuda pc=amg > /dev/null 2>&1
          { nsys stats -r cuda_gpu_kern_sum,cuda_api_sum -f csv /tmp/amg2m.nsys-rep 2>/dev/null ||
            nsys stats -r gpukernsum,cudaapisum -f csv /tmp/amg2m.nsys-rep; } | cut -c1-160 | head -90
        fi
        $B/hooke bench pcs --backend cuda --no-cpu --json "$OUT/amg14m.json" \
          --pcs 'amg,amg pc.amg.precision=fp64' --problem "$BR geometry.size=0.000515"
      } > "$OUT/amgprof.md" 2>&1 ;;
    amgsetup2) # issue 29: the one-process AMG set-up and values-only update side by side
               # (HOOKE_AMG_PROFILE: phases, then the sparse products and their values'
               # allocations), bracket 2.52M and 19.3M DOFs, then the kernels and API calls
               # (cudaMalloc/Free) of set-up + update at 2.52M under nsys; first the products'
               # device suites (A T by amg_tentative_product beside bmat_spgemm); about 5 minutes
      { BR=cases/bracket/bracket.yaml
        echo "== hooke_tests cuda_amg_ops cuda_amg_update"
        timeout -k 5 90 $B/hooke_tests cuda_amg_ops cuda_amg_update 2>&1 |
          grep -E "A T|K K|FAIL|hooke_tests:|^ +[0-9]+\. " | cut -c1-300
        for prob in 0.001:45 0.0005:90; do
          size=${prob%%:*} lim=${prob#*:}
          echo "== bracket geometry.size=$size, cg + amg (limit $lim s)"
          HOOKE_AMG_PROFILE=1 timeout -k 5 "$lim" \
            $B/hooke bench pcs --backend cuda --no-cpu \
            --pcs amg --problem "$BR geometry.size=$size" 2>&1 |
            grep -E '^### |^\| (pc|amg) |amg (set-up|update)|set-up:|amg cuda cg|levels \(|error' |
            cut -c1-400
          echo "(status ${PIPESTATUS[0]})"
        done
        if command -v nsys > /dev/null; then
          echo "== nsys: bench pcs amg at 2.52M (set-up, solve, update), kernels and API calls"
          timeout -k 5 60 nsys profile --trace=cuda --force-overwrite=true -o /tmp/amgsetup2 \
            $B/hooke bench pcs --backend cuda --no-cpu --pcs amg \
            --problem "$BR geometry.size=0.001" > /dev/null 2>&1
          { nsys stats -r cuda_gpu_kern_sum,cuda_api_sum -f csv /tmp/amgsetup2.nsys-rep 2>/dev/null ||
            nsys stats -r gpukernsum,cudaapisum -f csv /tmp/amgsetup2.nsys-rep; } |
            cut -c1-160 | head -70
          rm -f /tmp/amgsetup2.*
        fi
      } > "$OUT/amgsetup2.md" 2>&1 ;;
    amgncu) # issue 29: every kernel of the 2.52M-DOF bracket run (device assembly, AMG set-up,
            # 31 cycles, recovery) under Nsight Compute, summed by kernel (time, DRAM bytes,
            # GB/s: scripts/ncu-sum.py), after the set-up's and update's phases (about 3 minutes);
            # NCU_SIZE (geometry.size), NCU_FILTER (a regex of kernel names: only those profiled)
      { BR=cases/bracket/bracket.yaml
        echo "== bench pcs amg, bracket geometry.size=0.001, HOOKE_AMG_PROFILE"
        HOOKE_AMG_PROFILE=1 timeout -k 5 45 $B/hooke bench pcs --backend cuda --no-cpu \
          --pcs amg --problem "$BR geometry.size=0.001" 2>&1 |
          grep -E '^### |^\| (pc|amg) |amg (set-up|update)|set-up:|amg cuda cg|levels \(|error' | cut -c1-400
        echo "== ncu: hooke run, bracket geometry.size=${NCU_SIZE:-0.001}"
        filter=(); [ -n "${NCU_FILTER:-}" ] && filter=(--kernel-name "regex:$NCU_FILTER")
        timeout -k 5 ${NCU_LIMIT:-200} ncu --csv --page raw --launch-count ${NCU_COUNT:-8000} "${filter[@]}" \
          --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
          $B/hooke run $BR --backend cuda --set geometry.size=${NCU_SIZE:-0.001} -o /tmp/amgncu.vtu \
          > /tmp/amgncu.csv 2> /tmp/amgncu.err
        echo "(status $?)"; grep -v 'solve: iteration' /tmp/amgncu.err | tail -30
        grep -v '^==PROF==' /tmp/amgncu.csv | python3 scripts/ncu-sum.py 70
        rm -f /tmp/amgncu.*; } > "$OUT/amgncu.md" 2>&1 ;;
    amgnsys) # issue 29: the kernels, copies and API calls of the resident AMG set-up, solve and
             # values-only updates at 2.52M (bench pcs --resident amg under nsys), after the
             # phases of the same run (HOOKE_AMG_PROFILE); NSYS_SIZE (geometry.size)
      { BR=cases/bracket/bracket.yaml
        echo "== bench pcs --resident amg, bracket geometry.size=${NSYS_SIZE:-0.001}"
        HOOKE_AMG_PROFILE=1 timeout -k 5 60 $B/hooke bench pcs --backend cuda --no-cpu --resident \
          --pcs amg --problem "$BR geometry.size=${NSYS_SIZE:-0.001}" 2>&1 |
          grep -E '^### |^\| amg |amg (set-up|update)|amg cuda cg|levels \(|  set-up:|values-only|error' | cut -c1-420
        if command -v nsys > /dev/null; then
          echo "== nsys: the same run"
          timeout -k 5 90 nsys profile --trace=cuda --force-overwrite=true -o /tmp/amgnsys \
            $B/hooke bench pcs --backend cuda --no-cpu --resident --pcs amg \
            --problem "$BR geometry.size=${NSYS_SIZE:-0.001}" > /dev/null 2>&1
          echo "(status $?)"
          { nsys stats -r cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_api_sum -f csv /tmp/amgnsys.nsys-rep 2>/dev/null ||
            nsys stats -r gpukernsum,gpumemtimesum,cudaapisum -f csv /tmp/amgnsys.nsys-rep; } |
            cut -c1-170 | head -120
          rm -f /tmp/amgnsys.*
        else echo "no nsys"; fi
      } > "$OUT/amgnsys.md" 2>&1 ;;
    resident) # issue 29: bench pcs amg at 2.52M with K resident before the clock (as hooke run's
              # device assembly leaves it; the update from resident values) beside the upload path
      { BR=cases/bracket/bracket.yaml
        for r in "" --resident; do
          echo "== bench pcs amg ${r:-(K uploaded)}, bracket geometry.size=${RES_SIZE:-0.001}"
          HOOKE_AMG_PROFILE=1 timeout -k 5 60 $B/hooke bench pcs --backend cuda --no-cpu $r \
            --pcs "${RES_PCS:-amg}" --problem "$BR geometry.size=${RES_SIZE:-0.001}" 2>&1 |
            grep -E '^### |^\| (pc|amg) |amg (set-up|update)|set-up:|amg cuda cg|levels \(|error' | cut -c1-420
        done; } > "$OUT/resident.md" 2>&1 ;;
    pcsvar) # issue 29: bench pcs --resident amg on the bracket with environment variants side by
            # side (PCSVAR: ';'-separated "VAR=VAL ..." lists, "-" for none; PCSVAR_SIZE), each
            # row with its set-up and update phases (HOOKE_AMG_PROFILE); limit 60 s a run
      { BR=cases/bracket/bracket.yaml
        IFS=';' read -ra vars <<< "${PCSVAR:--}"
        for v in "${vars[@]}"; do
          for size in ${PCSVAR_SIZE:-0.001}; do
            echo "== ${v} bench pcs --resident amg, bracket geometry.size=$size"
            env ${v/#-/} HOOKE_AMG_PROFILE=1 timeout -k 5 ${PCSVAR_LIMIT:-60} $B/hooke bench pcs \
              --backend cuda --no-cpu --resident --pcs "${PCSVAR_PCS:-amg}" \
              --problem "$BR geometry.size=$size" 2>&1 |
              grep -E '^### |^\| amg |amg (set-up|update)|amg cuda cg|levels \(|  set-up:|values-only|error' | cut -c1-420
          done
        done; } > "$OUT/pcsvar.md" 2>&1 ;;
    amgsweep) # issue 29: AMG's knobs as set-up + solve time and the values-only update (update
              # s, update / set-up, phases) on the bracket at three sizes and elasticity3d:60, each
              # problem bounded (about 2 minutes in all); the lead picks defaults from it
      { BR=cases/bracket/bracket.yaml
        PCS='amg,amg pc.amg.coarse_size=3000,amg pc.amg.omega=1.6,amg pc.amg.coarse_size=3000 pc.amg.omega=1.6,amg pc.amg.ratio=10,amg pc.amg.max_levels=3'
        for prob in 0.002:25 0.0015:30 0.001:45; do
          size=${prob%:*} lim=${prob#*:}
          echo "== bracket geometry.size=$size"
          timeout "$lim" $B/hooke bench pcs --backend cuda --no-cpu --pcs "$PCS" \
            --problem "$BR geometry.size=$size" || echo "(ended: status $?, limit $lim s)"
        done
        echo "== elasticity3d:60"
        timeout 25 $B/hooke bench pcs --backend cuda --no-cpu --pcs "$PCS" \
          --generate elasticity3d:60 || echo "(ended: status $?, limit 25 s)"
      } > "$OUT/amgsweep.md" 2>&1 ;;
    distamg) # issue 26: distributed AMG on 1 and 2 GPUs (bracket 2.52M DOFs, cg + amg, nccl),
             # the set-up's phases (HOOKE_AMG_PROFILE) and the summary of each run
      { export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
        export OMPI_MCA_btl_vader_single_copy_mechanism=none HOOKE_AMG_PROFILE=1
        MPIR=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=8
              -x OMP_WAIT_POLICY -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x HOOKE_AMG_PROFILE)
        # the set-up on each process's GPU against the cpu's (levels, iterations, x to 1e-7)
        echo "== mpirun -np 2 hooke_mpi_tests on cuda, the amg set-up checks"
        timeout -k 5 90 "${MPIR[@]}" -x HOOKE_TEST_BACKEND=cuda -np 2 $B/hooke_mpi_tests 2>&1 |
          grep -E 'amg set-up|FAIL|all passed|error' | head -12
        # DISTAMG_VARIANTS: ';'-separated variants of every run, "-" for none; a word VAR=VAL
        # with an upper-case VAR goes to the processes' environment, any other to --set
        IFS=';' read -ra variants <<< "${DISTAMG_VARIANTS:--}"
        for run in ${DISTAMG_RUNS:-1:0.0015 1:0.001 2:0.0015 2:0.001 2:0.0007}; do # processes:size
          np=${run%:*} size=${run#*:}
          for v in "${variants[@]}"; do
            extra=()
            for w in ${v/#-/}; do
              if [[ $w =~ ^[A-Z_0-9]+= ]]; then extra+=(-x "$w"); else extra+=(--set "$w"); fi
            done
            envs=() sets=()
            for ((k = 0; k < ${#extra[@]}; k += 2)); do
              if [ "${extra[k]}" = -x ]; then envs+=(-x "${extra[k+1]}"); else sets+=(--set "${extra[k+1]}"); fi
            done
            echo "== np $np, geometry.size=$size, variant ${v}"
            timeout -k 5 60 "${MPIR[@]}" "${envs[@]}" -np $np $B/hooke run cases/bracket/bracket.yaml --backend cuda \
              --set geometry.size=$size --set solver.pc=amg "${sets[@]}" -o /tmp/distamg.vtu 2>&1 |
              grep -v 'solve: iteration' | grep -E 'amg|AMG|solve|time|max|assembly:|partition:|parts:|postproc:|device:|error|hooke' | head -48
            echo "exit ${PIPESTATUS[0]}"
          done
        done; rm -f /tmp/distamg*; } > "$OUT/distamg.md" 2>&1 ;;
    dist) dist_step > "$OUT/dist.md" 2>&1; tail -25 "$OUT/dist.md" ;;
    scale) # issue 26: weak and strong scaling on 1, 2 and (a 4-GPU host) 4 GPUs, one process a
           # GPU: cg + amg and cg/pipecg + jacobi at SCALE_N^3 cells a process (default 100: 3M
           # DOFs), the whole-run series at SCALE_RUN^3; every figure beside one process in the run;
           # each process's K in its GPU's memory before the clock (--resident), as hooke run's
           # device assembly hands it to the solver
      { export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
        export OMPI_MCA_btl_vader_single_copy_mechanism=none HOOKE_AMG_PROFILE=1
        ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); nps="1 2"; [ "$ngpu" -ge 4 ] && nps="1 2 4"
        echo "# scale: $ngpu GPUs, processes $nps, $(nproc) cores"
        for pc in amg jacobi; do
          m=cg; [ $pc = jacobi ] && m=cg,pipecg
          echo; echo "## --pc $pc --methods $m --n ${SCALE_N:-100} --run-cells ${SCALE_RUN:-40} --resident"
          NPS="$nps" BUILD=$B MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none \
            -x OMP_NUM_THREADS=$(( $(nproc) / ${nps##* } )) -x OMP_WAIT_POLICY -x LD_LIBRARY_PATH \
            -x NCCL_NVLS_ENABLE -x HOOKE_AMG_PROFILE" timeout -k 5 ${SCALE_LIMIT:-240} \
            scripts/bench-scale.sh /tmp/scale-$pc -- --backend cuda --pc $pc --methods $m \
            --n ${SCALE_N:-100} --run-cells ${SCALE_RUN:-40} --resident 2>&1 | grep -v 'solve: iteration'
          echo "exit ${PIPESTATUS[0]}"
        done; rm -rf /tmp/scale-*; } > "$OUT/scale.md" 2>&1; tail -12 "$OUT/scale.md" ;;
    numvar) numvar_step > "$OUT/numvar.md" 2>&1; grep -A12 '^## numeric stage' "$OUT/numvar.md" ;;
    femvar) femvar_step > "$OUT/femvar.md" 2>&1; grep -E '^\||^## |^0|^    ' "$OUT/femvar.md" ;;
    pcpapers) # issue 30 items 5-7: the seed papers' sai, mlilu and fsai experiments, each bounded
          { timeout 300 $B/hooke bench pcpapers --backend cuda --size medium --json "$OUT/pcpapers.json"
            timeout 120 $B/hooke bench pcpapers --backend cuda --study gsai --generate convdiff3d:100
            timeout 300 $B/hooke bench pcpapers --backend cuda --study fsai --size large; } \
            > "$OUT/pcpapers.md" 2>&1 ;;
  esac
  echo "[$(date +%T)] $step done" >> "$OUT/info.md"
done
