// The streamed matrix-powers plan (HK_MPK_STREAM; GPU Krylov thesis, section 6.3.1) on the
// device: for a matrix larger than the device memory. The partitions with their ghost zones
// are cut and packed once on the host (solver/mpk_stream.c, the same bytes the CPU reference
// computes from) into pinned memory; a pass copies them in turn into two device buffers on a
// copy stream while the backend's stream computes the previous one:
//
//   copy stream:    wait done[b]   | copy partition p into buf[b] | record copied[b]
//   compute stream: wait copied[b] | gather | kk level launches   | record done[b]
//
// with b = p mod 2, so partition p+1 is copied while p is computed and a buffer is refilled
// only after the partition before in it is done. No host wait inside a pass: the pass ends on
// the backend's stream like every other op.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.cuh"
#include "hk_cuda.h"
#include "mpk_plan.h"
#include "mpk_stream.h"

struct cu_mpk_stream {
    hk_mpk_stream S;       // the pack in pinned host memory
    unsigned char *buf[2]; // two partitions on the device
    double *vec;           // HK_MPK_STREAM_VECS work vectors of the largest partition
    int tpr;               // lanes per row of the level kernel
    cudaStream_t copy;
    cudaEvent_t copied[2], done[2];
};

static int pinned_alloc(void **p, size_t bytes)
{
    const cudaError_t e = cudaHostAlloc(p, bytes, cudaHostAllocDefault);
    if (e == cudaSuccess) return 0;
    *p = NULL;
    cudaGetLastError();
    return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                        "matrix powers (streamed): cannot pin %zu bytes of host memory for the "
                        "packed partitions (%s); use fewer levels (mpk.k) or free host memory",
                        bytes, cudaGetErrorString(e));
}

static void pinned_free(void *p)
{
    cudaFreeHost(p);
}

void hk_cu_mpk_stream_destroy(cu_mpk_stream *T)
{
    if (!T) return;
    // copies and kernels still in flight read the pack and buffers
    if (T->copy) cudaStreamSynchronize(T->copy);
    cudaStreamSynchronize(hk_cu.stream);
    for (int b = 0; b < 2; b++) {
        if (T->copied[b]) cudaEventDestroy(T->copied[b]);
        if (T->done[b]) cudaEventDestroy(T->done[b]);
        cudaFree(T->buf[b]);
    }
    if (T->copy) cudaStreamDestroy(T->copy);
    cudaFree(T->vec);
    hk_mpk_stream_free(&T->S);
    free(T);
}

int hk_cu_mpk_stream_build(const hk_bcsr *K, int64_t block, size_t budget, int k, double max_work,
                           cu_mpk_stream **out, hk_mpk_info *info)
{
    int ierr = 0;
    *out = NULL;
    cu_mpk_stream *T = (cu_mpk_stream *)calloc(1, sizeof *T);
    HK_CHECK(T, HK_ERR_MEMORY, "matrix powers (streamed): out of host memory");
    HK_TRY(hk_mpk_stream_build(K, block, budget, k, max_work, pinned_alloc, pinned_free, &T->S));
    if (!T->S.pack) { // refused by max_work: no plan, no error
        hk_mpk_stream_info(&T->S, info);
        goto fail;
    }
    {
        const hk_mpk_stream *S = &T->S;
        for (int b = 0; b < 2; b++)
            HK_TRY(hk_cu_malloc((void **)&T->buf[b], S->max_bytes > 0 ? S->max_bytes : 256));
        HK_TRY(hk_cu_malloc((void **)&T->vec, sizeof(double) * HK_MPK_STREAM_VECS *
                                                  (size_t)(S->max_rows > 0 ? S->max_rows : 1) *
                                                  S->bs));
        HK_CU_TRY(cudaStreamCreateWithFlags(&T->copy, cudaStreamNonBlocking));
        for (int b = 0; b < 2; b++) {
            HK_CU_TRY(cudaEventCreateWithFlags(&T->copied[b], cudaEventDisableTiming));
            HK_CU_TRY(cudaEventCreateWithFlags(&T->done[b], cudaEventDisableTiming));
        }
        // lanes per row from the blocks of a computed row, as in the SpMV (a few for long rows)
        int64_t inner = 0, blocks = 0;
        for (int64_t p = 0; p < S->nparts; p++) {
            inner += S->lvl[(size_t)p * (S->k + 2) + S->k];
            blocks += S->nnzb[p];
        }
        const double per_row = inner ? (double)blocks / (double)inner : 0;
        T->tpr = per_row >= 12 ? 8 : per_row >= 4 ? 4 : 1;
        hk_mpk_stream_info(S, info);
    }
    *out = T;
    return 0;
fail:
    hk_cu_mpk_stream_destroy(T);
    return ierr;
}

