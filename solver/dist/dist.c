/* hk_dist: one process's rows of a distributed operator (docs/parallel.md).
 *
 * The caller owns the global block rows [row0, row0 + nown) with global column indices. Set-up
 * lists the ghosts (columns owned elsewhere, sorted), makes the halo plan, and renumbers the
 * owned rows interior first (rows without a ghost column), then boundary, all from the rows'
 * pattern (the passes over every block are the backend's dist_scan and dist_split, on a device
 * there); the values are gathered into that order by index where they lie (the host, or the
 * backend's memory when the caller's values are there). The operator is two matrices of the
 * backend's own formats: A_int (interior rows x owned columns) and A_bnd (boundary rows x [the
 * owned columns they read, then the ghosts]); its SpMV posts the exchange, multiplies the
 * interior rows, and the boundary rows once the ghosts are in. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist_impl.h"
#include "text.h"

#include <omp.h>

static void sort_rows_range(int64_t nrows, const int64_t *rowptr, int32_t *colind, char *rec,
                            size_t rb, int64_t *key, char *tmp, int32_t *col);
static int sort_records(int64_t nrows, const int64_t *rowptr, int32_t *colind, void *rec,
                        size_t rb);

/* ---- set-up ------------------------------------------------------------------------------ */

int hk_dist_sort_blocks(int64_t nrows, const int64_t *rowptr, int32_t *colind, double *vals, int bb)
{
    return sort_records(nrows, rowptr, colind, vals, (size_t)bb * sizeof *vals);
}

/* The columns of every row sorted, each column's record (rb bytes: a block's values, or a
 * gather index) moved with it. Rows apart on the threads (each its own scratch), rows already
 * sorted left alone: the bytes do not depend on the thread count. */
static int sort_records(int64_t nrows, const int64_t *rowptr, int32_t *colind, void *rec, size_t rb)
{
    int64_t maxlen = 0;
    for (int64_t i = 0; i < nrows; i++)
        if (rowptr[i + 1] - rowptr[i] > maxlen) maxlen = rowptr[i + 1] - rowptr[i];
    const int nt = omp_get_max_threads();
    int64_t *key = NULL;
    char *tmp = NULL;
    int32_t *col = NULL;
    int ierr = 0;
    HK_TRY(hk_malloc((size_t)(maxlen + 1) * nt * sizeof *key, &key));
    HK_TRY(hk_malloc((size_t)(maxlen + 1) * nt * rb, &tmp));
    HK_TRY(hk_malloc((size_t)(maxlen + 1) * nt * sizeof *col, &col));
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        sort_rows_range(nrows, rowptr, colind, rec, rb, key + (maxlen + 1) * t,
                        tmp + (size_t)(maxlen + 1) * rb * t, col + (maxlen + 1) * t);
    }
fail:
    free(key);
    free(tmp);
    free(col);
    return ierr;
}

/* This thread's share of sort_records (inside its parallel region). */
static void sort_rows_range(int64_t nrows, const int64_t *rowptr, int32_t *colind, char *rec,
                            size_t rb, int64_t *key, char *tmp, int32_t *col)
{
#pragma omp for schedule(dynamic, 256)
    for (int64_t i = 0; i < nrows; i++) {
        const int64_t p0 = rowptr[i], len = rowptr[i + 1] - p0;
        int sorted = 1;
        for (int64_t k = 1; k < len && sorted; k++)
            sorted = colind[p0 + k - 1] < colind[p0 + k];
        if (sorted) continue;
        for (int64_t k = 0; k < len; k++) /* column in the high bits, position in the low */
            key[k] = (int64_t)colind[p0 + k] << 24 | k;
        hk_isort_i64(key, len);
        for (int64_t k = 0; k < len; k++) {
            const int64_t from = p0 + (key[k] & 0xffffff);
            col[k] = colind[from];
            if (rb == sizeof(int32_t)) /* a gather index: a plain copy, not a call */
                ((int32_t *)tmp)[k] = ((const int32_t *)rec)[from];
            else
                memcpy(tmp + k * rb, rec + (size_t)from * rb, rb);
        }
        memcpy(colind + p0, col, (size_t)len * sizeof *col);
        memcpy(rec + (size_t)p0 * rb, tmp, (size_t)len * rb);
    }
}

/* The first non-finite value or out-of-range column of the caller's rows: one sentence with
 * the global row and column (every process agrees on the first failing process's). K->val
 * NULL: the columns only (the values are checked where they lie, check_values_dev). */
static int check_rows(const hk_bcsr *K, int64_t row0)
{
    const int bs = K->bs, bb = bs * bs, vals = K->val != NULL;
    /* the first failing row on the threads, then its sentence from the loop below */
    int64_t first = K->nbrows;
#pragma omp parallel for schedule(static) reduction(min : first)
    for (int64_t i = 0; i < K->nbrows; i++) {
        int ok = 1;
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1] && ok; p++) {
            ok = K->colind[p] >= 0 && K->colind[p] < K->nbcols;
            for (int e = 0; e < bb * vals && ok; e++)
                ok = isfinite(K->val[(size_t)p * bb + e]);
        }
        if (!ok && i < first) first = i;
    }
    for (int64_t i = first; i < K->nbrows; i++)
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++) {
            HK_CHECK(K->colind[p] >= 0 && K->colind[p] < K->nbcols, HK_ERR_ARG,
                     "distributed rows: block row %lld has column %d outside the %lld global "
                     "block columns",
                     (long long)(row0 + i), K->colind[p], (long long)K->nbcols);
            for (int e = 0; e < bb * vals; e++)
                HK_CHECK(isfinite(K->val[(size_t)p * bb + e]), HK_ERR_NUMERIC,
                         "matrix entry at row %lld, column %lld is %g; the solver needs finite "
                         "values - check the assembly or the input file",
                         (long long)((row0 + i) * bs + e / bs + 1),
                         (long long)((int64_t)K->colind[p] * bs + e % bs + 1),
                         K->val[(size_t)p * bb + e]);
        }
    return 0;
}

/* Per thread of a static split of [0, n) into nt chunks: the chunk's first index. */
static int64_t chunk_start(int64_t n, int nt, int t)
{
    return n * t / nt;
}

/* Copy an index array to the backend's memory (NULL when empty). */
static int upload_idx(const hk_backend_ops *be, const int32_t *h, int64_t n, int32_t **dev)
{
    *dev = NULL;
    if (n == 0) return 0;
    HK_CALL(be->alloc((void **)dev, (size_t)n * sizeof **dev));
    return be->copy_to(*dev, h, (size_t)n * sizeof **dev);
}

/* The layout's large copies of pageable host memory (the caller's pattern, the numbering, the
 * split's host part: tens of MB at a million rows a process) by the backend's copies for
 * pageable memory where it has them: on a device through its pinned buffers, every host thread
 * copying (and a fresh host array's pages taken on those threads), where the driver's own
 * copy of pageable memory runs on one thread. */
static int copy_to_backend(const hk_backend_ops *be, void *dev, const void *h, size_t bytes)
{
    return be->copy_to_pageable ? be->copy_to_pageable(dev, h, bytes) : be->copy_to(dev, h, bytes);
}

static int copy_to_host(const hk_backend_ops *be, void *h, const void *dev, size_t bytes)
{
    return be->copy_from_pageable ? be->copy_from_pageable(h, dev, bytes)
                                  : be->copy_from(h, dev, bytes);
}

