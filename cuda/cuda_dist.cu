// The gather of the distributed operator's halo (vec_gather, hk_impl.h; solver/dist/dist.c): the
// owned entries a neighbour needs packed into the send buffer, the boundary rows' owned columns
// into the extended vector, on the context's stream. One thread per scalar entry. Then
// coo_to_csr, the distributed Galerkin merge's sums (solver/cpu/cpu_dist.c is the reference),
// and the ghost rows of the distributed AMG set-up; at the end that set-up's staging copies.
#include <cub/cub.cuh>

#include "cuda_impl.cuh"
#include "cuda_staging.h"

extern "C" const hk_backend_ops hk_backend_cuda; // cuda_core.cu: the layout's outputs are on it

template <typename Tx, typename Ty>
__global__ void k_gather(int64_t n, int bs, const int32_t *__restrict__ idx,
                         const Tx *__restrict__ x, Ty *__restrict__ y)
{
    const int64_t m = n * bs;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < m;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = e / bs;
        y[e] =
            (Ty)x[(int64_t)idx[i] * bs + (e - i * bs)]; /* fp64 into fp32: vec_convert's rounding */
    }
}

int hk_cu_vec_gather(hk_vec *y, const hk_vec *x, const int32_t *idx, int64_t n, int bs)
{
    const int narrow = x->prec == HK_FP64 && y->prec == HK_FP32;
    HK_CHECK((x->prec == y->prec || narrow) && y->n >= n * bs && bs >= 1, HK_ERR_ARG,
             "vec_gather: %lld blocks of %d into a vector of %lld entries (precisions %s)",
             (long long)n, bs, (long long)y->n, x->prec == y->prec ? "equal" : "fp32 into fp64");
    if (n == 0) return 0;
    const unsigned g = hk_cu_grid(n * bs);
    if (narrow)
        k_gather<double, float><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, bs, idx, (const double *)x->data, (float *)y->data);
    else if (x->prec == HK_FP64)
        k_gather<double, double><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, bs, idx, (const double *)x->data, (double *)y->data);
    else
        k_gather<float, float><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, bs, idx, (const float *)x->data, (float *)y->data);
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

// ---- the layout: a process's rows scanned and split (dist_scan, dist_split) ---------------
// solver/cpu/cpu_dist.c is the reference. A thread a row counts and fills the rows, the row
// pointers and column lists come from scans, and each row is ordered by cub's stable segmented
// sort (equal columns keep the caller's order, as the reference's sort by column and
// position): the reference's bytes.

/* Per internal row ni: its owned columns (Koo's count, at cnt_oo[ni]) and, for a boundary row,
 * its length (Kbnd's count, at cnt_b[ni - nint]). */
__global__ void k_split_count(hk_dist_rows R, int64_t *cnt_oo, int64_t *cnt_b)
{
    const int64_t ni = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (ni >= R.nown) return;
    const int64_t i = R.perm[ni], p0 = R.rowptr[i], p1 = R.rowptr[i + 1];
    int64_t k = p1 - p0;
    if (ni >= R.nint) {
        for (int64_t p = p0; p < p1; p++)
            k -= R.colind[p] < R.row0 || R.colind[p] >= R.row0 + R.nown;
        cnt_b[ni - R.nint] = p1 - p0;
    }
    cnt_oo[ni] = k;
}

/* Koo's rows in the caller's order of blocks: owned columns renumbered, their positions. */
__global__ void k_split_fill_oo(hk_dist_rows R, const int64_t *__restrict__ rp, int32_t *col,
                                int32_t *src)
{
    const int64_t ni = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (ni >= R.nown) return;
    const int64_t i = R.perm[ni];
    int64_t q = rp[ni];
    for (int64_t p = R.rowptr[i]; p < R.rowptr[i + 1]; p++) {
        const int32_t g = R.colind[p];
        if (g >= R.row0 && g < R.row0 + R.nown) {
            col[q] = R.inv[g - R.row0];
            src[q++] = (int32_t)p;
        }
    }
}

/* flag[j] = 1 for every owned column j a boundary row reads (every writer writes 1). */
__global__ void k_split_mark(int64_t nint, int64_t nown, const int64_t *__restrict__ rp,
                             const int32_t *__restrict__ col, int64_t *flag)
{
    const int64_t ni = nint + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (ni >= nown) return;
    for (int64_t p = rp[ni]; p < rp[ni + 1]; p++)
        flag[col[p]] = 1;
}

/* bcol from the flags and their running count (pos[j]: the flagged columns before j). */
__global__ void k_split_bcol(int64_t nown, const int64_t *__restrict__ flag,
                             const int64_t *__restrict__ pos, int32_t *bcol)
{
    const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (j < nown && flag[j]) bcol[pos[j]] = (int32_t)j;
}

/* Kbnd's rows in the caller's order of blocks: an owned column's place in bcol, a ghost's
 * after the nbc owned ones (its place in the sorted ghost list). */
