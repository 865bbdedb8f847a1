/* Pipelined CG with a general preconditioner (Ghysels-Vanroose) keeps its scalars on the
 * backend: reading them every iteration (check_every=1) or every 7th, recorded as a graph or
 * launched op by op, gives the same iterates; it follows classical PCG (host scalars) in
 * iterations and reaches x = ones; residual replacement decided at checks keeps the true
 * residual; an indefinite matrix still stops with "not SPD". The device suite compares the
 * fused step op on CUDA with the CPU reference. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#include "pipecg_gv.h"

/* Solve K x = K * ones from x = 0 with "backend=<be> maxit=5000 <opts>" (*maxerr = max
 * |x_i - 1|); x (n entries) receives the solution. */
static int solve(const hk_backend *be, const hk_bcsr *K, const char *opts, double *x,
                 hk_result *res, double *maxerr)
{
    char text[512];
    snprintf(text, sizeof text, "maxit=5000 %s", opts);
    const int err = hk_test_solve_ones(be, K, text, x, res, maxerr);
    if (err) fprintf(stderr, "\n  %s: %s\n", text, hk_error_message());
    return err;
}

/* amg with fp64 levels: its default fp32 cycle makes the recursive residual drift a little,
 * and the check interval then decides when the true-residual test is met */
static const char *const gv_pcs[] = {"poly", "bjacobi", "fsai", "amg pc.amg.precision=fp64", "ic0"};
enum { NPCS = sizeof gv_pcs / sizeof gv_pcs[0] };

/* check_every=1 reads the scalars after every step, as the host-scalar form did; 7 (or 4)
 * with and without graphs must give the same iterates: bit for bit over a fixed 9 iterations (4
 * with graphs, 4 and the tail op by op at check_every=4) (no replacement, whose timing is the one
 * thing the check interval changes), and convergence at the first check at or after check_every=1's
 * iteration. All against cg with the same pc. */
static void test_check_every_and_graphs(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 6, 6, &K));
    const int64_t n = K.nbrows * K.bs;
    double *x1 = malloc((size_t)n * sizeof *x1), *x7 = malloc((size_t)n * sizeof *x7),
           *x7e = malloc((size_t)n * sizeof *x7e);
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        for (int p = 0; p < NPCS; p++) {
            char o[256];
            hk_result rcg, r1, r7, r7e;
            double ecg, e1, e7, e7e;
            snprintf(o, sizeof o, "method=cg pc=%s tol=1e-10", gv_pcs[p]);
            HK_ASSERT_OK(solve(*be, &K, o, x1, &rcg, &ecg));
            snprintf(o, sizeof o, "method=pipecg pc=%s tol=1e-10 check_every=1", gv_pcs[p]);
            HK_ASSERT_OK(solve(*be, &K, o, x1, &r1, &e1));
            snprintf(o, sizeof o, "method=pipecg pc=%s tol=1e-10 check_every=7 graphs=1",
                     gv_pcs[p]);
            HK_ASSERT_OK(solve(*be, &K, o, x7, &r7, &e7));
            snprintf(o, sizeof o, "method=pipecg pc=%s tol=1e-10 check_every=7 graphs=0",
                     gv_pcs[p]);
            HK_ASSERT_OK(solve(*be, &K, o, x7e, &r7e, &e7e));
            CU_ASSERT(hk_reason_converged(rcg.reason));
            CU_ASSERT(hk_reason_converged(r1.reason));
            CU_ASSERT(hk_reason_converged(r7.reason));
            CU_ASSERT(abs(r1.iterations - rcg.iterations) <= 1);
            CU_ASSERT(r7.iterations % 7 == 0 && r7.iterations >= r1.iterations - 1 &&
                      r7.iterations < r1.iterations + 7);
            CU_ASSERT_EQUAL(r7.iterations, r7e.iterations);
            CU_ASSERT_EQUAL(memcmp(x7, x7e, (size_t)n * sizeof *x7), 0);
            CU_ASSERT(e1 <= 1e-6 && e7 <= 1e-6);
            CU_ASSERT(r1.true_residual <= 1e-9 && r7.true_residual <= 1e-9);
            if (abs(r1.iterations - rcg.iterations) > 1 || e1 > 1e-6 || e7 > 1e-6)
                printf("\n  %s pc=%s: cg %d, pipecg check_every=1 %d (err %.1e), 7: %d (err "
                       "%.1e)",
                       hk_backend_name(*be), gv_pcs[p], rcg.iterations, r1.iterations, e1,
                       r7.iterations, e7);
            /* a fixed number of steps: the same digits whatever the check interval */
            snprintf(o, sizeof o, "method=pipecg pc=%s maxit=9 replace_every=-1 check_every=1",
                     gv_pcs[p]);
            HK_ASSERT_OK(solve(*be, &K, o, x1, &r1, NULL));
            snprintf(o, sizeof o,
                     "method=pipecg pc=%s maxit=9 replace_every=-1 check_every=4 graphs=1",
                     gv_pcs[p]);
            HK_ASSERT_OK(solve(*be, &K, o, x7, &r7, NULL));
            snprintf(o, sizeof o,
                     "method=pipecg pc=%s maxit=9 replace_every=-1 check_every=4 graphs=0",
                     gv_pcs[p]);
            HK_ASSERT_OK(solve(*be, &K, o, x7e, &r7e, NULL));
            CU_ASSERT(r1.reason == HK_DIVERGED_MAXIT && r1.iterations == 9);
            CU_ASSERT(r7.reason == HK_DIVERGED_MAXIT && r7.iterations == 9);
            CU_ASSERT_EQUAL(memcmp(x1, x7, (size_t)n * sizeof *x1), 0);
            CU_ASSERT_EQUAL(memcmp(x1, x7e, (size_t)n * sizeof *x1), 0);
        }
    }
    free(x1);
    free(x7);
    free(x7e);
    hk_bcsr_free(&K);
}

