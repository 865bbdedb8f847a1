/* Assembly and recovery on a device: the host's part of hk_assemble_on / hk_postproc_on and
 * the choice of a driver (fem_device.h). The host runs what is cheap and boundary-sized or
 * needs messages (checks, supports, the rigid-body check, boundary and nodal loads); the
 * device everything per cell or per matrix entry (adjacency, parts, pattern, element
 * matrices and loads, elimination, recovery). Steps and errors come in hk_assemble's order
 * where the user can see it: checks, supports, rigid-body motion, loads, inverted elements. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"      /* assembly/ */
#include "constraints.h" /* assembly/ */
#include "coupling.h"    /* assembly/: hk_rigid_count */
#include "fem_device.h"
#include "fem_numeric.h"
#include "groups.h"  /* assembly/: hk_asm_thickness */
#include "loads.h"   /* assembly/ */
#include "pp_impl.h" /* postproc/: hk_postproc in steps */

size_t hk_fem_chunk_bytes = 0;
size_t hk_fem_stage_bytes = 0;

const char *hk_assemble_on_limit(const hk_problem *p)
{
    if (!p) return NULL;
    for (int k = 0; k < p->nsupports && p->supports; k++)
        if (p->supports[k].kind == HK_SUPPORT_SPRING)
            return "spring supports add their stiffness to K on the host";
    if (hk_rigid_count(p) > 0) return "rigid couplings transform K on the host (T^T K T)";
    return NULL;
}

const hk_fem_driver *hk_fem_cpu_driver = NULL;

/* HOOKE_FEM_EMULATE=1 (tests of the hooke program, under mpirun too): the cpu backend takes
 * the device's path through the emulated driver; 0 or unset: the host's own; anything else is
 * refused. With it, HOOKE_FEM_EMULATE_FREE=BYTES is the free memory the emulated device
 * reports (a device too small, on one process of several). */
static int emulate_on_cpu(const hk_fem_driver **drv)
{
    const char *v = getenv("HOOKE_FEM_EMULATE"), *fr = getenv("HOOKE_FEM_EMULATE_FREE");
    HK_CHECK(!v || !*v || !strcmp(v, "0") || !strcmp(v, "1"), HK_ERR_ARG,
             "HOOKE_FEM_EMULATE=%s: set it to 1 (the cpu backend runs the device assembly and "
             "recovery emulated) or 0, or unset it",
             v);
    if (!v || strcmp(v, "1")) return 0;
    *drv = &hk_fem_emul_driver;
    if (fr && *fr) {
        char *end = NULL;
        const unsigned long long b = strtoull(fr, &end, 10);
        HK_CHECK(*end == 0 && b > 0 && fr[0] != '-', HK_ERR_ARG,
                 "HOOKE_FEM_EMULATE_FREE=%s: give the emulated device's free memory in bytes "
                 "(a positive integer), or unset it",
                 fr);
        hk_fem_emul_free_bytes = (size_t)b;
    }
    return 0;
}

/* The driver of backend be, NULL for the host (be NULL or cpu, unless a test routes the cpu
 * backend through hk_fem_cpu_driver or HOOKE_FEM_EMULATE). */
static int driver_of(const hk_backend *be, const hk_fem_driver **drv)
{
    *drv = NULL;
    if (be && !strcmp(hk_backend_name(be), "cpu")) {
        *drv = hk_fem_cpu_driver;
        if (!*drv) HK_CALL(emulate_on_cpu(drv));
    }
    if (!be || !strcmp(hk_backend_name(be), "cpu")) return 0;
#ifdef HOOKE_HAVE_CUDA
    if (!strcmp(hk_backend_name(be), "cuda")) {
        *drv = &hk_fem_cuda_driver;
        return 0;
    }
#endif
    return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                        "no device assembly for backend %s (this build has %s); assemble on the "
                        "host",
                        hk_backend_name(be),
#ifdef HOOKE_HAVE_CUDA
                        "cuda"
#else
                        "no CUDA"
#endif
    );
}

