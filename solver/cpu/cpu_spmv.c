/* CPU backend: SpMV for every format, fp64 and fp32, block sizes 1 to 6, OpenMP.
 *
 * The arrays are the ones mat_build made (hk_cpu_mat in A->bdata, cpu_build.c): the hk_fmt
 * layout with values in the matrix precision. Every output row is written by
 * exactly one thread (SELL/SBELL write y through perm, a permutation), so there are no races
 * and the result does not depend on the thread count. Sums run in double in both precisions
 * and are rounded once per output entry; fp64 sums in the host reference's order, fp32 csr and
 * bsr in fixed partial sums (bsr_row below). No -march is assumed: the vector code is SSE2's
 * two doubles per register, written with GCC/Clang vector types where the compiler would not
 * find it. The cusparse-* formats need the cuda backend. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Two doubles in one register (GCC/Clang vector extension; SSE2 on any x86-64) */
typedef double hk_v2d __attribute__((vector_size(16)));

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

/* Column-major tile of `rows` rows: slot k of row j at ci[k*ld + j], value e = r*B + c of it at
 * v[(k*B*B + e)*ld + j]. k outer, rows inner; with B > 1 two rows at a time in one vector register
 * (neighbouring rows' values are neighbours in memory): packed loads, conversions, products and
 * sums, x gathered per row. A padding slot (col < 0) has value 0 and multiplies 0, adding +0:
 * the sum stays as it is (a -0 sum becomes +0). Each output entry (j, r) sums its terms in the
 * order k, then c: the same digits as a row-by-row loop. acc: sum r of row j at
 * acc[r*rows + j]. Inlined into a caller whose B is a literal. */
#define HK_CPU_TILE(SUF, VT)                                                                       \
    ALWAYS_INLINE double xpad_##SUF(const VT *x, int32_t col, int B, int c)                        \
    {                                                                                              \
        return col >= 0 ? (double)x[(size_t)col * B + c] : 0.0;                                    \
    }                                                                                              \
    ALWAYS_INLINE void tile_##SUF(const int32_t *restrict ci, const VT *restrict v, int64_t ld,    \
                                  int64_t W, int64_t rows, const VT *restrict x,                   \
                                  double *restrict acc, const int B)                               \
    {                                                                                              \
        for (int64_t j = 0; j < rows * B; j++)                                                     \
            acc[j] = 0;                                                                            \
        /* scalar rows (B = 1): one row at a time did better than pairs */                         \
        const int64_t rows2 = B > 1 ? rows / 2 * 2 : 0;                                            \
        for (int64_t k = 0; k < W; k++) {                                                          \
            const int32_t *ck = ci + k * ld;                                                       \
            const VT *vk = v + (size_t)k * B * B * ld;                                             \
            for (int64_t j = 0; j < rows2; j += 2) {                                               \
                const int32_t c0 = ck[j], c1 = ck[j + 1];                                          \
                hk_v2d xc[6] = {{0}};                                                              \
                for (int c = 0; c < B; c++) {                                                      \
                    xc[c][0] = xpad_##SUF(x, c0, B, c);                                            \
                    xc[c][1] = xpad_##SUF(x, c1, B, c);                                            \
                }                                                                                  \
                for (int r = 0; r < B; r++) {                                                      \
                    hk_v2d a = {acc[r * rows + j], acc[r * rows + j + 1]};                         \
                    for (int c = 0; c < B; c++) {                                                  \
                        const VT *ve = vk + (size_t)(r * B + c) * ld + j;                          \
                        const hk_v2d vv = {(double)ve[0], (double)ve[1]};                          \
                        a += vv * xc[c];                                                           \
                    }                                                                              \
                    acc[r * rows + j] = a[0];                                                      \
                    acc[r * rows + j + 1] = a[1];                                                  \
                }                                                                                  \
            }                                                                                      \
            for (int64_t j = rows2; j < rows; j++) {                                               \
                const int32_t col = ck[j];                                                         \
                if (col < 0) continue;                                                             \
                const VT *xj = x + (size_t)col * B;                                                \
                for (int r = 0; r < B; r++)                                                        \
                    for (int c = 0; c < B; c++)                                                    \
                        acc[r * rows + j] += (double)vk[(size_t)(r * B + c) * ld + j] * xj[c];     \
            }                                                                                      \
        }                                                                                          \
    }

