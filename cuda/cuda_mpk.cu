// Matrix powers and the block Gram reduction of the s-step methods on the device (contracts:
// mpk_plan, mpk_apply, vec_gram in solver/hk_impl.h; the CPU reference, whose plan arrays and
// sums these repeat, is solver/cpu/cpu_mpk.c).
//
// Plan (GPU Krylov thesis, section 6.3, built here from K's pattern without a host copy):
// partition p owns block rows [p*block, (p+1)*block); its ghost zone is found level by level
// on (partition, row) keys: the neighbours of level l-1 are expanded, sorted, made unique and
// stripped of levels l-1 and l-2 (a neighbour of level l-1 lies in l-2, l-1 or l). The levels
// are scattered into one list per partition (owned rows, then level 1, ..., level k, each
// ascending), and every entry of a row of level < k gets its column's place in that list by a
// binary search in the partition's sorted keys.
//
// Apply: one thread block per partition computes kk levels from its own copy of the vectors
// (levels <= kk-1-j at step j), with __syncthreads between levels and no grid-wide sync: the
// partition's vectors live in shared memory when they fit (on chip), else in a scratch area
// of global memory that the block alone touches (L2-resident for moderate partitions); the
// matrix rows are read from K at every level.
//
// The shared schedule (HK_MPK_SHARED, the thesis's section 6.3.2 and Fig. 6.3) cuts the same
// partitions and stages each one whole in shared memory: its work vectors and the blocks and
// local columns of its rows of level < kk, copied once a pass, so that the kk levels read the
// matrix from on chip. The plan measures the largest partition (both with 3 and 5 vectors)
// and is not made when it exceeds the device's opt-in shared memory per block; smaller
// partitions fit more blocks on an SM, at the price of larger ghost zones: the thesis's
// trade-off between thread blocks per SM and redundant rows, which the tuner times.
//
// The wavefront schedule (HK_MPK_WAVEFRONT) keeps a sliced copy of K (SBELL, rows in their
// order: sigma 1) and runs a pass as ONE kernel of persistent blocks: tiles of R block rows
// (one thread block's rows) at level j are handed out by an atomic counter in the order of
// the key i + (j-1) D (tile i, a skew of D tiles: the chunk), and a block spins on the ready
// flags of the level j-1 tiles within K's bandwidth before it computes. Every such tile has a
// smaller key, so it was handed out earlier to a running block: no deadlock, no grid-wide
// barrier, no launch per stage. A tile's matrix rows are read from memory at level 1 and
// again about D*kk tiles later at level 2, ..., from L2 when that distance fits in it. (A
// kernel per stage of the CPU's schedule, measured first on an H100, lost to k SpMVs at
// every chunk size: 1.01-3.2x slower, the small stages being bound by launch and tail.)
#include <cub/cub.cuh>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.cuh"
#include "mpk_plan.h"

#define MPK_THREADS 256
// wavefront: threads per block (a tile is their rows) and the slots each thread loads at once
#define WAVE_THREADS 512
#define WAVE_UNROLL 4

struct cu_mpk {
    const hk_bmat *K;
    int schedule; // enum hk_mpk_schedule
    int bs, k;
    // wavefront: K sliced (SBELL, sigma 1); K's bandwidth (reach), tiles of WAVE_THREADS / tpr
    // block rows, the skew D in tiles (block = the chunk, D tiles' rows), lanes per row,
    // resident blocks
    hk_mat wave;
    int64_t reach, ntile, skew;
    int tpr, epoch; // epoch: passes so far, the value a finished tile's flag gets
    unsigned grid;
    int *flag;         // k * ntile ready flags
    unsigned *counter; // tiles handed out in the current pass
    uint64_t *order;   // wave_tile of every tile for pass lengths 1..k, one after another
    int64_t nb, block, nparts, next, max_ext;
    int64_t *lvl;     // nparts * (k + 2): start of level l of partition p (and its end)
    int32_t *ext_row; // next
    int64_t *ent_ptr; // next + 1
    int32_t *lcol;    // ent_ptr[next]
    double *scratch;  // next * bs * 5, allocated at the first apply that needs it
    int smem_optin;
    size_t stage3, stage5; // shared: on-chip bytes of the largest partition, 3 / 5 vectors
    cu_mpk_stream *stream; // HK_MPK_STREAM: partitions in pinned host memory (K is NULL)
};

// ---- small device helpers ------------------------------------------------------------------

// The staged layout of a partition (mpk_staged_kernel): nvec vectors of nload rows, the blocks
// of its nrow computed rows (nent), their local columns and nrow + 1 local row starts.
__host__ __device__ static inline int64_t mpk_stage_bytes(int bs, int nvec, int64_t nload,
                                                          int64_t nrow, int64_t nent)
{
    return (int64_t)sizeof(double) * (nvec * nload * bs + nent * bs * bs) +
           (int64_t)sizeof(int32_t) * (nent + nrow + 1);
}

// Temporary storage for one cub call, grown as needed (freed with the plan build).
struct cu_tmp {
    void *p = NULL;
    size_t bytes = 0;
    int need(size_t b)
    {
        if (b <= bytes) return 0;
        cudaFree(p);
        p = NULL;
        bytes = 0;
        HK_CALL(hk_cu_malloc(&p, b));
        bytes = b;
        return 0;
    }
    ~cu_tmp()
    {
        cudaFree(p);
    }
};

static int excl_scan(cu_tmp &t, const int64_t *in, int64_t *out, int64_t n)
{
    size_t b = 0;
    if (n <= 0) return 0;
    HK_CU(cub::DeviceScan::ExclusiveSum(NULL, b, in, out, n, hk_cu.stream));
    HK_CALL(t.need(b));
    HK_CU(cub::DeviceScan::ExclusiveSum(t.p, b, in, out, n, hk_cu.stream));
    return 0;
}

static int read_count(const int64_t *d, int64_t *h)
{
    HK_CU(cudaMemcpyAsync(h, d, sizeof *h, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    return 0;
}

__global__ void mpk_level0(int64_t nb, int64_t block, uint64_t *keys)
{
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < nb;
         r += (int64_t)gridDim.x * blockDim.x)
        keys[r] = ((uint64_t)(r / block) << 32) | (uint64_t)r;
}

__global__ void mpk_degree(int64_t n, const uint64_t *keys, const int64_t *rowptr, int64_t *deg)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = (int64_t)(keys[i] & 0xffffffffu);
        deg[i] = rowptr[r + 1] - rowptr[r];
    }
}

__global__ void mpk_expand(int64_t n, const uint64_t *keys, const int64_t *rowptr,
                           const int32_t *colind, const int64_t *off, uint64_t *out)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const uint64_t p = keys[i] >> 32;
        const int64_t r = (int64_t)(keys[i] & 0xffffffffu);
        int64_t o = off[i];
        for (int64_t t = rowptr[r]; t < rowptr[r + 1]; t++)
            out[o++] = (p << 32) | (uint64_t)(uint32_t)colind[t];
    }
}

// flag = 1 when the key is in neither earlier level
__global__ void mpk_new(int64_t n, const uint64_t *cand, const uint64_t *a, int64_t na,
                        const uint64_t *b, int64_t nb, char *flag)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const uint64_t x = cand[i];
        const int64_t ia = hk_cu_lower_bound(a, 0, na, x), ib = hk_cu_lower_bound(b, 0, nb, x);
        flag[i] = !((ia < na && a[ia] == x) || (ib < nb && b[ib] == x));
    }
}

__global__ void mpk_count(int64_t n, const uint64_t *keys, int k2, int l, unsigned long long *cnt)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        atomicAdd(&cnt[(keys[i] >> 32) * k2 + l], 1ull);
}

