/* `hooke bench mpk`: the matrix-powers kernel against k SpMVs (the GPU Krylov thesis's eq.
 * 6.1: time of the kernel for [A x, ..., A^k x] over the time of k standard SpMVs) for
 * k = 2..8 on generated 2D and 3D elasticity, and method=scg against cg (iterations and time
 * to 1e-8) on the same systems. Both figures are measured in the same run as their baseline.
 * For each k two rows against the same k SpMVs: ghost zones, the best over partition sizes
 * (block rows) whose ghost zones add at most 3x the rows of the k SpMVs, with the chosen size
 * and that redundancy beside it; the wavefront, the best of the backend's chunk, half and
 * twice it (no redundant rows); and the same ghost-zone partitions staged in on-chip memory
 * (the thesis's section 6.3.2, cuda only), the best of 16..4096 block rows whose partitions fit,
 * beside the ghost zones of that same size, so that the staging's own effect shows. The SpMVs
 * use the solver's default format on the backend (sbell on cuda, bsr on the cpu).
 * --stream adds the streamed kernel (mpk_stream_plan: K kept in host memory, the thesis's
 * section 6.3.1) against k streamed SpMVs (a plan of one level applied k times, so K is read
 * from host memory k times, which is what k SpMVs cost when K does not fit on the device),
 * beside the host-to-device copy bandwidth of pinned memory measured in the same run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "hk_impl.h"
#ifdef HOOKE_HAVE_CUDA
#include "../cuda/hk_cuda.h"
#endif

/* What a timed call reads: the SpMVs' matrix A or (--stream) the SpMVs' one-level plan1, the
 * plan of k levels, and the vectors W[0..8]. */
typedef struct mpk_ctx {
    const hk_backend_ops *be;
    hk_mat *A;
    void *plan, *plan1;
    int k;
    double coef[3 * HK_MPK_MAXK];
    hk_vec *W[HK_MPK_MAXK + 1];
} mpk_ctx;

/* W[0..8] on be, W[0] = 1, and the coefficients of A^j x, unscaled as in the thesis's kernel. */
static int ctx_vectors(mpk_ctx *c, int64_t n)
{
    for (int j = 0; j <= 8; j++)
        HK_CALL(hk_vec_create(c->be, n, HK_FP64, &c->W[j]));
    HK_CALL(c->be->vec_set(c->W[0], 1.0));
    for (int j = 0; j < 8; j++) {
        c->coef[3 * j] = 1.0;
        c->coef[3 * j + 1] = c->coef[3 * j + 2] = 0.0;
    }
    return 0;
}

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
               "                       [--schedules LIST] [--no-solve] [--stream] [--stream-mb N]\n"
               "                       [--json FILE]\n\n"
               "Matrix powers [A x, ..., A^k x] in one kernel against k SpMVs for k = 2..8 on\n"
               "2D quad and 3D hex elasticity (small: 200^2 and 20^3 elements, medium 500^2\n"
               "and 40^3, large 1000^2 and 70^3): time of each, their ratio (below 1: the\n"
               "kernel wins), for ghost zones the best partition size and the redundant rows\n"
               "of its ghost zones, for the wavefront the best chunk of the backend's own,\n"
               "half and twice it, for the ghost zones staged in on-chip memory (shared;\n"
               "cuda) the best partition of 16..4096 block rows that fits, with the plain\n"
               "ghost zones of that size beside it; the matrix powers also on the thesis's\n"
               "pentadiagonal matrix (100k rows; medium 4M, large 16M). --schedules picks\n"
               "some of ghost, wavefront, shared (default all three). Then scg (s = 2, 4, 8)\n"
               "against cg with pc=jacobi to 1e-8 on the 2D and 3D systems: iterations and\n"
               "time (--no-solve skips it).\n"
               "--stream: also the streamed kernel (K in host memory, partitions copied to\n"
               "the device in turn) against k streamed SpMVs, with their bandwidths beside\n"
               "the pinned host-to-device copy bandwidth (cpu: memcpy, a reference row);\n"
               "the device budget is --stream-mb N MiB, else half of K's bytes (two buffers\n"
               "of about a quarter of K), doubled while one row's ghost zone does not fit or\n"
               "the partitions that fit would compute more than 3x the rows of k SpMVs (a\n"
               "given budget: the row shows the redundancy and dashes).\n");
}

