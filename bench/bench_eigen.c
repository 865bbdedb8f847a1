/* `hooke bench eigen`: the eigensolver (LOBPCG, docs/modal.md) and its building blocks, each
 * figure beside its baseline measured in the same run:
 *   1. the lowest nev eigenpairs of each problem of a matrix source at three sizes, LOBPCG with
 *      pc=amg against LOBPCG with pc=jacobi: set-up, solve, iterations, preconditioner
 *      applications (the iterations should stay roughly flat with amg as the size grows);
 *   2. the block SpMV with k = 1, 4, 8, 16 columns against k single SpMVs of the same format
 *      (ratio = k single SpMVs / one block SpMV: the matrix read once for up to 8 columns);
 *   3. the dense symmetric eigensolver of the Rayleigh-Ritz step (Householder + implicit QR,
 *      solver/eigen/dense.c) against the cyclic Jacobi of solver/pc/dense.c and, on cuda,
 *      cuSOLVER's syevd with the copies to and from the device, k = 10..120.
 * Matrix sources are a table (eigen_sources): a source makes its problem at size step 0, 1, 2
 * of --size; `--mtx K.mtx [--mass M.mtx] [--coords xyz.mtx] [--block-size B]` benches a file
 * instead. The block SpMV and the dense eigensolvers are timed in turns with their baselines
 * (hk_bench_time_rounds), so load from other jobs weighs on both alike. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "eigen/eigen_impl.h"
#include "hk_impl.h"
#include "pc/pc_impl.h"
#ifdef HOOKE_HAVE_CUDA
#include "../cuda/hk_cuda.h"
#endif

/* ---- matrix sources --------------------------------------------------------------------- */

typedef struct eigen_problem {
    char name[128];
    hk_bcsr K, M;   /* M.rowptr NULL: the identity */
    double *coords; /* node coordinates for pc=amg (may be NULL) */
    int dim;
} eigen_problem;

static void problem_free(eigen_problem *p)
{
    hk_bcsr_free(&p->K);
    hk_bcsr_free(&p->M);
    free(p->coords);
    memset(p, 0, sizeof *p);
}

/* 3D elasticity on N^3 hexes, clamped on x = 0, M = the identity: N by size and step. */
static int source_hex(hk_bench_size size, int step, eigen_problem *p)
{
    static const int N[3][3] = {{8, 12, 16}, {16, 24, 32}, {40, 64, 88}};
    const int n = N[size][step];
    snprintf(p->name, sizeof p->name, "hex %d^3", n);
    HK_CALL(hk_gen_elasticity3d(n, n, n, &p->K));
    HK_CALL(hk_gen_elasticity3d_coords(n, n, n, &p->coords));
    p->dim = 3;
    return 0;
}

/* 3D elasticity on N^3 cubes of 6 tets each (unstructured-like rows), M = the identity. */
static int source_tet(hk_bench_size size, int step, eigen_problem *p)
{
    static const int N[3][3] = {{8, 12, 16}, {16, 24, 32}, {40, 60, 80}};
    const int n = N[size][step];
    snprintf(p->name, sizeof p->name, "tet %d^3", n);
    HK_CALL(hk_gen_elasticity3d_tet(n, n, n, &p->K));
    HK_CALL(hk_gen_elasticity3d_coords(n, n, n, &p->coords));
    p->dim = 3;
    return 0;
}

typedef struct eigen_source {
    const char *name;
    const char *summary;
    int (*make)(hk_bench_size size, int step, eigen_problem *p);
} eigen_source;

/* One line per source (finite-element cases with their mass matrix add theirs here). */
static const eigen_source eigen_sources[] = {
    {"hex", "3D elasticity, hexes, clamped face, M = I (8..16, 16..32, 40..88 cells a side)",
     source_hex},
    {"tet", "3D elasticity, tets, clamped face, M = I (8..16, 16..32, 40..80 cells a side)",
     source_tet},
};
#define NSOURCES ((int)(sizeof eigen_sources / sizeof eigen_sources[0]))

/* ---- 1. LOBPCG with amg against jacobi -------------------------------------------------- */

typedef struct solve_row {
    char problem[128], pc[64];
    long long dofs;
    int nev, block, converged, iterations, restarts;
    long long pc_applies;
    double setup_s, solve_s, max_residual, lambda1;
} solve_row;

