/* The case-file reader: YAML through libfyaml's document tree, checked key by key.
 *
 * Every message is "case.yaml:LINE:COL: what; hint". Overrides from --set are applied to the
 * tree before it is read, so an override is checked like a key of the file; a value that came
 * from --set is reported as "--set key=value: what; hint". The schema is docs/case-format.md. */
#include "case.h"

#include <ctype.h>
#include <errno.h>
#include <libfyaml.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- context and messages ------------------------------------------------------------- */

typedef struct set_node {
    struct fy_node *node;
    int set;
} set_node;

typedef struct ctx {
    hk_case *c;
    struct fy_document *fyd;
    set_node *setn;
    int nsetn, capsetn;
} ctx;

static const char *comp_names[3] = {"x", "y", "z"};

int hk_case_error(const hk_case *c, hk_case_loc loc, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (loc.set >= 0 && loc.set < c->nsets)
        return hk_error_set(HK_ERR_CASE, __FILE__, __LINE__, "--set %s: %s", c->sets[loc.set], msg);
    if (loc.line > 0)
        return hk_error_set(HK_ERR_CASE, __FILE__, __LINE__, "%s:%d:%d: %s", c->path, loc.line,
                            loc.col, msg);
    return hk_error_set(HK_ERR_CASE, __FILE__, __LINE__, "%s: %s", c->path, msg);
}

/* Location of a node: scalars have a token; collections take their first descendant's. */
static hk_case_loc node_loc(ctx *x, struct fy_node *n)
{
    hk_case_loc loc = {0, 0, -1};
    for (struct fy_node *p = n; p; p = fy_node_get_parent(p))
        for (int i = 0; i < x->nsetn; i++)
            if (x->setn[i].node == p) {
                loc.set = x->setn[i].set;
                return loc;
            }
    struct fy_node *q = n;
    while (q) {
        enum fy_node_type t = fy_node_get_type(q);
        if (t == FYNT_SCALAR) {
            struct fy_token *tok = fy_node_get_scalar_token(q);
            const struct fy_mark *m = tok ? fy_token_start_mark(tok) : NULL;
            if (m) loc.line = m->line + 1, loc.col = m->column + 1;
            break;
        } else if (t == FYNT_MAPPING) {
            void *it = NULL;
            struct fy_node_pair *pr = fy_node_mapping_iterate(q, &it);
            q = pr ? fy_node_pair_key(pr) : NULL;
        } else {
            void *it = NULL;
            q = fy_node_sequence_iterate(q, &it);
        }
    }
    /* an empty list or mapping has no token: point at its key in the enclosing mapping */
    struct fy_node *par = n ? fy_node_get_parent(n) : NULL;
    if (!loc.line && par && fy_node_get_type(par) == FYNT_MAPPING) {
        void *it = NULL;
        for (struct fy_node_pair *pr; (pr = fy_node_mapping_iterate(par, &it));)
            if (fy_node_pair_value(pr) == n) return node_loc(x, fy_node_pair_key(pr));
    }
    if (!loc.line && par) return node_loc(x, par);
    return loc;
}

static int err_at(ctx *x, struct fy_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int err_at(ctx *x, struct fy_node *n, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hk_case_error(x->c, node_loc(x, n), "%s", msg);
}

static const char *scalar(struct fy_node *n)
{
    return n && fy_node_get_type(n) == FYNT_SCALAR ? fy_node_get_scalar0(n) : NULL;
}

/* Levenshtein distance for "did you mean" hints (short strings only). */
static int edit_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int s = d[i - 1][j - 1] +
                    (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = s < del ? (s < ins ? s : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

/* "valid keys: a, b, c" plus "did you mean 'b'?" when one is close. */
static void key_hint(const char *key, const char *const *allowed, char *buf, size_t n)
{
    const char *best = NULL;
    int bestd = 3;
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; allowed[i]; i++) {
        int d = edit_distance(key, allowed[i]);
        if (d < bestd) bestd = d, best = allowed[i];
    }
    if (best) k += (size_t)snprintf(buf + k, n - k, "did you mean '%s'? ", best);
    if (k < n) k += (size_t)snprintf(buf + k, n - k, "valid keys: ");
    for (int i = 0; allowed[i] && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "", allowed[i]);
}

/* The value must be a mapping whose keys are all in allowed. */
static int check_mapping(ctx *x, struct fy_node *n, const char *what, const char *const *allowed)
{
    if (fy_node_get_type(n) != FYNT_MAPPING)
        return err_at(x, n, "%s must be a mapping of keys (key: value); see docs/case-format.md",
                      what);
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it))) {
        const char *k = scalar(fy_node_pair_key(p));
        if (!k)
            return err_at(x, fy_node_pair_key(p), "%s has a key that is not a plain word", what);
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = !strcmp(k, allowed[i]);
        if (!ok) {
            char hint[512];
            key_hint(k, allowed, hint, sizeof hint);
            return err_at(x, fy_node_pair_key(p), "unknown key '%s' in %s; %s", k, what, hint);
        }
        struct fy_node *v = fy_node_pair_value(p);
        if (!v ||
            (fy_node_get_type(v) == FYNT_SCALAR && fy_node_is_null(v) &&
             (!fy_node_get_scalar0(v) || !*fy_node_get_scalar0(v) ||
              !strcmp(fy_node_get_scalar0(v), "~") || !strcmp(fy_node_get_scalar0(v), "null"))))
            return err_at(x, fy_node_pair_key(p),
                          "'%s' in %s has no value; write it on the same line "
                          "(%s: ...) or indent the lines below it",
                          k, what, k);
    }
    return 0;
}

static struct fy_node *lookup(struct fy_node *map, const char *key)
{
    return fy_node_mapping_lookup_by_string(map, key, FY_NT);
}

/* The key node of map's pair with this value (for messages about a whole section). */
static struct fy_node *key_of(struct fy_node *map, const char *key)
{
    struct fy_node_pair *p = fy_node_mapping_lookup_pair_by_string(map, key, FY_NT);
    return p ? fy_node_pair_key(p) : map;
}

static int parse_double(ctx *x, struct fy_node *n, const char *what, double *out)
{
    const char *s = scalar(n);
    if (!s || !*s) return err_at(x, n, "%s must be a number (like 2.1e11)", what);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (*end && isspace((unsigned char)*end))
        end++;
    if (!*end && errno == ERANGE) /* 1e-320 is a number, just not one a double holds */
        return err_at(x, n,
                      "%s = %s is out of the range of double precision (magnitudes 1e-307 to "
                      "1e308, or 0); use other units",
                      what, s);
    if (*end || !isfinite(v))
        return err_at(x, n, "%s must be a finite number, got '%s'", what, s);
    *out = v;
    return 0;
}

static int parse_int(ctx *x, struct fy_node *n, const char *what, int *out)
{
    const char *s = scalar(n);
    if (!s || !*s) return err_at(x, n, "%s must be a whole number", what);
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno == ERANGE || v < INT_MIN || v > INT_MAX)
        return err_at(x, n, "%s must be a whole number, got '%s'", what, s);
    *out = (int)v;
    return 0;
}

static int parse_bool(ctx *x, struct fy_node *n, const char *what, int *out)
{
    const char *s = scalar(n);
    static const char *yes[] = {"true", "True", "TRUE", "yes", "on", "1"};
    static const char *no[] = {"false", "False", "FALSE", "no", "off", "0"};
    for (int i = 0; s && i < 6; i++) {
        if (!strcmp(s, yes[i])) return *out = 1, 0;
        if (!strcmp(s, no[i])) return *out = 0, 0;
    }
    return err_at(x, n, "%s must be true or false, got '%s'", what, s ? s : "a collection");
}

/* A vector of 2 (2D) or 3 numbers; a 2D case may give 3 with z = 0. */
static int parse_vec(ctx *x, struct fy_node *n, const char *what, double v[3])
{
    int dim = x->c->dim;
    if (fy_node_get_type(n) != FYNT_SEQUENCE)
        return err_at(x, n, "%s must be a list of %d numbers like [%s]", what, dim,
                      dim == 2 ? "0, -1" : "0, 0, -1");
    int cnt = fy_node_sequence_item_count(n);
    if (cnt != dim && !(dim == 2 && cnt == 3))
        return err_at(x, n, "%s has %d components; a %s analysis needs %d", what, cnt,
                      dim == 2 ? "2D" : "3d", dim);
    v[0] = v[1] = v[2] = 0;
    for (int i = 0; i < cnt; i++) {
        struct fy_node *e = fy_node_sequence_get_by_index(n, i);
        char w[160];
        snprintf(w, sizeof w, "%s[%d]", what, i);
        HK_CALL(parse_double(x, e, w, &v[i]));
    }
    if (dim == 2 && v[2] != 0)
        return err_at(x, n, "%s has a z component in a 2D analysis; give 2 components", what);
    return 0;
}

static int parse_name(ctx *x, struct fy_node *n, const char *what, char *out, size_t size)
{
    const char *s = scalar(n);
    if (!s || !*s) return err_at(x, n, "%s must be a name (a plain word)", what);
    if (strlen(s) >= size) return err_at(x, n, "%s is longer than %zu characters", what, size - 1);
    strcpy(out, s);
    return 0;
}

static int resolve_path(ctx *x, struct fy_node *n, const char *what, char *out)
{
    const char *s = scalar(n);
    if (!s || !*s) return err_at(x, n, "%s must be a file name", what);
    int k;
    if (s[0] == '/' || !x->c->dir[0])
        k = snprintf(out, HK_CASE_PATH, "%s", s);
    else
        k = snprintf(out, HK_CASE_PATH, "%s/%s", x->c->dir, s);
    if (k >= HK_CASE_PATH) return err_at(x, n, "%s: the path is too long", what);
    return 0;
}

/* ---- sections ------------------------------------------------------------------------- */

static int eltype_by_name(const char *s, hk_eltype *t)
{
    for (int i = 0; i < HK_EL_COUNT; i++) {
        const hk_eltype_info *in = hk_eltype_get((hk_eltype)i);
        if (in && in->name && !strcmp(in->name, s)) return *t = (hk_eltype)i, 1;
    }
    /* The names are fixed by fem.h's enum; a fallback while the mesh module is a stub. */
    static const char *names[] = {"point1", "line2", "line3", "tri3", "tri6",  "quad4", "quad8",
                                  "quad9",  "tet4",  "tet10", "hex8", "hex20", "hex27"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(names[i], s)) return *t = (hk_eltype)i, 1;
    return 0;
}

