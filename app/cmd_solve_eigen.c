/* hooke solve --eigen N: the lowest eigenpairs of K x = lambda M x for a Matrix Market K (or a
 * generated one) and mass matrix M (the identity without --mass) by the library's LOBPCG
 * (hk_eigen), printing eigenvalues, frequencies, residuals and iterations, or JSON; -o writes
 * the eigenvectors as a dense Matrix Market array. Exit 0 only when every pair converged. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "hooke/solver.h"

/* The columns of X (n x k, column-major) as a Matrix Market array file. */
static int write_array(const char *path, int64_t n, int k, const double *X)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "hooke solve: cannot write %s\n", path);
        return -1;
    }
    fprintf(f,
            "%%%%MatrixMarket matrix array real general\n%% eigenvectors (columns), "
            "M-orthonormal\n%lld %d\n",
            (long long)n, k);
    for (int64_t i = 0; i < n * k; i++)
        fprintf(f, "%.17g\n", X[i]);
    if (fclose(f) != 0) {
        fprintf(stderr, "hooke solve: error writing %s\n", path);
        return -1;
    }
    return 0;
}

/* f = sqrt(lambda) / (2 pi), 0 for a (rounding-level) negative lambda */
static double frequency(double lambda)
{
    return lambda > 0 ? sqrt(lambda) / (2 * M_PI) : 0;
}

/* A JSON string (file names): quotes and backslashes escaped. */
static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        if ((unsigned char)*s >= 32) putchar(*s);
    }
    putchar('"');
}

static void json_array(const char *key, const double *v, int n, int last)
{
    printf("  \"%s\": [", key);
    for (int j = 0; j < n; j++)
        printf("%s%.17g", j ? ", " : "", v[j]);
    printf("]%s\n", last ? "" : ",");
}

