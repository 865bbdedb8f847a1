/* The element-type table: names, dimensions, Gmsh and VTK numbers, Gmsh reference nodes and
 * the Gmsh -> VTK node permutations (docs/elements.md). */
#include "mesh_impl.h"

/* clang-format off */
static const hk_eltype_info info[HK_EL_COUNT] = {
    [HK_EL_POINT1] = {"point1", 0, 1, 1, 15, 1},
    [HK_EL_LINE2] = {"line2", 1, 2, 1, 1, 3},
    [HK_EL_LINE3] = {"line3", 1, 3, 2, 8, 21},
    [HK_EL_TRI3] = {"tri3", 2, 3, 1, 2, 5},
    [HK_EL_TRI6] = {"tri6", 2, 6, 2, 9, 22},
    [HK_EL_QUAD4] = {"quad4", 2, 4, 1, 3, 9},
    [HK_EL_QUAD8] = {"quad8", 2, 8, 2, 16, 23},
    [HK_EL_QUAD9] = {"quad9", 2, 9, 2, 10, 28},
    [HK_EL_TET4] = {"tet4", 3, 4, 1, 4, 10},
    [HK_EL_TET10] = {"tet10", 3, 10, 2, 11, 24},
    [HK_EL_HEX8] = {"hex8", 3, 8, 1, 5, 12},
    [HK_EL_HEX20] = {"hex20", 3, 20, 2, 17, 25},
    [HK_EL_HEX27] = {"hex27", 3, 27, 2, 12, 29},
    [HK_EL_WEDGE6] = {"wedge6", 3, 6, 1, 6, 13},
    [HK_EL_PYR5] = {"pyr5", 3, 5, 1, 7, 14},
    [HK_EL_WEDGE15] = {"wedge15", 3, 15, 2, 18, 26},
    [HK_EL_WEDGE18] = {"wedge18", 3, 18, 2, 13, 32},
    [HK_EL_PYR13] = {"pyr13", 3, 13, 2, 19, 27},
    [HK_EL_PYR14] = {"pyr14", 3, 14, 2, 14, 27},
};
/* clang-format on */

const hk_eltype_info *hk_eltype_get(hk_eltype t)
{
    if ((int)t < 0 || t >= HK_EL_COUNT) return NULL;
    return &info[t];
}

int hk_eltype_from_gmsh(int g)
{
    for (int t = 0; t < HK_EL_COUNT; t++)
        if (info[t].gmsh_type == g) return t;
    return -1;
}

/* clang-format off */
int hk_eltype_has_kernel(hk_eltype t)
{
    switch (t) {
    case HK_EL_TRI3: case HK_EL_TRI6: case HK_EL_QUAD4: case HK_EL_QUAD8: case HK_EL_QUAD9:
    case HK_EL_TET4: case HK_EL_TET10: case HK_EL_HEX8: case HK_EL_HEX20: case HK_EL_HEX27:
    case HK_EL_WEDGE6: case HK_EL_WEDGE15: case HK_EL_WEDGE18:
    case HK_EL_PYR5: case HK_EL_PYR13: case HK_EL_PYR14:
        return 1;
    default:
        return 0;
    }
}
/* clang-format on */

/* Gmsh reference nodes (Gmsh manual, "Node ordering"). Quadratic nodes follow the corners:
 * edges in Gmsh's edge order, then faces, then the interior. */
/* clang-format off */
static const double ref_point1[] = {0, 0, 0};
static const double ref_line3[] = {-1, 0, 0, 1, 0, 0, 0, 0, 0};
static const double ref_tri6[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, .5, 0, 0, .5, .5, 0, 0, .5, 0};
static const double ref_quad9[] = {-1, -1, 0, 1, -1, 0, 1, 1, 0, -1, 1, 0, /* corners */
                                   0, -1, 0, 1, 0, 0, 0, 1, 0, -1, 0, 0,   /* edges 01 12 23 30 */
                                   0, 0, 0};                               /* centre */
static const double ref_tet10[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1,
                                   .5, 0, 0,  /* 4: 0-1 */
                                   .5, .5, 0, /* 5: 1-2 */
                                   0, .5, 0,  /* 6: 2-0 */
                                   0, 0, .5,  /* 7: 3-0 */
                                   0, .5, .5, /* 8: 3-2 */
                                   .5, 0, .5};/* 9: 3-1 */