__global__ void k_split_fill_bnd(hk_dist_rows R, const int64_t *__restrict__ rp,
                                 const int64_t *__restrict__ pos, int64_t nbc, int32_t *col,
                                 int32_t *src)
{
    const int64_t nb = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (nb >= R.nown - R.nint) return;
    const int64_t i = R.perm[R.nint + nb], p0 = R.rowptr[i], q = rp[nb];
    for (int64_t p = p0; p < R.rowptr[i + 1]; p++) {
        const int64_t g = R.colind[p];
        const int64_t c = g >= R.row0 && g < R.row0 + R.nown
                              ? pos[R.inv[g - R.row0]]
                              : nbc + hk_lower_bound_i64(R.ghost, 0, R.nghost, g);
        col[q + p - p0] = (int32_t)c;
        src[q + p - p0] = (int32_t)p;
    }
}

/* flag[i] = 1 where row i (rowptr rp) is not in column order. */
__global__ void k_rows_unsorted(int64_t n, const int64_t *__restrict__ rp,
                                const int32_t *__restrict__ col, int64_t *flag)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    int64_t bad = 0;
    for (int64_t p = rp[i] + 1; p < rp[i + 1] && !bad; p++)
        bad = col[p] < col[p - 1];
    flag[i] = bad;
}

/* The flagged rows sorted in place by column, a thread a row, src moved with them: insertion,
 * so equal columns keep their order (the stable sort's result). */
__global__ void k_rows_insertion(int64_t n, const int64_t *__restrict__ rp,
                                 const int64_t *__restrict__ flag, int32_t *col, int32_t *src)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n || !flag[i]) return;
    const int64_t p0 = rp[i];
    for (int64_t p = p0 + 1; p < rp[i + 1]; p++) {
        const int32_t c = col[p], v = src[p];
        int64_t q = p;
        for (; q > p0 && col[q - 1] > c; q--) {
            col[q] = col[q - 1];
            src[q] = src[q - 1];
        }
        col[q] = c;
        src[q] = v;
    }
}

/* The rows of M (rowptr rp, n rows, nnz blocks; col and src as filled, in the caller's order of
 * blocks) sorted by column in place, src moved with them, equal columns in their order. After
 * the internal renumbering nearly every row is in order already (it keeps the caller's order
 * within the interior and within the boundary rows; the caller's rows are ascending as
 * assembled), so the rows out of order are found first and, while they are few (at most one
 * in 8), sorted by a thread each; otherwise all by cub's stable segmented sort. The same bytes
 * either way. */
static int sort_rows(int64_t n, int64_t nnz, const int64_t *rp, int32_t *col, int32_t *src)
{
    if (nnz == 0 || n == 0) return 0;
    int ierr = 0;
    int64_t *flag = NULL, *at = NULL, unsorted = 0;
    int32_t *col_in = NULL, *src_in = NULL;
    void *tmp = NULL;
    HK_TRY(hk_cu_tmp_alloc((void **)&flag, (size_t)(n + 1) * sizeof *flag));
    HK_TRY(hk_cu_tmp_alloc((void **)&at, (size_t)(n + 1) * sizeof *at));
    HK_CU_TRY(cudaMemsetAsync(flag + n, 0, sizeof *flag, hk_cu.stream));
    k_rows_unsorted<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, rp, col, flag);
    HK_CU_TRY(cudaGetLastError());
    HK_TRY(dist_scan<int64_t>(flag, at, n + 1));
    HK_CU_TRY(cudaMemcpyAsync(&unsorted, at + n, 8, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    if (unsorted == 0) goto fail;
    if (unsorted * 8 <= n) {
        k_rows_insertion<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, rp, flag, col, src);
        HK_CU_TRY(cudaGetLastError());
        goto fail;
    }
    {
        HK_TRY(hk_cu_tmp_alloc((void **)&col_in, (size_t)nnz * sizeof *col_in));
        HK_TRY(hk_cu_tmp_alloc((void **)&src_in, (size_t)nnz * sizeof *src_in));
        HK_CU_TRY(cudaMemcpyAsync(col_in, col, (size_t)nnz * sizeof *col,
                                  cudaMemcpyDeviceToDevice, hk_cu.stream));
        HK_CU_TRY(cudaMemcpyAsync(src_in, src, (size_t)nnz * sizeof *src,
                                  cudaMemcpyDeviceToDevice, hk_cu.stream));
        size_t tb = 0;
        HK_CU_TRY(cub::DeviceSegmentedSort::StableSortPairs(NULL, tb, col_in, col, src_in, src,
                                                            nnz, n, rp, rp + 1, hk_cu.stream));
        HK_TRY(hk_cu_tmp_alloc(&tmp, tb + 16));
        HK_CU_TRY(cub::DeviceSegmentedSort::StableSortPairs(tmp, tb, col_in, col, src_in, src,
                                                            nnz, n, rp, rp + 1, hk_cu.stream));
    }
fail:
    /* stream-ordered frees after the work that reads them */
    hk_cu_tmp_free(tmp);
    hk_cu_tmp_free(col_in);
    hk_cu_tmp_free(src_in);
    hk_cu_tmp_free(flag);
    hk_cu_tmp_free(at);
    return ierr;
}

