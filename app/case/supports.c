/* supports: fixed components (or prescribed displacements) and springs on boundaries. */
#include "reader.h"

#include <stdio.h>
#include <string.h>

static const char *comp_names[3] = {"x", "y", "z"};

/* A component name x/y/z -> index, checked against the dimension. */
static int component(case_ctx *x, struct fy_node *n, int *ci)
{
    const char *s = case_scalar(n);
    for (int i = 0; s && i < x->c->dim; i++)
        if (!strcmp(s, comp_names[i])) return *ci = i, 0;
    if (s && !strcmp(s, "z"))
        return case_err_at(x, n, "component z does not exist in a 2D analysis; use x or y");
    return case_err_at(x, n, "'%s' is not a displacement component; use %s", s ? s : "a collection",
                       x->c->dim == 2 ? "x or y" : "x, y or z");
}

/* A stiffness: a number >= 0. */
static int parse_stiffness(case_ctx *x, struct fy_node *n, const char *what, double *k)
{
    HK_CALL(case_parse_double(x, n, what, k));
    if (*k < 0)
        return case_err_at(x, n, "%s = %g is negative; a spring stiffness must be >= 0", what, *k);
    return 0;
}

/* The spring keys of supports[i] (type: spring): normal, tangential (N/m^3) and stiffness
 * [kx, ky(, kz)] (N/m per node). */
static int read_spring(case_ctx *x, struct fy_node *s, const char *what, hk_case_support *cs)
{
    struct fy_node *kn = case_lookup(s, "normal"), *kt = case_lookup(s, "tangential"),
                   *ks = case_lookup(s, "stiffness");
    if (case_lookup(s, "fix"))
        return case_err_at(
            x, case_key_of(s, "fix"),
            "%s is a spring, so fix does not apply; give normal/tangential (per area) "
            "or stiffness (per node), or drop type: spring",
            what);
    if (!kn && !kt && !ks)
        return case_err_at(x, s,
                           "%s (type: spring) needs normal: K and/or tangential: K (stiffness per "
                           "area, N/m^3), or stiffness: [kx, ky%s] (per node, N/m)",
                           what, x->c->dim == 3 ? ", kz" : "");
    cs->kind = HK_SUPPORT_SPRING;
    if (kn) HK_CALL(parse_stiffness(x, kn, "normal stiffness", &cs->k_normal));
    if (kt) HK_CALL(parse_stiffness(x, kt, "tangential stiffness", &cs->k_tangential));
    if (ks) {
        HK_CALL(case_parse_vec(x, ks, "stiffness", cs->k_node));
        for (int i = 0; i < 3; i++)
            if (cs->k_node[i] < 0)
                return case_err_at(
                    x, ks, "stiffness[%d] = %g is negative; a spring stiffness must be >= 0", i,
                    cs->k_node[i]);
    }
    return 0;
}

/* fix: all, a component, a list [x, y] or prescribed values {x: 0.0, y: 1e-3}. */
static int read_fix(case_ctx *x, struct fy_node *f, hk_case_support *cs)
{
    int ci;
    switch (fy_node_get_type(f)) {
    case FYNT_SCALAR:
        if (!strcmp(case_scalar(f), "all")) {
            cs->mask = (1u << x->c->dim) - 1;
        } else {
            HK_CALL(component(x, f, &ci));
            cs->mask = 1u << ci;
        }
        return 0;
    case FYNT_SEQUENCE: {
        void *it = NULL;
        struct fy_node *e;
        if (!fy_node_sequence_item_count(f))
            return case_err_at(x, f, "fix lists no component; use [x, y]");
        while ((e = fy_node_sequence_iterate(f, &it))) {
            HK_CALL(component(x, e, &ci));
            cs->mask |= 1u << ci;
        }
        return 0;
    }
    case FYNT_MAPPING: {
        void *it = NULL;
        struct fy_node_pair *p;
        if (!fy_node_mapping_item_count(f))
            return case_err_at(x, f, "fix gives no component; use {x: 0.0}");
        while ((p = fy_node_mapping_iterate(f, &it))) {
            HK_CALL(component(x, fy_node_pair_key(p), &ci));
            char w[64];
            snprintf(w, sizeof w, "prescribed displacement %s", comp_names[ci]);
            HK_CALL(case_parse_double(x, fy_node_pair_value(p), w, &cs->value[ci]));
            cs->mask |= 1u << ci;
        }
        return 0;
    }
    default:
        return case_err_at(x, f, "fix must be all, a list [x, y] or a mapping {x: 0.0, y: 1e-3}");
    }
}

