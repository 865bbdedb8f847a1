/* The parts of a distributed hooke run made on their processes (solver.dist.mesh=parts,
 * docs/parallel.md "The mesh made by the parts").
 *
 * Every process meshes the coarse mesh as one process would (Gmsh's meshing is reproducible:
 * the processes compare a fingerprint of it), cuts it with METIS as rank 0 would, and refines
 * only its own coarse cells and those sharing a corner with them (hk_mesh_load_region), each
 * node with a key that every process making it gives it. A node belongs to the lowest part
 * among its cells (as on rank 0's path); the owned nodes are numbered after the lower ranks'
 * (one allgather of the counts), and the ghosts ask every other process for their number,
 * coordinates and supports by key (each answered by its owner). The whole model's checks run
 * on the coarse mesh, the same on every process; a force spread over a boundary's area and a
 * force split among a group's nodes take their area and node count as sums over the parts. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "marked.h"
#include "psort.h"
#include "run_part_mesh.h"

enum { TAG_KEYS = 7311, TAG_ANSWERS = 7312 };

/* ---- the coarse mesh and its cut, the same on every process -------------------------------- */

typedef struct pick_ctx {
    int P, me;
    hk_part_cut cut;
    int cut_ok; /* 0: not cut (why): rank 0 keeps every cell, the others none */
    char why[160];
    int32_t *cpart;         /* coarse cell -> part */
    int64_t ncoarse, nfine; /* coarse cells, fine cells of the whole mesh */
    int64_t nkept, nown;    /* coarse cells refined here, of them this part's */
    hk_mesh coarse;         /* a copy, for the whole model's checks */
    uint64_t print;         /* its fingerprint */
    int axis;               /* a generated grid's: the slabs' axis */
    double t_rcm;           /* its slab's RCM order's seconds */
    double seconds;
} pick_ctx;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The coarse mesh's nodes, cells and groups in 64 bits. */
static uint64_t fingerprint(const hk_mesh *m)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const hk_elems *c = &m->cells;
    h = fnv(h, m->coords, 3 * (size_t)m->nnodes * sizeof *m->coords);
    h = fnv(h, c->type, (size_t)c->n);
    h = fnv(h, c->nodes, (size_t)(c->n ? c->ptr[c->n] : 0) * sizeof *c->nodes);
    for (int b = 0; b < m->nboundaries; b++) {
        const hk_elems *f = &m->boundaries[b].elems;
        h = fnv(h, f->nodes, (size_t)(f->n ? f->ptr[f->n] : 0) * sizeof *f->nodes);
    }
    return h;
}

static int elems_copy_all(const hk_elems *s, hk_elems *d)
{
    const int64_t nref = s->n ? s->ptr[s->n] : 0;
    memset(d, 0, sizeof *d);
    d->n = s->n;
    HK_CALL(hk_malloc((size_t)s->n + 1, &d->type));
    HK_CALL(hk_malloc((size_t)(s->n + 1) * sizeof *d->ptr, &d->ptr));
    HK_CALL(hk_malloc((size_t)(nref + 1) * sizeof *d->nodes, &d->nodes));
    HK_CALL(hk_malloc((size_t)(s->n + 1) * sizeof *d->tag, &d->tag));
    if (s->n) memcpy(d->type, s->type, (size_t)s->n);
    if (s->ptr)
        memcpy(d->ptr, s->ptr, (size_t)(s->n + 1) * sizeof *d->ptr);
    else
        d->ptr[0] = 0;
    if (nref) memcpy(d->nodes, s->nodes, (size_t)nref * sizeof *d->nodes);
    for (int64_t e = 0; e < s->n; e++)
        d->tag[e] = s->tag ? s->tag[e] : e + 1;
    return 0;
}

/* A copy of m's nodes, cells, regions and groups (their facets). */
static int mesh_copy(const hk_mesh *m, hk_mesh *d)
{
    memset(d, 0, sizeof *d);
    d->dim = m->dim;
    d->nnodes = m->nnodes;
    HK_CALL(hk_malloc((size_t)(3 * m->nnodes + 1) * sizeof *d->coords, &d->coords));
    memcpy(d->coords, m->coords, 3 * (size_t)m->nnodes * sizeof *d->coords);
    HK_CALL(elems_copy_all(&m->cells, &d->cells));
    HK_CALL(hk_malloc((size_t)(m->cells.n + 1) * sizeof *d->cell_region, &d->cell_region));
    for (int64_t e = 0; e < m->cells.n; e++)
        d->cell_region[e] = m->cell_region ? m->cell_region[e] : 0;
    HK_CALL(hk_calloc((size_t)m->nregions + 1, sizeof *d->regions, &d->regions));
    d->nregions = m->nregions;
    for (int r = 0; r < m->nregions; r++) {
        memcpy(d->regions[r].name, m->regions[r].name, sizeof d->regions[r].name);
        d->regions[r].dim = m->regions[r].dim;
        d->regions[r].tag = m->regions[r].tag;
    }
    HK_CALL(hk_calloc((size_t)m->nboundaries + 1, sizeof *d->boundaries, &d->boundaries));
    d->nboundaries = m->nboundaries;
    for (int b = 0; b < m->nboundaries; b++) {
        hk_group *g = &d->boundaries[b];
        memcpy(g->name, m->boundaries[b].name, sizeof g->name);
        g->dim = m->boundaries[b].dim;
        g->tag = m->boundaries[b].tag;
        HK_CALL(elems_copy_all(&m->boundaries[b].elems, &g->elems));
    }
    return 0;
}

/* Fine cells of a coarse cell of type t after `levels` refinements. */
static int64_t fine_cells(hk_eltype t, int levels)
{
    int64_t n = 1, tets = 0;
    for (int l = 0; l < levels; l++) {
        if (t == HK_EL_PYR5) /* 6 pyramids and 4 tetrahedra */
            tets = 8 * tets + 4 * n, n *= 6;
        else
            n *= hk_eltype_get(t)->dim == 2 ? 4 : 8;
    }
    return n + tets;
}

