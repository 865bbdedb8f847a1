/* The s-step pieces: the matrix-powers op against k SpMVs in both schedules (every basis,
 * partition or chunk size and pass length, with and without the fused Jacobi diagonal,
 * partitions of one row and of the whole matrix), its ghost zones against the closed form of
 * a tridiagonal matrix, the wavefront's stages against their dependencies, the Gram
 * reduction against dot products; method=scg against cg (same solution to the tolerance on
 * the true residual, iterations within 1.2x), options, and the exit code of hooke solve.
 * cuda_sstep: the CUDA matrix powers, plans and Gram matrices equal the CPU's, and scg on
 * CUDA converges to the same solution. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#include "ksp/ksp_impl.h"
#include "mpk_plan.h"

/* ---- helpers ----------------------------------------------------------------------------- */

/* The largest |column - row| of K in block rows. */
static int64_t bandwidth(const hk_bcsr *K)
{
    int64_t bw = 0;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int64_t t = K->rowptr[i]; t < K->rowptr[i + 1]; t++) {
            const int64_t d = K->colind[t] > i ? K->colind[t] - i : i - K->colind[t];
            if (d > bw) bw = d;
        }
    return bw;
}

static hk_vec *vec_from(const hk_backend *be, int64_t n, const double *h)
{
    hk_vec *v = NULL;
    HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &v));
    if (h) HK_ASSERT_OK(hk_vec_upload(v, h));
    return v;
}

static double *download(const hk_vec *v)
{
    double *h = malloc((size_t)v->n * sizeof *h);
    HK_ASSERT_OK(hk_vec_download(v, h));
    return h;
}

/* The test matrices of the matrix-powers cases. */
enum { NMPK = 6 };
static const char *mpk_name[NMPK] = {"elasticity2d 6x5", "elasticity3d 3x3x2",
                                     "poisson 9",        "random bs 4 with empty rows",
                                     "tridiag 40",       "nonsymmetric banded bs 6, 53 rows"};
static void mpk_matrix(int i, hk_bcsr *K)
{
    int err = 0;
    if (i == 0) err = hk_gen_elasticity2d(6, 5, K);
    if (i == 1) err = hk_gen_elasticity3d(3, 3, 2, K);
    if (i == 2) err = hk_gen_poisson2d(9, K);
    if (i == 3) err = hk_gen_random(45, 45, 4, 3.0, 1, 7u, K);
    if (i == 4) hk_test_tridiag(40, K);
    if (i == 5) hk_test_band(53, 6, -1, 99u, K);
    CU_ASSERT_EQUAL_FATAL(err, 0);
}

/* One matrix-powers case on be: kk levels from a plan of k levels with partitions (wavefront:
 * chunks) of block rows; returns the largest relative difference of W[1..kk] (and U[0..kk] with d)
 * from the same recurrence by SpMVs and vector ops; the results go to Wout/Uout (kk+1 host arrays
 * of n, caller-freed) when not NULL. */
/* Passes of other lengths that mpk_case runs with the plan before the one it checks (a plan
 * is reused by scg with varying pass lengths). */
static int mpk_prior_passes;

static double mpk_case(const hk_backend *be, const hk_bcsr *K, int sched, int64_t block, int k,
                       int kk, const double *coef, int with_d, int with_prev, double **Wout,
                       double **Uout, hk_mpk_info *info)
{
    const int64_t n = K->nbrows * K->bs;
    hk_bmat B = {0};
    hk_mat *A = NULL;
    void *plan = NULL;
    HK_ASSERT_OK(hk_bmat_upload(be, K, &B));
    HK_ASSERT_OK(hk_mat_create_bmat(&B, HK_FMT_CSR, HK_FP64, NULL, &A));
    HK_ASSERT_OK(be->mpk_plan(&B, sched, block, k, 0.0, &plan, info));
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    double *h = malloc((size_t)n * sizeof *h);
    hk_vec *W[HK_MPK_MAXK + 1], *U[HK_MPK_MAXK + 1], *Wr[HK_MPK_MAXK + 1], *Ur[HK_MPK_MAXK + 1];
    hk_test_fill(h, n, 1);
    for (int j = 0; j <= k; j++) {
        W[j] = vec_from(be, n, j == 0 ? h : NULL);
        U[j] = vec_from(be, n, NULL);
        Wr[j] = vec_from(be, n, j == 0 ? h : NULL);
        Ur[j] = vec_from(be, n, NULL);
    }
    hk_test_fill(h, n, 2);
    hk_vec *d = with_d ? vec_from(be, n, h) : NULL;
    hk_test_fill(h, n, 3);
    hk_vec *wp = with_prev ? vec_from(be, n, h) : NULL;
    double prior[3 * HK_MPK_MAXK];
    for (int j = 0; j < 3 * HK_MPK_MAXK; j++)
        prior[j] = j % 3 == 0 ? 0.5 : 0.0;
    for (int p = 0; p < mpk_prior_passes; p++) /* lengths k, 1, k-1, 2, ... */
        HK_ASSERT_OK(be->mpk_apply(plan, p & 1 ? 1 + p / 2 : (k - p / 2 > 0 ? k - p / 2 : 1), prior,
                                   d, wp, W, d ? U : NULL));
    HK_ASSERT_OK(be->mpk_apply(plan, kk, coef, d, wp, W, d ? U : NULL));
    /* the reference: SpMV and vector ops */
    if (d) HK_ASSERT_OK(be->vec_pointwise_mult(Ur[0], d, Wr[0]));
    for (int j = 0; j < kk; j++) {
        const hk_vec *prev = j ? Wr[j - 1] : wp;
        HK_ASSERT_OK(hk_mat_spmv(A, d ? Ur[j] : Wr[j], Wr[j + 1]));
        if (prev)
            HK_ASSERT_OK(be->vec_axpbypcz(Wr[j + 1], coef[3 * j + 1], Wr[j], coef[3 * j + 2], prev,
                                          coef[3 * j]));
        else
            HK_ASSERT_OK(be->vec_axpby(Wr[j + 1], coef[3 * j + 1], Wr[j], coef[3 * j]));
        if (d) HK_ASSERT_OK(be->vec_pointwise_mult(Ur[j + 1], d, Wr[j + 1]));
    }
    double worst = 0;
    for (int j = 0; j <= kk; j++) {
        double *a = download(W[j]), *r = download(Wr[j]);
        double e = hk_test_reldiff(a, r, (long)n);
        if (!(e <= worst)) worst = e;
        if (Wout)
            Wout[j] = a;
        else
            free(a);
        free(r);
        if (d) {
            a = download(U[j]);
            r = download(Ur[j]);
            e = hk_test_reldiff(a, r, (long)n);
            if (!(e <= worst)) worst = e;
            if (Uout)
                Uout[j] = a;
            else
                free(a);
            free(r);
        } else if (Uout) {
            Uout[j] = NULL;
        }
    }
    for (int j = 0; j <= k; j++) {
        hk_vec_destroy(W[j]);
        hk_vec_destroy(U[j]);
        hk_vec_destroy(Wr[j]);
        hk_vec_destroy(Ur[j]);
    }
    hk_vec_destroy(d);
    hk_vec_destroy(wp);
    free(h);
    be->mpk_free(plan);
    hk_mat_destroy(A);
    hk_bmat_free(&B);
    return worst;
}

