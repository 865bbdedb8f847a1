/* The sparse and dense set-up ops of smoothed-aggregation AMG (solver/hk_impl.h, "set-up on the
 * backend"): bmat_spgemm, amg_smooth_prolongator, dense_inverse, dense_gemv.
 *
 * Suite sparse_setup (CPU backend): every op against a dense computation here on small random
 * matrices (rectangular blocks 1x1, 3x3.3x6, 6x3.3x6, empty rows, the symbolic pattern), the
 * same digits for any thread count, the inverse of an SPD matrix with a decoupled dof, the row
 * of the first non-positive pivot, misuse reported; the symmetric Galerkin product's ops
 * (bmat_spgemm_pattern: bmat_spgemm's pattern; bmat_spgemm_numeric_upper: spgemm's bytes on and
 * above the block diagonal, the other blocks untouched; bmat_mirror_lower on a hand-made matrix
 * and its error on an asymmetric pattern).
 * Suite cuda_sparse (device): the CUDA ops on the same inputs equal the CPU ops (identical
 * patterns; spgemm, the upper product with each kernel (HOOKE_SPGEMM), the mirror and the
 * prolongator digit for digit, the inverse to rounding), and the time of the CUDA spgemm against
 * cuSPARSE SpGEMM on a generated elasticity matrix. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#ifdef HOOKE_HAVE_CUDA
#include "../cuda/hk_cuda.h"
#endif

/* ---- helpers ---------------------------------------------------------------------------- */

static double urand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / (double)(1u << 24) * 2.0 - 1.0;
}

static const hk_backend *cpu_be(void)
{
    const hk_backend *be = NULL;
    hk_backend_get("cpu", &be);
    return be;
}

/* A random block CSR on the cpu backend: nbr x nbc blocks of br x bc, about per_row blocks
 * per row at random columns (sorted, distinct); every row with i % empty_every == 1 is empty
 * (empty_every 0: none). */
static void rand_bmat(int64_t nbr, int64_t nbc, int br, int bc, int per_row, int empty_every,
                      unsigned seed, hk_bmat *A)
{
    uint32_t s = seed * 2654435761u + 7u;
    int64_t *cnt = calloc((size_t)nbr + 1, sizeof *cnt);
    char *used = calloc((size_t)nbc + 1, 1);
    int32_t *cols = malloc(((size_t)nbr * per_row + 1) * sizeof *cols);
    int64_t q = 0;
    for (int64_t i = 0; i < nbr; i++) {
        if (!(empty_every && i % empty_every == 1))
            for (int t = 0; t < per_row; t++) {
                int64_t j = (int64_t)((urand(&s) + 1) / 2 * (double)nbc) % nbc;
                if (!used[j]) used[j] = 1;
            }
        for (int64_t j = 0; j < nbc; j++)
            if (used[j]) {
                cols[q++] = (int32_t)j;
                used[j] = 0;
            }
        cnt[i + 1] = q;
    }
    CU_ASSERT_EQUAL_FATAL(hk_bmat_alloc(cpu_be(), br, bc, nbr, nbc, q, A), 0);
    memcpy(A->rowptr, cnt, (size_t)(nbr + 1) * sizeof *cnt);
    memcpy(A->colind, cols, (size_t)q * sizeof *cols);
    for (int64_t k = 0; k < q * br * bc; k++) A->val[k] = urand(&s);
    free(cnt), free(used), free(cols);
}

/* Dense row-major copy (nbrows*br x nbcols*bc) of a cpu-backend hk_bmat. */
static double *to_dense(const hk_bmat *A)
{
    const int64_t m = A->nbrows * A->br, n = A->nbcols * A->bc;
    double *d = calloc((size_t)(m * n > 0 ? m * n : 1), sizeof *d);
    for (int64_t bi = 0; bi < A->nbrows; bi++)
        for (int64_t q = A->rowptr[bi]; q < A->rowptr[bi + 1]; q++)
            for (int r = 0; r < A->br; r++)
                for (int c = 0; c < A->bc; c++)
                    d[(bi * A->br + r) * n + (int64_t)A->colind[q] * A->bc + c] =
                        A->val[((size_t)q * A->br + r) * A->bc + c];
    return d;
}

/* A random SPD block matrix with nb x nb blocks of bs x bs on a band of block half-width 2:
 * symmetric random couplings, diagonal blocks made dominant. */
static void rand_spd(int64_t nb, int bs, unsigned seed, hk_bmat *A)
{
    uint32_t s = seed * 2246822519u + 3u;
    const int64_t n = nb * bs;
    double *d = calloc((size_t)(n * n), sizeof *d);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++)
            if ((i / bs) - (j / bs) <= 2) d[i * n + j] = d[j * n + i] = urand(&s);
    for (int64_t i = 0; i < n; i++) {
        double rs = 0;
        for (int64_t j = 0; j < n; j++) rs += fabs(d[i * n + j]);
        d[i * n + i] = rs + 1.0;
    }
    int64_t nnzb = 0;
    for (int64_t bi = 0; bi < nb; bi++)
        for (int64_t bj = bi - 2; bj <= bi + 2; bj++) nnzb += bj >= 0 && bj < nb;
    CU_ASSERT_EQUAL_FATAL(hk_bmat_alloc(cpu_be(), bs, bs, nb, nb, nnzb, A), 0);
    int64_t q = 0;
    A->rowptr[0] = 0;
    for (int64_t bi = 0; bi < nb; bi++) {
        for (int64_t bj = bi - 2; bj <= bi + 2; bj++) {
            if (bj < 0 || bj >= nb) continue;
            A->colind[q] = (int32_t)bj;
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++)
                    A->val[((size_t)q * bs + r) * bs + c] = d[(bi * bs + r) * n + bj * bs + c];
            q++;
        }
        A->rowptr[bi + 1] = q;
    }
    free(d);
}

/* Zero scalar row and column i of a cpu-backend square-block matrix (a decoupled dof). */
static void zero_dof(hk_bmat *A, int64_t i)
{
    const int bs = A->br;
    for (int64_t bi = 0; bi < A->nbrows; bi++)
        for (int64_t q = A->rowptr[bi]; q < A->rowptr[bi + 1]; q++)
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++)
                    if (bi * bs + r == i || (int64_t)A->colind[q] * bs + c == i)
                        A->val[((size_t)q * bs + r) * bs + c] = 0;
}

