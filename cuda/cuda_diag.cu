// The diag op on the device (contract: enum hk_diag_mode in solver/hk_setup.h): inverse
// diagonal, its square root, inverse diagonal blocks (decoupled dofs left out) and the
// decoupled-row indicator of a square-block hk_bmat. One thread per block row, following
// solver/cpu/cpu_diag.c step by step: the products of the elimination are rounded on their own
// (__dmul_rn, no fused multiply-add) so the device gives the CPU's digits. The first bad row is
// a min-reduction: per block in shared memory, then one integer atomicMin per block, which is
// order-independent (the same row for any schedule).
#include <math.h>

#include "cuda_impl.cuh"

#define DIAG_MAX_BR 6

// Gauss-Jordan inverse with partial pivoting of the br x br row-major block a (BR = br known at
// compile time so m stays in registers). Decoupled dofs (zero row and column) are left out and
// get 0. Returns 1 when the rest is singular or not finite (inv all zero), else 0.
template <int BR> __device__ static int invert_block(const double *a, double *inv)
{
    double m[BR][2 * BR];
    int dec[BR];
    double amax = 0;
    int bad = 0;
#pragma unroll
    for (int r = 0; r < BR; r++)
#pragma unroll
        for (int c = 0; c < BR; c++) {
            double v = a[r * BR + c];
            if (!isfinite(v)) bad = 1;
            if (fabs(v) > amax) amax = fabs(v);
            m[r][c] = v;
            m[r][BR + c] = r == c ? 1.0 : 0.0;
        }
#pragma unroll
    for (int r = 0; r < BR; r++) {
        dec[r] = 1;
#pragma unroll
        for (int c = 0; c < BR; c++)
            if (a[r * BR + c] != 0 || a[c * BR + r] != 0) dec[r] = 0;
    }
#pragma unroll
    for (int c = 0; c < BR; c++) {
        if (bad) break;
        if (dec[c]) continue;
        // the largest |m[r][c]|, the first of equals (as the CPU); tracked by value, since a
        // dynamic index into m would push it to local memory
        int p = c;
        double best = fabs(m[c][c]);
#pragma unroll
        for (int r = c + 1; r < BR; r++)
            if (fabs(m[r][c]) > best) {
                best = fabs(m[r][c]);
                p = r;
            }
        if (best <= 1e-13 * amax) {
            bad = 1;
            break;
        }
        if (p != c) {
#pragma unroll
            for (int r = c + 1; r < BR; r++)
                if (r == p)
#pragma unroll
                    for (int k = 0; k < 2 * BR; k++) {
                        double t = m[c][k];
                        m[c][k] = m[r][k];
                        m[r][k] = t;
                    }
        }
        const double piv = m[c][c];
#pragma unroll
        for (int k = 0; k < 2 * BR; k++)
            m[c][k] = m[c][k] / piv;
#pragma unroll
        for (int r = 0; r < BR; r++) {
            if (r == c || m[r][c] == 0) continue;
            const double f = m[r][c];
#pragma unroll
            for (int k = 0; k < 2 * BR; k++)
                m[r][k] = __dsub_rn(m[r][k], __dmul_rn(f, m[c][k]));
        }
    }
#pragma unroll
    for (int r = 0; r < BR; r++)
#pragma unroll
        for (int c = 0; c < BR; c++) {
            double v = dec[r] || dec[c] ? 0.0 : m[r][BR + c];
            if (!isfinite(v)) bad = 1;
            inv[r * BR + c] = v;
        }
    if (bad)
#pragma unroll
        for (int k = 0; k < BR * BR; k++)
            inv[k] = 0;
    return bad;
}

// Smallest bad row of the block into *first (an integer atomic: order-independent).
__device__ static void min_to(int64_t mine, unsigned long long *first)
{
    __shared__ int64_t sh[HK_CU_BLOCK];
    sh[threadIdx.x] = mine;
    __syncthreads();
    for (int s = HK_CU_BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && sh[threadIdx.x + s] < sh[threadIdx.x])
            sh[threadIdx.x] = sh[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0 && sh[0] != INT64_MAX) atomicMin(first, (unsigned long long)sh[0]);
}

