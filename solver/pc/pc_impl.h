/* Private helpers shared by the preconditioner files (solver/pc/). Set-up works on the
 * backend matrix through backend ops (hk_pc_diag, the factorisation ops) or, for mlilu, on
 * host arrays; everything apply needs becomes backend objects (hk_vec, hk_mat). */
#ifndef HOOKE_PC_IMPL_H
#define HOOKE_PC_IMPL_H

#include "hk_impl.h"

/* The registered types, one per file. */
extern const hk_pc_type hk_pc_none;
extern const hk_pc_type hk_pc_jacobi;
extern const hk_pc_type hk_pc_bjacobi;
extern const hk_pc_type hk_pc_poly;
extern const hk_pc_type hk_pc_fsai;
extern const hk_pc_type hk_pc_sai;
extern const hk_pc_type hk_pc_ic0;
extern const hk_pc_type hk_pc_ilu0;
extern const hk_pc_type hk_pc_amg;
/* pc=amg on a distributed ops table (solver/dist/dist_amg.c): amg's set-up switches to it */
extern const hk_pc_type hk_pc_dist_amg;
extern const hk_pc_type hk_pc_mlilu;

/* Scalar CSR on the host (fp64), the working form of the set-up algorithms (csr.c). */
typedef struct hk_csr {
    int64_t n, m;    /* rows, columns */
    int64_t *rowptr; /* n + 1 */
    int32_t *colind; /* sorted per row */
    double *val;
} hk_csr;

void hk_csr_free(hk_csr *A);
/* A copy of C on be as a 1 x 1-block hk_bmat (a factor for tri_setup, say). */
int hk_csr_upload(const hk_backend_ops *be, const hk_csr *C, hk_bmat *B);
/* Expand block CSR to scalar CSR (explicit zeros inside blocks are kept). */
int hk_csr_from_bcsr(const hk_bcsr *K, hk_csr *A);
/* Allocate rowptr (zeroed), colind and val for n rows, m columns and nnz entries. */
int hk_csr_alloc(int64_t n, int64_t m, int64_t nnz, hk_csr *A);
/* Transpose (columns sorted). */
int hk_csr_transpose(const hk_csr *A, hk_csr *T);
/* HK_ERR_NUMERIC naming the first entry (i, j) whose mirror (j, i) differs by more than
 * round-off (the rule of the bmat_sym_check op, whose CPU version it calls); who names the
 * preconditioner (host set-ups: mlilu). */
int hk_csr_check_symmetric(const hk_csr *A, const char *who);

/* Run a set-up written for a host block CSR on a copy of the backend matrix K: pc=mlilu
 * alone, whose multilevel set-up is serial by design (the ILUPACK paper sets up on the CPU). */
int hk_pc_setup_on_host(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o,
                        int (*setup_host)(hk_pc *, const hk_bcsr *, hk_mat *, hk_options *));

/* The diag op (enum hk_diag_mode) on the backend matrix pc->K, result in a new backend vector
 * in pc->prec: HK_DIAG_INV (jacobi, poly), HK_DIAG_INV_SQRT (poly's scaling) or
 * HK_DIAG_BLOCK_INV (bjacobi: nbrows blocks, row-major). Every mode requires a positive
 * diagonal; BLOCK_INV also a nonsingular diagonal block. Fails with HK_ERR_NUMERIC naming the
 * first bad row (and its block row), the preconditioner taken from pc->type. Runs on the
 * backend: no matrix value reaches the host. */
int hk_pc_diag(hk_pc *pc, int mode, hk_vec **out);

/* The scalar diagonal of K (n = nbrows*bs entries). Fails with HK_ERR_NUMERIC naming the row
 * when an entry is not positive and finite; who names the preconditioner in the message. */
int hk_pc_positive_diag(const hk_bcsr *K, const char *who, double *d);

/* The operator in the preconditioner's precision: A itself when the precisions agree, else a
 * new copy of K in A's format (*owned = 1: the caller destroys it). */
int hk_pc_operator(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_mat **Aop, int *owned);

