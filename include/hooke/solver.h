/* The Hooke sparse solver library: public API.
 *
 * Input is a block CSR matrix on the host (plain data, hk_bcsr), or one already in a backend's
 * memory (hk_resident_bcsr, e.g. assembled on the GPU). The library converts it to a
 * storage format (csr, bsr, ell, sell, bell, sbell, cusparse-csr, cusparse-bsr) on a backend
 * ("cpu", "cuda") and solves with a Krylov method and a preconditioner chosen by name:
 *
 *     hk_options *o; hk_options_parse("method=pipecg pc=poly pc.poly.degree=6", &o);
 *     hk_solver_create(&K, o, &s);  hk_solver_solve(s, b, x, &res);
 *
 * Objects are opaque; every function returns 0 or an enum hk_error code, with the message in
 * hk_error_message(). docs/solver.md documents every method, preconditioner and option. */
#ifndef HOOKE_SOLVER_H
#define HOOKE_SOLVER_H

#include <stdint.h>
#include <stdio.h>

#include "hooke/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- plain data ------------------------------------------------------------------------ */

/* Block CSR on the host: nbrows block rows of bs x bs blocks (bs = 1 to 6). Values of a
 * block are row-major: val[(k*bs + r)*bs + c] for block k. Column indices sorted per row. */
typedef struct hk_bcsr {
    int bs;
    int64_t nbrows, nbcols;
    int64_t *rowptr;  /* nbrows + 1 */
    int32_t *colind;  /* rowptr[nbrows] block column indices */
    double *val;      /* rowptr[nbrows] * bs * bs */
} hk_bcsr;

void hk_bcsr_free(hk_bcsr *A); /* frees the arrays, zeroes the struct */
int hk_bcsr_copy(const hk_bcsr *A, hk_bcsr *B);
/* Scalar y = A x on the host, straightforward reference (used by tests and residual checks). */
void hk_bcsr_spmv(const hk_bcsr *A, const double *x, double *y);

typedef enum { HK_FP64 = 0, HK_FP32 = 1 } hk_precision;

typedef enum {
    HK_FMT_AUTO = -1, /* not a layout: the backend chooses one per matrix (hk_mat_create) */
    HK_FMT_CSR = 0,
    HK_FMT_BSR,
    HK_FMT_ELL,
    HK_FMT_SELL,
    HK_FMT_BELL,
    HK_FMT_SBELL,
    HK_FMT_CUSPARSE_CSR,
    HK_FMT_CUSPARSE_BSR,
    HK_FMT_PCSR, /* prefetch CSR (GPU Krylov thesis, ch. 3.4) */
    HK_FMT_COUNT
} hk_format;

const char *hk_format_name(hk_format f);
int hk_format_from_name(const char *name, hk_format *f); /* error lists valid names */

/* ---- options by name ------------------------------------------------------------------- */

/* A list of key=value pairs. Every getter marks its key as used; hk_options_check_used()
 * reports the first key nobody asked for, naming the valid keys. */
typedef struct hk_options hk_options;

int hk_options_create(hk_options **o);
void hk_options_destroy(hk_options *o);
/* Parse whitespace-separated key=value words; later keys override earlier ones. */
int hk_options_parse(hk_options *o, const char *text);
int hk_options_set(hk_options *o, const char *key, const char *value);
/* Typed getters: *out keeps its default when the key is absent. A malformed value is an
 * HK_ERR_OPTION naming key and value. */
int hk_options_get_string(hk_options *o, const char *key, const char **out);
int hk_options_get_int(hk_options *o, const char *key, int *out);
int hk_options_get_double(hk_options *o, const char *key, double *out);
/* One of choices (NULL-terminated); stores the index. Error lists the choices. */
int hk_options_get_choice(hk_options *o, const char *key, const char *const *choices, int *out);
int hk_options_has(const hk_options *o, const char *key);
/* Remove key and every key below it (pc removes pc.amg.degree too); returns how many. */
int hk_options_remove(hk_options *o, const char *key);
/* Error HK_ERR_OPTION for the first key never read; valid_keys is a human list for the hint. */
int hk_options_check_used(const hk_options *o, const char *valid_keys);
/* Print the pairs as "k=v k=v". */
void hk_options_print(const hk_options *o, FILE *f);
/* A new object with o's pairs and their read marks (o may be NULL: an empty one). */
int hk_options_copy(const hk_options *o, hk_options **copy);
/* The number of pairs, and the key of pair i (0-based; NULL out of range). */
int hk_options_count(const hk_options *o);
const char *hk_options_key(const hk_options *o, int i);

