/* method=pipecg: pipelined CG, in three variants (option pipecg.variant):
 *   paper  the pipelined-solver paper's Algorithm 2 as written, for pc=none and pc=jacobi:
 *          x, r and p updated together, then A p with (Ap, Ap) and (p, Ap), and
 *          beta = alpha^2 (Ap, Ap)/(r, r) - 1 (with Jacobi: the M-weighted products); one
 *          backend op per iteration, pipecg_paper_step (on cuda the paper's two kernels);
 *   fused  the same iteration on pipecg_update and spmv_dot2, with beta = the new r.z over
 *          the old one expanded with a z.Ap product (r.z - 2 alpha z.Ap + alpha^2 Ap.M Ap)/r.z
 *          in place of the paper's, which assumes z.Ap = p.Ap;
 *   gv     Ghysels-Vanroose pipelined PCG from generic ops, for any SPD preconditioner;
 *   auto   (the default) paper with pc=none or jacobi in fp64 (fused where a backend lacks
 *          its op), gv otherwise: the paper's step was 0.27 of cg's time per iteration against
 *          fused's 0.32 on the 41k-DOF bracket with Jacobi (H100), and within 2 % of it at
 *          0.8M and 2.3M DOFs (docs/BENCHMARKS.md, issue 30).
 * The safeguards are the same in all: convergence confirmed on the true residual, the
 * rounding-floor test, breakdowns retried from the true residual before "not SPD", residual
 * replacement by a drift estimate (docs/solver.md, "Accuracy of pipecg"). */
#include <string.h>

#include "ksp_impl.h"
#include "pipecg_gv.h"

/* The iteration of the next check after it, as hk_ksp_check_now decides it (maxit is one). */
static int next_check(const hk_ksp *k, int it)
{
    const int ce = k->check_every;
    int next = (it / ce + 1) * ce;
    if (next > k->maxit) next = k->maxit > it ? k->maxit : it + 1;
    return next;
}

/* Iterations it .. next - 1 of a pipelined CG, each step(k, ctx): backend ops only, nothing
 * read by the host. Where use_graph and a whole check_every span lies ahead, the span is
 * recorded once as a graph (*graph, kept for the next spans) and replayed, one launch per
 * check instead of one per op. */
static int pipecg_steps(hk_ksp *k, int it, int next, int use_graph, void **graph,
                        int (*step)(hk_ksp *k, void *ctx), void *ctx)
{
    const hk_backend_ops *be = k->be;
    const int ce = k->check_every;
    if (!use_graph || next - it != ce) {
        for (int j = it; j < next; j++)
            HK_CALL(step(k, ctx));
        return 0;
    }
    if (!*graph) {
        HK_CALL(be->graph_begin());
        int ierr = 0;
        for (int j = 0; j < ce && !ierr; j++)
            ierr = step(k, ctx);
        /* always end the recording, also after a failed op */
        const int eerr = be->graph_end(graph);
        if (ierr || eerr) return ierr ? ierr : eerr;
    }
    return be->graph_launch(*graph);
}

/* Breakdowns (p.Ap <= 0 or r.z <= 0 from the recurrences) retried from the true residual
 * before "not SPD" is believed; a cap keeps a drifting method from looping. */
#define HK_PIPECG_RETRIES 10

/* Fused pipelined CG: S[RR] = r.r and S[RZ] = r.z of the current r, z = dinv .* r (t holds z
 * when there is a Jacobi diagonal), and with Ap given S[ZAP] = z.Ap (after a replacement of r
 * with p and Ap kept). */
static int pipecg_fused_rz(hk_ksp *k, const hk_vec *r, const hk_vec *dinv, hk_vec *t,
                           const hk_vec *Ap, double *S, double *h)
{
    const hk_backend_ops *be = k->be;
    HK_CALL(be->vec_dot(r, r, &h[HK_S_RR]));
    if (dinv) {
        HK_CALL(be->vec_pointwise_mult(t, dinv, r));
        HK_CALL(be->vec_dot(r, t, &h[HK_S_RZ]));
    } else {
        h[HK_S_RZ] = h[HK_S_RR];
    }
    if (Ap) {
        HK_CALL(be->vec_dot(dinv ? t : r, Ap, &h[HK_S_ZAP]));
        HK_CALL(be->scal_set(S, HK_S_ZAP, 1, &h[HK_S_ZAP]));
    }
    return be->scal_set(S, HK_S_RR, 2, h);
}

