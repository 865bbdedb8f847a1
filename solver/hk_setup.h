/* Set-up on the backend: the data the set-up steps work on and the contracts of their ops.
 * Included by hk_impl.h; only solver/ and cuda/ see it.
 *
 * hk_solver uploads the block CSR K once (hk_bmat_upload). From then on every set-up step —
 * building a storage format, a preconditioner's diagonal, the FSAI/SAI factors, the AMG
 * hierarchy, the IC(0)/ILU(0) factors and their triangular solves — reads and writes hk_bmat / hk_graph objects in the backend's memory through the
 * backend's set-up ops (the *_setup fields of hk_backend_ops). The host sees sizes and a few
 * scalars, never matrix values. Each op has a CPU reference (solver/cpu/, OpenMP) and a CUDA
 * version (cuda/); tests run both on the same input and compare. */
#ifndef HOOKE_SOLVER_SETUP_H
#define HOOKE_SOLVER_SETUP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hk_backend_ops;

/* Block CSR in a backend's memory. Blocks are br x bc (rectangular allowed: the AMG
 * prolongator of a 3D problem has 3 x 6 blocks), values row-major per block:
 * val[(k*br + r)*bc + c] for block k. Column indices sorted within a row, no duplicates.
 * Scalar rows = nbrows*br, scalar columns = nbcols*bc. Arrays are NULL only when empty
 * (nnzb = 0 still has rowptr). */
typedef struct hk_bmat {
    const struct hk_backend_ops *be;
    int br, bc;
    int64_t nbrows, nbcols, nnzb;
    int64_t *rowptr; /* nbrows + 1 */
    int32_t *colind; /* nnzb */
    double *val;     /* nnzb * br * bc */
} hk_bmat;

/* A sparsity pattern in a backend's memory (strength graphs, FSAI / SAI patterns): n rows,
 * m columns, sorted column indices per row, no duplicates. */
typedef struct hk_graph {
    const struct hk_backend_ops *be;
    int64_t n, m, nnz;
    int64_t *rowptr; /* n + 1 */
    int32_t *colind; /* nnz */
} hk_graph;

/* ---- generic helpers (solver/bmat.c), through the backend's memory ops ---------------- */

/* Allocate rowptr (n+1), colind and val for nnzb blocks on be; contents undefined. */
int hk_bmat_alloc(const struct hk_backend_ops *be, int br, int bc, int64_t nbrows,
                  int64_t nbcols, int64_t nnzb, hk_bmat *A);
void hk_bmat_free(hk_bmat *A); /* frees and zeroes; a zeroed struct is fine */
/* Copy a host block CSR (square bs x bs blocks) to be. */
int hk_bmat_upload(const struct hk_backend_ops *be, const hk_bcsr *K, hk_bmat *A);
/* A copy of A in host memory as a cpu-backend hk_bmat (tests, and pc=mlilu's host set-up). */
int hk_bmat_to_host(const hk_bmat *A, hk_bmat *H);
/* Host block CSR of a square-block hk_bmat (br == bc) wherever it lives. */
int hk_bmat_to_bcsr(const hk_bmat *A, hk_bcsr *K);
/* HK_ERR_ARG naming who unless A B chains (A's block columns are B's block rows; bname: how
 * the message calls B), HK_ERR_UNSUPPORTED where B's block columns exceed 32-bit indices: the
 * symbolic products' checks. */
int hk_bmat_chain_check(const hk_bmat *A, const hk_bmat *B, const char *bname, const char *who);
/* HK_ERR_ARG naming who unless C has the shape of A B (blocks and sizes chain). */
int hk_bmat_product_check(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C, const char *who);
/* bmat_mirror_lower's shape check (HK_ERR_ARG unless C is square in blocks with square
 * blocks) and its fault (row >= 0: block row `row` has a block below the diagonal whose mirror
 * is missing; HK_ERR_ARG with the sentence; row < 0: 0). */
int hk_bmat_mirror_check(const hk_bmat *C);
int hk_bmat_mirror_fault(int64_t row);
int hk_graph_alloc(const struct hk_backend_ops *be, int64_t n, int64_t m, int64_t nnz,
                   hk_graph *G);
void hk_graph_free(hk_graph *G);
int hk_graph_to_host(const hk_graph *G, hk_graph *H);

/* Modes of the diag op. */
enum hk_diag_mode {
    HK_DIAG_INV = 0,      /* out[i] = 1/a_ii (scalar rows); bad when a_ii <= 0 or not finite */
    HK_DIAG_INV_SQRT,     /* out[i] = 1/sqrt(a_ii); bad as above */
    HK_DIAG_BLOCK_INV,    /* out = inverse of each br x br diagonal block, row-major, nbrows
                           * blocks. A scalar row of the block whose row and column inside the
                           * block are exactly zero is a decoupled dof: it is left out of the
                           * inversion and gets 0 in the inverse (the AMG coarse levels have
                           * such dofs where a tentative-prolongator column was dropped). Bad
                           * when the rest of the block is singular or not finite. */
    HK_DIAG_DECOUPLED     /* out[i] = 1 when scalar row i has no nonzero entry off the
                           * diagonal (a dof eliminated by a support), else 0; never bad */
};


/* A row (or column) that a set-up op could not compute (FSAI/SAI): the first such row and
 * why. Host struct filled by the op; row = -1 when every row succeeded. */
enum hk_fault_reason {
    HK_FAULT_NONE = 0,
    HK_FAULT_TOO_LARGE,  /* the row's pattern or local problem exceeds the op's limit */
    HK_FAULT_NOT_SPD,    /* non-positive pivot in the local Cholesky */
    HK_FAULT_DIAG,       /* diagonal entry not positive and finite */
    HK_FAULT_ASYMMETRIC, /* A[P,P] gathered from rows is not symmetric */
    HK_FAULT_RANK,       /* local least-squares matrix rank deficient (or e_k not reached) */
    HK_FAULT_MEMORY      /* a work array could not be allocated */
};
typedef struct hk_setup_fault {
    int64_t row;
    int reason;
} hk_setup_fault;
/* How sai_factor solves each column's least-squares problem. */
enum hk_sai_qr {
    HK_SAI_HOUSEHOLDER = 0, /* Householder QR */
    HK_SAI_GRAM_SCHMIDT     /* classical Gram-Schmidt, m = R^-1 Q^T e (GPU Krylov thesis) */
};
/* Where an exact incomplete factorisation (factor_exact) or the symmetry check
 * (bmat_sym_check) stopped: the first failing row (a scalar row; the node for a factorisation
 * on node blocks) and the values its message names. Host struct filled by the op; row = -1
 * when every row succeeded. */
enum hk_factor_reason {
    HK_FACTOR_OK = 0,
    HK_FACTOR_NO_DIAG,   /* ilu0: the row (node) has no diagonal entry (block) */
    HK_FACTOR_PIVOT,     /* ic0: pivot not positive and finite; ilu0: zero or not finite */
    HK_FACTOR_ASYMMETRIC /* sym check: a_ij and a_ji differ by more than round-off */
};
typedef struct hk_factor_fault {
    int64_t row;
    int reason;
    int sub;     /* node blocks: the pivot's row inside the block */
    int64_t col; /* sym check: j of the entry (row, j) */
    double v[2]; /* ic0: pivot, a_ii (scalar); ilu0: pivot; sym check: a_ij, a_ji */
} hk_factor_fault;

/* Integer hash of a node index: the random priority of the AMG aggregation
 * (docs/amg-aggregation.md), the same on the host and on the device. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline uint32_t hk_hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

#ifdef __cplusplus
}
#endif
#endif