/* ---- backends -------------------------------------------------------------------------- */

typedef struct hk_backend_ops hk_backend; /* opaque */

/* "cpu", "cuda" or "auto" (cuda when built and a device is present, else cpu). A listed but
 * unusable backend is an error that says why ("not built with CUDA", "no CUDA device"). */
int hk_backend_get(const char *name, const hk_backend **be);
const char *hk_backend_name(const hk_backend *be);
/* Names of every listed backend, NULL-terminated. */
const char *const *hk_backend_list(void);
/* A paragraph about the backend (device, memory, driver, what was built in). */
void hk_backend_describe(const hk_backend *be, FILE *f);
/* Describe every listed backend, usable or not (for `hooke info`). */
void hk_backends_describe_all(FILE *f);

/* Memory of a backend (bytes, contents undefined) for arrays handed to the solver there, such
 * as node coordinates (hk_nearnull.coords_be); freed with hk_backend_free (NULL: nothing). */
int hk_backend_alloc(const hk_backend *be, size_t bytes, void **p);
void hk_backend_free(const hk_backend *be, void *p);

/* ---- vectors --------------------------------------------------------------------------- */

typedef struct hk_vec_s hk_vec;

int hk_vec_create(const hk_backend *be, int64_t n, hk_precision p, hk_vec **v);
void hk_vec_destroy(hk_vec *v);
int64_t hk_vec_size(const hk_vec *v);
int hk_vec_upload(hk_vec *v, const double *host);   /* converts to the vector's precision */
int hk_vec_download(const hk_vec *v, double *host); /* converts to double */

/* ---- matrices -------------------------------------------------------------------------- */

typedef struct hk_mat_s hk_mat;

/* Statistics of a converted matrix: padding = stored entries / CSR entries (SBELL paper,
 * Table 2), bytes = what one SpMV must read of the matrix, lanes_min..lanes_max = threads per
 * (block) row of the backend's SpMV kernel (cuda: format.tpr or its automatic choice, per slice
 * for the sliced formats; 1 on the CPU). */
typedef struct hk_mat_info {
    hk_format format;
    hk_precision precision;
    int bs;
    int64_t nrows, ncols, nnz, stored;
    double padding;
    size_t bytes;
    int lanes_min, lanes_max;
} hk_mat_info;

/* Upload K to backend be once and build the format there in precision p. Format parameters come
 * from o (may be NULL): format.slice (S, default 32), format.sigma (sorting window in rows: auto
 * (default, from the row-length histogram), 0 = all rows, or N), format.tpr (threads per block row
 * on cuda, default auto), format.csr.kernel (csr on cuda: auto|thread|warp|vector|adaptive),
 * format.pcsr.partition / .pad / .prefetch (pcsr). */
int hk_mat_create(const hk_backend *be, const hk_bcsr *K, hk_format fmt, hk_precision p,
                  hk_options *o, hk_mat **A);
void hk_mat_destroy(hk_mat *A);
int hk_mat_spmv(hk_mat *A, const hk_vec *x, hk_vec *y); /* y = A x */
void hk_mat_get_info(const hk_mat *A, hk_mat_info *info);

/* ---- matrices already in a backend's memory ------------------------------------------- */

/* A block CSR matrix laid out as hk_bcsr whose arrays live in backend be's memory (device
 * memory on cuda): a stiffness matrix assembled on the device, say, which the solver then
 * sets up from without a copy through the host. Column indices sorted per row. Whoever fills
 * the arrays has finished writing them (its CUDA stream synchronised) before handing the
 * matrix to the solver. */
typedef struct hk_resident_bcsr {
    const hk_backend *be;
    int bs;
    int64_t nbrows, nbcols, nnzb;
    int64_t *rowptr; /* nbrows + 1, in be's memory */
    int32_t *colind; /* nnzb */
    double *val;     /* nnzb * bs * bs, blocks row-major as in hk_bcsr */
} hk_resident_bcsr;

/* Allocate the arrays on be (contents undefined). */
int hk_resident_bcsr_alloc(const hk_backend *be, int bs, int64_t nbrows, int64_t nbcols,
                           int64_t nnzb, hk_resident_bcsr *A);
void hk_resident_bcsr_free(hk_resident_bcsr *A); /* frees the arrays, zeroes the struct */
/* A host copy (tests, writing the matrix to a file). */
int hk_resident_bcsr_download(const hk_resident_bcsr *A, hk_bcsr *K);