static int read_generate(ctx *x, struct fy_node *g, int quad, int order, int incomplete)
{
    static const char *const keys[] = {"shape", "size", "cells", "element", NULL};
    hk_case *c = x->c;
    HK_CALL(check_mapping(x, g, "geometry.generate", keys));
    struct fy_node *shape = lookup(g, "shape"), *size = lookup(g, "size"),
                   *cells = lookup(g, "cells"), *el = lookup(g, "element");
    if (!shape) return err_at(x, g, "geometry.generate needs 'shape: rectangle' or 'shape: box'");
    const char *sh = scalar(shape);
    if (sh && !strcmp(sh, "rectangle"))
        c->gen_dim = 2;
    else if (sh && !strcmp(sh, "box"))
        c->gen_dim = 3;
    else
        return err_at(x, shape, "geometry.generate.shape must be rectangle or box, got '%s'",
                      sh ? sh : "a collection");
    if (c->gen_dim != c->dim)
        return err_at(x, shape, "a %s is %dD but the analysis is %s; use %s", sh, c->gen_dim,
                      c->dim == 3 ? "3d" : "2D", c->gen_dim == 3 ? "analysis: 3d" : "shape: box");
    if (!size || !cells)
        return err_at(x, g, "geometry.generate needs size: [%s] and cells: [%s]",
                      c->gen_dim == 2 ? "lx, ly" : "lx, ly, lz",
                      c->gen_dim == 2 ? "nx, ny" : "nx, ny, nz");
    if (fy_node_get_type(size) != FYNT_SEQUENCE || fy_node_sequence_item_count(size) != c->gen_dim)
        return err_at(x, size, "geometry.generate.size must be a list of %d lengths", c->gen_dim);
    if (fy_node_get_type(cells) != FYNT_SEQUENCE ||
        fy_node_sequence_item_count(cells) != c->gen_dim)
        return err_at(x, cells, "geometry.generate.cells must be a list of %d cell counts",
                      c->gen_dim);
    c->gen_size[2] = 0;
    c->gen_cells[2] = 0;
    for (int i = 0; i < c->gen_dim; i++) {
        struct fy_node *e = fy_node_sequence_get_by_index(size, i);
        HK_CALL(parse_double(x, e, "geometry.generate.size", &c->gen_size[i]));
        if (!(c->gen_size[i] > 0))
            return err_at(x, e, "geometry.generate.size[%d] = %g must be positive", i,
                          c->gen_size[i]);
        e = fy_node_sequence_get_by_index(cells, i);
        HK_CALL(parse_int(x, e, "geometry.generate.cells", &c->gen_cells[i]));
        if (c->gen_cells[i] < 1 || c->gen_cells[i] > 100000)
            return err_at(x, e, "geometry.generate.cells[%d] = %d must be between 1 and 100000", i,
                          c->gen_cells[i]);
    }
    /* element: explicit, or from order/quad/incomplete. */
    if (el) {
        const char *s = scalar(el);
        if (!s || !eltype_by_name(s, &c->gen_element))
            return err_at(x, el, "unknown element '%s'; use %s", s ? s : "?",
                          c->gen_dim == 2 ? "tri3, tri6, quad4, quad8 or quad9"
                                          : "tet4, tet10, hex8, hex20 or hex27");
        int ok = c->gen_dim == 2 ? (c->gen_element >= HK_EL_TRI3 && c->gen_element <= HK_EL_QUAD9)
                                 : (c->gen_element >= HK_EL_TET4 && c->gen_element <= HK_EL_HEX27);
        if (!ok)
            return err_at(x, el, "element %s does not fit a %s; use %s", s, sh,
                          c->gen_dim == 2 ? "tri3, tri6, quad4, quad8 or quad9"
                                          : "tet4, tet10, hex8, hex20 or hex27");
    } else if (c->gen_dim == 2) {
        c->gen_element =
            !quad ? (order == 2 ? HK_EL_TRI6 : HK_EL_TRI3)
                  : (order == 2 ? (incomplete ? HK_EL_QUAD8 : HK_EL_QUAD9) : HK_EL_QUAD4);
    } else {
        c->gen_element = !quad
                             ? (order == 2 ? HK_EL_TET10 : HK_EL_TET4)
                             : (order == 2 ? (incomplete ? HK_EL_HEX20 : HK_EL_HEX27) : HK_EL_HEX8);
    }
    return 0;
}

/* A Gmsh algorithm by name (geometry.algorithm2d / algorithm3d): its Gmsh number in *out. */
static int parse_algorithm(ctx *x, struct fy_node *n, const char *what, const char *const *names,
                           const int *numbers, int *out)
{
    const char *s = scalar(n);
    for (int i = 0; s && names[i]; i++)
        if (!strcmp(s, names[i])) {
            *out = numbers[i];
            return 0;
        }
    char hint[512];
    key_hint(s ? s : "", names, hint, sizeof hint);
    return err_at(x, n, "unknown %s '%s'; %s", what, s ? s : "?", hint);
}

/* geometry.threads, geometry.algorithm2d, geometry.algorithm3d: how Gmsh meshes;
 * geometry.order_by: who makes the second-order nodes. */
static int read_meshing_speed(ctx *x, struct fy_node *g)
{
    static const char *const n2[] = {"meshadapt", "automatic", "delaunay",         "frontal",
                                     "bamg",      "packing",   "quasi_structured", NULL};
    static const int v2[] = {1, 2, 5, 6, 7, 9, 11};
    static const char *const n3[] = {"delaunay", "frontal", "mmg3d", "rtree", "hxt", NULL};
    static const int v3[] = {1, 4, 7, 9, 10};
    hk_case *c = x->c;
    struct fy_node *n;
    if ((n = lookup(g, "threads"))) {
        HK_CALL(parse_int(x, n, "geometry.threads", &c->mesh.threads));
        if (c->mesh.threads < 0 || c->mesh.threads > 4096)
            return err_at(x, n,
                          "geometry.threads must be 0 (every core) or a thread count up to 4096, "
                          "got %d",
                          c->mesh.threads);
    }
    if ((n = lookup(g, "algorithm2d")))
        HK_CALL(parse_algorithm(x, n, "geometry.algorithm2d", n2, v2, &c->mesh.algorithm2d));
    if ((n = lookup(g, "algorithm3d")))
        HK_CALL(parse_algorithm(x, n, "geometry.algorithm3d", n3, v3, &c->mesh.algorithm3d));
    static const char *const nby[] = {"hooke", "gmsh", NULL};
    static const int vby[] = {HK_ORDER_BY_HOOKE, HK_ORDER_BY_GMSH};
    if ((n = lookup(g, "order_by")))
        HK_CALL(parse_algorithm(x, n, "geometry.order_by", nby, vby, &c->mesh.order_by));
    return 0;
}

static int read_geometry(ctx *x, struct fy_node *root)
{
    static const char *const keys[] = {"file",        "generate",    "size",     "order",
                                       "quad",        "incomplete",  "renumber", "threads",
                                       "algorithm2d", "algorithm3d", "order_by", NULL};
    hk_case *c = x->c;
    struct fy_node *g = lookup(root, "geometry");
    if (!g)
        return err_at(x, root,
                      "the case has no 'geometry' section; add geometry: {file: part.geo} "
                      "or geometry: {generate: {shape: box, ...}}");
    HK_CALL(check_mapping(x, g, "geometry", keys));
    struct fy_node *file = lookup(g, "file"), *gen = lookup(g, "generate"), *n;
    if (!!file == !!gen)
        return err_at(
            x, key_of(root, "geometry"),
            "geometry needs exactly one of 'file' (a .geo/.msh/.step/.brep) and 'generate'");
    c->mesh.order = 1;
    c->mesh.renumber = 1;
    int quad = -1;
    if ((n = lookup(g, "size"))) {
        HK_CALL(parse_double(x, n, "geometry.size", &c->mesh.size));
        if (!(c->mesh.size > 0))
            return err_at(x, n, "geometry.size (target element size) must be positive, got %g",
                          c->mesh.size);
    }
    if ((n = lookup(g, "order"))) {
        HK_CALL(parse_int(x, n, "geometry.order", &c->mesh.order));
        if (c->mesh.order != 1 && c->mesh.order != 2)
            return err_at(x, n, "geometry.order must be 1 (linear) or 2 (quadratic), got %d",
                          c->mesh.order);
    }
    if ((n = lookup(g, "quad"))) HK_CALL(parse_bool(x, n, "geometry.quad", &quad));
    if ((n = lookup(g, "incomplete")))
        HK_CALL(parse_bool(x, n, "geometry.incomplete", &c->mesh.incomplete));
    if ((n = lookup(g, "renumber")))
        HK_CALL(parse_bool(x, n, "geometry.renumber", &c->mesh.renumber));
    HK_CALL(read_meshing_speed(x, g));
    if (file) {
        c->generate = 0;
        c->mesh.quad = quad > 0;
        c->geo_loc = node_loc(x, file);
        HK_CALL(resolve_path(x, file, "geometry.file", c->geo_file));
        const char *dot = strrchr(c->geo_file, '.');
        static const char *ext[] = {".geo",  ".msh",  ".step", ".stp",
                                    ".brep", ".STEP", ".STP",  NULL};
        int ok = 0;
        for (int i = 0; dot && ext[i] && !ok; i++)
            ok = !strcmp(dot, ext[i]);
        if (!ok)
            return err_at(x, file,
                          "geometry.file '%s' is not a .geo, .msh, .step, .stp or .brep file",
                          scalar(file));
        FILE *f = fopen(c->geo_file, "rb");
        if (!f)
            return err_at(x, file,
                          "cannot open geometry file '%s' (%s); paths are relative to the "
                          "case file's folder",
                          c->geo_file, strerror(errno));
        fclose(f);
    } else {
        c->generate = 1;
        c->mesh.quad = quad != 0; /* generated meshes default to quads/hexes */
        if (lookup(g, "size"))
            return err_at(x, key_of(g, "size"),
                          "geometry.size (element size) is for geometry files; "
                          "a generated mesh takes generate.cells");
        HK_CALL(read_generate(x, gen, c->mesh.quad, c->mesh.order, c->mesh.incomplete));
    }
    return 0;
}

static int read_analysis(ctx *x, struct fy_node *root)
{
    static const char *const keys[] = {"type", "thickness", NULL};
    hk_case *c = x->c;
    struct fy_node *a = lookup(root, "analysis"), *type = NULL, *th = NULL;
    if (!a)
        return err_at(x, root,
                      "the case has no 'analysis'; add analysis: 3d, plane_stress, plane_strain "
                      "or axisymmetric");
    if (fy_node_get_type(a) == FYNT_SCALAR) {
        type = a;
    } else {
        HK_CALL(check_mapping(x, a, "analysis", keys));
        type = lookup(a, "type");
        th = lookup(a, "thickness");
        if (!type)
            return err_at(x, a,
                          "analysis needs type: 3d, plane_stress, plane_strain or axisymmetric");
    }
    c->analysis_loc = node_loc(x, type);
    const char *s = scalar(type);
    if (s && !strcmp(s, "plane_stress"))
        c->analysis = HK_PLANE_STRESS, c->dim = 2;
    else if (s && !strcmp(s, "plane_strain"))
        c->analysis = HK_PLANE_STRAIN, c->dim = 2;
    else if (s && (!strcmp(s, "3d") || !strcmp(s, "3D") || !strcmp(s, "solid")))
        c->analysis = HK_SOLID, c->dim = 3;
    else if (s && !strcmp(s, "axisymmetric"))
        c->analysis = HK_AXISYMMETRIC, c->dim = 2;
    else
        return err_at(x, type,
                      "analysis type must be 3d, plane_stress, plane_strain or axisymmetric, got "
                      "'%s'",
                      s ? s : "a collection");
    c->thickness = 1.0;
    if (th) {
        if (c->dim == 3)
            return err_at(x, th, "thickness applies to 2D analyses only; remove it for a 3d case");
        if (c->analysis == HK_AXISYMMETRIC)
            return err_at(x, th,
                          "thickness does not apply to an axisymmetric analysis (its results are "
                          "per radian of the full ring); remove it");
        HK_CALL(parse_double(x, th, "analysis.thickness", &c->thickness));
        if (!(c->thickness > 0))
            return err_at(x, th, "analysis.thickness must be positive, got %g", c->thickness);
    }
    return 0;
}

