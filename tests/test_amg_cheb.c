/* The multigrid cycle's fused Chebyshev step (the amg_cheb_step op, solver/pc/amg.c's
 * hk_amg_smooth and residual): on the cpu the op gives the bytes of the separate vector ops it
 * replaces, for every combination of its inputs (product or none, residual only, the first
 * degree's c = 0, the x updates), in fp64 and fp32 and block sizes 1, 3 and 6, on square and
 * rectangular matrices (the distributed operator's interior and boundary rows); whole amg solves
 * give the same iterates byte for byte with and without it (HOOKE_AMG_UNFUSED=1), and a bad
 * value of that variable is refused in one sentence. Device suite cuda_amg_cheb: the op on cuda
 * (in the SpMV's epilogue for sbell and bsr, after a separate product for the others) against
 * the cpu's, and cuda's fused cycle against its unfused one: the same iterations. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

static const hk_backend *backend(const char *name)
{
    const hk_backend *b = NULL;
    if (hk_backend_get(name, &b)) hk_error_clear();
    return b;
}

/* One case of the op: which inputs it has. */
typedef struct cheb_case {
    const char *what;
    int prod;  /* p given (else no product) */
    int rin_r; /* rin is r (an update in place), else a separate vector (b) */
    int r_out; /* r written */
    int D;     /* D given (else a residual alone) */
    int c;     /* c != 0 (dp read) */
    int dn;    /* dn written */
    int x;     /* x given, with xmode */
    int xmode;
} cheb_case;

