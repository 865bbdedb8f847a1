/* Boundary and nodal loads: consistent nodal forces of tractions and pressures integrated over
 * the facets of a boundary group, total forces as the uniform traction with that resultant
 * (equal shares per node on point groups, or on request), nodal forces.
 * Body forces and gravity are integrated with the stiffness (assemble.c). Axisymmetric:
 * facet loads carry the weight r (per radian, like the stiffness); nodal forces are taken as
 * given, per radian.
 *
 * Pressure acts along the inward normal (positive pushes into the body), whatever the order
 * of a facet's nodes (hk_facet_points orients the normals, groups.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"
#include "loads.h"

static const char *const kind_names[] = {
    "traction",    "pressure",    "force", "nodal force", "equally split force",
    "temperature", "remote force"};

/* Traction t[] (per area) or pressure p (along the inward normal) at a facet point, added to
 * f when f != NULL; the area summed in *area when area != NULL. */
typedef struct facet_load_ctx {
    int d, pressure;
    double t[3], p;
    double *f, *area;
} facet_load_ctx;

static void facet_load_point(void *vctx, const int32_t *fn, int nf, const double *N,
                             const double x[3], double w, const double nrm[3])
{
    facet_load_ctx *c = vctx;
    (void)x;
    if (c->area) *c->area += w;
    if (!c->f) return;
    double tv[3];
    for (int i = 0; i < 3; i++)
        tv[i] = c->pressure ? -c->p * nrm[i] : c->t[i];
    for (int a = 0; a < nf; a++)
        for (int i = 0; i < c->d; i++)
            c->f[(size_t)fn[a] * c->d + i] += w * N[a] * tv[i];
}

/* facet_load_point for the nodes lo..hi - 1 only (hk_facet_points_ranged). */
static void facet_load_range(void *vctx, int32_t lo, int32_t hi, const int32_t *fn, int nf,
                             const double *N, const double x[3], double w, const double nrm[3])
{
    const facet_load_ctx *c = vctx;
    (void)x;
    double tv[3];
    for (int i = 0; i < 3; i++)
        tv[i] = c->pressure ? -c->p * nrm[i] : c->t[i];
    for (int a = 0; a < nf; a++)
        if (fn[a] >= lo && fn[a] < hi)
            for (int i = 0; i < c->d; i++)
                c->f[(size_t)fn[a] * c->d + i] += w * N[a] * tv[i];
}

/* Traction (value[] per area) or pressure (value[0]) on the facets of boundary b; a force
 * (value[] in total) is the traction value[] * scale. f == NULL: only the checks, and the
 * boundary's area (length x thickness in 2D) added to *area when area != NULL. */
static int facet_load(const hk_problem *p, const hk_load *ld, const hk_adj *n2c, double scale,
                      double *f, double *area)
{
    const hk_mesh *m = p->mesh;
    const int d = m->dim, b = ld->boundary;
    const hk_group *g = &m->boundaries[b];
    const int pressure = ld->kind == HK_LOAD_PRESSURE;
    /* checked here too, for the load's own advice */
    HK_CHECK(g->elems.n > 0 && g->dim == d - 1, HK_ERR_MODEL,
             "a %s needs a boundary of dimension %d, but boundary '%s' has dimension %d and %lld "
             "elements; apply it on a %s group, or use a force",
             kind_names[ld->kind], d - 1, hk_asm_boundary_name(m, b), g->dim, (long long)g->elems.n,
             d == 2 ? "curve" : "surface");
    facet_load_ctx c = {.d = d, .pressure = pressure, .p = ld->value[0], .f = f, .area = area};
    for (int i = 0; i < 3; i++)
        c.t[i] = ld->value[i] * scale;
    char what[32];
    snprintf(what, sizeof what, "a %s", kind_names[ld->kind]);
    /* nodal forces only: on the threads, node by node; an area is one sum in order */
    if (f && !area) return hk_facet_points_ranged(p, n2c, b, what, pressure, facet_load_range, &c);
    return hk_facet_points(p, n2c, b, what, pressure, facet_load_point, &c);
}

