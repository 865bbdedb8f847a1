/* The CPU backend's set-up ops of pc=ic0 and pc=ilu0 (contracts in solver/hk_impl.h,
 * registered in solver/cpu/cpu_backend.c): the symmetric node permutation, the symmetry check,
 * the exact IC(0) / ILU(0) on scalar rows or node blocks (the triangular-solve set-up from a
 * factor is in tri_cpu.c). These are the references the CUDA versions (cuda/cuda_factor.cu)
 * follow sum for sum. The backend's memory is host memory, so hk_bmat arrays are read here
 * directly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "factor_block.h"
#include "pc_impl.h"

static hk_bcsr bcsr_view(const hk_bmat *A)
{
    hk_bcsr v = {.bs = A->br,
                 .nbrows = A->nbrows,
                 .nbcols = A->nbcols,
                 .rowptr = A->rowptr,
                 .colind = A->colind,
                 .val = A->val};
    return v;
}

/* ---- permutation and symmetry ---------------------------------------------------------- */

int hk_cpu_bmat_permute(const hk_bmat *A, const int32_t *perm, hk_bmat *P)
{
    memset(P, 0, sizeof *P);
    HK_CHECK(A->br == A->bc && A->nbrows == A->nbcols, HK_ERR_ARG,
             "bmat_permute: the matrix must be square with square blocks");
    const hk_bcsr v = bcsr_view(A);
    hk_bcsr H = {0};
    HK_CALL(hk_bcsr_permute(&v, perm, &H));
    int ierr = hk_bmat_upload(A->be, &H, P);
    hk_bcsr_free(&H);
    return ierr;
}

int hk_cpu_bmat_sym_check(const hk_bmat *A, const hk_bmat *T, hk_factor_fault *f)
{
    memset(f, 0, sizeof *f);
    f->row = -1;
    HK_CHECK(A->br == 1 && A->bc == 1 && T->br == 1 && T->bc == 1 && A->nbrows == A->nbcols &&
                 T->nbrows == A->nbrows,
             HK_ERR_ARG, "bmat_sym_check: A and its transpose T must be square, 1 x 1 blocks");
    const int64_t n = A->nbrows;
    double *d = NULL;
    HK_CALL(hk_calloc((size_t)(n ? n : 1), sizeof *d, &d));
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (A->colind[p] == i) d[i] = fabs(A->val[p]);
    /* same values row by row (both have sorted columns); an entry missing on one side is 0.
     * Round-off of the assembly (1e-17 against an exact 0) is not asymmetry: the tolerance is
     * relative to the entries and to the scale sqrt(|a_ii a_jj|) of the pair. */
    for (int64_t i = 0; i < n && f->row < 0; i++) {
        int64_t p = A->rowptr[i], q = T->rowptr[i];
        while (p < A->rowptr[i + 1] || q < T->rowptr[i + 1]) {
            const int32_t ca = p < A->rowptr[i + 1] ? A->colind[p] : INT32_MAX;
            const int32_t ct = q < T->rowptr[i + 1] ? T->colind[q] : INT32_MAX;
            const int32_t c = ca < ct ? ca : ct;
            double a = 0, t = 0; /* A(i, c) and A(c, i) */
            if (ca == c) a = A->val[p++];
            if (ct == c) t = T->val[q++];
            if (fabs(a - t) > 1e-10 * (fmax(fabs(a), fabs(t)) + sqrt(d[i] * d[c]))) {
                f->row = i;
                f->col = c;
                f->reason = HK_FACTOR_ASYMMETRIC;
                f->v[0] = a;
                f->v[1] = t;
                break;
            }
        }
    }
    free(d);
    return 0;
}

/* ---- scalar IC(0) and ILU(0) ---------------------------------------------------------------
 *
 * IC(0), row by row: l_ij = (a_ij - sum_{k<j} l_ik l_jk) / l_jj over row j's entries in
 * ascending k (l_ik = 0 where row i has no entry k), l_ii = sqrt(a_ii - sum_k l_ik^2) in
 * ascending k. ILU(0), IKJ order (Saad, Algorithm 10.4): for the entries j < i of row i in
 * ascending j, l_ij = a_ij / u_jj, then a_ik -= l_ij u_jk for the k > j of row j present in
 * row i; the pivot is bad when it is not finite or |u_ii| <= 1e-14 max_k |a_ik| (the row's
 * original entries). */

