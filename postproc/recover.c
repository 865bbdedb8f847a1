/* Strain and stress recovery, von Mises, principal stresses and reactions (hk_postproc).
 *
 * Per element: strain and stress at the Gauss points (volume-weighted into the element
 * average), at the element's own nodes (from its shape functions, averaged over the elements
 * sharing a node) and the internal force integral B^T sigma (for the reactions
 * r = f_int - f_ext at the prescribed dofs). Elements are processed in parallel in chunks and
 * scattered in element order, so results do not depend on the thread count.
 *
 * Axisymmetric (x = r, y = z, the hoop direction theta in the place of z): the gradient's zz
 * entry is the hoop strain u_r / r (at a node on the axis, r = 0, its limit du_r/dr, which
 * holds when u_r = 0 there), volumes and internal forces are per radian (weight r), and the
 * internal force has the hoop term int sigma_tt N_a / r. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "elements.h" /* assembly/: reference elements (shape functions, Gauss rules) */
#include "groups.h"   /* assembly/: the nodes of a group */
#include "springs.h"  /* assembly/: spring forces of the reactions */
#include "pp_impl.h"

/* Tensor strain eps (xx yy zz xy yz xz) from the displacement gradient G (3x3, zeros out of
 * plane in 2D) and the stress under the law at temperature change dT, net of the thermal
 * strain: sig = D (strain - dT alpha). Plane stress fills the out-of-plane strain that keeps
 * sig_zz = 0, plane strain the out-of-plane stress that keeps eps_zz = 0. */
static void constitutive(const hk_law *L, hk_analysis an, int dim, const double G[3][3], double dT,
                         double eps[6], double sig[6])
{
    static const int plane[3] = {0, 1, 3};
    eps[0] = G[0][0], eps[1] = G[1][1], eps[2] = G[2][2];
    eps[3] = 0.5 * (G[0][1] + G[1][0]);
    eps[4] = 0.5 * (G[1][2] + G[2][1]);
    eps[5] = 0.5 * (G[0][2] + G[2][0]);
    double e6[6]; /* engineering */
    for (int k = 0; k < 6; k++)
        e6[k] = k < 3 ? eps[k] : 2 * eps[k];
    if (an == HK_AXISYMMETRIC) { /* rr zz tt rz: the first four; no theta shears */
        for (int i = 0; i < 6; i++) {
            double t = 0;
            for (int k = 0; k < 4 && i < 4; k++)
                t += L->D[i][k] * (e6[k] - dT * L->alpha[k]);
            sig[i] = t;
        }
        return;
    }
    if (dim == 3 || (an == HK_PLANE_STRAIN && L->has3d)) {
        for (int i = 0; i < 6; i++) {
            double t = 0;
            for (int k = 0; k < 6; k++)
                t += L->D6[i][k] * (e6[k] - dT * L->alpha6[k]);
            sig[i] = t;
        }
        return;
    }
    for (int k = 0; k < 6; k++)
        sig[k] = 0;
    for (int i = 0; i < 3; i++) {
        double t = -dT * L->sig0[i];
        for (int k = 0; k < 3; k++)
            t += L->D[i][k] * e6[plane[k]];
        sig[plane[i]] = t;
    }
    if (an == HK_PLANE_STRESS && L->has3d)
        for (int o = 2; o < 6; o += (o == 2 ? 2 : 1)) { /* zz yz xz from the compliance */
            double t = dT * L->alpha6[o];
            for (int k = 0; k < 3; k++)
                t += L->S6[o][plane[k]] * sig[plane[k]];
            eps[o] = o == 2 ? t : 0.5 * t;
        }
}

/* Natural shape derivatives at the element's own nodes, per type (the Gauss-point ones are
 * tabulated in hk_elref already). Filled once per call of hk_postproc. */
typedef double node_dN[HK_EL_MAXN][HK_EL_MAXN][3];

static void node_dN_fill(int t, node_dN tb)
{
    const hk_elref *r = hk_elref_get((hk_eltype)t);
    for (int a = 0; a < r->nnodes; a++)
        hk_el_shape((hk_eltype)t, r->xi[a], NULL, tb[a]);
}

/* Physical derivatives dNdx[a][i] from the natural ones dN; returns det J (<= 0: inverted).
 * Inlined into shape_x once per dimension, so the loops over i and j have constant bounds. */
