/* The values-only re-set-up of pc=amg (hk_solver_update_values) and its numeric ops.
 *
 * Suite amg_update (CPU): the numeric halves amg_smooth_prolongator_numeric (in place over A T)
 * and bmat_transpose_numeric give the bytes of the whole ops on a real level (elasticity, the
 * set-up's own T), a block outside the kept pattern is named; the planned products
 * (bmat_spgemm_plan, _numeric_plan: A P, R (A P) whole and upper) give the numeric ops' bytes,
 * refuse a plan made for other patterns and name a block outside C's pattern; after an update to S
 * K S every level's operator and transfer operators have the bytes of a fresh set-up of S K S (the
 * default symmetric Galerkin product and HOOKE_AMG_GALERKIN=full's whole one); an update
 * whose supports differ (a node decoupled) makes the near-null space and T again, converges,
 * and an update back to K gives the first hierarchy's bytes. pc.amg.update=prolongator (P and
 * R kept): its set-up is the default's; an update with K itself gives the set-up's bytes (every
 * level, the spectral bounds, the solve); an update to K with a region 10 times stiffer keeps P
 * and R, forms R (A P) with the new A (the bytes of the CPU ops' product from the same P and R),
 * converges to the tolerance of the true residual; back to K the set-up's bytes again; other
 * supports make P and R again; the fp64 fallback keeps them; the same, fallback too, with A P's
 * values made by each update (HOOKE_AMG_UPDATE_VALUES=transient, another value refused). The
 * planned products with an fp32 operand (bmat_spgemm_numeric_plan_f32: A P with P rounded and
 * padded, R (A P) with R in fp32, synthetic products of every AMG shape) give the bytes of the
 * fp64 product of the widened values; vec_convert_blocks pads and widens back; with fp32 levels
 * every value of P and R is fp32-exact and every coarse operator is (rounded as stored) the
 * CPU's R (A P) of the level's own P and R, after the set-up and an update, both update modes;
 * pc.amg.update=prolongator keeps with fp32 levels exactly P's padded fp32 copy more than the
 * default (below the fp64 P and R it kept before), with fp64 levels nothing more.
 * pc.amg.update_lanczos=4: the set-up's bytes; after an update to a stiffer region the fine level's
 * bound from 4 warm-started steps is within 1 % of 60 cold steps', the coarse levels' the cold
 * ones'. A bad value of either option is named. Suite cuda_amg_update (device): the numeric ops on
 * cuda against the CPU's bytes (A T, A P, R (A P) by the output-stationary product and by its upper
 * blocks and mirror, P in place, R); the planned products on cuda under every HOOKE_SPGEMM value
 * (unset, pairs-sorted, pairs, row, stationary; another value, a removed one too, refused with the
 * valid ones listed; a plan used under the other order than it was made in refused; the sorted
 * order's 4 bytes a block of C in the whole product's plan, none more in the upper one's) against
 * the CPU's bytes: A P and R (A P) (whole, upper) of elasticity3d:20's level and products whose
 * rows of C hold 1500 blocks (summed in place, past any shared-memory row); the cuda update's
 * hierarchy (both Galerkin paths) equal to a fresh cuda set-up's bytes and to the CPU reference's
 * to rounding; the same for pc.amg.update=prolongator, whose coarse operators after an update to a
 * stiffer region have the bytes of the CPU's R (A P) from the cuda hierarchy's own P and R (fp32
 * levels too, and under HOOKE_SPGEMM=row); the fp32-operand planned products against the CPU's
 * bytes (C NaN before), shapes and kernels without a variant refused; fp32 levels' P and R
 * fp32-exact and the kept bytes, as on the CPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#include "pc/pc_impl.h"
#include "test_amg_level.h"

static const hk_backend *backend(const char *name)
{
    const hk_backend *b = NULL;
    HK_ASSERT_OK(hk_backend_get(name, &b));
    return b;
}

/* A copy of M on backend be (pattern and values). */
static void bmat_copy_to(const hk_backend *be, const hk_bmat *M, hk_bmat *D)
{
    HK_ASSERT_OK(hk_bmat_alloc(be, M->br, M->bc, M->nbrows, M->nbcols, M->nnzb, D));
    HK_ASSERT_OK(be->copy_to(D->rowptr, M->rowptr, (size_t)(M->nbrows + 1) * sizeof(int64_t)));
    if (M->nnzb) {
        HK_ASSERT_OK(be->copy_to(D->colind, M->colind, (size_t)M->nnzb * sizeof(int32_t)));
        HK_ASSERT_OK(
            be->copy_to(D->val, M->val, (size_t)M->nnzb * M->br * M->bc * sizeof(double)));
    }
}

static int same_values(const hk_bmat *D, const hk_bmat *H)
{
    const size_t nv = (size_t)H->nnzb * H->br * H->bc;
    double *v = malloc((nv ? nv : 1) * sizeof *v);
    if (nv) HK_ASSERT_OK(D->be->copy_from(v, D->val, nv * sizeof *v));
    const int same = memcmp(v, H->val, nv * sizeof *v) == 0;
    free(v);
    return same;
}

static void test_numeric_ops(void)
{
    const hk_backend *be = backend("cpu");
    hk_test_level L;
    hk_test_level_make(8, &L);
    /* P in place over a copy of A T */
    hk_bmat X;
    bmat_copy_to(be, &L.AT, &X);
    HK_ASSERT_OK(be->amg_smooth_prolongator_numeric(&X, &L.T, L.Dinv, L.w, &X));
    CU_ASSERT(same_values(&X, &L.P));
    /* R into R's pattern (values overwritten) */
    hk_bmat Y;
    bmat_copy_to(be, &L.R, &Y);
    for (int64_t k = 0; k < Y.nnzb * Y.br * Y.bc; k++)
        Y.val[k] = 1e300;
    HK_ASSERT_OK(be->bmat_transpose_numeric(&L.P, &Y));
    CU_ASSERT(same_values(&Y, &L.R));
    /* a block of R that P lacks: named by R's block row */
    int64_t row = -1;
    for (int64_t j = 0; j < Y.nbrows && row < 0; j++)
        if (Y.rowptr[j + 1] - Y.rowptr[j] >= 2) row = j;
    CU_ASSERT_FATAL(row >= 0);
    const int64_t q = Y.rowptr[row + 1] - 1;
    const int32_t keep = Y.colind[q];
    Y.colind[q] = (int32_t)(Y.nbcols - 1) == keep ? 0 : (int32_t)(Y.nbcols - 1);
    if (hk_find_block(L.P.rowptr, L.P.colind, Y.colind[q], (int32_t)row) < 0) {
        CU_ASSERT_EQUAL(be->bmat_transpose_numeric(&L.P, &Y), HK_ERR_ARG);
        char want[64];
        snprintf(want, sizeof want, "block row %lld", (long long)row);
        CU_ASSERT(strstr(hk_error_message(), want) != NULL);
        hk_error_clear();
    }
    Y.colind[q] = keep;
    /* shapes that do not fit */
    hk_bmat wrong = Y;
    wrong.nnzb -= 1;
    CU_ASSERT_EQUAL(be->bmat_transpose_numeric(&L.P, &wrong), HK_ERR_ARG);
    hk_error_clear();
    CU_ASSERT_EQUAL(be->amg_smooth_prolongator_numeric(&L.AT, &L.T, L.Dinv, L.w, &wrong),
                    HK_ERR_ARG);
    hk_error_clear();
    hk_bmat_free(&X), hk_bmat_free(&Y);
    hk_test_level_free(&L);
}

/* ---- the planned products ------------------------------------------------------------------ */

/* ref = C's pattern with the values of A B (upper: only the blocks on and above the diagonal,
 * the others NaN) by the CPU's numeric ops: the bytes every planned product must give. */
static void planned_reference(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C, int upper,
                              hk_bmat *ref)
{
    const hk_backend *cpu = backend("cpu");
    bmat_copy_to(cpu, C, ref);
    for (int64_t k = 0; k < ref->nnzb * ref->br * ref->bc; k++)
        ref->val[k] = NAN;
    if (upper)
        HK_ASSERT_OK(cpu->bmat_spgemm_numeric_upper(A, B, ref));
    else
        HK_ASSERT_OK(cpu->bmat_spgemm_numeric(A, B, ref));
}

/* On backend be (A, B, C there; C's values overwritten): the plan of A B into C's pattern and
 * its product against ref's bytes, C's values NaN before. */
static void check_planned(const hk_backend *be, const hk_bmat *A, const hk_bmat *B, hk_bmat *C,
                          int upper, const hk_bmat *ref)
{
    void *plan = NULL;
    size_t bytes = 0;
    HK_ASSERT_OK(be->bmat_spgemm_plan(A, B, C, upper, &plan, &bytes));
    CU_ASSERT_FATAL(plan != NULL);
    CU_ASSERT(bytes > 0);
    const int64_t nv = C->nnzb * C->br * C->bc;
    be->vec_set(&(hk_vec){.be = be, .n = nv, .prec = HK_FP64, .data = C->val}, NAN);
    HK_ASSERT_OK(be->bmat_spgemm_numeric_plan(plan, A, B, C));
    CU_ASSERT(same_values(C, ref));
    /* a plan is refused for other patterns */
    hk_bmat wrong = *C;
    wrong.nnzb -= 1;
    CU_ASSERT_EQUAL(be->bmat_spgemm_numeric_plan(plan, A, B, &wrong), HK_ERR_ARG);
    CU_ASSERT(strstr(hk_error_message(), "plan was made for other patterns") != NULL);
    hk_error_clear();
    be->bmat_spgemm_plan_free(plan);
}

