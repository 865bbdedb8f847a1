/* pc=amg on several processes (dist_amg.c): a distributed block operator y = M x (dmat: a
 * level's coarse operator, P or R, with its halo plan and its interior rows computed while the
 * ghosts travel), made from host rows (dmat_create) or from rows already on the backend
 * (dmat_create_dev), and the small pieces the set-up shares: the host staging of its exchanges
 * (stage_get), copies and uploads to the process's backend, and the set-up's timing
 * (HOOKE_AMG_PROFILE). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "damg_impl.h"
#include "text.h"

/* This process's CPU seconds (all its threads): on a loaded machine the wall clock says more
 * about the neighbours than about the set-up. */
static double cpu_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Adds the wall and CPU seconds since t[0], t[1] to phase k and restarts them. */
void hk_damg_lap(double *ph, int k, double *t)
{
    const double now = hk_time(), c = cpu_time();
    ph[k] += now - t[0];
    ph[DAMG_NPHASES + k] += c - t[1];
    t[0] = now;
    t[1] = c;
}

/* step k's lap (st: the steps' seconds, NULL when not profiling: nothing done) */
void hk_damg_step_lap(const hk_backend_ops *be, double *st, int k, double *t)
{
    if (!st) return;
    be->sync();
    const double now = hk_time(), c = cpu_time();
    st[k] += now - t[0];
    st[DAMG_NSTEPS + k] += c - t[1];
    t[0] = now;
    t[1] = c;
}

void hk_damg_lap_start(double *t)
{
    t[0] = hk_time();
    t[1] = cpu_time();
}


static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t hk_damg_find_i64(const int64_t *v, int64_t n, int64_t g)
{
    const int64_t lo = hk_lower_bound_i64(v, 0, n, g);
    return lo < n && v[lo] == g ? lo : -1;
}

/* The ids lo + g marked in mark[0..span), ascending: *out (allocated), *n. By chunks on the
 * threads, each chunk's ids after the earlier chunks' (the same list on any thread count). */
static int marked_ids(const unsigned char *mark, int64_t lo, int64_t span, int64_t **out,
                      int64_t *n)
{
    const int64_t nch = 4 * (int64_t)omp_get_max_threads();
    int64_t *at = NULL;
    int ierr = 0;
    *out = NULL;
    *n = 0;
    HK_TRY(hk_calloc((size_t)nch + 1, sizeof *at, &at));
#pragma omp parallel for schedule(static, 1)
    for (int64_t t = 0; t < nch; t++) {
        int64_t k = 0;
        for (int64_t g = span * t / nch; g < span * (t + 1) / nch; g++)
            k += mark[g];
        at[t + 1] = k;
    }
    for (int64_t t = 0; t < nch; t++)
        at[t + 1] += at[t];
    HK_TRY(hk_malloc((size_t)(at[nch] + 1) * sizeof **out, out));
#pragma omp parallel for schedule(static, 1)
    for (int64_t t = 0; t < nch; t++) {
        int64_t k = at[t];
        for (int64_t g = span * t / nch; g < span * (t + 1) / nch; g++)
            if (mark[g]) (*out)[k++] = lo + g;
    }
    *n = at[nch];
fail:
    free(at);
    return ierr;
}

/* mark[g - lo] = 1 for g = v[0..n) (bytes written only where not yet: a value many entries
 * share is read, not written, on the other threads). */
static void mark_ids(unsigned char *mark, int64_t lo, const int64_t *v, int64_t n)
{
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < n; p++) {
        unsigned char was;
#pragma omp atomic read
        was = mark[v[p] - lo];
        if (!was) {
#pragma omp atomic write
            mark[v[p] - lo] = 1;
        }
    }
}

/* The distinct values of v[0..n) ascending, in place (*m of them): marked in a byte per value
 * between the smallest and the largest, then listed (linear, no sort). */
int hk_damg_sorted_unique(int64_t *v, int64_t n, int64_t *m)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN, *u = NULL;
    unsigned char *mark = NULL;
    int ierr = 0;
    *m = 0;
    if (!n) return 0;
#pragma omp parallel for schedule(static) reduction(min : lo) reduction(max : hi)
    for (int64_t p = 0; p < n; p++) {
        if (v[p] < lo) lo = v[p];
        if (v[p] > hi) hi = v[p];
    }
    HK_TRY(hk_calloc((size_t)(hi - lo + 1), sizeof *mark, &mark));
    mark_ids(mark, lo, v, n);
    HK_TRY(marked_ids(mark, lo, hi - lo + 1, &u, m));
    memcpy(v, u, (size_t)*m * sizeof *v);
fail:
    free(mark);
    free(u);
    return ierr;
}

/* memcpy by threads: the set-up's large copies (matrix values) are bandwidth-bound. */
void hk_damg_copy_par(void *dst, const void *src, size_t bytes)
{
    const size_t chunk = (size_t)1 << 20;
    const int64_t n = (int64_t)((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++) {
        const size_t o = (size_t)k * chunk;
        memcpy((char *)dst + o, (const char *)src + o, bytes - o < chunk ? bytes - o : chunk);
    }
}

/* A copy within the process's backend's memory: by threads on the host (hk_damg_copy_par). */
int hk_damg_copy_on(const hk_dist *d, void *dst, const void *src, size_t bytes)
{
    if (!d->host_memory) return d->local->copy(dst, src, bytes);
    hk_damg_copy_par(dst, src, bytes);
    return 0;
}

/* Host memory of the given size, not yet touched: the caller's threads write it first (the
 * cpu backend's alloc zeroes large arrays, a second pass over memory about to be copied). */
int hk_damg_host_untouched(size_t bytes, double **p)
{
    void *q = NULL;
    if (posix_memalign(&q, 64, (bytes + 63) & ~(size_t)63))
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                            "out of host memory allocating %zu bytes", bytes);
    *p = q;
    return 0;
}


