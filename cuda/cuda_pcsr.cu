// PCSR, prefetch CSR (the GPU Krylov thesis, chapter 3.4): build on the device from the scalar
// CSR rows, download for tests, and the SpMV.
//
// Layout (hk_impl.h): rows padded with zeros to multiples of the padding factor pad, the
// padded value and column arrays cut into partitions of P entries, part_row[p] = the first row
// starting in partition p, split[p] = the leading entries of partition p that continue an
// earlier row (the thesis's split vector).
//
// Kernel (thesis Fig. 3.4, with the atomics of the original replaced by a carry pass as in its
// chapter 4.4, so that the sums are deterministic): a thread block of P threads walks prefetch
// consecutive partitions. For each it
//   1. has loaded the partition's values and column indices, one entry per thread, coalesced
//      (the next partition's loads are issued before this partition is computed: prefetching,
//      thesis Fig. 3.5);
//   2. multiplies by x (read-only cache; the thesis's texture fetch);
//   3. reduces every aligned group of pad products with warp shuffles (the padding makes
//      every group lie in one row): the sum vector, P/pad values in shared memory;
//   4. lets one thread per owned row add that row's group sums in order and write y; the last
//      owned row, when it runs on into the next partition, and the leading (split) entries of a
//      row begun earlier go to two carry slots of the partition instead;
// and a second kernel adds, per row that crosses partitions, its carries in partition order.
// Products use __dmul_rn (never fused with the additions) and sums run in double: the same
// digits as the CPU backend (solver/cpu/cpu_pcsr.c) in fp64 and fp32.
#include <cub/cub.cuh>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.cuh"

#define GRID_STRIDE(i, n)                                                                          \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

/* ---- build ------------------------------------------------------------------------------ */

__global__ void k_pcsr_len(int64_t n, int pad, const int64_t *__restrict__ rowptr,
                           int64_t *__restrict__ prp)
{
    GRID_STRIDE(i, n)
    prp[i + 1] = (rowptr[i + 1] - rowptr[i] + pad - 1) / pad * pad;
}

template <typename T>
__global__ void k_pcsr_scatter(int64_t n, const int64_t *__restrict__ rowptr,
                               const int32_t *__restrict__ colind, const double *__restrict__ val,
                               const int64_t *__restrict__ prp, int32_t *__restrict__ ocol,
                               T *__restrict__ oval)
{
    GRID_STRIDE(i, n)
    {
        const int64_t b = rowptr[i], len = rowptr[i + 1] - b, q = prp[i];
        for (int64_t k = 0; k < len; k++) {
            ocol[q + k] = colind[b + k];
            oval[q + k] = (T)val[b + k];
        }
    }
}

/* part_row[p] = first row with prp[row] >= p*P (lower bound); split[p] as in hk_impl.h */
__global__ void k_pcsr_parts(int64_t n, int64_t np, int P, const int64_t *__restrict__ prp,
                             int32_t *__restrict__ part_row, int32_t *__restrict__ split)
{
    GRID_STRIDE(p, np + 1)
    {
        if (p == np) {
            part_row[np] = (int32_t)n;
            continue;
        }
        const int64_t lo = hk_cu_lower_bound(prp, 0, n, p * P);
        part_row[p] = (int32_t)lo;
        const int64_t end = prp[lo] < (p + 1) * P ? prp[lo] : (p + 1) * P;
        split[p] = p == 0 ? 0 : (int32_t)(end - p * P);
    }
}