/* What the device needs of each region (hk_assemble's numeric loop computes the same per
 * cell): the law of every region that carries cells, its temperature change when f is
 * assembled, its body force, the fast kernel's condition. */
static int regions_of(const hk_problem *p, int with_f, hk_fem_region **out)
{
    const hk_mesh *m = p->mesh;
    const int axi = p->analysis == HK_AXISYMMETRIC;
    hk_fem_region *R;
    uint8_t *used = NULL;
    int ierr = 0;
    HK_CALL(hk_calloc((size_t)m->nregions + 1, sizeof *R, &R));
    HK_TRY(hk_calloc((size_t)m->nregions + 1, 1, &used));
    HK_TRY(hk_regions_used(m, used));
    for (int r = 0; r < m->nregions; r++) {
        R[r].law.isotropic = 1;
        if (!used[r]) continue;
        const hk_material *mt = &p->materials[r];
        HK_TRY(hk_material_law(mt, p->analysis, m->dim, &R[r].law));
        R[r].dT = with_f ? hk_problem_region_dT(p, r) : 0;
        for (int i = 0; i < 3; i++)
            R[r].b[i] = p->body_force[i] + mt->rho * p->gravity[i];
        R[r].iso = R[r].law.isotropic && !axi;
    }
    *out = R;
    R = NULL;
fail:
    free(R);
    free(used);
    return ierr;
}

/* The stages of the last device assembly or recovery, for hk_fem_stage_times. */
static char stage_log[512];

/* Stage times on stderr when HOOKE_ASSEMBLY_PROFILE is set, as the host assembly prints its
 * own (wall time from the previous stage; a stage that only launched kernels shows little,
 * the next one that waits for them the rest); always kept in stage_log, a part of a stage (the
 * driver's, hk_fem_part_time) in parentheses before the stage's own. */
static void timed(const char *what, const char *name, double *t, int part)
{
    static int on = -1;
    if (on < 0) on = getenv("HOOKE_ASSEMBLY_PROFILE") != NULL;
    const double now = hk_time();
    if (on && name) fprintf(stderr, "%s: %-12s %8.2f ms\n", what, name, 1e3 * (now - *t));
    if (name) {
        const size_t n = strlen(stage_log);
        snprintf(stage_log + n, sizeof stage_log - n, "%s%s%s %.1f%s", n ? ", " : "",
                 part ? "(" : "", name, 1e3 * (now - *t), part ? ")" : "");
    }
    *t = now;
}

/* A stage's time; name NULL: only the clock starts. */
static void stage(const char *what, const char *name, double *t)
{
    timed(what, name, t, 0);
}

/* A new assembly or recovery: its clock starts, stage_log empty. */
static void stages_begin(const char *what, double *t)
{
    stage_log[0] = 0;
    stage(what, NULL, t);
}

const char *hk_fem_stage_times(void)
{
    return stage_log;
}

void hk_fem_part_time(const char *what, const char *part, double *t)
{
    timed(what, part, t, 1);
}

/* The nodes whose cells hk_loads_apply may ask for: those of the groups of the boundary loads
 * (their facets' nodes and their node lists), marked 1 in mask (nnodes bytes, zeroed). The
 * other nodes' lists stay on the device. */
static void load_nodes(const hk_problem *p, uint8_t *mask)
{
    const hk_mesh *m = p->mesh;
    for (int l = 0; l < p->nloads; l++) {
        const hk_load *ld = &p->loads[l];
        if (ld->kind == HK_LOAD_TEMPERATURE || ld->boundary < 0 || ld->boundary >= m->nboundaries)
            continue;
        const hk_group *g = &m->boundaries[ld->boundary];
        const int64_t tot = g->elems.n > 0 && g->elems.ptr ? g->elems.ptr[g->elems.n] : 0;
        for (int64_t k = 0; k < tot; k++)
            if (g->elems.nodes[k] >= 0 && g->elems.nodes[k] < m->nnodes)
                mask[g->elems.nodes[k]] = 1;
        for (int64_t k = 0; g->nodes && k < g->nnodes; k++)
            if (g->nodes[k] >= 0 && g->nodes[k] < m->nnodes) mask[g->nodes[k]] = 1;
    }
}

