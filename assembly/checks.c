/* Checks of the model before assembly: the mesh (dimension, element types and their node
 * counts, node and region indices, finite coordinates, the axisymmetric section in x >= 0),
 * the body force, and the material of every region that carries cells. */
#include <math.h>
#include <stdlib.h>

#include "checks.h"
#include "elements.h"
#include "groups.h"

int64_t hk_axisym_bad_node(const hk_mesh *m)
{
    /* rounding of a mesher may leave an axis node at -1e-17: tolerate 1e-9 of the mesh size
     * (minima, maxima and the smallest bad node do not depend on the order they are taken in) */
    double lo0 = INFINITY, lo1 = INFINITY, hi0 = -INFINITY, hi1 = -INFINITY;
#pragma omp parallel for schedule(static) reduction(min : lo0, lo1) reduction(max : hi0, hi1)
    for (int64_t i = 0; i < m->nnodes; i++) {
        lo0 = fmin(lo0, m->coords[3 * i]), hi0 = fmax(hi0, m->coords[3 * i]);
        lo1 = fmin(lo1, m->coords[3 * i + 1]), hi1 = fmax(hi1, m->coords[3 * i + 1]);
    }
    const double tol = 1e-9 * fmax(hi0 - lo0, hi1 - lo1);
    int64_t bad = INT64_MAX;
    const int64_t tot = m->cells.ptr[m->cells.n];
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t k = 0; k < tot; k++) {
        const int32_t v = m->cells.nodes[k];
        if (v >= 0 && v < m->nnodes && m->coords[3 * (int64_t)v] < -tol && v < bad) bad = v;
    }
    return bad == INT64_MAX ? -1 : bad;
}

int hk_regions_used(const hk_mesh *m, uint8_t *used)
{
    const int nr = m->nregions;
    int ierr = 0;
#pragma omp parallel
    {
        /* each thread marks its cells' regions in its own array; the marks are then or-ed */
        uint8_t *mine = calloc((size_t)nr + 1, 1);
        if (!mine) {
#pragma omp atomic write
            ierr = 1;
        }
#pragma omp for schedule(static)
        for (int64_t e = 0; e < m->cells.n; e++)
            if (mine) mine[m->cell_region[e]] = 1;
#pragma omp critical(hk_regions_used)
        for (int r = 0; r < nr && mine; r++)
            used[r] |= mine[r];
        free(mine);
    }
    HK_CHECK(!ierr, HK_ERR_MEMORY, "out of host memory for the regions' marks (%d regions)", nr);
    return 0;
}

/* Check the material of region r (which carries cells). */
static int check_one(const hk_problem *p, int r)
{
    const hk_mesh *m = p->mesh;
    const char *rn = hk_asm_region_name(m, r);
    HK_CHECK(p->materials, HK_ERR_MODEL,
             "region '%s' has no material; assign a material to every region", rn);
    const hk_material *mt = &p->materials[r];
    HK_CHECK(mt->name[0] || mt->E != 0 || mt->kind != HK_MAT_ISOTROPIC, HK_ERR_MODEL,
             "region '%s' has no material; assign a material to every region", rn);
    const char *mn = mt->name[0] ? mt->name : rn;
    HK_CHECK(isfinite(mt->rho) && mt->rho >= 0, HK_ERR_MODEL,
             "material '%s' of region '%s' has density rho = %g; rho must be >= 0", mn, rn,
             mt->rho);
    hk_law law;
    if (mt->kind != HK_MAT_ISOTROPIC) return hk_material_law(mt, p->analysis, m->dim, &law);
    HK_CHECK(isfinite(mt->E) && mt->E > 0, HK_ERR_MODEL,
             "material '%s' of region '%s' has Young's modulus E = %g; E must be positive", mn, rn,
             mt->E);
    HK_CHECK(isfinite(mt->nu) && mt->nu > -1 && mt->nu < 0.5, HK_ERR_MODEL,
             "material '%s' of region '%s' has Poisson's ratio nu = %g; nu must lie in "
             "(-1, 0.5)",
             mn, rn, mt->nu);
    return hk_material_law(mt, p->analysis, m->dim, &law); /* the expansion coefficients */
}

