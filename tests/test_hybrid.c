/* Wedges (prisms) and pyramids: shape functions, quadrature, face conformity, Gmsh's and
 * VTK's node orders, constant-strain patch tests on distorted single-type and mixed
 * hex/pyramid/tet/wedge meshes (stresses recovered exactly at every node, apexes included),
 * and Gmsh-made hybrid bars under tension against the closed-form answer. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../assembly/elements.h"
#include "../mesh/mesh_impl.h"
#include "case.h"
#include "hooke/fem.h"
#include "test_util.h"

static const hk_eltype hyb[6] = {HK_EL_WEDGE6, HK_EL_WEDGE15, HK_EL_WEDGE18,
                                 HK_EL_PYR5,   HK_EL_PYR13,   HK_EL_PYR14};

static int is_pyr(hk_eltype t)
{
    return t == HK_EL_PYR5 || t == HK_EL_PYR13 || t == HK_EL_PYR14;
}

static unsigned lcg(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

static double urand(unsigned *s)
{
    return (double)lcg(s) / (double)0xffffff;
}

/* A random point inside the reference element (pyramids: zeta up to 0.97). */
static void ref_point(hk_eltype t, unsigned *s, double x[3])
{
    if (is_pyr(t)) {
        x[2] = 0.97 * urand(s);
        x[0] = (2 * urand(s) - 1) * (1 - x[2]);
        x[1] = (2 * urand(s) - 1) * (1 - x[2]);
    } else {
        double a = urand(s), b = urand(s);
        if (a + b > 1) a = 1 - a, b = 1 - b;
        x[0] = a, x[1] = b, x[2] = 2 * urand(s) - 1;
    }
}

/* The quadratic monomials (and 1, x, y, z) at x: 10 values. */
static void monomials(const double *x, double *p)
{
    const double v[10] = {1,           x[0],        x[1],        x[2],        x[0] * x[0],
                          x[1] * x[1], x[2] * x[2], x[0] * x[1], x[1] * x[2], x[0] * x[2]};
    memcpy(p, v, sizeof v);
}

/* ---- shape functions and rules ----------------------------------------------------------- */

static void test_shape_functions(void)
{
    for (int it = 0; it < 6; it++) {
        const hk_eltype t = hyb[it];
        const hk_elref *r = hk_elref_get(t);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        const int n = r->nnodes, quad = hk_eltype_get(t)->order == 2;
        CU_ASSERT_EQUAL(n, hk_eltype_get(t)->nnodes);
        CU_ASSERT(hk_eltype_has_kernel(t));
        /* the reference nodes are mesh/'s (Gmsh's) */
        const double *rc = hk_eltype_ref_coords(t);
        for (int a = 0; a < n; a++)
            for (int k = 0; k < 3; k++)
                CU_ASSERT_DOUBLE_EQUAL(r->xi[a][k], rc[3 * a + k], 0);
        /* Kronecker delta at the nodes, the apex included */
        double N[HK_EL_MAXN], dN[HK_EL_MAXN][3];
        for (int b = 0; b < n; b++) {
            hk_el_shape(t, r->xi[b], N, dN);
            for (int a = 0; a < n; a++)
                CU_ASSERT_DOUBLE_EQUAL(N[a], a == b, 1e-14);
        }
        unsigned seed = 7u + (unsigned)t;
        double worst_fd = 0, worst_rep = 0;
        for (int s = 0; s < 200; s++) {
            double x[3], p[10];
            ref_point(t, &seed, x);
            hk_el_shape(t, x, N, dN);
            /* partition of unity; the derivatives sum to zero */
            double sum = 0, ds[3] = {0, 0, 0};
            for (int a = 0; a < n; a++) {
                sum += N[a];
                for (int k = 0; k < 3; k++)
                    ds[k] += dN[a][k];
            }
            CU_ASSERT_DOUBLE_EQUAL(sum, 1, 1e-13);
            for (int k = 0; k < 3; k++)
                CU_ASSERT_DOUBLE_EQUAL(ds[k], 0, 1e-12);
            /* reproduces linear (quadratic for order 2) fields, values and gradients */
            monomials(x, p);
            for (int m = 0; m < (quad ? 10 : 4); m++) {
                double v = 0;
                for (int a = 0; a < n; a++) {
                    double pa[10];
                    monomials(r->xi[a], pa);
                    v += N[a] * pa[m];
                }
                worst_rep = fmax(worst_rep, fabs(v - p[m]));
            }
            /* derivatives against central differences */
            for (int k = 0; k < 3; k++) {
                double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]}, Np[HK_EL_MAXN],
                       Nm[HK_EL_MAXN], d2[HK_EL_MAXN][3];
                const double h = 1e-6;
                xp[k] += h, xm[k] -= h;
                hk_el_shape(t, xp, Np, d2);
                hk_el_shape(t, xm, Nm, d2);
                for (int a = 0; a < n; a++)
                    worst_fd = fmax(worst_fd, fabs((Np[a] - Nm[a]) / (2 * h) - dN[a][k]));
            }
        }
        CU_ASSERT(worst_rep < 1e-13);
        CU_ASSERT(worst_fd < 1e-7);
        if (!(worst_rep < 1e-13 && worst_fd < 1e-7))
            printf("\n  %s: reproduction error %.2e, derivative error %.2e\n", r->name, worst_rep,
                   worst_fd);
        /* the tabulated values are the functions' at the rule's points */
        for (int q = 0; q < r->nqp; q++) {
            hk_el_shape(t, r->qp[q], N, dN);
            for (int a = 0; a < n; a++) {
                CU_ASSERT_DOUBLE_EQUAL(r->N[q][a], N[a], 0);
                for (int k = 0; k < 3; k++)
                    CU_ASSERT_DOUBLE_EQUAL(r->dN[q][a][k], dN[a][k], 0);
            }
        }
    }
}

