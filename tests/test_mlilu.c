/* pc=mlilu (solver/pc/mlilu.c): without dropping the multilevel factorisation is exact, so
 * M^-1 (A x) = x to rounding whatever the levels; GMRES with it on convection-diffusion and on
 * an SPD matrix on every backend; fewer iterations than ILU(0); bad options. The symmetric
 * variant (pc.mlilu.symmetric): exact without dropping on SPD matrices, a symmetric positive
 * definite apply, CG (through the solver and hooke solve) in fewer iterations than with
 * jacobi, pivot and option errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#include "pc/mlilu.h"

/* z = M^-1 r with pc=mlilu and the options text on be in precision p; *nlev the levels built.
 * Returns the set-up's error code. */
static int apply_mlilu(const hk_backend *be, hk_precision p, const hk_bcsr *K, const char *opts,
                       const double *r, double *z, int *nlev)
{
    hk_pc *pc = NULL;
    const int err = hk_test_apply_pc(be, p, K, "mlilu", opts, r, z, &pc);
    double fill;
    if (!err && nlev) CU_ASSERT_EQUAL(hk_pc_mlilu_info(pc, nlev, NULL, &fill), 0);
    hk_pc_destroy(pc);
    return err;
}

static void matvec(const hk_bcsr *K, const double *x, double *y)
{
    const int bs = K->bs;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int r = 0; r < bs; r++) {
            double s = 0;
            for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++)
                for (int c = 0; c < bs; c++)
                    s += K->val[(k * bs + r) * bs + c] * x[K->colind[k] * bs + c];
            y[i * bs + r] = s;
        }
}

/* An empty n x n matrix with 1 x 1 blocks and room for per_row entries a row. */
static void scalar_matrix(long n, int per_row, hk_bcsr *K)
{
    memset(K, 0, sizeof *K);
    K->bs = 1;
    K->nbrows = K->nbcols = n;
    K->rowptr = calloc((size_t)n + 1, sizeof *K->rowptr);
    K->colind = malloc((size_t)n * per_row * sizeof *K->colind);
    K->val = malloc((size_t)n * per_row * sizeof *K->val);
}

/* Nonsymmetric tridiagonal-plus-far-band matrix (bs = 1) whose every 7th row has a zero
 * diagonal and no entry left of it but the far band: ILU(0) has a zero pivot there. */
static void zero_diag_matrix(long n, hk_bcsr *K)
{
    scalar_matrix(n, 4, K);
    long q = 0;
    for (long i = 0; i < n; i++) {
        if (i >= 5) K->colind[q] = (int32_t)(i - 5), K->val[q++] = 0.3;
        if (i > 0 && i % 7 != 3) K->colind[q] = (int32_t)(i - 1), K->val[q++] = -1.0;
        K->colind[q] = (int32_t)i, K->val[q++] = i % 7 == 3 ? 0.0 : 3.0 + 0.1 * (i % 4);
        if (i + 1 < n) K->colind[q] = (int32_t)(i + 1), K->val[q++] = -0.6;
        K->rowptr[i + 1] = q;
    }
}

/* Without dropping (droptol=0) every level is exact, so M^-1 (A x) = x to rounding: one level
 * (kappa huge: the exact LU), and several (small kappa postpones rows; the last level
 * inverted densely or by the exact sparse LU). */
static void check_exact(const hk_bcsr *K, const char *opts, int min_levels)
{
    const long n = (long)K->nbrows * K->bs;
    double *x = malloc(n * sizeof *x), *r = malloc(n * sizeof *r), *z = malloc(n * sizeof *z);
    for (long i = 0; i < n; i++)
        x[i] = sin(0.7 * i + 0.3) + 0.25 * (i % 5);
    matvec(K, x, r);
    for (const hk_backend *const *b = hk_test_backends(); *b; b++)
        for (int p = 0; p < 2; p++) {
            int nlev = 0;
            int err = apply_mlilu(*b, (hk_precision)p, K, opts, r, z, &nlev);
            if (err) fprintf(stderr, "\n  mlilu %s: %s\n", opts, hk_error_message());
            CU_ASSERT_EQUAL_FATAL(err, 0);
            const double d = hk_test_reldiff(z, x, n),
                         tol = p ? 2e-3 : 1e-10; /* fp32 factors: rounding times the condition */
            if (!(d <= tol) || nlev < min_levels)
                fprintf(stderr, "\n  mlilu %s on %s %s: %d levels, rel. difference %.3g\n", opts,
                        hk_backend_name(*b), p ? "fp32" : "fp64", nlev, d);
            CU_ASSERT(d <= tol);
            CU_ASSERT(nlev >= min_levels);
        }
    free(x), free(r), free(z);
}

