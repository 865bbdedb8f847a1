/* The parts of a distributed hooke run (docs/parallel.md). Rank 0 partitions the cells of the
 * whole mesh (METIS on the dual graph of their corners, or contiguous blocks), gives every node
 * to the lowest part among its cells, numbers the nodes part after part (the solver's global
 * numbering) and builds each part: its owned nodes, the ghost layer of its cells, its boundary
 * facets and nodes, and the prepared supports and loads of its nodes; then sends its arrays. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "marked.h"
#include "psort.h"
#include "threads.h"
#include "run_part.h"

#ifdef HOOKE_HAVE_METIS
#include <metis.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

enum { TAG_PART = 7301 };

void hk_part_free(hk_part *pt)
{
    if (!pt) return;
    hk_mesh_free(&pt->mesh);
    free(pt->gid);
    free(pt->out_cell);
    free(pt->fixed);
    free(pt->u_fixed);
    free(pt->f_ext);
    free(pt->node_dT);
    memset(pt, 0, sizeof *pt);
}

/* ---- sending and receiving -------------------------------------------------------------- */

/* A part goes as a list of its arrays, each its own message (hk_comm_send_buf): no packed copy
 * on rank 0, and each array arrives in a buffer of its own that the received part keeps (a
 * part is hundreds of megabytes at millions of DOFs; copying it into one buffer and out again
 * cost as much as sending it). The first message is the number of arrays (none: rank 0 could
 * not make the part). */
typedef struct pseg {
    const void *p;
    size_t n;
} pseg;

typedef struct plist {
    pseg *seg;
    int n, cap;
    int64_t head[6]; /* dim, nnodes, nown, row0, nglobal, ncells_global */
} plist;

/* Append an array (it must stay in place until sent). */
static int put(plist *b, const void *data, size_t bytes)
{
    if (b->n == b->cap) {
        const int cap = b->cap ? 2 * b->cap : 64;
        pseg *q = realloc(b->seg, (size_t)cap * sizeof *q);
        HK_CHECK(q, HK_ERR_MEMORY, "out of host memory listing a part's arrays");
        b->seg = q;
        b->cap = cap;
    }
    b->seg[b->n].p = data;
    b->seg[b->n++].n = bytes;
    return 0;
}

typedef struct rseg {
    void *p;
    size_t n;
} rseg;

typedef struct preader {
    rseg *seg;
    int n, next;
} preader;

/* The next array: the received buffer itself in *out (NULL when empty, the caller's now) and
 * its size. */
static int get(preader *r, void **out, size_t *bytes)
{
    *out = NULL;
    HK_CHECK(r->next < r->n, HK_ERR_INTERNAL, "a received part is truncated");
    rseg *g = &r->seg[r->next++];
    if (bytes) *bytes = g->n;
    *out = g->p;
    g->p = NULL;
    return 0;
}

/* The next value of exactly `bytes` bytes. */
static int get_val(preader *r, void *dst, size_t bytes)
{
    void *tmp = NULL;
    size_t n = 0;
    HK_CALL(get(r, &tmp, &n));
    const int ok = n == bytes;
    if (ok && n) memcpy(dst, tmp, n);
    free(tmp);
    HK_CHECK(ok, HK_ERR_INTERNAL, "a received part has a field of %zu bytes, not %zu", n, bytes);
    return 0;
}

static int put_elems(plist *b, const hk_elems *e)
{
    const int64_t nref = e->n ? e->ptr[e->n] : 0;
    HK_CALL(put(b, &e->n, sizeof e->n));
    HK_CALL(put(b, e->type, (size_t)e->n * sizeof *e->type));
    HK_CALL(put(b, e->ptr, e->ptr ? (size_t)(e->n + 1) * sizeof *e->ptr : 0));
    HK_CALL(put(b, e->nodes, (size_t)nref * sizeof *e->nodes));
    return put(b, e->tag, e->tag ? (size_t)e->n * sizeof *e->tag : 0);
}

static int get_elems(preader *r, hk_elems *e)
{
    memset(e, 0, sizeof *e);
    HK_CALL(get_val(r, &e->n, sizeof e->n));
    HK_CALL(get(r, (void **)&e->type, NULL));
    HK_CALL(get(r, (void **)&e->ptr, NULL));
    HK_CALL(get(r, (void **)&e->nodes, NULL));
    return get(r, (void **)&e->tag, NULL);
}

static int put_group(plist *b, const hk_group *g)
{
    HK_CALL(put(b, g->name, sizeof g->name));
    HK_CALL(put(b, &g->dim, sizeof g->dim));
    HK_CALL(put(b, &g->tag, sizeof g->tag));
    HK_CALL(put_elems(b, &g->elems));
    HK_CALL(put(b, &g->nnodes, sizeof g->nnodes));
    return put(b, g->nodes, (size_t)g->nnodes * sizeof *g->nodes);
}

static int get_group(preader *r, hk_group *g)
{
    memset(g, 0, sizeof *g);
    HK_CALL(get_val(r, g->name, sizeof g->name));
    HK_CALL(get_val(r, &g->dim, sizeof g->dim));
    HK_CALL(get_val(r, &g->tag, sizeof g->tag));
    HK_CALL(get_elems(r, &g->elems));
    HK_CALL(get_val(r, &g->nnodes, sizeof g->nnodes));
    return get(r, (void **)&g->nodes, NULL);
}