int hk_cu_dist_split(const hk_dist_rows *R, hk_bmat *Koo, int32_t **src_oo, hk_bmat *Kbnd,
                     int32_t **src_bnd, int32_t **bcol, int64_t *nbc)
{
    int ierr = 0;
    const int64_t nown = R->nown, nbnd = R->nown - R->nint;
    int64_t *cnt = NULL, *rp_oo = NULL, *rp_b = NULL, *pos = NULL, tot[2] = {0, 0};
    int64_t nnz_oo = 0, nnz_b = 0;
    int64_t *flag = NULL;
    memset(Koo, 0, sizeof *Koo);
    memset(Kbnd, 0, sizeof *Kbnd);
    *src_oo = *src_bnd = *bcol = NULL;
    *nbc = 0;
    HK_TRY(hk_cu_init());
    /* the counts and both matrices' row pointers, their sizes to the host */
    HK_TRY(hk_cu_tmp_alloc((void **)&cnt, (size_t)(nown + nbnd + 1) * sizeof *cnt));
    HK_CU_TRY(cudaMemsetAsync(cnt, 0, (size_t)(nown + nbnd + 1) * sizeof *cnt, hk_cu.stream));
    HK_TRY(hk_cu_tmp_alloc((void **)&rp_oo, (size_t)(nown + 1) * sizeof *rp_oo));
    HK_TRY(hk_cu_tmp_alloc((void **)&rp_b, (size_t)(nbnd + 1) * sizeof *rp_b));
    if (nown) {
        k_split_count<<<hk_cu_grid(nown), HK_CU_BLOCK, 0, hk_cu.stream>>>(*R, cnt, cnt + nown);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(dist_scan<int64_t>(cnt, rp_oo, nown + 1)); /* cnt[nown] is read, not summed */
    HK_TRY(dist_scan<int64_t>(cnt + nown, rp_b, nbnd + 1));
    HK_CU_TRY(cudaMemcpyAsync(tot, rp_oo + nown, 8, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaMemcpyAsync(tot + 1, rp_b + nbnd, 8, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    nnz_oo = tot[0], nnz_b = tot[1];
    /* Koo: filled in the caller's order, then each row sorted into place */
    HK_TRY(hk_bmat_alloc(&hk_backend_cuda, R->bs, R->bs, nown, nown, nnz_oo, Koo));
    HK_CU_TRY(cudaMemcpyAsync(Koo->rowptr, rp_oo, (size_t)(nown + 1) * sizeof *rp_oo,
                              cudaMemcpyDeviceToDevice, hk_cu.stream));
    HK_TRY(hk_cu_malloc((void **)src_oo, (size_t)(nnz_oo + 1) * sizeof **src_oo));
    if (nown) {
        k_split_fill_oo<<<hk_cu_grid(nown), HK_CU_BLOCK, 0, hk_cu.stream>>>(*R, rp_oo, Koo->colind,
                                                                           *src_oo);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(sort_rows(nown, nnz_oo, rp_oo, Koo->colind, *src_oo));
    /* the owned columns the boundary rows read: flagged, numbered by a running count */
    HK_TRY(hk_cu_tmp_alloc((void **)&flag, (size_t)(nown + 1) * sizeof *flag));
    HK_TRY(hk_cu_tmp_alloc((void **)&pos, (size_t)(nown + 1) * sizeof *pos));
    HK_CU_TRY(cudaMemsetAsync(flag, 0, (size_t)(nown + 1) * sizeof *flag, hk_cu.stream));
    if (nbnd) {
        k_split_mark<<<hk_cu_grid(nbnd), HK_CU_BLOCK, 0, hk_cu.stream>>>(R->nint, nown, rp_oo,
                                                                         Koo->colind, flag);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(dist_scan<int64_t>(flag, pos, nown + 1));
    HK_CU_TRY(cudaMemcpyAsync(nbc, pos + nown, 8, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    HK_TRY(hk_cu_malloc((void **)bcol, (size_t)(*nbc + 1) * sizeof **bcol));
    if (nown) {
        k_split_bcol<<<hk_cu_grid(nown), HK_CU_BLOCK, 0, hk_cu.stream>>>(nown, flag, pos, *bcol);
        HK_CU_TRY(cudaGetLastError());
    }
    /* Kbnd: the boundary rows whole, filled in the caller's order, then sorted into place */
    HK_TRY(hk_bmat_alloc(&hk_backend_cuda, R->bs, R->bs, nbnd, *nbc + R->nghost, nnz_b, Kbnd));
    HK_CU_TRY(cudaMemcpyAsync(Kbnd->rowptr, rp_b, (size_t)(nbnd + 1) * sizeof *rp_b,
                              cudaMemcpyDeviceToDevice, hk_cu.stream));
    HK_TRY(hk_cu_malloc((void **)src_bnd, (size_t)(nnz_b + 1) * sizeof **src_bnd));
    if (nbnd) {
        k_split_fill_bnd<<<hk_cu_grid(nbnd), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            *R, rp_b, pos, *nbc, Kbnd->colind, *src_bnd);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(sort_rows(nbnd, nnz_b, rp_b, Kbnd->colind, *src_bnd));
fail:
    /* stream-ordered frees after the work that reads them */
    hk_cu_tmp_free(cnt);
    hk_cu_tmp_free(rp_oo);
    hk_cu_tmp_free(rp_b);
    hk_cu_tmp_free(pos);
    hk_cu_tmp_free(flag);
    if (ierr) {
        cudaStreamSynchronize(hk_cu.stream);
        hk_bmat_free(Koo);
        hk_bmat_free(Kbnd);
        cudaFree(*src_oo);
        cudaFree(*src_bnd);
        cudaFree(*bcol);
        *src_oo = *src_bnd = *bcol = NULL;
    }
    return ierr;
}

/* A thread a row: its kind (-1: reads a column outside the owned ones, -2: not), each such
 * column flagged (every writer writes 1), the first row with a column outside [0, nglobal)
 * lowered into *bad (atomicMin: the same row in any order). */
__global__ void k_scan_rows(hk_dist_rows R, int32_t *kind, int64_t *flag, unsigned long long *bad)
{
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= R.nown) return;
    int bnd = 0;
    for (int64_t p = R.rowptr[i]; p < R.rowptr[i + 1]; p++) {
        const int32_t g = R.colind[p];
        if (g < 0 || g >= R.nglobal) {
            atomicMin(bad, (unsigned long long)i);
            break;
        }
        if (g < R.row0 || g >= R.row0 + R.nown) {
            bnd = 1;
            flag[g] = 1;
        }
    }
    kind[i] = bnd ? -1 : -2;
}

/* The flagged columns listed in order (pos[g]: the flagged columns before g). */
__global__ void k_scan_list(int64_t n, const int64_t *__restrict__ flag,
                            const int64_t *__restrict__ pos, int64_t *ghost)
{
    const int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (g < n && flag[g]) ghost[pos[g]] = g;
}

int hk_cu_dist_scan(const hk_dist_rows *R, int32_t *kind, int64_t **ghost, int64_t *nghost,
                    int64_t *bad)
{
    int ierr = 0;
    const int64_t nown = R->nown, nglobal = R->nglobal;
    int64_t *flag = NULL, *pos = NULL;
    unsigned long long *first = NULL;
    *ghost = NULL;
    *nghost = 0;
    *bad = -1;
    HK_TRY(hk_cu_init());
    HK_TRY(hk_cu_setup_flag(&first));
    HK_TRY(hk_cu_tmp_alloc((void **)&flag, (size_t)(nglobal + 1) * sizeof *flag));
    HK_TRY(hk_cu_tmp_alloc((void **)&pos, (size_t)(nglobal + 1) * sizeof *pos));
    HK_CU_TRY(cudaMemsetAsync(flag, 0, (size_t)(nglobal + 1) * sizeof *flag, hk_cu.stream));
    if (nown) {
        k_scan_rows<<<hk_cu_grid(nown), HK_CU_BLOCK, 0, hk_cu.stream>>>(*R, kind, flag, first);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_first_row_read(first, bad));
    if (*bad >= 0) goto fail;
    HK_TRY(dist_scan<int64_t>(flag, pos, nglobal + 1));
    HK_CU_TRY(cudaMemcpyAsync(nghost, pos + nglobal, 8, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    HK_TRY(hk_cu_malloc((void **)ghost, (size_t)(*nghost + 1) * sizeof **ghost));
    if (nglobal) {
        k_scan_list<<<hk_cu_grid(nglobal), HK_CU_BLOCK, 0, hk_cu.stream>>>(nglobal, flag, pos,
                                                                           *ghost);
        HK_CU_TRY(cudaGetLastError());
    }
fail:
    hk_cu_tmp_free(flag);
    hk_cu_tmp_free(pos);
    if (ierr) {
        cudaStreamSynchronize(hk_cu.stream);
        cudaFree(*ghost);
        *ghost = NULL;
    }
    return ierr;
}

// dist_global_columns: one thread an entry (cpu_dist.c is the reference).
__global__ void k_global_columns(int64_t n, int64_t row0, int64_t nown,
                                 const int64_t *__restrict__ ghost_gid, int64_t nghost,
                                 const int32_t *__restrict__ col, int32_t *__restrict__ out)
{
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = col[k];
        out[k] = (int32_t)(c >= 0 && c < nown               ? row0 + c
                           : c >= nown && c < nown + nghost ? ghost_gid[c - nown]
                                                            : -1);
    }
}

int hk_cu_dist_global_columns(const int32_t *col, int64_t n, int64_t row0, int64_t nown,
                              const int64_t *ghost_gid, int64_t nghost, int32_t *out)
{
    if (n == 0) return 0;
    k_global_columns<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, row0, nown, ghost_gid,
                                                                      nghost, col, out);
    HK_CU_LAUNCHED();
    return 0;
}

// ---- coo_to_csr (hk_impl.h): COO to CSR, duplicates summed in input order ------------------
// Every input entry gets a sort key (row << kbits | key; an entry without a row, or a bad one,
// the row nrows: after all of them) and its input index; cub's radix sort, which is stable,
// puts equal keys in input order; a run of equal keys is one output block, summed by one thread
// per value in the run's order, the first copied and the others added (additions alone: no
// contraction can change them), the CPU's operations in the CPU's order.

// A's blocks (a thread per row of A): their sort keys and input indices.
__global__ void k_coo_keys_csr(int64_t nar, const int64_t *__restrict__ rowptr,
                               const int32_t *__restrict__ colind, const int32_t *__restrict__ rmap,
                               const int64_t *__restrict__ cmap, int64_t nrows, int64_t nkeys,
                               int kbits, uint64_t *__restrict__ skey, int32_t *__restrict__ src,
                               unsigned long long *bad)
{
    const uint64_t none = (uint64_t)nrows << kbits;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nar;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int32_t r = rmap[i];
        for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++) {
            uint64_t k = none;
            if (r >= 0) {
                const int64_t c = cmap[colind[p]];
                if (r >= nrows || c < 0 || c >= nkeys)
                    atomicMin(bad, (unsigned long long)p);
                else
                    k = (uint64_t)r << kbits | (uint64_t)c;
            }
            skey[p] = k;
            src[p] = (int32_t)p;
        }
    }
}

// The other entries (a thread each), after A's na blocks.
__global__ void k_coo_keys_entries(int64_t n, int64_t na, const int32_t *__restrict__ erow,
                                   const int64_t *__restrict__ ekey, int64_t nrows, int64_t nkeys,
                                   int kbits, uint64_t *__restrict__ skey,
                                   int32_t *__restrict__ src, unsigned long long *bad)
{
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int32_t r = erow[k];
        const int64_t c = ekey[k];
        uint64_t key = (uint64_t)nrows << kbits;
        if (r < 0 || r >= nrows || c < 0 || c >= nkeys)
            atomicMin(bad, (unsigned long long)(na + k));
        else
            key = (uint64_t)r << kbits | (uint64_t)c;
        skey[na + k] = key;
        src[na + k] = (int32_t)(na + k);
    }
}

// flag[j] = 1 where sorted entry j starts a run of equal keys.
__global__ void k_coo_flags(int64_t m, const uint64_t *__restrict__ skey, int32_t *__restrict__ flag)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < m;
         j += (int64_t)gridDim.x * blockDim.x)
        flag[j] = j == 0 || skey[j] != skey[j - 1];
}

// start[q] = the first sorted entry of run q (pos: the flags' inclusive sums); start[runs] = m.
__global__ void k_coo_starts(int64_t m, const int32_t *__restrict__ flag,
                             const int32_t *__restrict__ pos, int32_t *__restrict__ start)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < m;
         j += (int64_t)gridDim.x * blockDim.x) {
        if (flag[j]) start[pos[j] - 1] = (int32_t)j;
        if (j == m - 1) start[pos[j]] = (int32_t)m;
    }
}

