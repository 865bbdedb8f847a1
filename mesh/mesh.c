/* Mesh data: free/find, element builders, orientation and the built-in structured
 * generators (rectangle, box) in every element type of their dimension. */
#include <omp.h>
#include <stdio.h>

#include "mesh_impl.h"

/* ---- plain data ------------------------------------------------------------------------ */

void hk_elems_free(hk_elems *e)
{
    if (!e) return;
    free(e->type);
    free(e->ptr);
    free(e->nodes);
    free(e->tag);
    memset(e, 0, sizeof *e);
}

void hk_mesh_free(hk_mesh *m)
{
    if (!m) return;
    free(m->coords);
    hk_elems_free(&m->cells);
    free(m->cell_region);
    for (int i = 0; i < m->nregions; i++) {
        hk_elems_free(&m->regions[i].elems);
        free(m->regions[i].nodes);
    }
    for (int i = 0; i < m->nboundaries; i++) {
        hk_elems_free(&m->boundaries[i].elems);
        free(m->boundaries[i].nodes);
    }
    free(m->regions);
    free(m->boundaries);
    hk_elems_free(&m->coarse);
    free(m->cell_coarse);
    memset(m, 0, sizeof *m);
}

static int find_group(const hk_group *g, int n, const char *name)
{
    if (!name) return -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(g[i].name, name)) return i;
    return -1;
}

int hk_mesh_find_region(const hk_mesh *m, const char *name)
{
    return m ? find_group(m->regions, m->nregions, name) : -1;
}

int hk_mesh_find_boundary(const hk_mesh *m, const char *name)
{
    return m ? find_group(m->boundaries, m->nboundaries, name) : -1;
}

/* ---- builders -------------------------------------------------------------------------- */

/* Reallocate *pp to n entries of elsize bytes. */
static int resize(void *pp, int64_t n, size_t elsize)
{
    void *q = realloc(*(void **)pp, (size_t)n * elsize);
    if (!q)
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                            "out of host memory growing a mesh array to %lld entries",
                            (long long)n);
    *(void **)pp = q;
    return 0;
}

int hk_elems_push(hk_elems_builder *b, hk_eltype t, const int32_t *nodes, int64_t tag)
{
    hk_elems *e = &b->e;
    const int nn = hk_eltype_get(t)->nnodes;
    HK_CALL(hk_elems_reserve(b, 1, nn));
    const int64_t off = e->ptr[e->n];
    memcpy(e->nodes + off, nodes, (size_t)nn * sizeof *nodes);
    e->type[e->n] = (uint8_t)t;
    e->tag[e->n] = tag;
    e->ptr[e->n + 1] = off + nn;
    e->n++;
    return 0;
}

