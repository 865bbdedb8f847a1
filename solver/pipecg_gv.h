/* The scalars of pipelined CG with a general preconditioner (Ghysels-Vanroose, method=pipecg
 * with any pc but none and jacobi) kept in a backend scalar array S of HK_G_COUNT slots, and
 * the rule that derives the next step's coefficients from them. The rule is written once here
 * and runs where S lives: inside the backends' pipecg_gv_step op (CPU function, CUDA stage-2
 * kernel) after every step, and on the host in solver/ksp/cg.c after a (re)start or a residual
 * replacement, so a run between two checks never waits for the host. */
#ifndef HOOKE_PIPECG_GV_H
#define HOOKE_PIPECG_GV_H

#include <math.h>

#ifdef __CUDACC__
#define HK_GV_FN static inline __host__ __device__
#define HK_GV_RESTRICT __restrict__
#else
#define HK_GV_FN static inline
#define HK_GV_RESTRICT restrict
#endif

enum {
    HK_G_GAMMA = 0, /* r.u of the current vectors (u = M r) */
    HK_G_DELTA,     /* w.u (w = A u) */
    HK_G_RR,        /* r.r */
    HK_G_QQ,        /* q.q, u.u, p.p, x.x: the norms the drift bounds need */
    HK_G_UU,
    HK_G_PP,
    HK_G_XX,
    HK_G_ALPHA, /* the next step's alpha and beta */
    HK_G_BETA,
    HK_G_DENOM, /* the next step's p.Ap = delta - beta gamma / alpha_last */
    HK_G_ALAST, /* alpha, beta and gamma of the last step taken */
    HK_G_BLAST,
    HK_G_GLAST,
    HK_G_FIRST,    /* 1: the next step starts a direction (beta = 0) */
    HK_G_STEPPED,  /* 1: a step was taken since the last derivation (bounds to advance) */
    HK_G_STEPS,    /* steps taken since the host last wrote S */
    HK_G_HALT,     /* 1: the next step's gamma or denominator is not positive or not finite;
                    * the step op then does nothing until the host has decided */
    HK_G_ESTIMATE, /* 1: advance the drift bounds (replace_every = 0) */
    HK_G_NORMA,    /* ||A|| estimate */
    HK_G_GZ,       /* gap bounds of z, w, s and r (Cools et al.) since the last replacement */
    HK_G_GW,
    HK_G_GS,
    HK_G_GAP,
    HK_G_BELOW, /* the r gap was below sqrt(eps) ||r|| at the previous step */
    HK_G_WANT,  /* it crossed sqrt(eps) ||r|| since: replace at the next check (sticky) */
    HK_G_COUNT
};

/* From the inner products of the current vectors: advance the gap bounds over the step just
 * taken (when one was), raise WANT when the r gap first crosses sqrt(eps) ||r||, then the next
 * step's beta, p.Ap and alpha; HALT instead of alpha when gamma or p.Ap is not positive and
 * finite. The bounds: g_z <- |beta| g_z + eps ||A|| ||q||, g_s <- |beta| g_s + g_w + eps ||A||
 * ||p||, g_w <- g_w + |alpha| g_z + eps ||A|| ||u||, g_r <- g_r + |alpha| g_s + eps (||A||
 * |alpha| ||p|| + ||r||); Cools et al.'s eps ||A|| ||x|| in g_r, the rounding of x itself, is
 * left to the floor test (solver/ksp/ksp_impl.h): a replacement cannot remove it. */
/* Entry i of one step (the pipecg_gv_step op): the recurrences of z, q, s, p, then x, r, u, w
 * with the step's alpha and beta (nvi = n_i), and the terms of the seven inner products added to a
 * (gamma, delta, r.r, q.q, u.u, p.p, x.x: the order of the first HK_G_ slots). */
