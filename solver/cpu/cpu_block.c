/* CPU backend: the block ops of the eigensolver (contracts: block_spmv, block_gram,
 * block_update, block_dots in solver/hk_impl.h; the CUDA versions in cuda/cuda_block.cu).
 *
 * A block is k columns of n fp64 entries, one after the other. The block SpMV reads the matrix
 * once for up to HK_CPU_BLOCK_COLS columns and sums each output entry in the single SpMV's
 * order (the row's blocks in order, then the block's columns), so a column of A X has the same
 * digits as hk_mat_spmv of that column (up to the sign of a zero). The reductions cut the rows
 * into chunks fixed by the sizes alone, sum each chunk in order (four interleaved lanes) and
 * the chunks in order: the same digits for any thread count. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Columns of one pass over the matrix at most (passes of 8, 4, 2, 1): 8 x 3 accumulators stay
 * in registers. */
#define HK_CPU_BLOCK_COLS 8

/* ---- block SpMV ------------------------------------------------------------------------- */

/* Block row i of a block CSR (literal B and KB): Y[:, 0..KB) rows of i = A X. */
ALWAYS_INLINE void bsr_block_row(const hk_fmt *F, int64_t i, const double *restrict X, int64_t ldx,
                                 double *restrict Y, int64_t ldy, const int B, const int KB)
{
    double acc[HK_CPU_BLOCK_COLS][6];
    for (int j = 0; j < KB; j++)
        for (int r = 0; r < B; r++)
            acc[j][r] = 0;
    for (int64_t q = F->rowptr[i]; q < F->rowptr[i + 1]; q++) {
        const double *blk = F->val + (size_t)q * B * B;
        const int64_t c0 = (int64_t)F->colind[q] * B;
        for (int j = 0; j < KB; j++) {
            const double *xj = X + j * ldx + c0;
            for (int r = 0; r < B; r++)
                for (int c = 0; c < B; c++)
                    acc[j][r] += blk[r * B + c] * xj[c];
        }
    }
    for (int j = 0; j < KB; j++)
        for (int r = 0; r < B; r++)
            Y[j * ldy + i * B + r] = acc[j][r];
}

/* A slice (literal B and KB) starting at slot base with w slots and rows <= S of its S rows:
 * slot by slot over the slice's rows, so the values stream in order as in the single SpMV's
 * tile (cpu_spmv.c); every output entry still sums over its slots in order, then the block's
 * columns. Padding slots (column -1) are skipped, which adds nothing to a sum. acc holds
 * HK_CPU_SLICE_MAX rows. */
#define HK_CPU_SLICE_MAX 64
ALWAYS_INLINE void sliced_block_slice(const hk_fmt *F, int64_t base, int64_t S, int64_t w,
                                      int64_t rows, const int32_t *perm, int64_t first,
                                      const double *restrict X, int64_t ldx, double *restrict Y,
                                      int64_t ldy, const int B, const int KB)
{
    for (int64_t j0 = 0; j0 < rows; j0 += HK_CPU_SLICE_MAX) {
        const int64_t nr = rows - j0 < HK_CPU_SLICE_MAX ? rows - j0 : HK_CPU_SLICE_MAX;
        double acc[HK_CPU_SLICE_MAX][HK_CPU_BLOCK_COLS][6];
        for (int64_t jr = 0; jr < nr; jr++)
            for (int j = 0; j < KB; j++)
                for (int r = 0; r < B; r++)
                    acc[jr][j][r] = 0;
        for (int64_t k = 0; k < w; k++) {
            const int64_t slot = base + k * S;
            for (int64_t jr = 0; jr < nr; jr++) {
                const int32_t col = F->colind[slot + j0 + jr];
                if (col < 0) continue;
                const double *v = F->val + (size_t)slot * B * B + j0 + jr;
                const int64_t c0 = (int64_t)col * B;
                double a[36];
                for (int e = 0; e < B * B; e++)
                    a[e] = v[(size_t)e * S];
                for (int j = 0; j < KB; j++) {
                    const double *xj = X + j * ldx + c0;
                    for (int r = 0; r < B; r++)
                        for (int c = 0; c < B; c++)
                            acc[jr][j][r] += a[r * B + c] * xj[c];
                }
            }
        }
        for (int64_t jr = 0; jr < nr; jr++) {
            const int64_t out = perm ? perm[first + j0 + jr] : first + j0 + jr;
            for (int j = 0; j < KB; j++)
                for (int r = 0; r < B; r++)
                    Y[j * ldy + out * B + r] = acc[jr][j][r];
        }
    }
}

