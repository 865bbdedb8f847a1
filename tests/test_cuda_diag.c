/* The diag op on the device against the CPU op (device suite: skipped without a GPU): every
 * mode of enum hk_diag_mode on the same random block CSR, square blocks of size 1..6, with bad
 * rows spread over several thread blocks (the first one must win the min-reduction), missing
 * diagonal blocks, decoupled dofs, singular and non-finite blocks. Outputs are poisoned with
 * NaN first so an unwritten entry fails; preconditioners built on the diag op (jacobi,
 * bjacobi, poly) apply alike on both backends. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

static double urand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / (double)(1u << 24) * 2.0 - 1.0;
}

/* A random nb x nb block CSR with br x br blocks: a dominant diagonal block (none in block rows
 * where skip_diag says so) and up to three off-diagonal blocks per row. */
static void gen_blocks(int64_t nb, int br, unsigned seed, int (*skip_diag)(int64_t), hk_bcsr *K)
{
    uint32_t s = seed * 2891336453u + 11u;
    const size_t bb = (size_t)br * br;
    memset(K, 0, sizeof *K);
    K->bs = br;
    K->nbrows = K->nbcols = nb;
    K->rowptr = calloc((size_t)nb + 1, sizeof *K->rowptr);
    K->colind = malloc((size_t)(nb ? nb : 1) * 4 * sizeof *K->colind);
    K->val = malloc((size_t)(nb ? nb : 1) * 4 * bb * sizeof *K->val);
    int64_t q = 0;
    for (int64_t bi = 0; bi < nb; bi++) {
        int64_t used[4];
        int nu = 0;
        if (!(skip_diag && skip_diag(bi))) used[nu++] = bi;
        for (int t = 0; t < 3 && nb > 1; t++) {
            int64_t j = (int64_t)((urand(&s) + 1) / 2 * (double)nb) % nb;
            int dup = j == bi;
            for (int u = 0; u < nu; u++)
                dup |= used[u] == j;
            if (!dup) used[nu++] = j;
        }
        for (int a = 0; a < nu; a++)
            for (int b = a + 1; b < nu; b++)
                if (used[b] < used[a]) {
                    int64_t t = used[a];
                    used[a] = used[b];
                    used[b] = t;
                }
        for (int u = 0; u < nu; u++, q++) {
            K->colind[q] = (int32_t)used[u];
            for (size_t e = 0; e < bb; e++) {
                double v = urand(&s);
                if (used[u] == bi && e % (br + 1) == 0) v = 2.0 * br + fabs(v);
                K->val[q * bb + e] = v;
            }
        }
        K->rowptr[bi + 1] = q;
    }
}

static double *dblock(const hk_bcsr *K, int64_t bi)
{
    for (int64_t p = K->rowptr[bi]; p < K->rowptr[bi + 1]; p++)
        if (K->colind[p] == bi) return K->val + (size_t)p * K->bs * K->bs;
    return NULL;
}

/* The op on backend name; out (host) and bad. Output poisoned with NaN first. */
static int run_diag(const char *name, const hk_bcsr *K, int mode, double *out, int64_t *bad)
{
    const hk_backend *be = NULL;
    hk_bmat A = {0};
    hk_vec *v = NULL;
    const int br = K->bs;
    const int64_t n = K->nbrows * br * (mode == HK_DIAG_BLOCK_INV ? br : 1);
    int err = hk_backend_get(name, &be);
    if (!err) err = hk_bmat_upload(be, K, &A);
    if (!err) err = hk_vec_create(be, n, HK_FP64, &v);
    if (!err) err = be->vec_set(v, NAN);
    if (!err) err = be->bmat_diag(&A, mode, v, bad);
    if (!err) err = hk_vec_download(v, out);
    if (err) fprintf(stderr, "\n  diag on %s: %s\n", name, hk_error_message());
    hk_vec_destroy(v);
    hk_bmat_free(&A);
    return err;
}