/* The rules integrate monomials exactly: wedge (tri x [-1,1]) and pyramid integrals. */
static void test_quadrature(void)
{
    for (int it = 0; it < 6; it++) {
        const hk_eltype t = hyb[it];
        const hk_elref *r = hk_elref_get(t);
        const int quad = hk_eltype_get(t)->order == 2;
        /* 1, zeta, xi^2, zeta^2, xi^2 eta^2 (pyramids: only the 27-point rule is asked for
         * degree 4 in the collapsed c) */
        double ref[5], got[5] = {0, 0, 0, 0, 0};
        int nchk = 4;
        if (is_pyr(t)) {
            ref[0] = 4.0 / 3, ref[1] = 1.0 / 3, ref[2] = 4.0 / 15, ref[3] = 2.0 / 15;
            ref[4] = 4.0 / 63, nchk = quad ? 5 : 4;
        } else {
            ref[0] = 1, ref[1] = 0, ref[2] = 1.0 / 6, ref[3] = 1.0 / 3;
            ref[4] = 2.0 / 180, nchk = quad ? 5 : 4; /* int xi^2 eta^2 over the triangle 1/180 */
        }
        CU_ASSERT(r->nqp <= HK_EL_MAXQ);
        for (int q = 0; q < r->nqp; q++) {
            const double *x = r->qp[q], w = r->qw[q];
            got[0] += w, got[1] += w * x[2], got[2] += w * x[0] * x[0];
            got[3] += w * x[2] * x[2], got[4] += w * x[0] * x[0] * x[1] * x[1];
        }
        for (int k = 0; k < nchk; k++) {
            CU_ASSERT_DOUBLE_EQUAL(got[k], ref[k], 1e-14);
            if (fabs(got[k] - ref[k]) > 1e-14)
                printf("\n  %s: moment %d = %.17g, exact %.17g\n", r->name, k, got[k], ref[k]);
        }
        /* the reduced (volumetric) rule: 1 point for the linear types, 3 x 2 and 2 x 2 x 2
         * for the quadratic ones; its interpolant takes the values at its points */
        int nq;
        double qp[HK_EL_MAXQ][3], qw[HK_EL_MAXQ], v[HK_EL_MAXQ], sw = 0;
        CU_ASSERT_EQUAL(hk_elref_reduced_rule(t, &nq, qp, qw), quad ? (is_pyr(t) ? 8 : 6) : 1);
        for (int q = 0; q < nq; q++)
            sw += qw[q], v[q] = 1 + q * q;
        CU_ASSERT_DOUBLE_EQUAL(sw, ref[0], 1e-15);
        for (int q = 0; q < nq; q++)
            CU_ASSERT_DOUBLE_EQUAL(hk_elref_reduced_interp(t, qp[q], v), v[q], 1e-12);
        if (!quad) CU_ASSERT_DOUBLE_EQUAL(qp[0][2], is_pyr(t) ? 0.25 : 0, 1e-15);
    }
}

/* On every face, the functions of the nodes off the face vanish and those on it are the face
 * element's (tri3/tri6, quad4/quad8/quad9): wedges and pyramids conform to tets and hexes. */
