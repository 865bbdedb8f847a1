/* Mesh module: element table, generators, RCM, Gmsh loading (.msh 2.2/4.1, .geo meshed at
 * run time) and its errors. Geometry is checked against closed forms: node positions against
 * the straight-sided map of the Gmsh reference element, areas/volumes, outward normals. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hooke/fem.h"
#include "test_util.h"

/* ---- geometry helpers (independent of mesh/) ------------------------------------------ */

static int ncorners(hk_eltype t)
{
    switch (t) {
    case HK_EL_POINT1:
        return 1;
    case HK_EL_LINE2:
    case HK_EL_LINE3:
        return 2;
    case HK_EL_TRI3:
    case HK_EL_TRI6:
        return 3;
    case HK_EL_QUAD4:
    case HK_EL_QUAD8:
    case HK_EL_QUAD9:
    case HK_EL_TET4:
    case HK_EL_TET10:
        return 4;
    default:
        return 8;
    }
}

static int is_simplex(hk_eltype t)
{
    return t == HK_EL_TRI3 || t == HK_EL_TRI6 || t == HK_EL_TET4 || t == HK_EL_TET10;
}

/* Straight-sided map of the reference point r from the corners xc. */
static void lin_map(hk_eltype t, const double *xc, const double *r, double *x)
{
    double N[8];
    int nc = ncorners(t);
    if (is_simplex(t) || nc <= 1) {
        N[0] = 1 - r[0] - r[1] - r[2], N[1] = r[0], N[2] = r[1], N[3] = r[2];
        if (nc == 1) N[0] = 1;
    } else if (t == HK_EL_LINE2 || t == HK_EL_LINE3) {
        N[0] = (1 - r[0]) / 2, N[1] = (1 + r[0]) / 2;
    } else {
        /* quad/hex: corners of the reference at +-1 */
        const double *rc = hk_eltype_ref_coords(t);
        for (int i = 0; i < nc; i++) {
            N[i] = 1;
            for (int a = 0; a < (nc == 4 ? 2 : 3); a++)
                N[i] *= (1 + rc[3 * i + a] * r[a]) / 2;
        }
    }
    x[0] = x[1] = x[2] = 0;
    for (int i = 0; i < nc; i++)
        for (int a = 0; a < 3; a++)
            x[a] += N[i] * xc[3 * i + a];
}

static double det2(const double *a, const double *b)
{
    return a[0] * b[1] - a[1] * b[0];
}
static double det3(const double *a, const double *b, const double *c)
{
    return a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
           a[2] * (b[0] * c[1] - b[1] * c[0]);
}

static void elem_xyz(const hk_mesh *m, const hk_elems *es, int64_t e, double *x)
{
    for (int64_t k = es->ptr[e]; k < es->ptr[e + 1]; k++)
        for (int a = 0; a < 3; a++)
            x[3 * (k - es->ptr[e]) + a] = m->coords[3 * es->nodes[k] + a];
}

/* Smallest corner Jacobian determinant of a cell (must be > 0). */
static double min_corner_det(hk_eltype t, const double *x, int dim)
{
    const double *rc = hk_eltype_ref_coords(t);
    int nc = ncorners(t);
    double dmin = 1e300, col[3][3];
    if (is_simplex(t)) {
        for (int a = 0; a < dim; a++)
            for (int b = 0; b < 3; b++)
                col[a][b] = x[3 * (a + 1) + b] - x[b];
        return dim == 2 ? det2(col[0], col[1]) : det3(col[0], col[1], col[2]);
    }
    for (int c = 0; c < nc; c++) {
        for (int a = 0; a < dim; a++) {
            int nb = -1;
            for (int j = 0; j < nc; j++) {
                int same = 1;
                for (int b = 0; b < dim; b++)
                    same &=
                        (b == a) ? rc[3 * j + b] == -rc[3 * c + b] : rc[3 * j + b] == rc[3 * c + b];
                if (same) nb = j;
            }
            for (int b = 0; b < 3; b++)
                col[a][b] = (x[3 * nb + b] - x[3 * c + b]) * -rc[3 * c + a];
        }
        double d = dim == 2 ? det2(col[0], col[1]) : det3(col[0], col[1], col[2]);
        if (d < dmin) dmin = d;
    }
    return dmin;
}

/* Area (2D) or volume (3D) of a straight-sided cell from its corners. */
static double measure(hk_eltype t, const double *x, int dim)
{
    double e[3][3];
    if (is_simplex(t)) {
        for (int a = 0; a < dim; a++)
            for (int b = 0; b < 3; b++)
                e[a][b] = x[3 * (a + 1) + b] - x[b];
        return dim == 2 ? det2(e[0], e[1]) / 2 : det3(e[0], e[1], e[2]) / 6;
    }
    if (dim == 2) { /* shoelace */
        double s = 0;
        for (int i = 0; i < 4; i++)
            s += x[3 * i] * x[3 * ((i + 1) % 4) + 1] - x[3 * ((i + 1) % 4)] * x[3 * i + 1];
        return s / 2;
    }
    /* hexahedron: 6 tetrahedra around the diagonal 0-6 (Gmsh corner numbering) */
    static const int tets[6][4] = {{0, 1, 2, 6}, {0, 2, 3, 6}, {0, 3, 7, 6},
                                   {0, 7, 4, 6}, {0, 4, 5, 6}, {0, 5, 1, 6}};
    double v = 0;
    for (int k = 0; k < 6; k++) {
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                e[a][b] = x[3 * tets[k][a + 1] + b] - x[3 * tets[k][0] + b];
        v += det3(e[0], e[1], e[2]) / 6;
    }
    return v;
}

/* Every node of every element of es sits where the straight-sided map of its Gmsh reference
 * coordinates puts it. Returns the number of misplaced nodes. */
static int64_t misplaced_nodes(const hk_mesh *m, const hk_elems *es, double tol)
{
    int64_t bad = 0;
    double x[81], p[3];
    for (int64_t e = 0; e < es->n; e++) {
        hk_eltype t = (hk_eltype)es->type[e];
        const double *rc = hk_eltype_ref_coords(t);
        elem_xyz(m, es, e, x);
        for (int i = 0; i < hk_eltype_get(t)->nnodes; i++) {
            lin_map(t, x, rc + 3 * i, p);
            double d =
                fabs(p[0] - x[3 * i]) + fabs(p[1] - x[3 * i + 1]) + fabs(p[2] - x[3 * i + 2]);
            if (d > tol) bad++;
        }
    }
    return bad;
}

