/* Private helpers shared by the Krylov method files (solver/ksp/). Every method is written once
 * against the backend ops table; these helpers keep the bookkeeping (start, convergence test,
 * work vectors, breakdown checks) identical across methods. */
#ifndef HOOKE_KSP_IMPL_H
#define HOOKE_KSP_IMPL_H

#include <math.h>

#include "hk_impl.h"

/* The registered methods (one family per file). */
extern const hk_ksp_type hk_ksp_cg, hk_ksp_cgcg, hk_ksp_pipecg, hk_ksp_fcg;
extern const hk_ksp_type hk_ksp_bicgstab, hk_ksp_pipebicgstab;
extern const hk_ksp_type hk_ksp_gmres, hk_ksp_pipegmres, hk_ksp_fgmres;
extern const hk_ksp_type hk_ksp_defect;
extern const hk_ksp_type hk_ksp_cholesky;
extern const hk_ksp_type hk_ksp_scg;

/* method=scg (scg.c): _options reads ksp.s, ksp.basis, mpk.block and mpk.k into k->sstep
 * (before the solver checks its keys); _setup, once k is complete (A, K, pc), builds the
 * matrix-powers plan (tuned unless given); _free releases both; _describe says what the basis
 * is built with. */
int hk_scg_options(hk_ksp *k, hk_options *o);
int hk_scg_setup(hk_ksp *k);
void hk_scg_free(hk_ksp *k);
void hk_scg_describe(const hk_ksp *k, char *buf, size_t n);
/* The recurrence coefficients (a_j, b_j, c_j), j < s, of a basis (ksp.basis) on [lo, hi]:
 * U_{j+1} = a_j M^-1 A U_j + b_j U_j + c_j U_{j-1}. */
enum { HK_BASIS_MONOMIAL = 0, HK_BASIS_NEWTON, HK_BASIS_CHEBYSHEV };
#define HK_SCG_MAX_S 8
void hk_scg_basis_coef(int basis, int s, double lo, double hi, double *coef);

/* method=cholesky (cholesky.c): factor K (the caller's host copy) into k->direct once; every
 * solve of k reuses it. Errors name the row where K is not positive definite, and say so when
 * Hooke was built without CHOLMOD. _free releases the factor, _describe says what it is. */
int hk_cholesky_factor(hk_ksp *k, const hk_bcsr *K);
void hk_cholesky_free(hk_ksp *k);
void hk_cholesky_describe(const hk_ksp *k, char *buf, size_t n);
long hk_cholesky_factorizations(void); /* factorisations so far in this process (tests) */

/* Iterations without a 0.1 % decrease of the best residual before "stagnation". */
#define HK_KSP_STAG_WINDOW 2000

/* n work vectors of the operator's size and precision (NULL-initialised on failure), taken
 * from the ksp's pool when it has them; _free gives them back to the pool, which
 * hk_ksp_pool_free empties (the solver does at destroy). Contents are not preserved. */
int hk_ksp_vecs(hk_ksp *k, int n, hk_vec **v);
void hk_ksp_vecs_free(hk_ksp *k, int n, hk_vec **v);
void hk_ksp_pool_free(hk_ksp *k);

/* z = M^{-1} r (converting for an fp32 preconditioner). */
int hk_ksp_pc(hk_ksp *k, const hk_vec *r, hk_vec *z);
/* 1 when the preconditioner is the identity (methods then alias z = r). */
int hk_ksp_pc_is_none(const hk_ksp *k);

/* r = b - A x; *bnorm = ||b||, *rnorm = ||r||; resets the result and stagnation state and
 * records iteration 0. Returns 1 in *done when already converged (or b = 0: x = 0). */
int hk_ksp_start(hk_ksp *k, const hk_vec *b, hk_vec *x, hk_vec *r, double *bnorm, double *rnorm,
                 int *done);

/* Record a residual (history, monitor) without deciding anything. */
void hk_ksp_record(hk_ksp *k, int it, double rnorm);

/* Set the reason and iteration count and return 1 (for breakdown, not SPD, NaN). */
int hk_ksp_stop(hk_ksp *k, int it, hk_reason why);

/* 1 when iteration it must test the residual (every check_every, and at maxit). */
static inline int hk_ksp_check_now(const hk_ksp *k, int it)
{
    return it % k->check_every == 0 || it >= k->maxit;
}

