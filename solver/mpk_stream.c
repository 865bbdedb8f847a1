/* The streamed matrix-powers plan's partitions, cut and packed on the host (mpk_stream.h). */
#include "mpk_stream.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

int hk_mpk_ghost_rows(const int64_t *rowptr, const int32_t *colind, int64_t nb, int64_t block,
                      int k, int64_t p, int32_t *mark, int32_t **buf, int64_t *cap, int64_t *lstart)
{
    const int64_t lo = p * block, hi = lo + block < nb ? lo + block : nb;
    int64_t len = 0;
    if (*cap < hi - lo + 64) {
        int32_t *b = realloc(*buf, (size_t)(hi - lo + 64) * 2 * sizeof *b);
        HK_CHECK(b, HK_ERR_MEMORY, "matrix powers: out of host memory for a ghost zone");
        *buf = b;
        *cap = (hi - lo + 64) * 2;
    }
    for (int64_t r = lo; r < hi; r++) {
        (*buf)[len++] = (int32_t)r;
        mark[r] = (int32_t)p;
    }
    lstart[0] = 0;
    lstart[1] = len;
    for (int l = 1; l <= k; l++) {
        for (int64_t e = lstart[l - 1]; e < lstart[l]; e++) {
            const int64_t r = (*buf)[e];
            for (int64_t t = rowptr[r]; t < rowptr[r + 1]; t++) {
                const int32_t c = colind[t];
                if (mark[c] == p) continue;
                mark[c] = (int32_t)p;
                if (len == *cap) {
                    int32_t *b = realloc(*buf, (size_t)*cap * 2 * sizeof *b);
                    HK_CHECK(b, HK_ERR_MEMORY,
                             "matrix powers: out of host memory for a ghost zone");
                    *buf = b;
                    *cap *= 2;
                }
                (*buf)[len++] = c;
            }
        }
        hk_isort_i32(*buf + lstart[l], len - lstart[l]); /* the frontier is nearly sorted */
        lstart[l + 1] = len;
    }
    return 0;
}

#define ALIGN 256

size_t hk_mpk_stream_part_bytes(int bs, int64_t nrows, int64_t ninner, int64_t nnzb)
{
    const size_t b = (size_t)nnzb * bs * bs * sizeof(double) +
                     ((size_t)ninner + 1 + (size_t)nnzb + (size_t)nrows) * sizeof(int32_t);
    return (b + ALIGN - 1) / ALIGN * ALIGN;
}

void hk_mpk_stream_part(const hk_mpk_stream *S, int64_t p, void *base, hk_mpk_part *v)
{
    const int64_t *lv = S->lvl + (size_t)p * (S->k + 2);
    v->lvl = lv;
    v->nrows = lv[S->k + 1];
    v->ninner = lv[S->k];
    v->nown = lv[1];
    v->nnzb = S->nnzb[p];
    v->val = base;
    v->rowptr = (int32_t *)(v->val + (size_t)v->nnzb * S->bs * S->bs);
    v->colind = v->rowptr + v->ninner + 1;
    v->rows = v->colind + v->nnzb;
}

size_t hk_mpk_stream_device_bytes(const hk_mpk_stream *S)
{
    return 2 * S->max_bytes + (size_t)S->max_rows * S->bs * HK_MPK_STREAM_VECS * sizeof(double);
}

/* Level starts and blocks of every partition of block rows (lvl, nnzb: nparts entries), the
 * largest partition's rows and bytes, and the work. */
