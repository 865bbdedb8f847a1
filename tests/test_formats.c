/* Formats, CPU/device SpMV and the matrix generators.
 *
 * Every format's SpMV on every backend and precision is compared with the plain block CSR
 * reference hk_bcsr_spmv; padding factors are checked on a matrix whose storage is counted by
 * hand; the elasticity generators are checked against closed-form strain energies. */
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#include "cpu/cpu_impl.h"
#include "bench.h"
#include <omp.h>

/* ---- helpers ---------------------------------------------------------------------------- */

/* y = |A| |x| (bound for rounding errors) */
static void abs_spmv(const hk_bcsr *A, const double *x, double *y)
{
    const int bs = A->bs;
    for (int64_t i = 0; i < A->nbrows; i++)
        for (int r = 0; r < bs; r++) {
            double s = 0;
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
                for (int c = 0; c < bs; c++)
                    s += fabs(A->val[(k * bs + r) * bs + c] * x[A->colind[k] * bs + c]);
            y[i * bs + r] = s;
        }
}

/* Count of failures printed once per combination, so a wrong kernel names itself. */
static int check_close(const char *what, const double *y, const double *ref, const double *bound,
                       int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++) {
        double err = fabs(y[i] - ref[i]);
        if (!(err <= tol * (bound[i] + 1e-300)) && !(err == 0)) {
            fprintf(stderr, "\n  %s: entry %lld is %.17g, expected %.17g\n", what, (long long)i,
                    y[i], ref[i]);
            return 0;
        }
    }
    return 1;
}

/* SpMV of fmt on backend be in precision p equals the reference (fp64: rounding of the sums;
 * fp32: the reference applied to fp32-rounded A and x). */
static void check_spmv(const hk_backend *be, const hk_bcsr *K, hk_format fmt, hk_precision p,
                       int slice, int sigma)
{
    char what[160];
    snprintf(what, sizeof what, "%s %s on %s, bs %d, %lld block rows, S %d, sigma %d",
             hk_format_name(fmt), p == HK_FP64 ? "fp64" : "fp32", hk_backend_name(be), K->bs,
             (long long)K->nbrows, slice, sigma);
    const int64_t nr = K->nbrows * K->bs, nc = K->nbcols * K->bs;
    double *x = hk_test_rand_vec(nc, 7 + (unsigned)nr), *ref = calloc((size_t)nr + 1, sizeof(double));
    double *bound = calloc((size_t)nr + 1, sizeof(double));
    double *y = calloc((size_t)nr + 1, sizeof(double));
    hk_bcsr K32 = {0};
    const hk_bcsr *Kref = K;
    if (p == HK_FP32) {
        HK_ASSERT_OK(hk_bcsr_copy(K, &K32));
        for (int64_t k = 0; k < K->rowptr[K->nbrows] * K->bs * K->bs; k++)
            K32.val[k] = (float)K32.val[k];
        for (int64_t i = 0; i < nc; i++)
            x[i] = (float)x[i];
        Kref = &K32;
    }
    hk_bcsr_spmv(Kref, x, ref);
    abs_spmv(Kref, x, bound);

    hk_options *o;
    HK_ASSERT_OK(hk_options_create(&o));
    char buf[64];
    snprintf(buf, sizeof buf, "format.slice=%d format.sigma=%d", slice, sigma);
    HK_ASSERT_OK(hk_options_parse(o, buf));
    hk_mat *A = NULL;
    hk_vec *vx = NULL, *vy = NULL;
    int err = hk_mat_create(be, K, fmt, p, o, &A);
    if (err) fprintf(stderr, "\n  %s: %s\n", what, hk_error_message());
    CU_ASSERT_EQUAL_FATAL(err, 0);
    HK_ASSERT_OK(hk_vec_create(be, nc, p, &vx));
    HK_ASSERT_OK(hk_vec_create(be, nr, p, &vy));
    HK_ASSERT_OK(hk_vec_upload(vx, x));
    HK_ASSERT_OK(be->vec_set(vy, 12345.0)); /* stale values must be overwritten */
    HK_ASSERT_OK(hk_mat_spmv(A, vx, vy));
    HK_ASSERT_OK(hk_vec_download(vy, y));
    const double tol = p == HK_FP64 ? 1e-14 : 2e-6;
    CU_ASSERT(check_close(what, y, ref, bound, nr, tol));

    /* the host reference SpMV of the arrays the backend built agrees too */
    if (p == HK_FP64) {
        hk_fmt F;
        HK_ASSERT_OK(be->mat_download(A, &F));
        memset(y, 0, (size_t)nr * sizeof *y);
        hk_fmt_spmv_host(&F, x, y);
        CU_ASSERT(check_close(what, y, ref, bound, nr, 1e-14));
        hk_fmt_free(&F);
    }
    /* padding factor is what the arrays hold */
    hk_mat_info info;
    hk_mat_get_info(A, &info);
    CU_ASSERT_EQUAL(info.nnz, K->rowptr[K->nbrows] * K->bs * K->bs);
    CU_ASSERT(info.stored >= info.nnz);
    CU_ASSERT(info.bytes > 0 || info.nnz == 0);
    hk_mat_destroy(A);
    hk_vec_destroy(vx);
    hk_vec_destroy(vy);
    hk_options_destroy(o);
    hk_bcsr_free(&K32);
    free(x);
    free(ref);
    free(bound);
    free(y);
}

