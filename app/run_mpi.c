/* hooke run on the processes of mpirun (docs/parallel.md).
 *
 *   rank 0:  mesh -> bind -> hk_assemble_prepare (checks, supports, surface loads) -> parts
 *   each:    its part -> hk_assemble_rows_device_on (its GPU, or the host)
 *            -> hk_solver_create_dist_device (rows on the GPU) or hk_solver_create_dist
 *            -> solve -> ghost displacements -> hk_postproc_part_on -> ghost fields -> piece
 *   rank 0:  .pvtu, the summary (sums and maxima over the processes)
 *
 * Every stage's status is agreed by all processes (hk_comm_agree), so they stop together and
 * rank 0 prints the one sentence; only rank 0 prints. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "threads.h"
#include "app.h"
#include "case.h"
#include "run_part.h"
#include "run_part_mesh.h"
#include "text.h"

static void monitor(int it, double rnorm, void *ctx)
{
    hk_run_log *L = ctx;
    static double last = 0;
    const double now = hk_time();
    if (now - last < 1.0) return;
    last = now;
    fprintf(stderr, "[%7.2f s]   solve: iteration %6d  residual %.3e\n", now - L->t0, it, rnorm);
    fflush(stderr);
}

/* What the case asks for that is not distributed yet: one sentence (every
 * process alike). */
static int refuse(const hk_case *c)
{
    const int P = hk_comm_size(hk_comm_world());
    HK_CHECK(!c->modal, HK_ERR_UNSUPPORTED,
             "%s: a modal analysis runs on one process for now (its eigensolver is not "
             "distributed yet); run this case without mpirun",
             c->path);
    HK_CHECK(!c->nloadcases, HK_ERR_UNSUPPORTED,
             "%s: load_cases run on one process for now; run this case without mpirun, or "
             "one load case at a time on %d processes",
             c->path, P);
    for (int i = 0; i < c->nloads; i++)
        HK_CHECK(!(c->loads[i].kind == HK_LOAD_REMOTE && c->loads[i].coupling == HK_COUPLING_RIGID),
                 HK_ERR_UNSUPPORTED,
                 "%s: the remote force on '%s' has a rigid coupling, which needs the whole model "
                 "in one process; use coupling: distributing or run without mpirun",
                 c->path, c->loads[i].boundary);
    HK_CHECK(!c->matrix_file[0] && !c->rhs_file[0] && !c->coords_file[0], HK_ERR_UNSUPPORTED,
             "%s: output.matrix, output.rhs and output.coordinates write the whole system from "
             "one process; run without mpirun to export it",
             c->path);
    return 0;
}

/* The model's data every part shares (materials per region, loads, supports and the problem's
 * scalars), from rank 0 to all. */
typedef struct shared_model {
    hk_problem p; /* mesh, materials, loads, supports, node_dT filled by each process */
    hk_material *materials;
    hk_load *loads;
    hk_support *supports;
    int nregions;
} shared_model;

static void shared_free(shared_model *s)
{
    free(s->materials);
    free(s->loads);
    free(s->supports);
    memset(s, 0, sizeof *s);
}

static int bcast_model(const hk_comm *w, const hk_problem *p0, shared_model *s)
{
    const int me = hk_comm_rank(w);
    int64_t n[3] = {0, 0, 0};
    if (me == 0) {
        s->p = *p0;
        s->nregions = p0->mesh->nregions;
        n[0] = s->nregions, n[1] = p0->nloads, n[2] = p0->nsupports;
    }
    HK_CALL(hk_comm_bcast(w, &s->p, sizeof s->p, 0));
    HK_CALL(hk_comm_bcast(w, n, sizeof n, 0));
    s->nregions = (int)n[0];
    int ierr = hk_calloc((size_t)n[0] + 1, sizeof *s->materials, &s->materials);
    if (!ierr) ierr = hk_calloc((size_t)n[1] + 1, sizeof *s->loads, &s->loads);
    if (!ierr) ierr = hk_calloc((size_t)n[2] + 1, sizeof *s->supports, &s->supports);
    HK_CALL(hk_comm_agree(w, ierr)); /* every process in the broadcasts below, or none */
    if (me == 0) {
        memcpy(s->materials, p0->materials, (size_t)n[0] * sizeof *s->materials);
        memcpy(s->loads, p0->loads, (size_t)n[1] * sizeof *s->loads);
        memcpy(s->supports, p0->supports, (size_t)n[2] * sizeof *s->supports);
    }
    HK_CALL(hk_comm_bcast(w, s->materials, (size_t)n[0] * sizeof *s->materials, 0));
    HK_CALL(hk_comm_bcast(w, s->loads, (size_t)n[1] * sizeof *s->loads, 0));
    HK_CALL(hk_comm_bcast(w, s->supports, (size_t)n[2] * sizeof *s->supports, 0));
    s->p.mesh = NULL;
    s->p.materials = s->materials;
    s->p.loads = s->loads;
    s->p.supports = s->supports;
    s->p.node_dT = NULL;
    return 0;
}

/* The part's problem: the shared model on the part's mesh; a spring support whose boundary has
 * no facet in the part keeps only its springs at nodes (its area springs act elsewhere). */
static void part_problem(shared_model *s, const hk_part *pt)
{
    s->p.mesh = &pt->mesh;
    s->p.node_dT = pt->node_dT;
    for (int k = 0; k < s->p.nsupports; k++) {
        hk_support *sp = &s->supports[k];
        if (sp->kind == HK_SUPPORT_SPRING && pt->mesh.boundaries[sp->boundary].elems.n == 0)
            sp->k_normal = sp->k_tangential = 0;
    }
}

/* HOOKE_RUN_PROFILE=1: each process's share of a stage, on rank 0's log: one line of the
 * named times (s) of every process, "name p0/p1/...", then each process's device stages where
 * it ran some (hk_fem_stage_times). Collective; on is rank 0's. */
enum { PROFILE_MAX = 10 };

typedef struct proc_profile {
    double v[PROFILE_MAX];
    char stages[504];
} proc_profile;

