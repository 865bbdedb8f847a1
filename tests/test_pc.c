/* Preconditioner tests: each apply against a reference computed here independently (dense
 * algebra, closed forms), both precisions, every usable backend; set-up errors; and the
 * iteration-count orderings of the papers through hk_solver. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#include "pc/pc_impl.h"

/* ---- small helpers --------------------------------------------------------------------- */

/* Dense row-major copy of K (n = nbrows*bs). */
static double *dense_of(const hk_bcsr *K)
{
    const int bs = K->bs;
    const long n = (long)K->nbrows * bs;
    double *D = calloc((size_t)n * n, sizeof *D);
    for (int64_t bi = 0; bi < K->nbrows; bi++)
        for (int64_t p = K->rowptr[bi]; p < K->rowptr[bi + 1]; p++)
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++)
                    D[(bi * bs + r) * n + K->colind[p] * bs + c] = K->val[(p * bs + r) * bs + c];
    return D;
}

/* Solve the dense n x n system A x = b by Gaussian elimination with partial pivoting. */
static void dense_solve(long n, const double *A0, const double *b, double *x)
{
    double *A = malloc((size_t)n * n * sizeof *A);
    memcpy(A, A0, (size_t)n * n * sizeof *A);
    memcpy(x, b, (size_t)n * sizeof *x);
    for (long c = 0; c < n; c++) {
        long p = c;
        for (long r = c + 1; r < n; r++)
            if (fabs(A[r * n + c]) > fabs(A[p * n + c])) p = r;
        for (long k = 0; k < n; k++) {
            double t = A[c * n + k];
            A[c * n + k] = A[p * n + k];
            A[p * n + k] = t;
        }
        double t = x[c];
        x[c] = x[p];
        x[p] = t;
        for (long r = c + 1; r < n; r++) {
            double f = A[r * n + c] / A[c * n + c];
            for (long k = c; k < n; k++)
                A[r * n + k] -= f * A[c * n + k];
            x[r] -= f * x[c];
        }
    }
    for (long r = n - 1; r >= 0; r--) {
        double s = x[r];
        for (long k = r + 1; k < n; k++)
            s -= A[r * n + k] * x[k];
        x[r] = s / A[r * n + r];
    }
    free(A);
}

static void dense_matvec(long n, const double *A, const double *x, double *y)
{
    for (long i = 0; i < n; i++) {
        double s = 0;
        for (long j = 0; j < n; j++)
            s += A[i * n + j] * x[j];
        y[i] = s;
    }
}

/* A scalar block CSR (bs = 1) from a dense row-major n x n matrix, zeros dropped. */
static void bcsr_from_dense(long n, const double *D, hk_bcsr *K)
{
    memset(K, 0, sizeof *K);
    K->bs = 1;
    K->nbrows = K->nbcols = n;
    long nnz = 0;
    for (long k = 0; k < n * n; k++)
        nnz += D[k] != 0;
    K->rowptr = calloc((size_t)n + 1, sizeof *K->rowptr);
    K->colind = malloc((size_t)nnz * sizeof *K->colind);
    K->val = malloc((size_t)nnz * sizeof *K->val);
    long q = 0;
    for (long i = 0; i < n; i++) {
        for (long j = 0; j < n; j++)
            if (D[i * n + j] != 0) {
                K->colind[q] = (int32_t)j;
                K->val[q++] = D[i * n + j];
            }
        K->rowptr[i + 1] = q;
    }
}

/* Tridiagonal n x n with constant bands (lower a, diagonal d, upper c), dense. */
static double *tridiag(long n, double a, double d, double c)
{
    double *D = calloc((size_t)n * n, sizeof *D);
    for (long i = 0; i < n; i++) {
        D[i * n + i] = d + 0.1 * (i % 3); /* not quite Toeplitz */
        if (i > 0) D[i * n + i - 1] = a;
        if (i + 1 < n) D[i * n + i + 1] = c;
    }
    return D;
}

static void test_rhs(long n, double *r)
{
    for (long i = 0; i < n; i++)
        r[i] = sin(0.7 * i + 0.3) + 0.25 * (i % 5);
}

static double tol_of(hk_precision p)
{
    return p == HK_FP64 ? 1e-11 : 2e-5;
}

/* Run pc on every backend and precision and compare with ref (relative max difference). */
static void check_all(const hk_bcsr *K, const char *name, const char *opts, const double *r,
                      const double *ref, double tol32)
{
    const long n = (long)K->nbrows * K->bs;
    double *z = malloc((size_t)n * sizeof *z);
    for (const hk_backend *const *b = hk_test_backends(); *b; b++)
        for (int p = 0; p < 2; p++) {
            int err = hk_test_apply_pc(*b, (hk_precision)p, K, name, opts, r, z, NULL);
            if (err)
                fprintf(stderr, "\n  pc %s (%s) on %s, %s: %s\n", name, opts ? opts : "",
                        hk_backend_name(*b), p ? "fp32" : "fp64", hk_error_message());
            CU_ASSERT_EQUAL(err, 0);
            if (err) continue;
            double d = hk_test_reldiff(z, ref, n), tol = p ? tol32 : tol_of(HK_FP64);
            if (!(d <= tol))
                fprintf(stderr, "\n  pc %s (%s) on %s, %s: rel. difference %.3g > %.1g\n", name,
                        opts ? opts : "", hk_backend_name(*b), p ? "fp32" : "fp64", d, tol);
            CU_ASSERT(d <= tol);
        }
    free(z);
}

/* ---- jacobi, bjacobi --------------------------------------------------------------------- */

