/* hooke run for a case with a modal: section (docs/modal.md): after the mesh and
 * hk_assemble_modal (K and M), the lowest eigenpairs of K x = lambda M x by the library's
 * eigensolver (LOBPCG with the case's preconditioner, AMG by default, on the case's backend),
 * their frequencies, effective modal masses and mass-normalised shapes; one .vtu per mode and a
 * .pvd listing them; the summary's and JSON's modal members.
 *
 * modal.shift (Hz) asks for the modes above a frequency: the eigensolver finds the lowest
 * pairs, so the pairs below the shift are found too and left out (the rigid-body modes of a
 * free part are below any positive shift, so they are counted in from the start; when more
 * turn out to lie below it the solve is repeated with that many more). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case.h"

static const char *const dir_names[3] = {"x", "y", "z"};

/* Directions of the effective masses: x, y (, z); axisymmetric: the axis y alone (a radial
 * "translation" is no rigid motion of a ring). */
static int direction_range(const hk_case *c, int *c0)
{
    *c0 = c->analysis == HK_AXISYMMETRIC ? 1 : 0;
    return c->analysis == HK_AXISYMMETRIC ? 2 : c->dim;
}

static void add_note(hk_run_modal *md, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void add_note(hk_run_modal *md, const char *fmt, ...)
{
    size_t l = strlen(md->notes);
    if (l && l + 2 < sizeof md->notes)
        l += (size_t)snprintf(md->notes + l, sizeof md->notes - l, "; ");
    if (l + 1 >= sizeof md->notes) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(md->notes + l, sizeof md->notes - l, fmt, ap);
    va_end(ap);
}

/* What the case gives that a modal analysis does not use. */
static void case_notes(const hk_case *c, hk_run_modal *md)
{
    int nloads = c->nloads, grav = 0, body = 0;
    for (int d = 0; d < 3; d++)
        grav |= c->gravity[d] != 0, body |= c->body_force[d] != 0;
    for (int k = 0; k < c->nloadcases; k++) {
        nloads += c->loadcases[k].nloads;
        for (int d = 0; d < 3; d++)
            grav |= c->loadcases[k].gravity[d] != 0, body |= c->loadcases[k].body_force[d] != 0;
    }
    if (nloads || grav || body || c->nloadcases) {
        char what[256] = "";
        int n = 0;
        if (nloads) n += snprintf(what, sizeof what, "%d load%s", nloads, nloads == 1 ? "" : "s");
        if (c->nloadcases)
            n += snprintf(what + n, sizeof what - (size_t)n, "%s%d load cases", n ? " in " : "",
                          c->nloadcases);
        if (grav) n += snprintf(what + n, sizeof what - (size_t)n, "%sgravity", n ? ", " : "");
        if (body) snprintf(what + n, sizeof what - (size_t)n, "%sbody force", n ? ", " : "");
        add_note(md, "the case's %s ignored (a modal analysis has no loads)", what);
    }
    for (int i = 0; i < c->nsupports; i++) {
        const hk_case_support *s = &c->supports[i];
        int nonzero = 0;
        for (int d = 0; d < 3; d++)
            nonzero |= (s->mask >> d & 1) && s->value[d] != 0;
        if (s->kind == HK_SUPPORT_FIXED && nonzero)
            add_note(md,
                     "the displacement prescribed on '%s' taken as zero (modes are free "
                     "vibrations about the unloaded state)",
                     s->boundary);
    }
}

/* A key of the linear solver (method=cg tol=1e-8 ...), which a static case's solver: section
 * holds and a modal analysis does not use. */
static int linear_solver_key(const char *key)
{
    static const char *const linear[] = {"method",     "tol",           "atol",   "maxit",
                                         "restart",    "history",       "graphs", "check_every",
                                         "stagnation", "replace_every", NULL};
    if (!strncmp(key, "inner.", 6) || !strncmp(key, "ksp.", 4) || !strncmp(key, "mpk.", 4))
        return 1;
    for (int i = 0; linear[i]; i++)
        if (!strcmp(key, linear[i])) return 1;
    return 0;
}

/* The eigensolver's options: the case's solver: section without the linear solver's keys
 * (noted as ignored), --backend, and the modal section's tolerance and iteration limit
 * (eigen.tol, eigen.maxit; given once). */
static int eigen_options(const hk_case *c, const hk_run_opts *o, hk_run_modal *md, hk_options **out)
{
    int ierr = 0;
    hk_options *all = NULL;
    char ignored[256] = "";
    size_t ni = 0;
    HK_CALL(hk_options_copy(c->solver, &all));
    HK_TRY(hk_options_create(out));
    for (int i = 0; i < hk_options_count(all); i++) {
        const char *key = hk_options_key(all, i), *val = NULL;
        HK_TRY(hk_options_get_string(all, key, &val));
        if (!linear_solver_key(key)) {
            HK_TRY(hk_options_set(*out, key, val));
        } else if (ni < sizeof ignored) {
            ni += (size_t)snprintf(ignored + ni, sizeof ignored - ni, "%ssolver.%s", ni ? ", " : "",
                                   key);
        }
    }
    if (ignored[0])
        add_note(md, "%s ignored (they set the linear solver; the modes' tolerance is modal.tol)",
                 ignored);
    if (o->backend) HK_TRY(hk_options_set(*out, "backend", o->backend));
    const char *key[2] = {"eigen.tol", "eigen.maxit"};
    const int given[2] = {c->modal_tol > 0, c->modal_maxit > 0};
    for (int k = 0; k < 2; k++) {
        if (!given[k]) continue;
        if (hk_options_has(*out, key[k])) {
            ierr = hk_case_error(c, c->modal_loc,
                                 "%s is given twice, as modal.%s and as solver.%s; keep one",
                                 key[k], key[k] + 6, key[k]);
            goto fail;
        }
        char v[64];
        if (k == 0)
            snprintf(v, sizeof v, "%.17g", c->modal_tol);
        else
            snprintf(v, sizeof v, "%d", c->modal_maxit);
        HK_TRY(hk_options_set(*out, key[k], v));
    }
    hk_options_destroy(all);
    return 0;
fail:
    hk_options_destroy(all);
    hk_options_destroy(*out);
    *out = NULL;
    return ierr;
}

static double frequency(double lambda)
{
    return lambda > 0 ? sqrt(lambda) / (2 * M_PI) : 0;
}

/* y = M x on the host (M of the system: the eliminated one, the free dofs' mass). */
static void mass_apply(const hk_bcsr *M, const double *x, double *y)
{
    const int bs = M->bs, b2 = bs * bs;
#pragma omp parallel for schedule(static) if (M->nbrows > 20000)
    for (int64_t i = 0; i < M->nbrows; i++)
        for (int r = 0; r < bs; r++) {
            double s = 0;
            for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++)
                for (int cc = 0; cc < bs; cc++)
                    s += M->val[(size_t)q * b2 + r * bs + cc] * x[(int64_t)M->colind[q] * bs + cc];
            y[i * bs + r] = s;
        }
}