/* The thickness (2D) and the material of every region that carries cells. */
static int check_materials(const hk_problem *p)
{
    const hk_mesh *m = p->mesh;
    if (m->dim == 2)
        HK_CHECK(isfinite(p->thickness) && p->thickness >= 0, HK_ERR_MODEL,
                 "the thickness %g of the 2D model is not valid; give a positive thickness "
                 "(0 means unit thickness)",
                 p->thickness);
    /* only regions that carry cells need a material */
    uint8_t *used;
    HK_CALL(hk_calloc((size_t)m->nregions + 1, 1, &used));
    int ierr = hk_regions_used(m, used);
    for (int r = 0; r < m->nregions && !ierr; r++) {
        if (used[r]) ierr = check_one(p, r);
    }
    free(used);
    return ierr;
}

/* The checks of cell e: its element kernel, node count, node and region indices. */
static int check_cell(const hk_mesh *m, int64_t e)
{
    int t = m->cells.type[e];
    const hk_elref *r = hk_elref_get((hk_eltype)t);
    HK_CHECK(r && r->dim == m->dim, HK_ERR_MODEL,
             "element %lld (%s, Gmsh tag %lld) has no %dD element kernel; Hooke supports "
             "%s",
             (long long)e, hk_el_name(t), hk_asm_tag(&m->cells, e), m->dim,
             m->dim == 2 ? "tri3, tri6, quad4, quad8, quad9"
                         : "tet4, tet10, hex8, hex20, hex27, wedge6, wedge15, wedge18, "
                           "pyr5, pyr13, pyr14");
    HK_CHECK(m->cells.ptr[e + 1] - m->cells.ptr[e] == r->nnodes, HK_ERR_MODEL,
             "element %lld (%s, Gmsh tag %lld) has %lld nodes instead of %d; the mesh is "
             "corrupt",
             (long long)e, r->name, hk_asm_tag(&m->cells, e),
             (long long)(m->cells.ptr[e + 1] - m->cells.ptr[e]), r->nnodes);
    for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++)
        HK_CHECK(m->cells.nodes[k] >= 0 && m->cells.nodes[k] < m->nnodes, HK_ERR_MODEL,
                 "element %lld (%s, Gmsh tag %lld) refers to node %d, outside the mesh's "
                 "%lld nodes; the mesh is corrupt",
                 (long long)e, r->name, hk_asm_tag(&m->cells, e), m->cells.nodes[k],
                 (long long)m->nnodes);
    HK_CHECK(m->cell_region[e] >= 0 && m->cell_region[e] < m->nregions, HK_ERR_MODEL,
             "element %lld (%s, Gmsh tag %lld) has region %d, outside the mesh's %d "
             "regions; the mesh is corrupt",
             (long long)e, r->name, hk_asm_tag(&m->cells, e), m->cell_region[e], m->nregions);
    return 0;
}

