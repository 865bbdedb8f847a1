/* method=cgcg: Chronopoulos-Gear PCG (Chronopoulos and Gear 1989), fused as in the GPU Krylov
 * thesis, ch. 4. With u = M r, w = A u, gamma = r.u and delta = w.u the direction and its
 * product follow by recurrence, p = u + beta p and s = w + beta s (s = A p), and
 * alpha = gamma / (delta - beta gamma / alpha_old), beta = gamma / gamma_old: every inner
 * product of an iteration is taken at one place. The thesis fuses the kernels around that
 * (Fig. 4.4b): the vector updates and the Jacobi preconditioner in one pass (backend op
 * cgcg_update), the SpMV with all the inner products, r.r included (spmv_cgcg), so the host
 * reads one reduction per iteration with any preconditioner. Same iterations as cg in exact
 * arithmetic. A backend without the two ops (and fp32, the inner solve of method=defect) gets
 * the same steps from the generic ops, in cgcg_update_step and cgcg_products below. */
#include "ksp_impl.h"

/* Whether the iteration runs on the backend's fused cgcg ops (fp64 operator and vectors). */
static int cgcg_fused(const hk_ksp *k, const hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    return be->cgcg_update && be->spmv_cgcg && x->prec == HK_FP64 && k->A->prec == HK_FP64;
}

/* w = A u; d[0] = r.u, d[1] = w.u and, when want_rr, d[2] = r.r (else NaN, unless the fused op
 * gives it anyway). Fused: one pass and one host read. Composed: the SpMV, r.u and w.u in one
 * pass over u, and r.r as a second reduction (the ||r|| of u = r without a preconditioner is
 * gamma itself). */
static int cgcg_products(hk_ksp *k, int fused, const hk_vec *u, hk_vec *w, hk_vec *r, int want_rr,
                         double *d)
{
    const hk_backend_ops *be = k->be;
    if (fused) return be->spmv_cgcg(k->A, u, w, r, d);
    HK_CALL(hk_mat_spmv(k->A, u, w));
    hk_vec *X[2] = {r, w};
    HK_CALL(be->vec_mdot(2, X, u, d));
    d[2] = NAN;
    if (u == r)
        d[2] = d[0];
    else if (want_rr)
        HK_CALL(be->vec_dot(r, r, &d[2]));
    return 0;
}

/* p = u + beta p, s = w + beta s (beta = 0: copies), x += alpha p, r -= alpha s, then u = M r
 * (u = r without a preconditioner: nothing to do). The fused op applies the Jacobi diagonal
 * dinv in its pass; any other preconditioner is applied here after it. */
static int cgcg_update_step(hk_ksp *k, int fused, const hk_vec *dinv, double alpha, double beta,
                            hk_vec *x, hk_vec *r, hk_vec *u, hk_vec *p, hk_vec *s, const hk_vec *w)
{
    const hk_backend_ops *be = k->be;
    if (fused) {
        HK_CALL(be->cgcg_update(x, r, u, p, s, w, dinv, alpha, beta));
    } else {
        if (beta == 0.0) {
            HK_CALL(be->vec_copy(p, u));
            HK_CALL(be->vec_copy(s, w));
        } else {
            HK_CALL(be->vec_axpby(p, 1.0, u, beta));
            HK_CALL(be->vec_axpby(s, 1.0, w, beta));
        }
        HK_CALL(be->vec_axpby(x, alpha, p, 1.0));
        HK_CALL(be->vec_axpby(r, -alpha, s, 1.0));
    }
    if (u != r && !dinv) HK_CALL(hk_ksp_pc(k, r, u));
    return 0;
}

static int cgcg_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    hk_vec *v[5];
    int ierr, done;
    double bnorm, rnorm, gamma_old = 0, alpha = 0, d[3];
    HK_CALL(hk_ksp_vecs(k, 5, v));
    hk_vec *r = v[0], *u = v[1], *w = v[2], *p = v[3], *s = v[4];
    const int none = hk_ksp_pc_is_none(k);
    if (none) u = r;
    const int fused = cgcg_fused(k, x);
    /* Jacobi's fp64 inverse diagonal goes into the fused update; an fp32 one (precision=mixed)
     * is applied by the preconditioner, rounded as cg rounds it */
    const hk_vec *dinv =
        fused && !none && k->pc->dinv && k->pc->dinv->prec == HK_FP64 ? k->pc->dinv : NULL;
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) goto out;
    if (!none) HK_TRY(hk_ksp_pc(k, r, u));
    HK_TRY(cgcg_products(k, fused, u, w, r, 0, d));
    for (int it = 1;; it++) {
        /* d: gamma = r.u, delta = w.u (and r.r) of iteration it - 1's residual */
        const double gamma = d[0], delta = d[1];
        if (it > 1 && hk_ksp_check_now(k, it - 1) &&
            hk_ksp_converged(k, it - 1, sqrt(fabs(d[2])), bnorm))
            break;
        if (hk_ksp_rz_check(k, it - 1, gamma)) break;
        const double beta = it == 1 ? 0.0 : gamma / gamma_old;
        const double denom = it == 1 ? delta : delta - beta * gamma / alpha; /* = p.Ap */
        if (hk_ksp_spd_check(k, it - 1, denom)) break;
        alpha = gamma / denom;
        gamma_old = gamma;
        HK_TRY(cgcg_update_step(k, fused, dinv, alpha, beta, x, r, u, p, s, w));
        HK_TRY(cgcg_products(k, fused, u, w, r, hk_ksp_check_now(k, it), d));
    }
out:
    ierr = 0;
fail:
    hk_ksp_vecs_free(k, 5, v);
    return ierr;
}

const hk_ksp_type hk_ksp_cgcg = {.name = "cgcg",
                                 .summary = "Chronopoulos-Gear CG, one reduction phase per "
                                            "iteration (SPD)",
                                 .needs_symmetric = 1,
                                 .flexible = 0,
                                 .solve = cgcg_solve};
