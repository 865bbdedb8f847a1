/* hooke run: the whole chain for one case file, and the pipeline functions the tests share.
 *
 *   case.yaml -> hk_case_load -> mesh (Gmsh or generator) -> hk_case_bind -> hk_assemble
 *             -> hk_solver (options from the case) -> hk_postproc -> hk_vtu_write
 *
 * Progress goes to stderr one line per stage; the summary to stdout (or JSON with --json).
 * Exit 0 only when the solve converged and the file was written. */
#include <ctype.h>
#include <math.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "case.h"

/* ---- progress ------------------------------------------------------------------------- */

typedef struct run_log {
    FILE *f;
    int quiet, verbose;
    double t0, last;
} run_log;

static void stage(run_log *L, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void stage(run_log *L, const char *fmt, ...)
{
    if (L->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    hk_run_vprogress(L->f, L->t0, fmt, ap);
    va_end(ap);
}

/* Residual monitor: every check with --verbose, else about once a second. */
static void monitor(int it, double rnorm, void *ctx)
{
    run_log *L = ctx;
    if (L->quiet) return;
    double now = hk_time();
    if (!L->verbose && now - L->last < 1.0) return;
    L->last = now;
    fprintf(L->f, "[%7.2f s]   solve: iteration %6d  residual %.3e\n", now - L->t0, it, rnorm);
    fflush(L->f);
}

/* ---- the pipeline --------------------------------------------------------------------- */

/* The backend of a stage that ran on "host" or a device's name (NULL for the host). */
static const hk_backend *stage_backend(const char *on)
{
    const hk_backend *be = NULL;
    if (!on[0] || !strcmp(on, "host") || hk_backend_get(on, &be)) return NULL;
    return be;
}

static const char *analysis_name(hk_analysis a)
{
    return a == HK_PLANE_STRESS   ? "plane stress"
           : a == HK_PLANE_STRAIN ? "plane strain"
           : a == HK_AXISYMMETRIC ? "axisymmetric"
                                  : "3d";
}

static const char *eltype_name(int t)
{
    const hk_eltype_info *in = t >= 0 && t < HK_EL_COUNT ? hk_eltype_get((hk_eltype)t) : NULL;
    return in && in->name ? in->name : "?";
}

/* "tet10" or "tri6 + quad8": the element types present. */
static void element_types(const hk_mesh *m, char *buf, size_t n)
{
    int seen[HK_EL_COUNT] = {0};
    for (int64_t e = 0; e < m->cells.n; e++)
        if (m->cells.type[e] < HK_EL_COUNT) seen[m->cells.type[e]] = 1;
    size_t k = 0;
    buf[0] = 0;
    for (int t = 0; t < HK_EL_COUNT && k < n; t++)
        if (seen[t]) k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? " + " : "", eltype_name(t));
}

/* The solver reports bad options by name; point at the case-file line of that key. */
int hk_run_solver_option_error(const hk_case *c, int err)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", hk_error_message());
    int best = -1;
    size_t bestlen = 0;
    for (int i = 0; i < c->nsolver_keys; i++) {
        /* the key as the library quotes it: 'key' or key=value */
        char q[HK_CASE_NAME + 4], e[HK_CASE_NAME + 4];
        snprintf(q, sizeof q, "'%s'", c->solver_keys[i]);
        snprintf(e, sizeof e, "%s=", c->solver_keys[i]);
        size_t l = strlen(c->solver_keys[i]);
        int hit = strstr(msg, q) != NULL;
        for (const char *p = msg; !hit && (p = strstr(p, e)); p++)
            hit = p == msg || !(isalnum((unsigned char)p[-1]) || p[-1] == '.' || p[-1] == '_');
        if (hit && l > bestlen) best = i, bestlen = l;
    }
    if (best < 0) return err;
    hk_case_error(c, c->solver_loc[best], "%s", msg);
    return err;
}

/* What to change when a solve did not converge, for its message: a tolerance below the
 * rounding floor (the true residual stalled within reach of it) asks for a larger tol, not
 * another preconditioner. prefix is "--set solver." (hooke run) or "" (hooke solve). */
void hk_app_unconverged_hint(const hk_result *res, double tol, const char *prefix, char *buf,
                             size_t n)
{
    const double tr = res->true_residual;
    const int floor = res->reason == HK_DIVERGED_TRUE_RESIDUAL ||
                      (res->reason == HK_DIVERGED_STAGNATION && tr < 100 * tol);
    if (floor && tr > 0 && isfinite(tr)) {
        const double raise = pow(10, ceil(log10(2 * tr)));
        snprintf(buf, n,
                 "the tolerance %g is below what rounding lets this system reach (the true "
                 "residual stays near %.1e): raise it (%stol=%g)",
                 tol, tr, prefix, raise);
    } else if (res->reason == HK_DIVERGED_NAN)
        snprintf(buf, n,
                 "a value left the range of double precision: check the units and magnitudes "
                 "(E, loads, sizes) and the supports, or try another preconditioner "
                 "(%spc=...)",
                 prefix);
    else
        snprintf(buf, n,
                 "try another preconditioner (%spc=...), more iterations (%smaxit=...) or "
                 "check the supports",
                 prefix, prefix);
}

/* The solver's relative tolerance as the case gives it (the library's default 1e-8). */
static double case_tol(const hk_case *c)
{
    const char *v = NULL;
    if (hk_options_get_string(c->solver, "tol", &v) || !v) return 1e-8;
    return strtod(v, NULL);
}

/* The last place in msg where the boundary name of an item appears quoted, or NULL. */
static const char *quoted_at(const char *msg, const char *name)
{
    char q[HK_CASE_NAME + 4];
    snprintf(q, sizeof q, "'%s'", name);
    const char *last = NULL;
    for (const char *p = msg; (p = strstr(p, q)); p++)
        last = p;
    return last;
}

/* The model's fault lies in the case: the message gets the case-file place of what it names.
 * A rigid-body motion: the first support. Otherwise the load or support on the boundary it
 * quotes last (two supports that disagree: the second); loads first unless the message speaks
 * of supports. None found: the file alone. */
static int model_error(const hk_case *c, int err)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", hk_error_message());
    hk_case_loc loc = {0, 0, -1};
    const char *best = NULL;
    if (strstr(msg, "rigid") && c->nsupports) {
        hk_case_error(c, c->supports[0].loc, "%s", msg);
        return err;
    }
    const int supports_first = strstr(msg, "support") != NULL;
    for (int pass = 0; pass < 2 && !best; pass++) {
        if ((pass == 0) == supports_first) {
            for (int i = 0; i < c->nsupports; i++) {
                const char *q = quoted_at(msg, c->supports[i].boundary);
                if (q && (!best || q >= best)) best = q, loc = c->supports[i].loc;
            }
            continue;
        }
        for (int k = -1; k < c->nloadcases; k++) {
            const int n = k < 0 ? c->nloads : c->loadcases[k].nloads;
            const hk_case_load_item *ls = k < 0 ? c->loads : c->loadcases[k].loads;
            for (int i = 0; i < n; i++) {
                const char *q = ls[i].boundary[0] ? quoted_at(msg, ls[i].boundary) : NULL;
                if (q && (!best || q > best)) best = q, loc = ls[i].loc;
            }
        }
    }
    hk_case_error(c, loc, "%s", msg);
    return err;
}

/* A right-hand side beyond the solver's range comes from the loads: the message points at the
 * load (or gravity) of the largest value. */