static int cut(const hk_bcsr *K, int64_t block, int k, int64_t nparts, int32_t *marks,
               hk_mpk_stream *S)
{
    const int64_t nb = K->nbrows;
    int failed = 0, toobig = 0;
    int64_t ext = 0, maxr = 0, work = 0;
    size_t maxb = 0;
#pragma omp parallel reduction(| : failed, toobig) reduction(+ : ext, work)                        \
    reduction(max : maxr, maxb)
    {
        int32_t *mark = hk_mpk_marks(marks, nb, omp_get_thread_num());
        int32_t *buf = NULL;
        int64_t cap = 0;
#pragma omp for schedule(dynamic, 16)
        for (int64_t p = 0; p < nparts; p++) {
            int64_t *ls = S->lvl + (size_t)p * (k + 2);
            if (failed ||
                hk_mpk_ghost_rows(K->rowptr, K->colind, nb, block, k, p, mark, &buf, &cap, ls)) {
                failed = 1;
                continue;
            }
            int64_t z = 0;
            for (int64_t e = 0; e < ls[k]; e++)
                z += K->rowptr[buf[e] + 1] - K->rowptr[buf[e]];
            S->nnzb[p] = z;
            if (z >= INT32_MAX) toobig = 1;
            for (int j = 0; j < k; j++)
                work += ls[k - j]; /* rows of levels <= k-1-j at step j */
            ext += ls[k + 1];
            if (ls[k + 1] > maxr) maxr = ls[k + 1];
            const size_t b = hk_mpk_stream_part_bytes(K->bs, ls[k + 1], ls[k], z);
            if (b > maxb) maxb = b;
        }
        free(buf);
    }
    HK_CHECK(!failed, HK_ERR_MEMORY,
             "matrix powers (streamed): out of host memory for a ghost "
             "zone; use a smaller mpk.block or mpk.k");
    HK_CHECK(!toobig, HK_ERR_UNSUPPORTED,
             "matrix powers (streamed): a partition of %lld block rows with its ghost zone has "
             "2^31 blocks or more; use a smaller mpk.block",
             (long long)block);
    S->ext_rows = ext;
    S->max_rows = maxr;
    S->max_bytes = maxb;
    S->work = work;
    return 0;
}

/* Partition p's packed bytes: its list, local row pointer, local columns and values. */
static int fill(const hk_bcsr *K, const hk_mpk_stream *S, int64_t p, int32_t *mark, int32_t **buf,
                int64_t *cap)
{
    const int k = S->k, b2 = K->bs * K->bs;
    int64_t ls[HK_MPK_MAXK + 2];
    HK_CALL(hk_mpk_ghost_rows(K->rowptr, K->colind, K->nbrows, S->block, k, p, mark, buf, cap, ls));
    hk_mpk_part v;
    hk_mpk_stream_part(S, p, S->pack + S->off[p], &v);
    /* mark[g] = the local place of g while this partition is filled (a partition number
     * otherwise, so -(place + 2) keeps them apart) */
    for (int64_t e = 0; e < v.nrows; e++) {
        v.rows[e] = (*buf)[e];
        mark[(*buf)[e]] = -(int32_t)(e + 2);
    }
    int64_t q = 0;
    for (int64_t e = 0; e < v.ninner; e++) {
        const int32_t g = v.rows[e];
        v.rowptr[e] = (int32_t)q;
        for (int64_t t = K->rowptr[g]; t < K->rowptr[g + 1]; t++, q++) {
            v.colind[q] = -mark[K->colind[t]] - 2;
            memcpy(v.val + (size_t)q * b2, K->val + (size_t)t * b2, (size_t)b2 * sizeof(double));
        }
    }
    v.rowptr[v.ninner] = (int32_t)q;
    for (int64_t e = 0; e < v.nrows; e++)
        mark[v.rows[e]] = -1;
    return 0;
}

void hk_mpk_stream_free(hk_mpk_stream *S)
{
    if (!S) return;
    if (S->pack && S->dealloc) S->dealloc(S->pack);
    free(S->lvl);
    free(S->nnzb);
    free(S->off);
    memset(S, 0, sizeof *S);
}