// ext_row, the entry count and the (partition, row) key with the local place of every entry of
// level l
__global__ void mpk_scatter(int64_t n, const uint64_t *keys, int k, int l, const int64_t *lvl,
                            const int64_t *rowptr, int32_t *ext_row, int64_t *len, uint64_t *mkey,
                            int32_t *mval)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const uint64_t key = keys[i], p = key >> 32;
        const int64_t seg = hk_cu_lower_bound(keys, 0, n, p << 32);
        const int64_t pos = lvl[p * (k + 2) + l] + (i - seg);
        const int32_t r = (int32_t)(key & 0xffffffffu);
        ext_row[pos] = r;
        len[pos] = l < k ? rowptr[r + 1] - rowptr[r] : 0;
        mkey[pos] = key;
        mval[pos] = (int32_t)(pos - lvl[p * (k + 2)]);
    }
}

__global__ void mpk_sizes(int64_t np, int k2, const int64_t *lvl, int64_t *size)
{
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < np;
         p += (int64_t)gridDim.x * blockDim.x)
        size[p] = lvl[p * k2 + k2 - 1] - lvl[p * k2];
}

// On-chip bytes of partition p staged for all k levels: nvec work vectors of its listed rows,
// then the blocks of its rows of level < k, their local columns and a local row pointer (the
// layout of mpk_staged_kernel).
__global__ void mpk_stage_sizes(int64_t np, int k2, int bs, int nvec, const int64_t *lvl,
                                const int64_t *ent_ptr, int64_t *bytes)
{
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < np;
         p += (int64_t)gridDim.x * blockDim.x) {
        const int64_t *lv = lvl + p * k2;
        bytes[p] = mpk_stage_bytes(bs, nvec, lv[k2 - 1] - lv[0], lv[k2 - 2] - lv[0],
                                   ent_ptr[lv[k2 - 2]] - ent_ptr[lv[0]]);
    }
}

__global__ void mpk_lcol(int64_t n, int k2, const uint64_t *mkey_unsorted, const int64_t *lvl,
                         const uint64_t *skey, const int32_t *sval, const int32_t *ext_row,
                         const int64_t *ent_ptr, const int64_t *rowptr, const int32_t *colind,
                         int32_t *lcol)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t len = ent_ptr[e + 1] - ent_ptr[e];
        if (len == 0) continue;
        const uint64_t p = mkey_unsorted[e] >> 32;
        const int64_t s0 = lvl[p * k2], s1 = lvl[p * k2 + k2 - 1];
        const int32_t g = ext_row[e];
        for (int64_t t = 0; t < len; t++) {
            const uint64_t x = (p << 32) | (uint64_t)(uint32_t)colind[rowptr[g] + t];
            const int64_t at = s0 + hk_cu_lower_bound(skey + s0, 0, s1 - s0, x);
            lcol[ent_ptr[e] + t] = sval[at];
        }
    }
}

// ---- the plan ------------------------------------------------------------------------------

static void mpk_destroy(cu_mpk *P)
{
    if (!P) return;
    hk_cu_mat_release(&P->wave);
    cudaFree(P->flag);
    cudaFree(P->order);
    cudaFree(P->counter);
    cudaFree(P->lvl);
    cudaFree(P->ext_row);
    cudaFree(P->ent_ptr);
    cudaFree(P->lcol);
    cudaFree(P->scratch);
    hk_cu_mpk_stream_destroy(P->stream);
    free(P);
}

static int bits_of(uint64_t v)
{
    int b = 0;
    while (v) {
        b++;
        v >>= 1;
    }
    return b;
}

#define MPK_FREE(x)                                                                                \
    do {                                                                                           \
        cudaFree(x);                                                                               \
        x = NULL;                                                                                  \
    } while (0)

// ---- the wavefront plan ----------------------------------------------------------------

__global__ void mpk_reach(int64_t nb, const int64_t *rowptr, const int32_t *colind,
                          unsigned long long *reach)
{
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < nb;
         r += (int64_t)gridDim.x * blockDim.x) {
        int64_t m = 0;
        for (int64_t t = rowptr[r]; t < rowptr[r + 1]; t++) {
            const int64_t d = (int64_t)colind[t] - r;
            m = max(m, d < 0 ? -d : d);
        }
        if (m) atomicMax(reach, (unsigned long long)m);
    }
}

static int wave_occupancy(int bs, int *per_sm);
__global__ void mpk_wave_order(int64_t ntile, int64_t skew, int kk, uint64_t *order);

