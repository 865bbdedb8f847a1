/* CPU backend: the gather of the distributed operator's halo (vec_gather, hk_impl.h): the
 * owned entries a neighbour needs into the send buffer, the boundary rows' owned columns into
 * the extended vector; the transfer operators' local patterns; and the layout's passes over a
 * process's rows (dist_scan, dist_split) and the distributed Galerkin merge's sums
 * (coo_to_csr), the references of the devices' ones. */
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "host_copy.h"
#include "cpu_impl.h"

int hk_cpu_vec_gather(hk_vec *y, const hk_vec *x, const int32_t *idx, int64_t n, int bs)
{
    const int narrow = x->prec == HK_FP64 && y->prec == HK_FP32;
    HK_CHECK((x->prec == y->prec || narrow) && y->n >= n * bs && bs >= 1, HK_ERR_ARG,
             "vec_gather: %lld blocks of %d into a vector of %lld entries (precisions %s)",
             (long long)n, bs, (long long)y->n, x->prec == y->prec ? "equal" : "fp32 into fp64");
    if (narrow) { /* each entry rounded as vec_convert rounds it */
        const double *xs = x->data;
        float *ys = y->data;
#pragma omp parallel for schedule(static) if (n * bs > 50000)
        for (int64_t i = 0; i < n; i++)
            for (int r = 0; r < bs; r++)
                ys[i * bs + r] = (float)xs[(int64_t)idx[i] * bs + r];
    } else if (x->prec == HK_FP64) {
        const double *xs = x->data;
        double *ys = y->data;
#pragma omp parallel for schedule(static) if (n * bs > 50000)
        for (int64_t i = 0; i < n; i++)
            for (int r = 0; r < bs; r++)
                ys[i * bs + r] = xs[(int64_t)idx[i] * bs + r];
    } else {
        const float *xs = x->data;
        float *ys = y->data;
#pragma omp parallel for schedule(static) if (n * bs > 50000)
        for (int64_t i = 0; i < n; i++)
            for (int r = 0; r < bs; r++)
                ys[i * bs + r] = xs[(int64_t)idx[i] * bs + r];
    }
    return 0;
}

/* dist_read_columns (hk_impl.h): the columns marked (each mark written only where not yet: a
 * column many entries read is read, not written, on the other threads), then ranked in one
 * pass. */
int hk_cpu_dist_read_columns(const int32_t *col, int64_t n, int64_t ncols, int32_t *rank,
                             int32_t *list, int64_t *nread)
{
    HK_CHECK(ncols <= INT32_MAX, HK_ERR_UNSUPPORTED,
             "dist_read_columns: %lld columns is more than 32-bit indices hold", (long long)ncols);
#pragma omp parallel for schedule(static) if (ncols > 50000)
    for (int64_t j = 0; j < ncols; j++)
        rank[j] = -1;
#pragma omp parallel for schedule(static) if (n > 50000)
    for (int64_t p = 0; p < n; p++) {
        int32_t was;
#pragma omp atomic read
        was = rank[col[p]];
        if (was != 0) {
#pragma omp atomic write
            rank[col[p]] = 0;
        }
    }
    int32_t k = 0;
    for (int64_t j = 0; j < ncols; j++)
        if (rank[j] == 0) {
            if (list) list[k] = (int32_t)j;
            rank[j] = k++;
        }
    *nread = k;
    return 0;
}

/* dist_local_pattern (hk_impl.h): the rows' kinds, their new positions in row order, then each
 * row written where it goes and sorted there (insertion: rows are short and mostly sorted). */