/* The symbolic product pattern and the dense product: check C (cpu) against A B. */
static void check_product(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C)
{
    CU_ASSERT_EQUAL_FATAL(C->br, A->br);
    CU_ASSERT_EQUAL_FATAL(C->bc, B->bc);
    CU_ASSERT_EQUAL_FATAL(C->nbrows, A->nbrows);
    CU_ASSERT_EQUAL_FATAL(C->nbcols, B->nbcols);
    /* pattern: block (i, j) iff some A(i, k) and B(k, j) are stored, columns ascending */
    char *hit = calloc((size_t)B->nbcols + 1, 1);
    int pattern_ok = C->rowptr[0] == 0;
    for (int64_t i = 0; i < A->nbrows && pattern_ok; i++) {
        memset(hit, 0, (size_t)B->nbcols);
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            for (int64_t q = B->rowptr[A->colind[p]]; q < B->rowptr[A->colind[p] + 1]; q++)
                hit[B->colind[q]] = 1;
        int64_t t = C->rowptr[i];
        for (int64_t j = 0; j < B->nbcols; j++)
            if (hit[j]) pattern_ok &= t < C->rowptr[i + 1] && C->colind[t++] == j;
        pattern_ok &= t == C->rowptr[i + 1];
    }
    CU_ASSERT(pattern_ok);
    free(hit);
    if (!pattern_ok) return;
    /* values: the dense product, and zero outside the pattern */
    double *a = to_dense(A), *b = to_dense(B), *c = to_dense(C);
    const int64_t m = A->nbrows * A->br, k = A->nbcols * A->bc, n = B->nbcols * B->bc;
    double *ref = calloc((size_t)(m * n > 0 ? m * n : 1), sizeof *ref);
    for (int64_t i = 0; i < m; i++)
        for (int64_t l = 0; l < k; l++)
            if (a[i * k + l] != 0)
                for (int64_t j = 0; j < n; j++) ref[i * n + j] += a[i * k + l] * b[l * n + j];
    CU_ASSERT(hk_test_reldiff(c, ref, (long)(m * n)) < 1e-14);
    free(a), free(b), free(c), free(ref);
}

static int same_bmat(const hk_bmat *X, const hk_bmat *Y)
{
    if (X->br != Y->br || X->bc != Y->bc || X->nbrows != Y->nbrows || X->nbcols != Y->nbcols ||
        X->nnzb != Y->nnzb)
        return 0;
    return !memcmp(X->rowptr, Y->rowptr, (size_t)(X->nbrows + 1) * sizeof(int64_t)) &&
           !memcmp(X->colind, Y->colind, (size_t)X->nnzb * sizeof(int32_t)) &&
           !memcmp(X->val, Y->val, (size_t)X->nnzb * X->br * X->bc * sizeof(double));
}

/* ---- spgemm ----------------------------------------------------------------------------- */

static const struct {
    int br, bk, bc;
    int64_t nbr, nbk, nbc;
    int per_row, empty;
} spgemm_cases[] = {
    {1, 1, 1, 120, 90, 110, 5, 7},  /* scalar, empty rows in A and B */
    {3, 3, 6, 60, 50, 20, 4, 5},    /* A P */
    {6, 3, 6, 20, 60, 20, 6, 0},    /* R (A P) */
    {3, 3, 3, 50, 50, 50, 3, 9},    /* square blocks */
    {2, 5, 1, 30, 10, 40, 12, 4},   /* odd shapes, dense rows of A */
    {3, 3, 6, 5, 4, 3, 0, 0},       /* A with no blocks at all */
};

static void test_spgemm_dense(void)
{
    const hk_backend *be = cpu_be();
    for (size_t t = 0; t < sizeof spgemm_cases / sizeof spgemm_cases[0]; t++) {
        hk_bmat A, B, C;
        rand_bmat(spgemm_cases[t].nbr, spgemm_cases[t].nbk, spgemm_cases[t].br,
                  spgemm_cases[t].bk, spgemm_cases[t].per_row, spgemm_cases[t].empty,
                  (unsigned)(10 + t), &A);
        rand_bmat(spgemm_cases[t].nbk, spgemm_cases[t].nbc, spgemm_cases[t].bk,
                  spgemm_cases[t].bc, 3, spgemm_cases[t].empty ? 3 : 0, (unsigned)(50 + t), &B);
        HK_ASSERT_OK(be->bmat_spgemm(&A, &B, &C));
        check_product(&A, &B, &C);
        hk_bmat_free(&A), hk_bmat_free(&B), hk_bmat_free(&C);
    }
}

static void test_spgemm_threads_and_misuse(void)
{
    const hk_backend *be = cpu_be();
    hk_bmat A, B, C1, C2;
    rand_bmat(400, 300, 3, 3, 8, 0, 77, &A);
    rand_bmat(300, 100, 3, 6, 4, 0, 78, &B);
    const int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    HK_ASSERT_OK(be->bmat_spgemm(&A, &B, &C1));
    omp_set_num_threads(nt > 1 ? nt : 2);
    HK_ASSERT_OK(be->bmat_spgemm(&A, &B, &C2));
    omp_set_num_threads(nt);
    CU_ASSERT(same_bmat(&C1, &C2));
    check_product(&A, &B, &C1);
    hk_bmat_free(&C1), hk_bmat_free(&C2);
    /* shapes that do not chain: an error naming both, no output */
    CU_ASSERT_EQUAL(be->bmat_spgemm(&B, &A, &C1), HK_ERR_ARG);
    CU_ASSERT(strstr(hk_error_message(), "do not chain") != NULL);
    CU_ASSERT(C1.val == NULL);
    hk_error_clear();
    hk_bmat_free(&A), hk_bmat_free(&B);
}

/* Galerkin-like use on a generated elasticity matrix: A A equals the dense square. */
static void test_spgemm_elasticity(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(3, 3, 2, &K));
    hk_bmat A, C;
    HK_ASSERT_OK(hk_bmat_upload(cpu_be(), &K, &A));
    HK_ASSERT_OK(cpu_be()->bmat_spgemm(&A, &A, &C));
    check_product(&A, &A, &C);
    hk_bmat_free(&A), hk_bmat_free(&C);
    hk_bcsr_free(&K);
}

/* ---- prolongator smoothing ---------------------------------------------------------------- */

/* A tentative-prolongator-like T: one b x nns block per row at column agg(i) = i / 4, rows with
 * i % 11 == 5 left without a block (unaggregated nodes). */
static void tentative_like(int64_t nb, int b, int nns, unsigned seed, hk_bmat *T)
{
    uint32_t s = seed * 747796405u + 1u;
    int64_t q = 0;
    for (int64_t i = 0; i < nb; i++) q += i % 11 != 5;
    CU_ASSERT_EQUAL_FATAL(hk_bmat_alloc(cpu_be(), b, nns, nb, (nb + 3) / 4, q, T), 0);
    q = 0;
    T->rowptr[0] = 0;
    for (int64_t i = 0; i < nb; i++) {
        if (i % 11 != 5) {
            T->colind[q] = (int32_t)(i / 4);
            for (int e = 0; e < b * nns; e++) T->val[(size_t)q * b * nns + e] = urand(&s);
            q++;
        }
        T->rowptr[i + 1] = q;
    }
}

/* P = T - w Dinv A T from the ops, with Dinv from bmat_diag; dense reference here. */
static void smooth_case(const hk_backend *be, int64_t nb, int b, int nns, unsigned seed,
                        hk_bmat *Aout, hk_bmat *Tout, hk_bmat *ATout, hk_vec **Dout, hk_bmat *P)
{
    (void)be;
    rand_spd(nb, b, seed, Aout);
    tentative_like(nb, b, nns, seed + 1, Tout);
    HK_ASSERT_OK(cpu_be()->bmat_spgemm(Aout, Tout, ATout));
    int64_t bad = 0;
    HK_ASSERT_OK(hk_vec_create(cpu_be(), nb * b * b, HK_FP64, Dout));
    HK_ASSERT_OK(cpu_be()->bmat_diag(Aout, HK_DIAG_BLOCK_INV, *Dout, &bad));
    CU_ASSERT_EQUAL(bad, -1);
    HK_ASSERT_OK(cpu_be()->amg_smooth_prolongator(ATout, Tout, *Dout, 0.7, P));
}

