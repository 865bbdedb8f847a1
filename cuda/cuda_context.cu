// The context every CUDA file shares, below all of them: the device, stream and library
// handles (hk_cu) and their start-up, error conversion, allocation with the out-of-memory
// sentence, the first-bad-row flag, the grids of reducing kernels and the stage-2 reduction
// kernel. It calls no other file of cuda/: the start-up reaches the kernels' grid set-up
// through hk_cu_grid_inits, which the ops table's file fills (cuda_core.cu).
#include <string.h>

#include "cuda_impl.cuh"

struct hk_cuda_ctx hk_cu;

int hk_cu_fail(cudaError_t e, const char *what, const char *file, int line)
{
    cudaGetLastError(); /* clear a non-sticky error so the next op may still work */
    return hk_error_set(HK_ERR_DEVICE, file, line, "CUDA error %s (%s) in %s", cudaGetErrorName(e),
                        cudaGetErrorString(e), what);
}

int hk_cu_fail_sparse(cusparseStatus_t s, const char *what, const char *file, int line)
{
    return hk_error_set(HK_ERR_DEVICE, file, line, "cuSPARSE error %s (%s) in %s",
                        cusparseGetErrorName(s), cusparseGetErrorString(s), what);
}

int hk_cu_fail_blas(cublasStatus_t s, const char *what, const char *file, int line)
{
    return hk_error_set(HK_ERR_DEVICE, file, line, "cuBLAS error %s in %s", cublasGetStatusName(s),
                        what);
}

static int preload_off; /* HOOKE_CUDA_PRELOAD=0, read by hk_cu_init */

void hk_cu_preload(const void *const *kernels, int n)
{
    /* referencing a kernel loads it (and its file's module) */
    for (int i = 0; i < n && !preload_off; i++) {
        cudaFuncAttributes a;
        if (cudaFuncGetAttributes(&a, kernels[i]) != cudaSuccess) cudaGetLastError();
    }
}

void *hk_cu_warm_buffer(size_t bytes)
{
    void *p = NULL;
    if (preload_off) return NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess ||
        cudaMemsetAsync(p, 0, bytes, hk_cu.stream) != cudaSuccess) {
        cudaGetLastError();
        cudaFree(p);
        return NULL;
    }
    return p;
}

void hk_cu_warm_free(void *p)
{
    cudaStreamSynchronize(hk_cu.stream);
    cudaFree(p);
    cudaGetLastError();
}

int hk_cu_init(void)
{
    if (hk_cu.ready) return 0;
    const char *pre = getenv("HOOKE_CUDA_PRELOAD");
    HK_CHECK(!pre || !*pre || !strcmp(pre, "0") || !strcmp(pre, "1"), HK_ERR_ARG,
             "HOOKE_CUDA_PRELOAD=%s: set it to 1 (the solve's and the AMG set-up's kernels "
             "loaded with the device, the default) or 0 (each at its first launch), or unset it",
             pre);
    preload_off = pre && !strcmp(pre, "0");
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        return hk_error_set(HK_ERR_DEVICE, __FILE__, __LINE__,
                            "backend 'cuda' is not available: no CUDA device (%s); use --backend "
                            "cpu",
                            e != cudaSuccess ? cudaGetErrorName(e) : "0 devices found");
    }
    /* one GPU per process of mpirun: the local rank's, modulo the visible devices (0 for a
     * single process, or where CUDA_VISIBLE_DEVICES gives each process its own) */
    if (hk_comm_size(hk_comm_world()) > 1) HK_CU(cudaSetDevice(hk_comm_local_rank() % n));
    HK_CU(cudaGetDevice(&hk_cu.device));
    HK_CU(cudaDeviceGetAttribute(&hk_cu.nsm, cudaDevAttrMultiProcessorCount, hk_cu.device));
    int l2 = 0;
    HK_CU(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, hk_cu.device));
    hk_cu.l2 = l2 > 0 ? (size_t)l2 : 0;
    HK_CU(cudaStreamCreateWithFlags(&hk_cu.stream, cudaStreamNonBlocking));
    HK_CU_SPARSE(cusparseCreate(&hk_cu.sp));
    HK_CU_SPARSE(cusparseSetStream(hk_cu.sp, hk_cu.stream));
    HK_CU(cudaMalloc(&hk_cu.part, sizeof(double) * HK_CU_MAXK * HK_CU_MAXB));
    HK_CU(cudaMalloc(&hk_cu.dres, sizeof(double) * HK_CU_MAXK));
    HK_CU(cudaMallocHost(&hk_cu.hres, sizeof(double) * HK_CU_MAXK));
    HK_CU(cudaMalloc(&hk_cu.ticket, sizeof(unsigned)));
    HK_CU(cudaMemsetAsync(hk_cu.ticket, 0, sizeof(unsigned), hk_cu.stream));
    for (int i = 0; hk_cu_grid_inits[i]; i++)
        hk_cu_grid_inits[i]();
    /* ready before the start-up steps: the memory pool's start allocates through the ops,
     * which call hk_cu_init */
    hk_cu.ready = 1;
    for (int i = 0; hk_cu_preloads[i]; i++)
        hk_cu_preloads[i]();
    return 0;
}