/* Every reference element, for the device's copy (a zeroed entry for types without one). */
static int refs_table(hk_elref **out)
{
    hk_elref *refs;
    HK_CALL(hk_calloc(HK_EL_COUNT, sizeof *refs, &refs));
    for (int t = 0; t < HK_EL_COUNT; t++)
        if (hk_eltype_has_kernel((hk_eltype)t)) refs[t] = *hk_elref_get((hk_eltype)t);
    *out = refs;
    return 0;
}

/* The assembly's session kept for the recovery (HOOKE_FEM_RECOVER=keep): its driver, its
 * reference table and what identifies the mesh it holds (the pointers and a hash of the
 * contents, so that a mesh changed or freed in between is opened anew). */
static struct {
    const hk_fem_driver *drv;
    hk_fem_session *ses;
    hk_elref *refs;
    const hk_mesh *m;
    const double *node_dT;
    uint64_t hash;
} kept;

static void kept_close(void)
{
    if (kept.ses) kept.drv->close(kept.ses);
    free(kept.refs);
    memset(&kept, 0, sizeof kept);
}

/* The kept session where it holds mesh m and node_dT for driver drv (*ses, *refs handed
 * over, NULL otherwise); any other kept session is closed. */
static void kept_take(const hk_fem_driver *drv, const hk_mesh *m, const double *node_dT,
                      hk_fem_session **ses, hk_elref **refs)
{
    *ses = NULL, *refs = NULL;
    if (kept.ses && kept.drv == drv && kept.m == m && kept.node_dT == node_dT &&
        kept.hash == hk_fem_mesh_hash(m, node_dT)) {
        *ses = kept.ses, *refs = kept.refs;
        kept.ses = NULL, kept.refs = NULL;
    }
    kept_close();
}

/* Keep the session *ses (holding p's mesh and temperatures) and *refs for the recovery (both
 * handed over, NULL after). */
static void kept_put(const hk_fem_driver *drv, const hk_problem *p, hk_fem_session **ses,
                     hk_elref **refs)
{
    kept.drv = drv, kept.ses = *ses, kept.refs = *refs, kept.m = p->mesh;
    kept.node_dT = p->node_dT;
    kept.hash = hk_fem_mesh_hash(p->mesh, p->node_dT);
    *ses = NULL, *refs = NULL;
}

