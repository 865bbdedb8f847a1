/* `hooke bench mpk`: the matrix-powers kernel against k SpMVs (the GPU Krylov thesis's eq.
 * 6.1: time of the kernel for [A x, ..., A^k x] over the time of k standard SpMVs) for
 * k = 2..8 on generated 2D and 3D elasticity, and method=scg against cg (iterations and time
 * to 1e-8) on the same systems. Both figures are measured in the same run as their baseline.
 * For each k two rows against the same k SpMVs: ghost zones, the best over partition sizes
 * (block rows) whose ghost zones add at most 3x the rows of the k SpMVs, with the chosen size
 * and that redundancy beside it; and the wavefront, the best of the backend's chunk, half and
 * twice it (no redundant rows). The SpMVs use the solver's default format on the backend (sbell on
 * cuda, bsr on the cpu). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "hk_impl.h"

typedef struct mpk_ctx {
    const hk_backend_ops *be;
    hk_mat *A;
    void *plan;
    int k;
    double coef[3 * HK_MPK_MAXK];
    hk_vec *W[HK_MPK_MAXK + 1];
} mpk_ctx;

static int spmvs_once(void *p)
{
    mpk_ctx *c = p;
    for (int j = 0; j < c->k; j++)
        HK_CALL(hk_mat_spmv(c->A, c->W[j], c->W[j + 1]));
    return c->be->sync();
}

static int mpk_once(void *p)
{
    mpk_ctx *c = p;
    HK_CALL(c->be->mpk_apply(c->plan, c->k, c->coef, NULL, NULL, c->W, NULL));
    return c->be->sync();
}

static void mpk_usage(FILE *f)
{
    fprintf(f, "usage: hooke bench mpk [--backend auto|cpu|cuda] [--size small|medium|large]\n"
               "                       [--no-solve] [--json FILE]\n\n"
               "Matrix powers [A x, ..., A^k x] in one kernel against k SpMVs for k = 2..8 on\n"
               "2D quad and 3D hex elasticity (small: 200^2 and 20^3 elements, medium 500^2\n"
               "and 40^3, large 1000^2 and 70^3): time of each, their ratio (below 1: the\n"
               "kernel wins), for ghost zones the best partition size and the redundant rows\n"
               "of its ghost zones, for the wavefront the best chunk of the backend's own,\n"
               "half and twice it. Then scg (s = 2, 4, 8) against cg with pc=jacobi to\n"
               "1e-8: iterations and time (--no-solve skips it).\n");
}

typedef struct mpk_row {
    const char *sys;
    int k, schedule;
    double spmv_ms, mpk_ms, redundancy;
    long long block;
    int on_chip;
} mpk_row;

typedef struct solve_row {
    const char *sys;
    char method[64];
    int iterations;
    double ms, true_res;
    const char *reason;
} solve_row;

static void print_row(const mpk_row *r)
{
    printf("| %s | %d | %s | %.4f | %.4f | %.2f | %lld | %.2f | %s |\n", r->sys, r->k,
           r->schedule == HK_MPK_WAVEFRONT ? "wavefront" : "ghost", r->spmv_ms, r->mpk_ms,
           r->mpk_ms / r->spmv_ms, r->block, r->redundancy, r->on_chip ? "shared" : "L2/global");
    fflush(stdout);
}

/* Time the plan of (schedule, block, k) into r when it beats r's best; *info of the plan. */
static int try_plan(mpk_ctx *c, const hk_bmat *K, int schedule, int64_t block, mpk_row *r,
                    hk_mpk_info *info)
{
    const hk_backend_ops *be = c->be;
    double t;
    HK_CALL(be->mpk_plan(K, schedule, block, c->k, 3.0, &c->plan, info));
    if (!c->plan) return 0;
    int ierr = hk_bench_time(mpk_once, c, 2, 5, 0.2, &t);
    be->mpk_free(c->plan);
    c->plan = NULL;
    HK_CALL(ierr);
    if (t * 1e3 < r->mpk_ms) {
        r->mpk_ms = t * 1e3;
        r->block = info->block;
        r->redundancy = (double)info->work / ((double)c->k * K->nbrows);
        r->on_chip = info->on_chip;
    }
    return 0;
}