static int rhs_error(const hk_case *c, int err)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", hk_error_message());
    if (!strstr(msg, "right-hand side")) return err;
    hk_case_loc loc = {0, 0, -1};
    double vmax = 0;
    for (int k = -1; k < c->nloadcases; k++) {
        const int n = k < 0 ? c->nloads : c->loadcases[k].nloads;
        const hk_case_load_item *ls = k < 0 ? c->loads : c->loadcases[k].loads;
        for (int i = 0; i < n; i++)
            for (int d = 0; d < 3; d++)
                if (fabs(ls[i].value[d]) > vmax) vmax = fabs(ls[i].value[d]), loc = ls[i].loc;
    }
    hk_case_error(c, loc, "%s", msg);
    return err;
}

/* One load case k on the shared K and solver: its right-hand side (k > 0: the model rebound
 * to the case's loads and assembled again, keeping only f and f_ext), the solve, the fields. */
static int solve_loadcase(const hk_case *c, run_log *L, hk_solver *s, hk_run *r, int k)
{
    int ierr = 0;
    hk_run_loadcase *lc = &r->lc[k];
    const hk_case_loadcase *cl = &c->loadcases[k];
    hk_system sk = r->sys, tmp = {0}; /* sk: a view of sys with this case's f and f_ext */
    double t = hk_time();
    snprintf(lc->name, sizeof lc->name, "%s", cl->name);
    if (k > 0) {
        HK_TRY(hk_case_bind_loadcase(c, &r->mesh, k, &r->model));
        ierr = hk_assemble_on(stage_backend(r->assembled_on), &r->model.problem, &tmp);
        if (ierr == HK_ERR_MODEL) ierr = model_error(c, ierr);
        if (ierr) goto fail;
        sk.f = tmp.f;
        sk.f_ext = tmp.f_ext;
    }
    lc->t_assembly = k > 0 ? hk_time() - t : 0;
    int grav = cl->gravity[0] != 0 || cl->gravity[1] != 0 || cl->gravity[2] != 0;
    int body = cl->body_force[0] != 0 || cl->body_force[1] != 0 || cl->body_force[2] != 0;
    stage(L, "load case %d/%d '%s': %d load%s%s%s", k + 1, c->nloadcases, cl->name, cl->nloads,
          cl->nloads == 1 ? "" : "s", grav ? ", gravity" : "", body ? ", body force" : "");
    t = hk_time();
    HK_TRY(hk_calloc((size_t)r->sys.ndof, sizeof *lc->u, &lc->u));
    ierr = hk_solver_solve(s, sk.f, lc->u, &lc->res);
    if (ierr == HK_ERR_NUMERIC) ierr = rhs_error(c, ierr);
    if (ierr) goto fail;
    for (int64_t i = 0; i < r->sys.ndof; i++)
        if (r->sys.fixed && r->sys.fixed[i]) lc->u[i] = r->sys.u_fixed[i];
    lc->t_solve = hk_time() - t; /* the set-up ran once, before the first case */
    lc->converged = hk_reason_converged(lc->res.reason);
    stage(L, "load case '%s': %s after %d iterations, true residual %.3e, in %.2f s", cl->name,
          hk_reason_name(lc->res.reason), lc->res.iterations, lc->res.true_residual, lc->t_solve);
    t = hk_time();
    HK_TRY(hk_postproc_on(stage_backend(r->recovered_on), &r->model.problem, &sk, lc->u,
                          &lc->fields));
    lc->t_post = hk_time() - t;
    r->t_assembly += lc->t_assembly;
    r->t_setup = lc->res.setup_seconds; /* one set-up, reported with every result */
    r->t_solve += lc->t_solve;
    r->t_post += lc->t_post;
fail:
    hk_system_free(&tmp);
    return ierr;
}

/* Every load case in turn on one solver (K is the same); unconverged cases are named at the
 * end, after every case has been solved and post-processed. */
static int solve_loadcases(const hk_case *c, run_log *L, hk_solver *s, hk_run *r)
{
    HK_CALL(hk_calloc((size_t)c->nloadcases, sizeof *r->lc, &r->lc));
    r->nlc = c->nloadcases;
    r->converged = 1;
    for (int k = 0; k < c->nloadcases; k++) {
        HK_CALL(solve_loadcase(c, L, s, r, k));
        r->converged &= r->lc[k].converged;
    }
    stage(L, "postproc: strains, stresses, reactions of %d load cases in %.2f s%s%s", r->nlc,
          r->t_post, strcmp(r->recovered_on, "host") ? " on " : "",
          strcmp(r->recovered_on, "host") ? r->recovered_on : "");
    r->t_total = hk_time() - L->t0;
    if (r->converged) return 0;
    char names[1024] = "";
    size_t n = 0;
    int nbad = 0, first = -1;
    for (int k = 0; k < r->nlc; k++)
        if (!r->lc[k].converged && n < sizeof names) {
            n += (size_t)snprintf(names + n, sizeof names - n, "%s'%s'", nbad ? ", " : "",
                                  r->lc[k].name);
            if (first < 0) first = k;
            nbad++;
        }
    const hk_result *res = &r->lc[first].res;
    char hint[400];
    hk_app_unconverged_hint(res, case_tol(c), "--set solver.", hint, sizeof hint);
    return hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                        "%s: the solver stopped without converging in load case%s %s (%s after "
                        "%d iterations, relative residual %.3e); %s",
                        c->path, nbad == 1 ? "" : "s", names, hk_reason_name(res->reason),
                        res->iterations, res->true_residual, hint);
}

/* Why the case wants K on the host whatever its model (a direct solve, output.matrix), or
 * NULL. */
static const char *case_wants_host_k(const hk_case *c)
{
    const char *method = NULL;
    if (!hk_options_get_string(c->solver, "method", &method) && method &&
        !strcmp(method, "cholesky"))
        return "the direct solver factors K on the host";
    return c->matrix_file[0] ? "output.matrix writes K from the host" : NULL;
}

/* Whether the device may assemble and recover this run (the memory guard's host model): not
 * with --assembly host, a modal analysis (assembled on the host), a case that wants K on the
 * host, nor on rank 0 of mpirun (it meshes the whole model; each process assembles its part).
 * What else keeps the assembly on the host is known after binding: hk_run_fem_backends then
 * has the guard check again. */
static int device_fem_possible(const hk_case *c, const hk_run_opts *o)
{
    if (o->assembly && !strcmp(o->assembly, "host")) return 0;
    if (hk_comm_size(hk_comm_world()) > 1) return 0;
    return !c->modal && !case_wants_host_k(c);
}