static void test_jacobi(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity2d(5, 4, &K));
    const long n = (long)K.nbrows * K.bs;
    double *D = dense_of(&K), *r = malloc(n * sizeof *r), *ref = malloc(n * sizeof *ref);
    test_rhs(n, r);
    for (long i = 0; i < n; i++)
        ref[i] = r[i] / D[i * n + i];
    check_all(&K, "jacobi", NULL, r, ref, tol_of(HK_FP32));
    check_all(&K, "none", NULL, r, r, tol_of(HK_FP32));
    free(D), free(r), free(ref);
    hk_bcsr_free(&K);
}

static void check_bjacobi(hk_bcsr *K)
{
    const int bs = K->bs;
    const long n = (long)K->nbrows * bs;
    double *D = dense_of(K), *r = malloc(n * sizeof *r), *ref = malloc(n * sizeof *ref);
    test_rhs(n, r);
    for (long b = 0; b < n / bs; b++) { /* solve each diagonal block */
        double blk[9];
        for (int i = 0; i < bs; i++)
            for (int j = 0; j < bs; j++)
                blk[i * bs + j] = D[(b * bs + i) * n + b * bs + j];
        dense_solve(bs, blk, r + b * bs, ref + b * bs);
    }
    check_all(K, "bjacobi", NULL, r, ref, tol_of(HK_FP32));
    free(D), free(r), free(ref);
}

static void test_bjacobi(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity2d(5, 4, &K));
    CU_ASSERT_EQUAL(K.bs, 2);
    check_bjacobi(&K);
    hk_bcsr_free(&K);
    HK_ASSERT_OK(hk_gen_elasticity3d(3, 2, 2, &K));
    CU_ASSERT_EQUAL(K.bs, 3);
    check_bjacobi(&K);
    hk_bcsr_free(&K);
}

/* ---- poly -------------------------------------------------------------------------------- */

/* Reference z = s(B) D^-1 r for B = D^-1 A with s given by monomial coefficients (Horner). */
static void poly_ref_monomial(long n, const double *A, const double *r, int m, const double *c,
                              double *z)
{
    double *w = malloc(n * sizeof *w), *t = malloc(n * sizeof *t);
    for (long i = 0; i < n; i++)
        w[i] = r[i] / A[i * n + i];
    for (long i = 0; i < n; i++)
        z[i] = c[m] * w[i];
    for (int k = m - 1; k >= 0; k--) {
        dense_matvec(n, A, z, t);
        for (long i = 0; i < n; i++)
            z[i] = c[k] * w[i] + t[i] / A[i * n + i];
    }
    free(w), free(t);
}

/* Monomial coefficients of Neumann: w sum_i (1 - w t)^i, w = 1/hi (binomial expansion). */
static void neumann_monomial(int m, double hi, double *c)
{
    const double w = 1 / hi;
    for (int k = 0; k <= m; k++)
        c[k] = 0;
    for (int i = 0; i <= m; i++) {
        double binom = 1; /* C(i, k) */
        for (int k = 0; k <= i; k++) {
            c[k] += w * binom * pow(-w, k);
            binom = binom * (i - k) / (k + 1);
        }
    }
}

/* Reference for the LS polynomial with the Chebyshev weight 1/sqrt(t (hi - t)) on [0, hi]:
 * normal equations in the Legendre basis P_k(2t/hi - 1), integrated with t = hi (1 - cos th)/2
 * (the weight becomes d th) by a midpoint rule in th; then z = sum_k x_k P_k(xi(B)) w. */
static void ls_ref(long n, const double *A, const double *r, int m, double hi, double *z)
{
    const int nb = m + 1, Q = 4000;
    double G[21 * 21] = {0}, g[21] = {0}, x[21];
    for (int q = 0; q < Q; q++) {
        double th = M_PI * (q + 0.5) / Q, u = (1 - cos(th)) / 2, P[22], phi[21];
        P[0] = 1, P[1] = 2 * u - 1;
        for (int k = 1; k < nb; k++)
            P[k + 1] = ((2 * k + 1) * (2 * u - 1) * P[k] - k * P[k - 1]) / (k + 1);
        for (int k = 0; k < nb; k++)
            phi[k] = u * P[k]; /* (t/hi) P_k: the basis of t s(t) */
        for (int i = 0; i < nb; i++) {
            g[i] += phi[i];
            for (int j = 0; j < nb; j++)
                G[i * nb + j] += phi[i] * phi[j];
        }
    }
    dense_solve(nb, G, g, x); /* s(t) = sum_k x_k P_k(2t/hi - 1) / hi */
    double *w = calloc(n, sizeof *w), *p0 = calloc(n, sizeof *w), *p1 = calloc(n, sizeof *w);
    double *u = calloc(n, sizeof *w);
    for (long i = 0; i < n; i++)
        w[i] = r[i] / A[i * n + i];
    memcpy(p0, w, n * sizeof *w);
    for (long i = 0; i < n; i++)
        z[i] = x[0] / hi * p0[i];
    dense_matvec(n, A, w, u);
    for (long i = 0; i < n; i++)
        p1[i] = 2 * u[i] / A[i * n + i] / hi - w[i];
    for (int k = 1; k < nb; k++) {
        for (long i = 0; i < n; i++)
            z[i] += x[k] / hi * p1[i];
        dense_matvec(n, A, p1, u);
        for (long i = 0; i < n; i++) {
            double xi_p1 = 2 * u[i] / A[i * n + i] / hi - p1[i];
            double p2 = ((2 * k + 1) * xi_p1 - k * p0[i]) / (k + 1);
            p0[i] = p1[i];
            p1[i] = p2;
        }
    }
    free(w), free(p0), free(p1), free(u);
}