int hk_cpu_dist_local_pattern(int64_t nrows, const int64_t *rowptr, const int32_t *col,
                              const int32_t *map, int64_t nbc, int split, int64_t *rp,
                              int32_t *lcol, int32_t *src, int32_t *ypos, int64_t *nint)
{
    const int64_t base = rowptr[0];
    int64_t ni = 0;
    *nint = 0;
    if (split) {
#pragma omp parallel for schedule(static) reduction(+ : ni) if (nrows > 5000)
        for (int64_t i = 0; i < nrows; i++) {
            int bnd = 0;
            for (int64_t p = rowptr[i] - base; p < rowptr[i + 1] - base && !bnd; p++)
                bnd = map[col[p]] >= nbc;
            ypos[i] = bnd; /* the kind, until the positions */
            ni += !bnd;
        }
        split = ni > 0 && ni < nrows;
    }
    if (split) {
        int64_t ki = 0, kb = ni;
        for (int64_t i = 0; i < nrows; i++)
            ypos[i] = (int32_t)(ypos[i] ? kb++ : ki++);
        rp[0] = 0;
        for (int64_t i = 0; i < nrows; i++)
            rp[ypos[i] + 1] = rowptr[i + 1] - rowptr[i];
        for (int64_t i = 0; i < nrows; i++)
            rp[i + 1] += rp[i];
        *nint = ni;
    } else
        for (int64_t i = 0; i <= nrows; i++)
            rp[i] = rowptr[i] - base;
#pragma omp parallel for schedule(dynamic, 256) if (nrows > 5000)
    for (int64_t i = 0; i < nrows; i++) {
        const int64_t p0 = rowptr[i] - base, len = rowptr[i + 1] - rowptr[i];
        const int64_t q0 = rp[split ? ypos[i] : i];
        for (int64_t k = 0; k < len; k++) {
            const int32_t c = map[col[p0 + k]], s = (int32_t)(p0 + k);
            int64_t q = k;
            for (; q > 0 && lcol[q0 + q - 1] > c; q--) {
                lcol[q0 + q] = lcol[q0 + q - 1];
                src[q0 + q] = src[q0 + q - 1];
            }
            lcol[q0 + q] = c;
            src[q0 + q] = s;
        }
    }
    return 0;
}

/* ---- the layout: a process's rows scanned and split (dist_scan, dist_split) ---------- */

/* One row's columns col[0..len) sorted, each one's gather index src moved with it: by column,
 * equal columns in their order (key, c, s: the caller's scratch of len entries each). */
static void sort_row_idx(int32_t *col, int32_t *src, int64_t len, int64_t *key, int32_t *c,
                         int32_t *s)
{
    for (int64_t k = 1; k < len; k++)
        if (col[k - 1] >= col[k]) goto unsorted;
    return; /* already in order: left alone */
unsorted:
    for (int64_t k = 0; k < len; k++) /* column in the high bits, position in the low */
        key[k] = (int64_t)col[k] << 24 | k;
    hk_isort_i64(key, len);
    for (int64_t k = 0; k < len; k++) {
        c[k] = col[key[k] & 0xffffff];
        s[k] = src[key[k] & 0xffffff];
    }
    memcpy(col, c, (size_t)len * sizeof *col);
    memcpy(src, s, (size_t)len * sizeof *src);
}

/* Koo's rows counted, filled and sorted apart on the threads, then the owned columns the
 * boundary rows read marked and numbered, then Kbnd's rows (the same bytes on any thread
 * count: every row is one thread's). */
