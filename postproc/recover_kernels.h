/* The recovery's per-element and per-node arithmetic (postproc/recover.c), plain functions of
 * arrays: the host's hk_postproc and the device recovery (fem_cuda/) run this same code, as
 * __host__ __device__ functions in a CUDA unit (element_kernels.h's HK_EL_FN). */
#ifndef HOOKE_POSTPROC_RECOVER_KERNELS_H
#define HOOKE_POSTPROC_RECOVER_KERNELS_H

#include <math.h>

#include "element_kernels.h" /* assembly/: HK_EL_FN, the reduced-point interpolant */
#include "elements.h"        /* assembly/: reference elements and their tables */

/* Tensor strain eps (xx yy zz xy yz xz) from the displacement gradient G (3x3, zeros out of
 * plane in 2D) and the stress under the law at temperature change dT, net of the thermal
 * strain: sig = D (strain - dT alpha). Plane stress fills the out-of-plane strain that keeps
 * sig_zz = 0, plane strain the out-of-plane stress that keeps eps_zz = 0. */
HK_EL_FN void hk_rec_constitutive(const hk_law *L, hk_analysis an, int dim, const double G[3][3],
                                  double dT, double eps[6], double sig[6])
{
    const int plane[3] = {0, 1, 3};
    eps[0] = G[0][0], eps[1] = G[1][1], eps[2] = G[2][2];
    eps[3] = 0.5 * (G[0][1] + G[1][0]);
    eps[4] = 0.5 * (G[1][2] + G[2][1]);
    eps[5] = 0.5 * (G[0][2] + G[2][0]);
    double e6[6]; /* engineering */
    for (int k = 0; k < 6; k++)
        e6[k] = k < 3 ? eps[k] : 2 * eps[k];
    if (an == HK_AXISYMMETRIC) { /* rr zz tt rz: the first four; no theta shears */
        for (int i = 0; i < 6; i++) {
            double t = 0;
            for (int k = 0; k < 4 && i < 4; k++)
                t += L->D[i][k] * (e6[k] - dT * L->alpha[k]);
            sig[i] = t;
        }
        return;
    }
    if (dim == 3 || (an == HK_PLANE_STRAIN && L->has3d)) {
        for (int i = 0; i < 6; i++) {
            double t = 0;
            for (int k = 0; k < 6; k++)
                t += L->D6[i][k] * (e6[k] - dT * L->alpha6[k]);
            sig[i] = t;
        }
        return;
    }
    for (int k = 0; k < 6; k++)
        sig[k] = 0;
    for (int i = 0; i < 3; i++) {
        double t = -dT * L->sig0[i];
        for (int k = 0; k < 3; k++)
            t += L->D[i][k] * e6[plane[k]];
        sig[plane[i]] = t;
    }
    if (an == HK_PLANE_STRESS && L->has3d)
        for (int o = 2; o < 6; o += (o == 2 ? 2 : 1)) { /* zz yz xz from the compliance */
            double t = dT * L->alpha6[o];
            for (int k = 0; k < 3; k++)
                t += L->S6[o][plane[k]] * sig[plane[k]];
            eps[o] = o == 2 ? t : 0.5 * t;
        }
}

#ifdef __CUDACC__
#define HK_REC_INLINE __host__ __device__ static __forceinline__
#else
#define HK_REC_INLINE static inline __attribute__((always_inline))
#endif

/* Physical derivatives dNdx[a][i] from the natural ones dN; returns det J (<= 0: inverted).
 * Inlined into hk_rec_shape_x once per dimension, so the loops over i and j have constant
 * bounds. */