/* Mesh and bind the model (the first stage of hk_run_case), logging to L. */
static int run_mesh(const hk_case *c, const hk_run_opts *o, run_log *L, hk_run *r)
{
    int ierr = 0;
    double t;

    /* mesh while a device backend starts on a thread of its own (its context and handles take
     * about half a second); the memory check before meshing counts the host only, the one
     * after it waits for the device and checks both */
    hk_run_device_start(o->backend);
    t = hk_time();
    HK_TRY(hk_run_memory_check_geometry(c, o->backend, device_fem_possible(c, o), &r->mem));
    const double t_check = hk_time() - t;
    if (t_check >= 0.01)
        stage(L, "memory: estimated from the geometry in %.2f s (Gmsh reads it)", t_check);
    t = hk_time();
    if (c->generate) {
        stage(L, "meshing: %s %g x %g%s%.0g, %d x %d%s%.0d cells",
              c->gen_dim == 2 ? "rectangle" : "box", c->gen_size[0], c->gen_size[1],
              c->gen_dim == 3 ? " x " : "", c->gen_dim == 3 ? c->gen_size[2] : 0., c->gen_cells[0],
              c->gen_cells[1], c->gen_dim == 3 ? " x " : "", c->gen_dim == 3 ? c->gen_cells[2] : 0);
        /* the whole grid as one slab; renumbered, its RCM order from the grid's structure */
        if (c->mesh.renumber)
            HK_TRY(hk_mesh_grid_slab_rcm(c->gen_dim, c->gen_size, c->gen_cells, c->gen_element, 0,
                                         0, c->gen_cells[0], &r->mesh, NULL));
        else
            HK_TRY(hk_mesh_grid_slab(c->gen_dim, c->gen_size, c->gen_cells, c->gen_element, 0, 0,
                                     c->gen_cells[0], &r->mesh));
    } else {
        const size_t gl = strlen(c->geo_file);
        if (gl > 4 && !strcasecmp(c->geo_file + gl - 4, ".msh"))
            stage(L, "meshing: reading %s (a mesh file: its elements as they are)", c->geo_file);
        else
            stage(L, "meshing: %s (order %d%s)", c->geo_file, c->mesh.order,
                  c->mesh.quad ? ", quads" : "");
        hk_mesh_options mo = c->mesh;
        mo.verbose = o->verbose;
        HK_TRY(hk_mesh_load(c->geo_file, &mo, &r->mesh));
        if (*hk_mesh_load_notes()) stage(L, "meshing: %s", hk_mesh_load_notes());
        const hk_mesh_refine_stats rs = hk_mesh_load_refine_stats();
        if (rs.levels)
            stage(L,
                  "meshing: refined %d time%s, %lld -> %lld cells in %.2f s (%.2f GB/s), "
                  "quality min %.2f mean %.2f -> min %.2f mean %.2f",
                  rs.levels, rs.levels == 1 ? "" : "s", (long long)rs.cells_before,
                  (long long)rs.after.cells, rs.seconds,
                  rs.seconds > 0 ? rs.bytes / rs.seconds / 1e9 : 0.0, rs.before.min, rs.before.mean,
                  rs.after.min, rs.after.mean);
    }
    r->t_mesh = hk_time() - t;
    r->mem.host_peak_mesh = hk_run_peak_host_bytes();
    char types[128];
    hk_mesh_quality q = {0, 0, 0};
    element_types(&r->mesh, types, sizeof types);
    if (!c->generate && hk_mesh_load_refine_stats().levels)
        q = hk_mesh_load_refine_stats().after; /* the corners' shapes: the order changes none */
    else if (c->generate) /* one cell measures the grid's (0.1 s at 4.7M cells otherwise) */
        HK_TRY(hk_mesh_grid_quality(c->gen_dim, c->gen_size, c->gen_cells, c->gen_element, &q));
    else
        HK_TRY(hk_mesh_measure_quality(&r->mesh, &q));
    stage(L, "meshing: %lld nodes, %lld elements (%s) in %.2f s, quality min %.2f mean %.2f",
          (long long)r->mesh.nnodes, (long long)r->mesh.cells.n, types, r->t_mesh, q.min, q.mean);
    if (!c->generate) {
        char phases[256];
        hk_run_mesh_phases(phases, sizeof phases);
        stage(L, "meshing: phases (s): %s", phases);
    }

    t = hk_time();
    hk_run_device_wait();
    if (hk_time() - t >= 0.01)
        stage(L, "device: started %.2f s after meshing ended", hk_time() - t);
    HK_TRY(hk_run_memory_check_mesh(c, &r->mesh, o->backend, device_fem_possible(c, o), &r->mem));
    if (r->mem.host_estimate > 0)
        stage(L, "memory: about %.0f MB of host memory needed (%.0f MB available)%s",
              r->mem.host_estimate / 1e6, r->mem.host_available / 1e6,
              r->mem.device_estimate > 0 ? ", device checked too" : "");

    HK_TRY(hk_case_bind(c, &r->mesh, &r->model));
    snprintf(r->assembled_on, sizeof r->assembled_on, "host");
    snprintf(r->recovered_on, sizeof r->recovered_on, "host");
fail:
    hk_run_device_end(); /* a failed meshing leaves no start running */
    return ierr;
}

int hk_run_fem_backends(const hk_case *c, const hk_run_opts *o, const hk_problem *p, hk_run *r)
{
    const char *mode = o->assembly ? o->assembly : "auto", *name = "auto";
    const hk_backend *be = NULL;
    r->assembly_note[0] = 0;
    HK_CHECK(!strcmp(mode, "auto") || !strcmp(mode, "host") || !strcmp(mode, "device"), HK_ERR_ARG,
             "--assembly %s: give auto, host or device", mode);
    if (!strcmp(mode, "host")) return 0;
    const int force = !strcmp(mode, "device");
    r->device_auto = !force;
    HK_CALL(hk_options_get_string(c->solver, "backend", &name));
    if (hk_backend_get(name, &be) || !hk_fem_on_device(be)) {
        HK_CHECK(!force, HK_ERR_ARG,
                 "--assembly device needs the solve on a device (--backend cuda); this run "
                 "solves on %s",
                 be ? hk_backend_name(be) : name);
        return 0;
    }
    snprintf(r->recovered_on, sizeof r->recovered_on, "%s", hk_backend_name(be));
    const char *why = case_wants_host_k(c);
    if (!why) why = hk_assemble_on_limit(p);
    if (why) {
        HK_CHECK(!force, HK_ERR_UNSUPPORTED,
                 "%s: --assembly device: %s; assemble on the host (--assembly host or auto)",
                 c->path, why);
        snprintf(r->assembly_note, sizeof r->assembly_note, "%s", why);
        return 0;
    }
    snprintf(r->assembled_on, sizeof r->assembled_on, "%s", hk_backend_name(be));
    return 0;
}

/* Assemble (the second stage of hk_run_case) where r->assembled_on says, logging to L. */
static int run_assemble(const hk_case *c, run_log *L, hk_run *r)
{
    int ierr = 0;
    double t;
    t = hk_time();
    int grav = c->gravity[0] != 0 || c->gravity[1] != 0 || c->gravity[2] != 0;
    int body = c->body_force[0] != 0 || c->body_force[1] != 0 || c->body_force[2] != 0;
    if (c->modal)
        stage(L, "assembly: %s, %d material%s, %d support%s, modal (%s mass)",
              analysis_name(c->analysis), c->nmaterials, c->nmaterials == 1 ? "" : "s",
              c->nsupports, c->nsupports == 1 ? "" : "s",
              c->mass == HK_MASS_LUMPED ? "lumped" : "consistent");
    else if (c->nloadcases)
        stage(L, "assembly: %s, %d material%s, %d support%s, %d load cases",
              analysis_name(c->analysis), c->nmaterials, c->nmaterials == 1 ? "" : "s",
              c->nsupports, c->nsupports == 1 ? "" : "s", c->nloadcases);
    else
        stage(L, "assembly: %s, %d material%s, %d support%s, %d load%s%s%s",
              analysis_name(c->analysis), c->nmaterials, c->nmaterials == 1 ? "" : "s",
              c->nsupports, c->nsupports == 1 ? "" : "s", c->nloads, c->nloads == 1 ? "" : "s",
              grav ? ", gravity" : "", body ? ", body force" : "");
    ierr = c->modal ? hk_assemble_modal(&r->model.problem, c->mass, &r->sys)
                    : hk_assemble_on(stage_backend(r->assembled_on), &r->model.problem, &r->sys);
    if (ierr == HK_ERR_MEMORY && r->device_auto && strcmp(r->assembled_on, "host")) {
        /* --assembly auto: a device too small for the assembly leaves it to the host */
        snprintf(r->assembly_note, sizeof r->assembly_note, "%s", hk_error_message());
        snprintf(r->assembled_on, sizeof r->assembled_on, "host");
        ierr = hk_assemble(&r->model.problem, &r->sys);
    }
    if (ierr == HK_ERR_MODEL) ierr = model_error(c, ierr);
    if (ierr) goto fail;
    r->t_assembly = hk_time() - t;
    r->mem.host_peak_assembly = hk_run_peak_host_bytes();
    char where[200] = "";
    if (strcmp(r->assembled_on, "host"))
        snprintf(where, sizeof where, " on %s", r->assembled_on);
    else if (r->assembly_note[0])
        snprintf(where, sizeof where, " on the host (%s)", r->assembly_note);
    stage(L, "assembly: %lld DOFs (%lld prescribed), %lld nonzeros%s in %.2f s%s",
          (long long)r->sys.ndof, (long long)r->sys.nfixed, (long long)hk_system_nnz(&r->sys),
          c->modal ? " in K and as many in M" : "", r->t_assembly, where);
    if (c->matrix_file[0] || c->rhs_file[0] || c->coords_file[0] || c->mass_file[0]) {
        HK_TRY(hk_run_export_system(c, r));
        stage(L, "output: the system in Matrix Market%s%s%s%s%s%s%s%s in %.2f s",
              c->matrix_file[0] ? ", " : "", c->matrix_file, c->rhs_file[0] ? ", " : "",
              c->rhs_file, c->coords_file[0] ? ", " : "", c->coords_file,
              c->mass_file[0] ? ", " : "", c->mass_file, r->t_export);
    }
fail:
    return ierr;
}