// ---- apply ---------------------------------------------------------------------------------

struct st_gather {
    const int32_t *rows;
    const double *w0, *wprev, *d;
    double *wc, *wp, *uc, *dl, *u0;
    int64_t nload, nown;
};

// W[0], wprev, d of the listed rows into the partition's vectors; U[0] = d .* W[0] of the owned
template <int BS> __global__ void st_gather_kernel(const st_gather a)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < a.nload;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t g = a.rows[e];
#pragma unroll
        for (int r = 0; r < BS; r++) {
            const int64_t i = g * BS + r, q = e * BS + r;
            const double w = a.w0[i];
            a.wc[q] = w;
            a.wp[q] = a.wprev ? a.wprev[i] : 0.0;
            if (a.d) {
                const double u = a.d[i] * w;
                a.dl[q] = a.d[i];
                a.uc[q] = u;
                if (e < a.nown) a.u0[i] = u;
            }
        }
    }
}

struct st_level {
    const double *val;
    const int32_t *rowptr, *colind, *rows;
    const double *x, *dl;
    hk_mpk_level L;
    int64_t nrow, nown;
    int tpr;
};

// One level over the partition's first nrow rows: tpr lanes a row take its blocks in turn and
// sum by shuffles; owned rows are scattered to the output vectors at once.
template <int BS> __global__ void st_level_kernel(const st_level a)
{
    const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int tpr = a.tpr, lane = (int)(tid & (tpr - 1));
    const int64_t e = tid / tpr;
    const bool active = e < a.nrow;
    double acc[BS];
#pragma unroll
    for (int r = 0; r < BS; r++)
        acc[r] = 0.0;
    if (active)
        for (int32_t t = a.rowptr[e] + lane; t < a.rowptr[e + 1]; t += tpr) {
            const double *x = a.x + (int64_t)a.colind[t] * BS;
            const double *v = a.val + (int64_t)t * (BS * BS);
            double xv[BS];
#pragma unroll
            for (int c = 0; c < BS; c++)
                xv[c] = x[c];
#pragma unroll
            for (int r = 0; r < BS; r++)
#pragma unroll
                for (int c = 0; c < BS; c++)
                    acc[r] += v[r * BS + c] * xv[c];
        }
    for (int o = tpr >> 1; o > 0; o >>= 1)
#pragma unroll
        for (int r = 0; r < BS; r++)
            acc[r] += __shfl_down_sync(0xffffffffu, acc[r], o, tpr);
    if (!active || lane) return;
    const int64_t g = a.rows[e];
#pragma unroll
    for (int r = 0; r < BS; r++) {
        const int64_t q = e * BS + r, i = g * BS + r;
        hk_mpk_step(&a.L, acc[r], a.L.hd ? a.dl[q] : 0.0, q, i, e < a.nown);
    }
}