/* After a residual replacement in the paper variant (S[RR], S[RZ] and S[ZAP] = z.Ap of the
 * new r in S and h, p and A p kept): Algorithm 2's beta, alpha^2 S[APZ]/S[RZ] - 1, assumes
 * z.Ap = p.Ap, which the new r breaks, so S[APZ] is shifted by 2 (p.Ap - z.Ap)/alpha: the
 * unchanged step then computes the new r.z over the old one exactly, as the fused variant's
 * beta does. (Restarting the direction instead cost 3-24 % more iterations at tol=1e-10 and
 * 1e-12 on the stretched beam of suite pipecg_accuracy, pc none and jacobi.) */
static int pipecg_paper_replaced(hk_ksp *k, double *S, double *h)
{
    const double alpha = h[HK_S_RZ] / h[HK_S_PAP];
    h[HK_S_APZ] += 2.0 * (h[HK_S_PAP] - h[HK_S_ZAP]) / alpha;
    return k->be->scal_set(S, HK_S_APZ, 1, &h[HK_S_APZ]);
}

/* Algorithm 2 on the fused ops (paper: as written, pipecg_paper_step; else the fused variant,
 * pipecg_update and spmv_dot2): scalars stay on the backend and are read only every
 * check_every iterations. dinv is the Jacobi inverse diagonal or NULL (no preconditioner).
 * Accuracy: A p is computed, never recurred, so the gap between r and b - A x grows only by
 * the rounding of each step, as in CG; at a check where the drift estimate crosses sqrt(eps)
 * ||r|| (or every replace_every iterations) r is replaced by b - A x and S[RR], S[RZ]
 * recomputed, p and A p kept (so the Krylov space is not lost), with S[ZAP] = z.Ap of the new
 * r, which the fused variant's beta takes into account (the paper's: pipecg_paper_replaced).
 * A non-positive r.z or p.Ap read at a check, or a NaN with x still finite, restarts the
 * direction from the true residual (p = z): only when r.z or p.Ap of that restart, computed
 * without any recurrence, is not positive does the method stop with "not SPD". */
typedef struct pipecg_fused_vecs {
    hk_vec *x, *r, *p, *Ap;
    const hk_vec *dinv;
    double *S;
} pipecg_fused_vecs;

/* One iteration of the fused variant: one backend call where it has pipecg_step, else two. */
static int pipecg_fused_step(hk_ksp *k, void *ctx)
{
    const pipecg_fused_vecs *v = ctx;
    if (k->be->pipecg_step) return k->be->pipecg_step(k->A, v->x, v->r, v->p, v->Ap, v->dinv, v->S);
    HK_CALL(k->be->pipecg_update(v->x, v->r, v->p, v->Ap, v->dinv, v->S));
    return k->be->spmv_dot2(k->A, v->p, v->Ap, v->dinv, v->r, v->S);
}

/* One iteration of Algorithm 2 as written: one backend call. */
static int pipecg_paper_step(hk_ksp *k, void *ctx)
{
    const pipecg_fused_vecs *v = ctx;
    return k->be->pipecg_paper_step(k->A, v->x, v->r, v->p, v->Ap, v->dinv, v->S);
}

static int pipecg_fused(hk_ksp *k, const hk_vec *b, hk_vec *x, const hk_vec *dinv, int paper)
{
    const hk_backend_ops *be = k->be;
    hk_vec *v[4];
    double *S = NULL;
    void *graph = NULL;
    int ierr, done, retries = 0;
    double bnorm, rnorm, h[HK_S_PIPECG_COUNT], normA, xn = 0;
    hk_ksp_floor floor = {0};
    hk_ksp_drift drift;
    HK_CALL(hk_ksp_vecs(k, 4, v));
    hk_vec *r = v[0], *p = v[1], *Ap = v[2], *t = v[3];
    HK_TRY(be->scal_alloc(&S, HK_S_MAX));
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) goto out;
    /* ||A|| for the rounding floor of b - A x alone: the gap counted below needs none */
    HK_TRY(hk_ksp_norm_estimate(k, b, p, Ap, &normA));
    memset(&drift, 0, sizeof drift);
    hk_ksp_drift_reset(&drift, 0, rnorm);
    int it = 0;
    /* the direction starts (and restarts) at p = z of the true residual in r */
