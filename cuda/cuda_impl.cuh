// Private pieces of the CUDA backend shared between its .cu files: the one context (device,
// stream, library handles, reduction workspace), error conversion, and the deterministic
// two-stage reduction used by every kernel that returns a sum.
//
// Reductions: stage 1 is the kernel itself, with a fixed grid (one wave of resident blocks,
// at most HK_CU_MAXB blocks of HK_CU_BLOCK threads, grid-stride loops): each thread sums its
// indices in order, the block reduces with warp shuffles then one warp, and writes one partial per
// value to hk_cu.part. Stage 2 (hk_cu_finish) is one block that sums the partials in a fixed order
// and writes each result to its destination in device memory. No atomics on values: the same inputs
// give the same digits on every run.
#ifndef HOOKE_CUDA_IMPL_CUH
#define HOOKE_CUDA_IMPL_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>
#include <stdint.h>

extern "C" {
#include "hk_impl.h"
}
#include "pipecg_gv.h"

#define HK_CU_BLOCK 256 /* threads per block of every kernel */
#define HK_CU_MAXB 1024 /* blocks of a reducing kernel at most (partials per value) */
#define HK_CU_MAXK 16   /* values reduced by one kernel at most */

struct hk_cuda_ctx {
    int ready;
    int device;
    int nsm;
    size_t l2;           /* L2 cache bytes (format=auto) */
    cudaStream_t stream; /* every op runs on this stream, in order */
    cusparseHandle_t sp; /* bound to stream */
    double *part;        /* HK_CU_MAXK * HK_CU_MAXB partial sums */
    double *dres;        /* HK_CU_MAXK results of host-returning reductions */
    double *hres;        /* pinned host copy of dres */
    /* the last-block ticket of the vector kernels that finish their own sums
     * (hk_cu_last_block; zero between launches) */
    unsigned *ticket;
};
extern struct hk_cuda_ctx hk_cu;

/* The context and the helpers below are in cuda_context.cu. */
/* Create the context on first use (probe calls it). */
int hk_cu_init(void);
/* cudaMalloc with the library's out-of-memory sentence (bytes needed, bytes free); every
 * set-up allocation goes through it (or the backend's alloc op). Free with cudaFree. */
int hk_cu_malloc(void **p, size_t bytes);
/* The out-of-memory sentence of a failed allocation of bytes (HK_ERR_MEMORY). */
int hk_cu_out_of_memory(size_t bytes, cudaError_t e);

/* A kernel's first bad row: one device word that the kernel lowers with an integer atomicMin
 * (exact and independent of the order), HK_CU_NO_ROW while no row is bad. _alloc allocates it
 * (free with cudaFree) and sets it to HK_CU_NO_ROW on the stream; _read waits for the stream
 * and gives the row, or -1 when none. */
#define HK_CU_NO_ROW (~0ull)
int hk_cu_first_row_alloc(unsigned long long **d);
int hk_cu_first_row_read(const unsigned long long *d, int64_t *row);
/* v is a NaN or an infinity (its exponent bits all ones): the finite checks of K's values
 * (cuda_diag.cu's first non-finite row, cuda_build.cu's checked refill). */
__device__ __forceinline__ bool hk_cu_nonfinite(double v)
{
    const unsigned long long e = 0x7ff0000000000000ull;
    return ((unsigned long long)__double_as_longlong(v) & e) == e;
}
/* The AMG set-up's temporaries (cuda_amg.cu): stream-ordered on hk_cu.stream from the
 * device's default memory pool, which keeps up to HK_CU_TMP_KEEP bytes mapped between set-ups
 * (plain cudaMalloc / cudaFree where the device has no pools); free only buffers that no other
 * stream uses. The set-up ops' first-bad-row flag: one per process, allocated once, set to
 * HK_CU_NO_ROW on the stream (read it with hk_cu_first_row_read; never freed). */
#define HK_CU_TMP_KEEP ((size_t)1 << 29)
int hk_cu_tmp_alloc(void **p, size_t bytes);
/* The pool created and its threshold set (once, at the device's start: hk_cu_preloads). */
void hk_cu_pool_start(void);
void hk_cu_tmp_free(void *p);
int hk_cu_setup_flag(unsigned long long **d);

/* Record a CUDA / cuSPARSE / cuBLAS failure as HK_ERR_DEVICE with the status name. */
int hk_cu_fail(cudaError_t e, const char *what, const char *file, int line);
int hk_cu_fail_sparse(cusparseStatus_t s, const char *what, const char *file, int line);
int hk_cu_fail_blas(cublasStatus_t s, const char *what, const char *file, int line);

