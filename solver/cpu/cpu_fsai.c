/* FSAI and SAI set-up ops on the CPU (contracts: hk_backend_ops in solver/hk_impl.h). These
 * are the reference rules; cuda/cuda_fsai.cu follows them step by step, in the same order of
 * floating-point operations, so both backends give the same factors to rounding.
 *
 * fsai_pattern
 *   1. diagonal: every scalar a_ii must be positive and finite (else fault DIAG, first row);
 *   2. sparsified graph Ã on nodes (scalar rows, or block rows when block = 1): node J is a
 *      neighbour of I when I == J, or (scalar) |a_IJ| > tau sqrt(a_II a_JJ), or (block)
 *      ||A_IJ||_F > tau sqrt(||A_II||_F ||A_JJ||_F);
 *   3. node pattern: the set of nodes <= I reachable from I in k steps of Ã, each step only
 *      through nodes <= I (B_{p+1} = Low(B_p Ã), B_0 = I), sorted;
 *   4. scalar row i = I*b + r (b = 1 or br): the columns J*b + c for every J < I of the set
 *      and c < b, then I*b + c for c <= r. More than cap entries: fault TOO_LARGE.
 * fsai_factor, per row i with pattern P (m entries, P[m-1] = i):
 *   1. M = A[P,P] gathered from the rows P[a] of K (column-major); a pair with
 *      |M_ab - M_ba| > 1e-10 (max(|M_ab|,|M_ba|) + sqrt(|M_aa M_bb|)): fault ASYMMETRIC;
 *   2. left-looking Cholesky of the lower triangle (the upper keeps A[P,P]); a pivot that is
 *      not positive: fault NOT_SPD;
 *   3. w = A[P,P]^-1 e_m: forward step w = e_m / L_mm, backward by columns k = m-1 .. 0:
 *      w_k /= L_kk, then w_i -= L_ki w_k for i < k;
 *   4. w *= 1/sqrt(w_m); nrm = ||w||_2 summed in order;
 *   5. post-filtration: D = {a < m-1 : |w_a| <= delta nrm}; t_a = sum_{b in D} A_ab w_b (b in
 *      order), e = sum_{a in D} w_a t_a (a in order); kept entries get w_a / sqrt(1 + e).
 *   Where the rows of a node have patterns that are prefixes of its last row's (the block
 *   pattern), steps 1-2 run once for the node on the last row's pattern and steps 3-5 use the
 *   leading part of that factor: the same numbers as one factor per row, a third of the work.
 * sai_pattern / sai_factor: the rules of the GSAI chapter as documented in solver/pc/sai.c;
 * the least-squares problem A(I,J) m = e_k(I) (I in order of first appearance over the rows
 * of A^T at J, A(I,J) column-major with leading dimension |I|) by Householder QR as in
 * hk_dense_qr_ls (solver/pc/dense.c), or by classical Gram-Schmidt (sai_cgs_ls below), except
 * that every sum over the rows i = i0 .. |I|-1 (the norms and the dot products) is taken in
 * the order of a 32-lane warp (sai_sum below): 32 partial sums p_l over i = i0 + l,
 * i0 + l + 32, .. in order, then p_l = p_l + p_{l^o} for o = 16, 8, 4, 2, 1; the result is
 * p_0. cuda/cuda_fsai.cu computes the same. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "../pc/pc_impl.h"

static void fault_min(hk_setup_fault *f, int64_t row, int reason)
{
#pragma omp critical(hk_cpu_fault)
    if (f->row < 0 || row < f->row) {
        f->row = row;
        f->reason = reason;
    }
}

/* Value of K at scalar (i, j), 0 when not stored. */
static double bmat_entry(const hk_bmat *K, int64_t i, int64_t j)
{
    const int b = K->br;
    const int64_t bi = i / b, bj = j / b;
    const int64_t q = hk_find_block(K->rowptr, K->colind, bi, bj);
    return q >= 0 ? K->val[((size_t)q * b + (size_t)(i % b)) * b + (size_t)(j % b)] : 0;
}

/* Frobenius norm of block q of K. */
static double block_fnorm(const hk_bmat *K, int64_t q)
{
    const int bb = K->br * K->bc;
    double s = 0;
    for (int e = 0; e < bb; e++)
        s += K->val[(size_t)q * bb + e] * K->val[(size_t)q * bb + e];
    return sqrt(s);
}

