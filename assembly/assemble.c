/* Assembly of the stiffness matrix straight into block CSR (bs = mesh dimension).
 *
 * 1. checks of the mesh and the problem (element types, node indices, materials),
 * 2. node-to-cell adjacency, symbolic pattern (block row i: the nodes sharing a cell with
 *    node i, sorted; every node has its diagonal block, also nodes without a cell),
 * 3. numeric assembly with block-row ownership: each thread owns a range of block rows and
 *    adds the element matrices of the cells touching them into its rows only (no atomics, no
 *    colouring); every row gets its contributions in cell order, so the digits do not depend
 *    on the number of threads, and the cells are visited in mesh order (cache-friendly),
 * 4. loads, supports, rigid-body check, symmetric elimination (constraints.c, loads.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>
#include <sys/mman.h>

#include "assembly_impl.h"
#include "mesh_impl.h" /* mesh/: hk_mesh_node_cells */

/* ---- small helpers ----------------------------------------------------------------------- */

void hk_adj_free(hk_adj *a)
{
    free(a->ptr);
    free(a->idx);
    memset(a, 0, sizeof *a);
}

const char *hk_asm_region_name(const hk_mesh *m, int r)
{
    static _Thread_local char buf[32];
    if (m->regions && r >= 0 && r < m->nregions && m->regions[r].name[0]) return m->regions[r].name;
    snprintf(buf, sizeof buf, "#%d", r);
    return buf;
}

const char *hk_asm_boundary_name(const hk_mesh *m, int b)
{
    static _Thread_local char buf[32];
    if (m->boundaries && b >= 0 && b < m->nboundaries && m->boundaries[b].name[0])
        return m->boundaries[b].name;
    snprintf(buf, sizeof buf, "#%d", b);
    return buf;
}

long long hk_asm_tag(const hk_elems *es, int64_t e)
{
    return es->tag ? (long long)es->tag[e] : (long long)(e + 1);
}

void hk_system_free(hk_system *s)
{
    if (!s) return;
    hk_bcsr_free(&s->K);
    free(s->f);
    free(s->f_ext);
    free(s->fixed);
    free(s->u_fixed);
    free(s->rigid_point);
    free(s->rigid_of);
    memset(s, 0, sizeof *s);
}

/* ---- checks ------------------------------------------------------------------------------ */

int64_t hk_axisym_bad_node(const hk_mesh *m)
{
    /* rounding of a mesher may leave an axis node at -1e-17: tolerate 1e-9 of the mesh size */
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (int64_t i = 0; i < m->nnodes; i++)
        for (int k = 0; k < 2; k++)
            lo[k] = fmin(lo[k], m->coords[3 * i + k]), hi[k] = fmax(hi[k], m->coords[3 * i + k]);
    const double tol = 1e-9 * fmax(hi[0] - lo[0], hi[1] - lo[1]);
    int64_t bad = -1;
    for (int64_t k = 0; k < m->cells.ptr[m->cells.n]; k++) {
        const int32_t v = m->cells.nodes[k];
        if (v >= 0 && v < m->nnodes && m->coords[3 * (int64_t)v] < -tol && (bad < 0 || v < bad))
            bad = v;
    }
    return bad;
}

