/* Storage formats built on the backend (mat_build), and the transpose and scalar expansion
 * of a backend block CSR.
 *
 * Suite build (cpu): every format, block sizes 1..6, random matrices with empty rows, n not a
 * multiple of the slice, one row, no rows; fp64 and fp32; several slice/sigma options. The
 * arrays the backend built (mat_download) equal the host reference hk_fmt_from_bcsr byte for
 * byte; the SpMV equals the block CSR reference hk_bcsr_spmv; transpose and expansion equal
 * dense references.
 * Suite cuda_build (device): the CUDA build equals the CPU build array for array, the SpMV
 * agrees, transpose and expansion are identical. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

/* The matrices every format is built from, for block size bs (index k < NMATS). */
#define NMATS 5
static int make_matrix(int k, int bs, hk_bcsr *K)
{
    switch (k) {
    case 0: return hk_gen_random(37, 41, bs, 4.0, 1, 11u + bs, K); /* empty rows, 37 % S != 0 */
    case 1: return hk_gen_random(64, 64, bs, 9.0, 0, 23u + bs, K); /* full slices */
    case 2: return hk_gen_random(1, 5, bs, 2.0, 0, 31u + bs, K);   /* one row */
    case 3: return hk_gen_random(0, 3, bs, 1.0, 0, 5u, K);         /* no rows */
    default: return hk_gen_random(19, 7, bs, 3.0, 1, 47u + bs, K); /* more rows than columns */
    }
}

/* {40, 5}: slices taller than a warp (the device refill's tiles of 32 rows) */
static const int slices[][2] = {{32, 0}, {4, 3}, {1, 1}, {7, 10}, {40, 5}};
#define NSLICES 5

static int is_sliced(hk_format f)
{
    return f == HK_FMT_SELL || f == HK_FMT_SBELL;
}

