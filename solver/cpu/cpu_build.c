/* CPU backend: storage formats built from a block CSR in backend memory (mat_build), their
 * download for tests (mat_download), and the generic transpose and expansion of a block CSR.
 * OpenMP; every output entry is written by one thread, so the result does not depend on the
 * thread count. The layouts are the ones documented above hk_fmt (hk_impl.h); the host
 * reference hk_fmt_from_bcsr (formats.c) produces the same arrays.
 *
 * SELL/SBELL sort (block) rows by length, longest first, inside windows of sigma rows with
 * ties in increasing row order: a stable counting sort per window (a window costs its rows
 * plus its longest row, so all windows together cost rows + nonzeros). */
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "bmat_compress.h"

/* Scalar or block CSR view that the builders read. */
typedef struct build_src {
    int b;
    int64_t n;
    const int64_t *rowptr;
    const int32_t *colind;
    const double *val;
} build_src;

static inline void put_val(double *v64, float *v32, size_t i, double x)
{
    if (v32)
        v32[i] = (float)x;
    else
        v64[i] = x;
}

/* Value array of n entries in the matrix precision, zeroed (padding is 0). */
static int alloc_vals(hk_cpu_mat *m, int f32, int64_t n)
{
    if (f32) return hk_calloc((size_t)(n ? n : 1), sizeof(float), &m->val32);
    return hk_calloc((size_t)(n ? n : 1), sizeof(double), &m->F.val);
}

static int64_t longest_row(const build_src *s)
{
    int64_t mx = 0;
#pragma omp parallel for schedule(static) reduction(max : mx)
    for (int64_t i = 0; i < s->n; i++) {
        const int64_t len = s->rowptr[i + 1] - s->rowptr[i];
        if (len > mx) mx = len;
    }
    return mx;
}

static int build_rowptr(const build_src *s, int f32, hk_cpu_mat *m)
{
    hk_fmt *F = &m->F;
    const int64_t nb = s->rowptr[s->n];
    const int64_t b2 = (int64_t)s->b * s->b;
    HK_CALL(hk_malloc((size_t)(s->n + 1) * sizeof *F->rowptr, &F->rowptr));
    HK_CALL(hk_malloc((size_t)(nb ? nb : 1) * sizeof *F->colind, &F->colind));
    HK_CALL(alloc_vals(m, f32, nb * b2));
    memcpy(F->rowptr, s->rowptr, (size_t)(s->n + 1) * sizeof *F->rowptr);
    if (!f32 && nb) {
        /* first touch row by row with the SpMV's static schedule (cpu_spmv.c, same loop and
         * threshold): on a NUMA host each thread's rows sit in its own node's memory */
#pragma omp parallel for schedule(static) if (s->n > 2048)
        for (int64_t i = 0; i < s->n; i++) {
            const int64_t k0 = s->rowptr[i], len = s->rowptr[i + 1] - k0;
            memcpy(F->colind + k0, s->colind + k0, (size_t)len * sizeof *F->colind);
            memcpy(F->val + k0 * b2, s->val + k0 * b2, (size_t)(len * b2) * sizeof *F->val);
        }
    } else {
        if (nb) memcpy(F->colind, s->colind, (size_t)nb * sizeof *F->colind);
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < nb * b2; k++)
            m->val32[k] = (float)s->val[k];
    }
    F->stored = nb * b2;
    return 0;
}

static int build_ell(const build_src *s, int f32, int64_t W, hk_cpu_mat *m)
{
    hk_fmt *F = &m->F;
    const int b2 = s->b * s->b;
    const int64_t n = s->n;
    const int64_t slots = W * n;
    F->width = (int32_t)W;
    F->stored = slots * b2;
    HK_CALL(hk_malloc((size_t)(slots ? slots : 1) * sizeof *F->colind, &F->colind));
    HK_CALL(alloc_vals(m, f32, slots * b2));
    double *v64 = F->val;
    float *v32 = m->val32;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const int64_t b = s->rowptr[i], len = s->rowptr[i + 1] - b;
        for (int64_t k = 0; k < W; k++) {
            F->colind[k * n + i] = k < len ? s->colind[b + k] : -1;
            if (k < len)
                for (int e = 0; e < b2; e++)
                    put_val(v64, v32, (size_t)((k * b2 + e) * n + i),
                            s->val[(size_t)(b + k) * b2 + e]);
        }
    }
    return 0;
}

/* perm[w0 .. w1) = the rows of window [w0, w1) longest first, ties in row order. cnt has
 * room for the window's longest row + 2 entries. */
