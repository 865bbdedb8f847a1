/* method=cholesky (CHOLMOD): exact solves checked against a dense reference, one factorisation
 * shared by every solve on the same K, and refusals that name the row (not positive definite)
 * or the entry (not symmetric). The device suite runs the same solve with backend=cuda, where
 * the factor stays on the host and the residual is computed on the device. */
#include <stdlib.h>
#include <string.h>

#include "ksp/ksp_impl.h"
#include "case.h"
#include "test_util.h"

#ifdef HOOKE_HAVE_CHOLMOD

static hk_solver *create(const hk_bcsr *K, const char *opts)
{
    hk_options *o = NULL;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, opts));
    int err = hk_solver_create(K, o, &s);
    hk_options_destroy(o);
    if (err) {
        fprintf(stderr, "\n  hk_solver_create(%s): %s\n", opts, hk_error_message());
        hk_error_clear();
    }
    return s;
}

/* Dense Gaussian elimination with partial pivoting: x = K^{-1} b, independent of CHOLMOD. */
static void dense_solve(const hk_bcsr *K, const double *b, double *x)
{
    const int bs = K->bs;
    const int64_t n = K->nbrows * bs;
    double *a = calloc((size_t)(n * n), sizeof *a);
    for (int64_t bi = 0; bi < K->nbrows; bi++)
        for (int64_t p = K->rowptr[bi]; p < K->rowptr[bi + 1]; p++)
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++)
                    a[(bi * bs + r) * n + K->colind[p] * bs + c] =
                        K->val[((size_t)p * bs + r) * bs + c];
    memcpy(x, b, (size_t)n * sizeof *x);
    for (int64_t k = 0; k < n; k++) {
        int64_t piv = k;
        for (int64_t i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > fabs(a[piv * n + k])) piv = i;
        if (piv != k) {
            for (int64_t j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[piv * n + j];
                a[piv * n + j] = t;
            }
            double t = x[k];
            x[k] = x[piv];
            x[piv] = t;
        }
        for (int64_t i = k + 1; i < n; i++) {
            const double f = a[i * n + k] / a[k * n + k];
            if (f == 0) continue;
            for (int64_t j = k; j < n; j++)
                a[i * n + j] -= f * a[k * n + j];
            x[i] -= f * x[k];
        }
    }
    for (int64_t k = n - 1; k >= 0; k--) {
        double sum = x[k];
        for (int64_t j = k + 1; j < n; j++)
            sum -= a[k * n + j] * x[j];
        x[k] = sum / a[k * n + k];
    }
    free(a);
}

/* A right-hand side with every entry different (a fixed pseudo-random sequence). */
static void fill_rhs(double *b, int64_t n, unsigned seed)
{
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        b[i] = ((seed >> 8) & 0xffff) / 32768.0 - 1.0;
    }
}

static void test_matches_dense_reference(void)
{
    hk_bcsr K2 = {0}, K3 = {0};
    HK_ASSERT_OK(hk_gen_elasticity2d(6, 5, &K2));
    HK_ASSERT_OK(hk_gen_elasticity3d(3, 3, 2, &K3));
    const hk_bcsr *Ks[] = {&K2, &K3};
    for (int m = 0; m < 2; m++) {
        const hk_bcsr *K = Ks[m];
        const int64_t n = K->nbrows * K->bs;
        double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x),
               *ref = malloc((size_t)n * sizeof *ref);
        fill_rhs(b, n, 7u + m);
        dense_solve(K, b, ref);
        hk_solver *s = create(K, "backend=cpu method=cholesky");
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        hk_result res;
        HK_ASSERT_OK(hk_solver_solve(s, b, x, &res));
        CU_ASSERT(hk_reason_converged(res.reason));
        CU_ASSERT_EQUAL(res.iterations, 1);
        CU_ASSERT(res.true_residual < 1e-12);
        CU_ASSERT(hk_test_reldiff(x, ref, (long)n) < 1e-10);
        hk_solver_destroy(s);
        free(b);
        free(x);
        free(ref);
    }
    hk_bcsr_free(&K2);
    hk_bcsr_free(&K3);
}

/* Generated 2D and 3D elasticity of a few thousand unknowns: residual below 1e-12, from x = 0
 * and from a nonzero initial guess (the correction form must not depend on it). */
