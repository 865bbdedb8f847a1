/* `hooke bench pcs`: every preconditioner with CG to a relative residual of 1e-8 on the
 * stiffness matrices of real cases (meshed and assembled as hooke run does): set-up time,
 * solve time, time to solution, iterations, the cost of one application in SpMVs, on the
 * chosen backend and on the CPU backend in the same run. Baselines printed beside each row:
 * the upload of the block CSR alone (set-up / upload) and cg+jacobi's time to solution on the
 * same matrix and backend (total / jacobi). The near-null space of pc=amg comes from the mesh's
 * node coordinates, as in hooke run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "bench.h"
#include "case.h"
#include "hk_impl.h"
#include "pc/pc_impl.h"
#include "peer_hypre.h"

#define PCS_MAX_PROBLEMS 16
#define PCS_MAX_PCS 16
#define PCS_MAX_SETS 8
#define PCS_MAX_METHODS 6
#define PCS_MAX_PEERS 4

typedef struct pcs_problem {
    const char *label;
    const char *file;
    int nsets;
    const char *sets[PCS_MAX_SETS];
    const char *gen; /* a generated matrix, "KIND:N" as hooke solve --generate, or NULL */
} pcs_problem;

typedef struct pcs_row {
    const char *problem, *pc, *backend, *method;
    long long dofs;
    int iterations;
    double phase_s[5]; /* set-up: check, upload, format, preconditioner, backend start */
    double update_phase_s[4]; /* the last update: values in, check, format, preconditioner */
    double upload_s, setup_s, solve_s, total_s, apply_spmv, true_res, jacobi_total_s;
    double spmv_s;   /* one SpMV of the fp64 operator */
    double update_s; /* hk_solver_update_values with the same K (values-only re-set-up) */
    int setups;      /* preconditioner set-ups of the solve (2: pc=amg fell back to fp64) */
    char note[192];
    double first_per_it_s; /* the first --method's solve time per iteration, same pc */
    double steady_s;       /* seconds per iteration between a quarter of the solve and its end */
    double first_steady_s; /* the same of the first --method, same pc */
    hk_reason reason;
    int failed;
    char error[160];
    int has_amg;       /* pc=amg: its hierarchy and set-up phases */
    hk_amg_stats amg;
    int peer; /* a --peer row: another library's solve of the same K and f */
} pcs_row;

static void pcs_usage(FILE *f)
{
    fprintf(
        f,
        "usage: hooke bench pcs [--backend auto|cpu|cuda] [--size small|medium|large]\n"
        "                       [--problem 'CASE.yaml KEY=VALUE ...']... [--generate KIND:N]...\n"
        "                       [--pcs LIST]\n"
        "                       [--method M[,M...]] [--no-cpu] [--cpu-max-dofs N]\n"
        "                       [--resident] [--peer 'hypre [KEY=VALUE ...]']...\n"
        "                       [--json FILE]\n\n"
        "Each preconditioner of --pcs (default jacobi,poly,fsai,amg; any of the library's; an\n"
        "item may add solver options after a space, --pcs 'amg,amg pc.amg.precision=fp64')\n"
        "with CG (or each method of --method, up to 6, each with its own options after a\n"
        "space: --method 'cg,pipecg pipecg.variant=paper') to 1e-8 on the stiffness matrix\n"
        "of each problem, meshed and assembled as hooke run does (KEY=VALUE as --set; of\n"
        "the case's solver keys, format.* and precision apply to every row, e.g.\n"
        "--problem 'cases/bracket/bracket.yaml solver.format=bsr').\n"
        "Default problems by --size:\n"
        "  small:  box hex8 12^3, box tet4 10^3, box hex8 40x4x4 (aspect 10:1:1), bracket\n"
        "  medium: box hex8 40^3, box tet4 30^3, box hex8 120x12x12, bracket size 0.0015\n"
        "  large:  box hex8 69^3, bracket size 0.0015, bracket size 0.001\n"
        "Columns: iterations, set-up / solve / total seconds, solve milliseconds per\n"
        "iteration and divided by the first method's with the same pc and backend (so\n"
        "--method cg,pipecg compares the two on one mesh), the same in the steady state\n"
        "(the wall clock at the residual tests, from a quarter of the iterations to the\n"
        "last: without the solve's start and end, which weigh on short solves), set-up\n"
        "divided by the upload of the block CSR alone, total divided by jacobi's total\n"
        "with the same method on the same matrix and backend, one preconditioner\n"
        "application in SpMV times, the true residual, the reason, then the values-only\n"
        "re-set-up (hk_solver_update_values with the same K) in seconds and over the\n"
        "set-up. Below each problem: the set-up's phases, and for amg its hierarchy,\n"
        "memory (bytes per DOF) and the phases of the set-up and of the re-set-up in\n"
        "seconds and in SpMVs of the fp64 operator. With a GPU backend every row is\n"
        "repeated on the CPU backend unless --no-cpu, for problems up to --cpu-max-dofs\n"
        "(default 800000) DOFs.\n"
        "--resident puts K and the node coordinates in the backend's memory before the\n"
        "clock, as hooke run's device assembly leaves them: the solver takes them with\n"
        "hk_solver_create_resident (no upload in the set-up; pc=amg frames and builds its\n"
        "rigid-body modes there) and the re-set-up gets its new values there too\n"
        "(hk_solver_update_values_resident; one resident copy, its value array refilled\n"
        "with K's values before each timed call, outside the clock).\n"
        "--peer 'hypre [KEY=VALUE ...]' (up to %d) adds a row per problem: hypre's\n"
        "BoomerAMG-PCG to the same 1e-8 on the same K and f in the same process (a hooke\n"
        "configured with -DHOOKE_HYPRE_DIR; its load into hypre in the set-up / upload\n"
        "column's divisor, one untimed set-up and solve first), the true residual computed\n"
        "here, and below the table its total over each hooke row's. Settings: strong,\n"
        "coarsen, interp, pmax, trunc, relax, sweeps, agg, agg_interp, agg_pmax, functions,\n"
        "max_levels, keep_transpose, rap2, vendor_spgemm, maxit, print (docs/BENCHMARKS.md,\n"
        "\"The hypre peer\").\n"
        "--generate KIND:N adds a generated matrix as hooke solve --generate makes it\n"
        "(elasticity3d, elasticity2d, poisson, convdiff; b = A times ones), e.g.\n"
        "  hooke bench pcs --method gmres --pcs ilu0,mlilu --generate convdiff:256\n",
        PCS_MAX_PEERS);
}

