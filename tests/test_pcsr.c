/* PCSR (prefetch CSR, the GPU Krylov thesis ch. 3.4) and the CSR kernels of the cuda backend.
 *
 * Suite pcsr (cpu): the CPU build equals the host reference hk_fmt_pcsr_from_bcsr array for
 * array; its SpMV equals the block CSR product to rounding on random matrices with empty rows,
 * one row, rows longer than a partition, n not a multiple of the partition, every row empty,
 * no rows, block sizes 1-3, fp64 and fp32, several partition sizes and padding factors; the
 * layout, the padding and the product of small matrices counted by hand; option errors; a CG
 * solve through format=pcsr against a manufactured solution; the bench's pcsr rows.
 * Suite cuda_pcsr (device): the CUDA build equals the CPU build array for array and its SpMV
 * equals the CPU's bit for bit (both precisions, several prefetch depths); every CSR kernel
 * (thread, warp, vector with every group size, adaptive, auto) equals the CPU CSR to rounding,
 * including rows longer than the adaptive kernel's shared tile; the fused SpMV + dot of both
 * own kernels. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "hk_impl.h"
#include "test_util.h"

/* Matrices with the shapes PCSR has to get right (index k < NMATS), block size bs. */
#define NMATS 7
static int make_matrix(int k, int bs, hk_bcsr *K)
{
    switch (k) {
    case 0:
        return hk_gen_random(37, 41, bs, 4.0, 1, 11u + bs, K); /* empty rows */
    case 1:
        return hk_gen_random(1, 9, bs, 4.0, 0, 3u + bs, K); /* one row */
    case 2:
        return hk_gen_random(6, 300, bs, 90.0, 0, 7u + bs, K); /* rows over a partition */
    case 3:
        return hk_gen_random(103, 60, bs, 7.0, 1, 19u + bs, K); /* n % P != 0 */
    case 4:
        return hk_gen_random(10, 10, bs, 0.0, 0, 3u, K); /* every row empty */
    case 5:
        return hk_gen_random(0, 4, bs, 2.0, 0, 5u, K); /* no rows */
    default:
        return hk_gen_random(2000, 2000, bs, 5.0, 1, 29u + bs, K); /* many partitions */
    }
}

/* partition, padding factor */
static const int params[][2] = {{32, 1}, {32, 4}, {64, 8}, {256, 4}, {1024, 32}, {32, 32}};
#define NPARAMS 6

static hk_mat *build(const hk_backend *be, const hk_bcsr *K, hk_format f, hk_precision p,
                     const char *opts)
{
    hk_options *o = NULL;
    hk_mat *A = NULL;
    if (hk_options_create(&o)) return NULL;
    int err = hk_options_parse(o, opts);
    if (!err) err = hk_mat_create(be, K, f, p, o, &A);
    if (err)
        fprintf(stderr, "\n  build %s (%s): %s\n", hk_format_name(f), opts, hk_error_message());
    hk_options_destroy(o);
    return A;
}

static hk_mat *build_pcsr(const hk_backend *be, const hk_bcsr *K, hk_precision p, int part, int pad,
                          int prefetch)
{
    char opts[128];
    snprintf(opts, sizeof opts,
             "format.pcsr.partition=%d format.pcsr.pad=%d "
             "format.pcsr.prefetch=%d",
             part, pad, prefetch);
    return build(be, K, HK_FMT_PCSR, p, opts);
}

/* y = A x on A's backend in A's precision, returned in fp64 (y starts stale). */
static void spmv(hk_mat *A, const double *x, double *y)
{
    hk_vec *vx = NULL, *vy = NULL;
    HK_ASSERT_OK(hk_vec_create(A->be, A->ncols, A->prec, &vx));
    HK_ASSERT_OK(hk_vec_create(A->be, A->nrows, A->prec, &vy));
    HK_ASSERT_OK(hk_vec_upload(vx, x));
    HK_ASSERT_OK(A->be->vec_set(vy, 777.0));
    HK_ASSERT_OK(hk_mat_spmv(A, vx, vy));
    HK_ASSERT_OK(hk_vec_download(vy, y));
    hk_vec_destroy(vx);
    hk_vec_destroy(vy);
}

