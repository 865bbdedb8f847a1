/* Ops of pc=amg beyond aggregation (solver/hk_impl.h): amg_rigid_modes (near-null space on the
 * backend), bmat_spmv (rectangular-block SpMV of the transfer operators), and the CUDA dense
 * coarse inverse by tiled Cholesky.
 *
 * Suite amg_ops (CPU): the modes against translations and cross products e_k x x computed
 * here, decoupled rows zero; bmat_spmv against a dense product (3x6, 6x3, 2x5, 1x1 blocks,
 * empty rows, fp64 and fp32), misuse rejected; bmat_spgemm_numeric into bmat_spgemm's pattern
 * gives its bytes, a missing block is named; amg_tentative_product (A T for a tentative T, and
 * its numeric half) gives bmat_spgemm's pattern and bytes, a T row with two blocks and a missing
 * block named; amg_start_vector is its formula.
 * Suite cuda_amg_ops (device): the CUDA ops equal the CPU's on the same inputs (modes
 * identical, SpMV and inverse to rounding, the first bad pivot the same, the numeric product,
 * A T for a tentative T and the start vector byte for byte), with the times of bmat_spmv
 * against the scalar CSR of the same operator, of the dense inverse, of the numeric product
 * against the whole one and of A T against bmat_spgemm. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#include "test_amg_level.h"

static double urand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / (double)(1u << 24) * 2.0 - 1.0;
}

static const hk_backend *backend(const char *name)
{
    const hk_backend *be = NULL;
    hk_backend_get(name, &be);
    return be;
}

/* Random block CSR on the cpu backend: per_row distinct sorted columns per row (fewer when
 * nbc is small); rows with i % 7 == 3 empty when with_empty. */
static void rand_bmat(int64_t nbr, int64_t nbc, int br, int bc, int per_row, int with_empty,
                      unsigned seed, hk_bmat *A)
{
    uint32_t s = seed * 2654435761u + 11u;
    int64_t cap = nbr * (per_row < nbc ? per_row : nbc);
    CU_ASSERT_EQUAL_FATAL(hk_bmat_alloc(backend("cpu"), br, bc, nbr, nbc, cap, A), 0);
    int64_t q = 0;
    A->rowptr[0] = 0;
    for (int64_t i = 0; i < nbr; i++) {
        if (!(with_empty && i % 7 == 3)) {
            /* a random start and stride: distinct, sorted after a rotation */
            const int k = (int)(per_row < nbc ? per_row : nbc);
            const int64_t stride = nbc / k;
            const int64_t off = (int64_t)((urand(&s) + 1) / 2 * (double)stride) % stride;
            for (int t = 0; t < k; t++)
                A->colind[q++] = (int32_t)(off + t * stride);
        }
        A->rowptr[i + 1] = q;
    }
    A->nnzb = q;
    for (int64_t k = 0; k < q * br * bc; k++)
        A->val[k] = urand(&s);
}

/* ---- rigid-body modes -------------------------------------------------------------------- */

static void check_modes(int bs, int with_coords)
{
    const hk_backend *be = backend("cpu");
    const int64_t nb = 57, n = nb * bs;
    const int nns = with_coords ? (bs == 3 ? 6 : 3) : bs;
    uint32_t s = 5u + (unsigned)bs;
    double *xyz = malloc((size_t)n * sizeof *xyz), *dec = calloc((size_t)n, sizeof *dec);
    for (int64_t i = 0; i < n; i++)
        xyz[i] = 3 * urand(&s) + 1;
    dec[4] = dec[n - 1] = 1;
    const double c[3] = {0.5, -0.25, 2.0}, scale = 0.3;
    hk_vec *X = NULL, *D = NULL;
    HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &X));
    HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &D));
    HK_ASSERT_OK(hk_vec_upload(X, xyz));
    HK_ASSERT_OK(hk_vec_upload(D, dec));
    double *B = malloc((size_t)n * nns * sizeof *B);
    HK_ASSERT_OK(be->amg_rigid_modes(nb, bs, with_coords ? X : NULL, c, scale, D, B));
    long wrong = 0;
    for (int64_t i = 0; i < nb; i++) {
        double x[3] = {0, 0, 0};
        for (int a = 0; a < bs && with_coords; a++)
            x[a] = (xyz[i * bs + a] - c[a]) * scale;
        for (int k = 0; k < nns; k++) {
            double u[3] = {0, 0, 0}; /* mode k at this node, dofs 0..2 */
            if (k < bs && k < 3) u[k] = 1;
            if (with_coords && bs == 2 && k == 2) u[0] = -x[1], u[1] = x[0];
            if (with_coords && bs == 3 && k >= 3) { /* e_{k-3} x x */
                const double e[3] = {k == 3, k == 4, k == 5};
                u[0] = e[1] * x[2] - e[2] * x[1];
                u[1] = e[2] * x[0] - e[0] * x[2];
                u[2] = e[0] * x[1] - e[1] * x[0];
            }
            for (int a = 0; a < bs; a++) {
                double want = a < 3 ? u[a] : (double)(a == k);
                if (dec[i * bs + a] != 0) want = 0;
                wrong += fabs(B[i * bs + a + k * n] - want) > 1e-15 * (1 + fabs(want));
            }
        }
    }
    CU_ASSERT_EQUAL(wrong, 0);
    /* coordinates with a block size other than 2 or 3 are misuse */
    if (with_coords) {
        CU_ASSERT_EQUAL(be->amg_rigid_modes(n, 1, X, c, scale, NULL, B), HK_ERR_ARG);
        hk_error_clear();
    }
    free(xyz), free(dec), free(B);
    hk_vec_destroy(X), hk_vec_destroy(D);
}

static void test_rigid_modes(void)
{
    check_modes(3, 1);
    check_modes(2, 1);
    check_modes(3, 0);
    check_modes(5, 0);
}

/* ---- bmat_spmv ----------------------------------------------------------------------------- */

static const struct {
    int br, bc, per_row, empty;
    int64_t nbr, nbc;
} spmv_cases[] = {{3, 6, 9, 1, 300, 80},
                  {6, 3, 120, 1, 40, 900},
                  {2, 5, 4, 0, 100, 60},
                  {1, 1, 3, 1, 500, 500},
                  {6, 6, 27, 0, 200, 200}};