template <int BR>
__global__ void k_block_inv(int64_t nb, const int64_t *rowptr, const int32_t *colind,
                            const double *val, double *out, unsigned long long *first)
{
    int64_t mine = INT64_MAX;
    for (int64_t bi = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; bi < nb;
         bi += (int64_t)gridDim.x * blockDim.x) {
        const int64_t p = hk_find_block(rowptr, colind, bi, bi);
        double a[BR * BR], inv[BR * BR];
#pragma unroll
        for (int k = 0; k < BR * BR; k++)
            a[k] = p >= 0 ? val[(size_t)p * BR * BR + k] : 0.0;
        if (invert_block<BR>(a, inv) && bi * BR < mine) mine = bi * BR;
#pragma unroll
        for (int k = 0; k < BR * BR; k++)
            out[(size_t)bi * BR * BR + k] = inv[k];
    }
    min_to(mine, first);
}

// HK_DIAG_INV (isqrt = 0) and HK_DIAG_INV_SQRT (isqrt = 1).
__global__ void k_diag_inv(int64_t nb, int br, int isqrt, const int64_t *rowptr,
                           const int32_t *colind, const double *val, double *out,
                           unsigned long long *first)
{
    int64_t mine = INT64_MAX;
    for (int64_t bi = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; bi < nb;
         bi += (int64_t)gridDim.x * blockDim.x) {
        const int64_t p = hk_find_block(rowptr, colind, bi, bi);
        for (int r = 0; r < br; r++) {
            const int64_t i = bi * br + r;
            const double a = p >= 0 ? val[((size_t)p * br + r) * br + r] : 0.0;
            double v = 0;
            if (a > 0) v = isqrt ? 1.0 / sqrt(a) : 1.0 / a;
            if (!(a > 0) || !isfinite(a) || !isfinite(v)) {
                v = 0;
                if (i < mine) mine = i;
            }
            out[i] = v;
        }
    }
    min_to(mine, first);
}

__global__ void k_decoupled(int64_t nb, int br, const int64_t *rowptr, const int32_t *colind,
                            const double *val, double *out)
{
    for (int64_t bi = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; bi < nb;
         bi += (int64_t)gridDim.x * blockDim.x) {
        for (int r = 0; r < br; r++) {
            const int64_t i = bi * br + r;
            int off = 0;
            for (int64_t q = rowptr[bi]; q < rowptr[bi + 1] && !off; q++)
                for (int c = 0; c < br; c++)
                    if ((int64_t)colind[q] * br + c != i && val[((size_t)q * br + r) * br + c] != 0)
                        off = 1;
            out[i] = off ? 0.0 : 1.0;
        }
    }
}

#define LAUNCH_BLOCK_INV(BR)                                                                       \
    k_block_inv<BR>                                                                                \
        <<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(nb, A->rowptr, A->colind, A->val, o, dfirst)

int hk_cu_bmat_diag(const hk_bmat *A, int mode, hk_vec *out, int64_t *bad)
{
    *bad = -1;
    const int br = A->br;
    HK_CHECK(A->br == A->bc && br >= 1 && br <= DIAG_MAX_BR, HK_ERR_ARG,
             "bmat_diag: blocks are %d x %d; it needs square blocks of size 1..%d", A->br, A->bc,
             DIAG_MAX_BR);
    HK_CHECK(mode >= HK_DIAG_INV && mode <= HK_DIAG_DECOUPLED, HK_ERR_ARG,
             "bmat_diag: unknown mode %d", mode);
    const int64_t nb = A->nbrows, n = nb * br;
    const int64_t want = mode == HK_DIAG_BLOCK_INV ? n * br : n;
    HK_CHECK(out->prec == HK_FP64 && out->n == want, HK_ERR_ARG,
             "bmat_diag: the output must be an fp64 vector of %lld entries (got %lld, %s)",
             (long long)want, (long long)out->n, out->prec == HK_FP64 ? "fp64" : "fp32");
    if (nb == 0) return 0;
    double *o = (double *)out->data;
    const unsigned grid = hk_cu_grid(nb);
    if (mode == HK_DIAG_DECOUPLED) {
        k_decoupled<<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(nb, br, A->rowptr, A->colind, A->val,
                                                            o);
        HK_CU_LAUNCHED();
        return 0;
    }
    int ierr = 0;
    unsigned long long *dfirst = NULL;
    HK_TRY(hk_cu_first_row_alloc(&dfirst));
    if (mode == HK_DIAG_BLOCK_INV) {
        switch (br) {
        case 1:
            LAUNCH_BLOCK_INV(1);
            break;
        case 2:
            LAUNCH_BLOCK_INV(2);
            break;
        case 3:
            LAUNCH_BLOCK_INV(3);
            break;
        case 4:
            LAUNCH_BLOCK_INV(4);
            break;
        case 5:
            LAUNCH_BLOCK_INV(5);
            break;
        default:
            LAUNCH_BLOCK_INV(6);
            break;
        }
    } else {
        k_diag_inv<<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(nb, br, mode == HK_DIAG_INV_SQRT,
                                                           A->rowptr, A->colind, A->val, o, dfirst);
    }
    HK_CU_TRY(cudaGetLastError());
    HK_TRY(hk_cu_first_row_read(dfirst, bad));
fail:
    cudaFree(dfirst);
    return ierr;
}