int hk_cu_pcsr_build(hk_mat *A, int64_t n, const int64_t *rowptr, const int32_t *colind,
                     const double *val, hk_cu_mat *m)
{
    int ierr = 0;
    void *tmp = NULL;
    size_t tb = 0;
    int64_t total = 0;
    const int P = A->pcsr_partition, pad = A->pcsr_pad;
    const int f32 = A->prec == HK_FP32;
    HK_CHECK(P >= 32 && P <= 1024 && !(P & (P - 1)) && pad >= 1 && pad <= 32 && !(pad & (pad - 1)),
             HK_ERR_OPTION,
             "PCSR partition %d and padding factor %d: use a power of two from 32 to 1024 and "
             "one from 1 to 32",
             P, pad);
    HK_CALL(hk_cu_malloc((void **)&m->rowptr, (size_t)(n + 1) * 8));
    HK_CU(cudaMemsetAsync(m->rowptr, 0, 8, hk_cu.stream));
    if (n > 0) {
        k_pcsr_len<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, pad, rowptr, m->rowptr);
        HK_CU_LAUNCHED();
        HK_CU(
            cub::DeviceScan::InclusiveSum(NULL, tb, m->rowptr + 1, m->rowptr + 1, n, hk_cu.stream));
        HK_CALL(hk_cu_malloc(&tmp, tb + 16));
        HK_CU_TRY(
            cub::DeviceScan::InclusiveSum(tmp, tb, m->rowptr + 1, m->rowptr + 1, n, hk_cu.stream));
        HK_CU_TRY(cudaMemcpyAsync(&total, m->rowptr + n, 8, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        cudaFree(tmp);
        tmp = NULL;
    }
    {
        int64_t np = (total + P - 1) / P;
        if (n > 0 && np < 1) np = 1; /* empty rows still need an owner that writes 0 */
        const int64_t slots = np * P;
        m->shape.partition = P;
        m->shape.pad = pad;
        m->shape.nparts = np;
        m->pcsr_prefetch = A->pcsr_prefetch;
        HK_CALL(hk_cu_malloc((void **)&m->colind, (size_t)(slots ? slots : 2) * 4));
        HK_CALL(hk_cu_malloc(&m->val, (size_t)(slots ? slots : 1) * (f32 ? 4 : 8)));
        HK_CALL(hk_cu_malloc((void **)&m->part_row, (size_t)(np + 1) * 4));
        HK_CALL(hk_cu_malloc((void **)&m->split, (size_t)(np ? np : 1) * 4));
        HK_CALL(hk_cu_malloc((void **)&m->carry, (size_t)(2 * np + 1) * 8));
        if (slots) {
            HK_CU(cudaMemsetAsync(m->colind, 0xff, (size_t)slots * 4, hk_cu.stream)); /* -1 */
            HK_CU(cudaMemsetAsync(m->val, 0, (size_t)slots * (f32 ? 4 : 8), hk_cu.stream));
        }
        HK_CU(cudaMemsetAsync(m->carry, 0, (size_t)(2 * np + 1) * 8, hk_cu.stream));
        if (n > 0) {
            if (f32)
                k_pcsr_scatter<float><<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
                    n, rowptr, colind, val, m->rowptr, m->colind, (float *)m->val);
            else
                k_pcsr_scatter<double><<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
                    n, rowptr, colind, val, m->rowptr, m->colind, (double *)m->val);
            HK_CU_LAUNCHED();
        }
        k_pcsr_parts<<<hk_cu_grid(np + 1), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, np, P, m->rowptr,
                                                                           m->part_row, m->split);
        HK_CU_LAUNCHED();
        A->stored = slots;
    }
    return 0;
fail:
    cudaStreamSynchronize(hk_cu.stream);
    cudaFree(tmp);
    return ierr;
}

