/* Generic set-up steps of the FSAI and SAI preconditioners on the matrices' backend. Where
 * the backend lacks the sparse op (bmat_transpose, bmat_expand), the step runs on a host copy
 * and the result goes back: transitional, until every backend has them. */
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

int hk_pc_bmat_to_backend(const hk_backend_ops *be, const hk_bmat *H, hk_bmat *A)
{
    int ierr;
    HK_CALL(hk_bmat_alloc(be, H->br, H->bc, H->nbrows, H->nbcols, H->nnzb, A));
    HK_TRY(be->copy_to(A->rowptr, H->rowptr, (size_t)(H->nbrows + 1) * sizeof(int64_t)));
    if (H->nnzb) {
        HK_TRY(be->copy_to(A->colind, H->colind, (size_t)H->nnzb * sizeof(int32_t)));
        HK_TRY(be->copy_to(A->val, H->val, (size_t)H->nnzb * H->br * H->bc * sizeof(double)));
    }
    return 0;
fail:
    hk_bmat_free(A);
    return ierr;
}

/* T = A^T for a cpu-backend A with 1 x 1 blocks (counting sort: columns come out sorted). */
static int host_transpose(const hk_bmat *A, hk_bmat *T)
{
    HK_CALL(hk_bmat_alloc(&hk_backend_cpu, 1, 1, A->nbcols, A->nbrows, A->nnzb, T));
    memset(T->rowptr, 0, (size_t)(A->nbcols + 1) * sizeof *T->rowptr);
    for (int64_t q = 0; q < A->nnzb; q++)
        T->rowptr[A->colind[q] + 1]++;
    for (int64_t j = 0; j < A->nbcols; j++)
        T->rowptr[j + 1] += T->rowptr[j];
    int64_t *next = NULL;
    int ierr;
    HK_TRY(hk_malloc((size_t)(A->nbcols ? A->nbcols : 1) * sizeof *next, &next));
    memcpy(next, T->rowptr, (size_t)A->nbcols * sizeof *next);
    for (int64_t i = 0; i < A->nbrows; i++)
        for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) {
            const int64_t p = next[A->colind[q]]++;
            T->colind[p] = (int32_t)i;
            T->val[p] = A->val[q];
        }
    free(next);
    return 0;
fail:
    hk_bmat_free(T);
    return ierr;
}

int hk_pc_bmat_transpose(const hk_bmat *A, hk_bmat *T)
{
    if (A->be->bmat_transpose) return A->be->bmat_transpose(A, T);
    HK_CHECK(A->br == 1 && A->bc == 1, HK_ERR_UNSUPPORTED,
             "transpose of a %d x %d-block matrix: the %s backend has no bmat_transpose", A->br,
             A->bc, A->be->name);
    int ierr;
    hk_bmat H = {0}, HT = {0};
    memset(T, 0, sizeof *T);
    if (A->be == &hk_backend_cpu) return host_transpose(A, T);
    HK_TRY(hk_bmat_to_host(A, &H));
    HK_TRY(host_transpose(&H, &HT));
    HK_TRY(hk_pc_bmat_to_backend(A->be, &HT, T));
fail:
    hk_bmat_free(&H);
    hk_bmat_free(&HT);
    return ierr;
}

/* S = A with 1 x 1 blocks, on a cpu-backend A. */
static int host_expand(const hk_bmat *A, hk_bmat *S)
{
    const int br = A->br, bc = A->bc;
    HK_CALL(hk_bmat_alloc(&hk_backend_cpu, 1, 1, A->nbrows * br, A->nbcols * bc,
                          A->nnzb * br * bc, S));
    int64_t k = 0;
    S->rowptr[0] = 0;
    for (int64_t bi = 0; bi < A->nbrows; bi++)
        for (int r = 0; r < br; r++) {
            for (int64_t q = A->rowptr[bi]; q < A->rowptr[bi + 1]; q++)
                for (int c = 0; c < bc; c++) {
                    S->colind[k] = (int32_t)((int64_t)A->colind[q] * bc + c);
                    S->val[k++] = A->val[((size_t)q * br + r) * bc + c];
                }
            S->rowptr[bi * br + r + 1] = k;
        }
    return 0;
}

int hk_pc_bmat_expand(const hk_bmat *A, hk_bmat *S)
{
    if (A->be->bmat_expand) return A->be->bmat_expand(A, S);
    int ierr;
    hk_bmat H = {0}, HS = {0};
    memset(S, 0, sizeof *S);
    if (A->be == &hk_backend_cpu) return host_expand(A, S);
    HK_TRY(hk_bmat_to_host(A, &H));
    HK_TRY(host_expand(&H, &HS));
    HK_TRY(hk_pc_bmat_to_backend(A->be, &HS, S));
fail:
    hk_bmat_free(&H);
    hk_bmat_free(&HS);
    return ierr;
}

int hk_pc_mat_from_bmat(hk_pc *pc, const hk_mat *A, const hk_bmat *M, hk_mat **out)
{
    /* through the host copy that hk_mat_create_bmat makes today anyway, so that a block
     * format regroups M into pc->bs blocks as the operator's kernels expect */
    hk_bcsr H = {0};
    *out = NULL;
    HK_CHECK(M->br == 1 && M->bc == 1, HK_ERR_ARG, "hk_pc_mat_from_bmat: M must have 1 x 1 blocks");
    HK_CALL(hk_bmat_to_bcsr(M, &H));
    hk_csr view = {.n = H.nbrows, .m = H.nbcols, .rowptr = H.rowptr, .colind = H.colind,
                   .val = H.val};
    int ierr = hk_pc_mat_like(pc, A, &view, out);
    hk_bcsr_free(&H);
    return ierr;
}
