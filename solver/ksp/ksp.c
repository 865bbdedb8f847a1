/* Krylov methods: the registry (found by name, PETSc KSPRegister style), reasons, and the
 * bookkeeping every method shares: start, convergence/stagnation test, history, monitor. */
#include <stdlib.h>
#include <string.h>

#include "ksp_impl.h"

const hk_ksp_type *const hk_ksp_types[] = {&hk_ksp_cg,
                                           &hk_ksp_cgcg,
                                           &hk_ksp_scg,
                                           &hk_ksp_pipecg,
                                           &hk_ksp_fcg,
                                           &hk_ksp_bicgstab,
                                           &hk_ksp_pipebicgstab,
                                           &hk_ksp_gmres,
                                           &hk_ksp_pipegmres,
                                           &hk_ksp_fgmres,
                                           &hk_ksp_defect,
                                           &hk_ksp_cholesky,
                                           NULL};

const hk_ksp_type *hk_ksp_type_find(const char *name)
{
    for (int i = 0; name && hk_ksp_types[i]; i++)
        if (!strcmp(hk_ksp_types[i]->name, name)) return hk_ksp_types[i];
    return NULL;
}

const char *hk_reason_name(hk_reason r)
{
    switch (r) {
    case HK_REASON_NONE:
        return "not run";
    case HK_CONVERGED_RTOL:
        return "converged (relative tolerance)";
    case HK_CONVERGED_ATOL:
        return "converged (absolute tolerance)";
    case HK_DIVERGED_MAXIT:
        return "iteration limit reached";
    case HK_DIVERGED_BREAKDOWN:
        return "breakdown";
    case HK_DIVERGED_NOT_SPD:
        return "not SPD";
    case HK_DIVERGED_NAN:
        return "NaN or Inf";
    case HK_DIVERGED_STAGNATION:
        return "stagnation";
    case HK_DIVERGED_TRUE_RESIDUAL:
        return "converged on the recursive residual only, the true residual is above the "
               "tolerance";
    }
    return "?";
}

int hk_reason_converged(hk_reason r)
{
    return r == HK_CONVERGED_RTOL || r == HK_CONVERGED_ATOL;
}

int hk_ksp_vecs(hk_ksp *k, int n, hk_vec **v)
{
    for (int i = 0; i < n; i++)
        v[i] = NULL;
    for (int i = 0; i < n; i++) {
        if (k->npool > 0) {
            v[i] = k->pool[--k->npool]; /* same size and precision: one operator per ksp */
            continue;
        }
        int ierr = hk_vec_create(k->be, k->A->nrows, k->A->prec, &v[i]);
        if (ierr) {
            hk_ksp_vecs_free(k, n, v);
            return ierr;
        }
    }
    return 0;
}

void hk_ksp_vecs_free(hk_ksp *k, int n, hk_vec **v)
{
    for (int i = 0; i < n; i++) {
        if (!v[i]) continue;
        if (k->npool == k->pool_cap) {
            int cap = k->pool_cap ? 2 * k->pool_cap : 16;
            hk_vec **p = realloc(k->pool, (size_t)cap * sizeof *p);
            if (p) {
                k->pool = p;
                k->pool_cap = cap;
            }
        }
        if (k->npool < k->pool_cap)
            k->pool[k->npool++] = v[i];
        else
            hk_vec_destroy(v[i]);
        v[i] = NULL;
    }
}

void hk_ksp_pool_free(hk_ksp *k)
{
    for (int i = 0; i < k->npool; i++)
        hk_vec_destroy(k->pool[i]);
    free(k->pool);
    k->pool = NULL;
    k->npool = k->pool_cap = 0;
}

int hk_ksp_pc_is_none(const hk_ksp *k)
{
    return !strcmp(k->pc->type->name, "none");
}

int hk_ksp_pc(hk_ksp *k, const hk_vec *r, hk_vec *z)
{
    return hk_pc_apply(k->pc, r, z);
}

void hk_ksp_record(hk_ksp *k, int it, double rnorm)
{
    k->res.rnorm = rnorm;
    if (k->keep_history) {
        if (k->res.history_len >= k->history_cap) {
            int cap = k->history_cap ? 2 * k->history_cap : 256;
            double *h = realloc(k->history, (size_t)cap * sizeof *h);
            if (h) {
                k->history = h;
                k->history_cap = cap;
            }
        }
        if (k->res.history_len < k->history_cap) k->history[k->res.history_len++] = rnorm;
        k->res.history = k->history;
    }
    if (k->monitor) k->monitor(it, rnorm, k->monitor_ctx);
}

