/* Element kernels of assembly/: the matrices and load vectors of one element, from its node
 * coordinates x[a][i], its reference element (elements.h) and its material law (hk_law,
 * material.c). Plain functions of arrays: no mesh, no system, no allocation, nothing global,
 * so that a device assembly runs the same code per element (a CUDA translation unit that
 * includes this header gets them as __host__ __device__; shape functions come from the
 * tables of hk_elref, never evaluated here). The device assembly (fem_cuda/) forms one
 * d x d block of an element matrix at a time: hk_el_iso_block and the B^T D B helpers give
 * the digits the whole-element kernels give.
 *
 * Element matrices are nd x nd with nd = nnodes * d, row-major, dof a * d + i (node a,
 * component i); fac is the thickness in 2D (1 in 3D and axisymmetric, where the weight is r
 * per radian). Each returns 1 when det J <= 0 (or r <= 0) at a quadrature point, 0 otherwise.
 * New per-element quantities belong here, beside the stiffness and the mass they share the
 * Jacobian code with. */
#ifndef HOOKE_ASSEMBLY_ELEMENT_KERNELS_H
#define HOOKE_ASSEMBLY_ELEMENT_KERNELS_H

#include <math.h>
#include <string.h>

#include "elements.h"
#include "hooke/fem.h"

#ifdef __CUDACC__
#define HK_EL_FN __host__ __device__ static inline
#define HK_RESTRICT __restrict__
#else
#define HK_EL_FN static inline
#define HK_RESTRICT restrict
#endif

/* Inverse and determinant of the d x d Jacobian J[i][k] = dx_i/dxi_k. */
HK_EL_FN double hk_el_invert(int d, const double J[3][3], double Ji[3][3])
{
    double det;
    if (d == 2) {
        det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
        double s = 1 / det;
        Ji[0][0] = J[1][1] * s, Ji[0][1] = -J[0][1] * s;
        Ji[1][0] = -J[1][0] * s, Ji[1][1] = J[0][0] * s;
    } else {
        double c00 = J[1][1] * J[2][2] - J[1][2] * J[2][1];
        double c01 = J[1][2] * J[2][0] - J[1][0] * J[2][2];
        double c02 = J[1][0] * J[2][1] - J[1][1] * J[2][0];
        det = J[0][0] * c00 + J[0][1] * c01 + J[0][2] * c02;
        double s = 1 / det;
        Ji[0][0] = c00 * s;
        Ji[1][0] = c01 * s;
        Ji[2][0] = c02 * s;
        Ji[0][1] = (J[0][2] * J[2][1] - J[0][1] * J[2][2]) * s;
        Ji[1][1] = (J[0][0] * J[2][2] - J[0][2] * J[2][0]) * s;
        Ji[2][1] = (J[0][1] * J[2][0] - J[0][0] * J[2][1]) * s;
        Ji[0][2] = (J[0][1] * J[1][2] - J[0][2] * J[1][1]) * s;
        Ji[1][2] = (J[0][2] * J[1][0] - J[0][0] * J[1][2]) * s;
        Ji[2][2] = (J[0][0] * J[1][1] - J[0][1] * J[1][0]) * s;
    }
    return det;
}

/* The d x d sums S_ij = sum_q (w_q g_a[i]) g_b[j] of the node pair (a, b), summed in q order
 * from zero; g[q][a][i] at g + q * sq + a * sa + i. */
HK_EL_FN void hk_el_iso_sums(const int d, int nq, const double *g, int sq, int sa, const double *wq,
                             int a, int b, double S[3][3])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            S[i][j] = 0;
    for (int q = 0; q < nq; q++) {
        const double *ga = g + (size_t)q * sq + (size_t)a * sa,
                     *gb = g + (size_t)q * sq + (size_t)b * sa;
        const double w = wq[q];
        for (int i = 0; i < d; i++) {
            const double wa = w * ga[i];
            for (int j = 0; j < d; j++)
                S[i][j] += wa * gb[j];
        }
    }
}

HK_EL_FN double hk_el_trace(int d, const double S[3][3])
{
    double tr = 0;
    for (int i = 0; i < d; i++)
        tr += S[i][i];
    return tr;
}

/* K_ab[i][j] = lambda S_ij + mu S_ji + mu tr(S) delta_ij (S of the pair a <= b). */
HK_EL_FN double hk_el_iso_entry(const double S[3][3], double tr, double lam, double mu, int i,
                                int j)
{
    return lam * S[i][j] + mu * S[j][i] + (i == j ? mu * tr : 0);
}

