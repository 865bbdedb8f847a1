/* ILU(0): incomplete LU with the sparsity of A (Saad, Iterative Methods, Algorithm 10.4, IKJ
 * order), set up on the host, exactly or (pc.ilu0.sweeps > 0) by the fine-grained iterative
 * method (iterfact.c); optionally after a node reordering (pc.ordering); applied as two
 * triangular solves through the backend's tri ops (unit lower L, then U; pc.tri). For
 * nonsymmetric matrices with BiCGStab/GMRES. pc.ilu0.block=1 factors block by block on the
 * node blocks instead (below) and hands the same solves the factors expanded to scalar rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

/* ---- block ILU(0) on the node blocks (pc.ilu0.block=1) ----------------------------------
 *
 * Block IKJ order on the block pattern of A (no fill outside it), blocks bs x bs, row-major:
 * for block row i and each stored (i, j), j < i, by ascending j:
 *   L_ij = A_ij D_j^-1,   A_ik -= L_ij U_jk   for the k > j stored in both rows i and j,
 * then the pivot block D_i = A_ii is factored D_i = l_i u_i (LU without pivoting, l_i unit
 * lower). With Lambda = blockdiag(l_i), the scalar factors are L = L_B Lambda (blocks
 * L_ij l_j, diagonal blocks l_i: unit lower) and U = Lambda^-1 U_B (blocks l_i^-1 U_ij,
 * diagonal blocks u_i): L U = L_B U_B, in the unit-lower-L convention of the scalar ILU(0). */

/* In-place LU without pivoting (unit l below the diagonal, u on and above); returns the first
 * row whose pivot is zero (|u_cc| <= tiny) or not finite (*piv: its value), else -1. */
static int block_lu(int bs, double *D, double tiny, double *piv)
{
    for (int c = 0; c < bs; c++) {
        const double d = D[c * bs + c];
        if (!(isfinite(d) && fabs(d) > tiny)) {
            *piv = d;
            return c;
        }
        for (int a = c + 1; a < bs; a++) {
            const double l = D[a * bs + c] / d;
            D[a * bs + c] = l;
            for (int e = c + 1; e < bs; e++)
                D[a * bs + e] -= l * D[c * bs + e];
        }
    }
    return -1;
}

/* S := S u^-1 (u: the upper triangle of the LU F): each row y of the result solves y u = s. */
static void block_solve_u_right(int bs, const double *F, double *S)
{
    for (int a = 0; a < bs; a++)
        for (int c = 0; c < bs; c++) {
            double s = S[a * bs + c];
            for (int d = 0; d < c; d++)
                s -= S[a * bs + d] * F[d * bs + c];
            S[a * bs + c] = s / F[c * bs + c];
        }
}

/* S := S l^-1 (l: the unit lower triangle of F): each row x solves x l = s, last column first. */
static void block_solve_l_right(int bs, const double *F, double *S)
{
    for (int a = 0; a < bs; a++)
        for (int c = bs - 1; c >= 0; c--) {
            double s = S[a * bs + c];
            for (int d = c + 1; d < bs; d++)
                s -= S[a * bs + d] * F[d * bs + c];
            S[a * bs + c] = s;
        }
}

/* S := l^-1 S (l: the unit lower triangle of F), row by row from the top. */
static void block_solve_l_left(int bs, const double *F, double *S)
{
    for (int a = 1; a < bs; a++)
        for (int d = 0; d < a; d++)
            for (int c = 0; c < bs; c++)
                S[a * bs + c] -= F[a * bs + d] * S[d * bs + c];
}

/* S -= X Y */
static void block_sub_xy(int bs, const double *X, const double *Y, double *S)
{
    for (int a = 0; a < bs; a++)
        for (int c = 0; c < bs; c++) {
            double s = 0;
            for (int d = 0; d < bs; d++)
                s += X[a * bs + d] * Y[d * bs + c];
            S[a * bs + c] -= s;
        }
}

/* The block ILU(0) of Kf written into F, the scalar CSR of Kf (same pattern): L strictly
 * below the diagonal (unit diagonal implied), U on and above. */
