/* Private helpers of the mesh module (generators, Gmsh loader, RCM). */
#ifndef HOOKE_MESH_IMPL_H
#define HOOKE_MESH_IMPL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooke/fem.h"

/* Corners of type t (the nodes of its linear geometry). */
int hk_eltype_ncorners(hk_eltype t);
/* Reference centroid of the corners. */
void hk_eltype_centroid(hk_eltype t, double *r);
/* Linear (corner) geometry map of an element with corner coordinates xc (3 per corner):
 * x = X(r) and J[a][b] = dX_a/dr_b. Returns the number of corners (0: unsupported type). */
int hk_mesh_linear_map(hk_eltype t, const double *xc, const double *r, double *x, double J[3][3]);
/* Node permutation that mirrors the reference element (flips orientation). */
int hk_eltype_flip_perm(hk_eltype t, int *perm);

/* A growing hk_elems. */
typedef struct {
    hk_elems e;
    int64_t cap, ncap;
} hk_elems_builder;

int hk_elems_push(hk_elems_builder *b, hk_eltype t, const int32_t *nodes, int64_t tag);
void hk_elems_free(hk_elems *e);
/* Sorted unique nodes of a group's elements into g->nodes / g->nnodes. */
int hk_group_collect_nodes(hk_group *g, int64_t nnodes_total);
/* Orientation sign of element e of es (corner geometry at its centroid): the Jacobian
 * determinant for cells of dimension mdim (2D: in the xy plane). */
double hk_elem_jacobian_sign(const hk_elems *es, int64_t e, const double *coords, int mdim);
/* Flip cells with negative Jacobian (in place). Returns the number flipped. */
int64_t hk_mesh_fix_orientation(hk_mesh *m);
/* Node -> cells adjacency (CSR): the cells of node i, in increasing order, are
 * idx[ptr[i] .. ptr[i+1]); the caller frees both (nothing to free on failure). */
int hk_mesh_node_cells(const hk_mesh *m, int64_t **ptr, int64_t **idx);
/* Orient facets of the boundary groups (dimension dim-1) with the normal pointing out of an
 * adjacent cell. */
int hk_mesh_orient_facets(hk_mesh *m);

#endif