/* A positive number under key k of material m, or an error naming it. */
static int material_number(ctx *x, struct fy_node *m, const char *k, const char *name,
                           const char *meaning, int positive, double *out)
{
    struct fy_node *v = lookup(m, k);
    if (!v) return err_at(x, m, "material '%s' needs %s (%s)", name, k, meaning);
    HK_CALL(parse_double(x, v, k, out));
    if (positive && !(*out > 0))
        return err_at(x, v, "%s = %g of material '%s' must be positive (%s)", k, *out, name,
                      meaning);
    return 0;
}

/* The stiffness matrix D of an anisotropic material: n rows of n numbers. */
static int read_stiffness(ctx *x, struct fy_node *v, const char *name, int n, double D[6][6])
{
    const char *order = n == 6 ? "xx yy zz xy yz xz" : n == 4 ? "rr zz tt rz" : "xx yy xy";
    if (fy_node_get_type(v) != FYNT_SEQUENCE || fy_node_sequence_item_count(v) != n)
        return err_at(x, v,
                      "D of material '%s' must be a list of %d rows of %d numbers (Voigt order "
                      "%s, engineering shear strains)",
                      name, n, n, order);
    for (int i = 0; i < n; i++) {
        struct fy_node *row = fy_node_sequence_get_by_index(v, i);
        if (fy_node_get_type(row) != FYNT_SEQUENCE || fy_node_sequence_item_count(row) != n)
            return err_at(x, row, "row %d of D of material '%s' must be a list of %d numbers", i,
                          name, n);
        for (int j = 0; j < n; j++) {
            char w[64];
            snprintf(w, sizeof w, "D[%d][%d]", i, j);
            HK_CALL(parse_double(x, fy_node_sequence_get_by_index(row, j), w, &D[i][j]));
        }
    }
    return 0;
}

/* orientation: {axis1: [...], axis2: [...]}: material axis 1 along axis1, axis 2 in the plane
 * of axis1 and axis2 (made orthogonal to axis 1), axis 3 = axis 1 x axis 2. */
static int read_orientation(ctx *x, struct fy_node *v, hk_material *mt)
{
    static const char *const keys[] = {"axis1", "axis2", NULL};
    char what[96];
    snprintf(what, sizeof what, "orientation of material '%s'", mt->name);
    HK_CALL(check_mapping(x, v, what, keys));
    struct fy_node *a1 = lookup(v, "axis1"), *a2 = lookup(v, "axis2");
    if (!a1 || !a2)
        return err_at(x, v, "%s needs axis1: [...] and axis2: [...] (two directions)", what);
    double e1[3], e2[3];
    HK_CALL(parse_vec(x, a1, "axis1", e1));
    HK_CALL(parse_vec(x, a2, "axis2", e2));
    double n1 = sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
    double n2 = sqrt(e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]);
    if (!(n1 > 0)) return err_at(x, a1, "axis1 of material '%s' is the zero vector", mt->name);
    if (!(n2 > 0)) return err_at(x, a2, "axis2 of material '%s' is the zero vector", mt->name);
    double dot = 0;
    for (int i = 0; i < 3; i++)
        e1[i] /= n1, dot += e1[i] * e2[i];
    double m2 = 0;
    for (int i = 0; i < 3; i++)
        e2[i] -= dot * e1[i], m2 += e2[i] * e2[i];
    m2 = sqrt(m2);
    if (!(m2 > 1e-8 * n2))
        return err_at(x, a2,
                      "axis2 of material '%s' is parallel to axis1; give a second "
                      "direction across it",
                      mt->name);
    for (int i = 0; i < 3; i++)
        mt->axes[0][i] = e1[i], mt->axes[1][i] = e2[i] / m2;
    mt->axes[2][0] = mt->axes[0][1] * mt->axes[1][2] - mt->axes[0][2] * mt->axes[1][1];
    mt->axes[2][1] = mt->axes[0][2] * mt->axes[1][0] - mt->axes[0][0] * mt->axes[1][2];
    mt->axes[2][2] = mt->axes[0][0] * mt->axes[1][1] - mt->axes[0][1] * mt->axes[1][0];
    mt->has_axes = 1;
    return 0;
}

/* alpha: one number (isotropic expansion) or [a1, a2, a3] along the material axes. */
static int read_alpha(ctx *x, struct fy_node *v, hk_material *mt)
{
    if (fy_node_get_type(v) == FYNT_SCALAR) {
        HK_CALL(parse_double(x, v, "alpha", &mt->alpha[0]));
        mt->alpha[1] = mt->alpha[2] = mt->alpha[0];
        return 0;
    }
    if (fy_node_get_type(v) != FYNT_SEQUENCE || fy_node_sequence_item_count(v) != 3)
        return err_at(x, v,
                      "alpha of material '%s' must be a number (1.2e-5) or three numbers "
                      "[a1, a2, a3] along the material axes",
                      mt->name);
    for (int i = 0; i < 3; i++) {
        char w[32];
        snprintf(w, sizeof w, "alpha[%d]", i);
        HK_CALL(parse_double(x, fy_node_sequence_get_by_index(v, i), w, &mt->alpha[i]));
    }
    return 0;
}

static int read_materials(ctx *x, struct fy_node *root)
{
    static const char *const keys[] = {"name",  "type",        "E",           "nu",      "density",
                                       "E1",    "E2",          "E3",          "nu12",    "nu13",
                                       "nu23",  "G12",         "G13",         "G23",     "D",
                                       "alpha", "orientation", "integration", "regions", NULL};
    static const char *const ortho_keys[] = {"E1",   "E2",  "E3",  "nu12", "nu13",
                                             "nu23", "G12", "G13", "G23"};
    hk_case *c = x->c;
    struct fy_node *ms = lookup(root, "materials");
    if (!ms)
        return err_at(x, root,
                      "the case has no 'materials'; add materials: [{name: steel, E: 210e9, "
                      "nu: 0.3}]");
    if (fy_node_get_type(ms) != FYNT_SEQUENCE || fy_node_sequence_item_count(ms) == 0)
        return err_at(x, key_of(root, "materials"),
                      "materials must be a list (lines starting with '- name: ...') of at least "
                      "one material");
    int n = fy_node_sequence_item_count(ms);
    HK_CALL(hk_calloc((size_t)n, sizeof *c->materials, &c->materials));
    c->nmaterials = n;
    int nall = 0;
    for (int i = 0; i < n; i++) {
        struct fy_node *m = fy_node_sequence_get_by_index(ms, i), *v, *tnode;
        hk_case_material *cm = &c->materials[i];
        char what[64];
        snprintf(what, sizeof what, "materials[%d]", i);
        HK_CALL(check_mapping(x, m, what, keys));
        cm->loc = node_loc(x, m);
        if ((v = lookup(m, "name")))
            HK_CALL(parse_name(x, v, "material name", cm->m.name, sizeof cm->m.name));
        else
            snprintf(cm->m.name, sizeof cm->m.name, "material%d", i + 1);
        cm->m.kind = HK_MAT_ISOTROPIC;
        if ((tnode = lookup(m, "type"))) {
            const char *t = scalar(tnode);
            if (t && !strcmp(t, "orthotropic"))
                cm->m.kind = HK_MAT_ORTHOTROPIC;
            else if (t && !strcmp(t, "anisotropic"))
                cm->m.kind = HK_MAT_ANISOTROPIC;
            else if (!t || strcmp(t, "isotropic"))
                return err_at(x, tnode,
                              "type of material '%s' must be isotropic, orthotropic or "
                              "anisotropic, got '%s'",
                              cm->m.name, t ? t : "a collection");
        }
        /* keys of the other kinds are mistakes, not silently ignored */
        for (int k = 0; keys[k]; k++) {
            const char *kk = keys[k];
            int iso = !strcmp(kk, "E") || !strcmp(kk, "nu");
            int ortho = kk[0] == 'E' || kk[0] == 'G' || !strncmp(kk, "nu", 2);
            ortho = ortho && !iso;
            int aniso = !strcmp(kk, "D");
            int wrong = (iso && cm->m.kind != HK_MAT_ISOTROPIC) ||
                        (ortho && cm->m.kind != HK_MAT_ORTHOTROPIC) ||
                        (aniso && cm->m.kind != HK_MAT_ANISOTROPIC);
            static const char *const kn[] = {"isotropic", "orthotropic", "anisotropic"};
            if (wrong && (v = lookup(m, kk)))
                return err_at(x, key_of(m, kk), "material '%s' is %s, so '%s' does not apply; %s",
                              cm->m.name, kn[cm->m.kind], kk,
                              cm->m.kind == HK_MAT_ISOTROPIC
                                  ? "give type: orthotropic (E1 .. G23) or type: anisotropic (D)"
                              : cm->m.kind == HK_MAT_ORTHOTROPIC
                                  ? "an orthotropic material takes E1 E2 E3 nu12 nu13 nu23 G12 "
                                    "G13 G23"
                                  : "an anisotropic material takes its stiffness matrix D");
        }
        if (cm->m.kind == HK_MAT_ISOTROPIC) {
            if (!(v = lookup(m, "E")))
                return err_at(x, m, "material '%s' needs E (Young's modulus)", cm->m.name);
            HK_CALL(parse_double(x, v, "E", &cm->m.E));
            if (!(cm->m.E > 0))
                return err_at(
                    x, v,
                    "E = %g of material '%s' must be positive (Young's modulus, in Pa for SI)",
                    cm->m.E, cm->m.name);
            if (!(v = lookup(m, "nu")))
                return err_at(x, m, "material '%s' needs nu (Poisson's ratio)", cm->m.name);
            HK_CALL(parse_double(x, v, "nu", &cm->m.nu));
            if (!(cm->m.nu > -1 && cm->m.nu < 0.5))
                return err_at(x, v,
                              "nu = %g of material '%s' must be in (-1, 0.5); 0.5 is "
                              "incompressible, which displacement elements cannot model",
                              cm->m.nu, cm->m.name);
        } else if (cm->m.kind == HK_MAT_ORTHOTROPIC) {
            for (int k = 0; k < 9; k++)
                HK_CALL(material_number(x, m, ortho_keys[k], cm->m.name,
                                        k < 3   ? "Young's modulus along a material axis"
                                        : k < 6 ? "Poisson's ratio of two material axes"
                                                : "shear modulus of two material axes",
                                        k < 3 || k >= 6, &cm->m.ortho[k]));
        } else {
            /* 3D: xx yy zz xy yz xz; axisymmetric: rr zz tt rz; plane: xx yy xy */
            const int nD = c->dim == 3 ? 6 : c->analysis == HK_AXISYMMETRIC ? 4 : 3;
            if (!(v = lookup(m, "D")))
                return err_at(x, m, "anisotropic material '%s' needs D, its %dx%d stiffness matrix",
                              cm->m.name, nD, nD);
            HK_CALL(read_stiffness(x, v, cm->m.name, nD, cm->m.D));
        }
        if ((v = lookup(m, "integration"))) {
            const char *t = scalar(v);
            static const char *const names[] = {"auto", "full", "selective"};
            int k = 0;
            while (k < 3 && !(t && !strcmp(t, names[k])))
                k++;
            if (k == 3)
                return err_at(x, v,
                              "integration of material '%s' must be auto, full or selective, got "
                              "'%s'",
                              cm->m.name, t ? t : "a collection");
            if (k && cm->m.kind != HK_MAT_ISOTROPIC)
                return err_at(x, v,
                              "integration of material '%s' applies to isotropic materials only "
                              "(their volumetric part); leave it out",
                              cm->m.name);
            cm->m.integration = k; /* HK_INTEGRATION_AUTO, _FULL, _SELECTIVE */
        }
        if ((v = lookup(m, "orientation"))) HK_CALL(read_orientation(x, v, &cm->m));
        if ((v = lookup(m, "alpha"))) HK_CALL(read_alpha(x, v, &cm->m));
        /* positive definiteness and the rest, with the library's own sentence */
        {
            hk_law law;
            if (hk_material_law(&cm->m, c->analysis, c->dim, &law)) {
                char msg[1024];
                snprintf(msg, sizeof msg, "%s", hk_error_message());
                struct fy_node *at = cm->m.kind == HK_MAT_ANISOTROPIC ? lookup(m, "D")
                                     : tnode                          ? tnode
                                                                      : m;
                return err_at(x, at, "%s", msg);
            }
        }
        if ((v = lookup(m, "density"))) {
            HK_CALL(parse_double(x, v, "density", &cm->m.rho));
            if (!(cm->m.rho >= 0))
                return err_at(x, v, "density = %g of material '%s' must not be negative", cm->m.rho,
                              cm->m.name);
        }
        if ((v = lookup(m, "regions"))) {
            if (fy_node_get_type(v) == FYNT_SCALAR) {
                cm->nregions = 1;
            } else if (fy_node_get_type(v) == FYNT_SEQUENCE && fy_node_sequence_item_count(v) > 0) {
                cm->nregions = fy_node_sequence_item_count(v);
            } else {
                return err_at(x, v,
                              "regions of material '%s' must be a list of region names like [body]",
                              cm->m.name);
            }
            HK_CALL(hk_calloc((size_t)cm->nregions, sizeof *cm->regions, &cm->regions));
            HK_CALL(hk_calloc((size_t)cm->nregions, sizeof *cm->region_loc, &cm->region_loc));
            for (int r = 0; r < cm->nregions; r++) {
                struct fy_node *e =
                    fy_node_get_type(v) == FYNT_SCALAR ? v : fy_node_sequence_get_by_index(v, r);
                HK_CALL(parse_name(x, e, "region name", cm->regions[r], HK_CASE_NAME));
                cm->region_loc[r] = node_loc(x, e);
            }
        } else if (++nall > 1) {
            return err_at(x, m,
                          "only one material may leave out 'regions' (it takes every region no "
                          "other material names); give material '%s' its regions",
                          cm->m.name);
        }
    }
    return 0;
}

