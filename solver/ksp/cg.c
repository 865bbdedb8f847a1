/* The CG family, for SPD matrices with SPD preconditioners:
 *   cg      preconditioned CG (SBELL paper Algorithm 1; mixed precision = its Algorithm 6)
 *   cgcg    Chronopoulos-Gear CG: one reduction phase per iteration (GPU Krylov thesis ch. 4)
 *   pipecg  pipelined CG (pipelined-solver paper Algorithm 2) on the fused backend ops, with
 *           Jacobi fused; other preconditioners: Ghysels-Vanroose pipelined PCG
 *   fcg     flexible CG (Notay 2000, truncation 1) for variable preconditioners
 * All track ||r||_2 of the unpreconditioned residual, so tol means the same for every method. */
#include "ksp_impl.h"

/* p.Ap <= 0 means A (or the preconditioned operator) is not SPD; NaN is reported as NaN. */
static int spd_check(hk_ksp *k, int it, double pap)
{
    if (hk_ksp_bad(pap)) return hk_ksp_stop(k, it, HK_DIVERGED_NAN);
    if (pap <= 0) return hk_ksp_stop(k, it, HK_DIVERGED_NOT_SPD);
    return 0;
}

/* r.z < 0 means the preconditioner is not SPD; r.z = 0 with r != 0 is a breakdown. */
static int rz_check(hk_ksp *k, int it, double rz)
{
    if (hk_ksp_bad(rz)) return hk_ksp_stop(k, it, HK_DIVERGED_NAN);
    if (rz < 0) return hk_ksp_stop(k, it, HK_DIVERGED_NOT_SPD);
    if (rz == 0) return hk_ksp_stop(k, it, HK_DIVERGED_BREAKDOWN);
    return 0;
}

/* ---- cg -------------------------------------------------------------------------------- */

