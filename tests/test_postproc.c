/* Tests of postproc/: element library, tensor invariants, strain/stress recovery against
 * constant-strain closed forms, reactions of a bar (E A eps), and VTU/PVD files read back by
 * VTK's own XML reader (/usr/bin/python3 with vtk; skipped with a note when absent). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>
#include <omp.h>

#include "test_util.h"
#include "hooke/fem.h"
#include "../assembly/elements.h"
#include "../postproc/pp_impl.h"

static const int all_types[] = {HK_EL_TRI3, HK_EL_TRI6,  HK_EL_QUAD4, HK_EL_QUAD8, HK_EL_QUAD9,
                                HK_EL_TET4, HK_EL_TET10, HK_EL_HEX8,  HK_EL_HEX20, HK_EL_HEX27};
#define NTYPES ((int)(sizeof all_types / sizeof all_types[0]))

/* ---- a structured test mesh of any element type ---------------------------------------
 * nx x ny (x nz) cells on [0,lx]x[0,ly](x[0,lz]); quads/hexes directly, triangles 2 per
 * square, tetrahedra 6 per cube (Kuhn). Nodes live on the doubled grid so mid-edge nodes are
 * shared. Boundaries: 0 xmin, 1 xmax, 2 ymin, 3 ymax (, 4 zmin, 5 zmax), node lists only.
 * perturb > 0 moves nodes by up to perturb * cell size: all nodes (interior_only = 0) or only
 * those off the boundary. */
typedef struct {
    int nx, ny, nz;
    int64_t *id; /* doubled-grid index -> node, -1 */
    hk_mesh m;
    int64_t cap_cells, cap_nodes;
} gen;

static int64_t gkey(const gen *g, const int p[3])
{
    return ((int64_t)p[2] * (2 * g->ny + 1) + p[1]) * (2 * g->nx + 1) + p[0];
}

static int32_t gnode(gen *g, const int p[3])
{
    int64_t k = gkey(g, p);
    if (g->id[k] < 0) {
        g->id[k] = g->m.nnodes;
        for (int i = 0; i < 3; i++)
            g->m.coords[3 * g->m.nnodes + i] = p[i]; /* scaled later */
        g->m.nnodes++;
    }
    return (int32_t)g->id[k];
}

static void gcell(gen *g, int t, int nn, int (*pts)[3])
{
    hk_elems *c = &g->m.cells;
    int64_t e = c->n++;
    c->type[e] = (uint8_t)t;
    c->tag[e] = e + 1;
    for (int a = 0; a < nn; a++)
        c->nodes[c->ptr[e] + a] = gnode(g, pts[a]);
    c->ptr[e + 1] = c->ptr[e] + nn;
}

static double frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffff) / 65535.0 * 2 - 1;
}

static void make_mesh(int t, int nx, int ny, int nz, const double L[3], double perturb,
                      int interior_only, hk_mesh *out)
{
    const hk_elref *el = hk_elref_get(t);
    int dim = el->dim;
    if (dim == 2) nz = 0;
    gen g = {nx, ny, nz, NULL, {0}, 0, 0};
    int64_t ngrid = (int64_t)(2 * nx + 1) * (2 * ny + 1) * (2 * nz + 1);
    g.id = malloc(ngrid * sizeof(int64_t));
    for (int64_t i = 0; i < ngrid; i++)
        g.id[i] = -1;
    int64_t ncube = (int64_t)nx * ny * (dim == 3 ? nz : 1);
    int per = (t == HK_EL_TRI3 || t == HK_EL_TRI6)    ? 2
              : (t == HK_EL_TET4 || t == HK_EL_TET10) ? 6
                                                      : 1;
    hk_mesh *m = &g.m;
    m->dim = dim;
    m->coords = malloc(3 * ngrid * sizeof(double));
    m->cells.type = malloc(ncube * per);
    m->cells.ptr = calloc(ncube * per + 1, sizeof(int64_t));
    m->cells.nodes = malloc(ncube * per * el->nnodes * sizeof(int32_t));
    m->cells.tag = malloc(ncube * per * sizeof(int64_t));
    for (int k = 0; k < (dim == 3 ? nz : 1); k++)
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) {
                int o[3] = {2 * i, 2 * j, 2 * k};
                int pts[27][3];
                if (per == 1) {
                    for (int a = 0; a < el->nnodes; a++)
                        for (int d = 0; d < 3; d++)
                            pts[a][d] = d < dim ? o[d] + (int)(el->xi[a][d] + 1) : 0;
                    gcell(&g, t, el->nnodes, pts);
                    continue;
                }
                /* simplices: corners from the square/cube, then mid-edge nodes */
                static const int tri[2][3] = {{0, 1, 3}, {1, 2, 3}};
                static const int sq[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
                static const int perm3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                                {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
                static const int edge_tri[3][2] = {{0, 1}, {1, 2}, {2, 0}};
                static const int edge_tet[6][2] = {{0, 1}, {1, 2}, {2, 0}, {3, 0}, {3, 2}, {3, 1}};
                for (int s = 0; s < per; s++) {
                    int nv = dim + 1;
                    if (dim == 2) {
                        for (int a = 0; a < 3; a++)
                            pts[a][0] = o[0] + 2 * sq[tri[s][a]][0],
                            pts[a][1] = o[1] + 2 * sq[tri[s][a]][1], pts[a][2] = 0;
                    } else {
                        int v[3] = {0, 0, 0};
                        for (int d = 0; d < 3; d++)
                            pts[0][d] = o[d];
                        for (int a = 1; a < 4; a++) {
                            if (a < 4) v[perm3[s][a - 1]] = 1;
                            for (int d = 0; d < 3; d++)
                                pts[a][d] = o[d] + 2 * v[d];
                        }
                        /* positive orientation: swap 1 and 2 when the volume is negative */
                        int d1[3], d2[3], d3[3];
                        for (int d = 0; d < 3; d++)
                            d1[d] = pts[1][d] - pts[0][d], d2[d] = pts[2][d] - pts[0][d],
                            d3[d] = pts[3][d] - pts[0][d];
                        int vol = d1[0] * (d2[1] * d3[2] - d2[2] * d3[1]) -
                                  d1[1] * (d2[0] * d3[2] - d2[2] * d3[0]) +
                                  d1[2] * (d2[0] * d3[1] - d2[1] * d3[0]);
                        if (vol < 0)
                            for (int d = 0; d < 3; d++) {
                                int tmp = pts[1][d];
                                pts[1][d] = pts[2][d], pts[2][d] = tmp;
                            }
                    }
                    const int(*edge)[2] = dim == 2 ? edge_tri : edge_tet;
                    for (int e = 0; e < el->nnodes - nv; e++)
                        for (int d = 0; d < 3; d++)
                            pts[nv + e][d] = (pts[edge[e][0]][d] + pts[edge[e][1]][d]) / 2;
                    gcell(&g, t, el->nnodes, pts);
                }
            }
    /* boundaries by doubled-grid coordinate */
    int nb = 2 * dim;
    m->nboundaries = nb;
    m->boundaries = calloc(nb, sizeof(hk_group));
    int maxc[3] = {2 * nx, 2 * ny, 2 * nz};
    for (int b = 0; b < nb; b++) {
        hk_group *grp = &m->boundaries[b];
        static const char *names[6] = {"xmin", "xmax", "ymin", "ymax", "zmin", "zmax"};
        snprintf(grp->name, sizeof grp->name, "%s", names[b]);
        grp->dim = dim - 1;
        grp->nodes = malloc(m->nnodes * sizeof(int32_t));
        for (int64_t i = 0; i < m->nnodes; i++) {
            double c = m->coords[3 * i + b / 2];
            if (c == (b % 2 ? maxc[b / 2] : 0)) grp->nodes[grp->nnodes++] = (int32_t)i;
        }
    }
    /* scale to the box, then perturb */
    unsigned seed = 12345;
    for (int64_t i = 0; i < m->nnodes; i++) {
        int on_bnd = 0;
        for (int d = 0; d < dim; d++)
            on_bnd |= m->coords[3 * i + d] == 0 || m->coords[3 * i + d] == maxc[d];
        for (int d = 0; d < 3; d++) {
            double h = d < dim ? L[d] / (2 * (d == 0 ? nx : d == 1 ? ny : nz)) : 0;
            m->coords[3 * i + d] *= h;
            if (perturb > 0 && d < dim && !(interior_only && on_bnd))
                m->coords[3 * i + d] += perturb * 2 * h * 0.5 * frand(&seed);
        }
    }
    /* quadratic simplices stay straight-sided (mid-edge nodes back on the midpoints): their
     * Gauss rules are exact only for affine geometry, and the reaction checks rely on it */
    if (per > 1 && el->nnodes > dim + 1)
        for (int64_t e = 0; e < m->cells.n; e++) {
            static const int et[6][2] = {{0, 1}, {1, 2}, {2, 0}, {3, 0}, {3, 2}, {3, 1}};
            const int32_t *nd = m->cells.nodes + m->cells.ptr[e];
            for (int k = 0; k < el->nnodes - dim - 1; k++)
                for (int d = 0; d < 3; d++)
                    m->coords[3 * nd[dim + 1 + k] + d] =
                        (m->coords[3 * nd[et[k][0]] + d] + m->coords[3 * nd[et[k][1]] + d]) / 2;
        }
    m->nregions = 1;
    m->regions = calloc(1, sizeof(hk_group));
    strcpy(m->regions[0].name, "domain");
    m->regions[0].dim = dim;
    m->cell_region = calloc(m->cells.n, sizeof(int32_t));
    free(g.id);
    *out = *m;
}

static void free_mesh(hk_mesh *m)
{
    free(m->coords);
    free(m->cells.type);
    free(m->cells.ptr);
    free(m->cells.nodes);
    free(m->cells.tag);
    free(m->cell_region);
    for (int b = 0; b < m->nboundaries; b++)
        free(m->boundaries[b].nodes);
    free(m->boundaries);
    free(m->regions);
    memset(m, 0, sizeof *m);
}

/* A system by hand: nothing assembled, only what postproc reads (fixed, u_fixed, f_ext). */
static void make_system(const hk_mesh *m, hk_system *s)
{
    memset(s, 0, sizeof *s);
    s->dim = m->dim;
    s->ndof = (int64_t)m->dim * m->nnodes;
    s->fixed = calloc(s->ndof, 1);
    s->u_fixed = calloc(s->ndof, sizeof(double));
    s->f_ext = calloc(s->ndof, sizeof(double));
}

static void free_system(hk_system *s)
{
    free(s->fixed);
    free(s->u_fixed);
    free(s->f_ext);
    memset(s, 0, sizeof *s);
}

/* ---- element library ------------------------------------------------------------------ */

/* What postproc relies on from the other modules: assembly's reference nodes are mesh's
 * (same Gmsh order), its shape functions interpolate at those nodes with exact derivatives,
 * and its Gauss rules integrate the reference measure and x^2 exactly. */
static void test_element_data(void)
{
    for (int it = 0; it < NTYPES; it++) {
        int t = all_types[it];
        const hk_elref *el = hk_elref_get(t);
        CU_ASSERT_PTR_NOT_NULL_FATAL(el);
        CU_ASSERT(hk_eltype_has_kernel(t));
        int nn = el->nnodes;
        CU_ASSERT_EQUAL(nn, hk_eltype_get(t)->nnodes);
        const double *ref = hk_eltype_ref_coords(t);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
        double dref = 0;
        for (int a = 0; a < nn; a++)
            for (int d = 0; d < el->dim; d++)
                dref = fmax(dref, fabs(el->xi[a][d] - ref[3 * a + d]));
        CU_ASSERT_EQUAL(dref, 0);
        double N[HK_EL_MAXN], dN[HK_EL_MAXN][3];
        /* Kronecker property at mesh's reference nodes */
        double kron = 0;
        for (int b = 0; b < nn; b++) {
            hk_el_shape(t, ref + 3 * b, N, dN);
            for (int a = 0; a < nn; a++)
                kron = fmax(kron, fabs(N[a] - (a == b)));
        }
        CU_ASSERT(kron < 1e-14);
        /* partition of unity and finite-difference derivatives at an interior point */
        double x[3] = {0.21, 0.17, el->dim == 3 ? 0.13 : 0};
        hk_el_shape(t, x, N, dN);
        double sum = 0, dsum[3] = {0, 0, 0}, fd = 0;
        for (int a = 0; a < nn; a++) {
            sum += N[a];
            for (int k = 0; k < 3; k++)
                dsum[k] += dN[a][k];
        }
        for (int k = 0; k < el->dim; k++) {
            double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]};
            double Np[HK_EL_MAXN], Nm[HK_EL_MAXN], d2[HK_EL_MAXN][3];
            xp[k] += 1e-6, xm[k] -= 1e-6;
            hk_el_shape(t, xp, Np, d2);
            hk_el_shape(t, xm, Nm, d2);
            for (int a = 0; a < nn; a++)
                fd = fmax(fd, fabs((Np[a] - Nm[a]) / 2e-6 - dN[a][k]));
        }
        CU_ASSERT_DOUBLE_EQUAL(sum, 1, 1e-14);
        CU_ASSERT(fabs(dsum[0]) + fabs(dsum[1]) + fabs(dsum[2]) < 1e-13);
        CU_ASSERT(fd < 1e-8);
        if (kron >= 1e-14 || fd >= 1e-8 || dref != 0)
            printf("\n  %s: ref %g kron %g fd %g\n", el->name, dref, kron, fd);
        /* quadrature: the reference measure and an exact quadratic moment */
        double vol = 0, m2 = 0;
        for (int q = 0; q < el->nqp; q++)
            vol += el->qw[q], m2 += el->qw[q] * el->qp[q][0] * el->qp[q][0];
        int simplex = t == HK_EL_TRI3 || t == HK_EL_TRI6 || t == HK_EL_TET4 || t == HK_EL_TET10;
        double vref = simplex ? (el->dim == 2 ? 0.5 : 1.0 / 6) : (el->dim == 2 ? 4 : 8);
        /* integral of x^2: tri 1/12, tet 1/60, square 4/3, cube 8/3 */
        double m2ref = simplex ? (el->dim == 2 ? 1.0 / 12 : 1.0 / 60) : vref / 3;
        CU_ASSERT_DOUBLE_EQUAL(vol, vref, 1e-14);
        if (el->nqp > 1) CU_ASSERT_DOUBLE_EQUAL(m2, m2ref, 1e-14);
    }
    CU_ASSERT(!hk_eltype_has_kernel(HK_EL_POINT1));
}

