/* `hooke bench cg`: time per iteration of Hooke's CG and pipelined CG next to the classical
 * cuSPARSE + cuBLAS CG (ANCHORS.md baseline) measured in the same run, on generated 3D hex8
 * elasticity matrices (N^3 nodes, 3N^3 DOFs), plus the CPU backend for the GPU/CPU speedup.
 *
 * Every solve runs a fixed number of iterations (tol=1e-30 maxit=N, b = 1, x0 = 0), so all
 * methods do the same work; ||r|| after the last iteration is printed beside each time as a
 * cross-check that they computed the same thing. Also measured: pipelined CG driven through
 * the backend ops directly, with and without CUDA-graph replay of check_every iterations, and
 * the SBELL and CSR SpMV for every thread count per block row, next to cuSPARSE's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cpu/cpu_impl.h"
#include "hk_impl.h"
#ifdef HOOKE_HAVE_CUDA
#include "../cuda/hk_cuda.h"
#endif

typedef struct cg_row {
    int nodes;
    long long dofs;
    const char *backend, *method, *format;
    double ms_per_iter, rnorm, vs_base; /* vs_base: baseline time / this time */
} cg_row;

typedef struct cg_rows {
    cg_row *r;
    int n, cap;
} cg_rows;

static int rows_add(cg_rows *R, cg_row row)
{
    if (R->n == R->cap) {
        int cap = R->cap ? 2 * R->cap : 32;
        cg_row *p = realloc(R->r, (size_t)cap * sizeof *p);
        if (!p) return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__, "out of host memory");
        R->r = p;
        R->cap = cap;
    }
    R->r[R->n++] = row;
    return 0;
}

static void cg_usage(FILE *f)
{
    fprintf(f,
            "usage: hooke bench cg [--backend auto|cpu|cuda] [--size small|medium|large]\n"
            "                      [--nodes N[,N...]] [--iters N] [--check-every K] [--json F]\n\n"
            "Per-iteration time of cg and pipecg (pc=none, fixed iterations) on 3D hex8\n"
            "elasticity with N^3 nodes (default N = 20 for small, 20 and 70 otherwise: 24k and\n"
            "1M DOFs), next to the classical cuSPARSE+cuBLAS CG and the CPU backend, plus\n"
            "pipelined CG with and without CUDA-graph replay, and the SBELL and CSR SpMV per\n"
            "thread count per block row beside cuSPARSE's. --iters (default 200) iterations\n"
            "per solve; --check-every (default 10) iterations between host reads of the\n"
            "residual in the graph runs and in the solver row 'pipecg check_every=K'.\n"
            "On the CPU: the host's copy bandwidth (STREAM-like, same run) and the CPU SpMV\n"
            "(csr, bsr) as effective bandwidth and its share of the copy, cg per iteration\n"
            "against one csr SpMV, and the ops of an iteration (cg_iter, cg_spmv, cg_update,\n"
            "pipecg_step, pipecg_update, spmv_dot2) each timed alone on the same csr matrix and "
            "vectors:\n"
            "bytes they must move, GB/s, share of the copy and time against the SpMV.\n");
}

/* Solves through the public API: time per iteration (solve_seconds / iterations), the median
 * of three solves after a warm-up one (first-use costs such as module load and handles stay out
 * of the figure). Every solve runs the same fixed iterations, so the median of the solve times
 * over the iterations is the median per iteration. */
static int time_solver(const hk_bcsr *K, const char *backend, const char *method,
                       const char *format, const char *extra, int iters, const double *b, double *x,
                       double *ms, double *rnorm)
{
    char opt[256];
    hk_result res;
    double s;
    snprintf(opt, sizeof opt, "backend=%s method=%s pc=none format=%s tol=1e-30 maxit=%d %s",
             backend, method, format, iters, extra);
    HK_CALL(hk_bench_solve(K, opt, 1, 3, b, x, &res, &s));
    *ms = res.iterations > 0 ? s * 1e3 / res.iterations : NAN;
    *rnorm = res.rnorm;
    return 0;
}
#ifdef HOOKE_HAVE_CUDA

/* Pipelined CG (no preconditioner) driven through the ops as solver/ksp/cg.c does, reading
 * S every check_every iterations; with graph, those iterations are recorded once and
 * replayed. The recording is inside the timed region. */