/* |y - ref| <= tol * (|A| |x|)_i in every row: a rounding bound that does not depend on the
 * order of the sums. */
static int close_to_rounding(const char *what, const hk_bcsr *K, const double *x, const double *y,
                             const double *ref, double tol)
{
    const int bs = K->bs;
    for (int64_t bi = 0; bi < K->nbrows; bi++)
        for (int r = 0; r < bs; r++) {
            double bound = 0;
            for (int64_t q = K->rowptr[bi]; q < K->rowptr[bi + 1]; q++)
                for (int c = 0; c < bs; c++)
                    bound += fabs(K->val[((size_t)q * bs + r) * bs + c]) *
                             fabs(x[(size_t)K->colind[q] * bs + c]);
            const int64_t i = bi * bs + r;
            if (!(fabs(y[i] - ref[i]) <= tol * bound + 1e-300)) {
                fprintf(stderr, "\n  %s: row %lld is %.17g, expected %.17g (bound %g)\n", what,
                        (long long)i, y[i], ref[i], bound);
                return 0;
            }
        }
    return 1;
}

static int same_i32(const int32_t *a, const int32_t *b, int64_t n)
{
    return n <= 0 || (a && b && !memcmp(a, b, (size_t)n * sizeof *a));
}

/* Every array and size of two PCSR layouts (values compared as doubles). */
static int same_pcsr(const char *what, const hk_fmt *a, const hk_fmt *b)
{
    int ok = a->fmt == b->fmt && a->bs == 1 && b->bs == 1 && a->nrows == b->nrows &&
             a->ncols == b->ncols && a->nnz == b->nnz && a->stored == b->stored &&
             a->partition == b->partition && a->pad == b->pad && a->nparts == b->nparts;
    if (ok)
        ok = !memcmp(a->rowptr, b->rowptr, (size_t)(a->nrows + 1) * sizeof *a->rowptr) &&
             same_i32(a->colind, b->colind, a->stored) &&
             same_i32(a->part_row, b->part_row, a->nparts + 1) &&
             same_i32(a->split, b->split, a->nparts);
    for (int64_t k = 0; ok && k < a->stored; k++)
        ok = a->val[k] == b->val[k];
    if (!ok) fprintf(stderr, "\n  %s: the PCSR layouts differ\n", what);
    return ok;
}

/* ---- cpu ---------------------------------------------------------------------------------- */

static void test_build_equals_reference(void)
{
    int n = 0;
    for (int bs = 1; bs <= 3; bs++)
        for (int k = 0; k < NMATS; k++) {
            hk_bcsr K;
            HK_ASSERT_OK(make_matrix(k, bs, &K));
            for (int pi = 0; pi < NPARAMS; pi++) {
                hk_fmt R;
                HK_ASSERT_OK(hk_fmt_pcsr_from_bcsr(&K, params[pi][0], params[pi][1], &R));
                for (int p = 0; p < 2; p++) {
                    char what[96];
                    snprintf(what, sizeof what, "bs %d matrix %d P %d pad %d %s", bs, k,
                             params[pi][0], params[pi][1], p ? "fp32" : "fp64");
                    hk_mat *A =
                        build_pcsr(&hk_backend_cpu, &K, (hk_precision)p, params[pi][0], params[pi][1], 1);
                    CU_ASSERT_PTR_NOT_NULL_FATAL(A);
                    hk_fmt F;
                    HK_ASSERT_OK(hk_backend_cpu.mat_download(A, &F));
                    if (p)
                        for (int64_t q = 0; q < R.stored; q++)
                            R.val[q] = (float)R.val[q];
                    CU_ASSERT(same_pcsr(what, &F, &R));
                    hk_mat_info info;
                    hk_mat_get_info(A, &info);
                    CU_ASSERT_EQUAL(info.stored, R.stored);
                    CU_ASSERT_EQUAL(info.bytes, hk_fmt_bytes(&R, (hk_precision)p));
                    hk_fmt_free(&F);
                    hk_mat_destroy(A);
                    n++;
                }
                hk_fmt_free(&R);
            }
            hk_bcsr_free(&K);
        }
    CU_ASSERT_EQUAL(n, 3 * NMATS * NPARAMS * 2);
}