int hk_run_model_error(const hk_case *c, int ierr)
{
    return ierr == HK_ERR_MODEL ? model_error(c, ierr) : ierr;
}

int hk_run_mesh(const hk_case *c, const hk_run_opts *o, hk_run *r)
{
    static const hk_run_opts none = {0};
    if (!o) o = &none;
    run_log L = {.f = o->log ? o->log : stderr, .quiet = o->quiet, .verbose = o->verbose};
    L.t0 = L.last = hk_time();
    memset(r, 0, sizeof *r);
    return run_mesh(c, o, &L, r);
}

int hk_run_assemble(const hk_case *c, const hk_run_opts *o, hk_run *r)
{
    static const hk_run_opts none = {0};
    if (!o) o = &none;
    run_log L = {.f = o->log ? o->log : stderr, .quiet = o->quiet, .verbose = o->verbose};
    L.t0 = L.last = hk_time();
    memset(r, 0, sizeof *r);
    HK_CALL(run_mesh(c, o, &L, r));
    return run_assemble(c, &L, r);
}

/* Up to this many unknowns hooke run solves with the sparse direct solver when the case names
 * neither a method nor a preconditioner. Measured against cg + amg on the CPU (docs/solver.md,
 * "Direct or iterative"; set-up + solve, 2 cores, after the CPU SpMV fix of 2026-11-25): in
 * 2D the two cross near 60k DOFs (a quad8 strip: 61k 0.27 s against 0.24 s, 242k 1.15 s
 * against 0.98 s); in 3D the factor's fill makes it slower from a few thousand DOFs (a hex8
 * cube of 6.6k: 0.10 s against 0.04 s, 15k 0.28 s against 0.09 s, 28k 0.66 s against 0.16 s)
 * but it is kept up to 10k for its robustness on ill-conditioned small parts, where both take
 * a fraction of a second. Load cases favour the factor further: each one after the first
 * costs two triangular solves. */
#define HK_RUN_DIRECT_MAX_DOFS_2D 60000
#define HK_RUN_DIRECT_MAX_DOFS_3D 10000

/* Above those sizes, or when the case names a method but no preconditioner: smoothed-
 * aggregation AMG with the mesh's rigid-body modes. Measured with hooke bench pcs (cg to
 * 1e-8, docs/BENCHMARKS.md): on the CPU backend amg takes 0.29x cg+poly's time on the bracket
 * (39k DOFs) and 0.25x on the cantilever (3k DOFs), and loses only on very easy structured
 * boxes (16^3 hexes: 0.15 s against 0.10 s); on the H200 it takes 0.17x poly's time at 632k
 * DOFs and 0.09x at 2M, and its iterations stay flat (37-38) where poly's grow (523, 1400,
 * 2142). */
#define HK_RUN_DEFAULT_PC "amg"

/* hooke run's defaults when the case leaves them open; *choice says what was chosen and why
 * for the solve line. */
static int choose_default_solver(hk_options *solver, int64_t ndof, int dim, char *choice, size_t n)
{
    const int has_method = hk_options_has(solver, "method"), has_pc = hk_options_has(solver, "pc");
    const int64_t direct_max = dim == 2 ? HK_RUN_DIRECT_MAX_DOFS_2D : HK_RUN_DIRECT_MAX_DOFS_3D;
#ifdef HOOKE_HAVE_CHOLMOD
    if (!has_method && !has_pc && ndof <= direct_max) {
        snprintf(choice, n, " [chosen by hooke run: direct, %lld DOFs <= %lld in %dD]",
                 (long long)ndof, (long long)direct_max, dim);
        return hk_options_set(solver, "method", "cholesky");
    }
#else
    (void)direct_max;
#endif
    const char *method = NULL, *pc = NULL, *prec = NULL;
    HK_CALL(hk_options_get_string(solver, "method", &method));
    if (method && !strcmp(method, "cholesky")) {
        /* a direct method asked for (--set solver.method=cholesky) over a case that names a
         * preconditioner: the factor needs none, so it is dropped with a note */
        HK_CALL(hk_options_get_string(solver, "pc", &pc));
        HK_CALL(hk_options_get_string(solver, "precision", &prec));
        const int drop_pc = pc && strcmp(pc, "none"), drop_prec = prec && !strcmp(prec, "mixed");
        if (drop_pc || drop_prec)
            snprintf(choice, n, " [%s%s%s%s of the case dropped: cholesky is a direct solver]",
                     drop_pc ? "pc=" : "", drop_pc ? pc : "", drop_pc && drop_prec ? " and " : "",
                     drop_prec ? "precision=mixed" : "");
        if (drop_pc) hk_options_remove(solver, "pc");
        if (drop_prec) hk_options_remove(solver, "precision");
        return 0;
    }
    if (!has_pc) {
        if (!has_method)
            snprintf(choice, n,
                     ndof > direct_max
                         ? " [chosen by hooke run: pc=" HK_RUN_DEFAULT_PC
                           ", %lld DOFs > %lld in %dD]"
                         : " [chosen by hooke run: pc=" HK_RUN_DEFAULT_PC
                           ", %lld DOFs; up to %lld in %dD would be direct, built without "
                           "CHOLMOD]",
                     (long long)ndof, (long long)direct_max, dim);
        else
            snprintf(choice, n, " [pc=" HK_RUN_DEFAULT_PC " chosen by hooke run]");
        return hk_options_set(solver, "pc", HK_RUN_DEFAULT_PC);
    }
    return 0;
}

static void start_output(const hk_case *c, const char *path, hk_run *r);