static int pipecg_ops(const hk_backend_ops *be, hk_mat *A, const double *b, int iters,
                      int check_every, int graph, double *ms, double *rnorm)
{
    int ierr;
    hk_vec *v[4] = {NULL, NULL, NULL, NULL};
    double *S = NULL, h[HK_S_PIPECG_COUNT];
    void *g = NULL;
    for (int j = 0; j < 4; j++)
        HK_TRY(hk_vec_create(be, A->nrows, HK_FP64, &v[j]));
    hk_vec *x = v[0], *r = v[1], *p = v[2], *Ap = v[3];
    HK_TRY(be->scal_alloc(&S, HK_S_MAX));
    HK_TRY(be->vec_set(x, 0.0));
    HK_TRY(hk_vec_upload(r, b));
    HK_TRY(be->vec_copy(p, r));
    HK_TRY(be->vec_dot(r, r, &h[HK_S_RR]));
    h[HK_S_RZ] = h[HK_S_RR];
    HK_TRY(be->scal_set(S, HK_S_RR, 2, h));
    HK_TRY(be->spmv_dot2(A, p, Ap, NULL, NULL, S));
    HK_TRY(be->sync());
    double t0 = hk_time();
    if (graph) {
        HK_TRY(be->graph_begin());
        for (int c = 0; c < check_every; c++) {
            HK_TRY(be->pipecg_update(x, r, p, Ap, NULL, S));
            HK_TRY(be->spmv_dot2(A, p, Ap, NULL, NULL, S));
        }
        HK_TRY(be->graph_end(&g));
    }
    int done = 0;
    while (done < iters) {
        if (graph) {
            HK_TRY(be->graph_launch(g));
        } else {
            for (int c = 0; c < check_every; c++) {
                HK_TRY(be->pipecg_update(x, r, p, Ap, NULL, S));
                HK_TRY(be->spmv_dot2(A, p, Ap, NULL, NULL, S));
            }
        }
        done += check_every;
        HK_TRY(be->scal_get(S, 0, HK_S_PIPECG_COUNT, h)); /* the convergence check's read */
    }
    *ms = (hk_time() - t0) * 1e3 / done;
    *rnorm = sqrt(fabs(h[HK_S_RR]));
fail:
    if (g) be->graph_free(g);
    if (S) be->scal_free(S);
    for (int j = 0; j < 4; j++)
        hk_vec_destroy(v[j]);
    return ierr;
}
#endif

/* fp64 SpMV in format fmt with tpr threads per block row (0 = auto): microseconds per
 * product. */
static int time_spmv(const hk_backend_ops *be, const hk_bcsr *K, hk_format fmt, int tpr, double *us)
{
    int ierr;
    hk_options *o = NULL;
    hk_mat *A = NULL;
    hk_vec *x = NULL, *y = NULL;
    char opt[64];
    snprintf(opt, sizeof opt, "format.tpr=%d", tpr);
    HK_TRY(hk_options_create(&o));
    HK_TRY(hk_options_parse(o, opt));
    HK_TRY(hk_mat_create(be, K, fmt, HK_FP64, o, &A));
    HK_TRY(hk_vec_create(be, A->ncols, HK_FP64, &x));
    HK_TRY(hk_vec_create(be, A->nrows, HK_FP64, &y));
    HK_TRY(be->vec_set(x, 1.0));
    double s;
    HK_TRY(hk_bench_time_spmv(A, x, y, 3, 10, 0.2, &s));
    *us = s * 1e6;
fail:
    hk_vec_destroy(x);
    hk_vec_destroy(y);
    hk_mat_destroy(A);
    hk_options_destroy(o);
    return ierr;
}

/* ---- the CPU iteration, op by op --------------------------------------------------------- */

/* The ops of one CPU iteration, each timed alone on the same vectors and matrix (csr fp64). */
typedef enum {
    OP_SPMV,        /* y = A x alone: the reference */
    OP_CG_ITER,     /* cg, pc=none: its whole iteration (cg_update, then cg_spmv) */
    OP_CG_ITER_J,   /* cg, pc=jacobi */
    OP_CG_SPMV,     /* cg: p = z + beta p, Ap = A p, p.Ap */
    OP_CG_UPDATE,   /* cg, pc=none: x += alpha p, r -= alpha Ap, r.r */
    OP_CG_UPDATE_J, /* cg, pc=jacobi: the same plus z = dinv .* r and r.z */
    OP_PIPE_STEP,   /* pipecg, pc=none: its whole iteration (pipecg_update, then spmv_dot2) */
    OP_PIPE_UPDATE, /* pipecg, pc=none: x, r, p and r.r, r.z */
    OP_PIPE_SPMV,   /* pipecg: Ap = A p with p.Ap, Ap.Ap, r.Ap */
    OP_COUNT
} cpu_op;