/* a == b in every size and array; prints the first difference. */
static int same_fmt(const char *what, const hk_fmt *a, const hk_fmt *b)
{
#define SAME_FIELD(x)                                                                              \
    if (a->x != b->x) {                                                                            \
        fprintf(stderr, "\n  %s: " #x " is %lld, expected %lld\n", what, (long long)a->x,          \
                (long long)b->x);                                                                  \
        return 0;                                                                                  \
    }
    SAME_FIELD(fmt) SAME_FIELD(bs) SAME_FIELD(nrows) SAME_FIELD(ncols) SAME_FIELD(nbrows)
    SAME_FIELD(nbcols) SAME_FIELD(nnz) SAME_FIELD(stored) SAME_FIELD(width)
    SAME_FIELD(nslices)
    if (is_sliced(a->fmt)) {
        SAME_FIELD(slice) SAME_FIELD(sigma)
    }
#undef SAME_FIELD
    const int64_t b2 = (int64_t)a->bs * a->bs, slots = a->stored / b2;
#define SAME_ARRAY(x, n)                                                                           \
    if ((a->x == NULL) != (b->x == NULL) ||                                                        \
        (a->x && (n) > 0 && memcmp(a->x, b->x, (size_t)(n) * sizeof *a->x))) {                     \
        fprintf(stderr, "\n  %s: array " #x " differs\n", what);                                   \
        return 0;                                                                                  \
    }
    SAME_ARRAY(rowptr, a->nbrows + 1)
    SAME_ARRAY(colind, slots)
    SAME_ARRAY(val, a->stored)
    SAME_ARRAY(slice_ptr, a->nslices + 1)
    SAME_ARRAY(slice_width, a->nslices)
    SAME_ARRAY(perm, a->nbrows)
#undef SAME_ARRAY
    return 1;
}

/* Build K in fmt/p/slice/sigma (HK_SIGMA_AUTO: auto) on be; NULL (and an error) when the build
 * fails. */
static hk_mat *build(const hk_backend *be, const hk_bcsr *K, hk_format fmt, hk_precision p,
                     int slice, int sigma)
{
    hk_options *o;
    char buf[64];
    hk_mat *A = NULL;
    if (hk_options_create(&o)) return NULL;
    if (sigma == HK_SIGMA_AUTO)
        snprintf(buf, sizeof buf, "format.slice=%d format.sigma=auto", slice);
    else
        snprintf(buf, sizeof buf, "format.slice=%d format.sigma=%d", slice, sigma);
    int err = hk_options_parse(o, buf);
    if (!err) err = hk_mat_create(be, K, fmt, p, o, &A);
    if (err) fprintf(stderr, "\n  build %s: %s\n", hk_format_name(fmt), hk_error_message());
    hk_options_destroy(o);
    return A;
}

/* y = A x on the backend, in A's precision, returned in fp64. */
static void backend_spmv(hk_mat *A, const double *x, double *y)
{
    hk_vec *vx = NULL, *vy = NULL;
    HK_ASSERT_OK(hk_vec_create(A->be, A->ncols, A->prec, &vx));
    HK_ASSERT_OK(hk_vec_create(A->be, A->nrows, A->prec, &vy));
    HK_ASSERT_OK(hk_vec_upload(vx, x));
    HK_ASSERT_OK(A->be->vec_set(vy, 777.0)); /* stale values must be overwritten */
    HK_ASSERT_OK(hk_mat_spmv(A, vx, vy));
    HK_ASSERT_OK(hk_vec_download(vy, y));
    hk_vec_destroy(vx);
    hk_vec_destroy(vy);
}

static void test_build_equals_reference(void)
{
    const hk_backend *cpu = &hk_backend_cpu;
    int nbuilt = 0;
    for (int bs = 1; bs <= 6; bs++)
        for (int k = 0; k < NMATS; k++) {
            hk_bcsr K;
            HK_ASSERT_OK(make_matrix(k, bs, &K));
            const int64_t nv = K.rowptr[K.nbrows] * bs * bs;
            for (int f = 0; f < HK_FMT_COUNT; f++) {
                if (f == HK_FMT_CUSPARSE_CSR || f == HK_FMT_CUSPARSE_BSR) continue;
                for (int si = 0; si < NSLICES; si++) {
                    if (si > 0 && !is_sliced((hk_format)f)) continue;
                    hk_fmt R;
                    HK_ASSERT_OK(hk_fmt_from_bcsr(&K, (hk_format)f, slices[si][0], slices[si][1],
                                                  &R));
                    for (int pi = 0; pi < 2; pi++) {
                        const hk_precision p = pi ? HK_FP32 : HK_FP64;
                        char what[128];
                        snprintf(what, sizeof what, "%s %s bs %d matrix %d S %d sigma %d",
                                 hk_format_name((hk_format)f), pi ? "fp32" : "fp64", bs, k,
                                 slices[si][0], slices[si][1]);
                        hk_mat *A = build(cpu, &K, (hk_format)f, p, slices[si][0], slices[si][1]);
                        CU_ASSERT_PTR_NOT_NULL_FATAL(A);
                        hk_fmt F;
                        HK_ASSERT_OK(cpu->mat_download(A, &F));
                        if (pi) /* the reference's values rounded to fp32 */
                            for (int64_t q = 0; q < R.stored; q++)
                                R.val[q] = (float)R.val[q];
                        CU_ASSERT(same_fmt(what, &F, &R));
                        /* statistics */
                        hk_mat_info info;
                        hk_mat_get_info(A, &info);
                        CU_ASSERT_EQUAL(info.nnz, nv);
                        CU_ASSERT_EQUAL(info.stored, R.stored);
                        CU_ASSERT_EQUAL(info.bytes, hk_fmt_bytes(&R, p));
                        hk_fmt_free(&F);
                        hk_mat_destroy(A);
                        nbuilt++;
                    }
                    hk_fmt_free(&R);
                }
            }
            hk_bcsr_free(&K);
        }
    CU_ASSERT(nbuilt > 500);
}

/* ELL width, SBELL permutation and slice widths of a matrix counted by hand: block rows of
 * 1, 3, 0, 2 blocks (bs 4), S = 2, sigma = 4. */
static void test_build_by_hand(void)
{
    int64_t rp[5] = {0, 1, 4, 4, 6};
    int32_t ci[6] = {2, 0, 1, 3, 1, 2};
    double v[6 * 16];
    for (int q = 0; q < 6 * 16; q++)
        v[q] = q + 1;
    hk_bcsr K = {.bs = 4, .nbrows = 4, .nbcols = 4, .rowptr = rp, .colind = ci, .val = v};
    hk_mat *A = build(&hk_backend_cpu, &K, HK_FMT_SBELL, HK_FP64, 2, 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(A);
    hk_fmt F;
    HK_ASSERT_OK(hk_backend_cpu.mat_download(A, &F));
    const int32_t perm[4] = {1, 3, 0, 2}; /* lengths 3, 2, 1, 0 */
    CU_ASSERT_EQUAL(memcmp(F.perm, perm, sizeof perm), 0);
    CU_ASSERT_EQUAL(F.slice_width[0], 3);
    CU_ASSERT_EQUAL(F.slice_width[1], 1);
    CU_ASSERT_EQUAL(F.slice_ptr[2], 8);     /* (3 + 1) * 2 block slots */
    CU_ASSERT_EQUAL(A->stored, 8 * 16);
    CU_ASSERT_EQUAL(A->width, 3);
    CU_ASSERT_EQUAL(F.colind[0], 0);        /* block 0 of new row 0 (old 1) */
    CU_ASSERT_EQUAL(F.colind[1], 1);        /* block 0 of new row 1 (old 3) */
    CU_ASSERT_EQUAL(F.colind[5], -1);       /* block 2 of new row 1: padding */
    /* value e = 5 of block k = 1 of new row j = 1 (old 3, source block 5):
     * val[(slice_ptr[0] + k*S)*16 + e*S + j] */
    CU_ASSERT_EQUAL(F.val[(0 + 1 * 2) * 16 + 5 * 2 + 1], 5 * 16 + 5 + 1);
    hk_fmt_free(&F);
    hk_mat_destroy(A);
    A = build(&hk_backend_cpu, &K, HK_FMT_BELL, HK_FP64, 32, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(A);
    CU_ASSERT_EQUAL(A->width, 3);
    CU_ASSERT_EQUAL(A->stored, 3 * 4 * 16);
    hk_mat_destroy(A);
}

/* SpMV of every built format (bs 1..6, both precisions) = hk_bcsr_spmv. */
static void check_spmv_all(const hk_backend *be)
{
    for (int bs = 1; bs <= 6; bs++)
        for (int k = 0; k < NMATS; k++) {
            hk_bcsr K, K32;
            HK_ASSERT_OK(make_matrix(k, bs, &K));
            HK_ASSERT_OK(hk_bcsr_copy(&K, &K32));
            const int64_t nr = K.nbrows * bs, nc = K.nbcols * bs;
            const int64_t nv = K.rowptr[K.nbrows] * bs * bs;
            for (int64_t q = 0; q < nv; q++)
                K32.val[q] = (float)K32.val[q];
            double *x = hk_test_rand_vec(nc, 3u + (unsigned)k), *x32 = hk_test_rand_vec(nc, 3u + (unsigned)k);
            for (int64_t i = 0; i < nc; i++)
                x32[i] = (float)x32[i];
            double *ref = calloc((size_t)nr + 1, 8), *ref32 = calloc((size_t)nr + 1, 8);
            double *y = calloc((size_t)nr + 1, 8);
            hk_bcsr_spmv(&K, x, ref);
            hk_bcsr_spmv(&K32, x32, ref32);
            for (int f = 0; f < HK_FMT_COUNT; f++) {
                if (be == &hk_backend_cpu && (f == HK_FMT_CUSPARSE_CSR || f == HK_FMT_CUSPARSE_BSR))
                    continue;
                for (int pi = 0; pi < 2; pi++) {
                    const hk_precision p = pi ? HK_FP32 : HK_FP64;
                    hk_mat *A = build(be, &K, (hk_format)f, p, 4, 3);
                    CU_ASSERT_PTR_NOT_NULL_FATAL(A);
                    backend_spmv(A, pi ? x32 : x, y);
                    const double *r = pi ? ref32 : ref;
                    double scale = 1e-300, err = 0;
                    for (int64_t i = 0; i < nr; i++) {
                        if (fabs(r[i]) > scale) scale = fabs(r[i]);
                        if (!(fabs(y[i] - r[i]) <= err)) err = fabs(y[i] - r[i]);
                    }
                    const double tol = pi ? 2e-5 : 1e-13; /* fp32: cuSPARSE may sum in fp32 */
                    if (!(err <= tol * scale * 10))
                        fprintf(stderr, "\n  SpMV %s %s on %s bs %d matrix %d: error %g of %g\n",
                                hk_format_name((hk_format)f), pi ? "fp32" : "fp64",
                                hk_backend_name(be), bs, k, err, scale);
                    CU_ASSERT(err <= tol * scale * 10);
                    hk_mat_destroy(A);
                }
            }
            free(x), free(x32), free(ref), free(ref32), free(y);
            hk_bcsr_free(&K);
            hk_bcsr_free(&K32);
        }
}

static void test_spmv_cpu(void)
{
    check_spmv_all(&hk_backend_cpu);
}

/* A random br x bc block matrix on be (pattern of hk_gen_random, values random). */
static void random_bmat(const hk_backend *be, int64_t nbrows, int64_t nbcols, int br, int bc,
                        unsigned seed, hk_bmat *A, hk_bmat *H)
{
    hk_bcsr P;
    HK_ASSERT_OK(hk_gen_random(nbrows, nbcols, 1, 3.0, 1, seed, &P));
    const int64_t nnzb = P.rowptr[nbrows];
    HK_ASSERT_OK(hk_bmat_alloc(&hk_backend_cpu, br, bc, nbrows, nbcols, nnzb, H));
    memcpy(H->rowptr, P.rowptr, (size_t)(nbrows + 1) * 8);
    if (nnzb) memcpy(H->colind, P.colind, (size_t)nnzb * 4);
    double *v = hk_test_rand_vec(nnzb * br * bc, seed + 1);
    if (nnzb) memcpy(H->val, v, (size_t)(nnzb * br * bc) * 8);
    free(v);
    hk_bcsr_free(&P);
    HK_ASSERT_OK(hk_bmat_alloc(be, br, bc, nbrows, nbcols, nnzb, A));
    HK_ASSERT_OK(be->copy_to(A->rowptr, H->rowptr, (size_t)(nbrows + 1) * 8));
    if (nnzb) {
        HK_ASSERT_OK(be->copy_to(A->colind, H->colind, (size_t)nnzb * 4));
        HK_ASSERT_OK(be->copy_to(A->val, H->val, (size_t)(nnzb * br * bc) * 8));
    }
}

/* Dense row-major copy of a host hk_bmat (scalar rows x scalar columns), NAN where no block is
 * stored so that a stored zero and a missing entry differ. */
static double *dense_of(const hk_bmat *H)
{
    const int64_t nr = H->nbrows * H->br, nc = H->nbcols * H->bc;
    double *D = malloc((size_t)(nr * nc > 0 ? nr * nc : 1) * 8);
    for (int64_t i = 0; i < nr * nc; i++)
        D[i] = NAN;
    for (int64_t bi = 0; bi < H->nbrows; bi++)
        for (int64_t q = H->rowptr[bi]; q < H->rowptr[bi + 1]; q++)
            for (int r = 0; r < H->br; r++)
                for (int c = 0; c < H->bc; c++)
                    D[(bi * H->br + r) * nc + (int64_t)H->colind[q] * H->bc + c] =
                        H->val[(q * H->br + r) * H->bc + c];
    return D;
}

/* rows sorted strictly increasing and the row pointer consistent */
static int well_formed(const hk_bmat *H)
{
    if (H->rowptr[0] != 0 || H->rowptr[H->nbrows] != H->nnzb) return 0;
    for (int64_t i = 0; i < H->nbrows; i++)
        for (int64_t q = H->rowptr[i]; q < H->rowptr[i + 1]; q++)
            if (H->colind[q] < 0 || H->colind[q] >= H->nbcols ||
                (q > H->rowptr[i] && H->colind[q] <= H->colind[q - 1]))
                return 0;
    return 1;
}

static const int shapes[][4] = {/* nbrows, nbcols, br, bc */
                                {23, 17, 3, 6}, {40, 40, 1, 1}, {9, 30, 2, 1},
                                {1, 1, 6, 6},   {0, 5, 2, 2},   {31, 12, 5, 4}};
#define NSHAPES 6

static void check_transpose_expand(const hk_backend *be)
{
    for (int t = 0; t < NSHAPES; t++) {
        hk_bmat A, H, T, TH, S, SH;
        random_bmat(be, shapes[t][0], shapes[t][1], shapes[t][2], shapes[t][3], 100u + t, &A,
                    &H);
        double *D = dense_of(&H);
        const int64_t nr = H.nbrows * H.br, nc = H.nbcols * H.bc;

        HK_ASSERT_OK(be->bmat_transpose(&A, &T));
        HK_ASSERT_OK(hk_bmat_to_host(&T, &TH));
        CU_ASSERT(TH.br == H.bc && TH.bc == H.br && TH.nbrows == H.nbcols &&
                  TH.nbcols == H.nbrows && TH.nnzb == H.nnzb);
        CU_ASSERT(well_formed(&TH));
        double *DT = dense_of(&TH);
        int ok = 1;
        for (int64_t i = 0; i < nr; i++)
            for (int64_t j = 0; j < nc; j++) {
                const double a = D[i * nc + j], b = DT[j * nr + i];
                if (!(a == b || (isnan(a) && isnan(b)))) ok = 0;
            }
        CU_ASSERT(ok);

        HK_ASSERT_OK(be->bmat_expand(&A, &S));
        HK_ASSERT_OK(hk_bmat_to_host(&S, &SH));
        CU_ASSERT(SH.br == 1 && SH.bc == 1 && SH.nbrows == nr && SH.nbcols == nc &&
                  SH.nnzb == H.nnzb * H.br * H.bc);
        CU_ASSERT(well_formed(&SH));
        double *DS = dense_of(&SH);
        ok = 1;
        for (int64_t i = 0; i < nr * nc; i++)
            if (!(D[i] == DS[i] || (isnan(D[i]) && isnan(DS[i])))) ok = 0;
        CU_ASSERT(ok);

        free(D), free(DT), free(DS);
        hk_bmat_free(&A), hk_bmat_free(&H), hk_bmat_free(&T), hk_bmat_free(&TH);
        hk_bmat_free(&S), hk_bmat_free(&SH);
    }
}

static void test_transpose_expand_cpu(void)
{
    check_transpose_expand(&hk_backend_cpu);
}

/* What the build refuses, in one sentence each. */
static void test_build_errors(void)
{
    const hk_backend *cpu = &hk_backend_cpu;
    hk_bcsr K;
    hk_mat *A = NULL;
    HK_ASSERT_OK(hk_gen_random(4, 4, 2, 2.0, 0, 1u, &K));
    CU_ASSERT_EQUAL(hk_mat_create(cpu, &K, HK_FMT_CUSPARSE_BSR, HK_FP64, NULL, &A),
                    HK_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NULL(A);
    K.bs = 7;
    CU_ASSERT_EQUAL(hk_mat_create(cpu, &K, HK_FMT_SBELL, HK_FP64, NULL, &A), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "1 to 6"));
    K.bs = 2;
    /* a column index out of range is refused on the host, naming the block row */
    int64_t r = 0;
    while (r < K.nbrows && K.rowptr[r + 1] == K.rowptr[r]) r++;
    CU_ASSERT_FATAL(r < K.nbrows);
    const int32_t saved = K.colind[K.rowptr[r]];
    K.colind[K.rowptr[r]] = 99;
    char want[32];
    snprintf(want, sizeof want, "block row %lld", (long long)r);
    CU_ASSERT_EQUAL(hk_mat_create(cpu, &K, HK_FMT_SBELL, HK_FP64, NULL, &A), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), want));
    CU_ASSERT_PTR_NULL(A);
    K.colind[K.rowptr[r]] = saved;
    /* non-square blocks */
    hk_bmat R, RH;
    random_bmat(cpu, 5, 5, 3, 6, 9u, &R, &RH);
    CU_ASSERT_EQUAL(hk_mat_create_bmat(&R, HK_FMT_BSR, HK_FP64, NULL, &A), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "square"));
    CU_ASSERT_PTR_NULL(A);
    hk_bmat_free(&R), hk_bmat_free(&RH);
    hk_bcsr_free(&K);
}