/* Block (a, b) of the isotropic element matrix, row-major d x d, with the digits
 * hk_el_stiffness_iso leaves there: it forms the pairs a <= b and writes each block and its
 * transpose, the diagonal block's lower triangle last. */
HK_EL_FN void hk_el_iso_block(const int d, int nq, const double *g, int sq, int sa,
                              const double *wq, int a, int b, double lam, double mu, double *blk)
{
    double S[3][3];
    hk_el_iso_sums(d, nq, g, sq, sa, wq, a < b ? a : b, a < b ? b : a, S);
    const double tr = hk_el_trace(d, S);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            const int r = a < b ? i : a > b ? j : (i > j ? i : j);
            const int c = a < b ? j : a > b ? i : (i > j ? j : i);
            blk[i * d + j] = hk_el_iso_entry(S, tr, lam, mu, r, c);
        }
}

/* Isotropic element stiffness Ke (Lame constants lam, mu) and, when fe != NULL, the
 * consistent body load fe = int N^T b. fac scales both (thickness in 2D). Returns 1 when
 * det J <= 0 (or is not a number) at a quadrature point, 0 otherwise.
 *
 * Per node pair (a, b >= a) the d x d sums S_ij = sum_q w_q g_a[i] g_b[j] are formed once,
 * then K_ab[i][j] = lambda S_ij + mu S_ji + mu tr(S) delta_ij and K_ba = K_ab^T: about 3x fewer
 * operations than B^T D B per point. d is a constant in hk_el_stiffness_iso's two calls
 * (specialised). */
HK_EL_FN int hk_el_stiffness_iso_d(const hk_elref *r, const int d, const double (*x)[3], double lam,
                                   double mu, double fac, const double bf[3],
                                   double *HK_RESTRICT Ke, double *HK_RESTRICT fe)
{
    const int n = r->nnodes, nd = n * d, nq = r->nqp;
    double g[HK_EL_MAXQ][HK_EL_MAXN][3];
    double wq[HK_EL_MAXQ];
    if (fe) memset(fe, 0, sizeof(double) * (size_t)nd);
    for (int q = 0; q < nq; q++) {
        double J[3][3] = {{0}}, Ji[3][3];
        for (int a = 0; a < n; a++)
            for (int i = 0; i < d; i++)
                for (int k = 0; k < d; k++)
                    J[i][k] += x[a][i] * r->dN[q][a][k];
        double det = hk_el_invert(d, J, Ji);
        if (!(det > 0)) return 1;
        const double w = r->qw[q] * det * fac;
        wq[q] = w;
        for (int a = 0; a < n; a++)
            for (int i = 0; i < d; i++) {
                double s = 0;
                for (int k = 0; k < d; k++)
                    s += r->dN[q][a][k] * Ji[k][i];
                g[q][a][i] = s;
            }
        if (fe)
            for (int a = 0; a < n; a++)
                for (int i = 0; i < d; i++)
                    fe[a * d + i] += w * r->N[q][a] * bf[i];
    }
    for (int a = 0; a < n; a++) {
        for (int b = a; b < n; b++) {
            double S[3][3];
            hk_el_iso_sums(d, nq, &g[0][0][0], HK_EL_MAXN * 3, 3, wq, a, b, S);
            const double tr = hk_el_trace(d, S);
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++) {
                    const double v = hk_el_iso_entry(S, tr, lam, mu, i, j);
                    Ke[(size_t)(a * d + i) * nd + b * d + j] = v;
                    Ke[(size_t)(b * d + j) * nd + a * d + i] = v;
                }
        }
    }
    return 0;
}

/* hk_el_stiffness_iso_d for d = 2 or 3. */
HK_EL_FN int hk_el_stiffness_iso(const hk_elref *r, int d, const double (*x)[3], double lam,
                                 double mu, double fac, const double bf[3], double *Ke, double *fe)
{
    return d == 2 ? hk_el_stiffness_iso_d(r, 2, x, lam, mu, fac, bf, Ke, fe)
                  : hk_el_stiffness_iso_d(r, 3, x, lam, mu, fac, bf, Ke, fe);
}

/* Shape-function gradients g[a][i] and weights w (det J * weight * fac) at quadrature point q;
 * axisymmetric (rad != NULL): the radius r = x there in *rad and the weight times r (per
 * radian). Returns 1 when det J <= 0 or r <= 0 (or is not a number). */
