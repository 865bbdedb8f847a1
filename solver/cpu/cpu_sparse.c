/* Sparse and dense set-up ops of smoothed-aggregation AMG on the CPU (contracts: the "set-up on
 * the backend" part of hk_backend_ops in solver/hk_impl.h):
 *
 *   bmat_spgemm             C = A B, block CSR with rectangular blocks
 *   bmat_spgemm_numeric     the values of C = A B into a pattern made before (re-set-up)
 *   bmat_spgemm_pattern     bmat_spgemm's pattern alone (values unspecified)
 *   bmat_spgemm_numeric_upper  the blocks of C = A B on and above the block diagonal
 *   bmat_mirror_lower       the blocks below the diagonal from their mirrors, transposed
 *   bmat_put_transposed     blocks put transposed at given positions (their mirrors sent by
 *                           other processes)
 *   bmat_spgemm_plan        per block of C the pairs that add into it (_numeric_plan: the
 *                           values of bmat_spgemm_numeric(_upper) from it, no search)
 *   amg_smooth_prolongator  P = T - w Dinv (A T) on the pattern of A T (_numeric: its values
 *                           into a kept pattern, in place over A T's allowed)
 *   bmat_transpose_numeric  the values of T = A^T into a pattern made before (re-set-up)
 *   dense_inverse           Minv = A^-1 by a blocked Cholesky factorisation (coarsest level)
 *   dense_gemv              y = M x for a dense column-major M
 *
 * The arithmetic is written out step by step (a product, then a sum: no fused multiply-add is
 * generated for the x86-64 baseline) so that cuda/cuda_sparse.cu, which uses __dmul_rn and
 * __dadd_rn in the same order, gives the same digits for spgemm and the smoothed prolongator.
 * Every value is computed by one thread in a fixed order: results do not depend on the thread
 * count. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "spgemm_plan.h"

/* ---- C = A B ----------------------------------------------------------------------------- */

static void sort_i32(int32_t *a, int64_t n)
{
    /* insertion sort for the short rows, heap sort otherwise: rows of a product are tens to a
     * few hundred blocks */
    if (n <= 32) {
        hk_isort_i32(a, n);
        return;
    }
    for (int64_t start = n / 2 - 1;; start--) { /* heapify, then pop */
        for (int64_t r = start;;) {
            int64_t c = 2 * r + 1;
            if (c >= n) break;
            if (c + 1 < n && a[c + 1] > a[c]) c++;
            if (a[r] >= a[c]) break;
            int32_t t = a[r];
            a[r] = a[c];
            a[c] = t;
            r = c;
        }
        if (start == 0) break;
    }
    for (int64_t end = n - 1; end > 0; end--) {
        int32_t t = a[0];
        a[0] = a[end];
        a[end] = t;
        for (int64_t r = 0;;) {
            int64_t c = 2 * r + 1;
            if (c >= end) break;
            if (c + 1 < end && a[c + 1] > a[c]) c++;
            if (a[r] >= a[c]) break;
            t = a[r];
            a[r] = a[c];
            a[c] = t;
            r = c;
        }
    }
}

/* c += a b for one br x bk times bk x bc block pair, each entry summed over m in order. */
static inline __attribute__((always_inline)) void block_mac(const double *restrict a,
                                                            const double *restrict b,
                                                            double *restrict c, const int br,
                                                            const int bk, const int bc)
{
    for (int r = 0; r < br; r++)
        for (int s = 0; s < bc; s++) {
            double acc = c[r * bc + s];
            for (int m = 0; m < bk; m++) {
                const double prod = a[r * bk + m] * b[m * bc + s];
                acc = acc + prod;
            }
            c[r * bc + s] = acc;
        }
}

/* c += a b with the block shapes of AMG compiled with constant sizes (unrolled). */
static inline __attribute__((always_inline)) void
block_mac_amg(const double *a, const double *b, double *c, const int br, const int bk, const int bc)
{
    if (br == 3 && bk == 3 && bc == 6)
        block_mac(a, b, c, 3, 3, 6);
    else if (br == 6 && bk == 3 && bc == 6)
        block_mac(a, b, c, 6, 3, 6);
    else if (br == 6 && bk == 6 && bc == 6)
        block_mac(a, b, c, 6, 6, 6);
    else if (br == 3 && bk == 3 && bc == 3)
        block_mac(a, b, c, 3, 3, 3);
    else
        block_mac(a, b, c, br, bk, bc);
}