/* The node set of node I (step 3), sorted; -1 when it exceeds cap nodes. */
static int64_t node_set(const int64_t *arow, const int32_t *acol, int64_t I, int k, int32_t *mark,
                        int32_t *set, int64_t cap)
{
    int64_t m = 1, done = 0;
    set[0] = (int32_t)I;
    mark[I] = (int32_t)I;
    for (int p = 0; p < k; p++) {
        const int64_t end = m;
        for (int64_t q = done; q < end; q++) {
            const int32_t j = set[q];
            for (int64_t t = arow[j]; t < arow[j + 1]; t++) {
                const int32_t c = acol[t];
                if (c > I || mark[c] == I) continue;
                if (m == cap) return -1;
                mark[c] = (int32_t)I;
                set[m++] = c;
            }
        }
        done = end;
    }
    for (int64_t a = 1; a < m; a++) {
        int32_t v = set[a];
        int64_t b = a;
        for (; b > 0 && set[b - 1] > v; b--)
            set[b] = set[b - 1];
        set[b] = v;
    }
    return m;
}

int hk_cpu_fsai_pattern(const hk_bmat *K, double tau, int k, int block, int64_t cap, hk_graph *S,
                        hk_setup_fault *fault)
{
    int ierr = 0;
    memset(S, 0, sizeof *S);
    fault->row = -1;
    fault->reason = HK_FAULT_NONE;
    HK_CHECK(K->br == K->bc && K->nbrows == K->nbcols, HK_ERR_ARG,
             "fsai_pattern: K must be square with square blocks (got %d x %d blocks)", K->br,
             K->bc);
    const int br = K->br, b = block ? br : 1;
    const int64_t n = K->nbrows * br, nn = n / b; /* scalar rows, nodes */
    double *dg = NULL;                            /* scalar diagonal, or block norms */
    int64_t *arow = NULL, *len = NULL;
    int32_t *acol = NULL;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *dg, &dg));
    HK_TRY(hk_calloc((size_t)nn + 1, sizeof *arow, &arow));
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *len, &len));
    /* 1. diagonal */
    for (int64_t i = 0; i < n; i++) {
        const double a = bmat_entry(K, i, i);
        if (!(a > 0) || !isfinite(a)) {
            fault->row = i;
            fault->reason = HK_FAULT_DIAG;
            goto fail;
        }
        dg[i] = a;
    }
    if (block)
        for (int64_t I = 0; I < nn; I++) {
            double s = 0;
            for (int64_t q = K->rowptr[I]; q < K->rowptr[I + 1]; q++)
                if (K->colind[q] == I) s = block_fnorm(K, q);
            dg[I] = s; /* overwrites entries < I only: scalar dg of rows >= I*br still unread */
        }
    /* 2. Ã: count, then fill */
    for (int pass = 0; pass < 2; pass++) {
#pragma omp parallel for schedule(static)
        for (int64_t I = 0; I < nn; I++) {
            int64_t c = 0, q0 = pass ? arow[I] : 0;
            if (block) {
                for (int64_t q = K->rowptr[I]; q < K->rowptr[I + 1]; q++) {
                    const int32_t J = K->colind[q];
                    if (J == I || block_fnorm(K, q) > tau * sqrt(dg[I] * dg[J])) {
                        if (pass) acol[q0 + c] = J;
                        c++;
                    }
                }
            } else {
                const int64_t bi = I / br, r = I % br;
                for (int64_t q = K->rowptr[bi]; q < K->rowptr[bi + 1]; q++)
                    for (int cc = 0; cc < br; cc++) {
                        const int64_t j = (int64_t)K->colind[q] * br + cc;
                        const double v = K->val[((size_t)q * br + r) * br + cc];
                        if (j == I || fabs(v) > tau * sqrt(dg[I] * dg[j])) {
                            if (pass) acol[q0 + c] = (int32_t)j;
                            c++;
                        }
                    }
            }
            if (!pass) arow[I + 1] = c;
        }
        if (!pass) {
            for (int64_t I = 0; I < nn; I++)
                arow[I + 1] += arow[I];
            HK_TRY(hk_malloc((size_t)(arow[nn] ? arow[nn] : 1) * sizeof *acol, &acol));
        }
    }
    /* 3-4. node sets: sizes, then the scalar rows */
    const int64_t capn = cap / b + 1;
    for (int pass = 0; pass < 2; pass++) {
#pragma omp parallel
        {
            int32_t *mark = malloc((size_t)(nn ? nn : 1) * sizeof *mark);
            int32_t *set = malloc((size_t)capn * sizeof *set);
            if (mark)
                for (int64_t I = 0; I < nn; I++)
                    mark[I] = -1;
#pragma omp for schedule(dynamic, 64)
            for (int64_t I = 0; I < nn; I++) {
                if (!mark || !set) {
                    fault_min(fault, I * b, HK_FAULT_MEMORY);
                    continue;
                }
                const int64_t s = node_set(arow, acol, I, k, mark, set, capn);
                if (s < 0 || (s - 1) * b + b > cap) {
                    /* first scalar row of the node over cap */
                    int64_t r = 0;
                    if (s > 0)
                        while ((s - 1) * b + r + 1 <= cap)
                            r++;
                    fault_min(fault, I * b + r, HK_FAULT_TOO_LARGE);
                    continue;
                }
                for (int r = 0; r < b; r++) {
                    const int64_t i = I * b + r;
                    if (!pass) {
                        len[i] = (s - 1) * b + r + 1;
                        continue;
                    }
                    int32_t *out = S->colind + S->rowptr[i];
                    int64_t t = 0;
                    for (int64_t a = 0; a < s - 1; a++)
                        for (int c = 0; c < b; c++)
                            out[t++] = (int32_t)((int64_t)set[a] * b + c);
                    for (int c = 0; c <= r; c++)
                        out[t++] = (int32_t)(I * b + c);
                }
            }
            free(mark);
            free(set);
        }
        if (fault->row >= 0) goto fail;
        if (!pass) {
            int64_t nnz = 0;
            for (int64_t i = 0; i < n; i++)
                nnz += len[i];
            HK_TRY(hk_graph_alloc(K->be, n, n, nnz, S));
            S->rowptr[0] = 0;
            for (int64_t i = 0; i < n; i++)
                S->rowptr[i + 1] = S->rowptr[i] + len[i];
        }
    }