static void test_bmat_spmv(void)
{
    const hk_backend *be = backend("cpu");
    for (size_t t = 0; t < sizeof spmv_cases / sizeof spmv_cases[0]; t++) {
        hk_bmat A;
        rand_bmat(spmv_cases[t].nbr, spmv_cases[t].nbc, spmv_cases[t].br, spmv_cases[t].bc,
                  spmv_cases[t].per_row, spmv_cases[t].empty, (unsigned)(3 + t), &A);
        const int64_t m = A.nbrows * A.br, n = A.nbcols * A.bc;
        uint32_t s = 99u + (unsigned)t;
        double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)m * sizeof *y);
        double *ref = calloc((size_t)m, sizeof *ref), *ref32 = calloc((size_t)m, sizeof *ref);
        const int64_t nv = A.nnzb * A.br * A.bc;
        float *v32 = malloc((size_t)(nv ? nv : 1) * sizeof *v32);
        for (int64_t k = 0; k < nv; k++)
            v32[k] = (float)A.val[k];
        for (int64_t j = 0; j < n; j++)
            x[j] = urand(&s);
        for (int64_t bi = 0; bi < A.nbrows; bi++) /* the dense product, entry by entry */
            for (int64_t q = A.rowptr[bi]; q < A.rowptr[bi + 1]; q++)
                for (int r = 0; r < A.br; r++)
                    for (int c = 0; c < A.bc; c++) {
                        const int64_t e = (q * A.br + r) * A.bc + c;
                        const double xj = x[(int64_t)A.colind[q] * A.bc + c];
                        ref[bi * A.br + r] += A.val[e] * xj;
                        ref32[bi * A.br + r] += (double)v32[e] * xj;
                    }
        for (int p = 0; p < 2; p++) {
            const hk_precision prec = p ? HK_FP32 : HK_FP64;
            hk_vec *X, *Y;
            HK_ASSERT_OK(hk_vec_create(be, n, prec, &X));
            HK_ASSERT_OK(hk_vec_create(be, m, prec, &Y));
            HK_ASSERT_OK(hk_vec_upload(X, x));
            HK_ASSERT_OK(be->vec_set(Y, 7.0)); /* every entry written, empty rows too */
            HK_ASSERT_OK(be->bmat_spmv(&A, NULL, X, Y));
            HK_ASSERT_OK(hk_vec_download(Y, y));
            CU_ASSERT(hk_test_reldiff(y, ref, (long)m) < (p ? 1e-6 : 1e-14));
            /* fp32 values: the product of the rounded values, summed in fp64 */
            HK_ASSERT_OK(be->bmat_spmv(&A, v32, X, Y));
            HK_ASSERT_OK(hk_vec_download(Y, y));
            CU_ASSERT(hk_test_reldiff(y, ref32, (long)m) < (p ? 1e-6 : 1e-14));
            /* x of the wrong length */
            CU_ASSERT_EQUAL(be->bmat_spmv(&A, NULL, Y, Y), m == n ? 0 : HK_ERR_ARG);
            hk_error_clear();
            hk_vec_destroy(X), hk_vec_destroy(Y);
        }
        free(x), free(y), free(ref), free(ref32), free(v32);
        hk_bmat_free(&A);
    }
}

/* ---- C = A B into a kept pattern; the spectral estimate's start vector -------------------- */

/* The products of the AMG set-up: (rows, inner, columns in blocks; block shapes; fill). */
static const struct {
    int64_t nbr, nbk, nbc;
    int br, bk, bc, per_a, per_b, empty;
} numeric_cases[] = {{300, 300, 60, 3, 3, 6, 9, 4, 0},  /* A T, A P */
                     {60, 300, 60, 6, 3, 6, 20, 8, 1},  /* R (A P) */
                     {80, 80, 20, 6, 6, 6, 12, 5, 0},   /* coarse levels */
                     {500, 500, 500, 1, 1, 1, 5, 5, 1}, /* Poisson */
                     {90, 70, 40, 2, 5, 3, 6, 7, 1},    /* a generic shape */
                     {40, 40, 40, 3, 3, 3, 40, 40, 0},  /* dense rows */
                     {200, 200, 60, 3, 3, 6, 3, 4, 0}}; /* A's row 0 full (see numeric_pair) */

/* C = A B by bmat_spgemm, and the same values by bmat_spgemm_numeric into C's pattern. */
static void numeric_pair(const hk_backend *be, size_t t, hk_bmat *A, hk_bmat *B, hk_bmat *C,
                         hk_bmat *N)
{
    rand_bmat(numeric_cases[t].nbr, numeric_cases[t].nbk, numeric_cases[t].br, numeric_cases[t].bk,
              numeric_cases[t].per_a, numeric_cases[t].empty, (unsigned)(31 + t), A);
    if (t == sizeof numeric_cases / sizeof numeric_cases[0] - 1) { /* row 0: every column */
        hk_bmat W;
        const int64_t extra = A->nbcols - (A->rowptr[1] - A->rowptr[0]), bb = A->br * A->bc;
        HK_ASSERT_OK(hk_bmat_alloc(be, A->br, A->bc, A->nbrows, A->nbcols, A->nnzb + extra, &W));
        W.rowptr[0] = 0;
        for (int64_t i = 0; i < A->nbrows; i++)
            W.rowptr[i + 1] = A->rowptr[i + 1] + extra;
        for (int64_t j = 0; j < A->nbcols; j++)
            W.colind[j] = (int32_t)j;
        memcpy(W.colind + A->nbcols, A->colind + A->rowptr[1],
               (size_t)(A->nnzb - A->rowptr[1]) * sizeof *W.colind);
        uint32_t seed = 5u;
        for (int64_t k = 0; k < A->nbcols * bb; k++)
            W.val[k] = urand(&seed);
        memcpy(W.val + A->nbcols * bb, A->val + A->rowptr[1] * bb,
               (size_t)((A->nnzb - A->rowptr[1]) * bb) * sizeof *W.val);
        hk_bmat_free(A);
        *A = W;
    }
    rand_bmat(numeric_cases[t].nbk, numeric_cases[t].nbc, numeric_cases[t].bk, numeric_cases[t].bc,
              numeric_cases[t].per_b, numeric_cases[t].empty, (unsigned)(47 + t), B);
    HK_ASSERT_OK(be->bmat_spgemm(A, B, C));
    HK_ASSERT_OK(hk_bmat_alloc(be, C->br, C->bc, C->nbrows, C->nbcols, C->nnzb, N));
    memcpy(N->rowptr, C->rowptr, (size_t)(C->nbrows + 1) * sizeof *N->rowptr);
    memcpy(N->colind, C->colind, (size_t)C->nnzb * sizeof *N->colind);
    for (int64_t k = 0; k < C->nnzb * C->br * C->bc; k++)
        N->val[k] = 1e300; /* every value overwritten */
}

static void test_spgemm_numeric(void)
{
    const hk_backend *be = backend("cpu");
    for (size_t t = 0; t < sizeof numeric_cases / sizeof numeric_cases[0]; t++) {
        hk_bmat A, B, C, N;
        numeric_pair(be, t, &A, &B, &C, &N);
        HK_ASSERT_OK(be->bmat_spgemm_numeric(&A, &B, &N));
        CU_ASSERT(memcmp(N.val, C.val, (size_t)C.nnzb * C.br * C.bc * sizeof(double)) == 0);
        /* a pattern without one of the product's blocks: named by its row */
        int64_t row = -1;
        for (int64_t i = 0; i < N.nbrows && row < 0; i++)
            if (N.rowptr[i + 1] - N.rowptr[i] >= 2) row = i;
        CU_ASSERT_FATAL(row >= 0);
        const int64_t q = N.rowptr[row + 1] - 1;
        const int32_t keep = N.colind[q];
        N.colind[q] = N.colind[q - 1]; /* the row's last block column is gone */
        CU_ASSERT_EQUAL(be->bmat_spgemm_numeric(&A, &B, &N), HK_ERR_ARG);
        char want[64];
        snprintf(want, sizeof want, "block row %lld", (long long)row);
        CU_ASSERT(strstr(hk_error_message(), want) != NULL);
        hk_error_clear();
        N.colind[q] = keep;
        /* shapes that do not fit */
        hk_bmat wrong = N;
        wrong.bc += 1;
        CU_ASSERT_EQUAL(be->bmat_spgemm_numeric(&A, &B, &wrong), HK_ERR_ARG);
        hk_error_clear();
        hk_bmat_free(&A), hk_bmat_free(&B), hk_bmat_free(&C), hk_bmat_free(&N);
    }
}

/* ---- C = A T for a tentative prolongator T ------------------------------------------------ */

