/* `hooke bench pcpapers`: the preconditioner experiments of three seed papers, on generated
 * analogues of their matrices, each configuration beside its baseline in the same run:
 *
 *   gsai   the GPU Krylov thesis, ch. 5 (Tables 5.3-5.5, 5.7): BiCGStab to 1e-7 with a random
 *          right-hand side; SAI as the thesis computes it (column maximum, Gram-Schmidt) over
 *          a tau sweep, against no preconditioner, Jacobi, ILU(0) and the row maximum with
 *          Householder QR (equation 5.3 as written, the former default), on
 *          nonsymmetric convection-diffusion matrices. Baseline: jacobi.
 *   mlilu  the ILUPACK-GMRES paper's set-up: GMRES(30) to 1e-8 with the multilevel ILU as it
 *          was (no matching, natural order, L_E and U_F kept) against the matching, the AMD
 *          and RCM orders and the memory-saving apply, and ILU(0). Baseline: mlilu as it was.
 *   fsai   the FSAI paper (Tables 5-7): CG to 1e-8 with b = A times ones, FSAI with the
 *          paper's scalar pattern (its tau and delta per matrix class, k = 2..4) and our node
 *          block default against Jacobi, on analogues of Apache2 (poisson3d), Cube3D
 *          (elasticity3d), G3_circuit (circuit), Thermal2 (poisson) and PFlow_742 (porous3d).
 *          Baseline: jacobi.
 *
 * Columns: iterations, set-up / solve / total seconds (the solver's own timers, median of
 * --reps solves with a fresh set-up each), the preconditioner's entries over nnz(A) where it
 * reports them, iterations and total time divided by the baseline's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "bench.h"
#include "hk_impl.h"
#include "pc/mlilu.h"

#define PP_MAX_MATS 6
#define PP_MAX_CFGS 12
#define PP_MAX_GEN 8
#define PP_PAPER "@" /* a configuration that takes the matrix's paper options */

typedef struct pp_matrix {
    const char *spec;  /* hooke solve --generate KIND:N */
    const char *paper; /* the paper's matrix it stands for */
    const char *popts; /* the paper's options for it (fsai: tau and delta of Table 5) */
    int kmax;          /* fsai: the largest pattern power run (0: any) */
} pp_matrix;

typedef struct pp_config {
    const char *label;
    const char *opts; /* options; a leading PP_PAPER adds the matrix's paper options */
    int k;            /* fsai: the pattern power, skipped above the matrix's kmax */
} pp_config;

typedef struct pp_study {
    const char *name, *title, *method, *note;
    int random_rhs;
    pp_matrix mats[3][PP_MAX_MATS]; /* by --size */
    pp_config cfg[PP_MAX_CFGS];     /* cfg[0] is the baseline */
} pp_study;

#define SAI_THESIS "pc=sai pc.sai.max=column pc.sai.qr=gram-schmidt pc.sai.tau="
#define MLILU_AS_WAS "pc=mlilu pc.mlilu.matching=off pc.mlilu.apply=factors pc.ordering="