static void test_face_conformity(void)
{
    static const int wfaces[5][4] = {
        {0, 1, 2, -1}, {3, 4, 5, -1}, {0, 1, 4, 3}, {0, 2, 5, 3}, {1, 2, 5, 4}};
    static const int pfaces[5][4] = {
        {0, 1, 2, 3}, {0, 1, 4, -1}, {1, 2, 4, -1}, {2, 3, 4, -1}, {3, 0, 4, -1}};
    for (int it = 0; it < 6; it++) {
        const hk_eltype t = hyb[it];
        const hk_elref *r = hk_elref_get(t);
        const int ord = hk_eltype_get(t)->order;
        for (int f = 0; f < 5; f++) {
            const int *fc = is_pyr(t) ? pfaces[f] : wfaces[f];
            const int tri = fc[3] < 0;
            hk_eltype ft = tri ? (ord == 1 ? HK_EL_TRI3 : HK_EL_TRI6)
                               : (ord == 1                                   ? HK_EL_QUAD4
                                  : (t == HK_EL_WEDGE15 || t == HK_EL_PYR13) ? HK_EL_QUAD8
                                                                             : HK_EL_QUAD9);
            const hk_elref *fr = hk_elref_get(ft);
            /* face reference -> cell reference: affine through the face's corners */
            double X[4][3];
            for (int c = 0; c < (tri ? 3 : 4); c++)
                memcpy(X[c], r->xi[fc[c]], sizeof X[c]);
            int match[HK_EL_MAXN];
            double fxi[HK_EL_MAXN][3];
            for (int k = 0; k < fr->nnodes; k++) {
                double s = fr->xi[k][0], u = fr->xi[k][1];
                for (int d = 0; d < 3; d++)
                    fxi[k][d] =
                        tri ? X[0][d] + s * (X[1][d] - X[0][d]) + u * (X[2][d] - X[0][d])
                            : 0.25 * ((1 - s) * (1 - u) * X[0][d] + (1 + s) * (1 - u) * X[1][d] +
                                      (1 + s) * (1 + u) * X[2][d] + (1 - s) * (1 + u) * X[3][d]);
                match[k] = -1;
                for (int a = 0; a < r->nnodes; a++)
                    if (fabs(r->xi[a][0] - fxi[k][0]) + fabs(r->xi[a][1] - fxi[k][1]) +
                            fabs(r->xi[a][2] - fxi[k][2]) <
                        1e-12)
                        match[k] = a;
                CU_ASSERT_FATAL(match[k] >= 0);
            }
            unsigned seed = 99u + 7u * (unsigned)f;
            for (int s = 0; s < 20; s++) {
                double fx[3] = {0, 0, 0}, x[3], Nf[HK_EL_MAXN], dNf[HK_EL_MAXN][3], N[HK_EL_MAXN],
                       dN[HK_EL_MAXN][3];
                fx[0] = urand(&seed), fx[1] = urand(&seed);
                if (tri && fx[0] + fx[1] > 1) fx[0] = 1 - fx[0], fx[1] = 1 - fx[1];
                if (!tri) fx[0] = 2 * fx[0] - 1, fx[1] = 2 * fx[1] - 1;
                hk_el_shape(ft, fx, Nf, dNf);
                for (int d = 0; d < 3; d++) {
                    x[d] = 0;
                    for (int k = 0; k < fr->ncorners; k++) {
                        double Nl[HK_EL_MAXN], dl[HK_EL_MAXN][3];
                        hk_el_shape(tri ? HK_EL_TRI3 : HK_EL_QUAD4, fx, Nl, dl);
                        x[d] += Nl[k] * fxi[k][d];
                    }
                }
                hk_el_shape(t, x, N, dN);
                double dev = 0;
                for (int a = 0; a < r->nnodes; a++) {
                    double want = 0;
                    for (int k = 0; k < fr->nnodes; k++)
                        if (match[k] == a) want = Nf[k];
                    dev = fmax(dev, fabs(N[a] - want));
                }
                CU_ASSERT(dev < 1e-13);
                if (!(dev < 1e-13)) printf("\n  %s face %d: off by %.2e\n", r->name, f, dev);
            }
        }
    }
}

/* The loader's orientation fix: a mirrored cell of each type (nodes in the mirror's order)
 * has a negative Jacobian, is flipped back to Gmsh's order, and its corner map is the
 * element's own. */
static void test_orientation(void)
{
    for (int it = 0; it < 6; it++) {
        const hk_eltype t = hyb[it];
        const int n = hk_eltype_get(t)->nnodes;
        int perm[27];
        CU_ASSERT_EQUAL_FATAL(hk_eltype_flip_perm(t, perm), 0);
        hk_mesh m;
        memset(&m, 0, sizeof m);
        int64_t ptr[2] = {0, n};
        int32_t nodes[27];
        uint8_t type = (uint8_t)t;
        double coords[81];
        memcpy(coords, hk_eltype_ref_coords(t), 3 * (size_t)n * sizeof *coords);
        for (int a = 0; a < n; a++)
            nodes[a] = perm[a];
        m.dim = 3, m.nnodes = n, m.coords = coords;
        m.cells = (hk_elems){.n = 1, .type = &type, .ptr = ptr, .nodes = nodes};
        CU_ASSERT(hk_elem_jacobian_sign(&m.cells, 0, coords, 3) < 0);
        CU_ASSERT_EQUAL(hk_mesh_fix_orientation(&m), 1);
        CU_ASSERT(hk_elem_jacobian_sign(&m.cells, 0, coords, 3) > 0);
        for (int a = 0; a < n; a++)
            CU_ASSERT_EQUAL(nodes[a], a);
        /* on the reference element the mesh's corner map is the identity */
        double r[3], x[3], J[3][3];
        hk_eltype_centroid(t, r);
        CU_ASSERT_EQUAL(hk_mesh_linear_map(t, coords, r, x, J), hk_eltype_ncorners(t));
        for (int k = 0; k < 3; k++) {
            CU_ASSERT_DOUBLE_EQUAL(x[k], r[k], 1e-15);
            for (int l = 0; l < 3; l++)
                CU_ASSERT_DOUBLE_EQUAL(J[k][l], k == l, 1e-15);
        }
    }
}