static const pcs_problem pcs_defaults[3][4] = {
    {{"box hex8 12^3", "cases/box/box.yaml", 1, {"geometry.generate.cells=[12,12,12]"}, NULL},
     {"box tet4 10^3",
      "cases/box/box.yaml",
      2,
      {"geometry.generate.cells=[10,10,10]", "geometry.generate.element=tet4"}, NULL},
     {"box hex8 40x4x4",
      "cases/box/box.yaml",
      2,
      {"geometry.generate.cells=[40,4,4]", "geometry.generate.size=[10,1,1]"}, NULL},
     {"bracket", "cases/bracket/bracket.yaml", 0, {NULL}, NULL}},
    {{"box hex8 40^3", "cases/box/box.yaml", 1, {"geometry.generate.cells=[40,40,40]"}, NULL},
     {"box tet4 30^3",
      "cases/box/box.yaml",
      2,
      {"geometry.generate.cells=[30,30,30]", "geometry.generate.element=tet4"}, NULL},
     {"box hex8 120x12x12",
      "cases/box/box.yaml",
      2,
      {"geometry.generate.cells=[120,12,12]", "geometry.generate.size=[10,1,1]"}, NULL},
     {"bracket 0.0015", "cases/bracket/bracket.yaml", 1, {"geometry.size=0.0015"}, NULL}},
    {{"box hex8 69^3", "cases/box/box.yaml", 1, {"geometry.generate.cells=[69,69,69]"}, NULL},
     {"bracket 0.0015", "cases/bracket/bracket.yaml", 1, {"geometry.size=0.0015"}, NULL},
     {"bracket 0.001", "cases/bracket/bracket.yaml", 1, {"geometry.size=0.001"}, NULL},
     {NULL, NULL, 0, {NULL}, NULL}},
};

typedef struct pcs_timing {
    hk_pc *pc;
    hk_mat *A;
    hk_vec *x, *y;
    const hk_backend_ops *be;
} pcs_timing;

static int pcs_apply_once(void *ctx)
{
    pcs_timing *t = ctx;
    HK_CALL(hk_pc_apply(t->pc, t->x, t->y));
    return t->be->sync();
}

typedef struct pcs_upload {
    const hk_backend_ops *be;
    const hk_bcsr *K;
} pcs_upload;

typedef struct pcs_update {
    hk_solver *s;
    const hk_bcsr *K;
} pcs_update;

static int pcs_update_once(void *ctx)
{
    pcs_update *u = ctx;
    return hk_solver_update_values(u->s, u->K);
}

/* The values-only re-set-up from new values already in the device's memory, `reps` times, as a
 * loop that updates repeatedly: one resident copy of K, its value array (the one the previous
 * update handed back) refilled with K's values before each call, outside the clock; the median
 * seconds. */
static int pcs_update_resident(hk_solver *s, const hk_backend_ops *be, const hk_bcsr *K, int reps,
                               double *seconds)
{
    double t[8];
    int ierr = 0;
    if (reps > 8) reps = 8;
    hk_resident_bcsr A;
    HK_CALL(hk_bench_resident_copy(be, K, &A));
    const size_t bytes = (size_t)A.nnzb * A.bs * A.bs * sizeof(double);
    for (int k = 0; k < reps; k++) {
        if (k) { /* the first call has the copy's values */
            HK_TRY(be->copy_to(A.val, K->val, bytes));
            HK_TRY(be->sync());
        }
        const double t0 = hk_time();
        HK_TRY(hk_solver_update_values_resident(s, &A));
        t[k] = hk_time() - t0;
    }
    *seconds = hk_bench_median(t, reps);
fail:
    hk_resident_bcsr_free(&A);
    return ierr;
}

static int pcs_upload_once(void *ctx)
{
    pcs_upload *u = ctx;
    hk_bmat Kd = {0};
    HK_CALL(hk_bmat_upload(u->be, u->K, &Kd));
    int ierr = u->be->sync();
    hk_bmat_free(&Kd);
    return ierr;
}

/* A generated matrix as a run: K, b = K times ones, and for the elasticity kinds the grid's
 * nodes as the mesh's, so that pc=amg gets its rigid-body modes as for a case. */
