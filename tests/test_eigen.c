/* The eigensolver (LOBPCG, solver/eigen/) against closed forms on every backend: the 1D
 * Laplacian with and without a preconditioner, generalized problems with a diagonal and a
 * tridiagonal M, the 2D and 3D Laplacians' repeated eigenvalues found with their full
 * multiplicity, free-free chains (K singular: zero eigenvalues found as zero), 3D elasticity
 * against a dense reference; bad input; the same bytes on every run and thread count. The
 * block ops (block SpMV of every format, Gram products, updates, column dots) against host
 * references, and a device suite comparing the CUDA block ops and the whole LOBPCG with the
 * CPU. */
#include <float.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#include "eigen/eigen_impl.h"

/* ---- matrices with known spectra -------------------------------------------------------- */

/* A scalar matrix from a dense n x n row-major one (zeros dropped, diagonal always kept). */
static void from_dense(int64_t n, const double *D, hk_bcsr *A)
{
    memset(A, 0, sizeof *A);
    A->bs = 1;
    A->nbrows = A->nbcols = n;
    int64_t nnz = 0;
    for (int64_t i = 0; i < n * n; i++)
        nnz += D[i] != 0 || i / n == i % n;
    A->rowptr = malloc((size_t)(n + 1) * sizeof *A->rowptr);
    A->colind = malloc((size_t)nnz * sizeof *A->colind);
    A->val = malloc((size_t)nnz * sizeof *A->val);
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        A->rowptr[i] = q;
        for (int64_t j = 0; j < n; j++)
            if (D[i * n + j] != 0 || i == j) {
                A->colind[q] = (int32_t)j;
                A->val[q++] = D[i * n + j];
            }
    }
    A->rowptr[n] = q;
}

/* tridiag(lo, di, lo) of order n with the first and last diagonal entries d0 (Neumann: 1). */
static void tridiag(int64_t n, double di, double lo, double d0, hk_bcsr *A)
{
    hk_test_tridiag(n, A);
    for (int64_t i = 0; i < n; i++)
        for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
            A->val[q] = A->colind[q] == i ? ((i == 0 || i == n - 1) ? d0 : di) : lo;
}

/* S A S for the diagonal S (scaling rows and columns). */
static void scale_sym(hk_bcsr *A, const double *s)
{
    for (int64_t i = 0; i < A->nbrows; i++)
        for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
            A->val[q] *= s[i] * s[A->colind[q]];
}

/* The 7-point Laplacian on an N^3 grid, Dirichlet boundary eliminated (bs 1). */
static void laplace3d(int N, hk_bcsr *A)
{
    const int64_t n = (int64_t)N * N * N;
    memset(A, 0, sizeof *A);
    A->bs = 1;
    A->nbrows = A->nbcols = n;
    A->rowptr = malloc((size_t)(n + 1) * sizeof *A->rowptr);
    A->colind = malloc((size_t)(7 * n) * sizeof *A->colind);
    A->val = malloc((size_t)(7 * n) * sizeof *A->val);
    int64_t q = 0;
    for (int64_t r = 0; r < n; r++) {
        const int i = (int)(r % N), j = (int)(r / N % N), k = (int)(r / N / N);
        A->rowptr[r] = q;
        const int64_t nb[7] = {
            k > 0 ? r - N * N : -1, j > 0 ? r - N : -1,     i > 0 ? r - 1 : -1,        r,
            i < N - 1 ? r + 1 : -1, j < N - 1 ? r + N : -1, k < N - 1 ? r + N * N : -1};
        for (int t = 0; t < 7; t++)
            if (nb[t] >= 0) {
                A->colind[q] = (int32_t)nb[t];
                A->val[q++] = nb[t] == r ? 6.0 : -1.0;
            }
    }
    A->rowptr[n] = q;
}

/* Two uncoupled Neumann chains of n nodes as one chain of 2 x 2 blocks (each block the
 * identity times the scalar entry): every eigenvalue twice, 0 included. */
