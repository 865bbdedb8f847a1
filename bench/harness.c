/* The benchmarks' shared harness (harness.h): options, timing, solves, tables, JSON. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hk_impl.h"

/* ---- common options ---------------------------------------------------------------------- */

static const char *const size_names[] = {"small", "medium", "large"};

const char *hk_bench_size_name(hk_bench_size s)
{
    return s >= 0 && s <= HK_BENCH_LARGE ? size_names[s] : "?";
}

double hk_bench_pick(hk_bench_size s, double small, double medium, double large)
{
    return s == HK_BENCH_SMALL ? small : s == HK_BENCH_MEDIUM ? medium : large;
}

static int common_option(int argc, char **argv, int *i, hk_bench_opts *o)
{
    const char *a = argv[*i];
    const char *keys[] = {"--backend", "--json", "--size"};
    for (int k = 0; k < 3; k++) {
        size_t len = strlen(keys[k]);
        if (strncmp(a, keys[k], len) != 0 || (a[len] != 0 && a[len] != '=')) continue;
        const char *v;
        if (a[len] == '=')
            v = a + len + 1;
        else if (*i + 1 < argc)
            v = argv[++*i];
        else {
            fprintf(stderr, "hooke bench: option %s needs a value\n", keys[k]);
            return -1;
        }
        if (k == 0)
            o->backend = v;
        else if (k == 1)
            o->json = v;
        else {
            int s;
            for (s = 0; s < 3 && strcmp(v, size_names[s]); s++) {
            }
            if (s == 3) {
                fprintf(stderr, "hooke bench: --size %s is unknown; use small, medium or large\n",
                        v);
                return -1;
            }
            o->size = (hk_bench_size)s;
        }
        (*i)++;
        return 1;
    }
    return 0;
}

int hk_bench_option(int argc, char **argv, int *i, hk_bench_opts *o, void (*usage)(FILE *f))
{
    if (!strcmp(argv[*i], "--help") || !strcmp(argv[*i], "-h")) {
        usage(stdout);
        return HK_BENCH_HELP;
    }
    return common_option(argc, argv, i, o);
}

int hk_bench_backend(const char *who, const char *name, const hk_backend **be)
{
    if (!hk_backend_get(name, be)) return 0;
    fprintf(stderr, "%s: %s\n", who, hk_error_message());
    return 1;
}

int hk_bench_parse_ints(const char *s, int *v, int max, int lo, int hi)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || x < lo || x > hi) return -1;
        v[n++] = (int)x;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return n;
}

/* ---- timing ------------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double hk_bench_median(double *t, int n)
{
    if (n <= 0) return NAN;
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Calls per batch so that a batch of calls of est seconds each lasts about target seconds. */
static int batch_calls(double est, double target)
{
    int k = est > 0 ? (int)ceil(target / est) : 1000;
    if (k < 1) k = 1;
    if (k > 100000) k = 100000;
    return k;
}

int hk_bench_time(int (*fn)(void *ctx), void *ctx, int warmup, int min_batches, double min_seconds,
                  double *seconds)
{
    enum { MAXB = 1000 };
    static double per[MAXB];
    double t0 = hk_time();
    for (int w = 0; w < warmup; w++)
        HK_CALL(fn(ctx));
    double est = warmup > 0 ? (hk_time() - t0) / warmup : 0;
    if (warmup <= 0) {
        t0 = hk_time();
        HK_CALL(fn(ctx));
        est = hk_time() - t0;
    }
    const int k = batch_calls(est, 1e-3);
    int nb = 0;
    double start = hk_time();
    while (nb < MAXB && (nb < min_batches || hk_time() - start < min_seconds)) {
        double t = hk_time();
        for (int r = 0; r < k; r++)
            HK_CALL(fn(ctx));
        per[nb++] = (hk_time() - t) / k;
    }
    *seconds = hk_bench_median(per, nb);
    return 0;
}

int hk_bench_time_rounds(int (*fn)(void *ctx, int op), void *ctx, int n, int rounds,
                         double batch_seconds, double *seconds)
{
    int ierr = 0, *k = NULL;
    double *t = NULL;
    HK_TRY(hk_malloc((size_t)(n > 0 ? n : 1) * sizeof *k, &k));
    HK_TRY(hk_malloc((size_t)(n > 0 ? n : 1) * (size_t)(rounds > 0 ? rounds : 1) * sizeof *t, &t));
    for (int op = 0; op < n; op++) {
        const double t0 = hk_time();
        for (int w = 0; w < 3; w++)
            HK_TRY(fn(ctx, op));
        k[op] = batch_calls((hk_time() - t0) / 3, batch_seconds);
    }
    for (int r = 0; r < rounds; r++)
        for (int op = 0; op < n; op++) {
            const double t0 = hk_time();
            for (int j = 0; j < k[op]; j++)
                HK_TRY(fn(ctx, op));
            t[(size_t)op * rounds + r] = (hk_time() - t0) / k[op];
        }
    for (int op = 0; op < n; op++)
        seconds[op] = hk_bench_median(t + (size_t)op * rounds, rounds);
fail:
    free(k);
    free(t);
    return ierr;
}

