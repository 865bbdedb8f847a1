/* `hooke bench scale`: weak and strong scaling of distributed runs (docs/parallel.md), launched
 * under mpirun (mpirun -np 4 hooke bench scale; scripts/bench-scale.sh runs -np 1, 2 and 4 and
 * collects the JSON). Every figure of P processes stands beside its one-process baseline
 * measured in the same run: rank 0 alone solves (runs) the one-process problem while the others
 * wait, then all P processes solve the distributed one.
 *
 * Solve times are medians of 3 solves after a warm-up (1 with --size large).
 *
 * Solver series (3D elasticity of hexahedra, hk_gen_elasticity3d, the processes' slabs of cell
 * layers stacked along z: rows in contiguous blocks): for each method, set-up, solve, iterations
 * and time per iteration of
 *   weak:      n x n x nP cells on P processes (a P-times longer beam) against n x n x n on one
 *              (efficiency T1 / TP),
 *   weak-cube: an m x m x m cube on P processes, m the multiple of P whose cube is nearest
 *              P n^3 (the same shape refined), against n x n x n on one (efficiency per DOF a
 *              process: (T1 / DOFs1) / (TP / (DOFsP / P))),
 *   strong:    n x n x nP cells on P processes against the same on one (speedup T1 / TP).
 * Both weak series compare with one one-process baseline a method, measured once.
 * Run series (weak, the whole hooke run of cases/box/box.yaml, generated cells c x c x cP, or a
 * cube of m x m x m with m from c as above, on P processes against c x c x c on one): end to
 * end, mesh to output.
 * Every row names the transport the P processes used (dist.comm: nccl or mpi; --comm, which
 * may name several, each series then run with each: mpi,nccl compares both in one call). With
 * nccl the solver series' processes make the run's NCCL communicator once, before the clocks
 * (hk_dist_comm_prepare: as hooke run makes it while meshing), its start printed apart; each
 * whole run makes its own while it meshes.
 * --layer: the P processes' solvers take the distributed layer even on one process
 * (dist.layer=always): at -np 1 the weak row compares the one-process solver with the layer
 * alone, with no message, which is what the layer itself costs.
 * --resident: each K and the grid's coordinates in the backend's memory before the clock,
 * handed over as hooke run's device assembly hands them over (hk_solver_create_resident on
 * one process; hk_solver_create_dist_device on P, the rows in the part's own columns). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "case.h"
#include "harness.h"
#include "hk_impl.h"

static void scale_usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np P hooke bench scale [options]\n\n"
               "Weak and strong scaling on P processes (one per GPU), each figure beside the\n"
               "one-process baseline measured in the same run (docs/parallel.md). P = 1 gives\n"
               "the baselines alone; scripts/bench-scale.sh runs P = 1, 2, 4.\n\n"
               "  --n N              cells per side of a process's slab (default by --size: 16,\n"
               "                     40, 168: about 14k, 200k, 14.4M DOFs a process)\n"
               "  --methods LIST     Krylov methods (default cg,pipecg,scg)\n"
               "  --pc NAME          preconditioner (default poly; jacobi, bjacobi, amg with the\n"
               "                     grid's rigid-body modes, none)\n"
               "  --comm LIST        how the processes exchange (dist.comm): auto (default:\n"
               "                     MPI, the faster one measured), nccl or mpi; several\n"
               "                     (mpi,nccl) run every series with each, row by row\n"
               "  --tol T            relative tolerance (default 1e-8)\n"
               "  --weak SHAPE       the weak series: slab (n x n x nP cells, the beam P times\n"
               "                     longer), cube (m x m x m, m the multiple of P whose cube is\n"
               "                     nearest P n^3: the same shape refined, its ratios per DOF\n"
               "                     a process) or both (default; one one-process baseline)\n"
               "  --run-cells C      the whole-run series: cells per side of a process's part of\n"
               "                     the box case (default by --size: 8, 24, 80; 0: skip)\n"
               "  --run-shape SHAPE  the whole run's P-process box: slab (c x c x cP), cube\n"
               "                     (m x m x m from c as for --weak) or both (default: --weak's)\n"
               "  --no-strong        skip the strong series' one-process baseline (its whole\n"
               "                     problem on one process); with --weak cube the slab is then\n"
               "                     not solved at all\n"
               "  --layer            the P processes' solvers take the distributed layer even\n"
               "                     on one process (dist.layer=always): at -np 1 the weak row\n"
               "                     is the layer's own cost, with no message\n"
               "  --resident         each process's K and coordinates in the backend's memory\n"
               "                     before the clock, as hooke run's device assembly leaves\n"
               "                     them: set up by hk_solver_create_resident (one process)\n"
               "                     and hk_solver_create_dist_device (P, the rows in the\n"
               "                     part's own columns); on the cpu that memory is the host's\n"
               "  --backend, --size, --json FILE   as every benchmark\n");
}

static void no_usage(FILE *f)
{
    (void)f; /* ranks other than 0: rank 0 prints it */
}

