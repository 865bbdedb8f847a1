/* Matrix Market reading/writing and scalar -> block grouping.
 * Fixtures in tests/data/ (mm_*.mtx good, bad_*.mtx malformed with the line at fault). */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

/* value of entry (i, j) of a scalar bcsr, 0 if absent; -999 if stored twice */
static double entry(const hk_bcsr *A, int64_t i, int64_t j)
{
    double v = 0;
    int seen = 0;
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
        if (A->colind[k] == j) v = A->val[k], seen++;
    return seen > 1 ? -999 : v;
}

static void test_read_general(void)
{
    hk_bcsr A;
    HK_ASSERT_OK(hk_mm_read_matrix(hk_test_path("tests/data/mm_general.mtx"), &A));
    CU_ASSERT_EQUAL(A.bs, 1);
    CU_ASSERT_EQUAL(A.nbrows, 4);
    CU_ASSERT_EQUAL(A.nbcols, 3);
    CU_ASSERT_EQUAL(A.rowptr[4], 5);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 0, 0), 2.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 0, 2), -4, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 1, 2), -1e-3, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 2, 1), 125, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 3, 0), 7, 0);
    /* rows sorted by column */
    CU_ASSERT(A.colind[0] == 0 && A.colind[1] == 2);
    hk_bcsr_free(&A);
}

static void test_read_symmetric_pattern_integer(void)
{
    hk_bcsr A;
    HK_ASSERT_OK(hk_mm_read_matrix(hk_test_path("tests/data/mm_symmetric.mtx"), &A));
    CU_ASSERT_EQUAL(A.rowptr[3], 6); /* 2 diagonal + 2 x 2 mirrored */
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 0, 1), -1, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 1, 0), -1, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 1, 2), -2, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 2, 1), -2, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 2, 2), 5, 0);
    hk_bcsr_free(&A);
    HK_ASSERT_OK(hk_mm_read_matrix(hk_test_path("tests/data/mm_pattern.mtx"), &A));
    CU_ASSERT_EQUAL(A.rowptr[2], 3);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 0, 1), 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 1, 0), 0, 0);
    hk_bcsr_free(&A);
    HK_ASSERT_OK(hk_mm_read_matrix(hk_test_path("tests/data/mm_integer.mtx"), &A));
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 0, 1), -7, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 1, 0), -7, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 0, 0), 3, 0);
    hk_bcsr_free(&A);
}

static void test_read_crlf(void)
{
    hk_bcsr A;
    HK_ASSERT_OK(hk_mm_read_matrix(hk_test_path("tests/data/mm_crlf.mtx"), &A));
    CU_ASSERT_EQUAL(A.rowptr[2], 2);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 0, 0), 1.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, 1, 1), -2, 0);
    hk_bcsr_free(&A);
}

