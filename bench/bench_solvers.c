/* `hooke bench solvers`: every Krylov method with jacobi and poly (several degrees), in double
 * and mixed precision, solved to tol=1e-8 on generated 3D hex8 elasticity: iterations, time
 * to solution and time per iteration on the chosen backend, with the same solve on the CPU
 * backend beside it (the baseline measured in the same run). b = K * ones, x0 = 0; the true
 * residual and the max error against ones are printed as a cross-check. Each time is the
 * median of --reps timed solves after one warm-up solve. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "hk_impl.h"
#ifdef HOOKE_HAVE_CUDA
#include "../cuda/hk_cuda.h"
#endif

typedef struct sv_row {
    const char *method;
    char pc[32];
    const char *precision;
    int iterations, cpu_iterations;
    double setup_ms, solve_ms, ms_per_iter, true_res, max_err;
    double cpu_solve_ms, cpu_ms_per_iter;
    hk_reason reason;
} sv_row;

static void sv_usage(FILE *f)
{
    fprintf(f,
            "usage: hooke bench solvers [--backend auto|cpu|cuda] [--size small|medium|large]\n"
            "                           [--elements N] [--methods m1,m2,...] [--degrees d1,d2]\n"
            "                           [--reps R] [--no-cpu] [--json FILE]\n\n"
            "Every method (default: all) x pc (jacobi, poly of each degree, default 2,4,6) x\n"
            "precision (double, mixed) solved to tol=1e-8 on 3D hex8 elasticity with N^3\n"
            "elements (default N = 10 small, 20 medium, 40 large). Columns: iterations, time to\n"
            "solution, time per iteration, true residual, stop reason, and the same solve on\n"
            "the CPU backend when the chosen backend is not the CPU (--no-cpu skips it).\n"
            "Times are the median of --reps (default 3) solves after one warm-up solve.\n");
}

/* Solve once to warm up, then reps timed solves; median solve time. */
static int run_one(const hk_bcsr *K, const char *backend, const char *opts, int reps,
                   const double *b, double *x, sv_row *row, int cpu)
{
    char text[512];
    hk_result res;
    double seconds;
    snprintf(text, sizeof text, "backend=%s tol=1e-8 %s", backend, opts);
    HK_CALL(hk_bench_solve(K, text, 1, reps, b, x, &res, &seconds));
    const int64_t n = K->nbrows * K->bs;
    const double med = seconds * 1e3;
    if (cpu) {
        row->cpu_iterations = res.iterations;
        row->cpu_solve_ms = med;
        row->cpu_ms_per_iter = res.iterations ? med / res.iterations : NAN;
    } else {
        double e = 0;
        for (int64_t i = 0; i < n; i++) {
            double d = fabs(x[i] - 1.0);
            if (!(d <= e)) e = d;
        }
        row->iterations = res.iterations;
        row->setup_ms = res.setup_seconds * 1e3;
        row->solve_ms = med;
        row->ms_per_iter = res.iterations ? med / res.iterations : NAN;
        row->true_res = res.true_residual;
        row->max_err = e;
        row->reason = res.reason;
    }
    return 0;
}