/* A host array copied to the backend's memory (at least one entry: never NULL). */
static int upload_arr(const hk_backend_ops *be, const void *h, size_t bytes, void **dev)
{
    HK_CALL(be->alloc(dev, bytes ? bytes : 1));
    const int ierr = bytes ? copy_to_backend(be, *dev, h, bytes) : 0;
    if (ierr) be->dealloc(*dev), *dev = NULL;
    return ierr;
}

/* n entries of a backend array into a new host one (at least one entry). */
static int download_arr(const hk_backend_ops *be, const void *dev, size_t bytes, void **h)
{
    HK_CALL(hk_malloc(bytes ? bytes : 1, h));
    return bytes ? copy_to_host(be, *h, dev, bytes) : 0;
}

/* The caller's rows as the backend's dist_scan and dist_split read them (rows.R): on a
 * host-memory backend the host's own arrays; on a device their pattern uploaded once, then the
 * ghosts and the numbering (the arrays below, the uploads: NULL where none). */
typedef struct layout_rows {
    hk_dist_rows R;
    void *rowptr, *colind, *ghost, *inv, *perm;
    int pattern_dev; /* the caller's pattern is in the backend's memory already */
} layout_rows;

static void layout_rows_free(const hk_backend_ops *be, layout_rows *U)
{
    void *a[5] = {U->rowptr, U->colind, U->ghost, U->inv, U->perm};
    for (int k = 0; k < 5; k++)
        if (a[k]) be->dealloc(a[k]);
    memset(U, 0, sizeof *U);
}

/* The caller's row i on the host, for a sentence naming its bad entry: *p0 its first block,
 * *len its blocks, *col its columns (the caller frees them; a host pattern's own when the
 * pattern is on the host: *own 0). A pattern in the backend's memory: that row alone comes
 * down. */
static int pattern_row(const hk_backend_ops *L, const hk_bcsr *K, int pattern_dev, int64_t i,
                       int64_t *p0, int64_t *len, int32_t **col, int *own)
{
    *col = NULL, *own = 0;
    if (!pattern_dev) {
        *p0 = K->rowptr[i], *len = K->rowptr[i + 1] - *p0, *col = K->colind + *p0;
        return 0;
    }
    int64_t rp[2];
    HK_CALL(L->copy_from(rp, K->rowptr + i, sizeof rp));
    *p0 = rp[0], *len = rp[1] - rp[0];
    HK_CALL(hk_malloc((size_t)(*len + 1) * sizeof **col, col));
    *own = 1;
    return *len ? L->copy_from(*col, K->colind + *p0, (size_t)*len * sizeof **col) : 0;
}

/* The ghosts (sorted, unique; *ghost on the host) and each row's kind in inv (-1: a boundary
 * row, which reads a ghost; -2: an interior one) from one pass over the rows' columns: the
 * backend's dist_scan, on a device over the pattern uploaded here (kept for the split), the
 * kinds and the ghosts downloaded (a pattern already there, U->pattern_dev, is read where it
 * lies). A column outside the global columns stops it with check_rows' sentence (the same
 * first row). */
static int list_ghosts(hk_dist *d, const hk_bcsr *K, layout_rows *U, int32_t *inv, int64_t **ghost)
{
    const hk_backend_ops *L = d->local;
    HK_CHECK(L->dist_scan && L->dist_split, HK_ERR_UNSUPPORTED,
             "backend %s cannot run distributed (no dist_scan or dist_split op); use "
             "backend=cpu",
             L->name);
    const int64_t nown = d->nown;
    const hk_dist_rows R = {d->bs,     d->row0,   nown, 0,    d->nglobal, 0,
                            K->rowptr, K->colind, NULL, NULL, NULL};
    int64_t bad = -1;
    U->R = R;
    if (d->host_memory) {
        HK_CALL(L->dist_scan(&U->R, inv, ghost, &d->nghost, &bad));
    } else {
        void *kind = NULL, *gh = NULL;
        if (!U->pattern_dev) {
            HK_CALL(upload_arr(L, K->rowptr, (size_t)(nown + 1) * sizeof *K->rowptr, &U->rowptr));
            HK_CALL(
                upload_arr(L, K->colind, (size_t)K->rowptr[nown] * sizeof *K->colind, &U->colind));
            U->R.rowptr = U->rowptr, U->R.colind = U->colind;
        }
        HK_CALL(L->alloc(&kind, (size_t)(nown + 1) * sizeof *inv));
        int ierr = L->dist_scan(&U->R, kind, (int64_t **)&gh, &d->nghost, &bad);
        U->ghost = gh;
        U->R.ghost = gh;
        if (!ierr && bad < 0 && nown) ierr = copy_to_host(L, inv, kind, (size_t)nown * sizeof *inv);
        if (!ierr && bad < 0)
            ierr = download_arr(L, gh, (size_t)d->nghost * sizeof **ghost, (void **)ghost);
        L->dealloc(kind);
        HK_CALL(ierr);
    }
    if (bad >= 0) {
        int64_t p0 = 0, len = 0, rp[2];
        int32_t *col = NULL;
        int own = 0;
        int ierr = pattern_row(L, K, U->pattern_dev, bad, &p0, &len, &col, &own);
        rp[0] = 0, rp[1] = len;
        const hk_bcsr row = {K->bs, 1, K->nbcols, rp, col, NULL};
        if (!ierr) ierr = check_rows(&row, d->row0 + bad);
        if (own) free(col);
        HK_CALL(ierr);
        return hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                            "distributed rows: block row %lld has a column out of range that "
                            "the check does not find",
                            (long long)(d->row0 + bad));
    }
    U->R.nghost = d->nghost;
    return 0;
}

/* Koo and Kbnd of the caller's rows in the internal numbering, each row sorted, and their
 * gather indices (src_oo, src_bnd: the caller's block of each of their blocks, in the
 * backend's memory): the backend's dist_split over U (list_ghosts'), the numbering uploaded
 * to it first on a device. Their values are gathered by host_values or device_values. On a
 * host-memory backend the host's Koo and Kbnd are the split's own arrays (Koo_d, Kbnd_d are
 * views of them later); on a device what the host still reads comes down: Koo's row pointers,
 * Kbnd's pattern (the boundary rows) and bcol; Koo's columns stay there (d->Koo.colind NULL). */
