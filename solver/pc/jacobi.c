/* Jacobi: M = diag(A). Set-up stores dinv = 1/diag(A) as a backend vector in the
 * preconditioner's precision (pc->dinv, so the pipelined CG can fuse the scaling into its
 * update); apply is one pointwise multiply. */
#include <stdlib.h>

#include "pc_impl.h"

static int jacobi_setup_host(hk_pc *pc, const hk_bcsr *K, hk_mat *A, hk_options *o)
{
    int ierr;
    double *d = NULL;
    HK_CALL(hk_malloc((size_t)pc->n * sizeof *d, &d));
    HK_TRY(hk_pc_positive_diag(K, "jacobi", d));
    for (int64_t i = 0; i < pc->n; i++)
        d[i] = 1.0 / d[i];
    HK_TRY(hk_pc_vec_from_host(pc->be, pc->n, pc->prec, d, &pc->dinv));
fail:
    free(d);
    return ierr;
}

static int jacobi_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    return pc->be->vec_pointwise_mult(z, pc->dinv, r);
}

/* Set-up still runs on the host: K is copied back from the backend first. */
static int jacobi_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    return hk_pc_setup_on_host(pc, K, A, o, jacobi_setup_host);
}

const hk_pc_type hk_pc_jacobi = {
    .name = "jacobi",
    .summary = "point Jacobi: z = r ./ diag(A); fused into pipelined CG",
    .options = "",
    .symmetric = 1,
    .setup = jacobi_setup,
    .apply = jacobi_apply,
    .destroy = NULL, /* pc->dinv is freed by hk_pc_destroy */
};