/* One pass of KB columns for a literal block size B (both literals inside the function that
 * holds the OpenMP loop: see cpu_spmv.c on why a block size passed down stays a variable). */
#define HK_CPU_BLOCK_PASS(B, KB)                                                                   \
    static void block_pass_##B##_##KB(const hk_fmt *F, const double *X, int64_t ldx, double *Y,    \
                                      int64_t ldy)                                                 \
    {                                                                                              \
        const int64_t nb = F->nbrows, work = nb * KB;                                              \
        if (F->fmt == HK_FMT_CSR || F->fmt == HK_FMT_BSR) {                                        \
            _Pragma("omp parallel for schedule(static, 64) if (work > 8192)") for (int64_t i = 0;  \
                                                                                   i < nb; i++)    \
                bsr_block_row(F, i, X, ldx, Y, ldy, B, KB);                                        \
            return;                                                                                \
        }                                                                                          \
        /* ELL and BELL are one slice of every row, without a permutation */                       \
        const int sliced = F->fmt == HK_FMT_SELL || F->fmt == HK_FMT_SBELL;                        \
        const int64_t S = sliced ? F->slice : (nb > 0 ? nb : 1);                                   \
        const int64_t nsl = sliced ? F->nslices : 1;                                               \
        _Pragma("omp parallel for schedule(dynamic, 16) if (work > 8192)") for (int64_t sl = 0;    \
                                                                                sl < nsl; sl++)    \
        {                                                                                          \
            const int64_t base = sliced ? F->slice_ptr[sl] : 0;                                    \
            const int64_t w = sliced ? F->slice_width[sl] : F->width;                              \
            const int64_t rows = nb - sl * S < S ? nb - sl * S : S;                                \
            sliced_block_slice(F, base, S, w, rows, sliced ? F->perm : NULL, sl *S, X, ldx, Y,     \
                               ldy, B, KB);                                                        \
        }                                                                                          \
    }
#define HK_CPU_BLOCK_PASSES(B)                                                                     \
    HK_CPU_BLOCK_PASS(B, 1)                                                                        \
    HK_CPU_BLOCK_PASS(B, 2)                                                                        \
    HK_CPU_BLOCK_PASS(B, 4)                                                                        \
    HK_CPU_BLOCK_PASS(B, 8)                                                                        \
    static void block_pass_##B(const hk_fmt *F, int kb, const double *X, int64_t ldx, double *Y,   \
                               int64_t ldy)                                                        \
    {                                                                                              \
        switch (kb) {                                                                              \
        case 8:                                                                                    \
            block_pass_##B##_8(F, X, ldx, Y, ldy);                                                 \
            break;                                                                                 \
        case 4:                                                                                    \
            block_pass_##B##_4(F, X, ldx, Y, ldy);                                                 \
            break;                                                                                 \
        case 2:                                                                                    \
            block_pass_##B##_2(F, X, ldx, Y, ldy);                                                 \
            break;                                                                                 \
        default:                                                                                   \
            block_pass_##B##_1(F, X, ldx, Y, ldy);                                                 \
            break;                                                                                 \
        }                                                                                          \
    }
HK_CPU_BLOCK_PASSES(1)
HK_CPU_BLOCK_PASSES(2)
HK_CPU_BLOCK_PASSES(3)
HK_CPU_BLOCK_PASSES(4)
HK_CPU_BLOCK_PASSES(5)
HK_CPU_BLOCK_PASSES(6)

/* Column j of a block as a vector of n entries (no copy). */
static hk_vec column(const hk_vec *B, int64_t n, int j)
{
    hk_vec v = {B->be, n, HK_FP64, (double *)B->data + (size_t)j * n};
    return v;
}

