/* Invariants of symmetric 3x3 tensors stored as xx yy zz xy yz xz. */
#include <math.h>

#include "pp_impl.h"

double hk_pp_von_mises(const double s[6])
{
    /* on the tensor scaled by its largest component, so that the squares neither overflow
     * nor underflow for extreme but finite stresses */
    double m = 0;
    for (int k = 0; k < 6; k++)
        m = fmax(m, fabs(s[k]));
    if (!(m > 0) || !isfinite(m)) return m == 0 ? 0 : m;
    const double x = s[0] / m, y = s[1] / m, z = s[2] / m;
    const double a = x - y, b = y - z, c = z - x, p = s[3] / m, q = s[4] / m, r = s[5] / m;
    double v = 0.5 * (a * a + b * b + c * c) + 3 * (p * p + q * q + r * r);
    return m * sqrt(v > 0 ? v : 0);
}

/* Cyclic Jacobi rotations on the 3x3 symmetric matrix: robust for repeated eigenvalues and
 * accurate to rounding; converges in a handful of sweeps. */
void hk_pp_principal(const double s[6], double ev[3])
{
    double A[3][3] = {{s[0], s[3], s[5]}, {s[3], s[1], s[4]}, {s[5], s[4], s[2]}};
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = A[0][1] * A[0][1] + A[0][2] * A[0][2] + A[1][2] * A[1][2];
        double diag = A[0][0] * A[0][0] + A[1][1] * A[1][1] + A[2][2] * A[2][2];
        if (off <= 1e-32 * diag || off == 0) break;
        for (int p = 0; p < 2; p++)
            for (int q = p + 1; q < 3; q++) {
                if (A[p][q] == 0) continue;
                double theta = (A[q][q] - A[p][p]) / (2 * A[p][q]);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), sn = t * c;
                /* A <- R^T A R with the rotation in the (p, q) plane */
                for (int k = 0; k < 3; k++) {
                    double akp = A[k][p], akq = A[k][q];
                    A[k][p] = c * akp - sn * akq;
                    A[k][q] = sn * akp + c * akq;
                }
                for (int k = 0; k < 3; k++) {
                    double apk = A[p][k], aqk = A[q][k];
                    A[p][k] = c * apk - sn * aqk;
                    A[q][k] = sn * apk + c * aqk;
                }
            }
    }
    ev[0] = A[0][0], ev[1] = A[1][1], ev[2] = A[2][2];
    /* sort descending */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2 - i; j++)
            if (ev[j] < ev[j + 1]) {
                double tmp = ev[j];
                ev[j] = ev[j + 1], ev[j + 1] = tmp;
            }
}
