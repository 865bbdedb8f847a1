/* One level of the AMG set-up on the host, built by the set-up's own ops, for the suites of the
 * sparse products and the values-only re-set-up (tests/test_amg_ops.c, tests/test_amg_update.c). */
#ifndef HOOKE_TEST_AMG_LEVEL_H
#define HOOKE_TEST_AMG_LEVEL_H

#include "hk_impl.h"

/* K = elasticity3d:m (3x3 blocks) and its first level on the cpu backend: the strength graph
 * (threshold 0.02), aggregation, the rigid-body near-null space, the tentative T (3x6 blocks),
 * A T, D^-1 (BLOCK_INV), P = T - w D^-1 A T (w = 0.37), R = P^T, A P and R (A P). */
typedef struct hk_test_level {
    hk_bmat K, T, AT, P, R, AP, Ac;
    hk_vec *Dinv;
    double w;
} hk_test_level;

void hk_test_level_make(int m, hk_test_level *L);
void hk_test_level_free(hk_test_level *L);

#endif