HK_EL_FN int hk_el_point_gradients(const hk_elref *r, int d, const double (*x)[3], int q,
                                   double fac, double (*g)[3], double *w, double *rad)
{
    if (rad) {
        *rad = 0;
        for (int a = 0; a < r->nnodes; a++)
            *rad += r->N[q][a] * x[a][0];
        if (!(*rad > 0)) return 1;
        fac *= *rad;
    }
    double J[3][3] = {{0}}, Ji[3][3];
    for (int a = 0; a < r->nnodes; a++)
        for (int i = 0; i < d; i++)
            for (int k = 0; k < d; k++)
                J[i][k] += x[a][i] * r->dN[q][a][k];
    double det = hk_el_invert(d, J, Ji);
    if (!(det > 0)) return 1;
    *w = r->qw[q] * det * fac;
    for (int a = 0; a < r->nnodes; a++)
        for (int i = 0; i < d; i++) {
            double s = 0;
            for (int k = 0; k < d; k++)
                s += r->dN[q][a][k] * Ji[k][i];
            g[a][i] = s;
        }
    return 0;
}

/* Strain-displacement block of node a: B[v][i] (v Voigt row, i displacement component); 2D
 * xx yy xy, 3D xx yy zz xy yz xz with engineering shears. */
HK_EL_FN void hk_el_bmatrix(int d, const double g[3], double B[6][3])
{
    memset(B, 0, sizeof(double) * 18);
    if (d == 2) {
        B[0][0] = g[0], B[1][1] = g[1];
        B[2][0] = g[1], B[2][1] = g[0];
    } else {
        B[0][0] = g[0], B[1][1] = g[1], B[2][2] = g[2];
        B[3][0] = g[1], B[3][1] = g[0];
        B[4][1] = g[2], B[4][2] = g[1];
        B[5][0] = g[2], B[5][2] = g[0];
    }
}

/* Axisymmetric strain-displacement block of node a (components u_r u_z): rows rr zz tt rz,
 * the hoop row tt = u_r / r with Nr = N_a / r. */
HK_EL_FN void hk_el_bmatrix_axi(const double g[3], double Nr, double B[6][3])
{
    memset(B, 0, sizeof(double) * 18);
    B[0][0] = g[0], B[1][1] = g[1], B[2][0] = Nr;
    B[3][0] = g[1], B[3][1] = g[0];
}

/* B block of node a at quadrature point q: plane/solid, or axisymmetric when rad > 0. */
HK_EL_FN void hk_el_bmatrix_at(const hk_elref *r, int d, int q, int a, const double g[3],
                               double rad, double B[6][3])
{
    if (rad > 0)
        hk_el_bmatrix_axi(g, r->N[q][a] / rad, B);
    else
        hk_el_bmatrix(d, g, B);
}

/* DB = D B of one node's B block (nv Voigt rows, d columns), summed from zero. */
HK_EL_FN void hk_el_db(int nv, int d, const double D[6][6], const double B[6][3], double DB[6][3])
{
    for (int v = 0; v < nv; v++)
        for (int i = 0; i < d; i++) {
            DB[v][i] = 0;
            for (int k = 0; k < nv; k++)
                DB[v][i] += D[v][k] * B[k][i];
        }
}

/* Entry (j, i) of B_b^T (D B_a): sum_v Bb[v][j] DB[v][i]. */
HK_EL_FN double hk_el_btdb(int nv, const double Bb[6][3], const double DB[6][3], int j, int i)
{
    double s = 0;
    for (int v = 0; v < nv; v++)
        s += Bb[v][j] * DB[v][i];
    return s;
}

/* D with shift subtracted from its normal-normal entries (nv = 3: xx yy; else xx yy zz). */
HK_EL_FN void hk_el_shifted_law(const hk_law *L, double shift, double D[6][6])
{
    const int nn = L->nv == 3 ? 2 : 3;
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            D[i][j] = L->D[i][j] - (i < nn && j < nn ? shift : 0);
}

/* Element stiffness B^T D B of a general law (and the body load, as hk_el_stiffness_iso), with
 * shift subtracted from the normal-normal entries of D (selective integration: the volumetric
 * part kappa goes on the reduced rule). axi: the axisymmetric B and weight r. */