static int pick(void *ctx, const hk_mesh *coarse, int levels, uint8_t *keep)
{
    pick_ctx *x = ctx;
    const double t0 = hk_time();
    const hk_elems *c = &coarse->cells;
    int ierr = 0, done = 0;
    int64_t *wgt = NULL;
    uint8_t *near = NULL;
    x->ncoarse = c->n;
    x->print = fingerprint(coarse);
    HK_TRY(mesh_copy(coarse, &x->coarse));
    HK_TRY(hk_malloc((size_t)(c->n + 1) * sizeof *wgt, &wgt));
    HK_TRY(hk_malloc((size_t)(c->n + 1) * sizeof *x->cpart, &x->cpart));
    for (int64_t e = 0; e < c->n; e++) {
        wgt[e] = fine_cells((hk_eltype)c->type[e], levels);
        x->nfine += wgt[e];
    }
    if (x->cut == HK_PART_AUTO && c->n < (int64_t)HK_PART_COARSE_MIN * x->P)
        snprintf(x->why, sizeof x->why, "the coarse mesh's %lld cells are under %d a part",
                 (long long)c->n, HK_PART_COARSE_MIN);
    else {
        HK_TRY(hk_part_cut_coarse(coarse, wgt, x->P, x->cpart, &done));
        if (!done) snprintf(x->why, sizeof x->why, "the coarse mesh's cut left a part empty");
    }
    x->cut_ok = done;
    /* its own cells and every cell sharing a corner with them: all the cells around its
     * owned nodes and its ghost layer (not cut: rank 0 the whole mesh, the others nothing) */
    HK_TRY(hk_calloc((size_t)coarse->nnodes + 1, 1, &near));
    for (int64_t e = 0; e < c->n && done; e++)
        if (x->cpart[e] == x->me)
            for (int64_t k = c->ptr[e]; k < c->ptr[e + 1]; k++)
                near[c->nodes[k]] = 1;
    for (int64_t e = 0; e < c->n; e++) {
        keep[e] = !done && x->me == 0;
        for (int64_t k = c->ptr[e]; k < c->ptr[e + 1] && done && !keep[e]; k++)
            keep[e] = near[c->nodes[k]];
        x->nkept += keep[e];
        x->nown += done && x->cpart[e] == x->me;
    }
    x->seconds = hk_time() - t0;
fail:
    free(wgt);
    free(near);
    return ierr;
}

/* ---- a generated grid, cut in slabs ----------------------------------------------------------
 *
 * The grid's cells are cut in slabs of whole cell layers along its axis of most cells, part q
 * taking layers q n / P .. (q + 1) n / P - 1; each process makes its layers and one more on each
 * side (every cell sharing a corner with its own), with the whole grid's coordinates. A layer
 * stands for a coarse cell (cell_coarse), and a node's key is its index in the whole fine grid,
 * recovered from its coordinates (they are L I / (N - 1) exactly). The whole model's checks run
 * on the grid of one cell per axis. */

static const char axis_names[] = "xyz";

static int grid_region(const hk_case *c, pick_ctx *x, hk_mesh *m, hk_node_key **keys, int *applies)
{
    const double t0 = hk_time();
    const int dim = c->gen_dim;
    const int n[3] = {c->gen_cells[0], c->gen_cells[1], dim == 3 ? c->gen_cells[2] : 1};
    int axis = 0;
    for (int a = 1; a < dim; a++)
        if (n[a] > n[axis]) axis = a;
    x->axis = axis;
    *applies = 0;
    if (n[axis] < x->P) {
        snprintf(x->why, sizeof x->why,
                 "the grid's %d cell layers along %c, its longest axis, are fewer than the %d "
                 "processes",
                 n[axis], axis_names[axis], x->P);
        return 0;
    }
    const int one[3] = {1, 1, 1};
    HK_CALL(hk_mesh_grid_slab(dim, c->gen_size, one, c->gen_element, 0, 0, 1, &x->coarse));
    x->ncoarse = n[axis];
    HK_CALL(hk_malloc((size_t)n[axis] * sizeof *x->cpart, &x->cpart));
    int lo = 0, hi = 0;
    for (int q = 0; q < x->P; q++) {
        const int a = (int)((int64_t)q * n[axis] / x->P),
                  b = (int)((int64_t)(q + 1) * n[axis] / x->P);
        for (int l = a; l < b; l++)
            x->cpart[l] = q;
        if (q == x->me) lo = a, hi = b;
    }
    const int glo = lo > 0 ? lo - 1 : 0, ghi = hi < n[axis] ? hi + 1 : n[axis];
    x->nkept = ghi - glo, x->nown = hi - lo;
    x->seconds = hk_time() - t0;
    if (c->mesh.renumber) /* its RCM order from the grid's structure */
        HK_CALL(hk_mesh_grid_slab_rcm(dim, c->gen_size, n, c->gen_element, axis, glo, ghi, m,
                                      &x->t_rcm));
    else
        HK_CALL(hk_mesh_grid_slab(dim, c->gen_size, n, c->gen_element, axis, glo, ghi, m));
    /* each cell's layer: the cells come cube by cube (x fastest), `per` cells a cube */
    const hk_eltype t = c->gen_element;
    const int per = t == HK_EL_TET4 || t == HK_EL_TET10  ? 6
                    : t == HK_EL_TRI3 || t == HK_EL_TRI6 ? 2
                                                         : 1;
    int64_t nl[3] = {n[0], n[1], n[2]};
    nl[axis] = ghi - glo;
    HK_CALL(hk_malloc((size_t)(m->cells.n + 1) * sizeof *m->cell_coarse, &m->cell_coarse));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < m->cells.n; e++) {
        const int64_t cube = e / per;
        const int64_t idx[3] = {cube % nl[0], (cube / nl[0]) % nl[1], cube / (nl[0] * nl[1])};
        m->cell_coarse[e] = (int32_t)(glo + idx[axis]);
    }
    /* each node's key: its index in the whole fine grid */
    const int order = hk_eltype_get(t)->order;
    int64_t N[3];
    for (int a = 0; a < 3; a++)
        N[a] = a < dim ? (int64_t)order * n[a] + 1 : 1;
    HK_CALL(hk_malloc((size_t)(m->nnodes + 1) * sizeof **keys, keys));
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < m->nnodes; v++) {
        int64_t I[3] = {0, 0, 0};
        /* rounded as llround rounds these (x >= 0, near a whole number), without its call */
        for (int a = 0; a < dim; a++)
            I[a] = (int64_t)(m->coords[3 * v + a] * (double)(N[a] - 1) / c->gen_size[a] + 0.5);
        (*keys)[v] = (hk_node_key){(uint64_t)(I[0] + N[0] * (I[1] + N[1] * I[2])), 0};
    }
    x->cut_ok = *applies = 1;
    return 0;
}

/* ---- exchanges -------------------------------------------------------------------------- */

/* Every process sends send[q] (bytes[q]) to every other q and receives recv[q] (malloc'ed,
 * rbytes[q]) from it; the pairs in one order on every process, each pair's lower rank sending
 * first, so that blocking messages of any size cannot wait on each other in a circle. */
static int exchange(const hk_comm *w, void *const *send, const size_t *bytes, void **recv,
                    size_t *rbytes, int tag)
{
    const int P = hk_comm_size(w), me = hk_comm_rank(w);
    for (int a = 0; a < P; a++)
        for (int b = a + 1; b < P; b++) {
            if (me != a && me != b) continue;
            const int other = me == a ? b : a;
            if (me == a) {
                HK_CALL(hk_comm_send_buf(w, send[other], bytes[other], other, tag));
                HK_CALL(hk_comm_recv_buf(w, &recv[other], &rbytes[other], other, tag));
            } else {
                HK_CALL(hk_comm_recv_buf(w, &recv[other], &rbytes[other], other, tag));
                HK_CALL(hk_comm_send_buf(w, send[other], bytes[other], other, tag));
            }
        }
    return 0;
}

