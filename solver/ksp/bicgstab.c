/* BiCGStab for nonsymmetric matrices, right-preconditioned (x = M^-1 y, A M^-1 y = b), so the
 * tracked residual is the true one:
 *   bicgstab      classical (van der Vorst; pipelined-solver paper Algorithm 3)
 *   pipebicgstab  pipelined (pipelined-solver paper Algorithm 4): beta = -(As.r0*)/(Ap.r0*),
 *                 four fused backend calls per iteration, scalars read every check_every. */
#include "ksp_impl.h"

/* ---- bicgstab -------------------------------------------------------------------------- */

static int bicgstab_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    hk_vec *v[8];
    int ierr, done;
    double bnorm, rnorm, rho;
    HK_CALL(hk_ksp_vecs(k, 8, v));
    hk_vec *r = v[0], *r0s = v[1], *p = v[2], *ph = v[3], *Ap = v[4], *s = v[5], *sh = v[6],
           *As = v[7];
    const int none = hk_ksp_pc_is_none(k);
    if (none) ph = p, sh = s;
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) goto out;
    HK_TRY(be->vec_copy(r0s, r));
    HK_TRY(be->vec_copy(p, r));
    rho = rnorm * rnorm;
    for (int it = 1;; it++) {
        double rap, ss, ass, asas, rho_new;
        if (!none) HK_TRY(hk_ksp_pc(k, p, ph));
        HK_TRY(hk_mat_spmv(k->A, ph, Ap));
        HK_TRY(be->vec_dot(Ap, r0s, &rap));
        if (hk_ksp_bad(rap)) {
            hk_ksp_stop(k, it - 1, HK_DIVERGED_NAN);
            break;
        }
        if (rap == 0) {
            hk_ksp_stop(k, it - 1, HK_DIVERGED_BREAKDOWN);
            break;
        }
        const double alpha = rho / rap;
        HK_TRY(be->vec_axpbypcz(s, 1.0, r, -alpha, Ap, 0.0));
        HK_TRY(be->vec_dot(s, s, &ss));
        if (sqrt(ss) <= k->rtol * bnorm || sqrt(ss) <= k->atol) {
            /* converged at the half step: x += alpha phat */
            HK_TRY(be->vec_axpby(x, alpha, ph, 1.0));
            hk_ksp_converged(k, it, sqrt(ss), bnorm);
            break;
        }
        if (!none) HK_TRY(hk_ksp_pc(k, s, sh));
        HK_TRY(hk_mat_spmv(k->A, sh, As));
        {
            hk_vec *X[2] = {s, As};
            double g[2];
            HK_TRY(be->vec_mdot(2, X, As, g)); /* As.s and As.As in one pass */
            ass = g[0];
            asas = g[1];
        }
        if (hk_ksp_bad(ass) || hk_ksp_bad(asas)) {
            hk_ksp_stop(k, it - 1, HK_DIVERGED_NAN);
            break;
        }
        if (asas == 0 || ass == 0) {
            hk_ksp_stop(k, it - 1, HK_DIVERGED_BREAKDOWN);
            break;
        }
        const double omega = ass / asas;
        HK_TRY(be->vec_axpbypcz(x, alpha, ph, omega, sh, 1.0));
        HK_TRY(be->vec_axpbypcz(r, 1.0, s, -omega, As, 0.0));
        if (hk_ksp_check_now(k, it)) {
            hk_vec *X[2] = {r0s, r};
            double g[2];
            HK_TRY(be->vec_mdot(2, X, r, g)); /* r.r0* and r.r in one pass */
            rho_new = g[0];
            if (hk_ksp_converged(k, it, sqrt(g[1]), bnorm)) break;
        } else {
            HK_TRY(be->vec_dot(r, r0s, &rho_new));
        }
        if (hk_ksp_bad(rho_new)) {
            hk_ksp_stop(k, it, HK_DIVERGED_NAN);
            break;
        }
        if (rho_new == 0) {
            hk_ksp_stop(k, it, HK_DIVERGED_BREAKDOWN);
            break;
        }
        const double beta = (rho_new / rho) * (alpha / omega);
        /* p = r + beta (p - omega Ap) */
        HK_TRY(be->vec_axpbypcz(p, 1.0, r, -beta * omega, Ap, beta));
        rho = rho_new;
    }
out:
    ierr = 0;
fail:
    hk_ksp_vecs_free(k, 8, v);
    return ierr;
}

const hk_ksp_type hk_ksp_bicgstab = {.name = "bicgstab",
                                     .summary = "BiCGStab, right-preconditioned (nonsymmetric)",
                                     .needs_symmetric = 0,
                                     .flexible = 0,
                                     .solve = bicgstab_solve};

/* ---- pipebicgstab ---------------------------------------------------------------------- */

