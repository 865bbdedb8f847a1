/* Polynomial preconditioners on the Jacobi-scaled matrix (the SBELL paper, section 2 and
 * Table 3): M^-1 = s(B) D^-1 with B = D^-1 A and s a polynomial of degree m, i.e.
 * M^-1 = D^-1/2 s(Â) D^-1/2 with Â = D^-1/2 A D^-1/2, symmetric whenever s > 0 on the
 * spectrum. Three choices of s (Saad, Iterative Methods for Sparse Linear Systems, ch. 12):
 *
 *   neumann    s(t) = w sum_{i<=m} (1 - w t)^i, w = 1/hi (eq. 8, rho(I - wB) < 1)
 *   ls         least-squares: s minimises the integral of (1 - t s(t))^2 w(t) over [0, hi]
 *              with the Chebyshev weight w(t) = 1/sqrt(t (hi - t)); unlike the Jacobi weight
 *              (1/2, -1/2), which vanishes at hi and lets s(hi) reach 0 for odd degrees, it
 *              keeps |1 - t s(t)| < 1 on all of (0, hi], so M stays SPD
 *   chebyshev  minimax: 1 - t s(t) = T_{m+1}(eta(t)) / T_{m+1}(eta(0)) on [lo, hi]
 *
 * The bounds of the spectrum of Â come from a few Lanczos steps run through backend ops (so
 * on the device too), with a safeguard on the upper bound: hi = max(theta_max + |beta_k
 * y_k|, safety * theta_max), the Ritz value plus its residual bound, or enlarged by the
 * safety factor (default 1.05) - the paper's "safeguard term", since hi < lambda_max makes
 * the preconditioner indefinite. lo is the smallest Ritz value (used by chebyshev only).
 *
 * s is stored by its coefficients in the Chebyshev basis T_k(xi), xi = 2t/hi - 1, and applied
 * by the three-term recurrence: m SpMVs and m + 1 fused steps (vec_poly_step: the pointwise
 * scaling and the vector updates of one degree in one pass; with spmv_poly_step each SpMV and
 * its step are one pass). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

#define POLY_MAX_DEGREE 40
#define POLY_MAX_LANCZOS 200

enum { KIND_NEUMANN = 0, KIND_LS, KIND_CHEBYSHEV };
static const char *const kind_names[] = {"neumann", "ls", "chebyshev", NULL};

typedef struct {
    int kind, degree;
    double lo, hi;
    double coef[POLY_MAX_DEGREE + 1];
    hk_mat *A; /* operator in the pc's precision */
    int A_owned;
    hk_vec *dinv; /* 1 / diag(A) */
    hk_vec *v0, *v1, *t;
} poly_data;

/* T_0..T_n at x by the recurrence (valid outside [-1, 1] too). */
static void cheb_values(int n, double x, double *T)
{
    T[0] = 1;
    if (n >= 1) T[1] = x;
    for (int k = 2; k <= n; k++)
        T[k] = 2 * x * T[k - 1] - T[k - 2];
}

/* s(t) for neumann and chebyshev, evaluated in closed form (t > 0). */
static double s_closed(const poly_data *d, double t)
{
    const int m = d->degree;
    if (d->kind == KIND_NEUMANN) {
        double w = 1 / d->hi, g = 1 - w * t, s = 0, p = 1;
        for (int i = 0; i <= m; i++, p *= g)
            s += p;
        return w * s;
    }
    double T[POLY_MAX_DEGREE + 2], T0[POLY_MAX_DEGREE + 2];
    double eta = (2 * t - d->lo - d->hi) / (d->hi - d->lo);
    double eta0 = -(d->lo + d->hi) / (d->hi - d->lo);
    cheb_values(m + 1, eta, T);
    cheb_values(m + 1, eta0, T0);
    return (1 - T[m + 1] / T0[m + 1]) / t;
}

static double s_eval(const poly_data *d, double t)
{
    double T[POLY_MAX_DEGREE + 1], s = 0;
    cheb_values(d->degree, 2 * t / d->hi - 1, T);
    for (int k = 0; k <= d->degree; k++)
        s += d->coef[k] * T[k];
    return s;
}