typedef struct key_at {
    hk_node_key k;
    int64_t i;
} key_at;

static int cmp_key(const void *x, const void *y)
{
    const hk_node_key *a = &((const key_at *)x)->k, *b = &((const key_at *)y)->k;
    if (a->a != b->a) return a->a < b->a ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

/* The keys are unique, the index only makes the order total (any sort gives the same bytes). */
static int cmp_key_at(const void *x, const void *y)
{
    const int c = cmp_key(x, y);
    if (c) return c;
    const int64_t a = ((const key_at *)x)->i, b = ((const key_at *)y)->i;
    return (a > b) - (a < b);
}

/* An owner's answer about one of its nodes. */
typedef struct answer {
    int64_t gid; /* -1: not this process's */
    double x[3], u_fixed[3];
    uint8_t fixed[3], pad[5];
} answer;

/* ---- the part's supports and loads --------------------------------------------------------- */

static int group_here(const hk_mesh *m, int b)
{
    return b >= 0 && b < m->nboundaries &&
           (m->boundaries[b].elems.n > 0 || m->boundaries[b].nnodes > 0);
}

/* A remote force's sums over the parts: a facet counted by the owner of its first node; each
 * sum after an agreement, so that a process failing before it stops every process there. */
typedef struct part_sums {
    const hk_comm *w;
    const uint8_t *owned;
    int agreed; /* a failure agreed inside a sum */
} part_sums;

static int sums_counts(void *ctx, const int32_t *fn, int nf)
{
    (void)nf;
    return ((const part_sums *)ctx)->owned[fn[0]];
}

static int sums_sum(void *ctx, double *v, int n)
{
    part_sums *x = ctx;
    const int ierr = hk_comm_agree(x->w, 0);
    if (ierr) {
        x->agreed = 1;
        return ierr;
    }
    return hk_comm_sum(x->w, v, n);
}

/* The region's supports, loads and prescribed values (hk_assemble_prepare_region on p, the
 * region's model): the supports and loads of groups it has; a force spread over an area as
 * the traction of the whole boundary's area, a force split among a group's nodes as the
 * nodal force of its share, both sums over the owned nodes of every process; a remote force
 * with its boundary's sums over the parts (hk_region_sums). Collective, every step's status
 * agreed. */
static int prepare_region(const hk_comm *w, const hk_problem *p, const uint8_t *owned,
                          hk_system *lp, int64_t *nfixed)
{
    int ierr = 0;
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    hk_problem q = *p;
    hk_load *ld = NULL, unit;
    hk_support *sp = NULL;
    hk_system us = {0};
    int lerr = hk_calloc((size_t)p->nloads + 1, sizeof *ld, &ld);
    if (!lerr) lerr = hk_calloc((size_t)p->nsupports + 1, sizeof *sp, &sp);
    HK_TRY(hk_comm_agree(w, lerr));
    q.loads = ld, q.nloads = 0;
    q.supports = sp, q.nsupports = 0;
    for (int k = 0; k < p->nsupports; k++)
        if (group_here(m, p->supports[k].boundary)) sp[q.nsupports++] = p->supports[k];
    for (int l = 0; l < p->nloads; l++) {
        hk_load L = p->loads[l];
        const int b = L.boundary;
        if (L.kind == HK_LOAD_TEMPERATURE) {
            ld[q.nloads++] = L;
            continue;
        }
        const hk_group *g = b >= 0 && b < m->nboundaries ? &m->boundaries[b] : NULL;
        if (L.kind == HK_LOAD_FORCE && g && g->dim == d - 1) {
            /* the boundary's area: the unit traction's nodal forces summed over the owned
             * nodes (they add up to its integral over every facet) */
            double area = 0;
            int lerr = 0;
            if (group_here(m, b)) {
                hk_problem u1 = *p;
                memset(&unit, 0, sizeof unit);
                unit.kind = HK_LOAD_TRACTION, unit.boundary = b, unit.value[0] = 1;
                u1.loads = &unit, u1.nloads = 1, u1.nsupports = 0, u1.supports = NULL;
                lerr = hk_assemble_prepare_region(&u1, NULL, &us);
                for (int64_t v = 0; v < m->nnodes && !lerr; v++)
                    if (owned[v]) area += us.f_ext[(size_t)v * d];
                hk_system_free(&us);
            }
            HK_TRY(hk_comm_agree(w, lerr));
            HK_TRY(hk_comm_sum(w, &area, 1));
            HK_TRY_CHECK(area > 0 && isfinite(area), HK_ERR_MODEL,
                         "boundary '%s' has zero area, so a force cannot be spread over it; check "
                         "the mesh",
                         g->name);
            const double scale = 1 / area;
            L.kind = HK_LOAD_TRACTION;
            for (int i = 0; i < 3; i++)
                L.value[i] = L.value[i] * scale;
        } else if (L.kind == HK_LOAD_FORCE || L.kind == HK_LOAD_FORCE_SPLIT) {
            /* the group's nodes: its node list, or its facets' */
            int64_t n = 0;
            int lerr = 0;
            if (g && g->nnodes > 0) {
                for (int64_t k = 0; k < g->nnodes; k++)
                    n += owned[g->nodes[k]];
            } else if (g && g->elems.n > 0) {
                uint8_t *seen = NULL;
                lerr = hk_calloc((size_t)m->nnodes + 1, 1, &seen);
                for (int64_t k = 0; !lerr && k < g->elems.ptr[g->elems.n]; k++) {
                    const int32_t v = g->elems.nodes[k];
                    if (!seen[v]) seen[v] = 1, n += owned[v];
                }
                free(seen);
            }
            HK_TRY(hk_comm_agree(w, lerr));
            HK_TRY(hk_comm_sum_i64(w, &n, 1));
            const double share = 1.0 / (double)n; /* n > 0: the coarse mesh's checks */
            L.kind = HK_LOAD_NODAL;
            for (int i = 0; i < 3; i++)
                L.value[i] = share * L.value[i];
        }
        /* a remote force's sums want every process, its boundary here or not */
        if (group_here(m, b) || L.kind == HK_LOAD_REMOTE) ld[q.nloads++] = L;
    }
    {
        part_sums ps = {.w = w, .owned = owned};
        const hk_region_sums rs = {.counts = sums_counts, .sum = sums_sum, .ctx = &ps};
        lerr = hk_assemble_prepare_region(&q, &rs, lp);
        if (!ps.agreed) lerr = hk_comm_agree(w, lerr); /* else agreed in a sum */
        HK_TRY(lerr);
    }
    int64_t nf = 0;
#pragma omp parallel for schedule(static) reduction(+ : nf)
    for (int64_t v = 0; v < m->nnodes; v++)
        for (int i = 0; owned[v] && i < d; i++)
            nf += lp->fixed[(size_t)v * d + i] != 0;
    HK_TRY(hk_comm_sum_i64(w, &nf, 1));
    *nfixed = nf;
fail:
    hk_system_free(&us);
    free(ld);
    free(sp);
    return ierr;
}

/* ---- the part --------------------------------------------------------------------------- */

/* A large array of the part: 2 MiB aligned and marked for transparent huge pages where the
 * system has them (512x fewer page faults on first touch), not zeroed; free()-able. */
static int alloc_big(size_t bytes, void *pptr)
{
    const size_t align = (size_t)2 << 20;
    void *p = NULL;
    if (bytes < 2 * align) return hk_malloc(bytes ? bytes : 1, pptr);
    HK_CHECK(posix_memalign(&p, align, bytes) == 0, HK_ERR_MEMORY,
             "out of host memory allocating %zu bytes", bytes);
#ifdef MADV_HUGEPAGE
    madvise(p, bytes / align * align, MADV_HUGEPAGE); /* advice: no error */
#endif
    *(void **)pptr = p;
    return 0;
}

typedef struct gid_node {
    int64_t gid;
    int32_t v; /* node of the region */
    int32_t k; /* its place among the ghosts asked for */
} gid_node;

/* By global id (unique among the ghosts), then node: a total order. */
static int cmp_gid(const void *a, const void *b)
{
    const gid_node *p = a, *q = b;
    if (p->gid != q->gid) return p->gid < q->gid ? -1 : 1;
    return (p->v > q->v) - (p->v < q->v);
}

/* What building a part keeps between its steps. */
typedef struct region_part {
    const hk_comm *w;
    int P, me;
    const hk_mesh *m;
    const int32_t *cpart;
    const hk_node_key *keys;
    const double *node_dT; /* the region's temperature file's field (NULL: none) */
    int32_t *owner, *loc;  /* loc: owned 0.., ghost nown.., else -1 */
    uint8_t *owned, *iface;
    int64_t nown, nown_cells, nlc, nref, ng, nserved;
    int64_t moved;   /* ghosts made here elsewhere than their owner made them */
    int64_t *lc;     /* the part's cells */
    gid_node *ghost; /* its ghosts */
    key_at *served;  /* owned nodes another process may ask for, by key */
    answer *ans;     /* each ghost's answer */
    hk_system lp;    /* the region's supports and loads */
    void **send, **recv;
    size_t *sbytes, *rbytes;
} region_part;

static void region_part_free(region_part *r)
{
    for (int q = 0; r->send && q < r->P; q++)
        free(r->send[q]);
    for (int q = 0; r->recv && q < r->P; q++)
        free(r->recv[q]);
    free(r->send);
    free(r->recv);
    free(r->sbytes);
    free(r->rbytes);
    free(r->owner);
    free(r->loc);
    free(r->owned);
    free(r->iface);
    free(r->lc);
    free(r->ghost);
    free(r->served);
    free(r->ans);
    hk_system_free(&r->lp);
}

/* Each node's owner, the lowest part among its cells (all of them here for the nodes of this
 * part's own cells), the owned nodes numbered in the region's order, and the nodes another
 * process may hold as ghosts: the nodes of another part's cells (iface 1) and those of the
 * cells with one of them (2). */
static int mark_owners(region_part *r)
{
    const hk_mesh *m = r->m;
    const int64_t nn = m->nnodes, ne = m->cells.n;
    HK_CALL(hk_malloc((size_t)(nn + 1) * sizeof *r->owner, &r->owner));
    HK_CALL(hk_malloc((size_t)(nn + 1) * sizeof *r->loc, &r->loc));
    HK_CALL(hk_calloc((size_t)nn + 1, 1, &r->owned));
    HK_CALL(hk_calloc((size_t)nn + 1, 1, &r->iface));
    /* in parallel: the least part by an atomic minimum, the marks written alike by every
     * thread (the second pass only turns 0 into 2, never a 1), so the same on any number */
    int32_t *owner = r->owner;
    uint8_t *iface = r->iface;
    const int32_t me = r->me;
    int64_t nown_cells = 0;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nn; v++)
        owner[v] = r->P;
#pragma omp parallel for schedule(static) reduction(+ : nown_cells)
    for (int64_t e = 0; e < ne; e++) {
        const int32_t q = r->cpart[m->cell_coarse[e]];
        nown_cells += q == me;
        for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++) {
            const int32_t v = m->cells.nodes[k];
            int32_t o = __atomic_load_n(&owner[v], __ATOMIC_RELAXED);
            while (q < o && !__atomic_compare_exchange_n(&owner[v], &o, q, 0, __ATOMIC_RELAXED,
                                                         __ATOMIC_RELAXED))
                ;
            if (q != me) __atomic_store_n(&iface[v], 1, __ATOMIC_RELAXED);
        }
    }
    r->nown_cells = nown_cells;
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < ne; e++) {
        int near = 0;
        for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1] && !near; k++)
            near = __atomic_load_n(&iface[m->cells.nodes[k]], __ATOMIC_RELAXED) == 1;
        for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1] && near; k++) {
            uint8_t zero = 0;
            __atomic_compare_exchange_n(&iface[m->cells.nodes[k]], &zero, 2, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED);
        }
    }
    /* owner me: a cell of this part has the node (so every cell around it is here) */
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nn; v++)
        r->owned[v] = owner[v] == me;
    r->nown = hk_list_marked(r->owned, nn, r->loc, NULL);
    return 0;
}

