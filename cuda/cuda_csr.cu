// The two CSR kernels of cuda's own (besides the row-pointer kernel's thread and warp variants
// in cuda_spmv.cu): format.csr.kernel=vector and adaptive.
//
// Vector (k_csr_quads, the default): a group of G lanes per row,
// G a power of two up to 32 sized so that one pass covers a mean row. Each pass a lane loads U
// of the aligned quads of four entries that cover the row by 16-byte loads (index and value),
// multiplies the entries of its row among them in order, and the group sums by a shuffle tree.
// Many rows are in flight per SM, with no shared memory and no barrier.
//
// Adaptive (k_csr_adaptive; for rows of very different lengths, not measured against vector
// there), in the style of Greathouse and Daga's CSR-Adaptive ("CSR-stream"): the rows are cut into row blocks of
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
//
#include <stdint.h>
#include <stdlib.h>

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

/* Quads per lane per pass of k_csr_quads: 96 bytes of indices and values in flight per lane in
 * both precisions. */
template <typename T> struct csr_quads;
template <> struct csr_quads<double> {
    static constexpr int U = 2;
};
template <> struct csr_quads<float> {
    static constexpr int U = 3;
};

int hk_cu_csr_group(int64_t n, int64_t nnz, int fp32)
{
    /* the smallest power of two whose passes of U quads cover the quads of a mean row (its
     * entries / 4 plus 0.75 for a start inside a quad) */
    const double quads = n > 0 ? (double)nnz / (double)n / 4 + 0.75 : 1;
    const int U = fp32 ? csr_quads<float>::U : csr_quads<double>::U;
    int G = 1;
    while (G < 32 && G * U < quads)
        G *= 2;
    return G;
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

/* Rows [r0, r1) of a block whose entries exceed the tile (a row longer than the tile): one warp
 * per row from global memory. */
template <typename T>
__device__ __forceinline__ void
csr_rows_by_warps(int t, int64_t r0, int64_t r1, const int64_t *__restrict__ rowptr,
                  const int32_t *__restrict__ col, const T *__restrict__ val,
                  const T *__restrict__ x, T *__restrict__ y)
{
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

/* Entries e to e + 3 (e a multiple of 4 below nnz) by 16-byte loads, or one by one at the end
 * of the arrays (0 past nnz). */
template <typename T>
__device__ __forceinline__ void load_quad(const int32_t *__restrict__ col,
                                          const T *__restrict__ val, int64_t e, int64_t nnz,
                                          int32_t (&c)[4], T (&v)[4])
{
    if (e + 4 <= nnz) {
        const int4 ci = __ldcs((const int4 *)(col + e));
        c[0] = ci.x, c[1] = ci.y, c[2] = ci.z, c[3] = ci.w;
        load4(val + e, v);
    } else {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            c[k] = e + k < nnz ? col[e + k] : 0;
            v[k] = e + k < nnz ? val[e + k] : (T)0;
        }
    }
}

/* One row block per thread block, its products in the shared tile. */
template <typename T>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_csr_adaptive(const int32_t *__restrict__ rb, const int64_t *__restrict__ rowptr,
                   const int32_t *__restrict__ col, const T *__restrict__ val,
                   const T *__restrict__ x, T *__restrict__ y, int64_t nnz)
{
    constexpr int PT = csr_tile<T>::PT, tile = HK_CU_BLOCK * PT;
    constexpr bool VEC = csr_tile<T>::VEC;
    __shared__ double prod[tile];
    const int t = threadIdx.x;
    const int64_t r0 = rb[blockIdx.x], r1 = rb[blockIdx.x + 1];
    if (r0 >= r1) return; /* the rows of this entry range started in an earlier block */
    const int64_t e0 = rowptr[r0], ne = rowptr[r1] - e0;
    if (VEC && ne + 3 <= tile) {
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
                load_quad(col, val, e, nnz, c, v);
#pragma unroll
                for (int m = 0; m < 4; m++) {
                    const int64_t i = e + m - e0;
                    if (i >= 0 && i < ne) prod[i] = (double)v[m] * (double)__ldg(x + c[m]);
                }
            }
        }
        __syncthreads();
        csr_rows_from_tile<T>(prod, t, r0, r1, e0, rowptr, y);
    } else if (!VEC && ne <= tile) {
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
        csr_rows_by_warps<T>(t, r0, r1, rowptr, col, val, x, y);
    }
}

/* A group of G lanes per row (G a power of two, at most 32): each pass a lane loads U of the
 * aligned quads covering the row by 16-byte loads, then multiplies the entries of the row among
 * them; the lane sums in order, the group by a shuffle tree. */
template <typename T>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_csr_quads(int64_t n, int G, const int64_t *__restrict__ rowptr,
                const int32_t *__restrict__ col, const T *__restrict__ val, const T *__restrict__ x,
                T *__restrict__ y, int64_t nnz)
{
    constexpr int U = csr_quads<T>::U;
    const int64_t r = (blockIdx.x * (int64_t)HK_CU_BLOCK + threadIdx.x) / G;
    const int lane = threadIdx.x & (G - 1);
    /* no early exit: every lane of the warp reaches the shuffles */
    const bool live = r < n;
    const int64_t a = live ? rowptr[r] : 0, e = live ? rowptr[r + 1] : 0;
    /* quad j of the row holds entries a0 + 4j + k, at 4j + k - lead from the row's start */
    const int64_t a0 = a & ~(int64_t)3;
    const int lead = (int)(a - a0), end = lead + (int)(e - a);
    double s = 0;
    for (int j = lane; 4 * j < end; j += G * U) {
        int32_t c[U][4];
        T v[U][4];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int jj = j + u * G;
            if (4 * jj < end) {
                load_quad(col, val, a0 + 4 * (int64_t)jj, nnz, c[u], v[u]);
            } else {
#pragma unroll
                for (int k = 0; k < 4; k++)
                    c[u][k] = 0, v[u][k] = 0;
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int i = 4 * (j + u * G) + k;
                if (i >= lead && i < end) s += (double)v[u][k] * (double)__ldg(x + c[u][k]);
            }
    }
    for (int o = G >> 1; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o, G);
    if (live && lane == 0) y[r] = (T)s;
}

template <typename T> static void csr_launch(const hk_cu_mat *m, const T *x, T *y, int64_t nnz)
{
    if (m->csr_kernel == HK_CSR_VECTOR) {
        const int64_t nblk = (m->nbrows * m->tpr + HK_CU_BLOCK - 1) / HK_CU_BLOCK;
        if (nblk > 0)
            k_csr_quads<T><<<(unsigned)nblk, HK_CU_BLOCK, 0, hk_cu.stream>>>(
                m->nbrows, m->tpr, m->rowptr, m->colind, (const T *)m->val, x, y, nnz);
    } else if (m->nrblocks > 0)
        k_csr_adaptive<T><<<(unsigned)m->nrblocks, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            m->rblock, m->rowptr, m->colind, (const T *)m->val, x, y, nnz);
}

int hk_cu_csr_spmv(const hk_mat *A, const void *x, void *y)
{
    const hk_cu_mat *m = (const hk_cu_mat *)A->bdata;
    if (A->prec == HK_FP64)
        csr_launch<double>(m, (const double *)x, (double *)y, A->stored);
    else
        csr_launch<float>(m, (const float *)x, (float *)y, A->stored);
    HK_CU_LAUNCHED();
    return 0;
}