/* The part's arrays into b (emptied first; b->head is the first). */
static int list_part(const hk_part *pt, plist *b)
{
    const hk_mesh *m = &pt->mesh;
    const int64_t nn = m->nnodes, ndof = nn * m->dim;
    const int64_t head[6] = {m->dim, nn, pt->nown, pt->row0, pt->nglobal, pt->ncells_global};
    b->n = 0;
    memcpy(b->head, head, sizeof head);
    HK_CALL(put(b, b->head, sizeof b->head));
    HK_CALL(put(b, m->coords, (size_t)(3 * nn) * sizeof *m->coords));
    HK_CALL(put_elems(b, &m->cells));
    HK_CALL(put(b, m->cell_region, (size_t)m->cells.n * sizeof *m->cell_region));
    HK_CALL(put(b, &m->nregions, sizeof m->nregions));
    for (int i = 0; i < m->nregions; i++)
        HK_CALL(put_group(b, &m->regions[i]));
    HK_CALL(put(b, &m->nboundaries, sizeof m->nboundaries));
    for (int i = 0; i < m->nboundaries; i++)
        HK_CALL(put_group(b, &m->boundaries[i]));
    HK_CALL(put(b, pt->gid, (size_t)nn * sizeof *pt->gid));
    HK_CALL(put(b, pt->out_cell, (size_t)m->cells.n * sizeof *pt->out_cell));
    HK_CALL(put(b, pt->fixed, (size_t)ndof * sizeof *pt->fixed));
    HK_CALL(put(b, pt->u_fixed, (size_t)ndof * sizeof *pt->u_fixed));
    HK_CALL(put(b, pt->f_ext, (size_t)ndof * sizeof *pt->f_ext));
    return put(b, pt->node_dT, pt->node_dT ? (size_t)nn * sizeof *pt->node_dT : 0);
}

/* Send the listed part to process q: the count, then each array. */
static int send_part(const hk_comm *c, const plist *b, int q, double *bytes)
{
    const uint64_t n = (uint64_t)b->n;
    HK_CALL(hk_comm_send_buf(c, &n, sizeof n, q, TAG_PART));
    for (int i = 0; i < b->n; i++) {
        HK_CALL(hk_comm_send_buf(c, b->seg[i].p, b->seg[i].n, q, TAG_PART));
        *bytes += (double)b->seg[i].n;
    }
    return 0;
}

/* Arrays of length 0 arrive as NULL; the part's arrays are never NULL. */
static int at_least_one(void **a, size_t size)
{
    return *a ? 0 : hk_calloc(1, size, a);
}

static int unpack_part(preader *r, hk_part *pt)
{
    hk_mesh *m = &pt->mesh;
    int64_t head[6];
    memset(pt, 0, sizeof *pt);
    HK_CALL(get_val(r, head, sizeof head));
    m->dim = (int)head[0];
    m->nnodes = head[1];
    pt->nown = head[2];
    pt->row0 = head[3];
    pt->nglobal = head[4];
    pt->ncells_global = head[5];
    HK_CALL(get(r, (void **)&m->coords, NULL));
    HK_CALL(get_elems(r, &m->cells));
    HK_CALL(get(r, (void **)&m->cell_region, NULL));
    HK_CALL(get_val(r, &m->nregions, sizeof m->nregions));
    HK_CALL(hk_calloc((size_t)m->nregions + 1, sizeof *m->regions, &m->regions));
    for (int i = 0; i < m->nregions; i++)
        HK_CALL(get_group(r, &m->regions[i]));
    HK_CALL(get_val(r, &m->nboundaries, sizeof m->nboundaries));
    HK_CALL(hk_calloc((size_t)m->nboundaries + 1, sizeof *m->boundaries, &m->boundaries));
    for (int i = 0; i < m->nboundaries; i++)
        HK_CALL(get_group(r, &m->boundaries[i]));
    HK_CALL(get(r, (void **)&pt->gid, NULL));
    HK_CALL(get(r, (void **)&pt->out_cell, NULL));
    HK_CALL(get(r, (void **)&pt->fixed, NULL));
    HK_CALL(get(r, (void **)&pt->u_fixed, NULL));
    HK_CALL(get(r, (void **)&pt->f_ext, NULL));
    HK_CALL(get(r, (void **)&pt->node_dT, NULL));
    HK_CHECK(r->next == r->n, HK_ERR_INTERNAL, "a received part has %d arrays, not %d", r->n,
             r->next);
    HK_CALL(at_least_one((void **)&m->coords, sizeof(double)));
    HK_CALL(at_least_one((void **)&m->cells.ptr, sizeof(int64_t)));
    HK_CALL(at_least_one((void **)&pt->gid, sizeof(int64_t)));
    HK_CALL(at_least_one((void **)&pt->out_cell, 1));
    HK_CALL(at_least_one((void **)&pt->fixed, 1));
    HK_CALL(at_least_one((void **)&pt->u_fixed, sizeof(double)));
    return at_least_one((void **)&pt->f_ext, sizeof(double));
}

/* ---- the partition ------------------------------------------------------------------------ */

#ifdef HOOKE_HAVE_METIS
/* The cells sharing at least ncommon corners with cell e (or all of the smaller one's corners
 * less one), in the order METIS's own dual graph lists them: by e's corners, then by cell;
 * marker (ne, all zero) is left all zero. */
static idx_t dual_neighbours(idx_t e, const idx_t *eptr, const idx_t *eind, const idx_t *nptr,
                             const idx_t *nind, idx_t ncommon, idx_t *marker, idx_t *nbrs)
{
    const idx_t len = eptr[e + 1] - eptr[e];
    idx_t k = 0, j = 0;
    for (idx_t i = eptr[e]; i < eptr[e + 1]; i++)
        for (idx_t a = nptr[eind[i]]; a < nptr[eind[i] + 1]; a++) {
            const idx_t f = nind[a];
            if (marker[f] == 0) nbrs[k++] = f;
            marker[f]++;
        }
    if (marker[e] == 0) nbrs[k++] = e;
    marker[e] = 0;
    for (idx_t i = 0; i < k; i++) {
        const idx_t f = nbrs[i], shared = marker[f];
        if (shared >= ncommon || shared >= len - 1 || shared >= eptr[f + 1] - eptr[f] - 1)
            nbrs[j++] = f;
        marker[f] = 0;
    }
    return j;
}