static int pcs_generated(const char *spec, hk_run *r)
{
    double *coords = NULL;
    int dim = 0;
    if (hk_app_generate(spec, "hooke bench pcs", &r->sys.K, &coords, &dim)) return -1;
    const hk_bcsr *K = &r->sys.K;
    r->sys.f = hk_bench_rhs_ones(K);
    if (!r->sys.f) {
        free(coords);
        fprintf(stderr, "hooke bench pcs: out of memory for %s\n", spec);
        return -1;
    }
    r->sys.ndof = K->nbrows * K->bs;
    r->sys.dim = K->bs;
    if (coords) {
        r->mesh.dim = dim;
        r->mesh.nnodes = K->nbrows;
        r->mesh.coords = calloc((size_t)K->nbrows * 3, sizeof *r->mesh.coords);
        if (!r->mesh.coords) {
            free(coords);
            return -1;
        }
        for (int64_t i = 0; i < K->nbrows; i++)
            for (int d = 0; d < dim; d++)
                r->mesh.coords[3 * i + d] = coords[i * dim + d];
        free(coords);
    }
    return 0;
}

/* The storage options of a problem's case (its solver's format.* keys and precision, as
 * "key=value ..." in out), which every row of that problem takes; its method and pc are the
 * bench's. */
static void case_storage_options(hk_case *c, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < c->nsolver_keys; i++) {
        const char *key = c->solver_keys[i], *val = NULL;
        if (strncmp(key, "format", 6) && strcmp(key, "precision")) continue;
        if (hk_options_get_string(c->solver, key, &val) || !val) continue;
        const int n = snprintf(out + len, cap - len, " %s=%s", key, val);
        if (n < 0 || (size_t)n >= cap - len) break;
        len += (size_t)n;
    }
}

/* The wall clock at every residual test of a solve (the solver's monitor; the host has just
 * read the residual, so the work up to that iteration is done). */
typedef struct pcs_clock {
    int n, cap;
    int *it;
    double *t;
} pcs_clock;

static void pcs_clock_tick(int it, double rnorm, void *ctx)
{
    (void)rnorm;
    pcs_clock *c = ctx;
    if (c->n >= c->cap) {
        const int cap = c->cap ? 2 * c->cap : 1024;
        int *ni = realloc(c->it, (size_t)cap * sizeof *ni);
        if (ni) c->it = ni;
        double *nt = realloc(c->t, (size_t)cap * sizeof *nt);
        if (nt) c->t = nt;
        if (!ni || !nt) return;
        c->cap = cap;
    }
    c->it[c->n] = it;
    c->t[c->n++] = hk_time();
}

/* Seconds per iteration in the steady state: from the first test at or past a quarter of the
 * iterations to the first test of the last iteration (a confirmation on the true residual
 * tests the same iteration again), so the set-up of the iteration (first steps, graph
 * recording) and the end of the solve are left out. NaN with fewer than 10 iterations between
 * the two. */
static double pcs_clock_steady(const pcs_clock *c)
{
    if (c->n < 2) return NAN;
    int last = c->it[c->n - 1], a = -1, b = -1;
    for (int i = 0; i < c->n; i++)
        if (c->it[i] > last) last = c->it[i];
    for (int i = 0; i < c->n && a < 0; i++)
        if (c->it[i] >= last / 4 && c->it[i] > 0) a = i;
    for (int i = 0; i < c->n && b < 0; i++)
        if (c->it[i] == last) b = i;
    if (a < 0 || b <= a || c->it[b] - c->it[a] < 10) return NAN;
    return (c->t[b] - c->t[a]) / (c->it[b] - c->it[a]);
}

/* One solve: create (set-up), solve from x = 0, time one application against one SpMV, then
 * the values-only re-set-up; pc: a name, optionally followed by solver options ("amg
 * pc.amg.degree=3"); extra: more options ("key=value ...", may be empty). */
