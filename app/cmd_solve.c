/* hooke solve: solve a Matrix Market system (or a generated one) with any method,
 * preconditioner, format and backend of the library, and report iterations, the true
 * residual, the stop reason and the timings. Exit 0 only when the solve converged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "hooke/solver.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hooke solve A.mtx [--rhs b.mtx] [-o x.mtx] [--backend auto|cpu|cuda]\n"
            "                   [--block-size 1..6] [--coords xyz.mtx] [key=value ...]\n"
            "       hooke solve --generate KIND:N [options as above]\n"
            "       hooke solve K.mtx --eigen N [--mass M.mtx] [-o X.mtx] [--json] [options]\n\n"
            "Solves A x = b from x = 0 and prints the iterations, the true residual\n"
            "||b - A x|| / ||b|| (recomputed in fp64), the stop reason and the set-up and solve\n"
            "times. Exit status 0 only when the solve converged, 1 when it did not, 2 on bad\n"
            "input.\n\n"
            "  A.mtx               Matrix Market coordinate matrix (real/integer/pattern,\n"
            "                      general or symmetric)\n"
            "  --rhs b.mtx         right-hand side (Matrix Market array); without it\n"
            "                      b = A * ones and the max error of x against ones is printed\n"
            "  -o x.mtx            write the solution as a Matrix Market array\n"
            "  --backend NAME      auto (cuda when a device is present), cpu or cuda;\n"
            "                      same as backend=NAME\n"
            "  --block-size BS     group the scalar matrix into BS x BS blocks, 1 to 6 (2 for\n"
            "                      2D, 3 for 3D elasticity, 6 for shells; the block formats\n"
            "                      need them)\n"
            "  --coords xyz.mtx    node coordinates (Matrix Market array, one row per node =\n"
            "                      block row, 2 or 3 columns = the block size): pc=amg builds\n"
            "                      the rigid-body modes from them. --generate elasticity*\n"
            "                      passes its grid's own; a matrix file without --coords\n"
            "                      passes none (pc=amg then uses the translations alone)\n"
            "  --generate KIND:N   instead of a file: elasticity3d:N (N^3 hexes, bs 3),\n"
            "                      elasticity2d:N (N^2 quads, bs 2), poisson:N (N x N),\n"
            "                      poisson3d:N (N^3), convdiff:N (N x N, nonsymmetric),\n"
            "                      convdiff3d:N (N^3, nonsymmetric), recirc:N (N x N,\n"
            "                      recirculating flow, centred: not an M-matrix),\n"
            "                      porous3d:N (N^3, coefficient over 6 decades),\n"
            "                      circuit:N (N x N resistor network), convdiff-shuffled:N\n"
            "                      (convdiff:N with its rows in random order)\n"
            "  key=value           solver options, listed below; docs/solver.md has the details\n"
            "  --eigen N           instead of a solve: the N lowest eigenpairs of\n"
            "                      K x = lambda M x by LOBPCG (docs/modal.md): eigenvalues,\n"
            "                      frequencies sqrt(lambda)/(2 pi) in Hz with --mass,\n"
            "                      residuals, iterations; exit 0 when all converged\n"
            "  --mass M.mtx        with --eigen: the mass matrix (default the identity)\n"
            "  -o X.mtx            with --eigen: the eigenvectors as a Matrix Market array\n"
            "                      (N columns, M-orthonormal)\n"
            "  --json              with --eigen: the results as JSON on stdout\n\n"
            "example: hooke solve K.mtx --block-size 3 method=pipecg pc=poly "
            "pc.poly.degree=4 precision=mixed\n\n"
            "Under mpirun -np N (docs/parallel.md) rank 0 reads and partitions the matrix (METIS),\n"
            "every process solves its rows, rank 0 prints and writes x; pc=none, jacobi, bjacobi,\n"
            "poly and amg (with the coordinates of --coords or --generate) are distributed, the\n"
            "others (and --eigen, method=cholesky) refuse.\n\n");
    hk_solver_print_help(f);
    fprintf(f, "\n");
    hk_eigen_print_help(f);
}

int hk_cmd_solve(int argc, char **argv)
{
    const char *mtx = NULL, *rhs = NULL, *out = NULL, *backend = NULL, *gen = NULL;
    const char *coords_file = NULL;
    int bs = 1, rc = 2, dim = 0;
    double *coords = NULL;
    hk_options *o = NULL;
    hk_solver *s = NULL;
    hk_bcsr A = {0}, B = {0};
    double *b = NULL, *x = NULL, *one = NULL;
    /* an eigenproblem has its own path (app/cmd_solve_eigen.c) */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) break;
        if (!strcmp(argv[i], "--eigen") && hk_comm_size(hk_comm_world()) > 1) {
            if (hk_comm_rank(hk_comm_world()) == 0)
                fprintf(stderr, "hooke solve: --eigen runs on one process; start it without "
                                "mpirun\n");
            return 2;
        }
        if (!strcmp(argv[i], "--eigen")) return hk_cmd_solve_eigen(argc, argv);
    }
    if (hk_options_create(&o)) {
        fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int has_val = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            rc = 0;
            goto done;
        } else if (!strcmp(a, "--rhs") && has_val) {
            rhs = argv[++i];
        } else if (!strcmp(a, "-o") && has_val) {
            out = argv[++i];
        } else if (!strcmp(a, "--backend") && has_val) {
            backend = argv[++i];
        } else if (!strcmp(a, "--coords") && has_val) {
            coords_file = argv[++i];
        } else if (!strcmp(a, "--generate") && has_val) {
            gen = argv[++i];
        } else if (!strcmp(a, "--block-size") && has_val) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 6) {
                fprintf(stderr,
                        "hooke solve: --block-size '%s' must be 1 to 6 (2 for 2D, 3 for 3D "
                        "elasticity, 6 for shells)\n",
                        argv[i]);
                goto done;
            }
            bs = (int)v;
        } else if (a[0] == '-') {
            fprintf(stderr,
                    "hooke solve: unknown or incomplete option '%s'; the options are --rhs, -o, "
                    "--backend, --block-size, --coords, --generate, --help (hooke solve --help)\n",
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
                    "hooke solve: a second matrix file '%s' was given after '%s'; pass one "
                    "matrix (options are key=value)\n",
                    a, mtx);
            goto done;
        }
    }
    if (!mtx == !gen) {
        fprintf(stderr, mtx ? "hooke solve: give a matrix file or --generate, not both\n"
                            : "hooke solve: no matrix; give A.mtx or --generate KIND:N "
                              "(hooke solve --help)\n");
        goto done;
    }
    if (backend && hk_options_set(o, "backend", backend)) {
        fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        goto done;
    }
    if (hk_comm_size(hk_comm_world()) > 1) { /* mpirun: app/solve_mpi.c */
        rc = hk_cmd_solve_mpi(mtx, gen, rhs, coords_file, out, bs, o);
        goto done;
    }

    /* ---- the matrix ---- */
    const hk_bcsr *K = &A;
    if (gen) {
        if (hk_app_generate(gen, "hooke solve", &A, &coords, &dim)) goto done;
        if (bs != 1 && bs != A.bs)
            fprintf(stderr,
                    "hooke solve: note: --block-size %d ignored, the generated matrix "
                    "has blocks of %d\n",
                    bs, A.bs);
    } else {
        if (hk_mm_read_matrix(mtx, &A)) {
            fprintf(stderr, "hooke solve: %s\n", hk_error_message());
            goto done;
        }
        if (A.nbrows != A.nbcols) {
            fprintf(stderr,
                    "hooke solve: %s is %lld x %lld; a linear system needs a square "
                    "matrix\n",
                    mtx, (long long)A.nbrows, (long long)A.nbcols);
            goto done;
        }
        if (bs > 1) {
            if (hk_bcsr_to_blocks(&A, bs, &B)) {
                fprintf(stderr, "hooke solve: %s\n", hk_error_message());
                goto done;
            }
            hk_bcsr_free(&A); /* the blocks replace the scalar matrix */
            K = &B;
        }
    }
    const int64_t n = K->nbrows * K->bs;
    if (K->nbrows != K->nbcols) {
        fprintf(stderr, "hooke solve: %s is %lld x %lld; a linear system needs a square matrix\n",
                gen ? gen : mtx, (long long)(K->nbrows * K->bs), (long long)(K->nbcols * K->bs));
        goto done;
    }

    /* ---- the near-null space: node coordinates ---- */
    if (coords_file) {
        free(coords); /* the file's replace the generator's */
        coords = NULL;
        if (hk_solve_read_coords(coords_file, K, &coords, &dim)) goto done;
    }
    const hk_nearnull nn = {.dim = coords ? dim : 0, .coords = coords};

    /* ---- the right-hand side ---- */
    x = calloc((size_t)n, sizeof *x);
    if (rhs) {
        if (hk_solve_read_rhs(rhs, n, &b)) goto done;
    } else {
        b = malloc((size_t)n * sizeof *b);
        one = malloc((size_t)n * sizeof *one);
        if (!b || !one) {
            fprintf(stderr, "hooke solve: out of memory for %lld unknowns\n", (long long)n);
            goto done;
        }
        for (int64_t i = 0; i < n; i++)
            one[i] = 1.0;
        hk_bcsr_spmv(K, one, b);
    }
    if (!x) {
        fprintf(stderr, "hooke solve: out of memory for %lld unknowns\n", (long long)n);
        goto done;
    }

    /* ---- solve ---- */
    if (hk_solver_create_nearnull(K, &nn, o, &s)) {
        fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        goto done;
    }
    printf("matrix: %s, %lld unknowns, %lld nonzeros, blocks of %d\n", gen ? gen : mtx,
           (long long)n, (long long)(K->rowptr[K->nbrows] * K->bs * K->bs), K->bs);
    if (coords)
        printf("coordinates: %lld nodes in %dD from %s\n", (long long)K->nbrows, dim,
               coords_file ? coords_file : "the generated grid");
    printf("solver: ");
    hk_solver_describe(s, stdout);
    hk_result res;
    if (hk_solver_solve(s, b, x, &res)) {
        fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        goto done;
    }
    hk_solve_print_result(&res, x, n, one != NULL);
    if (out && (hk_app_make_parent_dirs(out) || hk_mm_write_vector(out, n, x))) {
        fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        goto done;
    }
    rc = hk_reason_converged(res.reason) ? 0 : 1;
    if (rc) {
        const char *tol = NULL;
        char hint[400];
        hk_options_get_string(o, "tol", &tol);
        hk_app_unconverged_hint(&res, tol ? strtod(tol, NULL) : 1e-8, "", hint, sizeof hint);
        fprintf(stderr, "hooke solve: not converged (%s) after %d iterations; %s\n",
                hk_reason_name(res.reason), res.iterations, hint);
    }
done:
    hk_solver_destroy(s);
    hk_options_destroy(o);
    hk_bcsr_free(&A);
    hk_bcsr_free(&B);
    free(b);
    free(x);
    free(one);
    free(coords);
    return rc;
}
