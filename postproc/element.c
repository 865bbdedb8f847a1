/* Postproc's element library: natural node coordinates in Gmsh order, shape functions and
 * their derivatives, Gauss rules, and the Gmsh -> VTK node permutations.
 *
 * Gmsh node order: https://gmsh.info/doc/texinfo/gmsh.html#Node-ordering
 * VTK node order:  vtkQuadraticTetra, vtkQuadraticHexahedron, vtkTriQuadraticHexahedron.
 * tests/test_postproc.c checks every permutation against VTK's own parametric coordinates. */
#include <math.h>
#include <stddef.h>

#include "pp_impl.h"

/* ---- natural coordinates of the nodes (Gmsh order) ----------------------------------- */

static const double xi_tri[6][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0},
                                    {.5, 0, 0}, {.5, .5, 0}, {0, .5, 0}};
static const double xi_quad[9][3] = {{-1, -1, 0}, {1, -1, 0}, {1, 1, 0}, {-1, 1, 0}, {0, -1, 0},
                                     {1, 0, 0},   {0, 1, 0},  {-1, 0, 0}, {0, 0, 0}};
/* tet10 edges: 4 (0-1), 5 (1-2), 6 (2-0), 7 (3-0), 8 (3-2), 9 (3-1) */
static const double xi_tet[10][3] = {{0, 0, 0},  {1, 0, 0},   {0, 1, 0},   {0, 0, 1},
                                     {.5, 0, 0}, {.5, .5, 0}, {0, .5, 0},  {0, 0, .5},
                                     {0, .5, .5}, {.5, 0, .5}};
/* hex20 edges: 8 (0-1) 9 (0-3) 10 (0-4) 11 (1-2) 12 (1-5) 13 (2-3) 14 (2-6) 15 (3-7)
 * 16 (4-5) 17 (4-7) 18 (5-6) 19 (6-7); hex27 faces: 20 z- 21 y- 22 x- 23 x+ 24 y+ 25 z+,
 * 26 centre. */
static const double xi_hex[27][3] = {
    {-1, -1, -1}, {1, -1, -1}, {1, 1, -1}, {-1, 1, -1}, {-1, -1, 1}, {1, -1, 1}, {1, 1, 1},
    {-1, 1, 1},   {0, -1, -1}, {-1, 0, -1}, {-1, -1, 0}, {1, 0, -1}, {1, -1, 0}, {0, 1, -1},
    {1, 1, 0},    {-1, 1, 0},  {0, -1, 1},  {-1, 0, 1},  {1, 0, 1},  {0, 1, 1},  {0, 0, -1},
    {0, -1, 0},   {-1, 0, 0},  {1, 0, 0},   {0, 1, 0},   {0, 0, 1},  {0, 0, 0}};

/* ---- Gmsh -> VTK ---------------------------------------------------------------------- */

/* VTK tet10 edges: 7 (0-3) 8 (1-3) 9 (2-3): Gmsh's 8 and 9 swap. */
static const int perm_tet10[10] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 8};
/* VTK hex20 edges: 8 (0-1) 9 (1-2) 10 (2-3) 11 (3-0) 12 (4-5) 13 (5-6) 14 (6-7) 15 (7-4)
 * 16 (0-4) 17 (1-5) 18 (2-6) 19 (3-7); hex27 faces: 20 x- 21 x+ 22 y- 23 y+ 24 z- 25 z+. */
static const int perm_hex27[27] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  11, 13, 9,  16, 18,
                                   19, 17, 10, 12, 14, 15, 22, 23, 21, 24, 20, 25, 26};

static const hk_pp_elem elems[HK_EL_COUNT] = {
    [HK_EL_TRI3] = {"tri3", 2, 3, 1, 5, NULL, xi_tri},
    [HK_EL_TRI6] = {"tri6", 2, 6, 1, 22, NULL, xi_tri},
    [HK_EL_QUAD4] = {"quad4", 2, 4, 1, 9, NULL, xi_quad},
    [HK_EL_QUAD8] = {"quad8", 2, 8, 1, 23, NULL, xi_quad},
    [HK_EL_QUAD9] = {"quad9", 2, 9, 1, 28, NULL, xi_quad},
    [HK_EL_TET4] = {"tet4", 3, 4, 1, 10, NULL, xi_tet},
    [HK_EL_TET10] = {"tet10", 3, 10, 1, 24, perm_tet10, xi_tet},
    [HK_EL_HEX8] = {"hex8", 3, 8, 1, 12, NULL, xi_hex},
    [HK_EL_HEX20] = {"hex20", 3, 20, 1, 25, perm_hex27, xi_hex},
    [HK_EL_HEX27] = {"hex27", 3, 27, 1, 29, perm_hex27, xi_hex},
};