/* Pattern and element matrices (and, with s, the loads, supports and elimination). */
static int assemble_device(const hk_fem_driver *drv, const hk_problem *p, hk_system *s,
                           hk_resident_bcsr *Konly)
{
    int ierr = 0;
    hk_fem_session *ses = NULL;
    hk_fem_region *regions = NULL;
    hk_elref *refs = NULL;
    hk_adj n2c = {0};
    int32_t *label = NULL;
    uint8_t *mask = NULL;
    int64_t bad = -1;
    int rflags = 0;
    hk_resident_bcsr *K = s ? &s->Kd : Konly;
    const char *what = "device assembly";
    double t = 0;
    stages_begin(what, &t);
    kept_close(); /* a session kept from an earlier assembly: its memory back first */
    HK_CALL(hk_check_problem(p));
    HK_CALL(hk_fem_recover_variant(&rflags));
    stage(what, "checks", &t);
    const hk_mesh *m = p->mesh;
    const char *limit = s ? hk_assemble_on_limit(p) : NULL;
    HK_CHECK(!limit, HK_ERR_UNSUPPORTED,
             "the device assembly cannot take this model: %s; "
             "assemble it on the host (--assembly host)",
             limit);
    if (s) {
        s->dim = m->dim;
        s->nnodes = m->nnodes;
        s->ndof = (int64_t)m->dim * m->nnodes;
        HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->f_ext, &s->f_ext));
        HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->f, &s->f));
        HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->fixed, &s->fixed));
        HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->u_fixed, &s->u_fixed));
    }
    HK_TRY(refs_table(&refs));
    HK_TRY(drv->open(m, s ? p->node_dT : NULL, refs, &ses));
    stage(what, "open", &t);
    if (s) {
        HK_TRY(hk_malloc((size_t)m->nnodes * sizeof *label + 1, &label));
        HK_TRY(drv->parts(ses, label));
        stage(what, "parts", &t);
        if (p->nloads) { /* the cells of the loaded boundaries' nodes */
            HK_TRY(hk_calloc((size_t)m->nnodes + 1, 1, &mask));
            load_nodes(p, mask);
            HK_TRY(drv->adjacency(ses, mask, &n2c));
        }
        stage(what, "adjacency", &t);
    }
    /* the pattern's kernels run while the host applies the supports (its row lengths) and
     * the loads (its columns and K's zeroing; numeric waits for them) */
    HK_TRY(drv->pattern_count(ses));
    if (s) {
        HK_TRY(hk_supports_apply(p, s->fixed, s->u_fixed, &s->nfixed));
        stage(what, "supports", &t);
    }
    HK_TRY(drv->pattern(ses, K));
    stage(what, "pattern", &t);
    if (s) {
        HK_TRY(hk_check_rigid_labels(p, label, NULL, s->fixed, NULL));
        stage(what, "rigid", &t);
        HK_TRY(hk_loads_apply(p, &n2c, s->f_ext));
        stage(what, "loads", &t);
    }
    HK_TRY(regions_of(p, s != NULL, &regions));
    {
        const hk_fem_asm_job job = {.regions = regions,
                                    .nregions = m->nregions,
                                    .axi = p->analysis == HK_AXISYMMETRIC,
                                    .with_f = s != NULL,
                                    .touch = s ? s->f : NULL, /* eliminate's download's */
                                    .touch_bytes = s ? (size_t)s->ndof * sizeof *s->f : 0,
                                    .fac = hk_asm_thickness(p),
                                    .chunk_bytes = hk_fem_chunk_bytes};
        HK_TRY(drv->numeric(ses, &job, K, s ? s->f_ext : NULL, &bad));
    }
    stage(what, "numeric", &t);
    if (bad >= 0) HK_TRY(hk_check_inverted(p, bad));
    if (s) HK_TRY(drv->eliminate(ses, K, s->fixed, s->u_fixed, s->f));
    stage(what, "eliminate", &t);
    if (s) { /* the coordinates stay where K is, for pc=amg's rigid-body modes */
        s->coords_be = drv->backend();
        HK_TRY(hk_backend_alloc(s->coords_be, (size_t)m->nnodes * m->dim * sizeof(double),
                                (void **)&s->coords_d));
        HK_TRY(drv->coords(ses, s->coords_d));
        stage(what, "coordinates", &t);
    }
    if (s && rflags & HK_FEM_REC_KEEP) { /* for the recovery: the session, not closed */
        kept_put(drv, p, &ses, &refs);
        stage(what, "keep", &t);
    }
fail:
    drv->close(ses);
    free(refs);
    hk_adj_free(&n2c);
    free(label);
    free(mask);
    free(regions);
    if (ierr && s) hk_system_free(s);
    if (ierr && !s) hk_resident_bcsr_free(Konly);
    return ierr;
}

int hk_fem_assemble_with(const hk_fem_driver *drv, const hk_problem *p, hk_system *s)
{
    HK_CHECK(s, HK_ERR_ARG, "hk_assemble_on: the output system is NULL");
    memset(s, 0, sizeof *s);
    return assemble_device(drv, p, s, NULL);
}