static int check_problem(const hk_problem *p)
{
    HK_CHECK(p && p->mesh, HK_ERR_ARG, "hk_assemble: the problem or its mesh is NULL");
    const hk_mesh *m = p->mesh;
    HK_CHECK(m->dim == 2 || m->dim == 3, HK_ERR_MODEL,
             "the mesh has dimension %d; Hooke assembles 2D and 3D meshes only", m->dim);
    HK_CHECK(m->nnodes > 0 && m->nnodes < INT32_MAX, HK_ERR_MODEL,
             "the mesh has %lld nodes; Hooke handles 1 to 2^31 - 2 nodes", (long long)m->nnodes);
    HK_CHECK(m->cells.n > 0, HK_ERR_MODEL,
             "the mesh has no %dD elements; mesh the domain (a physical group of dimension %d)",
             m->dim, m->dim);
    HK_CHECK(!(m->dim == 2 && p->analysis == HK_SOLID), HK_ERR_MODEL,
             "a 2D mesh needs a plane analysis; choose plane stress or plane strain");
    HK_CHECK(!(m->dim == 3 && p->analysis == HK_AXISYMMETRIC), HK_ERR_MODEL,
             "an axisymmetric analysis needs a 2D mesh of the r-z section (x = r, y = z); "
             "mesh the section, or choose the 3d analysis for a 3D mesh");
    HK_CHECK(m->nregions > 0 && m->cell_region, HK_ERR_MODEL,
             "the mesh has no region; put the %dD elements in a physical group", m->dim);
    for (int64_t e = 0; e < m->cells.n; e++) {
        int t = m->cells.type[e];
        const hk_elref *r = hk_elref_get((hk_eltype)t);
        HK_CHECK(r && r->dim == m->dim, HK_ERR_MODEL,
                 "element %lld (%s, Gmsh tag %lld) has no %dD element kernel; Hooke supports "
                 "%s",
                 (long long)e, hk_el_name(t), hk_asm_tag(&m->cells, e), m->dim,
                 m->dim == 2 ? "tri3, tri6, quad4, quad8, quad9"
                             : "tet4, tet10, hex8, hex20, hex27, wedge6, wedge15, wedge18, "
                               "pyr5, pyr13, pyr14");
        HK_CHECK(m->cells.ptr[e + 1] - m->cells.ptr[e] == r->nnodes, HK_ERR_MODEL,
                 "element %lld (%s, Gmsh tag %lld) has %lld nodes instead of %d; the mesh is "
                 "corrupt",
                 (long long)e, r->name, hk_asm_tag(&m->cells, e),
                 (long long)(m->cells.ptr[e + 1] - m->cells.ptr[e]), r->nnodes);
        for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++)
            HK_CHECK(m->cells.nodes[k] >= 0 && m->cells.nodes[k] < m->nnodes, HK_ERR_MODEL,
                     "element %lld (%s, Gmsh tag %lld) refers to node %d, outside the mesh's "
                     "%lld nodes; the mesh is corrupt",
                     (long long)e, r->name, hk_asm_tag(&m->cells, e), m->cells.nodes[k],
                     (long long)m->nnodes);
        HK_CHECK(m->cell_region[e] >= 0 && m->cell_region[e] < m->nregions, HK_ERR_MODEL,
                 "element %lld (%s, Gmsh tag %lld) has region %d, outside the mesh's %d "
                 "regions; the mesh is corrupt",
                 (long long)e, r->name, hk_asm_tag(&m->cells, e), m->cell_region[e], m->nregions);
    }
    for (int64_t i = 0; i < 3 * m->nnodes; i++)
        HK_CHECK(isfinite(m->coords[i]), HK_ERR_MODEL,
                 "node %lld has a non-finite coordinate; the mesh is corrupt", (long long)(i / 3));
    if (p->analysis == HK_AXISYMMETRIC) {
        const int64_t bad = hk_axisym_bad_node(m);
        HK_CHECK(bad < 0, HK_ERR_MODEL,
                 "node %lld of an element lies at r = x = %g < 0; an axisymmetric section lies "
                 "in x >= 0 (x is the radius, the axis is x = 0): move the mesh to that side",
                 (long long)bad, bad < 0 ? 0.0 : m->coords[3 * bad]);
    }
    for (int k = 0; k < 3; k++)
        HK_CHECK(isfinite(p->body_force[k]) && isfinite(p->gravity[k]), HK_ERR_MODEL,
                 "the body force or gravity has a non-finite component; give finite values");
    return hk_materials_check(p);
}

/* ---- adjacency and pattern --------------------------------------------------------------- */

int hk_asm_node_cells(const hk_mesh *m, hk_adj *a)
{
    memset(a, 0, sizeof *a);
    a->n = m->nnodes;
    return hk_mesh_node_cells(m, &a->ptr, &a->idx);
}

/* The value array of K: 2 MiB aligned and marked for transparent huge pages where the system
 * has them (hundreds of MB for 1M DOFs: 512x fewer page faults), not zeroed. free()-able. */
static int alloc_values(size_t count, double **val)
{
    const size_t align = (size_t)2 << 20, bytes = count * sizeof(double) + 1;
    void *ptr = NULL;
    HK_CHECK(posix_memalign(&ptr, align, bytes) == 0, HK_ERR_MEMORY,
             "out of host memory for the %.1f MB of matrix values", (double)bytes / 1048576.0);
#ifdef MADV_HUGEPAGE
    if (bytes >= align) madvise(ptr, bytes / align * align, MADV_HUGEPAGE);
#endif
    *val = ptr;
    return 0;
}

