/* Meshes built in code for the tests (shared by several suites): grids of cubes split into
 * hexahedra, pyramids (and tetrahedra) or wedges, raised to quadratic elements. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../assembly/elements.h"
#include "test_util.h"

static unsigned lcg(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

static double urand(unsigned *s)
{
    return (double)lcg(s) / (double)0xffffff;
}

static int add_vertex(hk_test_builder *b, const double *x)
{
    if (b->nv == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->x = realloc(b->x, 3 * (size_t)b->cap * sizeof *b->x);
    }
    memcpy(b->x + 3 * b->nv, x, 3 * sizeof *x);
    return b->nv++;
}

static double jac_sign(hk_eltype t, const hk_test_builder *b, const int32_t *c)
{
    double r[3] = {0, 0, 0}, N[HK_EL_MAXN], dN[HK_EL_MAXN][3], J[3][3] = {{0}};
    const double *rc = hk_eltype_ref_coords(t);
    const int nc = t == HK_EL_HEX8 ? 8 : t == HK_EL_WEDGE6 ? 6 : t == HK_EL_PYR5 ? 5 : 4;
    for (int a = 0; a < nc; a++)
        for (int k = 0; k < 3; k++)
            r[k] += rc[3 * a + k] / nc;
    hk_el_shape(t, r, N, dN);
    for (int a = 0; a < nc; a++)
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++)
                J[i][k] += b->x[3 * c[a] + i] * dN[a][k];
    return J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
           J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
           J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
}

/* A linear cell, turned to a positive Jacobian by a mirror of its reference if needed. */
static void add_cell(hk_test_builder *b, hk_eltype t, const int32_t *c)
{
    const int nc = t == HK_EL_HEX8 ? 8 : t == HK_EL_WEDGE6 ? 6 : t == HK_EL_PYR5 ? 5 : 4;
    int32_t v[8];
    memcpy(v, c, (size_t)nc * sizeof *v);
    if (jac_sign(t, b, v) < 0) {
        int32_t s;
        if (t == HK_EL_WEDGE6)
            s = v[1], v[1] = v[2], v[2] = s, s = v[4], v[4] = v[5], v[5] = s;
        else if (t == HK_EL_PYR5)
            s = v[1], v[1] = v[3], v[3] = s;
        else
            s = v[1], v[1] = v[2], v[2] = s; /* tet4 */
    }
    CU_ASSERT_FATAL(jac_sign(t, b, v) > 0);
    if (b->nc == b->ccap) {
        b->ccap = b->ccap ? 2 * b->ccap : 64;
        b->type = realloc(b->type, (size_t)b->ccap);
        b->conn = realloc(b->conn, (size_t)b->ccap * sizeof *b->conn);
    }
    b->type[b->nc] = (uint8_t)t;
    memcpy(b->conn[b->nc], v, (size_t)nc * sizeof *v);
    b->nc++;
}

/* Cubes of a nx x ny x nz grid on [0,1] x [0,0.8] x [0,0.6], kind[i] per x column; interior
 * vertices (cube corners and the pyramid cubes' centres) moved at random by up to amp of a
 * cell. A pyramid cube is 6 pyramids on its faces around its centre; with tets_on_z, the
 * pyramids on z = 0 and z = 0.6 are split into two tetrahedra each. A wedge cube is two
 * prisms split along its diagonal (0,0)-(1,1) in xy. */