const hk_pp_elem *hk_pp_elem_get(int t)
{
    if (t < 0 || t >= HK_EL_COUNT || !elems[t].name) return NULL;
    return &elems[t];
}

/* ---- shape functions ------------------------------------------------------------------ */

/* Simplex (tri/tet), linear or quadratic, from barycentric coordinates L. */
static void shape_simplex(int dim, int nn, const double *x, double *N, double (*dN)[3])
{
    double L[4], dL[4][3] = {{0}};
    L[0] = 1;
    for (int k = 0; k < dim; k++) {
        L[k + 1] = x[k];
        L[0] -= x[k];
        dL[0][k] = -1;
        dL[k + 1][k] = 1;
    }
    int nv = dim + 1;
    if (nn == nv) {
        for (int a = 0; a < nv; a++) {
            N[a] = L[a];
            for (int k = 0; k < 3; k++) dN[a][k] = dL[a][k];
        }
        return;
    }
    static const int edge_tri[3][2] = {{0, 1}, {1, 2}, {2, 0}};
    static const int edge_tet[6][2] = {{0, 1}, {1, 2}, {2, 0}, {3, 0}, {3, 2}, {3, 1}};
    const int(*edge)[2] = dim == 2 ? edge_tri : edge_tet;
    for (int a = 0; a < nv; a++) {
        N[a] = L[a] * (2 * L[a] - 1);
        for (int k = 0; k < 3; k++) dN[a][k] = (4 * L[a] - 1) * dL[a][k];
    }
    for (int e = 0; e < nn - nv; e++) {
        int i = edge[e][0], j = edge[e][1];
        N[nv + e] = 4 * L[i] * L[j];
        for (int k = 0; k < 3; k++) dN[nv + e][k] = 4 * (L[i] * dL[j][k] + L[j] * dL[i][k]);
    }
}

/* 1D quadratic Lagrange on {-1, 0, 1}: value and derivative of the function of node a. */
static void lagrange2(double a, double x, double *l, double *dl)
{
    if (a < -0.5) {
        *l = 0.5 * x * (x - 1), *dl = x - 0.5;
    } else if (a > 0.5) {
        *l = 0.5 * x * (x + 1), *dl = x + 0.5;
    } else {
        *l = 1 - x * x, *dl = -2 * x;
    }
}

/* Quad/hex: bilinear/trilinear, serendipity (quad8/hex20) or full Lagrange (quad9/hex27). */
static void shape_tensor(int dim, int nn, const double (*xn)[3], const double *x, double *N,
                         double (*dN)[3])
{
    int ncorner = 1 << dim;
    int lagrange = nn == (dim == 2 ? 9 : 27);
    for (int a = 0; a < nn; a++) {
        const double *p = xn[a];
        for (int k = 0; k < 3; k++) dN[a][k] = 0;
        if (lagrange) {
            double l[3], dl[3];
            for (int k = 0; k < dim; k++) lagrange2(p[k], x[k], &l[k], &dl[k]);
            N[a] = 1;
            for (int k = 0; k < dim; k++) N[a] *= l[k];
            for (int k = 0; k < dim; k++) {
                dN[a][k] = dl[k];
                for (int j = 0; j < dim; j++)
                    if (j != k) dN[a][k] *= l[j];
            }
        } else if (nn == ncorner || a < ncorner) {
            /* linear: prod (1 + x a)/2; serendipity corner: that times (sum x a - (dim-1)) */
            double f[3], s = 0, c = 1.0 / ncorner;
            for (int k = 0; k < dim; k++) f[k] = 1 + x[k] * p[k], s += x[k] * p[k];
            double g = nn == ncorner ? 1 : s - (dim - 1);
            double prod = c;
            for (int k = 0; k < dim; k++) prod *= f[k];
            N[a] = prod * g;
            for (int k = 0; k < dim; k++) {
                double pk = c * p[k];
                for (int j = 0; j < dim; j++)
                    if (j != k) pk *= f[j];
                dN[a][k] = nn == ncorner ? pk : pk * (g + f[k]);
            }
        } else {
            /* serendipity mid-edge node: one zero coordinate z */
            int z = 0;
            for (int k = 0; k < dim; k++)
                if (fabs(p[k]) < 0.5) z = k;
            double c = 1.0 / (1 << (dim - 1)), f[3];
            for (int k = 0; k < dim; k++) f[k] = k == z ? 1 - x[k] * x[k] : 1 + x[k] * p[k];
            N[a] = c;
            for (int k = 0; k < dim; k++) N[a] *= f[k];
            for (int k = 0; k < dim; k++) {
                double d = c * (k == z ? -2 * x[k] : p[k]);
                for (int j = 0; j < dim; j++)
                    if (j != k) d *= f[j];
                dN[a][k] = d;
            }
        }
    }
}

