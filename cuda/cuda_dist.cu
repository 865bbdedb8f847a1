// The gather of the distributed operator's halo (vec_gather, hk_impl.h; solver/dist/dist.c): the
// owned entries a neighbour needs packed into the send buffer, the boundary rows' owned columns
// into the extended vector, on the context's stream. One thread per scalar entry.
#include <cub/cub.cuh>

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

// ---- the transfer operators' local patterns (dist_read_columns, dist_local_pattern) --------
// solver/cpu/cpu_dist.c is the reference: the same integers, positions by scans (cub), each
// row sorted by one thread (rows are short, mostly sorted already).

template <typename T> static int dist_scan(const T *in, T *out, int64_t n) /* exclusive */
{
    if (n <= 0) return 0;
    void *tmp = NULL;
    size_t bytes = 0;
    HK_CU(cub::DeviceScan::ExclusiveSum(NULL, bytes, in, out, (int)n, hk_cu.stream));
    HK_CALL(hk_cu_tmp_alloc(&tmp, bytes ? bytes : 8));
    cudaError_t e = cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, (int)n, hk_cu.stream);
    hk_cu_tmp_free(tmp);
    if (e != cudaSuccess) return hk_cu_fail(e, "cub::DeviceScan::ExclusiveSum", __FILE__, __LINE__);
    return 0;
}

static int dist_read(void *host, const void *dev, size_t bytes)
{
    HK_CU(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    return 0;
}

__global__ void k_mark_read(int64_t n, const int32_t *__restrict__ col, int32_t *__restrict__ mark)
{
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n;
         p += (int64_t)gridDim.x * blockDim.x)
        mark[col[p]] = 1; /* the same value from every thread */
}

__global__ void k_rank_read(int64_t ncols, const int32_t *__restrict__ mark,
                            const int32_t *__restrict__ at, int32_t *__restrict__ rank,
                            int32_t *__restrict__ list)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < ncols;
         j += (int64_t)gridDim.x * blockDim.x) {
        rank[j] = mark[j] ? at[j] : -1;
        if (mark[j] && list) list[at[j]] = (int32_t)j;
    }
}

int hk_cu_dist_read_columns(const int32_t *col, int64_t n, int64_t ncols, int32_t *rank,
                            int32_t *list, int64_t *nread)
{
    HK_CHECK(ncols < INT32_MAX, HK_ERR_UNSUPPORTED,
             "dist_read_columns: %lld columns is more than 32-bit indices hold", (long long)ncols);
    *nread = 0;
    if (ncols == 0) return 0;
    int32_t *mark = NULL, *at = NULL, cnt[2] = {0, 0};
    int ierr = hk_cu_tmp_alloc((void **)&mark, (size_t)(ncols + 1) * sizeof *mark);
    if (!ierr) ierr = hk_cu_tmp_alloc((void **)&at, (size_t)(ncols + 1) * sizeof *at);
    if (ierr) goto fail;
    HK_CU_TRY(cudaMemsetAsync(mark, 0, (size_t)(ncols + 1) * sizeof *mark, hk_cu.stream));
    if (n) {
        k_mark_read<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, col, mark);
        HK_CU_TRY(cudaGetLastError());
    }
    ierr = dist_scan(mark, at, ncols + 1); /* mark[ncols] = 0: at[ncols] the count */
    if (ierr) goto fail;
    k_rank_read<<<hk_cu_grid(ncols), HK_CU_BLOCK, 0, hk_cu.stream>>>(ncols, mark, at, rank, list);
    HK_CU_TRY(cudaGetLastError());
    ierr = dist_read(cnt, at + ncols, sizeof cnt[0]);
    *nread = cnt[0];
fail:
    hk_cu_tmp_free(mark);
    hk_cu_tmp_free(at);
    return ierr;
}

__global__ void k_row_kind(int64_t nrows, const int64_t *__restrict__ rowptr,
                           const int32_t *__restrict__ col, const int32_t *__restrict__ map,
                           int64_t nbc, int32_t *__restrict__ interior)
{
    const int64_t base = rowptr[0];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nrows;
         i += (int64_t)gridDim.x * blockDim.x) {
        int bnd = 0;
        for (int64_t p = rowptr[i] - base; p < rowptr[i + 1] - base && !bnd; p++)
            bnd = map[col[p]] >= nbc;
        interior[i] = !bnd;
    }
}

/* ypos from the interior rows' exclusive count at (at[nrows] = ni), and the rows' lengths at
 * their new positions (len[ypos[i]]) */