HK_REC_INLINE double hk_rec_shape_x_dim(const int dim, int nn, const double *X,
                                        const double (*dN)[3], double (*dNdx)[3])
{
    double J[3][3] = {{0}};
    for (int a = 0; a < nn; a++)
        for (int i = 0; i < dim; i++)
            for (int j = 0; j < dim; j++)
                J[i][j] += X[3 * a + i] * dN[a][j];
    double det, Ji[3][3] = {{0}};
    if (dim == 2) {
        det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
        Ji[0][0] = J[1][1] / det, Ji[0][1] = -J[0][1] / det;
        Ji[1][0] = -J[1][0] / det, Ji[1][1] = J[0][0] / det;
    } else {
        det = J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
              J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
              J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
        Ji[0][0] = (J[1][1] * J[2][2] - J[1][2] * J[2][1]) / det;
        Ji[0][1] = (J[0][2] * J[2][1] - J[0][1] * J[2][2]) / det;
        Ji[0][2] = (J[0][1] * J[1][2] - J[0][2] * J[1][1]) / det;
        Ji[1][0] = (J[1][2] * J[2][0] - J[1][0] * J[2][2]) / det;
        Ji[1][1] = (J[0][0] * J[2][2] - J[0][2] * J[2][0]) / det;
        Ji[1][2] = (J[0][2] * J[1][0] - J[0][0] * J[1][2]) / det;
        Ji[2][0] = (J[1][0] * J[2][1] - J[1][1] * J[2][0]) / det;
        Ji[2][1] = (J[0][1] * J[2][0] - J[0][0] * J[2][1]) / det;
        Ji[2][2] = (J[0][0] * J[1][1] - J[0][1] * J[1][0]) / det;
    }
    /* dN/dx_i = sum_j dN/dxi_j dxi_j/dx_i, dxi/dx = J^-1 */
    for (int a = 0; a < nn; a++)
        for (int i = 0; i < 3; i++) {
            double s = 0;
            for (int j = 0; j < dim; j++)
                s += dN[a][j] * Ji[j][i];
            dNdx[a][i] = i < dim ? s : 0;
        }
    return det;
}

HK_EL_FN double hk_rec_shape_x(int dim, int nn, const double *X, const double (*dN)[3],
                               double (*dNdx)[3])
{
    return dim == 3 ? hk_rec_shape_x_dim(3, nn, X, dN, dNdx)
                    : hk_rec_shape_x_dim(2, nn, X, dN, dNdx);
}

/* Displacement gradient G[i][j] = du_i/dx_j from element displacements ue (3 per node). */
HK_EL_FN void hk_rec_grad_u(int nn, const double *ue, const double (*dNdx)[3], double G[3][3])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            G[i][j] = 0;
    for (int a = 0; a < nn; a++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                G[i][j] += ue[3 * a + i] * dNdx[a][j];
}

/* Axisymmetric: the hoop strain u_r / r at a point with shape functions N into G[2][2];
 * returns 1 when the point's radius is not positive. */
HK_EL_FN int hk_rec_hoop(int nn, const double *X, const double *ue, const double *N, double G[3][3])
{
    double rad = 0, ur = 0;
    for (int a = 0; a < nn; a++)
        rad += N[a] * X[3 * a], ur += N[a] * ue[3 * a];
    if (!(rad > 0)) return 1;
    G[2][2] = ur / rad;
    return 0;
}

/* Per-element results, scattered afterwards in element order. */
typedef struct hk_rec_elem {
    double eps[HK_EL_MAXN][6], sig[HK_EL_MAXN][6]; /* at the element's nodes */
    double fint[HK_EL_MAXN][3];
    double cell_sig[6];
    int err;    /* 0, or 1 = non-positive Jacobian */
    double det; /* the offending determinant */
} hk_rec_elem;

/* hk_rec_element with the element's number of nodes and dimension given (nn = el->nnodes,
 * dim = el->dim): inlined where they are constants (the device's HK_FEM_REC_FIXED), so that
 * the loops over the nodes unroll and the element's arrays can stay in registers. */
