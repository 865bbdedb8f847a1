/* `hooke bench modal`: the bracket's lowest natural frequencies (cases/bracket/bracket.yaml as a
 * modal analysis, K and the consistent M assembled by hooke run's pipeline) at three sizes:
 *   LOBPCG + amg (hk_eigen, the default of a modal case) against
 *   LOBPCG + jacobi and against
 *   a shift-invert Lanczos with full reorthogonalisation through the sparse direct solver
 *   (method=cholesky, CHOLMOD, on the CPU; up to --lanczos-max DOFs): the classical way, whose
 *   frequencies are the reference the others are compared with (max |f - f_lanczos| / f).
 * Set-up (the preconditioner, or the factorisation), solve, iterations (Lanczos: steps, one
 * triangular solve pair each), the largest relative residual recomputed on the host, and the
 * speed-up of each row over LOBPCG + jacobi's solve. A LOBPCG solve under a second is
 * repeated (median of three). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "case.h"
#include "eigen/eigen_impl.h" /* hk_eig_symeig: the Lanczos tridiagonal's eigenpairs */

typedef struct modal_row {
    char size[32], method[48];
    long long dofs;
    int converged, iterations;
    long long applies; /* preconditioner applications, or Lanczos' solves */
    double setup_s, solve_s, max_residual, f1, fn, vs_lanczos;
    int ok;
} modal_row;

/* ---- host algebra ------------------------------------------------------------------------ */

static void spmv(const hk_bcsr *A, const double *x, double *y)
{
    const int bs = A->bs, b2 = bs * bs;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < A->nbrows; i++)
        for (int r = 0; r < bs; r++) {
            double s = 0;
            for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
                for (int c = 0; c < bs; c++)
                    s += A->val[(size_t)q * b2 + r * bs + c] * x[(int64_t)A->colind[q] * bs + c];
            y[i * bs + r] = s;
        }
}

static double dot(int64_t n, const double *a, const double *b)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* The largest relative residual ||K x - lambda M x|| / (|lambda| ||M x||) of nev pairs, leaving
 * out the rigid-body modes of a free part (lambda below 1e-8 of the largest: no relative
 * residual). */
static int max_residual(const hk_bcsr *K, const hk_bcsr *M, int nev, const double *lambda,
                        const double *X, double *out)
{
    const int64_t n = K->nbrows * K->bs;
    double *kx = malloc((size_t)n * sizeof *kx), *mx = malloc((size_t)n * sizeof *mx);
    HK_CHECK(kx && mx, HK_ERR_MEMORY, "hooke bench modal: out of memory for the residuals");
    *out = 0;
    for (int j = 0; j < nev; j++) {
        if (fabs(lambda[j]) <= 1e-8 * fabs(lambda[nev - 1])) continue;
        spmv(K, X + (size_t)j * n, kx);
        spmv(M, X + (size_t)j * n, mx);
        double num = 0, den = 0;
        for (int64_t i = 0; i < n; i++) {
            const double d = kx[i] - lambda[j] * mx[i];
            num += d * d, den += mx[i] * mx[i];
        }
        const double r = sqrt(num / den) / fabs(lambda[j]);
        if (!(r <= *out)) *out = r;
    }
    free(kx);
    free(mx);
    return 0;
}

/* A = K - sigma M on K's pattern (M's blocks lie in it: consistent M has K's pattern). */
static int shifted(const hk_bcsr *K, const hk_bcsr *M, double sigma, hk_bcsr *A)
{
    HK_CALL(hk_bcsr_copy(K, A));
    const int bs = K->bs, b2 = bs * bs;
    for (int64_t i = 0; i < M->nbrows; i++)
        for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++) {
            const int64_t p = hk_find_block(A->rowptr, A->colind, i, M->colind[q]);
            HK_CHECK(p >= 0, HK_ERR_ARG, "hooke bench modal: M has a block outside K's pattern");
            for (int e = 0; e < b2; e++)
                A->val[(size_t)p * b2 + e] -= sigma * M->val[(size_t)q * b2 + e];
        }
    return 0;
}