/* A tentative prolongator's shape on the cpu backend: nb rows of b x nns blocks, node k in
 * aggregate k / 8 (local: neighbouring nodes share one) or (k * 7919) % nagg (scattered: a row
 * of A meets many), every 13th node (k % 13 == 5) in none (an empty row); row two_at (>= 0)
 * gets a second block, which no tentative prolongator has. Random values. */
static void tentative_like(int64_t nb, int b, int nns, int scattered, int64_t two_at, unsigned seed,
                           hk_bmat *T)
{
    const int64_t nagg = (nb + 7) / 8;
    uint32_t s = seed * 2654435761u + 5u;
    CU_ASSERT_EQUAL_FATAL(hk_bmat_alloc(backend("cpu"), b, nns, nb, nagg, nb + 1, T), 0);
    int64_t q = 0;
    T->rowptr[0] = 0;
    for (int64_t k = 0; k < nb; k++) {
        const int32_t a = (int32_t)(scattered ? (k * 7919) % nagg : k / 8);
        if (k % 13 != 5 || k == two_at) T->colind[q++] = a;
        if (k == two_at && nagg > 1) {
            if (a + 1 < nagg)
                T->colind[q++] = a + 1;
            else /* sorted: the second one first */
                T->colind[q - 1] = a - 1, T->colind[q++] = a;
        }
        T->rowptr[k + 1] = q;
    }
    T->nnzb = q;
    for (int64_t k = 0; k < q * b * nns; k++)
        T->val[k] = urand(&s);
}

/* C's pattern and values equal D's (D on any backend). */
static int same_bmat(const hk_bmat *D, const hk_bmat *C)
{
    if (D->nbrows != C->nbrows || D->nbcols != C->nbcols || D->nnzb != C->nnzb || D->br != C->br ||
        D->bc != C->bc)
        return 0;
    const size_t nv = (size_t)C->nnzb * C->br * C->bc;
    int64_t *rp = malloc((size_t)(C->nbrows + 1) * sizeof *rp);
    int32_t *ci = malloc((size_t)(C->nnzb ? C->nnzb : 1) * sizeof *ci);
    double *v = malloc((nv ? nv : 1) * sizeof *v);
    HK_ASSERT_OK(D->be->copy_from(rp, D->rowptr, (size_t)(C->nbrows + 1) * sizeof *rp));
    if (C->nnzb) HK_ASSERT_OK(D->be->copy_from(ci, D->colind, (size_t)C->nnzb * sizeof *ci));
    if (nv) HK_ASSERT_OK(D->be->copy_from(v, D->val, nv * sizeof *v));
    const int same = !memcmp(rp, C->rowptr, (size_t)(C->nbrows + 1) * sizeof *rp) &&
                     !memcmp(ci, C->colind, (size_t)C->nnzb * sizeof *ci) &&
                     !memcmp(v, C->val, nv * sizeof *v);
    free(rp), free(ci), free(v);
    return same;
}

/* An error naming block row `row` was recorded (and is cleared). */
static int names_row(int64_t row)
{
    char want[64];
    snprintf(want, sizeof want, "block row %lld", (long long)row);
    const int ok = strstr(hk_error_message(), want) != NULL;
    hk_error_clear();
    return ok;
}

/* amg_tentative_product (and its numeric half) on backend be against the cpu's bmat_spgemm on
 * the host A and T: pattern and bytes; a T row with two blocks and a pattern without one of
 * the product's blocks are named by their rows. ms (may be NULL): the times of the whole and the
 * numeric product and of bmat_spgemm and bmat_spgemm_numeric on be (best of 3). */
static void check_tentative_product(const hk_backend *be, const hk_bmat *A, const hk_bmat *T,
                                    double ms[4])
{
    const hk_backend *cpu = backend("cpu");
    hk_bmat C, dA, dT, dC = {0}, dN;
    HK_ASSERT_OK(cpu->bmat_spgemm(A, T, &C));
    hk_test_bmat_to(be, A, &dA);
    hk_test_bmat_to(be, T, &dT);
    HK_ASSERT_OK(be->amg_tentative_product(&dA, &dT, &dC));
    CU_ASSERT(same_bmat(&dC, &C));
    hk_bmat_free(&dC);
    hk_test_bmat_to(be, &C, &dN);
    const int64_t nv = C.nnzb * C.br * C.bc;
    if (nv) be->vec_set(&(hk_vec){.be = be, .n = nv, .prec = HK_FP64, .data = dN.val}, NAN);
    HK_ASSERT_OK(be->amg_tentative_product_numeric(&dA, &dT, &dN));
    CU_ASSERT(same_bmat(&dN, &C));
    if (ms) {
        for (int k = 0; k < 4; k++)
            ms[k] = 1e30;
        for (int rep = 0; rep < 3; rep++)
            for (int k = 0; k < 4; k++) {
                be->sync();
                const double t0 = hk_time();
                if (k == 0) HK_ASSERT_OK(be->amg_tentative_product(&dA, &dT, &dC));
                if (k == 1) HK_ASSERT_OK(be->amg_tentative_product_numeric(&dA, &dT, &dN));
                if (k == 2) HK_ASSERT_OK(be->bmat_spgemm(&dA, &dT, &dC));
                if (k == 3) HK_ASSERT_OK(be->bmat_spgemm_numeric(&dA, &dT, &dN));
                be->sync();
                ms[k] = fmin(ms[k], 1e3 * (hk_time() - t0));
                if (k == 0 || k == 2) hk_bmat_free(&dC);
            }
    }
    /* a pattern without the last block of a row with two or more */
    int64_t row = -1;
    for (int64_t i = 0; i < C.nbrows && row < 0; i++)
        if (C.rowptr[i + 1] - C.rowptr[i] >= 2) row = i;
    if (row >= 0) {
        hk_bmat M;
        HK_ASSERT_OK(hk_bmat_alloc(cpu, C.br, C.bc, C.nbrows, C.nbcols, C.nnzb, &M));
        memcpy(M.rowptr, C.rowptr, (size_t)(C.nbrows + 1) * sizeof *M.rowptr);
        memcpy(M.colind, C.colind, (size_t)C.nnzb * sizeof *M.colind);
        M.colind[C.rowptr[row + 1] - 1] = M.colind[C.rowptr[row + 1] - 2];
        hk_bmat dM;
        hk_test_bmat_to(be, &M, &dM);
        CU_ASSERT_EQUAL(be->amg_tentative_product_numeric(&dA, &dT, &dM), HK_ERR_ARG);
        CU_ASSERT(names_row(row));
        hk_bmat_free(&M), hk_bmat_free(&dM);
    }
    /* a T with two blocks in a row (not a tentative prolongator): named by its row */
    const int64_t two = T->nbrows / 2;
    hk_bmat T2, dT2;
    tentative_like(T->nbrows, T->br, T->bc, 0, two, 3u, &T2);
    hk_test_bmat_to(be, &T2, &dT2);
    CU_ASSERT_EQUAL(be->amg_tentative_product(&dA, &dT2, &dC), HK_ERR_ARG);
    CU_ASSERT(names_row(two));
    if (T2.nbcols == C.nbcols) {
        CU_ASSERT_EQUAL(be->amg_tentative_product_numeric(&dA, &dT2, &dN), HK_ERR_ARG);
        CU_ASSERT(names_row(two));
    }
    hk_bmat_free(&T2), hk_bmat_free(&dT2);
    hk_bmat_free(&C), hk_bmat_free(&dA), hk_bmat_free(&dT), hk_bmat_free(&dN);
}