static inline __attribute__((always_inline)) double
shape_x_dim(const int dim, int nn, const double *X, const double (*dN)[3], double (*dNdx)[3])
{
    double J[3][3] = {{0}};
    for (int a = 0; a < nn; a++)
        for (int i = 0; i < dim; i++)
            for (int j = 0; j < dim; j++)
                J[i][j] += X[3 * a + i] * dN[a][j];
    double det, Ji[3][3] = {{0}};
    if (dim == 2) {
        det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
        Ji[0][0] = J[1][1] / det, Ji[0][1] = -J[0][1] / det;
        Ji[1][0] = -J[1][0] / det, Ji[1][1] = J[0][0] / det;
    } else {
        det = J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
              J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
              J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
        Ji[0][0] = (J[1][1] * J[2][2] - J[1][2] * J[2][1]) / det;
        Ji[0][1] = (J[0][2] * J[2][1] - J[0][1] * J[2][2]) / det;
        Ji[0][2] = (J[0][1] * J[1][2] - J[0][2] * J[1][1]) / det;
        Ji[1][0] = (J[1][2] * J[2][0] - J[1][0] * J[2][2]) / det;
        Ji[1][1] = (J[0][0] * J[2][2] - J[0][2] * J[2][0]) / det;
        Ji[1][2] = (J[0][2] * J[1][0] - J[0][0] * J[1][2]) / det;
        Ji[2][0] = (J[1][0] * J[2][1] - J[1][1] * J[2][0]) / det;
        Ji[2][1] = (J[0][1] * J[2][0] - J[0][0] * J[2][1]) / det;
        Ji[2][2] = (J[0][0] * J[1][1] - J[0][1] * J[1][0]) / det;
    }
    /* dN/dx_i = sum_j dN/dxi_j dxi_j/dx_i, dxi/dx = J^-1 */
    for (int a = 0; a < nn; a++)
        for (int i = 0; i < 3; i++) {
            double s = 0;
            for (int j = 0; j < dim; j++)
                s += dN[a][j] * Ji[j][i];
            dNdx[a][i] = i < dim ? s : 0;
        }
    return det;
}

static double shape_x(int dim, int nn, const double *X, const double (*dN)[3], double (*dNdx)[3])
{
    return dim == 3 ? shape_x_dim(3, nn, X, dN, dNdx) : shape_x_dim(2, nn, X, dN, dNdx);
}