/* ---- shift-invert Lanczos ----------------------------------------------------------------
 * On OP = (K - sigma M)^-1 M, self-adjoint in the M inner product: q_1 M-normalised, then
 * w = OP q_j, w -= Q (Q^T M w) twice (full reorthogonalisation: no ghost copies), alpha_j and
 * beta_j from the coefficients, q_(j+1) = w / beta_j. The tridiagonal T_k's eigenpairs
 * (theta, s) give lambda = sigma + 1 / theta with Ritz vectors Q s; the nev largest theta are
 * the nev lowest lambda above sigma. The steps stop when every pair's estimate
 * |beta_k s_k| / |theta| (the residual of OP) is below est_tol. K's residual
 * ||K x - lambda M x|| / (lambda ||M x||) of the Ritz vectors can stay above it by much (the
 * factor's solves are backward stable only, and the Krylov basis gathers their rounding along
 * the high modes, which K amplifies): up to three steps of inverse iteration with a
 * Rayleigh-Ritz step (refine) bring it below tol. */

/* lambda (nev, ascending) and X = Q s of T_k's eigenpairs (th ascending, S column-major). */
static void ritz_pairs(int64_t n, int k, int nev, double sigma, const double *th, const double *S,
                       const double *Q, double *lambda, double *X)
{
    for (int e = 0; e < nev; e++) {
        const int i = k - 1 - e;
        lambda[e] = sigma + 1 / th[i];
        double *x = X + (size_t)e * n;
        memset(x, 0, (size_t)n * sizeof *x);
        for (int j = 0; j < k; j++) {
            const double sj = S[(size_t)i * k + j]; /* column-major: vector i */
            for (int64_t r = 0; r < n; r++)
                x[r] += sj * Q[(size_t)j * n + r];
        }
    }
}

/* One step of inverse iteration on the nev Ritz vectors, Y = OP X, and the Rayleigh-Ritz step
 * on Y: the vectors' components along the higher modes shrink by lambda_i / lambda_high, the
 * rounding the Krylov basis gathered among them (the factor's solves are only backward
 * stable) with them. */
static int refine(const hk_bcsr *K, const hk_bcsr *M, hk_solver *s, int nev, double *lambda,
                  double *X, modal_row *row)
{
    int ierr = 0;
    const int64_t n = K->nbrows * K->bs;
    double *Y = NULL, *KY = NULL, *MY = NULL, *tmp = NULL, *Kr = NULL, *Mr = NULL, *V = NULL;
    hk_result res;
    HK_TRY(hk_malloc((size_t)(n * nev) * sizeof *Y, &Y));
    HK_TRY(hk_malloc((size_t)(n * nev) * sizeof *KY, &KY));
    HK_TRY(hk_malloc((size_t)(n * nev) * sizeof *MY, &MY));
    HK_TRY(hk_malloc((size_t)n * sizeof *tmp, &tmp));
    HK_TRY(hk_malloc((size_t)nev * nev * sizeof *Kr, &Kr));
    HK_TRY(hk_malloc((size_t)nev * nev * sizeof *Mr, &Mr));
    HK_TRY(hk_malloc((size_t)nev * nev * sizeof *V, &V));
    for (int e = 0; e < nev; e++) {
        spmv(M, X + (size_t)e * n, tmp);
        HK_TRY(hk_solver_solve(s, tmp, Y + (size_t)e * n, &res));
        row->applies++;
        spmv(K, Y + (size_t)e * n, KY + (size_t)e * n);
        spmv(M, Y + (size_t)e * n, MY + (size_t)e * n);
    }
    for (int a = 0; a < nev; a++) /* column-major, symmetrised */
        for (int b = 0; b <= a; b++) {
            const double *ya = Y + (size_t)a * n, *yb = Y + (size_t)b * n;
            const double kab =
                0.5 * (dot(n, ya, KY + (size_t)b * n) + dot(n, yb, KY + (size_t)a * n));
            const double mab =
                0.5 * (dot(n, ya, MY + (size_t)b * n) + dot(n, yb, MY + (size_t)a * n));
            Kr[a + b * nev] = Kr[b + a * nev] = kab;
            Mr[a + b * nev] = Mr[b + a * nev] = mab;
        }
    HK_TRY_CHECK(hk_eig_cholesky(nev, Mr, 0) < 0, HK_ERR_NUMERIC,
                 "hooke bench modal: the refined Lanczos vectors lost their independence");
    /* L^-1 Kr L^-T, its eigenpairs, C = L^-T V */
    hk_eig_solve_lower(nev, Mr, nev, Kr);
    for (int a = 0; a < nev; a++)
        for (int b = 0; b < a; b++) {
            const double t = Kr[a + b * nev];
            Kr[a + b * nev] = Kr[b + a * nev];
            Kr[b + a * nev] = t;
        }
    hk_eig_solve_lower(nev, Mr, nev, Kr);
    for (int a = 0; a < nev; a++)
        for (int b = 0; b < a; b++)
            Kr[a + b * nev] = Kr[b + a * nev] = 0.5 * (Kr[a + b * nev] + Kr[b + a * nev]);
    HK_TRY(hk_eig_symeig(nev, Kr, lambda, V));
    hk_eig_solve_upper_t(nev, Mr, nev, V);
    for (int e = 0; e < nev; e++) {
        double *x = X + (size_t)e * n;
        memset(x, 0, (size_t)n * sizeof *x);
        for (int j = 0; j < nev; j++) {
            const double c = V[j + e * nev];
            for (int64_t r = 0; r < n; r++)
                x[r] += c * Y[(size_t)j * n + r];
        }
    }
fail:
    free(Y), free(KY), free(MY), free(tmp), free(Kr), free(Mr), free(V);
    return ierr;
}