/* Wall time of the slowest process since t0 (every process calls it). */
static double slowest(const hk_comm *c, double t0)
{
    double t = hk_time() - t0;
    hk_comm_max(c, &t, 1);
    return t;
}

typedef struct solve_figs {
    double setup, solve;
    int iterations;
    int converged;
    char comm[8]; /* the P processes' transport (hk_solver_dist_comm), "" on one */
} solve_figs;

/* 3D elasticity's DOFs on nx x ny x nz hexahedra (every node's three, the fixed ones too). */
static long long grid_dofs(int nx, int ny, int nz)
{
    return 3LL * (nx + 1) * (ny + 1) * (nz + 1);
}

/* The cells per side of the cube a weak-cube series gives P processes for n x n x n cells on
 * one: the multiple of P nearest (by ratio) to n P^(1/3), whose cube is nearest P n^3, so that
 * every process's slab holds m / P whole cell layers (its rows a contiguous block) and about
 * n^3 cells. */
static int cube_side(int n, int P)
{
    const double exact = n * cbrt((double)P);
    const long k = (long)floor(exact / P); /* k P <= exact < (k + 1) P */
    if (k < 1) return P;
    return exact / (double)(k * P) <= (double)((k + 1) * P) / exact ? (int)(k * P)
                                                                    : (int)((k + 1) * P);
}

/* One row of the table and its record in the JSON: the one-process figures (one, dofs1 DOFs)
 * and the P processes' (many, dofsP DOFs together) and their ratios: efficiency for the weak
 * series (weak-cube's per DOF a process, (T1 / DOFs1) / (TP / (DOFsP / P)), since its cube
 * gives each process a few DOFs more or fewer than n^3 cells), speedup for strong. */
static void report_row(FILE *f, hk_json *j, const char *series, const char *method, int P,
                       long long dofs1, long long dofsP, const solve_figs *one,
                       const solve_figs *many)
{
    const int weak = !strncmp(series, "weak", 4);
    const double per_dof = !strcmp(series, "weak-cube") ? (double)dofsP / P / dofs1 : 1;
    const double t1 = one->setup + one->solve, tP = many->setup + many->solve;
    const double it1 = one->iterations ? one->solve / one->iterations : NAN;
    const double itP = many->iterations ? many->solve / many->iterations : NAN;
    const double whole = per_dof * t1 / tP, per_it = per_dof * it1 / itP;
    char r_it[32], r_all[32];
    snprintf(r_it, sizeof r_it, weak ? "%.0f %%" : "%.2fx", weak ? 100 * per_it : per_it);
    snprintf(r_all, sizeof r_all, weak ? "%.0f %%" : "%.2fx", weak ? 100 * whole : whole);
    hk_table_row(f, "%s|%s|%s|%lld|%lld (%lld)|%d|%d|%.3f|%.3f|%.3f|%.3f|%s|%s", series, method,
                 many->comm, dofs1, dofsP, dofsP / P, one->iterations, many->iterations, t1, tP,
                 1e3 * it1, 1e3 * itP, r_it, r_all);
    hk_json_begin_object(j, NULL);
    hk_json_string(j, "series", series);
    hk_json_string(j, "method", method);
    hk_json_string(j, "comm", many->comm);
    hk_json_int(j, "dofs", dofsP);
    hk_json_int(j, "dofs_1", dofs1);
    hk_json_number(j, "dofs_per_process_p", (double)dofsP / P);
    hk_json_int(j, "iterations_1", one->iterations);
    hk_json_int(j, "iterations_p", many->iterations);
    hk_json_number(j, "setup_1", one->setup);
    hk_json_number(j, "solve_1", one->solve);
    hk_json_number(j, "setup_p", many->setup);
    hk_json_number(j, "solve_p", many->solve);
    hk_json_number(j, weak ? "efficiency" : "speedup", whole);
    hk_json_number(j, weak ? "efficiency_per_iteration" : "speedup_per_iteration", per_it);
    hk_json_end_object(j);
}