static const char *const cpu_op_name[OP_COUNT] = {"csr SpMV",
                                                  "cg_iter (pc=none)",
                                                  "cg_iter (pc=jacobi)",
                                                  "cg_spmv",
                                                  "cg_update (pc=none)",
                                                  "cg_update (pc=jacobi)",
                                                  "pipecg_step (pc=none)",
                                                  "pipecg_update",
                                                  "spmv_dot2"};

typedef struct op_ctx {
    const hk_backend_ops *be;
    hk_mat *A;
    hk_vec *x, *r, *z, *p, *Ap, *dinv;
    double *S;
} op_ctx;

static int op_once(void *c, int op)
{
    op_ctx *o = c;
    const hk_backend_ops *be = o->be;
    double d[3];
    switch ((cpu_op)op) {
    case OP_SPMV:
        return hk_mat_spmv(o->A, o->p, o->Ap);
    case OP_CG_ITER: /* r = p = 1: r.r = n; rz = 2 n gives beta = 0.5 (and 0.25 below) */
        return be->cg_iter(o->A, o->x, o->r, o->r, o->p, o->Ap, NULL, 1e-9, 2.0 * o->A->nrows, d);
    case OP_CG_ITER_J:
        return be->cg_iter(o->A, o->x, o->r, o->z, o->p, o->Ap, o->dinv, 1e-9, 2.0 * o->A->nrows,
                           d);
    case OP_CG_SPMV: /* beta = 0.5 keeps p bounded (p -> 2 z) over any number of calls */
        return be->cg_spmv(o->A, o->r, 0.5, o->p, o->Ap, d);
    case OP_CG_UPDATE: /* a tiny alpha keeps x and r bounded */
        return be->cg_update(o->x, o->r, o->r, o->p, o->Ap, NULL, 1e-9, d);
    case OP_CG_UPDATE_J:
        return be->cg_update(o->x, o->r, o->z, o->p, o->Ap, o->dinv, 1e-9, d);
    case OP_PIPE_STEP:
    case OP_PIPE_UPDATE: {
        /* alpha = RZ / PAP = 1e-9 and beta = 1 - 2 alpha ZAP / RZ = 0.5 at every call */
        const double S0[HK_S_PIPECG_COUNT] = {1.0, 1.0, 1e9, 0.0, 0.0, 0.0, 2.5e8};
        HK_CALL(be->scal_set(o->S, 0, HK_S_PIPECG_COUNT, S0));
        if (op == OP_PIPE_STEP) return be->pipecg_step(o->A, o->x, o->r, o->p, o->Ap, NULL, o->S);
        return be->pipecg_update(o->x, o->r, o->p, o->Ap, NULL, o->S);
    }
    case OP_PIPE_SPMV:
        return be->spmv_dot2(o->A, o->p, o->Ap, NULL, o->r, o->S);
    default:
        return 0;
    }
}

/* Bytes an op must move at least: the matrix once (mat_bytes, csr), each vector of n doubles
 * read once and written once where it is an output (a write-allocate read is not counted, as
 * STREAM does not count it). */
static double op_bytes(cpu_op op, double mat_bytes, int64_t n)
{
    const double v = 8.0 * (double)n;
    switch (op) {
    case OP_SPMV:
        return mat_bytes + 2 * v; /* x, y */
    case OP_CG_ITER:
        return mat_bytes + 8 * v; /* x, r, p, Ap read and written */
    case OP_CG_ITER_J:
        return mat_bytes + 10 * v; /* and dinv read, z written */
    case OP_CG_SPMV:
        return mat_bytes + 4 * v; /* z, p read; p, Ap written */
    case OP_CG_UPDATE:
        return 6 * v; /* x, r, p, Ap read; x, r written */
    case OP_CG_UPDATE_J:
        return 8 * v; /* and dinv read, z written */
    case OP_PIPE_STEP:
        return mat_bytes + 8 * v; /* x, r, p, Ap read and written */
    case OP_PIPE_UPDATE:
        return 7 * v; /* x, r, p, Ap read; x, r, p written */
    case OP_PIPE_SPMV:
        return mat_bytes + 3 * v; /* p, r read; Ap written */
    default:
        return 0;
    }
}