/* SpMV of matrix k, block size bs, on be with the given PCSR parameters and precision = the
 * block CSR product to rounding (fp32: the product of the rounded data). */
static int check_pcsr_spmv(const hk_backend *be, const hk_bcsr *K, int part, int pad, int prefetch,
                           hk_precision p, const char *what)
{
    hk_bcsr K32;
    HK_ASSERT_OK(hk_bcsr_copy(K, &K32));
    const int64_t nr = K->nbrows * K->bs, nc = K->nbcols * K->bs;
    const int64_t nv = K->rowptr[K->nbrows] * K->bs * K->bs;
    double *x = hk_test_rand_vec(nc, 5u + (unsigned)nr), *y = calloc((size_t)nr + 1, 8);
    double *ref = calloc((size_t)nr + 1, 8);
    if (p == HK_FP32) {
        for (int64_t q = 0; q < nv; q++)
            K32.val[q] = (float)K32.val[q];
        for (int64_t i = 0; i < nc; i++)
            x[i] = (float)x[i];
    }
    hk_bcsr_spmv(&K32, x, ref);
    hk_mat *A = build_pcsr(be, K, p, part, pad, prefetch);
    CU_ASSERT_PTR_NOT_NULL_FATAL(A);
    spmv(A, x, y);
    /* fp64 sums of exact products, rounded once: fp32 results are within one fp32 rounding */
    const int ok = close_to_rounding(what, &K32, x, y, ref, p == HK_FP32 ? 1.2e-7 : 1e-14);
    hk_mat_destroy(A);
    hk_bcsr_free(&K32);
    free(x), free(y), free(ref);
    return ok;
}

static void test_spmv_cpu(void)
{
    int bad = 0, runs = 0;
    for (int bs = 1; bs <= 3; bs++)
        for (int k = 0; k < NMATS; k++) {
            hk_bcsr K;
            HK_ASSERT_OK(make_matrix(k, bs, &K));
            for (int pi = 0; pi < NPARAMS; pi++)
                for (int p = 0; p < 2; p++) {
                    char what[96];
                    snprintf(what, sizeof what, "cpu bs %d matrix %d P %d pad %d %s", bs, k,
                             params[pi][0], params[pi][1], p ? "fp32" : "fp64");
                    bad += !check_pcsr_spmv(&hk_backend_cpu, &K, params[pi][0], params[pi][1], 4,
                                            (hk_precision)p, what);
                    runs++;
                }
            hk_bcsr_free(&K);
        }
    if (bad) fprintf(stderr, "\n  %d of %d SpMV cases failed\n", bad, runs);
    CU_ASSERT_EQUAL(bad, 0);
}

/* Rows of 20, 50 and 3 entries, padding factor 2, partitions of 32: padded lengths 20, 50, 4,
 * rowptr 0 20 70 74, three partitions (96 stored entries). Row 1 runs from entry 20 of
 * partition 0 through all of partition 1 into the first 6 entries of partition 2, so
 * part_row = 0 2 2 3 and split = 0 32 6. Integer data: the product is exact. */
