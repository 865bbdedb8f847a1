// STUB (owner: cuda) — the CUDA backend: probe only, until its kernels land.
#include <cuda_runtime.h>
#include <stdio.h>

extern "C" {
#include "hk_impl.h"
}

static int cuda_probe(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
        return hk_error_set(HK_ERR_DEVICE, __FILE__, __LINE__,
                            "backend 'cuda' is not available: no CUDA device (%s); use --backend cpu",
                            e != cudaSuccess ? cudaGetErrorName(e) : "0 devices");
    return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "cuda backend not implemented yet");
}

static void cuda_describe(FILE *f)
{
    fprintf(f, "backend cuda: built\n");
}

extern "C" const hk_backend_ops hk_backend_cuda = {"cuda", cuda_probe, cuda_describe};