static const int64_t blocks[] = {1, 2, 7, 64, 1 << 30}; /* the last: the whole matrix */
/* wavefront chunks: the backend's, 1 (raised to twice the bandwidth), sizes that do not divide
 * the rows, the whole matrix */
static const int64_t chunks[] = {0, 1, 7, 20, 1 << 30};
static const char *const sched_name[2] = {"ghost", "wavefront"};

/* On the cpu every plan equals the composed SpMVs and vector ops to the last digit (up to the
 * sign of a zero): no choice among them changes a result. */
static void mpk_sweep(const hk_backend *be, int sched)
{
    const int64_t *bl = sched == HK_MPK_WAVEFRONT ? chunks : blocks;
    const double tol = strcmp(hk_backend_name(be), "cpu") ? 1e-13 : 0.0;
    int cases = 0;
    for (int mi = 0; mi < NMPK; mi++) {
        hk_bcsr K;
        mpk_matrix(mi, &K);
        for (int bi = 0; bi < 5; bi++)
            for (int k = 1; k <= HK_SCG_MAX_S; k++)
                for (int b = 0; b < 4; b++) {
                    /* every pass length of a plan with k levels; d and W[-1] on alternate cases */
                    const int kk = 1 + (k + b) % k;
                    double coef[3 * HK_MPK_MAXK];
                    hk_test_mpk_coefs(b, kk, coef);
                    hk_mpk_info info;
                    const int with_d = (bi + b) & 1, with_prev = (k + b) & 1;
                    double e = mpk_case(be, &K, sched, bl[bi], k, kk, coef, with_d, with_prev, NULL,
                                        NULL, &info);
                    if (!(e <= tol))
                        fprintf(stderr,
                                "\n  %s on %s, %s: block %lld, k %d, %d levels, basis %d, d %d, "
                                "prev %d: relative difference %.2e",
                                mpk_name[mi], hk_backend_name(be), sched_name[sched],
                                (long long)bl[bi], k, kk, b, with_d, with_prev, e);
                    CU_ASSERT(e <= tol);
                    cases++;
                }
        hk_bcsr_free(&K);
    }
    CU_ASSERT(cases == NMPK * 5 * HK_SCG_MAX_S * 4);
}

/* ---- matrix powers ------------------------------------------------------------------------ */

static void test_mpk_equals_spmvs(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    mpk_sweep(be, HK_MPK_GHOST);
}

static void test_mpk_wavefront_equals_spmvs(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    mpk_sweep(be, HK_MPK_WAVEFRONT);
    mpk_prior_passes = 3; /* and with the plan used for other pass lengths first */
    mpk_sweep(be, HK_MPK_WAVEFRONT);
    mpk_prior_passes = 0;
}

/* The stages of every row count, bandwidth, chunk and pass length: each row of each level is
 * computed at exactly one stage, the last stage is not empty, and every input of a row at
 * level j (level j - 1 at the columns within the bandwidth, levels j - 1 and j - 2 at the row
 * itself; level 0 is given) was finished at an earlier stage, so the levels of one stage are
 * independent. */
static void test_wave_stages(void)
{
    static const int64_t nbs[] = {1, 2, 5, 17, 40, 101};
    static const int64_t bws[] = {0, 1, 3, 8, 60};
    static const int64_t wants[] = {1, 2, 5, 7, 16, 1 << 30};
    int64_t *stage = malloc((size_t)(HK_MPK_MAXK + 1) * 101 * sizeof *stage);
    int bad = 0, cases = 0;
    for (size_t a = 0; a < sizeof nbs / sizeof *nbs; a++)
        for (size_t b = 0; b < sizeof bws / sizeof *bws; b++)
            for (size_t c = 0; c < sizeof wants / sizeof *wants; c++)
                for (int kk = 1; kk <= HK_MPK_MAXK; kk++) {
                    const int64_t nb = nbs[a], bw = bws[b] < nb ? bws[b] : nb - 1;
                    hk_mpk_info info;
                    int64_t shift;
                    memset(&info, 0, sizeof info);
                    hk_mpk_wave_plan(nb, bw, wants[c], 3, kk, &info, &shift);
                    const int64_t C = info.block;
                    bad += !(C >= 1 && C <= nb && (C >= 2 * bw || C == nb));
                    bad += !(info.nparts == (nb + C - 1) / C && info.work == kk * nb &&
                             info.bandwidth == bw);
                    for (int64_t i = 0; i < (HK_MPK_MAXK + 1) * nb; i++)
                        stage[i] = i < nb ? 0 : -1; /* level 0 is given */
                    const int64_t stages = hk_mpk_wave_stages(nb, C, shift, kk);
                    int64_t last = 0;
                    for (int64_t t = 1; t <= stages; t++)
                        for (int j = 1; j <= kk; j++) {
                            int64_t lo, hi;
                            hk_mpk_wave_rows(nb, C, shift, t, j, &lo, &hi);
                            for (int64_t i = lo; i < hi; i++) {
                                bad += stage[j * nb + i] != -1; /* computed twice */
                                stage[j * nb + i] = t;
                                last = t;
                            }
                        }
                    bad += last != stages;
                    for (int j = 1; j <= kk; j++)
                        for (int64_t i = 0; i < nb; i++) {
                            const int64_t t = stage[j * nb + i];
                            if (t < 1) {
                                bad++; /* never computed */
                                continue;
                            }
                            for (int64_t q = i - bw; q <= i + bw; q++)
                                if (q >= 0 && q < nb) bad += !(stage[(j - 1) * nb + q] < t);
                            if (j >= 2) bad += !(stage[(j - 2) * nb + i] < t);
                        }
                    if (bad) {
                        fprintf(stderr, "\n  wavefront nb %lld bw %lld want %lld kk %d: %d faults",
                                (long long)nb, (long long)bw, (long long)wants[c], kk, bad);
                        bad = 0;
                        CU_FAIL("wavefront stages");
                    }
                    cases++;
                }
    CU_ASSERT_EQUAL(cases, 6 * 5 * 6 * HK_MPK_MAXK);
    free(stage);
}