int hk_elems_reserve(hk_elems_builder *b, int64_t nelem, int64_t nnodes)
{
    hk_elems *e = &b->e;
    if (e->n + nelem + 1 > b->cap) {
        int64_t nc = b->cap ? 2 * b->cap : 64;
        while (nc < e->n + nelem + 1)
            nc *= 2;
        HK_CALL(resize(&e->type, nc, sizeof *e->type));
        HK_CALL(resize(&e->tag, nc, sizeof *e->tag));
        HK_CALL(resize(&e->ptr, nc, sizeof *e->ptr));
        b->cap = nc;
    }
    if (!e->n) e->ptr[0] = 0;
    const int64_t off = e->ptr[e->n];
    if (off + nnodes > b->ncap) {
        int64_t nc = b->ncap ? 2 * b->ncap : 256;
        while (nc < off + nnodes)
            nc *= 2;
        HK_CALL(resize(&e->nodes, nc, sizeof *e->nodes));
        b->ncap = nc;
    }
    return 0;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void hk_sort_i32(int32_t *v, int64_t n)
{
    if (n > 64) {
        qsort(v, (size_t)n, sizeof *v, cmp_i32);
        return;
    }
    for (int64_t i = 1; i < n; i++) {
        int32_t x = v[i];
        int64_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

void hk_prefix_sum(int64_t *a, int64_t n)
{
    enum { SERIAL = 1 << 16 };
    if (n < SERIAL || omp_get_max_threads() == 1) {
        for (int64_t i = 0; i < n; i++)
            a[i + 1] += a[i];
        return;
    }
    /* blocks summed on their own, then each offset by the blocks before it: integers, so the
     * same sums on any number of threads */
    enum { MAXB = 256 };
    int64_t off[MAXB + 1];
    const int nb = omp_get_max_threads() < MAXB ? omp_get_max_threads() : MAXB;
    off[0] = a[0];
#pragma omp parallel for schedule(static, 1)
    for (int b = 0; b < nb; b++) {
        const int64_t lo = 1 + n * b / nb, hi = 1 + n * (b + 1) / nb;
        int64_t s = 0;
        for (int64_t i = lo; i < hi; i++)
            s += a[i], a[i] = s;
        off[b + 1] = s;
    }
    for (int b = 0; b < nb; b++)
        off[b + 1] += off[b];
#pragma omp parallel for schedule(static, 1)
    for (int b = 0; b < nb; b++) {
        const int64_t lo = 1 + n * b / nb, hi = 1 + n * (b + 1) / nb, d = off[b];
        for (int64_t i = lo; i < hi; i++)
            a[i] += d;
    }
}

int64_t hk_number_zeros(int32_t *v, int64_t n)
{
    enum { MAXB = 256 };
    int64_t start[MAXB + 1] = {0};
    const int nb = n < (1 << 16) ? 1 : omp_get_max_threads() < MAXB ? omp_get_max_threads() : MAXB;
#pragma omp parallel for schedule(static, 1) if (nb > 1)
    for (int b = 0; b < nb; b++) {
        int64_t cnt = 0;
        for (int64_t i = n * b / nb; i < n * (b + 1) / nb; i++)
            cnt += !v[i];
        start[b + 1] = cnt;
    }
    for (int b = 0; b < nb; b++)
        start[b + 1] += start[b];
#pragma omp parallel for schedule(static, 1) if (nb > 1)
    for (int b = 0; b < nb; b++) {
        int64_t k = start[b];
        for (int64_t i = n * b / nb; i < n * (b + 1) / nb; i++)
            if (!v[i]) v[i] = (int32_t)k++;
    }
    return start[nb];
}

int hk_group_collect_nodes(hk_group *g, int64_t nnodes_total)
{
    const int64_t nn = g->elems.n ? g->elems.ptr[g->elems.n] : 0;
    const int32_t *src = g->elems.nodes;
    free(g->nodes);
    g->nodes = NULL;
    g->nnodes = 0;
    int32_t lo = 0, hi = -1;
#pragma omp parallel for schedule(static) reduction(min : lo) reduction(max : hi)
    for (int64_t k = 0; k < nn; k++) {
        lo = src[k] < lo ? src[k] : lo;
        hi = src[k] > hi ? src[k] : hi;
    }
    /* a few nodes, or nodes outside [0, nnodes_total): sorted */
    if (nn < 4096 || lo < 0 || hi >= nnodes_total) {
        HK_CALL(hk_malloc((size_t)(nn ? nn : 1) * sizeof *g->nodes, &g->nodes));
        if (nn) memcpy(g->nodes, src, (size_t)nn * sizeof *g->nodes);
        hk_sort_i32(g->nodes, nn);
        int64_t k = 0;
        for (int64_t i = 0; i < nn; i++)
            if (!k || g->nodes[i] != g->nodes[k - 1]) g->nodes[k++] = g->nodes[i];
        g->nnodes = k;
        return 0;
    }
    /* many: a bit per node of the mesh, then the set bits in order, block by block */
    const int64_t nw = (int64_t)hi / 64 + 1;
    uint64_t *bits = NULL;
    int64_t *start = NULL;
    int ierr = 0;
    enum { MAXB = 256 };
    const int nb = omp_get_max_threads() < MAXB ? omp_get_max_threads() : MAXB;
    HK_TRY(hk_calloc((size_t)nw, sizeof *bits, &bits));
    HK_TRY(hk_calloc((size_t)nb + 1, sizeof *start, &start));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nn; k++) {
#pragma omp atomic
        bits[src[k] / 64] |= (uint64_t)1 << (src[k] % 64);
    }
#pragma omp parallel for schedule(static, 1)
    for (int b = 0; b < nb; b++) {
        int64_t cnt = 0;
        for (int64_t w = nw * b / nb; w < nw * (b + 1) / nb; w++)
            cnt += __builtin_popcountll(bits[w]);
        start[b + 1] = cnt;
    }
    for (int b = 0; b < nb; b++)
        start[b + 1] += start[b];
    HK_TRY(hk_malloc((size_t)(start[nb] ? start[nb] : 1) * sizeof *g->nodes, &g->nodes));
#pragma omp parallel for schedule(static, 1)
    for (int b = 0; b < nb; b++) {
        int64_t k = start[b];
        for (int64_t w = nw * b / nb; w < nw * (b + 1) / nb; w++)
            for (uint64_t x = bits[w]; x; x &= x - 1)
                g->nodes[k++] = (int32_t)(64 * w + __builtin_ctzll(x));
    }
    g->nnodes = start[nb];
fail:
    free(bits);
    free(start);
    return ierr;
}

/* ---- orientation ----------------------------------------------------------------------- */

static void corner_coords(const hk_elems *es, int64_t e, const double *coords, double *xc)
{
    int nc = hk_eltype_ncorners((hk_eltype)es->type[e]);
    const int32_t *nd = es->nodes + es->ptr[e];
    for (int i = 0; i < nc; i++)
        for (int a = 0; a < 3; a++)
            xc[3 * i + a] = coords[3 * (int64_t)nd[i] + a];
}

static double det3(double J[3][3])
{
    return J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
           J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
           J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
}

double hk_elem_jacobian_sign(const hk_elems *es, int64_t e, const double *coords, int mdim)
{
    hk_eltype t = (hk_eltype)es->type[e];
    double xc[24], r[3], x[3], J[3][3];
    corner_coords(es, e, coords, xc);
    hk_eltype_centroid(t, r);
    if (!hk_mesh_linear_map(t, xc, r, x, J)) return 0;
    if (mdim == 2) return J[0][0] * J[1][1] - J[0][1] * J[1][0];
    return det3(J);
}

static void flip_elem(hk_elems *es, int64_t e)
{
    int perm[27];
    int32_t old[27];
    hk_eltype t = (hk_eltype)es->type[e];
    int nn = hk_eltype_get(t)->nnodes;
    int32_t *nd = es->nodes + es->ptr[e];
    if (hk_eltype_flip_perm(t, perm)) return;
    memcpy(old, nd, (size_t)nn * sizeof *nd);
    for (int i = 0; i < nn; i++)
        nd[i] = old[perm[i]];
}

int64_t hk_mesh_fix_orientation(hk_mesh *m)
{
    int64_t nflip = 0;
#pragma omp parallel for schedule(static) reduction(+ : nflip)
    for (int64_t e = 0; e < m->cells.n; e++)
        if (hk_elem_jacobian_sign(&m->cells, e, m->coords, m->dim) < 0) {
            flip_elem(&m->cells, e);
            nflip++;
        }
    return nflip;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void hk_sort_lists(const int64_t *ptr, int64_t *idx, int64_t n)
{
#pragma omp parallel for schedule(dynamic, 1024)
    for (int64_t i = 0; i < n; i++) {
        if (ptr[i + 1] - ptr[i] > 64) { /* a long one (a hub node): not quadratic */
            qsort(idx + ptr[i], (size_t)(ptr[i + 1] - ptr[i]), sizeof *idx, cmp_i64);
            continue;
        }
        for (int64_t k = ptr[i] + 1; k < ptr[i + 1]; k++) {
            int64_t x = idx[k], j = k;
            for (; j > ptr[i] && idx[j - 1] > x; j--)
                idx[j] = idx[j - 1];
            idx[j] = x;
        }
    }
}

int hk_mesh_node_cells(const hk_mesh *m, int64_t **ptr, int64_t **idx)
{
    int ierr = 0;
    const hk_elems *c = &m->cells;
    const int64_t nn = m->nnodes, tot = c->n ? c->ptr[c->n] : 0;
    int64_t *cptr = NULL, *cidx = NULL;
    *ptr = *idx = NULL;
    int64_t *fill = NULL;
    HK_TRY(hk_calloc((size_t)nn + 1, sizeof *cptr, &cptr));
    HK_TRY(hk_malloc((size_t)(tot ? tot : 1) * sizeof *cidx, &cidx));
    HK_TRY(hk_malloc((size_t)(nn ? nn : 1) * sizeof *fill, &fill));
    if (omp_get_max_threads() == 1) { /* the cells in order: each list sorted as it fills */
        for (int64_t k = 0; k < tot; k++)
            cptr[c->nodes[k] + 1]++;
        hk_prefix_sum(cptr, nn);
        memcpy(fill, cptr, (size_t)nn * sizeof *fill);
        for (int64_t e = 0; e < c->n; e++)
            for (int64_t k = c->ptr[e]; k < c->ptr[e + 1]; k++)
                cidx[fill[c->nodes[k]]++] = e;
        free(fill);
        *ptr = cptr;
        *idx = cidx;
        return 0;
    }
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < tot; k++) {
#pragma omp atomic
        cptr[c->nodes[k] + 1]++;
    }
    hk_prefix_sum(cptr, nn);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++)
        fill[i] = cptr[i];
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++)
        for (int64_t k = c->ptr[e]; k < c->ptr[e + 1]; k++) {
            int64_t pos;
#pragma omp atomic capture
            pos = fill[c->nodes[k]]++;
            cidx[pos] = e;
        }
    free(fill);
    hk_sort_lists(cptr, cidx, nn); /* whatever order the threads filled them in */
    *ptr = cptr;
    *idx = cidx;
    return 0;
fail:
    free(cptr);
    free(cidx);
    return ierr;
}