/* ---- invariants ----------------------------------------------------------------------- */

static void test_principal_and_von_mises(void)
{
    double ev[3];
    /* diagonal, unsorted */
    double s1[6] = {-2, 5, 1, 0, 0, 0};
    hk_pp_principal(s1, ev);
    CU_ASSERT_DOUBLE_EQUAL(ev[0], 5, 1e-14);
    CU_ASSERT_DOUBLE_EQUAL(ev[1], 1, 1e-14);
    CU_ASSERT_DOUBLE_EQUAL(ev[2], -2, 1e-14);
    /* Q diag(3, 1, -2) Q^T with Q a rotation by 30 deg about z then 45 deg about x */
    double c1 = cos(M_PI / 6), s_1 = sin(M_PI / 6), c2 = cos(M_PI / 4), s_2 = sin(M_PI / 4);
    double Rz[3][3] = {{c1, -s_1, 0}, {s_1, c1, 0}, {0, 0, 1}};
    double Rx[3][3] = {{1, 0, 0}, {0, c2, -s_2}, {0, s_2, c2}};
    double Q[3][3] = {{0}}, D[3] = {3, 1, -2}, A[3][3] = {{0}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++)
                Q[i][j] += Rx[i][k] * Rz[k][j];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++)
                A[i][j] += Q[i][k] * D[k] * Q[j][k];
    double s2[6] = {A[0][0], A[1][1], A[2][2], A[0][1], A[1][2], A[0][2]};
    hk_pp_principal(s2, ev);
    CU_ASSERT_DOUBLE_EQUAL(ev[0], 3, 1e-13);
    CU_ASSERT_DOUBLE_EQUAL(ev[1], 1, 1e-13);
    CU_ASSERT_DOUBLE_EQUAL(ev[2], -2, 1e-13);
    /* plane tensor: (a+c)/2 +- sqrt(((a-c)/2)^2 + b^2), and 0 */
    double s3[6] = {40, -10, 0, 30, 0, 0};
    hk_pp_principal(s3, ev);
    CU_ASSERT_DOUBLE_EQUAL(ev[0], 15 + sqrt(625 + 900), 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(ev[1], 0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(ev[2], 15 - sqrt(625 + 900), 1e-12);
    /* hydrostatic: triple eigenvalue, no von Mises */
    double s4[6] = {-7, -7, -7, 0, 0, 0};
    hk_pp_principal(s4, ev);
    CU_ASSERT_DOUBLE_EQUAL(ev[0], -7, 1e-14);
    CU_ASSERT_DOUBLE_EQUAL(ev[2], -7, 1e-14);
    CU_ASSERT_DOUBLE_EQUAL(hk_pp_von_mises(s4), 0, 1e-14);
    /* von Mises: uniaxial |s|, pure shear sqrt(3) tau; equals the principal-stress form */
    double s5[6] = {-250, 0, 0, 0, 0, 0}, s6[6] = {0, 0, 0, 0, 80, 0};
    CU_ASSERT_DOUBLE_EQUAL(hk_pp_von_mises(s5), 250, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(hk_pp_von_mises(s6), sqrt(3) * 80, 1e-12);
    double vm = sqrt(0.5 * ((3 - 1) * (3 - 1) + (1 + 2) * (1 + 2) + (-2 - 3) * (-2 - 3)));
    CU_ASSERT_DOUBLE_EQUAL(hk_pp_von_mises(s2), vm, 1e-12);
}

/* ---- constant strain ------------------------------------------------------------------ */

/* Closed-form strain (tensor) and stress of the displacement gradient G under the analysis. */
static void closed_form(const double G[3][3], double E, double nu, hk_analysis an, double eps[6],
                        double sig[6])
{
    eps[0] = G[0][0], eps[1] = G[1][1], eps[2] = G[2][2];
    eps[3] = (G[0][1] + G[1][0]) / 2, eps[4] = (G[1][2] + G[2][1]) / 2;
    eps[5] = (G[0][2] + G[2][0]) / 2;
    double mu = E / (2 * (1 + nu)), lam = E * nu / ((1 + nu) * (1 - 2 * nu));
    if (an == HK_PLANE_STRESS) {
        /* sigma = E/(1-nu^2) [[1,nu],[nu,1]] eps, szz = 0, ezz = -nu/E (sxx + syy) */
        sig[0] = E / (1 - nu * nu) * (eps[0] + nu * eps[1]);
        sig[1] = E / (1 - nu * nu) * (eps[1] + nu * eps[0]);
        sig[2] = 0, sig[3] = 2 * mu * eps[3], sig[4] = sig[5] = 0;
        eps[2] = -nu / E * (sig[0] + sig[1]);
        return;
    }
    double tr = eps[0] + eps[1] + eps[2];
    for (int k = 0; k < 3; k++)
        sig[k] = lam * tr + 2 * mu * eps[k];
    for (int k = 3; k < 6; k++)
        sig[k] = 2 * mu * eps[k];
    if (an == HK_PLANE_STRAIN) sig[2] = nu * (sig[0] + sig[1]); /* checks the same thing */
}

static double maxdiff6(const double *a, const double *b)
{
    double d = 0;
    for (int k = 0; k < 6; k++)
        d = fmax(d, fabs(a[k] - b[k]));
    return d;
}

/* u = G x + c on a distorted mesh of type t: every nodal and element value is exact. */
static void constant_strain_case(int t, hk_analysis an)
{
    const hk_elref *el = hk_elref_get(t);
    int dim = el->dim;
    const double L[3] = {2.0, 1.0, 1.5};
    hk_mesh m;
    make_mesh(t, 3, 2, 2, L, 0.15, 1, &m);
    double G[3][3] = {{1e-3, 4e-4, -2e-4}, {-1e-4, -5e-4, 3e-4}, {2.5e-4, 1e-4, 7e-4}};
    if (dim == 2) G[0][2] = G[1][2] = G[2][0] = G[2][1] = G[2][2] = 0;
    const double c[3] = {0.01, -0.02, 0.005};
    hk_system s;
    make_system(&m, &s);
    double *u = malloc(s.ndof * sizeof(double));
    for (int64_t i = 0; i < m.nnodes; i++)
        for (int a = 0; a < dim; a++) {
            double v = c[a];
            for (int b = 0; b < dim; b++)
                v += G[a][b] * m.coords[3 * i + b];
            u[dim * i + a] = v;
        }
    /* every boundary node prescribed: postproc takes their values from u_fixed */
    for (int b = 0; b < m.nboundaries; b++)
        for (int64_t j = 0; j < m.boundaries[b].nnodes; j++)
            for (int a = 0; a < dim; a++) {
                int64_t d = (int64_t)dim * m.boundaries[b].nodes[j] + a;
                if (!s.fixed[d]) s.fixed[d] = 1, s.u_fixed[d] = u[d], u[d] = 0;
            }
    hk_material mat = {.name = "steel", .E = 210e3, .nu = 0.3, .rho = 7.85e-9};
    hk_problem p = {.mesh = &m, .analysis = an, .thickness = 2.0, .materials = &mat};
    hk_fields f;
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
    double eps[6], sig[6], pr[3];
    closed_form((const double(*)[3])G, mat.E, mat.nu, an, eps, sig);
    hk_pp_principal(sig, pr);
    double vm = hk_pp_von_mises(sig);
    double de = 0, ds = 0, dv = 0, dp = 0, dce = 0, dcv = 0, du = 0;
    for (int64_t i = 0; i < m.nnodes; i++) {
        de = fmax(de, maxdiff6(f.strain + 6 * i, eps));
        ds = fmax(ds, maxdiff6(f.stress + 6 * i, sig));
        dv = fmax(dv, fabs(f.von_mises[i] - vm));
        for (int k = 0; k < 3; k++)
            dp = fmax(dp, fabs(f.principal[3 * i + k] - pr[k]));
        for (int a = 0; a < 3; a++) {
            double v = a < dim ? c[a] : 0;
            for (int b = 0; b < dim; b++)
                v += G[a][b] * m.coords[3 * i + b];
            du = fmax(du, fabs(f.u[3 * i + a] - v));
        }
    }
    for (int64_t e = 0; e < m.cells.n; e++) {
        dce = fmax(dce, maxdiff6(f.cell_stress + 6 * e, sig));
        dcv = fmax(dcv, fabs(f.cell_von_mises[e] - vm));
    }
    double smax = fabs(sig[0]) + fabs(sig[1]) + fabs(sig[3]);
    CU_ASSERT(du < 1e-15);
    CU_ASSERT(de < 1e-12 * 1e-3);
    CU_ASSERT(ds < 1e-11 * smax);
    CU_ASSERT(dv < 1e-11 * smax);
    CU_ASSERT(dp < 1e-11 * smax);
    CU_ASSERT(dce < 1e-11 * smax);
    CU_ASSERT(dcv < 1e-11 * smax);
    CU_ASSERT_DOUBLE_EQUAL(f.max_von_mises, vm, 1e-11 * smax);
    if (!(ds < 1e-11 * smax && de < 1e-15 && dce < 1e-11 * smax))
        printf("\n  %s analysis %d: strain %g stress %g cell %g vm %g\n", el->name, (int)an, de, ds,
               dce, dv);
    /* a constant stress has no interior residual, so all of f_int sits on the held boundary:
     * the reactions balance, and their work sum r.u equals the strain energy sigma:eps V
     * (boundary nodes are not perturbed, so V is the box's) */
    double rsum[3] = {0, 0, 0}, work = 0;
    for (int64_t i = 0; i < m.nnodes; i++)
        for (int a = 0; a < 3; a++) {
            rsum[a] += f.reaction[3 * i + a];
            work += f.reaction[3 * i + a] * f.u[3 * i + a];
        }
    double V = dim == 3 ? L[0] * L[1] * L[2] : L[0] * L[1] * p.thickness, energy = 0;
    for (int k = 0; k < 6; k++)
        energy += (k < 3 ? 1 : 2) * sig[k] * eps[k] * V;
    for (int a = 0; a < dim; a++)
        CU_ASSERT_DOUBLE_EQUAL(rsum[a], 0, 1e-10 * smax);
    CU_ASSERT_DOUBLE_EQUAL(work, energy, 1e-10 * energy);
    hk_fields_free(&f);
    CU_ASSERT_PTR_NULL(f.stress);
    free(u);
    free_system(&s);
    free_mesh(&m);
}

static void test_constant_strain_2d(void)
{
    for (int it = 0; it < NTYPES; it++)
        if (hk_elref_get(all_types[it])->dim == 2) {
            constant_strain_case(all_types[it], HK_PLANE_STRESS);
            constant_strain_case(all_types[it], HK_PLANE_STRAIN);
        }
}

static void test_constant_strain_3d(void)
{
    for (int it = 0; it < NTYPES; it++)
        if (hk_elref_get(all_types[it])->dim == 3) constant_strain_case(all_types[it], HK_SOLID);
}

/* ---- reactions of a bar ---------------------------------------------------------------- */

/* Bar along x, left end held (ux = 0), right end pulled to ux = eps L, lateral contraction
 * free: the exact uniaxial field. Reaction sums: -+ sigma_xx A, with sigma_xx = E eps (3D,
 * plane stress) or E/(1-nu^2) eps (plane strain, ezz = 0). */
static void bar_case(int t, hk_analysis an)
{
    const hk_elref *el = hk_elref_get(t);
    int dim = el->dim;
    const double L[3] = {4.0, 0.5, 0.8}, eps = 1e-3, E = 70e3, nu = 0.33, thick = 0.25;
    hk_mesh m;
    make_mesh(t, 4, 2, 2, L, 0.1, 1, &m);
    hk_system s;
    make_system(&m, &s);
    double lat = an == HK_PLANE_STRAIN ? -nu / (1 - nu) * eps : -nu * eps;
    double sxx = an == HK_PLANE_STRAIN ? E / (1 - nu * nu) * eps : E * eps;
    double *u = malloc(s.ndof * sizeof(double));
    for (int64_t i = 0; i < m.nnodes; i++) {
        u[dim * i] = eps * m.coords[3 * i];
        for (int a = 1; a < dim; a++)
            u[dim * i + a] = lat * m.coords[3 * i + a];
    }
    hk_support sup[2] = {{.boundary = 0, .mask = 1u},
                         {.boundary = 1, .mask = 1u, .value = {eps * L[0], 0, 0}}};
    for (int k = 0; k < 2; k++) {
        const hk_group *g = &m.boundaries[sup[k].boundary];
        for (int64_t j = 0; j < g->nnodes; j++) {
            int64_t d = (int64_t)dim * g->nodes[j];
            s.fixed[d] = 1, s.u_fixed[d] = sup[k].value[0];
        }
    }
    /* a load on a held dof: the reaction there is f_int - f_ext */
    int32_t n0 = m.boundaries[0].nodes[0];
    s.f_ext[(int64_t)dim * n0] = 5.0;
    hk_material mat = {.name = "alu", .E = E, .nu = nu, .rho = 0};
    hk_problem p = {.mesh = &m,
                    .analysis = an,
                    .thickness = thick,
                    .materials = &mat,
                    .nsupports = 2,
                    .supports = sup};
    hk_fields f;
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
    double A = dim == 3 ? L[1] * L[2] : L[1] * thick;
    CU_ASSERT_EQUAL(f.nsupports, 2);
    CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[0][0], -sxx * A - 5.0, 1e-10 * sxx * A);
    CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[1][0], sxx * A, 1e-10 * sxx * A);
    /* components outside the mask are not summed; free dofs carry no reaction */
    CU_ASSERT_EQUAL(f.support_reaction[0][1], 0);
    double rfree = 0;
    for (int64_t i = 0; i < m.nnodes; i++)
        for (int a = 1; a < 3; a++)
            rfree = fmax(rfree, fabs(f.reaction[3 * i + a]));
    CU_ASSERT_EQUAL(rfree, 0);
    double umax =
        sqrt(pow(eps * L[0], 2) + pow(lat * L[1], 2) + (dim == 3 ? pow(lat * L[2], 2) : 0));
    CU_ASSERT_DOUBLE_EQUAL(f.max_u, umax, 1e-15);
    if (fabs(f.support_reaction[1][0] - sxx * A) > 1e-10 * sxx * A)
        printf("\n  bar %s: reaction %.15g expected %.15g\n", el->name, f.support_reaction[1][0],
               sxx * A);
    hk_fields_free(&f);
    free(u);
    free_system(&s);
    free_mesh(&m);
}

