// Storage formats built on the device from a block CSR already in device memory (mat_build),
// their download for tests (mat_download), and the transpose and scalar expansion of a
// block CSR. The arrays are exactly those of hk_fmt_from_bcsr and of the CPU backend
// (layouts above hk_fmt in hk_impl.h); nothing is copied through the host except sizes.
//
// Steps of a build: row lengths and the longest row (CUB reduction); for SELL/SBELL the sort
// of (block) rows, longest first inside windows of sigma rows, by a CUB radix sort of the
// keys (window, longest - length) carrying the row numbers — CUB's radix sort is stable, so
// rows of equal length keep their order, as in the CPU counting sort; slice widths, their
// starts by a CUB scan; one thread per (block) row scatters its blocks into the column-major
// slices, writing values directly in the matrix precision. Scalar formats of a bs > 1 source
// read its expansion (bmat_expand). The transpose sorts the entries by column with the same
// stable radix sort, so each row of A^T lists its source rows in increasing order.
#include <cub/cub.cuh>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.cuh"
#include "bmat_compress.h"

#define GRID_STRIDE(i, n)                                                                          \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

/* ---- kernels --------------------------------------------------------------------------- */

__global__ void k_row_len(int64_t n, const int64_t *__restrict__ rowptr, int32_t *__restrict__ len)
{
    GRID_STRIDE(i, n) len[i] = (int32_t)(rowptr[i + 1] - rowptr[i]);
}

/* key of row i: its window, then longest - length (so that ascending keys put long rows first) */
__global__ void k_sort_keys(int64_t n, int64_t sigma, int64_t L, const int32_t *__restrict__ len,
                            uint64_t *__restrict__ key, int32_t *__restrict__ row)
{
    GRID_STRIDE(i, n)
    {
        key[i] = (uint64_t)(i / sigma) * (uint64_t)(L + 1) + (uint64_t)(L - len[i]);
        row[i] = (int32_t)i;
    }
}

/* width of slice s = longest of its rows; cnt[s] = width * S block slots */
__global__ void k_slice_width(int64_t n, int64_t nsl, int64_t S, const int32_t *__restrict__ perm,
                              const int32_t *__restrict__ len, int32_t *__restrict__ width,
                              int64_t *__restrict__ cnt)
{
    GRID_STRIDE(s, nsl)
    {
        int32_t W = 0;
        const int64_t end = (s + 1) * S < n ? (s + 1) * S : n;
        for (int64_t j = s * S; j < end; j++)
            W = max(W, len[perm[j]]);
        width[s] = W;
        cnt[s] = (int64_t)W * S;
    }
}

/* One (block) row per thread: its blocks into slot k*ld + j of its slice (ELL/BELL: one
 * slice of all rows, ld = n, base 0; SELL/SBELL: row j of slice s at base sptr[s], ld = S). */
template <typename T>
__global__ void k_scatter(int64_t n, int64_t S, int b2, const int32_t *__restrict__ perm,
                          const int64_t *__restrict__ sptr, const int64_t *__restrict__ rowptr,
                          const int32_t *__restrict__ colind, const double *__restrict__ val,
                          int32_t *__restrict__ ocol, T *__restrict__ oval)
{
    GRID_STRIDE(g, n)
    {
        const int64_t old = perm ? perm[g] : g;
        const int64_t s = g / S, j = g - s * S;
        const int64_t base = sptr ? sptr[s] : 0;
        const int64_t b = rowptr[old], len = rowptr[old + 1] - b;
        for (int64_t k = 0; k < len; k++) {
            const int64_t slot = base + k * S;
            ocol[slot + j] = colind[b + k];
            for (int e = 0; e < b2; e++)
                oval[slot * b2 + (int64_t)e * S + j] = (T)val[(b + k) * b2 + e];
        }
    }
}

/* New values into an ELL or sliced layout of the pattern it was built from (mat_refill). Row j
 * of slice s is a run of len_j * b2 values in K (its blocks, each row-major), value r of it
 * goes to base * b2 + r * S + j (k_scatter's slot, k = r / b2, e = r % b2): a transpose of the
 * slice's ragged rows, done through 32 x 32 tiles in shared memory so that the reads run along
 * K's rows and the writes along the slice's columns, both coalesced. A unit is a slice and 32
 * of its rows (ELL/BELL: one slice of all rows, no permutation); the index arrays and the
 * padding (zeros since the build) are not written. */