static const pp_study pp_studies[] = {
    {"gsai",
     "GSAI: BiCGStab + SAI, tau sweep (GPU Krylov thesis, Tables 5.3-5.5 and 5.7)",
     "method=bicgstab tol=1e-7 maxit=10000",
     "thesis (GTX480, SuiteSparse matrices): iterations fall as tau grows, on average 1936 at "
     "tau 0.5 to 968 at 0.9 (Table 5.3), total time 105 s to 54 s (Table 5.4); unpreconditioned "
     "BiCGStab fails on most (Table 5.7)",
     1,
     {{{"convdiff:64", "atmosmodd (2D stand-in)", "", 0},
       {"convdiff3d:16", "atmosmodd", "", 0},
       {"recirc:64", "venkat01 (CFD)", "", 0}},
      {{"convdiff:256", "atmosmodd (2D stand-in)", "", 0},
       {"convdiff3d:40", "atmosmodd", "", 0},
       {"recirc:256", "venkat01 (CFD)", "", 0}},
      {{"convdiff:1024", "atmosmodd (2D stand-in)", "", 0},
       {"convdiff3d:100", "atmosmodd", "", 0},
       {"recirc:1024", "venkat01 (CFD)", "", 0}}},
     {{"jacobi", "pc=jacobi", 0},
      {"none", "pc=none", 0},
      {"ilu0", "pc=ilu0", 0},
      {"sai thesis tau 0.5", SAI_THESIS "0.5", 0},
      {"sai thesis tau 0.6", SAI_THESIS "0.6", 0},
      {"sai thesis tau 0.7", SAI_THESIS "0.7", 0},
      {"sai thesis tau 0.8", SAI_THESIS "0.8", 0},
      {"sai thesis tau 0.9", SAI_THESIS "0.9", 0},
      {"sai thesis tau 1", SAI_THESIS "1", 0},
      {"sai row max, Householder, tau 0.9", "pc=sai pc.sai.max=row pc.sai.qr=householder", 0},
      {"sai defaults", "pc=sai", 0}}},
    {"mlilu",
     "Multilevel ILU: matching, ordering, apply form (ILUPACK-GMRES paper, section 2)",
     "method=gmres restart=30 tol=1e-8 maxit=10000",
     "paper: ILUPACK scales and reorders (fill-reducing) before its inverse-based multilevel "
     "factorisation and keeps only the blocks F and G to save memory (equation 11)",
     0,
     {{{"convdiff:64", "-", "", 0},
       {"convdiff3d:16", "atmosmodd", "", 0},
       {"recirc:64", "-", "", 0},
       {"convdiff-shuffled:64", "(rows in no order)", "", 0}},
      {{"convdiff:256", "-", "", 0},
       {"convdiff3d:32", "atmosmodd", "", 0},
       {"recirc:256", "-", "", 0},
       {"convdiff-shuffled:256", "(rows in no order)", "", 0}},
      {{"convdiff:1024", "-", "", 0},
       {"convdiff3d:64", "atmosmodd", "", 0},
       {"recirc:512", "-", "", 0},
       {"convdiff-shuffled:1024", "(rows in no order)", "", 0}}},
     {{"mlilu as it was (natural, no matching, L_E U_F)", MLILU_AS_WAS "natural", 0},
      {"ilu0", "pc=ilu0", 0},
      {"mlilu rcm", MLILU_AS_WAS "rcm", 0},
      {"mlilu amd", MLILU_AS_WAS "amd", 0},
      {"mlilu matching",
       "pc=mlilu pc.mlilu.matching=on pc.mlilu.apply=factors "
       "pc.ordering=natural",
       0},
      {"mlilu matching + amd",
       "pc=mlilu pc.mlilu.matching=on pc.mlilu.apply=factors "
       "pc.ordering=amd",
       0},
      {"mlilu amd + blocks",
       "pc=mlilu pc.mlilu.matching=off pc.mlilu.apply=blocks "
       "pc.ordering=amd",
       0},
      {"mlilu matching + amd + blocks",
       "pc=mlilu pc.mlilu.matching=on pc.mlilu.apply=blocks "
       "pc.ordering=amd",
       0},
      {"mlilu defaults", "pc=mlilu", 0}}},
    {"fsai",
     "FSAI against Jacobi on the paper's matrix classes (FSAI paper, Tables 5-7)",
     "method=cg tol=1e-8 maxit=20000",
     "paper (K80, SuiteSparse matrices, scalar pattern): Jacobi needs 2.0x (Cube3D) to 5.3x "
     "(G3_circuit) FSAI's iterations and fails on PFlow_742 (Table 6); set-up 0.33-5.1 s on "
     "the GPU, 10x faster than 6 CPU cores (Table 7)",
     0,
     {{{"poisson3d:16", "Apache2", "pc.fsai.tau=0.01 pc.fsai.delta=0.05", 0},
       {"elasticity3d:8", "Cube3D", "pc.fsai.tau=0.025 pc.fsai.delta=0.01", 2},
       {"circuit:64", "G3_circuit", "pc.fsai.tau=0.02 pc.fsai.delta=0.07", 0},
       {"poisson:64", "Thermal2", "pc.fsai.tau=0.02 pc.fsai.delta=0.07", 0},
       {"porous3d:16", "PFlow_742", "pc.fsai.tau=0.05 pc.fsai.delta=0.0035", 0}},
      {{"poisson3d:40", "Apache2", "pc.fsai.tau=0.01 pc.fsai.delta=0.05", 0},
       {"elasticity3d:20", "Cube3D", "pc.fsai.tau=0.025 pc.fsai.delta=0.01", 2},
       {"circuit:256", "G3_circuit", "pc.fsai.tau=0.02 pc.fsai.delta=0.07", 0},
       {"poisson:256", "Thermal2", "pc.fsai.tau=0.02 pc.fsai.delta=0.07", 0},
       {"porous3d:40", "PFlow_742", "pc.fsai.tau=0.05 pc.fsai.delta=0.0035", 0}},
      {{"poisson3d:90", "Apache2", "pc.fsai.tau=0.01 pc.fsai.delta=0.05", 0},
       {"elasticity3d:40", "Cube3D", "pc.fsai.tau=0.025 pc.fsai.delta=0.01", 2},
       {"circuit:1024", "G3_circuit", "pc.fsai.tau=0.02 pc.fsai.delta=0.07", 0},
       {"poisson:1100", "Thermal2", "pc.fsai.tau=0.02 pc.fsai.delta=0.07", 0},
       {"porous3d:90", "PFlow_742", "pc.fsai.tau=0.05 pc.fsai.delta=0.0035", 0}}},
     {{"jacobi", "pc=jacobi", 0},
      {"fsai scalar, paper tau delta, k 2", PP_PAPER "pc=fsai pc.fsai.pattern=scalar pc.fsai.k=2",
       2},
      {"fsai scalar, paper tau delta, k 3", PP_PAPER "pc=fsai pc.fsai.pattern=scalar pc.fsai.k=3",
       3},
      {"fsai scalar, paper tau delta, k 4", PP_PAPER "pc=fsai pc.fsai.pattern=scalar pc.fsai.k=4",
       4},
      {"fsai default (block pattern)", "pc=fsai", 0}}},
};
#define PP_NSTUDIES ((int)(sizeof pp_studies / sizeof pp_studies[0]))