static int wave_plan(const hk_bmat *K, int64_t block, int k, void **plan, hk_mpk_info *info)
{
    int ierr = 0;
    cu_mpk *P = (cu_mpk *)calloc(1, sizeof *P);
    unsigned long long *dreach = NULL, reach = 0;
    HK_CHECK(P, HK_ERR_MEMORY, "matrix powers: out of host memory");
    P->K = K;
    P->schedule = HK_MPK_WAVEFRONT;
    P->bs = K->br;
    P->k = k;
    P->nb = K->nbrows;
    HK_TRY(hk_cu_malloc((void **)&dreach, sizeof *dreach));
    HK_CU_TRY(cudaMemsetAsync(dreach, 0, sizeof *dreach, hk_cu.stream));
    if (P->nb)
        mpk_reach<<<hk_cu_grid(P->nb), HK_CU_BLOCK, 0, hk_cu.stream>>>(P->nb, K->rowptr, K->colind,
                                                                       dreach);
    HK_CU_TRY(cudaGetLastError());
    HK_CU_TRY(cudaMemcpyAsync(&reach, dreach, sizeof reach, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    {
        // lanes per row as in the SpMV (a few for long rows); a tile is one block's rows
        const double per_row = P->nb ? (double)K->nnzb / (double)P->nb : 0;
        P->tpr = per_row >= 48 ? 4 : per_row >= 6 ? 2 : 1;

        const int64_t R = WAVE_THREADS / P->tpr;
        P->reach = (int64_t)reach;
        P->ntile = P->nb > 0 ? (P->nb + R - 1) / R : 0;
        // the resident blocks bound how far back a tile's inputs must lie for it rarely to
        // wait, and so how much L2 a tile's rows must survive in between
        int per_sm = 1;
        HK_TRY(wave_occupancy(P->bs, &per_sm));
        if (per_sm < 1) per_sm = 1;
        const int64_t grid = (int64_t)(hk_cu.nsm > 0 ? hk_cu.nsm : 1) * per_sm;
        const int64_t min_skew = (P->reach + R - 1) / R + 1;
        // the chosen skew: a tile's inputs were handed out one round of resident blocks
        // before it (on an H100, 2D elasticity at 0.5M DOFs: twice that was 1.1-1.2x slower,
        // a quarter 1.3-1.4x slower)
        int64_t skew = block > 0 ? (block + R - 1) / R : min_skew - 1 + (grid + k - 1) / k;
        if (skew < min_skew) skew = min_skew;
        if (skew > P->ntile) skew = P->ntile > min_skew ? P->ntile : min_skew;
        P->skew = skew;
        P->block = skew * R < P->nb ? skew * R : (P->nb > 0 ? P->nb : 1);
        P->grid = (unsigned)(grid < P->ntile * k ? grid : (P->ntile * k > 0 ? P->ntile * k : 1));
        P->nparts = P->nb > 0 ? (P->nb + P->block - 1) / P->block : 0;
        info->block = P->block;
        info->bandwidth = P->reach;
        info->nparts = P->nparts;
        info->ext_rows = P->nb;
        info->max_ext = P->block;
        info->work = (int64_t)k * P->nb;
        HK_TRY(hk_cu_malloc((void **)&P->flag, sizeof(int) * (size_t)(k * P->ntile + 1)));
        HK_CU_TRY(
            cudaMemsetAsync(P->flag, 0, sizeof(int) * (size_t)(k * P->ntile + 1), hk_cu.stream));
        HK_TRY(hk_cu_malloc((void **)&P->counter, sizeof(unsigned)));
        HK_TRY(
            hk_cu_malloc((void **)&P->order,
                         sizeof(uint64_t) * (size_t)(P->ntile * ((int64_t)k * (k + 1) / 2) + 1)));
        for (int kk = 1; kk <= k && P->ntile > 0; kk++)
            mpk_wave_order<<<hk_cu_grid(P->ntile * kk), HK_CU_BLOCK, 0, hk_cu.stream>>>(
                P->ntile, P->skew, kk, P->order + P->ntile * ((int64_t)kk * (kk - 1) / 2));
        HK_CU_TRY(cudaGetLastError());
    }
    // K sliced in its row order; the SpMV kernels' layout, so level 1 streams it as fast
    P->wave.fmt = HK_FMT_SBELL;
    P->wave.prec = HK_FP64;
    P->wave.bs = P->bs;
    P->wave.nrows = P->wave.ncols = P->nb * P->bs;
    P->wave.slice = 32;
    P->wave.sigma = 1;
    P->wave.tpr = P->tpr;
    HK_TRY(hk_cu_mat_build(&P->wave, K));
    *plan = P;
    P = NULL;
fail:
    cudaFree(dreach);
    mpk_destroy(P);
    return ierr;
}

extern "C" int hk_cu_mpk_plan(const hk_bmat *K, int schedule, int64_t block, int k, double max_work,
                              void **plan, hk_mpk_info *info)
{
    int64_t nparts;
    HK_CALL(hk_mpk_plan_begin(K, schedule, &block, k, plan, info, &nparts));
    HK_CALL(hk_cu_init());
    if (schedule == HK_MPK_WAVEFRONT) return wave_plan(K, block, k, plan, info);
    const int64_t nb = K->nbrows;
    const int k2 = k + 2;
    int ierr = 0;
    cu_tmp tmp;
    cu_mpk *P = NULL;
    uint64_t *L[HK_MPK_MAXK + 1] = {0}, *cand = NULL, *uniq = NULL, *mkey = NULL, *skey = NULL;
    uint64_t *seen = NULL; // sorted union of the levels before the current one (from level 2)
    int64_t nseen = 0;
    int64_t nl[HK_MPK_MAXK + 1] = {0}, *deg = NULL, *off = NULL, *dcount = NULL, *len = NULL,
                             *sizes = NULL, *dmax = NULL;
    char *flag = NULL;
    int32_t *mval = NULL, *sval = NULL;
    int64_t *stage = NULL; // shared: the staged bytes of each partition
    unsigned long long *cnt = NULL;
    const int endbit = 32 + bits_of((uint64_t)nparts);
    const double cap = max_work > 0 ? max_work * (double)k * (double)nb : 0;
    double work = 0;
    P = (cu_mpk *)calloc(1, sizeof *P);
    HK_TRY_CHECK(P, HK_ERR_MEMORY, "matrix powers: out of host memory");
    P->K = K;
    P->schedule = schedule;
    P->bs = K->br;
    P->k = k;
    P->nb = nb;
    P->block = block;
    P->nparts = nparts;
    HK_CU_TRY(cudaDeviceGetAttribute(&P->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                     hk_cu.device));
    HK_TRY(hk_cu_malloc((void **)&dcount, sizeof(int64_t)));
    // level 0: the owned rows
    HK_TRY(hk_cu_malloc((void **)&L[0], sizeof(uint64_t) * (nb > 0 ? nb : 1)));
    nl[0] = nb;
    if (nb) mpk_level0<<<hk_cu_grid(nb), HK_CU_BLOCK, 0, hk_cu.stream>>>(nb, block, L[0]);
    HK_CU_TRY(cudaGetLastError());
    work = (double)k * nb;
    for (int l = 1; l <= k; l++) {
        const int64_t nf = nl[l - 1];
        if (nf == 0) {
            HK_TRY(hk_cu_malloc((void **)&L[l], sizeof(uint64_t)));
            continue;
        }
        HK_TRY(hk_cu_malloc((void **)&deg, sizeof(int64_t) * (nf + 1)));
        HK_TRY(hk_cu_malloc((void **)&off, sizeof(int64_t) * (nf + 1)));
        mpk_degree<<<hk_cu_grid(nf), HK_CU_BLOCK, 0, hk_cu.stream>>>(nf, L[l - 1], K->rowptr, deg);
        HK_CU_TRY(cudaMemsetAsync(deg + nf, 0, sizeof(int64_t), hk_cu.stream));
        HK_TRY(excl_scan(tmp, deg, off, nf + 1));
        int64_t nc = 0;
        HK_TRY(read_count(off + nf, &nc));
        if (nc == 0) { // rows without entries: nothing further
            MPK_FREE(deg);
            MPK_FREE(off);
            HK_TRY(hk_cu_malloc((void **)&L[l], sizeof(uint64_t)));
            continue;
        }
        HK_TRY_CHECK(nc < (1LL << 31), HK_ERR_UNSUPPORTED,
                     "matrix powers: %lld ghost candidates at level %d are too many; use a "
                     "smaller mpk.k or mpk.block",
                     (long long)nc, l);
        HK_TRY(hk_cu_malloc((void **)&cand, sizeof(uint64_t) * (nc > 0 ? 2 * nc : 2)));
        uint64_t *sorted = cand + nc;
        if (nc)
            mpk_expand<<<hk_cu_grid(nf), HK_CU_BLOCK, 0, hk_cu.stream>>>(nf, L[l - 1], K->rowptr,
                                                                         K->colind, off, cand);
        HK_CU_TRY(cudaGetLastError());
        MPK_FREE(deg);
        MPK_FREE(off);
        size_t b = 0;
        HK_CU_TRY(cub::DeviceRadixSort::SortKeys(NULL, b, cand, sorted, (int)nc, 0, endbit,
                                                 hk_cu.stream));
        HK_TRY(tmp.need(b));
        HK_CU_TRY(cub::DeviceRadixSort::SortKeys(tmp.p, b, cand, sorted, (int)nc, 0, endbit,
                                                 hk_cu.stream));
        HK_TRY(hk_cu_malloc((void **)&uniq, sizeof(uint64_t) * (nc > 0 ? nc : 1)));
        HK_CU_TRY(cub::DeviceSelect::Unique(NULL, b, sorted, uniq, dcount, (int)nc, hk_cu.stream));
        HK_TRY(tmp.need(b));
        HK_CU_TRY(cub::DeviceSelect::Unique(tmp.p, b, sorted, uniq, dcount, (int)nc, hk_cu.stream));
        int64_t nu = 0;
        HK_TRY(read_count(dcount, &nu));
        HK_TRY(hk_cu_malloc((void **)&flag, nu > 0 ? nu : 1));
        // new: in no earlier level at all (a nonsymmetric pattern reaches back further than
        // the two levels before, so every earlier level is searched: seen is their sorted union)
        if (nu)
            mpk_new<<<hk_cu_grid(nu), HK_CU_BLOCK, 0, hk_cu.stream>>>(
                nu, uniq, l >= 2 ? seen : L[0], l >= 2 ? nseen : nl[0], L[l - 1], 0, flag);
        HK_CU_TRY(cudaGetLastError());
        HK_TRY(hk_cu_malloc((void **)&L[l], sizeof(uint64_t) * (nu > 0 ? nu : 1)));
        HK_CU_TRY(
            cub::DeviceSelect::Flagged(NULL, b, uniq, flag, L[l], dcount, (int)nu, hk_cu.stream));
        HK_TRY(tmp.need(b));
        HK_CU_TRY(
            cub::DeviceSelect::Flagged(tmp.p, b, uniq, flag, L[l], dcount, (int)nu, hk_cu.stream));
        HK_TRY(read_count(dcount, &nl[l]));
        MPK_FREE(cand);
        MPK_FREE(uniq);
        MPK_FREE(flag);
        if (l < k) { // seen = sort(seen + L[l])
            const uint64_t *prev = l >= 2 ? seen : L[0];
            const int64_t np_ = l >= 2 ? nseen : nl[0], ns = np_ + nl[l];
            uint64_t *cat = NULL, *next_seen = NULL;
            HK_TRY(hk_cu_malloc((void **)&cat, sizeof(uint64_t) * (ns > 0 ? ns : 1)));
            HK_TRY(hk_cu_malloc((void **)&next_seen, sizeof(uint64_t) * (ns > 0 ? ns : 1)));
            HK_CU_TRY(cudaMemcpyAsync(cat, prev, sizeof(uint64_t) * np_, cudaMemcpyDeviceToDevice,
                                      hk_cu.stream));
            HK_CU_TRY(cudaMemcpyAsync(cat + np_, L[l], sizeof(uint64_t) * nl[l],
                                      cudaMemcpyDeviceToDevice, hk_cu.stream));
            HK_CU_TRY(cub::DeviceRadixSort::SortKeys(NULL, b, cat, next_seen, (int)ns, 0, endbit,
                                                     hk_cu.stream));
            HK_TRY(tmp.need(b));
            HK_CU_TRY(cub::DeviceRadixSort::SortKeys(tmp.p, b, cat, next_seen, (int)ns, 0, endbit,
                                                     hk_cu.stream));
            MPK_FREE(cat);
            MPK_FREE(seen);
            seen = next_seen;
            nseen = ns;
        }
        // a row of level l is computed at the levels after it: (k - l) times per pass
        work += (double)(k - l) * nl[l];
        if (cap > 0 && work > cap) {
            info->work = (int64_t)work;
            goto fail; // no plan, no error
        }
    }
    info->work = (int64_t)work;
    {
        int64_t next = 0;
        for (int l = 0; l <= k; l++)
            next += nl[l];
        P->next = next;
        info->ext_rows = next;
        // level starts: counts per (partition, level) with a zero after each partition, scanned
        const int64_t ncnt = nparts * k2;
        HK_TRY(hk_cu_malloc((void **)&cnt, sizeof(unsigned long long) * (ncnt + 1)));
        HK_CU_TRY(cudaMemsetAsync(cnt, 0, sizeof(unsigned long long) * (ncnt + 1), hk_cu.stream));
        for (int l = 0; l <= k; l++)
            if (nl[l])
                mpk_count<<<hk_cu_grid(nl[l]), HK_CU_BLOCK, 0, hk_cu.stream>>>(nl[l], L[l], k2, l,
                                                                               cnt);
        HK_CU_TRY(cudaGetLastError());
        HK_TRY(hk_cu_malloc((void **)&P->lvl, sizeof(int64_t) * (ncnt + 1)));
        HK_TRY(excl_scan(tmp, (const int64_t *)cnt, P->lvl, ncnt + 1));
        HK_TRY(hk_cu_malloc((void **)&P->ext_row, sizeof(int32_t) * (next > 0 ? next : 1)));
        HK_TRY(hk_cu_malloc((void **)&len, sizeof(int64_t) * (next + 1)));
        HK_TRY(hk_cu_malloc((void **)&mkey, sizeof(uint64_t) * (next > 0 ? 2 * next : 2)));
        HK_TRY(hk_cu_malloc((void **)&mval, sizeof(int32_t) * (next > 0 ? 2 * next : 2)));
        skey = mkey + next;
        sval = mval + next;
        HK_CU_TRY(cudaMemsetAsync(len + next, 0, sizeof(int64_t), hk_cu.stream));
        for (int l = 0; l <= k; l++)
            if (nl[l])
                mpk_scatter<<<hk_cu_grid(nl[l]), HK_CU_BLOCK, 0, hk_cu.stream>>>(
                    nl[l], L[l], k, l, P->lvl, K->rowptr, P->ext_row, len, mkey, mval);
        HK_CU_TRY(cudaGetLastError());
        for (int l = 0; l <= k; l++)
            MPK_FREE(L[l]);
        HK_TRY(hk_cu_malloc((void **)&P->ent_ptr, sizeof(int64_t) * (next + 1)));
        HK_TRY(excl_scan(tmp, len, P->ent_ptr, next + 1));
        int64_t nent = 0;
        HK_TRY(read_count(P->ent_ptr + next, &nent));
        HK_TRY(hk_cu_malloc((void **)&P->lcol, sizeof(int32_t) * (nent > 0 ? nent : 1)));
        size_t b = 0;
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(NULL, b, mkey, skey, mval, sval, (int)next, 0,
                                                  endbit, hk_cu.stream));
        HK_TRY(tmp.need(b));
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(tmp.p, b, mkey, skey, mval, sval, (int)next, 0,
                                                  endbit, hk_cu.stream));
        if (next)
            mpk_lcol<<<hk_cu_grid(next), HK_CU_BLOCK, 0, hk_cu.stream>>>(
                next, k2, mkey, P->lvl, skey, sval, P->ext_row, P->ent_ptr, K->rowptr, K->colind,
                P->lcol);
        HK_CU_TRY(cudaGetLastError());
        // the largest partition with its ghost zone
        HK_TRY(hk_cu_malloc((void **)&sizes, sizeof(int64_t) * (nparts > 0 ? nparts : 1)));
        HK_TRY(hk_cu_malloc((void **)&dmax, sizeof(int64_t)));
        if (nparts) {
            mpk_sizes<<<hk_cu_grid(nparts), HK_CU_BLOCK, 0, hk_cu.stream>>>(nparts, k2, P->lvl,
                                                                            sizes);
            HK_CU_TRY(cub::DeviceReduce::Max(NULL, b, sizes, dmax, (int)nparts, hk_cu.stream));
            HK_TRY(tmp.need(b));
            HK_CU_TRY(cub::DeviceReduce::Max(tmp.p, b, sizes, dmax, (int)nparts, hk_cu.stream));
            HK_TRY(read_count(dmax, &P->max_ext));
        }
        info->max_ext = P->max_ext;
        info->on_chip = (double)P->max_ext * P->bs * 5 * sizeof(double) <= (double)P->smem_optin;
        if (schedule == HK_MPK_SHARED) { // the largest staged partition, with 3 and 5 vectors
            int64_t h[2] = {0, 0};
            HK_TRY(hk_cu_malloc((void **)&stage, sizeof(int64_t) * (nparts > 0 ? nparts : 1)));
            for (int v = 0; v < 2 && nparts > 0; v++) {
                mpk_stage_sizes<<<hk_cu_grid(nparts), HK_CU_BLOCK, 0, hk_cu.stream>>>(
                    nparts, k2, P->bs, v ? 5 : 3, P->lvl, P->ent_ptr, stage);
                HK_CU_TRY(cudaGetLastError());
                HK_CU_TRY(cub::DeviceReduce::Max(NULL, b, stage, dmax, (int)nparts, hk_cu.stream));
                HK_TRY(tmp.need(b));
                HK_CU_TRY(cub::DeviceReduce::Max(tmp.p, b, stage, dmax, (int)nparts, hk_cu.stream));
                HK_TRY(read_count(dmax, &h[v]));
            }
            P->stage3 = (size_t)h[0];
            P->stage5 = (size_t)h[1];
            info->stage_bytes = P->stage5;
            info->on_chip = 1;
            if (P->stage5 > (size_t)P->smem_optin) goto fail; // no plan, no error
        }
    }
    *plan = P;
    P = NULL;
fail:
    for (int l = 0; l <= HK_MPK_MAXK; l++)
        cudaFree(L[l]);
    cudaFree(seen);
    cudaFree(cand);
    cudaFree(uniq);
    cudaFree(flag);
    cudaFree(deg);
    cudaFree(off);
    cudaFree(dcount);
    cudaFree(cnt);
    cudaFree(len);
    cudaFree(mkey);
    cudaFree(mval);
    cudaFree(sizes);
    cudaFree(dmax);
    cudaFree(stage);
    mpk_destroy(P);
    return ierr;
}