/* Pageable host memory of the given size, touched by every thread (its pages in place before
 * a copy or a message writes it on one thread). */
static int stage_pageable(size_t bytes, void **p)
{
    double *q = NULL;
    HK_CALL(hk_damg_host_untouched(bytes, &q));
    const size_t chunk = (size_t)1 << 20;
    const int64_t n = (int64_t)((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++) {
        const size_t o = (size_t)k * chunk;
        memset((char *)q + o, 0, bytes - o < chunk ? bytes - o : chunk);
    }
    *p = q;
    return 0;
}

static void stage_release(const hk_dist *d, stage *s, int k)
{
    if (s->pinned[k])
        hk_dist_host_free(d, s->p[k]);
    else
        free(s->p[k]);
    s->p[k] = NULL;
    s->cap[k] = 0;
    s->pinned[k] = 0;
}

/* This set-up's kind of staging (HOOKE_AMG_STAGING: pageable, the default, or pinned where
 * the backend has pinned memory); buffers of the other kind are dropped. Collective (an
 * unknown value fails every process). */
int hk_damg_stage_kind(const hk_dist *d, stage *s)
{
    int pin = 0;
    HK_CALL(
        hk_comm_agree(d->comm, hk_env_switch("HOOKE_AMG_STAGING", "pinned", "page-locked memory",
                                             "pageable", "malloc's, the default", 0, &pin)));
    s->pin = pin && d->local->host_alloc;
    for (int k = 0; k < STAGE_COUNT; k++)
        if (s->p[k] && s->pinned[k] != s->pin) stage_release(d, s, k);
    return 0;
}

/* Buffer k of s with room for bytes (at least 64; grown, contents not kept, never shrunk). */
int hk_damg_stage_get(const hk_dist *d, stage *s, int k, size_t bytes, void **p)
{
    *p = NULL;
    if (bytes < 64) bytes = 64;
    if (bytes > s->cap[k]) {
        const double t0 = hk_time();
        stage_release(d, s, k);
        const size_t want = bytes + bytes / 8; /* a little room: the levels' sizes vary */
        if (s->pin)
            HK_CALL(hk_dist_host_alloc(d, want, &s->p[k]));
        else
            HK_CALL(stage_pageable(want, &s->p[k]));
        s->pinned[k] = (unsigned char)s->pin;
        s->cap[k] = want;
        s->t_alloc += hk_time() - t0;
        s->bytes += (double)want;
    }
    *p = s->p[k];
    return 0;
}

void hk_damg_stage_free(const hk_dist *d, stage *s)
{
    for (int k = 0; k < STAGE_COUNT; k++)
        stage_release(d, s, k);
    memset(s, 0, sizeof *s);
}

/* Copies between the process's backend and the staging s (host): where s is pageable, by the
 * backend's copies for pageable memory (copy_to_pageable, copy_from_pageable) where it has
 * them. s NULL: plain copies. */
int hk_damg_stage_down(const hk_dist *d, const stage *s, void *host, const void *src, size_t bytes)
{
    const hk_backend_ops *L = d->local;
    if (s && !s->pin && L->copy_from_pageable) return L->copy_from_pageable(host, src, bytes);
    return L->copy_from(host, src, bytes);
}

int hk_damg_stage_up(const hk_dist *d, const stage *s, void *dst, const void *host, size_t bytes)
{
    const hk_backend_ops *L = d->local;
    if (s && !s->pin && L->copy_to_pageable) return L->copy_to_pageable(dst, host, bytes);
    return L->copy_to(dst, host, bytes);
}

int hk_damg_vec_sized(const hk_backend_ops *be, int64_t n, hk_precision p, hk_vec **v)
{
    HK_CALL(hk_vec_create(be, n > 0 ? n : 1, p, v));
    (*v)->n = n;
    return 0;
}

/* The set-up's copies of its host arrays (malloc's memory) to and from the backend: by its
 * copies for pageable memory where it has them (on a device through its pinned buffers, every
 * host thread copying: the driver's own copy of pageable memory runs on one thread). */
int hk_damg_to_backend(const hk_backend_ops *be, void *dst, const void *h, size_t bytes)
{
    return be->copy_to_pageable ? be->copy_to_pageable(dst, h, bytes) : be->copy_to(dst, h, bytes);
}

int hk_damg_to_host(const hk_backend_ops *be, void *h, const void *src, size_t bytes)
{
    return be->copy_from_pageable ? be->copy_from_pageable(h, src, bytes)
                                  : be->copy_from(h, src, bytes);
}

int hk_damg_upload(const hk_backend_ops *be, const void *h, size_t bytes, void **dev)
{
    *dev = NULL;
    if (!bytes) return 0;
    HK_CALL(be->alloc(dev, bytes));
    return hk_damg_to_backend(be, *dev, h, bytes);
}

/* The set-up's matrices on the process's backend and back. On a host-memory backend (cpu)
 * a copy is the same arrays (a view) and hk_damg_free_copy frees nothing, so the CPU runs the same
 * code without copies; on a device the copies are uploads and downloads. */
int hk_damg_local_copy(const hk_dist *d, const hk_bmat *M, hk_bmat *D)
{
    const hk_backend_ops *L = d->local;
    if (d->host_memory) {
        *D = *M;
        return 0;
    }
    HK_CALL(hk_bmat_alloc(L, M->br, M->bc, M->nbrows, M->nbcols, M->nnzb, D));
    const int64_t bb = (int64_t)M->br * M->bc;
    int ierr = hk_damg_to_backend(L, D->rowptr, M->rowptr, (size_t)(M->nbrows + 1) * sizeof *M->rowptr);
    if (!ierr && M->nnzb)
        ierr = hk_damg_to_backend(L, D->colind, M->colind, (size_t)M->nnzb * sizeof(int32_t));
    if (!ierr && M->nnzb)
        ierr = hk_damg_to_backend(L, D->val, M->val, (size_t)(M->nnzb * bb) * sizeof(double));
    if (ierr) hk_bmat_free(D);
    return ierr;
}

/* Frees a hk_damg_local_copy or hk_damg_pattern_to_host (nothing where it is a view). */
void hk_damg_free_copy(const hk_dist *d, hk_bmat *M)
{
    if (!d->host_memory) hk_bmat_free(M);
    memset(M, 0, sizeof *M);
}

/* dst[k] = block idx[k] of src (k < n; blocks of bb doubles, nsrc of them), both on the
 * process's backend; idx on the host (uploaded on a device). */
int hk_damg_gather_blocks(const hk_dist *d, double *dst, const double *src, int64_t nsrc,
                          int64_t bb, const int32_t *idx, int64_t n)
{
    const hk_backend_ops *L = d->local;
    int32_t *idx_dev = NULL;
    if (!n) return 0;
    int ierr =
        d->host_memory ? 0 : hk_damg_upload(L, idx, (size_t)n * sizeof *idx, (void **)&idx_dev);
    const hk_vec from = {.be = L, .n = nsrc * bb, .prec = HK_FP64, .data = (void *)src};
    hk_vec to = {.be = L, .n = n * bb, .prec = HK_FP64, .data = dst};
    if (!ierr) ierr = L->vec_gather(&to, &from, d->host_memory ? idx : idx_dev, n, (int)bb);
    if (idx_dev) L->dealloc(idx_dev);
    return ierr;
}

/* n doubles of host memory h on the process's backend (a fresh array either way). */
static int upload_f64(const hk_backend_ops *L, const double *h, int64_t n, double **dev)
{
    HK_CALL(L->alloc((void **)dev, (size_t)(n > 0 ? n : 1) * sizeof **dev));
    return n ? hk_damg_to_backend(L, *dev, h, (size_t)n * sizeof *h) : 0;
}

/* A block matrix's pattern arrays on be (rowptr, colind); val left NULL for the caller. */
int hk_damg_pattern_alloc(const hk_backend_ops *be, int br, int bc, int64_t nbrows, int64_t nbcols,
                          int64_t nnzb, hk_bmat *A)
{
    /* two allocations, not hk_bmat_alloc's three and a free (a device's free waits for it) */
    const hk_bmat S = {.be = be, .br = br, .bc = bc, .nbrows = nbrows, .nbcols = nbcols,
                       .nnzb = nnzb};
    *A = S;
    int ierr = be->alloc((void **)&A->rowptr, (size_t)(nbrows + 1) * sizeof *A->rowptr);
    if (!ierr) ierr = be->alloc((void **)&A->colind, (size_t)(nnzb + 1) * sizeof *A->colind);
    if (ierr) hk_bmat_free(A);
    return ierr;
}

/* A matrix on the process's backend with its pattern on the host (H; rowptr and colind
 * downloaded, val NULL); on the cpu a view of D, values included. hk_damg_free_copy frees it. */
int hk_damg_pattern_to_host(const hk_dist *d, const hk_bmat *D, hk_bmat *H)
{
    if (d->host_memory) {
        *H = *D;
        return 0;
    }
    HK_CALL(hk_damg_pattern_alloc(&hk_backend_cpu, D->br, D->bc, D->nbrows, D->nbcols, D->nnzb, H));
    int ierr =
        hk_damg_to_host(d->local, H->rowptr, D->rowptr, (size_t)(D->nbrows + 1) * sizeof *H->rowptr);
    if (!ierr && D->nnzb)
        ierr = hk_damg_to_host(d->local, H->colind, D->colind, (size_t)D->nnzb * sizeof *H->colind);
    if (ierr) hk_bmat_free(H);
    return ierr;
}

void hk_damg_dmat_destroy(dmat *m)
{
    if (!m) return;
    const hk_backend_ops *L = m->d->local;
    hk_halo_destroy(m->halo);
    free(m->ghost);
    hk_bmat_free(&m->M);
    if (m->v32) L->dealloc(m->v32);
    if (m->send_dev) L->dealloc(m->send_dev);
    if (m->bcol_dev) L->dealloc(m->bcol_dev);
    if (m->ypos_dev) L->dealloc(m->ypos_dev);
    hk_vec_destroy(m->ytmp);
    hk_vec_destroy(m->send);
    hk_vec_destroy(m->xe);
    hk_dist_host_free(m->d, m->host_send);
    hk_dist_host_free(m->d, m->host_recv);
    free(m);
}

/* The distinct columns of gcol[0..nnz) outside [row0, row0 + nown), ascending: *ghost
 * (allocated), *ng. Linear and on the threads, as the layout's ghosts (dist.c): each such
 * column marked in a byte per global id (up to the largest one), then the marks read by
 * chunks, each chunk's columns after the earlier chunks' (the same list on any thread count). */
int hk_damg_ghost_columns(int64_t nnz, const int64_t *gcol, int64_t row0, int64_t nown,
                          int64_t **ghost, int64_t *ng)
{
    int64_t top = -1;
    unsigned char *mark = NULL;
    int ierr = 0;
    *ghost = NULL;
    *ng = 0;
#pragma omp parallel for schedule(static) reduction(max : top)
    for (int64_t p = 0; p < nnz; p++)
        if ((gcol[p] < row0 || gcol[p] >= row0 + nown) && gcol[p] > top) top = gcol[p];
    HK_TRY(hk_calloc((size_t)top + 2, sizeof *mark, &mark));
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < nnz; p++)
        if (gcol[p] < row0 || gcol[p] >= row0 + nown) {
            unsigned char was; /* written only where not yet: read by the other threads */
#pragma omp atomic read
            was = mark[gcol[p]];
            if (!was) {
#pragma omp atomic write
                mark[gcol[p]] = 1;
            }
        }
    HK_TRY(marked_ids(mark, 0, top + 1, ghost, ng));
fail:
    free(mark);
    return ierr;
}