HK_GV_FN void hk_pipecg_gv_entry(long long i, double alpha, double beta, double *HK_GV_RESTRICT x,
                                 double *HK_GV_RESTRICT r, double *HK_GV_RESTRICT u,
                                 double *HK_GV_RESTRICT w, const double *HK_GV_RESTRICT m,
                                 double nvi, double *HK_GV_RESTRICT z,
                                 double *HK_GV_RESTRICT q, double *HK_GV_RESTRICT s,
                                 double *HK_GV_RESTRICT p, double *HK_GV_RESTRICT a)
{
    const double zi = nvi + beta * z[i], qi = m[i] + beta * q[i];
    const double si = w[i] + beta * s[i], pi = u[i] + beta * p[i];
    z[i] = zi, q[i] = qi, s[i] = si, p[i] = pi;
    const double xi = x[i] + alpha * pi, ri = r[i] - alpha * si;
    const double ui = u[i] - alpha * qi, wi = w[i] - alpha * zi;
    x[i] = xi, r[i] = ri, u[i] = ui, w[i] = wi;
    a[0] += ri * ui, a[1] += wi * ui, a[2] += ri * ri, a[3] += qi * qi;
    a[4] += ui * ui, a[5] += pi * pi, a[6] += xi * xi;
}

HK_GV_FN void hk_pipecg_gv_derive(double *S)
{
    if (S[HK_G_HALT] != 0) return;
    const double gamma = S[HK_G_GAMMA], delta = S[HK_G_DELTA];
    if (S[HK_G_STEPPED] != 0 && S[HK_G_ESTIMATE] != 0) {
        const double eps = 2.220446049250313e-16;
        const double qn = sqrt(S[HK_G_QQ]), un = sqrt(S[HK_G_UU]), pn = sqrt(S[HK_G_PP]),
                     rn = sqrt(S[HK_G_RR]);
        const double nA = S[HK_G_NORMA], fa = fabs(S[HK_G_ALAST]), fb = fabs(S[HK_G_BLAST]);
        const double gz = fb * S[HK_G_GZ] + eps * nA * qn;
        const double gs = fb * S[HK_G_GS] + S[HK_G_GW] + eps * nA * pn;
        const double gw = S[HK_G_GW] + fa * gz + eps * nA * un;
        const double gap = S[HK_G_GAP] + fa * gs + eps * (nA * fa * pn + rn);
        S[HK_G_GZ] = gz, S[HK_G_GS] = gs, S[HK_G_GW] = gw, S[HK_G_GAP] = gap;
        const int below = gap <= sqrt(eps) * rn;
        if (S[HK_G_BELOW] != 0 && !below) S[HK_G_WANT] = 1;
        S[HK_G_BELOW] = below;
    }
    S[HK_G_STEPPED] = 0;
    const int first = S[HK_G_FIRST] != 0;
    const double beta = first ? 0.0 : gamma / S[HK_G_GLAST];
    const double denom = first ? delta : delta - beta * gamma / S[HK_G_ALAST];
    S[HK_G_DENOM] = denom;
    if (!(gamma > 0 && denom > 0 && isfinite(gamma) && isfinite(denom))) {
        S[HK_G_HALT] = 1;
        return;
    }
    S[HK_G_ALPHA] = gamma / denom;
    S[HK_G_BETA] = beta;
}

/* After a step with S[ALPHA], S[BETA]: d[0..6] are r.u, w.u, r.r, q.q, u.u, p.p, x.x of the new
 * vectors; record the step and derive the next one. */
HK_GV_FN void hk_pipecg_gv_after_step(double *S, const double *d)
{
    S[HK_G_GLAST] = S[HK_G_GAMMA];
    S[HK_G_ALAST] = S[HK_G_ALPHA];
    S[HK_G_BLAST] = S[HK_G_BETA];
    for (int j = 0; j < 7; j++)
        S[HK_G_GAMMA + j] = d[j];
    S[HK_G_FIRST] = 0;
    S[HK_G_STEPPED] = 1;
    S[HK_G_STEPS] += 1;
    hk_pipecg_gv_derive(S);
}

#endif