/* Cells: positive orientation and total measure. */
static void check_cells(const hk_mesh *m, double expect_measure, double tol)
{
    double x[81], total = 0, dmin = 1e300;
    for (int64_t e = 0; e < m->cells.n; e++) {
        hk_eltype t = (hk_eltype)m->cells.type[e];
        CU_ASSERT_EQUAL_FATAL(hk_eltype_get(t)->dim, m->dim);
        CU_ASSERT_EQUAL(m->cells.ptr[e + 1] - m->cells.ptr[e], hk_eltype_get(t)->nnodes);
        elem_xyz(m, &m->cells, e, x);
        double d = min_corner_det(t, x, m->dim);
        if (d < dmin) dmin = d;
        total += measure(t, x, m->dim);
        CU_ASSERT(m->cell_region[e] >= 0 && m->cell_region[e] < m->nregions);
    }
    CU_ASSERT(dmin > 0);
    CU_ASSERT_DOUBLE_EQUAL(total, expect_measure, tol);
    CU_ASSERT_EQUAL(misplaced_nodes(m, &m->cells, 1e-9), 0);
    for (int64_t k = 0; k < m->cells.ptr[m->cells.n]; k++)
        CU_ASSERT_FATAL(m->cells.nodes[k] >= 0 && m->cells.nodes[k] < m->nnodes);
}

/* Boundary group name lies on the plane x_axis = value, covers every mesh node there, and
 * its facets' normals point to sign * e_axis. */