static const cheb_case cases[] = {
    {"residual b - A x", 1, 0, 1, 0, 0, 0, 0, 0},
    {"first degree from a zero x (no product)", 0, 0, 0, 1, 0, 1, 0, 0},
    {"first degree from a zero x, degree 1: x = d", 0, 0, 0, 1, 0, 0, 1,
     HK_CHEB_X_ZERO | HK_CHEB_X_DN},
    {"first degree from x (r = b - A x, d)", 1, 0, 1, 1, 0, 1, 0, 0},
    {"second degree after a zero x: x = d_0 + d_1", 1, 0, 0, 1, 1, 0, 1,
     HK_CHEB_X_ZERO | HK_CHEB_X_DP | HK_CHEB_X_DN},
    {"a middle degree: r, d_k, x += d_{k-1}", 1, 1, 1, 1, 1, 1, 1, HK_CHEB_X_DP},
    {"the last degree: x += d_{k-1} + d_k", 1, 1, 0, 1, 1, 0, 1,
     HK_CHEB_X_DP | HK_CHEB_X_DN},
    {"a middle degree after a zero x: x = d_0, r = b - A d_0, d_1", 1, 0, 1, 1, 1, 1, 1,
     HK_CHEB_X_ZERO | HK_CHEB_X_DP},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* The vectors of a case on one backend: p, rin (b), r, dp, dn, x, t and the blocks D. */
enum { V_P, V_B, V_R, V_DP, V_DN, V_X, V_T, V_D, NV };

static void make_vecs(const hk_backend *be, int64_t n, int bs, hk_precision prec, hk_vec **v)
{
    hk_test_step_vecs(be, n, bs, prec, NV, V_D, 17u, 5u, v);
}

/* The same with p of nc entries (a rectangular matrix's columns). */
static void make_vecs_cols(const hk_backend *be, int64_t n, int64_t nc, int bs, hk_precision prec,
                           hk_vec **v)
{
    make_vecs(be, n, bs, prec, v);
    if (nc == n) return;
    hk_vec_destroy(v[V_P]);
    double *h = hk_test_rand_vec(nc, 29u);
    HK_ASSERT_OK(hk_vec_create(be, nc, prec, &v[V_P]));
    HK_ASSERT_OK(hk_vec_upload(v[V_P], h));
    free(h);
}

/* The matrices of compare_cases: the band itself, or a rectangular one from it as the
 * distributed operator's parts are: fewer rows than columns (its last two thirds of rows,
 * every column: the interior rows' shape), or more (every row, its even columns j as
 * column j / 2: no row left empty). */
enum { SHAPE_SQUARE, SHAPE_WIDE, SHAPE_TALL };
static void shaped(const hk_bcsr *K, int shape, hk_bcsr *R)
{
    const int b2 = K->bs * K->bs;
    const int64_t r0 = shape == SHAPE_WIDE ? K->nbrows / 3 : 0;
    memset(R, 0, sizeof *R);
    R->bs = K->bs;
    R->nbrows = K->nbrows - r0;
    R->nbcols = shape == SHAPE_TALL ? (K->nbcols + 1) / 2 : K->nbcols;
    R->rowptr = malloc((size_t)(R->nbrows + 1) * sizeof *R->rowptr);
    R->colind = malloc((size_t)(K->rowptr[K->nbrows] + 1) * sizeof *R->colind);
    R->val = malloc((size_t)(K->rowptr[K->nbrows] + 1) * b2 * sizeof *R->val);
    int64_t q = 0;
    for (int64_t i = 0; i < R->nbrows; i++) {
        R->rowptr[i] = q;
        for (int64_t k = K->rowptr[r0 + i]; k < K->rowptr[r0 + i + 1]; k++) {
            const int32_t j = K->colind[k];
            if (shape == SHAPE_TALL && j % 2) continue;
            R->colind[q] = shape == SHAPE_TALL ? j / 2 : j;
            memcpy(R->val + q * b2, K->val + k * b2, (size_t)b2 * sizeof *R->val);
            q++;
        }
    }
    R->rowptr[R->nbrows] = q;
}

static void free_vecs(hk_vec **v)
{
    hk_test_free_vecs(v, NV);
}

static const double cheb_a = 0.61, cheb_c = 0.37;

/* The case by amg_cheb_step. */
static int fused_step(const hk_backend *be, hk_mat *A, int bs, const cheb_case *cs, hk_vec **v)
{
    const hk_cheb_step s = {.p = cs->prod ? v[V_P] : NULL,
                            .rin = cs->rin_r ? v[V_R] : v[V_B],
                            .r = cs->r_out ? v[V_R] : NULL,
                            .D = cs->D ? v[V_D] : NULL,
                            .bs = bs,
                            .a = cheb_a,
                            .c = cs->c ? cheb_c : 0.0,
                            .dp = v[V_DP],
                            .dn = cs->dn ? v[V_DN] : NULL,
                            .x = cs->x ? v[V_X] : NULL,
                            .xmode = cs->xmode,
                            .t = v[V_T]};
    return be->amg_cheb_step(A, &s);
}

/* The case by the separate calls the smoother made before the op (hk_amg_smooth's). u and w
 * stand in for the residual and the new d when the case does not write them. */
static void separate_steps(const hk_backend *be, hk_mat *A, int bs, const cheb_case *cs,
                           hk_vec **v, hk_vec *u, hk_vec *w)
{
    hk_vec *r = cs->r_out ? v[V_R] : u;
    const hk_vec *rin = cs->rin_r ? v[V_R] : v[V_B];
    if (cs->prod) { /* r = A p, then r = rin - r */
        HK_ASSERT_OK(hk_mat_spmv(A, v[V_P], v[V_T]));
        HK_ASSERT_OK(be->vec_copy(u, v[V_T]));
        HK_ASSERT_OK(be->vec_axpby(u, 1.0, rin, -1.0));
    } else
        HK_ASSERT_OK(be->vec_copy(u, rin));
    if (r != u) HK_ASSERT_OK(be->vec_copy(r, u));
    if (!cs->D) return;
    HK_ASSERT_OK(be->bdiag_apply(v[V_D], bs, u, v[V_T]));
    HK_ASSERT_OK(be->vec_copy(w, v[V_DP]));
    HK_ASSERT_OK(be->vec_axpby(w, cheb_a, v[V_T], cs->c ? cheb_c : 0.0));
    if (cs->dn) HK_ASSERT_OK(be->vec_copy(v[V_DN], w));
    if (!cs->x) return;
    int zero = cs->xmode & HK_CHEB_X_ZERO;
    if (cs->xmode & HK_CHEB_X_DP) {
        HK_ASSERT_OK(zero ? be->vec_copy(v[V_X], v[V_DP]) : be->vec_axpby(v[V_X], 1.0, v[V_DP], 1.0));
        zero = 0;
    }
    if (cs->xmode & HK_CHEB_X_DN)
        HK_ASSERT_OK(zero ? be->vec_copy(v[V_X], w) : be->vec_axpby(v[V_X], 1.0, w, 1.0));
}

/* The outputs a case writes (r, dn, x): the same bytes, or within tol (tol < 0: bytes). */
static int same_outputs(const char *label, const cheb_case *cs, hk_vec **f, hk_vec **g,
                        double tol)
{
    const int idx[3] = {V_R, V_DN, V_X}, on[3] = {cs->r_out, cs->dn && cs->D, cs->x && cs->D};
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        if (!on[k]) continue;
        const int64_t n = f[idx[k]]->n;
        double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
        HK_ASSERT_OK(hk_vec_download(f[idx[k]], a));
        HK_ASSERT_OK(hk_vec_download(g[idx[k]], b));
        const double d = hk_test_reldiff(a, b, (long)n);
        const int same = tol < 0 ? !memcmp(a, b, (size_t)n * sizeof *a) : d <= tol;
        if (!same)
            printf("\n  %s: %s differs (relative %.2e)", label, k == 0 ? "r" : k == 1 ? "dn" : "x",
                   d);
        ok &= same;
        free(a);
        free(b);
    }
    return ok;
}