int hk_run_case(const hk_case *c, const hk_run_opts *o, hk_run *r)
{
    int ierr = 0;
    hk_solver *s = NULL;
    static const hk_run_opts none = {0};
    if (!o) o = &none;
    run_log L = {.f = o->log ? o->log : stderr, .quiet = o->quiet, .verbose = o->verbose};
    L.t0 = L.last = hk_time();
    memset(r, 0, sizeof *r);
    double t;
    HK_TRY(run_mesh(c, o, &L, r));
    if (c->modal) { /* the eigensolver instead of a linear solve (app/run_modal.c); K and M
                     * assembled on the host */
        HK_TRY(run_assemble(c, &L, r));
        ierr = hk_run_modal_solve(c, o, L.t0, r);
        if (ierr == HK_ERR_OPTION) ierr = hk_run_solver_option_error(c, ierr);
        goto fail;
    }
    if (o->output && !c->nloadcases) start_output(c, o->output, r);
    /* the solver's defaults and backend first: they decide where K is assembled */
    if (o->backend) HK_TRY(hk_options_set(c->solver, "backend", o->backend));
    char choice[160] = "";
    {
        int64_t ndof = (int64_t)r->mesh.dim * r->mesh.nnodes; /* + the reference points' rows */
        for (int k = 0; k < r->model.problem.nloads; k++)
            if (r->model.problem.loads[k].kind == HK_LOAD_REMOTE &&
                r->model.problem.loads[k].coupling == HK_COUPLING_RIGID)
                ndof += 2 * r->mesh.dim;
        HK_TRY(choose_default_solver(c->solver, ndof, r->mesh.dim, choice, sizeof choice));
    }
    HK_TRY(hk_run_fem_backends(c, o, &r->model.problem, r));
    if (device_fem_possible(c, o) && !strcmp(r->assembled_on, "host"))
        /* the guard assumed K off the host: the assembly stays there after all */
        HK_TRY(hk_run_memory_check_mesh(c, &r->mesh, o->backend, 0, &r->mem));
    HK_TRY(run_assemble(c, &L, r));

    /* solve */
    t = hk_time();
    {
        /* the mesh's node coordinates whatever the pc: pc=amg builds the rigid-body modes */
        hk_nearnull nn;
        double *coords = NULL;
        HK_TRY(hk_run_nearnull(r, &nn, &coords));
        if (r->sys.Kd.rowptr) /* assembled on the device: handed over there */
            ierr = hk_solver_create_resident(&r->sys.Kd, &nn, c->solver, &s);
        else
            ierr = hk_solver_create_nearnull(&r->sys.K, &nn, c->solver, &s);
        free(coords);
        hk_backend_free(r->sys.coords_be, r->sys.coords_d); /* the solver keeps its own copy */
        r->sys.coords_d = NULL;
    }
    if (ierr == HK_ERR_OPTION) ierr = hk_run_solver_option_error(c, ierr);
    if (ierr) goto fail;
    hk_run_describe_solver(r, s);
    stage(&L, "solve: %s%s", r->solver_desc, choice);
    hk_solver_set_monitor(s, monitor, &L);
    if (c->nloadcases) {
        r->t_setup = r->t_solve = r->t_post = 0;
        ierr = solve_loadcases(c, &L, s, r);
        goto fail;
    }
    /* the zero guess written on the threads: the pages are taken there, not one by one by
     * the device's download of x into them (0.3 s of a 19M-DOF run's solve stage was outside
     * the iterations) */
    HK_TRY(hk_malloc((size_t)r->sys.ndof * sizeof *r->u + 1, &r->u));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < r->sys.ndof; i++)
        r->u[i] = 0.0;
    ierr = hk_solver_solve(s, r->sys.f, r->u, &r->res);
    if (ierr == HK_ERR_NUMERIC) ierr = rhs_error(c, ierr);
    if (ierr) goto fail;
    /* prescribed values exactly, whatever the method left in those rows */
    for (int64_t i = 0; i < r->sys.ndof; i++)
        if (r->sys.fixed && r->sys.fixed[i]) r->u[i] = r->sys.u_fixed[i];
    r->t_setup = r->res.setup_seconds;
    r->t_solve = hk_time() - t - r->t_setup;
    if (r->t_solve < 0) r->t_solve = r->res.solve_seconds;
    r->converged = hk_reason_converged(r->res.reason);
    r->mem.host_peak_solve = hk_run_peak_host_bytes();
    stage(&L,
          "solve: %s after %d iterations, true residual %.3e, in %.2f s (set-up %.2f s, "
          "iterations %.2f s)",
          hk_reason_name(r->res.reason), r->res.iterations, r->res.true_residual, r->t_solve,
          r->t_setup, r->res.solve_seconds);
    hk_solver_destroy(s); /* its device memory is the recovery's */
    s = NULL;

    /* post-processing */
    t = hk_time();
    ierr = hk_postproc_on(stage_backend(r->recovered_on), &r->model.problem, &r->sys, r->u,
                          &r->fields);
    if (ierr == HK_ERR_MEMORY && r->device_auto && strcmp(r->recovered_on, "host")) {
        stage(&L, "postproc: on the host (%s)", hk_error_message());
        snprintf(r->recovered_on, sizeof r->recovered_on, "host");
        ierr = hk_postproc(&r->model.problem, &r->sys, r->u, &r->fields);
    }
    if (ierr) goto fail;
    r->t_post = hk_time() - t;
    r->mem.host_peak_post = hk_run_peak_host_bytes();
    stage(&L, "postproc: strains, stresses, reactions in %.2f s%s%s", r->t_post,
          strcmp(r->recovered_on, "host") ? " on " : "",
          strcmp(r->recovered_on, "host") ? r->recovered_on : "");
    r->t_total = hk_time() - L.t0;
    if (!r->converged) {
        char hint[400];
        hk_app_unconverged_hint(&r->res, case_tol(c), "--set solver.", hint, sizeof hint);
        ierr = hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                            "%s: the solver stopped without converging (%s after %d iterations, "
                            "relative residual %.3e); %s",
                            c->path, hk_reason_name(r->res.reason), r->res.iterations,
                            r->res.true_residual, hint);
    }
fail:
    hk_solver_destroy(s);
    return ierr;
}

/* Create the folders above path (output.file: results/part.vtu; hooke mesh -o and hooke
 * solve -o too). */
int hk_app_make_parent_dirs(const char *path)
{
    char dir[HK_CASE_PATH];
    HK_CHECK(strlen(path) < sizeof dir, HK_ERR_IO,
             "the output path '%.80s...' is too long; give a shorter one", path);
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(dir, 0777) && errno != EEXIST)
            return hk_error_set(HK_ERR_IO, __FILE__, __LINE__,
                                "cannot create the output folder '%s' "
                                "for '%s': %s",
                                dir, path, strerror(errno));
        *p = '/';
    }
    return 0;
}

/* The head and mesh arrays of the .vtu at path written while the case is solved, for the
 * fields hk_postproc makes, and the fields' pages filled ahead within half the memory the
 * guard leaves the run (docs/output.md); nothing when the options do not allow it. */
static void start_output(const hk_case *c, const char *path, hk_run *r)
{
    const hk_fields layout =
        hk_run_field_layout(c, r->model.problem.analysis == HK_AXISYMMETRIC);
    const hk_vtu_options vo = hk_run_vtu_options(c);
    const double spare = r->mem.host_available - r->mem.host_estimate;
    if (hk_app_make_parent_dirs(path) == 0)
        r->vtu_early =
            hk_vtu_early_start(path, &r->mesh, &layout, &vo, spare > 0 ? (int64_t)(spare / 2) : 0);
    else
        hk_error_clear(); /* hk_run_write says it, if the folder still cannot be made */
}