fail:
    if (ierr || fault->row >= 0) hk_graph_free(S);
    free(dg);
    free(arow);
    free(len);
    free(acol);
    return ierr;
}

/* Steps 1-2 of fsai_factor for the pattern P (m entries): M (m*m, column-major, leading
 * dimension m) receives A[P,P] in its upper triangle and the Cholesky factor in its lower,
 * dgl the diagonal of A[P,P]. Returns a fault reason or 0. The factor of a leading m' x m'
 * block is the leading block of this factor, entry for entry (left-looking: entry (i, j)
 * reads entries (<= i, <= j) only), and so is the symmetry check. */
static int fsai_chol(const hk_bmat *K, const int32_t *P, int64_t m, double *M, double *dgl)
{
    const int br = K->br;
    memset(M, 0, (size_t)m * m * sizeof *M);
    for (int64_t a = 0; a < m; a++) { /* 1. gather from row P[a] */
        const int64_t bi = P[a] / br, r = P[a] % br;
        for (int64_t q = K->rowptr[bi]; q < K->rowptr[bi + 1]; q++)
            for (int c = 0; c < br; c++) {
                const int64_t j = (int64_t)K->colind[q] * br + c;
                const int64_t lo = hk_lower_bound_i32(P, 0, m, j); /* position of j in P */
                if (lo < m && P[lo] == j) M[(size_t)lo * m + a] = K->val[((size_t)q * br + r) * br + c];
            }
    }
    for (int64_t a = 0; a < m; a++)
        dgl[a] = M[(size_t)a * m + a];
    for (int64_t a = 0; a < m; a++)
        for (int64_t b = a + 1; b < m; b++) {
            const double x = M[(size_t)b * m + a], y = M[(size_t)a * m + b];
            if (fabs(x - y) > 1e-10 * (fmax(fabs(x), fabs(y)) + sqrt(fabs(dgl[a] * dgl[b]))))
                return HK_FAULT_ASYMMETRIC;
        }
    /* 2. Cholesky (left-looking, lower triangle) */
    return hk_dense_cholesky(m, M, 1, m, 0.0, NULL) >= 0 ? HK_FAULT_NOT_SPD : 0;
}

/* Steps 3-5 of fsai_factor for the row whose pattern is the first m entries of the pattern
 * factored in M (leading dimension ld >= m): w receives the scaled, filtered row (0 where
 * dropped), keep the kept flags; t: m work. */
