/* Helpers of the distributed layer's tests (tests/test_dist.c, tests/mpi/test_dist.c): rows
 * given in another order than the layout's, and a matrix on a backend compared with a host one
 * byte for byte. */
#ifndef HOOKE_TEST_DIST_ROWS_H
#define HOOKE_TEST_DIST_ROWS_H

#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"

/* K with the blocks of every row in reverse order (columns descending), as an assembly may
 * leave them: the layout sorts them, so its gather index is not the identity. */
static inline void test_reverse_rows(hk_bcsr *K)
{
    const int bb = K->bs * K->bs;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int64_t p = K->rowptr[i], q = K->rowptr[i + 1] - 1; p < q; p++, q--) {
            const int32_t c = K->colind[p];
            K->colind[p] = K->colind[q];
            K->colind[q] = c;
            for (int e = 0; e < bb; e++) {
                const double v = K->val[p * bb + e];
                K->val[p * bb + e] = K->val[q * bb + e];
                K->val[q * bb + e] = v;
            }
        }
}

/* 1 when the bytes of D (a matrix of be) are those of the host's H. */
static inline int test_same_as_host(const hk_backend_ops *be, const hk_bmat *D, const hk_bcsr *H)
{
    const int64_t nnzb = H->rowptr[H->nbrows], bb = (int64_t)H->bs * H->bs;
    int64_t *rp = malloc(sizeof *rp * (size_t)(H->nbrows + 1));
    int32_t *ci = malloc(sizeof *ci * (size_t)(nnzb + 1));
    double *v = malloc(sizeof *v * (size_t)(nnzb * bb + 1));
    int same = D->nbrows == H->nbrows && D->nnzb == nnzb;
    same = same && !be->copy_from(rp, D->rowptr, sizeof *rp * (size_t)(H->nbrows + 1));
    same = same && (!nnzb || !be->copy_from(ci, D->colind, sizeof *ci * (size_t)nnzb));
    same = same && (!nnzb || !be->copy_from(v, D->val, sizeof *v * (size_t)(nnzb * bb)));
    same = same && !memcmp(rp, H->rowptr, sizeof *rp * (size_t)(H->nbrows + 1)) &&
           !memcmp(ci, H->colind, sizeof *ci * (size_t)nnzb) &&
           !memcmp(v, H->val, sizeof *v * (size_t)(nnzb * bb));
    free(rp);
    free(ci);
    free(v);
    return same;
}

#endif