static void test_smooth_prolongator(void)
{
    const int shapes[][2] = {{3, 6}, {2, 3}, {1, 1}};
    for (int s = 0; s < 3; s++) {
        const int b = shapes[s][0], nns = shapes[s][1];
        const int64_t nb = 45;
        hk_bmat A, T, AT, P;
        hk_vec *D;
        smooth_case(cpu_be(), nb, b, nns, 900 + s, &A, &T, &AT, &D, &P);
        /* P has A T's pattern */
        CU_ASSERT_EQUAL(P.nnzb, AT.nnzb);
        CU_ASSERT(!memcmp(P.rowptr, AT.rowptr, (nb + 1) * sizeof(int64_t)));
        CU_ASSERT(!memcmp(P.colind, AT.colind, AT.nnzb * sizeof(int32_t)));
        /* values: T - w blockdiag(A)^-1 A T, dense */
        const int64_t m = nb * b, n = T.nbcols * nns;
        double *a = to_dense(&A), *t = to_dense(&T), *p = to_dense(&P);
        double *ref = malloc((size_t)(m * n) * sizeof *ref), *at = calloc((size_t)(m * n), 8);
        for (int64_t i = 0; i < m; i++)
            for (int64_t k = 0; k < m; k++)
                for (int64_t j = 0; j < n; j++) at[i * n + j] += a[i * m + k] * t[k * n + j];
        const double *dinv = D->data;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sdi = 0;
                const int64_t bi = i / b, r = i % b;
                for (int mm = 0; mm < b; mm++)
                    sdi += dinv[(bi * b + r) * b + mm] * at[(bi * b + mm) * n + j];
                ref[i * n + j] = t[i * n + j] - 0.7 * sdi;
            }
        CU_ASSERT(hk_test_reldiff(p, ref, (long)(m * n)) < 1e-13);
        /* the block inverse really is the inverse of A's diagonal block (independent check) */
        double e = 0;
        for (int64_t bi = 0; bi < nb; bi++)
            for (int r = 0; r < b; r++)
                for (int c = 0; c < b; c++) {
                    double sum = 0;
                    for (int mm = 0; mm < b; mm++)
                        sum += dinv[(bi * b + r) * b + mm] * a[(bi * b + mm) * m + bi * b + c];
                    e = fmax(e, fabs(sum - (r == c)));
                }
        CU_ASSERT(e < 1e-12);
        free(a), free(t), free(p), free(ref), free(at);
        hk_vec_destroy(D);
        hk_bmat_free(&A), hk_bmat_free(&T), hk_bmat_free(&AT), hk_bmat_free(&P);
    }
}

static void test_smooth_prolongator_misuse(void)
{
    hk_bmat A, T, AT, P, T2;
    hk_vec *D;
    smooth_case(cpu_be(), 30, 3, 6, 31, &A, &T, &AT, &D, &P);
    hk_bmat_free(&P);
    /* a T whose block lies outside A T's pattern: row 0 moved to a far aggregate */
    tentative_like(30, 3, 6, 32, &T2);
    T2.colind[0] = (int32_t)(T2.nbcols - 1);
    CU_ASSERT_EQUAL(cpu_be()->amg_smooth_prolongator(&AT, &T2, D, 0.7, &P), HK_ERR_ARG);
    CU_ASSERT(strstr(hk_error_message(), "block row 0") != NULL);
    CU_ASSERT(P.val == NULL);
    hk_error_clear();
    /* a Dinv of the wrong size */
    hk_vec *D2;
    HK_ASSERT_OK(hk_vec_create(cpu_be(), 30 * 3, HK_FP64, &D2));
    CU_ASSERT_EQUAL(cpu_be()->amg_smooth_prolongator(&AT, &T, D2, 0.7, &P), HK_ERR_ARG);
    hk_error_clear();
    hk_vec_destroy(D), hk_vec_destroy(D2);
    hk_bmat_free(&A), hk_bmat_free(&T), hk_bmat_free(&AT), hk_bmat_free(&T2);
}

/* ---- dense inverse and gemv -------------------------------------------------------------- */

/* max |Minv A - I| over the coupled dofs; the decoupled dof dec must have an identity row and
 * column in Minv. Minv column-major n x n (fp64 copy). */
static double inverse_error(const hk_bmat *A, const double *minv, int64_t dec)
{
    double *a = to_dense(A);
    const int64_t n = A->nbrows * A->br;
    double e = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            if (i == dec || j == dec) {
                double want = i == j ? 1.0 : 0.0;
                if (!(minv[j * n + i] == want)) e = INFINITY;
                continue;
            }
            double s = 0;
            for (int64_t k = 0; k < n; k++) s += minv[k * n + i] * a[k * n + j];
            e = fmax(e, fabs(s - (i == j)));
        }
    free(a);
    return e;
}

static void test_dense_inverse(void)
{
    const hk_backend *be = cpu_be();
    const struct {
        int64_t nb;
        int bs;
        int64_t dec;
    } cases[] = {{1, 1, -1}, {70, 3, 100}, {53, 6, 7}, {150, 1, 149}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        hk_bmat A;
        rand_spd(cases[t].nb, cases[t].bs, (unsigned)(400 + t), &A);
        if (cases[t].dec >= 0) zero_dof(&A, cases[t].dec);
        const int64_t n = cases[t].nb * cases[t].bs;
        hk_vec *M, *M32;
        int64_t bad = 5;
        HK_ASSERT_OK(hk_vec_create(be, n * n, HK_FP64, &M));
        HK_ASSERT_OK(be->dense_inverse(&A, M, &bad));
        CU_ASSERT_EQUAL(bad, -1);
        CU_ASSERT(inverse_error(&A, M->data, cases[t].dec) < 1e-12);
        /* fp32: the same inverse rounded */
        HK_ASSERT_OK(hk_vec_create(be, n * n, HK_FP32, &M32));
        HK_ASSERT_OK(be->dense_inverse(&A, M32, &bad));
        CU_ASSERT_EQUAL(bad, -1);
        double err = 0, mx = 0;
        for (int64_t k = 0; k < n * n; k++) {
            err = fmax(err, fabs(((float *)M32->data)[k] - ((double *)M->data)[k]));
            mx = fmax(mx, fabs(((double *)M->data)[k]));
        }
        CU_ASSERT(err <= 1e-7 * mx);
        hk_vec_destroy(M), hk_vec_destroy(M32);
        hk_bmat_free(&A);
    }
}

static void test_dense_inverse_not_spd(void)
{
    const hk_backend *be = cpu_be();
    hk_bmat A;
    rand_spd(60, 3, 17, &A);
    const int64_t n = 180, row = 131;
    /* a negative diagonal entry: the leading minors before it are untouched, its pivot is
     * negative */
    for (int64_t q = A.rowptr[row / 3]; q < A.rowptr[row / 3 + 1]; q++)
        if (A.colind[q] == row / 3) A.val[(q * 3 + row % 3) * 3 + row % 3] = -5.0;
    hk_vec *M;
    int64_t bad = -1;
    HK_ASSERT_OK(hk_vec_create(be, n * n, HK_FP64, &M));
    HK_ASSERT_OK(be->dense_inverse(&A, M, &bad));
    CU_ASSERT_EQUAL(bad, row);
    /* a NaN is bad too, and earlier */
    A.val[0] = NAN;
    HK_ASSERT_OK(be->dense_inverse(&A, M, &bad));
    CU_ASSERT_EQUAL(bad, 0);
    /* a wrong-size Minv is misuse */
    hk_vec *M2;
    HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &M2));
    CU_ASSERT_EQUAL(be->dense_inverse(&A, M2, &bad), HK_ERR_ARG);
    hk_error_clear();
    hk_vec_destroy(M), hk_vec_destroy(M2);
    hk_bmat_free(&A);
}