/* Row flags of local_columns' first pass. */
enum { ROW_BOUNDARY = 1, ROW_UNSORTED = 2 };

/* A column's local number: an owned one's position among the owned columns read (pos, by x's
 * entry), a ghost's nbc + its position among the sorted ghosts. */
static inline int32_t local_col(const dmat *m, int64_t g, int64_t in_row0, int64_t in_nown,
                                const int32_t *in_inv, const int32_t *pos)
{
    if (g >= in_row0 && g < in_row0 + in_nown) {
        const int64_t o = g - in_row0;
        return pos[in_inv ? in_inv[o] : o];
    }
    return (int32_t)(m->nbc + hk_damg_find_i64(m->ghost, m->ng, g));
}

/* The local matrix's pattern from the global columns gcol (rowptr over nrows rows; the
 * columns of a row distinct): m->nbc and *bcol, the owned columns read (ascending in x's
 * order), and the rows with their columns local (owned first, then nbc + the ghost's
 * position), each row sorted; split (and rows of both kinds): interior rows (those reading no
 * ghost) first, then the boundary rows, each group in its order, a row's blocks in their
 * sorted order (the same sums). Two passes over the blocks: the first marks the owned columns
 * read and flags each row (boundary, unsorted: known from the global columns, whose order the
 * local numbering keeps within the owned ones and within the ghosts), the second writes each
 * row where it goes, sorting only the rows that need it (on the thread's scratch). Out, all
 * allocated: *lcol (nnz); *src each block's source position, NULL where no block moved; *ypos
 * each row's new position and *nrp the new rows, NULL where not split; *nint the interior
 * rows. The bytes do not depend on the thread count. */