/* The reported modes from the nev found: those from index `first` on, the prescribed dofs
 * zeroed (they are 0 in the exact eigenvector; the solver leaves rounding there) and the
 * shape renormalised, the effective masses. */
static int fill_modes(const hk_case *c, hk_run *r, int first, const double *lambda, const double *X,
                      const double *resid)
{
    hk_run_modal *md = &r->modal;
    const hk_system *s = &r->sys;
    const int64_t n = s->ndof;
    const int nm = md->nmodes;
    int c0, c1 = direction_range(c, &c0);
    double *Mx = NULL;
    HK_CALL(hk_calloc((size_t)nm, sizeof *md->lambda, &md->lambda));
    HK_CALL(hk_calloc((size_t)nm, sizeof *md->freq, &md->freq));
    HK_CALL(hk_calloc((size_t)nm, sizeof *md->residual, &md->residual));
    HK_CALL(hk_calloc((size_t)nm, sizeof *md->rigid, &md->rigid));
    HK_CALL(hk_calloc((size_t)nm, sizeof *md->gamma, &md->gamma));
    HK_CALL(hk_calloc((size_t)nm, sizeof *md->eff_mass, &md->eff_mass));
    HK_CALL(hk_malloc((size_t)(n * nm) * sizeof *md->X, &md->X));
    HK_CALL(hk_malloc((size_t)n * sizeof *Mx + 1, &Mx));
    for (int j = 0; j < nm; j++) {
        const int k = first + j;
        md->lambda[j] = lambda[k];
        md->freq[j] = frequency(lambda[k]);
        md->residual[j] = resid[k];
        md->rigid[j] = k < md->free_rigid;
        if (!md->rigid[j] && !(resid[k] <= md->max_residual)) md->max_residual = resid[k];
        double *x = md->X + (size_t)j * n;
        memcpy(x, X + (size_t)k * n, (size_t)n * sizeof *x);
        for (int64_t i = 0; i < n; i++)
            if (s->fixed[i]) x[i] = 0;
        mass_apply(&s->M, x, Mx);
        double xmx = 0;
        for (int64_t i = 0; i < n; i++)
            xmx += x[i] * Mx[i];
        const double sc = xmx > 0 ? 1 / sqrt(xmx) : 1;
        for (int64_t i = 0; i < n; i++)
            x[i] *= sc;
        for (int d = c0; d < c1; d++) {
            const double *mr = s->mass_r + (size_t)d * n;
            double g = 0;
            for (int64_t i = 0; i < n; i++)
                g += x[i] * mr[i];
            md->gamma[j][d] = g;
            md->eff_mass[j][d] = g * g;
        }
    }
    free(Mx);
    return 0;
}

