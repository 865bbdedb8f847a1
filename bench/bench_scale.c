/* `hooke bench scale`: weak and strong scaling of distributed runs (docs/parallel.md), launched
 * under mpirun (mpirun -np 4 hooke bench scale; scripts/bench-scale.sh runs -np 1, 2 and 4 and
 * collects the JSON). Every figure of P processes stands beside its one-process baseline
 * measured in the same run: rank 0 alone solves (runs) the one-process problem while the others
 * wait, then all P processes solve the distributed one.
 *
 * Solve times are medians of 3 solves after a warm-up (1 with --size large).
 *
 * Solver series (3D elasticity of hexahedra, hk_gen_elasticity3d, n x n x n cells per process,
 * the processes' slabs stacked along z: rows in contiguous blocks): for each method, set-up,
 * solve, iterations and time per iteration of
 *   weak:   n x n x nP cells on P processes against n x n x n on one (efficiency T1 / TP),
 *   strong: n x n x nP cells on P processes against the same on one (speedup T1 / TP).
 * Run series (weak, the whole hooke run of cases/box/box.yaml, generated cells c x c x cP on P
 * processes against c x c x c on one): end to end, mesh to output.
 * Every row names the transport the P processes used (dist.comm: nccl or mpi; --comm).
 * --resident: each K (and for one process the grid's coordinates) in the backend's memory
 * before the clock, handed over as hooke run's device assembly hands them over
 * (hk_solver_create_resident, hk_solver_create_dist_resident). */
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
               "  --comm NAME        how the processes exchange (dist.comm): auto (default:\n"
               "                     MPI, the faster one measured), nccl or mpi\n"
               "  --tol T            relative tolerance (default 1e-8)\n"
               "  --run-cells C      the whole-run series: cells per side of a process's part of\n"
               "                     the box case (default by --size: 8, 24, 80; 0: skip)\n"
               "  --no-strong        skip the strong series' one-process baseline (its whole\n"
               "                     problem on one process)\n"
               "  --resident         each process's K in the backend's memory before the clock,\n"
               "                     as hooke run's device assembly leaves it: set up by\n"
               "                     hk_solver_create_resident (one process, its coordinates\n"
               "                     there too) and hk_solver_create_dist_resident (P); on the\n"
               "                     cpu that memory is the host's\n"
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

/* One record of the JSON: the one-process and the P-process figures and their ratios
 * (efficiency for weak, speedup for strong). */