extern "C" void hk_cu_mpk_free(void *plan)
{
    mpk_destroy((cu_mpk *)plan);
}

extern "C" int hk_cu_mpk_stream_plan(const hk_bcsr *K, int64_t block, size_t budget, int k,
                                     double max_work, void **plan, hk_mpk_info *info)
{
    *plan = NULL;
    memset(info, 0, sizeof *info);
    HK_CALL(hk_cu_init());
    int ierr = 0;
    cu_mpk *P = (cu_mpk *)calloc(1, sizeof *P);
    HK_CHECK(P, HK_ERR_MEMORY, "matrix powers (streamed): out of host memory");
    HK_TRY(hk_cu_mpk_stream_build(K, block, budget, k, max_work, &P->stream, info));
    if (!P->stream) goto fail; // refused by max_work: no plan, no error
    P->schedule = HK_MPK_STREAM;
    P->bs = K->bs;
    P->k = k;
    P->nb = K->nbrows;
    P->block = info->block;
    P->nparts = info->nparts;
    P->max_ext = info->max_ext;
    *plan = P;
    return 0;
fail:
    mpk_destroy(P);
    return ierr;
}

// ---- apply ---------------------------------------------------------------------------------

struct mpk_args {
    double coef[3 * HK_MPK_MAXK];
    double *w[HK_MPK_MAXK + 1];
    double *u[HK_MPK_MAXK + 1];
    const double *d, *wprev;
    const int64_t *lvl, *ent_ptr, *rowptr;
    const int32_t *ext_row, *lcol;
    const double *val;
    double *scratch;
    int k, kk;
};

