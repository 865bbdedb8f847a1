/* The start of a matrix-powers plan (mpk_plan), shared by the CPU reference
 * (solver/cpu/cpu_mpk.c) and the CUDA version (cuda/cuda_mpk.cu) so both refuse the same
 * arguments and cut the same partitions. */
#ifndef HOOKE_SOLVER_MPK_PLAN_H
#define HOOKE_SOLVER_MPK_PLAN_H

#include <stdint.h>
#include <string.h>

#include "hk_impl.h"

/* Clears *plan and *info, checks K, k and *block, clamps *block to the block rows (at least 1)
 * and sets *nparts and info's block, k and nparts. */
static inline int hk_mpk_plan_begin(const hk_bmat *K, int64_t *block, int k, void **plan,
                                    hk_mpk_info *info, int64_t *nparts)
{
    *plan = NULL;
    memset(info, 0, sizeof *info);
    HK_CHECK(K && K->br == K->bc && K->br >= 1 && K->br <= 6 && K->nbrows == K->nbcols, HK_ERR_ARG,
             "matrix powers: the matrix must be square with square blocks of 1..6");
    HK_CHECK(k >= 1 && k <= HK_MPK_MAXK, HK_ERR_OPTION,
             "matrix powers: %d levels per pass; use 1..%d (option mpk.k)", k, HK_MPK_MAXK);
    HK_CHECK(*block >= 1, HK_ERR_OPTION,
             "matrix powers: a partition of %lld block rows; use at least 1 (option mpk.block)",
             (long long)*block);
    const int64_t nb = K->nbrows;
    HK_CHECK(nb < ((int64_t)1 << 31), HK_ERR_UNSUPPORTED,
             "matrix powers: %lld block rows are too many for 32-bit indices", (long long)nb);
    if (*block > nb) *block = nb > 0 ? nb : 1;
    *nparts = nb > 0 ? (nb + *block - 1) / *block : 0;
    info->block = *block;
    info->k = k;
    info->nparts = *nparts;
    return 0;
}

#endif
