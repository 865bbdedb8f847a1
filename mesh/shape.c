/* Shape functions of the reference elements in Gmsh ordering, and their nodes' reference
 * coordinates: the mapping from a reference element to the mesh. Below assembly/ (which
 * integrates with them) because mesh/ needs them too, to place second-order nodes.
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

#include "shape.h"

/* ---- node coordinates -------------------------------------------------------------------- */

static const double quad_xi[9][2] = {{-1, -1}, {1, -1}, {1, 1},  {-1, 1}, {0, -1},
                                     {1, 0},   {0, 1},  {-1, 0}, {0, 0}};
static const double hex_corner[8][3] = {{-1, -1, -1}, {1, -1, -1}, {1, 1, -1}, {-1, 1, -1},
                                        {-1, -1, 1},  {1, -1, 1},  {1, 1, 1},  {-1, 1, 1}};
static const int hex_edges[12][2] = {{0, 1}, {0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3},
                                     {2, 6}, {3, 7}, {4, 5}, {4, 7}, {5, 6}, {6, 7}};
static const int hex_faces[6][4] = {{0, 3, 2, 1}, {0, 1, 5, 4}, {0, 4, 7, 3},
                                    {1, 2, 6, 5}, {2, 3, 7, 6}, {4, 5, 6, 7}};
static const int tri_edges[3][2] = {{0, 1}, {1, 2}, {2, 0}};
static const int tet_edges[6][2] = {{0, 1}, {1, 2}, {2, 0}, {3, 0}, {3, 2}, {3, 1}};
static const double wedge_corner[6][3] = {{0, 0, -1}, {1, 0, -1}, {0, 1, -1},
                                          {0, 0, 1},  {1, 0, 1},  {0, 1, 1}};
static const int wedge_edges[9][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 4},
                                      {2, 5}, {3, 4}, {3, 5}, {4, 5}};
static const int wedge_faces[3][4] = {{0, 1, 4, 3}, {0, 2, 5, 3}, {1, 2, 5, 4}};
static const double pyr_corner[5][3] = {{-1, -1, 0}, {1, -1, 0}, {1, 1, 0}, {-1, 1, 0}, {0, 0, 1}};
static const int pyr_edges[8][2] = {{0, 1}, {0, 3}, {0, 4}, {1, 2}, {1, 4}, {2, 3}, {2, 4}, {3, 4}};