/* Every mode on both backends: the same bad row; values equal to 1e-12 relative (counted when
 * not bit-identical); no NaN left. Returns the bad row of mode m in bads[m]. */
static void compare_all(const hk_bcsr *K, int64_t bads[4])
{
    const int64_t n = K->nbrows * K->bs * K->bs;
    double *c = malloc((size_t)(n ? n : 1) * sizeof *c),
           *g = malloc((size_t)(n ? n : 1) * sizeof *g);
    for (int mode = HK_DIAG_INV; mode <= HK_DIAG_DECOUPLED; mode++) {
        const int64_t m = mode == HK_DIAG_BLOCK_INV ? n : K->nbrows * K->bs;
        int64_t bc = 7, bg = 7;
        CU_ASSERT_EQUAL_FATAL(run_diag("cpu", K, mode, c, &bc), 0);
        CU_ASSERT_EQUAL_FATAL(run_diag("cuda", K, mode, g, &bg), 0);
        CU_ASSERT_EQUAL(bc, bg);
        int nan = 0;
        long differ = 0;
        for (int64_t i = 0; i < m; i++) {
            nan |= isnan(g[i]);
            differ += memcmp(&c[i], &g[i], sizeof c[i]) != 0;
        }
        CU_ASSERT(!nan);
        double rd = hk_test_reldiff(g, c, (long)m);
        CU_ASSERT(rd <= 1e-12);
        if (differ || bc != bg)
            printf("\n    br %d mode %d: %ld of %lld entries not bit-identical (rel %.2g), bad "
                   "cpu %lld cuda %lld",
                   K->bs, mode, differ, (long long)m, rd, (long long)bc, (long long)bg);
        bads[mode] = bc;
    }
    free(c);
    free(g);
}

static int skip_some(int64_t bi)
{
    return bi == 3000 || bi == 1100;
}

static void test_random(void)
{
    for (int br = 1; br <= 6; br++) {
        hk_bcsr K;
        const int64_t nb = 4000; /* 16 thread blocks of 256 block rows */
        int64_t bads[4];
        gen_blocks(nb, br, 10 + br, NULL, &K);
        compare_all(&K, bads);
        for (int m = 0; m < 4; m++)
            CU_ASSERT_EQUAL(bads[m], -1);

        /* bad rows in later and earlier thread blocks: a negative diagonal entry at 3500, a
         * NaN at 2100 (not in the block inverse's singular test before its own block), a zero
         * diagonal at 900 (decoupled in the block inverse when br == 1) */
        dblock(&K, 3500)[br * br - 1] = -2.0;
        dblock(&K, 2100)[0] = NAN;
        double *z = dblock(&K, 900);
        z[(br - 1) * (br + 1)] = 0;
        compare_all(&K, bads);
        CU_ASSERT_EQUAL(bads[HK_DIAG_INV], 900 * br + br - 1);
        CU_ASSERT_EQUAL(bads[HK_DIAG_INV_SQRT], 900 * br + br - 1);
        CU_ASSERT_EQUAL(bads[HK_DIAG_BLOCK_INV], 2100 * br); /* 900 is still invertible */
        CU_ASSERT_EQUAL(bads[HK_DIAG_DECOUPLED], -1);

        /* decoupled dofs (zero row and column inside the block), a singular block, an
         * all-zero block, supports (rows zero off the diagonal) */
        dblock(&K, 2100)[0] = 3.0 * br;
        if (br > 1) {
            double *d = dblock(&K, 1700);
            for (int k = 0; k < br; k++)
                d[1 * br + k] = d[k * br + 1] = 0;
            double *s = dblock(&K, 2600);
            for (int c = 0; c < br; c++)
                s[(br - 1) * br + c] = s[c];
        }
        double *zero = dblock(&K, 400);
        for (int e = 0; e < br * br; e++)
            zero[e] = 0;
        for (int64_t p = K.rowptr[50]; p < K.rowptr[51]; p++)
            for (int e = 0; e < br * br; e++)
                K.val[p * br * br + e] = K.colind[p] == 50 && e % (br + 1) == 0 ? 1.0 : 0.0;
        compare_all(&K, bads);
        CU_ASSERT_EQUAL(bads[HK_DIAG_INV], 400 * br);
        CU_ASSERT_EQUAL(bads[HK_DIAG_BLOCK_INV], br > 1 ? 2600 * br : -1);
        CU_ASSERT_EQUAL(bads[HK_DIAG_DECOUPLED], -1);
        hk_bcsr_free(&K);

        /* missing diagonal blocks */
        gen_blocks(nb, br, 20 + br, skip_some, &K);
        compare_all(&K, bads);
        CU_ASSERT_EQUAL(bads[HK_DIAG_INV], 1100 * br);
        CU_ASSERT_EQUAL(bads[HK_DIAG_BLOCK_INV], -1); /* an absent block is all decoupled */
        hk_bcsr_free(&K);
    }
}