typedef struct op_row {
    int64_t dofs;
    cpu_op op;
    double us, bytes;
} op_row;

/* Each op of the CPU iteration alone on K in csr fp64: microseconds per call into us[op]
 * (all fp64 CPU ops, so no device wait is needed). */
static int time_cpu_ops(const hk_backend_ops *be, const hk_bcsr *K, double *us)
{
    int ierr;
    op_ctx o = {be, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    hk_vec **v[6] = {&o.x, &o.r, &o.z, &o.p, &o.Ap, &o.dinv};
    HK_TRY(hk_mat_create(be, K, HK_FMT_CSR, HK_FP64, NULL, &o.A));
    for (int j = 0; j < 6; j++)
        HK_TRY(hk_vec_create(be, o.A->nrows, HK_FP64, v[j]));
    HK_TRY(be->scal_alloc(&o.S, HK_S_MAX));
    HK_TRY(be->vec_set(o.x, 0.0));
    HK_TRY(be->vec_set(o.r, 1.0));
    HK_TRY(be->vec_set(o.p, 1.0));
    HK_TRY(be->vec_set(o.dinv, 0.5));
    HK_TRY(hk_mat_spmv(o.A, o.p, o.Ap));
    /* The ops take turns, a batch of about 2 ms each per round, each op's figure its median
     * over the rounds, so the ratios to the SpMV hold where the times alone drift. */
    HK_TRY(hk_bench_time_rounds(op_once, &o, OP_COUNT, 31, 2e-3, us));
    for (int op = 0; op < OP_COUNT; op++)
        us[op] *= 1e6;
fail:
    if (o.S) be->scal_free(o.S);
    for (int j = 0; j < 6; j++)
        hk_vec_destroy(*v[j]);
    hk_mat_destroy(o.A);
    return ierr;
}

int hk_bench_cg(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    int iters = 200, check_every = 10, nn = 0, nodes[8], rc = 1;
    const char *node_list = NULL;
    cg_rows R = {NULL, 0, 0};
    hk_json j = {0};
    for (int i = 1; i < argc;) {
        int r = hk_bench_option(argc, argv, &i, &bo, cg_usage);
        if (r < 0) return r == HK_BENCH_HELP ? 0 : 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "--nodes") && i + 1 < argc) {
            node_list = argv[i + 1];
            i += 2;
        } else if (!strcmp(a, "--iters") && i + 1 < argc) {
            iters = atoi(argv[i + 1]);
            i += 2;
        } else if (!strcmp(a, "--check-every") && i + 1 < argc) {
            check_every = atoi(argv[i + 1]);
            i += 2;
        } else {
            fprintf(stderr,
                    "hooke bench cg: unknown or incomplete option '%s' (hooke bench cg "
                    "--help)\n",
                    a);
            return 2;
        }
    }
    if (check_every > iters && iters >= 1) check_every = iters; /* short runs: check once */
    if (iters < 1 || check_every < 1) {
        fprintf(stderr, "hooke bench cg: --iters and --check-every must be at least 1\n");
        return 2;
    }
    if (node_list) {
        nn = hk_bench_parse_ints(node_list, nodes, 8, 2, 200);
        if (nn <= 0) {
            fprintf(stderr,
                    "hooke bench cg: --nodes %s is not a list of node counts 2..200 "
                    "(e.g. 20,70)\n",
                    node_list);
            return 2;
        }
    } else {
        nodes[nn++] = 20;
        if (bo.size != HK_BENCH_SMALL) nodes[nn++] = 70;
    }

    const hk_backend *gpu = NULL, *cpu = NULL;
    if (hk_bench_backend("hooke bench cg", "cpu", &cpu)) goto done;
    if (strcmp(bo.backend, "cpu")) {
        if (hk_bench_backend("hooke bench cg", bo.backend, &gpu)) goto done;
        if (!strcmp(hk_backend_name(gpu), "cpu")) gpu = NULL; /* auto without a device */
    }
#ifndef HOOKE_HAVE_CUDA
    gpu = NULL;
#endif

    double copy_gbs = NAN;
    printf("## hooke bench cg (%d iterations per solve, pc=none, b = 1, x0 = 0)\n\n", iters);
    if (gpu) hk_backend_describe(gpu, stdout);
    hk_backend_describe(cpu, stdout);