static void test_by_hand(void)
{
    int64_t rp[4] = {0, 20, 70, 73};
    int32_t ci[73];
    double v[73];
    for (int q = 0; q < 73; q++) {
        ci[q] = q % 50;
        v[q] = (double)(q % 7) - 3.0;
    }
    for (int q = 20; q < 70; q++) /* sorted, distinct columns in row 1 */
        ci[q] = q - 20;
    hk_bcsr K = {.bs = 1, .nbrows = 3, .nbcols = 50, .rowptr = rp, .colind = ci, .val = v};
    hk_mat *A = build_pcsr(&hk_backend_cpu, &K, HK_FP64, 32, 2, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(A);
    hk_fmt F;
    HK_ASSERT_OK(hk_backend_cpu.mat_download(A, &F));
    const int64_t rowptr[4] = {0, 20, 70, 74};
    const int32_t part_row[4] = {0, 2, 2, 3}, split[3] = {0, 32, 6};
    CU_ASSERT_EQUAL(F.nparts, 3);
    CU_ASSERT_EQUAL(F.stored, 96);
    CU_ASSERT_EQUAL(memcmp(F.rowptr, rowptr, sizeof rowptr), 0);
    CU_ASSERT_EQUAL(memcmp(F.part_row, part_row, sizeof part_row), 0);
    CU_ASSERT_EQUAL(memcmp(F.split, split, sizeof split), 0);
    CU_ASSERT_EQUAL(F.colind[72], 22); /* row 2's last entry (source entry 72: 72 % 50) */
    CU_ASSERT_EQUAL(F.colind[73], -1); /* its padding */
    CU_ASSERT_EQUAL(F.colind[95], -1); /* the tail of the last partition */
    CU_ASSERT_EQUAL(F.val[73], 0.0);
    hk_mat_info info;
    hk_mat_get_info(A, &info);
    CU_ASSERT_EQUAL(info.nnz, 73);
    CU_ASSERT_EQUAL(info.stored, 96);
    CU_ASSERT_DOUBLE_EQUAL(info.padding, 96.0 / 73.0, 1e-15);
    /* bytes: 96 values and indices, 4 row pointers, 4 + 3 partition entries */
    CU_ASSERT_EQUAL(info.bytes, 96 * 12 + 4 * 8 + 7 * 4);
    double x[50], y[3], ref[3];
    for (int j = 0; j < 50; j++)
        x[j] = (double)(j % 5) - 2.0;
    hk_bcsr_spmv(&K, x, ref);
    spmv(A, x, y);
    CU_ASSERT(y[0] == ref[0] && y[1] == ref[1] && y[2] == ref[2]);
    hk_fmt_free(&F);
    hk_mat_destroy(A);
}

/* Padding counted by hand on the 2 x 2 block matrix of block rows of 1, 3, 0 blocks: scalar
 * rows of 2, 2, 6, 6, 0, 0 entries. pad 4: 4 + 4 + 8 + 8 = 24 padded entries, one partition
 * of 32 (stored 32, padding 32/16); pad 1 and 2: 16 entries, stored 32; pad 8: 8 + 8 + 8 + 8 =
 * 32, stored 32. A fourth block row of 3 blocks adds two scalar rows of 6 (8 padded) entries:
 * 48 padded entries, two partitions; the empty rows 4 and 5 start at entry 32, so partition 1
 * owns them. */
static void test_padding_counts(void)
{
    int64_t rp[4] = {0, 1, 4, 4};
    int32_t ci[4] = {0, 0, 1, 2};
    double v[16];
    for (int q = 0; q < 16; q++)
        v[q] = q + 1;
    hk_bcsr K = {.bs = 2, .nbrows = 3, .nbcols = 3, .rowptr = rp, .colind = ci, .val = v};
    static const struct {
        int pad, padded;
    } c[] = {{1, 16}, {2, 16}, {4, 24}, {8, 32}};
    for (int i = 0; i < 4; i++) {
        hk_fmt R;
        HK_ASSERT_OK(hk_fmt_pcsr_from_bcsr(&K, 32, c[i].pad, &R));
        CU_ASSERT_EQUAL(R.rowptr[R.nrows], c[i].padded);
        CU_ASSERT_EQUAL(R.stored, 32);
        CU_ASSERT_EQUAL(R.nparts, 1);
        hk_mat *A = build_pcsr(&hk_backend_cpu, &K, HK_FP32, 32, c[i].pad, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(A);
        hk_mat_info info;
        hk_mat_get_info(A, &info);
        CU_ASSERT_EQUAL(info.nnz, 16);
        CU_ASSERT_EQUAL(info.stored, 32);
        CU_ASSERT_DOUBLE_EQUAL(info.padding, 2.0, 1e-15);
        hk_mat_destroy(A);
        hk_fmt_free(&R);
    }
    int64_t rp2[5] = {0, 1, 4, 4, 7};
    int32_t ci2[7] = {0, 0, 1, 2, 0, 1, 2};
    double v2[28];
    for (int q = 0; q < 28; q++)
        v2[q] = q + 1;
    hk_bcsr K2 = {.bs = 2, .nbrows = 4, .nbcols = 3, .rowptr = rp2, .colind = ci2, .val = v2};
    hk_fmt R;
    HK_ASSERT_OK(hk_fmt_pcsr_from_bcsr(&K2, 32, 8, &R));
    CU_ASSERT_EQUAL(R.rowptr[R.nrows], 48);
    CU_ASSERT_EQUAL(R.nparts, 2);
    CU_ASSERT_EQUAL(R.stored, 64);
    CU_ASSERT_EQUAL(R.part_row[1], 4);
    CU_ASSERT_EQUAL(R.split[1], 0);
    hk_fmt_free(&R);
}

static void test_option_errors(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_random(5, 5, 1, 2.0, 0, 1u, &K));
    static const char *const bad[] = {"format.pcsr.partition=100",  "format.pcsr.partition=16",
                                      "format.pcsr.partition=2048", "format.pcsr.pad=3",
                                      "format.pcsr.pad=64",         "format.pcsr.prefetch=0",
                                      "format.csr.kernel=scalar"};
    for (int i = 0; i < 7; i++) {
        hk_options *o = NULL;
        hk_mat *A = NULL;
        HK_ASSERT_OK(hk_options_create(&o));
        HK_ASSERT_OK(hk_options_parse(o, bad[i]));
        CU_ASSERT_EQUAL(hk_mat_create(&hk_backend_cpu, &K, HK_FMT_PCSR, HK_FP64, o, &A), HK_ERR_OPTION);
        CU_ASSERT_PTR_NULL(A);
        hk_error_clear();
        hk_options_destroy(o);
    }
    hk_format f;
    HK_ASSERT_OK(hk_format_from_name("pcsr", &f));
    CU_ASSERT_EQUAL(f, HK_FMT_PCSR);
    CU_ASSERT_STRING_EQUAL(hk_format_name(HK_FMT_PCSR), "pcsr");
    hk_bcsr_free(&K);
}

/* CG + Jacobi through format=pcsr (fp64, and the fp32 copies of precision=mixed) recovers a
 * manufactured solution of the 2D Poisson matrix. */
static void solve_case(const char *backend)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_poisson2d(40, &K));
    const int64_t n = K.nbrows;
    double *xt = hk_test_rand_vec(n, 9u), *b = malloc((size_t)n * 8), *x = calloc((size_t)n, 8);
    hk_bcsr_spmv(&K, xt, b);
    static const char *const opts[] = {"method=cg pc=jacobi format=pcsr tol=1e-11",
                                       "method=cg pc=poly format=pcsr precision=mixed tol=1e-11 "
                                       "format.pcsr.pad=8 format.pcsr.partition=128"};
    for (int i = 0; i < 2; i++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s backend=%s", opts[i], backend);
        hk_options *o = NULL;
        hk_solver *s = NULL;
        hk_result res;
        HK_ASSERT_OK(hk_options_create(&o));
        HK_ASSERT_OK(hk_options_parse(o, buf));
        HK_ASSERT_OK(hk_solver_create(&K, o, &s));
        memset(x, 0, (size_t)n * 8);
        HK_ASSERT_OK(hk_solver_solve(s, b, x, &res));
        CU_ASSERT(hk_reason_converged(res.reason));
        double err = 0, nrm = 0;
        for (int64_t j = 0; j < n; j++) {
            err = fmax(err, fabs(x[j] - xt[j]));
            nrm = fmax(nrm, fabs(xt[j]));
        }
        CU_ASSERT(err <= 1e-7 * nrm);
        hk_solver_destroy(s);
        hk_options_destroy(o);
    }
    free(xt), free(b), free(x);
    hk_bcsr_free(&K);
}

