/* Private helpers of postproc/. Element data come from the other modules: shape functions
 * and Gauss rules from assembly/elements.h (the same rules as the stiffness, so reactions
 * are consistent with K), element names, VTK numbers and the Gmsh -> VTK node order from
 * mesh's table in fem.h. Only postproc/ and its tests use this header. */
#ifndef HOOKE_POSTPROC_IMPL_H
#define HOOKE_POSTPROC_IMPL_H

#include "hooke/fem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Von Mises stress of s = xx yy zz xy yz xz. */
double hk_pp_von_mises(const double s[6]);

/* Eigenvalues of the symmetric tensor s (xx yy zz xy yz xz), sorted descending (Jacobi). */
void hk_pp_principal(const double s[6], double ev[3]);

#ifdef __cplusplus
}
#endif
#endif
