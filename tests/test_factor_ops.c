/* The set-up ops of pc=ic0 / pc=ilu0 (bmat_permute, bmat_sym_check, factor_exact,
 * factor_sweeps, tri_setup): on every backend the pivot and symmetry faults name the row
 * (node); on cuda each op against the CPU reference on the same input: random matrices (one
 * row, sizes that are no multiple of the block or warp size, rows with only a diagonal, long
 * dependency chains) and FE matrices, patterns identical, values to rounding; the whole
 * preconditioner's apply on cuda against cpu per ordering, block and sweeps; set-up times on
 * the device. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "hk_impl.h"
#include "pc/pc_impl.h"

static const hk_backend *backend(const char *name)
{
    const hk_backend *b = NULL;
    if (hk_backend_get(name, &b)) hk_error_clear();
    return b;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static double unit(uint32_t *s)
{
    return (lcg(s) & 0xffffff) / (double)0x1000000;
}

/* A random n x n block matrix (bs x bs blocks) with about deg off-diagonal blocks a row (none
 * in every fifth row: a diagonal only), each block row's diagonal block dominant. sym: the
 * pattern and the values symmetric (A_ji = A_ij^T), so IC(0) exists; else values
 * independent. */
static void random_bcsr(int64_t n, int bs, int deg, int sym, uint32_t seed, hk_bcsr *K)
{
    const int bb = bs * bs;
    char *pat = calloc((size_t)(n * n), 1);
    for (int64_t i = 0; i < n; i++) {
        pat[i * n + i] = 1;
        if (i % 5 == 4) continue;
        for (int k = 0; k < deg && n > 1; k++) {
            const int64_t j = lcg(&seed) % n;
            if (j % 5 == 4) continue; /* keep those rows and columns empty */
            pat[i * n + j] = 1;
            if (sym) pat[j * n + i] = 1;
        }
    }
    int64_t nnz = 0;
    for (int64_t e = 0; e < n * n; e++)
        nnz += pat[e];
    K->bs = bs;
    K->nbrows = K->nbcols = n;
    K->rowptr = calloc(n + 1, 8);
    K->colind = malloc(nnz * 4);
    K->val = malloc(nnz * bb * 8);
    double *D = calloc((size_t)(n * n * bb), 8); /* block (i, j) at (i*n + j)*bb */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < (sym ? i : n); j++)
            if (pat[i * n + j] && j != i)
                for (int a = 0; a < bs; a++)
                    for (int c = 0; c < bs; c++) {
                        const double v = -unit(&seed);
                        D[(i * n + j) * bb + a * bs + c] = v;
                        if (sym) D[(j * n + i) * bb + c * bs + a] = v;
                    }
    for (int64_t i = 0; i < n; i++) {
        double rs = 1;
        for (int64_t j = 0; j < n; j++)
            for (int e = 0; e < bb; e++)
                rs += fabs(D[(i * n + j) * bb + e]);
        double *Dii = D + (i * n + i) * bb;
        for (int a = 0; a < bs; a++)
            for (int c = 0; c < bs; c++)
                Dii[a * bs + c] = a == c ? rs + bs : (sym ? 0.1 * (a + c) : 0.1 * (a - 2 * c));
    }
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < n; j++)
            if (pat[i * n + j]) {
                K->colind[q] = (int32_t)j;
                memcpy(K->val + q * bb, D + (i * n + j) * bb, bb * 8);
                q++;
            }
        K->rowptr[i + 1] = q;
    }
    free(D);
    free(pat);
}

/* tridiagonal chain: every row depends on the one before (n levels) */
static void chain(int64_t n, double off, hk_bcsr *K)
{
    K->bs = 1;
    K->nbrows = K->nbcols = n;
    K->rowptr = calloc(n + 1, 8);
    K->colind = malloc(3 * n * 4);
    K->val = malloc(3 * n * 8);
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = i - 1; j <= i + 1; j++)
            if (j >= 0 && j < n) {
                K->colind[q] = (int32_t)j;
                K->val[q++] = j == i ? 2.5 : off;
            }
        K->rowptr[i + 1] = q;
    }
}

/* A on the host (1 x 1 blocks when expand) */
static void to_host(const hk_bmat *A, hk_bcsr *H)
{
    HK_ASSERT_OK(hk_bmat_to_bcsr(A, H));
}