static int is_cusparse(hk_format f)
{
    return f == HK_FMT_CUSPARSE_CSR || f == HK_FMT_CUSPARSE_BSR;
}

/* ---- SpMV of every format --------------------------------------------------------------- */

static void run_all_formats(const hk_bcsr *K, const int *slices, int nslices, const int *sigmas,
                            int nsigmas)
{
    for (const hk_backend *const *b = hk_test_backends(); *b; b++) {
        const int cuda = strcmp(hk_backend_name(*b), "cpu") != 0;
        for (int f = 0; f < HK_FMT_COUNT; f++) {
            if (is_cusparse((hk_format)f) && !cuda) continue;
            const int sliced = f == HK_FMT_SELL || f == HK_FMT_SBELL;
            for (int si = 0; si < (sliced ? nslices : 1); si++)
                for (int gi = 0; gi < (sliced ? nsigmas : 1); gi++)
                    for (int p = 0; p < 2; p++)
                        check_spmv(*b, K, (hk_format)f, (hk_precision)p, sliced ? slices[si] : 32,
                                   sliced ? sigmas[gi] : 0);
        }
    }
}

static void test_spmv_random(void)
{
    static const int slices[] = {1, 4, 32, 1000};
    static const int sigmas[] = {0, 1, 8};
    for (int bs = 1; bs <= 3; bs++) {
        hk_bcsr K;
        /* square with empty rows, n not a multiple of S */
        HK_ASSERT_OK(hk_gen_random(77, 77, bs, 5.0, 1, 11u + bs, &K));
        run_all_formats(&K, slices, 4, sigmas, 3);
        hk_bcsr_free(&K);
        /* rectangular, dense-ish rows of very different lengths */
        HK_ASSERT_OK(hk_gen_random(50, 23, bs, 9.0, 0, 5u + bs, &K));
        run_all_formats(&K, slices, 4, sigmas, 2);
        hk_bcsr_free(&K);
    }
}

static void test_spmv_edge_cases(void)
{
    static const int slices[] = {1, 32, 64};
    static const int sigmas[] = {0};
    for (int bs = 1; bs <= 3; bs++) {
        hk_bcsr K;
        /* one row */
        HK_ASSERT_OK(hk_gen_random(1, 9, bs, 4.0, 0, 3u, &K));
        run_all_formats(&K, slices, 3, sigmas, 1);
        hk_bcsr_free(&K);
        /* every row empty */
        HK_ASSERT_OK(hk_gen_random(10, 10, bs, 0.0, 0, 3u, &K));
        CU_ASSERT_EQUAL(K.rowptr[10], 0);
        run_all_formats(&K, slices, 3, sigmas, 1);
        hk_bcsr_free(&K);
        /* no rows at all (x still has columns) */
        HK_ASSERT_OK(hk_gen_random(0, 6, bs, 2.0, 0, 3u, &K));
        run_all_formats(&K, slices, 3, sigmas, 1);
        hk_bcsr_free(&K);
        /* exactly one slice, S == n */
        HK_ASSERT_OK(hk_gen_random(32, 40, bs, 3.0, 1, 9u, &K));
        run_all_formats(&K, slices, 3, sigmas, 1);
        hk_bcsr_free(&K);
    }
}

static void test_spmv_fem(void)
{
    static const int slices[] = {32};
    static const int sigmas[] = {0, 16};
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d_tet(3, 4, 2, &K));
    run_all_formats(&K, slices, 1, sigmas, 2);
    hk_bcsr_free(&K);
    HK_ASSERT_OK(hk_gen_elasticity2d_tri(7, 5, &K));
    run_all_formats(&K, slices, 1, sigmas, 2);
    hk_bcsr_free(&K);
    HK_ASSERT_OK(hk_gen_elasticity2d_tri_random(9, 8, 1u, &K));
    run_all_formats(&K, slices, 1, sigmas, 2);
    hk_bcsr_free(&K);
}

/* ---- padding on a matrix counted by hand -------------------------------------------------- */

/* 4 block rows with 1, 2, 3, 4 blocks (lower triangle of a 4 x 4 block matrix). */
static void make_staircase(int bs, hk_bcsr *K)
{
    memset(K, 0, sizeof *K);
    K->bs = bs;
    K->nbrows = K->nbcols = 4;
    K->rowptr = malloc(5 * sizeof *K->rowptr);
    K->colind = malloc(10 * sizeof *K->colind);
    K->val = malloc(10 * bs * bs * sizeof *K->val);
    int k = 0;
    K->rowptr[0] = 0;
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j <= i; j++)
            K->colind[k++] = j;
        K->rowptr[i + 1] = k;
    }
    for (int e = 0; e < 10 * bs * bs; e++)
        K->val[e] = 1 + e;
}