/* The stretched beam of pipecg_accuracy (every hex 100:1): the drift flag raised between
 * checks and acted on at the next one still brings the true residual to 1e-10. */
static void test_replacement_at_checks(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(300, 3, 3, &K));
    const int64_t n = K.nbrows * K.bs;
    double *x = malloc((size_t)n * sizeof *x);
    static const char *const runs[] = {"method=cg pc=poly tol=1e-10",
                                       "method=pipecg pc=poly tol=1e-10 check_every=10",
                                       "method=pipecg pc=poly tol=1e-10 check_every=10 "
                                       "replace_every=100"};
    hk_result res[3];
    for (int r = 0; r < 3; r++) {
        HK_ASSERT_OK(solve(hk_test_backends()[0], &K, runs[r], x, &res[r], NULL));
        CU_ASSERT(hk_reason_converged(res[r].reason));
        CU_ASSERT(res[r].true_residual <= HK_TRUE_RESIDUAL_FACTOR * 1e-10);
        CU_ASSERT(res[r].iterations <= 1.1 * res[0].iterations + 10);
        printf("\n  %s: %d iterations, true residual %.2e", runs[r], res[r].iterations,
               res[r].true_residual);
    }
    free(x);
    hk_bcsr_free(&K);
}

/* 5-point Poisson (eigenvalues in (0, 8)) shifted by -2: indefinite with a positive
 * diagonal, so every pc sets up and the sign test of the recurrences must catch it. */
static void test_indefinite(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_poisson2d(20, &K));
    for (int64_t i = 0; i < K.nbrows; i++)
        for (int64_t q = K.rowptr[i]; q < K.rowptr[i + 1]; q++)
            if (K.colind[q] == i) K.val[q] -= 2.0;
    const int64_t n = K.nbrows * K.bs;
    double *x = malloc((size_t)n * sizeof *x);
    static const char *const runs[] = {"pc=poly check_every=1", "pc=poly check_every=10",
                                       "pc=bjacobi check_every=10 graphs=0",
                                       "pc=bjacobi check_every=3"};
    for (const hk_backend *const *be = hk_test_backends(); *be; be++)
        for (int r = 0; r < 4; r++) {
            char o[128];
            hk_result res;
            snprintf(o, sizeof o, "method=pipecg %s", runs[r]);
            HK_ASSERT_OK(solve(*be, &K, o, x, &res, NULL));
            if (res.reason != HK_DIVERGED_NOT_SPD)
                printf("\n  %s %s: %s after %d", hk_backend_name(*be), o,
                       hk_reason_name(res.reason), res.iterations);
            CU_ASSERT_EQUAL(res.reason, HK_DIVERGED_NOT_SPD);
        }
    free(x);
    hk_bcsr_free(&K);
}

