/* Lookups shared by assembly/: names of regions and boundary groups, the nodes of a group,
 * the quadrature points of a boundary's facets, the thickness, the temperature change of a
 * region.
 *
 * Facet normals: the outward normal is not taken from the facet's node order: each facet's
 * normal is compared with the vector from the centroid of the adjacent cell to the facet's
 * centroid and flipped when they disagree, so facets of either orientation load the body the
 * same way. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "elements.h"
#include "groups.h"

const char *hk_asm_region_name(const hk_mesh *m, int r)
{
    static _Thread_local char buf[32];
    if (m->regions && r >= 0 && r < m->nregions && m->regions[r].name[0]) return m->regions[r].name;
    snprintf(buf, sizeof buf, "#%d", r);
    return buf;
}

const char *hk_asm_boundary_name(const hk_mesh *m, int b)
{
    static _Thread_local char buf[32];
    if (m->boundaries && b >= 0 && b < m->nboundaries && m->boundaries[b].name[0])
        return m->boundaries[b].name;
    snprintf(buf, sizeof buf, "#%d", b);
    return buf;
}

long long hk_asm_tag(const hk_elems *es, int64_t e)
{
    return es->tag ? (long long)es->tag[e] : (long long)(e + 1);
}
double hk_problem_region_dT(const hk_problem *p, int r)
{
    double t = 0;
    for (int l = 0; l < p->nloads; l++)
        if (p->loads[l].kind == HK_LOAD_TEMPERATURE &&
            (p->loads[l].boundary < 0 || p->loads[l].boundary == r))
            t += p->loads[l].value[0];
    return t;
}

double hk_asm_thickness(const hk_problem *p)
{
    if (p->mesh->dim != 2 || p->analysis == HK_AXISYMMETRIC) return 1; /* axisymmetric: r */
    return p->thickness == 0 ? 1 : p->thickness;
}

int hk_group_nodes(const hk_mesh *m, int b, int64_t *n, int32_t **nodes)
{
    const hk_group *g = &m->boundaries[b];
    *n = 0;
    *nodes = NULL;
    if (g->nnodes > 0 && g->nodes) {
        HK_CALL(hk_malloc((size_t)g->nnodes * sizeof **nodes, nodes));
        memcpy(*nodes, g->nodes, (size_t)g->nnodes * sizeof **nodes);
        *n = g->nnodes;
    } else if (g->elems.n > 0) { /* unique nodes of its elements */
        uint8_t *seen;
        int64_t cnt = 0, tot = g->elems.ptr[g->elems.n];
        HK_CALL(hk_calloc((size_t)m->nnodes + 1, 1, &seen));
        int ierr = hk_malloc((size_t)tot * sizeof **nodes + 1, nodes);
        if (ierr) {
            free(seen);
            return ierr;
        }
        for (int64_t k = 0; k < tot; k++) {
            int32_t v = g->elems.nodes[k];
            if (v < 0 || v >= m->nnodes) {
                free(seen);
                free(*nodes);
                *nodes = NULL;
                return hk_error_set(HK_ERR_MODEL, __FILE__, __LINE__,
                                    "boundary '%s' refers to node %d, outside the mesh's %lld "
                                    "nodes; the mesh is corrupt",
                                    hk_asm_boundary_name(m, b), v, (long long)m->nnodes);
            }
            if (!seen[v]) seen[v] = 1, (*nodes)[cnt++] = v;
        }
        free(seen);
        *n = cnt;
    }
    for (int64_t i = 0; i < *n; i++)
        if ((*nodes)[i] < 0 || (*nodes)[i] >= m->nnodes) {
            int32_t v = (*nodes)[i];
            free(*nodes);
            *nodes = NULL;
            return hk_error_set(HK_ERR_MODEL, __FILE__, __LINE__,
                                "boundary '%s' refers to node %d, outside the mesh's %lld "
                                "nodes; the mesh is corrupt",
                                hk_asm_boundary_name(m, b), v, (long long)m->nnodes);
        }
    return 0;
}

/* Does cell e contain node v? */
static int cell_has(const hk_mesh *m, int64_t e, int32_t v)
{
    for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++)
        if (m->cells.nodes[k] == v) return 1;
    return 0;
}

/* Geometric normal of the facet with reference r and nodes fn, from its shape-function
 * derivatives dN at one point: the tangents' cross product (a line's tangent turned by -90
 * degrees in 2D). Its length is the length/area element there. */