/* METIS_PartMeshDual's cell parts with its dual graph built on the threads: the same graph in
 * the same order (so the same parts, bit for bit), then the same k-way call, with the cells'
 * weights vwgt (NULL: 1 each) and METIS's load imbalance ufactor (0: its default, 1.03).
 * 1 in *done when it partitioned; 0 leaves the cut to hk_partition_cells (sizes past idx_t,
 * parts unused). */
static int metis_dual(int64_t ne64, const int64_t *cptr, const int32_t *cnodes, int64_t nn64,
                      idx_t ncommon, int P, idx_t *vwgt, idx_t ufactor, int32_t *cpart, int *done)
{
    int ierr = 0;
    *done = 0;
    if (P == 1 || ne64 <= P || cptr[ne64] >= INT32_MAX || nn64 >= INT32_MAX ||
        sizeof(idx_t) != sizeof(int32_t))
        return 0;
    idx_t ne = (idx_t)ne64; /* not const: METIS takes it so */
    const idx_t nn = (idx_t)nn64;
    idx_t *eptr = NULL, *nptr = NULL, *nind = NULL, *xadj = NULL, *adj = NULL, *ep = NULL;
    const idx_t *eind = (const idx_t *)cnodes;
    HK_TRY(hk_malloc((size_t)(ne + 1) * sizeof *eptr, &eptr));
    for (idx_t e = 0; e <= ne; e++)
        eptr[e] = (idx_t)cptr[e];
    /* each node's cells, in cell order */
    HK_TRY(hk_calloc((size_t)nn + 1, sizeof *nptr, &nptr));
    HK_TRY(hk_malloc((size_t)(eptr[ne] + 1) * sizeof *nind, &nind));
    for (idx_t k = 0; k < eptr[ne]; k++)
        nptr[eind[k] + 1]++;
    for (idx_t v = 0; v < nn; v++)
        nptr[v + 1] += nptr[v];
    for (idx_t e = 0; e < ne; e++)
        for (idx_t k = eptr[e]; k < eptr[e + 1]; k++)
            nind[nptr[eind[k]]++] = e;
    for (idx_t v = nn; v > 0; v--)
        nptr[v] = nptr[v - 1];
    nptr[0] = 0;
    /* the dual graph: each thread lists the neighbours of a block of cells (its own marker,
     * zero between cells), then copies them to their place */
    HK_TRY(hk_malloc((size_t)(ne + 1) * sizeof *xadj, &xadj));
    xadj[0] = 0;
    int bad = 0;
#pragma omp parallel
    {
        int nt = 1, t = 0;
#ifdef _OPENMP
        nt = omp_get_num_threads(), t = omp_get_thread_num();
#endif
        const idx_t lo = (idx_t)((int64_t)ne * t / nt), hi = (idx_t)((int64_t)ne * (t + 1) / nt);
        idx_t *marker = calloc((size_t)ne, sizeof *marker);
        idx_t *nbrs = malloc((size_t)ne * sizeof *nbrs), *list = NULL;
        size_t len = 0, cap = 0;
        int ok = marker && nbrs;
        for (idx_t e = lo; e < hi && ok; e++) {
            const idx_t n = dual_neighbours(e, eptr, eind, nptr, nind, ncommon, marker, nbrs);
            if (len + (size_t)n > cap) {
                cap = 2 * (len + (size_t)n) + 1024;
                idx_t *grown = realloc(list, cap * sizeof *list);
                if (!(ok = grown != NULL)) break;
                list = grown;
            }
            memcpy(list + len, nbrs, (size_t)n * sizeof *nbrs);
            len += (size_t)n;
            xadj[e + 1] = n;
        }
        if (!ok) {
#pragma omp atomic write
            bad = 1;
        }
#pragma omp barrier
#pragma omp single
        if (!bad) {
            for (idx_t e = 0; e < ne; e++)
                xadj[e + 1] += xadj[e];
            if (hk_malloc((size_t)(xadj[ne] + 1) * sizeof *adj, &adj)) bad = 1;
        }
        if (!bad && len) memcpy(adj + xadj[lo], list, len * sizeof *list);
        free(marker);
        free(nbrs);
        free(list);
    }
    HK_TRY_CHECK(!bad, HK_ERR_MEMORY, "out of host memory for the dual graph of %lld cells",
                 (long long)ne);
    free(nptr), nptr = NULL;
    free(nind), nind = NULL;
    {
        idx_t opt[METIS_NOPTIONS], ncon = 1, np = P, cut = 0;
        HK_TRY(hk_malloc((size_t)ne * sizeof *ep, &ep));
        METIS_SetDefaultOptions(opt); /* as hk_partition_cells */
        opt[METIS_OPTION_SEED] = 12345;
        opt[METIS_OPTION_NUMBERING] = 0;
        if (ufactor) opt[METIS_OPTION_UFACTOR] = ufactor;
        if (METIS_PartGraphKway(&ne, &ncon, xadj, adj, vwgt, NULL, NULL, &np, NULL, NULL, opt, &cut,
                                ep) != METIS_OK)
            goto fail; /* hk_partition_cells says why */
        char *used = NULL;
        HK_TRY(hk_calloc((size_t)P, 1, &used));
        for (idx_t e = 0; e < ne; e++)
            used[ep[e]] = 1, cpart[e] = (int32_t)ep[e];
        *done = (int)(memchr(used, 0, (size_t)P) == NULL);
        free(used);
    }
fail:
    free(eptr);
    free(nptr);
    free(nind);
    free(xadj);
    free(adj);
    free(ep);
    return ierr;
}
#endif

const char *const hk_part_cut_names[] = {"auto", "coarse", "fine", NULL};
const char *const hk_part_mesh_names[] = {"parts", "whole", NULL};