static const double ref_hex27[] = {
    -1, -1, -1, 1, -1, -1, 1, 1, -1, -1, 1, -1, -1, -1, 1, 1, -1, 1, 1, 1, 1, -1, 1, 1,
    0, -1, -1,  /*  8: 0-1 */
    -1, 0, -1,  /*  9: 0-3 */
    -1, -1, 0,  /* 10: 0-4 */
    1, 0, -1,   /* 11: 1-2 */
    1, -1, 0,   /* 12: 1-5 */
    0, 1, -1,   /* 13: 2-3 */
    1, 1, 0,    /* 14: 2-6 */
    -1, 1, 0,   /* 15: 3-7 */
    0, -1, 1,   /* 16: 4-5 */
    -1, 0, 1,   /* 17: 4-7 */
    1, 0, 1,    /* 18: 5-6 */
    0, 1, 1,    /* 19: 6-7 */
    0, 0, -1,   /* 20: face 0321 */
    0, -1, 0,   /* 21: face 0154 */
    -1, 0, 0,   /* 22: face 0473 */
    1, 0, 0,    /* 23: face 1265 */
    0, 1, 0,    /* 24: face 2376 */
    0, 0, 1,    /* 25: face 4567 */
    0, 0, 0};   /* 26: centre */
static const double ref_wedge18[] = {0, 0, -1, 1, 0, -1, 0, 1, -1, 0, 0, 1, 1, 0, 1, 0, 1, 1,
    .5, 0, -1,  /*  6: 0-1 */
    0, .5, -1,  /*  7: 0-2 */
    0, 0, 0,    /*  8: 0-3 */
    .5, .5, -1, /*  9: 1-2 */
    1, 0, 0,    /* 10: 1-4 */
    0, 1, 0,    /* 11: 2-5 */
    .5, 0, 1,   /* 12: 3-4 */
    0, .5, 1,   /* 13: 3-5 */
    .5, .5, 1,  /* 14: 4-5 */
    .5, 0, 0,   /* 15: face 0-1-4-3 */
    0, .5, 0,   /* 16: face 0-2-5-3 */
    .5, .5, 0}; /* 17: face 1-2-5-4 */
static const double ref_pyr14[] = {-1, -1, 0, 1, -1, 0, 1, 1, 0, -1, 1, 0, 0, 0, 1,
    0, -1, 0,     /*  5: 0-1 */
    -1, 0, 0,     /*  6: 0-3 */
    -.5, -.5, .5, /*  7: 0-4 */
    1, 0, 0,      /*  8: 1-2 */
    .5, -.5, .5,  /*  9: 1-4 */
    0, 1, 0,      /* 10: 2-3 */
    .5, .5, .5,   /* 11: 2-4 */
    -.5, .5, .5,  /* 12: 3-4 */
    0, 0, 0};     /* 13: base centre */
/* clang-format on */

/* clang-format off */
const double *hk_eltype_ref_coords(hk_eltype t)
{
    switch (t) {
    case HK_EL_POINT1: return ref_point1;
    case HK_EL_LINE2: case HK_EL_LINE3: return ref_line3;
    case HK_EL_TRI3: case HK_EL_TRI6: return ref_tri6;
    case HK_EL_QUAD4: case HK_EL_QUAD8: case HK_EL_QUAD9: return ref_quad9;
    case HK_EL_TET4: case HK_EL_TET10: return ref_tet10;
    case HK_EL_HEX8: case HK_EL_HEX20: case HK_EL_HEX27: return ref_hex27;
    case HK_EL_WEDGE6: case HK_EL_WEDGE15: case HK_EL_WEDGE18: return ref_wedge18;
    case HK_EL_PYR5: case HK_EL_PYR13: case HK_EL_PYR14: return ref_pyr14;
    default: return NULL;
    }
}
/* clang-format on */

/* vtk_nodes[i] = gmsh_nodes[order[i]]. Identity except tet10 (VTK's edges 8, 9 are 1-3 and
 * 2-3), hex20 (VTK lists bottom, top, then vertical edges) and hex27 (VTK's faces are
 * x-, x+, y-, y+, z-, z+), wedge15/18 (VTK: bottom loop, top loop, vertical edges; faces
 * 0-1-4-3, 1-2-5-4, 2-0-3-5) and pyr13/14 (VTK: base loop, then the edges to the apex). */
/* clang-format off */
static const int ord_identity[27] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                                     14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26};
static const int ord_tet10[10] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 8};
static const int ord_hex27[27] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  11, 13, 9,  16, 18,
                                  19, 17, 10, 12, 14, 15, 22, 23, 21, 24, 20, 25, 26};
static const int ord_wedge18[18] = {0, 1, 2, 3, 4, 5, 6, 9, 7, 12, 14, 13, 8, 10, 11, 15, 17, 16};
static const int ord_pyr13[13] = {0, 1, 2, 3, 4, 5, 8, 10, 6, 7, 9, 11, 12};
/* clang-format on */