int hk_mesh_orient_facets(hk_mesh *m)
{
    int ierr = 0;
    int64_t *cptr = NULL, *cidx = NULL;
    const hk_elems *c = &m->cells;
    HK_TRY(hk_mesh_node_cells(m, &cptr, &cidx));
    for (int g = 0; g < m->nboundaries; g++) {
        hk_elems *f = &m->boundaries[g].elems;
        if (m->boundaries[g].dim != m->dim - 1) continue;
#pragma omp parallel for schedule(static)
        for (int64_t e = 0; e < f->n; e++) {
            hk_eltype ft = (hk_eltype)f->type[e];
            int nfc = hk_eltype_ncorners(ft);
            const int32_t *fn = f->nodes + f->ptr[e];
            int64_t cell = -1;
            for (int64_t k = cptr[fn[0]]; k < cptr[fn[0] + 1] && cell < 0; k++) {
                int64_t ce = cidx[k], hits = 0;
                for (int a = 0; a < nfc; a++)
                    for (int64_t j = c->ptr[ce]; j < c->ptr[ce + 1]; j++)
                        if (c->nodes[j] == fn[a]) {
                            hits++;
                            break;
                        }
                if (hits == nfc) cell = ce;
            }
            if (cell < 0) continue; /* not on a cell (should not happen): leave as is */
            double xf[24], xcl[24], r[3], pf[3], pc[3], J[3][3], Jc[3][3], nrm[3];
            corner_coords(f, e, m->coords, xf);
            hk_eltype_centroid(ft, r);
            hk_mesh_linear_map(ft, xf, r, pf, J);
            corner_coords(c, cell, m->coords, xcl);
            hk_eltype_centroid((hk_eltype)c->type[cell], r);
            hk_mesh_linear_map((hk_eltype)c->type[cell], xcl, r, pc, Jc);
            if (m->dim == 2) {
                nrm[0] = J[1][0], nrm[1] = -J[0][0], nrm[2] = 0;
            } else {
                nrm[0] = J[1][0] * J[2][1] - J[2][0] * J[1][1];
                nrm[1] = J[2][0] * J[0][1] - J[0][0] * J[2][1];
                nrm[2] = J[0][0] * J[1][1] - J[1][0] * J[0][1];
            }
            double d = 0;
            for (int a = 0; a < 3; a++)
                d += nrm[a] * (pf[a] - pc[a]);
            if (d < 0) flip_elem(f, e);
        }
    }
fail:
    free(cptr);
    free(cidx);
    return ierr;
}