// rowptr from the runs' rows (runs q < nnz ascending by row): run q sets the rows from the
// previous run's row + 1 to its own; q = nnz the rows after the last run's.
__global__ void k_coo_rowptr(int64_t nnz, int64_t nrows, int kbits, const uint64_t *__restrict__ skey,
                             const int32_t *__restrict__ start, int64_t *__restrict__ rowptr)
{
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q <= nnz;
         q += (int64_t)gridDim.x * blockDim.x) {
        const int64_t prev = q > 0 ? (int64_t)(skey[start[q - 1]] >> kbits) : -1;
        const int64_t row = q < nnz ? (int64_t)(skey[start[q]] >> kbits) : nrows;
        for (int64_t r = prev + 1; r <= row; r++)
            rowptr[r] = q;
    }
}

// Block q's key and its values: one thread per value, its run's entries in order.
__global__ void k_coo_sum(int64_t nnz, int bsz, uint64_t kmask, const uint64_t *__restrict__ skey,
                          const int32_t *__restrict__ start, const int32_t *__restrict__ src,
                          int64_t na, const double *__restrict__ aval,
                          const double *__restrict__ eval, int64_t *__restrict__ key,
                          double *__restrict__ val)
{
    const int64_t m = nnz * bsz;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < m;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t q = t / bsz;
        const int e = (int)(t - q * bsz);
        const int32_t s0 = start[q], s1 = start[q + 1];
        if (e == 0) key[q] = (int64_t)(skey[s0] & kmask);
        double v = 0;
        for (int32_t j = s0; j < s1; j++) {
            const int64_t s = src[j];
            const double x = s < na ? aval[s * bsz + e] : eval[(s - na) * bsz + e];
            v = j == s0 ? x : __dadd_rn(v, x);
        }
        val[t] = v;
    }
}