static void test_exact(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_convdiff2d(12, 20.0, &K));
    check_exact(&K, "pc.mlilu.droptol=0 pc.mlilu.kappa=1e300 pc.mlilu.dense=0 pc.mlilu.levels=1",
                1);
    check_exact(&K, "pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=8", 2);
    check_exact(&K, "pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=0 pc.mlilu.levels=2", 2);
    check_exact(&K, "pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=8 pc.ordering=rcm", 2);
    /* the matching, the fill-reducing ordering and the apply with the blocks E, F keep it
     * exact */
    check_exact(&K, "pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=8 pc.mlilu.matching=on",
                2);
    check_exact(&K, "pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=8 pc.mlilu.apply=blocks",
                2);
    check_exact(&K,
                "pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=0 pc.mlilu.levels=3 "
                "pc.mlilu.matching=on pc.mlilu.apply=blocks",
                3);
#ifdef HOOKE_HAVE_AMD
    check_exact(&K, "pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=8 pc.ordering=amd", 2);
    check_exact(&K,
                "pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=8 pc.ordering=amd "
                "pc.mlilu.matching=on pc.mlilu.apply=blocks",
                2);
#endif
    hk_bcsr_free(&K);
    /* zero diagonal entries, small kappa: several levels, exact; with the matching too */
    zero_diag_matrix(150, &K);
    check_exact(&K, "pc.mlilu.droptol=0 pc.mlilu.kappa=2 pc.mlilu.dense=10", 2);
    check_exact(&K,
                "pc.mlilu.droptol=0 pc.mlilu.kappa=2 pc.mlilu.dense=10 pc.mlilu.matching=on "
                "pc.mlilu.apply=blocks",
                1);
    hk_bcsr_free(&K);
}

/* The value of the best matching by brute force over all permutations of n <= 7: the largest
 * sum of log |a_sigma(j),j|, -inf when none avoids the zeros. */
static double best_log_product(int n, const double *D)
{
    int p[7], c[7] = {0};
    for (int i = 0; i < n; i++)
        p[i] = i;
    double best = -INFINITY;
    for (int k = 0;;) { /* Heap's algorithm */
        double s = 0;
        for (int j = 0; j < n; j++)
            s += D[p[j] * n + j] != 0 ? log(fabs(D[p[j] * n + j])) : -INFINITY;
        if (s > best) best = s;
        while (k < n && c[k] >= k)
            c[k++] = 0;
        if (k == n) break;
        const int a = k % 2 ? c[k] : 0, t = p[a];
        p[a] = p[k], p[k] = t;
        c[k]++;
        k = 0;
    }
    return best;
}

/* The maximum-product matching: on random sparse 6 x 6 and 7 x 7 matrices its product equals
 * the brute-force best, the scaled matrix has entries at most 1 and ones where matched; a
 * structurally singular matrix (a zero column) leaves one column unmatched; on the row-shuffled
 * convection-diffusion matrix every column gets back its diagonal entry. */
