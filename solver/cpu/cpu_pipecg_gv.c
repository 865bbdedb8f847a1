/* CPU backend: the fused vector step of pipelined CG with a general preconditioner
 * (pipecg_gv_step, semantics in hk_impl.h). One pass over the ten vectors instead of eight
 * axpby passes and a Gram pass; the seven inner products are summed over the fixed chunks, so
 * the result does not depend on the thread count. The scalars live in host memory here, and
 * the next step's coefficients come from the same rule as on the GPU (pipecg_gv.h). */
#include <omp.h>

#include "cpu_impl.h"
#include "pipecg_gv.h"

/* The step's entries [i0, i1) into the seven sums a. */
static inline void gv_entries(int64_t i0, int64_t i1, double alpha, double beta,
                              hk_vec *const *V, double a[7])
{
    double *x = V[0]->data, *r = V[1]->data, *u = V[2]->data, *w = V[3]->data;
    const double *m = V[4]->data, *nv = V[5]->data;
    double *z = V[6]->data, *q = V[7]->data, *s = V[8]->data, *p = V[9]->data;
    for (int64_t i = i0; i < i1; i++)
        hk_pipecg_gv_entry(i, alpha, beta, x, r, u, w, m, nv[i], z, q, s, p, a);
}

/* The step over the fixed chunks (of entries; with A, of A's block rows). With A (fp64 CSR or
 * BSR) each thread first computes n = A m for a group of its chunks, then the step on those
 * rows while they are in cache. */
static int gv_step(hk_mat *A, hk_vec *const *V, double *S)
{
    for (int j = 0; j < 10; j++)
        HK_CHECK(V[j]->prec == HK_FP64 && V[j]->n == V[0]->n, HK_ERR_ARG,
                 "pipelined CG runs its vectors in fp64, all of one length");
    if (S[HK_G_HALT] != 0) return 0;
    const double alpha = S[HK_G_ALPHA], beta = S[HK_G_BETA];
    const int64_t n = V[0]->n;
    double part[7][HK_CPU_CHUNKS];
    if (!A) {
#pragma omp parallel for schedule(static)
        for (int c = 0; c < HK_CPU_CHUNKS; c++) {
            double a[7] = {0, 0, 0, 0, 0, 0, 0};
            gv_entries(hk_cpu_chunk_begin(n, c), hk_cpu_chunk_begin(n, c + 1), alpha, beta, V, a);
            for (int j = 0; j < 7; j++)
                part[j][c] = a[j];
        }
    } else {
        const int G = hk_cpu_group_chunks(n);
        const double *m = V[4]->data;
        double *nv = V[5]->data;
#pragma omp parallel
        {
            const hk_cpu_row_part q = hk_cpu_row_part_of(A, n, omp_get_thread_num(),
                                                         omp_get_num_threads());
            for (int g = q.c0; g < q.c1; g += G) {
                const int g1 = g + G < q.c1 ? g + G : q.c1;
                int64_t b0, b1, i0, i1;
                hk_cpu_group_rows(A, n, g, g1, &b0, &b1);
                hk_cpu_spmv_rows(A, m, nv, b0, b1);
                for (int c = g; c < g1; c++) {
                    double a[7] = {0, 0, 0, 0, 0, 0, 0};
                    hk_cpu_spmv_chunk(A, n, c, &b0, &b1, &i0, &i1);
                    gv_entries(i0, i1, alpha, beta, V, a);
                    for (int j = 0; j < 7; j++)
                        part[j][c] = a[j];
                }
            }
        }
    }
    double d[7];
    for (int j = 0; j < 7; j++)
        d[j] = hk_cpu_chunk_sum(part[j]);
    hk_pipecg_gv_after_step(S, d);
    return 0;
}

int hk_cpu_pipecg_gv_step(hk_vec *const *V, double *S)
{
    return gv_step(NULL, V, S);
}

/* n = A m and the step, in one pass over the chunks where A has a row kernel (fp64 CSR, BSR;
 * the chunk sums are then over whole block rows, so the digits differ from the two calls' in
 * the last place), else the two calls. */
int hk_cpu_spmv_pipecg_gv_step(hk_mat *A, hk_vec *const *V, double *S)
{
    HK_CHECK(A->bdata, HK_ERR_ARG, "cpu SpMV: matrix was not built");
    HK_CHECK(V[4]->n == A->ncols && V[5]->n == A->nrows && A->nrows == A->ncols &&
                 A->prec == HK_FP64,
             HK_ERR_ARG, "spmv_pipecg_gv_step: m and n differ from the square fp64 matrix");
    if (!hk_cpu_spmv_has_rows(A)) {
        HK_CALL(hk_cpu_mat_spmv(A, V[4], V[5]));
        return gv_step(NULL, V, S);
    }
    return gv_step(A, V, S);
}