static int cg_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    hk_vec *w[4];
    int ierr, done;
    double bnorm, rnorm, rz, rz_new, pap;
    HK_CALL(hk_ksp_vecs(k, 4, w));
    hk_vec *r = w[0], *z = w[1], *p = w[2], *Ap = w[3];
    const int none = hk_ksp_pc_is_none(k);
    if (none) z = r; /* z = r: no copy, r.z = r.r gives the norm for free */
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) goto out;
    if (!none) HK_TRY(hk_ksp_pc(k, r, z));
    HK_TRY(be->vec_dot(r, z, &rz));
    if (rz_check(k, 0, rz)) goto out;
    HK_TRY(be->vec_copy(p, z));
    for (int it = 1;; it++) {
        HK_TRY(hk_mat_spmv(k->A, p, Ap));
        HK_TRY(be->vec_dot(p, Ap, &pap));
        if (spd_check(k, it - 1, pap)) break;
        const double alpha = rz / pap;
        HK_TRY(be->vec_axpby(x, alpha, p, 1.0));
        HK_TRY(be->vec_axpby(r, -alpha, Ap, 1.0));
        if (!none) HK_TRY(hk_ksp_pc(k, r, z));
        const int check = hk_ksp_check_now(k, it);
        double rr = 0;
        if (!none && check) {
            /* r.z and r.r in one pass and one host read */
            hk_vec *X[2] = {z, r};
            double g[2];
            HK_TRY(be->vec_mdot(2, X, r, g));
            rz_new = g[0];
            rr = g[1];
        } else {
            HK_TRY(be->vec_dot(r, z, &rz_new));
            rr = rz_new;
        }
        if (check && hk_ksp_converged(k, it, sqrt(fabs(rr)), bnorm)) break;
        if (rz_check(k, it, rz_new)) break;
        HK_TRY(be->vec_axpby(p, 1.0, z, rz_new / rz));
        rz = rz_new;
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

/* ---- cgcg: Chronopoulos-Gear ------------------------------------------------------------
 * u = M r, w = A u; gamma = r.u, delta = w.u in one reduction phase; p = u + beta p and
 * s = w + beta s (s = A p by recurrence), alpha = gamma / (delta - beta gamma / alpha_old). */

static int cgcg_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    hk_vec *v[5];
    int ierr, done;
    double bnorm, rnorm, gamma, gamma_old = 0, delta, alpha = 0, beta = 0;
    HK_CALL(hk_ksp_vecs(k, 5, v));
    hk_vec *r = v[0], *u = v[1], *w = v[2], *p = v[3], *s = v[4];
    const int none = hk_ksp_pc_is_none(k);
    if (none) u = r;
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) goto out;
    for (int it = 1;; it++) {
        /* one reduction phase: r.u and w.u (plus r.r on checks with a preconditioner) */
        double g[2], rr;
        if (!none) HK_TRY(hk_ksp_pc(k, r, u));
        HK_TRY(hk_mat_spmv(k->A, u, w));
        hk_vec *X[2] = {r, w};
        HK_TRY(be->vec_mdot(2, X, u, g)); /* gamma = r.u, delta = w.u: one pass over u */
        gamma = g[0];
        delta = g[1];
        rr = gamma;
        if (it > 1 && hk_ksp_check_now(k, it - 1)) {
            if (!none) HK_TRY(be->vec_dot(r, r, &rr));
            if (hk_ksp_converged(k, it - 1, sqrt(fabs(rr)), bnorm)) break;
        }
        if (rz_check(k, it - 1, gamma)) break;
        double denom;
        if (it == 1) {
            beta = 0;
            denom = delta;
        } else {
            beta = gamma / gamma_old;
            denom = delta - beta * gamma / alpha;
        }
        if (spd_check(k, it - 1, denom)) break; /* denom = p.Ap */
        alpha = gamma / denom;
        gamma_old = gamma;
        if (it == 1) {
            HK_TRY(be->vec_copy(p, u));
            HK_TRY(be->vec_copy(s, w));
        } else {
            HK_TRY(be->vec_axpby(p, 1.0, u, beta));
            HK_TRY(be->vec_axpby(s, 1.0, w, beta));
        }
        HK_TRY(be->vec_axpby(x, alpha, p, 1.0));
        HK_TRY(be->vec_axpby(r, -alpha, s, 1.0));
        if (it >= k->maxit) {
            double r2;
            HK_TRY(be->vec_dot(r, r, &r2));
            hk_ksp_converged(k, it, sqrt(r2), bnorm);
            break;
        }
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

/* ---- pipecg ---------------------------------------------------------------------------- */

/* Algorithm 2 on the fused ops: two backend calls per iteration, scalars stay on the backend
 * and are read only every check_every iterations. dinv is the Jacobi inverse diagonal or
 * NULL (no preconditioner). */
static int pipecg_fused(hk_ksp *k, const hk_vec *b, hk_vec *x, const hk_vec *dinv)
{
    const hk_backend_ops *be = k->be;
    hk_vec *v[3];
    double *S = NULL;
    void *graph = NULL;
    int ierr, done;
    double bnorm, rnorm, h[HK_S_PIPECG_COUNT];
    HK_CALL(hk_ksp_vecs(k, 3, v));
    hk_vec *r = v[0], *p = v[1], *Ap = v[2];
    HK_TRY(be->scal_alloc(&S, HK_S_MAX));
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) goto out;
    /* p0 = z0 = dinv.*r0; S[RR], S[RZ] of r0 */
    if (dinv)
        HK_TRY(be->vec_pointwise_mult(p, dinv, r));
    else
        HK_TRY(be->vec_copy(p, r));
    h[HK_S_RR] = rnorm * rnorm;
    HK_TRY(be->vec_dot(r, p, &h[HK_S_RZ]));
    if (rz_check(k, 0, h[HK_S_RZ])) goto out;
    HK_TRY(be->scal_set(S, HK_S_RR, 2, h));
    HK_TRY(be->spmv_dot2(k->A, p, Ap, dinv, S));
    HK_TRY(be->scal_get(S, 0, HK_S_PIPECG_COUNT, h));
    if (spd_check(k, 0, h[HK_S_PAP])) goto out;
    /* Between two checks the iterations need nothing from the host: where the backend can
     * record them (CUDA graphs), the check_every iterations are recorded once and replayed,
     * one launch per check instead of 2 * check_every. */
    const int ce = k->check_every;
    const int use_graph = ce > 1 && be->graph_begin && be->graph_launch && k->graphs;
    for (int it = 0;;) {
        int next = (it / ce + 1) * ce; /* the next check, as hk_ksp_check_now decides it */
        if (next > k->maxit) next = k->maxit > it ? k->maxit : it + 1;
        if (use_graph && next - it == ce) {
            if (!graph) {
                HK_TRY(be->graph_begin());
                for (int j = 0; j < ce; j++) {
                    ierr = be->pipecg_update(x, r, p, Ap, dinv, S);
                    if (!ierr) ierr = be->spmv_dot2(k->A, p, Ap, dinv, S);
                    if (ierr) break;
                }
                /* always end the recording, also after a failed op */
                int eerr = be->graph_end(&graph);
                if (ierr || eerr) goto fail;
            }
            HK_TRY(be->graph_launch(graph));
        } else {
            for (int j = it; j < next; j++) {
                HK_TRY(be->pipecg_update(x, r, p, Ap, dinv, S));
                HK_TRY(be->spmv_dot2(k->A, p, Ap, dinv, S));
            }
        }
        it = next;
        HK_TRY(be->scal_get(S, 0, HK_S_PIPECG_COUNT, h));
        if (hk_ksp_converged(k, it, sqrt(fabs(h[HK_S_RR])), bnorm)) break;
        if (rz_check(k, it, h[HK_S_RZ])) break;
        if (spd_check(k, it, h[HK_S_PAP])) break;
    }
out:
    ierr = 0;
fail:
    if (graph) be->graph_free(graph);
    if (S) be->scal_free(S);
    hk_ksp_vecs_free(k, 3, v);
    return ierr;
}

