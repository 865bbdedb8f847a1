#!/usr/bin/env bash
# one-off (not committed)
cd "$(dirname "$0")/.."
DISTAMG_RUNS="2:0.0007" DISTAMG_VARIANTS="-;solver.dist.comm=nccl" scripts/gpu-session.sh distamg
export LD_LIBRARY_PATH=/tmp/hooke-prefix/fallback:/tmp/hooke-prefix/gmsh/lib OMP_WAIT_POLICY=passive
for v in "-" "HOOKE_CUDA_PRELOAD=0" "-" "HOOKE_CUDA_PRELOAD=0" "-" "HOOKE_CUDA_PRELOAD=0"; do
  echo "== $v"
  env ${v/#-/} HOOKE_AMG_PROFILE=1 HOOKE_CUDA_BUILD_PROFILE=1 timeout 60 build-gpu/hooke bench pcs --backend cuda --no-cpu --resident --pcs amg --problem "cases/bracket/bracket.yaml geometry.size=0.00108" 2>&1 | grep -E "^\| amg|amg set-up \(|cuda mat_build sbell fp64|amg cuda cg" | cut -c1-300
done > $OUT/m.md 2>&1