/* A backend matrix of the scalar CSR M in the format (and slicing) of the solver's operator A
 * (csr when A is NULL), grouped into pc->bs blocks for a block format: a preconditioner's
 * matrices then use the same SpMV kernels as the operator. Precision pc->prec. */
int hk_pc_mat_like(hk_pc *pc, const hk_mat *A, const hk_csr *M, hk_mat **out);

/* Set-up steps of the FSAI/SAI preconditioners on the matrices' backend: the backend's
 * bmat_transpose / bmat_expand ops (solver/pc/pc_setup.c); mat_from_bmat (pc.c) makes an
 * hk_mat of the 1 x 1-block M like hk_pc_mat_like, regrouped into blocks by bmat_compress and
 * built by mat_build, all on the backend. */
int hk_pc_bmat_transpose(const hk_bmat *A, hk_bmat *T);
int hk_pc_bmat_expand(const hk_bmat *A, hk_bmat *S);
int hk_pc_mat_from_bmat(hk_pc *pc, const hk_mat *A, const hk_bmat *M, hk_mat **out);

/* A backend vector of n host doubles in precision p. */
int hk_pc_vec_from_host(const hk_backend_ops *be, int64_t n, hk_precision p, const double *h,
                        hk_vec **v);

/* ---- small dense kernels (solver/pc/dense.c), column-major, lda = rows ---------------- */

/* Eigenvalues (ascending) and orthonormal eigenvectors (columns of V, may be NULL) of the
 * symmetric n x n matrix A (overwritten) by cyclic Jacobi rotations. */
int hk_dense_symeig(int n, double *A, double *evals, double *V);
/* Cholesky A = L L^T in place, left-looking on the lower triangle, entry (i, j) at
 * A[i * rs + j * cs] (column-major: rs = 1, cs = the leading dimension; row-major: rs = the
 * leading dimension, cs = 1, which keeps the dot products along memory). Entry (i, j) of L
 * reads entries (<= i, <= j) only, summed in ascending order, so the factor of a leading block
 * is the leading block of the factor. Stops at the first pivot d_j (a_jj less the squares of
 * row j of L) that is not finite or not above rtol |a_jj|: returns j and *pivot = d_j (pivot
 * may be NULL); -1 on success. */
int64_t hk_dense_cholesky(int64_t n, double *A, int64_t rs, int64_t cs, double rtol, double *pivot);
/* Solve L L^T x = b in place with the column-major factor (rs = 1, cs = n) from
 * hk_dense_cholesky. */
void hk_dense_cholesky_solve(int n, const double *L, double *b);
/* Least squares min ||A x - b|| for m x n A (m >= n) by Householder QR; A and b are
 * overwritten, x (n) receives the solution. Returns the 0-based column whose R diagonal is
 * zero (rank deficient), or -1 on success. */
int hk_dense_qr_ls(int m, int n, double *A, double *b, double *x);

/* ---- triangular factors (solver/pc/trifactor.c): ic0, ilu0, mlilu ----------------------- */

/* A sparse triangular factor T on the host, ready for the CPU's level-scheduled solve: per row
 * the strictly off-diagonal entries (CSR) and the inverse diagonal (1 for a unit factor), and
 * the rows grouped in levels: a row depends only on rows of earlier levels, so the rows of one
 * level are solved in parallel, x[i] = dinv[i] (b[i] - sum_k val[k] x[colind[k]]). */
typedef struct hk_trifactor {
    int64_t n;
    int64_t *rowptr;     /* n + 1 (strictly off-diagonal entries) */
    int32_t *colind;
    double *val;
    double *dinv;        /* n */
    int64_t nlevels;
    int64_t *level_ptr;  /* nlevels + 1 */
    int32_t *level_rows; /* n: level l is level_rows[level_ptr[l] .. level_ptr[l+1]) */
} hk_trifactor;
/* Split the factor stored in the host scalar CSR F (diagonal included, columns sorted) into
 * the strictly lower (upper = 0) or strictly upper (upper = 1) part with its inverse diagonal
 * (unit = 1: diagonal taken as 1), and compute the level sets: the CPU backend's tri_setup. */