/* format=auto: the rule by size against the cache, and its resolution when a matrix is built
 * (A->fmt the format chosen, A->asked auto so that matrices made like A choose again). */
static void test_format_auto(void)
{
    const size_t MB = (size_t)1 << 20;
    CU_ASSERT_EQUAL(hk_format_auto_by_cache(3, 40 * MB, 50 * MB), HK_FMT_BSR);
    CU_ASSERT_EQUAL(hk_format_auto_by_cache(1, 40 * MB, 50 * MB), HK_FMT_CSR);
    CU_ASSERT_EQUAL(hk_format_auto_by_cache(3, 50 * MB, 50 * MB), HK_FMT_BSR);
    CU_ASSERT_EQUAL(hk_format_auto_by_cache(3, 50 * MB + 1, 50 * MB), HK_FMT_SBELL);
    CU_ASSERT_EQUAL(hk_format_auto_by_cache(1, 60 * MB, 50 * MB), HK_FMT_SBELL);
    CU_ASSERT_EQUAL(hk_format_auto_by_cache(3, 600 * MB, 0), HK_FMT_BSR); /* no cache known */
    hk_format f = HK_FMT_CSR;
    HK_ASSERT_OK(hk_format_from_name("auto", &f));
    CU_ASSERT_EQUAL(f, HK_FMT_AUTO);
    CU_ASSERT_STRING_EQUAL(hk_format_name(HK_FMT_AUTO), "auto");

    const hk_backend *cpu = &hk_backend_cpu;
    for (int bs = 1; bs <= 3; bs += 2) {
        hk_bcsr K = {0};
        if (bs == 3)
            HK_ASSERT_OK(hk_gen_elasticity3d(4, 5, 6, &K));
        else
            HK_ASSERT_OK(hk_gen_poisson2d(30, &K));
        hk_bmat D = {0};
        HK_ASSERT_OK(hk_bmat_upload(cpu, &K, &D));
        const size_t nnzb = (size_t)K.rowptr[K.nbrows];
        CU_ASSERT_EQUAL(hk_format_auto_bytes(&D, HK_FP64),
                        nnzb * bs * bs * 8 + nnzb * 4 + (size_t)(K.nbrows + 1) * 8);
        CU_ASSERT_EQUAL(hk_format_auto_bytes(&D, HK_FP32),
                        nnzb * bs * bs * 4 + nnzb * 4 + (size_t)(K.nbrows + 1) * 8);
        hk_mat *A = NULL;
        HK_ASSERT_OK(hk_mat_create_bmat(&D, HK_FMT_AUTO, HK_FP64, NULL, &A));
        CU_ASSERT_EQUAL(A->fmt, bs == 1 ? HK_FMT_CSR : HK_FMT_BSR);
        CU_ASSERT_EQUAL(A->asked, HK_FMT_AUTO);
        hk_mat_destroy(A);
        HK_ASSERT_OK(hk_mat_create_bmat(&D, HK_FMT_SBELL, HK_FP64, NULL, &A));
        CU_ASSERT_EQUAL(A->asked, HK_FMT_SBELL);
        hk_mat_destroy(A);
        hk_bmat_free(&D);
        hk_bcsr_free(&K);
    }
}

