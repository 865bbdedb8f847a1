/* `hooke bench`: shared pieces of the benchmark subcommands.
 *
 * Each benchmark is a function `int hk_bench_WHAT(int argc, char **argv)` (argv[0] = "WHAT")
 * returning the exit code. To add one: write bench/bench_WHAT.c, declare the function below and
 * add one line to the table `bench_cmds` in bench/cmd_bench.c (a static archive cannot discover
 * it otherwise). Use the helpers here for timing, the common options and JSON so every
 * benchmark reports alike: median of repeated runs after warm-up, each figure beside its
 * baseline measured in the same run. */
#ifndef HOOKE_BENCH_H
#define HOOKE_BENCH_H

#include <stdio.h>

#include "hooke/solver.h"

/* ---- subcommands ------------------------------------------------------------------------- */

int hk_cmd_bench(int argc, char **argv); /* bench/cmd_bench.c: `hooke bench WHAT ...` */

int hk_bench_spmv(int argc, char **argv);     /* bench/cmd_bench.c */
int hk_bench_cg(int argc, char **argv);       /* bench/bench_cg.c */
int hk_bench_assembly(int argc, char **argv); /* bench/bench_assembly.c */
int hk_bench_solvers(int argc, char **argv);  /* bench/bench_solvers.c (krylov) */
int hk_bench_pcs(int argc, char **argv);      /* bench/bench_pcs.c */
int hk_bench_app(int argc, char **argv);      /* bench/bench_app.c */
int hk_bench_mpk(int argc, char **argv);      /* bench/bench_mpk.c */

/* ---- common options: --backend auto|cpu|cuda  --json FILE  --size small|medium|large ---- */

typedef enum { HK_BENCH_SMALL = 0, HK_BENCH_MEDIUM, HK_BENCH_LARGE } hk_bench_size;

typedef struct hk_bench_opts {
    const char *backend; /* default "auto" */
    const char *json;    /* NULL: no JSON file */
    hk_bench_size size;  /* default small */
} hk_bench_opts;

/* If argv[*i] is one of the common options, consume it (and its value), advance *i and return
 * 1; return 0 when it is not a common option; -1 (message printed) on a bad value. */
int hk_bench_common_option(int argc, char **argv, int *i, hk_bench_opts *o);
const char *hk_bench_size_name(hk_bench_size s);

/* ---- timing ------------------------------------------------------------------------------ */

/* Median of n values (sorts t in place). */
double hk_bench_median(double *t, int n);

/* Time one operation: fn(ctx) runs it once and returns an hk error code (it must wait for the
 * device, e.g. end with be->sync()). After `warmup` calls, runs batches of k calls, k chosen
 * so a batch lasts >= 1 ms, at least min_batches batches and until min_seconds have passed
 * (at most 1000 batches). *seconds = median over batches of the time per call. */
int hk_bench_time(int (*fn)(void *ctx), void *ctx, int warmup, int min_batches, double min_seconds,
                  double *seconds);

/* Copy bandwidth of the backend's memory: vec_copy of an n-double vector, (read + write) bytes
 * per second, median of repeated runs. The reference figure printed beside every GB/s. */
int hk_bench_copy_bandwidth(const hk_backend *be, long long n, double *bytes_per_second);

/* ---- JSON writer (just enough for flat records) ------------------------------------------ */

typedef struct hk_json {
    FILE *f;
    int depth;
    int count[32]; /* items written at each depth (for commas) */
} hk_json;

int hk_json_open(hk_json *j, const char *path);         /* error message printed on failure */
int hk_json_close(hk_json *j);                          /* 0 when everything was written */
void hk_json_begin_object(hk_json *j, const char *key); /* key NULL inside arrays / at top */
void hk_json_end_object(hk_json *j);
void hk_json_begin_array(hk_json *j, const char *key);
void hk_json_end_array(hk_json *j);
void hk_json_string(hk_json *j, const char *key, const char *value);
void hk_json_number(hk_json *j, const char *key, double value); /* non-finite -> null */
void hk_json_int(hk_json *j, const char *key, long long value);

/* Parse a comma-separated list of integers in lo..hi into v (at most max); the count, or -1
 * when an item is not such an integer. */
int hk_bench_parse_ints(const char *s, int *v, int max, int lo, int hi);

#endif