static int block_ilu0(const hk_bcsr *Kf, int reordered, hk_csr *F)
{
    int ierr = 0;
    const int bs = Kf->bs, bb = bs * bs;
    const int64_t nb = Kf->nbrows;
    hk_bcsr B = {0};
    int64_t *diag = NULL, *mark = NULL;
    double *tmp = NULL;
    HK_TRY(hk_bcsr_copy(Kf, &B));
    HK_TRY(hk_malloc((size_t)(nb ? nb : 1) * sizeof *diag, &diag));
    HK_TRY(hk_malloc((size_t)(nb ? nb : 1) * sizeof *mark, &mark));
    HK_TRY(hk_malloc((size_t)bb * sizeof *tmp, &tmp));
    for (int64_t i = 0; i < nb; i++) {
        mark[i] = -1;
        diag[i] = -1;
        for (int64_t p = B.rowptr[i]; p < B.rowptr[i + 1]; p++)
            if (B.colind[p] == i) diag[i] = p;
        HK_TRY_CHECK(diag[i] >= 0, HK_ERR_NUMERIC,
                     "preconditioner ilu0 (pc.ilu0.block=1): node %lld%s has no diagonal block, "
                     "so block ILU(0) has no pivot there; reorder the unknowns or use pc=sai",
                     (long long)i, reordered ? " of the reordered matrix" : "");
    }
    for (int64_t i = 0; i < nb; i++) {
        double rowmax = 0;
        for (int64_t p = B.rowptr[i]; p < B.rowptr[i + 1]; p++) {
            mark[B.colind[p]] = p;
            for (int e = 0; e < bb; e++)
                if (fabs(B.val[p * bb + e]) > rowmax) rowmax = fabs(B.val[p * bb + e]);
        }
        for (int64_t p = B.rowptr[i]; p < B.rowptr[i + 1] && B.colind[p] < i; p++) {
            const int32_t j = B.colind[p];
            double *X = B.val + p * bb, *Dj = B.val + diag[j] * bb;
            block_solve_u_right(bs, Dj, X); /* X = A_ij D_j^-1 = A_ij u_j^-1 l_j^-1 */
            block_solve_l_right(bs, Dj, X);
            for (int64_t pp = diag[j] + 1; pp < B.rowptr[j + 1]; pp++) {
                const int64_t m = mark[B.colind[pp]];
                if (m >= 0) block_sub_xy(bs, X, B.val + pp * bb, B.val + m * bb);
            }
        }
        double piv = 0;
        const int bad = block_lu(bs, B.val + diag[i] * bb, 1e-14 * rowmax, &piv);
        HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                     "preconditioner ilu0 (pc.ilu0.block=1): the pivot block of node %lld%s is "
                     "singular or needs pivoting (zero pivot %g in its row %d, scalar row %lld, "
                     "of its LU); reorder the unknowns or use pc=sai",
                     (long long)i, reordered ? " of the reordered matrix" : "", piv, bad,
                     (long long)(i * bs + bad));
        for (int64_t p = B.rowptr[i]; p < B.rowptr[i + 1]; p++)
            mark[B.colind[p]] = -1;
    }
    /* scalar blocks: L_ij l_j below, l_i (unit) / u_i on the diagonal, l_i^-1 U_ij above */
    for (int64_t i = 0; i < nb; i++) {
        const double *Di = B.val + diag[i] * bb;
        for (int64_t p = B.rowptr[i]; p < B.rowptr[i + 1]; p++) {
            const int32_t j = B.colind[p];
            if (j < i) {
                const double *Dj = B.val + diag[j] * bb;
                for (int a = 0; a < bs; a++)
                    for (int c = 0; c < bs; c++) {
                        double s = B.val[p * bb + a * bs + c];
                        for (int d = c + 1; d < bs; d++)
                            s += B.val[p * bb + a * bs + d] * Dj[d * bs + c];
                        tmp[a * bs + c] = s;
                    }
            } else {
                memcpy(tmp, B.val + p * bb, (size_t)bb * sizeof *tmp);
                if (j > i) block_solve_l_left(bs, Di, tmp);
            }
            for (int a = 0; a < bs; a++) {
                /* row i*bs + a of F holds the blocks in order, bs entries each */
                const int64_t at = F->rowptr[i * bs + a] + (p - B.rowptr[i]) * bs;
                memcpy(F->val + at, tmp + a * bs, (size_t)bs * sizeof *tmp);
            }
        }
    }
fail:
    hk_bcsr_free(&B);
    free(diag);
    free(mark);
    free(tmp);
    return ierr;
}