/* Coefficients of s in the basis T_k(2t/hi - 1). */
static int poly_coefficients(poly_data *d)
{
    const int m = d->degree, n = m + 1;
    if (d->kind != KIND_LS) {
        /* interpolation at the n Chebyshev nodes is exact for a polynomial of degree m */
        for (int k = 0; k <= m; k++)
            d->coef[k] = 0;
        for (int j = 0; j < n; j++) {
            double xi = cos(M_PI * (j + 0.5) / n), t = d->hi * (xi + 1) / 2;
            double T[POLY_MAX_DEGREE + 1], s = s_closed(d, t);
            cheb_values(m, xi, T);
            for (int k = 0; k <= m; k++)
                d->coef[k] += (k ? 2.0 : 1.0) / n * s * T[k];
        }
        return 0;
    }
    /* Least squares with the Chebyshev weight: Gauss-Chebyshev quadrature (equal weights) is
     * exact for the degree 2m+2 integrand when the node count N >= m + 2, so the discrete
     * problem over the nodes, rows [t_j T_k(xi_j)] c = 1, is the continuous one. */
    const int N = 2 * m + 8;
    double *M = NULL, *rhs = NULL;
    HK_CALL(hk_malloc((size_t)N * n * sizeof *M, &M));
    int ierr = hk_malloc((size_t)N * sizeof *rhs, &rhs);
    if (ierr) {
        free(M);
        return ierr;
    }
    for (int j = 0; j < N; j++) {
        double xi = cos(M_PI * (j + 0.5) / N), t = d->hi * (xi + 1) / 2;
        double sw = 1, T[POLY_MAX_DEGREE + 1];
        cheb_values(m, xi, T);
        for (int k = 0; k < n; k++)
            M[(size_t)k * N + j] = sw * t / d->hi * T[k];
        rhs[j] = sw;
    }
    int bad = hk_dense_qr_ls(N, n, M, rhs, d->coef);
    free(M);
    free(rhs);
    HK_CHECK(bad < 0, HK_ERR_NUMERIC,
             "preconditioner poly: the least-squares polynomial of degree %d is ill-conditioned; "
             "use a lower pc.poly.degree",
             m);
    for (int k = 0; k < n; k++)
        d->coef[k] /= d->hi; /* we solved for hi * s */
    return 0;
}

/* y = D^-1/2 A D^-1/2 x through backend ops (dsq = D^-1/2). */
static int scaled_spmv(poly_data *d, const hk_vec *dsq, const hk_vec *x, hk_vec *tmp, hk_vec *y)
{
    const hk_backend_ops *be = x->be;
    HK_CALL(be->vec_pointwise_mult(tmp, dsq, x));
    HK_CALL(hk_mat_spmv(d->A, tmp, y));
    return be->vec_pointwise_mult(y, dsq, y);
}

/* A few Lanczos steps on D^-1/2 A D^-1/2 (no reorthogonalisation: only the extreme Ritz
 * values are wanted), then the safeguarded bounds. */
static int lanczos_bounds(hk_pc *pc, poly_data *d, int steps, double safety)
{
    const hk_backend_ops *be = pc->be;
    const int64_t n = pc->n;
    int ierr = 0, k = 0;
    hk_vec *dsq = NULL, *v = NULL, *vold = NULL, *w = NULL, *tmp = NULL;
    double *h = NULL, *alpha = NULL, *beta = NULL, *T = NULL, *Y = NULL, *ev = NULL;
    double nglobal = (double)n; /* distributed: the steps and the norm over every process */
    HK_TRY(hk_be_sum(be, &nglobal, 1));
    if (steps > nglobal) steps = (int)nglobal;
    HK_TRY(hk_pc_diag(pc, HK_DIAG_INV_SQRT, &dsq));
    HK_TRY(hk_malloc((size_t)n * sizeof *h, &h));
    /* deterministic start vector with every component nonzero (no matrix values: it is made
     * here and uploaded) */
    double nrm = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t x = (uint32_t)i * 2654435761u + 12345u;
        x ^= x >> 15;
        x *= 2246822519u;
        x ^= x >> 13;
        h[i] = 0.5 + (double)(x & 0xffff) / 65536.0;
        nrm += h[i] * h[i];
    }
    HK_TRY(hk_be_sum(be, &nrm, 1));
    for (int64_t i = 0; i < n; i++)
        h[i] /= sqrt(nrm);
    HK_TRY(hk_pc_vec_from_host(be, n, pc->prec, h, &v));
    HK_TRY(hk_vec_create(be, n, pc->prec, &vold));
    HK_TRY(hk_vec_create(be, n, pc->prec, &w));
    HK_TRY(hk_vec_create(be, n, pc->prec, &tmp));
    HK_TRY(be->vec_set(vold, 0));
    HK_TRY(hk_calloc((size_t)steps + 1, sizeof *alpha, &alpha));
    HK_TRY(hk_calloc((size_t)steps + 1, sizeof *beta, &beta));
    double bprev = 0;
    for (k = 0; k < steps;) {
        HK_TRY(scaled_spmv(d, dsq, v, tmp, w));
        double a;
        HK_TRY(be->vec_dot(w, v, &a));
        HK_TRY(be->vec_axpbypcz(w, -a, v, -bprev, vold, 1.0));
        double b;
        HK_TRY(be->vec_dot(w, w, &b));
        b = sqrt(b);
        HK_TRY_CHECK(isfinite(a) && isfinite(b), HK_ERR_NUMERIC,
                     "preconditioner poly: the Lanczos bound estimate produced NaN/Inf; check "
                     "the matrix for NaN/Inf or give pc.poly.lmax");
        alpha[k] = a;
        beta[k] = b;
        k++;
        if (b <= 1e-10 * fabs(a)) break; /* invariant subspace: Ritz values are exact */
        HK_TRY(be->vec_axpby(vold, 1 / b, w, 0.0));
        hk_vec *sw = v;
        v = vold;
        vold = sw;
        bprev = b;
    }
    /* eigen-decomposition of the k x k tridiagonal */
    HK_TRY(hk_calloc((size_t)k * k, sizeof *T, &T));
    HK_TRY(hk_calloc((size_t)k * k, sizeof *Y, &Y));
    HK_TRY(hk_calloc((size_t)k, sizeof *ev, &ev));
    for (int i = 0; i < k; i++) {
        T[(size_t)i * k + i] = alpha[i];
        if (i + 1 < k) T[(size_t)i * k + i + 1] = T[(size_t)(i + 1) * k + i] = beta[i];
    }
    HK_TRY(hk_dense_symeig(k, T, ev, Y));
    double tmax = ev[k - 1], tmin = ev[0];
    double resid = fabs(beta[k - 1] * Y[(size_t)(k - 1) * k + (k - 1)]);
    HK_TRY_CHECK(tmax > 0 && isfinite(tmax), HK_ERR_NUMERIC,
                 "preconditioner poly: the estimated largest eigenvalue %g of the scaled matrix "
                 "is not positive; the matrix is not SPD",
                 tmax);
    d->hi = fmax(tmax + resid, safety * tmax);
    d->lo = tmin > 0 ? tmin : d->hi * 1e-6;