/* The CPU's plan of A P and R (A P) (whole and upper) of a real level: the numeric ops' bytes;
 * a product block outside C's pattern named by its block row. */
static void test_planned(void)
{
    const hk_backend *be = backend("cpu");
    hk_test_level L;
    hk_test_level_make(8, &L);
    hk_bmat X, Y, ref;
    bmat_copy_to(be, &L.AP, &X);
    planned_reference(&L.K, &L.P, &L.AP, 0, &ref);
    check_planned(be, &L.K, &L.P, &X, 0, &ref);
    hk_bmat_free(&ref);
    bmat_copy_to(be, &L.Ac, &Y);
    for (int upper = 0; upper < 2; upper++) {
        planned_reference(&L.R, &L.AP, &L.Ac, upper, &ref);
        check_planned(be, &L.R, &L.AP, &Y, upper, &ref);
        hk_bmat_free(&ref);
    }
    /* C's pattern without the last block of a row that has two: that row is named */
    int64_t row = -1;
    for (int64_t i = 0; i < X.nbrows && row < 0; i++)
        if (X.rowptr[i + 1] - X.rowptr[i] >= 2) row = i;
    CU_ASSERT_FATAL(row >= 0);
    const int64_t q = X.rowptr[row + 1] - 1;
    const int32_t keep = X.colind[q];
    X.colind[q] = X.colind[q - 1]; /* a duplicate column: the product's block is missing */
    void *plan = NULL;
    size_t bytes = 0;
    CU_ASSERT_EQUAL(be->bmat_spgemm_plan(&L.K, &L.P, &X, 0, &plan, &bytes), HK_ERR_ARG);
    char want[64];
    snprintf(want, sizeof want, "block row %lld", (long long)row);
    CU_ASSERT(strstr(hk_error_message(), want) != NULL);
    CU_ASSERT(plan == NULL);
    hk_error_clear();
    X.colind[q] = keep;
    hk_bmat_free(&X), hk_bmat_free(&Y);
    hk_test_level_free(&L);
}

/* A br x bc block matrix on the CPU with rows given by cols(i, k) (sorted, unique; n[i] of them)
 * and values from a fixed sequence in (-1, 1). */
static void synthetic_bmat(int br, int bc, int64_t nbr, int64_t nbc, const int64_t *rowptr,
                           const int32_t *colind, hk_bmat *M)
{
    HK_ASSERT_OK(hk_bmat_alloc(backend("cpu"), br, bc, nbr, nbc, rowptr[nbr], M));
    memcpy(M->rowptr, rowptr, (size_t)(nbr + 1) * sizeof *rowptr);
    memcpy(M->colind, colind, (size_t)rowptr[nbr] * sizeof *colind);
    for (int64_t k = 0; k < rowptr[nbr] * br * bc; k++)
        M->val[k] = sin(0.37 * (double)k + 0.11 * (double)br) * (1.0 + 1e-3 * (double)(k % 97));
}

/* The pattern of rows: row 0 every column (nbc; full0 = 0: columns 0 and 1), row i > 0 the
 * columns {i - 1, i, i + 1, 7i} modulo nbc, sorted and unique. */
static void synthetic_pattern(int64_t nbr, int64_t nbc, int full0, int64_t **rowptr,
                              int32_t **colind)
{
    int64_t *rp = malloc((size_t)(nbr + 1) * sizeof *rp);
    int32_t *ci = malloc((size_t)(nbc + 4 * nbr) * sizeof *ci);
    rp[0] = 0;
    for (int64_t i = 0; i < nbr; i++) {
        int64_t n = rp[i];
        if (i == 0 && full0) {
            for (int64_t j = 0; j < nbc; j++)
                ci[n++] = (int32_t)j;
        } else if (i == 0) {
            ci[n++] = 0;
            if (nbc > 1) ci[n++] = 1;
        } else {
            int32_t c[4] = {(int32_t)((i - 1) % nbc), (int32_t)(i % nbc), (int32_t)((i + 1) % nbc),
                            (int32_t)((7 * i) % nbc)};
            hk_isort_i32(c, 4);
            for (int e = 0; e < 4; e++)
                if (e == 0 || c[e] != c[e - 1]) ci[n++] = c[e];
        }
        rp[i + 1] = n;
    }
    *rowptr = rp, *colind = ci;
}

/* ---- the planned products with an operand in fp32 ------------------------------------------ */

/* M's values rounded to fp32 (stored in fp64), as fp32 levels round P. */
static void round_values(hk_bmat *M)
{
    for (int64_t k = 0; k < M->nnzb * M->br * M->bc; k++)
        M->val[k] = (double)(float)M->val[k];
}

/* M's values (a CPU matrix) as fp32 blocks stride floats apart on backend be, the padding NaN
 * (never to be read); the caller deallocates. */
static float *f32_blocks(const hk_backend *be, const hk_bmat *M, int stride)
{
    const int bb = M->br * M->bc;
    const size_t n = (size_t)M->nnzb * stride;
    float *h = malloc((n ? n : 1) * sizeof *h), *d = NULL;
    for (int64_t k = 0; k < M->nnzb; k++)
        for (int e = 0; e < stride; e++)
            h[(size_t)k * stride + e] = e < bb ? (float)M->val[(size_t)k * bb + e] : NAN;
    HK_ASSERT_OK(be->alloc((void **)&d, (n ? n : 1) * sizeof *d));
    if (n) HK_ASSERT_OK(be->copy_to(d, h, n * sizeof *h));
    free(h);
    return d;
}

/* On backend be: C = A B into C's pattern (upper: its blocks on and above the diagonal) by
 * bmat_spgemm_numeric_plan_f32 with A's values in fp32 (a_f32) or B's (blocks bstride floats
 * apart, the padding NaN), the fp64 copy of that operand NaN (so never read) and C NaN before:
 * the bytes of the CPU's numeric product of the fp64 A and B (whose values are fp32-exact).
 * Returns the op's result (HK_ERR_UNSUPPORTED accepted where want_ok is 0). */
static int check_planned_f32(const hk_backend *be, const hk_bmat *A, const hk_bmat *B,
                             const hk_bmat *C, int upper, int a_f32, int bstride, int want_ok)
{
    hk_bmat ref, dA, dB, dC;
    planned_reference(A, B, C, upper, &ref);
    bmat_copy_to(be, A, &dA), bmat_copy_to(be, B, &dB), bmat_copy_to(be, C, &dC);
    float *a32 = a_f32 ? f32_blocks(be, A, A->br * A->bc) : NULL;
    float *b32 = a_f32 ? NULL : f32_blocks(be, B, bstride);
    hk_bmat *gone = a_f32 ? &dA : &dB;
    be->vec_set(
        &(hk_vec){
            .be = be, .n = gone->nnzb * gone->br * gone->bc, .prec = HK_FP64, .data = gone->val},
        NAN);
    void *plan = NULL;
    size_t bytes = 0;
    HK_ASSERT_OK(be->bmat_spgemm_plan(&dA, &dB, &dC, upper, &plan, &bytes));
    CU_ASSERT(plan != NULL || !want_ok); /* cuda makes none for shapes without a kernel */
    be->vec_set(&(hk_vec){.be = be, .n = dC.nnzb * dC.br * dC.bc, .prec = HK_FP64, .data = dC.val},
                NAN);
    const int ierr = plan ? be->bmat_spgemm_numeric_plan_f32(plan, &dA, a32, &dB, b32, bstride, &dC)
                          : HK_ERR_UNSUPPORTED;
    if (want_ok) HK_ASSERT_OK(ierr);
    if (!ierr) {
        const int same = same_values(&dC, &ref);
        if (!same)
            printf("\n    %s: %d x %d . %d x %d with %s in fp32: not the fp64 product's bytes",
                   be->name, A->br, A->bc, B->br, B->bc, a_f32 ? "A" : "B");
        CU_ASSERT(same);
    } else {
        CU_ASSERT_EQUAL(ierr, HK_ERR_UNSUPPORTED);
        hk_error_clear();
    }
    if (plan) be->bmat_spgemm_plan_free(plan);
    if (a32) be->dealloc(a32);
    if (b32) be->dealloc(b32);
    hk_bmat_free(&ref), hk_bmat_free(&dA), hk_bmat_free(&dB), hk_bmat_free(&dC);
    return ierr;
}

/* A level's P rounded to fp32 (Pr), R = Pr^T (Rr) and A Pr (APr), on the CPU. */
static void rounded_level(const hk_test_level *L, hk_bmat *Pr, hk_bmat *Rr, hk_bmat *APr)
{
    const hk_backend *cpu = backend("cpu");
    bmat_copy_to(cpu, &L->P, Pr);
    round_values(Pr);
    bmat_copy_to(cpu, &L->R, Rr);
    HK_ASSERT_OK(cpu->bmat_transpose_numeric(Pr, Rr));
    bmat_copy_to(cpu, &L->AP, APr);
    HK_ASSERT_OK(cpu->bmat_spgemm_numeric(&L->K, Pr, APr));
}

/* The products of AMG's shapes on synthetic matrices (200 block rows): A P (B in fp32, padded
 * to a multiple of 4 floats) and R (A P) (A in fp32) with every block shape of the plan's
 * kernels, and with other strides; on backend be, each against the CPU's fp64 bytes. */