static void test_matching(void)
{
    uint32_t seed = 12345;
    for (int trial = 0; trial < 40; trial++) {
        const int n = 6 + trial % 2;
        double D[49];
        for (int e = 0; e < n * n; e++) {
            seed = seed * 1664525u + 1013904223u;
            const double u = (double)(seed >> 8) / 16777216.0;
            D[e] = u < 0.45 ? 0.0 : (u - 0.7) * pow(10.0, (double)(e % 5) - 2);
        }
        if (trial == 39) /* structurally singular: column 2 empty */
            for (int i = 0; i < n; i++)
                D[i * n + 2] = 0;
        hk_csr A = {0};
        HK_ASSERT_OK(hk_csr_alloc(n, n, n * n, &A));
        int64_t q = 0;
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++)
                if (D[i * n + j] != 0) A.colind[q] = j, A.val[q++] = D[i * n + j];
            A.rowptr[i + 1] = q;
        }
        int32_t rowof[7];
        double dr[7], dc[7];
        int64_t unmatched = -1;
        HK_ASSERT_OK(hk_mc64_matching(&A, rowof, dr, dc, &unmatched));
        int seen[7] = {0};
        for (int j = 0; j < n; j++)
            seen[rowof[j]]++;
        for (int i = 0; i < n; i++)
            CU_ASSERT_EQUAL(seen[i], 1); /* a permutation */
        const double best = best_log_product(n, D);
        if (isfinite(best)) {
            double got = 0;
            for (int j = 0; j < n; j++)
                got += log(fabs(D[rowof[j] * n + j]));
            CU_ASSERT_EQUAL(unmatched, 0);
            CU_ASSERT(fabs(got - best) <= 1e-10 * (1 + fabs(best)));
            for (int j = 0; j < n; j++)
                CU_ASSERT(fabs(fabs(dr[rowof[j]] * D[rowof[j] * n + j] * dc[j]) - 1) <= 1e-12);
        } else {
            CU_ASSERT(unmatched >= 1);
        }
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                CU_ASSERT(fabs(dr[i] * D[i * n + j] * dc[j]) <= 1 + 1e-12);
        hk_csr_free(&A);
    }
    /* rows shuffled: the matching puts each diagonal entry back */
    hk_bcsr K, S;
    HK_ASSERT_OK(hk_gen_convdiff2d(20, 20.0, &K));
    HK_ASSERT_OK(hk_gen_convdiff2d(20, 20.0, &S));
    HK_ASSERT_OK(hk_gen_shuffle_rows(&S, 3));
    hk_csr A = {0};
    const int64_t n = S.nbrows;
    HK_ASSERT_OK(hk_csr_alloc(n, n, S.rowptr[n], &A));
    memcpy(A.rowptr, S.rowptr, (size_t)(n + 1) * sizeof *A.rowptr);
    memcpy(A.colind, S.colind, (size_t)S.rowptr[n] * sizeof *A.colind);
    memcpy(A.val, S.val, (size_t)S.rowptr[n] * sizeof *A.val);
    int32_t *rowof = malloc((size_t)n * sizeof *rowof);
    double *dr = malloc((size_t)n * sizeof *dr), *dc = malloc((size_t)n * sizeof *dc);
    int64_t unmatched = -1;
    HK_ASSERT_OK(hk_mc64_matching(&A, rowof, dr, dc, &unmatched));
    CU_ASSERT_EQUAL(unmatched, 0);
    int diag = 0;
    for (int64_t j = 0; j < n; j++) { /* row rowof[j] of S must be row j of K */
        const int64_t a = S.rowptr[rowof[j]], b = K.rowptr[j];
        diag +=
            S.rowptr[rowof[j] + 1] - a == K.rowptr[j + 1] - b &&
            !memcmp(S.colind + a, K.colind + b, (size_t)(K.rowptr[j + 1] - b) * sizeof *S.colind);
    }
    CU_ASSERT_EQUAL(diag, n);
    free(rowof), free(dr), free(dc);
    hk_csr_free(&A);
    hk_bcsr_free(&K), hk_bcsr_free(&S);
}

/* The symmetric variant without dropping: one level (the exact LDL^T), several levels by
 * postponement (small kappa), the last level by dense Cholesky or by the sparse LDL^T. */
static void test_exact_symmetric(void)
{
    hk_bcsr K;
    const char *const opts[] = {
        "pc.mlilu.symmetric=1 pc.mlilu.droptol=0 pc.mlilu.kappa=1e300 pc.mlilu.dense=0 "
        "pc.mlilu.levels=1",
        "pc.mlilu.symmetric=1 pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=20",
        "pc.mlilu.symmetric=1 pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=0 "
        "pc.mlilu.levels=3",
        "pc.mlilu.symmetric=1 pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=20 "
        "pc.ordering=rcm",
        "pc.mlilu.symmetric=1 pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=0 "
        "pc.mlilu.levels=3 pc.mlilu.apply=blocks",
#ifdef HOOKE_HAVE_AMD
        "pc.mlilu.symmetric=1 pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=20 "
        "pc.ordering=amd",
#endif
    };
    const int min_levels[] = {1, 2, 3, 2, 3, 2};
    const int nopts = (int)(sizeof opts / sizeof opts[0]);
    for (int m = 0; m < 3; m++) {
        if (m == 0) HK_ASSERT_OK(hk_gen_elasticity3d(4, 3, 3, &K));
        if (m == 1) HK_ASSERT_OK(hk_gen_elasticity2d(8, 6, &K));
        if (m == 2) HK_ASSERT_OK(hk_gen_poisson2d(12, &K));
        for (int k = 0; k < nopts; k++)
            check_exact(&K, opts[k], min_levels[k]);
        hk_bcsr_free(&K);
    }
}

/* Each triangular-solve method (pc.tri; the solves set up by tri_setup from each level's
 * uploaded factor) keeps the exact cases exact: the ILU and the LDL^T variant, several levels
 * with sparse factors on each, every backend, fp64 and fp32. */
