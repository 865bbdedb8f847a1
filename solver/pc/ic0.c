/* IC(0): incomplete Cholesky A ~ L L^T with the sparsity of the lower triangle of A (row by
 * row: l_ij = (a_ij - sum_{k<j} l_ik l_jk) / l_jj, l_ii = sqrt(a_ii - sum_k l_ik^2)), set up on
 * the host, exactly or (pc.ic0.sweeps > 0) by the fine-grained iterative method
 * (iterfact.c); optionally after a node reordering (pc.ordering); applied as two triangular
 * solves (L, then L^T) through the backend's tri ops (pc.tri). Reads the lower triangle only:
 * A must be symmetric. pc.ic0.block=1 factors block by block on the node blocks instead
 * (below) and hands the same triangular solves the factor expanded to scalar rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

/* ---- block IC(0) on the node blocks (pc.ic0.block=1) ------------------------------------
 *
 * Block rows i in order; for each stored block (i, j), j < i, by ascending j:
 *   L_ij = (A_ij - sum_{k<j} L_ik L_jk^T) L_jj^-T   over the k stored in both rows i and j,
 *   L_ii = chol(A_ii - sum_{k<i} L_ik L_ik^T)        (lower triangular),
 * blocks bs x bs, row-major. Expanded to scalar rows (the diagonal blocks' lower triangles),
 * L is lower triangular and L L^T = A on the stored blocks. */

/* S -= X Y^T */
static void block_sub_xyt(int bs, const double *X, const double *Y, double *S)
{
    for (int a = 0; a < bs; a++)
        for (int c = 0; c < bs; c++) {
            double s = 0;
            for (int d = 0; d < bs; d++)
                s += X[a * bs + d] * Y[c * bs + d];
            S[a * bs + c] -= s;
        }
}

/* In-place Cholesky of D's lower triangle; returns the first row whose pivot is not positive
 * and finite (*piv: its value), else -1. */
static int block_cholesky(int bs, double *D, double *piv)
{
    for (int c = 0; c < bs; c++) {
        double d = D[c * bs + c];
        for (int k = 0; k < c; k++)
            d -= D[c * bs + k] * D[c * bs + k];
        if (!(d > 0 && isfinite(d))) {
            *piv = d;
            return c;
        }
        D[c * bs + c] = sqrt(d);
        for (int a = c + 1; a < bs; a++) {
            double s = D[a * bs + c];
            for (int k = 0; k < c; k++)
                s -= D[a * bs + k] * D[c * bs + k];
            D[a * bs + c] = s / D[c * bs + c];
        }
        for (int a = 0; a < c; a++)
            D[a * bs + c] = 0; /* the strict upper triangle is not part of the factor */
    }
    return -1;
}

/* S := S L^-T for the lower triangular L: each row x of the result solves L x^T = s^T. */
static void block_solve_lt(int bs, const double *L, double *S)
{
    for (int a = 0; a < bs; a++)
        for (int c = 0; c < bs; c++) {
            double s = S[a * bs + c];
            for (int d = 0; d < c; d++)
                s -= L[c * bs + d] * S[a * bs + d];
            S[a * bs + c] = s / L[c * bs + c];
        }
}

