/* load_cases: several named right-hand sides over one mesh, materials and supports. */
#include "reader.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

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

/* The name of load_cases[i]: a file-name word, not used by an earlier case. */
static int read_loadcase_name(case_ctx *x, struct fy_node *nm, int i)
{
    const hk_case *c = x->c;
    hk_case_loadcase *lc = &x->c->loadcases[i];
    HK_CALL(case_parse_name(x, nm, "load case name", lc->name, sizeof lc->name));
    lc->loc = case_node_loc(x, nm);
    for (const char *q = lc->name; *q; q++)
        if (!isalnum((unsigned char)*q) && *q != '_' && *q != '-' && *q != '.')
            return case_err_at(x, nm,
                               "load case name '%s' has '%c'; it becomes part of a file name, "
                               "so use letters, digits, '_', '-' and '.' only",
                               lc->name, *q);
    if (lc->name[0] == '.' || lc->name[0] == '-')
        return case_err_at(x, nm, "load case name '%s' must start with a letter, digit or '_'",
                           lc->name);
    for (int j = 0; j < i; j++)
        if (!strcmp(c->loadcases[j].name, lc->name))
            return case_err_at(x, nm,
                               "load case name '%s' is already used by load_cases[%d]; give each "
                               "load case its own name",
                               lc->name, j);
    return 0;
}

/* load_cases[i]: {name: WORD, loads: [...]}. */
static int read_loadcase(case_ctx *x, struct fy_node *item, int i)
{
    static const char *const keys[] = {"name", "loads", NULL};
    hk_case_loadcase *lc = &x->c->loadcases[i];
    struct fy_node *nm, *ls;
    char what[64];
    snprintf(what, sizeof what, "load_cases[%d]", i);
    HK_CALL(case_check_mapping(x, item, what, keys));
    if (!(nm = case_lookup(item, "name")))
        return case_err_at(x, item,
                           "%s needs name: WORD (it names the output file <stem>-WORD.vtu)", what);
    HK_CALL(read_loadcase_name(x, nm, i));
    if (!(ls = case_lookup(item, "loads")))
        return case_err_at(x, item, "%s ('%s') needs loads: [...] (the same kinds as loads:)", what,
                           lc->name);
    char prefix[96];
    snprintf(prefix, sizeof prefix, "load_cases[%d].loads", i);
    HK_CALL(case_read_load_list(x, ls, case_key_of(item, "loads"), prefix, &lc->nloads, &lc->loads,
                                lc->gravity, lc->body_force));
    char where[HK_CASE_NAME + 32];
    snprintf(where, sizeof where, " in load case '%s'", lc->name);
    HK_CALL(case_need_alpha(x->c, lc->loads, lc->nloads, where));
    return case_need_density(x->c, lc->gravity, where);
}

/* load_cases: [{name: WORD, loads: [...]}, ...]: several right-hand sides over the same mesh,
 * materials and supports; exclusive with the top-level loads. */
int case_read_load_cases(case_ctx *x, struct fy_node *root, struct fy_node *lcs)
{
    hk_case *c = x->c;
    if (!lcs) return 0;
    if (case_lookup(root, "loads")) {
        hk_case_loc a = case_node_loc(x, case_key_of(root, "loads"));
        char where[64] = "";
        if (a.line > 0) snprintf(where, sizeof where, " (line %d)", a.line);
        return case_err_at(x, case_key_of(root, "load_cases"),
                           "a case has either loads%s or load_cases, not both; move the top-level "
                           "loads into a load case: load_cases: [{name: NAME, loads: [...]}]",
                           where);
    }
    if (fy_node_get_type(lcs) != FYNT_SEQUENCE || fy_node_sequence_item_count(lcs) == 0)
        return case_err_at(x, case_key_of(root, "load_cases"),
                           "load_cases must be a non-empty list like [{name: tip, loads: "
                           "[{force: {boundary: tip, value: [0, 0, -1000]}}]}, ...]");
    int n = fy_node_sequence_item_count(lcs);
    HK_CALL(hk_calloc((size_t)n, sizeof *c->loadcases, &c->loadcases));
    c->nloadcases = n;
    for (int i = 0; i < n; i++)
        HK_CALL(read_loadcase(x, fy_node_sequence_get_by_index(lcs, i), i));
    return same_rigid_couplings(c);
}