static void test_bar_reactions(void)
{
    for (int it = 0; it < NTYPES; it++) {
        int t = all_types[it];
        if (hk_elref_get(t)->dim == 2) {
            bar_case(t, HK_PLANE_STRESS);
            bar_case(t, HK_PLANE_STRAIN);
        } else {
            bar_case(t, HK_SOLID);
        }
    }
}

/* ---- errors ------------------------------------------------------------------------------ */

static void test_errors(void)
{
    const double L[3] = {1, 1, 1};
    hk_mesh m;
    make_mesh(HK_EL_QUAD4, 2, 2, 0, L, 0, 0, &m);
    hk_system s;
    make_system(&m, &s);
    double *u = calloc(s.ndof, sizeof(double));
    hk_material mat = {.name = "steel", .E = 210e3, .nu = 0.3, .rho = 0};
    hk_problem p = {.mesh = &m, .analysis = HK_PLANE_STRESS, .thickness = 1, .materials = &mat};
    hk_fields f;
    /* inverted element: its id in the message */
    int32_t *nd = m.cells.nodes + m.cells.ptr[2];
    int32_t tmp = nd[1];
    nd[1] = nd[3], nd[3] = tmp;
    CU_ASSERT_EQUAL(hk_postproc(&p, &s, u, &f), HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "element 3 "));
    CU_ASSERT_PTR_NULL(f.stress);
    nd[3] = nd[1], nd[1] = tmp;
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
    hk_fields_free(&f);
    /* bad material, wrong analysis, missing system, NaN displacement */
    mat.nu = 0.5;
    CU_ASSERT_EQUAL(hk_postproc(&p, &s, u, &f), HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "Poisson"));
    mat.nu = 0.3;
    p.analysis = HK_SOLID;
    CU_ASSERT_EQUAL(hk_postproc(&p, &s, u, &f), HK_ERR_MODEL);
    p.analysis = HK_PLANE_STRAIN;
    CU_ASSERT_EQUAL(hk_postproc(&p, NULL, u, &f), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "hk_system"));
    u[5] = NAN;
    CU_ASSERT_EQUAL(hk_postproc(&p, &s, u, &f), HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "node 2"));
    /* unwritable path */
    CU_ASSERT_EQUAL(hk_vtu_write("/nonexistent-dir/x.vtu", &m, NULL, NULL), HK_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "/nonexistent-dir/x.vtu"));
    free(u);
    free_system(&s);
    free_mesh(&m);
}

/* A quarter-point quad8 (crack-tip element: mid-side node at a quarter of the edge) has
 * det J = 0 at its corner node but is fine at every Gauss point. Postproc must accept it
 * (as the assembly does) and still give exact values for a linear field. */