/* The rule of pipecg_gv.h on closed-form numbers: the first step has beta = 0 and alpha =
 * gamma / delta; the next beta = gamma / gamma_last, p.Ap = delta - beta gamma / alpha_last;
 * a negative p.Ap halts, and a halted S is left alone. */
static void test_derive_rule(void)
{
    double S[HK_G_COUNT] = {0};
    S[HK_G_FIRST] = 1;
    S[HK_G_GAMMA] = 4, S[HK_G_DELTA] = 2;
    hk_pipecg_gv_derive(S);
    CU_ASSERT_EQUAL(S[HK_G_HALT], 0);
    CU_ASSERT_DOUBLE_EQUAL(S[HK_G_ALPHA], 2.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(S[HK_G_BETA], 0.0, 0);
    const double d[7] = {1, 3, 1, 1, 1, 1, 1};
    hk_pipecg_gv_after_step(S, d); /* beta = 1/4, p.Ap = 3 - 0.25 * 1 / 2 = 2.875 */
    CU_ASSERT_EQUAL(S[HK_G_STEPS], 1);
    CU_ASSERT_DOUBLE_EQUAL(S[HK_G_BETA], 0.25, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(S[HK_G_DENOM], 2.875, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(S[HK_G_ALPHA], 1 / 2.875, 1e-15);
    const double bad[7] = {1, 0.01, 1, 1, 1, 1, 1}; /* p.Ap = 0.01 - 4 * 1 / alpha < 0 */
    hk_pipecg_gv_after_step(S, bad);
    CU_ASSERT_EQUAL(S[HK_G_HALT], 1);
    CU_ASSERT(S[HK_G_DENOM] < 0);
    const double steps = S[HK_G_STEPS];
    hk_pipecg_gv_derive(S);
    CU_ASSERT_EQUAL(S[HK_G_STEPS], steps);
    /* the drift bound: a gap above sqrt(eps) ||r|| after being below raises WANT; the
     * rounding of x itself (eps ||A|| ||x|| a step) is not counted: a replacement cannot
     * remove it, and counted it replaced r at every check below 1e-2 on the bracket */
    double T[HK_G_COUNT] = {0};
    T[HK_G_ESTIMATE] = 1, T[HK_G_BELOW] = 1, T[HK_G_NORMA] = 1e12, T[HK_G_FIRST] = 1;
    const double big[7] = {1, 1, 1, 1, 1, 1, 1}, xbig[7] = {1, 1, 1, 1, 1, 1, 1e30};
    double U[HK_G_COUNT];
    memcpy(U, T, sizeof U);
    hk_pipecg_gv_after_step(U, xbig); /* alpha_last = 0: gap = eps ||r||, whatever ||x|| */
    CU_ASSERT_EQUAL(U[HK_G_WANT], 0);
    CU_ASSERT_EQUAL(U[HK_G_BELOW], 1);
    T[HK_G_ALPHA] = 1;
    hk_pipecg_gv_after_step(T, big); /* gap >= eps * 1e12 * alpha ||p|| = 2.2e-4 > 1.5e-8 */
    CU_ASSERT_EQUAL(T[HK_G_WANT], 1);
    CU_ASSERT_EQUAL(T[HK_G_BELOW], 0);
}

/* With pc=poly the solve reads the host once per check (plus its start and the final true
 * residual), no longer once per iteration. */
static void test_host_reads_at_checks(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 5, 5, &K));
    hk_ksp k;
    memset(&k, 0, sizeof k);
    k.type = hk_ksp_type_find("pipecg");
    k.rtol = 1e-8;
    k.maxit = 1000;
    k.check_every = 5;
    k.replace_every = -1; /* a replacement would add one Gram pass */
    const int n_reads = hk_test_host_reads(&K, HK_FMT_BSR, "poly", &k);
    /* ||b||, ||r0||, the first Gram pass, one per check, the true residual's confirmation */
    const int allowed = 3 + k.res.iterations / 5 + 1;
    if (n_reads > allowed)
        printf("\n  pipecg pc=poly: %d host reads for %d iterations (check_every=5)", n_reads,
               k.res.iterations);
    CU_ASSERT(n_reads <= allowed);
    hk_bcsr_free(&K);
}

/* ---- device: CUDA against the CPU reference ----------------------------------------------- */

static const hk_backend *backend(const char *name)
{
    const hk_backend *b = NULL;
    if (hk_backend_get(name, &b)) hk_error_clear();
    return b;
}

static double *pseudo(int64_t n, unsigned seed, double lo)
{
    double *x = malloc((size_t)n * sizeof *x);
    uint32_t s = seed * 2891336453u + 7u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = lo + (double)(s >> 8) / (double)(1u << 24);
    }
    return x;
}

