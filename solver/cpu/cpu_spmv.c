/* CPU backend: SpMV for every format, fp64 and fp32, block sizes 1 to 6, OpenMP.
 *
 * The arrays are the ones mat_build made (hk_cpu_mat in A->bdata, cpu_build.c): the hk_fmt
 * layout with values in the matrix precision. Every output row is written by
 * exactly one thread (SELL/SBELL write y through perm, a permutation), so there are no races
 * and the result does not depend on the thread count. Sums run in double in both precisions
 * and are rounded once per output entry. The cusparse-* formats need the cuda backend. */
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Call KERNEL_<bs>(F, val, x, y): one specialisation per block size. The block size must be a
 * literal inside each function: the OpenMP region is outlined into its own function before
 * constants propagate, so a block size passed as an argument (even to an always-inline
 * function) reaches the loop as a variable, leaves the accumulators in memory and made the
 * scalar CSR product six times slower than the 3x3 BSR one. */
#define HK_CPU_BS_DISPATCH(KERNEL, F, val, x, y)                                                   \
    switch ((F)->bs) {                                                                             \
    case 1: KERNEL##_1(F, val, x, y); break;                                                       \
    case 2: KERNEL##_2(F, val, x, y); break;                                                       \
    case 3: KERNEL##_3(F, val, x, y); break;                                                       \
    case 4: KERNEL##_4(F, val, x, y); break;                                                       \
    case 5: KERNEL##_5(F, val, x, y); break;                                                       \
    default: KERNEL##_6(F, val, x, y); break;                                                      \
    }

/* Column-major tile of `rows` rows: slot k of row j at ci[k*ld + j], value e of it at
 * v[(k*B*B + e)*ld + j]. k outer, rows inner: contiguous reads, and each row still sums its
 * entries in order k = 0, 1, ... (the same digits as a row-by-row loop). Inlined into a caller
 * whose B is a literal. */
#define HK_CPU_TILE(SUF, VT)                                                                       \
    ALWAYS_INLINE void tile_##SUF(const int32_t *ci, const VT *v, int64_t ld, int64_t W,           \
                                  int64_t rows, const VT *x, double *acc, const int B)             \
    {                                                                                              \
        for (int64_t j = 0; j < rows * B; j++)                                                     \
            acc[j] = 0;                                                                            \
        for (int64_t k = 0; k < W; k++) {                                                          \
            const int32_t *ck = ci + k * ld;                                                       \
            const VT *vk = v + (size_t)k * B * B * ld;                                             \
            for (int64_t j = 0; j < rows; j++) {                                                   \
                const int32_t col = ck[j];                                                         \
                if (col < 0) continue;                                                             \
                const VT *xj = x + (size_t)col * B;                                                \
                for (int r = 0; r < B; r++)                                                        \
                    for (int c = 0; c < B; c++)                                                    \
                        acc[j * B + r] += (double)vk[(size_t)(r * B + c) * ld + j] * xj[c];        \
            }                                                                                      \
        }                                                                                          \
    }

/* The kernels of one value type VT (double, float) and one literal block size B. Below ~2000
 * (block) rows the loops run on one thread: a parallel region costs more than the product. */
