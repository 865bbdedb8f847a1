/* pc=mlilu (solver/pc/mlilu.c): without dropping the multilevel factorisation is exact, so
 * M^-1 (A x) = x to rounding whatever the levels; GMRES with it on convection-diffusion and on
 * an SPD matrix on every backend; fewer iterations than ILU(0); CG refused; bad options. */
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
    for (int64_t i = 0; i < K->nbrows; i++) {
        double s = 0;
        for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++)
            s += K->val[k] * x[K->colind[k]];
        y[i] = s;
    }
}

/* Nonsymmetric tridiagonal-plus-far-band matrix (bs = 1) whose every 7th row has a zero
 * diagonal and no entry left of it but the far band: ILU(0) has a zero pivot there. */
static void zero_diag_matrix(long n, hk_bcsr *K)
{
    memset(K, 0, sizeof *K);
    K->bs = 1;
    K->nbrows = K->nbcols = n;
    K->rowptr = calloc((size_t)n + 1, sizeof *K->rowptr);
    K->colind = malloc((size_t)n * 4 * sizeof *K->colind);
    K->val = malloc((size_t)n * 4 * sizeof *K->val);
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
    const long n = (long)K->nbrows;
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
    hk_bcsr_free(&K);
    /* zero diagonal entries, small kappa: several levels, exact */
    zero_diag_matrix(150, &K);
    check_exact(&K, "pc.mlilu.droptol=0 pc.mlilu.kappa=2 pc.mlilu.dense=10", 2);
    hk_bcsr_free(&K);
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
    /* not symmetric: CG is refused, naming the methods that take it */
    expect_error("backend=cpu method=cg pc=mlilu", HK_ERR_UNSUPPORTED, "gmres");
}

HK_SUITE(mlilu, {"without dropping M^-1 A = I (one and several levels)", test_exact},
         {"gmres/fgmres/bicgstab converge, fewer iterations than ilu0", test_solves},
         {"bad options and cg refused", test_errors})