static void chain2(int64_t n, hk_bcsr *A)
{
    hk_bcsr T;
    tridiag(n, 2, -1, 1, &T);
    memset(A, 0, sizeof *A);
    A->bs = 2;
    A->nbrows = A->nbcols = n;
    A->rowptr = T.rowptr;
    A->colind = T.colind;
    const int64_t nnzb = T.rowptr[n];
    A->val = calloc((size_t)nnzb * 4, sizeof *A->val);
    for (int64_t q = 0; q < nnzb; q++)
        A->val[q * 4] = A->val[q * 4 + 3] = T.val[q];
    free(T.val);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Dense symmetric eigenvalues by cyclic Jacobi (the test's own reference, row-major A of
 * order n, destroyed): w ascending. */
static void dense_eigenvalues(int n, double *A, double *w)
{
    for (int sweep = 0; sweep < 60; sweep++) {
        double off = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (i != j) off += A[i * n + j] * A[i * n + j];
        if (off < 1e-30) break;
        for (int p = 0; p < n - 1; p++)
            for (int q = p + 1; q < n; q++) {
                const double apq = A[p * n + q];
                if (fabs(apq) < 1e-300) continue;
                const double tau = (A[q * n + q] - A[p * n + p]) / (2 * apq);
                const double t = (tau >= 0 ? 1 : -1) / (fabs(tau) + sqrt(1 + tau * tau));
                const double c = 1 / sqrt(1 + t * t), s = t * c;
                for (int k = 0; k < n; k++) {
                    const double akp = A[k * n + p], akq = A[k * n + q];
                    A[k * n + p] = c * akp - s * akq;
                    A[k * n + q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; k++) {
                    const double apk = A[p * n + k], aqk = A[q * n + k];
                    A[p * n + k] = c * apk - s * aqk;
                    A[q * n + k] = s * apk + c * aqk;
                }
            }
    }
    for (int i = 0; i < n; i++)
        w[i] = A[i * n + i];
    qsort(w, (size_t)n, sizeof *w, cmp_double);
}

/* ---- one case: K, M (bs of K, NULL: identity), the reference eigenvalues ----------------- */

enum {
    LAP1D,       /* tridiag(-1, 2, -1), n = 120: 2 - 2 cos(k pi / (n + 1)) */
    LAP1D_DIAGM, /* K = D^1/2 T D^1/2, M = D (varying): the eigenvalues of T */
    LAP1D_FEM,   /* K = T / h, M = h/6 tridiag(1, 4, 1): 6 (1 - cos t) / (h^2 (2 + cos t)) */
    LAP2D,       /* 5-point, N = 16: 4 - 2 cos(i pi/(N+1)) - 2 cos(j pi/(N+1)), pairs */
    LAP3D,       /* 7-point, N = 6: triples */
    NEUMANN1D,   /* free-free chain, n = 100: 2 - 2 cos(k pi / n), k = 0.. (one zero) */
    CHAIN2,      /* two free-free chains in 2 x 2 blocks: every eigenvalue twice, 0 too */
    ELAST3D      /* elasticity3d 3x3x3 with a varying diagonal M: dense reference */
};

typedef struct eig_case {
    const char *name;
    int kind;
    const char *opts;
    int nev;
} eig_case;

static const eig_case cases[] = {
    {"1D Laplacian, no preconditioner", LAP1D, "pc=none", 5},
    {"1D Laplacian, jacobi", LAP1D, "pc=jacobi", 6},
    {"1D Laplacian, amg", LAP1D, "pc=amg", 6},
    {"1D Laplacian, ic0, block 12", LAP1D, "pc=ic0 eigen.block=12", 6},
    {"1D Laplacian, shift 0", LAP1D, "pc=amg eigen.shift=0", 4},
    {"1D Laplacian, shift inside the spectrum", LAP1D, "pc=jacobi eigen.shift=0.01", 4},
    {"generalized, diagonal M", LAP1D_DIAGM, "pc=jacobi", 5},
    {"generalized, diagonal M, amg", LAP1D_DIAGM, "pc=amg", 5},
    {"generalized, tridiagonal M (1D FEM)", LAP1D_FEM, "pc=amg", 6},
    {"generalized, tridiagonal M, poly", LAP1D_FEM, "pc=poly", 4},
    {"generalized, tridiagonal M, amg in fp32", LAP1D_FEM, "pc=amg precision=mixed", 5},
    {"generalized, tridiagonal M, sell, block 16", LAP1D_FEM,
     "pc=bjacobi format=sell eigen.block=16", 5},
    {"2D Laplacian, repeated eigenvalues", LAP2D, "pc=amg", 8},
    {"2D Laplacian, a pair cut by nev", LAP2D, "pc=jacobi", 7},
    {"3D Laplacian, triple eigenvalues", LAP3D, "pc=amg", 7},
    {"free-free chain (K singular)", NEUMANN1D, "pc=amg", 5},
    {"free-free chain, jacobi", NEUMANN1D, "pc=jacobi", 5},
    {"two free-free chains, bs 2 (zero twice)", CHAIN2, "pc=amg", 6},
    {"3D elasticity vs dense, amg", ELAST3D, "pc=amg", 8},
    {"3D elasticity vs dense, fsai", ELAST3D, "pc=fsai", 6},
    {"3D elasticity vs dense, bsr -> sbell", ELAST3D, "pc=jacobi format=sbell", 6},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* The case's K, M (M->rowptr NULL: the identity), near-null space and reference eigenvalues
 * (ref: n values ascending, malloc'd). */
static void build(int kind, hk_bcsr *K, hk_bcsr *M, double **coords, double **ref)
{
    memset(K, 0, sizeof *K);
    memset(M, 0, sizeof *M);
    *coords = NULL;
    int64_t n = 0;
    double *w = NULL;
    switch (kind) {
    case LAP1D:
    case LAP1D_DIAGM:
    case LAP1D_FEM: {
        n = 120;
        tridiag(n, 2, -1, 2, K);
        w = malloc((size_t)n * sizeof *w);
        const double h = 1.0 / (double)(n + 1);
        for (int64_t k = 0; k < n; k++) {
            const double t = (double)(k + 1) * M_PI / (double)(n + 1);
            w[k] = kind == LAP1D_FEM ? 6 * (1 - cos(t)) / (h * h * (2 + cos(t))) : 2 - 2 * cos(t);
        }
        if (kind == LAP1D_DIAGM) {
            double *d = malloc((size_t)n * sizeof *d), *s = malloc((size_t)n * sizeof *s);
            for (int64_t i = 0; i < n; i++) {
                d[i] = 1 + 0.7 * sin(0.37 * (double)i) * sin(0.37 * (double)i) + 0.01 * (double)i;
                s[i] = sqrt(d[i]);
            }
            scale_sym(K, s);
            double *Dm = calloc((size_t)(n * n), sizeof *Dm);
            for (int64_t i = 0; i < n; i++)
                Dm[i * n + i] = d[i];
            from_dense(n, Dm, M);
            free(Dm);
            free(d);
            free(s);
        } else if (kind == LAP1D_FEM) {
            for (int64_t q = 0; q < K->rowptr[n]; q++)
                K->val[q] /= h;
            tridiag(n, 4 * h / 6, h / 6, 4 * h / 6, M);
        }
        break;
    }
    case LAP2D: {
        const int N = 16;
        HK_ASSERT_OK(hk_gen_poisson2d(N, K));
        n = (int64_t)N * N;
        w = malloc((size_t)n * sizeof *w);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                w[i * N + j] =
                    4 - 2 * cos((i + 1) * M_PI / (N + 1)) - 2 * cos((j + 1) * M_PI / (N + 1));
        break;
    }
    case LAP3D: {
        const int N = 6;
        laplace3d(N, K);
        n = (int64_t)N * N * N;
        w = malloc((size_t)n * sizeof *w);
        for (int64_t r = 0; r < n; r++) {
            const int i = (int)(r % N), j = (int)(r / N % N), k = (int)(r / N / N);
            w[r] = 6 - 2 * cos((i + 1) * M_PI / (N + 1)) - 2 * cos((j + 1) * M_PI / (N + 1)) -
                   2 * cos((k + 1) * M_PI / (N + 1));
        }
        break;
    }
    case NEUMANN1D:
    case CHAIN2: {
        const int64_t m = 100;
        n = kind == CHAIN2 ? 2 * m : m;
        if (kind == CHAIN2)
            chain2(m, K);
        else
            tridiag(m, 2, -1, 1, K);
        w = malloc((size_t)n * sizeof *w);
        for (int64_t k = 0; k < n; k++) {
            const int64_t kk = kind == CHAIN2 ? k / 2 : k;
            w[k] = 2 - 2 * cos((double)kk * M_PI / (double)m);
        }
        break;
    }
    case ELAST3D: {
        HK_ASSERT_OK(hk_gen_elasticity3d(3, 3, 3, K));
        HK_ASSERT_OK(hk_gen_elasticity3d_coords(3, 3, 3, coords));
        n = K->nbrows * K->bs;
        double *d = malloc((size_t)n * sizeof *d);
        for (int64_t i = 0; i < n; i++)
            d[i] = 0.02 * (1 + 0.5 * cos(0.3 * (double)i));
        /* M diagonal (bs 1: the solver regroups it), reference: eig(M^-1/2 K M^-1/2) */
        double *Dm = calloc((size_t)(n * n), sizeof *Dm);
        for (int64_t i = 0; i < n; i++)
            Dm[i * n + i] = d[i];
        from_dense(n, Dm, M);
        free(Dm);
        double *Kd = hk_test_dense_of(K);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                Kd[i * n + j] /= sqrt(d[i] * d[j]);
        w = malloc((size_t)n * sizeof *w);
        dense_eigenvalues((int)n, Kd, w);
        free(Kd);
        free(d);
        break;
    }
    }
    qsort(w, (size_t)n, sizeof *w, cmp_double);
    *ref = w;
}

/* ||A||_inf of a host block CSR. */
static double norm_inf(const hk_bcsr *A)
{
    const int bs = A->bs;
    double best = 0;
    for (int64_t i = 0; i < A->nbrows; i++)
        for (int r = 0; r < bs; r++) {
            double s = 0;
            for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
                for (int c = 0; c < bs; c++)
                    s += fabs(A->val[((size_t)q * bs + r) * bs + c]);
            if (s > best) best = s;
        }
    return best;
}

/* The checks every solve must pass, on the host: each pair's residual within 2 tol (or the
 * rounding floor), X^T M X = I, the eigenvalues against ref. */
static void check_pairs(const char *what, const hk_bcsr *K, const hk_bcsr *M, int nev,
                        const double *lambda, const double *X, const hk_eigen_result *res,
                        double tol, const double *ref)
{
    const int64_t n = K->nbrows * K->bs;
    double *kx = malloc((size_t)n * sizeof *kx), *mx = malloc((size_t)n * sizeof *mx);
    const double knorm = norm_inf(K);
    int bad = 0;
    CU_ASSERT_EQUAL(res->converged, nev);
    bad |= res->converged != nev;
    for (int j = 0; j < nev; j++) {
        const double *x = X + (size_t)j * n;
        hk_bcsr_spmv(K, x, kx);
        if (M)
            hk_bcsr_spmv(M, x, mx);
        else
            memcpy(mx, x, (size_t)n * sizeof *mx);
        double rr = 0, mm = 0, xx = 0;
        for (int64_t i = 0; i < n; i++) {
            const double r = kx[i] - lambda[j] * mx[i];
            rr += r * r;
            mm += mx[i] * mx[i];
            xx += x[i] * x[i];
        }
        const double rn = sqrt(rr), den = fabs(lambda[j]) * sqrt(mm);
        const int ok_res = rn <= 2 * tol * den || rn <= 1e-12 * knorm * sqrt(xx);
        /* closed forms: relative where the eigenvalue is not zero, else against ||K|| */
        const double err = fabs(lambda[j] - ref[j]);
        const int ok_val = err <= 1e-9 * fabs(ref[j]) || err <= 1e-11 * knorm;
        CU_ASSERT(ok_res);
        CU_ASSERT(ok_val);
        if (!ok_res || !ok_val) {
            printf("\n  %s: pair %d lambda %.15g (exact %.15g, error %.2e), ||r|| %.3e vs "
                   "tol (lambda - shift)||Mx|| %.3e",
                   what, j, lambda[j], ref[j], err, rn, tol * den);
            bad = 1;
        }
        /* M-orthonormal columns */
        for (int k = 0; k <= j; k++) {
            double s = 0;
            for (int64_t i = 0; i < n; i++)
                s += X[(size_t)k * n + i] * mx[i];
            const int ok = fabs(s - (k == j)) <= 1e-8;
            CU_ASSERT(ok);
            if (!ok) {
                printf("\n  %s: x_%d^T M x_%d = %.3e", what, k, j, s);
                bad = 1;
            }
        }
    }
    if (bad)
        printf("\n  %s: %d of %d converged in %d iterations (%d restarts), max residual %.2e", what,
               res->converged, nev, res->iterations, res->restarts, res->max_residual);
    free(kx);
    free(mx);
}

static int run(const hk_backend *be, const hk_bcsr *K, const hk_bcsr *M, const double *coords,
               const char *opts, int nev, double *lambda, double *X, hk_eigen_result *res)
{
    char text[512];
    hk_options *o = NULL;
    hk_eigen *e = NULL;
    snprintf(text, sizeof text, "backend=%s eigen.tol=1e-8 eigen.maxit=3000 %s",
             hk_backend_name(be), opts);
    int err = hk_options_create(&o);
    if (!err) err = hk_options_parse(o, text);
    const hk_nearnull nn = {.dim = coords ? K->bs : 0, .coords = coords};
    if (!err) err = hk_eigen_create(K, M, coords ? &nn : NULL, o, &e);
    if (!err) err = hk_eigen_solve(e, nev, lambda, X, NULL, res);
    if (err) printf("\n  %s: %s", text, hk_error_message());
    hk_eigen_destroy(e);
    hk_options_destroy(o);
    return err;
}

static void test_closed_forms(void)
{
    for (const hk_backend *const *be = hk_test_backends(); *be; be++)
        for (int c = 0; c < NCASES; c++) {
            hk_bcsr K, M;
            double *coords, *ref;
            build(cases[c].kind, &K, &M, &coords, &ref);
            const int64_t n = K.nbrows * K.bs;
            const int nev = cases[c].nev;
            double *lambda = calloc((size_t)nev, sizeof *lambda);
            double *X = calloc((size_t)n * nev, sizeof *X);
            hk_eigen_result res;
            const hk_bcsr *Mp = M.rowptr ? &M : NULL;
            char what[256];
            snprintf(what, sizeof what, "%s on %s", cases[c].name, hk_backend_name(*be));
            if (run(*be, &K, Mp, coords, cases[c].opts, nev, lambda, X, &res) == 0) {
                /* the regrouped M of bs 1 for a bs 3 K is the same scalar matrix */
                check_pairs(what, &K, Mp, nev, lambda, X, &res, 1e-8, ref);
            } else {
                CU_FAIL("eigensolver failed");
            }
            free(lambda);
            free(X);
            free(coords);
            free(ref);
            hk_bcsr_free(&K);
            hk_bcsr_free(&M);
        }
}

/* The full multiplicity of repeated eigenvalues: the 2D Laplacian's pairs and the 3D one's
 * triples are each found as many times as they occur, with M-orthonormal vectors (checked in
 * check_pairs), i.e. the whole eigenspace. */
static void test_multiplicity(void)
{
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        const int kinds[2] = {LAP2D, LAP3D}, nevs[2] = {8, 7},
                  mult[2][8] = {{1, 2, 1, 2, 2}, {1, 3, 3}};
        for (int t = 0; t < 2; t++) {
            hk_bcsr K, M;
            double *coords, *ref;
            build(kinds[t], &K, &M, &coords, &ref);
            const int64_t n = K.nbrows;
            double lambda[8];
            double *X = calloc((size_t)n * 8, sizeof *X);
            hk_eigen_result res;
            HK_ASSERT_OK(run(*be, &K, NULL, NULL, "pc=amg", nevs[t], lambda, X, &res));
            /* group equal eigenvalues (to 1e-8) and compare the group sizes */
            int g = 0, j = 0;
            while (j < nevs[t]) {
                int c = 1;
                while (j + c < nevs[t] && fabs(lambda[j + c] - lambda[j]) <= 1e-8 * lambda[j])
                    c++;
                CU_ASSERT_EQUAL(c, mult[t][g]);
                if (c != mult[t][g])
                    printf("\n  %s: eigenvalue %.12g found %d times, expected %d",
                           hk_backend_name(*be), lambda[j], c, mult[t][g]);
                g++;
                j += c;
            }
            free(X);
            free(ref);
            hk_bcsr_free(&K);
        }
    }
}

/* A free-free structure: K singular; the zero eigenvalue(s) found as zero (to rounding against
 * ||K||) with the rigid motion as vector: the constant for the chain. */
static void test_free_free(void)
{
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        hk_bcsr K, M;
        double *coords, *ref;
        build(NEUMANN1D, &K, &M, &coords, &ref);
        const int64_t n = K.nbrows;
        double lambda[3], *X = calloc((size_t)n * 3, sizeof *X);
        hk_eigen_result res;
        HK_ASSERT_OK(run(*be, &K, NULL, NULL, "pc=amg", 3, lambda, X, &res));
        CU_ASSERT(fabs(lambda[0]) <= 1e-12);
        CU_ASSERT(res.shift < 0);
        double dev = 0;
        for (int64_t i = 0; i < n; i++)
            dev = fmax(dev, fabs(X[i] - 1 / sqrt((double)n)));
        CU_ASSERT(dev <= 1e-8);
        if (fabs(lambda[0]) > 1e-12 || dev > 1e-8)
            printf("\n  %s: lambda_0 = %.3e, constant vector off by %.3e", hk_backend_name(*be),
                   lambda[0], dev);
        CU_ASSERT(fabs(lambda[1] - ref[1]) <= 1e-9 * ref[1]);
        free(X);
        free(ref);
        hk_bcsr_free(&K);
    }
}

/* The same input gives the same bytes: twice on one backend, and on the CPU with 1 and 2
 * threads. */
static void test_deterministic(void)
{
    hk_bcsr K, M;
    double *coords, *ref;
    build(ELAST3D, &K, &M, &coords, &ref);
    const int64_t n = K.nbrows * K.bs;
    const int nev = 6;
    double l1[6], l2[6];
    double *X1 = calloc((size_t)n * nev, sizeof *X1), *X2 = calloc((size_t)n * nev, sizeof *X2);
    hk_eigen_result r1, r2;
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        const int cpu = !strcmp(hk_backend_name(*be), "cpu");
        const int nt = omp_get_max_threads();
        HK_ASSERT_OK(run(*be, &K, &M, coords, "pc=amg", nev, l1, X1, &r1));
        if (cpu) omp_set_num_threads(nt > 1 ? 1 : 2);
        HK_ASSERT_OK(run(*be, &K, &M, coords, "pc=amg", nev, l2, X2, &r2));
        if (cpu) omp_set_num_threads(nt);
        CU_ASSERT_EQUAL(r1.iterations, r2.iterations);
        CU_ASSERT_EQUAL(memcmp(l1, l2, sizeof l1), 0);
        CU_ASSERT_EQUAL(memcmp(X1, X2, (size_t)n * nev * sizeof *X1), 0);
    }
    free(X1);
    free(X2);
    free(coords);
    free(ref);
    hk_bcsr_free(&K);
    hk_bcsr_free(&M);
}

/* One bad input: create then solve with nev, expecting an error whose message holds want. */
static void expect_error(const hk_bcsr *K, const hk_bcsr *M, const char *opts, int nev,
                         const char *want)
{
    hk_options *o = NULL;
    hk_eigen *e = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    int err = hk_options_parse(o, opts);
    if (!err) err = hk_eigen_create(K, M, NULL, o, &e);
    double lambda[64];
    hk_eigen_result res;
    if (!err) err = hk_eigen_solve(e, nev, lambda, NULL, NULL, &res);
    CU_ASSERT(err != 0);
    const char *msg = err ? hk_error_message() : "";
    CU_ASSERT(strstr(msg, want) != NULL);
    if (!err || !strstr(msg, want))
        printf("\n  %s (nev %d): expected an error with '%s', got: %s", opts, nev, want,
               err ? msg : "success");
    hk_error_clear();
    hk_eigen_destroy(e);
    hk_options_destroy(o);
}

static void test_bad_input(void)
{
    hk_bcsr K, Kneg, M, Mneg, Msmall, Mindef;
    tridiag(40, 2, -1, 2, &K);
    tridiag(40, 1, -1, 1, &Kneg); /* 1 - 2 cos(k pi / 41): negative for k < 14 */
    tridiag(40, 1, 0.1, 1, &M);
    tridiag(40, 1, 0.1, -1, &Mneg);
    tridiag(30, 1, 0.1, 1, &Msmall);
    /* positive diagonal, indefinite: off-diagonal 0.9 > 1/(2 cos(pi/41)) */
    tridiag(40, 1, 0.9, 1, &Mindef);
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        char o[256];
        const char *bn = hk_backend_name(*be);
        snprintf(o, sizeof o, "backend=%s pc=jacobi", bn);
        expect_error(&K, NULL, o, 0, "at least one");
        expect_error(&K, NULL, o, -3, "at least one");
        expect_error(&K, NULL, o, 41, "only 40 unknowns");
        expect_error(&K, &Msmall, o, 3, "same size");
        expect_error(&K, &Mneg, o, 3, "not positive definite");
        expect_error(&K, &Mindef, o, 3, "positive definite");
        snprintf(o, sizeof o, "backend=%s eigen.tolerance=1e-6", bn);
        expect_error(&K, NULL, o, 3, "eigen.tol, eigen.maxit");
        snprintf(o, sizeof o, "backend=%s method=pipecg", bn);
        expect_error(&K, NULL, o, 3, "linear solver");
        snprintf(o, sizeof o, "backend=%s pc.amg.bogus=1", bn);
        expect_error(&K, NULL, o, 3, "unknown option 'pc.amg.bogus'");
        snprintf(o, sizeof o, "backend=%s pc=sai", bn);
        expect_error(&K, NULL, o, 3, "not symmetric positive definite");
        snprintf(o, sizeof o, "backend=%s eigen.block=2", bn);
        expect_error(&K, NULL, o, 3, "eigen.block=2");
        snprintf(o, sizeof o, "backend=%s eigen.shift=low", bn);
        expect_error(&K, NULL, o, 3, "eigen.shift=low");
        snprintf(o, sizeof o, "backend=%s eigen.tol=0", bn);
        expect_error(&K, NULL, o, 3, "eigen.tol=0");
        /* K with negative eigenvalues */
        snprintf(o, sizeof o, "backend=%s pc=none eigen.tol=1e-8", bn);
        expect_error(&Kneg, NULL, o, 3, "not positive semidefinite");
    }
    hk_bcsr_free(&K);
    hk_bcsr_free(&Kneg);
    hk_bcsr_free(&M);
    hk_bcsr_free(&Mneg);
    hk_bcsr_free(&Msmall);
    hk_bcsr_free(&Mindef);
}