static void test_dense_gemv(void)
{
    const hk_backend *be = cpu_be();
    for (int n = 1; n <= 301; n += 100) {
        uint32_t s = (uint32_t)n;
        double *m = malloc((size_t)n * n * sizeof *m), *x = malloc(n * sizeof *x);
        double *y = malloc(n * sizeof *y), *ref = malloc(n * sizeof *ref);
        for (int64_t k = 0; k < (int64_t)n * n; k++) m[k] = urand(&s);
        for (int i = 0; i < n; i++) x[i] = urand(&s);
        for (int i = 0; i < n; i++) {
            ref[i] = 0;
            for (int j = 0; j < n; j++) ref[i] += m[(int64_t)j * n + i] * x[j];
        }
        for (int p = 0; p < 2; p++) {
            const hk_precision prec = p ? HK_FP32 : HK_FP64;
            hk_vec *M, *X, *Y;
            HK_ASSERT_OK(hk_vec_create(be, (int64_t)n * n, prec, &M));
            HK_ASSERT_OK(hk_vec_create(be, n, prec, &X));
            HK_ASSERT_OK(hk_vec_create(be, n, prec, &Y));
            HK_ASSERT_OK(hk_vec_upload(M, m));
            HK_ASSERT_OK(hk_vec_upload(X, x));
            HK_ASSERT_OK(be->dense_gemv(M, X, Y));
            HK_ASSERT_OK(hk_vec_download(Y, y));
            CU_ASSERT(hk_test_reldiff(y, ref, n) < (p ? 1e-5 : 1e-14));
            hk_vec_destroy(M), hk_vec_destroy(X), hk_vec_destroy(Y);
        }
        free(m), free(x), free(y), free(ref);
    }
}


/* ---- the symmetric Galerkin product: pattern, upper blocks, mirror ------------------------ */

/* C = A B square in blocks (B has A's block rows as columns), so the diagonal crosses every
 * row; full: A's middle row holds every column, so C's middle row is longer than the device
 * kernels' shared memory (their in-place paths). */
static const struct {
    int br, bk, bc;
    int64_t nbr, nbk;
    int per_a, per_b, empty, full;
} upper_cases[] = {
    {3, 3, 6, 200, 150, 6, 3, 0, 0},  /* A P's shape */
    {6, 3, 6, 120, 300, 10, 4, 0, 0}, /* R (A P) */
    {6, 6, 6, 150, 150, 8, 5, 0, 0},  /* coarse levels */
    {3, 2, 3, 150, 300, 10, 4, 0, 0}, /* 2D R (A P) */
    {2, 2, 3, 200, 200, 6, 3, 0, 0},  /* 2D A P */
    {3, 3, 3, 100, 100, 6, 4, 7, 0},  /* 2D coarse levels, empty rows */
    {1, 1, 1, 300, 300, 6, 4, 5, 0},  /* scalar */
    {2, 3, 2, 100, 120, 6, 4, 0, 0},  /* no AMG shape: the generic kernel */
    {6, 3, 6, 120, 300, 10, 4, 0, 1}, /* R (A P), a row longer than shared memory */
    {3, 2, 3, 150, 300, 10, 4, 0, 1}, /* 2D R (A P), the same */
    {4, 4, 4, 200, 200, 3, 3, 0, 1},  /* generic, the same */
};
#define UPPER_CASES ((size_t)(sizeof upper_cases / sizeof upper_cases[0]))

/* A with block row `row` replaced by one holding every block column (random values). */
static void fill_row(hk_bmat *A, int64_t row, unsigned seed)
{
    uint32_t s = seed * 2654435761u + 11u;
    hk_bmat W;
    const int64_t bb = A->br * A->bc, r0 = A->rowptr[row], r1 = A->rowptr[row + 1];
    const int64_t nnzb = A->nnzb - (r1 - r0) + A->nbcols;
    CU_ASSERT_EQUAL_FATAL(
        hk_bmat_alloc(cpu_be(), A->br, A->bc, A->nbrows, A->nbcols, nnzb, &W), 0);
    for (int64_t i = 0; i <= A->nbrows; i++)
        W.rowptr[i] = A->rowptr[i] + (i > row ? A->nbcols - (r1 - r0) : 0);
    memcpy(W.colind, A->colind, (size_t)r0 * sizeof *W.colind);
    memcpy(W.val, A->val, (size_t)(r0 * bb) * sizeof *W.val);
    for (int64_t j = 0; j < A->nbcols; j++) W.colind[r0 + j] = (int32_t)j;
    for (int64_t k = 0; k < A->nbcols * bb; k++) W.val[r0 * bb + k] = urand(&s);
    memcpy(W.colind + r0 + A->nbcols, A->colind + r1, (size_t)(A->nnzb - r1) * sizeof *W.colind);
    memcpy(W.val + (r0 + A->nbcols) * bb, A->val + r1 * bb,
           (size_t)((A->nnzb - r1) * bb) * sizeof *W.val);
    hk_bmat_free(A);
    *A = W;
}

/* Case t's A and B on the cpu backend and C = A B by bmat_spgemm. */
static void upper_pair(size_t t, hk_bmat *A, hk_bmat *B, hk_bmat *C)
{
    rand_bmat(upper_cases[t].nbr, upper_cases[t].nbk, upper_cases[t].br, upper_cases[t].bk,
              upper_cases[t].per_a, upper_cases[t].empty, (unsigned)(200 + t), A);
    if (upper_cases[t].full) fill_row(A, upper_cases[t].nbr / 2, (unsigned)(300 + t));
    rand_bmat(upper_cases[t].nbk, upper_cases[t].nbr, upper_cases[t].bk, upper_cases[t].bc,
              upper_cases[t].per_b, upper_cases[t].empty, (unsigned)(400 + t), B);
    HK_ASSERT_OK(cpu_be()->bmat_spgemm(A, B, C));
}

/* Values that no product gives (distinct per entry): what a block left untouched keeps. */
static void poison(double *v, int64_t n)
{
    for (int64_t k = 0; k < n; k++) v[k] = -1e300 + 1e284 * (double)k;
}

/* The values the upper product must leave in a poisoned copy of C's pattern: C's on and above
 * the block diagonal, the poison below it. */
static double *upper_expected(const hk_bmat *C)
{
    const int64_t bb = C->br * C->bc;
    double *want = malloc((size_t)(C->nnzb * bb + 1) * sizeof *want);
    poison(want, C->nnzb * bb);
    for (int64_t i = 0; i < C->nbrows; i++)
        for (int64_t q = C->rowptr[i]; q < C->rowptr[i + 1]; q++)
            if (C->colind[q] >= i)
                memcpy(want + q * bb, C->val + q * bb, (size_t)bb * sizeof *want);
    return want;
}

/* A block row of C with a block above the diagonal after another block (its last block, whose
 * column becomes the one before it to break the pattern), or -1. */
static int64_t upper_victim(const hk_bmat *C)
{
    for (int64_t i = 0; i < C->nbrows; i++) {
        const int64_t q = C->rowptr[i + 1] - 1;
        if (q > C->rowptr[i] && C->colind[q] > i) return i;
    }
    return -1;
}