/* Displacement gradient G[i][j] = du_i/dx_j from element displacements ue (3 per node). */
static void grad_u(int nn, const double *ue, const double (*dNdx)[3], double G[3][3])
{
    memset(G, 0, 9 * sizeof(double));
    for (int a = 0; a < nn; a++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                G[i][j] += ue[3 * a + i] * dNdx[a][j];
}

/* Axisymmetric: the hoop strain u_r / r at a point with shape functions N into G[2][2];
 * returns 1 when the point's radius is not positive. */
static int hoop(int nn, const double *X, const double *ue, const double *N, double G[3][3])
{
    double rad = 0, ur = 0;
    for (int a = 0; a < nn; a++)
        rad += N[a] * X[3 * a], ur += N[a] * ue[3 * a];
    if (!(rad > 0)) return 1;
    G[2][2] = ur / rad;
    return 0;
}

/* The thread (of nthreads) that sums into node g: blocks of 16 consecutive nodes (whole cache
 * lines of the 6-component arrays) spread over the threads by a multiplicative hash. */
static inline unsigned node_owner(int64_t g, unsigned nthreads)
{
    const uint64_t h = ((uint64_t)g >> 4) * 0x9E3779B97F4A7C15ull;
    return (unsigned)(((h >> 32) * nthreads) >> 32);
}

/* Per-element results of one chunk, scattered afterwards in element order. */
typedef struct {
    double eps[HK_EL_MAXN][6], sig[HK_EL_MAXN][6]; /* at the element's nodes */
    double fint[HK_EL_MAXN][3];
    double cell_sig[6];
    int err;    /* 0, or 1 = non-positive Jacobian */
    double det; /* the offending determinant */
} elem_out;

/* Everything about element e: returns 0 or 1 (inverted element; det in out). */
static int element(const hk_problem *p, const hk_law *L, double dTr, node_dN *ndN, double thick,
                   const double *u3, int64_t e, elem_out *out)
{
    static const int plane[3] = {0, 1, 3};
    const int axi = p->analysis == HK_AXISYMMETRIC;
    const hk_mesh *m = p->mesh;
    int t = m->cells.type[e];
    const hk_elref *el = hk_elref_get((hk_eltype)t);
    int nn = el->nnodes, dim = el->dim;
    const int32_t *nodes = m->cells.nodes + m->cells.ptr[e];
    double X[3 * HK_EL_MAXN], ue[3 * HK_EL_MAXN], Tn[HK_EL_MAXN];
    for (int a = 0; a < nn; a++)
        Tn[a] = dTr + (p->node_dT ? p->node_dT[nodes[a]] : 0);
    for (int a = 0; a < nn; a++)
        for (int i = 0; i < 3; i++) {
            X[3 * a + i] = m->coords[3 * (int64_t)nodes[a] + i];
            ue[3 * a + i] = u3[3 * (int64_t)nodes[a] + i];
        }
    double dNdx[HK_EL_MAXN][3], G[3][3], eps[6], sig[6];
    /* selective integration: the volumetric strain (net of the thermal one) at the reduced
     * points, whose interpolant replaces the pointwise one in the pressure, as in K; the
     * internal force takes the volumetric part kappa div(N_a) tr(eps) on these points, as K
     * does (the thermal load is there too, in f_ext) */
    int nr = 0;
    double vr[HK_EL_MAXQ];
    const double a3 = 3 * L->alpha6[0];
    memset(out->fint, 0, sizeof out->fint);
    if (L->selective) {
        double rq[HK_EL_MAXQ][3], rw[HK_EL_MAXQ];
        nr = hk_elref_reduced_rule((hk_eltype)t, &nr, rq, rw);
        if (axi && nr == 1) { /* the mean dilatation over the full rule, as in K */
            double dv[HK_EL_MAXN][2] = {{0}}, V = 0, TV = 0, th = 0;
            for (int q = 0; q < el->nqp; q++) {
                const double det = shape_x(dim, nn, X, (const double(*)[3])el->dN[q], dNdx);
                grad_u(nn, ue, (const double(*)[3])dNdx, G);
                if (!(det > 0) || hoop(nn, X, ue, el->N[q], G)) {
                    out->err = 1, out->det = det;
                    return 1;
                }
                double rad = 0, T = 0;
                for (int a = 0; a < nn; a++)
                    rad += el->N[q][a] * X[3 * a], T += el->N[q][a] * Tn[a];
                const double w = el->qw[q] * det * thick * rad;
                for (int a = 0; a < nn; a++) {
                    dv[a][0] += w * (dNdx[a][0] + el->N[q][a] / rad);
                    dv[a][1] += w * dNdx[a][1];
                }
                V += w, TV += w * T, th += w * (G[0][0] + G[1][1] + G[2][2]);
            }
            vr[0] = (th - a3 * TV) / V;
            for (int a = 0; a < nn; a++)
                for (int i = 0; i < 2; i++)
                    out->fint[a][i] += L->kappa * th / V * dv[a][i];
        }
        for (int q = 0; q < nr && !(axi && nr == 1); q++) {
            double N[HK_EL_MAXN], dN[HK_EL_MAXN][3], T = 0, rad = 1;
            hk_el_shape((hk_eltype)t, rq[q], N, dN);
            const double det = shape_x(dim, nn, X, (const double(*)[3])dN, dNdx);
            if (!(det > 0)) {
                out->err = 1, out->det = 0;
                return 1;
            }
            grad_u(nn, ue, (const double(*)[3])dNdx, G);
            if (axi && hoop(nn, X, ue, N, G)) {
                out->err = 1, out->det = 0;
                return 1;
            }
            if (axi) rad = 0;
            for (int a = 0; a < nn; a++) {
                T += N[a] * Tn[a];
                if (axi) rad += N[a] * X[3 * a];
            }
            const double tr = G[0][0] + G[1][1] + G[2][2];
            vr[q] = tr - a3 * T;
            const double w = rw[q] * det * thick * rad * L->kappa * tr;
            for (int a = 0; a < nn; a++)
                for (int i = 0; i < dim; i++)
                    out->fint[a][i] += w * (dNdx[a][i] + (axi && i == 0 ? N[a] / rad : 0));
        }
    }
    const double *qw = el->qw;
    int nq = el->nqp;
    double axis_tol = 0; /* nodes closer to the axis than this count as on it */
    if (axi) {
        double lo = INFINITY, hi = -INFINITY;
        for (int a = 0; a < nn; a++)
            for (int i = 0; i < 2; i++)
                lo = fmin(lo, X[3 * a + i]), hi = fmax(hi, X[3 * a + i]);
        axis_tol = 1e-9 * (hi - lo);
    }
    double vol = 0, cell_eps[6] = {0, 0, 0, 0, 0, 0};
    memset(out->cell_sig, 0, sizeof out->cell_sig);
    out->err = 0;
    for (int q = 0; q < nq; q++) {
        double det = shape_x(dim, nn, X, (const double(*)[3])el->dN[q], dNdx);
        if (!(det > 0)) {
            out->err = 1, out->det = det;
            return 1;
        }
        grad_u(nn, ue, (const double(*)[3])dNdx, G);
        double rad = 1;
        if (axi) {
            rad = 0;
            for (int a = 0; a < nn; a++)
                rad += el->N[q][a] * X[3 * a];
            if (hoop(nn, X, ue, el->N[q], G)) {
                out->err = 1, out->det = 0;
                return 1;
            }
        }
        double dT = 0;
        for (int a = 0; a < nn; a++)
            dT += el->N[q][a] * Tn[a];
        constitutive(L, p->analysis, dim, (const double(*)[3])G, dT, eps, sig);
        double vq = 0; /* selective: the reduced volumetric strain here */
        if (nr) {
            vq = hk_elref_reduced_interp((hk_eltype)t, el->qp[q], vr);
            const double dv = L->kappa * (vq - (G[0][0] + G[1][1] + G[2][2] - a3 * dT));
            for (int k = 0; k < 3; k++)
                sig[k] += dv;
        }
        double dv = qw[q] * det * thick * rad;
        vol += dv;
        for (int k = 0; k < 6; k++)
            out->cell_sig[k] += dv * sig[k], cell_eps[k] += dv * eps[k];
        /* f_int_a = integral B_a^T sigma: (sigma grad N_a) with the symmetric tensor, of the
         * stress before the thermal part (the system's f_ext holds the thermal loads);
         * selective: of D eps - kappa tr(eps) (the volumetric part came from the reduced
         * points above) */
        double st[6];
        memcpy(st, sig, sizeof st);
        for (int k = 0; k < L->nv; k++)
            st[dim == 2 && !axi ? plane[k] : k] += dT * L->sig0[k];
        if (nr)
            for (int k = 0; k < 3; k++)
                st[k] -= L->kappa * (vq + a3 * dT);
        double S[3][3] = {{st[0], st[3], st[5]}, {st[3], st[1], st[4]}, {st[5], st[4], st[2]}};
        for (int a = 0; a < nn; a++)
            for (int i = 0; i < dim; i++) {
                double s = 0;
                for (int j = 0; j < dim; j++)
                    s += S[i][j] * dNdx[a][j];
                if (axi && i == 0) s += st[2] * el->N[q][a] / rad; /* hoop: sigma_tt N_a / r */
                out->fint[a][i] += dv * s;
            }
    }
    for (int k = 0; k < 6; k++)
        out->cell_sig[k] /= vol, cell_eps[k] /= vol;
    /* values at the element's nodes, from its own shape functions. A strongly curved
     * quadratic element can have det J <= 0 at a corner while every Gauss point is fine
     * (the assembly accepts it): such a node takes the element average instead. */
    for (int a = 0; a < nn; a++) {
        double det = shape_x(dim, nn, X, (const double(*)[3])ndN[t][a], dNdx);
        if (!(det > 0)) {
            memcpy(out->eps[a], cell_eps, sizeof cell_eps);
            memcpy(out->sig[a], out->cell_sig, sizeof out->cell_sig);
            continue;
        }
        grad_u(nn, ue, (const double(*)[3])dNdx, G);
        if (axi) { /* u_r / r, or on the axis its limit du_r/dr */
            const double ra = X[3 * a];
            G[2][2] = ra > axis_tol ? ue[3 * a] / ra : G[0][0];
        }
        constitutive(L, p->analysis, dim, (const double(*)[3])G, Tn[a], out->eps[a], out->sig[a]);
        if (nr) {
            const double dv = L->kappa * (hk_elref_reduced_interp((hk_eltype)t, el->xi[a], vr) -
                                          (G[0][0] + G[1][1] + G[2][2] - a3 * Tn[a]));
            for (int k = 0; k < 3; k++)
                out->sig[a][k] += dv;
        }
    }
    return 0;
}

void hk_fields_free(hk_fields *f)
{
    if (!f) return;
    free(f->u);
    free(f->strain);
    free(f->stress);
    free(f->von_mises);
    free(f->principal);
    free(f->cell_stress);
    free(f->cell_von_mises);
    free(f->reaction);
    free(f->support_reaction);
    free(f->support_moment);
    memset(f, 0, sizeof *f);
}

/* Element e has a recovery kernel of the mesh's dimension, its node count and a valid region. */
static int check_element(const hk_mesh *m, int64_t e)
{
    int t = m->cells.type[e];
    const hk_elref *el = hk_eltype_has_kernel((hk_eltype)t) ? hk_elref_get((hk_eltype)t) : NULL;
    HK_CHECK(el && el->dim == m->dim, HK_ERR_UNSUPPORTED,
             "element %lld: a %s has no stress recovery in a %dD model (supported: tri3 tri6 "
             "quad4 quad8 quad9 in 2D, tet4 tet10 hex8 hex20 hex27 wedge6 wedge15 wedge18 "
             "pyr5 pyr13 pyr14 in 3D)",
             (long long)m->cells.tag[e], hk_el_name(t), m->dim);
    HK_CHECK(m->cells.ptr[e + 1] - m->cells.ptr[e] == el->nnodes, HK_ERR_MODEL,
             "element %lld (%s) has %lld nodes, expected %d", (long long)m->cells.tag[e], el->name,
             (long long)(m->cells.ptr[e + 1] - m->cells.ptr[e]), el->nnodes);
    if (m->cell_region && m->nregions > 0)
        HK_CHECK(m->cell_region[e] >= 0 && m->cell_region[e] < m->nregions, HK_ERR_MODEL,
                 "element %lld has region index %d outside 0..%d", (long long)m->cells.tag[e],
                 m->cell_region[e], m->nregions - 1);
    return 0;
}

/* Input checks: one sentence each, naming what is wrong and the fix. */
static int check_input(const hk_problem *p, const hk_system *s, const double *u)
{
    HK_CHECK(p && p->mesh, HK_ERR_ARG, "hk_postproc: the problem or its mesh is NULL");
    HK_CHECK(u, HK_ERR_ARG, "hk_postproc: the displacement vector u is NULL");
    HK_CHECK(s && s->fixed && s->f_ext, HK_ERR_ARG,
             "hk_postproc: the assembled system (with fixed and f_ext) is needed for the "
             "reactions; pass the hk_system from hk_assemble");
    const hk_mesh *m = p->mesh;
    HK_CHECK(m->dim == 2 || m->dim == 3, HK_ERR_ARG, "hk_postproc: mesh dimension %d is not 2 or 3",
             m->dim);
    HK_CHECK(s->dim == m->dim && s->ndof == m->dim * (m->nnodes + 2 * (int64_t)s->nrigid) &&
                 (!s->nrigid || (s->rigid_of && s->rigid_point)),
             HK_ERR_ARG,
             "hk_postproc: the system has %lld dofs of block size %d but the mesh has %lld nodes "
             "in %dD; pass the system assembled for this mesh",
             (long long)s->ndof, s->dim, (long long)m->nnodes, m->dim);
    if (m->dim == 3)
        HK_CHECK(p->analysis == HK_SOLID, HK_ERR_MODEL,
                 "hk_postproc: a 3D mesh needs the solid analysis, not plane stress/strain or "
                 "axisymmetric");
    else
        HK_CHECK(p->analysis == HK_PLANE_STRESS || p->analysis == HK_PLANE_STRAIN ||
                     p->analysis == HK_AXISYMMETRIC,
                 HK_ERR_MODEL,
                 "hk_postproc: a 2D mesh needs the plane stress, plane strain or axisymmetric "
                 "analysis");
    if (m->dim == 2)
        HK_CHECK(isfinite(p->thickness) && p->thickness >= 0, HK_ERR_MODEL,
                 "hk_postproc: the thickness %g of the 2D model is not valid; give a positive "
                 "thickness (0 means unit thickness)",
                 p->thickness);
    HK_CHECK(p->materials, HK_ERR_ARG, "hk_postproc: the problem has no materials");
    for (int r = 0; r < (m->nregions > 0 ? m->nregions : 1); r++) {
        const hk_material *mat = &p->materials[r];
        const char *rn = m->nregions > 0 ? m->regions[r].name : "(default)";
        if (mat->kind != HK_MAT_ISOTROPIC) continue; /* hk_material_law checks the others */
        HK_CHECK(mat->E > 0 && isfinite(mat->E), HK_ERR_MODEL,
                 "material '%s' of region '%s': Young's modulus E = %g must be positive", mat->name,
                 rn, mat->E);
        HK_CHECK(mat->nu > -1 && mat->nu < 0.5, HK_ERR_MODEL,
                 "material '%s' of region '%s': Poisson's ratio nu = %g must lie in (-1, 0.5)",
                 mat->name, rn, mat->nu);
    }
    /* elements and dofs checked on every thread; the first bad one in order is reported */
    int64_t bad = m->cells.n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t e = 0; e < m->cells.n; e++)
        if (check_element(m, e) && e < bad) bad = e;
    if (bad < m->cells.n) return check_element(m, bad);
    bad = s->ndof;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t i = 0; i < s->ndof; i++)
        if (!isfinite(u[i]) && i < bad) bad = i;
    HK_CHECK(bad == s->ndof, HK_ERR_NUMERIC,
             "hk_postproc: displacement dof %lld (node %lld) is %g; the solve did not "
             "converge to a finite answer",
             (long long)bad, (long long)(bad / m->dim), bad < s->ndof ? u[bad] : 0.0);
    for (int k = 0; k < p->nsupports; k++)
        HK_CHECK(p->supports[k].boundary >= 0 && p->supports[k].boundary < m->nboundaries,
                 HK_ERR_ARG, "hk_postproc: support %d names boundary index %d outside 0..%d", k,
                 p->supports[k].boundary, m->nboundaries - 1);
    return 0;
}