/* After one warm-up solve, the median of reps solves from x = 0 (the slowest process's), the
 * iterations and convergence of the last. */
static int timed_solves(const hk_comm *c, hk_solver *s, const double *b, double *x, int64_t n,
                        int reps, solve_figs *f)
{
    double t[8];
    hk_result res;
    for (int r = -1; r < reps; r++) {
        memset(x, 0, (size_t)n * sizeof *x);
        HK_CALL(hk_solver_solve(s, b, x, &res));
        if (r < 0) continue;
        t[r] = res.solve_seconds;
        if (c) hk_comm_max(c, &t[r], 1);
    }
    f->solve = hk_bench_median(t, reps);
    f->iterations = res.iterations;
    f->converged = hk_reason_converged(res.reason);
    return 0;
}

/* One process (rank 0 alone; the others wait at the next collective): the solve of K; be
 * non-NULL: K and the coordinates put in its memory first, outside the clock. */
static int solve_one(const hk_bcsr *K, const double *xyz, const char *opts, const hk_backend *be,
                     int reps, solve_figs *f)
{
    hk_nearnull nn = {.dim = 3, .coords = xyz}; /* pc=amg's rigid-body modes */
    hk_options *o = NULL;
    hk_solver *s = NULL;
    hk_resident_bcsr A = {0};
    double *xyz_d = NULL;
    const int64_t n = K->nbrows * K->bs;
    const size_t bytes = (size_t)K->nbrows * 3 * sizeof *xyz;
    double *b = hk_bench_rhs_ones(K), *x = NULL;
    int ierr = b ? 0 : HK_ERR_MEMORY;
    if (!ierr) ierr = hk_calloc((size_t)n, sizeof *x, &x);
    if (!ierr) ierr = hk_options_create(&o);
    if (!ierr) ierr = hk_options_parse(o, opts);
    if (!ierr && be) ierr = hk_bench_resident_copy(be, K, &A);
    if (!ierr && be) ierr = hk_backend_alloc(be, bytes, (void **)&xyz_d);
    if (!ierr && be) ierr = be->copy_to(xyz_d, xyz, bytes);
    if (!ierr && be) ierr = be->sync();
    if (be) nn.coords = xyz_d, nn.coords_be = be;
    const double t0 = hk_time();
    if (!ierr) /* the resident entry takes A's arrays over */
        ierr = be ? hk_solver_create_resident(&A, &nn, o, &s)
                  : hk_solver_create_nearnull(K, &nn, o, &s);
    f->setup = hk_time() - t0;
    if (!ierr) ierr = timed_solves(NULL, s, b, x, n, reps, f);
    hk_solver_destroy(s);
    hk_options_destroy(o);
    if (A.be) hk_resident_bcsr_free(&A);
    hk_backend_free(be, xyz_d);
    free(b);
    free(x);
    return ierr;
}

/* A process's rows L (global columns) as a part assembled on its device hands them over
 * (hk_solver_create_dist_device): in be's memory with the part's own columns, owned column c
 * (global row0 + c) first, then the ghosts, *ghost (malloc'ed, sorted global ids, *ng of
 * them). */
static int rows_on_device(const hk_backend *be, const hk_bcsr *L, int64_t row0,
                          hk_resident_bcsr *A, int64_t **ghost, int64_t *ng)
{
    const int64_t n = L->nbrows, nnzb = L->rowptr[n], ncols = L->nbcols;
    const int bb = L->bs * L->bs;
    unsigned char *mark = NULL;
    int32_t *local = NULL, *slot = NULL;
    int64_t *gid = NULL, cnt = 0;
    int ierr = hk_calloc((size_t)ncols + 1, 1, &mark);
    if (!ierr) ierr = hk_malloc((size_t)(ncols + 1) * sizeof *slot, &slot);
    if (!ierr) ierr = hk_malloc((size_t)(nnzb + 1) * sizeof *local, &local);
    if (ierr) goto done;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < nnzb; p++) {
        const int64_t c = L->colind[p];
        if (c < row0 || c >= row0 + n) mark[c] = 1; /* the same byte from any thread */
    }
    for (int64_t c = 0; c < ncols; c++)
        if (mark[c]) slot[c] = (int32_t)(n + cnt++);
    ierr = hk_malloc((size_t)(cnt + 1) * sizeof *gid, &gid);
    if (ierr) goto done;
    for (int64_t c = 0, k = 0; c < ncols; c++)
        if (mark[c]) gid[k++] = c;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < nnzb; p++) {
        const int64_t c = L->colind[p];
        local[p] = c >= row0 && c < row0 + n ? (int32_t)(c - row0) : slot[c];
    }
    ierr = hk_resident_bcsr_alloc(be, L->bs, n, n + cnt, nnzb, A);
    if (!ierr) ierr = be->copy_to(A->rowptr, L->rowptr, (size_t)(n + 1) * sizeof *A->rowptr);
    if (!ierr && nnzb) ierr = be->copy_to(A->colind, local, (size_t)nnzb * sizeof *local);
    if (!ierr && nnzb)
        ierr = be->copy_to(A->val, L->val, (size_t)(nnzb * bb) * sizeof *A->val);
    if (!ierr) ierr = be->sync();