// bits that hold the values 0..v
static int coo_bits(uint64_t v)
{
    int b = 0;
    while (b < 64 && (v >> b)) b++;
    return b;
}

int hk_cu_coo_to_csr(const hk_bmat *A, const int32_t *rmap, const int64_t *cmap, int64_t n,
                     const int32_t *erow, const int64_t *ekey, const double *eval, int64_t nrows,
                     int64_t nkeys, int64_t **rowptr_out, int64_t **key_out, double **val_out)
{
    const int bsz = A->br * A->bc;
    const int64_t na = A->nnzb, m = na + n;
    const int kbits = coo_bits(nkeys > 1 ? (uint64_t)(nkeys - 1) : 0);
    const int rbits = coo_bits((uint64_t)nrows);
    int ierr = 0;
    uint64_t *skey = NULL;
    int32_t *src = NULL, *flag = NULL, *pos = NULL, *start = NULL;
    void *tmp = NULL;
    unsigned long long *bad = NULL;
    int64_t *rowptr = NULL, *key = NULL, first_bad = -1, nnz = 0;
    double *val = NULL;
    *rowptr_out = *key_out = NULL;
    *val_out = NULL;
    HK_CHECK(m < INT32_MAX && rbits + kbits <= 64, HK_ERR_UNSUPPORTED,
             "coo_to_csr on cuda: %lld entries of %lld rows and %lld keys are more than its "
             "32-bit indices and 64-bit sort keys hold; run on more processes",
             (long long)m, (long long)nrows, (long long)nkeys);
    HK_CALL(hk_cu_init());
    HK_TRY(hk_cu_setup_flag(&bad));
    HK_TRY(hk_cu_tmp_alloc((void **)&skey, (size_t)(2 * m + 1) * sizeof *skey));
    HK_TRY(hk_cu_tmp_alloc((void **)&src, (size_t)(2 * m + 1) * sizeof *src));
    if (A->nbrows) {
        k_coo_keys_csr<<<hk_cu_grid(A->nbrows), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            A->nbrows, A->rowptr, A->colind, rmap, cmap, nrows, nkeys, kbits, skey, src, bad);
        HK_CU_TRY(cudaGetLastError());
    }
    if (n) {
        k_coo_keys_entries<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, na, erow, ekey, nrows, nkeys, kbits, skey, src, bad);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_first_row_read(bad, &first_bad));
    if (first_bad >= 0) {
        ierr = hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                            "coo_to_csr: input entry %lld has its row or key out of range (rows "
                            "0..%lld, keys 0..%lld)",
                            (long long)first_bad, (long long)nrows - 1, (long long)nkeys - 1);
        goto fail;
    }
    HK_TRY(hk_cu_malloc((void **)&rowptr, (size_t)(nrows + 1) * sizeof *rowptr));
    if (m && nrows) {
        HK_TRY(hk_cu_tmp_alloc((void **)&flag, (size_t)m * sizeof *flag));
        HK_TRY(hk_cu_tmp_alloc((void **)&pos, (size_t)m * sizeof *pos));
        HK_TRY(hk_cu_tmp_alloc((void **)&start, (size_t)(m + 1) * sizeof *start));
        cub::DoubleBuffer<uint64_t> dk(skey, skey + m);
        cub::DoubleBuffer<int32_t> dv(src, src + m);
        size_t tb = 0;
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(NULL, tb, dk, dv, (int)m, 0, rbits + kbits,
                                                   hk_cu.stream));
        HK_TRY(hk_cu_tmp_alloc(&tmp, tb ? tb : 8));
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(tmp, tb, dk, dv, (int)m, 0, rbits + kbits,
                                                   hk_cu.stream));
        const uint64_t *sk = dk.Current();
        const int32_t *ss = dv.Current();
        k_coo_flags<<<hk_cu_grid(m), HK_CU_BLOCK, 0, hk_cu.stream>>>(m, sk, flag);
        HK_CU_TRY(cudaGetLastError());
        hk_cu_tmp_free(tmp);
        tmp = NULL;
        tb = 0;
        HK_CU_TRY(cub::DeviceScan::InclusiveSum(NULL, tb, flag, pos, (int)m, hk_cu.stream));
        HK_TRY(hk_cu_tmp_alloc(&tmp, tb ? tb : 8));
        HK_CU_TRY(cub::DeviceScan::InclusiveSum(tmp, tb, flag, pos, (int)m, hk_cu.stream));
        k_coo_starts<<<hk_cu_grid(m), HK_CU_BLOCK, 0, hk_cu.stream>>>(m, flag, pos, start);
        HK_CU_TRY(cudaGetLastError());
        /* the runs, less the last one where it is the entries without a row */
        int32_t runs = 0;
        uint64_t last = 0;
        HK_CU_TRY(cudaMemcpyAsync(&runs, pos + m - 1, sizeof runs, cudaMemcpyDeviceToHost,
                                  hk_cu.stream));
        HK_CU_TRY(cudaMemcpyAsync(&last, sk + m - 1, sizeof last, cudaMemcpyDeviceToHost,
                                  hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        nnz = runs - ((int64_t)(last >> kbits) >= nrows);
        HK_TRY(hk_cu_malloc((void **)&key, (size_t)(nnz + 1) * sizeof *key));
        HK_TRY(hk_cu_malloc((void **)&val, (size_t)(nnz * bsz + 1) * sizeof *val));
        k_coo_rowptr<<<hk_cu_grid(nnz + 1), HK_CU_BLOCK, 0, hk_cu.stream>>>(nnz, nrows, kbits, sk,
                                                                          start, rowptr);
        HK_CU_TRY(cudaGetLastError());
        if (nnz) {
            const uint64_t kmask = kbits ? ~(uint64_t)0 >> (64 - kbits) : 0;
            k_coo_sum<<<hk_cu_grid(nnz * bsz), HK_CU_BLOCK, 0, hk_cu.stream>>>(
                nnz, bsz, kmask, sk, start, ss, na, A->val, eval, key, val);
            HK_CU_TRY(cudaGetLastError());
        }
    } else { /* no entry with a row: every row empty */
        HK_TRY(hk_cu_malloc((void **)&key, sizeof *key));
        HK_TRY(hk_cu_malloc((void **)&val, sizeof *val));
        HK_CU_TRY(cudaMemsetAsync(rowptr, 0, (size_t)(nrows + 1) * sizeof *rowptr, hk_cu.stream));
    }
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    *rowptr_out = rowptr;
    *key_out = key;
    *val_out = val;
    rowptr = key = NULL;
    val = NULL;
fail:
    cudaStreamSynchronize(hk_cu.stream);
    hk_cu_tmp_free(skey), hk_cu_tmp_free(src), hk_cu_tmp_free(flag), hk_cu_tmp_free(pos);
    hk_cu_tmp_free(start), hk_cu_tmp_free(tmp);
    if (rowptr) cudaFree(rowptr);
    if (key) cudaFree(key);
    if (val) cudaFree(val);
    return ierr;
}

