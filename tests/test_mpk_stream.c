/* The streamed matrix-powers plan (mpk_stream_plan, solver/mpk_stream.c): every partition's
 * packed local matrix against K itself, its ghost zones against the ghost plan's and the
 * closed form of a tridiagonal matrix, the partition size chosen for a device budget, and a
 * pass against k SpMVs and vector ops on the host (every basis, with and without d and wprev,
 * partitions of one row, several and the whole matrix, bs 1..6, a nonsymmetric band, a hub
 * row whose partition is larger than the others, k 1..HK_MPK_MAXK, kk < k, a plan reused with
 * other pass lengths); bad arguments refused with a message. cuda_mpk_stream: the same passes
 * on the device against the host reference and the CPU plan (more partitions than its two
 * buffers, a budget that cuts a larger matrix). */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#include "ksp/ksp_impl.h"
#include "mpk_stream.h"

/* ---- matrices ------------------------------------------------------------------------------ */

enum { NMAT = 8 };
static const char *mat_name[NMAT] = {"elasticity2d 6x5 (bs 2)",
                                     "elasticity3d 3x3x2 (bs 3)",
                                     "poisson 9 (bs 1)",
                                     "random bs 4 with empty rows",
                                     "band bs 5, 31 rows",
                                     "band bs 6, 53 rows",
                                     "tridiag 40",
                                     "band bs 1 with a hub row, 60 rows"};
static void matrix(int i, hk_bcsr *K)
{
    int err = 0;
    if (i == 0) err = hk_gen_elasticity2d(6, 5, K);
    if (i == 1) err = hk_gen_elasticity3d(3, 3, 2, K);
    if (i == 2) err = hk_gen_poisson2d(9, K);
    if (i == 3) err = hk_gen_random(45, 45, 4, 3.0, 1, 7u, K);
    if (i == 4) hk_test_band(31, 5, -1, 17u, K);
    if (i == 5) hk_test_band(53, 6, -1, 17u, K);
    if (i == 6) hk_test_tridiag(40, K);
    if (i == 7) hk_test_band(60, 1, 31, 17u, K);
    CU_ASSERT_EQUAL_FATAL(err, 0);
}

/* ---- one pass against the host reference ------------------------------------------------- */

typedef struct pass_case {
    int64_t block;
    size_t budget;
    int k, kk, basis, with_d, with_prev;
    int prior; /* passes of other lengths with the plan first */
} pass_case;

/* A streamed pass on be; returns the largest relative difference of W[0..kk] (and U[0..kk]
 * with d) from the recurrence by hk_bcsr_spmv on the host. The results go to Wout/Uout (kk+1
 * host arrays, caller-freed) when not NULL; the plan's info to *info. */