int hk_postproc(const hk_problem *p, const hk_system *s, const double *u, hk_fields *out)
{
    HK_CHECK(out, HK_ERR_ARG, "hk_postproc: the output fields pointer is NULL");
    memset(out, 0, sizeof *out);
    HK_CALL(check_input(p, s, u));
    const hk_mesh *m = p->mesh;
    const int dim = m->dim;
    const int64_t nn = m->nnodes, ne = m->cells.n;
    /* 2D: thickness 0 means unit thickness, as in the assembly; axisymmetric: per radian */
    const double thick =
        dim == 2 && p->analysis != HK_AXISYMMETRIC ? (p->thickness > 0 ? p->thickness : 1.0) : 1.0;
    int ierr = 0;
    double *fint = NULL, *count = NULL;
    elem_out *buf = NULL;
    hk_law *laws = NULL;
    double *dTr = NULL;
    node_dN *ndN = NULL;
    double *ud = NULL, *ys = NULL, *yk = NULL;
    int32_t *gnodes = NULL;

    out->nnodes = nn, out->ncells = ne;
    out->axisymmetric = p->analysis == HK_AXISYMMETRIC;
    HK_TRY(hk_calloc((size_t)(3 * nn), sizeof(double), &out->u));
    HK_TRY(hk_calloc((size_t)(6 * nn), sizeof(double), &out->strain));
    HK_TRY(hk_calloc((size_t)(6 * nn), sizeof(double), &out->stress));
    HK_TRY(hk_calloc((size_t)nn, sizeof(double), &out->von_mises));
    HK_TRY(hk_calloc((size_t)(3 * nn), sizeof(double), &out->principal));
    HK_TRY(hk_calloc((size_t)(6 * ne), sizeof(double), &out->cell_stress));
    HK_TRY(hk_calloc((size_t)ne, sizeof(double), &out->cell_von_mises));
    HK_TRY(hk_calloc((size_t)(3 * nn), sizeof(double), &out->reaction));
    HK_TRY(hk_calloc((size_t)(3 * nn), sizeof(double), &fint));
    HK_TRY(hk_calloc((size_t)nn, sizeof(double), &count));
    out->nsupports = p->nsupports;
    HK_TRY(hk_calloc((size_t)(p->nsupports > 0 ? p->nsupports : 1), sizeof(double[3]),
                     &out->support_reaction));
    HK_TRY(hk_calloc((size_t)(p->nsupports > 0 ? p->nsupports : 1), sizeof(double[3]),
                     &out->support_moment));

    /* displacements, 3 per node; prescribed dofs take the system's prescribed values */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++) {
        for (int c = 0; c < dim; c++) {
            int64_t d = i * dim + c;
            out->u[3 * i + c] = s->fixed[d] && s->u_fixed ? s->u_fixed[d] : u[d];
        }
    }
    /* nodes of a rigid coupling: u = u_ref + theta x (x - x_ref) */
