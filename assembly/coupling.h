/* Rigid couplings of remote loads (coupling.c). */
#ifndef HOOKE_ASSEMBLY_COUPLING_H
#define HOOKE_ASSEMBLY_COUPLING_H

#include "hooke/fem.h"
#include "pattern.h"

/* The number of rigid couplings: the remote loads with HK_COUPLING_RIGID. */
int hk_rigid_count(const hk_problem *p);
/* K <- T^T K T, f <- T^T f plus the remote loads at the reference points, after the
 * elimination; s->ndof and the vectors are already sized for the extra block rows. */
int hk_rigid_apply(const hk_problem *p, const hk_adj *n2c, hk_system *s);

#endif