/* An fp32 matrix by conversion of a built fp64 one (hk_mat_convert, the backend's mat_convert)
 * against a fresh fp32 build of the same K: the same arrays byte for byte, statistics and SpMV
 * bytes (so the kernel's tables too); then new values converted in place
 * (hk_mat_convert_values) against a fresh fp32 build of the new values. Every format, bs 1..6,
 * the slicing options and format.sigma=auto. Formats the backend does not convert (cuSPARSE's
 * and PCSR's on cuda) must say HK_ERR_UNSUPPORTED; returns how many were converted. */
static int check_convert(const hk_backend *be)
{
    int nconv = 0;
    for (int bs = 1; bs <= 6; bs++)
        for (int k = 0; k < NMATS; k++) {
            hk_bcsr K, K2;
            HK_ASSERT_OK(make_matrix(k, bs, &K));
            HK_ASSERT_OK(hk_bcsr_copy(&K, &K2));
            for (int64_t e = 0; e < K2.rowptr[K2.nbrows] * bs * bs; e++)
                K2.val[e] = 1.0 / 3.0 * K2.val[e] - 0.125;
            double *x = NULL, *y1 = NULL, *y2 = NULL;
            const int64_t n = K.nbrows * bs, m = K.nbcols * bs;
            x = malloc((size_t)(m + 1) * sizeof *x);
            y1 = malloc((size_t)(n + 1) * sizeof *y1);
            y2 = malloc((size_t)(n + 1) * sizeof *y2);
            CU_ASSERT_FATAL(x && y1 && y2);
            for (int64_t j = 0; j < m; j++)
                x[j] = 1.0 + (double)((j * 7) % 13) / 9.0;
            for (int f = 0; f < HK_FMT_COUNT; f++) {
                const int cus = f == HK_FMT_CUSPARSE_CSR || f == HK_FMT_CUSPARSE_BSR;
                if (cus && be == &hk_backend_cpu) continue;
                for (int si = 0; si <= NSLICES; si++) {
                    if (si > 0 && !is_sliced((hk_format)f)) continue;
                    /* si == NSLICES: format.sigma=auto (the default) */
                    const int S = si < NSLICES ? slices[si][0] : 32;
                    const int sigma = si < NSLICES ? slices[si][1] : HK_SIGMA_AUTO;
                    char what[128];
                    snprintf(what, sizeof what, "%s convert %s bs %d matrix %d S %d sigma %d",
                             be->name, hk_format_name((hk_format)f), bs, k, S, sigma);
                    hk_mat *D = build(be, &K, (hk_format)f, HK_FP64, S, sigma);
                    hk_mat *D2 = build(be, &K2, (hk_format)f, HK_FP64, S, sigma);
                    hk_mat *F = build(be, &K, (hk_format)f, HK_FP32, S, sigma);
                    hk_mat *F2 = build(be, &K2, (hk_format)f, HK_FP32, S, sigma);
                    CU_ASSERT_PTR_NOT_NULL_FATAL(D);
                    CU_ASSERT_PTR_NOT_NULL_FATAL(D2);
                    CU_ASSERT_PTR_NOT_NULL_FATAL(F);
                    CU_ASSERT_PTR_NOT_NULL_FATAL(F2);
                    hk_mat *E = NULL;
                    const int ierr = hk_mat_convert(D, &E);
                    if (be != &hk_backend_cpu && (cus || f == HK_FMT_PCSR)) {
                        CU_ASSERT_EQUAL(ierr, HK_ERR_UNSUPPORTED);
                        CU_ASSERT_PTR_NULL(E);
                        hk_error_clear();
                    } else {
                        HK_ASSERT_OK(ierr);
                        CU_ASSERT_PTR_NOT_NULL_FATAL(E);
                        CU_ASSERT_EQUAL(E->prec, HK_FP32);
                        hk_fmt FE, FF;
                        HK_ASSERT_OK(be->mat_download(E, &FE));
                        HK_ASSERT_OK(be->mat_download(F, &FF));
                        CU_ASSERT(same_fmt(what, &FE, &FF));
                        hk_fmt_free(&FE), hk_fmt_free(&FF);
                        CU_ASSERT_EQUAL(E->fmt, F->fmt);
                        CU_ASSERT_EQUAL(E->nnz, F->nnz);
                        CU_ASSERT_EQUAL(E->stored, F->stored);
                        CU_ASSERT_EQUAL(E->width, F->width);
                        CU_ASSERT_EQUAL(E->bytes, F->bytes);
                        CU_ASSERT_EQUAL(E->lanes_min, F->lanes_min);
                        CU_ASSERT_EQUAL(E->lanes_max, F->lanes_max);
                        backend_spmv(E, x, y1);
                        backend_spmv(F, x, y2);
                        CU_ASSERT(n == 0 || !memcmp(y1, y2, (size_t)n * sizeof *y1));
                        /* new values in place: a fresh build of them */
                        HK_ASSERT_OK(hk_mat_convert_values(E, D2));
                        HK_ASSERT_OK(be->mat_download(E, &FE));
                        HK_ASSERT_OK(be->mat_download(F2, &FF));
                        snprintf(what, sizeof what,
                                 "%s convert values %s bs %d matrix %d S %d "
                                 "sigma %d",
                                 be->name, hk_format_name((hk_format)f), bs, k, S, sigma);
                        CU_ASSERT(same_fmt(what, &FE, &FF));
                        hk_fmt_free(&FE), hk_fmt_free(&FF);
                        backend_spmv(E, x, y1);
                        backend_spmv(F2, x, y2);
                        CU_ASSERT(n == 0 || !memcmp(y1, y2, (size_t)n * sizeof *y1));
                        /* an fp32 source or a matrix of another layout is refused */
                        CU_ASSERT_EQUAL(hk_mat_convert_values(E, F), HK_ERR_UNSUPPORTED);
                        hk_error_clear();
                        hk_mat_destroy(E);
                        nconv++;
                    }
                    hk_mat_destroy(D), hk_mat_destroy(D2);
                    hk_mat_destroy(F), hk_mat_destroy(F2);
                }
            }
            free(x), free(y1), free(y2);
            hk_bcsr_free(&K);
            hk_bcsr_free(&K2);
        }
    return nconv;
}

