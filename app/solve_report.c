/* The lines hooke solve prints after a solve, on one process or several (app/cmd_solve.c,
 * app/solve_mpi.c). */
#include <stdio.h>

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
