#!/usr/bin/env bash
# one-off (not committed)
cd "$(dirname "$0")/.."
S="cgcg_paper_cuda,cuda,cuda_aggregate,cuda_amg,cuda_amg_cheb,cuda_amg_reuse,cuda_amg_update,cuda_blocks6,cuda_build,cuda_cholesky,cuda_compress,cuda_diag,cuda_dist,cuda_fsai,cuda_mpk_stream,cuda_resident,cuda_sai,cuda_solve_repro,cuda_sparse,cuda_sstep,cuda_upload,eigen_cuda,factorops_cuda,fem_cuda,pipecg_gv_cuda,trisolve_cuda"
PCSVAR="-;HOOKE_CUDA_PRELOAD=0;-;HOOKE_CUDA_PRELOAD=0" PCSVAR_SIZE=0.00108 \
DISTAMG_RUNS="1:0.0007 2:0.0007" DISTAMG_VARIANTS="-;solver.dist.partition=fine HOOKE_DIST_RESIDENT=0" \
  scripts/gpu-session.sh tests=$S pcsvar distamg