#ifdef HOOKE_HAVE_CUDA
    if (gpu) {
        if (hk_cuda_copy_bandwidth((size_t)1 << 30, 20, &copy_gbs)) goto error;
        printf("device copy bandwidth (read + write): %.0f GB/s\n", copy_gbs);
    }
#endif
    /* the host's copy bandwidth: the CPU kernels are judged against it (512 MB, past caches) */
    double host_gbs = NAN;
    if (hk_cpu_copy_bandwidth((size_t)256 << 20, 10, &host_gbs)) goto error;
    printf("host copy bandwidth (read + write, STREAM-like): %.1f GB/s\n", host_gbs);
    printf("\n");
    typedef struct cpu_spmv_row {
        int64_t dofs;
        hk_format fmt;
        double us, gbs, cg_ms;
    } cpu_spmv_row;
    cpu_spmv_row cr[16];
    int ncr = 0;
    typedef struct tpr_row {
        int nodes, tpr;
        hk_format fmt;
        double us;
    } tpr_row;
    tpr_row tr[8 * 12];
    int ntr = 0;
    typedef struct graph_row {
        int nodes;
        double direct, graph, r1, r2;
    } graph_row;
    graph_row gr[8];
    int ngr = 0;
    op_row orow[8 * OP_COUNT];
    int nor = 0;

    for (int s = 0; s < nn; s++) {
        const int N = nodes[s];
        hk_bcsr K = {0};
        if (hk_gen_elasticity3d(N - 1, N - 1, N - 1, &K)) goto error;
        const int64_t n = K.nbrows * K.bs;
        double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
        if (!b || !x) {
            free(b), free(x), hk_bcsr_free(&K);
            hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__, "out of host memory");
            goto error;
        }
        for (int64_t i = 0; i < n; i++)
            b[i] = 1.0;
        fprintf(stderr, "hooke bench cg: %d^3 nodes, %lld DOFs, %lld nonzeros\n", N, (long long)n,
                (long long)K.rowptr[K.nbrows] * K.bs * K.bs);
        double base = NAN;
        int err = 0;
#ifdef HOOKE_HAVE_CUDA
        if (gpu) {
            hk_cuda_cg_timing t;
            err = hk_cuda_baseline_cg(&K, iters, &t);
            if (!err) {
                base = t.ms_per_iter;
                err = rows_add(&R, (cg_row){N, n, "cuda", "cuSPARSE+cuBLAS CG", "csr (cuSPARSE)",
                                            t.ms_per_iter, t.rnorm, 1.0});
            }
            static const char *const meth[] = {"cg", "pipecg"};
            static const char *const fmts[] = {"sbell", "cusparse-csr", "csr"};
            for (int m = 0; m < 2 && !err; m++)
                for (int f = 0; f < 3 && !err; f++) {
                    double ms, rn;
                    err = time_solver(&K, "cuda", meth[m], fmts[f], "", iters, b, x, &ms, &rn);
                    if (!err)
                        err = rows_add(&R,
                                       (cg_row){N, n, "cuda", meth[m], fmts[f], ms, rn, base / ms});
                }
            /* the solver reading its residual every check_every iterations, not every one */
            if (!err) {
                static char label[48];
                snprintf(label, sizeof label, "pipecg check_every=%d", check_every);
                char extra[32];
                snprintf(extra, sizeof extra, "check_every=%d", check_every);
                double ms, rn;
                err = time_solver(&K, "cuda", "pipecg", "sbell", extra, iters, b, x, &ms, &rn);
                if (!err)
                    err = rows_add(&R, (cg_row){N, n, "cuda", label, "sbell", ms, rn, base / ms});
            }
            /* pipelined CG through the ops: direct vs graph replay */
            if (!err) {
                hk_mat *A = NULL;
                graph_row g = {N, NAN, NAN, NAN, NAN};
                err = hk_mat_create(gpu, &K, HK_FMT_SBELL, HK_FP64, NULL, &A);
                if (!err) err = pipecg_ops(gpu, A, b, iters, check_every, 0, &g.direct, &g.r1);
                if (!err) err = pipecg_ops(gpu, A, b, iters, check_every, 1, &g.graph, &g.r2);
                if (!err) err = pipecg_ops(gpu, A, b, iters, check_every, 0, &g.direct, &g.r1);
                if (!err) err = pipecg_ops(gpu, A, b, iters, check_every, 1, &g.graph, &g.r2);
                hk_mat_destroy(A);
                if (!err) gr[ngr++] = g;
            }
            /* SpMV alone: sbell and csr for each thread count, cuSPARSE CSR for reference */
            static const struct {
                hk_format f;
                int tpr;
            } sp[] = {{HK_FMT_SBELL, 0}, {HK_FMT_SBELL, 1},       {HK_FMT_SBELL, 2},
                      {HK_FMT_SBELL, 4}, {HK_FMT_SBELL, 8},       {HK_FMT_CSR, 0},
                      {HK_FMT_CSR, 4},   {HK_FMT_CSR, 8},         {HK_FMT_CSR, 16},
                      {HK_FMT_CSR, 32},  {HK_FMT_CUSPARSE_CSR, 0}};
            for (size_t k = 0; k < sizeof sp / sizeof sp[0] && !err; k++) {
                tr[ntr] = (tpr_row){N, sp[k].tpr, sp[k].f, NAN};
                err = time_spmv(gpu, &K, sp[k].f, sp[k].tpr, &tr[ntr].us);
                ntr++;
            }
        }