static int solve_problem(const char *backend, const eigen_problem *p, const char *pc, int nev,
                         double tol, solve_row *r)
{
    int ierr = 0;
    char text[512];
    hk_options *o = NULL;
    hk_eigen *e = NULL;
    double *lambda = NULL;
    memset(r, 0, sizeof *r);
    snprintf(r->problem, sizeof r->problem, "%.100s", p->name);
    snprintf(r->pc, sizeof r->pc, "%.40s", pc);
    r->dofs = (long long)(p->K.nbrows * p->K.bs);
    r->nev = nev;
    snprintf(text, sizeof text, "backend=%.40s pc=%.40s eigen.tol=%g eigen.maxit=5000", backend, pc,
             tol);
    HK_TRY(hk_options_create(&o));
    HK_TRY(hk_options_parse(o, text));
    const hk_nearnull nn = {.dim = p->coords ? p->dim : 0, .coords = p->coords};
    HK_TRY(hk_eigen_create(&p->K, p->M.rowptr ? &p->M : NULL, p->coords ? &nn : NULL, o, &e));
    HK_TRY(hk_calloc((size_t)nev, sizeof *lambda, &lambda));
    hk_eigen_result res;
    /* the median of three solves when one takes under a second (the first one too) */
    double t[3];
    int runs = 0;
    for (; runs < 3; runs++) {
        HK_TRY(hk_eigen_solve(e, nev, lambda, NULL, NULL, &res));
        t[runs] = res.solve_seconds;
        if (t[0] >= 1.0) {
            runs++;
            break;
        }
    }
    r->solve_s = hk_bench_median(t, runs);
    r->setup_s = res.setup_seconds;
    r->block = res.block;
    r->converged = res.converged;
    r->iterations = res.iterations;
    r->restarts = res.restarts;
    r->pc_applies = res.pc_applies;
    r->max_residual = res.max_residual;
    r->lambda1 = lambda[0];
fail:
    free(lambda);
    hk_eigen_destroy(e);
    hk_options_destroy(o);
    return ierr;
}

/* ---- 2. block SpMV against k single SpMVs ------------------------------------------------ */

typedef struct spmv_ctx {
    const hk_backend_ops *be;
    hk_mat *A;
    hk_vec *X, *Y;
    int k;
} spmv_ctx;

/* op 0: one block SpMV of k columns; op 1: k single SpMVs of the same columns */
static int spmv_turn(void *p, int op)
{
    spmv_ctx *c = p;
    if (op == 0) {
        const hk_vec x = hk_block_cols(c->X, c->A->ncols, 0, c->k);
        hk_vec y = hk_block_cols(c->Y, c->A->nrows, 0, c->k);
        HK_CALL(c->be->block_spmv(c->A, c->k, &x, &y));
    } else {
        for (int j = 0; j < c->k; j++) {
            hk_vec x = hk_block_col(c->X, c->A->ncols, j), y = hk_block_col(c->Y, c->A->nrows, j);
            HK_CALL(hk_mat_spmv(c->A, &x, &y));
        }
    }
    return c->be->sync();
}

typedef struct spmv_row {
    char problem[128], format[24];
    int k;
    double block_ms, singles_ms;
} spmv_row;

/* ---- 3. the Rayleigh-Ritz step's dense eigensolver -------------------------------------- */

typedef struct dense_ctx {
    int k;
    double *A0, *A, *w, *V;
} dense_ctx;

/* op 0: Householder + implicit QR (the Rayleigh-Ritz step's); op 1: cyclic Jacobi */
static int dense_turn(void *p, int op)
{
    dense_ctx *c = p;
    memcpy(c->A, c->A0, (size_t)c->k * c->k * sizeof *c->A);
    if (op == 1) return hk_dense_symeig(c->k, c->A, c->w, c->V);
    return hk_eig_symeig(c->k, c->A, c->w, c->V);
}