/* A block row of C whose second block is below the diagonal, or -1. */
static int64_t lower_victim(const hk_bmat *C)
{
    for (int64_t i = 0; i < C->nbrows; i++)
        if (C->rowptr[i + 1] - C->rowptr[i] >= 2 && C->colind[C->rowptr[i] + 1] < i) return i;
    return -1;
}

/* An error naming block row `row` was recorded (and is cleared). */
static int names_row(int64_t row)
{
    char want[64];
    snprintf(want, sizeof want, "block row %lld ", (long long)row);
    const int ok = strstr(hk_error_message(), want) != NULL;
    if (!ok) fprintf(stderr, "\n  '%s' lacks '%s'\n", hk_error_message(), want);
    hk_error_clear();
    return ok;
}

static void test_spgemm_upper(void)
{
    const hk_backend *be = cpu_be();
    for (size_t t = 0; t < UPPER_CASES; t++) {
        hk_bmat A, B, C, N;
        upper_pair(t, &A, &B, &C);
        /* the pattern alone: bmat_spgemm's */
        HK_ASSERT_OK(be->bmat_spgemm_pattern(&A, &B, &N));
        CU_ASSERT(N.nnzb == C.nnzb && N.br == C.br && N.bc == C.bc && N.nbcols == C.nbcols);
        CU_ASSERT(!memcmp(N.rowptr, C.rowptr, (size_t)(C.nbrows + 1) * sizeof *C.rowptr));
        CU_ASSERT(!memcmp(N.colind, C.colind, (size_t)C.nnzb * sizeof *C.colind));
        const int64_t nv = C.nnzb * C.br * C.bc;
        /* the upper blocks: spgemm's bytes; the lower ones untouched */
        double *want = upper_expected(&C);
        poison(N.val, nv);
        HK_ASSERT_OK(be->bmat_spgemm_numeric_upper(&A, &B, &N));
        CU_ASSERT(!memcmp(N.val, want, (size_t)nv * sizeof *want));
        /* a block above the diagonal missing from the pattern: named by its row */
        const int64_t row = upper_victim(&C);
        CU_ASSERT_FATAL(row >= 0);
        const int64_t q = N.rowptr[row + 1] - 1;
        N.colind[q] = N.colind[q - 1];
        CU_ASSERT_EQUAL(be->bmat_spgemm_numeric_upper(&A, &B, &N), HK_ERR_ARG);
        CU_ASSERT(names_row(row));
        N.colind[q] = C.colind[q];
        /* one below it: not looked at, the upper blocks the same */
        const int64_t low = lower_victim(&C);
        if (low >= 0) {
            const int64_t p = N.rowptr[low] + 1;
            N.colind[p] = N.colind[p - 1];
            poison(N.val, nv);
            HK_ASSERT_OK(be->bmat_spgemm_numeric_upper(&A, &B, &N));
            CU_ASSERT(!memcmp(N.val, want, (size_t)nv * sizeof *want));
            N.colind[p] = C.colind[p];
        }
        /* shapes that do not fit */
        hk_bmat wrong = N;
        wrong.bc += 1;
        CU_ASSERT_EQUAL(be->bmat_spgemm_numeric_upper(&A, &B, &wrong), HK_ERR_ARG);
        hk_error_clear();
        free(want);
        hk_bmat_free(&A), hk_bmat_free(&B), hk_bmat_free(&C), hk_bmat_free(&N);
    }
}

/* The hand-made matrix of the mirror tests: 4 x 4 blocks of 2 x 2, rows {0 1 3} {0 1 2} {1 2}
 * {0 3} (symmetric) or, asymmetric, row 0 without its block 3; the blocks on and above the
 * diagonal hold upper_value, the ones below -7. */
static double upper_value(int64_t I, int64_t J, int r, int c)
{
    return 1000.0 * (double)I + 100.0 * (double)J + 10.0 * r + c + 1;
}

static void mirror_matrix(int asymmetric, hk_bmat *M)
{
    static const int32_t cols[] = {0, 1, 3, 0, 1, 2, 1, 2, 0, 3};
    static const int64_t rp[] = {0, 3, 6, 8, 10};
    const int drop = asymmetric ? 1 : 0; /* row 0's block 3 */
    CU_ASSERT_EQUAL_FATAL(hk_bmat_alloc(cpu_be(), 2, 2, 4, 4, 10 - drop, M), 0);
    for (int64_t i = 0, q = 0; i < 4; i++) {
        M->rowptr[i] = q;
        for (int64_t p = rp[i]; p < rp[i + 1]; p++) {
            if (drop && i == 0 && cols[p] == 3) continue;
            M->colind[q] = cols[p];
            for (int r = 0; r < 2; r++)
                for (int c = 0; c < 2; c++)
                    M->val[q * 4 + r * 2 + c] = cols[p] >= i ? upper_value(i, cols[p], r, c) : -7;
            q++;
        }
        M->rowptr[i + 1] = q;
    }
}

/* Every block of M: (I, J) above the diagonal as made, below it (J, I)'s transpose; the
 * diagonal blocks' upper triangles as made, their lower ones the transposes. */
static int mirrored(const hk_bmat *M)
{
    int ok = 1;
    for (int64_t i = 0; i < 4; i++)
        for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++)
            for (int r = 0; r < 2; r++)
                for (int c = 0; c < 2; c++) {
                    const int64_t j = M->colind[q];
                    const double want = j < i || (j == i && r > c) ? upper_value(j, i, c, r)
                                                                   : upper_value(i, j, r, c);
                    ok &= M->val[q * 4 + r * 2 + c] == want;
                }
    return ok;
}

static void test_mirror(void)
{
    const hk_backend *be = cpu_be();
    hk_bmat M;
    mirror_matrix(0, &M);
    HK_ASSERT_OK(be->bmat_mirror_lower(&M));
    CU_ASSERT(mirrored(&M));
    hk_bmat_free(&M);
    /* row 3's block 0 has no mirror: named */
    mirror_matrix(1, &M);
    CU_ASSERT_EQUAL(be->bmat_mirror_lower(&M), HK_ERR_ARG);
    CU_ASSERT(names_row(3));
    /* blocks that are not square */
    hk_bmat wrong = M;
    wrong.bc = 1;
    CU_ASSERT_EQUAL(be->bmat_mirror_lower(&wrong), HK_ERR_ARG);
    CU_ASSERT(strstr(hk_error_message(), "square") != NULL);
    hk_error_clear();
    hk_bmat_free(&M);
}

/* The symmetric Galerkin product of a random 6x3 R and its transpose around an SPD A (a level's
 * R A R^T): pattern, upper blocks and mirror give a matrix whose entries above the scalar
 * diagonal are bmat_spgemm's bytes and whose others are their mirrors byte for byte. */
static void galerkin_symmetric(const hk_backend *be, const hk_bmat *R, const hk_bmat *AP,
                               hk_bmat *S)
{
    HK_ASSERT_OK(be->bmat_spgemm_pattern(R, AP, S));
    HK_ASSERT_OK(be->bmat_spgemm_numeric_upper(R, AP, S));
    HK_ASSERT_OK(be->bmat_mirror_lower(S));
}