static int local_columns(dmat *m, int64_t nrows, const int64_t *rowptr, const int64_t *gcol,
                         int64_t in_row0, int64_t in_nown, const int32_t *in_inv, int split,
                         int32_t **bcol, int32_t **lcol, int32_t **src, int32_t **ypos,
                         int64_t **nrp, int64_t *nint)
{
    const int64_t nnz = rowptr[nrows], nch = 4 * (int64_t)omp_get_max_threads();
    int ierr = 0;
    int64_t ni = 0, unsorted = 0, maxlen = 0, *chunk = NULL, *key = NULL;
    int32_t *pos = NULL;
    unsigned char *flag = NULL;
    *bcol = *lcol = *src = *ypos = NULL;
    *nrp = NULL;
    *nint = 0;
    HK_TRY(hk_malloc((size_t)(in_nown + 1) * sizeof *pos, &pos));
    HK_TRY(hk_malloc((size_t)(nrows + 1) * sizeof *flag, &flag));
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < in_nown; j++)
        pos[j] = -1;
    /* every thread writes the same mark, and only where it is not there yet: a column read by
     * many rows is read, not written, on the other threads (no cache line taken from them).
     * The order key of a column: an owned one's entry in x (pos ascends with it), a ghost's
     * global id after every owned one (the ghosts' positions ascend with it) */