static int measure(const hk_backend_ops *be, const hk_bcsr *Kh, const char *sys, mpk_row *rows,
                   int *nrows)
{
    int ierr = 0;
    hk_bmat K = {0};
    mpk_ctx c;
    memset(&c, 0, sizeof c);
    c.be = be;
    const int gpu = strcmp(be->name, "cpu") != 0;
    HK_TRY(hk_bmat_upload(be, Kh, &K));
    HK_TRY(hk_mat_create_bmat(&K, gpu ? HK_FMT_SBELL : HK_FMT_BSR, HK_FP64, NULL, &c.A));
    const int64_t n = Kh->nbrows * Kh->bs, nb = Kh->nbrows;
    for (int j = 0; j <= 8; j++)
        HK_TRY(hk_vec_create(be, n, HK_FP64, &c.W[j]));
    HK_TRY(be->vec_set(c.W[0], 1.0));
    for (int j = 0; j < 8; j++) { /* A^j x, unscaled as in the thesis's kernel */
        c.coef[3 * j] = 1.0;
        c.coef[3 * j + 1] = c.coef[3 * j + 2] = 0.0;
    }
    for (int k = 2; k <= 8; k++) {
        mpk_row *r = &rows[(*nrows)++], *w = &rows[(*nrows)++];
        memset(r, 0, sizeof *r);
        r->sys = sys;
        r->k = k;
        c.k = k;
        double t;
        HK_TRY(hk_bench_time(spmvs_once, &c, 2, 5, 0.2, &t));
        r->spmv_ms = t * 1e3;
        r->mpk_ms = INFINITY;
        *w = *r;
        w->schedule = HK_MPK_WAVEFRONT;
        hk_mpk_info info;
        for (int64_t blk = 64;; blk *= 4) {
            const int64_t b = blk < nb ? blk : nb;
            HK_TRY(try_plan(&c, &K, HK_MPK_GHOST, b, r, &info));
            if (b == nb) break;
        }
        print_row(r);
        /* the backend's chunk, then half and twice it (a size the plan raises to twice the
         * bandwidth or clamps to the rows onto one already timed is skipped) */
        HK_TRY(try_plan(&c, &K, HK_MPK_WAVEFRONT, 0, w, &info));
        int64_t done[3] = {info.block, -1, -1};
        const int64_t bw = info.bandwidth;
        for (int i = 0; i < 2; i++) {
            int64_t eff = i ? 2 * done[0] : done[0] / 2;
            if (eff < 2 * bw) eff = 2 * bw;
            if (eff < 1) eff = 1;
            if (eff > nb) eff = nb;
            if (eff == done[0] || eff == done[1]) continue;
            done[i + 1] = eff;
            HK_TRY(try_plan(&c, &K, HK_MPK_WAVEFRONT, eff, w, &info));
        }
        print_row(w);
    }
fail:
    for (int j = 0; j <= 8; j++)
        hk_vec_destroy(c.W[j]);
    hk_mat_destroy(c.A);
    hk_bmat_free(&K);
    return ierr;
}

static int solve_one(const char *backend, const hk_bcsr *K, const char *sys, const char *method,
                     solve_row *row)
{
    hk_options *o = NULL;
    hk_solver *s = NULL;
    int ierr;
    char text[256];
    hk_result res;
    const int64_t n = K->nbrows * K->bs;
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x),
           *one = malloc((size_t)n * sizeof *one), t[3];
    HK_TRY_CHECK(b && x && one, HK_ERR_MEMORY, "hooke bench mpk: out of host memory");
    for (int64_t i = 0; i < n; i++)
        one[i] = 1.0;
    hk_bcsr_spmv(K, one, b);
    snprintf(text, sizeof text, "backend=%s tol=1e-8 pc=jacobi %s", backend, method);
    HK_TRY(hk_options_create(&o));
    HK_TRY(hk_options_parse(o, text));
    HK_TRY(hk_solver_create(K, o, &s));
    for (int r = 0; r < 4; r++) { /* one warm-up, the median of three */
        memset(x, 0, (size_t)n * sizeof *x);
        HK_TRY(hk_solver_solve(s, b, x, &res));
        if (r) t[r - 1] = res.solve_seconds;
    }
    row->sys = sys;
    snprintf(row->method, sizeof row->method, "%s", method);
    row->iterations = res.iterations;
    row->ms = hk_bench_median(t, 3) * 1e3;
    row->true_res = res.true_residual;
    row->reason = hk_reason_name(res.reason);
    printf("| %s | %s | %d | %.2f | %.4f | %.1e | %s |\n", sys, method, row->iterations, row->ms,
           row->ms / row->iterations, row->true_res, row->reason);
    fflush(stdout);
    ierr = 0;
fail:
    hk_solver_destroy(s);
    hk_options_destroy(o);
    free(b);
    free(x);
    free(one);
    return ierr;
}