/* Chebyshev reference: z = B^-1 (I - T_{m+1}(eta(B))/T_{m+1}(eta0)) w, w = D^-1 r. */
static void chebyshev_ref(long n, const double *A, const double *r, int m, double lo, double hi,
                          double *z)
{
    double *w = malloc(n * sizeof *w), *t0 = malloc(n * sizeof *t0), *t1 = malloc(n * sizeof *t1);
    double *t2 = malloc(n * sizeof *t2), *u = malloc(n * sizeof *u);
    for (long i = 0; i < n; i++)
        w[i] = r[i] / A[i * n + i];
    /* T_k(eta(B)) w with eta(B) = (2B - (lo+hi)I)/(hi-lo) */
    memcpy(t0, w, n * sizeof *w);
    dense_matvec(n, A, w, u);
    for (long i = 0; i < n; i++)
        t1[i] = (2 * u[i] / A[i * n + i] - (lo + hi) * w[i]) / (hi - lo);
    double e0 = -(lo + hi) / (hi - lo), T0 = 1, T1 = e0;
    for (int k = 1; k <= m; k++) {
        dense_matvec(n, A, t1, u);
        for (long i = 0; i < n; i++)
            t2[i] = 2 * (2 * u[i] / A[i * n + i] - (lo + hi) * t1[i]) / (hi - lo) - t0[i];
        memcpy(t0, t1, n * sizeof *w);
        memcpy(t1, t2, n * sizeof *w);
        double T2 = 2 * e0 * T1 - T0;
        T0 = T1;
        T1 = T2;
    }
    /* B z = w - T_{m+1} w / T_{m+1}(e0)  <=>  A z = D (w - ...) */
    for (long i = 0; i < n; i++)
        u[i] = A[i * n + i] * (w[i] - t1[i] / T1);
    dense_solve(n, A, u, z);
    free(w), free(t0), free(t1), free(t2), free(u);
}

static void test_poly_apply(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity2d(5, 4, &K));
    const long n = (long)K.nbrows * K.bs;
    double *A = dense_of(&K), *r = malloc(n * sizeof *r), *ref = malloc(n * sizeof *ref);
    test_rhs(n, r);
    const double lo = 0.05, hi = 2.2;
    char opts[200];
    for (int m = 0; m <= 6; m += 3) {
        double c[21];
        neumann_monomial(m, hi, c);
        poly_ref_monomial(n, A, r, m, c, ref);
        snprintf(opts, sizeof opts, "pc.poly.kind=neumann pc.poly.degree=%d pc.poly.lmax=%g", m,
                 hi);
        check_all(&K, "poly", opts, r, ref, 1e-4);

        ls_ref(n, A, r, m, hi, ref);
        snprintf(opts, sizeof opts, "pc.poly.kind=ls pc.poly.degree=%d pc.poly.lmax=%g", m, hi);
        check_all(&K, "poly", opts, r, ref, 1e-4);

        chebyshev_ref(n, A, r, m, lo, hi, ref);
        snprintf(opts, sizeof opts,
                 "pc.poly.kind=chebyshev pc.poly.degree=%d pc.poly.lmin=%g pc.poly.lmax=%g", m, lo,
                 hi);
        check_all(&K, "poly", opts, r, ref, 1e-4);
    }
    free(A), free(r), free(ref);
    hk_bcsr_free(&K);
}

/* Lanczos bounds of D^-1/2 A D^-1/2 for the 1D Laplacian tridiag(-1, 2, -1): the scaled
 * matrix is tridiag(-1/2, 1, -1/2) with eigenvalues 1 - cos(k pi/(n+1)). */
static void test_poly_bounds(void)
{
    const long n = 200;
    double *D = calloc((size_t)n * n, sizeof *D);
    for (long i = 0; i < n; i++) {
        D[i * n + i] = 2;
        if (i) D[i * n + i - 1] = D[(i - 1) * n + i] = -1;
    }
    hk_bcsr K;
    bcsr_from_dense(n, D, &K);
    const double lmax = 1 + cos(M_PI / (n + 1));
    double *r = malloc(n * sizeof *r), *z = malloc(n * sizeof *z);
    test_rhs(n, r);
    for (const hk_backend *const *b = hk_test_backends(); *b; b++)
        for (int p = 0; p < 2; p++) {
            hk_pc *pc = NULL;
            HK_ASSERT_OK(
                hk_test_apply_pc(*b, (hk_precision)p, &K, "poly", "pc.poly.lanczos=20", r, z, &pc));
            double lo, hi;
            int m;
            const double *c;
            HK_ASSERT_OK(hk_pc_poly_info(pc, &lo, &hi, &m, &c));
            CU_ASSERT_EQUAL(m, 3);
            CU_ASSERT(hi >= lmax);        /* safeguarded: never below lambda_max */
            CU_ASSERT(hi <= 1.10 * lmax); /* but not far above */
            CU_ASSERT(lo > 0 && lo < hi);
            hk_pc_destroy(pc);
        }
    free(D), free(r), free(z);
    hk_bcsr_free(&K);
}

/* ---- ic0, ilu0 ----------------------------------------------------------------------- */

/* Where the factorisation has no fill (tridiagonal, block tridiagonal with full blocks),
 * IC(0) / ILU(0) are the exact factorisations and M^-1 r = A^-1 r. Only in the natural
 * order: a multicolour order (the cuda default) creates fill that IC(0) drops. */
