/* pc=amg on several processes: what its files share (solver/dist/, docs/parallel.md).
 *   damg_operator.c  the distributed block operator (dmat), the set-up's staging and timing
 *   damg_gathered.c  the small levels on every process (pc.amg.dist.gather_rows)
 *   dist_amg.c       the hierarchy's set-up and its entry points (its header comment tells
 *                    the whole method)
 *   damg_cycle.c     apply: the cycle, and the preconditioner's ops table
 * Each file calls only the files above it in this list. */
#ifndef HOOKE_DAMG_IMPL_H
#define HOOKE_DAMG_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "dist_impl.h"
#include "pc/pc_impl.h"


#define DAMG_MAX_LEVELS HK_AMG_STATS_LEVELS
#define DAMG_MAX_NNS 6
enum {
    DAMG_TAG_ROUTE = 7301,
    DAMG_TAG_ROWS = 7302,
    DAMG_TAG_ROUTE_ROWS = 7303,
    DAMG_TAG_ROUTE_PTR = 7304,
    DAMG_TAG_ROUTE_COLS = 7305,
    DAMG_TAG_MIRROR_IDS = 7306,
    DAMG_TAG_MIRROR = 7307
};

/* The set-up's phases, timed for HOOKE_AMG_PROFILE (docs/parallel.md). */
enum damg_phase {
    PH_NEARNULL,  /* level 0's rows on the backend and the rigid-body modes */
    PH_AGGREGATE, /* owned diagonal block, strength graph, aggregates */
    PH_UPLOAD,    /* a coarse level's rows to the process's backend (none on the cpu) */
    PH_BOUND,     /* smoother data and the spectral bound (distributed Lanczos) */
    PH_TENTATIVE, /* T and the coarse near-null space */
    PH_EXCHANGE,  /* the ghosts' rows of T and of P (halo exchanges and their matrices) */
    PH_SMOOTH,    /* A T and P = T - w D^-1 A T */
    PH_GALERKIN,  /* P^T (A P), routed to the coarse rows' owners and merged */
    PH_RESTRICT,  /* R = P^T routed and merged */
    PH_OPERATORS, /* the distributed operators A_c, P, R: halo plans, columns, upload */
    PH_COARSE,    /* the coarsest level gathered and inverted */
    PH_VECTORS,   /* level vectors and the level-0 operator */
    PH_TOTAL,
    DAMG_NPHASES
};


/* The phases' steps, timed too under HOOKE_AMG_PROFILE (a second line; the backend is
 * synchronized at each step's end, so that a device's queued work counts where it is made). */
enum damg_step {
    ST_OP_HALO,       /* operators: ghost columns and halo plans */
    ST_OP_COLUMNS,    /* operators: local columns, sorted and split */
    ST_OP_UPLOAD,     /* operators: pattern, values, plans to the backend */
    ST_GR_SEND,       /* ghost rows: the send rows' records packed on the backend, downloaded */
    ST_GR_EXCHANGE,   /* ghost rows: the records exchanged */
    ST_GR_BUILD,      /* ghost rows: the columns' union, the rows with their ghosts built */
    ST_GAL_PRODUCTS,  /* Galerkin: A P, P^T, P^T (A P) on the backend */
    ST_GAL_OTHERS,    /* Galerkin: the product's rows owned elsewhere downloaded */
    ST_GAL_ROUTE,     /* Galerkin: those rows routed */
    ST_GAL_MERGE,     /* Galerkin: the received blocks and own rows merged on the backend */
    ST_GAL_PATTERN,   /* Galerkin: the merged rows' pattern downloaded */
    ST_GAL_ROWS,      /* Galerkin: the next level's rows (host and backend) */
    ST_GAL_MIRROR,    /* Galerkin: their blocks below the diagonal from their mirrors */
    ST_NN_ROWS,       /* near-null: level 0's rows on the backend, the inverse numbering */
    ST_NN_MODES,      /* near-null: the frame summed, the rigid-body modes */
    ST_AGG_STRENGTH,  /* aggregation: the strength graph */
    ST_AGG_AGGREGATE, /* aggregation: the aggregates */
    ST_AGG_COUNT,     /* aggregation: the aggregates counted over the processes (its wait) */
    ST_CO_UNSPLIT,    /* coarsest: P above the gathered levels put back in order */
    ST_CO_PACK,       /* coarsest: the gathered levels' A, P, R: this process's rows packed */
    ST_CO_GATHER,     /* coarsest: every process's packed rows (one allgatherv) */
    ST_CO_OPERATORS,  /* coarsest: those rows to the backend, one matrix each on every process */
    ST_CO_VECTORS,    /* coarsest: their vectors, the gather's index */
    ST_CO_INVERSE,    /* coarsest: the coarsest level gathered and inverted */
    DAMG_NSTEPS
};
/* After the steps' seconds (damg.steps): the ghost rows' messages of the set-up, this
 * process's (HOOKE_AMG_PROFILE: is the exchange its bytes or its round trips?) */