/* ---- the command ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: hooke bench eigen [--backend auto|cpu|cuda] [--size small|medium|large]\n"
               "                         [--source NAME] [--nev N] [--tol T] [--pcs amg,jacobi]\n"
               "                         [--mtx K.mtx [--mass M.mtx] [--coords xyz.mtx]\n"
               "                          [--block-size B]] [--no-solve] [--no-spmv] [--no-dense]\n"
               "                         [--json FILE]\n\n"
               "1. LOBPCG for the nev (default 10) lowest eigenpairs to eigen.tol (default 1e-6)\n"
               "   with each preconditioner of --pcs (default amg, then jacobi) on the source's\n"
               "   problems at three sizes (or the --mtx file): set-up and solve seconds,\n"
               "   iterations, preconditioner applications; speed-up = jacobi's solve time\n"
               "   over this row's.\n"
               "2. The block SpMV of k = 1, 4, 8, 16 columns against k single SpMVs, per\n"
               "   format, on the largest problem: ratio = k SpMVs / block SpMV.\n"
               "3. The dense eigensolver of the Rayleigh-Ritz step (Householder + QR, on the\n"
               "   host) against cyclic Jacobi and, on cuda, cuSOLVER's syevd with its copies,\n"
               "   for k = 10..120.\n\nsources:\n");
    for (int i = 0; i < NSOURCES; i++)
        fprintf(f, "  %-6s %s\n", eigen_sources[i].name, eigen_sources[i].summary);
}

int hk_bench_eigen(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    const char *source = "hex", *mtx = NULL, *mass = NULL, *coords_file = NULL;
    const char *pcs = "amg,jacobi";
    int nev = 10, bs = 1, no_solve = 0, no_spmv = 0, no_dense = 0, rc = 1;
    double tol = 1e-6;
    for (int i = 1; i < argc;) {
        const int r = hk_bench_option(argc, argv, &i, &bo, usage);
        if (r == HK_BENCH_HELP) return 0;
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        const int has = i + 1 < argc;
        if (!strcmp(a, "--source") && has) {
            source = argv[i + 1];
        } else if (!strcmp(a, "--pcs") && has) {
            pcs = argv[i + 1];
        } else if (!strcmp(a, "--mtx") && has) {
            mtx = argv[i + 1];
        } else if (!strcmp(a, "--mass") && has) {
            mass = argv[i + 1];
        } else if (!strcmp(a, "--coords") && has) {
            coords_file = argv[i + 1];
        } else if ((!strcmp(a, "--nev") || !strcmp(a, "--block-size")) && has) {
            char *end;
            const long v = strtol(argv[i + 1], &end, 10);
            const int isnev = !strcmp(a, "--nev");
            if (*end || v < 1 || v > (isnev ? 1000 : 3)) {
                fprintf(stderr, "hooke bench eigen: %s '%s' must be %s\n", a, argv[i + 1],
                        isnev ? "a number of eigenpairs (1..1000)" : "1, 2 or 3");
                return 2;
            }
            *(isnev ? &nev : &bs) = (int)v;
        } else if (!strcmp(a, "--tol") && has) {
            char *end;
            tol = strtod(argv[i + 1], &end);
            if (*end || !(tol > 0 && tol < 1)) {
                fprintf(stderr, "hooke bench eigen: --tol '%s' must be in (0, 1)\n", argv[i + 1]);
                return 2;
            }
        } else if (!strcmp(a, "--no-solve")) {
            no_solve = 1;
            i++;
            continue;
        } else if (!strcmp(a, "--no-spmv")) {
            no_spmv = 1;
            i++;
            continue;
        } else if (!strcmp(a, "--no-dense")) {
            no_dense = 1;
            i++;
            continue;
        } else {
            fprintf(stderr,
                    "hooke bench eigen: unknown or incomplete option '%s' (hooke bench "
                    "eigen --help)\n",
                    a);
            return 2;
        }
        i += 2;
    }
    const eigen_source *src = NULL;
    for (int s = 0; s < NSOURCES; s++)
        if (!strcmp(source, eigen_sources[s].name)) src = &eigen_sources[s];
    if (!src && !mtx) {
        fprintf(stderr, "hooke bench eigen: unknown --source '%s'; the sources are", source);
        for (int s = 0; s < NSOURCES; s++)
            fprintf(stderr, "%s %s", s ? "," : "", eigen_sources[s].name);
        fprintf(stderr, "\n");
        return 2;
    }
    const hk_backend *be;
    if (hk_bench_backend("hooke bench eigen", bo.backend, &be)) return 2;
    char pclist[8][32];
    int npc = 0;
    for (const char *c = pcs; *c && npc < 8;) {
        const char *e = strchr(c, ',');
        const size_t len = e ? (size_t)(e - c) : strlen(c);
        snprintf(pclist[npc++], sizeof pclist[0], "%.*s", (int)len, c);
        c += len + (e != NULL);
    }

    eigen_problem probs[3];
    memset(probs, 0, sizeof probs);
    int nprob = 0;
    solve_row srows[24];
    spmv_row prows[64];
    int nsrows = 0, nprows = 0;
    double dense_ms[8][3];
    static const int dense_k[] = {10, 20, 30, 40, 60, 120};
    hk_json j = {0};
    if (mtx) {
        eigen_problem *p = &probs[nprob++];
        hk_bcsr S = {0};
        snprintf(p->name, sizeof p->name, "%s", mtx);
        if (hk_mm_read_matrix(mtx, &S) ||
            (bs > 1 ? hk_bcsr_to_blocks(&S, bs, &p->K) : hk_bcsr_copy(&S, &p->K)) ||
            (mass && hk_mm_read_matrix(mass, &p->M))) {
            fprintf(stderr, "hooke bench eigen: %s\n", hk_error_message());
            hk_bcsr_free(&S);
            goto done;
        }
        hk_bcsr_free(&S);
        if (coords_file) {
            int64_t rows;
            if (hk_mm_read_array(coords_file, &rows, &p->dim, &p->coords)) {
                fprintf(stderr, "hooke bench eigen: --coords: %s\n", hk_error_message());
                goto done;
            }
        }
    } else {
        for (int s = 0; s < 3; s++, nprob++)
            if (src->make(bo.size, s, &probs[s])) {
                fprintf(stderr, "hooke bench eigen: %s\n", hk_error_message());
                goto done;
            }
    }
    printf("## hooke bench eigen: LOBPCG, block SpMV, Rayleigh-Ritz (%s)\n\n",
           hk_bench_size_name(bo.size));
    hk_backend_describe(be, stdout);

    if (!no_solve) {
        printf("\n%d lowest eigenpairs to a relative residual of %g; speed-up = %s solve time "
               "/ this row's\n\n",
               nev, tol, pclist[npc - 1]);
        hk_table_head(stdout, "lrlrrrrrrrrrr",
                      "problem|DOFs|pc|block|converged|iterations|pc applies|set-up s|solve s|"
                      "ms/iteration|speed-up|lambda_1|max residual");
        for (int p = 0; p < nprob; p++) {
            const int first = nsrows;
            for (int c = 0; c < npc; c++) {
                solve_row *r = &srows[nsrows];
                if (solve_problem(hk_backend_name(be), &probs[p], pclist[c], nev, tol, r)) {
                    hk_table_cell(stdout, "%s", probs[p].name);
                    hk_table_cell(stdout, "%lld", (long long)(probs[p].K.nbrows * probs[p].K.bs));
                    hk_table_cell(stdout, "%s", pclist[c]);
                    hk_table_dashes(stdout, 9);
                    hk_table_cell(stdout, "%s", hk_error_message());
                    hk_table_end(stdout);
                    hk_error_clear();
                    continue;
                }
                nsrows++;
            }
            for (int q = first; q < nsrows; q++) {
                const solve_row *r = &srows[q];
                const double base = srows[nsrows - 1].solve_s;
                char ratio[32];
                hk_table_row(stdout, "%s|%lld|%s|%d|%d/%d|%d|%lld|%.3f|%.3f|%.2f|%s|%.6e|%.1e",
                             r->problem, r->dofs, r->pc, r->block, r->converged, r->nev,
                             r->iterations, r->pc_applies, r->setup_s, r->solve_s,
                             r->iterations ? 1e3 * r->solve_s / r->iterations : 0.0,
                             hk_bench_ratio_text(ratio, sizeof ratio, base / r->solve_s),
                             r->lambda1, r->max_residual);
            }
        }
    }

    if (!no_spmv) {
        const eigen_problem *p = &probs[nprob - 1];
        static const char *const fmts[] = {"auto", "bsr", "sbell", "csr", "sell", NULL};
        static const int ks[] = {1, 4, 8, 16};
        printf("\nBlock SpMV on %s (%lld DOFs): one product of k columns against k single "
               "SpMVs of the same format, timed in turns; ratio = k SpMVs / block\n\n",
               p->name, (long long)(p->K.nbrows * p->K.bs));
        hk_table_head(stdout, "lrrrr", "format|k|block SpMV ms|k SpMVs ms|ratio");
        for (int f = 0; fmts[f]; f++) {
            hk_format fmt;
            hk_mat *A = NULL;
            spmv_ctx c = {be, NULL, NULL, NULL, 0};
            if (hk_format_from_name(fmts[f], &fmt) ||
                hk_mat_create(be, &p->K, fmt, HK_FP64, NULL, &A)) {
                hk_table_row(stdout, "%s|–|–|–|%s", fmts[f], hk_error_message());
                hk_error_clear();
                continue;
            }
            c.A = A;
            const int64_t n = A->nrows;
            int err = hk_vec_create(be, n * 16, HK_FP64, &c.X);
            if (!err) err = hk_vec_create(be, n * 16, HK_FP64, &c.Y);
            if (!err) err = be->vec_set(c.X, 1.0);
            for (int ik = 0; ik < 4 && !err; ik++) {
                spmv_row *r = &prows[nprows];
                c.k = ks[ik];
                double t[2] = {0, 0};
                err = hk_bench_time_rounds(spmv_turn, &c, 2, 7, 0.05, t);
                if (err) break;
                const double tb = t[0], ts = t[1];
                snprintf(r->problem, sizeof r->problem, "%s", p->name);
                snprintf(r->format, sizeof r->format, "%s%s%s", fmts[f],
                         fmt == HK_FMT_AUTO ? ": " : "",
                         fmt == HK_FMT_AUTO ? hk_format_name(A->fmt) : "");
                r->k = c.k;
                r->block_ms = tb * 1e3;
                r->singles_ms = ts * 1e3;
                char ratio[32];
                hk_table_row(stdout, "%s|%d|%.4f|%.4f|%s", r->format, r->k, r->block_ms,
                             r->singles_ms,
                             hk_bench_ratio_text(ratio, sizeof ratio, r->singles_ms / r->block_ms));
                nprows++;
            }
            if (err) {
                hk_table_row(stdout, "%s|–|–|–|%s", fmts[f], hk_error_message());
                hk_error_clear();
            }
            hk_vec_destroy(c.X);
            hk_vec_destroy(c.Y);
            hk_mat_destroy(A);
        }
    }

    if (!no_dense) {
        const int gpu = strcmp(hk_backend_name(be), "cpu") != 0;
        printf("\nRayleigh-Ritz: the dense symmetric eigenproblem of order k (eigenvalues and "
               "vectors); ratio = Jacobi / Householder + QR%s\n\n",
               gpu ? "; cuSOLVER: syevd on the device with A copied in and the results back" : "");
        if (gpu)
            hk_table_head(stdout, "rrrrrr",
                          "k|Householder + QR ms|Jacobi ms|ratio|cuSOLVER syevd ms|ratio");
        else
            hk_table_head(stdout, "rrrr", "k|Householder + QR ms|Jacobi ms|ratio");
        for (int d = 0; d < (int)(sizeof dense_k / sizeof dense_k[0]); d++) {
            const int k = dense_k[d];
            dense_ctx c = {k, NULL, NULL, NULL, NULL};
            c.A0 = malloc((size_t)k * k * sizeof *c.A0);
            c.A = malloc((size_t)k * k * sizeof *c.A);
            c.V = malloc((size_t)k * k * sizeof *c.V);
            c.w = malloc((size_t)k * sizeof *c.w);
            /* a spread spectrum, as LOBPCG's basis has: diagonal 10^(-6..2) plus coupling */
            for (int a = 0; a < k; a++)
                for (int b = 0; b <= a; b++) {
                    const double v =
                        a == b ? pow(10.0, -6 + 8.0 * a / k) : 1e-3 * sin(1.0 + a * 7.0 + b * 3.0);
                    c.A0[a + b * k] = c.A0[b + a * k] = v;
                }
            double t[2] = {0, 0};
            const int err = hk_bench_time_rounds(dense_turn, &c, 2, 7, 0.02, t);
            dense_ms[d][0] = t[0] * 1e3;
            dense_ms[d][1] = t[1] * 1e3;
            char ratio[32], ratio2[32];
            double tgpu = NAN;
