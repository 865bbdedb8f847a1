/* Mass matrices (assembly/mass.c, element_kernels.h): the mass rules' exactness, the consistent
 * element mass of every element kind against exact integrals of polynomial fields (plane,
 * axisymmetric and 3D), the tet10 matrix in closed form, HRZ lumping, and the assembled and
 * eliminated M of hk_assemble_modal (total mass, symmetry, the prescribed rows, the rigid-body
 * count, one thread against two, a material without density). */
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "../assembly/element_kernels.h"
#include "../assembly/elements.h"
#include "hooke/fem.h"
#include "test_util.h"

/* ---- polynomials in (xi, eta, zeta) of degree <= 6 per variable ------------------------- */

#define PD 7
typedef struct poly {
    double c[PD][PD][PD];
} poly;

static double fact(int n)
{
    double f = 1;
    for (int i = 2; i <= n; i++)
        f *= i;
    return f;
}

/* int_{-1}^{1} s^i ds */
static double line_int(int i)
{
    return i % 2 ? 0 : 2.0 / (i + 1);
}

/* The integral of xi^i eta^j zeta^k over the reference element of t (elements.h). */
static double mono_int(hk_eltype t, int i, int j, int k)
{
    const hk_elref *r = hk_elref_get(t);
    if (r->dim == 2 && k > 0) return 0;
    switch (t) {
    case HK_EL_TRI3:
    case HK_EL_TRI6:
        return fact(i) * fact(j) / fact(i + j + 2);
    case HK_EL_TET4:
    case HK_EL_TET10:
        return fact(i) * fact(j) * fact(k) / fact(i + j + k + 3);
    case HK_EL_WEDGE6:
    case HK_EL_WEDGE15:
    case HK_EL_WEDGE18:
        return fact(i) * fact(j) / fact(i + j + 2) * line_int(k);
    case HK_EL_PYR5:
    case HK_EL_PYR13:
    case HK_EL_PYR14: /* xi = a (1 - z), eta = b (1 - z): int (1-z)^(i+j+2) z^k dz */
        return line_int(i) * line_int(j) * fact(i + j + 2) * fact(k) / fact(i + j + k + 3);
    default:
        return line_int(i) * (r->dim > 1 ? line_int(j) : 1) * (r->dim > 2 ? line_int(k) : 1);
    }
}

static double poly_int(hk_eltype t, const poly *p)
{
    double s = 0;
    for (int i = 0; i < PD; i++)
        for (int j = 0; j < PD; j++)
            for (int k = 0; k < PD; k++)
                if (p->c[i][j][k] != 0) s += p->c[i][j][k] * mono_int(t, i, j, k);
    return s;
}

static void poly_mul(const poly *a, const poly *b, poly *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < PD; i++)
        for (int j = 0; j < PD; j++)
            for (int k = 0; k < PD; k++) {
                if (a->c[i][j][k] == 0) continue;
                for (int l = 0; l + i < PD; l++)
                    for (int m = 0; m + j < PD; m++)
                        for (int n = 0; n + k < PD; n++)
                            out->c[i + l][j + m][k + n] += a->c[i][j][k] * b->c[l][m][n];
            }
}

static double poly_eval(const poly *p, const double x[3])
{
    double s = 0;
    for (int i = 0; i < PD; i++)
        for (int j = 0; j < PD; j++)
            for (int k = 0; k < PD; k++)
                if (p->c[i][j][k] != 0)
                    s += p->c[i][j][k] * pow(x[0], i) * pow(x[1], j) * pow(x[2], k);
    return s;
}

/* The monomials of total degree <= deg in dim variables. */
static int monomials(int dim, int deg, int (*e)[3])
{
    int n = 0;
    for (int i = 0; i <= deg; i++)
        for (int j = 0; j <= (dim > 1 ? deg - i : 0); j++)
            for (int k = 0; k <= (dim > 2 ? deg - i - j : 0); k++)
                e[n][0] = i, e[n][1] = j, e[n][2] = k, n++;
    return n;
}