/* A component name x/y/z -> index, checked against the dimension. */
static int component(ctx *x, struct fy_node *n, int *ci)
{
    const char *s = scalar(n);
    for (int i = 0; s && i < x->c->dim; i++)
        if (!strcmp(s, comp_names[i])) return *ci = i, 0;
    if (s && !strcmp(s, "z"))
        return err_at(x, n, "component z does not exist in a 2D analysis; use x or y");
    return err_at(x, n, "'%s' is not a displacement component; use %s", s ? s : "a collection",
                  x->c->dim == 2 ? "x or y" : "x, y or z");
}

/* A stiffness: a number >= 0. */
static int parse_stiffness(ctx *x, struct fy_node *n, const char *what, double *k)
{
    HK_CALL(parse_double(x, n, what, k));
    if (*k < 0)
        return err_at(x, n, "%s = %g is negative; a spring stiffness must be >= 0", what, *k);
    return 0;
}

/* The spring keys of supports[i] (type: spring): normal, tangential (N/m^3) and stiffness
 * [kx, ky(, kz)] (N/m per node). */
static int read_spring(ctx *x, struct fy_node *s, const char *what, hk_case_support *cs)
{
    struct fy_node *kn = lookup(s, "normal"), *kt = lookup(s, "tangential"),
                   *ks = lookup(s, "stiffness");
    if (lookup(s, "fix"))
        return err_at(x, key_of(s, "fix"),
                      "%s is a spring, so fix does not apply; give normal/tangential (per area) "
                      "or stiffness (per node), or drop type: spring",
                      what);
    if (!kn && !kt && !ks)
        return err_at(x, s,
                      "%s (type: spring) needs normal: K and/or tangential: K (stiffness per "
                      "area, N/m^3), or stiffness: [kx, ky%s] (per node, N/m)",
                      what, x->c->dim == 3 ? ", kz" : "");
    cs->kind = HK_SUPPORT_SPRING;
    if (kn) HK_CALL(parse_stiffness(x, kn, "normal stiffness", &cs->k_normal));
    if (kt) HK_CALL(parse_stiffness(x, kt, "tangential stiffness", &cs->k_tangential));
    if (ks) {
        HK_CALL(parse_vec(x, ks, "stiffness", cs->k_node));
        for (int i = 0; i < 3; i++)
            if (cs->k_node[i] < 0)
                return err_at(x, ks,
                              "stiffness[%d] = %g is negative; a spring stiffness must be >= 0", i,
                              cs->k_node[i]);
    }
    return 0;
}

static int read_supports(ctx *x, struct fy_node *root)
{
    static const char *const keys[] = {"boundary",   "fix",       "type",         "normal",
                                       "tangential", "stiffness", "moment_about", NULL};
    hk_case *c = x->c;
    struct fy_node *ss = lookup(root, "supports");
    if (!ss)
        return err_at(x, root,
                      "the case has no 'supports'; the body must be held, e.g. supports: "
                      "[{boundary: fixed, fix: all}]");
    if (fy_node_get_type(ss) != FYNT_SEQUENCE || fy_node_sequence_item_count(ss) == 0)
        return err_at(x, key_of(root, "supports"),
                      "supports must be a list of {boundary: NAME, fix: ...}");
    int n = fy_node_sequence_item_count(ss);
    HK_CALL(hk_calloc((size_t)n, sizeof *c->supports, &c->supports));
    c->nsupports = n;
    for (int i = 0; i < n; i++) {
        struct fy_node *s = fy_node_sequence_get_by_index(ss, i), *b, *f;
        hk_case_support *cs = &c->supports[i];
        char what[64];
        snprintf(what, sizeof what, "supports[%d]", i);
        HK_CALL(check_mapping(x, s, what, keys));
        if (!(b = lookup(s, "boundary"))) return err_at(x, s, "%s needs boundary: NAME", what);
        struct fy_node *ty = lookup(s, "type"), *ma = lookup(s, "moment_about");
        if (ma) HK_CALL(parse_vec(x, ma, "moment_about", cs->moment_point));
        const char *tyname = ty ? scalar(ty) : "fixed";
        if (!tyname || (strcmp(tyname, "fixed") && strcmp(tyname, "spring")))
            return err_at(x, ty, "%s has type '%s'; use fixed (the default) or spring", what,
                          tyname ? tyname : "a collection");
        if (!strcmp(tyname, "spring")) {
            HK_CALL(parse_name(x, b, "boundary", cs->boundary, sizeof cs->boundary));
            cs->loc = node_loc(x, b);
            HK_CALL(read_spring(x, s, what, cs));
            continue;
        }
        static const char *const spring_keys[] = {"normal", "tangential", "stiffness"};
        for (int k = 0; k < 3; k++)
            if (lookup(s, spring_keys[k]))
                return err_at(x, key_of(s, spring_keys[k]),
                              "%s sets %s, which belongs to springs; add type: spring", what,
                              spring_keys[k]);
        if (!(f = lookup(s, "fix")))
            return err_at(x, s, "%s needs fix: all, [x, y] or {x: 0.0, y: 1e-3}", what);
        HK_CALL(parse_name(x, b, "boundary", cs->boundary, sizeof cs->boundary));
        cs->loc = node_loc(x, b);
        int ci;
        switch (fy_node_get_type(f)) {
        case FYNT_SCALAR:
            if (!strcmp(scalar(f), "all")) {
                cs->mask = (1u << c->dim) - 1;
            } else {
                HK_CALL(component(x, f, &ci));
                cs->mask = 1u << ci;
            }
            break;
        case FYNT_SEQUENCE: {
            void *it = NULL;
            struct fy_node *e;
            if (!fy_node_sequence_item_count(f))
                return err_at(x, f, "fix lists no component; use [x, y]");
            while ((e = fy_node_sequence_iterate(f, &it))) {
                HK_CALL(component(x, e, &ci));
                cs->mask |= 1u << ci;
            }
            break;
        }
        case FYNT_MAPPING: {
            void *it = NULL;
            struct fy_node_pair *p;
            if (!fy_node_mapping_item_count(f))
                return err_at(x, f, "fix gives no component; use {x: 0.0}");
            while ((p = fy_node_mapping_iterate(f, &it))) {
                HK_CALL(component(x, fy_node_pair_key(p), &ci));
                char w[64];
                snprintf(w, sizeof w, "prescribed displacement %s", comp_names[ci]);
                HK_CALL(parse_double(x, fy_node_pair_value(p), w, &cs->value[ci]));
                cs->mask |= 1u << ci;
            }
            break;
        }
        default:
            return err_at(x, f, "fix must be all, a list [x, y] or a mapping {x: 0.0, y: 1e-3}");
        }
    }
    return 0;
}

/* Gravity anywhere needs every material's density; where names the load case (or "").
 */
static int need_density(const hk_case *c, const double gravity[3], const char *where)
{
    int need_rho = 0;
    for (int d = 0; d < 3; d++)
        need_rho |= gravity[d] != 0;
    for (int i = 0; need_rho && i < c->nmaterials; i++)
        if (c->materials[i].m.rho == 0)
            return hk_case_error(c, c->materials[i].loc,
                                 "gravity is set%s but material '%s' has no "
                                 "density; add density (kg/m^3 in SI)",
                                 where, c->materials[i].m.name);
    return 0;
}

/* remote_force: {boundary: B, point: [x, y(, z)], force: [...], moment: ..., coupling:
 * distributing|rigid}; the moment is a number (about z) in 2D, a vector in 3D. */