static int profile(const hk_run_log *L, const hk_comm *w, int on, const char *stage,
                   const char *const *names, const double *v, int n, int device_stages)
{
    if (!on) return 0;
    const int P = hk_comm_size(w);
    proc_profile mine, *all = NULL;
    memset(&mine, 0, sizeof mine);
    memcpy(mine.v, v, (size_t)n * sizeof *v);
    if (device_stages) snprintf(mine.stages, sizeof mine.stages, "%s", hk_fem_stage_times());
    HK_CALL(hk_comm_agree(w, hk_malloc((size_t)P * sizeof *all, &all)));
    const int ierr = hk_comm_allgather(w, &mine, sizeof mine, all);
    if (!ierr && L->on) {
        char line[2048];
        size_t k = 0;
        k += (size_t)snprintf(line + k, sizeof line - k, "%s: per process (s):", stage);
        for (int i = 0; i < n && k < sizeof line; i++) {
            k += (size_t)snprintf(line + k, sizeof line - k, "%s %s ", i ? "," : "", names[i]);
            for (int q = 0; q < P && k < sizeof line; q++)
                k += (size_t)snprintf(line + k, sizeof line - k, "%s%.2f", q ? "/" : "",
                                      all[q].v[i]);
        }
        hk_run_say(L, "%s", line);
        for (int q = 0; q < P; q++)
            if (all[q].stages[0])
                hk_run_say(L, "%s: process %d on its device (ms): %s", stage, q, all[q].stages);
    }
    free(all);
    return ierr;
}

/* The solver freed on a thread (its device frees wait for the device, one by one) while this
 * process's main thread sends the ghosts' fields and writes its piece, which use neither the
 * device nor the solver. The current device is per host thread: the thread makes the
 * recovery's backend (the solver's device) its own first. */
typedef struct solver_free {
    pthread_t thread;
    hk_solver *s;
    const hk_backend *be;
    double seconds;
    int running;
} solver_free;

static void *solver_free_main(void *arg)
{
    solver_free *f = arg;
    const double t = hk_time();
    const hk_backend *be = NULL;
    if (hk_backend_get(hk_backend_name(f->be), &be)) hk_error_clear(); /* started before */
    hk_solver_destroy(f->s);
    f->s = NULL;
    f->seconds = hk_time() - t;
    return NULL;
}

/* *s handed to the thread (NULL after); freed here where no thread starts */
static void solver_free_start(solver_free *f, hk_solver **s, const hk_backend *be)
{
    f->s = *s, f->be = be, f->seconds = 0;
    *s = NULL;
    f->running = hk_thread_create(&f->thread, solver_free_main, f) == 0;
    if (!f->running) {
        const double t = hk_time();
        hk_solver_destroy(f->s);
        f->s = NULL;
        f->seconds = hk_time() - t;
    }
}

static void solver_free_join(solver_free *f)
{
    if (!f->running) return;
    pthread_join(f->thread, NULL);
    f->running = 0;
}

/* Whether this process's device has room for the recovery of m beside the solver, with its
 * chunks as large as after the solver's frees (the same chunks, the same bytes). */
static int recover_beside_solver(const hk_backend *be, const hk_mesh *m)
{
    return be && hk_run_device_free(be) >= hk_postproc_on_bytes(m);
}

/* The whole model's steps (hk_assemble_prepare) for hk_part_distribute, on rank 0. */
typedef struct prepare_ctx {
    const hk_case *c;
    const hk_problem *p;
    hk_system *prep;
} prepare_ctx;

static int prepare_whole(void *ctx)
{
    const prepare_ctx *x = ctx;
    return hk_run_model_error(x->c, hk_assemble_prepare(x->p, x->prep));
}

/* The owned rows of the part's K with global columns: sys->K's arrays taken over, its columns
 * renumbered in place (no second copy of the largest host array, no fresh pages to fault in).
 * sys->K is left empty: nothing after the solver's set-up reads it. */
static int owned_rows(const hk_part *pt, hk_system *sys, hk_bcsr *K)
{
    memset(K, 0, sizeof *K);
    K->bs = pt->mesh.dim;
    K->nbrows = pt->nown;
    K->nbcols = pt->nglobal;
    if (!sys->K.rowptr) { /* no cells: no rows */
        HK_CALL(hk_calloc(1, sizeof *K->rowptr, &K->rowptr));
        return 0;
    }
    const int64_t nnz = sys->K.rowptr[pt->nown];
    int32_t *col = sys->K.colind;
    const int64_t *gid = pt->gid;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nnz; k++)
        col[k] = (int32_t)gid[col[k]];
    K->rowptr = sys->K.rowptr; /* its rows past the owned ones are not read */
    K->colind = col;
    K->val = sys->K.val;
    sys->K.rowptr = NULL, sys->K.colind = NULL, sys->K.val = NULL;
    return 0;
}

/* The backend of a stage that ran on "host" or a device's name (NULL for the host). */
static const hk_backend *fem_backend(const char *on)
{
    const hk_backend *be = NULL;
    if (!strcmp(on, "host") || hk_backend_get(on, &be)) return NULL;
    return be;
}

/* Where a stage ran on every process, for rank 0's stage line: " on cuda" when on every
 * process's device, " on the host (why)" when on none (why: rank 0's note, if any), else
 * " on cuda, on the host on K of P processes (the first such process's note)". *all_on_device:
 * 1 when every process ran it on its device. Collective. */
typedef struct stage_where {
    char on[16];
    char note[320];
} stage_where;