done:
    if (ierr) {
        if (A->be) hk_resident_bcsr_free(A);
        free(gid);
        gid = NULL;
        cnt = 0;
    }
    *ghost = gid;
    *ng = cnt;
    free(mark);
    free(slot);
    free(local);
    return ierr;
}

/* Every process: its rows (contiguous blocks: the z slabs) of rank 0's K, solved distributed;
 * be non-NULL: each process's rows and its nodes' coordinates put in its memory first, outside
 * the clock, as hooke run's device assembly hands them over (hk_solver_create_dist_device: the
 * pattern in the part's own columns, the values, the coordinates all on the device). */
static int solve_many(const hk_comm *c, const hk_bcsr *K, const double *b, const double *xyz,
                      const char *opts, const hk_backend *be, int reps, solve_figs *f)
{
    hk_bcsr L = {0};
    hk_resident_bcsr A = {0};
    double *bl = NULL, *xl = NULL, *xyz_d = NULL;
    int64_t row0 = 0, *ghost = NULL, ng = 0;
    hk_options *o = NULL;
    hk_solver *s = NULL;
    int ierr = hk_dist_scatter(c, K, b, NULL, &L, &bl, &row0, NULL);
    const int64_t n = L.nbrows * L.bs;
    const size_t cbytes = (size_t)L.nbrows * 3 * sizeof *xyz;
    if (!ierr) ierr = hk_calloc((size_t)(n + 1), sizeof *xl, &xl);
    if (!ierr) ierr = hk_options_create(&o);
    if (!ierr) ierr = hk_options_parse(o, opts);
    if (!ierr && be) ierr = rows_on_device(be, &L, row0, &A, &ghost, &ng);
    /* the slabs are contiguous rows of the generator's order: the coordinates from row0 on */
    if (!ierr && be) ierr = hk_backend_alloc(be, cbytes + 1, (void **)&xyz_d);
    if (!ierr && be && cbytes) ierr = be->copy_to(xyz_d, xyz + 3 * row0, cbytes);
    if (!ierr && be) ierr = be->sync();
    ierr = hk_comm_agree(c, ierr);
    const double t0 = hk_time();
    hk_nearnull nn = {.dim = 3, .coords = xyz + 3 * row0};
    if (be) nn.coords = xyz_d, nn.coords_be = be;
    if (!ierr)
        ierr = be ? hk_solver_create_dist_device(c, row0, L.nbcols, &A,
                                                 L.nbrows, ghost, ng, &nn, o, &s)
                  : hk_solver_create_dist(c, row0, &L, &nn, o, &s);
    f->setup = slowest(c, t0);
    if (A.be) hk_resident_bcsr_free(&A); /* the solver keeps its own */
    hk_backend_free(be, xyz_d);
    free(ghost);
    snprintf(f->comm, sizeof f->comm, "%s",
             s && hk_solver_dist_comm(s) ? hk_solver_dist_comm(s) : "-");
    if (!ierr) ierr = timed_solves(c, s, bl, xl, n, reps, f);
    hk_solver_destroy(s);
    hk_options_destroy(o);
    hk_bcsr_free(&L);
    free(bl);
    free(xl);
    return ierr;
}

/* The whole run of a generated box (hex8, clamped at x = 0, a traction on x = 1 and gravity:
 * cases/box/box.yaml) of 1 x 1 x zlen with nxy x nxy x nz cells: on every process (alone: rank
 * 0 through the one-process pipeline, the others waiting), its wall time. */