static int lanczos(const hk_bcsr *K, const hk_bcsr *M, const uint8_t *fixed, int nev, double tol,
                   double est_tol, int maxk, double *lambda, double *X, modal_row *row)
{
    int ierr = 0;
    const int64_t n = K->nbrows * K->bs;
    hk_bcsr A = {0};
    hk_solver *s = NULL;
    hk_options *o = NULL;
    double *Q = NULL, *MQ = NULL, *w = NULL, *mw = NULL, *T = NULL, *th = NULL, *S = NULL,
           *alpha = NULL, *beta = NULL, *c = NULL;
    /* sigma below the spectrum, as the eigensolver's automatic shift: K - sigma M definite */
    double tk = 0, tm = 0;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int r = 0; r < K->bs; r++) {
            const int64_t p = hk_find_block(K->rowptr, K->colind, i, i);
            const int64_t q = hk_find_block(M->rowptr, M->colind, i, i);
            tk += K->val[((size_t)p * K->bs + r) * K->bs + r];
            tm += M->val[((size_t)q * M->bs + r) * M->bs + r];
        }
    const double sigma = -1e-8 * tk / tm;
    double t = hk_time();
    HK_TRY(shifted(K, M, sigma, &A));
    HK_TRY(hk_options_create(&o));
    HK_TRY(hk_options_parse(o, "backend=cpu method=cholesky"));
    HK_TRY(hk_solver_create(&A, o, &s));
    row->setup_s = hk_time() - t;
    t = hk_time();
    HK_TRY(hk_malloc((size_t)(n * (maxk + 1)) * sizeof *Q, &Q));
    HK_TRY(hk_malloc((size_t)(n * (maxk + 1)) * sizeof *MQ, &MQ));
    HK_TRY(hk_malloc((size_t)n * sizeof *w, &w));
    HK_TRY(hk_malloc((size_t)n * sizeof *mw, &mw));
    HK_TRY(hk_malloc((size_t)(maxk + 1) * sizeof *c, &c));
    HK_TRY(hk_calloc((size_t)maxk * maxk, sizeof *T, &T));
    HK_TRY(hk_calloc((size_t)maxk * maxk, sizeof *S, &S));
    HK_TRY(hk_calloc((size_t)maxk, sizeof *th, &th));
    HK_TRY(hk_calloc((size_t)maxk + 1, sizeof *alpha, &alpha));
    HK_TRY(hk_calloc((size_t)maxk + 1, sizeof *beta, &beta));
    /* q_1: a fixed pseudo-random vector, M-normalised, zero on the prescribed dofs (their
     * decoupled rows would stay in the Krylov space at rounding level) */
    uint64_t h = 88172645463325252ull;
    for (int64_t i = 0; i < n; i++) {
        h ^= h << 13, h ^= h >> 7, h ^= h << 17;
        w[i] = fixed && fixed[i] ? 0 : (double)(h >> 11) / 9007199254740992.0 - 0.5;
    }
    spmv(M, w, mw);
    double nrm = sqrt(dot(n, w, mw));
    for (int64_t i = 0; i < n; i++)
        Q[i] = w[i] / nrm, MQ[i] = mw[i] / nrm;
    int k = 0, nconv = 0;
    hk_result res;
    while (k < maxk) {
        /* w = (K - sigma M)^-1 M q_k */
        HK_TRY(hk_solver_solve(s, MQ + (size_t)k * n, w, &res));
        row->applies++;
        for (int pass = 0; pass < 2; pass++) {
            spmv(M, w, mw);
            for (int j = 0; j <= k; j++) {
                c[j] = dot(n, Q + (size_t)j * n, mw);
                if (pass == 0 && j == k) alpha[k] = c[j];
                if (pass == 1 && j == k) alpha[k] += c[j];
            }
            for (int j = 0; j <= k; j++)
                for (int64_t i = 0; i < n; i++)
                    w[i] -= c[j] * Q[(size_t)j * n + i];
        }
        spmv(M, w, mw);
        beta[k] = sqrt(dot(n, w, mw));
        k++;
        if (k >= nev) { /* the Ritz values of T_k and their estimates */
            memset(T, 0, (size_t)k * k * sizeof *T);
            for (int j = 0; j < k; j++) {
                T[j * k + j] = alpha[j];
                if (j + 1 < k) T[j * k + j + 1] = T[(j + 1) * k + j] = beta[j];
            }
            HK_TRY(hk_eig_symeig(k, T, th, S));
            nconv = 0;
            for (int i = k - 1; i >= k - nev; i--) /* the largest theta: ascending in th */
                nconv += fabs(beta[k - 1] * S[(size_t)i * k + k - 1]) <= est_tol * fabs(th[i]);
            if (nconv == nev) break;
        }
        if (!(beta[k - 1] > 0)) break; /* an invariant subspace */
        for (int64_t i = 0; i < n; i++)
            Q[(size_t)k * n + i] = w[i] / beta[k - 1], MQ[(size_t)k * n + i] = mw[i] / beta[k - 1];
    }
    row->iterations = k;
    row->converged = nconv;
    ritz_pairs(n, k, nev, sigma, th, S, Q, lambda, X); /* lambda ascending: theta descending */
    for (int pass = 0; pass < 3; pass++) {
        double res;
        HK_TRY(max_residual(K, M, nev, lambda, X, &res));
        if (res <= tol) break;
        HK_TRY(refine(K, M, s, nev, lambda, X, row));
    }
    row->solve_s = hk_time() - t;
