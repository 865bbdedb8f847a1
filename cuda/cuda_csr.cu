// CSR-adaptive SpMV (format=csr format.csr.kernel=adaptive, the default on cuda), in the style
// of Greathouse and Daga's CSR-Adaptive ("CSR-stream"): the rows are cut into row blocks of
// about C entries, one thread block each. A thread block loads all entries of its rows at
// once — several independent loads per thread, coalesced, whatever the row lengths —
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

/* Entries per thread PT (a row block has C = HK_CU_BLOCK * PT / 2 entries, the shared tile
 * 2C) and whether they are loaded four at a time by 16-byte loads, per precision. Measured on
 * an H100 (bench spmv --paper, us per product against PT 8 scalar loads, the earlier kernel):
 * fp64 with PT 12 hex-1M 386 -> 382, tet 146 -> 141, tri 98 -> 91, trirand 98 -> 93.6, quad
 * 46 -> 43 (vector loads lost on the 3D matrices: hex-1M 389-399); fp32 with PT 16 and vector
 * loads hex-1M 337 -> 273, tet 127 -> 104, tri 83 -> 64, trirand 84 -> 67, quad 41 -> 33,
 * hex6 327 -> 289. */
template <typename T> struct csr_tile;
template <> struct csr_tile<double> {
    static constexpr int PT = 12;
    static constexpr bool VEC = false;
};
template <> struct csr_tile<float> {
    static constexpr int PT = 16;
    static constexpr bool VEC = true;
};

__global__ void k_csr_rblocks(int64_t n, int64_t nb, int64_t C, const int64_t *__restrict__ rowptr,
                              int32_t *__restrict__ rb)
{
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b <= nb;
         b += (int64_t)gridDim.x * blockDim.x) {
        if (b == nb) {
            rb[nb] = (int32_t)n;
            continue;
        }
        rb[b] = (int32_t)hk_cu_lower_bound(rowptr, 0, n, b * C);
    }
}

int hk_cu_csr_blocks(hk_cu_mat *m, int64_t n, int64_t nnz, int fp32)
{
    const int64_t C = HK_CU_BLOCK * (fp32 ? csr_tile<float>::PT : csr_tile<double>::PT) / 2;
    int64_t nb = (nnz + C - 1) / C;
    if (n > 0 && nb < 1) nb = 1; /* empty rows are written (0) by a block too */
    m->nrblocks = nb;
    HK_CALL(hk_cu_malloc((void **)&m->rblock, (size_t)(nb + 1) * 4));
    k_csr_rblocks<<<hk_cu_grid(nb + 1), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, nb, C, m->rowptr,
                                                                        m->rblock);
    HK_CU_LAUNCHED();
    return 0;
}

/* Each row of [r0, r1) summed from the products in the shared tile (entry e at e - e0) by a
 * group of lanes: the largest power of two with all rows covered in one round, <= 32. */
template <typename T>
__device__ __forceinline__ void
csr_rows_from_tile(const double *prod, int t, int64_t r0, int64_t r1, int64_t e0,
                   const int64_t *__restrict__ rowptr, T *__restrict__ y)
{
    const int64_t R = r1 - r0;
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
}

/* Four consecutive entries by 16-byte loads (e a multiple of 4, all four inside the arrays). */
__device__ __forceinline__ void load4(const float *v, float (&o)[4])
{
    const float4 a = __ldcs((const float4 *)v);
    o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = a.w;
}
__device__ __forceinline__ void load4(const double *v, double (&o)[4])
{
    const double2 a = __ldcs((const double2 *)v), b = __ldcs((const double2 *)v + 1);
    o[0] = a.x, o[1] = a.y, o[2] = b.x, o[3] = b.y;
}

template <typename T>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_csr_adaptive(const int32_t *__restrict__ rb, const int64_t *__restrict__ rowptr,
                   const int32_t *__restrict__ col, const T *__restrict__ val,
                   const T *__restrict__ x, T *__restrict__ y, int64_t nnz)
{
    constexpr int PT = csr_tile<T>::PT;
    constexpr bool VEC = csr_tile<T>::VEC;
    __shared__ double prod[HK_CU_BLOCK * PT];
    const int t = threadIdx.x;
    const int64_t r0 = rb[blockIdx.x], r1 = rb[blockIdx.x + 1];
    if (r0 >= r1) return; /* the rows of this entry range started in an earlier block */
    const int64_t e0 = rowptr[r0], ne = rowptr[r1] - e0;
    if (VEC && ne + 3 <= HK_CU_BLOCK * PT) {
        /* quads of entries from e0 rounded down to a multiple of 4 */
        const int64_t a0 = e0 & ~(int64_t)3;
        const int nq = (int)((e0 + ne - a0 + 3) >> 2);
#pragma unroll
        for (int u = 0; u < PT / 4; u++) {
            const int q = t + u * HK_CU_BLOCK;
            if (q < nq) {
                const int64_t e = a0 + 4 * (int64_t)q;
                int32_t c[4];
                T v[4];
                if (e + 4 <= nnz) {
                    const int4 ci = __ldcs((const int4 *)(col + e));
                    c[0] = ci.x, c[1] = ci.y, c[2] = ci.z, c[3] = ci.w;
                    load4(val + e, v);
                } else {
#pragma unroll
                    for (int m = 0; m < 4; m++) {
                        c[m] = e + m < nnz ? col[e + m] : 0;
                        v[m] = e + m < nnz ? val[e + m] : (T)0;
                    }
                }
#pragma unroll
                for (int m = 0; m < 4; m++) {
                    const int64_t i = e + m - e0;
                    if (i >= 0 && i < ne) prod[i] = (double)v[m] * (double)__ldg(x + c[m]);
                }
            }
        }
        __syncthreads();
        csr_rows_from_tile<T>(prod, t, r0, r1, e0, rowptr, y);
    } else if (!VEC && ne <= HK_CU_BLOCK * PT) {
        int32_t c[PT];
        T v[PT];
#pragma unroll
        for (int u = 0; u < PT; u++) {
            const int i = t + u * HK_CU_BLOCK;
            c[u] = i < ne ? col[e0 + i] : 0;
            v[u] = i < ne ? val[e0 + i] : (T)0;
        }
#pragma unroll
        for (int u = 0; u < PT; u++) {
            const int i = t + u * HK_CU_BLOCK;
            if (i < ne) prod[i] = (double)v[u] * (double)x[c[u]];
        }
        __syncthreads();
        csr_rows_from_tile<T>(prod, t, r0, r1, e0, rowptr, y);
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
    const unsigned nb = (unsigned)m->nrblocks;
    if (A->prec == HK_FP64)
        k_csr_adaptive<double><<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            m->rblock, m->rowptr, m->colind, (const double *)m->val, (const double *)x, (double *)y,
            A->stored);
    else
        k_csr_adaptive<float><<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            m->rblock, m->rowptr, m->colind, (const float *)m->val, (const float *)x, (float *)y,
            A->stored);
    HK_CU_LAUNCHED();
    return 0;
}