int hk_check_problem(const hk_problem *p)
{
    HK_CHECK(p && p->mesh, HK_ERR_ARG, "hk_assemble: the problem or its mesh is NULL");
    const hk_mesh *m = p->mesh;
    HK_CHECK(m->dim == 2 || m->dim == 3, HK_ERR_MODEL,
             "the mesh has dimension %d; Hooke assembles 2D and 3D meshes only", m->dim);
    HK_CHECK(m->nnodes > 0 && m->nnodes < INT32_MAX, HK_ERR_MODEL,
             "the mesh has %lld nodes; Hooke handles 1 to 2^31 - 2 nodes", (long long)m->nnodes);
    HK_CHECK(m->cells.n > 0, HK_ERR_MODEL,
             "the mesh has no %dD elements; mesh the domain (a physical group of dimension %d)",
             m->dim, m->dim);
    HK_CHECK(!(m->dim == 2 && p->analysis == HK_SOLID), HK_ERR_MODEL,
             "a 2D mesh needs a plane analysis; choose plane stress or plane strain");
    HK_CHECK(!(m->dim == 3 && p->analysis == HK_AXISYMMETRIC), HK_ERR_MODEL,
             "an axisymmetric analysis needs a 2D mesh of the r-z section (x = r, y = z); "
             "mesh the section, or choose the 3d analysis for a 3D mesh");
    HK_CHECK(m->nregions > 0 && m->cell_region, HK_ERR_MODEL,
             "the mesh has no region; put the %dD elements in a physical group", m->dim);
    /* every cell and coordinate on every thread; the first bad one in order is reported, so
     * the message does not depend on the thread count */
    int nodes_of[256]; /* the node count of each type with a kernel in dim, 0 for the others */
    for (int t = 0; t < 256; t++) {
        const hk_elref *r = hk_elref_get((hk_eltype)t);
        nodes_of[t] = r && r->dim == m->dim ? r->nnodes : 0;
    }
    int64_t bad = INT64_MAX;
    const int64_t *ptr = m->cells.ptr;
    const int32_t *nodes = m->cells.nodes, *region = m->cell_region;
    const uint8_t *type = m->cells.type;
    const uint32_t nn = (uint32_t)m->nnodes, nr = (uint32_t)m->nregions; /* both < 2^31 */
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t e = 0; e < m->cells.n; e++) {
        if (e >= bad) continue;
        const int64_t k0 = ptr[e], k1 = ptr[e + 1];
        /* a negative index is a large unsigned one */
        int ok = nodes_of[type[e]] > 0 && k1 - k0 == nodes_of[type[e]] && (uint32_t)region[e] < nr;
        for (int64_t k = k0; k < k1; k++)
            ok &= (uint32_t)nodes[k] < nn;
        if (!ok) bad = e;
    }
    if (bad != INT64_MAX) { /* its message */
        const int ierr = check_cell(m, bad);
        return ierr ? ierr
                    : hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                                   "element %lld failed a check that names no fault",
                                   (long long)bad);
    }
    const double *x = m->coords;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t b = 0; b < 3 * m->nnodes; b += 1024) { /* blocks: a branch-free test each */
        const int64_t end = b + 1024 < 3 * m->nnodes ? b + 1024 : 3 * m->nnodes;
        int ok = 1;
        for (int64_t i = b; i < end; i++)
            ok &= x[i] - x[i] == 0; /* NaN for an infinite or NaN coordinate */
        for (int64_t i = b; i < end && !ok && i < bad; i++)
            if (!isfinite(x[i])) bad = i;
    }
    HK_CHECK(bad == INT64_MAX, HK_ERR_MODEL,
             "node %lld has a non-finite coordinate; the mesh is corrupt", (long long)(bad / 3));
    if (p->analysis == HK_AXISYMMETRIC) {
        const int64_t bad = hk_axisym_bad_node(m);
        HK_CHECK(bad < 0, HK_ERR_MODEL,
                 "node %lld of an element lies at r = x = %g < 0; an axisymmetric section lies "
                 "in x >= 0 (x is the radius, the axis is x = 0): move the mesh to that side",
                 (long long)bad, bad < 0 ? 0.0 : m->coords[3 * bad]);
    }
    for (int k = 0; k < 3; k++)
        HK_CHECK(isfinite(p->body_force[k]) && isfinite(p->gravity[k]), HK_ERR_MODEL,
                 "the body force or gravity has a non-finite component; give finite values");
    return check_materials(p);
}

int hk_check_inverted(const hk_problem *p, int64_t e)
{
    const hk_mesh *m = p->mesh;
    const hk_eltype t = (hk_eltype)m->cells.type[e];
    return hk_error_set(HK_ERR_MODEL, __FILE__, __LINE__,
                        "element %lld (%s, Gmsh tag %lld) in region '%s' has a non-positive "
                        "Jacobian%s; it is inverted or degenerate — check the mesh",
                        (long long)e, hk_el_name(t), hk_asm_tag(&m->cells, e),
                        hk_asm_region_name(m, m->cell_region[e]),
                        p->analysis == HK_AXISYMMETRIC ? " or radius r = x <= 0 at a quadrature point"
                                                       : "");
}
