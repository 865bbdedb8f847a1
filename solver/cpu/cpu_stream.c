/* The host's memory bandwidth, measured the way STREAM's copy does, so the CPU kernels can be
 * judged against it in the same run (hooke bench cg). */
#include <omp.h>
#include <stdlib.h>

#include "cpu_impl.h"

int hk_cpu_copy_bandwidth(size_t bytes, int reps, double *gbs)
{
    const int64_t n = (int64_t)(bytes / sizeof(double));
    HK_CHECK(n > 0 && reps > 0, HK_ERR_ARG, "hk_cpu_copy_bandwidth: %zu bytes, %d repetitions",
             bytes, reps);
    double *a = NULL, *b = NULL;
    int ierr;
    HK_TRY(hk_malloc((size_t)n * sizeof *a, &a));
    HK_TRY(hk_malloc((size_t)n * sizeof *b, &b));
    /* first touch by the threads that copy them later (same static schedule): on a NUMA host
     * each thread's pages sit on its own node */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        a[i] = 1.0 + (double)(i & 7);
        b[i] = 0.0;
    }
    double best = 1e300;
    for (int r = 0; r <= reps; r++) { /* r = 0: warm-up */
        const double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++)
            b[i] = a[i];
        const double t = omp_get_wtime() - t0;
        if (r > 0 && t < best) best = t;
    }
    /* read + write, as STREAM counts it (a write-allocate read is not counted) */
    *gbs = 2.0 * (double)n * sizeof(double) / best / 1e9;
    ierr = b[n / 2] == a[n / 2] ? 0 : hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                                                   "hk_cpu_copy_bandwidth: the copy is wrong");
fail:
    free(a);
    free(b);
    return ierr;
}