/* The wavefront plan's counts (chunks, bandwidth, no redundant rows), the backend's own chunk
 * at least twice the bandwidth, and the same digits for 1, 2 and 3 threads. */
static void test_mpk_wavefront_plan(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    for (int mi = 0; mi < NMPK; mi++) {
        hk_bcsr K;
        mpk_matrix(mi, &K);
        hk_bmat B = {0};
        HK_ASSERT_OK(hk_bmat_upload(be, &K, &B));
        const int64_t nb = K.nbrows, bw = bandwidth(&K);
        for (int ci = 0; ci < 5; ci++)
            for (int k = 1; k <= HK_SCG_MAX_S; k += 3) {
                void *plan = NULL;
                hk_mpk_info info;
                HK_ASSERT_OK(be->mpk_plan(&B, HK_MPK_WAVEFRONT, chunks[ci], k, 0.0, &plan, &info));
                CU_ASSERT_PTR_NOT_NULL(plan);
                int64_t want = chunks[ci] > 2 * bw ? chunks[ci] : 2 * bw;
                if (want > nb) want = nb;
                if (chunks[ci] > 0) CU_ASSERT_EQUAL(info.block, want);
                CU_ASSERT(info.block >= 1 && info.block <= nb &&
                          (info.block >= 2 * bw || info.block == nb));
                CU_ASSERT_EQUAL(info.schedule, HK_MPK_WAVEFRONT);
                CU_ASSERT_EQUAL(info.bandwidth, bw);
                CU_ASSERT_EQUAL(info.nparts, (nb + info.block - 1) / info.block);
                CU_ASSERT_EQUAL(info.work, (int64_t)k * nb);
                CU_ASSERT_EQUAL(info.ext_rows, nb);
                CU_ASSERT_EQUAL(info.k, k);
                be->mpk_free(plan);
            }
        hk_bmat_free(&B);
        hk_bcsr_free(&K);
    }
    /* the thread count changes no digit (matrices large enough for a parallel stage) */
    for (int mi = 0; mi < 2; mi++) {
        hk_bcsr K;
        HK_ASSERT_OK(mi ? hk_gen_poisson2d(60, &K) : hk_gen_elasticity3d(8, 8, 8, &K));
        const int64_t n = K.nbrows * K.bs;
        double coef[3 * HK_MPK_MAXK], *W1[HK_MPK_MAXK + 1], *U1[HK_MPK_MAXK + 1];
        hk_test_mpk_coefs(2, 5, coef);
        hk_mpk_info info;
        const int threads = omp_get_max_threads();
        omp_set_num_threads(1);
        mpk_case(be, &K, HK_MPK_WAVEFRONT, 0, 5, 5, coef, 1, 1, W1, U1, &info);
        for (int nt = 2; nt <= 3; nt++) {
            double *Wt[HK_MPK_MAXK + 1], *Ut[HK_MPK_MAXK + 1];
            omp_set_num_threads(nt);
            mpk_case(be, &K, HK_MPK_WAVEFRONT, 0, 5, 5, coef, 1, 1, Wt, Ut, &info);
            for (int j = 0; j <= 5; j++) {
                CU_ASSERT(memcmp(Wt[j], W1[j], (size_t)n * sizeof(double)) == 0);
                CU_ASSERT(memcmp(Ut[j], U1[j], (size_t)n * sizeof(double)) == 0);
                free(Wt[j]);
                free(Ut[j]);
            }
        }
        omp_set_num_threads(threads);
        for (int j = 0; j <= 5; j++) {
            free(W1[j]);
            free(U1[j]);
        }
        hk_bcsr_free(&K);
    }
}

/* Ghost zones of tridiag(n): partition [lo, hi) at levels <= l covers
 * [max(0, lo - l), min(n, hi + l)); the plan's counts follow. */
static void test_mpk_ghost_zones(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    const int64_t n = 40;
    hk_bcsr K;
    hk_test_tridiag(n, &K);
    hk_bmat B = {0};
    HK_ASSERT_OK(hk_bmat_upload(be, &K, &B));
    for (int bi = 0; bi < 5; bi++)
        for (int k = 1; k <= 6; k++) {
            const int64_t blk = blocks[bi] < n ? blocks[bi] : n;
            const int64_t np = (n + blk - 1) / blk;
            int64_t ext = 0, work = 0, mx = 0;
            for (int64_t p = 0; p < np; p++) {
                const int64_t lo = p * blk, hi = lo + blk < n ? lo + blk : n;
#define COVER(l) ((hi + (l) < n ? hi + (l) : n) - (lo - (l) > 0 ? lo - (l) : 0))
                ext += COVER(k);
                if (COVER(k) > mx) mx = COVER(k);
                for (int l = 0; l < k; l++)
                    work += COVER(l);
#undef COVER
            }
            void *plan = NULL;
            hk_mpk_info info;
            HK_ASSERT_OK(be->mpk_plan(&B, HK_MPK_GHOST, blocks[bi], k, 0.0, &plan, &info));
            CU_ASSERT_EQUAL(info.nparts, np);
            CU_ASSERT_EQUAL(info.block, blk);
            CU_ASSERT_EQUAL(info.ext_rows, ext);
            CU_ASSERT_EQUAL(info.max_ext, mx);
            CU_ASSERT_EQUAL(info.work, work);
            be->mpk_free(plan);
            /* a cap below the redundant work: no plan, and no error */
            if (work > k * n) {
                HK_ASSERT_OK(be->mpk_plan(&B, HK_MPK_GHOST, blocks[bi], k, 1.0, &plan, &info));
                CU_ASSERT_PTR_NULL(plan);
            }
        }
    /* bad arguments are errors naming the option */
    void *plan = NULL;
    hk_mpk_info info;
    CU_ASSERT_EQUAL(be->mpk_plan(&B, HK_MPK_GHOST, 0, 2, 0.0, &plan, &info), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "mpk.block"));
    CU_ASSERT_EQUAL(be->mpk_plan(&B, HK_MPK_GHOST, 4, HK_MPK_MAXK + 1, 0.0, &plan, &info),
                    HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "mpk.k"));
    hk_error_clear();
    hk_bmat_free(&B);
    hk_bcsr_free(&K);
}