static double padding_of(const hk_bcsr *K, hk_format f, int slice, hk_fmt *F)
{
    HK_ASSERT_OK(hk_fmt_from_bcsr(K, f, slice, 0, F));
    return (double)F->stored / (double)F->nnz;
}

static void test_padding(void)
{
    hk_bcsr K;
    hk_fmt F;
    /* bs = 1: CSR 10 entries; ELL 4 x 4 = 16; SELL S=2: rows sorted 4,3 | 2,1 -> (4+2)*2 = 12 */
    make_staircase(1, &K);
    CU_ASSERT_DOUBLE_EQUAL(padding_of(&K, HK_FMT_CSR, 0, &F), 1.0, 1e-15);
    hk_fmt_free(&F);
    CU_ASSERT_DOUBLE_EQUAL(padding_of(&K, HK_FMT_ELL, 0, &F), 1.6, 1e-15);
    CU_ASSERT_EQUAL(F.width, 4);
    hk_fmt_free(&F);
    CU_ASSERT_DOUBLE_EQUAL(padding_of(&K, HK_FMT_SELL, 2, &F), 1.2, 1e-15);
    CU_ASSERT_EQUAL(F.nslices, 2);
    CU_ASSERT_EQUAL(F.slice_width[0], 4);
    CU_ASSERT_EQUAL(F.slice_width[1], 2);
    CU_ASSERT_EQUAL(F.perm[0], 3);
    CU_ASSERT_EQUAL(F.perm[3], 0);
    /* layout: local row 1 of slice 0 is old row 2 = [1 1 1 0]; its 3rd entry (k = 2) at
     * slice_ptr + 2*S + 1 holds column 2 and value 6 (entries numbered from 1 row by row) */
    CU_ASSERT_EQUAL(F.colind[0 + 2 * 2 + 1], 2);
    CU_ASSERT_DOUBLE_EQUAL(F.val[0 + 2 * 2 + 1], 6.0, 0);
    CU_ASSERT_EQUAL(F.colind[0 + 3 * 2 + 1], -1); /* padding */
    CU_ASSERT_DOUBLE_EQUAL(F.val[0 + 3 * 2 + 1], 0.0, 0);
    /* bytes: 12 values + 12 indices + 3 slice pointers (8) + 2 widths (4) + 4 perm (4) */
    CU_ASSERT_EQUAL(hk_fmt_bytes(&F, HK_FP64), 12 * 8 + 12 * 4 + 3 * 8 + 2 * 4 + 4 * 4);
    CU_ASSERT_EQUAL(hk_fmt_bytes(&F, HK_FP32), 12 * 4 + 12 * 4 + 3 * 8 + 2 * 4 + 4 * 4);
    hk_fmt_free(&F);
    /* CSR bytes: 10 values + 10 indices + 5 row pointers (8) */
    padding_of(&K, HK_FMT_CSR, 0, &F);
    CU_ASSERT_EQUAL(hk_fmt_bytes(&F, HK_FP64), 10 * 8 + 10 * 4 + 5 * 8);
    hk_fmt_free(&F);
    /* ELL bytes: 16 values + 16 indices */
    padding_of(&K, HK_FMT_ELL, 0, &F);
    CU_ASSERT_EQUAL(hk_fmt_bytes(&F, HK_FP32), 16 * 4 + 16 * 4);
    hk_fmt_free(&F);
    /* S = 3: slices {4,3,2} {1 + 2 padding rows} -> 4*3 + 1*3 = 15 */
    CU_ASSERT_DOUBLE_EQUAL(padding_of(&K, HK_FMT_SELL, 3, &F), 1.5, 1e-15);
    /* the 2 padding rows of the last slice (width 1) are stored but not read */
    CU_ASSERT_EQUAL(hk_fmt_bytes(&F, HK_FP64), (15 - 2) * (8 + 4) + 3 * 8 + 2 * 4 + 4 * 4);
    hk_fmt_free(&F);
    hk_bcsr_free(&K);

    /* bs = 2: nnz 40; BELL 16 blocks = 64; SBELL S=2 as above = 48; scalar ELL width 8 x 8
     * rows = 64; scalar SELL S=2: row lengths 2,2,4,4,6,6,8,8 pair up exactly -> 40 */
    make_staircase(2, &K);
    CU_ASSERT_DOUBLE_EQUAL(padding_of(&K, HK_FMT_BSR, 0, &F), 1.0, 1e-15);
    hk_fmt_free(&F);
    CU_ASSERT_DOUBLE_EQUAL(padding_of(&K, HK_FMT_BELL, 0, &F), 1.6, 1e-15);
    /* BELL layout: block 1 of block row 3, entry (r=1, c=0): val[(1*4 + 2)*4 + 3] */
    CU_ASSERT_EQUAL(F.colind[1 * 4 + 3], 1);
    CU_ASSERT_DOUBLE_EQUAL(F.val[(1 * 4 + 2) * 4 + 3], K.val[(6 + 1) * 4 + 2], 0);
    hk_fmt_free(&F);
    CU_ASSERT_DOUBLE_EQUAL(padding_of(&K, HK_FMT_SBELL, 2, &F), 1.2, 1e-15);
    /* SBELL bytes: 12 blocks of 4 values + 12 block indices + 3 + 2 + 4 */
    CU_ASSERT_EQUAL(hk_fmt_bytes(&F, HK_FP64), 48 * 8 + 12 * 4 + 3 * 8 + 2 * 4 + 4 * 4);
    /* SBELL layout: slice 0, local block row 0 = old block row 3, block k=1, entry e=3 at
     * val[(slice_ptr[0] + 1*S)*4 + 3*S + 0] */
    CU_ASSERT_EQUAL(F.perm[0], 3);
    CU_ASSERT_DOUBLE_EQUAL(F.val[(0 + 1 * 2) * 4 + 3 * 2 + 0], K.val[(6 + 1) * 4 + 3], 0);
    hk_fmt_free(&F);
    CU_ASSERT_DOUBLE_EQUAL(padding_of(&K, HK_FMT_ELL, 0, &F), 1.6, 1e-15);
    CU_ASSERT_EQUAL(F.bs, 1);
    CU_ASSERT_EQUAL(F.nbrows, 8);
    hk_fmt_free(&F);
    CU_ASSERT_DOUBLE_EQUAL(padding_of(&K, HK_FMT_SELL, 2, &F), 1.0, 1e-15);
    hk_fmt_free(&F);
    /* the sorting window sigma = 1 keeps the original order: slices {1,2} {3,4} -> 48 */
    HK_ASSERT_OK(hk_fmt_from_bcsr(&K, HK_FMT_SBELL, 2, 1, &F));
    CU_ASSERT_EQUAL(F.stored, 48 + 0 * 4);
    CU_ASSERT_EQUAL(F.slice_width[0], 2);
    CU_ASSERT_EQUAL(F.perm[0], 0);
    hk_fmt_free(&F);
    hk_bcsr_free(&K);
}