int hk_cpu_block_spmv(hk_mat *A, int k, const hk_vec *X, hk_vec *Y)
{
    const hk_cpu_mat *m = A->bdata;
    HK_CHECK(m, HK_ERR_ARG, "cpu block SpMV: matrix was not built");
    HK_CHECK(k >= 1 && X->prec == HK_FP64 && Y->prec == HK_FP64 && A->prec == HK_FP64 &&
                 X->n == (int64_t)k * A->ncols && Y->n == (int64_t)k * A->nrows,
             HK_ERR_ARG,
             "cpu block SpMV: %d columns need fp64 blocks of %lld x %d and %lld x %d entries "
             "and an fp64 matrix",
             k, (long long)A->ncols, k, (long long)A->nrows, k);
    HK_CHECK(X->data != Y->data, HK_ERR_ARG, "cpu block SpMV: X and Y must be different blocks");
    const hk_fmt *F = &m->F;
    const int native = F->fmt == HK_FMT_CSR || F->fmt == HK_FMT_BSR || F->fmt == HK_FMT_ELL ||
                       F->fmt == HK_FMT_BELL || F->fmt == HK_FMT_SELL || F->fmt == HK_FMT_SBELL;
    if (!native) {
        /* a format without a block kernel (pcsr): one SpMV per column */
        for (int j = 0; j < k; j++) {
            hk_vec x = column(X, A->ncols, j), y = column(Y, A->nrows, j);
            HK_CALL(hk_cpu_mat_spmv(A, &x, &y));
        }
        return 0;
    }
    const double *xd = X->data;
    double *yd = Y->data;
    /* passes of 8 columns, then 4, 2, 1 for the rest */
    for (int j0 = 0; j0 < k;) {
        const int rest = k - j0;
        const int kb = rest >= 8 ? 8 : rest >= 4 ? 4 : rest >= 2 ? 2 : 1;
        const double *xj = xd + (size_t)j0 * A->ncols;
        double *yj = yd + (size_t)j0 * A->nrows;
        switch (F->bs) {
        case 1:
            block_pass_1(F, kb, xj, A->ncols, yj, A->nrows);
            break;
        case 2:
            block_pass_2(F, kb, xj, A->ncols, yj, A->nrows);
            break;
        case 3:
            block_pass_3(F, kb, xj, A->ncols, yj, A->nrows);
            break;
        case 4:
            block_pass_4(F, kb, xj, A->ncols, yj, A->nrows);
            break;
        case 5:
            block_pass_5(F, kb, xj, A->ncols, yj, A->nrows);
            break;
        default:
            block_pass_6(F, kb, xj, A->ncols, yj, A->nrows);
            break;
        }
        j0 += kb;
    }
    return 0;
}

/* ---- reductions ------------------------------------------------------------------------- */

/* x . y over [0, n) in HK_CPU_LANES interleaved lanes (the order fixed by n alone). */
static inline double lanes_dot(const double *restrict x, const double *restrict y, int64_t n)
{
    double s[HK_CPU_LANES] = {0, 0, 0, 0};
    HK_CPU_LANE_FOR(0, n, i, l, s[l] += x[i] * y[i];);
    return hk_cpu_lanes_sum(s);
}

/* Two doubles in one register (GCC/Clang vector extension; SSE2 on any x86-64). */
typedef double v2d __attribute__((vector_size(16)));