/* ---- the Gram reduction ------------------------------------------------------------------- */

static void gram_case(const hk_backend *be, int64_t n, int m, int distinct, int gx, double *Gout,
                      double *GXout)
{
    hk_vec *X[HK_GRAM_MAX], *Y[HK_GRAM_MAX];
    double *hx[HK_GRAM_MAX], *hy[HK_GRAM_MAX];
    for (int i = 0; i < m; i++) {
        hx[i] = malloc((size_t)n * sizeof(double));
        hy[i] = malloc((size_t)n * sizeof(double));
        hk_test_fill(hx[i], n, 10u + (unsigned)i);
        hk_test_fill(hy[i], n, 50u + (unsigned)i);
        for (int64_t r = 0; r < n; r++)
            hy[i][r] -= 1.0; /* signs mixed */
        X[i] = vec_from(be, n, hx[i]);
        Y[i] = vec_from(be, n, hy[i]);
    }
    double G[HK_GRAM_MAX * HK_GRAM_MAX], GX[HK_GRAM_MAX * HK_GRAM_MAX];
    HK_ASSERT_OK(be->vec_gram(m, X, distinct ? Y : NULL, G, gx ? GX : NULL));
    double worst = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            double want = 0, wx = 0, scale = 0;
            const double *y = distinct ? hy[j] : hx[j];
            for (int64_t r = 0; r < n; r++) {
                want += hx[i][r] * y[r];
                wx += hx[i][r] * hx[j][r];
                scale += fabs(hx[i][r] * y[r]) + fabs(hx[i][r] * hx[j][r]);
            }
            double e = fabs(G[i * m + j] - want) / scale;
            if (gx) e = fmax(e, fabs(GX[i * m + j] - wx) / scale);
            if (!(e <= worst)) worst = e;
        }
    if (!(worst <= 1e-14))
        fprintf(stderr, "\n  gram %s n %lld m %d distinct %d gx %d: %.2e", hk_backend_name(be),
                (long long)n, m, distinct, gx, worst);
    CU_ASSERT(worst <= 1e-14);
    if (Gout) memcpy(Gout, G, sizeof(double) * m * m);
    if (GXout && gx) memcpy(GXout, GX, sizeof(double) * m * m);
    for (int i = 0; i < m; i++) {
        hk_vec_destroy(X[i]);
        hk_vec_destroy(Y[i]);
        free(hx[i]);
        free(hy[i]);
    }
}

static void test_gram(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    const int64_t ns[3] = {1, 300, 5001};
    const int ms[4] = {1, 3, 17, HK_GRAM_MAX};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 3; c++)
                gram_case(be, ns[a], ms[b], c > 0, c == 2, NULL, NULL);
}

/* ---- method=scg --------------------------------------------------------------------------- */

/* Solve K x = K ones with opts on be; the solution (host, caller-freed), result, code. */
static int solve(const hk_backend *be, const hk_bcsr *K, const char *opts, double **x,
                 hk_result *res)
{
    *x = calloc((size_t)(K->nbrows * K->bs), sizeof **x);
    return hk_test_solve_ones(be, K, opts, *x, res, NULL);
}

static double maxdiff(const double *a, const double *b, int64_t n)
{
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= e)) e = d;
    }
    return e;
}

static const char *const bases[3] = {"monomial", "newton", "chebyshev"};
/* how the basis is built: the default (cpu: both schedules timed), ghost zones forced
 * (partitions of 16 block rows, 2 levels a pass where s allows), one SpMV per vector, the
 * wavefront with the backend's chunk, the wavefront with chunks of 5 block rows (raised to
 * twice the bandwidth) and 2 levels a pass where s allows, the ghost zones' default, every
 * plan and the SpMVs timed */
enum { NBUILD = 7 };
static const char *const builds[NBUILD] = {"",
                                           "mpk.block=16",
                                           "mpk.block=-1",
                                           "mpk.schedule=wavefront",
                                           "mpk.schedule=wavefront mpk.block=5",
                                           "mpk.schedule=ghost",
                                           "mpk.schedule=timed"};

/* scg's solution equals cg's to the accuracy the tolerance gives (the true residual of both
 * is below it), on 2D/3D elasticity and Poisson, s = 1..4, every basis, pc none and jacobi,
 * every way of building the basis. */
static void scg_vs_cg(const hk_backend *be)
{
    const int cpu = !strcmp(hk_backend_name(be), "cpu");
    static const char *mats[3] = {"elasticity2d 8x8", "elasticity3d 4x4x4", "poisson 12"};
    for (int mi = 0; mi < 3; mi++) {
        hk_bcsr K;
        int err = mi == 0   ? hk_gen_elasticity2d(8, 8, &K)
                  : mi == 1 ? hk_gen_elasticity3d(4, 4, 4, &K)
                            : hk_gen_poisson2d(12, &K);
        CU_ASSERT_EQUAL_FATAL(err, 0);
        const int64_t n = K.nbrows * K.bs;
        for (int pc = 0; pc < 2; pc++) {
            char opts[256];
            snprintf(opts, sizeof opts, "method=cg pc=%s tol=1e-10", pc ? "jacobi" : "none");
            double *xcg = NULL;
            hk_result rcg;
            HK_ASSERT_OK(solve(be, &K, opts, &xcg, &rcg));
            CU_ASSERT_EQUAL(rcg.reason, HK_CONVERGED_RTOL);
            for (int s = 1; s <= 4; s++)
                for (int b = 0; b < 3; b++) {
                    double *x0 = NULL; /* the first build's solution */
                    for (int h = 0; h < NBUILD; h++) {
                        snprintf(opts, sizeof opts,
                                 "method=scg ksp.s=%d ksp.basis=%s %s%s pc=%s "
                                 "tol=1e-10",
                                 s, bases[b], builds[h],
                                 (h == 1 || h == 4) && s >= 2 ? " mpk.k=2" : "",
                                 pc ? "jacobi" : "none");
                        double *x = NULL;
                        hk_result r;
                        int code = solve(be, &K, opts, &x, &r);
                        double d = maxdiff(x, xcg, n);
                        int ok = code == 0 && r.reason == HK_CONVERGED_RTOL &&
                                 r.true_residual <= 1e-10 && d <= 1e-6;
                        if (!ok)
                            fprintf(stderr,
                                    "\n  %s on %s [%s]: code %d (%s) reason '%s' it %d (cg %d) "
                                    "true residual %.2e, |x - x_cg| %.2e",
                                    opts, mats[mi], hk_backend_name(be), code,
                                    code ? hk_error_message() : "", hk_reason_name(r.reason),
                                    r.iterations, rcg.iterations, r.true_residual, d);
                        CU_ASSERT(ok);
                        /* the cpu's builds differ in speed only, not in a digit */
                        if (cpu && x0 && memcmp(x, x0, (size_t)n * sizeof *x) != 0) {
                            fprintf(stderr, "\n  %s on %s: x differs from '%s''s", opts, mats[mi],
                                    builds[0]);
                            CU_FAIL("scg builds differ");
                        }
                        if (x0)
                            free(x);
                        else
                            x0 = x;
                    }
                    free(x0);
                }
            free(xcg);
        }
        hk_bcsr_free(&K);
    }
}