/* Reference coordinates of node a of element type t. */
void hk_el_node_xi(hk_eltype t, int a, double xi[3])
{
    static const double tri_c[3][2] = {{0, 0}, {1, 0}, {0, 1}};
    static const double tet_c[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    xi[0] = xi[1] = xi[2] = 0;
    switch (t) {
    case HK_EL_LINE2:
    case HK_EL_LINE3:
        xi[0] = a == 0 ? -1 : a == 1 ? 1 : 0;
        break;
    case HK_EL_TRI3:
    case HK_EL_TRI6:
        if (a < 3) {
            xi[0] = tri_c[a][0], xi[1] = tri_c[a][1];
        } else {
            const int *e = tri_edges[a - 3];
            for (int k = 0; k < 2; k++)
                xi[k] = 0.5 * (tri_c[e[0]][k] + tri_c[e[1]][k]);
        }
        break;
    case HK_EL_QUAD4:
    case HK_EL_QUAD8:
    case HK_EL_QUAD9:
        xi[0] = quad_xi[a][0], xi[1] = quad_xi[a][1];
        break;
    case HK_EL_TET4:
    case HK_EL_TET10:
        if (a < 4) {
            for (int k = 0; k < 3; k++)
                xi[k] = tet_c[a][k];
        } else {
            const int *e = tet_edges[a - 4];
            for (int k = 0; k < 3; k++)
                xi[k] = 0.5 * (tet_c[e[0]][k] + tet_c[e[1]][k]);
        }
        break;
    case HK_EL_HEX8:
    case HK_EL_HEX20:
    case HK_EL_HEX27:
        if (a < 8) {
            for (int k = 0; k < 3; k++)
                xi[k] = hex_corner[a][k];
        } else if (a < 20) {
            const int *e = hex_edges[a - 8];
            for (int k = 0; k < 3; k++)
                xi[k] = 0.5 * (hex_corner[e[0]][k] + hex_corner[e[1]][k]);
        } else if (a < 26) {
            const int *f = hex_faces[a - 20];
            for (int k = 0; k < 3; k++)
                xi[k] = 0.25 * (hex_corner[f[0]][k] + hex_corner[f[1]][k] + hex_corner[f[2]][k] +
                                hex_corner[f[3]][k]);
        }
        break;
    case HK_EL_WEDGE6:
    case HK_EL_WEDGE15:
    case HK_EL_WEDGE18:
        if (a < 6) {
            for (int k = 0; k < 3; k++)
                xi[k] = wedge_corner[a][k];
        } else if (a < 15) {
            const int *e = wedge_edges[a - 6];
            for (int k = 0; k < 3; k++)
                xi[k] = 0.5 * (wedge_corner[e[0]][k] + wedge_corner[e[1]][k]);
        } else {
            const int *f = wedge_faces[a - 15];
            for (int k = 0; k < 3; k++)
                xi[k] = 0.25 * (wedge_corner[f[0]][k] + wedge_corner[f[1]][k] +
                                wedge_corner[f[2]][k] + wedge_corner[f[3]][k]);
        }
        break;
    case HK_EL_PYR5:
    case HK_EL_PYR13:
    case HK_EL_PYR14:
        if (a < 5) {
            for (int k = 0; k < 3; k++)
                xi[k] = pyr_corner[a][k];
        } else if (a < 13) {
            const int *e = pyr_edges[a - 5];
            for (int k = 0; k < 3; k++)
                xi[k] = 0.5 * (pyr_corner[e[0]][k] + pyr_corner[e[1]][k]);
        } /* 13: base centre (0,0,0) */
        break;
    default:
        break;
    }
}

/* ---- shape functions --------------------------------------------------------------------- */

/* 1D Lagrange functions of degree 1 (nodes -1, 1) or 2 (nodes -1, 0, 1) for node s. */
static void lag1d(int order, double s, double x, double *l, double *dl)
{
    if (order == 1) {
        *l = 0.5 * (1 + s * x);
        *dl = 0.5 * s;
    } else if (s == 0) {
        *l = 1 - x * x;
        *dl = -2 * x;
    } else {
        *l = 0.5 * x * (x + s);
        *dl = x + 0.5 * s;
    }
}

/* Tensor-product Lagrange element of dimension d and order p. */
static void shape_tensor(hk_eltype t, int d, int order, int n, const double *x, double *N,
                         double (*dN)[3])
{
    for (int a = 0; a < n; a++) {
        double s[3], l[3], dl[3];
        hk_el_node_xi(t, a, s);
        for (int k = 0; k < d; k++)
            lag1d(order, s[k], x[k], &l[k], &dl[k]);
        double prod = 1;
        for (int k = 0; k < d; k++)
            prod *= l[k];
        if (N) N[a] = prod;
        for (int k = 0; k < 3; k++) {
            double g = 0;
            if (k < d) {
                g = dl[k];
                for (int m = 0; m < d; m++)
                    if (m != k) g *= l[m];
            }
            dN[a][k] = g;
        }
    }
}

/* Serendipity quad8 and hex20 (standard formulas, e.g. Zienkiewicz-Taylor vol. 1, ch. 6). */
static void shape_serendipity(hk_eltype t, int d, int n, const double *x, double *N,
                              double (*dN)[3])
{
    for (int a = 0; a < n; a++) {
        double s[3], g[3] = {0, 0, 0}, v;
        hk_el_node_xi(t, a, s);
        if (a < (d == 2 ? 4 : 8)) { /* corner: prod(1+s x)/2^d * (sum s x - (d-1)) */
            double p[3], sum = 0, prod = 1;
            for (int k = 0; k < d; k++)
                p[k] = 1 + s[k] * x[k], prod *= p[k], sum += s[k] * x[k];
            double c = d == 2 ? 0.25 : 0.125, q = sum - (d - 1);
            v = c * prod * q;
            for (int k = 0; k < d; k++) {
                double others = 1;
                for (int m = 0; m < d; m++)
                    if (m != k) others *= p[m];
                g[k] = c * (s[k] * others * q + prod * s[k]);
            }
        } else { /* midside: (1 - x_k^2) on its zero coordinate k, linear in the others */
            int k0 = 0;
            while (s[k0] != 0)
                k0++;
            double c = d == 2 ? 0.5 : 0.25, f[3], df[3];
            for (int k = 0; k < d; k++) {
                if (k == k0)
                    f[k] = 1 - x[k] * x[k], df[k] = -2 * x[k];
                else
                    f[k] = 1 + s[k] * x[k], df[k] = s[k];
            }
            v = c;
            for (int k = 0; k < d; k++)
                v *= f[k];
            for (int k = 0; k < d; k++) {
                g[k] = c * df[k];
                for (int m = 0; m < d; m++)
                    if (m != k) g[k] *= f[m];
            }
        }
        if (N) N[a] = v;
        for (int k = 0; k < 3; k++)
            dN[a][k] = g[k];
    }
}

/* Simplex of dimension d (tri, tet), linear or quadratic, in barycentric coordinates
 * L0 = 1 - sum x, Lk = x_{k-1}. */
static void shape_simplex(int d, int quadratic, const double *x, double *N, double (*dN)[3])
{
    double L[4], dL[4][3] = {{0}};
    L[0] = 1;
    for (int k = 0; k < d; k++) {
        L[0] -= x[k];
        L[k + 1] = x[k];
        dL[0][k] = -1;
        dL[k + 1][k] = 1;
    }
    int nc = d + 1;
    for (int a = 0; a < nc; a++) {
        if (!quadratic) {
            if (N) N[a] = L[a];
            for (int k = 0; k < 3; k++)
                dN[a][k] = dL[a][k];
        } else {
            if (N) N[a] = L[a] * (2 * L[a] - 1);
            for (int k = 0; k < 3; k++)
                dN[a][k] = (4 * L[a] - 1) * dL[a][k];
        }
    }
    if (!quadratic) return;
    const int(*e)[2] = d == 2 ? tri_edges : tet_edges;
    int ne = d == 2 ? 3 : 6;
    for (int m = 0; m < ne; m++) {
        int i = e[m][0], j = e[m][1], a = nc + m;
        if (N) N[a] = 4 * L[i] * L[j];
        for (int k = 0; k < 3; k++)
            dN[a][k] = 4 * (dL[i][k] * L[j] + L[i] * dL[j][k]);
    }
}

/* Wedges: triangle (barycentric L0 = 1 - xi - eta, L1 = xi, L2 = eta) times line in zeta.
 * wedge6 linear x linear; wedge18 Lagrange tri6 x line3; wedge15 serendipity (e.g.
 * Zienkiewicz-Taylor vol. 1, ch. 6): corners L(2L-1)(1+s zeta)/2 - L(1-zeta^2)/2, triangle
 * edges 2 Li Lj (1+s zeta), vertical edges L(1-zeta^2), s = -1 below and +1 above. */
static void shape_wedge(hk_eltype t, const double *x, double *N, double (*dN)[3])
{
    const double L[3] = {1 - x[0] - x[1], x[0], x[1]};
    static const double dL[3][2] = {{-1, -1}, {1, 0}, {0, 1}};
    const double z = x[2];
    if (t == HK_EL_WEDGE18) {
        double T[6], dT[6][3] = {{0}};
        shape_simplex(2, 1, x, T, dT);
        /* triangle node (tri6 numbering) and zeta level of each node */
        static const int tri[18] = {0, 1, 2, 0, 1, 2, 3, 5, 0, 4, 1, 2, 3, 5, 4, 3, 5, 4};
        static const int lev[18] = {-1, -1, -1, 1, 1, 1, -1, -1, 0, -1, 0, 0, 1, 1, 1, 0, 0, 0};
        for (int a = 0; a < 18; a++) {
            double l, dl;
            lag1d(2, lev[a], z, &l, &dl);
            if (N) N[a] = T[tri[a]] * l;
            dN[a][0] = dT[tri[a]][0] * l;
            dN[a][1] = dT[tri[a]][1] * l;
            dN[a][2] = T[tri[a]] * dl;
        }
        return;
    }
    for (int a = 0; a < 6; a++) {
        const int k = a % 3;
        const double s = a < 3 ? -1 : 1, lz = (1 + s * z) / 2;
        if (t == HK_EL_WEDGE6) {
            if (N) N[a] = L[k] * lz;
            dN[a][0] = dL[k][0] * lz, dN[a][1] = dL[k][1] * lz, dN[a][2] = L[k] * s / 2;
        } else {
            const double b = 1 - z * z, g = (4 * L[k] - 1) * lz - b / 2;
            if (N) N[a] = L[k] * (2 * L[k] - 1) * lz - L[k] * b / 2;
            dN[a][0] = dL[k][0] * g, dN[a][1] = dL[k][1] * g;
            dN[a][2] = L[k] * (2 * L[k] - 1) * s / 2 + L[k] * z;
        }
    }
    if (t == HK_EL_WEDGE6) return;
    for (int m = 0; m < 9; m++) {
        const int a = 6 + m, i = wedge_edges[m][0], j = wedge_edges[m][1];
        if (j == i + 3) { /* vertical edge */
            const double b = 1 - z * z;
            if (N) N[a] = L[i] * b;
            dN[a][0] = dL[i][0] * b, dN[a][1] = dL[i][1] * b, dN[a][2] = -2 * z * L[i];
        } else {
            const int p = i % 3, q = j % 3;
            const double s = i < 3 ? -1 : 1, lz = 1 + s * z;
            if (N) N[a] = 2 * L[p] * L[q] * lz;
            for (int k = 0; k < 2; k++)
                dN[a][k] = 2 * (dL[p][k] * L[q] + L[p] * dL[q][k]) * lz;
            dN[a][2] = 2 * L[p] * L[q] * s;
        }
    }
}

/* Pyramids (base [-1,1]^2 at zeta = 0, apex (0,0,1)): rational functions, written in the
 * collapsed coordinates a = xi/w, b = eta/w, w = 1 - zeta, in which they are polynomials
 * and so are their xi/eta/zeta derivatives (forms simplified symbolically; at the apex
 * a = b = 0, the limit along the axis). pyr5 is Bedrosian's linear pyramid; pyr13 his
 * serendipity pyramid (Bedrosian, "Shape functions and integration formulas for
 * three-dimensional finite element analysis", IJNME 35, 1992): corners
 * (w + s xi)(w + t eta)(s xi + t eta - 1)/(4w), base edges (w^2 - xi^2)(w + t eta)/(2w),
 * apex zeta(2 zeta - 1), apex edges zeta (w + s xi)(w + t eta)/w. pyr14 adds the base bubble
 * B = (w^2 - xi^2)(w^2 - eta^2)/w^2 (corners + B/4, base edges - B/2), which makes the base
 * face biquadratic. Every function restricts to the tri3/tri6 functions on the triangular
 * faces and to quad4/quad8/quad9 on the base, so pyramids conform to tets and hexes. */
static void shape_pyramid(hk_eltype t, const double *x, double *N, double (*dN)[3])
{
    const double w = 1 - x[2], z = x[2];
    const double a = fabs(w) > 1e-13 ? x[0] / w : 0, b = fabs(w) > 1e-13 ? x[1] / w : 0;
    if (t == HK_EL_PYR5) {
        for (int i = 0; i < 4; i++) {
            const double s = pyr_corner[i][0], u = pyr_corner[i][1];
            if (N) N[i] = w * (1 + s * a) * (1 + u * b) / 4;
            dN[i][0] = s * (1 + u * b) / 4;
            dN[i][1] = u * (1 + s * a) / 4;
            dN[i][2] = (s * u * a * b - 1) / 4;
        }
        if (N) N[4] = z;
        dN[4][0] = dN[4][1] = 0, dN[4][2] = 1;
        return;
    }
    for (int i = 0; i < 4; i++) { /* base corners */
        const double s = pyr_corner[i][0], u = pyr_corner[i][1];
        if (N) N[i] = w * (1 + s * a) * (1 + u * b) * (w * (s * a + u * b) - 1) / 4;
        dN[i][0] = s * (1 + u * b) * (w * (2 * s * a + u * b + 1) - 1) / 4;
        dN[i][1] = u * (1 + s * a) * (w * (s * a + 2 * u * b + 1) - 1) / 4;
        dN[i][2] = (s * u * a * b - 1) * (w * (s * a + u * b) - 1) / 4;
    }
    if (N) N[4] = z * (2 * z - 1);
    dN[4][0] = dN[4][1] = 0, dN[4][2] = 4 * z - 1;
    for (int m = 0; m < 8; m++) {
        const int n = 5 + m, i = pyr_edges[m][0], j = pyr_edges[m][1];
        if (j == 4) { /* edge to the apex */
            const double s = pyr_corner[i][0], u = pyr_corner[i][1];
            if (N) N[n] = z * w * (1 + s * a) * (1 + u * b);
            dN[n][0] = s * z * (1 + u * b);
            dN[n][1] = u * z * (1 + s * a);
            dN[n][2] = s * u * a * b + w * (s * a + u * b) + 2 * w - 1;
        } else if (pyr_corner[i][1] == pyr_corner[j][1]) { /* base edge along xi at eta = u */
            const double u = pyr_corner[i][1];
            if (N) N[n] = w * w * (1 - a * a) * (1 + u * b) / 2;
            dN[n][0] = -a * w * (1 + u * b);
            dN[n][1] = u * w * (1 - a * a) / 2;
            dN[n][2] = -w * (u * b * (1 + a * a) + 2) / 2;
        } else { /* base edge along eta at xi = s */
            const double s = pyr_corner[i][0];
            if (N) N[n] = w * w * (1 - b * b) * (1 + s * a) / 2;
            dN[n][0] = s * w * (1 - b * b) / 2;
            dN[n][1] = -b * w * (1 + s * a);
            dN[n][2] = -w * (s * a * (1 + b * b) + 2) / 2;
        }
    }
    if (t != HK_EL_PYR14) return;
    const double B = w * w * (1 - a * a) * (1 - b * b);
    const double dB[3] = {-2 * a * w * (1 - b * b), -2 * b * w * (1 - a * a),
                          -2 * w * (1 - a * a * b * b)};
    /* corners + B/4, base edges (5, 6, 8, 10) - B/2, apex and its edges unchanged */
    static const double c13[13] = {0.25, 0.25, 0.25, 0.25, 0, -0.5, -0.5, 0, -0.5, 0, -0.5, 0, 0};
    for (int n = 0; n < 13; n++) {
        const double c = c13[n];
        if (N) N[n] += c * B;
        for (int k = 0; k < 3; k++)
            dN[n][k] += c * dB[k];
    }
    if (N) N[13] = B;
    for (int k = 0; k < 3; k++)
        dN[13][k] = dB[k];
}

void hk_el_shape(hk_eltype t, const double xi[3], double *N, double (*dN)[3])
{
    switch (t) {
    case HK_EL_LINE2:
        shape_tensor(t, 1, 1, 2, xi, N, dN);
        break;
    case HK_EL_LINE3:
        shape_tensor(t, 1, 2, 3, xi, N, dN);
        break;
    case HK_EL_TRI3:
        shape_simplex(2, 0, xi, N, dN);
        break;
    case HK_EL_TRI6:
        shape_simplex(2, 1, xi, N, dN);
        break;
    case HK_EL_QUAD4:
        shape_tensor(t, 2, 1, 4, xi, N, dN);
        break;
    case HK_EL_QUAD8:
        shape_serendipity(t, 2, 8, xi, N, dN);
        break;
    case HK_EL_QUAD9:
        shape_tensor(t, 2, 2, 9, xi, N, dN);
        break;
    case HK_EL_TET4:
        shape_simplex(3, 0, xi, N, dN);
        break;
    case HK_EL_TET10:
        shape_simplex(3, 1, xi, N, dN);
        break;
    case HK_EL_HEX8:
        shape_tensor(t, 3, 1, 8, xi, N, dN);
        break;
    case HK_EL_HEX20:
        shape_serendipity(t, 3, 20, xi, N, dN);
        break;
    case HK_EL_HEX27:
        shape_tensor(t, 3, 2, 27, xi, N, dN);
        break;
    case HK_EL_WEDGE6:
    case HK_EL_WEDGE15:
    case HK_EL_WEDGE18:
        shape_wedge(t, xi, N, dN);
        break;
    case HK_EL_PYR5:
    case HK_EL_PYR13:
    case HK_EL_PYR14:
        shape_pyramid(t, xi, N, dN);
        break;
    default:
        break;
    }
}
