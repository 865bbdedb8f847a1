/* Boundary and nodal loads (loads.c). */
#ifndef HOOKE_ASSEMBLY_LOADS_H
#define HOOKE_ASSEMBLY_LOADS_H

#include "hooke/fem.h"
#include "pattern.h"

/* Add the boundary and nodal loads of p to f_ext (dim per node); checks the temperature loads
 * (their volume loads are integrated with the stiffness, assemble.c). */
int hk_loads_apply(const hk_problem *p, const hk_adj *n2c, double *f_ext);

#endif
