/* Private helpers of postproc/. Element data come from the other modules: shape functions
 * and Gauss rules from assembly/elements.h (the same rules as the stiffness, so reactions
 * are consistent with K), element names, VTK numbers and the Gmsh -> VTK node order from
 * mesh's table in fem.h. Only postproc/ and its tests use this header. */
#ifndef HOOKE_POSTPROC_IMPL_H
#define HOOKE_POSTPROC_IMPL_H

#include <stdio.h>

#include "hooke/fem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Von Mises stress of s = xx yy zz xy yz xz. */
double hk_pp_von_mises(const double s[6]);

/* Eigenvalues of the symmetric tensor s (xx yy zz xy yz xz), sorted descending (Jacobi). */
void hk_pp_principal(const double s[6], double ev[3]);

/* hk_postproc in steps, shared with the device recovery (fem_cuda/): the checks, the fields'
 * arrays, the displacements with prescribed and rigidly coupled values (hk_pp_prepare); the
 * elements' strains, stresses and internal forces, nodal averages and invariants (the host's
 * loop in hk_postproc, or a device); the maxima and reactions from the internal forces
 * (hk_pp_finish). */
typedef struct hk_pp_work {
    int nlaws;
    hk_law *laws;   /* per region */
    double *dTr;    /* per region: the uniform temperature change */
    double thick;   /* 2D thickness (1 in 3D and axisymmetric) */
    double *fint;   /* 3 per node: the internal forces, summed in element order */
    int64_t nowned; /* the nodes [0, nowned) whose maxima and reactions are this part's (all
                     * nodes but in hk_postproc_part) */
} hk_pp_work;
int hk_pp_prepare(const hk_problem *p, const hk_system *s, const double *u, hk_fields *out,
                  hk_pp_work *w);
int hk_pp_finish(const hk_problem *p, const hk_system *s, hk_pp_work *w, hk_fields *out);
void hk_pp_work_free(hk_pp_work *w);
/* The error of element e, inverted or degenerate (out->u from hk_pp_prepare): its message. */
int hk_pp_element_error(const hk_problem *p, const hk_pp_work *w, const hk_fields *out, int64_t e);
/* s as XML attribute text (&, <, >, " escaped) (vtu.c). */
void hk_pp_put_escaped(FILE *fp, const char *s);

#ifdef __cplusplus
}
#endif
#endif