static void planned_f32_shapes(const hk_backend *be, int cuda)
{
    /* br, bk, bc; whether cuda has the variant with B in fp32 (A P's shapes), with A in fp32
     * (R (A P)'s) */
    static const int shape[][5] = {{1, 1, 1, 1, 1}, {2, 2, 3, 1, 0}, {3, 2, 3, 0, 1},
                                   {3, 3, 3, 1, 1}, {3, 3, 6, 1, 0}, {6, 3, 6, 0, 1},
                                   {6, 6, 6, 1, 1}, {2, 3, 4, 0, 0}};
    const int64_t n = 200;
    int64_t *rp = NULL;
    int32_t *ci = NULL;
    synthetic_pattern(n, n, 1, &rp, &ci);
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++) {
        const int br = shape[k][0], bk = shape[k][1], bc = shape[k][2];
        hk_bmat A, B, C = {0};
        synthetic_bmat(br, bk, n, n, rp, ci, &A);
        synthetic_bmat(bk, bc, n, n, rp, ci, &B);
        round_values(&A), round_values(&B);
        HK_ASSERT_OK(backend("cpu")->bmat_spgemm(&A, &B, &C));
        const int pad = (bk * bc + 3) / 4 * 4;
        const int b_ok = !cuda || shape[k][3], a_ok = !cuda || shape[k][4];
        CU_ASSERT_EQUAL(check_planned_f32(be, &A, &B, &C, 0, 0, pad, b_ok) == 0, b_ok);
        check_planned_f32(be, &A, &B, &C, 0, 0, pad + 4, !cuda); /* cuda: the padded stride only */
        CU_ASSERT_EQUAL(check_planned_f32(be, &A, &B, &C, 0, 1, 0, a_ok) == 0, a_ok);
        if (br == bc) CU_ASSERT_EQUAL(check_planned_f32(be, &A, &B, &C, 1, 1, 0, a_ok) == 0, a_ok);
        hk_bmat_free(&A), hk_bmat_free(&B), hk_bmat_free(&C);
    }
    free(rp), free(ci);
}

/* The planned products with an fp32 operand (bmat_spgemm_numeric_plan_f32) on the CPU: A P with
 * P rounded to fp32 and padded (20 floats a 3x6 block; 24 too), R (A P) with R in fp32 (whole and
 * upper), and synthetic products of every AMG shape: the bytes of bmat_spgemm_numeric_plan with
 * the values widened; a stride below the block refused. */
static void test_planned_f32(void)
{
    const hk_backend *be = backend("cpu");
    hk_test_level L;
    hk_test_level_make(8, &L);
    hk_bmat Pr, Rr, APr;
    rounded_level(&L, &Pr, &Rr, &APr);
    check_planned_f32(be, &L.K, &Pr, &L.AP, 0, 0, 20, 1);
    check_planned_f32(be, &L.K, &Pr, &L.AP, 0, 0, 24, 1);
    for (int upper = 0; upper < 2; upper++)
        check_planned_f32(be, &Rr, &APr, &L.Ac, upper, 1, 0, 1);
    /* a stride below the block */
    void *plan = NULL;
    size_t bytes = 0;
    hk_bmat C;
    bmat_copy_to(be, &L.AP, &C);
    HK_ASSERT_OK(be->bmat_spgemm_plan(&L.K, &Pr, &C, 0, &plan, &bytes));
    float *b32 = f32_blocks(be, &Pr, 20);
    CU_ASSERT_EQUAL(be->bmat_spgemm_numeric_plan_f32(plan, &L.K, NULL, &Pr, b32, 17, &C),
                    HK_ERR_ARG);
    CU_ASSERT(strstr(hk_error_message(), "stride 17") != NULL);
    hk_error_clear();
    be->dealloc(b32);
    be->bmat_spgemm_plan_free(plan);
    hk_bmat_free(&C), hk_bmat_free(&Pr), hk_bmat_free(&Rr), hk_bmat_free(&APr);
    hk_test_level_free(&L);
    planned_f32_shapes(be, 0);
}

/* vec_convert_blocks on backend be: fp64 blocks of 18 into fp32 blocks of 20 (rounded as
 * vec_convert rounds, the padding 0) and back (exact). */
static void convert_blocks_on(const hk_backend *be)
{
    const int64_t nb = 37;
    double *h = malloc((size_t)nb * 18 * sizeof *h), *back = malloc((size_t)nb * 18 * sizeof *back);
    float *f = malloc((size_t)nb * 20 * sizeof *f);
    for (int64_t k = 0; k < nb * 18; k++)
        h[k] = sin(0.3 * (double)k) * 1e3;
    hk_vec *x = NULL, *y = NULL, *z = NULL;
    HK_ASSERT_OK(hk_vec_create(be, nb * 18, HK_FP64, &x));
    HK_ASSERT_OK(hk_vec_create(be, nb * 20, HK_FP32, &y));
    HK_ASSERT_OK(hk_vec_create(be, nb * 18, HK_FP64, &z));
    HK_ASSERT_OK(hk_vec_upload(x, h));
    be->vec_set(y, NAN);
    HK_ASSERT_OK(be->vec_convert_blocks(y, 20, x, 18, 18));
    HK_ASSERT_OK(be->copy_from(f, y->data, (size_t)nb * 20 * sizeof *f));
    int ok = 1;
    for (int64_t k = 0; k < nb; k++)
        for (int e = 0; e < 20; e++)
            ok &= e < 18 ? f[k * 20 + e] == (float)h[k * 18 + e] : f[k * 20 + e] == 0.0f;
    CU_ASSERT(ok);
    HK_ASSERT_OK(be->vec_convert_blocks(z, 18, y, 20, 18));
    HK_ASSERT_OK(be->copy_from(back, z->data, (size_t)nb * 18 * sizeof *back));
    ok = 1;
    for (int64_t k = 0; k < nb * 18; k++)
        ok &= back[k] == (double)(float)h[k];
    CU_ASSERT(ok);
    CU_ASSERT_EQUAL(be->vec_convert_blocks(z, 18, y, 20, 19), HK_ERR_ARG);
    hk_error_clear();
    /* vec_round_fp32: x rounded in place as vec_convert rounds */
    HK_ASSERT_OK(be->vec_round_fp32(x));
    HK_ASSERT_OK(be->copy_from(back, x->data, (size_t)nb * 18 * sizeof *back));
    ok = 1;
    for (int64_t k = 0; k < nb * 18; k++)
        ok &= back[k] == (double)(float)h[k];
    CU_ASSERT(ok);
    CU_ASSERT_EQUAL(be->vec_round_fp32(y), HK_ERR_ARG);
    hk_error_clear();
    hk_vec_destroy(x), hk_vec_destroy(y), hk_vec_destroy(z);
    free(h), free(back), free(f);
}

static void test_convert_blocks(void)
{
    convert_blocks_on(backend("cpu"));
}

/* ---- the hierarchy after an update against a fresh set-up ---------------------------------- */

/* Every level's stored operator and transfer operators of a and b: the same bytes (tol = 0), or
 * within tol relative to each array's largest entry. Returns the largest relative difference. */
static double compare_levels(hk_solver *a, hk_solver *b, double tol)
{
    hk_amg_stats sa, sb;
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(a), &sa));
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(b), &sb));
    CU_ASSERT_EQUAL_FATAL(sa.nlevels, sb.nlevels);
    double worst = 0;
    for (int l = 0; l < sa.nlevels; l++) {
        hk_bmat Pa, Ra, Pb, Rb;
        hk_fmt Aa, Ab;
        HK_ASSERT_OK(hk_pc_amg_level(hk_solver_get_pc(a), l, &Pa, &Ra, &Aa));
        HK_ASSERT_OK(hk_pc_amg_level(hk_solver_get_pc(b), l, &Pb, &Rb, &Ab));
        CU_ASSERT_EQUAL_FATAL(Aa.stored, Ab.stored);
        CU_ASSERT_EQUAL_FATAL(Pa.nnzb, Pb.nnzb);
        const struct {
            const double *x, *y;
            int64_t n;
        } arr[] = {{Aa.val, Ab.val, Aa.stored},
                   {Pa.val, Pb.val, Pa.nnzb * Pa.br * Pa.bc},
                   {Ra.val, Rb.val, Ra.nnzb * Ra.br * Ra.bc}};
        for (size_t k = 0; k < 3; k++) {
            double big = 0, diff = 0;
            for (int64_t e = 0; e < arr[k].n; e++) {
                big = fmax(big, fabs(arr[k].x[e]));
                diff = fmax(diff, fabs(arr[k].x[e] - arr[k].y[e]));
            }
            const double rel = big > 0 ? diff / big : diff;
            worst = fmax(worst, rel);
            const int same =
                arr[k].n == 0 || memcmp(arr[k].x, arr[k].y, (size_t)arr[k].n * sizeof(double)) == 0;
            CU_ASSERT(tol == 0 ? same : rel <= tol);
        }
        hk_bmat_free(&Pa), hk_bmat_free(&Ra), hk_bmat_free(&Pb), hk_bmat_free(&Rb);
        hk_fmt_free(&Aa), hk_fmt_free(&Ab);
    }
    return worst;
}

/* K with node j's dofs decoupled (a support): its row and column zero but the diagonal, the
 * pattern unchanged (explicit zeros). */
static void decouple_node(const hk_bcsr *K, int64_t j, hk_bcsr *D)
{
    HK_ASSERT_OK(hk_bcsr_copy(K, D));
    const int b = K->bs;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int64_t q = K->rowptr[i]; q < K->rowptr[i + 1]; q++) {
            if (i != j && K->colind[q] != j) continue;
            for (int r = 0; r < b; r++)
                for (int c = 0; c < b; c++)
                    if (!(i == j && K->colind[q] == j && r == c)) D->val[(q * b + r) * b + c] = 0;
        }
}

/* On backend be: update to S K S has a fresh set-up's bytes; an update with a node decoupled
 * converges; an update back to K has the first hierarchy's bytes. */
