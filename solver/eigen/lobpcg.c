/* LOBPCG for the pencil K x = theta B x (K symmetric positive semidefinite, B = M symmetric
 * positive definite or the identity; T ~ (K - sigma M)^-1 the preconditioner), after Knyazev (SIAM
 * J. Sci. Comput. 23, 2001) with the basis handling of Hetmaniuk and Lehoucq (J. Comput. Phys. 218,
 * 2006) and Duersch, Shao, Yang and Gu (SIAM J. Sci. Comput. 40, 2018). Written once against the
 * backend ops (block SpMV, Gram products, block updates, the preconditioner's apply on each
 * column); the small dense Rayleigh-Ritz problem is solved on the host (dense.c). docs/modal.md
 * describes the algorithm and its choices.
 *
 * K is multiplied as (K - sigma M) X + sigma B X: the preconditioner's matrix (sigma < 0 makes
 * it definite for a free-floating part, whose K is singular) serves as the operator too, so
 * K itself is never stored on the backend. Below, A X means that product.
 *
 * Each iteration, with m columns in the block and the basis stored as one block [X P W]:
 *   1. R = A X - B X Theta; the relative residual of pair j is ||r_j|| / (theta_j ||B x_j||);
 *      a pair is converged below tol, or when ||r_j|| is at the rounding floor
 *      HK_EIGEN_FLOOR eps ||K||_inf ||x_j|| (fp64 cannot resolve it further: the rigid-body
 *      modes of a free part end there). Converged pairs are soft-locked: they stay in X and
 *      in the Rayleigh-Ritz step, but get no new search direction.
 *   2. W = T R for the active columns, B-orthogonalised twice against [X P] (classical
 *      Gram-Schmidt, the second pass after A W and B W are formed, so they follow the same
 *      coefficients), then B-orthonormalised by SVQB, dropping directions whose Gram
 *      eigenvalue is below W_DROP times the largest (W has lost rank).
 *   3. Rayleigh-Ritz on [X P W]: G_A = S^T A S, G_B = S^T B S (near the identity by
 *      construction, but used as computed), Cholesky of G_B; when a pivot is below GB_PIVOT
 *      the basis has lost rank and the step is redone without P (a restart), then without W.
 *   4. X := S C_x (the m lowest Ritz vectors); P := S Z with Z the part of Knyazev's direction
 *      (the W and P rows of C_x for the active columns) that is G_B-orthogonal to C_x, written
 *      without cancellation as C_rest (C_rest^T G_B E_x) C_x[X rows, active] and orthonormalised
 *      in coefficient space, so [X P] is B-orthonormal to rounding. A P and B P follow from the
 *      same coefficients (no SpMV).
 * A X and B X are recomputed by SpMVs at every iteration (m more columns, a few per cent of an
 * iteration with pc=amg), not carried by the recurrence: the residuals, hence convergence, are
 * the true ones, and the recurrence's drift, which held the rigid-body modes of a free chain at
 * ||K x|| = 2e-13 (the rounding floor is 9e-14) with pc=amg, is gone (8e-15 in 7 iterations). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eigen_impl.h"

#define W_DROP 1e-10  /* SVQB of W: relative Gram eigenvalue below which a direction is dropped */
#define P_DROP 1e-8   /* orthonormalisation of P's coefficients: relative norm kept */
#define GB_PIVOT 1e-8 /* Cholesky pivot of the (near identity) basis Gram matrix */

int hk_lobpcg_alloc(hk_lobpcg *L)
{
    if (L->S[0] && L->m_alloc >= L->m) return 0;
    hk_lobpcg_free(L);
    const int64_t cols = 3 * (int64_t)L->m;
    for (int b = 0; b < 2; b++) {
        HK_CALL(hk_vec_create(L->be, L->n * cols, HK_FP64, &L->S[b]));
        HK_CALL(hk_vec_create(L->be, L->n * cols, HK_FP64, &L->AS[b]));
        if (L->B) HK_CALL(hk_vec_create(L->be, L->n * cols, HK_FP64, &L->BS[b]));
    }
    HK_CALL(hk_vec_create(L->be, L->n * (int64_t)L->m, HK_FP64, &L->R));
    L->m_alloc = L->m;
    return 0;
}