int hk_run_modal_solve(const hk_case *c, const hk_run_opts *o, double t0, hk_run *r)
{
    int ierr = 0;
    hk_run_modal *md = &r->modal;
    hk_options *opts = NULL;
    hk_eigen *e = NULL;
    double *coords = NULL, *lambda = NULL, *X = NULL, *resid = NULL;
    const hk_system *s = &r->sys;
    const int64_t n = s->ndof, nfree = s->ndof - s->nfixed;
    const double shift = c->modal_shift, t = hk_time();
    md->free_rigid = s->free_rigid;
    memcpy(md->total_mass, s->total_mass, sizeof md->total_mass);
    case_notes(c, md);
    HK_TRY(eigen_options(c, o, md, &opts));
    if (md->notes[0]) hk_run_progress(o, t0, "modal: %s", md->notes);
    if (s->free_rigid)
        hk_run_progress(o, t0,
                        "modal: the supports leave %d rigid-body motion%s free: %s at zero "
                        "frequency",
                        s->free_rigid, s->free_rigid == 1 ? "" : "s",
                        s->free_rigid == 1 ? "the first mode is one" : "the first modes are these");

    /* the eigensolver on K and M, set up once */
    {
        hk_nearnull nn;
        HK_TRY(hk_run_nearnull(r, &nn, &coords));
        HK_TRY(hk_eigen_create(&s->K, &s->M, &nn, opts, &e));
    }
    {
        char *buf = NULL;
        size_t len = 0;
        FILE *mf = open_memstream(&buf, &len);
        if (mf) {
            hk_eigen_describe(e, mf);
            fclose(mf);
        }
        hk_run_set_description(r, buf);
        free(buf);
    }
    r->t_setup = hk_time() - t;
    hk_run_progress(o, t0, "modal: %s, set up in %.2f s", r->solver_desc, r->t_setup);

    /* the modes above the shift: the ones below it are found as well (the rigid-body modes
     * lie below any positive shift) */
    int below = shift > 0 ? s->free_rigid : 0, nev = 0, rounds = 0;
    const double ts = hk_time();
    for (;;) {
        nev = c->modes + below;
        if (nev > nfree) {
            ierr = hk_case_error(
                c, c->modes_loc,
                "%d modes asked for%s, but the model has only %lld free dofs; ask for fewer "
                "modes or refine the mesh",
                nev, below ? " (with those below modal.shift)" : "", (long long)nfree);
            goto fail;
        }
        free(lambda), free(X), free(resid);
        lambda = X = resid = NULL;
        HK_TRY(hk_malloc((size_t)nev * sizeof *lambda, &lambda));
        HK_TRY(hk_malloc((size_t)nev * sizeof *resid, &resid));
        HK_TRY(hk_malloc((size_t)(n * nev) * sizeof *X, &X));
        hk_run_progress(o, t0, "modal: the %d lowest modes%s", nev,
                        below ? " (those below modal.shift left out)" : "");
        HK_TRY(hk_eigen_solve(e, nev, lambda, X, resid, &md->res));
        rounds++;
        if (md->res.converged < nev || shift <= 0) break;
        int nb = 0;
        while (nb < nev && frequency(lambda[nb]) < shift)
            nb++;
        if (nb <= below || rounds >= 8) {
            below = nb;
            break;
        }
        below = nb; /* more below the shift than counted: again with that many more */
    }
    r->t_solve = hk_time() - ts;
    for (int j = 0; j < nev; j++) /* a held dof's eigenpair: the model has too few free modes */
        if (lambda[j] >= 0.5 * s->lambda_fixed) {
            ierr = hk_case_error(c, c->modes_loc,
                                 "mode %d found is a prescribed dof's (lambda %g): the model "
                                 "has fewer free modes than asked for; ask for fewer modes or "
                                 "refine the mesh",
                                 j + 1, lambda[j]);
            goto fail;
        }
    md->skipped = shift > 0 ? below : 0;
    md->nmodes = nev - md->skipped < c->modes ? nev - md->skipped : c->modes;
    r->converged = md->res.converged == nev;
    HK_TRY(fill_modes(c, r, md->skipped, lambda, X, resid));
    if (md->nmodes > 0 && md->rigid[md->nmodes - 1])
        add_note(md,
                 "every mode reported is a rigid-body mode; ask for more than %d modes or set "
                 "modal.shift (Hz) to see the flexible ones",
                 md->free_rigid);
    hk_run_progress(o, t0,
                    "modal: %s: %d of %d modes after %d iterations%s, largest residual %.3e%s, "
                    "in %.2f s",
                    r->converged ? "converged" : "not converged", md->res.converged, nev,
                    md->res.iterations, rounds > 1 ? " (last round)" : "", md->max_residual,
                    md->free_rigid ? " (the flexible modes)" : "", r->t_solve);
    r->t_total = hk_time() - t0;
    if (!r->converged)
        ierr =
            hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                         "%s: the eigensolver stopped with %d of %d modes converged (largest "
                         "relative residual %.3e after %d iterations); try more iterations "
                         "(modal.maxit), a looser modal.tol or another preconditioner "
                         "(--set solver.pc=...)",
                         c->path, md->res.converged, nev, md->res.max_residual, md->res.iterations);
