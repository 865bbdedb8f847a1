/* Introspection of pc=mlilu (solver/pc/mlilu.c) for tests and measurements, and the matching
 * it may order with (solver/pc/matching.c). */
#ifndef HOOKE_PC_MLILU_H
#define HOOKE_PC_MLILU_H

#include <stdint.h>

#include "pc_impl.h"

/* Levels built, rows of each level (rows may be NULL; room for 32) and the fill: stored factor
 * entries of all levels (L, U, the couplings L_E and U_F, a dense last level) over the entries
 * of A. -1 when pc is not mlilu. */
int hk_pc_mlilu_info(const hk_pc *pc, int *nlev, int64_t *rows, double *fill);

/* Maximum-product matching of the square A (solver/pc/matching.c, MC64 option 5 style):
 * rowof[j] = the row matched to column j (a permutation), dr, dc the scaling with every entry
 * of Dr A Dc at most 1 in modulus and the matched ones 1 (n entries each); *unmatched = the
 * columns no perfect matching reached (A structurally singular), paired with the rows left. */
int hk_mc64_matching(const hk_csr *A, int32_t *rowof, double *dr, double *dc, int64_t *unmatched);

#endif
