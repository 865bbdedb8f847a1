/* --set overrides: "a.b.c=value" words applied to the YAML tree before it is read, so that an
 * override is checked like a key of the file and its messages name the --set word. */
#include "reader.h"

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

/* Apply "a.b.c=value" to the tree. At each mapping the longest dotted prefix that is a key
 * wins, so solver keys with dots (pc.poly.degree) work; a missing key is added (and then
 * checked by the section reader like any other key). */
static int apply_set_path(case_ctx *x, int set, char *path, struct fy_node *val, int *attached);

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
    int attached = 0;
    int err = remember_set(x, val, set);
    if (!err) err = apply_set_path(x, set, path, val, &attached);
    if (!attached) fy_node_free(val);
    return err;
}

/* Walk path from the root and put val there; *attached when the tree owns val. */
static int apply_set_path(case_ctx *x, int set, char *path, struct fy_node *val, int *attached)
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
            int in_solver = cur == case_lookup(fy_document_root(x->fyd), "solver");
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