/* Every case on be's matrix in format fmt against ref's separate calls on its matrix in format
 * rfmt (ref == be: bytes; else within fp64 or fp32 rounding), block sizes 1, 3 and 6, fp64 and
 * fp32. */
static void compare_shaped(const hk_backend *be, const hk_backend *ref, hk_format fmt,
                           hk_format rfmt, int shape)
{
    static const int sizes[3] = {1, 3, 6};
    static const char *const shape_name[3] = {"", " wide", " tall"};
    for (int sb = 0; sb < 3; sb++) {
        const int bs = sizes[sb];
        hk_bcsr B = {0}, K = {0};
        hk_test_band(bs == 6 ? 700 : 2000, bs, 300, 5u, &B);
        shaped(&B, shape, &K);
        hk_bcsr_free(&B);
        const int64_t n = K.nbrows * bs, nc = K.nbcols * bs;
        for (int p = 0; p < 2; p++) {
            const hk_precision prec = p ? HK_FP32 : HK_FP64;
            hk_mat *A = NULL, *R = NULL;
            HK_ASSERT_OK(hk_mat_create(be, &K, fmt, prec, NULL, &A));
            HK_ASSERT_OK(hk_mat_create(ref, &K, rfmt, prec, NULL, &R));
            for (int c = 0; c < NCASES; c++) {
                hk_vec *f[NV], *g[NV], *u = NULL, *w = NULL;
                make_vecs_cols(be, n, nc, bs, prec, f);
                make_vecs_cols(ref, n, nc, bs, prec, g);
                HK_ASSERT_OK(hk_vec_create(ref, n, prec, &u));
                HK_ASSERT_OK(hk_vec_create(ref, n, prec, &w));
                HK_ASSERT_OK(fused_step(be, A, bs, &cases[c], f));
                separate_steps(ref, R, bs, &cases[c], g, u, w);
                char label[160];
                snprintf(label, sizeof label, "%s %s%s bs %d %s: %s", hk_backend_name(be),
                         hk_format_name(fmt), shape_name[shape], bs, p ? "fp32" : "fp64",
                         cases[c].what);
                CU_ASSERT(same_outputs(label, &cases[c], f, g,
                                       be == ref ? -1.0 : p ? 1e-5 : 1e-12));
                free_vecs(f);
                free_vecs(g);
                hk_vec_destroy(u);
                hk_vec_destroy(w);
            }
            hk_mat_destroy(A);
            hk_mat_destroy(R);
        }
        hk_bcsr_free(&K);
    }
}