/* Block row i of a block CSR product.
 * fp64 (and fp32 with B >= 4): one running sum per output entry over the row's entries in
 * order, the host reference's order (the same digits; tests and `hooke bench spmv` compare
 * fp64 exactly). Memory, not the adder, bounds it.
 * fp32, B <= 3: independent partial sums. With one running sum each entry's two float->double
 * conversions and the addition that waits for the previous one made fp32 slower than fp64;
 *   B = 1: the row's entries in HK_CPU_LANES interleaved lanes (cpu_impl.h), lanes (0, 1) and
 *          (2, 3) as vector pairs (packed conversions and products), added in a fixed order;
 *   B = 2, 3: one sum per entry (r, c) of the block over the row's blocks in order, then over
 *          c in order: B*B sums in registers, contiguous loads converted packed.
 * Each row's order is fixed by the matrix alone: the same digits for any thread count. */
#define HK_CPU_BSR_ROW(SUF, VT)                                                                    \
    ALWAYS_INLINE void bsr_row_##SUF(const int64_t *restrict rowptr,                               \
                                     const int32_t *restrict colind, const VT *restrict val,       \
                                     const VT *restrict x, VT *restrict y, int64_t i, const int B) \
    {                                                                                              \
        const int64_t k0 = rowptr[i], k1 = rowptr[i + 1];                                          \
        if (sizeof(VT) == sizeof(double) || B >= 4) {                                              \
            double acc[6] = {0};                                                                   \
            for (int64_t k = k0; k < k1; k++) {                                                    \
                const VT *blk = val + (size_t)k * B * B;                                           \
                const VT *xj = x + (size_t)colind[k] * B;                                          \
                for (int r = 0; r < B; r++)                                                        \
                    for (int c = 0; c < B; c++)                                                    \
                        acc[r] += (double)blk[r * B + c] * (double)xj[c];                          \
            }                                                                                      \
            for (int r = 0; r < B; r++)                                                            \
                y[i * B + r] = (VT)acc[r];                                                         \
        } else if (B == 1) {                                                                       \
            hk_v2d s01 = {0, 0}, s23 = {0, 0};                                                     \
            const int64_t m = k0 + (k1 - k0) / 4 * 4;                                              \
            for (int64_t k = k0; k < m; k += 4) {                                                  \
                const hk_v2d v01 = {(double)val[k], (double)val[k + 1]};                           \
                const hk_v2d v23 = {(double)val[k + 2], (double)val[k + 3]};                       \
                const hk_v2d x01 = {(double)x[colind[k]], (double)x[colind[k + 1]]};               \
                const hk_v2d x23 = {(double)x[colind[k + 2]], (double)x[colind[k + 3]]};           \
                s01 += v01 * x01;                                                                  \
                s23 += v23 * x23;                                                                  \
            }                                                                                      \
            double s[HK_CPU_LANES] = {s01[0], s01[1], s23[0], s23[1]};                             \
            for (int64_t k = m; k < k1; k++)                                                       \
                s[k - m] += (double)val[k] * (double)x[colind[k]];                                 \
            y[i] = (VT)hk_cpu_lanes_sum(s);                                                        \
        } else {                                                                                   \
            double a[3][3] = {{0}};                                                                \
            for (int64_t k = k0; k < k1; k++) {                                                    \
                const VT *blk = val + (size_t)k * B * B;                                           \
                const VT *xj = x + (size_t)colind[k] * B;                                          \
                for (int r = 0; r < B; r++)                                                        \
                    for (int c = 0; c < B; c++)                                                    \
                        a[r][c] += (double)blk[r * B + c] * (double)xj[c];                         \
            }                                                                                      \
            for (int r = 0; r < B; r++) {                                                          \
                double t = a[r][0];                                                                \
                for (int c = 1; c < B; c++)                                                        \
                    t += a[r][c];                                                                  \
                y[i * B + r] = (VT)t;                                                              \
            }                                                                                      \
        }                                                                                          \
    }

/* The kernels of one value type VT (double, float) and one literal block size B. Below ~2000
 * (block) rows the loops run on one thread: a parallel region costs more than the product. */
