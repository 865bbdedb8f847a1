/* CPU backend: matrix upload and SpMV for every format, fp64 and fp32, OpenMP.
 *
 * The backend copy of an fp64 matrix is the host arrays themselves (A->host); for fp32,
 * A->bdata holds a float copy of A->host.val (same layout). Every output row is written by
 * exactly one thread (SELL/SBELL write y through perm, a permutation), so there are no races
 * and the result does not depend on the thread count. Sums run in double in both precisions
 * and are rounded once per output entry. The cusparse-* formats need the cuda backend. */
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

int hk_cpu_mat_upload(hk_mat *A)
{
    const hk_fmt *F = &A->host;
    A->bdata = NULL;
    HK_CHECK(F->fmt != HK_FMT_CUSPARSE_CSR && F->fmt != HK_FMT_CUSPARSE_BSR, HK_ERR_UNSUPPORTED,
             "format %s needs the cuda backend; use %s on cpu", hk_format_name(F->fmt),
             F->fmt == HK_FMT_CUSPARSE_CSR ? "csr" : "bsr");
    if (A->prec == HK_FP32) {
        float *v;
        const int64_t n = F->stored;
        HK_CALL(hk_malloc((size_t)(n ? n : 1) * sizeof *v, &v));
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n; k++)
            v[k] = (float)F->val[k];
        A->bdata = v;
    }
    return 0;
}

void hk_cpu_mat_release(hk_mat *A)
{
    free(A->bdata);
    A->bdata = NULL;
}

/* One kernel set per value type VT (double, float); B is the block size, a compile-time
 * constant in each specialisation. Below ~2000 (block) rows the loops run on one thread: a
 * parallel region costs more than the product. */
