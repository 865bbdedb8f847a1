/* Material laws of assembly/ (material.c): functions of one material, no mesh. The law in
 * global axes, hk_material_law, is public (hooke/fem.h); the element kernels
 * (element_kernels.h) take its hk_law. */
#ifndef HOOKE_ASSEMBLY_MATERIAL_H
#define HOOKE_ASSEMBLY_MATERIAL_H

#include "hooke/fem.h"

/* Lamé constants (lambda, mu) of material mt for the analysis (plane stress uses the reduced
 * lambda* = 2 lambda mu / (lambda + 2 mu)). */
void hk_material_lame(const hk_material *mt, hk_analysis a, int dim, double *lam, double *mu);

#endif