// W0, W-1 and U0 = d .* W0 of a partition's nload listed rows (from e0) into its work vectors,
// and U0 of its nown owned rows into the output.
template <int BS>
__device__ __forceinline__ void mpk_gather(const mpk_args &a, int64_t e0, int64_t nown,
                                           int64_t nload, double *wc, double *wp, double *uc)
{
    const double *w0 = a.w[0];
    for (int64_t e = threadIdx.x; e < nload; e += blockDim.x) {
        const int64_t g = a.ext_row[e0 + e];
#pragma unroll
        for (int r = 0; r < BS; r++) {
            const int64_t i = g * BS + r;
            const double w = w0[i];
            wc[e * BS + r] = w;
            wp[e * BS + r] = a.wprev ? a.wprev[i] : 0.0;
            if (a.d) {
                const double u = a.d[i] * w;
                uc[e * BS + r] = u;
                if (e < nown) a.u[0][i] = u;
            }
        }
    }
}

// acc = a block row's product with the partition's vector x: its len blocks v (row-major,
// BS x BS each) at local columns lc, summed in the row's order.
template <int BS>
__device__ __forceinline__ void mpk_row_product(const double *v, const int32_t *lc, int64_t len,
                                                const double *x, double (&acc)[BS])
{
#pragma unroll
    for (int r = 0; r < BS; r++)
        acc[r] = 0.0;
    for (int64_t t = 0; t < len; t++) {
        const double *xt = x + (int64_t)lc[t] * BS;
        double xv[BS];
#pragma unroll
        for (int c = 0; c < BS; c++)
            xv[c] = xt[c];
#pragma unroll
        for (int r = 0; r < BS; r++)
#pragma unroll
            for (int c = 0; c < BS; c++)
                acc[r] += v[t * BS * BS + r * BS + c] * xv[c];
    }
}

template <int BS, bool SH>
__global__ void __launch_bounds__(MPK_THREADS) mpk_apply_kernel(const mpk_args a)
{
    extern __shared__ double smem[];
    const int64_t p = blockIdx.x;
    const int64_t *lv = a.lvl + p * (a.k + 2);
    const int64_t e0 = lv[0], nown = lv[1] - e0, nload = lv[a.kk + 1] - e0;
    const bool hd = a.d != NULL;
    const int64_t S = nload * BS;
    double *loc = SH ? smem : a.scratch + e0 * BS * 5;
    double *wp = loc, *wc = loc + S, *wn = loc + 2 * S;
    double *uc = hd ? loc + 3 * S : wc, *un = hd ? loc + 4 * S : wn;
    mpk_gather<BS>(a, e0, nown, nload, wc, wp, uc);
    __syncthreads();
    for (int j = 0; j < a.kk; j++) {
        const hk_mpk_level L = hk_mpk_level_at(a.coef, j, hd, wc, wp, wn, un, a.w[j + 1],
                                               hd ? a.u[j + 1] : NULL);
        const int64_t nrow = lv[a.kk - j] - e0;
        for (int64_t e = threadIdx.x; e < nrow; e += blockDim.x) {
            const int64_t g = a.ext_row[e0 + e];
            const int32_t *lc = a.lcol + a.ent_ptr[e0 + e];
            const int64_t r0 = a.rowptr[g], len = a.rowptr[g + 1] - r0;
            const double *v = a.val + r0 * BS * BS;
            double acc[BS];
            mpk_row_product<BS>(v, lc, len, uc, acc);
#pragma unroll
            for (int r = 0; r < BS; r++) {
                const int64_t q = e * BS + r, i = g * BS + r;
                hk_mpk_step(&L, acc[r], hd ? a.d[i] : 0.0, q, i, e < nown);
            }
        }
        __syncthreads();
        hk_mpk_rotate(&wp, &wc, &wn, &uc, &un, hd);
    }
}

