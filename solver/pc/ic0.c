/* IC(0): incomplete Cholesky A ~ L L^T with the sparsity of the lower triangle of A (row by
 * row: l_ij = (a_ij - sum_{k<j} l_ik l_jk) / l_jj, l_ii = sqrt(a_ii - sum_k l_ik^2)), set up on
 * the matrix's backend: optionally a node reordering (pc.ordering; the order is computed on the
 * host from K's pattern, the permutation applied by bmat_permute), the symmetry check
 * (bmat_sym_check against bmat_transpose), the factorisation exactly (factor_exact) or
 * (pc.ic0.sweeps > 0) by the fine-grained iterative method (factor_sweeps, iterfact.c),
 * U = L^T (bmat_transpose) and the two triangular solves (tri_setup, pc.tri). Reads the lower
 * triangle only: A must be symmetric. pc.ic0.block=1 factors block by block on the node
 * blocks instead (factor_exact on the block matrix) and hands the same triangular solves the
 * factor expanded to scalar rows. No matrix value reaches the host. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

static int ic0_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    const hk_backend_ops *be = pc->be;
    int ierr = 0;
    hk_bmat Kp = {0}, S = {0}, T = {0}, L = {0}, U = {0};
    const hk_bmat *Kf = K, *Sf;
    hk_factor_fault f = {.row = -1};
    int sweeps = 0, block = 0;
    HK_CALL(hk_tri_pc_factor_options("ic0", o, &sweeps, &block));
    HK_CALL(hk_tri_pc_begin(pc, "ic0", K, o, &Kp, &Kf));
    const char *reordered = Kf != K ? " of the reordered matrix" : "";
    /* scalar rows, and the symmetry the lower triangle stands for */
    Sf = Kf;
    if (Kf->br > 1) {
        HK_TRY(be->bmat_expand(Kf, &S));
        Sf = &S;
    }
    HK_TRY(be->bmat_transpose(Sf, &T));
    HK_TRY(be->bmat_sym_check(Sf, &T, &f));
    hk_bmat_free(&T);
    if (f.row >= 0) {
        ierr = hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                            "preconditioner ic0 needs a symmetric matrix, but entry (%lld, %lld) "
                            "is %g and (%lld, %lld) is %g%s; use pc=ilu0 or pc=sai with "
                            "method=gmres or bicgstab",
                            (long long)f.row, (long long)f.col, f.v[0], (long long)f.col,
                            (long long)f.row, f.v[1], reordered);
        goto fail;
    }
    if (sweeps > 0) {
        int64_t bad = -1;
        HK_TRY(be->factor_sweeps(Sf, 1, sweeps, &L, &bad));
        HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                     "preconditioner ic0: zero or non-positive pivot at row %lld after %d "
                     "sweeps%s; the matrix is not SPD or IC(0) breaks down - use pc=jacobi, "
                     "pc=fsai, more sweeps or pc.ic0.sweeps=0",
                     (long long)bad + 1, sweeps, Kf != K ? " (row of the reordered matrix)" : "");
    } else if (block) {
        HK_TRY(be->factor_exact(Kf, 1, &L, &f));
        HK_TRY_CHECK(f.row < 0, HK_ERR_NUMERIC,
                     "preconditioner ic0 (pc.ic0.block=1): the pivot block of node %lld%s is not "
                     "positive definite (pivot %g in its row %d, scalar row %lld); the matrix is "
                     "not SPD or block IC(0) breaks down - use pc=jacobi, pc=fsai or pc=ilu0 "
                     "with method=gmres",
                     (long long)f.row + 1, reordered, f.v[0], f.sub + 1,
                     (long long)(f.row * Kf->br + f.sub + 1));
    } else {
        HK_TRY(be->factor_exact(Sf, 1, &L, &f));
        HK_TRY_CHECK(f.row < 0, HK_ERR_NUMERIC,
                     "preconditioner ic0: non-positive pivot %g at row %lld%s (diagonal %g); "
                     "the matrix is not SPD or IC(0) breaks down - use pc=jacobi, pc=fsai or "
                     "pc=ilu0 with method=gmres",
                     f.v[0], (long long)f.row + 1, reordered, f.v[1]);
    }
    HK_TRY(be->bmat_transpose(&L, &U));
    HK_TRY(hk_tri_pc_factors(pc, &L, 0, &U));
fail:
    hk_bmat_free(&Kp);
    hk_bmat_free(&S);
    hk_bmat_free(&T);
    hk_bmat_free(&L);
    hk_bmat_free(&U);
    return ierr;
}

const hk_pc_type hk_pc_ic0 = {
    .name = "ic0",
    .summary = "incomplete Cholesky, zero fill; triangular solves by cuSPARSE on cuda (pc.tri: "
               "syncfree, syncfree-flags, levels), level by level on cpu",
    .options = "pc.tri pc.ordering pc.ic0.sweeps pc.ic0.block",
    .symmetric = 1,
    .setup = ic0_setup,
    .apply = hk_tri_pc_apply,
    .destroy = hk_tri_pc_destroy,
    .describe = hk_tri_pc_describe,
};