static void fsai_solve(const double *M, int64_t ld, int64_t m, const double *dgl, double delta,
                       double *w, double *t, unsigned char *keep)
{
    /* 3. solve with e_m */
    for (int64_t a = 0; a < m - 1; a++)
        w[a] = 0;
    w[m - 1] = 1 / M[(size_t)(m - 1) * ld + (m - 1)];
    for (int64_t kk = m - 1; kk >= 0; kk--) {
        w[kk] = w[kk] / M[(size_t)kk * ld + kk];
        for (int64_t i = 0; i < kk; i++)
            w[i] -= M[(size_t)i * ld + kk] * w[kk];
    }
    /* 4. scaling */
    const double s = 1 / sqrt(w[m - 1]);
    double nrm = 0;
    for (int64_t a = 0; a < m; a++)
        w[a] *= s;
    for (int64_t a = 0; a < m; a++)
        nrm += w[a] * w[a];
    nrm = sqrt(nrm);
    /* 5. post-filtration; A_ab from the upper triangle, the diagonal from dgl */
    for (int64_t a = 0; a < m; a++)
        keep[a] = a == m - 1 || fabs(w[a]) > delta * nrm;
    for (int64_t a = 0; a < m; a++) {
        double ta = 0;
        if (!keep[a])
            for (int64_t b = 0; b < m; b++) {
                if (keep[b]) continue;
                const int64_t lo = a < b ? a : b, hi = a < b ? b : a;
                const double ab = a == b ? dgl[a] : M[(size_t)hi * ld + lo];
                ta += ab * w[b];
            }
        t[a] = ta;
    }
    double e = 0;
    for (int64_t a = 0; a < m; a++)
        if (!keep[a]) e += w[a] * t[a];
    const double sc = 1 / sqrt(1 + e);
    for (int64_t a = 0; a < m; a++)
        w[a] = keep[a] ? w[a] * sc : 0;
}

/* One FSAI row (steps 1-5 of fsai_factor). M: m*m work, w, t: m. Returns a fault reason or
 * 0; w receives the scaled, filtered row (0 where dropped), keep the kept flags. */
static int fsai_row(const hk_bmat *K, const int32_t *P, int64_t m, double delta, double *M,
                    double *dgl, double *w, double *t, unsigned char *keep)
{
    const int why = fsai_chol(K, P, m, M, dgl);
    if (!why) fsai_solve(M, m, m, dgl, delta, w, t, keep);
    return why;
}

/* Whether the rows of node I share one factor: each row's pattern is a prefix of the last
 * row's, ending at its own diagonal (pc.fsai.pattern=block, or a scalar pattern that keeps
 * whole node blocks). */
static int node_shares_factor(const hk_graph *S, int64_t I, int br)
{
    const int64_t last = I * br + br - 1, pl = S->rowptr[last];
    const int64_t ml = S->rowptr[last + 1] - pl;
    for (int r = 0; r < br; r++) {
        const int64_t i = I * br + r, p0 = S->rowptr[i], m = S->rowptr[i + 1] - p0;
        if (m < 1 || m > ml || S->colind[p0 + m - 1] != i) return 0;
        if (r < br - 1 && memcmp(S->colind + p0, S->colind + pl, (size_t)m * sizeof *S->colind))
            return 0;
    }
    return 1;
}

int hk_cpu_fsai_factor(const hk_bmat *K, const hk_graph *S, double delta, hk_bmat *G,
                       hk_setup_fault *fault)
{
    int ierr = 0;
    memset(G, 0, sizeof *G);
    fault->row = -1;
    fault->reason = HK_FAULT_NONE;
    const int64_t n = S->n;
    const int br = K->br;
    HK_CHECK(K->br == K->bc && n == K->nbrows * K->br, HK_ERR_ARG,
             "fsai_factor: the pattern has %lld rows, the matrix %lld", (long long)n,
             (long long)(K->nbrows * K->br));
    double *wall = NULL;
    unsigned char *keep = NULL;
    int64_t *cnt = NULL, mmax = 1;
    for (int64_t i = 0; i < n; i++)
        if (S->rowptr[i + 1] - S->rowptr[i] > mmax) mmax = S->rowptr[i + 1] - S->rowptr[i];
    HK_TRY(hk_malloc((size_t)(S->nnz ? S->nnz : 1) * sizeof *wall, &wall));
    HK_TRY(hk_malloc((size_t)(S->nnz ? S->nnz : 1), &keep));
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *cnt, &cnt));
#pragma omp parallel
    {
        double *M = malloc((size_t)mmax * mmax * sizeof *M);
        double *dgl = malloc((size_t)mmax * sizeof *dgl), *t = malloc((size_t)mmax * sizeof *t);
#pragma omp for schedule(dynamic, 16)
        for (int64_t I = 0; I < n / br; I++) {
            if (!M || !dgl || !t) {
                fault_min(fault, I * br, HK_FAULT_MEMORY);
                continue;
            }
            /* one Cholesky for the node's rows when they share it (the same numbers as one
             * per row), else row by row, which also names a failing row exactly */
            int shared = br > 1 && node_shares_factor(S, I, br);
            if (shared) {
                const int64_t last = I * br + br - 1;
                shared = !fsai_chol(K, S->colind + S->rowptr[last],
                                    S->rowptr[last + 1] - S->rowptr[last], M, dgl);
            }
            for (int r = 0; r < br; r++) {
                const int64_t i = I * br + r, p0 = S->rowptr[i], m = S->rowptr[i + 1] - p0;
                if (shared) {
                    const int64_t ld = S->rowptr[I * br + br] - S->rowptr[I * br + br - 1];
                    fsai_solve(M, ld, m, dgl, delta, wall + p0, t, keep + p0);
                } else {
                    if (m < 1 || S->colind[p0 + m - 1] != i) { /* the diagonal closes the row */
                        fault_min(fault, i, HK_FAULT_NOT_SPD);
                        continue;
                    }
                    int why =
                        fsai_row(K, S->colind + p0, m, delta, M, dgl, wall + p0, t, keep + p0);
                    if (why) {
                        fault_min(fault, i, why);
                        continue;
                    }
                }
                int64_t c = 0;
                for (int64_t a = 0; a < m; a++)
                    c += keep[p0 + a];
                cnt[i + 1] = c;
            }
        }
        free(M);
        free(dgl);
        free(t);
    }
    if (fault->row >= 0) goto fail;
    for (int64_t i = 0; i < n; i++)
        cnt[i + 1] += cnt[i];
    HK_TRY(hk_bmat_alloc(K->be, 1, 1, n, n, cnt[n], G));
    memcpy(G->rowptr, cnt, (size_t)(n + 1) * sizeof *cnt);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        int64_t q = G->rowptr[i];
        for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++)
            if (keep[p]) {
                G->colind[q] = S->colind[p];
                G->val[q++] = wall[p];
            }
    }
