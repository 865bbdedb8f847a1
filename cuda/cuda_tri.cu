// Sparse triangular solves on the device (ops tri_setup / tri_solve / tri_destroy; pc=ic0 and
// pc=ilu0 through solver/pc/trifactor.c, pc=mlilu with its host factors uploaded), four ways
// chosen by the factor's method (pc.tri; the default, cusparse, is chosen in trifactor.c).
//
// Set-up (tri_setup) from a factor already on the device: the strict triangle and inverse
// diagonal by a count, a scan and a fill; the level sets by hk_cu_levels below (a sync-free
// pass: rows handed out in solve order by an atomic counter, each spinning on its
// dependencies' levels, level = 1 + their highest; then a stable radix sort of the rows by
// level, so each level lists its rows in ascending order as the CPU's hk_trifactor_from_csr
// does); the method's own arrays. Only counts and the level boundaries come back to the host
// (the launch sizes). The handle owns copies of everything; F is not kept.
//
// Solves (every one computes x_i = (b_i - sum_k T_ik x_k) * dinv_i with the sum in double, as
// the CPU version, solver/pc/tri_cpu.c, does; the sync-free kernels add a row's products in a
// fixed tree of lanes, so they agree with the CPU to rounding and repeat to the last digit):
//
// syncfree: the ILUPACK-GMRES paper's solve (section 4.2). At set-up the rows are put in level
// order, and within a level by length class (the strict entries rounded up to a power of two
// G = 1..32; longer rows are class 32), and cut into warps: a warp takes 32/G rows of one
// class and one level, G lanes a row (the paper's "32 rows of 1 element, 16 rows of 2, 8 rows
// of 3 or 4, ..."). The factor's rows are copied in that order (solve order: a warp's rows
// are contiguous). The solve is one launch with no flags: x is filled with a sentinel first
// (all bits set: a NaN that no arithmetic produces, and a row whose result is a NaN stores the
// canonical one instead), and a lane reads x_j until it is not the sentinel - the value is its
// own ready flag, so no fence and no second load. Blocks take consecutive runs of warps from a
// 64-bit ticket counter (block t of a launch runs warps 8t..8t+7; tickets are never reset, a
// launch's blocks take the next nblocks of them), so a warp only ever waits on rows of earlier
// levels, which belong to warps already running: no deadlock whatever order the hardware
// starts blocks in. While entries are missing, one lane of the warp polls the one likely to
// be solved last (the others wait at the warp barrier) and then all reload, which keeps the
// polling traffic to L2 at one load per waiting warp instead of one per lane.
//
// syncfree-flags: the earlier sync-free kernel, kept as the baseline of the one above. Rows
// are handed out in solve order (ascending for a lower factor, descending for an upper one) by
// a global atomic counter, a group of G lanes per row (G = 4..32 from the mean row length, one
// size per matrix). Each lane spins with volatile loads on the ready flags of its entries'
// columns, fences, then reads those x values; the group's first lane writes x_i, fences, and
// raises ready[i]. The flags and the counter are cleared by one memset per solve.
//
// levels: level-scheduled. The rows of one level are independent (the level-set scheduling
// of the ILUPACK-GMRES paper). A level with many rows is one launch, one thread per row; a run
// of consecutive small levels, where a launch per level would cost more than the work, is one
// launch of a single block that walks the levels with a block barrier between them (a barrier
// makes the block's global writes visible to the whole block). The sum in the stored order.
//
// cusparse: cusparseSpSV on the factor with its diagonal (analysis at set-up; the GPU default).
#include <cub/cub.cuh>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.cuh"
#include "hk_cuda.h"

#define TRI_GRID_MIN 2048 /* rows a level needs to get a launch of its own */
#define SF_THREADS 256    /* syncfree: threads of a block (8 warps per ticket) */
#define SF_WARPS (SF_THREADS / 32)
#define SF_ROUNDS 4 /* syncfree: entries a lane loads before it waits (4 G a row at once) */

typedef struct {
    int64_t l0, l1; /* levels [l0, l1) */
    int block;      /* 1: one block walks the levels; 0: one launch for level l0 */
} tri_seg;

typedef struct {
    hk_precision prec;
    int method;      /* enum hk_tri_method actually used */
    int upper;       /* entries right of the diagonal: solve order descending */
    int group;       /* syncfree-flags: lanes per row */
    unsigned *ready; /* syncfree-flags: n flags, then the row counter */
    /* syncfree: rowptr, colind, val and dinv are in solve order (position q holds row
     * order[q]); warp w solves positions wdesc[w].x .. + (wdesc[w].y >> 8) with
     * 1 << (wdesc[w].y & 7) lanes a row; blocks take tickets from a never-reset counter */
    int32_t *order;
    int2 *wdesc;
    int64_t nwarps;
    unsigned long long *ticket;
    unsigned backoff; /* ns a polling lane sleeps between loads (0: none) */
    /* cusparse: the factor with its diagonal, descriptors, work buffer */
    int64_t *sp_rowptr;
    int32_t *sp_colind;
    void *sp_val, *sp_buf;
    cusparseSpMatDescr_t sp_A;
    cusparseSpSVDescr_t sp_sv;
    int64_t n, nnz, nlevels, nseg;
    int64_t *rowptr, *level_ptr; /* device */
    int32_t *colind, *level_rows;
    void *val, *dinv;
    int64_t *hlevel_ptr; /* host copy: launch sizes */
    tri_seg *seg;        /* host */
} cu_tri;

/* x is read and written in the same launch: plain (coherent) loads, no __restrict__. */
template <typename T>
__device__ __forceinline__ void tri_row(int32_t i, const int64_t *rowptr, const int32_t *col,
                                        const T *val, const T *dinv, const T *b, T *x)
{
    double s = b[i];
    const int64_t end = rowptr[i + 1];
    for (int64_t k = rowptr[i]; k < end; k++)
        s -= (double)val[k] * (double)x[col[k]];
    x[i] = (T)(s * (double)dinv[i]);
}