typedef struct pp_row {
    const char *study, *matrix, *paper, *config;
    long long n, nnz;
    int iterations, failed;
    double setup_s, solve_s, total_s, fill, true_res;
    double base_its, base_total;
    hk_reason reason;
    char error[200];
} pp_row;

static void pp_usage(FILE *f)
{
    fprintf(f,
            "usage: hooke bench pcpapers [--study gsai,mlilu,fsai] [--backend auto|cpu|cuda]\n"
            "                            [--size small|medium|large] [--generate KIND:N]...\n"
            "                            [--reps N] [--json FILE]\n\n"
            "The preconditioner experiments of the seed papers on generated analogues of\n"
            "their matrices (hooke solve --generate kinds), each row beside the study's\n"
            "baseline measured in the same run:\n"
            "  gsai   BiCGStab to 1e-7, random b: SAI as the GPU Krylov thesis computes it\n"
            "         (pc.sai.max=column pc.sai.qr=gram-schmidt, the defaults) for tau\n"
            "         0.5..1, against none, jacobi (baseline), ilu0 and the row maximum with\n"
            "         Householder QR (Tables 5.3-5.5, 5.7)\n"
            "  mlilu  GMRES(30) to 1e-8, b = A 1: pc=mlilu as it was (baseline: no matching,\n"
            "         natural order, L_E and U_F kept) against pc.mlilu.matching=on,\n"
            "         pc.ordering=amd|rcm, pc.mlilu.apply=blocks, the defaults and ilu0\n"
            "  fsai   CG to 1e-8, b = A 1: FSAI with the FSAI paper's scalar pattern (its\n"
            "         tau and delta per matrix class, k 2..4) and the block default against\n"
            "         jacobi (baseline), on analogues of Apache2 (poisson3d), Cube3D\n"
            "         (elasticity3d), G3_circuit (circuit), Thermal2 (poisson), PFlow_742\n"
            "         (porous3d) (Tables 5-7)\n"
            "Columns: iterations, set-up / solve / total seconds (median of --reps solves, each\n"
            "with its own set-up; default 1), fill = the preconditioner's entries / nnz(A)\n"
            "(sai: M, fsai: G, mlilu: all levels' factors and couplings; - where not\n"
            "reported), iterations and total time over the baseline's, the true residual.\n"
            "--generate replaces a study's matrices by the given ones (fsai: the paper\n"
            "options of Apache2's class). A tiny warm-up solve runs first, so a device's\n"
            "start-up is not in the first row.\n");
}