void hk_test_build_grid(hk_test_builder *b, int nx, int ny, int nz, const int *kind, int tets_on_z,
                        double amp, unsigned seed)
{
    memset(b, 0, sizeof *b);
    const double L[3] = {1, 0.8, 0.6};
    const int n[3] = {nx, ny, nz};
    const double h[3] = {L[0] / nx, L[1] / ny, L[2] / nz};
    int *vid = malloc((size_t)(nx + 1) * (ny + 1) * (nz + 1) * sizeof *vid);
    for (int k = 0; k <= nz; k++)
        for (int j = 0; j <= ny; j++)
            for (int i = 0; i <= nx; i++) {
                const int P[3] = {i, j, k};
                double x[3];
                int interior = 1;
                for (int d = 0; d < 3; d++)
                    interior &= P[d] > 0 && P[d] < n[d];
                for (int d = 0; d < 3; d++)
                    x[d] = P[d] * h[d] + (interior ? amp * h[d] * (2 * urand(&seed) - 1) : 0);
                vid[i + (nx + 1) * (j + (ny + 1) * k)] = add_vertex(b, x);
            }
    static const int hc[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0},
                                 {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};
    /* the cube's faces, counter-clockwise seen from outside (add_cell fixes the sense) */
    static const int faces[6][4] = {{0, 3, 2, 1}, {4, 5, 6, 7}, {0, 1, 5, 4},
                                    {2, 3, 7, 6}, {0, 4, 7, 3}, {1, 2, 6, 5}};
    for (int k = 0; k < nz; k++)
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) {
                int32_t c[8];
                for (int a = 0; a < 8; a++)
                    c[a] = vid[(i + hc[a][0]) +
                               (nx + 1) * ((j + hc[a][1]) + (ny + 1) * (k + hc[a][2]))];
                if (kind[i] == HK_TEST_CUBE_HEX) {
                    add_cell(b, HK_EL_HEX8, c);
                } else if (kind[i] == HK_TEST_CUBE_WEDGE) {
                    const int32_t w1[6] = {c[0], c[1], c[2], c[4], c[5], c[6]};
                    const int32_t w2[6] = {c[0], c[2], c[3], c[4], c[6], c[7]};
                    add_cell(b, HK_EL_WEDGE6, w1);
                    add_cell(b, HK_EL_WEDGE6, w2);
                } else {
                    double m[3] = {0, 0, 0};
                    for (int a = 0; a < 8; a++)
                        for (int d = 0; d < 3; d++)
                            m[d] += b->x[3 * c[a] + d] / 8;
                    for (int d = 0; d < 3; d++)
                        m[d] += amp * h[d] * (2 * urand(&seed) - 1);
                    const int32_t apex = add_vertex(b, m);
                    for (int f = 0; f < 6; f++) {
                        const int32_t p[5] = {c[faces[f][0]], c[faces[f][1]], c[faces[f][2]],
                                              c[faces[f][3]], apex};
                        const int onz = (f == 0 && k == 0) || (f == 1 && k == nz - 1);
                        if (tets_on_z && onz) {
                            const int32_t t1[4] = {p[0], p[1], p[2], apex};
                            const int32_t t2[4] = {p[0], p[2], p[3], apex};
                            add_cell(b, HK_EL_TET4, t1);
                            add_cell(b, HK_EL_TET4, t2);
                        } else {
                            add_cell(b, HK_EL_PYR5, p);
                        }
                    }
                }
            }
    free(vid);
}

/* The node at the mean of the sorted corners key[0..nk), created on first use. */
static int32_t key_node(hk_test_builder *b, int32_t *key, int nk)
{
    for (int i = 0; i < nk; i++) /* insertion sort */
        for (int j = i; j > 0 && key[j - 1] > key[j]; j--) {
            int32_t s = key[j];
            key[j] = key[j - 1], key[j - 1] = s;
        }
    for (int q = 0; q < b->nk; q++) {
        if (b->key[q][0] != nk) continue;
        int same = 1;
        for (int i = 0; i < nk && same; i++)
            same = b->key[q][1 + i] == key[i];
        if (same) return b->key[q][1 + nk];
    }
    double x[3] = {0, 0, 0};
    for (int i = 0; i < nk; i++)
        for (int d = 0; d < 3; d++)
            x[d] += b->x[3 * key[i] + d] / nk;
    if (b->nk == b->kcap) {
        b->kcap = b->kcap ? 2 * b->kcap : 256;
        b->key = realloc(b->key, (size_t)b->kcap * sizeof *b->key);
    }
    int32_t id = add_vertex(b, x);
    b->key[b->nk][0] = nk;
    memcpy(b->key[b->nk] + 1, key, (size_t)nk * sizeof *key);
    b->key[b->nk][1 + nk] = id;
    b->nk++;
    return id;
}