template <typename T>
__global__ void k_tri_level(int64_t q0, int64_t q1, const int32_t *rows, const int64_t *rowptr,
                            const int32_t *col, const T *val, const T *dinv, const T *b, T *x)
{
    const int64_t q = q0 + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (q < q1) tri_row<T>(rows[q], rowptr, col, val, dinv, b, x);
}

template <typename T>
__global__ void k_tri_block(int64_t l0, int64_t l1, const int64_t *level_ptr, const int32_t *rows,
                            const int64_t *rowptr, const int32_t *col, const T *val, const T *dinv,
                            const T *b, T *x)
{
    for (int64_t l = l0; l < l1; l++) {
        const int64_t e = level_ptr[l + 1];
        for (int64_t q = level_ptr[l] + threadIdx.x; q < e; q += blockDim.x)
            tri_row<T>(rows[q], rowptr, col, val, dinv, b, x);
        __syncthreads();
    }
}

/* ---- sync-free solve with ready flags (pc.tri=syncfree-flags) ------------------------- */

template <typename T> __device__ __forceinline__ T load_volatile(const T *p)
{
    return *(const volatile T *)p;
}

template <typename T, int G>
__global__ void k_tri_syncfree_flags(int64_t n, int upper, const int64_t *rowptr,
                                     const int32_t *col, const T *val, const T *dinv, const T *b,
                                     T *x, unsigned *ready)
{
    constexpr int R = 32 / G; /* rows per warp */
    const int lane = threadIdx.x & 31, sub = lane / G, sl = lane % G;
    unsigned base = 0;
    if (lane == 0) base = atomicAdd(&ready[n], (unsigned)R);
    base = __shfl_sync(0xffffffffu, base, 0);
    const int64_t q = (int64_t)base + sub;
    int64_t i = -1, k0 = 0, k1 = 0;
    if (q < n) {
        i = upper ? n - 1 - q : q;
        k0 = rowptr[i];
        k1 = rowptr[i + 1];
    }
    /* wait for every dependency of this lane, then one fence, then read their values */
    for (int64_t k = k0 + sl; k < k1; k += G) {
        const int32_t j = col[k];
        while (load_volatile(&ready[j]) == 0) {
        }
    }
    __threadfence();
    double s = 0;
    for (int64_t k = k0 + sl; k < k1; k += G)
        s += (double)val[k] * (double)load_volatile(&x[col[k]]);
    const unsigned mask = G == 32 ? 0xffffffffu : ((1u << G) - 1u) << (sub * G);
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1)
        s += __shfl_xor_sync(mask, s, o);
    if (i >= 0 && sl == 0) {
        *(volatile T *)&x[i] = (T)(((double)b[i] - s) * (double)dinv[i]);
        __threadfence();
        *(volatile unsigned *)&ready[i] = 1u;
    }
}

/* ---- sync-free solve with a sentinel (pc.tri=syncfree) ------------------------------- */

/* The sentinel (all bits set, a NaN arithmetic never produces) and the NaN stored instead
 * when a row's result is a NaN (a NaN or infinity in b, say), so that no result is ever
 * mistaken for "not yet solved" and no solve waits forever. */
__device__ __forceinline__ bool sf_unsolved(double v)
{
    return __double_as_longlong(v) == -1LL;
}
__device__ __forceinline__ bool sf_unsolved(float v)
{
    return __float_as_int(v) == -1;
}
__device__ __forceinline__ double sf_result(double v)
{
    return v != v ? __longlong_as_double(0x7ff8000000000000LL) : v;
}
__device__ __forceinline__ float sf_result(float v)
{
    return v != v ? __int_as_float(0x7fc00000) : v;
}

template <typename T> struct sf_args {
    const int2 *wdesc;
    const int32_t *order;
    const int64_t *rowptr; /* solve order */
    const int32_t *col;    /* original columns */
    const T *val, *dinv;   /* solve order */
    const T *b;
    T *x;
    unsigned long long *ticket;
    int64_t nwarps;
    unsigned nblocks, backoff;
    int upper;
};

/* One warp of the schedule: its rows' entries SF_ROUNDS * G at a time (a class-32 warp has one
 * row, so every lane makes the same passes; the other classes have at most G entries a row,
 * one pass), products summed per lane in the stored order, then by a shuffle tree of G. */