fail:
    hk_eigen_destroy(e);
    hk_options_destroy(opts);
    free(coords);
    free(lambda);
    free(X);
    free(resid);
    return ierr;
}

void hk_run_modal_free(hk_run_modal *m)
{
    free(m->lambda);
    free(m->freq);
    free(m->residual);
    free(m->rigid);
    free(m->X);
    free(m->gamma);
    free(m->eff_mass);
    free(m->output);
    memset(m, 0, sizeof *m);
}

/* ---- output ---------------------------------------------------------------------------- */

int hk_run_modal_write(const hk_case *c, hk_run *r, const char *path, const hk_run_opts *o)
{
    hk_run_modal *md = &r->modal;
    const hk_mesh *m = &r->mesh;
    const int dim = m->dim;
    const int64_t n = r->sys.ndof;
    size_t l = strlen(path);
    int stem = l >= 4 && !strcmp(path + l - 4, ".vtu") ? (int)l - 4 : (int)l;
    int ierr = 0;
    hk_fields f;
    memset(&f, 0, sizeof f);
    f.nnodes = m->nnodes;
    f.ncells = m->cells.n;
    const char **files = NULL;
    char(*names)[64] = NULL;
    const char **namep = NULL;
    double *shape = NULL, *times = NULL;
    const double t = hk_time(), t0 = t - r->t_total;
    free(md->output);
    HK_TRY(hk_calloc((size_t)(md->nmodes > 0 ? md->nmodes : 1), sizeof *md->output, &md->output));
    HK_TRY(hk_calloc((size_t)(md->nmodes > 0 ? md->nmodes : 1), sizeof *files, &files));
    HK_TRY(hk_calloc((size_t)(md->nmodes > 0 ? md->nmodes : 1), sizeof *names, &names));
    HK_TRY(hk_calloc((size_t)(md->nmodes > 0 ? md->nmodes : 1), sizeof *namep, &namep));
    HK_TRY(hk_calloc((size_t)(3 * m->nnodes), sizeof *shape, &shape));
    HK_TRY(hk_calloc((size_t)(md->nmodes > 0 ? md->nmodes : 1), sizeof *times, &times));
    const int width = md->nmodes + md->skipped >= 100 ? 3 : 2;
    for (int j = 0; j < md->nmodes; j++) {
        const double *x = md->X + (size_t)j * n;
        for (int64_t i = 0; i < m->nnodes; i++)
            for (int d = 0; d < dim; d++)
                shape[3 * i + d] = x[i * dim + d];
        f.mode_shape = shape;
        const int num = md->skipped + j + 1;
        f.nfield_data = 3;
        f.field_data_name[0] = "mode", f.field_data[0] = num;
        f.field_data_name[1] = "frequency_hz", f.field_data[1] = md->freq[j];
        f.field_data_name[2] = "eigenvalue", f.field_data[2] = md->lambda[j];
        times[j] = num;
        int k = snprintf(md->output[j], sizeof md->output[j], "%.*s-mode%0*d.vtu", stem, path,
                         width, num);
        HK_TRY_CHECK(k < (int)sizeof md->output[j], HK_ERR_IO,
                     "%s: the output path of mode %d is too long; set a shorter output.file",
                     c->path, num);
        const hk_vtu_options vo = hk_run_vtu_options(c);
        HK_TRY(hk_vtu_write(md->output[j], m, &f, &vo));
        const char *slash = strrchr(md->output[j], '/');
        files[j] = slash ? slash + 1 : md->output[j]; /* same folder as the .pvd */
        snprintf(names[j], sizeof names[j], "mode %d, %.6g Hz%s", num, md->freq[j],
                 md->rigid[j] ? " (rigid body)" : "");
        namep[j] = names[j];
    }
    int k = snprintf(r->output, sizeof r->output, "%.*s.pvd", stem, path);
    HK_TRY_CHECK(k < (int)sizeof r->output, HK_ERR_IO,
                 "%s: the output path is too long; set a shorter output.file", c->path);
    HK_TRY(hk_pvd_write_times(r->output, md->nmodes, files, namep, times));
    r->t_output = hk_time() - t;
    r->t_total += r->t_output;
    hk_run_progress(o, t0, "output: %s and %d .vtu files (%.*s-mode*.vtu) in %.2f s", r->output,
                    md->nmodes, stem, path, r->t_output);
fail:
    free(files);
    free(names);
    free(namep);
    free(shape);
    free(times);
    return ierr;
}