fail:
    free(wall);
    free(keep);
    free(cnt);
    return ierr;
}

int hk_cpu_sai_pattern(const hk_bmat *K, const hk_bmat *Kt, double tau, int colmax, hk_graph *St)
{
    int ierr = 0;
    memset(St, 0, sizeof *St);
    HK_CHECK(K->br == K->bc && Kt->br == 1 && Kt->bc == 1 && Kt->nbrows == K->nbcols * K->bc &&
                 K->nbrows * K->br == K->nbcols * K->bc,
             HK_ERR_ARG, "sai_pattern: K must be square and Kt its scalar transpose");
    const int br = K->br;
    const int64_t n = K->nbrows * br;
    double *amax = NULL;
    int64_t *len = NULL;
    HK_TRY(hk_calloc((size_t)(n ? n : 1), sizeof *amax, &amax));
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *len, &len));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double a = 0;
        if (colmax) { /* column i of A = row i of Kt */
            for (int64_t p = Kt->rowptr[i]; p < Kt->rowptr[i + 1]; p++)
                if (fabs(Kt->val[p]) > a) a = fabs(Kt->val[p]);
        } else {
            const int64_t bi = i / br, r = i % br;
            for (int64_t q = K->rowptr[bi]; q < K->rowptr[bi + 1]; q++)
                for (int c = 0; c < br; c++) {
                    const double v = fabs(K->val[((size_t)q * br + r) * br + c]);
                    if (v > a) a = v;
                }
        }
        amax[i] = a;
    }
    /* row k of St: column k of the pattern, from row k of Kt; the diagonal always */
    for (int pass = 0; pass < 2; pass++) {
#pragma omp parallel for schedule(static)
        for (int64_t kk = 0; kk < n; kk++) {
            int64_t c = 0, q0 = pass ? St->rowptr[kk] : 0;
            int diag = 0;
            for (int64_t p = Kt->rowptr[kk]; p < Kt->rowptr[kk + 1]; p++) {
                const int32_t i = Kt->colind[p];
                if (i > kk && !diag) {
                    if (pass) St->colind[q0 + c] = (int32_t)kk;
                    c++;
                    diag = 1;
                }
                if (i == kk || fabs(Kt->val[p]) > (1 - tau) * amax[colmax ? kk : i]) {
                    if (pass) St->colind[q0 + c] = i;
                    c++;
                    if (i == kk) diag = 1;
                }
            }
            if (!diag) {
                if (pass) St->colind[q0 + c] = (int32_t)kk;
                c++;
            }
            if (!pass) len[kk + 1] = c;
        }
        if (!pass) {
            for (int64_t i = 0; i < n; i++)
                len[i + 1] += len[i];
            HK_TRY(hk_graph_alloc(K->be, n, n, len[n], St));
            memcpy(St->rowptr, len, (size_t)(n + 1) * sizeof *len);
        }
    }
fail:
    free(amax);
    free(len);
    return ierr;
}

/* Sum of x_i y_i (y = NULL: x_i^2) over i = i0 .. m-1 in the warp order (see the head). */
static double sai_sum(const double *x, const double *y, int i0, int m)
{
    double p[32] = {0}, q[32];
    for (int i = i0; i < m; i++)
        p[(i - i0) & 31] += x[i] * (y ? y[i] : x[i]);
    for (int o = 16; o > 0; o >>= 1) {
        for (int l = 0; l < 32; l++)
            q[l] = p[l] + p[l ^ o];
        memcpy(p, q, sizeof p);
    }
    return p[0];
}