int hk_cmd_solve_eigen(int argc, char **argv)
{
    const char *mtx = NULL, *mass = NULL, *out = NULL, *backend = NULL, *gen = NULL;
    const char *coords_file = NULL;
    int bs = 1, rc = 2, dim = 0, nev = 0, json = 0;
    double *coords = NULL, *lambda = NULL, *X = NULL, *resid = NULL, *freq = NULL;
    hk_options *o = NULL;
    hk_eigen *e = NULL;
    hk_bcsr A = {0}, B = {0}, M = {0};
    if (hk_options_create(&o)) {
        fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int has_val = i + 1 < argc;
        if (!strcmp(a, "--eigen") && has_val) {
            char *end;
            const long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 1 || v > 100000) {
                fprintf(stderr,
                        "hooke solve: --eigen '%s' must be the number of eigenpairs, at least "
                        "1\n",
                        argv[i]);
                goto done;
            }
            nev = (int)v;
        } else if (!strcmp(a, "--mass") && has_val) {
            mass = argv[++i];
        } else if (!strcmp(a, "-o") && has_val) {
            out = argv[++i];
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--backend") && has_val) {
            backend = argv[++i];
        } else if (!strcmp(a, "--coords") && has_val) {
            coords_file = argv[++i];
        } else if (!strcmp(a, "--generate") && has_val) {
            gen = argv[++i];
        } else if (!strcmp(a, "--block-size") && has_val) {
            char *end;
            const long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 3) {
                fprintf(stderr, "hooke solve: --block-size '%s' must be 1, 2 or 3\n", argv[i]);
                goto done;
            }
            bs = (int)v;
        } else if (a[0] == '-') {
            fprintf(stderr,
                    "hooke solve: unknown or incomplete option '%s' with --eigen; the options "
                    "are --eigen N, --mass, -o, --json, --backend, --block-size, --coords, "
                    "--generate, --help (hooke solve --help)\n",
                    a);
            goto done;
        } else if (strchr(a, '=')) {
            if (hk_options_parse(o, a)) {
                fprintf(stderr, "hooke solve: %s\n", hk_error_message());
                goto done;
            }
        } else if (!mtx) {
            mtx = a;
        } else {
            fprintf(stderr,
                    "hooke solve: a second matrix file '%s' was given after '%s'; pass the mass "
                    "matrix with --mass (options are key=value)\n",
                    a, mtx);
            goto done;
        }
    }
    if (!mtx == !gen) {
        fprintf(stderr, mtx ? "hooke solve: give a matrix file or --generate, not both\n"
                            : "hooke solve: no matrix; give K.mtx or --generate KIND:N "
                              "(hooke solve --help)\n");
        goto done;
    }
    if (backend && hk_options_set(o, "backend", backend)) {
        fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        goto done;
    }

    /* ---- K, M, the node coordinates ---- */
    const hk_bcsr *K = &A;
    if (gen) {
        if (hk_app_generate(gen, "hooke solve", &A, &coords, &dim)) goto done;
    } else {
        if (hk_mm_read_matrix(mtx, &A)) {
            fprintf(stderr, "hooke solve: %s\n", hk_error_message());
            goto done;
        }
        if (bs > 1) {
            if (hk_bcsr_to_blocks(&A, bs, &B)) {
                fprintf(stderr, "hooke solve: %s\n", hk_error_message());
                goto done;
            }
            K = &B;
        }
    }
    const int64_t n = K->nbrows * K->bs;
    if (K->nbrows != K->nbcols) {
        fprintf(stderr, "hooke solve: %s is %lld x %lld; an eigenproblem needs a square matrix\n",
                gen ? gen : mtx, (long long)(K->nbrows * K->bs), (long long)(K->nbcols * K->bs));
        goto done;
    }
    if (mass && hk_mm_read_matrix(mass, &M)) {
        fprintf(stderr, "hooke solve: --mass: %s\n", hk_error_message());
        goto done;
    }
    if (mass && (M.nbrows != n || M.nbcols != n)) {
        fprintf(stderr,
                "hooke solve: --mass %s is %lld x %lld but K has %lld rows; give the mass matrix "
                "of the same dofs\n",
                mass, (long long)M.nbrows, (long long)M.nbcols, (long long)n);
        goto done;
    }
    if (coords_file) {
        free(coords);
        coords = NULL;
        int64_t rows = 0;
        if (hk_mm_read_array(coords_file, &rows, &dim, &coords)) {
            fprintf(stderr, "hooke solve: --coords: %s\n", hk_error_message());
            goto done;
        }
        if (rows != K->nbrows || dim != K->bs) {
            fprintf(stderr,
                    "hooke solve: --coords %s has %lld rows of %d coordinates but the matrix has "
                    "%lld nodes (block rows) of %d dofs; give one row per node with one column "
                    "per dof of the node (and --block-size)\n",
                    coords_file, (long long)rows, dim, (long long)K->nbrows, K->bs);
            goto done;
        }
    }
    const hk_nearnull nn = {.dim = coords ? dim : 0, .coords = coords};

    /* ---- solve ---- */
    if (hk_eigen_create(K, mass ? &M : NULL, coords ? &nn : NULL, o, &e)) {
        fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        goto done;
    }
    lambda = calloc((size_t)nev, sizeof *lambda);
    resid = calloc((size_t)nev, sizeof *resid);
    freq = calloc((size_t)nev, sizeof *freq);
    if (out) X = malloc((size_t)n * nev * sizeof *X);
    if (!lambda || !resid || !freq || (out && !X)) {
        fprintf(stderr, "hooke solve: out of memory for %d eigenpairs of %lld unknowns\n", nev,
                (long long)n);
        goto done;
    }
    hk_eigen_result res;
    if (hk_eigen_solve(e, nev, lambda, X, resid, &res)) {
        fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        goto done;
    }
    for (int j = 0; j < nev; j++)
        freq[j] = frequency(lambda[j]);
    if (json) {
        printf("{\n  \"matrix\": ");
        json_string(gen ? gen : mtx);
        printf(",\n  \"mass\": ");
        if (mass)
            json_string(mass);
        else
            printf("null");
        printf(",\n  \"unknowns\": %lld,\n  \"nev\": %d,\n  \"block\": %d,\n", (long long)n, nev,
               res.block);
        printf("  \"converged\": %d,\n  \"at_floor\": %d,\n  \"iterations\": %d,\n"
               "  \"restarts\": %d,\n  \"pc_applies\": %lld,\n  \"spmv_columns\": %lld,\n"
               "  \"shift\": %.17g,\n  \"setup_seconds\": %.6f,\n  \"solve_seconds\": %.6f,\n",
               res.converged, res.at_floor, res.iterations, res.restarts, res.pc_applies,
               res.spmv_columns, res.shift, res.setup_seconds, res.solve_seconds);
        json_array("eigenvalues", lambda, nev, 0);
        json_array("frequencies_hz", freq, nev, 0);
        json_array("residuals", resid, nev, 1);
        printf("}\n");
    } else {
        printf("matrix: %s, %lld unknowns, %lld nonzeros, blocks of %d\n", gen ? gen : mtx,
               (long long)n, (long long)(K->rowptr[K->nbrows] * K->bs * K->bs), K->bs);
        printf("mass: %s\n", mass ? mass : "identity");
        if (coords)
            printf("coordinates: %lld nodes in %dD from %s\n", (long long)K->nbrows, dim,
                   coords_file ? coords_file : "the generated grid");
        printf("eigensolver: ");
        hk_eigen_describe(e, stdout);
        printf("converged: %d of %d pairs in %d iterations (block %d, %d restarts, %lld "
               "preconditioner applications)\n",
               res.converged, nev, res.iterations, res.block, res.restarts, res.pc_applies);
        printf("   #  eigenvalue                %s  residual\n",
               mass ? "frequency (Hz)          " : "");
        for (int j = 0; j < nev; j++) {
            printf("%4d  %-24.16e  ", j + 1, lambda[j]);
            if (mass) printf("%-24.16e  ", freq[j]);
            printf("%.3e\n", resid[j]);
        }
        printf("setup: %.4f s, solve: %.4f s (%.4f ms per iteration)\n", res.setup_seconds,
               res.solve_seconds, res.iterations ? 1e3 * res.solve_seconds / res.iterations : 0.0);
    }
    if (out && write_array(out, n, nev, X)) goto done;
    rc = res.converged == nev ? 0 : 1;
    if (rc)
        fprintf(stderr,
                "hooke solve: %d of %d eigenpairs converged after %d iterations%s (largest "
                "residual %.2e); raise eigen.maxit or use a stronger preconditioner\n",
                res.converged, nev, res.iterations,
                res.stagnated ? ", no search direction left" : "", res.max_residual);
done:
    hk_eigen_destroy(e);
    hk_options_destroy(o);
    hk_bcsr_free(&A);
    hk_bcsr_free(&B);
    hk_bcsr_free(&M);
    free(coords);
    free(lambda);
    free(resid);
    free(freq);
    free(X);
    return rc;
}