int hk_fem_stiffness_with(const hk_fem_driver *drv, const hk_problem *p, hk_resident_bcsr *K)
{
    HK_CHECK(K, HK_ERR_ARG, "hk_assemble_stiffness_on: K is NULL");
    memset(K, 0, sizeof *K);
    return assemble_device(drv, p, NULL, K);
}

/* The first nrows block rows of the device's K into the host's H (its columns as they are),
 * through the driver's pinned staging: the row pointers, then columns and values in one
 * pipeline. */
static int download_rows(const hk_fem_driver *drv, const hk_resident_bcsr *K, int64_t nrows,
                         int values, hk_bcsr *H)
{
    const int bb = K->bs * K->bs;
    memset(H, 0, sizeof *H);
    H->bs = K->bs, H->nbrows = nrows, H->nbcols = K->nbcols;
    HK_CALL(hk_malloc((size_t)(nrows + 1) * sizeof *H->rowptr, &H->rowptr));
    const hk_fem_down ptr = {H->rowptr, K->rowptr, (size_t)(nrows + 1) * sizeof *H->rowptr};
    HK_CALL(drv->download(&ptr, 1));
    const int64_t nnzb = H->rowptr[nrows];
    HK_CALL(hk_malloc((size_t)(nnzb + 1) * sizeof *H->colind, &H->colind));
    if (values) HK_CALL(hk_malloc((size_t)(nnzb * bb + 1) * sizeof *H->val, &H->val));
    const hk_fem_down rows[2] = {{H->colind, K->colind, (size_t)nnzb * sizeof *H->colind},
                                 {H->val, K->val, (size_t)(nnzb * bb) * sizeof *H->val}};
    return drv->download(rows, values ? 2 : 1);
}

/* keep: the rows' values stay on the device (s->Kd, every row of the part: its first nrows
 * rows are the owned ones), only their pattern comes down into s->K (val NULL); keep 2:
 * nothing comes down but the first nrows rows' block count (s->Kd's nnzb, nbrows nrows). */
static int assemble_rows(const hk_fem_driver *drv, const hk_problem *p, int64_t nrows, int keep,
                         hk_system *s);

int hk_fem_assemble_rows_with(const hk_fem_driver *drv, const hk_problem *p, int64_t nrows,
                              hk_system *s)
{
    return assemble_rows(drv, p, nrows, 0, s);
}

int hk_fem_assemble_rows_resident_with(const hk_fem_driver *drv, const hk_problem *p, int64_t nrows,
                                       hk_system *s)
{
    return assemble_rows(drv, p, nrows, 1, s);
}

int hk_fem_assemble_rows_device_with(const hk_fem_driver *drv, const hk_problem *p, int64_t nrows,
                                     hk_system *s)
{
    return assemble_rows(drv, p, nrows, 2, s);
}