static void test_solve_cpu(void)
{
    solve_case("cpu");
}

static int count_str(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* hooke bench spmv --pcsr-pads/--pcsr-prefetch: one row per padding factor and prefetch depth
 * and precision, each recorded in the JSON; a bad padding factor is exit code 2. */
static void test_bench_rows(void)
{
    char cmd[1024], path[256];
    snprintf(path, sizeof path, "%s/pcsr.json", hk_test_tmpdir());
    snprintf(cmd, sizeof cmd,
             "OMP_NUM_THREADS=1 %s bench spmv --backend cpu --cells 2 --matrices tet --formats "
             "pcsr --pcsr-pads 1,2,8 --pcsr-prefetch 1,3 --min-time 0.001 --json %s > /dev/null",
             HOOKE_BINARY, path);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    /* the csr fp64 baseline, then 3 pads x 2 prefetch depths x 2 precisions */
    CU_ASSERT_EQUAL(count_str(buf, "\"format\": \"pcsr\""), 12);
    CU_ASSERT_EQUAL(count_str(buf, "\"pcsr_pad\": 8,"), 4);
    CU_ASSERT_EQUAL(count_str(buf, "\"pcsr_prefetch\": 3,"), 6);
    CU_ASSERT_EQUAL(count_str(buf, "\"pcsr_partition\": 256,"), 12);
    snprintf(cmd, sizeof cmd, "%s bench spmv --backend cpu --pcsr-pads 3 2>/dev/null",
             HOOKE_BINARY);
    const int st = system(cmd);
    CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 2);
}