static const hk_eltype kinds[] = {HK_EL_TRI3,    HK_EL_TRI6,  HK_EL_QUAD4,  HK_EL_QUAD8,
                                  HK_EL_QUAD9,   HK_EL_TET4,  HK_EL_TET10,  HK_EL_HEX8,
                                  HK_EL_HEX20,   HK_EL_HEX27, HK_EL_WEDGE6, HK_EL_WEDGE15,
                                  HK_EL_WEDGE18, HK_EL_PYR5,  HK_EL_PYR13,  HK_EL_PYR14};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])

/* ---- the rules --------------------------------------------------------------------------- */

/* The tet10 and triangle mass rules integrate every monomial of degree <= 5 exactly. */
static void test_rules(void)
{
    const hk_eltype t[2] = {HK_EL_TET10, HK_EL_TRI6};
    for (int s = 0; s < 2; s++) {
        const hk_elref *r = hk_elref_mass_get(t[s]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        double worst = 0;
        for (int i = 0; i <= 5; i++)
            for (int j = 0; i + j <= 5; j++)
                for (int k = 0; i + j + k <= 5; k++) {
                    if (r->dim == 2 && k) continue;
                    double q = 0;
                    for (int p = 0; p < r->nqp; p++)
                        q += r->qw[p] * pow(r->qp[p][0], i) * pow(r->qp[p][1], j) *
                             pow(r->qp[p][2], k);
                    worst = fmax(worst, fabs(q - mono_int(t[s], i, j, k)));
                }
        fprintf(stderr, "\n    %s mass rule (%d points): worst monomial error %.1e ", r->name,
                r->nqp, worst);
        CU_ASSERT(worst < 1e-15);
        for (int p = 0; p < r->nqp; p++)
            CU_ASSERT(r->qw[p] > 0);
    }
}

/* ---- one element ------------------------------------------------------------------------- */

/* Node coordinates of the reference element of t under x = A xi + b. */
static void map_nodes(const hk_elref *r, const double A[3][3], const double b[3], double (*x)[3])
{
    for (int a = 0; a < r->nnodes; a++)
        for (int i = 0; i < 3; i++) {
            x[a][i] = b[i];
            for (int k = 0; k < 3; k++)
                x[a][i] += A[i][k] * r->xi[a][k];
        }
}

static double det3(const double A[3][3])
{
    return A[0][0] * (A[1][1] * A[2][2] - A[1][2] * A[2][1]) -
           A[0][1] * (A[1][0] * A[2][2] - A[1][2] * A[2][0]) +
           A[0][2] * (A[1][0] * A[2][1] - A[1][1] * A[2][0]);
}

/* u^T M_e v = int rho u v (x thickness, x r axisymmetric) for the complete polynomials u, v
 * of the element's degree, on a sheared, stretched copy: the consistent mass is exact. */
static void test_consistent_exact(void)
{
    const double A3[3][3] = {{1.3, 0.2, -0.1}, {0.1, 0.9, 0.25}, {-0.2, 0.15, 1.1}};
    const double b[3] = {2.0, -0.5, 0.3}; /* x > 0 on every element: an axisymmetric section */
    const double rho = 2.5, th = 0.1;
    for (int it = 0; it < NKINDS; it++) {
        const hk_eltype t = kinds[it];
        const hk_elref *r = hk_elref_mass_get(t);
        const int d = r->dim, n = r->nnodes;
        double A[3][3];
        memcpy(A, A3, sizeof A);
        if (d == 2) A[0][2] = A[1][2] = A[2][0] = A[2][1] = 0, A[2][2] = 1;
        const double det = d == 2 ? A[0][0] * A[1][1] - A[0][1] * A[1][0] : det3(A);
        /* pyr5 holds the complete polynomials of degree 1, the others those of their order */
        const int deg = hk_eltype_get(t)->order;
        double x[HK_EL_MAXN][3], me[HK_EL_MAXN * HK_EL_MAXN];
        map_nodes(r, (const double(*)[3])A, b, x);
        int e[64][3];
        const int ne = monomials(d, deg, e);
        double worst = 0;
        for (int axi = 0; axi <= (d == 2); axi++) {
            CU_ASSERT_EQUAL_FATAL(
                hk_el_mass(r, d, (const double(*)[3])x, rho, axi, d == 2 && !axi ? th : 1, me), 0);
            /* the weight r = x(xi) = b_0 + A_0k xi_k as a polynomial of xi */
            poly wr;
            memset(&wr, 0, sizeof wr);
            wr.c[0][0][0] = axi ? b[0] : 1;
            if (axi) wr.c[1][0][0] = A[0][0], wr.c[0][1][0] = A[0][1];
            for (int p = 0; p < ne; p++)
                for (int q = 0; q < ne; q++) {
                    poly u, v, uv, uvr;
                    memset(&u, 0, sizeof u);
                    memset(&v, 0, sizeof v);
                    u.c[e[p][0]][e[p][1]][e[p][2]] = 1;
                    v.c[e[q][0]][e[q][1]][e[q][2]] = 1;
                    poly_mul(&u, &v, &uv);
                    poly_mul(&uv, &wr, &uvr);
                    const double exact = rho * (d == 2 && !axi ? th : 1) * det * poly_int(t, &uvr);
                    double s = 0;
                    for (int a = 0; a < n; a++)
                        for (int c = 0; c < n; c++)
                            s += poly_eval(&u, r->xi[a]) * me[a * n + c] * poly_eval(&v, r->xi[c]);
                    worst = fmax(worst, fabs(s - exact) / (rho * fabs(det)));
                }
            /* symmetric, and the entries sum to the element's mass */
            double sum = 0, asym = 0;
            for (int a = 0; a < n; a++)
                for (int c = 0; c < n; c++)
                    sum += me[a * n + c], asym = fmax(asym, fabs(me[a * n + c] - me[c * n + a]));
            CU_ASSERT(asym == 0);
            CU_ASSERT(fabs(sum - rho * (d == 2 && !axi ? th : 1) * det * poly_int(t, &wr)) <
                      1e-13 * rho * fabs(det) * (axi ? b[0] : 1));
        }
        if (worst > 1e-13) fprintf(stderr, "\n    %s: u^T M v off by %.2e ", r->name, worst);
        CU_ASSERT(worst < 1e-13);
    }
}

/* The tet10's consistent mass in closed form: rho V / 420 times 6 (corner diagonal), 1 (two
 * corners), -4 (a corner and an edge through it), -6 (a corner and another edge), 32 (edge
 * diagonal), 16 (two edges sharing a corner), 8 (opposite edges). */
static void test_tet10_closed_form(void)
{
    const hk_elref *r = hk_elref_mass_get(HK_EL_TET10);
    const double A[3][3] = {{2, 0.3, 0}, {0, 1.5, 0.2}, {0.1, 0, 1}}, b[3] = {0, 0, 0};
    double x[HK_EL_MAXN][3], me[100];
    map_nodes(r, A, b, x);
    const double rho = 7.0, V = det3(A) / 6, s = rho * V / 420;
    CU_ASSERT_EQUAL_FATAL(hk_el_mass(r, 3, (const double(*)[3])x, rho, 0, 1, me), 0);
    /* Gmsh's tet10 edges: 4 (0-1), 5 (1-2), 6 (0-2), 7 (0-3), 8 (2-3), 9 (1-3) */
    static const int edge[6][2] = {{0, 1}, {1, 2}, {0, 2}, {0, 3}, {2, 3}, {1, 3}};
    double worst = 0;
    for (int a = 0; a < 10; a++)
        for (int c = 0; c < 10; c++) {
            double ref;
            if (a < 4 && c < 4)
                ref = a == c ? 6 : 1;
            else if (a < 4 || c < 4) {
                const int corner = a < 4 ? a : c, e = (a < 4 ? c : a) - 4;
                ref = edge[e][0] == corner || edge[e][1] == corner ? -4 : -6;
            } else if (a == c)
                ref = 32;
            else {
                const int *e1 = edge[a - 4], *e2 = edge[c - 4];
                const int share =
                    e1[0] == e2[0] || e1[0] == e2[1] || e1[1] == e2[0] || e1[1] == e2[1];
                ref = share ? 16 : 8;
            }
            worst = fmax(worst, fabs(me[a * 10 + c] / s - ref));
        }
    CU_ASSERT(worst < 1e-12);
}

/* HRZ: positive, summing to the element's mass, the consistent diagonal's proportions; for the
 * linear elements but the pyramid equal to the row sums. */
static void test_hrz(void)
{
    const double A[3][3] = {{1.1, 0.2, 0.1}, {0.0, 0.8, 0.1}, {0.1, 0.0, 1.2}}, b[3] = {0, 0, 0};
    for (int it = 0; it < NKINDS; it++) {
        const hk_eltype t = kinds[it];
        const hk_elref *r = hk_elref_mass_get(t);
        const int d = r->dim, n = r->nnodes;
        double Ad[3][3];
        memcpy(Ad, A, sizeof Ad);
        if (d == 2) Ad[0][2] = Ad[1][2] = Ad[2][0] = Ad[2][1] = 0, Ad[2][2] = 1;
        double x[HK_EL_MAXN][3], me[HK_EL_MAXN * HK_EL_MAXN], dg[HK_EL_MAXN];
        map_nodes(r, (const double(*)[3])Ad, b, x);
        CU_ASSERT_EQUAL_FATAL(hk_el_mass(r, d, (const double(*)[3])x, 3.0, 0, 1, me), 0);
        hk_el_mass_lump_hrz(n, me, dg);
        double total = 0, sum = 0, minrow = 1e300;
        for (int a = 0; a < n; a++) {
            double row = 0;
            for (int c = 0; c < n; c++)
                row += me[a * n + c], total += me[a * n + c];
            minrow = fmin(minrow, row);
            sum += dg[a];
            CU_ASSERT(dg[a] > 0);
            if (hk_eltype_get(t)->order == 1 && t != HK_EL_PYR5) /* the apex has its own share */
                CU_ASSERT(fabs(dg[a] - row) < 1e-14 * fabs(row));
        }
        CU_ASSERT(fabs(sum - total) < 1e-14 * total);
        /* why not the row sums: quadratic simplices have negative ones */
        if (t == HK_EL_TET10) CU_ASSERT(minrow < 0);
    }
}

/* ---- assembled ------------------------------------------------------------------------- */

static void problem_of(const hk_mesh *m, hk_material *mat, hk_analysis a, hk_support *sup, int nsup,
                       hk_problem *p)
{
    memset(p, 0, sizeof *p);
    p->mesh = m;
    p->analysis = a;
    p->thickness = a == HK_SOLID ? 0 : 0.2;
    p->materials = mat;
    p->supports = sup;
    p->nsupports = nsup;
}

/* Block (i, j) entry (r, c) of A; 0 when absent. */
static double entry(const hk_bcsr *A, int64_t i, int64_t j, int r, int c)
{
    for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
        if (A->colind[q] == j) return A->val[((size_t)q * A->bs + r) * A->bs + c];
    return 0;
}

/* Total mass rho V per direction (consistent and lumped, 3D and plane stress with thickness),
 * M symmetric, the lumped one diagonal, the rigid-body motions of a free part counted. */
static void test_assembled_totals(void)
{
    hk_material mat = {.E = 200e9, .nu = 0.3, .rho = 7850};
    snprintf(mat.name, sizeof mat.name, "steel");
    for (int dim = 2; dim <= 3; dim++)
        for (int lumped = 0; lumped <= 1; lumped++) {
            hk_mesh m;
            if (dim == 3)
                HK_ASSERT_OK(hk_mesh_box(1.0, 0.4, 0.3, 5, 2, 2, HK_EL_TET10, &m));
            else
                HK_ASSERT_OK(hk_mesh_rectangle(1.0, 0.4, 5, 2, HK_EL_QUAD8, &m));
            hk_problem p;
            problem_of(&m, &mat, dim == 3 ? HK_SOLID : HK_PLANE_STRESS, NULL, 0, &p);
            hk_system s;
            HK_ASSERT_OK(hk_assemble_modal(&p, lumped ? HK_MASS_LUMPED : HK_MASS_CONSISTENT, &s));
            const double V = dim == 3 ? 1.0 * 0.4 * 0.3 : 1.0 * 0.4 * 0.2;
            for (int c = 0; c < dim; c++)
                CU_ASSERT(fabs(s.total_mass[c] - mat.rho * V) < 1e-12 * mat.rho * V);
            CU_ASSERT_EQUAL(s.free_rigid, dim == 3 ? 6 : 3);
            CU_ASSERT_EQUAL(s.nfixed, 0);
            const hk_bcsr *M = &s.M;
            CU_ASSERT_EQUAL(M->bs, dim);
            CU_ASSERT_EQUAL(M->nbrows, m.nnodes);
            if (lumped) CU_ASSERT_EQUAL(M->rowptr[M->nbrows], M->nbrows);
            double asym = 0;
            for (int64_t i = 0; i < M->nbrows; i++)
                for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++)
                    for (int r = 0; r < dim; r++)
                        for (int c = 0; c < dim; c++) {
                            const double v = M->val[((size_t)q * dim + r) * dim + c];
                            asym = fmax(asym, fabs(v - entry(M, M->colind[q], i, c, r)));
                            if (r != c) CU_ASSERT(v == 0); /* no coupling of components */
                            if (lumped && r == c) CU_ASSERT(v > 0);
                        }
            CU_ASSERT(asym == 0);
            hk_system_free(&s);
            hk_mesh_free(&m);
        }
}

