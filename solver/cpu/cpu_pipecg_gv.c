/* CPU backend: the fused vector step of pipelined CG with a general preconditioner
 * (pipecg_gv_step, semantics in hk_impl.h). One pass over the ten vectors instead of eight
 * axpby passes and a Gram pass; the seven inner products are summed over the fixed chunks, so
 * the result does not depend on the thread count. The scalars live in host memory here, and
 * the next step's coefficients come from the same rule as on the GPU (pipecg_gv.h). */
#include "cpu_impl.h"
#include "pipecg_gv.h"

int hk_cpu_pipecg_gv_step(hk_vec *const *V, double *S)
{
    for (int j = 0; j < 10; j++)
        HK_CHECK(V[j]->prec == HK_FP64 && V[j]->n == V[0]->n, HK_ERR_ARG,
                 "pipelined CG runs its vectors in fp64, all of one length");
    if (S[HK_G_HALT] != 0) return 0;
    const double alpha = S[HK_G_ALPHA], beta = S[HK_G_BETA];
    const int64_t n = V[0]->n;
    double *x = V[0]->data, *r = V[1]->data, *u = V[2]->data, *w = V[3]->data;
    const double *m = V[4]->data, *nv = V[5]->data;
    double *z = V[6]->data, *q = V[7]->data, *s = V[8]->data, *p = V[9]->data;
    double part[7][HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        double a[7] = {0, 0, 0, 0, 0, 0, 0};
        for (int64_t i = hk_cpu_chunk_begin(n, c); i < hk_cpu_chunk_begin(n, c + 1); i++)
            hk_pipecg_gv_entry(i, alpha, beta, x, r, u, w, m, nv[i], z, q, s, p, a);
        for (int j = 0; j < 7; j++)
            part[j][c] = a[j];
    }
    double d[7];
    for (int j = 0; j < 7; j++)
        d[j] = hk_cpu_chunk_sum(part[j]);
    hk_pipecg_gv_after_step(S, d);
    return 0;
}