/* R (6x3 blocks, nc x nf), A (3x3, nf x nf, SPD) and A P with P = R^T, on the cpu backend. */
static void galerkin_inputs(int64_t nf, int64_t nc, unsigned seed, hk_bmat *R, hk_bmat *A,
                            hk_bmat *AP)
{
    hk_bmat P;
    rand_bmat(nc, nf, 6, 3, 12, 0, seed, R);
    rand_spd(nf, 3, seed + 1, A);
    HK_ASSERT_OK(cpu_be()->bmat_transpose(R, &P));
    HK_ASSERT_OK(cpu_be()->bmat_spgemm(A, &P, AP));
    hk_bmat_free(&P);
}

static void test_galerkin_symmetric(void)
{
    hk_bmat R, A, AP, C, S;
    galerkin_inputs(300, 60, 5, &R, &A, &AP);
    HK_ASSERT_OK(cpu_be()->bmat_spgemm(&R, &AP, &C));
    galerkin_symmetric(cpu_be(), &R, &AP, &S);
    CU_ASSERT_FATAL(S.nnzb == C.nnzb);
    int upper_same = 1, symmetric = 1, whole_symmetric = 1;
    for (int64_t i = 0; i < S.nbrows; i++)
        for (int64_t q = S.rowptr[i]; q < S.rowptr[i + 1]; q++) {
            const int64_t j = S.colind[q], m = hk_find_block(S.rowptr, S.colind, j, i);
            CU_ASSERT_FATAL(m >= 0);
            for (int r = 0; r < 6; r++)
                for (int c = 0; c < 6; c++) {
                    symmetric &= S.val[q * 36 + r * 6 + c] == S.val[m * 36 + c * 6 + r];
                    whole_symmetric &= C.val[q * 36 + r * 6 + c] == C.val[m * 36 + c * 6 + r];
                }
            for (int e = 0; e < 36; e++) /* above the scalar diagonal */
                if (j > i || (j == i && e / 6 <= e % 6))
                    upper_same &= !memcmp(S.val + q * 36 + e, C.val + q * 36 + e, sizeof(double));
        }
    CU_ASSERT(upper_same);
    CU_ASSERT(symmetric);
    /* the whole product is symmetric only to rounding (else this test shows nothing) */
    CU_ASSERT(!whole_symmetric);
    CU_ASSERT(hk_test_reldiff(S.val, C.val, (long)(C.nnzb * 36)) < 1e-14);
    hk_bmat_free(&R), hk_bmat_free(&A), hk_bmat_free(&AP), hk_bmat_free(&C), hk_bmat_free(&S);
}

HK_SUITE(sparse_setup,
         {"spgemm equals the dense product, symbolic pattern (1x1, 3x3.3x6, 6x3.3x6, empty rows)",
          test_spgemm_dense},
         {"spgemm: same digits for 1 and 2 threads; shapes that do not chain rejected",
          test_spgemm_threads_and_misuse},
         {"spgemm of an elasticity matrix with itself equals the dense square",
          test_spgemm_elasticity},
         {"smoothed prolongator equals T - w Dinv A T on A T's pattern", test_smooth_prolongator},
         {"smoothed prolongator: T outside A T's pattern and a wrong Dinv rejected",
          test_smooth_prolongator_misuse},
         {"dense inverse of SPD matrices (decoupled dof: identity), fp64 and fp32",
          test_dense_inverse},
         {"dense inverse names the first non-positive pivot", test_dense_inverse_not_spd},
         {"dense gemv equals the dense sum, fp64 and fp32", test_dense_gemv},
         {"spgemm pattern alone: spgemm's; upper numeric: spgemm's bytes on and above the "
          "diagonal, the rest untouched (AMG and generic shapes, long rows); errors named",
          test_spgemm_upper},
         {"mirror of the lower blocks on a hand-made matrix; an asymmetric pattern named",
          test_mirror},
         {"R A R^T by pattern, upper blocks and mirror: exactly symmetric, spgemm's upper bytes",
          test_galerkin_symmetric})

/* ---- device: CUDA equals CPU --------------------------------------------------------------- */

#ifdef HOOKE_HAVE_CUDA
static const hk_backend *cuda_be(void)
{
    const hk_backend *be = NULL;
    hk_backend_get("cuda", &be);
    return be;
}

/* The device result D (cuda) against the cpu result H: same pattern, values to 1e-14 (the
 * kernels follow the CPU's order of operations, so they normally agree digit for digit). */
static void same_as_cpu(const hk_bmat *D, const hk_bmat *H, const char *what)
{
    hk_bmat X;
    HK_ASSERT_OK(hk_bmat_to_host(D, &X));
    CU_ASSERT(X.br == H->br && X.bc == H->bc && X.nbrows == H->nbrows && X.nbcols == H->nbcols);
    CU_ASSERT_EQUAL_FATAL(X.nnzb, H->nnzb);
    CU_ASSERT(!memcmp(X.rowptr, H->rowptr, (size_t)(H->nbrows + 1) * sizeof(int64_t)));
    CU_ASSERT(!memcmp(X.colind, H->colind, (size_t)H->nnzb * sizeof(int32_t)));
    const long nv = (long)(H->nnzb * H->br * H->bc);
    CU_ASSERT(hk_test_reldiff(X.val, H->val, nv) <= 1e-14);
    long differ = 0;
    for (long k = 0; k < nv; k++) differ += X.val[k] != H->val[k];
    if (differ) printf("\n    %s: %ld of %ld values differ from the CPU's in the last digits", what,
                       differ, nv);
    hk_bmat_free(&X);
}

static void test_cuda_spgemm(void)
{
    for (size_t t = 0; t <= sizeof spgemm_cases / sizeof spgemm_cases[0]; t++) {
        hk_bmat A, B, C, dA, dB, dC;
        if (t < sizeof spgemm_cases / sizeof spgemm_cases[0]) {
            rand_bmat(spgemm_cases[t].nbr, spgemm_cases[t].nbk, spgemm_cases[t].br,
                      spgemm_cases[t].bk, spgemm_cases[t].per_row, spgemm_cases[t].empty,
                      (unsigned)(10 + t), &A);
            rand_bmat(spgemm_cases[t].nbk, spgemm_cases[t].nbc, spgemm_cases[t].bk,
                      spgemm_cases[t].bc, 3, spgemm_cases[t].empty ? 3 : 0, (unsigned)(50 + t),
                      &B);
        } else { /* rows with about a thousand distinct columns: the global hash tables */
            rand_bmat(40, 60, 2, 3, 60, 9, 5, &A);
            rand_bmat(60, 3000, 3, 2, 25, 0, 6, &B);
        }
        HK_ASSERT_OK(cpu_be()->bmat_spgemm(&A, &B, &C));
        hk_test_bmat_to(cuda_be(), &A, &dA);
        hk_test_bmat_to(cuda_be(), &B, &dB);
        HK_ASSERT_OK(cuda_be()->bmat_spgemm(&dA, &dB, &dC));
        same_as_cpu(&dC, &C, "spgemm");
        if (t == sizeof spgemm_cases / sizeof spgemm_cases[0]) check_product(&A, &B, &C);
        hk_bmat_free(&A), hk_bmat_free(&B), hk_bmat_free(&C);
        hk_bmat_free(&dA), hk_bmat_free(&dB), hk_bmat_free(&dC);
    }
    /* misuse: the same sentence as the CPU */
    hk_bmat A, B, dA, dB, dC;
    rand_bmat(10, 8, 3, 3, 2, 0, 1, &A);
    rand_bmat(9, 8, 3, 6, 2, 0, 2, &B);
    hk_test_bmat_to(cuda_be(), &A, &dA);
    hk_test_bmat_to(cuda_be(), &B, &dB);
    CU_ASSERT_EQUAL(cuda_be()->bmat_spgemm(&dA, &dB, &dC), HK_ERR_ARG);
    CU_ASSERT(strstr(hk_error_message(), "do not chain") != NULL);
    hk_error_clear();
    hk_bmat_free(&A), hk_bmat_free(&B), hk_bmat_free(&dA), hk_bmat_free(&dB);
}

