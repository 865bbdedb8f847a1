/* `hooke bench assembly`: assembly throughput (elements per second) of hk_assemble_stiffness
 * for every element type on generated meshes, with all threads next to one thread (the
 * baseline, measured in the same run), and the stage times of a 3D hex8 case of about 1M DOFs
 * (--size medium/large; 200k for small): mesh generation, assembly with loads and supports,
 * and the solve (cg + jacobi) when not disabled. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "bench.h"
#include "hooke/fem.h"

static void asm_usage(FILE *f)
{
    fprintf(f, "usage: hooke bench assembly [--size small|medium|large] [--types LIST]\n"
               "                            [--cells N] [--no-solve] [--backend B] [--json F]\n\n"
               "Elements per second of the stiffness assembly (pattern + numeric, block CSR) for\n"
               "each element type (default all: tri3,tri6,quad4,quad8,quad9,tet4,tet10,hex8,\n"
               "hex20,hex27) on generated meshes of about 50k/300k/1M DOFs (small/medium/large),\n"
               "with every OpenMP thread and with one (baseline). Then the stage times of a hex8\n"
               "box of N^3 cells (--cells N; default 40 for small, 69 otherwise: 1.03M DOFs):\n"
               "generation, hk_assemble (gravity, one face fixed), solve (cg + jacobi, tol 1e-6,\n"
               "on --backend; --no-solve skips it). With a CUDA device (and --backend not cpu),\n"
               "the same meshes assembled (hk_assemble_stiffness_on) and recovered (hk_postproc_on)\n"
               "on the device beside the host's all-thread figures.\n");
}

typedef struct asm_ctx {
    hk_problem p;
} asm_ctx;

static int assemble_once(void *ctx)
{
    asm_ctx *c = ctx;
    hk_bcsr K;
    int ierr = hk_assemble_stiffness(&c->p, &K);
    hk_bcsr_free(&K);
    return ierr;
}

typedef struct asm_row {
    const char *type;
    long long elements, dofs;
    double s_all, s_one; /* seconds per assembly: all threads, one thread */
} asm_row;

/* Mesh of type t with about target DOFs. */
static int make_mesh(hk_eltype t, double target, hk_mesh *m)
{
    const hk_eltype_info *inf = hk_eltype_get(t);
    if (!inf) return hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__, "no element type %d", t);
    const int d = inf->dim, order = inf->order;
    int n = (int)lround(pow(target / d, 1.0 / d) / order);
    if (n < 2) n = 2;
    if (d == 2) return hk_mesh_rectangle(2.0, 1.0, 2 * n, n, t, m);
    return hk_mesh_box(1.0, 1.0, 1.0, n, n, n, t, m);
}

static int bench_type(hk_eltype t, double target, asm_row *row)
{
    int ierr;
    hk_mesh m;
    memset(&m, 0, sizeof m);
    HK_TRY(make_mesh(t, target, &m));
    hk_material mat = {.name = "steel", .E = 200e9, .nu = 0.3, .rho = 7800};
    hk_material *mats = calloc((size_t)m.nregions, sizeof *mats);
    HK_TRY_CHECK(mats, HK_ERR_MEMORY, "out of host memory");
    for (int r = 0; r < m.nregions; r++)
        mats[r] = mat;
    asm_ctx c = {.p = {.mesh = &m,
                       .analysis = m.dim == 2 ? HK_PLANE_STRESS : HK_SOLID,
                       .thickness = 1,
                       .materials = mats}};
    row->type = hk_eltype_get(t)->name;
    row->elements = (long long)m.cells.n;
    row->dofs = (long long)m.dim * m.nnodes;
    int nthr = omp_get_max_threads();
    ierr = hk_bench_time(assemble_once, &c, 1, 3, 0.3, &row->s_all);
    if (!ierr) {
        omp_set_num_threads(1);
        ierr = hk_bench_time(assemble_once, &c, 1, 3, 0.3, &row->s_one);
        omp_set_num_threads(nthr);
    }
    free(mats);
fail:
    hk_mesh_free(&m);
    return ierr;
}

/* ---- the device's assembly and recovery beside the host's, on the same meshes ---------- */

typedef struct dev_row {
    const char *type;
    long long elements;
    double s_host, s_dev;         /* hk_assemble_stiffness, all threads / _on(cuda) */
    double s_rec_host, s_rec_dev; /* hk_postproc, all threads / _on(cuda) */
} dev_row;

typedef struct dev_ctx {
    const hk_backend *be; /* NULL: the host */
    hk_problem p;
    const hk_system *s;
    const double *u;
} dev_ctx;