/* Sizes at the edges: no rows, one row, one thread block plus one row. */
static void test_sizes(void)
{
    const int64_t sizes[] = {0, 1, 257};
    for (int br = 1; br <= 6; br += 2)
        for (int k = 0; k < 3; k++) {
            hk_bcsr K;
            int64_t bads[4];
            gen_blocks(sizes[k], br, 30 + br, NULL, &K);
            compare_all(&K, bads);
            for (int m = 0; m < 4; m++)
                CU_ASSERT_EQUAL(bads[m], -1);
            hk_bcsr_free(&K);
        }
}

/* Set-up of jacobi, bjacobi and poly on the device applies like the one on the CPU, in fp64
 * and fp32 (the diag op's result converted once). */
/* bmat_first_nonfinite on backend name, K's values starting `shift` doubles into their array
 * (the device kernel's unaligned head) */
static int64_t run_nonfinite(const char *name, const hk_bcsr *K, int shift)
{
    const hk_backend *be = NULL;
    hk_bmat A = {0};
    double *buf = NULL, *keep = NULL;
    int64_t row = -7;
    const size_t nv = (size_t)K->rowptr[K->nbrows] * K->bs * K->bs;
    int err = hk_backend_get(name, &be);
    if (!err) err = hk_bmat_upload(be, K, &A);
    if (!err) err = hk_backend_alloc(be, (nv + 2) * sizeof *buf, (void **)&buf);
    if (!err && nv) err = be->copy(buf + shift, A.val, nv * sizeof *buf);
    if (!err) err = be->sync();
    if (!err) {
        keep = A.val;
        A.val = buf + shift;
        err = be->bmat_first_nonfinite(&A, &row);
        A.val = keep;
    }
    if (err) fprintf(stderr, "\n  first_nonfinite on %s: %s\n", name, hk_error_message());
    hk_backend_free(be, buf);
    hk_bmat_free(&A);
    return err ? -7 : row;
}

/* The first block row with a NaN or an infinity: cuda = cpu = the plain answer, for bad values
 * at the first and last entries, in the middle, two of them (the earlier row wins), none; block
 * sizes 1..6, a few sizes (more values than one pass of the grid takes), the values at an
 * aligned and an unaligned start. */
