/* hk_mesh_load: .msh (2.2 / 4.1) read as is, .geo/.step/.stp/.brep/.iges meshed at run time,
 * both through the Gmsh C API (only calls that exist with the same signature in Gmsh 4.8).
 * Physical groups of the model dimension become regions, those of lower dimension boundary
 * groups (docs/elements.md). Gmsh keeps global state: hk_mesh_load is not thread-safe. */
#include <ctype.h>
#include <errno.h>
#include <omp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mesh_impl.h"

#ifdef HOOKE_HAVE_GMSH
#include <gmshc.h>
#endif

/* 0: a mesh file read as is, 1: geometry meshed at run time, -1: unknown */
static int file_kind(const char *path)
{
    static const char *const mesh_ext[] = {".msh"};
    static const char *const geo_ext[] = {".geo", ".step", ".stp", ".brep", ".iges", ".igs"};
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    char ext[16];
    size_t i = 0;
    if (!dot || (slash && slash > dot)) return -1;
    for (; dot[i] && i < sizeof ext - 1; i++)
        ext[i] = (char)tolower((unsigned char)dot[i]);
    ext[i] = 0;
    for (size_t k = 0; k < sizeof mesh_ext / sizeof *mesh_ext; k++)
        if (!strcmp(ext, mesh_ext[k])) return 0;
    for (size_t k = 0; k < sizeof geo_ext / sizeof *geo_ext; k++)
        if (!strcmp(ext, geo_ext[k])) return 1;
    return -1;
}

/* The phases and the refinement of the last hk_mesh_load. */
static hk_mesh_load_times load_times;
static hk_mesh_refine_stats load_refine;

hk_mesh_load_times hk_mesh_load_phase_times(void)
{
    return load_times;
}

hk_mesh_refine_stats hk_mesh_load_refine_stats(void)
{
    return load_refine;
}

#ifdef HOOKE_HAVE_GMSH

/* Gmsh 4.8 dereferences NULL on some malformed files (a .msh whose node count is '3e9'). A
 * crash inside Gmsh cannot be recovered from, but it can end with one sentence instead of a
 * bare "Segmentation fault": these handlers are installed only while Gmsh runs. */
static char crash_msg[768];
static struct sigaction crash_old[2];
static const int crash_sigs[2] = {SIGSEGV, SIGBUS};

static void gmsh_crashed(int sig)
{
    (void)sig;
    ssize_t w = write(STDERR_FILENO, crash_msg, strlen(crash_msg));
    (void)w;
    _exit(1);
}

/* Gmsh writes its messages (Info, Warning, its progress) to stdout, where they would mix with
 * a command's output (hooke run --json --verbose must print JSON alone): while Gmsh runs, the
 * process's stdout is its stderr. */
static int saved_stdout = -1;

static void gmsh_output_to_stderr(void)
{
    fflush(stdout);
    saved_stdout = dup(STDOUT_FILENO);
    if (saved_stdout >= 0) dup2(STDERR_FILENO, STDOUT_FILENO);
}

static void gmsh_output_restore(void)
{
    if (saved_stdout < 0) return;
    fflush(stdout);
    dup2(saved_stdout, STDOUT_FILENO);
    close(saved_stdout);
    saved_stdout = -1;
}

static void crash_guard_on(const char *path)
{
    gmsh_output_to_stderr();
    snprintf(crash_msg, sizeof crash_msg,
             "hooke: Gmsh crashed reading '%s'; the file is malformed (open it in Gmsh to see "
             "where, or export it again)\n",
             path);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = gmsh_crashed;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 2; i++)
        sigaction(crash_sigs[i], &sa, &crash_old[i]);
}

static void crash_guard_off(void)
{
    for (int i = 0; i < 2; i++)
        sigaction(crash_sigs[i], &crash_old[i], NULL);
    gmsh_output_restore();
}

/* Gmsh's last error message ("" if none). */
static const char *gmsh_last_error(void)
{
    static char buf[512];
    char *e = NULL;
    int gerr = 0;
    buf[0] = 0;
    gmshLoggerGetLastError(&e, &gerr);
    if (!gerr && e) snprintf(buf, sizeof buf, "%s", e);
    if (e) gmshFree(e);
    /* Gmsh prefixes messages with "Error   : " in some versions */
    if (!strncmp(buf, "Error", 5)) {
        char *p = buf + 5;
        while (*p == ' ' || *p == ':')
            p++;
        memmove(buf, p, strlen(p) + 1);
    }
    return buf;
}

