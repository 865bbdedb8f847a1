/* Block CSR utilities on the host, and the wall clock. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hk_impl.h"

void hk_bcsr_free(hk_bcsr *A)
{
    if (!A) return;
    free(A->rowptr);
    free(A->colind);
    free(A->val);
    memset(A, 0, sizeof *A);
}

int hk_bcsr_copy(const hk_bcsr *A, hk_bcsr *B)
{
    int ierr;
    int64_t nnzb = A->rowptr[A->nbrows];
    size_t b2 = (size_t)A->bs * (size_t)A->bs;
    memset(B, 0, sizeof *B);
    *B = *A;
    B->rowptr = NULL;
    B->colind = NULL;
    B->val = NULL;
    HK_TRY(hk_malloc((size_t)(A->nbrows + 1) * sizeof *B->rowptr, &B->rowptr));
    HK_TRY(hk_malloc((size_t)nnzb * sizeof *B->colind, &B->colind));
    HK_TRY(hk_malloc((size_t)nnzb * b2 * sizeof *B->val, &B->val));
    memcpy(B->rowptr, A->rowptr, (size_t)(A->nbrows + 1) * sizeof *B->rowptr);
    memcpy(B->colind, A->colind, (size_t)nnzb * sizeof *B->colind);
    memcpy(B->val, A->val, (size_t)nnzb * b2 * sizeof *B->val);
    return 0;
fail:
    hk_bcsr_free(B);
    return ierr;
}

void hk_bcsr_spmv(const hk_bcsr *A, const double *x, double *y)
{
    const int bs = A->bs;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < A->nbrows; i++) {
        double acc[6] = {0, 0, 0, 0, 0, 0}; /* bs <= 6 */
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            const double *blk = A->val + (size_t)k * bs * bs;
            const double *xj = x + (size_t)A->colind[k] * bs;
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++) acc[r] += blk[r * bs + c] * xj[c];
        }
        for (int r = 0; r < bs; r++) y[i * bs + r] = acc[r];
    }
}

double hk_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