static void test_nonfinite(void)
{
    static const int64_t sizes[] = {1, 2, 37, 1000, 150000};
    const double bad[3] = {NAN, INFINITY, -INFINITY};
    for (int br = 1; br <= 6; br++)
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            hk_bcsr K;
            gen_blocks(sizes[z], br, 40 + br, NULL, &K);
            const int64_t bb = (int64_t)br * br, nv = K.rowptr[K.nbrows] * bb;
            for (int place = 0; place < 6; place++)
                for (int shift = 0; shift < 2; shift++) {
                    /* entries made bad (-1: none), the expected row */
                    int64_t q[2] = {-1, -1};
                    if (place == 1) q[0] = 0;
                    if (place == 2) q[0] = nv - 1;
                    if (place == 3) q[0] = nv / 2;
                    if (place == 4) q[0] = nv - 1, q[1] = nv / 3;
                    if (place == 5) q[0] = nv * 2 / 3 + 1, q[1] = nv * 2 / 3;
                    double old[2] = {0, 0};
                    int64_t want = -1;
                    for (int t = 0; t < 2; t++) {
                        if (q[t] < 0 || q[t] >= nv) continue;
                        old[t] = K.val[q[t]];
                        K.val[q[t]] = bad[(place + t) % 3];
                        int64_t r = 0;
                        while (K.rowptr[r + 1] * bb <= q[t])
                            r++;
                        if (want < 0 || r < want) want = r;
                    }
                    const int64_t c = run_nonfinite("cpu", &K, shift),
                                  g = run_nonfinite("cuda", &K, shift);
                    if (c != want || g != want)
                        printf("\n    br %d nb %lld place %d shift %d: cpu %lld cuda %lld, "
                               "expected %lld",
                               br, (long long)sizes[z], place, shift, (long long)c, (long long)g,
                               (long long)want);
                    CU_ASSERT_EQUAL(c, want);
                    CU_ASSERT_EQUAL(g, want);
                    for (int t = 1; t >= 0; t--)
                        if (q[t] >= 0 && q[t] < nv) K.val[q[t]] = old[t];
                }
            hk_bcsr_free(&K);
        }
}

static void test_pcs(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 6, 6, &K));
    const int64_t n = K.nbrows * K.bs;
    double *r = malloc(n * sizeof *r), *zc = malloc(n * sizeof *zc), *zg = malloc(n * sizeof *zg);
    uint32_t s = 5;
    for (int64_t i = 0; i < n; i++)
        r[i] = urand(&s);
    static const char *pcs[] = {"jacobi", "bjacobi", "poly", NULL};
    for (int p = 0; pcs[p]; p++)
        for (int prec = HK_FP64; prec <= HK_FP32; prec++) {
            double *z[2] = {zc, zg};
            for (int b = 0; b < 2; b++) {
                const hk_backend *be = NULL;
                hk_bmat A = {0};
                hk_pc *pc = NULL;
                hk_vec *vr = NULL, *vz = NULL;
                hk_options *o = NULL;
                HK_ASSERT_OK(hk_backend_get(b ? "cuda" : "cpu", &be));
                HK_ASSERT_OK(hk_bmat_upload(be, &K, &A));
                HK_ASSERT_OK(hk_options_create(&o));
                HK_ASSERT_OK(hk_pc_create(hk_pc_type_find(pcs[p]), be, (hk_precision)prec, &A, NULL,
                                          NULL, o, &pc));
                HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &vr));
                HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &vz));
                HK_ASSERT_OK(hk_vec_upload(vr, r));
                HK_ASSERT_OK(hk_pc_apply(pc, vr, vz));
                HK_ASSERT_OK(hk_vec_download(vz, z[b]));
                hk_vec_destroy(vr);
                hk_vec_destroy(vz);
                hk_pc_destroy(pc);
                hk_options_destroy(o);
                hk_bmat_free(&A);
            }
            double rd = hk_test_reldiff(zg, zc, (long)n);
            if (!(rd <= (prec == HK_FP64 ? 1e-10 : 1e-5)))
                printf("\n    %s %s: cuda vs cpu %.3g", pcs[p], prec == HK_FP64 ? "fp64" : "fp32",
                       rd);
            CU_ASSERT(rd <= (prec == HK_FP64 ? 1e-10 : 1e-5));
        }
    free(r);
    free(zc);
    free(zg);
    hk_bcsr_free(&K);
}

HK_DEVICE_SUITE(cuda_diag,
                {"every diag mode, block sizes 1..6: cuda = cpu, the first bad row", test_random},
                {"no rows, one row, one thread block plus one", test_sizes},
                {"jacobi, bjacobi, poly set up on the device apply like on the cpu", test_pcs},
                {"first non-finite block row: cuda = cpu = the plain answer, bs 1..6, bad "
                 "values first, last, in the middle, two, none; an unaligned start",
                 test_nonfinite})
