// Blocks of vectors on the CUDA backend for the eigensolver (contracts: block_spmv,
// block_gram, block_update, block_dots in solver/hk_impl.h; the CPU reference is
// solver/cpu/cpu_block.c).
//
// Block SpMV: the two kernel families of cuda_spmv.cu (row-pointer: csr, bsr; sliced: ell,
// sell, bell, sbell) with KB <= 8 columns per pass (k columns in ceil(k / 8) passes of nearly
// equal width): a group of lanes loads each block of the matrix once and applies it to the KB
// columns, so one pass reads the matrix once for up to 8 vectors. Each output entry sums in the
// order of the single SpMV's kernel (the row's slots by lane, then the block's columns, then the
// lanes by shuffles), so a column of A X equals hk_cu_mat_spmv of that column for the same lanes
// per row (up to the sign of a zero: padding slots are skipped). Block sizes 1 to 3; other formats
// and block sizes: one SpMV per column.
//
// Gram products and block updates are cuBLAS dgemm on the stream (one device, one stream: the
// same digits on every run); column dots are one reducing kernel per 16 columns with the
// backend's two-stage deterministic reduction.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cusolverDn.h>

#include "cuda_impl.cuh"
#include "hk_cuda.h"

#define BLOCK_COLS 8 /* columns of one pass over the matrix */

/* ---- block SpMV kernels ------------------------------------------------------------------ */

/* acc[j][r] of a group of tpr lanes summed into lane 0 (shuffles within the group). */
template <int BS, int KB> __device__ __forceinline__ void group_sum(double (&acc)[KB][BS], int tpr)
{
    for (int o = tpr >> 1; o > 0; o >>= 1)
#pragma unroll
        for (int j = 0; j < KB; j++)
#pragma unroll
            for (int r = 0; r < BS; r++)
                acc[j][r] += __shfl_down_sync(0xffffffffu, acc[j][r], o, tpr);
}

/* acc += the block a (BS x BS, row-major) times block column c of the KB columns of X. */
template <int BS, int KB>
__device__ __forceinline__ void block_fma(double (&acc)[KB][BS], const double (&a)[BS * BS],
                                          int64_t c, const double *__restrict__ X, int64_t ldx)
{
#pragma unroll
    for (int cc = 0; cc < BS; cc++)
#pragma unroll
        for (int j = 0; j < KB; j++) {
            const double xc = __ldg(X + j * ldx + c * BS + cc);
#pragma unroll
            for (int r = 0; r < BS; r++)
                acc[j][r] += a[r * BS + cc] * xc;
        }
}

/* Group loop of cuda_spmv.cu: g is this group's block row, gw the first block row of the
 * warp (uniform across the warp, so every lane runs the shuffles). */
#define BLOCK_GROUP_LOOP(nbrows)                                                                   \
    const int64_t t_ = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;                             \
    const int lane = threadIdx.x & (tpr - 1);                                                      \
    const int64_t gstride = ((int64_t)gridDim.x * blockDim.x) / tpr;                               \
    int64_t g = t_ / tpr;                                                                          \
    for (int64_t gw = (t_ & ~(int64_t)31) / tpr; gw < (nbrows); gw += gstride, g += gstride)

template <int BS, int KB>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_bsr_block(int64_t nbrows, int tpr, const int64_t *__restrict__ rowptr,
                const int32_t *__restrict__ col, const double *__restrict__ val,
                const double *__restrict__ X, int64_t ldx, double *__restrict__ Y, int64_t ldy)
{
    BLOCK_GROUP_LOOP(nbrows)
    {
        double acc[KB][BS];
#pragma unroll
        for (int j = 0; j < KB; j++)
#pragma unroll
            for (int r = 0; r < BS; r++)
                acc[j][r] = 0;
        const bool active = g < nbrows;
        if (active) {
            const int64_t end = rowptr[g + 1];
            for (int64_t kk = rowptr[g] + lane; kk < end; kk += tpr) {
                double a[BS * BS];
#pragma unroll
                for (int e = 0; e < BS * BS; e++)
                    a[e] = __ldg(val + kk * (BS * BS) + e);
                block_fma<BS, KB>(acc, a, col[kk], X, ldx);
            }
        }
        group_sum<BS, KB>(acc, tpr);
        if (active && lane == 0)
#pragma unroll
            for (int j = 0; j < KB; j++)
#pragma unroll
                for (int r = 0; r < BS; r++)
                    Y[j * ldy + g * BS + r] = acc[j][r];
    }
}

