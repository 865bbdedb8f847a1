/* The small dense kernels of the block IC(0) / ILU(0) on node blocks (bs x bs, row-major),
 * shared by the CPU reference (solver/pc/factor_cpu.c) and the CUDA version
 * (cuda/cuda_factor.cu), so both form the same sums in the same order. Both files are
 * compiled without fused multiply-add (CMakeLists.txt), so their results agree bit for bit.
 * Also the column search in a sorted row that the CPU and CUDA factorisations share
 * (solver/pc/iterfact.c, cuda/cuda_factor.cu). */
#ifndef HOOKE_PC_FACTOR_BLOCK_H
#define HOOKE_PC_FACTOR_BLOCK_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define HK_HD __host__ __device__
#else
#define HK_HD
#endif

/* Position of column c in colind[lo, hi) (sorted), or -1. */
HK_HD static inline int64_t find_in(const int32_t *colind, int64_t lo, int64_t hi, int32_t c)
{
    const int64_t end = hi;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (colind[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < end && colind[lo] == c ? lo : -1;
}

/* Position of column c in row r of a CSR pattern with sorted rows, or -1. */
HK_HD static inline int64_t find_col(const int64_t *rowptr, const int32_t *colind, int64_t r,
                                     int32_t c)
{
    return find_in(colind, rowptr[r], rowptr[r + 1], c);
}

/* S -= X Y^T */
HK_HD static inline void block_sub_xyt(int bs, const double *X, const double *Y, double *S)
{
    for (int a = 0; a < bs; a++)
        for (int c = 0; c < bs; c++) {
            double s = 0;
            for (int d = 0; d < bs; d++)
                s += X[a * bs + d] * Y[c * bs + d];
            S[a * bs + c] -= s;
        }
}

/* In-place Cholesky of D's lower triangle; returns the first row whose pivot is not positive
 * and finite (*piv: its value), else -1. */
HK_HD static inline int block_cholesky(int bs, double *D, double *piv)
{
    for (int c = 0; c < bs; c++) {
        double d = D[c * bs + c];
        for (int k = 0; k < c; k++)
            d -= D[c * bs + k] * D[c * bs + k];
        if (!(d > 0 && isfinite(d))) {
            *piv = d;
            return c;
        }
        D[c * bs + c] = sqrt(d);
        for (int a = c + 1; a < bs; a++) {
            double s = D[a * bs + c];
            for (int k = 0; k < c; k++)
                s -= D[a * bs + k] * D[c * bs + k];
            D[a * bs + c] = s / D[c * bs + c];
        }
        for (int a = 0; a < c; a++)
            D[a * bs + c] = 0; /* the strict upper triangle is not part of the factor */
    }
    return -1;
}

/* S := S L^-T for the lower triangular L: each row x of the result solves L x^T = s^T. */
HK_HD static inline void block_solve_lt(int bs, const double *L, double *S)
{
    for (int a = 0; a < bs; a++)
        for (int c = 0; c < bs; c++) {
            double s = S[a * bs + c];
            for (int d = 0; d < c; d++)
                s -= L[c * bs + d] * S[a * bs + d];
            S[a * bs + c] = s / L[c * bs + c];
        }
}

/* In-place LU without pivoting (unit l below the diagonal, u on and above); returns the first
 * row whose pivot is zero (|u_cc| <= tiny) or not finite (*piv: its value), else -1. */
HK_HD static inline int block_lu(int bs, double *D, double tiny, double *piv)
{
    for (int c = 0; c < bs; c++) {
        const double d = D[c * bs + c];
        if (!(isfinite(d) && fabs(d) > tiny)) {
            *piv = d;
            return c;
        }
        for (int a = c + 1; a < bs; a++) {
            const double l = D[a * bs + c] / d;
            D[a * bs + c] = l;
            for (int e = c + 1; e < bs; e++)
                D[a * bs + e] -= l * D[c * bs + e];
        }
    }
    return -1;
}

/* S := S u^-1 (u: the upper triangle of the LU F): each row y of the result solves y u = s. */
HK_HD static inline void block_solve_u_right(int bs, const double *F, double *S)
{
    for (int a = 0; a < bs; a++)
        for (int c = 0; c < bs; c++) {
            double s = S[a * bs + c];
            for (int d = 0; d < c; d++)
                s -= S[a * bs + d] * F[d * bs + c];
            S[a * bs + c] = s / F[c * bs + c];
        }
}

/* S := S l^-1 (l: the unit lower triangle of F): each row x solves x l = s, last column first. */
HK_HD static inline void block_solve_l_right(int bs, const double *F, double *S)
{
    for (int a = 0; a < bs; a++)
        for (int c = bs - 1; c >= 0; c--) {
            double s = S[a * bs + c];
            for (int d = c + 1; d < bs; d++)
                s -= S[a * bs + d] * F[d * bs + c];
            S[a * bs + c] = s;
        }
}

/* S := l^-1 S (l: the unit lower triangle of F), row by row from the top. */
HK_HD static inline void block_solve_l_left(int bs, const double *F, double *S)
{
    for (int a = 1; a < bs; a++)
        for (int d = 0; d < a; d++)
            for (int c = 0; c < bs; c++)
                S[a * bs + c] -= F[a * bs + d] * S[d * bs + c];
}

/* S -= X Y */
HK_HD static inline void block_sub_xy(int bs, const double *X, const double *Y, double *S)
{
    for (int a = 0; a < bs; a++)
        for (int c = 0; c < bs; c++) {
            double s = 0;
            for (int d = 0; d < bs; d++)
                s += X[a * bs + d] * Y[d * bs + c];
            S[a * bs + c] -= s;
        }
}

#endif