static void test_quarter_point_element(void)
{
    hk_mesh m;
    memset(&m, 0, sizeof m);
    const double *ref = hk_eltype_ref_coords(HK_EL_QUAD8);
    double X[8][3];
    for (int a = 0; a < 8; a++)
        for (int d = 0; d < 3; d++)
            X[a][d] = d < 2 ? ref[3 * a + d] + 1 : 0; /* [0,2]^2 */
    X[4][0] = 0.5;                                    /* node 4 on edge 0-1: quarter point */
    X[7][1] = 0.5;                                    /* node 7 on edge 3-0: quarter point */
    int32_t nodes[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int64_t ptr[2] = {0, 8}, tag = 1;
    uint8_t type = HK_EL_QUAD8;
    int32_t reg = 0;
    m.dim = 2, m.nnodes = 8, m.coords = &X[0][0];
    m.cells = (hk_elems){1, &type, ptr, nodes, &tag};
    m.cell_region = &reg;
    hk_system s;
    make_system(&m, &s);
    double u[16];
    for (int a = 0; a < 8; a++) {
        u[2 * a] = 1e-3 * X[a][0] + 2e-4 * X[a][1];
        u[2 * a + 1] = -3e-4 * X[a][1];
    }
    hk_material mat = {.name = "steel", .E = 200e3, .nu = 0.3, .rho = 0};
    hk_problem p = {.mesh = &m, .analysis = HK_PLANE_STRESS, .materials = &mat};
    hk_fields f;
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
    double G[3][3] = {{1e-3, 2e-4, 0}, {0, -3e-4, 0}, {0, 0, 0}}, eps[6], sig[6];
    closed_form((const double(*)[3])G, mat.E, mat.nu, HK_PLANE_STRESS, eps, sig);
    double d = 0;
    for (int a = 0; a < 8; a++)
        d = fmax(d, maxdiff6(f.stress + 6 * a, sig));
    CU_ASSERT(d < 1e-9);
    CU_ASSERT(maxdiff6(f.cell_stress, sig) < 1e-9);
    hk_fields_free(&f);
    free_system(&s);
}

/* ---- VTK read-back -------------------------------------------------------------------- */

static const char *py_reader =
    "import sys\n"
    "from vtkmodules.vtkIOXML import vtkXMLUnstructuredGridReader\n"
    "r = vtkXMLUnstructuredGridReader()\n"
    "r.SetFileName(sys.argv[1])\n"
    "r.Update()\n"
    "if r.GetErrorCode() != 0: print('ERR', r.GetErrorCode())\n"
    "g = r.GetOutput()\n"
    "print('NP', g.GetNumberOfPoints())\n"
    "print('NC', g.GetNumberOfCells())\n"
    "pd = g.GetPointData()\n"
    "print('ACTIVE', pd.GetScalars().GetName() if pd.GetScalars() else None,\n"
    "      pd.GetVectors().GetName() if pd.GetVectors() else None)\n"
    "st = pd.GetArray('stress')\n"
    "if st: print('COMPNAMES', ' '.join(str(st.GetComponentName(c)) for c in range(6)))\n"
    "for kind, dat in (('PA', g.GetPointData()), ('CA', g.GetCellData())):\n"
    "    for i in range(dat.GetNumberOfArrays()):\n"
    "        a = dat.GetArray(i)\n"
    "        print(kind, a.GetName(), a.GetNumberOfComponents(), a.GetNumberOfTuples())\n"
    "# requested values: name:index pairs\n"
    "for req in sys.argv[2:]:\n"
    "    if req == 'order':\n"
    "        # every cell's points against VTK's parametric coordinates of its type\n"
    "        for c in range(g.GetNumberOfCells()):\n"
    "            cell = g.GetCell(c)\n"
    "            pc = cell.GetParametricCoords()\n"
    "            pts = cell.GetPoints()\n"
    "            dev = 0.0\n"
    "            for k in range(cell.GetNumberOfPoints()):\n"
    "                x = pts.GetPoint(k)\n"
    "                for d in range(3): dev = max(dev, abs(x[d] - pc[3*k+d]))\n"
    "            print('ORD', cell.GetCellType(), cell.GetNumberOfPoints(), '%.3g' % dev)\n"
    "        continue\n"
    "    name, idx = req.split(':')\n"
    "    idx = int(idx)\n"
    "    a = g.GetPointData().GetArray(name) or g.GetCellData().GetArray(name)\n"
    "    if name == 'Points': t = g.GetPoint(idx)\n"
    "    elif name == 'types': t = (g.GetCellType(idx),)\n"
    "    elif a is None: print('MISSING', name); continue\n"
    "    else: t = a.GetTuple(idx)\n"
    "    print('V', name, idx, ' '.join('%.17g' % v for v in t))\n";

static int have_vtk = -1;

/* Whether /usr/bin/python3 can import VTK's XML reader (once; prints a skip note if not). */
static int vtk_available(void)
{
    if (have_vtk < 0) {
        have_vtk = access("/usr/bin/python3", X_OK) == 0 &&
                   system("/usr/bin/python3 -c 'import vtkmodules.vtkIOXML' >/dev/null 2>&1") == 0;
        if (!have_vtk)
            printf("\n  note: /usr/bin/python3 with vtk not found; VTK read-back checks skipped "
                   "(install python3-vtk9)\n");
    }
    return have_vtk;
}

/* Run the reader on file with the requests; returns the output text (static) or NULL. */
static const char *vtk_read(const char *file, const char *requests)
{
    static char out[1 << 16];
    char script[512], res[512], cmd[2048];
    snprintf(script, sizeof script, "%s/read_vtu.py", hk_test_tmpdir());
    snprintf(res, sizeof res, "%s/read_vtu.out", hk_test_tmpdir());
    FILE *fp = fopen(script, "w");
    if (!fp) return NULL;
    fputs(py_reader, fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s %s > %s 2>&1", script, file, requests, res);
    int rc = system(cmd);
    fp = fopen(res, "r");
    if (!fp) return NULL;
    size_t n = fread(out, 1, sizeof out - 1, fp);
    out[n] = '\0';
    fclose(fp);
    if (rc != 0) {
        printf("\n  VTK reader failed on %s:\n%s\n", file, out);
        return NULL;
    }
    return out;
}

/* The values printed for "V name idx": fills v, returns their count (0: absent). */
static int vtk_value(const char *out, const char *name, long idx, double *v)
{
    char key[128];
    snprintf(key, sizeof key, "V %s %ld ", name, idx);
    const char *p = strstr(out, key);
    if (!p) return 0;
    p += strlen(key);
    int n = 0;
    char *end;
    while (n < 9) {
        double x = strtod(p, &end);
        if (end == p) break;
        v[n++] = x, p = end;
        if (*p == '\n') break;
    }
    return n;
}

static const char *const compressor_names[] = {NULL, "vtkZLibDataCompressor",
                                               "vtkLZ4DataCompressor"};

/* Write constant-strain fields in one mode and check what VTK reads back: every array, its
 * size and components, and values equal to the fields (to the last bit, or rounded to float
 * for Float32 fields). */
static void vtu_roundtrip(hk_vtu_options opt, int t, int nx)
{
    const hk_elref *el = hk_elref_get(t);
    const double L[3] = {2.0, 1.0, 1.5};
    const int f32 = opt.float32;
    hk_mesh m;
    make_mesh(t, nx, nx, nx, L, 0.1, 0, &m);
    /* three regions (same material) so the region array has distinct values */
    m.nregions = 3;
    m.regions = realloc(m.regions, 3 * sizeof(hk_group));
    memset(m.regions + 1, 0, 2 * sizeof(hk_group));
    for (int64_t e = 0; e < m.cells.n; e++)
        m.cell_region[e] = (int32_t)(e % 3);
    hk_system s;
    make_system(&m, &s);
    int dim = el->dim;
    double *u = malloc(s.ndof * sizeof(double));
    for (int64_t i = 0; i < m.nnodes; i++)
        for (int a = 0; a < dim; a++)
            u[dim * i + a] = 1e-3 * (a + 1) * m.coords[3 * i] + 1e-4 * a;
    s.fixed[0] = 1, s.u_fixed[0] = u[0];
    hk_material mat[3] = {{.name = "steel", .E = 200e3, .nu = 0.25, .rho = 0},
                          {.name = "steel", .E = 200e3, .nu = 0.25, .rho = 0},
                          {.name = "steel", .E = 200e3, .nu = 0.25, .rho = 0}};
    hk_problem p = {.mesh = &m,
                    .analysis = dim == 3 ? HK_SOLID : HK_PLANE_STRESS,
                    .thickness = 1,
                    .materials = mat};
    hk_fields f;
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
    char path[512];
    snprintf(path, sizeof path, "%s/rt_%s_%d%d%d.vtu", hk_test_tmpdir(), el->name,
             (int)opt.compression, opt.ascii, f32);
    HK_ASSERT_OK(hk_vtu_write(path, &m, &f, &opt));
    /* the header says what it is (ascii: the arrays are inline, read far enough) */
    FILE *fp = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    static char head[1 << 20];
    size_t nh = fread(head, 1, sizeof head - 1, fp);
    head[nh] = 0;
    fclose(fp);
    CU_ASSERT_PTR_NOT_NULL(strstr(head, "header_type=\"UInt64\""));
    for (int c = 1; c < 3; c++)
        CU_ASSERT_EQUAL(strstr(head, compressor_names[c]) != NULL, (int)opt.compression == c);
    CU_ASSERT_EQUAL(strstr(head, "format=\"ascii\"") != NULL, opt.ascii);
    CU_ASSERT_EQUAL(strstr(head, "encoding=\"raw\"") != NULL, !opt.ascii);
    CU_ASSERT_EQUAL(strstr(head, "type=\"Float32\" Name=\"stress\"") != NULL, f32);
    CU_ASSERT_PTR_NOT_NULL(strstr(head, "type=\"Float64\" Name=\"Points\""));
    if (vtk_available()) {
        int64_t lastn = m.nnodes - 1, laste = m.cells.n - 1, mid = m.nnodes / 2;
        char req[1024];
        snprintf(req, sizeof req,
                 "displacement:%lld stress:%lld strain:%lld von_mises:%lld "
                 "principal_stress:%lld reaction:0 Points:%lld element_stress:%lld "
                 "element_von_mises:%lld region:%lld types:0",
                 (long long)lastn, (long long)mid, (long long)mid, (long long)lastn, (long long)mid,
                 (long long)lastn, (long long)laste, (long long)laste, (long long)laste);
        const char *out = vtk_read(path, req);
        CU_ASSERT_PTR_NOT_NULL_FATAL(out);
        long np = -1, nc = -1;
        const char *q = strstr(out, "NP ");
        if (q) np = atol(q + 3);
        q = strstr(out, "NC ");
        if (q) nc = atol(q + 3);
        CU_ASSERT_EQUAL(np, (long)m.nnodes);
        CU_ASSERT_EQUAL(nc, (long)m.cells.n);
        CU_ASSERT_PTR_NULL(strstr(out, "ERR"));
        CU_ASSERT_PTR_NULL(strstr(out, "rror"));
        /* ParaView colours by von_mises and warps by displacement without choosing */
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "ACTIVE von_mises displacement"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "COMPNAMES xx yy zz xy yz xz"));
        char line[128];
        static const char *pa[] = {"displacement 3", "stress 6",           "strain 6",
                                   "von_mises 1",    "principal_stress 3", "reaction 3"};
        for (int k = 0; k < 6; k++) {
            snprintf(line, sizeof line, "PA %s %lld", pa[k], (long long)m.nnodes);
            CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
        }
        static const char *ca[] = {"region 1", "element_stress 6", "element_von_mises 1"};
        for (int k = 0; k < 3; k++) {
            snprintf(line, sizeof line, "CA %s %lld", ca[k], (long long)m.cells.n);
            CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
        }
        /* a field value as written: itself, or rounded to float */
#define AS_WRITTEN(x) (f32 ? (double)(float)(x) : (x))
        double v[9];
        CU_ASSERT_EQUAL(vtk_value(out, "displacement", lastn, v), 3);
        for (int a = 0; a < 3; a++)
            CU_ASSERT_EQUAL(v[a], AS_WRITTEN(f.u[3 * lastn + a]));
        CU_ASSERT_EQUAL(vtk_value(out, "stress", mid, v), 6);
        for (int k = 0; k < 6; k++)
            CU_ASSERT_EQUAL(v[k], AS_WRITTEN(f.stress[6 * mid + k]));
        /* and against the closed form: u = (1e-3 x, 2e-3 x, 3e-3 x): exx = 1e-3 */
        CU_ASSERT_DOUBLE_EQUAL(v[dim == 3 ? 4 : 2], 0, 1e-9);
        CU_ASSERT_EQUAL(vtk_value(out, "strain", mid, v), 6);
        CU_ASSERT_DOUBLE_EQUAL(v[0], 1e-3, f32 ? 1e-10 : 1e-15);
        CU_ASSERT_DOUBLE_EQUAL(v[3], 1e-3, f32 ? 1e-10 : 1e-15);
        CU_ASSERT_EQUAL(vtk_value(out, "von_mises", lastn, v), 1);
        CU_ASSERT_EQUAL(v[0], AS_WRITTEN(f.von_mises[lastn]));
        CU_ASSERT_EQUAL(vtk_value(out, "principal_stress", mid, v), 3);
        for (int k = 0; k < 3; k++)
            CU_ASSERT_EQUAL(v[k], AS_WRITTEN(f.principal[3 * mid + k]));
        CU_ASSERT_EQUAL(vtk_value(out, "reaction", 0, v), 3);
        for (int k = 0; k < 3; k++)
            CU_ASSERT_EQUAL(v[k], AS_WRITTEN(f.reaction[k]));
        CU_ASSERT_EQUAL(vtk_value(out, "Points", lastn, v), 3); /* always Float64 */
        for (int k = 0; k < 3; k++)
            CU_ASSERT_EQUAL(v[k], m.coords[3 * lastn + k]);
        CU_ASSERT_EQUAL(vtk_value(out, "element_stress", laste, v), 6);
        for (int k = 0; k < 6; k++)
            CU_ASSERT_EQUAL(v[k], AS_WRITTEN(f.cell_stress[6 * laste + k]));
        CU_ASSERT_EQUAL(vtk_value(out, "element_von_mises", laste, v), 1);
        CU_ASSERT_EQUAL(v[0], AS_WRITTEN(f.cell_von_mises[laste]));
#undef AS_WRITTEN
        CU_ASSERT_EQUAL(vtk_value(out, "region", laste, v), 1);
        CU_ASSERT_EQUAL(v[0], m.cell_region[laste]);
        CU_ASSERT_EQUAL(vtk_value(out, "types", 0, v), 1);
        CU_ASSERT_EQUAL(v[0], hk_eltype_get(t)->vtk_type);
        if (!strstr(out, "NP ")) printf("\n  reader output:\n%s\n", out);
    }
    hk_fields_free(&f);
    free(u);
    free_system(&s);
    free_mesh(&m);
}