static void test_cuda_smooth_prolongator(void)
{
    hk_bmat A, T, AT, P, dAT, dT, dP;
    hk_vec *D, *dD;
    smooth_case(cpu_be(), 500, 3, 6, 77, &A, &T, &AT, &D, &P);
    hk_test_bmat_to(cuda_be(), &AT, &dAT);
    hk_test_bmat_to(cuda_be(), &T, &dT);
    HK_ASSERT_OK(hk_vec_create(cuda_be(), D->n, HK_FP64, &dD));
    HK_ASSERT_OK(hk_vec_upload(dD, D->data));
    HK_ASSERT_OK(cuda_be()->amg_smooth_prolongator(&dAT, &dT, dD, 0.7, &dP));
    same_as_cpu(&dP, &P, "smoothed prolongator");
    hk_bmat_free(&dP), hk_bmat_free(&dT);
    /* T outside A T's pattern: the row named as on the CPU */
    T.colind[T.rowptr[3]] = (int32_t)(T.nbcols - 1);
    hk_test_bmat_to(cuda_be(), &T, &dT);
    CU_ASSERT_EQUAL(cuda_be()->amg_smooth_prolongator(&dAT, &dT, dD, 0.7, &dP), HK_ERR_ARG);
    CU_ASSERT(strstr(hk_error_message(), "block row 3 ") != NULL);
    hk_error_clear();
    hk_vec_destroy(D), hk_vec_destroy(dD);
    hk_bmat_free(&A), hk_bmat_free(&T), hk_bmat_free(&AT), hk_bmat_free(&P);
    hk_bmat_free(&dAT), hk_bmat_free(&dT);
}

/* Run dense_inverse on both backends; returns the relative difference (fp64 copies). */
static double inverse_both(const hk_bmat *A, hk_precision p, int64_t *bad_cpu, int64_t *bad_cuda)
{
    const int64_t n = A->nbrows * A->br;
    hk_bmat dA;
    hk_vec *M, *dM;
    double *m = malloc((size_t)(n * n) * sizeof *m), *dm = malloc((size_t)(n * n) * sizeof *dm);
    hk_test_bmat_to(cuda_be(), A, &dA);
    HK_ASSERT_OK(hk_vec_create(cpu_be(), n * n, p, &M));
    HK_ASSERT_OK(hk_vec_create(cuda_be(), n * n, p, &dM));
    HK_ASSERT_OK(cpu_be()->dense_inverse(A, M, bad_cpu));
    HK_ASSERT_OK(cuda_be()->dense_inverse(&dA, dM, bad_cuda));
    HK_ASSERT_OK(hk_vec_download(M, m));
    HK_ASSERT_OK(hk_vec_download(dM, dm));
    const double d = hk_test_reldiff(dm, m, (long)(n * n));
    free(m), free(dm);
    hk_vec_destroy(M), hk_vec_destroy(dM);
    hk_bmat_free(&dA);
    return d;
}

static void test_cuda_dense(void)
{
    hk_bmat A;
    int64_t b1 = 5, b2 = 5;
    rand_spd(400, 3, 91, &A); /* 1200 rows */
    zero_dof(&A, 500);
    CU_ASSERT(inverse_both(&A, HK_FP64, &b1, &b2) < 1e-12);
    CU_ASSERT(b1 == -1 && b2 == -1);
    CU_ASSERT(inverse_both(&A, HK_FP32, &b1, &b2) < 1e-6);
    /* the decoupled dof has the identity row in the device's inverse too: checked through
     * the CPU's (inverse_error in sparse_setup) and the agreement above */
    for (int64_t q = A.rowptr[700 / 3]; q < A.rowptr[700 / 3 + 1]; q++)
        if (A.colind[q] == 700 / 3) A.val[(q * 3 + 700 % 3) * 3 + 700 % 3] = -4.0;
    inverse_both(&A, HK_FP64, &b1, &b2);
    CU_ASSERT(b1 == 700 && b2 == 700);
    A.val[7] = NAN; /* block row 0, entry (2, 1) (lower triangle): pivot 2 becomes NaN */
    inverse_both(&A, HK_FP64, &b1, &b2);
    CU_ASSERT(b1 == 2 && b2 == 2);
    hk_bmat_free(&A);
    /* gemv */
    for (int n = 1; n <= 2001; n += 1000)
        for (int p = 0; p < 2; p++) {
            const hk_precision prec = p ? HK_FP32 : HK_FP64;
            uint32_t s = (uint32_t)(n + p);
            double *m = malloc((size_t)n * n * sizeof *m), *x = malloc(n * sizeof *x);
            double *y = malloc(n * sizeof *y), *dy = malloc(n * sizeof *dy);
            for (int64_t k = 0; k < (int64_t)n * n; k++) m[k] = urand(&s);
            for (int i = 0; i < n; i++) x[i] = urand(&s);
            hk_vec *v[6];
            const hk_backend *be[2] = {cpu_be(), cuda_be()};
            for (int b = 0; b < 2; b++) {
                HK_ASSERT_OK(hk_vec_create(be[b], (int64_t)n * n, prec, &v[3 * b]));
                HK_ASSERT_OK(hk_vec_create(be[b], n, prec, &v[3 * b + 1]));
                HK_ASSERT_OK(hk_vec_create(be[b], n, prec, &v[3 * b + 2]));
                HK_ASSERT_OK(hk_vec_upload(v[3 * b], m));
                HK_ASSERT_OK(hk_vec_upload(v[3 * b + 1], x));
                HK_ASSERT_OK(be[b]->dense_gemv(v[3 * b], v[3 * b + 1], v[3 * b + 2]));
            }
            HK_ASSERT_OK(hk_vec_download(v[2], y));
            HK_ASSERT_OK(hk_vec_download(v[5], dy));
            CU_ASSERT(hk_test_reldiff(dy, y, n) < (p ? 1e-6 : 1e-13));
            for (int k = 0; k < 6; k++) hk_vec_destroy(v[k]);
            free(m), free(x), free(y), free(dy);
        }
}


/* A copy of C's pattern (values poisoned) on the cpu backend. */
static void pattern_copy(const hk_bmat *C, hk_bmat *N)
{
    HK_ASSERT_OK(hk_bmat_alloc(cpu_be(), C->br, C->bc, C->nbrows, C->nbcols, C->nnzb, N));
    memcpy(N->rowptr, C->rowptr, (size_t)(C->nbrows + 1) * sizeof *N->rowptr);
    memcpy(N->colind, C->colind, (size_t)C->nnzb * sizeof *N->colind);
    poison(N->val, C->nnzb * C->br * C->bc);
}

/* HOOKE_SPGEMM for the device's numeric kernels: each product's own choice, row, stationary. */
static const char *const upper_kernels[] = {"", "row", "stationary"};