static void test_tri_methods(void)
{
    static const char *const tri[] = {"syncfree", "levels", "cusparse", "syncfree-flags"};
    static const char *const base[] = {
        "pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=0 pc.mlilu.levels=2",
        "pc.mlilu.symmetric=1 pc.mlilu.droptol=0 pc.mlilu.kappa=1.5 pc.mlilu.dense=0 "
        "pc.mlilu.levels=3"};
    const int min_levels[] = {2, 3};
    for (int c = 0; c < 2; c++) {
        hk_bcsr K;
        HK_ASSERT_OK(c ? hk_gen_elasticity2d(8, 6, &K) : hk_gen_convdiff2d(12, 20.0, &K));
        for (int m = 0; m < 4; m++) {
            char o[200];
            snprintf(o, sizeof o, "%s pc.tri=%s", base[c], tri[m]);
            check_exact(&K, o, min_levels[c]);
        }
        hk_bcsr_free(&K);
    }
}

/* x.M^-1 y against y.M^-1 x and x.M^-1 x > 0 for several x, y on every backend, fp64 and
 * fp32; at least min_levels levels. */
static void check_spd_apply(const hk_bcsr *K, const char *opts, int min_levels)
{
    enum { NV = 4 };
    const long n = (long)K->nbrows * K->bs;
    double *x[NV], *Mx[NV];
    for (int v = 0; v < NV; v++) {
        x[v] = malloc(n * sizeof *x[v]);
        Mx[v] = malloc(n * sizeof *Mx[v]);
        for (long i = 0; i < n; i++)
            x[v][i] = v == 0   ? 1.0
                      : v == 1 ? sin(1.3 * i + 0.2)
                      : v == 2 ? cos(0.7 * (double)i * i)
                               : (i % 2 ? -1.0 : 1.0) * (1 + i % 5);
    }
    for (const hk_backend *const *b = hk_test_backends(); *b; b++)
        for (int p = 0; p < 2; p++) {
            hk_pc *pc = NULL;
            hk_vec *vx = NULL, *vz = NULL;
            int err = hk_test_apply_pc(*b, (hk_precision)p, K, "mlilu", opts, x[0], Mx[0], &pc);
            if (err) fprintf(stderr, "\n  mlilu %s: %s\n", opts, hk_error_message());
            CU_ASSERT_EQUAL_FATAL(err, 0);
            int nlev = 0;
            double fill;
            CU_ASSERT_EQUAL(hk_pc_mlilu_info(pc, &nlev, NULL, &fill), 0);
            CU_ASSERT(nlev >= min_levels);
            HK_ASSERT_OK(hk_vec_create(*b, n, HK_FP64, &vx));
            HK_ASSERT_OK(hk_vec_create(*b, n, HK_FP64, &vz));
            for (int v = 1; v < NV; v++) {
                HK_ASSERT_OK(hk_vec_upload(vx, x[v]));
                HK_ASSERT_OK(hk_pc_apply(pc, vx, vz));
                HK_ASSERT_OK(hk_vec_download(vz, Mx[v]));
            }
            /* fp32 factors and vectors: symmetric to fp32 rounding */
            const double tol = p ? 1e-5 : 1e-12;
            for (int v = 0; v < NV; v++) {
                double xx = 0, xMx = 0;
                for (long i = 0; i < n; i++) {
                    xx += x[v][i] * x[v][i];
                    xMx += x[v][i] * Mx[v][i];
                }
                if (!(xMx > 0))
                    fprintf(stderr, "\n  mlilu %s on %s %s: x%d.M^-1 x%d = %g\n", opts,
                            hk_backend_name(*b), p ? "fp32" : "fp64", v, v, xMx);
                CU_ASSERT(xMx > 0 && xx > 0);
                for (int w = v + 1; w < NV; w++) {
                    double a = 0, c = 0, na = 0, nb = 0, nMa = 0, nMb = 0;
                    for (long i = 0; i < n; i++) {
                        a += x[w][i] * Mx[v][i];
                        c += x[v][i] * Mx[w][i];
                        na += x[v][i] * x[v][i];
                        nb += x[w][i] * x[w][i];
                        nMa += Mx[v][i] * Mx[v][i];
                        nMb += Mx[w][i] * Mx[w][i];
                    }
                    const double scale = sqrt(nb * nMa) + sqrt(na * nMb);
                    if (!(fabs(a - c) <= tol * scale))
                        fprintf(stderr,
                                "\n  mlilu %s on %s %s: x%d.M^-1 x%d - x%d.M^-1 x%d = %.3g "
                                "(scale %.3g)\n",
                                opts, hk_backend_name(*b), p ? "fp32" : "fp64", w, v, v, w, a - c,
                                scale);
                    CU_ASSERT(fabs(a - c) <= tol * scale);
                }
            }
            hk_vec_destroy(vx);
            hk_vec_destroy(vz);
            hk_pc_destroy(pc);
        }
    for (int v = 0; v < NV; v++)
        free(x[v]), free(Mx[v]);
}

