/* The CG family, for SPD matrices with SPD preconditioners:
 *   cg      preconditioned CG (SBELL paper Algorithm 1; mixed precision = its Algorithm 6)
 *   cgcg    Chronopoulos-Gear CG, one reduction phase per iteration (cgcg.c)
 *   pipecg  pipelined CG (pipecg.c)
 *   fcg     flexible CG (Notay 2000, truncation 1) for variable preconditioners
 * All track ||r||_2 of the unpreconditioned residual, so tol means the same for every method. */
#include "ksp_impl.h"

/* ---- cg -------------------------------------------------------------------------------- */

/* The one place where cg takes a backend's two-pass ops (cg_spmv, cg_update) or composes the
 * generic ones; both give the same results to rounding. On the CPU an iteration then reads
 * and writes each vector about once (p = z + beta p with the SpMV and p.Ap in one region;
 * x, r, z and both inner products in one pass) instead of once per op. */

/* p = z + beta p (beta = 0: p = z), Ap = A p and *pap = p.Ap. */
static int cg_spmv_step(hk_ksp *k, const hk_vec *z, double beta, hk_vec *p, hk_vec *Ap, double *pap)
{
    const hk_backend_ops *be = k->be;
    if (be->cg_spmv) return be->cg_spmv(k->A, z, beta, p, Ap, pap);
    if (beta == 0.0)
        HK_CALL(be->vec_copy(p, z));
    else
        HK_CALL(be->vec_axpby(p, 1.0, z, beta));
    HK_CALL(hk_mat_spmv(k->A, p, Ap));
    return be->vec_dot(p, Ap, pap);
}

/* x += alpha p; r -= alpha Ap; z = M r (z == r: no preconditioner); d[0] = r.z, d[1] = r.r
 * when want_rr or without a preconditioner (else NaN: the fused op gives it anyway, the
 * composition saves the pass). The fused op takes no preconditioner or Jacobi (its inverse
 * diagonal); any other preconditioner is applied through hk_ksp_pc. */
static int cg_update_step(hk_ksp *k, double alpha, hk_vec *x, hk_vec *r, hk_vec *z, const hk_vec *p,
                          const hk_vec *Ap, int want_rr, double *d)
{
    const hk_backend_ops *be = k->be;
    const int none = z == r;
    if (be->cg_update && (none || k->pc->dinv))
        return be->cg_update(x, r, z, p, Ap, none ? NULL : k->pc->dinv, alpha, d);
    HK_CALL(be->vec_axpby(x, alpha, p, 1.0));
    HK_CALL(be->vec_axpby(r, -alpha, Ap, 1.0));
    if (none) {
        HK_CALL(be->vec_dot(r, r, &d[0])); /* r.z = r.r: the norm for free */
        d[1] = d[0];
        return 0;
    }
    HK_CALL(hk_ksp_pc(k, r, z));
    if (!want_rr) {
        d[1] = NAN;
        return be->vec_dot(r, z, &d[0]);
    }
    hk_vec *X[2] = {z, r}; /* r.z and r.r in one pass and one host read */
    return be->vec_mdot(2, X, r, d);
}

/* One iteration from alpha: the update (cg_update_step, d[0] = r.z, d[1] = r.r as there) and,
 * where the backend has cg_iter (no preconditioner or Jacobi), also the next direction from
 * beta = d[0] / rz with d[2] = its p.Ap, in one call: *ahead = 1. Else *ahead = 0 and the
 * caller runs cg_spmv_step once it knows the iteration goes on. */
static int cg_iter_step(hk_ksp *k, double alpha, double rz, hk_vec *x, hk_vec *r, hk_vec *z,
                        hk_vec *p, hk_vec *Ap, int want_rr, double *d, int *ahead)
{
    const hk_backend_ops *be = k->be;
    const int none = z == r;
    *ahead = be->cg_iter && (none || k->pc->dinv);
    if (*ahead) return be->cg_iter(k->A, x, r, z, p, Ap, none ? NULL : k->pc->dinv, alpha, rz, d);
    return cg_update_step(k, alpha, x, r, z, p, Ap, want_rr, d);
}