static void check_side(const hk_mesh *m, const char *name, int axis, double value, int sign)
{
    int g = hk_mesh_find_boundary(m, name);
    CU_ASSERT_FATAL(g >= 0);
    const hk_group *gr = &m->boundaries[g];
    CU_ASSERT_EQUAL(gr->dim, m->dim - 1);
    int64_t on = 0;
    for (int64_t i = 0; i < m->nnodes; i++)
        on += fabs(m->coords[3 * i + axis] - value) < 1e-9;
    CU_ASSERT_EQUAL(gr->nnodes, on);
    for (int64_t k = 0; k < gr->nnodes; k++) {
        CU_ASSERT(fabs(m->coords[3 * gr->nodes[k] + axis] - value) < 1e-9);
        if (k) CU_ASSERT(gr->nodes[k] > gr->nodes[k - 1]);
    }
    double x[81];
    int64_t wrong = 0;
    for (int64_t e = 0; e < gr->elems.n; e++) {
        hk_eltype t = (hk_eltype)gr->elems.type[e];
        CU_ASSERT_EQUAL(hk_eltype_get(t)->dim, m->dim - 1);
        elem_xyz(m, &gr->elems, e, x);
        double n[3];
        if (m->dim == 2) {
            n[0] = x[4] - x[1], n[1] = -(x[3] - x[0]), n[2] = 0; /* tangent turned clockwise */
        } else {
            double a[3], b[3];
            int last = ncorners(t) - 1;
            for (int c = 0; c < 3; c++)
                a[c] = x[3 + c] - x[c], b[c] = x[3 * last + c] - x[c];
            n[0] = a[1] * b[2] - a[2] * b[1], n[1] = a[2] * b[0] - a[0] * b[2];
            n[2] = a[0] * b[1] - a[1] * b[0];
        }
        if (!(n[axis] * sign > 0)) wrong++;
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(misplaced_nodes(m, &gr->elems, 1e-9), 0);
}

/* ---- element table --------------------------------------------------------------------- */

static void test_eltype_table(void)
{
    static const struct {
        hk_eltype t;
        const char *name;
        int dim, nn, order, gmsh, vtk;
    } ref[] = {{HK_EL_POINT1, "point1", 0, 1, 1, 15, 1}, {HK_EL_LINE2, "line2", 1, 2, 1, 1, 3},
               {HK_EL_LINE3, "line3", 1, 3, 2, 8, 21},   {HK_EL_TRI3, "tri3", 2, 3, 1, 2, 5},
               {HK_EL_TRI6, "tri6", 2, 6, 2, 9, 22},     {HK_EL_QUAD4, "quad4", 2, 4, 1, 3, 9},
               {HK_EL_QUAD8, "quad8", 2, 8, 2, 16, 23},  {HK_EL_QUAD9, "quad9", 2, 9, 2, 10, 28},
               {HK_EL_TET4, "tet4", 3, 4, 1, 4, 10},     {HK_EL_TET10, "tet10", 3, 10, 2, 11, 24},
               {HK_EL_HEX8, "hex8", 3, 8, 1, 5, 12},     {HK_EL_HEX20, "hex20", 3, 20, 2, 17, 25},
               {HK_EL_HEX27, "hex27", 3, 27, 2, 12, 29}, {HK_EL_WEDGE6, "wedge6", 3, 6, 1, 6, 13},
               {HK_EL_PYR5, "pyr5", 3, 5, 1, 7, 14},
               {HK_EL_WEDGE15, "wedge15", 3, 15, 2, 18, 26},
               {HK_EL_WEDGE18, "wedge18", 3, 18, 2, 13, 32},
               {HK_EL_PYR13, "pyr13", 3, 13, 2, 19, 27},
               {HK_EL_PYR14, "pyr14", 3, 14, 2, 14, 27}};
    CU_ASSERT_EQUAL(sizeof ref / sizeof *ref, HK_EL_COUNT);
    for (size_t i = 0; i < sizeof ref / sizeof *ref; i++) {
        const hk_eltype_info *in = hk_eltype_get(ref[i].t);
        CU_ASSERT_PTR_NOT_NULL_FATAL(in);
        CU_ASSERT_STRING_EQUAL(in->name, ref[i].name);
        CU_ASSERT_EQUAL(in->dim, ref[i].dim);
        CU_ASSERT_EQUAL(in->nnodes, ref[i].nn);
        CU_ASSERT_EQUAL(in->order, ref[i].order);
        CU_ASSERT_EQUAL(in->gmsh_type, ref[i].gmsh);
        CU_ASSERT_EQUAL(in->vtk_type, ref[i].vtk);
        CU_ASSERT_EQUAL(hk_eltype_from_gmsh(ref[i].gmsh), (int)ref[i].t);
        /* the VTK order is a permutation */
        const int *o = hk_eltype_vtk_order(ref[i].t);
        const int nv = hk_eltype_vtk_nnodes(ref[i].t);
        CU_ASSERT_EQUAL(nv, ref[i].t == HK_EL_PYR14 ? 13 : ref[i].nn);
        int seen[27] = {0};
        for (int k = 0; k < nv; k++) {
            CU_ASSERT_FATAL(o[k] >= 0 && o[k] < ref[i].nn);
            seen[o[k]]++;
        }
        for (int k = 0; k < nv; k++)
            CU_ASSERT_EQUAL(seen[k], 1);
    }
    CU_ASSERT_EQUAL(hk_eltype_from_gmsh(99), -1);
    CU_ASSERT_EQUAL(hk_eltype_from_gmsh(0), -1);
    CU_ASSERT_PTR_NULL(hk_eltype_get(HK_EL_COUNT));
    CU_ASSERT_PTR_NULL(hk_eltype_vtk_order(HK_EL_COUNT));
    CU_ASSERT(hk_eltype_has_kernel(HK_EL_HEX20) && hk_eltype_has_kernel(HK_EL_PYR13) &&
              !hk_eltype_has_kernel(HK_EL_POINT1));
}

/* VTK's own reference positions (vtkQuadraticTetra, vtkTriquadraticHexahedron) reached through
 * the permutation from Gmsh's reference nodes. */
static void test_vtk_order(void)
{
    static const double vtk_tet10[10][3] = {{0, 0, 0},   {1, 0, 0},   {0, 1, 0},  {0, 0, 1},
                                            {.5, 0, 0},  {.5, .5, 0}, {0, .5, 0}, {0, 0, .5},
                                            {.5, 0, .5}, {0, .5, .5}};
    static const double vtk_hex27[27][3] = {
        {-1, -1, -1}, {1, -1, -1}, {1, 1, -1},  {-1, 1, -1}, {-1, -1, 1}, {1, -1, 1}, {1, 1, 1},
        {-1, 1, 1},   {0, -1, -1}, {1, 0, -1},  {0, 1, -1},  {-1, 0, -1}, {0, -1, 1}, {1, 0, 1},
        {0, 1, 1},    {-1, 0, 1},  {-1, -1, 0}, {1, -1, 0},  {1, 1, 0},   {-1, 1, 0}, {-1, 0, 0},
        {1, 0, 0},    {0, -1, 0},  {0, 1, 0},   {0, 0, -1},  {0, 0, 1},   {0, 0, 0}};
    const double *g = hk_eltype_ref_coords(HK_EL_TET10);
    const int *o = hk_eltype_vtk_order(HK_EL_TET10);
    for (int i = 0; i < 10; i++)
        for (int a = 0; a < 3; a++)
            CU_ASSERT_DOUBLE_EQUAL(g[3 * o[i] + a], vtk_tet10[i][a], 0);
    for (int t = HK_EL_HEX20; t <= HK_EL_HEX27; t++) {
        g = hk_eltype_ref_coords((hk_eltype)t);
        o = hk_eltype_vtk_order((hk_eltype)t);
        for (int i = 0; i < hk_eltype_get((hk_eltype)t)->nnodes; i++)
            for (int a = 0; a < 3; a++)
                CU_ASSERT_DOUBLE_EQUAL(g[3 * o[i] + a], vtk_hex27[i][a], 0);
    }
    /* quadratic quads and triangles: VTK's order is Gmsh's */
    o = hk_eltype_vtk_order(HK_EL_QUAD9);
    for (int i = 0; i < 9; i++)
        CU_ASSERT_EQUAL(o[i], i);
}

/* ---- generators ------------------------------------------------------------------------ */

static void test_rectangle_all_types(void)
{
    const hk_eltype types[] = {HK_EL_TRI3, HK_EL_TRI6, HK_EL_QUAD4, HK_EL_QUAD8, HK_EL_QUAD9};
    const int nx = 5, ny = 3;
    const double lx = 2.5, ly = 1.2;
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        hk_eltype t = types[k];
        hk_mesh m;
        HK_ASSERT_OK(hk_mesh_rectangle(lx, ly, nx, ny, t, &m));
        int o = hk_eltype_get(t)->order;
        int64_t fine = (int64_t)(o * nx + 1) * (o * ny + 1);
        int64_t nn = t == HK_EL_QUAD8 ? fine - nx * ny : fine;
        int64_t nc = (t == HK_EL_TRI3 || t == HK_EL_TRI6) ? 2 * nx * ny : nx * ny;
        CU_ASSERT_EQUAL(m.dim, 2);
        CU_ASSERT_EQUAL(m.nnodes, nn);
        CU_ASSERT_EQUAL(m.cells.n, nc);
        for (int64_t e = 0; e < m.cells.n; e++)
            CU_ASSERT_EQUAL(m.cells.type[e], t);
        CU_ASSERT_EQUAL(m.nregions, 1);
        CU_ASSERT_EQUAL(hk_mesh_find_region(&m, "domain"), 0);
        CU_ASSERT_EQUAL(m.nboundaries, 5);
        check_cells(&m, lx * ly, 1e-12);
        check_side(&m, "left", 0, 0, -1);
        check_side(&m, "right", 0, lx, 1);
        check_side(&m, "bottom", 1, 0, -1);
        check_side(&m, "top", 1, ly, 1);
        CU_ASSERT_EQUAL(m.boundaries[hk_mesh_find_boundary(&m, "bottom")].elems.n, nx);
        CU_ASSERT_EQUAL(m.boundaries[hk_mesh_find_boundary(&m, "left")].elems.n, ny);
        int og = hk_mesh_find_boundary(&m, "origin");
        CU_ASSERT_FATAL(og >= 0);
        CU_ASSERT_EQUAL(m.boundaries[og].dim, 0);
        CU_ASSERT_EQUAL_FATAL(m.boundaries[og].nnodes, 1);
        const double *x0 = m.coords + 3 * m.boundaries[og].nodes[0];
        CU_ASSERT(x0[0] == 0 && x0[1] == 0 && x0[2] == 0);
        CU_ASSERT_EQUAL(hk_mesh_find_boundary(&m, "nope"), -1);
        hk_mesh_free(&m);
        CU_ASSERT_PTR_NULL(m.coords);
    }
}

