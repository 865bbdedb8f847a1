/* Linear elastic materials: the constitutive law per analysis in global axes, a function of
 * one material (the checks that name its region are in checks.c).
 *
 * Isotropic materials keep the fast stiffness kernel (element_kernels.h), which uses the form
 *     K_ab[i][j] = lambda g_a[i] g_b[j] + mu g_a[j] g_b[i] + mu (g_a . g_b) delta_ij
 * (g = shape-function gradient), equal to B^T D B for 3D and plane strain with the ordinary
 * lambda, and for plane stress with lambda* = 2 lambda mu / (lambda + 2 mu) = E nu / (1 - nu^2).
 * Orthotropic and anisotropic materials go through B^T D B with the law built here:
 *   1. the 6 x 6 stiffness in material axes (orthotropic: the inverse of the compliance),
 *      checked positive definite by a Cholesky factorisation,
 *   2. rotated to global axes as the fourth-order tensor C_ijkl = R_ai R_bj R_ck R_dl C'_abcd
 *      (rows of R: the material axes), the expansion tensor likewise,
 *   3. reduced to the analysis: plane strain keeps rows/columns xx yy xy (the thermal stress
 *      from the full law, since eps_zz = 0 is held), plane stress inverts the compliance's
 *      in-plane block (sigma_zz = sigma_yz = sigma_xz = 0), axisymmetric keeps rr zz tt rz
 *      (xx yy zz xy with the hoop direction theta as z; its stiffness always goes through
 *      B^T D B, element_kernels.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "material.h"

void hk_material_lame(const hk_material *mt, hk_analysis a, int dim, double *lam, double *mu)
{
    const double E = mt->E, nu = mt->nu;
    *mu = E / (2 * (1 + nu));
    if (dim == 2 && a == HK_PLANE_STRESS)
        *lam = E * nu / (1 - nu * nu);
    else
        *lam = E * nu / ((1 + nu) * (1 - 2 * nu));
}

/* Cholesky test of the symmetric n x n matrix A (row stride 6); inverse into Ai when not
 * NULL. Returns 0 when A is not positive definite (relative to its diagonal). */
static int spd_inverse(int n, const double A[6][6], double Ai[6][6])
{
    double L[6][6] = {{0}}, dmax = 0;
    for (int i = 0; i < n; i++)
        dmax = fmax(dmax, fabs(A[i][i]));
    if (!(dmax > 0) || !isfinite(dmax)) return 0;
    for (int j = 0; j < n; j++) {
        double s = A[j][j];
        for (int k = 0; k < j; k++)
            s -= L[j][k] * L[j][k];
        if (!(s > 1e-12 * dmax)) return 0;
        L[j][j] = sqrt(s);
        for (int i = j + 1; i < n; i++) {
            double t = A[i][j];
            for (int k = 0; k < j; k++)
                t -= L[i][k] * L[j][k];
            L[i][j] = t / L[j][j];
        }
    }
    if (!Ai) return 1;
    /* columns of A^-1: solve L L^T x = e_c */
    for (int c = 0; c < n; c++) {
        double y[6];
        for (int i = 0; i < n; i++) {
            double t = i == c;
            for (int k = 0; k < i; k++)
                t -= L[i][k] * y[k];
            y[i] = t / L[i][i];
        }
        for (int i = n - 1; i >= 0; i--) {
            double t = y[i];
            for (int k = i + 1; k < n; k++)
                t -= L[k][i] * y[k];
            y[i] = t / L[i][i];
        }
        for (int i = 0; i < n; i++)
            Ai[i][c] = y[i];
    }
    for (int i = 0; i < n; i++) /* exactly symmetric */
        for (int j = 0; j < i; j++)
            Ai[i][j] = Ai[j][i] = 0.5 * (Ai[i][j] + Ai[j][i]);
    return 1;
}

/* Voigt index of the tensor index pair (i, j): xx yy zz xy yz xz. */
static const int voigt[3][3] = {{0, 3, 5}, {3, 1, 4}, {5, 4, 2}};

/* Rotate the 6 x 6 stiffness Dl from material axes (rows of R) to global axes. */
static void rotate_stiffness(const double R[3][3], const double Dl[6][6], double Dg[6][6])
{
    /* Q[v][w]: the global Voigt strain component w seen in material component v, so
     * that Dg = Q^T Dl Q; built from eps'_ab = R_ai R_bj eps_ij with engineering shears */
    double Q[6][6] = {{0}};
    for (int a = 0; a < 3; a++)
        for (int b = a; b < 3; b++) {
            const int v = voigt[a][b];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) {
                    const int w = voigt[i][j];
                    /* eps_ij appears as gamma_w / 2 for i != j (twice in the sum) */
                    double c = R[a][i] * R[b][j] * (i == j ? 1.0 : 0.5);
                    if (a != b) c *= 2; /* engineering gamma'_ab = 2 eps'_ab */
                    Q[v][w] += c;
                }
        }
    double T[6][6] = {{0}};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            for (int k = 0; k < 6; k++)
                T[i][j] += Dl[i][k] * Q[k][j];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            double s = 0;
            for (int k = 0; k < 6; k++)
                s += Q[k][i] * T[k][j];
            Dg[i][j] = s;
        }
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < i; j++)
            Dg[i][j] = Dg[j][i] = 0.5 * (Dg[i][j] + Dg[j][i]);
}

