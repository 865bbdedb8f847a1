/* Private helpers of the mesh module (generators, Gmsh loader, RCM). */
#ifndef HOOKE_MESH_IMPL_H
#define HOOKE_MESH_IMPL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hooke/fem.h"

/* Reference centroid of the corners. */
void hk_eltype_centroid(hk_eltype t, double *r);
/* Linear (corner) geometry map of an element with corner coordinates xc (3 per corner):
 * x = X(r) and J[a][b] = dX_a/dr_b. Returns the number of corners (0: unsupported type). */
int hk_mesh_linear_map(hk_eltype t, const double *xc, const double *r, double *x, double J[3][3]);
/* The quadratic type of linear type t (complete, or serendipity where incomplete and there
 * is one: quad8, hex20, wedge15, pyr13); points stay points; HK_EL_COUNT for other types. */
hk_eltype hk_eltype_quadratic(hk_eltype t, int incomplete);
/* Sort v[0..n) in increasing order (insertion for a short list, qsort for a long one). */
void hk_sort_i32(int32_t *v, int64_t n);
/* Sort each list idx[ptr[i] .. ptr[i+1]), i < n, in increasing order (short lists). */
void hk_sort_lists(const int64_t *ptr, int64_t *idx, int64_t n);
/* The corners node i of type t lies between (those whose linear shape functions do not vanish
 * there): 1 for a corner, 2 on an edge, 4 on a quadrilateral face, 8 inside a hexahedron.
 * Returns their count. */
int hk_eltype_node_corners(hk_eltype t, int i, int8_t *corners);
/* Node permutation that mirrors the reference element (flips orientation). */
int hk_eltype_flip_perm(hk_eltype t, int *perm);

/* A growing hk_elems. */
typedef struct {
    hk_elems e;
    int64_t cap, ncap;
} hk_elems_builder;

/* A .msh file's version (2.x or 4.x) and its node and element counts against 2^31 and the
 * file's size, before Gmsh allocates from them (msh_check.c). */
int hk_msh_check(const char *path);

int hk_elems_push(hk_elems_builder *b, hk_eltype t, const int32_t *nodes, int64_t tag);
/* Room for nelem more elements of nnodes nodes in all (written directly into b->e, whose ptr
 * then gets the new rows; b->e.n counts them). */
int hk_elems_reserve(hk_elems_builder *b, int64_t nelem, int64_t nnodes);
void hk_elems_free(hk_elems *e);
/* Sorted unique nodes of a group's elements (nodes of a mesh of nnodes_total) into g->nodes /
 * g->nnodes, in parallel. */
int hk_group_collect_nodes(hk_group *g, int64_t nnodes_total);
/* a[i + 1] += a[i] for i < n (a has n + 1 entries), in parallel: counts into offsets. */
void hk_prefix_sum(int64_t *a, int64_t n);
/* The entries of v[0..n) that are 0 numbered 0, 1, ... in index order (the others left as they
 * are), in parallel. Returns their count. */
int64_t hk_number_zeros(int32_t *v, int64_t n);
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

/* A model curve or surface with its linear mesh (lines; triangles and quadrilaterals, nodes
 * in the mesh's numbering, -1 off the mesh), onto which hk_mesh_elevate moves the
 * second-order nodes of its edges and faces. */
typedef struct hk_elev_entity {
    int dim, tag; /* the Gmsh entity */
    int flat;     /* a line or a plane: the straight midpoint already lies on it */
    hk_elems elems;
} hk_elev_entity;

typedef struct hk_elev_geom {
    int n;
    hk_elev_entity *ent; /* a node on several goes onto the last (curves after surfaces) */
    /* Move the n points xyz (3 each) onto entity e, in place; nonzero leaves them straight */
    int (*project)(void *ctx, const hk_elev_entity *e, double *xyz, int64_t n);
    void *ctx;
    /* raise the entities' elements too (ent[k].elems become quadratic, those off the mesh
     * dropped), so that refinement can split them for its next level */
    int raise_entities;
} hk_elev_geom;