/* Ghysels-Vanroose pipelined PCG from generic ops, for any SPD preconditioner: the
 * preconditioner and SpMV of the next direction (m = M w, n = A m) overlap the reductions. */
static int pipecg_gv(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    hk_vec *v[10];
    int ierr, done, first = 1, restarts = 0;
    double bnorm, rnorm, gamma_old = 0, alpha = 0;
    /* With an fp32 preconditioner the recurrence u = M r drifts by the fp32 rounding of M, so
     * near convergence gamma or p.Ap may lose their sign: then restart from the true
     * residual instead of reporting "not SPD". Convergence of the recursive residual is
     * confirmed with the true one (residual replacement). At most 20 restarts in all. */
    const int inexact_pc = k->pc->prec != x->prec;
    HK_CALL(hk_ksp_vecs(k, 10, v));
    hk_vec *r = v[0], *u = v[1], *w = v[2], *m = v[3], *n = v[4], *z = v[5], *q = v[6], *s = v[7],
           *p = v[8];
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) goto out;
    HK_TRY(hk_ksp_pc(k, r, u));
    HK_TRY(hk_mat_spmv(k->A, u, w));
    for (int i = 5; i < 9; i++)
        HK_TRY(be->vec_set(v[i], 0.0)); /* z q s p: beta_0 = 0 */
    for (int it = 1;; it++) {
        double gamma, delta, rr = 0;
        HK_TRY(be->vec_dot(r, u, &gamma));
        HK_TRY(be->vec_dot(w, u, &delta));
        const int check = it > 1 && hk_ksp_check_now(k, it - 1);
        if (check) HK_TRY(be->vec_dot(r, r, &rr));
        HK_TRY(hk_ksp_pc(k, w, m));
        HK_TRY(hk_mat_spmv(k->A, m, n));
        if (check && hk_ksp_converged(k, it - 1, sqrt(rr), bnorm)) {
            if (!hk_reason_converged(k->res.reason) || restarts >= 20) break;
            /* the recursive r of pipelined CG drifts from b - A x (the residual gap): confirm
             * with the true residual, and if it is not there yet, replace and go on */
            double tr;
            HK_TRY(hk_mat_spmv(k->A, x, r));
            HK_TRY(be->vec_axpby(r, 1.0, b, -1.0));
            HK_TRY(be->vec_dot(r, r, &tr));
            if (sqrt(tr) <= k->rtol * bnorm || sqrt(tr) <= k->atol) break;
            k->res.reason = HK_REASON_NONE;
            restarts++;
            first = 1;
            HK_TRY(hk_ksp_pc(k, r, u));
            HK_TRY(hk_mat_spmv(k->A, u, w));
            it--;
            continue;
        }
        double beta = 0, denom = delta;
        if (!first) {
            beta = gamma / gamma_old;
            denom = delta - beta * gamma / alpha;
        }
        if (!hk_ksp_bad(gamma) && !hk_ksp_bad(denom) && (gamma <= 0 || denom <= 0)) {
            /* Between two checks (check_every > 1) the iteration may run past convergence,
             * where rounding alone can flip these signs: look at the residual first. */
            double rr_now;
            HK_TRY(be->vec_dot(r, r, &rr_now));
            if (sqrt(rr_now) <= k->rtol * bnorm || sqrt(rr_now) <= k->atol) {
                hk_ksp_converged(k, it - 1, sqrt(rr_now), bnorm);
                break;
            }
        }
        if (inexact_pc && restarts < 20 && !hk_ksp_bad(gamma) && !hk_ksp_bad(denom) &&
            (gamma <= 0 || denom <= 0)) {
            /* restart: r = b - A x, u = M r, w = A u, beta = 0 */
            restarts++;
            first = 1;
            HK_TRY(hk_mat_spmv(k->A, x, r));
            HK_TRY(be->vec_axpby(r, 1.0, b, -1.0));
            HK_TRY(hk_ksp_pc(k, r, u));
            HK_TRY(hk_mat_spmv(k->A, u, w));
            it--;
            continue;
        }
        if (rz_check(k, it - 1, gamma)) break;
        if (spd_check(k, it - 1, denom)) break;
        alpha = gamma / denom;
        gamma_old = gamma;
        first = 0;
        HK_TRY(be->vec_axpby(z, 1.0, n, beta));
        HK_TRY(be->vec_axpby(q, 1.0, m, beta));
        HK_TRY(be->vec_axpby(s, 1.0, w, beta));
        HK_TRY(be->vec_axpby(p, 1.0, u, beta));
        HK_TRY(be->vec_axpby(x, alpha, p, 1.0));
        HK_TRY(be->vec_axpby(r, -alpha, s, 1.0));
        HK_TRY(be->vec_axpby(u, -alpha, q, 1.0));
        HK_TRY(be->vec_axpby(w, -alpha, z, 1.0));
        if (it >= k->maxit) {
            HK_TRY(be->vec_dot(r, r, &rr));
            hk_ksp_converged(k, it, sqrt(rr), bnorm);
            break;
        }
    }