restart:
    HK_TRY(pipecg_fused_rz(k, r, dinv, t, NULL, S, h));
    if (hk_ksp_rz_check(k, it, h[HK_S_RZ])) goto out;
    if (dinv)
        HK_TRY(be->vec_copy(p, t));
    else
        HK_TRY(be->vec_copy(p, r));
    HK_TRY(be->spmv_dot2(k->A, p, Ap, dinv, paper ? NULL : r, S));
    HK_TRY(be->scal_get(S, 0, HK_S_PIPECG_COUNT, h));
    if (hk_ksp_spd_check(k, it, h[HK_S_PAP])) goto out;
    /* Between two checks the iterations need nothing from the host: where the backend can
     * record them (CUDA graphs), the check_every iterations are recorded once and replayed,
     * one launch per check instead of 2 * check_every. */
    const int use_graph = k->check_every > 1 && be->graph_begin && be->graph_launch && k->graphs;
    pipecg_fused_vecs sv = {x, r, p, Ap, dinv, S};
    for (;;) {
        const int next = next_check(k, it);
        HK_TRY(pipecg_steps(k, it, next, use_graph, &graph,
                            paper ? pipecg_paper_step : pipecg_fused_step, &sv));
        const int steps = next - it;
        it = next;
        HK_TRY(be->scal_get(S, 0, HK_S_PIPECG_COUNT, h));
        const double rn = sqrt(fabs(h[HK_S_RR]));
        const int bad = hk_ksp_bad(h[HK_S_RR]) || hk_ksp_bad(h[HK_S_RZ]) || hk_ksp_bad(h[HK_S_PAP]);
        if (!bad) HK_TRY(hk_ksp_floor_xnorm(k, x, rn, bnorm, &xn));
        if (!bad && hk_ksp_floor_due(&floor, it, rn, hk_ksp_residual_floor(normA, xn, bnorm))) {
            double tn;
            int stop;
            HK_TRY(hk_ksp_floor_test(k, it, b, x, r, bnorm, &floor, &tn, &stop));
            if (stop) break;
            hk_ksp_drift_reset(&drift, it, tn);
            goto restart; /* from the true residual now in r */
        }
        const int broke = !bad && (h[HK_S_RZ] <= 0 || h[HK_S_PAP] <= 0);
        double xx = 0;
        if (bad || broke) HK_TRY(be->vec_dot(x, x, &xx));
        if ((bad || broke) && !hk_ksp_bad(xx) && retries < HK_PIPECG_RETRIES && it < k->maxit) {
            /* a breakdown of the recurrences, not yet of the matrix: retry from x */
            retries++;
            double tn;
            HK_TRY(hk_ksp_true_residual_norm(k, b, x, r, &tn));
            if (hk_ksp_converged(k, it, tn, bnorm)) break;
            hk_ksp_drift_reset(&drift, it, tn);
            goto restart;
        }
        if (hk_ksp_converged(k, it, rn, bnorm)) {
            if (!hk_reason_converged(k->res.reason) || retries >= HK_PIPECG_RETRIES) break;
            /* converged on the recursive residual: confirm on the true one, else restart the
             * direction from it: p, built from the recursive residual, no longer belongs to
             * the true one, and stepping along it raised the error (the bracket with Jacobi
             * at tol=3e-11: from 5e-11 up to 2.5e-5, "stagnation" after 3641 iterations) */
            double tn;
            HK_TRY(hk_ksp_true_residual_norm(k, b, x, r, &tn));
            if (tn <= k->rtol * bnorm || tn <= k->atol || it >= k->maxit) break;
            k->res.reason = HK_REASON_NONE;
            retries++;
            hk_ksp_drift_reset(&drift, it, tn);
            goto restart;
        }
        if (hk_ksp_rz_check(k, it, h[HK_S_RZ])) break;
        if (hk_ksp_spd_check(k, it, h[HK_S_PAP])) break;
        /* A p is computed, so the gap only takes the rounding of each step of r and x; the
         * eps ||A|| ||x|| bound of that rounding was measured to overstate it by orders of
         * magnitude here (it replaced every ~10 iterations with no gap to close), so only
         * the rounding of the r recurrence is counted */
        hk_ksp_drift_add(&drift, steps, 0.0, rn);
        if (hk_ksp_drift_want(k, &drift, it, rn)) {
            HK_TRY(hk_ksp_true_residual(k, b, x, r));
            HK_TRY(pipecg_fused_rz(k, r, dinv, t, Ap, S, h));
            if (paper) HK_TRY(pipecg_paper_replaced(k, S, h));
            hk_ksp_drift_reset(&drift, it, sqrt(h[HK_S_RR]));
        }
    }