const int *hk_eltype_vtk_order(hk_eltype t)
{
    switch (t) {
    case HK_EL_TET10:
        return ord_tet10;
    case HK_EL_HEX20:
    case HK_EL_HEX27:
        return ord_hex27;
    case HK_EL_WEDGE15:
    case HK_EL_WEDGE18:
        return ord_wedge18;
    case HK_EL_PYR13:
    case HK_EL_PYR14:
        return ord_pyr13;
    default:
        return ((int)t >= 0 && t < HK_EL_COUNT) ? ord_identity : NULL;
    }
}

int hk_eltype_vtk_nnodes(hk_eltype t)
{
    if ((int)t < 0 || t >= HK_EL_COUNT) return 0;
    return t == HK_EL_PYR14 ? 13 : info[t].nnodes;
}

/* ---- geometry helpers used by the generators, the loader and the tests ---------------- */

/* Linear (corner-only) shape functions of type t at reference point r. Returns the number
 * of corners. */
static int corner_shape(hk_eltype t, const double *r, double *N, double (*dN)[3])
{
    double x = r[0], y = r[1], z = r[2];
    memset(dN, 0, 8 * sizeof *dN);
    switch (t) {
    case HK_EL_POINT1:
        N[0] = 1;
        return 1;
    case HK_EL_LINE2:
    case HK_EL_LINE3:
        N[0] = (1 - x) / 2, N[1] = (1 + x) / 2;
        dN[0][0] = -.5, dN[1][0] = .5;
        return 2;
    case HK_EL_TRI3:
    case HK_EL_TRI6:
        N[0] = 1 - x - y, N[1] = x, N[2] = y;
        dN[0][0] = -1, dN[0][1] = -1, dN[1][0] = 1, dN[2][1] = 1;
        return 3;
    case HK_EL_TET4:
    case HK_EL_TET10:
        N[0] = 1 - x - y - z, N[1] = x, N[2] = y, N[3] = z;
        dN[0][0] = dN[0][1] = dN[0][2] = -1;
        dN[1][0] = dN[2][1] = dN[3][2] = 1;
        return 4;
    case HK_EL_QUAD4:
    case HK_EL_QUAD8:
    case HK_EL_QUAD9: {
        static const int s[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
        for (int i = 0; i < 4; i++) {
            N[i] = (1 + s[i][0] * x) * (1 + s[i][1] * y) / 4;
            dN[i][0] = s[i][0] * (1 + s[i][1] * y) / 4;
            dN[i][1] = s[i][1] * (1 + s[i][0] * x) / 4;
        }
        return 4;
    }
    case HK_EL_HEX8:
    case HK_EL_HEX20:
    case HK_EL_HEX27: {
        for (int i = 0; i < 8; i++) {
            const double *c = ref_hex27 + 3 * i;
            double a = 1 + c[0] * x, b = 1 + c[1] * y, d = 1 + c[2] * z;
            N[i] = a * b * d / 8;
            dN[i][0] = c[0] * b * d / 8;
            dN[i][1] = c[1] * a * d / 8;
            dN[i][2] = c[2] * a * b / 8;
        }
        return 8;
    }
    case HK_EL_WEDGE6:
    case HK_EL_WEDGE15:
    case HK_EL_WEDGE18: {
        double t3[3] = {1 - x - y, x, y}, d3[3][2] = {{-1, -1}, {1, 0}, {0, 1}};
        for (int i = 0; i < 6; i++) {
            int k = i % 3;
            double l = i < 3 ? (1 - z) / 2 : (1 + z) / 2, dl = i < 3 ? -.5 : .5;
            N[i] = t3[k] * l;
            dN[i][0] = d3[k][0] * l, dN[i][1] = d3[k][1] * l, dN[i][2] = t3[k] * dl;
        }
        return 6;
    }
    case HK_EL_PYR5:
    case HK_EL_PYR13:
    case HK_EL_PYR14: {
        /* rational pyramid in collapsed coordinates a = xi/w, b = eta/w, w = 1 - zeta
         * (a = b = 0 at the apex: the limit along the axis) */
        double w = 1 - z, a = fabs(w) > 1e-13 ? x / w : 0, b = fabs(w) > 1e-13 ? y / w : 0;
        for (int i = 0; i < 4; i++) {
            double s = ref_pyr14[3 * i], u = ref_pyr14[3 * i + 1];
            N[i] = w * (1 + s * a) * (1 + u * b) / 4;
            dN[i][0] = s * (1 + u * b) / 4;
            dN[i][1] = u * (1 + s * a) / 4;
            dN[i][2] = (s * u * a * b - 1) / 4;
        }
        N[4] = z, dN[4][2] = 1;
        return 5;
    }
    default:
        return 0;
    }
}

int hk_mesh_linear_map(hk_eltype t, const double *xc, const double *r, double *x, double J[3][3])
{
    double N[8], dN[8][3];
    int nc = corner_shape(t, r, N, dN);
    for (int a = 0; a < 3; a++) {
        x[a] = 0;
        for (int b = 0; b < 3; b++)
            J[a][b] = 0;
    }
    for (int i = 0; i < nc; i++)
        for (int a = 0; a < 3; a++) {
            x[a] += N[i] * xc[3 * i + a];
            for (int b = 0; b < 3; b++)
                J[a][b] += dN[i][b] * xc[3 * i + a];
        }
    return nc;
}

int hk_eltype_ncorners(hk_eltype t)
{
    static const int nc[HK_EL_COUNT] = {
        [HK_EL_POINT1] = 1, [HK_EL_LINE2] = 2,  [HK_EL_LINE3] = 2, [HK_EL_TRI3] = 3,
        [HK_EL_TRI6] = 3,   [HK_EL_QUAD4] = 4,  [HK_EL_QUAD8] = 4, [HK_EL_QUAD9] = 4,
        [HK_EL_TET4] = 4,   [HK_EL_TET10] = 4,  [HK_EL_HEX8] = 8,  [HK_EL_HEX20] = 8,
        [HK_EL_HEX27] = 8,  [HK_EL_WEDGE6] = 6, [HK_EL_PYR5] = 5,  [HK_EL_WEDGE15] = 6,
        [HK_EL_WEDGE18] = 6, [HK_EL_PYR13] = 5, [HK_EL_PYR14] = 5};
    return ((int)t >= 0 && t < HK_EL_COUNT) ? nc[t] : 0;
}

void hk_eltype_centroid(hk_eltype t, double *r)
{
    const double *rc = hk_eltype_ref_coords(t);
    int nc = hk_eltype_ncorners(t);
    r[0] = r[1] = r[2] = 0;
    for (int i = 0; i < nc; i++)
        for (int a = 0; a < 3; a++)
            r[a] += rc[3 * i + a] / nc;
}

/* perm with new_nodes[i] = old_nodes[perm[i]] mirroring the reference element (xi <-> eta;
 * xi -> -xi for lines): the element keeps its nodes' positions and flips orientation. */
int hk_eltype_flip_perm(hk_eltype t, int *perm)
{
    const double *rc = hk_eltype_ref_coords(t);
    int n = info[t].nnodes;
    for (int i = 0; i < n; i++) {
        double m[3] = {rc[3 * i + 1], rc[3 * i], rc[3 * i + 2]};
        if (info[t].dim == 1) m[0] = -rc[3 * i], m[1] = 0;
        perm[i] = -1;
        for (int j = 0; j < n; j++)
            if (fabs(rc[3 * j] - m[0]) + fabs(rc[3 * j + 1] - m[1]) + fabs(rc[3 * j + 2] - m[2]) <
                1e-12)
                perm[i] = j;
        if (perm[i] < 0) return -1;
    }
    return 0;
}

hk_eltype hk_eltype_facet(hk_eltype t)
{
    switch (t) {
    case HK_EL_TRI3:
    case HK_EL_QUAD4:
        return HK_EL_LINE2;
    case HK_EL_TRI6:
    case HK_EL_QUAD8:
    case HK_EL_QUAD9:
        return HK_EL_LINE3;
    case HK_EL_TET4:
        return HK_EL_TRI3;
    case HK_EL_TET10:
        return HK_EL_TRI6;
    case HK_EL_HEX8:
        return HK_EL_QUAD4;
    case HK_EL_HEX20:
        return HK_EL_QUAD8;
    case HK_EL_HEX27:
        return HK_EL_QUAD9;
    default:
        return HK_EL_COUNT;
    }
}

int hk_eltype_node_corners(hk_eltype t, int i, int8_t *corners)
{
    const int nc = hk_eltype_ncorners(t);
    const double *rc = hk_eltype_ref_coords(t);
    double N[8], dN[8][3];
    int k = 0;
    if (!rc || i < 0 || i >= info[t].nnodes) return 0;
    corner_shape(t, rc + 3 * i, N, dN);
    for (int c = 0; c < nc; c++)
        if (fabs(N[c]) > 1e-9) corners[k++] = (int8_t)c;
    return k;
}
