/* Reference elements: Gauss rules and the shape functions (mesh/shape.c) tabulated at their
 * points (see elements.h).
 *
 * Gmsh ordering (Gmsh manual, "Node ordering"; MLine/MTriangle/MQuadrangle/MTetrahedron/
 * MHexahedron edge and face tables):
 *   tri6   edges 3:(0,1) 4:(1,2) 5:(2,0)
 *   quad8  edges 4:(0,1) 5:(1,2) 6:(2,3) 7:(3,0); quad9 adds 8: centre
 *   tet10  edges 4:(0,1) 5:(1,2) 6:(2,0) 7:(3,0) 8:(3,2) 9:(3,1)
 *   hex20  edges 8:(0,1) 9:(0,3) 10:(0,4) 11:(1,2) 12:(1,5) 13:(2,3) 14:(2,6) 15:(3,7)
 *                16:(4,5) 17:(4,7) 18:(5,6) 19:(6,7)
 *   hex27  adds faces 20:(0,3,2,1) z=-1, 21:(0,1,5,4) y=-1, 22:(0,4,7,3) x=-1,
 *                23:(1,2,6,5) x=+1, 24:(2,3,7,6) y=+1, 25:(4,5,6,7) z=+1, and 26: centre.
 *   wedge15 edges 6:(0,1) 7:(0,2) 8:(0,3) 9:(1,2) 10:(1,4) 11:(2,5) 12:(3,4) 13:(3,5) 14:(4,5)
 *   wedge18 adds faces 15:(0,1,4,3) 16:(0,2,5,3) 17:(1,2,5,4)
 *   pyr13  edges 5:(0,1) 6:(0,3) 7:(0,4) 8:(1,2) 9:(1,4) 10:(2,3) 11:(2,4) 12:(3,4)
 *   pyr14  adds 13: base centre.
 * (checked against meshes written by Gmsh in tests/test_hybrid.c) */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "element_kernels.h"
#include "elements.h"

static const char *const el_names[HK_EL_COUNT] = {
    "point1", "line2", "line3",  "tri3", "tri6",    "quad4",   "quad8", "quad9",
    "tet4",   "tet10", "hex8",   "hex20", "hex27",  "wedge6", "pyr5",  "wedge15",
    "wedge18", "pyr13", "pyr14"};

const char *hk_el_name(int t)
{
    return (t >= 0 && t < HK_EL_COUNT) ? el_names[t] : "?";
}

/* ---- quadrature -------------------------------------------------------------------------- */

/* Gauss-Legendre tensor rule of n points per direction in d dimensions. */
static void rule_gauss(hk_elref *r, int d, int n)
{
    static const double x2[2] = {-0.57735026918962576451, 0.57735026918962576451};
    static const double w2[2] = {1, 1};
    static const double x3[3] = {-0.77459666924148337704, 0, 0.77459666924148337704};
    static const double w3[3] = {5.0 / 9.0, 8.0 / 9.0, 5.0 / 9.0};
    static const double x1[1] = {0}, w1[1] = {2};
    const double *x = n == 1 ? x1 : n == 2 ? x2 : x3, *w = n == 1 ? w1 : n == 2 ? w2 : w3;
    int q = 0;
    int nk = d > 2 ? n : 1, nj = d > 1 ? n : 1;
    for (int k = 0; k < nk; k++)
        for (int j = 0; j < nj; j++)
            for (int i = 0; i < n; i++, q++) {
                r->qp[q][0] = x[i];
                r->qp[q][1] = d > 1 ? x[j] : 0;
                r->qp[q][2] = d > 2 ? x[k] : 0;
                r->qw[q] = w[i] * (d > 1 ? w[j] : 1) * (d > 2 ? w[k] : 1);
            }
    r->nqp = q;
}

static void set_qp(hk_elref *r, int q, double a, double b, double c, double w)
{
    r->qp[q][0] = a, r->qp[q][1] = b, r->qp[q][2] = c, r->qw[q] = w;
}