static int cmp_i32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* Block CSR pattern with sorted columns; values zeroed. */
static int build_pattern(const hk_mesh *m, const hk_adj *n2c, hk_bcsr *K)
{
    int ierr = 0;
    const int64_t nn = m->nnodes;
    const int bs = m->dim;
    memset(K, 0, sizeof *K);
    K->bs = bs;
    K->nbrows = K->nbcols = nn;
    HK_TRY(hk_calloc((size_t)nn + 1, sizeof *K->rowptr, &K->rowptr));
    /* small meshes: one thread (thread start-up and barriers would dominate) */
    int nthr = nn < 20000 ? 1 : omp_get_max_threads();
    int32_t *marks = NULL; /* per thread: the row that last saw each node */
    HK_TRY(hk_malloc((size_t)nthr * (size_t)nn * sizeof *marks + 1, &marks));
    for (int pass = 0; pass < 2; pass++) {
#pragma omp parallel num_threads(nthr)
        {
            int32_t *mark = marks + (size_t)omp_get_thread_num() * (size_t)nn;
            for (int64_t i = 0; i < nn; i++)
                mark[i] = -1;
#pragma omp for schedule(dynamic, 256)
            for (int64_t i = 0; i < nn; i++) {
                int64_t cnt = 0, base = pass ? K->rowptr[i] : 0;
                mark[i] = (int32_t)i;
                if (pass) K->colind[base] = (int32_t)i;
                cnt = 1;
                for (int64_t c = n2c->ptr[i]; c < n2c->ptr[i + 1]; c++) {
                    int64_t e = n2c->idx[c];
                    for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++) {
                        int32_t j = m->cells.nodes[k];
                        if (mark[j] == i) continue;
                        mark[j] = (int32_t)i;
                        if (pass) K->colind[base + cnt] = j;
                        cnt++;
                    }
                }
                if (pass)
                    qsort(K->colind + base, (size_t)cnt, sizeof(int32_t), cmp_i32);
                else
                    K->rowptr[i + 1] = cnt;
            }
        }
        if (pass == 0) {
            for (int64_t i = 0; i < nn; i++)
                K->rowptr[i + 1] += K->rowptr[i];
            HK_TRY(hk_malloc((size_t)K->rowptr[nn] * sizeof *K->colind, &K->colind));
        }
    }
    HK_TRY(alloc_values((size_t)K->rowptr[nn] * (size_t)(bs * bs), &K->val));
    /* zero in parallel, by block rows: the page faults of first touch are spread over the
     * threads instead of serialising the numeric phase */
#pragma omp parallel for schedule(static) num_threads(nthr)
    for (int64_t i = 0; i < nn; i++)
        memset(K->val + (size_t)K->rowptr[i] * (size_t)(bs * bs), 0,
               (size_t)(K->rowptr[i + 1] - K->rowptr[i]) * (size_t)(bs * bs) * sizeof *K->val);
    free(marks);
    return 0;
fail:
    free(marks);
    hk_bcsr_free(K);
    return ierr;
}

/* ---- element kernel ---------------------------------------------------------------------- */

/* Inverse and determinant of the d x d Jacobian J[i][k] = dx_i/dxi_k. */
static double invert(int d, const double J[3][3], double Ji[3][3])
{
    double det;
    if (d == 2) {
        det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
        double s = 1 / det;
        Ji[0][0] = J[1][1] * s, Ji[0][1] = -J[0][1] * s;
        Ji[1][0] = -J[1][0] * s, Ji[1][1] = J[0][0] * s;
    } else {
        double c00 = J[1][1] * J[2][2] - J[1][2] * J[2][1];
        double c01 = J[1][2] * J[2][0] - J[1][0] * J[2][2];
        double c02 = J[1][0] * J[2][1] - J[1][1] * J[2][0];
        det = J[0][0] * c00 + J[0][1] * c01 + J[0][2] * c02;
        double s = 1 / det;
        Ji[0][0] = c00 * s;
        Ji[1][0] = c01 * s;
        Ji[2][0] = c02 * s;
        Ji[0][1] = (J[0][2] * J[2][1] - J[0][1] * J[2][2]) * s;
        Ji[1][1] = (J[0][0] * J[2][2] - J[0][2] * J[2][0]) * s;
        Ji[2][1] = (J[0][1] * J[2][0] - J[0][0] * J[2][1]) * s;
        Ji[0][2] = (J[0][1] * J[1][2] - J[0][2] * J[1][1]) * s;
        Ji[1][2] = (J[0][2] * J[1][0] - J[0][0] * J[1][2]) * s;
        Ji[2][2] = (J[0][0] * J[1][1] - J[0][1] * J[1][0]) * s;
    }
    return det;
}

/* Element stiffness Ke (nd x nd, dof a*d+i) and, when fe != NULL, the consistent body load
 * fe = int N^T b. fac scales both (thickness in 2D). Returns 1 when det J <= 0 (or is not a
 * number) at a quadrature point, 0 otherwise.
 *
 * Per node pair (a, b >= a) the d x d sums S_ij = sum_q w_q g_a[i] g_b[j] are formed once,
 * then K_ab[i][j] = lambda S_ij + mu S_ji + mu tr(S) delta_ij and K_ba = K_ab^T: about 3x fewer
 * operations than B^T D B per point. d is a constant in the two callers (specialised). */