/* C = A B; with values 0 the pattern alone (C->val allocated, not written). */
static int spgemm(const hk_bmat *A, const hk_bmat *B, hk_bmat *C, int values)
{
    int ierr = 0;
    int64_t *count = NULL, *mark_all = NULL;
    memset(C, 0, sizeof *C);
    HK_CALL(hk_bmat_chain_check(A, B, "B", "bmat_spgemm"));
    const int br = A->br, bk = A->bc, bc = B->bc;
    const int64_t nbr = A->nbrows, nbc = B->nbcols;
    const int nth = omp_get_max_threads();
    HK_TRY(hk_calloc((size_t)nbr + 1, sizeof *count, &count));
    /* one marker row per thread: mark[j] = the last row that met column j (symbolic pass), then
     * the position of column j in the current output row (numeric pass) */
    HK_TRY(hk_malloc((size_t)nth * (size_t)(nbc ? nbc : 1) * sizeof *mark_all, &mark_all));

    /* symbolic: number of distinct block columns per row */
#pragma omp parallel
    {
        int64_t *mark = mark_all + (size_t)omp_get_thread_num() * (size_t)(nbc ? nbc : 1);
        for (int64_t j = 0; j < nbc; j++) mark[j] = -1;
#pragma omp for schedule(dynamic, 256)
        for (int64_t i = 0; i < nbr; i++) {
            int64_t n = 0;
            for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                const int64_t k = A->colind[p];
                for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q++) {
                    const int32_t j = B->colind[q];
                    if (mark[j] != i) {
                        mark[j] = i;
                        n++;
                    }
                }
            }
            count[i + 1] = n;
        }
    }
    for (int64_t i = 0; i < nbr; i++) count[i + 1] += count[i];
    HK_TRY(hk_bmat_alloc(A->be, br, bc, nbr, nbc, count[nbr], C));
    memcpy(C->rowptr, count, (size_t)(nbr + 1) * sizeof *count);

    /* numeric: sorted columns, then the sums in the order of A's row, then B's row */
    const size_t bb = (size_t)br * bc;
#pragma omp parallel
    {
        int64_t *mark = mark_all + (size_t)omp_get_thread_num() * (size_t)(nbc ? nbc : 1);
        for (int64_t j = 0; j < nbc; j++) mark[j] = -1;
#pragma omp for schedule(dynamic, 256)
        for (int64_t i = 0; i < nbr; i++) {
            const int64_t c0 = C->rowptr[i], c1 = C->rowptr[i + 1];
            int64_t n = c0;
            for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                const int64_t k = A->colind[p];
                for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q++) {
                    const int32_t j = B->colind[q];
                    if (mark[j] != -2 - i) { /* distinct from the symbolic pass's marks */
                        mark[j] = -2 - i;
                        C->colind[n++] = j;
                    }
                }
            }
            sort_i32(C->colind + c0, c1 - c0);
            if (!values) continue; /* the marks hold -2-i, distinct from the next row's */
            for (int64_t t = c0; t < c1; t++) mark[C->colind[t]] = t;
            memset(C->val + (size_t)c0 * bb, 0, (size_t)(c1 - c0) * bb * sizeof(double));
            for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                const int64_t k = A->colind[p];
                const double *a = A->val + (size_t)p * br * bk;
                for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q++) {
                    const double *b = B->val + (size_t)q * bk * bc;
                    block_mac_amg(a, b, C->val + (size_t)mark[B->colind[q]] * bb, br, bk, bc);
                }
            }
            /* marks hold positions >= 0 now; reset so the next row's -2-i test is clean */
            for (int64_t t = c0; t < c1; t++) mark[C->colind[t]] = -1;
        }
    }
fail:
    free(count);
    free(mark_all);
    return ierr;
}

int hk_cpu_bmat_spgemm(const hk_bmat *A, const hk_bmat *B, hk_bmat *C)
{
    return spgemm(A, B, C, 1);
}

int hk_cpu_bmat_spgemm_pattern(const hk_bmat *A, const hk_bmat *B, hk_bmat *C)
{
    return spgemm(A, B, C, 0);
}

/* C = A B into C's given pattern: the numeric pass of bmat_spgemm alone (no symbolic pass, no
 * sort), each entry summed in the same order, so the digits are bmat_spgemm's. upper: only the
 * blocks with column >= row (from u0, the row's first such block; C's columns are sorted), the
 * products below the diagonal skipped before their look-up, the other blocks untouched. */
static int spgemm_numeric(const hk_bmat *A, const hk_bmat *B, hk_bmat *C, int upper,
                          const char *who)
{
    int ierr = 0;
    int64_t *mark_all = NULL;
    HK_CALL(hk_bmat_product_check(A, B, C, who));
    const int br = A->br, bk = A->bc, bc = B->bc;
    const int64_t nbr = A->nbrows, nbc = B->nbcols;
    const int nth = omp_get_max_threads();
    const size_t bb = (size_t)br * bc;
    int64_t first = INT64_MAX;
    HK_CALL(hk_malloc((size_t)nth * (size_t)(nbc ? nbc : 1) * sizeof *mark_all, &mark_all));
#pragma omp parallel reduction(min : first)
    {
        int64_t *mark = mark_all + (size_t)omp_get_thread_num() * (size_t)(nbc ? nbc : 1);
        for (int64_t j = 0; j < nbc; j++)
            mark[j] = -1;
#pragma omp for schedule(dynamic, 256)
        for (int64_t i = 0; i < nbr; i++) {
            const int64_t c1 = C->rowptr[i + 1];
            const int64_t c0 =
                upper ? hk_lower_bound_i32(C->colind, C->rowptr[i], c1, i) : C->rowptr[i];
            for (int64_t t = c0; t < c1; t++)
                mark[C->colind[t]] = t;
            memset(C->val + (size_t)c0 * bb, 0, (size_t)(c1 - c0) * bb * sizeof(double));
            for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                const int64_t k = A->colind[p];
                const double *a = A->val + (size_t)p * br * bk;
                for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q++) {
                    if (upper && B->colind[q] < i) continue;
                    const int64_t pos = mark[B->colind[q]];
                    if (pos < 0) { /* a product block outside C's pattern */
                        if (i < first) first = i;
                        continue;
                    }
                    block_mac_amg(a, B->val + (size_t)q * bk * bc, C->val + (size_t)pos * bb, br,
                                  bk, bc);
                }
            }
            for (int64_t t = c0; t < c1; t++)
                mark[C->colind[t]] = -1;
        }
    }
    HK_TRY_CHECK(first == INT64_MAX, HK_ERR_ARG,
                 "%s: block row %lld of A B has a block outside C's pattern; pass the pattern "
                 "that bmat_spgemm made for these A and B",
                 who, (long long)first);