static void test_scg_matches_cg(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    scg_vs_cg(be);
}

/* On 3D elasticity scg takes at most 1.2x cg's iterations for s <= 4 (every basis, no pc and
 * Jacobi): the s-step basis spans the same Krylov space, and rounding costs little at s <= 4. */
static void test_scg_iterations(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(8, 8, 8, &K));
    for (int pc = 0; pc < 2; pc++) {
        char opts[256];
        const char *pcn = pc ? "jacobi" : "none";
        snprintf(opts, sizeof opts, "method=cg pc=%s tol=1e-8", pcn);
        double *x = NULL;
        hk_result rcg;
        HK_ASSERT_OK(solve(be, &K, opts, &x, &rcg));
        free(x);
        for (int s = 1; s <= 4; s++)
            for (int b = 0; b < 3; b++) {
                snprintf(opts, sizeof opts, "method=scg ksp.s=%d ksp.basis=%s pc=%s tol=1e-8", s,
                         bases[b], pcn);
                hk_result r;
                HK_ASSERT_OK(solve(be, &K, opts, &x, &r));
                free(x);
                const int ok = r.reason == HK_CONVERGED_RTOL && r.true_residual <= 1e-8 &&
                               r.iterations <= 1.2 * rcg.iterations;
                if (!ok)
                    fprintf(stderr, "\n  %s: reason '%s', %d iterations, cg %d, true res %.2e",
                            opts, hk_reason_name(r.reason), r.iterations, rcg.iterations,
                            r.true_residual);
                CU_ASSERT(ok);
            }
    }
    hk_bcsr_free(&K);
}

/* A slowly converging system (a stretched beam, a thousand and more iterations) with a
 * preconditioner and a shifted basis: scg stays within 1.2x cg's iterations (the bracket with
 * pc=poly, where recombined z and p once cost 1.5x, is in suite e2e). */
static void test_scg_slow_system(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(200, 3, 3, &K));
    static const char *const pcs[] = {"jacobi", "poly"};
    for (int p = 0; p < 2; p++) {
        char opts[256];
        snprintf(opts, sizeof opts, "method=cg pc=%s tol=1e-8", pcs[p]);
        double *x = NULL;
        hk_result rcg;
        HK_ASSERT_OK(solve(be, &K, opts, &x, &rcg));
        free(x);
        for (int b = 1; b < 3; b++) {
            snprintf(opts, sizeof opts, "method=scg ksp.s=4 ksp.basis=%s pc=%s tol=1e-8",
                     bases[b], pcs[p]);
            hk_result r;
            HK_ASSERT_OK(solve(be, &K, opts, &x, &r));
            free(x);
            const int ok = hk_reason_converged(r.reason) && r.true_residual <= 1e-8 &&
                           r.iterations <= 1.2 * rcg.iterations;
            fprintf(stderr, "\n  %s: '%s', %d iterations, cg %d", opts, hk_reason_name(r.reason),
                    r.iterations, rcg.iterations);
            CU_ASSERT(ok);
        }
    }
    hk_bcsr_free(&K);
}

/* Preconditioners that cannot be fused are applied between the SpMVs; residual replacement
 * by count and off; the iteration limit inside an outer step. */
static void test_scg_pcs_and_replacement(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 5, 5, &K));
    static const char *opts[] = {"pc=poly",
                                 "pc=fsai ksp.s=3",
                                 "pc=amg ksp.basis=newton",
                                 "pc=jacobi precision=mixed",
                                 "pc=bjacobi ksp.basis=monomial ksp.s=2",
                                 "pc=jacobi replace_every=8",
                                 "pc=none replace_every=-1",
                                 "pc=jacobi ksp.s=8 mpk.block=32 mpk.k=3",
                                 NULL};
    for (int i = 0; opts[i]; i++) {
        char text[256];
        snprintf(text, sizeof text, "method=scg %s tol=1e-9", opts[i]);
        double *x = NULL;
        hk_result r;
        int code = solve(be, &K, text, &x, &r);
        double err = 0;
        for (int64_t j = 0; j < K.nbrows * K.bs; j++)
            err = fmax(err, fabs(x[j] - 1.0));
        const int ok =
            code == 0 && r.reason == HK_CONVERGED_RTOL && r.true_residual <= 1e-9 && err <= 1e-5;
        if (!ok)
            fprintf(stderr, "\n  %s: code %d (%s) reason '%s' it %d true res %.2e err %.2e", text,
                    code, code ? hk_error_message() : "", hk_reason_name(r.reason), r.iterations,
                    r.true_residual, err);
        CU_ASSERT(ok);
        free(x);
    }
    /* maxit falls inside an outer step: the count stops there */
    for (int s = 1; s <= 8; s++) {
        char text[128];
        snprintf(text, sizeof text, "method=scg ksp.s=%d pc=jacobi maxit=%d", s, 13 + s);
        double *x = NULL;
        hk_result r;
        HK_ASSERT_OK(solve(be, &K, text, &x, &r));
        CU_ASSERT_EQUAL(r.reason, HK_DIVERGED_MAXIT);
        CU_ASSERT_EQUAL(r.iterations, 13 + s);
        free(x);
    }
    hk_bcsr_free(&K);
}