// cub's kernels of this file (cuda_impl.cuh: hk_cu_warm): coo_to_csr's sort and scan, with the
// template arguments of those calls.
static void dist_warm_cub(void)
{
    const int64_t N = HK_CU_WARM_LARGE;
    char *w = (char *)hk_cu_warm_buffer((size_t)N * 32);
    if (!w) return;
    uint64_t *keys = (uint64_t *)w;
    int32_t *vals = (int32_t *)(w + 16 * N), *flag = vals + 2 * N, *pos = flag + N;
    const int sizes[2] = {HK_CU_WARM_SMALL, (int)N};
    for (int k = 0; k < 2; k++) {
        const int n = sizes[k];
        cub::DoubleBuffer<uint64_t> dk(keys, keys + n);
        cub::DoubleBuffer<int32_t> dv(vals, vals + n);
        hk_cu_warm([&](void *t, size_t &tb) {
            return cub::DeviceRadixSort::SortPairs(t, tb, dk, dv, n, 0, 40, hk_cu.stream);
        });
        hk_cu_warm([&](void *t, size_t &tb) {
            return cub::DeviceScan::InclusiveSum(t, tb, flag, pos, n, hk_cu.stream);
        });
    }
    hk_cu_warm_free(w);
}

// Loaded by hk_cu_init (cuda_impl.cuh: hk_cu_preloads): coo_to_csr's kernels and cub's
// (warmed), used by every distributed AMG set-up.
void hk_cu_dist_preload(void)
{
    static const void *const k[] = {(const void *)k_coo_keys_csr, (const void *)k_coo_keys_entries,
                                    (const void *)k_coo_flags,    (const void *)k_coo_starts,
                                    (const void *)k_coo_rowptr,   (const void *)k_coo_sum};
    hk_cu_preload(k, (int)(sizeof k / sizeof *k));
    dist_warm_cub();
}