template <int BS, int KB>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_sell_block(int64_t nbrows, int64_t S, int tpr, const int64_t *__restrict__ sptr,
                 const int32_t *__restrict__ swidth, const int32_t *__restrict__ perm,
                 const int32_t *__restrict__ col, const double *__restrict__ val,
                 const double *__restrict__ X, int64_t ldx, double *__restrict__ Y, int64_t ldy)
{
    BLOCK_GROUP_LOOP(nbrows)
    {
        double acc[KB][BS];
#pragma unroll
        for (int j = 0; j < KB; j++)
#pragma unroll
            for (int r = 0; r < BS; r++)
                acc[j][r] = 0;
        const bool active = g < nbrows;
        int64_t row = g;
        if (active) {
            const int64_t s = g / S, jr = g - s * S, base = sptr[s];
            const int w = swidth[s];
#pragma unroll 1
            for (int k = lane; k < w; k += tpr) {
                const int64_t slot = base + (int64_t)k * S;
                const int32_t c = __ldcs(col + slot + jr);
                if (c < 0) continue; /* padding */
                const double *v = val + slot * (BS * BS) + jr;
                double a[BS * BS];
#pragma unroll
                for (int e = 0; e < BS * BS; e++)
                    a[e] = __ldcs(v + e * S);
                block_fma<BS, KB>(acc, a, c, X, ldx);
            }
            if (perm) row = perm[g];
        }
        group_sum<BS, KB>(acc, tpr);
        if (active && lane == 0)
#pragma unroll
            for (int j = 0; j < KB; j++)
#pragma unroll
                for (int r = 0; r < BS; r++)
                    Y[j * ldy + row * BS + r] = acc[j][r];
    }
}

static unsigned block_grid(int64_t nbrows, int tpr)
{
    int64_t nb = (nbrows * tpr + HK_CU_BLOCK - 1) / HK_CU_BLOCK;
    if (nb < 1) nb = 1;
    if (nb > (1 << 22)) nb = 1 << 22;
    return (unsigned)nb;
}

template <int BS, int KB>
static void launch_block(const hk_mat *A, const hk_cu_mat *m, const double *X, double *Y)
{
    const unsigned nb = block_grid(m->nbrows, m->tpr);
    const double *val = (const double *)m->val;
    if (A->fmt == HK_FMT_CSR || A->fmt == HK_FMT_BSR)
        k_bsr_block<BS, KB><<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            m->nbrows, m->tpr, m->rowptr, m->colind, val, X, A->ncols, Y, A->nrows);
    else
        k_sell_block<BS, KB><<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(m->nbrows, m->S, m->tpr, m->sptr,
                                                                   m->swidth, m->perm, m->colind,
                                                                   val, X, A->ncols, Y, A->nrows);
}

template <int BS>
static void launch_pass(const hk_mat *A, const hk_cu_mat *m, int kb, const double *X, double *Y)
{
    switch (kb) {
    case 8:
        launch_block<BS, 8>(A, m, X, Y);
        break;
    case 7:
        launch_block<BS, 7>(A, m, X, Y);
        break;
    case 6:
        launch_block<BS, 6>(A, m, X, Y);
        break;
    case 5:
        launch_block<BS, 5>(A, m, X, Y);
        break;
    case 4:
        launch_block<BS, 4>(A, m, X, Y);
        break;
    case 3:
        launch_block<BS, 3>(A, m, X, Y);
        break;
    case 2:
        launch_block<BS, 2>(A, m, X, Y);
        break;
    default:
        launch_block<BS, 1>(A, m, X, Y);
        break;
    }
}