enum {
    MSG_GR_SENT,    /* bytes sent: the block counts, then the records */
    MSG_GR_RECV,    /* bytes received */
    MSG_GR_COUNT,   /* messages sent (two rounds an exchange: counts, records) */
    MSG_GR_LARGEST, /* the largest record message, bytes */
    MSG_GR_ROUNDS,  /* exchanges (two a level: T's rows and P's) */
    MSG_STAGE_T,    /* the staging's allocations in this set-up: seconds (inside its steps) */
    MSG_STAGE_MB,   /* and megabytes */
    DAMG_NMSG
};

/* ---- a distributed block operator y = M x -------------------------------------------------
 * Rows: the process's rows of the output layout. x: another (or the same) layout whose owned
 * range is [in_row0, in_row0 + in_nown); the matrix's columns are [the nbc owned columns it
 * reads, then the ghosts], gathered and received before one bmat_spmv. */
typedef struct dmat {
    const hk_dist *d;
    hk_halo *halo;
    int64_t nrows, ng, nbc, ns;
    int br, bc;
    int64_t *ghost; /* ng sorted global ids */
    hk_bmat M;      /* on the backend's own table */
    float *v32;     /* fp32 values (M.val freed) */
    int32_t *send_dev, *bcol_dev;
    hk_vec *send, *xe;
    void *host_send, *host_recv;
    hk_precision prec;
    int prof_kind, prof_level; /* HOOKE_DIST_PROFILE's label (hk_damg_gather_levels sets it) */
    /* dmat_split: M's rows interior first (nint rows read no ghost), computed into ytmp while
     * the ghosts travel, then y[i] = ytmp[ypos[i]]; nint 0: M in y's order */
    int64_t nint, nzint; /* nzint: the interior rows' blocks */
    int32_t *ypos_dev;
    hk_vec *ytmp;
} dmat;

/* Grow-only host staging of the set-up's exchanges, kept by the preconditioner across its
 * levels and its set-ups (an fp64 rebuild reuses it) and freed with it. Pageable memory by
 * default, touched by every thread when it is allocated (no page faults in the copies and
 * messages after), its copies to and from a device through the backend's pinned buffers
 * (copy_to_pageable, copy_from_pageable): pinning costs about 0.8 ms a MB (cudaMallocHost; 385
 * MB, 0.32 s, in a 14.6M-DOF set-up on four processes), more than the few copies of each buffer
 * in a set-up gain from it. HOOKE_AMG_STAGING=pinned pins it (hk_dist_host_alloc), for
 * comparison. Not sized ahead by a bound: the largest use, level 0's P rows, is bounded only by
 * A's row lengths, 2-3 times the bytes P's rows take. One buffer a use, as the exchanges need
 * several at once. */