static void facet_normal(const hk_mesh *m, const hk_elref *fr, const int32_t *fn,
                         const double dN[][3], double nrm[3])
{
    double t[2][3] = {{0}};
    for (int a = 0; a < fr->nnodes; a++)
        for (int k = 0; k < fr->dim; k++)
            for (int i = 0; i < 3; i++)
                t[k][i] += m->coords[3 * (size_t)fn[a] + i] * dN[a][k];
    if (fr->dim == 1) {
        nrm[0] = t[0][1], nrm[1] = -t[0][0], nrm[2] = 0;
    } else {
        nrm[0] = t[0][1] * t[1][2] - t[0][2] * t[1][1];
        nrm[1] = t[0][2] * t[1][0] - t[0][0] * t[1][2];
        nrm[2] = t[0][0] * t[1][1] - t[0][1] * t[1][0];
    }
}

/* The facet rule of one facet type, its shape functions and their derivatives there, and the
 * derivatives at the reference centroid (the outward sign's normal): the same for every facet
 * of the type, so tabulated once per call (each value from the same hk_el_shape call the
 * facet loop made at every point). */
typedef struct facet_tab {
    int nq;
    double qw[HK_EL_MAXQ];
    double N[HK_EL_MAXQ][HK_EL_MAXN];
    double dN[HK_EL_MAXQ][HK_EL_MAXN][3];
    double dNc[HK_EL_MAXN][3];
} facet_tab;

static void facet_tabulate(hk_eltype t, const hk_elref *fr, facet_tab *tb)
{
    double qp[HK_EL_MAXQ][3];
    hk_elref_facet_rule(t, &tb->nq, qp, tb->qw);
    for (int q = 0; q < tb->nq; q++)
        hk_el_shape(t, qp[q], tb->N[q], tb->dN[q]);
    double xi[3] = {0, 0, 0};
    if (fr->simplex) xi[0] = xi[1] = 1.0 / 3;
    hk_el_shape(fr->type, xi, NULL, tb->dNc);
}

/* Sign (+1/-1) that turns the facet's geometric normal outward, from the cells that hold all
 * of the facet's corners (dNc: the derivatives at its reference centroid). Errors: the facet
 * is on no cell, or (pressure) between two. */
static int facet_sign(const hk_problem *p, const hk_adj *n2c, int b, int64_t fe, const hk_elref *fr,
                      const int32_t *fn, const double dNc[][3], double *sign)
{
    const hk_mesh *m = p->mesh;
    const hk_group *g = &m->boundaries[b];
    int64_t found = -1, nfound = 0;
    for (int64_t c = n2c->ptr[fn[0]]; c < n2c->ptr[fn[0] + 1]; c++) {
        int64_t e = n2c->idx[c], ok = 1;
        for (int a = 1; a < fr->ncorners && ok; a++)
            ok = cell_has(m, e, fn[a]);
        if (ok) {
            if (nfound == 0) found = e;
            nfound++;
        }
    }
    HK_CHECK(nfound > 0, HK_ERR_MODEL,
             "facet %lld (%s, Gmsh tag %lld) of boundary '%s' is not a face of any %dD element; "
             "put the loaded surface on the boundary of the meshed domain",
             (long long)fe, fr->name, hk_asm_tag(&g->elems, fe), hk_asm_boundary_name(m, b),
             m->dim);
    HK_CHECK(nfound == 1, HK_ERR_MODEL,
             "facet %lld (%s, Gmsh tag %lld) of boundary '%s' lies between two elements, so its "
             "outward normal is ambiguous; apply pressure on the outer boundary only, or use a "
             "traction",
             (long long)fe, fr->name, hk_asm_tag(&g->elems, fe), hk_asm_boundary_name(m, b));
    /* centroids from the corners */
    const hk_elref *cr = hk_elref_get((hk_eltype)m->cells.type[found]);
    const int32_t *cn = m->cells.nodes + m->cells.ptr[found];
    double cc[3] = {0, 0, 0}, fc[3] = {0, 0, 0};
    for (int a = 0; a < cr->ncorners; a++)
        for (int i = 0; i < 3; i++)
            cc[i] += m->coords[3 * (size_t)cn[a] + i] / cr->ncorners;
    for (int a = 0; a < fr->ncorners; a++)
        for (int i = 0; i < 3; i++)
            fc[i] += m->coords[3 * (size_t)fn[a] + i] / fr->ncorners;
    /* geometric normal at the facet's reference centroid */
    double nrm[3];
    facet_normal(m, fr, fn, dNc, nrm);
    double dot = 0;
    for (int i = 0; i < 3; i++)
        dot += nrm[i] * (fc[i] - cc[i]);
    *sign = dot < 0 ? -1 : 1;
    return 0;
}

