/* --set overrides: "a.b.c=value" words applied to the YAML tree before it is read, so that an
 * override is checked like a key of the file and its messages name the --set word. */
#include "reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int remember_set(case_ctx *x, struct fy_node *n, int set)
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

/* One override being applied: where its walk down the tree has come to. */
typedef struct set_walk {
    case_ctx *x;
    int set;             /* index of the --set word */
    const char *path;    /* the whole key path, for messages */
    char *rest;          /* the part of path below cur */
    struct fy_node *cur; /* the node the walk is at */
    struct fy_node *val; /* the value to put at the end of path */
    int attached;        /* the tree owns val */
    int done;            /* val is in place */
} set_walk;

/* hk_case_error naming the --set word. */
static int walk_error(const set_walk *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int walk_error(const set_walk *w, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hk_case_error(w->x->c, (hk_case_loc){0, 0, w->set}, "%s", msg);
}

/* The longest prefix of rest (at dots) that is a key of map, its length in *len. A shorter
 * prefix than the whole must lead into a section (solver: pc=poly, pc.poly.degree=6). */
static struct fy_node_pair *longest_key(struct fy_node *map, const char *rest, size_t *len)
{
    size_t l = strlen(rest);
    for (;;) {
        struct fy_node_pair *pr = fy_node_mapping_lookup_pair_by_string(map, rest, l);
        if (pr && (rest[l] == 0 || fy_node_get_type(fy_node_pair_value(pr)) != FYNT_SCALAR)) {
            *len = l;
            return pr;
        }
        while (l > 0 && rest[l - 1] != '.')
            l--;
        if (l == 0) return NULL;
        l--; /* drop the dot */
    }
}

/* The key is absent from the mapping w->cur: inside solver the whole rest is one option name
 * (val goes there); elsewhere the first word becomes a new section to walk into. */
static int add_missing(set_walk *w)
{
    case_ctx *x = w->x;
    char *rest = w->rest;
    int in_solver = w->cur == case_lookup(fy_document_root(x->fyd), "solver");
    char *dot = in_solver ? NULL : strchr(rest, '.');
    if (!dot) {
        struct fy_node *k = fy_node_create_scalar_copy(x->fyd, rest, FY_NT);
        if (!k || fy_node_mapping_append(w->cur, k, w->val)) {
            fy_node_free(k);
            return walk_error(w, "could not add '%s'", w->path);
        }
        w->attached = w->done = 1;
        return remember_set(x, k, w->set);
    }
    *dot = 0;
    /* the key is there but holds a value or nothing (geometry:), not a section */
    if (fy_node_mapping_lookup_pair_by_string(w->cur, rest, FY_NT)) {
        *dot = '.';
        return walk_error(w,
                          "'%.*s' is a single value or empty, not a section; there "
                          "is no '%s' below it (give it a mapping in the case file)",
                          (int)(dot - w->path), w->path, dot + 1);
    }
    struct fy_node *k = fy_node_create_scalar_copy(x->fyd, rest, FY_NT);
    struct fy_node *m = fy_node_create_mapping(x->fyd);
    if (!k || !m || fy_node_mapping_append(w->cur, k, m)) {
        fy_node_free(k);
        fy_node_free(m);
        return walk_error(w, "could not add '%s'", w->path);
    }
    HK_CALL(remember_set(x, k, w->set));
    HK_CALL(remember_set(x, m, w->set));
    w->cur = m;
    w->rest = dot + 1;
    return 0;
}

/* One step in a mapping: set the key at the end of the path, or walk into a section. */
static int step_mapping(set_walk *w)
{
    size_t len = 0;
    struct fy_node_pair *pr = longest_key(w->cur, w->rest, &len);
    if (!pr) return add_missing(w);
    if (w->rest[len] == 0) {
        if (fy_node_pair_set_value(pr, w->val)) return walk_error(w, "could not set '%s'", w->path);
        w->attached = w->done = 1;
        return 0;
    }
    w->cur = fy_node_pair_value(pr);
    w->rest += len + 1;
    return 0;
}

/* One step in a list: the next word is an item's index. */
static int step_sequence(set_walk *w)
{
    const char *path = w->path, *rest = w->rest;
    char *end;
    long idx = strtol(rest, &end, 10);
    int cnt = fy_node_sequence_item_count(w->cur);
    if (end == rest || (*end && *end != '.') || idx < 0 || idx >= cnt)
        return walk_error(w,
                          "'%.*s' is a list of %d items; address an item by its index "
                          "0..%d (not '%.*s'), e.g. materials.0.E=1e9",
                          (int)(rest - path - 1 > 0 ? rest - path - 1 : 0), path, cnt, cnt - 1,
                          (int)strcspn(rest, "."), rest);
    struct fy_node *item = fy_node_sequence_get_by_index(w->cur, (int)idx);
    if (!*end) {
        if (fy_node_sequence_insert_before(w->cur, item, w->val))
            return walk_error(w, "could not set '%s'", path);
        w->attached = w->done = 1;
        fy_node_free(fy_node_sequence_remove(w->cur, item));
        return 0;
    }
    w->cur = item;
    w->rest = end + 1;
    return 0;
}

/* Walk path from the root and put w->val there. At each mapping the longest dotted prefix
 * that is a key wins, so solver keys with dots (pc.poly.degree) work; a missing key is added
 * (and then checked by the section reader like any other key). */
static int apply_set_path(set_walk *w)
{
    w->cur = fy_document_root(w->x->fyd);
    while (!w->done) {
        enum fy_node_type t = fy_node_get_type(w->cur);
        if (t == FYNT_MAPPING)
            HK_CALL(step_mapping(w));
        else if (t == FYNT_SEQUENCE)
            HK_CALL(step_sequence(w));
        else
            return walk_error(w,
                              "'%.*s' is a single value, not a section; there is no '%s' "
                              "below it",
                              (int)(w->rest - w->path - 1 > 0 ? w->rest - w->path - 1 : 0), w->path,
                              w->rest);
    }
    return 0;
}

int case_apply_set(case_ctx *x, int set)
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
    set_walk w = {.x = x, .set = set, .path = path, .rest = path, .val = val};
    int err = remember_set(x, val, set);
    if (!err) err = apply_set_path(&w);
    if (!w.attached) fy_node_free(val);
    return err;
}
