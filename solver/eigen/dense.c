/* Small dense matrices of the eigensolver's Rayleigh-Ritz step, on the host: the basis has
 * at most three times the block size columns (a few dozen to a few hundred), so these plain
 * loops take well under a millisecond for the sizes LOBPCG uses (hooke bench eigen measures
 * them against the Jacobi eigensolver of solver/pc/dense.c). Column-major; every loop runs in
 * a fixed order, so the results repeat to the last digit. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eigen_impl.h"

#define AT(M, ld, i, j) (M)[(size_t)(j) * (ld) + (i)]

/* Householder reduction of the symmetric A to tridiagonal form: d (n) the diagonal, e (n) the
 * subdiagonal (e[n-1] = 0), V = the product of the reflections (A = V T V^T). */
static void tridiagonalize(int n, double *A, double *d, double *e, double *V, double *v, double *p)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            AT(V, n, i, j) = i == j;
    for (int k = 0; k + 2 < n; k++) {
        double scale = 0;
        for (int i = k + 1; i < n; i++)
            scale = fmax(scale, fabs(AT(A, n, i, k)));
        if (scale == 0) continue;
        double sigma = 0;
        for (int i = k + 1; i < n; i++) {
            v[i] = AT(A, n, i, k) / scale;
            sigma += v[i] * v[i];
        }
        const double x0 = v[k + 1], xnorm = sqrt(sigma);
        const double alpha = x0 > 0 ? -xnorm : xnorm;
        v[k + 1] = x0 - alpha;
        /* H = I - beta v v^T maps the column to alpha e_1 (scaled) */
        const double vv = sigma - x0 * x0 + v[k + 1] * v[k + 1];
        if (vv == 0) continue;
        const double beta = 2 / vv;
        /* A22 := H A22 H = A22 - v q^T - q v^T with p = beta A22 v, q = p - (beta/2)(v.p) v */
        double vp = 0;
        for (int i = k + 1; i < n; i++) {
            double s = 0;
            for (int j = k + 1; j < n; j++)
                s += AT(A, n, i, j) * v[j];
            p[i] = beta * s;
            vp += v[i] * p[i];
        }
        const double K = 0.5 * beta * vp;
        for (int i = k + 1; i < n; i++)
            p[i] -= K * v[i];
        for (int j = k + 1; j < n; j++)
            for (int i = k + 1; i < n; i++)
                AT(A, n, i, j) -= v[i] * p[j] + p[i] * v[j];
        AT(A, n, k + 1, k) = AT(A, n, k, k + 1) = alpha * scale;
        for (int i = k + 2; i < n; i++)
            AT(A, n, i, k) = AT(A, n, k, i) = 0;
        /* V := V H */
        for (int r = 0; r < n; r++) {
            double s = 0;
            for (int j = k + 1; j < n; j++)
                s += AT(V, n, r, j) * v[j];
            s *= beta;
            for (int j = k + 1; j < n; j++)
                AT(V, n, r, j) -= s * v[j];
        }
    }
    for (int i = 0; i < n; i++) {
        d[i] = AT(A, n, i, i);
        e[i] = i + 1 < n ? AT(A, n, i + 1, i) : 0;
    }
}