/* count vectors of n entries in precision prec on each of the two backends, the same on both:
 * vector j from pseudo(n, seed + j, ...), in [0.5, 1.5) for j == positive (a diagonal), else
 * in [-0.5, 0.5). */
static void twin_vecs(const hk_backend *const be[2], int64_t n, hk_precision prec, int count,
                      unsigned seed, int positive, hk_vec **v0, hk_vec **v1)
{
    hk_vec **v[2] = {v0, v1};
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < count; j++) {
            double *x = pseudo(n, seed + j, j == positive ? 0.5 : -0.5);
            HK_ASSERT_OK(hk_vec_create(be[k], n, prec, &v[k][j]));
            HK_ASSERT_OK(hk_vec_upload(v[k][j], x));
            free(x);
        }
}

static int close_vec(const char *what, const hk_vec *a, const hk_vec *b, double tol)
{
    const int64_t n = a->n;
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    HK_ASSERT_OK(hk_vec_download(a, x));
    HK_ASSERT_OK(hk_vec_download(b, y));
    const double d = hk_test_reldiff(x, y, (long)n);
    if (!(d <= tol)) printf("\n  %s: relative difference %.2e", what, d);
    free(x);
    free(y);
    return d <= tol;
}

/* Three steps from the same vectors and scalars on both backends, then a halted S that
 * leaves everything alone. With matrices A (A[0] on cuda, A[1] on the cpu) CUDA runs the
 * fused spmv_pipecg_gv_step and the CPU mat_spmv then pipecg_gv_step; without, both run
 * pipecg_gv_step on the given n = V[5]. */
static void gv_steps_compare(const hk_backend *const be[2], int64_t n, hk_mat *const A[2],
                             const char *label)
{
    hk_vec *V[2][10];
    double *S[2], h[2][HK_G_COUNT];
    twin_vecs(be, n, HK_FP64, 10, 40, -1, V[0], V[1]);
    for (int k = 0; k < 2; k++) {
        double init[HK_G_COUNT] = {0};
        init[HK_G_FIRST] = 1, init[HK_G_ESTIMATE] = 1, init[HK_G_NORMA] = 8;
        init[HK_G_BELOW] = 1, init[HK_G_GAMMA] = 2, init[HK_G_DELTA] = 3;
        hk_pipecg_gv_derive(init);
        HK_ASSERT_OK(be[k]->scal_alloc(&S[k], HK_G_COUNT));
        HK_ASSERT_OK(be[k]->scal_set(S[k], 0, HK_G_COUNT, init));
    }
    for (int step = 0; step < 4; step++) {
        if (step == 3) /* halted: nothing may change */
            for (int k = 0; k < 2; k++) {
                const double one = 1;
                HK_ASSERT_OK(be[k]->scal_set(S[k], HK_G_HALT, 1, &one));
            }
        for (int k = 0; k < 2; k++) {
            /* the coefficients a real run would derive can halt on these vectors: keep
             * them fixed so that every step moves the vectors */
            if (step < 3) {
                const double ab[2] = {0.3, 0.7}, zero = 0;
                HK_ASSERT_OK(be[k]->scal_set(S[k], HK_G_ALPHA, 2, ab));
                HK_ASSERT_OK(be[k]->scal_set(S[k], HK_G_HALT, 1, &zero));
            }
            if (A && k == 0) {
                CU_ASSERT_PTR_NOT_NULL_FATAL(be[k]->spmv_pipecg_gv_step);
                HK_ASSERT_OK(be[k]->spmv_pipecg_gv_step(A[k], V[k], S[k]));
            } else {
                if (A) HK_ASSERT_OK(hk_mat_spmv(A[k], V[k][4], V[k][5]));
                HK_ASSERT_OK(be[k]->pipecg_gv_step(V[k], S[k]));
            }
            HK_ASSERT_OK(be[k]->scal_get(S[k], 0, HK_G_COUNT, h[k]));
        }
        for (int j = 0; j < 10; j++) {
            char what[128];
            snprintf(what, sizeof what, "%s n=%lld step %d vector %d", label, (long long)n, step,
                     j);
            CU_ASSERT(close_vec(what, V[0][j], V[1][j], 1e-12));
        }
        /* derived slots may cancel: compared on the scale of the inner products */
        const double scale = fmax(1.0, fabs(h[1][HK_G_GAMMA]) + fabs(h[1][HK_G_DELTA]));
        CU_ASSERT_EQUAL(h[0][HK_G_HALT], h[1][HK_G_HALT]);
        for (int j = 0; j < HK_G_COUNT; j++)
            CU_ASSERT(fabs(h[0][j] - h[1][j]) <= 1e-11 * fmax(scale, fabs(h[1][j])));
        CU_ASSERT_EQUAL(h[0][HK_G_STEPS], step < 3 ? step + 1 : 3);
    }
    for (int k = 0; k < 2; k++) {
        for (int j = 0; j < 10; j++)
            hk_vec_destroy(V[k][j]);
        be[k]->scal_free(S[k]);
    }
}