/* ---- summary --------------------------------------------------------------------------- */

void hk_run_modal_print(const hk_case *c, const hk_run *r, FILE *f)
{
    const hk_run_modal *md = &r->modal;
    int c0, c1 = direction_range(c, &c0);
    const int flexible = md->nmodes > 0 && !md->rigid[md->nmodes - 1];
    fprintf(f, "  modal          %d modes%s, %s mass, %d iterations, %s", md->nmodes,
            md->skipped ? " above modal.shift" : "",
            c->mass == HK_MASS_LUMPED ? "lumped" : "consistent", md->res.iterations,
            r->converged ? "converged" : "not converged");
    if (flexible)
        fprintf(f, ", largest residual %.3e\n", md->max_residual);
    else
        fprintf(f, " (rigid-body modes: at the rounding floor)\n");
    if (md->skipped)
        fprintf(f, "  below shift    %d modes below %g Hz left out\n", md->skipped, c->modal_shift);
    if (md->notes[0]) fprintf(f, "  note           %s\n", md->notes);
    fprintf(f, "  total mass    ");
    for (int d = c0; d < c1; d++)
        fprintf(f, " %s %.6e", dir_names[d], md->total_mass[d]);
    fprintf(f, "%s\n", c->analysis == HK_AXISYMMETRIC ? " per radian" : "");
    fprintf(f, "  mode  frequency (Hz)  ");
    for (int d = c0; d < c1; d++)
        fprintf(f, "  eff. mass %s    %s %%  ", dir_names[d], dir_names[d]);
    fprintf(f, " residual\n");
    double sum[3] = {0, 0, 0};
    for (int j = 0; j < md->nmodes; j++) {
        fprintf(f, "  %4d  %14.6e  ", md->skipped + j + 1, md->freq[j]);
        for (int d = c0; d < c1; d++) {
            const double frac = md->total_mass[d] > 0 ? md->eff_mass[j][d] / md->total_mass[d] : 0;
            sum[d] += frac;
            fprintf(f, "  %12.4e  %6.2f  ", md->eff_mass[j][d], 100 * frac);
        }
        if (md->rigid[j]) /* lambda = 0: no relative residual, converged at the rounding floor */
            fprintf(f, " %8s  rigid body\n", "-");
        else
            fprintf(f, " %.2e\n", md->residual[j]);
    }
    fprintf(f, "  sum           %16s", "");
    for (int d = c0; d < c1; d++)
        fprintf(f, "  %12s  %6.2f  ", "", 100 * sum[d]);
    fprintf(f, "\n");
}

