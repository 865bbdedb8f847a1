/* The harness every `hooke bench WHAT` shares, so that they all measure and report alike: the
 * common options, timing (batches repeated until a minimum time, medians), solves timed after
 * a warm-up, Markdown tables with ratio cells, and a JSON writer. Each figure is the median of
 * repeated runs after warm-up, printed beside its baseline measured in the same run. */
#ifndef HOOKE_BENCH_HARNESS_H
#define HOOKE_BENCH_HARNESS_H

#include <stdio.h>

#include "hooke/solver.h"

/* ---- common options: --backend auto|cpu|cuda  --json FILE  --size small|medium|large ---- */

typedef enum { HK_BENCH_SMALL = 0, HK_BENCH_MEDIUM, HK_BENCH_LARGE } hk_bench_size;

typedef struct hk_bench_opts {
    const char *backend; /* default "auto" */
    const char *json;    /* NULL: no JSON file */
    hk_bench_size size;  /* default small */
} hk_bench_opts;

#define HK_BENCH_OPTS_DEFAULT ((hk_bench_opts){"auto", NULL, HK_BENCH_SMALL})

/* Read argv[*i] if it is an option every bench takes: one of the common options (consumed
 * with its value, *i advanced past them; returns 1), or --help / -h (usage(stdout) printed;
 * returns HK_BENCH_HELP). Returns 0 when argv[*i] is the bench's own to read, -1 (message
 * printed) on a bad value. */
int hk_bench_option(int argc, char **argv, int *i, hk_bench_opts *o, void (*usage)(FILE *f));
#define HK_BENCH_HELP (-2)
const char *hk_bench_size_name(hk_bench_size s);
/* The value of a problem dimension for size s. */
double hk_bench_pick(hk_bench_size s, double small, double medium, double large);

/* The backend by name; on failure prints "who: why" and returns non-zero. */
int hk_bench_backend(const char *who, const char *name, const hk_backend **be);

/* Parse a comma-separated list of integers in lo..hi into v (at most max); the count, or -1
 * when an item is not such an integer. */
int hk_bench_parse_ints(const char *s, int *v, int max, int lo, int hi);

/* ---- timing ------------------------------------------------------------------------------ */

/* Median of n values (sorts t in place). */
double hk_bench_median(double *t, int n);

/* Time one operation: fn(ctx) runs it once and returns an hk error code (it must wait for the
 * device, e.g. end with be->sync()). After `warmup` calls, runs batches of k calls, k chosen
 * so a batch lasts >= 1 ms, at least min_batches batches and until min_seconds have passed
 * (at most 1000 batches). *seconds = median over batches of the time per call. */
int hk_bench_time(int (*fn)(void *ctx), void *ctx, int warmup, int min_batches, double min_seconds,
                  double *seconds);

/* Time n operations that take turns: fn(ctx, op) runs operation op once. After three warm-up
 * calls each, `rounds` rounds in which every op runs a batch of about batch_seconds;
 * seconds[op] = median over the rounds of its time per call. Load from other jobs that comes
 * and goes then weighs on every op alike, so their ratios hold where the times alone drift. */
int hk_bench_time_rounds(int (*fn)(void *ctx, int op), void *ctx, int n, int rounds,
                         double batch_seconds, double *seconds);

/* y = A x timed as hk_bench_time does (with the device wait). */
int hk_bench_time_spmv(hk_mat *A, const hk_vec *x, hk_vec *y, int warmup, int min_batches,
                       double min_seconds, double *seconds);

/* Copy bandwidth of the backend's memory: vec_copy of an n-double vector, (read + write) bytes
 * per second, timed for at least min_seconds. The reference figure printed beside a GB/s. */
int hk_bench_copy_bandwidth(const hk_backend *be, long long n, double min_seconds,
                            double *bytes_per_second);

/* ---- solves ------------------------------------------------------------------------------ */

/* Solve K x = b with the solver that `options` ("key=value ...") describes: `warmups` untimed
 * solves (first-use costs stay out of the figure), then `reps` (1..64) timed ones, each from
 * x = 0. *seconds = the median of their solve times; *res = the last solve's result. */
int hk_bench_solve(const hk_bcsr *K, const char *options, int warmups, int reps, const double *b,
                   double *x, hk_result *res, double *seconds);

/* K copied from the host into a new matrix in be's memory (as a device assembly leaves one:
 * the resident entries' input), the backend synchronised; freed with hk_resident_bcsr_free. */
int hk_bench_resident_copy(const hk_backend *be, const hk_bcsr *K, hk_resident_bcsr *A);

/* b = K times a vector of ones (the right-hand side whose solution is known); NULL when out of
 * memory. The caller frees it. */
double *hk_bench_rhs_ones(const hk_bcsr *K);

/* ---- Markdown tables --------------------------------------------------------------------- */

/* The header of a table and its rule (flushed, as rows are). `cells` is a printf format whose '|'
 * separate the columns (a cell that must show a '|' takes it from an argument); align has one
 * letter per column, 'l' (text) or 'r' (numbers). */
void hk_table_head(FILE *f, const char *align, const char *cells, ...)
    __attribute__((format(printf, 3, 4)));
/* One row, cells as in hk_table_head; flushed, so that a long bench shows its progress. */
void hk_table_row(FILE *f, const char *cells, ...) __attribute__((format(printf, 2, 3)));
/* A row cell by cell (for rows whose columns depend on the run, a header's among them): each
 * hk_table_cell prints one cell, hk_table_dashes n cells of "–" (not measured), hk_table_end
 * closes the row; hk_table_rule prints the rule under a header so made. */
void hk_table_cell(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hk_table_dashes(FILE *f, int n);
void hk_table_end(FILE *f);
void hk_table_rule(FILE *f, const char *align);

/* A ratio cell, baseline time / this time: "1.23x", or "-" when it was not measured (not
 * finite or not positive). Returns buf. */
const char *hk_bench_ratio_text(char *buf, size_t cap, double ratio);

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

#endif