/* The corners of cells es (the first ones of each cell's nodes) as a CSR list. */
static int corner_lists(const hk_elems *es, int64_t **cptr_out, int32_t **cnodes_out)
{
    int ierr = 0;
    const int64_t ne = es->n;
    int64_t *cptr = NULL;
    int32_t *cnodes = NULL;
    HK_TRY(hk_malloc((size_t)(ne + 1) * sizeof *cptr, &cptr));
    cptr[0] = 0;
    for (int64_t e = 0; e < ne; e++)
        cptr[e + 1] = cptr[e] + hk_eltype_ncorners((hk_eltype)es->type[e]);
    HK_TRY(hk_malloc((size_t)(cptr[ne] + 1) * sizeof *cnodes, &cnodes));
    for (int64_t e = 0; e < ne; e++)
        memcpy(cnodes + cptr[e], es->nodes + es->ptr[e],
               (size_t)(cptr[e + 1] - cptr[e]) * sizeof *cnodes);
fail:
    if (ierr) free(cptr), free(cnodes), cptr = NULL, cnodes = NULL;
    *cptr_out = cptr;
    *cnodes_out = cnodes;
    return ierr;
}

#ifdef HOOKE_HAVE_METIS
static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The coarse cells cut by METIS on their dual graph (their corners numbered 0, 1, ... in the
 * order of their node numbers), each weighted by wgt (its fine cells). 1 in *done when every
 * part has cells. The coarse cells are heavy (8^levels fine cells): METIS's default 3 %
 * imbalance left the owned nodes of the bracket's two parts 3.4 % apart at 2.5M DOFs, 1 %
 * brings them within 1.3 % (the fine cut's: 0.8 %) for 3 % more ghosts (docs/parallel.md). */
static int cut_coarse_cells(const hk_elems *coarse, int dim, idx_t *wgt, int P, int32_t *ppart,
                            int *done)
{
    int ierr = 0;
    const int64_t nc = coarse->n;
    int64_t *cptr = NULL, nu = 0;
    int32_t *cnodes = NULL, *uniq = NULL;
    *done = 0;
    HK_TRY(corner_lists(coarse, &cptr, &cnodes));
    HK_TRY(hk_malloc((size_t)(cptr[nc] + 1) * sizeof *uniq, &uniq));
    memcpy(uniq, cnodes, (size_t)cptr[nc] * sizeof *uniq);
    qsort(uniq, (size_t)cptr[nc], sizeof *uniq, cmp_i32);
    for (int64_t k = 0; k < cptr[nc]; k++)
        if (!nu || uniq[k] != uniq[nu - 1]) uniq[nu++] = uniq[k];
    for (int64_t k = 0; k < cptr[nc]; k++)
        cnodes[k] =
            (int32_t)((int32_t *)bsearch(cnodes + k, uniq, (size_t)nu, sizeof *uniq, cmp_i32) -
                      uniq);
    HK_TRY(metis_dual(nc, cptr, cnodes, nu, dim == 2 ? 2 : 3, P, wgt, 10, ppart, done));
fail:
    free(cptr);
    free(cnodes);
    free(uniq);
    return ierr;
}

/* The cells cut on the coarse mesh m->coarse (cut_coarse_cells, each coarse cell weighted by
 * its fine cells), every fine cell given its ancestor's part. */
static int cut_coarse(const hk_mesh *m, int P, int32_t *cpart, int *done)
{
    int ierr = 0;
    const int64_t nc = m->coarse.n, ne = m->cells.n;
    int32_t *ppart = NULL;
    idx_t *wgt = NULL;
    *done = 0;
    HK_TRY(hk_calloc((size_t)nc + 1, sizeof *wgt, &wgt));
    for (int64_t f = 0; f < ne; f++) {
        const int32_t a = m->cell_coarse[f];
        HK_TRY_CHECK(a >= 0 && a < nc, HK_ERR_INTERNAL,
                     "cell %lld has coarse ancestor %d of %lld coarse cells", (long long)f, a,
                     (long long)nc);
        wgt[a]++;
    }
    HK_TRY(hk_malloc((size_t)(nc + 1) * sizeof *ppart, &ppart));
    HK_TRY(cut_coarse_cells(&m->coarse, m->dim, wgt, P, ppart, done));
    if (*done) {
#pragma omp parallel for schedule(static)
        for (int64_t f = 0; f < ne; f++)
            cpart[f] = ppart[m->cell_coarse[f]];
    }
fail:
    free(ppart);
    free(wgt);
    return ierr;
}
#endif

int hk_part_cut_coarse(const hk_mesh *coarse, const int64_t *wgt, int P, int32_t *part, int *done)
{
    *done = 0;
#ifdef HOOKE_HAVE_METIS
    int ierr = 0;
    const int64_t nc = coarse->cells.n;
    idx_t *w = NULL;
    if (P < 2 || nc < P || nc >= INT32_MAX) return 0;
    HK_CALL(hk_malloc((size_t)nc * sizeof *w, &w));
    for (int64_t e = 0; e < nc; e++)
        w[e] = (idx_t)wgt[e];
    ierr = cut_coarse_cells(&coarse->cells, coarse->dim, w, P, part, done);
    free(w);
    return ierr;
#else
    (void)coarse, (void)wgt, (void)P, (void)part;
    return 0;
#endif
}

/* cell part (on the mesh cut asks for, how in by), node owner (lowest part among its cells, 0
 * for a node of no cell), global ids part after part in the mesh's order, starts[q] the first
 * global id of part q. */
static int partition(const hk_mesh *m, int P, hk_part_cut cut, int32_t *cpart, int32_t *owner,
                     int64_t *gid, int64_t *starts, char *by, size_t nby)
{
    int ierr = 0;
    const int64_t ne = m->cells.n, nn = m->nnodes, nc = m->coarse.n;
    const int refined = m->cell_coarse && nc > 0;
    int64_t *cptr = NULL;
    int32_t *cnodes = NULL;
    int done = 0;
    char why[96] = "";
    if (refined && cut != HK_PART_FINE && P > 1) {
#ifdef HOOKE_HAVE_METIS
        if (cut == HK_PART_COARSE || nc >= (int64_t)HK_PART_COARSE_MIN * P) {
            HK_TRY(cut_coarse(m, P, cpart, &done));
            if (!done) snprintf(why, sizeof why, "; the coarse mesh's cut left a part empty");
        } else
            snprintf(why, sizeof why, "; the coarse mesh's %lld cells are under %d a part",
                     (long long)nc, HK_PART_COARSE_MIN);
#else
        snprintf(why, sizeof why, "; without METIS the coarse mesh is not cut");
#endif
    } else if (!refined && cut == HK_PART_COARSE)
        snprintf(why, sizeof why, "; no coarse mesh: Hooke did not refine this one");
    if (done) {
        snprintf(by, nby, "%s on the coarse mesh (%lld cells)", hk_partitioner_name(),
                 (long long)nc);
    } else {
        HK_TRY(corner_lists(&m->cells, &cptr, &cnodes));
#ifdef HOOKE_HAVE_METIS
        HK_TRY(metis_dual(ne, cptr, cnodes, nn, m->dim == 2 ? 2 : 3, P, NULL, 0, cpart, &done));
#endif
        if (!done) HK_TRY(hk_partition_cells(ne, cptr, cnodes, nn, m->dim == 2 ? 2 : 3, P, cpart));
        snprintf(by, nby, "%s on the %s (%lld cells%s)", hk_partitioner_name(),
                 refined ? "fine mesh" : "mesh", (long long)ne, why);
    }
    for (int64_t v = 0; v < nn; v++)
        owner[v] = P;
    for (int64_t e = 0; e < ne; e++)
        for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++)
            if (cpart[e] < owner[m->cells.nodes[k]]) owner[m->cells.nodes[k]] = cpart[e];
    memset(starts, 0, (size_t)(P + 1) * sizeof *starts);
    for (int64_t v = 0; v < nn; v++) {
        if (owner[v] == P) owner[v] = 0;
        starts[owner[v] + 1]++;
    }
    for (int q = 0; q < P; q++)
        starts[q + 1] += starts[q];
    {
        int64_t *next = NULL;
        HK_TRY(hk_malloc((size_t)(P + 1) * sizeof *next, &next));
        memcpy(next, starts, (size_t)(P + 1) * sizeof *next);
        for (int64_t v = 0; v < nn; v++)
            gid[v] = next[owner[v]]++;
        free(next);
    }
fail:
    free(cptr);
    free(cnodes);
    return ierr;
}

