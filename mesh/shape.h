/* Shape functions of the reference elements (Gmsh node ordering) and the reference coordinates
 * of their nodes: the map from a reference element to a mesh cell. In mesh/ because placing
 * second-order nodes needs them (elevate.c); assembly/ integrates with them (elements.h).
 *
 * Reference domains: line/quad/hex [-1,1]^d; tri (0,0),(1,0),(0,1); tet (0,0,0),(1,0,0),
 * (0,1,0),(0,0,1); wedge tri x [-1,1]; pyramid base [-1,1]^2 at zeta 0, apex (0,0,1). */
#ifndef HOOKE_MESH_SHAPE_H
#define HOOKE_MESH_SHAPE_H

#include "hooke/fem.h"

/* Shape functions and their reference derivatives at xi (N may be NULL); nothing for point. */
void hk_el_shape(hk_eltype t, const double xi[3], double *N, double (*dN)[3]);
/* Reference coordinates of node a of element type t. */
void hk_el_node_xi(hk_eltype t, int a, double xi[3]);

#endif