static void check_hierarchy(const char *be, const char *extra)
{
    const int m = 10;
    char opts[256];
    snprintf(opts, sizeof opts, "backend=%s pc=amg tol=1e-9 pc.amg.format=bsr %s", be, extra);
    hk_bcsr K = {0}, K2 = {0}, K3 = {0};
    double *xyz = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(m, m, m, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(m, m, m, &xyz));
    hk_nearnull nn = {.dim = 3, .coords = xyz};
    hk_test_node_scaled(&K, &K2);
    decouple_node(&K, K.nbrows / 2, &K3);
    hk_solver *s = hk_test_solver(&K, &nn, opts), *s0 = hk_test_solver(&K, &nn, opts);
    HK_ASSERT_OK(hk_solver_update_values(s, &K2));
    hk_solver *f = hk_test_solver(&K2, &nn, opts);
    compare_levels(s, f, 0);
    HK_ASSERT_OK(hk_solver_update_values(s, &K3));
    const int64_t n = K.nbrows * 3;
    double *b = malloc((size_t)n * sizeof *b), *x = calloc((size_t)n, sizeof *x);
    for (int64_t i = 0; i < n; i++)
        b[i] = sin(0.1 * (double)i);
    hk_result res;
    HK_ASSERT_OK(hk_solver_solve(s, b, x, &res));
    CU_ASSERT(hk_reason_converged(res.reason));
    HK_ASSERT_OK(hk_solver_update_values(s, &K));
    compare_levels(s, s0, 0);
    hk_solver_destroy(s), hk_solver_destroy(s0), hk_solver_destroy(f);
    hk_bcsr_free(&K), hk_bcsr_free(&K2), hk_bcsr_free(&K3);
    free(xyz), free(b), free(x);
}

static void test_hierarchy(void)
{
    check_hierarchy("cpu", "");
    check_hierarchy("cpu", "pc.amg.precision=fp64");
    setenv("HOOKE_AMG_GALERKIN", "full", 1); /* the whole product's path too */
    check_hierarchy("cpu", "pc.amg.precision=fp64");
    unsetenv("HOOKE_AMG_GALERKIN");
}

/* ---- pc.amg.update=prolongator: P and R kept ------------------------------------------------ */

/* K with every block between two nodes of the region x > 1/2 (both ends in it) times f:
 * K + (f - 1) E K E for E the region's indicator, SPD for f > 0 (E K E is a principal block of
 * K) and on K's pattern: the region's material f times stiffer, the elements across its
 * boundary in between; f >= 1 (a softer region this way need not be SPD). The supports (x = 0)
 * are outside. */
static void region_stiffer(const hk_bcsr *K, const double *xyz, double f, hk_bcsr *D)
{
    HK_ASSERT_OK(hk_bcsr_copy(K, D));
    const int b = K->bs, bb = b * b;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int64_t q = K->rowptr[i]; q < K->rowptr[i + 1]; q++)
            if (xyz[3 * i] > 0.5 && xyz[3 * (int64_t)K->colind[q]] > 0.5)
                for (int e = 0; e < bb; e++)
                    D->val[q * bb + e] *= f;
}

/* Every coarse operator of s (pc.amg.format=bsr) against R_l (A_l P_l) formed by the CPU's ops
 * from s's own P_l and R_l with A_0 = K (the symmetric product's pattern, upper blocks and
 * mirror, or with full the whole product): the same bytes (fp32 levels: the product rounded to
 * fp32, the level's stored values; the chain goes on in fp64, as the set-up's). With fp32 levels
 * P_l and R_l are those the cycle applies, so A_{l+1} is their exact Galerkin operator. On cuda
 * this compares the device's products with the CPU's. */
static void check_galerkin_chain(hk_solver *s, const hk_bcsr *K, int full)
{
    const hk_backend *cpu = backend("cpu");
    const hk_pc *pc = hk_solver_get_pc(s);
    hk_amg_stats st;
    HK_ASSERT_OK(hk_pc_amg_info(pc, &st));
    hk_bmat A = {0};
    HK_ASSERT_OK(hk_bmat_upload(cpu, K, &A));
    for (int l = 0; l + 1 < st.nlevels; l++) {
        hk_bmat P, R, Pn, Rn, AP = {0}, C = {0};
        hk_fmt F, Fn;
        HK_ASSERT_OK(hk_pc_amg_level(pc, l, &P, &R, &F));
        HK_ASSERT_OK(hk_pc_amg_level(pc, l + 1, &Pn, &Rn, &Fn));
        HK_ASSERT_OK(cpu->bmat_spgemm(&A, &P, &AP));
        if (full) {
            HK_ASSERT_OK(cpu->bmat_spgemm(&R, &AP, &C));
        } else {
            HK_ASSERT_OK(cpu->bmat_spgemm_pattern(&R, &AP, &C));
            HK_ASSERT_OK(cpu->bmat_spgemm_numeric_upper(&R, &AP, &C));
            HK_ASSERT_OK(cpu->bmat_mirror_lower(&C));
        }
        const int64_t nv = C.nnzb * C.br * C.bc;
        CU_ASSERT_EQUAL_FATAL(Fn.fmt, HK_FMT_BSR);
        CU_ASSERT_EQUAL_FATAL(Fn.stored, nv);
        int same = memcmp(Fn.colind, C.colind, (size_t)C.nnzb * sizeof *C.colind) == 0;
        if (st.fp32)
            for (int64_t k = 0; k < nv; k++)
                same &= Fn.val[k] == (double)(float)C.val[k];
        else
            same &= memcmp(Fn.val, C.val, (size_t)nv * sizeof *C.val) == 0;
        if (!same) printf("\n    level %d's operator differs from R (A P) on the cpu", l + 1);
        CU_ASSERT(same);
        hk_bmat_free(&A);
        A = C;
        hk_bmat_free(&AP), hk_bmat_free(&P), hk_bmat_free(&R), hk_bmat_free(&Pn),
            hk_bmat_free(&Rn);
        hk_fmt_free(&F), hk_fmt_free(&Fn);
    }
    hk_bmat_free(&A);
}

/* Level l's P and R of a and b: the same bytes. */
static void compare_transfer(hk_solver *a, hk_solver *b)
{
    hk_amg_stats sa;
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(a), &sa));
    for (int l = 0; l + 1 < sa.nlevels; l++) {
        hk_bmat Pa, Ra, Pb, Rb;
        hk_fmt Aa, Ab;
        HK_ASSERT_OK(hk_pc_amg_level(hk_solver_get_pc(a), l, &Pa, &Ra, &Aa));
        HK_ASSERT_OK(hk_pc_amg_level(hk_solver_get_pc(b), l, &Pb, &Rb, &Ab));
        const size_t np = (size_t)Pa.nnzb * Pa.br * Pa.bc, nr = (size_t)Ra.nnzb * Ra.br * Ra.bc;
        CU_ASSERT(Pa.nnzb == Pb.nnzb && !memcmp(Pa.val, Pb.val, np * sizeof(double)));
        CU_ASSERT(Ra.nnzb == Rb.nnzb && !memcmp(Ra.val, Rb.val, nr * sizeof(double)));
        hk_bmat_free(&Pa), hk_bmat_free(&Ra), hk_bmat_free(&Pb), hk_bmat_free(&Rb);
        hk_fmt_free(&Aa), hk_fmt_free(&Ab);
    }
}

/* Every level's P and R of s: with fp32 levels every value fp32-exact (P rounded as it is made),
 * with fp64 levels some value not; R = P^T (the CPU's transpose: the same bytes) either way. */
static void check_transfer_fp32(hk_solver *s)
{
    const hk_pc *pc = hk_solver_get_pc(s);
    hk_amg_stats st;
    HK_ASSERT_OK(hk_pc_amg_info(pc, &st));
    int exact = 1;
    for (int l = 0; l + 1 < st.nlevels; l++) {
        hk_bmat P, R, T;
        hk_fmt F;
        HK_ASSERT_OK(hk_pc_amg_level(pc, l, &P, &R, &F));
        for (int64_t k = 0; k < P.nnzb * P.br * P.bc; k++)
            exact &= P.val[k] == (double)(float)P.val[k];
        for (int64_t k = 0; k < R.nnzb * R.br * R.bc; k++)
            exact &= R.val[k] == (double)(float)R.val[k];
        bmat_copy_to(backend("cpu"), &R, &T);
        HK_ASSERT_OK(backend("cpu")->bmat_transpose_numeric(&P, &T));
        CU_ASSERT(same_values(&T, &R));
        hk_bmat_free(&P), hk_bmat_free(&R), hk_bmat_free(&T);
        hk_fmt_free(&F);
    }
    CU_ASSERT_EQUAL(exact, st.fp32);
}

/* Set-ups on backend be with fp32 and fp64 levels, pc.amg.update aggregates and prolongator:
 * fp32 levels' P and R fp32-exact, the coarse operators the Galerkin ones of them (the CPU's
 * R (A P) bytes, rounded as stored), after the set-up and after an update to a stiffer region;
 * fp64 levels unchanged in kind. */
static void check_fp32_transfer(const char *be)
{
    const int m = 9;
    static const char *const extra[] = {"", "pc.amg.update=prolongator", "pc.amg.precision=fp64",
                                        "pc.amg.precision=fp64 pc.amg.update=prolongator"};
    hk_bcsr K = {0}, K2 = {0};
    double *xyz = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(m, m, m, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(m, m, m, &xyz));
    hk_nearnull nn = {.dim = 3, .coords = xyz};
    region_stiffer(&K, xyz, 10.0, &K2);
    for (size_t v = 0; v < sizeof extra / sizeof extra[0]; v++) {
        char opts[256];
        snprintf(opts, sizeof opts, "backend=%s pc=amg pc.amg.format=bsr %s", be, extra[v]);
        hk_solver *s = hk_test_solver(&K, &nn, opts);
        check_transfer_fp32(s);
        check_galerkin_chain(s, &K, 0);
        HK_ASSERT_OK(hk_solver_update_values(s, &K2));
        check_transfer_fp32(s);
        check_galerkin_chain(s, &K2, 0);
        hk_solver_destroy(s);
    }
    hk_bcsr_free(&K), hk_bcsr_free(&K2);
    free(xyz);
}