static int pipebicgstab_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    HK_CHECK(be->spmv_mdot && be->pipebicg_s && be->pipebicg_update, HK_ERR_UNSUPPORTED,
             "method=pipebicgstab needs the fused ops spmv_mdot, pipebicg_s and pipebicg_update, "
             "which backend %s lacks; use method=bicgstab",
             be->name);
    HK_CHECK(x->prec == HK_FP64, HK_ERR_UNSUPPORTED,
             "method=pipebicgstab runs in fp64 only; as inner.method of defect use bicgstab");
    hk_vec *v[8];
    double *S = NULL;
    int ierr, done;
    double bnorm, rnorm;
    enum { NS = HK_S_BI_END - HK_S_BI_RR0 };
    double h[HK_S_MAX];
    HK_CALL(hk_ksp_vecs(k, 8, v));
    hk_vec *r = v[0], *r0s = v[1], *p = v[2], *ph = v[3], *Ap = v[4], *s = v[5], *sh = v[6],
           *As = v[7];
    const int none = hk_ksp_pc_is_none(k);
    if (none) ph = p, sh = s;
    /* Between two checks (check_every > 1) the iteration can run past convergence into a
     * breakdown whose NaN reaches x (a strong preconditioner such as amg converges within a
     * few iterations). x at the last sound check is kept in xg: on a NaN or breakdown the
     * method goes back to it once and goes on checking every iteration. */
    hk_vec *xg = NULL;
    const int check_every0 = k->check_every;
    int it_base = 0, retried = 0;
    HK_TRY(hk_ksp_vecs(k, 1, &xg));
    HK_TRY(be->scal_alloc(&S, HK_S_MAX));
restart:
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) {
        k->res.iterations += it_base;
        goto out;
    }
    if (check_every0 > 1) HK_TRY(be->vec_copy(xg, x));
    HK_TRY(be->vec_copy(r0s, r));
    HK_TRY(be->vec_copy(p, r));
    h[HK_S_BI_RR0] = rnorm * rnorm;
    HK_TRY(be->scal_set(S, HK_S_BI_RR0, 1, &h[HK_S_BI_RR0]));
    const int slot_ap[1] = {HK_S_BI_APR0};
    const int slot_as[3] = {HK_S_BI_ASS, HK_S_BI_ASAS, HK_S_BI_ASR0};
    for (int it = 1;; it++) {
        if (!none) HK_TRY(hk_ksp_pc(k, p, ph));
        const hk_vec *W1[1] = {r0s};
        HK_TRY(be->spmv_mdot(k->A, ph, Ap, 1, W1, S, slot_ap));
        HK_TRY(be->pipebicg_s(s, r, Ap, S));
        if (!none) HK_TRY(hk_ksp_pc(k, s, sh));
        const hk_vec *W3[3] = {s, As, r0s};
        HK_TRY(be->spmv_mdot(k->A, sh, As, 3, W3, S, slot_as));
        HK_TRY(be->pipebicg_update(x, r, p, ph, s, sh, As, Ap, r0s, S));
        if (!hk_ksp_check_now(k, it)) continue;
        /* one read-back of every scalar of this iteration */
        HK_TRY(be->scal_get(S, HK_S_BI_RR0, NS, &h[HK_S_BI_RR0]));
        const double rn = sqrt(fabs(h[HK_S_BI_RR]));
        int bad = 0;
        for (int j = HK_S_BI_RR0; j < HK_S_BI_END; j++)
            bad |= hk_ksp_bad(h[j]);
        const int zero = h[HK_S_BI_APR0] == 0 || h[HK_S_BI_ASAS] == 0 ||
                         h[HK_S_BI_OMEGA] == 0 || h[HK_S_BI_RR0] == 0;
        if ((bad || zero) && k->check_every > 1 && !retried) {
            HK_TRY(be->vec_copy(x, xg)); /* back to the last sound check */
            retried = 1;
            it_base += it;
            k->check_every = 1;
            goto restart;
        }
        if (hk_ksp_bad(rn) && (h[HK_S_BI_APR0] == 0 || h[HK_S_BI_ASAS] == 0)) {
            /* a zero denominator made the NaN: that is a breakdown of the method */
            hk_ksp_record(k, it_base + it, rn);
            hk_ksp_stop(k, it_base + it, HK_DIVERGED_BREAKDOWN);
            break;
        }
        if (hk_ksp_converged(k, it_base + it, rn, bnorm)) break;
        if (bad) {
            hk_ksp_stop(k, it_base + it, HK_DIVERGED_NAN);
            break;
        }
        if (zero) {
            hk_ksp_stop(k, it_base + it, HK_DIVERGED_BREAKDOWN);
            break;
        }
        if (check_every0 > 1) HK_TRY(be->vec_copy(xg, x));
    }
out:
    ierr = 0;
fail:
    k->check_every = check_every0;
    if (S) be->scal_free(S);
    if (xg) hk_ksp_vecs_free(k, 1, &xg);
    hk_ksp_vecs_free(k, 8, v);
    return ierr;
}

const hk_ksp_type hk_ksp_pipebicgstab = {.name = "pipebicgstab",
                                         .summary = "pipelined BiCGStab, fused kernels "
                                                    "(ViennaCL Alg. 4) (nonsymmetric)",
                                         .needs_symmetric = 0,
                                         .flexible = 0,
                                         .pipelined = 1,
                                         .solve = pipebicgstab_solve};