static void check_exact(const char *name, long n, const double *D)
{
    hk_bcsr K;
    bcsr_from_dense(n, D, &K);
    double *r = malloc(n * sizeof *r), *ref = malloc(n * sizeof *ref);
    test_rhs(n, r);
    dense_solve(n, D, r, ref);
    double *z = malloc(n * sizeof *z);
    for (const hk_backend *const *b = hk_test_backends(); *b; b++) {
        const char *natural = "pc.ordering=natural";
        int err = hk_test_apply_pc(*b, HK_FP64, &K, name, natural, r, z, NULL);
        if (!(*b)->tri_setup) { /* a backend without triangular solves says so */
            CU_ASSERT_EQUAL(err, HK_ERR_UNSUPPORTED);
            CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "not available on the"));
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(err, 0);
        CU_ASSERT(hk_test_reldiff(z, ref, n) < 1e-11);
        err = hk_test_apply_pc(*b, HK_FP32, &K, name, natural, r, z, NULL);
        CU_ASSERT_EQUAL_FATAL(err, 0);
        CU_ASSERT(hk_test_reldiff(z, ref, n) < 1e-4);
    }
    free(r), free(ref), free(z);
    hk_bcsr_free(&K);
}

static double *block_tridiag(long nb, int bs, int sym)
{
    const long n = nb * bs;
    double *D = calloc((size_t)n * n, sizeof *D);
    for (long b = 0; b < nb; b++)
        for (int i = 0; i < bs; i++)
            for (int j = 0; j < bs; j++) {
                long r = b * bs + i, c = b * bs + j;
                D[r * n + c] = (i == j) ? 12 + 0.1 * (b % 3) : 0.5 + 0.1 * (i + j);
                if (b + 1 < nb) {
                    double v = -1.0 + 0.2 * i - 0.1 * j;
                    D[r * n + c + bs] = v;                          /* upper block */
                    D[(c + bs) * n + r] = sym ? v : 0.7 * v + 0.05; /* lower block */
                }
            }
    return D;
}

static void test_ic0_exact(void)
{
    double *D = tridiag(30, -1, 2.5, -1);
    check_exact("ic0", 30, D);
    free(D);
    D = block_tridiag(10, 3, 1);
    check_exact("ic0", 30, D);
    free(D);
}

/* Rows i and i + h (h = n/2) coupled in pairs: each factor has two levels of h rows, wide
 * enough for the parallel path of the level-scheduled solve; no fill, so M^-1 = A^-1, which is
 * a 2x2 solve per pair. sym = 0 makes the couplings unequal (for ilu0). */
static void check_pairs(const char *name, int sym)
{
    const long h = 3000, n = 2 * h;
    hk_bcsr K = {.bs = 1, .nbrows = n, .nbcols = n};
    K.rowptr = calloc(n + 1, sizeof *K.rowptr);
    K.colind = malloc(2 * n * sizeof *K.colind);
    K.val = malloc(2 * n * sizeof *K.val);
    double *r = malloc(n * sizeof *r), *ref = malloc(n * sizeof *ref);
    long q = 0;
    for (long i = 0; i < n; i++) {
        long j = i < h ? i + h : i - h;
        double d = 4 + 0.01 * (i % 7), c = i < h ? -1.5 : (sym ? -1.5 : -0.5);
        if (j < i) K.colind[q] = (int32_t)j, K.val[q++] = c;
        K.colind[q] = (int32_t)i, K.val[q++] = d;
        if (j > i) K.colind[q] = (int32_t)j, K.val[q++] = c;
        K.rowptr[i + 1] = q;
    }
    test_rhs(n, r);
    for (long i = 0; i < h; i++) { /* [a b; c d] [x; y] = [r_i; r_i+h] */
        double a = 4 + 0.01 * (i % 7), b = -1.5, c = sym ? -1.5 : -0.5;
        double d = 4 + 0.01 * ((i + h) % 7), det = a * d - b * c;
        ref[i] = (d * r[i] - b * r[i + h]) / det;
        ref[i + h] = (a * r[i + h] - c * r[i]) / det;
    }
    double *z = malloc(n * sizeof *z);
    for (const hk_backend *const *be = hk_test_backends(); *be; be++)
        for (int p = 0; p < 2 && (*be)->tri_setup; p++) {
            int err = hk_test_apply_pc(*be, (hk_precision)p, &K, name, NULL, r, z, NULL);
            CU_ASSERT_EQUAL_FATAL(err, 0);
            CU_ASSERT(hk_test_reldiff(z, ref, n) < (p ? 1e-5 : 1e-12));
        }
    free(r), free(ref), free(z);
    hk_bcsr_free(&K);
}

static void test_ic0_ilu0_wide_levels(void)
{
    check_pairs("ic0", 1);
    check_pairs("ilu0", 0);
}

static void test_ilu0_exact(void)
{
    double *D = tridiag(30, -1.3, 2.5, -0.6);
    check_exact("ilu0", 30, D);
    free(D);
    D = block_tridiag(10, 2, 0);
    check_exact("ilu0", 20, D);
    free(D);
}

/* ---- fsai, sai ------------------------------------------------------------------------ */

/* With the full lower pattern (tau = 0, k >= n, no filtration) G A G^T = I, so G^T G = A^-1. */
static void test_fsai_exact(void)
{
    const long n = 12;
    double *D = tridiag(n, -1, 2.5, -1), r[12], ref[12];
    hk_bcsr K;
    bcsr_from_dense(n, D, &K);
    test_rhs(n, r);
    dense_solve(n, D, r, ref);
    check_all(&K, "fsai", "pc.fsai.tau=0 pc.fsai.k=12 pc.fsai.delta=0", r, ref, 1e-4);
    hk_bcsr_free(&K);
    free(D);
}