static void test_convert_cpu(void)
{
    /* csr, bsr, ell, bell, pcsr; sell and sbell for each slicing and sigma=auto */
    CU_ASSERT(check_convert(&hk_backend_cpu) == 6 * NMATS * (5 + 2 * (NSLICES + 1)));
}

HK_SUITE(build,
         {"built arrays = hk_fmt_from_bcsr, every format, bs 1..6, fp64/fp32",
          test_build_equals_reference},
         {"SBELL/BELL of bs 4 counted by hand", test_build_by_hand},
         {"SpMV of every built format, bs 1..6 = block CSR reference", test_spmv_cpu},
         {"transpose and expansion = dense references", test_transpose_expand_cpu},
         {"build errors: cusparse on cpu, bs 7, bad column, non-square blocks", test_build_errors},
         {"format=auto: the rule by size, its resolution when built", test_format_auto},
         {"fp32 by conversion of a built fp64 matrix = a fresh fp32 build, every format",
          test_convert_cpu})

/* ---- device ------------------------------------------------------------------------------ */

/* One case of the device sweep: K, the device's format f and the CPU reference's fc (cusparse-*:
 * csr / bsr with the same arrays), precision p, slicing slices[si]; what names the case. */
typedef void (*cuda_case_fn)(const hk_backend *gpu, const hk_bcsr *K, hk_format f, hk_format fc,
                             hk_precision p, int si, const char *what);