typedef struct part_ctx {
    const hk_problem *p;
    const hk_system *prep;
    const int32_t *owner;
    const int64_t *gid, *starts;
    int32_t **gnodes; /* every boundary's nodes in the whole mesh */
    int64_t *gn;
    int32_t *loc; /* scratch: local index of each node, -1 (reset after each part) */
} part_ctx;

typedef struct gid_node {
    int64_t gid;
    int32_t v;
} gid_node;

static int cmp_gid(const void *a, const void *b)
{
    const int64_t x = ((const gid_node *)a)->gid, y = ((const gid_node *)b)->gid;
    return (x > y) - (x < y);
}

/* Boundary b's nodes in the whole mesh: its node list, or the unique nodes of its facets (the
 * rule assembly and post-processing follow). */
static int group_nodes(const hk_mesh *m, int b, int64_t *n, int32_t **nodes)
{
    const hk_group *g = &m->boundaries[b];
    *n = 0;
    if (g->nnodes > 0 && g->nodes) {
        HK_CALL(hk_malloc((size_t)g->nnodes * sizeof **nodes, nodes));
        memcpy(*nodes, g->nodes, (size_t)g->nnodes * sizeof **nodes);
        *n = g->nnodes;
        return 0;
    }
    const int64_t tot = g->elems.n ? g->elems.ptr[g->elems.n] : 0;
    uint8_t *seen = NULL;
    HK_CALL(hk_malloc((size_t)(tot + 1) * sizeof **nodes, nodes));
    HK_CALL(hk_calloc((size_t)m->nnodes + 1, 1, &seen));
    for (int64_t k = 0; k < tot; k++) {
        const int32_t v = g->elems.nodes[k];
        if (v >= 0 && v < m->nnodes && !seen[v]) seen[v] = 1, (*nodes)[(*n)++] = v;
    }
    free(seen);
    return 0;
}

/* Allocate an hk_elems of n elements and nref node references. */
static int elems_alloc(hk_elems *e, int64_t n, int64_t nref)
{
    memset(e, 0, sizeof *e);
    e->n = n;
    HK_CALL(hk_malloc((size_t)(n + 1), &e->type));
    HK_CALL(hk_malloc((size_t)(n + 1) * sizeof *e->ptr, &e->ptr));
    HK_CALL(hk_malloc((size_t)(nref + 1) * sizeof *e->nodes, &e->nodes));
    HK_CALL(hk_malloc((size_t)(n + 1) * sizeof *e->tag, &e->tag));
    e->ptr[0] = 0;
    return 0;
}

/* Element k of src into slot j of dst (nodes mapped by loc), dst->ptr[j] already set. */
static void elems_fill(hk_elems *dst, int64_t j, const hk_elems *src, int64_t k, const int32_t *loc)
{
    const int64_t a = src->ptr[k], n = src->ptr[k + 1] - a;
    dst->type[j] = src->type[k];
    dst->tag[j] = src->tag ? src->tag[k] : k + 1;
    for (int64_t i = 0; i < n; i++)
        dst->nodes[dst->ptr[j] + i] = loc[src->nodes[a + i]];
}