fail:
    hk_solver_destroy(s);
    hk_options_destroy(o);
    hk_bcsr_free(&A);
    free(Q), free(MQ), free(w), free(mw), free(T), free(S), free(th), free(alpha), free(beta);
    free(c);
    return ierr;
}

/* ---- LOBPCG ------------------------------------------------------------------------------ */

static int lobpcg(const hk_run *r, const char *backend, const char *pc, int nev, double tol,
                  double *lambda, double *X, modal_row *row)
{
    int ierr = 0;
    char text[256];
    hk_options *o = NULL;
    hk_eigen *e = NULL;
    double *coords = NULL;
    hk_nearnull nn;
    snprintf(text, sizeof text, "backend=%s pc=%s eigen.tol=%g eigen.maxit=5000", backend, pc, tol);
    HK_TRY(hk_options_create(&o));
    HK_TRY(hk_options_parse(o, text));
    HK_TRY(hk_run_nearnull(r, &nn, &coords));
    HK_TRY(hk_eigen_create(&r->sys.K, &r->sys.M, &nn, o, &e));
    hk_eigen_result res;
    double t[3];
    int runs = 0;
    for (; runs < 3; runs++) { /* the median of three when a solve takes under a second */
        HK_TRY(hk_eigen_solve(e, nev, lambda, X, NULL, &res));
        t[runs] = res.solve_seconds;
        if (t[0] >= 1.0) {
            runs++;
            break;
        }
    }
    row->solve_s = hk_bench_median(t, runs);
    row->setup_s = res.setup_seconds;
    row->converged = res.converged;
    row->iterations = res.iterations;
    row->applies = res.pc_applies;
fail:
    hk_eigen_destroy(e);
    hk_options_destroy(o);
    free(coords);
    return ierr;
}