static inline int element_kernel_d(const hk_elref *r, const int d, const double (*x)[3], double lam,
                                   double mu, double fac, const double bf[3], double *restrict Ke,
                                   double *restrict fe)
{
    const int n = r->nnodes, nd = n * d, nq = r->nqp;
    double g[HK_EL_MAXQ][HK_EL_MAXN][3];
    double wq[HK_EL_MAXQ];
    if (fe) memset(fe, 0, sizeof(double) * (size_t)nd);
    for (int q = 0; q < nq; q++) {
        double J[3][3] = {{0}}, Ji[3][3];
        for (int a = 0; a < n; a++)
            for (int i = 0; i < d; i++)
                for (int k = 0; k < d; k++)
                    J[i][k] += x[a][i] * r->dN[q][a][k];
        double det = invert(d, J, Ji);
        if (!(det > 0)) return 1;
        const double w = r->qw[q] * det * fac;
        wq[q] = w;
        for (int a = 0; a < n; a++)
            for (int i = 0; i < d; i++) {
                double s = 0;
                for (int k = 0; k < d; k++)
                    s += r->dN[q][a][k] * Ji[k][i];
                g[q][a][i] = s;
            }
        if (fe)
            for (int a = 0; a < n; a++)
                for (int i = 0; i < d; i++)
                    fe[a * d + i] += w * r->N[q][a] * bf[i];
    }
    for (int a = 0; a < n; a++) {
        for (int b = a; b < n; b++) {
            double S[3][3] = {{0}};
            for (int q = 0; q < nq; q++) {
                const double *ga = g[q][a], *gb = g[q][b], w = wq[q];
                for (int i = 0; i < d; i++) {
                    const double wa = w * ga[i];
                    for (int j = 0; j < d; j++)
                        S[i][j] += wa * gb[j];
                }
            }
            double tr = 0;
            for (int i = 0; i < d; i++)
                tr += S[i][i];
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++) {
                    const double v = lam * S[i][j] + mu * S[j][i] + (i == j ? mu * tr : 0);
                    Ke[(size_t)(a * d + i) * nd + b * d + j] = v;
                    Ke[(size_t)(b * d + j) * nd + a * d + i] = v;
                }
        }
    }
    return 0;
}

static int element_kernel(const hk_elref *r, int d, const double (*x)[3], double lam, double mu,
                          double fac, const double bf[3], double *Ke, double *fe)
{
    return d == 2 ? element_kernel_d(r, 2, x, lam, mu, fac, bf, Ke, fe)
                  : element_kernel_d(r, 3, x, lam, mu, fac, bf, Ke, fe);
}

/* Shape-function gradients g[a][i] and weights w (det J * weight * fac) at quadrature point q;
 * axisymmetric (rad != NULL): the radius r = x there in *rad and the weight times r (per
 * radian). Returns 1 when det J <= 0 or r <= 0 (or is not a number). */
static int point_gradients(const hk_elref *r, int d, const double (*x)[3], int q, double fac,
                           double (*g)[3], double *w, double *rad)
{
    if (rad) {
        *rad = 0;
        for (int a = 0; a < r->nnodes; a++)
            *rad += r->N[q][a] * x[a][0];
        if (!(*rad > 0)) return 1;
        fac *= *rad;
    }
    double J[3][3] = {{0}}, Ji[3][3];
    for (int a = 0; a < r->nnodes; a++)
        for (int i = 0; i < d; i++)
            for (int k = 0; k < d; k++)
                J[i][k] += x[a][i] * r->dN[q][a][k];
    double det = invert(d, J, Ji);
    if (!(det > 0)) return 1;
    *w = r->qw[q] * det * fac;
    for (int a = 0; a < r->nnodes; a++)
        for (int i = 0; i < d; i++) {
            double s = 0;
            for (int k = 0; k < d; k++)
                s += r->dN[q][a][k] * Ji[k][i];
            g[a][i] = s;
        }
    return 0;
}

/* Strain-displacement block of node a: B[v][i] (v Voigt row, i displacement component); 2D
 * xx yy xy, 3D xx yy zz xy yz xz with engineering shears. */
static void bmatrix(int d, const double g[3], double B[6][3])
{
    memset(B, 0, sizeof(double) * 18);
    if (d == 2) {
        B[0][0] = g[0], B[1][1] = g[1];
        B[2][0] = g[1], B[2][1] = g[0];
    } else {
        B[0][0] = g[0], B[1][1] = g[1], B[2][2] = g[2];
        B[3][0] = g[1], B[3][1] = g[0];
        B[4][1] = g[2], B[4][2] = g[1];
        B[5][0] = g[2], B[5][2] = g[0];
    }
}

/* Axisymmetric strain-displacement block of node a (components u_r u_z): rows rr zz tt rz,
 * the hoop row tt = u_r / r with Nr = N_a / r. */