/* One quadrature point of a facet: its place, weight and unit normal. */
typedef struct facet_pt {
    double x[3], w, nrm[3];
} facet_pt;

/* Facet fe of boundary b: a facet element of the mesh's dimension whose nodes are in the mesh
 * and on its cells (what: the load's name for the sentence). */
static int facet_check(const hk_problem *p, const hk_adj *n2c, int b, int64_t fe, const char *what)
{
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    const hk_group *g = &m->boundaries[b];
    const char *bn = hk_asm_boundary_name(m, b);
    const int t = g->elems.type[fe];
    const hk_elref *fr = hk_elref_get((hk_eltype)t);
    HK_CHECK(fr && fr->dim == d - 1 && g->elems.ptr[fe + 1] - g->elems.ptr[fe] == fr->nnodes,
             HK_ERR_MODEL,
             "facet %lld (%s, Gmsh tag %lld) of boundary '%s' is not a %s element; %s acts "
             "on %s",
             (long long)fe, hk_el_name(t), hk_asm_tag(&g->elems, fe), bn,
             d == 2 ? "line" : "surface", what,
             d == 2 ? "line2/line3 facets" : "tri3/tri6/quad4/quad8/quad9 facets");
    const int32_t *fn_ = g->elems.nodes + g->elems.ptr[fe];
    for (int a = 0; a < fr->nnodes; a++) {
        HK_CHECK(fn_[a] >= 0 && fn_[a] < m->nnodes, HK_ERR_MODEL,
                 "facet %lld of boundary '%s' refers to node %d, outside the mesh; the "
                 "mesh is corrupt",
                 (long long)fe, bn, fn_[a]);
        HK_CHECK(n2c->ptr[fn_[a] + 1] > n2c->ptr[fn_[a]], HK_ERR_MODEL,
                 "facet %lld (%s, Gmsh tag %lld) of boundary '%s' has node %d that belongs "
                 "to no %dD element, so %s would be lost there; use the meshed domain's "
                 "boundary",
                 (long long)fe, fr->name, hk_asm_tag(&g->elems, fe), bn, fn_[a], d, what);
    }
    return 0;
}

/* Facet fe's point with shape functions N, dN and rule weight qw (fn_ its nodes, sign its
 * orientation, fac the thickness): the unit normal, the position and the weight qw fac r dA
 * (r: the radius of an axisymmetric analysis); a degenerate facet named. */
static int facet_point(const hk_problem *p, int b, int64_t fe, const hk_elref *fr,
                       const int32_t *fn_, const double *N, const double dN[][3], double qw,
                       double sign, double fac, facet_pt *pt)
{
    const hk_mesh *m = p->mesh;
    double nrm[3], x[3] = {0, 0, 0};
    facet_normal(m, fr, fn_, dN, nrm);
    /* |nrm| is the length/area element */
    const double dA = sqrt(nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2]);
    HK_CHECK(dA > 0, HK_ERR_MODEL,
             "facet %lld (%s, Gmsh tag %lld) of boundary '%s' is degenerate (zero area); check "
             "the mesh",
             (long long)fe, fr->name, hk_asm_tag(&m->boundaries[b].elems, fe),
             hk_asm_boundary_name(m, b));
    for (int i = 0; i < 3; i++)
        pt->nrm[i] = sign * nrm[i] / dA;
    for (int a = 0; a < fr->nnodes; a++)
        for (int i = 0; i < 3; i++)
            x[i] += N[a] * m->coords[3 * (size_t)fn_[a] + i];
    memcpy(pt->x, x, sizeof x);
    /* axisymmetric: per radian of the ring (area element r ds), like the stiffness; a mesher's
     * axis node at r = -1e-17 gives no negative weight */
    const double r = p->analysis == HK_AXISYMMETRIC ? fmax(x[0], 0) : 1;
    pt->w = qw * fac * r * dA;
    return 0;
}

/* Facet fe of boundary b checked and its points into pt (tab: each facet type's table, NULL
 * for a type that is no facet here); read-only on the mesh, so any thread's. */
