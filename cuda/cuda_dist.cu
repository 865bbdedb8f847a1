// The gather of the distributed operator's halo (vec_gather, hk_impl.h; solver/dist/dist.c): the
// owned entries a neighbour needs packed into the send buffer, the boundary rows' owned columns
// into the extended vector, on the context's stream. One thread per scalar entry.
#include "cuda_impl.cuh"

template <typename T>
__global__ void k_gather(int64_t n, int bs, const int32_t *__restrict__ idx,
                         const T *__restrict__ x, T *__restrict__ y)
{
    const int64_t m = n * bs;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < m;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = e / bs;
        y[e] = x[(int64_t)idx[i] * bs + (e - i * bs)];
    }
}

int hk_cu_vec_gather(hk_vec *y, const hk_vec *x, const int32_t *idx, int64_t n, int bs)
{
    HK_CHECK(x->prec == y->prec && y->n >= n * bs && bs >= 1, HK_ERR_ARG,
             "vec_gather: %lld blocks of %d into a vector of %lld entries (precisions %s)",
             (long long)n, bs, (long long)y->n, x->prec == y->prec ? "equal" : "differ");
    if (n == 0) return 0;
    const unsigned g = hk_cu_grid(n * bs);
    if (x->prec == HK_FP64)
        k_gather<double><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(n, bs, idx, (const double *)x->data,
                                                              (double *)y->data);
    else
        k_gather<float><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(n, bs, idx, (const float *)x->data,
                                                             (float *)y->data);
    HK_CU_LAUNCHED();
    return 0;
}