/* hk_dense_qr_ls with the sums in the warp order: min ||A x - b|| for m x n A (m >= n,
 * column-major); A and b are overwritten. Returns the rank-deficient column or -1. */
static int sai_qr_ls(int m, int n, double *A, double *b, double *x)
{
    double amax = 0;
    for (size_t k = 0; k < (size_t)m * n; k++)
        if (fabs(A[k]) > amax) amax = fabs(A[k]);
    for (int j = 0; j < n; j++) {
        double *v = A + (size_t)j * m;
        const double norm = sqrt(sai_sum(v, NULL, j, m));
        if (!(norm > 1e-14 * amax)) return j;
        const double alpha = v[j] >= 0 ? -norm : norm;
        v[j] = v[j] - alpha;
        const double vnorm2 = sai_sum(v, NULL, j, m);
        for (int k = j + 1; k <= n; k++) { /* k = n: the right-hand side */
            double *c = k < n ? A + (size_t)k * m : b;
            const double s = 2 * sai_sum(v, c, j, m) / vnorm2;
            for (int i = j; i < m; i++)
                c[i] -= s * v[i];
        }
        v[j] = alpha;
    }
    for (int j = n - 1; j >= 0; j--) {
        double s = b[j];
        for (int k = j + 1; k < n; k++)
            s -= A[(size_t)k * m + j] * x[k];
        x[j] = s / A[(size_t)j * m + j];
    }
    return -1;
}

/* Classical Gram-Schmidt as in the GSAI chapter (Fig. 5.4): for column j of the m x n A
 * (column-major), r_cj = q_c . a_j for c < j from the original a_j, u = a_j - sum_c r_cj q_c
 * (per entry in the order c = 0 .. j-1), r_jj = ||u||, q_j = u / r_jj in place of a_j (R
 * packed by columns: r_cj at j(j+1)/2 + c); then x = R^-1 Q^T e_p (e_p: the unit vector of
 * row p). Returns the rank-deficient column or -1. */
static int sai_cgs_ls(int m, int n, double *A, double *R, int p, double *x)
{
    double amax = 0;
    for (size_t k = 0; k < (size_t)m * n; k++)
        if (fabs(A[k]) > amax) amax = fabs(A[k]);
    for (int j = 0; j < n; j++) {
        double *a = A + (size_t)j * m, *rj = R + (size_t)j * (j + 1) / 2;
        for (int c = 0; c < j; c++)
            rj[c] = sai_sum(A + (size_t)c * m, a, 0, m);
        for (int c = 0; c < j; c++) {
            const double *q = A + (size_t)c * m;
            for (int i = 0; i < m; i++)
                a[i] -= rj[c] * q[i];
        }
        const double norm = sqrt(sai_sum(a, NULL, 0, m));
        if (!(norm > 1e-14 * amax)) return j;
        rj[j] = norm;
        for (int i = 0; i < m; i++)
            a[i] = a[i] / norm;
    }
    for (int j = n - 1; j >= 0; j--) {
        double s = A[(size_t)j * m + p]; /* (Q^T e_p)_j */
        for (int c = j + 1; c < n; c++)
            s -= R[(size_t)c * (c + 1) / 2 + j] * x[c];
        x[j] = s / R[(size_t)j * (j + 1) / 2 + j];
    }
    return -1;
}