template <int BS>
static int st_partition(const cu_mpk_stream *T, const hk_mpk_part &v, int kk, const double *coef,
                        const double *d, const double *wprev, hk_vec *const *W, hk_vec *const *U)
{
    const size_t slot = (size_t)T->S.max_rows * BS;
    double *wp = T->vec, *wc = T->vec + slot, *wn = T->vec + 2 * slot, *dl = T->vec + 5 * slot;
    double *uc = d ? T->vec + 3 * slot : wc, *un = d ? T->vec + 4 * slot : wn;
    st_gather g;
    g.rows = v.rows;
    g.w0 = (const double *)W[0]->data;
    g.wprev = wprev;
    g.d = d;
    g.wc = wc;
    g.wp = wp;
    g.uc = uc;
    g.dl = dl;
    g.u0 = d ? (double *)U[0]->data : NULL;
    g.nload = v.lvl[kk + 1];
    g.nown = v.nown;
    if (g.nload) st_gather_kernel<BS><<<hk_cu_grid(g.nload), HK_CU_BLOCK, 0, hk_cu.stream>>>(g);
    HK_CU_LAUNCHED();
    for (int j = 0; j < kk; j++) {
        st_level a;
        a.val = v.val;
        a.rowptr = v.rowptr;
        a.colind = v.colind;
        a.rows = v.rows;
        a.x = uc;
        a.dl = dl;
        a.L = hk_mpk_level_at(coef, j, d != NULL, wc, wp, wn, un, (double *)W[j + 1]->data,
                              d ? (double *)U[j + 1]->data : NULL);
        a.nrow = v.lvl[kk - j]; // rows of levels <= kk-1-j
        a.nown = v.nown;
        a.tpr = T->tpr;
        const int64_t threads = a.nrow * T->tpr;
        if (a.nrow) {
            const int64_t blocks = (threads + HK_CU_BLOCK - 1) / HK_CU_BLOCK;
            st_level_kernel<BS><<<(unsigned)blocks, HK_CU_BLOCK, 0, hk_cu.stream>>>(a);
        }
        HK_CU_LAUNCHED();
        hk_mpk_rotate(&wp, &wc, &wn, &uc, &un, d != NULL);
    }
    return 0;
}

int hk_cu_mpk_stream_apply(cu_mpk_stream *T, int kk, const double *coef, const double *d,
                           const double *wprev, hk_vec *const *W, hk_vec *const *U)
{
    typedef int (*part_fn)(const cu_mpk_stream *, const hk_mpk_part &, int, const double *,
                           const double *, const double *, hk_vec *const *, hk_vec *const *);
    static const part_fn part[6] = {st_partition<1>, st_partition<2>, st_partition<3>,
                                    st_partition<4>, st_partition<5>, st_partition<6>};
    const hk_mpk_stream *S = &T->S;
    for (int64_t p = 0; p < S->nparts; p++) {
        const int b = (int)(p & 1);
        // the copy waits only for the partition that used this buffer before
        HK_CU(cudaStreamWaitEvent(T->copy, T->done[b], 0));
        HK_CU(cudaMemcpyAsync(T->buf[b], S->pack + S->off[p], S->off[p + 1] - S->off[p],
                              cudaMemcpyHostToDevice, T->copy));
        HK_CU(cudaEventRecord(T->copied[b], T->copy));
        HK_CU(cudaStreamWaitEvent(hk_cu.stream, T->copied[b], 0));
        hk_mpk_part v;
        hk_mpk_stream_part(S, p, T->buf[b], &v);
        HK_CALL(part[S->bs - 1](T, v, kk, coef, d, wprev, W, U));
        HK_CU(cudaEventRecord(T->done[b], hk_cu.stream));
    }
    return 0;
}

// ---- the pinned host-to-device bandwidth (hooke bench mpk --stream) -------------------------

extern "C" int hk_cuda_h2d_bandwidth(size_t bytes, int reps, double *gbs)
{
    int ierr = 0;
    void *h = NULL, *dev = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float ms = 0;
    *gbs = 0;
    HK_CALL(hk_cu_init());
    HK_TRY(pinned_alloc(&h, bytes));
    HK_TRY(hk_cu_malloc(&dev, bytes));
    memset(h, 1, bytes);
    HK_CU_TRY(cudaEventCreate(&e0));
    HK_CU_TRY(cudaEventCreate(&e1));
    HK_CU_TRY(cudaMemcpyAsync(dev, h, bytes, cudaMemcpyHostToDevice, hk_cu.stream)); // warm-up
    HK_CU_TRY(cudaEventRecord(e0, hk_cu.stream));
    for (int r = 0; r < reps; r++)
        HK_CU_TRY(cudaMemcpyAsync(dev, h, bytes, cudaMemcpyHostToDevice, hk_cu.stream));
    HK_CU_TRY(cudaEventRecord(e1, hk_cu.stream));
    HK_CU_TRY(cudaEventSynchronize(e1));
    HK_CU_TRY(cudaEventElapsedTime(&ms, e0, e1));
    *gbs = ms > 0 ? (double)bytes * reps / (ms * 1e-3) / 1e9 : 0;
fail:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(dev);
    if (h) cudaFreeHost(h);
    return ierr;
}