typedef struct mpk_row {
    const char *sys;
    int k, schedule;
    double spmv_ms, mpk_ms, redundancy;
    long long block;
    int on_chip;
    double stage_kib;     /* shared: on-chip bytes of the largest partition */
    double same_ghost_ms; /* shared: the ghost zones of the same partitions */
} mpk_row;

static const char *schedule_name(int s)
{
    return s == HK_MPK_WAVEFRONT ? "wavefront" : s == HK_MPK_SHARED ? "shared" : "ghost";
}

typedef struct solve_row {
    const char *sys;
    char method[64];
    int iterations;
    double ms, true_res;
    const char *reason;
} solve_row;

static void print_row(const mpk_row *r)
{
    char where[64], same[32];
    if (r->schedule == HK_MPK_SHARED && isfinite(r->mpk_ms))
        snprintf(where, sizeof where, "on chip, %.0f KiB", r->stage_kib);
    else if (r->schedule == HK_MPK_SHARED && r->stage_kib > 0)
        snprintf(where, sizeof where, "none fits (%.0f KiB)", r->stage_kib);
    else if (r->schedule == HK_MPK_SHARED)
        snprintf(where, sizeof where, "none (over 3x the rows, or no staging)");
    else
        snprintf(where, sizeof where, "%s", r->on_chip ? "shared" : "L2/global");
    if (r->schedule == HK_MPK_SHARED && isfinite(r->same_ghost_ms))
        snprintf(same, sizeof same, "%.4f", r->same_ghost_ms);
    else
        snprintf(same, sizeof same, "-");
    if (!isfinite(r->mpk_ms)) { /* no plan fits */
        hk_table_row(stdout, "%s|%d|%s|%.4f|-|-|-|-|-|%s", r->sys, r->k, schedule_name(r->schedule),
                     r->spmv_ms, where);
        return;
    }
    hk_table_row(stdout, "%s|%d|%s|%.4f|%.4f|%.2f|%s|%lld|%.2f|%s", r->sys, r->k,
                 schedule_name(r->schedule), r->spmv_ms, r->mpk_ms, r->mpk_ms / r->spmv_ms, same,
                 r->block, r->redundancy, where);
}

/* Time the plan of (schedule, block, k) into r when it beats r's best; *info of the plan. */
static int try_plan(mpk_ctx *c, const hk_bmat *K, int schedule, int64_t block, mpk_row *r,
                    hk_mpk_info *info)
{
    const hk_backend_ops *be = c->be;
    double t;
    HK_CALL(be->mpk_plan(K, schedule, block, c->k, 3.0, &c->plan, info));
    if (schedule == HK_MPK_SHARED && !c->plan && !isfinite(r->mpk_ms) && !(r->stage_kib > 0))
        r->stage_kib = (double)info->stage_bytes / 1024.0; /* the smallest that did not fit */
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
        r->stage_kib = (double)info->stage_bytes / 1024.0;
    }
    return 0;
}

/* The staged partitions: 16..4096 block rows by fours (a plan is made only when the largest
 * partition fits on chip), then the plain ghost zones of the best size for comparison. */
static int try_shared(mpk_ctx *c, const hk_bmat *K, mpk_row *r)
{
    hk_mpk_info info;
    const int64_t nb = K->nbrows;
    for (int64_t b = 16;; b *= 4) {
        const int64_t bb = b < nb ? b : nb;
        HK_CALL(try_plan(c, K, HK_MPK_SHARED, bb, r, &info));
        if (bb == nb || b >= 4096) break;
    }
    r->same_ghost_ms = INFINITY;
    if (!isfinite(r->mpk_ms)) return 0;
    mpk_row g = *r;
    g.mpk_ms = INFINITY;
    HK_CALL(try_plan(c, K, HK_MPK_GHOST, r->block, &g, &info));
    r->same_ghost_ms = g.mpk_ms;
    return 0;
}