/* structured FEM matrices: ELL-type padding is near 1 on quads/hexes, larger on tets */
static void test_padding_fem(void)
{
    hk_bcsr K;
    hk_fmt F;
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 6, 6, &K));
    double sbell = padding_of(&K, HK_FMT_SBELL, 32, &F);
    hk_fmt_free(&F);
    double bell = padding_of(&K, HK_FMT_BELL, 0, &F);
    hk_fmt_free(&F);
    CU_ASSERT(sbell >= 1.0 && sbell <= bell);
    hk_bcsr_free(&K);
}

static void test_format_errors(void)
{
    const hk_backend *cpu;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    hk_bcsr K;
    hk_mat *A = NULL;
    make_staircase(1, &K);
    CU_ASSERT_EQUAL(hk_mat_create(cpu, &K, HK_FMT_CUSPARSE_CSR, HK_FP64, NULL, &A),
                    HK_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(hk_error_message(), "format cusparse-csr needs the cuda backend; use csr on cpu"));
    CU_ASSERT_EQUAL(hk_mat_create(cpu, &K, HK_FMT_CUSPARSE_BSR, HK_FP32, NULL, &A),
                    HK_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "use bsr on cpu"));
    CU_ASSERT_PTR_NULL(A);
    /* a column index out of range is an error, not a crash */
    K.colind[4] = 9;
    hk_fmt F;
    CU_ASSERT_EQUAL(hk_fmt_from_bcsr(&K, HK_FMT_SBELL, 32, 0, &F), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "block row 2"));
    hk_bcsr_free(&K);
}

/* ---- generators ---------------------------------------------------------------------------- */

static int is_symmetric(const hk_bcsr *K, double tol)
{
    const int bs = K->bs;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++) {
            int64_t j = K->colind[k], m;
            for (m = K->rowptr[j]; m < K->rowptr[j + 1] && K->colind[m] != i; m++) {
            }
            if (m == K->rowptr[j + 1]) return 0;
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++)
                    if (fabs(K->val[(k * bs + r) * bs + c] - K->val[(m * bs + c) * bs + r]) > tol)
                        return 0;
        }
    return 1;
}

/* u^T K u for the nodal field u(node) = comp-th component equal to the x coordinate. The field
 * is zero on the clamped x = 0 nodes, and linear fields are exact for every element, so this is
 * the strain energy (x2) of a uniform strain over the unit domain. */
static double energy_linear(const hk_bcsr *K, int nx, int ny, int comp)
{
    const int bs = K->bs;
    const int64_t n = K->nbrows * bs;
    double *u = calloc((size_t)n, sizeof *u), *Ku = calloc((size_t)n, sizeof *Ku);
    for (int64_t node = 0; node < K->nbrows; node++)
        u[node * bs + comp] = (double)(node % (nx + 1)) / nx;
    (void)ny;
    hk_bcsr_spmv(K, u, Ku);
    double e = 0;
    for (int64_t i = 0; i < n; i++)
        e += u[i] * Ku[i];
    free(u);
    free(Ku);
    return e;
}