int hk_trifactor_from_csr(const hk_csr *F, int upper, int unit, hk_trifactor *T);
void hk_trifactor_free(hk_trifactor *T);
/* The warps of pc.tri=syncfree on a device (the ILUPACK-GMRES paper, section 4.2), the
 * reference for cuda/cuda_tri.cu's set-up: order = T's rows by level, within a level by
 * length class (hk_tri_row_class of the strict entries), ascending within a class; a class's
 * rows of one level cut into warps of 32 >> class rows from the first. wdesc[2w] = the first
 * position in order of warp w, wdesc[2w + 1] = class | rows << 8. Both malloc'd. */
int hk_tri_warp_schedule(const hk_trifactor *T, int32_t **order, int32_t **wdesc, int64_t *nwarps);

/* Node orderings (solver/pc/ordering.c), pc.ordering: perm[new] = old node, NULL for
 * natural; ncolours for colour. hk_bcsr_permute: P = the symmetric permutation of K (rows and
 * columns; columns sorted). */
enum { HK_ORDER_NATURAL = 0, HK_ORDER_RCM, HK_ORDER_COLOUR, HK_ORDER_AMD };
extern const char *const hk_ordering_names[]; /* natural, rcm, colour, amd */
/* pc.tri: the names of enum hk_tri_method, NULL-terminated (trifactor.c) */
extern const char *const hk_tri_method_names[];
int hk_node_ordering(const hk_bcsr *K, int kind, int32_t **perm, int64_t *ncolours);
int hk_bcsr_permute(const hk_bcsr *K, const int32_t *perm, hk_bcsr *P);

/* The CPU backend's set-up ops of ic0/ilu0 (contracts in hk_impl.h): the sweeps
 * (solver/pc/iterfact.c), the permutation, symmetry check and exact factorisations
 * (solver/pc/factor_cpu.c), the triangular-solve set-up (tri_cpu.c). */
int hk_cpu_factor_sweeps(const hk_bmat *A, int sym, int sweeps, hk_bmat *F, int64_t *bad);
int hk_cpu_bmat_permute(const hk_bmat *A, const int32_t *perm, hk_bmat *P);
int hk_cpu_bmat_sym_check(const hk_bmat *A, const hk_bmat *T, hk_factor_fault *f);
int hk_cpu_factor_exact(const hk_bmat *A, int sym, hk_bmat *F, hk_factor_fault *f);
int hk_cpu_tri_setup(const hk_bmat *F, int upper, int unit, int method, hk_precision p,
                     void **handle, int64_t *nlevels);

/* State of a preconditioner applied as two triangular solves z = P^T U^-1 L^-1 P r. */
typedef struct hk_tri_pc {
    void *L, *U; /* backend handles */
    hk_vec *y;   /* intermediate */
    int64_t levels_L, levels_U;
    int method;          /* enum hk_tri_method (pc.tri) */
    int ordering;        /* HK_ORDER_* (pc.ordering) */
    int64_t ncolours;    /* colour ordering */
    hk_mat *P, *Pt;      /* the scalar permutation and its transpose (NULL: natural) */
    hk_vec *rp, *zp;     /* P r and U^-1 L^-1 P r */
} hk_tri_pc;
/* Read pc.tri and pc.ordering, allocate the state (pc->data) and order K on its backend:
 * *Kf is K itself (natural) or Kperm = P K P^T (bmat_permute), which the caller frees
 * (hk_bmat_free). The ordering is computed on the host from K's pattern (downloaded once; no
 * values): RCM and the greedy colouring are serial algorithms. Checks that pc->be has the
 * set-up ops (who names the pc in the error). */
int hk_tri_pc_begin(hk_pc *pc, const char *who, const hk_bmat *K, hk_options *o,
                    hk_bmat *Kperm, const hk_bmat **Kf);
/* pc.<who>.sweeps (0: the exact factorisation) and pc.<who>.block (1: on the node blocks) of
 * ic0 / ilu0, checked: non-negative, 0 or 1, and not both. */
int hk_tri_pc_factor_options(const char *who, hk_options *o, int *sweeps, int *block);
/* The two triangular solves from backend factors (tri_setup with the method read by
 * hk_tri_pc_begin): the lower triangle of Lf (unit diagonal when lunit) and the upper
 * triangle of Uf (ic0: Lf = L, Uf = L^T; ilu0: both the combined factor F). */
