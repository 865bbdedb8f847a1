/* Private interface of the CUDA backend for the app's benchmarks (hooke bench cg): the
 * baselines measured in the same run as Hooke's own solvers. Only app/ and tests include it
 * (as "../cuda/hk_cuda.h"), and only under #ifdef HOOKE_HAVE_CUDA: these functions exist in
 * CUDA builds alone. */
#ifndef HOOKE_CUDA_H
#define HOOKE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "hooke/solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Classical CG built the way a cuSPARSE/cuBLAS user writes it (ANCHORS.md baseline): scalar
 * CSR (32-bit indices) SpMV through cusparseSpMV (CSR_ALG1), cublasDdot/Daxpy/Dscal with
 * host-pointer scalars, so every dot product waits for the device. Solves K x = b with b = 1,
 * x0 = 0, for exactly iters iterations after a warm-up, and reports the time per iteration
 * (median of three runs) and the final ||r|| (the recurrence residual) to cross-check Hooke's CG.
 */
typedef struct hk_cuda_cg_timing {
    double ms_per_iter;
    double rnorm;   /* ||r|| after iters iterations */
    double spmv_ms; /* cusparseSpMV alone, per product */
    int iterations;
} hk_cuda_cg_timing;
int hk_cuda_baseline_cg(const hk_bcsr *K, int iters, hk_cuda_cg_timing *t);

/* Device copy bandwidth: a kernel copying bytes (read + write counted) reps times; GB/s. */
int hk_cuda_copy_bandwidth(size_t bytes, int reps, double *gbs);

/* Pinned host-to-device copy bandwidth (cudaMemcpyAsync of bytes from cudaHostAlloc memory,
 * reps times after a warm-up); GB/s. */
int hk_cuda_h2d_bandwidth(size_t bytes, int reps, double *gbs);

/* C = K K by the backend's bmat_spgemm (block CSR, the whole op: both passes and C's
 * allocation) and by cusparseSpGEMM on K expanded to scalar CSR (32-bit indices; work
 * estimation, compute, copy, buffers and C allocated inside), median of reps runs each. */
typedef struct hk_cuda_spgemm_timing {
    double ms_hooke, ms_cusparse;
    long long nnz_hooke, nnz_cusparse; /* scalar entries of C */
    long long rows;                    /* scalar rows of K */
} hk_cuda_spgemm_timing;
int hk_cuda_bench_spgemm(const hk_bcsr *K, int reps, hk_cuda_spgemm_timing *t);

/* The Rayleigh-Ritz step's dense symmetric eigenproblem (order k, column-major A) by
 * cusolverDnDsyevd on the device, as the eigensolver would run it there: A copied in, the
 * eigenvalues and vectors copied back, waited for; *seconds = the median of reps runs after a
 * warm-up (cuda/cuda_block.c). The baseline of `hooke bench eigen`'s host eigensolver. */
int hk_cuda_bench_syevd(int k, const double *A, int reps, double *seconds);

/* pc.tri=syncfree (cuda_tri.cu): the schedule of a tri_setup handle, downloaded (order: the
 * rows in solve order, n; wdesc: per warp its first position in order and log2 of its lanes a
 * row | rows << 8, 2 * nwarps; both malloc'd), to compare with hk_tri_warp_schedule; and the
 * nanoseconds a polling lane sleeps between loads (0, the default: none), for measurements. */
int hk_cuda_tri_schedule(void *handle, int64_t *nwarps, int32_t **order, int32_t **wdesc);
int hk_cuda_tri_backoff(void *handle, unsigned ns);

#ifdef __cplusplus
}
#endif
#endif
