/* Views of blocks of vectors for the eigensolver: a range of columns of a block is the same
 * memory seen as a shorter block, so the backend's block ops and its single-vector ops (the
 * preconditioner's apply) work on it without copies. */
#include "eigen_impl.h"

hk_vec hk_block_cols(const hk_vec *B, int64_t n, int c0, int k)
{
    hk_vec v = {B->be, n * k, HK_FP64, (char *)B->data + (size_t)c0 * n * sizeof(double)};
    return v;
}

int hk_block_copy(const hk_vec *S, int s0, hk_vec *D, int d0, int64_t n, int k)
{
    if (k <= 0) return 0;
    const hk_vec s = hk_block_cols(S, n, s0, k), d = hk_block_cols(D, n, d0, k);
    if (s.data == d.data) return 0;
    return S->be->copy(d.data, s.data, (size_t)n * k * sizeof(double));
}

int hk_block_spmv(hk_mat *A, int k, const hk_vec *X, hk_vec *Y)
{
    if (k <= 0) return 0;
    if (A->be->block_spmv) return A->be->block_spmv(A, k, X, Y);
    for (int j = 0; j < k; j++) {
        hk_vec x = hk_block_col(X, A->ncols, j), y = hk_block_col(Y, A->nrows, j);
        HK_CALL(hk_mat_spmv(A, &x, &y));
    }
    return 0;
}