HK_EL_FN int hk_el_stiffness_general(const hk_elref *r, int d, const double (*x)[3],
                                     const hk_law *L, double shift, int axi, double fac,
                                     const double bf[3], double *Ke, double *fe)
{
    const int n = r->nnodes, nd = n * d, nv = L->nv;
    double D[6][6];
    hk_el_shifted_law(L, shift, D);
    memset(Ke, 0, sizeof(double) * (size_t)nd * nd);
    if (fe) memset(fe, 0, sizeof(double) * (size_t)nd);
    for (int q = 0; q < r->nqp; q++) {
        double g[HK_EL_MAXN][3], w, rad = 0;
        if (hk_el_point_gradients(r, d, x, q, fac, g, &w, axi ? &rad : NULL)) return 1;
        for (int a = 0; a < n; a++) {
            double Ba[6][3], DB[6][3];
            hk_el_bmatrix_at(r, d, q, a, g[a], rad, Ba);
            hk_el_db(nv, d, D, Ba, DB);
            for (int b = 0; b < n; b++) {
                double Bb[6][3];
                hk_el_bmatrix_at(r, d, q, b, g[b], rad, Bb);
                for (int j = 0; j < d; j++)
                    for (int i = 0; i < d; i++)
                        Ke[(size_t)(b * d + j) * nd + a * d + i] +=
                            w * hk_el_btdb(nv, Bb, DB, j, i);
            }
            if (fe)
                for (int i = 0; i < d; i++)
                    fe[a * d + i] += w * r->N[q][a] * bf[i];
        }
    }
    return 0;
}

/* Gradients g[a][i] and weight w (rule weight x det J x fac x r in axisymmetry) at point q of
 * the reduced rule; axisymmetric: g[a][0] includes the hoop term N_a / r, so that
 * sum_a g[a][i] u_a[i] is div u. Returns 1 when det J <= 0 or r <= 0 (or not a number). */
HK_EL_FN int hk_el_reduced_gradients(const hk_elref *r, int d, const double (*x)[3], int q, int axi,
                                     double fac, double (*g)[3], double *w)
{
    const int n = r->nnodes;
    double J[3][3] = {{0}}, Ji[3][3];
    for (int a = 0; a < n; a++)
        for (int i = 0; i < d; i++)
            for (int k = 0; k < d; k++)
                J[i][k] += x[a][i] * r->dNr[q][a][k];
    double det = hk_el_invert(d, J, Ji), rad = 1;
    if (axi) {
        rad = 0;
        for (int a = 0; a < n; a++)
            rad += r->Nr[q][a] * x[a][0];
    }
    if (!(det > 0) || !(rad > 0)) return 1;
    *w = r->qwr[q] * det * fac * rad;
    for (int a = 0; a < n; a++)
        for (int i = 0; i < d; i++) {
            double s = 0;
            for (int k = 0; k < d; k++)
                s += r->dNr[q][a][k] * Ji[k][i];
            g[a][i] = s;
        }
    if (axi) /* div u = du_r/dr + u_r / r + du_z/dz */
        for (int a = 0; a < n; a++)
            g[a][0] += r->Nr[q][a] / rad;
    return 0;
}

/* The axisymmetric mean dilatation over the full rule (2D): dv[a * 2 + i] = int div(N_a)_i r dA,
 * V = int r dA, TV = int dT r dA (dT = dT_region + the nodal field Tn interpolated; Tn may
 * be NULL). Returns 1 when det J <= 0 or r <= 0 at a point. */
HK_EL_FN int hk_el_mean_dilatation(const hk_elref *r, const double (*x)[3], double fac,
                                   double dT_region, const double *Tn, double *dv, double *V,
                                   double *TV)
{
    const int n = r->nnodes, d = 2;
    for (int a = 0; a < n * d; a++)
        dv[a] = 0;
    *V = 0, *TV = 0;
    for (int q = 0; q < r->nqp; q++) {
        double g[HK_EL_MAXN][3], w, rad;
        if (hk_el_point_gradients(r, d, x, q, fac, g, &w, &rad)) return 1;
        double dT = dT_region;
        for (int a = 0; a < n; a++) {
            dv[a * d] += w * (g[a][0] + r->N[q][a] / rad);
            dv[a * d + 1] += w * g[a][1];
            if (Tn) dT += r->N[q][a] * Tn[a];
        }
        *V += w, *TV += w * dT;
    }
    return 0;
}