typedef struct spmv_ctx {
    hk_mat *A;
    const hk_vec *x;
    hk_vec *y;
} spmv_ctx;

static int spmv_once(void *p)
{
    spmv_ctx *c = p;
    HK_CALL(hk_mat_spmv(c->A, c->x, c->y));
    return c->A->be->sync();
}

int hk_bench_time_spmv(hk_mat *A, const hk_vec *x, hk_vec *y, int warmup, int min_batches,
                       double min_seconds, double *seconds)
{
    spmv_ctx c = {A, x, y};
    return hk_bench_time(spmv_once, &c, warmup, min_batches, min_seconds, seconds);
}

typedef struct copy_ctx {
    const hk_backend_ops *be;
    hk_vec *x, *y;
} copy_ctx;

static int copy_once(void *p)
{
    copy_ctx *c = p;
    HK_CALL(c->be->vec_copy(c->y, c->x));
    return c->be->sync();
}

int hk_bench_copy_bandwidth(const hk_backend *be, long long n, double min_seconds, double *bps)
{
    int ierr;
    copy_ctx c = {be, NULL, NULL};
    double t = 0;
    HK_TRY(hk_vec_create(be, n, HK_FP64, &c.x));
    HK_TRY(hk_vec_create(be, n, HK_FP64, &c.y));
    HK_TRY(be->vec_set(c.x, 1.0));
    HK_TRY(be->vec_set(c.y, 0.0));
    HK_TRY(hk_bench_time(copy_once, &c, 3, 10, min_seconds, &t));
    *bps = 2.0 * (double)n * sizeof(double) / t;
fail:
    hk_vec_destroy(c.x);
    hk_vec_destroy(c.y);
    return ierr;
}

/* ---- solves ------------------------------------------------------------------------------ */

int hk_bench_solve(const hk_bcsr *K, const char *options, int warmups, int reps, const double *b,
                   double *x, hk_result *res, double *seconds)
{
    int ierr;
    hk_options *o = NULL;
    hk_solver *s = NULL;
    double t[64];
    const int64_t n = K->nbrows * K->bs;
    HK_CHECK(reps >= 1 && reps <= 64, HK_ERR_INTERNAL, "hk_bench_solve: reps = %d, not 1..64",
             reps);
    HK_TRY(hk_options_create(&o));
    HK_TRY(hk_options_parse(o, options));
    HK_TRY(hk_solver_create(K, o, &s));
    for (int r = 0; r < warmups + reps; r++) {
        memset(x, 0, (size_t)n * sizeof *x);
        HK_TRY(hk_solver_solve(s, b, x, res));
        if (r >= warmups) t[r - warmups] = res->solve_seconds;
    }
    *seconds = hk_bench_median(t, reps);
fail:
    hk_solver_destroy(s);
    hk_options_destroy(o);
    return ierr;
}

int hk_bench_resident_copy(const hk_backend *be, const hk_bcsr *K, hk_resident_bcsr *A)
{
    hk_bmat B;
    HK_CALL(hk_bmat_upload(be, K, &B));
    const int ierr = be->sync();
    if (ierr) {
        hk_bmat_free(&B);
        return ierr;
    }
    *A = (hk_resident_bcsr){be, B.br, B.nbrows, B.nbcols, B.nnzb, B.rowptr, B.colind, B.val};
    return 0;
}