static double pass(const hk_backend *be, const hk_bcsr *K, const pass_case *c, double **Wout,
                   double **Uout, hk_mpk_info *info)
{
    const int64_t n = K->nbrows * K->bs;
    const int k = c->k, kk = c->kk;
    void *plan = NULL;
    HK_ASSERT_OK(be->mpk_stream_plan(K, c->block, c->budget, k, 0.0, &plan, info));
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    CU_ASSERT_EQUAL(info->schedule, HK_MPK_STREAM);
    double *w0 = malloc((size_t)n * sizeof *w0), *dh = malloc((size_t)n * sizeof *dh);
    double *ph = malloc((size_t)n * sizeof *ph), *y = malloc((size_t)n * sizeof *y);
    double *rw[HK_MPK_MAXK + 1] = {0}, *ru[HK_MPK_MAXK + 1] = {0};
    hk_test_fill(w0, n, 1);
    hk_test_fill(dh, n, 2);
    hk_test_fill(ph, n, 3);
    hk_vec *W[HK_MPK_MAXK + 1], *U[HK_MPK_MAXK + 1], *d = NULL, *wp = NULL;
    for (int j = 0; j <= k; j++) {
        HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &W[j]));
        HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &U[j]));
        HK_ASSERT_OK(be->vec_set(W[j], NAN)); /* a row left unwritten shows */
        HK_ASSERT_OK(be->vec_set(U[j], NAN));
    }
    HK_ASSERT_OK(hk_vec_upload(W[0], w0));
    if (c->with_d) {
        HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &d));
        HK_ASSERT_OK(hk_vec_upload(d, dh));
    }
    if (c->with_prev) {
        HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &wp));
        HK_ASSERT_OK(hk_vec_upload(wp, ph));
    }
    double other[3 * HK_MPK_MAXK];
    for (int j = 0; j < 3 * HK_MPK_MAXK; j++)
        other[j] = j % 3 == 0 ? 0.5 : 0.1;
    for (int p = 0; p < c->prior; p++) /* lengths k, 1, k-1, 2, ... */
        HK_ASSERT_OK(be->mpk_apply(plan, p & 1 ? 1 + p / 2 : (k - p / 2 > 0 ? k - p / 2 : 1), other,
                                   d, wp, W, d ? U : NULL));
    double coef[3 * HK_MPK_MAXK];
    hk_test_mpk_coefs(c->basis, kk, coef);
    HK_ASSERT_OK(be->mpk_apply(plan, kk, coef, d, wp, W, d ? U : NULL));
    /* the reference */
    for (int j = 0; j <= kk; j++) {
        rw[j] = malloc((size_t)n * sizeof **rw);
        ru[j] = malloc((size_t)n * sizeof **ru);
    }
    memcpy(rw[0], w0, (size_t)n * sizeof *w0);
    for (int64_t i = 0; i < n; i++)
        ru[0][i] = dh[i] * w0[i];
    for (int j = 0; j < kk; j++) {
        const double *prev = j ? rw[j - 1] : c->with_prev ? ph : NULL;
        hk_bcsr_spmv(K, c->with_d ? ru[j] : rw[j], y);
        for (int64_t i = 0; i < n; i++) {
            rw[j + 1][i] = coef[3 * j] * y[i] + coef[3 * j + 1] * rw[j][i] +
                           (prev ? coef[3 * j + 2] * prev[i] : 0);
            ru[j + 1][i] = dh[i] * rw[j + 1][i];
        }
    }
    double worst = 0;
    for (int j = 0; j <= kk; j++) {
        double *a = malloc((size_t)n * sizeof *a);
        HK_ASSERT_OK(hk_vec_download(W[j], a));
        double e = hk_test_reldiff(a, rw[j], (long)n);
        if (!(e <= worst)) worst = e;
        if (Wout)
            Wout[j] = a;
        else
            free(a);
        if (c->with_d) {
            a = malloc((size_t)n * sizeof *a);
            HK_ASSERT_OK(hk_vec_download(U[j], a));
            e = hk_test_reldiff(a, ru[j], (long)n);
            if (!(e <= worst)) worst = e;
            if (Uout)
                Uout[j] = a;
            else
                free(a);
        } else if (Uout) {
            Uout[j] = NULL;
        }
        free(rw[j]);
        free(ru[j]);
    }
    for (int j = 0; j <= k; j++) {
        hk_vec_destroy(W[j]);
        hk_vec_destroy(U[j]);
    }
    hk_vec_destroy(d);
    hk_vec_destroy(wp);
    be->mpk_free(plan);
    free(w0);
    free(dh);
    free(ph);
    free(y);
    return worst;
}

static const int64_t blocks[] = {1, 2, 7, 1 << 30}; /* one row, several, the whole matrix */
static const int levels[] = {1, 2, 3, 8, HK_MPK_MAXK};
#define NBLOCKS ((int)(sizeof blocks / sizeof *blocks))
#define NLEVELS ((int)(sizeof levels / sizeof *levels))

/* Every matrix, partition size, k and basis (kk from 1 to k over the bases; d and wprev on
 * alternate cases) on be against the host reference; prior passes with the plan first. */