HK_SUITE(eigen, {"closed-form eigenvalues, every case and backend", test_closed_forms},
         {"repeated eigenvalues with their full multiplicity", test_multiplicity},
         {"free-free: zero eigenvalue and rigid motion", test_free_free},
         {"same bytes on every run and thread count", test_deterministic},
         {"bad input: clear errors", test_bad_input})

/* ---- the block ops ---------------------------------------------------------------------- */

/* A backend block of the host values h (n * k entries). */
static hk_vec *upload(const hk_backend *be, int64_t len, const double *h)
{
    hk_vec *v = NULL;
    HK_ASSERT_OK(hk_vec_create(be, len, HK_FP64, &v));
    HK_ASSERT_OK(hk_vec_upload(v, h));
    return v;
}

static double *download(const hk_vec *v)
{
    double *h = malloc((size_t)v->n * sizeof *h);
    HK_ASSERT_OK(hk_vec_download(v, h));
    return h;
}

/* max |a - b| / max |b| over len entries */
static double rel_err(const double *a, const double *b, int64_t len)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < len; i++) {
        num = fmax(num, fabs(a[i] - b[i]));
        den = fmax(den, fabs(b[i]));
    }
    return den > 0 ? num / den : num;
}

/* Matrices of the block SpMV tests: 3D elasticity (bs 3), 2D elasticity (bs 2), Poisson (bs 1),
 * a random block matrix with empty rows (bs 2). */
