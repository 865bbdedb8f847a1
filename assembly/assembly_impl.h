/* Private pieces of assembly/ shared between its files. */
#ifndef HOOKE_ASSEMBLY_IMPL_H
#define HOOKE_ASSEMBLY_IMPL_H

#include "elements.h"
#include "hooke/fem.h"

/* Node-to-cell adjacency: cells of node i are idx[ptr[i] .. ptr[i+1]), increasing. */
typedef struct hk_adj {
    int64_t n;
    int64_t *ptr;
    int64_t *idx;
} hk_adj;

void hk_adj_free(hk_adj *a);
/* The node-to-cell adjacency of a mesh. */
int hk_asm_node_cells(const hk_mesh *m, hk_adj *a);

/* Name of region r of a mesh for messages ("domain", or "#r" when unnamed). */
const char *hk_asm_region_name(const hk_mesh *m, int r);
/* Name of boundary group b ("left", or "#b"). */
const char *hk_asm_boundary_name(const hk_mesh *m, int b);
/* Gmsh tag of element e of es (e + 1 when tags are absent). */
long long hk_asm_tag(const hk_elems *es, int64_t e);

/* Lamé constants (lambda, mu) of material mt for the analysis (plane stress uses the reduced
 * lambda* = 2 lambda mu / (lambda + 2 mu)). */
void hk_material_lame(const hk_material *mt, hk_analysis a, int dim, double *lam, double *mu);
/* Check E, nu, rho of every material used by a cell; errors name the material and region. */
int hk_materials_check(const hk_problem *p);
/* Thickness factor of the problem: thickness in 2D (0 means 1), 1 in 3D. */
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
/* Position of block column j in block row i of K (sorted rows), -1 when absent. */
int64_t hk_asm_find_block(const hk_bcsr *K, int64_t i, int32_t j);

/* Add the boundary and nodal loads of p to f_ext (dim per node). */
int hk_loads_apply(const hk_problem *p, const hk_adj *n2c, double *f_ext);

/* Fill fixed[] and u_fixed[] from the supports; conflicting values are errors. */
int hk_supports_apply(const hk_problem *p, uint8_t *fixed, double *u_fixed, int64_t *nfixed);
/* Error HK_ERR_MODEL when the constrained dofs leave a rigid-body mode of any connected part
 * of the mesh free; the message names the free modes. */
int hk_check_rigid(const hk_problem *p, const hk_adj *n2c, const uint8_t *fixed);
/* Spring supports (springs.c): check their stiffnesses and groups; add their stiffness to K
 * (before the elimination); y += K_s u of support k (k < 0: every spring support; dim per
 * node); visit the directions they hold at each node (for the rigid-body check). */
int hk_springs_check(const hk_problem *p, const hk_adj *n2c);
int hk_springs_add(const hk_problem *p, const hk_adj *n2c, hk_bcsr *K);
int hk_springs_apply(const hk_problem *p, int k, const double *u, double *y);
typedef void (*hk_dir_fn)(void *ctx, int32_t node, const double dir[3]);
int hk_springs_directions(const hk_problem *p, const hk_adj *n2c, hk_dir_fn fn, void *ctx);

/* Rigid couplings (coupling.c): their count (the remote loads with HK_COUPLING_RIGID), and
 * K <- T^T K T, f <- T^T f plus the remote loads at the reference points, after the
 * elimination; s->ndof and the vectors are already sized for the extra block rows. */
int hk_rigid_count(const hk_problem *p);
int hk_rigid_apply(const hk_problem *p, const hk_adj *n2c, hk_system *s);

/* Symmetric elimination of the fixed dofs of s (K, f from f_ext), identity-like rows for nodes
 * without a cell. */
int hk_eliminate(hk_system *s, const hk_adj *n2c);

#endif