#endif
        /* the CPU backend as the GPU: a warm-up solve (vector allocation and first touch, about
         * ten SpMVs at 81k DOFs on 2 cores), then the median of three */
        static const char *const cmeth[] = {"cg", "pipecg"};
        for (int m = 0; m < 2 && !err; m++) {
            double ms, rn;
            err = time_solver(&K, "cpu", cmeth[m], "csr", "", iters, b, x, &ms, &rn);
            if (!err) err = rows_add(&R, (cg_row){N, n, "cpu", cmeth[m], "csr", ms, rn, base / ms});
        }
        /* the CPU SpMV alone, as bytes moved per second: the matrix once, x and y once (a
         * lower bound on traffic: x reused from cache) */
        static const hk_format cfmt[] = {HK_FMT_CSR, HK_FMT_BSR};
        for (int f = 0; f < 2 && !err && ncr < 16; f++) {
            const int64_t nnzb = K.rowptr[K.nbrows], bs = K.bs;
            const double bytes =
                cfmt[f] == HK_FMT_CSR
                    ? (double)nnzb * bs * bs * 12.0 + (double)(n + 1) * 8 + 2.0 * n * 8
                    : (double)nnzb * (bs * bs * 8.0 + 4) + (double)(K.nbrows + 1) * 8 + 2.0 * n * 8;
            cpu_spmv_row c = {n, cfmt[f], NAN, NAN, NAN};
            err = time_spmv(cpu, &K, cfmt[f], 0, &c.us);
            c.gbs = bytes / (c.us * 1e-6) / 1e9;
            for (int i = 0; i < R.n; i++)
                if (R.r[i].dofs == n && !strcmp(R.r[i].backend, "cpu") &&
                    !strcmp(R.r[i].method, "cg"))
                    c.cg_ms = R.r[i].ms_per_iter;
            if (!err) cr[ncr++] = c;
        }
        /* the iteration op by op, on the same vectors (bytes: the csr matrix as above) */
        if (!err) {
            double us[OP_COUNT];
            const double mat_bytes =
                (double)K.rowptr[K.nbrows] * K.bs * K.bs * 12.0 + (double)(n + 1) * 8;
            err = time_cpu_ops(cpu, &K, us);
            for (int op = 0; op < OP_COUNT && !err; op++)
                orow[nor++] = (op_row){n, (cpu_op)op, us[op], op_bytes((cpu_op)op, mat_bytes, n)};
        }
        free(b), free(x);
        hk_bcsr_free(&K);
        if (err) goto error;
    }

    hk_table_head(stdout, "rlllrrr",
                  "DOFs|backend|method|format|ms/iteration|baseline / this|%s after %d", "||r||",
                  iters);
    for (int i = 0; i < R.n; i++) {
        cg_row *r = &R.r[i];
        char ratio[32];
        hk_table_row(stdout, "%lld|%s|%s|%s|%.4f|%s|%.6e", r->dofs, r->backend, r->method,
                     r->format, r->ms_per_iter,
                     hk_bench_ratio_text(ratio, sizeof ratio, r->vs_base), r->rnorm);
    }
    printf("\n(baseline: classical CG with cusparseSpMV CSR + cublasDdot/Daxpy/Dscal, host "
           "scalars, same run; > 1x means faster than it; every row: median of 3 solves after a "
           "warm-up)\n");
    printf("\n");
    hk_table_head(stdout, "rlrrrr",
                  "DOFs|CPU SpMV|us|effective GB/s|share of copy bandwidth|cg ms/it / csr SpMV");
    for (int i = 0; i < ncr; i++) {
        char ratio[32]; /* cg runs in csr here: its ratio only on that row */
        hk_bench_ratio_text(ratio, sizeof ratio,
                            cr[i].fmt == HK_FMT_CSR ? cr[i].cg_ms * 1e3 / cr[i].us : NAN);
        hk_table_row(stdout, "%lld|%s|%.1f|%.1f|%.0f %%|%s", (long long)cr[i].dofs,
                     hk_format_name(cr[i].fmt), cr[i].us, cr[i].gbs, 100 * cr[i].gbs / host_gbs,
                     ratio);
    }
    printf("\n(host copy %.1f GB/s; SpMV bytes: values, column indices, row pointers, x and y "
           "once each)\n",
           host_gbs);
    printf("\n");
    hk_table_head(stdout, "rlrrrrrr",
                  "DOFs|CPU op (alone)|us|MB moved|GB/s|share of copy|vs csr SpMV|"
                  "above its traffic at copy speed, us");
    for (int i = 0; i < nor; i++) {
        const op_row *o = &orow[i];
        const double spmv = orow[i - o->op].us, gbs = o->bytes / (o->us * 1e-6) / 1e9;
        hk_table_row(stdout, "%lld|%s|%.1f|%.2f|%.1f|%.0f %%|%.3fx|%.1f", (long long)o->dofs,
                     cpu_op_name[o->op], o->us, o->bytes / 1e6, gbs, 100 * gbs / host_gbs,
                     o->us / spmv, o->us - o->bytes / (host_gbs * 1e3));
        if (o->op == OP_CG_UPDATE || o->op == OP_PIPE_SPMV) {
            /* an iteration without a preconditioner as the sum of its two ops (the op before
             * this one in the table and this one): cg on a backend without cg_iter */
            const double it = orow[i - 1].us + o->us, by = orow[i - 1].bytes + o->bytes;
            const double ig = by / (it * 1e-6) / 1e9;
            hk_table_row(stdout, "%lld|= %s (sum of the two)|%.1f|%.2f|%.1f|%.0f %%|%.3fx|%.1f",
                         (long long)o->dofs,
                         o->op == OP_CG_UPDATE ? "cg_spmv + cg_update" : "pipecg iteration", it,
                         by / 1e6, ig, 100 * ig / host_gbs, it / spmv, it - by / (host_gbs * 1e3));
        }
    }
    printf("\n(each op alone on the same csr matrix and vectors, the ops taking turns in 31 rounds "
           "of ~2 ms batches, median per call; MB: the least "
           "traffic, the matrix and each vector once, a write counted once; above its traffic: "
           "the time beyond those bytes at the copy bandwidth of this run)\n");
    /* GPU/CPU speedup of each method: best GPU format vs the CPU backend */
    if (gpu) {
        printf("\n");
        hk_table_head(stdout, "rlrrr", "DOFs|method|best GPU (format) ms/it|CPU ms/it|GPU speedup");
        for (int i = 0; i < R.n; i++) {
            if (strcmp(R.r[i].backend, "cpu")) continue;
            const cg_row *c = &R.r[i], *best = NULL;
            for (int k = 0; k < R.n; k++)
                if (!strcmp(R.r[k].backend, "cuda") && R.r[k].dofs == c->dofs &&
                    !strcmp(R.r[k].method, c->method) &&
                    (!best || R.r[k].ms_per_iter < best->ms_per_iter))
                    best = &R.r[k];
            if (best)
                hk_table_row(stdout, "%lld|%s|%.4f (%s)|%.4f|%.1fx", c->dofs, c->method,
                             best->ms_per_iter, best->format, c->ms_per_iter,
                             c->ms_per_iter / best->ms_per_iter);
        }
        printf("\n");
        hk_table_head(stdout, "rrrrl",
                      "nodes|pipecg via ops, sbell: direct ms/it|CUDA graph of %d its ms/it|"
                      "graph gain|%s direct / graph",
                      check_every, "||r||");
        for (int i = 0; i < ngr; i++)
            hk_table_row(stdout, "%d^3|%.4f|%.4f|%.2fx|%.6e / %.6e", gr[i].nodes, gr[i].direct,
                         gr[i].graph, gr[i].direct / gr[i].graph, gr[i].r1, gr[i].r2);
        printf("\n");
        hk_table_head(stdout, "rllrrr",
                      "nodes|fp64 SpMV|threads per block row|us|vs auto of the format|"
                      "vs cusparse-csr");
        for (int i = 0; i < ntr; i++) {
            double us_auto = NAN, us_cus = NAN;
            for (int k = 0; k < ntr; k++) {
                if (tr[k].nodes != tr[i].nodes) continue;
                if (tr[k].fmt == tr[i].fmt && tr[k].tpr == 0) us_auto = tr[k].us;
                if (tr[k].fmt == HK_FMT_CUSPARSE_CSR) us_cus = tr[k].us;
            }
            char t[16];
            if (tr[i].fmt == HK_FMT_CUSPARSE_CSR)
                snprintf(t, sizeof t, "-");
            else if (tr[i].tpr)
                snprintf(t, sizeof t, "%d", tr[i].tpr);
            else
                snprintf(t, sizeof t, "auto");
            hk_table_row(stdout, "%d^3|%s|%s|%.2f|%.2fx|%.2fx", tr[i].nodes,
                         hk_format_name(tr[i].fmt), t, tr[i].us, us_auto / tr[i].us,
                         us_cus / tr[i].us);
        }
    }

    if (bo.json) {
        if (hk_json_open(&j, bo.json)) goto done;
        hk_json_begin_object(&j, NULL);
        hk_json_string(&j, "bench", "cg");
        hk_json_int(&j, "iterations", iters);
        hk_json_number(&j, "copy_gbs", copy_gbs);
        hk_json_number(&j, "host_copy_gbs", host_gbs);
        hk_json_begin_array(&j, "cpu_spmv");
        for (int i = 0; i < ncr; i++) {
            hk_json_begin_object(&j, NULL);
            hk_json_int(&j, "dofs", cr[i].dofs);
            hk_json_string(&j, "format", hk_format_name(cr[i].fmt));
            hk_json_number(&j, "us", cr[i].us);
            hk_json_number(&j, "gbs", cr[i].gbs);
            hk_json_number(&j, "share_of_copy", cr[i].gbs / host_gbs);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_begin_array(&j, "cpu_ops");
        for (int i = 0; i < nor; i++) {
            hk_json_begin_object(&j, NULL);
            hk_json_int(&j, "dofs", orow[i].dofs);
            hk_json_string(&j, "op", cpu_op_name[orow[i].op]);
            hk_json_number(&j, "us", orow[i].us);
            hk_json_number(&j, "bytes", orow[i].bytes);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_begin_array(&j, "solves");
        for (int i = 0; i < R.n; i++) {
            hk_json_begin_object(&j, NULL);
            hk_json_int(&j, "dofs", R.r[i].dofs);
            hk_json_string(&j, "backend", R.r[i].backend);
            hk_json_string(&j, "method", R.r[i].method);
            hk_json_string(&j, "format", R.r[i].format);
            hk_json_number(&j, "ms_per_iter", R.r[i].ms_per_iter);
            hk_json_number(&j, "baseline_over_this", R.r[i].vs_base);
            hk_json_number(&j, "rnorm", R.r[i].rnorm);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_begin_array(&j, "graph");
        for (int i = 0; i < ngr; i++) {
            hk_json_begin_object(&j, NULL);
            hk_json_int(&j, "nodes", gr[i].nodes);
            hk_json_int(&j, "check_every", check_every);
            hk_json_number(&j, "direct_ms_per_iter", gr[i].direct);
            hk_json_number(&j, "graph_ms_per_iter", gr[i].graph);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_begin_array(&j, "spmv");
        for (int i = 0; i < ntr; i++) {
            hk_json_begin_object(&j, NULL);
            hk_json_int(&j, "nodes", tr[i].nodes);
            hk_json_string(&j, "format", hk_format_name(tr[i].fmt));
            hk_json_int(&j, "tpr", tr[i].tpr);
            hk_json_number(&j, "us", tr[i].us);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_end_object(&j);
        if (hk_json_close(&j)) goto done;
    }
    rc = 0;
    goto done;
error:
    fprintf(stderr, "hooke bench cg: %s\n", hk_error_message());
    rc = 1;
done:
    free(R.r);
    return rc;
}
