// The device assembly and recovery on CUDA: fem_driver.inc with device memory and CUDA kernels,
// one stream of its own (synchronised before K is handed to the solver: every download waits
// for it). Kernels are the bodies of fem_kernels.h, one thread per index in grid-stride loops;
// the numeric kernel gives each block row a group of lanes (a power of two at least the most
// nodes of a cell, or that number itself), which take the blocks of one cell at a time, the
// cells in order.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/cuda_staging.h" /* the pinned staging of large copies */
#include "fem_device.h"

#define HK_FEM_BLOCK 256

static cudaStream_t fem_stream;

static int fem_fail(cudaError_t e, const char *what)
{
    cudaGetLastError();
    return hk_error_set(HK_ERR_DEVICE, __FILE__, __LINE__, "CUDA error %s (%s) in %s",
                        cudaGetErrorName(e), cudaGetErrorString(e), what);
}

#define FEM_CU(call, what)                                                                         \
    do {                                                                                           \
        cudaError_t fem_e_ = (call);                                                               \
        if (fem_e_ != cudaSuccess) return fem_fail(fem_e_, what);                                  \
    } while (0)

/* The CUDA backend's start (cuda/cuda_context.cu): under mpirun it makes the process's GPU (its
 * local rank's) the current device, where K is allocated; the stream and every array of the
 * device assembly must be there too, so it runs before the first of them. */
int hk_cu_init(void); /* cuda/cuda_impl.cuh (C++ linkage, as here) */

static int fem_stream_init(void)
{
    if (fem_stream) return 0;
    HK_CALL(hk_cu_init());
    FEM_CU(cudaStreamCreateWithFlags(&fem_stream, cudaStreamNonBlocking), "creating a stream");
    return 0;
}

static int dv_alloc(void **p, size_t bytes)
{
    *p = NULL;
    HK_CALL(fem_stream_init());
    cudaError_t e = cudaMalloc(p, bytes);
    if (e != cudaSuccess) {
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        *p = NULL;
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                            "out of GPU memory allocating %.3f GB for the device assembly (%.3f GB "
                            "free); assemble on the host (--assembly host) or use a smaller mesh",
                            bytes / 1e9, fr / 1e9);
    }
    return 0;
}

static void dv_free(void *p)
{
    if (p) cudaFree(p);
}

/* Copies of 64 KiB and more go through the CUDA backend's pinned staging buffers
 * (cuda_staging.h): the host's arrays are pageable and often fresh. */
#define HK_FEM_STAGE_MIN ((size_t)64 << 10)

static size_t fem_stage_piece(void)
{
    const size_t b = hk_fem_stage_bytes;
    return b && b < HK_FEM_STAGE_MAX ? b : HK_FEM_STAGE_MAX;
}

static int dv_up(void *d, const void *h, size_t bytes)
{
    HK_CALL(fem_stream_init());
    FEM_CU(hk_cu_staged_upload(d, h, bytes, fem_stream, HK_FEM_STAGE_MIN, fem_stage_piece()),
           "an upload");
    return 0;
}

/* Waits for the stream's kernels before it reads. */
static int dv_down(void *h, const void *d, size_t bytes)
{
    HK_CALL(fem_stream_init());
    FEM_CU(hk_cu_staged_download(h, d, bytes, fem_stream, HK_FEM_STAGE_MIN, fem_stage_piece()),
           "a download (or the device assembly's kernels before it)");
    return 0;
}

/* Downloads of n arrays (at most 16) after the stream's kernels, in one staged pipeline. */
static int dv_down_list(const hk_fem_down *list, int n)
{
    hk_cu_download cu[16];
    HK_CHECK(n >= 0 && n <= 16, HK_ERR_ARG, "device downloads: %d arrays in one list", n);
    for (int j = 0; j < n; j++)
        cu[j].host_dst = list[j].host, cu[j].src = list[j].dev, cu[j].bytes = list[j].bytes;
    HK_CALL(fem_stream_init());
    FEM_CU(hk_cu_staged_download_list(cu, n, fem_stream, HK_FEM_STAGE_MIN, fem_stage_piece()),
           "the downloads (or the device assembly's kernels before them)");
    return 0;
}

static int dv_copy(void *d, const void *s, size_t bytes)
{
    if (bytes) FEM_CU(cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice, fem_stream), "a copy");
    return 0;
}

static int dv_zero(void *d, size_t bytes)
{
    if (bytes) FEM_CU(cudaMemsetAsync(d, 0, bytes, fem_stream), "a memset");
    return 0;
}

