/* The case-file reader's shared pieces: the message with its file:line:col, the location of a
 * node, key checking with "did you mean" hints, and the scalar value parsers. */
#include "reader.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

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
hk_case_loc case_node_loc(case_ctx *x, struct fy_node *n)
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
            if (fy_node_pair_value(pr) == n) return case_node_loc(x, fy_node_pair_key(pr));
    }
    if (!loc.line && par) return case_node_loc(x, par);
    return loc;
}

int case_err_at(case_ctx *x, struct fy_node *n, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hk_case_error(x->c, case_node_loc(x, n), "%s", msg);
}

const char *case_scalar(struct fy_node *n)
{
    return n && fy_node_get_type(n) == FYNT_SCALAR ? fy_node_get_scalar0(n) : NULL;
}

/* "valid keys: a, b, c" plus "did you mean 'b'?" when one is close. */
void case_key_hint(const char *key, const char *const *allowed, char *buf, size_t n)
{
    const char *best = NULL;
    int bestd = 3;
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; allowed[i]; i++) {
        int d = hk_edit_distance(key, allowed[i]);
        if (d < bestd) bestd = d, best = allowed[i];
    }
    if (best) k += (size_t)snprintf(buf + k, n - k, "did you mean '%s'? ", best);
    if (k < n) k += (size_t)snprintf(buf + k, n - k, "valid keys: ");
    for (int i = 0; allowed[i] && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "", allowed[i]);
}

/* The value must be a mapping whose keys are all in allowed. */
int case_check_mapping(case_ctx *x, struct fy_node *n, const char *what, const char *const *allowed)
{
    if (fy_node_get_type(n) != FYNT_MAPPING)
        return case_err_at(
            x, n, "%s must be a mapping of keys (key: value); see docs/case-format.md", what);
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it))) {
        const char *k = case_scalar(fy_node_pair_key(p));
        if (!k)
            return case_err_at(x, fy_node_pair_key(p), "%s has a key that is not a plain word",
                               what);
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = !strcmp(k, allowed[i]);
        if (!ok) {
            char hint[512];
            case_key_hint(k, allowed, hint, sizeof hint);
            return case_err_at(x, fy_node_pair_key(p), "unknown key '%s' in %s; %s", k, what, hint);
        }
        struct fy_node *v = fy_node_pair_value(p);
        if (!v ||
            (fy_node_get_type(v) == FYNT_SCALAR && fy_node_is_null(v) &&
             (!fy_node_get_scalar0(v) || !*fy_node_get_scalar0(v) ||
              !strcmp(fy_node_get_scalar0(v), "~") || !strcmp(fy_node_get_scalar0(v), "null"))))
            return case_err_at(x, fy_node_pair_key(p),
                               "'%s' in %s has no value; write it on the same line "
                               "(%s: ...) or indent the lines below it",
                               k, what, k);
    }
    return 0;
}

struct fy_node *case_lookup(struct fy_node *map, const char *key)
{
    return fy_node_mapping_lookup_by_string(map, key, FY_NT);
}

/* The key node of map's pair with this value (for messages about a whole section). */
struct fy_node *case_key_of(struct fy_node *map, const char *key)
{
    struct fy_node_pair *p = fy_node_mapping_lookup_pair_by_string(map, key, FY_NT);
    return p ? fy_node_pair_key(p) : map;
}

int case_parse_double(case_ctx *x, struct fy_node *n, const char *what, double *out)
{
    const char *s = case_scalar(n);
    if (!s || !*s) return case_err_at(x, n, "%s must be a number (like 2.1e11)", what);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (*end && isspace((unsigned char)*end))
        end++;
    if (!*end && errno == ERANGE) /* 1e-320 is a number, just not one a double holds */
        return case_err_at(x, n,
                           "%s = %s is out of the range of double precision (magnitudes 1e-307 to "
                           "1e308, or 0); use other units",
                           what, s);
    if (*end || !isfinite(v))
        return case_err_at(x, n, "%s must be a finite number, got '%s'", what, s);
    *out = v;
    return 0;
}