/* The quadratic type of each linear one (serendipity or Lagrange family). */
hk_eltype hk_test_raise(hk_eltype t, int family)
{
    switch (t) {
    case HK_EL_HEX8:
        return family == 0 ? HK_EL_HEX8 : family == 1 ? HK_EL_HEX20 : HK_EL_HEX27;
    case HK_EL_WEDGE6:
        return family == 0 ? HK_EL_WEDGE6 : family == 1 ? HK_EL_WEDGE15 : HK_EL_WEDGE18;
    case HK_EL_PYR5:
        return family == 0 ? HK_EL_PYR5 : family == 1 ? HK_EL_PYR13 : HK_EL_PYR14;
    default:
        return family == 0 ? HK_EL_TET4 : HK_EL_TET10;
    }
}

/* Straight-sided higher-order nodes: each sits at the mean of the largest set of corners whose
 * reference mean is its reference position (8 for a centre, 4 for a face, 2 for an edge),
 * shared between the cells through that set. */
void hk_test_raise_cells(hk_test_builder *b, int family)
{
    for (int e = 0; e < b->nc; e++) {
        const hk_eltype tl = (hk_eltype)b->type[e], tq = hk_test_raise(tl, family);
        const int nc = hk_eltype_get(tl)->nnodes, nn = hk_eltype_get(tq)->nnodes;
        const double *rc = hk_eltype_ref_coords(tq);
        for (int a = nc; a < nn; a++) {
            int32_t key[8];
            int nk = 0;
            for (int size = 8; size >= 2 && !nk; size /= 2) {
                if (size > nc) continue;
                for (unsigned mask = 0; mask < (1u << nc) && !nk; mask++) {
                    if (__builtin_popcount(mask) != size) continue;
                    double m[3] = {0, 0, 0};
                    for (int c = 0; c < nc; c++)
                        if (mask >> c & 1)
                            for (int d = 0; d < 3; d++)
                                m[d] += rc[3 * c + d] / size;
                    if (fabs(m[0] - rc[3 * a]) + fabs(m[1] - rc[3 * a + 1]) +
                            fabs(m[2] - rc[3 * a + 2]) >
                        1e-12)
                        continue;
                    for (int c = 0; c < nc; c++)
                        if (mask >> c & 1) key[nk++] = b->conn[e][c];
                }
            }
            CU_ASSERT_FATAL(nk >= 2);
            b->conn[e][a] = key_node(b, key, nk);
        }
        b->type[e] = (uint8_t)tq;
    }
}