extern "C" int hk_cu_block_spmv(hk_mat *A, int k, const hk_vec *X, hk_vec *Y)
{
    const hk_cu_mat *m = (const hk_cu_mat *)A->bdata;
    HK_CHECK(m, HK_ERR_ARG, "cuda block SpMV: matrix was not built");
    HK_CHECK(k >= 1 && X->prec == HK_FP64 && Y->prec == HK_FP64 && A->prec == HK_FP64 &&
                 X->n == (int64_t)k * A->ncols && Y->n == (int64_t)k * A->nrows,
             HK_ERR_ARG,
             "cuda block SpMV: %d columns need fp64 blocks of %lld x %d and %lld x %d entries "
             "and an fp64 matrix",
             k, (long long)A->ncols, k, (long long)A->nrows, k);
    HK_CHECK(X->data != Y->data, HK_ERR_ARG, "cuda block SpMV: X and Y must be different blocks");
    const hk_format f = A->fmt;
    const int native = (f == HK_FMT_CSR || f == HK_FMT_BSR || f == HK_FMT_ELL || f == HK_FMT_BELL ||
                        f == HK_FMT_SELL || f == HK_FMT_SBELL) &&
                       m->bs >= 1 && m->bs <= 3;
    const double *x = (const double *)X->data;
    double *y = (double *)Y->data;
    if (!native) {
        /* pcsr, the cuSPARSE formats, block sizes above 3: one SpMV per column */
        for (int j = 0; j < k; j++) {
            hk_vec xj = {X->be, A->ncols, HK_FP64, (void *)(x + (size_t)j * A->ncols)};
            hk_vec yj = {Y->be, A->nrows, HK_FP64, y + (size_t)j * A->nrows};
            HK_CALL(hk_cu_mat_spmv(A, &xj, &yj));
        }
        return 0;
    }
    /* ceil(k / 8) passes of nearly equal width (15 columns: 8 + 7) */
    const int passes = (k + BLOCK_COLS - 1) / BLOCK_COLS;
    for (int j0 = 0, pass = 0; j0 < k; pass++) {
        const int kb = (k - j0 + (passes - pass) - 1) / (passes - pass);
        const double *xj = x + (size_t)j0 * A->ncols;
        double *yj = y + (size_t)j0 * A->nrows;
        switch (m->bs) {
        case 1:
            launch_pass<1>(A, m, kb, xj, yj);
            break;
        case 2:
            launch_pass<2>(A, m, kb, xj, yj);
            break;
        default:
            launch_pass<3>(A, m, kb, xj, yj);
            break;
        }
        HK_CU_LAUNCHED();
        j0 += kb;
    }
    return 0;
}

/* ---- cuBLAS: Gram products and block updates ------------------------------------------- */

static cublasHandle_t blas;
static double *scratch; /* C or G on the device */
static size_t scratch_cap;

static int blas_ready(size_t doubles)
{
    if (!blas) {
        HK_CU_BLAS(cublasCreate(&blas));
        HK_CU_BLAS(cublasSetStream(blas, hk_cu.stream));
        HK_CU_BLAS(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST));
    }
    if (doubles > scratch_cap) {
        if (scratch) {
            HK_CU(cudaStreamSynchronize(hk_cu.stream));
            cudaFree(scratch);
            scratch = NULL;
            scratch_cap = 0;
        }
        HK_CALL(hk_cu_malloc((void **)&scratch, doubles * sizeof(double)));
        scratch_cap = doubles;
    }
    return 0;
}