int case_parse_int(case_ctx *x, struct fy_node *n, const char *what, int *out)
{
    const char *s = case_scalar(n);
    if (!s || !*s) return case_err_at(x, n, "%s must be a whole number", what);
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno == ERANGE || v < INT_MIN || v > INT_MAX)
        return case_err_at(x, n, "%s must be a whole number, got '%s'", what, s);
    *out = (int)v;
    return 0;
}

int case_parse_bool(case_ctx *x, struct fy_node *n, const char *what, int *out)
{
    const char *s = case_scalar(n);
    static const char *yes[] = {"true", "True", "TRUE", "yes", "on", "1"};
    static const char *no[] = {"false", "False", "FALSE", "no", "off", "0"};
    for (int i = 0; s && i < 6; i++) {
        if (!strcmp(s, yes[i])) return *out = 1, 0;
        if (!strcmp(s, no[i])) return *out = 0, 0;
    }
    return case_err_at(x, n, "%s must be true or false, got '%s'", what, s ? s : "a collection");
}

int case_parse_choice(case_ctx *x, struct fy_node *n, const char *what, const char *const *names,
                      const int *values, int *out)
{
    const char *s = case_scalar(n);
    for (int i = 0; s && names[i]; i++)
        if (!strcmp(s, names[i])) {
            *out = values[i];
            return 0;
        }
    char hint[512];
    case_key_hint(s ? s : "", names, hint, sizeof hint);
    return case_err_at(x, n, "unknown %s '%s'; %s", what, s ? s : "?", hint);
}

/* A vector of 2 (2D) or 3 numbers; a 2D case may give 3 with z = 0. */
int case_parse_vec(case_ctx *x, struct fy_node *n, const char *what, double v[3])
{
    int dim = x->c->dim;
    if (fy_node_get_type(n) != FYNT_SEQUENCE)
        return case_err_at(x, n, "%s must be a list of %d numbers like [%s]", what, dim,
                           dim == 2 ? "0, -1" : "0, 0, -1");
    int cnt = fy_node_sequence_item_count(n);
    if (cnt != dim && !(dim == 2 && cnt == 3))
        return case_err_at(x, n, "%s has %d components; a %s analysis needs %d", what, cnt,
                           dim == 2 ? "2D" : "3d", dim);
    v[0] = v[1] = v[2] = 0;
    for (int i = 0; i < cnt; i++) {
        struct fy_node *e = fy_node_sequence_get_by_index(n, i);
        char w[160];
        snprintf(w, sizeof w, "%s[%d]", what, i);
        HK_CALL(case_parse_double(x, e, w, &v[i]));
    }
    if (dim == 2 && v[2] != 0)
        return case_err_at(x, n, "%s has a z component in a 2D analysis; give 2 components", what);
    return 0;
}

int case_parse_name(case_ctx *x, struct fy_node *n, const char *what, char *out, size_t size)
{
    const char *s = case_scalar(n);
    if (!s || !*s) return case_err_at(x, n, "%s must be a name (a plain word)", what);
    if (strlen(s) >= size)
        return case_err_at(x, n, "%s is longer than %zu characters", what, size - 1);
    strcpy(out, s);
    return 0;
}

int case_resolve_path(case_ctx *x, struct fy_node *n, const char *what, char *out)
{
    const char *s = case_scalar(n);
    if (!s || !*s) return case_err_at(x, n, "%s must be a file name", what);
    int k;
    if (s[0] == '/' || !x->c->dir[0])
        k = snprintf(out, HK_CASE_PATH, "%s", s);
    else
        k = snprintf(out, HK_CASE_PATH, "%s/%s", x->c->dir, s);
    if (k >= HK_CASE_PATH) return case_err_at(x, n, "%s: the path is too long", what);
    return 0;
}