#define HK_CPU_SPMV_KERNELS_B(SUF, VT, B)                                                          \
    static void bsr_##SUF##_##B(const hk_fmt *F, const VT *val, const VT *x, VT *y)                \
    {                                                                                              \
        const int64_t n = F->nbrows;                                                               \
        const int64_t *rowptr = F->rowptr;                                                         \
        const int32_t *colind = F->colind;                                                         \
        _Pragma("omp parallel for schedule(static) if (n > 2048)") for (int64_t i = 0; i < n; i++) \
        {                                                                                          \
            double acc[B] = {0};                                                                   \
            for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {                                  \
                const VT *blk = val + (size_t)k * B * B;                                           \
                const VT *xj = x + (size_t)colind[k] * B;                                          \
                for (int r = 0; r < B; r++)                                                        \
                    for (int c = 0; c < B; c++)                                                    \
                        acc[r] += (double)blk[r * B + c] * xj[c];                                  \
            }                                                                                      \
            for (int r = 0; r < B; r++)                                                            \
                y[i * B + r] = (VT)acc[r];                                                         \
        }                                                                                          \
    }                                                                                              \
    static void ell_##SUF##_##B(const hk_fmt *F, const VT *val, const VT *x, VT *y)                \
    {                                                                                              \
        const int64_t n = F->nbrows, W = F->width, T = 128;                                        \
        const int64_t ntiles = (n + T - 1) / T;                                                    \
        _Pragma("omp parallel for schedule(static) if (ntiles > 16)") for (int64_t t = 0;          \
                                                                           t < ntiles; t++)        \
        {                                                                                          \
            double acc[128 * B];                                                                   \
            const int64_t i0 = t * T, rows = n - i0 < T ? n - i0 : T;                              \
            tile_##SUF(F->colind + i0, val + i0, n, W, rows, x, acc, B);                           \
            for (int64_t j = 0; j < rows * B; j++)                                                 \
                y[i0 * B + j] = (VT)acc[j];                                                        \
        }                                                                                          \
    }                                                                                              \
    static void sliced_##SUF##_##B(const hk_fmt *F, const VT *val, const VT *x, VT *y)             \
    {                                                                                              \
        const int64_t n = F->nbrows, S = F->slice, nsl = F->nslices;                               \
        _Pragma("omp parallel for schedule(dynamic, 16) if (nsl * S > 2048)") for (int64_t sl = 0; \
                                                                                   sl < nsl; sl++) \
        {                                                                                          \
            double acc[1024 * B]; /* S <= 1024 (hk_mat_create) */                                \
            const int64_t base = F->slice_ptr[sl], rows = n - sl * S < S ? n - sl * S : S;         \
            tile_##SUF(F->colind + base, val + (size_t)base * B * B, S, F->slice_width[sl], rows,  \
                       x, acc, B);                                                                 \
            for (int64_t j = 0; j < rows; j++) {                                                   \
                const int64_t old = F->perm[sl * S + j];                                           \
                for (int r = 0; r < B; r++)                                                        \
                    y[old * B + r] = (VT)acc[j * B + r];                                           \
            }                                                                                      \
        }                                                                                          \
    }

#define HK_CPU_SPMV_KERNELS(SUF, VT)                                                               \
    HK_CPU_TILE(SUF, VT)                                                                           \
    HK_CPU_SPMV_KERNELS_B(SUF, VT, 1)                                                              \
    HK_CPU_SPMV_KERNELS_B(SUF, VT, 2)                                                              \
    HK_CPU_SPMV_KERNELS_B(SUF, VT, 3)                                                              \
    HK_CPU_SPMV_KERNELS_B(SUF, VT, 4)                                                              \
    HK_CPU_SPMV_KERNELS_B(SUF, VT, 5)                                                              \
    HK_CPU_SPMV_KERNELS_B(SUF, VT, 6)                                                              \
    static void spmv_##SUF(const hk_fmt *F, const VT *val, const VT *x, VT *y)                     \
    {                                                                                              \
        switch (F->fmt) {                                                                          \
        case HK_FMT_CSR:                                                                           \
        case HK_FMT_BSR:                                                                           \
            HK_CPU_BS_DISPATCH(bsr_##SUF, F, val, x, y);                                           \
            break;                                                                                 \
        case HK_FMT_ELL:                                                                           \
        case HK_FMT_BELL:                                                                          \
            HK_CPU_BS_DISPATCH(ell_##SUF, F, val, x, y);                                           \
            break;                                                                                 \
        case HK_FMT_SELL:                                                                          \
        case HK_FMT_SBELL:                                                                         \
            HK_CPU_BS_DISPATCH(sliced_##SUF, F, val, x, y);                                        \
            break;                                                                                 \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    }

HK_CPU_SPMV_KERNELS(f64, double)
HK_CPU_SPMV_KERNELS(f32, float)

int hk_cpu_mat_spmv(hk_mat *A, const hk_vec *x, hk_vec *y)
{
    const hk_cpu_mat *m = A->bdata;
    HK_CHECK(m, HK_ERR_ARG, "cpu SpMV: matrix was not built");
    const hk_fmt *F = &m->F;
    HK_CHECK(x->prec == A->prec && y->prec == A->prec, HK_ERR_ARG,
             "cpu SpMV: vectors must have the matrix precision (%s)",
             A->prec == HK_FP64 ? "fp64" : "fp32");
    HK_CHECK(x->n == F->ncols && y->n == F->nrows, HK_ERR_ARG,
             "cpu SpMV: sizes differ (matrix %lld x %lld, x %lld, y %lld)", (long long)F->nrows,
             (long long)F->ncols, (long long)x->n, (long long)y->n);
    HK_CHECK(x->data != y->data, HK_ERR_ARG, "cpu SpMV: x and y must be different vectors");
    /* every row is written exactly once (empty rows get 0), so y needs no clearing */
    if (F->fmt == HK_FMT_PCSR) return hk_cpu_pcsr_spmv(m, x->data, y->data, A->prec);
    if (A->prec == HK_FP64)
        spmv_f64(F, F->val, x->data, y->data);
    else
        spmv_f32(F, m->val32, x->data, y->data);
    return 0;
}
