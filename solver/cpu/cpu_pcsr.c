/* CPU backend: PCSR (prefetch CSR, the GPU Krylov thesis, section 3.4) built from a scalar CSR
 * view, and its SpMV.
 *
 * The SpMV is the CUDA kernel (cuda/cuda_pcsr.cu) written serially per partition, so that the
 * two backends give the same digits: per partition, the products val*x of its P entries
 * (padding gives 0), each aligned group of pad products summed by halving (lanes j and j+o for
 * o = pad/2, ..., 1: the warp shuffle tree), then each owned row sums its groups in order. The
 * leading entries of a row begun in an earlier partition (the split) and the part of the last
 * owned row that runs on into the next partition go to two carry slots per partition; a
 * second pass adds them per crossing row, in partition order. Products are exact in double
 * for fp32 data and are never fused with an addition (this file is built with
 * -ffp-contract=off; the kernel uses __dmul_rn), so the sums are the same on both sides. */
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"

int hk_cpu_pcsr_build(int64_t n, const int64_t *rowptr, const int32_t *colind, const double *val,
                      int P, int pad, int f32, hk_cpu_mat *m)
{
    hk_fmt *F = &m->F;
    F->partition = P;
    F->pad = pad;
    HK_CALL(hk_malloc((size_t)(n + 1) * sizeof *F->rowptr, &F->rowptr));
    F->rowptr[0] = 0;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        F->rowptr[i + 1] = (rowptr[i + 1] - rowptr[i] + pad - 1) / pad * pad;
    for (int64_t i = 0; i < n; i++)
        F->rowptr[i + 1] += F->rowptr[i];
    const int64_t total = F->rowptr[n];
    int64_t np = (total + P - 1) / P;
    if (n > 0 && np < 1) np = 1; /* empty rows still need an owner that writes 0 */
    F->nparts = np;
    F->stored = np * P;
    const size_t slots = (size_t)F->stored;
    HK_CALL(hk_malloc((slots ? slots : 1) * sizeof *F->colind, &F->colind));
    if (f32)
        HK_CALL(hk_calloc(slots ? slots : 1, sizeof *m->val32, &m->val32));
    else
        HK_CALL(hk_calloc(slots ? slots : 1, sizeof *F->val, &F->val));
    HK_CALL(hk_malloc((size_t)(np + 1) * sizeof *F->part_row, &F->part_row));
    HK_CALL(hk_malloc((size_t)(np ? np : 1) * sizeof *F->split, &F->split));
    HK_CALL(hk_calloc((size_t)(2 * np + 1), sizeof *m->carry, &m->carry));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const int64_t b = rowptr[i], len = rowptr[i + 1] - b, q = F->rowptr[i];
        for (int64_t k = 0; k < F->rowptr[i + 1] - q; k++) {
            F->colind[q + k] = k < len ? colind[b + k] : -1;
            if (k < len) {
                if (f32)
                    m->val32[q + k] = (float)val[b + k];
                else
                    F->val[q + k] = val[b + k];
            }
        }
    }
    for (size_t k = (size_t)total; k < slots; k++)
        F->colind[k] = -1;
        /* first row starting at or after each partition's first entry (lower bound) */
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < np; p++) {
        const int64_t lo = hk_lower_bound_i64(F->rowptr, 0, n, p * P);
        F->part_row[p] = (int32_t)lo;
        const int64_t end = F->rowptr[lo] < (p + 1) * P ? F->rowptr[lo] : (p + 1) * P;
        F->split[p] = p == 0 ? 0 : (int32_t)(end - p * P);
    }
    F->part_row[np] = (int32_t)n;
    return 0;
}

#define PCSR_KERNELS(SUF, VT)                                                                      \
    static void partition_##SUF(const hk_fmt *F, const VT *val, const VT *x, VT *y, double *carry, \
                                int64_t p, double *s)                                              \
    {                                                                                              \
        const int P = F->partition, pad = F->pad;                                                  \
        const int64_t base = p * P;                                                                \
        for (int t = 0; t < P; t++) {                                                              \
            const int32_t c = F->colind[base + t];                                                 \
            s[t] = c >= 0 ? (double)val[base + t] * (double)x[c] : 0.0;                            \
        }                                                                                          \
        /* the sum vector: group g of pad products into s[g * pad] */                              \
        for (int o = pad >> 1; o > 0; o >>= 1)                                                     \
            for (int g = 0; g < P; g += pad)                                                       \
                for (int j = 0; j < o; j++)                                                        \
                    s[g + j] = s[g + j] + s[g + j + o];                                            \
        const int split = F->split[p];                                                             \
        if (split > 0) {                                                                           \
            double a = 0;                                                                          \
            for (int g = 0; g < split; g += pad)                                                   \
                a += s[g];                                                                         \
            carry[2 * p] = a;                                                                      \
        }                                                                                          \
        const int64_t r0 = F->part_row[p], r1 = F->part_row[p + 1];                                \
        const int cont = p + 1 < F->nparts && F->split[p + 1] > 0;                                 \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            const int64_t a0 = F->rowptr[r] - base;                                                \
            const int64_t e0 = F->rowptr[r + 1] - base < P ? F->rowptr[r + 1] - base : P;          \
            double a = 0;                                                                          \
            for (int64_t g = a0; g < e0; g += pad)                                                 \
                a += s[g];                                                                         \
            if (cont && r == r1 - 1)                                                               \
                carry[2 * p + 1] = a;                                                              \
            else                                                                                   \
                y[r] = (VT)a;                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void pcsr_##SUF(const hk_fmt *F, const VT *val, const VT *x, VT *y, double *carry)      \
    {                                                                                              \
        const int64_t np = F->nparts;                                                              \
        _Pragma("omp parallel if (np > 64)")                                                       \
        {                                                                                          \
            double s[1024]; /* P <= 1024 (hk_mat_create) */                                        \
            _Pragma("omp for schedule(static)") for (int64_t p = 0; p < np; p++)                   \
                partition_##SUF(F, val, x, y, carry, p, s);                                        \
            /* rows that cross partitions: their first part, then the leading parts in order */    \
            _Pragma("omp for schedule(static)") for (int64_t p = 0; p < np - 1; p++)               \
            {                                                                                      \
                const int32_t next = F->part_row[p + 1];                                           \
                if (F->split[p + 1] == 0 || next == F->part_row[p]) continue;                      \
                double a = carry[2 * p + 1];                                                       \
                for (int64_t q = p + 1; q < np && F->split[q] > 0 && F->part_row[q] == next; q++)  \
                    a += carry[2 * q];                                                             \
                y[next - 1] = (VT)a;                                                               \
            }                                                                                      \
        }                                                                                          \
    }

PCSR_KERNELS(f64, double)
PCSR_KERNELS(f32, float)

int hk_cpu_pcsr_spmv(const hk_cpu_mat *m, const void *x, void *y, hk_precision p)
{
    if (p == HK_FP64)
        pcsr_f64(&m->F, m->F.val, x, y, m->carry);
    else
        pcsr_f32(&m->F, m->val32, x, y, m->carry);
    return 0;
}