template <typename T>
__global__ void __launch_bounds__(SF_THREADS) k_tri_sentinel(const sf_args<T> a)
{
    __shared__ unsigned s_ticket;
    if (threadIdx.x == 0) s_ticket = (unsigned)(atomicAdd(a.ticket, 1ull) % a.nblocks);
    __syncthreads();
    const int64_t w = (int64_t)s_ticket * SF_WARPS + (threadIdx.x >> 5);
    if (w >= a.nwarps) return; /* the whole warp */
    const int2 d = a.wdesc[w];
    const int lg = d.y & 7, cnt = d.y >> 8, G = 1 << lg;
    const int lane = threadIdx.x & 31, sub = lane >> lg, sl = lane & (G - 1);
    const bool has = sub < cnt;
    const int64_t q = (int64_t)d.x + sub;
    int64_t k0 = 0, k1 = 0;
    if (has) {
        k0 = __ldg(a.rowptr + q);
        k1 = __ldg(a.rowptr + q + 1);
    }
    const int npass = lg == 5 ? (int)((k1 - k0 + SF_ROUNDS * 32 - 1) / (SF_ROUNDS * 32)) : 1;
    double s = 0;
    for (int pass = 0; pass < npass; pass++) {
        const int64_t base = k0 + (int64_t)pass * SF_ROUNDS * G + sl;
        int32_t j[SF_ROUNDS];
        T v[SF_ROUNDS], xv[SF_ROUNDS];
        unsigned act = 0, pend = 0;
#pragma unroll
        for (int r = 0; r < SF_ROUNDS; r++) {
            const int64_t k = base + (int64_t)r * G;
            j[r] = 0;
            v[r] = xv[r] = (T)0;
            if (k < k1) {
                act |= 1u << r;
                j[r] = __ldg(a.col + k);
                v[r] = __ldg(a.val + k);
            }
        }
#pragma unroll
        for (int r = 0; r < SF_ROUNDS; r++)
            if (act >> r & 1) {
                xv[r] = load_volatile(a.x + j[r]);
                if (sf_unsolved(xv[r])) pend |= 1u << r;
            }
        /* while entries are missing: one lane polls the missing row solved last in all
         * likelihood (the largest column of a lower factor, the smallest of an upper one: the
         * level order follows the row order closely in natural and colour orderings), then
         * every lane reloads what it still misses */
        while (__any_sync(0xffffffffu, pend != 0)) {
            int key = -1;
#pragma unroll
            for (int r = 0; r < SF_ROUNDS; r++)
                if (pend >> r & 1) {
                    const int kr = a.upper ? INT_MAX - j[r] : j[r];
                    key = kr > key ? kr : key;
                }
            const int top = __reduce_max_sync(0xffffffffu, key);
            const int leader = __ffs(__ballot_sync(0xffffffffu, key == top)) - 1;
            if (lane == leader) {
                int rs = -1;
                int32_t js = 0;
#pragma unroll
                for (int r = 0; r < SF_ROUNDS; r++)
                    if (rs < 0 && (pend >> r & 1) && (a.upper ? INT_MAX - j[r] : j[r]) == top) {
                        rs = r;
                        js = j[r];
                    }
                T got;
                while (sf_unsolved(got = load_volatile(a.x + js)))
                    if (a.backoff) __nanosleep(a.backoff);
#pragma unroll
                for (int r = 0; r < SF_ROUNDS; r++)
                    if (r == rs) xv[r] = got;
                pend &= ~(1u << rs);
            }
            __syncwarp();
#pragma unroll
            for (int r = 0; r < SF_ROUNDS; r++)
                if (pend >> r & 1) {
                    xv[r] = load_volatile(a.x + j[r]);
                    if (!sf_unsolved(xv[r])) pend &= ~(1u << r);
                }
        }
#pragma unroll
        for (int r = 0; r < SF_ROUNDS; r++)
            if (act >> r & 1) s += (double)v[r] * (double)xv[r];
    }
    for (int o = G >> 1; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (has && sl == 0) {
        const int32_t i = __ldg(a.order + q);
        const T r = sf_result((T)(((double)__ldg(a.b + i) - s) * (double)__ldg(a.dinv + q)));
        *(volatile T *)(a.x + i) = r;
    }
}

static void tri_destroy(void *handle)
{
    cu_tri *t = (cu_tri *)handle;
    if (!t) return;
    if (t->sp_sv) cusparseSpSV_destroyDescr(t->sp_sv);
    if (t->sp_A) cusparseDestroySpMat(t->sp_A);
    void *d[] = {t->rowptr,    t->level_ptr, t->colind, t->level_rows, t->val,
                 t->dinv,      t->ready,     t->order,  t->wdesc,      t->ticket,
                 t->sp_rowptr, t->sp_colind, t->sp_val, t->sp_buf};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (d[i]) cudaFree(d[i]);
    free(t->hlevel_ptr);
    free(t->seg);
    free(t);
}

/* ---- scans and level sets (shared with cuda_factor.cu) ----------------------------------- */

int hk_cu_scan_counts(int64_t *cnt, int64_t n, int64_t *out, int64_t *total)
{
    int ierr = 0;
    void *tmp = NULL;
    size_t bytes = 0;
    HK_CU(cudaMemsetAsync(cnt + n, 0, sizeof *cnt, hk_cu.stream));
    HK_CU(cub::DeviceScan::ExclusiveSum(NULL, bytes, cnt, out, n + 1, hk_cu.stream));
    HK_CALL(hk_cu_malloc(&tmp, bytes ? bytes : 16));
    HK_CU_TRY(cub::DeviceScan::ExclusiveSum(tmp, bytes, cnt, out, n + 1, hk_cu.stream));
    HK_CU_TRY(cudaMemcpyAsync(total, out + n, sizeof *total, cudaMemcpyDeviceToHost,
                              hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
fail:
    cudaFree(tmp);
    return ierr;
}

/* lev1[i] = level + 1 (0: not yet known); the row counter is lev1[n] */
__global__ void k_levels(int64_t n, int upper, const int64_t *rowptr, const int32_t *colind,
                         int32_t *lev1)
{
    const int lane = threadIdx.x & 31;
    unsigned base = 0;
    if (lane == 0) base = atomicAdd((unsigned *)&lev1[n], 32u);
    base = __shfl_sync(0xffffffffu, base, 0);
    const int64_t q = (int64_t)base + lane;
    if (q >= n) return;
    const int64_t i = upper ? n - 1 - q : q;
    int32_t l = 0;
    for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {
        const int32_t j = colind[k];
        if (upper ? j <= i : j >= i) continue;
        int32_t v;
        while ((v = *(volatile int32_t *)&lev1[j]) == 0) {
        }
        l = v > l ? v : l;
    }
    *(volatile int32_t *)&lev1[i] = l + 1;
}

__global__ void k_level_keys(int64_t n, const int32_t *lev1, int32_t *key, int32_t *row)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        key[i] = lev1[i] - 1;
        row[i] = (int32_t)i;
    }
}

__global__ void k_level_ptr(int64_t n, const int32_t *key, int64_t *level_ptr)
{
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n;
         q += (int64_t)gridDim.x * blockDim.x) {
        if (q == 0 || key[q] != key[q - 1]) level_ptr[key[q]] = q;
        if (q == n - 1) level_ptr[key[q] + 1] = n;
    }
}