static void test_scg_options(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_poisson2d(6, &K));
    static const struct {
        const char *opts, *names;
    } bad[] = {{"method=scg ksp.s=0", "ksp.s"},
               {"method=scg ksp.s=9", "ksp.s"},
               {"method=scg ksp.basis=legendre", "ksp.basis"},
               {"method=scg mpk.block=-2", "mpk.block"},
               {"method=scg ksp.s=3 mpk.k=4", "mpk.k"},
               {"method=scg mpk.schedule=diagonal", "mpk.schedule"},
               {"method=scg mpk.schedule=", "mpk.schedule"},
               {"method=scg mpk.schedule=wavefront mpk.block=-3", "mpk.block"},
               {"method=cg ksp.s=3", "ksp.s"},
               {NULL, NULL}};
    for (int i = 0; bad[i].opts; i++) {
        double *x = NULL;
        hk_result r;
        int code = solve(be, &K, bad[i].opts, &x, &r);
        CU_ASSERT_EQUAL(code, HK_ERR_OPTION);
        if (code == HK_ERR_OPTION) CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), bad[i].names));
        hk_error_clear();
        free(x);
    }
    /* scg is no inner method of defect (fp32) */
    double *x = NULL;
    hk_result r;
    CU_ASSERT_EQUAL(solve(be, &K, "method=defect inner.method=scg", &x, &r), HK_ERR_UNSUPPORTED);
    hk_error_clear();
    free(x);
    hk_bcsr_free(&K);
}

/* `hooke solve` exits non-zero when scg ends above the tolerance, 0 when it meets it. */
static void test_solve_exit_code(void)
{
    char args[256], out[8192];
    const char *method[2] = {"method=scg ksp.s=3 maxit=5", "method=scg ksp.s=3"};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "--generate elasticity3d:4 %s --backend cpu", method[i]);
        const int rc = hk_test_solve_cmd(args, out, sizeof out);
        if (i == 0) {
            CU_ASSERT_EQUAL(rc, 1);
            CU_ASSERT_PTR_NOT_NULL(strstr(out, "iteration limit"));
        } else {
            CU_ASSERT_EQUAL(rc, 0);
            CU_ASSERT_PTR_NOT_NULL(strstr(out, "scg (s=3"));
        }
        if ((i == 0) != (rc != 0)) fprintf(stderr, "\n%s\n", out);
    }
}

/* The solve line names the schedule, its chunks or partitions and the levels of a pass;
 * elasticity3d:4 has 125 block rows and bandwidth 31, so chunks of 5 become 62. */
static void test_solve_line_schedule(void)
{
    static const struct {
        const char *opts, *want;
    } cases[] = {
        {"mpk.schedule=wavefront mpk.block=5 mpk.k=2",
         "matrix powers: wavefront, 3 chunks of 62 block rows (bandwidth 31), 2 levels a pass"},
        {"mpk.schedule=ghost mpk.block=64",
         "matrix powers: ghost zones, 2 partitions of 64 block rows, 3 levels a pass"},
        {"mpk.block=-1", "one SpMV per basis vector: mpk.block=-1"},
        /* the CPU stages nothing on chip: no shared plan, of a given size or the default 256 */
        {"mpk.schedule=shared mpk.block=64",
         "one SpMV per basis vector: backend cpu stages no partitions on chip"},
        {"mpk.schedule=shared",
         "one SpMV per basis vector: backend cpu stages no partitions on chip"},
        {NULL, NULL}};
    for (int i = 0; cases[i].opts; i++) {
        char args[256], out[8192];
        snprintf(args, sizeof args, "--generate elasticity3d:4 method=scg ksp.s=3 %s --backend cpu",
                 cases[i].opts);
        const int rc = hk_test_solve_cmd(args, out, sizeof out);
        CU_ASSERT_EQUAL(rc, 0);
        const int found = strstr(out, cases[i].want) != NULL;
        if (!found) fprintf(stderr, "\n  wanted '%s' in:\n%s\n", cases[i].want, out);
        CU_ASSERT(found);
    }
}

HK_SUITE(sstep, {"matrix powers equal k SpMVs (bases, partitions, levels)", test_mpk_equals_spmvs},
         {"matrix powers, wavefront: equal k SpMVs (bases, chunks, levels, bs 1-6)",
          test_mpk_wavefront_equals_spmvs},
         {"wavefront stages: every row once, every input earlier", test_wave_stages},
         {"wavefront plan: chunks, bandwidth, work; digits for any thread count",
          test_mpk_wavefront_plan},
         {"matrix-powers ghost zones of a tridiagonal matrix (closed form)", test_mpk_ghost_zones},
         {"Gram reduction equals dot products", test_gram},
         {"scg equals cg's solution (s 1..4, bases, pc none/jacobi)", test_scg_matches_cg},
         {"scg iterations within 1.2x cg on 3D elasticity", test_scg_iterations},
         {"scg within 1.2x cg on a slow system with a pc and a shifted basis",
          test_scg_slow_system},
         {"scg with other pcs, residual replacement, maxit", test_scg_pcs_and_replacement},
         {"scg options and their errors", test_scg_options},
         {"hooke solve exit code with scg", test_solve_exit_code},
         {"the solve line names the matrix-powers schedule", test_solve_line_schedule})

/* ---- the CUDA versions against the CPU ---------------------------------------------------- */