fail:
    free(mark_all);
    return ierr;
}

int hk_cpu_bmat_spgemm_numeric(const hk_bmat *A, const hk_bmat *B, hk_bmat *C)
{
    return spgemm_numeric(A, B, C, 0, "bmat_spgemm_numeric");
}

int hk_cpu_bmat_spgemm_numeric_upper(const hk_bmat *A, const hk_bmat *B, hk_bmat *C)
{
    return spgemm_numeric(A, B, C, 1, "bmat_spgemm_numeric_upper");
}

/* ---- C = A B by a plan (the values-only re-set-up) ---------------------------------------- */

/* The pairs (A block, B block) that add into each block of C, in the order of A's row (the
 * walk's own order: the rows of C are independent, and a row's pairs are visited p by p). The
 * reference of cuda's planned product (cuda/cuda_sparse.cu); the sums are spgemm_numeric's. */
typedef struct cpu_plan {
    hk_spgemm_plan_shape sh;
    int64_t *off;     /* cnnzb + 1 */
    int32_t *pa, *pb; /* A's and B's block indices (below 2^31, else no plan) */
} cpu_plan;

void hk_cpu_bmat_spgemm_plan_free(void *plan)
{
    cpu_plan *pl = plan;
    if (!pl) return;
    free(pl->off), free(pl->pa), free(pl->pb);
    free(pl);
}

/* Row i's pairs: counted into cnt (WRITE 0) or written at the cursors cur (WRITE 1); mark[j]
 * = the block of C in column j (-1 elsewhere). The first row with a block outside C's
 * pattern in *first. */
static void plan_row(const hk_bmat *A, const hk_bmat *B, int upper, int64_t i, const int64_t *mark,
                     int write, int64_t *cnt, int32_t *pa, int32_t *pb, int64_t *first)
{
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
        const int64_t k = A->colind[p];
        for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q++) {
            if (upper && B->colind[q] < i) continue;
            const int64_t c = mark[B->colind[q]];
            if (c < 0) {
                if (i < *first) *first = i;
                continue;
            }
            const int64_t s = cnt[c]++;
            if (write) pa[s] = (int32_t)p, pb[s] = (int32_t)q;
        }
    }
}

int hk_cpu_bmat_spgemm_plan(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C, int upper,
                            void **plan, size_t *bytes)
{
    int ierr = 0;
    cpu_plan *pl = NULL;
    int64_t *mark_all = NULL, *cur = NULL;
    *plan = NULL, *bytes = 0;
    HK_CALL(hk_bmat_product_check(A, B, C, "bmat_spgemm_plan"));
    if (A->nnzb >= INT32_MAX || B->nnzb >= INT32_MAX) return 0; /* no plan: 32-bit indices */
    const int64_t nbr = A->nbrows, nbc = B->nbcols, cn = C->nnzb;
    const int nth = omp_get_max_threads();
    HK_CALL(hk_calloc(1, sizeof *pl, &pl));
    hk_spgemm_plan_shape_of(A, B, C, upper, &pl->sh);
    HK_TRY(hk_calloc((size_t)cn + 1, sizeof *pl->off, &pl->off));
    HK_TRY(hk_calloc((size_t)cn + 1, sizeof *cur, &cur));
    HK_TRY(hk_malloc((size_t)nth * (size_t)(nbc ? nbc : 1) * sizeof *mark_all, &mark_all));
    int64_t first = INT64_MAX;
    for (int write = 0; write < 2; write++) {
#pragma omp parallel reduction(min : first)
        {
            int64_t *mark = mark_all + (size_t)omp_get_thread_num() * (size_t)(nbc ? nbc : 1);
            for (int64_t j = 0; j < nbc; j++)
                mark[j] = -1;
#pragma omp for schedule(dynamic, 256)
            for (int64_t i = 0; i < nbr; i++) {
                for (int64_t t = C->rowptr[i]; t < C->rowptr[i + 1]; t++)
                    mark[C->colind[t]] = t;
                plan_row(A, B, upper, i, mark, write, cur, pl->pa, pl->pb, &first);
                for (int64_t t = C->rowptr[i]; t < C->rowptr[i + 1]; t++)
                    mark[C->colind[t]] = -1;
            }
        }
        HK_TRY_CHECK(first == INT64_MAX, HK_ERR_ARG,
                     "bmat_spgemm_plan: block row %lld of A B has a block outside C's pattern; "
                     "pass the pattern that bmat_spgemm made for these A and B",
                     (long long)first);
        if (write) break;
        for (int64_t c = 0; c < cn; c++)
            pl->off[c + 1] = pl->off[c] + cur[c];
        const int64_t np = pl->off[cn];
        HK_TRY(hk_malloc((size_t)(np ? np : 1) * sizeof *pl->pa, &pl->pa));
        HK_TRY(hk_malloc((size_t)(np ? np : 1) * sizeof *pl->pb, &pl->pb));
        memcpy(cur, pl->off, (size_t)cn * sizeof *cur);
    }
    *bytes = (size_t)(cn + 1) * sizeof(int64_t) + (size_t)pl->off[cn] * 2 * sizeof(int32_t);
    *plan = pl;
    pl = NULL;
fail:
    free(mark_all), free(cur);
    hk_cpu_bmat_spgemm_plan_free(pl);
    return ierr;
}