/* ---- Matrix Market --------------------------------------------------------------------- */

/* Read a coordinate real/integer/pattern general|symmetric matrix as scalar block CSR (bs=1).
 * Errors name the file and line. */
int hk_mm_read_matrix(const char *path, hk_bcsr *A);
int hk_mm_write_matrix(const char *path, const hk_bcsr *A);
/* Dense array vector (one column). *x is malloc'ed. */
int hk_mm_read_vector(const char *path, int64_t *n, double **x);
int hk_mm_write_vector(const char *path, int64_t n, const double *x);
/* Dense array of any shape (node coordinates: one row per node, one column per dimension):
 * *x is malloc'ed, rows x cols, row after row (the file stores column after column). Errors
 * name the file, the line, and for a bad number its row and column. */
int hk_mm_read_array(const char *path, int64_t *rows, int *cols, double **x);
/* Group a scalar matrix into bs x bs blocks (n must be a multiple of bs). */
int hk_bcsr_to_blocks(const hk_bcsr *A, int bs, hk_bcsr *B);

/* ---- generated test matrices (tests, benches, `hooke solve --generate`) ---------------- */

/* 2D plane-stress elasticity on an nx x ny grid of bilinear quads (bs=2), left edge fixed. */
int hk_gen_elasticity2d(int nx, int ny, hk_bcsr *A);
/* 2D elasticity on an nx x ny grid split into linear triangles (bs = 2). */
int hk_gen_elasticity2d_tri(int nx, int ny, hk_bcsr *A);
/* The same with each cell's diagonal chosen at random (deterministic in seed): node valences,
 * hence row lengths, vary as on an unstructured mesh (bs = 2). */
int hk_gen_elasticity2d_tri_random(int nx, int ny, unsigned seed, hk_bcsr *A);
/* 3D elasticity on an nx x ny x nz grid of trilinear hexes (bs=3), x=0 face fixed. */
int hk_gen_elasticity3d(int nx, int ny, int nz, hk_bcsr *A);
/* 3D elasticity on an nx x ny x nz grid, each cube split into 6 linear tets (bs = 3). */
int hk_gen_elasticity3d_tet(int nx, int ny, int nz, hk_bcsr *A);
/* Node coordinates of the elasticity grids above (every cell type, same numbering): *coords is
 * malloc'ed, 2 (3) values per node, node after node: node i + (nx+1)*(j + (ny+1)*k) is at
 * (i/nx, j/ny, k/nz). The near-null space of pc=amg for the generated matrices. */
int hk_gen_elasticity2d_coords(int nx, int ny, double **coords);
int hk_gen_elasticity3d_coords(int nx, int ny, int nz, double **coords);
/* 5-point Poisson on n x n (bs=1, SPD). */
int hk_gen_poisson2d(int n, hk_bcsr *A);
/* Upwind convection-diffusion on n x n with Peclet-like strength beta (bs=1, nonsymmetric). */
int hk_gen_convdiff2d(int n, double beta, hk_bcsr *A);
/* 7-point Poisson on n x n x n (bs = 1, SPD). */
int hk_gen_poisson3d(int n, hk_bcsr *A);
/* Upwind convection-diffusion on n x n x n, wind beta (1, 1, 1) (bs = 1, nonsymmetric). */
int hk_gen_convdiff3d(int n, double beta, hk_bcsr *A);
/* Centred-difference convection-diffusion with a recirculating wind on n x n, diffusion
 * 1/peclet (bs = 1, nonsymmetric, not an M-matrix at high peclet). */
int hk_gen_recirc2d(int n, double peclet, hk_bcsr *A);
/* Diffusion on n x n x n with a coefficient log-uniform over `decades` decades per node
 * (bs = 1, SPD, heterogeneous; deterministic in seed). */
int hk_gen_porous3d(int n, double decades, unsigned seed, hk_bcsr *A);
/* Resistor network: an n x n grid with random conductances and random long edges, boundary
 * grounded (bs = 1, SPD; deterministic in seed). */
int hk_gen_circuit(int n, unsigned seed, hk_bcsr *A);
/* The rows of the scalar A in a random order (in place; deterministic in seed). */
int hk_gen_shuffle_rows(hk_bcsr *A, unsigned seed);
/* Random sparse matrix for format tests: nbrows x nbcols blocks, about density blocks per
 * row, some rows empty when empty_rows != 0. Deterministic in seed. */