__global__ void k_row_place(int64_t nrows, const int64_t *__restrict__ rowptr,
                            const int32_t *__restrict__ interior, const int32_t *__restrict__ at,
                            int32_t *__restrict__ ypos, int64_t *__restrict__ len)
{
    const int64_t ni = at[nrows];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nrows;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t y = interior[i] ? at[i] : ni + (i - at[i]);
        ypos[i] = (int32_t)y;
        len[y] = rowptr[i + 1] - rowptr[i];
    }
}

__global__ void k_row_from(int64_t nrows, const int64_t *__restrict__ rowptr,
                           int64_t *__restrict__ rp)
{
    const int64_t base = rowptr[0];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i <= nrows;
         i += (int64_t)gridDim.x * blockDim.x)
        rp[i] = rowptr[i] - base;
}

__global__ void k_row_write(int64_t nrows, const int64_t *__restrict__ rowptr,
                            const int32_t *__restrict__ col, const int32_t *__restrict__ map,
                            const int64_t *__restrict__ rp, const int32_t *__restrict__ ypos,
                            int32_t *__restrict__ lcol, int32_t *__restrict__ src)
{
    const int64_t base = rowptr[0];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nrows;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t p0 = rowptr[i] - base, len = rowptr[i + 1] - rowptr[i];
        const int64_t q0 = rp[ypos ? ypos[i] : i];
        for (int64_t k = 0; k < len; k++) {
            const int32_t c = map[col[p0 + k]], s = (int32_t)(p0 + k);
            int64_t q = k;
            for (; q > 0 && lcol[q0 + q - 1] > c; q--) {
                lcol[q0 + q] = lcol[q0 + q - 1];
                src[q0 + q] = src[q0 + q - 1];
            }
            lcol[q0 + q] = c;
            src[q0 + q] = s;
        }
    }
}

int hk_cu_dist_local_pattern(int64_t nrows, const int64_t *rowptr, const int32_t *col,
                             const int32_t *map, int64_t nbc, int split, int64_t *rp,
                             int32_t *lcol, int32_t *src, int32_t *ypos, int64_t *nint)
{
    int ierr = 0;
    int32_t *interior = NULL, *at = NULL, ni = 0;
    int64_t *len = NULL;
    *nint = 0;
    if (split && nrows) {
        ierr = hk_cu_tmp_alloc((void **)&interior, (size_t)(nrows + 1) * sizeof *interior);
        if (!ierr) ierr = hk_cu_tmp_alloc((void **)&at, (size_t)(nrows + 1) * sizeof *at);
        if (ierr) goto fail;
        HK_CU_TRY(cudaMemsetAsync(interior + nrows, 0, sizeof *interior, hk_cu.stream));
        k_row_kind<<<hk_cu_grid(nrows), HK_CU_BLOCK, 0, hk_cu.stream>>>(nrows, rowptr, col, map,
                                                                        nbc, interior);
        HK_CU_TRY(cudaGetLastError());
        ierr = dist_scan(interior, at, nrows + 1);
        if (!ierr) ierr = dist_read(&ni, at + nrows, sizeof ni);
        if (ierr) goto fail;
        split = ni > 0 && ni < nrows;
    } else
        split = 0;
    if (split) {
        ierr = hk_cu_tmp_alloc((void **)&len, (size_t)(nrows + 1) * sizeof *len);
        if (ierr) goto fail;
        HK_CU_TRY(cudaMemsetAsync(len + nrows, 0, sizeof *len, hk_cu.stream));
        k_row_place<<<hk_cu_grid(nrows), HK_CU_BLOCK, 0, hk_cu.stream>>>(nrows, rowptr, interior,
                                                                         at, ypos, len);
        HK_CU_TRY(cudaGetLastError());
        ierr = dist_scan(len, rp, nrows + 1);
        if (ierr) goto fail;
        *nint = ni;
    } else {
        k_row_from<<<hk_cu_grid(nrows + 1), HK_CU_BLOCK, 0, hk_cu.stream>>>(nrows, rowptr, rp);
        HK_CU_TRY(cudaGetLastError());
    }
    if (nrows) {
        k_row_write<<<hk_cu_grid(nrows), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            nrows, rowptr, col, map, rp, split ? ypos : NULL, lcol, src);
        HK_CU_TRY(cudaGetLastError());
    }
fail:
    hk_cu_tmp_free(interior);
    hk_cu_tmp_free(at);
    hk_cu_tmp_free(len);
    return ierr;
}
