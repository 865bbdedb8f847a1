/* The CPU backend's private pieces shared between its files. */
#ifndef HOOKE_CPU_IMPL_H
#define HOOKE_CPU_IMPL_H

#include "hk_impl.h"

/* Matrix upload/SpMV for every format (solver/cpu/cpu_spmv.c). */
int hk_cpu_mat_upload(hk_mat *A);
void hk_cpu_mat_release(hk_mat *A);
int hk_cpu_mat_spmv(hk_mat *A, const hk_vec *x, hk_vec *y);

/* Deterministic reductions: the index range is cut into HK_CPU_CHUNKS fixed chunks whatever
 * the thread count, each summed in order, then the chunk sums in order. */
#define HK_CPU_CHUNKS 256
static inline int64_t hk_cpu_chunk_begin(int64_t n, int c)
{
    return (int64_t)((__int128)n * c / HK_CPU_CHUNKS);
}

/* Sum the per-chunk partial results in chunk order (deterministic). */
static inline double hk_cpu_chunk_sum(const double *part)
{
    double s = 0;
    for (int c = 0; c < HK_CPU_CHUNKS; c++)
        s += part[c];
    return s;
}

#endif
