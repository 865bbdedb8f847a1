/* The generated matrices that stand in for the seed papers' SuiteSparse matrices (solver/gen.c):
 * each against its definition, entry by entry where it is closed-form (Poisson 3D, the
 * convection-diffusion stencils, the recirculating wind at a node), by its structure where it
 * is random (heterogeneous diffusion and the resistor network: symmetric, diagonally dominant
 * with the grounded boundary strictly so), and the row shuffle as a permutation of the rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* Entry (i, j) of the scalar A, 0 when not stored. */
static double entry(const hk_bcsr *A, int64_t i, int64_t j)
{
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
        if (A->colind[p] == j) return A->val[p];
    return 0;
}

/* Columns sorted and distinct in every row. */
static int rows_sorted(const hk_bcsr *A)
{
    for (int64_t i = 0; i < A->nbrows; i++)
        for (int64_t p = A->rowptr[i] + 1; p < A->rowptr[i + 1]; p++)
            if (A->colind[p - 1] >= A->colind[p]) return 0;
    return 1;
}

static void test_poisson3d_convdiff3d(void)
{
    const int n = 5;
    const int64_t N = (int64_t)n * n * n;
    hk_bcsr P, C;
    HK_ASSERT_OK(hk_gen_poisson3d(n, &P));
    CU_ASSERT_EQUAL(P.nbrows, N);
    CU_ASSERT_EQUAL(P.rowptr[N], 7 * N - 6 * (int64_t)n * n); /* each face drops n^2 entries */
    CU_ASSERT(rows_sorted(&P));
    const double beta = 12, bh = beta / (n + 1);
    HK_ASSERT_OK(hk_gen_convdiff3d(n, beta, &C));
    CU_ASSERT(rows_sorted(&C));
    for (int64_t r = 0; r < N; r++) {
        const int64_t i = r % n, j = (r / n) % n, k = r / (n * n);
        CU_ASSERT_EQUAL(entry(&P, r, r), 6);
        CU_ASSERT_DOUBLE_EQUAL(entry(&C, r, r), 6 + 3 * bh, 1e-14);
        const int64_t off[3] = {1, n, (int64_t)n * n}, idx[3] = {i, j, k};
        for (int d = 0; d < 3; d++) {
            if (idx[d] > 0) { /* upwind side: the flow comes from -x, -y, -z */
                CU_ASSERT_EQUAL(entry(&P, r, r - off[d]), -1);
                CU_ASSERT_DOUBLE_EQUAL(entry(&C, r, r - off[d]), -1 - bh, 1e-14);
            }
            if (idx[d] < n - 1) {
                CU_ASSERT_EQUAL(entry(&P, r, r + off[d]), -1);
                CU_ASSERT_DOUBLE_EQUAL(entry(&C, r, r + off[d]), -1, 1e-14);
            }
        }
    }
    hk_bcsr_free(&P);
    hk_bcsr_free(&C);
}

/* The recirculating flow: the centred stencil -1 -+ (h Pe / 2) w at every node, w = (2y(1-x^2),
 * -2x(1-y^2)) at the node's coordinates on [-1, 1]^2 with h = 2 / (n + 1); at the centre the
 * wind vanishes and the stencil is Poisson's. */
static void test_recirc(void)
{
    const int n = 9;
    const double pe = 150, h = 2.0 / (n + 1);
    hk_bcsr A;
    HK_ASSERT_OK(hk_gen_recirc2d(n, pe, &A));
    CU_ASSERT(rows_sorted(&A));
    int asym = 0;
    for (int64_t r = 0; r < (int64_t)n * n; r++) {
        const int64_t i = r % n, j = r / n;
        const double x = -1 + (i + 1) * h, y = -1 + (j + 1) * h;
        const double gx = 0.5 * h * pe * 2 * y * (1 - x * x);
        const double gy = 0.5 * h * pe * -2 * x * (1 - y * y);
        CU_ASSERT_EQUAL(entry(&A, r, r), 4);
        if (i > 0) CU_ASSERT_DOUBLE_EQUAL(entry(&A, r, r - 1), -1 - gx, 1e-12);
        if (i < n - 1) CU_ASSERT_DOUBLE_EQUAL(entry(&A, r, r + 1), -1 + gx, 1e-12);
        if (j > 0) CU_ASSERT_DOUBLE_EQUAL(entry(&A, r, r - n), -1 - gy, 1e-12);
        if (j < n - 1) CU_ASSERT_DOUBLE_EQUAL(entry(&A, r, r + n), -1 + gy, 1e-12);
        if (i < n - 1) asym |= entry(&A, r, r + 1) != entry(&A, r + 1, r);
    }
    const int64_t centre = (n / 2) * (int64_t)n + n / 2; /* x = y = 0 */
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, centre, centre + 1), -1, 1e-14);
    CU_ASSERT_DOUBLE_EQUAL(entry(&A, centre, centre + n), -1, 1e-14);
    CU_ASSERT(asym);
    hk_bcsr_free(&A);
}

/* Symmetric, sorted, nonpositive off the diagonal, diag >= sum |off| in every row, strictly in
 * the rows that touch the boundary (their missing neighbours are kept on the diagonal: the
 * Dirichlet or ground terms that make the matrix SPD); *spread = largest / smallest |off|. */
