// The CUDA backend: device description, memory, staged uploads, backend-resident scalars,
// CUDA graph capture and the ops table. The context, errors and the stage-2 reduction are in
// cuda_context.cu; kernels for vectors, matrices and fused Krylov steps in the other
// cuda_*.cu files.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda_impl.cuh"
#include "cuda_staging.h"

static int cuda_probe(void)
{
    HK_CALL(hk_cu_init());
    /* the current device is per host thread: a process of mpirun whose device was started on
     * another thread (hk_run_device_start) makes the local rank's device this thread's too */
    if (hk_comm_size(hk_comm_world()) > 1) HK_CU(cudaSetDevice(hk_cu.device));
    return 0;
}

#ifndef __CUDA_ARCH_LIST__
#define __CUDA_ARCH_LIST__ 0
#endif

static void cuda_describe(FILE *f)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        fprintf(f, "backend cuda: built (CUDA %d.%d), no device visible\n", CUDART_VERSION / 1000,
                (CUDART_VERSION % 1000) / 10);
        return;
    }
    int dev = 0, drv = 0, rt = 0, spv = 0, spm = 0;
    cudaGetDevice(&dev);
    cudaDeviceProp p;
    memset(&p, 0, sizeof p);
    cudaGetDeviceProperties(&p, dev);
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    cusparseGetProperty(MAJOR_VERSION, &spv);
    cusparseGetProperty(MINOR_VERSION, &spm);
    int blv = 0;
    cublasGetProperty(MAJOR_VERSION, &blv);
    int blm = 0;
    cublasGetProperty(MINOR_VERSION, &blm);
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    cudaGetLastError();
    static const int archs[] = {__CUDA_ARCH_LIST__};
    fprintf(
        f, "backend cuda: %s, compute capability %d.%d, %d SMs, %.1f GB (%.1f GB free), L2 %d MB\n",
        p.name, p.major, p.minor, p.multiProcessorCount, tot / 1e9, fr / 1e9, p.l2CacheSize >> 20);
    fprintf(
        f, "  driver %d.%d, runtime %d.%d, cuSPARSE %d.%d, cuBLAS %d.%d; built with CUDA %d.%d for",
        drv / 1000, (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10, spv, spm, blv, blm,
        CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (archs[i]) fprintf(f, " sm_%d", archs[i] / 10);
    fprintf(f, "\n  kernels: csr bsr ell sell bell sbell (fp64/fp32, 1-32 threads per block row), "
               "cusparse-csr cusparse-bsr; fused pipelined CG/BiCGStab/GMRES ops; level-scheduled "
               "triangular solves; CUDA graphs\n");
}

static int cuda_mem_info(size_t *free_bytes, size_t *total_bytes)
{
    HK_CALL(hk_cu_init());
    HK_CU(cudaMemGetInfo(free_bytes, total_bytes));
    return 0;
}

static void cuda_dealloc(void *p)
{
    if (p) cudaFree(p);
}

/* Uploads from pageable memory run at a fraction of the link's speed (the driver stages them
 * through its own small pinned buffers with one thread); large ones go through the pinned
 * buffers of cuda_staging.cu. */
static int cuda_copy_to(void *dst, const void *host_src, size_t bytes)
{
    HK_CU(hk_cu_staged_upload(dst, host_src, bytes, hk_cu.stream, 4 * HK_CU_STAGE_BYTES, 0));
    return 0; /* the source has been read in full: the caller may free it */
}

static int cuda_copy_from(void *host_dst, const void *src, size_t bytes)
{
    if (!bytes) return 0;
    HK_CU(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    return 0;
}

static int cuda_host_alloc(void **p, size_t bytes)
{
    HK_CALL(hk_cu_init());
    HK_CU(cudaMallocHost(p, bytes ? bytes : 1));
    return 0;
}

static void cuda_host_free(void *p)
{
    if (p) cudaFreeHost(p);
}

static int cuda_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes) HK_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, hk_cu.stream));
    return 0;
}

