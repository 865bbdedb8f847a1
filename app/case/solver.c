/* solver: options by name (the library's hk_options), nested mappings joined with dots. */
#include "reader.h"
#include "run_part.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* solver.dist.partition: the run's, not the solver library's (app/run_part.c). */
static int read_dist_partition(case_ctx *x, const char *s, struct fy_node *val)
{
    for (int i = 0; hk_part_cut_names[i]; i++)
        if (!strcmp(s, hk_part_cut_names[i])) {
            x->c->dist_partition = i;
            return 0;
        }
    return case_err_at(x, val,
                       "solver.dist.partition '%s' is not valid; choose auto (the coarse mesh "
                       "where the mesh was refined), coarse or fine",
                       s);
}

/* solver.dist.mesh: the run's too (app/run_part_mesh.c). */
static int read_dist_mesh(case_ctx *x, const char *s, struct fy_node *val)
{
    for (int i = 0; hk_part_mesh_names[i]; i++)
        if (!strcmp(s, hk_part_mesh_names[i])) {
            x->c->dist_mesh = i;
            return 0;
        }
    return case_err_at(x, val,
                       "solver.dist.mesh '%s' is not valid; choose whole (process 0 meshes the "
                       "whole model) or parts (each process refines its own part)",
                       s);
}

static int add_solver_key(case_ctx *x, const char *key, struct fy_node *val,
                          struct fy_node *keynode)
{
    hk_case *c = x->c;
    const char *s = case_scalar(val);
    if (!s) return case_err_at(x, keynode, "solver option '%s' must have a single value", key);
    if (!strcmp(key, "dist.partition")) return read_dist_partition(x, s, val);
    if (!strcmp(key, "dist.mesh")) return read_dist_mesh(x, s, val);
    if (!strcmp(s, "true") || !strcmp(s, "yes"))
        s = "1";
    else if (!strcmp(s, "false") || !strcmp(s, "no"))
        s = "0";
    if (strlen(key) >= HK_CASE_NAME)
        return case_err_at(x, keynode, "solver option name '%s' is too long", key);
    if (strchr(s, ' ') || strchr(s, '='))
        return case_err_at(x, val, "solver option %s has a value with a space or '=': '%s'", key,
                           s);
    void *tmp = realloc(c->solver_keys, (size_t)(c->nsolver_keys + 1) * sizeof *c->solver_keys);
    if (!tmp)
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__, "out of memory reading the case");
    c->solver_keys = tmp;
    tmp = realloc(c->solver_loc, (size_t)(c->nsolver_keys + 1) * sizeof *c->solver_loc);
    if (!tmp)
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__, "out of memory reading the case");
    c->solver_loc = tmp;
    strcpy(c->solver_keys[c->nsolver_keys], key);
    c->solver_loc[c->nsolver_keys] = case_node_loc(x, val);
    c->nsolver_keys++;
    return hk_options_set(c->solver, key, s);
}

/* Solver options: scalars by name; a nested mapping adds its keys with "prefix.". */
static int read_solver_map(case_ctx *x, struct fy_node *m, const char *prefix)
{
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(m, &it))) {
        const char *k = case_scalar(fy_node_pair_key(p));
        struct fy_node *v = fy_node_pair_value(p);
        if (!k)
            return case_err_at(x, fy_node_pair_key(p), "solver has a key that is not a plain word");
        char key[HK_CASE_NAME * 2];
        snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", k);
        if (v && fy_node_get_type(v) == FYNT_MAPPING)
            HK_CALL(read_solver_map(x, v, key));
        else
            HK_CALL(add_solver_key(x, key, v, fy_node_pair_key(p)));
    }
    return 0;
}

int case_read_solver(case_ctx *x, struct fy_node *root, struct fy_node *s)
{
    hk_case *c = x->c;
    HK_CALL(hk_options_create(&c->solver));
    if (!s) return 0;
    if (fy_node_get_type(s) != FYNT_MAPPING)
        return case_err_at(x, case_key_of(root, "solver"),
                           "solver must be a mapping of options like "
                           "{method: cg, pc: jacobi, tol: 1e-8}");
    return read_solver_map(x, s, "");
}