/* The planned product; with A's values from a32 and/or B's from b32 (block stride b32_stride;
 * NULL: A->val, B->val) each such block widened exactly into a local fp64 copy first, so that
 * block_mac_amg runs on the same fp64 values either way (the reference of cuda's fp32-operand
 * variants). */
int hk_cpu_bmat_spgemm_numeric_plan_f32(const void *plan, const hk_bmat *A, const float *a32,
                                        const hk_bmat *B, const float *b32, int b32_stride,
                                        hk_bmat *C)
{
    const cpu_plan *pl = plan;
    HK_CALL(hk_spgemm_plan_check(pl ? &pl->sh : NULL, A, B, C));
    const int br = pl->sh.br, bk = pl->sh.bk, bc = pl->sh.bc;
    const size_t bb = (size_t)br * bc, ab = (size_t)br * bk, kb = (size_t)bk * bc;
    HK_CHECK(!b32 || b32_stride >= (int)kb, HK_ERR_ARG,
             "bmat_spgemm_numeric_plan_f32: B's block stride %d is below its %d x %d blocks",
             b32_stride, bk, bc);
    HK_CHECK((!a32 || ab <= 64) && (!b32 || kb <= 64), HK_ERR_UNSUPPORTED,
             "bmat_spgemm_numeric_plan_f32: blocks of %d x %d and %d x %d are too large", br, bk,
             bk, bc);
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t i = 0; i < pl->sh.nbr; i++) {
        double aw[64], bw[64];
        const int64_t c1 = C->rowptr[i + 1];
        const int64_t c0 =
            pl->sh.upper ? hk_lower_bound_i32(C->colind, C->rowptr[i], c1, i) : C->rowptr[i];
        for (int64_t c = c0; c < c1; c++) {
            double *dst = C->val + (size_t)c * bb;
            memset(dst, 0, bb * sizeof *dst);
            for (int64_t e = pl->off[c]; e < pl->off[c + 1]; e++) {
                const double *a = A->val + (size_t)pl->pa[e] * ab;
                const double *b = B->val + (size_t)pl->pb[e] * kb;
                if (a32) {
                    const float *f = a32 + (size_t)pl->pa[e] * ab;
                    for (size_t k = 0; k < ab; k++)
                        aw[k] = (double)f[k];
                    a = aw;
                }
                if (b32) {
                    const float *f = b32 + (size_t)pl->pb[e] * (size_t)b32_stride;
                    for (size_t k = 0; k < kb; k++)
                        bw[k] = (double)f[k];
                    b = bw;
                }
                block_mac_amg(a, b, dst, br, bk, bc);
            }
        }
    }
    return 0;
}

int hk_cpu_bmat_spgemm_numeric_plan(const void *plan, const hk_bmat *A, const hk_bmat *B,
                                    hk_bmat *C)
{
    return hk_cpu_bmat_spgemm_numeric_plan_f32(plan, A, NULL, B, NULL, 0, C);
}

/* ---- the blocks below the diagonal from their mirrors ------------------------------------ */

int hk_cpu_bmat_mirror_lower(hk_bmat *C)
{
    HK_CALL(hk_bmat_mirror_check(C));
    const int bs = C->br;
    const size_t bb = (size_t)bs * bs;
    int64_t first = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : first)
    for (int64_t i = 0; i < C->nbrows; i++)
        for (int64_t q = C->rowptr[i]; q < C->rowptr[i + 1] && C->colind[q] <= i; q++) {
            if (C->colind[q] == i) { /* the diagonal block: its lower triangle from its upper */
                double *d = C->val + (size_t)q * bb;
                for (int r = 1; r < bs; r++)
                    for (int c = 0; c < r; c++)
                        d[r * bs + c] = d[c * bs + r];
                continue;
            }
            const int64_t m = hk_find_block(C->rowptr, C->colind, C->colind[q], i);
            if (m < 0) {
                if (i < first) first = i;
                continue;
            }
            const double *u = C->val + (size_t)m * bb;
            double *l = C->val + (size_t)q * bb;
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++)
                    l[r * bs + c] = u[c * bs + r];
        }
    return hk_bmat_mirror_fault(first == INT64_MAX ? -1 : first);
}

