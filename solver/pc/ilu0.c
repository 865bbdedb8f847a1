/* ILU(0): incomplete LU with the sparsity of A (Saad, Iterative Methods, Algorithm 10.4, IKJ
 * order), set up on the matrix's backend: optionally a node reordering (pc.ordering; the order
 * is computed on the host from K's pattern, the permutation applied by bmat_permute), the
 * factorisation exactly (factor_exact) or (pc.ilu0.sweeps > 0) by the fine-grained iterative
 * method (factor_sweeps, iterfact.c), and the two triangular solves (tri_setup: unit lower L,
 * then U; pc.tri). For nonsymmetric matrices with BiCGStab/GMRES. pc.ilu0.block=1 factors
 * block by block on the node blocks instead (factor_exact on the block matrix) and hands the
 * same solves the factors expanded to scalar rows. No matrix value reaches the host. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

static int ilu0_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    const hk_backend_ops *be = pc->be;
    int ierr = 0;
    hk_bmat Kp = {0}, S = {0}, F = {0};
    const hk_bmat *Kf = K, *Sf;
    hk_factor_fault f = {.row = -1};
    int sweeps = 0, block = 0;
    HK_CALL(hk_tri_pc_factor_options("ilu0", o, &sweeps, &block));
    HK_CALL(hk_tri_pc_begin(pc, "ilu0", K, o, &Kp, &Kf));
    const char *reordered = Kf != K ? " of the reordered matrix" : "";
    Sf = Kf;
    if (Kf->br > 1 && !block) {
        HK_TRY(be->bmat_expand(Kf, &S));
        Sf = &S;
    }
    if (block) {
        HK_TRY(be->factor_exact(Kf, 0, &F, &f));
        HK_TRY_CHECK(f.row < 0 || f.reason != HK_FACTOR_NO_DIAG, HK_ERR_NUMERIC,
                     "preconditioner ilu0 (pc.ilu0.block=1): node %lld%s has no diagonal block, "
                     "so block ILU(0) has no pivot there; reorder the unknowns or use pc=sai",
                     (long long)f.row + 1, reordered);
        HK_TRY_CHECK(f.row < 0, HK_ERR_NUMERIC,
                     "preconditioner ilu0 (pc.ilu0.block=1): the pivot block of node %lld%s is "
                     "singular or needs pivoting (zero pivot %g in its row %d, scalar row %lld, "
                     "of its LU); reorder the unknowns or use pc=sai",
                     (long long)f.row + 1, reordered, f.v[0], f.sub + 1,
                     (long long)(f.row * Kf->br + f.sub + 1));
    } else if (sweeps > 0) {
        int64_t bad = -1;
        HK_TRY(be->factor_sweeps(Sf, 0, sweeps, &F, &bad));
        HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                     "preconditioner ilu0: zero pivot at row %lld after %d sweeps%s (or a zero "
                     "or missing diagonal entry there); reorder the unknowns, use more sweeps, "
                     "pc.ilu0.sweeps=0 or pc=sai",
                     (long long)bad + 1, sweeps, Kf != K ? " (row of the reordered matrix)" : "");
    } else {
        HK_TRY(be->factor_exact(Sf, 0, &F, &f));
        HK_TRY_CHECK(f.row < 0 || f.reason != HK_FACTOR_NO_DIAG, HK_ERR_NUMERIC,
                     "preconditioner ilu0: row %lld%s has no diagonal entry, so ILU(0) has a "
                     "zero pivot there; reorder the unknowns or use pc=sai",
                     (long long)f.row + 1, reordered);
        HK_TRY_CHECK(f.row < 0, HK_ERR_NUMERIC,
                     "preconditioner ilu0: zero pivot %g at row %lld%s (the incomplete "
                     "factorisation breaks down there); reorder the unknowns or use pc=sai",
                     f.v[0], (long long)f.row + 1, reordered);
    }
    HK_TRY(hk_tri_pc_factors(pc, &F, 1, &F));
fail:
    hk_bmat_free(&Kp);
    hk_bmat_free(&S);
    hk_bmat_free(&F);
    return ierr;
}

const hk_pc_type hk_pc_ilu0 = {
    .name = "ilu0",
    .summary = "incomplete LU, zero fill; triangular solves by cuSPARSE on cuda (pc.tri: "
               "syncfree, syncfree-flags, levels), level by level on cpu",
    .options = "pc.tri pc.ordering pc.ilu0.sweeps pc.ilu0.block",
    .symmetric = 0,
    .setup = ilu0_setup,
    .apply = hk_tri_pc_apply,
    .destroy = hk_tri_pc_destroy,
    .describe = hk_tri_pc_describe,
};