/* One .vtu with the case's field selection (the rest of an early start's file when *early). */
static int write_fields(const hk_case *c, const hk_mesh *m, const hk_fields *all, const char *path,
                        hk_vtu_early **early)
{
    const hk_fields f = hk_run_select_fields(c, all);
    const hk_vtu_options vo = hk_run_vtu_options(c);
    if (early && *early) {
        hk_vtu_early *e = *early;
        *early = NULL;
        return hk_vtu_early_finish(e, path, &f);
    }
    return hk_vtu_write(path, m, &f, &vo);
}

/* Load cases: <stem>-<case>.vtu each, and <stem>.pvd naming them (relative to the .pvd). */
static int write_loadcases(const hk_case *c, hk_run *r, const char *path, run_log *L)
{
    size_t l = strlen(path);
    int stem = l >= 4 && !strcmp(path + l - 4, ".vtu") ? (int)l - 4 : (int)l;
    const char *files[r->nlc > 0 ? r->nlc : 1], *names[r->nlc > 0 ? r->nlc : 1];
    for (int k = 0; k < r->nlc; k++) {
        hk_run_loadcase *lc = &r->lc[k];
        HK_CHECK(lc->fields.u, HK_ERR_ARG,
                 "%s: load case '%s' has no result to write (its solve failed)", c->path, lc->name);
        int n = snprintf(lc->output, sizeof lc->output, "%.*s-%s.vtu", stem, path, lc->name);
        HK_CHECK(n < (int)sizeof lc->output, HK_ERR_IO,
                 "%s: the output path for load case '%s' is too long; set a shorter output.file",
                 c->path, lc->name);
        double t = hk_time();
        HK_CALL(write_fields(c, &r->mesh, &lc->fields, lc->output, NULL));
        lc->t_output = hk_time() - t;
        r->t_output += lc->t_output;
        stage(L, "output: %s (load case '%s') in %.2f s", lc->output, lc->name, lc->t_output);
        const char *slash = strrchr(lc->output, '/');
        files[k] = slash ? slash + 1 : lc->output; /* same folder as the .pvd */
        names[k] = lc->name;
    }
    int n = snprintf(r->output, sizeof r->output, "%.*s.pvd", stem, path);
    HK_CHECK(n < (int)sizeof r->output, HK_ERR_IO,
             "%s: the output path is too long; set a shorter output.file", c->path);
    HK_CALL(hk_pvd_write(r->output, r->nlc, files, names));
    stage(L, "output: %s (%d load cases)", r->output, r->nlc);
    return 0;
}

int hk_run_write(const hk_case *c, hk_run *r, const char *path, const hk_run_opts *o)
{
    static const hk_run_opts none = {0};
    if (!o) o = &none;
    run_log L = {.f = o->log ? o->log : stderr, .quiet = o->quiet, .verbose = o->verbose};
    L.t0 = hk_time() - r->t_total;
    if (!path) path = c->output;
    HK_CALL(hk_app_make_parent_dirs(path));
    if (c->modal) return hk_run_modal_write(c, r, path, o);
    if (r->nlc) {
        double t = hk_time();
        r->t_output = r->t_export;
        int ierr = write_loadcases(c, r, path, &L);
        r->t_total += hk_time() - t;
        if (ierr) { /* the summary names only files that were written */
            r->output[0] = 0;
            for (int k = 0; k < r->nlc; k++)
                r->lc[k].output[0] = 0;
        }
        return ierr;
    }
    double t = hk_time();
    HK_CALL(write_fields(c, &r->mesh, &r->fields, path, &r->vtu_early));
    snprintf(r->output, sizeof r->output, "%s", path);
    r->t_output = hk_time() - t;
    r->t_total += r->t_output;
    r->t_output += r->t_export; /* already in t_total */
    stage(&L, "output: %s in %.2f s", path, r->t_output);
    return 0;
}

void hk_run_free(hk_run *r)
{
    if (!r) return;
    for (int k = 0; k < r->nlc && r->lc; k++) {
        hk_fields_free(&r->lc[k].fields);
        free(r->lc[k].u);
    }
    free(r->lc);
    hk_run_modal_free(&r->modal);
    hk_fields_free(&r->fields);
    free(r->u);
    hk_vtu_early_cancel(r->vtu_early); /* before the mesh it writes from */
    hk_system_free(&r->sys);
    hk_case_model_free(&r->model);
    hk_mesh_free(&r->mesh);
    memset(r, 0, sizeof *r);
}

/* ---- summary -------------------------------------------------------------------------- */

static int64_t run_nnz(const hk_run *r)
{
    return hk_system_nnz(&r->sys);
}

/* The lines of one solve: iterations, residual, max |u|, max von Mises, reactions. */
static void print_result(const hk_case *c, const hk_result *res, const hk_fields *fl,
                         const char *ind, FILE *f)
{
    fprintf(f, "%s  solve          %d iterations, %s, true residual %.3e\n", ind, res->iterations,
            hk_reason_name(res->reason), res->true_residual);
    if (res->note[0]) fprintf(f, "%s  solver note    %s\n", ind, res->note);
    fprintf(f, "%s  max |u|        %.6e\n", ind, fl->max_u);
    fprintf(f, "%s  max von Mises  %.6e\n", ind, fl->max_von_mises);
    for (int i = 0; i < c->nsupports && fl->support_reaction; i++) {
        const double *R = fl->support_reaction[i];
        fprintf(f, "%s  reaction       %-16s (%.6e, %.6e", ind, c->supports[i].boundary, R[0],
                R[1]);
        if (c->dim == 3) fprintf(f, ", %.6e", R[2]);
        fprintf(f, ")%s\n", c->analysis == HK_AXISYMMETRIC ? " per radian" : "");
        if (!fl->support_moment) continue;
        const double *M = fl->support_moment[i], *X = c->supports[i].moment_point;
        if (c->dim == 3)
            fprintf(f, "%s    moment       %-16s (%.6e, %.6e, %.6e) about (%g, %g, %g)\n", ind, "",
                    M[0], M[1], M[2], X[0], X[1], X[2]);
        else
            fprintf(f, "%s    moment       %-16s %.6e about (%g, %g)\n", ind, "", M[2], X[0], X[1]);
    }
}

void hk_run_print_summary(const hk_case *c, const hk_run *r, FILE *f)
{
    char types[128];
    element_types(&r->mesh, types, sizeof types);
    fprintf(f, "%s (%s)\n", c->title, c->path);
    fprintf(f, "  mesh           %lld nodes, %lld elements (%s), %s\n", (long long)r->mesh.nnodes,
            (long long)r->mesh.cells.n, types, analysis_name(c->analysis));
    fprintf(f, "  system         %lld DOFs (%lld prescribed), %lld nonzeros\n",
            (long long)r->sys.ndof, (long long)r->sys.nfixed, (long long)run_nnz(r));
    fprintf(f, "  solver         %s\n", r->solver_desc);
    if (c->modal)
        hk_run_modal_print(c, r, f);
    else if (!r->nlc)
        print_result(c, &r->res, &r->fields, "", f);
    for (int k = 0; k < r->nlc; k++) {
        const hk_run_loadcase *lc = &r->lc[k];
        fprintf(f, "  load case %d/%d  %s\n", k + 1, r->nlc, lc->name);
        print_result(c, &lc->res, &lc->fields, "  ", f);
        if (lc->output[0]) fprintf(f, "    output         %s\n", lc->output);
    }
    fprintf(f,
            "  time           mesh %.2f s, assembly %.2f s, solver setup %.2f s, solve %.2f s, "
            "postproc %.2f s, output %.2f s, total %.2f s\n",
            r->t_mesh, r->t_assembly, r->t_setup, r->t_solve, r->t_post, r->t_output, r->t_total);
    if (r->output[0]) fprintf(f, "  output         %s\n", r->output);
    hk_run_print_memory(r, f);
}

