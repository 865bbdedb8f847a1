/* Options by name: a list of key=value pairs with typed getters that mark keys as used, so
 * that a key nobody read (a typo) is reported with the valid ones. Anchor: PETSc options. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hk_impl.h"
#include "text.h"

typedef struct {
    char *key, *value;
    int used;
} hk_opt_pair;

struct hk_options {
    hk_opt_pair *pairs;
    int n, cap;
};

int hk_options_create(hk_options **o)
{
    return hk_calloc(1, sizeof **o, o);
}

void hk_options_destroy(hk_options *o)
{
    if (!o) return;
    for (int i = 0; i < o->n; i++) {
        free(o->pairs[i].key);
        free(o->pairs[i].value);
    }
    free(o->pairs);
    free(o);
}

static hk_opt_pair *find(const hk_options *o, const char *key)
{
    for (int i = o->n - 1; i >= 0; i--)
        if (!strcmp(o->pairs[i].key, key)) return &o->pairs[i];
    return NULL;
}

int hk_options_set(hk_options *o, const char *key, const char *value)
{
    HK_CHECK(key && key[0], HK_ERR_OPTION, "an option has an empty name; write key=value");
    hk_opt_pair *p = find(o, key);
    char *v = strdup(value ? value : "");
    HK_CHECK(v, HK_ERR_MEMORY, "out of memory storing option %s", key);
    if (p) {
        free(p->value);
        p->value = v;
        p->used = 0;
        return 0;
    }
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 16;
        hk_opt_pair *np = realloc(o->pairs, (size_t)cap * sizeof *np);
        if (!np) free(v);
        HK_CHECK(np, HK_ERR_MEMORY, "out of memory storing option %s", key);
        o->pairs = np;
        o->cap = cap;
    }
    o->pairs[o->n].key = strdup(key);
    o->pairs[o->n].value = v;
    o->pairs[o->n].used = 0;
    HK_CHECK(o->pairs[o->n].key, HK_ERR_MEMORY, "out of memory storing option %s", key);
    o->n++;
    return 0;
}

int hk_options_parse(hk_options *o, const char *text)
{
    const char *s = text;
    char word[512];
    while (s && *s) {
        while (isspace((unsigned char)*s)) s++;
        if (!*s) break;
        size_t len = 0;
        while (s[len] && !isspace((unsigned char)s[len])) len++;
        HK_CHECK(len < sizeof word, HK_ERR_OPTION, "option '%.40s...' is too long", s);
        memcpy(word, s, len);
        word[len] = '\0';
        s += len;
        char *eq = strchr(word, '=');
        HK_CHECK(eq && eq != word && eq[1], HK_ERR_OPTION,
                 "option '%s' is malformed; write key=value, e.g. method=cg", word);
        *eq = '\0';
        HK_CALL(hk_options_set(o, word, eq + 1));
    }
    return 0;
}

int hk_options_remove(hk_options *o, const char *key)
{
    const size_t len = strlen(key);
    int removed = 0, w = 0;
    for (int i = 0; o && i < o->n; i++) {
        const char *k = o->pairs[i].key;
        if (!strncmp(k, key, len) && (k[len] == 0 || k[len] == '.')) {
            free(o->pairs[i].key);
            free(o->pairs[i].value);
            removed++;
        } else
            o->pairs[w++] = o->pairs[i];
    }
    if (o) o->n = w;
    return removed;
}

int hk_options_has(const hk_options *o, const char *key)
{
    return o && find(o, key) != NULL;
}

/* The pair a getter reads, marked as read (so check_used accepts it); NULL when not set. */
static hk_opt_pair *take(hk_options *o, const char *key)
{
    hk_opt_pair *p = o ? find(o, key) : NULL;
    if (p) p->used = 1;
    return p;
}

int hk_options_get_string(hk_options *o, const char *key, const char **out)
{
    hk_opt_pair *p = take(o, key);
    if (!p) return 0;
    *out = p->value;
    return 0;
}