/* k = 1 on a tridiagonal matrix: row i of G has columns {i-1, i}; the 2x2 local system has a
 * closed-form solution. With delta = 0.9 every off-diagonal entry is filtered out and the
 * diagonal is rescaled by 1/sqrt(1 + eps^T A eps) (equation 3.13). */
static void test_fsai_closed_form(void)
{
    const long n = 10;
    double *D = tridiag(n, -1, 2.5, -1), r[10], ref[10], t[10];
    double G[10][2], Gf[10];
    hk_bcsr K;
    bcsr_from_dense(n, D, &K);
    test_rhs(n, r);
    for (long i = 0; i < n; i++) {
        double aii = D[i * n + i];
        if (i == 0) {
            G[0][0] = 0, G[0][1] = 1 / sqrt(aii), Gf[0] = G[0][1];
            continue;
        }
        double app = D[(i - 1) * n + i - 1], api = D[(i - 1) * n + i];
        double det = app * aii - api * api;
        double w0 = -api / det, w1 = app / det, s = 1 / sqrt(w1);
        G[i][0] = w0 * s, G[i][1] = w1 * s;
        Gf[i] = G[i][1] / sqrt(1 + G[i][0] * G[i][0] * app);
    }
    /* z = G^T (G r) */
    for (int f = 0; f < 2; f++) {
        for (long i = 0; i < n; i++)
            t[i] = f ? Gf[i] * r[i] : G[i][1] * r[i] + (i ? G[i][0] * r[i - 1] : 0);
        for (long j = 0; j < n; j++)
            ref[j] = f ? Gf[j] * t[j] : G[j][1] * t[j] + (j + 1 < n ? G[j + 1][0] * t[j + 1] : 0);
        check_all(&K, "fsai",
                  f ? "pc.fsai.tau=0 pc.fsai.k=1 pc.fsai.delta=0.9"
                    : "pc.fsai.tau=0 pc.fsai.k=1 pc.fsai.delta=0",
                  r, ref, 1e-4);
    }
    hk_bcsr_free(&K);
    free(D);
}

/* The pattern of G is B_k of the recursion B_{p+1} = Low(B_p Ã), B_0 = I (equation 3.9),
 * computed here by dense boolean products: its size must equal G's entries (no filtration). */
static void test_fsai_pattern(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_poisson2d(6, &K));
    const long n = (long)K.nbrows;
    double *D = dense_of(&K), r[36], z[36];
    test_rhs(n, r);
    for (int k = 1; k <= 3; k++) {
        char *B = calloc(n * n, 1), *C = calloc(n * n, 1);
        for (long i = 0; i < n; i++)
            B[i * n + i] = 1;
        for (int p = 0; p < k; p++) {
            for (long i = 0; i < n; i++)
                for (long c = 0; c <= i; c++) {
                    char v = 0;
                    for (long j = 0; j < n && !v; j++)
                        v = B[i * n + j] && D[j * n + c] != 0;
                    C[i * n + c] = v;
                }
            memcpy(B, C, n * n);
        }
        long expect = 0;
        for (long q = 0; q < n * n; q++)
            expect += B[q];
        char opts[100];
        snprintf(opts, sizeof opts, "pc.fsai.tau=0 pc.fsai.k=%d pc.fsai.delta=0", k);
        hk_pc *pc = NULL;
        HK_ASSERT_OK(hk_test_apply_pc(hk_test_backends()[0], HK_FP64, &K, "fsai", opts, r, z, &pc));
        CU_ASSERT_EQUAL(hk_pc_fsai_nnz(pc), expect);
        hk_pc_destroy(pc);
        free(B), free(C);
    }
    free(D);
    hk_bcsr_free(&K);
}

/* The variants of pc=sai with the pattern of A (tau = 1, where the row and column maxima
 * give the same pattern): Householder and the thesis's Gram-Schmidt least squares. */
static const char *const sai_variants[4] = {
    "pc.sai.tau=1 pc.sai.max=row pc.sai.qr=householder",
    "pc.sai.tau=1 pc.sai.max=row pc.sai.qr=gram-schmidt",
    "pc.sai.tau=1 pc.sai.max=column pc.sai.qr=householder",
    "pc.sai.tau=1 pc.sai.max=column pc.sai.qr=gram-schmidt"};

/* SAI with the pattern of A (tau = 1): on a block-diagonal matrix the least-squares problems
 * are square and exact, M = A^-1; on a nonsymmetric tridiagonal matrix each column solves
 * min ||A(I,J) m - e_k(I)|| with J = {k-1,k,k+1}, checked here by the normal equations. Both
 * least-squares solvers, both maxima. */