#define RF_TILE 32
#define RF_ROWS 8
template <typename T>
__global__ void __launch_bounds__(RF_TILE *RF_ROWS)
    k_refill(int64_t n, int64_t S, int64_t nunits, int64_t jtiles, int b2, int32_t ell_width,
             const int32_t *__restrict__ perm, const int64_t *__restrict__ sptr,
             const int32_t *__restrict__ swidth, const int64_t *__restrict__ rowptr,
             const double *__restrict__ val, T *__restrict__ oval, unsigned long long *first)
{
    __shared__ double tile[RF_TILE][RF_TILE + 1];
    __shared__ int64_t start[RF_TILE], len[RF_TILE], krow[RF_TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (int64_t u = blockIdx.x; u < nunits; u += gridDim.x) {
        const int64_t s = u / jtiles, j0 = (u - s * jtiles) * RF_TILE;
        const int64_t base = (sptr ? sptr[s] : 0) * b2;
        const int64_t W = (int64_t)(swidth ? swidth[s] : ell_width) * b2;
        __syncthreads(); /* the last unit's tiles are written out */
        if (ty == 0) {
            const int64_t j = j0 + tx, g = s * S + j;
            int64_t st = 0, ln = 0;
            int64_t row = 0;
            if (j < S && g < n) {
                row = perm ? perm[g] : g;
                st = rowptr[row];
                ln = rowptr[row + 1] - st;
            }
            start[tx] = st * b2;
            len[tx] = ln * b2;
            krow[tx] = row;
        }
        __syncthreads();
        for (int64_t r0 = 0; r0 < W; r0 += RF_TILE) {
#pragma unroll
            for (int y = ty; y < RF_TILE; y += RF_ROWS)
                if (r0 + tx < len[y]) {
                    const double v = val[start[y] + r0 + tx];
                    tile[y][tx] = v;
                    if (first && hk_cu_nonfinite(v)) /* rare, so the atomic is too */
                        atomicMin(first, (unsigned long long)krow[y]);
                }
            __syncthreads();
#pragma unroll
            for (int y = ty; y < RF_TILE; y += RF_ROWS)
                if (r0 + y < len[tx]) oval[base + (r0 + y) * S + j0 + tx] = (T)tile[tx][y];
            __syncthreads();
        }
    }
}

template <typename T>
__global__ void k_convert(int64_t n, const double *__restrict__ in, T *__restrict__ out)
{
    GRID_STRIDE(i, n) out[i] = (T)in[i];
}

__global__ void k_rowptr32(int64_t n, const int64_t *__restrict__ in, int32_t *__restrict__ out)
{
    GRID_STRIDE(i, n) out[i] = (int32_t)in[i];
}

/* scalar row i = (bi, r) of a br x bc block matrix; thread n writes the end pointer */
__global__ void k_expand(int64_t nbrows, int br, int bc, const int64_t *__restrict__ rowptr,
                         const int32_t *__restrict__ colind, const double *__restrict__ val,
                         int64_t *__restrict__ srp, int32_t *__restrict__ sci,
                         double *__restrict__ sv)
{
    const int64_t n = nbrows * br, bb = (int64_t)br * bc;
    GRID_STRIDE(i, n + 1)
    {
        if (i == n) {
            srp[n] = rowptr[nbrows] * bb;
            continue;
        }
        const int64_t bi = i / br;
        const int r = (int)(i - bi * br);
        const int64_t q0 = rowptr[bi], len = rowptr[bi + 1] - q0;
        int64_t p = q0 * bb + r * len * bc;
        srp[i] = p;
        for (int64_t q = q0; q < q0 + len; q++)
            for (int c = 0; c < bc; c++) {
                sci[p] = (int32_t)((int64_t)colind[q] * bc + c);
                sv[p++] = val[(q * br + r) * bc + c];
            }
    }
}

/* entry q of block row i: src_row[q] = i; idx[q] = q */
__global__ void k_entry_rows(int64_t nbrows, const int64_t *__restrict__ rowptr,
                             int32_t *__restrict__ src_row, int64_t *__restrict__ idx)
{
    GRID_STRIDE(i, nbrows)
    for (int64_t q = rowptr[i]; q < rowptr[i + 1]; q++) {
        src_row[q] = (int32_t)i;
        idx[q] = q;
    }
}

/* T.rowptr[c] = number of entries with column < c (binary search in the sorted columns) */
__global__ void k_col_starts(int64_t m, int64_t nnz, const uint32_t *__restrict__ cols,
                             int64_t *__restrict__ rowptr)
{
    GRID_STRIDE(c, m + 1)
    {
        rowptr[c] = hk_cu_lower_bound(cols, 0, nnz, c);
    }
}

__global__ void k_transpose_blocks(int64_t nnz, int br, int bc, const int64_t *__restrict__ src,
                                   const int32_t *__restrict__ src_row, const double *__restrict__ a,
                                   int32_t *__restrict__ tcol, double *__restrict__ t)
{
    const int64_t bb = (int64_t)br * bc;
    GRID_STRIDE(k, nnz)
    {
        const int64_t q = src[k];
        tcol[k] = src_row[q];
        for (int r = 0; r < br; r++)
            for (int c = 0; c < bc; c++)
                t[k * bb + c * br + r] = a[q * bb + r * bc + c];
    }
}

/* ---- helpers --------------------------------------------------------------------------- */

static int bits_for(uint64_t v)
{
    int b = 1;
    while (b < 64 && (v >> b)) b++;
    return b;
}

/* The sentence for a matrix that does not fit, before its arrays are allocated. */
static int check_fits(size_t need, const char *what)
{
    size_t fr = 0, tot = 0;
    HK_CU(cudaMemGetInfo(&fr, &tot));
    HK_CHECK(need < fr, HK_ERR_MEMORY,
             "the %s needs %.2f GB on the GPU but only %.2f GB are free; use precision=mixed, a "
             "smaller mesh or --backend cpu",
             what, need / 1e9, fr / 1e9);
    return 0;
}

/* Largest of n int32 values on the device (0 when n = 0), returned to the host. */
static int device_max(const int32_t *v, int64_t n, int64_t *out)
{
    int ierr = 0;
    void *tmp = NULL;
    int32_t *dmax = NULL;
    size_t tb = 0;
    int32_t h = 0;
    *out = 0;
    if (n <= 0) return 0;
    HK_CU(cub::DeviceReduce::Max(NULL, tb, v, (int32_t *)NULL, n, hk_cu.stream));
    HK_TRY(hk_cu_tmp_alloc(&tmp, tb + 16));
    HK_TRY(hk_cu_tmp_alloc((void **)&dmax, sizeof *dmax));
    HK_CU_TRY(cub::DeviceReduce::Max(tmp, tb, v, dmax, n, hk_cu.stream));
    HK_CU_TRY(cudaMemcpyAsync(&h, dmax, sizeof h, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    *out = h;
fail:
    hk_cu_tmp_free(tmp);
    hk_cu_tmp_free(dmax);
    return ierr;
}

static int alloc_set(void **p, size_t bytes, int byte)
{
    HK_CALL(hk_cu_malloc(p, bytes ? bytes : 8));
    if (bytes) HK_CU(cudaMemsetAsync(*p, byte, bytes, hk_cu.stream));
    return 0;
}

/* ---- build ----------------------------------------------------------------------------- */

/* HOOKE_CUDA_BUILD_PROFILE=1 (measurement): each format build's steps, the stream waited for
 * after each, on stderr. */
static int build_profile = -1;
static double build_t[8];
static int build_nt;

static void build_stamp(void)
{
    if (build_profile < 0) {
        const char *e = getenv("HOOKE_CUDA_BUILD_PROFILE");
        build_profile = e && *e && strcmp(e, "0");
    }
    if (!build_profile || build_nt >= 8) return;
    cudaStreamSynchronize(hk_cu.stream);
    build_t[build_nt++] = hk_time();
}

struct build_src {
    int b;
    int64_t n, nnzb;
    const int64_t *rowptr;
    const int32_t *colind;
    const double *val;
};

template <typename T>
static int scatter(const build_src &s, int64_t S, const int32_t *perm, const int64_t *sptr,
                   hk_cu_mat *m)
{
    if (!s.n) return 0;
    k_scatter<T><<<hk_cu_grid(s.n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
        s.n, S, s.b * s.b, perm, sptr, s.rowptr, s.colind, s.val, m->colind, (T *)m->val);
    HK_CU_LAUNCHED();
    return 0;
}

/* K's values into m's ELL (sliced = 0) or sliced layout, in place (k_refill). */
template <typename T>
static int refill_slots(const build_src &s, int sliced, const hk_cu_mat *m,
                        unsigned long long *first)
{
    if (!s.n) return 0;
    const int64_t S = m->S, nsl = sliced ? m->shape.nslices : 1;
    const int64_t jtiles = (S + RF_TILE - 1) / RF_TILE, nunits = nsl * jtiles;
    if (nunits <= 0) return 0;
    const unsigned grid = (unsigned)(nunits < (1 << 20) ? nunits : (1 << 20));
    k_refill<T><<<grid, dim3(RF_TILE, RF_ROWS), 0, hk_cu.stream>>>(
        s.n, S, nunits, jtiles, s.b * s.b, m->shape.width, sliced ? m->perm : NULL,
        sliced ? m->sptr : NULL, sliced ? m->swidth : NULL, s.rowptr, s.val, (T *)m->val, first);
    HK_CU_LAUNCHED();
    return 0;
}

static int build_rowptr(hk_mat *A, const build_src &s, hk_cu_mat *m)
{
    const int64_t nv = s.nnzb * s.b * s.b;
    const int f32 = A->prec == HK_FP32, cus = A->fmt == HK_FMT_CUSPARSE_CSR ||
                                              A->fmt == HK_FMT_CUSPARSE_BSR;
    if (cus)
        HK_CHECK(s.nnzb < INT32_MAX && s.n < INT32_MAX, HK_ERR_UNSUPPORTED,
                 "format %s uses 32-bit indices and this matrix has %lld stored blocks; use "
                 "format=sbell or format=csr",
                 hk_format_name(A->fmt), (long long)s.nnzb);
    HK_CALL(check_fits((size_t)nv * (f32 ? 4 : 8) + (size_t)s.nnzb * 4 + (size_t)(s.n + 1) * 12 +
                           (cus ? (size_t)A->nrows * 16 : 0),
                       "matrix"));
    HK_CALL(hk_cu_malloc((void **)&m->rowptr, (size_t)(s.n + 1) * 8));
    HK_CALL(hk_cu_malloc((void **)&m->colind, s.nnzb ? (size_t)s.nnzb * 4 : 8));
    HK_CALL(hk_cu_malloc(&m->val, nv ? (size_t)nv * (f32 ? 4 : 8) : 8));
    HK_CU(cudaMemcpyAsync(m->rowptr, s.rowptr, (size_t)(s.n + 1) * 8, cudaMemcpyDeviceToDevice,
                          hk_cu.stream));
    if (s.nnzb)
        HK_CU(cudaMemcpyAsync(m->colind, s.colind, (size_t)s.nnzb * 4, cudaMemcpyDeviceToDevice,
                              hk_cu.stream));
    if (nv && !f32)
        HK_CU(cudaMemcpyAsync(m->val, s.val, (size_t)nv * 8, cudaMemcpyDeviceToDevice,
                              hk_cu.stream));
    if (nv && f32) {
        k_convert<float><<<hk_cu_grid(nv), HK_CU_BLOCK, 0, hk_cu.stream>>>(nv, s.val,
                                                                           (float *)m->val);
        HK_CU_LAUNCHED();
    }
    if (cus) {
        HK_CALL(hk_cu_malloc((void **)&m->rowptr32, (size_t)(s.n + 1) * 4));
        k_rowptr32<<<hk_cu_grid(s.n + 1), HK_CU_BLOCK, 0, hk_cu.stream>>>(s.n + 1, s.rowptr,
                                                                           m->rowptr32);
        HK_CU_LAUNCHED();
    }
    A->stored = nv;
    return 0;
}

static int alloc_slots(hk_mat *A, const build_src &s, int64_t slots, hk_cu_mat *m)
{
    const int64_t b2 = (int64_t)s.b * s.b;
    const size_t vsz = A->prec == HK_FP32 ? 4 : 8;
    HK_CALL(check_fits((size_t)slots * (4 + b2 * vsz), "matrix"));
    HK_CALL(alloc_set((void **)&m->colind, (size_t)slots * 4, 0xff)); /* -1: padding */
    HK_CALL(alloc_set(&m->val, (size_t)(slots * b2) * vsz, 0));
    A->stored = slots * b2;
    return 0;
}

static int build_ell(hk_mat *A, const build_src &s, int64_t L, hk_cu_mat *m)
{
    const int64_t slots = L * s.n;
    HK_CALL(alloc_slots(A, s, slots, m));
    const int64_t sp[2] = {0, slots};
    const int32_t sw[1] = {(int32_t)L};
    HK_CALL(hk_cu_malloc((void **)&m->sptr, sizeof sp));
    HK_CALL(hk_cu_malloc((void **)&m->swidth, sizeof sw));
    /* pageable sources: staged before the call returns */
    HK_CU(cudaMemcpyAsync(m->sptr, sp, sizeof sp, cudaMemcpyHostToDevice, hk_cu.stream));
    HK_CU(cudaMemcpyAsync(m->swidth, sw, sizeof sw, cudaMemcpyHostToDevice, hk_cu.stream));
    m->S = s.n > 0 ? s.n : 1;
    m->shape.width = (int32_t)L;
    if (A->prec == HK_FP32) return scatter<float>(s, m->S, NULL, NULL, m);
    return scatter<double>(s, m->S, NULL, NULL, m);
}

__global__ void k_len_count(int64_t n, const int32_t *__restrict__ len,
                            unsigned long long *__restrict__ count)
{
    GRID_STRIDE(i, n) atomicAdd(count + len[i], 1ull);
}

/* format.sigma=auto: the window from the histogram of row lengths (hk_sigma_auto); only the
 * L + 1 counts come back to the host. */
static int sigma_auto(const int32_t *len, int64_t n, int64_t L, int S, int64_t *sigma)
{
    int ierr = 0;
    unsigned long long *dcount = NULL;
    int64_t *count = NULL;
    HK_TRY(hk_calloc((size_t)L + 1, sizeof *count, &count));
    HK_TRY(hk_cu_malloc((void **)&dcount, (size_t)(L + 1) * sizeof *dcount));
    HK_CU_TRY(cudaMemsetAsync(dcount, 0, (size_t)(L + 1) * sizeof *dcount, hk_cu.stream));
    k_len_count<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, len, dcount);
    HK_CU_TRY(cudaGetLastError());
    HK_CU_TRY(cudaMemcpyAsync(count, dcount, (size_t)(L + 1) * sizeof *dcount,
                              cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    *sigma = hk_sigma_auto(count, L, n, S);
fail:
    cudaFree(dcount);
    free(count);
    return ierr;
}

static int build_sliced(hk_mat *A, const build_src &s, const int32_t *len, int64_t L,
                        hk_cu_mat *m, int32_t *last_width)
{
    int ierr = 0;
    const int64_t n = s.n, S = A->slice, nsl = (n + S - 1) / S;
    int64_t sigma = A->sigma <= 0 || A->sigma > n ? (n > 0 ? n : 1) : A->sigma;
    if (A->sigma == HK_SIGMA_AUTO && n > 0) HK_CALL(sigma_auto(len, n, L, (int)S, &sigma));
    build_stamp();
    uint64_t *keys = NULL, *keys_out = NULL;
    int32_t *rows = NULL;
    int64_t *cnt = NULL;
    void *tmp = NULL;
    size_t tb = 0, tb2 = 0;
    int64_t slots = 0;
    m->S = S;
    m->shape.slice = (int32_t)S;
    m->shape.sigma = (int32_t)sigma;
    m->shape.nslices = nsl;
    *last_width = 0;
    HK_TRY(hk_cu_malloc((void **)&m->perm, (size_t)(n ? n : 1) * 4));
    HK_TRY(hk_cu_malloc((void **)&m->swidth, (size_t)(nsl ? nsl : 1) * 4));
    HK_TRY(hk_cu_malloc((void **)&m->sptr, (size_t)(nsl + 1) * 8));
    HK_TRY(hk_cu_tmp_alloc((void **)&cnt, (size_t)(nsl + 1) * 8));
    if (n > 0) {
        const int64_t nwin = (n + sigma - 1) / sigma;
        const int end_bit = bits_for((uint64_t)nwin * (uint64_t)(L + 1));
        HK_TRY(hk_cu_tmp_alloc((void **)&keys, (size_t)n * 8));
        HK_TRY(hk_cu_tmp_alloc((void **)&keys_out, (size_t)n * 8));
        HK_TRY(hk_cu_tmp_alloc((void **)&rows, (size_t)n * 4));
        k_sort_keys<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, sigma, L, len, keys, rows);
        HK_CU_TRY(cudaGetLastError());
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(NULL, tb, keys, keys_out, rows, m->perm, n, 0,
                                                  end_bit, hk_cu.stream));
        HK_CU_TRY(cub::DeviceScan::ExclusiveSum(NULL, tb2, cnt, m->sptr, nsl + 1, hk_cu.stream));
        HK_TRY(hk_cu_tmp_alloc(&tmp, (tb > tb2 ? tb : tb2) + 16));
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(tmp, tb, keys, keys_out, rows, m->perm, n, 0,
                                                  end_bit, hk_cu.stream));
        k_slice_width<<<hk_cu_grid(nsl), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, nsl, S, m->perm, len,
                                                                          m->swidth, cnt);
        HK_CU_TRY(cudaGetLastError());
        HK_CU_TRY(cudaMemsetAsync(cnt + nsl, 0, 8, hk_cu.stream));
        tb2 = tb > tb2 ? tb : tb2;
        HK_CU_TRY(cub::DeviceScan::ExclusiveSum(tmp, tb2, cnt, m->sptr, nsl + 1, hk_cu.stream));
        HK_CU_TRY(cudaMemcpyAsync(&slots, m->sptr + nsl, 8, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU_TRY(cudaMemcpyAsync(last_width, m->swidth + nsl - 1, 4, cudaMemcpyDeviceToHost,
                                  hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    } else {
        HK_CU_TRY(cudaMemsetAsync(m->sptr, 0, 8, hk_cu.stream));
    }
    build_stamp();
    HK_TRY(alloc_slots(A, s, slots, m));
    build_stamp();
    if (A->prec == HK_FP32)
        HK_TRY(scatter<float>(s, S, m->perm, m->sptr, m));
    else
        HK_TRY(scatter<double>(s, S, m->perm, m->sptr, m));
    build_stamp();
fail:
    /* stream-ordered frees: the scatter's kernels run on (hk_cu_mat_build waits at its end) */
    if (ierr) cudaStreamSynchronize(hk_cu.stream);
    hk_cu_tmp_free(keys);
    hk_cu_tmp_free(keys_out);
    hk_cu_tmp_free(rows);
    hk_cu_tmp_free(cnt);
    hk_cu_tmp_free(tmp);
    return ierr;
}

int hk_cu_format_auto(const hk_bmat *K, hk_precision p, hk_format *fmt)
{
    HK_CALL(hk_cu_init());
    *fmt = hk_format_auto_by_cache(K->br, hk_format_auto_bytes(K, p), hk_cu.l2);
    return 0;
}

int hk_cu_mat_build(hk_mat *A, const hk_bmat *K)
{
    int ierr = 0;
    hk_bmat E;
    hk_cu_mat *m = NULL;
    int32_t *len = NULL;
    int64_t L = 0;
    int32_t last_width = 0;
    memset(&E, 0, sizeof E);
    A->bdata = NULL;
    HK_CALL(hk_cu_init());
    const hk_format fmt = A->fmt;
    HK_CHECK(fmt >= 0 && fmt < HK_FMT_COUNT, HK_ERR_ARG, "cuda backend: unknown format %d",
             (int)fmt);
    HK_CHECK(K->br == K->bc && K->br >= 1 && K->br <= 6, HK_ERR_ARG,
             "cuda backend: formats need square blocks of size 1 to 6 (got %d x %d)", K->br,
             K->bc);
    HK_CHECK(A->slice >= 1 && A->slice <= 1024, HK_ERR_OPTION,
             "slice size %d is out of range; use format.slice between 1 and 1024", A->slice);
    const int bs = K->br;
    const int scalar = fmt == HK_FMT_CSR || fmt == HK_FMT_ELL || fmt == HK_FMT_SELL ||
                       fmt == HK_FMT_CUSPARSE_CSR || fmt == HK_FMT_PCSR;
    build_src s = {bs, K->nbrows, K->nnzb, K->rowptr, K->colind, K->val};
    HK_CHECK(s.n * bs < INT32_MAX, HK_ERR_ARG,
             "cuda backend: %lld rows is out of range (32-bit row numbers)",
             (long long)(s.n * bs));
    if (scalar && bs > 1) {
        HK_CALL(hk_cu_bmat_expand(K, &E));
        s.b = 1, s.n = E.nbrows, s.nnzb = E.nnzb;
        s.rowptr = E.rowptr, s.colind = E.colind, s.val = E.val;
    }
    HK_TRY(hk_calloc(1, sizeof *m, &m));
    A->bdata = m;
    m->bs = s.b;
    m->nbrows = s.n;
    m->shape.fmt = fmt;
    m->shape.bs = s.b;
    m->shape.nrows = A->nrows;
    m->shape.ncols = A->ncols;
    m->shape.nbrows = s.n;
    m->shape.nbcols = scalar ? A->ncols : K->nbcols;
    m->shape.nnz = K->nnzb * bs * bs;
    A->nnz = m->shape.nnz;

    build_nt = 0;
    build_stamp();
    HK_TRY(hk_cu_tmp_alloc((void **)&len, (size_t)(s.n ? s.n : 1) * 4));
    if (s.n) {
        k_row_len<<<hk_cu_grid(s.n), HK_CU_BLOCK, 0, hk_cu.stream>>>(s.n, s.rowptr, len);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(device_max(len, s.n, &L));
    build_stamp();
    switch (fmt) {
    case HK_FMT_CSR:
    case HK_FMT_BSR:
    case HK_FMT_CUSPARSE_CSR:
    case HK_FMT_CUSPARSE_BSR:
        HK_TRY(build_rowptr(A, s, m));
        break;
    case HK_FMT_ELL:
    case HK_FMT_BELL:
        HK_TRY(build_ell(A, s, L, m));
        break;
    case HK_FMT_PCSR:
        HK_TRY(hk_cu_pcsr_build(A, s.n, s.rowptr, s.colind, s.val, m));
        break;
    default:
        HK_TRY(build_sliced(A, s, len, L, m, &last_width));
        break;
    }
    m->shape.stored = A->stored;
    A->width = (fmt == HK_FMT_ELL || fmt == HK_FMT_BELL) ? m->shape.width : L;
    A->bytes = hk_fmt_bytes_shape(&m->shape, last_width, A->prec);
    build_stamp();
    HK_TRY(hk_cu_mat_finish(A, m, L));
    hk_cu_tmp_free(len);
    len = NULL;
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    hk_bmat_free(&E);
    build_stamp();
    if (build_profile > 0) {
        fprintf(stderr, "cuda mat_build %s %s, %lld block rows of %d:", hk_format_name(fmt),
                A->prec == HK_FP32 ? "fp32" : "fp64", (long long)s.n, s.b);
        for (int k = 1; k < build_nt; k++)
            fprintf(stderr, " %.3f", (build_t[k] - build_t[k - 1]) * 1e3);
        fprintf(stderr, " ms (lengths; [sigma, order, slots, scatter;] layout; finish)\n");
    }
    return 0;
fail:
    cudaStreamSynchronize(hk_cu.stream);
    hk_cu_tmp_free(len);
    hk_bmat_free(&E);
    hk_cu_mat_release(A);
    return ierr;
}

/* ---- values only (mat_refill) ---------------------------------------------------------- */

/* A's values from K of the pattern A was built from, into A's arrays where they are: the
 * row-pointer formats copy (or convert) the values, the ELL and sliced ones scatter K's rows
 * again through the kept permutation and slice starts. Every address stays, so the kernels'
 * tables and recorded graphs stay valid. cuSPARSE's and PCSR's matrices are built anew (their
 * libraries' analysis may read the values). With first_bad (mat_refill_checked) k_refill also
 * finds K's first block row with a NaN or an infinity; only the layouts it fills from K's own
 * blocks can (the row-pointer formats copy without reading, scalar layouts of a block K read
 * an expanded copy): the others refuse before writing anything. */
static int refill(hk_mat *A, const hk_bmat *K, int64_t *first_bad)
{
    int ierr = 0;
    hk_cu_mat *m = (hk_cu_mat *)A->bdata;
    hk_bmat E;
    memset(&E, 0, sizeof E);
    const hk_format fmt = A->fmt;
    const int bs = K->br;
    const int scalar = fmt == HK_FMT_CSR || fmt == HK_FMT_ELL || fmt == HK_FMT_SELL;
    const int rowptr_fmt = fmt == HK_FMT_CSR || fmt == HK_FMT_BSR;
    if (!m || fmt == HK_FMT_CUSPARSE_CSR || fmt == HK_FMT_CUSPARSE_BSR || fmt == HK_FMT_PCSR)
        return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                            "cuda backend: format %s is built anew for new values",
                            hk_format_name(fmt));
    if (first_bad && (rowptr_fmt || (scalar && bs > 1)))
        return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                            "cuda backend: format %s refills without the finite check",
                            hk_format_name(fmt));
    HK_CHECK(K->nnzb * bs * bs == m->shape.nnz, HK_ERR_ARG,
             "cuda backend: new values for a matrix of %lld entries, built with %lld; only the "
             "values of the same pattern may be refilled",
             (long long)(K->nnzb * bs * bs), (long long)m->shape.nnz);
    unsigned long long *flag = NULL;
    if (first_bad) {
        *first_bad = -1;
        HK_CALL(hk_cu_setup_flag(&flag));
    }
    build_src src = {bs, K->nbrows, K->nnzb, K->rowptr, K->colind, K->val};
    if (scalar && bs > 1) {
        HK_CALL(hk_cu_bmat_expand(K, &E));
        src.b = 1, src.n = E.nbrows, src.nnzb = E.nnzb;
        src.rowptr = E.rowptr, src.colind = E.colind, src.val = E.val;
    }
    const int64_t nv = src.nnzb * src.b * src.b;
    const int f32 = A->prec == HK_FP32;
    switch (fmt) {
    case HK_FMT_CSR:
    case HK_FMT_BSR:
        if (nv && !f32)
            HK_CU_TRY(cudaMemcpyAsync(m->val, src.val, (size_t)nv * 8, cudaMemcpyDeviceToDevice,
                                      hk_cu.stream));
        if (nv && f32) {
            k_convert<float><<<hk_cu_grid(nv), HK_CU_BLOCK, 0, hk_cu.stream>>>(nv, src.val,
                                                                               (float *)m->val);
            HK_CU_TRY(cudaGetLastError());
        }
        break;
    case HK_FMT_ELL:
    case HK_FMT_BELL:
        HK_TRY(f32 ? refill_slots<float>(src, 0, m, flag) : refill_slots<double>(src, 0, m, flag));
        break;
    default: /* sliced */
        HK_TRY(f32 ? refill_slots<float>(src, 1, m, flag) : refill_slots<double>(src, 1, m, flag));
        break;
    }
    if (flag)
        HK_TRY(hk_cu_first_row_read(flag, first_bad)); /* waits for the refill */
    else
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
fail:
    if (ierr) cudaStreamSynchronize(hk_cu.stream);
    hk_bmat_free(&E);
    return ierr;
}

int hk_cu_mat_refill(hk_mat *A, const hk_bmat *K)
{
    return refill(A, K, NULL);
}

int hk_cu_mat_refill_checked(hk_mat *A, const hk_bmat *K, int64_t *first_bad)
{
    return refill(A, K, first_bad);
}

/* ---- another precision (mat_convert) ---------------------------------------------------- */

/* n entries of a device array into a new one (allocated bytes: at least one entry) */
static int dup_device(void **dst, const void *src, int64_t n, size_t elem)
{
    *dst = NULL;
    if (!src) return 0;
    HK_CALL(hk_cu_malloc(dst, (size_t)(n > 0 ? n : 1) * elem));
    if (n > 0)
        HK_CU(cudaMemcpyAsync(*dst, src, (size_t)n * elem, cudaMemcpyDeviceToDevice, hk_cu.stream));
    return 0;
}

/* dst (fp32) from src (fp64) of the same format: the index arrays copied device to device,
 * the kernel's tables made by the build's finishing step, the values rounded in one streaming
 * pass (padding zeros stay zeros); or, dst built, its values only, in place. The bytes of a
 * fresh fp32 build: the build's layout depends on the pattern, the format and the slicing
 * alone, and its scatter rounds each value as this pass does. cuSPARSE's and PCSR's matrices
 * are built from K (HK_ERR_UNSUPPORTED). */
int hk_cu_mat_convert(hk_mat *dst, const hk_mat *src)
{
    int ierr = 0;
    const hk_cu_mat *ms = (const hk_cu_mat *)src->bdata;
    hk_cu_mat *m = (hk_cu_mat *)dst->bdata;
    const hk_format fmt = src->fmt;
    if (fmt == HK_FMT_CUSPARSE_CSR || fmt == HK_FMT_CUSPARSE_BSR || fmt == HK_FMT_PCSR)
        return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                            "cuda backend: format %s is built from K in fp32", hk_format_name(fmt));
    HK_CHECK(ms && src->prec == HK_FP64 && dst->prec == HK_FP32, HK_ERR_ARG,
             "cuda backend: mat_convert makes fp32 from a built fp64 matrix");
    const int64_t nv = src->stored;
    if (m) {
        HK_CHECK(m->shape.stored == nv && m->shape.nslices == ms->shape.nslices, HK_ERR_ARG,
                 "cuda backend: the fp32 matrix has %lld entries, the fp64 one %lld",
                 (long long)m->shape.stored, (long long)nv);
        if (nv) {
            k_convert<float><<<hk_cu_grid(nv), HK_CU_BLOCK, 0, hk_cu.stream>>>(
                nv, (const double *)ms->val, (float *)m->val);
            HK_CU(cudaGetLastError());
        }
        HK_CU(cudaStreamSynchronize(hk_cu.stream));
        return 0;
    }
    const int64_t slots = nv / ((int64_t)ms->bs * ms->bs);
    const int sliced = fmt == HK_FMT_SELL || fmt == HK_FMT_SBELL;
    const int64_t nsl = sliced ? ms->shape.nslices : 1; /* ELL/BELL: one slice */
    int32_t last_width = 0;
    HK_CALL(check_fits((size_t)nv * 4 + (size_t)slots * 4 +
                           (ms->rowptr ? (size_t)(ms->nbrows + 1) * 8 : 0) +
                           (sliced ? (size_t)ms->nbrows * 4 + (size_t)nsl * 12 : 0),
                       "matrix"));
    HK_CALL(hk_calloc(1, sizeof *m, &m));
    dst->bdata = m;
    m->shape = ms->shape;
    m->bs = ms->bs;
    m->nbrows = ms->nbrows;
    m->S = ms->S;
    HK_TRY(dup_device((void **)&m->rowptr, ms->rowptr, ms->rowptr ? ms->nbrows + 1 : 0, 8));
    HK_TRY(dup_device((void **)&m->colind, ms->colind, slots, 4));
    HK_TRY(dup_device((void **)&m->sptr, ms->sptr, nsl + 1, 8));
    HK_TRY(dup_device((void **)&m->swidth, ms->swidth, nsl, 4));
    HK_TRY(dup_device((void **)&m->perm, ms->perm, ms->nbrows, 4));
    HK_TRY(hk_cu_malloc(&m->val, (size_t)(nv > 0 ? nv : 1) * 4));
    if (nv) {
        k_convert<float><<<hk_cu_grid(nv), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            nv, (const double *)ms->val, (float *)m->val);
        HK_CU_TRY(cudaGetLastError());
    }
    if (sliced && nsl > 0)
        HK_CU_TRY(cudaMemcpyAsync(&last_width, ms->swidth + nsl - 1, 4, cudaMemcpyDeviceToHost,
                                  hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    dst->nnz = src->nnz;
    dst->stored = nv;
    dst->width = src->width;
    dst->bytes = hk_fmt_bytes_shape(&m->shape, last_width, HK_FP32);
    /* the build's longest row: A->width (ELL/BELL's width is that longest row) */
    HK_TRY(hk_cu_mat_finish(dst, m, src->width));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    return 0;
fail:
    cudaStreamSynchronize(hk_cu.stream);
    hk_cu_mat_release(dst);
    return ierr;
}

/* ---- download -------------------------------------------------------------------------- */

static int fetch(void **h, const void *d, size_t bytes)
{
    *h = NULL;
    if (!d) return 0;
    HK_CALL(hk_malloc(bytes ? bytes : 8, h));
    if (bytes) {
        HK_CU(cudaMemcpyAsync(*h, d, bytes, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU(cudaStreamSynchronize(hk_cu.stream));
    }
    return 0;
}

int hk_cu_mat_download(const hk_mat *A, hk_fmt *F)
{
    int ierr = 0;
    float *v32 = NULL;
    const hk_cu_mat *m = (const hk_cu_mat *)A->bdata;
    memset(F, 0, sizeof *F);
    HK_CHECK(m, HK_ERR_ARG, "cuda backend: matrix was not built");
    *F = m->shape;
    const int64_t b2 = (int64_t)m->bs * m->bs, slots = A->stored / b2;
    const int sliced = A->fmt == HK_FMT_SELL || A->fmt == HK_FMT_SBELL;
    if (m->rowptr) HK_TRY(fetch((void **)&F->rowptr, m->rowptr, (size_t)(m->nbrows + 1) * 8));
    HK_TRY(fetch((void **)&F->colind, m->colind, (size_t)slots * 4));
    if (sliced) {
        HK_TRY(fetch((void **)&F->slice_ptr, m->sptr, (size_t)(F->nslices + 1) * 8));
        HK_TRY(fetch((void **)&F->slice_width, m->swidth, (size_t)F->nslices * 4));
        HK_TRY(fetch((void **)&F->perm, m->perm, (size_t)m->nbrows * 4));
    }
    if (A->fmt == HK_FMT_PCSR) HK_TRY(hk_cu_pcsr_download(m, F));
    if (A->prec == HK_FP32) {
        HK_TRY(fetch((void **)&v32, m->val, (size_t)A->stored * 4));
        HK_TRY(hk_malloc((size_t)(A->stored ? A->stored : 1) * 8, &F->val));
        for (int64_t k = 0; k < A->stored; k++)
            F->val[k] = v32[k];
    } else {
        HK_TRY(fetch((void **)&F->val, m->val, (size_t)A->stored * 8));
    }
    free(v32);
    return 0;
fail:
    free(v32);
    hk_fmt_free(F);
    return ierr;
}

/* ---- expansion and transpose ----------------------------------------------------------- */

int hk_cu_bmat_expand(const hk_bmat *A, hk_bmat *S)
{
    HK_CALL(hk_cu_init());
    const int br = A->br, bc = A->bc;
    const int64_t bb = (int64_t)br * bc, n = A->nbrows * br;
    HK_CALL(hk_bmat_alloc(A->be, 1, 1, n, A->nbcols * bc, A->nnzb * bb, S));
    k_expand<<<hk_cu_grid(n + 1), HK_CU_BLOCK, 0, hk_cu.stream>>>(
        A->nbrows, br, bc, A->rowptr, A->colind, A->val, S->rowptr, S->colind, S->val);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        hk_bmat_free(S);
        return hk_cu_fail(e, "k_expand", __FILE__, __LINE__);
    }
    return 0;
}

int hk_cu_bmat_transpose(const hk_bmat *A, hk_bmat *T)
{
    int ierr = 0;
    int32_t *src_row = NULL;
    uint32_t *cols = NULL;
    int64_t *idx = NULL, *src = NULL;
    void *tmp = NULL;
    size_t tb = 0;
    HK_CALL(hk_cu_init());
    const int br = A->br, bc = A->bc;
    const int64_t m = A->nbcols, nnz = A->nnzb;
    HK_CALL(hk_bmat_alloc(A->be, bc, br, m, A->nbrows, nnz, T));
    if (nnz > 0) {
        const int end_bit = bits_for((uint64_t)m);
        HK_TRY(hk_cu_malloc((void **)&src_row, (size_t)nnz * 4));
        HK_TRY(hk_cu_malloc((void **)&cols, (size_t)nnz * 4));
        HK_TRY(hk_cu_malloc((void **)&idx, (size_t)nnz * 8));
        HK_TRY(hk_cu_malloc((void **)&src, (size_t)nnz * 8));
        k_entry_rows<<<hk_cu_grid(A->nbrows), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            A->nbrows, A->rowptr, src_row, idx);
        HK_CU_TRY(cudaGetLastError());
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(NULL, tb, (const uint32_t *)A->colind, cols, idx, src, nnz, 0,
                                                  end_bit, hk_cu.stream));
        HK_TRY(hk_cu_malloc(&tmp, tb + 16));
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(tmp, tb, (const uint32_t *)A->colind, cols, idx, src, nnz, 0,
                                                  end_bit, hk_cu.stream));
        k_transpose_blocks<<<hk_cu_grid(nnz), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            nnz, br, bc, src, src_row, A->val, T->colind, T->val);
        HK_CU_TRY(cudaGetLastError());
    }
    k_col_starts<<<hk_cu_grid(m + 1), HK_CU_BLOCK, 0, hk_cu.stream>>>(m, nnz, cols, T->rowptr);
    HK_CU_TRY(cudaGetLastError());
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
fail:
    cudaStreamSynchronize(hk_cu.stream);
    cudaFree(src_row);
    cudaFree(cols);
    cudaFree(idx);
    cudaFree(src);
    cudaFree(tmp);
    if (ierr) hk_bmat_free(T);
    return ierr;
}

