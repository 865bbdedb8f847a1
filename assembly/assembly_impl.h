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

/* Add the boundary and nodal loads of p to f_ext (dim per node). */
int hk_loads_apply(const hk_problem *p, const hk_adj *n2c, double *f_ext);

/* Fill fixed[] and u_fixed[] from the supports; conflicting values are errors. */
int hk_supports_apply(const hk_problem *p, uint8_t *fixed, double *u_fixed, int64_t *nfixed);
/* Error HK_ERR_MODEL when the constrained dofs leave a rigid-body mode of any connected part
 * of the mesh free; the message names the free modes. */
int hk_check_rigid(const hk_problem *p, const hk_adj *n2c, const uint8_t *fixed);
/* Symmetric elimination of the fixed dofs of s (K, f from f_ext), identity-like rows for nodes
 * without a cell. */
int hk_eliminate(hk_system *s, const hk_adj *n2c);

#endif