static void bmatrix_axi(const double g[3], double Nr, double B[6][3])
{
    memset(B, 0, sizeof(double) * 18);
    B[0][0] = g[0], B[1][1] = g[1], B[2][0] = Nr;
    B[3][0] = g[1], B[3][1] = g[0];
}

/* B block of node a at quadrature point q: plane/solid, or axisymmetric when rad > 0. */
static void bmatrix_at(const hk_elref *r, int d, int q, int a, const double g[3], double rad,
                       double B[6][3])
{
    if (rad > 0)
        bmatrix_axi(g, r->N[q][a] / rad, B);
    else
        bmatrix(d, g, B);
}

/* Element stiffness B^T D B of a general law (and the body load, as element_kernel), with
 * shift subtracted from the normal-normal entries of D (selective integration: the volumetric
 * part kappa goes on the reduced rule). axi: the axisymmetric B and weight r. */
static int element_kernel_general(const hk_elref *r, int d, const double (*x)[3], const hk_law *L,
                                  double shift, int axi, double fac, const double bf[3], double *Ke,
                                  double *fe)
{
    const int n = r->nnodes, nd = n * d, nv = L->nv, nn = nv == 3 ? 2 : 3; /* normal rows */
    double D[6][6];
    memcpy(D, L->D, sizeof D);
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < nn; j++)
            D[i][j] -= shift;
    memset(Ke, 0, sizeof(double) * (size_t)nd * nd);
    if (fe) memset(fe, 0, sizeof(double) * (size_t)nd);
    for (int q = 0; q < r->nqp; q++) {
        double g[HK_EL_MAXN][3], w, rad = 0;
        if (point_gradients(r, d, x, q, fac, g, &w, axi ? &rad : NULL)) return 1;
        for (int a = 0; a < n; a++) {
            double Ba[6][3], DB[6][3] = {{0}};
            bmatrix_at(r, d, q, a, g[a], rad, Ba);
            for (int v = 0; v < nv; v++) /* DB = D B_a */
                for (int i = 0; i < d; i++)
                    for (int k = 0; k < nv; k++)
                        DB[v][i] += D[v][k] * Ba[k][i];
            for (int b = 0; b < n; b++) {
                double Bb[6][3];
                bmatrix_at(r, d, q, b, g[b], rad, Bb);
                for (int j = 0; j < d; j++)
                    for (int i = 0; i < d; i++) {
                        double s = 0;
                        for (int v = 0; v < nv; v++)
                            s += Bb[v][j] * DB[v][i];
                        Ke[(size_t)(b * d + j) * nd + a * d + i] += w * s;
                    }
            }
            if (fe)
                for (int i = 0; i < d; i++)
                    fe[a * d + i] += w * r->N[q][a] * bf[i];
        }
    }
    return 0;
}

/* Selective integration on the reduced rule: adds the volumetric stiffness
 * kappa int div(N_a) div(N_b) to Ke when Ke != NULL (the full-rule part was formed with
 * lambda - kappa), and the thermal load kappa int div(N_a) 3 alpha dT to fe when fe != NULL
 * (s0 = 3 kappa alpha; dT = dT_region + the nodal field Tn interpolated): an isotropic
 * expansion is purely volumetric, so its load belongs on the same rule as the volumetric
 * stiffness, or a free body heated on a distorted mesh would not come out stress-free. axi:
 * the divergence includes the hoop strain u_r / r, the weight r; where the reduced rule has
 * one point (quad4, tri6) it is the mean dilatation over the full rule instead, since one
 * point does not integrate int div(N_a) r dA exactly (the weight r adds a degree), which
 * would let a held, nearly incompressible body change its volume. Returns 1 when det J <= 0
 * (or r <= 0) at a point. */