static int cg_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    hk_vec *w[4];
    int ierr, done;
    double bnorm, rnorm, rz, pap;
    HK_CALL(hk_ksp_vecs(k, 4, w));
    hk_vec *r = w[0], *z = w[1], *p = w[2], *Ap = w[3];
    const int none = hk_ksp_pc_is_none(k);
    if (none) z = r; /* z = r: no copy, r.z = r.r gives the norm for free */
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) goto out;
    if (!none) HK_TRY(hk_ksp_pc(k, r, z));
    HK_TRY(be->vec_dot(r, z, &rz));
    if (hk_ksp_rz_check(k, 0, rz)) goto out;
    HK_TRY(cg_spmv_step(k, z, 0.0, p, Ap, &pap)); /* beta = 0: p = z */
    for (int it = 1;; it++) {
        if (hk_ksp_spd_check(k, it - 1, pap)) break;
        const double alpha = rz / pap;
        const int check = hk_ksp_check_now(k, it);
        double d[3]; /* the new r.z and r.r; with ahead the next direction's p.Ap */
        int ahead;
        HK_TRY(cg_iter_step(k, alpha, rz, x, r, z, p, Ap, check, d, &ahead));
        if (check && hk_ksp_converged(k, it, sqrt(fabs(d[1])), bnorm)) break;
        if (hk_ksp_rz_check(k, it, d[0])) break;
        if (ahead)
            pap = d[2];
        else
            HK_TRY(cg_spmv_step(k, z, d[0] / rz, p, Ap, &pap));
        rz = d[0];
    }
out:
    ierr = 0;
fail:
    hk_ksp_vecs_free(k, 4, w);
    return ierr;
}

const hk_ksp_type hk_ksp_cg = {.name = "cg",
                               .summary = "preconditioned conjugate gradients (SPD)",
                               .needs_symmetric = 1,
                               .flexible = 0,
                               .solve = cg_solve};

/* ---- fcg: flexible CG (Notay), truncation 1 ---------------------------------------------
 * p = z - (z.Ap_old / p_old.Ap_old) p_old keeps A-orthogonality to the last direction even
 * when M changes from one iteration to the next; alpha = p.r / p.Ap. */

static int fcg_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    hk_vec *v[4];
    int ierr, done;
    double bnorm, rnorm, pap_old = 0;
    HK_CALL(hk_ksp_vecs(k, 4, v));
    hk_vec *r = v[0], *z = v[1], *p = v[2], *Ap = v[3];
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) goto out;
    for (int it = 1;; it++) {
        double rz, pap, pr;
        HK_TRY(hk_ksp_pc(k, r, z));
        HK_TRY(be->vec_dot(r, z, &rz));
        if (hk_ksp_rz_check(k, it - 1, rz)) break;
        if (it == 1) {
            HK_TRY(be->vec_copy(p, z));
        } else {
            double zap;
            HK_TRY(be->vec_dot(z, Ap, &zap)); /* Ap still holds A p_old */
            HK_TRY(be->vec_axpby(p, 1.0, z, -zap / pap_old));
        }
        HK_TRY(hk_mat_spmv(k->A, p, Ap));
        HK_TRY(be->vec_dot(p, Ap, &pap));
        HK_TRY(be->vec_dot(p, r, &pr));
        if (hk_ksp_spd_check(k, it - 1, pap)) break;
        const double alpha = pr / pap;
        pap_old = pap;
        HK_TRY(be->vec_axpby(x, alpha, p, 1.0));
        HK_TRY(be->vec_axpby(r, -alpha, Ap, 1.0));
        if (hk_ksp_check_now(k, it)) {
            double rr;
            HK_TRY(be->vec_dot(r, r, &rr));
            if (hk_ksp_converged(k, it, sqrt(rr), bnorm)) break;
        }
    }
out:
    ierr = 0;
fail:
    hk_ksp_vecs_free(k, 4, v);
    return ierr;
}

const hk_ksp_type hk_ksp_fcg = {.name = "fcg",
                                .summary = "flexible CG (Notay), for variable SPD "
                                           "preconditioners",
                                .needs_symmetric = 1,
                                .flexible = 1,
                                .solve = fcg_solve};