static int assemble_rows(const hk_fem_driver *drv, const hk_problem *p, int64_t nrows, int keep,
                         hk_system *s)
{
    int ierr = 0;
    hk_fem_session *ses = NULL;
    hk_fem_region *regions = NULL;
    hk_elref *refs = NULL;
    hk_resident_bcsr K = {0};
    int64_t bad = -1;
    int rflags = 0;
    const char *what = "device assembly (rows)";
    double t = 0;
    HK_CHECK(s && s->fixed && s->u_fixed && s->f_ext && !s->f && !s->K.rowptr, HK_ERR_ARG,
             "hk_assemble_rows_on: give fixed, u_fixed and f_ext of the part's nodes (from "
             "hk_assemble_prepare), without K and f");
    stages_begin(what, &t);
    kept_close();
    HK_CALL(hk_check_problem(p));
    HK_CALL(hk_fem_recover_variant(&rflags));
    const hk_mesh *m = p->mesh;
    HK_CHECK(nrows >= 0 && nrows <= m->nnodes, HK_ERR_ARG,
             "hk_assemble_rows_on: %lld rows asked of a part of %lld nodes", (long long)nrows,
             (long long)m->nnodes);
    const char *limit = hk_assemble_on_limit(p);
    HK_CHECK(!limit, HK_ERR_UNSUPPORTED,
             "the device assembly cannot take this model: %s; "
             "assemble it on the host (--assembly host)",
             limit);
    stage(what, "checks", &t);
    s->dim = m->dim;
    s->nnodes = m->nnodes;
    s->ndof = (int64_t)m->dim * m->nnodes;
    HK_TRY(hk_calloc((size_t)s->ndof + 1, sizeof *s->f, &s->f));
    HK_TRY(refs_table(&refs));
    HK_TRY(drv->open(m, p->node_dT, refs, &ses));
    stage(what, "open", &t);
    /* the supports, loads and rigid-body check came with the part (hk_assemble_prepare on
     * the whole model): the pattern, element matrices, body loads and elimination here */
    HK_TRY(drv->pattern_count(ses));
    HK_TRY(drv->pattern(ses, &K));
    stage(what, "pattern", &t);
    HK_TRY(regions_of(p, 1, &regions));
    {
        /* a failure leaves s->f_ext as it came, so that the host can assemble the rows after
         * it: the body loads stay on the device until the end (no host copy of the loads) */
        const hk_fem_asm_job job = {.regions = regions,
                                    .nregions = m->nregions,
                                    .axi = p->analysis == HK_AXISYMMETRIC,
                                    .with_f = 1,
                                    .f_later = 1,
                                    .touch = s->f, /* eliminate's download's */
                                    .touch_bytes = (size_t)s->ndof * sizeof *s->f,
                                    .fac = hk_asm_thickness(p),
                                    .chunk_bytes = hk_fem_chunk_bytes};
        HK_TRY(drv->numeric(ses, &job, &K, s->f_ext, &bad));
    }
    stage(what, "numeric", &t);
    if (bad >= 0) HK_TRY(hk_check_inverted(p, bad));
    HK_TRY(drv->eliminate(ses, &K, s->fixed, s->u_fixed, s->f));
    stage(what, "eliminate", &t);
    if (keep == 2) { /* the pattern stays too: the owned rows' block count alone comes down */
        const hk_fem_down last = {&K.nnzb, K.rowptr + nrows, sizeof K.nnzb};
        HK_TRY(drv->download(&last, 1));
        K.nbrows = nrows;
        stage(what, "block count", &t);
    } else {
        HK_TRY(download_rows(drv, &K, nrows, !keep, &s->K));
        stage(what, keep ? "download (pattern)" : "download", &t);
    }
    HK_TRY(drv->loads(ses, s->f_ext)); /* the last step: with the body loads */
    stage(what, "loads down", &t);
    if (keep) { /* the values stay, the system's */
        s->Kd = K;
        memset(&K, 0, sizeof K);
    }
    if (rflags & HK_FEM_REC_KEEP) /* for the recovery: the session, not closed */
        kept_put(drv, p, &ses, &refs);
fail:
    drv->close(ses);
    free(refs);
    free(regions);
    hk_resident_bcsr_free(&K); /* the other rows are incomplete: never read */
    if (ierr) {
        hk_resident_bcsr_free(&s->Kd);
        hk_bcsr_free(&s->K);
        free(s->f);
        s->f = NULL;
    }
    return ierr;
}

static int postproc_device(const hk_fem_driver *drv, const hk_problem *p, const hk_system *s,
                           const double *u, int64_t nowned, hk_fields *out);

int hk_fem_postproc_with(const hk_fem_driver *drv, const hk_problem *p, const hk_system *s,
                         const double *u, hk_fields *out)
{
    return postproc_device(drv, p, s, u, p && p->mesh ? p->mesh->nnodes : 0, out);
}

