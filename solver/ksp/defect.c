/* Defect correction (SBELL paper Algorithm 5): the residual d = b - A x in fp64, the
 * correction A c = d solved in fp32 by an inner Krylov method (option inner.method, default
 * cg) on the fp32 copy of the matrix (ksp->A_low) with the fp32 preconditioner, to the
 * relative tolerance inner.tol (default 1e-4); x += c in fp64, until the fp64 residual meets
 * tol. The iteration count is the total of the inner iterations. */
#include "ksp_impl.h"

static int defect_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    hk_ksp *in = k->inner;
    HK_CHECK(in && k->A_low, HK_ERR_INTERNAL, "method=defect set up without its inner solver");
    hk_vec *r = NULL, *c = NULL, *rl = NULL, *cl = NULL;
    int ierr, done, total = 0;
    double bnorm, rnorm;
    const int inner_cap = in->maxit;
    HK_TRY(hk_ksp_vecs(k, 1, &r));
    HK_TRY(hk_ksp_vecs(k, 1, &c));
    HK_TRY(hk_vec_create(be, k->A->nrows, HK_FP32, &rl));
    HK_TRY(hk_vec_create(be, k->A->nrows, HK_FP32, &cl));
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    while (!done) {
        /* the inner fp32 solve of A c = r from c = 0, at most the iterations left */
        HK_TRY(be->vec_convert(rl, r));
        HK_TRY(be->vec_set(cl, 0.0));
        in->maxit = inner_cap < k->maxit - total ? inner_cap : k->maxit - total;
        if (in->maxit < 1) in->maxit = 1;
        ierr = in->type->solve(in, rl, cl);
        in->maxit = inner_cap;
        if (ierr) goto fail;
        const int nin = in->res.iterations;
        total += nin;
        if (!hk_reason_converged(in->res.reason) && in->res.reason != HK_DIVERGED_MAXIT &&
            nin == 0) {
            /* the inner method could not even start (not SPD, NaN, breakdown): report it */
            hk_ksp_stop(k, total, in->res.reason);
            break;
        }
        HK_TRY(be->vec_convert(c, cl));
        HK_TRY(be->vec_axpby(x, 1.0, c, 1.0));
        /* the fp64 defect */
        HK_TRY(hk_mat_spmv(k->A, x, r));
        HK_TRY(be->vec_axpby(r, 1.0, b, -1.0));
        double rr;
        HK_TRY(be->vec_dot(r, r, &rr));
        const double rnew = sqrt(rr);
        if (hk_ksp_converged(k, total, rnew, bnorm)) break;
        if (!(rnew < rnorm)) {
            /* a correction that does not reduce the fp64 residual will not start to */
            hk_ksp_stop(k, total, HK_DIVERGED_STAGNATION);
            break;
        }
        rnorm = rnew;
    }
    ierr = 0;
fail:
    hk_ksp_vecs_free(k, 1, &r);
    hk_ksp_vecs_free(k, 1, &c);
    hk_vec_destroy(rl);
    hk_vec_destroy(cl);
    return ierr;
}

const hk_ksp_type hk_ksp_defect = {.name = "defect",
                                   .summary = "defect correction: fp64 residual, fp32 inner "
                                              "solve (inner.method) on an fp32 matrix copy",
                                   .needs_symmetric = 0,
                                   .flexible = 0,
                                   .solve = defect_solve};