int hk_options_get_int(hk_options *o, const char *key, int *out)
{
    hk_opt_pair *p = take(o, key);
    if (!p) return 0;
    char *end;
    errno = 0;
    long v = strtol(p->value, &end, 10);
    HK_CHECK(!errno && end != p->value && !*end && v >= -2147483647L && v <= 2147483647L,
             HK_ERR_OPTION, "option %s=%s is not an integer; write e.g. %s=10", key, p->value,
             key);
    *out = (int)v;
    return 0;
}

int hk_options_get_double(hk_options *o, const char *key, double *out)
{
    hk_opt_pair *p = take(o, key);
    if (!p) return 0;
    char *end;
    errno = 0;
    double v = strtod(p->value, &end);
    HK_CHECK(!(errno == ERANGE && end != p->value && !*end), HK_ERR_OPTION,
             "option %s=%s is out of the range of double precision (magnitudes 1e-307 to 1e308, "
             "or 0)",
             key, p->value);
    HK_CHECK(!errno && end != p->value && !*end && isfinite(v), HK_ERR_OPTION,
             "option %s=%s is not a finite number; write e.g. %s=1e-8", key, p->value, key);
    *out = v;
    return 0;
}

/* ---- suggestions for a misspelt key or value ----------------------------------------------- */

/* How close a candidate is to what was written: 0 for the same word in another case, a key
 * whose last parts are the word ('degree' for pc.poly.degree) 1, else the edit distance;
 * -1 when too far to suggest (more than a third of the word's letters, at least one). */
static int closeness(const char *word, const char *cand)
{
    if (!strcasecmp(word, cand)) return 0;
    const size_t lw = strlen(word), lc = strlen(cand);
    if (lw < lc && cand[lc - lw - 1] == '.' && !strcasecmp(cand + lc - lw, word)) return 1;
    if (lw >= 3 && lw < lc && !strncasecmp(cand, word, lw)) return 1; /* mix for mixed */
    if (lc >= 3 && lc < lw && !strncasecmp(cand, word, lc)) return 2; /* tolerance for tol */
    const int d = hk_edit_distance(word, cand), limit = lw < 6 ? 1 : (int)lw / 3;
    return d <= limit ? d : -1;
}

/* The next item of a list separated by commas or spaces into item; 0 at its end. */
static int next_item(const char **list, char *item, size_t n)
{
    const char *s = *list;
    while (*s == ',' || *s == ' ')
        s++;
    size_t k = 0;
    while (s[k] && s[k] != ',' && s[k] != ' ')
        k++;
    if (!k) return 0;
    snprintf(item, n, "%.*s", (int)k, s);
    *list = s + k;
    return 1;
}

const char *hk_options_suggest(const char *word, const char *list, char *buf, size_t n)
{
    char item[128], best[3][128];
    int nbest = 0, score = 99;
    buf[0] = 0;
    for (const char *s = list; next_item(&s, item, sizeof item);) {
        const int c = closeness(word, item);
        if (c < 0 || c > score) continue;
        if (c < score) score = c, nbest = 0;
        int dup = 0;
        for (int k = 0; k < nbest; k++)
            dup |= !strcmp(best[k], item);
        if (!dup && nbest < 3) snprintf(best[nbest++], sizeof best[0], "%s", item);
    }
    size_t len = 0;
    for (int k = 0; k < nbest && len < n; k++)
        len += (size_t)snprintf(buf + len, n - len, "%s'%s'",
                                k == 0           ? "did you mean "
                                : k == nbest - 1 ? " or "
                                                 : ", ",
                                best[k]);
    if (nbest && len < n) snprintf(buf + len, n - len, "?");
    return buf;
}

int hk_options_get_choice(hk_options *o, const char *key, const char *const *choices, int *out)
{
    hk_opt_pair *p = take(o, key);
    if (!p) return 0;
    for (int i = 0; choices[i]; i++)
        if (!strcmp(p->value, choices[i])) {
            *out = i;
            return 0;
        }
    char list[512] = "", hint[256];
    for (int i = 0; choices[i]; i++) {
        if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, choices[i], sizeof list - strlen(list) - 1);
    }
    hk_options_suggest(p->value, list, hint, sizeof hint);
    return hk_error_set(HK_ERR_OPTION, __FILE__, __LINE__,
                        "option %s=%s is not valid; %s%schoose one of: %s", key, p->value, hint,
                        *hint ? " " : "", list);
}