int hk_ksp_stop(hk_ksp *k, int it, hk_reason why)
{
    k->res.iterations = it;
    k->res.reason = why;
    return 1;
}

int hk_ksp_converged(hk_ksp *k, int it, double rnorm, double bnorm)
{
    hk_ksp_record(k, it, rnorm);
    k->res.iterations = it;
    if (hk_ksp_bad(rnorm)) return hk_ksp_stop(k, it, HK_DIVERGED_NAN);
    if (rnorm <= k->rtol * bnorm) return hk_ksp_stop(k, it, HK_CONVERGED_RTOL);
    if (rnorm <= k->atol) return hk_ksp_stop(k, it, HK_CONVERGED_ATOL);
    if (it >= k->maxit) return hk_ksp_stop(k, it, HK_DIVERGED_MAXIT);
    /* stagnation: no 0.1 % improvement of the best residual over a long window (option
     * stagnation). The residual norm of CG and BiCGStab is not monotone: on stiff elasticity
     * with Jacobi it first rises tenfold and falls below its initial value only after
     * thousands of iterations (the 2M-DOF bracket), so for them the window opens at the first
     * improvement; GMRES's residual never rises, so its window opens at once. */
    if (it == 0 || rnorm < 0.999 * k->stag_best) {
        if (it > 0) k->stag_armed = 1;
        k->stag_best = rnorm;
        k->stag_it = it;
    } else if (k->stag_window > 0 && (k->stag_armed || k->type->residual_monotone) &&
               it - k->stag_it >= k->stag_window) {
        return hk_ksp_stop(k, it, HK_DIVERGED_STAGNATION);
    }
    /* an fp32 preconditioner that the solver can rebuild in fp64: a window of stall_window
     * iterations in which the best residual did not drop below stall_factor times its value
     * at the window's start is a stall, so the solve stops early and falls back */
    if (k->stall_window > 0) {
        if (it == 0) {
            k->stall_ref = k->stall_best = rnorm;
            k->stall_it = 0;
        } else {
            if (rnorm < k->stall_best) k->stall_best = rnorm;
            if (it - k->stall_it >= k->stall_window) {
                if (!(k->stall_best < k->stall_factor * k->stall_ref))
                    return hk_ksp_stop(k, it, HK_DIVERGED_STAGNATION);
                k->stall_ref = k->stall_best;
                k->stall_it = it;
            }
        }
    }
    return 0;
}

int hk_ksp_start(hk_ksp *k, const hk_vec *b, hk_vec *x, hk_vec *r, double *bnorm, double *rnorm,
                 int *done)
{
    const hk_backend_ops *be = k->be;
    double bb, rr;
    k->res.iterations = 0;
    k->res.reason = HK_REASON_NONE;
    k->res.history_len = 0;
    k->stag_best = INFINITY;
    k->stag_it = 0;
    k->stag_armed = 0;
    *done = 0;
    HK_CALL(be->vec_dot(b, b, &bb));
    *bnorm = sqrt(bb);
    if (bb == 0.0) {
        /* b = 0: the solution is x = 0 */
        HK_CALL(be->vec_set(x, 0.0));
        HK_CALL(be->vec_set(r, 0.0));
        *rnorm = 0;
        k->res.rnorm0 = 0;
        hk_ksp_record(k, 0, 0.0);
        hk_ksp_stop(k, 0, HK_CONVERGED_ATOL);
        *done = 1;
        return 0;
    }
    HK_CALL(hk_mat_spmv(k->A, x, r));
    HK_CALL(be->vec_axpby(r, 1.0, b, -1.0));
    HK_CALL(be->vec_dot(r, r, &rr));
    *rnorm = sqrt(rr);
    k->res.rnorm0 = *rnorm;
    *done = hk_ksp_converged(k, 0, *rnorm, *bnorm);
    return 0;
}

/* ---- residual replacement of the pipelined methods -------------------------------------- */

double hk_ksp_residual_floor(double normA, double xnorm, double bnorm)
{
    return HK_EPS * (normA * xnorm + bnorm);
}

int hk_ksp_true_residual(hk_ksp *k, const hk_vec *b, const hk_vec *x, hk_vec *r)
{
    HK_CALL(hk_mat_spmv(k->A, x, r));
    return k->be->vec_axpby(r, 1.0, b, -1.0);
}