static void sort_window(const build_src *s, int64_t w0, int64_t w1, int64_t L, int64_t *cnt,
                        int32_t *perm)
{
    memset(cnt, 0, (size_t)(L + 2) * sizeof *cnt);
    for (int64_t i = w0; i < w1; i++)
        cnt[L - (s->rowptr[i + 1] - s->rowptr[i]) + 1]++;
    for (int64_t l = 1; l <= L + 1; l++)
        cnt[l] += cnt[l - 1];
    for (int64_t i = w0; i < w1; i++)
        perm[w0 + cnt[L - (s->rowptr[i + 1] - s->rowptr[i])]++] = (int32_t)i;
}

static int build_sliced(const build_src *s, int f32, int S, int sigma, hk_cpu_mat *m)
{
    hk_fmt *F = &m->F;
    const int b2 = s->b * s->b;
    const int64_t n = s->n;
    const int64_t nsl = (n + S - 1) / S;
    if (sigma <= 0 || sigma > n) sigma = (int)(n > 0 ? n : 1);
    F->slice = S;
    F->sigma = sigma;
    F->nslices = nsl;
    HK_CALL(hk_malloc((size_t)(n ? n : 1) * sizeof *F->perm, &F->perm));
    HK_CALL(hk_malloc((size_t)(nsl + 1) * sizeof *F->slice_ptr, &F->slice_ptr));
    HK_CALL(hk_malloc((size_t)(nsl ? nsl : 1) * sizeof *F->slice_width, &F->slice_width));

    const int64_t nwin = (n + sigma - 1) / sigma;
    int failed = 0;
#pragma omp parallel
    {
        int64_t *cnt = NULL, cap = 0;
#pragma omp for schedule(dynamic, 1)
        for (int64_t w = 0; w < nwin; w++) {
            const int64_t w0 = w * sigma, w1 = w0 + sigma < n ? w0 + sigma : n;
            int64_t L = 0;
            for (int64_t i = w0; i < w1; i++)
                if (s->rowptr[i + 1] - s->rowptr[i] > L) L = s->rowptr[i + 1] - s->rowptr[i];
            if (L + 2 > cap) {
                free(cnt);
                cap = L + 2 > 2 * cap ? L + 2 : 2 * cap;
                cnt = malloc((size_t)cap * sizeof *cnt);
            }
            if (!cnt) {
                cap = 0;
#pragma omp atomic write
                failed = 1;
                continue;
            }
            sort_window(s, w0, w1, L, cnt, F->perm);
        }
        free(cnt);
    }
    HK_CHECK(!failed, HK_ERR_MEMORY, "out of host memory sorting the rows of a %lld-row matrix",
             (long long)n);

#pragma omp parallel for schedule(static)
    for (int64_t sl = 0; sl < nsl; sl++) {
        int64_t W = 0;
        for (int64_t j = sl * S; j < n && j < (sl + 1) * S; j++) {
            const int64_t old = F->perm[j], len = s->rowptr[old + 1] - s->rowptr[old];
            if (len > W) W = len;
        }
        F->slice_width[sl] = (int32_t)W;
    }
    F->slice_ptr[0] = 0;
    for (int64_t sl = 0; sl < nsl; sl++)
        F->slice_ptr[sl + 1] = F->slice_ptr[sl] + (int64_t)F->slice_width[sl] * S;
    const int64_t slots = F->slice_ptr[nsl];
    F->stored = slots * b2;
    HK_CALL(hk_malloc((size_t)(slots ? slots : 1) * sizeof *F->colind, &F->colind));
    HK_CALL(alloc_vals(m, f32, slots * b2));
    double *v64 = F->val;
    float *v32 = m->val32;
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t sl = 0; sl < nsl; sl++) {
        const int64_t base = F->slice_ptr[sl], W = F->slice_width[sl];
        for (int64_t j = 0; j < S; j++) {
            const int64_t nr = sl * S + j;
            const int64_t old = nr < n ? F->perm[nr] : -1;
            const int64_t b = old >= 0 ? s->rowptr[old] : 0;
            const int64_t len = old >= 0 ? s->rowptr[old + 1] - b : 0;
            for (int64_t k = 0; k < W; k++) {
                F->colind[base + k * S + j] = k < len ? s->colind[b + k] : -1;
                if (k < len)
                    for (int e = 0; e < b2; e++)
                        put_val(v64, v32, (size_t)((base + k * S) * b2 + (int64_t)e * S + j),
                                s->val[(size_t)(b + k) * b2 + e]);
            }
        }
    }
    return 0;
}