static int ilu0_setup_host(hk_pc *pc, const hk_bcsr *K, hk_mat *A, hk_options *o)
{
    int ierr = 0;
    hk_csr F = {0};
    hk_trifactor L = {0}, U = {0};
    hk_bcsr Kp = {0};
    const hk_bcsr *Kf = K;
    int64_t *diag = NULL, *marker = NULL;
    int sweeps = 0, block = 0;
    HK_CALL(hk_options_get_int(o, "pc.ilu0.sweeps", &sweeps));
    HK_CALL(hk_options_get_int(o, "pc.ilu0.block", &block));
    HK_CHECK(sweeps >= 0, HK_ERR_OPTION,
             "option pc.ilu0.sweeps=%d is negative; use 0 (exact factorisation, the default) "
             "or a number of sweeps such as 3",
             sweeps);
    HK_CHECK(block == 0 || block == 1, HK_ERR_OPTION,
             "option pc.ilu0.block=%d is not 0 or 1; use 1 to factor on the node blocks, 0 "
             "(the default) for the scalar factorisation",
             block);
    HK_CHECK(!(block && sweeps > 0), HK_ERR_OPTION,
             "options pc.ilu0.block=1 and pc.ilu0.sweeps=%d do not combine (the sweeps are "
             "scalar); drop one of them",
             sweeps);
    HK_CALL(hk_tri_pc_begin(pc, "ilu0", K, o, &Kp, &Kf));
    HK_TRY(hk_csr_from_bcsr(Kf, &F));
    const int64_t n = F.n;
    if (block) {
        HK_TRY(block_ilu0(Kf, Kf != K, &F));
        goto factored;
    }
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *diag, &diag));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *marker, &marker));
    for (int64_t i = 0; i < n; i++) {
        marker[i] = -1;
        diag[i] = -1;
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++)
            if (F.colind[k] == i) diag[i] = k;
        HK_TRY_CHECK(diag[i] >= 0, HK_ERR_NUMERIC,
                     "preconditioner ilu0: row %lld has no diagonal entry, so ILU(0) has a zero "
                     "pivot there; reorder the unknowns or use pc=sai",
                     (long long)i);
    }
    if (sweeps > 0) {
        int64_t bad = -1;
        HK_TRY(hk_ilu0_sweeps(pc->be, &F, sweeps, &bad));
        HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                     "preconditioner ilu0: zero pivot at row %lld after %d sweeps%s; reorder "
                     "the unknowns, use more sweeps, pc.ilu0.sweeps=0 or pc=sai",
                     (long long)bad, sweeps, Kf != K ? " (row of the reordered matrix)" : "");
    }
    for (int64_t i = 0; i < n && sweeps == 0; i++) {
        double rowmax = 0;
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++) {
            marker[F.colind[k]] = k;
            if (fabs(F.val[k]) > rowmax) rowmax = fabs(F.val[k]);
        }
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1] && F.colind[k] < i; k++) {
            const int32_t j = F.colind[k];
            const double l = F.val[k] / F.val[diag[j]];
            F.val[k] = l;
            for (int64_t kk = diag[j] + 1; kk < F.rowptr[j + 1]; kk++) {
                int64_t m = marker[F.colind[kk]];
                if (m >= 0) F.val[m] -= l * F.val[kk];
            }
        }
        const double piv = F.val[diag[i]];
        HK_TRY_CHECK(isfinite(piv) && fabs(piv) > 1e-14 * rowmax, HK_ERR_NUMERIC,
                     "preconditioner ilu0: zero pivot %g at row %lld (the incomplete "
                     "factorisation breaks down there); reorder the unknowns or use pc=sai",
                     piv, (long long)i);
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++)
            marker[F.colind[k]] = -1;
    }
factored:
    HK_TRY(hk_trifactor_from_csr(&F, 0, 1, &L));
    HK_TRY(hk_trifactor_from_csr(&F, 1, 0, &U));
    HK_TRY(hk_tri_pc_create(pc, "ilu0", &L, &U));
fail:
    hk_csr_free(&F);
    hk_trifactor_free(&L);
    hk_trifactor_free(&U);
    free(diag);
    free(marker);
    hk_bcsr_free(&Kp);
    return ierr;
}

/* Set-up still runs on the host: K is copied back from the backend first. */
static int ilu0_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    return hk_pc_setup_on_host(pc, K, A, o, ilu0_setup_host);
}

const hk_pc_type hk_pc_ilu0 = {
    .name = "ilu0",
    .summary = "incomplete LU, zero fill; sync-free or level-scheduled triangular solves",
    .options = "pc.tri pc.ordering pc.ilu0.sweeps pc.ilu0.block",
    .symmetric = 0,
    .setup = ilu0_setup,
    .apply = hk_tri_pc_apply,
    .destroy = hk_tri_pc_destroy,
    .describe = hk_tri_pc_describe,
};