static int volumetric_reduced(const hk_elref *r, int d, const double (*x)[3], double kappa, int axi,
                              double fac, double *Ke, double s0, double dT_region, const double *Tn,
                              double *fe)
{
    int nq;
    double qp[HK_EL_MAXQ][3], qw[HK_EL_MAXQ];
    if (!hk_elref_reduced_rule(r->type, &nq, qp, qw)) return 0;
    const int n = r->nnodes, nd = n * d;
    if (axi && nq == 1) { /* mean dilatation: div_a = int div(N_a) r dA, V = int r dA */
        double dv[HK_EL_MAXN * 3] = {0}, V = 0, TV = 0;
        for (int q = 0; q < r->nqp; q++) {
            double g[HK_EL_MAXN][3], w, rad;
            if (point_gradients(r, d, x, q, fac, g, &w, &rad)) return 1;
            double dT = dT_region;
            for (int a = 0; a < n; a++) {
                dv[a * d] += w * (g[a][0] + r->N[q][a] / rad);
                dv[a * d + 1] += w * g[a][1];
                if (Tn) dT += r->N[q][a] * Tn[a];
            }
            V += w, TV += w * dT;
        }
        if (Ke)
            for (int a = 0; a < nd; a++)
                for (int b = 0; b < nd; b++)
                    Ke[(size_t)a * nd + b] += kappa / V * dv[a] * dv[b];
        if (fe)
            for (int a = 0; a < nd; a++)
                fe[a] += s0 * TV / V * dv[a];
        return 0;
    }
    for (int q = 0; q < nq; q++) {
        double N[HK_EL_MAXN], dN[HK_EL_MAXN][3], J[3][3] = {{0}}, Ji[3][3], g[HK_EL_MAXN][3];
        hk_el_shape(r->type, qp[q], N, dN);
        for (int a = 0; a < n; a++)
            for (int i = 0; i < d; i++)
                for (int k = 0; k < d; k++)
                    J[i][k] += x[a][i] * dN[a][k];
        double det = invert(d, J, Ji), rad = 1;
        if (axi) {
            rad = 0;
            for (int a = 0; a < n; a++)
                rad += N[a] * x[a][0];
        }
        if (!(det > 0) || !(rad > 0)) return 1;
        const double w = qw[q] * det * fac * rad;
        for (int a = 0; a < n; a++)
            for (int i = 0; i < d; i++) {
                double s = 0;
                for (int k = 0; k < d; k++)
                    s += dN[a][k] * Ji[k][i];
                g[a][i] = s;
            }
        if (axi) /* div u = du_r/dr + u_r / r + du_z/dz */
            for (int a = 0; a < n; a++)
                g[a][0] += N[a] / rad;
        if (Ke)
            for (int a = 0; a < nd; a++)
                for (int b = 0; b < nd; b++)
                    Ke[(size_t)a * nd + b] += w * kappa * g[a / d][a % d] * g[b / d][b % d];
        if (fe) {
            double dT = dT_region;
            for (int a = 0; a < n && Tn; a++)
                dT += N[a] * Tn[a];
            for (int a = 0; a < nd; a++)
                fe[a] += w * s0 * dT * g[a / d][a % d];
        }
    }
    return 0;
}

/* Adds the thermal load int B^T sig0 dT to fe; dT = dT_region + the nodal field Tn
 * (element-node values, NULL: none) interpolated. */
static int thermal_load(const hk_elref *r, int d, const double (*x)[3], const hk_law *L, int axi,
                        double fac, double dT_region, const double *Tn, double *fe)
{
    const int n = r->nnodes;
    for (int q = 0; q < r->nqp; q++) {
        double g[HK_EL_MAXN][3], w, rad = 0;
        if (point_gradients(r, d, x, q, fac, g, &w, axi ? &rad : NULL)) return 1;
        double dT = dT_region;
        if (Tn)
            for (int a = 0; a < n; a++)
                dT += r->N[q][a] * Tn[a];
        for (int a = 0; a < n; a++) {
            double B[6][3];
            bmatrix_at(r, d, q, a, g[a], rad, B);
            for (int i = 0; i < d; i++) {
                double s = 0;
                for (int v = 0; v < L->nv; v++)
                    s += B[v][i] * L->sig0[v];
                fe[a * d + i] += w * dT * s;
            }
        }
    }
    return 0;
}

/* Position of block column j in block row i (binary search in the sorted row). */
int64_t hk_asm_find_block(const hk_bcsr *K, int64_t i, int32_t j)
{
    int64_t lo = K->rowptr[i], hi = K->rowptr[i + 1] - 1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) >> 1;
        if (K->colind[mid] < j)
            lo = mid + 1;
        else if (K->colind[mid] > j)
            hi = mid - 1;
        else
            return mid;
    }
    return -1;
}

/* Numeric assembly of K (pattern given) and, when f != NULL, the body loads.
 *
 * Each thread owns a contiguous range of block rows (balanced by node-to-cell counts), visits
 * in increasing order every cell with a node in its range, and adds that cell's contributions
 * to its own rows only: no two threads write one row, and every row receives its
 * contributions in cell order, so the digits are those of the serial loop for any thread
 * count. Cells straddling two ranges are computed by both threads (a thin layer). */