out:
    ierr = 0;
fail:
    if (graph) be->graph_free(graph);
    if (S) be->scal_free(S);
    hk_ksp_floor_free(k, &floor);
    hk_ksp_vecs_free(k, 4, v);
    return ierr;
}

/* Load S after the host recomputed r, u = M r and w = A u (and on a replacement s, q, z): the
 * three inner products r.u, w.u, r.r in one pass, with reset the drift bounds back to the
 * rounding of one residual at iteration it, then the next step's coefficients by the backend's
 * own rule; h is the host copy. The reset leaves out eps ||A|| ||x||, as the step bounds do:
 * counted, it kept the bound above sqrt(eps) ||r|| once ||r|| fell below floor / sqrt(eps), so
 * no replacement came after that (below 1.5e-2 ||b|| on the bracket of 0.8M DOFs with Jacobi,
 * whose recurrences then drifted to a true residual of 2e-6 while r claimed 1e-8). */
static int pipecg_gv_load(hk_ksp *k, hk_vec *r, hk_vec *w, hk_vec *u, int reset, int it,
                          hk_ksp_drift *drift, double *h, double *S)
{
    const hk_backend_ops *be = k->be;
    if (be->vec_gram) {
        hk_vec *X[3] = {r, w, u};
        double G[9];
        HK_CALL(be->vec_gram(3, X, NULL, G, NULL));
        h[HK_G_GAMMA] = G[2], h[HK_G_DELTA] = G[5], h[HK_G_RR] = G[0];
    } else {
        HK_CALL(be->vec_dot(r, u, &h[HK_G_GAMMA]));
        HK_CALL(be->vec_dot(w, u, &h[HK_G_DELTA]));
        HK_CALL(be->vec_dot(r, r, &h[HK_G_RR]));
    }
    if (reset) hk_ksp_drift_reset(drift, it, sqrt(fabs(h[HK_G_RR])));
    h[HK_G_STEPPED] = h[HK_G_STEPS] = h[HK_G_HALT] = h[HK_G_WANT] = 0;
    h[HK_G_GZ] = h[HK_G_GW] = h[HK_G_GS] = 0;
    h[HK_G_GAP] = drift->gap;
    h[HK_G_BELOW] = drift->below;
    hk_pipecg_gv_derive(h);
    return be->scal_set(S, 0, HK_G_COUNT, h);
}