static void test_vtu_raw(void)
{
    hk_vtu_options o = {0};
    vtu_roundtrip(o, HK_EL_HEX20, 2);
    vtu_roundtrip(o, HK_EL_TRI6, 3);
    vtu_roundtrip(o, HK_EL_HEX8, 12); /* arrays of several pwrite pieces */
}

static void test_vtu_zlib(void)
{
    /* 12^3 hex8: point arrays of ~100-500 KB, several 64 KiB blocks */
    hk_vtu_options o = {.compression = HK_VTU_ZLIB};
    vtu_roundtrip(o, HK_EL_HEX8, 12);
    vtu_roundtrip(o, HK_EL_QUAD9, 2);
    o.level = 9;
    vtu_roundtrip(o, HK_EL_TET10, 3);
}

static void test_vtu_ascii(void)
{
    hk_vtu_options o = {.ascii = 1};
    vtu_roundtrip(o, HK_EL_TET10, 2);
    o.float32 = 1;
    vtu_roundtrip(o, HK_EL_QUAD8, 2);
}

/* Every compression (lz4 where built) with Float64 and Float32 fields, read back by VTK;
 * lz4 without it in the build is refused with the fix. */
static void test_vtu_combinations(void)
{
    for (int c = HK_VTU_NONE; c <= HK_VTU_LZ4; c++)
        for (int f32 = 0; f32 < 2; f32++) {
            hk_vtu_options o = {.compression = (hk_vtu_compression)c, .float32 = f32};
            if (c == HK_VTU_LZ4 && !hk_vtu_have_lz4()) {
                const double L[3] = {1, 1, 1};
                hk_mesh m;
                make_mesh(HK_EL_QUAD4, 2, 2, 0, L, 0, 0, &m);
                char path[512];
                snprintf(path, sizeof path, "%s/nolz4.vtu", hk_test_tmpdir());
                CU_ASSERT_EQUAL(hk_vtu_write(path, &m, NULL, &o), HK_ERR_NOT_BUILT);
                CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "liblz4-dev"));
                CU_ASSERT(access(path, F_OK) != 0);
                free_mesh(&m);
                if (!f32) printf("\n  note: no LZ4 in this build; lz4 read-back skipped ");
                continue;
            }
            vtu_roundtrip(o, HK_EL_HEX8, 12);
            vtu_roundtrip(o, HK_EL_TRI6, 3);
        }
    /* a zlib level outside 1..9 */
    const double L[3] = {1, 1, 1};
    hk_mesh m;
    make_mesh(HK_EL_QUAD4, 2, 2, 0, L, 0, 0, &m);
    hk_vtu_options o = {.compression = HK_VTU_ZLIB, .level = 10};
    char path[512];
    snprintf(path, sizeof path, "%s/never.vtu", hk_test_tmpdir());
    CU_ASSERT_EQUAL(hk_vtu_write(path, &m, NULL, &o), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "zlib level 10 is outside 1..9"));
    free_mesh(&m);
}

/* One cell of each type on its reference geometry (VTK's parametric box: hexes/quads mapped
 * from [-1,1] to [0,1]): after the Gmsh -> VTK permutation every point must sit on VTK's own
 * parametric coordinate of that node. */
static void test_vtk_node_order(void)
{
    /* every element type plus the two the writer handles without a kernel */
    int types[NTYPES + 2];
    for (int it = 0; it < NTYPES; it++)
        types[it] = all_types[it];
    types[NTYPES] = HK_EL_WEDGE6, types[NTYPES + 1] = HK_EL_PYR5;
    const int nt = NTYPES + 2;
    hk_mesh m;
    memset(&m, 0, sizeof m);
    int64_t ntot = 0;
    for (int it = 0; it < nt; it++)
        ntot += hk_eltype_get(types[it])->nnodes;
    m.dim = 3;
    m.coords = malloc(3 * ntot * sizeof(double));
    m.cells.type = malloc(nt);
    m.cells.ptr = calloc(nt + 1, sizeof(int64_t));
    m.cells.nodes = malloc(ntot * sizeof(int32_t));
    m.cells.tag = malloc(nt * sizeof(int64_t));
    for (int it = 0; it < nt; it++) {
        int t = types[it];
        const hk_eltype_info *info = hk_eltype_get(t);
        const double *ref = hk_eltype_ref_coords(t);
        for (int a = 0; a < info->nnodes; a++) {
            int64_t n = m.nnodes++;
            for (int d = 0; d < 3; d++) {
                /* Gmsh reference -> VTK parametric box: [-1,1] directions to [0,1] */
                int unit = t == HK_EL_TRI3 || t == HK_EL_TRI6 || t == HK_EL_TET4 ||
                           t == HK_EL_TET10 || (t == HK_EL_WEDGE6 && d < 2) ||
                           (t == HK_EL_PYR5 && d == 2);
                m.coords[3 * n + d] = d >= info->dim ? 0
                                      : unit         ? ref[3 * a + d]
                                                     : (ref[3 * a + d] + 1) / 2;
            }
            /* VTK's pyramid puts the apex over node 0 in parametric space */
            if (t == HK_EL_PYR5 && a == 4) m.coords[3 * n] = m.coords[3 * n + 1] = 0;
            m.cells.nodes[m.cells.ptr[it] + a] = (int32_t)n;
        }
        m.cells.ptr[it + 1] = m.cells.ptr[it] + info->nnodes;
        m.cells.type[it] = (uint8_t)t;
        m.cells.tag[it] = it + 1;
    }
    m.cells.n = nt;
    char path[512];
    snprintf(path, sizeof path, "%s/order.vtu", hk_test_tmpdir());
    HK_ASSERT_OK(hk_vtu_write(path, &m, NULL, NULL));
    if (vtk_available()) {
        const char *out = vtk_read(path, "order");
        CU_ASSERT_PTR_NOT_NULL_FATAL(out);
        int nord = 0;
        for (const char *q = strstr(out, "ORD "); q && nord < nt; q = strstr(q + 1, "ORD ")) {
            int type, nn;
            double dev;
            CU_ASSERT_EQUAL_FATAL(sscanf(q, "ORD %d %d %lg", &type, &nn, &dev), 3);
            const hk_eltype_info *info = hk_eltype_get(types[nord]);
            CU_ASSERT_EQUAL(type, info->vtk_type);
            CU_ASSERT_EQUAL(nn, info->nnodes);
            CU_ASSERT(dev < 1e-12);
            if (!(dev < 1e-12)) printf("\n  %s: VTK node order off by %g\n", info->name, dev);
            nord++;
        }
        CU_ASSERT_EQUAL(nord, nt);
    }
    free(m.coords);
    free(m.cells.type);
    free(m.cells.ptr);
    free(m.cells.nodes);
    free(m.cells.tag);
}

/* A .pvd of two load cases: valid XML listing both files; each file VTK-readable. */
static void test_pvd(void)
{
    const double L[3] = {1, 1, 1};
    hk_mesh m;
    make_mesh(HK_EL_QUAD4, 2, 2, 0, L, 0, 0, &m);
    char p1[512], p2[512], pvd[512];
    snprintf(p1, sizeof p1, "%s/case_a.vtu", hk_test_tmpdir());
    snprintf(p2, sizeof p2, "%s/case_b.vtu", hk_test_tmpdir());
    snprintf(pvd, sizeof pvd, "%s/cases.pvd", hk_test_tmpdir());
    HK_ASSERT_OK(hk_vtu_write(p1, &m, NULL, NULL));
    hk_vtu_options zo = {.compression = HK_VTU_ZLIB};
    HK_ASSERT_OK(hk_vtu_write(p2, &m, NULL, &zo));
    const char *files[2] = {"case_a.vtu", "case_b.vtu"}, *names[2] = {"gravity", "wind & snow"};
    HK_ASSERT_OK(hk_pvd_write(pvd, 2, files, names));
    FILE *fp = fopen(pvd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = 0;
    fclose(fp);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "type=\"Collection\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "timestep=\"1\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "file=\"case_b.vtu\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "wind &amp; snow")); /* escaped by the writer */
    if (vtk_available()) {
        /* parse the collection with Python's XML parser and read each file with VTK */
        char cmd[2048];
        snprintf(
            cmd, sizeof cmd,
            "cd %s && /usr/bin/python3 -c \"import xml.etree.ElementTree as ET\n"
            "from vtkmodules.vtkIOXML import vtkXMLUnstructuredGridReader\n"
            "ds = ET.parse('cases.pvd').getroot().find('Collection').findall('DataSet')\n"
            "assert [d.get('name') for d in ds] == ['gravity', 'wind & snow']\n"
            "for d in ds:\n"
            "    r = vtkXMLUnstructuredGridReader(); r.SetFileName(d.get('file')); r.Update()\n"
            "    assert r.GetOutput().GetNumberOfCells() == 4, d.get('file')\n"
            "\" > pvd.out 2>&1",
            hk_test_tmpdir());
        CU_ASSERT_EQUAL(system(cmd), 0);
    }
    free_mesh(&m);
}

/* ---- through the real chain: mesh generators and hk_assemble --------------------------- */

/* Jacobi-preconditioned CG on the assembled (eliminated, SPD) system, for small tests. */
static int small_cg(const hk_bcsr *K, const double *b, double *x, int64_t n)
{
    double *r = malloc(n * sizeof(double)), *z = malloc(n * sizeof(double));
    double *p = malloc(n * sizeof(double)), *q = malloc(n * sizeof(double));
    double *dinv = malloc(n * sizeof(double));
    int bs = K->bs;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++)
            if (K->colind[k] == i)
                for (int c = 0; c < bs; c++)
                    dinv[i * bs + c] = 1 / K->val[k * bs * bs + c * bs + c];
    double bn = 0, rz = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = 0, r[i] = b[i], z[i] = dinv[i] * r[i], p[i] = z[i];
        bn += b[i] * b[i], rz += r[i] * z[i];
    }
    int it, ok = 0;
    for (it = 0; it < 5000; it++) {
        double rn = 0;
        for (int64_t i = 0; i < n; i++)
            rn += r[i] * r[i];
        if (rn <= 1e-28 * bn) {
            ok = 1;
            break;
        }
        hk_bcsr_spmv(K, p, q);
        double pq = 0;
        for (int64_t i = 0; i < n; i++)
            pq += p[i] * q[i];
        double alpha = rz / pq, rz2 = 0;
        for (int64_t i = 0; i < n; i++) {
            x[i] += alpha * p[i], r[i] -= alpha * q[i];
            z[i] = dinv[i] * r[i], rz2 += r[i] * z[i];
        }
        for (int64_t i = 0; i < n; i++)
            p[i] = z[i] + rz2 / rz * p[i];
        rz = rz2;
    }
    free(r), free(z), free(p), free(q), free(dinv);
    return ok;
}