// The shared schedule (the thesis's Fig. 6.3): the block copies its partition's work vectors
// and the blocks, local columns and row starts of its rows of level < kk into shared memory
// (a warp per row, the row's blocks contiguous in K), then computes the kk levels from there
// with the ghost kernel's sums in the ghost kernel's order.
template <int BS> __global__ void __launch_bounds__(MPK_THREADS) mpk_staged_kernel(const mpk_args a)
{
    extern __shared__ double smem[];
    const int64_t p = blockIdx.x;
    const int64_t *lv = a.lvl + p * (a.k + 2);
    const int64_t e0 = lv[0], nown = lv[1] - e0, nload = lv[a.kk + 1] - e0;
    const int64_t nrow0 = lv[a.kk] - e0;
    const bool hd = a.d != NULL;
    const int64_t S = nload * BS;
    const int64_t ent0 = a.ent_ptr[e0], nent = a.ent_ptr[e0 + nrow0] - ent0;
    double *wp = smem, *wc = smem + S, *wn = smem + 2 * S;
    double *uc = hd ? smem + 3 * S : wc, *un = hd ? smem + 4 * S : wn;
    double *sv = smem + (hd ? 5 : 3) * S;
    int32_t *sc = (int32_t *)(sv + nent * BS * BS);
    int32_t *sr = sc + nent;
    mpk_gather<BS>(a, e0, nown, nload, wc, wp, uc);
    const int lane = threadIdx.x & 31;
    for (int64_t e = threadIdx.x >> 5; e < nrow0; e += blockDim.x >> 5) {
        const int64_t g = a.ext_row[e0 + e], r0 = a.rowptr[g], len = a.rowptr[g + 1] - r0;
        const int64_t o = a.ent_ptr[e0 + e] - ent0;
        if (lane == 0) sr[e] = (int32_t)o;
        const int32_t *lc = a.lcol + a.ent_ptr[e0 + e];
        for (int64_t t = lane; t < len; t += 32)
            sc[o + t] = lc[t];
        const double *v = a.val + r0 * BS * BS;
        double *dst = sv + o * BS * BS;
        for (int64_t t = lane; t < len * BS * BS; t += 32)
            dst[t] = __ldg(v + t);
    }
    if (threadIdx.x == 0) sr[nrow0] = (int32_t)nent;
    __syncthreads();
    for (int j = 0; j < a.kk; j++) {
        const hk_mpk_level L =
            hk_mpk_level_at(a.coef, j, hd, wc, wp, wn, un, a.w[j + 1], hd ? a.u[j + 1] : NULL);
        const int64_t nrow = lv[a.kk - j] - e0;
        for (int64_t e = threadIdx.x; e < nrow; e += blockDim.x) {
            const int64_t g = a.ext_row[e0 + e];
            const int32_t o = sr[e], len = sr[e + 1] - o;
            const int32_t *lc = sc + o;
            const double *v = sv + (int64_t)o * BS * BS;
            double acc[BS];
            mpk_row_product<BS>(v, lc, (int64_t)len, uc, acc);
#pragma unroll
            for (int r = 0; r < BS; r++) {
                const int64_t q = e * BS + r, i = g * BS + r;
                hk_mpk_step(&L, acc[r], hd ? a.d[i] : 0.0, q, i, e < nown);
            }
        }
        __syncthreads();
        hk_mpk_rotate(&wp, &wc, &wn, &uc, &un, hd);
    }
}

template <int BS> static int mpk_staged_launch(const cu_mpk *P, const mpk_args &a, size_t smem)
{
    auto kern = mpk_staged_kernel<BS>;
    HK_CU(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kern<<<(unsigned)P->nparts, MPK_THREADS, smem, hk_cu.stream>>>(a);
    HK_CU_LAUNCHED();
    return 0;
}

template <int BS> static int mpk_launch(const cu_mpk *P, const mpk_args &a, bool sh, size_t smem)
{
    if (sh) {
        auto kern = mpk_apply_kernel<BS, true>;
        HK_CU(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        kern<<<(unsigned)P->nparts, MPK_THREADS, smem, hk_cu.stream>>>(a);
    } else {
        mpk_apply_kernel<BS, false><<<(unsigned)P->nparts, MPK_THREADS, 0, hk_cu.stream>>>(a);
    }
    HK_CU_LAUNCHED();
    return 0;
}

// ---- the wavefront apply -------------------------------------------------------------------

struct wave_args {
    double coef[3 * HK_MPK_MAXK];
    double *w[HK_MPK_MAXK + 1];
    double *u[HK_MPK_MAXK + 1];
    const double *d, *wprev;
    const int64_t *sptr;
    const int32_t *swidth, *col;
    const double *val;
    int *flag;             // k * ntile: the epoch of the pass that finished tile (level, i)
    const uint64_t *order; // the tiles of a pass of kk levels in key order: level << 32 | tile
    unsigned *counter;     // tiles handed out in this pass
    int64_t S, nb, ntile, reach, total;
    int kk, tpr, rows, epoch;
};

// Tiles (level j, tile i) with key i + (j-1) skew below `key`: the tiles handed out before it.
__device__ __forceinline__ int64_t wave_before(int64_t key, int64_t ntile, int64_t skew, int kk)
{
    int64_t n = 0;
    for (int j = 1; j <= kk; j++) {
        const int64_t c = key - (int64_t)(j - 1) * skew;
        n += c <= 0 ? 0 : (c < ntile ? c : ntile);
    }
    return n;
}

// The q-th tile in key order, the highest level first within a key (kk * ntile tiles, no
// empty slots): the key by bisection on wave_before, then the level.
__device__ __forceinline__ void wave_tile(int64_t q, int64_t ntile, int64_t skew, int kk, int *j,
                                          int64_t *i)
{
    // the last key with wave_before(key) <= q (wave_before(0) = 0)
    const auto reached = [&](int64_t key) { return wave_before(key, ntile, skew, kk) <= q; };
    const int64_t lo = hk_cu_partition_point(1, ntile + (int64_t)(kk - 1) * skew, reached) - 1;
    const int64_t r = q - wave_before(lo, ntile, skew, kk);
    const int64_t top = lo / skew + 1;
    *j = (int)((top < kk ? top : kk) - r);
    *i = lo - (int64_t)(*j - 1) * skew;
}

__global__ void mpk_wave_order(int64_t ntile, int64_t skew, int kk, uint64_t *order)
{
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < ntile * kk;
         q += (int64_t)gridDim.x * blockDim.x) {
        int j;
        int64_t i;
        wave_tile(q, ntile, skew, kk, &j, &i);
        order[q] = ((uint64_t)j << 32) | (uint64_t)i;
    }
}

// One persistent block: take tiles in key order, wait for their inputs, compute, flag. The
// sum over a row is the SBELL kernel's (cuda_spmv.cu k_sell). The vectors written in this
// kernel are read through L1, which is not coherent with other SMs' writes; that is safe
// because a tile waits for every tile that holds a row of the cache lines it reads: tiles
// are whole lines (R rows of BS doubles, R >= 64), and the waited tiles cover whole tiles.
template <int BS>
__global__ void __launch_bounds__(WAVE_THREADS, 2) mpk_wave_kernel(const wave_args a)
{
    // two slots for the tile numbers: the next one is written while this one may still be
    // read, and both are separated from their readers by the barriers of a tile
    __shared__ unsigned s_next[2];
    const int tpr = a.tpr, lane = threadIdx.x & (tpr - 1);
    const int64_t rloc = threadIdx.x / tpr;
    if (threadIdx.x == 0) s_next[0] = atomicAdd(a.counter, 1u);
    __syncthreads();
    for (int slot = 0;; slot ^= 1) {
        const int64_t q = s_next[slot];
        if (q >= a.total) return;
        // the next tile is asked for now; its number is read after this tile's last barrier
        if (threadIdx.x == 0) s_next[slot ^ 1] = atomicAdd(a.counter, 1u);
        const uint64_t e = a.order[q];
        const int j = (int)(e >> 32);
        const int64_t i = (int64_t)(e & 0xffffffffu);
        const int64_t r0 = i * a.rows;
        if (j > 1) { // level j-1 within the bandwidth of this tile: a thread per flag
            const int64_t lo = r0 - a.reach > 0 ? (r0 - a.reach) / a.rows : 0;
            int64_t hi = (r0 + a.rows - 1 + a.reach) / a.rows;
            if (hi >= a.ntile) hi = a.ntile - 1;
            const int *f = a.flag + (int64_t)(j - 2) * a.ntile;
            for (int64_t t = lo + threadIdx.x; t <= hi; t += blockDim.x) {
                while (*(const volatile int *)&f[t] != a.epoch)
                    __nanosleep(32);
                __threadfence();
            }
        }
        __syncthreads();
        const int64_t g = r0 + rloc;
        const bool active = g < a.nb;
        const bool first = j == 1, last = j == a.kk;
        const double *x = first ? a.w[0] : (a.d ? a.u[j - 1] : a.w[j - 1]);
        double acc[BS];
#pragma unroll
        for (int r = 0; r < BS; r++)
            acc[r] = 0;
        if (active) {
            const int64_t s = g / a.S, jr = g - s * a.S, base = a.sptr[s];
            const int w = a.swidth[s];
            // WAVE_UNROLL slots at a time, their column loads first: few threads run per SM
            // here, so each keeps more loads in flight than the SpMV's threads do
#pragma unroll 1
            for (int k0 = lane; k0 < w; k0 += WAVE_UNROLL * tpr) {
                int32_t c[WAVE_UNROLL];
#pragma unroll
                for (int u = 0; u < WAVE_UNROLL; u++) {
                    const int k = k0 + u * tpr;
                    const int64_t at = base + (int64_t)(k < w ? k : k0) * a.S + jr;
                    c[u] = k < w ? (last ? __ldcs(a.col + at) : __ldcg(a.col + at)) : -1;
                }
#pragma unroll
                for (int u = 0; u < WAVE_UNROLL; u++) {
                    const int k = k0 + u * tpr;
                    if (k >= w) break;
                    const int64_t slot = base + (int64_t)k * a.S;
                    const int64_t cs = c[u] >= 0 ? (int64_t)c[u] * BS : 0;
                    const double *v = a.val + slot * (BS * BS) + jr;
#pragma unroll
                    for (int cc = 0; cc < BS; cc++) {
                        double xc;
                        if (first)
                            xc = a.d ? __ldg(x + cs + cc) * __ldg(a.d + cs + cc)
                                     : __ldg(x + cs + cc);
                        else
                            xc = x[cs + cc];
                        xc = c[u] >= 0 ? xc : 0.0;
#pragma unroll
                        for (int r = 0; r < BS; r++) {
                            const double *vp = v + (r * BS + cc) * a.S;
                            acc[r] += (last ? __ldcs(vp) : __ldcg(vp)) * xc;
                        }
                    }
                }
            }
        }
        for (int o = tpr >> 1; o > 0; o >>= 1)
#pragma unroll
            for (int r = 0; r < BS; r++)
                acc[r] += __shfl_down_sync(0xffffffffu, acc[r], o, tpr);
        if (active && lane == 0) {
            const double c0 = a.coef[3 * (j - 1)], c1 = a.coef[3 * (j - 1) + 1],
                         c2 = a.coef[3 * (j - 1) + 2];
            const double *wm1 = a.w[j - 1], *wm2 = j >= 2 ? a.w[j - 2] : a.wprev;
            double *wo = a.w[j];
#pragma unroll
            for (int r = 0; r < BS; r++) {
                const int64_t e = g * BS + r;
                // a zero coefficient drops its term (and its load)
                double w = c0 * acc[r];
                if (c1 != 0.0) w += c1 * wm1[e];
                if (c2 != 0.0 && wm2) w += c2 * wm2[e];
                wo[e] = w;
                if (a.d) {
                    a.u[j][e] = a.d[e] * w;
                    if (first) a.u[0][e] = a.d[e] * a.w[0][e];
                }
            }
        }
        __syncthreads(); // every row of the tile written
        if (threadIdx.x == 0) {
            __threadfence();
            *(volatile int *)&a.flag[(int64_t)(j - 1) * a.ntile + i] = a.epoch;
        }
    }
}

// The wavefront kernel of block size bs (1..6).
static const void *wave_kernel(int bs)
{
    static const void *const kern[6] = {
        (const void *)mpk_wave_kernel<1>, (const void *)mpk_wave_kernel<2>,
        (const void *)mpk_wave_kernel<3>, (const void *)mpk_wave_kernel<4>,
        (const void *)mpk_wave_kernel<5>, (const void *)mpk_wave_kernel<6>};
    return kern[bs - 1];
}

static int wave_occupancy(int bs, int *per_sm)
{
    HK_CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, wave_kernel(bs), WAVE_THREADS, 0));
    return 0;
}