static int split_rows(hk_dist *d, layout_rows *U, const int32_t *inv, const int64_t *ghost,
                      int32_t **src_oo, int32_t **src_bnd)
{
    const hk_backend_ops *L = d->local;
    const int64_t nown = d->nown;
    hk_bmat Koo = {0}, Kbnd = {0};
    int32_t *bcol = NULL;
    memset(&d->Koo, 0, sizeof d->Koo);
    memset(&d->Kbnd, 0, sizeof d->Kbnd);
    U->R.nint = d->nint;
    if (d->host_memory) {
        d->inv_dev = d->inv, d->perm_dev = d->perm; /* the host's arrays */
        U->R.inv = inv, U->R.perm = d->perm, U->R.ghost = ghost;
        HK_CALL(L->dist_split(&U->R, &Koo, src_oo, &Kbnd, src_bnd, &d->bcol, &d->nbc));
        const hk_bcsr oo = {d->bs, nown, nown, Koo.rowptr, Koo.colind, NULL};
        const hk_bcsr bnd = {d->bs, d->nbnd, Kbnd.nbcols, Kbnd.rowptr, Kbnd.colind, NULL};
        d->Koo = oo;
        d->Kbnd = bnd;
        L->dealloc(Koo.val); /* host_values makes them (the host's own) */
        L->dealloc(Kbnd.val);
        return 0;
    }
    HK_CALL(upload_arr(L, inv, (size_t)nown * sizeof *inv, &U->inv));
    HK_CALL(upload_arr(L, d->perm, (size_t)nown * sizeof *d->perm, &U->perm));
    U->R.inv = U->inv, U->R.perm = U->perm;
    /* kept: the solve puts b and x in order there (hk_dist_upload_ordered) */
    d->inv_dev = U->inv, d->perm_dev = U->perm;
    U->inv = U->perm = NULL;
    HK_CALL(L->dist_split(&U->R, &Koo, src_oo, &Kbnd, src_bnd, &bcol, &d->nbc));
    d->Koo_d = Koo;
    d->Kbnd_d = Kbnd;
    d->bcol_dev = bcol;
    /* the host's part: Koo's row pointers (hk_dist_mat_build, pc=amg's level 0), Kbnd's
     * pattern (pc=amg's level 0 renumbers its columns) and bcol */
    const hk_bcsr oo = {d->bs, nown, nown, NULL, NULL, NULL};
    const hk_bcsr bnd = {d->bs, d->nbnd, Kbnd.nbcols, NULL, NULL, NULL};
    d->Koo = oo;
    d->Kbnd = bnd;
    HK_CALL(download_arr(L, Koo.rowptr, (size_t)(nown + 1) * sizeof *Koo.rowptr,
                         (void **)&d->Koo.rowptr));
    HK_CALL(download_arr(L, Kbnd.rowptr, (size_t)(d->nbnd + 1) * sizeof *Kbnd.rowptr,
                         (void **)&d->Kbnd.rowptr));
    HK_CALL(download_arr(L, Kbnd.colind, (size_t)Kbnd.nnzb * sizeof *Kbnd.colind,
                         (void **)&d->Kbnd.colind));
    HK_CALL(download_arr(L, bcol, (size_t)d->nbc * sizeof *bcol, (void **)&d->bcol));
    return 0;
}

/* M's values (n blocks of bb into dst) from the caller's (src, nsrc blocks) by the gather
 * index idx, all three in the memory of be: its vec_gather, a block a record. */
static int gather_blocks(const hk_backend_ops *be, const double *src, int64_t nsrc,
                         const int32_t *idx, int64_t n, int bb, double *dst)
{
    if (n == 0) return 0;
    const hk_vec x = {be, nsrc * bb, HK_FP64, (void *)src};
    hk_vec y = {be, n * bb, HK_FP64, dst};
    return be->vec_gather(&y, &x, idx, n, bb);
}

/* A view of the host's A as a matrix of be (a host-memory backend). */
static hk_bmat host_view(const hk_backend_ops *be, const hk_bcsr *A, int64_t nbcols)
{
    const hk_bmat V = {be,        A->bs,     A->bs, A->nbrows, nbcols, A->rowptr[A->nbrows],
                       A->rowptr, A->colind, A->val};
    return V;
}

/* The values of Koo and Kbnd on a host-memory backend by their gather indices: from the
 * caller's K->val (val_dev NULL) or from val_dev (the cpu's gather either way). Elsewhere
 * they stay NULL (device_values gathers them on the device). */
static int host_values(hk_dist *d, const hk_bcsr *K, int64_t nnzb, const double *val_dev,
                       const int32_t *src_oo, const int32_t *src_bnd)
{
    if (!d->host_memory) return 0;
    const int bb = d->bs * d->bs;
    hk_bcsr *M[2] = {&d->Koo, &d->Kbnd};
    const int32_t *src[2] = {src_oo, src_bnd};
    for (int k = 0; k < 2; k++) {
        const int64_t n = M[k]->rowptr[M[k]->nbrows];
        HK_CALL(hk_malloc((size_t)(n + 1) * bb * sizeof *M[k]->val, &M[k]->val));
        HK_CALL(gather_blocks(&hk_backend_cpu, val_dev ? val_dev : K->val, nnzb, src[k], n, bb,
                              M[k]->val));
    }
    return 0;
}

/* Koo_d and Kbnd_d: on a host-memory backend views of the host's matrices; on a device (the
 * split made them there) their values gathered from val_dev by the gather indices (the values
 * never on the host). */
static int device_values(hk_dist *d, int64_t nnzb, const double *val_dev, const int32_t *src_oo,
                         const int32_t *src_bnd)
{
    const hk_backend_ops *L = d->local;
    const int bb = d->bs * d->bs;
    if (d->host_memory) {
        d->Koo_d = host_view(L, &d->Koo, d->nown);
        d->Kbnd_d = host_view(L, &d->Kbnd, d->nbc + d->nghost);
        return 0;
    }
    HK_CHECK(val_dev, HK_ERR_INTERNAL, "distributed rows: no values on backend %s to gather",
             L->name);
    HK_CALL(gather_blocks(L, val_dev, nnzb, src_oo, d->Koo_d.nnzb, bb, d->Koo_d.val));
    HK_CALL(gather_blocks(L, val_dev, nnzb, src_bnd, d->Kbnd_d.nnzb, bb, d->Kbnd_d.val));
    return 0;
}

/* A row's columns in a part's numbering (d->part_ghost) as global ones (-1: none), in an
 * array of its own (*own 1). */
static int part_row_global(const hk_dist *d, int64_t len, int32_t **col, int *own)
{
    int32_t *g = NULL;
    HK_CALL(hk_malloc((size_t)(len + 1) * sizeof *g, &g));
    hk_backend_cpu.dist_global_columns(*col, len, d->row0, d->nown, d->part_ghost, d->part_nghost,
                                       g);
    if (*own) free(*col);
    *col = g;
    *own = 1;
    return 0;
}

/* The values gathered on the backend (hk_dist_create_values) checked there: the first
 * non-finite one named by the caller's global row and column, as check_rows names it (that
 * row's values alone come down, and its columns where the pattern is on the backend). */
static int check_values_dev(const hk_dist *d, const hk_bcsr *K, int pattern_dev, int part_cols,
                            const double *val_dev)
{
    const hk_backend_ops *L = d->local;
    const int bb = d->bs * d->bs;
    int64_t f_oo = -1, f_bnd = -1, first = INT64_MAX;
    HK_CHECK(L->bmat_first_nonfinite, HK_ERR_UNSUPPORTED,
             "backend %s cannot check the matrix values (no bmat_first_nonfinite op)", L->name);
    if (d->nown) HK_CALL(L->bmat_first_nonfinite(&d->Koo_d, &f_oo));
    if (d->nbnd) HK_CALL(L->bmat_first_nonfinite(&d->Kbnd_d, &f_bnd));
    /* internal rows are each group in the caller's order, and Kbnd holds every block of the
     * boundary rows: the smaller caller row of the two is the first failing one */
    if (f_oo >= 0) first = d->perm[f_oo];
    if (f_bnd >= 0 && d->perm[d->nint + f_bnd] < first) first = d->perm[d->nint + f_bnd];
    if (first == INT64_MAX) return 0;
    int64_t p0 = 0, len = 0;
    int32_t *col = NULL;
    int own = 0;
    double *v = NULL;
    int ierr = pattern_row(L, K, pattern_dev, first, &p0, &len, &col, &own);
    if (!ierr && part_cols) /* the part's columns named by their global ones */
        ierr = part_row_global(d, len, &col, &own);
    int64_t rp[2] = {0, len};
    if (!ierr) ierr = hk_malloc((size_t)(len * bb + 1) * sizeof *v, &v);
    if (!ierr) ierr = L->copy_from(v, val_dev + p0 * bb, (size_t)(len * bb) * sizeof *v);
    const hk_bcsr row = {d->bs, 1, K->nbcols, rp, col, v};
    if (!ierr) ierr = check_rows(&row, d->row0 + first);
    free(v);
    if (own) free(col);
    if (!ierr)
        ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                            "distributed rows: the backend found a non-finite value in block "
                            "row %lld that its host copy does not have",
                            (long long)(d->row0 + first));
    return ierr;
}