int hk_tri_pc_factors(hk_pc *pc, const hk_bmat *Lf, int lunit, const hk_bmat *Uf);
int hk_tri_pc_apply(hk_pc *pc, const hk_vec *r, hk_vec *z);
void hk_tri_pc_destroy(hk_pc *pc);
void hk_tri_pc_describe(const hk_pc *pc, char *buf, size_t len);

/* ---- introspection for tests ----------------------------------------------------------- */

/* The spectrum bounds [lo, hi] of D^-1/2 A D^-1/2 a poly preconditioner uses (after the
 * safeguard), and its coefficients in the Chebyshev basis T_k(2t/hi - 1), k = 0..degree. */
int hk_pc_poly_info(const hk_pc *pc, double *lo, double *hi, int *degree, const double **coef);
/* What pc=amg built (solver/pc/amg.c): per level scalar rows, stored scalar entries, block
 * size and the spectral bound of D^-1 A; operator complexity (sum of the levels' entries over
 * the fine level's); the near-null space; the precision of the levels; the hierarchy's memory;
 * seconds per phase of the last full set-up and of the last values-only re-set-up. */
#define HK_AMG_STATS_LEVELS 20
typedef struct hk_amg_phases {
    double nearnull, strength, aggregate, tentative, smoother, prolongator, galerkin, matrices,
        coarse, total;
    /* inside prolongator and galerkin (HOOKE_AMG_PROFILE's second line): A T, its smoothing
     * into P, R = P^T, A P, R (A P) (the whole product, or its pattern and upper blocks),
     * the lower blocks' mirroring, and the allocations and frees of their values */
    double at, smooth, transpose, ap, rap, mirror, values;
    /* inside near-null: the diagonal's check, the decoupled dofs, the modes on the backend */
    double diag_check, decoupled, modes;
    /* inside smoother: the inverse node blocks, the fine level's spectral bound, the coarse
     * levels' bounds */
    double block_inverse, bound_fine, bound_coarse;
} hk_amg_phases;
typedef struct hk_amg_stats {
    int nlevels;
    int64_t rows[HK_AMG_STATS_LEVELS], nnz[HK_AMG_STATS_LEVELS];
    int bs[HK_AMG_STATS_LEVELS];
    double rho[HK_AMG_STATS_LEVELS];
    double op_complexity;
    int nns;
    const char *nns_kind;
    int fp32;          /* the levels are fp32 now */
    double stalled_at; /* != 0: the fp32 levels stalled at this relative residual (NaN or
                        * infinite: they overflowed) and are fp64 now */
    /* device bytes the hierarchy holds: level matrices (the fine one only when it is a copy
     * of the solver's), transfer operators, smoother data, level vectors, the coarse inverse,
     * and what the values-only re-set-up keeps (aggregates, the patterns of A P and of the
     * coarse operators); per fine-level DOF */
    size_t bytes, bytes_matrices, bytes_transfer, bytes_smoother, bytes_vectors, bytes_coarse,
        bytes_reuse;
    double bytes_per_dof;
    hk_amg_phases setup, update;
    int updates;          /* values-only re-set-ups so far */
    int update_keeps_p;   /* pc.amg.update=prolongator: the re-set-ups keep P and R */
    int last_update_kept; /* the last re-set-up kept P and R (0: it made them again) */
} hk_amg_stats;
int hk_pc_amg_info(const hk_pc *pc, hk_amg_stats *st);
/* Tests: level l's operator as stored (mat_download) and, above the coarsest, its transfer
 * operators P and R as host block CSR with fp64 values (fp32 ones widened). */
int hk_pc_amg_level(const hk_pc *pc, int l, hk_bmat *P, hk_bmat *R, hk_fmt *A);
/* The pieces of pc=amg that the distributed AMG (solver/dist/dist_amg.c) runs over its own
 * level operators: the options, one smoother sweep and the spectral bound. */