/* The block IC(0) factor of Kf expanded into the scalar CSR Lc (diagonal last in each row). */
static int block_ic0(const hk_bcsr *Kf, int reordered, hk_csr *Lc)
{
    int ierr = 0;
    const int bs = Kf->bs, bb = bs * bs;
    const int64_t nb = Kf->nbrows;
    int64_t *rp = NULL, *mark = NULL;
    int32_t *ci = NULL;
    double *v = NULL;
    memset(Lc, 0, sizeof *Lc);
    /* the lower block pattern with the diagonal block last (zero where K stores none) */
    int64_t nnzb = nb;
    for (int64_t i = 0; i < nb; i++)
        for (int64_t p = Kf->rowptr[i]; p < Kf->rowptr[i + 1]; p++)
            nnzb += Kf->colind[p] < i;
    HK_TRY(hk_malloc((size_t)(nb + 1) * sizeof *rp, &rp));
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * sizeof *ci, &ci));
    HK_TRY(hk_calloc((size_t)(nnzb ? nnzb : 1) * bb, sizeof *v, &v));
    HK_TRY(hk_malloc((size_t)(nb ? nb : 1) * sizeof *mark, &mark));
    for (int64_t i = 0; i < nb; i++)
        mark[i] = -1;
    rp[0] = 0;
    for (int64_t i = 0; i < nb; i++) {
        int64_t q = rp[i];
        int64_t pd = -1;
        for (int64_t p = Kf->rowptr[i]; p < Kf->rowptr[i + 1] && Kf->colind[p] <= i; p++) {
            const int32_t j = Kf->colind[p];
            if (j == i) {
                pd = p;
                continue;
            }
            ci[q] = j; /* A_ij; mark: where block j sits in row i */
            memcpy(v + q * bb, Kf->val + p * bb, (size_t)bb * sizeof *v);
            mark[j] = q++;
        }
        const int64_t dq = q;
        ci[dq] = (int32_t)i;
        if (pd >= 0) memcpy(v + dq * bb, Kf->val + pd * bb, (size_t)bb * sizeof *v);
        rp[i + 1] = dq + 1;
        for (int64_t e = rp[i]; e < dq; e++) {
            const int32_t j = ci[e];
            const int64_t jd = rp[j + 1] - 1;
            for (int64_t f = rp[j]; f < jd; f++) /* k = ci[f] < j: L_ik is final already */
                if (mark[ci[f]] >= 0)
                    block_sub_xyt(bs, v + mark[ci[f]] * bb, v + f * bb, v + e * bb);
            block_solve_lt(bs, v + jd * bb, v + e * bb);
            block_sub_xyt(bs, v + e * bb, v + e * bb, v + dq * bb);
        }
        double piv = 0;
        const int bad = block_cholesky(bs, v + dq * bb, &piv);
        HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                     "preconditioner ic0 (pc.ic0.block=1): the pivot block of node %lld%s is not "
                     "positive definite (pivot %g in its row %d, scalar row %lld); the matrix is "
                     "not SPD or block IC(0) breaks down - use pc=jacobi, pc=fsai or pc=ilu0 "
                     "with method=gmres",
                     (long long)i, reordered ? " of the reordered matrix" : "", piv, bad,
                     (long long)(i * bs + bad));
        for (int64_t e = rp[i]; e < dq; e++)
            mark[ci[e]] = -1;
    }
    /* scalar rows: the off-diagonal blocks' rows, then the diagonal block's lower triangle */
    HK_TRY(hk_csr_alloc(nb * bs, nb * bs, (nnzb - nb) * bb + nb * bs * (bs + 1) / 2, Lc));
    int64_t q = 0;
    for (int64_t i = 0; i < nb; i++)
        for (int a = 0; a < bs; a++) {
            for (int64_t e = rp[i]; e < rp[i + 1]; e++)
                for (int c = 0; c < bs && (ci[e] < i || c <= a); c++) {
                    Lc->colind[q] = (int32_t)(ci[e] * bs + c);
                    Lc->val[q++] = v[e * bb + a * bs + c];
                }
            Lc->rowptr[i * bs + a + 1] = q;
        }
fail:
    free(rp);
    free(ci);
    free(v);
    free(mark);
    return ierr;
}

