/* The case-file reader's own header (app/case/): the reading context, the message and value
 * helpers every section shares, and the table of top-level sections.
 *
 * Every message is "case.yaml:LINE:COL: what; hint". Overrides from --set are applied to the
 * tree before it is read, so an override is checked like a key of the file; a value that came
 * from --set is reported as "--set key=value: what; hint". The schema is docs/case-format.md.
 *
 * Adding a section: write app/case/NAME.c with case_read_NAME (the case_section_reader
 * signature), declare it below and add its line to case_sections (app/case/sections.c). */
#ifndef HOOKE_APP_CASE_READER_H
#define HOOKE_APP_CASE_READER_H

#include <libfyaml.h>
#include <stddef.h>

#include "case.h"

/* A node that --set made or replaced, and the index of its --set word (for messages). */
typedef struct case_set_node {
    struct fy_node *node;
    int set;
} case_set_node;

typedef struct case_ctx {
    hk_case *c;
    struct fy_document *fyd;
    case_set_node *setn;
    int nsetn, capsetn;
} case_ctx;

/* ---- messages and values (app/case/reader.c) ------------------------------------------ */

/* Location of a node: scalars have a token; collections take their first descendant's. */
hk_case_loc case_node_loc(case_ctx *x, struct fy_node *n);
/* hk_case_error at node n. */
int case_err_at(case_ctx *x, struct fy_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The text of a scalar node; NULL for a collection or no node. */
const char *case_scalar(struct fy_node *n);
/* "valid keys: a, b, c" plus "did you mean 'b'?" when one is close. */
void case_key_hint(const char *key, const char *const *allowed, char *buf, size_t n);
/* The value must be a mapping whose keys are all in allowed (NULL-terminated). */
int case_check_mapping(case_ctx *x, struct fy_node *n, const char *what,
                       const char *const *allowed);
struct fy_node *case_lookup(struct fy_node *map, const char *key);
/* The key node of map's pair with this value (for messages about a whole section). */
struct fy_node *case_key_of(struct fy_node *map, const char *key);
int case_parse_double(case_ctx *x, struct fy_node *n, const char *what, double *out);
int case_parse_int(case_ctx *x, struct fy_node *n, const char *what, int *out);
int case_parse_bool(case_ctx *x, struct fy_node *n, const char *what, int *out);
/* One of the words names (NULL-terminated): the value of the same index into *out. */
int case_parse_choice(case_ctx *x, struct fy_node *n, const char *what, const char *const *names,
                      const int *values, int *out);
/* A vector of 2 (2D) or 3 numbers; a 2D case may give 3 with z = 0. */
int case_parse_vec(case_ctx *x, struct fy_node *n, const char *what, double v[3]);
int case_parse_name(case_ctx *x, struct fy_node *n, const char *what, char *out, size_t size);
/* A file name relative to the case file's folder, into out (HK_CASE_PATH bytes). */
int case_resolve_path(case_ctx *x, struct fy_node *n, const char *what, char *out);

/* ---- --set overrides (app/case/set.c) ------------------------------------------------- */

/* Apply c->sets[set] ("a.b.c=value") to x->fyd's tree. */
int case_apply_set(case_ctx *x, int set);

/* ---- the sections --------------------------------------------------------------------- */

/* Reads one top-level section into x->c. sec is the section's value (NULL when the file has
 * no such key; only optional sections are called so); root is the whole file's mapping. */
typedef int (*case_section_reader)(case_ctx *x, struct fy_node *root, struct fy_node *sec);

typedef struct case_section {
    const char *name; /* the top-level key */
    case_section_reader read;
    /* read before the other sections: what they are checked against (the dimension) */
    int early;
    /* the message when the file lacks the section; NULL: the section is optional */
    const char *missing;
} case_section;

/* In the order "valid keys" lists them; the early ones are read first, then the others, each
 * group in this order. Ends with a NULL name. */
extern const case_section case_sections[];

int case_read_title(case_ctx *x, struct fy_node *root, struct fy_node *sec);
int case_read_geometry(case_ctx *x, struct fy_node *root, struct fy_node *sec);
int case_read_analysis(case_ctx *x, struct fy_node *root, struct fy_node *sec);
int case_read_materials(case_ctx *x, struct fy_node *root, struct fy_node *sec);
int case_read_supports(case_ctx *x, struct fy_node *root, struct fy_node *sec);
int case_read_loads(case_ctx *x, struct fy_node *root, struct fy_node *sec);
int case_read_load_cases(case_ctx *x, struct fy_node *root, struct fy_node *sec);
int case_read_solver(case_ctx *x, struct fy_node *root, struct fy_node *sec);
int case_read_output(case_ctx *x, struct fy_node *root, struct fy_node *sec);
int case_read_modal(case_ctx *x, struct fy_node *root, struct fy_node *sec);
/* With a modal: section, every material needs a density (read after the materials). */
int case_modal_need_density(const hk_case *c);

/* One loads: list (the top level's or a load case's; app/case/loads.c), and the density check
 * that gravity needs; shared by loads and load_cases. */
int case_read_load_list(case_ctx *x, struct fy_node *ls, struct fy_node *keynode,
                        const char *prefix, int *nloads, hk_case_load_item **loads,
                        double gravity[3], double body_force[3]);
int case_need_density(const hk_case *c, const double gravity[3], const char *where);
/* Every material a temperature load acts on has alpha (app/case/loads.c). */
int case_need_alpha(const hk_case *c, const hk_case_load_item *loads, int nloads,
                    const char *where);

#endif