#pragma omp parallel for schedule(static) reduction(+ : ni, unsorted) reduction(max : maxlen)
    for (int64_t i = 0; i < nrows; i++) {
        int bnd = 0, uns = 0;
        int64_t prev = -1;
        for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++) {
            const int64_t g = gcol[p];
            int64_t k;
            if (g >= in_row0 && g < in_row0 + in_nown) {
                const int64_t o = g - in_row0;
                k = in_inv ? in_inv[o] : o;
                int32_t was;
#pragma omp atomic read
                was = pos[k];
                if (was != 0) {
#pragma omp atomic write
                    pos[k] = 0;
                }
            } else {
                bnd = 1;
                k = in_nown + (g < in_row0 ? g : g - in_nown);
            }
            uns |= k <= prev;
            prev = k;
        }
        flag[i] = (unsigned char)(bnd * ROW_BOUNDARY + uns * ROW_UNSORTED);
        ni += !bnd;
        unsorted += uns;
        if (uns && rowptr[i + 1] - rowptr[i] > maxlen) maxlen = rowptr[i + 1] - rowptr[i];
    }
    HK_TRY(hk_malloc((size_t)(in_nown + 1) * sizeof **bcol, bcol));
    m->nbc = 0;
    for (int64_t j = 0; j < in_nown; j++)
        if (pos[j] == 0) {
            (*bcol)[m->nbc] = (int32_t)j;
            pos[j] = (int32_t)m->nbc++;
        }
    split = split && m->ng && nrows && ni > 0 && ni < nrows;
    const int moved = split || unsorted;
    HK_TRY(hk_malloc((size_t)(nnz + 1) * sizeof **lcol, lcol));
    if (moved) HK_TRY(hk_malloc((size_t)(nnz + 1) * sizeof **src, src));
    const int64_t *to = rowptr; /* the rows' new first blocks, by new position */
    if (split) { /* the new positions by chunks of rows: each chunk after the earlier ones' */
        HK_TRY(hk_malloc((size_t)(nrows + 1) * sizeof **ypos, ypos));
        HK_TRY(hk_malloc((size_t)(nrows + 1) * sizeof **nrp, nrp));
        HK_TRY(hk_calloc((size_t)nch + 1, sizeof *chunk, &chunk));
#pragma omp parallel for schedule(static, 1)
        for (int64_t t = 0; t < nch; t++) {
            int64_t k = 0;
            for (int64_t i = nrows * t / nch; i < nrows * (t + 1) / nch; i++)
                k += !(flag[i] & ROW_BOUNDARY);
            chunk[t + 1] = k;
        }
        for (int64_t t = 0; t < nch; t++)
            chunk[t + 1] += chunk[t];
#pragma omp parallel for schedule(static, 1)
        for (int64_t t = 0; t < nch; t++) {
            const int64_t i0 = nrows * t / nch;
            int64_t ki = chunk[t], kb = ni + (i0 - chunk[t]);
            for (int64_t i = i0; i < nrows * (t + 1) / nch; i++) {
                const int64_t at = flag[i] & ROW_BOUNDARY ? kb++ : ki++;
                (*ypos)[i] = (int32_t)at;
                (*nrp)[at + 1] = rowptr[i + 1] - rowptr[i];
            }
        }
        (*nrp)[0] = 0;
        for (int64_t i = 0; i < nrows; i++)
            (*nrp)[i + 1] += (*nrp)[i];
        to = *nrp;
        *nint = ni;
    }
    const int nt = omp_get_max_threads();
    HK_TRY(hk_malloc((size_t)(maxlen + 1) * nt * sizeof *key, &key));
#pragma omp parallel num_threads(nt)
    {
        int64_t *kt = key + (maxlen + 1) * omp_get_thread_num();
#pragma omp for schedule(static)
        for (int64_t i = 0; i < nrows; i++) {
            const int64_t p0 = rowptr[i], len = rowptr[i + 1] - p0;
            const int64_t q0 = split ? to[(*ypos)[i]] : p0;
            if (!(flag[i] & ROW_UNSORTED)) {
                for (int64_t k = 0; k < len; k++) {
                    (*lcol)[q0 + k] = local_col(m, gcol[p0 + k], in_row0, in_nown, in_inv, pos);
                    if (moved) (*src)[q0 + k] = (int32_t)(p0 + k);
                }
                continue;
            }
            for (int64_t k = 0; k < len; k++) /* column in the high bits, position in the low */
                kt[k] = (int64_t)local_col(m, gcol[p0 + k], in_row0, in_nown, in_inv, pos) << 32 |
                        k;
            qsort(kt, (size_t)len, sizeof *kt, cmp_i64);
            for (int64_t k = 0; k < len; k++) {
                (*lcol)[q0 + k] = (int32_t)(kt[k] >> 32);
                (*src)[q0 + k] = (int32_t)(p0 + (kt[k] & 0xffffffff));
            }
        }
    }
fail:
    free(pos);
    free(flag);
    free(chunk);
    free(key);
    if (ierr) {
        free(*bcol);
        free(*lcol);
        free(*src);
        free(*ypos);
        free(*nrp);
        *bcol = *lcol = *src = *ypos = NULL;
        *nrp = NULL;
    }
    return ierr;
}

/* A new operator of nrows block rows (br x bc blocks, nnz of them in all), nothing made yet. */
static int dmat_new(const hk_dist *d, hk_precision prec, int64_t nrows, int br, int bc,
                    int64_t nnz, dmat **out)
{
    *out = NULL;
    HK_CHECK(nnz <= INT32_MAX, HK_ERR_UNSUPPORTED,
             "pc=amg: a transfer or coarse operator of %lld blocks on one process is more than "
             "32-bit block indices hold; run on more processes",
             (long long)nnz);
    dmat *m = NULL;
    HK_CALL(hk_calloc(1, sizeof *m, &m));
    m->d = d;
    m->nrows = nrows;
    m->br = br;
    m->bc = bc;
    m->prec = prec;
    *out = m;
    return 0;
}

/* m's halo plan from its ghosts (m->ghost, m->ng) over x's owned range [in_row0, in_row0 +
 * in_nown), its send list in x's entries (in_inv: an owned global id's offset to x's entry,
 * NULL: the same). Collective. */