#pragma omp parallel for schedule(static) if (s->nrigid)
    for (int64_t i = 0; i < nn; i++) {
        if (!s->nrigid) continue;
        const int k = s->rigid_of[i];
        if (k < 0) continue;
        const double *t = u + (nn + 2 * k) * dim, *th = t + dim, *x0 = s->rigid_point[k];
        const double r[3] = {m->coords[3 * i] - x0[0], m->coords[3 * i + 1] - x0[1],
                             m->coords[3 * i + 2] - x0[2]};
        double *ui = out->u + 3 * i;
        if (dim == 2) {
            ui[0] = t[0] - th[0] * r[1];
            ui[1] = t[1] + th[0] * r[0];
        } else {
            ui[0] = t[0] + th[1] * r[2] - th[2] * r[1];
            ui[1] = t[1] + th[2] * r[0] - th[0] * r[2];
            ui[2] = t[2] + th[0] * r[1] - th[1] * r[0];
        }
    }

    int nmat = m->nregions > 0 ? m->nregions : 1;
    HK_TRY(hk_calloc((size_t)nmat, sizeof *laws, &laws));
    HK_TRY(hk_calloc((size_t)nmat, sizeof *dTr, &dTr));
    for (int r = 0; r < nmat; r++) {
        HK_TRY(hk_material_law(&p->materials[r], p->analysis, dim, &laws[r]));
        dTr[r] = hk_problem_region_dT(p, r);
    }

    HK_TRY(hk_calloc(HK_EL_COUNT, sizeof(node_dN), &ndN));
    for (int t = 0; t < HK_EL_COUNT; t++)
        if (hk_eltype_has_kernel((hk_eltype)t)) node_dN_fill(t, ndN[t]);

    /* elements in chunks: computed in parallel, then summed into their nodes. Each thread
     * adds only the nodes it owns (blocks of 16 nodes dealt out by node_owner), scanning the
     * chunk's elements in order, so every node's sums are taken in element order whatever the
     * thread count, and the node arrays are first touched by the threads that fill them. Two
     * buffers: the threads sum chunk k from one while the first done compute chunk k + 1 into
     * the other, one barrier a chunk. */
    enum { CHUNK = 2048 };
    HK_TRY(hk_malloc(2 * CHUNK * sizeof(elem_out), &buf));
    int64_t bad = ne; /* the first element with a non-positive Jacobian */