/* pipecg_gv_step on sizes with one and with many blocks. */
static void test_step_cuda_cpu(void)
{
    const hk_backend *be[2] = {backend("cuda"), backend("cpu")};
    CU_ASSERT_PTR_NOT_NULL_FATAL(be[0]);
    gv_steps_compare(be, 1000, NULL, "pipecg_gv_step");
    gv_steps_compare(be, 300007, NULL, "pipecg_gv_step");
}

/* Formats for the fused SpMV ops. On cuda: those whose SpMV runs the step in its epilogue
 * (sbell, sell, bsr) and two that make a separate SpMV and step (csr's vector kernel,
 * cuSPARSE); on the cpu: those with a row kernel (csr, bsr) and two without (sbell, sell). */
static const hk_format cuda_fused_fmts[] = {HK_FMT_SBELL, HK_FMT_SELL, HK_FMT_BSR, HK_FMT_CSR,
                                            HK_FMT_CUSPARSE_CSR};
static const hk_format cpu_fused_fmts[] = {HK_FMT_CSR, HK_FMT_BSR, HK_FMT_SBELL, HK_FMT_SELL};

/* The matrices of the fused-op comparisons: a small hex8 elasticity matrix, and a band with a
 * hub row hundreds of blocks long (on cuda its slice gets more lanes than the others). */
static void fused_op_matrices(hk_bcsr K[2])
{
    HK_ASSERT_OK(hk_gen_elasticity3d(7, 6, 5, &K[0]));
    hk_test_band(4000, 3, 11, 3, &K[1]);
}

/* spmv_pipecg_gv_step of be[0] on each format against mat_spmv and pipecg_gv_step of be[1] on
 * BSR. */
static void spmv_step_compare(const hk_backend *const be[2], const hk_format *fmts, int nfmt)
{
    hk_bcsr KK[2];
    fused_op_matrices(KK);
    for (int km = 0; km < 2; km++) {
        const hk_bcsr K = KK[km];
        for (int f = 0; f < nfmt; f++) {
            hk_mat *A[2];
            HK_ASSERT_OK(hk_mat_create(be[0], &K, fmts[f], HK_FP64, NULL, &A[0]));
            HK_ASSERT_OK(hk_mat_create(be[1], &K, HK_FMT_BSR, HK_FP64, NULL, &A[1]));
            char label[96];
            snprintf(label, sizeof label, "spmv_pipecg_gv_step %s %s", hk_backend_name(be[0]),
                     hk_format_name(fmts[f]));
            gv_steps_compare(be, K.nbrows * K.bs, A, label);
            hk_mat_destroy(A[0]);
            hk_mat_destroy(A[1]);
        }
        hk_bcsr_free(&KK[km]);
    }
}