/* Bar pulled by a traction p on xmax/right, symmetry supports on the min faces: the exact
 * uniaxial field solves the assembled system; sigma_xx = p everywhere and the reaction on
 * the xmin support is -p A. */
static void chain_traction_case(int t, hk_analysis an)
{
    const hk_elref *el = hk_elref_get(t);
    int dim = el->dim;
    const double L[3] = {3.0, 1.0, 0.5}, pr = 12.5, E = 1000, nu = 0.25, thick = 0.2;
    hk_mesh m;
    memset(&m, 0, sizeof m);
    int err = dim == 2 ? hk_mesh_rectangle(L[0], L[1], 3, 2, t, &m)
                       : hk_mesh_box(L[0], L[1], L[2], 3, 2, 2, t, &m);
    HK_ASSERT_OK(err);
    const char *bn[3][2] = {{"left", "right"}, {"bottom", "top"}, {"", ""}};
    const char *bn3[3][2] = {{"xmin", "xmax"}, {"ymin", "ymax"}, {"zmin", "zmax"}};
    hk_support sup[3];
    for (int d = 0; d < dim; d++) {
        const char *name = dim == 2 ? bn[d][0] : bn3[d][0];
        sup[d] = (hk_support){.boundary = hk_mesh_find_boundary(&m, name), .mask = 1u << d};
        CU_ASSERT_FATAL(sup[d].boundary >= 0);
    }
    hk_load ld = {.kind = HK_LOAD_TRACTION,
                  .boundary = hk_mesh_find_boundary(&m, dim == 2 ? "right" : "xmax"),
                  .value = {pr, 0, 0}};
    CU_ASSERT_FATAL(ld.boundary >= 0);
    hk_material mat = {.name = "mat", .E = E, .nu = nu, .rho = 0};
    hk_problem p = {.mesh = &m,
                    .analysis = an,
                    .thickness = thick,
                    .materials = &mat,
                    .nloads = 1,
                    .loads = &ld,
                    .nsupports = dim,
                    .supports = sup};
    hk_system s;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    /* exact field; plane strain: E' = E/(1-nu^2), nu' = nu/(1-nu) */
    double Ep = an == HK_PLANE_STRAIN ? E / (1 - nu * nu) : E;
    double nup = an == HK_PLANE_STRAIN ? nu / (1 - nu) : nu;
    double *u = malloc(s.ndof * sizeof(double)), *Ku = malloc(s.ndof * sizeof(double));
    for (int64_t i = 0; i < m.nnodes; i++) {
        u[dim * i] = pr * m.coords[3 * i] / Ep;
        for (int c = 1; c < dim; c++)
            u[dim * i + c] = -nup * pr * m.coords[3 * i + c] / Ep;
    }
    /* it solves the assembled system (the convention hk_postproc relies on) */
    hk_bcsr_spmv(&s.K, u, Ku);
    CU_ASSERT(hk_test_reldiff(Ku, s.f, (long)s.ndof) < 1e-12);
    hk_fields f;
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
    double A = dim == 3 ? L[1] * L[2] : L[1] * thick, F = pr * A;
    CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[0][0], -F, 1e-10 * F);
    for (int d = 1; d < dim; d++)
        CU_ASSERT(fabs(f.support_reaction[d][d]) < 1e-10 * F);
    double dsig = 0;
    for (int64_t i = 0; i < m.nnodes; i++) {
        double ref[6] = {pr, 0, an == HK_PLANE_STRAIN ? nu * pr : 0, 0, 0, 0};
        dsig = fmax(dsig, maxdiff6(f.stress + 6 * i, ref));
    }
    CU_ASSERT(dsig < 1e-10 * pr);
    if (fabs(f.support_reaction[0][0] + F) > 1e-10 * F || dsig >= 1e-10 * pr)
        printf("\n  chain %s: reaction %.15g (expected %.15g), stress error %g\n", el->name,
               f.support_reaction[0][0], -F, dsig);
    hk_fields_free(&f);
    free(u);
    free(Ku);
    hk_system_free(&s);
    hk_mesh_free(&m);
}

static void test_chain_traction(void)
{
    chain_traction_case(HK_EL_QUAD4, HK_PLANE_STRESS);
    chain_traction_case(HK_EL_TRI6, HK_PLANE_STRAIN);
    chain_traction_case(HK_EL_HEX8, HK_SOLID);
    chain_traction_case(HK_EL_TET10, HK_SOLID);
}

/* A clamped block under its own weight, solved: the support carries the whole weight,
 * reaction = -rho g V (global equilibrium, exact for any mesh once the system is solved). */
static void test_chain_gravity(void)
{
    static const int types[] = {HK_EL_HEX20, HK_EL_TET4, HK_EL_QUAD8};
    for (int k = 0; k < 3; k++) {
        int t = types[k];
        int dim = hk_elref_get(t)->dim;
        const double L[3] = {2.0, 1.0, 1.0}, rho = 7.8e-9, g[3] = {3.0, 0, -9810};
        hk_mesh m;
        memset(&m, 0, sizeof m);
        HK_ASSERT_OK(dim == 2 ? hk_mesh_rectangle(L[0], L[1], 4, 2, t, &m)
                              : hk_mesh_box(L[0], L[1], L[2], 4, 2, 2, t, &m));
        hk_support sup = {.boundary = hk_mesh_find_boundary(&m, dim == 2 ? "left" : "xmin"),
                          .mask = 7u};
        CU_ASSERT_FATAL(sup.boundary >= 0);
        hk_material mat = {.name = "steel", .E = 210e3, .nu = 0.3, .rho = rho};
        hk_problem p = {.mesh = &m,
                        .analysis = dim == 2 ? HK_PLANE_STRESS : HK_SOLID,
                        .thickness = 0,
                        .materials = &mat,
                        .nsupports = 1,
                        .supports = &sup};
        double gg[3] = {g[0], dim == 2 ? g[2] : 0, dim == 2 ? 0 : g[2]};
        memcpy(p.gravity, gg, sizeof gg);
        hk_system s;
        HK_ASSERT_OK(hk_assemble(&p, &s));
        double *u = malloc(s.ndof * sizeof(double));
        CU_ASSERT_FATAL(small_cg(&s.K, s.f, u, s.ndof));
        hk_fields f;
        HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
        double V = dim == 3 ? L[0] * L[1] * L[2] : L[0] * L[1]; /* thickness 0 = 1 */
        for (int c = 0; c < dim; c++) {
            double W = rho * gg[c] * V, scale = rho * 9810 * V;
            CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[0][c], -W, 1e-9 * scale);
            if (fabs(f.support_reaction[0][c] + W) > 1e-9 * scale)
                printf("\n  gravity %s: reaction[%d] %.12g expected %.12g\n", hk_elref_get(t)->name,
                       c, f.support_reaction[0][c], -W);
        }
        CU_ASSERT(f.max_u > 0 && f.max_von_mises > 0);
        hk_fields_free(&f);
        free(u);
        hk_system_free(&s);
        hk_mesh_free(&m);
    }
}

/* Same digits for any thread count: fields and the compressed file. */
static int file_equal(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb) same = 0;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* Writes text to path (replacing it). */
static void put_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

/* Whether path holds exactly text. */
static int holds_text(const char *path, const char *text)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return !strcmp(buf, text);
}

/* Temporary files of early writes left in the test folder. */
static int part_files_left(void)
{
    int n = 0;
    DIR *d = opendir(hk_test_tmpdir());
    if (!d) return -1;
    for (struct dirent *de; (de = readdir(d));)
        n += strstr(de->d_name, ".part-") != NULL;
    closedir(d);
    return n;
}

/* The mesh's part written first by a thread of its own, the fields after (hk_vtu_early_*):
 * the same bytes as hk_vtu_write, with 1 and 2 threads, Float64 and Float32; other fields
 * than announced and another path give the plain file; an existing file is replaced only at
 * the end (cancel leaves it); a symbolic link is written through; compressed and ascii
 * output and HOOKE_OUTPUT_EARLY=0 do not start. */