static void test_fp32_transfer(void)
{
    check_fp32_transfer("cpu");
}

/* The bytes kept for the re-set-ups (hk_amg_stats.bytes_reuse) of pc.amg.update=prolongator
 * beyond the default's, after an update, on backend be: fp32 levels keep P in fp32, each block
 * padded to a multiple of 4 floats, and nothing of R (the cycle's fp32 R is read): below the
 * fp64 copies of P and R kept before; fp64 levels keep nothing more (they apply P and R). */
static void check_kept_bytes(const char *be)
{
    const int m = 10;
    hk_bcsr K = {0};
    double *xyz = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(m, m, m, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(m, m, m, &xyz));
    hk_nearnull nn = {.dim = 3, .coords = xyz};
    for (int fp64 = 0; fp64 < 2; fp64++) {
        char oa[256], op[320];
        snprintf(oa, sizeof oa, "backend=%s pc=amg pc.amg.format=bsr%s", be,
                 fp64 ? " pc.amg.precision=fp64" : "");
        snprintf(op, sizeof op, "%s pc.amg.update=prolongator", oa);
        hk_solver *a = hk_test_solver(&K, &nn, oa), *p = hk_test_solver(&K, &nn, op);
        HK_ASSERT_OK(hk_solver_update_values(a, &K));
        HK_ASSERT_OK(hk_solver_update_values(p, &K));
        hk_amg_stats sa, sp;
        HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(a), &sa));
        HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(p), &sp));
        CU_ASSERT(sp.last_update_kept);
        size_t padded = 0, old = 0;
        for (int l = 0; l + 1 < sp.nlevels; l++) {
            hk_bmat P, R;
            hk_fmt F;
            HK_ASSERT_OK(hk_pc_amg_level(hk_solver_get_pc(p), l, &P, &R, &F));
            padded += (size_t)P.nnzb * (size_t)((P.br * P.bc + 3) / 4 * 4) * sizeof(float);
            old += (size_t)(P.nnzb * P.br * P.bc + R.nnzb * R.br * R.bc) * sizeof(double);
            hk_bmat_free(&P), hk_bmat_free(&R);
            hk_fmt_free(&F);
        }
        const size_t more = sp.bytes_reuse - sa.bytes_reuse;
        CU_ASSERT(sp.bytes_reuse >= sa.bytes_reuse);
        CU_ASSERT_EQUAL(more, fp64 ? 0 : padded);
        if (!fp64) CU_ASSERT(padded < old);
        if (getenv("HOOKE_TEST_VERBOSE"))
            printf("\n    %s %s levels: prolongator keeps %.1f bytes/DOF more than aggregates "
                   "(fp64 P and R: %.1f); %.1f bytes/DOF in all",
                   be, fp64 ? "fp64" : "fp32", (double)more / (double)(K.nbrows * 3),
                   fp64 ? 0.0 : (double)old / (double)(K.nbrows * 3), sp.bytes_per_dof);
        hk_solver_destroy(a), hk_solver_destroy(p);
    }
    hk_bcsr_free(&K);
    free(xyz);
}

static void test_kept_bytes(void)
{
    check_kept_bytes("cpu");
}

/* Solve from x = 0; the iterations, the answer in x. */
static int solve_count(hk_solver *s, const hk_bcsr *K, const double *b, double *x, double tol)
{
    hk_result res;
    memset(x, 0, (size_t)K->nbrows * K->bs * sizeof *x);
    HK_ASSERT_OK(hk_solver_solve(s, b, x, &res));
    CU_ASSERT(hk_reason_converged(res.reason));
    CU_ASSERT(hk_test_relres(K, b, x) < tol);
    return res.iterations;
}

/* On backend be with pc.amg.update=prolongator and options extra: the set-up is the default's
 * (bytes); an update with K itself keeps every level's bytes, the spectral bounds and the
 * solve's bytes; an update to K with a region 10 times stiffer keeps P and R (bytes), its
 * coarse operators are R (A P) with the new A (fp64 levels: against the CPU's ops) and it
 * converges; an update back to K has the set-up's bytes again; an update with other supports
 * makes P and R again (not kept) and converges, and an update back to K then gives the set-up's
 * hierarchy. */
static void check_prolongator(const char *be, const char *extra)
{
    const int m = 10;
    char opts[256], keep[320];
    snprintf(opts, sizeof opts, "backend=%s pc=amg tol=1e-9 pc.amg.format=bsr %s", be, extra);
    snprintf(keep, sizeof keep, "%s pc.amg.update=prolongator", opts);
    hk_bcsr K = {0}, K2 = {0}, K3 = {0};
    double *xyz = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(m, m, m, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(m, m, m, &xyz));
    hk_nearnull nn = {.dim = 3, .coords = xyz};
    region_stiffer(&K, xyz, 10.0, &K2);
    decouple_node(&K, K.nbrows / 2, &K3);
    const int64_t n = K.nbrows * 3;
    double *b = malloc((size_t)n * sizeof *b), *x0 = malloc((size_t)n * sizeof *x0),
           *x1 = malloc((size_t)n * sizeof *x1);
    for (int64_t i = 0; i < n; i++)
        b[i] = sin(0.1 * (double)i);
    hk_solver *s = hk_test_solver(&K, &nn, keep), *s0 = hk_test_solver(&K, &nn, opts);
    hk_amg_stats st, s0t;
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(s), &st));
    CU_ASSERT(st.update_keeps_p);
    compare_levels(s, s0, 0);
    const int it0 = solve_count(s, &K, b, x0, 1e-8);

    /* K itself: the set-up's hierarchy, bounds and solve */
    HK_ASSERT_OK(hk_solver_update_values(s, &K));
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(s), &st));
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(s0), &s0t));
    CU_ASSERT(st.last_update_kept);
    compare_levels(s, s0, 0);
    for (int l = 0; l < st.nlevels; l++)
        CU_ASSERT_EQUAL(st.rho[l], s0t.rho[l]);
    CU_ASSERT_EQUAL(solve_count(s, &K, b, x1, 1e-8), it0);
    CU_ASSERT(memcmp(x0, x1, (size_t)n * sizeof *x0) == 0);

    /* a region 10 times stiffer: P and R kept, A_c = R (A P) */
    HK_ASSERT_OK(hk_solver_update_values(s, &K2));
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(s), &st));
    CU_ASSERT(st.last_update_kept);
    compare_transfer(s, s0);
    check_galerkin_chain(s, &K2, getenv("HOOKE_AMG_GALERKIN") != NULL);
    check_transfer_fp32(s);
    const int it_kept = solve_count(s, &K2, b, x1, 1e-8);
    hk_solver *f = hk_test_solver(&K2, &nn, opts);
    const int it_fresh = solve_count(f, &K2, b, x1, 1e-8);
    hk_solver_destroy(f);
    CU_ASSERT(it_kept <= 2 * it_fresh); /* the set-up's P stays a fit prolongator here */
    if (getenv("HOOKE_TEST_VERBOSE"))
        printf("\n    %s %s: K %d its; region 10x stiffer: P kept %d its, fresh set-up %d", be,
               extra, it0, it_kept, it_fresh);

    /* back to K: the set-up's bytes again (nothing of K2 stays) */
    HK_ASSERT_OK(hk_solver_update_values(s, &K));
    compare_levels(s, s0, 0);
    CU_ASSERT_EQUAL(solve_count(s, &K, b, x1, 1e-8), it0);
    CU_ASSERT(memcmp(x0, x1, (size_t)n * sizeof *x0) == 0);

    /* other supports: P and R made again; back to K: made again, the set-up's hierarchy */
    HK_ASSERT_OK(hk_solver_update_values(s, &K3));
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(s), &st));
    CU_ASSERT(!st.last_update_kept);
    solve_count(s, &K3, b, x1, 1e-8);
    HK_ASSERT_OK(hk_solver_update_values(s, &K));
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(s), &st));
    CU_ASSERT(!st.last_update_kept);
    compare_levels(s, s0, 0);
    HK_ASSERT_OK(hk_solver_update_values(s, &K)); /* the set-up's supports: kept again */
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(s), &st));
    CU_ASSERT(st.last_update_kept);
    compare_levels(s, s0, 0);
    CU_ASSERT_EQUAL(st.updates, 6);
    hk_solver_destroy(s), hk_solver_destroy(s0);
    hk_bcsr_free(&K), hk_bcsr_free(&K2), hk_bcsr_free(&K3);
    free(xyz), free(b), free(x0), free(x1);
}

static void test_prolongator(void)
{
    check_prolongator("cpu", "");
    check_prolongator("cpu", "pc.amg.precision=fp64");
    check_prolongator("cpu", "pc.amg.precision=fp64 pc.amg.smoother=l1-jacobi pc.amg.cycle=w");
    setenv("HOOKE_AMG_GALERKIN", "full", 1); /* the whole product's path too */
    check_prolongator("cpu", "pc.amg.precision=fp64");
    unsetenv("HOOKE_AMG_GALERKIN");
    setenv("HOOKE_AMG_UPDATE_VALUES", "transient", 1); /* A P and the fp64 R made by each update */
    check_prolongator("cpu", "");
    check_prolongator("cpu", "pc.amg.precision=fp64");
    unsetenv("HOOKE_AMG_UPDATE_VALUES");
}