static void sweep(const hk_backend *be, int prior)
{
    int cases = 0;
    for (int mi = 0; mi < NMAT; mi++) {
        hk_bcsr K;
        matrix(mi, &K);
        for (int bi = 0; bi < NBLOCKS; bi++)
            for (int ki = 0; ki < NLEVELS; ki++)
                for (int b = 0; b < 4; b++) {
                    const int k = levels[ki];
                    pass_case c = {blocks[bi],   0,    k, 1 + (k + b) % k, b, (bi + b) & 1,
                                   (ki + b) & 1, prior};
                    hk_mpk_info info;
                    const double e = pass(be, &K, &c, NULL, NULL, &info);
                    /* rounding (a device sums a row in another order) grows over 16 levels */
                    const double tol = k > 8 ? 1e-12 : 1e-13;
                    if (!(e <= tol))
                        fprintf(stderr,
                                "\n  %s on %s: block %lld, k %d, %d levels, basis %d, d %d, prev "
                                "%d: relative difference %.2e",
                                mat_name[mi], hk_backend_name(be), (long long)c.block, k, c.kk, b,
                                c.with_d, c.with_prev, e);
                    CU_ASSERT(e <= tol);
                    cases++;
                }
        hk_bcsr_free(&K);
    }
    CU_ASSERT_EQUAL(cases, NMAT * NBLOCKS * NLEVELS * 4);
}

static const hk_backend *cpu(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    return be;
}

static void test_pass_equals_spmvs(void)
{
    sweep(cpu(), 0);
    sweep(cpu(), 3);
}

/* ---- the extraction ---------------------------------------------------------------------- */

static int host_alloc(void **p, size_t bytes)
{
    return hk_malloc(bytes, p);
}

/* Every partition's pack against K: the owned rows first and in order, every listed row once,
 * each level ascending, a row's columns at most one level further out, the local matrix's
 * rows equal to K's rows with columns mapped back through the list, and the level starts and
 * work equal to the ghost plan's for the same size. */
static void test_extraction(void)
{
    const hk_backend *be = cpu();
    for (int mi = 0; mi < NMAT; mi++) {
        hk_bcsr K;
        matrix(mi, &K);
        const int b2 = K.bs * K.bs;
        for (int bi = 0; bi < NBLOCKS; bi++)
            for (int k = 1; k <= 4; k++) {
                hk_mpk_stream S;
                HK_ASSERT_OK(hk_mpk_stream_build(&K, blocks[bi], 0, k, 0.0, host_alloc, free, &S));
                int bad = 0;
                int32_t *level = malloc((size_t)K.nbrows * sizeof *level);
                for (int64_t p = 0; p < S.nparts; p++) {
                    hk_mpk_part v;
                    hk_mpk_stream_part(&S, p, S.pack + S.off[p], &v);
                    for (int64_t r = 0; r < K.nbrows; r++)
                        level[r] = -1;
                    for (int l = 0; l <= k; l++)
                        for (int64_t e = v.lvl[l]; e < v.lvl[l + 1]; e++) {
                            if (level[v.rows[e]] != -1) bad |= 1; /* listed twice */
                            level[v.rows[e]] = l;
                            if (e > v.lvl[l] && v.rows[e] <= v.rows[e - 1]) bad |= 2;
                        }
                    const int64_t lo = p * S.block;
                    const int64_t own = K.nbrows - lo < S.block ? K.nbrows - lo : S.block;
                    if (v.nown != own) bad |= 4;
                    for (int64_t e = 0; e < v.nown; e++)
                        if (v.rows[e] != lo + e) bad |= 4;
                    for (int64_t e = 0; e < v.ninner; e++) {
                        const int32_t g = v.rows[e];
                        const int64_t len = K.rowptr[g + 1] - K.rowptr[g];
                        if (v.rowptr[e + 1] - v.rowptr[e] != len) {
                            bad |= 8;
                            continue;
                        }
                        for (int64_t t = 0; t < len; t++) {
                            const int32_t lc = v.colind[v.rowptr[e] + t];
                            const int64_t kt = K.rowptr[g] + t;
                            if (lc < 0 || lc >= v.nrows || v.rows[lc] != K.colind[kt])
                                bad |= 16;
                            else if (level[v.rows[lc]] > level[g] + 1)
                                bad |= 32;
                            if (memcmp(v.val + (size_t)(v.rowptr[e] + t) * b2,
                                       K.val + (size_t)kt * b2, (size_t)b2 * sizeof(double)))
                                bad |= 64;
                        }
                    }
                }
                free(level);
                /* the ghost plan's cut */
                hk_bmat B = {0};
                void *gp = NULL;
                hk_mpk_info gi, si;
                HK_ASSERT_OK(hk_bmat_upload(be, &K, &B));
                HK_ASSERT_OK(be->mpk_plan(&B, HK_MPK_GHOST, blocks[bi], k, 0.0, &gp, &gi));
                hk_mpk_stream_info(&S, &si);
                CU_ASSERT(gi.nparts == si.nparts && gi.block == si.block &&
                          gi.ext_rows == si.ext_rows && gi.max_ext == si.max_ext &&
                          gi.work == si.work);
                CU_ASSERT(si.host_bytes == S.off[S.nparts] && si.dev_bytes > 2 * S.max_bytes);
                be->mpk_free(gp);
                hk_bmat_free(&B);
                if (bad)
                    fprintf(stderr, "\n  %s block %lld k %d: pack check failed (%#x)", mat_name[mi],
                            (long long)blocks[bi], k, bad);
                CU_ASSERT_EQUAL(bad, 0);
                hk_mpk_stream_free(&S);
            }
        hk_bcsr_free(&K);
    }
}