int hk_cpu_bmat_put_transposed(double *val, int bs, const int64_t *to, const double *src,
                               int64_t n)
{
    HK_CHECK(bs >= 1 && n >= 0, HK_ERR_ARG, "bmat_put_transposed: %d x %d blocks, %lld of them",
             bs, bs, (long long)n);
    const size_t bb = (size_t)bs * bs;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++) {
        const double *u = src + (size_t)k * bb;
        double *l = val + (size_t)to[k] * bb;
        for (int r = 0; r < bs; r++)
            for (int c = 0; c < bs; c++)
                l[r * bs + c] = u[c * bs + r];
    }
    return 0;
}

/* T's first block row with more than one block, or -1. */
static int64_t tentative_first_bad_row(const hk_bmat *T)
{
    for (int64_t k = 0; k < T->nbrows; k++)
        if (T->rowptr[k + 1] - T->rowptr[k] > 1) return k;
    return -1;
}

/* C = A T for a tentative prolongator T: the reference is the general product (the device's
 * dedicated kernel gives its bytes), after T's rows are checked. */
static int tentative_check(const hk_bmat *T, const char *who)
{
    const int64_t bad = tentative_first_bad_row(T);
    HK_CHECK(bad < 0, HK_ERR_ARG,
             "%s: block row %lld of T has more than one block; T must be a tentative "
             "prolongator (one block per aggregated node; bmat_spgemm takes any B)",
             who, (long long)bad);
    return 0;
}

int hk_cpu_amg_tentative_product(const hk_bmat *A, const hk_bmat *T, hk_bmat *C)
{
    memset(C, 0, sizeof *C);
    HK_CALL(hk_bmat_chain_check(A, T, "T", "amg_tentative_product"));
    HK_CALL(tentative_check(T, "amg_tentative_product"));
    return hk_cpu_bmat_spgemm(A, T, C);
}

int hk_cpu_amg_tentative_product_numeric(const hk_bmat *A, const hk_bmat *T, hk_bmat *C)
{
    HK_CALL(hk_bmat_product_check(A, T, C, "amg_tentative_product_numeric"));
    HK_CALL(tentative_check(T, "amg_tentative_product_numeric"));
    return hk_cpu_bmat_spgemm_numeric(A, T, C);
}

/* ---- P = T - w Dinv (A T) -------------------------------------------------------------- */

static int smooth_check(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv)
{
    const int br = AT->br, bc = AT->bc;
    HK_CHECK(T->br == br && T->bc == bc && T->nbrows == AT->nbrows && T->nbcols == AT->nbcols,
             HK_ERR_ARG,
             "amg_smooth_prolongator: T (%lld x %lld blocks of %d x %d) and A T (%lld x %lld "
             "blocks of %d x %d) differ in shape",
             (long long)T->nbrows, (long long)T->nbcols, T->br, T->bc, (long long)AT->nbrows,
             (long long)AT->nbcols, br, bc);
    HK_CHECK(Dinv->prec == HK_FP64 && Dinv->n == AT->nbrows * br * br, HK_ERR_ARG,
             "amg_smooth_prolongator: Dinv must be the fp64 BLOCK_INV output of bmat_diag "
             "(%lld entries; got %lld)",
             (long long)(AT->nbrows * br * br), (long long)Dinv->n);
    HK_CHECK(br <= 8 && bc <= 8, HK_ERR_UNSUPPORTED,
             "amg_smooth_prolongator: blocks of %d x %d exceed the supported 8 x 8", br, bc);
    return 0;
}

/* P's values (pv, on A T's pattern) = T - w Dinv (A T), column by column of each block (an
 * entry reads only its own column of the A T block), so pv may be AT->val (in place). */