static int fetch32(int32_t **h, const int32_t *d, int64_t n)
{
    HK_CALL(hk_malloc((size_t)(n > 0 ? n : 1) * 4, h));
    if (n > 0) {
        HK_CU(cudaMemcpyAsync(*h, d, (size_t)n * 4, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU(cudaStreamSynchronize(hk_cu.stream));
    }
    return 0;
}

int hk_cu_pcsr_download(const hk_cu_mat *m, hk_fmt *F)
{
    HK_CALL(fetch32(&F->part_row, m->part_row, m->shape.nparts + 1));
    HK_CALL(fetch32(&F->split, m->split, m->shape.nparts));
    return 0;
}

/* ---- SpMV ------------------------------------------------------------------------------- */

template <typename T>
__global__ void k_pcsr(int64_t nparts, int pad, int prefetch, const int64_t *__restrict__ rowptr,
                       const int32_t *__restrict__ part_row, const int32_t *__restrict__ split,
                       const int32_t *__restrict__ col, const T *__restrict__ val,
                       const T *__restrict__ x, T *__restrict__ y, double *__restrict__ carry)
{
    extern __shared__ double sum[]; /* P / pad group sums */
    const int P = blockDim.x, t = threadIdx.x;
    int64_t p = (int64_t)blockIdx.x * prefetch;
    const int64_t pend = p + prefetch < nparts ? p + prefetch : nparts;
    if (p >= pend) return;
    int64_t k = p * P + t;
    int32_t c = col[k];
    T v = val[k];
    for (; p < pend; p++, k += P) {
        /* prefetch: the next partition's entries are on their way while this one is reduced */
        int32_t cn = -1;
        T vn = 0;
        if (p + 1 < pend) {
            cn = col[k + P];
            vn = val[k + P];
        }
        double prod = c >= 0 ? __dmul_rn((double)v, (double)x[c]) : 0.0;
        for (int o = pad >> 1; o > 0; o >>= 1)
            prod += __shfl_down_sync(0xffffffffu, prod, o, pad);
        if ((t & (pad - 1)) == 0) sum[t / pad] = prod;
        __syncthreads();
        const int64_t base = p * P;
        const int sp = split[p];
        if (t == P - 1 && sp > 0) {
            double a = 0;
            for (int g = 0; g < sp / pad; g++)
                a += sum[g];
            carry[2 * p] = a;
        }
        const int64_t r0 = part_row[p], r1 = part_row[p + 1];
        const bool cont = p + 1 < nparts && split[p + 1] > 0;
        for (int64_t r = r0 + t; r < r1; r += P) {
            const int64_t a0 = rowptr[r] - base, e1 = rowptr[r + 1] - base;
            const int ge = (int)((e1 < P ? e1 : P) / pad);
            double a = 0;
            for (int g = (int)(a0 / pad); g < ge; g++)
                a += sum[g];
            if (cont && r == r1 - 1)
                carry[2 * p + 1] = a;
            else
                y[r] = (T)a;
        }
        __syncthreads();
        c = cn;
        v = vn;
    }
}

/* Rows that cross partitions: the part in their first partition, then the split parts of the
 * following ones, in order. */
template <typename T>
__global__ void k_pcsr_carry(int64_t nparts, const int32_t *__restrict__ part_row,
                             const int32_t *__restrict__ split, const double *__restrict__ carry,
                             T *__restrict__ y)
{
    GRID_STRIDE(p, nparts - 1)
    {
        const int32_t next = part_row[p + 1];
        if (split[p + 1] == 0 || next == part_row[p]) continue;
        double a = carry[2 * p + 1];
        for (int64_t q = p + 1; q < nparts && split[q] > 0 && part_row[q] == next; q++)
            a += carry[2 * q];
        y[next - 1] = (T)a;
    }
}

template <typename T> static int pcsr_launch(const hk_cu_mat *m, const T *x, T *y)
{
    const int64_t np = m->shape.nparts;
    const int P = m->shape.partition, F = m->pcsr_prefetch > 0 ? m->pcsr_prefetch : 1;
    if (np <= 0) return 0;
    const int64_t nb = (np + F - 1) / F;
    k_pcsr<T><<<(unsigned)nb, P, (size_t)(P / m->shape.pad) * sizeof(double), hk_cu.stream>>>(
        np, m->shape.pad, F, m->rowptr, m->part_row, m->split, m->colind, (const T *)m->val, x, y,
        m->carry);
    HK_CU_LAUNCHED();
    if (np > 1) {
        k_pcsr_carry<T><<<hk_cu_grid(np - 1), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            np, m->part_row, m->split, m->carry, y);
        HK_CU_LAUNCHED();
    }
    return 0;
}

int hk_cu_pcsr_spmv(const hk_mat *A, const void *x, void *y)
{
    const hk_cu_mat *m = (const hk_cu_mat *)A->bdata;
    if (A->prec == HK_FP64) return pcsr_launch<double>(m, (const double *)x, (double *)y);
    return pcsr_launch<float>(m, (const float *)x, (float *)y);
}