/* The AMG set-up's A T: (A, T's block shape, aggregates) on the host, case t of
 * tentative_cases; 0 past the last. */
static int tentative_case(int t, int big, const char **name, hk_bmat *A, hk_bmat *T)
{
    const hk_backend *cpu = backend("cpu");
    hk_bcsr K = {0};
    int b = 3, nns = 6, scattered = 0;
    const int m = big ? 30 : 6;
    switch (t) {
    case 0:
        *name = "elasticity3d, 3x3 A, 3x6 T";
        HK_ASSERT_OK(hk_gen_elasticity3d(m, m, m, &K));
        break;
    case 1:
        *name = "elasticity3d, aggregates scattered";
        HK_ASSERT_OK(hk_gen_elasticity3d(m, m, m, &K));
        scattered = 1;
        break;
    case 2: { /* tet10-like rows: the linear tets' pattern squared (50-90 blocks a row) */
        *name = "tet10-like (tet K K), 3x3 A, 3x6 T";
        hk_bmat Kt;
        HK_ASSERT_OK(hk_gen_elasticity3d_tet(big ? 16 : 5, big ? 16 : 5, big ? 16 : 5, &K));
        HK_ASSERT_OK(hk_bmat_upload(cpu, &K, &Kt));
        HK_ASSERT_OK(cpu->bmat_spgemm(&Kt, &Kt, A));
        hk_bmat_free(&Kt);
        hk_bcsr_free(&K);
        tentative_like(A->nbcols, b, nns, 0, -1, 19u, T);
        return 1;
    }
    case 3: /* a coarse level: 6x6 blocks */
        *name = "coarse level, 6x6 A, 6x6 T";
        rand_bmat(big ? 6000 : 600, big ? 6000 : 600, 6, 6, 40, 0, 23u, A);
        tentative_like(A->nbcols, 6, 6, 0, -1, 29u, T);
        return 1;
    case 4:
        *name = "elasticity2d, 2x2 A, 2x3 T";
        HK_ASSERT_OK(hk_gen_elasticity2d(big ? 300 : 30, big ? 300 : 30, &K));
        b = 2, nns = 3;
        break;
    case 5:
        *name = "poisson3d, 1x1";
        HK_ASSERT_OK(hk_gen_poisson3d(big ? 60 : 12, &K));
        b = 1, nns = 1;
        break;
    case 6: /* no dedicated kernel: the general product */
        *name = "a generic shape, 3x3 A, 3x4 T";
        rand_bmat(400, 400, 3, 3, 9, 1, 37u, A);
        tentative_like(A->nbcols, 3, 4, 1, -1, 41u, T);
        return 1;
    default:
        return 0;
    }
    HK_ASSERT_OK(hk_bmat_upload(cpu, &K, A));
    hk_bcsr_free(&K);
    tentative_like(A->nbcols, b, nns, scattered, -1, 17u + (unsigned)t, T);
    return 1;
}

static void test_tentative_product(void)
{
    const char *name;
    hk_bmat A, T;
    for (int t = 0; tentative_case(t, 0, &name, &A, &T); t++) {
        check_tentative_product(backend("cpu"), &A, &T, NULL);
        hk_bmat_free(&A), hk_bmat_free(&T);
    }
}

static void test_start_vector(void)
{
    const hk_backend *be = backend("cpu");
    const int64_t n = 10007;
    hk_vec *v64, *v32;
    HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &v64));
    HK_ASSERT_OK(hk_vec_create(be, n, HK_FP32, &v32));
    HK_ASSERT_OK(be->amg_start_vector(v64));
    HK_ASSERT_OK(be->amg_start_vector(v32));
    const double *a = v64->data;
    const float *f = v32->data;
    long bad = 0, distinct = 0;
    for (int64_t i = 0; i < n; i++) {
        bad += a[i] != 0.5 + (double)(hk_hash32((uint32_t)i) & 0xffffu) / 65536.0;
        bad += (double)f[i] != a[i]; /* exact in fp32 */
        bad += !(a[i] >= 0.5 && a[i] < 1.5);
        distinct += i > 0 && a[i] != a[i - 1];
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(distinct > n - 10);
    hk_vec_destroy(v64), hk_vec_destroy(v32);
}

/* amg_coord_bounds on the cpu: the sums those of one pass in node order (the same bytes),
 * the bounds exact; entries past bs 0; no node: +inf, -inf; a NaN makes its sum NaN. */
static void test_coord_bounds(void)
{
    const hk_backend *cpu = backend("cpu");
    for (int bs = 2; bs <= 3; bs++)
        for (int t = 0; t < 3; t++) {
            const int64_t nb = t == 0 ? 20011 : t == 1 ? 1 : 0, n = nb * bs;
            uint32_t s = 31u;
            double *xyz = malloc((size_t)n * sizeof *xyz + 8);
            for (int64_t i = 0; i < n; i++)
                xyz[i] = -5.0 + 40.0 * urand(&s) * (1 + (double)(i % bs));
            double want[3] = {0, 0, 0}, lo[3] = {INFINITY, INFINITY, INFINITY},
                   hi[3] = {-INFINITY, -INFINITY, -INFINITY};
            for (int64_t i = 0; i < nb; i++)
                for (int a = 0; a < bs; a++) {
                    want[a] += xyz[i * bs + a];
                    lo[a] = fmin(lo[a], xyz[i * bs + a]);
                    hi[a] = fmax(hi[a], xyz[i * bs + a]);
                }
            hk_vec *X;
            HK_ASSERT_OK(hk_vec_create(cpu, n, HK_FP64, &X));
            HK_ASSERT_OK(hk_vec_upload(X, xyz));
            double got[9];
            HK_ASSERT_OK(cpu->amg_coord_bounds(nb, bs, X, got, got + 3, got + 6));
            for (int a = 0; a < 3; a++) {
                CU_ASSERT(!memcmp(&got[a], a < bs ? &want[a] : &(double){0}, sizeof(double)));
                CU_ASSERT_EQUAL(got[3 + a], a < bs ? lo[a] : 0);
                CU_ASSERT_EQUAL(got[6 + a], a < bs ? hi[a] : 0);
            }
            if (nb == 0) CU_ASSERT(got[3] == INFINITY && got[6] == -INFINITY);
            if (nb > 1) {
                xyz[n / 2] = NAN;
                HK_ASSERT_OK(hk_vec_upload(X, xyz));
                HK_ASSERT_OK(cpu->amg_coord_bounds(nb, bs, X, got, got + 3, got + 6));
                CU_ASSERT(isnan(got[(n / 2) % bs]));
            }
            CU_ASSERT_EQUAL(cpu->amg_coord_bounds(nb, 4, X, got, got + 3, got + 6), HK_ERR_ARG);
            hk_vec_destroy(X);
            free(xyz);
        }
}

HK_SUITE(amg_ops, {"rigid-body modes and translations equal e_k and e_k x x", test_rigid_modes},
         {"the coordinates' sums (node order) and bounds of the distributed frame; no node; a "
          "NaN's sum",
          test_coord_bounds},
         {"bmat_spmv equals the dense product (3x6, 6x3, 2x5, 1x1, 6x6; fp64, fp32 vectors "
          "and values)",
          test_bmat_spmv},
         {"spgemm_numeric into spgemm's pattern: its bytes; a missing block named; misfit shapes",
          test_spgemm_numeric},
         {"A T for a tentative T (AMG shapes): bmat_spgemm's pattern and bytes; a T row with "
          "two blocks and a missing block named",
          test_tentative_product},
         {"the spectral estimate's start vector: its formula, exact in fp32", test_start_vector})