void hk_cpu_mat_release(hk_mat *A)
{
    hk_cpu_mat *m = A->bdata;
    if (!m) return;
    hk_fmt_free(&m->F);
    free(m->val32);
    free(m->carry);
    free(m);
    A->bdata = NULL;
}

/* The column range that each chunk of (block) rows reads (hk_cpu_mat.reach_lo/hi). */
static void chunk_reach(hk_cpu_mat *m)
{
    const hk_fmt *F = &m->F;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        int32_t lo = INT32_MAX, hi = -1;
        const int64_t b0 = hk_cpu_chunk_begin(F->nbrows, c);
        const int64_t b1 = hk_cpu_chunk_begin(F->nbrows, c + 1);
        for (int64_t k = F->rowptr[b0]; k < F->rowptr[b1]; k++) {
            const int32_t j = F->colind[k];
            lo = j < lo ? j : lo;
            hi = j > hi ? j : hi;
        }
        m->reach_lo[c] = lo;
        m->reach_hi[c] = hi;
    }
    m->has_reach = 1;
}

int hk_cpu_mat_build(hk_mat *A, const hk_bmat *K)
{
    int ierr = 0;
    hk_bmat E = {0};
    hk_cpu_mat *m = NULL;
    const hk_format fmt = A->fmt;
    A->bdata = NULL;
    HK_CHECK(fmt != HK_FMT_CUSPARSE_CSR && fmt != HK_FMT_CUSPARSE_BSR, HK_ERR_UNSUPPORTED,
             "format %s needs the cuda backend; use %s on cpu", hk_format_name(fmt),
             fmt == HK_FMT_CUSPARSE_CSR ? "csr" : "bsr");
    HK_CHECK(fmt >= 0 && fmt < HK_FMT_COUNT, HK_ERR_ARG, "cpu backend: unknown format %d",
             (int)fmt);
    HK_CHECK(K->br == K->bc && K->br >= 1 && K->br <= 6, HK_ERR_ARG,
             "cpu backend: formats need square blocks of size 1 to 6 (got %d x %d)", K->br,
             K->bc);
    HK_CHECK(A->slice >= 1 && A->slice <= 1024, HK_ERR_OPTION,
             "slice size %d is out of range; use format.slice between 1 and 1024", A->slice);
    const int bs = K->br;
    const int scalar =
        fmt == HK_FMT_CSR || fmt == HK_FMT_ELL || fmt == HK_FMT_SELL || fmt == HK_FMT_PCSR;
    HK_CALL(hk_calloc(1, sizeof *m, &m));
    hk_fmt *F = &m->F;
    build_src s = {bs, K->nbrows, K->rowptr, K->colind, K->val};
    if (scalar && bs > 1) {
        HK_TRY(hk_cpu_bmat_expand(K, &E));
        s = (build_src){1, E.nbrows, E.rowptr, E.colind, E.val};
    }
    F->fmt = fmt;
    F->bs = s.b;
    F->nrows = K->nbrows * bs;
    F->ncols = K->nbcols * bs;
    F->nbrows = s.n;
    F->nbcols = scalar ? F->ncols : K->nbcols;
    F->nnz = K->nnzb * bs * bs;
    const int f32 = A->prec == HK_FP32;
    const int64_t L = longest_row(&s);
    switch (fmt) {
    case HK_FMT_CSR:
    case HK_FMT_BSR:
        HK_TRY(build_rowptr(&s, f32, m));
        chunk_reach(m);
        break;
    case HK_FMT_ELL:
    case HK_FMT_BELL:
        HK_TRY(build_ell(&s, f32, L, m));
        break;
    case HK_FMT_SELL:
    case HK_FMT_SBELL:
    {
        int sigma = A->sigma;
        HK_TRY(hk_sigma_resolve(s.rowptr, s.n, A->slice, &sigma));
        HK_TRY(build_sliced(&s, f32, A->slice, sigma, m));
    }
        break;
    case HK_FMT_PCSR:
        HK_TRY(hk_cpu_pcsr_build(s.n, s.rowptr, s.colind, s.val, A->pcsr_partition, A->pcsr_pad,
                                 f32, m));
        break;
    default:
        HK_TRY_CHECK(0, HK_ERR_INTERNAL, "format %d has no build", (int)fmt);
    }
    A->nnz = F->nnz;
    A->stored = F->stored;
    A->width = (fmt == HK_FMT_ELL || fmt == HK_FMT_BELL) ? F->width : L;
    A->bytes = hk_fmt_bytes(F, A->prec);
    A->bdata = m;
    hk_bmat_free(&E);
    return 0;
fail:
    hk_bmat_free(&E);
    if (m) {
        hk_fmt_free(&m->F);
        free(m->val32);
        free(m->carry);
        free(m);
    }
    return ierr;
}