int hk_cpu_dist_split(const hk_dist_rows *R, hk_bmat *Koo, int32_t **src_oo, hk_bmat *Kbnd,
                      int32_t **src_bnd, int32_t **bcol, int64_t *nbc)
{
    int ierr = 0;
    const int64_t nown = R->nown, nint = R->nint, nbnd = nown - nint, row0 = R->row0;
    const int64_t *rowptr = R->rowptr;
    const int32_t *colind = R->colind, *inv = R->inv, *perm = R->perm;
    int64_t *cnt = NULL, *key = NULL;
    int32_t *pos = NULL, *tmp = NULL;
    int64_t nnz_b = 0, maxlen = 0;
    memset(Koo, 0, sizeof *Koo);
    memset(Kbnd, 0, sizeof *Kbnd);
    *src_oo = *src_bnd = *bcol = NULL;
    *nbc = 0;
    HK_TRY(hk_calloc((size_t)nown + 1, sizeof *cnt, &cnt));
#pragma omp parallel for schedule(static) reduction(+ : nnz_b) reduction(max : maxlen)
    for (int64_t ni = 0; ni < nown; ni++) {
        const int64_t i = perm[ni], len = rowptr[i + 1] - rowptr[i];
        int64_t k = len;
        if (len > maxlen) maxlen = len;
        if (ni >= nint) {
            nnz_b += len;
            for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++)
                k -= colind[p] < row0 || colind[p] >= row0 + nown;
        }
        cnt[ni + 1] = k;
    }
    for (int64_t ni = 0; ni < nown; ni++)
        cnt[ni + 1] += cnt[ni];
    const int64_t nnz_oo = cnt[nown];
    HK_TRY(hk_bmat_alloc(&hk_backend_cpu, R->bs, R->bs, nown, nown, nnz_oo, Koo));
    memcpy(Koo->rowptr, cnt, (size_t)(nown + 1) * sizeof *cnt);
    HK_TRY(hk_backend_cpu.alloc((void **)src_oo, (size_t)(nnz_oo + 1) * sizeof **src_oo));
    const int nt = omp_get_max_threads();
    HK_TRY(hk_malloc((size_t)(maxlen + 1) * nt * sizeof *key, &key));
    HK_TRY(hk_malloc((size_t)(maxlen + 1) * nt * 2 * sizeof *tmp, &tmp));
    /* each row sorted as it is filled, while it is in cache: only the rows that read a
     * boundary column before an interior one need it */
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        int64_t *kt = key + (maxlen + 1) * t;
        int32_t *tt = tmp + (maxlen + 1) * 2 * t;
#pragma omp for schedule(static)
        for (int64_t ni = 0; ni < nown; ni++) {
            const int64_t i = perm[ni], q0 = Koo->rowptr[ni];
            int64_t q = q0;
            for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++)
                if (colind[p] >= row0 && colind[p] < row0 + nown) {
                    Koo->colind[q] = inv[colind[p] - row0];
                    (*src_oo)[q++] = (int32_t)p;
                }
            sort_row_idx(Koo->colind + q0, *src_oo + q0, q - q0, kt, tt, tt + maxlen + 1);
        }
    }
    /* the owned columns the boundary rows read, ascending: the gathered part of x */
    HK_TRY(hk_malloc((size_t)(nown + 1) * sizeof *pos, &pos));
    for (int64_t j = 0; j < nown; j++)
        pos[j] = -1;
    for (int64_t ni = nint; ni < nown; ni++)
        for (int64_t p = Koo->rowptr[ni]; p < Koo->rowptr[ni + 1]; p++)
            pos[Koo->colind[p]] = 0;
    for (int64_t j = 0; j < nown; j++)
        if (pos[j] == 0) pos[j] = (int32_t)(*nbc)++;
    HK_TRY(hk_backend_cpu.alloc((void **)bcol, (size_t)(*nbc + 1) * sizeof **bcol));
    for (int64_t j = 0; j < nown; j++)
        if (pos[j] >= 0) (*bcol)[pos[j]] = (int32_t)j;
    HK_TRY(hk_bmat_alloc(&hk_backend_cpu, R->bs, R->bs, nbnd, *nbc + R->nghost, nnz_b, Kbnd));
    HK_TRY(hk_backend_cpu.alloc((void **)src_bnd, (size_t)(nnz_b + 1) * sizeof **src_bnd));
    Kbnd->rowptr[0] = 0;
    for (int64_t nb = 0; nb < nbnd; nb++) {
        const int64_t i = perm[nint + nb];
        Kbnd->rowptr[nb + 1] = Kbnd->rowptr[nb] + rowptr[i + 1] - rowptr[i];
    }
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        int64_t *kt = key + (maxlen + 1) * t;
        int32_t *tt = tmp + (maxlen + 1) * 2 * t;