/* The first differing 32-bit word (or tail byte) of a and b into *first (atomicMin). */
__global__ static void k_mem_diff(const uint32_t *a, const uint32_t *b, int64_t words,
                                  const unsigned char *ta, const unsigned char *tb, int tail,
                                  unsigned long long *first)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < words + tail;
         i += (int64_t)gridDim.x * blockDim.x)
        if (i < words ? a[i] != b[i] : ta[i - words] != tb[i - words])
            atomicMin(first, (unsigned long long)i);
}

static int cuda_mem_equal(const void *a, const void *b, size_t bytes, int *equal)
{
    *equal = 1;
    if (!bytes || a == b) return 0;
    unsigned long long *flag = NULL;
    int64_t first = -1;
    const int64_t words = (int64_t)(bytes / 4);
    const int tail = (int)(bytes % 4);
    HK_CALL(hk_cu_setup_flag(&flag));
    k_mem_diff<<<hk_cu_grid(words + tail), HK_CU_BLOCK, 0, hk_cu.stream>>>(
        (const uint32_t *)a, (const uint32_t *)b, words, (const unsigned char *)a + 4 * words,
        (const unsigned char *)b + 4 * words, tail, flag);
    HK_CU(cudaGetLastError());
    HK_CALL(hk_cu_first_row_read(flag, &first));
    *equal = first < 0;
    return 0;
}

static int cuda_sync(void)
{
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    HK_CU(cudaGetLastError());
    return 0;
}

static int cuda_scal_alloc(double **s, int n)
{
    HK_CALL(hk_cu_malloc((void **)s, (size_t)n * sizeof(double)));
    HK_CU(cudaMemsetAsync(*s, 0, (size_t)n * sizeof(double), hk_cu.stream));
    return 0;
}

static void cuda_scal_free(double *s)
{
    if (s) cudaFree(s);
}

static int cuda_scal_get(const double *s, int first, int n, double *host)
{
    return cuda_copy_from(host, s + first, (size_t)n * sizeof(double));
}

static int cuda_scal_set(double *s, int first, int n, const double *host)
{
    return cuda_copy_to(s + first, host, (size_t)n * sizeof(double));
}

/* ---- CUDA graphs ----------------------------------------------------------------------- */

static int cuda_graph_begin(void)
{
    HK_CU(cudaStreamBeginCapture(hk_cu.stream, cudaStreamCaptureModeThreadLocal));
    return 0;
}

static int cuda_graph_end(void **graph)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t exec = NULL;
    *graph = NULL;
    HK_CU(cudaStreamEndCapture(hk_cu.stream, &g));
    cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) return hk_cu_fail(e, "cudaGraphInstantiate", __FILE__, __LINE__);
    *graph = exec;
    return 0;
}

static int cuda_graph_launch(void *graph)
{
    HK_CU(cudaGraphLaunch((cudaGraphExec_t)graph, hk_cu.stream));
    return 0;
}

