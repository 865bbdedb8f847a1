/* Private helpers of postproc/: a minimal element library (shape functions, quadrature,
 * Gmsh -> VTK node order) and the small tensor routines. Only postproc/ and its tests use it.
 *
 * NOTE: assembly/ has its own shape functions; no header exposed them when this was written,
 * so this is a deliberate duplicate to merge later (one element library for both). */
#ifndef HOOKE_POSTPROC_IMPL_H
#define HOOKE_POSTPROC_IMPL_H

#include "hooke/fem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HK_PP_MAX_NODES 27 /* hex27 */
#define HK_PP_MAX_QP 27    /* 3x3x3 Gauss */

/* What postproc needs to know of an element type. */
typedef struct hk_pp_elem {
    const char *name;   /* "tet10" */
    int dim;            /* 2 or 3 */
    int nnodes;
    int kernel;         /* 1: shape functions available (strain/stress recovery) */
    int vtk_type;       /* VTK cell type number */
    const int *vtk_perm; /* VTK node i is Gmsh node vtk_perm[i]; NULL: same order */
    const double (*xi)[3]; /* natural coordinates of the nodes, Gmsh order */
} hk_pp_elem;

/* The description of type t, NULL for types postproc cannot handle (points, lines). */
const hk_pp_elem *hk_pp_elem_get(int t);

/* Shape functions N[nnodes] and their natural derivatives dN[nnodes][3] at xi. */
void hk_pp_shape(int t, const double xi[3], double *N, double (*dN)[3]);

/* Gauss rule exact for the stiffness of an affine element of type t: points and weights
 * (reference measure: 1/2 triangle, 1/6 tetrahedron, 2^dim quad/hex). Returns the count. */
int hk_pp_quadrature(int t, double (*pts)[3], double *w);

/* Von Mises stress of s = xx yy zz xy yz xz. */
double hk_pp_von_mises(const double s[6]);

/* Eigenvalues of the symmetric tensor s (xx yy zz xy yz xz), sorted descending (Jacobi). */
void hk_pp_principal(const double s[6], double ev[3]);

#ifdef __cplusplus
}
#endif
#endif
