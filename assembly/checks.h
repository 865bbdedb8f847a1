/* Checks of the model before assembly (checks.c). */
#ifndef HOOKE_ASSEMBLY_CHECKS_H
#define HOOKE_ASSEMBLY_CHECKS_H

#include "hooke/fem.h"

/* The mesh (dimension, element kernels, node and region indices, coordinates, the
 * axisymmetric section), the body force and the materials of the regions with cells; every
 * error names the element, node or region and the fix. */
int hk_check_problem(const hk_problem *p);
/* used[r] |= 1 for every region r that carries a cell (nregions entries; cell_region valid). */
int hk_regions_used(const hk_mesh *m, uint8_t *used);
/* The error of cell e, whose Jacobian (or radius) is not positive at a quadrature point. */
int hk_check_inverted(const hk_problem *p, int64_t e);

#endif