#define GMSH_TRY(code, what, call)                                                                 \
    do {                                                                                           \
        int gerr_ = 0;                                                                             \
        call;                                                                                      \
        if (gerr_) {                                                                               \
            const char *le_ = gmsh_last_error();                                                   \
            ierr = hk_error_set((code), __FILE__, __LINE__, "Gmsh could not %s '%s'%s%s%s", what,  \
                                path, *le_ ? ": " : "", le_,                                       \
                                *le_ ? "" : " (run gmsh on it to see why)");                       \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

typedef struct {
    int dim, tag;
    char name[128];
} phys;

/* Node tag -> index in Gmsh's node array: dense table or sorted search. */
typedef struct {
    size_t ntags, maxtag;
    int32_t *dense;      /* maxtag + 1, or NULL */
    size_t *sorted_tags; /* sorted copy, when dense is NULL */
    int32_t *sorted_idx;
} tagmap;

static size_t *sort_keys;
static int cmp_by_key(const void *a, const void *b)
{
    size_t x = sort_keys[*(const int32_t *)a], y = sort_keys[*(const int32_t *)b];
    return (x > y) - (x < y);
}

static int tagmap_build(tagmap *tm, const size_t *tags, size_t n)
{
    memset(tm, 0, sizeof *tm);
    tm->ntags = n;
    for (size_t i = 0; i < n; i++)
        if (tags[i] > tm->maxtag) tm->maxtag = tags[i];
    if (tm->maxtag <= 4 * n + 1024) {
        HK_CALL(hk_malloc((tm->maxtag + 1) * sizeof *tm->dense, &tm->dense));
        for (size_t i = 0; i <= tm->maxtag; i++)
            tm->dense[i] = -1;
        for (size_t i = 0; i < n; i++)
            tm->dense[tags[i]] = (int32_t)i;
        return 0;
    }
    HK_CALL(hk_malloc(n * sizeof *tm->sorted_idx, &tm->sorted_idx));
    HK_CALL(hk_malloc(n * sizeof *tm->sorted_tags, &tm->sorted_tags));
    for (size_t i = 0; i < n; i++)
        tm->sorted_idx[i] = (int32_t)i;
    sort_keys = (size_t *)tags;
    qsort(tm->sorted_idx, n, sizeof *tm->sorted_idx, cmp_by_key);
    sort_keys = NULL;
    for (size_t i = 0; i < n; i++)
        tm->sorted_tags[i] = tags[tm->sorted_idx[i]];
    return 0;
}

static int32_t tagmap_find(const tagmap *tm, size_t tag)
{
    if (tm->dense) return tag <= tm->maxtag ? tm->dense[tag] : -1;
    size_t lo = 0, hi = tm->ntags;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (tm->sorted_tags[mid] < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < tm->ntags && tm->sorted_tags[lo] == tag ? tm->sorted_idx[lo] : -1;
}

static void tagmap_free(tagmap *tm)
{
    free(tm->dense);
    free(tm->sorted_tags);
    free(tm->sorted_idx);
}

static const char *type_name_gmsh(int g, char *buf, size_t n)
{
    int t = hk_eltype_from_gmsh(g);
    if (t >= 0)
        snprintf(buf, n, "%s", hk_eltype_get((hk_eltype)t)->name);
    else
        snprintf(buf, n, "of Gmsh type %d", g);
    return buf;
}

/* Append the elements of dimension dim on entity tag to b (nodes as Gmsh node indices).
 * cells: only types with a kernel are accepted. what/name label errors. */
static int read_entity(const char *path, int dim, int tag, int cells, const char *what,
                       const char *name, const tagmap *tm, hk_elems_builder *b)
{
    int ierr = 0;
    int *types = NULL;
    size_t ntypes = 0, *etags = NULL, netags = 0, *ntags = NULL, nntags = 0;
    /* one bulk call per element type (Gmsh fills preallocated arrays: faster than
     * getElements, which grows one vector per type) */
    GMSH_TRY(HK_ERR_PARSE, "read the element types of",
             gmshModelMeshGetElementTypes(&types, &ntypes, dim, tag, &gerr_));
    for (size_t k = 0; k < ntypes; k++) {
        int t = hk_eltype_from_gmsh(types[k]);
        char tn[64];
        int ok = t >= 0 && hk_eltype_get((hk_eltype)t)->dim == dim &&
                 (!cells || hk_eltype_has_kernel((hk_eltype)t));
        HK_TRY_CHECK(ok, HK_ERR_UNSUPPORTED,
                     "%s: element type %s (Gmsh type %d) in %s '%s' is not supported; Hooke "
                     "has %s",
                     path, type_name_gmsh(types[k], tn, sizeof tn), types[k], what, name,
                     cells ? "tri3/6, quad4/8/9 cells in 2D and tet4/10, hex8/20/27, wedge6/15/18, "
                             "pyr5/13/14 in 3D"
                           : "point, line2/3, tri3/6 and quad4/8/9 boundary elements");
        GMSH_TRY(HK_ERR_PARSE, "read the elements of",
                 gmshModelMeshGetElementsByType(types[k], &etags, &netags, &ntags, &nntags, tag, 0,
                                                1, &gerr_));
        const int nn = hk_eltype_get((hk_eltype)t)->nnodes;
        const size_t ne = netags;
        HK_TRY_CHECK(nntags == ne * (size_t)nn, HK_ERR_PARSE,
                     "%s: Gmsh returned %zu node tags for %zu %s elements", path, nntags, ne,
                     hk_eltype_get((hk_eltype)t)->name);
        /* the whole block at once, its node tags mapped in parallel */
        HK_TRY(hk_elems_reserve(b, (int64_t)ne, (int64_t)(ne * (size_t)nn)));
        hk_elems *o = &b->e;
        const int64_t e0 = o->n, n0 = o->ptr[o->n];
        int64_t bad = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : bad)
        for (size_t e = 0; e < ne; e++) {
            const int64_t w = n0 + (int64_t)(e * (size_t)nn);
            o->type[e0 + (int64_t)e] = (uint8_t)t;
            o->tag[e0 + (int64_t)e] = (int64_t)etags[e];
            o->ptr[e0 + (int64_t)e + 1] = w + nn;
            for (int a = 0; a < nn; a++) {
                const int32_t v = tagmap_find(tm, ntags[e * nn + a]);
                o->nodes[w + a] = v;
                if (v < 0 && w - n0 + a < bad) bad = w - n0 + a;
            }
        }
        HK_TRY_CHECK(bad == INT64_MAX, HK_ERR_PARSE,
                     "%s: element %zu uses node %zu, which the file does not define", path,
                     etags[bad / nn], ntags[bad]);
        o->n += (int64_t)ne;
        gmshFree(etags);
        gmshFree(ntags);
        etags = ntags = NULL;
    }
fail:
    gmshFree(etags);
    gmshFree(ntags);
    gmshFree(types);
    return ierr;
}

static int set_option(const char *path, const char *name, const char *alt, double v)
{
    int gerr = 0;
    gmshOptionSetNumber(name, v, &gerr);
    if (gerr && alt) gmshOptionSetNumber(alt, v, &gerr);
    HK_CHECK(!gerr, HK_ERR_INTERNAL, "Gmsh rejected option %s = %g while loading '%s': %s", name, v,
             path, gmsh_last_error());
    return 0;
}

/* What hk_mesh_load changed from the options (hk_mesh_load_notes). */
static char load_notes[1024];

static void add_note(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static void add_note(const char *fmt, ...)
{
    size_t n = strlen(load_notes);
    if (n + 3 >= sizeof load_notes) return;
    if (n) n += (size_t)snprintf(load_notes + n, sizeof load_notes - n, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(load_notes + n, sizeof load_notes - n, fmt, ap);
    va_end(ap);
}

/* An option that only speeds meshing up: when this Gmsh lacks it, say so and go on. */
static int set_option_soft(const char *name, double v, const char *without)
{
    int gerr = 0;
    gmshOptionSetNumber(name, v, &gerr);
    if (gerr) add_note("Gmsh " GMSH_API_VERSION " has no option %s = %g; %s", name, v, without);
    return !gerr;
}

static const char *algo2d_name(int a)
{
    static const char *const n[] = {"?",        "meshadapt", "automatic",  "initial",
                                    "?",        "delaunay",  "frontal",    "bamg",
                                    "frontal_quads", "packing", "?", "quasi_structured"};
    return a >= 0 && a < (int)(sizeof n / sizeof *n) ? n[a] : "?";
}

/* Threads and algorithms (docs/geometry.md, "Reproducible meshes" and "Meshing speed"): by
 * default one thread and Delaunay for volumes, which give the same mesh every time (Gmsh's
 * threads mesh curves and surfaces in a varying order, and HXT varies even on one thread);
 * HXT and more threads when asked. Surfaces with the file's or Gmsh's default algorithm
 * (Frontal-Delaunay). */
static void set_meshing_speed(const hk_mesh_options *opt, int gdim, int *algo3d)
{
    int nt = opt->threads == HK_MESH_THREADS_ALL ? omp_get_num_procs()
             : opt->threads > 0                  ? opt->threads
                                                 : 1;
    if (nt < 1) nt = 1;
    if (set_option_soft("General.NumThreads", nt, "meshing on one thread")) {
        static const char *const per_dim[] = {"Mesh.MaxNumThreads1D", "Mesh.MaxNumThreads2D",
                                              "Mesh.MaxNumThreads3D"};
        for (int d = 0; d < 3; d++)
            set_option_soft(per_dim[d], nt, "General.NumThreads applies");
    }
    if (opt->algorithm2d && !set_option_soft("Mesh.Algorithm", opt->algorithm2d,
                                              "Gmsh's default surface mesher"))
        add_note("surface algorithm %s not used", algo2d_name(opt->algorithm2d));
    *algo3d = opt->algorithm3d ? opt->algorithm3d : 1;
    if (gdim == 3 && !set_option_soft("Mesh.Algorithm3D", *algo3d, "Gmsh's default Delaunay"))
        *algo3d = 1;
}

/* 1 when the surface mesh has quadrilaterals (recombined or transfinite surfaces). */
static int surface_quads(void)
{
    int *types = NULL, gerr = 0, quads = 0;
    size_t n = 0;
    gmshModelMeshGetElementTypes(&types, &n, 2, -1, &gerr);
    for (size_t i = 0; !gerr && i < n; i++)
        quads |= types[i] == 3 || types[i] == 10 || types[i] == 16; /* quad4, quad9, quad8 */
    gmshFree(types);
    return quads;
}

/* Closest points on a model entity, one Gmsh call for all of them. */
static int project_gmsh(void *ctx, const hk_elev_entity *e, double *xyz, int64_t n)
{
    double *cc = NULL, *pc = NULL;
    size_t ncc = 0, npc = 0;
    int gerr = 0;
    (void)ctx;
    gmshModelGetClosestPoint(e->dim, e->tag, xyz, 3 * (size_t)n, &cc, &ncc, &pc, &npc, &gerr);
    int ok = !gerr && ncc == 3 * (size_t)n;
    if (ok) memcpy(xyz, cc, 3 * (size_t)n * sizeof *xyz);
    gmshFree(cc);
    gmshFree(pc);
    return ok ? 0 : -1;
}

/* The model's curves and surfaces (in 2D: its curves) with their linear meshes in m's
 * numbering, onto which refinement and the second-order nodes go. tm and newid map Gmsh's
 * node tags to m's nodes. */
static int gmsh_geometry(const char *path, int gdim, const tagmap *tm, const int32_t *newid,
                         hk_elev_geom *g)
{
    int ierr = 0, *ent = NULL;
    size_t nent = 0;
    char *type = NULL;
    memset(g, 0, sizeof *g);
    g->project = project_gmsh;
    for (int dim = 2; dim >= 1; dim--) {
        if (dim >= gdim) continue;
        GMSH_TRY(HK_ERR_PARSE, "list the entities of",
                 gmshModelGetEntities(&ent, &nent, dim, &gerr_));
        hk_elev_entity *ne = realloc(g->ent, (size_t)(g->n + (int)nent / 2 + 1) * sizeof *ne);
        HK_TRY_CHECK(ne, HK_ERR_MEMORY, "out of host memory reading '%s'", path);
        g->ent = ne;
        for (size_t k = 0; k < nent / 2; k++) {
            hk_elev_entity *e = &g->ent[g->n];
            hk_elems_builder b;
            memset(e, 0, sizeof *e);
            memset(&b, 0, sizeof b);
            e->dim = dim, e->tag = ent[2 * k + 1];
            g->n++;
            GMSH_TRY(HK_ERR_PARSE, "find the geometry of an entity of",
                     gmshModelGetType(dim, e->tag, &type, &gerr_));
            e->flat = !strcmp(type, dim == 1 ? "Line" : "Plane");
            gmshFree(type);
            type = NULL;
            char name[32];
            snprintf(name, sizeof name, "%d", e->tag);
            ierr = read_entity(path, dim, e->tag, 0, dim == 1 ? "curve" : "surface", name, tm, &b);
            e->elems = b.e;
            if (ierr) goto fail;
            for (int64_t i = 0; e->elems.n && i < e->elems.ptr[e->elems.n]; i++)
                e->elems.nodes[i] = newid[e->elems.nodes[i]];
        }
        gmshFree(ent);
        ent = NULL;
    }
fail:
    gmshFree(ent);
    gmshFree(type);
    return ierr;
}

static void geometry_free(hk_elev_geom *g)
{
    for (int k = 0; k < g->n; k++)
        hk_elems_free(&g->ent[k].elems);
    free(g->ent);
    memset(g, 0, sizeof *g);
}

/* Refinement and the second-order nodes of the linear mesh m, made by Hooke (hk_mesh_refine,
 * hk_mesh_elevate) with the new nodes on the model's curves and surfaces moved onto them (g,
 * may be NULL: straight; straight: the second-order nodes stay straight, as the file's
 * Mesh.SecondOrderLinear asks). */
static int refine_elevate(int levels, int order2, int incomplete, int straight,
                          const hk_elev_geom *g, hk_mesh *m)
{
    hk_elev_stats st;
    if (levels) {
        double t = omp_get_wtime();
        HK_CALL(hk_mesh_localize(m, g));
        HK_CALL(hk_mesh_refine_geom(m, levels, g, &load_refine));
        load_times.refine = omp_get_wtime() - t;
        if (load_refine.straight)
            add_note("%lld refined nodes on curved geometry kept straight: on it they would "
                     "invert a cell or Gmsh found no closest point near them",
                     (long long)load_refine.straight);
    }
    if (!order2) return 0;
    double t = omp_get_wtime();
    HK_CALL(hk_mesh_elevate(m, incomplete, straight ? NULL : g, &st));
    load_times.order = omp_get_wtime() - t;
    if (st.straight)
        add_note("%lld second-order nodes kept straight: on the curved geometry they would "
                 "invert a cell",
                 (long long)st.straight);
    if (st.too_far || st.failed)
        add_note("%lld second-order nodes on curved geometry left straight: Gmsh found no "
                 "closest point near them",
                 (long long)(st.too_far + st.failed));
    return 0;
}

/* The volume (3D) or area (2D) of the open model's entities of dimension dim: OpenCASCADE's
 * mass, or the bounding box where the entity is not OpenCASCADE's (the built-in kernel). */
static int model_measure(const char *path, int dim, double *measure)
{
    int ierr = 0, *ent = NULL;
    size_t nent = 0;
    *measure = 0;
    GMSH_TRY(HK_ERR_PARSE, "list the entities of", gmshModelGetEntities(&ent, &nent, dim, &gerr_));
    for (size_t k = 0; k < nent / 2; k++) {
        double v = 0, b[6];
        int gerr = 0;
        gmshModelOccGetMass(dim, ent[2 * k + 1], &v, &gerr);
        if (gerr || !(v > 0)) {
            gerr = 0;
            gmshModelGetBoundingBox(dim, ent[2 * k + 1], b, b + 1, b + 2, b + 3, b + 4, b + 5,
                                    &gerr);
            v = gerr ? 0 : (b[3] - b[0]) * (b[4] - b[1]) * (dim == 3 ? b[5] - b[2] : 1);
        }
        if (v > 0 && isfinite(v)) *measure += v;
    }
fail:
    gmshFree(ent);
    return ierr;
}

/* The length of the model's shortest curve (0 when it has none): OpenCASCADE's length, or the
 * diagonal of the curve's bounding box where the curve is not OpenCASCADE's (the built-in
 * kernel). Degenerate curves (a cone's apex) are skipped. */
static double shortest_curve(void)
{
    int *ent = NULL, gerr = 0;
    size_t nent = 0;
    double shortest = 0;
    gmshModelGetEntities(&ent, &nent, 1, &gerr);
    for (size_t k = 0; !gerr && k < nent / 2; k++) {
        double len = 0, b[6];
        int e = 0;
        gmshModelOccGetMass(1, ent[2 * k + 1], &len, &e);
        if (e || !(len > 0)) {
            e = 0;
            gmshModelGetBoundingBox(1, ent[2 * k + 1], b, b + 1, b + 2, b + 3, b + 4, b + 5, &e);
            len = e ? 0
                    : sqrt((b[3] - b[0]) * (b[3] - b[0]) + (b[4] - b[1]) * (b[4] - b[1]) +
                           (b[5] - b[2]) * (b[5] - b[2]));
        }
        if (len > 1e-12 && isfinite(len) && (!shortest || len < shortest)) shortest = len;
    }
    gmshFree(ent);
    return shortest;
}

/* geometry.refine: auto (docs/geometry.md, "Refinement"). From the estimated cell count of
 * the mesh Gmsh would make at the size (the memory guard's lower bound: about 3.5 tetrahedra
 * per cube of the size, 1.6 triangles per square; a size field's finer parts add to it):
 * 0 up to HK_AUTO_LARGE cells; above, the fewest levels that bring Gmsh's coarse mesh to at
 * most HK_AUTO_LARGE, then more while it has over HK_AUTO_COARSE cells and its size stays
 * within the model's shortest curve (finer features than that would need Gmsh's own sizes).
 * Gmsh's volume mesher costs about 10 us a cell on one thread, refinement a small fraction
 * of that on every core: the coarser Gmsh's share, the faster. */
enum { HK_AUTO_LARGE = 100000, HK_AUTO_COARSE = 20000 };

static int auto_levels(const char *path, int gdim, double size)
{
    double measure = 0;
    if (!(size > 0) || model_measure(path, gdim, &measure) || !(measure > 0)) {
        hk_error_clear();
        return 0;
    }
    const double grow = gdim == 3 ? 8 : 4;
    double cells = gdim == 3 ? 3.5 * measure / (size * size * size) : 1.6 * measure / (size * size);
    int n = 0;
    for (; n < HK_REFINE_MAX && cells > HK_AUTO_LARGE; n++)
        cells /= grow;
    if (!n) return 0;
    const double feature = shortest_curve();
    for (; n < HK_REFINE_MAX && cells > HK_AUTO_COARSE; n++) {
        if (!(size * (double)(1 << (n + 1)) <= feature)) break;
        cells /= grow;
    }
    if (n < HK_REFINE_MAX && cells > HK_AUTO_COARSE)
        add_note("refine auto: %d level%s, not %d: Gmsh's size %g would exceed the shortest "
                 "model curve (%g)",
                 n, n == 1 ? "" : "s", n + 1, size * (double)(1 << (n + 1)), feature);
    return n;
}

static int load_gmsh(const char *path, int kind, const hk_mesh_options *opt, hk_mesh_region *reg,
                     hk_mesh *m)
{
    int ierr = 0, initialized = 0, threads = omp_get_max_threads();
    int *pg = NULL, *ent = NULL;
    size_t npg = 0, nent = 0, *ntag = NULL, nntag = 0, ncoord = 0, npar = 0;
    double *coord = NULL, *par = NULL;
    phys *ph = NULL;
    tagmap tm;
    memset(&tm, 0, sizeof tm);
    hk_elems_builder cells, *bnd = NULL;
    memset(&cells, 0, sizeof cells);
    int32_t *creg = NULL, *newid = NULL;
    int64_t ncreg = 0;
    int nbnd = 0;
    char *pname = NULL;
    int *claimed = NULL; /* entity tags of the model dimension already in a region */
    size_t nclaimed = 0;
    int elevate = 0, incomplete = 0, straight = 0; /* second-order nodes made by Hooke */
    int levels = opt->refine > 0 ? opt->refine : 0; /* refinements by Hooke */
    hk_elev_geom geo;
    memset(&geo, 0, sizeof geo);
    memset(&load_refine, 0, sizeof load_refine);
    double t_open = omp_get_wtime(), t_read = 0;

#if GMSH_API_VERSION_MAJOR > 4 || (GMSH_API_VERSION_MAJOR == 4 && GMSH_API_VERSION_MINOR >= 9)
    GMSH_TRY(HK_ERR_INTERNAL, "start to read", gmshInitialize(0, NULL, 0, 0, &gerr_));
#else
    GMSH_TRY(HK_ERR_INTERNAL, "start to read", gmshInitialize(0, NULL, 0, &gerr_));
#endif
    initialized = 1;
    crash_guard_on(path);
    HK_TRY(set_option(path, "General.Terminal", NULL, opt->verbose ? 1 : 0));
    HK_TRY(set_option(path, "General.Verbosity", NULL, opt->verbose ? 5 : 1));
    GMSH_TRY(HK_ERR_PARSE, "read", gmshOpen(path, &gerr_));

    int gdim = 0;
    GMSH_TRY(HK_ERR_PARSE, "find the dimension of", gdim = gmshModelGetDimension(&gerr_));
    HK_TRY_CHECK(gdim == 2 || gdim == 3, HK_ERR_MODEL,
                 "%s: the model has dimension %d; Hooke needs a 2D (surface in the xy plane) "
                 "or 3D (volume) model",
                 path, gdim);

    if (kind == 1) {
        /* mesh the geometry with the options, overriding the file's own settings */
        if (opt->size > 0)
            HK_TRY(set_option(path, "Mesh.MeshSizeMax", "Mesh.CharacteristicLengthMax", opt->size));
        /* the order is raised by its own call below (timed apart), not by Mesh.ElementOrder,
         * which would make every gmshModelMeshGenerate raise it too */
        int order = opt->order;
        if (!order) { /* the file's own Mesh.ElementOrder */
            double v = 1;
            int gerr = 0;
            gmshOptionGetNumber("Mesh.ElementOrder", &v, &gerr);
            order = gerr || v < 1 ? 1 : (int)v;
        }
        HK_TRY(set_option(path, "Mesh.ElementOrder", NULL, 1));
        if (opt->order)
            HK_TRY(set_option(path, "Mesh.SecondOrderIncomplete", NULL, opt->incomplete ? 1 : 0));
        {
            double inc = 0, lin = 0;
            int gerr = 0;
            gmshOptionGetNumber("Mesh.SecondOrderIncomplete", &inc, &gerr);
            gmshOptionGetNumber("Mesh.SecondOrderLinear", &lin, &gerr);
            incomplete = inc != 0, straight = lin != 0;
        }
        elevate = order == 2 && opt->order_by != HK_ORDER_BY_GMSH;
        /* refinement: Gmsh meshes with every size (the maximum, the fields', the points')
         * 2^levels times larger, Hooke splits the cells levels times */
        double factor = 1;
        {
            int gerr = 0;
            gmshOptionGetNumber("Mesh.MeshSizeFactor", &factor, &gerr);
            if (gerr || !(factor > 0)) factor = 1;
        }
        if (opt->refine == HK_REFINE_AUTO && !(order == 2 && !elevate)) {
            double h = opt->size;
            if (!(h > 0)) {
                int gerr = 0;
                gmshOptionGetNumber("Mesh.MeshSizeMax", &h, &gerr);
                if (gerr || !(h < 1e21)) h = 0; /* Gmsh's default: the model's own size */
            }
            levels = auto_levels(path, gdim, h * factor);
        }
        HK_TRY_CHECK(!levels || order < 2 || elevate, HK_ERR_OPTION,
                     "%s: geometry.refine cannot be used with geometry.order_by: gmsh (Gmsh "
                     "raises the order before Hooke could refine); leave order_by at hooke",
                     path);
        if (levels)
            HK_TRY(set_option(path, "Mesh.MeshSizeFactor", "Mesh.CharacteristicLengthFactor",
                              factor * (double)(1 << levels)));
        if (opt->quad) {
            /* 2D: recombine triangles into quads (a few triangles may stay: mixed mesh);
             * 3D: split every tetrahedron into 4 hexahedra (Gmsh's subdivision), since
             * recombining volumes leaves prisms and pyramids. (Mesh.Algorithm 8 crashes
             * Gmsh 4.8 with RecombineAll: left at the default.) */
            if (gdim == 2)
                HK_TRY(set_option(path, "Mesh.RecombineAll", NULL, 1));
            else
                HK_TRY(set_option(path, "Mesh.SubdivisionAlgorithm", NULL, 2));
        }
        int algo3d = 1;
        set_meshing_speed(opt, gdim, &algo3d);
        int gerr = 0;
        double t = omp_get_wtime();
        load_times.open = t - t_open;
        if (gdim == 3) {
            /* curves and surfaces first, then the volume: the same mesh as one call */
            gmshModelMeshGenerate(2, &gerr);
            GMSH_TRY(HK_ERR_MODEL, "mesh the surfaces of", gerr_ = gerr);
            load_times.surfaces = omp_get_wtime() - t;
            t = omp_get_wtime();
        }
        if (gdim == 3 && algo3d == 10 && surface_quads()) {
            /* quadrilateral faces need pyramids, which Gmsh 4.8's HXT does not make (it fails,
             * leaves the model unmeshed or crashes Gmsh): the volume with Delaunay */
            add_note("the surface mesh has quadrilaterals: volumes meshed with Delaunay, as HXT "
                     "does not make the pyramids they may need");
            set_option_soft("Mesh.Algorithm3D", 1, "");
            algo3d = 1;
        }
        gmshModelMeshGenerate(gdim, &gerr);
        if (gerr && gdim == 3 && algo3d == 10) {
            /* a Gmsh built without HXT, or HXT failing on this geometry: Delaunay */
            add_note("HXT could not mesh the volume (%s); meshed with Delaunay instead",
                     gmsh_last_error());
            gmshModelMeshClear(NULL, 0, &gerr);
            gerr = 0;
            set_option_soft("Mesh.Algorithm3D", 1, "");
            gmshModelMeshGenerate(gdim, &gerr);
        }
        GMSH_TRY(HK_ERR_MODEL, "mesh", gerr_ = gerr);
        if (gdim == 3)
            load_times.volume = omp_get_wtime() - t;
        else
            load_times.surfaces = omp_get_wtime() - t;
        t = omp_get_wtime();
        if (order > 1 && !elevate)
            GMSH_TRY(HK_ERR_MODEL, "raise the element order of",
                     gmshModelMeshSetOrder(order, &gerr_));
        load_times.order = omp_get_wtime() - t;
    }
    if (kind == 0) load_times.open = omp_get_wtime() - t_open;
    t_read = omp_get_wtime();

    /* nodes */
    GMSH_TRY(
        HK_ERR_PARSE, "read the nodes of",
        gmshModelMeshGetNodes(&ntag, &nntag, &coord, &ncoord, &par, &npar, -1, -1, 0, 0, &gerr_));
    HK_TRY_CHECK(nntag > 0 || kind == 1, HK_ERR_MODEL,
                 "%s has no mesh nodes; mesh it first (gmsh -%d) or give the geometry file", path,
                 gdim);
    HK_TRY_CHECK(nntag > 0, HK_ERR_MODEL,
                 "Gmsh made no mesh of %s%s%s%s; try another geometry.size or "
                 "geometry.algorithm3d, or mesh it in Gmsh to see why",
                 path, *load_notes ? " (" : "", load_notes, *load_notes ? ")" : "");
    HK_TRY_CHECK(nntag < INT32_MAX, HK_ERR_UNSUPPORTED, "%s has %zu nodes; Hooke takes < 2^31",
                 path, nntag);
    HK_TRY(tagmap_build(&tm, ntag, nntag));

    /* physical groups */
    GMSH_TRY(HK_ERR_PARSE, "read the physical groups of",
             gmshModelGetPhysicalGroups(&pg, &npg, -1, &gerr_));
    npg /= 2;
    HK_TRY(hk_calloc(npg ? npg : 1, sizeof *ph, &ph));
    int nreg_ph = 0;
    for (size_t i = 0; i < npg; i++) {
        ph[i].dim = pg[2 * i], ph[i].tag = pg[2 * i + 1];
        GMSH_TRY(HK_ERR_PARSE, "read a physical name of",
                 gmshModelGetPhysicalName(ph[i].dim, ph[i].tag, &pname, &gerr_));
        if (pname && *pname)
            snprintf(ph[i].name, sizeof ph[i].name, "%s", pname);
        else
            snprintf(ph[i].name, sizeof ph[i].name, "%d", ph[i].tag); /* unnamed: its tag */
        gmshFree(pname);
        pname = NULL;
        if (ph[i].dim == gdim) nreg_ph++;
        for (size_t j = 0; j < i; j++)
            HK_TRY_CHECK(strcmp(ph[i].name, ph[j].name) ||
                             (ph[i].dim == gdim) != (ph[j].dim == gdim),
                         HK_ERR_MODEL,
                         "%s: the physical name '%s' is used by two groups (dimension %d tag %d "
                         "and dimension %d tag %d); give each group its own name",
                         path, ph[i].name, ph[j].dim, ph[j].tag, ph[i].dim, ph[i].tag);
    }

    /* regions and cells */
    m->nregions = nreg_ph ? nreg_ph : 1;
    HK_TRY(hk_calloc((size_t)m->nregions, sizeof *m->regions, &m->regions));
    if (!nreg_ph) {
        snprintf(m->regions[0].name, sizeof m->regions[0].name, "domain");
        m->regions[0].dim = gdim;
        GMSH_TRY(HK_ERR_PARSE, "list the entities of",
                 gmshModelGetEntities(&ent, &nent, gdim, &gerr_));
        for (size_t k = 0; k < nent / 2; k++)
            HK_TRY(read_entity(path, gdim, ent[2 * k + 1], 1, "region", "domain", &tm, &cells));
        gmshFree(ent);
        ent = NULL;
    }
    int r = 0;
    for (size_t i = 0; i < npg && nreg_ph; i++) {
        if (ph[i].dim != gdim) continue;
        hk_group *g = &m->regions[r];
        snprintf(g->name, sizeof g->name, "%s", ph[i].name);
        g->dim = gdim, g->tag = ph[i].tag;
        GMSH_TRY(HK_ERR_PARSE, "read the entities of a physical group of",
                 gmshModelGetEntitiesForPhysicalGroup(gdim, ph[i].tag, &ent, &nent, &gerr_));
        for (size_t k = 0; k < nent; k++) {
            for (size_t j = 0; j < nclaimed; j++)
                HK_TRY_CHECK(claimed[2 * j] != ent[k], HK_ERR_MODEL,
                             "%s: %s %d belongs to two physical regions, '%s' and '%s'; put each "
                             "%s in one physical group",
                             path, gdim == 3 ? "volume" : "surface", ent[k],
                             m->regions[claimed[2 * j + 1]].name, g->name,
                             gdim == 3 ? "volume" : "surface");
            int *cl = realloc(claimed, 2 * (nclaimed + 1) * sizeof *claimed);
            HK_TRY_CHECK(cl, HK_ERR_MEMORY, "out of host memory reading '%s'", path);
            claimed = cl;
            claimed[2 * nclaimed] = ent[k], claimed[2 * nclaimed + 1] = r;
            nclaimed++;
            HK_TRY(read_entity(path, gdim, ent[k], 1, "region", g->name, &tm, &cells));
        }
        gmshFree(ent);
        ent = NULL;
        /* region index of the new cells */
        if (cells.e.n > ncreg) {
            int32_t *q = realloc(creg, (size_t)cells.e.n * sizeof *creg);
            HK_TRY_CHECK(q, HK_ERR_MEMORY, "out of host memory reading '%s'", path);
            creg = q;
            for (; ncreg < cells.e.n; ncreg++)
                creg[ncreg] = r;
        }
        r++;
    }
    HK_TRY_CHECK(cells.e.n > 0, HK_ERR_MODEL,
                 "%s has no %dD elements%s; mesh it (gmsh -%d) or check its physical groups", path,
                 gdim, nreg_ph ? " in its physical regions" : "", gdim);
    if (!creg) HK_TRY(hk_calloc((size_t)cells.e.n, sizeof *creg, &creg));

    /* boundary groups: every physical group of lower dimension */
    nbnd = (int)npg - nreg_ph;
    HK_TRY(hk_calloc((size_t)(nbnd ? nbnd : 1), sizeof *bnd, &bnd));
    int b = 0;
    for (size_t i = 0; i < npg; i++) {
        if (ph[i].dim == gdim) continue;
        GMSH_TRY(HK_ERR_PARSE, "read the entities of a physical group of",
                 gmshModelGetEntitiesForPhysicalGroup(ph[i].dim, ph[i].tag, &ent, &nent, &gerr_));
        for (size_t k = 0; k < nent; k++)
            HK_TRY(read_entity(path, ph[i].dim, ent[k], 0, "boundary group", ph[i].name, &tm,
                               &bnd[b]));
        gmshFree(ent);
        ent = NULL;
        b++;
    }

    /* keep the nodes of the cells only, numbered in Gmsh's node order (meshed geometry) or in
     * the order of their tags (a mesh file: the file's own numbering, so that a mesh written
     * by hk_mesh_write_msh comes back numbered as it was) */
    HK_TRY(hk_malloc(nntag * sizeof *newid, &newid));
    for (size_t i = 0; i < nntag; i++)
        newid[i] = -1;
    for (int64_t k = 0; k < cells.e.ptr[cells.e.n]; k++)
        newid[cells.e.nodes[k]] = 0;
    int64_t nn = 0;
    if (kind == 0 && tm.dense) {
        for (size_t t = 0; t <= tm.maxtag; t++)
            if (tm.dense[t] >= 0 && !newid[tm.dense[t]]) newid[tm.dense[t]] = (int32_t)nn++;
    } else if (kind == 0) {
        for (size_t k = 0; k < nntag; k++)
            if (!newid[tm.sorted_idx[k]]) newid[tm.sorted_idx[k]] = (int32_t)nn++;
    } else {
        for (size_t i = 0; i < nntag; i++)
            if (!newid[i]) newid[i] = (int32_t)nn++;
    }
    m->dim = gdim;
    m->nnodes = nn;
    HK_TRY(hk_malloc((size_t)(3 * nn) * sizeof *m->coords, &m->coords));
    double zmax = 0, extent = 0;
    for (size_t i = 0; i < nntag; i++)
        if (newid[i] >= 0) {
            memcpy(m->coords + 3 * (int64_t)newid[i], coord + 3 * i, 3 * sizeof(double));
            HK_TRY_CHECK(isfinite(coord[3 * i]) && isfinite(coord[3 * i + 1]) &&
                             isfinite(coord[3 * i + 2]),
                         HK_ERR_PARSE,
                         "%s: node %zu has the non-finite coordinates (%g, %g, %g); fix the node "
                         "in the file or mesh the geometry again",
                         path, ntag[i], coord[3 * i], coord[3 * i + 1], coord[3 * i + 2]);
            for (int a = 0; a < 3; a++)
                if (fabs(coord[3 * i + a]) > extent) extent = fabs(coord[3 * i + a]);
            if (fabs(coord[3 * i + 2]) > zmax) zmax = fabs(coord[3 * i + 2]);
        }
    HK_TRY_CHECK(gdim == 3 || zmax <= 1e-12 * (extent > 0 ? extent : 1), HK_ERR_MODEL,
                 "%s: the 2D mesh is not in the z = 0 plane (|z| up to %g); draw the geometry "
                 "in the xy plane",
                 path, zmax);
    if (gdim == 2)
        for (int64_t i = 0; i < nn; i++)
            m->coords[3 * i + 2] = 0.0;
    for (int64_t k = 0; k < cells.e.ptr[cells.e.n]; k++)
        cells.e.nodes[k] = newid[cells.e.nodes[k]];
    m->cells = cells.e;
    memset(&cells, 0, sizeof cells);
    m->cell_region = creg;
    creg = NULL;

    /* boundaries: drop facets off the kept cells; a group left empty is an error */
    m->nboundaries = nbnd;
    HK_TRY(hk_calloc((size_t)(nbnd ? nbnd : 1), sizeof *m->boundaries, &m->boundaries));
    b = 0;
    for (size_t i = 0; i < npg; i++) {
        if (ph[i].dim == gdim) continue;
        hk_group *g = &m->boundaries[b];
        hk_elems *f = &bnd[b].e;
        snprintf(g->name, sizeof g->name, "%s", ph[i].name);
        g->dim = ph[i].dim, g->tag = ph[i].tag;
        int64_t kept = 0, w = 0;
        for (int64_t e = 0; e < f->n; e++) {
            int ok = 1;
            for (int64_t k = f->ptr[e]; k < f->ptr[e + 1]; k++)
                ok &= newid[f->nodes[k]] >= 0;
            if (!ok) continue;
            int64_t len = f->ptr[e + 1] - f->ptr[e], start = f->ptr[e];
            for (int64_t k = 0; k < len; k++)
                f->nodes[w + k] = newid[f->nodes[start + k]];
            f->type[kept] = f->type[e], f->tag[kept] = f->tag[e];
            f->ptr[kept] = w;
            w += len;
            kept++;
        }
        HK_TRY_CHECK(kept > 0, HK_ERR_MODEL,
                     "%s: boundary group '%s' (dimension %d) has no element on the meshed "
                     "regions; put its entities on a region's boundary or remove the group",
                     path, g->name, g->dim);
        f->ptr[kept] = w;
        f->n = kept;
        g->elems = *f;
        memset(f, 0, sizeof *f);
        if (!elevate && !levels) HK_TRY(hk_group_collect_nodes(g, nn));
        b++;
    }

    int64_t nflip = hk_mesh_fix_orientation(m);
    /* Gmsh's volume elements come out positively oriented: a flipped one is a tangled mesh */
    if (kind == 1 && gdim == 3 && nflip)
        add_note("%lld volume elements came out of Gmsh inverted and were flipped; the mesh may "
                 "be tangled (try geometry.algorithm3d: delaunay)",
                 (long long)nflip);
    HK_TRY(hk_mesh_orient_facets(m));
    /* a mesh file is refined without its geometry, then raised to the asked order */
    const int order2 = elevate || (kind == 0 && levels && opt->order == 2);
    if (reg && levels) { /* the region's cells only (mesh/region.c) */
        double t = omp_get_wtime();
        omp_set_num_threads(threads);
        if (kind == 1) HK_TRY(gmsh_geometry(path, gdim, &tm, newid, &geo));
        HK_TRY(hk_mesh_region_make(reg, levels, order2,
                                   kind == 1 ? incomplete : opt->incomplete, straight,
                                   opt->renumber, kind == 1 ? &geo : NULL, m, &load_refine));
        load_times.refine = omp_get_wtime() - t;
        if (load_refine.straight)
            add_note("%lld refined or second-order nodes on curved geometry kept straight: on it "
                     "they would invert a cell or Gmsh found no closest point near them",
                     (long long)load_refine.straight);
    } else if (levels || order2) {
        omp_set_num_threads(threads);
        if (kind == 1 && (levels || !straight)) HK_TRY(gmsh_geometry(path, gdim, &tm, newid, &geo));
        HK_TRY(refine_elevate(levels, order2, kind == 1 ? incomplete : opt->incomplete, straight,
                              kind == 1 ? &geo : NULL, m));
    }
    if (opt->renumber && !(reg && reg->refined)) {
        double t = omp_get_wtime();
        HK_TRY(hk_mesh_renumber_rcm(m));
        load_times.renumber = omp_get_wtime() - t;
    }
    load_times.read = omp_get_wtime() - t_read - (order2 ? load_times.order : 0) -
                      load_times.refine - load_times.renumber;

fail:
    geometry_free(&geo);
    if (initialized) {
        int gerr = 0;
        double t = omp_get_wtime();
        gmshFinalize(&gerr);
        crash_guard_off();
        load_times.open += omp_get_wtime() - t;
    }
    omp_set_num_threads(threads); /* newer Gmsh sets the OpenMP thread count */
    gmshFree(pg);
    gmshFree(ent);
    gmshFree(ntag);
    gmshFree(coord);
    gmshFree(par);
    gmshFree(pname);
    tagmap_free(&tm);
    free(ph);
    free(creg);
    free(newid);
    free(claimed);
    hk_elems_free(&cells.e);
    for (int i = 0; i < nbnd && bnd; i++)
        hk_elems_free(&bnd[i].e);
    free(bnd);
    if (ierr) hk_mesh_free(m);
    return ierr;
}
#endif /* HOOKE_HAVE_GMSH */

#ifdef HOOKE_HAVE_GMSH
/* The model's dimension and the measure of its entities of that dimension. */
static int measure_gmsh(const char *path, int *dim, double *measure)
{
    int ierr = 0;
#if GMSH_API_VERSION_MAJOR > 4 || (GMSH_API_VERSION_MAJOR == 4 && GMSH_API_VERSION_MINOR >= 9)
    GMSH_TRY(HK_ERR_INTERNAL, "start to read", gmshInitialize(0, NULL, 0, 0, &gerr_));
#else
    GMSH_TRY(HK_ERR_INTERNAL, "start to read", gmshInitialize(0, NULL, 0, &gerr_));
#endif
    crash_guard_on(path);
    HK_TRY(set_option(path, "General.Terminal", NULL, 0));
    GMSH_TRY(HK_ERR_PARSE, "read", gmshOpen(path, &gerr_));
    GMSH_TRY(HK_ERR_PARSE, "find the dimension of", *dim = gmshModelGetDimension(&gerr_));
    HK_TRY(model_measure(path, *dim, measure));
fail:
    {
        int gerr = 0;
        gmshFinalize(&gerr);
        crash_guard_off();
}
    return ierr;
}
#endif

int hk_mesh_geometry_measure(const char *path, int *dim, double *measure)
{
    HK_CHECK(path && dim && measure, HK_ERR_ARG, "hk_mesh_geometry_measure: NULL argument");
    *dim = 0, *measure = 0;
    if (file_kind(path) != 1) return 0; /* a mesh file: nothing to estimate before reading */
#ifdef HOOKE_HAVE_GMSH
    int threads = omp_get_max_threads();
    int ierr = measure_gmsh(path, dim, measure);
    omp_set_num_threads(threads);
    return ierr;
#else
    return 0;
#endif
}

const char *hk_mesh_load_notes(void)
{
#ifdef HOOKE_HAVE_GMSH
    return load_notes;
#else
    return "";
#endif
}

static int load_checked(const char *path, const hk_mesh_options *opt, hk_mesh_region *reg,
                        hk_mesh *m);

int hk_mesh_load(const char *path, const hk_mesh_options *opt, hk_mesh *m)
{
    return load_checked(path, opt, NULL, m);
}

int hk_mesh_load_region(const char *path, const hk_mesh_options *opt, hk_mesh_region *reg,
                        hk_mesh *m)
{
    HK_CHECK(reg && reg->select, HK_ERR_ARG, "hk_mesh_load_region: no region selection given");
    reg->refined = 0;
    reg->keys = NULL;
    return load_checked(path, opt, reg, m);
}

static int load_checked(const char *path, const hk_mesh_options *opt, hk_mesh_region *reg,
                        hk_mesh *m)
{
    static const hk_mesh_options defaults = {0};
    HK_CHECK(m, HK_ERR_ARG, "hk_mesh_load: the output mesh is NULL");
    memset(m, 0, sizeof *m);
    HK_CHECK(path && *path, HK_ERR_ARG, "hk_mesh_load: no mesh file given");
    if (!opt) opt = &defaults;
    HK_CHECK(opt->order >= 0 && opt->order <= 2, HK_ERR_OPTION,
             "mesh order %d is not supported for '%s'; use 1 (linear) or 2 (quadratic)", opt->order,
             path);
    HK_CHECK(opt->refine >= HK_REFINE_AUTO && opt->refine <= HK_REFINE_MAX, HK_ERR_OPTION,
             "mesh refinement %d times is not supported for '%s'; refine 0 to %d times (or "
             "auto)",
             opt->refine, path, HK_REFINE_MAX);
    HK_CHECK(isfinite(opt->size) && opt->size >= 0, HK_ERR_OPTION,
             "mesh size %g is invalid for '%s'; give a positive element size (0: Gmsh's default)",
             opt->size, path);
    struct stat st;
    HK_CHECK(stat(path, &st) || !S_ISDIR(st.st_mode), HK_ERR_IO,
             "'%s' is a folder, not a mesh or geometry file; give the path of a .msh, .geo, "
             ".step/.stp, .brep or .iges/.igs file",
             path);
    FILE *f = fopen(path, "rb");
    HK_CHECK(f, HK_ERR_IO, "cannot open mesh file '%s': %s; check the path", path, strerror(errno));
    /* a .msh starts with a section header ($MeshFormat, or $NOD/$Comments in old files);
     * anything else would go to Gmsh's script parser, which stays broken for the next file
     * after some syntax errors (Gmsh 4.8) */
    int c;
    while ((c = fgetc(f)) == ' ' || c == '\t' || c == '\r' || c == '\n')
        ;
    fclose(f);
    int kind = file_kind(path);
    HK_CHECK(kind >= 0, HK_ERR_UNSUPPORTED,
             "mesh file '%s' has an extension Hooke does not read; give a .msh (2.2 or 4.1), "
             ".geo, .step/.stp, .brep or .iges/.igs file",
             path);
    HK_CHECK(kind != 0 || c == '$', HK_ERR_PARSE,
             "'%s' is not a Gmsh mesh file (it does not start with $MeshFormat); write it with "
             "Gmsh (format msh22 or msh41)",
             path);
    if (kind == 0) HK_CALL(hk_msh_check(path)); /* its version and counts, before Gmsh */
    memset(&load_times, 0, sizeof load_times);
    memset(&load_refine, 0, sizeof load_refine);
#ifdef HOOKE_HAVE_GMSH
    load_notes[0] = 0;
    return load_gmsh(path, kind, opt, reg, m);
#else
    (void)reg;
    return hk_error_set(HK_ERR_NOT_BUILT, __FILE__, __LINE__,
                        "this hooke was built without Gmsh; cannot read '%s'. Install "
                        "libgmsh-dev (or a Gmsh SDK) and rebuild, or use the built-in "
                        "rectangle/box meshes",
                        path);
#endif
}