/* The internal numbering: interior rows (no ghost column) first, then boundary rows, each in
 * the caller's order; inv[i] (scan_rows' flag: -1 boundary, -2 interior) becomes the caller's
 * row i's number, perm its inverse. By chunks of rows on the threads: each chunk counts its
 * interior rows, and numbers its rows after the earlier chunks' (the same numbers on any
 * thread count). */
static int number_rows(hk_dist *d, int32_t *inv)
{
    const int64_t nown = d->nown;
    const int nt = omp_get_max_threads();
    int64_t *nint = NULL; /* per chunk: its interior rows, then the chunk's first number */
    HK_CALL(hk_calloc((size_t)nt + 1, sizeof *nint, &nint));
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        int64_t k = 0;
        for (int64_t i = chunk_start(nown, nt, t); i < chunk_start(nown, nt, t + 1); i++)
            k += inv[i] == -2;
        nint[t + 1] = k;
    }
    for (int t = 0; t < nt; t++)
        nint[t + 1] += nint[t];
    d->nint = nint[nt];
    d->nbnd = nown - d->nint;
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        const int64_t i0 = chunk_start(nown, nt, t);
        int64_t ki = nint[t], kb = d->nint + (i0 - nint[t]);
        for (int64_t i = i0; i < chunk_start(nown, nt, t + 1); i++) {
            inv[i] = (int32_t)(inv[i] == -2 ? ki++ : kb++);
            d->perm[inv[i]] = (int32_t)i;
        }
    }
    free(nint);
    return 0;
}

/* dist.comm=nccl where the backend has no device transport: one sentence with the way out. */
static int refuse_nccl(const hk_backend_ops *be)
{
#ifdef HOOKE_HAVE_NCCL
    const int built = 1;
#else
    const int built = 0;
#endif
    if (!built && strcmp(be->name, "cpu") != 0)
        return hk_error_set(HK_ERR_NOT_BUILT, __FILE__, __LINE__,
                            "dist.comm=nccl: this hooke was built without NCCL (nccl.h and "
                            "libnccl not found, or HOOKE_WITH_NCCL=OFF), so its processes "
                            "exchange through MPI; use dist.comm=mpi (or auto), or rebuild "
                            "with NCCL (libnccl-dev)");
    return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                        "dist.comm=nccl moves data between GPUs, and backend %s has none%s; "
                        "use dist.comm=mpi (or auto)%s",
                        be->name, built ? "" : " (and this hooke was built without NCCL)",
                        built ? ", or backend=cuda" : "");
}

/* The layout's step k timed (HOOKE_AMG_PROFILE prints them) since *t, and *t restarted. */
static void layout_step(hk_dist *d, int k, double *t)
{
    const double now = hk_time();
    d->t_layout_step[k] = now - *t;
    *t = now;
}

const char *hk_dist_comm_name(const hk_dist *d)
{
    return d && d->dcomm ? "nccl" : "mpi";
}

int hk_dist_create(const hk_comm *c, const hk_backend_ops *be, int64_t row0, const hk_bcsr *K,
                   hk_dist **out)
{
    return hk_dist_create_comm(c, be, row0, K, HK_DIST_COMM_AUTO, out);
}

int hk_dist_create_comm(const hk_comm *c, const hk_backend_ops *be, int64_t row0, const hk_bcsr *K,
                        int transport, hk_dist **out)
{
    return hk_dist_create_values(c, be, row0, K, NULL, transport, out);
}

/* Whether the layout's matrices live in be's memory as the host's own (the cpu; every process
 * agrees). HOOKE_DIST_STAGED=1 (tests): the cpu takes a device's path, copies and staging
 * instead of views, so that the CPU runs check that path's bytes. */
static int backend_host_memory(const hk_comm *c, const hk_backend_ops *be, int *host_memory)
{
    int staged = 0;
    HK_CALL(
        hk_comm_agree(c, hk_env_switch("HOOKE_DIST_STAGED", "1", "the cpu takes a device's path",
                                       "0", "views", 0, &staged)));
    *host_memory = !strcmp(be->name, "cpu") && !staged;
    return 0;
}

/* A part's pattern (rowptr, colind: a copy in the backend's memory) and ghost ids (host)
 * into d. */
static int keep_part(hk_dist *d, const hk_dist_part_rows *P)
{
    const hk_backend_ops *L = d->local;
    const size_t rb = (size_t)(d->nown + 1) * sizeof *d->part_rowptr;
    const size_t cb = (size_t)d->nnzb * sizeof *d->part_colind;
    static const int64_t zero = 0; /* no rows: their row pointers may not be given */
    HK_CALL(L->alloc((void **)&d->part_rowptr, rb));
    HK_CALL(d->nown ? L->copy(d->part_rowptr, P->rowptr, rb)
                    : L->copy_to(d->part_rowptr, &zero, sizeof zero));
    HK_CALL(L->alloc((void **)&d->part_colind, cb ? cb : 1));
    if (cb) HK_CALL(L->copy(d->part_colind, P->colind, cb));
    HK_CALL(hk_malloc((size_t)(P->nghost + 1) * sizeof *d->part_ghost, &d->part_ghost));
    if (P->nghost) memcpy(d->part_ghost, P->ghost_gid, (size_t)P->nghost * sizeof *d->part_ghost);
    d->part_nghost = P->nghost;
    return 0;
}

/* The layout of K's rows (nnzb blocks; part: K's rowptr and colind are in be's memory, the
 * values then there too, made from that part's rows, whose pattern the layout keeps; NULL:
 * the pattern on the host) with the values val_dev where they lie (NULL: K->val, on the host).
 * Processes may come from either (the same collectives). */