/* ---- regrouping of a scalar CSR into bs x bs blocks (bmat_compress) --------------------- */

__global__ void k_compress_count(int64_t nb, int bs, const int64_t *__restrict__ rowptr,
                                 const int32_t *__restrict__ colind, int64_t *__restrict__ cnt)
{
    GRID_STRIDE(bi, nb) cnt[bi] = hk_compress_block_row(bi, bs, rowptr, colind, NULL, NULL, NULL);
}

__global__ void k_compress_fill(int64_t nb, int bs, const int64_t *__restrict__ rowptr,
                                const int32_t *__restrict__ colind, const double *__restrict__ val,
                                const int64_t *__restrict__ brow, int32_t *__restrict__ bcol,
                                double *__restrict__ bval)
{
    GRID_STRIDE(bi, nb)
    hk_compress_block_row(bi, bs, rowptr, colind, val, bcol + brow[bi],
                          bval + brow[bi] * bs * bs);
}

int hk_cu_bmat_compress(const hk_bmat *S, int bs, hk_bmat *B)
{
    HK_CALL(hk_cu_init());
    HK_CHECK(S->br == 1 && S->bc == 1 && bs >= 1 && bs <= HK_COMPRESS_MAX_BS &&
                 S->nbrows % bs == 0 && S->nbcols % bs == 0,
             HK_ERR_ARG,
             "bmat_compress: needs 1 x 1 blocks and sizes that are multiples of bs = %d (got "
             "%lld x %lld)",
             bs, (long long)S->nbrows, (long long)S->nbcols);
    const int64_t nb = S->nbrows / bs;
    int64_t *ptr = NULL, nnzb = 0;
    void *tmp = NULL;
    size_t tb = 0;
    int ierr = 0;
    memset(B, 0, sizeof *B);
    HK_TRY(hk_cu_malloc((void **)&ptr, (size_t)(nb + 1) * sizeof *ptr));
    HK_CU_TRY(cudaMemsetAsync(ptr, 0, sizeof *ptr, hk_cu.stream));
    if (nb) {
        k_compress_count<<<hk_cu_grid(nb), HK_CU_BLOCK, 0, hk_cu.stream>>>(nb, bs, S->rowptr,
                                                                          S->colind, ptr + 1);
        HK_CU_TRY(cudaGetLastError());
        HK_CU_TRY(cub::DeviceScan::InclusiveSum(NULL, tb, ptr + 1, ptr + 1, nb, hk_cu.stream));
        HK_TRY(hk_cu_malloc(&tmp, tb ? tb : 8));
        HK_CU_TRY(cub::DeviceScan::InclusiveSum(tmp, tb, ptr + 1, ptr + 1, nb, hk_cu.stream));
        HK_CU_TRY(cudaMemcpyAsync(&nnzb, ptr + nb, sizeof nnzb, cudaMemcpyDeviceToHost,
                                  hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    }
    HK_TRY(hk_bmat_alloc(S->be, bs, bs, nb, S->nbcols / bs, nnzb, B));
    HK_CU_TRY(cudaMemcpyAsync(B->rowptr, ptr, (size_t)(nb + 1) * sizeof *ptr,
                              cudaMemcpyDeviceToDevice, hk_cu.stream));
    if (nb && nnzb) {
        k_compress_fill<<<hk_cu_grid(nb), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            nb, bs, S->rowptr, S->colind, S->val, ptr, B->colind, B->val);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    cudaFree(ptr);
    cudaFree(tmp);
    return 0;
fail:
    cudaStreamSynchronize(hk_cu.stream);
    cudaFree(ptr);
    cudaFree(tmp);
    hk_bmat_free(B);
    return ierr;
}

// cub's kernels of this file (cuda_impl.cuh: hk_cu_warm): the row lengths' maximum, the
// sliced formats' sort and slice sums, the transpose's sort, the regrouping's sums; the
// template arguments of the calls above.
static void build_warm_cub(void)
{
    const int64_t N = HK_CU_WARM_LARGE;
    char *w = (char *)hk_cu_warm_buffer((size_t)N * 48);
    if (!w) return;
    /* disjoint inputs and outputs: keys, keys_out, rows, perm, cols (and 4N bytes unused),
     * idx, src; the scans' cnt and sums over keys and keys_out */
    uint64_t *keys = (uint64_t *)w, *keys_out = keys + N;
    int32_t *rows = (int32_t *)(keys_out + N), *perm = rows + N;
    uint32_t *cols = (uint32_t *)(perm + N);
    int64_t *cnt = (int64_t *)keys, *sums = (int64_t *)keys_out, *idx = (int64_t *)(w + 32 * N),
            *src = idx + N;
    const int64_t sizes[2] = {HK_CU_WARM_SMALL, N};
    for (int k = 0; k < 2; k++) {
        const int64_t n = sizes[k];
        hk_cu_warm([&](void *t, size_t &tb) {
            return cub::DeviceReduce::Max(t, tb, (const int32_t *)rows, perm, n, hk_cu.stream);
        });
        hk_cu_warm([&](void *t, size_t &tb) {
            return cub::DeviceRadixSort::SortPairs(t, tb, keys, keys_out, rows, perm, n, 0, 32,
                                                   hk_cu.stream);
        });
        hk_cu_warm([&](void *t, size_t &tb) {
            return cub::DeviceScan::ExclusiveSum(t, tb, cnt, sums, n, hk_cu.stream);
        });
        hk_cu_warm([&](void *t, size_t &tb) {
            return cub::DeviceRadixSort::SortPairs(t, tb, (const uint32_t *)perm, cols, idx, src, n,
                                                   0, 32, hk_cu.stream);
        });
        hk_cu_warm([&](void *t, size_t &tb) {
            return cub::DeviceScan::InclusiveSum(t, tb, sums, sums, n, hk_cu.stream);
        });
    }
    hk_cu_warm_free(w);
}

// Loaded by hk_cu_init (cuda_impl.cuh: hk_cu_preloads): this file's kernels of the AMG set-up
// and the solve, for 2D and 3D elasticity, and cub's (warmed).
void hk_cu_build_preload(void)
{
    static const void *const k[] = {
        (const void *)k_row_len,
        (const void *)k_sort_keys,
        (const void *)k_slice_width,
        (const void *)k_scatter<double>,
        (const void *)k_scatter<float>,
        (const void *)k_refill<double>,
        (const void *)k_refill<float>,
        (const void *)k_convert<float>,
        (const void *)k_rowptr32,
        (const void *)k_expand,
        (const void *)k_entry_rows,
        (const void *)k_col_starts,
        (const void *)k_transpose_blocks,
        (const void *)k_len_count,
        (const void *)k_compress_count,
        (const void *)k_compress_fill};
    hk_cu_preload(k, (int)(sizeof k / sizeof *k));
    build_warm_cub();
}
