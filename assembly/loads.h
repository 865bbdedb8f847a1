/* Boundary and nodal loads (loads.c). */
#ifndef HOOKE_ASSEMBLY_LOADS_H
#define HOOKE_ASSEMBLY_LOADS_H

#include "hooke/fem.h"
#include "pattern.h"

/* Add the boundary and nodal loads of p to f_ext (dim per node); checks the temperature loads
 * (their volume loads are integrated with the stiffness, assemble.c). */
int hk_loads_apply(const hk_problem *p, const hk_adj *n2c, double *f_ext);
/* hk_loads_apply on a region of the model (rs: hk_assemble_prepare_region's sums; NULL: the
 * whole model): a remote force's area, centroid and moments of inertia summed over the
 * regions, its boundary's facets here or not. */
int hk_loads_apply_region(const hk_problem *p, const hk_adj *n2c, const hk_region_sums *rs,
                          double *f_ext);

#endif
