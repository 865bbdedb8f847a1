/* Private pieces of the eigensolver (solver/eigen/): views of blocks of vectors, the small
 * dense routines of the Rayleigh-Ritz step on the host, and LOBPCG itself, written once
 * against the backend ops table (no CUDA, no raw device arrays). */
#ifndef HOOKE_EIGEN_IMPL_H
#define HOOKE_EIGEN_IMPL_H

#include "hk_impl.h"

/* ---- blocks (block.c) ------------------------------------------------------------------
 * A block is an fp64 hk_vec of n * k entries, k columns of n (the ops' layout, hk_impl.h). A
 * view of columns [c0, c0 + k) shares the block's memory: it is an hk_vec value whose data
 * points at column c0 (never freed by itself). */
hk_vec hk_block_cols(const hk_vec *B, int64_t n, int c0, int k);
/* Column j of a block as a vector of n entries. */
static inline hk_vec hk_block_col(const hk_vec *B, int64_t n, int j)
{
    return hk_block_cols(B, n, j, 1);
}
/* Copy columns [s0, s0 + k) of S to columns [d0, d0 + k) of D (blocks of n rows). */
int hk_block_copy(const hk_vec *S, int s0, hk_vec *D, int d0, int64_t n, int k);
/* y = A x column by column through the backend's block SpMV, or k single SpMVs where the
 * backend has none. */
int hk_block_spmv(hk_mat *A, int k, const hk_vec *X, hk_vec *Y);

/* ---- small dense matrices on the host (dense.c), column-major --------------------------- */

/* Symmetric eigenproblem of A (n x n, both triangles; destroyed): w ascending, V (n x n) the
 * orthonormal eigenvectors. Householder reduction to tridiagonal form, then implicit QR
 * steps with Wilkinson's shift; the same digits on every run. HK_ERR_NUMERIC when the QR steps
 * do not converge (30 n sweeps). */
int hk_eig_symeig(int n, double *A, double *w, double *V);
/* In-place Cholesky A = L L^T of the lower triangle (the upper is zeroed): the index of the
 * first pivot not above tiny (A is then partly overwritten), or -1. */
int hk_eig_cholesky(int n, double *A, double tiny);
/* B := L^-1 B and B := L^-T B for a lower triangular L (n x n) and B (n x k). */
void hk_eig_solve_lower(int n, const double *L, int k, double *B);
void hk_eig_solve_upper_t(int n, const double *L, int k, double *B);
/* Orthonormalise the k columns of Z (rows x k) in place by Gram-Schmidt run twice, dropping a
 * column whose norm after the projections is below drop times its norm before (or zero);
 * kept columns move to the front in order. Returns the number kept. */
int hk_eig_orthonormalize(int rows, int k, double *Z, double drop);

/* ---- LOBPCG (lobpcg.c) ------------------------------------------------------------------ */

/* The pencil (K, B) with K symmetric positive semidefinite, B = M symmetric positive definite
 * (NULL: the identity). K is multiplied as A X + sigma B X with A = K - sigma M, the matrix
 * the preconditioner T ~ A^-1 was set up on (NULL: no preconditioner); m >= nev columns in
 * the block. */
typedef struct hk_lobpcg {
    const hk_backend_ops *be;
    hk_mat *A, *B;
    double sigma;
    hk_pc *pc;
    int64_t n;
    int m, nev, maxit;
    double tol;
    double anorm; /* ||K||_inf: the rounding floor of a residual (lobpcg.c) */
    int monitor;  /* print every iteration on stdout */
    unsigned seed;
    /* work blocks of 3m columns, two of each (the basis [X P W] and its next X, P), and R */
    hk_vec *S[2], *AS[2], *BS[2], *R;
    int m_alloc;
    /* results */
    double *theta;         /* m Ritz values of (K, B) */
    double *residual;      /* m relative residuals (hk_eigen_result) */
    unsigned char *status; /* m: 0 not converged, 1 below tol, 2 at the rounding floor */
    int cur;               /* S[cur] holds X in its first m columns after a run */
    int iterations, restarts, spmv_cols, pc_applies, stagnated;
} hk_lobpcg;

/* Allocate the work blocks for L->m columns (kept when the size fits). */
int hk_lobpcg_alloc(hk_lobpcg *L);
void hk_lobpcg_free(hk_lobpcg *L);
/* Run from a pseudo-random block (L->seed) until the first nev pairs converge or maxit. */
int hk_lobpcg_run(hk_lobpcg *L);

/* The rounding floor of the residual test: a pair whose ||K x - theta B x|| is below this
 * times eps ||K||_inf ||x|| cannot be resolved further in fp64 (docs/modal.md). */
#define HK_EIGEN_FLOOR 100.0

#endif
