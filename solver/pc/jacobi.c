/* Jacobi: M = diag(A). Set-up stores dinv = 1/diag(A) as a backend vector in the
 * preconditioner's precision (pc->dinv, so the pipelined CG can fuse the scaling into its
 * update), computed by the backend's diag op where K lives; apply is one pointwise multiply. */
#include "pc_impl.h"

static int jacobi_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    return hk_pc_diag(pc, HK_DIAG_INV, &pc->dinv);
}

static int jacobi_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    return pc->be->vec_pointwise_mult(z, pc->dinv, r);
}

const hk_pc_type hk_pc_jacobi = {
    .name = "jacobi",
    .summary = "point Jacobi: z = r ./ diag(A); fused into pipelined CG",
    .options = "",
    .symmetric = 1,
    .setup = jacobi_setup,
    .apply = jacobi_apply,
    .apply_capturable = 1,
    .destroy = NULL, /* pc->dinv is freed by hk_pc_destroy */
};