enum {
    STAGE_SEND,      /* blocks sent: the ghost rows' records, the routed rows' blocks, the
                      * coarse operator's mirrors */
    STAGE_RECV,      /* blocks received */
    STAGE_SEND_COL,  /* global columns: the routed rows', the received ghost rows'; the sent
                      * mirrors' (row, column) ids */
    STAGE_SEND_I32,  /* the routed rows' local columns, downloaded */
    STAGE_SEND_PTR,  /* the Galerkin product's rowptr, downloaded */
    STAGE_MERGE_PTR, /* the merged rows' rowptr, downloaded */
    STAGE_MERGE_COL, /* their keys, downloaded, then global columns */
    STAGE_RECV_ROW,  /* the routed rows received: global ids */
    STAGE_RECV_PTR,  /* their block offsets, one slice a sender */
    STAGE_RECV_COL,  /* their columns, then merge keys; the received mirrors' ids */
    STAGE_RECV_I32,  /* their blocks' local rows */
    STAGE_COUNT
};
typedef struct stage {
    void *p[STAGE_COUNT];
    size_t cap[STAGE_COUNT];
    unsigned char pinned[STAGE_COUNT]; /* p[k] from hk_dist_host_alloc (else malloc's) */
    int pin;               /* this set-up's kind (hk_damg_stage_kind): new buffers pinned */
    double t_alloc, bytes; /* the allocations' (and their buffers' frees) seconds, bytes */
} stage;

/* A level's operator, P or R on every process: all processes' rows in the global order, each
 * row's blocks in the order its owner stores them (so each row's sum is the owner's), columns
 * the global ids of the input level; fp64 values in M.val or fp32 in v32 (M.val NULL). */
typedef struct rmat {
    hk_bmat M;
    float *v32;
} rmat;

typedef struct dlev {
    int64_t row0, nown, nglob; /* block rows of this process, its first global one, all */
    int bs;
    hk_mat *A0; /* level 0: the distributed operator in pc->prec */
    int A0_owned;
    dmat *A;     /* levels >= 1 */
    dmat *P, *R; /* to and from the next level */
    hk_vec *Dinv, *l1;
    double rho;
    hk_vec *b, *x, *r, *t, *d, *w, *e;
    hk_vec *d2; /* level 0, Chebyshev of degree 3 and up through amg_cheb_step: d_k's second */
    /* the levels on every process (from damg.g on): the whole level's operator, P and R, its
     * smoother's data and vectors, on the backend's own table */
    rmat gA, gP, gR;
    hk_vec *gDinv, *gl1, *gb, *gx, *gr, *gt, *gd, *gw, *ge;
    int32_t *pfull_dev; /* level g - 1: P's input columns as blocks of level g's whole vector */
} dlev;

typedef struct damg {
    hk_amg_options op;
    hk_dist *d;
    int nlevels, nns;
    const char *nns_kind;
    dlev lev[DAMG_MAX_LEVELS];
    int fp32_range;
    /* HOOKE_AMG_UNFUSED=1: level 0's sweeps and residual by the separate calls (else by the
     * table's amg_cheb_step) */
    int unfused;
    /* the coarsest level, gathered on every process */
    hk_vec *Minv, *cb, *cx; /* on the backend's own table, pc->prec */
    int64_t *coff;          /* size + 1 scalar offsets of the processes' coarsest rows */
    const int32_t *cperm;   /* level 0 is the coarsest: its internal row i is the caller's
                             * perm[i] (the gathered matrix is in the callers' numbering) */
    void *hperm;            /* host scratch of that permutation */
    void *hown, *hall;      /* host staging of the gather */
    int64_t rows[DAMG_MAX_LEVELS], nnz[DAMG_MAX_LEVELS];
    double op_complexity;
    /* pc.amg.dist.gather_rows: levels g .. nlevels - 1 are on every process (g = nlevels:
     * only the coarsest, gathered at each cycle); level g's right-hand side is gathered by one
     * allgather (goff: the processes' scalar offsets; gown, gall: host staging) */
    int64_t gather_rows;
    int g;
    size_t *gcount;
    void *gown, *gall;
    double ph[2 * DAMG_NPHASES]; /* the last set-up's wall, then CPU, seconds per phase */
    double steps[2 * DAMG_NSTEPS + DAMG_NMSG]; /* the same per step, then the messages */
    double *st;                    /* steps under HOOKE_AMG_PROFILE, else NULL */
    stage stg; /* host staging of the set-ups' exchanges (freed with the preconditioner) */
    double t_pc;                 /* when the set-up began (hk_time) */
} damg;