static int ic0_scalar(const hk_bmat *A, hk_bmat *L, hk_factor_fault *f)
{
    int ierr = 0;
    const int64_t n = A->nbrows;
    double *w = NULL;
    int64_t nnz = n;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            nnz += A->colind[k] < i;
    HK_CALL(hk_bmat_alloc(A->be, 1, 1, n, n, nnz, L));
    HK_TRY(hk_calloc((size_t)(n ? n : 1), sizeof *w, &w));
    int64_t q = 0;
    L->rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t start = q;
        double aii = 0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            const int32_t j = A->colind[k];
            if (j < i) {
                /* w holds l_i* computed so far */
                double s = A->val[k];
                const int64_t jd = L->rowptr[j + 1] - 1; /* diagonal of row j */
                for (int64_t kk = L->rowptr[j]; kk < jd; kk++)
                    s -= w[L->colind[kk]] * L->val[kk];
                const double l = s / L->val[jd];
                w[j] = l;
                L->colind[q] = j;
                L->val[q++] = l;
            } else if (j == i) {
                aii = A->val[k];
            }
        }
        double d = aii;
        for (int64_t kk = start; kk < q; kk++)
            d -= L->val[kk] * L->val[kk];
        if (!(d > 0 && isfinite(d))) {
            f->row = i;
            f->reason = HK_FACTOR_PIVOT;
            f->v[0] = d;
            f->v[1] = aii;
            goto fail;
        }
        L->colind[q] = (int32_t)i;
        L->val[q++] = sqrt(d);
        L->rowptr[i + 1] = q;
        for (int64_t kk = start; kk < q; kk++)
            w[L->colind[kk]] = 0;
    }
fail:
    free(w);
    if (ierr || f->row >= 0) hk_bmat_free(L);
    return ierr;
}

/* A pivot block that failed: node i, its row sub, the pivot's value piv. */
static void pivot_fault(hk_factor_fault *f, int64_t i, int sub, double piv)
{
    f->row = i;
    f->sub = sub;
    f->reason = HK_FACTOR_PIVOT;
    f->v[0] = piv;
}

/* ILU(0)'s start, scalar and block alike: diag[i] the position of row i's diagonal entry
 * and mark[i] = -1; a row without one is recorded in f (HK_FACTOR_NO_DIAG) and returns 1. */
static int diag_positions(int64_t n, const int64_t *rowptr, const int32_t *colind, int64_t *diag,
                          int64_t *mark, hk_factor_fault *f)
{
    for (int64_t i = 0; i < n; i++) {
        mark[i] = -1;
        diag[i] = -1;
        for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
            if (colind[k] == i) diag[i] = k;
        if (diag[i] < 0) {
            f->row = i;
            f->reason = HK_FACTOR_NO_DIAG;
            return 1;
        }
    }
    return 0;
}

static int ilu0_scalar(const hk_bmat *A, hk_bmat *F, hk_factor_fault *f)
{
    int ierr = 0;
    const int64_t n = A->nbrows, nnz = A->nnzb;
    int64_t *diag = NULL, *marker = NULL;
    HK_CALL(hk_bmat_alloc(A->be, 1, 1, n, n, nnz, F));
    memcpy(F->rowptr, A->rowptr, (size_t)(n + 1) * sizeof *F->rowptr);
    if (nnz) {
        memcpy(F->colind, A->colind, (size_t)nnz * sizeof *F->colind);
        memcpy(F->val, A->val, (size_t)nnz * sizeof *F->val);
    }
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *diag, &diag));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *marker, &marker));
    if (diag_positions(n, F->rowptr, F->colind, diag, marker, f)) goto fail;
    for (int64_t i = 0; i < n; i++) {
        double rowmax = 0;
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++) {
            marker[F->colind[k]] = k;
            if (fabs(F->val[k]) > rowmax) rowmax = fabs(F->val[k]);
        }
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1] && F->colind[k] < i; k++) {
            const int32_t j = F->colind[k];
            const double l = F->val[k] / F->val[diag[j]];
            F->val[k] = l;
            for (int64_t kk = diag[j] + 1; kk < F->rowptr[j + 1]; kk++) {
                const int64_t m = marker[F->colind[kk]];
                if (m >= 0) F->val[m] -= l * F->val[kk];
            }
        }
        const double piv = F->val[diag[i]];
        if (!(isfinite(piv) && fabs(piv) > 1e-14 * rowmax)) {
            f->row = i;
            f->reason = HK_FACTOR_PIVOT;
            f->v[0] = piv;
            goto fail;
        }
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++)
            marker[F->colind[k]] = -1;
    }