#ifdef HOOKE_HAVE_CUDA
            if (gpu && hk_cuda_bench_syevd(k, c.A0, 9, &tgpu)) {
                printf("cuSOLVER: %s\n", hk_error_message());
                hk_error_clear();
                tgpu = NAN;
            }
#endif
            dense_ms[d][2] = tgpu * 1e3;
            if (err) {
                hk_table_cell(stdout, "%d", k);
                hk_table_dashes(stdout, gpu ? 4 : 2);
                hk_table_cell(stdout, "%s", hk_error_message());
                hk_table_end(stdout);
                hk_error_clear();
            } else if (gpu) {
                hk_table_row(stdout, "%d|%.4f|%.4f|%s|%.4f|%s", k, t[0] * 1e3, t[1] * 1e3,
                             hk_bench_ratio_text(ratio, sizeof ratio, t[1] / t[0]), tgpu * 1e3,
                             hk_bench_ratio_text(ratio2, sizeof ratio2, tgpu / t[0]));
            } else {
                hk_table_row(stdout, "%d|%.4f|%.4f|%s", k, t[0] * 1e3, t[1] * 1e3,
                             hk_bench_ratio_text(ratio, sizeof ratio, t[1] / t[0]));
            }
            free(c.A0);
            free(c.A);
            free(c.V);
            free(c.w);
        }
    }

    if (bo.json) {
        if (hk_json_open(&j, bo.json)) goto done;
        hk_json_begin_object(&j, NULL);
        hk_json_string(&j, "bench", "eigen");
        hk_json_string(&j, "backend", hk_backend_name(be));
        hk_json_string(&j, "size", hk_bench_size_name(bo.size));
        hk_json_begin_array(&j, "lobpcg");
        for (int i = 0; i < nsrows; i++) {
            const solve_row *r = &srows[i];
            hk_json_begin_object(&j, NULL);
            hk_json_string(&j, "problem", r->problem);
            hk_json_int(&j, "dofs", r->dofs);
            hk_json_string(&j, "pc", r->pc);
            hk_json_int(&j, "nev", r->nev);
            hk_json_int(&j, "block", r->block);
            hk_json_int(&j, "converged", r->converged);
            hk_json_int(&j, "iterations", r->iterations);
            hk_json_int(&j, "restarts", r->restarts);
            hk_json_int(&j, "pc_applies", r->pc_applies);
            hk_json_number(&j, "setup_s", r->setup_s);
            hk_json_number(&j, "solve_s", r->solve_s);
            hk_json_number(&j, "lambda1", r->lambda1);
            hk_json_number(&j, "max_residual", r->max_residual);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_begin_array(&j, "block_spmv");
        for (int i = 0; i < nprows; i++) {
            hk_json_begin_object(&j, NULL);
            hk_json_string(&j, "problem", prows[i].problem);
            hk_json_string(&j, "format", prows[i].format);
            hk_json_int(&j, "k", prows[i].k);
            hk_json_number(&j, "block_ms", prows[i].block_ms);
            hk_json_number(&j, "singles_ms", prows[i].singles_ms);
            hk_json_number(&j, "ratio", prows[i].singles_ms / prows[i].block_ms);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        if (!no_dense) {
            hk_json_begin_array(&j, "rayleigh_ritz");
            for (int d = 0; d < (int)(sizeof dense_k / sizeof dense_k[0]); d++) {
                hk_json_begin_object(&j, NULL);
                hk_json_int(&j, "k", dense_k[d]);
                hk_json_number(&j, "householder_qr_ms", dense_ms[d][0]);
                hk_json_number(&j, "jacobi_ms", dense_ms[d][1]);
                hk_json_number(&j, "cusolver_syevd_ms", dense_ms[d][2]);
                hk_json_end_object(&j);
            }
            hk_json_end_array(&j);
        }
        hk_json_end_object(&j);
        if (hk_json_close(&j)) goto done;
    }
    rc = 0;
done:
    for (int p = 0; p < 3; p++)
        problem_free(&probs[p]);
    return rc;
}