static void test_spd_apply(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 5, 4, &K));
    check_spd_apply(&K, "pc.mlilu.symmetric=1", 1);
    check_spd_apply(&K, "pc.mlilu.symmetric=1 pc.mlilu.kappa=1.5 pc.mlilu.dense=30", 3);
    check_spd_apply(&K, "pc.mlilu.symmetric=1 pc.mlilu.kappa=2 pc.mlilu.dense=0 pc.mlilu.levels=2",
                    2);
    check_spd_apply(&K, "pc.mlilu.symmetric=1 pc.mlilu.droptol=0.1 pc.ordering=rcm", 1);
    hk_bcsr_free(&K);
    HK_ASSERT_OK(hk_gen_poisson2d(20, &K));
    check_spd_apply(&K, "pc.mlilu.symmetric=1 pc.mlilu.kappa=2 pc.mlilu.dense=10", 2);
    hk_bcsr_free(&K);
}

/* The pc type the solver uses: the symmetric one with CG-type methods, else the other. */
static int solver_pc_symmetric(const hk_bcsr *K, const char *text)
{
    hk_options *o;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, text));
    HK_ASSERT_OK(hk_solver_create(K, o, &s));
    const int sym = hk_solver_get_pc(s)->type->symmetric;
    hk_solver_destroy(s);
    hk_options_destroy(o);
    return sym;
}

/* CG-type methods with pc=mlilu (symmetric by default there) on 3D elasticity and Poisson,
 * against the same method with jacobi on the same matrix and backend. */
static void test_cg(void)
{
    hk_bcsr E, P;
    HK_ASSERT_OK(hk_gen_elasticity3d(10, 10, 10, &E));
    HK_ASSERT_OK(hk_gen_poisson2d(40, &P));
    CU_ASSERT_EQUAL(solver_pc_symmetric(&P, "backend=cpu method=cg pc=mlilu"), 1);
    CU_ASSERT_EQUAL(solver_pc_symmetric(&P, "backend=cpu method=pipecg pc=mlilu"), 1);
    CU_ASSERT_EQUAL(solver_pc_symmetric(&P, "backend=cpu method=gmres pc=mlilu"), 0);
    CU_ASSERT_EQUAL(
        solver_pc_symmetric(&P, "backend=cpu method=gmres pc=mlilu pc.mlilu.symmetric=1"), 0);
    for (const hk_backend *const *b = hk_test_backends(); *b; b++) {
        const char *be = hk_backend_name(*b);
        const hk_bcsr *mats[] = {&E, &P};
        for (int m = 0; m < 2; m++) {
            const hk_bcsr *K = mats[m];
            const int jac = hk_test_solve_iterations(K, be, "method=cg pc=jacobi", NULL);
            const int pjac = hk_test_solve_iterations(K, be, "method=pipecg pc=jacobi", NULL);
            const int ic = hk_test_solve_iterations(K, be, "method=cg pc=ic0", NULL);
            const int ml = hk_test_solve_iterations(K, be, "method=cg pc=mlilu", NULL);
            const int mlk = hk_test_solve_iterations(
                K, be, "method=cg pc=mlilu pc.mlilu.symmetric=1 pc.mlilu.kappa=2", NULL);
            const int pml = hk_test_solve_iterations(K, be, "method=pipecg pc=mlilu", NULL);
            const int fml = hk_test_solve_iterations(K, be, "method=fcg pc=mlilu", NULL);
            const int gml =
                hk_test_solve_iterations(K, be, "method=gmres pc=mlilu pc.mlilu.symmetric=1", NULL);
            const int mix =
                hk_test_solve_iterations(K, be, "method=cg pc=mlilu precision=mixed", NULL);
            printf("\n    %s %s: cg jacobi %d, ic0 %d, mlilu %d (kappa 2: %d, mixed %d); "
                   "pipecg jacobi %d, mlilu %d; fcg mlilu %d; gmres mlilu symmetric %d",
                   be, m ? "poisson 40^2" : "elasticity 10^3", jac, ic, ml, mlk, mix, pjac, pml,
                   fml, gml);
            CU_ASSERT(ml > 0 && ml < jac);
            CU_ASSERT(mlk > 0 && mlk < jac);
            CU_ASSERT(mix > 0 && mix < jac);
            CU_ASSERT(pml > 0 && pml < pjac);
            CU_ASSERT(fml > 0 && fml < jac);
            CU_ASSERT(gml > 0 && gml < jac);
        }
    }
    hk_bcsr_free(&E);
    hk_bcsr_free(&P);
}