/* A clamped end: its dofs' rows and columns of M are zero but for K_ii / lambda_fixed, lambda
 * fixed is above every free row's K_ii / M_ii, the free rows keep their values, and M r
 * counts the clamped nodes' mass too. */
static void test_eliminated_rows(void)
{
    hk_material mat = {.E = 70e9, .nu = 0.33, .rho = 2700};
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_box(1.0, 0.2, 0.2, 6, 2, 2, HK_EL_HEX20, &m));
    hk_support sup = {.boundary = hk_mesh_find_boundary(&m, "xmin"), .mask = 7};
    hk_problem p;
    problem_of(&m, &mat, HK_SOLID, &sup, 1, &p);
    hk_system s, f;
    HK_ASSERT_OK(hk_assemble_modal(&p, HK_MASS_CONSISTENT, &s));
    problem_of(&m, &mat, HK_SOLID, NULL, 0, &p);
    HK_ASSERT_OK(hk_assemble_modal(&p, HK_MASS_CONSISTENT, &f)); /* the same, free */
    CU_ASSERT(s.nfixed > 0);
    CU_ASSERT_EQUAL(s.free_rigid, 0);
    CU_ASSERT(s.lambda_fixed > 0);
    const int bs = 3;
    for (int64_t i = 0; i < s.M.nbrows; i++)
        for (int64_t q = s.M.rowptr[i]; q < s.M.rowptr[i + 1]; q++) {
            const int64_t j = s.M.colind[q];
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++) {
                    const double v = s.M.val[((size_t)q * bs + r) * bs + c];
                    const int fi = s.fixed[i * bs + r], fj = s.fixed[j * bs + c];
                    double want = entry(&f.M, i, j, r, c);
                    if (i == j && r == c && fi)
                        want = entry(&s.K, i, i, r, r) / s.lambda_fixed;
                    else if (fi || fj)
                        want = 0;
                    CU_ASSERT(v == want);
                    if (i == j && r == c && !fi)
                        CU_ASSERT(entry(&s.K, i, i, r, r) / v < s.lambda_fixed);
                }
        }
    for (int c = 0; c < 3; c++)
        CU_ASSERT(fabs(s.total_mass[c] - 2700 * 0.04) < 1e-12 * 2700 * 0.04);
    for (int64_t k = 0; k < 3 * s.ndof; k++)
        CU_ASSERT(s.mass_r[k] == f.mass_r[k]);
    hk_system_free(&s);
    hk_system_free(&f);
    hk_mesh_free(&m);
}

