/* loads: tractions, pressures, forces, gravity, body forces, temperatures and remote forces;
 * the list reader is shared with load_cases. */
#include "reader.h"

#include <stdio.h>
#include <string.h>

/* Gravity anywhere needs every material's density; where names the load case (or "").
 */
int case_need_density(const hk_case *c, const double gravity[3], const char *where)
{
    int need_rho = 0;
    for (int d = 0; d < 3; d++)
        need_rho |= gravity[d] != 0;
    for (int i = 0; need_rho && i < c->nmaterials; i++)
        if (c->materials[i].m.rho == 0)
            return hk_case_error(c, c->materials[i].loc,
                                 "gravity is set%s but material '%s' has no "
                                 "density; add density (kg/m^3 in SI)",
                                 where, c->materials[i].m.name);
    return 0;
}

/* A temperature change needs alpha in every material it acts on (else it would change
 * nothing, silently): on its region's material, or on every material when it names none
 * (a nodal temperature file too). where names the load case (or ""). */
int case_need_alpha(const hk_case *c, const hk_case_load_item *loads, int nloads, const char *where)
{
    for (int l = 0; l < nloads; l++) {
        const hk_case_load_item *t = &loads[l];
        if (t->kind != HK_LOAD_TEMPERATURE) continue;
        for (int i = 0; i < c->nmaterials; i++) {
            const hk_case_material *m = &c->materials[i];
            int acts = !t->boundary[0]; /* every region */
            for (int r = 0; !acts && r < m->nregions; r++)
                acts = !strcmp(m->regions[r], t->boundary);
            if (!acts && !m->nregions) { /* the default material: regions no other one names */
                acts = 1;
                for (int j = 0; j < c->nmaterials; j++)
                    for (int r = 0; j != i && r < c->materials[j].nregions; r++)
                        if (!strcmp(c->materials[j].regions[r], t->boundary)) acts = 0;
            }
            if (acts && !m->has_alpha)
                return hk_case_error(c, t->loc,
                                     "this temperature change%s acts on material '%s', which "
                                     "has no alpha (thermal expansion), so it would change "
                                     "nothing; add alpha (1/K, e.g. 1.2e-5 for steel) to the "
                                     "material",
                                     where, m->m.name);
        }
    }
    return 0;
}

/* remote_force: {boundary: B, point: [x, y(, z)], force: [...], moment: ..., coupling:
 * distributing|rigid}; the moment is a number (about z) in 2D, a vector in 3D. */
static int read_remote(case_ctx *x, struct fy_node *v, const char *what, hk_case_load_item *cl)
{
    static const char *const keys[] = {"boundary", "point", "force", "moment", "coupling", NULL};
    HK_CALL(case_check_mapping(x, v, what, keys));
    struct fy_node *b = case_lookup(v, "boundary"), *pt = case_lookup(v, "point"),
                   *f = case_lookup(v, "force"), *mo = case_lookup(v, "moment"),
                   *cp = case_lookup(v, "coupling");
    if (!b) return case_err_at(x, v, "%s needs boundary: NAME (the coupled boundary)", what);
    if (!pt)
        return case_err_at(x, v,
                           "%s needs point: [%s] (the reference point where force and moment "
                           "act)",
                           what, x->c->dim == 2 ? "x, y" : "x, y, z");
    if (!f && !mo) return case_err_at(x, v, "%s needs force: [...] and/or moment: ...", what);
    cl->kind = HK_LOAD_REMOTE;
    HK_CALL(case_parse_name(x, b, "boundary", cl->boundary, sizeof cl->boundary));
    cl->loc = case_node_loc(x, b);
    HK_CALL(case_parse_vec(x, pt, "point", cl->point));
    if (f) HK_CALL(case_parse_vec(x, f, "force", cl->value));
    if (mo && x->c->dim == 2) {
        if (fy_node_get_type(mo) != FYNT_SCALAR)
            return case_err_at(x, mo, "moment in a 2D analysis is one number (about z), like 250");
        HK_CALL(case_parse_double(x, mo, "moment", &cl->moment[2]));
    } else if (mo) {
        HK_CALL(case_parse_vec(x, mo, "moment", cl->moment));
    }
    cl->coupling = HK_COUPLING_DISTRIBUTING;
    if (cp) {
        const char *c = case_scalar(cp);
        if (c && !strcmp(c, "rigid"))
            cl->coupling = HK_COUPLING_RIGID;
        else if (!c || strcmp(c, "distributing"))
            return case_err_at(x, cp, "coupling '%s' is not known; use distributing or rigid",
                               c ? c : "(a collection)");
    }
    return 0;
}