static void test_box_all_types(void)
{
    const hk_eltype types[] = {HK_EL_TET4, HK_EL_TET10, HK_EL_HEX8, HK_EL_HEX20, HK_EL_HEX27};
    const int nx = 3, ny = 2, nz = 4;
    const double L[3] = {1.5, 1.0, 2.0};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        hk_eltype t = types[k];
        hk_mesh m;
        HK_ASSERT_OK(hk_mesh_box(L[0], L[1], L[2], nx, ny, nz, t, &m));
        int o = hk_eltype_get(t)->order;
        int64_t fine = (int64_t)(o * nx + 1) * (o * ny + 1) * (o * nz + 1);
        int64_t faces =
            (int64_t)nx * ny * (nz + 1) + (int64_t)nx * nz * (ny + 1) + (int64_t)ny * nz * (nx + 1);
        int64_t nn = t == HK_EL_HEX20 ? fine - faces - nx * ny * nz : fine;
        int tet = t == HK_EL_TET4 || t == HK_EL_TET10;
        CU_ASSERT_EQUAL(m.dim, 3);
        CU_ASSERT_EQUAL(m.nnodes, nn);
        CU_ASSERT_EQUAL(m.cells.n, (tet ? 6 : 1) * nx * ny * nz);
        CU_ASSERT_EQUAL(m.nboundaries, 7);
        check_cells(&m, L[0] * L[1] * L[2], 1e-12);
        static const char *names[6] = {"xmin", "xmax", "ymin", "ymax", "zmin", "zmax"};
        for (int s = 0; s < 6; s++) {
            check_side(&m, names[s], s / 2, s % 2 ? L[s / 2] : 0, s % 2 ? 1 : -1);
            int a = s / 2, u = a == 0 ? 1 : 0, v = a == 2 ? 1 : 2, n[3] = {nx, ny, nz};
            CU_ASSERT_EQUAL(m.boundaries[hk_mesh_find_boundary(&m, names[s])].elems.n,
                            (tet ? 2 : 1) * n[u] * n[v]);
        }
        hk_mesh_free(&m);
    }
}

/* Two tets sharing a face must list the same three corners: count each face's occurrences
 * (interior faces twice, boundary faces once) to show the split is conforming. */
static int cmp3(const void *a, const void *b)
{
    return memcmp(a, b, 3 * sizeof(int32_t));
}
static void test_box_tets_conforming(void)
{
    hk_mesh m;
    const int n = 3;
    HK_ASSERT_OK(hk_mesh_box(1, 1, 1, n, n, n, HK_EL_TET4, &m));
    int64_t nf = 4 * m.cells.n;
    int32_t(*f)[3] = malloc((size_t)nf * sizeof *f);
    for (int64_t e = 0; e < m.cells.n; e++)
        for (int k = 0; k < 4; k++) {
            int32_t *q = f[4 * e + k], c = 0;
            for (int j = 0; j < 4; j++)
                if (j != k) q[c++] = m.cells.nodes[m.cells.ptr[e] + j];
            for (int i = 0; i < 3; i++) /* sort 3 ints */
                for (int j = i + 1; j < 3; j++)
                    if (q[j] < q[i]) {
                        int32_t t = q[i];
                        q[i] = q[j];
                        q[j] = t;
                    }
        }
    qsort(f, (size_t)nf, sizeof *f, cmp3);
    int64_t single = 0, bad = 0;
    for (int64_t i = 0; i < nf;) {
        int64_t j = i;
        while (j < nf && !cmp3(f[i], f[j]))
            j++;
        if (j - i == 1)
            single++;
        else if (j - i != 2)
            bad++;
        i = j;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(single, 6 * 2 * n * n); /* boundary triangles only */
    free(f);
    hk_mesh_free(&m);
}

static void test_generator_errors(void)
{
    hk_mesh m;
    CU_ASSERT_EQUAL(hk_mesh_rectangle(1, 1, 2, 2, HK_EL_TET4, &m), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "tet4"));
    CU_ASSERT_EQUAL(hk_mesh_box(1, 1, 1, 2, 2, 2, HK_EL_WEDGE6, &m), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "wedge6"));
    CU_ASSERT_EQUAL(hk_mesh_rectangle(-1, 1, 2, 2, HK_EL_QUAD4, &m), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "along x"));
    CU_ASSERT_EQUAL(hk_mesh_box(1, 1, 1, 2, 0, 2, HK_EL_HEX8, &m), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "along y"));
    CU_ASSERT_EQUAL(hk_mesh_box(1, 1, NAN, 2, 2, 2, HK_EL_HEX8, &m), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "along z"));
}

/* Regression (fuzzing): cells: [3000, 3000, 3000] ran for minutes and filled memory before the
 * per-node 2^31 check fired; the grid size is now checked before any cell is made. */
static void test_generator_too_large(void)
{
    hk_mesh m;
    CU_ASSERT_EQUAL(hk_mesh_box(1, 1, 1, 2000, 2000, 1000, HK_EL_HEX8, &m), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "more than 2^31 grid points"));
    CU_ASSERT_EQUAL(hk_mesh_box(1, 1, 1, 1 << 20, 1 << 20, 1 << 20, HK_EL_HEX27, &m), HK_ERR_ARG);
    CU_ASSERT_EQUAL(hk_mesh_rectangle(1, 1, 1 << 20, 1 << 20, HK_EL_QUAD9, &m), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "more than 2^31 grid points"));
}

/* ---- RCM --------------------------------------------------------------------------------- */