double *hk_bench_rhs_ones(const hk_bcsr *K)
{
    const int64_t n = K->nbrows * K->bs;
    double *one = malloc((size_t)(n ? n : 1) * sizeof *one);
    double *b = malloc((size_t)(n ? n : 1) * sizeof *b);
    if (!one || !b) {
        free(one);
        free(b);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        one[i] = 1.0;
    hk_bcsr_spmv(K, one, b);
    free(one);
    return b;
}

/* ---- Markdown tables --------------------------------------------------------------------- */

/* Print cells ('|' between columns) as "| a | b |\n"; an empty cell as "| |". */
static void table_line(FILE *f, const char *cells, va_list ap)
{
    size_t bars = 0;
    for (const char *c = cells; *c; c++)
        bars += *c == '|';
    /* "| " + each bar as " | " + " |\n" + the terminating zero */
    char *fmt = malloc(strlen(cells) + 2 * bars + 6);
    if (!fmt) return;
    char *w = fmt;
    *w++ = '|', *w++ = ' ';
    for (const char *c = cells;; c++) {
        if (*c && *c != '|') {
            *w++ = *c;
            continue;
        }
        if (w[-1] != ' ') *w++ = ' '; /* after an empty cell the space is there already */
        *w++ = '|';
        if (!*c) break;
        *w++ = ' ';
    }
    *w++ = '\n', *w = 0;
    vfprintf(f, fmt, ap);
    free(fmt);
}

void hk_table_rule(FILE *f, const char *align)
{
    fputc('|', f);
    for (const char *a = align; *a; a++)
        fputs(*a == 'r' ? "---:|" : "---|", f);
    fputc('\n', f);
    fflush(f);
}

void hk_table_head(FILE *f, const char *align, const char *cells, ...)
{
    va_list ap;
    va_start(ap, cells);
    table_line(f, cells, ap);
    va_end(ap);
    hk_table_rule(f, align);
}

void hk_table_row(FILE *f, const char *cells, ...)
{
    va_list ap;
    va_start(ap, cells);
    table_line(f, cells, ap);
    va_end(ap);
    fflush(f);
}

void hk_table_cell(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("| ", f);
    vfprintf(f, fmt, ap);
    fputc(' ', f);
    va_end(ap);
}

void hk_table_dashes(FILE *f, int n)
{
    for (int i = 0; i < n; i++)
        fputs("| – ", f);
}

void hk_table_end(FILE *f)
{
    fputs("|\n", f);
    fflush(f);
}

const char *hk_bench_ratio_text(char *buf, size_t cap, double ratio)
{
    if (isfinite(ratio) && ratio > 0)
        snprintf(buf, cap, "%.2fx", ratio);
    else
        snprintf(buf, cap, "-");
    return buf;
}

/* ---- JSON -------------------------------------------------------------------------------- */

/* Values are written as they come; commas from the per-depth item counts. */
static void json_key(hk_json *j, const char *key)
{
    if (!j->f) return;
    if (j->count[j->depth]++) fputc(',', j->f);
    fprintf(j->f, "\n%*s", 2 * j->depth, "");
    if (key) fprintf(j->f, "\"%s\": ", key);
}

int hk_json_open(hk_json *j, const char *path)
{
    memset(j, 0, sizeof *j);
    j->f = fopen(path, "w");
    if (!j->f) {
        fprintf(stderr, "hooke bench: cannot write JSON file %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

int hk_json_close(hk_json *j)
{
    if (!j->f) return 1;
    fputc('\n', j->f);
    int bad = ferror(j->f);
    bad |= fclose(j->f) != 0;
    j->f = NULL;
    return bad;
}

static void json_open_scope(hk_json *j, const char *key, char c)
{
    if (!j->f) return;
    if (j->depth > 0 || j->count[0]) json_key(j, key);
    fputc(c, j->f);
    if (j->depth < 31) j->count[++j->depth] = 0;
}

static void json_close_scope(hk_json *j, char c)
{
    if (!j->f || j->depth == 0) return;
    int had = j->count[j->depth];
    j->depth--;
    if (had) fprintf(j->f, "\n%*s", 2 * j->depth, "");
    fputc(c, j->f);
    if (j->depth == 0) j->count[0]++;
}

void hk_json_begin_object(hk_json *j, const char *key)
{
    json_open_scope(j, key, '{');
}
void hk_json_end_object(hk_json *j)
{
    json_close_scope(j, '}');
}
void hk_json_begin_array(hk_json *j, const char *key)
{
    json_open_scope(j, key, '[');
}
void hk_json_end_array(hk_json *j)
{
    json_close_scope(j, ']');
}

void hk_json_string(hk_json *j, const char *key, const char *value)
{
    if (!j->f) return;
    json_key(j, key);
    fputc('"', j->f);
    for (const char *s = value; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(j->f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(j->f, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, j->f);
    }
    fputc('"', j->f);
}

void hk_json_number(hk_json *j, const char *key, double value)
{
    if (!j->f) return;
    json_key(j, key);
    if (isfinite(value))
        fprintf(j->f, "%.6g", value);
    else
        fputs("null", j->f);
}

void hk_json_int(hk_json *j, const char *key, long long value)
{
    if (!j->f) return;
    json_key(j, key);
    fprintf(j->f, "%lld", value);
}