static void test_sai(void)
{
    const long n = 12;
    double *D = calloc(n * n, sizeof *D), r[12], ref[12];
    for (long b = 0; b < n / 2; b++) {
        long i = 2 * b;
        D[i * n + i] = 3 + 0.1 * b, D[i * n + i + 1] = 1.2;
        D[(i + 1) * n + i] = -0.7, D[(i + 1) * n + i + 1] = 2 + 0.05 * b;
    }
    hk_bcsr K;
    bcsr_from_dense(n, D, &K);
    test_rhs(n, r);
    dense_solve(n, D, r, ref);
    for (int v = 0; v < 4; v++)
        check_all(&K, "sai", sai_variants[v], r, ref, 1e-4);
    hk_bcsr_free(&K);
    free(D);

    D = tridiag(n, -1.3, 2.5, -0.6);
    bcsr_from_dense(n, D, &K);
    double *M = calloc(n * n, sizeof *M);
    for (long k = 0; k < n; k++) {
        long j0 = k > 0 ? k - 1 : 0, j1 = k + 1 < n ? k + 1 : n - 1, nj = j1 - j0 + 1;
        double N[9] = {0}, g[3] = {0}, m[3];
        for (long a = 0; a < nj; a++) {
            for (long b = 0; b < nj; b++)
                for (long i = 0; i < n; i++)
                    N[a * nj + b] += D[i * n + j0 + a] * D[i * n + j0 + b];
            g[a] = D[k * n + j0 + a]; /* (A^T e_k)_a = A(k, j0+a) */
        }
        dense_solve(nj, N, g, m);
        for (long a = 0; a < nj; a++)
            M[(j0 + a) * n + k] = m[a];
    }
    dense_matvec(n, M, r, ref);
    for (int v = 0; v < 4; v++)
        check_all(&K, "sai", sai_variants[v], r, ref, 1e-4);
    hk_bcsr_free(&K);
    free(D), free(M);
}

/* The sparsified pattern of pc=sai against its definition on a dense nonsymmetric matrix
 * whose row and column maxima differ: M(i,k) is kept when i == k or |A(i,k)| > (1 - tau)
 * times row i's maximum (pc.sai.max=row, equation 5.3) or column k's (pc.sai.max=column),
 * for several tau; the two patterns differ. */
static void test_sai_pattern(void)
{
    const long n = 9;
    double D[81];
    uint32_t seed = 7;
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            seed = seed * 1103515245u + 12345u;
            const double u = (double)(seed >> 8) / 16777216.0;
            /* rows grow with i, so a column's maximum sits low and a row's varies */
            D[i * n + j] = (i == j ? 4.0 : (u < 0.35 ? 0.0 : (u - 0.6))) * (1 + 0.5 * i);
        }
    hk_bcsr K;
    bcsr_from_dense(n, D, &K);
    hk_bmat Kb = {0}, Kx = {0}, Kt = {0};
    HK_ASSERT_OK(hk_bmat_upload(&hk_backend_cpu, &K, &Kb));
    HK_ASSERT_OK(hk_pc_bmat_expand(&Kb, &Kx));
    HK_ASSERT_OK(hk_pc_bmat_transpose(&Kx, &Kt));
    const double taus[3] = {0.3, 0.6, 0.9};
    int differ = 0;
    for (int t = 0; t < 3; t++) {
        int64_t nnz[2] = {0, 0};
        for (int colmax = 0; colmax < 2; colmax++) {
            hk_graph St = {0};
            HK_ASSERT_OK(hk_backend_cpu.sai_pattern(&Kb, &Kt, taus[t], colmax, &St));
            for (long k = 0; k < n; k++) {
                double mx = 0;
                for (long a = 0; a < n; a++) {
                    const double v = fabs(colmax ? D[a * n + k] : 0);
                    if (v > mx) mx = v;
                }
                long p = St.rowptr[k];
                for (long i = 0; i < n; i++) {
                    double rmax = 0;
                    for (long j = 0; j < n && !colmax; j++)
                        if (fabs(D[i * n + j]) > rmax) rmax = fabs(D[i * n + j]);
                    const double lim = (1 - taus[t]) * (colmax ? mx : rmax);
                    const int keep = i == k || (D[i * n + k] != 0 && fabs(D[i * n + k]) > lim);
                    const int has = p < St.rowptr[k + 1] && St.colind[p] == i;
                    CU_ASSERT_EQUAL(keep, has);
                    p += has;
                }
                CU_ASSERT_EQUAL(p, St.rowptr[k + 1]);
            }
            nnz[colmax] = St.nnz;
            hk_graph_free(&St);
        }
        differ |= nnz[0] != nnz[1];
    }
    CU_ASSERT(differ);
    hk_bmat_free(&Kt), hk_bmat_free(&Kx), hk_bmat_free(&Kb);
    hk_bcsr_free(&K);
}

/* Every registered preconditioner, every backend and precision: set-up succeeds on a small
 * SPD elasticity matrix (or says the backend lacks it), apply in place (z = r, one vector)
 * equals apply out of place, and fp32 vectors work with an fp64 preconditioner. */