static int smooth_values(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv, double w,
                         double *pv)
{
    const int br = AT->br, bc = AT->bc;
    const int64_t nbr = AT->nbrows;
    const size_t bb = (size_t)br * bc;
    const double *dinv = Dinv->data;
    int64_t first = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : first)
    for (int64_t i = 0; i < nbr; i++) {
        const double *d = dinv + (size_t)i * br * br;
        int64_t t = T->rowptr[i];
        const int64_t t1 = T->rowptr[i + 1];
        for (int64_t q = AT->rowptr[i]; q < AT->rowptr[i + 1]; q++) {
            const int32_t j = AT->colind[q];
            const double *a = AT->val + (size_t)q * bb;
            const double *tv = NULL;
            while (t < t1 && T->colind[t] < j) { /* a T block left of A T's: not in its pattern */
                if (i < first) first = i;
                t++;
            }
            if (t < t1 && T->colind[t] == j) tv = T->val + (size_t)(t++) * bb;
            double *p = pv + (size_t)q * bb;
            for (int c = 0; c < bc; c++) {
                double col[8];
                for (int m = 0; m < br; m++)
                    col[m] = a[m * bc + c];
                for (int r = 0; r < br; r++) {
                    double s = 0;
                    for (int m = 0; m < br; m++) {
                        const double prod = d[r * br + m] * col[m];
                        s = s + prod;
                    }
                    const double ws = w * s;
                    p[r * bc + c] = (tv ? tv[r * bc + c] : 0.0) - ws;
                }
            }
        }
        if (t < t1 && i < first) first = i;
    }
    HK_CHECK(first == INT64_MAX, HK_ERR_ARG,
             "amg_smooth_prolongator: block row %lld of T has a block outside the pattern of A "
             "T; pass A T = A times this T (its pattern contains T's when A stores its diagonal "
             "blocks)",
             (long long)first);
    return 0;
}

int hk_cpu_amg_smooth_prolongator(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv,
                                  double w, hk_bmat *P)
{
    int ierr;
    memset(P, 0, sizeof *P);
    HK_CALL(smooth_check(AT, T, Dinv));
    const int64_t nbr = AT->nbrows;
    HK_CALL(hk_bmat_alloc(AT->be, AT->br, AT->bc, nbr, AT->nbcols, AT->nnzb, P));
    memcpy(P->rowptr, AT->rowptr, (size_t)(nbr + 1) * sizeof(int64_t));
    if (AT->nnzb) memcpy(P->colind, AT->colind, (size_t)AT->nnzb * sizeof(int32_t));
    HK_TRY(smooth_values(AT, T, Dinv, w, P->val));
    return 0;
fail:
    hk_bmat_free(P);
    return ierr;
}

int hk_cpu_amg_smooth_prolongator_numeric(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv,
                                          double w, hk_bmat *P)
{
    HK_CHECK(P->nbrows == AT->nbrows && P->nnzb == AT->nnzb && P->br == AT->br &&
                 P->bc == AT->bc,
             HK_ERR_ARG,
             "amg_smooth_prolongator_numeric: P must have the pattern of A T (%lld block rows, "
             "%lld blocks of %d x %d)",
             (long long)AT->nbrows, (long long)AT->nnzb, AT->br, AT->bc);
    HK_CALL(smooth_check(AT, T, Dinv));
    return smooth_values(AT, T, Dinv, w, P->val);
}

/* ---- T = A^T into a kept pattern ----------------------------------------------------------- */

/* Each block of T from its source block of A (found in A's row by a binary search): a copy, so
 * the bytes of bmat_transpose. */
int hk_cpu_bmat_transpose_numeric(const hk_bmat *A, hk_bmat *T)
{
    HK_CHECK(T->br == A->bc && T->bc == A->br && T->nbrows == A->nbcols &&
                 T->nbcols == A->nbrows && T->nnzb == A->nnzb,
             HK_ERR_ARG,
             "bmat_transpose_numeric: T (%lld x %lld blocks of %d x %d, %lld blocks) is not the "
             "transpose's shape of A (%lld x %lld blocks of %d x %d, %lld blocks)",
             (long long)T->nbrows, (long long)T->nbcols, T->br, T->bc, (long long)T->nnzb,
             (long long)A->nbrows, (long long)A->nbcols, A->br, A->bc, (long long)A->nnzb);
    const int br = A->br, bc = A->bc;
    int64_t first = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : first)
    for (int64_t j = 0; j < T->nbrows; j++)
        for (int64_t t = T->rowptr[j]; t < T->rowptr[j + 1]; t++) {
            const int64_t q = hk_find_block(A->rowptr, A->colind, T->colind[t], (int32_t)j);
            if (q < 0) {
                if (j < first) first = j;
                continue;
            }
            const double *a = A->val + (size_t)q * br * bc;
            double *b = T->val + (size_t)t * br * bc;
            for (int r = 0; r < br; r++)
                for (int c = 0; c < bc; c++)
                    b[c * br + r] = a[r * bc + c];
        }
    HK_CHECK(first == INT64_MAX, HK_ERR_ARG,
             "bmat_transpose_numeric: block row %lld of T has a block that A lacks; pass the "
             "pattern bmat_transpose made for A",
             (long long)first);
    return 0;
}

/* ---- dense inverse by blocked Cholesky ---------------------------------------------------- */

#define CHOL_NB 64 /* tile size: three 64 x 64 tiles of doubles stay in L2 */
#define INV_RHS 32 /* identity columns solved together (each factor entry read once per 32) */

/* The lower triangle of a (column-major, n x n) overwritten by L with a = L L^T, one column of
 * tiles at a time (right-looking). Returns the first column with a non-positive or non-finite
 * pivot, or -1. Only the lower triangle is read. */