#pragma omp for schedule(static)
        for (int64_t nb = 0; nb < nbnd; nb++) {
            const int64_t i = perm[nint + nb], q = Kbnd->rowptr[nb];
            for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++) {
                const int64_t g = colind[p];
                Kbnd->colind[q + p - rowptr[i]] =
                    g >= row0 && g < row0 + nown
                        ? pos[inv[g - row0]]
                        : (int32_t)(*nbc + hk_lower_bound_i64(R->ghost, 0, R->nghost, g));
                (*src_bnd)[q + p - rowptr[i]] = (int32_t)p;
            }
            sort_row_idx(Kbnd->colind + q, *src_bnd + q, rowptr[i + 1] - rowptr[i], kt, tt,
                         tt + maxlen + 1);
        }
    }
fail:
    free(cnt);
    free(key);
    free(tmp);
    free(pos);
    if (ierr) {
        hk_bmat_free(Koo);
        hk_bmat_free(Kbnd);
        free(*src_oo);
        free(*src_bnd);
        free(*bcol);
        *src_oo = *src_bnd = *bcol = NULL;
    }
    return ierr;
}

/* Per thread of a static split of [0, n) into nt chunks: the chunk's first index. */
static int64_t chunk_start(int64_t n, int nt, int t)
{
    return n * t / nt;
}

/* On the threads: each row's kind and each ghost column marked in a byte per global column;
 * then the ghosts listed from the marks by chunks, each chunk's after the earlier chunks' (the
 * same list on any thread count). Linear: no sort. */
int hk_cpu_dist_scan(const hk_dist_rows *R, int32_t *kind, int64_t **ghost, int64_t *nghost,
                     int64_t *bad)
{
    const int64_t nown = R->nown, nglobal = R->nglobal, row0 = R->row0;
    const int64_t *rowptr = R->rowptr;
    const int32_t *colind = R->colind;
    const int nt = omp_get_max_threads();
    int ierr = 0;
    int64_t *off = NULL, first = nown;
    unsigned char *mark = NULL;
    *ghost = NULL;
    *nghost = 0;
    *bad = -1;
    HK_TRY(hk_calloc((size_t)nt + 1, sizeof *off, &off));
    HK_TRY(hk_calloc((size_t)nglobal + 1, sizeof *mark, &mark));
#pragma omp parallel for schedule(static) reduction(min : first)
    for (int64_t i = 0; i < nown; i++) {
        int bnd = 0, ok = 1;
        for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++) {
            const int32_t g = colind[p];
            if (g < 0 || g >= nglobal) {
                ok = 0;
                break;
            }
            if (g < row0 || g >= row0 + nown) {
                bnd = 1;
                unsigned char was; /* written only where not yet: read by the other threads */
#pragma omp atomic read
                was = mark[g];
                if (!was) {
#pragma omp atomic write
                    mark[g] = 1;
                }
            }
        }
        kind[i] = bnd ? -1 : -2;
        if (!ok && i < first) first = i;
    }
    if (first < nown) {
        *bad = first;
        goto fail;
    }
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        int64_t k = 0;
        for (int64_t g = chunk_start(nglobal, nt, t); g < chunk_start(nglobal, nt, t + 1); g++)
            k += mark[g];
        off[t + 1] = k;
    }
    for (int t = 0; t < nt; t++)
        off[t + 1] += off[t];
    HK_TRY(hk_backend_cpu.alloc((void **)ghost, (size_t)(off[nt] + 1) * sizeof **ghost));
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        int64_t k = off[t];
        for (int64_t g = chunk_start(nglobal, nt, t); g < chunk_start(nglobal, nt, t + 1); g++)
            if (mark[g]) (*ghost)[k++] = g;
    }
    *nghost = off[nt];
fail:
    free(off);
    free(mark);
    return ierr;
}

