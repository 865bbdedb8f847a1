/* Binding a case to its mesh: materials to regions, supports and loads to boundaries by name
 * (errors list the names the mesh has), temperature files to nodes. */
#include "case.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "a, b, c" of the mesh's boundary (or region) names, for hints. */
static void list_names(const hk_group *g, int n, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = 0;
    if (!n) snprintf(buf, size, "none; define Physical groups in the geometry (docs/geometry.md)");
    for (int i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "", g[i].name);
}

static int find_boundary(const hk_case *c, const hk_mesh *m, const char *name, hk_case_loc loc,
                         int *idx)
{
    *idx = hk_mesh_find_boundary(m, name);
    if (*idx >= 0) return 0;
    char names[2048];
    list_names(m->boundaries, m->nboundaries, names, sizeof names);
    if (hk_mesh_find_region(m, name) >= 0)
        return hk_case_error(c, loc,
                             "'%s' is a region (of the mesh's dimension), not a boundary; "
                             "the mesh's boundaries are: %s",
                             name, names);
    return hk_case_error(c, loc, "the mesh has no boundary named '%s'; it has: %s", name, names);
}

typedef struct csv_row {
    double x[3], t;
    int line;
} csv_row;

static int cmp_row_x(const void *a, const void *b)
{
    double u = ((const csv_row *)a)->x[0], v = ((const csv_row *)b)->x[0];
    return (u > v) - (u < v);
}

/* The numbers of one line (up to 5, separated by spaces, ',' or ';') into v; *k of them.
 * Returns what is left after them ("" for a clean row). */
static const char *parse_csv_numbers(const char *q, double v[5], int *k)
{
    *k = 0;
    while (*k < 5) {
        char *end;
        v[*k] = strtod(q, &end);
        if (end == q) break;
        (*k)++;
        q = end;
        while (isspace((unsigned char)*q) || *q == ',' || *q == ';')
            q++;
        if (!*q) break;
    }
    return q;
}

/* The rows of an open temperature file into *rows (the caller frees it), *n of them. */
static int read_csv_rows(const hk_case *c, const hk_mesh *m, const hk_case_load_item *it, FILE *f,
                         csv_row **rows, size_t *n)
{
    size_t cap = 0;
    char line[1024];
    int ln = 0, cols = -1;
    while (fgets(line, sizeof line, f)) {
        ln++;
        const char *q = line;
        while (isspace((unsigned char)*q))
            q++;
        if (!*q || *q == '#') continue;
        double v[5];
        int k;
        q = parse_csv_numbers(q, v, &k);
        if (k == 0 && *n == 0 && cols < 0) {
            cols = 0;
            continue;
        } /* a header line */
        int want = m->dim + 1;
        if (*q || !(k == want || (m->dim == 2 && k == 4)))
            return hk_case_error(c, it->loc, "%s:%d: a row must hold %s, got '%.60s'", it->file, ln,
                                 m->dim == 2 ? "x, y, dT (or x, y, z, dT)" : "x, y, z, dT",
                                 strtok(line, "\n"));
        if (*n == cap) {
            cap = cap ? 2 * cap : 1024;
            csv_row *nr = realloc(*rows, cap * sizeof **rows);
            if (!nr)
                return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__, "out of memory reading '%s'",
                                    it->file);
            *rows = nr;
        }
        csv_row *r = &(*rows)[(*n)++];
        r->x[0] = v[0], r->x[1] = v[1], r->x[2] = k == 4 ? v[2] : 0;
        r->t = v[k - 1];
        r->line = ln;
        if (!isfinite(r->t) || !isfinite(r->x[0]) || !isfinite(r->x[1]) || !isfinite(r->x[2]))
            return hk_case_error(c, it->loc, "%s:%d: a value is not a finite number", it->file, ln);
    }
    return 0;
}

/* 1e-6 of the mesh's largest extent: how near a row must be to a node. */
static double match_tolerance(const hk_mesh *m)
{
    double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
    for (int64_t i = 0; i < m->nnodes; i++)
        for (int d = 0; d < 3; d++)
            lo[d] = fmin(lo[d], m->coords[3 * i + d]), hi[d] = fmax(hi[d], m->coords[3 * i + d]);
    double size = 0;
    for (int d = 0; d < 3; d++)
        size = fmax(size, hi[d] - lo[d]);
    return 1e-6 * size;
}