static inline v2d load2(const double *p)
{
    v2d v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Rows per tile of the Gram product: a tile's columns stay in cache while every pair of
 * columns is summed over it. */
#define GRAM_TILE 512

/* Chunks of a Gram product of p x q values: HK_CPU_CHUNKS, fewer when the partial sums would
 * pass 32 MB (fixed by the sizes, never by the thread count). */
static int gram_chunks(int64_t n, int p, int q)
{
    const int64_t cap = ((int64_t)32 << 20) / ((int64_t)p * q * (int64_t)sizeof(double));
    int64_t c = HK_CPU_CHUNKS < cap ? HK_CPU_CHUNKS : cap;
    if (c > n / GRAM_TILE + 1) c = n / GRAM_TILE + 1;
    return c < 1 ? 1 : (int)c;
}

/* pc[i + j p] += X_i . Y_j over rows [0, len) of the columns at x, y (leading dimension n), for
 * i in [i0, i0 + IB), j in [j0, j0 + JB): IB x JB sums of two lanes each (even and odd rows,
 * the odd tail row into the even lane), added lane 0 + lane 1. */
#define GRAM_MICRO(IB, JB)                                                                         \
    static void gram_micro_##IB##_##JB(const double *restrict x, const double *restrict y,         \
                                       int64_t n, int64_t len, int i0, int j0, int p, double *pc)  \
    {                                                                                              \
        v2d acc[IB][JB];                                                                           \
        for (int a = 0; a < IB; a++)                                                               \
            for (int b = 0; b < JB; b++)                                                           \
                acc[a][b] = (v2d){0, 0};                                                           \
        const int64_t len2 = len / 2 * 2;                                                          \
        for (int64_t r = 0; r < len2; r += 2) {                                                    \
            v2d xa[IB], yb[JB];                                                                    \
            for (int a = 0; a < IB; a++)                                                           \
                xa[a] = load2(x + (size_t)(i0 + a) * n + r);                                       \
            for (int b = 0; b < JB; b++)                                                           \
                yb[b] = load2(y + (size_t)(j0 + b) * n + r);                                       \
            for (int a = 0; a < IB; a++)                                                           \
                for (int b = 0; b < JB; b++)                                                       \
                    acc[a][b] += xa[a] * yb[b];                                                    \
        }                                                                                          \
        for (int a = 0; a < IB; a++)                                                               \
            for (int b = 0; b < JB; b++) {                                                         \
                double s0 = acc[a][b][0];                                                          \
                if (len2 < len)                                                                    \
                    s0 += x[(size_t)(i0 + a) * n + len2] * y[(size_t)(j0 + b) * n + len2];         \
                pc[(i0 + a) + (size_t)(j0 + b) * p] += s0 + acc[a][b][1];                          \
            }                                                                                      \
    }
GRAM_MICRO(2, 4)
GRAM_MICRO(2, 1)
GRAM_MICRO(1, 4)
GRAM_MICRO(1, 1)

int hk_cpu_block_gram(int64_t n, int p, const hk_vec *X, int q, const hk_vec *Y, double *G)
{
    HK_CHECK(p >= 1 && q >= 1 && X->prec == HK_FP64 && Y->prec == HK_FP64 &&
                 X->n >= (int64_t)p * n && Y->n >= (int64_t)q * n,
             HK_ERR_ARG, "cpu block_gram: fp64 blocks of %lld x %d and %lld x %d expected",
             (long long)n, p, (long long)n, q);
    const int nc = gram_chunks(n, p, q);
    const size_t pq = (size_t)p * q;
    double *part = NULL;
    HK_CALL(hk_malloc((size_t)nc * pq * sizeof *part, &part));
    const double *x = X->data, *y = Y->data;
#pragma omp parallel for schedule(static) if (n * (int64_t)pq > 65536)
    for (int c = 0; c < nc; c++) {
        const int64_t r0 = (int64_t)((__int128)n * c / nc),
                      r1 = (int64_t)((__int128)n * (c + 1) / nc);
        double *pc = part + (size_t)c * pq;
        memset(pc, 0, pq * sizeof *pc);
        for (int64_t t = r0; t < r1; t += GRAM_TILE) {
            const int64_t len = r1 - t < GRAM_TILE ? r1 - t : GRAM_TILE;
            const int p2 = p / 2 * 2, q4 = q / 4 * 4;
            for (int j = 0; j < q4; j += 4) {
                for (int i = 0; i < p2; i += 2)
                    gram_micro_2_4(x + t, y + t, n, len, i, j, p, pc);
                if (p2 < p) gram_micro_1_4(x + t, y + t, n, len, p2, j, p, pc);
            }
            for (int j = q4; j < q; j++) {
                for (int i = 0; i < p2; i += 2)
                    gram_micro_2_1(x + t, y + t, n, len, i, j, p, pc);
                if (p2 < p) gram_micro_1_1(x + t, y + t, n, len, p2, j, p, pc);
            }
        }
    }
    for (size_t e = 0; e < pq; e++) {
        double s = 0;
        for (int c = 0; c < nc; c++)
            s += part[(size_t)c * pq + e];
        G[e] = s;
    }
    free(part);
    return 0;
}