static void op_matrix(int t, hk_bcsr *K)
{
    switch (t) {
    case 0:
        HK_ASSERT_OK(hk_gen_elasticity3d(4, 3, 3, K));
        break;
    case 1:
        HK_ASSERT_OK(hk_gen_elasticity2d(9, 7, K));
        break;
    case 2:
        HK_ASSERT_OK(hk_gen_poisson2d(19, K));
        break;
    default:
        HK_ASSERT_OK(hk_gen_random(157, 157, 2, 6.5, 1, 11, K));
        break;
    }
}

/* Y = A X for k columns equals k single SpMVs (bit for bit on the CPU, whose block kernels sum
 * in the single SpMV's order; to rounding on cuda, whose csr kernel differs) and the host
 * reference, for every format and 1, 3, 8 and 11 columns (passes of 8 + 2 + 1). */
static void test_block_spmv(void)
{
    static const int ks[4] = {1, 3, 8, 11};
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        const int cpu = !strcmp(hk_backend_name(*be), "cpu");
        for (int t = 0; t < 4; t++) {
            hk_bcsr K;
            op_matrix(t, &K);
            const int64_t n = K.nbrows * K.bs;
            for (int f = 0; f < HK_FMT_COUNT; f++) {
                if (cpu && (f == HK_FMT_CUSPARSE_CSR || f == HK_FMT_CUSPARSE_BSR)) continue;
                hk_mat *A = NULL;
                HK_ASSERT_OK(hk_mat_create(*be, &K, (hk_format)f, HK_FP64, NULL, &A));
                for (int ik = 0; ik < 4; ik++) {
                    const int k = ks[ik];
                    double *hx = hk_test_rand_vec(n * k, 7 + ik);
                    double *ref = malloc((size_t)(n * k) * sizeof *ref);
                    for (int j = 0; j < k; j++)
                        hk_bcsr_spmv(&K, hx + j * n, ref + j * n);
                    hk_vec *X = upload(*be, n * k, hx), *Y = NULL, *Ys = NULL;
                    HK_ASSERT_OK(hk_vec_create(*be, n * k, HK_FP64, &Y));
                    HK_ASSERT_OK(hk_vec_create(*be, n * k, HK_FP64, &Ys));
                    HK_ASSERT_OK((*be)->block_spmv(A, k, X, Y));
                    for (int j = 0; j < k; j++) {
                        hk_vec xj = {*be, n, HK_FP64, (double *)X->data + j * n};
                        hk_vec yj = {*be, n, HK_FP64, (double *)Ys->data + j * n};
                        HK_ASSERT_OK(hk_mat_spmv(A, &xj, &yj));
                    }
                    double *hy = download(Y), *hs = download(Ys);
                    const double e1 = rel_err(hy, hs, n * k), e2 = rel_err(hy, ref, n * k);
                    int same = 1;
                    for (int64_t i = 0; i < n * k; i++)
                        same &= hy[i] == hs[i];
                    const int ok = e1 <= 1e-13 && e2 <= 1e-13 && (!cpu || same);
                    CU_ASSERT(ok);
                    if (!ok)
                        printf("\n  %s %s matrix %d, %d columns: vs single SpMVs %.2e%s, vs "
                               "host %.2e",
                               hk_backend_name(*be), hk_format_name((hk_format)f), t, k, e1,
                               same ? "" : " (not bit for bit)", e2);
                    free(hx);
                    free(ref);
                    free(hy);
                    free(hs);
                    hk_vec_destroy(X);
                    hk_vec_destroy(Y);
                    hk_vec_destroy(Ys);
                }
                hk_mat_destroy(A);
            }
            hk_bcsr_free(&K);
        }
    }
}