HK_REC_INLINE int hk_rec_element_n(const int nn, const int dim, const hk_elref *el, hk_analysis an,
                                   const hk_law *L, double dTr, const double *node_dT, double thick,
                                   const double *coords, const double *u3, const int32_t *nodes,
                                   hk_rec_elem *out)
{
    const int plane[3] = {0, 1, 3};
    const int axi = an == HK_AXISYMMETRIC;
    const hk_eltype t = el->type;
    double X[3 * HK_EL_MAXN], ue[3 * HK_EL_MAXN], Tn[HK_EL_MAXN];
    for (int a = 0; a < nn; a++)
        Tn[a] = dTr + (node_dT ? node_dT[nodes[a]] : 0);
    for (int a = 0; a < nn; a++)
        for (int i = 0; i < 3; i++) {
            X[3 * a + i] = coords[3 * (int64_t)nodes[a] + i];
            ue[3 * a + i] = u3[3 * (int64_t)nodes[a] + i];
        }
    double dNdx[HK_EL_MAXN][3], G[3][3], eps[6], sig[6];
    /* selective integration: the volumetric strain (net of the thermal one) at the reduced
     * points, whose interpolant replaces the pointwise one in the pressure, as in K; the
     * internal force takes the volumetric part kappa div(N_a) tr(eps) on these points, as K
     * does (the thermal load is there too, in f_ext) */
    int nr = 0;
    double vr[HK_EL_MAXQ];
    const double a3 = 3 * L->alpha6[0];
    for (int a = 0; a < nn; a++) /* the element's nodes only: every reader stops at nn */
        for (int i = 0; i < 3; i++)
            out->fint[a][i] = 0;
    if (L->selective) {
        const double *rw = el->qwr;
        nr = el->nqr;
        if (axi && nr == 1) { /* the mean dilatation over the full rule, as in K */
            double dv[HK_EL_MAXN][2] = {{0}}, V = 0, TV = 0, th = 0;
            for (int q = 0; q < el->nqp; q++) {
                const double det = hk_rec_shape_x(dim, nn, X, (const double(*)[3])el->dN[q], dNdx);
                hk_rec_grad_u(nn, ue, (const double(*)[3])dNdx, G);
                if (!(det > 0) || hk_rec_hoop(nn, X, ue, el->N[q], G)) {
                    out->err = 1, out->det = det;
                    return 1;
                }
                double rad = 0, T = 0;
                for (int a = 0; a < nn; a++)
                    rad += el->N[q][a] * X[3 * a], T += el->N[q][a] * Tn[a];
                const double w = el->qw[q] * det * thick * rad;
                for (int a = 0; a < nn; a++) {
                    dv[a][0] += w * (dNdx[a][0] + el->N[q][a] / rad);
                    dv[a][1] += w * dNdx[a][1];
                }
                V += w, TV += w * T, th += w * (G[0][0] + G[1][1] + G[2][2]);
            }
            vr[0] = (th - a3 * TV) / V;
            for (int a = 0; a < nn; a++)
                for (int i = 0; i < 2; i++)
                    out->fint[a][i] += L->kappa * th / V * dv[a][i];
        }
        for (int q = 0; q < nr && !(axi && nr == 1); q++) {
            const double *N = el->Nr[q], (*dN)[3] = el->dNr[q];
            double T = 0, rad = 1;
            const double det = hk_rec_shape_x(dim, nn, X, dN, dNdx);
            if (!(det > 0)) {
                out->err = 1, out->det = 0;
                return 1;
            }
            hk_rec_grad_u(nn, ue, (const double(*)[3])dNdx, G);
            if (axi && hk_rec_hoop(nn, X, ue, N, G)) {
                out->err = 1, out->det = 0;
                return 1;
            }
            if (axi) rad = 0;
            for (int a = 0; a < nn; a++) {
                T += N[a] * Tn[a];
                if (axi) rad += N[a] * X[3 * a];
            }
            const double tr = G[0][0] + G[1][1] + G[2][2];
            vr[q] = tr - a3 * T;
            const double w = rw[q] * det * thick * rad * L->kappa * tr;
            for (int a = 0; a < nn; a++)
                for (int i = 0; i < dim; i++)
                    out->fint[a][i] += w * (dNdx[a][i] + (axi && i == 0 ? N[a] / rad : 0));
        }
    }
    const double *qw = el->qw;
    int nq = el->nqp;
    double axis_tol = 0; /* nodes closer to the axis than this count as on it */
    if (axi) {
        double lo = INFINITY, hi = -INFINITY;
        for (int a = 0; a < nn; a++)
            for (int i = 0; i < 2; i++)
                lo = fmin(lo, X[3 * a + i]), hi = fmax(hi, X[3 * a + i]);
        axis_tol = 1e-9 * (hi - lo);
    }
    double vol = 0, cell_eps[6] = {0, 0, 0, 0, 0, 0};
    for (int k = 0; k < 6; k++)
        out->cell_sig[k] = 0;
    out->err = 0;
    for (int q = 0; q < nq; q++) {
        double det = hk_rec_shape_x(dim, nn, X, (const double(*)[3])el->dN[q], dNdx);
        if (!(det > 0)) {
            out->err = 1, out->det = det;
            return 1;
        }
        hk_rec_grad_u(nn, ue, (const double(*)[3])dNdx, G);
        double rad = 1;
        if (axi) {
            rad = 0;
            for (int a = 0; a < nn; a++)
                rad += el->N[q][a] * X[3 * a];
            if (hk_rec_hoop(nn, X, ue, el->N[q], G)) {
                out->err = 1, out->det = 0;
                return 1;
            }
        }
        double dT = 0;
        for (int a = 0; a < nn; a++)
            dT += el->N[q][a] * Tn[a];
        hk_rec_constitutive(L, an, dim, (const double(*)[3])G, dT, eps, sig);
        double vq = 0; /* selective: the reduced volumetric strain here */
        if (nr) {
            vq = hk_el_reduced_interp(t, el->qp[q], vr);
            const double dv = L->kappa * (vq - (G[0][0] + G[1][1] + G[2][2] - a3 * dT));
            for (int k = 0; k < 3; k++)
                sig[k] += dv;
        }
        double dv = qw[q] * det * thick * rad;
        vol += dv;
        for (int k = 0; k < 6; k++)
            out->cell_sig[k] += dv * sig[k], cell_eps[k] += dv * eps[k];
        /* f_int_a = integral B_a^T sigma: (sigma grad N_a) with the symmetric tensor, of the
         * stress before the thermal part (the system's f_ext holds the thermal loads);
         * selective: of D eps - kappa tr(eps) (the volumetric part came from the reduced
         * points above) */
        double st[6];
        for (int k = 0; k < 6; k++)
            st[k] = sig[k];
        for (int k = 0; k < L->nv; k++)
            st[dim == 2 && !axi ? plane[k] : k] += dT * L->sig0[k];
        if (nr)
            for (int k = 0; k < 3; k++)
                st[k] -= L->kappa * (vq + a3 * dT);
        double S[3][3] = {{st[0], st[3], st[5]}, {st[3], st[1], st[4]}, {st[5], st[4], st[2]}};
        for (int a = 0; a < nn; a++)
            for (int i = 0; i < dim; i++) {
                double s = 0;
                for (int j = 0; j < dim; j++)
                    s += S[i][j] * dNdx[a][j];
                if (axi && i == 0) s += st[2] * el->N[q][a] / rad; /* hoop: sigma_tt N_a / r */
                out->fint[a][i] += dv * s;
            }
    }
    for (int k = 0; k < 6; k++)
        out->cell_sig[k] /= vol, cell_eps[k] /= vol;
    /* values at the element's nodes, from its own shape functions. A strongly curved
     * quadratic element can have det J <= 0 at a corner while every Gauss point is fine
     * (the assembly accepts it): such a node takes the element average instead. */
    for (int a = 0; a < nn; a++) {
        double det = hk_rec_shape_x(dim, nn, X, (const double(*)[3])el->dNn[a], dNdx);
        if (!(det > 0)) {
            for (int k = 0; k < 6; k++)
                out->eps[a][k] = cell_eps[k], out->sig[a][k] = out->cell_sig[k];
            continue;
        }
        hk_rec_grad_u(nn, ue, (const double(*)[3])dNdx, G);
        if (axi) { /* u_r / r, or on the axis its limit du_r/dr */
            const double ra = X[3 * a];
            G[2][2] = ra > axis_tol ? ue[3 * a] / ra : G[0][0];
        }
        hk_rec_constitutive(L, an, dim, (const double(*)[3])G, Tn[a], out->eps[a], out->sig[a]);
        if (nr) {
            const double dv = L->kappa * (hk_el_reduced_interp(t, el->xi[a], vr) -
                                          (G[0][0] + G[1][1] + G[2][2] - a3 * Tn[a]));
            for (int k = 0; k < 3; k++)
                out->sig[a][k] += dv;
        }
    }
    return 0;
}