/* Ghysels-Vanroose pipelined PCG from generic ops, for any SPD preconditioner: the
 * preconditioner and SpMV of the next direction (m = M w, n = A m) overlap the reductions.
 * An iteration is m = M w, n = A m and one fused step (pipecg_gv_step) that also derives the
 * next alpha and beta on the backend from the step's inner products (solver/pipecg_gv.h), so
 * the host reads the scalars only every check_every iterations; where the preconditioner's
 * apply is only backend launches (apply_capturable), the check_every iterations between two
 * checks are recorded once as a graph and replayed.
 * Accuracy (Cools, Yetkin, Agullo, Giraud and Vanroose, SIMAX 2018): r, u = M r, w = A u and
 * s = A p, q = M s, z = A q are all recurrences here, and a rounding error in z reaches r
 * through w and s, amplified by alpha and beta at every step. The gaps are bounded step by
 * step on the backend (pipecg_gv.h); when the bound on r first exceeds sqrt(eps) ||r|| a flag
 * is raised and the next check (up to check_every - 1 iterations later) recomputes all six
 * vectors from x and p, which keeps the Krylov space (replace_every = N: at the first check N
 * or more iterations after the last replacement). A non-positive r.u or p.Ap halts the steps
 * on the backend; the next check decides on the halted iteration as if it had been read at
 * once: converged if the residual is small, else a restart from the true residual (beta = 0),
 * and "not SPD" only when that restart's r.u or u.Au, computed without a recurrence, is not
 * positive. */
/* A restart from the true residual in r at iteration it: u = M r, w = A u, beta = 0 (as the
 * first step), S loaded with the drift bounds reset. */
static int pipecg_gv_restart(hk_ksp *k, hk_vec *r, hk_vec *w, hk_vec *u, int it,
                             hk_ksp_drift *drift, double *h, double *S)
{
    HK_CALL(hk_ksp_pc(k, r, u));
    HK_CALL(hk_mat_spmv(k->A, u, w));
    h[HK_G_FIRST] = 1;
    return pipecg_gv_load(k, r, w, u, 1, it, drift, h, S);
}

typedef struct pipecg_gv_vecs {
    hk_vec *w, *m, *n;
    hk_vec **V; /* x r u w m n z q s p, as pipecg_gv_step takes them */
    double *S;
} pipecg_gv_vecs;

/* One Ghysels-Vanroose iteration: m = M w, then n = A m and the fused step (one op where the
 * backend has it). */
static int pipecg_gv_iter(hk_ksp *k, void *ctx)
{
    const pipecg_gv_vecs *v = ctx;
    HK_CALL(hk_ksp_pc(k, v->w, v->m));
    if (k->be->spmv_pipecg_gv_step) return k->be->spmv_pipecg_gv_step(k->A, v->V, v->S);
    HK_CALL(hk_mat_spmv(k->A, v->m, v->n));
    return k->be->pipecg_gv_step(v->V, v->S);
}