typedef struct hk_elev_stats {
    int64_t edges, faces, centres; /* new nodes */
    int64_t projected;             /* moved onto a curve or surface */
    int64_t too_far;  /* left straight: the closest point was over half the edge away */
    int64_t straight; /* put back straight: curved, it inverted a cell */
    int64_t failed;   /* left straight: the projection onto their entity failed */
    int64_t dropped;  /* boundary elements not on the cells' faces, dropped */
} hk_elev_stats;

/* Raise the linear mesh m (cells positively oriented) to second order in place: one node per
 * unique edge, per quadrilateral face and per hexahedron where the complete types need them
 * (incomplete: quad8, hex20, wedge15, pyr13), in Gmsh's node order; the new nodes numbered
 * after the corners, edges then faces then centres, each sorted by its corners (the same for
 * any thread count). Boundary groups get the cells' nodes. g (may be NULL): the curved
 * geometry. */
int hk_mesh_elevate(hk_mesh *m, int incomplete, const hk_elev_geom *g, hk_elev_stats *st);

/* The width from which the levels of the RCM walks run in parallel (nodes <= 0: the default
 * HK_RCM_WIDE_LEVEL); the tests lower it to reach the parallel walks on small meshes. Returns
 * the previous width. */
enum { HK_RCM_WIDE_LEVEL = 16384 };
int64_t hk_mesh_rcm_wide_level(int64_t nodes);

/* The reverse Cuthill-McKee numbering of hk_mesh_renumber_rcm, not applied: newid[old node]
 * (malloc'd, NULL for an empty mesh). */
int hk_mesh_rcm_order(const hk_mesh *m, int32_t **newid);
/* Renumber the nodes: node i becomes newid[i] (coordinates, cells, boundary groups). */
int hk_mesh_permute_nodes(hk_mesh *m, const int32_t *newid);

/* Locality before refinement: the nodes in RCM order (g's entity meshes follow) and the cells
 * by their first node in it, so that the finer levels' cells, and the nodes they share, lie
 * close in memory. */
int hk_mesh_localize(hk_mesh *m, const hk_elev_geom *g);

/* hk_mesh_refine with the new nodes on model curves and surfaces moved onto them: g's
 * entities (their linear elements) are refined along with the mesh, ready for
 * hk_mesh_elevate afterwards. g may be NULL. */
int hk_mesh_refine_geom(hk_mesh *m, int levels, const hk_elev_geom *g, hk_mesh_refine_stats *st);

/* hk_mesh_refine_geom that also extends keys (one per node of m, malloc'ed) to the nodes each
 * level adds (hk_node_keys_extend): a node's key is the same wherever the mesh around it is
 * refined, in the whole mesh or in a region of it. */
int hk_mesh_refine_keyed(hk_mesh *m, int levels, const hk_elev_geom *g, hk_mesh_refine_stats *st,
                         hk_node_key **keys);
/* After hk_mesh_elevate raised m (its cells now quadratic) from nv nodes: *keys (nv of them,
 * realloc'ed to m->nnodes) gets the key of every new node, made from its corners' keys (an
 * edge's 2, a quadrilateral face's 4, a hexahedron's 8, in sorted order). */
int hk_node_keys_extend(const hk_mesh *m, int64_t nv, hk_node_key **keys);
/* The key of node i of a coarse mesh. */
hk_node_key hk_node_key_coarse(int64_t i);

/* hk_mesh_load_region's steps after Gmsh's coarse mesh m (linear, oriented): its RCM order,
 * reg->select, the kept cells cut out, refined levels times with their keys (g: the
 * geometry, may be NULL), raised to second order (order2; straight: without g), renumbered
 * (renumber: RCM), the groups back in their places. */
int hk_mesh_region_make(hk_mesh_region *reg, int levels, int order2, int incomplete,
                        int straight, int renumber, hk_elev_geom *g, hk_mesh *m,
                        hk_mesh_refine_stats *st);

#endif