static void rule_tri(hk_elref *r, int npts)
{
    if (npts == 1) {
        set_qp(r, 0, 1.0 / 3, 1.0 / 3, 0, 0.5);
    } else if (npts == 3) { /* degree 2 */
        set_qp(r, 0, 1.0 / 6, 1.0 / 6, 0, 1.0 / 6);
        set_qp(r, 1, 2.0 / 3, 1.0 / 6, 0, 1.0 / 6);
        set_qp(r, 2, 1.0 / 6, 2.0 / 3, 0, 1.0 / 6);
    } else if (npts == 7) {
        /* degree 5 (Radon; Stroud's T2:5-1) */
        const double s15 = 3.8729833462074168852; /* sqrt(15) */
        const double a = (6 - s15) / 21, wa = (155 - s15) / 2400;
        const double b = (6 + s15) / 21, wb = (155 + s15) / 2400;
        set_qp(r, 0, 1.0 / 3, 1.0 / 3, 0, 9.0 / 80);
        set_qp(r, 1, a, a, 0, wa);
        set_qp(r, 2, 1 - 2 * a, a, 0, wa);
        set_qp(r, 3, a, 1 - 2 * a, 0, wa);
        set_qp(r, 4, b, b, 0, wb);
        set_qp(r, 5, 1 - 2 * b, b, 0, wb);
        set_qp(r, 6, b, 1 - 2 * b, 0, wb);
    } else { /* 6 points, degree 4 (Dunavant) */
        const double a = 0.445948490915965, wa = 0.223381589678011 / 2;
        const double b = 0.091576213509771, wb = 0.109951743655322 / 2;
        set_qp(r, 0, a, a, 0, wa);
        set_qp(r, 1, 1 - 2 * a, a, 0, wa);
        set_qp(r, 2, a, 1 - 2 * a, 0, wa);
        set_qp(r, 3, b, b, 0, wb);
        set_qp(r, 4, 1 - 2 * b, b, 0, wb);
        set_qp(r, 5, b, 1 - 2 * b, 0, wb);
        npts = 6;
    }
    r->nqp = npts;
}

/* 14 points, degree 5, positive weights (Walkington's rule; the constants solved to fp64's
 * precision, tests/test_mass.c integrates every monomial of degree <= 5 exactly): two orbits
 * of 4 points (a, a, a, 1 - 3a) and one of 6 points (b, b, 1/2 - b, 1/2 - b), in barycentric
 * coordinates, weights summing to the volume 1/6. */
static void rule_tet14(hk_elref *r)
{
    static const double a[2] = {0.0927352503108916, 0.3108859192633012};
    static const double wa[2] = {0.0734930431163627 / 6, 0.11268792571801821 / 6};
    static const double b = 0.045503704125647554, wb = 0.04254602077707935 / 6;
    int q = 0;
    for (int o = 0; o < 2; o++) {
        const double c = 1 - 3 * a[o];
        set_qp(r, q++, a[o], a[o], a[o], wa[o]);
        set_qp(r, q++, c, a[o], a[o], wa[o]);
        set_qp(r, q++, a[o], c, a[o], wa[o]);
        set_qp(r, q++, a[o], a[o], c, wa[o]);
    }
    const double c = 0.5 - b; /* the 6 edges: two barycentric coordinates b, two 1/2 - b */
    set_qp(r, q++, b, b, c, wb);
    set_qp(r, q++, b, c, b, wb);
    set_qp(r, q++, c, b, b, wb);
    set_qp(r, q++, c, c, b, wb);
    set_qp(r, q++, c, b, c, wb);
    set_qp(r, q++, b, c, c, wb);
    r->nqp = q;
}

static void rule_tet(hk_elref *r, int npts)
{
    if (npts == 14) {
        rule_tet14(r);
        return;
    }
    if (npts == 1) {
        set_qp(r, 0, 0.25, 0.25, 0.25, 1.0 / 6);
    } else { /* 4 points, degree 2 */
        const double a = 0.58541019662496845446, b = 0.13819660112501051518, w = 1.0 / 24;
        set_qp(r, 0, b, b, b, w);
        set_qp(r, 1, a, b, b, w);
        set_qp(r, 2, b, a, b, w);
        set_qp(r, 3, b, b, a, w);
        npts = 4;
    }
    r->nqp = npts;
}

/* Wedge: the triangle rule of ntri points times ng Gauss points in zeta (triangle fastest). */
static void rule_wedge(hk_elref *r, int ntri, int ng)
{
    hk_elref t, g;
    memset(&t, 0, sizeof t);
    memset(&g, 0, sizeof g);
    rule_tri(&t, ntri);
    rule_gauss(&g, 1, ng);
    int q = 0;
    for (int k = 0; k < g.nqp; k++)
        for (int i = 0; i < t.nqp; i++, q++)
            set_qp(r, q, t.qp[i][0], t.qp[i][1], g.qp[k][0], t.qw[i] * g.qw[k]);
    r->nqp = q;
}

/* Pyramid: the collapsed-hexahedron (conical product) rule. With xi = a(1-c), eta = b(1-c),
 * zeta = c, dV = (1-c)^2 da db dc over [-1,1]^2 x [0,1]: n Gauss-Legendre points in a and b,
 * n Gauss-Jacobi points in c for the weight (1-c)^2 (exact for degree 2n-1 in c times the
 * weight). The pyramids' gradients are polynomials in (a, b, c), so the rule is exact for the
 * stiffness of straight-sided pyr5 (n = 2) and pyr13/pyr14 (n = 3). Points ordered a fastest. */