static void test_vtu_early(void)
{
    const double L[3] = {1, 1, 1};
    hk_mesh m;
    /* 14^3 tet10: arrays of several 1 MiB pieces */
    make_mesh(HK_EL_TET10, 14, 14, 14, L, 0.1, 0, &m);
    m.nregions = 3;
    m.regions = realloc(m.regions, 3 * sizeof(hk_group));
    memset(m.regions + 1, 0, 2 * sizeof(hk_group));
    for (int64_t e = 0; e < m.cells.n; e++)
        m.cell_region[e] = (int32_t)(e % 3);
    hk_system s;
    make_system(&m, &s);
    double *u = malloc(s.ndof * sizeof(double));
    for (int64_t i = 0; i < s.ndof; i++)
        u[i] = 1e-3 * sin(0.37 * (double)i);
    s.fixed[0] = 1, s.u_fixed[0] = u[0];
    hk_material mat[3] = {{.name = "steel", .E = 210e3, .nu = 0.3},
                          {.name = "steel", .E = 210e3, .nu = 0.3},
                          {.name = "steel", .E = 210e3, .nu = 0.3}};
    hk_problem p = {.mesh = &m, .analysis = HK_SOLID, .materials = mat};
    hk_fields f;
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
    char ref[512], out[512], other[512], target[512], link[512];
    snprintf(ref, sizeof ref, "%s/early_ref.vtu", hk_test_tmpdir());
    snprintf(out, sizeof out, "%s/early.vtu", hk_test_tmpdir());
    snprintf(other, sizeof other, "%s/early_other.vtu", hk_test_tmpdir());
    snprintf(target, sizeof target, "%s/early_target.vtu", hk_test_tmpdir());
    snprintf(link, sizeof link, "%s/early_link.vtu", hk_test_tmpdir());
    const int nt = omp_get_max_threads();
    for (int f32 = 1; f32 >= 0; f32--) {
        const hk_vtu_options o = {.float32 = f32};
        omp_set_num_threads(1);
        HK_ASSERT_OK(hk_vtu_write(ref, &m, &f, &o));
        /* the fields' part filled ahead: not at all, 100 kB of it, all of it, and all of it
         * but stopped by finish wherever the thread is (no wait) */
        static const int64_t ahead[4] = {0, 100000, INT64_MAX, INT64_MAX};
        for (int k = 1; k <= 2; k++)
            for (int a = 0; a < 4; a++) {
                omp_set_num_threads(k);
                remove(out);
                hk_vtu_early *e = hk_vtu_early_start(out, &m, &f, &o, ahead[a]);
                CU_ASSERT_PTR_NOT_NULL_FATAL(e);
                if (a < 3) hk_vtu_early_wait(e);
                CU_ASSERT(access(out, F_OK) != 0); /* under its temporary name until the end */
                HK_ASSERT_OK(hk_vtu_early_finish(e, out, &f));
                const int same = file_equal(ref, out);
                CU_ASSERT(same);
                if (!same)
                    printf("\n  early write, float32 %d, %d threads, fill %d: other bytes\n", f32,
                           k, a);
            }
    }
    omp_set_num_threads(nt);
    /* ref is the Float64 file now; announced without strain: the whole file at the end */
    hk_fields layout = f;
    layout.strain = NULL;
    hk_vtu_early *e = hk_vtu_early_start(out, &m, &layout, NULL, INT64_MAX);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    HK_ASSERT_OK(hk_vtu_early_finish(e, out, &f));
    CU_ASSERT(file_equal(ref, out));
    /* an existing file is replaced at the end only; cancelled, it stays */
    put_text(out, "the old file");
    e = hk_vtu_early_start(out, &m, &f, NULL, INT64_MAX);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    hk_vtu_early_wait(e);
    CU_ASSERT(holds_text(out, "the old file"));
    HK_ASSERT_OK(hk_vtu_early_finish(e, out, &f));
    CU_ASSERT(file_equal(ref, out));
    put_text(out, "the old file");
    e = hk_vtu_early_start(out, &m, &f, NULL, INT64_MAX);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    hk_vtu_early_cancel(e);
    CU_ASSERT(holds_text(out, "the old file"));
    /* finished at another path: the file goes there, the announced one is untouched */
    remove(other);
    e = hk_vtu_early_start(out, &m, &f, NULL, INT64_MAX);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    HK_ASSERT_OK(hk_vtu_early_finish(e, other, &f));
    CU_ASSERT(file_equal(ref, other));
    CU_ASSERT(holds_text(out, "the old file"));
    CU_ASSERT_EQUAL(part_files_left(), 0);
    /* a symbolic link: no early start; hk_vtu_write writes through it, the link stays */
    put_text(target, "the old file");
    remove(link);
    CU_ASSERT_EQUAL_FATAL(symlink(target, link), 0);
    CU_ASSERT_PTR_NULL(hk_vtu_early_start(link, &m, &f, NULL, INT64_MAX));
    HK_ASSERT_OK(hk_vtu_write(link, &m, &f, NULL));
    struct stat st;
    CU_ASSERT(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CU_ASSERT(file_equal(ref, target));
    /* what it does not take: compression, ascii, the off switch */
    const hk_vtu_options zl = {.compression = HK_VTU_ZLIB}, as = {.ascii = 1};
    CU_ASSERT_PTR_NULL(hk_vtu_early_start(out, &m, &f, &zl, 0));
    CU_ASSERT_PTR_NULL(hk_vtu_early_start(out, &m, &f, &as, 0));
    setenv("HOOKE_OUTPUT_EARLY", "0", 1);
    CU_ASSERT_PTR_NULL(hk_vtu_early_start(out, &m, &f, NULL, INT64_MAX));
    unsetenv("HOOKE_OUTPUT_EARLY");
    CU_ASSERT_EQUAL(part_files_left(), 0);
    hk_fields_free(&f);
    free(u);
    free_system(&s);
    free_mesh(&m);
}

/* An n^3 tet10 cube (distorted), its system and a wavy displacement u (malloc'd). */
static void wavy_tet10(int n, hk_mesh *m, hk_system *s, double **u)
{
    const double L[3] = {1, 1, 1};
    make_mesh(HK_EL_TET10, n, n, n, L, 0.1, 0, m);
    make_system(m, s);
    *u = malloc(s->ndof * sizeof(double));
    for (int64_t i = 0; i < s->ndof; i++)
        (*u)[i] = 1e-3 * sin(0.37 * (double)i);
}

static void test_thread_independence(void)
{
    hk_mesh m;
    hk_system s;
    double *u;
    /* 16^3 tet10: point arrays of 0.3-1.7 MB, several compressed blocks and written pieces */
    wavy_tet10(16, &m, &s, &u);
    for (int64_t j = 0; j < m.boundaries[0].nnodes; j++)
        s.fixed[3 * m.boundaries[0].nodes[j]] = 1;
    hk_material mat = {.name = "steel", .E = 210e3, .nu = 0.3, .rho = 0};
    hk_support sup = {.boundary = 0, .mask = 1};
    hk_problem p = {
        .mesh = &m, .analysis = HK_SOLID, .materials = &mat, .nsupports = 1, .supports = &sup};
    hk_fields f1, f2;
    int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f1));
    omp_set_num_threads(3);
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f2));
    int64_t nn = m.nnodes;
    CU_ASSERT(memcmp(f1.stress, f2.stress, 6 * nn * sizeof(double)) == 0);
    CU_ASSERT(memcmp(f1.strain, f2.strain, 6 * nn * sizeof(double)) == 0);
    CU_ASSERT(memcmp(f1.principal, f2.principal, 3 * nn * sizeof(double)) == 0);
    CU_ASSERT(memcmp(f1.reaction, f2.reaction, 3 * nn * sizeof(double)) == 0);
    CU_ASSERT(memcmp(f1.cell_stress, f2.cell_stress, 6 * m.cells.n * sizeof(double)) == 0);
    CU_ASSERT(memcmp(f1.support_reaction, f2.support_reaction, 3 * sizeof(double)) == 0);
    CU_ASSERT(f1.max_von_mises == f2.max_von_mises && f1.max_u == f2.max_u);
    /* the file, byte for byte, with 1, 2 and 3 threads, in every format */
    for (int c = HK_VTU_NONE; c <= HK_VTU_LZ4; c++)
        for (int f32 = 0; f32 < 2; f32++) {
            if (c == HK_VTU_LZ4 && !hk_vtu_have_lz4()) continue;
            hk_vtu_options o = {.compression = (hk_vtu_compression)c, .float32 = f32};
            char p1[512], pk[512];
            snprintf(p1, sizeof p1, "%s/threads1.vtu", hk_test_tmpdir());
            snprintf(pk, sizeof pk, "%s/threadsk.vtu", hk_test_tmpdir());
            omp_set_num_threads(1);
            HK_ASSERT_OK(hk_vtu_write(p1, &m, &f1, &o));
            for (int k = 2; k <= 3; k++) {
                omp_set_num_threads(k);
                HK_ASSERT_OK(hk_vtu_write(pk, &m, &f1, &o));
                CU_ASSERT(file_equal(p1, pk));
                if (!file_equal(p1, pk))
                    printf("\n  compression %d float32 %d: %d threads wrote other bytes\n", c, f32,
                           k);
            }
        }
    omp_set_num_threads(nt);
    char p1[512];
    snprintf(p1, sizeof p1, "%s/threads1.vtu", hk_test_tmpdir());
    hk_fields_free(&f1);
    hk_fields_free(&f2);
    /* a cell type the writer cannot map gets one sentence with the element id */
    m.cells.type[4] = HK_EL_LINE3;
    CU_ASSERT_EQUAL(hk_vtu_write(p1, &m, NULL, NULL), HK_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "element 5 is a line3"));
    CU_ASSERT_EQUAL(hk_postproc(&p, &s, u, &f1), HK_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "element 5"));
    free(u);
    free_system(&s);
    free_mesh(&m);
}

/* The mesh of the cells with keep[e] set and the nodes they use, both in m's order, and f's
 * values on them: a distributed run's piece made as a copy (what hk_vtu_write_cells must
 * write without one). */
static void extract_piece(const hk_mesh *m, const hk_fields *f, const uint8_t *keep, hk_mesh *pm,
                          hk_fields *pf)
{
    int32_t *num = malloc((size_t)m->nnodes * sizeof *num);
    memset(pm, 0, sizeof *pm);
    memset(pf, 0, sizeof *pf);
    for (int64_t v = 0; v < m->nnodes; v++)
        num[v] = -1;
    int64_t nc = 0, nref = 0, nn = 0;
    for (int64_t e = 0; e < m->cells.n; e++)
        if (keep[e]) {
            nc++;
            for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++, nref++)
                num[m->cells.nodes[k]] = 0;
        }
    for (int64_t v = 0; v < m->nnodes; v++)
        if (num[v] == 0) num[v] = (int32_t)nn++;
    pm->dim = m->dim, pm->nnodes = nn, pm->cells.n = nc;
    pm->coords = malloc((size_t)(3 * nn + 1) * sizeof(double));
    pm->cells.type = malloc((size_t)nc + 1);
    pm->cells.ptr = malloc((size_t)(nc + 1) * sizeof(int64_t));
    pm->cells.nodes = malloc((size_t)(nref + 1) * sizeof(int32_t));
    pm->cell_region = malloc((size_t)(nc + 1) * sizeof(int32_t));
    pf->nnodes = nn, pf->ncells = nc;
    pf->u = malloc((size_t)(3 * nn + 1) * sizeof(double));
    pf->strain = malloc((size_t)(6 * nn + 1) * sizeof(double));
    pf->stress = malloc((size_t)(6 * nn + 1) * sizeof(double));
    pf->von_mises = malloc((size_t)(nn + 1) * sizeof(double));
    pf->principal = malloc((size_t)(3 * nn + 1) * sizeof(double));
    pf->reaction = malloc((size_t)(3 * nn + 1) * sizeof(double));
    pf->cell_stress = malloc((size_t)(6 * nc + 1) * sizeof(double));
    pf->cell_von_mises = malloc((size_t)(nc + 1) * sizeof(double));
    pm->cells.ptr[0] = 0;
    int64_t j = 0;
    for (int64_t e = 0; e < m->cells.n; e++) {
        if (!keep[e]) continue;
        pm->cells.type[j] = m->cells.type[e];
        pm->cell_region[j] = m->cell_region[e];
        int64_t q = pm->cells.ptr[j];
        for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++)
            pm->cells.nodes[q++] = num[m->cells.nodes[k]];
        pm->cells.ptr[j + 1] = q;
        memcpy(pf->cell_stress + 6 * j, f->cell_stress + 6 * e, 6 * sizeof(double));
        pf->cell_von_mises[j++] = f->cell_von_mises[e];
    }
    for (int64_t v = 0; v < m->nnodes; v++) {
        const int64_t i = num[v];
        if (i < 0) continue;
        memcpy(pm->coords + 3 * i, m->coords + 3 * v, 3 * sizeof(double));
        memcpy(pf->u + 3 * i, f->u + 3 * v, 3 * sizeof(double));
        memcpy(pf->strain + 6 * i, f->strain + 6 * v, 6 * sizeof(double));
        memcpy(pf->stress + 6 * i, f->stress + 6 * v, 6 * sizeof(double));
        pf->von_mises[i] = f->von_mises[v];
        memcpy(pf->principal + 3 * i, f->principal + 3 * v, 3 * sizeof(double));
        memcpy(pf->reaction + 3 * i, f->reaction + 3 * v, 3 * sizeof(double));
    }
    free(num);
}