int hk_mpk_stream_build(const hk_bcsr *K, int64_t block, size_t budget, int k, double max_work,
                        int (*alloc)(void **p, size_t bytes), void (*dealloc)(void *p),
                        hk_mpk_stream *S)
{
    memset(S, 0, sizeof *S);
    HK_CHECK(K, HK_ERR_ARG, "matrix powers (streamed): no matrix");
    HK_CALL(hk_fmt_check_bcsr(K));
    HK_CHECK(K->nbrows == K->nbcols, HK_ERR_ARG,
             "matrix powers (streamed): the matrix has %lld block rows and %lld block columns; "
             "it must be square",
             (long long)K->nbrows, (long long)K->nbcols);
    HK_CHECK(k >= 1 && k <= HK_MPK_MAXK, HK_ERR_OPTION,
             "matrix powers (streamed): %d levels per pass; use 1..%d (option mpk.k)", k,
             HK_MPK_MAXK);
    HK_CHECK(block >= 0, HK_ERR_OPTION,
             "matrix powers (streamed): a partition of %lld block rows; use at least 1, or 0 to "
             "fit the device budget (option mpk.block)",
             (long long)block);
    if (budget == 0) budget = (size_t)HK_MPK_STREAM_MB << 20;
    const int64_t nb = K->nbrows;
    const int nt = omp_get_max_threads();
    int ierr = 0;
    int32_t *marks = NULL;
    S->bs = K->bs;
    S->k = k;
    S->nb = nb;
    S->dealloc = dealloc;
    HK_TRY(hk_malloc((size_t)nt * (size_t)(nb > 0 ? nb : 1) * sizeof *marks, &marks));
    /* the partition size: as given, else shrunk from the whole matrix until it fits */
    int64_t b = block > 0 ? (block < nb ? block : nb) : nb;
    if (b < 1) b = 1;
    for (;;) {
        const int64_t np = nb > 0 ? (nb + b - 1) / b : 0;
        free(S->lvl);
        free(S->nnzb);
        S->lvl = NULL;
        S->nnzb = NULL;
        HK_TRY(hk_calloc((size_t)np * (k + 2) + 1, sizeof *S->lvl, &S->lvl));
        HK_TRY(hk_calloc((size_t)np + 1, sizeof *S->nnzb, &S->nnzb));
        S->block = b;
        S->nparts = np;
        HK_TRY(cut(K, b, k, np, marks, S));
        if (max_work > 0 && (double)S->work > max_work * (double)k * (double)nb) {
            free(marks);
            return 0; /* refused: nothing packed */
        }
        const size_t need = hk_mpk_stream_device_bytes(S);
        if (block > 0 || need <= budget) break;
        HK_TRY_CHECK(b > 1, HK_ERR_OPTION,
                     "matrix powers (streamed): one block row with its ghost zone of %d levels "
                     "takes %zu bytes of device memory, over the budget of %zu; give a larger "
                     "device budget or fewer levels (mpk.k)",
                     k, need, budget);
        /* the partition's bytes shrink about as its rows do (ghost zones more slowly) */
        int64_t nbk = (int64_t)((double)b * (double)budget / (double)need * 0.9);
        if (nbk >= b) nbk = b - 1;
        if (nbk < 1) nbk = 1;
        b = nbk;
    }
    HK_TRY(hk_malloc(((size_t)S->nparts + 1) * sizeof *S->off, &S->off));
    S->off[0] = 0;
    for (int64_t p = 0; p < S->nparts; p++) {
        const int64_t *ls = S->lvl + (size_t)p * (k + 2);
        S->off[p + 1] = S->off[p] + hk_mpk_stream_part_bytes(S->bs, ls[k + 1], ls[k], S->nnzb[p]);
    }
    HK_TRY(alloc((void **)&S->pack, S->off[S->nparts] > 0 ? S->off[S->nparts] : ALIGN));
    int failed = 0;
#pragma omp parallel reduction(| : failed)
    {
        int32_t *mark = hk_mpk_marks(marks, nb, omp_get_thread_num());
        int32_t *buf = NULL;
        int64_t cap = 0;
#pragma omp for schedule(dynamic, 16)
        for (int64_t p = 0; p < S->nparts; p++)
            if (!failed && fill(K, S, p, mark, &buf, &cap)) failed = 1;
        free(buf);
    }
    HK_TRY_CHECK(!failed, HK_ERR_MEMORY,
                 "matrix powers (streamed): out of host memory for a ghost zone; use a smaller "
                 "mpk.block or mpk.k");
    free(marks);
    return 0;
fail:
    free(marks);
    hk_mpk_stream_free(S);
    return ierr;
}

void hk_mpk_stream_info(const hk_mpk_stream *S, hk_mpk_info *info)
{
    memset(info, 0, sizeof *info);
    info->schedule = HK_MPK_STREAM;
    info->block = S->block;
    info->k = S->k;
    info->nparts = S->nparts;
    info->ext_rows = S->ext_rows;
    info->max_ext = S->max_rows;
    info->work = S->work;
    info->host_bytes = S->off ? S->off[S->nparts] : 0;
    info->dev_bytes = hk_mpk_stream_device_bytes(S);
}