static int pcs_solve(const hk_run *r, const char *backend, const char *method, const char *pc,
                     const char *extra, int resident, pcs_row *row)
{
    int ierr;
    hk_options *o = NULL;
    hk_solver *s = NULL;
    hk_vec *x = NULL, *y = NULL;
    double *u = NULL;
    char text[768];
    hk_result res;
    const hk_bcsr *K = &r->sys.K;
    double *coords = NULL, *coords_d = NULL;
    const hk_backend *bh = NULL;
    pcs_clock clk = {0, 0, NULL, NULL};
    hk_resident_bcsr A = {0};
    snprintf(text, sizeof text, "backend=%s method=%s pc=%s tol=1e-8 maxit=20000%s", backend,
             method, pc, extra);
    HK_TRY(hk_options_create(&o));
    HK_TRY(hk_options_parse(o, text));
    /* The upload alone first, so that it and the solver's set-up below meet the device's
     * allocator in the same (warm) state: the first large allocation of a process costs as much
     * again as the copy, and whichever ran first would pay it. */
    HK_TRY(hk_backend_get(backend, &bh));
    {
        pcs_upload up = {bh, K};
        HK_TRY(hk_bench_time(pcs_upload_once, &up, 1, 3, 0.2, &row->upload_s));
    }
    hk_nearnull nn;
    HK_TRY(hk_run_nearnull(r, &nn, &coords));
    if (resident) { /* K and the node coordinates in the device's memory before the clock, as
                     * a device assembly leaves them */
        HK_TRY(hk_bench_resident_copy(bh, K, &A));
        if (nn.coords) {
            const size_t bytes = (size_t)K->nbrows * nn.dim * sizeof(double);
            HK_TRY(hk_backend_alloc(bh, bytes, (void **)&coords_d));
            HK_TRY(bh->copy_to(coords_d, nn.coords, bytes));
            HK_TRY(bh->sync());
            nn.coords = coords_d, nn.coords_be = bh;
        }
        HK_TRY(hk_solver_create_resident(&A, &nn, o, &s));
    } else
        HK_TRY(hk_solver_create_nearnull(K, &nn, o, &s));
    HK_TRY(hk_calloc((size_t)r->sys.ndof, sizeof *u, &u));
    hk_solver_set_monitor(s, pcs_clock_tick, &clk);
    HK_TRY(hk_solver_solve(s, r->sys.f, u, &res));
    hk_solver_set_monitor(s, NULL, NULL);
    row->steady_s = pcs_clock_steady(&clk);
    row->iterations = res.iterations;
    row->setup_s = res.setup_seconds;
    row->phase_s[0] = res.setup_check_seconds;
    row->phase_s[1] = res.setup_upload_seconds;
    row->phase_s[2] = res.setup_format_seconds;
    row->phase_s[3] = res.setup_pc_seconds;
    row->phase_s[4] = res.setup_start_seconds;
    row->solve_s = res.solve_seconds;
    row->total_s = res.setup_seconds + res.solve_seconds;
    row->true_res = res.true_residual;
    row->reason = res.reason;
    row->setups = res.setups;
    snprintf(row->note, sizeof row->note, "%s", res.note);

    /* one application against one SpMV of the operator, on the same vectors */
    pcs_timing t = {hk_solver_get_pc(s), hk_solver_get_mat(s), NULL, NULL, NULL};
    t.be = t.A->be;
    HK_TRY(hk_vec_create(t.be, r->sys.ndof, HK_FP64, &x));
    HK_TRY(hk_vec_create(t.be, r->sys.ndof, HK_FP64, &y));
    HK_TRY(hk_vec_upload(x, r->sys.f));
    t.x = x;
    t.y = y;
    double ta = 0, tm = 0;
    HK_TRY(hk_bench_time(pcs_apply_once, &t, 1, 3, 0.2, &ta));
    HK_TRY(hk_bench_time_spmv(t.A, x, y, 1, 3, 0.2, &tm));
    row->apply_spmv = tm > 0 ? ta / tm : NAN;
    row->spmv_s = tm;
    /* the values-only re-set-up with the same K (a new K of the same pattern costs the same) */
    if (resident)
        HK_TRY(pcs_update_resident(s, bh, K, 3, &row->update_s));
    else {
        pcs_update up = {s, K};
        HK_TRY(hk_bench_time(pcs_update_once, &up, 1, 3, 0.0, &row->update_s));
    }
    hk_solver_update_phases(s, row->update_phase_s);
    row->has_amg = hk_pc_amg_info(hk_solver_get_pc(s), &row->amg) == 0;
    hk_error_clear();

fail:
    if (A.be) hk_resident_bcsr_free(&A);
    hk_backend_free(bh, coords_d);
    free(clk.it);
    free(clk.t);
    hk_vec_destroy(x);
    hk_vec_destroy(y);
    free(u);
    free(coords);
    hk_solver_destroy(s);
    hk_options_destroy(o);
    return ierr;
}

/* A --peer row: hypre's BoomerAMG-PCG on the same K and f (one untimed set-up and solve
 * first, inside the peer), its true residual computed here as hooke's rows' is. */
static int pcs_peer(const hk_run *r, const hk_hypre_settings *hs, pcs_row *row)
{
    int ierr = 0;
    const int64_t n = r->sys.ndof;
    double *u = NULL, *y = NULL;
    hk_peer_result pr;
    HK_TRY(hk_calloc((size_t)n, sizeof *u, &u));
    HK_TRY(hk_calloc((size_t)n, sizeof *y, &y));
    HK_TRY(hk_peer_hypre_solve(&r->sys.K, r->sys.f, hs, 1e-8, u, &pr));
    hk_bcsr_spmv(&r->sys.K, u, y);
    double rr = 0, ff = 0;
    for (int64_t i = 0; i < n; i++) {
        const double d = r->sys.f[i] - y[i];
        rr += d * d;
        ff += r->sys.f[i] * r->sys.f[i];
    }
    row->true_res = ff > 0 ? sqrt(rr / ff) : sqrt(rr);
    row->iterations = pr.iterations;
    row->setup_s = pr.setup_s;
    row->solve_s = pr.solve_s;
    row->total_s = pr.setup_s + pr.solve_s;
    row->upload_s = pr.load_s;
    row->setups = 1;
    /* converged only when the true residual says so, as for hooke's own rows */
    row->reason = !pr.converged           ? HK_DIVERGED_MAXIT
                  : row->true_res <= 1e-8 ? HK_CONVERGED_RTOL
                                          : HK_DIVERGED_TRUE_RESIDUAL;
    row->steady_s = row->apply_spmv = row->update_s = NAN;
fail:
    free(u);
    free(y);
    return ierr;
}

/* Below the table: each peer's time to solution over each hooke row's of the problem. */
static void pcs_print_peers(const pcs_row *rows, int first, int nnew, int npeer)
{
    for (int q = first + nnew; q < first + nnew + npeer; q++) {
        const pcs_row *p = &rows[q];
        if (p->failed) continue;
        printf("\n%s (%s): set-up + solve %.3f s, %s; over hooke's rows:", p->pc, p->backend,
               p->total_s, hk_reason_name(p->reason));
        for (int i = first; i < first + nnew; i++)
            if (!rows[i].failed)
                printf("%s %s %s %s %.2fx", i > first ? "," : "", rows[i].pc, rows[i].backend,
                       rows[i].method, p->total_s / rows[i].total_s);
        printf("\n");
    }
}