/* G = X^T Y, Y = X C + beta Y and the column dots against host sums, on blocks and on views
 * of their columns; two Gram products of the same input give the same bytes. */
static void test_block_reductions(void)
{
    const int64_t n = 3001;
    const int p = 7, q = 5;
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        double *hx = hk_test_rand_vec(n * (p + 2), 21), *hy = hk_test_rand_vec(n * q, 22);
        double *hc = hk_test_rand_vec(p * q, 23);
        hk_vec *X = upload(*be, n * (p + 2), hx), *Y = upload(*be, n * q, hy);
        /* X's columns 2 .. p+1 as a view */
        hk_vec Xv = {*be, n * p, HK_FP64, (double *)X->data + 2 * n};
        const double *xv = hx + 2 * n;
        double G[35], G2[35], Gref[35];
        HK_ASSERT_OK((*be)->block_gram(n, p, &Xv, q, Y, G));
        HK_ASSERT_OK((*be)->block_gram(n, p, &Xv, q, Y, G2));
        for (int i = 0; i < p; i++)
            for (int j = 0; j < q; j++) {
                long double s = 0;
                for (int64_t r = 0; r < n; r++)
                    s += (long double)xv[i * n + r] * hy[j * n + r];
                Gref[i + j * p] = (double)s;
            }
        CU_ASSERT(rel_err(G, Gref, p * q) <= 1e-13);
        CU_ASSERT_EQUAL(memcmp(G, G2, sizeof G), 0);
        /* column dots of the first q columns of X with Y */
        double d[5], dref[5];
        HK_ASSERT_OK((*be)->block_dots(n, q, X, Y, d));
        for (int j = 0; j < q; j++) {
            long double s = 0;
            for (int64_t r = 0; r < n; r++)
                s += (long double)hx[j * n + r] * hy[j * n + r];
            dref[j] = (double)s;
        }
        CU_ASSERT(rel_err(d, dref, q) <= 1e-13);
        /* Y = X C + beta Y for beta 0 and 0.5 */
        for (int b = 0; b < 2; b++) {
            const double beta = b ? 0.5 : 0;
            HK_ASSERT_OK(hk_vec_upload(Y, hy));
            HK_ASSERT_OK((*be)->block_update(n, p, &Xv, q, hc, beta, Y));
            double *got = download(Y), *want = malloc((size_t)(n * q) * sizeof *want);
            for (int j = 0; j < q; j++)
                for (int64_t r = 0; r < n; r++) {
                    double s = 0;
                    for (int i = 0; i < p; i++)
                        s += xv[i * n + r] * hc[i + j * p];
                    want[j * n + r] = s + beta * hy[j * n + r];
                }
            const double e = rel_err(got, want, n * q);
            CU_ASSERT(e <= 1e-13);
            if (e > 1e-13)
                printf("\n  %s block_update beta %g: %.2e", hk_backend_name(*be), beta, e);
            free(got);
            free(want);
        }
        free(hx);
        free(hy);
        free(hc);
        hk_vec_destroy(X);
        hk_vec_destroy(Y);
    }
}