/* the same pattern, values to rounding (rel 1e-13); returns the relative difference */
static double same_bmat(const hk_bmat *X, const hk_bmat *Y)
{
    hk_bcsr a = {0}, b = {0};
    to_host(X, &a);
    to_host(Y, &b);
    CU_ASSERT_EQUAL_FATAL(a.nbrows, b.nbrows);
    CU_ASSERT_EQUAL_FATAL(a.bs, b.bs);
    const int64_t nnz = a.rowptr[a.nbrows];
    CU_ASSERT_FATAL(!memcmp(a.rowptr, b.rowptr, (a.nbrows + 1) * 8));
    CU_ASSERT(!memcmp(a.colind, b.colind, nnz * 4));
    const double d = nnz ? hk_test_reldiff(a.val, b.val, nnz * a.bs * a.bs) : 0;
    CU_ASSERT(d <= 1e-13);
    hk_bcsr_free(&a);
    hk_bcsr_free(&b);
    return d;
}

/* ---- faults on every backend ------------------------------------------------------------ */

static void test_faults(void)
{
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        hk_bcsr K;
        hk_bmat A = {0}, T = {0}, F = {0};
        hk_factor_fault f;
        /* indefinite chain tridiag(-1, 2.5, -1) with a_33 = 0.3: IC(0) fails at row 3 */
        chain(9, -1, &K);
        K.val[K.rowptr[3] + 1] = 0.3;
        HK_ASSERT_OK(hk_bmat_upload(*be, &K, &A));
        HK_ASSERT_OK((*be)->factor_exact(&A, 1, &F, &f));
        CU_ASSERT_EQUAL(f.row, 3);
        CU_ASSERT_EQUAL(f.reason, HK_FACTOR_PIVOT);
        CU_ASSERT_DOUBLE_EQUAL(f.v[1], 0.3, 0);
        CU_ASSERT(f.v[0] < 0);
        CU_ASSERT_PTR_NULL(F.val);
        /* ILU(0): a_11 = 0.4 makes row 1's pivot 0.4 - 1/2.5 exactly 0 */
        hk_bmat_free(&A);
        hk_bcsr_free(&K);
        chain(9, -1, &K);
        K.val[K.rowptr[1] + 1] = 0.4; /* 0.4 - 1/2.5 = 0 */
        HK_ASSERT_OK(hk_bmat_upload(*be, &K, &A));
        HK_ASSERT_OK((*be)->factor_exact(&A, 0, &F, &f));
        CU_ASSERT_EQUAL(f.row, 1);
        CU_ASSERT_EQUAL(f.reason, HK_FACTOR_PIVOT);
        hk_bmat_free(&A);
        hk_bcsr_free(&K);
        /* a missing diagonal: ILU(0) names the row */
        hk_bcsr M = {.bs = 1, .nbrows = 3, .nbcols = 3};
        int64_t rp[4] = {0, 2, 3, 5};
        int32_t ci[5] = {0, 1, 0, 1, 2};
        double v[5] = {2, -1, -1, -1, 2};
        M.rowptr = rp, M.colind = ci, M.val = v;
        HK_ASSERT_OK(hk_bmat_upload(*be, &M, &A));
        HK_ASSERT_OK((*be)->factor_exact(&A, 0, &F, &f));
        CU_ASSERT_EQUAL(f.row, 1);
        CU_ASSERT_EQUAL(f.reason, HK_FACTOR_NO_DIAG);
        /* asymmetry: (1, 0) = -1 against (0, 1) = -1 is fine, (2, 1) = -1 against a missing
         * (1, 2) is not: row 1, column 2 (the transpose's entry) */
        HK_ASSERT_OK((*be)->bmat_transpose(&A, &T));
        HK_ASSERT_OK((*be)->bmat_sym_check(&A, &T, &f));
        CU_ASSERT_EQUAL(f.row, 1);
        CU_ASSERT_EQUAL(f.col, 2);
        CU_ASSERT_DOUBLE_EQUAL(f.v[0], 0, 0);
        CU_ASSERT_DOUBLE_EQUAL(f.v[1], -1, 0);
        hk_bmat_free(&A), hk_bmat_free(&T);
        /* block IC(0): node 2's pivot block indefinite in its row 1 */
        random_bcsr(6, 3, 2, 1, 7, &K);
        for (int64_t p = K.rowptr[2]; p < K.rowptr[3]; p++)
            if (K.colind[p] == 2) K.val[p * 9 + 4] = -50;
        HK_ASSERT_OK(hk_bmat_upload(*be, &K, &A));
        HK_ASSERT_OK((*be)->factor_exact(&A, 1, &F, &f));
        CU_ASSERT_EQUAL(f.row, 2);
        CU_ASSERT_EQUAL(f.sub, 1);
        CU_ASSERT(f.v[0] < 0);
        hk_bmat_free(&A);
        /* the preconditioner's sentence names the node on this backend */
        double r[18], z[18];
        for (int i = 0; i < 18; i++)
            r[i] = 1 + i % 4;
        CU_ASSERT_EQUAL(hk_test_apply_pc(*be, HK_FP64, &K, "ic0",
                                         "pc.ic0.block=1 pc.ordering=natural", r, z, NULL),
                        HK_ERR_NUMERIC);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "pivot block of node 3")); /* from 1 */
        CU_ASSERT_EQUAL(
            hk_test_apply_pc(*be, HK_FP64, &K, "ic0", "pc.ordering=natural", r, z, NULL),
            HK_ERR_NUMERIC);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "pivot"));
        hk_bcsr_free(&K);
    }
}