static int assemble_numeric(const hk_problem *p, const hk_adj *n2c, hk_bcsr *K, double *f)
{
    int ierr = 0;
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    const int64_t nn = m->nnodes, nc = m->cells.n;
    const double fac = hk_asm_thickness(p);
    const int axi = p->analysis == HK_AXISYMMETRIC;
    const int nthr = nc >= 4096 ? omp_get_max_threads() : 1;
    int64_t *bounds = NULL, bad = INT64_MAX;
    hk_law *laws = NULL;
    double *dTr = NULL;
    HK_TRY(hk_malloc((size_t)(nthr + 1) * sizeof *bounds, &bounds));
    bounds[0] = 0;
    for (int t = 1; t < nthr; t++) { /* first row whose cell count prefix reaches t/nthr */
        int64_t target = n2c->ptr[nn] / nthr * t, lo = bounds[t - 1], hi = nn;
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (n2c->ptr[mid] < target)
                lo = mid + 1;
            else
                hi = mid;
        }
        bounds[t] = lo;
    }
    bounds[nthr] = nn;
    /* the law and the uniform temperature change of each region, once */
    HK_TRY(hk_malloc((size_t)m->nregions * sizeof *laws + 1, &laws));
    HK_TRY(hk_malloc((size_t)m->nregions * sizeof *dTr + 1, &dTr));
    for (int rg = 0; rg < m->nregions; rg++) {
        dTr[rg] = f ? hk_problem_region_dT(p, rg) : 0;
        memset(&laws[rg], 0, sizeof laws[rg]);
        laws[rg].isotropic = 1;
    }
    for (int64_t e = 0; e < nc; e++) { /* only regions with cells have a (checked) material */
        const int rg = m->cell_region[e];
        if (laws[rg].nv == 0) HK_TRY(hk_material_law(&p->materials[rg], p->analysis, d, &laws[rg]));
    }
    const double *node_dT = f ? p->node_dT : NULL;
#pragma omp parallel num_threads(nthr)
    {
        const int t = omp_get_thread_num();
        const int64_t r0 = bounds[t], r1 = bounds[t + 1];
        double *Ke = malloc(sizeof(double) * (HK_EL_MAXN * 3) * (HK_EL_MAXN * 3));
        double fe[HK_EL_MAXN * 3];
        double x[HK_EL_MAXN][3];
        int64_t mybad = Ke ? INT64_MAX : -2;
        for (int64_t e = 0; e < nc && Ke; e++) {
            const int32_t *nodes = m->cells.nodes + m->cells.ptr[e];
            const int n = (int)(m->cells.ptr[e + 1] - m->cells.ptr[e]);
            int mine = 0;
            for (int a = 0; a < n && !mine; a++)
                mine = nodes[a] >= r0 && nodes[a] < r1;
            if (!mine) continue;
            const hk_elref *r = hk_elref_get((hk_eltype)m->cells.type[e]);
            const int nd = n * d;
            for (int a = 0; a < n; a++)
                for (int i = 0; i < 3; i++)
                    x[a][i] = m->coords[3 * (size_t)nodes[a] + i];
            const int rg = m->cell_region[e];
            const hk_material *mt = &p->materials[rg];
            const hk_law *L = &laws[rg];
            double b[3];
            for (int i = 0; i < 3; i++)
                b[i] = p->body_force[i] + mt->rho * p->gravity[i];
            const int sel = L->selective && r->type != HK_EL_TRI3 && r->type != HK_EL_TET4;
            int badjac =
                L->isotropic && !axi
                    ? element_kernel(r, d, (const double(*)[3])x,
                                     sel ? L->lambda - L->kappa : L->lambda, L->mu, fac, b, Ke,
                                     f ? fe : NULL)
                    : element_kernel_general(r, d, (const double(*)[3])x, L, sel ? L->kappa : 0,
                                             axi, fac, b, Ke, f ? fe : NULL);
            if (!badjac && sel)
                badjac = volumetric_reduced(r, d, (const double(*)[3])x, L->kappa, axi, fac, Ke, 0,
                                            0, NULL, NULL);
            if (!badjac && f && (dTr[rg] != 0 || node_dT)) {
                double Tn[HK_EL_MAXN];
                for (int a = 0; a < n && node_dT; a++)
                    Tn[a] = node_dT[nodes[a]];
                /* selective and an isotropic expansion: the thermal stress D alpha =
                 * 3 kappa alpha is volumetric and goes on the reduced rule */
                const int vol = sel && L->alpha6[0] == L->alpha6[1] && L->alpha6[1] == L->alpha6[2];
                badjac = vol ? volumetric_reduced(r, d, (const double(*)[3])x, L->kappa, axi, fac,
                                                  NULL, 3 * L->kappa * L->alpha6[0], dTr[rg],
                                                  node_dT ? Tn : NULL, fe)
                             : thermal_load(r, d, (const double(*)[3])x, L, axi, fac, dTr[rg],
                                            node_dT ? Tn : NULL, fe);
            }
            if (badjac) {
                if (e < mybad) mybad = e;
                continue;
            }
            for (int a = 0; a < n; a++) {
                const int32_t ra = nodes[a];
                if (ra < r0 || ra >= r1) continue;
                for (int bb = 0; bb < n; bb++) {
                    double *blk =
                        K->val + (size_t)hk_asm_find_block(K, ra, nodes[bb]) * (size_t)(d * d);
                    const double *ke = Ke + (size_t)(a * d) * nd + bb * d;
                    for (int i = 0; i < d; i++)
                        for (int j = 0; j < d; j++)
                            blk[i * d + j] += ke[(size_t)i * nd + j];
                }
                if (f)
                    for (int i = 0; i < d; i++)
                        f[(size_t)ra * d + i] += fe[a * d + i];
            }
        }
        free(Ke);
#pragma omp critical(hk_asm_bad)
        if (mybad < bad) bad = mybad;
    }
    HK_TRY_CHECK(bad != -2, HK_ERR_MEMORY, "out of memory for the element matrices");
    if (bad != INT64_MAX) {
        const hk_eltype t = (hk_eltype)m->cells.type[bad];
        HK_TRY_CHECK(0, HK_ERR_MODEL,
                     "element %lld (%s, Gmsh tag %lld) in region '%s' has a non-positive "
                     "Jacobian%s; it is inverted or degenerate — check the mesh",
                     (long long)bad, hk_el_name(t), hk_asm_tag(&m->cells, bad),
                     hk_asm_region_name(m, m->cell_region[bad]),
                     p->analysis == HK_AXISYMMETRIC ? " or radius r = x <= 0 at a quadrature point"
                                                    : "");
    }
