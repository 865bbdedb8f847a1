/* Pieces of the run pipeline that hooke run's static path (cmd_run.c) and the modal path
 * (run_modal.c) share: progress lines, the writer's options of a case, JSON values, and the
 * near-null space of K for pc=amg. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case.h"
#include "threads.h"

/* ---- progress ------------------------------------------------------------------------- */

void hk_run_mesh_phases(char *buf, size_t n)
{
    const hk_mesh_load_times t = hk_mesh_load_phase_times();
    snprintf(buf, n,
             "Gmsh start and file %.2f, curves and surfaces %.2f, volume %.2f, reading into "
             "Hooke %.2f, refinement %.2f, second-order nodes %.2f, renumbering %.2f",
             t.open, t.surfaces, t.volume, t.read, t.refine, t.order, t.renumber);
}

void hk_run_vprogress(FILE *f, double t0, const char *fmt, va_list ap)
{
    fprintf(f, "[%7.2f s] ", hk_time() - t0);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    fflush(f);
}

void hk_run_progress(const hk_run_opts *o, double t0, const char *fmt, ...)
{
    if (o && o->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    hk_run_vprogress(o && o->log ? o->log : stderr, t0, fmt, ap);
    va_end(ap);
}

void hk_run_say(const hk_run_log *L, const char *fmt, ...)
{
    if (!L->on) return;
    va_list ap;
    va_start(ap, fmt);
    hk_run_vprogress(stderr, L->t0, fmt, ap);
    va_end(ap);
}

/* ---- the summary ---------------------------------------------------------------------- */

void hk_run_set_description(hk_run *r, const char *text)
{
    snprintf(r->solver_desc, sizeof r->solver_desc, "%s", text ? text : "");
    size_t l = strlen(r->solver_desc);
    while (l && (r->solver_desc[l - 1] == '\n' || r->solver_desc[l - 1] == ' '))
        r->solver_desc[--l] = 0;
    /* the backend is the last " on NAME" (cholesky's factor is "on the host" before it), up to
     * a comma (the eigensolver's line goes on: ", shift ...") */
    const char *on = NULL;
    for (const char *q = strstr(r->solver_desc, " on "); q; q = strstr(q + 1, " on "))
        on = q;
    const char *name = on ? on + 4 : "?";
    snprintf(r->backend, sizeof r->backend, "%.*s", (int)strcspn(name, ","), name);
}

void hk_run_describe_solver(hk_run *r, const hk_solver *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    if (mf) {
        hk_solver_describe(s, mf);
        fclose(mf);
    }
    hk_run_set_description(r, buf);
    free(buf);
}

/* ---- output --------------------------------------------------------------------------- */

hk_vtu_options hk_run_vtu_options(const hk_case *c)
{
    return (hk_vtu_options){.compression = (hk_vtu_compression)c->compression,
                            .level = c->zlevel,
                            .float32 = c->float32,
                            .ascii = c->ascii};
}

/* The case's field selection of all: a shallow copy without the fields not asked for. */
hk_fields hk_run_select_fields(const hk_case *c, const hk_fields *all)
{
    hk_fields f = *all;
    if (!(c->fields & HK_FIELD_DISPLACEMENT)) f.u = NULL;
    if (!(c->fields & HK_FIELD_STRAIN)) f.strain = NULL;
    if (!(c->fields & HK_FIELD_STRESS)) f.stress = NULL;
    if (!(c->fields & HK_FIELD_VON_MISES)) f.von_mises = NULL;
    if (!(c->fields & HK_FIELD_PRINCIPAL)) f.principal = NULL;
    if (!(c->fields & HK_FIELD_REACTION)) f.reaction = NULL;
    if (!(c->fields & HK_FIELD_CELL_STRESS)) f.cell_stress = NULL, f.cell_von_mises = NULL;
    return f;
}

hk_fields hk_run_field_layout(const hk_case *c, int axisymmetric)
{
    static double present; /* the layout's fields: only whether they are there */
    const hk_fields all = {.u = &present,
                           .strain = &present,
                           .stress = &present,
                           .von_mises = &present,
                           .principal = &present,
                           .cell_stress = &present,
                           .cell_von_mises = &present,
                           .reaction = &present,
                           .axisymmetric = axisymmetric};
    return hk_run_select_fields(c, &all);
}

void hk_run_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

void hk_run_json_number(FILE *f, double v)
{
    if (v == v && v - v == 0)
        fprintf(f, "%.10g", v);
    else
        fputs("null", f);
}

/* ---- near-null space ----------------------------------------------------------------- */

/* With rigid couplings K has the reference points' block rows after the nodes: the rigid-body
 * modes as explicit vectors (centred on the mesh and scaled by its extent, as pc=amg does with
 * coordinates); a reference point moves with translation t + w x x_ref and rotation w. */
static int rigid_nearnull(const hk_run *r, hk_nearnull *nn, double **vec)
{
    const hk_mesh *m = &r->mesh;
    const int d = m->dim, nm = d == 2 ? 3 : 6;
    const int64_t nn0 = m->nnodes, n = r->sys.ndof;
    double c[3] = {0, 0, 0}, ext = 0;
    for (int64_t i = 0; i < nn0; i++)
        for (int a = 0; a < d; a++)
            c[a] += m->coords[3 * i + a] / (double)nn0;
    for (int64_t i = 0; i < nn0; i++)
        for (int a = 0; a < d; a++)
            ext = fmax(ext, fabs(m->coords[3 * i + a] - c[a]));
    const double sc = ext > 0 ? 1 / ext : 1;
    HK_CALL(hk_calloc((size_t)(n * nm), sizeof **vec, vec));
    double *B = *vec; /* dof a of block row i, mode k: B[i * d + a + k * n] */
    for (int64_t i = 0; i < nn0 + r->sys.nrigid; i++) {
        const double *xp = i < nn0 ? m->coords + 3 * i : r->sys.rigid_point[i - nn0];
        const int64_t row = i < nn0 ? i : nn0 + 2 * (i - nn0); /* translations */
        double x[3] = {0, 0, 0};
        for (int a = 0; a < d; a++)
            x[a] = (xp[a] - c[a]) * sc;
        double *t = B + row * d;
        for (int a = 0; a < d; a++)
            t[a + a * n] = 1;
        if (d == 2) {
            t[0 + 2 * n] = -x[1], t[1 + 2 * n] = x[0];
        } else {
            t[1 + 3 * n] = -x[2], t[2 + 3 * n] = x[1];
            t[0 + 4 * n] = x[2], t[2 + 4 * n] = -x[0];
            t[0 + 5 * n] = -x[1], t[1 + 5 * n] = x[0];
        }
        if (i < nn0) continue;
        double *w = t + d; /* the rotations, in the scaled units of the modes */
        for (int k = d; k < nm; k++)
            w[(k - d) + k * n] = sc;
    }
    nn->nvec = nm;
    nn->vectors = B;
    return 0;
}

int hk_run_nearnull(const hk_run *r, hk_nearnull *nn, double **coords)
{
    const hk_mesh *m = &r->mesh;
    const int bs = r->sys.K.rowptr ? r->sys.K.bs : r->sys.Kd.bs; /* K on the host or a device */
    const int64_t nb = r->sys.K.rowptr ? r->sys.K.nbrows : r->sys.Kd.nbrows;
    memset(nn, 0, sizeof *nn);
    *coords = NULL;
    if (r->sys.nrigid > 0 && bs == m->dim && nb == m->nnodes + 2 * (int64_t)r->sys.nrigid)
        return rigid_nearnull(r, nn, coords);
    if (bs != m->dim || nb != m->nnodes) return 0;
    if (r->sys.Kd.rowptr && r->sys.coords_d) { /* the device assembly's, where K is */
        nn->dim = m->dim;
        nn->coords = r->sys.coords_d;
        nn->coords_be = r->sys.coords_be;
        return 0;
    }
    HK_CALL(hk_malloc((size_t)m->nnodes * m->dim * sizeof **coords, coords));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m->nnodes; i++)
        for (int d = 0; d < m->dim; d++)
            (*coords)[i * m->dim + d] = m->coords[3 * i + d];
    nn->dim = m->dim;
    nn->coords = *coords;
    return 0;
}

void hk_app_share_threads(void)
{
    /* OpenMP's default is every core of the process's affinity mask: every core of the
     * machine with mpirun --bind-to none (N processes would start N times the cores'
     * threads), a single core with Open MPI's default binding of 2 processes */
    const hk_comm *w = hk_comm_world();
    const int local = hk_comm_world_local();
    if (hk_comm_size(w) < 2 || getenv("OMP_NUM_THREADS")) return;
    int mask = 0, online = 0;
    hk_threads_set(hk_threads_share(local, &mask, &online));
    if (mask == 1 && online / local > 1 && hk_comm_rank(w) == 0)
        fprintf(stderr,
                "hooke: mpirun bound each process to one core, so each of the %d processes here "
                "runs on 1 thread of the %d cores; start it with mpirun --bind-to none (or set "
                "OMP_NUM_THREADS with a binding that gives each process that many cores) to give "
                "each its %d\n",
                local, online, online / local);
}
