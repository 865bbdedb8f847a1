/* Scalar CSR on the host (hk_csr): allocation, conversion from block CSR, transpose, upload.
 * The host set-up of mlilu and the CPU factorisations share these; they call nothing of the
 * preconditioners, so pc.c and factor_cpu.c both sit above this file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

void hk_csr_free(hk_csr *A)
{
    if (!A) return;
    free(A->rowptr);
    free(A->colind);
    free(A->val);
    memset(A, 0, sizeof *A);
}

int hk_csr_alloc(int64_t n, int64_t m, int64_t nnz, hk_csr *A)
{
    int ierr;
    memset(A, 0, sizeof *A);
    A->n = n;
    A->m = m;
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *A->rowptr, &A->rowptr));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *A->colind, &A->colind));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *A->val, &A->val));
    return 0;
fail:
    hk_csr_free(A);
    return ierr;
}

int hk_csr_upload(const hk_backend_ops *be, const hk_csr *C, hk_bmat *B)
{
    const hk_bcsr v = {.bs = 1,
                       .nbrows = C->n,
                       .nbcols = C->m,
                       .rowptr = C->rowptr,
                       .colind = C->colind,
                       .val = C->val};
    return hk_bmat_upload(be, &v, B);
}

int hk_csr_from_bcsr(const hk_bcsr *K, hk_csr *A)
{
    const int bs = K->bs;
    const int64_t nnzb = K->rowptr[K->nbrows];
    HK_CALL(hk_csr_alloc(K->nbrows * bs, K->nbcols * bs, nnzb * bs * bs, A));
    int64_t k = 0;
    for (int64_t bi = 0; bi < K->nbrows; bi++)
        for (int r = 0; r < bs; r++) {
            for (int64_t p = K->rowptr[bi]; p < K->rowptr[bi + 1]; p++)
                for (int c = 0; c < bs; c++) {
                    A->colind[k] = (int32_t)(K->colind[p] * bs + c);
                    A->val[k] = K->val[(p * bs + r) * bs + c];
                    k++;
                }
            A->rowptr[bi * bs + r + 1] = k;
        }
    return 0;
}

int hk_csr_transpose(const hk_csr *A, hk_csr *T)
{
    const int64_t nnz = A->rowptr[A->n];
    HK_CALL(hk_csr_alloc(A->m, A->n, nnz, T));
    for (int64_t k = 0; k < nnz; k++)
        T->rowptr[A->colind[k] + 1]++;
    for (int64_t j = 0; j < A->m; j++)
        T->rowptr[j + 1] += T->rowptr[j];
    int64_t *next;
    int ierr = hk_malloc((size_t)(A->m + 1) * sizeof *next, &next);
    if (ierr) {
        hk_csr_free(T);
        return ierr;
    }
    memcpy(next, T->rowptr, (size_t)(A->m + 1) * sizeof *next);
    /* rows in increasing order, so each column of T comes out sorted */
    for (int64_t i = 0; i < A->n; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            int64_t q = next[A->colind[k]]++;
            T->colind[q] = (int32_t)i;
            T->val[q] = A->val[k];
        }
    free(next);
    return 0;
}