/* ---- the command ------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hooke bench modal [--backend auto|cpu|cuda] [--size small|medium|large]\n"
            "                         [--nev N] [--tol T] [--lanczos-max DOFS] [--no-jacobi]\n"
            "                         [--case FILE.yaml] [--json FILE]\n\n"
            "The lowest N (default 10) natural frequencies of the bracket (cases/bracket, as a\n"
            "modal analysis with the consistent mass) at three sizes, geometry.size\n"
            "  small:  0.006, 0.005, 0.004 (about 40k, 50k, 65k DOFs)\n"
            "  medium: 0.006, 0.003, 0.002 (about 40k, 90k, 300k DOFs)\n"
            "  large:  0.006, 0.0015, 0.001 (about 40k, 700k, 2.2M DOFs)\n"
            "by LOBPCG + amg and LOBPCG + jacobi to a relative residual T (default 1e-6) on the\n"
            "backend, and by a shift-invert Lanczos with full reorthogonalisation through\n"
            "method=cholesky (CHOLMOD) on the CPU up to --lanczos-max DOFs (default 300000):\n"
            "set-up, solve, iterations (Lanczos: steps), preconditioner applications (Lanczos:\n"
            "solves), the largest relative residual recomputed on the host, the lowest and the\n"
            "N-th frequency, the largest |f - f_lanczos| / f_lanczos, and the speed-up over\n"
            "LOBPCG + jacobi's solve. --case benches another case file (its modal section or\n"
            "--nev modes).\n");
}

static void print_row(const modal_row *m, double jacobi_s)
{
    char ratio[32], vs[32] = "–";
    hk_bench_ratio_text(ratio, sizeof ratio, jacobi_s / m->solve_s);
    if (m->vs_lanczos >= 0) snprintf(vs, sizeof vs, "%.1e", m->vs_lanczos);
    if (!m->ok) {
        hk_table_row(stdout, "%s|%lld|%s|failed|–|–|–|–|–|–|–|–", m->size, m->dofs, m->method);
        return;
    }
    hk_table_row(stdout, "%s|%lld|%s|%.2f|%.2f|%d|%lld|%.1e|%.6g|%.6g|%s|%s", m->size, m->dofs,
                 m->method, m->setup_s, m->solve_s, m->iterations, m->applies, m->max_residual,
                 m->f1, m->fn, vs, ratio);
}

int hk_bench_modal(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    const char *case_path = NULL;
    int nev = 10, no_jacobi = 0, rc = 1;
    long long lanczos_max = 300000;
    double tol = 1e-6;
    for (int i = 1; i < argc;) {
        const int r = hk_bench_option(argc, argv, &i, &bo, usage);
        if (r == HK_BENCH_HELP) return 0;
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        const int has = i + 1 < argc;
        char *end = NULL;
        if (!strcmp(a, "--nev") && has) {
            nev = (int)strtol(argv[i + 1], &end, 10);
            if (*end || nev < 1 || nev > 200) {
                fprintf(stderr, "hooke bench modal: --nev '%s' must be 1..200\n", argv[i + 1]);
                return 2;
            }
        } else if (!strcmp(a, "--tol") && has) {
            tol = strtod(argv[i + 1], &end);
            if (*end || !(tol > 0 && tol < 1)) {
                fprintf(stderr, "hooke bench modal: --tol '%s' must be in (0, 1)\n", argv[i + 1]);
                return 2;
            }
        } else if (!strcmp(a, "--lanczos-max") && has) {
            lanczos_max = strtoll(argv[i + 1], &end, 10);
            if (*end || lanczos_max < 0) {
                fprintf(stderr, "hooke bench modal: --lanczos-max '%s' must be a number of DOFs\n",
                        argv[i + 1]);
                return 2;
            }
        } else if (!strcmp(a, "--case") && has) {
            case_path = argv[i + 1];
        } else if (!strcmp(a, "--no-jacobi")) {
            no_jacobi = 1;
            i++;
            continue;
        } else {
            fprintf(stderr,
                    "hooke bench modal: unknown or incomplete option '%s' (hooke bench modal "
                    "--help)\n",
                    a);
            return 2;
        }
        i += 2;
    }
    const hk_backend *be;
    if (hk_bench_backend("hooke bench modal", bo.backend, &be)) return 2;
    const char *backend = hk_backend_name(be);
    static const char *const sizes[3][3] = {
        {"0.006", "0.005", "0.004"}, {"0.006", "0.003", "0.002"}, {"0.006", "0.0015", "0.001"}};
#ifndef HOOKE_HAVE_CHOLMOD
    lanczos_max = 0; /* no direct solver in this build */