/* the CPU's tri_setup and its solve equal the level solve of the host split */
static void test_tri_setup_cpu(void)
{
    const hk_backend *cpu = hk_test_backends()[0];
    hk_bcsr K;
    random_bcsr(40, 1, 3, 0, 11, &K);
    hk_bmat A = {0}, F = {0};
    hk_factor_fault f;
    HK_ASSERT_OK(hk_bmat_upload(cpu, &K, &A));
    HK_ASSERT_OK(cpu->factor_exact(&A, 0, &F, &f));
    CU_ASSERT_EQUAL_FATAL(f.row, -1);
    /* L U x = A x on ILU(0)'s pattern is not A x; check T x = b against a dense triangle */
    const int64_t n = 40;
    double b[40], x[40], y[40];
    for (int i = 0; i < n; i++)
        b[i] = 1 + (i % 3);
    for (int upper = 0; upper < 2; upper++) {
        void *h = NULL;
        int64_t nl = 0;
        HK_ASSERT_OK(cpu->tri_setup(&F, upper, !upper, 0, HK_FP64, &h, &nl));
        CU_ASSERT(nl >= 1 && nl <= n);
        hk_vec *vb, *vx;
        HK_ASSERT_OK(hk_vec_create(cpu, n, HK_FP64, &vb));
        HK_ASSERT_OK(hk_vec_create(cpu, n, HK_FP64, &vx));
        HK_ASSERT_OK(hk_vec_upload(vb, b));
        HK_ASSERT_OK(cpu->tri_solve(h, vb, vx));
        HK_ASSERT_OK(hk_vec_download(vx, x));
        /* y = T x with the chosen triangle (unit lower / upper with diagonal) */
        for (int64_t i = 0; i < n; i++) {
            y[i] = upper ? 0 : x[i];
            for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++)
                if (upper ? F.colind[k] >= i : F.colind[k] < i) y[i] += F.val[k] * x[F.colind[k]];
        }
        CU_ASSERT(hk_test_reldiff(y, b, n) < 1e-13);
        cpu->tri_destroy(h);
        hk_vec_destroy(vb), hk_vec_destroy(vx);
    }
    hk_bmat_free(&A), hk_bmat_free(&F);
    hk_bcsr_free(&K);
}

