// The AMG smoother op amg_l1_diag on the device (contract in solver/hk_impl.h; CPU reference
// solver/cpu/cpu_amg.c, same arithmetic): one thread per scalar row sums its row in column
// order. The first bad row is an integer atomicMin, exact and order-independent.
#include <math.h>

#include "cuda_impl.cuh"

__global__ void k_amg_l1_diag(int64_t n, int br, const int64_t *__restrict__ rowptr,
                              const int32_t *__restrict__ colind, const double *__restrict__ val,
                              double *__restrict__ out, unsigned long long *first)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t bi = i / br;
        const int r = (int)(i % br);
        double diag = 0, off = 0;
        int nonzero = 0;
        for (int64_t q = rowptr[bi]; q < rowptr[bi + 1]; q++)
            for (int c = 0; c < br; c++) {
                const double v = val[((size_t)q * br + r) * br + c];
                if (v != 0) nonzero = 1;
                if ((int64_t)colind[q] * br + c == i)
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
                atomicMin(first, (unsigned long long)i);
            }
        }
        out[i] = v;
    }
}

int hk_cu_amg_l1_diag(const hk_bmat *A, hk_vec *out, int64_t *bad)
{
    *bad = -1;
    const int br = A->br;
    HK_CHECK(A->br == A->bc, HK_ERR_ARG, "amg_l1_diag: blocks are %d x %d; it needs square blocks",
             A->br, A->bc);
    const int64_t n = A->nbrows * br;
    HK_CHECK(out->prec == HK_FP64 && out->n == n, HK_ERR_ARG,
             "amg_l1_diag: the output must be an fp64 vector of %lld entries (got %lld)",
             (long long)n, (long long)out->n);
    if (!n) return 0;
    unsigned long long *dfirst = NULL;
    int ierr = 0;
    HK_TRY(hk_cu_first_row_alloc(&dfirst));
    k_amg_l1_diag<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
        n, br, A->rowptr, A->colind, A->val, (double *)out->data, dfirst);
    HK_CU_TRY(cudaGetLastError());
    HK_TRY(hk_cu_first_row_read(dfirst, bad));
fail:
    cudaFree(dfirst);
    return ierr;
}

// The start vector of the spectral estimate (amg_start_vector; CPU: solver/cpu/cpu_amg.c):
// v_i = 0.5 + (hk_hash32(i) & 0xffff) / 65536, built where it is used instead of uploaded.
__global__ void k_amg_start_vector(int64_t n, int fp32, void *v)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const double x = 0.5 + (double)(hk_hash32((uint32_t)i) & 0xffffu) / 65536.0;
        if (fp32)
            ((float *)v)[i] = (float)x;
        else
            ((double *)v)[i] = x;
    }
}

int hk_cu_amg_start_vector(hk_vec *v)
{
    if (v->n == 0) return 0;
    k_amg_start_vector<<<hk_cu_grid(v->n), HK_CU_BLOCK, 0, hk_cu.stream>>>(v->n, v->prec == HK_FP32,
                                                                           v->data);
    HK_CU(cudaGetLastError());
    return 0;
}
