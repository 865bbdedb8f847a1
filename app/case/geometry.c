/* geometry: a geometry file (.geo, .msh, .step, .brep) or a generated rectangle/box, and how
 * Gmsh meshes it. */
#include "reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int eltype_by_name(const char *s, hk_eltype *t)
{
    for (int i = 0; i < HK_EL_COUNT; i++) {
        const hk_eltype_info *in = hk_eltype_get((hk_eltype)i);
        if (in && in->name && !strcmp(in->name, s)) return *t = (hk_eltype)i, 1;
    }
    /* The names are fixed by fem.h's enum; a fallback while the mesh module is a stub. */
    static const char *names[] = {"point1", "line2", "line3", "tri3", "tri6",  "quad4", "quad8",
                                  "quad9",  "tet4",  "tet10", "hex8", "hex20", "hex27"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(names[i], s)) return *t = (hk_eltype)i, 1;
    return 0;
}

/* geometry.generate.element: explicit, or from order/quad/incomplete. sh: the shape's name. */
static int generate_element(case_ctx *x, struct fy_node *el, const char *sh, int quad, int order,
                            int incomplete)
{
    hk_case *c = x->c;
    if (el) {
        const char *s = case_scalar(el);
        if (!s || !eltype_by_name(s, &c->gen_element))
            return case_err_at(x, el, "unknown element '%s'; use %s", s ? s : "?",
                               c->gen_dim == 2 ? "tri3, tri6, quad4, quad8 or quad9"
                                               : "tet4, tet10, hex8, hex20 or hex27");
        int ok = c->gen_dim == 2 ? (c->gen_element >= HK_EL_TRI3 && c->gen_element <= HK_EL_QUAD9)
                                 : (c->gen_element >= HK_EL_TET4 && c->gen_element <= HK_EL_HEX27);
        if (!ok)
            return case_err_at(x, el, "element %s does not fit a %s; use %s", s, sh,
                               c->gen_dim == 2 ? "tri3, tri6, quad4, quad8 or quad9"
                                               : "tet4, tet10, hex8, hex20 or hex27");
    } else if (c->gen_dim == 2) {
        c->gen_element =
            !quad ? (order == 2 ? HK_EL_TRI6 : HK_EL_TRI3)
                  : (order == 2 ? (incomplete ? HK_EL_QUAD8 : HK_EL_QUAD9) : HK_EL_QUAD4);
    } else {
        c->gen_element = !quad
                             ? (order == 2 ? HK_EL_TET10 : HK_EL_TET4)
                             : (order == 2 ? (incomplete ? HK_EL_HEX20 : HK_EL_HEX27) : HK_EL_HEX8);
    }
    return 0;
}