/* The thesis's test matrix of the shared-memory kernel (section 6.4.2: pentadiagonal, 100k
 * rows): 6 on the diagonal, -1 on the four bands beside it. */
static int pentadiagonal(int64_t n, hk_bcsr *K)
{
    memset(K, 0, sizeof *K);
    K->bs = 1;
    K->nbrows = K->nbcols = n;
    HK_CALL(hk_malloc((size_t)(n + 1) * sizeof *K->rowptr, &K->rowptr));
    HK_CALL(hk_malloc((size_t)(5 * n) * sizeof *K->colind, &K->colind));
    HK_CALL(hk_malloc((size_t)(5 * n) * sizeof *K->val, &K->val));
    int64_t q = 0;
    K->rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = i - 2; j <= i + 2; j++)
            if (j >= 0 && j < n) {
                K->colind[q] = (int32_t)j;
                K->val[q++] = j == i ? 6.0 : -1.0;
            }
        K->rowptr[i + 1] = q;
    }
    return 0;
}

/* --schedules: which rows measure() makes (bits 1 << enum hk_mpk_schedule) */
static unsigned bench_schedules =
    (1u << HK_MPK_GHOST) | (1u << HK_MPK_WAVEFRONT) | (1u << HK_MPK_SHARED);

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
    const int64_t nb = Kh->nbrows;
    HK_TRY(ctx_vectors(&c, Kh->nbrows * Kh->bs));
    for (int k = 2; k <= 8; k++) {
        mpk_row base;
        memset(&base, 0, sizeof base);
        base.sys = sys;
        base.k = k;
        c.k = k;
        double t;
        HK_TRY(hk_bench_time(spmvs_once, &c, 2, 5, 0.2, &t));
        base.spmv_ms = t * 1e3;
        base.mpk_ms = INFINITY;
        hk_mpk_info info;
        if (bench_schedules & (1u << HK_MPK_GHOST)) {
            mpk_row *r = &rows[(*nrows)++];
            *r = base;
            for (int64_t blk = 64;; blk *= 4) {
                const int64_t b = blk < nb ? blk : nb;
                HK_TRY(try_plan(&c, &K, HK_MPK_GHOST, b, r, &info));
                if (b == nb) break;
            }
            print_row(r);
        }
        if (bench_schedules & (1u << HK_MPK_SHARED)) {
            mpk_row *r = &rows[(*nrows)++];
            *r = base;
            r->schedule = HK_MPK_SHARED;
            HK_TRY(try_shared(&c, &K, r));
            print_row(r);
        }
        if (!(bench_schedules & (1u << HK_MPK_WAVEFRONT))) continue;
        mpk_row *w = &rows[(*nrows)++];
        *w = base;
        w->schedule = HK_MPK_WAVEFRONT;
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

/* ---- the streamed kernel (--stream) ---------------------------------------------------- */

typedef struct stream_row {
    const char *sys;
    int k;
    long long parts, parts1, block;
    double budget_mib, host_mib, spmv_ms, mpk_ms, spmv_gbs, mpk_gbs, copy_gbs, redundancy;
} stream_row;

static int stream_spmvs_once(void *p)
{
    mpk_ctx *c = p;
    for (int j = 0; j < c->k; j++)
        HK_CALL(c->be->mpk_apply(c->plan1, 1, c->coef, NULL, NULL, c->W + j, NULL));
    return c->be->sync();
}

typedef struct memcpy_ctx {
    void *dst;
    const void *src;
    size_t bytes;
} memcpy_ctx;

static int memcpy_once(void *p)
{
    memcpy_ctx *c = p;
    memcpy(c->dst, c->src, c->bytes);
    return 0;
}

/* Bytes moved per second by one copy of `bytes` into the backend's memory: pinned host to
 * device on cuda, memcpy on the cpu. */
static int copy_bandwidth(const hk_backend_ops *be, size_t bytes, double *gbs)
{
    if (bytes < 4096) bytes = 4096;
#ifdef HOOKE_HAVE_CUDA
    if (strcmp(be->name, "cpu")) {
        const size_t reps = ((size_t)1 << 30) / bytes;
        return hk_cuda_h2d_bandwidth(bytes, reps < 3 ? 3 : reps > 200 ? 200 : (int)reps, gbs);
    }
#else
    (void)be;
#endif
    memcpy_ctx c = {malloc(bytes), malloc(bytes), bytes};
    int ierr = 0;
    double t;
    HK_TRY_CHECK(c.dst && c.src, HK_ERR_MEMORY, "hooke bench mpk: out of host memory");
    memset(c.dst, 1, bytes);
    memset((void *)c.src, 2, bytes);
    HK_TRY(hk_bench_time(memcpy_once, &c, 1, 5, 0.1, &t));
    *gbs = (double)bytes / t / 1e9;
fail:
    free(c.dst);
    free((void *)c.src);
    return ierr;
}

/* Streamed partitions whose ghost zones add at most 3x the rows of the k SpMVs (as for the
 * ghost-zone rows above): the most the bench builds, since the pack takes that many times K. */
#define STREAM_MAX_WORK 3.0

/* A streamed plan of k levels for the device budget *budget; 0: half of K's bytes, then
 * doubled while one block row's ghost zone does not fit or the partitions that fit would
 * exceed STREAM_MAX_WORK. *plan stays NULL when a given budget gives such partitions. */
static int stream_plan(const hk_backend_ops *be, const hk_bcsr *Kh, int k, size_t *budget,
                       void **plan, hk_mpk_info *info)
{
    const int chosen = *budget == 0;
    if (chosen) {
        const int64_t nnzb = Kh->rowptr[Kh->nbrows];
        *budget = ((size_t)nnzb * (size_t)(Kh->bs * Kh->bs * 8 + 4) + (size_t)Kh->nbrows * 8) / 2;
    }
    for (int i = 0;; i++) {
        const int ierr = be->mpk_stream_plan(Kh, 0, *budget, k, STREAM_MAX_WORK, plan, info);
        if (!ierr && (*plan || !chosen)) return 0;
        if (ierr && (!chosen || ierr != HK_ERR_OPTION)) return ierr;
        HK_CHECK(i < 24, HK_ERR_INTERNAL, "hooke bench mpk: no streamed plan for k = %d", k);
        hk_error_clear();
        *budget *= 2;
    }
}

static void print_stream_row(const stream_row *r)
{
    hk_table_row(stdout, "%s|%d|%lld / %lld|%lld|%.2f|%.0f|%.1f|%.4f|%.4f|%.2f|%.2f|%.2f|%.2f",
                 r->sys, r->k, r->parts, r->parts1, r->block, r->redundancy, r->budget_mib,
                 r->host_mib, r->spmv_ms, r->mpk_ms, r->mpk_ms / r->spmv_ms, r->spmv_gbs,
                 r->mpk_gbs, r->copy_gbs);
}

static int measure_stream(const hk_backend *be, const hk_bcsr *Kh, const char *sys,
                          size_t budget_given, stream_row *rows, int *nrows)
{
    int ierr = 0;
    mpk_ctx c;
    memset(&c, 0, sizeof c);
    c.be = be;
    HK_CHECK(be->mpk_stream_plan, HK_ERR_UNSUPPORTED,
             "hooke bench mpk --stream: backend %s has no streamed matrix powers", be->name);
    HK_TRY(ctx_vectors(&c, Kh->nbrows * Kh->bs));
    for (int k = 2; k <= 8; k++) {
        stream_row *r = &rows[(*nrows)++];
        memset(r, 0, sizeof *r);
        r->sys = sys;
        r->k = k;
        c.k = k;
        size_t budget = budget_given;
        hk_mpk_info info, info1;
        HK_TRY(stream_plan(be, Kh, k, &budget, &c.plan, &info));
        if (!c.plan) {
            hk_table_cell(stdout, "%s", sys);
            hk_table_cell(stdout, "%d", k);
            hk_table_dashes(stdout, 2);
            hk_table_cell(stdout, "%.2f", (double)info.work / ((double)k * Kh->nbrows));
            hk_table_cell(stdout, "%.0f", (double)budget / 1048576.0);
            hk_table_dashes(stdout, 7);
            hk_table_end(stdout);
            (*nrows)--;
            continue;
        }
        /* the SpMVs' plan under the same budget (one level: no redundant rows) */
        HK_TRY(be->mpk_stream_plan(Kh, 0, budget, 1, 0.0, &c.plan1, &info1));
        double t;
        HK_TRY(hk_bench_time(stream_spmvs_once, &c, 1, 3, 0.2, &t));
        r->spmv_ms = t * 1e3;
        HK_TRY(hk_bench_time(mpk_once, &c, 1, 3, 0.2, &t));
        r->mpk_ms = t * 1e3;
        r->parts = info.nparts;
        r->parts1 = info1.nparts;
        r->block = info.block;
        r->redundancy = (double)info.work / ((double)k * Kh->nbrows);
        r->budget_mib = (double)budget / 1048576.0;
        r->host_mib = (double)info.host_bytes / 1048576.0;
        r->spmv_gbs = (double)k * (double)info1.host_bytes / (r->spmv_ms * 1e-3) / 1e9;
        r->mpk_gbs = (double)info.host_bytes / (r->mpk_ms * 1e-3) / 1e9;
        /* the copies of one partition of the pass: its mean size */
        HK_TRY(copy_bandwidth(be, info.host_bytes / (size_t)(info.nparts > 0 ? info.nparts : 1),
                              &r->copy_gbs));
        be->mpk_free(c.plan);
        be->mpk_free(c.plan1);
        c.plan = c.plan1 = NULL;
        print_stream_row(r);
    }
fail:
    be->mpk_free(c.plan);
    be->mpk_free(c.plan1);
    for (int j = 0; j <= 8; j++)
        hk_vec_destroy(c.W[j]);
    return ierr;
}

static int solve_one(const char *backend, const hk_bcsr *K, const char *sys, const char *method,
                     solve_row *row)
{
    int ierr;
    char text[256];
    hk_result res;
    double seconds;
    const int64_t n = K->nbrows * K->bs;
    double *b = hk_bench_rhs_ones(K), *x = malloc((size_t)n * sizeof *x);
    HK_TRY_CHECK(b && x, HK_ERR_MEMORY, "hooke bench mpk: out of host memory");
    snprintf(text, sizeof text, "backend=%s tol=1e-8 pc=jacobi %s", backend, method);
    HK_TRY(hk_bench_solve(K, text, 1, 3, b, x, &res, &seconds)); /* the median of three */
    row->sys = sys;
    snprintf(row->method, sizeof row->method, "%s", method);
    row->iterations = res.iterations;
    row->ms = seconds * 1e3;
    row->true_res = res.true_residual;
    row->reason = hk_reason_name(res.reason);
    hk_table_row(stdout, "%s|%s|%d|%.2f|%.4f|%.1e|%s", sys, method, row->iterations, row->ms,
                 row->ms / row->iterations, row->true_res, row->reason);
fail:
    free(b);
    free(x);
    return ierr;
}

int hk_bench_mpk(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    int no_solve = 0, stream = 0, rc = 1;
    size_t stream_budget = 0;
    for (int i = 1; i < argc;) {
        int r = hk_bench_option(argc, argv, &i, &bo, mpk_usage);
        if (r < 0) return r == HK_BENCH_HELP ? 0 : 2;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--no-solve")) {
            no_solve = 1;
            i++;
        } else if (!strcmp(argv[i], "--stream")) {
            stream = 1;
            i++;
        } else if (!strcmp(argv[i], "--schedules") && i + 1 < argc) {
            bench_schedules = 0;
            char list[128];
            snprintf(list, sizeof list, "%s", argv[i + 1]);
            for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
                const int sch = !strcmp(tok, "ghost")       ? HK_MPK_GHOST
                                : !strcmp(tok, "wavefront") ? HK_MPK_WAVEFRONT
                                : !strcmp(tok, "shared")    ? HK_MPK_SHARED
                                                            : -1;
                if (sch < 0) {
                    fprintf(stderr,
                            "hooke bench mpk: unknown schedule '%s' in --schedules; use ghost, "
                            "wavefront and shared, separated by commas\n",
                            tok);
                    return 2;
                }
                bench_schedules |= 1u << sch;
            }
            if (!bench_schedules) {
                fprintf(stderr, "hooke bench mpk: --schedules needs at least one of ghost, "
                                "wavefront, shared\n");
                return 2;
            }
            i += 2;
        } else if (!strcmp(argv[i], "--stream-mb")) {
            char *end = NULL;
            const long long mb = i + 1 < argc ? strtoll(argv[i + 1], &end, 10) : 0;
            if (!end || *end || mb < 1) {
                fprintf(stderr, "hooke bench mpk: --stream-mb needs a positive number of MiB "
                                "(the device budget of the streamed kernel)\n");
                return 2;
            }
            stream_budget = (size_t)mb << 20;
            i += 2;
        } else {
            fprintf(stderr, "hooke bench mpk: unknown option '%s' (hooke bench mpk --help)\n",
                    argv[i]);
            return 2;
        }
    }
    const hk_backend *be;
    if (hk_bench_backend("hooke bench mpk", bo.backend, &be)) return 2;
    const int n2 = (int)hk_bench_pick(bo.size, 200, 500, 1000);
    const int n3 = (int)hk_bench_pick(bo.size, 20, 40, 70);
    const int64_t n1 = (int64_t)hk_bench_pick(bo.size, 100000, 4000000, 16000000);
    hk_bcsr K[3] = {{0}, {0}, {0}};
    char name[3][64];
    mpk_row rows[72];
    solve_row srows[16];
    stream_row strows[16];
    int nrows = 0, nsrows = 0, nstrows = 0;
    hk_json j = {0};
    snprintf(name[0], sizeof name[0], "2D quad %d^2", n2);
    snprintf(name[1], sizeof name[1], "3D hex %d^3", n3);
    snprintf(name[2], sizeof name[2], "1D pentadiagonal %lld", (long long)n1);
    if (hk_gen_elasticity2d(n2, n2, &K[0]) || hk_gen_elasticity3d(n3, n3, n3, &K[1]) ||
        pentadiagonal(n1, &K[2])) {
        fprintf(stderr, "hooke bench mpk: %s\n", hk_error_message());
        goto done;
    }
    printf("## hooke bench mpk: matrix powers vs k SpMVs (eq. 6.1 of the GPU Krylov thesis)\n\n");
    hk_backend_describe(be, stdout);
    printf("\n%s: %lld DOFs; %s: %lld DOFs; %s (the thesis's shared-memory test matrix, "
           "matrix powers only). ratio = matrix powers / k SpMVs (below 1: the kernel wins); "
           "redundancy = rows computed / (k * rows); shared: the partitions staged on chip, "
           "beside the ghost zones of the same partitions (dashes: no partition of "
           "16..4096 block rows fits, or every one computes over 3x the rows; the KiB of the "
           "smallest)\n\n",
           name[0], (long long)(K[0].nbrows * K[0].bs), name[1], (long long)(K[1].nbrows * K[1].bs),
           name[2]);
    hk_table_head(stdout, "lrlrrrrrrl",
                  "system|k|schedule|k SpMVs ms|matrix powers ms|ratio|"
                  "ghost, same partitions ms|partition or chunk (block rows)|redundancy|"
                  "vectors (and matrix) in");
    for (int m = 0; m < 3; m++)
        if (measure(be, &K[m], name[m], rows, &nrows)) {
            fprintf(stderr, "hooke bench mpk: %s\n", hk_error_message());
            goto done;
        }
    if (stream) {
        printf(
            "\nStreamed (K in host memory, partitions copied in turn): the pass against k "
            "streamed SpMVs (a one-level plan applied k times). partitions: of the pass / of "
            "the SpMVs; redundancy as above; GB/s = bytes copied from host memory per "
            "second (the pass copies K's partitions with their ghost zones once, the SpMVs "
            "k times); copy GB/s: %s of one partition's bytes; dashes: the partitions that fit the "
            "budget would compute more than 3x the rows of the k SpMVs\n\n",
            strcmp(hk_backend_name(be), "cpu") ? "pinned host-to-device copies"
                                               : "memcpy (cpu: nothing is copied; reference)");
        hk_table_head(stdout, "lrrrrrrrrrrrr",
                      "system|k|partitions|block rows|redundancy|device budget MiB|host MiB|"
                      "k streamed SpMVs ms|streamed pass ms|ratio|SpMVs GB/s|pass GB/s|copy GB/s");
        for (int m = 0; m < 2; m++)
            if (measure_stream(be, &K[m], name[m], stream_budget, strows, &nstrows)) {
                fprintf(stderr, "hooke bench mpk: %s\n", hk_error_message());
                goto done;
            }
    }
    if (!no_solve) {
        static const char *methods[] = {"method=cg",
                                        "method=scg ksp.s=2",
                                        "method=scg ksp.s=4",
                                        "method=scg ksp.s=8",
                                        "method=scg ksp.s=4 mpk.block=-1",
                                        NULL};
        printf("\n");
        hk_table_head(stdout, "llrrrrl",
                      "system|method (pc=jacobi)|iterations|time to 1e-8 ms|ms/iteration|"
                      "true residual|reason");
        for (int m = 0; m < 2; m++)
            for (int i = 0; methods[i]; i++)
                if (solve_one(hk_backend_name(be), &K[m], name[m], methods[i], &srows[nsrows]) == 0)
                    nsrows++;
                else {
                    hk_table_cell(stdout, "%s", name[m]);
                    hk_table_cell(stdout, "%s", methods[i]);
                    hk_table_dashes(stdout, 4);
                    hk_table_cell(stdout, "%s", hk_error_message());
                    hk_table_end(stdout);
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
            hk_json_string(&j, "schedule", schedule_name(rows[i].schedule));
            hk_json_number(&j, "spmvs_ms", rows[i].spmv_ms);
            if (isfinite(rows[i].mpk_ms)) {
                hk_json_number(&j, "mpk_ms", rows[i].mpk_ms);
                hk_json_number(&j, "ratio", rows[i].mpk_ms / rows[i].spmv_ms);
            }
            if (rows[i].schedule == HK_MPK_SHARED) {
                hk_json_number(&j, "stage_kib", rows[i].stage_kib);
                if (isfinite(rows[i].same_ghost_ms))
                    hk_json_number(&j, "same_ghost_ms", rows[i].same_ghost_ms);
            }
            hk_json_int(&j, "block", rows[i].block);
            hk_json_number(&j, "redundancy", rows[i].redundancy);
            hk_json_int(&j, "on_chip", rows[i].on_chip);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        if (stream) {
            hk_json_begin_array(&j, "streamed");
            for (int i = 0; i < nstrows; i++) {
                const stream_row *r = &strows[i];
                hk_json_begin_object(&j, NULL);
                hk_json_string(&j, "system", r->sys);
                hk_json_int(&j, "k", r->k);
                hk_json_int(&j, "partitions", r->parts);
                hk_json_int(&j, "partitions_spmv", r->parts1);
                hk_json_int(&j, "block", r->block);
                hk_json_number(&j, "redundancy", r->redundancy);
                hk_json_number(&j, "device_budget_mib", r->budget_mib);
                hk_json_number(&j, "host_mib", r->host_mib);
                hk_json_number(&j, "spmvs_ms", r->spmv_ms);
                hk_json_number(&j, "mpk_ms", r->mpk_ms);
                hk_json_number(&j, "ratio", r->mpk_ms / r->spmv_ms);
                hk_json_number(&j, "spmvs_gbs", r->spmv_gbs);
                hk_json_number(&j, "mpk_gbs", r->mpk_gbs);
                hk_json_number(&j, "copy_gbs", r->copy_gbs);
                hk_json_end_object(&j);
            }
            hk_json_end_array(&j);
        }
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
    hk_bcsr_free(&K[2]);
    return rc;
}