/* The part's local columns as global ones, on the threads (each entry written once). */
int hk_cpu_dist_global_columns(const int32_t *col, int64_t n, int64_t row0, int64_t nown,
                               const int64_t *ghost_gid, int64_t nghost, int32_t *out)
{
#pragma omp parallel for schedule(static) if (n > 100000)
    for (int64_t k = 0; k < n; k++) {
        const int64_t c = col[k];
        out[k] = (int32_t)(c >= 0 && c < nown               ? row0 + c
                           : c >= nown && c < nown + nghost ? ghost_gid[c - nown]
                                                            : -1);
    }
    return 0;
}

/* ---- coo_to_csr (hk_impl.h): COO to CSR, duplicates summed in input order ---------------- */

/* An input entry in its row: its key and where its block is (A's block src < na, else entry
 * src - na). */
typedef struct coo_slot {
    int64_t key, src;
} coo_slot;

/* a[0..n) sorted by key, entries of equal keys in their order (tmp: n slots of scratch): a
 * natural merge sort, runs of non-descending keys merged pairwise, the earlier run's entry
 * first among equal keys. A row's entries are a few runs (A's rows, then each sender's). */
static void sort_runs(coo_slot *a, coo_slot *tmp, int64_t n)
{
    for (;;) {
        int64_t k = 0, merges = 0;
        while (k < n) {
            int64_t m = k + 1, e;
            while (m < n && a[m].key >= a[m - 1].key)
                m++;
            if (m == n) { /* the last run, alone */
                memcpy(tmp + k, a + k, (size_t)(n - k) * sizeof *a);
                break;
            }
            for (e = m + 1; e < n && a[e].key >= a[e - 1].key; e++)
                ;
            int64_t i = k, j = m, o = k;
            while (i < m && j < e)
                tmp[o++] = a[j].key < a[i].key ? a[j++] : a[i++];
            while (i < m)
                tmp[o++] = a[i++];
            while (j < e)
                tmp[o++] = a[j++];
            merges++;
            k = e;
        }
        if (!merges) return;
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

/* The first input entry (A's blocks, then the others) whose row or key is out of range, or -1. */
static int64_t coo_first_bad(const hk_bmat *A, const int32_t *rmap, const int64_t *cmap, int64_t n,
                             const int32_t *erow, const int64_t *ekey, int64_t nrows, int64_t nkeys)
{
    for (int64_t i = 0; i < A->nbrows; i++) {
        if (rmap[i] < 0) continue;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const int64_t c = cmap[A->colind[p]];
            if (rmap[i] >= nrows || c < 0 || c >= nkeys) return p;
        }
    }
    for (int64_t k = 0; k < n; k++)
        if (erow[k] < 0 || erow[k] >= nrows || ekey[k] < 0 || ekey[k] >= nkeys) return A->nnzb + k;
    return -1;
}

/* Each row's entries placed by counts (A's rows in order, then the entries: input order),
 * then sorted by key row by row (rows apart on the threads), their distinct keys counted and
 * the blocks summed: the same result on any thread count. */
int hk_cpu_coo_to_csr(const hk_bmat *A, const int32_t *rmap, const int64_t *cmap, int64_t n,
                      const int32_t *erow, const int64_t *ekey, const double *eval, int64_t nrows,
                      int64_t nkeys, int64_t **rowptr_out, int64_t **key_out, double **val_out)
{
    const hk_backend_ops *be = &hk_backend_cpu;
    const int bsz = A->br * A->bc;
    const int64_t na = A->nnzb;
    int ierr = 0;
    int64_t *start = NULL, *fill = NULL, *aat = NULL, *rowptr = NULL, *key = NULL;
    coo_slot *s = NULL, *tmp = NULL;
    double *val = NULL;
    *rowptr_out = *key_out = NULL;
    *val_out = NULL;
    const int64_t bad = coo_first_bad(A, rmap, cmap, n, erow, ekey, nrows, nkeys);
    HK_CHECK(bad < 0, HK_ERR_ARG,
             "coo_to_csr: input entry %lld has its row or key out of range (rows 0..%lld, keys "
             "0..%lld)",
             (long long)bad, (long long)nrows - 1, (long long)nkeys - 1);
    HK_TRY(hk_calloc((size_t)nrows + 1, sizeof *start, &start));
    HK_TRY(hk_calloc((size_t)nrows + 1, sizeof *fill, &fill));
    HK_TRY(hk_malloc((size_t)(A->nbrows + 1) * sizeof *aat, &aat));
    for (int64_t i = 0; i < A->nbrows; i++) /* (an empty row's rmap is not looked at) */
        if (rmap[i] >= 0 && A->rowptr[i + 1] > A->rowptr[i])
            start[rmap[i] + 1] += A->rowptr[i + 1] - A->rowptr[i];
    for (int64_t k = 0; k < n; k++)
        start[erow[k] + 1]++;
    for (int64_t r = 0; r < nrows; r++)
        start[r + 1] += start[r];
    const int64_t tot = start[nrows];
    for (int64_t i = 0; i < A->nbrows; i++) /* A's rows' places, in order within a row */
        if (rmap[i] >= 0 && A->rowptr[i + 1] > A->rowptr[i]) {
            aat[i] = start[rmap[i]] + fill[rmap[i]];
            fill[rmap[i]] += A->rowptr[i + 1] - A->rowptr[i];
        }
    HK_TRY(hk_malloc((size_t)(tot + 1) * sizeof *s, &s));
    HK_TRY(hk_malloc((size_t)(tot + 1) * sizeof *tmp, &tmp));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < A->nbrows; i++)
        if (rmap[i] >= 0)
            for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
                coo_slot *e = s + aat[i] + (p - A->rowptr[i]);
                e->key = cmap[A->colind[p]];
                e->src = p;
            }
    for (int64_t k = 0; k < n; k++) {
        coo_slot *e = s + start[erow[k]] + fill[erow[k]]++;
        e->key = ekey[k];
        e->src = na + k;
    }
    HK_TRY(be->alloc((void **)&rowptr, (size_t)(nrows + 1) * sizeof *rowptr));
    rowptr[0] = 0;
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t r = 0; r < nrows; r++) {
        coo_slot *a = s + start[r];
        const int64_t m = start[r + 1] - start[r];
        int sorted = 1;
        for (int64_t k = 1; k < m && sorted; k++)
            sorted = a[k].key > a[k - 1].key;
        if (!sorted) sort_runs(a, tmp + start[r], m);
        int64_t u = 0;
        for (int64_t k = 0; k < m; k++)
            u += k == 0 || a[k].key != a[k - 1].key;
        rowptr[r + 1] = u;
    }
    for (int64_t r = 0; r < nrows; r++)
        rowptr[r + 1] += rowptr[r];
    const int64_t nnz = rowptr[nrows];
    HK_TRY(be->alloc((void **)&key, (size_t)(nnz + 1) * sizeof *key));
    HK_TRY(be->alloc((void **)&val, (size_t)(nnz * bsz + 1) * sizeof *val));
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t r = 0; r < nrows; r++) {
        const coo_slot *a = s + start[r];
        int64_t q = rowptr[r] - 1;
        for (int64_t k = 0; k < start[r + 1] - start[r]; k++) {
            const int64_t src = a[k].src;
            const double *from = src < na ? A->val + src * bsz : eval + (src - na) * bsz;
            if (k == 0 || a[k].key != a[k - 1].key) { /* a new block: its first entry copied */
                key[++q] = a[k].key;
                memcpy(val + q * bsz, from, (size_t)bsz * sizeof *val);
            } else /* the others added, one at a time */
                for (int e = 0; e < bsz; e++)
                    val[q * bsz + e] += from[e];
        }
    }
    *rowptr_out = rowptr;
    *key_out = key;
    *val_out = val;
    rowptr = key = NULL;
    val = NULL;
