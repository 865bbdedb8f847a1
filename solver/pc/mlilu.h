/* Introspection of pc=mlilu (solver/pc/mlilu.c) for tests and measurements. */
#ifndef HOOKE_PC_MLILU_H
#define HOOKE_PC_MLILU_H

#include <stdint.h>

#include "pc_impl.h"

/* Levels built, rows of each level (rows may be NULL; room for 32) and the fill: stored factor
 * entries of all levels (L, U, the couplings L_E and U_F, a dense last level) over the entries
 * of A. -1 when pc is not mlilu. */
int hk_pc_mlilu_info(const hk_pc *pc, int *nlev, int64_t *rows, double *fill);

#endif