/* ---- structured generators ------------------------------------------------------------- */

/* A grid of cells, each split into 1 element (quadrilateral, hexahedron), 2 triangles or 6
 * tetrahedra, on a fine grid of points (order o: o points a cell along each axis, and one
 * more). Every cell is alike, so an element's nodes sit at fixed offsets from its cell's first
 * point (a table made once through the element's linear map) and every element is made from
 * them on its own: in parallel, the same on any number of threads. */
typedef struct {
    int dim, order;
    int64_t N[3];         /* fine-grid points per axis, the whole grid's */
    int lo[3], hi[3];     /* the cells made along each axis: lo .. hi - 1 */
    int64_t I0[3], Nl[3]; /* the points they use: I0 .. I0 + Nl - 1 per axis */
    int32_t *newid;       /* each of those points' node, -1 where no cell uses it */
} gen;

/* The elements of one cell (or of one square or segment of a side): their nodes as fine-grid
 * offsets from its first point. */
typedef struct {
    int per, nn; /* elements, nodes of each */
    int64_t off[6][27][3];
} elem_table;

/* A fine-grid point's index among the points of the cells made. */
static int64_t fine_id(const gen *g, const int64_t *I)
{
    return (I[0] - g->I0[0]) + g->Nl[0] * ((I[1] - g->I0[1]) + g->Nl[1] * (I[2] - g->I0[2]));
}

/* The nodes of element t whose corners sit at fine-grid points cf (3 per corner): the
 * higher-order nodes from the reference coordinates through the linear map. */