int hk_bench_mpk(int argc, char **argv)
{
    hk_bench_opts bo = {"auto", NULL, HK_BENCH_SMALL};
    int no_solve = 0, rc = 1;
    for (int i = 1; i < argc;) {
        int r = hk_bench_common_option(argc, argv, &i, &bo);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            mpk_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--no-solve")) {
            no_solve = 1;
            i++;
        } else {
            fprintf(stderr, "hooke bench mpk: unknown option '%s' (hooke bench mpk --help)\n",
                    argv[i]);
            return 2;
        }
    }
    const hk_backend *be;
    if (hk_backend_get(bo.backend, &be)) {
        fprintf(stderr, "hooke bench mpk: %s\n", hk_error_message());
        return 2;
    }
    const int n2 = bo.size == HK_BENCH_SMALL ? 200 : bo.size == HK_BENCH_MEDIUM ? 500 : 1000;
    const int n3 = bo.size == HK_BENCH_SMALL ? 20 : bo.size == HK_BENCH_MEDIUM ? 40 : 70;
    hk_bcsr K[2] = {{0}, {0}};
    char name[2][64];
    mpk_row rows[32];
    solve_row srows[16];
    int nrows = 0, nsrows = 0;
    hk_json j = {0};
    snprintf(name[0], sizeof name[0], "2D quad %d^2", n2);
    snprintf(name[1], sizeof name[1], "3D hex %d^3", n3);
    if (hk_gen_elasticity2d(n2, n2, &K[0]) || hk_gen_elasticity3d(n3, n3, n3, &K[1])) {
        fprintf(stderr, "hooke bench mpk: %s\n", hk_error_message());
        goto done;
    }
    printf("## hooke bench mpk: matrix powers vs k SpMVs (eq. 6.1 of the GPU Krylov thesis)\n\n");
    hk_backend_describe(be, stdout);
    printf("\n%s: %lld DOFs; %s: %lld DOFs. ratio = matrix powers / k SpMVs (below 1: the "
           "kernel wins); redundancy = rows computed / (k * rows)\n\n",
           name[0], (long long)(K[0].nbrows * K[0].bs), name[1],
           (long long)(K[1].nbrows * K[1].bs));
    printf(
        "| system | k | schedule | k SpMVs ms | matrix powers ms | ratio | partition or chunk "
        "(block rows) | redundancy | vectors in |\n|---|---:|---|---:|---:|---:|---:|---:|---|\n");
    for (int m = 0; m < 2; m++)
        if (measure(be, &K[m], name[m], rows, &nrows)) {
            fprintf(stderr, "hooke bench mpk: %s\n", hk_error_message());
            goto done;
        }
    if (!no_solve) {
        static const char *methods[] = {"method=cg",
                                        "method=scg ksp.s=2",
                                        "method=scg ksp.s=4",
                                        "method=scg ksp.s=8",
                                        "method=scg ksp.s=4 mpk.block=-1",
                                        NULL};
        printf("\n| system | method (pc=jacobi) | iterations | time to 1e-8 ms | ms/iteration | "
               "true residual | reason |\n|---|---|---:|---:|---:|---:|---|\n");
        for (int m = 0; m < 2; m++)
            for (int i = 0; methods[i]; i++)
                if (solve_one(hk_backend_name(be), &K[m], name[m], methods[i], &srows[nsrows]) == 0)
                    nsrows++;
                else {
                    printf("| %s | %s | – | – | – | – | %s |\n", name[m], methods[i],
                           hk_error_message());
                    hk_error_clear();
                }
    }
    if (bo.json) {
        if (hk_json_open(&j, bo.json)) goto done;
        hk_json_begin_object(&j, NULL);
        hk_json_string(&j, "bench", "mpk");
        hk_json_string(&j, "backend", hk_backend_name(be));
        hk_json_begin_array(&j, "matrix_powers");
        for (int i = 0; i < nrows; i++) {
            hk_json_begin_object(&j, NULL);
            hk_json_string(&j, "system", rows[i].sys);
            hk_json_int(&j, "k", rows[i].k);
            hk_json_string(&j, "schedule",
                           rows[i].schedule == HK_MPK_WAVEFRONT ? "wavefront" : "ghost");
            hk_json_number(&j, "spmvs_ms", rows[i].spmv_ms);
            hk_json_number(&j, "mpk_ms", rows[i].mpk_ms);
            hk_json_number(&j, "ratio", rows[i].mpk_ms / rows[i].spmv_ms);
            hk_json_int(&j, "block", rows[i].block);
            hk_json_number(&j, "redundancy", rows[i].redundancy);
            hk_json_int(&j, "on_chip", rows[i].on_chip);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_begin_array(&j, "solves");
        for (int i = 0; i < nsrows; i++) {
            hk_json_begin_object(&j, NULL);
            hk_json_string(&j, "system", srows[i].sys);
            hk_json_string(&j, "method", srows[i].method);
            hk_json_int(&j, "iterations", srows[i].iterations);
            hk_json_number(&j, "solve_ms", srows[i].ms);
            hk_json_number(&j, "true_residual", srows[i].true_res);
            hk_json_string(&j, "reason", srows[i].reason);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_end_object(&j);
        if (hk_json_close(&j)) goto done;
    }
    rc = 0;
done:
    hk_bcsr_free(&K[0]);
    hk_bcsr_free(&K[1]);
    return rc;
}