static void test_elasticity_residual(void)
{
    hk_bcsr K2 = {0}, K3 = {0};
    HK_ASSERT_OK(hk_gen_elasticity2d(40, 40, &K2));
    HK_ASSERT_OK(hk_gen_elasticity3d(12, 12, 12, &K3));
    const hk_bcsr *Ks[] = {&K2, &K3};
    for (int m = 0; m < 2; m++) {
        const int64_t n = Ks[m]->nbrows * Ks[m]->bs;
        double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
        fill_rhs(b, n, 11u);
        hk_solver *s = create(Ks[m], "backend=cpu method=cholesky tol=1e-14");
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        hk_result res;
        HK_ASSERT_OK(hk_solver_solve(s, b, x, &res));
        CU_ASSERT(res.true_residual < 1e-12);
        CU_ASSERT(res.iterations >= 1 && res.iterations <= 3);
        fill_rhs(x, n, 3u); /* a nonzero initial guess */
        HK_ASSERT_OK(hk_solver_solve(s, b, x, &res));
        CU_ASSERT(res.true_residual < 1e-12);
        hk_solver_destroy(s);
        free(b);
        free(x);
    }
    hk_bcsr_free(&K2);
    hk_bcsr_free(&K3);
}

/* Several right-hand sides on one solver: one factorisation in all. */
static void test_factor_reused(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(8, 8, 8, &K));
    const int64_t n = K.nbrows * K.bs;
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    const long before = hk_cholesky_factorizations();
    hk_solver *s = create(&K, "backend=cpu method=cholesky");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(hk_cholesky_factorizations(), before + 1);
    for (unsigned c = 0; c < 4; c++) {
        fill_rhs(b, n, 100u + c);
        memset(x, 0, (size_t)n * sizeof *x);
        hk_result res;
        HK_ASSERT_OK(hk_solver_solve(s, b, x, &res));
        CU_ASSERT(res.true_residual < 1e-12);
    }
    CU_ASSERT_EQUAL(hk_cholesky_factorizations(), before + 1);
    hk_solver_destroy(s);
    free(b);
    free(x);
    hk_bcsr_free(&K);
}

/* hooke run's load cases share one solver: one factorisation for the three cases of the
 * cantilever (method=cholesky, set as --set does; pc=none replaces the case's poly). */
static void test_loadcases_one_factorization(void)
{
    hk_case c;
    const char *sets[] = {"solver.method=cholesky", "solver.pc=none"}; /* the case names cg+poly */
    HK_ASSERT_OK(
        hk_case_load(hk_test_path("cases/cantilever/cantilever_loadcases.yaml"), 2, sets, &c));
    hk_run_opts o = {.quiet = 1};
    hk_run r;
    const long before = hk_cholesky_factorizations();
    HK_ASSERT_OK(hk_run_case(&c, &o, &r));
    CU_ASSERT_EQUAL(hk_cholesky_factorizations(), before + 1);
    CU_ASSERT(r.nlc >= 2);
    /* the case's tol=1e-10 is near the rounding floor of b - A x for this slender steel beam
     * (eps |K| |x| / |b|, about 1e-10 here): converged within the solver's factor 2 */
    for (int k = 0; k < r.nlc; k++) {
        CU_ASSERT(r.lc[k].converged);
        CU_ASSERT(r.lc[k].res.true_residual <= HK_TRUE_RESIDUAL_FACTOR * 1e-10);
        printf("\n  %s: %d corrections, residual %.2e", r.lc[k].name, r.lc[k].res.iterations,
               r.lc[k].res.true_residual);
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(r.solver_desc, "cholesky"));
    hk_run_free(&r);
    hk_case_free(&c);
}

/* hooke run's choice when the case names neither method nor pc: a small 3D block goes to
 * the direct solver; naming a pc (or a method) keeps the iterative path. */
static void test_run_default_choice(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/small_block.yaml", hk_test_tmpdir());
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("geometry:\n  generate: {shape: box, size: [1, 1, 1], cells: [4, 4, 4], element: "
          "hex8}\nanalysis: 3d\nmaterials:\n  - {name: steel, E: 200e9, nu: 0.3}\n"
          "supports:\n  - {boundary: xmin, fix: all}\nloads:\n  - traction: {boundary: xmax, "
          "value: [0, 0, -1e6]}\n",
          f);
    fclose(f);
    const char *set_pc[] = {"solver.pc=jacobi"};
    for (int named = 0; named < 2; named++) {
        hk_case c;
        HK_ASSERT_OK(hk_case_load(path, named, set_pc, &c));
        hk_run_opts o = {.quiet = 1};
        hk_run r;
        HK_ASSERT_OK(hk_run_case(&c, &o, &r));
        CU_ASSERT(r.converged);
        CU_ASSERT_EQUAL(strncmp(r.solver_desc, named ? "cg + jacobi" : "cholesky", 8), 0);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

/* A negative diagonal entry makes K indefinite: the factorisation stops there, and the message
 * names that row (1-based) and its node. */
static void test_not_positive_definite_names_row(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(4, 4, 4, &K));
    const int64_t bad_node = 17, bad_comp = 1; /* 0-based; row 3*17+1 = 52, 1-based 53 */
    for (int64_t p = K.rowptr[bad_node]; p < K.rowptr[bad_node + 1]; p++)
        if (K.colind[p] == bad_node) K.val[(size_t)p * 9 + bad_comp * 3 + bad_comp] *= -1;
    hk_options *o = NULL;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu method=cholesky"));
    const int err = hk_solver_create(&K, o, &s);
    CU_ASSERT_EQUAL(err, HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NULL(s);
    const char *msg = hk_error_message();
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "not positive definite"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "row 53 (node 18, component 2)"));
    if (!strstr(msg, "row 53")) fprintf(stderr, "\n  message: %s\n", msg);
    hk_error_clear();
    hk_options_destroy(o);
    hk_bcsr_free(&K);
}

