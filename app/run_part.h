/* The parts of a distributed hooke run (app/run_part.c, docs/parallel.md): rank 0 cuts the
 * bound model into one part per process and sends each its own. */
#ifndef HOOKE_APP_RUN_PART_H
#define HOOKE_APP_RUN_PART_H

#include <stdint.h>

#include "hooke/fem.h"
#include "hooke/solver.h"

/* One process's part. Its mesh holds the owned nodes first (global ids row0 .. row0 + nown - 1,
 * in the whole mesh's order), then the ghosts (the other nodes of its cells, by global id);
 * every cell touching an owned node, in the whole mesh's order; every boundary facet touching
 * an owned node, and each boundary's nodes among its nodes. Regions and boundaries keep the
 * whole mesh's indices (some empty). */
typedef struct hk_part {
    hk_mesh mesh;
    int64_t nown, row0, nglobal; /* owned nodes, the first one's global id, all nodes */
    int64_t ncells_global;       /* cells of the whole mesh */
    int64_t *gid;                /* mesh.nnodes global ids */
    uint8_t *out_cell;           /* mesh.cells.n: 1 where this part writes the cell */
    uint8_t *fixed;              /* dim per node: the prepared supports of the whole model */
    double *u_fixed, *f_ext;     /* dim per node */
    double *node_dT;             /* per node, NULL: none */
} hk_part;

/* Which mesh the cells are cut on (solver.dist.partition, docs/parallel.md): auto (the coarse
 * mesh where Hooke refined the mesh and the coarse mesh has HK_PART_COARSE_MIN cells a part,
 * else the fine), coarse (where there is one), fine (the cells themselves). */
typedef enum hk_part_cut { HK_PART_AUTO = 0, HK_PART_COARSE, HK_PART_FINE } hk_part_cut;
extern const char *const hk_part_cut_names[]; /* by hk_part_cut, NULL-terminated */
enum { HK_PART_COARSE_MIN = 32 };

/* Who makes the parts' meshes (solver.dist.mesh, docs/parallel.md): parts (the default: every
 * process refines its own coarse cells or makes its slab of a generated grid; hk_part_make) or
 * whole (rank 0 meshes the whole model and sends each process its part). */
typedef enum hk_part_mesh { HK_PART_MESH_PARTS = 0, HK_PART_MESH_WHOLE } hk_part_mesh;
extern const char *const hk_part_mesh_names[]; /* by hk_part_mesh, NULL-terminated */

/* What the partition made, and where its time went, for the progress lines. */
typedef struct hk_part_stats {
    char by[160]; /* how the cells were cut: "metis on the coarse mesh (9016 cells)" */
    char steps[400]; /* hk_part_make: its steps and their seconds, for the parts line */
    int64_t moved_ghosts; /* hk_part_make: ghosts placed by their owners elsewhere */
    int64_t min_nodes, max_nodes, max_ghosts, min_cells, max_cells;
    double seconds;          /* rank 0, all of it: */
    double t_prep;           /* prepare (on the calling thread), */
    double t_cut, t_lists;   /* meanwhile the partition and numbering, the boundaries' lists */
    double t_cut_wait;       /* waiting for those after prepare */
    double t_sent;           /* the rest: the parts built and sent */
    double t_build;          /* every part's build (on a thread) */
    double t_wait, t_send;   /* waiting for a part's build; sending (and the receiver) */
    double bytes;            /* sent (rank 0), received (the others) */
    double t_recv, t_unpack; /* ranks > 0: waiting for the part and receiving it; unpacking */
} hk_part_stats;

/* Rank 0: cut the model of p (its mesh) into one part per process (cells by METIS or
 * hk_partition_cells, on the coarse mesh as cut asks, a node to the lowest part among its
 * cells, nodes in no cell to part 0) on a thread while prepare(ctx) runs here (it fills *prep,
 * the system hk_assemble_prepare makes, which the parts take their supports and loads from;
 * NULL: prep is ready), keep part 0 in *mine and send the others (each built on a thread
 * while the one before it is sent, array by array; the same bytes for any number of threads).
 * A failure, prepare's first, reaches every process (theirs: an empty part). Ranks > 0:
 * hk_part_receive. Collective. */
int hk_part_distribute(const hk_comm *c, const hk_problem *p, int (*prepare)(void *ctx),
                       void *ctx, const hk_system *prep, hk_part_cut cut, hk_part *mine,
                       hk_part_stats *st);
int hk_part_receive(const hk_comm *c, hk_part *mine, hk_part_stats *st);
/* The part's regions (names) and groups from mesh m's: the facets with a node of owner q whose
 * nodes are all the part's (loc[v] >= 0: their place in it), each group's nodes gnodes[b]
 * (gn[b] of them) among the part's, into pm. */
int hk_part_groups(const hk_mesh *m, const int32_t *owner, int q, const int32_t *loc,
                   int32_t *const *gnodes, const int64_t *gn, hk_mesh *pm);
/* The coarse mesh's cells cut by METIS into P parts, each cell weighted by wgt[cell] (its fine
 * cells); 1 in *done when every part has cells, 0 (part unset) without METIS or when one is
 * left empty. */
int hk_part_cut_coarse(const hk_mesh *coarse, const int64_t *wgt, int P, int32_t *part, int *done);
void hk_part_free(hk_part *pt);

#endif