static void check_dominant(const hk_bcsr *A, const char *who, int (*on_boundary)(int64_t, int),
                           int n, double *spread)
{
    double omin = INFINITY, omax = 0;
    int bad = 0;
    CU_ASSERT(rows_sorted(A));
    for (int64_t r = 0; r < A->nbrows; r++) {
        double off = 0, d = 0;
        for (int64_t p = A->rowptr[r]; p < A->rowptr[r + 1]; p++) {
            const int64_t c = A->colind[p];
            if (c == r) {
                d = A->val[p];
                continue;
            }
            bad |= A->val[p] > 0 || A->val[p] != entry(A, c, r);
            off += fabs(A->val[p]);
            omin = fmin(omin, fabs(A->val[p]));
            omax = fmax(omax, fabs(A->val[p]));
        }
        if (!(d >= off * (1 - 1e-13))) bad = 1;
        if (on_boundary(r, n) && !(d > off * (1 + 1e-9))) bad = 1;
    }
    if (bad) printf("\n    %s: not symmetric or not diagonally dominant", who);
    CU_ASSERT(!bad);
    *spread = omax / omin;
}

static int cube_boundary(int64_t r, int n)
{
    const int64_t i = r % n, j = (r / n) % n, k = r / ((int64_t)n * n);
    return i == 0 || j == 0 || k == 0 || i == n - 1 || j == n - 1 || k == n - 1;
}

static int square_boundary(int64_t r, int n)
{
    const int64_t i = r % n, j = r / n;
    return i == 0 || j == 0 || i == n - 1 || j == n - 1;
}

static void test_porous_circuit(void)
{
    hk_bcsr A, B;
    double spread;
    HK_ASSERT_OK(hk_gen_porous3d(8, 6.0, 3, &A));
    check_dominant(&A, "porous3d", cube_boundary, 8, &spread);
    printf("\n    porous3d:8 coefficient spread %.1e", spread);
    CU_ASSERT(spread > 1e3 && spread < 1e6 * 1.01); /* harmonic means of 6 decades */
    HK_ASSERT_OK(hk_gen_porous3d(8, 6.0, 3, &B));   /* deterministic in its seed */
    CU_ASSERT(!memcmp(A.val, B.val, (size_t)A.rowptr[A.nbrows] * sizeof *A.val));
    hk_bcsr_free(&A);
    hk_bcsr_free(&B);
    HK_ASSERT_OK(hk_gen_circuit(24, 5, &A));
    check_dominant(&A, "circuit", square_boundary, 24, &spread);
    /* the long edges: entries outside the 5-point stencil */
    int64_t longs = 0;
    for (int64_t r = 0; r < A.nbrows; r++)
        for (int64_t p = A.rowptr[r]; p < A.rowptr[r + 1]; p++) {
            const int64_t c = A.colind[p];
            longs += c != r && c != r - 1 && c != r + 1 && c != r - 24 && c != r + 24;
        }
    printf(", circuit:24 %lld entries of long edges", (long long)longs);
    CU_ASSERT(longs > 0);
    hk_bcsr_free(&A);
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A fingerprint of every row (its columns and values), sorted. */
static uint64_t *row_prints(const hk_bcsr *A)
{
    uint64_t *h = malloc((size_t)A->nbrows * sizeof *h);
    for (int64_t r = 0; r < A->nbrows; r++) {
        uint64_t x = 1469598103934665603ull;
        for (int64_t p = A->rowptr[r]; p < A->rowptr[r + 1]; p++) {
            uint64_t v;
            memcpy(&v, &A->val[p], sizeof v);
            x = (x ^ (uint64_t)A->colind[p]) * 1099511628211ull;
            x = (x ^ v) * 1099511628211ull;
        }
        h[r] = x;
    }
    qsort(h, (size_t)A->nbrows, sizeof *h, cmp_u64);
    return h;
}

static void test_shuffle(void)
{
    hk_bcsr A, S;
    HK_ASSERT_OK(hk_gen_convdiff2d(12, 20.0, &A));
    HK_ASSERT_OK(hk_gen_convdiff2d(12, 20.0, &S));
    HK_ASSERT_OK(hk_gen_shuffle_rows(&S, 4));
    CU_ASSERT_EQUAL(S.rowptr[S.nbrows], A.rowptr[A.nbrows]);
    uint64_t *ha = row_prints(&A), *hs = row_prints(&S);
    CU_ASSERT(!memcmp(ha, hs, (size_t)A.nbrows * sizeof *ha)); /* the same rows */
    int64_t zero_diag = 0;
    for (int64_t r = 0; r < S.nbrows; r++)
        zero_diag += entry(&S, r, r) == 0;
    CU_ASSERT(zero_diag > S.nbrows / 2); /* the diagonal is scattered */
    free(ha), free(hs);
    hk_bcsr_free(&A);
    hk_bcsr_free(&S);
    HK_ASSERT_OK(hk_gen_elasticity2d(3, 3, &A));
    CU_ASSERT_EQUAL(hk_gen_shuffle_rows(&A, 1), HK_ERR_ARG); /* block rows: refused */
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "scalar matrix"));
    hk_error_clear();
    hk_bcsr_free(&A);
}

HK_SUITE(gen_kinds,
         {"poisson3d and convdiff3d: every entry of the 7-point stencils",
          test_poisson3d_convdiff3d},
         {"recirc: the centred stencil of the recirculating wind at every node", test_recirc},
         {"porous3d, circuit: symmetric, diagonally dominant, grounded boundary, spread",
          test_porous_circuit},
         {"convdiff-shuffled: the same rows in another order, the diagonal scattered",
          test_shuffle})