/* The mesh of b with one region and a point group per node on the box's surface. */
void hk_test_builder_mesh(const hk_test_builder *b, hk_mesh *m)
{
    memset(m, 0, sizeof *m);
    m->dim = 3;
    m->nnodes = b->nv;
    m->coords = malloc(3 * (size_t)b->nv * sizeof *m->coords);
    memcpy(m->coords, b->x, 3 * (size_t)b->nv * sizeof *m->coords);
    m->cells.n = b->nc;
    m->cells.type = malloc((size_t)b->nc);
    memcpy(m->cells.type, b->type, (size_t)b->nc);
    m->cells.ptr = calloc((size_t)b->nc + 1, sizeof *m->cells.ptr);
    m->cells.tag = malloc((size_t)b->nc * sizeof *m->cells.tag);
    for (int e = 0; e < b->nc; e++) {
        m->cells.ptr[e + 1] = m->cells.ptr[e] + hk_eltype_get((hk_eltype)b->type[e])->nnodes;
        m->cells.tag[e] = e + 1;
    }
    m->cells.nodes = malloc((size_t)m->cells.ptr[b->nc] * sizeof *m->cells.nodes);
    for (int e = 0; e < b->nc; e++)
        memcpy(m->cells.nodes + m->cells.ptr[e], b->conn[e],
               (size_t)(m->cells.ptr[e + 1] - m->cells.ptr[e]) * sizeof(int32_t));
    m->cell_region = calloc((size_t)b->nc, sizeof *m->cell_region);
    m->nregions = 1;
    m->regions = calloc(1, sizeof *m->regions);
    strcpy(m->regions[0].name, "body");
    m->regions[0].dim = 3;
    const double L[3] = {1, 0.8, 0.6};
    m->boundaries = calloc((size_t)b->nv, sizeof *m->boundaries);
    for (int i = 0; i < b->nv; i++) {
        int on = 0;
        for (int d = 0; d < 3; d++)
            on |= fabs(b->x[3 * i + d]) < 1e-12 || fabs(b->x[3 * i + d] - L[d]) < 1e-12;
        if (!on) continue;
        hk_group *g = &m->boundaries[m->nboundaries++];
        snprintf(g->name, sizeof g->name, "node%d", i);
        g->dim = 0;
        g->nnodes = 1;
        g->nodes = malloc(sizeof *g->nodes);
        g->nodes[0] = i;
    }
}

void hk_test_builder_free(hk_test_builder *b)
{
    free(b->x);
    free(b->type);
    free(b->conn);
    free(b->key);
    memset(b, 0, sizeof *b);
}

/* ---- a catalogue of small problems ------------------------------------------------------- */

/* Moves the nodes off the boundary of the bounding box by up to amp of h in each direction
 * (curving quadratic elements a little). */
static void distort(hk_mesh *m, double amp, double h, unsigned seed)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < m->nnodes; i++)
        for (int d = 0; d < 3; d++)
            lo[d] = fmin(lo[d], m->coords[3 * i + d]), hi[d] = fmax(hi[d], m->coords[3 * i + d]);
    for (int64_t i = 0; i < m->nnodes; i++) {
        int inside = 1;
        for (int d = 0; d < m->dim; d++)
            inside &= m->coords[3 * i + d] > lo[d] + 1e-9 && m->coords[3 * i + d] < hi[d] - 1e-9;
        if (!inside) continue;
        for (int d = 0; d < m->dim; d++)
            m->coords[3 * i + d] += amp * h * (2 * urand(&seed) - 1);
    }
}

/* Two regions: the cells alternate between "body" (0) and "insert" (1). */
static void two_regions(hk_mesh *m)
{
    hk_group *g = realloc(m->regions, 2 * sizeof *g);
    m->regions = g;
    memset(&g[1], 0, sizeof g[1]);
    g[1].dim = m->dim;
    strcpy(g[1].name, "insert");
    m->nregions = 2;
    for (int64_t e = 0; e < m->cells.n; e++)
        m->cell_region[e] = (int32_t)(e % 2);
}

/* A node on no cell (a geometry point Gmsh kept): its block row holds a diagonal only. */
static void add_orphan(hk_mesh *m)
{
    m->coords = realloc(m->coords, 3 * (size_t)(m->nnodes + 1) * sizeof *m->coords);
    double *x = m->coords + 3 * m->nnodes;
    x[0] = 0.5, x[1] = 0.25, x[2] = m->dim == 3 ? 5 : 0;
    m->nnodes++;
}

/* Materials: 0 isotropic, 1 nearly incompressible (selective integration by default),
 * 2 orthotropic in turned axes, 3 anisotropic, 4 isotropic with selective integration
 * forced; all with thermal expansion. */