static int pipecg_gv(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    hk_vec *v[9];
    double *S = NULL, h[HK_G_COUNT];
    void *graph = NULL;
    int ierr, done, restarts = 0, fresh = 1;
    double bnorm, rnorm;
    hk_ksp_floor floor = {0};
    hk_ksp_drift drift;
    HK_CHECK(be->pipecg_gv_step, HK_ERR_UNSUPPORTED,
             "method=pipecg: backend %s lacks the fused step for pc=%s; choose method=cg", be->name,
             k->pc->type->name);
    HK_CALL(hk_ksp_vecs(k, 9, v));
    hk_vec *r = v[0], *u = v[1], *w = v[2], *m = v[3], *n = v[4], *z = v[5], *q = v[6], *s = v[7],
           *p = v[8];
    hk_vec *V[10] = {x, r, u, w, m, n, z, q, s, p};
    HK_TRY(be->scal_alloc(&S, HK_G_COUNT));
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) goto out;
    HK_TRY(hk_ksp_drift_init(k, b, m, n, &drift));
    hk_ksp_drift_reset(&drift, 0, rnorm);
    drift.count = 0;
    memset(h, 0, sizeof h);
    h[HK_G_ESTIMATE] = k->replace_every == 0;
    h[HK_G_NORMA] = drift.normA;
    h[HK_G_FIRST] = 1;
    HK_TRY(hk_ksp_pc(k, r, u)); /* also makes any buffer the apply needs, before a recording */
    HK_TRY(hk_mat_spmv(k->A, u, w));
    for (int i = 5; i < 9; i++)
        HK_TRY(be->vec_set(v[i], 0.0)); /* z q s p: beta_0 = 0 */
    HK_TRY(pipecg_gv_load(k, r, w, u, 0, 0, &drift, h, S));
    const int use_graph = k->check_every > 1 && be->graph_begin && be->graph_launch && k->graphs &&
                          k->pc->type->apply_capturable;
    pipecg_gv_vecs sv = {w, m, n, V, S};
    int it = 0, it0 = 0; /* it0: the iteration at which the host last wrote S */
    for (;;) {
        if (h[HK_G_HALT] == 0) {
            const int next = next_check(k, it);
            HK_TRY(pipecg_steps(k, it, next, use_graph, &graph, pipecg_gv_iter, &sv));
            HK_TRY(be->scal_get(S, 0, HK_G_COUNT, h));
            it = it0 + (int)h[HK_G_STEPS]; /* short of next when the steps halted */
            if (it > it0) fresh = 0;
            if (hk_ksp_check_now(k, it) && hk_ksp_converged(k, it, sqrt(fabs(h[HK_G_RR])), bnorm)) {
                if (!hk_reason_converged(k->res.reason) || restarts >= HK_PIPECG_RETRIES ||
                    it >= k->maxit)
                    break;
                /* confirm on the true residual; if it is not there yet, restart from it */
                double tn;
                HK_TRY(hk_ksp_true_residual_norm(k, b, x, r, &tn));
                if (tn <= k->rtol * bnorm || tn <= k->atol) break;
                k->res.reason = HK_REASON_NONE;
                restarts++;
                fresh = 1;
                HK_TRY(pipecg_gv_restart(k, r, w, u, it, &drift, h, S));
                it0 = it;
                continue;
            }
        }
        {
            const double rn = sqrt(fabs(h[HK_G_RR]));
            if (!hk_ksp_bad(h[HK_G_RR]) && !hk_ksp_bad(h[HK_G_XX]) &&
                hk_ksp_floor_due(
                    &floor, it, rn,
                    hk_ksp_residual_floor(drift.normA, sqrt(fabs(h[HK_G_XX])), bnorm))) {
                double tn;
                int stop;
                HK_TRY(hk_ksp_floor_test(k, it, b, x, r, bnorm, &floor, &tn, &stop));
                if (stop) break;
                /* from the true residual now in r, beta = 0 */
                fresh = 1;
                HK_TRY(pipecg_gv_restart(k, r, w, u, it, &drift, h, S));
                it0 = it;
                continue;
            }
        }
        if (h[HK_G_HALT] != 0) {
            /* the step after iteration it has gamma = r.u or p.Ap not positive (or NaN) */
            const double gamma = h[HK_G_GAMMA], denom = h[HK_G_DENOM];
            if (!hk_ksp_bad(gamma) && !hk_ksp_bad(denom)) {
                /* Between two checks the iteration may run past convergence, where rounding
                 * alone can flip these signs: look at the residual first. */
                const double rn = sqrt(fabs(h[HK_G_RR]));
                if (rn <= k->rtol * bnorm || rn <= k->atol) {
                    hk_ksp_converged(k, it, rn, bnorm);
                    break;
                }
                if (!fresh && restarts < HK_PIPECG_RETRIES) {
                    /* drift, not yet evidence: restart from r = b - A x, u = M r, w = A u,
                     * beta = 0; the sign test is then repeated on values without recurrences */
                    restarts++;
                    fresh = 1;
                    HK_TRY(hk_ksp_true_residual(k, b, x, r));
                    HK_TRY(pipecg_gv_restart(k, r, w, u, it, &drift, h, S));
                    it0 = it;
                    continue;
                }
                if (!fresh) {
                    /* the recurrences broke down again and again, each time some steps
                     * after a restart: drift, with no evidence against the matrix */
                    hk_ksp_stop(k, it, HK_DIVERGED_STAGNATION);
                    break;
                }
            }
            if (!hk_ksp_rz_check(k, it, gamma) && !hk_ksp_spd_check(k, it, denom))
                hk_ksp_stop(k, it, HK_DIVERGED_BREAKDOWN); /* not reached: HALT means one */
            break;
        }
        int replace = 0;
        if (k->replace_every > 0)
            replace = it - drift.last >= k->replace_every;
        else if (k->replace_every == 0)
            replace = h[HK_G_WANT] != 0 &&
                      hk_ksp_replace_clear(
                          hk_ksp_residual_floor(drift.normA, sqrt(fabs(h[HK_G_XX])), bnorm),
                          sqrt(fabs(h[HK_G_RR])));
        if (replace) {
            /* residual replacement: every recurred vector from x and p, beta and alpha kept */
            HK_TRY(hk_ksp_true_residual(k, b, x, r));
            HK_TRY(hk_ksp_pc(k, r, u));
            HK_TRY(hk_mat_spmv(k->A, u, w));
            HK_TRY(hk_mat_spmv(k->A, p, s));
            HK_TRY(hk_ksp_pc(k, s, q));
            HK_TRY(hk_mat_spmv(k->A, q, z));
            HK_TRY(pipecg_gv_load(k, r, w, u, 1, it, &drift, h, S));
            it0 = it;
        }
    }