/* The items a loads: list makes: one per entry, and one per region of a temperature with a
 * list of regions. */
static int count_load_items(struct fy_node *ls)
{
    int n = fy_node_sequence_item_count(ls), cap = n;
    for (int i = 0; i < n; i++) {
        struct fy_node *t = case_lookup(fy_node_sequence_get_by_index(ls, i), "temperature"), *r;
        if (t && fy_node_get_type(t) == FYNT_MAPPING && (r = case_lookup(t, "regions")) &&
            fy_node_get_type(r) == FYNT_SEQUENCE)
            cap += fy_node_sequence_item_count(r);
    }
    return cap;
}

/* temperature: DT (every region), {value: DT, regions: [a, b]} (one item per region) or
 * {file: T.csv} (a nodal field: one item, its values come at binding). */
static int read_temperature(case_ctx *x, struct fy_node *v, const char *what,
                            hk_case_load_item *loads, int *nloads)
{
    static const char *const tkeys[] = {"value", "regions", "file", NULL};
    struct fy_node *tv = v, *rs = NULL;
    if (fy_node_get_type(v) != FYNT_SCALAR) {
        HK_CALL(case_check_mapping(x, v, what, tkeys));
        struct fy_node *fn = case_lookup(v, "file");
        if (fn) {
            if (case_lookup(v, "value") || case_lookup(v, "regions"))
                return case_err_at(x, v,
                                   "%s has a file, so value and regions do not apply; "
                                   "give either file: T.csv or value: DT (and regions)",
                                   what);
            hk_case_load_item *cl = &loads[(*nloads)++];
            cl->kind = HK_LOAD_TEMPERATURE;
            cl->loc = case_node_loc(x, fn);
            return case_resolve_path(x, fn, "temperature file", cl->file);
        }
        if (!(tv = case_lookup(v, "value")))
            return case_err_at(x, v,
                               "%s needs value: DT (the temperature change) or file: "
                               "T.csv (a nodal field)",
                               what);
        rs = case_lookup(v, "regions");
    }
    double dT;
    HK_CALL(case_parse_double(x, tv, "temperature change", &dT));
    int nr = !rs ? 0 : fy_node_get_type(rs) == FYNT_SEQUENCE ? fy_node_sequence_item_count(rs) : 1;
    if (rs && nr == 0)
        return case_err_at(x, rs, "regions of %s must name at least one region", what);
    for (int r = 0; r < (nr ? nr : 1); r++) {
        hk_case_load_item *cl = &loads[(*nloads)++];
        cl->kind = HK_LOAD_TEMPERATURE;
        cl->value[0] = dT;
        cl->loc = case_node_loc(x, tv);
        if (rs) {
            struct fy_node *e =
                fy_node_get_type(rs) == FYNT_SEQUENCE ? fy_node_sequence_get_by_index(rs, r) : rs;
            HK_CALL(case_parse_name(x, e, "region name", cl->boundary, sizeof cl->boundary));
            cl->loc = case_node_loc(x, e);
        }
    }
    return 0;
}