static int facet_eval(const hk_problem *p, const hk_adj *n2c, int b, int64_t fe, const char *what,
                      int outward, facet_tab *const *tab, facet_pt *pt)
{
    const hk_mesh *m = p->mesh;
    const hk_group *g = &m->boundaries[b];
    const double fac = hk_asm_thickness(p);
    const int t = g->elems.type[fe];
    const hk_elref *fr = hk_elref_get((hk_eltype)t);
    HK_CALL(facet_check(p, n2c, b, fe, what));
    const facet_tab *tb = tab[t];
    const int32_t *fn_ = g->elems.nodes + g->elems.ptr[fe];
    double sign = 1;
    if (outward) HK_CALL(facet_sign(p, n2c, b, fe, fr, fn_, tb->dNc, &sign));
    for (int q = 0; q < tb->nq; q++)
        HK_CALL(
            facet_point(p, b, fe, fr, fn_, tb->N[q], tb->dN[q], tb->qw[q], sign, fac, &pt[q]));
    return 0;
}

/* hk_facet_points_ranged a block of facets at a time: the threads evaluate the block's points
 * (each facet type's rule and shape functions tabulated once), then each thread takes them in
 * the facets' order for the nodes of its own range. */
enum { FACET_BLOCK = 4096, FACET_BUCKETS = 4096 };

/* The node range [lo, hi) of each of nt threads, cut where the facets' node references
 * (counted in FACET_BUCKETS buckets of the node numbers) are shared out evenly: cum[k] the
 * references of buckets 0..k-1. */
static void thread_range(const int64_t *cum, int64_t nn, int nt, int t, int32_t *lo, int32_t *hi)
{
    const int64_t nb = FACET_BUCKETS, total = cum[nb];
    int64_t k0 = 0, k1 = nb;
    while (k0 < nb && cum[k0] < total * t / nt)
        k0++;
    if (t + 1 < nt)
        for (k1 = k0; k1 < nb && cum[k1] < total * (t + 1) / nt; k1++)
            ;
    *lo = (int32_t)((k0 * nn + nb - 1) / nb); /* the first node of bucket k0 */
    *hi = (int32_t)((k1 * nn + nb - 1) / nb);
}

int hk_facet_points_ranged(const hk_problem *p, const hk_adj *n2c, int b, const char *what,
                           int outward, hk_facet_range_fn rfn, void *ctx)
{
    int ierr = 0;
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    const hk_group *g = &m->boundaries[b];
    const char *bn = hk_asm_boundary_name(m, b);
    HK_CHECK(g->elems.n > 0 && g->dim == d - 1, HK_ERR_MODEL,
             "%s needs a boundary of dimension %d, but boundary '%s' has dimension %d and %lld "
             "elements; apply it on a %s group",
             what, d - 1, bn, g->dim, (long long)g->elems.n, d == 2 ? "curve" : "surface");
    const int64_t nf = g->elems.n, nn = m->nnodes;
    facet_tab *tab[256] = {NULL};
    facet_pt *pts = NULL;
    int64_t *cum = NULL;
    /* the facet types present, tabulated (a type that is no facet here: facet_eval says so) */
    uint8_t seen[256] = {0};
    for (int64_t fe = 0; fe < nf; fe++)
        seen[g->elems.type[fe]] = 1;
    int maxq = 1;
    for (int t = 0; t < 256; t++) {
        const hk_elref *fr = seen[t] ? hk_elref_get((hk_eltype)t) : NULL;
        if (!fr || fr->dim != d - 1) continue;
        HK_TRY(hk_malloc(sizeof *tab[t], &tab[t]));
        facet_tabulate((hk_eltype)t, fr, tab[t]);
        maxq = tab[t]->nq > maxq ? tab[t]->nq : maxq;
    }
    const int threads = nf > 256 ? omp_get_max_threads() : 1;
    /* the references counted by bucket (a node out of range: facet_eval says so) */
    HK_TRY(hk_calloc(FACET_BUCKETS + 1, sizeof *cum, &cum));
    for (int64_t k = 0; k < g->elems.ptr[nf]; k++) {
        const int64_t v = g->elems.nodes[k];
        if (v >= 0 && v < nn) cum[v * FACET_BUCKETS / nn + 1]++;
    }
    for (int k = 0; k < FACET_BUCKETS; k++)
        cum[k + 1] += cum[k];
    const int64_t blk = nf < FACET_BLOCK ? nf : FACET_BLOCK;
    HK_TRY(hk_malloc((size_t)(blk * maxq) * sizeof *pts, &pts));
    for (int64_t f0 = 0; f0 < nf; f0 += blk) {
        const int64_t f1 = f0 + blk < nf ? f0 + blk : nf;
        int64_t bad = INT64_MAX; /* the first failing facet: its message is the serial loop's */
#pragma omp parallel for schedule(static) reduction(min : bad) num_threads(threads)
        for (int64_t fe = f0; fe < f1; fe++)
            if (fe < bad && facet_eval(p, n2c, b, fe, what, outward, tab, pts + (fe - f0) * maxq))
                bad = fe;
        const int64_t fend = bad < f1 ? bad : f1;
        /* each thread the facets' points in order, for its own nodes: every node's sum in
         * the serial loop's order */
#pragma omp parallel num_threads(threads)
        {
            int32_t lo = 0, hi = (int32_t)nn;
            if (omp_get_num_threads() > 1)
                thread_range(cum, nn, omp_get_num_threads(), omp_get_thread_num(), &lo, &hi);
            for (int64_t fe = f0; fe < fend && lo < hi; fe++) {
                const int32_t *fn_ = g->elems.nodes + g->elems.ptr[fe];
                const int nfn = (int)(g->elems.ptr[fe + 1] - g->elems.ptr[fe]);
                int mine = 0;
                for (int a = 0; a < nfn && !mine; a++)
                    mine = fn_[a] >= lo && fn_[a] < hi;
                if (!mine) continue;
                const facet_tab *tb = tab[g->elems.type[fe]];
                const facet_pt *pt = pts + (fe - f0) * maxq;
                for (int q = 0; q < tb->nq; q++)
                    rfn(ctx, lo, hi, fn_, nfn, tb->N[q], pt[q].x, pt[q].w, pt[q].nrm);
            }
        }
        if (bad != INT64_MAX) { /* its message on this thread */
            ierr = facet_eval(p, n2c, b, bad, what, outward, tab, pts);
            if (!ierr)
                ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                                    "facet %lld of boundary '%s' failed a check that names no "
                                    "fault",
                                    (long long)bad, bn);
            goto fail;
        }
    }
