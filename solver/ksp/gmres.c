/* GMRES(m) family, right-preconditioned so the residual estimate is ||b - A x||:
 *   gmres      Arnoldi with ILUPACK's MGSO (modified Gram-Schmidt, selective
 *              re-orthogonalisation when a coefficient's cosine exceeds tau = 0.99; ILUPACK-
 *              GMRES paper Fig. 2), Givens rotations for the least-squares problem
 *   fgmres     flexible GMRES (Saad 1993): same, keeping z_j = M^-1 v_j, x += Z y
 *   pipegmres  pipelined "simpler GMRES" (pipelined-solver paper Algorithm 6, Walker-Zhou):
 *              classical Gram-Schmidt on backend-resident scalars, residual update moved out
 *              of the loop; xi_i = <r0, v_i> read back every check_every iterations.
 * m is the option restart (default 30). */
#include <stdlib.h>
#include <string.h>

#include "ksp_impl.h"

#define MGSO_TAU 0.99

/* Orthogonalise w against V[0..j] by MGSO; h[0..j] receive the coefficients and h[j+1] the
 * norm of what remains. */
static int mgso(const hk_backend_ops *be, int j, hk_vec **V, hk_vec *w, double *h)
{
    double omega;
    HK_CALL(be->vec_dot(w, w, &omega));
    for (int i = 0; i <= j; i++) {
        HK_CALL(be->vec_dot(V[i], w, &h[i]));
        HK_CALL(be->vec_axpby(w, -h[i], V[i], 1.0));
        if (h[i] * h[i] > omega * MGSO_TAU) {
            /* w was nearly parallel to V[i]: cancellation, orthogonalise once more */
            double beta;
            HK_CALL(be->vec_dot(V[i], w, &beta));
            h[i] += beta;
            HK_CALL(be->vec_axpby(w, -beta, V[i], 1.0));
        }
        omega -= h[i] * h[i];
        if (omega < 0) omega = 0;
    }
    double ww;
    HK_CALL(be->vec_dot(w, w, &ww));
    h[j + 1] = sqrt(ww);
    return 0;
}

/* Solve the j x j upper-triangular system R y = g (R column-major with leading dim ld). */
static void triu_solve(int j, const double *R, int ld, const double *g, double *y)
{
    for (int i = j - 1; i >= 0; i--) {
        double s = g[i];
        for (int c = i + 1; c < j; c++)
            s -= R[c * ld + i] * y[c];
        y[i] = s / R[i * ld + i];
    }
}