/* traction, pressure, force, force_split, nodal_force: {boundary: NAME, value: ...}. */
static int read_boundary_load(case_ctx *x, struct fy_node *v, const char *what, const char *kind,
                              hk_case_load_item *cl)
{
    static const char *const keys[] = {"boundary", "value", NULL};
    HK_CALL(case_check_mapping(x, v, what, keys));
    struct fy_node *b = case_lookup(v, "boundary"), *val = case_lookup(v, "value");
    if (!b || !val)
        return case_err_at(x, v, "%s needs boundary: NAME and value: %s", what,
                           !strcmp(kind, "pressure") ? "P" : "[vx, vy(, vz)]");
    HK_CALL(case_parse_name(x, b, "boundary", cl->boundary, sizeof cl->boundary));
    cl->loc = case_node_loc(x, b);
    if (!strcmp(kind, "pressure")) {
        cl->kind = HK_LOAD_PRESSURE;
        return case_parse_double(x, val, "pressure value", &cl->value[0]);
    }
    cl->kind = !strcmp(kind, "traction")      ? HK_LOAD_TRACTION
               : !strcmp(kind, "force")       ? HK_LOAD_FORCE
               : !strcmp(kind, "force_split") ? HK_LOAD_FORCE_SPLIT
                                              : HK_LOAD_NODAL;
    return case_parse_vec(x, val, what, cl->value);
}

/* Entry i of a loads: list: one key, the kind of load. */
static int read_load(case_ctx *x, struct fy_node *l, const char *prefix, int i,
                     hk_case_load_item *loads, int *nloads, double gravity[3], double body_force[3])
{
    static const char *const kinds[] = {"traction",     "pressure", "force",      "force_split",
                                        "nodal_force",  "gravity",  "body_force", "temperature",
                                        "remote_force", NULL};
    char what[96];
    snprintf(what, sizeof what, "%s[%d]", prefix, i);
    HK_CALL(case_check_mapping(x, l, what, kinds));
    if (fy_node_mapping_item_count(l) != 1)
        return case_err_at(x, l,
                           "each load is one of traction, pressure, force, force_split, "
                           "nodal_force, gravity, body_force, temperature, remote_force; start a "
                           "new '- ' item for each");
    void *it = NULL;
    struct fy_node_pair *p = fy_node_mapping_iterate(l, &it);
    const char *kind = case_scalar(fy_node_pair_key(p));
    struct fy_node *v = fy_node_pair_value(p);
    if (!strcmp(kind, "gravity") || !strcmp(kind, "body_force")) {
        double g[3];
        HK_CALL(case_parse_vec(x, v, kind, g));
        double *dst = kind[0] == 'g' ? gravity : body_force;
        for (int d = 0; d < 3; d++)
            dst[d] += g[d];
        return 0;
    }
    snprintf(what, sizeof what, "%s[%d].%s", prefix, i, kind);
    if (!strcmp(kind, "temperature")) return read_temperature(x, v, what, loads, nloads);
    hk_case_load_item *cl = &loads[(*nloads)++];
    if (!strcmp(kind, "remote_force")) return read_remote(x, v, what, cl);
    return read_boundary_load(x, v, what, kind, cl);
}

/* One loads: list (the top level's, or a load case's) into loads/gravity/body_force. prefix
 * names the list in messages: "loads" or "load_cases[1].loads". */
int case_read_load_list(case_ctx *x, struct fy_node *ls, struct fy_node *keynode,
                        const char *prefix, int *nloads, hk_case_load_item **loads,
                        double gravity[3], double body_force[3])
{
    if (fy_node_get_type(ls) != FYNT_SEQUENCE)
        return case_err_at(x, keynode,
                           "%s must be a list like [{traction: {boundary: right, "
                           "value: [0, -1e6]}}]",
                           prefix);
    int n = fy_node_sequence_item_count(ls), cap = count_load_items(ls);
    if (cap) HK_CALL(hk_calloc((size_t)cap, sizeof **loads, loads));
    for (int i = 0; i < n; i++)
        HK_CALL(read_load(x, fy_node_sequence_get_by_index(ls, i), prefix, i, *loads, nloads,
                          gravity, body_force));
    return 0;
}

int case_read_loads(case_ctx *x, struct fy_node *root, struct fy_node *ls)
{
    hk_case *c = x->c;
    if (!ls) return 0; /* prescribed displacements alone may drive a case */
    HK_CALL(case_read_load_list(x, ls, case_key_of(root, "loads"), "loads", &c->nloads, &c->loads,
                                c->gravity, c->body_force));
    HK_CALL(case_need_alpha(c, c->loads, c->nloads, ""));
    return case_need_density(c, c->gravity, "");
}