static void test_read_vector(void)
{
    int64_t n;
    double *x;
    HK_ASSERT_OK(hk_mm_read_vector(hk_test_path("tests/data/mm_vector.mtx"), &n, &x));
    CU_ASSERT_EQUAL(n, 3);
    CU_ASSERT_DOUBLE_EQUAL(x[0], 1.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(x[1], -2, 0);
    CU_ASSERT_DOUBLE_EQUAL(x[2], 1e-300, 0);
    free(x);
}

/* A malformed file is rejected with code HK_ERR_PARSE and "NAME:LINE:" in the message. */
static void expect_bad(const char *name, int line, const char *words, int vector)
{
    char rel[128], where[160];
    snprintf(rel, sizeof rel, "tests/data/%s", name);
    snprintf(where, sizeof where, "%s:%d: ", name, line);
    hk_bcsr A;
    int64_t n;
    double *x = NULL;
    int err = vector ? hk_mm_read_vector(hk_test_path(rel), &n, &x)
                     : hk_mm_read_matrix(hk_test_path(rel), &A);
    CU_ASSERT_EQUAL(err, HK_ERR_PARSE);
    const char *msg = hk_error_message();
    int ok = strstr(msg, where) != NULL && strstr(msg, words) != NULL && strchr(msg, ';');
    if (!ok) fprintf(stderr, "\n  %s: expected '%s' and '%s' in: %s\n", name, where, words, msg);
    CU_ASSERT(ok);
    CU_ASSERT_PTR_NULL(x);
}

static void test_malformed(void)
{
    expect_bad("bad_banner.mtx", 1, "symmetry 'generl'", 0);
    expect_bad("bad_banner2.mtx", 1, "bad banner", 0);
    expect_bad("bad_complex.mtx", 1, "field 'complex'", 0);
    expect_bad("bad_size.mtx", 3, "size line", 0);
    expect_bad("bad_index.mtx", 5, "(3, 4) is outside the 3 x 3", 0);
    expect_bad("bad_truncated.mtx", 5, "after 2 of the 3 entries", 0);
    expect_bad("bad_value.mtx", 4, "'abc'", 0);
    expect_bad("bad_int.mtx", 4, "integer indices", 0);
    expect_bad("bad_duplicate.mtx", 7, "first on line 5", 0);
    expect_bad("bad_symdup.mtx", 4, "first on line 3", 0);
    expect_bad("bad_extra.mtx", 4, "more entries", 0);
    expect_bad("bad_count.mtx", 5, "after 2 of the 900000000 entries", 0);
    expect_bad("bad_symrect.mtx", 2, "must be square", 0);
    expect_bad("bad_nan.mtx", 3, "finite", 0);
    expect_bad("bad_trailing.mtx", 3, "unexpected text '3'", 0);
    expect_bad("bad_vec_truncated.mtx", 5, "after 2 of the 3 values", 1);
    expect_bad("bad_vec_cols.mtx", 2, "exactly one column", 1);
    expect_bad("mm_vector.mtx", 1, "layout 'array'", 0); /* a vector is not a matrix */

    hk_bcsr A;
    CU_ASSERT_EQUAL(hk_mm_read_matrix("/nonexistent/x.mtx", &A), HK_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "/nonexistent/x.mtx"));
}

/* Regression (fuzzing): a vector size near 2^61 wrapped the allocation to 8 bytes and the
 * values overflowed it; a large size with few values must report truncation, not memory. */
static void test_vector_sizes(void)
{
    /* regression (fuzzing): control bytes in the banner (a terminal escape) were echoed raw */
    expect_bad("bad_banner_ctrl.mtx", 1, "bad banner '%%Matrix?[2JMarket matrix", 0);
    /* regression (fuzzing): a folder read as "the file is empty" */
    hk_bcsr A;
    int64_t n;
    double *x = NULL;
    CU_ASSERT_EQUAL(hk_mm_read_matrix(hk_test_tmpdir(), &A), HK_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "is a folder, not a Matrix Market file"));
    CU_ASSERT_EQUAL(hk_mm_read_vector(hk_test_tmpdir(), &n, &x), HK_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "is a folder"));
    CU_ASSERT_PTR_NULL(x);
    expect_bad("bad_vec_huge.mtx", 2, "out of range", 1);
    expect_bad("bad_vec_count.mtx", 5, "after 2 of the 900000000 values", 1);
}