/* b: random in [-1, 1] (deterministic) or A times ones. */
static double *pp_rhs(const hk_bcsr *K, int random)
{
    if (!random) return hk_bench_rhs_ones(K);
    const int64_t n = K->nbrows * K->bs;
    double *b = malloc((size_t)(n ? n : 1) * sizeof *b);
    uint32_t s = 2463534242u;
    for (int64_t i = 0; b && i < n; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        b[i] = 2.0 * ((double)s / 4294967296.0) - 1.0;
    }
    return b;
}

/* The preconditioner's entries over nnz(A), or NaN where it does not report them. */
static double pp_fill(const hk_pc *pc, long long nnz)
{
    int64_t e = hk_pc_sai_nnz(pc);
    if (e < 0) e = hk_pc_fsai_nnz(pc);
    if (e >= 0) return (double)e / (double)nnz;
    int nlev;
    double fill;
    if (!hk_pc_mlilu_info(pc, &nlev, NULL, &fill)) return fill;
    return NAN;
}

/* reps solves, each with its own set-up, the medians into row. */
static int pp_solve(const hk_bcsr *K, const double *b, const char *opts, int reps, pp_row *row)
{
    int ierr = 0;
    const int64_t n = K->nbrows * K->bs;
    double ts[16], tv[16];
    double *x = NULL;
    HK_CALL(hk_malloc((size_t)(n ? n : 1) * sizeof *x, &x));
    for (int r = 0; r < reps; r++) {
        hk_options *o = NULL;
        hk_solver *s = NULL;
        hk_result res;
        memset(x, 0, (size_t)n * sizeof *x);
        HK_TRY(hk_options_create(&o));
        ierr = hk_options_parse(o, opts);
        if (!ierr) ierr = hk_solver_create(K, o, &s);
        if (!ierr) ierr = hk_solver_solve(s, b, x, &res);
        if (!ierr) {
            ts[r] = res.setup_seconds;
            tv[r] = res.solve_seconds;
            row->iterations = res.iterations;
            row->reason = res.reason;
            row->true_res = res.true_residual;
            row->fill = pp_fill(hk_solver_get_pc(s), row->nnz);
        }
        hk_solver_destroy(s);
        hk_options_destroy(o);
        if (ierr) goto fail;
    }
    row->setup_s = hk_bench_median(ts, reps);
    row->solve_s = hk_bench_median(tv, reps);
    row->total_s = row->setup_s + row->solve_s;
fail:
    free(x);
    return ierr;
}

static void pp_print(const pp_row *w)
{
    if (w->failed) {
        hk_table_cell(stdout, "%s", w->config);
        hk_table_dashes(stdout, 7);
        hk_table_cell(stdout, "%s", w->error);
        hk_table_end(stdout);
        return;
    }
    const int conv = hk_reason_converged(w->reason);
    char fill[32] = "-", its[32] = "-", tot[32] = "-";
    if (isfinite(w->fill)) snprintf(fill, sizeof fill, "%.2f", w->fill);
    if (conv && w->base_its > 0) snprintf(its, sizeof its, "%.2f", w->iterations / w->base_its);
    if (conv && w->base_total > 0) snprintf(tot, sizeof tot, "%.2f", w->total_s / w->base_total);
    hk_table_row(stdout, "%s|%d|%.3f|%.3f|%.3f|%s|%s|%s|%.1e%s%s", w->config, w->iterations,
                 w->setup_s, w->solve_s, w->total_s, fill, its, tot, w->true_res, conv ? "" : " ",
                 conv ? "" : hk_reason_name(w->reason));
}