static int dev_assemble_once(void *ctx)
{
    dev_ctx *c = ctx;
    hk_resident_bcsr K;
    int ierr = hk_assemble_stiffness_on(c->be, &c->p, &K);
    hk_resident_bcsr_free(&K);
    return ierr;
}

static int recover_once(void *ctx)
{
    dev_ctx *c = ctx;
    hk_fields f;
    int ierr = hk_postproc_on(c->be, &c->p, c->s, c->u, &f);
    hk_fields_free(&f);
    return ierr;
}

/* Type t's mesh (as bench_type), assembled and recovered on the host (all threads) and on be:
 * the stiffness (pattern + element matrices; on the device it stays there) and the recovery
 * from a smooth displacement field (strains, stresses, invariants, reactions). */
static int bench_device_type(const hk_backend *be, hk_eltype t, double target, dev_row *row)
{
    int ierr;
    hk_mesh m;
    hk_system s;
    double *u = NULL;
    hk_material *mats = NULL;
    memset(&m, 0, sizeof m);
    memset(&s, 0, sizeof s);
    HK_TRY(make_mesh(t, target, &m));
    HK_TRY(hk_calloc((size_t)m.nregions, sizeof *mats, &mats));
    for (int r = 0; r < m.nregions; r++)
        mats[r] = (hk_material){.name = "steel", .E = 200e9, .nu = 0.3, .rho = 7800};
    hk_support sup = {.boundary = hk_mesh_find_boundary(&m, m.dim == 2 ? "left" : "xmin"),
                      .mask = 7};
    dev_ctx c = {.p = {.mesh = &m,
                       .analysis = m.dim == 2 ? HK_PLANE_STRESS : HK_SOLID,
                       .thickness = 1,
                       .materials = mats,
                       .nsupports = 1,
                       .supports = &sup}};
    HK_TRY(hk_assemble(&c.p, &s));
    HK_TRY(hk_malloc((size_t)s.ndof * sizeof *u, &u));
    for (int64_t i = 0; i < m.nnodes; i++)
        for (int k = 0; k < m.dim; k++)
            u[i * m.dim + k] = 1e-4 * sin(1.3 * m.coords[3 * i] + 0.7 * m.coords[3 * i + 1] + k);
    c.s = &s, c.u = u;
    row->type = hk_eltype_get(t)->name;
    row->elements = (long long)m.cells.n;
    HK_TRY(hk_bench_time(dev_assemble_once, &c, 1, 3, 0.3, &row->s_host));
    HK_TRY(hk_bench_time(recover_once, &c, 1, 3, 0.3, &row->s_rec_host));
    c.be = be;
    HK_TRY(hk_bench_time(dev_assemble_once, &c, 1, 3, 0.3, &row->s_dev));
    HK_TRY(hk_bench_time(recover_once, &c, 1, 3, 0.3, &row->s_rec_dev));
fail:
    free(u);
    free(mats);
    hk_system_free(&s);
    hk_mesh_free(&m);
    return ierr;
}

/* The device table: every type of the host table on the cuda backend, when it is usable. */
static int bench_device(const char *types, double target, dev_row *rows, int *nrows)
{
    const hk_backend *be = NULL;
    *nrows = 0;
    if (hk_backend_get("cuda", &be)) {
        printf("\n## Device assembly and recovery: skipped (%s)\n", hk_error_message());
        return 0;
    }
    printf("\n## Device assembly and recovery (cuda) beside the host's %d threads, same meshes\n\n",
           omp_get_max_threads());
    hk_table_head(stdout, "lrrrrrrr",
                  "type|elements|assembly el/s (host)|assembly el/s (cuda)|ratio|"
                  "recovery el/s (host)|recovery el/s (cuda)|ratio");
    char list[256];
    snprintf(list, sizeof list, "%s", types);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int t = -1;
        for (int k = 0; k < HK_EL_COUNT; k++)
            if (hk_eltype_get((hk_eltype)k) && !strcmp(hk_eltype_get((hk_eltype)k)->name, tok)) t = k;
        dev_row *r = &rows[*nrows];
        if (t < 0) continue; /* named in the host table's message already */
        HK_CALL(bench_device_type(be, (hk_eltype)t, target, r));
        (*nrows)++;
        hk_table_row(stdout, "%s|%lld|%.3g|%.3g|%.1f|%.3g|%.3g|%.1f", r->type, r->elements,
                     r->elements / r->s_host, r->elements / r->s_dev, r->s_host / r->s_dev,
                     r->elements / r->s_rec_host, r->elements / r->s_rec_dev,
                     r->s_rec_host / r->s_rec_dev);
    }
    return 0;
}

