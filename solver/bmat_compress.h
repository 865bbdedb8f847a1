/* Regrouping of a scalar CSR (1 x 1 blocks) into bs x bs blocks, one block row at a time: the
 * inverse of bmat_expand, shared by the CPU op (solver/cpu/cpu_build.c) and its CUDA kernel
 * (cuda/cuda_build.cu) so both give the same pattern. A block of the result holds every
 * scalar entry of its bs rows and bs columns; positions without an entry are 0. */
#ifndef HOOKE_SOLVER_BMAT_COMPRESS_H
#define HOOKE_SOLVER_BMAT_COMPRESS_H

#include <stdint.h>

#ifdef __CUDACC__
#define HK_HOST_DEVICE __host__ __device__
#else
#define HK_HOST_DEVICE
#endif

#define HK_COMPRESS_MAX_BS 8

/* Block row bi: returns its number of blocks; with ocol/oval set also writes them (columns
 * ascending, values row-major per block). Scalar columns must be sorted within a row. */
static inline HK_HOST_DEVICE int64_t hk_compress_block_row(int64_t bi, int bs,
                                                          const int64_t *rowptr,
                                                          const int32_t *colind,
                                                          const double *val, int32_t *ocol,
                                                          double *oval)
{
    int64_t head[HK_COMPRESS_MAX_BS], end[HK_COMPRESS_MAX_BS];
    for (int r = 0; r < bs; r++) {
        head[r] = rowptr[bi * bs + r];
        end[r] = rowptr[bi * bs + r + 1];
    }
    int64_t k = 0;
    for (;;) {
        int32_t next = INT32_MAX;
        for (int r = 0; r < bs; r++)
            if (head[r] < end[r] && colind[head[r]] / bs < next) next = colind[head[r]] / bs;
        if (next == INT32_MAX) break;
        double *b = oval ? oval + k * bs * bs : 0;
        if (b)
            for (int e = 0; e < bs * bs; e++)
                b[e] = 0;
        if (ocol) ocol[k] = next;
        for (int r = 0; r < bs; r++)
            for (; head[r] < end[r] && colind[head[r]] / bs == next; head[r]++)
                if (b) b[r * bs + colind[head[r]] % bs] = val[head[r]];
        k++;
    }
    return k;
}

#endif
