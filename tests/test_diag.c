/* The diag op on the CPU backend (enum hk_diag_mode, solver/hk_setup.h): every mode against a
 * computation here on the host copy of the matrix, square blocks of size 1..6; the first bad
 * row named; decoupled dofs left out of the block inverse; the same digits for any thread
 * count. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static double urand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / (double)(1u << 24) * 2.0 - 1.0;
}

/* A random nb x nb block CSR with br x br blocks: a diagonally dominant diagonal block (left
 * out in block row nodiag, -1 for none) and up to three off-diagonal blocks per row. */
static void gen_blocks(int64_t nb, int br, unsigned seed, int64_t nodiag, hk_bcsr *K)
{
    uint32_t s = seed * 2891336453u + 11u;
    const size_t bb = (size_t)br * br;
    memset(K, 0, sizeof *K);
    K->bs = br;
    K->nbrows = K->nbcols = nb;
    K->rowptr = calloc((size_t)nb + 1, sizeof *K->rowptr);
    K->colind = malloc((size_t)nb * 4 * sizeof *K->colind);
    K->val = malloc((size_t)nb * 4 * bb * sizeof *K->val);
    int64_t q = 0;
    for (int64_t bi = 0; bi < nb; bi++) {
        int used[4] = {-1, -1, -1, -1}, nu = 0;
        if (bi != nodiag) used[nu++] = (int)bi;
        for (int t = 0; t < 3 && nb > 1; t++) {
            int j = (int)((urand(&s) + 1) / 2 * (double)nb) % (int)nb, dup = 0;
            for (int u = 0; u < nu; u++)
                dup |= used[u] == j || j == bi;
            if (!dup) used[nu++] = j;
        }
        for (int a = 0; a < nu; a++) /* sort */
            for (int b = a + 1; b < nu; b++)
                if (used[b] < used[a]) {
                    int t = used[a];
                    used[a] = used[b];
                    used[b] = t;
                }
        for (int u = 0; u < nu; u++, q++) {
            K->colind[q] = used[u];
            for (size_t e = 0; e < bb; e++) {
                double v = urand(&s);
                if (used[u] == bi && e % (br + 1) == 0) v = 2.0 * br + fabs(v); /* diagonal */
                K->val[q * bb + e] = v;
            }
        }
        K->rowptr[bi + 1] = q;
    }
}

/* The diagonal block of block row bi in K, or NULL. */
static double *dblock(const hk_bcsr *K, int64_t bi)
{
    for (int64_t p = K->rowptr[bi]; p < K->rowptr[bi + 1]; p++)
        if (K->colind[p] == bi) return K->val + (size_t)p * K->bs * K->bs;
    return NULL;
}

/* Run the op on the cpu backend; returns its error code, out (host, n entries) and bad. */
static int run_diag(const hk_bcsr *K, int mode, double *out, int64_t *bad)
{
    const hk_backend *be = NULL;
    hk_bmat A = {0};
    hk_vec *v = NULL;
    const int br = K->bs;
    const int64_t n = K->nbrows * br * (mode == HK_DIAG_BLOCK_INV ? br : 1);
    int err = hk_backend_get("cpu", &be);
    if (!err) err = hk_bmat_upload(be, K, &A);
    if (!err) err = hk_vec_create(be, n, HK_FP64, &v);
    if (!err) err = be->bmat_diag(&A, mode, v, bad);
    if (!err) err = hk_vec_download(v, out);
    hk_vec_destroy(v);
    hk_bmat_free(&A);
    return err;
}

/* Check that inv (br x br, row-major) is the inverse of a with the decoupled dofs (zero row
 * and column in a) left out: inv a = I on the others, rows and columns of decoupled dofs 0. */
