/* Spring supports (springs.c): an elastic foundation on facets, grounded springs at nodes. */
#ifndef HOOKE_ASSEMBLY_SPRINGS_H
#define HOOKE_ASSEMBLY_SPRINGS_H

#include "groups.h"

/* Check the spring supports' stiffnesses and groups. */
int hk_springs_check(const hk_problem *p, const hk_adj *n2c);
/* Add their stiffness to K (before the elimination). */
int hk_springs_add(const hk_problem *p, const hk_adj *n2c, hk_bcsr *K);
/* y += K_s u of support k (k < 0: every spring support; dim per node): the spring forces of
 * the reactions (postproc/). */
int hk_springs_apply(const hk_problem *p, int k, const double *u, double *y);
/* Visit the directions the spring supports hold at each node (the rigid-body check). */
int hk_springs_directions(const hk_problem *p, const hk_adj *n2c, hk_dir_fn fn, void *ctx);

#endif