/* pc.amg.update=prolongator with fp32 levels that overflow in the solve (b 2^130 times too
 * large): the fallback builds the fp64 levels from the kept P and R (which the levels then apply
 * in fp64), converges; a later update to a stiffer region keeps them and converges. */
static void check_prolongator_fallback(const char *be)
{
    const int m = 9;
    hk_bcsr K = {0}, K2 = {0};
    double *xyz = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(m, m, m, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(m, m, m, &xyz));
    hk_nearnull nn = {.dim = 3, .coords = xyz};
    region_stiffer(&K, xyz, 10.0, &K2);
    const int64_t n = K.nbrows * 3;
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        b[i] = ldexp(sin(0.1 * (double)i), 130);
    char opts[128];
    snprintf(opts, sizeof opts, "backend=%s pc=amg pc.amg.update=prolongator", be);
    hk_solver *s = hk_test_solver(&K, &nn, opts);
    hk_result res;
    hk_amg_stats st;
    memset(x, 0, (size_t)n * sizeof *x);
    HK_ASSERT_OK(hk_solver_solve(s, b, x, &res));
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(s), &st));
    CU_ASSERT(hk_reason_converged(res.reason));
    CU_ASSERT(hk_test_relres(&K, b, x) < 2e-8);
    CU_ASSERT_EQUAL(res.setups, 2);
    CU_ASSERT(!st.fp32 && st.last_update_kept);
    HK_ASSERT_OK(hk_solver_update_values(s, &K2));
    HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(s), &st));
    CU_ASSERT(!st.fp32 && st.last_update_kept);
    solve_count(s, &K2, b, x, 2e-8);
    hk_solver_destroy(s);
    hk_bcsr_free(&K), hk_bcsr_free(&K2);
    free(xyz), free(b), free(x);
}

static void test_prolongator_fallback(void)
{
    check_prolongator_fallback("cpu");
    setenv("HOOKE_AMG_UPDATE_VALUES", "transient", 1); /* the fp64 R made for the fp64 levels */
    check_prolongator_fallback("cpu");
    unsetenv("HOOKE_AMG_UPDATE_VALUES");
}

/* pc.amg.update_lanczos=4: the set-up's bytes and bounds are the default's; an update to a
 * region 10 and 1000 times stiffer takes the fine level's bound from 4 steps warm-started at the
 * kept Ritz vector: within 1 % of 60 cold steps' (the same factor, a fresh set-up of the new K),
 * the coarse levels' bounds those of the cold steps (bytes); converges; in both update modes. */
static void test_update_lanczos(void)
{
    const int m = 12;
    hk_bcsr K = {0}, K2 = {0};
    double *xyz = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(m, m, m, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(m, m, m, &xyz));
    hk_nearnull nn = {.dim = 3, .coords = xyz};
    const int64_t n = K.nbrows * 3;
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        b[i] = sin(0.1 * (double)i);
    static const char *const mode[] = {"prolongator", "aggregates"};
    static const double factor[] = {10, 1000};
    for (int v = 0; v < 2; v++) {
        char opts[256], cold[256];
        const char *base = "backend=cpu pc=amg tol=1e-9 pc.amg.format=bsr pc.amg.precision=fp64";
        snprintf(opts, sizeof opts, "%s pc.amg.update=%s pc.amg.update_lanczos=4", base, mode[v]);
        snprintf(cold, sizeof cold, "%s pc.amg.update=%s", base, mode[v]);
        hk_solver *s = hk_test_solver(&K, &nn, opts), *c = hk_test_solver(&K, &nn, cold);
        hk_amg_stats st, ct, ft;
        HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(s), &st));
        HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(c), &ct));
        compare_levels(s, c, 0);
        for (int l = 0; l < st.nlevels; l++)
            CU_ASSERT_EQUAL(st.rho[l], ct.rho[l]);
        for (int k = 0; k < 2; k++) {
            region_stiffer(&K, xyz, factor[k], &K2);
            char o60[320];
            snprintf(o60, sizeof o60, "%s pc.amg.lanczos=60", base);
            hk_solver *f = hk_test_solver(&K2, &nn, o60);
            HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(f), &ft));
            HK_ASSERT_OK(hk_solver_update_values(s, &K2));
            HK_ASSERT_OK(hk_solver_update_values(c, &K2));
            HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(s), &st));
            HK_ASSERT_OK(hk_pc_amg_info(hk_solver_get_pc(c), &ct));
            CU_ASSERT(st.rho[0] >= 0.99 * ft.rho[0]);
            for (int l = 1; l < st.nlevels; l++)
                CU_ASSERT_EQUAL(st.rho[l], ct.rho[l]);
            if (getenv("HOOKE_TEST_VERBOSE"))
                printf("\n    %s, region %gx stiffer: fine-level bound warm 4 steps %.5f, cold 10 "
                       "%.5f, cold 60 %.5f",
                       mode[v], factor[k], st.rho[0], ct.rho[0], ft.rho[0]);
            solve_count(s, &K2, b, x, 1e-8);
            hk_solver_destroy(f);
            hk_bcsr_free(&K2);
        }
        hk_solver_destroy(s), hk_solver_destroy(c);
    }
    free(xyz), free(b), free(x);
    hk_bcsr_free(&K);
}

/* pc.amg.update by name: a bad value is one sentence naming the option and the choices. */
static void test_update_option(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(4, 4, 4, &K));
    hk_options *o = NULL;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu pc=amg pc.amg.update=prolongater"));
    CU_ASSERT_EQUAL(hk_solver_create(&K, o, &s), HK_ERR_OPTION);
    const char *msg = hk_error_message();
    CU_ASSERT(strstr(msg, "pc.amg.update=prolongater") && strstr(msg, "aggregates, prolongator"));
    hk_error_clear();
    HK_ASSERT_OK(hk_options_parse(o, "pc.amg.update=prolongator pc.amg.update_lanczos=1"));
    CU_ASSERT_EQUAL(hk_solver_create(&K, o, &s), HK_ERR_OPTION);
    CU_ASSERT(strstr(hk_error_message(), "pc.amg.update_lanczos=1 is out of range") != NULL);
    hk_error_clear();
    HK_ASSERT_OK(hk_options_parse(o, "pc.amg.update_lanczos=0"));
    setenv("HOOKE_AMG_UPDATE_VALUES", "no", 1);
    CU_ASSERT_EQUAL(hk_solver_create(&K, o, &s), HK_ERR_ARG);
    CU_ASSERT(strstr(hk_error_message(), "HOOKE_AMG_UPDATE_VALUES=no") != NULL);
    hk_error_clear();
    unsetenv("HOOKE_AMG_UPDATE_VALUES");
    hk_options_destroy(o);
    hk_bcsr_free(&K);
}

HK_SUITE(amg_update,
         {"numeric halves: P in place and R into the kept pattern have the whole ops' bytes",
          test_numeric_ops},
         {"planned products (A P, R (A P) whole and upper): the numeric ops' bytes; a block "
          "outside C's pattern named",
          test_planned},
         {"update to S K S: every level has a fresh set-up's bytes; supports changed and back",
          test_hierarchy},
         {"pc.amg.update=prolongator: K again the set-up's bytes; a stiffer region keeps P and R, "
          "A_c = R (A P), converges; other supports make P again",
          test_prolongator},
         {"pc.amg.update=prolongator: fp32 levels overflowing fall back to fp64 with the kept P",
          test_prolongator_fallback},
         {"planned products with an fp32 operand (P padded, R): the fp64 product's bytes",
          test_planned_f32},
         {"vec_convert_blocks: fp64 blocks into padded fp32 ones and back", test_convert_blocks},
         {"fp32 levels: P and R fp32-exact, A_c the Galerkin operator of them (set-up, update)",
          test_fp32_transfer},
         {"pc.amg.update=prolongator: the kept bytes (fp32 P padded, no R) below fp64 P and R",
          test_kept_bytes},
         {"pc.amg.update_lanczos: the fine level's bound warm-started, within 1 % of 60 steps",
          test_update_lanczos},
         {"pc.amg.update, pc.amg.update_lanczos: a bad value named with the choices",
          test_update_option})

/* ---- device ------------------------------------------------------------------------------- */

