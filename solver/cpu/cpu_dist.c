/* CPU backend: the gather of the distributed operator's halo (vec_gather, hk_impl.h): the
 * owned entries a neighbour needs into the send buffer, the boundary rows' owned columns into
 * the extended vector. */
#include "cpu_impl.h"

int hk_cpu_vec_gather(hk_vec *y, const hk_vec *x, const int32_t *idx, int64_t n, int bs)
{
    HK_CHECK(x->prec == y->prec && y->n >= n * bs && bs >= 1, HK_ERR_ARG,
             "vec_gather: %lld blocks of %d into a vector of %lld entries (precisions %s)",
             (long long)n, bs, (long long)y->n, x->prec == y->prec ? "equal" : "differ");
    if (x->prec == HK_FP64) {
        const double *xs = x->data;
        double *ys = y->data;
#pragma omp parallel for schedule(static) if (n * bs > 50000)
        for (int64_t i = 0; i < n; i++)
            for (int r = 0; r < bs; r++)
                ys[i * bs + r] = xs[(int64_t)idx[i] * bs + r];
    } else {
        const float *xs = x->data;
        float *ys = y->data;
#pragma omp parallel for schedule(static) if (n * bs > 50000)
        for (int64_t i = 0; i < n; i++)
            for (int r = 0; r < bs; r++)
                ys[i * bs + r] = xs[(int64_t)idx[i] * bs + r];
    }
    return 0;
}