/* The AMG hierarchy, its memory and where its set-up and re-set-up time went, in seconds and
 * in SpMVs of the fp64 operator (below the problem's table). */
static void pcs_print_phases(const char *what, const hk_amg_phases *p, double spmv)
{
    const double v[10] = {p->total,    p->nearnull,    p->strength, p->aggregate, p->tentative,
                          p->smoother, p->prolongator, p->galerkin, p->matrices,  p->coarse};
    static const char *const name[10] = {
        "total",    "near-null",   "strength", "aggregation",    "tentative",
        "smoother", "prolongator", "Galerkin", "level matrices", "coarse solve"};
    printf("  %s:", what);
    for (int i = 0; i < 10; i++)
        printf("%s %s %.4f s (%.0f SpMV)", i ? "," : "", name[i], v[i],
               spmv > 0 ? v[i] / spmv : NAN);
    printf("\n");
}

static void pcs_print_amg(const pcs_row *w)
{
    const hk_amg_stats *a = &w->amg;
    printf("\n%s on %s: %d levels (", w->pc, w->backend, a->nlevels);
    for (int l = 0; l < a->nlevels; l++)
        printf("%s%lld", l ? ", " : "", (long long)a->rows[l]);
    printf(" rows), operator complexity %.2f, %s levels%s; %.0f bytes/DOF (%.1f MB: matrices "
           "%.1f, transfer %.1f, smoother %.1f, vectors %.1f, coarse %.1f, kept for re-set-up "
           "%.1f); one fp64 SpMV %.3f ms\n",
           a->op_complexity, a->fp32 ? "fp32" : "fp64", a->stalled_at != 0 ? " (fp32 stalled)" : "",
           a->bytes_per_dof, a->bytes / 1e6, a->bytes_matrices / 1e6, a->bytes_transfer / 1e6,
           a->bytes_smoother / 1e6, a->bytes_vectors / 1e6, a->bytes_coarse / 1e6,
           a->bytes_reuse / 1e6, 1e3 * w->spmv_s);
    pcs_print_phases("set-up", &a->setup, w->spmv_s);
    pcs_print_phases(a->last_update_kept ? "values-only re-set-up (P, R kept)"
                                         : "values-only re-set-up",
                     &a->update, w->spmv_s);
    if (w->note[0]) printf("  note: %s\n", w->note);
}

/* Solve seconds per iteration (NaN for a solve of no iteration). */
static double pcs_per_it(const pcs_row *w)
{
    return w->iterations > 0 ? w->solve_s / w->iterations : NAN;
}

static void pcs_print_row(const pcs_row *w)
{
    if (w->failed) {
        hk_table_cell(stdout, "%s", w->pc);
        hk_table_cell(stdout, "%s", w->backend);
        hk_table_cell(stdout, "%s", w->method);
        hk_table_dashes(stdout, 12);
        hk_table_cell(stdout, "%s", w->error);
        hk_table_dashes(stdout, 2);
        hk_table_end(stdout);
        return;
    }
    hk_table_row(
        stdout, "%s|%s|%s|%d|%.3f|%.3f|%.3f|%.4f|%.2f|%.4f|%.2f|%.2f|%.2f|%.1f|%.1e|%s|%.3f|%.2f",
        w->pc, w->backend, w->method, w->iterations, w->setup_s, w->solve_s, w->total_s,
        1e3 * pcs_per_it(w), pcs_per_it(w) / w->first_per_it_s, 1e3 * w->steady_s,
        w->steady_s / w->first_steady_s, w->upload_s > 0 ? w->setup_s / w->upload_s : NAN,
        w->jacobi_total_s > 0 ? w->total_s / w->jacobi_total_s : NAN, w->apply_spmv, w->true_res,
        hk_reason_name(w->reason), w->update_s, w->setup_s > 0 ? w->update_s / w->setup_s : NAN);
}

