/* Loading a case file: the YAML document (libfyaml's tree, its syntax errors as case-file
 * messages), the --set overrides applied to it, then the top-level sections read in the
 * order of their table (app/case/sections.c). */
#include "reader.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

static int copy_sets(hk_case *c, int nsets, const char *const *sets)
{
    if (nsets <= 0) return 0;
    HK_CALL(hk_calloc((size_t)nsets, sizeof *c->sets, &c->sets));
    c->nsets = nsets;
    for (int i = 0; i < nsets; i++)
        snprintf(c->sets[i], sizeof c->sets[i], "%s", sets[i]);
    return 0;
}

/* Bounds of a case file: its size, and the nodes its aliases may expand to (nine levels of
 * nine aliases, "billion laughs", would be 9^9 nodes; libfyaml expands them all). A real case
 * has a few hundred nodes. The nesting depth is libfyaml's own limit (64). */
#define CASE_MAX_BYTES (8 << 20)
#define CASE_MAX_EXPANDED 100000

/* The parser of one case file: the file's bytes, libfyaml's parser and its diagnostics. */
typedef struct case_source {
    char *text;
    size_t len;
    struct fy_diag *diag;
    struct fy_parser *fyp;
} case_source;

static void source_free(case_source *src, struct fy_document *fyd)
{
    if (fyd) fy_parse_document_destroy(src->fyp, fyd);
    if (src->fyp) fy_parser_destroy(src->fyp);
    if (src->diag) fy_diag_destroy(src->diag);
    free(src->text);
    memset(src, 0, sizeof *src);
}

/* The length of the UTF-8 sequence at s (n bytes left), or 0 when it is not valid UTF-8
 * (a stray continuation byte, a short or overlong sequence, a surrogate, beyond U+10FFFF). */
static size_t utf8_length(const unsigned char *s, size_t n)
{
    const size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (!len || s[0] > 0xf4 || len > n) return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xc0) != 0x80) return 0;
    if (len == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) return 0;
    if (len == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))) return 0;
    return len;
}

/* The first byte of s that is not text: 1 a NUL, 2 another control character (tabs and line
 * ends aside), 3 not UTF-8; 0 for none. *at: its offset. */
static int first_bad_byte(const char *s, size_t n, size_t *at)
{
    for (size_t i = 0; i < n; i++) {
        const unsigned char ch = (unsigned char)s[i];
        *at = i;
        if (!ch) return 1;
        if ((ch < 0x20 && ch != '\t' && ch != '\r' && ch != '\n') || ch == 0x7f) return 2;
        if (ch >= 0x80) { /* UTF-8 only: libfyaml loops forever on some other bytes */
            const size_t len = utf8_length((const unsigned char *)s + i, n - i);
            if (!len) return 3;
            i += len - 1;
        }
    }
    return 0;
}

/* The message for first_bad_byte's finding: where is "case.yaml:L:C" or the --set word,
 * what "the file" or "the override". */
static int bad_byte_error(const char *where, const char *what, int bad, unsigned char ch)
{
    if (bad == 1)
        return hk_error_set(HK_ERR_CASE, __FILE__, __LINE__,
                            "%s: %s holds a NUL byte, and what follows it would be lost; a "
                            "case file is plain text: remove it (or save the file as text again)",
                            where, what);
    if (bad == 2)
        return hk_error_set(HK_ERR_CASE, __FILE__, __LINE__,
                            "%s: %s holds the control character 0x%02x; a case file is plain "
                            "text: remove it",
                            where, what, ch);
    return hk_error_set(HK_ERR_CASE, __FILE__, __LINE__,
                        "%s: %s holds the byte 0x%02x, which is not UTF-8 text; save the case "
                        "file as UTF-8 (or write the character out in ASCII)",
                        where, what, ch);
}

/* The whole file, at most CASE_MAX_BYTES, and UTF-8 text only: a NUL byte once cut the file
 * short silently (a NUL before loads: gave a run with no loads). */
static int read_text(const char *path, case_source *src)
{
    struct stat st;
    HK_CHECK(stat(path, &st) || !S_ISDIR(st.st_mode), HK_ERR_IO,
             "'%s' is a folder, not a case file; give the path of the .yaml file", path);
    FILE *f = fopen(path, "rb");
    HK_CHECK(f, HK_ERR_IO, "cannot open case file '%s': %s", path, strerror(errno));
    int ierr = 0;
    size_t cap = 1 << 16;
    HK_TRY(hk_malloc(cap + 1, &src->text));
    for (size_t got; (got = fread(src->text + src->len, 1, cap - src->len, f)) > 0;) {
        src->len += got;
        HK_TRY_CHECK(src->len <= CASE_MAX_BYTES, HK_ERR_CASE,
                     "%s: the file is larger than %d MB; a case file describes one analysis in "
                     "a few kilobytes (is this the right file?)",
                     path, CASE_MAX_BYTES >> 20);
        if (src->len == cap) {
            char *t = realloc(src->text, 2 * cap + 1);
            HK_TRY_CHECK(t, HK_ERR_MEMORY, "out of host memory reading '%s'", path);
            src->text = t, cap *= 2;
        }
    }
    src->text[src->len] = 0;
    size_t at;
    const int bad = first_bad_byte(src->text, src->len, &at);
    if (bad) {
        int line = 1, col = 1;
        for (size_t i = 0; i < at; i++)
            if (src->text[i] == '\n')
                line++, col = 1;
            else if (((unsigned char)src->text[i] & 0xc0) != 0x80)
                col++; /* a character, not a byte of one */
        char where[HK_CASE_PATH + 32];
        snprintf(where, sizeof where, "%s:%d:%d", path, line, col);
        ierr = bad_byte_error(where, "the file", bad, (unsigned char)src->text[at]);
    }
fail:
    fclose(f);
    return ierr;
}