int hk_cpu_sai_factor(const hk_bmat *Kt, const hk_graph *St, int64_t max_rows, int64_t max_cols,
                      int qr, hk_bmat *Mt, hk_setup_fault *fault)
{
    int ierr = 0;
    fault->row = -1;
    fault->reason = HK_FAULT_NONE;
    memset(Mt, 0, sizeof *Mt);
    const int64_t n = St->n;
    HK_CHECK(Kt->br == 1 && Kt->bc == 1 && Kt->nbrows == n, HK_ERR_ARG,
             "sai_factor: Kt must be the scalar transpose (1 x 1 blocks, %lld rows)",
             (long long)n);
    HK_CALL(hk_bmat_alloc(St->be, 1, 1, n, n, St->nnz, Mt));
    memcpy(Mt->rowptr, St->rowptr, (size_t)(n + 1) * sizeof *Mt->rowptr);
    if (St->nnz) memcpy(Mt->colind, St->colind, (size_t)St->nnz * sizeof *Mt->colind);
#pragma omp parallel
    {
        int32_t *loc = malloc((size_t)(n ? n : 1) * sizeof *loc);
        int32_t *rows = malloc((size_t)max_rows * sizeof *rows);
        double *Ah = malloc((size_t)max_rows * max_cols * sizeof *Ah);
        double *e = malloc((size_t)max_rows * sizeof *e), *m = malloc((size_t)max_cols * sizeof *m);
        double *R = qr == HK_SAI_GRAM_SCHMIDT
                        ? malloc((size_t)max_cols * (size_t)(max_cols + 1) / 2 * sizeof *R)
                        : NULL;
        const int ok = loc && rows && Ah && e && m && (qr != HK_SAI_GRAM_SCHMIDT || R);
        if (ok)
            for (int64_t i = 0; i < n; i++)
                loc[i] = -1;
#pragma omp for schedule(dynamic, 64)
        for (int64_t k = 0; k < n; k++) {
            int kind = ok ? 0 : HK_FAULT_MEMORY;
            const int64_t j0 = St->rowptr[k], n2 = St->rowptr[k + 1] - j0;
            int64_t n1 = 0;
            if (!kind && n2 > max_cols) kind = HK_FAULT_TOO_LARGE;
            /* I = rows where A(:, J) is nonzero, in order of first appearance; A(I, J) with
             * leading dimension max_rows */
            for (int64_t b = 0; !kind && b < n2; b++) {
                const int32_t j = St->colind[j0 + b];
                for (int64_t p = Kt->rowptr[j]; p < Kt->rowptr[j + 1]; p++) {
                    const int32_t i = Kt->colind[p];
                    if (loc[i] < 0) {
                        if (n1 == max_rows) {
                            kind = HK_FAULT_TOO_LARGE;
                            break;
                        }
                        loc[i] = (int32_t)n1;
                        rows[n1++] = i;
                        for (int64_t c = 0; c < n2; c++)
                            Ah[(size_t)c * max_rows + loc[i]] = 0;
                    }
                    Ah[(size_t)b * max_rows + loc[i]] = Kt->val[p];
                }
            }
            if (!kind) {
                for (int64_t c = 1; c < n2; c++)
                    memmove(Ah + (size_t)c * n1, Ah + (size_t)c * max_rows, (size_t)n1 * sizeof *Ah);
                int pk = -1; /* e_k(I) = 0 would give a zero column of M */
                for (int64_t a = 0; a < n1; a++) {
                    e[a] = rows[a] == k;
                    if (rows[a] == k) pk = (int)a;
                }
                if (pk < 0 || n1 < n2 ||
                    (qr == HK_SAI_GRAM_SCHMIDT ? sai_cgs_ls((int)n1, (int)n2, Ah, R, pk, m)
                                               : sai_qr_ls((int)n1, (int)n2, Ah, e, m)) >= 0)
                    kind = HK_FAULT_RANK;
            }
            if (ok)
                for (int64_t a = 0; a < n1; a++)
                    loc[rows[a]] = -1;
            if (kind) {
                fault_min(fault, k, kind);
                continue;
            }
            memcpy(Mt->val + j0, m, (size_t)n2 * sizeof *m);
        }
        free(loc), free(rows), free(Ah), free(e), free(m), free(R);
    }
    if (fault->row >= 0) hk_bmat_free(Mt);
    return ierr;
}

/* ---- adaptive pattern (pc.fsai.adaptive; CPU only) -----------------------------------------
 * Janna, Ferronato and Gambolati's adaptive FSAI: starting from S, per row i and for up to
 * `steps` rounds: g = the FSAI row on the current pattern P (fsai_row with delta = 0, so
 * diag(G A G^T) = 1), r_j = (A g)_j / sqrt(a_jj) for the columns j < i outside P (the gradient
 * of Kaplan's functional tr(G A G^T) in g_ij, scaled); the `rho` columns with the largest
 * |r_j| (ties: the smaller j) join P, unless the largest is <= eps, which ends the row. A row
 * reaching cap entries stops growing. Rows run in parallel; the result does not depend on
 * the schedule. */
int hk_cpu_fsai_adaptive(const hk_bmat *K, const hk_graph *S0, int steps, int rho, double eps,
                         int64_t cap, hk_graph *S, hk_setup_fault *fault)
{
    int ierr = 0;
    memset(S, 0, sizeof *S);
    fault->row = -1;
    fault->reason = HK_FAULT_NONE;
    const int64_t n = S0->n;
    const int br = K->br;
    HK_CHECK(K->be == &hk_backend_cpu && K->br == K->bc && n == K->nbrows * br, HK_ERR_ARG,
             "fsai adaptive pattern: K must be a square cpu matrix of %lld rows", (long long)n);
    int32_t **rows = NULL;
    int64_t *len = NULL;
    HK_TRY(hk_calloc((size_t)(n ? n : 1), sizeof *rows, &rows));
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *len, &len));
    const int64_t mcap = cap > 0 ? cap : 1;