int hk_bench_solvers(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    int elements = 0, reps = 3, no_cpu = 0, degrees[8] = {2, 4, 6}, ndeg = 3, rc = 1;
    const char *method_list = NULL;
    for (int i = 1; i < argc;) {
        int r = hk_bench_option(argc, argv, &i, &bo, sv_usage);
        if (r < 0) return r == HK_BENCH_HELP ? 0 : 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "--elements") && i + 1 < argc) {
            elements = atoi(argv[i + 1]);
            i += 2;
        } else if (!strcmp(a, "--methods") && i + 1 < argc) {
            method_list = argv[i + 1];
            i += 2;
        } else if (!strcmp(a, "--degrees") && i + 1 < argc) {
            ndeg = hk_bench_parse_ints(argv[i + 1], degrees, 8, 1, 20);
            if (ndeg <= 0) {
                fprintf(stderr,
                        "hooke bench solvers: --degrees %s is not a list of polynomial "
                        "degrees 1..20 (e.g. 2,4,6)\n",
                        argv[i + 1]);
                return 2;
            }
            i += 2;
        } else if (!strcmp(a, "--reps") && i + 1 < argc) {
            reps = atoi(argv[i + 1]);
            i += 2;
        } else if (!strcmp(a, "--no-cpu")) {
            no_cpu = 1;
            i++;
        } else {
            fprintf(stderr,
                    "hooke bench solvers: unknown or incomplete option '%s' (hooke bench "
                    "solvers --help)\n",
                    a);
            return 2;
        }
    }
    if (reps < 1 || reps > 64) {
        fprintf(stderr, "hooke bench solvers: --reps must be in 1..64\n");
        return 2;
    }
    if (!elements) elements = (int)hk_bench_pick(bo.size, 10, 20, 40);
    if (elements < 1 || elements > 200) {
        fprintf(stderr, "hooke bench solvers: --elements must be in 1..200\n");
        return 2;
    }
    /* the methods */
    const hk_ksp_type *methods[32];
    int nm = 0;
    if (method_list) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", method_list);
        for (char *tok = strtok(buf, ","); tok && nm < 32; tok = strtok(NULL, ",")) {
            const hk_ksp_type *t = hk_ksp_type_find(tok);
            if (!t) {
                fprintf(stderr,
                        "hooke bench solvers: unknown method '%s' in --methods; the "
                        "methods are",
                        tok);
                for (int m = 0; hk_ksp_types[m]; m++)
                    fprintf(stderr, "%s %s", m ? "," : "", hk_ksp_types[m]->name);
                fprintf(stderr, "\n");
                return 2;
            }
            methods[nm++] = t;
        }
    } else {
        for (int m = 0; hk_ksp_types[m] && nm < 32; m++)
            if (strcmp(hk_ksp_types[m]->name, "cholesky") != 0) /* direct: no pc, no iterations */
                methods[nm++] = hk_ksp_types[m];
    }

    const hk_backend *be;
    if (hk_bench_backend("hooke bench solvers", bo.backend, &be)) return 2;
    const char *bname = hk_backend_name(be);
    const int with_cpu = !no_cpu && strcmp(bname, "cpu") != 0;

    hk_bcsr K = {0};
    double *b = NULL, *x = NULL;
    sv_row *rows = NULL;
    int nrows = 0;
    hk_json j = {0};
    if (hk_gen_elasticity3d(elements, elements, elements, &K)) {
        fprintf(stderr, "hooke bench solvers: %s\n", hk_error_message());
        return 1;
    }
    const int64_t n = K.nbrows * K.bs;
    b = hk_bench_rhs_ones(&K);
    x = malloc((size_t)n * sizeof *x);
    rows = calloc((size_t)nm * (1 + (size_t)ndeg) * 2, sizeof *rows);
    if (!b || !x || !rows) {
        fprintf(stderr, "hooke bench solvers: out of host memory\n");
        goto done;
    }

    printf("## hooke bench solvers: 3D hex8 elasticity, %d^3 elements, %lld DOFs, tol 1e-8\n\n",
           elements, (long long)n);
    hk_backend_describe(be, stdout);
    /* The baseline per iteration: classical CG from cuSPARSE CSR SpMV + cuBLAS with host
     * scalars, as a user would write it (ANCHORS.md), on the same matrix in the same run. */
    double base_ms = 0;
#ifdef HOOKE_HAVE_CUDA
    if (strcmp(bname, "cuda") == 0) {
        hk_cuda_cg_timing bt;
        if (hk_cuda_baseline_cg(&K, 200, &bt) == 0) {
            base_ms = bt.ms_per_iter;
            printf("\nbaseline: classical CG, cuSPARSE CSR SpMV + cuBLAS dot/axpy, host scalars: "
                   "%.4f ms/iteration (200 iterations, same matrix, same run); 'vs base' = that "
                   "time / this method's ms/iteration\n",
                   base_ms);
        } else {
            printf("\nbaseline CG failed: %s\n", hk_error_message());
            hk_error_clear();
        }
    }