/* Copy n entries (n may be 0) into a new host array. */
static int dup_array(void **dst, const void *src, size_t n, size_t elem)
{
    *dst = NULL;
    if (!src) return 0;
    HK_CALL(hk_malloc(n ? n * elem : elem, dst));
    if (n) memcpy(*dst, src, n * elem);
    return 0;
}

/* F = G's sizes and new copies of its index arrays, no values (on failure F holds what was
 * copied, for hk_fmt_free) */
static int copy_layout(hk_fmt *F, const hk_fmt *G)
{
    int ierr = 0;
    *F = *G;
    F->rowptr = NULL, F->colind = NULL, F->val = NULL;
    F->slice_ptr = NULL, F->slice_width = NULL, F->perm = NULL;
    F->part_row = NULL, F->split = NULL;
    const size_t slots = (size_t)(G->stored / ((int64_t)G->bs * G->bs));
    HK_TRY(dup_array((void **)&F->rowptr, G->rowptr, G->rowptr ? (size_t)G->nbrows + 1 : 0, 8));
    HK_TRY(dup_array((void **)&F->colind, G->colind, slots, 4));
    HK_TRY(dup_array((void **)&F->slice_ptr, G->slice_ptr, (size_t)G->nslices + 1, 8));
    HK_TRY(dup_array((void **)&F->slice_width, G->slice_width, (size_t)G->nslices, 4));
    HK_TRY(dup_array((void **)&F->perm, G->perm, (size_t)G->nbrows, 4));
    HK_TRY(dup_array((void **)&F->part_row, G->part_row, (size_t)G->nparts + 1, 4));
    HK_TRY(dup_array((void **)&F->split, G->split, (size_t)G->nparts, 4));
fail:
    return ierr;
}

/* fp64 values rounded into fp32 (padding zeros stay zeros) */
static void round_values(const double *v, int64_t n, float *v32)
{
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++)
        v32[k] = (float)v[k];
}

/* dst in fp32 with src's layout: every index array copied, the values rounded; or, dst built,
 * its values only (hk_backend_ops.mat_convert). */
int hk_cpu_mat_convert(hk_mat *dst, const hk_mat *src)
{
    int ierr = 0;
    const hk_cpu_mat *ms = src->bdata;
    const hk_fmt *G = &ms->F;
    hk_cpu_mat *m = dst->bdata;
    HK_CHECK(G->val && dst->prec == HK_FP32, HK_ERR_ARG,
             "cpu backend: mat_convert makes fp32 from fp64");
    if (m) {
        HK_CHECK(m->val32 && m->F.stored == G->stored, HK_ERR_ARG,
                 "cpu backend: the fp32 matrix has %lld entries, the fp64 one %lld",
                 (long long)m->F.stored, (long long)G->stored);
        round_values(G->val, G->stored, m->val32);
        return 0;
    }
    HK_CALL(hk_malloc(sizeof *m, &m));
    *m = *ms; /* sizes, the chunks' column reach */
    hk_fmt *F = &m->F;
    m->val32 = NULL;
    m->carry = NULL;
    HK_TRY(copy_layout(F, G));
    if (ms->carry) HK_TRY(hk_calloc((size_t)(2 * G->nparts + 1), sizeof *m->carry, &m->carry));
    HK_TRY(hk_malloc((size_t)(G->stored ? G->stored : 1) * sizeof *m->val32, &m->val32));
    round_values(G->val, G->stored, m->val32);
    dst->nnz = src->nnz;
    dst->stored = src->stored;
    dst->width = src->width;
    dst->bytes = hk_fmt_bytes(F, HK_FP32);
    dst->bdata = m;
    return 0;
fail:
    hk_fmt_free(F);
    free(m->val32);
    free(m->carry);
    free(m);
    return ierr;
}

int hk_cpu_mat_download(const hk_mat *A, hk_fmt *F)
{
    int ierr;
    const hk_cpu_mat *m = A->bdata;
    memset(F, 0, sizeof *F);
    HK_CHECK(m, HK_ERR_ARG, "cpu backend: matrix was not built");
    const hk_fmt *G = &m->F;
    HK_TRY(copy_layout(F, G));
    if (m->val32) {
        HK_TRY(hk_malloc((size_t)(G->stored ? G->stored : 1) * sizeof *F->val, &F->val));
        for (int64_t k = 0; k < G->stored; k++)
            F->val[k] = m->val32[k];
    } else {
        HK_TRY(dup_array((void **)&F->val, G->val, (size_t)G->stored, 8));
    }
    return 0;
fail:
    hk_fmt_free(F);
    return ierr;
}