static void test_cuda_mpk(void)
{
    const hk_backend *cpu = NULL, *gpu = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    HK_ASSERT_OK(hk_backend_get("cuda", &gpu));
    /* the sweep on the device itself (op against SpMVs), then op against op; a wavefront
     * chunk of 0 is each backend's own choice, so only its bandwidth and work must agree */
    for (int sched = 0; sched < 2; sched++) {
        const int64_t *bls = sched == HK_MPK_WAVEFRONT ? chunks : blocks;
        mpk_sweep(gpu, sched);
        mpk_prior_passes = 3; /* the plan used for other pass lengths first */
        mpk_sweep(gpu, sched);
        mpk_prior_passes = 0;
        for (int mi = 0; mi < NMPK; mi++) {
            hk_bcsr K;
            mpk_matrix(mi, &K);
            const int64_t n = K.nbrows * K.bs;
            for (int bi = 0; bi < 5; bi++)
                for (int k = 1; k <= HK_SCG_MAX_S; k += 3)
                    for (int b = 0; b < 4; b++) {
                        double coef[3 * HK_MPK_MAXK];
                        hk_test_mpk_coefs(b, k, coef);
                        double *Wc[HK_MPK_MAXK + 1], *Uc[HK_MPK_MAXK + 1];
                        double *Wg[HK_MPK_MAXK + 1], *Ug[HK_MPK_MAXK + 1];
                        hk_mpk_info ic, ig;
                        mpk_case(cpu, &K, sched, bls[bi], k, k, coef, b & 1, 1, Wc, Uc, &ic);
                        mpk_case(gpu, &K, sched, bls[bi], k, k, coef, b & 1, 1, Wg, Ug, &ig);
                        CU_ASSERT(ic.schedule == ig.schedule && ic.bandwidth == ig.bandwidth &&
                                  ic.work == ig.work);
                        /* the cuda wavefront rounds its chunk to whole tiles of a thread block */
                        if (bls[bi] > 0 && sched == HK_MPK_GHOST)
                            CU_ASSERT(ic.block == ig.block && ic.nparts == ig.nparts &&
                                      ic.ext_rows == ig.ext_rows && ic.max_ext == ig.max_ext);
                        CU_ASSERT(ic.ext_rows == ig.ext_rows);
                        double e = 0;
                        for (int j = 0; j <= k; j++) {
                            e = fmax(e, hk_test_reldiff(Wg[j], Wc[j], (long)n));
                            if (Uc[j]) e = fmax(e, hk_test_reldiff(Ug[j], Uc[j], (long)n));
                            free(Wc[j]);
                            free(Wg[j]);
                            free(Uc[j]);
                            free(Ug[j]);
                        }
                        if (!(e <= 1e-13))
                            fprintf(stderr, "\n  %s %s block %lld k %d basis %d: cuda vs cpu %.2e",
                                    mpk_name[mi], sched_name[sched], (long long)bls[bi], k, b, e);
                        CU_ASSERT(e <= 1e-13);
                    }
            hk_bcsr_free(&K);
        }
    }
    /* a larger matrix: several thread blocks per level, vectors beyond shared memory; the
     * wavefront with the backend's chunk, half and twice it, and the whole matrix */
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(20, 20, 20, &K));
    const int64_t bl[3] = {512, 4096, 1 << 30};
    for (int i = 0; i < 3; i++) {
        double coef[3 * HK_MPK_MAXK];
        hk_test_mpk_coefs(2, 4, coef);
        hk_mpk_info info;
        double e = mpk_case(gpu, &K, HK_MPK_GHOST, bl[i], 4, 4, coef, 1, 0, NULL, NULL, &info);
        CU_ASSERT(e <= 1e-13);
    }
    hk_mpk_info auto_info;
    {
        double coef[3 * HK_MPK_MAXK];
        hk_test_mpk_coefs(2, 4, coef);
        double e = mpk_case(gpu, &K, HK_MPK_WAVEFRONT, 0, 4, 4, coef, 1, 1, NULL, NULL, &auto_info);
        CU_ASSERT(e <= 1e-13);
        const int64_t wl[3] = {auto_info.block / 2, auto_info.block * 2, 1 << 30};
        mpk_prior_passes = 5; /* the plan reused with other pass lengths first */
        for (int i = 0; i < 3; i++) {
            hk_mpk_info info;
            e = mpk_case(gpu, &K, HK_MPK_WAVEFRONT, wl[i], 4, 3, coef, i & 1, 1, NULL, NULL, &info);
            if (!(e <= 1e-13))
                fprintf(stderr, "\n  elasticity3d 20^3 wavefront chunk %lld: %.2e",
                        (long long)wl[i], e);
            CU_ASSERT(e <= 1e-13);
        }
        mpk_prior_passes = 0;
    }
    hk_bcsr_free(&K);
}

/* The shared schedule (partitions staged in shared memory): where a plan fits, every pass
 * length of every plan equals k SpMVs on the device and the cpu's ghost zones of the same
 * partitions (the same lists: block, partitions, rows, work); the plan reused with other pass
 * lengths first; where it does not fit (large ghost zones), no plan, no error, and the bytes
 * it would need. */
static int shared_fits(const hk_backend *be, const hk_bcsr *K, int64_t block, int k,
                       hk_mpk_info *info)
{
    hk_bmat B = {0};
    void *plan = NULL;
    HK_ASSERT_OK(hk_bmat_upload(be, K, &B));
    HK_ASSERT_OK(be->mpk_plan(&B, HK_MPK_SHARED, block, k, 0.0, &plan, info));
    CU_ASSERT_EQUAL(info->schedule, HK_MPK_SHARED);
    CU_ASSERT(info->stage_bytes > 0);
    const int fits = plan != NULL;
    if (plan) be->mpk_free(plan);
    hk_bmat_free(&B);
    return fits;
}

