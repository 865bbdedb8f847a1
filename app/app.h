/* The hooke command's subcommands. Each returns the process exit code. */
#ifndef HOOKE_APP_H
#define HOOKE_APP_H

#include "hooke/solver.h"

int hk_app_main(int argc, char **argv);
/* Under mpirun, where OMP_NUM_THREADS does not say: each process's share of this machine's
 * cores as its OpenMP thread count (docs/parallel.md "Threads"), said once where mpirun bound
 * each process to a single core. First thing after the processes are set up. */
void hk_app_share_threads(void);
int hk_cmd_run(int argc, char **argv);   /* app/cmd_run.c */
/* hooke run on the processes of mpirun (app/run_mpi.c, docs/parallel.md): mesh and partition
 * on rank 0, assembly, solve and post-processing of each process's part, one .vtu piece per
 * process and a .pvtu, the summary from rank 0; the same exit status on every process. */
int hk_cmd_run_mpi(int argc, char **argv);
int hk_cmd_solve(int argc, char **argv); /* app/cmd_solve.c */
int hk_cmd_solve_eigen(int argc, char **argv); /* app/cmd_solve_eigen.c: solve --eigen N */
int hk_cmd_mesh(int argc, char **argv);  /* app/cmd_mesh.c */
int hk_cmd_info(int argc, char **argv);  /* app/cli.c */
/* hooke solve on the processes of mpirun (app/solve_mpi.c): the parsed arguments; rank 0 reads
 * and prints, every process returns the same exit code. */
/* The result lines of hooke solve: reason, iterations, true residual, note, the max error
 * against ones (ones: x should be ones), set-up and solve times (app/solve_report.c). */
void hk_solve_print_result(const hk_result *res, const double *x, int64_t n, int ones);
int hk_cmd_solve_mpi(const char *mtx, const char *gen, const char *rhs, const char *coords,
                     const char *out, int bs, hk_options *o);
/* --coords FILE for the matrix K (app/solve_report.c): its node coordinates (*coords, *dim), or
 * the message on stderr and non-zero. */
int hk_solve_read_coords(const char *file, const hk_bcsr *K, double **coords, int *dim);
/* --rhs FILE for n rows (app/solve_report.c): *b, or the message on stderr and non-zero. */
int hk_solve_read_rhs(const char *file, int64_t n, double **b);
/* A generated test matrix from "KIND:N" (elasticity3d, elasticity2d, poisson, convdiff), with
 * the node coordinates of the elasticity kinds (*coords, *dim; else NULL, 0); messages on
 * stderr start with who. Returns 0 or -1. (app/generate.c) */
int hk_app_generate(const char *spec, const char *who, hk_bcsr *A, double **coords, int *dim);
/* What to change after an unconverged solve (cmd_run.c): a larger tol when the true residual
 * stalled at the rounding floor, else another pc or more iterations; prefix goes before the
 * option names ("--set solver." or ""). */
void hk_app_unconverged_hint(const hk_result *res, double tol, const char *prefix, char *buf,
                             size_t n);
/* Create the folders above an output path, as hooke run does for output.file (cmd_run.c). */
int hk_app_make_parent_dirs(const char *path);

#endif
