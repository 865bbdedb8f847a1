/* One scalar row of the symmetric elimination of the prescribed dofs, a function of arrays:
 * constraints.c's hk_eliminate runs it for every row, the device assembly (fem_cuda/) one row
 * a thread (element_kernels.h's HK_EL_FN: __host__ __device__ under nvcc). */
#ifndef HOOKE_ASSEMBLY_ELIMINATION_H
#define HOOKE_ASSEMBLY_ELIMINATION_H

#include <stdint.h>

#include "element_kernels.h"

/* Row r of block row i of the block CSR K (block size bs): a free row keeps its entries but
 * those of fixed columns, whose products with the prescribed values leave f; a fixed row, and
 * every row of a node on no cell (orphan), becomes the diagonal alone: its assembled value d,
 * or mean when d is not positive (orphans: always mean). Returns the row's right-hand side:
 * d u_fixed for a fixed row, 0 for an orphan, f_ext - sum K_ij u_fixed_j otherwise. */
HK_EL_FN double hk_eliminate_row(int bs, int64_t i, int r, int orphan, double mean,
                                 const int64_t *rowptr, const int32_t *colind, double *val,
                                 const uint8_t *fixed, const double *u_fixed, const double *f_ext)
{
    const int64_t gi = i * bs + r;
    double diag = mean;
    if (!orphan)
        for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
            if (colind[k] == i) diag = val[(size_t)k * bs * bs + r * bs + r];
    if (!(diag > 0)) diag = mean;
    double fi = f_ext[gi];
    for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {
        const int64_t j = colind[k];
        double *row = val + (size_t)k * bs * bs + (size_t)r * bs;
        for (int c = 0; c < bs; c++) {
            const int64_t gj = j * bs + c;
            if (fixed[gi] || orphan) {
                row[c] = gj == gi ? diag : 0;
            } else if (fixed[gj]) {
                fi -= row[c] * u_fixed[gj];
                row[c] = 0;
            }
        }
    }
    return fixed[gi] ? diag * u_fixed[gi] : orphan ? 0 : fi;
}

#endif