/* Gauss-Jacobi (alpha = 2, beta = 0) on [0,1]: roots of the degree-n polynomial orthogonal
 * under (1-c)^2, weights summing to 1/3 (computed to 40 digits) */
static const double gj_c1[1] = {0.25}, gj_w1[1] = {1.0 / 3};
static const double gj_c2[2] = {0.12251482265544137787, 0.54415184401122528880};
static const double gj_w2[2] = {0.23254745125350790275, 0.10078588207982543058};
static const double gj_c3[3] = {0.072994024073149732156, 0.34700376603835188472,
                                0.70500220988849838312};
static const double gj_w3[3] = {0.15713636106488661332, 0.14624626925986602200,
                                0.029950703008580698011};

static void rule_pyramid(hk_elref *r, int n)
{
    const double *c = n == 1 ? gj_c1 : n == 2 ? gj_c2 : gj_c3;
    const double *wc = n == 1 ? gj_w1 : n == 2 ? gj_w2 : gj_w3;
    hk_elref g;
    memset(&g, 0, sizeof g);
    rule_gauss(&g, 2, n);
    int q = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < g.nqp; i++, q++)
            set_qp(r, q, g.qp[i][0] * (1 - c[k]), g.qp[i][1] * (1 - c[k]), c[k], g.qw[i] * wc[k]);
    r->nqp = q;
}

/* ---- tables ------------------------------------------------------------------------------ */

static hk_elref refs[HK_EL_COUNT];
static pthread_once_t refs_once = PTHREAD_ONCE_INIT;

static void init_one(hk_eltype t, int dim, int n, int nc, int simplex)
{
    hk_elref *r = &refs[t];
    r->type = t;
    r->name = el_names[t];
    r->dim = dim;
    r->nnodes = n;
    r->ncorners = nc;
    r->simplex = simplex;
    switch (t) {
    case HK_EL_LINE2:
        rule_gauss(r, 1, 2);
        break;
    case HK_EL_LINE3:
        rule_gauss(r, 1, 3);
        break;
    case HK_EL_TRI3:
        rule_tri(r, 1);
        break;
    case HK_EL_TRI6:
        rule_tri(r, 3);
        break;
    case HK_EL_QUAD4:
        rule_gauss(r, 2, 2);
        break;
    case HK_EL_QUAD8:
    case HK_EL_QUAD9:
        rule_gauss(r, 2, 3);
        break;
    case HK_EL_TET4:
        rule_tet(r, 1);
        break;
    case HK_EL_TET10:
        rule_tet(r, 4);
        break;
    case HK_EL_HEX8:
        rule_gauss(r, 3, 2);
        break;
    case HK_EL_WEDGE6:
        rule_wedge(r, 3, 2);
        break;
    case HK_EL_WEDGE15:
    case HK_EL_WEDGE18:
        rule_wedge(r, 6, 3);
        break;
    case HK_EL_PYR5:
        rule_pyramid(r, 2);
        break;
    case HK_EL_PYR13:
    case HK_EL_PYR14:
        rule_pyramid(r, 3);
        break;
    default:
        rule_gauss(r, 3, 3);
        break;
    }
    for (int a = 0; a < n; a++)
        hk_el_node_xi(t, a, r->xi[a]);
    for (int q = 0; q < r->nqp; q++)
        hk_el_shape(t, r->qp[q], r->N[q], r->dN[q]);
    hk_elref_reduced_rule(t, &r->nqr, r->qpr, r->qwr);
    for (int q = 0; q < r->nqr; q++)
        hk_el_shape(t, r->qpr[q], r->Nr[q], r->dNr[q]);
    for (int a = 0; a < n; a++)
        hk_el_shape(t, r->xi[a], NULL, r->dNn[a]);
}

static void init_refs(void)
{
    init_one(HK_EL_LINE2, 1, 2, 2, 0);
    init_one(HK_EL_LINE3, 1, 3, 2, 0);
    init_one(HK_EL_TRI3, 2, 3, 3, 1);
    init_one(HK_EL_TRI6, 2, 6, 3, 1);
    init_one(HK_EL_QUAD4, 2, 4, 4, 0);
    init_one(HK_EL_QUAD8, 2, 8, 4, 0);
    init_one(HK_EL_QUAD9, 2, 9, 4, 0);
    init_one(HK_EL_TET4, 3, 4, 4, 1);
    init_one(HK_EL_TET10, 3, 10, 4, 1);
    init_one(HK_EL_HEX8, 3, 8, 8, 0);
    init_one(HK_EL_HEX20, 3, 20, 8, 0);
    init_one(HK_EL_HEX27, 3, 27, 8, 0);
    init_one(HK_EL_WEDGE6, 3, 6, 6, 0);
    init_one(HK_EL_WEDGE15, 3, 15, 6, 0);
    init_one(HK_EL_WEDGE18, 3, 18, 6, 0);
    init_one(HK_EL_PYR5, 3, 5, 5, 0);
    init_one(HK_EL_PYR13, 3, 13, 5, 0);
    init_one(HK_EL_PYR14, 3, 14, 5, 0);
}