fail:
    free(start);
    free(fill);
    free(aat);
    free(s);
    free(tmp);
    if (rowptr) be->dealloc(rowptr);
    if (key) be->dealloc(key);
    if (val) be->dealloc(val);
    return ierr;
}

/* The ghost rows of the distributed AMG set-up (dist_row_lengths ... dist_extend_rows,
 * hk_impl.h): the reference the device's versions are compared with byte for byte. */
int hk_cpu_dist_row_lengths(const hk_bmat *A, const int32_t *rows, int64_t n, int64_t *len)
{
#pragma omp parallel for schedule(static) if (n > 50000)
    for (int64_t j = 0; j < n; j++)
        len[j] = A->rowptr[rows[j] + 1] - A->rowptr[rows[j]];
    return 0;
}

int hk_cpu_dist_pack_rows(const hk_bmat *A, const int64_t *colmap, const int32_t *rows, int64_t n,
                          const int64_t *at, double *out)
{
    const int bsz = A->br * A->bc;
#pragma omp parallel for schedule(dynamic, 64) if (n > 1000)
    for (int64_t j = 0; j < n; j++) {
        const int64_t i = rows[j];
        double *r = out + at[j];
        r[0] = (double)(A->rowptr[i + 1] - A->rowptr[i]);
        for (int64_t p = A->rowptr[i], k = 0; p < A->rowptr[i + 1]; p++, k++) {
            r[1 + k * (1 + bsz)] = (double)colmap[A->colind[p]];
            memcpy(r + 2 + k * (1 + bsz), A->val + p * bsz, (size_t)bsz * sizeof(double));
        }
    }
    return 0;
}