static void test_every_pc_in_place(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity2d(6, 4, &K));
    const long n = (long)K.nbrows * K.bs;
    double *r = malloc(n * sizeof *r), *z1 = malloc(n * sizeof *z1), *z2 = malloc(n * sizeof *z2);
    test_rhs(n, r);
    for (const hk_backend *const *b = hk_test_backends(); *b; b++)
        for (int p = 0; p < 2; p++)
            for (int t = 0; hk_pc_types[t]; t++) {
                const hk_pc_type *pt = hk_pc_types[t];
                hk_mat *A;
                hk_pc *pc = NULL;
                hk_vec *v, *w, *v32;
                HK_ASSERT_OK(hk_mat_create(*b, &K, HK_FMT_CSR, HK_FP64, NULL, &A));
                hk_bmat Kd = {0};
                HK_ASSERT_OK(hk_bmat_upload(*b, &K, &Kd));
                int err = hk_pc_create(pt, *b, (hk_precision)p, &Kd, A, NULL, NULL, &pc);
                hk_bmat_free(&Kd);
                if (err == HK_ERR_UNSUPPORTED && !(*b)->tri_setup) {
                    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "not available"));
                    hk_mat_destroy(A);
                    continue;
                }
                if (err) fprintf(stderr, "\n  pc %s: %s\n", pt->name, hk_error_message());
                CU_ASSERT_EQUAL_FATAL(err, 0);
                HK_ASSERT_OK(hk_vec_create(*b, n, HK_FP64, &v));
                HK_ASSERT_OK(hk_vec_create(*b, n, HK_FP64, &w));
                HK_ASSERT_OK(hk_vec_create(*b, n, HK_FP32, &v32));
                HK_ASSERT_OK(hk_vec_upload(v, r));
                HK_ASSERT_OK(hk_pc_apply(pc, v, w));
                HK_ASSERT_OK(hk_vec_download(w, z1));
                HK_ASSERT_OK(hk_pc_apply(pc, v, v)); /* in place */
                HK_ASSERT_OK(hk_vec_download(v, z2));
                CU_ASSERT(hk_test_reldiff(z2, z1, n) == 0);
                HK_ASSERT_OK(hk_vec_upload(v32, r)); /* fp32 vectors, any pc precision */
                HK_ASSERT_OK(hk_pc_apply(pc, v32, v32));
                HK_ASSERT_OK(hk_vec_download(v32, z2));
                CU_ASSERT(hk_test_reldiff(z2, z1, n) < 1e-5);
                double nz = 0;
                for (long i = 0; i < n; i++)
                    nz += r[i] * z1[i];
                if (pt->symmetric) CU_ASSERT(nz > 0); /* r^T M^-1 r > 0 for an SPD M */
                hk_vec_destroy(v), hk_vec_destroy(w), hk_vec_destroy(v32);
                hk_pc_destroy(pc);
                hk_mat_destroy(A);
            }
    free(r), free(z1), free(z2);
    hk_bcsr_free(&K);
}

/* ---- through the solver: the papers' orderings ------------------------------------------ */

/* SBELL paper, Table 3: least-squares < Neumann < Jacobi in CG iterations, same degree. */
static void test_table3_ordering(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity2d(40, 20, &K));
    for (const hk_backend *const *b = hk_test_backends(); *b; b++) {
        const char *be = hk_backend_name(*b);
        int jac = hk_test_solve_iterations(&K, be, "method=cg pc=jacobi", NULL);
        for (int m = 3; m <= 6; m += 3) {
            char o1[128], o2[128];
            snprintf(o1, sizeof o1, "method=cg pc=poly pc.poly.kind=neumann pc.poly.degree=%d", m);
            snprintf(o2, sizeof o2, "method=cg pc=poly pc.poly.kind=ls pc.poly.degree=%d", m);
            int neu = hk_test_solve_iterations(&K, be, o1, NULL),
                ls = hk_test_solve_iterations(&K, be, o2, NULL);
            printf("\n    %s degree %d: jacobi %d, neumann %d, ls %d", be, m, jac, neu, ls);
            CU_ASSERT(ls > 0 && neu > 0 && jac > 0);
            CU_ASSERT(ls < neu);
            CU_ASSERT(neu < jac);
        }
        /* mixed precision (fp32 polynomial, fp64 CG) still reaches the fp64 tolerance */
        int mixed = hk_test_solve_iterations(
            &K, be, "method=cg pc=poly pc.poly.degree=6 precision=mixed", NULL);
        CU_ASSERT(mixed > 0);
    }
    hk_bcsr_free(&K);
}

/* FSAI paper, Table 6: FSAI needs at least 2x fewer CG iterations than Jacobi; IC(0) fewer. */
static void test_fsai_ic0_vs_jacobi(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(10, 6, 6, &K));
    for (const hk_backend *const *b = hk_test_backends(); *b; b++) {
        const char *be = hk_backend_name(*b);
        int jac = hk_test_solve_iterations(&K, be, "method=cg pc=jacobi", NULL);
        int fsai = hk_test_solve_iterations(&K, be, "method=cg pc=fsai", NULL);
        int fsai32 = hk_test_solve_iterations(&K, be, "method=cg pc=fsai precision=mixed", NULL);
        printf("\n    %s: jacobi %d, fsai %d (mixed %d)", be, jac, fsai, fsai32);
        CU_ASSERT(fsai > 0 && 2 * fsai <= jac);
        CU_ASSERT(fsai32 > 0 && 2 * fsai32 <= jac);
        if ((*b)->tri_setup) {
            int ic0 = hk_test_solve_iterations(&K, be, "method=cg pc=ic0", NULL);
            printf(", ic0 %d", ic0);
            CU_ASSERT(ic0 > 0 && ic0 < jac);
        }
    }
    hk_bcsr_free(&K);
}

/* SAI (GPU Krylov thesis, ch. 5) with BiCGStab and GMRES on convection-diffusion; ILU(0) too. */
static void test_sai_nonsymmetric(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_convdiff2d(40, 50, &K));
    for (const hk_backend *const *b = hk_test_backends(); *b; b++) {
        const char *be = hk_backend_name(*b);
        int bn = hk_test_solve_iterations(&K, be, "method=bicgstab pc=none", NULL);
        int bs = hk_test_solve_iterations(&K, be, "method=bicgstab pc=sai", NULL);
        int gj = hk_test_solve_iterations(&K, be, "method=gmres pc=jacobi", NULL);
        int gs = hk_test_solve_iterations(&K, be, "method=gmres pc=sai", NULL);
        printf("\n    %s: bicgstab none %d sai %d; gmres jacobi %d sai %d", be, bn, bs, gj, gs);
        CU_ASSERT(bs > 0 && bs < bn);
        CU_ASSERT(gs > 0 && gs < gj);
        if ((*b)->tri_setup) {
            int gi = hk_test_solve_iterations(&K, be, "method=gmres pc=ilu0", NULL);
            printf(", gmres ilu0 %d", gi);
            CU_ASSERT(gi > 0 && gi < gs);
        }
    }
    hk_bcsr_free(&K);
}

