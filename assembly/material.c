/* Isotropic linear elastic materials: checks and Lamé constants per analysis.
 *
 * The stiffness kernel uses the isotropic form
 *     K_ab[i][j] = lambda g_a[i] g_b[j] + mu g_a[j] g_b[i] + mu (g_a . g_b) delta_ij
 * (g = shape-function gradient), which equals B^T D B for 3D and plane strain with the
 * ordinary lambda, and for plane stress with lambda* = 2 lambda mu / (lambda + 2 mu)
 * = E nu / (1 - nu^2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "assembly_impl.h"

void hk_material_lame(const hk_material *mt, hk_analysis a, int dim, double *lam, double *mu)
{
    const double E = mt->E, nu = mt->nu;
    *mu = E / (2 * (1 + nu));
    if (dim == 2 && a == HK_PLANE_STRESS)
        *lam = E * nu / (1 - nu * nu);
    else
        *lam = E * nu / ((1 + nu) * (1 - 2 * nu));
}

double hk_asm_thickness(const hk_problem *p)
{
    if (p->mesh->dim != 2) return 1;
    return p->thickness == 0 ? 1 : p->thickness;
}

/* Check the material of region r (which carries cells). */
static int check_one(const hk_problem *p, int r)
{
    const hk_mesh *m = p->mesh;
    const char *rn = hk_asm_region_name(m, r);
    HK_CHECK(p->materials, HK_ERR_MODEL,
             "region '%s' has no material; assign a material to every region", rn);
    const hk_material *mt = &p->materials[r];
    HK_CHECK(mt->name[0] || mt->E != 0, HK_ERR_MODEL,
             "region '%s' has no material; assign a material to every region", rn);
    const char *mn = mt->name[0] ? mt->name : rn;
    HK_CHECK(isfinite(mt->E) && mt->E > 0, HK_ERR_MODEL,
             "material '%s' of region '%s' has Young's modulus E = %g; E must be positive", mn, rn,
             mt->E);
    HK_CHECK(isfinite(mt->nu) && mt->nu > -1 && mt->nu < 0.5, HK_ERR_MODEL,
             "material '%s' of region '%s' has Poisson's ratio nu = %g; nu must lie in "
             "(-1, 0.5)",
             mn, rn, mt->nu);
    HK_CHECK(isfinite(mt->rho) && mt->rho >= 0, HK_ERR_MODEL,
             "material '%s' of region '%s' has density rho = %g; rho must be >= 0", mn, rn,
             mt->rho);
    return 0;
}

int hk_materials_check(const hk_problem *p)
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
    for (int64_t e = 0; e < m->cells.n; e++)
        used[m->cell_region[e]] = 1;
    for (int r = 0; r < m->nregions; r++) {
        if (!used[r]) continue;
        int ierr = check_one(p, r);
        if (ierr) {
            free(used);
            return ierr;
        }
    }
    free(used);
    return 0;
}
