/* Lookups in the mesh and the problem that every part of assembly/ shares (groups.c): names
 * of regions and boundary groups for messages, the nodes of a group, the quadrature points of
 * a boundary's facets, the thickness and the uniform temperature change of a region. Built
 * on the reference elements (elements.h) and the adjacency (pattern.h) only. */
#ifndef HOOKE_ASSEMBLY_GROUPS_H
#define HOOKE_ASSEMBLY_GROUPS_H

#include "hooke/fem.h"
#include "pattern.h"

/* Name of region r of a mesh for messages ("domain", or "#r" when unnamed). */
const char *hk_asm_region_name(const hk_mesh *m, int r);
/* Name of boundary group b ("left", or "#b"). */
const char *hk_asm_boundary_name(const hk_mesh *m, int b);
/* Gmsh tag of element e of es (e + 1 when tags are absent). */
long long hk_asm_tag(const hk_elems *es, int64_t e);

/* Thickness factor of the problem: thickness in 2D (0 means 1), 1 in 3D and axisymmetric. */
double hk_asm_thickness(const hk_problem *p);

/* Nodes of boundary group b: its node list, or the unique nodes of its elements when the list
 * is empty. *nodes is malloc'ed; free it. */
int hk_group_nodes(const hk_mesh *m, int b, int64_t *n, int32_t **nodes);

/* Called at every quadrature point of a boundary's facets: the facet's nodes fn (nf of them),
 * the shape functions N there, the point x, the weight w (rule weight x area element x 2D
 * thickness, x r in axisymmetric) and the unit normal (outward when asked, else either
 * orientation). */
typedef void (*hk_facet_fn)(void *ctx, const int32_t *fn, int nf, const double *N,
                            const double x[3], double w, const double nrm[3]);
/* The quadrature points (the facet-load rule) of the facets of boundary b, checked (dimension
 * dim - 1, facet types, nodes on cells); `what` ("a remote force") names the user in
 * messages. outward: orient each facet's normal away from its one adjacent cell (an error
 * when a facet lies on no cell or between two). */
int hk_facet_points(const hk_problem *p, const hk_adj *n2c, int b, const char *what, int outward,
                    hk_facet_fn fn, void *ctx);

/* hk_facet_points with the callbacks on the threads: each thread takes every point in order
 * with its own node range [lo, hi) and may write only to the nodes of that range (so each
 * node's sum is made in the facets' order, whatever the threads). */
typedef void (*hk_facet_range_fn)(void *ctx, int32_t lo, int32_t hi, const int32_t *fn, int nf,
                                  const double *N, const double x[3], double w,
                                  const double nrm[3]);
int hk_facet_points_ranged(const hk_problem *p, const hk_adj *n2c, int b, const char *what,
                           int outward, hk_facet_range_fn fn, void *ctx);

/* Called for a direction dir that a support holds at a node (the rigid-body check). */
typedef void (*hk_dir_fn)(void *ctx, int32_t node, const double dir[3]);

#endif
