/* The diag op on the CPU (contract: enum hk_diag_mode in solver/hk_setup.h): inverse diagonal,
 * inverse square root, inverse diagonal blocks and the decoupled-row indicator of a square-block
 * hk_bmat. One block row per iteration; the first bad row is a min-reduction, so the result is
 * the same for any thread count. cuda/cuda_diag.cu follows the same arithmetic step by step. */
#include <math.h>
#include <stdint.h>

#include "cpu_impl.h"

#define DIAG_MAX_BR 6

/* Inverse of the br x br row-major block a into inv by Gauss-Jordan with partial pivoting.
 * A dof whose row and column are zero in a is decoupled: left out, 0 in inv. Returns 0, or 1
 * when the rest is singular (a pivot at or below 1e-13 of the largest entry) or an entry or
 * the result is not finite; inv is then all zero. */
static int invert_block(int br, const double *a, double *inv)
{
    double m[DIAG_MAX_BR][2 * DIAG_MAX_BR];
    int dec[DIAG_MAX_BR];
    double amax = 0;
    int bad = 0;
    for (int r = 0; r < br; r++)
        for (int c = 0; c < br; c++) {
            double v = a[r * br + c];
            if (!isfinite(v)) bad = 1;
            if (fabs(v) > amax) amax = fabs(v);
            m[r][c] = v;
            m[r][br + c] = r == c ? 1.0 : 0.0;
        }
    for (int r = 0; r < br; r++) {
        dec[r] = 1;
        for (int c = 0; c < br; c++)
            if (a[r * br + c] != 0 || a[c * br + r] != 0) dec[r] = 0;
    }
    for (int c = 0; c < br && !bad; c++) {
        if (dec[c]) continue; /* row and column c are zero: nothing to eliminate */
        int p = c;
        for (int r = c + 1; r < br; r++)
            if (fabs(m[r][c]) > fabs(m[p][c])) p = r; /* decoupled rows hold 0 here */
        if (fabs(m[p][c]) <= 1e-13 * amax) {
            bad = 1;
            break;
        }
        if (p != c)
            for (int k = 0; k < 2 * br; k++) {
                double t = m[c][k];
                m[c][k] = m[p][k];
                m[p][k] = t;
            }
        const double piv = m[c][c];
        for (int k = 0; k < 2 * br; k++)
            m[c][k] = m[c][k] / piv;
        for (int r = 0; r < br; r++) {
            if (r == c || m[r][c] == 0) continue;
            const double f = m[r][c];
            for (int k = 0; k < 2 * br; k++)
                m[r][k] = m[r][k] - f * m[c][k];
        }
    }
    for (int r = 0; r < br; r++)
        for (int c = 0; c < br; c++) {
            double v = dec[r] || dec[c] ? 0.0 : m[r][br + c];
            if (!isfinite(v)) bad = 1;
            inv[r * br + c] = v;
        }
    if (bad)
        for (int k = 0; k < br * br; k++)
            inv[k] = 0;
    return bad;
}

int hk_cpu_bmat_diag(const hk_bmat *A, int mode, hk_vec *out, int64_t *bad)
{
    *bad = -1;
    const int br = A->br;
    HK_CHECK(A->br == A->bc && br >= 1 && br <= DIAG_MAX_BR, HK_ERR_ARG,
             "bmat_diag: blocks are %d x %d; it needs square blocks of size 1..%d", A->br, A->bc,
             DIAG_MAX_BR);
    HK_CHECK(mode >= HK_DIAG_INV && mode <= HK_DIAG_DECOUPLED, HK_ERR_ARG,
             "bmat_diag: unknown mode %d", mode);
    const int64_t nb = A->nbrows, n = nb * br;
    const int64_t want = mode == HK_DIAG_BLOCK_INV ? n * br : n;
    HK_CHECK(out->prec == HK_FP64 && out->n == want, HK_ERR_ARG,
             "bmat_diag: the output must be an fp64 vector of %lld entries (got %lld, %s)",
             (long long)want, (long long)out->n, out->prec == HK_FP64 ? "fp64" : "fp32");
    double *o = out->data;
    int64_t first = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : first)
    for (int64_t bi = 0; bi < nb; bi++) {
        const int64_t p = hk_find_block(A->rowptr, A->colind, bi, bi);
        const double *blk = p >= 0 ? A->val + (size_t)p * br * br : NULL;
        if (mode == HK_DIAG_BLOCK_INV) {
            double a[DIAG_MAX_BR * DIAG_MAX_BR] = {0};
            if (blk)
                for (int k = 0; k < br * br; k++)
                    a[k] = blk[k];
            if (invert_block(br, a, o + (size_t)bi * br * br) && bi * br < first) first = bi * br;
        } else if (mode == HK_DIAG_DECOUPLED) {
            for (int r = 0; r < br; r++) {
                const int64_t i = bi * br + r;
                int off = 0;
                for (int64_t q = A->rowptr[bi]; q < A->rowptr[bi + 1] && !off; q++)
                    for (int c = 0; c < br; c++)
                        if ((int64_t)A->colind[q] * br + c != i &&
                            A->val[((size_t)q * br + r) * br + c] != 0)
                            off = 1;
                o[i] = off ? 0.0 : 1.0;
            }
        } else {
            for (int r = 0; r < br; r++) {
                const int64_t i = bi * br + r;
                const double a = blk ? blk[r * br + r] : 0.0;
                double v = 0;
                if (a > 0) v = mode == HK_DIAG_INV ? 1.0 / a : 1.0 / sqrt(a);
                if (!(a > 0) || !isfinite(a) || !isfinite(v)) {
                    v = 0;
                    if (i < first) first = i;
                }
                o[i] = v;
            }
        }
    }
    *bad = first == INT64_MAX ? -1 : first;
    return 0;
}

int hk_cpu_bmat_first_nonfinite(const hk_bmat *A, int64_t *row)
{
    const int64_t bb = (int64_t)A->br * A->bc, nb = A->nbrows;
    int64_t first = INT64_MAX;
    /* one pass on every thread; NaN or Inf times zero is NaN, finite values keep the sum 0 */
#pragma omp parallel for schedule(static) reduction(min : first)
    for (int64_t i = 0; i < nb; i++) {
        if (i > first) continue;
        const double *v = A->val + A->rowptr[i] * bb;
        const int64_t m = (A->rowptr[i + 1] - A->rowptr[i]) * bb;
        double sum = 0;
        for (int64_t q = 0; q < m; q++)
            sum += v[q] * 0.0;
        if (sum != 0 && i < first) first = i; /* NaN != 0 holds */
    }
    *row = first == INT64_MAX ? -1 : first;
    return 0;
}