/* the host symmetry check of mlilu's set-up follows the op's rule and names the entry */
static void test_host_sym_check(void)
{
    hk_bcsr K;
    hk_csr A;
    random_bcsr(30, 1, 3, 1, 21, &K);
    HK_ASSERT_OK(hk_csr_from_bcsr(&K, &A));
    CU_ASSERT_EQUAL(hk_csr_check_symmetric(&A, "test"), 0);
    /* round-off is not asymmetry */
    for (int64_t k = A.rowptr[7]; k < A.rowptr[8]; k++)
        if (A.colind[k] != 7) A.val[k] *= 1 + 1e-14;
    CU_ASSERT_EQUAL(hk_csr_check_symmetric(&A, "test"), 0);
    int64_t at = -1;
    for (int64_t k = A.rowptr[12]; k < A.rowptr[13] && at < 0; k++)
        if (A.colind[k] > 12) at = k;
    CU_ASSERT_FATAL(at >= 0);
    char want[64];
    snprintf(want, sizeof want, "entry (12, %d)", A.colind[at]);
    A.val[at] += 0.5;
    CU_ASSERT_EQUAL(hk_csr_check_symmetric(&A, "test"), HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), want));
    hk_csr_free(&A);
    hk_bcsr_free(&K);
}

HK_SUITE(factorops,
         {"pivot, missing-diagonal and asymmetry faults name the row (node) on every backend",
          test_faults},
         {"tri_setup: the solve of the chosen triangle of a factor (cpu)", test_tri_setup_cpu},
         {"the host symmetry check (mlilu) names the first asymmetric entry", test_host_sym_check})

/* ---- cuda against cpu -------------------------------------------------------------------- */

typedef struct {
    const char *name;
    hk_bcsr K;
    int sym;
} fcase;

static int make_cases(fcase *c)
{
    int m = 0;
    c[m].name = "one row";
    random_bcsr(1, 1, 0, 1, 1, &c[m].K), c[m++].sym = 1;
    c[m].name = "random sym n=37";
    random_bcsr(37, 1, 4, 1, 2, &c[m].K), c[m++].sym = 1;
    c[m].name = "random n=1003";
    random_bcsr(1003, 1, 6, 0, 3, &c[m].K), c[m++].sym = 0;
    c[m].name = "random sym n=401 bs 3";
    random_bcsr(401, 3, 5, 1, 4, &c[m].K), c[m++].sym = 1;
    c[m].name = "random n=501 bs 2";
    random_bcsr(501, 2, 5, 0, 5, &c[m].K), c[m++].sym = 0;
    c[m].name = "chain n=3001";
    chain(3001, -1, &c[m].K), c[m++].sym = 1;
    c[m].name = "elasticity3d 7x6x5";
    HK_ASSERT_OK(hk_gen_elasticity3d(7, 6, 5, &c[m].K));
    c[m++].sym = 1;
    c[m].name = "elasticity2d 23x17";
    HK_ASSERT_OK(hk_gen_elasticity2d(23, 17, &c[m].K));
    c[m++].sym = 1;
    c[m].name = "convdiff 31x29";
    HK_ASSERT_OK(hk_gen_convdiff2d(31, 29, &c[m].K));
    c[m++].sym = 0;
    return m;
}

/* permute, expand, symmetry check, exact factorisation (scalar and on blocks), sweeps and
 * the triangular set-up: each op on both backends from the same input */