static int check_inverse(int br, const double *a, const double *inv)
{
    int dec[6], ok = 1;
    for (int r = 0; r < br; r++) {
        dec[r] = 1;
        for (int c = 0; c < br; c++)
            if (a[r * br + c] != 0 || a[c * br + r] != 0) dec[r] = 0;
    }
    for (int r = 0; r < br; r++)
        for (int c = 0; c < br; c++) {
            if (dec[r] || dec[c]) {
                ok &= inv[r * br + c] == 0;
                continue;
            }
            double s = 0;
            for (int k = 0; k < br; k++)
                s += inv[r * br + k] * a[k * br + c];
            ok &= fabs(s - (r == c)) < 1e-12;
        }
    return ok;
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_scalar_modes(void)
{
    for (int br = 1; br <= 6; br++) {
        hk_bcsr K;
        const int64_t nb = 37;
        gen_blocks(nb, br, 100 + br, -1, &K);
        const int64_t n = nb * br;
        double *inv = malloc(n * sizeof *inv), *isq = malloc(n * sizeof *isq);
        int64_t bad = 5;
        HK_ASSERT_OK(run_diag(&K, HK_DIAG_INV, inv, &bad));
        CU_ASSERT_EQUAL(bad, -1);
        HK_ASSERT_OK(run_diag(&K, HK_DIAG_INV_SQRT, isq, &bad));
        CU_ASSERT_EQUAL(bad, -1);
        for (int64_t i = 0; i < n; i++) {
            double a = dblock(&K, i / br)[(i % br) * (br + 1)];
            CU_ASSERT_DOUBLE_EQUAL(inv[i], 1 / a, 1e-15 / a);
            CU_ASSERT_DOUBLE_EQUAL(isq[i], 1 / sqrt(a), 1e-15 / sqrt(a));
        }
        /* bad rows: the first of a zero, a negative, a NaN diagonal entry and a missing
         * diagonal block, each found in turn as the earlier ones are repaired */
        double *a1 = dblock(&K, 20), *a2 = dblock(&K, 25);
        const double keep1 = a1[(br - 1) * (br + 1)], keep2 = a2[0];
        a1[(br - 1) * (br + 1)] = 0; /* scalar row 20*br + br-1 */
        a2[0] = -1;                  /* scalar row 25*br */
        for (int mode = HK_DIAG_INV; mode <= HK_DIAG_INV_SQRT; mode++) {
            HK_ASSERT_OK(run_diag(&K, mode, inv, &bad));
            CU_ASSERT_EQUAL(bad, 20 * br + br - 1);
            CU_ASSERT_EQUAL(inv[20 * br + br - 1], 0.0);
            CU_ASSERT_EQUAL(inv[25 * br], 0.0);
        }
        a1[(br - 1) * (br + 1)] = keep1;
        HK_ASSERT_OK(run_diag(&K, HK_DIAG_INV, inv, &bad));
        CU_ASSERT_EQUAL(bad, 25 * br);
        a2[0] = NAN;
        HK_ASSERT_OK(run_diag(&K, HK_DIAG_INV_SQRT, inv, &bad));
        CU_ASSERT_EQUAL(bad, 25 * br);
        CU_ASSERT_EQUAL(inv[25 * br], 0.0);
        a2[0] = INFINITY;
        HK_ASSERT_OK(run_diag(&K, HK_DIAG_INV, inv, &bad));
        CU_ASSERT_EQUAL(bad, 25 * br);
        a2[0] = keep2;
        hk_bcsr_free(&K);
        gen_blocks(nb, br, 200 + br, 30, &K);
        HK_ASSERT_OK(run_diag(&K, HK_DIAG_INV, inv, &bad));
        CU_ASSERT_EQUAL(bad, 30 * br);
        hk_bcsr_free(&K);
        free(inv), free(isq);
    }
}

static void test_block_inverse(void)
{
    for (int br = 1; br <= 6; br++) {
        hk_bcsr K;
        const int64_t nb = 41;
        gen_blocks(nb, br, 300 + br, -1, &K);
        const size_t bb = (size_t)br * br;
        double *out = malloc(nb * bb * sizeof *out);
        int64_t bad = 5;
        /* a block with a large spread of scales and a permutation-like block that needs
         * pivoting (zero diagonal) */
        double *s = dblock(&K, 3);
        for (size_t e = 0; e < bb; e++)
            s[e] *= 1e6 * (double)(e % br + 1);
        if (br > 1) {
            double *p = dblock(&K, 4);
            for (int r = 0; r < br; r++)
                for (int c = 0; c < br; c++)
                    p[r * br + c] = c == (r + 1) % br ? 1.0 + r : 0.0;
        }
        HK_ASSERT_OK(run_diag(&K, HK_DIAG_BLOCK_INV, out, &bad));
        CU_ASSERT_EQUAL(bad, -1);
        for (int64_t bi = 0; bi < nb; bi++)
            CU_ASSERT(check_inverse(br, dblock(&K, bi), out + bi * bb));

        /* decoupled dofs: row and column zero inside the block (one dof, then all of them) */
        if (br > 1) {
            double *d = dblock(&K, 7);
            for (int k = 0; k < br; k++)
                d[1 * br + k] = d[k * br + 1] = 0;
            double *z = dblock(&K, 8);
            for (size_t e = 0; e < bb; e++)
                z[e] = 0;
            HK_ASSERT_OK(run_diag(&K, HK_DIAG_BLOCK_INV, out, &bad));
            CU_ASSERT_EQUAL(bad, -1);
            CU_ASSERT(check_inverse(br, d, out + 7 * bb));
            for (int c = 0; c < br; c++)
                CU_ASSERT(out[7 * bb + 1 * br + c] == 0 && out[7 * bb + c * br + 1] == 0);
            CU_ASSERT(out[7 * bb] != 0);
            for (size_t e = 0; e < bb; e++)
                CU_ASSERT_EQUAL(out[8 * bb + e], 0.0);
            /* a zero row with a nonzero column is singular, not decoupled */
            d[0 * br + 1] = 0.5;
            HK_ASSERT_OK(run_diag(&K, HK_DIAG_BLOCK_INV, out, &bad));
            CU_ASSERT_EQUAL(bad, 7 * br);
            for (size_t e = 0; e < bb; e++)
                CU_ASSERT_EQUAL(out[7 * bb + e], 0.0);
        }
        hk_bcsr_free(&K);

        /* singular (two equal rows), then not finite, then the first of two bad blocks */
        gen_blocks(nb, br, 400 + br, -1, &K);
        double *b1 = dblock(&K, 11), *b2 = dblock(&K, 29);
        if (br > 1) {
            for (int c = 0; c < br; c++)
                b2[(br - 1) * br + c] = b2[c];
            HK_ASSERT_OK(run_diag(&K, HK_DIAG_BLOCK_INV, out, &bad));
            CU_ASSERT_EQUAL(bad, 29 * br);
            for (size_t e = 0; e < bb; e++)
                CU_ASSERT_EQUAL(out[29 * bb + e], 0.0);
        }
        b1[bb - 1] = NAN;
        HK_ASSERT_OK(run_diag(&K, HK_DIAG_BLOCK_INV, out, &bad));
        CU_ASSERT_EQUAL(bad, 11 * br);
        b1[bb - 1] = INFINITY;
        HK_ASSERT_OK(run_diag(&K, HK_DIAG_BLOCK_INV, out, &bad));
        CU_ASSERT_EQUAL(bad, 11 * br);
        for (size_t e = 0; e < bb; e++)
            CU_ASSERT_EQUAL(out[11 * bb + e], 0.0);
        hk_bcsr_free(&K);
        free(out);
    }
}

static void test_decoupled(void)
{
    for (int br = 1; br <= 6; br++) {
        hk_bcsr K;
        const int64_t nb = 23, n = nb * br;
        gen_blocks(nb, br, 500 + br, -1, &K);
        const size_t bb = (size_t)br * br;
        /* block row 5: every dof a support (unit diagonal, stored zeros elsewhere); block row
         * 9: dof br-1 zero everywhere but its diagonal; block row 12: all zero */
        for (int64_t p = K.rowptr[5]; p < K.rowptr[6]; p++)
            for (size_t e = 0; e < bb; e++)
                K.val[p * bb + e] = K.colind[p] == 5 && e % (br + 1) == 0 ? 1.0 : 0.0;
        for (int64_t p = K.rowptr[9]; p < K.rowptr[10]; p++)
            for (int c = 0; c < br; c++)
                K.val[(p * br + br - 1) * br + c] = K.colind[p] == 9 && c == br - 1 ? 3.0 : 0.0;
        for (int64_t p = K.rowptr[12]; p < K.rowptr[13]; p++)
            for (size_t e = 0; e < bb; e++)
                K.val[p * bb + e] = 0;
        double *out = malloc(n * sizeof *out);
        int64_t bad = 5;
        HK_ASSERT_OK(run_diag(&K, HK_DIAG_DECOUPLED, out, &bad));
        CU_ASSERT_EQUAL(bad, -1);
        /* reference: scan the scalar rows here */
        for (int64_t i = 0; i < n; i++) {
            const int64_t bi = i / br;
            const int r = (int)(i % br);
            int off = 0;
            for (int64_t p = K.rowptr[bi]; p < K.rowptr[bi + 1]; p++)
                for (int c = 0; c < br; c++)
                    if (K.colind[p] * (int64_t)br + c != i && K.val[(p * br + r) * br + c] != 0)
                        off = 1;
            CU_ASSERT_EQUAL(out[i], off ? 0.0 : 1.0);
        }
        for (int r = 0; r < br; r++) {
            CU_ASSERT_EQUAL(out[5 * br + r], 1.0);
            CU_ASSERT_EQUAL(out[12 * br + r], 1.0);
        }
        CU_ASSERT_EQUAL(out[9 * br + br - 1], 1.0);
        if (br > 1) CU_ASSERT_EQUAL(out[9 * br], 0.0);
        free(out);
        hk_bcsr_free(&K);
    }
}

/* The same digits and the same bad row with 1 and with 3 threads. */
static void test_threads(void)
{
    const int nt = omp_get_max_threads();
    for (int br = 1; br <= 6; br += 5) {
        hk_bcsr K;
        const int64_t nb = 600;
        gen_blocks(nb, br, 600 + br, 444, &K);
        const int64_t n = nb * br * br;
        double *o1 = malloc(n * sizeof *o1), *o3 = malloc(n * sizeof *o3);
        for (int mode = HK_DIAG_INV; mode <= HK_DIAG_DECOUPLED; mode++) {
            const int64_t m = mode == HK_DIAG_BLOCK_INV ? n : nb * br;
            int64_t bad1 = 5, bad3 = 5;
            omp_set_num_threads(1);
            HK_ASSERT_OK(run_diag(&K, mode, o1, &bad1));
            omp_set_num_threads(3);
            HK_ASSERT_OK(run_diag(&K, mode, o3, &bad3));
            CU_ASSERT_EQUAL(bad1, bad3);
            CU_ASSERT_EQUAL(memcmp(o1, o3, (size_t)m * sizeof *o1), 0);
            if (mode <= HK_DIAG_INV_SQRT) CU_ASSERT_EQUAL(bad1, 444 * br);
        }
        omp_set_num_threads(nt);
        free(o1), free(o3);
        hk_bcsr_free(&K);
    }
}

static void test_arguments(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    hk_bcsr K;
    gen_blocks(5, 2, 7, -1, &K);
    hk_bmat A = {0};
    HK_ASSERT_OK(hk_bmat_upload(be, &K, &A));
    hk_vec *v = NULL, *w = NULL;
    HK_ASSERT_OK(hk_vec_create(be, 10, HK_FP64, &v));
    HK_ASSERT_OK(hk_vec_create(be, 10, HK_FP32, &w));
    int64_t bad = 0;
    CU_ASSERT_EQUAL(be->bmat_diag(&A, HK_DIAG_BLOCK_INV, v, &bad), HK_ERR_ARG); /* needs 20 */
    CU_ASSERT_EQUAL(be->bmat_diag(&A, HK_DIAG_INV, w, &bad), HK_ERR_ARG);       /* fp32 */
    CU_ASSERT_EQUAL(be->bmat_diag(&A, 9, v, &bad), HK_ERR_ARG);
    hk_error_clear();
    hk_vec_destroy(v);
    hk_vec_destroy(w);
    hk_bmat_free(&A);
    hk_bcsr_free(&K);
}

HK_SUITE(diag, {"inverse diagonal and its square root; the first bad row", test_scalar_modes},
         {"inverse diagonal blocks 1..6, pivoting, decoupled dofs, bad blocks", test_block_inverse},
         {"decoupled rows (supports) against a row scan", test_decoupled},
         {"same digits and bad row for 1 and 3 threads", test_threads},
         {"wrong output size, precision or mode is refused", test_arguments})