int hk_fem_postproc_part_with(const hk_fem_driver *drv, const hk_problem *p, const hk_system *s,
                              const double *u, int64_t nowned, hk_fields *out)
{
    return postproc_device(drv, p, s, u, nowned, out);
}

/* The recovery on the device; the maxima and the supports' sums over the nodes [0, nowned). */
static int postproc_device(const hk_fem_driver *drv, const hk_problem *p, const hk_system *s,
                           const double *u, int64_t nowned, hk_fields *out)
{
    int ierr = 0;
    hk_pp_work w;
    hk_fem_session *ses = NULL;
    hk_elref *refs = NULL;
    int64_t bad = -1;
    double t = 0;
    stages_begin("device recovery", &t);
    HK_CALL(hk_pp_prepare(p, s, u, out, &w));
    if (nowned < w.nowned) w.nowned = nowned;
    stage("device recovery", "prepare", &t);
    {
        const hk_fem_rec_job job = {w.laws,  w.dTr,  w.nlaws,           p->analysis,
                                    w.thick, out->u, hk_fem_chunk_bytes};
        kept_take(drv, p->mesh, p->node_dT, &ses, &refs); /* HOOKE_FEM_RECOVER=keep */
        if (!ses) {
            HK_TRY(refs_table(&refs));
            HK_TRY(drv->open(p->mesh, p->node_dT, refs, &ses));
        }
        stage("device recovery", "open", &t);
        HK_TRY(drv->recover(ses, &job, out, w.fint, &bad));
        stage("device recovery", "recover", &t);
    }
    if (bad >= 0) HK_TRY(hk_pp_element_error(p, &w, out, bad));
    HK_TRY(hk_pp_finish(p, s, &w, out));
    stage("device recovery", "reactions", &t);
fail:
    drv->close(ses);
    free(refs);
    hk_pp_work_free(&w);
    if (ierr) hk_fields_free(out);
    return ierr;
}

int hk_fem_on_device(const hk_backend *be)
{
    const hk_fem_driver *drv = NULL;
    const int ierr = driver_of(be, &drv);
    return !ierr && drv != NULL;
}

int hk_assemble_on(const hk_backend *be, const hk_problem *p, hk_system *s)
{
    const hk_fem_driver *drv;
    HK_CALL(driver_of(be, &drv));
    return drv ? hk_fem_assemble_with(drv, p, s) : hk_assemble(p, s);
}

int hk_assemble_stiffness_on(const hk_backend *be, const hk_problem *p, hk_resident_bcsr *K)
{
    const hk_fem_driver *drv;
    HK_CALL(driver_of(be, &drv));
    if (drv) return hk_fem_stiffness_with(drv, p, K);
    /* the host's K in the cpu backend's memory (its free() releases both) */
    hk_bcsr H;
    HK_CHECK(K, HK_ERR_ARG, "hk_assemble_stiffness_on: K is NULL");
    memset(K, 0, sizeof *K);
    HK_CALL(hk_assemble_stiffness(p, &H));
    HK_CALL(hk_backend_get("cpu", &K->be));
    K->bs = H.bs, K->nbrows = H.nbrows, K->nbcols = H.nbcols, K->nnzb = H.rowptr[H.nbrows];
    K->rowptr = H.rowptr, K->colind = H.colind, K->val = H.val;
    return 0;
}

int hk_postproc_on(const hk_backend *be, const hk_problem *p, const hk_system *s, const double *u,
                   hk_fields *out)
{
    const hk_fem_driver *drv;
    HK_CHECK(out, HK_ERR_ARG, "hk_postproc: the output fields pointer is NULL");
    memset(out, 0, sizeof *out);
    HK_CALL(driver_of(be, &drv));
    return drv ? hk_fem_postproc_with(drv, p, s, u, out) : hk_postproc(p, s, u, out);
}