static void compare_cases(const hk_backend *be, const hk_backend *ref, hk_format fmt,
                          hk_format rfmt)
{
    compare_shaped(be, ref, fmt, rfmt, SHAPE_SQUARE);
}

/* The cpu's op against its own separate calls, byte for byte, on a row-kernel format and a
 * sliced one. */
static void test_op_cpu(void)
{
    const hk_backend *cpu = backend("cpu");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cpu->amg_cheb_step);
    compare_cases(cpu, cpu, HK_FMT_BSR, HK_FMT_BSR);
    compare_cases(cpu, cpu, HK_FMT_SBELL, HK_FMT_SBELL);
}

/* The same on rectangular matrices (p of the columns' size, the rest of the rows'), as the
 * distributed operator's interior and boundary rows take the op. */
static void test_op_rect_cpu(void)
{
    const hk_backend *cpu = backend("cpu");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
    for (int shape = SHAPE_WIDE; shape <= SHAPE_TALL; shape++) {
        compare_shaped(cpu, cpu, HK_FMT_BSR, HK_FMT_BSR, shape);
        compare_shaped(cpu, cpu, HK_FMT_SBELL, HK_FMT_SBELL, shape);
    }
}

/* Arguments the op refuses: p written by the same op, D of the wrong size, dp missing. */
static void test_op_errors(void)
{
    const hk_backend *cpu = backend("cpu");
    hk_bcsr K = {0};
    hk_test_band(300, 3, -1, 3u, &K);
    hk_mat *A = NULL;
    HK_ASSERT_OK(hk_mat_create(cpu, &K, HK_FMT_BSR, HK_FP64, NULL, &A));
    hk_vec *v[NV];
    make_vecs(cpu, 900, 3, HK_FP64, v);
    hk_cheb_step s = {.p = v[V_P], .rin = v[V_B], .r = v[V_P], .t = v[V_T]};
    CU_ASSERT_NOT_EQUAL(cpu->amg_cheb_step(A, &s), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "p must differ"));
    hk_error_clear();
    s.r = v[V_R];
    s.D = v[V_D];
    s.bs = 2; /* 900 rows, but D holds 3 x 3 blocks */
    CU_ASSERT_NOT_EQUAL(cpu->amg_cheb_step(A, &s), 0);
    hk_error_clear();
    s.bs = 3;
    s.c = 0.5; /* without dp */
    CU_ASSERT_NOT_EQUAL(cpu->amg_cheb_step(A, &s), 0);
    hk_error_clear();
    s.dp = v[V_DP];
    HK_ASSERT_OK(cpu->amg_cheb_step(A, &s));
    free_vecs(v);
    hk_mat_destroy(A);
    /* a rectangular matrix: p of its rows' size (not its columns'), then a row vector of its
     * columns' size, are refused */
    hk_bcsr R = {0};
    shaped(&K, SHAPE_WIDE, &R);
    HK_ASSERT_OK(hk_mat_create(cpu, &R, HK_FMT_BSR, HK_FP64, NULL, &A));
    const int64_t n = R.nbrows * 3, nc = R.nbcols * 3;
    make_vecs(cpu, n, 3, HK_FP64, v);
    hk_cheb_step q = {.p = v[V_P], .rin = v[V_B], .r = v[V_R], .t = v[V_T]};
    CU_ASSERT_NOT_EQUAL(cpu->amg_cheb_step(A, &q), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "p differs from the matrix's columns"));
    hk_error_clear();
    free_vecs(v);
    make_vecs_cols(cpu, n, nc, 3, HK_FP64, v);
    q = (hk_cheb_step){.p = v[V_P], .rin = v[V_B], .r = v[V_R], .t = v[V_T]};
    HK_ASSERT_OK(cpu->amg_cheb_step(A, &q));
    hk_vec *wrong = NULL;
    HK_ASSERT_OK(hk_vec_create(cpu, nc, HK_FP64, &wrong));
    q.r = wrong;
    CU_ASSERT_NOT_EQUAL(cpu->amg_cheb_step(A, &q), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "the matrix's rows"));
    hk_error_clear();
    hk_vec_destroy(wrong);
    free_vecs(v);
    hk_mat_destroy(A);
    hk_bcsr_free(&R);
    hk_bcsr_free(&K);
}