static int read_generate(case_ctx *x, struct fy_node *g, int quad, int order, int incomplete)
{
    static const char *const keys[] = {"shape", "size", "cells", "element", NULL};
    hk_case *c = x->c;
    HK_CALL(case_check_mapping(x, g, "geometry.generate", keys));
    struct fy_node *shape = case_lookup(g, "shape"), *size = case_lookup(g, "size"),
                   *cells = case_lookup(g, "cells"), *el = case_lookup(g, "element");
    if (!shape)
        return case_err_at(x, g, "geometry.generate needs 'shape: rectangle' or 'shape: box'");
    const char *sh = case_scalar(shape);
    if (sh && !strcmp(sh, "rectangle"))
        c->gen_dim = 2;
    else if (sh && !strcmp(sh, "box"))
        c->gen_dim = 3;
    else
        return case_err_at(x, shape, "geometry.generate.shape must be rectangle or box, got '%s'",
                           sh ? sh : "a collection");
    if (c->gen_dim != c->dim)
        return case_err_at(x, shape, "a %s is %dD but the analysis is %s; use %s", sh, c->gen_dim,
                           c->dim == 3 ? "3d" : "2D",
                           c->gen_dim == 3 ? "analysis: 3d" : "shape: box");
    if (!size || !cells)
        return case_err_at(x, g, "geometry.generate needs size: [%s] and cells: [%s]",
                           c->gen_dim == 2 ? "lx, ly" : "lx, ly, lz",
                           c->gen_dim == 2 ? "nx, ny" : "nx, ny, nz");
    if (fy_node_get_type(size) != FYNT_SEQUENCE || fy_node_sequence_item_count(size) != c->gen_dim)
        return case_err_at(x, size, "geometry.generate.size must be a list of %d lengths",
                           c->gen_dim);
    if (fy_node_get_type(cells) != FYNT_SEQUENCE ||
        fy_node_sequence_item_count(cells) != c->gen_dim)
        return case_err_at(x, cells, "geometry.generate.cells must be a list of %d cell counts",
                           c->gen_dim);
    c->gen_size[2] = 0;
    c->gen_cells[2] = 0;
    for (int i = 0; i < c->gen_dim; i++) {
        struct fy_node *e = fy_node_sequence_get_by_index(size, i);
        HK_CALL(case_parse_double(x, e, "geometry.generate.size", &c->gen_size[i]));
        if (!(c->gen_size[i] > 0))
            return case_err_at(x, e, "geometry.generate.size[%d] = %g must be positive", i,
                               c->gen_size[i]);
        e = fy_node_sequence_get_by_index(cells, i);
        HK_CALL(case_parse_int(x, e, "geometry.generate.cells", &c->gen_cells[i]));
        if (c->gen_cells[i] < 1 || c->gen_cells[i] > 100000)
            return case_err_at(x, e,
                               "geometry.generate.cells[%d] = %d must be between 1 and 100000", i,
                               c->gen_cells[i]);
    }
    return generate_element(x, el, sh, quad, order, incomplete);
}

/* geometry.threads, geometry.algorithm2d, geometry.algorithm3d: how Gmsh meshes;
 * geometry.order_by: who makes the second-order nodes. */
static int read_meshing_speed(case_ctx *x, struct fy_node *g)
{
    static const char *const n2[] = {"meshadapt", "automatic", "delaunay",         "frontal",
                                     "bamg",      "packing",   "quasi_structured", NULL};
    static const int v2[] = {1, 2, 5, 6, 7, 9, 11};
    static const char *const n3[] = {"delaunay", "frontal", "mmg3d", "rtree", "hxt", NULL};
    static const int v3[] = {1, 4, 7, 9, 10};
    hk_case *c = x->c;
    struct fy_node *n;
    if ((n = case_lookup(g, "threads"))) {
        HK_CALL(case_parse_int(x, n, "geometry.threads", &c->mesh.threads));
        if (c->mesh.threads < 0 || c->mesh.threads > 4096)
            return case_err_at(
                x, n,
                "geometry.threads must be 0 (every core) or a thread count up to 4096, "
                "got %d",
                c->mesh.threads);
        if (!c->mesh.threads) c->mesh.threads = HK_MESH_THREADS_ALL;
    }
    if ((n = case_lookup(g, "algorithm2d")))
        HK_CALL(case_parse_choice(x, n, "geometry.algorithm2d", n2, v2, &c->mesh.algorithm2d));
    if ((n = case_lookup(g, "algorithm3d")))
        HK_CALL(case_parse_choice(x, n, "geometry.algorithm3d", n3, v3, &c->mesh.algorithm3d));
    static const char *const nby[] = {"hooke", "gmsh", NULL};
    static const int vby[] = {HK_ORDER_BY_HOOKE, HK_ORDER_BY_GMSH};
    if ((n = case_lookup(g, "order_by")))
        HK_CALL(case_parse_choice(x, n, "geometry.order_by", nby, vby, &c->mesh.order_by));
    return 0;
}

/* geometry.file: a .geo, .msh, .step/.stp or .brep that can be opened. */
static int read_geometry_file(case_ctx *x, struct fy_node *file)
{
    static const char *ext[] = {".geo", ".msh", ".step", ".stp", ".brep", ".STEP", ".STP", NULL};
    hk_case *c = x->c;
    c->geo_loc = case_node_loc(x, file);
    HK_CALL(case_resolve_path(x, file, "geometry.file", c->geo_file));
    const char *dot = strrchr(c->geo_file, '.');
    int ok = 0;
    for (int i = 0; dot && ext[i] && !ok; i++)
        ok = !strcmp(dot, ext[i]);
    if (!ok)
        return case_err_at(x, file,
                           "geometry.file '%s' is not a .geo, .msh, .step, .stp or .brep file",
                           case_scalar(file));
    FILE *f = fopen(c->geo_file, "rb");
    if (!f)
        return case_err_at(x, file,
                           "cannot open geometry file '%s' (%s); paths are relative to the "
                           "case file's folder",
                           c->geo_file, strerror(errno));
    fclose(f);
    return 0;
}