static void cuda_graph_free(void *graph)
{
    if (graph) cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

/* The table is filled by name (nvcc's C++17 has no designated initializers). */
/* Run by hk_cu_init, in this order. */
void (*const hk_cu_grid_inits[])(void) = {hk_cu_vec_init_grids, hk_cu_fused_init_grids,
                                          hk_cu_spmv_init_grids, NULL};
void (*const hk_cu_preloads[])(void) = {
    hk_cu_pool_start,      hk_cu_sparse_preload, hk_cu_aggregate_preload, hk_cu_build_preload,
    hk_cu_amg_ops_preload, hk_cu_diag_preload,   hk_cu_spmv_preload,      hk_cu_dist_preload,
    hk_cu_vec_preload,     NULL};

static hk_backend_ops cuda_make_ops(void)
{
    hk_backend_ops o;
    memset(&o, 0, sizeof o);
    o.name = "cuda";
    o.probe = cuda_probe;
    o.describe = cuda_describe;
    o.mem_info = cuda_mem_info;
    o.alloc = hk_cu_malloc;
    o.dealloc = cuda_dealloc;
    o.copy_to = cuda_copy_to;
    o.copy_from = cuda_copy_from;
    o.copy = cuda_copy;
    o.sync = cuda_sync;
    o.host_alloc = cuda_host_alloc;
    o.host_free = cuda_host_free;
    o.mem_equal = cuda_mem_equal;
    o.vec_set = hk_cu_vec_set;
    o.vec_copy = hk_cu_vec_copy;
    o.vec_convert = hk_cu_vec_convert;
    o.vec_convert_blocks = hk_cu_vec_convert_blocks;
    o.vec_round_fp32 = hk_cu_vec_round_fp32;
    o.vec_scale = hk_cu_vec_scale;
    o.vec_axpby = hk_cu_vec_axpby;
    o.vec_axpbypcz = hk_cu_vec_axpbypcz;
    o.vec_pointwise_mult = hk_cu_vec_pointwise_mult;
    o.vec_poly_step = hk_cu_vec_poly_step;
    o.spmv_poly_step = hk_cu_spmv_poly_step;
    o.amg_cheb_step = hk_cu_amg_cheb_step;
    o.vec_dot = hk_cu_vec_dot;
    o.vec_mdot = hk_cu_vec_mdot;
    o.vec_maxpy = hk_cu_vec_maxpy;
    o.mat_release = hk_cu_mat_release;
    o.mat_spmv = hk_cu_mat_spmv;
    o.bdiag_apply = hk_cu_bdiag_apply;
    o.scal_alloc = cuda_scal_alloc;
    o.scal_free = cuda_scal_free;
    o.scal_get = cuda_scal_get;
    o.scal_set = cuda_scal_set;
    o.pipecg_update = hk_cu_pipecg_update;
    o.pipecg_gv_step = hk_cu_pipecg_gv_step;
    o.spmv_pipecg_gv_step = hk_cu_spmv_pipecg_gv_step;
    o.spmv_dot2 = hk_cu_spmv_dot2;
    o.pipecg_paper_step = hk_cu_pipecg_paper_step;
    o.cgcg_update = hk_cu_cgcg_update;
    o.spmv_cgcg = hk_cu_spmv_cgcg;
    o.spmv_mdot = hk_cu_spmv_mdot;
    o.pipebicg_s = hk_cu_pipebicg_s;
    o.pipebicg_update = hk_cu_pipebicg_update;
    o.vec_mdot_s = hk_cu_vec_mdot_s;
    o.vec_dot_s = hk_cu_vec_dot_s;
    o.vec_axpby_s = hk_cu_vec_axpby_s;
    o.spmv_dot_s = hk_cu_spmv_dot_s;
    o.bdiag_update_dot_s = hk_cu_bdiag_update_dot_s;
    o.vec_maxpy_s_nrm = hk_cu_vec_maxpy_s_nrm;
    o.vec_scale_s_dot = hk_cu_vec_scale_s_dot;
    o.tri_setup = hk_cu_tri_setup;
    o.factor_exact = hk_cu_factor_exact;
    o.bmat_permute = hk_cu_bmat_permute;
    o.bmat_sym_check = hk_cu_bmat_sym_check;
    o.tri_solve = hk_cu_tri_solve;
    o.tri_destroy = hk_cu_tri_destroy;
    o.factor_sweeps = hk_cu_factor_sweeps;
    o.amg_l1_diag = hk_cu_amg_l1_diag;
    o.amg_start_vector = hk_cu_amg_start_vector;
    o.mat_build = hk_cu_mat_build;
    o.mat_refill = hk_cu_mat_refill;
    o.mat_refill_checked = hk_cu_mat_refill_checked;
    o.mat_convert = hk_cu_mat_convert;
    o.format_auto = hk_cu_format_auto;
    o.mat_download = hk_cu_mat_download;
    o.bmat_transpose = hk_cu_bmat_transpose;
    o.bmat_expand = hk_cu_bmat_expand;
    o.bmat_compress = hk_cu_bmat_compress;
    o.fsai_pattern = hk_cu_fsai_pattern;
    o.fsai_factor = hk_cu_fsai_factor;
    o.sai_pattern = hk_cu_sai_pattern;
    o.sai_factor = hk_cu_sai_factor;
    o.bmat_spgemm = hk_cu_bmat_spgemm;
    o.bmat_spgemm_numeric = hk_cu_bmat_spgemm_numeric;
    o.bmat_spgemm_pattern = hk_cu_bmat_spgemm_pattern;
    o.bmat_spgemm_numeric_upper = hk_cu_bmat_spgemm_numeric_upper;
    o.bmat_mirror_lower = hk_cu_bmat_mirror_lower;
    o.bmat_put_transposed = hk_cu_bmat_put_transposed;
    o.bmat_spgemm_plan = hk_cu_bmat_spgemm_plan;
    o.bmat_spgemm_numeric_plan = hk_cu_bmat_spgemm_numeric_plan;
    o.bmat_spgemm_numeric_plan_f32 = hk_cu_bmat_spgemm_numeric_plan_f32;
    o.bmat_spgemm_plan_free = hk_cu_bmat_spgemm_plan_free;
    o.amg_tentative_product = hk_cu_amg_tentative_product;
    o.amg_tentative_product_numeric = hk_cu_amg_tentative_product_numeric;
    o.amg_smooth_prolongator = hk_cu_amg_smooth_prolongator;
    o.amg_smooth_prolongator_numeric = hk_cu_amg_smooth_prolongator_numeric;
    o.bmat_transpose_numeric = hk_cu_bmat_transpose_numeric;
    o.dense_inverse = hk_cu_dense_inverse;
    o.dense_gemv = hk_cu_dense_gemv;
    o.amg_strength = hk_cu_amg_strength;
    o.amg_aggregate = hk_cu_amg_aggregate;
    o.amg_tentative = hk_cu_amg_tentative;
    o.amg_rigid_modes = hk_cu_amg_rigid_modes;
    o.amg_coord_frame = hk_cu_amg_coord_frame;
    o.amg_coord_bounds = hk_cu_amg_coord_bounds;
    o.bmat_spmv = hk_cu_bmat_spmv;
    o.graph_begin = cuda_graph_begin;
    o.graph_end = cuda_graph_end;
    o.graph_launch = cuda_graph_launch;
    o.graph_free = cuda_graph_free;
    o.bmat_diag = hk_cu_bmat_diag;
    o.bmat_first_nonfinite = hk_cu_bmat_first_nonfinite;
    o.mpk_plan = hk_cu_mpk_plan;
    o.mpk_apply = hk_cu_mpk_apply;
    o.mpk_free = hk_cu_mpk_free;
    // scg's default wavefront: on an H100 it took 0.87-0.91x the time of the SpMVs on 2D quad
    // 500^2 (250 chunks of twice the bandwidth), 1.1-1.7x on 2D quad 200^2 (100) and 3D hex
    // 20^3, 40^3 (10, 20), whose bandwidth is a plane of nodes (docs/BENCHMARKS.md)
    o.mpk_wave_chunks = 160;
    o.mpk_stream_plan = hk_cu_mpk_stream_plan;
    o.vec_gram = hk_cu_vec_gram;
    o.block_spmv = hk_cu_block_spmv;
    o.block_gram = hk_cu_block_gram;
    o.block_update = hk_cu_block_update;
    o.block_dots = hk_cu_block_dots;
    o.vec_gather = hk_cu_vec_gather;
    o.dist_read_columns = hk_cu_dist_read_columns;
    o.dist_local_pattern = hk_cu_dist_local_pattern;
    o.dist_split = hk_cu_dist_split;
    o.dist_scan = hk_cu_dist_scan;
    o.dist_global_columns = hk_cu_dist_global_columns;
    o.coo_to_csr = hk_cu_coo_to_csr;
    o.dist_row_lengths = hk_cu_dist_row_lengths;
    o.dist_pack_rows = hk_cu_dist_pack_rows;
    o.dist_mark_columns = hk_cu_dist_mark_columns;
    o.dist_extend_rows = hk_cu_dist_extend_rows;
    o.copy_to_pageable = hk_cu_copy_to_pageable;
    o.copy_from_pageable = hk_cu_copy_from_pageable;
#ifdef HOOKE_HAVE_NCCL
    o.dcomm_id = hk_cu_dcomm_id;
    o.dcomm_create = hk_cu_dcomm_create;
    o.dcomm_exchange = hk_cu_dcomm_exchange;
    o.dcomm_wait = hk_cu_dcomm_wait;
    o.dcomm_sum = hk_cu_dcomm_sum;
    o.dcomm_destroy = hk_cu_dcomm_destroy;
    o.dcomm_connect = hk_cu_dcomm_connect;
#endif
    return o;
}

extern "C" const hk_backend_ops hk_backend_cuda = cuda_make_ops();