static int create_layout(const hk_comm *c, const hk_backend_ops *be, int64_t row0, const hk_bcsr *K,
                         int64_t nnzb, const hk_dist_part_rows *part, const double *val_dev,
                         int transport, hk_dist **out)
{
    const int pattern_dev = part != NULL;
    int ierr = 0;
    hk_dist *d = NULL;
    int64_t *ghost = NULL;
    int32_t *inv = NULL, *src_oo = NULL, *src_bnd = NULL;
    layout_rows rows = {0};
    const double t0 = hk_time();
    *out = NULL;
    rows.pattern_dev = pattern_dev;
    /* every failure below is agreed by all processes (one that fails alone must meet no
     * collective the others are in): the caller stops with the others */
    HK_TRY(hk_comm_agree(c, hk_calloc(1, sizeof *d, &d)));
    d->comm = c;
    d->local = be;
    d->bs = K->bs;
    d->row0 = row0;
    d->nown = K->nbrows;
    d->nglobal = K->nbcols;
    d->nnzb = nnzb;
    HK_TRY(backend_host_memory(c, be, &d->host_memory));
    /* every process the same block size and column count, its values finite */
    int64_t shape[2] = {K->bs, K->nbcols}, lo[2] = {K->bs, K->nbcols};
    HK_TRY(hk_comm_max_i64(c, shape, 2));
    HK_TRY(hk_comm_min_i64(c, lo, 2));
    HK_TRY(hk_comm_agree(
        c, shape[0] == lo[0] && shape[1] == lo[1]
               ? 0
               : hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                              "distributed rows: the processes give block sizes %lld..%lld and "
                              "%lld..%lld global columns; all must give the same",
                              (long long)lo[0], (long long)shape[0], (long long)lo[1],
                              (long long)shape[1])));
    HK_TRY(hk_comm_agree(c, be->vec_gather ? 0
                                           : hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                                                          "backend %s cannot run distributed "
                                                          "(no vec_gather op); use backend=cpu",
                                                          be->name)));
    HK_TRY(
        hk_comm_agree(c, transport != HK_DIST_COMM_NCCL || be->dcomm_create ? 0 : refuse_nccl(be)));
    /* the gather indices are int32, as vec_gather's */
    HK_TRY(hk_comm_agree(
        c, nnzb <= INT32_MAX
               ? 0
               : hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                              "distributed rows: a process holds %lld blocks, more than the "
                              "%d a process can; run on more processes",
                              (long long)nnzb, INT32_MAX)));
    /* the columns here; the values here too when they are on the host, else once gathered
     * where they lie (check_values_dev) */
    hk_bcsr pattern = *K;
    if (val_dev) pattern.val = NULL;
    double ts = hk_time();
    /* the values where the host holds them; the columns (in the same pass as the ghosts and
     * the rows' kinds) below */
    HK_TRY(hk_comm_agree(c, pattern.val ? check_rows(&pattern, row0) : 0)); /* collective */
    layout_step(d, 0, &ts);
    /* ghosts and the rows' kinds in one pass, then the halo plan (collective: it also checks
     * the ranges) */
    ierr = hk_malloc((size_t)(d->nown + 1) * sizeof *d->perm, &d->perm);
    if (!ierr) ierr = hk_malloc((size_t)(d->nown + 1) * sizeof *inv, &inv);
    if (!ierr) ierr = list_ghosts(d, K, &rows, inv, &ghost);
    HK_TRY(hk_comm_agree(c, ierr));
    layout_step(d, 1, &ts);
    HK_TRY(hk_halo_create(c, row0, d->nown, d->nghost, ghost, &d->halo));
    layout_step(d, 2, &ts);
    /* interior rows first, then boundary rows, each in the caller's order */
    ierr = number_rows(d, inv);
    const int64_t nsend = d->halo->send_off[d->halo->nsend];
    if (!ierr)
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < nsend; j++)
            d->halo->send_idx[j] = inv[d->halo->send_idx[j]];
    layout_step(d, 3, &ts);
    d->inv = inv; /* the layout's from here on */
    inv = NULL;
    if (!ierr) ierr = split_rows(d, &rows, d->inv, ghost, &src_oo, &src_bnd);
    layout_step(d, 4, &ts);
    if (!ierr) ierr = host_values(d, K, nnzb, val_dev, src_oo, src_bnd);
    layout_step(d, 5, &ts);
    d->t_layout = hk_time() - t0;
    /* Koo and Kbnd on the backend, once: what the operator, the solver's K and pc=amg's
     * level 0 read */
    if (!ierr) ierr = device_values(d, nnzb, val_dev, src_oo, src_bnd);
    if (!ierr && val_dev) ierr = check_values_dev(d, K, pattern_dev, 0, val_dev);
    if (!ierr)
        ierr = upload_idx(be, d->halo->send_idx, d->halo->send_off[d->halo->nsend], &d->send_dev);
    if (!ierr && !d->bcol_dev) ierr = upload_idx(be, d->bcol, d->nbc, &d->bcol_dev);
    /* a part's pattern kept where it lies, for new values of the same rows */
    if (!ierr && part) ierr = keep_part(d, part);
    if (!ierr) ierr = be->sync(); /* also before the gather indices go */
    ierr = hk_comm_agree(c, ierr);
    if (ierr) goto fail;
    /* the device transport only when asked for: on two H200s (docs/BENCHMARKS.md, run 9) the
     * host-staged MPI path was faster per iteration at 0.4-0.8M DOFs a GPU (NCCL's gathered
     * sums cost more than the host's), so auto means mpi until a measurement says otherwise */
    if (transport == HK_DIST_COMM_NCCL)
        HK_TRY(hk_dcomm_create(c, be, HK_DCOMM_TIMEOUT, &d->dcomm)); /* agreed inside */
    d->t_begin = t0;
    d->t_layout_upload = hk_time() - t0 - d->t_layout;
    /* the gather indices stay for new values of the same rows (hk_dist_update_values) */
    d->src_oo = src_oo, d->src_bnd = src_bnd;
    src_oo = src_bnd = NULL;
    *out = d;
    d = NULL;
fail:
    free(ghost);
    free(inv);
    if (src_oo) be->dealloc(src_oo); /* the backend's (the split's) */
    if (src_bnd) be->dealloc(src_bnd);
    layout_rows_free(be, &rows);
    hk_dist_destroy(d);
    return ierr;
}

int hk_dist_create_values(const hk_comm *c, const hk_backend_ops *be, int64_t row0,
                          const hk_bcsr *K, const double *val_dev, int transport, hk_dist **out)
{
    const double t0 = hk_time();
    int host_memory = 0;
    *out = NULL;
    HK_CALL(backend_host_memory(c, be, &host_memory)); /* agreed */
    /* The values on the host and the layout in a device's memory: they go there once as they
     * are (one copy of the rows' blocks, as the one-process solver uploads K) and are put in
     * order there, as resident values are. Ordered on the host instead, they took a second
     * host copy of K (Koo and Kbnd, fresh pages faulted in) and its upload: the distributed
     * set-up so took 6.8 s at 14.4M DOFs a process on four H200s, one process's 0.9 s. More
     * blocks than the gather indices hold are refused by the layout with its sentence. */
    const int64_t nnzb = K->rowptr[K->nbrows];
    const int upload = !val_dev && !host_memory && nnzb <= INT32_MAX;
    const size_t bytes = (size_t)nnzb * K->bs * K->bs * sizeof(double);
    void *val = NULL;
    int ierr = 0;
    if (upload) {
        ierr = be->alloc(&val, bytes + sizeof(double));
        if (!ierr && bytes) ierr = be->copy_to(val, K->val, bytes);
        if (ierr && val) be->dealloc(val);
    }
    /* on every process, uploading or not (each chooses alone: a process with resident values
     * meets the same collectives as one with host rows) */
    HK_CALL(hk_comm_agree(c, ierr));
    const double t_upload = hk_time() - t0;
    ierr = create_layout(c, be, row0, K, nnzb, NULL, upload ? val : val_dev, transport, out);
    if (!upload) return ierr;
    (void)be->sync(); /* nothing queued reads the copy when it goes */
    be->dealloc(val);
    if (!ierr) { /* the upload is the layout's part on the backend */
        (*out)->t_begin = t0;
        (*out)->t_layout_upload += t_upload;
    }
    return ierr;
}