int hk_gen_random(int64_t nbrows, int64_t nbcols, int bs, double blocks_per_row, int empty_rows,
                  unsigned seed, hk_bcsr *A);

/* ---- preconditioners and Krylov solvers ------------------------------------------------ */

typedef enum {
    HK_REASON_NONE = 0,
    HK_CONVERGED_RTOL,
    HK_CONVERGED_ATOL,
    HK_DIVERGED_MAXIT,
    HK_DIVERGED_BREAKDOWN,
    HK_DIVERGED_NOT_SPD,
    HK_DIVERGED_NAN,
    HK_DIVERGED_STAGNATION,
    HK_DIVERGED_TRUE_RESIDUAL /* the method's own residual converged, b - A x did not */
} hk_reason;

/* A solve is converged only when the true residual ||b - A x|| recomputed in fp64 at the end
 * is within this factor of the tolerance max(rtol ||b||, atol); otherwise hk_solver_solve
 * restarts the method from x up to HK_TRUE_RESIDUAL_RESTARTS times (within maxit) and then
 * reports HK_DIVERGED_TRUE_RESIDUAL. */
#define HK_TRUE_RESIDUAL_FACTOR 2.0
#define HK_TRUE_RESIDUAL_RESTARTS 3

const char *hk_reason_name(hk_reason r); /* "converged (relative tolerance)", "not SPD", ... */
int hk_reason_converged(hk_reason r);

typedef struct hk_result {
    int iterations;
    hk_reason reason;
    double rnorm0;         /* ||b - A x0|| */
    double rnorm;          /* last residual norm the method tracked */
    double true_residual;  /* ||b - A x|| / ||b|| recomputed in fp64 at the end */
    double setup_seconds;  /* conversion + preconditioner set-up, the sum of the five below */
    double setup_start_seconds;  /* options, the solver's copy of the near-null space, and the
                                  * backend's start when this is its first use in the process
                                  * (a CUDA context: about 0.2 s) */
    double setup_check_seconds;  /* the check of K's values (finite), on the backend */
    double setup_upload_seconds; /* K copied to the backend once */
    double setup_format_seconds; /* the operator's storage format built on the backend */
    double setup_pc_seconds;     /* the preconditioner, the solver's work vectors, the method */
    double update_seconds;       /* the last hk_solver_update_values (0 before the first) */
    int setups;                  /* preconditioner set-ups: 1 + value updates + fallbacks */
    double solve_seconds;
    int history_len;       /* residual history when option history=1 (owned by the solver) */
    const double *history;
    /* what the solver changed on its own during this solve, or "" when nothing:
     * "amg: fp32 levels stalled at 3.1e-09, continued with fp64 levels (rebuilt in 0.12 s)" */
    char note[192];
} hk_result;

/* The whole solver: matrix in its format, preconditioner, Krylov method, options.
 * Options read (all optional): backend, method, pc, pc.*, format, format.*, precision, tol,
 * atol, maxit, restart, history, monitor, check_every. Unknown keys are errors. */
typedef struct hk_solver hk_solver;

int hk_solver_create(const hk_bcsr *K, hk_options *o, hk_solver **s);

/* The near-null space of K, for pc=amg (smoothed aggregation): the vectors that K maps to
 * (nearly) zero before supports are applied, i.e. the rigid-body modes of elasticity. Give
 * either node coordinates (coords: dim values per block row, block size = dim; the library
 * builds the 3 (2D) or 6 (3D) rigid-body modes) or nvec explicit vectors (column-major,
 * n = nbrows*bs rows each). Rows of dofs removed by a support (no off-diagonal entry) are
 * zeroed by the library. Without it pc=amg uses the bs translations alone. */
typedef struct hk_nearnull {
    int dim;               /* 2 or 3 with coords; 0 with vectors */
    const double *coords;  /* nbrows * dim, node after node, or NULL */
    int nvec;              /* number of explicit vectors (coords == NULL) */
    const double *vectors; /* n * nvec, column-major, or NULL */
    /* NULL: coords in host memory. Else coords are in this backend's memory (a device
     * assembly leaves them there): hk_solver_create_resident only, with A on the same
     * backend; the modes are then built there without the coordinates crossing to the host. */
    const hk_backend *coords_be;
} hk_nearnull;

/* hk_solver_create with a near-null space (nn may be NULL); the solver copies what it needs. */
int hk_solver_create_nearnull(const hk_bcsr *K, const hk_nearnull *nn, hk_options *o,
                              hk_solver **s);