/* ---- device ------------------------------------------------------------------------------- */

#ifdef HOOKE_HAVE_CUDA

static void test_cuda_rigid_modes(void)
{
    const hk_backend *be[2] = {backend("cpu"), backend("cuda")};
    const int bss[3] = {3, 2, 4};
    for (int t = 0; t < 3; t++) {
        const int bs = bss[t], coords = bs <= 3;
        const int64_t nb = 100003, n = nb * bs;
        const int nns = coords ? (bs == 3 ? 6 : 3) : bs;
        uint32_t s = 17u;
        double *xyz = malloc((size_t)n * sizeof *xyz), *dec = calloc((size_t)n, sizeof *dec);
        for (int64_t i = 0; i < n; i++)
            xyz[i] = urand(&s);
        for (int64_t i = 0; i < n; i += 101)
            dec[i] = 1;
        const double c[3] = {0.1, 0.2, 0.3};
        double *B[2];
        for (int b = 0; b < 2; b++) {
            hk_vec *X, *D;
            double *Bd = NULL;
            HK_ASSERT_OK(hk_vec_create(be[b], n, HK_FP64, &X));
            HK_ASSERT_OK(hk_vec_create(be[b], n, HK_FP64, &D));
            HK_ASSERT_OK(hk_vec_upload(X, xyz));
            HK_ASSERT_OK(hk_vec_upload(D, dec));
            HK_ASSERT_OK(be[b]->alloc((void **)&Bd, (size_t)n * nns * sizeof(double)));
            HK_ASSERT_OK(be[b]->amg_rigid_modes(nb, bs, coords ? X : NULL, c, 1.7, D, Bd));
            B[b] = malloc((size_t)n * nns * sizeof(double));
            HK_ASSERT_OK(be[b]->copy_from(B[b], Bd, (size_t)n * nns * sizeof(double)));
            be[b]->dealloc(Bd);
            hk_vec_destroy(X), hk_vec_destroy(D);
        }
        CU_ASSERT(!memcmp(B[0], B[1], (size_t)n * nns * sizeof(double)));
        free(B[0]), free(B[1]), free(xyz), free(dec);
    }
}

/* n coordinates of nodes of bs, off the origin, each coordinate its own spread (malloc'd). */
static double *coords_off_origin(int64_t n, int bs, uint32_t s)
{
    double *xyz = malloc((size_t)n * sizeof *xyz + 8);
    for (int64_t i = 0; i < n; i++)
        xyz[i] = 3.0 + 40.0 * urand(&s) * (1 + (double)(i % bs));
    return xyz;
}

/* amg_coord_frame on cuda against the cpu's: the centre to the last digits of a sum (its own
 * order), the scale likewise; the same bytes on a second call; sizes with empty chunks; a
 * coordinate that is not finite refused. */
static void test_cuda_coord_frame(void)
{
    const hk_backend *be[2] = {backend("cpu"), backend("cuda")};
    const int64_t sizes[4] = {100003, 5, 1, 0};
    for (int bs = 2; bs <= 3; bs++)
        for (int t = 0; t < 4; t++) {
            const int64_t nb = sizes[t], n = nb * bs;
            double *xyz = coords_off_origin(n, bs, 29u);
            double c[2][3], sc[2], c2[3], sc2;
            for (int b = 0; b < 2; b++) {
                hk_vec *X;
                HK_ASSERT_OK(hk_vec_create(be[b], n, HK_FP64, &X));
                HK_ASSERT_OK(hk_vec_upload(X, xyz));
                HK_ASSERT_OK(be[b]->amg_coord_frame(nb, bs, X, c[b], &sc[b]));
                if (b == 1) {
                    HK_ASSERT_OK(be[b]->amg_coord_frame(nb, bs, X, c2, &sc2));
                    CU_ASSERT(!memcmp(c2, c[1], sizeof c2) && !memcmp(&sc2, &sc[1], sizeof sc2));
                }
                hk_vec_destroy(X);
            }
            for (int a = 0; a < 3; a++)
                CU_ASSERT(fabs(c[1][a] - c[0][a]) <= 1e-13 * fabs(c[0][a]));
            CU_ASSERT(fabs(sc[1] - sc[0]) <= 1e-13 * sc[0]);
            if (nb <= 1) CU_ASSERT(!memcmp(c[0], c[1], sizeof c[0]) && sc[0] == sc[1]);
            if (nb == 100003) {
                hk_vec *X;
                xyz[n / 2] = NAN;
                HK_ASSERT_OK(hk_vec_create(be[1], n, HK_FP64, &X));
                HK_ASSERT_OK(hk_vec_upload(X, xyz));
                CU_ASSERT_EQUAL(be[1]->amg_coord_frame(nb, bs, X, c2, &sc2), HK_ERR_ARG);
                CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "not finite"));
                hk_vec_destroy(X);
            }
            free(xyz);
        }
}

static void test_cuda_bmat_spmv(void)
{
    const hk_backend *cpu = backend("cpu"), *gpu = backend("cuda");
    for (size_t t = 0; t <= sizeof spmv_cases / sizeof spmv_cases[0]; t++) {
        hk_bmat A, dA;
        const int big = t == sizeof spmv_cases / sizeof spmv_cases[0];
        if (big) /* a level-0 prolongator of ~600k dofs: 3 x 6 blocks, 10 per row */
            rand_bmat(200000, 20000, 3, 6, 10, 0, 77, &A);
        else
            rand_bmat(spmv_cases[t].nbr, spmv_cases[t].nbc, spmv_cases[t].br, spmv_cases[t].bc,
                      spmv_cases[t].per_row, spmv_cases[t].empty, (unsigned)(3 + t), &A);
        hk_test_bmat_to(gpu, &A, &dA);
        const int64_t m = A.nbrows * A.br, n = A.nbcols * A.bc;
        uint32_t s = 5u;
        double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)m * sizeof *y);
        double *dy = malloc((size_t)m * sizeof *dy);
        for (int64_t j = 0; j < n; j++)
            x[j] = urand(&s);
        /* fp32 copies of the values on both backends */
        const int64_t nv = A.nnzb * A.br * A.bc;
        hk_vec *V32, *dV32;
        HK_ASSERT_OK(hk_vec_create(cpu, nv, HK_FP32, &V32));
        HK_ASSERT_OK(hk_vec_create(gpu, nv, HK_FP32, &dV32));
        HK_ASSERT_OK(hk_vec_upload(V32, A.val));
        HK_ASSERT_OK(hk_vec_upload(dV32, A.val));
        for (int p = 0; p < 2; p++) {
            const hk_precision prec = p ? HK_FP32 : HK_FP64;
            hk_vec *X, *Y, *dX, *dY;
            HK_ASSERT_OK(hk_vec_create(cpu, n, prec, &X));
            HK_ASSERT_OK(hk_vec_create(cpu, m, prec, &Y));
            HK_ASSERT_OK(hk_vec_create(gpu, n, prec, &dX));
            HK_ASSERT_OK(hk_vec_create(gpu, m, prec, &dY));
            HK_ASSERT_OK(hk_vec_upload(X, x));
            HK_ASSERT_OK(hk_vec_upload(dX, x));
            HK_ASSERT_OK(gpu->vec_set(dY, 7.0));
            for (int v = 0; v < 2; v++) { /* fp64 values, then fp32 values */
                HK_ASSERT_OK(cpu->bmat_spmv(&A, v ? (float *)V32->data : NULL, X, Y));
                HK_ASSERT_OK(gpu->bmat_spmv(&dA, v ? (float *)dV32->data : NULL, dX, dY));
                HK_ASSERT_OK(hk_vec_download(Y, y));
                HK_ASSERT_OK(hk_vec_download(dY, dy));
                CU_ASSERT(hk_test_reldiff(dy, y, (long)m) < (p ? 1e-6 : 1e-13));
            }
            if (big) { /* time against the scalar CSR of the same operator (as before) */
                hk_bmat S = {0};
                hk_mat *M = NULL;
                HK_ASSERT_OK(gpu->bmat_expand(&dA, &S));
                HK_ASSERT_OK(hk_mat_create_bmat(&S, HK_FMT_CSR, prec, NULL, &M));
                const int reps = 20;
                gpu->sync();
                double t0 = hk_time();
                for (int r = 0; r < reps; r++)
                    HK_ASSERT_OK(gpu->bmat_spmv(&dA, p ? (float *)dV32->data : NULL, dX, dY));
                gpu->sync();
                const double tb = (hk_time() - t0) / reps;
                t0 = hk_time();
                for (int r = 0; r < reps; r++)
                    HK_ASSERT_OK(hk_mat_spmv(M, dX, dY));
                gpu->sync();
                const double tc = (hk_time() - t0) / reps;
                printf("\n    P-like 3x6, %lld rows, %lld blocks, %s: bmat_spmv %.3f ms (%s "
                       "values), scalar csr %.3f ms",
                       (long long)m, (long long)A.nnzb, p ? "fp32" : "fp64", tb * 1e3,
                       p ? "fp32" : "fp64", tc * 1e3);
                hk_mat_destroy(M);
                hk_bmat_free(&S);
            }
            hk_vec_destroy(X), hk_vec_destroy(Y), hk_vec_destroy(dX), hk_vec_destroy(dY);
        }
        free(x), free(y), free(dy);
        hk_vec_destroy(V32), hk_vec_destroy(dV32);
        hk_bmat_free(&A), hk_bmat_free(&dA);
    }
}

