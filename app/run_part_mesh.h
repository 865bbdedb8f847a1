/* The parts of a distributed hooke run made on their processes (app/run_part_mesh.c,
 * solver.dist.mesh=parts, docs/parallel.md "The mesh made by the parts"). */
#ifndef HOOKE_APP_RUN_PART_MESH_H
#define HOOKE_APP_RUN_PART_MESH_H

#include "case.h"
#include "run_part.h"

/* Every process: the coarse mesh (Gmsh's, the same on every process) cut by METIS, its own
 * coarse cells and their neighbours refined and raised to the asked order, the whole model's
 * checks on the coarse mesh, its part's supports and loads (the forces spread by area and the
 * equally split forces from sums over the parts), its owned nodes numbered after the lower
 * ranks' and its ghosts' numbers, coordinates and supports from their owners.
 *
 * *made 1: pt and ps as hk_part_distribute makes them, prep->nfixed the whole model's
 * prescribed DOFs; on every process r0->mesh stands for the whole mesh in the summary (its
 * node and cell counts, its element kinds and groups' names) and r0->model is bound to it;
 * r0->t_mesh and t_assembly are the slowest process's.
 * *made 0: this way does not apply (note says why: a generated grid, a mesh Hooke does not
 * refine, a coarse mesh too small to cut, what is not made by the parts yet); rank 0's r0 then
 * holds the whole mesh, bound, when it was meshed already (r0->mesh.nnodes > 0), and the caller
 * takes rank 0's path. Collective; the status is agreed. */
int hk_part_make(const hk_comm *w, const hk_case *c, const hk_run_opts *o, hk_run *r0,
                 hk_system *prep, hk_part *pt, hk_part_stats *ps, int *made, char *note,
                 size_t nnote);

#endif