int hk_dist_create_device(const hk_comm *c, const hk_backend_ops *be, const hk_dist_part_rows *P,
                          int transport, hk_dist **out)
{
    const double t0 = hk_time();
    int host_memory = 0, ierr = 0;
    int64_t nnzb = 0;
    void *gid = NULL, *col = NULL;
    *out = NULL;
    HK_CALL(backend_host_memory(c, be, &host_memory)); /* agreed, as hk_dist_create_values */
    if (!be->dist_global_columns)
        ierr = hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                            "backend %s cannot take a part's rows where they lie (no "
                            "dist_global_columns op); give them on the host "
                            "(hk_solver_create_dist_resident)",
                            be->name);
    if (!ierr && P->nown) ierr = be->copy_from(&nnzb, P->rowptr + P->nown, sizeof nnzb);
    /* more blocks than the gather indices hold: the layout refuses them with its sentence */
    const int64_t nmap = nnzb <= INT32_MAX ? nnzb : 0;
    if (!ierr) ierr = upload_arr(be, P->ghost_gid, (size_t)P->nghost * sizeof *P->ghost_gid, &gid);
    if (!ierr) ierr = be->alloc(&col, (size_t)(nmap + 1) * sizeof(int32_t));
    if (!ierr)
        ierr = be->dist_global_columns(P->colind, nmap, P->row0, P->nown, gid, P->nghost, col);
    /* on every process, as hk_dist_create_values' upload (a process with host rows meets
     * the same collectives) */
    ierr = hk_comm_agree(c, ierr);
    const double t_columns = hk_time() - t0;
    const hk_bcsr K = {P->bs, P->nown, P->nglobal, (int64_t *)P->rowptr, col, NULL};
    if (!ierr) ierr = create_layout(c, be, P->row0, &K, nnzb, P, P->val, transport, out);
    (void)be->sync(); /* nothing queued reads the columns when they go */
    if (gid) be->dealloc(gid);
    if (col) be->dealloc(col);
    if (!ierr) { /* the columns' mapping is the layout's part on the backend */
        (*out)->t_begin = t0;
        (*out)->t_layout_upload += t_columns;
    }
    return ierr;
}

void hk_dist_destroy(hk_dist *d)
{
    if (!d) return;
    hk_dcomm_destroy(d->dcomm);
    hk_halo_destroy(d->halo);
    free(d->perm);
    if (!d->host_memory) { /* else views of the host's */
        hk_bmat_free(&d->Koo_d);
        hk_bmat_free(&d->Kbnd_d);
    }
    hk_bcsr_free(&d->Koo);
    hk_bcsr_free(&d->Kbnd);
    free(d->bcol);
    free(d->inv);
    if (!d->host_memory) { /* else views of perm and inv */
        if (d->perm_dev) d->local->dealloc(d->perm_dev);
        if (d->inv_dev) d->local->dealloc(d->inv_dev);
    }
    if (d->send_dev) d->local->dealloc(d->send_dev);
    if (d->bcol_dev) d->local->dealloc(d->bcol_dev);
    if (d->src_oo) d->local->dealloc(d->src_oo);
    if (d->src_bnd) d->local->dealloc(d->src_bnd);
    if (d->part_rowptr) d->local->dealloc(d->part_rowptr);
    if (d->part_colind) d->local->dealloc(d->part_colind);
    free(d->part_ghost);
    free(d);
}

int hk_dist_update_values(hk_dist *d, const hk_bcsr *K, int pattern_dev, int part_cols,
                          const double *val_dev, double *t_in, double *t_check)
{
    const hk_backend_ops *L = d->local;
    const int bb = d->bs * d->bs;
    const size_t bytes = (size_t)d->nnzb * bb * sizeof(double);
    const double t0 = hk_time();
    void *up = NULL;
    int ierr = 0;
    *t_in = *t_check = 0;
    /* host values: read where they are on a host-memory backend, else uploaded once as at
     * create (hk_dist_create_values) */
    const double *src = val_dev ? val_dev : d->host_memory ? K->val : NULL;
    if (!src) {
        ierr = L->alloc(&up, bytes + sizeof(double));
        if (!ierr && bytes) ierr = L->copy_to(up, K->val, bytes);
        src = up;
    }
    /* Koo_d and Kbnd_d are the host's Koo and Kbnd on a host-memory backend (views) */
    if (!ierr) ierr = gather_blocks(L, src, d->nnzb, d->src_oo, d->Koo_d.nnzb, bb, d->Koo_d.val);
    if (!ierr) ierr = gather_blocks(L, src, d->nnzb, d->src_bnd, d->Kbnd_d.nnzb, bb, d->Kbnd_d.val);
    if (!ierr) ierr = L->sync();
    const double t1 = hk_time();
    *t_in = t1 - t0;
    if (!ierr) ierr = check_values_dev(d, K, pattern_dev, part_cols, src);
    *t_check = hk_time() - t1;
    /* HOOKE_AMG_PROFILE's "before it" of the set-up that follows: this update's (no host
     * layout; the values gathered and checked on the backend) */
    d->t_begin = t0;
    d->t_layout = 0;
    d->t_layout_upload = *t_in + *t_check;
    memset(d->t_layout_step, 0, sizeof d->t_layout_step);
    if (up) {
        (void)L->sync(); /* nothing queued reads the copy when it goes */
        L->dealloc(up);
    }
    return ierr;
}

/* Copies on the threads (each entry written once: the bytes of one thread). */
void hk_dist_to_internal(const hk_dist *d, const double *b, double *b_int)
{
    const int bs = d->bs;
#pragma omp parallel for schedule(static) if (d->nown > 100000)
    for (int64_t i = 0; i < d->nown; i++)
        memcpy(b_int + i * bs, b + (int64_t)d->perm[i] * bs, (size_t)bs * sizeof *b);
}

void hk_dist_from_internal(const hk_dist *d, const double *x_int, double *x)
{
    const int bs = d->bs;
#pragma omp parallel for schedule(static) if (d->nown > 100000)
    for (int64_t i = 0; i < d->nown; i++)
        memcpy(x + (int64_t)d->perm[i] * bs, x_int + i * bs, (size_t)bs * sizeof *x);
}

int hk_dist_upload_ordered(const hk_dist *d, const double *h, hk_vec *t, hk_vec *v)
{
    const hk_vec tl = hk_dist_view(d, t, 0, v->n), vl = hk_dist_view(d, v, 0, v->n);
    HK_CALL(hk_vec_upload((hk_vec *)&tl, h));
    return d->nown ? d->local->vec_gather((hk_vec *)&vl, &tl, d->perm_dev, d->nown, d->bs) : 0;
}

int hk_dist_download_ordered(const hk_dist *d, const hk_vec *v, hk_vec *t, double *h)
{
    const hk_vec tl = hk_dist_view(d, t, 0, v->n), vl = hk_dist_view(d, v, 0, v->n);
    if (d->nown) HK_CALL(d->local->vec_gather((hk_vec *)&tl, &vl, d->inv_dev, d->nown, d->bs));
    return hk_vec_download(&tl, h);
}

int hk_dist_check_choice(const char *method, const char *pc)
{
    static const char *const pcs[] = {"none", "jacobi", "bjacobi", "poly", "amg", NULL};
    int ok = 0;
    for (int i = 0; pcs[i]; i++)
        ok |= !strcmp(pc, pcs[i]);
    HK_CHECK(ok, HK_ERR_UNSUPPORTED,
             "pc=%s is not distributed yet, so it cannot run on %d processes; use pc=amg, "
             "poly, jacobi or bjacobi with mpirun, or run on one process",
             pc, hk_comm_size(hk_comm_world()));
    HK_CHECK(strcmp(method, "cholesky") != 0, HK_ERR_UNSUPPORTED,
             "method=cholesky (the sparse direct solver) runs on one process; with mpirun use "
             "an iterative method (cg with pc=poly), or run without mpirun");
    return 0;
}

/* ---- the operator ------------------------------------------------------------------------ */

int hk_dist_host_alloc(const hk_dist *d, size_t bytes, void **p)
{
    *p = NULL;
    if (!d->local->host_alloc) return hk_malloc(bytes, p);
    const int ierr = d->local->host_alloc(p, bytes);
    if (ierr) *p = NULL;
    return ierr;
}