static int ic0_setup_host(hk_pc *pc, const hk_bcsr *K, hk_mat *A, hk_options *o)
{
    int ierr = 0;
    hk_csr F = {0}, Lc = {0}, Ut = {0};
    hk_trifactor L = {0}, U = {0};
    hk_bcsr Kp = {0};
    const hk_bcsr *Kf = K;
    double *w = NULL;
    int sweeps = 0, block = 0;
    HK_CALL(hk_options_get_int(o, "pc.ic0.sweeps", &sweeps));
    HK_CALL(hk_options_get_int(o, "pc.ic0.block", &block));
    HK_CHECK(sweeps >= 0, HK_ERR_OPTION,
             "option pc.ic0.sweeps=%d is negative; use 0 (exact factorisation, the default) or "
             "a number of sweeps such as 3",
             sweeps);
    HK_CHECK(block == 0 || block == 1, HK_ERR_OPTION,
             "option pc.ic0.block=%d is not 0 or 1; use 1 to factor on the node blocks, 0 "
             "(the default) for the scalar factorisation",
             block);
    HK_CHECK(!(block && sweeps > 0), HK_ERR_OPTION,
             "options pc.ic0.block=1 and pc.ic0.sweeps=%d do not combine (the sweeps are "
             "scalar); drop one of them",
             sweeps);
    HK_CALL(hk_tri_pc_begin(pc, "ic0", K, o, &Kp, &Kf));
    HK_TRY(hk_csr_from_bcsr(Kf, &F));
    HK_TRY(hk_csr_check_symmetric(&F, "ic0"));
    const int64_t n = F.n;
    if (block) {
        HK_TRY(block_ic0(Kf, Kf != K, &Lc));
        goto factored;
    }
    if (sweeps > 0) {
        int64_t bad = -1;
        HK_TRY(hk_ic0_sweeps(pc->be, &F, sweeps, &Lc, &bad));
        HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                     "preconditioner ic0: zero or non-positive pivot at row %lld after %d "
                     "sweeps%s; the matrix is not SPD or IC(0) breaks down - use pc=jacobi, "
                     "pc=fsai, more sweeps or pc.ic0.sweeps=0",
                     (long long)bad, sweeps, Kf != K ? " (row of the reordered matrix)" : "");
        goto factored;
    }
    /* lower triangle of A, diagonal last in each row */
    int64_t nnz = 0;
    for (int64_t k = 0; k < F.rowptr[n]; k++)
        nnz += 1; /* upper bound */
    HK_TRY(hk_csr_alloc(n, n, nnz, &Lc));
    HK_TRY(hk_calloc((size_t)(n ? n : 1), sizeof *w, &w));
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t start = q;
        double aii = 0;
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++) {
            const int32_t j = F.colind[k];
            if (j < i) {
                /* l_ij = (a_ij - sum_{k<j} l_ik l_jk) / l_jj; w holds l_i* computed so far */
                double s = F.val[k];
                const int64_t jd = Lc.rowptr[j + 1] - 1; /* diagonal of row j */
                for (int64_t kk = Lc.rowptr[j]; kk < jd; kk++)
                    s -= w[Lc.colind[kk]] * Lc.val[kk];
                const double l = s / Lc.val[jd];
                w[j] = l;
                Lc.colind[q] = j;
                Lc.val[q++] = l;
            } else if (j == i) {
                aii = F.val[k];
            }
        }
        double d = aii;
        for (int64_t kk = start; kk < q; kk++)
            d -= Lc.val[kk] * Lc.val[kk];
        HK_TRY_CHECK(d > 0 && isfinite(d), HK_ERR_NUMERIC,
                     "preconditioner ic0: non-positive pivot %g at row %lld%s (diagonal %g); "
                     "the matrix is not SPD or IC(0) breaks down - use pc=jacobi, pc=fsai or "
                     "pc=ilu0 with method=gmres",
                     d, (long long)i, Kf != K ? " of the reordered matrix" : "", aii);
        Lc.colind[q] = (int32_t)i;
        Lc.val[q++] = sqrt(d);
        Lc.rowptr[i + 1] = q;
        for (int64_t kk = start; kk < q; kk++)
            w[Lc.colind[kk]] = 0;
    }
factored:
    HK_TRY(hk_csr_transpose(&Lc, &Ut));
    HK_TRY(hk_trifactor_from_csr(&Lc, 0, 0, &L));
    HK_TRY(hk_trifactor_from_csr(&Ut, 1, 0, &U));
    HK_TRY(hk_tri_pc_create(pc, "ic0", &L, &U));
fail:
    hk_csr_free(&F);
    hk_csr_free(&Lc);
    hk_csr_free(&Ut);
    hk_trifactor_free(&L);
    hk_trifactor_free(&U);
    hk_bcsr_free(&Kp);
    free(w);
    return ierr;
}

/* Set-up still runs on the host: K is copied back from the backend first. */
static int ic0_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    return hk_pc_setup_on_host(pc, K, A, o, ic0_setup_host);
}

const hk_pc_type hk_pc_ic0 = {
    .name = "ic0",
    .summary = "incomplete Cholesky, zero fill; sync-free or level-scheduled triangular solves",
    .options = "pc.tri pc.ordering pc.ic0.sweeps pc.ic0.block",
    .symmetric = 1,
    .setup = ic0_setup,
    .apply = hk_tri_pc_apply,
    .destroy = hk_tri_pc_destroy,
    .describe = hk_tri_pc_describe,
};