int hk_part_groups(const hk_mesh *m, const int32_t *owner, int q, const int32_t *loc,
                   int32_t *const *gnodes, const int64_t *gn, hk_mesh *pm)
{
    pm->nregions = m->nregions;
    HK_CALL(hk_calloc((size_t)m->nregions + 1, sizeof *pm->regions, &pm->regions));
    for (int r = 0; r < m->nregions; r++) {
        memcpy(pm->regions[r].name, m->regions[r].name, sizeof pm->regions[r].name);
        pm->regions[r].dim = m->regions[r].dim;
        pm->regions[r].tag = m->regions[r].tag;
    }
    pm->nboundaries = m->nboundaries;
    HK_CALL(hk_calloc((size_t)m->nboundaries + 1, sizeof *pm->boundaries, &pm->boundaries));
    /* marked and listed on the threads (hk_list_marked keeps the order) */
    int64_t most = 0;
    for (int b = 0; b < m->nboundaries; b++) {
        most = m->boundaries[b].elems.n > most ? m->boundaries[b].elems.n : most;
        most = gn[b] > most ? gn[b] : most;
    }
    int ierr = 0;
    uint8_t *mark = NULL;
    int64_t *list = NULL;
    HK_TRY(hk_malloc((size_t)most + 1, &mark));
    HK_TRY(hk_malloc((size_t)(most + 1) * sizeof *list, &list));
    for (int b = 0; b < m->nboundaries; b++) {
        const hk_group *g = &m->boundaries[b];
        hk_group *pg = &pm->boundaries[b];
        memcpy(pg->name, g->name, sizeof pg->name);
        pg->dim = g->dim;
        pg->tag = g->tag;
        const int64_t nfe = g->elems.n;
#pragma omp parallel for schedule(static)
        for (int64_t fe = 0; fe < nfe; fe++) {
            int own = 0, all = 1;
            for (int64_t k = g->elems.ptr[fe]; k < g->elems.ptr[fe + 1]; k++) {
                const int32_t v = g->elems.nodes[k];
                own |= owner[v] == q;
                all &= loc[v] >= 0;
            }
            mark[fe] = (uint8_t)(own && all);
        }
        const int64_t nf = hk_list_marked(mark, nfe, NULL, list);
        int64_t fref = 0;
#pragma omp parallel for schedule(static) reduction(+ : fref)
        for (int64_t j = 0; j < nf; j++)
            fref += g->elems.ptr[list[j] + 1] - g->elems.ptr[list[j]];
        HK_TRY(elems_alloc(&pg->elems, nf, fref));
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < nf; j++)
            pg->elems.ptr[j + 1] = g->elems.ptr[list[j] + 1] - g->elems.ptr[list[j]];
        hk_running_sum(pg->elems.ptr + 1, nf);
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < nf; j++)
            elems_fill(&pg->elems, j, &g->elems, list[j], loc);
        const int32_t *gb = gnodes[b];
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < gn[b]; k++)
            mark[k] = loc[gb[k]] >= 0;
        const int64_t cnt = hk_list_marked(mark, gn[b], NULL, list);
        HK_TRY(hk_malloc((size_t)(cnt + 1) * sizeof *pg->nodes, &pg->nodes));
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < cnt; k++)
            pg->nodes[k] = loc[gb[list[k]]];
        pg->nnodes = cnt;
    }
fail:
    free(mark);
    free(list);
    return ierr;
}

/* Part q of the model. */
static int build_part(part_ctx *x, int q, hk_part *pt)
{
    int ierr = 0;
    const hk_mesh *m = x->p->mesh;
    const int d = m->dim;
    const int64_t ne = m->cells.n, nn = m->nnodes;
    int32_t *loc = x->loc;
    gid_node *ghost = NULL;
    uint8_t *touch = NULL;
    int64_t *lc = NULL, nlc = 0, ng = 0, nref = 0;
    memset(pt, 0, sizeof *pt);
    pt->row0 = x->starts[q];
    pt->nown = x->starts[q + 1] - x->starts[q];
    pt->nglobal = nn;
    pt->ncells_global = ne;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nn; v++)
        if (x->owner[v] == q) loc[v] = (int32_t)(x->gid[v] - pt->row0);
    /* the cells touching an owned node, in the mesh's order (marked on the threads) */
    HK_TRY(hk_malloc((size_t)(ne + 1) * sizeof *lc, &lc));
    HK_TRY(hk_malloc((size_t)(ne + 1), &touch));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < ne; e++) {
        int mine = 0;
        for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1] && !mine; k++)
            mine = x->owner[m->cells.nodes[k]] == q;
        touch[e] = (uint8_t)mine;
    }
    for (int64_t e = 0; e < ne; e++)
        if (touch[e]) lc[nlc++] = e, nref += m->cells.ptr[e + 1] - m->cells.ptr[e];
    /* their other nodes: the ghosts, by global id */
    HK_TRY(hk_malloc((size_t)(nref + 1) * sizeof *ghost, &ghost));
    for (int64_t i = 0; i < nlc; i++)
        for (int64_t k = m->cells.ptr[lc[i]]; k < m->cells.ptr[lc[i] + 1]; k++) {
            const int32_t v = m->cells.nodes[k];
            if (loc[v] == -1) loc[v] = -2, ghost[ng++] = (gid_node){x->gid[v], v};
        }
    qsort(ghost, (size_t)ng, sizeof *ghost, cmp_gid);
    for (int64_t k = 0; k < ng; k++)
        loc[ghost[k].v] = (int32_t)(pt->nown + k);
    /* the mesh */
    hk_mesh *pm = &pt->mesh;
    const int64_t nl = pt->nown + ng;
    pm->dim = d;
    pm->nnodes = nl;
    HK_TRY(hk_malloc((size_t)(3 * nl + 1) * sizeof *pm->coords, &pm->coords));
    HK_TRY(hk_malloc((size_t)(nl + 1) * sizeof *pt->gid, &pt->gid));
    HK_TRY(hk_malloc((size_t)(d * nl + 1), &pt->fixed));
    HK_TRY(hk_malloc((size_t)(d * nl + 1) * sizeof *pt->u_fixed, &pt->u_fixed));
    HK_TRY(hk_malloc((size_t)(d * nl + 1) * sizeof *pt->f_ext, &pt->f_ext));
    if (x->p->node_dT) HK_TRY(hk_malloc((size_t)(nl + 1) * sizeof *pt->node_dT, &pt->node_dT));
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nn; v++) { /* owned nodes */
        if (x->owner[v] != q) continue;
        const int64_t i = loc[v];
        memcpy(pm->coords + 3 * i, m->coords + 3 * v, 3 * sizeof *pm->coords);
        pt->gid[i] = x->gid[v];
    }
    for (int64_t k = 0; k < ng; k++) {
        const int64_t i = pt->nown + k, v = ghost[k].v;
        memcpy(pm->coords + 3 * i, m->coords + 3 * v, 3 * sizeof *pm->coords);
        pt->gid[i] = x->gid[v];
    }
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nn; v++) {
        if (loc[v] < 0) continue;
        const int64_t i = loc[v];
        memcpy(pt->fixed + d * i, x->prep->fixed + d * v, (size_t)d);
        memcpy(pt->u_fixed + d * i, x->prep->u_fixed + d * v, (size_t)d * sizeof *pt->u_fixed);
        memcpy(pt->f_ext + d * i, x->prep->f_ext + d * v, (size_t)d * sizeof *pt->f_ext);
        if (pt->node_dT) pt->node_dT[i] = x->p->node_dT[v];
    }
    HK_TRY(elems_alloc(&pm->cells, nlc, nref));
    HK_TRY(hk_malloc((size_t)(nlc + 1) * sizeof *pm->cell_region, &pm->cell_region));
    HK_TRY(hk_malloc((size_t)(nlc + 1), &pt->out_cell));
    /* where each cell's nodes go, then the cells on the threads */
    for (int64_t i = 0; i < nlc; i++)
        pm->cells.ptr[i + 1] = pm->cells.ptr[i] + m->cells.ptr[lc[i] + 1] - m->cells.ptr[lc[i]];
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nlc; i++) {
        elems_fill(&pm->cells, i, &m->cells, lc[i], loc);
        pm->cell_region[i] = m->cell_region[lc[i]];
        pt->out_cell[i] = x->owner[m->cells.nodes[m->cells.ptr[lc[i]]]] == q;
    }
    HK_TRY(hk_part_groups(m, x->owner, q, loc, x->gnodes, x->gn, pm));