static int where_all(const hk_comm *w, const char *on, const char *note, char *buf, size_t n,
                     int *all_on_device)
{
    const int P = hk_comm_size(w);
    stage_where mine = {{0}, {0}}, *all = NULL;
    snprintf(mine.on, sizeof mine.on, "%s", on);
    snprintf(mine.note, sizeof mine.note, "%s", note ? note : "");
    HK_CALL(hk_comm_agree(w, hk_malloc((size_t)P * sizeof *all, &all)));
    const int ierr = hk_comm_allgather(w, &mine, sizeof mine, all);
    int host = 0, first_host = -1, dev = -1;
    for (int q = 0; q < P && !ierr; q++) {
        if (strcmp(all[q].on, "host")) {
            if (dev < 0) dev = q;
        } else if (host++ == 0)
            first_host = q;
    }
    buf[0] = 0;
    *all_on_device = !ierr && host == 0;
    if (!ierr && host == 0)
        snprintf(buf, n, " on %s", all[0].on);
    else if (!ierr && dev < 0 && all[0].note[0])
        snprintf(buf, n, " on the host (%s)", all[0].note);
    else if (!ierr && dev >= 0)
        snprintf(buf, n, " on %s, on the host on %d of %d processes%s%s%s", all[dev].on, host, P,
                 all[first_host].note[0] ? " (" : "", all[first_host].note,
                 all[first_host].note[0] ? ")" : "");
    free(all);
    return ierr;
}

/* The fields of the part's ghost nodes from their owners (u, strain, stress, von Mises,
 * principal stresses, reactions: 22 values a node). */
enum { NODE_VALUES = 22 };

static void node_pack(const hk_fields *f, int64_t i, double *v)
{
    memcpy(v, f->u + 3 * i, 3 * sizeof *v);
    memcpy(v + 3, f->strain + 6 * i, 6 * sizeof *v);
    memcpy(v + 9, f->stress + 6 * i, 6 * sizeof *v);
    v[15] = f->von_mises[i];
    memcpy(v + 16, f->principal + 3 * i, 3 * sizeof *v);
    memcpy(v + 19, f->reaction + 3 * i, 3 * sizeof *v);
}

static void node_unpack(hk_fields *f, int64_t i, const double *v)
{
    memcpy(f->u + 3 * i, v, 3 * sizeof *v);
    memcpy(f->strain + 6 * i, v + 3, 6 * sizeof *v);
    memcpy(f->stress + 6 * i, v + 9, 6 * sizeof *v);
    f->von_mises[i] = v[15];
    memcpy(f->principal + 3 * i, v + 16, 3 * sizeof *v);
    memcpy(f->reaction + 3 * i, v + 19, 3 * sizeof *v);
}

/* hk_halo_exchange_with's callbacks on the part's fields: ctx is the fields, ghost k the
 * node nown + k (the part's ghosts follow its owned nodes, in the halo's order) */
typedef struct node_fields {
    hk_fields *f;
    int64_t nown;
} node_fields;

static void pack_owned(void *ctx, int64_t i, double *v)
{
    node_pack(((node_fields *)ctx)->f, i, v);
}

static void unpack_ghost(void *ctx, int64_t k, const double *v)
{
    const node_fields *x = ctx;
    node_unpack(x->f, x->nown + k, v);
}

/* Only the owned nodes other parts want are packed (a few boundary nodes of millions). */
static int ghost_fields(hk_halo *h, const hk_part *pt, hk_fields *f)
{
    node_fields x = {f, pt->nown};
    return hk_halo_exchange_with(h, NODE_VALUES, pack_owned, unpack_ghost, &x);
}

/* Empty fields of a part without cells (sums and maxima zero). */
static int empty_fields(const hk_part *pt, int nsupports, hk_fields *f)
{
    memset(f, 0, sizeof *f);
    const int64_t nn = pt->mesh.nnodes + 1;
    f->nnodes = pt->mesh.nnodes;
    f->nsupports = nsupports;
    HK_CALL(hk_calloc((size_t)(3 * nn), sizeof(double), &f->u));
    HK_CALL(hk_calloc((size_t)(6 * nn), sizeof(double), &f->strain));
    HK_CALL(hk_calloc((size_t)(6 * nn), sizeof(double), &f->stress));
    HK_CALL(hk_calloc((size_t)nn, sizeof(double), &f->von_mises));
    HK_CALL(hk_calloc((size_t)(3 * nn), sizeof(double), &f->principal));
    HK_CALL(hk_calloc((size_t)(3 * nn), sizeof(double), &f->reaction));
    HK_CALL(hk_calloc(1, sizeof(double), &f->cell_stress));
    HK_CALL(hk_calloc(1, sizeof(double), &f->cell_von_mises));
    HK_CALL(hk_calloc((size_t)nsupports + 1, sizeof(double[3]), &f->support_reaction));
    return hk_calloc((size_t)nsupports + 1, sizeof(double[3]), &f->support_moment);
}

/* The piece this process writes: the cells it owns and their nodes, with the case's fields.
 * The writer gathers them from the part's mesh and fields as it writes (no copy of the
 * piece); with *early (start_piece), only the fields are left to write. */
static int write_piece(const hk_case *c, const hk_part *pt, const hk_fields *all, const char *path,
                       hk_vtu_early **early)
{
    const hk_fields f = hk_run_select_fields(c, all); /* borrowed */
    if (*early) {
        hk_vtu_early *e = *early;
        *early = NULL;
        return hk_vtu_early_finish(e, path, &f);
    }
    const hk_vtu_options vo = hk_run_vtu_options(c);
    hk_mesh m = pt->mesh; /* a part without cells may have no region array: still written */
    static int32_t no_cells_region;
    if (!m.cell_region && m.cells.n == 0) m.cell_region = &no_cells_region;
    return hk_vtu_write_cells(path, &m, &f, &vo, pt->out_cell);
}

/* The head and mesh arrays of this process's piece written while the part is assembled and
 * solved, and the fields' pages filled ahead within half this process's share of the memory
 * the guard leaves the processes (as one process does: docs/output.md); NULL where the options
 * do not allow it, or for a part without cells (written at the end). */
static hk_vtu_early *start_piece(const hk_case *c, const hk_part *pt, int axisymmetric,
                                 const hk_run_memory *mem, int nprocs, const char *path)
{
    if (pt->mesh.cells.n == 0 || !pt->mesh.cell_region) return NULL;
    if (hk_app_make_parent_dirs(path)) {
        hk_error_clear(); /* the output stage says it, if the folder still cannot be made */
        return NULL;
    }
    const hk_fields layout = hk_run_field_layout(c, axisymmetric);
    const hk_vtu_options vo = hk_run_vtu_options(c);
    const double spare = (mem->host_available - nprocs * mem->host_estimate) / nprocs;
    return hk_vtu_early_start_cells(path, &pt->mesh, &layout, &vo,
                                    spare > 0 ? (int64_t)(spare / 2) : 0, pt->out_cell);
}

