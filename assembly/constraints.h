/* Supports, the rigid-body check and the elimination of the prescribed dofs (constraints.c). */
#ifndef HOOKE_ASSEMBLY_CONSTRAINTS_H
#define HOOKE_ASSEMBLY_CONSTRAINTS_H

#include "groups.h"

/* Fill fixed[] and u_fixed[] from the supports; conflicting values are errors. */
int hk_supports_apply(const hk_problem *p, uint8_t *fixed, double *u_fixed, int64_t *nfixed);

/* Visits the directions that other supports (springs) hold, calling fn(ctx, node, dir). */
typedef int (*hk_held_fn)(const hk_problem *p, const hk_adj *n2c, hk_dir_fn fn, void *ctx);
/* Error HK_ERR_MODEL when the constrained dofs, and the directions that held (may be NULL)
 * visits, leave a rigid-body mode of any connected part of the mesh free; the message names
 * the free modes. */
int hk_check_rigid(const hk_problem *p, const hk_adj *n2c, const uint8_t *fixed, hk_held_fn held);
/* The number of rigid-body motions that hk_check_rigid would name, summed over the parts:
 * the zero-frequency modes of a modal analysis. */
int hk_count_rigid(const hk_problem *p, const hk_adj *n2c, const uint8_t *fixed, hk_held_fn held,
                   int *nfree);
/* The connected parts of the mesh (cells sharing nodes): label[i] = the smallest node of node
 * i's part, -1 for a node on no cell. */
int hk_mesh_part_labels(const hk_mesh *m, const hk_adj *n2c, int32_t *label);
/* hk_check_rigid with the parts given as labels (hk_mesh_part_labels, or a device's); n2c is
 * only passed on to held and may be NULL without it. */
int hk_check_rigid_labels(const hk_problem *p, const int32_t *label, const hk_adj *n2c,
                          const uint8_t *fixed, hk_held_fn held);

/* Symmetric elimination of the fixed dofs of s (K, f from f_ext), identity-like rows for nodes
 * without a cell. */
int hk_eliminate(hk_system *s, const hk_adj *n2c);

#endif