/* Adds each used node's row (rows sorted by x) to node_dT; a node without a row is an error. */
static int match_rows(const hk_case *c, const hk_mesh *m, const hk_case_load_item *it,
                      const csv_row *rows, size_t n, const uint8_t *used, double *node_dT)
{
    const double tol = match_tolerance(m);
    for (int64_t i = 0; i < m->nnodes; i++) {
        if (!used[i]) continue;
        const double *p = m->coords + 3 * i;
        size_t a = 0, b = n; /* first row with x >= p.x - tol */
        while (a < b) {
            size_t mid = (a + b) / 2;
            if (rows[mid].x[0] < p[0] - tol)
                a = mid + 1;
            else
                b = mid;
        }
        int found = 0;
        for (size_t r = a; r < n && rows[r].x[0] <= p[0] + tol && !found; r++)
            if (fabs(rows[r].x[1] - p[1]) <= tol && fabs(rows[r].x[2] - p[2]) <= tol)
                node_dT[i] += rows[r].t, found = 1;
        if (!found)
            return hk_case_error(c, it->loc,
                                 "the temperature file '%s' has no row at node %lld (%g, %g, %g); "
                                 "give a value at every node of the mesh (matched by coordinates "
                                 "within %g)",
                                 it->file, (long long)i, p[0], p[1], p[2], tol);
    }
    return 0;
}

/* Adds the temperature changes of a CSV file (x, y(, z), dT per row; '#' comments and a
 * header line allowed) to node_dT, matched to the mesh's nodes by coordinates within 1e-6 of
 * the mesh's size. Every node of a cell must be found. */
static int read_temperature_csv(const hk_case *c, const hk_mesh *m, const hk_case_load_item *it,
                                double *node_dT)
{
    FILE *f = fopen(it->file, "r");
    if (!f)
        return hk_case_error(c, it->loc,
                             "cannot open the temperature file '%s'; check the path "
                             "(relative to the case file)",
                             it->file);
    csv_row *rows = NULL;
    size_t n = 0;
    uint8_t *used = NULL;
    int ierr = read_csv_rows(c, m, it, f, &rows, &n);
    if (ierr) goto done;
    if (n == 0) {
        ierr = hk_case_error(c, it->loc,
                             "the temperature file '%s' has no rows; give x, y%s, dT "
                             "per node",
                             it->file, m->dim == 3 ? ", z" : "");
        goto done;
    }
    qsort(rows, n, sizeof *rows, cmp_row_x);
    ierr = hk_calloc((size_t)m->nnodes + 1, 1, &used);
    if (ierr) goto done;
    for (int64_t e = 0; e < m->cells.n; e++)
        for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++)
            used[m->cells.nodes[k]] = 1;
    ierr = match_rows(c, m, it, rows, n, used, node_dT);
done:
    free(used);
    free(rows);
    fclose(f);
    return ierr;
}

/* The nodal temperature field of a list of loads (model->node_dT; NULL without files). */
static int bind_node_temperatures(const hk_case *c, const hk_mesh *m, int nloads,
                                  const hk_case_load_item *loads, hk_case_model *model)
{
    free(model->node_dT);
    model->node_dT = NULL;
    model->problem.node_dT = NULL;
    for (int i = 0; i < nloads; i++) {
        if (loads[i].kind != HK_LOAD_TEMPERATURE || !loads[i].file[0]) continue;
        if (!model->node_dT)
            HK_CALL(hk_calloc((size_t)m->nnodes + 1, sizeof *model->node_dT, &model->node_dT));
        HK_CALL(read_temperature_csv(c, m, &loads[i], model->node_dT));
    }
    model->problem.node_dT = model->node_dT;
    return 0;
}

/* One load item on the mesh: a boundary index, or for a temperature a region index (-1:
 * every region). */
static int bind_load(const hk_case *c, const hk_mesh *m, const hk_case_load_item *it, hk_load *ld)
{
    ld->kind = it->kind;
    memcpy(ld->value, it->value, sizeof ld->value);
    memcpy(ld->moment, it->moment, sizeof ld->moment);
    memcpy(ld->point, it->point, sizeof ld->point);
    ld->coupling = it->coupling;
    if (it->kind != HK_LOAD_TEMPERATURE)
        return find_boundary(c, m, it->boundary, it->loc, &ld->boundary);
    ld->boundary = -1;
    if (!it->boundary[0]) return 0;
    ld->boundary = hk_mesh_find_region(m, it->boundary);
    if (ld->boundary < 0) {
        char names[2048];
        list_names(m->regions, m->nregions, names, sizeof names);
        return hk_case_error(c, it->loc, "the mesh has no region named '%s'; it has: %s",
                             it->boundary, names);
    }
    return 0;
}