void hk_pp_shape(int t, const double xi[3], double *N, double (*dN)[3])
{
    const hk_pp_elem *e = hk_pp_elem_get(t);
    if (t == HK_EL_TRI3 || t == HK_EL_TRI6 || t == HK_EL_TET4 || t == HK_EL_TET10)
        shape_simplex(e->dim, e->nnodes, xi, N, dN);
    else
        shape_tensor(e->dim, e->nnodes, e->xi, xi, N, dN);
}

/* ---- quadrature ----------------------------------------------------------------------- */

int hk_pp_quadrature(int t, double (*pts)[3], double *w)
{
    const hk_pp_elem *e = hk_pp_elem_get(t);
    switch (t) {
    case HK_EL_TRI3:
        pts[0][0] = pts[0][1] = 1.0 / 3, pts[0][2] = 0, w[0] = 0.5;
        return 1;
    case HK_EL_TRI6: {
        static const double p[3][2] = {{1.0 / 6, 1.0 / 6}, {2.0 / 3, 1.0 / 6}, {1.0 / 6, 2.0 / 3}};
        for (int q = 0; q < 3; q++)
            pts[q][0] = p[q][0], pts[q][1] = p[q][1], pts[q][2] = 0, w[q] = 1.0 / 6;
        return 3;
    }
    case HK_EL_TET4:
        pts[0][0] = pts[0][1] = pts[0][2] = 0.25, w[0] = 1.0 / 6;
        return 1;
    case HK_EL_TET10: {
        const double a = 0.5854101966249685, b = 0.1381966011250105;
        for (int q = 0; q < 4; q++) {
            for (int k = 0; k < 3; k++) pts[q][k] = (q == k + 1) ? a : b;
            w[q] = 1.0 / 24;
        }
        return 4;
    }
    default:
        break;
    }
    /* tensor Gauss: 2 points per direction for linear, 3 for quadratic */
    static const double g2[2] = {-0.57735026918962576, 0.57735026918962576}, w2[2] = {1, 1};
    static const double g3[3] = {-0.77459666924148338, 0, 0.77459666924148338},
                        w3[3] = {5.0 / 9, 8.0 / 9, 5.0 / 9};
    int linear = e->nnodes == (1 << e->dim);
    int n1 = linear ? 2 : 3;
    const double *g = linear ? g2 : g3, *gw = linear ? w2 : w3;
    int nq = 0;
    for (int k = 0; k < (e->dim == 3 ? n1 : 1); k++)
        for (int j = 0; j < n1; j++)
            for (int i = 0; i < n1; i++) {
                pts[nq][0] = g[i], pts[nq][1] = g[j];
                pts[nq][2] = e->dim == 3 ? g[k] : 0;
                w[nq] = gw[i] * gw[j] * (e->dim == 3 ? gw[k] : 1);
                nq++;
            }
    return nq;
}

/* ---- tensors -------------------------------------------------------------------------- */

double hk_pp_von_mises(const double s[6])
{
    double a = s[0] - s[1], b = s[1] - s[2], c = s[2] - s[0];
    double v = 0.5 * (a * a + b * b + c * c) + 3 * (s[3] * s[3] + s[4] * s[4] + s[5] * s[5]);
    return sqrt(v > 0 ? v : 0);
}

/* Cyclic Jacobi rotations on the 3x3 symmetric matrix: robust for repeated eigenvalues and
 * accurate to rounding; converges in a handful of sweeps. */
void hk_pp_principal(const double s[6], double ev[3])
{
    double A[3][3] = {{s[0], s[3], s[5]}, {s[3], s[1], s[4]}, {s[5], s[4], s[2]}};
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = A[0][1] * A[0][1] + A[0][2] * A[0][2] + A[1][2] * A[1][2];
        double diag = A[0][0] * A[0][0] + A[1][1] * A[1][1] + A[2][2] * A[2][2];
        if (off <= 1e-32 * diag || off == 0) break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                if (A[p][q] == 0) continue;
                double theta = (A[q][q] - A[p][p]) / (2 * A[p][q]);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), sn = t * c;
                /* A <- R^T A R with the rotation in the (p, q) plane */
                for (int k = 0; k < 3; k++) {
                    double akp = A[k][p], akq = A[k][q];
                    A[k][p] = c * akp - sn * akq;
                    A[k][q] = sn * akp + c * akq;
                }
                for (int k = 0; k < 3; k++) {
                    double apk = A[p][k], aqk = A[q][k];
                    A[p][k] = c * apk - sn * aqk;
                    A[q][k] = sn * apk + c * aqk;
                }
            }
    }
    ev[0] = A[0][0], ev[1] = A[1][1], ev[2] = A[2][2];
    /* sort descending */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2 - i; j++)
            if (ev[j] < ev[j + 1]) {
                double tmp = ev[j];
                ev[j] = ev[j + 1], ev[j + 1] = tmp;
            }
}