/* ---- node orders ------------------------------------------------------------------------- */

/* VTK's parametric coordinates (vtkWedge, vtkQuadraticWedge, vtkBiQuadraticQuadraticWedge,
 * vtkPyramid, vtkQuadraticPyramid), to which the permuted Gmsh nodes must map: wedges by
 * (xi, eta, (zeta + 1)/2); pyramids by the affine map of Gmsh's pyramid onto VTK's, whose
 * apex stands over node 0: x = (xi + 1 - zeta)/2, y = (eta + 1 - zeta)/2, z = zeta; VTK's
 * pyramid parameters (r, s, t) sit at (r(1 - t), s(1 - t), t). */
static const double vtk_wedge18[18][3] = {
    {0, 0, 0},  {1, 0, 0},   {0, 1, 0},  {0, 0, 1},   {1, 0, 1},    {0, 1, 1},
    {.5, 0, 0}, {.5, .5, 0}, {0, .5, 0}, {.5, 0, 1},  {.5, .5, 1},  {0, .5, 1},
    {0, 0, .5}, {1, 0, .5},  {0, 1, .5}, {.5, 0, .5}, {.5, .5, .5}, {0, .5, .5}};
static const double vtk_pyr13[13][3] = {{0, 0, 0},  {1, 0, 0},  {1, 1, 0},  {0, 1, 0},  {0, 0, 1},
                                        {.5, 0, 0}, {1, .5, 0}, {.5, 1, 0}, {0, .5, 0}, {0, 0, .5},
                                        {1, 0, .5}, {1, 1, .5}, {0, 1, .5}};

static void gmsh_to_vtk_geometry(hk_eltype t, const double *g, double *x)
{
    if (is_pyr(t))
        x[0] = (g[0] + 1 - g[2]) / 2, x[1] = (g[1] + 1 - g[2]) / 2, x[2] = g[2];
    else
        x[0] = g[0], x[1] = g[1], x[2] = (g[2] + 1) / 2;
}

static void vtk_param_geometry(hk_eltype t, const double *p, double *x)
{
    if (is_pyr(t))
        x[0] = p[0] * (1 - p[2]), x[1] = p[1] * (1 - p[2]), x[2] = p[2];
    else
        memcpy(x, p, 3 * sizeof *x);
}