/* The solver's options on several processes: a case naming neither pc nor method gets
 * cg + amg (hooke run's one-process choice for all but small models, where it takes cholesky,
 * which is not distributed). */
static int choose_solver(hk_options *o, char *choice, size_t n)
{
    choice[0] = 0;
    if (hk_options_has(o, "pc")) return 0;
    const char *method = NULL;
    HK_CALL(hk_options_get_string(o, "method", &method));
    if (method && !strcmp(method, "cholesky")) return 0; /* refused by the library */
    snprintf(choice, n, " [chosen by hooke run: pc=amg on %d processes]",
             hk_comm_size(hk_comm_world()));
    return hk_options_set(o, "pc", "amg");
}

/* Rank 0's summary: the whole mesh, the reduced results; K's nonzero count (summed over the
 * processes) as the row pointer of one block row, which is all the summary reads of K. */
static void summary(const hk_case *c, hk_run *r0, const hk_system *prep, const hk_part *pt,
                    const hk_part_stats *ps, int64_t nnzb, hk_fields *fields, int ok, int report)
{
    r0->sys.ndof = (int64_t)pt->mesh.dim * pt->nglobal;
    r0->sys.nfixed = prep->nfixed;
    r0->sys.K.bs = pt->mesh.dim;
    r0->sys.K.nbrows = 1;
    if (hk_calloc(2, sizeof *r0->sys.K.rowptr, &r0->sys.K.rowptr)) return;
    r0->sys.K.rowptr[1] = nnzb;
    r0->fields = *fields;
    memset(fields, 0, sizeof *fields); /* r0's now */
    if (report == HK_RUN_REPORT_NONE) return;
    if (report == HK_RUN_REPORT_JSON) {
        hk_run_print_json(c, r0, ok, stdout);
        return;
    }
    hk_run_print_summary(c, r0, stdout);
    printf("  processes      %d, cells partitioned by %s, %lld..%lld owned nodes each\n",
           hk_comm_size(hk_comm_world()),
           strncmp(ps->by, "slabs", 5) ? hk_partitioner_name() : "slabs of cell layers",
           (long long)ps->min_nodes,
           (long long)ps->max_nodes);
}

/* The run's device communicator prepared (hk_dist_comm_prepare) where its solver will ask for
 * one: dist.comm=nccl on a device backend (--backend, else solver.backend: cuda or auto).
 * Read from a copy of the options, which the solver reads and checks itself. Collective. */
static int prepare_device_comm(const hk_comm *w, const hk_case *c, const hk_run_opts *o)
{
    hk_options *opts = NULL;
    const char *comm = "auto", *backend = "auto";
    if (hk_comm_size(w) < 2) return 0;
    int ierr = hk_options_copy(c->solver, &opts);
    if (!ierr) ierr = hk_options_get_string(opts, "dist.comm", &comm);
    if (!ierr) ierr = hk_options_get_string(opts, "backend", &backend);
    if (!ierr && o->backend) backend = o->backend;
    const int nccl = !ierr && !strcmp(comm, "nccl");
    hk_error_clear(); /* a bad value is the solver's to report, with its place */
    if (nccl && (!strcmp(backend, "cuda") || !strcmp(backend, "auto")))
        ierr = hk_dist_comm_prepare(w, backend);
    else
        ierr = 0;
    hk_options_destroy(opts);
    return ierr;
}