#define HK_CU(call)                                                                                \
    do {                                                                                           \
        cudaError_t hk_cu_e_ = (call);                                                             \
        if (hk_cu_e_ != cudaSuccess) return hk_cu_fail(hk_cu_e_, #call, __FILE__, __LINE__);       \
    } while (0)
#define HK_CU_SPARSE(call)                                                                         \
    do {                                                                                           \
        cusparseStatus_t hk_cu_s_ = (call);                                                        \
        if (hk_cu_s_ != CUSPARSE_STATUS_SUCCESS)                                                   \
            return hk_cu_fail_sparse(hk_cu_s_, #call, __FILE__, __LINE__);                         \
    } while (0)
#define HK_CU_BLAS(call)                                                                           \
    do {                                                                                           \
        cublasStatus_t hk_cu_b_ = (call);                                                          \
        if (hk_cu_b_ != CUBLAS_STATUS_SUCCESS)                                                     \
            return hk_cu_fail_blas(hk_cu_b_, #call, __FILE__, __LINE__);                           \
    } while (0)
/* Variants for functions with clean-up (need int ierr and label fail). */
#define HK_CU_TRY(call)                                                                            \
    do {                                                                                           \
        cudaError_t hk_cu_e_ = (call);                                                             \
        if (hk_cu_e_ != cudaSuccess) {                                                             \
            ierr = hk_cu_fail(hk_cu_e_, #call, __FILE__, __LINE__);                                \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)
#define HK_CU_SPARSE_TRY(call)                                                                     \
    do {                                                                                           \
        cusparseStatus_t hk_cu_s_ = (call);                                                        \
        if (hk_cu_s_ != CUSPARSE_STATUS_SUCCESS) {                                                 \
            ierr = hk_cu_fail_sparse(hk_cu_s_, #call, __FILE__, __LINE__);                         \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)
/* After a kernel launch: launch-configuration errors surface here. */
#define HK_CU_LAUNCHED() HK_CU(cudaGetLastError())

/* Blocks for an element-wise kernel over n entries (grid-stride beyond 2^20 blocks). */
static inline unsigned hk_cu_grid(int64_t n)
{
    int64_t b = (n + HK_CU_BLOCK - 1) / HK_CU_BLOCK;
    if (b < 1) b = 1;
    if (b > (1 << 20)) b = 1 << 20;
    return (unsigned)b;
}
/* Blocks for a reducing kernel over n work items: ceil(n/256), at most what the device
 * holds at once for that kernel (one wave: a second, partial wave would leave most SMs idle
 * while it runs) and at most HK_CU_MAXB. Fixed by n, the kernel and the device, so sums
 * repeat. kernel is the __global__ function's address. */
unsigned hk_cu_rgrid(int64_t n, const void *kernel);
/* Fill hk_cu_rgrid's cache for every reducing kernel of cuda_vec.cu, cuda_fused.cu and
 * cuda_spmv.cu. hk_cu_init runs them through hk_cu_grid_inits (NULL-terminated, listed in
 * cuda_core.cu with the ops table), so the context calls none of those files by name. */
void hk_cu_vec_init_grids(void);
void hk_cu_fused_init_grids(void);
void hk_cu_spmv_init_grids(void);
extern void (*const hk_cu_grid_inits[])(void);
/* Kernels loaded at the device's start rather than at their first launch. With lazy loading
 * (the default since CUDA 12.2) a file's module is loaded at the first launch of any of its
 * kernels and each kernel at its own: in the first AMG set-up of a process that took about
 * 10 ms at 2.1M DOFs (H200), inside the set-up's time. hk_cu_init runs the files' lists
 * (hk_cu_preloads, NULL-terminated, in cuda_core.cu, after the memory pool's start): the solve's
 * and the AMG set-up's kernels for 2D and 3D elasticity; HOOKE_CUDA_PRELOAD=0 leaves them to
 * lazy loading. */
void hk_cu_preload(const void *const *kernels, int n);
/* cub's kernels are template instances of each file's calls, with no address to list: a
 * file's preload launches each of its cub calls once instead (the same template arguments),
 * on zeros, at a small and a large size (cub picks other kernels for inputs of one tile).
 * hk_cu_warm_buffer: bytes of zeros on the device for their data, NULL when
 * HOOKE_CUDA_PRELOAD=0 or it cannot be had (no warm-up then: errors are cleared, never
 * reported; a kernel not warmed loads at its first launch). */
#define HK_CU_WARM_SMALL 1000
#define HK_CU_WARM_LARGE ((int64_t)1 << 18)
void *hk_cu_warm_buffer(size_t bytes);
void hk_cu_warm_free(void *p);
/* One cub call f(tmp, tmp_bytes) (a cudaError_t), its temporary storage asked for first. */
template <typename F> static inline void hk_cu_warm(F f)
{
    size_t tb = 0;
    void *tmp = NULL;
    if (f((void *)NULL, tb) == cudaSuccess && cudaMalloc(&tmp, tb ? tb : 8) == cudaSuccess) {
        f(tmp, tb);
        cudaStreamSynchronize(hk_cu.stream);
    }
    cudaFree(tmp);
    cudaGetLastError();
}
void hk_cu_sparse_preload(void);
void hk_cu_aggregate_preload(void);
void hk_cu_build_preload(void);
void hk_cu_amg_ops_preload(void);
void hk_cu_diag_preload(void);
void hk_cu_spmv_preload(void);
void hk_cu_vec_preload(void);
void hk_cu_dist_preload(void);
extern void (*const hk_cu_preloads[])(void);

/* Stage 2 modes: besides the sums, some fused ops derive scalars from S on the device. */
enum {
    HK_FIN_PLAIN = 0,
    HK_FIN_PIPECG,  /* S[ALPHA], S[BETA] from the old S[RZ], S[PAP], S[APZ] */
    HK_FIN_BICG_S,  /* S[BI_ALPHA] = S[BI_RR0]/S[BI_APR0] */
    HK_FIN_BICG_UPD /* S[BI_OMEGA], S[BI_BETA] */
};
struct hk_cu_outs {
    double *p[HK_CU_MAXK];
};
/* Sum k values of nb partials each (in hk_cu.part) into out.p[j]; mode as above with S. */
int hk_cu_finish(unsigned nb, int k, const hk_cu_outs &out, int mode, double *S);
/* The same with the partials in part (a matrix's own buffer for the fused SpMV). */
int hk_cu_finish_part(const double *part, unsigned nb, int k, const hk_cu_outs &out, int mode,
                      double *S);
/* hk_cu_finish into hk_cu.dres, copy to host r[0..k) and wait. */
int hk_cu_finish_host(unsigned nb, int k, double *r);

/* Block reduction of v[0..k) (k <= K, uniform across the block) into
 * part[j * gridDim.x + blockIdx.x]. blockDim.x must be HK_CU_BLOCK. */
template <int K>
__device__ __forceinline__ void hk_block_reduce(double (&v)[K], int k, double *part)
{
    __shared__ double sh[K][HK_CU_BLOCK / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int j = 0; j < K; j++) {
        if (j < k) {
            double s = v[j];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                s += __shfl_down_sync(0xffffffffu, s, o);
            if (lane == 0) sh[j][warp] = s;
        }
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int j = 0; j < K; j++) {
            if (j < k) {
                double s = lane < HK_CU_BLOCK / 32 ? sh[j][lane] : 0.0;
#pragma unroll
                for (int o = 16; o > 0; o >>= 1)
                    s += __shfl_down_sync(0xffffffffu, s, o);
                if (lane == 0) part[(size_t)j * gridDim.x + blockIdx.x] = s;
            }
        }
    }
}

/* The device arrays of fp64 vectors. */
#define D(v) ((double *)(v)->data)
#define CD(v) ((const double *)(v)->data)
/* Argument checks of the fused ops (cuda_fused.cu, cuda_spmv.cu). */
#define FP64(v)                                                                                    \
    HK_CHECK((v)->prec == HK_FP64, HK_ERR_ARG,                                                     \
             "cuda backend: the pipelined Krylov fused ops run their vectors in fp64")
#define LEN(a, b)                                                                                  \
    HK_CHECK((a)->n == (b)->n, HK_ERR_ARG,                                                         \
             "cuda backend: fused op on vectors of lengths %lld "                                  \
             "and %lld",                                                                           \
             (long long)(a)->n, (long long)(b)->n)

/* The entry arithmetic of vec_axpby (y = a x + b y) and of bdiag_apply's node block (s = D u,
 * sums in double), shared by their kernels and the fused ops that repeat them, so that both
 * give the same digits. The multiply-add is spelled out (b y rounded, then a x + it in one
 * fused multiply-add): left to the compiler, a x + b y was contracted one way in one kernel and
 * the other way in another (one ulp apart on the H200). */
template <typename T>
__device__ __forceinline__ T hk_cu_axpby_entry(double a, T x, double b, T y)
{
    return (T)__fma_rn(a, (double)x, __dmul_rn(b, (double)y));
}
template <typename T, int BS>
__device__ __forceinline__ void hk_cu_bdiag_block(const T *__restrict__ blk, const T (&u)[BS],
                                                  T (&s)[BS])
{
    double acc[BS];
#pragma unroll
    for (int r = 0; r < BS; r++)
        acc[r] = 0;
#pragma unroll
    for (int r = 0; r < BS; r++)
#pragma unroll
        for (int c = 0; c < BS; c++)
            acc[r] += (double)blk[r * BS + c] * u[c];
#pragma unroll
    for (int r = 0; r < BS; r++)
        s[r] = (T)acc[r];
}

/* Entry i of a polynomial preconditioner's step (the vec_poly_step op) with t_i = (A x)_i:
 * y = a (d .* t) + b x + c y, then z = e y + f z; x NULL when b = 0, the old y and z not
 * read when c = 0 or f = 0. */
template <typename T>
__device__ __forceinline__ void hk_cu_poly_entry(int64_t i, T *__restrict__ y, double a,
                                                 const T *__restrict__ d, T ti, double b,
                                                 const T *__restrict__ x, double c,
                                                 T *__restrict__ z, double e, double f)
{
    double v = a * ((double)d[i] * ti);
    if (x) v += b * x[i];
    if (c != 0.0) v += c * y[i];
    const T vi = (T)v;
    y[i] = vi;
    z[i] = (T)(f != 0.0 ? e * vi + f * z[i] : e * vi);
}

/* Stage 2 of a reduction by one block of HK_CU_BLOCK threads: d[j] = the sum of
 * part[j * nb + b] over b < nb for j < k (k <= HK_CU_MAXK). Warp w sums the values j = w,
 * w + 8, ... at once, each lane its b = lane, lane + 32, ... and then the warp's shuffle tree,
 * so the order is fixed and the k sums cost one pass instead of k rounds of block barriers
 * (the one-value-at-a-time loop took 10 us for pipelined CG's seven sums on an H100). Ends
 * with a block barrier, so d (shared) is complete for every thread. The partials are read
 * through L2 only, so the last block of the kernel that wrote them can sum them
 * (hk_cu_last_block). */
__device__ __forceinline__ void hk_cu_sum_parts(const double *__restrict__ part, unsigned nb,
                                                int k, double *d)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int j = warp; j < k; j += HK_CU_BLOCK / 32) {
        const double *pj = part + (size_t)j * nb;
        double s = 0;
        for (unsigned b = lane; b < nb; b += 32)
            s += __ldcg(pj + b);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, o);
        if (lane == 0) d[j] = s;
    }
    __syncthreads();
}

/* Stage 2 of pipelined CG's step (its 7 sums of nb partials each), then the step's bookkeeping
 * and the next coefficients (pipecg_gv.h) by thread 0 on a copy of S in registers: on S in
 * global memory every read after a write waits for memory (the update reads and writes S some
 * thirty times; a kernel doing that took 10 us on an H100). One whole block calls it. */
__device__ __forceinline__ void hk_cu_pipecg_gv_stage2(const double *part, unsigned nb, double *S)
{
    __shared__ double d[7];
    hk_cu_sum_parts(part, nb, 7, d);
    if (threadIdx.x == 0) {
        double s[HK_G_COUNT];
#pragma unroll
        for (int i = 0; i < HK_G_COUNT; i++)
            s[i] = S[i];
        hk_pipecg_gv_after_step(s, d);
#pragma unroll
        for (int i = 0; i < HK_G_COUNT; i++)
            S[i] = s[i];
    }
}

/* Whether this block is the last of its grid to get here, for the grid's stage 2 in the same
 * kernel: thread 0 makes the block's writes visible, then counts on *ticket (zero before the
 * launch); the last block resets it for the next launch. Every thread of every block calls
 * it. */
__device__ __forceinline__ bool hk_cu_last_block(unsigned *ticket)
{
    __shared__ bool last;
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
        if (last) *ticket = 0;
    }
    __syncthreads();
    if (last) __threadfence();
    return last;
}

/* Binary search: the first q in [lo, hi) where below(q) is false (hi when it holds everywhere),
 * below being true on a prefix of [lo, hi). */
template <typename Below>
__device__ __forceinline__ int64_t hk_cu_partition_point(int64_t lo, int64_t hi, Below below)
{
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (below(mid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
/* In a[lo..hi) ascending: the first q with a[q] >= key (lower bound), with a[q] > key (upper
 * bound); hi when there is none. */
template <typename T, typename K>
__device__ __forceinline__ int64_t hk_cu_lower_bound(const T *a, int64_t lo, int64_t hi, K key)
{
    return hk_cu_partition_point(lo, hi, [=](int64_t q) { return a[q] < key; });
}
template <typename T, typename K>
__device__ __forceinline__ int64_t hk_cu_upper_bound(const T *a, int64_t lo, int64_t hi, K key)
{
    return hk_cu_partition_point(lo, hi, [=](int64_t q) { return !(key < a[q]); });
}

/* Dot products fused after an SpMV y = A x: value j is (d[j] .* w[j]) . y, with w[j] NULL
 * meaning y itself and d[j] NULL meaning no scaling. */
struct hk_cu_fuse {
    const double *w[4];
    const double *d[4];
    int k;
};
/* Separate reduction for formats without a fused kernel (cuSPARSE): partials of the k values
 * of f over y into hk_cu.part; returns the grid used. */
int hk_cu_fuse_reduce(int64_t n, const double *y, const hk_cu_fuse &f, unsigned *nb);

/* A built matrix (A->bdata): device arrays in the hk_fmt layout, values in A->prec. */
struct hk_cu_mat {
    hk_fmt shape;    /* sizes of the layout on the host (no arrays), for mat_download */
    int bs;          /* kernel block size (1 for csr, ell, sell, cusparse-csr) */
    int tpr;         /* threads per block row */
    int64_t nbrows;  /* block rows */
    int64_t S;       /* slice height (sliced family; nbrows for ELL/BELL) */
    int64_t *rowptr; /* row-pointer family */
    int32_t *colind;
    void *val;     /* fp64 or fp32 by A->prec */
    int64_t *sptr; /* sliced family: slice starts (in block slots) */
    int32_t *swidth;
    int32_t *perm; /* SELL/SBELL: perm[new] = old; NULL for ELL/BELL */
    /* cuSPARSE */
    int32_t *rowptr32;
    cusparseSpMatDescr_t sp;
    cusparseDnVecDescr_t dx, dy;
    void *spbuf;
    cusparseSpMVAlg_t alg;
    /* partial sums of the fused SpMV: up to 8 per block of its grid, then the ticket of its
     * stage 2 in the last block (hk_cu_last_block) */
    double *part;
    unsigned part_nb;
    unsigned *ticket;
    /* sliced family, format.tpr=auto: lanes per slice (k_sell_wide), NULL when every slice has
     * tpr lanes: warp w takes rows r0.. of slice s with L lanes, (s, r0 | L << 16) = wtab[w] */
    int2 *wtab;
    int64_t nwarps;
    /* PCSR (cuda_pcsr.cu): first row and split of each partition, 2 carries per partition */
    int32_t *part_row, *split;
    double *carry;
    int pcsr_prefetch; /* partitions per thread block */
    /* CSR: the kernel (enum hk_csr_kernel, resolved) and, for the adaptive one, the first row
     * of each row block (cuda_csr.cu) */
    int csr_kernel;
    int32_t *rblock;
    int64_t nrblocks;
};

/* Formats built on the device, transpose and expansion of a block CSR (cuda_build.cu). */
int hk_cu_mat_build(hk_mat *A, const hk_bmat *K);
int hk_cu_mat_refill(hk_mat *A, const hk_bmat *K);
int hk_cu_mat_refill_checked(hk_mat *A, const hk_bmat *K, int64_t *first_bad);
int hk_cu_mat_convert(hk_mat *dst, const hk_mat *src);
/* format=auto: by the matrix's bytes against this device's L2 (hk_format_auto_by_cache). */
int hk_cu_format_auto(const hk_bmat *K, hk_precision p, hk_format *fmt);
int hk_cu_mat_download(const hk_mat *A, hk_fmt *F);
int hk_cu_bmat_transpose(const hk_bmat *A, hk_bmat *T);
int hk_cu_bmat_expand(const hk_bmat *A, hk_bmat *S);
int hk_cu_bmat_compress(const hk_bmat *S, int bs, hk_bmat *B);

/* PCSR (cuda_pcsr.cu): build from the scalar CSR rows (rowptr, colind, val: n rows, device
 * memory) in A->prec with A->pcsr_partition and A->pcsr_pad, sets A->stored and m's arrays and
 * shape; download of part_row and split; SpMV (the CPU's digits, solver/cpu/cpu_pcsr.c). */
int hk_cu_pcsr_build(hk_mat *A, int64_t n, const int64_t *rowptr, const int32_t *colind,
                     const double *val, hk_cu_mat *m);
int hk_cu_pcsr_download(const hk_cu_mat *m, hk_fmt *F);
int hk_cu_pcsr_spmv(const hk_mat *A, const void *x, void *y);
/* The CSR kernels of cuda_csr.cu: the vector kernel's lanes per row for a mean row (n rows,
 * nnz entries), the adaptive kernel's row blocks, and the SpMV by m->csr_kernel (vector or
 * adaptive). */
int hk_cu_csr_group(int64_t n, int64_t nnz, int fp32);
int hk_cu_csr_blocks(hk_cu_mat *m, int64_t n, int64_t nnz, int fp32);
int hk_cu_csr_spmv(const hk_mat *A, const void *x, void *y);

/* Matrix ops (cuda_spmv.cu). After the build: threads per block row (longest: the longest
 * block row), the fused-SpMV buffer and the cuSPARSE descriptors. */
int hk_cu_mat_finish(hk_mat *A, hk_cu_mat *m, int64_t longest);
void hk_cu_mat_release(hk_mat *A);
int hk_cu_mat_spmv(hk_mat *A, const hk_vec *x, hk_vec *y);
/* y = A x (fp64) with the k fused values of f reduced: *nb partials per value in *part. */
int hk_cu_mat_spmv_fused(hk_mat *A, const hk_vec *x, hk_vec *y, const hk_cu_fuse &f, unsigned *nb,
                         const double **part);

/* Vector ops (cuda_vec.cu). */
int hk_cu_vec_set(hk_vec *x, double a);
int hk_cu_vec_copy(hk_vec *y, const hk_vec *x);
int hk_cu_vec_convert(hk_vec *y, const hk_vec *x);
int hk_cu_vec_convert_blocks(hk_vec *y, int ys, const hk_vec *x, int xs, int bs);
int hk_cu_vec_round_fp32(hk_vec *x);
int hk_cu_vec_scale(hk_vec *x, double a);
int hk_cu_vec_axpby(hk_vec *y, double a, const hk_vec *x, double b);
int hk_cu_vec_axpbypcz(hk_vec *z, double a, const hk_vec *x, double b, const hk_vec *y, double c);
int hk_cu_vec_pointwise_mult(hk_vec *w, const hk_vec *x, const hk_vec *y);
int hk_cu_vec_dot(const hk_vec *x, const hk_vec *y, double *r);
int hk_cu_vec_mdot(int k, hk_vec *const *X, const hk_vec *y, double *r);
int hk_cu_vec_maxpy(hk_vec *y, int k, const double *a, hk_vec *const *X);
int hk_cu_bdiag_apply(const hk_vec *D, int bs, const hk_vec *x, hk_vec *y);
/* The distributed operator's halo gather, pc=amg's ghost rows (cuda_dist.cu). */
int hk_cu_vec_gather(hk_vec *y, const hk_vec *x, const int32_t *idx, int64_t n, int bs);
int hk_cu_dist_read_columns(const int32_t *col, int64_t n, int64_t ncols, int32_t *rank,
                            int32_t *list, int64_t *nread);
int hk_cu_dist_local_pattern(int64_t nrows, const int64_t *rowptr, const int32_t *col,
                             const int32_t *map, int64_t nbc, int split, int64_t *rp,
                             int32_t *lcol, int32_t *src, int32_t *ypos, int64_t *nint);
int hk_cu_dist_split(const hk_dist_rows *R, hk_bmat *Koo, int32_t **src_oo, hk_bmat *Kbnd,
                     int32_t **src_bnd, int32_t **bcol, int64_t *nbc);
int hk_cu_dist_scan(const hk_dist_rows *R, int32_t *kind, int64_t **ghost, int64_t *nghost,
                    int64_t *bad);
int hk_cu_dist_global_columns(const int32_t *col, int64_t n, int64_t row0, int64_t nown,
                              const int64_t *ghost_gid, int64_t nghost, int32_t *out);
int hk_cu_coo_to_csr(const hk_bmat *A, const int32_t *rmap, const int64_t *cmap, int64_t n,
                     const int32_t *erow, const int64_t *ekey, const double *eval, int64_t nrows,
                     int64_t nkeys, int64_t **rowptr, int64_t **key, double **val);
int hk_cu_dist_row_lengths(const hk_bmat *A, const int32_t *rows, int64_t n, int64_t *len);
int hk_cu_dist_pack_rows(const hk_bmat *A, const int64_t *colmap, const int32_t *rows, int64_t n,
                         const int64_t *at, double *out);
int hk_cu_dist_mark_columns(const hk_bmat *A, int32_t *mark);
int hk_cu_dist_extend_rows(const hk_bmat *A, const int32_t *cpos, int64_t ng, const double *rec,
                           const int64_t *rat, const int64_t *gat, const int64_t *cols,
                           int64_t ncols, hk_bmat *X);
int hk_cu_copy_to_pageable(void *dst, const void *host_src, size_t bytes);
int hk_cu_copy_from_pageable(void *host_dst, const void *src, size_t bytes);
#ifdef HOOKE_HAVE_NCCL
/* cuda_nccl.cu: the device transport of distributed runs (dcomm_* ops, NCCL) */
int hk_cu_dcomm_id(void *id);
int hk_cu_dcomm_create(const void *id, int nranks, int rank, double timeout, void **dc);
int hk_cu_dcomm_exchange(void *dc, int nrecv, const int *recv_rank, const int64_t *recv_off,
                         void *recv, int nsend, const int *send_rank, const int64_t *send_off,
                         const void *send, size_t bytes);
int hk_cu_dcomm_wait(void *dc);
int hk_cu_dcomm_sum(void *dc, double *v, int n);
void hk_cu_dcomm_destroy(void *dc, int abort);
int hk_cu_dcomm_connect(void *dc);
#endif
/* l1-Jacobi scaling of pc=amg (cuda_amg.cu). */
int hk_cu_amg_l1_diag(const hk_bmat *A, hk_vec *out, int64_t *bad);
int hk_cu_amg_start_vector(hk_vec *v);
/* Set-up: the diag op (cuda_diag.cu). */
int hk_cu_bmat_diag(const hk_bmat *A, int mode, hk_vec *out, int64_t *bad);
int hk_cu_bmat_first_nonfinite(const hk_bmat *A, int64_t *row);

/* Fused Krylov ops (cuda_fused.cu): the vector steps; pipecg_gv_step and vec_poly_step also
 * serve the fused SpMV ops below where the SpMV's epilogue cannot run them. */
int hk_cu_pipecg_gv_step(hk_vec *const *V, double *S);
int hk_cu_vec_poly_step(hk_vec *y, double a, const hk_vec *d, const hk_vec *t, double b,
                        const hk_vec *x, double c, hk_vec *z, double e, double f);
int hk_cu_pipecg_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *Ap, const hk_vec *dinv,
                        double *S);
/* The update kernel of pipecg_paper_step: its partials of r.r and r.z in hk_cu.part, *nb per
 * value, summed by the SpMV kernel that follows (cuda_spmv.cu). */
int hk_cu_pipecg_paper_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *Ap,
                              const hk_vec *dinv, double *S, unsigned *nb);
int hk_cu_cgcg_update(hk_vec *x, hk_vec *r, hk_vec *u, hk_vec *p, hk_vec *s, const hk_vec *w,
                      const hk_vec *dinv, double alpha, double beta);
int hk_cu_pipebicg_s(hk_vec *s, const hk_vec *r, const hk_vec *Ap, double *S);
int hk_cu_pipebicg_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *phat, const hk_vec *s,
                          const hk_vec *shat, const hk_vec *As, const hk_vec *Ap, const hk_vec *r0s,
                          double *S);
/* The fused SpMV ops (cuda_spmv.cu; semantics in hk_impl.h). */
int hk_cu_spmv_poly_step(hk_mat *A, const hk_vec *x, hk_vec *t, hk_vec *y, double a,
                         const hk_vec *d, double b, double c, hk_vec *z, double e, double f);
int hk_cu_amg_cheb_step(hk_mat *A, const hk_cheb_step *s);
int hk_cu_spmv_pipecg_gv_step(hk_mat *A, hk_vec *const *V, double *S);
int hk_cu_spmv_dot2(hk_mat *A, const hk_vec *p, hk_vec *Ap, const hk_vec *dinv, const hk_vec *r,
                    double *S);
int hk_cu_pipecg_paper_step(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *p, hk_vec *Ap,
                            const hk_vec *dinv, double *S);
int hk_cu_spmv_cgcg(hk_mat *A, const hk_vec *u, hk_vec *w, const hk_vec *r, double *d);
int hk_cu_spmv_mdot(hk_mat *A, const hk_vec *x, hk_vec *y, int k, const hk_vec *const *W, double *S,
                    const int *slot);
/* Pipelined GMRES's ops on backend-resident scalars (cuda_vec.cu). */
int hk_cu_vec_mdot_s(int k, hk_vec *const *X, const hk_vec *y, double *S);
int hk_cu_vec_dot_s(const hk_vec *x, const hk_vec *y, double *s);
int hk_cu_spmv_dot_s(hk_mat *A, const hk_vec *x, hk_vec *y, double *s);
int hk_cu_bdiag_update_dot_s(hk_vec *r, const double *an, const double *ad, const hk_vec *q,
                             const hk_vec *D, int bs, hk_vec *z, double *s);
int hk_cu_vec_axpby_s(hk_vec *y, double a, const double *an, const double *ad, const hk_vec *x,
                      double b, const double *bn, const double *bd);
int hk_cu_vec_maxpy_s_nrm(hk_vec *y, int k, const double *S, hk_vec *const *X, double *nrm2);
int hk_cu_vec_scale_s_dot(hk_vec *y, const double *nrm2, const hk_vec *w, double *d);

/* Aggregation AMG: strength graph, aggregation, tentative prolongator (cuda_aggregate.cu). */
extern "C" int hk_cu_amg_strength(const hk_bmat *A, double theta, hk_graph *S);
extern "C" int hk_cu_amg_aggregate(const hk_graph *S, int32_t *agg, int64_t *nagg);
extern "C" int hk_cu_amg_tentative(const int32_t *agg, int64_t nagg, int64_t nnodes, int b,
                                   int nns, const double *B, hk_bmat *T, double *Bc);

/* Level-scheduled triangular solves for pc=ic0/ilu0 (cuda_tri.cu). */
int hk_cu_tri_solve(void *handle, const hk_vec *b, hk_vec *x);
void hk_cu_tri_destroy(void *handle);
int hk_cu_tri_setup(const hk_bmat *F, int upper, int unit, int method, hk_precision p,
                    void **handle, int64_t *nlevels);
/* out[0..n] = exclusive prefix sums of cnt[0..n) (cnt has n + 1 entries; cnt[n] is set to 0
 * here), *total = out[n] on the host. */
int hk_cu_scan_counts(int64_t *cnt, int64_t n, int64_t *out, int64_t *total);
/* Level sets of a sorted CSR's rows (n < 2^31): row i depends on its columns j < i (upper = 0)
 * or j > i (upper = 1); level = 1 + the highest level of its dependencies. level_rows (device,
 * rows by level, ascending within a level), level_ptr (device) and its host copy hlevel_ptr
 * (nlevels + 1; free()) are allocated here. */
int hk_cu_levels(int64_t n, const int64_t *rowptr, const int32_t *colind, int upper,
                 int32_t **level_rows, int64_t **level_ptr, int64_t **hlevel_ptr,
                 int64_t *nlevels);
/* Set-up of pc=ic0/ilu0 (cuda_factor.cu; contracts in hk_impl.h). */
int hk_cu_factor_sweeps(const hk_bmat *A, int sym, int sweeps, hk_bmat *F, int64_t *bad);
int hk_cu_factor_exact(const hk_bmat *A, int sym, hk_bmat *F, hk_factor_fault *f);
int hk_cu_bmat_permute(const hk_bmat *A, const int32_t *perm, hk_bmat *P);
int hk_cu_bmat_sym_check(const hk_bmat *A, const hk_bmat *T, hk_factor_fault *f);

/* FSAI set-up (cuda_fsai.cu). */
extern "C" int hk_cu_fsai_pattern(const hk_bmat *K, double tau, int k, int block, int64_t cap,
                                  hk_graph *S, hk_setup_fault *fault);
extern "C" int hk_cu_fsai_factor(const hk_bmat *K, const hk_graph *S, double delta, hk_bmat *G,
                                 hk_setup_fault *fault);
extern "C" int hk_cu_sai_pattern(const hk_bmat *K, const hk_bmat *Kt, double tau, int colmax,
                                 hk_graph *St);
extern "C" int hk_cu_sai_factor(const hk_bmat *Kt, const hk_graph *St, int64_t max_rows,
                                int64_t max_cols, int qr, hk_bmat *Mt, hk_setup_fault *fault);
/* Sparse product, prolongator smoothing, dense coarse solve (cuda_sparse.cu). */
int hk_cu_bmat_spgemm(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
int hk_cu_bmat_spgemm_numeric(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
int hk_cu_bmat_spgemm_pattern(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
int hk_cu_bmat_spgemm_numeric_upper(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
int hk_cu_bmat_mirror_lower(hk_bmat *C);
int hk_cu_bmat_put_transposed(double *val, int bs, const int64_t *to, const double *src,
                              int64_t n);
int hk_cu_bmat_spgemm_plan(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C, int upper,
                           void **plan, size_t *bytes);
int hk_cu_bmat_spgemm_numeric_plan(const void *plan, const hk_bmat *A, const hk_bmat *B,
                                   hk_bmat *C);
int hk_cu_bmat_spgemm_numeric_plan_f32(const void *plan, const hk_bmat *A, const float *a32,
                                       const hk_bmat *B, const float *b32, int b32_stride,
                                       hk_bmat *C);
void hk_cu_bmat_spgemm_plan_free(void *plan);
int hk_cu_amg_tentative_product(const hk_bmat *A, const hk_bmat *T, hk_bmat *C);
int hk_cu_amg_tentative_product_numeric(const hk_bmat *A, const hk_bmat *T, hk_bmat *C);
int hk_cu_amg_smooth_prolongator(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv, double w,
                                 hk_bmat *P);
int hk_cu_amg_smooth_prolongator_numeric(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv,
                                         double w, hk_bmat *P);
int hk_cu_bmat_transpose_numeric(const hk_bmat *A, hk_bmat *T);
int hk_cu_dense_inverse(const hk_bmat *A, hk_vec *Minv, int64_t *bad);
int hk_cu_dense_gemv(const hk_vec *M, const hk_vec *x, hk_vec *y);
/* Near-null space, rectangular-block SpMV, dense Cholesky inverse of small coarse matrices
 * (cuda_amg_ops.cu). */
extern "C" int hk_cu_amg_rigid_modes(int64_t nnodes, int bs, const hk_vec *coords,
                                     const double *center, double scale,
                                     const hk_vec *decoupled, double *B);
extern "C" int hk_cu_amg_coord_bounds(int64_t nnodes, int bs, const hk_vec *coords, double *sum,
                                      double *lo, double *hi);
extern "C" int hk_cu_amg_coord_frame(int64_t nnodes, int bs, const hk_vec *coords, double *center,
                                     double *scale);
extern "C" int hk_cu_bmat_spmv(const hk_bmat *A, const float *val32, const hk_vec *x,
                               hk_vec *y);
int hk_cu_chol_inverse(double *a, int64_t n, double *b, unsigned long long *first);
/* Matrix powers and the Gram reduction of the s-step methods (cuda_mpk.cu). */
extern "C" int hk_cu_mpk_plan(const hk_bmat *K, int schedule, int64_t block, int k,
                              double max_work, void **plan, hk_mpk_info *info);
extern "C" int hk_cu_mpk_apply(void *plan, int kk, const double *coef, const hk_vec *d,
                               const hk_vec *wprev, hk_vec *const *W, hk_vec *const *U);
extern "C" void hk_cu_mpk_free(void *plan);
extern "C" int hk_cu_mpk_stream_plan(const hk_bcsr *K, int64_t block, size_t budget, int k,
                                     double max_work, void **plan, hk_mpk_info *info);
/* The streamed plan's state (cuda_mpk_stream.cu): built from the host K, applied as one pass
 * of partitions copied in turn, destroyed after the copies in flight. */
struct cu_mpk_stream;
int hk_cu_mpk_stream_build(const hk_bcsr *K, int64_t block, size_t budget, int k,
                           double max_work, cu_mpk_stream **out, hk_mpk_info *info);
int hk_cu_mpk_stream_apply(cu_mpk_stream *T, int kk, const double *coef, const double *d,
                           const double *wprev, hk_vec *const *W, hk_vec *const *U);
void hk_cu_mpk_stream_destroy(cu_mpk_stream *T);
extern "C" int hk_cu_vec_gram(int m, hk_vec *const *X, hk_vec *const *Y, double *G, double *GX);
/* Blocks of vectors for the eigensolver (cuda_block.cu). */
extern "C" int hk_cu_block_spmv(hk_mat *A, int k, const hk_vec *X, hk_vec *Y);
extern "C" int hk_cu_block_gram(int64_t n, int p, const hk_vec *X, int q, const hk_vec *Y,
                                double *G);
extern "C" int hk_cu_block_update(int64_t n, int p, const hk_vec *X, int q, const double *C,
                                  double beta, hk_vec *Y);
extern "C" int hk_cu_block_dots(int64_t n, int k, const hk_vec *X, const hk_vec *Y, double *d);
#define HK_CU_CHOL_MAX 2048 /* rows of a dense inverse by hk_cu_chol_inverse; cuSOLVER above */

#endif