fail:
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nn; v++) /* ready for the next part */
        loc[v] = -1;
    free(lc);
    free(touch);
    free(ghost);
    if (ierr) hk_part_free(pt);
    return ierr;
}

/* One part built on a thread of its own while the calling thread sends the one before it
 * (MPI is called from the main thread only). */
typedef struct build_job {
    part_ctx *x;
    int q;
    hk_part pt;
    int ierr;
    char msg[1024]; /* the thread's error message (messages are per thread) */
    double t_build;
    pthread_t thread;
    int running;
} build_job;

static void *build_main(void *arg)
{
    build_job *j = arg;
    const double t = hk_time();
    j->ierr = build_part(j->x, j->q, &j->pt);
    j->t_build = hk_time() - t;
    if (j->ierr) snprintf(j->msg, sizeof j->msg, "%s", hk_error_message());
    return NULL;
}

/* Start building part q, on a thread where one starts, else here. */
static void build_start(build_job *j, part_ctx *x, int q)
{
    j->x = x, j->q = q, j->ierr = 0, j->msg[0] = 0;
    j->running = hk_thread_create(&j->thread, build_main, j) == 0;
    if (!j->running) build_main(j);
}

/* Wait for the job; its status, with its message as this thread's. */
static int build_wait(build_job *j)
{
    if (j->running) pthread_join(j->thread, NULL);
    j->running = 0;
    return j->ierr ? hk_error_set(j->ierr, __FILE__, __LINE__, "%s", j->msg) : 0;
}

static void part_sizes(hk_part_stats *st, const hk_part *pt)
{
    const int64_t ng = pt->mesh.nnodes - pt->nown, nc = pt->mesh.cells.n;
    st->min_nodes = pt->nown < st->min_nodes ? pt->nown : st->min_nodes;
    st->max_nodes = pt->nown > st->max_nodes ? pt->nown : st->max_nodes;
    st->max_ghosts = ng > st->max_ghosts ? ng : st->max_ghosts;
    st->min_cells = nc < st->min_cells ? nc : st->min_cells;
    st->max_cells = nc > st->max_cells ? nc : st->max_cells;
}

/* The cut (the partition, the numbering) and the boundaries' node lists, on a thread of its
 * own while the calling thread prepares the whole model: both only read the mesh. */
typedef struct cut_job {
    const hk_mesh *m;
    int P;
    hk_part_cut cut;
    int32_t *cpart, *owner;
    int64_t *gid, *starts;
    part_ctx *x;
    hk_part_stats *st;
    int ierr;
    char msg[1024]; /* the thread's error message */
    pthread_t thread;
    int running;
} cut_job;

static void *cut_main(void *arg)
{
    cut_job *j = arg;
    const hk_mesh *m = j->m;
    double t = hk_time();
    int ierr = partition(m, j->P, j->cut, j->cpart, j->owner, j->gid, j->starts, j->st->by,
                         sizeof j->st->by);
    j->st->t_cut = hk_time() - t;
    t = hk_time();
    for (int64_t v = 0; v < m->nnodes; v++)
        j->x->loc[v] = -1;
    for (int k = 0; k < m->nboundaries && !ierr; k++)
        ierr = group_nodes(m, k, &j->x->gn[k], &j->x->gnodes[k]);
    j->st->t_lists = hk_time() - t;
    j->ierr = ierr;
    if (ierr) snprintf(j->msg, sizeof j->msg, "%s", hk_error_message());
    return NULL;
}