static int run_box(const hk_comm *c, int alone, int nxy, int nz, int zlen, const char *backend,
                   const char *pc, const char *comm, double *seconds)
{
    char yaml[128], out[128];
    snprintf(yaml, sizeof yaml, "/tmp/hooke-bench-scale-%d.yaml", (int)getpid());
    snprintf(out, sizeof out, "/tmp/hooke-bench-scale-%d.vtu", (int)getpid());
    FILE *y = fopen(yaml, "w");
    HK_CHECK(y, HK_ERR_IO, "hooke bench scale: cannot write %s", yaml);
    fprintf(y,
            "title: Clamped box (hooke bench scale)\n"
            "geometry:\n"
            "  generate: {shape: box, size: [1, 1, %d], cells: [%d, %d, %d], element: hex8}\n"
            "analysis: 3d\n"
            "materials:\n  - {name: steel, E: 200e9, nu: 0.3, density: 7850}\n"
            "supports:\n  - {boundary: xmin, fix: all}\n"
            "loads:\n  - traction: {boundary: xmax, value: [0, 0, -1e6]}\n"
            "  - gravity: [0, 0, -9.81]\n"
            "solver: {method: cg, pc: %s, tol: 1e-8, dist: {comm: %s}}\n"
            "output: {file: %s}\n",
            zlen, nxy, nxy, nz, pc, comm, out);
    fclose(y);
    hk_case cs;
    int ierr = hk_case_load(yaml, 0, NULL, &cs);
    remove(yaml);
    if (ierr) return ierr;
    const hk_run_opts o = {.backend = backend, .quiet = 1};
    const double t0 = hk_time();
    if (alone) {
        hk_run r;
        ierr = hk_run_case(&cs, &o, &r);
        if (!ierr) ierr = hk_run_write(&cs, &r, out, &o);
        hk_run_free(&r);
        remove(out);
    } else {
        ierr = hk_run_mpi_case(&cs, &o, out, HK_RUN_REPORT_NONE) ? HK_ERR_NUMERIC : 0;
        char piece[160];
        snprintf(piece, sizeof piece, "/tmp/hooke-bench-scale-%d-p%d.vtu", (int)getpid(),
                 hk_comm_rank(c));
        remove(piece);
        if (hk_comm_rank(c) == 0) {
            snprintf(piece, sizeof piece, "/tmp/hooke-bench-scale-%d.pvtu", (int)getpid());
            remove(piece);
        }
    }
    *seconds = hk_time() - t0;
    hk_case_free(&cs);
    return ierr;
}

/* A --weak or --run-shape value: SHAPE_SLAB, SHAPE_CUBE or both; 0 for another. */
enum { SHAPE_SLAB = 1, SHAPE_CUBE = 2 };
static int parse_shape(const char *v)
{
    return !strcmp(v, "slab")   ? SHAPE_SLAB
           : !strcmp(v, "cube") ? SHAPE_CUBE
           : !strcmp(v, "both") ? SHAPE_SLAB | SHAPE_CUBE
                                : 0;
}

#define MAX_METHODS 16