int hk_cpu_block_dots(int64_t n, int k, const hk_vec *X, const hk_vec *Y, double *d)
{
    HK_CHECK(k >= 1 && X->prec == HK_FP64 && Y->prec == HK_FP64 && X->n >= (int64_t)k * n &&
                 Y->n >= (int64_t)k * n,
             HK_ERR_ARG, "cpu block_dots: fp64 blocks of %lld x %d expected", (long long)n, k);
    double *part = NULL;
    HK_CALL(hk_malloc((size_t)HK_CPU_CHUNKS * k * sizeof *part, &part));
    const double *x = X->data, *y = Y->data;
#pragma omp parallel for schedule(static) if (n * (int64_t)k > 65536)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        const int64_t i0 = hk_cpu_chunk_begin(n, c), i1 = hk_cpu_chunk_begin(n, c + 1);
        for (int j = 0; j < k; j++)
            part[(size_t)c * k + j] =
                lanes_dot(x + (size_t)j * n + i0, y + (size_t)j * n + i0, i1 - i0);
    }
    for (int j = 0; j < k; j++) {
        double s = 0;
        for (int c = 0; c < HK_CPU_CHUNKS; c++)
            s += part[(size_t)c * k + j];
        d[j] = s;
    }
    free(part);
    return 0;
}

/* ---- Y = X C + beta Y ------------------------------------------------------------------- */

/* Rows [r, r + 4) of columns j0 .. j0 + JB of Y = X C + beta Y: JB x 4 sums (two registers
 * each column) over i in order, C's entries broadcast. */
#define UPDATE_MICRO(JB)                                                                           \
    static void update_micro_##JB(const double *restrict x, int64_t n, int p, const double *C,     \
                                  int j0, int64_t r, double beta, double *restrict y)              \
    {                                                                                              \
        v2d lo[JB], hi[JB];                                                                        \
        for (int b = 0; b < JB; b++)                                                               \
            lo[b] = hi[b] = (v2d){0, 0};                                                           \
        for (int i = 0; i < p; i++) {                                                              \
            const v2d x0 = load2(x + (size_t)i * n + r), x1 = load2(x + (size_t)i * n + r + 2);    \
            for (int b = 0; b < JB; b++) {                                                         \
                const double c = C[i + (size_t)(j0 + b) * p];                                      \
                const v2d cc = {c, c};                                                             \
                lo[b] += cc * x0;                                                                  \
                hi[b] += cc * x1;                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (int b = 0; b < JB; b++) {                                                             \
            double *yj = y + (size_t)(j0 + b) * n + r;                                             \
            if (beta != 0) {                                                                       \
                const v2d bb = {beta, beta};                                                       \
                lo[b] += bb * load2(yj);                                                           \
                hi[b] += bb * load2(yj + 2);                                                       \
            }                                                                                      \
            memcpy(yj, &lo[b], sizeof lo[b]);                                                      \
            memcpy(yj + 2, &hi[b], sizeof hi[b]);                                                  \
        }                                                                                          \
    }
UPDATE_MICRO(4)
UPDATE_MICRO(1)

int hk_cpu_block_update(int64_t n, int p, const hk_vec *X, int q, const double *C, double beta,
                        hk_vec *Y)
{
    HK_CHECK(p >= 1 && q >= 1 && X->prec == HK_FP64 && Y->prec == HK_FP64 &&
                 X->n >= (int64_t)p * n && Y->n >= (int64_t)q * n,
             HK_ERR_ARG, "cpu block_update: fp64 blocks of %lld x %d and %lld x %d expected",
             (long long)n, p, (long long)n, q);
    const double *x = X->data;
    double *y = Y->data;
    HK_CHECK(y + (size_t)q * n <= x || x + (size_t)p * n <= y, HK_ERR_ARG,
             "cpu block_update: Y overlaps X");
    /* rows in groups of 4 (each row's sum over i in order, then + beta y), the tail alone */
    const int64_t n4 = n / 4 * 4;
    const int q4 = q / 4 * 4;
#pragma omp parallel for schedule(static) if (n * (int64_t)p * q > 65536)
    for (int64_t r = 0; r < n4; r += 4) {
        for (int j = 0; j < q4; j += 4)
            update_micro_4(x, n, p, C, j, r, beta, y);
        for (int j = q4; j < q; j++)
            update_micro_1(x, n, p, C, j, r, beta, y);
    }
    for (int64_t r = n4; r < n; r++)
        for (int j = 0; j < q; j++) {
            double s = 0;
            for (int i = 0; i < p; i++)
                s += C[i + (size_t)j * p] * x[(size_t)i * n + r];
            y[(size_t)j * n + r] = beta != 0 ? s + beta * y[(size_t)j * n + r] : s;
        }
    return 0;
}