static int dv_sync(void)
{
    FEM_CU(cudaStreamSynchronize(fem_stream), "the device assembly's kernels");
    return 0;
}

static int dv_free_bytes(size_t *free_bytes)
{
    size_t tot = 0;
    HK_CALL(fem_stream_init());
    FEM_CU(cudaMemGetInfo(free_bytes, &tot), "cudaMemGetInfo");
    return 0;
}

/* A chunk's budget: the caller's, else a quarter of the free memory, 64 MB to 2 GB (one chunk
 * holds the records of 2 million tet10 cells). */
static size_t dv_chunk_bytes(size_t free_bytes, size_t asked)
{
    if (asked) return asked;
    size_t b = free_bytes / 4;
    if (b > HK_FEM_CHUNK_MAX) b = HK_FEM_CHUNK_MAX;
    if (b < ((size_t)64 << 20)) b = (size_t)64 << 20;
    return b;
}

static const hk_backend *dv_backend(void)
{
    const hk_backend *be = NULL;
    hk_backend_get("cuda", &be);
    return be;
}

static unsigned fem_grid(int64_t threads)
{
    int64_t b = (threads + HK_FEM_BLOCK - 1) / HK_FEM_BLOCK;
    if (b < 1) b = 1;
    if (b > (1 << 20)) b = 1 << 20;
    return (unsigned)b;
}

static int fem_launched(const char *name)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "the kernel %s", name);
        return fem_fail(e, what);
    }
    return 0;
}

#define HK_FEM_KERNEL(name, args_t, body)                                                          \
    __global__ void name##_kernel(int64_t n, args_t a)                                             \
    {                                                                                              \
        for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;                    \
             i += (int64_t)gridDim.x * blockDim.x)                                                 \
            body(i, &a);                                                                           \
    }                                                                                              \
    static int name(int64_t n, const args_t *a)                                                    \
    {                                                                                              \
        if (n <= 0) return 0;                                                                      \
        name##_kernel<<<fem_grid(n), HK_FEM_BLOCK, 0, fem_stream>>>(n, *a);                        \
        return fem_launched(#name);                                                                \
    }

/* A row's lanes (at most 32) are one group of a warp, the warp's 32 / lanes groups side by
 * side (lanes beyond them idle), which all see the same cells; __syncwarp orders one cell's
 * additions before the next cell's. With lanes a power of two, row t / lanes of thread t.
 * Row k of the launch is order[k] where args_t's order is not NULL (hk_fem_row_at).
 * args_t has an int flags: its HK_FEM_NUM_D3 bit picks one of the two compiled kernels (the
 * body gets the flag as a constant). */
#define HK_FEM_ROW_KERNEL(name, args_t, range, body)                                               \
    template <int FLAGS> __global__ void name##_kernel(int64_t rows, int lanes, args_t a)          \
    {                                                                                              \
        const unsigned wl = threadIdx.x % 32u;                                                     \
        const int per = 32 / lanes, g = (int)(wl / (unsigned)lanes);                               \
        const int lane = (int)(wl % (unsigned)lanes);                                              \
        if (g >= per) return;                                                                      \
        const unsigned mask = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u) << (g * lanes);     \
        const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;                \
        const int64_t stride = (int64_t)gridDim.x * blockDim.x / 32 * per;                         \
        for (int64_t k = warp * per + g; k < rows; k += stride) {                                  \
            const int64_t row = hk_fem_row_at(a.order, k);                                         \
            int64_t c0, c1;                                                                        \
            range(row, &a, &c0, &c1);                                                              \
            for (int64_t c = c0; c < c1; c++) {                                                    \
                body(row, c, lane, &a, FLAGS);                                                     \
                __syncwarp(mask);                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static int name(int64_t rows, int lanes, const args_t *a)                                      \
    {                                                                                              \
        if (rows <= 0) return 0;                                                                   \
        const int per = 32 / lanes;                                                                \
        const unsigned grid = fem_grid((rows + per - 1) / per * 32);                               \
        if (a->flags & HK_FEM_NUM_D3)                                                              \
            name##_kernel<HK_FEM_NUM_D3><<<grid, HK_FEM_BLOCK, 0, fem_stream>>>(rows, lanes, *a);  \
        else                                                                                       \
            name##_kernel<0><<<grid, HK_FEM_BLOCK, 0, fem_stream>>>(rows, lanes, *a);              \
        return fem_launched(#name);                                                                \
    }

#define HK_FEM_DRIVER hk_fem_cuda_driver
#define HK_FEM_DRIVER_NAME "cuda"
#define HK_FEM_EXTERN extern "C"

#include "fem_driver.inc"
