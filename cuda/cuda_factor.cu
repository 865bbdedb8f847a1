// Fine-grained iterative IC(0) / ILU(0) on the device (op factor_sweeps; the rule and the CPU
// reference are in solver/pc/iterfact.c): a warp per row, each lane computing whole entries
// of the row with the same sums in the same order as the CPU (ascending k over row i, the
// partner entry found by binary search), from the previous sweep's values, so a sweep is one
// launch and the result does not depend on scheduling. Bad rows are reduced with an integer
// atomicMin (the smallest row wins: deterministic).
#include <string.h>

#include "cuda_impl.cuh"

__device__ __forceinline__ int64_t find_col(const int64_t *rowptr, const int32_t *colind, int64_t r,
                                            int32_t c)
{
    int64_t lo = rowptr[r], hi = rowptr[r + 1];
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (colind[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < rowptr[r + 1] && colind[lo] == c ? lo : -1;
}

/* diagonal positions; a missing one (or, for sym, one not last in its row) is a bad row */
__global__ void k_fs_diag(int64_t n, int sym, const int64_t *rowptr, const int32_t *colind,
                          int64_t *diag, unsigned long long *bad)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t d = find_col(rowptr, colind, i, (int32_t)i);
        diag[i] = d;
        if (d < 0 || (sym && d != rowptr[i + 1] - 1)) atomicMin(bad, (unsigned long long)i);
    }
}

__global__ void k_fs_start(int64_t n, int sym, const int64_t *rowptr, const int32_t *colind,
                           const int64_t *diag, const double *a, double *v)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        for (int64_t e = rowptr[i]; e < rowptr[i + 1]; e++)
            v[e] = !sym && colind[e] < i ? a[e] / a[diag[colind[e]]] : a[e];
}

__global__ void k_fs_sweep(int64_t n, int sym, int report, const int64_t *rowptr,
                           const int32_t *colind, const int64_t *diag, const double *a,
                           const double *old, double *v, unsigned long long *bad)
{
    const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (warp >= n) return;
    const int64_t i = warp, b = rowptr[i], end = rowptr[i + 1];
    for (int64_t e = b + lane; e < end; e += 32) {
        const int32_t j = colind[e];
        const int32_t m = j < i ? j : (int32_t)i;
        double sum = a[e];
        for (int64_t p = b; p < end && colind[p] < m; p++) {
            const int32_t k = colind[p];
            const int64_t q = sym ? find_col(rowptr, colind, j, k) : find_col(rowptr, colind, k, j);
            if (q >= 0) sum -= old[p] * old[q];
        }
        if (j < i) {
            v[e] = sum / old[diag[j]];
        } else if (sym) {
            if (sum > 0 && isfinite(sum))
                v[e] = sqrt(sum);
            else if (report)
                atomicMin(bad, (unsigned long long)i);
        } else {
            v[e] = sum;
            if (j == i && !(sum != 0 && isfinite(sum)) && report)
                atomicMin(bad, (unsigned long long)i);
        }
    }
}

int hk_cu_factor_sweeps(const hk_bmat *A, int sym, int sweeps, hk_bmat *F, int64_t *bad)
{
    int ierr = 0;
    const int64_t n = A->nbrows, nnz = A->nnzb;
    double *old = NULL;
    int64_t *diag = NULL;
    unsigned long long *dbad = NULL, hbad[2] = {(unsigned long long)n, (unsigned long long)n};
    *bad = -1;
    memset(F, 0, sizeof *F);
    HK_CHECK(A->br == 1 && A->bc == 1 && A->nbrows == A->nbcols, HK_ERR_ARG,
             "factor_sweeps: the matrix must be square with 1 x 1 blocks");
    const int64_t blocks = (n * 32 + HK_CU_BLOCK - 1) / HK_CU_BLOCK;
    HK_CHECK(blocks < ((int64_t)1 << 31), HK_ERR_UNSUPPORTED,
             "factor_sweeps: %lld rows exceed one launch of a warp per row; use sweeps=0 (the "
             "exact factorisation on the host)",
             (long long)n);
    HK_CALL(hk_cu_init());
    HK_CALL(hk_bmat_alloc(A->be, 1, 1, n, n, nnz, F));
    HK_TRY(hk_cu_malloc((void **)&old, (size_t)(nnz ? nnz : 1) * sizeof *old));
    HK_TRY(hk_cu_malloc((void **)&diag, (size_t)(n ? n : 1) * sizeof *diag));
    HK_TRY(hk_cu_malloc((void **)&dbad, sizeof hbad));
    HK_CU_TRY(cudaMemcpyAsync(dbad, hbad, sizeof hbad, cudaMemcpyHostToDevice, hk_cu.stream));
    HK_CU_TRY(cudaMemcpyAsync(F->rowptr, A->rowptr, (size_t)(n + 1) * sizeof *F->rowptr,
                              cudaMemcpyDeviceToDevice, hk_cu.stream));
    if (nnz)
        HK_CU_TRY(cudaMemcpyAsync(F->colind, A->colind, (size_t)nnz * sizeof *F->colind,
                                  cudaMemcpyDeviceToDevice, hk_cu.stream));
    if (n) {
        k_fs_diag<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, sym, A->rowptr, A->colind,
                                                                   diag, dbad);
        HK_CU_TRY(cudaGetLastError());
        HK_CU_TRY(cudaMemcpyAsync(hbad, dbad, sizeof hbad, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        if (hbad[0] < (unsigned long long)n) {
            *bad = (int64_t)hbad[0];
            goto fail;
        }
        k_fs_start<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, sym, A->rowptr, A->colind,
                                                                    diag, A->val, F->val);
        HK_CU_TRY(cudaGetLastError());
        for (int sw = 0; sw < sweeps; sw++) {
            HK_CU_TRY(cudaMemcpyAsync(old, F->val, (size_t)nnz * sizeof *old,
                                      cudaMemcpyDeviceToDevice, hk_cu.stream));
            k_fs_sweep<<<(unsigned)blocks, HK_CU_BLOCK, 0, hk_cu.stream>>>(
                n, sym, sw == sweeps - 1, A->rowptr, A->colind, diag, A->val, old, F->val,
                dbad + 1);
            HK_CU_TRY(cudaGetLastError());
        }
        HK_CU_TRY(cudaMemcpyAsync(hbad, dbad, sizeof hbad, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        if (hbad[1] < (unsigned long long)n) *bad = (int64_t)hbad[1];
    }
fail:
    if (old) cudaFree(old);
    if (diag) cudaFree(diag);
    if (dbad) cudaFree(dbad);
    if (ierr || *bad >= 0) hk_bmat_free(F);
    return ierr;
}