static int max_row_blocks(const hk_bcsr *K)
{
    int64_t m = 0;
    for (int64_t i = 0; i < K->nbrows; i++)
        if (K->rowptr[i + 1] - K->rowptr[i] > m) m = K->rowptr[i + 1] - K->rowptr[i];
    return (int)m;
}

/* format.sigma=auto: the rule on hand-made histograms, then on generated meshes through the
 * CPU backend's build and the host reference (they must pick the same window). */
static void test_sigma_auto(void)
{
    const int64_t one_length[4] = {0, 0, 0, 10000};    /* every row of length 3 */
    const int64_t spread[6] = {0, 0, 2000, 3000, 2500, 2500}; /* mode share 0.3 */
    const int64_t half[3] = {0, 5000, 5000};
    CU_ASSERT_EQUAL(hk_sigma_auto(one_length, 3, 10000, 32), 10000);
    CU_ASSERT_EQUAL(hk_sigma_auto(spread, 5, 10000, 32), 128 * 32);
    CU_ASSERT_EQUAL(hk_sigma_auto(spread, 5, 10000, 8), 128 * 8);
    CU_ASSERT_EQUAL(hk_sigma_auto(half, 2, 10000, 32), 10000);
    CU_ASSERT_EQUAL(hk_sigma_auto(spread, 5, 4096, 32), 4096); /* one window is the matrix */

    const hk_backend *cpu;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    for (int m = 0; m < 2; m++) {
        hk_bcsr K = {0};
        /* a triangulation with random diagonals: node degrees spread; hexes: interior rows
         * (27 blocks) dominate */
        if (m == 0)
            HK_ASSERT_OK(hk_gen_elasticity2d_tri_random(80, 80, 7, &K));
        else
            HK_ASSERT_OK(hk_gen_elasticity3d(24, 24, 24, &K));
        const int64_t expect = m == 0 ? 128 * 32 : K.nbrows;
        hk_fmt F = {0};
        HK_ASSERT_OK(hk_fmt_from_bcsr(&K, HK_FMT_SBELL, 32, HK_SIGMA_AUTO, &F));
        CU_ASSERT_EQUAL(F.sigma, expect);
        hk_mat *A = NULL;
        HK_ASSERT_OK(hk_mat_create(cpu, &K, HK_FMT_SBELL, HK_FP64, NULL, &A));
        CU_ASSERT_EQUAL(A->sigma, HK_SIGMA_AUTO);
        const hk_fmt *G = &((const hk_cpu_mat *)A->bdata)->F;
        CU_ASSERT_EQUAL(G->sigma, expect);
        CU_ASSERT_EQUAL(G->stored, F.stored);
        CU_ASSERT_EQUAL(memcmp(G->perm, F.perm, (size_t)K.nbrows * sizeof *F.perm), 0);
        hk_mat_destroy(A);
        hk_fmt_free(&F);
        hk_bcsr_free(&K);
    }
}

/* Regression (fuzzing): a negative format.sigma was taken silently as "whole matrix". */
static void test_format_option_ranges(void)
{
    const hk_backend *cpu;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    hk_bcsr K;
    hk_mat *A = NULL;
    hk_options *o = NULL;
    make_staircase(1, &K);
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "format.sigma=-1"));
    CU_ASSERT_EQUAL(hk_mat_create(cpu, &K, HK_FMT_SBELL, HK_FP64, o, &A), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "option format.sigma=-1 must be auto (the default), 0"));
    CU_ASSERT_PTR_NULL(A);
    HK_ASSERT_OK(hk_options_parse(o, "format.sigma=abc"));
    CU_ASSERT_EQUAL(hk_mat_create(&hk_backend_cpu, &K, HK_FMT_SBELL, HK_FP64, o, &A), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "option format.sigma=abc must be auto"));
    HK_ASSERT_OK(hk_options_parse(o, "format.sigma=auto"));
    HK_ASSERT_OK(hk_mat_create(&hk_backend_cpu, &K, HK_FMT_SBELL, HK_FP64, o, &A));
    hk_mat_destroy(A);
    A = NULL;
    HK_ASSERT_OK(hk_options_parse(o, "format.sigma=4"));
    HK_ASSERT_OK(hk_mat_create(cpu, &K, HK_FMT_SBELL, HK_FP64, o, &A));
    hk_mat_destroy(A);
    hk_options_destroy(o);
    hk_bcsr_free(&K);
}