/* The device's pattern alone and upper product equal the CPU's byte for byte with each numeric
 * kernel, including the in-place paths of rows too long for shared memory; a missing upper
 * block named by its row, a missing lower one not looked at. */
static void test_cuda_spgemm_upper(void)
{
    const hk_backend *cpu = cpu_be(), *gpu = cuda_be();
    for (size_t t = 0; t < UPPER_CASES; t++) {
        hk_bmat A, B, C, N, dA, dB, dP, dN, X;
        upper_pair(t, &A, &B, &C);
        const int64_t nv = C.nnzb * C.br * C.bc;
        hk_test_bmat_to(gpu, &A, &dA);
        hk_test_bmat_to(gpu, &B, &dB);
        HK_ASSERT_OK(gpu->bmat_spgemm_pattern(&dA, &dB, &dP));
        HK_ASSERT_OK(hk_bmat_to_host(&dP, &X));
        CU_ASSERT(X.nnzb == C.nnzb && X.br == C.br && X.bc == C.bc);
        CU_ASSERT(!memcmp(X.rowptr, C.rowptr, (size_t)(C.nbrows + 1) * sizeof *C.rowptr));
        CU_ASSERT(!memcmp(X.colind, C.colind, (size_t)C.nnzb * sizeof *C.colind));
        hk_bmat_free(&X), hk_bmat_free(&dP);
        pattern_copy(&C, &N);
        HK_ASSERT_OK(cpu->bmat_spgemm_numeric_upper(&A, &B, &N)); /* the reference */
        const int64_t row = upper_victim(&C), low = lower_victim(&C);
        for (size_t v = 0; v < sizeof upper_kernels / sizeof upper_kernels[0]; v++) {
            setenv("HOOKE_SPGEMM", upper_kernels[v], 1);
            hk_bmat P;
            pattern_copy(&C, &P); /* poisoned, as N was */
            hk_test_bmat_to(gpu, &P, &dN);
            HK_ASSERT_OK(gpu->bmat_spgemm_numeric_upper(&dA, &dB, &dN));
            HK_ASSERT_OK(hk_bmat_to_host(&dN, &X));
            const int same = !memcmp(X.val, N.val, (size_t)nv * sizeof *N.val);
            CU_ASSERT(same);
            if (!same)
                fprintf(stderr, "\n  case %zu, HOOKE_SPGEMM='%s': values differ\n", t,
                        upper_kernels[v]);
            hk_bmat_free(&X), hk_bmat_free(&dN);
            /* an upper block missing: named; a lower one: no error, the same values */
            const int64_t q = P.rowptr[row + 1] - 1;
            P.colind[q] = P.colind[q - 1];
            hk_test_bmat_to(gpu, &P, &dN);
            CU_ASSERT_EQUAL(gpu->bmat_spgemm_numeric_upper(&dA, &dB, &dN), HK_ERR_ARG);
            CU_ASSERT(names_row(row));
            hk_bmat_free(&dN);
            P.colind[q] = C.colind[q];
            if (low >= 0) {
                const int64_t p = P.rowptr[low] + 1;
                P.colind[p] = P.colind[p - 1];
                hk_test_bmat_to(gpu, &P, &dN);
                HK_ASSERT_OK(gpu->bmat_spgemm_numeric_upper(&dA, &dB, &dN));
                HK_ASSERT_OK(hk_bmat_to_host(&dN, &X));
                CU_ASSERT(!memcmp(X.val, N.val, (size_t)nv * sizeof *N.val));
                hk_bmat_free(&X), hk_bmat_free(&dN);
            }
            hk_bmat_free(&P);
        }
        unsetenv("HOOKE_SPGEMM");
        hk_bmat_free(&A), hk_bmat_free(&B), hk_bmat_free(&C), hk_bmat_free(&N);
        hk_bmat_free(&dA), hk_bmat_free(&dB);
    }
}

/* The device's mirror equals the CPU's: the hand-made matrix, its asymmetric twin named, and a
 * whole symmetric Galerkin product R A R^T byte for byte. */
static void test_cuda_mirror(void)
{
    const hk_backend *gpu = cuda_be();
    hk_bmat M, dM, X;
    mirror_matrix(0, &M);
    hk_test_bmat_to(gpu, &M, &dM);
    HK_ASSERT_OK(gpu->bmat_mirror_lower(&dM));
    HK_ASSERT_OK(hk_bmat_to_host(&dM, &X));
    CU_ASSERT(mirrored(&X));
    hk_bmat_free(&M), hk_bmat_free(&dM), hk_bmat_free(&X);
    mirror_matrix(1, &M);
    hk_test_bmat_to(gpu, &M, &dM);
    CU_ASSERT_EQUAL(gpu->bmat_mirror_lower(&dM), HK_ERR_ARG);
    CU_ASSERT(names_row(3));
    hk_bmat_free(&M), hk_bmat_free(&dM);
    hk_bmat R, A, AP, S, dR, dAP, dS;
    galerkin_inputs(3000, 500, 9, &R, &A, &AP);
    galerkin_symmetric(cpu_be(), &R, &AP, &S);
    hk_test_bmat_to(gpu, &R, &dR);
    hk_test_bmat_to(gpu, &AP, &dAP);
    galerkin_symmetric(gpu, &dR, &dAP, &dS);
    HK_ASSERT_OK(hk_bmat_to_host(&dS, &X));
    CU_ASSERT(same_bmat(&X, &S));
    hk_bmat_free(&X);
    hk_bmat_free(&R), hk_bmat_free(&A), hk_bmat_free(&AP), hk_bmat_free(&S);
    hk_bmat_free(&dR), hk_bmat_free(&dAP), hk_bmat_free(&dS);
}

static void test_cuda_spgemm_timing(void)
{
    hk_bcsr K;
    hk_cuda_spgemm_timing t;
    HK_ASSERT_OK(hk_gen_elasticity3d(31, 31, 31, &K));
    HK_ASSERT_OK(hk_cuda_bench_spgemm(&K, 3, &t));
    printf("\n    spgemm K K, %lld rows (3x3 blocks), C %lld entries: hooke %.2f ms, cuSPARSE "
           "SpGEMM (scalar CSR) %.2f ms (%lld entries), ratio %.2f",
           t.rows, t.nnz_hooke, t.ms_hooke, t.ms_cusparse, t.nnz_cusparse,
           t.ms_hooke / t.ms_cusparse);
    CU_ASSERT_EQUAL(t.nnz_hooke, t.nnz_cusparse);
    hk_bcsr_free(&K);
}

HK_DEVICE_SUITE(cuda_sparse,
                {"spgemm on the device equals the CPU's (all shapes, global hash tables)",
                 test_cuda_spgemm},
                {"smoothed prolongator on the device equals the CPU's",
                 test_cuda_smooth_prolongator},
                {"dense inverse (own kernels, 1200 rows) and gemv on the device equal the CPU's",
                 test_cuda_dense},
                {"spgemm pattern alone and upper numeric product on the device equal the CPU's "
                 "(each kernel, AMG and generic shapes, in-place rows); errors named",
                 test_cuda_spgemm_upper},
                {"mirror of the lower blocks on the device equals the CPU's; asymmetry named",
                 test_cuda_mirror},
                {"spgemm time against cuSPARSE SpGEMM", test_cuda_spgemm_timing})
#endif