/* ---- remote force, distributing coupling --------------------------------------------------
 * The traction t(x) = F / A + w x (x - x_c) over the boundary (area A, centroid x_c), integrated
 * consistently. Its resultant is F (the linear part integrates to zero about the centroid) and
 * its moment about x_c is J w with J = int (|r|^2 I - r r^T) dA, r = x - x_c; w solves
 * J w = M + (x_ref - x_c) x F, so the moment about the reference point is M. Area, centroid, J
 * and the nodal forces use one quadrature, so both resultants hold to rounding (isoparametric
 * facets: x = sum N_a x_a at every point). */
typedef struct remote_ctx {
    int pass, d;
    double A, c[3], J[3][3], F[3], w[3];
    double *f;
    const hk_region_sums *rs; /* a region's: its sums count the facets it counts */
} remote_ctx;

static void remote_point(void *vctx, const int32_t *fn, int nf, const double *N, const double x[3],
                         double w, const double nrm[3])
{
    remote_ctx *r = vctx;
    (void)nrm;
    if (r->pass < 2 && r->rs && !r->rs->counts(r->rs->ctx, fn, nf)) return;
    if (r->pass == 0) {
        r->A += w;
        for (int i = 0; i < 3; i++)
            r->c[i] += w * x[i];
        return;
    }
    double rv[3] = {x[0] - r->c[0], x[1] - r->c[1], x[2] - r->c[2]};
    if (r->pass == 1) {
        double rr = rv[0] * rv[0] + rv[1] * rv[1] + rv[2] * rv[2];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                r->J[i][j] += w * ((i == j ? rr : 0) - rv[i] * rv[j]);
        return;
    }
    double t[3] = {r->F[0] / r->A + r->w[1] * rv[2] - r->w[2] * rv[1],
                   r->F[1] / r->A + r->w[2] * rv[0] - r->w[0] * rv[2],
                   r->F[2] / r->A + r->w[0] * rv[1] - r->w[1] * rv[0]};
    for (int a = 0; a < nf; a++)
        for (int i = 0; i < r->d; i++)
            r->f[(size_t)fn[a] * r->d + i] += w * N[a] * t[i];
}

/* The facet points of a remote force's boundary: all of them on the whole model; on a region
 * (rs) those it has, none when it has no facet of the boundary. */
static int remote_points(const hk_problem *p, const hk_adj *n2c, const hk_load *ld, remote_ctx *r)
{
    if (r->rs && p->mesh->boundaries[ld->boundary].elems.n == 0) return 0;
    return hk_facet_points(p, n2c, ld->boundary, "a remote force", 0, remote_point, r);
}