static void json_row(hk_json *j, const char *series, const char *method, long long dofs,
                     const solve_figs *one, const solve_figs *many)
{
    const int weak = !strcmp(series, "weak");
    const double t1 = one->setup + one->solve, tP = many->setup + many->solve;
    const double it1 = one->iterations ? one->solve / one->iterations : NAN;
    const double itP = many->iterations ? many->solve / many->iterations : NAN;
    hk_json_begin_object(j, NULL);
    hk_json_string(j, "series", series);
    hk_json_string(j, "method", method);
    hk_json_string(j, "comm", many->comm);
    hk_json_int(j, "dofs", dofs);
    hk_json_int(j, "iterations_1", one->iterations);
    hk_json_int(j, "iterations_p", many->iterations);
    hk_json_number(j, "setup_1", one->setup);
    hk_json_number(j, "solve_1", one->solve);
    hk_json_number(j, "setup_p", many->setup);
    hk_json_number(j, "solve_p", many->solve);
    hk_json_number(j, weak ? "efficiency" : "speedup", t1 / tP);
    hk_json_number(j, weak ? "efficiency_per_iteration" : "speedup_per_iteration", it1 / itP);
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

/* Every process: its rows (contiguous blocks: the z slabs) of rank 0's K, solved distributed;
 * be non-NULL: each process's values put in its memory first, outside the clock (the
 * coordinates stay on the host, as hooke run hands them over). */
static int solve_many(const hk_comm *c, const hk_bcsr *K, const double *b, const double *xyz,
                      const char *opts, const hk_backend *be, int reps, solve_figs *f)
{
    hk_bcsr L = {0};
    hk_resident_bcsr A = {0};
    double *bl = NULL, *xl = NULL;
    int64_t row0 = 0;
    hk_options *o = NULL;
    hk_solver *s = NULL;
    int ierr = hk_dist_scatter(c, K, b, NULL, &L, &bl, &row0, NULL);
    const int64_t n = L.nbrows * L.bs;
    if (!ierr) ierr = hk_calloc((size_t)(n + 1), sizeof *xl, &xl);
    if (!ierr) ierr = hk_options_create(&o);
    if (!ierr) ierr = hk_options_parse(o, opts);
    if (!ierr && be) ierr = hk_bench_resident_copy(be, &L, &A);
    ierr = hk_comm_agree(c, ierr);
    const double t0 = hk_time();
    /* the slabs are contiguous rows of the generator's order: the coordinates from row0 on */
    const hk_nearnull nn = {.dim = 3, .coords = xyz + 3 * row0};
    if (!ierr)
        ierr = be ? hk_solver_create_dist_resident(c, row0, &L, be, A.val, &nn, o, &s)
                  : hk_solver_create_dist(c, row0, &L, &nn, o, &s);
    f->setup = slowest(c, t0);
    if (A.be) hk_resident_bcsr_free(&A); /* the solver keeps its own */
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
 * cases/box/box.yaml) of c x c x (c k) cells: on every process (alone: rank 0 through the
 * one-process pipeline, the others waiting), its wall time. */
static int run_box(const hk_comm *c, int alone, int cells, int k, const char *backend,
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
            k, cells, cells, cells * k, pc, comm, out);
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

int hk_bench_scale(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    const hk_comm *c = hk_comm_world();
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    int n = 0, run_cells = -1, strong = 1, resident = 0;
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
        else {
            if (me == 0)
                fprintf(stderr,
                        "hooke bench scale: unknown option '%s' (hooke bench scale "
                        "--help)\n",
                        a);
            return 2;
        }
        i += 2;
    }
    if (n <= 0) n = (int)hk_bench_pick(bo.size, 16, 40, 168);
    const int reps = bo.size == HK_BENCH_LARGE ? 1 : 3; /* after a warm-up solve */
    if (run_cells < 0) run_cells = (int)hk_bench_pick(bo.size, 8, 24, 80);
    if (n < 2 || n > 1000 || !(tol > 0 && tol < 1)) {
        if (me == 0)
            fprintf(stderr, "hooke bench scale: --n %d or --tol %g out of range\n", n, tol);
        return 2;
    }
    /* --resident: the backend each process puts its K in (every process its own device) */
    const hk_backend *rbe = NULL;
    if (resident && hk_comm_agree(c, hk_backend_get(bo.backend, &rbe))) {
        if (me == 0) fprintf(stderr, "hooke bench scale: %s\n", hk_error_message());
        return 1;
    }
    FILE *f = me == 0 ? stdout : fopen("/dev/null", "w");
    hk_json j = {0};
    if (me == 0 && bo.json && hk_json_open(&j, bo.json)) return 1;
    if (me == 0) {
        fprintf(f, "## Scaling on %d process%s (backend %s), each beside one process\n\n", P,
                P == 1 ? "" : "es", bo.backend);
        fprintf(f,
                "3D elasticity, hexahedra, %d x %d x %d cells a process (%lld DOFs), pc=%s, "
                "tol %g; partitions: slabs along z; K %s.\n\n",
                n, n, n, (long long)3 * (n + 1) * (n + 1) * (n + 1), pc, tol,
                resident ? "in the backend's memory before the clock (--resident)"
                         : "on the host, uploaded in the set-up");
        hk_json_begin_object(&j, NULL);
        hk_json_int(&j, "processes", P);
        hk_json_string(&j, "backend", bo.backend);
        hk_json_int(&j, "n", n);
        hk_json_string(&j, "pc", pc);
        hk_json_string(&j, "comm_asked", comm);
        hk_json_int(&j, "resident", resident);
        hk_json_begin_array(&j, "solver");
        hk_table_head(f, "lllrrrrrrrrr",
                      "series|method|comm|DOFs|iterations 1|iterations P|set-up+solve 1 (s)|"
                      "set-up+solve P (s)|ms/iteration 1|ms/iteration P|per iteration|"
                      "set-up+solve");
    }
    int ierr = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", methods);
    hk_bcsr K1 = {0}, KP = {0};
    double *bP = NULL, *xyz1 = NULL, *xyzP = NULL;
    /* the one-process problem (rank 0) and the P-fold one (rank 0, scattered); the grids'
     * coordinates on every process (pc=amg's rigid-body modes) */
    ierr = hk_gen_elasticity3d_coords(n, n, n * P, &xyzP);
    if (me == 0) {
        if (!ierr) ierr = hk_gen_elasticity3d_coords(n, n, n, &xyz1);
        if (!ierr) ierr = hk_gen_elasticity3d(n, n, n, &K1);
        if (!ierr) ierr = hk_gen_elasticity3d(n, n, n * P, &KP);
        if (!ierr) bP = hk_bench_rhs_ones(&KP);
        if (!ierr && !bP) ierr = HK_ERR_MEMORY;
    }
    ierr = hk_comm_agree(c, ierr);
    for (char *save = NULL, *m = strtok_r(list, ",", &save); m && !ierr;
         m = strtok_r(NULL, ",", &save)) {
        char opts[256];
        snprintf(opts, sizeof opts, "method=%s pc=%s tol=%g backend=%s", m, pc, tol, bo.backend);
        char optsP[300]; /* the P processes' exchange as asked */
        snprintf(optsP, sizeof optsP, "%s dist.comm=%s", opts, comm);
        solve_figs one = {0}, whole = {0}, many = {0};
        if (me == 0) ierr = solve_one(&K1, xyz1, opts, rbe, reps, &one);
        if (!ierr && me == 0 && strong && P > 1)
            ierr = solve_one(&KP, xyzP, opts, rbe, reps, &whole);
        if ((ierr = hk_comm_agree(c, ierr))) break;
        if ((ierr = solve_many(c, &KP, bP, xyzP, optsP, rbe, reps, &many))) break;
        if (me != 0) continue;
        const double t1 = one.setup + one.solve, tP = many.setup + many.solve;
        const double it1 = one.iterations ? 1e3 * one.solve / one.iterations : NAN;
        const double itP = many.iterations ? 1e3 * many.solve / many.iterations : NAN;
        fprintf(f,
                "| weak | %s | %s | %lld | %d | %d | %.3f | %.3f | %.3f | %.3f | %.0f %% | %.0f %% "
                "|\n",
                m, many.comm, (long long)(KP.nbrows * 3), one.iterations, many.iterations, t1, tP,
                it1, itP, 100 * it1 / itP, 100 * t1 / tP);
        json_row(&j, "weak", m, KP.nbrows * 3, &one, &many);
        if (strong && P > 1) {
            const double tw = whole.setup + whole.solve;
            const double itw = whole.iterations ? 1e3 * whole.solve / whole.iterations : NAN;
            fprintf(
                f,
                "| strong | %s | %s | %lld | %d | %d | %.3f | %.3f | %.3f | %.3f | %.2fx | %.2fx "
                "|\n",
                m, many.comm, (long long)(KP.nbrows * 3), whole.iterations, many.iterations, tw, tP,
                itw, itP, itw / itP, tw / tP);
            json_row(&j, "strong", m, KP.nbrows * 3, &whole, &many);
        }
    }
    hk_bcsr_free(&K1);
    hk_bcsr_free(&KP);
    free(bP);
    free(xyz1);
    free(xyzP);
    if (me == 0) hk_json_end_array(&j);
    /* the whole run, weak */
    if (!ierr && run_cells > 0) {
        double t1 = 0, tP = 0;
        if (me == 0) ierr = run_box(c, 1, run_cells, 1, bo.backend, pc, comm, &t1);
        ierr = hk_comm_agree(c, ierr);
        if (!ierr) ierr = run_box(c, 0, run_cells, P, bo.backend, pc, comm, &tP);
        hk_comm_max(c, &tP, 1);
        if (!ierr && me == 0) {
            const long long dofs = 3LL * (run_cells + 1) * (run_cells + 1) * (run_cells * P + 1);
            fprintf(f,
                    "\nWhole run (cases/box/box.yaml, hex8, %d x %d x %d cells a process, "
                    "pc=%s, dist.comm=%s), mesh to output:\n\n",
                    run_cells, run_cells, run_cells, pc, comm);
            hk_table_head(f, "rrrrr",
                          "processes|DOFs|one process (s)|P processes (s)|weak "
                          "efficiency");
            hk_table_row(f, "%d|%lld|%.3f|%.3f|%.0f %%", P, dofs, t1, tP, 100 * t1 / tP);
            hk_json_begin_object(&j, "run");
            hk_json_int(&j, "dofs", dofs);
            hk_json_number(&j, "seconds_1", t1);
            hk_json_number(&j, "seconds_p", tP);
            hk_json_number(&j, "efficiency", t1 / tP);
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
