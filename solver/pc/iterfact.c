/* Fine-grained iterative IC(0) / ILU(0) (Chow and Patel, "Fine-grained parallel incomplete LU
 * factorization", SIAM J. Sci. Comput. 37, 2015): every entry of the factors on the pattern
 * of A is one unknown of the nonlinear equations (L U)_ij = a_ij, solved by fixed-point sweeps
 * in which all entries are updated at once from the previous sweep's values (Jacobi-style, so
 * the result is deterministic and the sweep is one parallel map, the form a device kernel
 * takes). The matrix is first scaled to unit diagonal (S A S, s_i = 1/sqrt|a_ii|) and the
 * sweeps start from the factors of its triangles, as in the paper.
 *
 * An entry only depends on entries of lower column index (and the pivot of its column), so
 * the sweeps reach the exact IC(0) / ILU(0) after at most twice the length of the longest
 * dependency chain; a few sweeps already give a useful preconditioner on FE matrices. This
 * is the host reference (OpenMP over rows) for pc.ic0.sweeps / pc.ilu0.sweeps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

/* ---- the op (CPU reference of factor_sweeps; the CUDA version is cuda/cuda_tri.cu) ----
 *
 * Entry e = (i, j) of the pattern (row i sorted, diagonal found by search):
 *   sum = a_e - sum over entries (i, k) of row i with k < min(i, j), ascending k, of
 *         v(i, k) * v(partner), partner = (j, k) for ic0 (row j of L), (k, j) for ilu0 (row k
 *         of U), found by binary search in the partner's row (skipped when absent);
 *   ic0:  j < i: sum / v(j, j); j == i: sqrt(sum) (sum <= 0 or not finite: the old value is
 *         kept and the row is bad if it happens in the last sweep);
 *   ilu0: j < i: sum / v(j, j); j >= i: sum (a zero or non-finite pivot in the last sweep:
 *         bad row).
 * v are the previous sweep's values; start: ic0 v = a; ilu0 v(i, j) = a_ij / a_jj below the
 * diagonal, a_ij on and above it. The same sums in the same order on every backend. */

static int64_t find_col(const int64_t *rowptr, const int32_t *colind, int64_t r, int32_t c)
{
    int64_t lo = rowptr[r], hi = rowptr[r + 1];
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (colind[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < rowptr[r + 1] && colind[lo] == c ? lo : -1;
}

int hk_cpu_factor_sweeps(const hk_bmat *A, int sym, int sweeps, hk_bmat *F, int64_t *bad)
{
    int ierr = 0;
    const int64_t n = A->nbrows, nnz = A->nnzb;
    double *old = NULL;
    int64_t *diag = NULL;
    *bad = -1;
    memset(F, 0, sizeof *F);
    HK_CHECK(A->br == 1 && A->bc == 1 && A->nbrows == A->nbcols, HK_ERR_ARG,
             "factor_sweeps: the matrix must be square with 1 x 1 blocks");
    HK_CALL(hk_bmat_alloc(A->be, 1, 1, n, n, nnz, F));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *old, &old));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *diag, &diag));
    memcpy(F->rowptr, A->rowptr, (size_t)(n + 1) * sizeof *F->rowptr);
    memcpy(F->colind, A->colind, (size_t)nnz * sizeof *F->colind);
    for (int64_t i = 0; i < n; i++) {
        diag[i] = find_col(A->rowptr, A->colind, i, (int32_t)i);
        if (diag[i] < 0 || (sym && diag[i] != A->rowptr[i + 1] - 1)) {
            *bad = i;
            goto fail;
        }
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
            F->val[e] =
                !sym && A->colind[e] < i ? A->val[e] / A->val[diag[A->colind[e]]] : A->val[e];
    for (int sw = 0; sw < sweeps; sw++) {
        memcpy(old, F->val, (size_t)nnz * sizeof *old);
        int64_t badrow = n;
#pragma omp parallel for schedule(static) reduction(min : badrow)
        for (int64_t i = 0; i < n; i++)
            for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
                const int32_t j = A->colind[e];
                const int32_t m = j < i ? j : (int32_t)i;
                double sum = A->val[e];
                for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1] && A->colind[p] < m; p++) {
                    const int32_t k = A->colind[p];
                    const int64_t q = sym ? find_col(A->rowptr, A->colind, j, k)
                                          : find_col(A->rowptr, A->colind, k, j);
                    if (q >= 0) sum -= old[p] * old[q];
                }
                if (j < i) {
                    F->val[e] = sum / old[diag[j]];
                } else if (sym) {
                    if (sum > 0 && isfinite(sum))
                        F->val[e] = sqrt(sum);
                    else if (i < badrow)
                        badrow = i;
                } else {
                    F->val[e] = sum;
                    if (j == i && !(sum != 0 && isfinite(sum)) && i < badrow) badrow = i;
                }
            }
        if (sw == sweeps - 1 && badrow < n) *bad = badrow;
    }