static int wave_apply(cu_mpk *P, int kk, const double *coef, const double *d, const double *wprev,
                      hk_vec *const *W, hk_vec *const *U)
{
    const hk_cu_mat *m = (const hk_cu_mat *)P->wave.bdata;
    wave_args a;
    memset(&a, 0, sizeof a);
    memcpy(a.coef, coef, sizeof(double) * 3 * kk);
    for (int j = 0; j <= kk; j++) {
        a.w[j] = (double *)W[j]->data;
        if (d) a.u[j] = (double *)U[j]->data;
    }
    a.d = d;
    a.wprev = wprev;
    a.sptr = m->sptr;
    a.swidth = m->swidth;
    a.col = m->colind;
    a.val = (const double *)m->val;
    a.flag = P->flag;
    a.order = P->order + P->ntile * ((int64_t)kk * (kk - 1) / 2);
    a.counter = P->counter;
    a.S = m->S;
    a.nb = P->nb;
    a.ntile = P->ntile;
    a.reach = P->reach;
    a.total = P->ntile * kk;
    a.kk = kk;
    a.tpr = P->tpr;
    a.rows = WAVE_THREADS / P->tpr;
    // a new epoch marks this pass's flags; the counter restarts
    if (++P->epoch == INT32_MAX) {
        HK_CU(cudaMemsetAsync(P->flag, 0, sizeof(int) * P->k * P->ntile, hk_cu.stream));
        P->epoch = 1;
    }
    a.epoch = P->epoch;
    HK_CU(cudaMemsetAsync(P->counter, 0, sizeof(unsigned), hk_cu.stream));
    void *args[1] = {(void *)&a};
    HK_CU(cudaLaunchKernel(wave_kernel(P->bs), dim3(P->grid), dim3(WAVE_THREADS), args, 0,
                           hk_cu.stream));
    return 0;
}

#define CHECK_VEC(v, what)                                                                         \
    HK_CHECK((v) && (v)->prec == HK_FP64 && (v)->n == n, HK_ERR_ARG,                               \
             "matrix powers: %s must be an fp64 vector of the matrix's %lld rows", what,           \
             (long long)n)