static void device_json(hk_json *j, const dev_row *rows, int n)
{
    hk_json_begin_array(j, "device");
    for (int k = 0; k < n; k++) {
        hk_json_begin_object(j, NULL);
        hk_json_string(j, "type", rows[k].type);
        hk_json_int(j, "elements", rows[k].elements);
        hk_json_number(j, "assembly_seconds_host", rows[k].s_host);
        hk_json_number(j, "assembly_seconds_cuda", rows[k].s_dev);
        hk_json_number(j, "recovery_seconds_host", rows[k].s_rec_host);
        hk_json_number(j, "recovery_seconds_cuda", rows[k].s_rec_dev);
        hk_json_end_object(j);
    }
    hk_json_end_array(j);
}

/* Stage times of the hex8 box of n^3 cells. */
static int bench_stages(int n, int solve, const char *backend, double st[4], long long *dofs,
                        int *iters)
{
    int ierr;
    hk_mesh m;
    hk_system s;
    hk_options *o = NULL;
    hk_solver *sv = NULL;
    double *u = NULL;
    memset(&m, 0, sizeof m);
    memset(&s, 0, sizeof s);
    for (int k = 0; k < 4; k++)
        st[k] = NAN;
    *iters = 0;
    double t0 = hk_time();
    HK_TRY(hk_mesh_box(1.0, 1.0, 1.0, n, n, n, HK_EL_HEX8, &m));
    st[0] = hk_time() - t0;
    *dofs = 3LL * m.nnodes;
    int xmin = hk_mesh_find_boundary(&m, "xmin");
    HK_TRY_CHECK(xmin >= 0, HK_ERR_INTERNAL, "the generated box has no boundary 'xmin'");
    hk_material *mats = calloc((size_t)m.nregions, sizeof *mats);
    HK_TRY_CHECK(mats, HK_ERR_MEMORY, "out of host memory");
    for (int r = 0; r < m.nregions; r++)
        mats[r] = (hk_material){.name = "steel", .E = 200e9, .nu = 0.3, .rho = 7800};
    hk_support sup = {.boundary = xmin, .mask = 7};
    hk_problem p = {.mesh = &m,
                    .analysis = HK_SOLID,
                    .materials = mats,
                    .gravity = {0, 0, -9.81},
                    .nsupports = 1,
                    .supports = &sup};
    t0 = hk_time();
    ierr = hk_assemble(&p, &s);
    st[1] = hk_time() - t0;
    free(mats);
    if (ierr) goto fail;
    if (solve) {
        char opt[160];
        hk_result res;
        snprintf(opt, sizeof opt, "backend=%s method=cg pc=jacobi tol=1e-6 maxit=20000", backend);
        HK_TRY(hk_options_create(&o));
        HK_TRY(hk_options_parse(o, opt));
        t0 = hk_time();
        HK_TRY(hk_solver_create(&s.K, o, &sv));
        st[2] = hk_time() - t0;
        HK_TRY(hk_calloc((size_t)s.ndof, sizeof *u, &u));
        t0 = hk_time();
        HK_TRY(hk_solver_solve(sv, s.f, u, &res));
        st[3] = hk_time() - t0;
        *iters = res.iterations;
    }
fail:
    free(u);
    hk_solver_destroy(sv);
    hk_options_destroy(o);
    hk_system_free(&s);
    hk_mesh_free(&m);
    return ierr;
}