/* A random SPD band matrix (n = nb*bs, block half-width 2, dominant diagonal) on the cpu. */
static void rand_spd(int64_t nb, int bs, unsigned seed, hk_bmat *A)
{
    int64_t nnzb = 0;
    for (int64_t bi = 0; bi < nb; bi++)
        for (int64_t bj = bi - 2; bj <= bi + 2; bj++)
            nnzb += bj >= 0 && bj < nb;
    CU_ASSERT_EQUAL_FATAL(hk_bmat_alloc(backend("cpu"), bs, bs, nb, nb, nnzb, A), 0);
    int64_t q = 0;
    A->rowptr[0] = 0;
    for (int64_t bi = 0; bi < nb; bi++) {
        for (int64_t bj = bi - 2; bj <= bi + 2; bj++) {
            if (bj < 0 || bj >= nb) continue;
            A->colind[q++] = (int32_t)bj;
        }
        A->rowptr[bi + 1] = q;
    }
    /* symmetric values: block (bi, bj) from a hash of the unordered scalar pair */
    for (int64_t bi = 0; bi < nb; bi++)
        for (int64_t k = A->rowptr[bi]; k < A->rowptr[bi + 1]; k++)
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++) {
                    const int64_t i = bi * bs + r, j = (int64_t)A->colind[k] * bs + c;
                    const int64_t lo = i < j ? i : j, hi = i < j ? j : i;
                    uint32_t h = hk_hash32((uint32_t)(lo * 7919 + hi) ^ seed);
                    A->val[(k * bs + r) * bs + c] =
                        i == j ? 5.0 * bs + 1.0 : (double)(h & 0xffff) / 65536.0 - 0.5;
                }
}

static double inverse_both(const hk_bmat *A, int64_t *bc, int64_t *bg, double *ms)
{
    const int64_t n = A->nbrows * A->br;
    const hk_backend *cpu = backend("cpu"), *gpu = backend("cuda");
    hk_bmat dA;
    hk_vec *M, *dM;
    hk_test_bmat_to(gpu, A, &dA);
    HK_ASSERT_OK(hk_vec_create(cpu, n * n, HK_FP64, &M));
    HK_ASSERT_OK(hk_vec_create(gpu, n * n, HK_FP64, &dM));
    HK_ASSERT_OK(cpu->dense_inverse(A, M, bc));
    gpu->sync();
    const double t0 = hk_time();
    HK_ASSERT_OK(gpu->dense_inverse(&dA, dM, bg));
    gpu->sync();
    *ms = (hk_time() - t0) * 1e3;
    double *m = malloc((size_t)(n * n) * sizeof *m), *dm = malloc((size_t)(n * n) * sizeof *dm);
    HK_ASSERT_OK(hk_vec_download(M, m));
    HK_ASSERT_OK(hk_vec_download(dM, dm));
    const double d = hk_test_reldiff(dm, m, (long)(n * n));
    free(m), free(dm);
    hk_vec_destroy(M), hk_vec_destroy(dM);
    hk_bmat_free(&dA);
    return d;
}

static void test_cuda_chol_inverse(void)
{
    const struct {
        int64_t nb;
        int bs;
    } cases[] = {{1, 1}, {15, 3}, {32, 1}, {11, 3}, {333, 3}, {170, 6}, {341, 6}, {350, 6}};
    printf("\n    dense inverse on cuda:");
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        hk_bmat A;
        rand_spd(cases[t].nb, cases[t].bs, (unsigned)(21 + t), &A);
        const int64_t n = A.nbrows * A.br;
        if (n > 40) /* a decoupled dof (zero row and column): identity in the inverse */
            for (int64_t bi = 0; bi < A.nbrows; bi++)
                for (int64_t q = A.rowptr[bi]; q < A.rowptr[bi + 1]; q++)
                    for (int r = 0; r < A.br; r++)
                        for (int c = 0; c < A.bc; c++)
                            if (bi * A.br + r == 37 || (int64_t)A.colind[q] * A.bc + c == 37)
                                A.val[(q * A.br + r) * A.bc + c] = 0;
        int64_t bc = 5, bg = 5;
        double ms;
        const double d = inverse_both(&A, &bc, &bg, &ms);
        CU_ASSERT(d < 1e-12);
        CU_ASSERT(bc == -1 && bg == -1);
        printf(" n=%lld %.2f ms%s;", (long long)n, ms, n > 2048 ? " (cuSOLVER)" : "");
        if (t == 4) { /* a negative pivot, then a NaN earlier: the same first bad row */
            for (int64_t q = A.rowptr[700 / 3]; q < A.rowptr[700 / 3 + 1]; q++)
                if (A.colind[q] == 700 / 3) A.val[(q * 3 + 700 % 3) * 3 + 700 % 3] = -4.0;
            inverse_both(&A, &bc, &bg, &ms);
            CU_ASSERT(bc == 700 && bg == 700);
            A.val[7] = NAN; /* entry (2, 1) of block row 0 */
            inverse_both(&A, &bc, &bg, &ms);
            CU_ASSERT(bc == 2 && bg == 2);
        }
        hk_bmat_free(&A);
    }
}

/* The device's numeric product kernels for AMG's shapes: each product's own choice (HOOKE_SPGEMM
 * unset), HOOKE_SPGEMM=row (a warp per row of C in shared memory) and HOOKE_SPGEMM=stationary
 * (output-stationary, a lane per block of C) for every shape. */
#define SPGEMM_VARIANTS 3
static const char *const spgemm_variants[SPGEMM_VARIANTS] = {"by shape", "row", "stationary"};