#pragma omp parallel reduction(min : bad)
    {
        const unsigned nthreads = (unsigned)omp_get_num_threads();
        const unsigned me = (unsigned)omp_get_thread_num();
        for (int64_t e0 = 0; e0 < ne; e0 += CHUNK) {
            const int64_t e1 = e0 + CHUNK < ne ? e0 + CHUNK : ne;
            elem_out *cb = buf + (e0 / CHUNK % 2) * CHUNK;
#pragma omp for schedule(static)
            for (int64_t e = e0; e < e1; e++) {
                int r = m->cell_region && m->nregions > 0 ? m->cell_region[e] : 0;
                elem_out *o = &cb[e - e0];
                if (element(p, &laws[r], dTr[r], ndN, thick, out->u, e, o)) {
                    if (e < bad) bad = e;
                    continue;
                }
                for (int k = 0; k < 6; k++)
                    out->cell_stress[6 * e + k] = o->cell_sig[k];
                out->cell_von_mises[e] = hk_pp_von_mises(o->cell_sig);
            }
            for (int64_t e = e0; e < e1; e++) {
                const elem_out *o = &cb[e - e0];
                if (o->err) continue; /* reported below */
                const int32_t *nodes = m->cells.nodes + m->cells.ptr[e];
                const int nen = (int)(m->cells.ptr[e + 1] - m->cells.ptr[e]);
                for (int a = 0; a < nen; a++) {
                    const int64_t g = nodes[a];
                    if (node_owner(g, nthreads) != me) continue;
                    for (int k = 0; k < 6; k++) {
                        out->strain[6 * g + k] += o->eps[a][k];
                        out->stress[6 * g + k] += o->sig[a][k];
                    }
                    for (int k = 0; k < 3; k++)
                        fint[3 * g + k] += o->fint[a][k];
                    count[g] += 1;
                }
            }
        }
    }
    if (bad < ne) { /* the determinant again, for the message */
        int r = m->cell_region && m->nregions > 0 ? m->cell_region[bad] : 0;
        element(p, &laws[r], dTr[r], ndN, thick, out->u, bad, buf);
        HK_TRY_CHECK(0, HK_ERR_MODEL,
                     "element %lld has a non-positive Jacobian determinant (%g): it is inverted "
                     "or degenerate; fix its node order or the mesh",
                     (long long)m->cells.tag[bad], buf->det);
    }

    /* nodal averages, invariants, maxima: node by node on every thread (a max does not
     * depend on the order it is taken in) */
    double max_u = 0, max_vm = 0;