/* `hooke solve` with pc=mlilu and CG, against cg + jacobi through the same command. */
static void test_solve_cmd(void)
{
    char out[8192];
    const char *pcs[] = {"pc=jacobi", "pc=mlilu", "pc=mlilu pc.mlilu.symmetric=1 pc.ordering=rcm"};
    int it[3];
    for (int k = 0; k < 3; k++) {
        char args[256];
        snprintf(args, sizeof args, "--generate elasticity3d:6 --backend cpu method=cg %s tol=1e-8",
                 pcs[k]);
        const int rc = hk_test_solve_cmd(args, out, sizeof out);
        if (rc) fprintf(stderr, "\n%s\n", out);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        if (k) CU_ASSERT_PTR_NOT_NULL(strstr(out, "symmetric (LDL^T)"));
        const char *s = strstr(out, "iterations:");
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        it[k] = atoi(s + 11);
    }
    printf("\n    hooke solve elasticity3d:6 cg: jacobi %d, mlilu %d, mlilu rcm %d", it[0], it[1],
           it[2]);
    CU_ASSERT(it[1] > 0 && it[1] < it[0]);
    CU_ASSERT(it[2] > 0 && it[2] < it[0]);
    CU_ASSERT_EQUAL(hk_test_solve_cmd("--generate elasticity3d:4 --backend cpu method=cg pc=mlilu "
                              "pc.mlilu.symmetric=0",
                              out, sizeof out),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "pc.mlilu.symmetric=0"));
}

static void expect_error_on(const hk_bcsr *K, const char *text, int code, const char *needle)
{
    hk_options *o;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, text));
    int err = hk_solver_create(K, o, &s);
    CU_ASSERT_EQUAL(err, code);
    if (err != code || !strstr(hk_error_message(), needle))
        fprintf(stderr, "\n  %s: code %d, '%s'\n", text, err, hk_error_message());
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), needle));
    hk_solver_destroy(s);
    hk_options_destroy(o);
}

static void expect_error(const char *text, int code, const char *needle)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_convdiff2d(8, 10.0, &K));
    expect_error_on(&K, text, code, needle);
    hk_bcsr_free(&K);
}

/* GMRES, FGMRES and BiCGStab with mlilu on convection-diffusion, fewer GMRES iterations than
 * with ILU(0); GMRES with mlilu on SPD Poisson; the zero-diagonal matrix ILU(0) cannot factor. */
static void test_solves(void)
{
    hk_bcsr C, P, Z;
    HK_ASSERT_OK(hk_gen_convdiff2d(40, 50.0, &C));
    HK_ASSERT_OK(hk_gen_poisson2d(30, &P));
    zero_diag_matrix(2000, &Z);
    for (const hk_backend *const *b = hk_test_backends(); *b; b++) {
        const char *be = hk_backend_name(*b);
        int gi = hk_test_solve_iterations(&C, be, "method=gmres pc=ilu0", NULL);
        int gm = hk_test_solve_iterations(&C, be, "method=gmres pc=mlilu", NULL);
        int gm10 =
            hk_test_solve_iterations(&C, be, "method=gmres pc=mlilu pc.mlilu.kappa=10", NULL);
        int fm = hk_test_solve_iterations(&C, be, "method=fgmres pc=mlilu", NULL);
        int bm = hk_test_solve_iterations(&C, be, "method=bicgstab pc=mlilu", NULL);
        int pm = hk_test_solve_iterations(&P, be, "method=gmres pc=mlilu", NULL);
        int pi = hk_test_solve_iterations(&P, be, "method=gmres pc=ilu0", NULL);
        int zm = hk_test_solve_iterations(&Z, be, "method=gmres pc=mlilu pc.mlilu.dense=50", NULL);
        printf("\n    %s: convdiff gmres ilu0 %d, mlilu %d (kappa 10: %d), fgmres %d, "
               "bicgstab %d; poisson gmres ilu0 %d, mlilu %d; zero diagonal %d",
               be, gi, gm, gm10, fm, bm, pi, pm, zm);
        CU_ASSERT(gm > 0 && 2 * gm < gi);
        CU_ASSERT(gm10 > 0 && fm > 0 && bm > 0 && zm > 0);
        CU_ASSERT(pm > 0 && pm < pi);
    }
    expect_error_on(&Z, "backend=cpu method=gmres pc=ilu0", HK_ERR_NUMERIC, "zero pivot");
    hk_bcsr_free(&C);
    hk_bcsr_free(&P);
    hk_bcsr_free(&Z);
}