static int dmat_plan(dmat *m, int64_t in_row0, int64_t in_nown, const int32_t *in_inv)
{
    HK_CALL(hk_halo_create(m->d->comm, in_row0, in_nown, m->ng, m->ghost, &m->halo));
    m->ns = m->halo->send_off[m->halo->nsend];
    if (in_inv)
        for (int64_t j = 0; j < m->ns; j++)
            m->halo->send_idx[j] = in_inv[m->halo->send_idx[j]];
    return 0;
}

/* m's values on the backend in M's order (its pattern made): block q is block src[q] (src on
 * the backend; NULL: the blocks in their order) of val (host) or val_dev (the same on the
 * backend where they are there already, else NULL; on a device val may then be NULL), into
 * M.val (fp64) or v32 (fp32: converted by the gather itself, each entry rounded as
 * vec_convert rounds it, in one pass without a second array). */
static int dmat_values(dmat *m, const double *val, const double *val_dev, const int32_t *src)
{
    const hk_dist *d = m->d;
    const hk_backend_ops *L = d->local;
    const hk_precision prec = m->prec;
    const int64_t nnz = m->M.nnzb, bb = (int64_t)m->br * m->bc;
    double *raw_dev = NULL;
    const double *from_val = d->host_memory ? val : val_dev;
    const size_t vbytes = (size_t)(nnz * bb) * (prec == HK_FP32 ? sizeof(float) : sizeof(double));
    int ierr = L->alloc(prec == HK_FP32 ? (void **)&m->v32 : (void **)&m->M.val, vbytes + 8);
    void *dst = prec == HK_FP32 ? (void *)m->v32 : (void *)m->M.val;
    if (!ierr && nnz && !from_val && !src && prec == HK_FP64)
        ierr = hk_damg_to_backend(L, m->M.val, val, (size_t)(nnz * bb) * sizeof *val);
    else if (!ierr && nnz) {
        if (!from_val) ierr = upload_f64(L, val, nnz * bb, &raw_dev);
        hk_vec from = {
            .be = L, .n = nnz * bb, .prec = HK_FP64, .data = from_val ? (void *)from_val : raw_dev};
        hk_vec to = {.be = L, .n = nnz * bb, .prec = prec, .data = dst};
        if (!ierr)
            ierr = src               ? L->vec_gather(&to, &from, src, nnz, (int)bb)
                   : prec == HK_FP32 ? L->vec_convert(&to, &from)
                                     : L->vec_copy(&to, &from);
    }
    if (raw_dev) L->dealloc(raw_dev);
    return ierr;
}

/* m's send list on the backend, its vectors (the send buffer, x extended, the split rows'
 * results where split) and, on a device, the host staging of its halo. */
static int dmat_buffers(dmat *m)
{
    const hk_dist *d = m->d;
    const hk_backend_ops *L = d->local;
    const hk_precision prec = m->prec;
    int ierr = hk_damg_upload(L, m->halo->send_idx, (size_t)m->ns * sizeof(int32_t),
                              (void **)&m->send_dev);
    if (!ierr) ierr = hk_damg_vec_sized(L, m->ns * m->bc, prec, &m->send);
    if (!ierr) ierr = hk_damg_vec_sized(L, (m->nbc + m->ng) * m->bc, prec, &m->xe);
    if (!ierr && m->nint) ierr = hk_damg_vec_sized(L, m->nrows * m->br, prec, &m->ytmp);
    const size_t e = (prec == HK_FP64 ? sizeof(double) : sizeof(float)) * (size_t)m->bc;
    if (!ierr && !d->host_memory)
        ierr = hk_dist_host_alloc(d, (size_t)(m->ns + 1) * e, &m->host_send);
    if (!ierr && !d->host_memory)
        ierr = hk_dist_host_alloc(d, (size_t)(m->ng + 1) * e, &m->host_recv);
    return ierr;
}

/* The operator of nrows block rows (br x bc blocks) with global columns gcol (rowptr over
 * them), values val (host) and val_dev (the same on the backend where they are there
 * already, else NULL; on a device val may then be NULL), x's owned range
 * [in_row0, in_row0 + in_nown); in_inv maps an owned global id's offset to x's entry (NULL:
 * the same). split: its rows interior first (local_columns), so that hk_damg_dmat_spmv computes
 * them while the ghosts travel. Collective (the halo plan). */