fail:
    hk_vec_destroy(dsq);
    hk_vec_destroy(v);
    hk_vec_destroy(vold);
    hk_vec_destroy(w);
    hk_vec_destroy(tmp);
    free(h);
    free(alpha);
    free(beta);
    free(T);
    free(Y);
    free(ev);
    return ierr;
}

static void poly_destroy(hk_pc *pc)
{
    poly_data *d = pc->data;
    if (d->A_owned) hk_mat_destroy(d->A);
    hk_vec_destroy(d->dinv);
    hk_vec_destroy(d->v0);
    hk_vec_destroy(d->v1);
    hk_vec_destroy(d->t);
    free(d);
    pc->data = NULL;
}

/* Set-up through backend ops only: the diag op for D^-1 and D^-1/2, SpMVs for Lanczos. */
static int poly_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    int lanczos = 15;
    double safety = 1.05, lo = 0, hi = 0;
    poly_data *d = NULL;
    HK_CALL(hk_calloc(1, sizeof *d, &d));
    pc->data = d; /* so hk_pc_destroy cleans up on failure */
    d->kind = KIND_LS;
    d->degree = 3;
    HK_CALL(hk_options_get_int(o, "pc.poly.degree", &d->degree));
    HK_CALL(hk_options_get_choice(o, "pc.poly.kind", kind_names, &d->kind));
    HK_CALL(hk_options_get_int(o, "pc.poly.lanczos", &lanczos));
    HK_CALL(hk_options_get_double(o, "pc.poly.safety", &safety));
    HK_CALL(hk_options_get_double(o, "pc.poly.lmin", &lo));
    HK_CALL(hk_options_get_double(o, "pc.poly.lmax", &hi));
    HK_CHECK(d->degree >= 0 && d->degree <= POLY_MAX_DEGREE, HK_ERR_OPTION,
             "option pc.poly.degree=%d is out of range; use 0..%d (default 3)", d->degree,
             POLY_MAX_DEGREE);
    HK_CHECK(lanczos >= 2 && lanczos <= POLY_MAX_LANCZOS, HK_ERR_OPTION,
             "option pc.poly.lanczos=%d is out of range; use 2..%d (default 15)", lanczos,
             POLY_MAX_LANCZOS);
    HK_CHECK(safety >= 1 && safety <= 2, HK_ERR_OPTION,
             "option pc.poly.safety=%g is out of range; use 1..2 (default 1.05)", safety);
    HK_CHECK(hi >= 0 && lo >= 0 && (hi == 0 || lo < hi), HK_ERR_OPTION,
             "options pc.poly.lmin=%g, pc.poly.lmax=%g must satisfy 0 <= lmin < lmax", lo, hi);
    /* first: names a bad row (distributed: every process stops, or none) */
    HK_CALL(hk_be_agree(pc->be, hk_pc_diag(pc, HK_DIAG_INV, &d->dinv)));
    HK_CALL(hk_pc_operator(pc, K, A, &d->A, &d->A_owned));
    if (hi > 0) { /* bounds given: no Lanczos */
        d->hi = hi;
        d->lo = lo > 0 ? lo : hi * 1e-3;
    } else {
        HK_CALL(lanczos_bounds(pc, d, lanczos, safety));
        if (lo > 0 && lo < d->hi) d->lo = lo;
    }
    HK_CALL(poly_coefficients(d));
    /* M must be SPD: s > 0 on (0, hi] */
    for (int j = 1; j <= 400; j++) {
        double t = d->hi * j / 400.0;
        HK_CHECK(s_eval(d, t) > 0, HK_ERR_NUMERIC,
                 "preconditioner poly: the %s polynomial of degree %d is not positive at t=%g in "
                 "(0, %g], so M would not be SPD; use pc.poly.kind=ls or a lower degree",
                 kind_names[d->kind], d->degree, t, d->hi);
    }
    HK_CALL(hk_vec_create(pc->be, pc->n, pc->prec, &d->v0));
    HK_CALL(hk_vec_create(pc->be, pc->n, pc->prec, &d->v1));
    HK_CALL(hk_vec_create(pc->be, pc->n, pc->prec, &d->t));
    return 0;
}

