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

/* s_i = 1/sqrt|a_ii| from the scalar CSR A; *bad = first row whose diagonal is 0 or not
 * finite (or missing), else -1. */
static int unit_scaling(const hk_csr *A, double *s, int64_t *bad)
{
    *bad = -1;
    for (int64_t i = 0; i < A->n; i++) {
        double d = 0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i) d = A->val[k];
        if (!(d != 0 && isfinite(d))) {
            *bad = i;
            return 0;
        }
        s[i] = 1 / sqrt(fabs(d));
    }
    return 0;
}

int hk_ic0_sweeps(const hk_csr *A, int sweeps, hk_csr *L, int64_t *bad)
{
    int ierr = 0;
    const int64_t n = A->n;
    double *s = NULL, *a = NULL, *old = NULL;
    memset(L, 0, sizeof *L);
    *bad = -1;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *s, &s));
    HK_TRY(unit_scaling(A, s, bad));
    if (*bad >= 0) goto fail;
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            nnz += A->colind[k] <= i;
    HK_TRY(hk_csr_alloc(n, n, nnz, L));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *a, &a));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *old, &old));
    /* lower triangle of S A S (columns sorted: the diagonal is last), the start values */
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] <= i) {
                L->colind[q] = A->colind[k];
                a[q] = A->val[k] * s[i] * s[A->colind[k]];
                L->val[q] = a[q];
                q++;
            }
        L->rowptr[i + 1] = q;
        if (q == L->rowptr[i] || L->colind[q - 1] != i) { /* unit_scaling saw a diagonal */
            *bad = i;
            goto fail;
        }
    }
    for (int sw = 0; sw < sweeps; sw++) {
        memcpy(old, L->val, (size_t)nnz * sizeof *old);
        int64_t badrow = n;
#pragma omp parallel for schedule(static) reduction(min : badrow)
        for (int64_t i = 0; i < n; i++) {
            const int64_t bi = L->rowptr[i], ei = L->rowptr[i + 1];
            for (int64_t e = bi; e < ei; e++) {
                const int32_t j = L->colind[e];
                /* sum_{k<j} l_ik l_jk: merge rows i and j (sorted), columns below j */
                double sum = a[e];
                int64_t p = bi, r = L->rowptr[j];
                const int64_t er = L->rowptr[j + 1] - 1; /* row j without its diagonal */
                while (p < e && r < er) {
                    const int32_t cp = L->colind[p], cr = L->colind[r];
                    if (cp == cr)
                        sum -= old[p++] * old[r++];
                    else if (cp < cr)
                        p++;
                    else
                        r++;
                }
                if (j < i) {
                    L->val[e] = sum / old[er];
                } else if (sum > 0 && isfinite(sum)) {
                    L->val[e] = sqrt(sum);
                } else if (i < badrow) {
                    badrow = i; /* keep the old pivot; an error if it stays in the last sweep */
                }
            }
        }
        if (sw == sweeps - 1 && badrow < n) {
            *bad = badrow;
            goto fail;
        }
    }
    /* L = S^-1 L~ */
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = L->rowptr[i]; e < L->rowptr[i + 1]; e++)
            L->val[e] /= s[i];
    free(s);
    free(a);
    free(old);
    return 0;
fail:
    free(s);
    free(a);
    free(old);
    hk_csr_free(L);
    return ierr;
}

int hk_ilu0_sweeps(hk_csr *F, int sweeps, int64_t *bad)
{
    int ierr = 0;
    const int64_t n = F->n, nnz = F->rowptr[n];
    double *s = NULL, *a = NULL, *old = NULL;
    int64_t *diag = NULL, *cptr = NULL, *cent = NULL;
    int32_t *crow = NULL;
    *bad = -1;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *s, &s));
    HK_TRY(unit_scaling(F, s, bad));
    if (*bad >= 0) goto fail;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *diag, &diag));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *a, &a));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *old, &old));
    /* the pattern by columns (rows ascending): entry positions, for the columns of U */
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *cptr, &cptr));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *cent, &cent));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *crow, &crow));
    for (int64_t k = 0; k < nnz; k++)
        cptr[F->colind[k] + 1]++;
    for (int64_t j = 0; j < n; j++)
        cptr[j + 1] += cptr[j];
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++) {
            const int64_t c = cptr[F->colind[k]]++;
            cent[c] = k;
            crow[c] = (int32_t)i;
        }
    for (int64_t j = n; j > 0; j--)
        cptr[j] = cptr[j - 1];
    cptr[0] = 0;
    /* S A S; start: l_ij = a_ij / a_jj, u_ij = a_ij */
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++) {
            a[k] = F->val[k] * s[i] * s[F->colind[k]];
            if (F->colind[k] == i) diag[i] = k;
        }
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++)
            F->val[k] = F->colind[k] < i ? a[k] / a[diag[F->colind[k]]] : a[k];
    for (int sw = 0; sw < sweeps; sw++) {
        memcpy(old, F->val, (size_t)nnz * sizeof *old);
        int64_t badrow = n;
#pragma omp parallel for schedule(static) reduction(min : badrow)
        for (int64_t i = 0; i < n; i++) {
            for (int64_t e = F->rowptr[i]; e < F->rowptr[i + 1]; e++) {
                const int32_t j = F->colind[e];
                const int32_t m = j < i ? j : (int32_t)i;
                /* sum_{k<m} l_ik u_kj: row i (columns k < m) against column j (rows k < m) */
                double sum = a[e];
                int64_t p = F->rowptr[i], c = cptr[j];
                while (p < F->rowptr[i + 1] && F->colind[p] < m && c < cptr[j + 1] && crow[c] < m) {
                    const int32_t kp = F->colind[p], kc = crow[c];
                    if (kp == kc)
                        sum -= old[p++] * old[cent[c++]];
                    else if (kp < kc)
                        p++;
                    else
                        c++;
                }
                if (j < i) {
                    F->val[e] = sum / old[diag[j]];
                } else {
                    F->val[e] = sum;
                    if (j == i && !(sum != 0 && isfinite(sum)) && i < badrow) badrow = i;
                }
            }
        }
        if (sw == sweeps - 1 && badrow < n) {
            *bad = badrow;
            goto fail;
        }
    }
    /* L = S^-1 L~ S (unit diagonal kept), U = S^-1 U~ S^-1 */
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++) {
            const int32_t j = F->colind[k];
            F->val[k] = j < i ? F->val[k] * s[j] / s[i] : F->val[k] / (s[i] * s[j]);
        }
fail:
    free(s);
    free(a);
    free(old);
    free(diag);
    free(cptr);
    free(cent);
    free(crow);
    return ierr;
}