int hk_run_mpi_case(const hk_case *c, const hk_run_opts *o, const char *out, int report)
{
    const hk_comm *w = hk_comm_world();
    const int me = hk_comm_rank(w), P = hk_comm_size(w);
    hk_run_log L = {.on = me == 0 && !o->quiet, .t0 = hk_time()};
    hk_run r0; /* rank 0: the whole mesh and the summary */
    hk_system prep = {0}, sys = {0};
    hk_part pt = {0};
    hk_part_stats ps = {0};
    shared_model sm = {0};
    hk_bcsr K = {0};
    hk_solver *s = NULL;
    solver_free sfree = {0}; /* the solver freed on a thread during the output */
    hk_halo *halo = NULL;
    hk_fields fields = {0};
    hk_vtu_early *early = NULL; /* this process's piece, its mesh part written during the solve */
    double *u = NULL, tmax[1], t, t_prep = 0, t_bcast, t_backends[1], t_meshed = 0, t_agreed;
    double t_device = 0, t_own, pv[PROFILE_MAX];
    int64_t nnzb = 0;
    char choice[160] = "", piece[HK_CASE_PATH + 32], pvtu[HK_CASE_PATH], where[480], note[320];
    int ierr, solved = 0, written = 0, on_device = 0, prof = 0;
    memset(&r0, 0, sizeof r0);

    /* every process starts its device on a thread while rank 0 meshes (its context and
     * kernels take about half a second); rank 0's meshing waits for it after the mesh, the others
     * before they choose the stages' backends. With dist.comm=nccl that thread also makes the
     * run's device communicator (its id agreed here), which the solver then takes ready. */
    ierr = hk_comm_agree(w, prepare_device_comm(w, c, o));
    if (ierr) goto done;
    hk_run_device_start(o->backend);
    /* measurement: each process's share of the stages outside the solver on rank 0's log */
    ierr = hk_env_switch("HOOKE_RUN_PROFILE", "1",
                         "each process's times of the parts, assembly and postproc stages", "0",
                         "none, the default", 0, &prof);
    ierr = hk_comm_agree(w, ierr); /* every process in the broadcast below, or none */
    if (!ierr) ierr = hk_comm_bcast(w, &prof, sizeof prof, 0);

    /* 1. rank 0: mesh, model, the steps that need the whole model; or every process its own
     * part (solver.dist.mesh=parts, app/run_part_mesh.c) */
    int by_parts = 0;
    char parts_note[160] = "";
    if (!ierr) ierr = refuse(c);
    if (!ierr && c->dist_mesh == HK_PART_MESH_PARTS)
        ierr = hk_part_make(w, c, o, &r0, &prep, &pt, &ps, &by_parts, parts_note,
                            sizeof parts_note);
    if (!ierr && !by_parts && me == 0) {
        if (!r0.mesh.nnodes) ierr = hk_run_mesh(c, o, &r0);
        else /* the parts' fallback's whole mesh: its estimate, not a part's share */
            ierr = hk_run_memory_check_mesh(c, &r0.mesh, o->backend, 0, &r0.mem);
        t_meshed = hk_time();
    }
    if ((ierr = hk_comm_agree(w, ierr))) goto done;

    /* 2. the parts: rank 0 prepares the whole model while the cut runs on a thread */
    if (parts_note[0])
        hk_run_say(&L,
                   "partition: solver.dist.mesh=parts not applied (%s): process 0 meshed the whole "
                   "model",
                   parts_note);
    t_agreed = 0;
    if (!by_parts) {
        if (me == 0) {
            hk_run_say(
                &L, "assembly: %d processes; checks, supports and surface loads on the whole model",
                P);
            prepare_ctx pc = {c, &r0.model.problem, &prep};
            ierr = hk_part_distribute(w, &r0.model.problem, prepare_whole, &pc, &prep,
                                      c->dist_partition, &pt, &ps);
            r0.t_assembly = t_prep = ps.t_prep;
        } else
            ierr = hk_part_receive(w, &pt, &ps);
        /* agreed before the broadcasts: a process that failed here must not skip them alone */
        t = hk_time();
        if ((ierr = hk_comm_agree(w, ierr))) goto done;
        t_agreed = hk_time() - t;
    }
    t = hk_time();
    if ((ierr = hk_comm_agree(w, bcast_model(w, me == 0 ? &r0.model.problem : NULL, &sm))))
        goto done;
    t_bcast = hk_time() - t;
    hk_run_say(
        &L,
        "partition: %d parts by %s in %.2f s, %lld..%lld owned nodes, %lld..%lld cells, up to "
        "%lld ghost nodes",
        P, ps.by, ps.t_cut, (long long)ps.min_nodes, (long long)ps.max_nodes,
        (long long)ps.min_cells, (long long)ps.max_cells, (long long)ps.max_ghosts);

    /* the piece's file: its head and mesh arrays written from now on, on a thread */
    const char *path = out ? out : c->output;
    const size_t l = strlen(path);
    const int stem = l >= 4 && !strcmp(path + l - 4, ".vtu") ? (int)l - 4 : (int)l;
    snprintf(piece, sizeof piece, "%.*s-p%d.vtu", stem, path, me);
    snprintf(pvtu, sizeof pvtu, "%.*s.pvtu", stem, path);
    early = start_piece(c, &pt, sm.p.analysis == HK_AXISYMMETRIC, &r0.mem, P, piece);

    /* 3. every process: its rows, on its device where one process would assemble there (the
     * solver's backend is a device, --assembly not host, the model nothing the device
     * assembly lacks); the rows stay there, pattern and values, for the distributed set-up,
     * which reads them there (HOOKE_DIST_RESIDENT=0: they come down to the host) */
    part_problem(&sm, &pt);
    sys.fixed = pt.fixed, sys.u_fixed = pt.u_fixed, sys.f_ext = pt.f_ext;
    pt.fixed = NULL, pt.u_fixed = NULL, pt.f_ext = NULL; /* now the system's */
    if (o->backend) HK_TRY(hk_options_set(c->solver, "backend", o->backend));
    snprintf(r0.assembled_on, sizeof r0.assembled_on, "host");
    snprintf(r0.recovered_on, sizeof r0.recovered_on, "host");
    t = hk_time();
    hk_run_device_wait(); /* rank 0's waited for after meshing (not its communicator) */
    t_device = hk_time() - t;
    t = hk_time();
    ierr = hk_run_fem_backends(c, o, &sm.p, &r0);
    t_own = hk_time() - t;
    if ((ierr = hk_comm_agree(w, ierr))) goto done;
    t_backends[0] = hk_time() - t;
    {
        const double bytes = ps.bytes;
        pv[0] = ps.t_recv, pv[1] = ps.t_unpack, pv[2] = bytes / 1e6, pv[3] = t_agreed;
        pv[4] = t_device, pv[5] = t_own;
        static const char *const names[] = {
            "received (waiting too)", "unpacked",       "MB", "agreeing",
            "device start waited",    "backends chosen"};
        HK_TRY(profile(&L, w, prof, "parts", names, pv, 6, 0));
    }
    /* where rank 0's time from the mesh to the parts' assembly goes, every second of it: the
     * parts are built on a thread while the one before is sent, so the main thread's share of
     * them is the waits for the builds and the sends */
    if (by_parts)
        hk_run_say(&L,
                   "parts: %s, model broadcast in %.2f s, device start waited %.2f s, backends "
                   "chosen in %.2f s",
                   ps.steps, t_bcast, t_device, t_backends[0]);
    else if (L.on) {
        const double span = hk_time() - t_meshed;
        const double named = t_prep + ps.t_cut_wait + ps.t_wait + ps.t_send + t_agreed + t_bcast +
                             t_device + t_backends[0];
        hk_run_say(
            &L,
            "parts: %.2f s from the mesh to the parts' assembly: whole model prepared in %.2f s "
            "(meanwhile on a thread cut in %.2f s, boundary lists %.2f s), waiting for the cut "
            "%.2f s, waiting for parts built %.2f s (all built in %.2f s, on a thread), sent in "
            "%.2f s (%.0f MB), agreeing %.2f s, model broadcast in %.2f s, device start waited "
            "%.2f s, backends chosen in %.2f s, other %.2f s",
            span, t_prep, ps.t_cut, ps.t_lists, ps.t_cut_wait, ps.t_wait, ps.t_build, ps.t_send,
            ps.bytes / 1e6, t_agreed, t_bcast, t_device, t_backends[0], span - named);
    }
    snprintf(note, sizeof note, "%s", r0.assembly_note);
    int resident = 1, fields_ahead = 1, free_beside = 1;
    /* measurement: 0 brings a device-assembled part's rows down to the host first */
    ierr = hk_comm_agree(w, hk_env_switch("HOOKE_DIST_RESIDENT", "1",
                                          "a part assembled on its GPU keeps its rows there for "
                                          "the solver, the default",
                                          "0", "they come down to the host", 1, &resident));
    /* measurement: 0 leaves the fields' arrays and their pages to the recovery */
    if (!ierr)
        ierr = hk_comm_agree(w, hk_env_switch("HOOKE_RUN_FIELDS_AHEAD", "1",
                                              "the fields' pages taken on a thread during a "
                                              "device solve, the default",
                                              "0", "taken by the recovery", 1, &fields_ahead));
    /* measurement: 0 frees the solver before the recovery, on the main thread */
    if (!ierr)
        ierr = hk_comm_agree(w, hk_env_switch("HOOKE_RUN_SOLVER_FREE", "1",
                                              "the solver kept through a device recovery with "
                                              "room beside it, freed on a thread during the "
                                              "output, the default",
                                              "0", "freed before the recovery", 1, &free_beside));
    if (ierr) goto done;
    t = hk_time();
    /* a part may own no node (a small mesh on many processes): no rows, an empty f */
    if (pt.mesh.cells.n > 0) {
        const hk_backend *fb = fem_backend(r0.assembled_on);
        ierr = resident ? hk_assemble_rows_device_on(fb, &sm.p, pt.nown, &sys)
                        : hk_assemble_rows_on(fb, &sm.p, pt.nown, &sys);
        if (ierr == HK_ERR_MEMORY && r0.device_auto && strcmp(r0.assembled_on, "host")) {
            /* --assembly auto: a device too small for the part leaves it to the host */
            snprintf(note, sizeof note, "%s", hk_error_message());
            snprintf(r0.assembled_on, sizeof r0.assembled_on, "host");
            ierr = hk_assemble_rows(&sm.p, &sys);
        }
        ierr = hk_run_model_error(c, ierr);
    } else
        ierr = hk_calloc((size_t)pt.mesh.dim * pt.mesh.nnodes + 1, sizeof *sys.f, &sys.f);
    pv[0] = hk_time() - t;
    t_own = hk_time();
    if (!ierr && sys.Kd.be) /* the rows stayed on the device, their pattern too */
        K.bs = pt.mesh.dim, K.nbrows = pt.nown, K.nbcols = pt.nglobal;
    else if (!ierr)
        ierr = owned_rows(&pt, &sys, &K);
    pv[1] = hk_time() - t_own;
    tmax[0] = hk_time() - t;
    t_own = hk_time();
    if ((ierr = hk_comm_agree(w, ierr))) goto done;
    nnzb = sys.Kd.be ? sys.Kd.nnzb : K.rowptr[K.nbrows];
    HK_TRY(hk_comm_sum_i64(w, &nnzb, 1));
    HK_TRY(hk_comm_max(w, tmax, 1));
    HK_TRY(where_all(w, r0.assembled_on, note, where, sizeof where, &on_device));
    pv[2] = hk_time() - t_own;
    {
        static const char *const names[] = {"rows", "owned rows' global columns",
                                            "agreeing and sums"};
        HK_TRY(profile(&L, w, prof, "assembly", names, pv, 3, strcmp(r0.assembled_on, "host")));
    }
    if (!on_device) snprintf(r0.assembled_on, sizeof r0.assembled_on, "host");
    r0.t_assembly += tmax[0];
    hk_run_say(&L,
               "assembly: %lld DOFs (%lld prescribed), %lld nonzeros in %.2f s: the whole model's "
               "checks, supports and loads %.2f s, then %.2f s (rows of each part)%s",
               (long long)(pt.nglobal * pt.mesh.dim), (long long)prep.nfixed,
               (long long)(nnzb * pt.mesh.dim * pt.mesh.dim), r0.t_assembly, t_prep, tmax[0],
               where);

    /* 4. the distributed solve */
    t = hk_time();
    double t_kd_free = 0; /* HOOKE_DIST_PROFILE: the part's assembled K freed, in the stage */
    HK_TRY(choose_solver(c->solver, choice, sizeof choice));
    {
        /* the owned nodes' coordinates (the part's first nodes): pc=amg builds the rigid-body
         * modes from them; a part assembled on its device has them there, where the modes are
         * made on several processes */
        const int d = pt.mesh.dim;
        double *xyz = NULL;
        hk_nearnull nn = {.dim = d};
        if (sys.Kd.be && sys.coords_d && sys.coords_be == sys.Kd.be && hk_comm_size(w) > 1) {
            nn.coords = sys.coords_d;
            nn.coords_be = sys.coords_be;
        } else {
            ierr = hk_malloc((size_t)(d * pt.nown + 1) * sizeof *xyz, &xyz);
            for (int64_t i = 0; !ierr && i < pt.nown; i++)
                for (int k = 0; k < d; k++)
                    xyz[i * d + k] = pt.mesh.coords[3 * i + k];
            nn.coords = xyz;
        }
        /* a part assembled on its device: the values stay there (each process chooses
         * alone: both calls make the same collective set-up) */
        if (!ierr && sys.Kd.be) /* its rows' columns are the part's: pt.gid's */
            ierr = hk_solver_create_dist_device(w, pt.row0, pt.nglobal, &sys.Kd, pt.nown,
                                                pt.gid + pt.nown, pt.mesh.nnodes - pt.nown, &nn,
                                                c->solver, &s);
        else if (!ierr)
            ierr = hk_solver_create_dist(w, pt.row0, &K, &nn, c->solver, &s);
        t_kd_free = hk_time();
        hk_resident_bcsr_free(&sys.Kd); /* the solver has its own (the device's memory) */
        t_kd_free = hk_time() - t_kd_free;
        free(xyz);
    }
    /* a bad key, or a choice that is not distributed: at its case-file line */
    if (ierr == HK_ERR_OPTION || ierr == HK_ERR_UNSUPPORTED)
        ierr = hk_run_solver_option_error(c, ierr);
    if (ierr) goto done; /* agreed inside */
    hk_run_describe_solver(&r0, s);
    hk_run_say(&L, "solve: %s%s", r0.solver_desc, choice);
    if (L.on) hk_solver_set_monitor(s, monitor, &L);
    const int d = pt.mesh.dim;
    /* the zero guess written on the threads: the pages are taken there, not one by one by
     * the device's download of x into them (as the one-process run does) */
    const int64_t nu = d * pt.mesh.nnodes;
    HK_TRY(hk_malloc((size_t)(nu + 1) * sizeof *u, &u));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i <= nu; i++)
        u[i] = 0.0;
    /* the fields' arrays made now and their pages taken on a quarter of the threads while the
     * device solves, not by the recovery's downloads after it (four processes of one host
     * faulting theirs at once took twice one process's time); within half this process's
     * share of the memory the guard leaves (the early piece's filling takes the other half).
     * The host's recovery takes its pages on the threads that fill them. */
    if (fields_ahead && pt.mesh.cells.n > 0 && strcmp(r0.recovered_on, "host")) {
        const double spare = (r0.mem.host_available - P * r0.mem.host_estimate) / P;
        if (hk_fields_reserve_bytes(pt.mesh.nnodes, pt.mesh.cells.n) <= spare / 2) {
            const int nt = omp_get_max_threads() / 4;
            if (hk_fields_reserve(pt.mesh.nnodes, pt.mesh.cells.n, nt > 0 ? nt : 1))
                hk_error_clear(); /* the recovery makes its own */
        }
    }
    const double t_call = hk_time();
    ierr = hk_solver_solve(s, sys.f, u, &r0.res);
    if (ierr) goto done; /* agreed inside */
    const double t_called = hk_time() - t_call;
    for (int64_t i = 0; i < d * pt.nown; i++)
        if (sys.fixed[i]) u[i] = sys.u_fixed[i];
    r0.t_setup = r0.res.setup_seconds;
    r0.t_solve = hk_time() - t - r0.t_setup;
    r0.converged = hk_reason_converged(r0.res.reason);
    hk_run_say(&L, "solve: %s after %d iterations, true residual %.3e, in %.2f s (set-up %.2f s)",
               hk_reason_name(r0.res.reason), r0.res.iterations, r0.res.true_residual, r0.t_solve,
               r0.t_setup);
    if (L.on && getenv("HOOKE_DIST_PROFILE") && strcmp(getenv("HOOKE_DIST_PROFILE"), "0"))
        fprintf(stderr,
                "dist solve stage (rank 0): %.4f s: the assembled K freed %.4f, the solve call "
                "%.4f, the rest %.4f\n",
                r0.t_solve, t_kd_free, t_called, r0.t_solve - t_kd_free - t_called);
    /* 5. the ghosts' displacements, the fields, the ghosts' fields, the sums; the solver's
     * memory freed in the stage after the displacements' exchange, so that no process waits
     * at a collective for another's frees before its own recovery */
    t = hk_time();
    ierr = hk_halo_create(w, pt.row0, pt.nown, pt.mesh.nnodes - pt.nown, pt.gid + pt.nown, &halo);
    pv[0] = hk_time() - t;
    t_own = hk_time();
    if (!ierr) ierr = hk_halo_exchange(halo, u, d, u + d * pt.nown);
    if ((ierr = hk_comm_agree(w, ierr))) goto done;
    pv[1] = hk_time() - t_own;
    /* the solver kept through a device recovery that has room beside it, then freed on a
     * thread during the output; else freed here, its device memory the recovery's */
    t_own = hk_time();
    const hk_backend *rbe = pt.mesh.cells.n > 0 ? fem_backend(r0.recovered_on) : NULL;
    const int solver_kept = free_beside && rbe && recover_beside_solver(rbe, &pt.mesh);
    if (!solver_kept) {
        hk_solver_destroy(s);
        s = NULL;
    }
    pv[2] = hk_time() - t_own;
    t_own = hk_time();
    note[0] = 0;
    if (pt.mesh.cells.n > 0) {
        ierr = hk_postproc_part_on(rbe, &sm.p, &sys, u, pt.nown, &fields);
        if (ierr == HK_ERR_MEMORY && s) { /* short of room after all: the solver freed first */
            const double t_free = hk_time();
            hk_error_clear();
            hk_solver_destroy(s);
            s = NULL;
            pv[2] += hk_time() - t_free;
            ierr = hk_postproc_part_on(rbe, &sm.p, &sys, u, pt.nown, &fields);
        }
        if (ierr == HK_ERR_MEMORY && r0.device_auto && strcmp(r0.recovered_on, "host")) {
            snprintf(note, sizeof note, "%s", hk_error_message());
            snprintf(r0.recovered_on, sizeof r0.recovered_on, "host");
            ierr = hk_postproc_part(&sm.p, &sys, u, pt.nown, &fields);
        }
    } else
        ierr = empty_fields(&pt, sm.p.nsupports, &fields);
    pv[3] = hk_time() - t_own;
    if (s) solver_free_start(&sfree, &s, rbe);
    t_own = hk_time();
    if ((ierr = hk_comm_agree(w, ierr))) goto done;
    pv[4] = hk_time() - t_own;
    t_own = hk_time();
    HK_TRY(ghost_fields(halo, &pt, &fields));
    pv[5] = hk_time() - t_own;
    t_own = hk_time();
    const int ns = sm.p.nsupports;
    HK_TRY(hk_comm_sum(w, (double *)fields.support_reaction, 3 * ns));
    HK_TRY(hk_comm_sum(w, (double *)fields.support_moment, 3 * ns));
    double mx[2] = {fields.max_u, fields.max_von_mises};
    HK_TRY(hk_comm_max(w, mx, 2));
    fields.max_u = mx[0], fields.max_von_mises = mx[1];
    tmax[0] = hk_time() - t;
    HK_TRY(hk_comm_max(w, tmax, 1));
    r0.t_post = tmax[0];
    HK_TRY(where_all(w, r0.recovered_on, note, where, sizeof where, &on_device));
    pv[6] = hk_time() - t_own;
    hk_fields_reserve_stats(&pv[7], &pv[8]);
    pv[8] /= 1e6;
    {
        static const char *const names[] = {"halo made",
                                            "ghosts' u",
                                            "solver freed",
                                            "fields",
                                            "agreeing",
                                            "ghosts' fields",
                                            "sums",
                                            "fields' pages taken during the solve on a thread",
                                            "MB"};
        HK_TRY(profile(&L, w, prof, "postproc", names, pv, 9, strcmp(r0.recovered_on, "host")));
    }
    if (!on_device) snprintf(r0.recovered_on, sizeof r0.recovered_on, "host");
    hk_run_say(&L, "postproc: strains, stresses, reactions in %.2f s%s", r0.t_post, where);
    solved = 1;

    /* 6. one piece per process, the .pvtu naming them */
    t = hk_time();
    if ((ierr = hk_comm_agree(w, me == 0 ? hk_app_make_parent_dirs(path) : 0))) goto done;
    if ((ierr = hk_comm_agree(w, write_piece(c, &pt, &fields, piece, &early)))) goto done;
    if (me == 0) {
        char **names = NULL;
        ierr = hk_calloc((size_t)P, sizeof *names, &names);
        for (int q = 0; q < P && !ierr; q++) {
            char full[HK_CASE_PATH + 32];
            snprintf(full, sizeof full, "%.*s-p%d.vtu", stem, path, q);
            const char *slash = strrchr(full, '/');
            names[q] = strdup(slash ? slash + 1 : full);
            if (!names[q]) ierr = hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
        }
        const hk_fields fl = hk_run_field_layout(c, fields.axisymmetric);
        const hk_vtu_options vo = {.float32 = c->float32};
        if (!ierr) ierr = hk_pvtu_write(pvtu, P, (const char *const *)names, &fl, 1, &vo);
        for (int q = 0; names && q < P; q++)
            free(names[q]);
        free(names);
    }
    {
        const double t_join = hk_time(); /* in the stage: a wait here is the output's */
        solver_free_join(&sfree);
        if (prof && sfree.seconds > 0)
            hk_run_say(&L, "output: rank 0's solver freed on a thread in %.2f s, %.2f s waited",
                       sfree.seconds, hk_time() - t_join);
    }
    if ((ierr = hk_comm_agree(w, ierr))) goto done;
    tmax[0] = hk_time() - t;
    HK_TRY(hk_comm_max(w, tmax, 1));
    r0.t_output = tmax[0];
    snprintf(r0.output, sizeof r0.output, "%s", pvtu);
    hk_run_say(&L, "output: %s and %d pieces in %.2f s", pvtu, P, r0.t_output);
    written = 1;
    if (!r0.converged)
        ierr = hk_error_set(
            HK_ERR_NUMERIC, __FILE__, __LINE__,
            "%s: the solver stopped without converging (%s after %d iterations, relative "
            "residual %.3e); try another preconditioner (--set solver.pc=...), more iterations "
            "(--set solver.maxit=...) or check the supports",
            c->path, hk_reason_name(r0.res.reason), r0.res.iterations, r0.res.true_residual);
    ierr = hk_comm_agree(w, ierr); /* the same status everywhere (convergence is global) */
    goto done;