static void test_vtk_order(void)
{
    for (int it = 0; it < 6; it++) {
        const hk_eltype t = hyb[it];
        const int nv = hk_eltype_vtk_nnodes(t), *o = hk_eltype_vtk_order(t);
        const double *g = hk_eltype_ref_coords(t);
        CU_ASSERT_EQUAL(nv, t == HK_EL_PYR14 ? 13 : hk_eltype_get(t)->nnodes);
        for (int i = 0; i < nv; i++) {
            double x[3], y[3];
            gmsh_to_vtk_geometry(t, g + 3 * o[i], x);
            vtk_param_geometry(t, is_pyr(t) ? vtk_pyr13[i] : vtk_wedge18[i], y);
            for (int k = 0; k < 3; k++)
                CU_ASSERT_DOUBLE_EQUAL(x[k], y[k], 1e-15);
        }
    }
    /* and VTK itself, when it is installed: one cell of each type written and read back */
    if (access("/usr/bin/python3", X_OK) != 0 ||
        system("/usr/bin/python3 -c 'import vtkmodules.vtkIOXML' >/dev/null 2>&1") != 0) {
        printf("\n  note: /usr/bin/python3 with vtk not found; VTK read-back skipped ");
        return;
    }
    hk_mesh m;
    memset(&m, 0, sizeof m);
    int ntot = 0;
    for (int it = 0; it < 6; it++)
        ntot += hk_eltype_get(hyb[it])->nnodes;
    m.dim = 3;
    m.coords = malloc(3 * (size_t)ntot * sizeof(double));
    m.cells.type = malloc(6);
    m.cells.ptr = calloc(7, sizeof(int64_t));
    m.cells.nodes = malloc((size_t)ntot * sizeof(int32_t));
    m.cells.tag = malloc(6 * sizeof(int64_t));
    for (int it = 0; it < 6; it++) {
        const hk_eltype t = hyb[it];
        const int n = hk_eltype_get(t)->nnodes;
        const double *g = hk_eltype_ref_coords(t);
        for (int a = 0; a < n; a++) {
            gmsh_to_vtk_geometry(t, g + 3 * a, m.coords + 3 * m.nnodes);
            m.cells.nodes[m.cells.ptr[it] + a] = (int32_t)m.nnodes++;
        }
        m.cells.ptr[it + 1] = m.cells.ptr[it] + n;
        m.cells.type[it] = (uint8_t)t;
        m.cells.tag[it] = it + 1;
    }
    m.cells.n = 6;
    char path[512], cmd[2048], res[600];
    snprintf(path, sizeof path, "%s/hybrid_order.vtu", hk_test_tmpdir());
    snprintf(res, sizeof res, "%s/hybrid_order.out", hk_test_tmpdir());
    HK_ASSERT_OK(hk_vtu_write(path, &m, NULL, NULL));
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"\n"
             "from vtkmodules.vtkIOXML import vtkXMLUnstructuredGridReader\n"
             "r = vtkXMLUnstructuredGridReader(); r.SetFileName('%s'); r.Update()\n"
             "g = r.GetOutput()\n"
             "for c in range(g.GetNumberOfCells()):\n"
             "    cell = g.GetCell(c); pc = cell.GetParametricCoords(); pts = cell.GetPoints()\n"
             "    pyr = cell.GetCellType() in (14, 27)\n"
             "    dev = 0.0\n"
             "    for k in range(cell.GetNumberOfPoints()):\n"
             "        p = pc[3*k:3*k+3]; x = pts.GetPoint(k)\n"
             "        y = (p[0]*(1-p[2]), p[1]*(1-p[2]), p[2]) if pyr else p\n"
             "        dev = max(dev, max(abs(x[d] - y[d]) for d in range(3)))\n"
             "    print(cell.GetCellType(), cell.GetNumberOfPoints(), dev)\n"
             "\" > %s 2>&1",
             path, res);
    CU_ASSERT_EQUAL(system(cmd), 0);
    FILE *f = fopen(res, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (int it = 0; it < 6; it++) {
        int type = -1, nn = -1;
        double dev = 1;
        CU_ASSERT_EQUAL(fscanf(f, "%d %d %lg", &type, &nn, &dev), 3);
        CU_ASSERT_EQUAL(type, hk_eltype_get(hyb[it])->vtk_type);
        CU_ASSERT_EQUAL(nn, hk_eltype_vtk_nnodes(hyb[it]));
        CU_ASSERT(dev < 1e-12);
        if (!(dev < 1e-12))
            printf("\n  %s: VTK places a node %.3g off\n", hk_el_name(hyb[it]), dev);
    }
    fclose(f);
    free(m.coords);
    free(m.cells.type);
    free(m.cells.ptr);
    free(m.cells.nodes);
    free(m.cells.tag);
}

/* Dense Cholesky solve of the assembled system (small meshes only). */
static void dense_solve(const hk_system *s, double *u)
{
    const int64_t n = s->K.nbrows * s->K.bs;
    double *A = hk_test_dense_of(&s->K);
    CU_ASSERT_EQUAL_FATAL(hk_test_cholesky(n, A), 0);
    memcpy(u, s->f, (size_t)n * sizeof *u);
    hk_test_cholesky_solve(n, A, u);
    free(A);
}

/* ---- patch tests ------------------------------------------------------------------------- */

static const double PG[3][3] = {
    {1.0e-3, 2.0e-3, -0.5e-3}, {-1.5e-3, 0.7e-3, 1.1e-3}, {0.4e-3, -0.9e-3, 1.3e-3}};
static const double PC[3] = {1e-3, -2e-3, 0.5e-3};

static void linear_field(const double *x, double *u)
{
    for (int i = 0; i < 3; i++) {
        u[i] = PC[i];
        for (int k = 0; k < 3; k++)
            u[i] += PG[i][k] * x[k];
    }
}

/* The linear field on the surface nodes, solved inside: displacements exact, and the
 * recovered stress (at every node, apexes included, and per cell) is D eps. */