/* HOOKE_SPGEMM set for variant v (unset for the per-product choice). */
static void spgemm_variant(int v)
{
    if (v)
        setenv("HOOKE_SPGEMM", spgemm_variants[v], 1);
    else
        unsetenv("HOOKE_SPGEMM");
}

/* The CUDA numeric product equals the CPU's digit for digit (each sum in the same order), with
 * each numeric kernel (spgemm_variants), and so does the whole product, on the AMG
 * shapes (one with a row too long for shared memory) and on K K of an elasticity matrix, with
 * the times of the numeric and the whole product. */
static void test_cuda_spgemm_numeric(void)
{
    const hk_backend *cpu = backend("cpu"), *gpu = backend("cuda");
    for (size_t t = 0; t < sizeof numeric_cases / sizeof numeric_cases[0] + 1; t++) {
        hk_bmat A, B, C, N, dA, dB, dN;
        if (t < sizeof numeric_cases / sizeof numeric_cases[0]) {
            numeric_pair(cpu, t, &A, &B, &C, &N);
        } else { /* K K, 3x3 blocks of elasticity3d:30 */
            hk_bcsr K = {0};
            HK_ASSERT_OK(hk_gen_elasticity3d(30, 30, 30, &K));
            HK_ASSERT_OK(hk_bmat_upload(cpu, &K, &A));
            HK_ASSERT_OK(hk_bmat_upload(cpu, &K, &B));
            hk_bcsr_free(&K);
            HK_ASSERT_OK(cpu->bmat_spgemm(&A, &B, &C));
            HK_ASSERT_OK(hk_bmat_alloc(cpu, C.br, C.bc, C.nbrows, C.nbcols, C.nnzb, &N));
            memcpy(N.rowptr, C.rowptr, (size_t)(C.nbrows + 1) * sizeof *N.rowptr);
            memcpy(N.colind, C.colind, (size_t)C.nnzb * sizeof *N.colind);
        }
        const size_t nv = (size_t)C.nnzb * C.br * C.bc;
        hk_test_bmat_to(gpu, &A, &dA);
        hk_test_bmat_to(gpu, &B, &dB);
        hk_test_bmat_to(gpu, &N, &dN); /* the pattern, and values to be overwritten */
        double *got = malloc((nv ? nv : 1) * sizeof *got);
        if (nv)
            gpu->vec_set(&(hk_vec){.be = gpu, .n = (int64_t)nv, .prec = HK_FP64, .data = dN.val},
                         NAN);
        for (int v = 0; v < SPGEMM_VARIANTS; v++) {
            spgemm_variant(v);
            if (nv)
                gpu->vec_set(
                    &(hk_vec){.be = gpu, .n = (int64_t)nv, .prec = HK_FP64, .data = dN.val}, NAN);
            HK_ASSERT_OK(gpu->bmat_spgemm_numeric(&dA, &dB, &dN));
            if (nv) gpu->copy_from(got, dN.val, nv * sizeof *got);
            CU_ASSERT(memcmp(got, C.val, nv * sizeof *got) == 0);
            hk_bmat dW = {0};
            HK_ASSERT_OK(gpu->bmat_spgemm(&dA, &dB, &dW));
            CU_ASSERT(same_bmat(&dW, &C));
            hk_bmat_free(&dW);
        }
        /* a pattern without the last block of a row with two or more (the previous column in
         * its place): named by its row, by every kernel */
        int64_t row = -1;
        for (int64_t i = 0; i < N.nbrows && row < 0; i++)
            if (N.rowptr[i + 1] - N.rowptr[i] >= 2) row = i;
        if (row >= 0) {
            const int64_t q = N.rowptr[row + 1] - 1;
            const int32_t keep = N.colind[q];
            N.colind[q] = N.colind[q - 1];
            hk_bmat dM;
            hk_test_bmat_to(gpu, &N, &dM);
            for (int v = 0; v < SPGEMM_VARIANTS; v++) {
                spgemm_variant(v);
                CU_ASSERT_EQUAL(gpu->bmat_spgemm_numeric(&dA, &dB, &dM), HK_ERR_ARG);
                CU_ASSERT(names_row(row));
            }
            N.colind[q] = keep;
            hk_bmat_free(&dM);
        }
        /* a value of HOOKE_SPGEMM that names no kernel: refused, naming the variable */
        setenv("HOOKE_SPGEMM", "staged", 1);
        CU_ASSERT_EQUAL(gpu->bmat_spgemm_numeric(&dA, &dB, &dN), HK_ERR_ARG);
        CU_ASSERT(strstr(hk_error_message(), "HOOKE_SPGEMM=staged") != NULL);
        hk_error_clear();
        spgemm_variant(0);
        if (t == sizeof numeric_cases / sizeof numeric_cases[0]) {
            hk_bmat dC = {0};
            double tn = 1e30, tf = 1e30;
            for (int rep = 0; rep < 3; rep++) {
                gpu->sync();
                double t0 = hk_time();
                HK_ASSERT_OK(gpu->bmat_spgemm_numeric(&dA, &dB, &dN));
                gpu->sync();
                tn = fmin(tn, hk_time() - t0);
                t0 = hk_time();
                HK_ASSERT_OK(gpu->bmat_spgemm(&dA, &dB, &dC));
                gpu->sync();
                tf = fmin(tf, hk_time() - t0);
                hk_bmat_free(&dC);
            }
            printf("\n    K K of elasticity3d:30 (%lld blocks): numeric %.2f ms, whole spgemm "
                   "%.2f ms",
                   (long long)C.nnzb, 1e3 * tn, 1e3 * tf);
        }
        free(got);
        hk_bmat_free(&A), hk_bmat_free(&B), hk_bmat_free(&C), hk_bmat_free(&N);
        hk_bmat_free(&dA), hk_bmat_free(&dB), hk_bmat_free(&dN);
    }
}

/* C = A B on cuda, whole and numeric, against the CPU's C (pattern and bytes) with each numeric
 * kernel (spgemm_variants); ms[variant][whole, numeric]: best of 3. */
static void galerkin_product(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C,
                             double ms[SPGEMM_VARIANTS][2])
{
    const hk_backend *gpu = backend("cuda");
    hk_bmat dA, dB, dC = {0}, dN;
    hk_test_bmat_to(gpu, A, &dA);
    hk_test_bmat_to(gpu, B, &dB);
    hk_test_bmat_to(gpu, C, &dN);
    const int64_t nv = C->nnzb * C->br * C->bc;
    for (int v = 0; v < SPGEMM_VARIANTS; v++) {
        spgemm_variant(v);
        HK_ASSERT_OK(gpu->bmat_spgemm(&dA, &dB, &dC));
        CU_ASSERT(same_bmat(&dC, C));
        hk_bmat_free(&dC);
        if (nv) gpu->vec_set(&(hk_vec){.be = gpu, .n = nv, .prec = HK_FP64, .data = dN.val}, NAN);
        HK_ASSERT_OK(gpu->bmat_spgemm_numeric(&dA, &dB, &dN));
        CU_ASSERT(same_bmat(&dN, C));
        ms[v][0] = ms[v][1] = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            gpu->sync();
            double t0 = hk_time();
            HK_ASSERT_OK(gpu->bmat_spgemm(&dA, &dB, &dC));
            gpu->sync();
            ms[v][0] = fmin(ms[v][0], 1e3 * (hk_time() - t0));
            hk_bmat_free(&dC);
            t0 = hk_time();
            HK_ASSERT_OK(gpu->bmat_spgemm_numeric(&dA, &dB, &dN));
            gpu->sync();
            ms[v][1] = fmin(ms[v][1], 1e3 * (hk_time() - t0));
        }
    }
    spgemm_variant(0);
    hk_bmat_free(&dA), hk_bmat_free(&dB), hk_bmat_free(&dN);
}