/* A remote force on an axisymmetric section: the first among loads, or NULL. */
static const hk_case_load_item *first_remote(int nloads, const hk_case_load_item *loads)
{
    for (int l = 0; l < nloads; l++)
        if (loads[l].kind == HK_LOAD_REMOTE) return &loads[l];
    return NULL;
}

/* The mesh fits the analysis: its dimension, and for an axisymmetric one the side of the axis
 * and no remote forces. */
static int check_analysis(const hk_case *c, const hk_mesh *m)
{
    if (m->dim != c->dim)
        return hk_case_error(c, c->analysis_loc, "the analysis is %s but the mesh is %dD; use %s",
                             c->analysis == HK_AXISYMMETRIC ? "axisymmetric (2D)"
                             : c->dim == 3                  ? "3d"
                                                            : "2D",
                             m->dim,
                             m->dim == 3 ? "analysis: 3d (or mesh the r-z section for axisymmetric)"
                                         : "analysis: plane_stress, plane_strain or axisymmetric");
    if (c->analysis != HK_AXISYMMETRIC) return 0;
    const int64_t bad = hk_axisym_bad_node(m);
    if (bad >= 0)
        return hk_case_error(c, c->analysis_loc,
                             "node %lld of the mesh lies at r = x = %g < 0; an axisymmetric "
                             "section lies in x >= 0 (x is the radius, the axis is x = 0): "
                             "move the geometry to that side",
                             (long long)bad, m->coords[3 * bad]);
    /* a force and moment at a point have no meaning on a ring section */
    const hk_case_load_item *r = first_remote(c->nloads, c->loads);
    if (r)
        return hk_case_error(c, r->loc,
                             "a remote_force does not apply to an axisymmetric analysis "
                             "(a force and moment at a point are not axisymmetric); use "
                             "a traction, pressure or force on the boundary");
    for (int l = 0; l < c->nloadcases; l++)
        if ((r = first_remote(c->loadcases[l].nloads, c->loadcases[l].loads)))
            return hk_case_error(c, r->loc,
                                 "a remote_force does not apply to an axisymmetric "
                                 "analysis (a force and moment at a point are not "
                                 "axisymmetric); use a traction, pressure or force on "
                                 "the boundary");
    return 0;
}

/* owner[r]: the material of each mesh region, from the materials' region lists and the one
 * material without a list. */
static int material_owners(const hk_case *c, const hk_mesh *m, int *owner)
{
    char names[2048];
    for (int r = 0; r < m->nregions; r++)
        owner[r] = -1;
    int catch_all = -1;
    for (int i = 0; i < c->nmaterials; i++) {
        const hk_case_material *cm = &c->materials[i];
        if (!cm->nregions) catch_all = i;
        for (int j = 0; j < cm->nregions; j++) {
            int r = hk_mesh_find_region(m, cm->regions[j]);
            if (r < 0) {
                list_names(m->regions, m->nregions, names, sizeof names);
                return hk_case_error(c, cm->region_loc[j],
                                     "the mesh has no region named '%s'; it has: %s",
                                     cm->regions[j], names);
            }
            if (owner[r] >= 0)
                return hk_case_error(c, cm->region_loc[j],
                                     "region '%s' already has material '%s'; "
                                     "give each region one material",
                                     cm->regions[j], c->materials[owner[r]].m.name);
            owner[r] = i;
        }
    }
    for (int r = 0; r < m->nregions; r++) {
        if (owner[r] < 0) owner[r] = catch_all;
        if (owner[r] < 0)
            return hk_case_error(
                c, c->materials[0].loc,
                "region '%s' of the mesh has no material; add it "
                "to a material's regions, or leave regions out of one material so it "
                "takes every other region",
                m->regions[r].name);
    }
    return 0;
}