static hk_material catalogue_material(int k, hk_analysis an, int dim)
{
    hk_material mt;
    memset(&mt, 0, sizeof mt);
    snprintf(mt.name, sizeof mt.name, "material%d", k);
    mt.rho = 7800;
    for (int i = 0; i < 3; i++)
        mt.alpha[i] = 1.2e-5 * (1 + 0.1 * i * (k == 2));
    if (k == 0 || k == 1 || k == 4) {
        mt.E = 200e9;
        mt.nu = k == 1 ? 0.4999 : 0.3;
        mt.integration = k == 4 ? HK_INTEGRATION_SELECTIVE : HK_INTEGRATION_AUTO;
    } else if (k == 2) {
        mt.kind = HK_MAT_ORTHOTROPIC;
        const double o[9] = {150e9, 10e9, 12e9, 0.3, 0.25, 0.4, 5e9, 6e9, 4e9};
        memcpy(mt.ortho, o, sizeof o);
        mt.has_axes = 1;
        const double c = cos(0.4), s = sin(0.4);
        if (dim == 2) { /* turned about z only */
            const double R[3][3] = {{c, s, 0}, {-s, c, 0}, {0, 0, 1}};
            memcpy(mt.axes, R, sizeof R);
        } else { /* about z, then about x */
            const double c2 = cos(0.3), s2 = sin(0.3);
            const double R[3][3] = {{c, s, 0}, {-s * c2, c * c2, s2}, {s * s2, -c * s2, c2}};
            memcpy(mt.axes, R, sizeof R);
        }
    } else {
        mt.kind = HK_MAT_ANISOTROPIC;
        const int n = dim == 3 ? 6 : an == HK_AXISYMMETRIC ? 4 : 3;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                mt.D[i][j] = (i == j ? 100e9 + 10e9 * i : 0) + 8e9 / (1 + i + j);
    }
    return mt;
}