/* The cells touching an owned node, in the region's order; their other nodes, the ghosts (in
 * node order; their order only pairs the keys asked with the answers); the ghosts' keys to
 * send to every other process; the owned nodes that may be asked for. Marked on the threads,
 * listed by list_marked. */
static int list_ghosts(region_part *r)
{
    const hk_mesh *m = r->m;
    const int64_t nn = m->nnodes, ne = m->cells.n;
    const int64_t *cp = m->cells.ptr;
    const int32_t *cn = m->cells.nodes;
    int ierr = 0;
    hk_node_key *gk = NULL;
    uint8_t *mark = NULL;
    int64_t *idx = NULL, nref = 0;
    HK_TRY(hk_malloc((size_t)(ne > nn ? ne : nn) + 1, &mark));
    HK_TRY(hk_malloc((size_t)(ne + 1) * sizeof *r->lc, &r->lc));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < ne; e++) {
        int any = 0;
        for (int64_t k = cp[e]; k < cp[e + 1] && !any; k++)
            any = r->owned[cn[k]];
        mark[e] = (uint8_t)any;
    }
    r->nlc = hk_list_marked(mark, ne, NULL, r->lc);
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nn; v++)
        mark[v] = 0;
#pragma omp parallel for schedule(static) reduction(+ : nref)
    for (int64_t i = 0; i < r->nlc; i++) {
        const int64_t e = r->lc[i];
        nref += cp[e + 1] - cp[e];
        for (int64_t k = cp[e]; k < cp[e + 1]; k++)
            if (r->loc[cn[k]] == -1) __atomic_store_n(&mark[cn[k]], 1, __ATOMIC_RELAXED);
    }
    r->nref = nref;
    HK_TRY(hk_malloc((size_t)(nn + 1) * sizeof *idx, &idx));
    r->ng = hk_list_marked(mark, nn, NULL, idx);
    HK_TRY(hk_malloc((size_t)(r->ng + 1) * sizeof *r->ghost, &r->ghost));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < r->ng; k++) {
        r->loc[idx[k]] = -2;
        r->ghost[k] = (gid_node){-1, (int32_t)idx[k], (int32_t)k};
    }
    HK_TRY(hk_calloc((size_t)r->P, sizeof *r->send, &r->send));
    HK_TRY(hk_calloc((size_t)r->P, sizeof *r->recv, &r->recv));
    HK_TRY(hk_calloc((size_t)r->P, sizeof *r->sbytes, &r->sbytes));
    HK_TRY(hk_calloc((size_t)r->P, sizeof *r->rbytes, &r->rbytes));
    for (int q = 0; q < r->P; q++) {
        if (q == r->me) continue;
        HK_TRY(hk_malloc((size_t)(r->ng + 1) * sizeof *gk, &gk));
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < r->ng; k++)
            gk[k] = r->keys[r->ghost[k].v];
        r->send[q] = gk, r->sbytes[q] = (size_t)r->ng * sizeof *gk;
    }
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nn; v++)
        mark[v] = r->owned[v] && r->iface[v];
    r->nserved = hk_list_marked(mark, nn, NULL, idx);
    HK_TRY(hk_malloc((size_t)(r->nserved + 1) * sizeof *r->served, &r->served));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < r->nserved; k++)
        r->served[k] = (key_at){r->keys[idx[k]], idx[k]};
    HK_TRY(hk_sort_parallel(r->served, (size_t)r->nserved, sizeof *r->served, cmp_key_at));