#endif
    printf("## hooke bench modal: the %d lowest natural frequencies of %s (%s, tol %g)\n\n", nev,
           case_path ? case_path : "the bracket", backend, tol);
    hk_table_head(stdout, "lrlrrrrrrrrr",
                  "size|DOFs|method|set-up s|solve s|iterations|pc applies / solves|max "
                  "residual|f1 (Hz)|f%d (Hz)|vs Lanczos|speed-up vs jacobi",
                  nev);
    modal_row rows[3][3];
    memset(rows, 0, sizeof rows);
    hk_json j = {0};
    int failed = 0;
    for (int step = 0; step < (case_path ? 1 : 3); step++) {
        hk_case c;
        hk_run r;
        memset(&r, 0, sizeof r);
        char set_size[64], set_modes[64];
        snprintf(set_size, sizeof set_size, "geometry.size=%s", sizes[bo.size][step]);
        snprintf(set_modes, sizeof set_modes, "modal.modes=%d", nev);
        const char *sets[2] = {set_modes, set_size};
        const char *path = case_path ? case_path : "cases/bracket/bracket.yaml";
        hk_run_opts o = {.backend = backend, .quiet = 1};
        if (hk_case_load(path, case_path ? 1 : 2, sets, &c) || hk_run_assemble(&c, &o, &r)) {
            fprintf(stderr, "hooke bench modal: %s: %s\n", path, hk_error_message());
            hk_run_free(&r);
            goto done;
        }
        const int64_t n = r.sys.ndof;
        double *lambda = malloc((size_t)nev * sizeof *lambda);
        double *X = malloc((size_t)(n * nev) * sizeof *X), ref[200];
        int have_ref = 0;
        if (!lambda || !X) {
            fprintf(stderr, "hooke bench modal: out of memory for %d modes of %lld DOFs\n", nev,
                    (long long)n);
            free(lambda), free(X);
            hk_run_free(&r);
            hk_case_free(&c);
            goto done;
        }
        /* Lanczos first: the reference of the others */
        const char *names[3] = {"lanczos + cholesky (cpu)", "lobpcg + amg", "lobpcg + jacobi"};
        for (int m = 0; m < 3; m++) {
            modal_row *row = &rows[step][m];
            snprintf(row->size, sizeof row->size, "%s", case_path ? "case" : sizes[bo.size][step]);
            snprintf(row->method, sizeof row->method, "%s", names[m]);
            row->dofs = (long long)n;
            row->vs_lanczos = -1;
            if ((m == 0 && n > lanczos_max) || (m == 2 && no_jacobi)) continue;
            int err =
                m == 0 ? lanczos(&r.sys.K, &r.sys.M, r.sys.fixed, nev, tol / 100, 1e-12,
                                 20 * nev + 40, lambda, X, row)
                       : lobpcg(&r, backend, m == 1 ? "amg" : "jacobi", nev, tol, lambda, X, row);
            if (!err) err = max_residual(&r.sys.K, &r.sys.M, nev, lambda, X, &row->max_residual);
            if (err) {
                fprintf(stderr, "hooke bench modal: %s at %lld DOFs: %s\n", names[m], (long long)n,
                        hk_error_message());
                hk_error_clear();
                failed = 1;
                continue;
            }
            row->ok = 1;
            row->f1 = sqrt(fmax(lambda[0], 0)) / (2 * M_PI);
            row->fn = sqrt(fmax(lambda[nev - 1], 0)) / (2 * M_PI);
            if (m == 0) {
                for (int e = 0; e < nev; e++)
                    ref[e] = sqrt(fmax(lambda[e], 0)) / (2 * M_PI);
                have_ref = 1;
            }
            if (have_ref) {
                row->vs_lanczos = 0;
                for (int e = 0; e < nev; e++) { /* rigid-body modes: 0 Hz, no relative error */
                    const double f = sqrt(fmax(lambda[e], 0)) / (2 * M_PI);
                    if (ref[e] > 1e-4 * ref[nev - 1])
                        row->vs_lanczos = fmax(row->vs_lanczos, fabs(f - ref[e]) / ref[e]);
                }
            }
        }
        const double jac = rows[step][2].ok ? rows[step][2].solve_s : NAN;
        for (int m = 0; m < 3; m++)
            if (rows[step][m].ok || (m == 0 && n <= lanczos_max) || (m == 2 && !no_jacobi))
                print_row(&rows[step][m], jac);
        free(lambda);
        free(X);
        hk_run_free(&r);
        hk_case_free(&c);
    }
    printf("\nLanczos: steps of (K - sigma M)^-1 M with sigma = -1e-8 trace(K)/trace(M), each one\n"
           "pair of triangular solves with the CHOLMOD factor (set-up: the factorisation); its\n"
           "frequencies are the reference of the column vs Lanczos.\n");
    if (bo.json) {
        if (hk_json_open(&j, bo.json)) goto done;
        hk_json_begin_object(&j, NULL);
        hk_json_string(&j, "bench", "modal");
        hk_json_string(&j, "backend", backend);
        hk_json_int(&j, "nev", nev);
        hk_json_number(&j, "tol", tol);
        hk_json_begin_array(&j, "rows");
        for (int step = 0; step < 3; step++)
            for (int m = 0; m < 3; m++) {
                const modal_row *row = &rows[step][m];
                if (!row->ok) continue;
                hk_json_begin_object(&j, NULL);
                hk_json_string(&j, "size", row->size);
                hk_json_string(&j, "method", row->method);
                hk_json_int(&j, "dofs", row->dofs);
                hk_json_number(&j, "setup_seconds", row->setup_s);
                hk_json_number(&j, "solve_seconds", row->solve_s);
                hk_json_int(&j, "iterations", row->iterations);
                hk_json_int(&j, "applies", row->applies);
                hk_json_int(&j, "converged", row->converged);
                hk_json_number(&j, "max_residual", row->max_residual);
                hk_json_number(&j, "f1_hz", row->f1);
                hk_json_number(&j, "fn_hz", row->fn);
                hk_json_number(&j, "vs_lanczos", row->vs_lanczos >= 0 ? row->vs_lanczos : NAN);
                hk_json_end_object(&j);
            }
        hk_json_end_array(&j);
        hk_json_end_object(&j);
        if (hk_json_close(&j)) goto done;
    }
    rc = failed;
done:
    return rc;
}