fail:
    fprintf(stderr, "hooke run: process %d: %s\n", me, hk_error_message());
    ierr = ierr ? ierr : HK_ERR_INTERNAL; /* not agreed: hk_comm_world_end aborts the run */
done:
    hk_run_device_end(); /* the device's thread joined (a run stopped early: its start too) */
    r0.t_total = hk_time() - L.t0;
    if (me == 0) {
        char msg[1024] = "";
        if (ierr) snprintf(msg, sizeof msg, "%s", hk_error_message());
        if (solved && written)
            summary(c, &r0, &prep, &pt, &ps, nnzb, &fields, ierr == 0, report);
        else if (report == HK_RUN_REPORT_JSON) {
            printf("{\"ok\": false, \"error\": \"");
            for (const char *q = msg; *q; q++)
                printf(*q == '"' || *q == '\\'    ? "\\%c"
                       : (unsigned char)*q < 0x20 ? " "
                                                  : "%c",
                       *q);
            printf("\"}\n");
        }
        fflush(stdout);
        if (ierr) fprintf(stderr, "hooke run: %s\n", msg);
    }
    hk_halo_destroy(halo);
    solver_free_join(&sfree);
    hk_solver_destroy(s);
    hk_fields_reserve_cancel(); /* a run stopped before its recovery */
    hk_dist_comm_end(); /* the run's device communicator, if one was prepared */
    hk_bcsr_free(&K); /* sys.K's pattern and values, taken over by owned_rows */
    hk_fields_free(&fields);
    free(u);
    hk_system_free(&sys);
    hk_system_free(&prep);
    hk_vtu_early_cancel(early); /* before the part's mesh it writes from */
    hk_part_free(&pt);
    shared_free(&sm);
    hk_run_free(&r0);
    return ierr ? 1 : 0;
}

int hk_cmd_run_mpi(int argc, char **argv)
{
    hk_run_args a;
    const int st = hk_run_args_parse(argc, argv, &a);
    if (!a.go) { /* the same arguments on every process: the same status */
        free(a.sets);
        return st;
    }
    const hk_comm *w = hk_comm_world();
    hk_case c;
    const int loaded = hk_case_load(a.case_path, a.nsets, a.sets, &c);
    int err = hk_comm_agree(w, loaded);
    free(a.sets);
    if (err) {
        if (!loaded) hk_case_free(&c);
        if (hk_comm_rank(w) == 0) fprintf(stderr, "hooke run: %s\n", hk_error_message());
        return 1;
    }
    const hk_run_opts o = {.backend = a.backend,
                           .assembly = a.assembly,
                           .verbose = a.verbose,
                           .quiet = a.quiet,
                           .log = stderr};
    err = hk_run_mpi_case(&c, &o, a.out, a.json ? HK_RUN_REPORT_JSON : HK_RUN_REPORT_TEXT);
    hk_case_free(&c);
    return err;
}