static int gmres_common(hk_ksp *k, const hk_vec *b, hk_vec *x, int flexible)
{
    const hk_backend_ops *be = k->be;
    const int m = k->restart;
    const int nz = flexible ? m : 1;
    hk_vec **V = NULL, **Z = NULL, *r = NULL, *u = NULL;
    double *H = NULL, *cs = NULL, *sn = NULL, *g = NULL, *y = NULL;
    int ierr, done, it = 0;
    double bnorm, rnorm;
    const int ld = m + 1;
    HK_CALL(hk_calloc((size_t)(m + 1), sizeof *V, &V));
    HK_TRY(hk_calloc((size_t)nz, sizeof *Z, &Z));
    HK_TRY(hk_ksp_vecs(k, m + 1, V));
    HK_TRY(hk_ksp_vecs(k, nz, Z));
    HK_TRY(hk_ksp_vecs(k, 1, &r));
    HK_TRY(hk_ksp_vecs(k, 1, &u));
    HK_TRY(hk_calloc((size_t)ld * (size_t)m, sizeof *H, &H));
    HK_TRY(hk_calloc((size_t)m, sizeof *cs, &cs));
    HK_TRY(hk_calloc((size_t)m, sizeof *sn, &sn));
    HK_TRY(hk_calloc((size_t)ld, sizeof *g, &g));
    HK_TRY(hk_calloc((size_t)m, sizeof *y, &y));
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    while (!done) {
        /* one cycle: V0 = r / ||r|| */
        HK_TRY(be->vec_axpby(V[0], 1.0 / rnorm, r, 0.0));
        memset(g, 0, (size_t)ld * sizeof *g);
        g[0] = rnorm;
        int j = 0, stop = 0;
        while (j < m && !stop) {
            double *h = H + (size_t)j * ld;
            hk_vec *zj = Z[flexible ? j : 0];
            HK_TRY(hk_ksp_pc(k, V[j], zj));
            HK_TRY(hk_mat_spmv(k->A, zj, V[j + 1]));
            HK_TRY(mgso(be, j, V, V[j + 1], h));
            const double hnext = h[j + 1];
            if (hk_ksp_bad(hnext)) {
                stop = hk_ksp_stop(k, it, HK_DIVERGED_NAN);
                break;
            }
            if (hnext > 0) HK_TRY(be->vec_scale(V[j + 1], 1.0 / hnext));
            /* apply the previous rotations, then a new one to zero h[j+1] */
            for (int i = 0; i < j; i++) {
                double t = cs[i] * h[i] + sn[i] * h[i + 1];
                h[i + 1] = -sn[i] * h[i] + cs[i] * h[i + 1];
                h[i] = t;
            }
            double den = hypot(h[j], h[j + 1]);
            if (den == 0) {
                stop = hk_ksp_stop(k, it, HK_DIVERGED_BREAKDOWN);
                break;
            }
            cs[j] = h[j] / den;
            sn[j] = h[j + 1] / den;
            h[j] = den;
            h[j + 1] = 0;
            g[j + 1] = -sn[j] * g[j];
            g[j] = cs[j] * g[j];
            j++;
            it++;
            rnorm = fabs(g[j]);
            stop = hk_ksp_converged(k, it, rnorm, bnorm);
            if (hnext == 0 && !stop) break; /* lucky breakdown: exact in this space */
        }
        if (j > 0) {
            /* x += M^-1 V y (gmres) or Z y (fgmres) */
            triu_solve(j, H, ld, g, y);
            if (flexible) {
                HK_TRY(be->vec_maxpy(x, j, y, Z));
            } else {
                HK_TRY(be->vec_set(u, 0.0));
                HK_TRY(be->vec_maxpy(u, j, y, V));
                HK_TRY(hk_ksp_pc(k, u, Z[0]));
                HK_TRY(be->vec_axpby(x, 1.0, Z[0], 1.0));
            }
        }
        if (stop && !hk_reason_converged(k->res.reason)) break;
        /* restart from the true residual; a converged estimate must be confirmed by it (an
         * fp32 preconditioner or rounding can leave the true residual above the estimate) */
        HK_TRY(hk_mat_spmv(k->A, x, r));
        HK_TRY(be->vec_axpby(r, 1.0, b, -1.0));
        double rr;
        HK_TRY(be->vec_dot(r, r, &rr));
        rnorm = sqrt(rr);
        if (hk_ksp_bad(rnorm)) {
            hk_ksp_stop(k, it, HK_DIVERGED_NAN);
            break;
        }
        if (stop || rnorm <= k->rtol * bnorm || rnorm <= k->atol || rnorm == 0) {
            k->res.reason = HK_REASON_NONE;
            done = hk_ksp_converged(k, it, rnorm, bnorm);
            if (done) break;
        }
    }
    ierr = 0;
fail:
    if (V) hk_ksp_vecs_free(k, m + 1, V);
    if (Z) hk_ksp_vecs_free(k, nz, Z);
    hk_ksp_vecs_free(k, 1, &r);
    hk_ksp_vecs_free(k, 1, &u);
    free(V);
    free(Z);
    free(H);
    free(cs);
    free(sn);
    free(g);
    free(y);
    return ierr;
}

static int gmres_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    return gmres_common(k, b, x, 0);
}

static int fgmres_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    return gmres_common(k, b, x, 1);
}

const hk_ksp_type hk_ksp_gmres = {.name = "gmres",
                                  .summary = "GMRES(m), right-preconditioned, MGS with selective "
                                             "re-orthogonalisation (ILUPACK MGSO)",
                                  .needs_symmetric = 0,
                                  .flexible = 0,
                                  .residual_monotone = 1,
                                  .solve = gmres_solve};

const hk_ksp_type hk_ksp_fgmres = {.name = "fgmres",
                                   .summary = "flexible GMRES(m), for variable preconditioners",
                                   .needs_symmetric = 0,
                                   .flexible = 1,
                                   .residual_monotone = 1,
                                   .solve = fgmres_solve};

/* ---- pipegmres ------------------------------------------------------------------------- */

/* Backend scalars: column i (1..m) of R at S + i*ld (R[j][i] for j = 1..i-1 at offset j-1),
 * ||v_i||^2 before normalisation (R[i][i]^2) at S + off_nrm + i, xi_i = <r0/rho0, v_i> at
 * S + off_xi + i. Nothing is read back during Gram-Schmidt. */