static void test_gen_elasticity(void)
{
    const double E = 1, nu = 0.3;
    const double ps = E / (1 - nu * nu), G = E / (2 * (1 + nu));
    const double lam2mu = E * (1 - nu) / ((1 + nu) * (1 - 2 * nu));
    hk_bcsr K;

    HK_ASSERT_OK(hk_gen_elasticity2d(5, 3, &K));
    CU_ASSERT_EQUAL(K.bs, 2);
    CU_ASSERT_EQUAL(K.nbrows, 6 * 4);
    CU_ASSERT_EQUAL(max_row_blocks(&K), 9);
    CU_ASSERT(is_symmetric(&K, 1e-14));
    CU_ASSERT_DOUBLE_EQUAL(energy_linear(&K, 5, 3, 0), ps, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(energy_linear(&K, 5, 3, 1), G, 1e-12);
    /* clamped node 0: identity diagonal block only */
    CU_ASSERT_EQUAL(K.rowptr[1], 1);
    CU_ASSERT_DOUBLE_EQUAL(K.val[0], 1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(K.val[1], 0.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(K.val[3], 1.0, 0);
    hk_bcsr_free(&K);

    HK_ASSERT_OK(hk_gen_elasticity2d_tri(4, 6, &K));
    CU_ASSERT_EQUAL(max_row_blocks(&K), 7);
    CU_ASSERT(is_symmetric(&K, 1e-14));
    CU_ASSERT_DOUBLE_EQUAL(energy_linear(&K, 4, 6, 0), ps, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(energy_linear(&K, 4, 6, 1), G, 1e-12);
    hk_bcsr_free(&K);

    /* random diagonals: still exact (linear fields), symmetric, conforming; row lengths vary
     * between 5 and 9 blocks away from the boundary, like an unstructured mesh */
    HK_ASSERT_OK(hk_gen_elasticity2d_tri_random(8, 7, 5u, &K));
    CU_ASSERT(is_symmetric(&K, 1e-14));
    CU_ASSERT_DOUBLE_EQUAL(energy_linear(&K, 8, 7, 0), ps, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(energy_linear(&K, 8, 7, 1), G, 1e-12);
    CU_ASSERT_EQUAL(max_row_blocks(&K), 9);
    {
        int64_t minlen = 100;
        for (int64_t j = 1; j < 7; j++)
            for (int64_t i = 2; i < 8; i++) {
                int64_t n = i + 9 * j, len = K.rowptr[n + 1] - K.rowptr[n];
                if (len < minlen) minlen = len;
            }
        CU_ASSERT(minlen == 5);
        hk_bcsr B;
        HK_ASSERT_OK(hk_gen_elasticity2d_tri_random(8, 7, 5u, &B));
        CU_ASSERT_EQUAL(memcmp(B.val, K.val, K.rowptr[K.nbrows] * 4 * sizeof *K.val), 0);
        hk_bcsr_free(&B);
        HK_ASSERT_OK(hk_gen_elasticity2d_tri_random(8, 7, 6u, &B));
        CU_ASSERT(B.rowptr[B.nbrows] != K.rowptr[K.nbrows] ||
                  memcmp(B.colind, K.colind, K.rowptr[K.nbrows] * sizeof *K.colind) != 0);
        hk_bcsr_free(&B);
    }
    hk_bcsr_free(&K);

    HK_ASSERT_OK(hk_gen_elasticity3d(3, 4, 2, &K));
    CU_ASSERT_EQUAL(K.bs, 3);
    CU_ASSERT_EQUAL(K.nbrows, 4 * 5 * 3);
    CU_ASSERT_EQUAL(max_row_blocks(&K), 27);
    CU_ASSERT(is_symmetric(&K, 1e-14));
    CU_ASSERT_DOUBLE_EQUAL(energy_linear(&K, 3, 4, 0), lam2mu, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(energy_linear(&K, 3, 4, 2), G, 1e-12);
    hk_bcsr_free(&K);

    HK_ASSERT_OK(hk_gen_elasticity3d_tet(3, 3, 4, &K));
    CU_ASSERT_EQUAL(max_row_blocks(&K), 15);
    CU_ASSERT(is_symmetric(&K, 1e-14));
    CU_ASSERT_DOUBLE_EQUAL(energy_linear(&K, 3, 3, 0), lam2mu, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(energy_linear(&K, 3, 3, 1), G, 1e-12);
    hk_bcsr_free(&K);

    hk_bcsr B;
    CU_ASSERT_EQUAL(hk_gen_elasticity3d(0, 2, 2, &B), HK_ERR_ARG);
}

/* Rigid-body motions give zero force on every row away from the clamp. */
static void test_gen_rigid_body(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d_tet(4, 3, 3, &K));
    const int64_t n = K.nbrows * 3;
    double *u = malloc(n * sizeof *u), *f = malloc(n * sizeof *f);
    for (int64_t node = 0; node < K.nbrows; node++) {
        double x = (double)(node % 5) / 4, y = (double)(node / 5 % 4) / 3,
               z = (double)(node / 20) / 3;
        /* rotation about z plus a translation */
        u[node * 3] = -y + 0.5, u[node * 3 + 1] = x - 0.25, u[node * 3 + 2] = 1.0;
        (void)z;
    }
    hk_bcsr_spmv(&K, u, f);
    double fmax = 0;
    for (int64_t node = 0; node < K.nbrows; node++)
        if (node % 5 >= 2)
            for (int r = 0; r < 3; r++)
                fmax = fmax > fabs(f[node * 3 + r]) ? fmax : fabs(f[node * 3 + r]);
    CU_ASSERT(fmax < 1e-13);
    free(u);
    free(f);
    hk_bcsr_free(&K);
}

/* The generators give the same digits for any thread count. */
static void test_gen_thread_independent(void)
{
    const int nt = omp_get_max_threads();
    hk_bcsr A, B;
    omp_set_num_threads(1);
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 3, &A));
    omp_set_num_threads(3);
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 3, &B));
    omp_set_num_threads(nt);
    CU_ASSERT_EQUAL_FATAL(A.rowptr[A.nbrows], B.rowptr[B.nbrows]);
    CU_ASSERT_EQUAL(memcmp(A.colind, B.colind, A.rowptr[A.nbrows] * sizeof *A.colind), 0);
    CU_ASSERT_EQUAL(memcmp(A.val, B.val, A.rowptr[A.nbrows] * 9 * sizeof *A.val), 0);
    hk_bcsr_free(&A);
    hk_bcsr_free(&B);
}

static void test_gen_scalar(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_poisson2d(4, &K));
    CU_ASSERT_EQUAL(K.nbrows, 16);
    CU_ASSERT_EQUAL(K.rowptr[16], 16 * 5 - 4 * 4);
    CU_ASSERT(is_symmetric(&K, 0));
    /* ones: row sums 4 - neighbours = 0 inside, 1 on edges, 2 at corners */
    double one[16], y[16];
    for (int i = 0; i < 16; i++)
        one[i] = 1;
    hk_bcsr_spmv(&K, one, y);
    CU_ASSERT_DOUBLE_EQUAL(y[0], 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(y[1], 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(y[5], 0, 0);
    hk_bcsr_free(&K);

    HK_ASSERT_OK(hk_gen_convdiff2d(4, 10.0, &K));
    CU_ASSERT(!is_symmetric(&K, 1e-12));
    hk_bcsr_spmv(&K, one, y);
    CU_ASSERT_DOUBLE_EQUAL(y[5], 0, 1e-14); /* interior rows of an upwind M-matrix sum to 0 */
    hk_bcsr_free(&K);
}

static void test_gen_random(void)
{
    hk_bcsr A, B;
    HK_ASSERT_OK(hk_gen_random(200, 60, 2, 6.0, 1, 42u, &A));
    HK_ASSERT_OK(hk_gen_random(200, 60, 2, 6.0, 1, 42u, &B));
    CU_ASSERT_EQUAL(A.rowptr[200], B.rowptr[200]);
    CU_ASSERT_EQUAL(memcmp(A.val, B.val, A.rowptr[200] * 4 * sizeof(double)), 0);
    int empty = 0, sorted = 1;
    for (int64_t i = 0; i < 200; i++) {
        empty += A.rowptr[i + 1] == A.rowptr[i];
        for (int64_t k = A.rowptr[i] + 1; k < A.rowptr[i + 1]; k++)
            sorted &= A.colind[k] > A.colind[k - 1];
    }
    CU_ASSERT(empty >= 20);
    CU_ASSERT(sorted);
    hk_bcsr_free(&A);
    hk_bcsr_free(&B);
}

/* The CPU kernels give the same digits for any thread count (each row summed by one thread). */
static void test_spmv_thread_independent(void)
{
    const hk_backend *cpu;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d_tet(14, 14, 14, &K)); /* > 2048 rows: parallel */
    const int64_t n = K.nbrows * 3;
    double *x = hk_test_rand_vec(n, 3), *y1 = malloc(n * sizeof *y1), *y2 = malloc(n * sizeof *y2);
    const int nt = omp_get_max_threads();
    for (int f = 0; f < HK_FMT_CUSPARSE_CSR; f++) {
        hk_mat *A;
        hk_vec *vx, *vy;
        HK_ASSERT_OK(hk_mat_create(cpu, &K, (hk_format)f, HK_FP64, NULL, &A));
        HK_ASSERT_OK(hk_vec_create(cpu, n, HK_FP64, &vx));
        HK_ASSERT_OK(hk_vec_create(cpu, n, HK_FP64, &vy));
        HK_ASSERT_OK(hk_vec_upload(vx, x));
        omp_set_num_threads(1);
        HK_ASSERT_OK(hk_mat_spmv(A, vx, vy));
        HK_ASSERT_OK(hk_vec_download(vy, y1));
        omp_set_num_threads(3);
        HK_ASSERT_OK(hk_mat_spmv(A, vx, vy));
        HK_ASSERT_OK(hk_vec_download(vy, y2));
        omp_set_num_threads(nt);
        CU_ASSERT_EQUAL(memcmp(y1, y2, n * sizeof *y1), 0);
        hk_mat_destroy(A);
        hk_vec_destroy(vx);
        hk_vec_destroy(vy);
    }
    free(x);
    free(y1);
    free(y2);
    hk_bcsr_free(&K);
}

/* ---- bench helpers and `hooke bench spmv` end to end ---------------------------------------- */

static void test_bench_helpers(void)
{
    double a[3] = {3, 1, 2}, b[4] = {4, 1, 3, 2};
    CU_ASSERT_DOUBLE_EQUAL(hk_bench_median(a, 3), 2.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(hk_bench_median(b, 4), 2.5, 0);
    char path[256];
    snprintf(path, sizeof path, "%s/j.json", hk_test_tmpdir());
    hk_json j;
    CU_ASSERT_EQUAL_FATAL(hk_json_open(&j, path), 0);
    hk_json_begin_object(&j, NULL);
    hk_json_string(&j, "s", "a\"b");
    hk_json_begin_array(&j, "r");
    hk_json_begin_object(&j, NULL);
    hk_json_int(&j, "i", 7);
    hk_json_number(&j, "x", NAN);
    hk_json_end_object(&j);
    hk_json_end_array(&j);
    hk_json_end_object(&j);
    CU_ASSERT_EQUAL(hk_json_close(&j), 0);
    char buf[512] = {0};
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    /* compare without whitespace */
    char flat[512];
    size_t k = 0;
    for (size_t i = 0; buf[i]; i++)
        if (buf[i] != ' ' && buf[i] != '\n') flat[k++] = buf[i];
    flat[k] = 0;
    CU_ASSERT_STRING_EQUAL(flat, "{\"s\":\"a\\\"b\",\"r\":[{\"i\":7,\"x\":null}]}");
}

static int count_str(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_bench_spmv_command(void)
{
    char cmd[1024], path[256];
    snprintf(path, sizeof path, "%s/spmv.json", hk_test_tmpdir());
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=1 %s bench spmv --backend cpu --cells 3 --min-time 0.001 --json %s > "
             "/dev/null",
             HOOKE_BINARY, path);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static char buf[1 << 17];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    /* 6 matrices x (csr, bsr, ell, sell, bell, sbell, pcsr) x (fp64, fp32) */
    CU_ASSERT_EQUAL(count_str(buf, "\"matrix\":"), 84);
    CU_ASSERT_EQUAL(count_str(buf, "\"speedup_vs_csr_fp64\": 1,"), 6);
    /* format=auto's choice marked once per matrix and precision (bsr on the CPU) */
    CU_ASSERT_EQUAL(count_str(buf, "\"auto\": 1"), 12);
    CU_ASSERT_EQUAL(count_str(buf, "\"auto\": 0"), 72);
    /* fp64 results are exact here, except pcsr's (its sums run in another order) */
    CU_ASSERT_EQUAL(count_str(buf, "\"rel_err\": 0\n"), 36);
    /* bad input: exit code 2 with a message, not a crash */
    snprintf(cmd, sizeof cmd, "%s bench spmv --backend cpu --formats csr,foo 2>/dev/null",
             HOOKE_BINARY);
    int st = system(cmd);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    snprintf(cmd, sizeof cmd, "%s bench spmv --backend cpu --formats cusparse-csr 2>/dev/null",
             HOOKE_BINARY);
    if (!hk_test_have_cuda()) {
        st = system(cmd);
        CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    }
    snprintf(cmd, sizeof cmd, "%s bench spmv --backend cpu --order 3 2>/dev/null", HOOKE_BINARY);
    st = system(cmd);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 2);
#ifdef HOOKE_HAVE_GMSH
    /* a Gmsh mesh as the only matrix: csr and sbell rows of it, exact in fp64 */
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=1 %s bench spmv --backend cpu --mesh %s --mesh-size 0.5 "
             "--formats csr,sbell --precisions fp64 --min-time 0.001 --json %s > /dev/null",
             HOOKE_BINARY, hk_test_path("tests/data/mesh/box.geo"), path);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    CU_ASSERT_EQUAL(count_str(buf, "\"matrix\": \"box.geo\""), 2);
    CU_ASSERT_EQUAL(count_str(buf, "\"rel_err\": 0\n"), 2);
#endif
}

HK_SUITE(formats, {"spmv of every format = block CSR reference, random matrices", test_spmv_random},
         {"spmv edge cases: no rows, one row, empty rows, S = 1, S > n", test_spmv_edge_cases},
         {"spmv of every format on FEM matrices", test_spmv_fem},
         {"padding factors and layouts counted by hand", test_padding},
         {"padding of SBELL <= BELL on hexes", test_padding_fem},
         {"format errors: cusparse on cpu, bad column index", test_format_errors},
         {"format options out of range are errors", test_format_option_ranges},
         {"format.sigma=auto: window from the row-length histogram", test_sigma_auto},
         {"elasticity generators: symmetry, stencil, exact strain energy", test_gen_elasticity},
         {"elasticity generator: rigid-body motion is force-free", test_gen_rigid_body},
         {"elasticity generator gives the same digits for 1 and 3 threads",
          test_gen_thread_independent},
         {"poisson and convection-diffusion generators", test_gen_scalar},
         {"random generator: deterministic, empty rows, sorted columns", test_gen_random},
         {"cpu spmv gives the same digits for 1 and 3 threads", test_spmv_thread_independent},
         {"bench helpers: median, JSON writer", test_bench_helpers},
         {"hooke bench spmv end to end (tiny grids, JSON)", test_bench_spmv_command})