static void patch(const char *what, hk_test_builder *b, int integration)
{
    hk_mesh m;
    hk_test_builder_mesh(b, &m);
    hk_support *sup = calloc((size_t)m.nboundaries, sizeof *sup);
    for (int g = 0; g < m.nboundaries; g++) {
        sup[g].boundary = g;
        sup[g].mask = 7;
        linear_field(m.coords + 3 * m.boundaries[g].nodes[0], sup[g].value);
    }
    const double E = 200e9, nu = 0.3;
    hk_material mat = {.name = "steel", .E = E, .nu = nu, .integration = integration};
    hk_problem p = {.mesh = &m, .analysis = HK_SOLID, .materials = &mat};
    p.nsupports = m.nboundaries;
    p.supports = sup;
    hk_system s;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    CU_ASSERT(s.nfixed < s.ndof); /* something is solved */
    double *u = malloc((size_t)s.ndof * sizeof *u), *ue = malloc((size_t)s.ndof * sizeof *ue);
    dense_solve(&s, u);
    for (int64_t i = 0; i < m.nnodes; i++)
        linear_field(m.coords + 3 * i, ue + 3 * i);
    const double err = hk_test_reldiff(u, ue, (long)s.ndof);
    /* sigma = lambda tr(eps) I + 2 mu eps */
    const double lam = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));
    const double tr = PG[0][0] + PG[1][1] + PG[2][2];
    double sig[6];
    for (int k = 0; k < 3; k++)
        sig[k] = lam * tr + 2 * mu * PG[k][k];
    sig[3] = mu * (PG[0][1] + PG[1][0]), sig[4] = mu * (PG[1][2] + PG[2][1]);
    sig[5] = mu * (PG[0][2] + PG[2][0]);
    hk_fields f;
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
    double serr = 0, cerr = 0;
    for (int64_t i = 0; i < m.nnodes; i++)
        for (int k = 0; k < 6; k++)
            serr = fmax(serr, fabs(f.stress[6 * i + k] - sig[k]) / fabs(sig[0]));
    for (int64_t e = 0; e < m.cells.n; e++)
        for (int k = 0; k < 6; k++)
            cerr = fmax(cerr, fabs(f.cell_stress[6 * e + k] - sig[k]) / fabs(sig[0]));
    printf("\n    %-34s %4lld cells %4lld nodes: u %.1e, nodal stress %.1e, cell stress %.1e ",
           what, (long long)m.cells.n, (long long)m.nnodes, err, serr, cerr);
    CU_ASSERT(err < 1e-10);
    CU_ASSERT(serr < 1e-8);
    CU_ASSERT(cerr < 1e-8);
    hk_fields_free(&f);
    free(u);
    free(ue);
    free(sup);
    hk_system_free(&s);
    hk_mesh_free(&m);
}

static void test_patch_single_type(void)
{
    static const char *const fam[3] = {"linear", "serendipity", "Lagrange"};
    for (int family = 0; family < 3; family++) {
        char what[64];
        hk_test_builder b;
        const int wedges[2] = {HK_TEST_CUBE_WEDGE, HK_TEST_CUBE_WEDGE}, pyrs[2] = {HK_TEST_CUBE_PYR, HK_TEST_CUBE_PYR};
        hk_test_build_grid(&b, 2, 2, 2, wedges, 0, 0.2, 11u);
        hk_test_raise_cells(&b, family);
        snprintf(what, sizeof what, "%s", hk_el_name(b.type[0]));
        patch(what, &b, HK_INTEGRATION_FULL);
        hk_test_builder_free(&b);
        hk_test_build_grid(&b, 2, 2, 2, pyrs, 0, 0.2, 12u);
        hk_test_raise_cells(&b, family);
        snprintf(what, sizeof what, "%s (%s)", hk_el_name(b.type[0]), fam[family]);
        patch(what, &b, HK_INTEGRATION_FULL);
        hk_test_builder_free(&b);
    }
}

/* Mixed meshes, with full and with selective integration (whose reduced rules integrate
 * div N exactly on straight-sided cells, so uniform states stay exact). */
static void test_patch_mixed(void)
{
    static const char *const name[3] = {"hex8 pyr5 tet4 wedge6", "hex20 pyr13 tet10 wedge15",
                                        "hex27 pyr14 tet10 wedge18"};
    const int kind[3] = {HK_TEST_CUBE_HEX, HK_TEST_CUBE_PYR, HK_TEST_CUBE_WEDGE};
    for (int family = 0; family < 3; family++)
        for (int sel = 0; sel < 2; sel++) {
            hk_test_builder b;
            hk_test_build_grid(&b, 3, 2, 2, kind, 1, 0.2, 21u + (unsigned)family);
            hk_test_raise_cells(&b, family);
            int seen[HK_EL_COUNT] = {0};
            for (int e = 0; e < b.nc; e++)
                seen[b.type[e]] = 1;
            CU_ASSERT(seen[hk_test_raise(HK_EL_HEX8, family)] && seen[hk_test_raise(HK_EL_PYR5, family)] &&
                      seen[hk_test_raise(HK_EL_TET4, family)] && seen[hk_test_raise(HK_EL_WEDGE6, family)]);
            char what[64];
            snprintf(what, sizeof what, "%s%s", name[family], sel ? ", selective" : "");
            patch(what, &b, sel ? HK_INTEGRATION_SELECTIVE : HK_INTEGRATION_FULL);
            hk_test_builder_free(&b);
        }
}

/* ---- Gmsh meshes ------------------------------------------------------------------------- */

#ifdef HOOKE_HAVE_GMSH

/* Every node of every wedge and pyramid of a Gmsh mesh sits where the straight-sided map of
 * its reference coordinates puts it: Gmsh's numbering is the table's. */
