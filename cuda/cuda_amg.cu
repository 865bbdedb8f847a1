// The AMG smoother op amg_l1_diag on the device (contract in solver/hk_impl.h; CPU reference
// solver/cpu/cpu_amg.c, same arithmetic): one thread per scalar row sums its row in column
// order. The first bad row is an integer atomicMin, exact and order-independent.
#include <math.h>

#include "cuda_impl.cuh"

// ---- the set-up's temporaries and first-bad-row flag ------------------------------------------
//
// cudaMalloc and cudaFree cost a driver call each and cudaFree waits for the whole device; the
// sparse products and the aggregation make and drop a handful of temporaries per level, in
// both the set-up and the values-only update. They come from the default memory pool in stream
// order instead (nothing waits; the pool keeps the pages mapped up to HK_CU_TMP_KEEP bytes, so
// the next level's or the next update's temporaries find them), and the flag is one word kept
// for the process.

static int tmp_pools = -1; // the device has memory pools (stream-ordered allocation)

static int tmp_pools_init(void)
{
    HK_CALL(hk_cu_init());
    if (tmp_pools >= 0) return 0;
    int on = 0;
    if (cudaDeviceGetAttribute(&on, cudaDevAttrMemoryPoolsSupported, hk_cu.device) != cudaSuccess)
        on = 0, cudaGetLastError();
    if (on) {
        cudaMemPool_t pool;
        uint64_t keep = HK_CU_TMP_KEEP; // the attribute is a 64-bit unsigned integer
        if (cudaDeviceGetDefaultMemPool(&pool, hk_cu.device) != cudaSuccess ||
            cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess)
            on = 0, cudaGetLastError();
    }
    tmp_pools = on;
    return 0;
}

/* The first stream-ordered allocation of a process creates the pool (about 9 ms on an H200,
 * against 0.05 ms for the next): hk_cu_init pays it with the device's start (hk_cu_preloads)
 * instead of the first set-up that allocates a temporary. A failure here is left to the first
 * real allocation to report. */
void hk_cu_pool_start(void)
{
    void *p = NULL;
    if (tmp_pools_init() || !tmp_pools) return;
    if (cudaMallocAsync(&p, 256, hk_cu.stream) == cudaSuccess)
        cudaFreeAsync(p, hk_cu.stream);
    else
        cudaGetLastError();
}

int hk_cu_tmp_alloc(void **p, size_t bytes)
{
    *p = NULL;
    HK_CALL(tmp_pools_init());
    if (!tmp_pools) return hk_cu_malloc(p, bytes);
    const cudaError_t e = cudaMallocAsync(p, bytes ? bytes : 256, hk_cu.stream);
    if (e == cudaSuccess) return 0;
    *p = NULL;
    return hk_cu_out_of_memory(bytes, e);
}

void hk_cu_tmp_free(void *p)
{
    if (!p) return;
    if (tmp_pools > 0)
        cudaFreeAsync(p, hk_cu.stream);
    else
        cudaFree(p);
}

int hk_cu_setup_flag(unsigned long long **d)
{
    static unsigned long long *flag;
    if (!flag) HK_CALL(hk_cu_malloc((void **)&flag, sizeof *flag));
    HK_CU(cudaMemsetAsync(flag, 0xff, sizeof *flag, hk_cu.stream)); // HK_CU_NO_ROW: all ones
    *d = flag;
    return 0;
}

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
    HK_TRY(hk_cu_setup_flag(&dfirst));
    k_amg_l1_diag<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
        n, br, A->rowptr, A->colind, A->val, (double *)out->data, dfirst);
    HK_CU_TRY(cudaGetLastError());
    HK_TRY(hk_cu_first_row_read(dfirst, bad));
fail:
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