out:
    ierr = 0;
fail:
    hk_ksp_vecs_free(k, 10, v);
    return ierr;
}

static int pipecg_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    const int fused_ok = be->pipecg_update && be->spmv_dot2 && x->prec == HK_FP64;
    if (fused_ok && hk_ksp_pc_is_none(k)) return pipecg_fused(k, b, x, NULL);
    if (fused_ok && k->pc->dinv && k->pc->dinv->prec == HK_FP64)
        return pipecg_fused(k, b, x, k->pc->dinv);
    if (fused_ok && k->pc->dinv) {
        /* fp32 Jacobi (precision=mixed): promote its fp32 inverse diagonal once to fp64 and
         * fuse it. M stays exactly the fp32 operator but is applied without rounding, so it is
         * a fixed SPD matrix and the pipelined recurrences do not drift. */
        hk_vec *d64;
        HK_CALL(hk_vec_create(be, k->pc->dinv->n, HK_FP64, &d64));
        int ierr = be->vec_convert(d64, k->pc->dinv);
        if (!ierr) ierr = pipecg_fused(k, b, x, d64);
        hk_vec_destroy(d64);
        return ierr;
    }
    return pipecg_gv(k, b, x);
}

const hk_ksp_type hk_ksp_pipecg = {.name = "pipecg",
                                   .summary = "pipelined CG, fused kernels (ViennaCL Alg. 2; "
                                              "Ghysels-Vanroose with other pcs) (SPD)",
                                   .needs_symmetric = 1,
                                   .flexible = 0,
                                   .pipelined = 1,
                                   .solve = pipecg_solve};

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
        if (rz_check(k, it - 1, rz)) break;
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
        if (spd_check(k, it - 1, pap)) break;
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