fail:
    free(mark);
    free(idx);
    return ierr;
}

/* The answers to the keys received: the owned nodes' global ids, coordinates, supports. */
static int answer_keys(region_part *r, int64_t row0)
{
    const int d = r->m->dim;
    for (int q = 0; q < r->P; q++) {
        free(r->send[q]);
        r->send[q] = NULL;
    }
    for (int q = 0; q < r->P; q++) {
        if (q == r->me) continue;
        const int64_t nk = (int64_t)(r->rbytes[q] / sizeof(hk_node_key));
        const hk_node_key *rk = r->recv[q];
        answer *a = NULL;
        HK_CALL(hk_calloc((size_t)nk + 1, sizeof *a, &a));
        r->send[q] = a, r->sbytes[q] = (size_t)nk * sizeof *a;
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < nk; k++) {
            key_at x = {rk[k], 0},
                   *f = bsearch(&x, r->served, (size_t)r->nserved, sizeof *r->served, cmp_key);
            a[k].gid = -1;
            if (!f) continue;
            const int64_t v = f->i;
            a[k].gid = row0 + r->loc[v];
            memcpy(a[k].x, r->m->coords + 3 * v, sizeof a[k].x);
            for (int i = 0; i < d; i++) {
                a[k].fixed[i] = r->lp.fixed[(size_t)v * d + i];
                a[k].u_fixed[i] = r->lp.u_fixed[(size_t)v * d + i];
            }
        }
        free(r->recv[q]);
        r->recv[q] = NULL;
    }
    return 0;
}

/* Each ghost's one answer (from its owner); the ghosts then in global order. */
static int take_answers(region_part *r)
{
    const int64_t ng = r->ng;
    answer *ans = NULL;
    HK_CALL(hk_calloc((size_t)ng + 1, sizeof *r->ans, &r->ans));
    ans = r->ans;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < ng; k++)
        ans[k].gid = -1;
    /* on the threads; a failure names the first ghost that fails, as one thread would */
    int64_t bad = ng, moved = 0;
    for (int q = 0; q < r->P; q++) {
        if (q == r->me) continue;
        HK_CHECK(r->rbytes[q] == (size_t)ng * sizeof(answer), HK_ERR_INTERNAL,
                 "process %d answered %zu bytes for %lld ghost nodes", q, r->rbytes[q],
                 (long long)ng);
        const answer *a = r->recv[q];
#pragma omp parallel for schedule(static) reduction(min : bad)
        for (int64_t k = 0; k < ng; k++)
            if (a[k].gid >= 0) {
                if (ans[k].gid >= 0 && k < bad) bad = k;
                ans[k] = a[k];
            }
        HK_CHECK(bad == ng, HK_ERR_INTERNAL, "two processes own node (%g, %g, %g)", a[bad].x[0],
                 a[bad].x[1], a[bad].x[2]);
    }
    const double *coords = r->m->coords;
    gid_node *ghost = r->ghost;
#pragma omp parallel for schedule(static) reduction(min : bad) reduction(+ : moved)
    for (int64_t k = 0; k < ng; k++) {
        if (ans[k].gid < 0) {
            if (k < bad) bad = k;
            continue;
        }
        ghost[k].gid = ans[k].gid;
        moved += memcmp(coords + 3 * (int64_t)ghost[k].v, ans[k].x, sizeof ans[k].x) != 0;
    }
    if (bad < ng) {
        const double *x = coords + 3 * (int64_t)ghost[bad].v;
        HK_CHECK(0, HK_ERR_INTERNAL, "no process owns node (%g, %g, %g), a ghost of process %d",
                 x[0], x[1], x[2], r->me);
    }
    r->moved += moved;
    HK_CALL(hk_sort_parallel(r->ghost, (size_t)r->ng, sizeof *r->ghost, cmp_gid));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < r->ng; k++)
        r->loc[r->ghost[k].v] = (int32_t)(r->nown + k);
    return 0;
}

/* The part: its nodes (owned, then ghosts with their owners' coordinates and supports), its
 * cells in the region's order, its groups' facets touching an owned node and their nodes (a
 * node of the region whose owner is this part is an owned node: the cells around it are all
 * here). */