int hk_cpu_bmat_expand(const hk_bmat *A, hk_bmat *S)
{
    const int br = A->br, bc = A->bc;
    const int64_t bb = (int64_t)br * bc;
    HK_CALL(hk_bmat_alloc(A->be, 1, 1, A->nbrows * br, A->nbcols * bc, A->nnzb * bb, S));
#pragma omp parallel for schedule(static)
    for (int64_t bi = 0; bi < A->nbrows; bi++) {
        const int64_t q0 = A->rowptr[bi], len = A->rowptr[bi + 1] - q0;
        for (int r = 0; r < br; r++) {
            int64_t p = q0 * bb + r * len * bc;
            S->rowptr[bi * br + r] = p;
            for (int64_t q = q0; q < q0 + len; q++)
                for (int c = 0; c < bc; c++) {
                    S->colind[p] = (int32_t)((int64_t)A->colind[q] * bc + c);
                    S->val[p++] = A->val[(q * br + r) * bc + c];
                }
        }
    }
    S->rowptr[A->nbrows * br] = A->nnzb * bb;
    return 0;
}

int hk_cpu_bmat_transpose(const hk_bmat *A, hk_bmat *T)
{
    int ierr = 0;
    int64_t *next = NULL, *src = NULL;
    const int br = A->br, bc = A->bc;
    const int64_t m = A->nbcols, nnzb = A->nnzb;
    HK_CALL(hk_bmat_alloc(A->be, bc, br, m, A->nbrows, nnzb, T));
    HK_TRY(hk_calloc((size_t)m + 1, sizeof *next, &next));
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * sizeof *src, &src));
    /* counting sort by column; rows are visited in increasing order, so every column of T
     * lists its source rows in increasing order */
    for (int64_t q = 0; q < nnzb; q++) {
        const int32_t c = A->colind[q];
        HK_TRY_CHECK(c >= 0 && c < m, HK_ERR_ARG,
                     "bmat_transpose: column index %d outside 0..%lld", (int)c, (long long)m - 1);
        next[c + 1]++;
    }
    for (int64_t c = 0; c < m; c++)
        next[c + 1] += next[c];
    memcpy(T->rowptr, next, (size_t)(m + 1) * sizeof *next);
    for (int64_t i = 0; i < A->nbrows; i++)
        for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) {
            const int64_t t = next[A->colind[q]]++;
            T->colind[t] = (int32_t)i;
            src[t] = q;
        }
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < nnzb; t++) {
        const double *a = A->val + (size_t)src[t] * br * bc;
        double *b = T->val + (size_t)t * br * bc;
        for (int r = 0; r < br; r++)
            for (int c = 0; c < bc; c++)
                b[c * br + r] = a[r * bc + c];
    }
    free(next);
    free(src);
    return 0;
fail:
    free(next);
    free(src);
    hk_bmat_free(T);
    return ierr;
}

int hk_cpu_bmat_compress(const hk_bmat *S, int bs, hk_bmat *B)
{
    HK_CHECK(S->br == 1 && S->bc == 1 && bs >= 1 && bs <= HK_COMPRESS_MAX_BS &&
                 S->nbrows % bs == 0 && S->nbcols % bs == 0,
             HK_ERR_ARG,
             "bmat_compress: needs 1 x 1 blocks and sizes that are multiples of bs = %d (got "
             "%lld x %lld)",
             bs, (long long)S->nbrows, (long long)S->nbcols);
    const int64_t nb = S->nbrows / bs;
    int64_t *cnt = NULL;
    HK_CALL(hk_malloc((size_t)(nb + 1) * sizeof *cnt, &cnt));
    cnt[0] = 0;
#pragma omp parallel for schedule(static)
    for (int64_t bi = 0; bi < nb; bi++)
        cnt[bi + 1] = hk_compress_block_row(bi, bs, S->rowptr, S->colind, S->val, NULL, NULL);
    for (int64_t bi = 0; bi < nb; bi++)
        cnt[bi + 1] += cnt[bi];
    int ierr = hk_bmat_alloc(S->be, bs, bs, nb, S->nbcols / bs, cnt[nb], B);
    if (!ierr) {
        memcpy(B->rowptr, cnt, (size_t)(nb + 1) * sizeof *cnt);
#pragma omp parallel for schedule(static)
        for (int64_t bi = 0; bi < nb; bi++)
            hk_compress_block_row(bi, bs, S->rowptr, S->colind, S->val, B->colind + cnt[bi],
                                  B->val + cnt[bi] * bs * bs);
    }
    free(cnt);
    return ierr;
}