static int64_t bandwidth(const hk_mesh *m)
{
    int64_t bw = 0;
    for (int64_t e = 0; e < m->cells.n; e++)
        for (int64_t i = m->cells.ptr[e]; i < m->cells.ptr[e + 1]; i++)
            for (int64_t j = m->cells.ptr[e]; j < m->cells.ptr[e + 1]; j++) {
                int64_t d = llabs((int64_t)m->cells.nodes[i] - m->cells.nodes[j]);
                if (d > bw) bw = d;
            }
    return bw;
}

/* Renumber nodes by a pseudo-random permutation (coords, cells, groups). */
static void scramble(hk_mesh *m, unsigned seed)
{
    int64_t n = m->nnodes;
    int32_t *p = malloc((size_t)n * sizeof *p);
    double *x = malloc((size_t)(3 * n) * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        p[i] = (int32_t)i;
    for (int64_t i = n - 1; i > 0; i--) {
        seed = seed * 1103515245u + 12345u;
        int64_t j = (seed >> 8) % (i + 1);
        int32_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    for (int64_t i = 0; i < n; i++)
        memcpy(x + 3 * p[i], m->coords + 3 * i, 3 * sizeof *x);
    memcpy(m->coords, x, (size_t)(3 * n) * sizeof *x);
    for (int64_t k = 0; k < m->cells.ptr[m->cells.n]; k++)
        m->cells.nodes[k] = p[m->cells.nodes[k]];
    for (int g = 0; g < m->nboundaries; g++) {
        hk_group *gr = &m->boundaries[g];
        for (int64_t k = 0; k < gr->elems.ptr[gr->elems.n]; k++)
            gr->elems.nodes[k] = p[gr->elems.nodes[k]];
        for (int64_t k = 0; k < gr->nnodes; k++)
            gr->nodes[k] = p[gr->nodes[k]];
    }
    free(p);
    free(x);
}

static void test_rcm(void)
{
    const int nx = 40, ny = 6;
    for (int q = 0; q < 2; q++) {
        hk_eltype t = q ? HK_EL_QUAD9 : HK_EL_QUAD4;
        hk_mesh m;
        HK_ASSERT_OK(hk_mesh_rectangle(4.0, 0.6, nx, ny, t, &m));
        scramble(&m, 7u + q);
        int64_t bw0 = bandwidth(&m);
        /* cell-by-cell coordinates before */
        int64_t tot = m.cells.ptr[m.cells.n];
        double *before = malloc((size_t)(3 * tot) * sizeof *before);
        for (int64_t k = 0; k < tot; k++)
            memcpy(before + 3 * k, m.coords + 3 * m.cells.nodes[k], 3 * sizeof(double));
        HK_ASSERT_OK(hk_mesh_renumber_rcm(&m));
        int64_t bw1 = bandwidth(&m);
        /* a breadth-first level of this grid spans o fine-grid columns of o*ny+1 nodes, and
         * Cuthill-McKee keeps the bandwidth within two levels; the scrambled one is far above */
        int o = q ? 2 : 1;
        CU_ASSERT(bw1 <= 2 * o * (o * ny + 1));
        CU_ASSERT(bw0 > 10 * bw1);
        int64_t moved = 0;
        for (int64_t k = 0; k < tot; k++)
            for (int a = 0; a < 3; a++)
                moved += before[3 * k + a] != m.coords[3 * m.cells.nodes[k] + a];
        CU_ASSERT_EQUAL(moved, 0);
        check_cells(&m, 4.0 * 0.6, 1e-12);
        check_side(&m, "left", 0, 0, -1);
        check_side(&m, "top", 1, 0.6, 1);
        free(before);
        hk_mesh_free(&m);
    }
    /* a 3D mesh too: bandwidth bounded by a layer of the cross-section */
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_box(1, 1, 4, 3, 3, 12, HK_EL_TET4, &m));
    scramble(&m, 3u);
    HK_ASSERT_OK(hk_mesh_renumber_rcm(&m));
    CU_ASSERT(bandwidth(&m) <= 2 * 16 + 8);
    check_cells(&m, 4.0, 1e-12);
    check_side(&m, "zmax", 2, 4, 1);
    hk_mesh_free(&m);
}

/* ---- Gmsh loading ---------------------------------------------------------------------- */

#ifdef HOOKE_HAVE_GMSH
static int count_type(const hk_mesh *m, hk_eltype t)
{
    int n = 0;
    for (int64_t e = 0; e < m->cells.n; e++)
        n += m->cells.type[e] == t;
    return n;
}

static void check_square(const hk_mesh *m)
{
    CU_ASSERT_EQUAL(m->dim, 2);
    CU_ASSERT_EQUAL(m->nregions, 1);
    CU_ASSERT_EQUAL(hk_mesh_find_region(m, "plate"), 0);
    CU_ASSERT_EQUAL(m->nboundaries, 5);
    check_cells(m, 1.0, 1e-12);
    check_side(m, "left", 0, 0, -1);
    check_side(m, "right", 0, 1, 1);
    check_side(m, "bottom", 1, 0, -1);
    check_side(m, "top", 1, 1, 1);
    int c = hk_mesh_find_boundary(m, "corner");
    CU_ASSERT_FATAL(c >= 0);
    CU_ASSERT_EQUAL(m->boundaries[c].dim, 0);
    CU_ASSERT_EQUAL_FATAL(m->boundaries[c].nnodes, 1);
    const double *x = m->coords + 3 * m->boundaries[c].nodes[0];
    CU_ASSERT(x[0] == 0 && x[1] == 0);
}

static int cmp_xyz(const void *p, const void *q)
{
    const double *a = p, *b = q;
    for (int k = 0; k < 3; k++)
        if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
    return 0;
}

static void test_load_msh22_msh41(void)
{
    hk_mesh a, b;
    int threads = omp_get_max_threads();
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/square_v22.msh"), NULL, &a));
    CU_ASSERT_EQUAL(omp_get_max_threads(), threads); /* Gmsh must not change ours */
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/square_v41.msh"), NULL, &b));
    check_square(&a);
    check_square(&b);
    CU_ASSERT_EQUAL(a.nnodes, b.nnodes);
    CU_ASSERT_EQUAL(a.cells.n, b.cells.n);
    CU_ASSERT_EQUAL(count_type(&a, HK_EL_TRI3), a.cells.n);
    /* both formats hold the same mesh: the same set of node coordinates */
    qsort(a.coords, (size_t)a.nnodes, 3 * sizeof(double), cmp_xyz);
    qsort(b.coords, (size_t)b.nnodes, 3 * sizeof(double), cmp_xyz);
    CU_ASSERT(hk_test_reldiff(a.coords, b.coords, 3 * a.nnodes) < 1e-14);
    CU_ASSERT_EQUAL(a.cells.tag[0] > 0, 1);
    int64_t ncells = a.cells.n;
    hk_mesh_free(&a);
    hk_mesh_free(&b);
    /* binary 4.1 */
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/square_bin_v41.msh"), NULL, &a));
    check_square(&a);
    CU_ASSERT_EQUAL(a.cells.n, ncells);
    hk_mesh_free(&a);
    /* quadratic triangles: mid-edge nodes where Gmsh's tri6 order puts them */
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/square_tri6_v41.msh"), NULL, &a));
    CU_ASSERT_EQUAL(count_type(&a, HK_EL_TRI6), a.cells.n);
    check_square(&a);
    hk_mesh_free(&a);
}

static void test_load_geo_2d(void)
{
    const char *geo = hk_test_path("tests/data/mesh/square.geo");
    static const struct {
        int order, quad, incomplete;
        hk_eltype t;
    } cases[] = {{1, 0, 0, HK_EL_TRI3},
                 {2, 0, 0, HK_EL_TRI6},
                 {1, 1, 0, HK_EL_QUAD4},
                 {2, 1, 0, HK_EL_QUAD9},
                 {2, 1, 1, HK_EL_QUAD8}};
    int64_t coarse = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        hk_mesh_options o = {0};
        o.order = cases[k].order, o.quad = cases[k].quad, o.incomplete = cases[k].incomplete;
        hk_mesh m;
        HK_ASSERT_OK(hk_mesh_load(geo, &o, &m));
        check_square(&m);
        /* recombination may leave a few triangles; most cells must be of the asked type */
        CU_ASSERT(count_type(&m, cases[k].t) * 2 > m.cells.n);
        if (!cases[k].quad) CU_ASSERT_EQUAL(count_type(&m, cases[k].t), m.cells.n);
        if (k == 0) coarse = m.cells.n;
        hk_mesh_free(&m);
    }
    /* the size option refines */
    hk_mesh_options o = {0};
    o.size = 0.1;
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_load(geo, &o, &m));
    CU_ASSERT(m.cells.n > 3 * coarse);
    check_square(&m);
    hk_mesh_free(&m);
}

