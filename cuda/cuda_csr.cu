// CSR-adaptive SpMV (format=csr format.csr.kernel=adaptive, the default on cuda), in the style
// of Greathouse and Daga's CSR-Adaptive ("CSR-stream"): the rows are cut into row blocks of
// about HK_CSR_BLOCK_NNZ entries, one thread block each. A thread block loads all entries of
// its rows at once — eight independent loads per thread, coalesced, whatever the row lengths —
// multiplies them by x into shared memory, then sums each row there with a group of lanes
// sized to the number of rows in the block. This keeps the loads of a warp contiguous (unlike
// row per thread) and the lanes busy (unlike a warp per short row).
//
// Row block b holds the rows that start in entries [b*C, (b+1)*C) (a lower bound on rowptr, so
// the split is computed in parallel on the device and needs no scan); its entries may run on
// by up to one row past (b+1)*C. A block whose entries exceed the shared tile (a row longer
// than about C) sums its rows one warp per row straight from global memory. Each row is summed
// by one group in a fixed order: no atomics, the same digits on every run.
#include <stdint.h>

#include "cuda_impl.cuh"

#define HK_CSR_BLOCK_NNZ 1024                         /* C: entries whose rows a block takes */
#define HK_CSR_PER_THREAD 8                           /* loads in flight per thread */
#define HK_CSR_TILE (HK_CU_BLOCK * HK_CSR_PER_THREAD) /* shared tile: 2C entries */

__global__ void k_csr_rblocks(int64_t n, int64_t nb, const int64_t *__restrict__ rowptr,
                              int32_t *__restrict__ rb)
{
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b <= nb;
         b += (int64_t)gridDim.x * blockDim.x) {
        if (b == nb) {
            rb[nb] = (int32_t)n;
            continue;
        }
        int64_t lo = 0, hi = n;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (rowptr[mid] < b * HK_CSR_BLOCK_NNZ)
                lo = mid + 1;
            else
                hi = mid;
        }
        rb[b] = (int32_t)lo;
    }
}

int hk_cu_csr_blocks(hk_cu_mat *m, int64_t n, int64_t nnz)
{
    int64_t nb = (nnz + HK_CSR_BLOCK_NNZ - 1) / HK_CSR_BLOCK_NNZ;
    if (n > 0 && nb < 1) nb = 1; /* empty rows are written (0) by a block too */
    m->nrblocks = nb;
    HK_CALL(hk_cu_malloc((void **)&m->rblock, (size_t)(nb + 1) * 4));
    k_csr_rblocks<<<hk_cu_grid(nb + 1), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, nb, m->rowptr,
                                                                        m->rblock);
    HK_CU_LAUNCHED();
    return 0;
}

template <typename T>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_csr_adaptive(const int32_t *__restrict__ rb, const int64_t *__restrict__ rowptr,
                   const int32_t *__restrict__ col, const T *__restrict__ val,
                   const T *__restrict__ x, T *__restrict__ y)
{
    __shared__ double prod[HK_CSR_TILE];
    const int t = threadIdx.x;
    const int64_t r0 = rb[blockIdx.x], r1 = rb[blockIdx.x + 1];
    if (r0 >= r1) return; /* the rows of this entry range started in an earlier block */
    const int64_t e0 = rowptr[r0], ne = rowptr[r1] - e0;
    const int64_t R = r1 - r0;
    if (ne <= HK_CSR_TILE) {
        int32_t c[HK_CSR_PER_THREAD];
        T v[HK_CSR_PER_THREAD];
#pragma unroll
        for (int u = 0; u < HK_CSR_PER_THREAD; u++) {
            const int i = t + u * HK_CU_BLOCK;
            c[u] = i < ne ? col[e0 + i] : 0;
            v[u] = i < ne ? val[e0 + i] : (T)0;
        }
#pragma unroll
        for (int u = 0; u < HK_CSR_PER_THREAD; u++) {
            const int i = t + u * HK_CU_BLOCK;
            if (i < ne) prod[i] = (double)v[u] * (double)x[c[u]];
        }
        __syncthreads();
        /* lanes per row: the largest power of two with all rows covered in one round, <= 32 */
        int G = 32;
        while (G > 1 && (int64_t)(HK_CU_BLOCK / G) < R)
            G >>= 1;
        const int ngroups = HK_CU_BLOCK / G, gi = t / G, lane = t & (G - 1);
        for (int64_t base = 0; base < R; base += ngroups) { /* uniform across the block */
            const int64_t r = base + gi;
            double s = 0;
            if (r < R) {
                const int64_t a = rowptr[r0 + r] - e0, e = rowptr[r0 + r + 1] - e0;
                for (int64_t i = a + lane; i < e; i += G)
                    s += prod[i];
            }
            for (int o = G >> 1; o > 0; o >>= 1)
                s += __shfl_down_sync(0xffffffffu, s, o, G);
            if (r < R && lane == 0) y[r0 + r] = (T)s;
        }
    } else {
        /* a row longer than the tile: one warp per row from global memory */
        const int warp = t >> 5, lane = t & 31;
        for (int64_t r = r0 + warp; r < r1; r += HK_CU_BLOCK / 32) {
            double s = 0;
            const int64_t e = rowptr[r + 1];
            for (int64_t i = rowptr[r] + lane; i < e; i += 32)
                s += (double)val[i] * (double)x[col[i]];
            for (int o = 16; o > 0; o >>= 1)
                s += __shfl_down_sync(0xffffffffu, s, o);
            if (lane == 0) y[r] = (T)s;
        }
    }
}

int hk_cu_csr_adaptive_spmv(const hk_mat *A, const void *x, void *y)
{
    const hk_cu_mat *m = (const hk_cu_mat *)A->bdata;
    if (m->nrblocks <= 0) return 0;
    if (A->prec == HK_FP64)
        k_csr_adaptive<double><<<(unsigned)m->nrblocks, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            m->rblock, m->rowptr, m->colind, (const double *)m->val, (const double *)x,
            (double *)y);
    else
        k_csr_adaptive<float><<<(unsigned)m->nrblocks, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            m->rblock, m->rowptr, m->colind, (const float *)m->val, (const float *)x, (float *)y);
    HK_CU_LAUNCHED();
    return 0;
}
