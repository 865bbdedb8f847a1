/* The numeric stage's host side, for both drivers (fem_driver.inc's fem_numeric and pattern):
 * the variant of the numeric kernel (HOOKE_FEM_NUMERIC) and the element records' offsets and
 * chunks, over every host thread (fem_numeric.c, OpenMP). */
#ifndef HOOKE_FEM_NUMERIC_H
#define HOOKE_FEM_NUMERIC_H

#include "fem_kernels.h"
#include "hooke/fem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The numeric kernel's variant: HK_FEM_NUM_* flags from HOOKE_FEM_NUMERIC (a comma list of
 * plain, d3, sorted; unset or empty: d3,sorted),
 * or hk_fem_numeric_force when it is 0 or more (tests). HK_ERR_ARG, naming the variable and the
 * names, for a name it does not know. */
int hk_fem_numeric_variant(int *flags);
extern int hk_fem_numeric_force;

/* The recovery's variant: HK_FEM_REC_* flags (fem_kernels.h) from HOOKE_FEM_RECOVER (a comma
 * list of plain, keep, huge; unset or empty: plain, the default), or
 * hk_fem_recover_force when it is 0 or more (tests). HK_ERR_ARG for a name it does not know. */
int hk_fem_recover_variant(int *flags);
extern int hk_fem_recover_force;

/* A hash of everything of m (and the nodal temperature field node_dT, may be NULL) that a
 * device session copies: whether a kept session still holds this mesh. Every host thread. */
uint64_t hk_fem_mesh_hash(const hk_mesh *m, const double *node_dT);

/* Writes a zero into every 4 KiB page of data[0..bytes) (every host thread): the pages of a
 * fresh array that a download is about to overwrite, faulted in while the device works instead
 * of by the copy out of the pinned staging. */
void hk_fem_touch_pages(void *data, size_t bytes);

/* Marks the 2 MiB pages inside data[0..bytes) for transparent huge pages (madvise, where the
 * system has it), before they are faulted in: one fault a 2 MiB page instead of 512. */
void hk_fem_huge_pages(void *data, size_t bytes);

/* Whether every byte of data[0..bytes) is zero (every host thread). */
int hk_fem_all_zero(const void *data, size_t bytes);

/* The most nodes of a cell of m (every host thread). */
int hk_fem_most_nodes(const hk_mesh *m);

/* goff[e] = the first double of cell e's record when all of m's cells' records lie end to end
 * (goff[ne]: their total; regions per mesh region, node_dT only tested for NULL, as
 * hk_fem_thermal does); *biggest: the largest record. */
int hk_fem_record_offsets(const hk_mesh *m, const hk_elref *refs, const hk_fem_region *regions,
                          int axi, int with_f, const void *node_dT, int64_t *goff,
                          int64_t *biggest);

/* The end of the chunk of cells that starts at e0: the most cells (one at least) whose records
 * and offsets (8 bytes a cell) fit budget bytes. */
int64_t hk_fem_chunk_end(const int64_t *goff, int64_t ne, int64_t e0, size_t budget);

/* rel[e - e0] = goff[e] - goff[e0] for the chunk's cells. */
void hk_fem_chunk_offsets(const int64_t *goff, int64_t e0, int64_t e1, int64_t *rel);

#ifdef __cplusplus
}
#endif
#endif