/* The library's dense symmetric eigensolver (the Rayleigh-Ritz step's) against the test's
 * Jacobi: eigenvalues and A V = V diag(w), V^T V = I, on a matrix with a repeated eigenvalue
 * and a wide range of magnitudes. */
static void test_dense_symeig(void)
{
    enum { N = 37 };
    double A[N * N], Ac[N * N], Aj[N * N], V[N * N], w[N], wj[N];
    double *h = hk_test_rand_vec(N * N, 5);
    /* A = Q diag(d) Q^T with d spanning 1e-9 .. 1e3, one value three times */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            A[i + j * N] = 0;
    double d[N];
    for (int i = 0; i < N; i++)
        d[i] = i >= 4 && i <= 6 ? 0.5 : pow(10.0, -9 + 12.0 * i / (N - 1));
    /* Q from Gram-Schmidt of random columns */
    double Q[N * N];
    memcpy(Q, h, sizeof Q);
    for (int j = 0; j < N; j++) {
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < j; k++) {
                double s = 0;
                for (int i = 0; i < N; i++)
                    s += Q[i + k * N] * Q[i + j * N];
                for (int i = 0; i < N; i++)
                    Q[i + j * N] -= s * Q[i + k * N];
            }
        double s = 0;
        for (int i = 0; i < N; i++)
            s += Q[i + j * N] * Q[i + j * N];
        for (int i = 0; i < N; i++)
            Q[i + j * N] /= sqrt(s);
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < N; k++)
                s += Q[i + k * N] * d[k] * Q[j + k * N];
            A[i + j * N] = s;
        }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            A[i + j * N] = A[j + i * N] = 0.5 * (A[i + j * N] + A[j + i * N]);
    memcpy(Ac, A, sizeof A);
    memcpy(Aj, A, sizeof A);
    HK_ASSERT_OK(hk_eig_symeig(N, Ac, w, V));
    dense_eigenvalues(N, Aj, wj);
    double dmax = 1e3, worst = 0, orth = 0;
    for (int i = 0; i < N; i++)
        worst = fmax(worst, fabs(w[i] - wj[i]));
    CU_ASSERT(worst <= 1e-13 * dmax);
    for (int j = 0; j < N; j++) {
        for (int i = 0; i < N; i++) {
            double s = 0;
            for (int k = 0; k < N; k++)
                s += A[i + k * N] * V[k + j * N];
            worst = fmax(worst, fabs(s - w[j] * V[i + j * N]));
        }
        for (int k = 0; k < N; k++) {
            double s = 0;
            for (int i = 0; i < N; i++)
                s += V[i + k * N] * V[i + j * N];
            orth = fmax(orth, fabs(s - (k == j)));
        }
    }
    CU_ASSERT(worst <= 1e-12 * dmax);
    CU_ASSERT(orth <= 1e-13);
    if (worst > 1e-12 * dmax || orth > 1e-13)
        printf("\n  dense eigensolver: residual %.2e, orthogonality %.2e", worst, orth);
    free(h);
}

/* ---- hooke solve --eigen ---------------------------------------------------------------- */