fail:
    free(diag);
    free(marker);
    if (ierr || f->row >= 0) hk_bmat_free(F);
    return ierr;
}

/* ---- block IC(0) on the node blocks -------------------------------------------------------
 *
 * Block rows i in order; for each stored block (i, j), j < i, by ascending j:
 *   L_ij = (A_ij - sum_{k<j} L_ik L_jk^T) L_jj^-T   over the k stored in both rows i and j
 *                                                   (ascending k, row j's order),
 *   L_ii = chol(A_ii - sum_{j<i} L_ij L_ij^T)        (lower triangular; ascending j),
 * blocks bs x bs, row-major. Expanded to scalar rows (the diagonal blocks' lower triangles),
 * L is lower triangular and L L^T = A on the stored blocks. */

static int ic0_block(const hk_bmat *A, hk_bmat *Lout, hk_factor_fault *f)
{
    int ierr = 0;
    const int bs = A->br, bb = bs * bs;
    const int64_t nb = A->nbrows;
    int64_t *rp = NULL, *mark = NULL;
    int32_t *ci = NULL;
    double *v = NULL;
    hk_csr Lc = {0};
    /* the lower block pattern with the diagonal block last (zero where A stores none) */
    int64_t nnzb = nb;
    for (int64_t i = 0; i < nb; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            nnzb += A->colind[p] < i;
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
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1] && A->colind[p] <= i; p++) {
            const int32_t j = A->colind[p];
            if (j == i) {
                pd = p;
                continue;
            }
            ci[q] = j; /* A_ij; mark: where block j sits in row i */
            memcpy(v + q * bb, A->val + p * bb, (size_t)bb * sizeof *v);
            mark[j] = q++;
        }
        const int64_t dq = q;
        ci[dq] = (int32_t)i;
        if (pd >= 0) memcpy(v + dq * bb, A->val + pd * bb, (size_t)bb * sizeof *v);
        rp[i + 1] = dq + 1;
        for (int64_t e = rp[i]; e < dq; e++) {
            const int32_t j = ci[e];
            const int64_t jd = rp[j + 1] - 1;
            for (int64_t g = rp[j]; g < jd; g++) /* k = ci[g] < j: L_ik is final already */
                if (mark[ci[g]] >= 0)
                    block_sub_xyt(bs, v + mark[ci[g]] * bb, v + g * bb, v + e * bb);
            block_solve_lt(bs, v + jd * bb, v + e * bb);
            block_sub_xyt(bs, v + e * bb, v + e * bb, v + dq * bb);
        }
        double piv = 0;
        const int bad = block_cholesky(bs, v + dq * bb, &piv);
        if (bad >= 0) {
            pivot_fault(f, i, bad, piv);
            goto fail;
        }
        for (int64_t e = rp[i]; e < dq; e++)
            mark[ci[e]] = -1;
    }
    /* scalar rows: the off-diagonal blocks' rows, then the diagonal block's lower triangle */
    HK_TRY(hk_csr_alloc(nb * bs, nb * bs, (nnzb - nb) * bb + nb * bs * (bs + 1) / 2, &Lc));
    int64_t q = 0;
    for (int64_t i = 0; i < nb; i++)
        for (int a = 0; a < bs; a++) {
            for (int64_t e = rp[i]; e < rp[i + 1]; e++)
                for (int c = 0; c < bs && (ci[e] < i || c <= a); c++) {
                    Lc.colind[q] = (int32_t)(ci[e] * bs + c);
                    Lc.val[q++] = v[e * bb + a * bs + c];
                }
            Lc.rowptr[i * bs + a + 1] = q;
        }
    HK_TRY(hk_csr_upload(A->be, &Lc, Lout));