/* hk_solver_create_nearnull for a matrix already in a backend's memory: the solver takes its
 * arrays over (A keeps its sizes, its pointers become NULL, whether this succeeds or fails) and
 * sets up there; matrix values never pass through the host (method=cholesky excepted: its
 * factor is computed on the host from a copy). The options' backend must be A's, or auto. */
int hk_solver_create_resident(hk_resident_bcsr *A, const hk_nearnull *nn, hk_options *o,
                              hk_solver **s);
void hk_solver_destroy(hk_solver *s);
/* K's values changed, its sparsity pattern did not (a material change, the next step of a
 * modal or nonlinear analysis): upload the new values and redo only the numeric part of the
 * set-up. The operator's format is rebuilt with the new values; pc=amg keeps its strength
 * graph, aggregates and sparsity patterns and recomputes the rest; a preconditioner without a
 * cheaper path (and method=cholesky's factor) is set up anew from the new values. K must have
 * the block size, sizes and pattern of the matrix the solver was created with (an error names
 * the block rows where it differs). The near-null space given at create is kept. After an
 * error the solver cannot solve; destroy it.
 * A distributed solver (hk_solver_create_dist*): collective; each process passes its own rows
 * as for hk_solver_create_dist (nbrows = its block rows, global columns, the pattern it
 * created the solver with). The layout is kept (ghosts, interior/boundary numbering, halo
 * plan, transport): the values are gathered into it where they lie (uploaded once on a
 * device), checked, and the operator and the preconditioner are set up anew, so a solve gives
 * the bytes of a solver created on the new values. Every verdict is agreed: a size or pattern
 * refused on one process (one sentence naming that process's rows) is refused on every
 * process with the same code and sentence, and leaves the solver usable; a non-finite value
 * on one process is refused on every process (the solver then cannot solve). */
int hk_solver_update_values(hk_solver *s, const hk_bcsr *K);
/* The same with the new values in the solver's backend's memory (a K assembled again on the
 * device): A must hold the pattern the solver has (compared on the backend, no copy to the
 * host). The values are swapped, not copied: A's value array becomes the solver's and A->val
 * gets the solver's previous one (same size, be's memory, the old values), so a loop writes
 * its next values into A->val and calls again with the same A. A's row pointers and column
 * indices stay the caller's (the solver keeps no pointer to them); A is always the caller's
 * to free (hk_resident_bcsr_free). A refusal (another pattern, sizes or backend,
 * method=cholesky, whose factor is made on the host) leaves A as it was
 * and the solver usable; an error after the swap (a non-finite value) leaves the old values in
 * A->val and a solver that cannot solve. Memory: the previous values stay allocated in A,
 * nnzb * bs * bs doubles beyond the solver's own, until the caller frees A; free it at once
 * if it is not reused.
 * A distributed solver: collective, as hk_solver_update_values; each process's A holds its
 * rows in the form it created the solver with: global columns (nbrows its block rows, nbcols
 * the global ones) for hk_solver_create_dist and _resident, compared with the create's
 * pattern by fingerprint (on a device its pattern read back); the part's columns for
 * hk_solver_create_dist_device (the same ghost ids; A's first nown rows read), compared on
 * the backend with a copy of the create's pattern. Its values are gathered into the layout,
 * not swapped: A is left as given, always. */
int hk_solver_update_values_resident(hk_solver *s, hk_resident_bcsr *A);
/* Solve K x = b; x holds the initial guess on entry (host arrays of K's size). */
int hk_solver_solve(hk_solver *s, const double *b, double *x, hk_result *res);
/* What was chosen, one line: "cg + jacobi, sbell fp64 on cuda". */
void hk_solver_describe(const hk_solver *s, FILE *f);
/* How a distributed solver's processes exchange (option dist.comm): "nccl" or "mpi"; NULL on
 * one process. */
const char *hk_solver_dist_comm(const hk_solver *s);
/* Monitor: called every check with (iteration, residual norm); NULL to remove. */
typedef void (*hk_monitor_fn)(int it, double rnorm, void *ctx);
void hk_solver_set_monitor(hk_solver *s, hk_monitor_fn fn, void *ctx);
/* Help text listing methods, preconditioners, formats and every option with its default. */
void hk_solver_print_help(FILE *f);

/* ---- eigenvalues: K x = lambda M x ----------------------------------------------------- */

