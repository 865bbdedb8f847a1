/* Loading a case file: the YAML document (libfyaml's tree, its syntax errors as case-file
 * messages), the --set overrides applied to it, then the top-level sections read in the
 * order of their table (app/case/sections.c). */
#include "reader.h"

#include <errno.h>
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

/* Parse the file into *fyd. libfyaml's diagnostics are collected in *diag (the caller
 * destroys both, the document first) rather than printed; the first becomes the message. */
static int build_document(const char *path, struct fy_diag **diag, struct fy_document **fyd)
{
    struct stat st;
    HK_CHECK(stat(path, &st) || !S_ISDIR(st.st_mode), HK_ERR_IO,
             "'%s' is a folder, not a case file; give the path of the .yaml file", path);
    FILE *f = fopen(path, "rb");
    HK_CHECK(f, HK_ERR_IO, "cannot open case file '%s': %s", path, strerror(errno));
    fclose(f);

    struct fy_diag_cfg dc;
    fy_diag_cfg_default(&dc);
    dc.fp = NULL;
    dc.colorize = false;
    *diag = fy_diag_create(&dc);
    HK_CHECK(*diag, HK_ERR_MEMORY, "cannot create the YAML diagnostics object");
    fy_diag_set_collect_errors(*diag, true);
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_RESOLVE_DOCUMENT, .diag = *diag};
    *fyd = fy_document_build_from_file(&cfg, path);
    if (*fyd) return 0;
    void *it = NULL;
    struct fy_diag_error *e = fy_diag_errors_iterate(*diag, &it);
    if (e)
        return hk_error_set(HK_ERR_CASE, __FILE__, __LINE__,
                            "%s:%d:%d: YAML syntax error: %s; check indentation, colons and "
                            "brackets near this place",
                            path, e->line, e->column, e->msg);
    return hk_error_set(HK_ERR_CASE, __FILE__, __LINE__,
                        "%s: the file is empty or not YAML; see docs/case-format.md", path);
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
    struct fy_diag *diag = NULL;
    memset(c, 0, sizeof *c);
    HK_CHECK(path && *path, HK_ERR_ARG, "hk_case_load: no case file given");
    case_names(c, path);
    HK_TRY(copy_sets(c, nsets, sets));
    HK_TRY(build_document(path, &diag, &x.fyd));
    struct fy_node *root = fy_document_root(x.fyd);
    HK_TRY_CHECK(root, HK_ERR_CASE, "%s: the case file is empty; see docs/case-format.md", path);
    if (fy_node_get_type(root) != FYNT_MAPPING) {
        ierr = case_err_at(&x, root,
                           "a case file is a mapping of sections (geometry:, analysis:, "
                           "materials:, ...); see docs/case-format.md");
        goto fail;
    }
    for (int i = 0; i < nsets; i++)
        HK_TRY(case_apply_set(&x, i));
    HK_TRY(check_top_keys(&x, root));
    HK_TRY(read_sections(&x, root));
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