static void mapped_points(hk_eltype t, const int64_t *cf, int64_t (*pt)[3])
{
    const hk_eltype_info *in = hk_eltype_get(t);
    const double *rc = hk_eltype_ref_coords(t);
    double xc[24], x[3], J[3][3];
    for (int i = 0; i < 3 * hk_eltype_ncorners(t); i++)
        xc[i] = (double)cf[i];
    for (int i = 0; i < in->nnodes; i++) {
        hk_mesh_linear_map(t, xc, rc + 3 * i, x, J);
        for (int a = 0; a < 3; a++)
            pt[i][a] = (int64_t)llround(x[a]);
    }
}

/* The elements of type t of the cell at the grid's first point, in the order they are made. */
static void cell_table(const gen *g, hk_eltype t, elem_table *tb)
{
    const int o = g->order;
    const int simplex = t == HK_EL_TRI3 || t == HK_EL_TRI6 || t == HK_EL_TET4 || t == HK_EL_TET10;
    tb->nn = hk_eltype_get(t)->nnodes;
    /* corner c of the cube/square at bits (bx, by, bz) */
#define CORNER(dst, bx, by, bz) ((dst)[0] = o * (bx), (dst)[1] = o * (by), (dst)[2] = o * (bz))
    if (!simplex) {
        const double *rc = hk_eltype_ref_coords(t);
        int64_t cf[24];
        for (int c = 0; c < hk_eltype_ncorners(t); c++)
            CORNER(cf + 3 * c, rc[3 * c] > 0, rc[3 * c + 1] > 0, rc[3 * c + 2] > 0);
        tb->per = 1;
        mapped_points(t, cf, tb->off[0]);
    } else if (g->dim == 2) {
        int64_t cf[9];
        CORNER(cf, 0, 0, 0);
        CORNER(cf + 3, 1, 0, 0);
        CORNER(cf + 6, 1, 1, 0);
        mapped_points(t, cf, tb->off[0]);
        CORNER(cf, 0, 0, 0);
        CORNER(cf + 3, 1, 1, 0);
        CORNER(cf + 6, 0, 1, 0);
        mapped_points(t, cf, tb->off[1]);
        tb->per = 2;
    } else {
        /* Kuhn split: 6 tets around the diagonal 000-111, one per axis order; every cube face
         * is cut along its lowest-highest diagonal, so neighbouring cubes match. */
        static const int perm6[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                        {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
        for (int p = 0; p < 6; p++) {
            int b[3] = {0, 0, 0};
            int64_t cf[12];
            CORNER(cf, 0, 0, 0);
            for (int s = 0; s < 3; s++) {
                b[perm6[p][s]] = 1;
                CORNER(cf + 3 * (s + 1), b[0], b[1], b[2]);
            }
            /* even permutations are positive; swap corners 1, 2 otherwise */
            if (p == 1 || p == 2 || p == 5)
                for (int a = 0; a < 3; a++) {
                    int64_t tmp = cf[3 + a];
                    cf[3 + a] = cf[6 + a], cf[6 + a] = tmp;
                }
            mapped_points(t, cf, tb->off[p]);
        }
        tb->per = 6;
    }
#undef CORNER
}

/* The axes a side of axis a runs along: u, then v (2D: v is z, one layer). */
static void side_axes(int dim, int a, int *u, int *v)
{
    *u = dim == 2 ? 1 - a : a == 0 ? 1 : 0;
    *v = dim == 2 || a != 2 ? 2 : 1;
}

/* The facets of side s (axis a = s / 2 at its min (s even) or max) of one square (2D: one
 * segment) at the grid's first point, oriented outward, the coordinate along a 0. */
static void side_table(const gen *g, hk_eltype ft, int s, elem_table *tb)
{
    const int o = g->order, a = s / 2, hi = s % 2;
    int u, v;
    side_axes(g->dim, a, &u, &v);
    tb->nn = hk_eltype_get(ft)->nnodes;
    if (g->dim == 2) {
        int64_t p0[3] = {0, 0, 0}, p1[3] = {0, 0, 0}, cf[6];
        p1[u] = o;
        /* counter-clockwise boundary: bottom and right run forward, top and left back */
        int fwd = (a == 1 && !hi) || (a == 0 && hi);
        memcpy(cf, fwd ? p0 : p1, sizeof p0);
        memcpy(cf + 3, fwd ? p1 : p0, sizeof p0);
        tb->per = 1;
        mapped_points(ft, cf, tb->off[0]);
        return;
    }
    /* e_u x e_v is +x for a = 0, -y for a = 1, +z for a = 2; outward is +e_a on the max side */
    int cross_pos = a != 1, outward_pos = hi;
    int pos = cross_pos == outward_pos;
    int tri = ft == HK_EL_TRI3 || ft == HK_EL_TRI6;
    int64_t p[4][3]; /* p00 p10 p11 p01 */
    static const int du[4] = {0, 1, 1, 0}, dv[4] = {0, 0, 1, 1};
    for (int c = 0; c < 4; c++) {
        p[c][a] = 0;
        p[c][u] = (int64_t)o * du[c];
        p[c][v] = (int64_t)o * dv[c];
    }
    int64_t cf[12];
#define SET(slot, c) memcpy(cf + 3 * (slot), p[c], sizeof p[c])
    if (tri) {
        if (pos)
            SET(0, 0), SET(1, 1), SET(2, 2);
        else
            SET(0, 0), SET(1, 2), SET(2, 1);
        mapped_points(ft, cf, tb->off[0]);
        if (pos)
            SET(0, 0), SET(1, 2), SET(2, 3);
        else
            SET(0, 0), SET(1, 3), SET(2, 2);
        mapped_points(ft, cf, tb->off[1]);
        tb->per = 2;
    } else {
        if (pos)
            SET(0, 0), SET(1, 1), SET(2, 2), SET(3, 3);
        else
            SET(0, 0), SET(1, 3), SET(2, 2), SET(3, 1);
        mapped_points(ft, cf, tb->off[0]);
        tb->per = 1;
    }
#undef SET
}

/* n elements of type t, nn nodes each, tags 1 .. n. */
static int elems_alloc(hk_elems *e, hk_eltype t, int64_t n, int nn)
{
    memset(e, 0, sizeof *e);
    HK_CALL(hk_calloc(1, (size_t)(n + 1) * sizeof *e->ptr, &e->ptr));
    if (!n) return 0;
    HK_CALL(hk_malloc((size_t)n * sizeof *e->type, &e->type));
    HK_CALL(hk_malloc((size_t)n * sizeof *e->tag, &e->tag));
    HK_CALL(hk_malloc((size_t)(n * nn) * sizeof *e->nodes, &e->nodes));
    e->n = n;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++) {
        e->type[k] = (uint8_t)t;
        e->tag[k] = k + 1;
        e->ptr[k + 1] = (k + 1) * nn;
    }
    return 0;
}

/* The cells made, in order (cell by cell, x fastest, then y and z; a cell's elements in the
 * table's order), and each point's node: the points some cell uses, in the grid's order. */
static int gen_cells(gen *g, hk_eltype t, hk_elems *c, int64_t *nnodes)
{
    elem_table tb;
    cell_table(g, t, &tb);
    const int64_t o = g->order, nn = tb.nn, per = tb.per;
    const int64_t m0 = g->hi[0] - g->lo[0], m1 = g->hi[1] - g->lo[1], m2 = g->hi[2] - g->lo[2];
    const int64_t ncell = m0 * m1 * m2, nfine = g->Nl[0] * g->Nl[1] * g->Nl[2];
    const int64_t N0 = g->Nl[0], N01 = g->Nl[0] * g->Nl[1];
    int64_t off[6][27]; /* the table's offsets as indices among the points */
    for (int p = 0; p < per; p++)
        for (int i = 0; i < nn; i++)
            off[p][i] = tb.off[p][i][0] + N0 * tb.off[p][i][1] + N01 * tb.off[p][i][2];
    HK_CALL(hk_malloc((size_t)nfine * sizeof *g->newid, &g->newid));
    int32_t *newid = g->newid;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nfine; i++)
        newid[i] = -1;
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < ncell; q++) {
        const int64_t b = o * (q % m0) + N0 * o * ((q / m0) % m1) + N01 * o * (q / (m0 * m1));
        for (int p = 0; p < per; p++)
            for (int i = 0; i < nn; i++) {
#pragma omp atomic write
                newid[b + off[p][i]] = 0;
            }
    }
    *nnodes = hk_number_zeros(newid, nfine);
    HK_CALL(elems_alloc(c, t, per * ncell, (int)nn));
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < ncell; q++) {
        const int64_t b = o * (q % m0) + N0 * o * ((q / m0) % m1) + N01 * o * (q / (m0 * m1));
        int32_t *nd = c->nodes + q * per * nn;
        for (int p = 0; p < per; p++)
            for (int i = 0; i < nn; i++)
                *nd++ = newid[b + off[p][i]];
    }
    return 0;
}