static void check_unit_box(const hk_mesh *m)
{
    static const char *names[6] = {"xmin", "xmax", "ymin", "ymax", "zmin", "zmax"};
    CU_ASSERT_EQUAL(m->dim, 3);
    CU_ASSERT_EQUAL(hk_mesh_find_region(m, "body"), 0);
    check_cells(m, 1.0, 1e-12);
    for (int s = 0; s < 6; s++)
        check_side(m, names[s], s / 2, s % 2, s % 2 ? 1 : -1);
    int e = hk_mesh_find_boundary(m, "edge");
    CU_ASSERT_FATAL(e >= 0);
    CU_ASSERT_EQUAL(m->boundaries[e].dim, 1);
    CU_ASSERT(m->boundaries[e].nnodes >= 2);
}

static void test_load_geo_3d(void)
{
    const char *geo = hk_test_path("tests/data/mesh/box.geo");
    hk_mesh m;
    hk_mesh_options o = {0};
    for (int order = 1; order <= 2; order++) {
        o.order = order;
        HK_ASSERT_OK(hk_mesh_load(geo, &o, &m));
        check_unit_box(&m);
        CU_ASSERT_EQUAL(count_type(&m, order == 1 ? HK_EL_TET4 : HK_EL_TET10), m.cells.n);
        hk_mesh_free(&m);
    }
    /* quad: tetrahedra split into hexahedra */
    o.order = 1, o.quad = 1;
    HK_ASSERT_OK(hk_mesh_load(geo, &o, &m));
    check_unit_box(&m);
    CU_ASSERT_EQUAL(count_type(&m, HK_EL_HEX8), m.cells.n);
    hk_mesh_free(&m);

    /* structured hexahedra, linear and quadratic: Gmsh's hex20/hex27 node order */
    geo = hk_test_path("tests/data/mesh/hexbox.geo");
    static const struct {
        int order, incomplete;
        hk_eltype t;
        int64_t nn;
    } hc[] = {{1, 0, HK_EL_HEX8, 5 * 3 * 3},
              {2, 1, HK_EL_HEX20, 9 * 5 * 5 - 4 * 2 * 3 - 4 * 2 * 3 - 2 * 2 * 5 - 16},
              {2, 0, HK_EL_HEX27, 9 * 5 * 5}};
    for (size_t k = 0; k < 3; k++) {
        memset(&o, 0, sizeof o);
        o.order = hc[k].order, o.incomplete = hc[k].incomplete;
        HK_ASSERT_OK(hk_mesh_load(geo, &o, &m));
        CU_ASSERT_EQUAL(m.cells.n, 16);
        CU_ASSERT_EQUAL(count_type(&m, hc[k].t), 16);
        CU_ASSERT_EQUAL(m.nnodes, hc[k].nn);
        check_cells(&m, 2.0, 1e-12);
        check_side(&m, "zmin", 2, 0, -1);
        check_side(&m, "zmax", 2, 1, 1);
        check_side(&m, "xmin", 0, 0, -1);
        check_side(&m, "xmax", 0, 2, 1);
        CU_ASSERT_EQUAL(m.boundaries[hk_mesh_find_boundary(&m, "zmin")].elems.n, 8);
        hk_mesh_free(&m);
    }
    /* the same quadratic hexahedra from a .msh 2.2 file */
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/hexbox27_v22.msh"), NULL, &m));
    CU_ASSERT_EQUAL(count_type(&m, HK_EL_HEX27), 16);
    check_cells(&m, 2.0, 1e-12);
    check_side(&m, "xmax", 0, 2, 1);
    hk_mesh_free(&m);
}