extern "C" int hk_cu_block_gram(int64_t n, int p, const hk_vec *X, int q, const hk_vec *Y,
                                double *G)
{
    HK_CHECK(p >= 1 && q >= 1 && X->prec == HK_FP64 && Y->prec == HK_FP64 &&
                 X->n >= (int64_t)p * n && Y->n >= (int64_t)q * n,
             HK_ERR_ARG, "cuda block_gram: fp64 blocks of %lld x %d and %lld x %d expected",
             (long long)n, p, (long long)n, q);
    HK_CHECK(n < INT32_MAX, HK_ERR_UNSUPPORTED,
             "cuda block_gram: %lld rows; cuBLAS leading dimensions stop at 2^31", (long long)n);
    if (n == 0) {
        memset(G, 0, (size_t)p * q * sizeof *G);
        return 0;
    }
    HK_CALL(blas_ready((size_t)p * q));
    const double one = 1, zero = 0;
    HK_CU_BLAS(cublasDgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, p, q, (int)n, &one,
                           (const double *)X->data, (int)n, (const double *)Y->data, (int)n, &zero,
                           scratch, p));
    HK_CU(cudaMemcpyAsync(G, scratch, (size_t)p * q * sizeof *G, cudaMemcpyDeviceToHost,
                          hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    return 0;
}

extern "C" int hk_cu_block_update(int64_t n, int p, const hk_vec *X, int q, const double *C,
                                  double beta, hk_vec *Y)
{
    HK_CHECK(p >= 1 && q >= 1 && X->prec == HK_FP64 && Y->prec == HK_FP64 &&
                 X->n >= (int64_t)p * n && Y->n >= (int64_t)q * n,
             HK_ERR_ARG, "cuda block_update: fp64 blocks of %lld x %d and %lld x %d expected",
             (long long)n, p, (long long)n, q);
    const double *x = (const double *)X->data;
    double *y = (double *)Y->data;
    HK_CHECK(y + (size_t)q * n <= x || x + (size_t)p * n <= y, HK_ERR_ARG,
             "cuda block_update: Y overlaps X");
    HK_CHECK(n < INT32_MAX, HK_ERR_UNSUPPORTED,
             "cuda block_update: %lld rows; cuBLAS leading dimensions stop at 2^31", (long long)n);
    if (n == 0) return 0;
    HK_CALL(blas_ready((size_t)p * q));
    /* pageable source: staged before the call returns, ordered on the stream */
    HK_CU(cudaMemcpyAsync(scratch, C, (size_t)p * q * sizeof *C, cudaMemcpyHostToDevice,
                          hk_cu.stream));
    const double one = 1;
    HK_CU_BLAS(cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, q, p, &one, x, (int)n, scratch,
                           p, &beta, y, (int)n));
    return 0;
}

/* ---- column dots ------------------------------------------------------------------------ */

__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_block_dots(int64_t n, int k, const double *__restrict__ X, const double *__restrict__ Y,
                 double *part)
{
    double s[HK_CU_MAXK];
#pragma unroll
    for (int j = 0; j < HK_CU_MAXK; j++)
        s[j] = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
#pragma unroll
        for (int j = 0; j < HK_CU_MAXK; j++)
            if (j < k) s[j] += X[j * n + i] * Y[j * n + i];
    }
    hk_block_reduce<HK_CU_MAXK>(s, k, part);
}

extern "C" int hk_cu_block_dots(int64_t n, int k, const hk_vec *X, const hk_vec *Y, double *d)
{
    HK_CHECK(k >= 1 && X->prec == HK_FP64 && Y->prec == HK_FP64 && X->n >= (int64_t)k * n &&
                 Y->n >= (int64_t)k * n,
             HK_ERR_ARG, "cuda block_dots: fp64 blocks of %lld x %d expected", (long long)n, k);
    const double *x = (const double *)X->data, *y = (const double *)Y->data;
    for (int j0 = 0; j0 < k; j0 += HK_CU_MAXK) {
        const int kk = k - j0 < HK_CU_MAXK ? k - j0 : HK_CU_MAXK;
        const unsigned nb = hk_cu_rgrid(n, (const void *)k_block_dots);
        k_block_dots<<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(n, kk, x + (size_t)j0 * n,
                                                           y + (size_t)j0 * n, hk_cu.part);
        HK_CU_LAUNCHED();
        HK_CALL(hk_cu_finish_host(nb, kk, d + j0));
    }
    return 0;
}