/* Side s's facets (axis a = s / 2 at its min (s even) or max), oriented outward: square by
 * square (u fastest, side_axes), a square's facets in the table's order; none where the side's
 * cells are not made. */
static int gen_side(const gen *g, hk_eltype ft, int s, const int *n, hk_elems *f)
{
    const int o = g->order, a = s / 2, hi = s % 2;
    if (hi ? g->hi[a] < n[a] : g->lo[a] > 0) return elems_alloc(f, ft, 0, 0);
    int u, v;
    side_axes(g->dim, a, &u, &v);
    elem_table tb;
    side_table(g, ft, s, &tb);
    const int64_t mu = g->hi[u] - g->lo[u], mv = g->hi[v] - g->lo[v], nn = tb.nn, per = tb.per;
    const int64_t at = hi ? g->N[a] - 1 : 0;
    HK_CALL(elems_alloc(f, ft, per * mu * mv, (int)nn));
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < mu * mv; q++) {
        int32_t *nd = f->nodes + q * per * nn;
        for (int p = 0; p < per; p++)
            for (int i = 0; i < nn; i++) {
                int64_t I[3];
                I[a] = at + tb.off[p][i][a];
                I[u] = o * (g->lo[u] + q % mu) + tb.off[p][i][u];
                I[v] = o * (g->lo[v] + q / mu) + tb.off[p][i][v];
                *nd++ = g->newid[fine_id(g, I)];
            }
    }
    return 0;
}