/* spmv_poly_step of be[0] on each format against mat_spmv and vec_poly_step of be[1] on BSR,
 * fp64 and fp32, the first degree's coefficients (old y not read) and a later degree's. */
static void spmv_poly_compare(const hk_backend *const be[2], const hk_format *fmts, int nfmt)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(be[0]->spmv_poly_step);
    hk_bcsr KK[2];
    fused_op_matrices(KK);
    for (int km = 0; km < 2; km++) {
        const hk_bcsr K = KK[km];
        const int64_t n = K.nbrows * K.bs;
        static const double coef[2][4] = {{0.4, -1.0, 0.0, 0.3}, {0.8, -2.0, -1.0, -0.2}};
        for (int f = 0; f < nfmt; f++)
            for (int p = 0; p < 2; p++) {
                const hk_precision prec = p ? HK_FP32 : HK_FP64;
                hk_mat *A[2];
                hk_vec *v[2][5]; /* x t y d z */
                HK_ASSERT_OK(hk_mat_create(be[0], &K, fmts[f], prec, NULL, &A[0]));
                HK_ASSERT_OK(hk_mat_create(be[1], &K, HK_FMT_BSR, prec, NULL, &A[1]));
                twin_vecs(be, n, prec, 5, 90, 3, v[0], v[1]);
                for (int c = 0; c < 2; c++) {
                    const double *a = coef[c];
                    HK_ASSERT_OK(be[0]->spmv_poly_step(A[0], v[0][0], v[0][1], v[0][2], a[0],
                                                       v[0][3], a[1], a[2], v[0][4], a[3], 1.0));
                    HK_ASSERT_OK(hk_mat_spmv(A[1], v[1][0], v[1][1]));
                    HK_ASSERT_OK(be[1]->vec_poly_step(v[1][2], a[0], v[1][3], v[1][1], a[1],
                                                      v[1][0], a[2], v[1][4], a[3], 1.0));
                    for (int j = 2; j <= 4; j += 2) {
                        char what[96];
                        snprintf(what, sizeof what, "spmv_poly_step %s %s %s case %d %s",
                                 hk_backend_name(be[0]), hk_format_name(fmts[f]),
                                 p ? "fp32" : "fp64", c, j == 2 ? "y" : "z");
                        CU_ASSERT(close_vec(what, v[0][j], v[1][j], p ? 1e-5 : 1e-12));
                    }
                }
                for (int k = 0; k < 2; k++) {
                    for (int j = 0; j < 5; j++)
                        hk_vec_destroy(v[k][j]);
                    hk_mat_destroy(A[k]);
                }
            }
        hk_bcsr_free(&KK[km]);
    }
}

#define NFMTS(a) ((int)(sizeof a / sizeof a[0]))

/* The fused SpMV ops on CUDA against the CPU's two calls. */
static void test_spmv_ops_cuda_cpu(void)
{
    const hk_backend *be[2] = {backend("cuda"), backend("cpu")};
    CU_ASSERT_PTR_NOT_NULL_FATAL(be[0]);
    spmv_step_compare(be, cuda_fused_fmts, NFMTS(cuda_fused_fmts));
    spmv_poly_compare(be, cuda_fused_fmts, NFMTS(cuda_fused_fmts));
}

/* The CPU's fused SpMV ops against its own two calls. */
static void test_spmv_ops_cpu(void)
{
    const hk_backend *be[2] = {backend("cpu"), backend("cpu")};
    CU_ASSERT_PTR_NOT_NULL_FATAL(be[0]);
    spmv_step_compare(be, cpu_fused_fmts, NFMTS(cpu_fused_fmts));
    spmv_poly_compare(be, cpu_fused_fmts, NFMTS(cpu_fused_fmts));
}