int hk_cu_levels(int64_t n, const int64_t *rowptr, const int32_t *colind, int upper,
                 int32_t **level_rows, int64_t **level_ptr, int64_t **hlevel_ptr, int64_t *nlevels)
{
    int ierr = 0;
    int32_t *lev1 = NULL, *key = NULL, *row = NULL, *skey = NULL;
    void *tmp = NULL;
    size_t bytes = 0;
    int32_t top = -1;
    *level_rows = NULL;
    *level_ptr = NULL;
    *hlevel_ptr = NULL;
    *nlevels = 0;
    HK_CHECK(n < INT32_MAX, HK_ERR_UNSUPPORTED,
             "level sets: %lld rows exceed 32-bit row indices", (long long)n);
    HK_TRY(hk_cu_malloc((void **)&lev1, (size_t)(n + 1) * sizeof *lev1));
    HK_TRY(hk_cu_malloc((void **)&key, (size_t)(n ? n : 1) * sizeof *key));
    HK_TRY(hk_cu_malloc((void **)&skey, (size_t)(n ? n : 1) * sizeof *skey));
    HK_TRY(hk_cu_malloc((void **)&row, (size_t)(n ? n : 1) * sizeof *row));
    HK_TRY(hk_cu_malloc((void **)level_rows, (size_t)(n ? n : 1) * sizeof **level_rows));
    if (n) {
        HK_CU_TRY(cudaMemsetAsync(lev1, 0, (size_t)(n + 1) * sizeof *lev1, hk_cu.stream));
        const unsigned grid = (unsigned)((n + HK_CU_BLOCK - 1) / HK_CU_BLOCK);
        k_levels<<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(n, upper, rowptr, colind, lev1);
        HK_CU_TRY(cudaGetLastError());
        k_level_keys<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, lev1, key, row);
        HK_CU_TRY(cudaGetLastError());
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(NULL, bytes, key, skey, row, *level_rows, (int)n,
                                                  0, 32, hk_cu.stream));
        HK_TRY(hk_cu_malloc(&tmp, bytes ? bytes : 16));
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(tmp, bytes, key, skey, row, *level_rows, (int)n,
                                                  0, 32, hk_cu.stream));
        HK_CU_TRY(cudaMemcpyAsync(&top, skey + n - 1, sizeof top, cudaMemcpyDeviceToHost,
                                  hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    }
    *nlevels = top + 1;
    HK_TRY(hk_cu_malloc((void **)level_ptr, (size_t)(*nlevels + 1) * sizeof **level_ptr));
    HK_TRY(hk_malloc((size_t)(*nlevels + 1) * sizeof **hlevel_ptr, hlevel_ptr));
    if (n) {
        k_level_ptr<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, skey, *level_ptr);
        HK_CU_TRY(cudaGetLastError());
        HK_CU_TRY(cudaMemcpyAsync(*hlevel_ptr, *level_ptr, (size_t)(*nlevels + 1) * sizeof(int64_t),
                                  cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    } else {
        (*hlevel_ptr)[0] = 0;
        HK_CU_TRY(cudaMemsetAsync(*level_ptr, 0, sizeof(int64_t), hk_cu.stream));
    }
fail:
    void *d[] = {lev1, key, skey, row, tmp};
    for (size_t k = 0; k < sizeof d / sizeof d[0]; k++)
        if (d[k]) cudaFree(d[k]);
    if (ierr) {
        if (*level_rows) cudaFree(*level_rows);
        if (*level_ptr) cudaFree(*level_ptr);
        free(*hlevel_ptr);
        *level_rows = NULL;
        *level_ptr = NULL;
        *hlevel_ptr = NULL;
    }
    return ierr;
}

/* ---- the sync-free schedule (pc.tri=syncfree) -------------------------------------------- */

/* Position q of the level order: its (level, length class) key and its row. */
__global__ void k_sf_keys(int64_t n, int64_t nlevels, const int64_t *level_ptr,
                          const int32_t *level_rows, const int64_t *rowptr, uint64_t *key,
                          int32_t *row)
{
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n;
         q += (int64_t)gridDim.x * blockDim.x) {
        const int64_t lev = hk_cu_upper_bound(level_ptr, 0, nlevels + 1, q) - 1;
        const int32_t i = level_rows[q];
        key[q] = ((uint64_t)lev << 3) | (uint64_t)hk_tri_row_class(rowptr[i + 1] - rowptr[i]);
        row[q] = i;
    }
}

/* start[q] = 1 where a warp starts: every 32/G positions of a run of one key */
__global__ void k_sf_starts(int64_t n, const uint64_t *skey, int64_t *start)
{
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n;
         q += (int64_t)gridDim.x * blockDim.x) {
        const uint64_t k = skey[q];
        const int64_t head = hk_cu_lower_bound(skey, 0, n, k);
        start[q] = (q - head) % (32 >> (int)(k & 7)) == 0;
    }
}

__global__ void k_sf_desc(int64_t n, const uint64_t *skey, const int64_t *wpos, int2 *wdesc)
{
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n;
         q += (int64_t)gridDim.x * blockDim.x) {
        if (wpos[q + 1] == wpos[q]) continue;
        const uint64_t k = skey[q];
        const int per = 32 >> (int)(k & 7);
        int c = 1;
        while (c < per && q + c < n && skey[q + c] == k)
            c++;
        wdesc[wpos[q]] = make_int2((int)q, (int)(k & 7) | (c << 8));
    }
}

__global__ void k_sf_len(int64_t n, const int32_t *order, const int64_t *rowptr, int64_t *len)
{
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n;
         q += (int64_t)gridDim.x * blockDim.x)
        len[q] = rowptr[order[q] + 1] - rowptr[order[q]];
}

/* The factor in solve order, a warp per row. */
__global__ void k_sf_gather(int64_t n, const int32_t *order, const int64_t *rowptr,
                            const int32_t *colind, const double *val, const double *dinv,
                            const int64_t *srp, int32_t *scol, double *sval, double *sdinv)
{
    const int lane = threadIdx.x & 31;
    for (int64_t q = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; q < n;
         q += ((int64_t)gridDim.x * blockDim.x) >> 5) {
        const int32_t i = order[q];
        const int64_t r0 = rowptr[i], len = rowptr[i + 1] - r0, o = srp[q];
        for (int64_t t = lane; t < len; t += 32) {
            scol[o + t] = colind[r0 + t];
            sval[o + t] = val[r0 + t];
        }
        if (lane == 0) sdinv[q] = dinv[i];
    }
}