/* ---- the dense eigensolver on the device, for the benchmark ----------------------------- */

static int syevd_fail(cusolverStatus_t st, const char *what)
{
    return hk_error_set(HK_ERR_DEVICE, __FILE__, __LINE__, "cuSOLVER error %d in %s", (int)st,
                        what);
}

extern "C" int hk_cuda_bench_syevd(int k, const double *A, int reps, double *seconds)
{
    int ierr = 0;
    cusolverDnHandle_t h = NULL;
    double *dA = NULL, *dW = NULL, *work = NULL, *V = NULL, *w = NULL, *t = NULL;
    int *info = NULL, lwork = 0;
    cusolverStatus_t st;
    HK_CHECK(k >= 1 && reps >= 1, HK_ERR_ARG, "hk_cuda_bench_syevd: order %d, %d runs", k, reps);
    HK_CALL(hk_cu_init());
    if ((st = cusolverDnCreate(&h)) != CUSOLVER_STATUS_SUCCESS) return syevd_fail(st, "create");
    if ((st = cusolverDnSetStream(h, hk_cu.stream)) != CUSOLVER_STATUS_SUCCESS) {
        ierr = syevd_fail(st, "set stream");
        goto fail;
    }
    HK_TRY(hk_cu_malloc((void **)&dA, sizeof(double) * k * k));
    HK_TRY(hk_cu_malloc((void **)&dW, sizeof(double) * k));
    HK_TRY(hk_cu_malloc((void **)&info, sizeof(int)));
    if ((st = cusolverDnDsyevd_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, k,
                                          dA, k, dW, &lwork)) != CUSOLVER_STATUS_SUCCESS) {
        ierr = syevd_fail(st, "cusolverDnDsyevd_bufferSize");
        goto fail;
    }
    HK_TRY(hk_cu_malloc((void **)&work, sizeof(double) * (lwork > 0 ? lwork : 1)));
    HK_TRY(hk_malloc(sizeof(double) * k * k, &V));
    HK_TRY(hk_malloc(sizeof(double) * k, &w));
    HK_TRY(hk_malloc(sizeof(double) * (reps + 1), &t));
    for (int r = 0; r <= reps; r++) {
        const double t0 = hk_time();
        HK_CU_TRY(
            cudaMemcpyAsync(dA, A, sizeof(double) * k * k, cudaMemcpyHostToDevice, hk_cu.stream));
        if ((st = cusolverDnDsyevd(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, k, dA, k,
                                   dW, work, lwork, info)) != CUSOLVER_STATUS_SUCCESS) {
            ierr = syevd_fail(st, "cusolverDnDsyevd");
            goto fail;
        }
        HK_CU_TRY(
            cudaMemcpyAsync(V, dA, sizeof(double) * k * k, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU_TRY(cudaMemcpyAsync(w, dW, sizeof(double) * k, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        t[r] = hk_time() - t0;
    }
    /* the median of the runs after the first (insertion sort of a few values) */
    for (int i = 2; i <= reps; i++)
        for (int j = i; j > 1 && t[j - 1] > t[j]; j--) {
            const double u = t[j];
            t[j] = t[j - 1];
            t[j - 1] = u;
        }
    *seconds = reps % 2 ? t[1 + reps / 2] : 0.5 * (t[reps / 2] + t[1 + reps / 2]);
fail:
    cudaStreamSynchronize(hk_cu.stream);
    if (h) cusolverDnDestroy(h);
    cudaFree(dA);
    cudaFree(dW);
    cudaFree(work);
    cudaFree(info);
    free(V);
    free(w);
    free(t);
    return ierr;
}
