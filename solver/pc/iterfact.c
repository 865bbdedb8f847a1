/* Fine-grained iterative IC(0) / ILU(0) (Chow and Patel, "Fine-grained parallel incomplete LU
 * factorization", SIAM J. Sci. Comput. 37, 2015): every entry of the factors on the pattern
 * of A is one unknown of the nonlinear equations (L U)_ij = a_ij, solved by fixed-point sweeps
 * in which all entries are updated at once from the previous sweep's values (Jacobi-style, so
 * the result is deterministic and the sweep is one parallel map, the form a device kernel
 * takes). The matrix is first scaled to unit diagonal (S A S, s_i = 1/sqrt|a_ii|) and the
 * sweeps start from the factors of its triangles, as in the paper; the op (factor_sweeps)
 * does the scaling, the sweeps and the scaling back, on the matrix's backend.
 *
 * An entry only depends on entries of lower column index (and the pivot of its column), so
 * the sweeps reach the exact IC(0) / ILU(0) after at most twice the length of the longest
 * dependency chain; a few sweeps already give a useful preconditioner on FE matrices. This
 * is the CPU reference (OpenMP over rows) for pc.ic0.sweeps / pc.ilu0.sweeps; the CUDA
 * version is cuda/cuda_factor.cu. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "factor_block.h"
#include "pc_impl.h"

/* ---- the sweeps (CPU reference of factor_sweeps; the CUDA version is cuda/cuda_factor.cu)
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

/* The sweeps on the scaled matrix A (sym: its lower triangle, diagonal last). */
static int sweeps_scaled(const hk_bmat *A, int sym, int sweeps, hk_bmat *F, int64_t *bad)
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

/* ---- scaling to unit diagonal and back ----------------------------------------------------
 *
 * s_i = 1/sqrt|a_ii| (a missing, zero or non-finite a_ii: bad row i). The scaled entries are
 * (a_ij * s_i) * s_j, the lower triangle only for ic0. Back: ic0 L = S^-1 L~ (l_ij / s_i);
 * ilu0 L = S^-1 L~ S (l_ij * s_j / s_i, unit diagonal kept), U = S^-1 U~ S^-1
 * (u_ij / (s_i * s_j)). */

int hk_cpu_factor_sweeps(const hk_bmat *A, int sym, int sweeps, hk_bmat *F, int64_t *bad)
{
    int ierr = 0;
    const int64_t n = A->nbrows;
    double *s = NULL;
    hk_bmat S = {0};
    *bad = -1;
    memset(F, 0, sizeof *F);
    HK_CHECK(A->br == 1 && A->bc == 1 && A->nbrows == A->nbcols, HK_ERR_ARG,
             "factor_sweeps: the matrix must be square with 1 x 1 blocks");
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *s, &s));
    for (int64_t i = 0; i < n && *bad < 0; i++) {
        const int64_t k = find_col(A->rowptr, A->colind, i, (int32_t)i);
        const double d = k >= 0 ? A->val[k] : 0;
        if (!(d != 0 && isfinite(d)))
            *bad = i;
        else
            s[i] = 1 / sqrt(fabs(d));
    }
    if (*bad >= 0) goto fail;
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            nnz += !sym || A->colind[k] <= i;
    HK_TRY(hk_bmat_alloc(A->be, 1, 1, n, n, nnz, &S));
    int64_t q = 0;
    S.rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (!sym || A->colind[k] <= i) {
                S.colind[q] = A->colind[k];
                S.val[q++] = A->val[k] * s[i] * s[A->colind[k]];
            }
        S.rowptr[i + 1] = q;
    }
    HK_TRY(sweeps_scaled(&S, sym, sweeps, F, bad));
    if (*bad >= 0) goto fail;
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = F->rowptr[i]; e < F->rowptr[i + 1]; e++) {
            const int32_t j = F->colind[e];
            F->val[e] = sym ? F->val[e] / s[i]
                      : j < i ? F->val[e] * s[j] / s[i]
                              : F->val[e] / (s[i] * s[j]);
        }
fail:
    free(s);
    hk_bmat_free(&S);
    if (ierr) hk_bmat_free(F);
    return ierr;
}