static int64_t chol_blocked(double *a, int64_t n)
{
    for (int64_t k0 = 0; k0 < n; k0 += CHOL_NB) {
        const int64_t k1 = k0 + CHOL_NB < n ? k0 + CHOL_NB : n;
        /* the diagonal tile, unblocked (left-looking inside the tile) */
        for (int64_t j = k0; j < k1; j++) {
            double *cj = a + j * n;
            for (int64_t k = k0; k < j; k++) {
                const double *ck = a + k * n;
                const double l = ck[j];
                for (int64_t i = j; i < k1; i++) cj[i] -= ck[i] * l;
            }
            const double piv = cj[j];
            if (!(piv > 0) || !isfinite(piv)) return j;
            const double d = sqrt(piv);
            for (int64_t i = j; i < k1; i++) cj[i] /= d;
        }
        if (k1 == n) break;
        /* the panel below: L21 = A21 L11^-T, rows independent (tiles of rows in parallel) */
#pragma omp parallel for schedule(static)
        for (int64_t i0 = k1; i0 < n; i0 += CHOL_NB) {
            const int64_t i1 = i0 + CHOL_NB < n ? i0 + CHOL_NB : n;
            for (int64_t j = k0; j < k1; j++) {
                double *cj = a + j * n;
                for (int64_t k = k0; k < j; k++) {
                    const double *ck = a + k * n;
                    const double l = ck[j];
                    for (int64_t i = i0; i < i1; i++) cj[i] -= ck[i] * l;
                }
                const double d = a[j * n + j];
                for (int64_t i = i0; i < i1; i++) cj[i] /= d;
            }
        }
        /* trailing update A22 -= L21 L21^T, lower tiles in parallel */
        const int64_t nt = (n - k1 + CHOL_NB - 1) / CHOL_NB;
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t tt = 0; tt < nt * (nt + 1) / 2; tt++) {
            int64_t ti = 0;
            while ((ti + 1) * (ti + 2) / 2 <= tt) ti++;
            const int64_t tj = tt - ti * (ti + 1) / 2; /* tile (ti, tj), tj <= ti */
            const int64_t i0 = k1 + ti * CHOL_NB, j0 = k1 + tj * CHOL_NB;
            const int64_t i1 = i0 + CHOL_NB < n ? i0 + CHOL_NB : n;
            const int64_t j1 = j0 + CHOL_NB < n ? j0 + CHOL_NB : n;
            for (int64_t j = j0; j < j1; j++) {
                double *cj = a + j * n;
                const int64_t is = ti == tj ? j : i0; /* the diagonal tile: lower part only */
                for (int64_t k = k0; k < k1; k++) {
                    const double *ck = a + k * n;
                    const double l = ck[j];
                    for (int64_t i = is; i < i1; i++) cj[i] -= ck[i] * l;
                }
            }
        }
    }
    return -1;
}

/* X = (L L^T)^-1 from the factor in the lower triangle of a; X's lower triangle is computed
 * INV_RHS columns at a time (forward then backward substitution restricted to rows >= the
 * first column: the backward solve for rows i >= j needs only rows >= i) and mirrored. */
static void chol_inverse(const double *a, int64_t n, double *x)
{
    const int64_t nblk = (n + INV_RHS - 1) / INV_RHS;
#pragma omp parallel
    {
        double *y = malloc((size_t)n * INV_RHS * sizeof *y); /* row-major: y[i*INV_RHS + r] */
#pragma omp for schedule(dynamic, 1)
        for (int64_t bj = 0; bj < nblk; bj++) {
            if (!y) continue;
            const int64_t j0 = bj * INV_RHS;
            const int nr = (int)(j0 + INV_RHS < n ? INV_RHS : n - j0);
            memset(y + j0 * INV_RHS, 0, (size_t)(n - j0) * INV_RHS * sizeof *y);
            for (int r = 0; r < nr; r++) y[(j0 + r) * INV_RHS + r] = 1.0;
            /* L y = e: column-oriented (contiguous reads of L's columns) */
            for (int64_t k = j0; k < n; k++) {
                const double *lk = a + k * n;
                double *yk = y + k * INV_RHS;
                for (int r = 0; r < INV_RHS; r++) yk[r] /= lk[k];
                for (int64_t i = k + 1; i < n; i++) {
                    const double l = lk[i];
                    double *yi = y + i * INV_RHS;
                    for (int r = 0; r < INV_RHS; r++) yi[r] -= l * yk[r];
                }
            }
            /* L^T x = y from the bottom: x_i = (y_i - sum_{k>i} L_ki x_k) / L_ii */
            for (int64_t i = n - 1; i >= j0; i--) {
                const double *li = a + i * n;
                double *yi = y + i * INV_RHS;
                for (int64_t k = i + 1; k < n; k++) {
                    const double l = li[k];
                    const double *yk = y + k * INV_RHS;
                    for (int r = 0; r < INV_RHS; r++) yi[r] -= l * yk[r];
                }
                for (int r = 0; r < INV_RHS; r++) yi[r] /= li[i];
            }
            for (int r = 0; r < nr; r++) /* column j0+r, rows >= j0+r */
                for (int64_t i = j0 + r; i < n; i++) x[(j0 + r) * n + i] = y[i * INV_RHS + r];
        }
        free(y);
    }
    /* the upper triangle from the lower */
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < j; i++) x[j * n + i] = x[i * n + j];
}

