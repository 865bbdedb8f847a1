/* CPU reference of the AMG smoother op amg_l1_diag (contract in solver/hk_impl.h): the
 * l1-Jacobi scaling 1/(a_ii + sum_{j != i} |a_ij|) of every scalar row. One block row per
 * iteration, each row summed in column order; the first bad row is a min-reduction, so the
 * result is the same for any thread count. cuda/cuda_amg.cu follows the same arithmetic. */
#include <math.h>
#include <stdint.h>

#include "cpu_impl.h"

int hk_cpu_amg_l1_diag(const hk_bmat *A, hk_vec *out, int64_t *bad)
{
    *bad = -1;
    const int br = A->br, bc = A->bc;
    HK_CHECK(br == bc, HK_ERR_ARG, "amg_l1_diag: blocks are %d x %d; it needs square blocks", br,
             bc);
    const int64_t nb = A->nbrows, n = nb * br;
    HK_CHECK(out->prec == HK_FP64 && out->n == n, HK_ERR_ARG,
             "amg_l1_diag: the output must be an fp64 vector of %lld entries (got %lld)",
             (long long)n, (long long)out->n);
    double *o = out->data;
    int64_t first = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : first)
    for (int64_t i = 0; i < n; i++) {
        const int64_t bi = i / br;
        const int r = (int)(i % br);
        double diag = 0, off = 0;
        int nonzero = 0;
        for (int64_t q = A->rowptr[bi]; q < A->rowptr[bi + 1]; q++)
            for (int c = 0; c < bc; c++) {
                const double v = A->val[((size_t)q * br + r) * bc + c];
                if (v != 0) nonzero = 1;
                if ((int64_t)A->colind[q] * bc + c == i)
                    diag = v;
                else
                    off += fabs(v);
            }
        const double s = diag + off;
        double v = 0;
        if (nonzero) {
            if (s > 0 && isfinite(s)) v = 1 / s;
            if (!(s > 0) || !isfinite(s) || !isfinite(v)) {
                v = 0;
                if (i < first) first = i;
            }
        }
        o[i] = v;
    }
    *bad = first == INT64_MAX ? -1 : first;
    return 0;
}