static int read_remote(ctx *x, struct fy_node *v, const char *what, hk_case_load_item *cl)
{
    static const char *const keys[] = {"boundary", "point", "force", "moment", "coupling", NULL};
    HK_CALL(check_mapping(x, v, what, keys));
    struct fy_node *b = lookup(v, "boundary"), *pt = lookup(v, "point"), *f = lookup(v, "force"),
                   *mo = lookup(v, "moment"), *cp = lookup(v, "coupling");
    if (!b) return err_at(x, v, "%s needs boundary: NAME (the coupled boundary)", what);
    if (!pt)
        return err_at(x, v,
                      "%s needs point: [%s] (the reference point where force and moment "
                      "act)",
                      what, x->c->dim == 2 ? "x, y" : "x, y, z");
    if (!f && !mo) return err_at(x, v, "%s needs force: [...] and/or moment: ...", what);
    cl->kind = HK_LOAD_REMOTE;
    HK_CALL(parse_name(x, b, "boundary", cl->boundary, sizeof cl->boundary));
    cl->loc = node_loc(x, b);
    HK_CALL(parse_vec(x, pt, "point", cl->point));
    if (f) HK_CALL(parse_vec(x, f, "force", cl->value));
    if (mo && x->c->dim == 2) {
        if (fy_node_get_type(mo) != FYNT_SCALAR)
            return err_at(x, mo, "moment in a 2D analysis is one number (about z), like 250");
        HK_CALL(parse_double(x, mo, "moment", &cl->moment[2]));
    } else if (mo) {
        HK_CALL(parse_vec(x, mo, "moment", cl->moment));
    }
    cl->coupling = HK_COUPLING_DISTRIBUTING;
    if (cp) {
        const char *c = scalar(cp);
        if (c && !strcmp(c, "rigid"))
            cl->coupling = HK_COUPLING_RIGID;
        else if (!c || strcmp(c, "distributing"))
            return err_at(x, cp, "coupling '%s' is not known; use distributing or rigid",
                          c ? c : "(a collection)");
    }
    return 0;
}

/* One loads: list (the top level's, or a load case's) into loads/gravity/body_force. prefix
 * names the list in messages: "loads" or "load_cases[1].loads". */
static int read_load_list(ctx *x, struct fy_node *ls, struct fy_node *keynode, const char *prefix,
                          int *nloads, hk_case_load_item **loads, double gravity[3],
                          double body_force[3])
{
    static const char *const kinds[] = {"traction",     "pressure", "force",      "force_split",
                                        "nodal_force",  "gravity",  "body_force", "temperature",
                                        "remote_force", NULL};
    static const char *const keys[] = {"boundary", "value", NULL};
    static const char *const tkeys[] = {"value", "regions", "file", NULL};
    if (fy_node_get_type(ls) != FYNT_SEQUENCE)
        return err_at(x, keynode,
                      "%s must be a list like [{traction: {boundary: right, "
                      "value: [0, -1e6]}}]",
                      prefix);
    int n = fy_node_sequence_item_count(ls), cap = n;
    for (int i = 0; i < n; i++) { /* a temperature with a list of regions: one item each */
        struct fy_node *t = lookup(fy_node_sequence_get_by_index(ls, i), "temperature"), *r;
        if (t && fy_node_get_type(t) == FYNT_MAPPING && (r = lookup(t, "regions")) &&
            fy_node_get_type(r) == FYNT_SEQUENCE)
            cap += fy_node_sequence_item_count(r);
    }
    if (cap) HK_CALL(hk_calloc((size_t)cap, sizeof **loads, loads));
    for (int i = 0; i < n; i++) {
        struct fy_node *l = fy_node_sequence_get_by_index(ls, i);
        char what[96];
        snprintf(what, sizeof what, "%s[%d]", prefix, i);
        HK_CALL(check_mapping(x, l, what, kinds));
        if (fy_node_mapping_item_count(l) != 1)
            return err_at(x, l,
                          "each load is one of traction, pressure, force, force_split, "
                          "nodal_force, gravity, body_force, temperature, remote_force; start a "
                          "new '- ' item for each");
        void *it = NULL;
        struct fy_node_pair *p = fy_node_mapping_iterate(l, &it);
        const char *kind = scalar(fy_node_pair_key(p));
        struct fy_node *v = fy_node_pair_value(p);
        if (!strcmp(kind, "gravity") || !strcmp(kind, "body_force")) {
            double g[3];
            HK_CALL(parse_vec(x, v, kind, g));
            double *dst = kind[0] == 'g' ? gravity : body_force;
            for (int d = 0; d < 3; d++)
                dst[d] += g[d];
            continue;
        }
        if (!strcmp(kind, "temperature")) {
            /* temperature: DT (every region) or {value: DT, regions: [a, b]} */
            snprintf(what, sizeof what, "%s[%d].temperature", prefix, i);
            struct fy_node *tv = v, *rs = NULL;
            if (fy_node_get_type(v) != FYNT_SCALAR) {
                HK_CALL(check_mapping(x, v, what, tkeys));
                struct fy_node *fn = lookup(v, "file");
                if (fn) { /* a nodal field: one item, its values come at binding */
                    if (lookup(v, "value") || lookup(v, "regions"))
                        return err_at(x, v,
                                      "%s has a file, so value and regions do not apply; "
                                      "give either file: T.csv or value: DT (and regions)",
                                      what);
                    hk_case_load_item *cl = &(*loads)[(*nloads)++];
                    cl->kind = HK_LOAD_TEMPERATURE;
                    cl->loc = node_loc(x, fn);
                    HK_CALL(resolve_path(x, fn, "temperature file", cl->file));
                    continue;
                }
                if (!(tv = lookup(v, "value")))
                    return err_at(x, v,
                                  "%s needs value: DT (the temperature change) or file: "
                                  "T.csv (a nodal field)",
                                  what);
                rs = lookup(v, "regions");
            }
            double dT;
            HK_CALL(parse_double(x, tv, "temperature change", &dT));
            int nr = !rs                                     ? 0
                     : fy_node_get_type(rs) == FYNT_SEQUENCE ? fy_node_sequence_item_count(rs)
                                                             : 1;
            if (rs && nr == 0)
                return err_at(x, rs, "regions of %s must name at least one region", what);
            for (int r = 0; r < (nr ? nr : 1); r++) {
                hk_case_load_item *cl = &(*loads)[(*nloads)++];
                cl->kind = HK_LOAD_TEMPERATURE;
                cl->value[0] = dT;
                cl->loc = node_loc(x, tv);
                if (rs) {
                    struct fy_node *e = fy_node_get_type(rs) == FYNT_SEQUENCE
                                            ? fy_node_sequence_get_by_index(rs, r)
                                            : rs;
                    HK_CALL(parse_name(x, e, "region name", cl->boundary, sizeof cl->boundary));
                    cl->loc = node_loc(x, e);
                }
            }
            continue;
        }
        hk_case_load_item *cl = &(*loads)[(*nloads)++];
        snprintf(what, sizeof what, "%s[%d].%s", prefix, i, kind);
        if (!strcmp(kind, "remote_force")) {
            HK_CALL(read_remote(x, v, what, cl));
            continue;
        }
        HK_CALL(check_mapping(x, v, what, keys));
        struct fy_node *b = lookup(v, "boundary"), *val = lookup(v, "value");
        if (!b || !val)
            return err_at(x, v, "%s needs boundary: NAME and value: %s", what,
                          !strcmp(kind, "pressure") ? "P" : "[vx, vy(, vz)]");
        HK_CALL(parse_name(x, b, "boundary", cl->boundary, sizeof cl->boundary));
        cl->loc = node_loc(x, b);
        if (!strcmp(kind, "pressure")) {
            cl->kind = HK_LOAD_PRESSURE;
            HK_CALL(parse_double(x, val, "pressure value", &cl->value[0]));
        } else {
            cl->kind = !strcmp(kind, "traction")      ? HK_LOAD_TRACTION
                       : !strcmp(kind, "force")       ? HK_LOAD_FORCE
                       : !strcmp(kind, "force_split") ? HK_LOAD_FORCE_SPLIT
                                                      : HK_LOAD_NODAL;
            HK_CALL(parse_vec(x, val, what, cl->value));
        }
    }
    return 0;
}

static int read_loads(ctx *x, struct fy_node *root)
{
    hk_case *c = x->c;
    struct fy_node *ls = lookup(root, "loads");
    if (!ls) return 0; /* prescribed displacements alone may drive a case */
    HK_CALL(read_load_list(x, ls, key_of(root, "loads"), "loads", &c->nloads, &c->loads,
                           c->gravity, c->body_force));
    return need_density(c, c->gravity, "");
}

/* The k-th rigid remote force of a load list, NULL when there are fewer. */
static const hk_case_load_item *rigid_item(const hk_case_loadcase *lc, int k)
{
    for (int i = 0; i < lc->nloads; i++)
        if (lc->loads[i].kind == HK_LOAD_REMOTE && lc->loads[i].coupling == HK_COUPLING_RIGID &&
            k-- == 0)
            return &lc->loads[i];
    return NULL;
}

/* A rigid coupling is part of K, which the load cases share: every case must couple the same
 * boundaries to the same points, in the same order (their forces and moments may differ). */
static int same_rigid_couplings(const hk_case *c)
{
    for (int i = 1; i < c->nloadcases; i++)
        for (int k = 0;; k++) {
            const hk_case_load_item *a = rigid_item(&c->loadcases[0], k),
                                    *b = rigid_item(&c->loadcases[i], k);
            if (!a && !b) break;
            const hk_case_load_item *odd = b ? b : a;
            if (!a || !b || strcmp(a->boundary, b->boundary) ||
                memcmp(a->point, b->point, sizeof a->point))
                return hk_case_error(
                    c, odd->loc,
                    "a rigid coupling is part of the stiffness matrix, which the load cases share, "
                    "but load case '%s' couples %s than load case '%s'; give every load case the "
                    "same rigid remote forces (boundary and point; force and moment may differ), "
                    "or use coupling: distributing",
                    c->loadcases[i].name,
                    !a || !b ? "a different number of boundaries" : "another boundary or point",
                    c->loadcases[0].name);
        }
    return 0;
}

/* load_cases: [{name: WORD, loads: [...]}, ...]: several right-hand sides over the same mesh,
 * materials and supports; exclusive with the top-level loads. */