int hk_bench_scale(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    const hk_comm *c = hk_comm_world();
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    int n = 0, run_cells = -1, strong = 1, resident = 0, layer = 0;
    int weak = SHAPE_SLAB | SHAPE_CUBE, run_shape = 0; /* 0: as weak */
    double tol = 1e-8;
    const char *methods = "cg,pipecg,scg", *pc = "poly", *comm = "auto";
    for (int i = 1; i < argc;) {
        int r = hk_bench_option(argc, argv, &i, &bo, me == 0 ? scale_usage : no_usage);
        if (r < 0) return r == HK_BENCH_HELP ? 0 : 2;
        if (r > 0) continue;
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-strong")) {
            strong = 0;
            i++;
            continue;
        }
        if (!strcmp(a, "--resident")) {
            resident = 1;
            i++;
            continue;
        }
        if (!strcmp(a, "--layer")) {
            layer = 1;
            i++;
            continue;
        }
        if (!v) {
            if (me == 0) fprintf(stderr, "hooke bench scale: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--n"))
            n = atoi(v);
        else if (!strcmp(a, "--run-cells"))
            run_cells = atoi(v);
        else if (!strcmp(a, "--methods"))
            methods = v;
        else if (!strcmp(a, "--pc"))
            pc = v;
        else if (!strcmp(a, "--comm"))
            comm = v;
        else if (!strcmp(a, "--tol"))
            tol = atof(v);
        else if (!strcmp(a, "--weak") || !strcmp(a, "--run-shape")) {
            const int shape = parse_shape(v);
            if (!shape) {
                if (me == 0)
                    fprintf(stderr, "hooke bench scale: %s '%s' is not slab, cube or both\n", a, v);
                return 2;
            }
            *(!strcmp(a, "--weak") ? &weak : &run_shape) = shape;
        } else {
            if (me == 0)
                fprintf(stderr,
                        "hooke bench scale: unknown option '%s' (hooke bench scale "
                        "--help)\n",
                        a);
            return 2;
        }
        i += 2;
    }
    if (!run_shape) run_shape = weak;
    if (n <= 0) n = (int)hk_bench_pick(bo.size, 16, 40, 168);
    const int reps = bo.size == HK_BENCH_LARGE ? 1 : 3; /* after a warm-up solve */
    if (run_cells < 0) run_cells = (int)hk_bench_pick(bo.size, 8, 24, 80);
    if (n < 2 || n > 1000 || !(tol > 0 && tol < 1)) {
        if (me == 0)
            fprintf(stderr, "hooke bench scale: --n %d or --tol %g out of range\n", n, tol);
        return 2;
    }
    char list[256];
    const char *method[MAX_METHODS];
    int nmethods = 0;
    snprintf(list, sizeof list, "%s", methods);
    for (char *save = NULL, *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        if (nmethods == MAX_METHODS) {
            if (me == 0)
                fprintf(stderr, "hooke bench scale: --methods names more than %d methods\n",
                        MAX_METHODS);
            return 2;
        }
        method[nmethods++] = m;
    }
    char clist[64];
    const char *comms[3];
    int ncomms = 0, nccl = 0;
    snprintf(clist, sizeof clist, "%s", comm);
    for (char *save = NULL, *t = strtok_r(clist, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (ncomms == 3 || (strcmp(t, "auto") && strcmp(t, "mpi") && strcmp(t, "nccl"))) {
            if (me == 0)
                fprintf(stderr,
                        "hooke bench scale: --comm '%s': give up to 3 of auto, mpi, nccl, "
                        "comma-separated\n",
                        comm);
            return 2;
        }
        nccl |= !strcmp(t, "nccl");
        comms[ncomms++] = t;
    }
    if (!ncomms) comms[ncomms++] = "auto";
    /* --resident: the backend each process puts its K in (every process its own device) */
    const hk_backend *rbe = NULL;
    if (resident && hk_comm_agree(c, hk_backend_get(bo.backend, &rbe))) {
        if (me == 0) fprintf(stderr, "hooke bench scale: %s\n", hk_error_message());
        return 1;
    }
    /* NCCL's start (its communicator, its links) before the clocks, as hooke run makes it
     * while meshing; the series' solvers borrow it */
    double nccl_start = -1;
    if (nccl && P > 1) {
        const hk_backend *dev = NULL; /* the device started first, outside the figure */
        if (hk_backend_get(bo.backend, &dev)) hk_error_clear(); /* (the solver says why) */
        const double t0 = hk_time();
        if (hk_comm_agree(c, hk_dist_comm_prepare(c, bo.backend))) {
            if (me == 0) fprintf(stderr, "hooke bench scale: %s\n", hk_error_message());
            return 1;
        }
        hk_dist_comm_start();
        nccl_start = slowest(c, t0);
    }
    const int m = cube_side(n, P);                             /* weak-cube's cells a side */
    const int slab = (weak & SHAPE_SLAB) || (strong && P > 1); /* strong solves the slab too */
    const long long dofs1 = grid_dofs(n, n, n);
    FILE *f = me == 0 ? stdout : fopen("/dev/null", "w");
    hk_json j = {0};
    if (me == 0 && bo.json && hk_json_open(&j, bo.json)) return 1;
    if (me == 0) {
        fprintf(f, "## Scaling on %d process%s (backend %s), each beside one process\n\n", P,
                P == 1 ? "" : "es", bo.backend);
        fprintf(f,
                "3D elasticity, hexahedra, pc=%s, tol %g; one process: %d x %d x %d cells (%lld "
                "DOFs); P processes: slabs of cell layers along z (contiguous rows)",
                pc, tol, n, n, n, dofs1);
        if (slab)
            fprintf(f, ", weak%s %d x %d x %d cells", strong && P > 1 ? " and strong" : "", n, n,
                    n * P);
        if (weak & SHAPE_CUBE)
            fprintf(f, ", weak-cube %d x %d x %d cells (%d layers a process)", m, m, m, m / P);
        fprintf(f, "; K %s%s.\n\n",
                resident ? "in the backend's memory before the clock (--resident)"
                         : "on the host, uploaded in the set-up",
                layer ? "; the P processes through the distributed layer (--layer)" : "");
        if (weak & SHAPE_CUBE)
            fprintf(f, "weak-cube's ratios are per DOF a process: (T1 / DOFs 1) / (TP / (DOFs P "
                       "/ P)).\n\n");
        if (nccl_start >= 0)
            fprintf(f,
                    "NCCL's start (dist.comm=nccl's communicator and its links, made once before "
                    "the clocks, as hooke run makes it while meshing): %.3f s.\n\n",
                    nccl_start);
        hk_json_begin_object(&j, NULL);
        hk_json_int(&j, "processes", P);
        hk_json_string(&j, "backend", bo.backend);
        hk_json_int(&j, "n", n);
        if (weak & SHAPE_CUBE) hk_json_int(&j, "cube_cells", m);
        hk_json_string(&j, "pc", pc);
        hk_json_string(&j, "comm_asked", comm);
        if (nccl_start >= 0) hk_json_number(&j, "nccl_start_seconds", nccl_start);
        hk_json_int(&j, "resident", resident);
        hk_json_int(&j, "layer", layer);
        hk_json_begin_array(&j, "solver");
        hk_table_head(f, "lllrrrrrrrrrr",
                      "series|method|comm|DOFs 1|DOFs P (a process)|iterations 1|iterations P|"
                      "set-up+solve 1 (s)|set-up+solve P (s)|ms/iteration 1|ms/iteration P|"
                      "per iteration|set-up+solve");
    }
    /* the one-process baseline of both weak series (rank 0 alone; the others wait at the next
     * collective), once a method */
    solve_figs one[MAX_METHODS] = {{0}};
    char opts[MAX_METHODS][160];
    for (int k = 0; k < nmethods; k++)
        snprintf(opts[k], sizeof opts[k], "method=%s pc=%s tol=%g backend=%s", method[k], pc, tol,
                 bo.backend);
    int ierr = 0;
    if (me == 0) {
        hk_bcsr K1 = {0};
        double *xyz1 = NULL;
        ierr = hk_gen_elasticity3d_coords(n, n, n, &xyz1);
        if (!ierr) ierr = hk_gen_elasticity3d(n, n, n, &K1);
        for (int k = 0; k < nmethods && !ierr; k++)
            ierr = solve_one(&K1, xyz1, opts[k], rbe, reps, &one[k]);
        hk_bcsr_free(&K1);
        free(xyz1);
    }
    ierr = hk_comm_agree(c, ierr);
    /* the P processes' problems one after the other (each made on rank 0 and scattered): the
     * slab (weak, strong) and the cube (weak-cube) */
    for (int shape = SHAPE_SLAB; shape <= SHAPE_CUBE && !ierr; shape++) {
        if (shape == SHAPE_SLAB ? !slab : !(weak & SHAPE_CUBE)) continue;
        const int nxy = shape == SHAPE_SLAB ? n : m, nz = shape == SHAPE_SLAB ? n * P : m;
        hk_bcsr KP = {0};
        double *bP = NULL, *xyzP = NULL;
        /* the grid's coordinates on every process (pc=amg's rigid-body modes) */
        ierr = hk_gen_elasticity3d_coords(nxy, nxy, nz, &xyzP);
        if (me == 0) {
            if (!ierr) ierr = hk_gen_elasticity3d(nxy, nxy, nz, &KP);
            if (!ierr) bP = hk_bench_rhs_ones(&KP);
            if (!ierr && !bP) ierr = HK_ERR_MEMORY;
        }
        ierr = hk_comm_agree(c, ierr);
        const long long dofsP = grid_dofs(nxy, nxy, nz);
        for (int k = 0; k < nmethods && !ierr; k++) {
            solve_figs whole = {0};
            const int strong_row = shape == SHAPE_SLAB && strong && P > 1;
            if (me == 0 && strong_row) ierr = solve_one(&KP, xyzP, opts[k], rbe, reps, &whole);
            if ((ierr = hk_comm_agree(c, ierr))) break;
            for (int t = 0; t < ncomms && !ierr; t++) {
                char optsP[300]; /* the P processes' exchange as asked */
                snprintf(optsP, sizeof optsP, "%.159s dist.comm=%.8s%s", opts[k], comms[t],
                         layer ? " dist.layer=always" : "");
                solve_figs many = {0};
                if ((ierr = solve_many(c, &KP, bP, xyzP, optsP, rbe, reps, &many))) break;
                if (me != 0) continue;
                if (shape == SHAPE_CUBE)
                    report_row(f, &j, "weak-cube", method[k], P, dofs1, dofsP, &one[k], &many);
                else if (weak & SHAPE_SLAB)
                    report_row(f, &j, "weak", method[k], P, dofs1, dofsP, &one[k], &many);
                if (strong_row)
                    report_row(f, &j, "strong", method[k], P, dofsP, dofsP, &whole, &many);
            }
        }
        hk_bcsr_free(&KP);
        free(bP);
        free(xyzP);
    }
    if (me == 0) hk_json_end_array(&j);
    hk_dist_comm_end(); /* each whole run makes its own while it meshes */
    /* the whole run, weak: one process's c x c x c box once, then each shape on P processes */
    if (!ierr && run_cells > 0) {
        const int mc = cube_side(run_cells, P);
        const long long run1 = grid_dofs(run_cells, run_cells, run_cells);
        double t1 = 0;
        if (me == 0) ierr = run_box(c, 1, run_cells, run_cells, 1, bo.backend, pc, comms[0], &t1);
        ierr = hk_comm_agree(c, ierr);
        if (!ierr && me == 0) {
            fprintf(f,
                    "\nWhole run (cases/box/box.yaml, hex8, pc=%s, dist.comm=%s), mesh to output: "
                    "one process %d x %d x %d cells; P processes",
                    pc, comm, run_cells, run_cells, run_cells);
            if (run_shape & SHAPE_SLAB)
                fprintf(f, ", slab %d x %d x %d", run_cells, run_cells, run_cells * P);
            if (run_shape & SHAPE_CUBE) fprintf(f, ", cube %d x %d x %d", mc, mc, mc);
            fprintf(f, "%s:\n\n",
                    run_shape & SHAPE_CUBE ? " (cube's efficiency per DOF a process, as above)"
                                           : "");
            hk_table_head(f, "llrrrrrr",
                          "shape|comm|processes|DOFs 1|DOFs P (a process)|one process (s)|"
                          "P processes (s)|weak efficiency");
        }
        for (int shape = SHAPE_SLAB; shape <= SHAPE_CUBE && !ierr; shape++)
            for (int t = 0; t < ncomms && !ierr; t++) {
                if (!(run_shape & shape)) continue;
                const int cube = shape == SHAPE_CUBE;
                const int nxy = cube ? mc : run_cells, nz = cube ? mc : run_cells * P;
                double tP = 0;
                ierr = hk_comm_agree(
                    c, run_box(c, 0, nxy, nz, cube ? 1 : P, bo.backend, pc, comms[t], &tP));
                hk_comm_max(c, &tP, 1);
                if (ierr || me != 0) continue;
                const long long dofs = grid_dofs(nxy, nxy, nz);
                const double eff = (cube ? (double)dofs / P / run1 : 1) * t1 / tP;
                hk_table_row(f, "%s|%s|%d|%lld|%lld (%lld)|%.3f|%.3f|%.0f %%",
                             cube ? "cube" : "slab", comms[t], P, run1, dofs, dofs / P, t1, tP,
                             100 * eff);
                char key[32]; /* one object a transport: run_nccl, run_cube_mpi where several */
                snprintf(key, sizeof key, "%s%s%s", cube ? "run_cube" : "run",
                         ncomms > 1 ? "_" : "", ncomms > 1 ? comms[t] : "");
                hk_json_begin_object(&j, key);
                hk_json_string(&j, "comm", comms[t]);
                hk_json_int(&j, "dofs", dofs);
                hk_json_int(&j, "dofs_1", run1);
                if (cube) hk_json_int(&j, "cube_cells", mc);
                hk_json_number(&j, "seconds_1", t1);
                hk_json_number(&j, "seconds_p", tP);
                hk_json_number(&j, "efficiency", eff);
                hk_json_end_object(&j);
            }
    }
    if (me == 0) {
        hk_json_end_object(&j);
        if (bo.json && hk_json_close(&j) && !ierr) ierr = HK_ERR_IO;
        if (ierr) fprintf(stderr, "hooke bench scale: %s\n", hk_error_message());
    } else {
        fclose(f);
    }
    return ierr ? 1 : 0;
}