/* tridiag(n): partition p of b rows owns [lo, hi); level l holds lo - l and hi - 1 + l where
 * they exist, so a partition lists min(hi + k, n) - max(lo - k, 0) rows. */
static void test_tridiag_closed_form(void)
{
    hk_bcsr K;
    hk_test_tridiag(40, &K);
    static const int64_t bs[] = {1, 3, 7, 40};
    for (int i = 0; i < 4; i++)
        for (int k = 1; k <= 6; k++) {
            hk_mpk_stream S;
            HK_ASSERT_OK(hk_mpk_stream_build(&K, bs[i], 0, k, 0.0, host_alloc, free, &S));
            CU_ASSERT_EQUAL(S.nparts, (40 + bs[i] - 1) / bs[i]);
            int64_t ext = 0;
            for (int64_t p = 0; p < S.nparts; p++) {
                const int64_t lo = p * bs[i], hi = lo + bs[i] < 40 ? lo + bs[i] : 40;
                const int64_t a = lo - k > 0 ? lo - k : 0, b = hi + k < 40 ? hi + k : 40;
                const int64_t *lv = S.lvl + (size_t)p * (k + 2);
                CU_ASSERT_EQUAL(lv[k + 1], b - a);
                for (int l = 1; l <= k; l++)
                    CU_ASSERT_EQUAL(lv[l + 1] - lv[l], (lo - l >= 0) + (hi - 1 + l < 40));
                /* the local matrix: the rows of level < k, three blocks but at the ends */
                int64_t nz = 0;
                for (int64_t e = 0; e < lv[k]; e++) {
                    hk_mpk_part v;
                    hk_mpk_stream_part(&S, p, S.pack + S.off[p], &v);
                    nz += 3 - (v.rows[e] == 0) - (v.rows[e] == 39);
                }
                CU_ASSERT_EQUAL(S.nnzb[p], nz);
                ext += b - a;
            }
            CU_ASSERT_EQUAL(S.ext_rows, ext);
            hk_mpk_stream_free(&S);
        }
    hk_bcsr_free(&K);
}

/* The device bytes of partitions of b block rows of K with k levels. */
static size_t device_bytes(const hk_bcsr *K, int64_t b, int k)
{
    hk_mpk_stream S;
    HK_ASSERT_OK(hk_mpk_stream_build(K, b, 0, k, 0.0, host_alloc, free, &S));
    const size_t bytes = hk_mpk_stream_device_bytes(&S);
    hk_mpk_stream_free(&S);
    return bytes;
}