static int read_load_cases(ctx *x, struct fy_node *root)
{
    static const char *const keys[] = {"name", "loads", NULL};
    hk_case *c = x->c;
    struct fy_node *lcs = lookup(root, "load_cases");
    if (!lcs) return 0;
    if (lookup(root, "loads")) {
        hk_case_loc a = node_loc(x, key_of(root, "loads"));
        char where[64] = "";
        if (a.line > 0) snprintf(where, sizeof where, " (line %d)", a.line);
        return err_at(x, key_of(root, "load_cases"),
                      "a case has either loads%s or load_cases, not both; move the top-level "
                      "loads into a load case: load_cases: [{name: NAME, loads: [...]}]",
                      where);
    }
    if (fy_node_get_type(lcs) != FYNT_SEQUENCE || fy_node_sequence_item_count(lcs) == 0)
        return err_at(x, key_of(root, "load_cases"),
                      "load_cases must be a non-empty list like [{name: tip, loads: "
                      "[{force: {boundary: tip, value: [0, 0, -1000]}}]}, ...]");
    int n = fy_node_sequence_item_count(lcs);
    HK_CALL(hk_calloc((size_t)n, sizeof *c->loadcases, &c->loadcases));
    c->nloadcases = n;
    for (int i = 0; i < n; i++) {
        struct fy_node *item = fy_node_sequence_get_by_index(lcs, i), *nm, *ls;
        hk_case_loadcase *lc = &c->loadcases[i];
        char what[64];
        snprintf(what, sizeof what, "load_cases[%d]", i);
        HK_CALL(check_mapping(x, item, what, keys));
        if (!(nm = lookup(item, "name")))
            return err_at(x, item,
                          "%s needs name: WORD (it names the output file <stem>-WORD.vtu)", what);
        HK_CALL(parse_name(x, nm, "load case name", lc->name, sizeof lc->name));
        lc->loc = node_loc(x, nm);
        for (const char *q = lc->name; *q; q++)
            if (!isalnum((unsigned char)*q) && *q != '_' && *q != '-' && *q != '.')
                return err_at(x, nm,
                              "load case name '%s' has '%c'; it becomes part of a file name, "
                              "so use letters, digits, '_', '-' and '.' only",
                              lc->name, *q);
        if (lc->name[0] == '.' || lc->name[0] == '-')
            return err_at(x, nm, "load case name '%s' must start with a letter, digit or '_'",
                          lc->name);
        for (int j = 0; j < i; j++)
            if (!strcmp(c->loadcases[j].name, lc->name))
                return err_at(x, nm,
                              "load case name '%s' is already used by load_cases[%d]; give each "
                              "load case its own name",
                              lc->name, j);
        if (!(ls = lookup(item, "loads")))
            return err_at(x, item, "%s ('%s') needs loads: [...] (the same kinds as loads:)",
                          what, lc->name);
        char prefix[96];
        snprintf(prefix, sizeof prefix, "load_cases[%d].loads", i);
        HK_CALL(read_load_list(x, ls, key_of(item, "loads"), prefix, &lc->nloads, &lc->loads,
                               lc->gravity, lc->body_force));
        char where[HK_CASE_NAME + 32];
        snprintf(where, sizeof where, " in load case '%s'", lc->name);
        HK_CALL(need_density(c, lc->gravity, where));
    }
    return same_rigid_couplings(c);
}

static int add_solver_key(ctx *x, const char *key, struct fy_node *val, struct fy_node *keynode)
{
    hk_case *c = x->c;
    const char *s = scalar(val);
    if (!s) return err_at(x, keynode, "solver option '%s' must have a single value", key);
    if (!strcmp(s, "true") || !strcmp(s, "yes"))
        s = "1";
    else if (!strcmp(s, "false") || !strcmp(s, "no"))
        s = "0";
    if (strlen(key) >= HK_CASE_NAME)
        return err_at(x, keynode, "solver option name '%s' is too long", key);
    if (strchr(s, ' ') || strchr(s, '='))
        return err_at(x, val, "solver option %s has a value with a space or '=': '%s'", key, s);
    void *tmp = realloc(c->solver_keys, (size_t)(c->nsolver_keys + 1) * sizeof *c->solver_keys);
    if (!tmp)
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__, "out of memory reading the case");
    c->solver_keys = tmp;
    tmp = realloc(c->solver_loc, (size_t)(c->nsolver_keys + 1) * sizeof *c->solver_loc);
    if (!tmp)
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__, "out of memory reading the case");
    c->solver_loc = tmp;
    strcpy(c->solver_keys[c->nsolver_keys], key);
    c->solver_loc[c->nsolver_keys] = node_loc(x, val);
    c->nsolver_keys++;
    return hk_options_set(c->solver, key, s);
}

/* Solver options: scalars by name; a nested mapping adds its keys with "prefix.". */
static int read_solver_map(ctx *x, struct fy_node *m, const char *prefix)
{
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(m, &it))) {
        const char *k = scalar(fy_node_pair_key(p));
        struct fy_node *v = fy_node_pair_value(p);
        if (!k) return err_at(x, fy_node_pair_key(p), "solver has a key that is not a plain word");
        char key[HK_CASE_NAME * 2];
        snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", k);
        if (v && fy_node_get_type(v) == FYNT_MAPPING)
            HK_CALL(read_solver_map(x, v, key));
        else
            HK_CALL(add_solver_key(x, key, v, fy_node_pair_key(p)));
    }
    return 0;
}

static int read_solver(ctx *x, struct fy_node *root)
{
    hk_case *c = x->c;
    HK_CALL(hk_options_create(&c->solver));
    struct fy_node *s = lookup(root, "solver");
    if (!s) return 0;
    if (fy_node_get_type(s) != FYNT_MAPPING)
        return err_at(x, key_of(root, "solver"),
                      "solver must be a mapping of options like "
                      "{method: cg, pc: jacobi, tol: 1e-8}");
    return read_solver_map(x, s, "");
}

/* output.matrix, output.rhs, output.coordinates: Matrix Market files of the system. */
static int read_output_system(ctx *x, struct fy_node *o)
{
    static const char *const key[] = {"matrix", "rhs", "coordinates"};
    hk_case *c = x->c;
    char *dst[] = {c->matrix_file, c->rhs_file, c->coords_file};
    for (int i = 0; i < 3; i++) {
        struct fy_node *n = lookup(o, key[i]);
        if (!n) continue;
        char what[32];
        snprintf(what, sizeof what, "output.%s", key[i]);
        HK_CALL(resolve_path(x, n, what, dst[i]));
        size_t l = strlen(dst[i]);
        if (l < 4 || strcmp(dst[i] + l - 4, ".mtx"))
            return err_at(x, n, "%s must end in .mtx (Matrix Market), like %s: %s.mtx", what,
                          key[i], i == 0 ? "K" : i == 1 ? "f" : "xyz");
        if (i == 1 && c->nloadcases)
            return err_at(x, n,
                          "output.rhs holds one right-hand side; with load_cases, move the "
                          "loads of one case to loads: to export its right-hand side");
    }
    return 0;
}

static int read_output(ctx *x, struct fy_node *root)
{
    static const char *const keys[] = {"file",   "fields", "compress",    "ascii",
                                       "matrix", "rhs",    "coordinates", NULL};
    static const char *const fnames[] = {"displacement", "strain",   "stress",      "von_mises",
                                         "principal",    "reaction", "cell_stress", NULL};
    hk_case *c = x->c;
    struct fy_node *o = lookup(root, "output"), *n;
    c->fields = HK_FIELD_ALL;
    c->compress = 1;
    int k = c->dir[0] ? snprintf(c->output, sizeof c->output, "%s/%s.vtu", c->dir, c->name)
                      : snprintf(c->output, sizeof c->output, "%s.vtu", c->name);
    if (k >= (int)sizeof c->output)
        return hk_case_error(c, (hk_case_loc){0, 0, -1},
                             "the output path is too long; set output.file");
    if (!o) return 0;
    HK_CALL(check_mapping(x, o, "output", keys));
    if ((n = lookup(o, "file"))) {
        HK_CALL(resolve_path(x, n, "output.file", c->output));
        size_t l = strlen(c->output);
        if (l < 4 || strcmp(c->output + l - 4, ".vtu"))
            return err_at(x, n,
                          "output.file must end in .vtu (VTK unstructured grid for ParaView)");
    }
    HK_CALL(read_output_system(x, o));
    if ((n = lookup(o, "compress"))) HK_CALL(parse_bool(x, n, "output.compress", &c->compress));
    if ((n = lookup(o, "ascii"))) HK_CALL(parse_bool(x, n, "output.ascii", &c->ascii));
    if ((n = lookup(o, "fields"))) {
        if (fy_node_get_type(n) != FYNT_SEQUENCE)
            return err_at(x, n, "output.fields must be a list like [displacement, von_mises]");
        c->fields = 0;
        void *it = NULL;
        struct fy_node *e;
        while ((e = fy_node_sequence_iterate(n, &it))) {
            const char *s = scalar(e);
            int k = -1;
            for (int i = 0; s && fnames[i]; i++)
                if (!strcmp(s, fnames[i])) k = i;
            if (k < 0) {
                char hint[512];
                key_hint(s ? s : "", fnames, hint, sizeof hint);
                return err_at(x, e, "unknown output field '%s'; %s", s ? s : "?", hint);
            }
            c->fields |= 1u << k;
        }
    }
    return 0;
}

/* ---- --set overrides ------------------------------------------------------------------ */

static int remember_set(ctx *x, struct fy_node *n, int set)
{
    if (x->nsetn == x->capsetn) {
        int cap = x->capsetn ? 2 * x->capsetn : 8;
        void *tmp = realloc(x->setn, (size_t)cap * sizeof *x->setn);
        if (!tmp) return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__, "out of memory");
        x->setn = tmp;
        x->capsetn = cap;
    }
    x->setn[x->nsetn].node = n;
    x->setn[x->nsetn].set = set;
    x->nsetn++;
    return 0;
}

/* Apply "a.b.c=value" to the tree. At each mapping the longest dotted prefix that is a key
 * wins, so solver keys with dots (pc.poly.degree) work; a missing key is added (and then
 * checked by the section reader like any other key). */
static int apply_set_path(ctx *x, int set, char *path, struct fy_node *val, int *attached);

static int apply_set(ctx *x, int set)
{
    hk_case *c = x->c;
    const char *word = c->sets[set];
    const char *eq = strchr(word, '=');
    hk_case_loc here = {0, 0, set};
    if (!eq || eq == word)
        return hk_case_error(c, here,
                             "an override must look like key.path=value, e.g. "
                             "--set solver.method=pipecg");
    char path[512];
    snprintf(path, sizeof path, "%.*s", (int)(eq - word), word);
    const char *vtext = eq + 1;
    struct fy_node *val = *vtext ? fy_node_build_from_string(x->fyd, vtext, FY_NT) : NULL;
    if (!val) val = fy_node_create_scalar_copy(x->fyd, vtext, FY_NT);
    if (!val) return hk_case_error(c, here, "the value '%s' could not be read", vtext);
    int attached = 0;
    int err = remember_set(x, val, set);
    if (!err) err = apply_set_path(x, set, path, val, &attached);
    if (!attached) fy_node_free(val);
    return err;
}