/* The rows of convection-diffusion shuffled, so the diagonal is scattered: with the matching
 * gmres + mlilu takes the iterations of the unshuffled matrix (the matching undoes the
 * shuffle, and its scaling makes the matched entries 1), on every backend; AMD's fewer fill
 * and the memory-saving apply converge too. */
static void test_matching_solves(void)
{
    hk_bcsr C, S;
    HK_ASSERT_OK(hk_gen_convdiff2d(40, 50.0, &C));
    HK_ASSERT_OK(hk_gen_convdiff2d(40, 50.0, &S));
    HK_ASSERT_OK(hk_gen_shuffle_rows(&S, 9));
    for (const hk_backend *const *b = hk_test_backends(); *b; b++) {
        const char *be = hk_backend_name(*b);
        const int c =
            hk_test_solve_iterations(&C, be, "method=gmres pc=mlilu pc.mlilu.matching=on", NULL);
        const int m =
            hk_test_solve_iterations(&S, be, "method=gmres pc=mlilu pc.mlilu.matching=on", NULL);
        const int mb = hk_test_solve_iterations(
            &S, be, "method=gmres pc=mlilu pc.mlilu.matching=on pc.mlilu.apply=blocks", NULL);
#ifdef HOOKE_HAVE_AMD
        const int ma = hk_test_solve_iterations(
            &S, be, "method=gmres pc=mlilu pc.mlilu.matching=on pc.ordering=amd", NULL);
#else
        const int ma = m;
#endif
        printf("\n    %s: convdiff %d, shuffled with matching %d (blocks %d, amd %d)", be, c, m, mb,
               ma);
        CU_ASSERT(c > 0 && m == c);
        CU_ASSERT(mb > 0 && ma > 0);
    }
    hk_bcsr_free(&C);
    hk_bcsr_free(&S);
}

static void test_errors(void)
{
    expect_error("backend=cpu method=gmres pc=mlilu pc.mlilu.kappa=0.5", HK_ERR_OPTION,
                 "pc.mlilu.kappa");
    expect_error("backend=cpu method=gmres pc=mlilu pc.mlilu.droptol=1", HK_ERR_OPTION,
                 "pc.mlilu.droptol");
    expect_error("backend=cpu method=gmres pc=mlilu pc.mlilu.droptol=-1e-3", HK_ERR_OPTION,
                 "pc.mlilu.droptol");
    expect_error("backend=cpu method=gmres pc=mlilu pc.mlilu.levels=0", HK_ERR_OPTION,
                 "pc.mlilu.levels");
    expect_error("backend=cpu method=gmres pc=mlilu pc.mlilu.levels=33", HK_ERR_OPTION,
                 "pc.mlilu.levels");
    expect_error("backend=cpu method=gmres pc=mlilu pc.mlilu.dense=-1", HK_ERR_OPTION,
                 "pc.mlilu.dense");
    expect_error("backend=cpu method=gmres pc=mlilu pc.mlilu.symmetric=2", HK_ERR_OPTION,
                 "pc.mlilu.symmetric");
    /* the nonsymmetric variant with CG, refused naming the methods that take it */
    expect_error("backend=cpu method=cg pc=mlilu pc.mlilu.symmetric=0", HK_ERR_OPTION, "gmres");
    /* the symmetric variant on a nonsymmetric matrix */
    expect_error("backend=cpu method=cg pc=mlilu", HK_ERR_NUMERIC, "needs a symmetric matrix");
    /* a matching permutes rows only: the symmetric form refuses it */
    expect_error("backend=cpu method=gmres pc=mlilu pc.mlilu.symmetric=1 pc.mlilu.matching=on",
                 HK_ERR_OPTION, "pc.mlilu.symmetric=0");
    expect_error("backend=cpu method=gmres pc=mlilu pc.mlilu.matching=yes", HK_ERR_OPTION,
                 "pc.mlilu.matching");
    expect_error("backend=cpu method=gmres pc=mlilu pc.mlilu.apply=lu", HK_ERR_OPTION,
                 "pc.mlilu.apply");
#ifndef HOOKE_HAVE_AMD
    expect_error("backend=cpu method=gmres pc=mlilu pc.ordering=amd", HK_ERR_UNSUPPORTED,
                 "libsuitesparse-dev");
#endif
}