void hk_lobpcg_free(hk_lobpcg *L)
{
    for (int b = 0; b < 2; b++) {
        hk_vec_destroy(L->S[b]);
        hk_vec_destroy(L->AS[b]);
        hk_vec_destroy(L->BS[b]);
        L->S[b] = L->AS[b] = L->BS[b] = NULL;
    }
    hk_vec_destroy(L->R);
    L->R = NULL;
    L->m_alloc = 0;
}

/* Entry i of the starting block: a hash of (seed, i) mapped to [-1, 1), the same on every
 * backend and run. */
static double start_value(unsigned seed, uint64_t i)
{
    uint64_t z = i + 0x9e3779b97f4a7c15ull * (seed + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* The host arrays of one run. */
typedef struct rr_work {
    int kmax;
    double *GA, *GB, *Gs, *Hs, *C, *Z, *T2, *T3, *Cnew, *w, *G, *tmp;
    int *J;
    unsigned char *use;
} rr_work;

static int work_alloc(rr_work *r, int m)
{
    const int k = 3 * m;
    const size_t kk = (size_t)k * k;
    double *p = NULL;
    r->kmax = k;
    HK_CALL(hk_calloc(11 * kk + (size_t)k, sizeof *p, &p));
    r->GA = p;
    r->GB = p + kk;
    r->Gs = p + 2 * kk;
    r->Hs = p + 3 * kk;
    r->C = p + 4 * kk;
    r->Z = p + 5 * kk;
    r->T2 = p + 6 * kk;
    r->T3 = p + 7 * kk;
    r->Cnew = p + 8 * kk;
    r->G = p + 9 * kk;
    r->tmp = p + 10 * kk;
    r->w = p + 11 * kk;
    /* work_free releases whatever was allocated when one of these fails */
    HK_CALL(hk_calloc((size_t)k, sizeof *r->J, &r->J));
    HK_CALL(hk_calloc((size_t)k, 1, &r->use));
    return 0;
}

static void work_free(rr_work *r)
{
    free(r->GA);
    free(r->J);
    free(r->use);
}

static void symmetrize(int k, double *G)
{
    for (int j = 0; j < k; j++)
        for (int i = j + 1; i < k; i++) {
            const double s = 0.5 * (G[i + (size_t)j * k] + G[j + (size_t)i * k]);
            G[i + (size_t)j * k] = G[j + (size_t)i * k] = s;
        }
}

/* Rayleigh-Ritz on the basis columns with use[i] set (k columns in all, the Gram matrices
 * GA, GB k x k): C (k x kk, zero rows where use is 0) the G_B-orthonormal Ritz vectors, w
 * (kk) their values ascending, *kk the columns used. Returns 1 when G_B's Cholesky fails. */
static int rayleigh_ritz(rr_work *r, int k, int *kk_out, int *failed)
{
    int kk = 0;
    int idx[r->kmax];
    for (int i = 0; i < k; i++)
        if (r->use[i]) idx[kk++] = i;
    *kk_out = kk;
    double *Ls = r->Gs, *Hs = r->Hs, *Q = r->tmp, *D = r->T3;
    /* scaled to a unit diagonal of G_B, so that the pivot test is relative */
    *failed = 0;
    for (int i = 0; i < kk; i++) {
        const double g = r->GB[idx[i] + (size_t)idx[i] * k];
        if (!(g > 0) || !isfinite(g)) *failed = 1;
        D[i] = *failed ? 0 : 1 / sqrt(g);
    }
    if (*failed) return 0;
    for (int j = 0; j < kk; j++)
        for (int i = 0; i < kk; i++) {
            Ls[i + (size_t)j * kk] = r->GB[idx[i] + (size_t)idx[j] * k] * D[i] * D[j];
            Hs[i + (size_t)j * kk] = r->GA[idx[i] + (size_t)idx[j] * k] * D[i] * D[j];
        }
    *failed = hk_eig_cholesky(kk, Ls, GB_PIVOT) >= 0;
    if (*failed) return 0;
    /* H = L^-1 G_A L^-T = L^-1 (L^-1 G_A)^T */
    hk_eig_solve_lower(kk, Ls, kk, Hs);
    for (int j = 0; j < kk; j++)
        for (int i = 0; i < kk; i++)
            Q[i + (size_t)j * kk] = Hs[j + (size_t)i * kk];
    hk_eig_solve_lower(kk, Ls, kk, Q);
    symmetrize(kk, Q);
    memcpy(Hs, Q, (size_t)kk * kk * sizeof *Hs);
    HK_CALL(hk_eig_symeig(kk, Hs, r->w, Q));
    hk_eig_solve_upper_t(kk, Ls, kk, Q); /* C = L^-T Q */
    memset(r->C, 0, (size_t)k * kk * sizeof *r->C);
    for (int j = 0; j < kk; j++)
        for (int i = 0; i < kk; i++)
            r->C[idx[i] + (size_t)j * k] = D[i] * Q[i + (size_t)j * kk];
    return 0;
}

/* Z (k x np) = the new P's coefficients: C_rest (C_rest^T G_B E_x) C_x[X rows, J],
 * orthonormalised (C_rest^T G_B C_rest = I makes that the identity's orthonormalisation of
 * the middle factor). Returns np. */
static int p_coefficients(rr_work *r, int k, int kk, int m, int na)
{
    const int nr = kk - m;
    if (nr <= 0 || na <= 0) return 0;
    const double *Crest = r->C + (size_t)m * k;
    /* T2 = C_rest^T G_B[:, 0:m]  (nr x m) */
    for (int j = 0; j < m; j++)
        for (int i = 0; i < nr; i++) {
            double s = 0;
            for (int q = 0; q < k; q++)
                s += Crest[q + (size_t)i * k] * r->GB[q + (size_t)j * k];
            r->T2[i + (size_t)j * nr] = s;
        }
    /* T3 = T2 C_x[0:m, J]  (nr x na) */
    for (int a = 0; a < na; a++)
        for (int i = 0; i < nr; i++) {
            double s = 0;
            for (int q = 0; q < m; q++)
                s += r->T2[i + (size_t)q * nr] * r->C[q + (size_t)r->J[a] * k];
            r->T3[i + (size_t)a * nr] = s;
        }
    const int np = hk_eig_orthonormalize(nr, na, r->T3, P_DROP);
    for (int a = 0; a < np; a++)
        for (int q = 0; q < k; q++) {
            double s = 0;
            for (int i = 0; i < nr; i++)
                s += Crest[q + (size_t)i * k] * r->T3[i + (size_t)a * nr];
            r->Z[q + (size_t)a * k] = s;
        }
    return np;
}

/* B-orthonormalise the na columns of W by SVQB from their Gram matrix G = W^T B W: T (na x nw,
 * into r->Z) with W T B-orthonormal; returns nw. */
static int svqb(rr_work *r, int na)
{
    double *G = r->G, *D = r->T2, *U = r->tmp;
    symmetrize(na, G);
    for (int i = 0; i < na; i++) {
        const double g = G[i + (size_t)i * na];
        D[i] = g > 0 && isfinite(g) ? 1 / sqrt(g) : 0;
    }
    for (int j = 0; j < na; j++)
        for (int i = 0; i < na; i++)
            G[i + (size_t)j * na] *= D[i] * D[j];
    HK_CALL(hk_eig_symeig(na, G, r->w, U));
    const double top = na > 0 ? r->w[na - 1] : 0;
    int nw = 0;
    for (int c = na - 1; c >= 0; c--) {
        if (!(r->w[c] > W_DROP * top)) break;
        const double s = 1 / sqrt(r->w[c]);
        for (int i = 0; i < na; i++)
            r->Z[i + (size_t)nw * na] = D[i] * U[i + (size_t)c * na] * s;
        nw++;
    }
    return nw;
}

/* Gram product G (p x q) = X^T Y of block views. */
static int gram(const hk_lobpcg *L, int p, const hk_vec *X, int q, const hk_vec *Y, double *G)
{
    if (p <= 0 || q <= 0) return 0;
    return L->be->block_gram(L->n, p, X, q, Y, G);
}

/* Y = X C + beta Y on block views (X: p columns, C: p x q). */
static int update(const hk_lobpcg *L, int p, const hk_vec *X, int q, const double *C, double beta,
                  hk_vec *Y)
{
    if (p <= 0 || q <= 0) return 0;
    return L->be->block_update(L->n, p, X, q, C, beta, Y);
}

/* Y -= X G with G (p x q) given, on block views */
static int subtract(const hk_lobpcg *L, int p, const hk_vec *X, int q, double *G, hk_vec *Y)
{
    for (size_t e = 0; e < (size_t)p * q; e++)
        G[e] = -G[e];
    return update(L, p, X, q, G, 1.0, Y);
}

/* B Y = B X (B NULL: nothing, B Y is Y) and A Y = (K - sigma M) X + sigma B X = K X for k
 * columns: the operator is K, multiplied through the preconditioner's shifted matrix. */
static int apply_operator(hk_lobpcg *L, int k, const hk_vec *X, hk_vec *AX, hk_vec *BX)
{
    if (k <= 0) return 0;
    if (L->B) HK_CALL(hk_block_spmv(L->B, k, X, BX));
    HK_CALL(hk_block_spmv(L->A, k, X, AX));
    if (L->sigma != 0) HK_CALL(L->be->vec_axpby(AX, L->sigma, L->B ? BX : X, 1.0));
    L->spmv_cols += k;
    return 0;
}

static int check_ops(const hk_backend_ops *be)
{
    HK_CHECK(be->block_gram && be->block_update && be->block_dots, HK_ERR_UNSUPPORTED,
             "backend %s has no block operations (block_gram, block_update, block_dots); the "
             "eigensolver needs them",
             be->name);
    return 0;
}

int hk_lobpcg_run(hk_lobpcg *L)
{
    int ierr = 0;
    const hk_backend_ops *be = L->be;
    const int64_t n = L->n;
    const int m = L->m, nev = L->nev;
    const int hasB = L->B != NULL;
    rr_work r = {0};
    double *host = NULL, *rn = NULL;
    HK_CALL(check_ops(be));
    HK_CHECK(nev >= 1 && m >= nev && m <= n, HK_ERR_ARG,
             "lobpcg: %d wanted pairs with a block of %d columns on %lld unknowns", nev, m,
             (long long)n);
    HK_CALL(hk_lobpcg_alloc(L));
    HK_TRY(work_alloc(&r, m));
    HK_TRY(hk_malloc((size_t)5 * m * sizeof *rn, &rn));
    double *bn = rn + m, *xn = bn + m, *rel = xn + m;
    unsigned char *conv = L->status;
    L->iterations = L->restarts = L->spmv_cols = L->pc_applies = L->stagnated = 0;

    /* ---- start: X pseudo-random, B-orthonormalised and rotated to Ritz vectors ---- */
    HK_TRY(hk_malloc((size_t)n * m * sizeof *host, &host));
    for (int64_t i = 0; i < n * m; i++)
        host[i] = start_value(L->seed, (uint64_t)i);
    int cur = 0;
#define BLK(V, c0, k) hk_block_cols(V, n, c0, k)
#define SB(b) (hasB ? L->BS[b] : L->S[b])
    {
        hk_vec X = BLK(L->S[0], 0, m), AX = BLK(L->AS[0], 0, m), BX = BLK(SB(0), 0, m);
        HK_TRY(be->copy_to(X.data, host, (size_t)n * m * sizeof *host));
        HK_TRY(apply_operator(L, m, &X, &AX, &BX));
        HK_TRY(gram(L, m, &X, m, &AX, r.GA));
        HK_TRY(gram(L, m, &X, m, &BX, r.GB));
        symmetrize(m, r.GA);
        symmetrize(m, r.GB);
        int kk, failed;
        memset(r.use, 1, (size_t)m);
        HK_TRY(rayleigh_ritz(&r, m, &kk, &failed));
        HK_TRY_CHECK(!failed, HK_ERR_NUMERIC,
                     "the mass matrix M is not positive definite: X^T M X of the starting "
                     "block of %d vectors has a non-positive pivot; M must be symmetric "
                     "positive definite (no massless dofs, no negative entries on its "
                     "diagonal)",
                     m);
        hk_vec X1 = BLK(L->S[1], 0, m), AX1 = BLK(L->AS[1], 0, m), BX1 = BLK(SB(1), 0, m);
        HK_TRY(update(L, m, &X, m, r.C, 0, &X1));
        HK_TRY(update(L, m, &AX, m, r.C, 0, &AX1));
        if (hasB) HK_TRY(update(L, m, &BX, m, r.C, 0, &BX1));
        memcpy(L->theta, r.w, (size_t)m * sizeof *L->theta);
        cur = 1;
    }
    free(host);
    host = NULL;

    int np = 0, it = 0;
    for (;;) {
        hk_vec S = BLK(L->S[cur], 0, 3 * m), AS = BLK(L->AS[cur], 0, 3 * m),
               BS = BLK(SB(cur), 0, 3 * m);
        hk_vec X = BLK(&S, 0, m), AX = BLK(&AS, 0, m), BX = BLK(&BS, 0, m);
        hk_vec R = BLK(L->R, 0, m);
        /* ---- 1. residuals, from A X and B X recomputed by SpMVs ---- */
        HK_TRY(apply_operator(L, m, &X, &AX, &BX));
        {
            double *Dm = r.tmp;
            memset(Dm, 0, (size_t)m * m * sizeof *Dm);
            for (int j = 0; j < m; j++)
                Dm[j + (size_t)j * m] = -L->theta[j];
            HK_TRY(hk_block_copy(&AX, 0, &R, 0, n, m));
            HK_TRY(update(L, m, &BX, m, Dm, 1.0, &R));
        }
        HK_TRY(be->block_dots(n, m, &R, &R, rn));
        HK_TRY(be->block_dots(n, m, &BX, &BX, bn));
        HK_TRY(be->block_dots(n, m, &X, &X, xn));
        int nconv = 0, na = 0;
        double worst = 0;
        for (int j = 0; j < m; j++) {
            const double rnorm = sqrt(rn[j]), den = fabs(L->theta[j]) * sqrt(bn[j]);
            rel[j] = den > 0 ? rnorm / den : (rnorm > 0 ? INFINITY : 0);
            const int at_floor = rnorm <= HK_EIGEN_FLOOR * DBL_EPSILON * L->anorm * sqrt(xn[j]);
            conv[j] = rel[j] <= L->tol ? 1 : at_floor ? 2 : 0;
            HK_TRY_CHECK(isfinite(rn[j]) && isfinite(L->theta[j]), HK_ERR_NUMERIC,
                         "lobpcg: the residual of pair %d is not finite at iteration %d; the "
                         "matrices or the preconditioner hold non-finite values",
                         j + 1, it);
            if (j < nev) {
                nconv += conv[j] != 0;
                if (!conv[j] && rel[j] > worst) worst = rel[j];
            }
            if (!conv[j]) r.J[na++] = j;
        }
        if (L->monitor) {
            printf("  lobpcg %5d  converged %d of %d  largest residual %.3e\n", it, nconv, nev,
                   worst);
            fflush(stdout);
        }
        if (nconv == nev || it >= L->maxit || L->stagnated) break;

        /* ---- 2. W = T R of the active columns, B-orthonormal to [X P] ---- */
        const int w0 = m + np, nxp = m + np;
        hk_vec XP = BLK(&S, 0, nxp), AXP = BLK(&AS, 0, nxp), BXP = BLK(&BS, 0, nxp);
        hk_vec W = BLK(&S, w0, na), AW = BLK(&AS, w0, na), BW = BLK(&BS, w0, na);
        for (int a = 0; a < na; a++) {
            hk_vec rj = hk_block_col(&R, n, r.J[a]), wj = hk_block_col(&W, n, a);
            if (L->pc)
                HK_TRY(hk_pc_apply(L->pc, &rj, &wj));
            else
                HK_TRY(be->vec_copy(&wj, &rj));
        }
        if (L->pc) L->pc_applies += na;
        HK_TRY(gram(L, nxp, &BXP, na, &W, r.G));
        HK_TRY(subtract(L, nxp, &XP, na, r.G, &W));
        HK_TRY(apply_operator(L, na, &W, &AW, &BW));
        HK_TRY(gram(L, nxp, &BXP, na, &W, r.G));
        memcpy(r.tmp, r.G, (size_t)nxp * na * sizeof *r.G);
        HK_TRY(subtract(L, nxp, &XP, na, r.G, &W));
        memcpy(r.G, r.tmp, (size_t)nxp * na * sizeof *r.G);
        HK_TRY(subtract(L, nxp, &AXP, na, r.G, &AW));
        if (hasB) {
            memcpy(r.G, r.tmp, (size_t)nxp * na * sizeof *r.G);
            HK_TRY(subtract(L, nxp, &BXP, na, r.G, &BW));
        }
        HK_TRY(gram(L, na, &W, na, &BW, r.G));
        const int nw = na > 0 ? svqb(&r, na) : 0;
        if (nw > 0) {
            /* W := W T through R (free now), for W, A W and B W alike */
            hk_vec Rw = BLK(L->R, 0, nw);
            HK_TRY(update(L, na, &W, nw, r.Z, 0, &Rw));
            HK_TRY(hk_block_copy(&Rw, 0, &S, w0, n, nw));
            HK_TRY(update(L, na, &AW, nw, r.Z, 0, &Rw));
            HK_TRY(hk_block_copy(&Rw, 0, &AS, w0, n, nw));
            if (hasB) {
                HK_TRY(update(L, na, &BW, nw, r.Z, 0, &Rw));
                HK_TRY(hk_block_copy(&Rw, 0, &BS, w0, n, nw));
            }
        }
        if (nw == 0 && np == 0) {
            /* nothing new to search: the preconditioned residuals lie in span(X) */
            L->stagnated = 1;
            continue;
        }

        if (L->monitor > 1) {
            printf("    active %d, new directions %d, previous directions %d; residuals:", na, nw,
                   np);
            for (int j = 0; j < m; j++)
                printf(" %.1e", rel[j]);
            printf("\n");
        }
        /* ---- 3. Rayleigh-Ritz on [X P W], without P (then W) when the basis lost rank ---- */
        const int k = m + np + nw;
        hk_vec Sk = BLK(&S, 0, k), ASk = BLK(&AS, 0, k), BSk = BLK(&BS, 0, k);
        HK_TRY(gram(L, k, &Sk, k, &ASk, r.GA));
        HK_TRY(gram(L, k, &Sk, k, &BSk, r.GB));
        symmetrize(k, r.GA);
        symmetrize(k, r.GB);
        int kk = 0, failed = 1;
        for (int attempt = 0; attempt < 3 && failed; attempt++) {
            for (int i = 0; i < k; i++)
                r.use[i] = i < m || (i < m + np ? attempt == 0 : attempt < 2);
            HK_TRY(rayleigh_ritz(&r, k, &kk, &failed));
            if (failed && attempt == 0 && np > 0) L->restarts++;
            if (failed && attempt == 0 && np == 0) attempt++; /* nothing to drop but W */
        }
        HK_TRY_CHECK(!failed, HK_ERR_NUMERIC,
                     "lobpcg: the block X lost its B-orthonormality at iteration %d (the Gram "
                     "matrix of X alone is not positive definite); M may not be positive "
                     "definite",
                     it);

        /* ---- 4. X := S C_x, P := S Z into the other buffer ---- */
        const int npn = p_coefficients(&r, k, kk, m, na);
        memcpy(r.Cnew, r.C, (size_t)k * m * sizeof *r.Cnew);
        memcpy(r.Cnew + (size_t)k * m, r.Z, (size_t)k * npn * sizeof *r.Cnew);
        const int nb = 1 - cur;
        hk_vec Xn = BLK(L->S[nb], 0, m + npn), AXn = BLK(L->AS[nb], 0, m + npn),
               BXn = BLK(SB(nb), 0, m + npn);
        HK_TRY(update(L, k, &Sk, m + npn, r.Cnew, 0, &Xn));
        HK_TRY(update(L, k, &ASk, m + npn, r.Cnew, 0, &AXn));
        if (hasB) HK_TRY(update(L, k, &BSk, m + npn, r.Cnew, 0, &BXn));
        memcpy(L->theta, r.w, (size_t)m * sizeof *L->theta);
        cur = nb;
        np = npn;
        it++;
    }
#undef BLK
#undef SB
    for (int j = 0; j < m; j++)
        L->residual[j] = rel[j];
    L->cur = cur;
    L->iterations = it;
fail:
    free(host);
    free(rn);
    work_free(&r);
    return ierr;
}