/* A solve's iterations and solution with HOOKE_AMG_UNFUSED set to unfused ("1" or NULL). */
static int solve_with(const hk_bcsr *K, const char *opts, const char *unfused, double *x,
                      hk_result *res)
{
    if (unfused)
        setenv("HOOKE_AMG_UNFUSED", unfused, 1);
    else
        unsetenv("HOOKE_AMG_UNFUSED");
    const int64_t n = K->nbrows * K->bs;
    double *b = hk_test_rand_vec(n, 11u);
    hk_options *o = NULL;
    hk_solver *s = NULL;
    memset(x, 0, (size_t)n * sizeof *x);
    int ierr = hk_options_create(&o);
    if (!ierr) ierr = hk_options_parse(o, opts);
    if (!ierr) ierr = hk_solver_create(K, o, &s);
    if (!ierr) ierr = hk_solver_solve(s, b, x, res);
    hk_solver_destroy(s);
    hk_options_destroy(o);
    free(b);
    unsetenv("HOOKE_AMG_UNFUSED");
    return ierr;
}

static const char *const cycle_variants[] = {
    "pc=amg",
    "pc=amg pc.amg.degree=1",
    "pc=amg pc.amg.degree=3 pc.amg.pre=2 pc.amg.post=2",
    "pc=amg pc.amg.degree=4 pc.amg.pre=0 pc.amg.post=2",
    "pc=amg pc.amg.cycle=w",
    "pc=amg pc.amg.precision=fp32",
    "pc=amg precision=mixed pc.amg.degree=3",
    "pc=amg pc.amg.format=csr",
    "pc=amg pc.amg.smoother=l1-jacobi",
    "pc=amg pc.amg.precision=fp64 pc.amg.lanczos=20",
    "pc=amg pc.amg.format=csr pc.amg.update_lanczos=4",
    NULL};

/* Whole solves on be with the fused cycle and spectral bounds (amg_cheb_step, spmv_dot_s,
 * bdiag_update_dot_s) and with the separate calls (HOOKE_AMG_UNFUSED=1 switches both): the same
 * number of iterations, and (bytes) the same solution, else one within tol; a second fused
 * solve gives the first one's bytes. */
static void compare_cycles(const char *be, double tol)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(9, 8, 7, &K));
    const int64_t n = K.nbrows * K.bs;
    double *xf = malloc((size_t)n * sizeof *xf), *xu = malloc((size_t)n * sizeof *xu),
           *x2 = malloc((size_t)n * sizeof *x2);
    for (int i = 0; cycle_variants[i]; i++) {
        char opts[256];
        snprintf(opts, sizeof opts, "backend=%s %s", be, cycle_variants[i]);
        hk_result rf, ru, r2;
        HK_ASSERT_OK(solve_with(&K, opts, NULL, xf, &rf));
        HK_ASSERT_OK(solve_with(&K, opts, "1", xu, &ru));
        HK_ASSERT_OK(solve_with(&K, opts, NULL, x2, &r2));
        CU_ASSERT(!memcmp(xf, x2, (size_t)n * sizeof *xf));
        CU_ASSERT(hk_reason_converged(rf.reason));
        CU_ASSERT_EQUAL(rf.iterations, ru.iterations);
        const int same = tol < 0 ? !memcmp(xf, xu, (size_t)n * sizeof *xf)
                                 : hk_test_reldiff(xf, xu, (long)n) <= tol;
        if (!same || rf.iterations != ru.iterations)
            printf("\n  %s: fused %d its, unfused %d its, relative difference %.2e", opts,
                   rf.iterations, ru.iterations, hk_test_reldiff(xf, xu, (long)n));
        CU_ASSERT(same);
    }
    free(xf);
    free(xu);
    free(x2);
    hk_bcsr_free(&K);
}