/* The Galerkin products of a real first level (elasticity3d:60, 681k DOFs: A P with 3x3 . 3x6
 * blocks, R (A P) with 6x3 . 3x6) and a coarse-level shape (Ac Ac, 6x6 . 6x6): cuda's pattern
 * and bytes equal the CPU's, whole and numeric, with each numeric kernel; their times. */
static void test_cuda_galerkin_level(void)
{
    hk_test_level L;
    hk_test_level_make(60, &L);
    hk_bmat AcAc;
    HK_ASSERT_OK(backend("cpu")->bmat_spgemm(&L.Ac, &L.Ac, &AcAc));
    const struct {
        const char *name;
        const hk_bmat *A, *B, *C;
    } prods[] = {{"A P", &L.K, &L.P, &L.AP},
                 {"R (A P)", &L.R, &L.AP, &L.Ac},
                 {"Ac Ac", &L.Ac, &L.Ac, &AcAc}};
    for (size_t k = 0; k < sizeof prods / sizeof prods[0]; k++) {
        double ms[SPGEMM_VARIANTS][2];
        galerkin_product(prods[k].A, prods[k].B, prods[k].C, ms);
        printf("\n    elasticity3d:60 %s (%lld rows, %lld blocks of %dx%d), ms whole / numeric:",
               prods[k].name, (long long)prods[k].C->nbrows, (long long)prods[k].C->nnzb,
               prods[k].C->br, prods[k].C->bc);
        for (int v = 0; v < SPGEMM_VARIANTS; v++)
            printf(" %s %.2f / %.2f", spgemm_variants[v], ms[v][0], ms[v][1]);
    }
    hk_bmat_free(&AcAc);
    hk_test_level_free(&L);
}

/* A T for a tentative T: cuda's pattern and bytes are the CPU's (the AMG shapes, a generic
 * one), the errors named as on the CPU; the dedicated product's times beside the general's. */
static void test_cuda_tentative_product(void)
{
    const char *name;
    hk_bmat A, T;
    for (int t = 0; tentative_case(t, 1, &name, &A, &T); t++) {
        double ms[4];
        check_tentative_product(backend("cuda"), &A, &T, ms);
        printf("\n    %s (%lld x %lld blocks, %lld in A): A T %.2f ms, numeric %.2f ms; "
               "bmat_spgemm %.2f ms, numeric %.2f ms",
               name, (long long)A.nbrows, (long long)T.nbcols, (long long)A.nnzb, ms[0], ms[1],
               ms[2], ms[3]);
        hk_bmat_free(&A), hk_bmat_free(&T);
    }
}

static void test_cuda_start_vector(void)
{
    const hk_backend *cpu = backend("cpu"), *gpu = backend("cuda");
    const int64_t n = 1000003;
    for (int p = 0; p < 2; p++) {
        const hk_precision prec = p ? HK_FP32 : HK_FP64;
        hk_vec *a, *b;
        HK_ASSERT_OK(hk_vec_create(cpu, n, prec, &a));
        HK_ASSERT_OK(hk_vec_create(gpu, n, prec, &b));
        HK_ASSERT_OK(cpu->amg_start_vector(a));
        HK_ASSERT_OK(gpu->amg_start_vector(b));
        double *ha = malloc((size_t)n * sizeof *ha), *hb = malloc((size_t)n * sizeof *hb);
        HK_ASSERT_OK(hk_vec_download(a, ha));
        HK_ASSERT_OK(hk_vec_download(b, hb));
        CU_ASSERT(memcmp(ha, hb, (size_t)n * sizeof *ha) == 0);
        free(ha), free(hb);
        hk_vec_destroy(a), hk_vec_destroy(b);
    }
}

/* amg_coord_bounds on cuda against the cpu's: the sums to the last digits (its own order), the
 * bounds identical, the same bytes on a second call; sizes with empty chunks, no node. */
static void test_cuda_coord_bounds(void)
{
    const hk_backend *be[2] = {backend("cpu"), backend("cuda")};
    const int64_t sizes[4] = {1000003, 5, 1, 0};
    for (int bs = 2; bs <= 3; bs++)
        for (int t = 0; t < 4; t++) {
            const int64_t nb = sizes[t], n = nb * bs;
            double *xyz = coords_off_origin(n, bs, 37u);
            double r[2][9], r2[9];
            for (int b = 0; b < 2; b++) {
                hk_vec *X;
                HK_ASSERT_OK(hk_vec_create(be[b], n, HK_FP64, &X));
                HK_ASSERT_OK(hk_vec_upload(X, xyz));
                HK_ASSERT_OK(be[b]->amg_coord_bounds(nb, bs, X, r[b], r[b] + 3, r[b] + 6));
                if (b == 1) {
                    HK_ASSERT_OK(be[b]->amg_coord_bounds(nb, bs, X, r2, r2 + 3, r2 + 6));
                    CU_ASSERT(!memcmp(r2, r[1], sizeof r2));
                }
                hk_vec_destroy(X);
            }
            for (int a = 0; a < 3; a++) {
                if (fabs(r[1][a] - r[0][a]) > 1e-13 * fabs(r[0][a]))
                    printf("\n    bs %d, %lld nodes: sum %d: cuda %.17g, cpu %.17g", bs,
                           (long long)nb, a, r[1][a], r[0][a]);
                CU_ASSERT(fabs(r[1][a] - r[0][a]) <= 1e-13 * fabs(r[0][a]));
            }
            CU_ASSERT(!memcmp(r[1] + 3, r[0] + 3, 6 * sizeof(double)));
            if (nb <= 1) CU_ASSERT(!memcmp(r[0], r[1], sizeof r[0]));
            free(xyz);
        }
}

HK_DEVICE_SUITE(
    cuda_amg_ops, {"rigid-body modes: cuda identical to cpu", test_cuda_rigid_modes},
    {"the distributed frame's sums and bounds on the device: sums to 1e-13 of the cpu's, "
     "bounds identical, repeatable",
     test_cuda_coord_bounds},
    {"the modes' frame from coordinates on the device: cpu's to 1e-13, repeatable, a "
     "non-finite coordinate refused",
     test_cuda_coord_frame},
    {"spgemm_numeric: cuda's bytes equal cpu's (AMG shapes, K K) with each kernel (by shape, "
     "row, stationary); a broken pattern named by its row; HOOKE_SPGEMM checked; time",
     test_cuda_spgemm_numeric},
    {"Galerkin products of an elasticity3d:60 level (A P, R (A P), 6x6 . 6x6): cuda's pattern "
     "and bytes equal cpu's with each kernel (by shape, row, stationary); times",
     test_cuda_galerkin_level},
    {"A T for a tentative T: cuda's pattern and bytes equal cpu's (AMG shapes); errors named; "
     "time against bmat_spgemm",
     test_cuda_tentative_product},
    {"the spectral estimate's start vector: cuda identical to cpu", test_cuda_start_vector},
    {"bmat_spmv: cuda equals cpu (all shapes, fp64, fp32); time against csr", test_cuda_bmat_spmv},
    {"dense inverse by tiled Cholesky equals the cpu's; first bad pivot; times",
     test_cuda_chol_inverse})
#endif