/* Walk path from the root and put val there; *attached when the tree owns val. */
static int apply_set_path(ctx *x, int set, char *path, struct fy_node *val, int *attached)
{
    hk_case *c = x->c;
    hk_case_loc here = {0, 0, set};
    struct fy_node *cur = fy_document_root(x->fyd);
    char *rest = path;
    for (;;) {
        enum fy_node_type t = fy_node_get_type(cur);
        if (t == FYNT_MAPPING) {
            /* longest prefix of rest (at dots) that is a key */
            size_t len = strlen(rest);
            struct fy_node_pair *pr = NULL;
            for (;;) {
                pr = fy_node_mapping_lookup_pair_by_string(cur, rest, len);
                /* a shorter prefix must lead into a section (solver: pc=poly, pc.poly.degree=6) */
                if (pr &&
                    (rest[len] == 0 || fy_node_get_type(fy_node_pair_value(pr)) != FYNT_SCALAR))
                    break;
                pr = NULL;
                while (len > 0 && rest[len - 1] != '.')
                    len--;
                if (len == 0) break;
                len--; /* drop the dot */
            }
            if (pr && rest[len] == 0) {
                if (fy_node_pair_set_value(pr, val))
                    return hk_case_error(c, here, "could not set '%s'", path);
                *attached = 1;
                return 0;
            }
            if (pr) {
                cur = fy_node_pair_value(pr);
                rest += len + 1;
                continue;
            }
            /* absent: inside solver the whole rest is one option name; elsewhere nest */
            int in_solver = cur == lookup(fy_document_root(x->fyd), "solver");
            char *dot = in_solver ? NULL : strchr(rest, '.');
            if (!dot) {
                struct fy_node *k = fy_node_create_scalar_copy(x->fyd, rest, FY_NT);
                if (!k || fy_node_mapping_append(cur, k, val)) {
                    fy_node_free(k);
                    return hk_case_error(c, here, "could not add '%s'", path);
                }
                *attached = 1;
                HK_CALL(remember_set(x, k, set));
                return 0;
            }
            *dot = 0;
            /* the key is there but holds a value or nothing (geometry:), not a section */
            if (fy_node_mapping_lookup_pair_by_string(cur, rest, FY_NT)) {
                *dot = '.';
                return hk_case_error(c, here,
                                     "'%.*s' is a single value or empty, not a section; there "
                                     "is no '%s' below it (give it a mapping in the case file)",
                                     (int)(dot - path), path, dot + 1);
            }
            struct fy_node *k = fy_node_create_scalar_copy(x->fyd, rest, FY_NT);
            struct fy_node *m = fy_node_create_mapping(x->fyd);
            if (!k || !m || fy_node_mapping_append(cur, k, m)) {
                fy_node_free(k);
                fy_node_free(m);
                return hk_case_error(c, here, "could not add '%s'", path);
            }
            HK_CALL(remember_set(x, k, set));
            HK_CALL(remember_set(x, m, set));
            cur = m;
            rest = dot + 1;
        } else if (t == FYNT_SEQUENCE) {
            char *end;
            long idx = strtol(rest, &end, 10);
            int cnt = fy_node_sequence_item_count(cur);
            if (end == rest || (*end && *end != '.') || idx < 0 || idx >= cnt)
                return hk_case_error(c, here,
                                     "'%.*s' is a list of %d items; address an item by its index "
                                     "0..%d (not '%.*s'), e.g. materials.0.E=1e9",
                                     (int)(rest - path - 1 > 0 ? rest - path - 1 : 0), path, cnt,
                                     cnt - 1, (int)strcspn(rest, "."), rest);
            struct fy_node *item = fy_node_sequence_get_by_index(cur, (int)idx);
            if (!*end) {
                if (fy_node_sequence_insert_before(cur, item, val))
                    return hk_case_error(c, here, "could not set '%s'", path);
                *attached = 1;
                fy_node_free(fy_node_sequence_remove(cur, item));
                return 0;
            }
            cur = item;
            rest = end + 1;
        } else {
            return hk_case_error(c, here,
                                 "'%.*s' is a single value, not a section; there is no '%s' "
                                 "below it",
                                 (int)(rest - path - 1 > 0 ? rest - path - 1 : 0), path, rest);
        }
    }
}

/* ---- load / free ---------------------------------------------------------------------- */

static void case_names(hk_case *c, const char *path)
{
    snprintf(c->path, sizeof c->path, "%s", path);
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(c->dir, sizeof c->dir, "%.*s", (int)(slash - path), path);
    if (slash && slash == path) strcpy(c->dir, "/");
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    int len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    if (len >= HK_CASE_NAME) len = HK_CASE_NAME - 1;
    snprintf(c->name, sizeof c->name, "%.*s", len, base);
}

int hk_case_load(const char *path, int nsets, const char *const *sets, hk_case *c)
{
    static const char *const top[] = {"title", "geometry", "analysis", "materials", "supports",
                                      "loads", "load_cases", "solver",   "output",   NULL};
    int ierr = 0;
    ctx x = {.c = c};
    struct fy_diag *diag = NULL;
    memset(c, 0, sizeof *c);
    HK_CHECK(path && *path, HK_ERR_ARG, "hk_case_load: no case file given");
    case_names(c, path);
    if (nsets > 0) {
        HK_TRY(hk_calloc((size_t)nsets, sizeof *c->sets, &c->sets));
        c->nsets = nsets;
        for (int i = 0; i < nsets; i++)
            snprintf(c->sets[i], sizeof c->sets[i], "%s", sets[i]);
    }

    struct stat st;
    HK_TRY_CHECK(stat(path, &st) || !S_ISDIR(st.st_mode), HK_ERR_IO,
                 "'%s' is a folder, not a case file; give the path of the .yaml file", path);
    FILE *f = fopen(path, "rb");
    HK_TRY_CHECK(f, HK_ERR_IO, "cannot open case file '%s': %s", path, strerror(errno));
    fclose(f);

    /* Collect libfyaml's diagnostics instead of letting it print; report the first. */
    struct fy_diag_cfg dc;
    fy_diag_cfg_default(&dc);
    dc.fp = NULL;
    dc.colorize = false;
    diag = fy_diag_create(&dc);
    HK_TRY_CHECK(diag, HK_ERR_MEMORY, "cannot create the YAML diagnostics object");
    fy_diag_set_collect_errors(diag, true);
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_RESOLVE_DOCUMENT, .diag = diag};
    x.fyd = fy_document_build_from_file(&cfg, path);
    if (!x.fyd) {
        void *it = NULL;
        struct fy_diag_error *e = fy_diag_errors_iterate(diag, &it);
        if (e)
            ierr = hk_error_set(
                HK_ERR_CASE, __FILE__, __LINE__,
                "%s:%d:%d: YAML syntax error: %s; check indentation, colons and brackets "
                "near this place",
                path, e->line, e->column, e->msg);
        else
            ierr = hk_error_set(HK_ERR_CASE, __FILE__, __LINE__,
                                "%s: the file is empty or not YAML; see docs/case-format.md", path);
        goto fail;
    }
    struct fy_node *root = fy_document_root(x.fyd);
    HK_TRY_CHECK(root, HK_ERR_CASE, "%s: the case file is empty; see docs/case-format.md", path);
    if (fy_node_get_type(root) != FYNT_MAPPING) {
        ierr = err_at(&x, root,
                      "a case file is a mapping of sections (geometry:, analysis:, "
                      "materials:, ...); see docs/case-format.md");
        goto fail;
    }
    for (int i = 0; i < nsets; i++)
        HK_TRY(apply_set(&x, i));
    HK_TRY(check_mapping(&x, root, "the case file", top));

    struct fy_node *t = lookup(root, "title");
    if (t && !scalar(t)) {
        ierr = err_at(&x, t, "title must be one line of text");
        goto fail;
    }
    snprintf(c->title, sizeof c->title, "%s", t ? scalar(t) : c->name);
    /* analysis first: it fixes the dimension the other sections are checked against */
    HK_TRY(read_analysis(&x, root));
    HK_TRY(read_geometry(&x, root));
    HK_TRY(read_materials(&x, root));
    HK_TRY(read_supports(&x, root));
    HK_TRY(read_loads(&x, root));
    HK_TRY(read_load_cases(&x, root));
    HK_TRY(read_solver(&x, root));
    HK_TRY(read_output(&x, root));
fail:
    if (x.fyd) fy_document_destroy(x.fyd);
    if (diag) fy_diag_destroy(diag);
    free(x.setn);
    if (ierr) hk_case_free(c);
    return ierr;
}

void hk_case_free(hk_case *c)
{
    if (!c) return;
    for (int i = 0; i < c->nmaterials; i++) {
        free(c->materials[i].regions);
        free(c->materials[i].region_loc);
    }
    free(c->materials);
    free(c->supports);
    free(c->loads);
    for (int i = 0; i < c->nloadcases; i++)
        free(c->loadcases[i].loads);
    free(c->loadcases);
    if (c->solver) hk_options_destroy(c->solver);
    free(c->solver_keys);
    free(c->solver_loc);
    free(c->sets);
    memset(c, 0, sizeof *c);
}

/* ---- binding to a mesh ---------------------------------------------------------------- */

/* "a, b, c" of the mesh's boundary (or region) names, for hints. */
static void list_names(const hk_group *g, int n, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = 0;
    if (!n) snprintf(buf, size, "none; define Physical groups in the geometry (docs/geometry.md)");
    for (int i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "", g[i].name);
}

static int find_boundary(const hk_case *c, const hk_mesh *m, const char *name, hk_case_loc loc,
                         int *idx)
{
    *idx = hk_mesh_find_boundary(m, name);
    if (*idx >= 0) return 0;
    char names[2048];
    list_names(m->boundaries, m->nboundaries, names, sizeof names);
    if (hk_mesh_find_region(m, name) >= 0)
        return hk_case_error(c, loc,
                             "'%s' is a region (of the mesh's dimension), not a boundary; "
                             "the mesh's boundaries are: %s",
                             name, names);
    return hk_case_error(c, loc, "the mesh has no boundary named '%s'; it has: %s", name, names);
}

typedef struct csv_row {
    double x[3], t;
    int line;
} csv_row;

static int cmp_row_x(const void *a, const void *b)
{
    double u = ((const csv_row *)a)->x[0], v = ((const csv_row *)b)->x[0];
    return (u > v) - (u < v);
}

/* Adds the temperature changes of a CSV file (x, y(, z), dT per row; '#' comments and a
 * header line allowed) to node_dT, matched to the mesh's nodes by coordinates within 1e-6 of
 * the mesh's size. Every node of a cell must be found. */
static int read_temperature_csv(const hk_case *c, const hk_mesh *m, const hk_case_load_item *it,
                                double *node_dT)
{
    int ierr = 0;
    FILE *f = fopen(it->file, "r");
    if (!f)
        return hk_case_error(c, it->loc,
                             "cannot open the temperature file '%s'; check the path "
                             "(relative to the case file)",
                             it->file);
    csv_row *rows = NULL;
    size_t n = 0, cap = 0;
    char line[1024];
    int ln = 0, cols = -1;
    uint8_t *used = NULL;
    while (fgets(line, sizeof line, f)) {
        ln++;
        char *q = line;
        while (isspace((unsigned char)*q))
            q++;
        if (!*q || *q == '#') continue;
        double v[5];
        int k = 0;
        char *end = q;
        while (k < 5) {
            v[k] = strtod(q, &end);
            if (end == q) break;
            k++;
            q = end;
            while (isspace((unsigned char)*q) || *q == ',' || *q == ';')
                q++;
            if (!*q) break;
        }
        if (k == 0 && n == 0 && cols < 0) {
            cols = 0;
            continue;
        } /* a header line */
        int want = m->dim + 1;
        if (*q || !(k == want || (m->dim == 2 && k == 4))) {
            ierr = hk_case_error(c, it->loc, "%s:%d: a row must hold %s, got '%.60s'", it->file, ln,
                                 m->dim == 2 ? "x, y, dT (or x, y, z, dT)" : "x, y, z, dT",
                                 strtok(line, "\n"));
            goto done;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            csv_row *nr = realloc(rows, cap * sizeof *rows);
            if (!nr) {
                ierr = hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__, "out of memory reading '%s'",
                                    it->file);
                goto done;
            }
            rows = nr;
        }
        csv_row *r = &rows[n++];
        r->x[0] = v[0], r->x[1] = v[1], r->x[2] = k == 4 ? v[2] : 0;
        r->t = v[k - 1];
        r->line = ln;
        if (!isfinite(r->t) || !isfinite(r->x[0]) || !isfinite(r->x[1]) || !isfinite(r->x[2])) {
            ierr = hk_case_error(c, it->loc, "%s:%d: a value is not a finite number", it->file, ln);
            goto done;
        }
    }
    if (n == 0) {
        ierr = hk_case_error(c, it->loc,
                             "the temperature file '%s' has no rows; give x, y%s, dT "
                             "per node",
                             it->file, m->dim == 3 ? ", z" : "");
        goto done;
    }
    qsort(rows, n, sizeof *rows, cmp_row_x);
    double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
    for (int64_t i = 0; i < m->nnodes; i++)
        for (int d = 0; d < 3; d++)
            lo[d] = fmin(lo[d], m->coords[3 * i + d]), hi[d] = fmax(hi[d], m->coords[3 * i + d]);
    double size = 0;
    for (int d = 0; d < 3; d++)
        size = fmax(size, hi[d] - lo[d]);
    const double tol = 1e-6 * size;
    ierr = hk_calloc((size_t)m->nnodes + 1, 1, &used);
    if (ierr) goto done;
    for (int64_t e = 0; e < m->cells.n; e++)
        for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++)
            used[m->cells.nodes[k]] = 1;
    for (int64_t i = 0; i < m->nnodes; i++) {
        if (!used[i]) continue;
        const double *p = m->coords + 3 * i;
        size_t a = 0, b = n; /* first row with x >= p.x - tol */
        while (a < b) {
            size_t mid = (a + b) / 2;
            if (rows[mid].x[0] < p[0] - tol)
                a = mid + 1;
            else
                b = mid;
        }
        int found = 0;
        for (size_t r = a; r < n && rows[r].x[0] <= p[0] + tol && !found; r++)
            if (fabs(rows[r].x[1] - p[1]) <= tol && fabs(rows[r].x[2] - p[2]) <= tol)
                node_dT[i] += rows[r].t, found = 1;
        if (!found) {
            ierr = hk_case_error(c, it->loc,
                                 "the temperature file '%s' has no row at node %lld (%g, %g, %g); "
                                 "give a value at every node of the mesh (matched by coordinates "
                                 "within %g)",
                                 it->file, (long long)i, p[0], p[1], p[2], tol);
            goto done;
        }
    }