/* One degree of the recurrence: t = A x and y = a D^-1 t + b x + c y, z = e y + f z, in one
 * op where the backend fuses them (t then unused). */
static int poly_degree(const hk_backend_ops *be, poly_data *d, const hk_vec *x, hk_vec *y,
                       double a, double b, double c, hk_vec *z, double e)
{
    if (be->spmv_poly_step)
        return be->spmv_poly_step(d->A, x, d->t, y, a, d->dinv, b, c, z, e, 1.0);
    HK_CALL(hk_mat_spmv(d->A, x, d->t));
    return be->vec_poly_step(y, a, d->dinv, d->t, b, x, c, z, e, 1.0);
}

/* z = s(B) D^-1 r, B = D^-1 A, by the Chebyshev recurrence in xi(B) = (2/hi) B - I: per degree
 * one SpMV and one fused step (scaling by D^-1, the recurrence and the sum into z), one launch
 * each where the backend fuses them (spmv_poly_step), else two. */
static int poly_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    poly_data *d = pc->data;
    const hk_backend_ops *be = pc->be;
    const double *c = d->coef, s = 2 / d->hi;
    hk_vec *vk = d->v0, *vprev = d->v1;
    /* v_0 = D^-1 r, z = c_0 v_0 */
    HK_CALL(be->vec_poly_step(vk, 1.0, d->dinv, r, 0.0, NULL, 0.0, z, c[0], 0.0));
    for (int k = 0; k < d->degree; k++) {
        /* v_1 = s B v_0 - v_0; v_{k+1} = 2 s B v_k - 2 v_k - v_{k-1} into v_{k-1}'s buffer;
         * z += c_{k+1} v_{k+1} */
        if (k == 0)
            HK_CALL(poly_degree(be, d, vk, vprev, s, -1.0, 0.0, z, c[1]));
        else
            HK_CALL(poly_degree(be, d, vk, vprev, 2 * s, -2.0, -1.0, z, c[k + 1]));
        hk_vec *sw = vk;
        vk = vprev;
        vprev = sw;
    }
    return 0;
}

int hk_pc_poly_info(const hk_pc *pc, double *lo, double *hi, int *degree, const double **coef)
{
    HK_CHECK(pc && pc->type == &hk_pc_poly, HK_ERR_ARG, "hk_pc_poly_info: not a poly pc");
    const poly_data *d = pc->data;
    *lo = d->lo;
    *hi = d->hi;
    *degree = d->degree;
    *coef = d->coef;
    return 0;
}

const hk_pc_type hk_pc_poly = {
    .name = "poly",
    .summary = "polynomial in D^-1 A (neumann, least-squares, chebyshev) with Lanczos bounds",
    .options = "pc.poly.kind pc.poly.degree pc.poly.lanczos pc.poly.safety pc.poly.lmin "
               "pc.poly.lmax",
    .symmetric = 1,
    .setup = poly_setup,
    .apply = poly_apply,
    .apply_capturable = 1,
    .destroy = poly_destroy,
};