static void test_cuda_mpk_shared(void)
{
    const hk_backend *cpu = NULL, *gpu = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    HK_ASSERT_OK(hk_backend_get("cuda", &gpu));
    int made = 0, refused = 0;
    for (int prior = 0; prior < 2; prior++)
        for (int mi = 0; mi < NMPK; mi++) {
            hk_bcsr K;
            mpk_matrix(mi, &K);
            const int64_t n = K.nbrows * K.bs;
            for (int bi = 0; bi < 5; bi++)
                for (int k = 1; k <= HK_SCG_MAX_S; k++)
                    for (int b = 0; b < 4; b++) {
                        const int kk = 1 + (k + b) % k;
                        hk_mpk_info is, ic, ig;
                        if (!shared_fits(gpu, &K, blocks[bi], k, &is)) {
                            refused++;
                            continue;
                        }
                        made++;
                        double coef[3 * HK_MPK_MAXK];
                        hk_test_mpk_coefs(b, kk, coef);
                        const int with_d = (bi + b) & 1, with_prev = (k + b) & 1;
                        double *Wc[HK_MPK_MAXK + 1], *Uc[HK_MPK_MAXK + 1];
                        double *Wg[HK_MPK_MAXK + 1], *Ug[HK_MPK_MAXK + 1];
                        mpk_prior_passes = prior ? 3 : 0;
                        const double e = mpk_case(gpu, &K, HK_MPK_SHARED, blocks[bi], k, kk, coef,
                                                  with_d, with_prev, Wg, Ug, &is);
                        mpk_case(cpu, &K, HK_MPK_GHOST, blocks[bi], k, kk, coef, with_d, with_prev,
                                 Wc, Uc, &ic);
                        mpk_case(gpu, &K, HK_MPK_GHOST, blocks[bi], k, kk, coef, with_d, with_prev,
                                 NULL, NULL, &ig);
                        mpk_prior_passes = 0;
                        CU_ASSERT(is.block == ic.block && is.nparts == ic.nparts &&
                                  is.ext_rows == ic.ext_rows && is.max_ext == ic.max_ext &&
                                  is.work == ic.work && is.on_chip == 1);
                        double d = 0;
                        for (int j = 0; j <= kk; j++) {
                            d = fmax(d, hk_test_reldiff(Wg[j], Wc[j], (long)n));
                            if (Uc[j]) d = fmax(d, hk_test_reldiff(Ug[j], Uc[j], (long)n));
                            free(Wc[j]), free(Wg[j]), free(Uc[j]), free(Ug[j]);
                        }
                        if (!(e <= 1e-13 && d <= 1e-13))
                            fprintf(stderr,
                                    "\n  %s shared block %lld k %d kk %d basis %d: vs SpMVs %.2e, "
                                    "vs cpu ghost %.2e",
                                    mpk_name[mi], (long long)blocks[bi], k, kk, b, e, d);
                        CU_ASSERT(e <= 1e-13);
                        CU_ASSERT(d <= 1e-13);
                    }
            hk_bcsr_free(&K);
        }
    printf("\n    small matrices: %d shared plans checked, %d refused", made, refused);
    CU_ASSERT(made > 0);
    /* larger matrices: 2D (bs 2) and 3D (bs 3) with ghost zones that do and do not fit */
    hk_bcsr K2, K3;
    HK_ASSERT_OK(hk_gen_elasticity2d(60, 60, &K2));
    HK_ASSERT_OK(hk_gen_elasticity3d(12, 12, 12, &K3));
    const hk_bcsr *Ks[2] = {&K2, &K3};
    const int64_t bl[3] = {16, 64, 512};
    const int ks[3] = {2, 4, 8};
    int fit = 0, nofit = 0;
    for (int m = 0; m < 2; m++)
        for (int bi = 0; bi < 3; bi++)
            for (int ki = 0; ki < 3; ki++) {
                hk_mpk_info info;
                if (!shared_fits(gpu, Ks[m], bl[bi], ks[ki], &info)) {
                    printf("\n    %s block %lld k %d: no plan (%.0f KiB a partition)",
                           m ? "elasticity3d 12^3" : "elasticity2d 60^2", (long long)bl[bi], ks[ki],
                           (double)info.stage_bytes / 1024.0);
                    CU_ASSERT(info.stage_bytes > 48 * 1024);
                    nofit++;
                    continue;
                }
                fit++;
                double coef[3 * HK_MPK_MAXK];
                hk_test_mpk_coefs(2, ks[ki], coef);
                mpk_prior_passes = 2;
                const double e = mpk_case(gpu, Ks[m], HK_MPK_SHARED, bl[bi], ks[ki], ks[ki], coef,
                                          (bi + ki) & 1, ki & 1, NULL, NULL, &info);
                mpk_prior_passes = 0;
                if (!(e <= 1e-13))
                    fprintf(stderr, "\n  %s shared block %lld k %d: %.2e",
                            m ? "elasticity3d" : "elasticity2d", (long long)bl[bi], ks[ki], e);
                CU_ASSERT(e <= 1e-13);
            }
    printf("\n    larger matrices: %d plans fit, %d do not", fit, nofit);
    CU_ASSERT(fit > 0 && nofit > 0);
    hk_bcsr_free(&K2);
    hk_bcsr_free(&K3);
}

static void test_cuda_gram(void)
{
    const hk_backend *cpu = NULL, *gpu = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    HK_ASSERT_OK(hk_backend_get("cuda", &gpu));
    const int64_t ns[4] = {1, 300, 5001, 1000003};
    const int ms[4] = {1, 3, 17, HK_GRAM_MAX};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 3; c++) {
                double Gc[HK_GRAM_MAX * HK_GRAM_MAX], Gg[HK_GRAM_MAX * HK_GRAM_MAX];
                double Xc[HK_GRAM_MAX * HK_GRAM_MAX], Xg[HK_GRAM_MAX * HK_GRAM_MAX];
                gram_case(cpu, ns[a], ms[b], c > 0, c == 2, Gc, Xc);
                gram_case(gpu, ns[a], ms[b], c > 0, c == 2, Gg, Xg);
                CU_ASSERT(hk_test_reldiff(Gg, Gc, ms[b] * ms[b]) <= 1e-13);
                if (c == 2) CU_ASSERT(hk_test_reldiff(Xg, Xc, ms[b] * ms[b]) <= 1e-13);
            }
}

static void test_cuda_scg(void)
{
    const hk_backend *cpu = NULL, *gpu = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    HK_ASSERT_OK(hk_backend_get("cuda", &gpu));
    scg_vs_cg(gpu);
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(10, 10, 10, &K));
    const int64_t n = K.nbrows * K.bs;
    for (int b = 0; b < 3; b++)
        for (int h = 0; h < NBUILD; h++) {
            char opts[256];
            snprintf(opts, sizeof opts, "method=scg ksp.s=4 ksp.basis=%s %s pc=jacobi tol=1e-10",
                     bases[b], builds[h]);
            double *xc = NULL, *xg = NULL;
            hk_result rc, rg;
            HK_ASSERT_OK(solve(cpu, &K, opts, &xc, &rc));
            HK_ASSERT_OK(solve(gpu, &K, opts, &xg, &rg));
            CU_ASSERT_EQUAL(rg.reason, HK_CONVERGED_RTOL);
            CU_ASSERT(rg.true_residual <= 1e-10);
            CU_ASSERT(abs(rg.iterations - rc.iterations) <= 4);
            CU_ASSERT(maxdiff(xg, xc, n) <= 1e-6);
            free(xc);
            free(xg);
        }
    hk_bcsr_free(&K);
}

HK_DEVICE_SUITE(cuda_sstep, {"matrix powers: cuda equals k SpMVs and the cpu", test_cuda_mpk},
                {"matrix powers staged on chip: k SpMVs and the cpu's ghost zones, or no plan",
                 test_cuda_mpk_shared},
                {"Gram reduction: cuda equals the cpu", test_cuda_gram},
                {"scg on cuda: cg's solution, the cpu's iterations", test_cuda_scg})