/* ---- set-up errors ------------------------------------------------------------------- */

static void test_errors(void)
{
    const hk_backend *be = hk_test_backends()[0];
    const long n = 6;
    double r[6] = {1, 2, 3, 4, 5, 6}, z[6];
    /* row 3 has a zero diagonal */
    double *D = tridiag(n, -1, 2.5, -1);
    D[3 * n + 3] = 0;
    hk_bcsr K;
    bcsr_from_dense(n, D, &K);
    /* messages count rows from 1, as a Matrix Market file does: row 3 is "row 4" (a scalar
     * matrix's diagonal message once read "row 40") */
    CU_ASSERT_EQUAL(hk_test_apply_pc(be, HK_FP64, &K, "jacobi", NULL, r, z, NULL), HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "jacobi: row 4 has"));
    CU_ASSERT_EQUAL(hk_test_apply_pc(be, HK_FP64, &K, "poly", NULL, r, z, NULL), HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "row 4 has"));
    CU_ASSERT_EQUAL(hk_test_apply_pc(be, HK_FP64, &K, "bjacobi", NULL, r, z, NULL), HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "row 4 has"));
    hk_bcsr_free(&K);
    /* indefinite: IC(0) meets a negative pivot in row 1 */
    D[3 * n + 3] = 2.5;
    D[1 * n + 1] = 0.2;
    bcsr_from_dense(n, D, &K);
    CU_ASSERT_EQUAL(hk_test_apply_pc(be, HK_FP64, &K, "ic0", NULL, r, z, NULL), HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "row 2"));
    hk_bcsr_free(&K);
    /* ILU(0) zero pivot: a_11 - a_10 a_01 / a_00 = 0 */
    D[1 * n + 1] = 0.4; /* 0.4 - (-1)(-1)/2.5 = 0 */
    bcsr_from_dense(n, D, &K);
    CU_ASSERT_EQUAL(hk_test_apply_pc(be, HK_FP64, &K, "ilu0", NULL, r, z, NULL), HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "row 2"));
    /* ic0 and fsai read one triangle: a nonsymmetric matrix is refused, naming the entry */
    hk_bcsr N;
    double *U = tridiag(n, -1.3, 2.5, -0.6);
    bcsr_from_dense(n, U, &N);
    CU_ASSERT_EQUAL(hk_test_apply_pc(be, HK_FP64, &N, "ic0", NULL, r, z, NULL), HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "symmetric"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "(0, 1)"));
    CU_ASSERT_EQUAL(hk_test_apply_pc(be, HK_FP64, &N, "fsai", NULL, r, z, NULL), HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "symmetric"));
    hk_bcsr_free(&N);
    free(U);
    /* bad option values are named */
    CU_ASSERT_EQUAL(hk_test_apply_pc(be, HK_FP64, &K, "poly", "pc.poly.kind=taylor", r, z, NULL),
                    HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "pc.poly.kind"));
    CU_ASSERT_EQUAL(hk_test_apply_pc(be, HK_FP64, &K, "poly", "pc.poly.degree=-1", r, z, NULL),
                    HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "pc.poly.degree"));
    CU_ASSERT_EQUAL(hk_test_apply_pc(be, HK_FP64, &K, "sai", "pc.sai.max=diagonal", r, z, NULL),
                    HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "pc.sai.max"));
    CU_ASSERT_EQUAL(hk_test_apply_pc(be, HK_FP64, &K, "sai", "pc.sai.qr=lu", r, z, NULL),
                    HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "pc.sai.qr"));
    hk_bcsr_free(&K);
    free(D);
}

HK_SUITE(
    pc, {"jacobi and none apply: r ./ diag(A)", test_jacobi},
    {"bjacobi apply: exact inverse node blocks (bs 2, 3)", test_bjacobi},
    {"poly apply: neumann, ls, chebyshev equal the polynomial evaluated densely", test_poly_apply},
    {"poly Lanczos bounds bracket lambda_max of the scaled 1D Laplacian", test_poly_bounds},
    {"ic0 is the exact Cholesky on (block) tridiagonal matrices", test_ic0_exact},
    {"ilu0 is the exact LU on (block) tridiagonal matrices", test_ilu0_exact},
    {"ic0, ilu0 exact with wide levels (parallel triangular solve)", test_ic0_ilu0_wide_levels},
    {"fsai with the full pattern is the exact inverse", test_fsai_exact},
    {"fsai k=1 and post-filtration match the closed form", test_fsai_closed_form},
    {"fsai pattern is B_k of the Low(B_p A) recursion", test_fsai_pattern},
    {"sai: exact on block-diagonal, least squares on tridiagonal (Householder and Gram-Schmidt)",
     test_sai},
    {"sai pattern: row maximum (equation 5.3) and column maximum (Find J) against dense",
     test_sai_pattern},
    {"set-up errors name the row / option", test_errors},
    {"every pc: in place, fp32 vectors, r^T M^-1 r > 0", test_every_pc_in_place},
    {"SBELL Table 3: ls < neumann < jacobi CG iterations (2D elasticity)", test_table3_ordering},
    {"fsai >= 2x fewer, ic0 fewer CG iterations than jacobi (3D elasticity)",
     test_fsai_ic0_vs_jacobi},
    {"sai with bicgstab and gmres, ilu0 with gmres (convection-diffusion)", test_sai_nonsymmetric})