int case_read_geometry(case_ctx *x, struct fy_node *root, struct fy_node *g)
{
    static const char *const keys[] = {
        "file",    "generate",    "size",        "order",    "quad",   "incomplete", "renumber",
        "threads", "algorithm2d", "algorithm3d", "order_by", "refine", NULL};
    hk_case *c = x->c;
    HK_CALL(case_check_mapping(x, g, "geometry", keys));
    struct fy_node *file = case_lookup(g, "file"), *gen = case_lookup(g, "generate"), *n;
    if (!!file == !!gen)
        return case_err_at(
            x, case_key_of(root, "geometry"),
            "geometry needs exactly one of 'file' (a .geo/.msh/.step/.brep) and 'generate'");
    c->mesh.order = 1;
    c->mesh.renumber = 1;
    c->mesh.refine = HK_REFINE_AUTO;
    if ((n = case_lookup(g, "refine"))) {
        const char *s = case_scalar(n);
        char *end = NULL;
        long v = s && strcmp(s, "auto") ? strtol(s, &end, 10) : HK_REFINE_AUTO;
        if (!s || (end && (end == s || *end || v < 0)) || v > HK_REFINE_MAX)
            return case_err_at(x, n,
                               "geometry.refine must be auto or a number of uniform refinements "
                               "from 0 to %d, got '%s'",
                               HK_REFINE_MAX, s ? s : "a collection");
        c->mesh.refine = (int)v;
    }
    int quad = -1;
    if ((n = case_lookup(g, "size"))) {
        HK_CALL(case_parse_double(x, n, "geometry.size", &c->mesh.size));
        if (!(c->mesh.size > 0))
            return case_err_at(x, n, "geometry.size (target element size) must be positive, got %g",
                               c->mesh.size);
    }
    if ((n = case_lookup(g, "order"))) {
        HK_CALL(case_parse_int(x, n, "geometry.order", &c->mesh.order));
        if (c->mesh.order != 1 && c->mesh.order != 2)
            return case_err_at(x, n, "geometry.order must be 1 (linear) or 2 (quadratic), got %d",
                               c->mesh.order);
    }
    if ((n = case_lookup(g, "quad"))) HK_CALL(case_parse_bool(x, n, "geometry.quad", &quad));
    if ((n = case_lookup(g, "incomplete")))
        HK_CALL(case_parse_bool(x, n, "geometry.incomplete", &c->mesh.incomplete));
    if ((n = case_lookup(g, "renumber")))
        HK_CALL(case_parse_bool(x, n, "geometry.renumber", &c->mesh.renumber));
    HK_CALL(read_meshing_speed(x, g));
    if (file) {
        c->generate = 0;
        c->mesh.quad = quad > 0;
        return read_geometry_file(x, file);
    } else {
        c->generate = 1;
        c->mesh.quad = quad != 0; /* generated meshes default to quads/hexes */
        if (case_lookup(g, "size"))
            return case_err_at(x, case_key_of(g, "size"),
                               "geometry.size (element size) is for geometry files; "
                               "a generated mesh takes generate.cells");
        HK_CALL(read_generate(x, gen, c->mesh.quad, c->mesh.order, c->mesh.incomplete));
        /* a generated grid refined: the grid with 2^refine times the cells along each axis */
        for (int i = 0; i < c->gen_dim && c->mesh.refine > 0; i++)
            if ((c->gen_cells[i] <<= c->mesh.refine) > 100000)
                return case_err_at(x, case_lookup(g, "refine"),
                                   "geometry.refine %d makes %d cells along an axis of the "
                                   "generated mesh; the most is 100000",
                                   c->mesh.refine, c->gen_cells[i]);
        c->mesh.refine = 0;
    }
    return 0;
}