static void test_load_step(void)
{
    /* CAD without physical groups: one region "domain", no boundary groups */
    hk_mesh m;
    hk_mesh_options o = {0};
    o.size = 0.5, o.order = 2;
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/block_1x2x1.step"), &o, &m));
    CU_ASSERT_EQUAL(m.dim, 3);
    CU_ASSERT_EQUAL(m.nregions, 1);
    CU_ASSERT_EQUAL(hk_mesh_find_region(&m, "domain"), 0);
    CU_ASSERT_EQUAL(m.nboundaries, 0);
    CU_ASSERT(m.cells.n > 0);
    CU_ASSERT_EQUAL(count_type(&m, HK_EL_TET10), m.cells.n);
    /* curved-capable tet10 on a box stays straight: the exact volume */
    check_cells(&m, 2.0, 1e-12);
    hk_mesh_free(&m);
}

static void test_load_mixed(void)
{
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/mixed_v41.msh"), NULL, &m));
    int rt = hk_mesh_find_region(&m, "tris"), rq = hk_mesh_find_region(&m, "quads");
    CU_ASSERT_FATAL(rt >= 0 && rq >= 0);
    CU_ASSERT_EQUAL(count_type(&m, HK_EL_QUAD4), 16);
    CU_ASSERT(count_type(&m, HK_EL_TRI3) > 0);
    CU_ASSERT_EQUAL(count_type(&m, HK_EL_TRI3) + 16, m.cells.n);
    int64_t wrong = 0;
    for (int64_t e = 0; e < m.cells.n; e++)
        wrong += m.cell_region[e] != (m.cells.type[e] == HK_EL_TRI3 ? rt : rq);
    CU_ASSERT_EQUAL(wrong, 0);
    check_cells(&m, 2.0, 1e-12);
    check_side(&m, "left", 0, 0, -1);
    check_side(&m, "right", 0, 2, 1);
    /* shared nodes along x = 1: the two parts are joined (5 nodes on the interface) */
    int64_t on = 0;
    for (int64_t i = 0; i < m.nnodes; i++)
        on += fabs(m.coords[3 * i] - 1) < 1e-12;
    CU_ASSERT_EQUAL(on, 5);
    hk_mesh_free(&m);
}

static void test_load_renumber(void)
{
    hk_mesh a, b;
    /* Delaunay on one thread: HXT (the default) gives a slightly different mesh each time */
    hk_mesh_options o = {.threads = 1, .algorithm3d = 1};
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/box.geo"), &o, &a));
    o.renumber = 1;
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/box.geo"), &o, &b));
    CU_ASSERT_EQUAL(a.nnodes, b.nnodes);
    CU_ASSERT(bandwidth(&b) < bandwidth(&a));
    check_unit_box(&b);
    hk_mesh_free(&a);
    hk_mesh_free(&b);
}

static void test_load_orientation(void)
{
    /* clockwise triangles and an inward boundary line, written by hand */
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/clockwise_v22.msh"), NULL, &m));
    CU_ASSERT_EQUAL(m.cells.n, 2);
    check_cells(&m, 1.0, 1e-12);
    check_side(&m, "left", 0, 0, -1);
    check_side(&m, "bottom", 1, 0, -1);
    hk_mesh_free(&m);
}

static void test_load_errors(void)
{
    hk_mesh m;
    const char *p = hk_test_path("tests/data/mesh/does_not_exist.msh");
    CU_ASSERT_EQUAL(hk_mesh_load(p, NULL, &m), HK_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "does_not_exist.msh"));

    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("tests/data/mesh/square.geo"), NULL, NULL),
                    HK_ERR_ARG);
    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("CMakeLists.txt"), NULL, &m), HK_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), ".msh"));
    hk_mesh_options o = {0};
    o.order = 3;
    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("tests/data/mesh/square.geo"), &o, &m),
                    HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "order 3"));

    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("tests/data/mesh/garbage.msh"), NULL, &m),
                    HK_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "garbage.msh"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "not a Gmsh mesh file"));
    CU_ASSERT_PTR_NULL(m.coords);

    /* Gmsh's parse error, with its line; the next load still works */
    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("tests/data/mesh/syntax_error.geo"), NULL, &m),
                    HK_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "syntax_error.geo"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "line 3"));
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/square.geo"), NULL, &m));
    hk_mesh_free(&m);

    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("tests/data/mesh/prism40_v41.msh"), NULL, &m),
                    HK_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "of Gmsh type 90"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "'body'"));
    /* prisms of order 1 are cells */
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/wedge_v41.msh"), NULL, &m));
    CU_ASSERT(m.cells.n > 0 && m.cells.type[0] == HK_EL_WEDGE6);
    hk_mesh_free(&m);

    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("tests/data/mesh/dupnames_v22.msh"), NULL, &m),
                    HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "'edge'"));

    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("tests/data/mesh/tilted_v22.msh"), NULL, &m),
                    HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "z = 0"));
}

/* Regression (fuzzing): a NaN coordinate in a .msh passed the loader and was reported by the
 * assembly with an internal (renumbered) node index; the loader names the file's node tag. */
static void test_load_nan_coord(void)
{
    hk_mesh m;
    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("tests/data/mesh/nan_coord_v22.msh"), NULL, &m),
                    HK_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "nan_coord_v22.msh: node 5 has the "
                                                      "non-finite coordinates (nan, 0, 0)"));
    CU_ASSERT_PTR_NULL(m.coords);
}

/* Regression (fuzzing): a .msh 2.2 whose node count reads '3e9' makes Gmsh 4.8 dereference
 * NULL; Hooke must end with one sentence naming the file, not a bare segmentation fault (or
 * return an error, with a Gmsh that copes). Run in a child, since the guard exits. */