done:
    free(used);
    free(rows);
    fclose(f);
    return ierr;
}

/* The nodal temperature field of a list of loads (model->node_dT; NULL without files). */
static int bind_node_temperatures(const hk_case *c, const hk_mesh *m, int nloads,
                                  const hk_case_load_item *loads, hk_case_model *model)
{
    free(model->node_dT);
    model->node_dT = NULL;
    model->problem.node_dT = NULL;
    for (int i = 0; i < nloads; i++) {
        if (loads[i].kind != HK_LOAD_TEMPERATURE || !loads[i].file[0]) continue;
        if (!model->node_dT)
            HK_CALL(hk_calloc((size_t)m->nnodes + 1, sizeof *model->node_dT, &model->node_dT));
        HK_CALL(read_temperature_csv(c, m, &loads[i], model->node_dT));
    }
    model->problem.node_dT = model->node_dT;
    return 0;
}

/* One load item on the mesh: a boundary index, or for a temperature a region index (-1:
 * every region). */
static int bind_load(const hk_case *c, const hk_mesh *m, const hk_case_load_item *it, hk_load *ld)
{
    ld->kind = it->kind;
    memcpy(ld->value, it->value, sizeof ld->value);
    memcpy(ld->moment, it->moment, sizeof ld->moment);
    memcpy(ld->point, it->point, sizeof ld->point);
    ld->coupling = it->coupling;
    if (it->kind != HK_LOAD_TEMPERATURE)
        return find_boundary(c, m, it->boundary, it->loc, &ld->boundary);
    ld->boundary = -1;
    if (!it->boundary[0]) return 0;
    ld->boundary = hk_mesh_find_region(m, it->boundary);
    if (ld->boundary < 0) {
        char names[2048];
        list_names(m->regions, m->nregions, names, sizeof names);
        return hk_case_error(c, it->loc, "the mesh has no region named '%s'; it has: %s",
                             it->boundary, names);
    }
    return 0;
}

int hk_case_bind(const hk_case *c, const hk_mesh *m, hk_case_model *model)
{
    int ierr = 0;
    memset(model, 0, sizeof *model);
    if (m->dim != c->dim)
        return hk_case_error(c, c->analysis_loc, "the analysis is %s but the mesh is %dD; use %s",
                             c->analysis == HK_AXISYMMETRIC ? "axisymmetric (2D)"
                             : c->dim == 3                  ? "3d"
                                                            : "2D",
                             m->dim,
                             m->dim == 3 ? "analysis: 3d (or mesh the r-z section for axisymmetric)"
                                         : "analysis: plane_stress, plane_strain or axisymmetric");
    if (c->analysis == HK_AXISYMMETRIC) {
        const int64_t bad = hk_axisym_bad_node(m);
        if (bad >= 0)
            return hk_case_error(c, c->analysis_loc,
                                 "node %lld of the mesh lies at r = x = %g < 0; an axisymmetric "
                                 "section lies in x >= 0 (x is the radius, the axis is x = 0): "
                                 "move the geometry to that side",
                                 (long long)bad, m->coords[3 * bad]);
        /* a force and moment at a point have no meaning on a ring section */
        for (int l = 0; l < c->nloads; l++)
            if (c->loads[l].kind == HK_LOAD_REMOTE)
                return hk_case_error(c, c->loads[l].loc,
                                     "a remote_force does not apply to an axisymmetric analysis "
                                     "(a force and moment at a point are not axisymmetric); use "
                                     "a traction, pressure or force on the boundary");
        for (int l = 0; l < c->nloadcases; l++)
            for (int i = 0; i < c->loadcases[l].nloads; i++)
                if (c->loadcases[l].loads[i].kind == HK_LOAD_REMOTE)
                    return hk_case_error(c, c->loadcases[l].loads[i].loc,
                                         "a remote_force does not apply to an axisymmetric "
                                         "analysis (a force and moment at a point are not "
                                         "axisymmetric); use a traction, pressure or force on "
                                         "the boundary");
    }
    char names[2048];
    HK_CHECK(m->nregions > 0, HK_ERR_MODEL,
             "%s: the mesh has no regions (cells without a physical "
             "group); define a Physical %s in the geometry (docs/geometry.md)",
             c->path, m->dim == 3 ? "Volume" : "Surface");
    HK_TRY(hk_calloc((size_t)m->nregions, sizeof *model->materials, &model->materials));
    int *owner = NULL;
    HK_TRY(hk_calloc((size_t)m->nregions, sizeof *owner, &owner));
    for (int r = 0; r < m->nregions; r++)
        owner[r] = -1;
    int catch_all = -1;
    for (int i = 0; i < c->nmaterials; i++) {
        const hk_case_material *cm = &c->materials[i];
        if (!cm->nregions) catch_all = i;
        for (int j = 0; j < cm->nregions; j++) {
            int r = hk_mesh_find_region(m, cm->regions[j]);
            if (r < 0) {
                list_names(m->regions, m->nregions, names, sizeof names);
                ierr = hk_case_error(c, cm->region_loc[j],
                                     "the mesh has no region named '%s'; it has: %s",
                                     cm->regions[j], names);
                goto fail_owner;
            }
            if (owner[r] >= 0) {
                ierr = hk_case_error(c, cm->region_loc[j],
                                     "region '%s' already has material '%s'; "
                                     "give each region one material",
                                     cm->regions[j], c->materials[owner[r]].m.name);
                goto fail_owner;
            }
            owner[r] = i;
        }
    }
    for (int r = 0; r < m->nregions; r++) {
        if (owner[r] < 0) owner[r] = catch_all;
        if (owner[r] < 0) {
            ierr =
                hk_case_error(c, c->materials[0].loc,
                              "region '%s' of the mesh has no material; add it "
                              "to a material's regions, or leave regions out of one material so it "
                              "takes every other region",
                              m->regions[r].name);
            goto fail_owner;
        }
        model->materials[r] = c->materials[owner[r]].m;
    }
    free(owner);
    owner = NULL;

    if (c->nsupports)
        HK_TRY(hk_calloc((size_t)c->nsupports, sizeof *model->supports, &model->supports));
    for (int i = 0; i < c->nsupports; i++) {
        HK_TRY(find_boundary(c, m, c->supports[i].boundary, c->supports[i].loc,
                             &model->supports[i].boundary));
        const hk_case_support *cs = &c->supports[i];
        hk_support *ms = &model->supports[i];
        ms->mask = cs->mask;
        memcpy(ms->value, cs->value, sizeof ms->value);
        ms->kind = cs->kind;
        ms->k_normal = cs->k_normal;
        ms->k_tangential = cs->k_tangential;
        memcpy(ms->k_node, cs->k_node, sizeof ms->k_node);
        memcpy(ms->moment_point, cs->moment_point, sizeof ms->moment_point);
    }
    if (c->nloads) HK_TRY(hk_calloc((size_t)c->nloads, sizeof *model->loads, &model->loads));
    for (int i = 0; i < c->nloads; i++)
        HK_TRY(bind_load(c, m, &c->loads[i], &model->loads[i]));
    hk_problem *p = &model->problem;
    p->mesh = m;
    p->analysis = c->analysis;
    p->thickness = c->dim == 2 ? c->thickness : 1.0;
    p->materials = model->materials;
    memcpy(p->body_force, c->body_force, sizeof p->body_force);
    memcpy(p->gravity, c->gravity, sizeof p->gravity);
    p->nloads = c->nloads;
    p->loads = model->loads;
    p->nsupports = c->nsupports;
    p->supports = model->supports;
    HK_TRY(bind_node_temperatures(c, m, c->nloads, c->loads, model));
    /* load cases: check every case's boundaries now (before the solve), end bound to case 0 */
    for (int k = c->nloadcases - 1; k >= 0; k--)
        HK_TRY(hk_case_bind_loadcase(c, m, k, model));
    return 0;
fail_owner:
    free(owner);
fail:
    hk_case_model_free(model);
    return ierr;
}

int hk_case_bind_loadcase(const hk_case *c, const hk_mesh *m, int k, hk_case_model *model)
{
    HK_CHECK(k >= 0 && k < c->nloadcases, HK_ERR_ARG,
             "hk_case_bind_loadcase: load case %d of %d does not exist", k, c->nloadcases);
    const hk_case_loadcase *lc = &c->loadcases[k];
    hk_load *loads = NULL;
    if (lc->nloads) HK_CALL(hk_calloc((size_t)lc->nloads, sizeof *loads, &loads));
    for (int i = 0; i < lc->nloads; i++) {
        int ierr = bind_load(c, m, &lc->loads[i], &loads[i]);
        if (ierr) {
            free(loads);
            return ierr;
        }
    }
    free(model->loads);
    model->loads = loads;
    hk_problem *p = &model->problem;
    p->nloads = lc->nloads;
    p->loads = loads;
    memcpy(p->body_force, lc->body_force, sizeof p->body_force);
    memcpy(p->gravity, lc->gravity, sizeof p->gravity);
    return bind_node_temperatures(c, m, lc->nloads, lc->loads, model);
}

void hk_case_model_free(hk_case_model *model)
{
    if (!model) return;
    free(model->materials);
    free(model->loads);
    free(model->supports);
    free(model->node_dT);
    memset(model, 0, sizeof *model);
}