/* Selective integration on the reduced rule: adds the volumetric stiffness
 * kappa int div(N_a) div(N_b) to Ke when Ke != NULL (the full-rule part was formed with
 * lambda - kappa), and the thermal load kappa int div(N_a) 3 alpha dT to fe when fe != NULL
 * (s0 = 3 kappa alpha; dT = dT_region + the nodal field Tn interpolated): an isotropic
 * expansion is purely volumetric, so its load belongs on the same rule as the volumetric
 * stiffness, or a free body heated on a distorted mesh would not come out stress-free. axi:
 * the divergence includes the hoop strain u_r / r, the weight r; where the reduced rule has
 * one point (quad4, tri6) it is the mean dilatation over the full rule instead, since one
 * point does not integrate int div(N_a) r dA exactly (the weight r adds a degree), which
 * would let a held, nearly incompressible body change its volume. Returns 1 when det J <= 0
 * (or r <= 0) at a point. */
HK_EL_FN int hk_el_volumetric_reduced(const hk_elref *r, int d, const double (*x)[3], double kappa,
                                      int axi, double fac, double *Ke, double s0, double dT_region,
                                      const double *Tn, double *fe)
{
    const int nq = r->nqr;
    if (!nq) return 0;
    const int n = r->nnodes, nd = n * d;
    if (axi && nq == 1) { /* mean dilatation: div_a = int div(N_a) r dA, V = int r dA */
        double dv[HK_EL_MAXN * 3], V, TV;
        if (hk_el_mean_dilatation(r, x, fac, dT_region, Tn, dv, &V, &TV)) return 1;
        if (Ke)
            for (int a = 0; a < nd; a++)
                for (int b = 0; b < nd; b++)
                    Ke[(size_t)a * nd + b] += kappa / V * dv[a] * dv[b];
        if (fe)
            for (int a = 0; a < nd; a++)
                fe[a] += s0 * TV / V * dv[a];
        return 0;
    }
    for (int q = 0; q < nq; q++) {
        double g[HK_EL_MAXN][3], w;
        if (hk_el_reduced_gradients(r, d, x, q, axi, fac, g, &w)) return 1;
        if (Ke)
            for (int a = 0; a < nd; a++)
                for (int b = 0; b < nd; b++)
                    Ke[(size_t)a * nd + b] += w * kappa * g[a / d][a % d] * g[b / d][b % d];
        if (fe) {
            double dT = dT_region;
            for (int a = 0; a < n && Tn; a++)
                dT += r->Nr[q][a] * Tn[a];
            for (int a = 0; a < nd; a++)
                fe[a] += w * s0 * dT * g[a / d][a % d];
        }
    }
    return 0;
}

/* The field with values v at the reduced points, at reference point xi: constant for one
 * point, the (bi/tri)linear interpolant through the 2^d Gauss points otherwise (wedges:
 * linear in the triangle times linear in zeta; pyramids: trilinear in the collapsed
 * coordinates). */
HK_EL_FN double hk_el_reduced_interp(hk_eltype t, const double xi[3], const double *v)
{
    const double s3 = 1.7320508075688772935;
    int d = 0;
    if (t == HK_EL_QUAD8 || t == HK_EL_QUAD9) d = 2;
    if (t == HK_EL_HEX20 || t == HK_EL_HEX27) d = 3;
    if (t == HK_EL_WEDGE15 || t == HK_EL_WEDGE18) {
        /* linear through the triangle's points (1/6,1/6), (2/3,1/6), (1/6,2/3) times linear
         * through zeta = -+1/sqrt(3), in the rule's order (triangle fastest) */
        const double p1 = 2 * xi[0] - 1.0 / 3, p2 = 2 * xi[1] - 1.0 / 3;
        const double pt[3] = {1 - p1 - p2, p1, p2};
        const double pz[2] = {0.5 * (1 - s3 * xi[2]), 0.5 * (1 + s3 * xi[2])};
        double s = 0;
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 3; i++)
                s += pt[i] * pz[k] * v[3 * k + i];
        return s;
    }
    if (t == HK_EL_PYR13 || t == HK_EL_PYR14) {
        /* linear in the collapsed a, b through -+1/sqrt(3) and in c through the two
         * Gauss-Jacobi points of the pyramid rule, in its order (a fastest) */
        const double c0 = 0.12251482265544137787, c1 = 0.54415184401122528880;
        const double w = 1 - xi[2];
        const double a = fabs(w) > 1e-13 ? xi[0] / w : 0, b = fabs(w) > 1e-13 ? xi[1] / w : 0;
        const double pa[2] = {0.5 * (1 - s3 * a), 0.5 * (1 + s3 * a)};
        const double pb[2] = {0.5 * (1 - s3 * b), 0.5 * (1 + s3 * b)};
        const double h = c1 - c0;
        const double pc[2] = {(c1 - xi[2]) / h, (xi[2] - c0) / h};
        double s = 0;
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < 2; j++)
                for (int i = 0; i < 2; i++)
                    s += pa[i] * pb[j] * pc[k] * v[4 * k + 2 * j + i];
        return s;
    }
    if (d == 0) return v[0]; /* one point: constant */
    /* linear Lagrange through -+1/sqrt(3) in each direction, points in the rule's order */
    double s = 0;
    for (int q = 0; q < (1 << d); q++) {
        double w = 1;
        for (int k = 0; k < d; k++) {
            const int side = (q >> k) & 1; /* 0: -1/sqrt(3), 1: +1/sqrt(3) */
            w *= 0.5 * (1 + (side ? 1 : -1) * s3 * xi[k]);
        }
        s += w * v[q];
    }
    return s;
}