static int remote_distributing(const hk_problem *p, const hk_load *ld, const hk_adj *n2c,
                               const hk_region_sums *rs, double *f)
{
    const int d = p->mesh->dim;
    const char *bn = hk_asm_boundary_name(p->mesh, ld->boundary);
    remote_ctx r = {.d = d, .f = f, .rs = rs};
    for (int i = 0; i < d; i++)
        r.F[i] = ld->value[i];
    HK_CALL(remote_points(p, n2c, ld, &r));
    if (rs) { /* the area and the first moments over every region */
        double v[4] = {r.A, r.c[0], r.c[1], r.c[2]};
        HK_CALL(rs->sum(rs->ctx, v, 4));
        r.A = v[0], r.c[0] = v[1], r.c[1] = v[2], r.c[2] = v[3];
    }
    HK_CHECK(r.A > 0 && isfinite(r.A), HK_ERR_MODEL,
             "boundary '%s' has zero area, so a remote force cannot be spread over it; check the "
             "mesh",
             bn);
    for (int i = 0; i < 3; i++)
        r.c[i] /= r.A;
    r.pass = 1;
    HK_CALL(remote_points(p, n2c, ld, &r));
    if (rs) HK_CALL(rs->sum(rs->ctx, &r.J[0][0], 9));
    /* the moment to carry about the centroid: M + (x_ref - x_c) x F (2D: its z part) */
    double e[3] = {ld->point[0] - r.c[0], ld->point[1] - r.c[1], ld->point[2] - r.c[2]};
    double Mc[3] = {ld->moment[0] + e[1] * r.F[2] - e[2] * r.F[1],
                    ld->moment[1] + e[2] * r.F[0] - e[0] * r.F[2],
                    ld->moment[2] + e[0] * r.F[1] - e[1] * r.F[0]};
    if (d == 2) {
        HK_CHECK(r.J[2][2] > 0, HK_ERR_MODEL,
                 "boundary '%s' has no extent about its centroid, so the remote force's moment "
                 "cannot be spread over it; couple a longer boundary",
                 bn);
        r.w[2] = Mc[2] / r.J[2][2];
    } else {
        /* J is symmetric positive definite unless the boundary lies on one line */
        const double(*J)[3] = (const double(*)[3])r.J;
        double C[3][3] = {
            {J[1][1] * J[2][2] - J[1][2] * J[2][1], J[0][2] * J[2][1] - J[0][1] * J[2][2],
             J[0][1] * J[1][2] - J[0][2] * J[1][1]},
            {J[1][2] * J[2][0] - J[1][0] * J[2][2], J[0][0] * J[2][2] - J[0][2] * J[2][0],
             J[0][2] * J[1][0] - J[0][0] * J[1][2]},
            {J[1][0] * J[2][1] - J[1][1] * J[2][0], J[0][1] * J[2][0] - J[0][0] * J[2][1],
             J[0][0] * J[1][1] - J[0][1] * J[1][0]}};
        double det = J[0][0] * C[0][0] + J[0][1] * C[1][0] + J[0][2] * C[2][0];
        double tr = J[0][0] + J[1][1] + J[2][2];
        HK_CHECK(tr > 0 && det > 1e-12 * tr * tr * tr, HK_ERR_MODEL,
                 "boundary '%s' lies on one line, so a remote force cannot carry a moment about "
                 "it; couple a surface",
                 bn);
        for (int i = 0; i < 3; i++)
            r.w[i] = (C[i][0] * Mc[0] + C[i][1] * Mc[1] + C[i][2] * Mc[2]) / det;
    }
    r.pass = 2;
    return remote_points(p, n2c, ld, &r);
}

int hk_loads_apply(const hk_problem *p, const hk_adj *n2c, double *f)
{
    return hk_loads_apply_region(p, n2c, NULL, f);
}