static int make_part(const region_part *r, hk_part *pt)
{
    const hk_mesh *m = r->m;
    const int d = m->dim;
    const int32_t *loc = r->loc;
    const uint8_t *owned = r->owned;
    hk_mesh *pm = &pt->mesh;
    const int64_t nown = r->nown, ng = r->ng, nl = nown + ng, nlc = r->nlc;
    pm->dim = d;
    pm->nnodes = nl;
    /* every entry written below (the ghosts' loads zero) */
    HK_CALL(alloc_big((size_t)(3 * nl + 1) * sizeof *pm->coords, &pm->coords));
    HK_CALL(alloc_big((size_t)(nl + 1) * sizeof *pt->gid, &pt->gid));
    HK_CALL(alloc_big((size_t)(d * nl + 1), &pt->fixed));
    HK_CALL(alloc_big((size_t)(d * nl + 1) * sizeof *pt->u_fixed, &pt->u_fixed));
    HK_CALL(alloc_big((size_t)(d * nl + 1) * sizeof *pt->f_ext, &pt->f_ext));
    if (r->node_dT) { /* read by coordinates on every process: the ghosts' own too */
        HK_CALL(hk_malloc((size_t)(nl + 1) * sizeof *pt->node_dT, &pt->node_dT));
#pragma omp parallel for schedule(static)
        for (int64_t v = 0; v < m->nnodes; v++)
            if (loc[v] >= 0) pt->node_dT[loc[v]] = r->node_dT[v];
    }
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < m->nnodes; v++) {
        if (!owned[v]) continue;
        const int64_t i = loc[v];
        memcpy(pm->coords + 3 * i, m->coords + 3 * v, 3 * sizeof *pm->coords);
        pt->gid[i] = pt->row0 + i;
        memcpy(pt->fixed + d * i, r->lp.fixed + d * v, (size_t)d);
        memcpy(pt->u_fixed + d * i, r->lp.u_fixed + d * v, (size_t)d * sizeof *pt->u_fixed);
        memcpy(pt->f_ext + d * i, r->lp.f_ext + d * v, (size_t)d * sizeof *pt->f_ext);
    }
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < ng; k++) {
        const int64_t i = nown + k;
        const answer *a = &r->ans[r->ghost[k].k];
        memcpy(pm->coords + 3 * i, a->x, 3 * sizeof *pm->coords);
        pt->gid[i] = a->gid;
        for (int c = 0; c < d; c++) {
            pt->fixed[d * i + c] = a->fixed[c];
            pt->u_fixed[d * i + c] = a->u_fixed[c];
            pt->f_ext[d * i + c] = 0;
        }
    }
    HK_CALL(alloc_big((size_t)(nlc + 1), &pm->cells.type));
    HK_CALL(alloc_big((size_t)(nlc + 1) * sizeof *pm->cells.ptr, &pm->cells.ptr));
    HK_CALL(alloc_big((size_t)(r->nref + 1) * sizeof *pm->cells.nodes, &pm->cells.nodes));
    HK_CALL(alloc_big((size_t)(nlc + 1) * sizeof *pm->cells.tag, &pm->cells.tag));
    HK_CALL(alloc_big((size_t)(nlc + 1) * sizeof *pm->cell_region, &pm->cell_region));
    HK_CALL(alloc_big((size_t)(nlc + 1), &pt->out_cell));
    pm->cells.n = nlc;
    pm->cells.ptr[0] = 0;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nlc; i++)
        pm->cells.ptr[i + 1] = m->cells.ptr[r->lc[i] + 1] - m->cells.ptr[r->lc[i]];
    hk_running_sum(pm->cells.ptr + 1, nlc); /* sizes into offsets */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nlc; i++) {
        const int64_t e = r->lc[i];
        int64_t q = pm->cells.ptr[i];
        pm->cells.type[i] = m->cells.type[e];
        pm->cells.tag[i] = m->cells.tag ? m->cells.tag[e] : e + 1;
        pm->cell_region[i] = m->cell_region[e];
        for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++)
            pm->cells.nodes[q++] = loc[m->cells.nodes[k]];
        pt->out_cell[i] = owned[m->cells.nodes[m->cells.ptr[e]]];
    }
    /* each group's nodes: the region's (collected by its refinement) */
    int32_t **gnodes = NULL;
    int64_t *gn = NULL;
    int ierr = hk_calloc((size_t)m->nboundaries + 1, sizeof *gnodes, &gnodes);
    if (!ierr) ierr = hk_calloc((size_t)m->nboundaries + 1, sizeof *gn, &gn);
    for (int b = 0; !ierr && b < m->nboundaries; b++)
        gnodes[b] = m->boundaries[b].nodes, gn[b] = m->boundaries[b].nnodes;
    if (!ierr) ierr = hk_part_groups(m, r->owner, r->me, loc, gnodes, gn, pm);
    free(gnodes);
    free(gn);
    return ierr;
}

/* The part of region m (bound in problem p; cpart: each coarse cell's part; keys: its nodes'):
 * owned nodes first in m's order, then the ghosts by global id with their owners' coordinates
 * and supports. Collective: every local step's status is agreed before the next exchange. */
static int build(const hk_comm *w, const hk_mesh *m, const int32_t *cpart, const hk_node_key *keys,
                 const hk_problem *p, hk_part *pt, hk_part_stats *st, int64_t *nfixed,
                 double *t_prep)
{
    int ierr = 0;
    region_part r = {.w = w,
                     .P = hk_comm_size(w),
                     .me = hk_comm_rank(w),
                     .m = m,
                     .cpart = cpart,
                     .keys = keys,
                     .node_dT = p->node_dT};
    const int P = r.P, me = r.me;
    int64_t *counts = NULL;
    memset(pt, 0, sizeof *pt);
#define AGREE(e)                                                                                   \
    do {                                                                                           \
        if ((ierr = hk_comm_agree(w, (e)))) goto fail;                                             \
    } while (0)
    AGREE(mark_owners(&r));
    /* the numbering: part after part */
    AGREE(hk_malloc((size_t)P * sizeof *counts, &counts));
    AGREE(hk_comm_allgather(w, &r.nown, sizeof r.nown, counts));
    pt->nown = r.nown;
    for (int q = 0; q < P; q++) {
        if (q < me) pt->row0 += counts[q];
        pt->nglobal += counts[q];
    }
    pt->ncells_global = r.nown_cells;
    AGREE(hk_comm_sum_i64(w, &pt->ncells_global, 1));
    double t = hk_time();
    HK_TRY(prepare_region(w, p, r.owned, &r.lp, nfixed)); /* agreed inside */
    *t_prep = hk_time() - t;
    AGREE(list_ghosts(&r));
    AGREE(exchange(w, r.send, r.sbytes, r.recv, r.rbytes, TAG_KEYS));
    AGREE(answer_keys(&r, pt->row0));
    AGREE(exchange(w, r.send, r.sbytes, r.recv, r.rbytes, TAG_ANSWERS));
    AGREE(take_answers(&r));
    AGREE(make_part(&r, pt));
#undef AGREE
    /* the partition line's figures */
    {
        int64_t mine4[4] = {r.nown, r.nlc, r.ng, r.moved}, *all4 = NULL;
        ierr = hk_comm_agree(w, hk_malloc((size_t)P * sizeof mine4, &all4));
        if (!ierr) ierr = hk_comm_allgather(w, mine4, sizeof mine4, all4);
        st->min_nodes = st->min_cells = INT64_MAX;
        for (int q = 0; q < P && !ierr; q++) {
            const int64_t *a = all4 + 4 * q;
            st->min_nodes = a[0] < st->min_nodes ? a[0] : st->min_nodes;
            st->max_nodes = a[0] > st->max_nodes ? a[0] : st->max_nodes;
            st->min_cells = a[1] < st->min_cells ? a[1] : st->min_cells;
            st->max_cells = a[1] > st->max_cells ? a[1] : st->max_cells;
            st->max_ghosts = a[2] > st->max_ghosts ? a[2] : st->max_ghosts;
            st->moved_ghosts += a[3];
        }
        free(all4);
    }
fail:
    free(counts);
    region_part_free(&r);
    if (ierr) hk_part_free(pt);
    return ierr;
}