out:
    ierr = 0;
fail:
    if (graph) be->graph_free(graph);
    if (S) be->scal_free(S);
    hk_ksp_floor_free(k, &floor);
    hk_ksp_vecs_free(k, 9, v);
    return ierr;
}

/* The fused variants with pc=none or Jacobi (dinv NULL or the preconditioner's): an fp32
 * Jacobi diagonal (precision=mixed) is promoted once to fp64 and fused. M stays exactly the
 * fp32 operator but is applied without rounding, so it is a fixed SPD matrix and the
 * pipelined recurrences do not drift. */
static int pipecg_fused_dinv(hk_ksp *k, const hk_vec *b, hk_vec *x, const hk_vec *dinv, int paper)
{
    const hk_backend_ops *be = k->be;
    if (!dinv || dinv->prec == HK_FP64) return pipecg_fused(k, b, x, dinv, paper);
    hk_vec *d64;
    HK_CALL(hk_vec_create(be, dinv->n, HK_FP64, &d64));
    int ierr = be->vec_convert(d64, dinv);
    if (!ierr) ierr = pipecg_fused(k, b, x, d64, paper);
    hk_vec_destroy(d64);
    return ierr;
}

static int pipecg_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    const int variant = k->pipecg_variant;
    const int none = hk_ksp_pc_is_none(k);
    /* the fused variants take no preconditioner or Jacobi's diagonal, fp64 vectors */
    const int diagonal = none || k->pc->dinv;
    const hk_vec *dinv = none ? NULL : k->pc->dinv;
    const int fused_ok = be->pipecg_update && be->spmv_dot2 && x->prec == HK_FP64;
    if (variant == HK_PIPECG_GV) return pipecg_gv(k, b, x);
    if (variant == HK_PIPECG_AUTO) {
        if (be->pipecg_paper_step && x->prec == HK_FP64 && diagonal)
            return pipecg_fused_dinv(k, b, x, dinv, 1);
        if (fused_ok && diagonal) return pipecg_fused_dinv(k, b, x, dinv, 0);
        return pipecg_gv(k, b, x);
    }
    const int paper = variant == HK_PIPECG_PAPER;
    const char *name = paper ? "paper" : "fused";
    HK_CHECK(diagonal, HK_ERR_UNSUPPORTED,
             "method=pipecg: pipecg.variant=%s fuses pc=none or pc=jacobi only (pc=%s given); "
             "use pipecg.variant=gv or auto with it",
             name, k->pc->type->name);
    HK_CHECK(paper ? be->pipecg_paper_step && be->spmv_dot2 : fused_ok, HK_ERR_UNSUPPORTED,
             "method=pipecg: backend %s lacks the fused ops of pipecg.variant=%s; use "
             "pipecg.variant=gv",
             be->name, name);
    return pipecg_fused_dinv(k, b, x, dinv, paper);
}

const hk_ksp_type hk_ksp_pipecg = {.name = "pipecg",
                                   .summary = "pipelined CG, fused kernels (ViennaCL Alg. 2; "
                                              "Ghysels-Vanroose with other pcs; "
                                              "pipecg.variant) (SPD)",
                                   .needs_symmetric = 1,
                                   .flexible = 0,
                                   .pipelined = 1,
                                   .solve = pipecg_solve};
