/* Small dense kernels for preconditioner set-up: symmetric eigenproblem (Lanczos tridiagonal),
 * Cholesky (FSAI local systems, mlilu's last level), Householder least squares (SAI columns,
 * LS polynomials). Column-major (the Cholesky also by rows), sizes of a few hundred at most
 * (mlilu's last level a few thousand); plain loops, no BLAS. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

int hk_dense_symeig(int n, double *A, double *evals, double *V)
{
#define AA(i, j) A[(size_t)(j)*n + (i)]
    if (V)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++)
                V[(size_t)j * n + i] = (i == j);
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0, tot = 0;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                tot += AA(i, j) * AA(i, j);
                if (i != j) off += AA(i, j) * AA(i, j);
            }
        if (off <= 1e-30 * tot || off == 0) break;
        for (int p = 0; p < n - 1; p++)
            for (int q = p + 1; q < n; q++) {
                double apq = AA(p, q);
                if (apq == 0) continue;
                /* rotation that zeroes A(p,q) (Golub & Van Loan, sym.schur2) */
                double tau = (AA(q, q) - AA(p, p)) / (2 * apq);
                double t = (tau >= 0 ? 1 : -1) / (fabs(tau) + sqrt(1 + tau * tau));
                double c = 1 / sqrt(1 + t * t), s = t * c;
                for (int k = 0; k < n; k++) { /* columns p, q */
                    double akp = AA(k, p), akq = AA(k, q);
                    AA(k, p) = c * akp - s * akq;
                    AA(k, q) = s * akp + c * akq;
                }
                for (int k = 0; k < n; k++) { /* rows p, q */
                    double apk = AA(p, k), aqk = AA(q, k);
                    AA(p, k) = c * apk - s * aqk;
                    AA(q, k) = s * apk + c * aqk;
                }
                if (V)
                    for (int k = 0; k < n; k++) {
                        double vkp = V[(size_t)p * n + k], vkq = V[(size_t)q * n + k];
                        V[(size_t)p * n + k] = c * vkp - s * vkq;
                        V[(size_t)q * n + k] = s * vkp + c * vkq;
                    }
            }
    }
    for (int i = 0; i < n; i++)
        evals[i] = AA(i, i);
    /* sort ascending, eigenvectors along */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && evals[j - 1] > evals[j]; j--) {
            double t = evals[j];
            evals[j] = evals[j - 1];
            evals[j - 1] = t;
            if (V)
                for (int k = 0; k < n; k++) {
                    t = V[(size_t)j * n + k];
                    V[(size_t)j * n + k] = V[(size_t)(j - 1) * n + k];
                    V[(size_t)(j - 1) * n + k] = t;
                }
        }
    return 0;
#undef AA
}

int64_t hk_dense_cholesky(int64_t n, double *A, int64_t rs, int64_t cs, double rtol, double *pivot)
{
#define AA(i, j) A[(size_t)(i) * (size_t)rs + (size_t)(j) * (size_t)cs]
    for (int64_t j = 0; j < n; j++) {
        const double a = AA(j, j), least = rtol > 0 ? rtol * fabs(a) : 0;
        double d = a;
        for (int64_t k = 0; k < j; k++)
            d -= AA(j, k) * AA(j, k);
        if (!(isfinite(d) && d > least)) {
            if (pivot) *pivot = d;
            return j;
        }
        d = sqrt(d);
        AA(j, j) = d;
        for (int64_t i = j + 1; i < n; i++) {
            double s = AA(i, j);
            for (int64_t k = 0; k < j; k++)
                s -= AA(i, k) * AA(j, k);
            AA(i, j) = s / d;
        }
    }
    return -1;
#undef AA
}

void hk_dense_cholesky_solve(int n, const double *L, double *b)
{
#define LL(i, j) L[(size_t)(j)*n + (i)]
    for (int i = 0; i < n; i++) {
        double s = b[i];
        for (int k = 0; k < i; k++)
            s -= LL(i, k) * b[k];
        b[i] = s / LL(i, i);
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (int k = i + 1; k < n; k++)
            s -= LL(k, i) * b[k];
        b[i] = s / LL(i, i);
    }
#undef LL
}

int hk_dense_qr_ls(int m, int n, double *A, double *b, double *x)
{
#define AA(i, j) A[(size_t)(j)*m + (i)]
    double amax = 0;
    for (size_t k = 0; k < (size_t)m * n; k++)
        if (fabs(A[k]) > amax) amax = fabs(A[k]);
    for (int j = 0; j < n; j++) {
        /* Householder vector v = x + sign(x1)||x|| e1 for column j below the diagonal */
        double norm = 0;
        for (int i = j; i < m; i++)
            norm += AA(i, j) * AA(i, j);
        norm = sqrt(norm);
        if (!(norm > 1e-14 * amax)) return j;
        double alpha = AA(j, j) >= 0 ? -norm : norm;
        double v0 = AA(j, j) - alpha;
        AA(j, j) = v0;
        double vnorm2 = v0 * v0;
        for (int i = j + 1; i < m; i++)
            vnorm2 += AA(i, j) * AA(i, j);
        /* apply H = I - 2 v v^T / v^T v to the remaining columns and to b */
        for (int k = j + 1; k < n; k++) {
            double s = 0;
            for (int i = j; i < m; i++)
                s += AA(i, j) * AA(i, k);
            s = 2 * s / vnorm2;
            for (int i = j; i < m; i++)
                AA(i, k) -= s * AA(i, j);
        }
        double s = 0;
        for (int i = j; i < m; i++)
            s += AA(i, j) * b[i];
        s = 2 * s / vnorm2;
        for (int i = j; i < m; i++)
            b[i] -= s * AA(i, j);
        AA(j, j) = alpha; /* R's diagonal; v is no longer needed */
    }
    for (int j = n - 1; j >= 0; j--) {
        double s = b[j];
        for (int k = j + 1; k < n; k++)
            s -= AA(j, k) * x[k];
        x[j] = s / AA(j, j);
    }
    return -1;
#undef AA
}
