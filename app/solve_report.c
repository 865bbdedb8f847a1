/* What hooke solve shares on one process or several (app/cmd_solve.c, app/solve_mpi.c): the
 * --coords reader and the lines printed after a solve. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

void hk_solve_print_result(const hk_result *res, const double *x, int64_t n, int ones)
{
    printf("reason: %s\n", hk_reason_name(res->reason));
    printf("iterations: %d\n", res->iterations);
    printf("true residual: %.3e (||b - A x|| / ||b||, fp64)\n", res->true_residual);
    if (res->note[0]) printf("note: %s\n", res->note);
    if (ones) {
        double e = 0;
        for (int64_t i = 0; i < n; i++) {
            double d = x[i] - 1.0;
            d = d < 0 ? -d : d;
            if (!(d <= e)) e = d;
        }
        printf("max error vs ones: %.3e\n", e);
    }
    printf("setup: %.4f s (backend start %.4f, upload %.4f, check %.4f, format %.4f, "
           "preconditioner %.4f), solve: %.4f s (%.4f ms per iteration)\n",
           res->setup_seconds, res->setup_start_seconds, res->setup_upload_seconds,
           res->setup_check_seconds, res->setup_format_seconds, res->setup_pc_seconds,
           res->solve_seconds, res->iterations ? 1e3 * res->solve_seconds / res->iterations : 0.0);
}

/* The node coordinates of --coords FILE for the matrix K: one row per node (block row), one
 * column per dof of the node; the message on stderr and non-zero when they do not fit. */
int hk_solve_read_coords(const char *file, const hk_bcsr *K, double **coords, int *dim)
{
    const int64_t n = K->nbrows * K->bs;
    int64_t rows = 0;
    *coords = NULL;
    if (hk_mm_read_array(file, &rows, dim, coords)) {
        fprintf(stderr, "hooke solve: --coords: %s\n", hk_error_message());
        return 1;
    }
    if (*dim != 2 && *dim != 3)
        fprintf(stderr,
                "hooke solve: --coords %s has %d columns; give 2 (2D) or 3 (3D) coordinates "
                "per node\n",
                file, *dim);
    else if (K->bs == 1 && *dim > 1 && rows * *dim == n)
        fprintf(stderr,
                "hooke solve: --coords %s gives %lld nodes in %dD but the matrix has scalar "
                "rows; pass --block-size %d so that each node is one block row\n",
                file, (long long)rows, *dim, *dim);
    else if (rows != K->nbrows || *dim != K->bs)
        fprintf(stderr,
                "hooke solve: --coords %s has %lld rows of %d coordinates but the matrix has "
                "%lld nodes (block rows) of %d dofs; give one row per node with one column "
                "per dof of the node\n",
                file, (long long)rows, *dim, (long long)K->nbrows, K->bs);
    else
        return 0;
    free(*coords);
    *coords = NULL;
    return 1;
}

/* The right-hand side of --rhs FILE for n rows; the message on stderr and non-zero when it
 * cannot be read or has another length. */
int hk_solve_read_rhs(const char *file, int64_t n, double **b)
{
    int64_t nb = 0;
    *b = NULL;
    if (hk_mm_read_vector(file, &nb, b)) {
        fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        return 1;
    }
    if (nb == n) return 0;
    fprintf(stderr,
            "hooke solve: the right-hand side %s has %lld entries but the matrix has %lld rows\n",
            file, (long long)nb, (long long)n);
    free(*b);
    *b = NULL;
    return 1;
}