static void check_gmsh_nodes(const hk_mesh *m, int *count)
{
    double worst = 0;
    for (int64_t e = 0; e < m->cells.n; e++) {
        const hk_eltype t = (hk_eltype)m->cells.type[e];
        count[t]++;
        if (t < HK_EL_WEDGE6) continue;
        const hk_eltype lin = is_pyr(t) ? HK_EL_PYR5 : HK_EL_WEDGE6;
        const int nc = is_pyr(t) ? 5 : 6, nn = hk_eltype_get(t)->nnodes;
        const int32_t *nd = m->cells.nodes + m->cells.ptr[e];
        const double *rc = hk_eltype_ref_coords(t);
        for (int a = 0; a < nn; a++) {
            double N[HK_EL_MAXN], dN[HK_EL_MAXN][3];
            hk_el_shape(lin, rc + 3 * a, N, dN);
            for (int d = 0; d < 3; d++) {
                double x = 0;
                for (int c = 0; c < nc; c++)
                    x += N[c] * m->coords[3 * nd[c] + d];
                worst = fmax(worst, fabs(x - m->coords[3 * nd[a] + d]));
            }
        }
    }
    CU_ASSERT(worst < 1e-9);
    if (!(worst < 1e-9)) printf("\n  a wedge/pyramid node is %.2e off its place\n", worst);
}

/* Hex + pyramid + tet + prism bar (tests/data/mesh/hybrid_bar.geo, meshed by Gmsh into the
 * .msh files next to it: Gmsh 4.8 aborts when it meshes pyramids twice in one process, and
 * the case test below meshes its .geo at run time) at orders 1 and 2, pulled
 * by a traction on x = 1, on rollers on x = 0, y = 0, z = 0: the exact solution is linear,
 * u_x = sigma x / E, u_y = -nu sigma y / E, u_z = -nu sigma z / E, and every element type
 * reproduces it. */
static void test_gmsh_bar(void)
{
    static const struct {
        const char *file;
        int order, incomplete;
        hk_eltype hex, wedge, pyr;
    } runs[] = {
        {"tests/data/mesh/hybrid_bar_o1_v41.msh", 1, 0, HK_EL_HEX8, HK_EL_WEDGE6, HK_EL_PYR5},
        {"tests/data/mesh/hybrid_bar_o2i_v41.msh", 2, 1, HK_EL_HEX20, HK_EL_WEDGE15, HK_EL_PYR13},
        {"tests/data/mesh/hybrid_bar_o2_v41.msh", 2, 0, HK_EL_HEX27, HK_EL_WEDGE18, HK_EL_PYR14}};
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
        hk_mesh m;
        HK_ASSERT_OK(hk_mesh_load(hk_test_path(runs[k].file), NULL, &m));
        int count[HK_EL_COUNT] = {0};
        check_gmsh_nodes(&m, count);
        CU_ASSERT(count[runs[k].hex] > 0 && count[runs[k].wedge] > 0 && count[runs[k].pyr] > 0);
        CU_ASSERT(count[runs[k].order == 1 ? HK_EL_TET4 : HK_EL_TET10] > 0);
        const double E = 70e9, nu = 0.33, sigma = 2e6;
        hk_material mat = {.name = "aluminium", .E = E, .nu = nu};
        const char *bn[3] = {"xmin", "ymin", "zmin"};
        hk_support sup[3];
        for (int d = 0; d < 3; d++) {
            sup[d] = (hk_support){.boundary = hk_mesh_find_boundary(&m, bn[d]), .mask = 1u << d};
            CU_ASSERT_FATAL(sup[d].boundary >= 0);
            const hk_group *g = &m.boundaries[sup[d].boundary];
            for (int64_t i = 0; i < g->nnodes; i++) /* the groups are the planes they say */
                CU_ASSERT_DOUBLE_EQUAL(m.coords[3 * g->nodes[i] + d], 0, 1e-12);
        }
        hk_load ld = {.kind = HK_LOAD_TRACTION,
                      .boundary = hk_mesh_find_boundary(&m, "xmax"),
                      .value = {sigma, 0, 0}};
        CU_ASSERT_FATAL(ld.boundary >= 0);
        hk_problem p = {.mesh = &m,
                        .analysis = HK_SOLID,
                        .materials = &mat,
                        .nloads = 1,
                        .loads = &ld,
                        .nsupports = 3,
                        .supports = sup};
        hk_system s;
        HK_ASSERT_OK(hk_assemble(&p, &s));
        double *u = calloc((size_t)s.ndof, sizeof *u);
        hk_options *opt = NULL;
        hk_solver *sv = NULL;
        hk_result res;
        HK_ASSERT_OK(hk_options_create(&opt));
        HK_ASSERT_OK(
            hk_options_parse(opt, "backend=cpu method=cg pc=jacobi tol=1e-13 maxit=20000"));
        HK_ASSERT_OK(hk_solver_create(&s.K, opt, &sv));
        HK_ASSERT_OK(hk_solver_solve(sv, s.f, u, &res));
        double err = 0;
        for (int64_t i = 0; i < m.nnodes; i++) {
            const double *x = m.coords + 3 * i;
            const double ex[3] = {sigma * x[0] / E, -nu * sigma * x[1] / E, -nu * sigma * x[2] / E};
            for (int d = 0; d < 3; d++)
                err = fmax(err, fabs(u[3 * i + d] - ex[d]) / (sigma / E));
        }
        hk_fields f;
        HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
        double serr = 0;
        for (int64_t i = 0; i < m.nnodes; i++)
            for (int c = 0; c < 6; c++)
                serr = fmax(serr, fabs(f.stress[6 * i + c] - (c == 0 ? sigma : 0)) / sigma);
        printf("\n    bar order %d%s: %lld cells, u_x(1) error %.1e, stress error %.1e ",
               runs[k].order, runs[k].incomplete ? " incomplete" : "", (long long)m.cells.n, err,
               serr);
        CU_ASSERT(err < 1e-9);
        CU_ASSERT(serr < 1e-7);
        /* the rollers on x = 0 carry the load */
        CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[0][0], -sigma * 0.01, 1e-9 * sigma * 0.01);
        hk_fields_free(&f);
        hk_solver_destroy(sv);
        hk_options_destroy(opt);
        free(u);
        hk_system_free(&s);
        hk_mesh_free(&m);
    }
}