const hk_elref *hk_elref_get(hk_eltype t)
{
    pthread_once(&refs_once, init_refs);
    if ((int)t < HK_EL_LINE2 || (int)t >= HK_EL_COUNT) return NULL;
    return &refs[t];
}

/* ---- mass rules -------------------------------------------------------------------------- */

static hk_elref mass_refs[HK_EL_COUNT];
static pthread_once_t mass_once = PTHREAD_ONCE_INIT;

/* The element's own rule where it integrates N_a N_b exactly (degree 2p per direction on
 * undistorted elements; in 2D also times the axisymmetric weight r): the Gauss products of
 * quads, hexes and wedges, the collapsed rules of the pyramids (their shape functions are
 * polynomials of the collapsed coordinates); richer rules for the simplices, whose stiffness
 * rules are short of it (tri3 and tet4 one point: a mass of rank 1). */
static void init_mass_refs(void)
{
    pthread_once(&refs_once, init_refs);
    for (int t = HK_EL_LINE2; t < HK_EL_COUNT; t++) {
        hk_elref *r = &mass_refs[t];
        *r = refs[t];
        switch (t) {
        case HK_EL_TRI3:
        case HK_EL_TRI6:
            rule_tri(r, 7);
            break;
        case HK_EL_TET4:
            rule_tet(r, 4);
            break;
        case HK_EL_TET10:
            rule_tet(r, 14);
            break;
        default:
            continue;
        }
        for (int q = 0; q < r->nqp; q++)
            hk_el_shape((hk_eltype)t, r->qp[q], r->N[q], r->dN[q]);
    }
}

const hk_elref *hk_elref_mass_get(hk_eltype t)
{
    pthread_once(&mass_once, init_mass_refs);
    if ((int)t < HK_EL_LINE2 || (int)t >= HK_EL_COUNT) return NULL;
    return &mass_refs[t];
}

void hk_elref_facet_rule(hk_eltype t, int *nq, double (*qp)[3], double *qw)
{
    hk_elref r;
    memset(&r, 0, sizeof r);
    if (t == HK_EL_TRI6 || t == HK_EL_TRI3)
        rule_tri(&r, 6);
    else if (t == HK_EL_LINE2 || t == HK_EL_LINE3)
        rule_gauss(&r, 1, 3);
    else
        rule_gauss(&r, 2, 3);
    *nq = r.nqp;
    memcpy(qp, r.qp, sizeof(double[3]) * (size_t)r.nqp);
    memcpy(qw, r.qw, sizeof(double) * (size_t)r.nqp);
}

int hk_elref_reduced_rule(hk_eltype t, int *nq, double (*qp)[3], double *qw)
{
    hk_elref r;
    memset(&r, 0, sizeof r);
    switch (t) {
    case HK_EL_QUAD4:
        rule_gauss(&r, 2, 1);
        break;
    case HK_EL_QUAD8:
    case HK_EL_QUAD9:
        rule_gauss(&r, 2, 2);
        break;
    case HK_EL_HEX20:
    case HK_EL_HEX27:
        rule_gauss(&r, 3, 2);
        break;
    case HK_EL_HEX8:
        rule_gauss(&r, 3, 1);
        break;
    case HK_EL_TRI6:
        set_qp(&r, 0, 1.0 / 3, 1.0 / 3, 0, 0.5), r.nqp = 1;
        break;
    case HK_EL_TET10:
        set_qp(&r, 0, 0.25, 0.25, 0.25, 1.0 / 6), r.nqp = 1;
        break;
    case HK_EL_WEDGE6:
        set_qp(&r, 0, 1.0 / 3, 1.0 / 3, 0, 1), r.nqp = 1;
        break;
    case HK_EL_WEDGE15:
    case HK_EL_WEDGE18:
        rule_wedge(&r, 3, 2);
        break;
    case HK_EL_PYR5: /* (0, 0, 1/4), the centroid of the reference pyramid, weight 4/3 */
        rule_pyramid(&r, 1);
        break;
    case HK_EL_PYR13:
    case HK_EL_PYR14:
        rule_pyramid(&r, 2);
        break;
    default:
        *nq = 0;
        return 0; /* tri3, tet4: one point already */
    }
    *nq = r.nqp;
    memcpy(qp, r.qp, sizeof(double[3]) * (size_t)r.nqp);
    memcpy(qw, r.qw, sizeof(double) * (size_t)r.nqp);
    return r.nqp;
}

double hk_elref_reduced_interp(hk_eltype t, const double xi[3], const double *v)
{
    return hk_el_reduced_interp(t, xi, v);
}