HK_SUITE(pcsr, {"cpu build = host reference, every array", test_build_equals_reference},
         {"cpu SpMV = block CSR to rounding (empty, long, one row, n % P)", test_spmv_cpu},
         {"layout, padding and product counted by hand", test_by_hand},
         {"padding counts exact for padding factors 1, 2, 4, 8", test_padding_counts},
         {"option errors: partition, padding factor, prefetch, csr kernel", test_option_errors},
         {"cg through format=pcsr recovers a manufactured solution", test_solve_cpu},
         {"hooke bench spmv: pcsr rows per padding factor and prefetch, JSON", test_bench_rows})

/* ---- device ------------------------------------------------------------------------------- */

static void test_cuda_build_and_spmv(void)
{
    const hk_backend *gpu = hk_test_cuda_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    int bad = 0, runs = 0;
    for (int bs = 1; bs <= 3; bs++)
        for (int k = 0; k < NMATS; k++) {
            hk_bcsr K;
            HK_ASSERT_OK(make_matrix(k, bs, &K));
            const int64_t nr = K.nbrows * bs, nc = K.nbcols * bs;
            double *x = hk_test_rand_vec(nc, 17u), *yc = calloc((size_t)nr + 1, 8);
            double *yg = calloc((size_t)nr + 1, 8);
            for (int pi = 0; pi < NPARAMS; pi++)
                for (int p = 0; p < 2; p++) {
                    char what[96];
                    snprintf(what, sizeof what, "cuda bs %d matrix %d P %d pad %d %s", bs, k,
                             params[pi][0], params[pi][1], p ? "fp32" : "fp64");
                    hk_mat *C =
                        build_pcsr(&hk_backend_cpu, &K, (hk_precision)p, params[pi][0], params[pi][1], 1);
                    CU_ASSERT_PTR_NOT_NULL_FATAL(C);
                    spmv(C, x, yc);
                    for (int pf = 1; pf <= 5; pf += 2) {
                        hk_mat *G =
                            build_pcsr(gpu, &K, (hk_precision)p, params[pi][0], params[pi][1], pf);
                        CU_ASSERT_PTR_NOT_NULL_FATAL(G);
                        if (pf == 1) {
                            hk_fmt FG, FC;
                            HK_ASSERT_OK(gpu->mat_download(G, &FG));
                            HK_ASSERT_OK(hk_backend_cpu.mat_download(C, &FC));
                            bad += !same_pcsr(what, &FG, &FC);
                            bad += G->stored != C->stored || G->bytes != C->bytes ||
                                   G->width != C->width;
                            hk_fmt_free(&FG);
                            hk_fmt_free(&FC);
                        }
                        spmv(G, x, yg);
                        /* the same sums in the same order: the same digits */
                        for (int64_t i = 0; i < nr; i++)
                            if (yg[i] != yc[i]) {
                                fprintf(stderr,
                                        "\n  %s prefetch %d: row %lld is %.17g on cuda, "
                                        "%.17g on cpu\n",
                                        what, pf, (long long)i, yg[i], yc[i]);
                                bad++;
                                break;
                            }
                        runs++;
                        hk_mat_destroy(G);
                    }
                    hk_mat_destroy(C);
                }
            free(x), free(yc), free(yg);
            hk_bcsr_free(&K);
        }
    if (bad) fprintf(stderr, "\n  %d failures in %d cuda PCSR cases\n", bad, runs);
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_cuda_spmv_to_rounding(void)
{
    const hk_backend *gpu = hk_test_cuda_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    int bad = 0;
    for (int k = 0; k < NMATS; k++) {
        hk_bcsr K;
        HK_ASSERT_OK(make_matrix(k, 2, &K));
        for (int p = 0; p < 2; p++)
            bad += !check_pcsr_spmv(gpu, &K, 32, 4, 3, (hk_precision)p, "cuda pcsr");
        hk_bcsr_free(&K);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Every CSR kernel against the CPU CSR, to rounding, in both precisions: empty rows, one row,
 * every row empty, no rows, n a multiple of nothing, a row of up to 5000 entries (longer than
 * the adaptive kernel's tile of 2048) next to short and empty rows, more row blocks than an SM
 * wave, mean row lengths that give the vector kernel every group size from its rule, and
 * every group size forced by format.tpr. */
static void test_cuda_csr_kernels(void)
{
    const hk_backend *gpu = hk_test_cuda_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    static const char *const kern[] = {
        "format.csr.kernel=auto",     "format.csr.kernel=thread",
        "format.csr.kernel=warp",     "format.csr.kernel=vector",
        "format.csr.kernel=adaptive", "format.csr.kernel=vector format.tpr=1",
        "format.csr.kernel=vector format.tpr=2", "format.csr.kernel=vector format.tpr=4",
        "format.csr.kernel=vector format.tpr=8", "format.csr.kernel=vector format.tpr=16",
        "format.csr.kernel=vector format.tpr=32"};
    const int nkern = (int)(sizeof kern / sizeof kern[0]);
    static const double per_row[] = {1.5, 5, 11, 23, 40, 80, 160};
    const int nmats = NMATS + 4 + (int)(sizeof per_row / sizeof per_row[0]);
    int bad = 0;
    for (int k = 0; k < nmats; k++) {
        hk_bcsr K;
        if (k < NMATS)
            HK_ASSERT_OK(make_matrix(k, 2, &K));
        else if (k == NMATS)
            HK_ASSERT_OK(hk_gen_random(7, 6000, 1, 2500.0, 1, 77u, &K));
        else if (k == NMATS + 1)
            HK_ASSERT_OK(hk_gen_elasticity3d(12, 12, 12, &K));
        else if (k == NMATS + 2) /* more row blocks than an SM wave holds */
            HK_ASSERT_OK(hk_gen_elasticity3d(20, 20, 20, &K));
        else if (k == NMATS + 3) /* as many, some longer than a tile, some empty */
            HK_ASSERT_OK(hk_gen_random(2000, 20000, 1, 1200.0, 1, 83u, &K));
        else /* 1 x 1 blocks: rows start anywhere in a quad */
            HK_ASSERT_OK(hk_gen_random(997, 1500, 1, per_row[k - NMATS - 4], 1, 41u + k, &K));
        const int64_t nr = K.nbrows * K.bs, nc = K.nbcols * K.bs;
        for (int p = 0; p < 2; p++) {
            hk_bcsr K32;
            HK_ASSERT_OK(hk_bcsr_copy(&K, &K32));
            double *x = hk_test_rand_vec(nc, 23u + k), *y = calloc((size_t)nr + 1, 8);
            double *ref = calloc((size_t)nr + 1, 8);
            if (p) {
                for (int64_t q = 0; q < K.rowptr[K.nbrows] * K.bs * K.bs; q++)
                    K32.val[q] = (float)K32.val[q];
                for (int64_t i = 0; i < nc; i++)
                    x[i] = (float)x[i];
            }
            hk_bcsr_spmv(&K32, x, ref);
            for (int i = 0; i < nkern; i++) {
                hk_mat *A = build(gpu, &K, HK_FMT_CSR, (hk_precision)p, kern[i]);
                CU_ASSERT_PTR_NOT_NULL_FATAL(A);
                spmv(A, x, y);
                char what[128];
                snprintf(what, sizeof what, "csr %s matrix %d %s", kern[i], k, p ? "fp32" : "fp64");
                bad += !close_to_rounding(what, &K32, x, y, ref, p ? 1.2e-7 : 1e-14);
                hk_mat_destroy(A);
            }
            hk_bcsr_free(&K32);
            free(x), free(y), free(ref);
        }
        hk_bcsr_free(&K);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* The fused SpMV + dot products (pipelined CG) of pcsr and the adaptive CSR kernel run the
 * SpMV and then a reduction: Ap and p.Ap agree with the CPU. */
static void test_cuda_fused(void)
{
    const hk_backend *gpu = hk_test_cuda_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 5, 4, &K));
    const int64_t n = K.nbrows * K.bs;
    double *x = hk_test_rand_vec(n, 31u), *yc = malloc((size_t)n * 8), *yg = malloc((size_t)n * 8);
    const hk_format fmts[2] = {HK_FMT_PCSR, HK_FMT_CSR};
    for (int f = 0; f < 2; f++) {
        double S[2][HK_S_PIPECG_COUNT];
        double *out[2] = {yc, yg};
        const hk_backend *bes[2] = {&hk_backend_cpu, gpu};
        for (int b = 0; b < 2; b++) {
            hk_mat *A = build(bes[b], &K, fmts[f], HK_FP64, "");
            CU_ASSERT_PTR_NOT_NULL_FATAL(A);
            hk_vec *vp = NULL, *vy = NULL;
            double *s = NULL;
            HK_ASSERT_OK(hk_vec_create(A->be, n, HK_FP64, &vp));
            HK_ASSERT_OK(hk_vec_create(A->be, n, HK_FP64, &vy));
            HK_ASSERT_OK(hk_vec_upload(vp, x));
            HK_ASSERT_OK(A->be->scal_alloc(&s, HK_S_PIPECG_COUNT));
            HK_ASSERT_OK(A->be->spmv_dot2(A, vp, vy, NULL, NULL, s));
            HK_ASSERT_OK(A->be->scal_get(s, 0, HK_S_PIPECG_COUNT, S[b]));
            HK_ASSERT_OK(hk_vec_download(vy, out[b]));
            A->be->scal_free(s);
            hk_vec_destroy(vp);
            hk_vec_destroy(vy);
            hk_mat_destroy(A);
        }
        CU_ASSERT(hk_test_reldiff(yg, yc, (long)n) < 1e-14);
        CU_ASSERT_DOUBLE_EQUAL(S[1][HK_S_PAP], S[0][HK_S_PAP], 1e-12 * fabs(S[0][HK_S_PAP]));
        CU_ASSERT_DOUBLE_EQUAL(S[1][HK_S_APZ], S[0][HK_S_APZ], 1e-12 * fabs(S[0][HK_S_APZ]));
    }
    free(x), free(yc), free(yg);
    hk_bcsr_free(&K);
}

static void test_solve_cuda(void)
{
    solve_case("cuda");
}

HK_DEVICE_SUITE(
    cuda_pcsr, {"cuda PCSR build = cpu build; SpMV = cpu bit for bit", test_cuda_build_and_spmv},
    {"cuda PCSR SpMV = block CSR to rounding", test_cuda_spmv_to_rounding},
    {"csr kernels thread/warp/vector/adaptive = block CSR to rounding", test_cuda_csr_kernels},
    {"fused SpMV + dots of pcsr and adaptive csr = cpu", test_cuda_fused},
    {"cg through format=pcsr on cuda recovers a manufactured solution", test_solve_cuda})