static int pipegmres_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    HK_CHECK(be->vec_mdot_s && be->vec_maxpy_s_nrm && be->vec_scale_s_dot, HK_ERR_UNSUPPORTED,
             "method=pipegmres needs the fused ops vec_mdot_s, vec_maxpy_s_nrm and "
             "vec_scale_s_dot, which backend %s lacks; use method=gmres",
             be->name);
    HK_CHECK(x->prec == HK_FP64, HK_ERR_UNSUPPORTED,
             "method=pipegmres runs in fp64 only; as inner.method of defect use gmres");
    const int m = k->restart;
    const int ld = m + 1;
    /* S: R columns (ld*ld), then NRM (ld), then XI (ld) */
    const int off_nrm = ld * ld, off_xi = ld * ld + ld, nS = ld * ld + 2 * ld;
    hk_vec **V = NULL, *r = NULL, *t = NULL, *u = NULL;
    double *S = NULL, *h = NULL, *R = NULL, *eta = NULL, *rhs = NULL;
    int ierr, done, it = 0;
    double bnorm, rnorm;
    HK_CALL(hk_calloc((size_t)(m + 1), sizeof *V, &V));
    HK_TRY(hk_ksp_vecs(k, m + 1, V)); /* V[0] = r0/rho0, V[1..m] the orthonormal basis */
    HK_TRY(hk_ksp_vecs(k, 1, &r));
    HK_TRY(hk_ksp_vecs(k, 1, &t));
    HK_TRY(hk_ksp_vecs(k, 1, &u));
    HK_TRY(be->scal_alloc(&S, nS));
    HK_TRY(hk_calloc((size_t)nS, sizeof *h, &h));
    HK_TRY(hk_calloc((size_t)ld * ld, sizeof *R, &R));
    HK_TRY(hk_calloc((size_t)ld, sizeof *eta, &eta));
    HK_TRY(hk_calloc((size_t)ld, sizeof *rhs, &rhs));
    const int none = hk_ksp_pc_is_none(k);
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    while (!done) {
        const double rho0 = rnorm;
        HK_TRY(be->vec_axpby(V[0], 1.0 / rho0, r, 0.0));
        int i = 0, stop = 0, cut = 0;
        while (i < m && !cut) {
            i++;
            it++;
            /* v_i = A M^-1 z_{i-1}, z_0 = r0/rho0, z_j = v_j */
            hk_vec *zprev = V[i - 1];
            if (none) {
                HK_TRY(hk_mat_spmv(k->A, zprev, V[i]));
            } else {
                HK_TRY(hk_ksp_pc(k, zprev, t));
                HK_TRY(hk_mat_spmv(k->A, t, V[i]));
            }
            double *col = S + (size_t)i * ld;
            if (i > 1) HK_TRY(be->vec_mdot_s(i - 1, V + 1, V[i], col));
            HK_TRY(be->vec_maxpy_s_nrm(V[i], i - 1, col, V + 1, S + off_nrm + i));
            HK_TRY(be->vec_scale_s_dot(V[i], S + off_nrm + i, V[0], S + off_xi + i));
            if (!(hk_ksp_check_now(k, it) || i == m)) continue;
            /* read back xi and the norms: ||r_i||^2 = rho0^2 (1 - sum xi^2) */
            HK_TRY(be->scal_get(S, off_nrm, 2 * ld, h + off_nrm));
            double sum = 0;
            int bad = 0;
            for (int j = 1; j <= i; j++) {
                bad |= hk_ksp_bad(h[off_xi + j]) | hk_ksp_bad(h[off_nrm + j]);
                sum += h[off_xi + j] * h[off_xi + j];
            }
            if (bad) {
                /* Between two checks the cycle can run past convergence into an exhausted
                 * space, where normalising a vector of rounding noise overflows (a strong
                 * preconditioner such as amg converges within check_every iterations). The
                 * columns before the first bad one are sound: keep them, update x from them
                 * and let the true residual decide; only a bad first column is a real NaN. */
                int good = 0;
                while (good < i && !hk_ksp_bad(h[off_xi + good + 1]) &&
                       !hk_ksp_bad(h[off_nrm + good + 1]))
                    good++;
                if (good == 0) stop = hk_ksp_stop(k, it, HK_DIVERGED_NAN);
                i = good;
                cut = 1;
                break;
            }
            double e2 = 1.0 - sum;
            double est = rho0 * sqrt(e2 > 0 ? e2 : 0);
            hk_ksp_record(k, it, est);
            k->res.iterations = it;
            /* end the cycle when the estimate says converged, when it reaches its
             * cancellation floor (then restart from the true residual), at maxit, or on a
             * (lucky) breakdown */
            int lucky = 0;
            for (int j = 1; j <= i; j++)
                lucky |= h[off_nrm + j] == 0;
            if (est <= k->rtol * bnorm || est <= k->atol || e2 < 1e-10 || it >= k->maxit || lucky)
                cut = 1;
        }
        /* solve R eta = rho0 xi with R from the backend scalars, x += M^-1 Z eta */
        const int kdim = i;
        HK_TRY(be->scal_get(S, 0, nS, h));
        for (int c = 1; c <= kdim; c++) {
            for (int j = 1; j < c; j++)
                R[(c - 1) * ld + (j - 1)] = h[c * ld + (j - 1)];
            R[(c - 1) * ld + (c - 1)] = sqrt(fabs(h[off_nrm + c]));
            rhs[c - 1] = rho0 * h[off_xi + c];
        }
        int used = kdim;
        double rmax = 0;
        for (int c = 0; c < kdim; c++) {
            /* breakdown column: the space is exhausted before it (a zero, or a direction of
             * rounding noise only, relative to the columns before it) */
            if (!(R[c * ld + c] > 1e-14 * rmax)) {
                used = c;
                break;
            }
            if (R[c * ld + c] > rmax) rmax = R[c * ld + c];
        }
        /* Columns past the one where the estimate ||r_c|| = rho0 sqrt(1 - sum_{j<=c} xi_j^2)
         * met the tolerance (or its cancellation floor) add nothing but rounding noise: an
         * exhausted space (a preconditioner close to A^-1 exhausts it in a step or two) gives
         * directions of noise whose R entries amplify it. Stop the update there. */
        {
            double sum = 0;
            for (int c = 1; c <= used; c++) {
                sum += h[off_xi + c] * h[off_xi + c];
                const double e2 = 1.0 - sum;
                const double est = rho0 * sqrt(e2 > 0 ? e2 : 0);
                if (est <= k->rtol * bnorm || est <= k->atol || e2 < 1e-10) {
                    used = c;
                    break;
                }
            }
        }
        if (used > 0 && !stop) {
            triu_solve(used, R, ld, rhs, eta);
            HK_TRY(be->vec_set(u, 0.0));
            HK_TRY(be->vec_maxpy(u, used, eta, V)); /* Z = [V0, V1, ..., V_{used-1}] */
            if (none) {
                HK_TRY(be->vec_axpby(x, 1.0, u, 1.0));
            } else {
                HK_TRY(hk_ksp_pc(k, u, t));
                HK_TRY(be->vec_axpby(x, 1.0, t, 1.0));
            }
        }
        if (stop) break;
        /* the true residual: convergence test and the next cycle's start */
        HK_TRY(hk_mat_spmv(k->A, x, r));
        HK_TRY(be->vec_axpby(r, 1.0, b, -1.0));
        double rr;
        HK_TRY(be->vec_dot(r, r, &rr));
        rnorm = sqrt(rr);
        if (hk_ksp_converged(k, it, rnorm, bnorm)) break;
        if (used == 0) {
            hk_ksp_stop(k, it, HK_DIVERGED_BREAKDOWN);
            break;
        }
    }
    ierr = 0;
fail:
    if (V) hk_ksp_vecs_free(k, m + 1, V);
    hk_ksp_vecs_free(k, 1, &r);
    hk_ksp_vecs_free(k, 1, &t);
    hk_ksp_vecs_free(k, 1, &u);
    if (S) be->scal_free(S);
    free(V);
    free(h);
    free(R);
    free(eta);
    free(rhs);
    return ierr;
}

const hk_ksp_type hk_ksp_pipegmres = {.name = "pipegmres",
                                      .summary = "pipelined simpler GMRES(m), classical "
                                                 "Gram-Schmidt (ViennaCL Alg. 6)",
                                      .needs_symmetric = 0,
                                      .flexible = 0,
                                      .pipelined = 1,
                                      .residual_monotone = 1,
                                      .solve = pipegmres_solve};