/* supports[i]: a fixed support (the default) or a spring. */
static int read_support(case_ctx *x, struct fy_node *s, int i)
{
    static const char *const keys[] = {"boundary",   "fix",       "type",         "normal",
                                       "tangential", "stiffness", "moment_about", NULL};
    static const char *const spring_keys[] = {"normal", "tangential", "stiffness"};
    hk_case_support *cs = &x->c->supports[i];
    struct fy_node *b, *f;
    char what[64];
    snprintf(what, sizeof what, "supports[%d]", i);
    HK_CALL(case_check_mapping(x, s, what, keys));
    if (!(b = case_lookup(s, "boundary")))
        return case_err_at(x, s, "%s needs boundary: NAME", what);
    struct fy_node *ty = case_lookup(s, "type"), *ma = case_lookup(s, "moment_about");
    if (ma) HK_CALL(case_parse_vec(x, ma, "moment_about", cs->moment_point));
    const char *tyname = ty ? case_scalar(ty) : "fixed";
    if (!tyname || (strcmp(tyname, "fixed") && strcmp(tyname, "spring")))
        return case_err_at(x, ty, "%s has type '%s'; use fixed (the default) or spring", what,
                           tyname ? tyname : "a collection");
    if (!strcmp(tyname, "spring")) {
        HK_CALL(case_parse_name(x, b, "boundary", cs->boundary, sizeof cs->boundary));
        cs->loc = case_node_loc(x, b);
        return read_spring(x, s, what, cs);
    }
    for (int k = 0; k < 3; k++)
        if (case_lookup(s, spring_keys[k]))
            return case_err_at(x, case_key_of(s, spring_keys[k]),
                               "%s sets %s, which belongs to springs; add type: spring", what,
                               spring_keys[k]);
    if (!(f = case_lookup(s, "fix")))
        return case_err_at(x, s, "%s needs fix: all, [x, y] or {x: 0.0, y: 1e-3}", what);
    HK_CALL(case_parse_name(x, b, "boundary", cs->boundary, sizeof cs->boundary));
    cs->loc = case_node_loc(x, b);
    return read_fix(x, f, cs);
}

int case_read_supports(case_ctx *x, struct fy_node *root, struct fy_node *ss)
{
    hk_case *c = x->c;
    /* a modal analysis of a free-floating part: its rigid-body modes at zero frequency */
    if (c->modal &&
        (!ss || (fy_node_get_type(ss) == FYNT_SEQUENCE && fy_node_sequence_item_count(ss) == 0)))
        return 0;
    if (!ss)
        return case_err_at(x, root,
                           "the case has no 'supports'; the body must be held, e.g. supports: "
                           "[{boundary: fixed, fix: all}]");
    if (fy_node_get_type(ss) != FYNT_SEQUENCE)
        return case_err_at(x, case_key_of(root, "supports"),
                           "supports must be a list of {boundary: NAME, fix: ...}");
    if (fy_node_sequence_item_count(ss) == 0)
        return case_err_at(x, case_key_of(root, "supports"),
                           "supports is empty, but the body needs supports against rigid-body "
                           "motion; add one, e.g. supports: [{boundary: NAME, fix: all}]");
    int n = fy_node_sequence_item_count(ss);
    HK_CALL(hk_calloc((size_t)n, sizeof *c->supports, &c->supports));
    c->nsupports = n;
    for (int i = 0; i < n; i++)
        HK_CALL(read_support(x, fy_node_sequence_get_by_index(ss, i), i));
    return 0;
}
