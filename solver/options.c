/* Options by name: a list of key=value pairs with typed getters that mark keys as used, so
 * that a key nobody read (a typo) is reported with the valid ones. Anchor: PETSc options. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hk_impl.h"

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

int hk_options_get_choice(hk_options *o, const char *key, const char *const *choices, int *out)
{
    hk_opt_pair *p = take(o, key);
    if (!p) return 0;
    for (int i = 0; choices[i]; i++)
        if (!strcmp(p->value, choices[i])) {
            *out = i;
            return 0;
        }
    char list[512] = "";
    for (int i = 0; choices[i]; i++) {
        if (i) strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, choices[i], sizeof list - strlen(list) - 1);
    }
    return hk_error_set(HK_ERR_OPTION, __FILE__, __LINE__,
                        "option %s=%s is not valid; choose one of: %s", key, p->value, list);
}

int hk_options_check_used(const hk_options *o, const char *valid_keys)
{
    if (!o) return 0;
    for (int i = 0; i < o->n; i++)
        HK_CHECK(o->pairs[i].used, HK_ERR_OPTION,
                 "unknown option '%s' (or one that does not apply here); valid options: %s",
                 o->pairs[i].key, valid_keys);
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