int hk_damg_dmat_create(const hk_dist *d, hk_precision prec, int64_t nrows, int br, int bc,
                        const int64_t *rowptr, const int64_t *gcol, const double *val,
                        const double *val_dev, int64_t in_row0, int64_t in_nown,
                        const int32_t *in_inv, int split, double *st, dmat **out)
{
    double t[2];
    hk_damg_lap_start(t);
    const hk_backend_ops *L = d->local;
    const int64_t nnz = rowptr[nrows];
    int ierr = 0;
    int32_t *bcol = NULL, *lcol = NULL, *src = NULL, *src_dev = NULL, *ypos = NULL;
    int64_t *srp = NULL, nint = 0;
    dmat *m = NULL;
    *out = NULL;
    ierr = dmat_new(d, prec, nrows, br, bc, nnz, &m);
    if (!ierr) ierr = hk_damg_ghost_columns(nnz, gcol, in_row0, in_nown, &m->ghost, &m->ng);
    HK_TRY(hk_comm_agree(d->comm, ierr));
    HK_TRY(dmat_plan(m, in_row0, in_nown, in_inv));
    hk_damg_step_lap(L, st, ST_OP_HALO, t);
    /* the local matrix's columns [the owned ones read, then the ghosts], each row sorted and
     * the rows split where asked on the host; the values go to the backend as they are and
     * are put in that order there (one gather), so they are neither copied nor moved on the
     * host */
    ierr = local_columns(m, nrows, rowptr, gcol, in_row0, in_nown, in_inv, split, &bcol, &lcol,
                         &src, &ypos, &srp, &nint);
    hk_damg_step_lap(L, st, ST_OP_COLUMNS, t);
    if (ypos) rowptr = srp;
    if (!ierr) ierr = hk_damg_pattern_alloc(L, br, bc, nrows, m->nbc + m->ng, nnz, &m->M);
    if (!ierr) ierr = hk_damg_to_backend(L, m->M.rowptr, rowptr, (size_t)(nrows + 1) * sizeof(int64_t));
    if (!ierr && nnz) ierr = hk_damg_to_backend(L, m->M.colind, lcol, (size_t)nnz * sizeof(int32_t));
    if (!ierr && src && !d->host_memory)
        ierr = hk_damg_upload(L, src, (size_t)nnz * sizeof *src, (void **)&src_dev);
    if (!ierr) ierr = dmat_values(m, val, val_dev, d->host_memory ? src : src_dev);
    if (!ierr)
        ierr = hk_damg_upload(L, bcol, (size_t)m->nbc * sizeof(int32_t), (void **)&m->bcol_dev);
    if (!ierr && ypos) {
        m->nint = nint;
        m->nzint = srp[nint];
        ierr = hk_damg_upload(L, ypos, (size_t)nrows * sizeof *ypos, (void **)&m->ypos_dev);
    }
    if (!ierr) ierr = dmat_buffers(m);
    HK_TRY(hk_comm_agree(d->comm, ierr));
    hk_damg_step_lap(L, st, ST_OP_UPLOAD, t);
    *out = m;
    m = NULL;
fail:
    free(bcol);
    free(lcol);
    free(src);
    free(ypos);
    free(srp);
    if (src_dev) L->dealloc(src_dev);
    hk_damg_dmat_destroy(m);
    return ierr;
}

/* The operator of nrows block rows (br x bc blocks, nnz) made from its blocks on the
 * backend, where local_columns' host work is one backend op (dist_local_pattern, the same
 * pattern): row i's blocks col[rowptr[i] - rowptr[0] ..) with values val_dev at the same
 * positions, column j read as local column map[j] ([the nbc owned columns read, bcol_dev
 * their entries in x ascending], then the ghosts, ghost: their ng global ids ascending);
 * rowptr, col, map, val_dev on the backend. ghost and bcol_dev are taken (freed here, also on
 * a failure). x's owned range and in_inv, split and the result as hk_damg_dmat_create's; t: the
 * step's start (HOOKE_AMG_PROFILE's "halo plans" count from it). Collective. */
int hk_damg_dmat_create_dev(const hk_dist *d, hk_precision prec, int64_t nrows, int br, int bc,
                            int64_t nnz, const int64_t *rowptr, const int32_t *col,
                            const int32_t *map, const double *val_dev, int64_t nbc,
                            int32_t *bcol_dev, int64_t *ghost, int64_t ng, int64_t in_row0,
                            int64_t in_nown, const int32_t *in_inv, int split, double *st,
                            double *t, dmat **out)
{
    const hk_backend_ops *L = d->local;
    int32_t *src = NULL, *ypos = NULL;
    dmat *m = NULL;
    *out = NULL;
    int ierr = dmat_new(d, prec, nrows, br, bc, nnz, &m);
    if (!ierr) {
        m->ghost = ghost;
        m->ng = ng;
        m->nbc = nbc;
        m->bcol_dev = bcol_dev;
    } else {
        free(ghost);
        if (bcol_dev) L->dealloc(bcol_dev);
    }
    HK_TRY(hk_comm_agree(d->comm, ierr));
    HK_TRY(dmat_plan(m, in_row0, in_nown, in_inv));
    hk_damg_step_lap(L, st, ST_OP_HALO, t);
    split = split && m->ng && nrows;
    ierr = hk_damg_pattern_alloc(L, br, bc, nrows, m->nbc + m->ng, nnz, &m->M);
    if (!ierr) ierr = L->alloc((void **)&src, (size_t)(nnz + 1) * sizeof *src);
    if (!ierr && split) ierr = L->alloc((void **)&ypos, (size_t)(nrows + 1) * sizeof *ypos);
    if (!ierr)
        ierr = L->dist_local_pattern(nrows, rowptr, col, map, nbc, split, m->M.rowptr,
                                     m->M.colind, src, ypos, &m->nint);
    if (!ierr && m->nint) {
        ierr = L->copy_from(&m->nzint, m->M.rowptr + m->nint, sizeof m->nzint);
        m->ypos_dev = ypos;
        ypos = NULL;
    }
    hk_damg_step_lap(L, st, ST_OP_COLUMNS, t);
    if (!ierr) ierr = dmat_values(m, val_dev, val_dev, src); /* on the cpu val_dev is the host's */
    if (!ierr) ierr = dmat_buffers(m);
    HK_TRY(hk_comm_agree(d->comm, ierr));
    hk_damg_step_lap(L, st, ST_OP_UPLOAD, t);
    *out = m;
    m = NULL;
fail:
    if (src) L->dealloc(src);
    if (ypos) L->dealloc(ypos);
    hk_damg_dmat_destroy(m);
    return ierr;
}