/* model->materials: one per mesh region. */
static int bind_materials(const hk_case *c, const hk_mesh *m, hk_case_model *model)
{
    HK_CALL(hk_calloc((size_t)m->nregions, sizeof *model->materials, &model->materials));
    int *owner = NULL;
    HK_CALL(hk_calloc((size_t)m->nregions, sizeof *owner, &owner));
    int ierr = material_owners(c, m, owner);
    for (int r = 0; !ierr && r < m->nregions; r++)
        model->materials[r] = c->materials[owner[r]].m;
    free(owner);
    return ierr;
}

static int bind_supports(const hk_case *c, const hk_mesh *m, hk_case_model *model)
{
    if (c->nsupports)
        HK_CALL(hk_calloc((size_t)c->nsupports, sizeof *model->supports, &model->supports));
    for (int i = 0; i < c->nsupports; i++) {
        const hk_case_support *cs = &c->supports[i];
        hk_support *ms = &model->supports[i];
        HK_CALL(find_boundary(c, m, cs->boundary, cs->loc, &ms->boundary));
        ms->mask = cs->mask;
        memcpy(ms->value, cs->value, sizeof ms->value);
        ms->kind = cs->kind;
        ms->k_normal = cs->k_normal;
        ms->k_tangential = cs->k_tangential;
        memcpy(ms->k_node, cs->k_node, sizeof ms->k_node);
        memcpy(ms->moment_point, cs->moment_point, sizeof ms->moment_point);
    }
    return 0;
}

int hk_case_bind(const hk_case *c, const hk_mesh *m, hk_case_model *model)
{
    int ierr = 0;
    memset(model, 0, sizeof *model);
    HK_CALL(check_analysis(c, m));
    HK_CHECK(m->nregions > 0, HK_ERR_MODEL,
             "%s: the mesh has no regions (cells without a physical "
             "group); define a Physical %s in the geometry (docs/geometry.md)",
             c->path, m->dim == 3 ? "Volume" : "Surface");
    HK_TRY(bind_materials(c, m, model));
    HK_TRY(bind_supports(c, m, model));
    if (c->nloads) HK_TRY(hk_calloc((size_t)c->nloads, sizeof *model->loads, &model->loads));
    for (int i = 0; i < c->nloads; i++)
        HK_TRY(bind_load(c, m, &c->loads[i], &model->loads[i]));
    hk_problem *p = &model->problem;
    p->mesh = m;
    p->analysis = c->analysis;
    p->thickness = c->dim == 2 ? c->thickness : 1.0;
    p->materials = model->materials;
    memcpy(p->body_force, c->body_force, sizeof p->body_force);
    memcpy(p->gravity, c->gravity, sizeof p->gravity);
    p->nloads = c->nloads;
    p->loads = model->loads;
    p->nsupports = c->nsupports;
    p->supports = model->supports;
    HK_TRY(bind_node_temperatures(c, m, c->nloads, c->loads, model));
    /* load cases: check every case's boundaries now (before the solve), end bound to case 0 */
    for (int k = c->nloadcases - 1; k >= 0; k--)
        HK_TRY(hk_case_bind_loadcase(c, m, k, model));
    return 0;
fail:
    hk_case_model_free(model);
    return ierr;
}

int hk_case_bind_loadcase(const hk_case *c, const hk_mesh *m, int k, hk_case_model *model)
{
    HK_CHECK(k >= 0 && k < c->nloadcases, HK_ERR_ARG,
             "hk_case_bind_loadcase: load case %d of %d does not exist", k, c->nloadcases);
    const hk_case_loadcase *lc = &c->loadcases[k];
    hk_load *loads = NULL;
    if (lc->nloads) HK_CALL(hk_calloc((size_t)lc->nloads, sizeof *loads, &loads));
    for (int i = 0; i < lc->nloads; i++) {
        int ierr = bind_load(c, m, &lc->loads[i], &loads[i]);
        if (ierr) {
            free(loads);
            return ierr;
        }
    }
    free(model->loads);
    model->loads = loads;
    hk_problem *p = &model->problem;
    p->nloads = lc->nloads;
    p->loads = loads;
    memcpy(p->body_force, lc->body_force, sizeof p->body_force);
    memcpy(p->gravity, lc->gravity, sizeof p->gravity);
    return bind_node_temperatures(c, m, lc->nloads, lc->loads, model);
}

void hk_case_model_free(hk_case_model *model)
{
    if (!model) return;
    free(model->materials);
    free(model->loads);
    free(model->supports);
    free(model->node_dT);
    memset(model, 0, sizeof *model);
}