/* fn on every format, bs 1..6, every matrix, slicing and precision. */
static void cuda_each_case(const char *label, cuda_case_fn fn)
{
    const hk_backend *gpu = hk_test_cuda_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    for (int bs = 1; bs <= 6; bs++)
        for (int k = 0; k < NMATS; k++) {
            hk_bcsr K;
            HK_ASSERT_OK(make_matrix(k, bs, &K));
            for (int f = 0; f < HK_FMT_COUNT; f++)
                for (int si = 0; si < NSLICES; si++) {
                    if (si > 0 && !is_sliced((hk_format)f)) continue;
                    const hk_format fc = f == HK_FMT_CUSPARSE_CSR   ? HK_FMT_CSR
                                         : f == HK_FMT_CUSPARSE_BSR ? HK_FMT_BSR
                                                                    : (hk_format)f;
                    for (int pi = 0; pi < 2; pi++) {
                        char what[128];
                        snprintf(what, sizeof what, "cuda%s %s %s bs %d matrix %d S %d sigma %d",
                                 label, hk_format_name((hk_format)f), pi ? "fp32" : "fp64", bs, k,
                                 slices[si][0], slices[si][1]);
                        fn(gpu, &K, (hk_format)f, fc, pi ? HK_FP32 : HK_FP64, si, what);
                    }
                }
            hk_bcsr_free(&K);
        }
}

/* G (device) and C (CPU) downloaded: the same arrays; freed. */
static void same_built(const hk_backend *gpu, hk_mat *G, hk_mat *C, const char *what)
{
    hk_fmt FG, FC;
    HK_ASSERT_OK(gpu->mat_download(G, &FG));
    HK_ASSERT_OK(hk_backend_cpu.mat_download(C, &FC));
    FC.fmt = FG.fmt;
    CU_ASSERT(same_fmt(what, &FG, &FC));
    CU_ASSERT_EQUAL(G->nnz, C->nnz);
    CU_ASSERT_EQUAL(G->stored, C->stored);
    CU_ASSERT_EQUAL(G->width, C->width);
    CU_ASSERT_EQUAL(G->bytes, C->bytes);
    hk_fmt_free(&FG), hk_fmt_free(&FC);
    hk_mat_destroy(G), hk_mat_destroy(C);
}