/* What the parts cannot make yet (the whole path makes it), or NULL. */
static const char *not_by_parts(const hk_case *c, int P)
{
    if (c->dist_partition == HK_PART_FINE) return "solver.dist.partition=fine cuts the fine mesh";
    if (c->generate) return NULL; /* cut in slabs: no refinement, no METIS */
    if (!c->mesh.refine) return "Hooke does not refine this mesh (geometry.refine: 0)";
    if (strcmp(hk_partitioner_name(), "metis")) return "without METIS the coarse mesh is not cut";
    (void)P;
    return NULL;
}

/* r0->mesh made to stand for the whole mesh in the summary: the counts, each element kind
 * present once (allreduced), the regions' and groups' names. */
static int summary_mesh(const hk_comm *w, const hk_part *pt, hk_mesh *m)
{
    double seen[HK_EL_COUNT] = {0};
    for (int64_t e = 0; e < m->cells.n; e++)
        seen[m->cells.type[e]] = 1;
    HK_CALL(hk_comm_max(w, seen, HK_EL_COUNT));
    free(m->coords), m->coords = NULL;
    free(m->cells.type), free(m->cells.ptr), free(m->cells.nodes), free(m->cells.tag);
    memset(&m->cells, 0, sizeof m->cells);
    free(m->cell_region), m->cell_region = NULL;
    free(m->cell_coarse), m->cell_coarse = NULL;
    m->nnodes = pt->nglobal;
    HK_CALL(hk_malloc((size_t)pt->ncells_global + 1, &m->cells.type));
    int first = -1, k = 0;
    for (int t = 0; t < HK_EL_COUNT; t++)
        if (seen[t]) {
            if (first < 0) first = t;
            m->cells.type[k++] = (uint8_t)t;
        }
    for (int64_t e = k; e < pt->ncells_global; e++)
        m->cells.type[e] = (uint8_t)first;
    m->cells.n = pt->ncells_global;
    return 0;
}

/* The quality of the whole fine mesh from the parts: each process measures the cells it owns
 * (pt->out_cell: each cell on one process), the minimum over the processes and the mean
 * weighted by their cell counts, as one process measures the whole mesh. */
static int owned_quality(const hk_comm *w, const hk_part *pt, hk_mesh_quality *q)
{
    const hk_mesh *pm = &pt->mesh;
    int64_t *own = NULL; /* the owned cells, in order */
    memset(q, 0, sizeof *q);
    hk_mesh_quality mine = {0, 0, 0};
    int ierr = hk_malloc((size_t)(pm->cells.n + 1) * sizeof *own, &own);
    if (!ierr) {
        const int64_t n = hk_list_marked(pt->out_cell, pm->cells.n, NULL, own);
        ierr = hk_mesh_measure_quality_of(pm, own, n, &mine);
    }
    free(own);
    HK_CALL(hk_comm_agree(w, ierr));
    /* the minimum as the largest negated one (-inf where a process owns no cell) */
    double lo[1] = {mine.cells ? -mine.min : -INFINITY};
    double sum[2] = {mine.mean * (double)mine.cells, (double)mine.cells};
    HK_CALL(hk_comm_max(w, lo, 1));
    HK_CALL(hk_comm_sum(w, sum, 2));
    q->cells = (int64_t)sum[1];
    q->min = q->cells ? -lo[0] : 0;
    q->mean = q->cells ? sum[0] / sum[1] : 0;
    return 0;
}

int hk_part_make(const hk_comm *w, const hk_case *c, const hk_run_opts *o, hk_run *r0,
                 hk_system *prep, hk_part *pt, hk_part_stats *st, int *made, char *note,
                 size_t nnote)
{
    int ierr = 0;
    const int P = hk_comm_size(w), me = hk_comm_rank(w);
    hk_run_log L = {.on = me == 0 && !o->quiet, .t0 = hk_time()};
    pick_ctx x = {.P = P, .me = me, .cut = (hk_part_cut)c->dist_partition};
    hk_mesh_region reg = {.select = pick, .ctx = &x};
    hk_case_model cm = {0};
    hk_system cprep = {0};
    double tm[4] = {0, 0, 0, 0}, t; /* mesh, checks, prepared, numbered: slowest process's */
    *made = 0;
    note[0] = 0;
    memset(st, 0, sizeof *st);
    const char *why = not_by_parts(c, P);
    if (why) {
        snprintf(note, nnote, "%s", why);
        return 0;
    }
    /* the memory guard before meshing: this process's share of the geometry's or grid's */
    ierr = hk_run_memory_check_part_geometry(c, o->backend, me, P, &r0->mem);
    if ((ierr = hk_comm_agree(w, ierr))) goto done;
    /* 1. every process: the coarse mesh, the cut, its region refined (a generated grid: its
     * slab and the layers beside it made) */
    t = hk_time();
    if (c->generate) {
        int applies = 0;
        hk_run_say(
            &L, "meshing: %s, %d x %d%s%.0d cells, on each of %d processes, each making its slab",
            c->gen_dim == 2 ? "rectangle" : "box", c->gen_cells[0], c->gen_cells[1],
            c->gen_dim == 3 ? " x " : "", c->gen_dim == 3 ? c->gen_cells[2] : 0, P);
        ierr = grid_region(c, &x, &r0->mesh, &reg.keys, &applies);
        tm[0] = hk_time() - t;
        if ((ierr = hk_comm_agree(w, ierr))) goto done;
        if (!applies) { /* the same on every process: the caller meshes the whole grid */
            snprintf(note, nnote, "%s", x.why);
            hk_mesh_free(&r0->mesh);
            goto done;
        }
        snprintf(st->by, sizeof st->by,
                 "slabs of the grid along %c (%lld cell layers) on every process",
                 axis_names[x.axis], (long long)x.ncoarse);
        st->t_cut = x.seconds;
        goto cut;
    }
    hk_run_say(&L, "meshing: %s (order %d%s) on each of %d processes, each refining its own part",
               c->geo_file, c->mesh.order, c->mesh.quad ? ", quads" : "", P);
    hk_mesh_options mo = c->mesh;
    mo.verbose = o->verbose;
    ierr = hk_mesh_load_region(c->geo_file, &mo, &reg, &r0->mesh);
    tm[0] = hk_time() - t;
    if ((ierr = hk_comm_agree(w, ierr))) goto done;
    {
        uint64_t *prints = NULL;
        int differ = 0;
        ierr = hk_malloc((size_t)P * sizeof *prints, &prints);
        if (!ierr) ierr = hk_comm_allgather(w, &x.print, sizeof x.print, prints);
        for (int q = 1; q < P && !ierr; q++)
            differ |= prints[q] != prints[0];
        free(prints);
        if (!ierr && differ && reg.refined)
            ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                                "%s: Gmsh's coarse mesh came out differently on the processes; "
                                "set solver.dist.mesh=whole (process 0 meshes the whole model)",
                                c->path);
        if ((ierr = hk_comm_agree(w, ierr))) goto done;
    }
    if (!reg.refined || !x.cut_ok) {
        /* the whole mesh: rank 0's (every process's when not refined) */
        snprintf(note, nnote, "%s", !reg.refined ? "Hooke does not refine this mesh" : x.why);
        if (me == 0)
            ierr = hk_case_bind(c, &r0->mesh, &r0->model);
        else
            hk_mesh_free(&r0->mesh);
        r0->t_mesh = tm[0];
        ierr = hk_comm_agree(w, ierr);
        goto done;
    }
    st->t_cut = x.seconds;
    snprintf(st->by, sizeof st->by, "%s on the coarse mesh (%lld cells) on every process",
             hk_partitioner_name(), (long long)x.ncoarse);