static void test_ops_vs_cpu(void)
{
    const hk_backend *cpu = backend("cpu"), *gpu = backend("cuda");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu->factor_exact);
    fcase c[16];
    const int m = make_cases(c);
    for (int t = 0; t < m; t++) {
        const hk_bcsr *K = &c[t].K;
        const int64_t nb = K->nbrows;
        hk_bmat Ac = {0}, Ag = {0}, Pc = {0}, Pg = {0}, Sc = {0}, Sg = {0}, Tc = {0}, Tg = {0};
        HK_ASSERT_OK(hk_bmat_upload(cpu, K, &Ac));
        HK_ASSERT_OK(hk_bmat_upload(gpu, K, &Ag));
        /* a random node permutation (Fisher-Yates) */
        int32_t *perm = malloc((nb ? nb : 1) * 4), *dperm = NULL;
        uint32_t s = 99 + t;
        for (int64_t i = 0; i < nb; i++)
            perm[i] = (int32_t)i;
        for (int64_t i = nb - 1; i > 0; i--) {
            const int64_t j = lcg(&s) % (i + 1);
            const int32_t x = perm[i];
            perm[i] = perm[j], perm[j] = x;
        }
        HK_ASSERT_OK(gpu->alloc((void **)&dperm, nb * 4 + 4));
        HK_ASSERT_OK(gpu->copy_to(dperm, perm, nb * 4));
        HK_ASSERT_OK(cpu->bmat_permute(&Ac, perm, &Pc));
        HK_ASSERT_OK(gpu->bmat_permute(&Ag, dperm, &Pg));
        same_bmat(&Pc, &Pg);
        gpu->dealloc(dperm);
        /* scalar rows of the permuted matrix; symmetry */
        HK_ASSERT_OK(cpu->bmat_expand(&Pc, &Sc));
        HK_ASSERT_OK(gpu->bmat_expand(&Pg, &Sg));
        HK_ASSERT_OK(cpu->bmat_transpose(&Sc, &Tc));
        HK_ASSERT_OK(gpu->bmat_transpose(&Sg, &Tg));
        hk_factor_fault fc, fg;
        HK_ASSERT_OK(cpu->bmat_sym_check(&Sc, &Tc, &fc));
        HK_ASSERT_OK(gpu->bmat_sym_check(&Sg, &Tg, &fg));
        CU_ASSERT_EQUAL(fc.row, fg.row);
        CU_ASSERT_EQUAL(fc.col, fg.col);
        CU_ASSERT_EQUAL(fc.row < 0, c[t].sym || K->nbrows == 1);
        hk_bmat_free(&Tc), hk_bmat_free(&Tg);
        printf("\n    %-24s", c[t].name);
        /* exact factorisations: scalar, then on the node blocks */
        for (int blk = 0; blk < 1 + (K->bs > 1); blk++)
            for (int sym = c[t].sym; sym >= 0; sym--) {
                hk_bmat Fc = {0}, Fg = {0};
                const hk_bmat *in_c = blk ? &Pc : &Sc, *in_g = blk ? &Pg : &Sg;
                HK_ASSERT_OK(cpu->factor_exact(in_c, sym, &Fc, &fc));
                HK_ASSERT_OK(gpu->factor_exact(in_g, sym, &Fg, &fg));
                CU_ASSERT_EQUAL(fc.row, fg.row);
                if (fc.row >= 0 || fg.row >= 0) {
                    printf(" %s%s fault row %lld/%lld", sym ? "ic0" : "ilu0", blk ? "(blk)" : "",
                           (long long)fc.row, (long long)fg.row);
                    continue;
                }
                const double d = same_bmat(&Fc, &Fg);
                printf(" %s%s %.0e", sym ? "ic0" : "ilu0", blk ? "(blk)" : "", d);
                /* the triangular set-ups of the factor, each solve method */
                if (!blk) {
                    hk_bmat Uc = {0}, Ug = {0};
                    if (sym) {
                        HK_ASSERT_OK(cpu->bmat_transpose(&Fc, &Uc));
                        HK_ASSERT_OK(gpu->bmat_transpose(&Fg, &Ug));
                        same_bmat(&Uc, &Ug);
                    }
                    const int64_t n = Fc.nbrows;
                    double *b = malloc((n + 1) * 8), *xc = malloc((n + 1) * 8),
                           *xg = malloc((n + 1) * 8);
                    for (int64_t i = 0; i < n; i++)
                        b[i] = 1 + 0.1 * (i % 7);
                    for (int upper = 0; upper < 2; upper++)
                        for (int meth = 0; meth <= HK_TRI_SYNCFREE_FLAGS; meth++)
                            for (int p = 0; p < 2; p++) {
                                const hk_bmat *Xc = sym && upper ? &Uc : &Fc,
                                              *Xg = sym && upper ? &Ug : &Fg;
                                const int unit = !sym && !upper;
                                void *hc = NULL, *hg = NULL;
                                int64_t lc = -1, lg = -2;
                                HK_ASSERT_OK(cpu->tri_setup(Xc, upper, unit, meth, (hk_precision)p,
                                                            &hc, &lc));
                                HK_ASSERT_OK(gpu->tri_setup(Xg, upper, unit, meth, (hk_precision)p,
                                                            &hg, &lg));
                                CU_ASSERT_EQUAL(lc, lg);
                                hk_vec *bc, *bg, *vc, *vg;
                                HK_ASSERT_OK(hk_vec_create(cpu, n, (hk_precision)p, &bc));
                                HK_ASSERT_OK(hk_vec_create(gpu, n, (hk_precision)p, &bg));
                                HK_ASSERT_OK(hk_vec_create(cpu, n, (hk_precision)p, &vc));
                                HK_ASSERT_OK(hk_vec_create(gpu, n, (hk_precision)p, &vg));
                                HK_ASSERT_OK(hk_vec_upload(bc, b)); /* rounds for fp32 */
                                HK_ASSERT_OK(hk_vec_upload(bg, b));
                                HK_ASSERT_OK(cpu->tri_solve(hc, bc, vc));
                                HK_ASSERT_OK(gpu->tri_solve(hg, bg, vg));
                                HK_ASSERT_OK(hk_vec_download(vc, xc));
                                HK_ASSERT_OK(hk_vec_download(vg, xg));
                                const double dx = hk_test_reldiff(xg, xc, n);
                                if (!(dx < (p == HK_FP64 ? 1e-12 : 1e-5)))
                                    printf("\n      tri upper %d method %d prec %d: %g", upper,
                                           meth, p, dx);
                                CU_ASSERT(dx < (p == HK_FP64 ? 1e-12 : 1e-5));
                                cpu->tri_destroy(hc);
                                gpu->tri_destroy(hg);
                                hk_vec_destroy(bc), hk_vec_destroy(bg);
                                hk_vec_destroy(vc), hk_vec_destroy(vg);
                            }
                    free(b), free(xc), free(xg);
                    hk_bmat_free(&Uc), hk_bmat_free(&Ug);
                }
                hk_bmat_free(&Fc), hk_bmat_free(&Fg);
            }
        /* sweeps with the scaling on the backend (unscaled input) */
        for (int sym = c[t].sym; sym >= 0; sym--) {
            hk_bmat Fc = {0}, Fg = {0};
            int64_t bc = -2, bg = -3;
            HK_ASSERT_OK(cpu->factor_sweeps(&Sc, sym, 3, &Fc, &bc));
            HK_ASSERT_OK(gpu->factor_sweeps(&Sg, sym, 3, &Fg, &bg));
            CU_ASSERT_EQUAL(bc, bg);
            if (bc < 0 && bg < 0) printf(" sweeps%d %.0e", sym, same_bmat(&Fc, &Fg));
            hk_bmat_free(&Fc), hk_bmat_free(&Fg);
        }
        free(perm);
        hk_bmat_free(&Ac), hk_bmat_free(&Ag), hk_bmat_free(&Pc), hk_bmat_free(&Pg);
        hk_bmat_free(&Sc), hk_bmat_free(&Sg);
    }
    for (int t = 0; t < m; t++)
        hk_bcsr_free(&c[t].K);
}