// The ghost rows of the distributed AMG set-up (dist_row_lengths ... dist_extend_rows, hk_impl.h;
// solver/dist/dist_amg.c): the rows a neighbour needs packed into records, and the matrix of a
// process's rows with its ghosts' rows from the received records. A record is copied by a warp,
// its lanes along its entries; the same bytes as the cpu's loops.
#define HK_CU_DIST_WARPS (HK_CU_BLOCK / 32)

__global__ void k_dist_row_lengths(int64_t n, const int64_t *__restrict__ rowptr,
                                   const int32_t *__restrict__ rows, int64_t *__restrict__ len)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < n;
         j += (int64_t)gridDim.x * blockDim.x)
        len[j] = rowptr[rows[j] + 1] - rowptr[rows[j]];
}

int hk_cu_dist_row_lengths(const hk_bmat *A, const int32_t *rows, int64_t n, int64_t *len)
{
    if (n == 0) return 0;
    k_dist_row_lengths<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, A->rowptr, rows, len);
    HK_CU_LAUNCHED();
    return 0;
}

__global__ void k_dist_pack_rows(int64_t n, int bsz, const int64_t *__restrict__ rowptr,
                                 const int32_t *__restrict__ colind, const double *__restrict__ val,
                                 const int64_t *__restrict__ colmap,
                                 const int32_t *__restrict__ rows, const int64_t *__restrict__ at,
                                 double *__restrict__ out)
{
    const int lane = threadIdx.x & 31;
    for (int64_t j = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; j < n;
         j += ((int64_t)gridDim.x * blockDim.x) >> 5) {
        const int64_t i = rows[j], p0 = rowptr[i], len = rowptr[i + 1] - p0;
        double *r = out + at[j];
        if (lane == 0) r[0] = (double)len;
        const int64_t w = 1 + bsz;
        for (int64_t e = lane; e < len * w; e += 32) {
            const int64_t k = e / w, f = e - k * w;
            r[1 + e] = f == 0 ? (double)colmap[colind[p0 + k]] : val[(p0 + k) * bsz + f - 1];
        }
    }
}