int hk_loads_apply_region(const hk_problem *p, const hk_adj *n2c, const hk_region_sums *rs,
                          double *f)
{
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    HK_CHECK(p->nloads == 0 || p->loads, HK_ERR_ARG, "hk_assemble: nloads > 0 but loads is NULL");
    for (int l = 0; l < p->nloads; l++) {
        const hk_load *ld = &p->loads[l];
        HK_CHECK(ld->kind >= HK_LOAD_TRACTION && ld->kind <= HK_LOAD_REMOTE, HK_ERR_ARG,
                 "load %d has an unknown kind %d", l, (int)ld->kind);
        if (ld->kind == HK_LOAD_TEMPERATURE) { /* a volume load: assemble.c integrates it */
            HK_CHECK(ld->boundary >= -1 && ld->boundary < m->nregions, HK_ERR_MODEL,
                     "load %d (temperature) refers to region %d, but the mesh has %d regions", l,
                     ld->boundary, m->nregions);
            HK_CHECK(isfinite(ld->value[0]), HK_ERR_MODEL,
                     "the temperature change of load %d is not a finite number; give a finite "
                     "value",
                     l);
            continue;
        }
        HK_CHECK(ld->boundary >= 0 && ld->boundary < m->nboundaries, HK_ERR_MODEL,
                 "load %d (%s) refers to boundary %d, but the mesh has %d boundary groups", l,
                 kind_names[ld->kind], ld->boundary, m->nboundaries);
        const char *bn = hk_asm_boundary_name(m, ld->boundary);
        for (int i = 0; i < 3; i++)
            HK_CHECK(isfinite(ld->value[i]), HK_ERR_MODEL,
                     "the %s on boundary '%s' has a non-finite value; give finite numbers",
                     kind_names[ld->kind], bn);
        if (ld->kind == HK_LOAD_TRACTION || ld->kind == HK_LOAD_PRESSURE) {
            HK_CALL(facet_load(p, ld, n2c, 1, f, NULL));
            continue;
        }
        if (ld->kind == HK_LOAD_REMOTE) {
            HK_CHECK(p->analysis != HK_AXISYMMETRIC, HK_ERR_MODEL,
                     "the remote force on boundary '%s' does not apply to an axisymmetric "
                     "analysis; use a traction, pressure or force",
                     bn);
            for (int i = 0; i < 3; i++)
                HK_CHECK(isfinite(ld->moment[i]) && isfinite(ld->point[i]), HK_ERR_MODEL,
                         "the remote force on boundary '%s' has a non-finite moment or point; "
                         "give finite numbers",
                         bn);
            HK_CHECK(ld->coupling == HK_COUPLING_DISTRIBUTING || ld->coupling == HK_COUPLING_RIGID,
                     HK_ERR_ARG, "the remote force on boundary '%s' has an unknown coupling %d", bn,
                     ld->coupling);
            /* rigid: the force and moment act on the reference point's dofs (coupling.c) */
            if (ld->coupling == HK_COUPLING_DISTRIBUTING)
                HK_CALL(remote_distributing(p, ld, n2c, rs, f));
            continue;
        }
        const hk_group *g = &m->boundaries[ld->boundary];
        if (ld->kind == HK_LOAD_FORCE && g->dim == d - 1 && g->elems.n > 0) {
            /* the uniform traction with this resultant: consistent nodal forces */
            double area = 0;
            HK_CALL(facet_load(p, ld, n2c, 0, NULL, &area));
            HK_CHECK(area > 0 && isfinite(area), HK_ERR_MODEL,
                     "boundary '%s' has zero area, so a force cannot be spread over it; check "
                     "the mesh",
                     bn);
            HK_CALL(facet_load(p, ld, n2c, 1 / area, f, NULL));
            continue;
        }
        int64_t nn;
        int32_t *nodes;
        HK_CALL(hk_group_nodes(m, ld->boundary, &nn, &nodes));
        if (nn == 0) {
            free(nodes);
            return hk_error_set(HK_ERR_MODEL, __FILE__, __LINE__,
                                "the %s on boundary '%s' has no node to act on; the group is "
                                "empty",
                                kind_names[ld->kind], bn);
        }
        for (int64_t k = 0; k < nn; k++)
            if (n2c->ptr[nodes[k] + 1] == n2c->ptr[nodes[k]]) {
                int32_t v = nodes[k];
                free(nodes);
                return hk_error_set(HK_ERR_MODEL, __FILE__, __LINE__,
                                    "the %s on boundary '%s' acts on node %d, which belongs to "
                                    "no %dD element, so it would be lost; load a node of the "
                                    "meshed domain",
                                    kind_names[ld->kind], bn, v, d);
            }
        const double w = ld->kind == HK_LOAD_NODAL ? 1.0 : 1.0 / (double)nn;
        for (int64_t k = 0; k < nn; k++)
            for (int i = 0; i < d; i++)
                f[(size_t)nodes[k] * d + i] += w * ld->value[i];
        free(nodes);
    }
    return 0;
}
