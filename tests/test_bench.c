/* The benchmarks' harness (bench/harness.c): the common options, Markdown tables and ratio
 * cells as the benches print them, the turn-taking timer's order of calls, and a timed solve
 * against its known solution. (The JSON writer is checked in test_formats.c; each bench end to
 * end in the suites of what it measures.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "harness.h"
#include "peer_hypre.h"

/* What f received since it was opened, as a string (static buffer). */
static const char *file_text(FILE *f)
{
    static char buf[1024];
    fflush(f);
    rewind(f);
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    buf[len] = 0;
    return buf;
}

static void test_tables(void)
{
    FILE *f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    /* a '|' inside a cell comes from an argument; the rule follows the alignment letters */
    hk_table_head(f, "lrr", "name|%s after %d|%%copy", "||r||", 6);
    CU_ASSERT_STRING_EQUAL(file_text(f), "| name | ||r|| after 6 | %copy |\n|---|---:|---:|\n");
    fclose(f);

    f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    hk_table_row(f, "mesh|%.2f|", 1.234); /* an empty last cell */
    hk_table_row(f, "|x||%d", 3);         /* empty cells first and between */
    CU_ASSERT_STRING_EQUAL(file_text(f), "| mesh | 1.23 | |\n| | x | | 3 |\n");
    fclose(f);

    /* cell by cell, with cells not measured, then a header so made and its rule */
    f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    hk_table_cell(f, "%s", "cg");
    hk_table_dashes(f, 2);
    hk_table_cell(f, "%d", 7);
    hk_table_end(f);
    hk_table_cell(f, "a");
    hk_table_end(f);
    hk_table_rule(f, "l");
    CU_ASSERT_STRING_EQUAL(file_text(f), "| cg | – | – | 7 |\n| a |\n|---|\n");
    fclose(f);

    char buf[16];
    CU_ASSERT_STRING_EQUAL(hk_bench_ratio_text(buf, sizeof buf, 1.234), "1.23x");
    CU_ASSERT_STRING_EQUAL(hk_bench_ratio_text(buf, sizeof buf, NAN), "-");
    CU_ASSERT_STRING_EQUAL(hk_bench_ratio_text(buf, sizeof buf, INFINITY), "-");
    CU_ASSERT_STRING_EQUAL(hk_bench_ratio_text(buf, sizeof buf, 0.0), "-");
}

static int usages;
static void usage_seen(FILE *f)
{
    (void)f;
    usages++;
}