int hk_cu_dist_pack_rows(const hk_bmat *A, const int64_t *colmap, const int32_t *rows, int64_t n,
                         const int64_t *at, double *out)
{
    if (n == 0) return 0;
    k_dist_pack_rows<<<hk_cu_grid(n * 32), HK_CU_BLOCK, 0, hk_cu.stream>>>(
        n, A->br * A->bc, A->rowptr, A->colind, A->val, colmap, rows, at, out);
    HK_CU_LAUNCHED();
    return 0;
}

// Every thread that finds a column unmarked writes the same 1.
__global__ void k_dist_mark_columns(int64_t nnz, const int32_t *__restrict__ colind, int32_t *mark)
{
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < nnz;
         p += (int64_t)gridDim.x * blockDim.x)
        if (!mark[colind[p]]) mark[colind[p]] = 1;
}

int hk_cu_dist_mark_columns(const hk_bmat *A, int32_t *mark)
{
    if (A->nbcols == 0) return 0;
    HK_CU(cudaMemsetAsync(mark, 0, (size_t)A->nbcols * sizeof *mark, hk_cu.stream));
    if (A->nnzb == 0) return 0;
    k_dist_mark_columns<<<hk_cu_grid(A->nnzb), HK_CU_BLOCK, 0, hk_cu.stream>>>(A->nnzb, A->colind,
                                                                               mark);
    HK_CU_LAUNCHED();
    return 0;
}

// The owned rows' columns renamed, and the ghosts' rows' ends after the owned blocks.
__global__ void k_dist_owned_columns(int64_t nm, const int32_t *__restrict__ colind,
                                     const int32_t *__restrict__ cpos, int64_t nown, int64_t ng,
                                     const int64_t *__restrict__ gat, int32_t *__restrict__ xcol,
                                     int64_t *__restrict__ xrowptr)
{
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < nm + ng;
         p += (int64_t)gridDim.x * blockDim.x) {
        if (p < nm)
            xcol[p] = cpos[colind[p]];
        else
            xrowptr[nown + (p - nm) + 1] = nm + gat[p - nm + 1];
    }
}

__global__ void k_dist_ghost_rows(int64_t ng, int bsz, int64_t nm, const double *__restrict__ rec,
                                  const int64_t *__restrict__ rat, const int64_t *__restrict__ gat,
                                  const int64_t *__restrict__ cols, int64_t ncols,
                                  int32_t *__restrict__ xcol, double *__restrict__ xval)
{
    const int lane = threadIdx.x & 31;
    for (int64_t k = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; k < ng;
         k += ((int64_t)gridDim.x * blockDim.x) >> 5) {
        const double *r = rec + rat[k] + 1;
        const int64_t q0 = nm + gat[k], len = gat[k + 1] - gat[k], w = 1 + bsz;
        for (int64_t e = lane; e < len * w; e += 32) {
            const int64_t j = e / w, f = e - j * w;
            if (f == 0)
                xcol[q0 + j] = (int32_t)hk_lower_bound_i64(cols, 0, ncols, (int64_t)r[e]);
            else
                xval[(q0 + j) * bsz + f - 1] = r[e];
        }
    }
}

int hk_cu_dist_extend_rows(const hk_bmat *A, const int32_t *cpos, int64_t ng, const double *rec,
                           const int64_t *rat, const int64_t *gat, const int64_t *cols,
                           int64_t ncols, hk_bmat *X)
{
    const int bsz = A->br * A->bc;
    const int64_t nown = A->nbrows, nm = A->nnzb;
    HK_CU(cudaMemcpyAsync(X->rowptr, A->rowptr, (size_t)(nown + 1) * sizeof *X->rowptr,
                          cudaMemcpyDeviceToDevice, hk_cu.stream));
    if (nm)
        HK_CU(cudaMemcpyAsync(X->val, A->val, (size_t)(nm * bsz) * sizeof *X->val,
                              cudaMemcpyDeviceToDevice, hk_cu.stream));
    if (nm + ng) {
        k_dist_owned_columns<<<hk_cu_grid(nm + ng), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            nm, A->colind, cpos, nown, ng, gat, X->colind, X->rowptr);
        HK_CU_LAUNCHED();
    }
    if (ng) {
        k_dist_ghost_rows<<<hk_cu_grid(ng * 32), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            ng, bsz, nm, rec, rat, gat, cols, ncols, X->colind, X->val);
        HK_CU_LAUNCHED();
    }
    return 0;
}

/* copy_to_pageable, copy_from_pageable: the distributed AMG set-up's message staging is
 * pageable memory (pinning it costs more than its few copies save); its large copies go
 * through the backend's two pinned buffers, every host thread copying (cuda_staging.cu), the
 * small ones directly. */
#define HK_CU_PAGEABLE_MIN ((size_t)4 << 20)

int hk_cu_copy_to_pageable(void *dst, const void *host_src, size_t bytes)
{
    HK_CU(hk_cu_staged_upload(dst, host_src, bytes, hk_cu.stream, HK_CU_PAGEABLE_MIN, 0));
    return 0; /* the source has been read: the caller may write it */
}

int hk_cu_copy_from_pageable(void *host_dst, const void *src, size_t bytes)
{
    if (!bytes) return 0;
    HK_CU(hk_cu_staged_download(host_dst, src, bytes, hk_cu.stream, HK_CU_PAGEABLE_MIN, 0));
    return 0;
}