/* The grid's cells whose index along axis lies in lo .. hi - 1 (all: 0 .. n[axis]), their
 * nodes and groups. */
static int generate(int dim, const double *L, const int *n, hk_eltype t, int axis, int lo, int hi,
                    hk_mesh *m)
{
    static const char *names2[] = {"left", "right", "bottom", "top"};
    static const char *names3[] = {"xmin", "xmax", "ymin", "ymax", "zmin", "zmax"};
    int ierr = 0;
    const int nsides = 2 * dim;
    gen g;
    memset(&g, 0, sizeof g);
    g.dim = dim;
    g.order = hk_eltype_get(t)->order;
    for (int a = 0; a < 3; a++) {
        g.N[a] = a < dim ? (int64_t)g.order * n[a] + 1 : 1;
        g.lo[a] = a == axis ? lo : 0;
        g.hi[a] = a == axis ? hi : a < dim ? n[a] : 1;
        g.I0[a] = (int64_t)g.order * g.lo[a];
        g.Nl[a] = a < dim ? (int64_t)g.order * (g.hi[a] - g.lo[a]) + 1 : 1;
    }
    HK_TRY_CHECK((double)g.N[0] * (double)g.N[1] * (double)g.N[2] <= (double)INT32_MAX, HK_ERR_ARG,
                 "generated mesh is too large (more than 2^31 grid points); use fewer cells");
    m->dim = dim;
    HK_TRY(gen_cells(&g, t, &m->cells, &m->nnodes));
    /* the nodes' coordinates: the whole grid's, L I / (N - 1) along each axis */
    HK_TRY(hk_malloc((size_t)(3 * m->nnodes) * sizeof *m->coords, &m->coords));
#pragma omp parallel for schedule(static) collapse(2)
    for (int64_t k = 0; k < g.Nl[2]; k++)
        for (int64_t j = 0; j < g.Nl[1]; j++)
            for (int64_t i = 0; i < g.Nl[0]; i++) {
                const int32_t id = g.newid[i + g.Nl[0] * (j + g.Nl[1] * k)];
                if (id < 0) continue;
                const int64_t I[3] = {i + g.I0[0], j + g.I0[1], k + g.I0[2]};
                for (int a = 0; a < 3; a++)
                    m->coords[3 * (int64_t)id + a] =
                        a < dim ? L[a] * (double)I[a] / (double)(g.N[a] - 1) : 0.0;
            }
    HK_TRY(hk_calloc((size_t)m->cells.n, sizeof *m->cell_region, &m->cell_region));
    HK_TRY(hk_calloc(1, sizeof *m->regions, &m->regions));
    m->nregions = 1;
    snprintf(m->regions[0].name, sizeof m->regions[0].name, "domain");
    m->regions[0].dim = dim;
    m->regions[0].tag = 1;
    HK_TRY(hk_calloc((size_t)nsides + 1, sizeof *m->boundaries, &m->boundaries));
    m->nboundaries = nsides + 1;
    const hk_eltype ft = hk_eltype_facet(t);
    for (int s = 0; s <= nsides; s++) {
        hk_group *gr = &m->boundaries[s];
        snprintf(gr->name, sizeof gr->name, "%s",
                 s == nsides ? "origin" : (dim == 2 ? names2[s] : names3[s]));
        gr->dim = s == nsides ? 0 : dim - 1;
        gr->tag = s + 1;
        if (s < nsides)
            HK_TRY(gen_side(&g, ft, s, n, &gr->elems));
        else {
            /* the point group "origin": the node at (0,0,0), the first point, where the cells
             * made start there */
            const int at0 = !g.I0[0] && !g.I0[1] && !g.I0[2];
            HK_TRY(elems_alloc(&gr->elems, HK_EL_POINT1, at0, 1));
            if (at0) gr->elems.nodes[0] = g.newid[0];
        }
        HK_TRY(hk_group_collect_nodes(gr, m->nnodes));
    }
fail:
    free(g.newid);
    if (ierr) hk_mesh_free(m);
    return ierr;
}