static const char *mat_name(const hk_material *mt)
{
    return mt->name[0] ? mt->name : "(unnamed)";
}

int hk_material_law(const hk_material *mt, hk_analysis an, int dim, hk_law *L)
{
    static const int plane[3] = {0, 1, 3}; /* xx yy xy in the 6-vector */
    memset(L, 0, sizeof *L);
    const char *mn = mat_name(mt);
    HK_CHECK(mt->kind >= HK_MAT_ISOTROPIC && mt->kind <= HK_MAT_ANISOTROPIC, HK_ERR_ARG,
             "material '%s' has an unknown kind %d", mn, (int)mt->kind);
    for (int k = 0; k < 3; k++)
        HK_CHECK(isfinite(mt->alpha[k]), HK_ERR_MODEL,
                 "material '%s' has a non-finite expansion coefficient; give finite numbers", mn);
    double R[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    if (mt->has_axes) {
        double err = 0;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                double s = 0;
                for (int i = 0; i < 3; i++)
                    s += mt->axes[a][i] * mt->axes[b][i];
                err = fmax(err, fabs(s - (a == b)));
            }
        HK_CHECK(err < 1e-9, HK_ERR_MODEL,
                 "the material axes of material '%s' are not orthonormal; give two "
                 "non-parallel directions",
                 mn);
        if (dim == 2)
            HK_CHECK(fabs(mt->axes[0][2]) + fabs(mt->axes[1][2]) < 1e-12, HK_ERR_MODEL,
                     "the material axes of material '%s' leave the x-y plane; a 2D analysis "
                     "turns the material about z only",
                     mn);
        memcpy(R, mt->axes, sizeof R);
    }
    /* 1. stiffness in material axes (the 2D 3 x 3 embedded at xx yy xy) */
    double Dl[6][6] = {{0}};
    int aniso2d = 0;
    if (mt->kind == HK_MAT_ISOTROPIC) {
        HK_CHECK(isfinite(mt->E) && mt->E > 0, HK_ERR_MODEL,
                 "material '%s' has Young's modulus E = %g; E must be positive", mn, mt->E);
        HK_CHECK(isfinite(mt->nu) && mt->nu > -1 && mt->nu < 0.5, HK_ERR_MODEL,
                 "material '%s' has Poisson's ratio nu = %g; nu must lie in (-1, 0.5)", mn, mt->nu);
        const double mu = mt->E / (2 * (1 + mt->nu));
        const double lam = mt->E * mt->nu / ((1 + mt->nu) * (1 - 2 * mt->nu));
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++)
                Dl[i][j] = lam;
            Dl[i][i] += 2 * mu;
            Dl[i + 3][i + 3] = mu;
        }
        L->isotropic = 1;
        hk_material_lame(mt, an, dim, &L->lambda, &L->mu);
        HK_CHECK(mt->integration >= HK_INTEGRATION_AUTO &&
                     mt->integration <= HK_INTEGRATION_SELECTIVE,
                 HK_ERR_ARG, "material '%s' has an unknown integration %d", mn, mt->integration);
        if (!(dim == 2 && an == HK_PLANE_STRESS)) /* plane stress does not lock */
            L->selective = mt->integration == HK_INTEGRATION_SELECTIVE ||
                           (mt->integration == HK_INTEGRATION_AUTO && mt->nu >= HK_SELECTIVE_NU);
        L->kappa = lam + 2 * mu / 3;
    } else if (mt->kind == HK_MAT_ORTHOTROPIC) {
        const double *o = mt->ortho;
        static const char *nm[9] = {"E1", "E2", "E3", "nu12", "nu13", "nu23", "G12", "G13", "G23"};
        for (int k = 0; k < 9; k++) {
            HK_CHECK(isfinite(o[k]), HK_ERR_MODEL,
                     "material '%s' has %s = %g; give a finite "
                     "number",
                     mn, nm[k], o[k]);
            if (k < 3 || k >= 6)
                HK_CHECK(o[k] > 0, HK_ERR_MODEL,
                         "material '%s' has %s = %g; moduli must be positive", mn, nm[k], o[k]);
        }
        double S[6][6] = {{0}};
        const double E1 = o[0], E2 = o[1], E3 = o[2], n12 = o[3], n13 = o[4], n23 = o[5];
        S[0][0] = 1 / E1, S[1][1] = 1 / E2, S[2][2] = 1 / E3;
        S[0][1] = S[1][0] = -n12 / E1;
        S[0][2] = S[2][0] = -n13 / E1;
        S[1][2] = S[2][1] = -n23 / E2;
        S[3][3] = 1 / o[6]; /* xy: G12 */
        S[4][4] = 1 / o[8]; /* yz: G23 */
        S[5][5] = 1 / o[7]; /* xz: G13 */
        HK_CHECK(spd_inverse(6, (const double(*)[6])S, Dl), HK_ERR_MODEL,
                 "material '%s' is not positive definite (its compliance has a non-positive "
                 "pivot: nu12^2 < E1/E2, nu13^2 < E1/E3, nu23^2 < E2/E3 and "
                 "1 - nu12 nu21 - nu23 nu32 - nu13 nu31 - 2 nu21 nu32 nu13 > 0 must hold); "
                 "check the Poisson's ratios",
                 mn);
    } else {
        const int n = dim == 3 ? 6 : an == HK_AXISYMMETRIC ? 4 : 3;
        double A[6][6] = {{0}}, smax = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                HK_CHECK(isfinite(mt->D[i][j]), HK_ERR_MODEL,
                         "material '%s' has a non-finite stiffness entry D[%d][%d]", mn, i, j);
                A[i][j] = mt->D[i][j];
                smax = fmax(smax, fabs(A[i][j]));
            }
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++)
                HK_CHECK(fabs(A[i][j] - A[j][i]) <= 1e-12 * smax, HK_ERR_MODEL,
                         "material '%s' has a non-symmetric stiffness (D[%d][%d] = %g but "
                         "D[%d][%d] = %g); give a symmetric matrix",
                         mn, i, j, A[i][j], j, i, A[j][i]);
        HK_CHECK(spd_inverse(n, (const double(*)[6])A, NULL), HK_ERR_MODEL,
                 "material '%s' has a stiffness matrix that is not positive definite (a "
                 "Cholesky pivot is not positive); check its entries",
                 mn);
        if (n == 6) {
            memcpy(Dl, A, sizeof Dl);
        } else if (n == 4) { /* rr zz tt rz: the first four of the 3D order */
            aniso2d = 1;
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    Dl[i][j] = A[i][j];
        } else {
            aniso2d = 1;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    Dl[plane[i]][plane[j]] = A[i][j];
        }
    }
    /* 2. global axes */
    rotate_stiffness((const double(*)[3])R, (const double(*)[6])Dl, L->D6);
    double At[3][3] = {{0}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int a = 0; a < 3; a++)
                At[i][j] += R[a][i] * R[a][j] * mt->alpha[a];
    for (int i = 0; i < 3; i++)
        for (int j = i; j < 3; j++)
            L->alpha6[voigt[i][j]] = (i == j ? 1 : 2) * At[i][j];
    L->has3d = !aniso2d;
    if (L->has3d) spd_inverse(6, (const double(*)[6])L->D6, L->S6);
    /* 3. the analysis */
    if (dim == 3) {
        L->nv = 6;
        memcpy(L->D, L->D6, sizeof L->D);
        memcpy(L->alpha, L->alpha6, sizeof L->alpha);
    } else if (an == HK_AXISYMMETRIC) {
        /* rr zz tt rz = xx yy zz xy with theta as z: a turn about theta (the only one a 2D
         * analysis allows) keeps these four apart from the theta shears, so the 4 x 4 block
         * is the whole law of a torsionless axisymmetric state */
        L->nv = 4;
        for (int i = 0; i < 4; i++) {
            L->alpha[i] = L->alpha6[i];
            for (int j = 0; j < 4; j++)
                L->D[i][j] = L->D6[i][j];
        }
    } else {
        L->nv = 3;
        for (int i = 0; i < 3; i++)
            L->alpha[i] = L->alpha6[plane[i]];
        if (aniso2d || an == HK_PLANE_STRAIN) {
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    L->D[i][j] = L->D6[plane[i]][plane[j]];
        } else { /* plane stress: the in-plane block of the compliance, inverted */
            double Sr[6][6] = {{0}};
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    Sr[i][j] = L->S6[plane[i]][plane[j]];
            HK_CHECK(spd_inverse(3, (const double(*)[6])Sr, L->D), HK_ERR_MODEL,
                     "material '%s' has no positive-definite plane-stress stiffness; check "
                     "its constants",
                     mn);
        }
    }
    /* the stress of a held body per unit temperature change */
    if (dim == 2 && an == HK_PLANE_STRAIN && L->has3d) {
        for (int i = 0; i < 3; i++) {
            double s = 0;
            for (int k = 0; k < 6; k++)
                s += L->D6[plane[i]][k] * L->alpha6[k];
            L->sig0[i] = s;
        }
    } else {
        for (int i = 0; i < L->nv; i++) {
            double s = 0;
            for (int k = 0; k < L->nv; k++)
                s += L->D[i][k] * L->alpha[k];
            L->sig0[i] = s;
        }
    }
    return 0;
}