/* block = 0: partitions whose device bytes fit the budget (budgets that partitions of a half,
 * an eighth and a 32nd of the rows fit), shrunk from the whole matrix; the pass still equals
 * the SpMVs. A budget below one row's ghost zone is refused (bad_arguments). */
static void budget_cases(const hk_backend *be, const hk_bcsr *K, int k, int prior)
{
    const int64_t nb = K->nbrows;
    CU_ASSERT(device_bytes(K, nb, k) > device_bytes(K, nb / 2, k));
    for (int i = 0; i < 3; i++) {
        const size_t budget = device_bytes(K, nb / ((int64_t)2 << (2 * i)), k);
        for (int dd = 0; dd < 2; dd++) {
            pass_case c = {0, budget, k, k - dd, 2, dd, 1, prior};
            hk_mpk_info info;
            const double e = pass(be, K, &c, NULL, NULL, &info);
            if (!(e <= 1e-13))
                fprintf(stderr, "\n  %s: budget %zu (%lld partitions): %.2e", hk_backend_name(be),
                        budget, (long long)info.nparts, e);
            CU_ASSERT(e <= 1e-13);
            CU_ASSERT(info.dev_bytes <= budget);
            CU_ASSERT(info.nparts >= ((int64_t)2 << (2 * i)) / 2);
        }
    }
}

static void test_budget(void)
{
    const hk_backend *be = cpu();
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity2d(60, 60, &K));
    budget_cases(be, &K, 3, 1);
    /* the default budget (256 MiB) takes this matrix whole */
    pass_case c = {0, 0, 2, 2, 0, 0, 0, 0};
    hk_mpk_info info;
    CU_ASSERT(pass(be, &K, &c, NULL, NULL, &info) <= 1e-13);
    CU_ASSERT_EQUAL(info.nparts, 1);
    hk_bcsr_free(&K);
}

/* max_work: partitions whose ghost zones would exceed it are refused without an error (no
 * plan, the cut's work and size in info); a budget-chosen cut stops shrinking there. */
static void max_work_cases(const hk_backend *be)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 6, 6, &K));
    const double whole = (double)K.nbrows * 3;
    void *plan = (void *)1;
    hk_mpk_info info;
    HK_ASSERT_OK(be->mpk_stream_plan(&K, 1, 0, 3, 2.0, &plan, &info));
    CU_ASSERT_PTR_NULL(plan);
    CU_ASSERT(info.schedule == HK_MPK_STREAM && info.block == 1 && info.work > 2.0 * whole);
    HK_ASSERT_OK(be->mpk_stream_plan(&K, 1, 0, 3, 0.0, &plan, &info)); /* no limit */
    CU_ASSERT_PTR_NOT_NULL(plan);
    be->mpk_free(plan);
    /* the whole matrix has no redundant rows */
    HK_ASSERT_OK(be->mpk_stream_plan(&K, 0, 0, 3, 1.0, &plan, &info));
    CU_ASSERT_PTR_NOT_NULL(plan);
    CU_ASSERT(info.nparts == 1 && info.work == (int64_t)whole);
    const size_t whole_bytes = info.dev_bytes;
    be->mpk_free(plan);
    /* a budget that only tiny partitions fit: refused by the work on the way down */
    HK_ASSERT_OK(be->mpk_stream_plan(&K, 0, whole_bytes / 50, 3, 1.5, &plan, &info));
    CU_ASSERT_PTR_NULL(plan);
    CU_ASSERT(info.work > 1.5 * whole && info.block < K.nbrows);
    hk_bcsr_free(&K);
}

static void test_max_work(void)
{
    max_work_cases(cpu());
}

/* A refused argument: code and a phrase of the message. */
static void refused(int rc, int code, const char *phrase)
{
    CU_ASSERT_EQUAL(rc, code);
    const int found = strstr(hk_error_message(), phrase) != NULL;
    if (!found) fprintf(stderr, "\n  wanted '%s' in: %s", phrase, hk_error_message());
    CU_ASSERT(found);
    hk_error_clear();
}