/* the whole preconditioner: z = M^-1 r on cuda equals cpu's per ordering, block, sweeps */
static void test_pc_vs_cpu(void)
{
    const hk_backend *cpu = backend("cpu"), *gpu = backend("cuda");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    hk_bcsr K, C;
    HK_ASSERT_OK(hk_gen_elasticity3d(9, 8, 7, &K));
    HK_ASSERT_OK(hk_gen_convdiff2d(40, 37, &C));
    static const char *const ord[] = {"natural", "rcm", "colour"};
    static const char *const var[] = {"", "block=1", "sweeps=3"};
    for (int pcn = 0; pcn < 2; pcn++) {
        const hk_bcsr *A = pcn ? &C : &K;
        const char *name = pcn ? "ilu0" : "ic0";
        const long n = A->nbrows * A->bs;
        double *r = malloc(n * 8), *zc = malloc(n * 8), *zg = malloc(n * 8);
        for (long i = 0; i < n; i++)
            r[i] = 1 + 0.1 * (i % 11);
        for (int o = 0; o < 3; o++)
            for (int v = 0; v < 3; v++) {
                if (pcn && v == 1) continue; /* convdiff has 1 x 1 blocks */
                char opts[160];
                snprintf(opts, sizeof opts, "pc.ordering=%s pc.tri=levels %s%s%s", ord[o],
                         *var[v] ? "pc." : "", *var[v] ? name : "", *var[v] ? "." : "");
                if (*var[v]) strcat(opts, var[v]);
                HK_ASSERT_OK(hk_test_apply_pc(cpu, HK_FP64, A, name, opts, r, zc, NULL));
                HK_ASSERT_OK(hk_test_apply_pc(gpu, HK_FP64, A, name, opts, r, zg, NULL));
                const double d = hk_test_reldiff(zg, zc, n);
                if (!(d < 1e-11)) printf("\n    %s %s: %g", name, opts, d);
                CU_ASSERT(d < 1e-11);
            }
        free(r), free(zc), free(zg);
    }
    hk_bcsr_free(&K), hk_bcsr_free(&C);
}