/* The lowest eigenpairs of K x = lambda M x (K symmetric positive semidefinite, M symmetric
 * positive definite or NULL for the identity) by LOBPCG with a preconditioner of the
 * library, on any backend (docs/modal.md):
 *
 *     hk_eigen *e;  hk_eigen_create(&K, &M, &nn, o, &e);      // o: "pc=amg eigen.tol=1e-8"
 *     hk_eigen_solve(e, 10, lambda, X, residual, &res);        // the 10 lowest pairs
 *
 * Options read (all optional): eigen.tol (1e-6), eigen.maxit (1000), eigen.block (0: nev +
 * max(4, nev/2)), eigen.shift (auto: -1e-8 trace(K)/trace(M)), monitor, and the
 * preconditioner's: backend, pc (default amg), pc.*, format, format.*, precision. The
 * preconditioner is set up on K - sigma M as hk_solver sets up K (nn: the near-null space for
 * pc=amg, may be NULL): sigma below the lowest eigenvalue keeps it definite, also for a
 * free-floating part (K singular). Options of the linear solver (method, tol, maxit, ...) and
 * unknown keys are errors. */
typedef struct hk_eigen hk_eigen;

typedef struct hk_eigen_result {
    int nev;             /* pairs asked for */
    int block;           /* columns of LOBPCG's block */
    int converged;       /* of the nev lowest pairs, those converged (nev on success) */
    int at_floor;        /* of those, converged at fp64's rounding floor (rigid-body modes) */
    int iterations;
    int restarts;        /* times the search directions P were dropped (the basis lost rank) */
    int stagnated;       /* stopped because the preconditioned residuals added no direction */
    long long spmv_columns; /* columns multiplied by K - sigma M (in block SpMVs) */
    long long pc_applies;
    double shift;        /* sigma of the preconditioner's K - sigma M (eigen.shift resolved) */
    double max_residual; /* largest relative residual of the nev pairs */
    double setup_seconds, solve_seconds;
} hk_eigen_result;

/* M may be NULL (identity); its block size may differ from K's when the scalar sizes agree
 * (it is regrouped). The caller's options are not modified. */
int hk_eigen_create(const hk_bcsr *K, const hk_bcsr *M, const hk_nearnull *nn, hk_options *o,
                    hk_eigen **e);
/* The nev lowest pairs: lambda (nev, ascending), X (n x nev column-major, M-orthonormal, the
 * largest entry of each column positive; may be NULL), residual (nev relative residuals
 * ||K x - lambda M x|| / (|lambda| ||M x||), recomputed from K x and M x at the end; may be
 * NULL). A pair is converged below eigen.tol, or at the rounding floor ||K x - lambda M x||
 * <= 100 eps ||K||_inf ||x|| (zero eigenvalues end there). Returns 0 also when not every pair
 * converged: res->converged says how many did. */
int hk_eigen_solve(hk_eigen *e, int nev, double *lambda, double *X, double *residual,
                   hk_eigen_result *res);
/* One line: "lobpcg + amg (...), bsr fp64 on cuda, shift -1.2e-06". */
void hk_eigen_describe(const hk_eigen *e, FILE *f);
void hk_eigen_destroy(hk_eigen *e);
/* The eigensolver's options with their defaults. */
void hk_eigen_print_help(FILE *f);

/* ---- distributed runs: processes, partitions, distributed solves (docs/parallel.md) ---- */

/* The processes of one run, one per GPU: MPI_COMM_WORLD when Hooke was built with MPI and
 * started by mpirun, else this process alone (size 1). Every process calls the collectives
 * below in the same order. */
typedef struct hk_comm hk_comm;

/* First thing in main: MPI_Init when mpirun started this process (its environment says so),
 * nothing otherwise. A build without MPI started as several processes is an error saying so. */
int hk_comm_world_init(int *argc, char ***argv);
/* The world: all processes of the run (this one alone before hk_comm_world_init, without
 * MPI, or without mpirun). */
const hk_comm *hk_comm_world(void);
/* The world's processes on this machine (sharing its memory and cores; 1 without mpirun). */
int hk_comm_world_local(void);
/* Last thing in main, with the exit status: MPI_Finalize when the status is 0 or a failure
 * every process agreed on (hk_comm_agree), else MPI_Abort, so that no process waits for one
 * that stopped. Returns the status. */
int hk_comm_world_end(int status);
int hk_comm_rank(const hk_comm *c);
int hk_comm_size(const hk_comm *c);
/* "Open MPI v4.1.4, 2 processes" or "no MPI (this build)" for hooke info. */
void hk_comm_describe(FILE *f);
/* The local rank of this process on its host (the GPU it takes): mpirun's environment, else
 * 0. */