/* libfyaml's first collected error as a case-file message, or what when it has none. */
static int yaml_error(const char *path, case_source *src, const char *what)
{
    void *it = NULL;
    struct fy_diag_error *e = fy_diag_errors_iterate(src->diag, &it);
    if (e)
        return hk_error_set(HK_ERR_CASE, __FILE__, __LINE__,
                            "%s:%d:%d: YAML syntax error: %s; check indentation, colons and "
                            "brackets near this place",
                            path, e->line, e->column, e->msg);
    return hk_error_set(HK_ERR_CASE, __FILE__, __LINE__, "%s: %s; see docs/case-format.md", path,
                        what);
}

/* The nodes of n with its aliases expanded, up to CASE_MAX_EXPANDED + 1, without expanding
 * them: an anchor is defined before its aliases, so in this walk (children first, in file
 * order) an anchored node's count is known, kept in its meta pointer, when an alias of it
 * comes; an alias whose target has none refers to a node that contains it. *bad: that alias. */
static size_t expanded_size(struct fy_node *n, struct fy_node **bad)
{
    if (!n || *bad) return 0;
    size_t total = 1;
    if (fy_node_is_alias(n)) {
        struct fy_node *t = fy_node_resolve_alias(n);
        const uintptr_t m = t ? (uintptr_t)fy_node_get_meta(t) : 0;
        if (!m) *bad = n;
        return m ? (size_t)(m - 1) : 0;
    }
    if (fy_node_get_type(n) == FYNT_SEQUENCE) {
        void *it = NULL;
        for (struct fy_node *e; (e = fy_node_sequence_iterate(n, &it)) && !*bad;)
            total += expanded_size(e, bad);
    } else if (fy_node_get_type(n) == FYNT_MAPPING) {
        void *it = NULL;
        for (struct fy_node_pair *p; (p = fy_node_mapping_iterate(n, &it)) && !*bad;)
            total +=
                expanded_size(fy_node_pair_key(p), bad) + expanded_size(fy_node_pair_value(p), bad);
    }
    if (total > CASE_MAX_EXPANDED) total = CASE_MAX_EXPANDED + 1;
    if (fy_node_get_anchor(n)) fy_node_set_meta(n, (void *)(uintptr_t)(total + 1));
    return total;
}

/* The first alias of n in file order, or NULL. */
static struct fy_node *first_alias(struct fy_node *n)
{
    struct fy_node *a = NULL;
    if (!n || fy_node_is_alias(n)) return n;
    void *it = NULL;
    if (fy_node_get_type(n) == FYNT_SEQUENCE)
        for (struct fy_node *e; !a && (e = fy_node_sequence_iterate(n, &it));)
            a = first_alias(e);
    else if (fy_node_get_type(n) == FYNT_MAPPING)
        for (struct fy_node_pair *p; !a && (p = fy_node_mapping_iterate(n, &it));)
            if (!(a = first_alias(fy_node_pair_key(p)))) a = first_alias(fy_node_pair_value(p));
    return a;
}

static void clear_meta(struct fy_node *n)
{
    if (!n || fy_node_is_alias(n)) return;
    if (fy_node_get_meta(n)) fy_node_clear_meta(n);
    void *it = NULL;
    if (fy_node_get_type(n) == FYNT_SEQUENCE)
        for (struct fy_node *e; (e = fy_node_sequence_iterate(n, &it));)
            clear_meta(e);
    else if (fy_node_get_type(n) == FYNT_MAPPING)
        for (struct fy_node_pair *p; (p = fy_node_mapping_iterate(n, &it));) {
            clear_meta(fy_node_pair_key(p));
            clear_meta(fy_node_pair_value(p));
        }
}