/* Adds the thermal load int B^T sig0 dT to fe; dT = dT_region + the nodal field Tn
 * (element-node values, NULL: none) interpolated. */
HK_EL_FN int hk_el_thermal_load(const hk_elref *r, int d, const double (*x)[3], const hk_law *L,
                                int axi, double fac, double dT_region, const double *Tn, double *fe)
{
    const int n = r->nnodes;
    for (int q = 0; q < r->nqp; q++) {
        double g[HK_EL_MAXN][3], w, rad = 0;
        if (hk_el_point_gradients(r, d, x, q, fac, g, &w, axi ? &rad : NULL)) return 1;
        double dT = dT_region;
        if (Tn)
            for (int a = 0; a < n; a++)
                dT += r->N[q][a] * Tn[a];
        for (int a = 0; a < n; a++) {
            double B[6][3];
            hk_el_bmatrix_at(r, d, q, a, g[a], rad, B);
            for (int i = 0; i < d; i++) {
                double s = 0;
                for (int v = 0; v < L->nv; v++)
                    s += B[v][i] * L->sig0[v];
                fe[a * d + i] += w * dT * s;
            }
        }
    }
    return 0;
}

/* Consistent mass: the scalar matrix me[a * n + b] = int rho N_a N_b (n x n, symmetric) on the
 * rule of r, which should be the mass rule (hk_elref_mass_get: exact for undistorted
 * elements); fac is the thickness in 2D, axi adds the weight r per radian as the stiffness
 * has it. The element mass matrix is me[a][b] times the d x d identity: every component
 * carries the same inertia. Returns 1 when det J <= 0 or r <= 0 at a point, 0 otherwise. */
HK_EL_FN int hk_el_mass(const hk_elref *r, int d, const double (*x)[3], double rho, int axi,
                        double fac, double *HK_RESTRICT me)
{
    const int n = r->nnodes;
    memset(me, 0, sizeof(double) * (size_t)n * n);
    for (int q = 0; q < r->nqp; q++) {
        double J[3][3] = {{0}}, Ji[3][3], rad = 1;
        for (int a = 0; a < n; a++)
            for (int i = 0; i < d; i++)
                for (int k = 0; k < d; k++)
                    J[i][k] += x[a][i] * r->dN[q][a][k];
        const double det = hk_el_invert(d, J, Ji);
        if (axi) {
            rad = 0;
            for (int a = 0; a < n; a++)
                rad += r->N[q][a] * x[a][0];
        }
        if (!(det > 0) || !(rad > 0)) return 1;
        const double w = r->qw[q] * det * fac * rad * rho;
        const double *N = r->N[q];
        for (int a = 0; a < n; a++) {
            const double wa = w * N[a];
            for (int b = a; b < n; b++)
                me[a * n + b] += wa * N[b];
        }
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < a; b++)
            me[a * n + b] = me[b * n + a];
    return 0;
}

/* Lumped mass by HRZ diagonal scaling (Hinton, Rock and Zienkiewicz 1976): the diagonal of the
 * consistent me (n x n) scaled so that it sums to the element's mass sum_ab me[a][b]. Every
 * entry is positive, also for quadratic elements, where the row sums are not (tet10: the
 * corners' rows sum to -rho V / 20; quad8 and hex20 likewise); for the linear elements the
 * two agree on undistorted shapes. */
HK_EL_FN void hk_el_mass_lump_hrz(int n, const double *me, double *diag)
{
    double total = 0, trace = 0;
    for (int a = 0; a < n * n; a++)
        total += me[a];
    for (int a = 0; a < n; a++)
        trace += me[a * n + a];
    const double s = trace > 0 ? total / trace : 0;
    for (int a = 0; a < n; a++)
        diag[a] = me[a * n + a] * s;
}

#endif