static void bad_arguments(const hk_backend *be)
{
    hk_bcsr K, R;
    hk_test_tridiag(10, &K);
    HK_ASSERT_OK(hk_gen_random(6, 8, 2, 2.0, 0, 3u, &R));
    void *plan = (void *)1;
    hk_mpk_info info;
    refused(be->mpk_stream_plan(NULL, 1, 0, 2, 0.0, &plan, &info), HK_ERR_ARG, "no matrix");
    CU_ASSERT_PTR_NULL(plan);
    refused(be->mpk_stream_plan(&R, 1, 0, 2, 0.0, &plan, &info), HK_ERR_ARG, "must be square");
    refused(be->mpk_stream_plan(&K, 1, 0, 0, 0.0, &plan, &info), HK_ERR_OPTION, "mpk.k");
    refused(be->mpk_stream_plan(&K, 1, 0, HK_MPK_MAXK + 1, 0.0, &plan, &info), HK_ERR_OPTION,
            "mpk.k");
    refused(be->mpk_stream_plan(&K, -1, 0, 2, 0.0, &plan, &info), HK_ERR_OPTION, "mpk.block");
    refused(be->mpk_stream_plan(&K, 0, 100, 2, 0.0, &plan, &info), HK_ERR_OPTION, "budget");
    K.bs = 7;
    refused(be->mpk_stream_plan(&K, 1, 0, 2, 0.0, &plan, &info), HK_ERR_ARG, "block size 7");
    K.bs = 1;
    K.colind[4] = 10;
    refused(be->mpk_stream_plan(&K, 1, 0, 2, 0.0, &plan, &info), HK_ERR_ARG, "column index 10");
    K.colind[4] = 1;
    /* apply: more levels than the plan, vectors of the wrong length */
    HK_ASSERT_OK(be->mpk_stream_plan(&K, 3, 0, 2, 0.0, &plan, &info));
    hk_vec *W[4], *s = NULL;
    for (int j = 0; j < 4; j++)
        HK_ASSERT_OK(hk_vec_create(be, 10, HK_FP64, &W[j]));
    HK_ASSERT_OK(hk_vec_create(be, 9, HK_FP64, &s));
    double coef[3 * HK_MPK_MAXK] = {1, 0, 0, 1, 0, 0, 1, 0, 0};
    refused(be->mpk_apply(plan, 3, coef, NULL, NULL, W, NULL), HK_ERR_ARG, "plan made for 2");
    refused(be->mpk_apply(plan, 2, coef, s, NULL, W, W), HK_ERR_ARG, "d must be");
    hk_vec *Ws[3] = {W[0], s, W[2]};
    refused(be->mpk_apply(plan, 2, coef, NULL, NULL, Ws, NULL), HK_ERR_ARG, "every W");
    HK_ASSERT_OK(be->mpk_apply(plan, 2, coef, NULL, NULL, W, NULL));
    /* the ghost op does not take the streamed schedule */
    hk_bmat B = {0};
    HK_ASSERT_OK(hk_bmat_upload(be, &K, &B));
    void *gp = NULL;
    refused(be->mpk_plan(&B, HK_MPK_STREAM, 1, 2, 0.0, &gp, &info), HK_ERR_ARG, "schedule");
    hk_bmat_free(&B);
    be->mpk_free(plan);
    for (int j = 0; j < 4; j++)
        hk_vec_destroy(W[j]);
    hk_vec_destroy(s);
    hk_bcsr_free(&K);
    hk_bcsr_free(&R);
}

static void test_bad_arguments(void)
{
    bad_arguments(cpu());
}

HK_SUITE(mpk_stream,
         {"streamed matrix powers equal k SpMVs (bases, partitions, bs, k)",
          test_pass_equals_spmvs},
         {"streamed partitions: packed rows equal K's, cut as the ghost plan's", test_extraction},
         {"streamed ghost zones of a tridiagonal matrix (closed form)", test_tridiag_closed_form},
         {"streamed partition size from the device budget", test_budget},
         {"streamed plan: redundant work over max_work refused without a plan", test_max_work},
         {"streamed plan: bad arguments refused with a message", test_bad_arguments})