int hk_test_fem_case(int k, hk_test_fem *tc)
{
    static const hk_eltype t2[5] = {HK_EL_TRI3, HK_EL_TRI6, HK_EL_QUAD4, HK_EL_QUAD8, HK_EL_QUAD9};
    static const hk_eltype t3[5] = {HK_EL_TET4, HK_EL_TET10, HK_EL_HEX8, HK_EL_HEX20, HK_EL_HEX27};
    static const hk_analysis a2[3] = {HK_PLANE_STRESS, HK_PLANE_STRAIN, HK_AXISYMMETRIC};
    static const int pairs[3][2] = {{0, 1}, {2, 3}, {4, 0}};
    static const char *const an_name[4] = {"plane stress", "plane strain", "3d", "axisymmetric"};
    memset(tc, 0, sizeof *tc);
    hk_mesh *m = &tc->mesh;
    int pair, hybrid = -1;
    hk_analysis an;
    if (k < 45) { /* 2D: 5 types x 3 analyses x 3 material pairs */
        const hk_eltype t = t2[k / 9];
        an = a2[(k / 3) % 3];
        pair = k % 3;
        HK_ASSERT_OK(hk_mesh_rectangle(2.0, 1.0, 4, 3, t, m));
        distort(m, 0.1, 0.25, 100u + (unsigned)k);
    } else if (k < 69) { /* 3D: 5 box types and 3 hybrid families x 3 material pairs */
        const int j = (k - 45) / 3;
        an = HK_SOLID;
        pair = (k - 45) % 3;
        if (j < 5) {
            HK_ASSERT_OK(hk_mesh_box(1.0, 0.8, 0.6, 3, 2, 2, t3[j], m));
            distort(m, 0.1, 0.3, 200u + (unsigned)k);
        } else {
            hk_test_builder b;
            const int kind[3] = {HK_TEST_CUBE_HEX, HK_TEST_CUBE_PYR, HK_TEST_CUBE_WEDGE};
            hybrid = j - 5;
            hk_test_build_grid(&b, 3, 2, 2, kind, 1, 0.15, 300u + (unsigned)k);
            hk_test_raise_cells(&b, hybrid);
            hk_test_builder_mesh(&b, m);
            hk_test_builder_free(&b);
        }
    } else {
        return 0;
    }
    two_regions(m);
    if (k % 4 == 1) add_orphan(m);
    for (int r = 0; r < 2; r++)
        tc->mats[r] = catalogue_material(pairs[pair][r], an, m->dim);
    hk_problem *p = &tc->p;
    p->mesh = m;
    p->analysis = an;
    p->thickness = m->dim == 2 && an != HK_AXISYMMETRIC ? 0.1 : 0;
    p->materials = tc->mats;
    p->gravity[1] = -9.81;
    p->body_force[0] = 1e3 * (k % 2);
    /* supports: the face x = 0 held (2D: left; axisymmetric: the axis in x and y) */
    tc->sups = calloc((size_t)m->nboundaries + 1, sizeof *tc->sups);
    if (hybrid < 0) {
        const int b = hk_mesh_find_boundary(m, m->dim == 2 ? "left" : "xmin");
        tc->sups[tc->nsups++] = (hk_support){.boundary = b, .mask = 7};
    } else {
        for (int g = 0; g < m->nboundaries; g++)
            if (fabs(m->coords[3 * m->boundaries[g].nodes[0]]) < 1e-12)
                tc->sups[tc->nsups++] = (hk_support){.boundary = g, .mask = 7};
    }
    p->nsupports = tc->nsups;
    p->supports = tc->sups;
    /* loads: a traction (or nodal forces on the hybrid meshes' point groups), a uniform
     * temperature change of region 1 on odd cases, a nodal temperature field on cases 2, 3
     * mod 4 */
    if (hybrid < 0) {
        const int b = hk_mesh_find_boundary(m, m->dim == 2 ? "right" : "xmax");
        tc->loads[tc->nloads++] =
            (hk_load){.kind = HK_LOAD_TRACTION, .boundary = b, .value = {1e6, -2e6, 0.5e6}};
    } else {
        for (int g = 0; g < m->nboundaries && tc->nloads < 2; g++)
            if (fabs(m->coords[3 * m->boundaries[g].nodes[0]] - 1) < 1e-12)
                tc->loads[tc->nloads++] =
                    (hk_load){.kind = HK_LOAD_NODAL, .boundary = g, .value = {1e3, 2e3, -1e3}};
    }
    if (k % 2)
        tc->loads[tc->nloads++] =
            (hk_load){.kind = HK_LOAD_TEMPERATURE, .boundary = 1, .value = {50}};
    if (k % 4 >= 2) {
        tc->node_dT = malloc((size_t)m->nnodes * sizeof *tc->node_dT);
        for (int64_t i = 0; i < m->nnodes; i++)
            tc->node_dT[i] = 20 * m->coords[3 * i] - 10 * m->coords[3 * i + 1] + 5;
        p->node_dT = tc->node_dT;
    }
    p->nloads = tc->nloads;
    p->loads = tc->loads;
    snprintf(tc->name, sizeof tc->name, "%s %s, %.40s + %.40s%s%s%s",
             hybrid >= 0 ? (hybrid == 0   ? "hybrid linear"
                            : hybrid == 1 ? "hybrid serendipity"
                                          : "hybrid Lagrange")
                         : hk_eltype_get((hk_eltype)m->cells.type[0])->name,
             an_name[an], tc->mats[0].name, tc->mats[1].name, k % 2 ? ", region dT" : "",
             k % 4 >= 2 ? ", nodal dT" : "", k % 4 == 1 ? ", orphan node" : "");
    return 1;
}

void hk_test_fem_free(hk_test_fem *tc)
{
    hk_mesh_free(&tc->mesh);
    free(tc->sups);
    free(tc->node_dT);
    memset(tc, 0, sizeof *tc);
}