#define HK_CPU_SPMV_KERNELS_B(SUF, VT, B)                                                          \
    /* block rows [b0, b1) of y = A x on the calling thread */                                     \
    static void bsr_rows_##SUF##_##B(const hk_fmt *F, const VT *val, const VT *x, VT *y,           \
                                     int64_t b0, int64_t b1)                                       \
    {                                                                                              \
        for (int64_t i = b0; i < b1; i++)                                                          \
            bsr_row_##SUF(F->rowptr, F->colind, val, x, y, i, B);                                  \
    }                                                                                              \
    static void bsr_##SUF##_##B(const hk_fmt *F, const VT *val, const VT *x, VT *y)                \
    {                                                                                              \
        const int64_t n = F->nbrows;                                                               \
        /* the static schedule's contiguous ranges, as the vectors were first touched */           \
        _Pragma("omp parallel if (n > 2048)")                                                      \
        {                                                                                          \
            const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();                    \
            bsr_rows_##SUF##_##B(F, val, x, y, n * t / nt, n * (t + 1) / nt);                      \
        }                                                                                          \
    }                                                                                              \
    static void ell_##SUF##_##B(const hk_fmt *F, const VT *val, const VT *x, VT *y)                \
    {                                                                                              \
        /* 512-row tiles: runs of 2-4 KB per slot and entry, long enough for the prefetchers */    \
        const int64_t n = F->nbrows, W = F->width, T = 512;                                        \
        const int64_t ntiles = (n + T - 1) / T;                                                    \
        _Pragma("omp parallel for schedule(static) if (ntiles > 4)") for (int64_t t = 0;           \
                                                                          t < ntiles; t++)         \
        {                                                                                          \
            double acc[512 * B];                                                                   \
            const int64_t i0 = t * T, rows = n - i0 < T ? n - i0 : T;                              \
            tile_##SUF(F->colind + i0, val + i0, n, W, rows, x, acc, B);                           \
            for (int64_t j = 0; j < rows; j++)                                                     \
                for (int r = 0; r < B; r++)                                                        \
                    y[(i0 + j) * B + r] = (VT)acc[r * rows + j];                                   \
        }                                                                                          \
    }                                                                                              \
    static void sliced_##SUF##_##B(const hk_fmt *F, const VT *val, const VT *x, VT *y)             \
    {                                                                                              \
        const int64_t n = F->nbrows, S = F->slice, nsl = F->nslices;                               \
        _Pragma("omp parallel for schedule(dynamic, 16) if (nsl * S > 2048)") for (int64_t sl = 0; \
                                                                                   sl < nsl; sl++) \
        {                                                                                          \
            double acc[1024 * B]; /* S <= 1024 (hk_mat_create) */                                  \
            const int64_t base = F->slice_ptr[sl], rows = n - sl * S < S ? n - sl * S : S;         \
            tile_##SUF(F->colind + base, val + (size_t)base * B * B, S, F->slice_width[sl], rows,  \
                       x, acc, B);                                                                 \
            for (int64_t j = 0; j < rows; j++) {                                                   \
                const int64_t old = F->perm[sl * S + j];                                           \
                for (int r = 0; r < B; r++)                                                        \
                    y[old * B + r] = (VT)acc[r * rows + j];                                        \
            }                                                                                      \
        }                                                                                          \
    }

#define HK_CPU_SPMV_KERNELS(SUF, VT)                                                               \
    HK_CPU_TILE(SUF, VT)                                                                           \
    HK_CPU_BSR_ROW(SUF, VT)                                                                        \
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
    if (hk_cpu_spmv_has_rows(A) && F->nbrows > 2048) {
        /* fp64 CSR/BSR: the row-range kernel of the fused ops on the thread's chunks of rows
         * (theirs, cpu_fused.c), so the plain SpMV runs the same code on the same rows and
         * pages as cg's; fewer rows run on one thread (below) */
        const int64_t nb = F->nbrows;
        const double *xv = x->data;
        double *yv = y->data;
#pragma omp parallel
        {
            const int nt = omp_get_num_threads(), t = omp_get_thread_num();
            hk_cpu_spmv_rows(A, xv, yv, hk_cpu_chunk_begin(nb, HK_CPU_CHUNKS * t / nt),
                             hk_cpu_chunk_begin(nb, HK_CPU_CHUNKS * (t + 1) / nt));
        }
        return 0;
    }
    if (A->prec == HK_FP64)
        spmv_f64(F, F->val, x->data, y->data);
    else
        spmv_f32(F, m->val32, x->data, y->data);
    return 0;
}

int hk_cpu_spmv_has_rows(const hk_mat *A)
{
    const hk_cpu_mat *m = A->bdata;
    return m && A->prec == HK_FP64 && (m->F.fmt == HK_FMT_CSR || m->F.fmt == HK_FMT_BSR);
}

void hk_cpu_spmv_rows(const hk_mat *A, const double *x, double *y, int64_t b0, int64_t b1)
{
    const hk_cpu_mat *m = A->bdata;
    const hk_fmt *F = &m->F;
    switch (F->bs) {
    case 1: bsr_rows_f64_1(F, F->val, x, y, b0, b1); break;
    case 2: bsr_rows_f64_2(F, F->val, x, y, b0, b1); break;
    case 3: bsr_rows_f64_3(F, F->val, x, y, b0, b1); break;
    case 4: bsr_rows_f64_4(F, F->val, x, y, b0, b1); break;
    case 5: bsr_rows_f64_5(F, F->val, x, y, b0, b1); break;
    default: bsr_rows_f64_6(F, F->val, x, y, b0, b1); break;
    }
}