int hk_assemble_rows_on(const hk_backend *be, const hk_problem *p, int64_t nrows, hk_system *s)
{
    const hk_fem_driver *drv;
    HK_CALL(driver_of(be, &drv));
    return drv ? hk_fem_assemble_rows_with(drv, p, nrows, s) : hk_assemble_rows(p, s);
}

int hk_assemble_rows_resident_on(const hk_backend *be, const hk_problem *p, int64_t nrows,
                                 hk_system *s)
{
    const hk_fem_driver *drv;
    HK_CALL(driver_of(be, &drv));
    return drv ? hk_fem_assemble_rows_resident_with(drv, p, nrows, s) : hk_assemble_rows(p, s);
}

int hk_assemble_rows_device_on(const hk_backend *be, const hk_problem *p, int64_t nrows,
                               hk_system *s)
{
    const hk_fem_driver *drv;
    HK_CALL(driver_of(be, &drv));
    return drv ? hk_fem_assemble_rows_device_with(drv, p, nrows, s) : hk_assemble_rows(p, s);
}

int hk_postproc_part_on(const hk_backend *be, const hk_problem *p, const hk_system *s,
                        const double *u, int64_t nowned, hk_fields *out)
{
    const hk_fem_driver *drv;
    HK_CHECK(out, HK_ERR_ARG, "hk_postproc_part: the output fields pointer is NULL");
    memset(out, 0, sizeof *out);
    HK_CALL(driver_of(be, &drv));
    return drv ? hk_fem_postproc_part_with(drv, p, s, u, nowned, out)
               : hk_postproc_part(p, s, u, nowned, out);
}

double hk_assemble_on_bytes(const hk_mesh *m, double nnz)
{
    const double nn = (double)m->nnodes, ne = (double)m->cells.n,
                 tot = m->cells.n ? (double)m->cells.ptr[m->cells.n] : 0, d = m->dim, ndof = d * nn;
    /* the element records (weights and gradients at the full rule's points), at most a chunk */
    double rec = 0, count[HK_EL_COUNT] = {0};
    for (int64_t e = 0; e < m->cells.n; e++)
        if (m->cells.type[e] < HK_EL_COUNT) count[m->cells.type[e]]++;
    for (int t = 0; t < HK_EL_COUNT; t++) {
        const hk_elref *r = count[t] && hk_eltype_has_kernel((hk_eltype)t) ? hk_elref_get((hk_eltype)t) : NULL;
        if (r) rec += count[t] * (8.0 * r->nqp * (2 + r->nnodes * d) + 8);
    }
    if (rec > HK_FEM_CHUNK_MAX) rec = HK_FEM_CHUNK_MAX;
    /* with its adjacency and the rows' order (HOOKE_FEM_NUMERIC=sorted, the default) */
    const double mesh = 24 * nn + 13 * ne + 4 * tot + 8 * nn + 9 * tot + 8 * nn;
    const double K = 8 * (nn + 1) + nnz / (d * d) * 4 + nnz * 8;
    double phase = 4 * tot + 8 * nn; /* the pattern's sorted cells, row pointers */
    if (rec + 8 * ndof > phase) phase = rec + 8 * ndof;
    if (25 * ndof > phase) phase = 25 * ndof; /* the elimination's vectors */
    return mesh + K + phase;
}

double hk_postproc_on_bytes(const hk_mesh *m)
{
    const double nn = (double)m->nnodes, ne = (double)m->cells.n;
    /* the session's mesh with the assembly's adjacency (more than the recovery reads), u and
     * the fields (u, strain, stress, forces, counts, von Mises, principal: 23 a node; the
     * cells' stress and von Mises: 7 a cell), and the chunk at its largest, a quarter of what
     * is free (fem_cuda.cu's dv_chunk_bytes) */
    return hk_assemble_on_bytes(m, 0) + 8 * (23 * nn + 7 * ne) + 4.0 * (double)HK_FEM_CHUNK_MAX;
}