/* The owned columns gathered into xe and, when M is split (dmat_split), the interior rows
 * into ytmp: the work queued while the ghosts travel. */
static int dmat_interior(dmat *m, const hk_vec *xl)
{
    const hk_dist *d = m->d;
    const hk_backend_ops *L = d->local;
    if (m->nbc) {
        hk_vec xh = hk_dist_view(d, m->xe, 0, m->nbc * m->bc);
        HK_CALL(L->vec_gather(&xh, xl, m->bcol_dev, m->nbc, m->bc));
    }
    if (!m->nint) return 0;
    hk_bmat Mi = m->M;
    Mi.nbrows = m->nint;
    Mi.nnzb = m->nzint;
    hk_vec yi = hk_dist_view(d, m->ytmp, 0, m->nint * m->br);
    return L->bmat_spmv(&Mi, m->v32, m->xe, &yi);
}

/* The rows left once the ghosts are in xe: all of them, or the boundary rows and the rows put
 * in y's order. */
static int dmat_rest(dmat *m, hk_vec *y)
{
    const hk_dist *d = m->d;
    const hk_backend_ops *L = d->local;
    if (!m->nrows) return 0;
    hk_vec yl = hk_dist_view(d, y, 0, y->n);
    if (!m->nint) return L->bmat_spmv(&m->M, m->v32, m->xe, &yl);
    hk_bmat Mb = m->M;
    Mb.nbrows = m->nrows - m->nint;
    Mb.rowptr = m->M.rowptr + m->nint;
    Mb.nnzb = m->M.nnzb - m->nzint;
    hk_vec yb = hk_dist_view(d, m->ytmp, m->nint * m->br, Mb.nbrows * m->br);
    HK_CALL(L->bmat_spmv(&Mb, m->v32, m->xe, &yb));
    return L->vec_gather(&yl, m->ytmp, m->ypos_dev, m->nrows, m->br);
}

/* y = M x with the device transport (dist.comm=nccl): everything queued, the round on the
 * transport's stream overlapping the interior rows, no host wait (as the level-0 operator's). */
static int dmat_spmv_device(dmat *m, const hk_vec *xl, hk_vec *y)
{
    const hk_dist *d = m->d;
    const size_t e = (m->prec == HK_FP64 ? sizeof(double) : sizeof(float)) * (size_t)m->bc;
    if (m->ns) HK_CALL(d->local->vec_gather(m->send, xl, m->send_dev, m->ns, m->bc));
    const double t0 = hk_dprof_now();
    hk_dcomm_exchange(d->dcomm, m->halo, m->send->data, (char *)m->xe->data + (size_t)m->nbc * e,
                      e);
    const double t1 = hk_dprof_now();
    HK_CALL(dmat_interior(m, xl));
    const double t2 = hk_dprof_now();
    hk_dcomm_wait(d->dcomm);
    hk_dprof_exchange(m->prof_kind, m->prof_level, 0, 0, t1 - t0 + hk_dprof_now() - t2);
    return dmat_rest(m, y);
}

/* y = M x; x, y on the distributed table (their owned entries). */
int hk_damg_dmat_spmv(void *op, const hk_vec *x, hk_vec *y)
{
    dmat *m = op;
    const hk_dist *d = m->d;
    const hk_backend_ops *L = d->local;
    const size_t e = (m->prec == HK_FP64 ? sizeof(double) : sizeof(float)) * (size_t)m->bc;
    const hk_vec xl = hk_dist_view(d, x, 0, x->n);
    if (d->dcomm) {
        /* the others' devices wait for this process's part of the round: a failure here is
         * the end of the run */
        const int ierr = dmat_spmv_device(m, &xl, y);
        if (ierr) hk_dcomm_fatal(d->dcomm, ierr);
        return 0;
    }
    if (m->ns) HK_CALL(L->vec_gather(m->send, &xl, m->send_dev, m->ns, m->bc));
    void *send = m->send->data, *recv = (char *)m->xe->data + (size_t)m->nbc * e;
    /* HOOKE_DIST_PROFILE: the queued work, the staging (t0..t1, t3..) and the transport
     * (t1..t2, t2w..t3) */
    double drain = 0;
    const double t0 = d->host_memory ? hk_dprof_now() : hk_dprof_drain(L, &drain);
    if (!d->host_memory) {
        /* the download's wait covers the last round's upload from host_recv (as the level-0
         * operator's) */
        if (m->ns)
            HK_CALL(L->copy_from(m->host_send, m->send->data, (size_t)m->ns * e));
        else if (m->ng)
            HK_CALL(L->sync());
        send = m->host_send;
        recv = m->host_recv;
    }
    const double t1 = hk_dprof_now();
    HK_CALL(hk_halo_start(m->halo, send, recv, e));
    const double t2 = hk_dprof_now();
    HK_CALL(dmat_interior(m, &xl)); /* while the ghosts travel */
    const double t2w = hk_dprof_now();
    HK_CALL(hk_halo_wait(m->halo));
    const double t3 = hk_dprof_now();
    if (!d->host_memory && m->ng)
        HK_CALL(
            L->copy_to((char *)m->xe->data + (size_t)m->nbc * e, m->host_recv, (size_t)m->ng * e));
    hk_dprof_exchange(m->prof_kind, m->prof_level, drain, t1 - t0 + hk_dprof_now() - t3,
                      t2 - t1 + t3 - t2w);
    return dmat_rest(m, y);
}