/* The eigenvalues printed by `hooke solve --eigen` (lines "   j  value ..."), into v. */
static int parse_eigenvalues(const char *out, double *v, int max)
{
    int k = 0;
    for (const char *l = out; l && *l && k < max;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        int j;
        double x;
        if (sscanf(l, "%d %lf", &j, &x) == 2 && j == k + 1 && strstr(l, "e") != NULL && l[0] == ' ')
            v[k++] = x;
    }
    return k;
}

static void test_command(void)
{
    char out[16384], path[512];
    /* poisson:10: 4 - 2 cos(i pi/11) - 2 cos(j pi/11); the 4 lowest: (1,1), (1,2) twice, (2,2) */
    double ref[4], v[8];
    const double c1 = cos(M_PI / 11), c2 = cos(2 * M_PI / 11);
    ref[0] = 4 - 4 * c1;
    ref[1] = ref[2] = 4 - 2 * c1 - 2 * c2;
    ref[3] = 4 - 4 * c2;
    int rc = hk_test_solve_cmd("--generate poisson:10 --eigen 4 --backend cpu pc=jacobi "
                               "eigen.tol=1e-10 -o X.mtx",
                               out, sizeof out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(parse_eigenvalues(out, v, 8), 4);
    for (int j = 0; j < 4; j++)
        CU_ASSERT(fabs(v[j] - ref[j]) <= 1e-9 * ref[j]);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "converged: 4 of 4"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "lobpcg + jacobi"));
    if (rc) printf("\n%s", out);
    /* the eigenvectors file: 100 rows, 4 columns */
    snprintf(path, sizeof path, "%s/X.mtx", hk_test_tmpdir());
    int64_t rows = 0;
    int cols = 0;
    double *X = NULL;
    HK_ASSERT_OK(hk_mm_read_array(path, &rows, &cols, &X));
    CU_ASSERT_EQUAL(rows, 100);
    CU_ASSERT_EQUAL(cols, 4);
    free(X);
    /* JSON */
    rc = hk_test_solve_cmd("--generate poisson:10 --eigen 4 --backend cpu --json", out, sizeof out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"converged\": 4"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"eigenvalues\": ["));
    /* a mass matrix file: M = 2 I halves the eigenvalues; frequencies printed */
    hk_bcsr K, M;
    HK_ASSERT_OK(hk_gen_poisson2d(10, &K));
    tridiag(100, 2, 0, 2, &M);
    snprintf(path, sizeof path, "%s/K.mtx", hk_test_tmpdir());
    HK_ASSERT_OK(hk_mm_write_matrix(path, &K));
    snprintf(path, sizeof path, "%s/M.mtx", hk_test_tmpdir());
    HK_ASSERT_OK(hk_mm_write_matrix(path, &M));
    rc = hk_test_solve_cmd("K.mtx --mass M.mtx --eigen 4 --backend cpu eigen.tol=1e-10", out,
                           sizeof out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(parse_eigenvalues(out, v, 8), 4);
    for (int j = 0; j < 4; j++)
        CU_ASSERT(fabs(v[j] - ref[j] / 2) <= 1e-9 * ref[j]);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "frequency (Hz)"));
    if (rc) printf("\n%s", out);
    /* bad input: exit 2 with a sentence; not converged: exit 1 */
    rc = hk_test_solve_cmd("K.mtx --eigen 0", out, sizeof out);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "number of eigenpairs"));
    rc = hk_test_solve_cmd("K.mtx --eigen 200 --backend cpu", out, sizeof out);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "at most 100"));
    hk_bcsr_free(&M);
    tridiag(50, 2, 0, 2, &M);
    snprintf(path, sizeof path, "%s/M50.mtx", hk_test_tmpdir());
    HK_ASSERT_OK(hk_mm_write_matrix(path, &M));
    rc = hk_test_solve_cmd("K.mtx --mass M50.mtx --eigen 3", out, sizeof out);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "same dofs"));
    rc = hk_test_solve_cmd("K.mtx --eigen 3 eigen.tolerance=1", out, sizeof out);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "eigen.tol, eigen.maxit"));
    rc = hk_test_solve_cmd("K.mtx --eigen 3 --backend cpu pc=none eigen.maxit=1", out, sizeof out);
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "eigen.maxit"));
    rc = hk_test_solve_cmd("--help", out, sizeof out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--eigen N"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "eigen.shift=auto"));
    hk_bcsr_free(&K);
    hk_bcsr_free(&M);
}

HK_SUITE(eigen_ops, {"block SpMV of every format = single SpMVs and host", test_block_spmv},
         {"Gram products, block updates, column dots", test_block_reductions},
         {"dense symmetric eigensolver of the Rayleigh-Ritz step", test_dense_symeig},
         {"hooke solve --eigen", test_command})

/* ---- device suite: CUDA against the CPU ------------------------------------------------- */