extern "C" int hk_cu_mpk_apply(void *plan, int kk, const double *coef, const hk_vec *d,
                               const hk_vec *wprev, hk_vec *const *W, hk_vec *const *U)
{
    cu_mpk *P = (cu_mpk *)plan;
    HK_CHECK(P, HK_ERR_ARG, "matrix powers: no plan");
    HK_CHECK(kk >= 1 && kk <= P->k, HK_ERR_ARG,
             "matrix powers: %d levels asked of a plan made for %d", kk, P->k);
    const int64_t n = P->nb * P->bs;
    mpk_args a;
    memset(&a, 0, sizeof a);
    for (int j = 0; j <= kk; j++) {
        CHECK_VEC(W[j], "every W");
        a.w[j] = (double *)W[j]->data;
        if (d) {
            CHECK_VEC(U[j], "every U");
            a.u[j] = (double *)U[j]->data;
        }
    }
    if (d) CHECK_VEC(d, "d");
    if (wprev) CHECK_VEC(wprev, "wprev");
    if (P->nparts == 0) return 0;
    if (P->schedule == HK_MPK_STREAM)
        return hk_cu_mpk_stream_apply(P->stream, kk, coef, d ? (const double *)d->data : NULL,
                                      wprev ? (const double *)wprev->data : NULL, W, U);
    if (P->schedule == HK_MPK_WAVEFRONT)
        return wave_apply(P, kk, coef, d ? (const double *)d->data : NULL,
                          wprev ? (const double *)wprev->data : NULL, W, U);
    memcpy(a.coef, coef, sizeof(double) * 3 * kk);
    a.d = d ? (const double *)d->data : NULL;
    a.wprev = wprev ? (const double *)wprev->data : NULL;
    a.lvl = P->lvl;
    a.ent_ptr = P->ent_ptr;
    a.rowptr = P->K->rowptr;
    a.ext_row = P->ext_row;
    a.lcol = P->lcol;
    a.val = P->K->val;
    a.k = P->k;
    a.kk = kk;
    if (P->schedule == HK_MPK_SHARED) {
        const size_t st = d ? P->stage5 : P->stage3;
        switch (P->bs) {
        case 1:
            return mpk_staged_launch<1>(P, a, st);
        case 2:
            return mpk_staged_launch<2>(P, a, st);
        case 3:
            return mpk_staged_launch<3>(P, a, st);
        case 4:
            return mpk_staged_launch<4>(P, a, st);
        case 5:
            return mpk_staged_launch<5>(P, a, st);
        default:
            return mpk_staged_launch<6>(P, a, st);
        }
    }
    const size_t smem = (size_t)P->max_ext * P->bs * (d ? 5 : 3) * sizeof(double);
    const bool sh = smem <= (size_t)P->smem_optin;
    if (!sh && !P->scratch)
        HK_CALL(hk_cu_malloc((void **)&P->scratch, (size_t)P->next * P->bs * 5 * sizeof(double)));
    a.scratch = P->scratch;
    switch (P->bs) {
    case 1:
        return mpk_launch<1>(P, a, sh, smem);
    case 2:
        return mpk_launch<2>(P, a, sh, smem);
    case 3:
        return mpk_launch<3>(P, a, sh, smem);
    case 4:
        return mpk_launch<4>(P, a, sh, smem);
    case 5:
        return mpk_launch<5>(P, a, sh, smem);
    default:
        return mpk_launch<6>(P, a, sh, smem);
    }
}

// ---- the Gram reduction --------------------------------------------------------------------

#define GRAM_TILE 32
#define GRAM_MAXP (HK_GRAM_MAX * HK_GRAM_MAX + HK_GRAM_MAX * (HK_GRAM_MAX + 1) / 2)
#define GRAM_PER_THREAD ((GRAM_MAXP + HK_CU_BLOCK - 1) / HK_CU_BLOCK)

struct gram_args {
    const double *v[2 * HK_GRAM_MAX];
    unsigned char a[GRAM_MAXP], b[GRAM_MAXP];
    int np, nv;
};

// Stage 1: tiles of GRAM_TILE rows of every vector in shared memory, each thread owns pairs
// q = threadIdx.x + j*blockDim.x and sums its rows in order; one partial per pair and block.
__global__ void __launch_bounds__(HK_CU_BLOCK)
    gram_kernel(int64_t n, const gram_args g, double *part)
{
    __shared__ double tile[2 * HK_GRAM_MAX][GRAM_TILE + 1]; // +1: no bank conflicts
    __shared__ unsigned char sa[GRAM_MAXP], sb[GRAM_MAXP];
    __shared__ const double *sv[2 * HK_GRAM_MAX];
    for (int q = threadIdx.x; q < g.np; q += blockDim.x) {
        sa[q] = g.a[q];
        sb[q] = g.b[q];
    }
    if (threadIdx.x < g.nv) sv[threadIdx.x] = g.v[threadIdx.x];
    double acc[GRAM_PER_THREAD];
#pragma unroll
    for (int s = 0; s < GRAM_PER_THREAD; s++)
        acc[s] = 0.0;
    __syncthreads();
    for (int64_t t0 = (int64_t)blockIdx.x * GRAM_TILE; t0 < n;
         t0 += (int64_t)gridDim.x * GRAM_TILE) {
        for (int q = threadIdx.x; q < g.nv * GRAM_TILE; q += blockDim.x) {
            const int vi = q / GRAM_TILE, r = q % GRAM_TILE;
            const int64_t i = t0 + r;
            tile[vi][r] = i < n ? sv[vi][i] : 0.0;
        }
        __syncthreads();
#pragma unroll
        for (int s = 0; s < GRAM_PER_THREAD; s++) {
            const int q = threadIdx.x + s * HK_CU_BLOCK;
            if (q < g.np) {
                const double *x = tile[sa[q]], *y = tile[sb[q]];
                double t = acc[s];
#pragma unroll 8
                for (int r = 0; r < GRAM_TILE; r++)
                    t += x[r] * y[r];
                acc[s] = t;
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int s = 0; s < GRAM_PER_THREAD; s++) {
        const int q = threadIdx.x + s * HK_CU_BLOCK;
        if (q < g.np) part[(size_t)q * gridDim.x + blockIdx.x] = acc[s];
    }
}

// Stage 2: pair q sums its nb partials in block order.
__global__ void gram_finish(int np, unsigned nb, const double *part, double *out)
{
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= np) return;
    double s = 0.0;
    for (unsigned b = 0; b < nb; b++)
        s += part[(size_t)q * nb + b];
    out[q] = s;
}

static double *gram_part, *gram_out, *gram_host;

extern "C" int hk_cu_vec_gram(int m, hk_vec *const *X, hk_vec *const *Y, double *G, double *GX)
{
    HK_CHECK(m >= 1 && m <= HK_GRAM_MAX, HK_ERR_ARG, "vec_gram: %d vectors; at most %d", m,
             HK_GRAM_MAX);
    const int64_t n = X[0]->n;
    const int distinct = Y && Y != X;
    gram_args g;
    memset(&g, 0, sizeof g);
    for (int i = 0; i < m; i++) {
        HK_CHECK(X[i]->prec == HK_FP64 && X[i]->n == n &&
                     (!distinct || (Y[i]->prec == HK_FP64 && Y[i]->n == n)),
                 HK_ERR_ARG, "vec_gram: the vectors must be fp64 of one length");
        g.v[i] = (const double *)X[i]->data;
        if (distinct) g.v[m + i] = (const double *)Y[i]->data;
    }
    g.nv = distinct ? 2 * m : m;
    g.np = hk_gram_pairs(m, distinct, GX != NULL, g.a, g.b);
    if (!gram_part) {
        HK_CALL(hk_cu_malloc((void **)&gram_part, sizeof(double) * GRAM_MAXP * HK_CU_MAXB));
        HK_CALL(hk_cu_malloc((void **)&gram_out, sizeof(double) * GRAM_MAXP));
        HK_CU(cudaMallocHost((void **)&gram_host, sizeof(double) * GRAM_MAXP));
    }
    // a fixed grid for given n and device: the sums repeat
    int64_t nb = (n + GRAM_TILE - 1) / GRAM_TILE;
    const int64_t most = (int64_t)4 * hk_cu.nsm < HK_CU_MAXB ? (int64_t)4 * hk_cu.nsm : HK_CU_MAXB;
    if (nb > most) nb = most;
    if (nb < 1) nb = 1;
    gram_kernel<<<(unsigned)nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(n, g, gram_part);
    HK_CU_LAUNCHED();
    gram_finish<<<(g.np + HK_CU_BLOCK - 1) / HK_CU_BLOCK, HK_CU_BLOCK, 0, hk_cu.stream>>>(
        g.np, (unsigned)nb, gram_part, gram_out);
    HK_CU_LAUNCHED();
    HK_CU(cudaMemcpyAsync(gram_host, gram_out, sizeof(double) * g.np, cudaMemcpyDeviceToHost,
                          hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    hk_gram_scatter(m, distinct, gram_host, G, GX);
    return 0;
}
