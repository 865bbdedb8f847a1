/* The connectivity that assembly/ works on: the node-to-cell adjacency of a mesh, the block
 * CSR pattern of K built from it, and the lookup of a block in that pattern (pattern.c). */
#ifndef HOOKE_ASSEMBLY_PATTERN_H
#define HOOKE_ASSEMBLY_PATTERN_H

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
/* The same lists for the nodes v with want[v] only, the others' empty: one pass over the cells
 * instead of the whole mesh's lists (the cells' nodes checked before). */
int hk_asm_node_cells_of(const hk_mesh *m, const uint8_t *want, hk_adj *a);

/* Block CSR pattern of K (bs = mesh dimension): block row i holds the nodes sharing a cell
 * with node i, sorted; every node has its diagonal block, also nodes without a cell. Values
 * zeroed. */
int hk_asm_pattern(const hk_mesh *m, const hk_adj *n2c, hk_bcsr *K);

/* Ranges of block rows for nthr threads that own them in the numeric loops: thread t owns rows
 * bounds[t] .. bounds[t + 1] (nthr + 1 entries), cut where the prefix of the node-to-cell
 * counts reaches t / nthr of the whole, so each visits about as many cells. */
void hk_asm_row_ranges(const hk_adj *n2c, int nthr, int64_t *bounds);

/* Position of block column j in block row i of K (binary search in the sorted row), -1 when
 * absent. Inline: the numeric assembly calls it for every node pair of every cell. */
static inline int64_t hk_asm_find_block(const hk_bcsr *K, int64_t i, int32_t j)
{
    int64_t lo = K->rowptr[i], hi = K->rowptr[i + 1] - 1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) >> 1;
        if (K->colind[mid] < j)
            lo = mid + 1;
        else if (K->colind[mid] > j)
            hi = mid - 1;
        else
            return mid;
    }
    return -1;
}

#endif