void hk_dist_host_free(const hk_dist *d, void *p)
{
    if (!p) return;
    if (d->local->host_alloc)
        d->local->host_free(p);
    else
        free(p);
}

typedef struct dist_mat {
    hk_dist *d;
    hk_mat *Aint, *Abnd;         /* on the backend's own table (NULL when there are no such rows) */
    hk_vec *send, *xe;           /* the send buffer; [gathered owned columns, ghosts] */
    hk_vec *tmp;                 /* scratch of the fused reductions (dist_ops.c), fp64, on demand */
    void *host_send, *host_recv; /* staging of a device backend */
} dist_mat;

/* A format of B (a matrix of the backend, its rows where they lie) with A's parameters (format,
 * slicing): the backend's mat_build from its memory, as a resident matrix's on one process. */
static int local_mat(const hk_dist *d, const hk_mat *A, const hk_bmat *B, hk_mat **out)
{
    int ierr = 0;
    hk_mat *L = NULL;
    *out = NULL;
    if (B->nbrows == 0) return 0;
    HK_TRY(hk_calloc(1, sizeof *L, &L));
    *L = *A;
    L->be = d->local;
    L->nrows = B->nbrows * B->br;
    L->ncols = B->nbcols * B->bc;
    L->bdata = NULL;
    L->nnz = L->stored = L->width = 0;
    L->bytes = 0;
    L->lanes_min = L->lanes_max = 0;
    HK_TRY(d->local->mat_build(L, B));
    *out = L;
    L = NULL;
fail:
    free(L);
    return ierr;
}

static int vec_at_least(const hk_backend_ops *be, int64_t n, hk_precision p, hk_vec **v)
{
    HK_CALL(hk_vec_create(be, n > 0 ? n : 1, p, v));
    (*v)->n = n;
    return 0;
}

/* The operator M's parts (Aint, Abnd) made: its halo vectors and host staging, and A's
 * statistics, the parts' sums; A->bdata = M either way (hk_dist_mat_release frees it). */
static int dist_mat_finish(hk_mat *A, dist_mat *M)
{
    const hk_dist *d = M->d;
    A->bdata = M;
    A->nnz = A->stored = A->width = 0; /* the parts' sums below (also when rebuilt) */
    A->bytes = 0;
    A->lanes_min = A->lanes_max = 0;
    const int64_t ns = d->halo->send_off[d->halo->nsend];
    HK_CALL(vec_at_least(d->local, ns * d->bs, A->prec, &M->send));
    HK_CALL(vec_at_least(d->local, (d->nbc + d->nghost) * d->bs, A->prec, &M->xe));
    const size_t e = (A->prec == HK_FP64 ? sizeof(double) : sizeof(float)) * (size_t)d->bs;
    if (!d->host_memory && !d->dcomm) {
        HK_CALL(hk_dist_host_alloc(d, (size_t)(ns + 1) * e, &M->host_send));
        HK_CALL(hk_dist_host_alloc(d, (size_t)(d->nghost + 1) * e, &M->host_recv));
    }
    const hk_mat *parts[2] = {M->Aint, M->Abnd};
    for (int k = 0; k < 2; k++) {
        const hk_mat *P = parts[k];
        if (!P) continue;
        A->nnz += P->nnz;
        A->stored += P->stored;
        A->bytes += P->bytes;
        if (P->width > A->width) A->width = P->width;
        if (!A->lanes_min || (P->lanes_min && P->lanes_min < A->lanes_min))
            A->lanes_min = P->lanes_min;
        if (P->lanes_max > A->lanes_max) A->lanes_max = P->lanes_max;
    }
    return 0;
}

int hk_dist_mat_build(hk_mat *A, const hk_bmat *K)
{
    hk_dist *d = A->be->dist;
    int ierr = 0;
    dist_mat *M = NULL;
    const double t0 = hk_time();
    HK_CHECK(d && K->nbrows == d->nown && K->nbcols == d->nown && K->br == d->bs, HK_ERR_ARG,
             "distributed solver: only the operator itself is built across processes (a %lld x "
             "%lld block matrix was given)",
             (long long)K->nbrows, (long long)K->nbcols);
    HK_TRY(hk_calloc(1, sizeof *M, &M));
    M->d = d;
    /* A_int: Koo's first nint rows (interior rows read owned columns only) */
    hk_bmat Kint = d->Koo_d;
    Kint.nbrows = d->nint;
    Kint.nnzb = d->Koo.rowptr[d->nint];
    HK_TRY(local_mat(d, A, &Kint, &M->Aint));
    HK_TRY(local_mat(d, A, &d->Kbnd_d, &M->Abnd));
    HK_TRY(dist_mat_finish(A, M));
    HK_CALL(d->local->sync());
    d->t_operator = hk_time() - t0;
    return 0;
fail:
    A->bdata = M;
    hk_dist_mat_release(A);
    return ierr;
}

/* dst = src (fp64) in fp32 (mat_convert): each part converted by the process's backend (its
 * format and layout kept, the values rounded: what a build in fp32 makes where the format is
 * the same, which hk_pc_operator checks), not built again from K's rows; where dst is built
 * (hk_mat_convert_values), its parts' values only. */
int hk_dist_mat_convert(hk_mat *dst, const hk_mat *src)
{
    const dist_mat *S = src->bdata;
    HK_CHECK(S, HK_ERR_ARG, "distributed operator: converted before it was built");
    if (dst->bdata) {
        dist_mat *M = dst->bdata;
        HK_CHECK(!M->Aint == !S->Aint && !M->Abnd == !S->Abnd, HK_ERR_UNSUPPORTED,
                 "distributed operator: the fp32 copy has other parts than the fp64 one");
        if (M->Aint) HK_CALL(hk_mat_convert_values(M->Aint, S->Aint));
        if (M->Abnd) HK_CALL(hk_mat_convert_values(M->Abnd, S->Abnd));
        return 0;
    }
    int ierr = 0;
    dist_mat *M = NULL;
    HK_TRY(hk_calloc(1, sizeof *M, &M));
    M->d = S->d;
    if (S->Aint) HK_TRY(hk_mat_convert(S->Aint, &M->Aint));
    if (S->Abnd) HK_TRY(hk_mat_convert(S->Abnd, &M->Abnd));
    HK_TRY(dist_mat_finish(dst, M));
    return 0;
fail:
    dst->bdata = M;
    hk_dist_mat_release(dst);
    return ierr;
}

void hk_dist_mat_release(hk_mat *A)
{
    dist_mat *M = A->bdata;
    if (!M) return;
    hk_mat_destroy(M->Aint);
    hk_mat_destroy(M->Abnd);
    hk_vec_destroy(M->send);
    hk_vec_destroy(M->xe);
    hk_vec_destroy(M->tmp);
    hk_dist_host_free(M->d, M->host_send);
    hk_dist_host_free(M->d, M->host_recv);
    free(M);
    A->bdata = NULL;
}

/* One part of the operator (P: Aint or Abnd) on its rows [r0, r0 + nr) (block rows) reading
 * xin (its columns): y's rows = P xin, or with st the Chebyshev step on those rows (its row
 * vectors and D as views of their rows, p = xin; xin NULL: no product). */