/* Everything about one element (reference element el, nodes[], analysis an, law L, the
 * region's temperature change dTr, the nodal field node_dT or NULL, the 2D thickness):
 * returns 0 or 1 (inverted element; det in out). coords and u3 hold 3 values per node. */
HK_EL_FN int hk_rec_element(const hk_elref *el, hk_analysis an, const hk_law *L, double dTr,
                            const double *node_dT, double thick, const double *coords,
                            const double *u3, const int32_t *nodes, hk_rec_elem *out)
{
    return hk_rec_element_n(el->nnodes, el->dim, el, an, L, dTr, node_dT, thick, coords, u3, nodes,
                            out);
}

/* Von Mises stress of s = xx yy zz xy yz xz. */
HK_EL_FN double hk_rec_von_mises(const double s[6])
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

/* Eigenvalues of the symmetric tensor s (xx yy zz xy yz xz), sorted descending: cyclic Jacobi
 * rotations, robust for repeated eigenvalues and accurate to rounding; converges in a handful
 * of sweeps. */
HK_EL_FN void hk_rec_principal(const double s[6], double ev[3])
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

/* A node's averages (the sums of its count elements' values), von Mises stress and principal
 * stresses. */
HK_EL_FN void hk_rec_node_finish(double count, double strain[6], double stress[6], double *vm,
                                 double principal[3])
{
    if (count > 0)
        for (int k = 0; k < 6; k++) {
            strain[k] /= count;
            stress[k] /= count;
        }
    *vm = hk_rec_von_mises(stress);
    hk_rec_principal(stress, principal);
}

#endif