static void test_roundtrip(void)
{
    char path[256], vpath[256];
    snprintf(path, sizeof path, "%s/rt.mtx", hk_test_tmpdir());
    snprintf(vpath, sizeof vpath, "%s/rt_vec.mtx", hk_test_tmpdir());
    for (int bs = 1; bs <= 3; bs++) {
        hk_bcsr K, S, B;
        HK_ASSERT_OK(hk_gen_random(13, 11, bs, 3.0, 1, 99u + bs, &K));
        HK_ASSERT_OK(hk_mm_write_matrix(path, &K));
        HK_ASSERT_OK(hk_mm_read_matrix(path, &S));
        CU_ASSERT_EQUAL(S.nbrows, 13 * bs);
        CU_ASSERT_EQUAL(S.rowptr[S.nbrows], K.rowptr[13] * bs * bs);
        /* grouping the scalar matrix gives back K exactly (%.17g round-trips doubles) */
        HK_ASSERT_OK(hk_bcsr_to_blocks(&S, bs, &B));
        CU_ASSERT_EQUAL(B.nbrows, 13);
        CU_ASSERT_EQUAL(B.nbcols, 11);
        CU_ASSERT_EQUAL(memcmp(B.rowptr, K.rowptr, 14 * sizeof *K.rowptr), 0);
        CU_ASSERT_EQUAL(memcmp(B.colind, K.colind, K.rowptr[13] * sizeof *K.colind), 0);
        CU_ASSERT_EQUAL(memcmp(B.val, K.val, K.rowptr[13] * bs * bs * sizeof *K.val), 0);
        hk_bcsr_free(&K);
        hk_bcsr_free(&S);
        hk_bcsr_free(&B);
    }
    double x[4] = {1.0 / 3, -2e300, 0, 5}, *y;
    int64_t n;
    HK_ASSERT_OK(hk_mm_write_vector(vpath, 4, x));
    HK_ASSERT_OK(hk_mm_read_vector(vpath, &n, &y));
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT_EQUAL(memcmp(x, y, sizeof x), 0);
    free(y);
}

static void test_to_blocks(void)
{
    /* scalar 4x4 with entries only in some positions of the 2x2 blocks */
    hk_bcsr A, B;
    HK_ASSERT_OK(hk_mm_read_matrix(hk_test_path("tests/data/mm_general.mtx"), &A));
    /* 4 x 3: 3 columns are not a multiple of 2 */
    CU_ASSERT_EQUAL(hk_bcsr_to_blocks(&A, 2, &B), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "multiple of 2"));
    hk_bcsr_free(&A);
    HK_ASSERT_OK(hk_gen_poisson2d(3, &A)); /* 9 x 9 */
    HK_ASSERT_OK(hk_bcsr_to_blocks(&A, 3, &B));
    CU_ASSERT_EQUAL(B.nbrows, 3);
    /* block (0,0) = rows/cols 0..2: tridiag(-1, 4, -1); block (0,1) = -I; block (0,2) absent */
    CU_ASSERT_EQUAL(B.rowptr[1], 2);
    CU_ASSERT_EQUAL(B.colind[0], 0);
    CU_ASSERT_EQUAL(B.colind[1], 1);
    CU_ASSERT_DOUBLE_EQUAL(B.val[0], 4, 0);
    CU_ASSERT_DOUBLE_EQUAL(B.val[1], -1, 0);
    CU_ASSERT_DOUBLE_EQUAL(B.val[2], 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(B.val[9 + 0], -1, 0);
    CU_ASSERT_DOUBLE_EQUAL(B.val[9 + 1], 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(B.val[9 + 4], -1, 0);
    /* same operator: B x = A x */
    double x[9], ya[9], yb[9];
    for (int i = 0; i < 9; i++)
        x[i] = i * i - 3;
    hk_bcsr_spmv(&A, x, ya);
    hk_bcsr_spmv(&B, x, yb);
    CU_ASSERT(hk_test_reldiff(yb, ya, 9) == 0);
    hk_bcsr_free(&A);
    hk_bcsr_free(&B);
}

HK_SUITE(mmio, {"read coordinate real general", test_read_general},
         {"read symmetric (expanded), pattern, integer", test_read_symmetric_pattern_integer},
         {"read Windows line endings", test_read_crlf}, {"read array vector", test_read_vector},
         {"malformed files rejected with FILE:LINE", test_malformed},
         {"huge vector sizes and folders rejected, no overflow", test_vector_sizes},
         {"write/read round trip, matrices and vectors", test_roundtrip},
         {"group scalar matrix into blocks", test_to_blocks})