static void test_nonsymmetric_refused(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_convdiff2d(10, 1.0, &K));
    hk_options *o = NULL;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu method=cholesky"));
    CU_ASSERT_EQUAL(hk_solver_create(&K, o, &s), HK_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "needs a symmetric matrix"));
    hk_error_clear();
    hk_options_destroy(o);
    hk_bcsr_free(&K);
}

/* A preconditioner or mixed precision would do nothing: refused by name. */
static void test_unused_options_refused(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_poisson2d(8, &K));
    const char *opts[] = {"method=cholesky pc=jacobi", "method=cholesky precision=mixed"};
    for (int i = 0; i < 2; i++) {
        hk_options *o = NULL;
        hk_solver *s = NULL;
        HK_ASSERT_OK(hk_options_create(&o));
        HK_ASSERT_OK(hk_options_parse(o, opts[i]));
        CU_ASSERT_EQUAL(hk_solver_create(&K, o, &s), HK_ERR_UNSUPPORTED);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "method=cholesky"));
        hk_error_clear();
        hk_options_destroy(o);
    }
    hk_bcsr_free(&K);
}

HK_SUITE(cholesky, {"matches a dense reference (2D, 3D)", test_matches_dense_reference},
         {"elasticity: residual below 1e-12", test_elasticity_residual},
         {"several solves, one factorisation", test_factor_reused},
         {"hooke run load cases: one factorisation", test_loadcases_one_factorization},
         {"hooke run: direct for a small case, unless a pc is named", test_run_default_choice},
         {"not positive definite: names row and node", test_not_positive_definite_names_row},
         {"nonsymmetric K refused", test_nonsymmetric_refused},
         {"pc and precision=mixed refused", test_unused_options_refused})

/* backend=cuda: the factor on the host, b and x moved, the residual on the device; the same
 * answer as on the cpu. */
static void test_cuda_matches_cpu(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(30, 30, 30, &K));
    const int64_t n = K.nbrows * K.bs;
    double *b = malloc((size_t)n * sizeof *b), *xc = calloc((size_t)n, sizeof *xc),
           *xg = calloc((size_t)n, sizeof *xg);
    fill_rhs(b, n, 5u);
    hk_solver *sc = create(&K, "backend=cpu method=cholesky");
    hk_solver *sg = create(&K, "backend=cuda method=cholesky");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sg);
    hk_result rc, rg;
    HK_ASSERT_OK(hk_solver_solve(sc, b, xc, &rc));
    HK_ASSERT_OK(hk_solver_solve(sg, b, xg, &rg));
    CU_ASSERT(rg.true_residual < 1e-12);
    CU_ASSERT(hk_test_reldiff(xg, xc, (long)n) < 1e-10);
    printf("\n  cholesky %lld dofs: set-up %.3f s; solve cpu %.4f s, cuda %.4f s (residual %.1e)",
           (long long)n, rg.setup_seconds, rc.solve_seconds, rg.solve_seconds, rg.true_residual);
    hk_solver_describe(sg, stdout);
    hk_solver_destroy(sc);
    hk_solver_destroy(sg);
    free(b);
    free(xc);
    free(xg);
    hk_bcsr_free(&K);
}

HK_DEVICE_SUITE(cuda_cholesky, {"backend=cuda equals cpu", test_cuda_matches_cpu})

#else /* built without CHOLMOD: method=cholesky says how to get it */

static void test_not_built_message(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_poisson2d(8, &K));
    hk_options *o = NULL;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu method=cholesky"));
    CU_ASSERT_EQUAL(hk_solver_create(&K, o, &s), HK_ERR_NOT_BUILT);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "rebuild with libsuitesparse-dev"));
    hk_error_clear();
    hk_options_destroy(o);
    hk_bcsr_free(&K);
}

HK_SUITE(cholesky, {"without CHOLMOD: the message", test_not_built_message})

#endif