/* vec_poly_step in fp64 and fp32, with and without x, the old y and the old z. */
static void test_poly_step_cuda_cpu(void)
{
    const hk_backend *be[2] = {backend("cuda"), backend("cpu")};
    CU_ASSERT_PTR_NOT_NULL_FATAL(be[0]);
    const int64_t n = 100003;
    static const double coef[4][5] = {{1.0, 0.0, 0.0, 0.7, 0.0},
                                      {0.9, -1.0, 0.0, 0.3, 1.0},
                                      {1.8, -2.0, -1.0, -0.2, 1.0},
                                      {0.5, 0.25, -1.0, 1.5, 0.0}};
    for (int p = 0; p < 2; p++) {
        const hk_precision prec = p ? HK_FP32 : HK_FP64;
        hk_vec *v[2][5]; /* y d t x z */
        twin_vecs(be, n, prec, 5, 70, 1, v[0], v[1]);
        for (int c = 0; c < 4; c++) {
            const double *a = coef[c];
            for (int k = 0; k < 2; k++)
                HK_ASSERT_OK(be[k]->vec_poly_step(v[k][0], a[0], v[k][1], v[k][2], a[1],
                                                  a[1] != 0.0 ? v[k][3] : NULL, a[2], v[k][4], a[3],
                                                  a[4]));
            char what[64];
            snprintf(what, sizeof what, "vec_poly_step %s case %d y", p ? "fp32" : "fp64", c);
            CU_ASSERT(close_vec(what, v[0][0], v[1][0], p ? 1e-6 : 1e-14));
            snprintf(what, sizeof what, "vec_poly_step %s case %d z", p ? "fp32" : "fp64", c);
            CU_ASSERT(close_vec(what, v[0][4], v[1][4], p ? 1e-6 : 1e-14));
        }
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < 5; j++)
                hk_vec_destroy(v[k][j]);
    }
}

/* Whole solves: CUDA's device-scalar path with graphs against the CPU, same options. */
static void test_solve_cuda_cpu(void)
{
    const hk_backend *gpu = backend("cuda"), *cpu = backend("cpu");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(8, 8, 8, &K));
    const int64_t n = K.nbrows * K.bs;
    double *xg = malloc((size_t)n * sizeof *xg), *xc = malloc((size_t)n * sizeof *xc);
    static const char *const runs[] = {"method=pipecg pc=poly check_every=10",
                                       "method=pipecg pc=poly check_every=1",
                                       "method=pipecg pc=poly precision=mixed check_every=10",
                                       "method=pipecg pc=fsai check_every=10",
                                       "method=pipecg pc=amg check_every=5",
                                       "method=pipecg pc=ic0 check_every=10",
                                       "method=cg pc=poly"};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        hk_result rg, rc;
        double eg, ec;
        HK_ASSERT_OK(solve(gpu, &K, runs[r], xg, &rg, &eg));
        HK_ASSERT_OK(solve(cpu, &K, runs[r], xc, &rc, &ec));
        printf("\n  %s: cuda %d iterations (err %.1e), cpu %d (err %.1e)", runs[r], rg.iterations,
               eg, rc.iterations, ec);
        CU_ASSERT(hk_reason_converged(rg.reason) && hk_reason_converged(rc.reason));
        /* the same within 1, then rounded up to the next check */
        const char *ce = strstr(runs[r], "check_every=");
        const int every = ce ? atoi(ce + 12) : 1;
        CU_ASSERT(abs(rg.iterations - rc.iterations) <= every);
        CU_ASSERT(eg <= 1e-5 && ec <= 1e-5);
    }
    free(xg);
    free(xc);
    hk_bcsr_free(&K);
}

HK_DEVICE_SUITE(pipecg_gv_cuda,
                {"pipecg_gv_step: CUDA equals the CPU reference", test_step_cuda_cpu},
                {"spmv_pipecg_gv_step, spmv_poly_step: CUDA equals the CPU's SpMV and step",
                 test_spmv_ops_cuda_cpu},
                {"vec_poly_step: CUDA equals the CPU reference", test_poly_step_cuda_cpu},
                {"pipecg with device scalars: CUDA solves as the CPU does", test_solve_cuda_cpu})

HK_SUITE(pipecg_gv,
         {"check_every 1 or 7, graphs or not: the same iterates, cg's iterations",
          test_check_every_and_graphs},
         {"residual replacement decided at checks keeps 1e-10 on the stretched beam",
          test_replacement_at_checks},
         {"an indefinite matrix stops with not SPD through the halted steps", test_indefinite},
         {"the scalar rule on closed-form numbers", test_derive_rule},
         {"spmv_pipecg_gv_step, spmv_poly_step: the fused ops equal the SpMV and the step",
          test_spmv_ops_cpu},
         {"pc=poly: the host reads scalars only at checks", test_host_reads_at_checks})
