/* hypre's BoomerAMG-preconditioned CG as a peer of `hooke bench pcs` (--peer hypre): the same
 * assembled K and f handed to an established AMG library in the same process, so that its
 * set-up and solve times stand beside hooke's rows of the same run and card.
 *
 * The peer is compiled in only when hooke is configured with -DHOOKE_HYPRE_DIR=<a hypre
 * install> (docs/BENCHMARKS.md, "The hypre peer", says how to build one); without it
 * hk_peer_hypre_solve refuses in one sentence. The settings are parsed either way, so a bad
 * --peer is refused before any work. */
#ifndef HOOKE_PEER_HYPRE_H
#define HOOKE_PEER_HYPRE_H

#include <stddef.h>

#include "hooke/solver.h"

/* BoomerAMG and PCG settings by name (`--peer 'hypre strong=0.6 agg=1'`); the defaults are
 * the options hypre's manual lists as running on the GPU, with the strength threshold raised
 * for elasticity as the manual advises. */
typedef struct hk_hypre_settings {
    double strong;  /* strong: strength threshold (0.5) */
    double trunc;   /* trunc: interpolation truncation factor (0: none) */
    int coarsen;    /* coarsen: coarsening type (8: PMIS) */
    int interp;     /* interp: interpolation type (6: extended+i) */
    int pmax;       /* pmax: interpolation entries per row at most (4) */
    int relax;      /* relax: smoother (18: l1-Jacobi) */
    int sweeps;     /* sweeps: smoother sweeps down and up (1) */
    int agg;        /* agg: levels of aggressive coarsening (0) */
    int agg_interp; /* agg_interp: their interpolation (5: extended) */
    int agg_pmax;   /* agg_pmax: their entries per row at most (0: no limit) */
    int functions;  /* functions: unknowns per node for the systems approach (0: K's block size) */
    int max_levels; /* max_levels (25) */
    int keep_transpose; /* keep_transpose: keep R = P^T as a matrix (1) */
    int rap2;           /* rap2: the Galerkin product as two products (0) */
    int vendor_spgemm;  /* vendor_spgemm: cuSPARSE's SpGEMM instead of hypre's own (0) */
    int maxit;          /* maxit: PCG iterations at most (1000) */
    int print;          /* print: BoomerAMG's set-up statistics to stdout (0) */
} hk_hypre_settings;

/* What one peer solve gave; the caller computes the true residual from u itself. */
typedef struct hk_peer_result {
    int iterations;
    int converged;       /* hypre's own verdict, on its recursive residual */
    double load_s;       /* K and f into hypre's IJ objects and onto its device (not in set-up) */
    double setup_s;      /* HYPRE_PCGSetup: BoomerAMG's set-up */
    double solve_s;      /* HYPRE_PCGSolve from u = 0 */
    double final_relres; /* hypre's final relative residual (recursive) */
} hk_peer_result;

/* Parses "hypre [KEY=VALUE ...]" into s (defaults first); one sentence naming the key or
 * value and the fix on bad input. */
int hk_peer_hypre_parse(const char *text, hk_hypre_settings *s);

/* 1 and a description ("hypre 2.33.0, CUDA") when the peer is compiled in, else 0 and the
 * sentence a user gets. */
int hk_peer_hypre_built(char *desc, size_t cap);

/* Solves K u = f with BoomerAMG-PCG to the relative residual tol (two-norm, from u = 0). */
int hk_peer_hypre_solve(const hk_bcsr *K, const double *f, const hk_hypre_settings *s, double tol,
                        double *u, hk_peer_result *r);

#endif
