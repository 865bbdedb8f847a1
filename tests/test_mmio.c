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
    expect_bad("bad_truncated.mtx", 2,
               "announces 3 entries but the 12 bytes after it hold at most 2", 0);
    expect_bad("bad_value.mtx", 4, "'abc'", 0);
    expect_bad("bad_int.mtx", 4, "integer indices", 0);
    expect_bad("bad_duplicate.mtx", 7, "first on line 5", 0);
    expect_bad("bad_symdup.mtx", 4, "first on line 3", 0);
    expect_bad("bad_extra.mtx", 4, "more entries", 0);
    expect_bad("bad_count.mtx", 2, "announces 900000000 entries but the 12 bytes", 0);
    expect_bad("bad_symrect.mtx", 2, "must be square", 0);
    expect_bad("bad_nan.mtx", 3, "finite", 0);
    expect_bad("bad_trailing.mtx", 3, "unexpected text '3'", 0);
    expect_bad("bad_vec_truncated.mtx", 2,
               "announces 3 values but the 4 bytes after it hold at most 2", 1);
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
    expect_bad("bad_vec_count.mtx", 2, "announces 900000000 values", 1);
}

/* The one-pass reader puts entries given in any order into sorted rows: long rows (the heap
 * sort), rows given backwards, a symmetric file's mirrored entries; every value where it
 * belongs (against a dense copy built from the same entries). */
static void test_entry_order(void)
{
    enum { n = 70 };
    char *text = malloc(200000);
    double dense[n][n];
    memset(dense, 0, sizeof dense);
    size_t len = (size_t)sprintf(text, "%%%%MatrixMarket matrix coordinate real general\n");
    int nz = 0;
    char body[150000];
    size_t bl = 0;
    for (int i = n - 1; i >= 0; i--) /* rows backwards, columns scrambled, row 3 dense */
        for (int k = 0; k < n; k++) {
            int j = (k * 37 + i) % n;
            if (i != 3 && j != i && (i * 7 + j) % 5) continue;
            double v = 1 + i * 0.5 - j * 0.25;
            dense[i][j] = v;
            bl += (size_t)sprintf(body + bl, "%d %d %.17g\n", i + 1, j + 1, v);
            nz++;
        }
    len += (size_t)sprintf(text + len, "%d %d %d\n", n, n, nz);
    memcpy(text + len, body, bl + 1);
    hk_bcsr A;
    HK_ASSERT_OK(hk_mm_read_matrix(hk_test_write_case("order.mtx", text), &A));
    CU_ASSERT_EQUAL(A.rowptr[n], nz);
    int sorted = 1, same = 1;
    for (int i = 0; i < n; i++) {
        for (int64_t k = A.rowptr[i] + 1; k < A.rowptr[i + 1]; k++)
            sorted &= A.colind[k - 1] < A.colind[k];
        for (int j = 0; j < n; j++)
            same &= entry(&A, i, j) == dense[i][j];
    }
    CU_ASSERT(sorted);
    CU_ASSERT(same);
    hk_bcsr_free(&A);
    /* symmetric: lower triangle given column after column, read as the full matrix */
    len = (size_t)sprintf(text, "%%%%MatrixMarket matrix coordinate real symmetric\n%d %d %d\n", 40,
                          40, 40 * 41 / 2);
    for (int j = 39; j >= 0; j--)
        for (int i = j; i < 40; i++)
            len += (size_t)sprintf(text + len, "%d %d %d\n", i + 1, j + 1, 100 * i + j);
    HK_ASSERT_OK(hk_mm_read_matrix(hk_test_write_case("sym.mtx", text), &A));
    CU_ASSERT_EQUAL(A.rowptr[40], 1600);
    same = 1;
    for (int i = 0; i < 40; i++)
        for (int j = 0; j < 40; j++)
            same &= entry(&A, i, j) == (i >= j ? 100 * i + j : 100 * j + i);
    CU_ASSERT(same);
    hk_bcsr_free(&A);
    free(text);
}

/* Sizes a file declares are checked against what the file can hold before anything is
 * allocated: a 60-byte file declaring 2e9 rows is refused at once (it took 9 GB and hung). */
static void expect_header(const char *text, const char *words)
{
    hk_bcsr A;
    CU_ASSERT_EQUAL(hk_mm_read_matrix(hk_test_write_case("hdr.mtx", text), &A), HK_ERR_PARSE);
    const char *msg = hk_error_message();
    int ok = strstr(msg, words) != NULL;
    if (!ok) fprintf(stderr, "\n  expected '%s' in: %s\n", words, msg);
    CU_ASSERT(ok);
}

static void test_declared_sizes(void)
{
    expect_header("%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 1\n"
                  "1 1 1\n",
                  "hdr.mtx:2: the 2000000000 x 2000000000 matrix has 1 entries, so at least "
                  "1999999999 of its rows are empty and it is singular");
    expect_header("%%MatrixMarket matrix coordinate real general\n2000000000 1 1\n1 1 1\n",
                  "at least 1999999999 of its rows are empty");
    expect_header(
        "%%MatrixMarket matrix coordinate real general\n100000 100000 2000000000\n1 1 1\n",
        "hdr.mtx:2: the size line announces 2000000000 entries but the 6 bytes");
    expect_header("%%MatrixMarket matrix coordinate pattern symmetric\n9 9 4\n1 1\n2 2\n3 3\n",
                  "hdr.mtx:2: the size line announces 4 entries");
    /* long lines: the count fits the bytes, the file still ends early */
    expect_header("%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1.0000000000\n"
                  "2 2 1.00000000000\n",
                  "hdr.mtx:5: the file ends after 2 of the 3 entries announced on line 2");
    /* a duplicate found after the one pass is named by both of its lines */
    expect_header("%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 1\n2 1 5\n"
                  "3 3 1\n1 2 5\n",
                  "hdr.mtx:6: entry (1, 2) is given again (first on line 4");
    int64_t n;
    double *x = NULL;
    CU_ASSERT_EQUAL(hk_mm_read_vector(hk_test_write_case("v.mtx", "%%MatrixMarket matrix array "
                                                                  "real general\n1000000 1\n1\n"),
                                      &n, &x),
                    HK_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "announces 1000000 values"));
    CU_ASSERT_PTR_NULL(x);
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
         {"entries in any order into sorted rows", test_entry_order},
         {"declared sizes checked against the file before allocating", test_declared_sizes},
         {"write/read round trip, matrices and vectors", test_roundtrip},
         {"group scalar matrix into blocks", test_to_blocks})