static void build_case(const hk_backend *gpu, const hk_bcsr *K, hk_format f, hk_format fc,
                       hk_precision p, int si, const char *what)
{
    hk_mat *G = build(gpu, K, f, p, slices[si][0], slices[si][1]);
    hk_mat *C = build(&hk_backend_cpu, K, fc, p, slices[si][0], slices[si][1]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(G);
    CU_ASSERT_PTR_NOT_NULL_FATAL(C);
    same_built(gpu, G, C, what);
}

static void test_cuda_build_equals_cpu(void)
{
    cuda_each_case("", build_case);
}

/* New values of the same pattern (hk_mat_rebuild: mat_refill in place on cuda, a fresh build
 * for cuSPARSE's and PCSR's matrices): the arrays of a fresh CPU build from the new values. */
static void refill_case(const hk_backend *gpu, const hk_bcsr *K, hk_format f, hk_format fc,
                        hk_precision p, int si, const char *what)
{
    hk_bcsr K2;
    HK_ASSERT_OK(hk_bcsr_copy(K, &K2));
    for (int64_t e = 0; e < K2.rowptr[K2.nbrows] * K2.bs * K2.bs; e++)
        K2.val[e] = 1.5 * K2.val[e] + 0.25;
    hk_bmat B2;
    HK_ASSERT_OK(hk_bmat_upload(gpu, &K2, &B2));
    hk_mat *G = build(gpu, K, f, p, slices[si][0], slices[si][1]);
    hk_mat *C = build(&hk_backend_cpu, &K2, fc, p, slices[si][0], slices[si][1]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(G);
    CU_ASSERT_PTR_NOT_NULL_FATAL(C);
    HK_ASSERT_OK(hk_mat_rebuild(G, &B2));
    same_built(gpu, G, C, what);
    hk_bmat_free(&B2);
    hk_bcsr_free(&K2);
}

static void test_cuda_refill(void)
{
    cuda_each_case(" refill", refill_case);
}

/* The first block row at or after r with a stored block (-1: none). */
static int64_t row_with_blocks(const hk_bcsr *K, int64_t r)
{
    for (; r < K->nbrows; r++)
        if (K->rowptr[r + 1] > K->rowptr[r]) return r;
    return -1;
}

/* mat_refill_checked where the backend has it for the format: the refill's arrays with finite
 * values (first bad -1), and with a NaN and an infinity planted in two rows, the earlier row
 * (bmat_first_nonfinite's). Counts the cases it ran in checked_cases. */
static int checked_cases;
static void refill_checked_case(const hk_backend *gpu, const hk_bcsr *K, hk_format f,
                                hk_format fc, hk_precision p, int si, const char *what)
{
    if (!gpu->mat_refill_checked) return;
    hk_bcsr K2;
    HK_ASSERT_OK(hk_bcsr_copy(K, &K2));
    const int bb = K2.bs * K2.bs;
    for (int64_t e = 0; e < K2.rowptr[K2.nbrows] * bb; e++)
        K2.val[e] = 1.5 * K2.val[e] + 0.25;
    hk_bmat B2;
    HK_ASSERT_OK(hk_bmat_upload(gpu, &K2, &B2));
    hk_mat *G = build(gpu, K, f, p, slices[si][0], slices[si][1]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(G);
    int64_t bad = 7;
    const int ierr = gpu->mat_refill_checked(G, &B2, &bad);
    if (ierr == HK_ERR_UNSUPPORTED) {
        hk_error_clear();
        hk_mat_destroy(G);
    } else {
        HK_ASSERT_OK(ierr);
        CU_ASSERT_EQUAL(bad, -1);
        checked_cases++;
        hk_mat *C = build(&hk_backend_cpu, &K2, fc, p, slices[si][0], slices[si][1]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(C);
        same_built(gpu, G, C, what);
        /* a NaN in a later row, an infinity in an earlier one (its last entry) */
        const int64_t early = row_with_blocks(&K2, K2.nbrows / 3);
        const int64_t late = row_with_blocks(&K2, 2 * K2.nbrows / 3 + 1);
        if (early >= 0 && late > early) {
            K2.val[K2.rowptr[late] * bb] = NAN;
            K2.val[K2.rowptr[early + 1] * bb - 1] = -INFINITY;
            hk_bmat_free(&B2);
            HK_ASSERT_OK(hk_bmat_upload(gpu, &K2, &B2));
            G = build(gpu, K, f, p, slices[si][0], slices[si][1]);
            int64_t ref = -1;
            HK_ASSERT_OK(gpu->bmat_first_nonfinite(&B2, &ref));
            HK_ASSERT_OK(gpu->mat_refill_checked(G, &B2, &bad));
            CU_ASSERT_EQUAL(ref, early);
            CU_ASSERT_EQUAL(bad, early);
            hk_mat_destroy(G);
        }
    }
    hk_bmat_free(&B2);
    hk_bcsr_free(&K2);
}

static void test_cuda_refill_checked(void)
{
    checked_cases = 0;
    cuda_each_case(" refill checked", refill_checked_case);
    /* ELL, BELL, SELL and SBELL of bs 1 and BELL, SBELL of the block sizes: some ran */
    CU_ASSERT(checked_cases >= 6 * NMATS * 2);
}

static void test_cuda_spmv(void)
{
    const hk_backend *gpu = hk_test_cuda_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    check_spmv_all(gpu);
}

/* transpose / expansion on the device = on the CPU, entry for entry */
static void test_cuda_transpose_expand(void)
{
    const hk_backend *gpu = hk_test_cuda_backend(), *cpu = &hk_backend_cpu;
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    check_transpose_expand(gpu);
    for (int t = 0; t < NSHAPES; t++) {
        hk_bmat A, H, out[2][2], host[2][2];
        random_bmat(gpu, shapes[t][0], shapes[t][1], shapes[t][2], shapes[t][3], 300u + t, &A,
                    &H);
        HK_ASSERT_OK(gpu->bmat_transpose(&A, &out[0][0]));
        HK_ASSERT_OK(cpu->bmat_transpose(&H, &out[0][1]));
        HK_ASSERT_OK(gpu->bmat_expand(&A, &out[1][0]));
        HK_ASSERT_OK(cpu->bmat_expand(&H, &out[1][1]));
        for (int o = 0; o < 2; o++) {
            HK_ASSERT_OK(hk_bmat_to_host(&out[o][0], &host[o][0]));
            HK_ASSERT_OK(hk_bmat_to_host(&out[o][1], &host[o][1]));
            const hk_bmat *g = &host[o][0], *c = &host[o][1];
            CU_ASSERT_FATAL(g->nbrows == c->nbrows && g->nnzb == c->nnzb && g->br == c->br &&
                            g->bc == c->bc);
            CU_ASSERT_EQUAL(memcmp(g->rowptr, c->rowptr, (size_t)(g->nbrows + 1) * 8), 0);
            if (g->nnzb) {
                CU_ASSERT_EQUAL(memcmp(g->colind, c->colind, (size_t)g->nnzb * 4), 0);
                CU_ASSERT_EQUAL(memcmp(g->val, c->val, (size_t)(g->nnzb * g->br * g->bc) * 8), 0);
            }
            for (int b = 0; b < 2; b++)
                hk_bmat_free(&out[o][b]), hk_bmat_free(&host[o][b]);
        }
        hk_bmat_free(&A), hk_bmat_free(&H);
    }
}

/* format=auto on the device: a matrix far inside any GPU's L2 gets bsr, one of 240 MB sbell
 * (the L2 of an H100 or H200 is 50 MB); the SpMV of the chosen format is right. */
static void test_cuda_format_auto(void)
{
    const hk_backend *gpu = hk_test_cuda_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    for (int big = 0; big < 2; big++) {
        hk_bcsr K = {0};
        const int c = big ? 50 : 6;
        HK_ASSERT_OK(hk_gen_elasticity3d(c, c, c, &K));
        hk_mat *A = NULL;
        HK_ASSERT_OK(hk_mat_create(gpu, &K, HK_FMT_AUTO, HK_FP64, NULL, &A));
        CU_ASSERT_EQUAL(A->fmt, big ? HK_FMT_SBELL : HK_FMT_BSR);
        CU_ASSERT_EQUAL(A->asked, HK_FMT_AUTO);
        const int64_t n = K.nbrows * K.bs;
        double *x = NULL, *y = NULL, *ref = NULL;
        HK_ASSERT_OK(hk_calloc((size_t)n, sizeof *x, &x));
        HK_ASSERT_OK(hk_calloc((size_t)n, sizeof *y, &y));
        HK_ASSERT_OK(hk_calloc((size_t)n, sizeof *ref, &ref));
        for (int64_t i = 0; i < n; i++)
            x[i] = 1.0 + 0.001 * (double)(i % 97);
        hk_bcsr_spmv(&K, x, ref);
        hk_vec *dx = NULL, *dy = NULL;
        HK_ASSERT_OK(hk_vec_create(gpu, n, HK_FP64, &dx));
        HK_ASSERT_OK(hk_vec_create(gpu, n, HK_FP64, &dy));
        HK_ASSERT_OK(hk_vec_upload(dx, x));
        HK_ASSERT_OK(hk_mat_spmv(A, dx, dy));
        HK_ASSERT_OK(hk_vec_download(dy, y));
        double err = 0, mx = 0;
        for (int64_t i = 0; i < n; i++) {
            err = fmax(err, fabs(y[i] - ref[i]));
            mx = fmax(mx, fabs(ref[i]));
        }
        CU_ASSERT(err <= 1e-13 * mx);
        hk_vec_destroy(dx), hk_vec_destroy(dy);
        free(x), free(y), free(ref);
        hk_mat_destroy(A);
        hk_bcsr_free(&K);
    }
}

static void test_cuda_convert(void)
{
    const hk_backend *gpu = hk_test_cuda_backend();
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    /* all but pcsr and cusparse-* */
    CU_ASSERT(check_convert(gpu) == 6 * NMATS * (4 + 2 * (NSLICES + 1)));
}

HK_DEVICE_SUITE(cuda_build,
                {"cuda build = cpu build array for array, every format, bs 1..6, fp64/fp32",
                 test_cuda_build_equals_cpu},
                {"new values in place (mat_refill): a fresh build's arrays, every format",
                 test_cuda_refill},
                {"new values in place with the finite check in the same pass "
                 "(mat_refill_checked): a fresh build's arrays, the first bad row",
                 test_cuda_refill_checked},
                {"cuda SpMV of every built format, bs 1..6 = block CSR reference", test_cuda_spmv},
                {"cuda transpose and expansion = dense references and the cpu ops",
                 test_cuda_transpose_expand},
                {"format=auto on cuda: bsr inside the L2, sbell beyond", test_cuda_format_auto},
                {"fp32 by conversion of a built fp64 matrix (mat_convert) = a fresh fp32 "
                 "build, every format, bs 1..6, in place too",
                 test_cuda_convert})