/* The warps of t (its rowptr, colind, levels in place) and its factor (*val64, *dinv64, both
 * replaced) in solve order; the same order and warps as hk_tri_warp_schedule on the host. */
static int sf_build(cu_tri *t, double **val64, double **dinv64)
{
    int ierr = 0;
    const int64_t n = t->n;
    uint64_t *key = NULL, *skey = NULL;
    int32_t *row = NULL, *scol = NULL;
    int64_t *cnt = NULL, *pos = NULL, *srp = NULL, nw = 0, nnz = 0;
    double *sval = NULL, *sdinv = NULL;
    void *tmp = NULL;
    size_t bytes = 0;
    HK_TRY(hk_cu_malloc((void **)&t->ticket, sizeof *t->ticket));
    HK_CU_TRY(cudaMemsetAsync(t->ticket, 0, sizeof *t->ticket, hk_cu.stream));
    HK_TRY(hk_cu_malloc((void **)&t->order, (size_t)(n ? n : 1) * sizeof *t->order));
    if (n > 0) {
        HK_TRY(hk_cu_malloc((void **)&key, (size_t)n * sizeof *key));
        HK_TRY(hk_cu_malloc((void **)&skey, (size_t)n * sizeof *skey));
        HK_TRY(hk_cu_malloc((void **)&row, (size_t)n * sizeof *row));
        HK_TRY(hk_cu_malloc((void **)&cnt, (size_t)(n + 1) * sizeof *cnt));
        HK_TRY(hk_cu_malloc((void **)&pos, (size_t)(n + 1) * sizeof *pos));
        k_sf_keys<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, t->nlevels, t->level_ptr, t->level_rows, t->rowptr, key, row);
        HK_CU_TRY(cudaGetLastError());
        int endbit = 3; /* the class, then the bits of the highest level */
        for (uint64_t v = (uint64_t)t->nlevels; v; v >>= 1)
            endbit++;
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(NULL, bytes, key, skey, row, t->order, (int)n, 0,
                                                  endbit, hk_cu.stream));
        HK_TRY(hk_cu_malloc(&tmp, bytes ? bytes : 16));
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(tmp, bytes, key, skey, row, t->order, (int)n, 0,
                                                  endbit, hk_cu.stream));
        k_sf_starts<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, skey, cnt);
        HK_CU_TRY(cudaGetLastError());
        HK_TRY(hk_cu_scan_counts(cnt, n, pos, &nw));
    }
    HK_TRY(hk_cu_malloc((void **)&t->wdesc, (size_t)(nw ? nw : 1) * sizeof *t->wdesc));
    t->nwarps = nw;
    if (n == 0) goto fail;
    k_sf_desc<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, skey, pos, t->wdesc);
    HK_CU_TRY(cudaGetLastError());
    k_sf_len<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, t->order, t->rowptr, cnt);
    HK_CU_TRY(cudaGetLastError());
    HK_TRY(hk_cu_malloc((void **)&srp, (size_t)(n + 1) * sizeof *srp));
    HK_TRY(hk_cu_scan_counts(cnt, n, srp, &nnz));
    HK_TRY_CHECK(nnz == t->nnz, HK_ERR_INTERNAL,
                 "sync-free triangular solve: %lld entries in solve order, %lld in the factor",
                 (long long)nnz, (long long)t->nnz);
    HK_TRY(hk_cu_malloc((void **)&scol, (size_t)(nnz ? nnz : 1) * sizeof *scol));
    HK_TRY(hk_cu_malloc((void **)&sval, (size_t)(nnz ? nnz : 1) * sizeof *sval));
    HK_TRY(hk_cu_malloc((void **)&sdinv, (size_t)n * sizeof *sdinv));
    k_sf_gather<<<hk_cu_grid(32 * n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
        n, t->order, t->rowptr, t->colind, *val64, *dinv64, srp, scol, sval, sdinv);
    HK_CU_TRY(cudaGetLastError());
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    cudaFree(t->rowptr);
    cudaFree(t->colind);
    cudaFree(*val64);
    cudaFree(*dinv64);
    t->rowptr = srp;
    t->colind = scol;
    *val64 = sval;
    *dinv64 = sdinv;
    srp = NULL;
    scol = NULL;
    sval = sdinv = NULL;
fail:
    void *d[] = {key, skey, row, cnt, pos, srp, scol, sval, sdinv, tmp};
    for (size_t k = 0; k < sizeof d / sizeof d[0]; k++)
        if (d[k]) cudaFree(d[k]);
    return ierr;
}

/* ---- the factor's arrays ------------------------------------------------------------------ */

/* cuSPARSE's copy: the strict triangle with the diagonal 1/dinv (last in a lower row, first
 * in an upper one), 32-bit indices */
template <typename T>
__global__ void k_sp_fill(int64_t n, int upper, const int64_t *rowptr, const int32_t *colind,
                          const double *val, const double *dinv, int32_t *rp, int32_t *ci, T *v)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i <= n;
         i += (int64_t)gridDim.x * blockDim.x) {
        rp[i] = (int32_t)(rowptr[i] + i);
        if (i == n) continue;
        int64_t q = rowptr[i] + i;
        if (upper) {
            ci[q] = (int32_t)i;
            v[q++] = (T)(1 / dinv[i]);
        }
        for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {
            ci[q] = colind[k];
            v[q++] = (T)val[k];
        }
        if (!upper) {
            ci[q] = (int32_t)i;
            v[q] = (T)(1 / dinv[i]);
        }
    }
}

__global__ void k_to_float(int64_t n, const double *in, float *out)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = (float)in[i];
}