static int part_apply(const hk_dist *d, hk_mat *P, const hk_vec *xin, hk_vec *y,
                      const hk_cheb_step *st, int64_t r0, int64_t nr)
{
    const hk_backend_ops *L = d->local;
    const int bs = d->bs;
    if (!st) {
        hk_vec yv = hk_dist_view(d, y, r0 * bs, nr * bs);
        return L->mat_spmv(P, xin, &yv);
    }
    hk_vec v[7];
    const hk_vec *in[7] = {st->rin, st->r, st->dp, st->dn, st->x, st->t, st->D};
    for (int k = 0; k < 7; k++)
        if (in[k])
            v[k] = k < 6 ? hk_dist_view(d, in[k], r0 * bs, nr * bs)
                         : hk_dist_view(d, in[k], r0 * bs * st->bs, nr * bs * st->bs);
    hk_cheb_step q = *st;
    q.p = xin;
    q.rin = &v[0];
    q.r = st->r ? &v[1] : NULL;
    q.dp = st->dp ? &v[2] : NULL;
    q.dn = st->dn ? &v[3] : NULL;
    q.x = st->x ? &v[4] : NULL;
    q.t = st->t ? &v[5] : NULL;
    q.D = st->D ? &v[6] : NULL;
    return L->amg_cheb_step(P, &q);
}

/* The product with the device transport: everything queued on the backend's stream, the round
 * on the transport's own, overlapping the interior rows; no host wait. y = A x, or (st) the
 * Chebyshev step with p = x. */
static int apply_device(hk_dist *d, dist_mat *M, const hk_mat *A, const hk_vec *xl, hk_vec *y,
                        const hk_cheb_step *st)
{
    const hk_backend_ops *L = d->local;
    const int bs = d->bs;
    const size_t e = (A->prec == HK_FP64 ? sizeof(double) : sizeof(float)) * (size_t)bs;
    const int64_t ns = d->halo->send_off[d->halo->nsend];
    if (ns) HK_CALL(L->vec_gather(M->send, xl, d->send_dev, ns, bs));
    const double t0 = hk_dprof_now();
    hk_dcomm_exchange(d->dcomm, d->halo, M->send->data, (char *)M->xe->data + (size_t)d->nbc * e,
                      e);
    const double t1 = hk_dprof_now();
    if (d->nbc) {
        hk_vec xh = hk_dist_view(d, M->xe, 0, d->nbc * bs);
        HK_CALL(L->vec_gather(&xh, xl, d->bcol_dev, d->nbc, bs));
    }
    if (M->Aint) HK_CALL(part_apply(d, M->Aint, xl, y, st, 0, d->nint));
    const double t2 = hk_dprof_now();
    hk_dcomm_wait(d->dcomm);
    hk_dprof_exchange(HK_DPROF_A, 0, 0, 0, t1 - t0 + hk_dprof_now() - t2);
    if (M->Abnd) HK_CALL(part_apply(d, M->Abnd, M->xe, y, st, d->nint, d->nbnd));
    return 0;
}

/* y = A x, or with st (y NULL) the Chebyshev step with p = x: the halo exchange overlapping
 * the interior rows, then the boundary rows on [the owned columns they read, the ghosts]
 * (xe). xe's owned part is gathered from x before the interior rows' work, which writes the
 * step's vectors. */
static int dist_apply(hk_mat *A, const hk_vec *x, hk_vec *y, const hk_cheb_step *st)
{
    dist_mat *M = A->bdata;
    hk_dist *d = M->d;
    const hk_backend_ops *L = d->local;
    const int bs = d->bs;
    const size_t e = (A->prec == HK_FP64 ? sizeof(double) : sizeof(float)) * (size_t)bs;
    const int64_t ns = d->halo->send_off[d->halo->nsend];
    const hk_vec xl = hk_dist_view(d, x, 0, x->n);
    if (d->dcomm) {
        /* the others' devices wait for this process's part of the round: a failure here is
         * the end of the run */
        const int ierr = apply_device(d, M, A, &xl, y, st);
        if (ierr) hk_dcomm_fatal(d->dcomm, ierr);
        return 0;
    }
    /* pack and post: the neighbours' entries, then the receives into xe's ghost part */
    if (ns) HK_CALL(L->vec_gather(M->send, &xl, d->send_dev, ns, bs));
    void *send = M->send->data, *recv = (char *)M->xe->data + (size_t)d->nbc * e;
    /* HOOKE_DIST_PROFILE: the queued work, the staging (t0..t1, t3..) and the transport
     * (t1..t2, t2w..t3) */
    double drain = 0;
    const double t0 = d->host_memory ? hk_dprof_now() : hk_dprof_drain(L, &drain);
    if (!d->host_memory) {
        /* the download waits for the stream, so for the last round's upload from host_recv
         * too (an asynchronous copy from pinned memory); without one, the wait alone */
        if (ns)
            HK_CALL(L->copy_from(M->host_send, M->send->data, (size_t)ns * e));
        else if (d->nghost)
            HK_CALL(L->sync());
        send = M->host_send;
        recv = M->host_recv;
    }
    const double t1 = hk_dprof_now();
    HK_CALL(hk_halo_start(d->halo, send, recv, e));
    const double t2 = hk_dprof_now();
    /* the interior rows while the ghosts travel */
    if (d->nbc) {
        hk_vec xh = hk_dist_view(d, M->xe, 0, d->nbc * bs);
        HK_CALL(L->vec_gather(&xh, &xl, d->bcol_dev, d->nbc, bs));
    }
    if (M->Aint) HK_CALL(part_apply(d, M->Aint, &xl, y, st, 0, d->nint));
    const double t2w = hk_dprof_now();
    HK_CALL(hk_halo_wait(d->halo));
    const double t3 = hk_dprof_now();
    if (!d->host_memory && d->nghost)
        HK_CALL(L->copy_to((char *)M->xe->data + (size_t)d->nbc * e, M->host_recv,
                           (size_t)d->nghost * e));
    hk_dprof_exchange(HK_DPROF_A, 0, drain, t1 - t0 + hk_dprof_now() - t3, t2 - t1 + t3 - t2w);
    if (M->Abnd) HK_CALL(part_apply(d, M->Abnd, M->xe, y, st, d->nint, d->nbnd));
    return 0;
}

int hk_dist_mat_spmv(hk_mat *A, const hk_vec *x, hk_vec *y)
{
    HK_CHECK(A->bdata, HK_ERR_ARG, "distributed SpMV: matrix was not built");
    return dist_apply(A, x, y, NULL);
}

/* amg_cheb_step on the distributed operator: with a product, the SpMV's exchange and the
 * backend's step on the interior rows (p the owned entries), then on the boundary rows (p
 * their columns, xe); without one, the backend's step on each part's rows (no exchange). */
int hk_dist_amg_cheb_step(hk_mat *A, const hk_cheb_step *s)
{
    HK_CALL(hk_cheb_step_check(A, s));
    const dist_mat *M = A->bdata;
    const hk_dist *d = M->d;
    HK_CHECK(!s->D || d->bs % s->bs == 0, HK_ERR_ARG,
             "amg_cheb_step: node blocks of size %d across the distributed operator's blocks of "
             "size %d",
             s->bs, d->bs);
    if (s->p) return dist_apply(A, s->p, NULL, s);
    if (M->Aint) HK_CALL(part_apply(d, M->Aint, NULL, NULL, s, 0, d->nint));
    if (M->Abnd) HK_CALL(part_apply(d, M->Abnd, NULL, NULL, s, d->nint, d->nbnd));
    return 0;
}

int hk_dist_mat_scratch(hk_mat *A, hk_vec **t)
{
    dist_mat *M = A->bdata;
    if (!M->tmp) HK_CALL(vec_at_least(M->d->local, A->nrows, HK_FP64, &M->tmp));
    *t = M->tmp;
    return 0;
}