fail:
    free(old);
    free(diag);
    if (ierr || *bad >= 0) hk_bmat_free(F);
    return ierr;
}

/* ---- the preconditioners' side: scale on the host, sweep on the backend ---------------- */

/* s_i = 1/sqrt|a_ii| from the scalar CSR A; *bad = first row whose diagonal is 0 or not
 * finite (or missing), else -1. */
static void unit_scaling(const hk_csr *A, double *s, int64_t *bad)
{
    *bad = -1;
    for (int64_t i = 0; i < A->n; i++) {
        double d = 0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i) d = A->val[k];
        if (!(d != 0 && isfinite(d))) {
            *bad = i;
            return;
        }
        s[i] = 1 / sqrt(fabs(d));
    }
}

/* Sweeps of the scaled pattern matrix S (host CSR) on be (its factor_sweeps op, or the CPU
 * reference on the host when be lacks it); the result back in S's values. */
static int sweeps_on(const hk_backend_ops *be, hk_csr *S, int sym, int sweeps, int64_t *bad)
{
    int ierr = 0;
    hk_bcsr view = {.bs = 1,
                    .nbrows = S->n,
                    .nbcols = S->n,
                    .rowptr = S->rowptr,
                    .colind = S->colind,
                    .val = S->val};
    hk_bmat A = {0}, F = {0};
    hk_bcsr H = {0};
    if (!be->factor_sweeps) be = &hk_backend_cpu;
    HK_CALL(hk_bmat_upload(be, &view, &A));
    HK_TRY(be->factor_sweeps(&A, sym, sweeps, &F, bad));
    if (*bad < 0) {
        HK_TRY(hk_bmat_to_bcsr(&F, &H));
        memcpy(S->val, H.val, (size_t)S->rowptr[S->n] * sizeof *S->val);
    }
fail:
    hk_bmat_free(&A);
    hk_bmat_free(&F);
    hk_bcsr_free(&H);
    return ierr;
}

int hk_ic0_sweeps(const hk_backend_ops *be, const hk_csr *A, int sweeps, hk_csr *L, int64_t *bad)
{
    int ierr = 0;
    const int64_t n = A->n;
    double *s = NULL;
    memset(L, 0, sizeof *L);
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *s, &s));
    unit_scaling(A, s, bad);
    if (*bad >= 0) goto fail;
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            nnz += A->colind[k] <= i;
    HK_TRY(hk_csr_alloc(n, n, nnz, L));
    /* lower triangle of S A S (columns sorted: the diagonal is last) */
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] <= i) {
                L->colind[q] = A->colind[k];
                L->val[q++] = A->val[k] * s[i] * s[A->colind[k]];
            }
        L->rowptr[i + 1] = q;
    }
    HK_TRY(sweeps_on(be, L, 1, sweeps, bad));
    if (*bad >= 0) goto fail;
    for (int64_t i = 0; i < n; i++) /* L = S^-1 L~ */
        for (int64_t e = L->rowptr[i]; e < L->rowptr[i + 1]; e++)
            L->val[e] /= s[i];
    free(s);
    return 0;
fail:
    free(s);
    hk_csr_free(L);
    return ierr;
}

int hk_ilu0_sweeps(const hk_backend_ops *be, hk_csr *F, int sweeps, int64_t *bad)
{
    int ierr = 0;
    const int64_t n = F->n;
    double *s = NULL;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *s, &s));
    unit_scaling(F, s, bad);
    if (*bad >= 0) goto fail;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++)
            F->val[k] *= s[i] * s[F->colind[k]];
    HK_TRY(sweeps_on(be, F, 0, sweeps, bad));
    if (*bad >= 0) goto fail;
    /* L = S^-1 L~ S (unit diagonal kept), U = S^-1 U~ S^-1 */
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++) {
            const int32_t j = F->colind[k];
            F->val[k] = j < i ? F->val[k] * s[j] / s[i] : F->val[k] / (s[i] * s[j]);
        }
fail:
    free(s);
    return ierr;
}