int hk_cu_out_of_memory(size_t bytes, cudaError_t e)
{
    cudaGetLastError();
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                        "out of GPU memory allocating %.3f GB (%.3f GB free, %s); use "
                        "precision=mixed, a smaller mesh or --backend cpu",
                        bytes / 1e9, fr / 1e9, cudaGetErrorName(e));
}

static int cuda_alloc(void **p, size_t bytes)
{
    HK_CALL(hk_cu_init());
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 256);
    if (e != cudaSuccess) {
        *p = NULL;
        return hk_cu_out_of_memory(bytes, e);
    }
    return 0;
}

int hk_cu_malloc(void **p, size_t bytes)
{
    return cuda_alloc(p, bytes);
}

int hk_cu_first_row_alloc(unsigned long long **d)
{
    static const unsigned long long none = HK_CU_NO_ROW;
    HK_CALL(hk_cu_malloc((void **)d, sizeof **d));
    HK_CU(cudaMemcpyAsync(*d, &none, sizeof none, cudaMemcpyHostToDevice, hk_cu.stream));
    return 0;
}

int hk_cu_first_row_read(const unsigned long long *d, int64_t *row)
{
    unsigned long long h = HK_CU_NO_ROW;
    HK_CU(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    *row = h == HK_CU_NO_ROW ? -1 : (int64_t)h;
    return 0;
}

unsigned hk_cu_rgrid(int64_t n, const void *kernel)
{
    /* resident blocks per kernel, found once (a handful of kernels, single-threaded use) */
    static struct {
        const void *k;
        int cap;
    } cache[64];
    static int ncache;
    int cap = 0;
    for (int i = 0; i < ncache; i++)
        if (cache[i].k == kernel) cap = cache[i].cap;
    if (!cap) {
        int per = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, HK_CU_BLOCK, 0) !=
                cudaSuccess ||
            per < 1) {
            cudaGetLastError();
            per = 1;
        }
        cap = per * (hk_cu.nsm > 0 ? hk_cu.nsm : 1);
        if (cap > HK_CU_MAXB) cap = HK_CU_MAXB;
        if (ncache < 64) {
            cache[ncache].k = kernel;
            cache[ncache].cap = cap;
            ncache++;
        }
    }
    int64_t b = (n + HK_CU_BLOCK - 1) / HK_CU_BLOCK;
    if (b < 1) b = 1;
    if (b > cap) b = cap;
    return (unsigned)b;
}

/* ---- stage 2 of every reduction ------------------------------------------------------- */

__global__ void __launch_bounds__(HK_CU_BLOCK)
    hk_k_finish(const double *__restrict__ part, unsigned nb, int k, hk_cu_outs out, int mode,
                double *S)
{
    double e0 = 0, e1 = 0;
    if (threadIdx.x == 0 && S) {
        /* derived scalars from the old values, before any result overwrites them */
        if (mode == HK_FIN_PIPECG) {
            e0 = S[HK_S_RZ] / S[HK_S_PAP];
            e1 = (S[HK_S_RZ] - 2.0 * e0 * S[HK_S_ZAP] + e0 * e0 * S[HK_S_APZ]) / S[HK_S_RZ];
        } else if (mode == HK_FIN_BICG_S) {
            e0 = S[HK_S_BI_RR0] / S[HK_S_BI_APR0];
        } else if (mode == HK_FIN_BICG_UPD) {
            e0 = S[HK_S_BI_ASAS] != 0.0 ? S[HK_S_BI_ASS] / S[HK_S_BI_ASAS] : 0.0;
            e1 = -S[HK_S_BI_ASR0] / S[HK_S_BI_APR0];
        }
    }
    __shared__ double d[HK_CU_MAXK];
    hk_cu_sum_parts(part, nb, k, d);
    for (int j = threadIdx.x; j < k; j += HK_CU_BLOCK)
        *out.p[j] = d[j];
    if (threadIdx.x == 0 && S) {
        if (mode == HK_FIN_PIPECG) {
            S[HK_S_ALPHA] = e0;
            S[HK_S_BETA] = e1;
        } else if (mode == HK_FIN_BICG_S) {
            S[HK_S_BI_ALPHA] = e0;
        } else if (mode == HK_FIN_BICG_UPD) {
            S[HK_S_BI_OMEGA] = e0;
            S[HK_S_BI_BETA] = e1;
        }
    }
}

int hk_cu_finish_part(const double *part, unsigned nb, int k, const hk_cu_outs &out, int mode,
                      double *S)
{
    hk_k_finish<<<1, HK_CU_BLOCK, 0, hk_cu.stream>>>(part, nb, k, out, mode, S);
    HK_CU_LAUNCHED();
    return 0;
}

int hk_cu_finish(unsigned nb, int k, const hk_cu_outs &out, int mode, double *S)
{
    return hk_cu_finish_part(hk_cu.part, nb, k, out, mode, S);
}

int hk_cu_finish_host(unsigned nb, int k, double *r)
{
    hk_cu_outs out;
    for (int j = 0; j < k; j++)
        out.p[j] = hk_cu.dres + j;
    HK_CALL(hk_cu_finish(nb, k, out, HK_FIN_PLAIN, NULL));
    HK_CU(cudaMemcpyAsync(hk_cu.hres, hk_cu.dres, (size_t)k * sizeof(double),
                          cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    memcpy(r, hk_cu.hres, (size_t)k * sizeof(double));
    return 0;
}