/* set-up time of each step on the device: 3D elasticity 60^3 (681k dofs, the benchmark's
 * matrix), natural and colour orderings; the cpu's factorisation time for scale */
static void test_setup_times(void)
{
    const hk_backend *cpu = backend("cpu"), *gpu = backend("cuda");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(60, 60, 60, &K));
    for (int pcn = 0; pcn < 2; pcn++)
        for (int colour = 0; colour < 2; colour++) {
            char opts[96];
            snprintf(opts, sizeof opts, "pc.ordering=%s pc.tri=cusparse",
                     colour ? "colour" : "natural");
            hk_options *o;
            hk_mat *A = NULL;
            hk_bmat Kd = {0};
            hk_pc *pc = NULL;
            HK_ASSERT_OK(hk_mat_create(gpu, &K, HK_FMT_CSR, HK_FP64, NULL, &A));
            HK_ASSERT_OK(hk_bmat_upload(gpu, &K, &Kd));
            HK_ASSERT_OK(hk_options_create(&o));
            HK_ASSERT_OK(hk_options_parse(o, opts));
            gpu->sync();
            const double t0 = now();
            HK_ASSERT_OK(hk_pc_create(hk_pc_type_find(pcn ? "ilu0" : "ic0"), gpu, HK_FP64, &Kd, A,
                                      NULL, o, &pc));
            gpu->sync();
            const double t1 = now();
            char desc[160] = "";
            pc->type->describe(pc, desc, sizeof desc);
            printf("\n    %s %s set-up on cuda, %lld dofs: %.3f s (%s)", pcn ? "ilu0" : "ic0",
                   colour ? "colour" : "natural", (long long)K.nbrows * 3, t1 - t0, desc);
            hk_pc_destroy(pc);
            hk_options_destroy(o);
            hk_bmat_free(&Kd);
            hk_mat_destroy(A);
        }
    /* the factorisation op alone on both backends (natural order, scalar) */
    hk_bmat Ac = {0}, Ag = {0}, Sc = {0}, Sg = {0}, Fc = {0}, Fg = {0};
    hk_factor_fault f;
    HK_ASSERT_OK(hk_bmat_upload(cpu, &K, &Ac));
    HK_ASSERT_OK(hk_bmat_upload(gpu, &K, &Ag));
    HK_ASSERT_OK(cpu->bmat_expand(&Ac, &Sc));
    HK_ASSERT_OK(gpu->bmat_expand(&Ag, &Sg));
    double t0 = now();
    HK_ASSERT_OK(cpu->factor_exact(&Sc, 1, &Fc, &f));
    const double tc = now() - t0;
    gpu->sync();
    t0 = now();
    HK_ASSERT_OK(gpu->factor_exact(&Sg, 1, &Fg, &f));
    gpu->sync();
    const double tg = now() - t0;
    const double d = same_bmat(&Fc, &Fg);
    printf("\n    factor_exact ic0, natural order: cpu %.3f s, cuda %.3f s, rel diff %.0e", tc, tg,
           d);
    hk_bmat_free(&Ac), hk_bmat_free(&Ag), hk_bmat_free(&Sc), hk_bmat_free(&Sg);
    hk_bmat_free(&Fc), hk_bmat_free(&Fg);
    hk_bcsr_free(&K);
}

HK_DEVICE_SUITE(factorops_cuda,
                {"permute, sym check, exact ic0/ilu0 (scalar, blocks), sweeps, tri_setup: cuda "
                 "equals cpu",
                 test_ops_vs_cpu},
                {"ic0/ilu0 apply on cuda equals cpu per ordering, block and sweeps",
                 test_pc_vs_cpu},
                {"ic0/ilu0 set-up times on the device (681k dofs)", test_setup_times})