int hk_cpu_dist_mark_columns(const hk_bmat *A, int32_t *mark)
{
    const int64_t nnz = A->nnzb;
    memset(mark, 0, (size_t)A->nbcols * sizeof *mark);
    /* every thread writes the same value, and only where it is not there yet */
#pragma omp parallel for schedule(static) if (nnz > 50000)
    for (int64_t p = 0; p < nnz; p++) {
        int32_t was;
#pragma omp atomic read
        was = mark[A->colind[p]];
        if (!was) {
#pragma omp atomic write
            mark[A->colind[p]] = 1;
        }
    }
    return 0;
}

int hk_cpu_dist_extend_rows(const hk_bmat *A, const int32_t *cpos, int64_t ng, const double *rec,
                            const int64_t *rat, const int64_t *gat, const int64_t *cols,
                            int64_t ncols, hk_bmat *X)
{
    const int bsz = A->br * A->bc;
    const int64_t nown = A->nbrows, nm = A->nnzb;
    memcpy(X->rowptr, A->rowptr, (size_t)(nown + 1) * sizeof *X->rowptr);
    for (int64_t k = 0; k < ng; k++) {
        X->rowptr[nown + k + 1] = nm + gat[k + 1];
    }
    /* the values too on the threads: they are most of the bytes */
#pragma omp parallel for schedule(static) if (nm > 20000)
    for (int64_t p = 0; p < nm; p++) {
        X->colind[p] = cpos[A->colind[p]];
        memcpy(X->val + p * bsz, A->val + p * bsz, (size_t)bsz * sizeof *X->val);
    }
#pragma omp parallel for schedule(dynamic, 64) if (ng > 1000)
    for (int64_t k = 0; k < ng; k++) {
        const double *r = rec + rat[k];
        for (int64_t j = 0, q = nm + gat[k]; j < gat[k + 1] - gat[k]; j++, q++) {
            const double *e = r + 1 + j * (1 + bsz);
            X->colind[q] = (int32_t)hk_lower_bound_i64(cols, 0, ncols, (int64_t)e[0]);
            memcpy(X->val + q * bsz, e + 1, (size_t)bsz * sizeof(double));
        }
    }
    return 0;
}

/* copy_to_pageable and copy_from_pageable on the host: the distributed AMG set-up's staging
 * copies, by threads (the reference of a device's copies through its pinned buffers). */
int hk_cpu_copy_pageable(void *dst, const void *src, size_t bytes)
{
    if (bytes) hk_host_copy_parallel(dst, src, bytes);
    return 0;
}