int hk_bench_pcs(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    pcs_problem probs[PCS_MAX_PROBLEMS];
    int nprob = 0, no_cpu = 0, resident = 0, rc = 1, npeer = 0;
    const char *peers[PCS_MAX_PEERS];
    hk_hypre_settings peer_settings[PCS_MAX_PEERS];
    long long cpu_max = 800000;
    const char *pc_list = "jacobi,poly,fsai,amg", *method_list = "cg";
    char *owned[PCS_MAX_PROBLEMS] = {0};
    for (int i = 1; i < argc;) {
        int r = hk_bench_option(argc, argv, &i, &bo, pcs_usage);
        if (r < 0) return r == HK_BENCH_HELP ? 0 : 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "--problem") && i + 1 < argc) {
            if (nprob == PCS_MAX_PROBLEMS) {
                fprintf(stderr, "hooke bench pcs: at most %d --problem\n", PCS_MAX_PROBLEMS);
                return 2;
            }
            /* "FILE KEY=VALUE ...": split on spaces (the copy is kept for the labels) */
            char *copy = strdup(argv[i + 1]);
            if (!copy) return 1;
            owned[nprob] = copy;
            pcs_problem *p = &probs[nprob];
            memset(p, 0, sizeof *p);
            p->label = argv[i + 1];
            for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
                if (!p->file) {
                    p->file = tok;
                } else if (p->nsets < PCS_MAX_SETS) {
                    p->sets[p->nsets++] = tok;
                } else {
                    fprintf(stderr, "hooke bench pcs: at most %d KEY=VALUE per --problem\n",
                            PCS_MAX_SETS);
                    return 2;
                }
            }
            if (!p->file) {
                fprintf(stderr, "hooke bench pcs: --problem needs a case file\n");
                return 2;
            }
            nprob++;
            i += 2;
        } else if (!strcmp(a, "--generate") && i + 1 < argc) {
            if (nprob == PCS_MAX_PROBLEMS) {
                fprintf(stderr, "hooke bench pcs: at most %d --problem and --generate\n",
                        PCS_MAX_PROBLEMS);
                return 2;
            }
            memset(&probs[nprob], 0, sizeof probs[nprob]);
            probs[nprob].label = probs[nprob].gen = argv[i + 1];
            nprob++;
            i += 2;
        } else if (!strcmp(a, "--pcs") && i + 1 < argc) {
            pc_list = argv[i + 1];
            i += 2;
        } else if (!strcmp(a, "--method") && i + 1 < argc) {
            method_list = argv[i + 1];
            i += 2;
        } else if (!strcmp(a, "--cpu-max-dofs") && i + 1 < argc) {
            cpu_max = atoll(argv[i + 1]);
            i += 2;
        } else if (!strcmp(a, "--resident")) {
            resident = 1;
            i++;
        } else if (!strcmp(a, "--peer") && i + 1 < argc) {
            /* checked here, before any meshing: the settings, then whether hypre is built in */
            char desc[320];
            if (npeer == PCS_MAX_PEERS) {
                fprintf(stderr, "hooke bench pcs: at most %d --peer\n", PCS_MAX_PEERS);
                return 2;
            }
            if (hk_peer_hypre_parse(argv[i + 1], &peer_settings[npeer])) {
                fprintf(stderr, "hooke bench pcs: %s\n", hk_error_message());
                return 2;
            }
            if (!hk_peer_hypre_built(desc, sizeof desc)) {
                fprintf(stderr, "hooke bench pcs: %s\n", desc);
                return 2;
            }
            peers[npeer++] = argv[i + 1];
            i += 2;
        } else if (!strcmp(a, "--no-cpu")) {
            no_cpu = 1;
            i++;
        } else {
            fprintf(stderr,
                    "hooke bench pcs: unknown or incomplete option '%s' (hooke bench pcs "
                    "--help)\n",
                    a);
            return 2;
        }
    }
    if (!nprob)
        for (int k = 0; k < 4 && pcs_defaults[bo.size][k].file; k++)
            probs[nprob++] = pcs_defaults[bo.size][k];

    /* the preconditioners (each "NAME [KEY=VALUE ...]"), checked by name before any work */
    const char *pcs[PCS_MAX_PCS];
    int npc = 0;
    char pcbuf[1024];
    snprintf(pcbuf, sizeof pcbuf, "%s", pc_list);
    for (char *tok = strtok(pcbuf, ","); tok && npc < PCS_MAX_PCS; tok = strtok(NULL, ",")) {
        while (*tok == ' ')
            tok++;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(tok, " "), tok);
        if (!hk_pc_type_find(name)) {
            fprintf(stderr, "hooke bench pcs: unknown preconditioner '%s' in --pcs; they are",
                    name);
            for (int k = 0; hk_pc_types[k]; k++)
                fprintf(stderr, "%s %s", k ? "," : "", hk_pc_types[k]->name);
            fprintf(stderr, "\n");
            return 2;
        }
        pcs[npc++] = tok;
    }
    /* the methods, checked by name before any work */
    const char *methods[PCS_MAX_METHODS];
    int nmeth = 0;
    char mbuf[256];
    snprintf(mbuf, sizeof mbuf, "%s", method_list);
    for (char *tok = strtok(mbuf, ","); tok; tok = strtok(NULL, ",")) {
        /* "NAME key=value ...": the name is the first word, the options go to the solver */
        while (*tok == ' ')
            tok++;
        const size_t len = strcspn(tok, " ");
        if (nmeth == PCS_MAX_METHODS) {
            fprintf(stderr, "hooke bench pcs: at most %d methods in --method\n",
                    PCS_MAX_METHODS);
            return 2;
        }
        int known = 0;
        for (int k = 0; hk_ksp_types[k]; k++)
            known |= strlen(hk_ksp_types[k]->name) == len &&
                     !strncmp(hk_ksp_types[k]->name, tok, len);
        if (!known) {
            fprintf(stderr, "hooke bench pcs: unknown method '%.*s' in --method; they are",
                    (int)len, tok);
            for (int k = 0; hk_ksp_types[k]; k++)
                fprintf(stderr, "%s %s", k ? "," : "", hk_ksp_types[k]->name);
            fprintf(stderr, "\n");
            return 2;
        }
        methods[nmeth++] = tok;
    }
    if (!nmeth) {
        fprintf(stderr, "hooke bench pcs: --method '%s' names no method\n", method_list);
        return 2;
    }
    const hk_backend *be;
    if (hk_bench_backend("hooke bench pcs", bo.backend, &be)) return 2;
    const char *bname = hk_backend_name(be);
    const int gpu = strcmp(bname, "cpu") != 0;

    pcs_row *rows = calloc((size_t)nprob * (npc * 2 * nmeth + npeer), sizeof *rows);
    int nrows = 0;
    hk_json j = {0};
    if (!rows) goto done;
    printf("## hooke bench pcs: %s to 1e-8 on assembled cases and generated matrices\n\n",
           method_list);
    hk_backend_describe(be, stdout);
    char peer_desc[320] = "";
    if (npeer) {
        hk_peer_hypre_built(peer_desc, sizeof peer_desc);
        printf("peer: %s\n", peer_desc);
    }
    const char *peer_backend = strstr(peer_desc, "CUDA") ? "hypre-cuda" : "hypre-host";
    for (int p = 0; p < nprob; p++) {
        hk_case c;
        hk_run r;
        memset(&r, 0, sizeof r);
        memset(&c, 0, sizeof c);
        if (probs[p].gen) {
            if (pcs_generated(probs[p].gen, &r)) {
                hk_run_free(&r);
                goto done;
            }
        } else {
            if (hk_case_load(probs[p].file, probs[p].nsets, probs[p].sets, &c)) {
                fprintf(stderr, "hooke bench pcs: %s\n", hk_error_message());
                goto done;
            }
            hk_run_opts ro = {.quiet = 1};
            if (hk_run_assemble(&c, &ro, &r)) {
                fprintf(stderr, "hooke bench pcs: %s: %s\n", probs[p].label,
                        hk_error_message());
                hk_run_free(&r);
                hk_case_free(&c);
                goto done;
            }
        }
        char extra[512] = "";
        if (!probs[p].gen) case_storage_options(&c, extra, sizeof extra);
        const long long dofs = (long long)r.sys.ndof;
        printf("\n### %s: %lld DOFs, %lld nonzeros, mesh %.2f s, assembly %.2f s\n\n",
               probs[p].label, dofs,
               (long long)(r.sys.K.rowptr[r.sys.K.nbrows] * r.sys.K.bs * r.sys.K.bs),
               r.t_mesh, r.t_assembly);
        hk_table_head(stdout, "lllrrrrrrrrrrrrlrr",
                      "pc|backend|method|iterations|set-up s|solve s|total s|ms / it|per it / %s|"
                      "steady ms / it|steady / %s|set-up / upload|total / jacobi|apply in SpMVs|"
                      "true residual|reason|update s|update / set-up",
                      methods[0], methods[0]);
        const int nbe = gpu && !no_cpu && dofs <= cpu_max ? 2 : 1;
        const int first = nrows, nnew = nbe * nmeth * npc;
        for (int b = 0; b < nbe; b++) {
            const char *bn = b ? "cpu" : bname;
            double first_per_it[PCS_MAX_PCS], first_steady[PCS_MAX_PCS];
            for (int mi = 0; mi < nmeth; mi++) {
                double jac_total = 0;
                for (int k = 0; k < npc; k++) {
                    pcs_row *w = &rows[nrows++];
                    w->problem = probs[p].label;
                    w->pc = pcs[k];
                    w->backend = bn;
                    w->method = methods[mi];
                    w->dofs = dofs;
                    if (pcs_solve(&r, bn, methods[mi], pcs[k], extra, resident, w)) {
                        w->failed = 1;
                        snprintf(w->error, sizeof w->error, "%s", hk_error_message());
                        hk_error_clear();
                    } else if (!strcmp(pcs[k], "jacobi")) {
                        jac_total = w->total_s;
                    }
                    if (mi == 0) {
                        first_per_it[k] = w->failed ? NAN : pcs_per_it(w);
                        first_steady[k] = w->failed ? NAN : w->steady_s;
                    }
                    w->first_per_it_s = first_per_it[k];
                    w->first_steady_s = first_steady[k];
                    w->jacobi_total_s = jac_total;
                    pcs_print_row(w);
                }
            }
        }
        for (int q = 0; q < npeer; q++) {
            pcs_row *w = &rows[nrows++];
            w->problem = probs[p].label;
            w->pc = peers[q];
            w->backend = peer_backend;
            w->method = "cg";
            w->dofs = dofs;
            w->peer = 1;
            if (pcs_peer(&r, &peer_settings[q], w)) {
                w->failed = 1;
                snprintf(w->error, sizeof w->error, "%s", hk_error_message());
                hk_error_clear();
            }
            w->first_per_it_s = w->first_steady_s = NAN;
            for (int i = first; i < first + nnew; i++) /* jacobi's on the first backend */
                if (!rows[i].failed && !strcmp(rows[i].pc, "jacobi") &&
                    !strcmp(rows[i].backend, bname) && rows[i].method == methods[0])
                    w->jacobi_total_s = rows[i].total_s;
            pcs_print_row(w);
        }
        pcs_print_peers(rows, first, nnew, npeer);
        printf("\nset-up phases (s: backend start, upload, check of K on the backend, format "
               "build, preconditioner; the upload alone, timed apart: set-up / upload's "
               "divisor):\n");
        for (int i = first; i < first + nnew; i++)
            if (!rows[i].failed)
                printf("  %s %s %s: %.4f, %.4f, %.4f, %.4f, %.4f; upload alone %.4f\n",
                       rows[i].pc, rows[i].backend, rows[i].method, rows[i].phase_s[4], rows[i].phase_s[1],
                       rows[i].phase_s[0], rows[i].phase_s[2], rows[i].phase_s[3],
                       rows[i].upload_s);
        printf("\nthe last values-only re-set-up's phases (s: the new values into the solver's "
               "K, their check (0: inside the rebuild), format rebuild, preconditioner):\n");
        for (int i = first; i < first + nnew; i++)
            if (!rows[i].failed)
                printf("  %s %s %s: %.4f, %.4f, %.4f, %.4f\n", rows[i].pc, rows[i].backend,
                       rows[i].method, rows[i].update_phase_s[0], rows[i].update_phase_s[1],
                       rows[i].update_phase_s[2], rows[i].update_phase_s[3]);
        for (int i = first; i < first + nnew; i++)
            if (!rows[i].failed && rows[i].has_amg) pcs_print_amg(&rows[i]);
        hk_run_free(&r);
        if (!probs[p].gen) hk_case_free(&c);
    }
    if (bo.json) {
        if (hk_json_open(&j, bo.json)) goto done;
        hk_json_begin_object(&j, NULL);
        hk_json_string(&j, "bench", "pcs");
        hk_json_string(&j, "backend", bname);
        hk_json_string(&j, "methods", method_list);
        hk_json_number(&j, "tol", 1e-8);
        hk_json_begin_array(&j, "solves");
        for (int i = 0; i < nrows; i++) {
            const pcs_row *w = &rows[i];
            hk_json_begin_object(&j, NULL);
            hk_json_string(&j, "problem", w->problem);
            hk_json_int(&j, "dofs", w->dofs);
            hk_json_string(&j, "pc", w->pc);
            hk_json_string(&j, "backend", w->backend);
            hk_json_string(&j, "method", w->method);
            if (w->peer) hk_json_int(&j, "peer", 1);
            if (w->failed) {
                hk_json_string(&j, "error", w->error);
            } else {
                hk_json_int(&j, "iterations", w->iterations);
                hk_json_number(&j, "setup_s", w->setup_s);
                hk_json_number(&j, "solve_s", w->solve_s);
                hk_json_number(&j, "total_s", w->total_s);
                hk_json_number(&j, "per_iteration_s", pcs_per_it(w));
                hk_json_number(&j, "per_iteration_vs_first_method",
                               pcs_per_it(w) / w->first_per_it_s);
                hk_json_number(&j, "steady_per_iteration_s", w->steady_s);
                hk_json_number(&j, "steady_vs_first_method", w->steady_s / w->first_steady_s);
                hk_json_number(&j, "upload_s", w->upload_s);
                hk_json_number(&j, "setup_check_s", w->phase_s[0]);
                hk_json_number(&j, "setup_upload_s", w->phase_s[1]);
                hk_json_number(&j, "setup_format_s", w->phase_s[2]);
                hk_json_number(&j, "setup_pc_s", w->phase_s[3]);
                hk_json_number(&j, "setup_start_s", w->phase_s[4]);
                hk_json_number(&j, "update_s", w->update_s);
                hk_json_number(&j, "spmv_s", w->spmv_s);
                hk_json_int(&j, "setups", w->setups);
                if (w->note[0]) hk_json_string(&j, "note", w->note);
                hk_json_number(&j, "jacobi_total_s", w->jacobi_total_s);
                hk_json_number(&j, "apply_in_spmvs", w->apply_spmv);
                hk_json_number(&j, "true_residual", w->true_res);
                hk_json_string(&j, "reason", hk_reason_name(w->reason));
                if (w->has_amg) {
                    const hk_amg_stats *a = &w->amg;
                    hk_json_begin_object(&j, "amg");
                    hk_json_int(&j, "levels", a->nlevels);
                    hk_json_number(&j, "operator_complexity", a->op_complexity);
                    hk_json_begin_array(&j, "rows");
                    for (int l = 0; l < a->nlevels; l++)
                        hk_json_int(&j, NULL, a->rows[l]);
                    hk_json_end_array(&j);
                    hk_json_string(&j, "precision", a->fp32 ? "fp32" : "fp64");
                    hk_json_number(&j, "stalled_at", a->stalled_at);
                    hk_json_number(&j, "bytes", (double)a->bytes);
                    hk_json_number(&j, "bytes_per_dof", a->bytes_per_dof);
                    hk_json_number(&j, "bytes_matrices", (double)a->bytes_matrices);
                    hk_json_number(&j, "bytes_transfer", (double)a->bytes_transfer);
                    hk_json_number(&j, "bytes_smoother", (double)a->bytes_smoother);
                    hk_json_number(&j, "bytes_vectors", (double)a->bytes_vectors);
                    hk_json_number(&j, "bytes_coarse", (double)a->bytes_coarse);
                    hk_json_number(&j, "bytes_reuse", (double)a->bytes_reuse);
                    hk_json_int(&j, "update_keeps_p", a->last_update_kept);
                    const hk_amg_phases *ph[2] = {&a->setup, &a->update};
                    for (int q = 0; q < 2; q++) {
                        hk_json_begin_object(&j, q ? "update" : "setup");
                        hk_json_number(&j, "nearnull_s", ph[q]->nearnull);
                        hk_json_number(&j, "strength_s", ph[q]->strength);
                        hk_json_number(&j, "aggregate_s", ph[q]->aggregate);
                        hk_json_number(&j, "tentative_s", ph[q]->tentative);
                        hk_json_number(&j, "smoother_s", ph[q]->smoother);
                        hk_json_number(&j, "prolongator_s", ph[q]->prolongator);
                        hk_json_number(&j, "galerkin_s", ph[q]->galerkin);
                        hk_json_number(&j, "matrices_s", ph[q]->matrices);
                        hk_json_number(&j, "coarse_s", ph[q]->coarse);
                        hk_json_number(&j, "total_s", ph[q]->total);
                        hk_json_end_object(&j);
                    }
                    hk_json_end_object(&j);
                }
            }
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_end_object(&j);
        if (hk_json_close(&j)) goto done;
    }
    rc = 0;
done:
    for (int p = 0; p < PCS_MAX_PROBLEMS; p++)
        free(owned[p]);
    free(rows);
    return rc;
}