/* valid_keys in short: each key once, and the keys sharing a prefix of two or more parts
 * (pc.amg.threshold, pc.amg.degree, ...) as that prefix with .* when there are three or more */
static void short_list(const char *keys, char *buf, size_t n)
{
    char item[128], seen[4096] = ",", valid_keys[4096] = "";
    size_t len = 0;
    buf[0] = 0;
    /* each key once (preconditioners share pc.tri and pc.ordering) */
    for (const char *s = keys; next_item(&s, item, sizeof item);) {
        char mark[136];
        snprintf(mark, sizeof mark, ",%s,", item);
        if (strstr(seen, mark) || strlen(seen) + strlen(item) + 2 >= sizeof seen) continue;
        strcat(seen, item);
        strcat(seen, ",");
        strcat(valid_keys, " ");
        strcat(valid_keys, item);
    }
    strcpy(seen, ",");
    for (const char *s = valid_keys; next_item(&s, item, sizeof item) && len + 1 < n;) {
        char shown[136];
        snprintf(shown, sizeof shown, "%s", item);
        char *dot = strrchr(item, '.');
        if (dot) {
            int members = 0;
            char other[128];
            const size_t plen = (size_t)(dot - item) + 1;
            for (const char *t = valid_keys; next_item(&t, other, sizeof other);)
                members += !strncmp(other, item, plen) && !strchr(other + plen, '.');
            if (members >= 3) snprintf(shown, sizeof shown, "%.*s*", (int)plen, item);
        }
        char mark[140];
        snprintf(mark, sizeof mark, ",%s,", shown);
        if (strstr(seen, mark)) continue;
        if (strlen(seen) + strlen(shown) + 2 < sizeof seen) {
            strcat(seen, shown);
            strcat(seen, ",");
        }
        len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", shown);
    }
}

int hk_options_check_used(const hk_options *o, const char *valid_keys)
{
    if (!o) return 0;
    for (int i = 0; i < o->n; i++) {
        if (o->pairs[i].used) continue;
        const char *key = o->pairs[i].key;
        char hint[512], list[1024], item[128];
        int known = 0;
        for (const char *s = valid_keys; !known && next_item(&s, item, sizeof item);)
            known = !strcmp(item, key);
        if (known)
            return hk_error_set(HK_ERR_OPTION, __FILE__, __LINE__,
                                "option '%s' does not apply here: it belongs to another method, "
                                "preconditioner or format than the ones chosen; remove it or "
                                "choose what it belongs to",
                                key);
        hk_options_suggest(key, valid_keys, hint, sizeof hint);
        if (*hint)
            return hk_error_set(HK_ERR_OPTION, __FILE__, __LINE__, "unknown option '%s'; %s", key,
                                hint);
        short_list(valid_keys, list, sizeof list);
        return hk_error_set(HK_ERR_OPTION, __FILE__, __LINE__,
                            "unknown option '%s'; valid options: %s (each one in hooke solve "
                            "--help)",
                            key, list);
    }
    return 0;
}

int hk_options_copy(const hk_options *o, hk_options **copy)
{
    HK_CALL(hk_options_create(copy));
    for (int i = 0; o && i < o->n; i++) {
        int ierr = hk_options_set(*copy, o->pairs[i].key, o->pairs[i].value);
        if (ierr) {
            hk_options_destroy(*copy);
            *copy = NULL;
            return ierr;
        }
        (*copy)->pairs[(*copy)->n - 1].used = o->pairs[i].used;
    }
    return 0;
}

int hk_options_count(const hk_options *o)
{
    return o ? o->n : 0;
}

const char *hk_options_key(const hk_options *o, int i)
{
    return o && i >= 0 && i < o->n ? o->pairs[i].key : NULL;
}

void hk_options_print(const hk_options *o, FILE *f)
{
    for (int i = 0; o && i < o->n; i++)
        fprintf(f, "%s%s=%s", i ? " " : "", o->pairs[i].key, o->pairs[i].value);
}