int hk_comm_local_rank(void);

/* v[0..n) summed (max, min) over the processes: every process gets the same bits, the sum
 * taken in rank order, so a run repeats to the last digit. */
int hk_comm_sum(const hk_comm *c, double *v, int n);
int hk_comm_max(const hk_comm *c, double *v, int n);
int hk_comm_sum_i64(const hk_comm *c, int64_t *v, int n);
int hk_comm_max_i64(const hk_comm *c, int64_t *v, int n);
int hk_comm_min_i64(const hk_comm *c, int64_t *v, int n);
/* Every process's `bytes` bytes, in rank order, into all (size * bytes). */
int hk_comm_allgather(const hk_comm *c, const void *mine, size_t bytes, void *all);
int hk_comm_bcast(const hk_comm *c, void *buf, size_t bytes, int root);
/* Blocking point-to-point messages of any size (sent in pieces below 2 GB). */
int hk_comm_send(const hk_comm *c, const void *buf, size_t bytes, int to, int tag);
int hk_comm_recv(const hk_comm *c, void *buf, size_t bytes, int from, int tag);
/* A buffer of unknown size: *buf malloc'ed, *bytes its size (an empty one: NULL, 0). A
 * receiver that cannot allocate it fails, and so does the sender, without blocking either. */
int hk_comm_send_buf(const hk_comm *c, const void *buf, size_t bytes, int to, int tag);
int hk_comm_recv_buf(const hk_comm *c, void **buf, size_t *bytes, int from, int tag);
/* Agree on the status of a stage: every process passes its own (0 or an hk_error code) and
 * every process gets the first failing process's code and message (the lowest rank's), so
 * that all stop together with one sentence. 0 when every process succeeded. */
int hk_comm_agree(const hk_comm *c, int ierr);

/* Partitions (METIS when built with it, else contiguous blocks). The graph of n vertices
 * (block rows) given by a symmetric pattern rowptr/colind (the diagonal may be present) cut into
 * nparts: part[i] in [0, nparts), each part non-empty when n >= nparts. Deterministic. */
int hk_partition_graph(int64_t n, const int64_t *rowptr, const int32_t *colind, int nparts,
                       int32_t *part);
/* Cells given by their node lists (ptr, nodes; the corners suffice) cut into nparts along their
 * dual graph: two cells are neighbours when they share ncommon nodes (2 in 2D, 3 in 3D:
 * an edge, a face). part[e] in [0, nparts). Deterministic. */
int hk_partition_cells(int64_t ncells, const int64_t *ptr, const int32_t *nodes, int64_t nnodes,
                       int ncommon, int nparts, int32_t *part);
/* "metis" or "contiguous". */
const char *hk_partitioner_name(void);

/* Ghost values of a distributed array: process r owns the global ids [row0_r, row0_r + nown_r)
 * (contiguous ranges in rank order); this process wants the values of nghost ids owned
 * elsewhere (ghost[], any order). hk_halo_exchange fills ghost_vals (nghost x width, in the
 * order of ghost[]) from the owners' owned (nown x width) host arrays. Collective. */
typedef struct hk_halo hk_halo;
int hk_halo_create(const hk_comm *c, int64_t row0, int64_t nown, int64_t nghost,
                   const int64_t *ghost, hk_halo **h);
int hk_halo_exchange(hk_halo *h, const double *owned, int width, double *ghost_vals);
/* hk_halo_exchange of values the caller gathers and places itself: pack(ctx, i, v) writes the
 * width values of owned entry i (0 .. nown-1) to v, called only for the entries another process
 * wants; unpack(ctx, k, v) takes ghost k's (the caller's order) from v. Both run on the threads,
 * each entry once. For entries spread over several arrays (no copy of every owned entry).
 * Collective. */
typedef void (*hk_halo_pack_fn)(void *ctx, int64_t i, double *v);
typedef void (*hk_halo_unpack_fn)(void *ctx, int64_t k, const double *v);
int hk_halo_exchange_with(hk_halo *h, int width, hk_halo_pack_fn pack, hk_halo_unpack_fn unpack,
                          void *ctx);
void hk_halo_destroy(hk_halo *h);