// First block row with a NaN or infinite value, in one streaming pass at the read bandwidth:
// each thread loads NF_PAIRS 16-byte pairs per step (all issued before any is tested) and
// tests their exponent bits (all ones: NaN or infinite); only a bad value pays a binary search
// for its block row and an order-independent atomicMin. An array that does not start on 16
// bytes has its first value tested alone, an odd count its last.
#define NF_PAIRS 4

__device__ __noinline__ void nf_report(int64_t q, int64_t bb, int64_t nb,
                                       const int64_t *__restrict__ rowptr,
                                       unsigned long long *first)
{
    const int64_t blk = q / bb;
    /* the last row with rowptr[row] <= blk (rowptr[0] = 0) */
    const int64_t row = hk_cu_upper_bound(rowptr, 1, nb, blk) - 1;
    atomicMin(first, (unsigned long long)row);
}

__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_first_nonfinite(int64_t nvals, int64_t bb, int64_t nb, const int64_t *__restrict__ rowptr,
                      const double *__restrict__ val, unsigned long long *first)
{
    const int64_t head = ((uintptr_t)val & 15) ? 1 : 0;
    const double2 *__restrict__ v2 = (const double2 *)(val + head);
    const int64_t npair = (nvals - head) / 2, stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    for (; i + (NF_PAIRS - 1) * stride < npair; i += NF_PAIRS * stride) {
        double2 a[NF_PAIRS];
#pragma unroll
        for (int u = 0; u < NF_PAIRS; u++)
            a[u] = __ldg(v2 + i + u * stride);
        bool bad = false;
#pragma unroll
        for (int u = 0; u < NF_PAIRS; u++)
            bad |= hk_cu_nonfinite(a[u].x) | hk_cu_nonfinite(a[u].y);
        if (!bad) continue;
#pragma unroll
        for (int u = 0; u < NF_PAIRS; u++) {
            const int64_t q = head + 2 * (i + u * stride);
            if (hk_cu_nonfinite(a[u].x)) nf_report(q, bb, nb, rowptr, first);
            if (hk_cu_nonfinite(a[u].y)) nf_report(q + 1, bb, nb, rowptr, first);
        }
    }
    for (; i < npair; i += stride) {
        const double2 a = __ldg(v2 + i);
        const int64_t q = head + 2 * i;
        if (hk_cu_nonfinite(a.x)) nf_report(q, bb, nb, rowptr, first);
        if (hk_cu_nonfinite(a.y)) nf_report(q + 1, bb, nb, rowptr, first);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        if (head && hk_cu_nonfinite(val[0])) nf_report(0, bb, nb, rowptr, first);
        if (((nvals - head) & 1) && hk_cu_nonfinite(val[nvals - 1]))
            nf_report(nvals - 1, bb, nb, rowptr, first);
    }
}

int hk_cu_bmat_first_nonfinite(const hk_bmat *A, int64_t *row)
{
    *row = -1;
    const int64_t bb = (int64_t)A->br * A->bc, nvals = A->nnzb * bb;
    if (nvals == 0) return 0;
    unsigned long long *dfirst = NULL;
    HK_CALL(hk_cu_setup_flag(&dfirst));
    /* one wave of resident blocks, each thread NF_PAIRS pairs a step */
    k_first_nonfinite<<<hk_cu_rgrid((nvals + 2 * NF_PAIRS - 1) / (2 * NF_PAIRS),
                                    (const void *)k_first_nonfinite),
                        HK_CU_BLOCK, 0, hk_cu.stream>>>(nvals, bb, A->nbrows, A->rowptr, A->val,
                                                        dfirst);
    HK_CU(cudaGetLastError());
    return hk_cu_first_row_read(dfirst, row);
}

// Loaded by hk_cu_init (cuda_impl.cuh: hk_cu_preloads): this file's kernels of the AMG set-up
// and the solve, for 2D and 3D elasticity.
void hk_cu_diag_preload(void)
{
    static const void *const k[] = {
        (const void *)k_block_inv<2>, (const void *)k_block_inv<3>, (const void *)k_block_inv<6>,
        (const void *)k_diag_inv,
        (const void *)k_decoupled,
        (const void *)k_first_nonfinite};
    hk_cu_preload(k, (int)(sizeof k / sizeof *k));
}