#ifdef HOOKE_HAVE_CUDA
static void numeric_ops_on_cuda(void)
{
    const hk_backend *gpu = backend("cuda");
    hk_test_level L;
    hk_test_level_make(20, &L);
    hk_bmat dK, dT, dAT, dP, dR, dAP, dAc;
    bmat_copy_to(gpu, &L.K, &dK);
    bmat_copy_to(gpu, &L.T, &dT);
    bmat_copy_to(gpu, &L.AT, &dAT);
    bmat_copy_to(gpu, &L.P, &dP);
    bmat_copy_to(gpu, &L.R, &dR);
    bmat_copy_to(gpu, &L.AP, &dAP);
    bmat_copy_to(gpu, &L.Ac, &dAc);
    hk_vec *dD = NULL;
    HK_ASSERT_OK(hk_vec_create(gpu, L.Dinv->n, HK_FP64, &dD));
    HK_ASSERT_OK(hk_vec_upload(dD, L.Dinv->data));
    /* the numeric products into the kept patterns, then the whole products; A T by the
     * dedicated product for a tentative T, then by the general one */
    const int64_t nat = dAT.nnzb * dAT.br * dAT.bc; /* every value overwritten, both times */
    gpu->vec_set(&(hk_vec){.be = gpu, .n = nat, .prec = HK_FP64, .data = dAT.val}, NAN);
    HK_ASSERT_OK(gpu->amg_tentative_product_numeric(&dK, &dT, &dAT));
    CU_ASSERT(same_values(&dAT, &L.AT));
    gpu->vec_set(&(hk_vec){.be = gpu, .n = nat, .prec = HK_FP64, .data = dAT.val}, NAN);
    HK_ASSERT_OK(gpu->bmat_spgemm_numeric(&dK, &dT, &dAT));
    CU_ASSERT(same_values(&dAT, &L.AT));
    HK_ASSERT_OK(gpu->amg_smooth_prolongator_numeric(&dAT, &dT, dD, L.w, &dAT)); /* in place */
    CU_ASSERT(same_values(&dAT, &L.P));
    HK_ASSERT_OK(gpu->bmat_transpose_numeric(&dP, &dR));
    CU_ASSERT(same_values(&dR, &L.R));
    HK_ASSERT_OK(gpu->bmat_spgemm_numeric(&dK, &dP, &dAP));
    CU_ASSERT(same_values(&dAP, &L.AP));
    HK_ASSERT_OK(gpu->bmat_spgemm_numeric(&dR, &dAP, &dAc));
    CU_ASSERT(same_values(&dAc, &L.Ac));
    /* the symmetric Galerkin product: upper blocks and mirror, the CPU's bytes */
    hk_bmat S;
    bmat_copy_to(backend("cpu"), &L.Ac, &S);
    HK_ASSERT_OK(backend("cpu")->bmat_spgemm_numeric_upper(&L.R, &L.AP, &S));
    HK_ASSERT_OK(backend("cpu")->bmat_mirror_lower(&S));
    const int64_t nac = dAc.nnzb * dAc.br * dAc.bc;
    gpu->vec_set(&(hk_vec){.be = gpu, .n = nac, .prec = HK_FP64, .data = dAc.val}, NAN);
    HK_ASSERT_OK(gpu->bmat_spgemm_numeric_upper(&dR, &dAP, &dAc));
    HK_ASSERT_OK(gpu->bmat_mirror_lower(&dAc));
    CU_ASSERT(same_values(&dAc, &S));
    hk_bmat_free(&S);
    hk_bmat W = {0};
    HK_ASSERT_OK(gpu->bmat_spgemm(&dR, &dAP, &W));
    CU_ASSERT(same_values(&W, &L.Ac));
    hk_bmat_free(&W);
    HK_ASSERT_OK(gpu->bmat_spgemm(&dK, &dT, &W));
    CU_ASSERT(same_values(&W, &L.AT));
    hk_bmat_free(&W);
    HK_ASSERT_OK(gpu->amg_tentative_product(&dK, &dT, &W));
    CU_ASSERT(W.nnzb == L.AT.nnzb && same_values(&W, &L.AT));
    hk_bmat_free(&W);
    hk_bmat *M[] = {&dK, &dT, &dAT, &dP, &dR, &dAP, &dAc};
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++)
        hk_bmat_free(M[i]);
    hk_vec_destroy(dD);
    hk_test_level_free(&L);
}

/* The numeric ops on cuda: the CPU's bytes. */
static void test_cuda_numeric_ops(void)
{
    numeric_ops_on_cuda();
}

/* The planned product on cuda of A B (CPU matrices; C = bmat_spgemm's pattern) by every
 * HOOKE_SPGEMM kernel (the default, pairs-sorted, pairs, row, stationary; each plan made under
 * its value): the CPU's bytes. */
static void planned_on_cuda(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C, int upper)
{
    static const char *const kernels[] = {NULL, "pairs-sorted", "pairs", "row", "stationary"};
    const hk_backend *gpu = backend("cuda");
    hk_bmat ref, dA, dB, dC;
    planned_reference(A, B, C, upper, &ref);
    bmat_copy_to(gpu, A, &dA);
    bmat_copy_to(gpu, B, &dB);
    bmat_copy_to(gpu, C, &dC);
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        if (kernels[k])
            setenv("HOOKE_SPGEMM", kernels[k], 1);
        else
            unsetenv("HOOKE_SPGEMM");
        check_planned(gpu, &dA, &dB, &dC, upper, &ref);
    }
    unsetenv("HOOKE_SPGEMM");
    hk_bmat_free(&ref), hk_bmat_free(&dA), hk_bmat_free(&dB), hk_bmat_free(&dC);
}

/* The planned products on cuda: A P and R (A P) (whole, upper) of elasticity3d:20's level, and
 * 3x3 . 3x6 and 3x3 . 3x3 products whose first row of C holds 1500 blocks (27000 and 13500
 * doubles: longer than any shared-memory row of the other kernels), with B's first row as long
 * and with B's rows short: the CPU's bytes. */
static void test_cuda_planned(void)
{
    hk_test_level L;
    hk_test_level_make(20, &L);
    planned_on_cuda(&L.K, &L.P, &L.AP, 0);
    planned_on_cuda(&L.R, &L.AP, &L.Ac, 0);
    planned_on_cuda(&L.R, &L.AP, &L.Ac, 1);
    { /* values that name no kernel (entries, and the removed ones): refused, the valid ones
       * listed; a plan under the other order refused; the plans' bytes */
        const hk_backend *gpu = backend("cuda");
        hk_bmat dA, dB, dC, dR, dAP, dAc;
        bmat_copy_to(gpu, &L.K, &dA), bmat_copy_to(gpu, &L.P, &dB), bmat_copy_to(gpu, &L.AP, &dC);
        bmat_copy_to(gpu, &L.R, &dR), bmat_copy_to(gpu, &L.AP, &dAP);
        bmat_copy_to(gpu, &L.Ac, &dAc);
        void *plan = NULL, *splan = NULL;
        size_t bytes = 0, sbytes = 0;
        HK_ASSERT_OK(gpu->bmat_spgemm_plan(&dA, &dB, &dC, 0, &splan, &sbytes)); /* default */
        setenv("HOOKE_SPGEMM", "pairs", 1);
        HK_ASSERT_OK(gpu->bmat_spgemm_plan(&dA, &dB, &dC, 0, &plan, &bytes));
        static const char *const stale[] = {"entries", "pairs-block", "pairs-block-sorted",
                                            "pairs-ilv"};
        for (size_t k = 0; k < sizeof stale / sizeof stale[0]; k++) {
            char want[64];
            snprintf(want, sizeof want, "HOOKE_SPGEMM=%s: set it to", stale[k]);
            setenv("HOOKE_SPGEMM", stale[k], 1);
            CU_ASSERT_EQUAL(gpu->bmat_spgemm_numeric_plan(plan, &dA, &dB, &dC), HK_ERR_ARG);
            const char *msg = hk_error_message();
            CU_ASSERT(strstr(msg, want) != NULL);
            /* the valid names after "set it to" (the sentence starts with the stale one) */
            const char *valid = strstr(msg, "set it to");
            CU_ASSERT_FATAL(valid != NULL);
            CU_ASSERT(strstr(valid, "pairs-sorted") && strstr(valid, "pairs (") &&
                      strstr(valid, "row") && strstr(valid, "stationary") &&
                      !strstr(valid, "pairs-block") && !strstr(valid, "pairs-ilv"));
            hk_error_clear();
            /* the plan too */
            void *none = NULL;
            size_t nb = 0;
            CU_ASSERT_EQUAL(gpu->bmat_spgemm_plan(&dA, &dB, &dC, 0, &none, &nb), HK_ERR_ARG);
            CU_ASSERT(none == NULL);
            hk_error_clear();
        }
        /* the plan's order is set when it is made: the other order refused */
        static const char *const other[] = {NULL, "pairs-sorted", "pairs"};
        for (size_t k = 0; k < sizeof other / sizeof other[0]; k++) {
            if (other[k])
                setenv("HOOKE_SPGEMM", other[k], 1);
            else
                unsetenv("HOOKE_SPGEMM");
            const int in_order = other[k] && !strcmp(other[k], "pairs");
            char want[96];
            snprintf(want, sizeof want, "HOOKE_SPGEMM=%s: this plan was made",
                     other[k] ? other[k] : "unset");
            CU_ASSERT_EQUAL(gpu->bmat_spgemm_numeric_plan(in_order ? splan : plan, &dA, &dB, &dC),
                            HK_ERR_ARG);
            CU_ASSERT(strstr(hk_error_message(), want) != NULL);
            hk_error_clear();
        }
        /* the sorted order: 4 bytes a block of C more in the whole product's plan; the upper
         * product's list of blocks is sorted in place, so the same bytes */
        CU_ASSERT_EQUAL(sbytes, bytes + 4 * (size_t)dC.nnzb);
        void *uplan = NULL, *usplan = NULL;
        size_t ubytes = 0, usbytes = 0;
        setenv("HOOKE_SPGEMM", "pairs", 1);
        HK_ASSERT_OK(gpu->bmat_spgemm_plan(&dR, &dAP, &dAc, 1, &uplan, &ubytes));
        unsetenv("HOOKE_SPGEMM");
        HK_ASSERT_OK(gpu->bmat_spgemm_plan(&dR, &dAP, &dAc, 1, &usplan, &usbytes));
        CU_ASSERT(ubytes > 0);
        CU_ASSERT_EQUAL(usbytes, ubytes);
        gpu->bmat_spgemm_plan_free(uplan), gpu->bmat_spgemm_plan_free(usplan);
        gpu->bmat_spgemm_plan_free(splan);
        gpu->bmat_spgemm_plan_free(plan);
        hk_bmat *M[] = {&dA, &dB, &dC, &dR, &dAP, &dAc};
        for (size_t i = 0; i < sizeof M / sizeof M[0]; i++)
            hk_bmat_free(M[i]);
    }
    hk_test_level_free(&L);
    const int64_t n = 1500;
    int64_t *rp = NULL;
    int32_t *ci = NULL;
    int64_t *srp = NULL;
    int32_t *sci = NULL;
    synthetic_pattern(n, n, 1, &rp, &ci);
    synthetic_pattern(n, n, 0, &srp, &sci);
    hk_bmat A, B6, B3, S6, S3, C6 = {0}, C3 = {0}, D6 = {0}, D3 = {0};
    synthetic_bmat(3, 3, n, n, rp, ci, &A);
    synthetic_bmat(3, 6, n, n, rp, ci, &B6);
    synthetic_bmat(3, 3, n, n, rp, ci, &B3);
    synthetic_bmat(3, 6, n, n, srp, sci, &S6);
    synthetic_bmat(3, 3, n, n, srp, sci, &S3);
    HK_ASSERT_OK(backend("cpu")->bmat_spgemm(&A, &B6, &C6));
    HK_ASSERT_OK(backend("cpu")->bmat_spgemm(&A, &B3, &C3));
    HK_ASSERT_OK(backend("cpu")->bmat_spgemm(&A, &S6, &D6));
    HK_ASSERT_OK(backend("cpu")->bmat_spgemm(&A, &S3, &D3));
    CU_ASSERT(C6.rowptr[1] - C6.rowptr[0] == n);
    CU_ASSERT(D6.rowptr[1] - D6.rowptr[0] == n);
    planned_on_cuda(&A, &B6, &C6, 0);
    planned_on_cuda(&A, &B3, &C3, 0);
    planned_on_cuda(&A, &B3, &C3, 1);
    planned_on_cuda(&A, &S6, &D6, 0);
    planned_on_cuda(&A, &S3, &D3, 1);
    hk_bmat *M[] = {&A, &B6, &B3, &S6, &S3, &C6, &C3, &D6, &D3};
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++)
        hk_bmat_free(M[i]);
    free(rp), free(ci), free(srp), free(sci);
}