/* r = b - A x, the true residual (that, with its norm in *tn): what confirms, or not, a
 * convergence read on the recurrences. */
int hk_ksp_true_residual(hk_ksp *k, const hk_vec *b, const hk_vec *x, hk_vec *r);
int hk_ksp_true_residual_norm(hk_ksp *k, const hk_vec *b, const hk_vec *x, hk_vec *r, double *tn);

/* The unit roundoff of fp64 (DBL_EPSILON), the scale of every rounding estimate below. */
#define HK_EPS 2.220446049250313e-16

/* The rounding floor of a true residual: b - A x computed in fp64 carries errors of about
 * eps (||A|| ||x|| + ||b||) (normA 0 when there is no estimate: then eps ||b||, a lower bound).
 * A recursive residual below it no longer tells anything about b - A x: it goes on falling
 * while x stops improving, and past it the recurrences of the pipelined and s-step methods can
 * drift away (pipelined CG with Jacobi asked for tol=1e-30 went on to a true residual of 1e115,
 * s-step CG to 1e144; with a polynomial preconditioner pipelined CG stopped with "not SPD" on
 * an SPD matrix). */
double hk_ksp_residual_floor(double normA, double xnorm, double bnorm);
/* The floor tests of one solve: the true residual of the last test and its iteration, and
 * the x it was measured for (from the k's vector pool; hk_ksp_floor_free returns it). */
typedef struct hk_ksp_floor {
    double last; /* 0 before the first test */
    int it;
    hk_vec *xbest;
} hk_ksp_floor;
/* Iterations after a floor test at which the next one is due even though the recursive
 * residual has not claimed to halve the last test's true residual: restarted at the floor,
 * the recurrences run on rounding and hover there (pipelined CG without a preconditioner on
 * the GPU hovered at 5e-16..2e-15 for 3000 iterations while x drifted to 1e-9). */
#define HK_KSP_FLOOR_WAIT 100
/* 1 when a check at iteration it with recursive residual rn calls for the floor test: rn is
 * below the floor estimate and either no test was made yet, rn claims half the last test's
 * true residual, or HK_KSP_FLOOR_WAIT iterations passed since it. Between tests the method
 * keeps its Krylov space: a restart at every check below the estimate (which bounds the
 * rounding from above) could not halve the residual in a slow solve and so stopped early. */
int hk_ksp_floor_due(const hk_ksp_floor *f, int it, double rn, double floor);
/* The floor test: the true residual (into r, its norm into *tn) decides: *stop = 1 when it
 * meets the tolerance (or the iteration limit is reached), and when it is not at least half
 * the true residual of the last test: stagnation, the tolerance asks for more than fp64
 * attains on this system; x is then the last test's x where that one was better (restarted
 * at the floor, the iterations run on rounding, and x moved away: the bracket with Jacobi
 * asked for tol=1e-11 went from 2.2e-11 at one test to 7.3e-11 at the next), and r and *tn
 * are its. Otherwise the test is recorded in f (x copied), *stop = 0 and the caller restarts
 * from r: the floor estimate is an upper bound of the rounding, and the true residual can go
 * on falling below it (the bracket with pc=poly: 1.9e-11 with a floor near 1e-10). */
int hk_ksp_floor_test(hk_ksp *k, int it, const hk_vec *b, hk_vec *x, hk_vec *r, double bnorm,
                      hk_ksp_floor *f, double *tn, int *stop);
/* Returns f's vector to k's pool. */
void hk_ksp_floor_free(hk_ksp *k, hk_ksp_floor *f);
/* ||x|| for the floor estimate, read (one dot, one host read) once, when the recursive
 * residual rn first falls below sqrt(eps) ||b||: x is then near the solution, and an order of
 * magnitude is all the floor needs; before that *xn stays 0 and the floor's eps ||b|| part
 * stands alone. Nothing once *xn is set, so a loop can call it at every check. */
int hk_ksp_floor_xnorm(hk_ksp *k, const hk_vec *x, double rn, double bnorm, double *xn);
/* ||A||_2 from below, by three power steps from b with t1, t2 as scratch (their contents are
 * lost); 0 when b is zero. */
int hk_ksp_norm_estimate(hk_ksp *k, const hk_vec *b, hk_vec *t1, hk_vec *t2, double *normA);