fail:
    free(bounds);
    free(laws);
    free(dTr);
    return ierr;
}

/* ---- public entry points ----------------------------------------------------------------- */

/* Stage times on stderr when HOOKE_ASSEMBLY_PROFILE is set (for tuning; off by default). */
static void stage(const char *name, double *t)
{
    static int on = -1;
    if (on < 0) on = getenv("HOOKE_ASSEMBLY_PROFILE") != NULL;
    double now = hk_time();
    if (on && name) fprintf(stderr, "assembly: %-10s %8.2f ms\n", name, 1e3 * (now - *t));
    *t = now;
}

int hk_assemble_stiffness(const hk_problem *p, hk_bcsr *K)
{
    int ierr;
    hk_adj n2c = {0};
    double t = 0;
    HK_CHECK(K, HK_ERR_ARG, "hk_assemble_stiffness: K is NULL");
    memset(K, 0, sizeof *K);
    stage(NULL, &t);
    HK_TRY(check_problem(p));
    stage("checks", &t);
    HK_TRY(hk_asm_node_cells(p->mesh, &n2c));
    stage("adjacency", &t);
    HK_TRY(build_pattern(p->mesh, &n2c, K));
    stage("pattern", &t);
    HK_TRY(assemble_numeric(p, &n2c, K, NULL));
    stage("numeric", &t);
    hk_adj_free(&n2c);
    return 0;
fail:
    hk_adj_free(&n2c);
    hk_bcsr_free(K);
    return ierr;
}

int hk_assemble(const hk_problem *p, hk_system *s)
{
    int ierr;
    hk_adj n2c = {0};
    double t = 0;
    HK_CHECK(s, HK_ERR_ARG, "hk_assemble: the output system is NULL");
    memset(s, 0, sizeof *s);
    stage(NULL, &t);
    HK_TRY(check_problem(p));
    stage("checks", &t);
    const hk_mesh *m = p->mesh;
    s->dim = m->dim;
    s->nnodes = m->nnodes;
    const int nrigid = hk_rigid_count(p); /* 2 block rows each for the reference points */
    s->ndof = (int64_t)m->dim * (m->nnodes + 2 * (int64_t)nrigid);
    HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->f_ext, &s->f_ext));
    HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->f, &s->f));
    HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->fixed, &s->fixed));
    HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->u_fixed, &s->u_fixed));
    HK_TRY(hk_asm_node_cells(m, &n2c));
    stage("adjacency", &t);
    /* cheap checks first: supports, rigid-body motion, loads */
    HK_TRY(hk_supports_apply(p, s->fixed, s->u_fixed, &s->nfixed));
    HK_TRY(hk_springs_check(p, &n2c));
    HK_TRY(hk_check_rigid(p, &n2c, s->fixed));
    stage("supports", &t);
    HK_TRY(hk_loads_apply(p, &n2c, s->f_ext));
    stage("loads", &t);
    HK_TRY(build_pattern(m, &n2c, &s->K));
    stage("pattern", &t);
    HK_TRY(assemble_numeric(p, &n2c, &s->K, s->f_ext));
    HK_TRY(hk_springs_add(p, &n2c, &s->K));
    stage("numeric", &t);
    HK_TRY(hk_eliminate(s, &n2c));
    if (nrigid) HK_TRY(hk_rigid_apply(p, &n2c, s));
    stage("eliminate", &t);
    hk_adj_free(&n2c);
    return 0;
fail:
    hk_adj_free(&n2c);
    hk_system_free(s);
    return ierr;
}