/* The fp32-operand planned products on cuda (bmat_spgemm_numeric_plan_f32): A P with P rounded
 * and padded (20 floats a 3x6 block) and R (A P) with R in fp32 (whole, upper) of
 * elasticity3d:20's level under the plan kernels (unset, pairs-sorted, pairs), and synthetic
 * products of every shape with a variant: the CPU's fp64 bytes, C NaN before; shapes, strides
 * and HOOKE_SPGEMM values (row, stationary) without a kernel refused as unsupported. */
static void test_cuda_planned_f32(void)
{
    const hk_backend *gpu = backend("cuda");
    hk_test_level L;
    hk_test_level_make(20, &L);
    hk_bmat Pr, Rr, APr;
    rounded_level(&L, &Pr, &Rr, &APr);
    static const char *const kernels[] = {NULL, "pairs-sorted", "pairs", "row", "stationary"};
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        if (kernels[k])
            setenv("HOOKE_SPGEMM", kernels[k], 1);
        else
            unsetenv("HOOKE_SPGEMM");
        const int ok = k < 3;
        CU_ASSERT_EQUAL(check_planned_f32(gpu, &L.K, &Pr, &L.AP, 0, 0, 20, ok) == 0, ok);
        for (int upper = 0; upper < 2; upper++)
            CU_ASSERT_EQUAL(check_planned_f32(gpu, &Rr, &APr, &L.Ac, upper, 1, 0, ok) == 0, ok);
    }
    unsetenv("HOOKE_SPGEMM");
    hk_bmat_free(&Pr), hk_bmat_free(&Rr), hk_bmat_free(&APr);
    hk_test_level_free(&L);
    planned_f32_shapes(gpu, 1);
    convert_blocks_on(gpu);
}

/* On elasticity3d:12 with options extra, the cuda update against the CPU's (the same K and new
 * values: S K S, or with stiffer a region 10 times stiffer): every level within tol. */
static void cuda_against_cpu(const char *extra, double tol, int stiffer)
{
    const int m = 12;
    char oc[256], og[256];
    snprintf(oc, sizeof oc, "backend=cpu pc=amg pc.amg.format=bsr %s", extra);
    snprintf(og, sizeof og, "backend=cuda pc=amg pc.amg.format=bsr %s", extra);
    hk_bcsr K = {0}, K2 = {0};
    double *xyz = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(m, m, m, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(m, m, m, &xyz));
    hk_nearnull nn = {.dim = 3, .coords = xyz};
    if (stiffer)
        region_stiffer(&K, xyz, 10.0, &K2);
    else
        hk_test_node_scaled(&K, &K2);
    hk_solver *c = hk_test_solver(&K, &nn, oc), *g = hk_test_solver(&K, &nn, og);
    HK_ASSERT_OK(hk_solver_update_values(c, &K2));
    HK_ASSERT_OK(hk_solver_update_values(g, &K2));
    const double rel = compare_levels(c, g, tol);
    printf("\n    %s: cuda update against cpu update, largest relative difference %.1e", extra,
           rel);
    hk_solver_destroy(c), hk_solver_destroy(g);
    hk_bcsr_free(&K), hk_bcsr_free(&K2);
    free(xyz);
}

/* The cuda update against a fresh cuda set-up (bytes) and the CPU's update (rounding: the
 * spectral bounds' sums differ between the backends). */
static void test_cuda_hierarchy(void)
{
    static const char *const extra[] = {"", "pc.amg.precision=fp64"};
    setenv("HOOKE_AMG_GALERKIN", "full", 1); /* the whole product's path too */
    check_hierarchy("cuda", "");
    unsetenv("HOOKE_AMG_GALERKIN");
    for (int v = 0; v < 2; v++) {
        check_hierarchy("cuda", extra[v]);
        cuda_against_cpu(extra[v], v ? 1e-10 : 1e-6, 0);
    }
}

/* Set-ups one after another in one process: the later ones take their temporaries from the
 * memory pool's pages that the earlier ones left with their contents (not fresh memory), and
 * must build the same bytes; an update to K itself too. */
static void test_cuda_repeat(void)
{
    const int m = 14;
    hk_bcsr K = {0};
    double *xyz = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(m, m, m, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(m, m, m, &xyz));
    hk_nearnull nn = {.dim = 3, .coords = xyz};
    const char *opts = "backend=cuda pc=amg pc.amg.format=bsr";
    hk_solver *a = hk_test_solver(&K, &nn, opts);
    hk_solver *b = hk_test_solver(&K, &nn, opts);
    compare_levels(a, b, 0);
    hk_solver_destroy(b);
    hk_solver *c = hk_test_solver(&K, &nn, opts);
    HK_ASSERT_OK(hk_solver_update_values(c, &K));
    compare_levels(a, c, 0);
    hk_solver_destroy(c);
    hk_solver_destroy(a);
    hk_bcsr_free(&K);
    free(xyz);
}

/* pc.amg.update=prolongator on cuda: check_prolongator (every coarse operator after the update
 * to a stiffer region has the bytes of the CPU's R (A P) from the same P and R, rounded as
 * stored with fp32 levels; also under HOOKE_SPGEMM=row, where the fp32 P and R are widened for
 * the product), fp32 levels' P and R fp32-exact and their kept bytes, and the cuda update's
 * hierarchy against the CPU's update (the same options, K and new values) to rounding: the set-up's
 * spectral bounds differ in their last digits between the backends, and so P. */
static void test_cuda_prolongator(void)
{
    check_prolongator("cuda", "");
    check_prolongator("cuda", "pc.amg.precision=fp64");
    setenv("HOOKE_AMG_UPDATE_VALUES", "transient", 1); /* with the plans' pairs, the default */
    check_prolongator("cuda", "");
    check_prolongator("cuda", "pc.amg.precision=fp64"); /* R (A P): the CPU's bytes */
    check_prolongator_fallback("cuda");
    unsetenv("HOOKE_AMG_UPDATE_VALUES");
    setenv("HOOKE_AMG_GALERKIN", "full", 1);
    check_prolongator("cuda", "pc.amg.precision=fp64");
    unsetenv("HOOKE_AMG_GALERKIN");
    check_prolongator_fallback("cuda");
    /* no planned kernel under row: the update widens the fp32 P and R for the numeric product */
    setenv("HOOKE_SPGEMM", "row", 1);
    check_prolongator("cuda", "");
    unsetenv("HOOKE_SPGEMM");
    cuda_against_cpu("pc.amg.update=prolongator", 1e-6, 1);
    check_fp32_transfer("cuda");
    check_kept_bytes("cuda");
    cuda_against_cpu("pc.amg.update=prolongator pc.amg.precision=fp64", 1e-10, 1);
}

HK_DEVICE_SUITE(cuda_amg_update,
                {"numeric ops on cuda (A T both ways, P in place, R, A P, R A P whole and "
                 "symmetric): the CPU's bytes",
                 test_cuda_numeric_ops},
                {"planned products on cuda (A P, R (A P) whole and upper, rows of 1500 blocks) "
                 "by every HOOKE_SPGEMM kernel: the CPU's bytes",
                 test_cuda_planned},
                {"planned products on cuda with an fp32 operand (P padded, R): the CPU's fp64 "
                 "bytes; shapes and kernels without a variant refused",
                 test_cuda_planned_f32},
                {"cuda set-ups in a row (temporaries from reused pool pages): the same bytes",
                 test_cuda_repeat},
                {"cuda update: a fresh cuda set-up's bytes, the CPU update's to rounding",
                 test_cuda_hierarchy},
                {"cuda pc.amg.update=prolongator: the set-up's bytes with K, R (A P) the CPU's "
                 "bytes with a stiffer region, the CPU update's to rounding",
                 test_cuda_prolongator})
#endif