/* Axisymmetric: per radian, the mass is rho int r dA; one rigid-body motion (along the axis). */
static void test_axisymmetric_mass(void)
{
    hk_material mat = {.E = 200e9, .nu = 0.3, .rho = 8000};
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_rectangle(0.1, 0.3, 3, 6, HK_EL_TRI6, &m));
    for (int64_t i = 0; i < m.nnodes; i++)
        m.coords[3 * i] += 0.1; /* r from 0.1 to 0.2 */
    hk_problem p;
    problem_of(&m, &mat, HK_AXISYMMETRIC, NULL, 0, &p);
    hk_system s;
    HK_ASSERT_OK(hk_assemble_modal(&p, HK_MASS_CONSISTENT, &s));
    const double ref = 8000 * 0.3 * (0.2 * 0.2 - 0.1 * 0.1) / 2;
    CU_ASSERT(fabs(s.total_mass[1] - ref) < 1e-12 * ref);
    CU_ASSERT_EQUAL(s.free_rigid, 1);
    hk_system_free(&s);
    hk_mesh_free(&m);
}

/* The same bits on one thread and on two, above the threading threshold (4096 cells). */
static void test_mass_threads(void)
{
    hk_material mat = {.E = 200e9, .nu = 0.3, .rho = 7850};
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_box(1, 1, 1, 12, 12, 8, HK_EL_TET4, &m));
    hk_problem p;
    problem_of(&m, &mat, HK_SOLID, NULL, 0, &p);
    hk_system a, b;
    const int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    HK_ASSERT_OK(hk_assemble_modal(&p, HK_MASS_CONSISTENT, &a));
    omp_set_num_threads(2);
    HK_ASSERT_OK(hk_assemble_modal(&p, HK_MASS_CONSISTENT, &b));
    omp_set_num_threads(nt);
    const int64_t nv = a.M.rowptr[a.M.nbrows] * 9;
    CU_ASSERT_EQUAL(nv, b.M.rowptr[b.M.nbrows] * 9);
    CU_ASSERT(memcmp(a.M.val, b.M.val, (size_t)nv * sizeof(double)) == 0);
    hk_system_free(&a);
    hk_system_free(&b);
    hk_mesh_free(&m);
}