int hk_ksp_true_residual_norm(hk_ksp *k, const hk_vec *b, const hk_vec *x, hk_vec *r, double *tn)
{
    double tr;
    HK_CALL(hk_ksp_true_residual(k, b, x, r));
    HK_CALL(k->be->vec_dot(r, r, &tr));
    *tn = sqrt(tr);
    return 0;
}

int hk_ksp_floor_due(const hk_ksp_floor *f, int it, double rn, double floor)
{
    if (!(rn < floor)) return 0;
    if (f->last == 0) return 1;
    return rn < 0.5 * f->last || it - f->it >= HK_KSP_FLOOR_WAIT;
}

int hk_ksp_floor_test(hk_ksp *k, int it, const hk_vec *b, hk_vec *x, hk_vec *r, double bnorm,
                      hk_ksp_floor *f, double *tn, int *stop)
{
    HK_CALL(hk_ksp_true_residual_norm(k, b, x, r, tn));
    *stop = 1;
    if (hk_ksp_converged(k, it, *tn, bnorm)) return 0; /* converged, or maxit, NaN */
    if (f->last > 0 && !(*tn < 0.5 * f->last)) {
        hk_ksp_stop(k, it, HK_DIVERGED_STAGNATION);
        if (f->xbest && !(*tn <= f->last)) {
            HK_CALL(k->be->vec_copy(x, f->xbest));
            HK_CALL(hk_ksp_true_residual_norm(k, b, x, r, tn));
            k->res.rnorm = *tn;
        }
        return 0;
    }
    f->last = *tn;
    f->it = it;
    if (!f->xbest) HK_CALL(hk_ksp_vecs(k, 1, &f->xbest));
    HK_CALL(k->be->vec_copy(f->xbest, x));
    *stop = 0;
    return 0;
}

void hk_ksp_floor_free(hk_ksp *k, hk_ksp_floor *f)
{
    hk_ksp_vecs_free(k, 1, &f->xbest);
}

int hk_ksp_floor_xnorm(hk_ksp *k, const hk_vec *x, double rn, double bnorm, double *xn)
{
    if (*xn != 0 || !(rn < sqrt(HK_EPS) * bnorm)) return 0;
    double xx;
    HK_CALL(k->be->vec_dot(x, x, &xx));
    if (!hk_ksp_bad(xx)) *xn = sqrt(xx);
    return 0;
}

int hk_ksp_norm_estimate(hk_ksp *k, const hk_vec *b, hk_vec *t1, hk_vec *t2, double *normA)
{
    const hk_backend_ops *be = k->be;
    /* three power steps from b: a lower bound of ||A||_2, usually within a small factor, which
     * is all a rounding estimate needs */
    double nn;
    *normA = 0;
    HK_CALL(be->vec_dot(b, b, &nn));
    if (!(nn > 0) || hk_ksp_bad(nn)) return 0;
    HK_CALL(be->vec_copy(t1, b));
    HK_CALL(be->vec_scale(t1, 1.0 / sqrt(nn)));
    for (int i = 0; i < 3; i++) {
        HK_CALL(hk_mat_spmv(k->A, t1, t2));
        HK_CALL(be->vec_dot(t2, t2, &nn));
        if (!(nn > 0) || hk_ksp_bad(nn)) break;
        *normA = sqrt(nn);
        HK_CALL(be->vec_axpby(t1, 1.0 / *normA, t2, 0.0));
    }
    return 0;
}

int hk_ksp_drift_init(hk_ksp *k, const hk_vec *b, hk_vec *t1, hk_vec *t2, hk_ksp_drift *d)
{
    memset(d, 0, sizeof *d);
    d->below = 1;
    if (k->replace_every != 0) return 0;
    return hk_ksp_norm_estimate(k, b, t1, t2, &d->normA);
}

void hk_ksp_drift_add(hk_ksp_drift *d, int steps, double xnorm, double rnorm)
{
    d->gap += steps * HK_EPS * (d->normA * xnorm + 3.0 * rnorm);
}

int hk_ksp_drift_want(const hk_ksp *k, hk_ksp_drift *d, int it, double rnorm)
{
    if (k->replace_every < 0) return 0;
    if (k->replace_every > 0) return it - d->last >= k->replace_every;
    const int below = d->gap <= sqrt(HK_EPS) * rnorm;
    const int want = d->below && !below;
    d->below = below;
    return want;
}

void hk_ksp_drift_reset(hk_ksp_drift *d, int it, double rnorm)
{
    d->gap = HK_EPS * rnorm;
    d->below = d->gap <= sqrt(HK_EPS) * rnorm;
    d->last = it;
    d->count++;
}