/* A piece of a mesh written from the whole mesh and fields (hk_vtu_write_cells, a distributed
 * run's piece): the same bytes as hk_vtu_write of the piece made as a copy, with 1, 2 and 3
 * threads, in every format (none, zlib, lz4 x Float64, Float32; ascii), for cells and nodes
 * that are gathered (gaps, runs) and that are the mesh's first ones, and for no cells; and
 * written early (hk_vtu_early_start_cells), with and without filling ahead. */
static void test_vtu_cells(void)
{
    hk_mesh m;
    hk_system s;
    double *u;
    /* 14^3 tet10: point arrays of several 1 MiB pieces and 64 KiB blocks */
    wavy_tet10(14, &m, &s, &u);
    hk_material mat = {.name = "steel", .E = 210e3, .nu = 0.3};
    hk_problem p = {.mesh = &m, .analysis = HK_SOLID, .materials = &mat};
    hk_fields f;
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
    for (int64_t e = 0; e < m.cells.n; e++) /* regions that the gathering must keep apart */
        m.cell_region[e] = (int32_t)(e % 3);
    const int64_t ne = m.cells.n;
    uint8_t *keep = calloc((size_t)(ne > 0 ? ne : 1), 1);
    char ref[512], out[512];
    snprintf(ref, sizeof ref, "%s/piece_ref.vtu", hk_test_tmpdir());
    snprintf(out, sizeof out, "%s/piece.vtu", hk_test_tmpdir());
    const int nt = omp_get_max_threads();
    for (int kind = 0; kind < 4; kind++) {
        /* 0: scattered cells (runs and gaps), 1: the first half of the cells, 2: every cell
         * (the whole mesh), 3: none */
        for (int64_t e = 0; e < ne; e++)
            keep[e] = kind == 0   ? (e % 7 != 3 && (e < ne / 2 || e % 5 < 2))
                      : kind == 1 ? e < ne / 2
                                  : kind == 2;
        hk_mesh pm;
        hk_fields pf;
        extract_piece(&m, &f, keep, &pm, &pf);
        if (kind == 3) CU_ASSERT(pm.nnodes == 0 && pm.cells.n == 0);
        for (int fmt = 0; fmt < 8; fmt++) {
            const hk_vtu_options o = {.compression = (hk_vtu_compression)(fmt / 2 % 3),
                                      .float32 = fmt % 2,
                                      .ascii = fmt >= 6,
                                      .level = fmt == 3 ? 3 : 0};
            if (o.compression == HK_VTU_LZ4 && !o.ascii && !hk_vtu_have_lz4()) continue;
            omp_set_num_threads(1);
            HK_ASSERT_OK(hk_vtu_write(ref, &pm, &pf, &o));
            for (int k = 1; k <= 3; k++) {
                omp_set_num_threads(k);
                HK_ASSERT_OK(hk_vtu_write_cells(out, &m, &f, &o, keep));
                const int same = file_equal(ref, out);
                CU_ASSERT(same);
                if (!same)
                    printf("\n  piece %d, format %d, %d threads: other bytes than the copy's\n",
                           kind, fmt, k);
            }
        }
        /* the piece's mesh part written first by a thread, the fields after: the same bytes,
         * filled ahead or not (a distributed run's default) */
        for (int f32 = 0; f32 < 2 && kind < 3; f32++)
            for (int ahead = 0; ahead < 2; ahead++) {
                const hk_vtu_options o = {.float32 = f32};
                HK_ASSERT_OK(hk_vtu_write(ref, &pm, &pf, &o));
                omp_set_num_threads(2);
                remove(out);
                hk_vtu_early *e =
                    hk_vtu_early_start_cells(out, &m, &f, &o, ahead ? INT64_MAX : 0, keep);
                CU_ASSERT_PTR_NOT_NULL_FATAL(e);
                HK_ASSERT_OK(hk_vtu_early_finish(e, out, &f));
                const int same = file_equal(ref, out);
                CU_ASSERT(same);
                if (!same)
                    printf("\n  piece %d written early, float32 %d, filled %d: other bytes\n",
                           kind, f32, ahead);
            }
        omp_set_num_threads(nt);
        free_mesh(&pm);
        hk_fields_free(&pf);
    }
    /* the fields must be the whole mesh's, and the list of cells is needed */
    hk_fields g = f;
    g.nnodes = m.nnodes - 1;
    CU_ASSERT_EQUAL(hk_vtu_write_cells(out, &m, &g, NULL, keep), HK_ERR_ARG);
    CU_ASSERT_EQUAL(hk_vtu_write_cells(out, &m, &f, NULL, NULL), HK_ERR_ARG);
    free(keep);
    hk_fields_free(&f);
    free(u);
    free_system(&s);
    free_mesh(&m);
}

/* The number of threads in pwrite at once (HOOKE_OUTPUT_WRITERS) changes no byte: every
 * writer count with 1 and 3 threads, uncompressed and zlib, Float64 and Float32, the whole
 * file and the early one (mesh first, fields after), against one thread writing; a bad
 * setting gets one sentence and leaves no file; a device is written through. */
static void test_vtu_writers(void)
{
    hk_mesh m;
    hk_system s;
    double *u;
    /* 14^3 tet10: point arrays of 0.2-1.2 MB, several 1 MiB pieces and 64 KiB blocks */
    wavy_tet10(14, &m, &s, &u);
    s.fixed[0] = 1, s.u_fixed[0] = u[0];
    hk_material mat = {.name = "steel", .E = 210e3, .nu = 0.3};
    hk_problem p = {.mesh = &m, .analysis = HK_SOLID, .materials = &mat};
    hk_fields f;
    HK_ASSERT_OK(hk_postproc(&p, &s, u, &f));
    const int nt = omp_get_max_threads();
    static const char *const writers[] = {"1", "2", "all"};
    char ref[512], out[512];
    snprintf(ref, sizeof ref, "%s/writers_ref.vtu", hk_test_tmpdir());
    snprintf(out, sizeof out, "%s/writers.vtu", hk_test_tmpdir());
    for (int c = HK_VTU_NONE; c <= HK_VTU_ZLIB; c++)
        for (int f32 = 0; f32 < 2; f32++) {
            hk_vtu_options o = {.compression = (hk_vtu_compression)c, .float32 = f32};
            omp_set_num_threads(1);
            setenv("HOOKE_OUTPUT_WRITERS", "1", 1);
            HK_ASSERT_OK(hk_vtu_write(ref, &m, &f, &o));
            for (int t = 1; t <= 3; t += 2)
                for (int w = 0; w < 3; w++)
                    for (int early = 0; early < 1 + (c == HK_VTU_NONE); early++) {
                        omp_set_num_threads(t);
                        setenv("HOOKE_OUTPUT_WRITERS", writers[w], 1);
                        remove(out);
                        if (early) {
                            hk_vtu_early *e = hk_vtu_early_start(out, &m, &f, &o, INT64_MAX);
                            CU_ASSERT_PTR_NOT_NULL_FATAL(e);
                            HK_ASSERT_OK(hk_vtu_early_finish(e, out, &f));
                        } else {
                            HK_ASSERT_OK(hk_vtu_write(out, &m, &f, &o));
                        }
                        const int same = file_equal(ref, out);
                        CU_ASSERT(same);
                        if (!same)
                            printf("\n  compression %d float32 %d, %d threads, writers %s%s: other "
                                   "bytes\n",
                                   c, f32, t, writers[w], early ? ", early" : "");
                    }
        }
    omp_set_num_threads(nt);
    /* bad settings: one sentence naming the variable and the fix, no file */
    static const struct {
        const char *name, *value, *expect;
    } bad[] = {{"HOOKE_OUTPUT_WRITERS", "0", "HOOKE_OUTPUT_WRITERS=0 is not a thread count"},
               {"HOOKE_OUTPUT_WRITERS", "4x", "a whole number from 1 or to 'all'"}};
    for (int k = 0; k < 2; k++) {
        unsetenv("HOOKE_OUTPUT_WRITERS");
        setenv(bad[k].name, bad[k].value, 1);
        remove(out);
        CU_ASSERT_EQUAL(hk_vtu_write(out, &m, &f, NULL), HK_ERR_ARG);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), bad[k].expect));
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), out));
        CU_ASSERT(access(out, F_OK) != 0);
        /* the early write says the same at its end */
        unsetenv(bad[k].name);
        hk_vtu_early *e = hk_vtu_early_start(out, &m, &f, NULL, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        setenv(bad[k].name, bad[k].value, 1);
        CU_ASSERT_EQUAL(hk_vtu_early_finish(e, out, &f), HK_ERR_ARG);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), bad[k].expect));
        CU_ASSERT(access(out, F_OK) != 0);
        CU_ASSERT_EQUAL(part_files_left(), 0);
    }
    unsetenv("HOOKE_OUTPUT_WRITERS");
    /* a device is written through, not removed first */
    if (access("/dev/null", W_OK) == 0) HK_ASSERT_OK(hk_vtu_write("/dev/null", &m, &f, NULL));
    hk_fields_free(&f);
    free(u);
    free_system(&s);
    free_mesh(&m);
}

HK_SUITE(
    postproc, {"element data: reference nodes, shape functions, Gauss rules", test_element_data},
    {"principal stresses and von Mises of known tensors", test_principal_and_von_mises},
    {"constant strain, 2D elements: exact nodal/element stress", test_constant_strain_2d},
    {"constant strain, 3D elements: exact nodal/element stress", test_constant_strain_3d},
    {"bar under end displacement: reactions = E A eps", test_bar_reactions},
    {"errors: inverted element, bad material, NaN, bad path", test_errors},
    {"quarter-point quad8 (det J = 0 at a corner) is accepted, exact", test_quarter_point_element},
    {"vtu raw appended read back by VTK", test_vtu_raw},
    {"vtu zlib-compressed read back by VTK", test_vtu_zlib},
    {"vtu ascii read back by VTK", test_vtu_ascii},
    {"vtu none/zlib/lz4 x Float64/Float32 read back by VTK", test_vtu_combinations},
    {"Gmsh -> VTK node order matches VTK's parametric coordinates", test_vtk_node_order},
    {"pvd collection of two load cases", test_pvd},
    {"same results and file for any thread count; unsupported cell types",
     test_thread_independence},
    {"vtu with the mesh written early: the same bytes (1, 2 threads), replace, cancel, link",
     test_vtu_early},
    {"vtu: the same bytes for every count of threads in pwrite; bad settings", test_vtu_writers},
    {"vtu of a piece (hk_vtu_write_cells): the bytes of its copy, 1-3 threads, every format",
     test_vtu_cells},
    {"generated mesh + hk_assemble: traction bar, exact stress and reaction", test_chain_traction},
    {"generated mesh + hk_assemble + CG: self-weight reaction = rho g V", test_chain_gravity})