#pragma omp parallel for schedule(static) reduction(max : max_u, max_vm)
    for (int64_t i = 0; i < nn; i++) {
        if (count[i] > 0)
            for (int k = 0; k < 6; k++) {
                out->strain[6 * i + k] /= count[i];
                out->stress[6 * i + k] /= count[i];
            }
        out->von_mises[i] = hk_pp_von_mises(out->stress + 6 * i);
        hk_pp_principal(out->stress + 6 * i, out->principal + 3 * i);
        const double *ui = out->u + 3 * i;
        /* scaled by the largest component: no overflow or underflow of the squares for
         * extreme but finite values (E = 1e300 gave max |u| = 0) */
        const double um = fmax(fabs(ui[0]), fmax(fabs(ui[1]), fabs(ui[2])));
        double un = 0;
        if (um > 0 && isfinite(um)) {
            const double a = ui[0] / um, b = ui[1] / um, c = ui[2] / um;
            un = um * sqrt(a * a + b * b + c * c);
        } else if (!(um == 0))
            un = um; /* inf or NaN stays visible */
        if (un > max_u) max_u = un;
        if (out->von_mises[i] > max_vm) max_vm = out->von_mises[i];
    }
    out->max_u = max_u, out->max_von_mises = max_vm;

    /* reactions r = f_int - f_ext at the prescribed dofs, the springs' forces -K_s u where
     * they act (a held dof's own reaction is f_int + K_s u - f_ext, the springs take the
     * rest) */
    HK_TRY(hk_calloc((size_t)(dim * nn), sizeof(double), &ud));
    HK_TRY(hk_calloc((size_t)(dim * nn), sizeof(double), &ys));
    HK_TRY(hk_calloc((size_t)(dim * nn), sizeof(double), &yk));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++)
        for (int c = 0; c < dim; c++)
            ud[i * dim + c] = out->u[3 * i + c];
    HK_TRY(hk_springs_apply(p, -1, ud, ys));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++)
        for (int c = 0; c < dim; c++) {
            int64_t d = i * dim + c;
            out->reaction[3 * i + c] = s->fixed[d] ? fint[3 * i + c] - s->f_ext[d] : -ys[d];
        }
    for (int k = 0; k < p->nsupports; k++) {
        const hk_support *sp = &p->supports[k];
        const hk_group *g = &m->boundaries[sp->boundary];
        const double *x0 = sp->moment_point;
        const int spring = sp->kind == HK_SUPPORT_SPRING;
        if (spring) {
            memset(yk, 0, sizeof(double) * (size_t)(dim * nn));
            HK_TRY(hk_springs_apply(p, k, ud, yk));
        }
        /* every node of the group once (a node list, or the unique nodes of its facets) */
        int64_t gn;
        HK_TRY(hk_group_nodes(m, sp->boundary, &gn, &gnodes));
        for (int64_t j = 0; j < gn; j++) {
            const int64_t i = gnodes[j];
            double rf[3] = {0, 0, 0};
            for (int c = 0; c < dim; c++) {
                const int64_t d = i * dim + c;
                if (spring)
                    rf[c] = -yk[d];
                else if (sp->mask & (1u << c))
                    rf[c] = s->fixed[d] ? fint[3 * i + c] + ys[d] - s->f_ext[d] : 0;
            }
            const double *x = m->coords + 3 * i;
            const double r[3] = {x[0] - x0[0], x[1] - x0[1], x[2] - x0[2]};
            double *R = out->support_reaction[k], *M = out->support_moment[k];
            for (int c = 0; c < dim; c++)
                R[c] += rf[c];
            M[0] += r[1] * rf[2] - r[2] * rf[1];
            M[1] += r[2] * rf[0] - r[0] * rf[2];
            M[2] += r[0] * rf[1] - r[1] * rf[0];
        }
        free(gnodes);
        gnodes = NULL;
        (void)g;
    }

fail:
    free(ud);
    free(ys);
    free(yk);
    free(gnodes);
    free(fint);
    free(count);
    free(buf);
    free(laws);
    free(dTr);
    free(ndN);
    if (ierr) hk_fields_free(out);
    return ierr;
}