/* The block ops on cuda and cpu from the same input, entry for entry to rounding. */
static void test_cuda_block_ops(void)
{
    const hk_backend *cu = hk_test_cuda_backend(), *cpu = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    static const hk_format fmts[] = {HK_FMT_CSR,  HK_FMT_BSR,   HK_FMT_ELL,  HK_FMT_SELL,
                                     HK_FMT_BELL, HK_FMT_SBELL, HK_FMT_PCSR, HK_FMT_CUSPARSE_BSR};
    for (int t = 0; t < 4; t++) {
        hk_bcsr K;
        op_matrix(t, &K);
        const int64_t n = K.nbrows * K.bs;
        for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
            for (int k = 1; k <= 16; k += 5) {
                hk_mat *Ag = NULL, *Ac = NULL;
                const hk_format fc = fmts[f] == HK_FMT_CUSPARSE_BSR ? HK_FMT_BSR : fmts[f];
                HK_ASSERT_OK(hk_mat_create(cu, &K, fmts[f], HK_FP64, NULL, &Ag));
                HK_ASSERT_OK(hk_mat_create(cpu, &K, fc, HK_FP64, NULL, &Ac));
                double *hx = hk_test_rand_vec(n * k, 31 + k);
                hk_vec *Xg = upload(cu, n * k, hx), *Xc = upload(cpu, n * k, hx), *Yg, *Yc;
                HK_ASSERT_OK(hk_vec_create(cu, n * k, HK_FP64, &Yg));
                HK_ASSERT_OK(hk_vec_create(cpu, n * k, HK_FP64, &Yc));
                HK_ASSERT_OK(cu->block_spmv(Ag, k, Xg, Yg));
                HK_ASSERT_OK(cpu->block_spmv(Ac, k, Xc, Yc));
                double *yg = download(Yg), *yc = download(Yc);
                const double e = rel_err(yg, yc, n * k);
                CU_ASSERT(e <= 1e-13);
                if (e > 1e-13)
                    printf("\n  block SpMV %s, matrix %d, %d columns: cuda vs cpu %.2e",
                           hk_format_name(fmts[f]), t, k, e);
                free(hx);
                free(yg);
                free(yc);
                hk_vec_destroy(Xg);
                hk_vec_destroy(Xc);
                hk_vec_destroy(Yg);
                hk_vec_destroy(Yc);
                hk_mat_destroy(Ag);
                hk_mat_destroy(Ac);
            }
        hk_bcsr_free(&K);
    }
    /* Gram, update, dots with 48 columns (a basis of three blocks of 16) */
    const int64_t n = 20011;
    const int p = 48, q = 48;
    double *hx = hk_test_rand_vec(n * p, 41), *hy = hk_test_rand_vec(n * q, 42);
    double *hc = hk_test_rand_vec(p * q, 43);
    hk_vec *Xg = upload(cu, n * p, hx), *Yg = upload(cu, n * q, hy);
    hk_vec *Xc = upload(cpu, n * p, hx), *Yc = upload(cpu, n * q, hy);
    double *Gg = malloc(sizeof(double) * p * q), *Gc = malloc(sizeof(double) * p * q);
    HK_ASSERT_OK(cu->block_gram(n, p, Xg, q, Yg, Gg));
    HK_ASSERT_OK(cpu->block_gram(n, p, Xc, q, Yc, Gc));
    CU_ASSERT(rel_err(Gg, Gc, p * q) <= 1e-12);
    HK_ASSERT_OK(cu->block_gram(n, p, Xg, q, Yg, Gc));
    CU_ASSERT_EQUAL(memcmp(Gg, Gc, sizeof(double) * p * q), 0); /* repeats on the device */
    HK_ASSERT_OK(cu->block_dots(n, q, Xg, Yg, Gg));
    HK_ASSERT_OK(cpu->block_dots(n, q, Xc, Yc, Gc));
    CU_ASSERT(rel_err(Gg, Gc, q) <= 1e-12);
    HK_ASSERT_OK(cu->block_update(n, p, Xg, q, hc, 0.25, Yg));
    HK_ASSERT_OK(cpu->block_update(n, p, Xc, q, hc, 0.25, Yc));
    double *yg = download(Yg), *yc = download(Yc);
    CU_ASSERT(rel_err(yg, yc, n * q) <= 1e-13);
    free(yg);
    free(yc);
    free(Gg);
    free(Gc);
    free(hx);
    free(hy);
    free(hc);
    hk_vec_destroy(Xg);
    hk_vec_destroy(Yg);
    hk_vec_destroy(Xc);
    hk_vec_destroy(Yc);
}

/* The whole LOBPCG on cuda against cpu: the same eigenvalues to 1e-10, the same eigenspaces
 * (X_cpu^T M X_cuda has orthonormal columns to 1e-7, also across the degenerate pairs), the
 * iteration counts within two plus a tenth (rounding steers long runs a little). */
static void test_cuda_lobpcg(void)
{
    const hk_backend *cu = hk_test_cuda_backend(), *cpu = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    static const int kinds[] = {ELAST3D, LAP2D, CHAIN2, LAP1D_FEM};
    static const char *const opts[] = {"pc=amg", "pc=amg format=sbell", "pc=jacobi", "pc=fsai"};
    for (int t = 0; t < 4; t++)
        for (int o = 0; o < 4; o++) {
            hk_bcsr K, M;
            double *coords, *ref;
            build(kinds[t], &K, &M, &coords, &ref);
            if (kinds[t] != ELAST3D && o == 1) { /* sbell is the block kernels' other family */
                hk_bcsr_free(&K);
                hk_bcsr_free(&M);
                free(coords);
                free(ref);
                continue;
            }
            const int64_t n = K.nbrows * K.bs;
            const int nev = 6;
            const hk_bcsr *Mp = M.rowptr ? &M : NULL;
            double lg[6], lc[6];
            double *Xg = calloc((size_t)n * nev, sizeof *Xg), *Xc = calloc((size_t)n * nev, 8);
            hk_eigen_result rg, rcpu;
            HK_ASSERT_OK(run(cu, &K, Mp, coords, opts[o], nev, lg, Xg, &rg));
            HK_ASSERT_OK(run(cpu, &K, Mp, coords, opts[o], nev, lc, Xc, &rcpu));
            check_pairs("cuda", &K, Mp, nev, lg, Xg, &rg, 1e-8, ref);
            const double knorm = norm_inf(&K);
            for (int j = 0; j < nev; j++)
                CU_ASSERT(fabs(lg[j] - lc[j]) <= 1e-10 * fabs(lc[j]) + 1e-12 * knorm);
            const int it_ok = abs(rg.iterations - rcpu.iterations) <= 2 + rcpu.iterations / 10;
            CU_ASSERT(it_ok);
            /* the projections of the cuda vectors on the cpu ones */
            double *mx = malloc((size_t)n * sizeof *mx), dev = 0;
            for (int a = 0; a < nev; a++) {
                if (Mp)
                    hk_bcsr_spmv(Mp, Xg + (size_t)a * n, mx);
                else
                    memcpy(mx, Xg + (size_t)a * n, (size_t)n * sizeof *mx);
                double col = 0;
                for (int b = 0; b < nev; b++) {
                    double s = 0;
                    for (int64_t i = 0; i < n; i++)
                        s += Xc[(size_t)b * n + i] * mx[i];
                    col += s * s;
                }
                dev = fmax(dev, fabs(col - 1));
            }
            CU_ASSERT(dev <= 1e-7);
            if (dev > 1e-7 || !it_ok)
                printf("\n  case %d %s: eigenspaces differ by %.2e, iterations %d (cuda) %d "
                       "(cpu)",
                       kinds[t], opts[o], dev, rg.iterations, rcpu.iterations);
            free(mx);
            free(Xg);
            free(Xc);
            free(coords);
            free(ref);
            hk_bcsr_free(&K);
            hk_bcsr_free(&M);
        }
}

HK_DEVICE_SUITE(eigen_cuda, {"block ops: cuda vs cpu entry for entry", test_cuda_block_ops},
                {"LOBPCG: cuda vs cpu eigenvalues, eigenspaces, iterations", test_cuda_lobpcg})