static void test_cycle_cpu(void)
{
    compare_cycles("cpu", -1.0);
}

/* HOOKE_AMG_UNFUSED other than 0, 1 or empty: one sentence naming it and the values. */
static void test_bad_switch(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(3, 3, 3, &K));
    double *x = malloc((size_t)(K.nbrows * K.bs) * sizeof *x);
    hk_result res;
    CU_ASSERT_NOT_EQUAL(solve_with(&K, "backend=cpu pc=amg", "yes", x, &res), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "HOOKE_AMG_UNFUSED=yes: set it to 1"));
    hk_error_clear();
    HK_ASSERT_OK(solve_with(&K, "backend=cpu pc=amg", "0", x, &res));
    free(x);
    hk_bcsr_free(&K);
}

HK_SUITE(amg_cheb, {"amg_cheb_step equals the separate calls byte for byte", test_op_cpu},
         {"amg_cheb_step on rectangular matrices equals the separate calls", test_op_rect_cpu},
         {"amg_cheb_step refuses bad arguments", test_op_errors},
         {"fused and separate cycles: the same iterates byte for byte", test_cycle_cpu},
         {"a bad HOOKE_AMG_UNFUSED is refused in one sentence", test_bad_switch})

/* The op on cuda, every format kind (epilogue: sbell, bsr; separate product: sell, csr,
 * cusparse-bsr), against the cpu's separate calls. */
static void test_op_cuda(void)
{
    const hk_backend *gpu = backend("cuda"), *cpu = backend("cpu");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu->amg_cheb_step);
    static const hk_format fmts[] = {HK_FMT_SBELL, HK_FMT_BSR, HK_FMT_SELL, HK_FMT_CSR,
                                     HK_FMT_CUSPARSE_BSR};
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
        compare_cases(gpu, cpu, fmts[f], HK_FMT_BSR);
    /* and against cuda's own separate kernels on the same format, byte for byte: the
     * epilogue gets the plain kernel's sums, and the entries' arithmetic is the vector
     * kernels' (hk_cu_axpby_entry, hk_cu_bdiag_block) */
    compare_cases(gpu, gpu, HK_FMT_SBELL, HK_FMT_SBELL);
    compare_cases(gpu, gpu, HK_FMT_BSR, HK_FMT_BSR);
}

/* The op on cuda on rectangular matrices against the cpu's separate calls, every format kind,
 * and against cuda's own separate kernels byte for byte where the epilogue runs. */
static void test_op_rect_cuda(void)
{
    const hk_backend *gpu = backend("cuda"), *cpu = backend("cpu");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu->amg_cheb_step);
    static const hk_format fmts[] = {HK_FMT_SBELL, HK_FMT_BSR, HK_FMT_SELL, HK_FMT_CSR,
                                     HK_FMT_CUSPARSE_BSR};
    for (int shape = SHAPE_WIDE; shape <= SHAPE_TALL; shape++) {
        for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
            compare_shaped(gpu, cpu, fmts[f], HK_FMT_BSR, shape);
        compare_shaped(gpu, gpu, HK_FMT_SBELL, HK_FMT_SBELL, shape);
        compare_shaped(gpu, gpu, HK_FMT_BSR, HK_FMT_BSR, shape);
    }
}

static void test_cycle_cuda(void)
{
    compare_cycles("cuda", 1e-6);
}

HK_DEVICE_SUITE(cuda_amg_cheb, {"amg_cheb_step on cuda equals the cpu's calls", test_op_cuda},
                {"amg_cheb_step on cuda on rectangular matrices", test_op_rect_cuda},
                {"fused and separate cycles on cuda: the same iterations", test_cycle_cuda})