static void test_options(void)
{
    char *argv[] = {"x",   "--size=medium", "--json", "out.json", "--backend",
                    "cpu", "--other",       "--size", "huge",     "--json"};
    const int argc = 10;
    hk_bench_opts o = HK_BENCH_OPTS_DEFAULT;
    CU_ASSERT_STRING_EQUAL(o.backend, "auto");
    CU_ASSERT_PTR_NULL(o.json);
    CU_ASSERT_EQUAL(o.size, HK_BENCH_SMALL);
    int i = 1;
    CU_ASSERT_EQUAL(hk_bench_option(argc, argv, &i, &o, usage_seen), 1);
    CU_ASSERT_EQUAL(i, 2);
    CU_ASSERT_EQUAL(o.size, HK_BENCH_MEDIUM);
    CU_ASSERT_EQUAL(hk_bench_option(argc, argv, &i, &o, usage_seen), 1);
    CU_ASSERT_EQUAL(i, 4);
    CU_ASSERT_STRING_EQUAL(o.json, "out.json");
    CU_ASSERT_EQUAL(hk_bench_option(argc, argv, &i, &o, usage_seen), 1);
    CU_ASSERT_STRING_EQUAL(o.backend, "cpu");
    CU_ASSERT_EQUAL(i, 6);
    CU_ASSERT_EQUAL(hk_bench_option(argc, argv, &i, &o, usage_seen), 0); /* not ours: untouched */
    CU_ASSERT_EQUAL(i, 6);
    i = 7;
    CU_ASSERT_EQUAL(hk_bench_option(argc, argv, &i, &o, usage_seen), -1); /* --size huge */
    i = 9;
    CU_ASSERT_EQUAL(hk_bench_option(argc, argv, &i, &o, usage_seen), -1); /* --json, no value */
    CU_ASSERT_EQUAL(o.size, HK_BENCH_MEDIUM);
    CU_ASSERT_EQUAL(usages, 0);
    char *help[] = {"x", "-h"};
    i = 1;
    CU_ASSERT_EQUAL(hk_bench_option(2, help, &i, &o, usage_seen), HK_BENCH_HELP);
    CU_ASSERT_EQUAL(usages, 1);
    CU_ASSERT_STRING_EQUAL(hk_bench_size_name(HK_BENCH_LARGE), "large");
    CU_ASSERT_DOUBLE_EQUAL(hk_bench_pick(HK_BENCH_SMALL, 1, 2, 3), 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(hk_bench_pick(HK_BENCH_MEDIUM, 1, 2, 3), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(hk_bench_pick(HK_BENCH_LARGE, 1, 2, 3), 3, 0);

    int v[4];
    CU_ASSERT_EQUAL(hk_bench_parse_ints("2,4,6", v, 4, 1, 20), 3);
    CU_ASSERT_EQUAL(v[2], 6);
    CU_ASSERT_EQUAL(hk_bench_parse_ints("2,x", v, 4, 1, 20), -1);
    CU_ASSERT_EQUAL(hk_bench_parse_ints("2,21", v, 4, 1, 20), -1);

    const hk_backend *be = NULL;
    CU_ASSERT_EQUAL(hk_bench_backend("test", "cpu", &be), 0);
    CU_ASSERT_PTR_NOT_NULL(be);
    CU_ASSERT_NOT_EQUAL(hk_bench_backend("test", "nope", &be), 0);
    hk_error_clear();
}

/* The ops of hk_bench_time_rounds take turns: the calls' sequence, op by op. */
typedef struct rounds_log {
    int calls[2], switches, last;
} rounds_log;

static int rounds_op(void *ctx, int op)
{
    rounds_log *l = ctx;
    if (op < 0 || op > 1) return HK_ERR_INTERNAL;
    l->calls[op]++;
    if (op != l->last) l->switches++;
    l->last = op;
    return 0;
}

static void test_time_rounds(void)
{
    rounds_log l = {{0, 0}, 0, -1};
    double s[2] = {-1, -1};
    HK_ASSERT_OK(hk_bench_time_rounds(rounds_op, &l, 2, 5, 1e-5, s));
    /* three warm-up calls of op 0, of op 1, then five rounds of a batch of 0 and a batch of 1 */
    CU_ASSERT_EQUAL(l.switches, 2 + 2 * 5);
    CU_ASSERT(l.calls[0] >= 3 + 5 && l.calls[1] >= 3 + 5);
    CU_ASSERT(s[0] >= 0 && isfinite(s[0]) && s[1] >= 0 && isfinite(s[1]));
}

/* A timed solve: warm-ups and repetitions each from x = 0, so the last one solves K x = K 1. */
static void test_solve(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_poisson2d(12, &K));
    const int64_t n = K.nbrows * K.bs;
    double *b = hk_bench_rhs_ones(&K), *x = malloc((size_t)n * sizeof *x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    hk_result res;
    double seconds = -1;
    HK_ASSERT_OK(hk_bench_solve(&K, "backend=cpu method=cg pc=jacobi tol=1e-12", 1, 3, b, x, &res,
                                &seconds));
    CU_ASSERT(res.iterations > 0);
    CU_ASSERT(seconds >= 0 && isfinite(seconds));
    double err = 0;
    for (int64_t i = 0; i < n; i++)
        err = fmax(err, fabs(x[i] - 1.0));
    CU_ASSERT(err < 1e-9);
    CU_ASSERT_NOT_EQUAL(hk_bench_solve(&K, "backend=cpu method=cg", 0, 0, b, x, &res, &seconds),
                        0); /* no timed solve asked for */
    hk_error_clear();
    free(b);
    free(x);
    hk_bcsr_free(&K);
}

/* --peer hypre: its settings by name (defaults, overrides, one sentence for each bad input);
 * where hypre is built in, BoomerAMG-PCG reaches the known solution of 3D elasticity (the true
 * residual checked here), else the solve refuses in one sentence naming the build switch. */
static void test_peer_hypre(void)
{
    hk_hypre_settings s;
    HK_ASSERT_OK(hk_peer_hypre_parse("hypre", &s));
    CU_ASSERT(s.strong == 0.5 && s.coarsen == 8 && s.interp == 6 && s.relax == 18 && s.agg == 0 &&
              s.functions == 0 && s.maxit == 1000);
    HK_ASSERT_OK(hk_peer_hypre_parse("hypre strong=0.25  agg=1 functions=1", &s));
    CU_ASSERT(s.strong == 0.25 && s.agg == 1 && s.functions == 1 && s.interp == 6);
    const char *bad[][2] = {
        {"amgx", "the only peer is hypre"},
        {"hypre strongx=0.5", "'strongx' is not a KEY=VALUE setting"},
        {"hypre strong", "'strong' is not a KEY=VALUE setting"},
        {"hypre strong=1.5", "strong=1.5 is not a number from 0 to 1"},
        {"hypre agg=1.5", "agg=1.5 is not a whole number"},
        {"hypre maxit=", "maxit= is not a whole number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(hk_peer_hypre_parse(bad[i][0], &s), HK_ERR_OPTION);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), bad[i][1]));
        hk_error_clear();
    }

    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(8, 6, 6, &K));
    const int64_t n = K.nbrows * K.bs;
    double *f = hk_bench_rhs_ones(&K), *u = calloc((size_t)n, sizeof *u),
           *y = calloc((size_t)n, sizeof *y);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    char desc[320];
    HK_ASSERT_OK(hk_peer_hypre_parse("hypre", &s));
    hk_peer_result r;
    if (hk_peer_hypre_built(desc, sizeof desc)) {
        HK_ASSERT_OK(hk_peer_hypre_solve(&K, f, &s, 1e-8, u, &r));
        /* the timed solve starts from x = 0 again, not from the untimed one's answer */
        CU_ASSERT(r.converged && r.iterations >= 5 && r.iterations < 200);
        CU_ASSERT(r.setup_s >= 0 && r.solve_s >= 0 && r.load_s >= 0);
        hk_bcsr_spmv(&K, u, y);
        double rr = 0, ff = 0, e = 0; /* b = A times ones: every entry of u near 1 */
        for (int64_t i = 0; i < n; i++)
            rr += (f[i] - y[i]) * (f[i] - y[i]), ff += f[i] * f[i], e = fmax(e, fabs(u[i] - 1));
        CU_ASSERT(sqrt(rr / ff) < 2e-8);
        CU_ASSERT(e < 1e-3);
    } else {
        CU_ASSERT_PTR_NOT_NULL(strstr(desc, "-DHOOKE_HYPRE_DIR"));
        CU_ASSERT_EQUAL(hk_peer_hypre_solve(&K, f, &s, 1e-8, u, &r), HK_ERR_NOT_BUILT);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "built without hypre"));
        hk_error_clear();
    }
    free(f);
    free(u);
    free(y);
    hk_bcsr_free(&K);
}

HK_SUITE(bench, {"tables and ratio cells as the benches print them", test_tables},
         {"common options, sizes, integer lists, backends", test_options},
         {"turn-taking timer: warm-up then rounds of batches", test_time_rounds},
         {"timed solve from x = 0 reaches the known solution", test_solve},
         {"--peer hypre: settings by name, the solve or its refusal", test_peer_hypre})