static void test_load_gmsh_crash(void)
{
    char errpath[512];
    snprintf(errpath, sizeof errpath, "%s/gmsh_crash.err", hk_test_tmpdir());
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        if (!freopen(errpath, "w", stderr)) _exit(4);
        hk_mesh m;
        int err = hk_mesh_load(hk_test_path("tests/data/mesh/crash_count_v22.msh"), NULL, &m);
        if (!err) hk_mesh_free(&m);
        _exit(err ? 3 : 0);
    }
    int st = 0;
    CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
    CU_ASSERT(WIFEXITED(st));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 1) {
        char buf[1024] = {0};
        FILE *f = fopen(errpath, "r");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        size_t nr = fread(buf, 1, sizeof buf - 1, f);
        (void)nr;
        fclose(f);
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, "Gmsh crashed reading"));
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, "crash_count_v22.msh"));
    } else {
        CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 3);
    }
}

static void test_load_no_physical_groups(void)
{
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/nophys_v22.msh"), NULL, &m));
    CU_ASSERT_EQUAL(m.nregions, 1);
    CU_ASSERT_EQUAL(hk_mesh_find_region(&m, "domain"), 0);
    CU_ASSERT_EQUAL(m.nboundaries, 0);
    check_cells(&m, 1.0, 1e-12);
    hk_mesh_free(&m);
}

static void test_load_partial(void)
{
    /* cells outside every physical surface are dropped, with their nodes */
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/partial.geo"), NULL, &m));
    CU_ASSERT_EQUAL(m.nregions, 1);
    CU_ASSERT_EQUAL(hk_mesh_find_region(&m, "quads"), 0);
    CU_ASSERT_EQUAL(m.cells.n, 16);
    CU_ASSERT_EQUAL(count_type(&m, HK_EL_QUAD4), 16);
    CU_ASSERT_EQUAL(m.nnodes, 25);
    check_cells(&m, 1.0, 1e-12);
    check_side(&m, "right", 0, 2, 1);
    hk_mesh_free(&m);
    /* a boundary group on the dropped part is named in the error */
    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("tests/data/mesh/partial_bad.geo"), NULL, &m),
                    HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "'left'"));
}

static int same_mesh_bytes(const hk_mesh *a, const hk_mesh *b)
{
    int same = a->nnodes == b->nnodes && a->cells.n == b->cells.n &&
               a->nboundaries == b->nboundaries &&
               !memcmp(a->coords, b->coords, 3 * (size_t)a->nnodes * sizeof *a->coords) &&
               !memcmp(a->cells.nodes, b->cells.nodes,
                       (size_t)a->cells.ptr[a->cells.n] * sizeof *a->cells.nodes);
    for (int g = 0; same && g < a->nboundaries; g++) {
        const hk_elems *fa = &a->boundaries[g].elems, *fb = &b->boundaries[g].elems;
        same = fa->n == fb->n &&
               !memcmp(fa->nodes, fb->nodes, (size_t)fa->ptr[fa->n] * sizeof *fa->nodes);
    }
    return same;
}

/* The default meshing (Gmsh on one thread, Delaunay for volumes) gives the same mesh every
 * time and on any number of threads of the process (Hooke's own steps: reading, orientation,
 * second-order nodes, RCM); a 2D geometry too, whose curves Gmsh's threads would mesh in a
 * varying order. */
static void test_load_reproducible(void)
{
    static const char *const geo[] = {"cases/cantilever/cantilever.geo", "cases/kirsch/kirsch.geo",
                                      "cases/bracket/bracket.geo"};
    static const double size[] = {0.05, 0.01, 0.006};
    const int threads = omp_get_max_threads();
    for (int k = 0; k < 3; k++) {
        hk_mesh m[3];
        hk_mesh_options o = {.size = size[k], .order = 2, .renumber = 1};
        for (int i = 0; i < 3; i++) {
            omp_set_num_threads(i ? 2 : 1);
            HK_ASSERT_OK(hk_mesh_load(hk_test_path(geo[k]), &o, &m[i]));
        }
        CU_ASSERT(same_mesh_bytes(&m[0], &m[1]));
        CU_ASSERT(same_mesh_bytes(&m[1], &m[2]));
        for (int i = 0; i < 3; i++)
            hk_mesh_free(&m[i]);
    }
    omp_set_num_threads(threads);
}
#else
static void test_no_gmsh(void)
{
    hk_mesh m;
    printf("\n  note: built without Gmsh; the .msh/.geo loading tests are skipped\n");
    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("tests/data/mesh/square_v41.msh"), NULL, &m),
                    HK_ERR_NOT_BUILT);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "without Gmsh"));
}
#endif

HK_SUITE(mesh, {"element table: Gmsh/VTK numbers, names, sizes", test_eltype_table},
         {"Gmsh -> VTK node order of tet10, hex20, hex27", test_vtk_order},
         {"rectangle in tri3/6, quad4/8/9: counts, orientation, groups", test_rectangle_all_types},
         {"box in tet4/10, hex8/20/27: counts, orientation, groups", test_box_all_types},
         {"box tetrahedra are conforming", test_box_tets_conforming},
         {"generators reject bad sizes and types", test_generator_errors},
         {"generators reject grids over 2^31 points at once", test_generator_too_large},
         {"RCM reduces bandwidth and keeps the geometry", test_rcm},
#ifdef HOOKE_HAVE_GMSH
         {"load .msh 2.2 and 4.1, linear and quadratic", test_load_msh22_msh41},
         {"mesh a .geo at run time in 2D: order, quads, size", test_load_geo_2d},
         {"mesh a .geo at run time in 3D: tets, hexes, hex20/27 order", test_load_geo_3d},
         {"mesh a STEP file at run time", test_load_step},
         {"mixed tri + quad mesh with two regions", test_load_mixed},
         {"load with RCM renumbering", test_load_renumber},
         {"clockwise cells and inward facets are reoriented", test_load_orientation},
         {"bad inputs give clear errors", test_load_errors},
         {"a file that crashes Gmsh ends with one sentence", test_load_gmsh_crash},
         {"a NaN node coordinate names the file and node", test_load_nan_coord},
         {"no physical groups: one region 'domain'", test_load_no_physical_groups},
         {"cells outside the physical regions are dropped", test_load_partial},
         {"the default meshing gives the same mesh every time, on 1 and 2 threads",
          test_load_reproducible}
#else
         {"without Gmsh, loading says so", test_no_gmsh}
#endif
)