cut:
    /* 2. the whole model's checks on the coarse mesh, alike on every process */
    t = hk_time();
    ierr = hk_case_bind(c, &x.coarse, &cm);
    if (!ierr) ierr = hk_run_model_error(c, hk_assemble_prepare(&cm.problem, &cprep));
    tm[1] = hk_time() - t;
    if ((ierr = hk_comm_agree(w, ierr))) goto done;
    /* 3. the region's model, its supports and loads, the part */
    t = hk_time();
    ierr = hk_case_bind(c, &r0->mesh, &r0->model);
    if ((ierr = hk_comm_agree(w, ierr))) goto done;
    ierr =
        build(w, &r0->mesh, x.cpart, reg.keys, &r0->model.problem, pt, st, &prep->nfixed, &tm[2]);
    if (ierr == HK_ERR_MODEL) ierr = hk_run_model_error(c, ierr);
    tm[3] = hk_time() - t - tm[2];
    if ((ierr = hk_comm_agree(w, ierr))) goto done;
    /* the memory guard after meshing: the part's nodes, owned and ghosts */
    if ((ierr = hk_comm_agree(w, hk_run_memory_check_part(c, &pt->mesh, o->backend, me,
                                                          &r0->mem))))
        goto done;
    double est[2] = {r0->mem.host_estimate, r0->mem.device_estimate};
    HK_TRY(hk_comm_max(w, est, 2));
    hk_mesh_quality qa = {0, 0, 0}, qb = {0, 0, 0}; /* the fine cells', the coarse ones' */
    if (c->generate) /* alike on every process: one cell measures the grid's */
        HK_TRY(hk_comm_agree(w, hk_mesh_grid_quality(c->gen_dim, c->gen_size, c->gen_cells,
                                                     c->gen_element, &qa)));
    else
        HK_TRY(owned_quality(w, pt, &qa));
    if (!c->generate) HK_TRY(hk_mesh_measure_quality(&x.coarse, &qb));
    if ((ierr = hk_comm_agree(w, summary_mesh(w, pt, &r0->mesh)))) goto done;
    HK_TRY(hk_comm_max(w, tm, 4));
    /* every second to the meshing line in a stage (the processes are in step after the
     * maximum): the checks and the supports and loads in the assembly's, the rest (the part
     * numbered, the memory guards, the quality, the waits for the slowest process) in the
     * mesh's */
    st->seconds = hk_time() - L.t0;
    r0->t_assembly = tm[1] + tm[2];
    r0->t_mesh = st->seconds - r0->t_assembly;
    const double rest = r0->t_mesh - tm[0] - tm[3];
    snprintf(st->steps, sizeof st->steps,
             "each process %s in %.2f s (%s in %.2f s), the whole model checked on the %s in "
             "%.2f s, the part prepared in %.2f s and numbered in %.2f s, memory guards, quality "
             "and waits %.2f s",
             c->generate ? "made its slab of the grid" : "meshed and refined its part", tm[0],
             c->generate ? "its RCM order" : "the coarse cut", c->generate ? x.t_rcm : st->t_cut,
             c->generate ? "grid of one cell" : "coarse mesh", tm[1], tm[2], tm[3],
             rest > 0 ? rest : 0);
    if (st->moved_ghosts) /* a node projected or kept straight otherwise near a part's edge */
        snprintf(st->steps + strlen(st->steps), sizeof st->steps - strlen(st->steps),
                 " (%lld ghost nodes placed by their owners, not where their part made them)",
                 (long long)st->moved_ghosts);
    if (c->generate)
        hk_run_say(
            &L,
            "meshing: %lld nodes, %lld elements in %.2f s on %d processes (%lld cell layers along "
            "%c; process 0 made %lld, %lld of them its own), quality min %.2f mean %.2f",
            (long long)pt->nglobal, (long long)pt->ncells_global, r0->t_mesh, P,
            (long long)x.ncoarse,
            axis_names[x.axis], (long long)x.nkept, (long long)x.nown, qa.min, qa.mean);
    else
        hk_run_say(
            &L,
            "meshing: %lld nodes, %lld elements in %.2f s on %d processes (%lld coarse cells "
            "refined %d time%s; process 0 refined %lld, %lld of them its own), quality min %.2f "
            "mean %.2f -> min %.2f mean %.2f",
            (long long)pt->nglobal, (long long)pt->ncells_global, r0->t_mesh, P,
            (long long)x.ncoarse,
            hk_mesh_load_refine_stats().levels, hk_mesh_load_refine_stats().levels == 1 ? "" : "s",
            (long long)x.nkept, (long long)x.nown, qb.min,
            qb.mean, qa.min, qa.mean);
    hk_run_say(
        &L,
        "memory: about %.0f MB of host memory needed by the largest part (process 0's %.0f MB, "
        "%.0f MB available)%s",
        est[0] / 1e6, r0->mem.host_estimate / 1e6, r0->mem.host_available / 1e6,
        est[1] > 0 ? ", device checked too" : "");
    *made = 1;
    goto done;
fail:
    ierr = hk_comm_agree(w, ierr);
done:
    hk_case_model_free(&cm);
    hk_system_free(&cprep);
    hk_mesh_free(&x.coarse);
    free(x.cpart);
    free(reg.keys);
    return ierr;
}