/* cuSPARSE SpSV on t's fp64 device arrays (val64, dinv64), analysis done once here */
static int cusparse_create(cu_tri *t, const double *val64, const double *dinv64, hk_precision p)
{
    int ierr = 0;
    const int64_t n = t->n, nnz = t->nnz + n;
    const size_t es = p == HK_FP64 ? 8 : 4;
    const cudaDataType dt = p == HK_FP64 ? CUDA_R_64F : CUDA_R_32F;
    void *dummy = NULL;
    cusparseDnVecDescr_t vb = NULL, vx = NULL;
    size_t bytes = 0;
    const double one = 1;
    const float onef = 1;
    HK_CHECK(nnz < INT32_MAX, HK_ERR_UNSUPPORTED,
             "pc.tri=cusparse: the factor has %lld entries, more than 32-bit indices hold; use "
             "pc.tri=syncfree",
             (long long)nnz);
    HK_TRY(hk_cu_malloc((void **)&t->sp_rowptr, (size_t)(n + 1) * 4));
    HK_TRY(hk_cu_malloc((void **)&t->sp_colind, (size_t)(nnz ? nnz : 1) * 4));
    HK_TRY(hk_cu_malloc(&t->sp_val, (size_t)(nnz ? nnz : 1) * es));
    if (p == HK_FP64)
        k_sp_fill<double><<<hk_cu_grid(n + 1), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, t->upper, t->rowptr, t->colind, val64, dinv64, (int32_t *)t->sp_rowptr,
            t->sp_colind, (double *)t->sp_val);
    else
        k_sp_fill<float><<<hk_cu_grid(n + 1), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, t->upper, t->rowptr, t->colind, val64, dinv64, (int32_t *)t->sp_rowptr,
            t->sp_colind, (float *)t->sp_val);
    HK_CU_TRY(cudaGetLastError());
    HK_CU_SPARSE_TRY(cusparseCreateCsr(&t->sp_A, n, n, nnz, t->sp_rowptr, t->sp_colind, t->sp_val,
                                       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                       CUSPARSE_INDEX_BASE_ZERO, dt));
    {
        cusparseFillMode_t fill = t->upper ? CUSPARSE_FILL_MODE_UPPER : CUSPARSE_FILL_MODE_LOWER;
        cusparseDiagType_t diag = CUSPARSE_DIAG_TYPE_NON_UNIT;
        HK_CU_SPARSE_TRY(
            cusparseSpMatSetAttribute(t->sp_A, CUSPARSE_SPMAT_FILL_MODE, &fill, sizeof fill));
        HK_CU_SPARSE_TRY(
            cusparseSpMatSetAttribute(t->sp_A, CUSPARSE_SPMAT_DIAG_TYPE, &diag, sizeof diag));
    }
    HK_TRY(hk_cu_malloc(&dummy, (size_t)(2 * n + 2) * es));
    HK_CU_SPARSE_TRY(cusparseCreateDnVec(&vb, n, dummy, dt));
    HK_CU_SPARSE_TRY(cusparseCreateDnVec(&vx, n, (char *)dummy + (size_t)(n + 1) * es, dt));
    HK_CU_SPARSE_TRY(cusparseSpSV_createDescr(&t->sp_sv));
    HK_CU_SPARSE_TRY(
        cusparseSpSV_bufferSize(hk_cu.sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                p == HK_FP64 ? (const void *)&one : (const void *)&onef, t->sp_A,
                                vb, vx, dt, CUSPARSE_SPSV_ALG_DEFAULT, t->sp_sv, &bytes));
    HK_TRY(hk_cu_malloc(&t->sp_buf, bytes ? bytes : 16));
    HK_CU_SPARSE_TRY(cusparseSpSV_analysis(hk_cu.sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                           p == HK_FP64 ? (const void *)&one : (const void *)&onef,
                                           t->sp_A, vb, vx, dt, CUSPARSE_SPSV_ALG_DEFAULT, t->sp_sv,
                                           t->sp_buf));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
fail:
    if (vb) cusparseDestroyDnVec(vb);
    if (vx) cusparseDestroyDnVec(vx);
    if (dummy) cudaFree(dummy);
    return ierr;
}

/* Everything after t's rowptr, colind, levels and the fp64 val64 / dinv64 (device, taken
 * over) are in place: the segments, the method's data, the values in precision p. */
static int tri_finish(cu_tri *t, double *val64, double *dinv64, int method, hk_precision p)
{
    int ierr = 0;
    const int64_t n = t->n, nnz = t->nnz, nl = t->nlevels;
    t->prec = p;
    /* segments: big levels alone, runs of small levels walked by one block */
    HK_TRY(hk_malloc((size_t)(nl ? nl : 1) * sizeof *t->seg, &t->seg));
    for (int64_t l = 0; l < nl; l++) {
        const int big = t->hlevel_ptr[l + 1] - t->hlevel_ptr[l] >= TRI_GRID_MIN;
        if (!big && t->nseg > 0 && t->seg[t->nseg - 1].block) {
            t->seg[t->nseg - 1].l1 = l + 1;
        } else {
            t->seg[t->nseg].l0 = l;
            t->seg[t->nseg].l1 = l + 1;
            t->seg[t->nseg].block = !big;
            t->nseg++;
        }
    }
    t->method = method;
    if (t->method == HK_TRI_SYNCFREE) {
        HK_TRY(sf_build(t, &val64, &dinv64));
    } else if (t->method == HK_TRI_SYNCFREE_FLAGS) {
        const double mean = n ? (double)nnz / (double)n : 0;
        t->group = mean <= 4 ? 4 : mean <= 8 ? 8 : mean <= 16 ? 16 : 32;
        HK_TRY(hk_cu_malloc((void **)&t->ready, (size_t)(n + 1) * sizeof(unsigned)));
    } else if (t->method == HK_TRI_CUSPARSE) {
        HK_TRY(cusparse_create(t, val64, dinv64, p));
    } else {
        t->method = HK_TRI_LEVELS;
    }
    if (p == HK_FP64) {
        t->val = val64;
        t->dinv = dinv64;
        val64 = dinv64 = NULL;
    } else {
        HK_TRY(hk_cu_malloc(&t->val, (size_t)(nnz ? nnz : 1) * sizeof(float)));
        HK_TRY(hk_cu_malloc(&t->dinv, (size_t)(n ? n : 1) * sizeof(float)));
        if (nnz) {
            k_to_float<<<hk_cu_grid(nnz), HK_CU_BLOCK, 0, hk_cu.stream>>>(nnz, val64,
                                                                          (float *)t->val);
            HK_CU_TRY(cudaGetLastError());
        }
        if (n) {
            k_to_float<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, dinv64,
                                                                        (float *)t->dinv);
            HK_CU_TRY(cudaGetLastError());
        }
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    }
fail:
    if (val64) cudaFree(val64);
    if (dinv64) cudaFree(dinv64);
    return ierr;
}