static int check_sizes(const char *fn, int dim, const double *L, const int *n)
{
    static const char ax[] = "xyz";
    for (int a = 0; a < dim; a++) {
        HK_CHECK(isfinite(L[a]) && L[a] > 0, HK_ERR_ARG,
                 "%s: the length along %c is %g; give a positive size", fn, ax[a], L[a]);
        HK_CHECK(n[a] >= 1 && n[a] <= 1 << 20, HK_ERR_ARG,
                 "%s: %d cells along %c; give between 1 and 2^20 cells", fn, n[a], ax[a]);
    }
    return 0;
}

int hk_mesh_rectangle(double lx, double ly, int nx, int ny, hk_eltype t, hk_mesh *m)
{
    HK_CHECK(m, HK_ERR_ARG, "hk_mesh_rectangle: the output mesh is NULL");
    memset(m, 0, sizeof *m);
    double L[3] = {lx, ly, 0};
    int n[3] = {nx, ny, 1};
    HK_CALL(check_sizes("hk_mesh_rectangle", 2, L, n));
    const hk_eltype_info *in = hk_eltype_get(t);
    HK_CHECK(in && in->dim == 2 && hk_eltype_has_kernel(t), HK_ERR_ARG,
             "hk_mesh_rectangle: element type %s is not a 2D cell type; use tri3, tri6, quad4, "
             "quad8 or quad9",
             in ? in->name : "(invalid)");
    return generate(2, L, n, t, 0, 0, nx, m);
}

int hk_mesh_box(double lx, double ly, double lz, int nx, int ny, int nz, hk_eltype t, hk_mesh *m)
{
    HK_CHECK(m, HK_ERR_ARG, "hk_mesh_box: the output mesh is NULL");
    memset(m, 0, sizeof *m);
    double L[3] = {lx, ly, lz};
    int n[3] = {nx, ny, nz};
    HK_CALL(check_sizes("hk_mesh_box", 3, L, n));
    const hk_eltype_info *in = hk_eltype_get(t);
    HK_CHECK(in && t >= HK_EL_TET4 && t <= HK_EL_HEX27, HK_ERR_ARG,
             "hk_mesh_box: element type %s is not a 3D cell type the generator makes; use tet4, "
             "tet10, hex8, hex20 or hex27",
             in ? in->name : "(invalid)");
    return generate(3, L, n, t, 0, 0, nx, m);
}

static int grid_slab(const char *fn, int dim, const double *size, const int *cells, hk_eltype t,
                     int axis, int lo, int hi, hk_mesh *m)
{
    HK_CHECK(m && size && cells && (dim == 2 || dim == 3), HK_ERR_ARG,
             "%s: a NULL argument or dimension %d (2 or 3)", fn, dim);
    memset(m, 0, sizeof *m);
    double L[3] = {size[0], size[1], dim == 3 ? size[2] : 0};
    int n[3] = {cells[0], cells[1], dim == 3 ? cells[2] : 1};
    HK_CALL(check_sizes(fn, dim, L, n));
    const hk_eltype_info *in = hk_eltype_get(t);
    HK_CHECK(in && hk_eltype_has_kernel(t) &&
                 (dim == 2 ? in->dim == 2 : t >= HK_EL_TET4 && t <= HK_EL_HEX27),
             HK_ERR_ARG, "%s: element type %s is not one the %dD generator makes", fn,
             in ? in->name : "(invalid)", dim);
    HK_CHECK(axis >= 0 && axis < dim && 0 <= lo && lo < hi && hi <= n[axis], HK_ERR_ARG,
             "%s: cells %d .. %d along axis %d of %d cells", fn, lo, hi - 1, axis, n[axis]);
    return generate(dim, L, n, t, axis, lo, hi, m);
}

int hk_mesh_grid_slab(int dim, const double *size, const int *cells, hk_eltype t, int axis, int lo,
                      int hi, hk_mesh *m)
{
    return grid_slab("hk_mesh_grid_slab", dim, size, cells, t, axis, lo, hi, m);
}