void hk_run_modal_print_json(const hk_case *c, const hk_run *r, FILE *f)
{
    const hk_run_modal *md = &r->modal;
    int c0, c1 = direction_range(c, &c0);
    fprintf(
        f, "\"modal\": {\n    \"modes\": %d,\n    \"skipped_below_shift\": %d,\n    \"shift_hz\": ",
        md->nmodes, md->skipped);
    hk_run_json_number(f, c->modal_shift);
    fprintf(f,
            ",\n    \"mass\": \"%s\",\n    \"converged\": %s,\n    \"iterations\": %d,\n"
            "    \"preconditioner_applies\": %lld,\n    \"max_residual\": ",
            c->mass == HK_MASS_LUMPED ? "lumped" : "consistent", r->converged ? "true" : "false",
            md->res.iterations, (long long)md->res.pc_applies);
    hk_run_json_number(f, md->max_residual);
    fprintf(f, ",\n    \"rigid_body_modes\": %d,\n    \"notes\": ", md->free_rigid);
    hk_run_json_string(f, md->notes);
    fprintf(f, ",\n    \"directions\": [");
    for (int d = c0; d < c1; d++)
        fprintf(f, "%s\"%s\"", d > c0 ? ", " : "", dir_names[d]);
    fprintf(f, "],\n    \"total_mass\": [");
    for (int d = c0; d < c1; d++) {
        if (d > c0) fprintf(f, ", ");
        hk_run_json_number(f, md->total_mass[d]);
    }
    fprintf(f, "],\n    \"list\": [");
    for (int j = 0; j < md->nmodes; j++) {
        fprintf(f, "%s\n      {\"mode\": %d, \"frequency_hz\": ", j ? "," : "",
                md->skipped + j + 1);
        hk_run_json_number(f, md->freq[j]);
        fprintf(f, ", \"eigenvalue\": ");
        hk_run_json_number(f, md->lambda[j]);
        fprintf(f, ", \"rigid_body\": %s, \"residual\": ", md->rigid[j] ? "true" : "false");
        hk_run_json_number(f, md->rigid[j] ? NAN : md->residual[j]);
        const char *arr[3] = {"participation", "effective_mass", "effective_mass_fraction"};
        for (int a = 0; a < 3; a++) {
            fprintf(f, ", \"%s\": [", arr[a]);
            for (int d = c0; d < c1; d++) {
                if (d > c0) fprintf(f, ", ");
                const double v =
                    a == 0   ? md->gamma[j][d]
                    : a == 1 ? md->eff_mass[j][d]
                             : (md->total_mass[d] > 0 ? md->eff_mass[j][d] / md->total_mass[d] : 0);
                hk_run_json_number(f, v);
            }
            fprintf(f, "]");
        }
        fprintf(f, ", \"output\": ");
        hk_run_json_string(f, md->output ? md->output[j] : "");
        fprintf(f, "}");
    }
    fprintf(f, "%s]\n  }", md->nmodes ? "\n    " : "");
}