#define HK_CPU_SPMV_KERNELS(SUF, VT)                                                               \
    ALWAYS_INLINE void bsr_##SUF(const hk_fmt *F, const VT *val, const VT *x, VT *y, const int B)  \
    {                                                                                              \
        const int64_t n = F->nbrows;                                                               \
        _Pragma("omp parallel for schedule(static) if (n > 2048)") for (int64_t i = 0; i < n; i++) \
        {                                                                                          \
            double acc[3] = {0, 0, 0};                                                             \
            for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++) {                            \
                const VT *blk = val + (size_t)k * B * B;                                           \
                const VT *xj = x + (size_t)F->colind[k] * B;                                       \
                for (int r = 0; r < B; r++)                                                        \
                    for (int c = 0; c < B; c++)                                                    \
                        acc[r] += (double)blk[r * B + c] * xj[c];                                  \
            }                                                                                      \
            for (int r = 0; r < B; r++)                                                            \
                y[i * B + r] = (VT)acc[r];                                                         \
        }                                                                                          \
    }                                                                                              \
    /* Column-major tile of `rows` rows: slot k of row j at ci[k*ld + j], value e of it at         \
     * v[(k*B*B + e)*ld + j]. k outer, rows inner: contiguous reads, and each row still sums its   \
     * entries in order k = 0, 1, ... (the same digits as a row-by-row loop). */                   \
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
    }                                                                                              \
    ALWAYS_INLINE void ell_##SUF(const hk_fmt *F, const VT *val, const VT *x, VT *y, const int B)  \
    {                                                                                              \
        const int64_t n = F->nbrows, W = F->width, T = 128;                                        \
        const int64_t ntiles = (n + T - 1) / T;                                                    \
        _Pragma("omp parallel for schedule(static) if (ntiles > 16)") for (int64_t t = 0;          \
                                                                           t < ntiles; t++)        \
        {                                                                                          \
            double acc[128 * 3];                                                                   \
            const int64_t i0 = t * T, rows = n - i0 < T ? n - i0 : T;                              \
            tile_##SUF(F->colind + i0, val + i0, n, W, rows, x, acc, B);                           \
            for (int64_t j = 0; j < rows * B; j++)                                                 \
                y[i0 * B + j] = (VT)acc[j];                                                        \
        }                                                                                          \
    }                                                                                              \
    ALWAYS_INLINE void sliced_##SUF(const hk_fmt *F, const VT *val, const VT *x, VT *y,            \
                                    const int B)                                                   \
    {                                                                                              \
        const int64_t n = F->nbrows, S = F->slice, nsl = F->nslices;                               \
        _Pragma("omp parallel for schedule(dynamic, 16) if (nsl * S > 2048)") for (int64_t sl = 0; \
                                                                                   sl < nsl; sl++) \
        {                                                                                          \
            double acc[1024 * 3]; /* S <= 1024 (hk_fmt_from_bcsr) */                               \
            const int64_t base = F->slice_ptr[sl], rows = n - sl * S < S ? n - sl * S : S;         \
            tile_##SUF(F->colind + base, val + (size_t)base * B * B, S, F->slice_width[sl], rows,  \
                       x, acc, B);                                                                 \
            for (int64_t j = 0; j < rows; j++) {                                                   \
                const int64_t old = F->perm[sl * S + j];                                           \
                for (int r = 0; r < B; r++)                                                        \
                    y[old * B + r] = (VT)acc[j * B + r];                                           \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void spmv_##SUF(const hk_fmt *F, const VT *val, const VT *x, VT *y)                     \
    {                                                                                              \
        switch (F->fmt) {                                                                          \
        case HK_FMT_CSR:                                                                           \
        case HK_FMT_BSR:                                                                           \
            if (F->bs == 1)                                                                        \
                bsr_##SUF(F, val, x, y, 1);                                                        \
            else if (F->bs == 2)                                                                   \
                bsr_##SUF(F, val, x, y, 2);                                                        \
            else                                                                                   \
                bsr_##SUF(F, val, x, y, 3);                                                        \
            break;                                                                                 \
        case HK_FMT_ELL:                                                                           \
        case HK_FMT_BELL:                                                                          \
            if (F->bs == 1)                                                                        \
                ell_##SUF(F, val, x, y, 1);                                                        \
            else if (F->bs == 2)                                                                   \
                ell_##SUF(F, val, x, y, 2);                                                        \
            else                                                                                   \
                ell_##SUF(F, val, x, y, 3);                                                        \
            break;                                                                                 \
        case HK_FMT_SELL:                                                                          \
        case HK_FMT_SBELL:                                                                         \
            if (F->bs == 1)                                                                        \
                sliced_##SUF(F, val, x, y, 1);                                                     \
            else if (F->bs == 2)                                                                   \
                sliced_##SUF(F, val, x, y, 2);                                                     \
            else                                                                                   \
                sliced_##SUF(F, val, x, y, 3);                                                     \
            break;                                                                                 \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
    }

HK_CPU_SPMV_KERNELS(f64, double)
HK_CPU_SPMV_KERNELS(f32, float)

int hk_cpu_mat_spmv(hk_mat *A, const hk_vec *x, hk_vec *y)
{
    const hk_fmt *F = &A->host;
    HK_CHECK(x->prec == A->prec && y->prec == A->prec, HK_ERR_ARG,
             "cpu SpMV: vectors must have the matrix precision (%s)",
             A->prec == HK_FP64 ? "fp64" : "fp32");
    HK_CHECK(x->n == F->ncols && y->n == F->nrows, HK_ERR_ARG,
             "cpu SpMV: sizes differ (matrix %lld x %lld, x %lld, y %lld)", (long long)F->nrows,
             (long long)F->ncols, (long long)x->n, (long long)y->n);
    HK_CHECK(x->data != y->data, HK_ERR_ARG, "cpu SpMV: x and y must be different vectors");
    /* every row is written exactly once (empty rows get 0), so y needs no clearing */
    if (A->prec == HK_FP64)
        spmv_f64(F, F->val, x->data, y->data);
    else {
        HK_CHECK(A->bdata, HK_ERR_INTERNAL, "cpu SpMV: fp32 matrix was not uploaded");
        spmv_f32(F, A->bdata, x->data, y->data);
    }
    return 0;
}