/* A material without density is named. */
static void test_no_density(void)
{
    hk_material mat = {.E = 200e9, .nu = 0.3, .rho = 0};
    snprintf(mat.name, sizeof mat.name, "steel");
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_box(1, 1, 1, 2, 2, 2, HK_EL_HEX8, &m));
    hk_problem p;
    problem_of(&m, &mat, HK_SOLID, NULL, 0, &p);
    hk_system s;
    CU_ASSERT_EQUAL(hk_assemble_modal(&p, HK_MASS_CONSISTENT, &s), HK_ERR_MODEL);
    CU_ASSERT(strstr(hk_error_message(), "material 'steel'") != NULL);
    CU_ASSERT(strstr(hk_error_message(), "density") != NULL);
    hk_error_clear();
    hk_mesh_free(&m);
}

HK_SUITE(mass, {"mass rules exact to degree 5 (tet10, triangles)", test_rules},
         {"consistent mass exact for polynomial fields, every element", test_consistent_exact},
         {"tet10 consistent mass in closed form", test_tet10_closed_form},
         {"HRZ lumping: positive, the element's mass", test_hrz},
         {"assembled M: total mass, symmetry, free rigid motions", test_assembled_totals},
         {"eliminated rows of M and lambda_fixed", test_eliminated_rows},
         {"axisymmetric mass per radian", test_axisymmetric_mass},
         {"same bits on one and two threads", test_mass_threads},
         {"material without density named", test_no_density})