#pragma omp parallel
    {
        double *M = malloc((size_t)mcap * mcap * sizeof *M);
        double *dgl = malloc((size_t)mcap * sizeof *dgl), *w = malloc((size_t)mcap * sizeof *w);
        double *t = malloc((size_t)mcap * sizeof *t), *acc = calloc((size_t)(n ? n : 1), sizeof *acc);
        unsigned char *keep = malloc((size_t)mcap), *inP = calloc((size_t)(n ? n : 1), 1);
        int32_t *touched = malloc((size_t)(n ? n : 1) * sizeof *touched);
        int32_t *best = malloc((size_t)(rho > 0 ? rho : 1) * sizeof *best);
        const int ok = M && dgl && w && t && acc && keep && inP && touched && best;
#pragma omp for schedule(dynamic, 16)
        for (int64_t i = 0; i < n; i++) {
            const int64_t p0 = S0->rowptr[i];
            int64_t m = S0->rowptr[i + 1] - p0;
            int32_t *P = ok && m <= mcap ? malloc((size_t)mcap * sizeof *P) : NULL;
            if (!P) {
                fault_min(fault, i, ok ? HK_FAULT_TOO_LARGE : HK_FAULT_MEMORY);
                continue;
            }
            memcpy(P, S0->colind + p0, (size_t)m * sizeof *P);
            for (int s = 0; s < steps && m < mcap; s++) {
                const int why = fsai_row(K, P, m, 0, M, dgl, w, t, keep);
                if (why) {
                    fault_min(fault, i, why);
                    break;
                }
                /* acc_j = (A g)_j over the columns j < i outside P, from the rows P[a] */
                for (int64_t a = 0; a < m; a++)
                    inP[P[a]] = 1;
                int64_t nt = 0;
                for (int64_t a = 0; a < m; a++) {
                    const int64_t bi = P[a] / br, r = P[a] % br;
                    for (int64_t q = K->rowptr[bi]; q < K->rowptr[bi + 1]; q++)
                        for (int c = 0; c < br; c++) {
                            const int64_t j = (int64_t)K->colind[q] * br + c;
                            if (j >= i || inP[j]) continue;
                            if (acc[j] == 0) touched[nt++] = (int32_t)j;
                            acc[j] += K->val[((size_t)q * br + r) * br + c] * w[a];
                            if (acc[j] == 0) acc[j] = 1e-300; /* stays listed once */
                        }
                }
                /* the rho largest scaled entries, ties to the smaller column */
                int nb = 0;
                double top = 0;
                for (int64_t x = 0; x < nt; x++) {
                    const int32_t j = touched[x];
                    const double v = fabs(acc[j]) / sqrt(bmat_entry(K, j, j));
                    if (v > top) top = v;
                    int pos = nb;
                    while (pos > 0) {
                        const int32_t o = best[pos - 1];
                        const double ov = fabs(acc[o]) / sqrt(bmat_entry(K, o, o));
                        if (ov > v || (ov == v && o < j)) break;
                        pos--;
                    }
                    if (pos < rho) {
                        const int end = nb < rho ? nb : rho - 1;
                        for (int y = end; y > pos; y--)
                            best[y] = best[y - 1];
                        best[pos] = j;
                        if (nb < rho) nb++;
                    }
                }
                for (int64_t x = 0; x < nt; x++)
                    acc[touched[x]] = 0;
                for (int64_t a = 0; a < m; a++)
                    inP[P[a]] = 0;
                if (nb == 0 || !(top > eps)) break;
                /* insert into the sorted P (the diagonal stays last: every new j < i) */
                for (int y = 0; y < nb && m < mcap; y++) {
                    int64_t pos = m;
                    while (pos > 0 && P[pos - 1] > best[y]) {
                        P[pos] = P[pos - 1];
                        pos--;
                    }
                    P[pos] = best[y];
                    m++;
                }
            }
            rows[i] = P;
            len[i + 1] = m;
        }
        free(M), free(dgl), free(w), free(t), free(acc), free(keep), free(inP), free(touched);
        free(best);
    }
    if (fault->row >= 0) goto fail;
    for (int64_t i = 0; i < n; i++)
        len[i + 1] += len[i];
    HK_TRY(hk_graph_alloc(K->be, n, n, len[n], S));
    memcpy(S->rowptr, len, (size_t)(n + 1) * sizeof *len);
    for (int64_t i = 0; i < n; i++)
        memcpy(S->colind + len[i], rows[i], (size_t)(len[i + 1] - len[i]) * sizeof *S->colind);
fail:
    for (int64_t i = 0; rows && i < n; i++)
        free(rows[i]);
    free(rows);
    free(len);
    return ierr;
}
