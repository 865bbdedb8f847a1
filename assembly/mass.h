/* The mass matrix of a modal analysis and its elimination (mass.c). */
#ifndef HOOKE_ASSEMBLY_MASS_H
#define HOOKE_ASSEMBLY_MASS_H

#include "pattern.h"

/* M of the problem (every region's material needs a density): the consistent mass in K's
 * block pattern, or (lumped) its HRZ diagonal in a block-diagonal pattern. K gives only the
 * pattern. Errors name the region without density or the element with a bad Jacobian. */
int hk_mass_assemble(const hk_problem *p, const hk_adj *n2c, const hk_bcsr *K, int lumped,
                     hk_bcsr *M);
/* s->mass_r and s->total_mass from s->M, then M's prescribed rows and columns eliminated as
 * K's are (s->K already eliminated): zero but for the diagonal K_ii / s->lambda_fixed. */
int hk_mass_eliminate(hk_system *s);

#endif