/* ---- damg_operator.c --------------------------------------------------------------------- */

int hk_damg_copy_on(const hk_dist *d, void *dst, const void *src, size_t bytes);
void hk_damg_copy_par(void *dst, const void *src, size_t bytes);
int hk_damg_dmat_create(const hk_dist *d, hk_precision prec, int64_t nrows, int br, int bc,
                        const int64_t *rowptr, const int64_t *gcol, const double *val,
                        const double *val_dev, int64_t in_row0, int64_t in_nown,
                        const int32_t *in_inv, int split, double *st, dmat **out);
int hk_damg_dmat_create_dev(const hk_dist *d, hk_precision prec, int64_t nrows, int br, int bc,
                            int64_t nnz, const int64_t *rowptr, const int32_t *col,
                            const int32_t *map, const double *val_dev, int64_t nbc,
                            int32_t *bcol_dev, int64_t *ghost, int64_t ng, int64_t in_row0,
                            int64_t in_nown, const int32_t *in_inv, int split, double *st,
                            double *t, dmat **out);
void hk_damg_dmat_destroy(dmat *m);
int hk_damg_dmat_spmv(void *op, const hk_vec *x, hk_vec *y);
int64_t hk_damg_find_i64(const int64_t *v, int64_t n, int64_t g);
int hk_damg_ghost_columns(int64_t nnz, const int64_t *gcol, int64_t row0, int64_t nown,
                          int64_t **ghost, int64_t *ng);
void hk_damg_free_copy(const hk_dist *d, hk_bmat *M);
int hk_damg_gather_blocks(const hk_dist *d, double *dst, const double *src, int64_t nsrc,
                          int64_t bb, const int32_t *idx, int64_t n);
int hk_damg_host_untouched(size_t bytes, double **p);
void hk_damg_lap(double *ph, int k, double *t);
void hk_damg_lap_start(double *t);
int hk_damg_local_copy(const hk_dist *d, const hk_bmat *M, hk_bmat *D);
int hk_damg_pattern_alloc(const hk_backend_ops *be, int br, int bc, int64_t nbrows, int64_t nbcols,
                          int64_t nnzb, hk_bmat *A);
int hk_damg_pattern_to_host(const hk_dist *d, const hk_bmat *D, hk_bmat *H);
int hk_damg_sorted_unique(int64_t *v, int64_t n, int64_t *m);
int hk_damg_stage_down(const hk_dist *d, const stage *s, void *host, const void *src, size_t bytes);
void hk_damg_stage_free(const hk_dist *d, stage *s);
int hk_damg_stage_get(const hk_dist *d, stage *s, int k, size_t bytes, void **p);
int hk_damg_stage_kind(const hk_dist *d, stage *s);
int hk_damg_stage_up(const hk_dist *d, const stage *s, void *dst, const void *host, size_t bytes);
void hk_damg_step_lap(const hk_backend_ops *be, double *st, int k, double *t);
int hk_damg_to_backend(const hk_backend_ops *be, void *dst, const void *h, size_t bytes);
int hk_damg_to_host(const hk_backend_ops *be, void *h, const void *src, size_t bytes);
int hk_damg_upload(const hk_backend_ops *be, const void *h, size_t bytes, void **dev);
int hk_damg_vec_sized(const hk_backend_ops *be, int64_t n, hk_precision p, hk_vec **v);

/* ---- damg_gathered.c --------------------------------------------------------------------- */

int hk_damg_gather_levels(hk_pc *pc, damg *a);
int hk_damg_gather_vec(const hk_dist *d, const void *own, const size_t *counts, void *hown,
                       void *hall, void *all, int level);

/* ---- dist_amg.c -------------------------------------------------------------------------- */

int hk_damg_coarse_solve(hk_pc *pc, damg *a, const hk_vec *b, hk_vec *x);
int hk_damg_fallback(hk_pc *pc, const hk_bmat *K, hk_mat *A, double at);
int hk_damg_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o);
void hk_damg_free_levels(damg *a);
hk_amg_sweep hk_damg_sweep_of(const hk_pc *pc, const damg *a, dlev *L, int l);

#endif