enum { HK_AMG_CHEBYSHEV = 0, HK_AMG_L1_JACOBI, HK_AMG_BJACOBI };
enum { HK_AMG_PREC_AUTO = 0, HK_AMG_PREC_FP32, HK_AMG_PREC_FP64 };
/* pc.amg.update: what hk_solver_update_values keeps (the aggregates, or P and R too) */
enum { HK_AMG_UPDATE_AGGREGATES = 0, HK_AMG_UPDATE_PROLONGATOR };
typedef struct hk_amg_options {
    double threshold, omega, ratio, safety;
    int max_levels, coarse_size, smoother, degree, pre, post, cycle, lanczos, precision, update;
    int update_lanczos; /* pc.amg.update_lanczos: 0, or warm-started steps of the updates */
    const char *format; /* pc.amg.format, or NULL */
} hk_amg_options;
#define HK_AMG_MAX_COARSE 8000 /* scalar rows of a dense coarsest inverse at most */
int hk_amg_read_options(hk_options *o, hk_amg_options *op);
/* The levels' precision pc->prec (hk_pc_apply's conversion buffers made again in it). */
void hk_amg_set_precision(hk_pc *pc, hk_precision p);
/* y = A x of one level (x, y in the level's precision). */
typedef int (*hk_amg_spmv)(void *A, const hk_vec *x, hk_vec *y);
typedef struct hk_amg_sweep {
    const hk_backend_ops *be; /* vector ops (sums over processes where distributed) */
    hk_amg_spmv spmv;
    void *A;
    int kind, bs, degree; /* kind: HK_AMG_CHEBYSHEV, ... */
    const hk_vec *Dinv, *l1;
    double rho, ratio;
    hk_vec *r, *t, *d; /* scratch of the level's size */
    /* Chebyshev by the backend's amg_cheb_step (one op per degree) when mat is given and the
     * backend has the op: mat the level operator as hk_mat (spmv's A), d2 one more scratch
     * vector for degree 3 and up; NULL: the separate calls (the same digits) */
    hk_mat *mat;
    hk_vec *d2;
    /* the spectral bound's coefficients: HK_AMG_LANCZOS_SCALARS backend scalars (scal_alloc)
     * kept by the caller, or NULL (made and freed by each bound where the backend keeps them) */
    double *scal;
} hk_amg_sweep;
#define HK_AMG_LANCZOS_SCALARS 129 /* 2 * 64 steps + 1 */
/* One sweep on A x = b (zero: x taken as 0 on entry). */
int hk_amg_smooth(const hk_amg_sweep *s, const hk_vec *b, hk_vec *x, int zero);
/* rho = safety * the largest Ritz value of D^-1 A from `steps` steps of block-Jacobi
 * preconditioned CG started from r (filled by the caller; z, p scratch, q one more vector);
 * steps at most the operator's rows, all of them (on several processes every process takes
 * the same steps, also one owning fewer rows or none);
 * *fp32_range = 1 when an fp32 level met a non-finite value. */
int hk_amg_lanczos_bound(const hk_amg_sweep *s, int steps, double safety, int level, hk_vec *q,
                         double *rho, int *fp32_range);

/* Entries of the FSAI factor G (after post-filtration); -1 when pc is not fsai. */
int64_t hk_pc_fsai_nnz(const hk_pc *pc);
/* Entries of pc=sai's M; -1 when pc is not sai. */
int64_t hk_pc_sai_nnz(const hk_pc *pc);
/* Set-up seconds of pc=fsai: pattern, factor, transpose of G, build of both matrices; -1
 * when pc is not fsai. */
int hk_pc_fsai_times(const hk_pc *pc, double t[4]);
/* Adaptive FSAI pattern (pc.fsai.adaptive; solver/cpu/cpu_fsai.c, CPU matrices only): S0 grown
 * per row by up to steps rounds of rho columns of the largest scaled gradient (A g)_j/sqrt(a_jj)
 * above eps, rows up to cap entries. Faults as fsai_factor's. */
int hk_cpu_fsai_adaptive(const hk_bmat *K, const hk_graph *S0, int steps, int rho, double eps,
                         int64_t cap, hk_graph *S, hk_setup_fault *fault);

#endif