/* Parse the file into *fyd: one document, its aliases expanded within bounds. */
static int build_document(case_ctx *x, case_source *src, struct fy_document **fyd)
{
    const char *path = x->c->path;
    HK_CALL(read_text(path, src));
    struct fy_diag_cfg dc;
    fy_diag_cfg_default(&dc);
    dc.fp = NULL;
    dc.colorize = false;
    src->diag = fy_diag_create(&dc);
    HK_CHECK(src->diag, HK_ERR_MEMORY, "cannot create the YAML diagnostics object");
    fy_diag_set_collect_errors(src->diag, true);
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET, .diag = src->diag};
    src->fyp = fy_parser_create(&cfg);
    HK_CHECK(src->fyp && !fy_parser_set_string(src->fyp, src->text, src->len), HK_ERR_MEMORY,
             "cannot create the YAML parser for '%s'", path);
    *fyd = fy_parse_load_document(src->fyp);
    if (!*fyd) return yaml_error(path, src, "the file is empty or not YAML");
    /* a second document would be ignored: refuse it */
    struct fy_document *more = fy_parse_load_document(src->fyp);
    if (more) {
        struct fy_node *r2 = fy_document_root(more);
        case_ctx x2 = {.c = x->c, .fyd = more};
        const hk_case_loc loc = r2 ? case_node_loc(&x2, r2) : (hk_case_loc){0, 0, -1};
        fy_parse_document_destroy(src->fyp, more);
        if (r2)
            return hk_case_error(x->c, loc,
                                 "a second YAML document starts here (after '---'); a case file "
                                 "is one document, and the second would be ignored: remove it "
                                 "or make it a case file of its own");
    } else if (fy_diag_errors_iterate(src->diag, &(void *){NULL})) {
        return yaml_error(path, src, "the file is not YAML");
    }
    struct fy_node *bad = NULL, *root = fy_document_root(*fyd);
    const size_t size = expanded_size(root, &bad);
    clear_meta(root);
    if (bad)
        return case_err_at(x, bad,
                           "the alias *%s refers to a node that contains it, which would "
                           "never end; write the value out",
                           fy_node_get_scalar0(bad) ? fy_node_get_scalar0(bad) : "?");
    if (size > CASE_MAX_EXPANDED) {
        struct fy_node *first = first_alias(root);
        return case_err_at(x, first ? first : root,
                           "the YAML aliases (*name) of this file expand to more than %d "
                           "values, which no case needs (nested aliases multiply); write the "
                           "values out or use fewer aliases",
                           CASE_MAX_EXPANDED);
    }
    if (fy_document_resolve(*fyd)) return yaml_error(path, src, "its aliases cannot be resolved");
    return 0;
}

/* The top-level keys must be the table's names. */
static int check_top_keys(case_ctx *x, struct fy_node *root)
{
    enum { max_sections = 64 };
    const char *names[max_sections + 1];
    int n = 0;
    for (; case_sections[n].name; n++) {
        HK_CHECK(n < max_sections, HK_ERR_INTERNAL, "more than %d case-file sections",
                 max_sections);
        names[n] = case_sections[n].name;
    }
    names[n] = NULL;
    return case_check_mapping(x, root, "the case file", names);
}

/* Each section of the table, the early ones first; a required one that is absent is an
 * error at the top of the file. */
static int read_sections(case_ctx *x, struct fy_node *root)
{
    for (int early = 1; early >= 0; early--)
        for (const case_section *s = case_sections; s->name; s++) {
            if (s->early != early) continue;
            struct fy_node *sec = case_lookup(root, s->name);
            if (!sec && s->missing) return case_err_at(x, root, "%s", s->missing);
            HK_CALL(s->read(x, root, sec));
        }
    return 0;
}

int hk_case_load(const char *path, int nsets, const char *const *sets, hk_case *c)
{
    int ierr = 0;
    case_ctx x = {.c = c};
    case_source src = {0};
    memset(c, 0, sizeof *c);
    HK_CHECK(path && *path, HK_ERR_ARG, "hk_case_load: no case file given");
    case_names(c, path);
    HK_TRY(copy_sets(c, nsets, sets));
    HK_TRY(build_document(&x, &src, &x.fyd));
    struct fy_node *root = fy_document_root(x.fyd);
    HK_TRY_CHECK(root, HK_ERR_CASE, "%s: the case file is empty; see docs/case-format.md", path);
    if (fy_node_get_type(root) != FYNT_MAPPING) {
        ierr = case_err_at(&x, root,
                           "a case file is a mapping of sections (geometry:, analysis:, "
                           "materials:, ...); see docs/case-format.md");
        goto fail;
    }
    for (int i = 0; i < nsets; i++) { /* the same text rules for the overrides */
        size_t at;
        const int bad = first_bad_byte(c->sets[i], strlen(c->sets[i]), &at);
        if (bad) {
            char where[64];
            snprintf(where, sizeof where, "--set number %d, byte %zu", i + 1, at + 1);
            ierr = bad_byte_error(where, "the override", bad, (unsigned char)c->sets[i][at]);
            goto fail;
        }
        HK_TRY(case_apply_set(&x, i));
    }
    HK_TRY(check_top_keys(&x, root));
    HK_TRY(read_sections(&x, root));
fail:
    source_free(&src, x.fyd);
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