#endif
    /* the columns of the baseline and of the CPU only where they were measured */
    static const char *const head[] = {
        "method",          "pc",           "precision",        "iterations",    "setup ms",
        "time to 1e-8 ms", "ms/iteration", "vs base",          "true residual", "reason",
        "cpu iterations",  "cpu ms",       "cpu ms/iteration", "speedup"};
    static const char align[] = "lllrrrrrrlrrrr";
    char used[16];
    int ncol = 0;
    printf("\n");
    for (int c = 0; c < 14; c++)
        if ((c != 7 || base_ms > 0) && (c < 10 || with_cpu)) {
            hk_table_cell(stdout, "%s", head[c]);
            used[ncol++] = align[c];
        }
    used[ncol] = 0;
    hk_table_end(stdout);
    hk_table_rule(stdout, used);
    for (int m = 0; m < nm; m++)
        for (int p = 0; p <= ndeg; p++)
            for (int prec = 0; prec < 2; prec++) {
                const int defect = !strcmp(methods[m]->name, "defect");
                if (defect && prec == 0) continue; /* defect is mixed by construction */
                sv_row *row = &rows[nrows];
                memset(row, 0, sizeof *row);
                row->method = methods[m]->name;
                row->precision = prec ? "mixed" : "double";
                char opts[256];
                if (p == 0)
                    snprintf(row->pc, sizeof row->pc, "jacobi");
                else
                    snprintf(row->pc, sizeof row->pc, "poly(%d)", degrees[p - 1]);
                snprintf(opts, sizeof opts, "method=%s pc=%s precision=%s%s", row->method,
                         p ? "poly" : "jacobi", row->precision, "");
                if (p) {
                    size_t len = strlen(opts);
                    snprintf(opts + len, sizeof opts - len, " pc.poly.degree=%d", degrees[p - 1]);
                }
                if (run_one(&K, bname, opts, reps, b, x, row, 0)) {
                    hk_table_cell(stdout, "%s", row->method);
                    hk_table_cell(stdout, "%s", row->pc);
                    hk_table_cell(stdout, "%s", row->precision);
                    hk_table_dashes(stdout, base_ms > 0 ? 6 : 5);
                    hk_table_cell(stdout, "%s", hk_error_message());
                    hk_table_end(stdout);
                    continue;
                }
                row->cpu_solve_ms = row->cpu_ms_per_iter = NAN;
                if (with_cpu && run_one(&K, "cpu", opts, reps, b, x, row, 1))
                    row->cpu_solve_ms = NAN;
                hk_table_cell(stdout, "%s", row->method);
                hk_table_cell(stdout, "%s", row->pc);
                hk_table_cell(stdout, "%s", row->precision);
                hk_table_cell(stdout, "%d", row->iterations);
                hk_table_cell(stdout, "%.2f", row->setup_ms);
                hk_table_cell(stdout, "%.2f", row->solve_ms);
                hk_table_cell(stdout, "%.4f", row->ms_per_iter);
                if (base_ms > 0) hk_table_cell(stdout, "%.2fx", base_ms / row->ms_per_iter);
                hk_table_cell(stdout, "%.1e", row->true_res);
                hk_table_cell(stdout, "%s", hk_reason_name(row->reason));
                if (with_cpu) {
                    hk_table_cell(stdout, "%d", row->cpu_iterations);
                    hk_table_cell(stdout, "%.2f", row->cpu_solve_ms);
                    hk_table_cell(stdout, "%.4f", row->cpu_ms_per_iter);
                    hk_table_cell(stdout, "%.1fx", row->cpu_solve_ms / row->solve_ms);
                }
                hk_table_end(stdout);
                nrows++;
            }
    if (bo.json) {
        if (hk_json_open(&j, bo.json)) goto done;
        hk_json_begin_object(&j, NULL);
        hk_json_string(&j, "bench", "solvers");
        hk_json_string(&j, "backend", bname);
        hk_json_int(&j, "elements", elements);
        hk_json_int(&j, "dofs", n);
        hk_json_number(&j, "tol", 1e-8);
        hk_json_number(&j, "baseline_cg_ms_per_iteration", base_ms);
        hk_json_begin_array(&j, "solves");
        for (int i = 0; i < nrows; i++) {
            const sv_row *r = &rows[i];
            hk_json_begin_object(&j, NULL);
            hk_json_string(&j, "method", r->method);
            hk_json_string(&j, "pc", r->pc);
            hk_json_string(&j, "precision", r->precision);
            hk_json_int(&j, "iterations", r->iterations);
            hk_json_number(&j, "setup_ms", r->setup_ms);
            hk_json_number(&j, "solve_ms", r->solve_ms);
            hk_json_number(&j, "ms_per_iter", r->ms_per_iter);
            hk_json_number(&j, "true_residual", r->true_res);
            hk_json_number(&j, "max_error", r->max_err);
            hk_json_string(&j, "reason", hk_reason_name(r->reason));
            if (with_cpu) {
                hk_json_int(&j, "cpu_iterations", r->cpu_iterations);
                hk_json_number(&j, "cpu_solve_ms", r->cpu_solve_ms);
                hk_json_number(&j, "cpu_ms_per_iter", r->cpu_ms_per_iter);
            }
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_end_object(&j);
        if (hk_json_close(&j)) goto done;
    }
    rc = 0;
done:
    hk_bcsr_free(&K);
    free(b);
    free(x);
    free(rows);
    return rc;
}