/* Residual replacement for the pipelined methods (van der Vorst and Ye 2000; Cools, Yetkin,
 * Agullo, Giraud and Vanroose, SIMAX 2018). The recursive residual r drifts from b - A x by
 * rounding that the recurrences carry along; the method keeps an estimate of that gap and
 * recomputes r (and what its recurrences derive from r) from x when the estimate first grows
 * past sqrt(eps) ||r||, or every replace_every iterations when that option is set. */
typedef struct hk_ksp_drift {
    double normA; /* ||A||_2 estimate (a few power steps) */
    double gap;   /* bound on ||(b - A x) - r|| accumulated since the last replacement */
    int below;    /* the gap was below sqrt(eps) ||r|| at the previous test */
    int last;     /* iteration of the last replacement (or of the start) */
    int count;    /* replacements done in this solve */
} hk_ksp_drift;

/* Set up for a solve: estimate ||A|| with t1, t2 as scratch (their contents are lost) from
 * the start vector b; nothing is done (and no SpMV spent) when replacement is off. */
int hk_ksp_drift_init(hk_ksp *k, const hk_vec *b, hk_vec *t1, hk_vec *t2, hk_ksp_drift *d);
/* Account for the rounding of `steps` iterations of a recurrence r -= alpha A p, x += alpha
 * p whose A p is computed, not recurred (fused pipecg): each adds about
 * eps (||A|| ||x|| + 3 ||r||) to the gap. */
void hk_ksp_drift_add(hk_ksp_drift *d, int steps, double xnorm, double rnorm);
/* 1 when iteration it should replace the residual: by the estimate, the first test at which
 * the gap exceeds sqrt(eps) ||r|| after being below it; with replace_every = N every N
 * iterations. Never with replace_every = -1. */
int hk_ksp_drift_want(const hk_ksp *k, hk_ksp_drift *d, int it, double rnorm);
/* After a replacement at iteration it: the gap is back to eps ||r||, the rounding of one
 * residual, without eps ||A|| ||x||, which the step bounds leave to the floor test too:
 * counted, it kept the gap above sqrt(eps) ||r|| once ||r|| fell below floor / sqrt(eps), and
 * hk_ksp_drift_want never fired again (Ghysels-Vanroose pipecg with Jacobi drifted to a true
 * residual of 2e-6 while r claimed 1e-8 on the bracket of 0.8M DOFs). */
void hk_ksp_drift_reset(hk_ksp_drift *d, int it, double rnorm);
/* A replacement asked for by the drift estimate is made only while the rounding floor of
 * b - A x is at most this fraction of ||r||: the new r carries that rounding, which the kept
 * direction knows nothing of (Ghysels-Vanroose pipecg on the bracket, 0.1M DOFs, Jacobi,
 * tol=1e-9: at 1e-2 it hovered near 1e-8 through ten replacements and broke down; scg with
 * s = 8 on a 500 x 3 x 3 beam under a uniform load: replacements at 0.2 and 0.3 of the floor
 * ended in "stagnation" at 6e-7 and 7e-8). Below that the floor test takes over. */
#define HK_KSP_REPLACE_NOISE 1e-4
/* 1 when a replacement at residual rnorm is clear of the rounding floor (as above). */
static inline int hk_ksp_replace_clear(double floor, double rnorm)
{
    return floor <= HK_KSP_REPLACE_NOISE * rnorm;
}

static inline int hk_ksp_bad(double v)
{
    return !isfinite(v);
}

/* The CG family's breakdown checks at iteration it (0 when the value is usable): p.Ap <= 0
 * means A (or the preconditioned operator) is not SPD; r.z < 0 that the preconditioner is not
 * SPD, r.z = 0 with r != 0 a breakdown; NaN is reported as NaN. */
static inline int hk_ksp_spd_check(hk_ksp *k, int it, double pap)
{
    if (hk_ksp_bad(pap)) return hk_ksp_stop(k, it, HK_DIVERGED_NAN);
    if (pap <= 0) return hk_ksp_stop(k, it, HK_DIVERGED_NOT_SPD);
    return 0;
}

static inline int hk_ksp_rz_check(hk_ksp *k, int it, double rz)
{
    if (hk_ksp_bad(rz)) return hk_ksp_stop(k, it, HK_DIVERGED_NAN);
    if (rz < 0) return hk_ksp_stop(k, it, HK_DIVERGED_NOT_SPD);
    if (rz == 0) return hk_ksp_stop(k, it, HK_DIVERGED_BREAKDOWN);
    return 0;
}

#endif