int hk_bench_assembly(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    const char *types = "tri3,tri6,quad4,quad8,quad9,tet4,tet10,hex8,hex20,hex27";
    int cells = 0, solve = 1;
    for (int i = 1; i < argc;) {
        int r = hk_bench_option(argc, argv, &i, &bo, asm_usage); /* advances past what it reads */
        if (r < 0) return r == HK_BENCH_HELP ? 0 : 2;
        if (r > 0) continue;
        const char *a = argv[i++];
        if (!strcmp(a, "--types") && i < argc) {
            types = argv[i++];
        } else if (!strcmp(a, "--cells") && i < argc) {
            cells = atoi(argv[i++]);
            if (cells < 1) {
                fprintf(stderr, "hooke bench assembly: --cells needs a positive integer\n");
                return 2;
            }
        } else if (!strcmp(a, "--no-solve")) {
            solve = 0;
        } else {
            fprintf(stderr,
                    "hooke bench assembly: unknown option '%s' (hooke bench assembly "
                    "--help)\n",
                    a);
            return 2;
        }
    }
    const double target = hk_bench_pick(bo.size, 5e4, 3e5, 1e6);
    if (!cells) cells = (int)hk_bench_pick(bo.size, 40, 69, 69);

    asm_row rows[HK_EL_COUNT];
    int nrows = 0;
    printf("## Assembly throughput (hk_assemble_stiffness: pattern + numeric), %d threads\n\n",
           omp_get_max_threads());
    hk_table_head(stdout, "lrrrrrrr",
                  "type|elements|DOFs|ms (all threads)|elements/s|ms (1 thread)|"
                  "elements/s (1 thread)|speed-up");
    char list[256];
    snprintf(list, sizeof list, "%s", types);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int t = -1;
        for (int k = 0; k < HK_EL_COUNT; k++) {
            const hk_eltype_info *inf = hk_eltype_get((hk_eltype)k);
            if (inf && !strcmp(inf->name, tok)) t = k;
        }
        if (t < 0 || t < HK_EL_TRI3 || t > HK_EL_HEX27) {
            fprintf(stderr,
                    "hooke bench assembly: unknown element type '%s' in --types; use "
                    "tri3, tri6, quad4, quad8, quad9, tet4, tet10, hex8, hex20, hex27\n",
                    tok);
            return 2;
        }
        asm_row *r = &rows[nrows];
        if (bench_type((hk_eltype)t, target, r)) {
            fprintf(stderr, "hooke bench assembly: %s: %s\n", tok, hk_error_message());
            return 1;
        }
        nrows++;
        hk_table_row(stdout, "%s|%lld|%lld|%.1f|%.3g|%.1f|%.3g|%.2f", r->type, r->elements, r->dofs,
                     1e3 * r->s_all, r->elements / r->s_all, 1e3 * r->s_one, r->elements / r->s_one,
                     r->s_one / r->s_all);
    }

    dev_row drows[HK_EL_COUNT];
    int ndrows = 0;
    if (strcmp(bo.backend, "cpu") && bench_device(types, target, drows, &ndrows)) {
        fprintf(stderr, "hooke bench assembly: device: %s\n", hk_error_message());
        return 1;
    }

    double st[4];
    long long dofs = 0;
    int iters = 0;
    printf("\n## Stages of a hex8 box of %d^3 cells\n\n", cells);
    if (bench_stages(cells, solve, bo.backend, st, &dofs, &iters)) {
        fprintf(stderr, "hooke bench assembly: stages: %s\n", hk_error_message());
        return 1;
    }
    hk_table_head(stdout, "lr", "stage|seconds");
    hk_table_row(stdout, "DOFs|%lld", dofs);
    hk_table_row(stdout, "generation (hk_mesh_box)|%.3f", st[0]);
    hk_table_row(stdout, "assembly (hk_assemble: checks, K, loads, elimination)|%.3f", st[1]);
    if (solve) {
        hk_table_row(stdout, "solver set-up (%s, cg + jacobi)|%.3f", bo.backend, st[2]);
        hk_table_row(stdout, "solve (%d iterations, tol 1e-6)|%.3f", iters, st[3]);
    }

    if (bo.json) {
        hk_json j;
        if (hk_json_open(&j, bo.json)) return 1;
        hk_json_begin_object(&j, NULL);
        hk_json_string(&j, "benchmark", "assembly");
        hk_json_string(&j, "size", hk_bench_size_name(bo.size));
        hk_json_int(&j, "threads", omp_get_max_threads());
        hk_json_begin_array(&j, "types");
        for (int k = 0; k < nrows; k++) {
            hk_json_begin_object(&j, NULL);
            hk_json_string(&j, "type", rows[k].type);
            hk_json_int(&j, "elements", rows[k].elements);
            hk_json_int(&j, "dofs", rows[k].dofs);
            hk_json_number(&j, "seconds", rows[k].s_all);
            hk_json_number(&j, "elements_per_second", rows[k].elements / rows[k].s_all);
            hk_json_number(&j, "seconds_1thread", rows[k].s_one);
            hk_json_number(&j, "elements_per_second_1thread", rows[k].elements / rows[k].s_one);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        device_json(&j, drows, ndrows);
        hk_json_begin_object(&j, "stages");
        hk_json_int(&j, "cells_per_side", cells);
        hk_json_int(&j, "dofs", dofs);
        hk_json_number(&j, "generation", st[0]);
        hk_json_number(&j, "assembly", st[1]);
        hk_json_number(&j, "solver_setup", st[2]);
        hk_json_number(&j, "solve", st[3]);
        hk_json_int(&j, "iterations", iters);
        hk_json_end_object(&j);
        hk_json_end_object(&j);
        if (hk_json_close(&j)) return 1;
    }
    return 0;
}