/* ---- tri_setup from a factor on the device -------------------------------------------------- */

/* strict entries of the chosen triangle per row; the first non-unit row without a diagonal */
__global__ void k_tri_count(int64_t n, int upper, int unit, const int64_t *rowptr,
                            const int32_t *colind, int64_t *cnt, unsigned long long *bad)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = 0;
        int diag = 0;
        for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {
            const int32_t j = colind[k];
            c += upper ? j > i : j < i;
            diag |= j == i;
        }
        cnt[i] = c;
        if (!unit && !diag) atomicMin(bad, (unsigned long long)i);
    }
}

__global__ void k_tri_fill(int64_t n, int upper, int unit, const int64_t *rowptr,
                           const int32_t *colind, const double *val, const int64_t *trp,
                           int32_t *tcol, double *tval, double *dinv)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t q = trp[i];
        double d = 1;
        for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {
            const int32_t j = colind[k];
            if (j == i) {
                if (!unit) d = 1 / val[k];
            } else if (upper ? j > i : j < i) {
                tcol[q] = j;
                tval[q++] = val[k];
            }
        }
        dinv[i] = d;
    }
}

static int tri_setup(const hk_bmat *F, int upper, int unit, int method, hk_precision p,
                     void **handle, int64_t *nlevels)
{
    int ierr = 0;
    cu_tri *t = NULL;
    double *val64 = NULL, *dinv64 = NULL;
    int64_t *cnt = NULL;
    unsigned long long *dbad = NULL;
    int64_t hbad = -1;
    *handle = NULL;
    HK_CHECK(F->br == 1 && F->bc == 1 && F->nbrows == F->nbcols, HK_ERR_ARG,
             "tri_setup: the factor must be square with 1 x 1 blocks");
    HK_CALL(hk_cu_init());
    const int64_t n = F->nbrows;
    HK_CALL(hk_calloc(1, sizeof *t, &t));
    t->n = n;
    t->upper = upper;
    HK_TRY(hk_cu_malloc((void **)&cnt, (size_t)(n + 1) * sizeof *cnt));
    HK_TRY(hk_cu_first_row_alloc(&dbad));
    HK_TRY(hk_cu_malloc((void **)&t->rowptr, (size_t)(n + 1) * sizeof *t->rowptr));
    if (n) {
        k_tri_count<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, upper, unit, F->rowptr,
                                                                     F->colind, cnt, dbad);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_scan_counts(cnt, n, t->rowptr, &t->nnz));
    HK_TRY(hk_cu_first_row_read(dbad, &hbad));
    HK_TRY_CHECK(hbad < 0, HK_ERR_INTERNAL, "triangular factor: row %lld has no diagonal entry",
                 (long long)hbad);
    HK_TRY(hk_cu_malloc((void **)&t->colind, (size_t)(t->nnz ? t->nnz : 1) * sizeof *t->colind));
    HK_TRY(hk_cu_malloc((void **)&val64, (size_t)(t->nnz ? t->nnz : 1) * sizeof *val64));
    HK_TRY(hk_cu_malloc((void **)&dinv64, (size_t)(n ? n : 1) * sizeof *dinv64));
    if (n) {
        k_tri_fill<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, upper, unit, F->rowptr, F->colind, F->val, t->rowptr, t->colind, val64, dinv64);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_levels(n, t->rowptr, t->colind, upper, &t->level_rows, &t->level_ptr,
                        &t->hlevel_ptr, &t->nlevels));
    ierr = tri_finish(t, val64, dinv64, method, p);
    val64 = dinv64 = NULL;
    if (ierr) goto fail;
    *nlevels = t->nlevels;
    *handle = t;
    t = NULL;
fail:
    if (val64) cudaFree(val64);
    if (dinv64) cudaFree(dinv64);
    if (cnt) cudaFree(cnt);
    if (dbad) cudaFree(dbad);
    tri_destroy(t);
    return ierr;
}

template <typename T> static void tri_launch(const cu_tri *t, const T *b, T *x)
{
    for (int64_t g = 0; g < t->nseg; g++) {
        const tri_seg *s = &t->seg[g];
        if (s->block) {
            k_tri_block<T><<<1, HK_CU_BLOCK, 0, hk_cu.stream>>>(
                s->l0, s->l1, t->level_ptr, t->level_rows, t->rowptr, t->colind, (const T *)t->val,
                (const T *)t->dinv, b, x);
        } else {
            const int64_t q0 = t->hlevel_ptr[s->l0], q1 = t->hlevel_ptr[s->l0 + 1];
            const unsigned grid = (unsigned)((q1 - q0 + HK_CU_BLOCK - 1) / HK_CU_BLOCK);
            k_tri_level<T><<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(q0, q1, t->level_rows, t->rowptr,
                                                                   t->colind, (const T *)t->val,
                                                                   (const T *)t->dinv, b, x);
        }
    }
}

template <typename T> static void sentinel_launch(const cu_tri *t, const T *b, T *x)
{
    sf_args<T> a;
    a.wdesc = t->wdesc;
    a.order = t->order;
    a.rowptr = t->rowptr;
    a.col = t->colind;
    a.val = (const T *)t->val;
    a.dinv = (const T *)t->dinv;
    a.b = b;
    a.x = x;
    a.ticket = t->ticket;
    a.nwarps = t->nwarps;
    a.nblocks = (unsigned)((t->nwarps + SF_WARPS - 1) / SF_WARPS);
    a.backoff = t->backoff;
    a.upper = t->upper;
    k_tri_sentinel<T><<<a.nblocks, SF_THREADS, 0, hk_cu.stream>>>(a);
}

