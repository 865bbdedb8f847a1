#!/usr/bin/env bash
# one-off measurement (not committed)
cd "$(dirname "$0")/.."
scripts/gpu-session.sh tests=cuda_amg_update
export LD_LIBRARY_PATH=/tmp/hooke-prefix/fallback:/tmp/hooke-prefix/gmsh/lib OMP_WAIT_POLICY=passive
for v in "-" "CUDA_MODULE_LOADING=EAGER" "-"; do
  echo "== $v"
  env ${v/#-/} HOOKE_AMG_PROFILE=1 HOOKE_CUDA_BUILD_PROFILE=1 timeout 60 build-gpu/hooke bench pcs --backend cuda --no-cpu --resident --pcs amg --problem "cases/bracket/bracket.yaml geometry.size=0.00108" 2>&1 | grep -E "^\| amg|amg (set-up|update)|cuda mat_build|amg cuda cg" | cut -c1-400
done > $OUT/m.md 2>&1
for v in "-" "CUDA_MODULE_LOADING=EAGER" "-" "CUDA_MODULE_LOADING=EAGER"; do
  echo "== $v hooke run 2.52M"
  env ${v/#-/} timeout 60 build-gpu/hooke run cases/bracket/bracket.yaml --backend cuda --set geometry.size=0.001 -o /tmp/r.vtu 2>&1 | grep -E "solve: conv|time  |assembly: [0-9]|memory: about"
  echo "== $v small solve wall"
  /usr/bin/time -f "%e s wall" env ${v/#-/} build-gpu/hooke solve --generate elasticity3d:10 --backend cuda 2>&1 | tail -1
done >> $OUT/m.md 2>&1