/* Symmetric, positive diagonal (unit after scaling) but indefinite: rows 21 and 22 couple by
 * 3 against diagonals 2, so the 2x2 block [2 3; 3 2] is indefinite and the pivot of whichever
 * of the two comes second is negative; row 7 optionally gets a negative diagonal. */
static void indefinite_matrix(long n, int neg7, hk_bcsr *K)
{
    scalar_matrix(n, 3, K);
    long q = 0;
    for (long i = 0; i < n; i++) {
        if (i > 0) K->colind[q] = (int32_t)(i - 1), K->val[q++] = i == 22 ? 3.0 : -1.0;
        K->colind[q] = (int32_t)i, K->val[q++] = neg7 && i == 7 ? -2.0 : 2.0;
        if (i + 1 < n) K->colind[q] = (int32_t)(i + 1), K->val[q++] = i == 21 ? 3.0 : -1.0;
        K->rowptr[i + 1] = q;
    }
}

/* A pivot that is not positive where postponing cannot cure it names the row of K: in the
 * dense Cholesky last level, in a sparse last level, and after postponement to later levels;
 * a negative diagonal entry names its row. */
static void test_pivot_errors(void)
{
    hk_bcsr K;
    indefinite_matrix(60, 0, &K);
    const char *const opts[] = {
        "backend=cpu method=cg pc=mlilu",
        "backend=cpu method=cg pc=mlilu pc.mlilu.dense=0 pc.mlilu.levels=1",
        "backend=cpu method=cg pc=mlilu pc.mlilu.dense=0",
        "backend=cpu method=cg pc=mlilu pc.mlilu.dense=5 pc.mlilu.kappa=1.2",
        "backend=cpu method=cg pc=mlilu pc.mlilu.dense=0 pc.ordering=rcm"};
    for (int k = 0; k < 5; k++) {
        hk_options *o;
        hk_solver *s = NULL;
        HK_ASSERT_OK(hk_options_create(&o));
        HK_ASSERT_OK(hk_options_parse(o, opts[k]));
        const int err = hk_solver_create(&K, o, &s);
        const char *msg = hk_error_message();
        const int named = strstr(msg, "pivot of row 21 of the matrix") ||
                          strstr(msg, "pivot of row 22 of the matrix");
        if (err != HK_ERR_NUMERIC || !named) fprintf(stderr, "\n  %s: '%s'\n", opts[k], msg);
        CU_ASSERT_EQUAL(err, HK_ERR_NUMERIC);
        CU_ASSERT(named);
        hk_solver_destroy(s);
        hk_options_destroy(o);
    }
    /* gmres with the nonsymmetric variant factors it */
    CU_ASSERT(hk_test_solve_iterations(&K, "cpu", "method=gmres pc=mlilu", NULL) > 0);
    hk_bcsr_free(&K);
    indefinite_matrix(60, 1, &K);
    expect_error_on(&K, "backend=cpu method=cg pc=mlilu pc.mlilu.dense=0", HK_ERR_NUMERIC,
                    "diagonal entry of row 7 is -2");
    hk_bcsr_free(&K);
}

HK_SUITE(mlilu,
         {"without dropping M^-1 A = I (one and several levels; matching, amd, blocks)",
          test_exact},
         {"matching: the best product (brute force), scaled entries <= 1, undoes a row shuffle",
          test_matching},
         {"matching: gmres on shuffled rows as on the matrix itself; amd, blocks",
          test_matching_solves},
         {"symmetric: without dropping M^-1 A = I (one and several levels)", test_exact_symmetric},
         {"each pc.tri keeps M^-1 A = I (both variants, several levels)", test_tri_methods},
         {"symmetric: x.M^-1 y = y.M^-1 x and x.M^-1 x > 0", test_spd_apply},
         {"symmetric: cg/pipecg/fcg in fewer iterations than with jacobi", test_cg},
         {"symmetric: hooke solve cg + mlilu in fewer iterations than cg + jacobi", test_solve_cmd},
         {"gmres/fgmres/bicgstab converge, fewer iterations than ilu0", test_solves},
         {"bad options, the nonsymmetric variant refused by cg", test_errors},
         {"symmetric: a pivot postponing cannot cure names its row", test_pivot_errors})