template <typename T, int G> static void flags_launch_g(const cu_tri *t, const T *b, T *x)
{
    const int rows_per_block = (HK_CU_BLOCK / 32) * (32 / G);
    const unsigned grid = (unsigned)((t->n + rows_per_block - 1) / rows_per_block);
    k_tri_syncfree_flags<T, G><<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(
        t->n, t->upper, t->rowptr, t->colind, (const T *)t->val, (const T *)t->dinv, b, x,
        t->ready);
}

template <typename T> static void flags_launch(const cu_tri *t, const T *b, T *x)
{
    switch (t->group) {
    case 4:
        flags_launch_g<T, 4>(t, b, x);
        break;
    case 8:
        flags_launch_g<T, 8>(t, b, x);
        break;
    case 16:
        flags_launch_g<T, 16>(t, b, x);
        break;
    default:
        flags_launch_g<T, 32>(t, b, x);
        break;
    }
}

static int cusparse_solve(const cu_tri *t, const hk_vec *b, hk_vec *x)
{
    int ierr = 0;
    const cudaDataType dt = t->prec == HK_FP64 ? CUDA_R_64F : CUDA_R_32F;
    const double one = 1;
    const float onef = 1;
    cusparseDnVecDescr_t vb = NULL, vx = NULL;
    HK_CU_SPARSE_TRY(cusparseCreateDnVec(&vb, t->n, b->data, dt));
    HK_CU_SPARSE_TRY(cusparseCreateDnVec(&vx, t->n, x->data, dt));
    HK_CU_SPARSE_TRY(
        cusparseSpSV_solve(hk_cu.sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                           t->prec == HK_FP64 ? (const void *)&one : (const void *)&onef, t->sp_A,
                           vb, vx, dt, CUSPARSE_SPSV_ALG_DEFAULT, t->sp_sv));
fail:
    if (vb) cusparseDestroyDnVec(vb);
    if (vx) cusparseDestroyDnVec(vx);
    return ierr;
}

static int tri_solve(void *handle, const hk_vec *b, hk_vec *x)
{
    const cu_tri *t = (const cu_tri *)handle;
    HK_CHECK(b->n == t->n && x->n == t->n && b->prec == t->prec && x->prec == t->prec &&
                 b->data != x->data,
             HK_ERR_ARG,
             "tri_solve: vectors must be distinct, of length %lld and the factor's precision",
             (long long)t->n);
    if (t->method == HK_TRI_CUSPARSE) return cusparse_solve(t, b, x);
    if (t->method == HK_TRI_SYNCFREE) {
        if (t->n == 0) return 0;
        /* every x_i starts as the sentinel: all bits set, for fp64 and fp32 alike */
        HK_CU(cudaMemsetAsync(x->data, 0xff, (size_t)t->n * (t->prec == HK_FP64 ? 8 : 4),
                              hk_cu.stream));
        if (t->prec == HK_FP64)
            sentinel_launch<double>(t, (const double *)b->data, (double *)x->data);
        else
            sentinel_launch<float>(t, (const float *)b->data, (float *)x->data);
    } else if (t->method == HK_TRI_SYNCFREE_FLAGS) {
        if (t->n == 0) return 0;
        HK_CU(cudaMemsetAsync(t->ready, 0, (size_t)(t->n + 1) * sizeof(unsigned), hk_cu.stream));
        if (t->prec == HK_FP64)
            flags_launch<double>(t, (const double *)b->data, (double *)x->data);
        else
            flags_launch<float>(t, (const float *)b->data, (float *)x->data);
    } else if (t->prec == HK_FP64) {
        tri_launch<double>(t, (const double *)b->data, (double *)x->data);
    } else {
        tri_launch<float>(t, (const float *)b->data, (float *)x->data);
    }
    HK_CU_LAUNCHED();
    return 0;
}

int hk_cu_tri_setup(const hk_bmat *F, int upper, int unit, int method, hk_precision p,
                    void **handle, int64_t *nlevels)
{
    return tri_setup(F, upper, unit, method, p, handle, nlevels);
}
int hk_cu_tri_solve(void *handle, const hk_vec *b, hk_vec *x)
{
    return tri_solve(handle, b, x);
}
void hk_cu_tri_destroy(void *handle)
{
    tri_destroy(handle);
}

/* ---- for tests and benchmarks (hk_cuda.h) ---------------------------------------------- */

extern "C" int hk_cuda_tri_schedule(void *handle, int64_t *nwarps, int32_t **order, int32_t **wdesc)
{
    const cu_tri *t = (const cu_tri *)handle;
    *order = *wdesc = NULL;
    *nwarps = 0;
    HK_CHECK(t && t->method == HK_TRI_SYNCFREE, HK_ERR_ARG,
             "hk_cuda_tri_schedule: not a handle of pc.tri=syncfree");
    int ierr = 0;
    HK_TRY(hk_malloc((size_t)(t->n ? t->n : 1) * sizeof **order, order));
    HK_TRY(hk_malloc((size_t)(t->nwarps ? 2 * t->nwarps : 1) * sizeof **wdesc, wdesc));
    if (t->n)
        HK_CU_TRY(cudaMemcpyAsync(*order, t->order, (size_t)t->n * sizeof **order,
                                  cudaMemcpyDeviceToHost, hk_cu.stream));
    if (t->nwarps)
        HK_CU_TRY(cudaMemcpyAsync(*wdesc, t->wdesc, (size_t)t->nwarps * sizeof(int2),
                                  cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    *nwarps = t->nwarps;
    return 0;
fail:
    free(*order);
    free(*wdesc);
    *order = *wdesc = NULL;
    return ierr;
}

extern "C" int hk_cuda_tri_backoff(void *handle, unsigned ns)
{
    cu_tri *t = (cu_tri *)handle;
    HK_CHECK(t && t->method == HK_TRI_SYNCFREE, HK_ERR_ARG,
             "hk_cuda_tri_backoff: not a handle of pc.tri=syncfree");
    t->backoff = ns;
    return 0;
}