int hk_bench_pcpapers(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    const char *study_list = "gsai,mlilu,fsai";
    const char *gens[PP_MAX_GEN];
    int ngen = 0, reps = 1, rc = 1;
    for (int i = 1; i < argc;) {
        int r = hk_bench_option(argc, argv, &i, &bo, pp_usage);
        if (r < 0) return r == HK_BENCH_HELP ? 0 : 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "--study") && i + 1 < argc) {
            study_list = argv[i + 1];
            i += 2;
        } else if (!strcmp(a, "--generate") && i + 1 < argc) {
            if (ngen == PP_MAX_GEN) {
                fprintf(stderr, "hooke bench pcpapers: at most %d --generate\n", PP_MAX_GEN);
                return 2;
            }
            gens[ngen++] = argv[i + 1];
            i += 2;
        } else if (!strcmp(a, "--reps") && i + 1 < argc) {
            reps = atoi(argv[i + 1]);
            if (reps < 1 || reps > 16) {
                fprintf(stderr, "hooke bench pcpapers: --reps %s is not 1..16\n", argv[i + 1]);
                return 2;
            }
            i += 2;
        } else {
            fprintf(stderr,
                    "hooke bench pcpapers: unknown or incomplete option '%s' (hooke bench "
                    "pcpapers --help)\n",
                    a);
            return 2;
        }
    }
    int want[PP_NSTUDIES] = {0};
    {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", study_list);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            int k = 0;
            while (k < PP_NSTUDIES && strcmp(pp_studies[k].name, tok))
                k++;
            if (k == PP_NSTUDIES) {
                fprintf(stderr,
                        "hooke bench pcpapers: unknown study '%s' in --study; they are "
                        "gsai, mlilu, fsai\n",
                        tok);
                return 2;
            }
            want[k] = 1;
        }
    }
    const hk_backend *be;
    if (hk_bench_backend("hooke bench pcpapers", bo.backend, &be)) return 2;
    const char *bname = hk_backend_name(be);
    pp_row *rows =
        calloc((size_t)PP_NSTUDIES * (PP_MAX_MATS + PP_MAX_GEN) * PP_MAX_CFGS, sizeof *rows);
    int nrows = 0;
    if (!rows) return 1;
    printf("## hooke bench pcpapers: the seed papers' preconditioner experiments (%s)\n\n",
           hk_bench_size_name(bo.size));
    hk_backend_describe(be, stdout);
    { /* warm-up: the backend's start and first allocations */
        hk_bcsr W;
        if (!hk_gen_poisson2d(8, &W)) {
            double *b = hk_bench_rhs_ones(&W);
            pp_row tmp = {0};
            char o[96];
            snprintf(o, sizeof o, "backend=%s method=cg pc=jacobi", bname);
            if (b) pp_solve(&W, b, o, 1, &tmp);
            hk_error_clear();
            free(b);
            hk_bcsr_free(&W);
        }
    }
    for (int st = 0; st < PP_NSTUDIES; st++) {
        if (!want[st]) continue;
        const pp_study *S = &pp_studies[st];
        printf("\n### %s\n\n%s, %s; %s.\n", S->title, S->method,
               S->random_rhs ? "b random in [-1, 1]" : "b = A times ones", S->note);
        pp_matrix gm[PP_MAX_GEN];
        const pp_matrix *mats = S->mats[bo.size];
        int nm = 0;
        if (ngen) {
            for (int g = 0; g < ngen; g++)
                gm[g] = (pp_matrix){gens[g], "-", S->mats[0][0].popts, 0};
            mats = gm;
            nm = ngen;
        } else {
            while (nm < PP_MAX_MATS && mats[nm].spec)
                nm++;
        }
        for (int m = 0; m < nm; m++) {
            hk_bcsr K = {0};
            double *coords = NULL, *b = NULL;
            int dim = 0;
            if (hk_app_generate(mats[m].spec, "hooke bench pcpapers", &K, &coords, &dim)) goto done;
            free(coords);
            b = pp_rhs(&K, S->random_rhs);
            if (!b) {
                hk_bcsr_free(&K);
                goto done;
            }
            const long long n = (long long)(K.nbrows * K.bs);
            const long long nnz = (long long)K.rowptr[K.nbrows] * K.bs * K.bs;
            printf("\n%s (stands for %s): %lld unknowns, %lld nonzeros; baseline: %s\n\n",
                   mats[m].spec, mats[m].paper, n, nnz, S->cfg[0].label);
            hk_table_head(stdout, "lrrrrrrrl",
                          "configuration|iterations|set-up s|solve s|total s|fill|its / baseline|"
                          "total / baseline|true residual");
            double base_its = 0, base_total = 0;
            for (int c = 0; c < PP_MAX_CFGS && S->cfg[c].label; c++) {
                pp_row *w = &rows[nrows++];
                w->study = S->name;
                w->matrix = mats[m].spec;
                w->paper = mats[m].paper;
                w->config = S->cfg[c].label;
                w->n = n;
                w->nnz = nnz;
                w->fill = NAN;
                if (mats[m].kmax && S->cfg[c].k > mats[m].kmax) {
                    w->failed = 1;
                    snprintf(w->error, sizeof w->error,
                             "not run: k = %d gives this matrix's rows several hundred entries "
                             "(minutes of set-up, or over the 600 limit)",
                             S->cfg[c].k);
                    pp_print(w);
                    continue;
                }
                char opts[512];
                const char *co = S->cfg[c].opts;
                const int paper = !strncmp(co, PP_PAPER, 1);
                snprintf(opts, sizeof opts, "backend=%s %s %s %s", bname, S->method,
                         paper ? co + 1 : co, paper ? mats[m].popts : "");
                if (pp_solve(&K, b, opts, reps, w)) {
                    w->failed = 1;
                    snprintf(w->error, sizeof w->error, "%s", hk_error_message());
                    hk_error_clear();
                } else if (c == 0 && hk_reason_converged(w->reason)) {
                    base_its = w->iterations;
                    base_total = w->total_s;
                }
                w->base_its = base_its;
                w->base_total = base_total;
                pp_print(w);
            }
            free(b);
            hk_bcsr_free(&K);
        }
    }
    if (bo.json) {
        hk_json j = {0};
        if (hk_json_open(&j, bo.json)) goto done;
        hk_json_begin_object(&j, NULL);
        hk_json_string(&j, "bench", "pcpapers");
        hk_json_string(&j, "backend", bname);
        hk_json_begin_array(&j, "solves");
        for (int i = 0; i < nrows; i++) {
            const pp_row *w = &rows[i];
            hk_json_begin_object(&j, NULL);
            hk_json_string(&j, "study", w->study);
            hk_json_string(&j, "matrix", w->matrix);
            hk_json_string(&j, "paper_matrix", w->paper);
            hk_json_string(&j, "config", w->config);
            hk_json_int(&j, "n", w->n);
            hk_json_int(&j, "nnz", w->nnz);
            if (w->failed) {
                hk_json_string(&j, "error", w->error);
            } else {
                hk_json_int(&j, "iterations", w->iterations);
                hk_json_number(&j, "setup_s", w->setup_s);
                hk_json_number(&j, "solve_s", w->solve_s);
                hk_json_number(&j, "total_s", w->total_s);
                hk_json_number(&j, "fill", w->fill);
                hk_json_number(&j, "baseline_iterations", w->base_its);
                hk_json_number(&j, "baseline_total_s", w->base_total);
                hk_json_number(&j, "true_residual", w->true_res);
                hk_json_string(&j, "reason", hk_reason_name(w->reason));
            }
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_end_object(&j);
        if (hk_json_close(&j)) goto done;
    }
    rc = 0;
done:
    free(rows);
    return rc;
}