/* ---- CUDA against the host reference and the CPU ------------------------------------------ */

static void test_cuda_pass(void)
{
    const hk_backend *gpu = NULL;
    HK_ASSERT_OK(hk_backend_get("cuda", &gpu));
    sweep(gpu, 0);
    sweep(gpu, 3); /* buffers and events reused across passes of other lengths */
    /* op against op: the same partitions, the same values to rounding */
    for (int mi = 0; mi < NMAT; mi++) {
        hk_bcsr K;
        matrix(mi, &K);
        const int64_t n = K.nbrows * K.bs;
        for (int bi = 0; bi < NBLOCKS; bi++)
            for (int ki = 0; ki < NLEVELS; ki += 2) {
                const int k = levels[ki];
                pass_case c = {blocks[bi], 0, k, k, 2, 1, 1, 0};
                double *Wc[HK_MPK_MAXK + 1], *Uc[HK_MPK_MAXK + 1];
                double *Wg[HK_MPK_MAXK + 1], *Ug[HK_MPK_MAXK + 1];
                hk_mpk_info ic, ig;
                pass(cpu(), &K, &c, Wc, Uc, &ic);
                pass(gpu, &K, &c, Wg, Ug, &ig);
                CU_ASSERT(ic.nparts == ig.nparts && ic.ext_rows == ig.ext_rows &&
                          ic.max_ext == ig.max_ext && ic.work == ig.work &&
                          ic.host_bytes == ig.host_bytes);
                double e = 0;
                for (int j = 0; j <= k; j++) {
                    e = fmax(e, hk_test_reldiff(Wg[j], Wc[j], (long)n));
                    e = fmax(e, hk_test_reldiff(Ug[j], Uc[j], (long)n));
                    free(Wc[j]);
                    free(Wg[j]);
                    free(Uc[j]);
                    free(Ug[j]);
                }
                const double tol = k > 8 ? 1e-12 : 1e-13;
                if (!(e <= tol))
                    fprintf(stderr, "\n  %s block %lld k %d: cuda vs cpu %.2e", mat_name[mi],
                            (long long)blocks[bi], k, e);
                CU_ASSERT(e <= tol);
            }
        hk_bcsr_free(&K);
    }
}

/* A larger matrix cut by budgets into a few and into many partitions (many more than the two
 * buffers), the plan reused with other pass lengths; the hub row's partition larger than the
 * others. */
static void test_cuda_budget(void)
{
    const hk_backend *gpu = NULL;
    HK_ASSERT_OK(hk_backend_get("cuda", &gpu));
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity2d(200, 200, &K));
    budget_cases(gpu, &K, 4, 5);
    hk_bcsr_free(&K);
    hk_bcsr hub;
    hk_test_band(3000, 3, 1500, 17u, &hub);
    for (int k = 1; k <= 3; k++) {
        pass_case c = {100, 0, k, k, 3, 1, 1, 2};
        hk_mpk_info info;
        const double e = pass(gpu, &hub, &c, NULL, NULL, &info);
        CU_ASSERT(e <= 1e-13);
        CU_ASSERT(info.max_ext > 1000); /* the hub's partition lists a third of the rows */
    }
    hk_bcsr_free(&hub);
}

static void test_cuda_bad_arguments(void)
{
    const hk_backend *gpu = NULL;
    HK_ASSERT_OK(hk_backend_get("cuda", &gpu));
    bad_arguments(gpu);
    max_work_cases(gpu);
}

HK_DEVICE_SUITE(cuda_mpk_stream,
                {"streamed matrix powers: cuda equals k SpMVs and the cpu", test_cuda_pass},
                {"streamed matrix powers on cuda: budgets, many partitions, a larger partition",
                 test_cuda_budget},
                {"streamed matrix powers on cuda: bad arguments and max_work refused",
                 test_cuda_bad_arguments})