/* cases/hybrid: the cantilever of cases/cantilever on a hexahedron + prism mesh (a section
 * of quadrilaterals and triangles extruded in layers), complete and incomplete quadratic
 * (linear hexahedra and prisms lock in bending on it): tip deflection against Timoshenko's
 * (its header); the support carries the load. */
static void test_case_hybrid(void)
{
    static const struct {
        const char *set;
        hk_eltype hex, wedge;
        double tol;
    } runs[] = {{"geometry.order=2", HK_EL_HEX27, HK_EL_WEDGE18, 0.02},
                {"geometry.incomplete=true", HK_EL_HEX20, HK_EL_WEDGE15, 0.02}};
    const double L = 1, b = 0.1, h = 0.1, E = 200e9, nu = 0.3, P = 1000;
    const double I = b * h * h * h / 12, G = E / (2 * (1 + nu)), k = 10 * (1 + nu) / (12 + 11 * nu);
    const double ref = P * L * L * L / (3 * E * I) + P * L / (k * G * b * h);
    for (size_t q = 0; q < sizeof runs / sizeof *runs; q++) {
        hk_case c;
        hk_run r;
        const char *sets[] = {runs[q].set};
        HK_ASSERT_OK(hk_case_load(hk_test_path("cases/hybrid/hybrid.yaml"), 1, sets, &c));
        hk_run_opts ro = {.backend = "cpu", .quiet = 1};
        HK_ASSERT_OK(hk_run_case(&c, &ro, &r));
        int seen[HK_EL_COUNT] = {0}, kinds = 0;
        for (int64_t e = 0; e < r.mesh.cells.n; e++)
            seen[r.mesh.cells.type[e]] = 1;
        for (int t = 0; t < HK_EL_COUNT; t++)
            kinds += seen[t];
        CU_ASSERT(seen[runs[q].hex] && seen[runs[q].wedge] && kinds == 2);
        const int tip = hk_mesh_find_boundary(&r.mesh, "tip");
        CU_ASSERT_FATAL(tip >= 0);
        const hk_group *g = &r.mesh.boundaries[tip];
        double sum = 0;
        for (int64_t i = 0; i < g->nnodes; i++)
            sum += r.u[3 * (int64_t)g->nodes[i] + 2];
        const double w = -sum / (double)g->nnodes;
        printf("\n    cases/hybrid %s: tip deflection %.5e m, Timoshenko %.5e m (%.2f %%) ",
               runs[q].set, w, ref, 100 * fabs(w - ref) / ref);
        /* as cases/cantilever: the clamped root face stiffens a little */
        CU_ASSERT(fabs(w - ref) < runs[q].tol * ref);
        CU_ASSERT_DOUBLE_EQUAL(r.fields.support_reaction[0][2], P, 1e-6 * P);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

#endif

HK_SUITE(hybrid, {"shape functions: delta, unity, completeness, derivatives", test_shape_functions},
         {"wedge and pyramid rules integrate exactly", test_quadrature},
         {"faces conform to tri3/6 and quad4/8/9", test_face_conformity},
         {"mirrored cells are flipped back to Gmsh's order", test_orientation},
         {"Gmsh -> VTK node order and cell types", test_vtk_order},
         {"patch test, distorted single-type meshes", test_patch_single_type},
         {"patch test, distorted hex/pyramid/tet/wedge meshes", test_patch_mixed},
#ifdef HOOKE_HAVE_GMSH
         {"Gmsh hybrid bar in tension: exact at orders 1 and 2", test_gmsh_bar},
         {"cases/hybrid cantilever (hexahedra + prisms) against Timoshenko", test_case_hybrid},
#endif
)