/* "iterations" ... "reactions": [...] of one solve; lines after the first start with ind. */
static void json_result(const hk_case *c, const hk_result *res, const hk_fields *fl, int converged,
                        const char *ind, FILE *f)
{
    fprintf(f, "\"iterations\": %d,\n%s\"converged\": %s,\n%s\"reason\": ", res->iterations, ind,
            converged ? "true" : "false", ind);
    hk_run_json_string(f, hk_reason_name(res->reason));
    fprintf(f, ",\n%s\"true_residual\": ", ind);
    hk_run_json_number(f, res->true_residual);
    fprintf(f, ",\n%s\"max_displacement\": ", ind);
    hk_run_json_number(f, fl->max_u);
    fprintf(f, ",\n%s\"max_von_mises\": ", ind);
    hk_run_json_number(f, fl->max_von_mises);
    fprintf(f, ",\n%s\"reactions\": [", ind);
    for (int i = 0; i < c->nsupports && fl->support_reaction; i++) {
        fprintf(f, "%s\n%s  {\"boundary\": ", i ? "," : "", ind);
        hk_run_json_string(f, c->supports[i].boundary);
        fprintf(f, ", \"force\": [");
        for (int d = 0; d < c->dim; d++) {
            if (d) fprintf(f, ", ");
            hk_run_json_number(f, fl->support_reaction[i][d]);
        }
        fprintf(f, "]");
        if (fl->support_moment) { /* 3 components in 3D, the one about z in 2D */
            fprintf(f, ", \"moment\": ");
            if (c->dim == 2) hk_run_json_number(f, fl->support_moment[i][2]);
            for (int d = 0; d < 3 && c->dim == 3; d++) {
                fprintf(f, "%s", d ? ", " : "[");
                hk_run_json_number(f, fl->support_moment[i][d]);
            }
            fprintf(f, "%s, \"about\": [", c->dim == 3 ? "]" : "");
            for (int d = 0; d < c->dim; d++) {
                if (d) fprintf(f, ", ");
                hk_run_json_number(f, c->supports[i].moment_point[d]);
            }
            fprintf(f, "]");
        }
        fprintf(f, "}");
    }
    fprintf(f, "%s%s]", c->nsupports ? "\n" : "", c->nsupports ? ind : "");
}

void hk_run_print_json(const hk_case *c, const hk_run *r, int ok, FILE *f)
{
    fprintf(f, "{\n  \"ok\": %s,\n  \"case\": ", ok ? "true" : "false");
    hk_run_json_string(f, c->path);
    fprintf(f, ",\n  \"title\": ");
    hk_run_json_string(f, c->title);
    fprintf(f, ",\n  \"analysis\": ");
    hk_run_json_string(f, analysis_name(c->analysis));
    fprintf(f,
            ",\n  \"nodes\": %lld,\n  \"elements\": %lld,\n  \"dofs\": %lld,\n  "
            "\"prescribed_dofs\": %lld,"
            "\n  \"nonzeros\": %lld,\n  \"solver\": ",
            (long long)r->mesh.nnodes, (long long)r->mesh.cells.n, (long long)r->sys.ndof,
            (long long)r->sys.nfixed, (long long)run_nnz(r));
    hk_run_json_string(f, r->solver_desc);
    fprintf(f, ",\n  \"backend\": ");
    hk_run_json_string(f, r->backend);
    fprintf(f, ",\n  \"assembled_on\": ");
    hk_run_json_string(f, r->assembled_on);
    fprintf(f, ",\n  \"recovered_on\": ");
    hk_run_json_string(f, r->recovered_on);
    if (c->modal) {
        fprintf(f, ",\n  ");
        hk_run_modal_print_json(c, r, f);
    } else if (!r->nlc) {
        fprintf(f, ",\n  ");
        json_result(c, &r->res, &r->fields, r->converged, "  ", f);
    } else {
        fprintf(f, ",\n  \"converged\": %s,\n  \"load_cases\": [", r->converged ? "true" : "false");
        for (int k = 0; k < r->nlc; k++) {
            const hk_run_loadcase *lc = &r->lc[k];
            fprintf(f, "%s\n    {\n      \"name\": ", k ? "," : "");
            hk_run_json_string(f, lc->name);
            fprintf(f, ",\n      ");
            json_result(c, &lc->res, &lc->fields, lc->converged, "      ", f);
            fprintf(f, ",\n      \"output\": ");
            hk_run_json_string(f, lc->output);
            fprintf(f, "\n    }");
        }
        fprintf(f, "\n  ]");
    }
    hk_run_print_memory_json(r, f);
    fprintf(f,
            ",\n  \"seconds\": {\"mesh\": %.4f, \"assembly\": %.4f, \"solver_setup\": %.4f, "
            "\"solve\": %.4f, \"postproc\": %.4f, \"output\": %.4f, \"export\": %.4f, "
            "\"total\": %.4f},\n  \"output\": ",
            r->t_mesh, r->t_assembly, r->t_setup, r->t_solve, r->t_post, r->t_output, r->t_export,
            r->t_total);
    hk_run_json_string(f, r->output);
    fprintf(f, "\n}\n");
}

/* ---- the command ---------------------------------------------------------------------- */

static void run_help(FILE *f)
{
    fprintf(
        f,
        "usage: hooke run CASE.yaml [options]\n\n"
        "Mesh the case's geometry, assemble the stiffness, solve, recover strains and stresses "
        "and\n"
        "write a .vtu file for ParaView. The case file format is docs/case-format.md.\n\n"
        "options:\n"
        "  -o, --output FILE.vtu   write here (relative to the current folder) instead of the\n"
        "                          case's output.file (default: CASE.vtu next to the case file)\n"
        "                          with load_cases: FILE-<case>.vtu per load case and FILE.pvd\n"
        "                          listing them (open the .pvd in ParaView)\n"
        "  --backend NAME          auto, cpu or cuda; overrides solver.backend (default auto:\n"
        "                          cuda when a device is present)\n"
        "  --assembly WHERE        auto, host or device: where the stiffness is assembled and\n"
        "                          the stresses recovered (default auto: on the solve's device\n"
        "                          when it has one; the host assembles for method=cholesky,\n"
        "                          output.matrix, spring supports and rigid couplings;\n"
        "                          under mpirun each process its part on its own GPU)\n"
        "  --set KEY=VALUE         override any case key by its dotted path; repeatable. Lists "
        "are\n"
        "                          addressed by index, values are YAML:\n"
        "                            --set solver.method=pipecg --set solver.pc.poly.degree=6\n"
        "                            --set geometry.size=2 --set geometry.order=2\n"
        "                            --set materials.0.E=70e9 --set 'loads.0.pressure.value=2e6'\n"
        "                            --set geometry.generate.cells=[40,4,4]\n"
        "                            --set 'load_cases.1.loads.0.traction.value=[0,0,-2e5]'\n"
        "  --json                  print the summary as JSON on stdout (progress stays on stderr)\n"
        "  --verbose               every solver residual, Gmsh's own messages\n"
        "  --quiet                 no progress lines\n"
        "  -h, --help              this text\n\n"
        "Progress goes to stderr, one line per stage (meshing, assembly, solve with iterations "
        "and\n"
        "residuals, postproc, output). The summary gives nodes, elements, DOFs, nonzeros, "
        "iterations,\n"
        "the true residual, max |u|, max von Mises stress, the reaction force summed over each\n"
        "support and its moment (about the origin, or the support's moment_about point), and the\n"
        "time of each stage; with load_cases (one mesh, one K, one solver set-up,\n"
        "a right-hand side per case) the solve results are given per load case.\n\n"
        "A case with a modal: section (docs/modal.md) finds natural frequencies and mode\n"
        "shapes instead: the summary gives each mode's frequency, effective masses and\n"
        "residual, and FILE-modeNN.vtu per mode with FILE.pvd listing them are written; the\n"
        "solver: section's pc options go to the eigensolver (LOBPCG, pc=amg by default).\n\n"
        "On several processes (mpirun -np N hooke run CASE.yaml; docs/parallel.md) each process\n"
        "assembles and solves its part of the mesh and writes a .vtu piece; FILE.pvtu names the\n"
        "pieces. Distributed preconditioners: poly (chosen when the case names none), jacobi,\n"
        "bjacobi; load_cases, rigid couplings and the system export run on one process.\n"
        "--set solver.dist.partition=auto|coarse|fine: which mesh process 0 cuts into the\n"
        "parts (auto: the coarse mesh where Hooke refined it and it has 32 cells a part).\n"
        "--set solver.dist.mesh=parts|whole: who meshes the parts (parts, the default:\n"
        "every process meshes the coarse mesh and refines only its own part, where Hooke\n"
        "refines it, or makes only its slab of a generated grid; whole: process 0 meshes the\n"
        "whole model and sends each its part; parts falls back to whole where it does not\n"
        "apply and says why).\n\n"
        "Exit status: 0 when the solve (every load case) converged and the files were written;\n"
        "1 when the case is invalid, a stage failed or the solver did not converge (the files\n"
        "are still written then, for inspection); 2 for a usage error.\n\n"
        "Solver options (the case's solver: section, or --set solver.KEY=VALUE). When the case\n"
        "names neither method nor pc, hooke run uses method=cholesky up to 60000 DOFs in 2D\n"
        "and 10000 in 3D (with CHOLMOD), cg + pc=amg above; a case naming no pc gets pc=amg\n"
        "(the library's default is jacobi):\n\n");
    hk_solver_print_help(f);
}