fail:
    free(rp);
    free(ci);
    free(v);
    free(mark);
    hk_csr_free(&Lc);
    return ierr;
}

/* ---- block ILU(0) on the node blocks --------------------------------------------------------
 *
 * Block IKJ order on the block pattern of A (no fill outside it), blocks bs x bs, row-major:
 * for block row i and each stored (i, j), j < i, by ascending j:
 *   L_ij = A_ij D_j^-1,   A_ik -= L_ij U_jk   for the k > j stored in both rows i and j,
 * then the pivot block D_i = A_ii is factored D_i = l_i u_i (LU without pivoting, l_i unit
 * lower; a pivot is zero when |u_cc| <= 1e-14 times the largest entry of block row i). With
 * Lambda = blockdiag(l_i), the scalar factors are L = L_B Lambda (blocks L_ij l_j, diagonal
 * blocks l_i: unit lower) and U = Lambda^-1 U_B (blocks l_i^-1 U_ij, diagonal blocks u_i):
 * L U = L_B U_B, in the unit-lower-L convention of the scalar ILU(0). */

static int ilu0_block(const hk_bmat *A, hk_bmat *Fout, hk_factor_fault *f)
{
    int ierr = 0;
    const int bs = A->br, bb = bs * bs;
    const int64_t nb = A->nbrows;
    const hk_bcsr view = bcsr_view(A);
    hk_bcsr B = {0};
    hk_csr F = {0};
    int64_t *diag = NULL, *mark = NULL;
    double *tmp = NULL;
    HK_TRY(hk_bcsr_copy(&view, &B));
    HK_TRY(hk_malloc((size_t)(nb ? nb : 1) * sizeof *diag, &diag));
    HK_TRY(hk_malloc((size_t)(nb ? nb : 1) * sizeof *mark, &mark));
    HK_TRY(hk_malloc((size_t)bb * sizeof *tmp, &tmp));
    if (diag_positions(nb, B.rowptr, B.colind, diag, mark, f)) goto fail;
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
        if (bad >= 0) {
            pivot_fault(f, i, bad, piv);
            goto fail;
        }
        for (int64_t p = B.rowptr[i]; p < B.rowptr[i + 1]; p++)
            mark[B.colind[p]] = -1;
    }
    /* scalar blocks: L_ij l_j below, l_i (unit) / u_i on the diagonal, l_i^-1 U_ij above */
    HK_TRY(hk_csr_from_bcsr(&view, &F));
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
                const int64_t at = F.rowptr[i * bs + a] + (p - B.rowptr[i]) * bs;
                memcpy(F.val + at, tmp + a * bs, (size_t)bs * sizeof *tmp);
            }
        }
    }
    HK_TRY(hk_csr_upload(A->be, &F, Fout));
fail:
    hk_bcsr_free(&B);
    hk_csr_free(&F);
    free(diag);
    free(mark);
    free(tmp);
    return ierr;
}

int hk_cpu_factor_exact(const hk_bmat *A, int sym, hk_bmat *F, hk_factor_fault *f)
{
    memset(F, 0, sizeof *F);
    memset(f, 0, sizeof *f);
    f->row = -1;
    HK_CHECK(A->br == A->bc && A->br <= 8 && A->nbrows == A->nbcols, HK_ERR_ARG,
             "factor_exact: the matrix must be square with square blocks of at most 8 x 8");
    if (A->br == 1) return sym ? ic0_scalar(A, F, f) : ilu0_scalar(A, F, f);
    return sym ? ic0_block(A, F, f) : ilu0_block(A, F, f);
}