int hk_part_distribute(const hk_comm *c, const hk_problem *p, int (*prepare)(void *ctx),
                       void *ctx, const hk_system *prep, hk_part_cut cut, hk_part *mine,
                       hk_part_stats *st)
{
    int ierr = 0;
    const int P = hk_comm_size(c);
    const hk_mesh *m = p->mesh;
    const double t0 = hk_time();
    double t;
    int32_t *cpart = NULL, *owner = NULL;
    int64_t *gid = NULL, *starts = NULL;
    part_ctx x = {.p = p, .prep = prep};
    build_job job[2];
    cut_job cj = {0};
    plist b = {0};
    int waiting = P - 1; /* processes 1..waiting still wait for their part */
    memset(mine, 0, sizeof *mine);
    memset(st, 0, sizeof *st);
    memset(job, 0, sizeof job);
    HK_TRY(hk_malloc((size_t)(m->cells.n + 1) * sizeof *cpart, &cpart));
    HK_TRY(hk_malloc((size_t)(m->nnodes + 1) * sizeof *owner, &owner));
    HK_TRY(hk_malloc((size_t)(m->nnodes + 1) * sizeof *gid, &gid));
    HK_TRY(hk_malloc((size_t)(P + 1) * sizeof *starts, &starts));
    HK_TRY(hk_malloc((size_t)(m->nnodes + 1) * sizeof *x.loc, &x.loc));
    HK_TRY(hk_calloc((size_t)m->nboundaries + 1, sizeof *x.gnodes, &x.gnodes));
    HK_TRY(hk_calloc((size_t)m->nboundaries + 1, sizeof *x.gn, &x.gn));
    cj = (cut_job){.m = m, .P = P, .cut = cut, .cpart = cpart, .owner = owner, .gid = gid,
                   .starts = starts, .x = &x, .st = st};
    cj.running = hk_thread_create(&cj.thread, cut_main, &cj) == 0;
    if (!cj.running) cut_main(&cj);
    t = hk_time();
    if (prepare) ierr = prepare(ctx);
    st->t_prep = hk_time() - t;
    t = hk_time();
    if (cj.running) pthread_join(cj.thread, NULL);
    cj.running = 0;
    st->t_cut_wait = hk_time() - t;
    if (ierr) goto fail; /* the preparation's message */
    if ((ierr = cj.ierr)) {
        hk_error_set(ierr, __FILE__, __LINE__, "%s", cj.msg);
        goto fail;
    }
    x.owner = owner;
    x.gid = gid;
    x.starts = starts;
    st->min_nodes = st->min_cells = INT64_MAX;
    /* from the last part down, rank 0's own last (it keeps it): part q - 1 is built on a
     * thread while part q is sent */
    build_start(&job[(P - 1) & 1], &x, P - 1);
    for (int q = P - 1; q >= 0; q--) {
        build_job *j = &job[q & 1];
        t = hk_time();
        ierr = build_wait(j);
        st->t_wait += hk_time() - t;
        st->t_build += j->t_build;
        if (ierr) goto fail;
        part_sizes(st, &j->pt);
        if (q == 0) {
            *mine = j->pt;
            memset(&j->pt, 0, sizeof j->pt);
            break;
        }
        build_start(&job[(q - 1) & 1], &x, q - 1);
        t = hk_time();
        ierr = list_part(&j->pt, &b);
        if (!ierr) ierr = send_part(c, &b, q, &st->bytes);
        waiting = q - 1; /* q received its part, or failed to and knows it */
        hk_part_free(&j->pt);
        st->t_send += hk_time() - t;
        if (ierr) goto fail;
    }
    st->seconds = hk_time() - t0;
    st->t_sent = st->seconds - st->t_prep - st->t_cut_wait;
fail:
    if (cj.running) pthread_join(cj.thread, NULL); /* after a failure before the preparation */
    for (int k = 0; k < 2; k++) { /* a part still being built after a failure */
        if (job[k].running) pthread_join(job[k].thread, NULL); /* its status: ierr's */
        hk_part_free(&job[k].pt);
    }
    /* a failure here: the processes still waiting get an empty part, which they take as this
     * failure, so that every process reaches the agreement on it (hk_run_mpi_case) */
    for (int q = waiting; ierr && q >= 1; q--)
        hk_comm_send_buf(c, NULL, 0, q, TAG_PART);
    free(cpart);
    free(owner);
    free(gid);
    free(starts);
    free(x.loc);
    for (int k = 0; x.gnodes && k < m->nboundaries; k++)
        free(x.gnodes[k]);
    free(x.gnodes);
    free(x.gn);
    free(b.seg);
    return ierr;
}

int hk_part_receive(const hk_comm *c, hk_part *mine, hk_part_stats *st)
{
    int ierr = 0;
    void *count = NULL;
    size_t n = 0;
    preader r = {0};
    memset(mine, 0, sizeof *mine);
    memset(st, 0, sizeof *st);
    double t = hk_time();
    HK_CALL(hk_comm_recv_buf(c, &count, &n, 0, TAG_PART));
    uint64_t narrays = 0;
    if (n == sizeof narrays) memcpy(&narrays, count, sizeof narrays);
    free(count);
    HK_CHECK(n > 0, HK_ERR_INTERNAL, "process 0 could not make this process's part");
    HK_CHECK(n == sizeof narrays && narrays > 0 && narrays < (1u << 24), HK_ERR_INTERNAL,
             "a received part announces %zu bytes, not an array count", n);
    HK_TRY(hk_calloc((size_t)narrays, sizeof *r.seg, &r.seg));
    for (r.n = 0; r.n < (int)narrays; r.n++) {
        HK_TRY(hk_comm_recv_buf(c, &r.seg[r.n].p, &r.seg[r.n].n, 0, TAG_PART));
        st->bytes += (double)r.seg[r.n].n;
    }
    st->t_recv = hk_time() - t;
    t = hk_time();
    HK_TRY(unpack_part(&r, mine));
    st->t_unpack = hk_time() - t;
fail:
    for (int i = 0; r.seg && i < r.n; i++)
        free(r.seg[i].p); /* those not taken */
    free(r.seg);
    if (ierr) hk_part_free(mine);
    return ierr;
}