int hk_eig_symeig(int n, double *A, double *w, double *V)
{
    if (n <= 0) return 0;
    double *e = NULL, *v = NULL, *p = NULL;
    HK_CALL(hk_malloc((size_t)3 * n * sizeof *e, &e));
    v = e + n;
    p = v + n;
    double *d = w;
    tridiagonalize(n, A, d, e, V, v, p);
    /* implicit symmetric QR steps with Wilkinson's shift on the unreduced block [lo, hi]
     * (Golub and Van Loan, section 8.3), each rotation applied to V's columns */
    long sweeps = 0;
    for (int hi = n - 1; hi > 0;) {
        if (fabs(e[hi - 1]) <= DBL_EPSILON * (fabs(d[hi - 1]) + fabs(d[hi])) ||
            fabs(e[hi - 1]) < DBL_MIN) {
            e[hi - 1] = 0;
            hi--;
            continue;
        }
        int lo = hi - 1;
        while (lo > 0 && fabs(e[lo - 1]) > DBL_EPSILON * (fabs(d[lo - 1]) + fabs(d[lo])) &&
               fabs(e[lo - 1]) >= DBL_MIN)
            lo--;
        if (++sweeps > 30L * n) {
            free(e);
            return hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                                "the dense symmetric eigensolver did not converge (%d x %d); "
                                "the Rayleigh-Ritz matrix holds non-finite values",
                                n, n);
        }
        const double dd = (d[hi - 1] - d[hi]) / 2, b = e[hi - 1];
        const double mu = d[hi] - b * b / (dd + copysign(hypot(dd, b), dd));
        double x = d[lo] - mu, z = e[lo];
        for (int k = lo; k < hi; k++) {
            /* rotation J = [c s; -s c] on rows and columns k, k+1 with J (x, z) = (r, 0) */
            const double r = hypot(x, z);
            const double c = r > 0 ? x / r : 1, s = r > 0 ? z / r : 0;
            if (k > lo) e[k - 1] = r;
            const double a = d[k], bb = e[k], d2 = d[k + 1];
            d[k] = c * c * a + 2 * c * s * bb + s * s * d2;
            d[k + 1] = s * s * a - 2 * c * s * bb + c * c * d2;
            e[k] = c * s * (d2 - a) + (c * c - s * s) * bb;
            if (k + 1 < hi) {
                z = s * e[k + 1];
                e[k + 1] *= c;
                x = e[k];
            }
            double *vk = V + (size_t)k * n, *vk1 = V + (size_t)(k + 1) * n;
            for (int i = 0; i < n; i++) {
                const double a0 = vk[i], a1 = vk1[i];
                vk[i] = c * a0 + s * a1;
                vk1[i] = -s * a0 + c * a1;
            }
        }
    }
    /* ascending, vectors along (insertion sort: stable, so ties keep their order) */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && d[j - 1] > d[j]; j--) {
            const double t = d[j];
            d[j] = d[j - 1];
            d[j - 1] = t;
            double *a = V + (size_t)j * n, *b = V + (size_t)(j - 1) * n;
            for (int r = 0; r < n; r++) {
                const double u = a[r];
                a[r] = b[r];
                b[r] = u;
            }
        }
    free(e);
    return 0;
}

int hk_eig_cholesky(int n, double *A, double tiny)
{
    for (int j = 0; j < n; j++) {
        double s = AT(A, n, j, j);
        for (int k = 0; k < j; k++)
            s -= AT(A, n, j, k) * AT(A, n, j, k);
        if (!(s > tiny)) return j;
        const double l = sqrt(s);
        AT(A, n, j, j) = l;
        for (int i = j + 1; i < n; i++) {
            double t = AT(A, n, i, j);
            for (int k = 0; k < j; k++)
                t -= AT(A, n, i, k) * AT(A, n, j, k);
            AT(A, n, i, j) = t / l;
        }
        for (int i = 0; i < j; i++)
            AT(A, n, i, j) = 0;
    }
    return -1;
}

void hk_eig_solve_lower(int n, const double *L, int k, double *B)
{
    for (int c = 0; c < k; c++) {
        double *b = B + (size_t)c * n;
        for (int i = 0; i < n; i++) {
            double s = b[i];
            for (int j = 0; j < i; j++)
                s -= AT(L, n, i, j) * b[j];
            b[i] = s / AT(L, n, i, i);
        }
    }
}

void hk_eig_solve_upper_t(int n, const double *L, int k, double *B)
{
    for (int c = 0; c < k; c++) {
        double *b = B + (size_t)c * n;
        for (int i = n - 1; i >= 0; i--) {
            double s = b[i];
            for (int j = i + 1; j < n; j++)
                s -= AT(L, n, j, i) * b[j];
            b[i] = s / AT(L, n, i, i);
        }
    }
}

int hk_eig_orthonormalize(int rows, int k, double *Z, double drop)
{
    int kept = 0;
    for (int c = 0; c < k; c++) {
        double *z = Z + (size_t)c * rows;
        double before = 0;
        for (int i = 0; i < rows; i++)
            before += z[i] * z[i];
        before = sqrt(before);
        double after = before;
        for (int pass = 0; pass < 2 && after > 0; pass++) {
            for (int q = 0; q < kept; q++) {
                const double *u = Z + (size_t)q * rows;
                double s = 0;
                for (int i = 0; i < rows; i++)
                    s += u[i] * z[i];
                for (int i = 0; i < rows; i++)
                    z[i] -= s * u[i];
            }
            after = 0;
            for (int i = 0; i < rows; i++)
                after += z[i] * z[i];
            after = sqrt(after);
        }
        if (!(after > drop * before) || !(after > 0)) continue;
        double *dst = Z + (size_t)kept * rows;
        for (int i = 0; i < rows; i++)
            dst[i] = z[i] / after;
        kept++;
    }
    return kept;
}