/* Rank 0's whole system cut into the processes' rows for hk_solver_create_dist: part[i] the
 * process of block row i (NULL: contiguous blocks of rows; hk_partition_graph gives a METIS
 * cut), the rows renumbered process after process. Every process gets its rows with the new
 * global columns (*Kloc, *row0: the first one's new number) and, when b is given (rank 0: the
 * whole right-hand side), its entries (*bloc). Rank 0 gets *old_of (may be NULL): the old row of
 * each new one. K, b and part are read on rank 0 only. Collective. */
int hk_dist_scatter(const hk_comm *c, const hk_bcsr *K, const double *b, const int32_t *part,
                    hk_bcsr *Kloc, double **bloc, int64_t *row0, int32_t **old_of);

/* A distributed solver: each process passes its rows of K. Process r owns the global block rows
 * [row0, row0 + K->nbrows) (contiguous ranges in rank order, together 0 .. N-1); K->nbcols = N
 * and K->colind are global block columns. Collective, with the same options on every process.
 * hk_solver_solve then takes and returns this process's rows of b and x; the result (iterations,
 * residuals) is the global one on every process. Methods and preconditioners that are not
 * distributed (docs/parallel.md) are refused by name. With a comm of one process (or NULL) it is
 * hk_solver_create_nearnull (row0 must be 0). nn may be NULL. */
int hk_solver_create_dist(const hk_comm *c, int64_t row0, const hk_bcsr *K, const hk_nearnull *nn,
                          hk_options *o, hk_solver **s);
/* hk_solver_create_dist with the rows' values already in the memory of backend be (a part
 * assembled on its GPU): K gives the pattern on the host (rowptr, global colind; K->val is
 * not read), val the K->rowptr[K->nbrows] blocks of bs x bs in K's order, in be's memory.
 * The layout is computed from the pattern; the values are put in its order, checked and
 * built into the operator where they lie, never copied to the host. The solver keeps no
 * reference to val (the caller frees it after this returns). backend must be be (or auto).
 * With one process, the values come to the host and it is hk_solver_create_dist. */
int hk_solver_create_dist_resident(const hk_comm *c, int64_t row0, const hk_bcsr *K,
                                   const hk_backend *be, const double *val, const hk_nearnull *nn,
                                   hk_options *o, hk_solver **s);
/* hk_solver_create_dist_resident with the rows' pattern in be's memory too (a part assembled
 * on its GPU, hk_assemble_rows_device_on), so that no array of the rows' blocks crosses to
 * the host: A's first nown block rows are this process's (global rows row0 .. row0 + nown -
 * 1; A's arrays in the memory of A->be, the rows after nown not read), their columns the
 * part's own: column c < nown is the global block column row0 + c, column nown + g (g <
 * nghost) is ghost_gid[g] (a host array); nglobal: the global block columns. The layout reads
 * the pattern where it lies. The solver keeps no reference to A (the caller frees it after
 * this returns). backend must be A's (or auto). With one process, A comes to the host and it
 * is hk_solver_create_dist. */
int hk_solver_create_dist_device(const hk_comm *c, int64_t row0, int64_t nglobal,
                                 const hk_resident_bcsr *A, int64_t nown, const int64_t *ghost_gid,
                                 int64_t nghost, const hk_nearnull *nn, hk_options *o,
                                 hk_solver **s);

/* The device communicator of a distributed run (dist.comm=nccl) made ahead of its solvers, so
 * that its start (NCCL's communicator and its links between the processes: about 2 s on four
 * H200s) overlaps the caller's other work, such as meshing. Optional: without it every
 * distributed solver with dist.comm=nccl makes its own in its set-up.
 * hk_dist_comm_prepare: collective over c's processes, on the thread that makes their other
 * collectives, with the same backend name on every process ("cuda", or "auto": cuda where
 * built with NCCL; anything else, or one process, prepares nothing); it only agrees on the
 * communicator's id (a broadcast), and returns a failure only of that broadcast.
 * hk_dist_comm_start: the communicator made and linked on this process's device, on any one
 * thread (the one that starts the device, while the others mesh); it returns when done or
 * failed (after 60 s at most); nothing where nothing is prepared. Every solver with
 * dist.comm=nccl on c's processes and that backend then takes it, waiting for a start still
 * under way (or starting it, where nobody has), and every process reports its failure there
 * as a creation's. hk_dist_comm_end: after the run's solvers, on every process. */
int hk_dist_comm_prepare(const hk_comm *c, const char *backend);
void hk_dist_comm_start(void);
void hk_dist_comm_end(void);

/* Wall-clock seconds (monotonic). */
double hk_time(void);

#ifdef __cplusplus
}
#endif
#endif
