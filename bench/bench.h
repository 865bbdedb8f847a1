/* `hooke bench`: the benchmark subcommands.
 *
 * Each benchmark is a function `int hk_bench_WHAT(int argc, char **argv)` (argv[0] = "WHAT")
 * returning the exit code. To add one: write bench/bench_WHAT.c, declare the function below
 * and add one line to the table `bench_cmds` in bench/cmd_bench.c (a static archive cannot
 * discover it otherwise). Measure and report with the harness (harness.h: the common options,
 * timing, tables, JSON) so every benchmark reports alike: median of repeated runs after
 * warm-up, each figure beside its baseline measured in the same run. */
#ifndef HOOKE_BENCH_H
#define HOOKE_BENCH_H

#include "harness.h"

int hk_cmd_bench(int argc, char **argv); /* bench/cmd_bench.c: `hooke bench WHAT ...` */

int hk_bench_spmv(int argc, char **argv);     /* bench/bench_spmv.c */
int hk_bench_cg(int argc, char **argv);       /* bench/bench_cg.c */
int hk_bench_assembly(int argc, char **argv); /* bench/bench_assembly.c */
int hk_bench_solvers(int argc, char **argv);  /* bench/bench_solvers.c (krylov) */
int hk_bench_pcs(int argc, char **argv);      /* bench/bench_pcs.c */
int hk_bench_app(int argc, char **argv);      /* bench/bench_app.c */
int hk_bench_mpk(int argc, char **argv);      /* bench/bench_mpk.c */
int hk_bench_eigen(int argc, char **argv);    /* bench/bench_eigen.c */
int hk_bench_output(int argc, char **argv);   /* bench/bench_output.c */
int hk_bench_modal(int argc, char **argv);    /* bench/bench_modal.c */
int hk_bench_pcpapers(int argc, char **argv); /* bench/bench_pcpapers.c */
int hk_bench_scale(int argc, char **argv);    /* bench/bench_scale.c (under mpirun) */

#endif