int hk_run_args_parse(int argc, char **argv, hk_run_args *a)
{
    memset(a, 0, sizeof *a);
    const int speak = hk_comm_rank(hk_comm_world()) == 0; /* under mpirun: rank 0 */
    a->sets = calloc((size_t)argc + 1, sizeof *a->sets);
    if (!a->sets) return 1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *val = NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            if (speak) run_help(stdout);
            return 0;
        } else if (!strcmp(s, "--json")) {
            a->json = 1;
        } else if (!strcmp(s, "--verbose") || !strcmp(s, "-v")) {
            a->verbose = 1;
        } else if (!strcmp(s, "--quiet") || !strcmp(s, "-q")) {
            a->quiet = 1;
        } else if (!strcmp(s, "--assembly") || !strncmp(s, "--assembly=", 11)) {
            if (!s[10] && i + 1 >= argc) {
                if (speak)
                    fprintf(stderr, "hooke run: --assembly needs a value (auto, host or device)\n");
                return 2;
            }
            a->assembly = s[10] ? s + 11 : argv[++i];
            if (strcmp(a->assembly, "auto") && strcmp(a->assembly, "host") &&
                strcmp(a->assembly, "device")) {
                if (speak)
                    fprintf(stderr, "hooke run: --assembly %s: give auto, host or device\n",
                            a->assembly);
                return 2;
            }
        } else if (!strcmp(s, "-o") || !strcmp(s, "--output") || !strcmp(s, "--backend") ||
                   !strcmp(s, "--set") || !strcmp(s, "-s")) {
            if (i + 1 >= argc) {
                if (speak) fprintf(stderr, "hooke run: %s needs a value (hooke run --help)\n", s);
                return 2;
            }
            val = argv[++i];
            if (s[1] == 'o' || s[2] == 'o')
                a->out = val;
            else if (s[2] == 'b')
                a->backend = val;
            else
                a->sets[a->nsets++] = val;
        } else if (!strncmp(s, "--set=", 6)) {
            a->sets[a->nsets++] = s + 6;
        } else if (!strncmp(s, "--backend=", 10)) {
            a->backend = s + 10;
        } else if (!strncmp(s, "--output=", 9)) {
            a->out = s + 9;
        } else if (s[0] == '-' && s[1]) {
            if (speak)
                fprintf(stderr,
                        "hooke run: unknown option '%s'; the options are -o, --backend, "
                        "--assembly, --set, --json, --verbose, --quiet (hooke run --help)\n",
                        s);
            return 2;
        } else if (a->case_path) {
            if (speak)
                fprintf(stderr,
                        "hooke run: one case file at a time ('%s' and '%s'); hooke run --help\n",
                        a->case_path, s);
            return 2;
        } else {
            a->case_path = s;
        }
    }
    if (!a->case_path) {
        if (speak)
            fprintf(stderr, "hooke run: no case file; usage: hooke run CASE.yaml [options] (hooke "
                            "run --help)\n");
        return 2;
    }
    if (a->out) {
        size_t l = strlen(a->out);
        if (l < 4 || strcmp(a->out + l - 4, ".vtu")) {
            if (speak)
                fprintf(stderr, "hooke run: -o %s: the output must be a .vtu file\n", a->out);
            return 2;
        }
    }
    a->go = 1;
    return 0;
}

int hk_cmd_run(int argc, char **argv)
{
    hk_run_args args;
    const int st = hk_run_args_parse(argc, argv, &args);
    if (!args.go) {
        free(args.sets);
        return st;
    }
    const char *case_path = args.case_path, *out = args.out, *backend = args.backend;
    const char *assembly = args.assembly;
    const int json = args.json, verbose = args.verbose, quiet = args.quiet, nsets = args.nsets;
    const char **sets = args.sets;
    hk_case c;
    hk_run r;
    memset(&r, 0, sizeof r);
    int err = hk_case_load(case_path, nsets, sets, &c);
    free(sets);
    if (err) {
        fprintf(stderr, "hooke run: %s\n", hk_error_message());
        if (json) {
            printf("{\"ok\": false, \"error\": ");
            hk_run_json_string(stdout, hk_error_message());
            printf("}\n");
        }
        return 1;
    }
    hk_run_opts o = {.backend = backend,
                     .assembly = assembly,
                     .verbose = verbose,
                     .quiet = quiet,
                     .log = stderr,
                     .output = out ? out : c.output};
    err = hk_run_case(&c, &o, &r);
    /* unconverged: still written (with load cases: when every case has its fields) */
    int solved = err == 0 || (err == HK_ERR_NUMERIC && (c.modal ? r.modal.nmodes > 0
                                                        : r.nlc ? r.lc[r.nlc - 1].fields.u != NULL
                                                                : r.fields.u != NULL));
    char msg[2048] = "";
    if (err) snprintf(msg, sizeof msg, "%s", hk_error_message());
    if (solved) {
        int werr = hk_run_write(&c, &r, out, &o);
        if (werr && !err) {
            err = werr;
            snprintf(msg, sizeof msg, "%s", hk_error_message());
        }
    }
    if (solved) {
        if (json)
            hk_run_print_json(&c, &r, err == 0, stdout);
        else
            hk_run_print_summary(&c, &r, stdout);
    } else if (json) {
        printf("{\"ok\": false, \"error\": ");
        hk_run_json_string(stdout, msg);
        printf("}\n");
    }
    if (err) fprintf(stderr, "hooke run: %s\n", msg);
    hk_run_free(&r);
    hk_case_free(&c);
    return err ? 1 : 0;
}