int hk_cpu_dense_inverse(const hk_bmat *A, hk_vec *Minv, int64_t *bad)
{
    int ierr = 0;
    double *a = NULL, *x = NULL;
    char *zero = NULL;
    *bad = -1;
    const int br = A->br, bc = A->bc;
    const int64_t n = A->nbrows * br;
    HK_CHECK(n == A->nbcols * bc, HK_ERR_ARG,
             "dense_inverse: the matrix is %lld x %lld scalars; it must be square",
             (long long)n, (long long)(A->nbcols * bc));
    HK_CHECK(n <= 46340, HK_ERR_UNSUPPORTED,
             "dense_inverse: %lld rows are too many for a dense coarse solve; lower the coarse "
             "size so the coarsest level stays small",
             (long long)n);
    HK_CHECK(Minv->n == n * n, HK_ERR_ARG,
             "dense_inverse: Minv must have n*n = %lld entries (got %lld)", (long long)(n * n),
             (long long)Minv->n);
    if (n == 0) return 0;
    HK_TRY(hk_calloc((size_t)n * n, sizeof *a, &a));
    HK_TRY(hk_calloc((size_t)n, 1, &zero));
    /* scatter the blocks (column-major) and find the exactly zero rows */
#pragma omp parallel for schedule(static)
    for (int64_t bi = 0; bi < A->nbrows; bi++)
        for (int r = 0; r < br; r++) {
            const int64_t i = bi * br + r;
            int nz = 0;
            for (int64_t q = A->rowptr[bi]; q < A->rowptr[bi + 1]; q++)
                for (int c = 0; c < bc; c++) {
                    const double v = A->val[((size_t)q * br + r) * bc + c];
                    a[((int64_t)A->colind[q] * bc + c) * n + i] = v;
                    nz |= v != 0;
                }
            zero[i] = !nz;
        }
    /* a decoupled dof: its row and column become those of the identity */
    for (int64_t i = 0; i < n; i++)
        if (zero[i]) {
            for (int64_t k = 0; k < n; k++) a[i * n + k] = a[k * n + i] = 0;
            a[i * n + i] = 1;
        }
    const int64_t first = chol_blocked(a, n);
    if (first >= 0) {
        *bad = first;
        if (Minv->prec == HK_FP64)
            memset(Minv->data, 0, (size_t)n * n * sizeof(double));
        else
            memset(Minv->data, 0, (size_t)n * n * sizeof(float));
        goto fail;
    }
    if (Minv->prec == HK_FP64) {
        chol_inverse(a, n, Minv->data);
    } else {
        HK_TRY(hk_malloc((size_t)n * n * sizeof *x, &x));
        chol_inverse(a, n, x);
        float *m = Minv->data;
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n * n; k++) m[k] = (float)x[k];
    }
fail:
    free(a);
    free(x);
    free(zero);
    return ierr;
}

/* ---- y = M x ----------------------------------------------------------------------------- */

#define GEMV_ROWS 64 /* rows per task: a tile of y stays in registers / L1 across columns */

int hk_cpu_dense_gemv(const hk_vec *M, const hk_vec *x, hk_vec *y)
{
    const int64_t n = x->n;
    HK_CHECK(M->prec == x->prec && x->prec == y->prec && y->n == n && M->n == n * n, HK_ERR_ARG,
             "dense_gemv: M must be n x n (%lld entries) and M, x, y of one precision (got "
             "%lld entries, x %lld, y %lld)",
             (long long)(n * n), (long long)M->n, (long long)n, (long long)y->n);
    const int64_t ntiles = (n + GEMV_ROWS - 1) / GEMV_ROWS;
#define GEMV_BODY(T)                                                                               \
    do {                                                                                           \
        const T *m = M->data, *xv = x->data;                                                       \
        T *yv = y->data;                                                                           \
        _Pragma("omp parallel for schedule(static)") for (int64_t t = 0; t < ntiles; t++)          \
        {                                                                                          \
            const int64_t i0 = t * GEMV_ROWS;                                                      \
            const int64_t i1 = i0 + GEMV_ROWS < n ? i0 + GEMV_ROWS : n;                            \
            double acc[GEMV_ROWS] = {0};                                                           \
            for (int64_t j = 0; j < n; j++) {                                                      \
                const double xj = xv[j];                                                           \
                const T *mj = m + j * n;                                                           \
                for (int64_t i = i0; i < i1; i++) acc[i - i0] += (double)mj[i] * xj;              \
            }                                                                                      \
            for (int64_t i = i0; i < i1; i++) yv[i] = (T)acc[i - i0];                              \
        }                                                                                          \
    } while (0)
    if (M->prec == HK_FP64)
        GEMV_BODY(double);
    else
        GEMV_BODY(float);
#undef GEMV_BODY
    return 0;
}