fail:
    for (int t = 0; t < 256; t++)
        free(tab[t]);
    free(pts);
    free(cum);
    return ierr;
}

int hk_facet_points(const hk_problem *p, const hk_adj *n2c, int b, const char *what, int outward,
                    hk_facet_fn fn, void *ctx)
{
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    const hk_group *g = &m->boundaries[b];
    const char *bn = hk_asm_boundary_name(m, b);
    const double fac = hk_asm_thickness(p);
    HK_CHECK(g->elems.n > 0 && g->dim == d - 1, HK_ERR_MODEL,
             "%s needs a boundary of dimension %d, but boundary '%s' has dimension %d and %lld "
             "elements; apply it on a %s group",
             what, d - 1, bn, g->dim, (long long)g->elems.n, d == 2 ? "curve" : "surface");
    for (int64_t fe = 0; fe < g->elems.n; fe++) {
        const int t = g->elems.type[fe];
        const hk_elref *fr = hk_elref_get((hk_eltype)t);
        HK_CALL(facet_check(p, n2c, b, fe, what));
        const int32_t *fn_ = g->elems.nodes + g->elems.ptr[fe];
        double sign = 1;
        if (outward) {
            double xi[3] = {0, 0, 0}, dNc[HK_EL_MAXN][3];
            if (fr->simplex) xi[0] = xi[1] = 1.0 / 3;
            hk_el_shape(fr->type, xi, NULL, dNc);
            HK_CALL(facet_sign(p, n2c, b, fe, fr, fn_, (const double(*)[3])dNc, &sign));
        }
        int nq;
        double qp[HK_EL_MAXQ][3], qw[HK_EL_MAXQ];
        hk_elref_facet_rule((hk_eltype)t, &nq, qp, qw);
        for (int q = 0; q < nq; q++) {
            double N[HK_EL_MAXN], dN[HK_EL_MAXN][3];
            facet_pt pt;
            hk_el_shape((hk_eltype)t, qp[q], N, dN);
            HK_CALL(facet_point(p, b, fe, fr, fn_, N, (const double(*)[3])dN, qw[q], sign, fac,
                                &pt));
            fn(ctx, fn_, fr->nnodes, N, pt.x, pt.w, pt.nrm);
        }
    }
    return 0;
}
