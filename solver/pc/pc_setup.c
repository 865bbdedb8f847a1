/* Generic set-up steps of the preconditioners that build a factor by rows (fsai, sai): the
 * transpose and the scalar expansion of a backend matrix through the backend's ops. */
#include "pc_impl.h"

int hk_pc_bmat_transpose(const hk_bmat *A, hk_bmat *T)
{
    HK_CHECK(A->be->bmat_transpose, HK_ERR_UNSUPPORTED,
             "backend %s has no bmat_transpose op, which this preconditioner's set-up needs",
             A->be->name);
    return A->be->bmat_transpose(A, T);
}

int hk_pc_bmat_expand(const hk_bmat *A, hk_bmat *S)
{
    HK_CHECK(A->be->bmat_expand, HK_ERR_UNSUPPORTED,
             "backend %s has no bmat_expand op, which this preconditioner's set-up needs",
             A->be->name);
    return A->be->bmat_expand(A, S);
}
