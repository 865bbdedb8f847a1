// Sparse and dense set-up ops of smoothed-aggregation AMG on the device (contracts: the
// "set-up on the backend" part of hk_backend_ops in solver/hk_impl.h; CPU references in
// solver/cpu/cpu_sparse.c). docs/cuda.md describes the algorithms.
//
// bmat_spgemm: one warp per block row of C = A B, a hash table of the row's block columns in
// shared memory (rows with more distinct columns than it holds are redone with tables in global
// memory sized from the row's product count). Symbolic pass: count the distinct columns and keep
// the row's sorted columns (rank sort) in a scratch array while it has room; scan; pattern pass:
// copy the kept columns into C, insert and sort again only the rows not kept. The values come
// from the numeric product (below, the re-set-up's): a warp per row of C sums the row in shared
// memory, walking A's row in order and, for each A block, B's row in order, a lane per (B block,
// row of the product block). Within one A block the B blocks have distinct columns, so the lanes
// of a warp work on different entries of C, and __syncwarp between A blocks keeps every entry's
// sum in the CPU's order. Products and sums are __dmul_rn / __dadd_rn (no contraction): the
// CPU's digits exactly.
#include <cub/cub.cuh>
#include <cusolverDn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_impl.cuh"
#include "hk_cuda.h"
#include "spgemm_plan.h"

extern "C" const hk_backend_ops hk_backend_cuda; // cuda_core.cu

#define SP_WARPS 8  // warps per block of the row kernels
#define SP_SCAP 512 // hash slots per warp in shared memory (power of two)
#define SP_EMPTY (-1)
#define SP_KEEP 24            // sorted columns per row of C kept from the symbolic pass, on average
#define SP_KEEP_MIN (1 << 22) // and at least this many (16 MB)

static __device__ __forceinline__ unsigned sp_hash(int32_t key, unsigned mask)
{
    return ((unsigned)key * 2654435761u) & mask;
}

// Insert key (>= 0) into keys[cap] (linear probing); 1 when it was not there before.
static __device__ __forceinline__ int sp_insert(int32_t *keys, unsigned mask, int32_t key)
{
    unsigned s = sp_hash(key, mask);
    for (;;) {
        int32_t old = atomicCAS(&keys[s], SP_EMPTY, key);
        if (old == SP_EMPTY) return 1;
        if (old == key) return 0;
        s = (s + 1) & mask;
    }
}

struct sp_args {
    // A (br x bk blocks), B (bk x bc blocks)
    const int64_t *arp, *brp;
    const int32_t *aci, *bci;
    int64_t nbr;
    // symbolic: distinct columns per row (-1: the shared table overflowed); pattern: C
    int64_t *cnt;
    const int64_t *crp;
    int32_t *cci;
    // the symbolic pass's sorted columns kept for the pattern pass: row i's at keep[koff[i]]
    // (koff[i] = -1: not kept, inserted again), places taken from *kused up to kcap
    int32_t *keep;
    int64_t *koff;
    unsigned long long *kused;
    int64_t kcap;
    // global tables for the overflowed rows: slots gsize[i] at goff[i] (0: row uses shared)
    const int64_t *gsize, *goff;
    int32_t *gkeys, *gvals;
    int global_pass; // 0: shared tables (rows with gsize 0, all rows when gsize is NULL)
};

// Symbolic (PATTERN false): a warp per row of C inserts the columns of the row's products into
// its hash table and counts the distinct ones; a row that fits the shared table also compacts
// and rank-sorts them into a place of keep (when one is left), so the pattern pass copies them.
// Pattern (PATTERN true): a kept row is copied into C's columns; any other is inserted again,
// compacted and rank-sorted there.
template <bool PATTERN> __global__ void __launch_bounds__(SP_WARPS * 32) sp_rows(sp_args g)
{
    __shared__ int32_t skeys[SP_WARPS][SP_SCAP];
    __shared__ int32_t svals[SP_WARPS][SP_SCAP];
    __shared__ int64_t sincl[SP_WARPS][32], sq0[SP_WARPS][32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int64_t i = (int64_t)blockIdx.x * SP_WARPS + w;
    if (i >= g.nbr) return; // whole warps leave together
    int32_t *keys, *vals;
    int64_t cap;
    const int64_t gs = g.gsize ? g.gsize[i] : 0;
    if (PATTERN && !g.global_pass && gs == 0 && g.koff && g.koff[i] >= 0) {
        const int64_t c0 = g.crp[i], n = g.crp[i + 1] - c0, k0 = g.koff[i];
        for (int64_t t = lane; t < n; t += 32)
            g.cci[c0 + t] = g.keep[k0 + t];
        return;
    }
    if (g.global_pass) {
        if (gs == 0) return;
        keys = g.gkeys + g.goff[i];
        vals = g.gvals + g.goff[i];
        cap = gs;
    } else {
        if (PATTERN && gs != 0) return;
        keys = skeys[w];
        vals = svals[w];
        cap = SP_SCAP;
        for (int s = lane; s < SP_SCAP; s += 32)
            keys[s] = SP_EMPTY;
        __syncwarp();
    }
    const unsigned mask = (unsigned)(cap - 1);
    const int64_t limit = cap / 2; // load factor at most 1/2 (+ one batch of 32)

    // insert the row's product columns (a set: in any order), 32 blocks of A's row at a time:
    // the lanes read their block's row of B (start, length), a warp scan gives each one's first
    // product, and the window's products are inserted 32 at a time, lane t taking product t
    // (its A block found by binary search in the scan)
    int64_t count = 0;
    int overflow = 0;
    const int64_t a0 = g.arp[i], a1 = g.arp[i + 1];
    for (int64_t base = a0; base < a1 && !overflow; base += 32) { // warp-uniform
        int64_t q0 = 0, incl = 0;
        if (base + lane < a1) {
            const int32_t k = g.aci[base + lane];
            q0 = g.brp[k];
            incl = g.brp[k + 1] - q0;
        }
        for (int off = 1; off < 32; off *= 2) {
            const int64_t y = __shfl_up_sync(0xffffffffu, incl, off);
            if (lane >= off) incl += y;
        }
        const int64_t total = __shfl_sync(0xffffffffu, incl, 31);
        sincl[w][lane] = incl;
        sq0[w][lane] = q0;
        __syncwarp();
        for (int64_t t0 = 0; t0 < total; t0 += 32) {
            const int64_t t = t0 + lane;
            int fresh = 0;
            if (t < total) {
                int lo = 0, hi = 31; // the first block whose products reach past t
                while (lo < hi) {
                    const int mid = (lo + hi) / 2;
                    if (sincl[w][mid] > t)
                        hi = mid;
                    else
                        lo = mid + 1;
                }
                const int64_t q = sq0[w][lo] + t - (lo ? sincl[w][lo - 1] : 0);
                fresh = sp_insert(keys, mask, g.bci[q]);
            }
            count += __popc(__ballot_sync(0xffffffffu, fresh));
            if (count > limit) {
                overflow = 1;
                break;
            }
        }
        __syncwarp(); // the next window overwrites sincl and sq0
    }
    int32_t *out = g.cci + (PATTERN ? g.crp[i] : 0);
    if (!PATTERN) {
        if (lane == 0) g.cnt[i] = overflow ? -1 : count;
        if (g.global_pass || !g.keep) return;
        int64_t k0 = -1;
        if (!overflow) { // a place in keep for the sorted columns, while any is left
            unsigned long long at = 0;
            if (lane == 0) at = atomicAdd(g.kused, (unsigned long long)count);
            at = __shfl_sync(0xffffffffu, at, 0);
            if ((int64_t)at + count <= g.kcap) k0 = (int64_t)at;
        }
        if (lane == 0) g.koff[i] = k0;
        if (k0 < 0) return;
        out = g.keep + k0;
    }
    __syncwarp();
    // compact the keys into vals[0, n), rank-sort them into out
    int64_t n = 0;
    for (int64_t s0 = 0; s0 < cap; s0 += 32) {
        const int64_t s = s0 + lane;
        const int32_t key = s < cap ? keys[s] : SP_EMPTY;
        const unsigned b = __ballot_sync(0xffffffffu, key != SP_EMPTY);
        if (key != SP_EMPTY) vals[n + __popc(b & ((1u << lane) - 1u))] = key;
        n += __popc(b);
    }
    __syncwarp();
    for (int64_t t = lane; t < n; t += 32) {
        const int32_t key = vals[t];
        int64_t rank = 0;
        for (int64_t u = 0; u < n; u++)
            rank += vals[u] < key;
        out[rank] = key;
    }
}

// Upper bound of a row's distinct columns: its product count; the global table size of an
// overflowed row (a power of two at least twice the bound, at least 64).
__global__ void sp_bound(const int64_t *arp, const int32_t *aci, const int64_t *brp,
                         const int64_t *cnt, int64_t nbr, int64_t *gsize)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nbr;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t s = 0;
        if (cnt[i] < 0) {
            int64_t ub = 0;
            for (int64_t p = arp[i]; p < arp[i + 1]; p++)
                ub += brp[aci[p] + 1] - brp[aci[p]];
            s = 64;
            while (s < 2 * ub)
                s *= 2;
        }
        gsize[i] = s;
    }
}

// A device scan (cub) with its temporary storage allocated here; out may not alias in.
static int sp_scan(const int64_t *in, int64_t *out, int64_t n, bool inclusive)
{
    size_t tmp = 0;
    void *buf = NULL;
    int ierr = 0;
    if (n <= 0) return 0;
    HK_CU(inclusive ? cub::DeviceScan::InclusiveSum(NULL, tmp, in, out, n, hk_cu.stream)
                    : cub::DeviceScan::ExclusiveSum(NULL, tmp, in, out, n, hk_cu.stream));
    HK_CALL(hk_cu_tmp_alloc(&buf, tmp));
    HK_CU_TRY(inclusive ? cub::DeviceScan::InclusiveSum(buf, tmp, in, out, n, hk_cu.stream)
                        : cub::DeviceScan::ExclusiveSum(buf, tmp, in, out, n, hk_cu.stream));
fail:
    hk_cu_tmp_free(buf);
    return ierr;
}

static int sp_launch(bool numeric, const sp_args &g)
{
    const int64_t nb = (g.nbr + SP_WARPS - 1) / SP_WARPS;
    if (nb == 0) return 0;
    HK_CHECK(nb < (1LL << 31), HK_ERR_UNSUPPORTED, "bmat_spgemm: %lld block rows are too many",
             (long long)g.nbr);
    if (numeric)
        sp_rows<true><<<(unsigned)nb, SP_WARPS * 32, 0, hk_cu.stream>>>(g);
    else
        sp_rows<false><<<(unsigned)nb, SP_WARPS * 32, 0, hk_cu.stream>>>(g);
    HK_CU_LAUNCHED();
    return 0;
}

static int sp_numeric_values(const hk_bmat *A, const hk_bmat *B, hk_bmat *C,
                             unsigned long long *dfirst, int upper);

// C = A B; with values false its pattern alone (C->val allocated, not written).
static int sp_spgemm(const hk_bmat *A, const hk_bmat *B, hk_bmat *C, bool values)
{
    int ierr = 0;
    int64_t *cnt = NULL, *gsize = NULL, *goff = NULL, *rp = NULL, *koff = NULL;
    int32_t *gkeys = NULL, *gvals = NULL, *keep = NULL;
    int64_t gtotal = 0, nnzb = 0, first = -1;
    unsigned long long *dfirst = NULL, *kused = NULL;
    memset(C, 0, sizeof *C);
    HK_CALL(hk_bmat_chain_check(A, B, "B", "bmat_spgemm"));
    const int64_t nbr = A->nbrows;
    sp_args g;
    memset(&g, 0, sizeof g);
    g.arp = A->rowptr, g.aci = A->colind;
    g.brp = B->rowptr, g.bci = B->colind;
    g.nbr = nbr;
    HK_TRY(hk_cu_tmp_alloc((void **)&cnt, (size_t)(nbr + 1) * sizeof(int64_t)));
    // room to keep SP_KEEP sorted columns a row on average, at least SP_KEEP_MIN (R (A P): few
    // long rows); the rows past it are inserted again
    g.kcap = nbr * SP_KEEP > SP_KEEP_MIN ? nbr * SP_KEEP : SP_KEEP_MIN;
    HK_TRY(hk_cu_tmp_alloc((void **)&koff, (size_t)(nbr + 1) * sizeof(int64_t)));
    HK_TRY(hk_cu_tmp_alloc((void **)&keep, (size_t)(g.kcap ? g.kcap : 1) * sizeof(int32_t)));
    HK_TRY(hk_cu_tmp_alloc((void **)&kused, sizeof *kused));
    HK_CU_TRY(cudaMemsetAsync(kused, 0, sizeof *kused, hk_cu.stream));
    g.keep = keep, g.koff = koff, g.kused = kused;
    HK_TRY(hk_cu_tmp_alloc((void **)&rp, (size_t)(nbr + 1) * sizeof(int64_t)));
    HK_TRY(hk_cu_tmp_alloc((void **)&gsize, (size_t)(nbr + 1) * sizeof(int64_t)));
    HK_TRY(hk_cu_tmp_alloc((void **)&goff, (size_t)(nbr + 1) * sizeof(int64_t)));
    // symbolic, shared tables, the sorted columns kept; overflowed rows get global tables and
    // are counted again
    g.cnt = cnt;
    HK_TRY(sp_launch(false, g));
    if (nbr > 0) {
        sp_bound<<<hk_cu_grid(nbr), HK_CU_BLOCK, 0, hk_cu.stream>>>(A->rowptr, A->colind, B->rowptr,
                                                                    cnt, nbr, gsize);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_CU_TRY(cudaMemsetAsync(gsize + nbr, 0, sizeof(int64_t), hk_cu.stream));
    HK_TRY(sp_scan(gsize, goff, nbr + 1, false));
    HK_CU_TRY(
        cudaMemcpyAsync(&gtotal, goff + nbr, sizeof gtotal, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    g.gsize = gsize, g.goff = goff;
    if (gtotal > 0) {
        HK_TRY(hk_cu_tmp_alloc((void **)&gkeys, (size_t)gtotal * sizeof(int32_t)));
        HK_TRY(hk_cu_tmp_alloc((void **)&gvals, (size_t)gtotal * sizeof(int32_t)));
        HK_CU_TRY(cudaMemsetAsync(gkeys, 0xff, (size_t)gtotal * sizeof(int32_t), hk_cu.stream));
        g.gkeys = gkeys, g.gvals = gvals, g.global_pass = 1;
        HK_TRY(sp_launch(false, g));
        g.global_pass = 0;
    }
    // row pointers
    HK_CU_TRY(cudaMemsetAsync(rp, 0, sizeof(int64_t), hk_cu.stream));
    HK_TRY(sp_scan(cnt, rp + 1, nbr, true));
    HK_CU_TRY(cudaMemcpyAsync(&nnzb, rp + nbr, sizeof nnzb, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    HK_TRY(hk_bmat_alloc(A->be, A->br, B->bc, nbr, B->nbcols, nnzb, C));
    HK_CU_TRY(cudaMemcpyAsync(C->rowptr, rp, (size_t)(nbr + 1) * sizeof(int64_t),
                              cudaMemcpyDeviceToDevice, hk_cu.stream));
    // pattern: the kept columns copied, the other rows' sorted by the hash tables again; then
    // the values by sp_numeric_values (the same kernel as the re-set-up's) unless not asked
    g.crp = C->rowptr, g.cci = C->colind;
    HK_TRY(sp_launch(true, g));
    if (gtotal > 0) {
        HK_CU_TRY(cudaMemsetAsync(gkeys, 0xff, (size_t)gtotal * sizeof(int32_t), hk_cu.stream));
        g.global_pass = 1;
        HK_TRY(sp_launch(true, g));
    }
    if (values) {
        HK_TRY(hk_cu_setup_flag(&dfirst));
        HK_TRY(sp_numeric_values(A, B, C, dfirst, 0));
        HK_TRY(hk_cu_first_row_read(dfirst, &first)); // none: C's pattern is the product's
    }
fail:
    if (ierr) {
        cudaStreamSynchronize(hk_cu.stream);
        hk_bmat_free(C);
    }
    // in stream order: the next op's temporaries may reuse them
    hk_cu_tmp_free(cnt), hk_cu_tmp_free(rp), hk_cu_tmp_free(gsize), hk_cu_tmp_free(goff);
    hk_cu_tmp_free(gkeys), hk_cu_tmp_free(gvals), hk_cu_tmp_free(keep), hk_cu_tmp_free(koff);
    hk_cu_tmp_free(kused);
    return ierr;
}

int hk_cu_bmat_spgemm(const hk_bmat *A, const hk_bmat *B, hk_bmat *C)
{
    return sp_spgemm(A, B, C, true);
}

int hk_cu_bmat_spgemm_pattern(const hk_bmat *A, const hk_bmat *B, hk_bmat *C)
{
    return sp_spgemm(A, B, C, false);
}

// ---- C = A B into a pattern made before (numeric re-set-up) ---------------------------------
//
// A team of TEAM threads per block row of C (a warp for short rows, the whole 128-thread block
// for long ones: R (A P) has rows of a few thousand values), the row's values accumulated in
// shared memory and written out once, coalesced (the hash kernel above adds into global
// memory). For each block of A's row in order, the team takes the (block of B's row, row of
// the product block) pairs, which write distinct entries of C, then synchronises: every entry
// is summed in the order of A's row then B's row, as on the CPU, with __dmul_rn / __dadd_rn,
// so the digits are bmat_spgemm's. A product block's position in C's row is a binary search in
// the row's column indices (in shared memory with the values). A row too long for the team's
// shared memory is summed in place in global memory, in the same order.

#define SPN_THREADS 128 // threads per block
#define SPN_SMEM 45056  // bytes of shared memory per block (under the 48 KB static limit)

struct spn_args {
    const int64_t *arp, *brp, *crp;
    const int32_t *aci, *bci, *cci;
    const double *av, *bv;
    double *cv;
    int br, bk, bc;
    int64_t nbr;
    int64_t cap, ccap;         // doubles and column indices of shared memory per team
    int capnb, hcap;           // spr_rows: blocks of C's row and hash slots per warp
    int upper;                 // only C's blocks with column >= row (the others untouched)
    unsigned long long *first; // first block row with a product block outside C's pattern
};

template <int TEAM> static __device__ __forceinline__ void spn_sync()
{
    if (TEAM == 32)
        __syncwarp();
    else
        __syncthreads();
}

template <int TEAM> __global__ void __launch_bounds__(SPN_THREADS) spn_rows(spn_args g)
{
    extern __shared__ double spn_shared[];
    const int teams = SPN_THREADS / TEAM, team = threadIdx.x / TEAM, t = threadIdx.x % TEAM;
    const int64_t i = (int64_t)blockIdx.x * teams + team;
    if (i >= g.nbr) return; // a whole team leaves (TEAM = SPN_THREADS: the whole block)
    const int br = g.br, bk = g.bk, bc = g.bc, bb = br * bc;
    const int64_t c0 = g.crp[i], nb = g.crp[i + 1] - c0, nv = nb * bb;
    // upper: the values from the row's first block with column >= i (C's columns are sorted)
    const int64_t v0 = g.upper ? (hk_cu_lower_bound(g.cci, c0, c0 + nb, i) - c0) * bb : 0;
    const bool fits = nv <= g.cap && nb <= g.ccap;
    double *acc = fits ? spn_shared + (size_t)team * g.cap : g.cv + (size_t)c0 * bb;
    int32_t *scols = (int32_t *)(spn_shared + (size_t)teams * g.cap) + (size_t)team * g.ccap;
    const int32_t *cols = fits ? scols : g.cci + c0;
    for (int64_t e = v0 + t; e < nv; e += TEAM)
        acc[e] = 0.0;
    if (fits)
        for (int64_t e = t; e < nb; e += TEAM)
            scols[e] = g.cci[c0 + e];
    spn_sync<TEAM>();
    for (int64_t p = g.arp[i]; p < g.arp[i + 1]; p++) {
        const int64_t k = g.aci[p], q0 = g.brp[k], nq = g.brp[k + 1] - q0;
        const double *ablk = g.av + (size_t)p * br * bk;
        for (int64_t task = t; task < nq * br; task += TEAM) {
            const int64_t q = q0 + task / br;
            const int r = (int)(task % br);
            const int32_t j = g.bci[q];
            if (g.upper && j < i) continue; // below the diagonal: not summed, not looked up
            const int64_t pos = hk_lower_bound_i32(cols, 0, nb, j);
            if (pos >= nb || cols[pos] != j) {
                atomicMin(g.first, (unsigned long long)i);
                continue;
            }
            const double *a = ablk + (size_t)r * bk, *b = g.bv + (size_t)q * bk * bc;
            double *dst = acc + (size_t)pos * bb + (size_t)r * bc;
            for (int c = 0; c < bc; c++) {
                double s = dst[c];
                for (int m = 0; m < bk; m++)
                    s = __dadd_rn(s, __dmul_rn(a[m], b[m * bc + c]));
                dst[c] = s;
            }
        }
        spn_sync<TEAM>();
    }
    if (fits)
        for (int64_t e = v0 + t; e < nv; e += TEAM)
            g.cv[(size_t)c0 * bb + e] = acc[e];
}

// ---- C = A B into a known pattern, output-stationary (the AMG block shapes) ------------------
//
// spo_rows: a team of 4 to 32 lanes (from C's mean row length) per block row of C; lane t owns
// the row's blocks t, t + TEAM, ... and keeps each one's BR x BC sums in registers while it walks
// A's row in order: for A block p (column k) it looks up its own column j in B's row k (binary
// search; B's rows are short) and, where present, adds A_p B_q entry by entry. Every entry is
// then summed over A's row in order, each product block over m in order, with __dmul_rn /
// __dadd_rn: the CPU's digits, with no shared memory, no synchronisation and no hash table. A
// product block outside C's pattern is found by counting: the lanes' hits must add up to the
// row's product count (the sum of B's row lengths over A's row). Counting alone misses a pattern
// with a column twice in place of a missing one whose hits are as many, so each lane also checks
// that its column is greater than the one before it (C's rows are sorted and unique by contract).
// UPPER: only the row's blocks with column j >= i, the lanes spread over them (the lower blocks
// are neither summed nor written: half the work of a symmetric product), and the row's product
// count only of the B blocks with column >= i (a binary search in each B row).

// acc += a b for one BR x BK block a and BK x BC block b: entry by entry over m in order, with
// __dmul_rn / __dadd_rn (the CPU's digits).
template <int BR, int BK, int BC>
static __device__ __forceinline__ void spo_add(double *acc, const double *a, const double *b)
{
    double bm[BK * BC];
#pragma unroll
    for (int e = 0; e < BK * BC; e++)
        bm[e] = b[e];
#pragma unroll
    for (int r = 0; r < BR; r++) {
        double ar[BK];
#pragma unroll
        for (int m = 0; m < BK; m++)
            ar[m] = a[r * BK + m];
#pragma unroll
        for (int s = 0; s < BC; s++)
#pragma unroll
            for (int m = 0; m < BK; m++)
                acc[r * BC + s] = __dadd_rn(acc[r * BC + s], __dmul_rn(ar[m], bm[m * BC + s]));
    }
}

// Lane t's share of the product count of an A row [a0, a1) (row i of C): B's row lengths over
// its blocks, UPPER only their blocks with column >= i.
template <int TEAM, bool UPPER>
static __device__ __forceinline__ int64_t spo_terms(const spn_args &g, int64_t a0, int64_t a1,
                                                    int t, int64_t i)
{
    int64_t terms = 0;
    for (int64_t p = a0 + t; p < a1; p += TEAM) {
        const int64_t k = g.aci[p], q1 = g.brp[k + 1];
        terms += q1 - (UPPER ? hk_cu_lower_bound(g.bci, g.brp[k], q1, i) : g.brp[k]);
    }
    return terms;
}

// The team's hits against its row's product count (every lane of the warp takes part): a
// product block outside C's pattern leaves them short, and the row is reported; so is a row
// where some lane found its column not above the one before it (its hits pushed below).
template <int TEAM>
static __device__ __forceinline__ void spo_check(const spn_args &g, bool live, int64_t i, int t,
                                                 int64_t hits, int64_t terms)
{
#pragma unroll
    for (int off = TEAM / 2; off > 0; off /= 2) {
        hits += __shfl_xor_sync(0xffffffffu, hits, off, TEAM);
        terms += __shfl_xor_sync(0xffffffffu, terms, off, TEAM);
    }
    if (live && t == 0 && hits != terms) atomicMin(g.first, (unsigned long long)i);
}

template <int BR, int BK, int BC, int TEAM, bool UPPER>
// At most 128 registers (two blocks of 256 an SM): one more halves the resident warps, and the
// 6x3 . 3x6 kernel at 130 took R (A P) 0.036 s against 0.022 s at 128 (bracket, 2.52M DOFs,
// H200, runs 20-21); the bound costs the 6x6 shapes a few spilled bytes outside the sums.
__global__ void __launch_bounds__(256, 2) spo_rows(spn_args g)
{
    const int64_t gt = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i = gt / TEAM;
    const int t = (int)(gt % TEAM);
    const bool live = i < g.nbr;
    int64_t hits = 0, terms = 0;
    if (live) {
        const int64_t a0 = g.arp[i], a1 = g.arp[i + 1], c0 = g.crp[i], c1 = g.crp[i + 1];
        terms = spo_terms<TEAM, UPPER>(g, a0, a1, t, i);
        const int64_t cu = UPPER ? hk_cu_lower_bound(g.cci, c0, c1, i) : c0;
        for (int64_t c = cu + t; c < c1; c += TEAM) {
            const int32_t j = g.cci[c];
            // unsorted: hits pushed far below any count (no flag of its own)
            if (c > c0 && j <= g.cci[c - 1]) hits -= INT64_C(1) << 40;
            double acc[BR * BC];
#pragma unroll
            for (int e = 0; e < BR * BC; e++)
                acc[e] = 0.0;
            for (int64_t p = a0; p < a1; p++) {
                const int64_t k = g.aci[p], q1 = g.brp[k + 1];
                const int64_t q = hk_cu_lower_bound(g.bci, g.brp[k], q1, j);
                if (q >= q1 || g.bci[q] != j) continue;
                hits++;
                spo_add<BR, BK, BC>(acc, g.av + (size_t)p * BR * BK, g.bv + (size_t)q * BK * BC);
            }
            double *dst = g.cv + (size_t)c * BR * BC;
#pragma unroll
            for (int e = 0; e < BR * BC; e++)
                dst[e] = acc[e];
        }
    }
    spo_check<TEAM>(g, live, i, t, hits, terms);
}

template <int BR, int BK, int BC, bool UPPER>
static void spo_launch_team(const spn_args &g, int team, unsigned nblk)
{
    switch (team) {
    case 4:
        spo_rows<BR, BK, BC, 4, UPPER><<<nblk, 256, 0, hk_cu.stream>>>(g);
        break;
    case 8:
        spo_rows<BR, BK, BC, 8, UPPER><<<nblk, 256, 0, hk_cu.stream>>>(g);
        break;
    case 16:
        spo_rows<BR, BK, BC, 16, UPPER><<<nblk, 256, 0, hk_cu.stream>>>(g);
        break;
    default:
        spo_rows<BR, BK, BC, 32, UPPER><<<nblk, 256, 0, hk_cu.stream>>>(g);
        break;
    }
}

template <int BR, int BK, int BC>
static void spo_launch_shape(const spn_args &g, int team, unsigned nblk)
{
    if (g.upper)
        spo_launch_team<BR, BK, BC, true>(g, team, nblk);
    else
        spo_launch_team<BR, BK, BC, false>(g, team, nblk);
}

// ---- C = A B into a known pattern, a warp per row of C in shared memory (the AMG shapes) ----
//
// A warp per block row of C holds the row's sums in shared memory (zeroed) and a hash table of
// its block columns (column -> position in the row, at most half full: one or two probes). It
// walks A's row in order; for A block p (column k) lane (q, r) takes row r of the product with
// B block q of B's row k, finds the block's position by the table and adds row r of A_p B_q into
// the row's sums entry by entry over m in order; then __syncwarp. The B blocks of one row of B
// have distinct columns, so no two lanes of a step touch one entry, and every entry is summed
// over A's row in order, over m in order, with __dmul_rn / __dadd_rn: the CPU's digits. The
// rows of B (start and length) are read for 32 blocks of A's row at once and passed round by
// shuffles, so a step waits for one load of B's columns and values. A row longer than the warp's
// share of shared memory is summed in place in C's values, its positions found by binary search
// in C's columns (the same order, so the same digits). A product block outside C's pattern
// misses the table (or the search): its row is reported. UPPER: the tasks whose block of C is
// below the diagonal (column < row) are skipped before their look-up, and only the row's blocks
// from its first one with column >= row are zeroed and written.

#define SPR_WARPS 4             // warps (rows of C) per thread block
#define SPR_SMEM_MAX (110 << 10) // bytes of shared memory per thread block at most (2 an SM)

// The position of column j in the table (keys, pos; mask + 1 slots, at most half full), -1
// when it is not there.
static __device__ __forceinline__ int spr_find(const int32_t *keys, const int32_t *pos,
                                               unsigned mask, int32_t j)
{
    for (unsigned s = sp_hash(j, mask);; s = (s + 1) & mask) {
        const int32_t key = keys[s];
        if (key == j) return pos[s];
        if (key == SP_EMPTY) return -1;
    }
}

// One block of A's row: lane (q, r) adds row r of A_p B_q into acc, q over the ntask / BR blocks
// of B's row (columns cols, values bvals), ablk = A_p; then __syncwarp. Positions from the table
// (SHARED) or by binary search in C's row (in place).
template <int BR, int BK, int BC, bool SHARED, bool UPPER>
static __device__ __forceinline__ void
spr_step(const spn_args &g, int64_t i, int lane, int ntask, const int32_t *cols,
         const double *bvals, const double *ablk, double *acc, const int32_t *keys,
         const int32_t *spos, unsigned mask, int64_t c0, int64_t nb)
{
    constexpr int BB = BR * BC;
    for (int task = lane; task < ntask; task += 32) {
        const int ql = task / BR, r = task % BR;
        const int32_t j = __ldg(cols + ql);
        if (UPPER && j < i) continue;
        const double *b = bvals + (size_t)ql * BK * BC;
        double a[BK];
#pragma unroll
        for (int m = 0; m < BK; m++)
            a[m] = __ldg(ablk + r * BK + m);
        int64_t pos;
        if (SHARED) {
            pos = spr_find(keys, spos, mask, j);
        } else {
            pos = hk_cu_lower_bound(g.cci, c0, c0 + nb, j) - c0;
            if (pos >= nb || g.cci[c0 + pos] != j) pos = -1;
        }
        if (pos < 0) {
            atomicMin(g.first, (unsigned long long)i);
            continue;
        }
        double *dst = acc + (size_t)pos * BB + r * BC;
#pragma unroll
        for (int s = 0; s < BC; s++) {
            double v = dst[s];
#pragma unroll
            for (int m = 0; m < BK; m++)
                v = __dadd_rn(v, __dmul_rn(a[m], __ldg(b + m * BC + s)));
            dst[s] = v;
        }
    }
    __syncwarp();
}

// The rows of B of blocks base.. base + 31 of A's row (a1 its end): lane u's start *q0 and the
// inclusive sum *incl of their lengths; the window's block count.
static __device__ __forceinline__ int spr_window(const spn_args &g, int lane, int64_t base,
                                                 int64_t a1, int64_t *q0, int64_t *incl)
{
    *q0 = 0, *incl = 0;
    if (base + lane < a1) {
        const int32_t k = g.aci[base + lane];
        *q0 = g.brp[k];
        *incl = g.brp[k + 1] - *q0;
    }
    for (int off = 1; off < 32; off *= 2) {
        const int64_t y = __shfl_up_sync(0xffffffffu, *incl, off);
        if (lane >= off) *incl += y;
    }
    return a1 - base < 32 ? (int)(a1 - base) : 32;
}

// Row i of C = A B summed into acc (row-major blocks, zeroed): in shared memory with the table
// (keys, pos) when SHARED, else in C's values with positions by binary search in C's columns.
template <int BR, int BK, int BC, bool SHARED, bool UPPER>
static __device__ __forceinline__ void spr_walk(const spn_args &g, int64_t i, int lane, int64_t c0,
                                                int64_t nb, double *acc, const int32_t *keys,
                                                const int32_t *spos, unsigned mask)
{
    const int64_t a1 = g.arp[i + 1];
    for (int64_t base = g.arp[i]; base < a1; base += 32) { // warp-uniform
        int64_t myq0, incl;
        const int n = spr_window(g, lane, base, a1, &myq0, &incl);
        for (int u = 0; u < n; u++) {
            const int64_t q0 = __shfl_sync(0xffffffffu, myq0, u);
            const int64_t from = u ? __shfl_sync(0xffffffffu, incl, u - 1) : 0;
            const int ntask = (int)(__shfl_sync(0xffffffffu, incl, u) - from) * BR;
            spr_step<BR, BK, BC, SHARED, UPPER>(
                g, i, lane, ntask, g.bci + q0, g.bv + (size_t)q0 * BK * BC,
                g.av + (size_t)(base + u) * BR * BK, acc, keys, spos, mask, c0, nb);
        }
    }
}

template <int BR, int BK, int BC, bool UPPER>
__global__ void __launch_bounds__(SPR_WARPS * 32) spr_rows(spn_args g)
{
    extern __shared__ double spr_shared[];
    constexpr int BB = BR * BC;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int64_t i = (int64_t)blockIdx.x * SPR_WARPS + w;
    if (i >= g.nbr) return; // whole warps leave together
    const int capnb = g.capnb, hcap = g.hcap;
    const unsigned mask = (unsigned)hcap - 1u;
    const int64_t stride = (int64_t)capnb * BB + hcap;
    double *sacc = spr_shared + (size_t)w * stride;
    int32_t *keys = (int32_t *)(sacc + (size_t)capnb * BB), *spos = keys + hcap;
    const int64_t c0 = g.crp[i], nb = g.crp[i + 1] - c0;
    const int64_t v0 = UPPER ? (hk_cu_lower_bound(g.cci, c0, c0 + nb, i) - c0) * BB : 0;
    double *cv = g.cv + (size_t)c0 * BB;
    if (nb > capnb) { // warp-uniform: summed in place
        for (int64_t e = v0 + lane; e < nb * BB; e += 32)
            cv[e] = 0.0;
        __syncwarp();
        spr_walk<BR, BK, BC, false, UPPER>(g, i, lane, c0, nb, cv, NULL, NULL, 0);
        return;
    }
    for (int64_t e = lane; e < nb * BB; e += 32)
        sacc[e] = 0.0;
    for (int s = lane; s < hcap; s += 32)
        keys[s] = SP_EMPTY;
    __syncwarp();
    for (int e = lane; e < (int)nb; e += 32) {
        const int32_t j = g.cci[c0 + e];
        unsigned s = sp_hash(j, mask);
        while (atomicCAS(&keys[s], SP_EMPTY, j) != SP_EMPTY)
            s = (s + 1) & mask;
        spos[s] = e;
    }
    __syncwarp();
    spr_walk<BR, BK, BC, true, UPPER>(g, i, lane, c0, nb, sacc, keys, spos, mask);
    for (int64_t e = v0 + lane; e < nb * BB; e += 32)
        cv[e] = sacc[e];
}

// The warp's share of shared memory for spr_rows: room for 1.5 times C's mean row and 8 blocks
// (at least 16; elasticity3d:30's longest rows of A P and R (A P) are 1.9 and 1.7 times the
// mean, 18 and 61 blocks), the table a power of two at least twice that. Within SPR_SMEM_MAX a
// block the room for C's row shrinks (to 16 blocks; longer rows are summed in place).
template <int BR, int BK, int BC> static size_t spr_layout(spn_args &g, int64_t cnnzb)
{
    const int64_t bb = (int64_t)BR * BC;
    const double mean = (double)cnnzb / (double)g.nbr;
    int64_t capnb = (int64_t)ceil(1.5 * mean) + 8;
    if (capnb < 16) capnb = 16;
    for (;;) {
        int64_t hcap = 32;
        while (hcap < 2 * capnb)
            hcap *= 2;
        const size_t bytes = (size_t)SPR_WARPS * (size_t)(capnb * bb + hcap) * sizeof(double);
        if (bytes <= SPR_SMEM_MAX || capnb <= 16) {
            g.capnb = (int)capnb, g.hcap = (int)hcap;
            return bytes;
        }
        capnb = capnb * 3 / 4 < 16 ? 16 : capnb * 3 / 4;
    }
}

template <int BR, int BK, int BC, bool UPPER> static int spr_launch_shape(spn_args g, int64_t cnnzb)
{
    const int64_t nblk = (g.nbr + SPR_WARPS - 1) / SPR_WARPS;
    HK_CHECK(nblk < (1LL << 31), HK_ERR_UNSUPPORTED, "bmat_spgemm: %lld block rows are too many",
             (long long)g.nbr);
    const size_t smem = spr_layout<BR, BK, BC>(g, cnnzb);
    void (*kernel)(spn_args) = spr_rows<BR, BK, BC, UPPER>;
    if (smem > (48 << 10))
        HK_CU(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kernel<<<(unsigned)nblk, SPR_WARPS * 32, smem, hk_cu.stream>>>(g);
    HK_CU_LAUNCHED();
    return 0;
}

// The kernel for an AMG shape's numeric product.
enum spgemm_kernel {
    SPGEMM_BY_SHAPE,
    SPGEMM_ROW,
    SPGEMM_STATIONARY,
    SPGEMM_PAIRS,
    SPGEMM_PAIRS_SORTED
};

// The planned kernel when HOOKE_SPGEMM is unset (measured on an H200, bracket 2.52M DOFs: A P
// 6.9 ms sorted against 10.3 in plan order, R (A P) 3.2 against 4.4).
#define SPGEMM_PLAN_DEFAULT SPGEMM_PAIRS_SORTED

// HOOKE_SPGEMM (for measurement): row (spr_rows) or stationary (spo_rows) for every AMG shape;
// pairs-sorted and pairs: the planned product (spp_blocks) where a plan was made
// (bmat_spgemm_numeric_plan), over C's blocks sorted by list length (the default) or in plan
// order, each product's own choice elsewhere; unset or empty, each product's own choice
// (spo_choose, or SPGEMM_PLAN_DEFAULT). Read at each product, so a test may time them all in
// one process (the planned ones: the plan's order is set when it is made, under the value).
static int spgemm_kernel_read(spgemm_kernel *k)
{
    const char *v = getenv("HOOKE_SPGEMM");
    *k = !v || !*v                    ? SPGEMM_BY_SHAPE
         : !strcmp(v, "row")          ? SPGEMM_ROW
         : !strcmp(v, "stationary")   ? SPGEMM_STATIONARY
         : !strcmp(v, "pairs")        ? SPGEMM_PAIRS
         : !strcmp(v, "pairs-sorted") ? SPGEMM_PAIRS_SORTED
                                      : (spgemm_kernel)-1;
    HK_CHECK(*k != (spgemm_kernel)-1, HK_ERR_ARG,
             "HOOKE_SPGEMM=%s: set it to pairs-sorted (a re-set-up's planned pairs, a thread per "
             "row of a block of C, the blocks sorted by list length: the default), pairs (the "
             "same in plan order), row (a warp per row of C in shared memory) or stationary (a "
             "lane per block of C), or unset it (each product's own kernel)",
             v);
    return 0;
}

// C's mean row (doubles) up to which spr_rows is chosen. Measured on an H200: spr_rows won A P
// (3x3 . 3x6; elasticity3d:60 1.89 against 2.24 ms, bracket 2.52M DOFs 16 against 25 ms), where
// C has many short rows (elasticity3d:30: 9.5 blocks of 18 doubles, 171); spo_rows won R (A P)
// (6x3 . 3x6; bracket 22 against 35 ms, 19.3M DOFs 155 against 243 ms) and Ac Ac (6x6 . 6x6,
// 4.1 against 7.1 ms), where C has few long rows (elasticity3d:30: 36 blocks of 36 doubles, 1296,
// and more). The row in shared memory sets spr_rows's occupancy: 171 doubles leave room for 14
// blocks of 4 warps an SM, 1296 for 3 (12 warps, too few to hide each A block's chain of loads),
// while spo_rows holds no shared memory. So the rule is C's mean row in doubles, not the shape
// (one shape takes several roles: 3x3 . 3x3 is 3D A A and a 2D coarse level, 1x1 every scalar
// product), with the line between the measured sides. The 2D shapes (2x2 . 2x3, 3x2 . 2x3, 3x3
// . 3x3: rows of a few tens to a few hundred doubles) and the scalar ones (tens) fall to
// spr_rows; they were not measured.
#define SPR_MEAN_MAX 768

static spgemm_kernel spo_choose(const spn_args &g, int64_t cnnzb)
{
    const double mean = (double)cnnzb * g.br * g.bc / (double)g.nbr;
    return mean <= SPR_MEAN_MAX ? SPGEMM_ROW : SPGEMM_STATIONARY;
}

// The numeric product C = A B when the shape is one of AMG's (scalar, 2D and 3D elasticity:
// A T, A P, R (A P), coarse levels): spr_rows or spo_rows (kernel, or by spo_choose); *done = 0
// when it is not (the caller takes spn_rows). g.first must be set; C's pattern complete.
static int spo_launch(const spn_args &g, int64_t cnnzb, spgemm_kernel kernel, int *done)
{
    *done = 0;
    const int br = g.br, bk = g.bk, bc = g.bc;
#define SPO_SHAPE(R, K, C) (br == (R) && bk == (K) && bc == (C))
    const bool known = SPO_SHAPE(1, 1, 1) || SPO_SHAPE(2, 2, 3) || SPO_SHAPE(3, 2, 3) ||
                       SPO_SHAPE(3, 3, 3) || SPO_SHAPE(3, 3, 6) || SPO_SHAPE(6, 3, 6) ||
                       SPO_SHAPE(6, 6, 6);
    if (!known || g.nbr == 0) return 0;
    if (kernel != SPGEMM_ROW && kernel != SPGEMM_STATIONARY) kernel = spo_choose(g, cnnzb);
    if (kernel == SPGEMM_ROW) {
#define SPR_SHAPE(R, K, C)                                                                         \
    if (SPO_SHAPE(R, K, C))                                                                        \
    HK_CALL((g.upper ? spr_launch_shape<R, K, C, true>(g, cnnzb)                                   \
                     : spr_launch_shape<R, K, C, false>(g, cnnzb)))
        SPR_SHAPE(1, 1, 1);
        SPR_SHAPE(2, 2, 3);
        SPR_SHAPE(3, 2, 3);
        SPR_SHAPE(3, 3, 3);
        SPR_SHAPE(3, 3, 6);
        SPR_SHAPE(6, 3, 6);
        SPR_SHAPE(6, 6, 6);
#undef SPR_SHAPE
        *done = 1;
        return 0;
    }
    // the team from C's mean row, upper: its blocks on and above the diagonal (about half, with
    // the diagonal block)
    const double mean = (g.upper ? 0.5 * (double)(cnnzb + g.nbr) : (double)cnnzb) / (double)g.nbr;
    const int team = mean <= 4 ? 4 : mean <= 8 ? 8 : mean <= 16 ? 16 : 32;
    const int64_t nblk = (g.nbr * team + 255) / 256;
    HK_CHECK(nblk < (1LL << 31), HK_ERR_UNSUPPORTED, "bmat_spgemm: %lld block rows are too many",
             (long long)g.nbr);
    if (SPO_SHAPE(1, 1, 1)) spo_launch_shape<1, 1, 1>(g, team, (unsigned)nblk);
    if (SPO_SHAPE(2, 2, 3)) spo_launch_shape<2, 2, 3>(g, team, (unsigned)nblk);
    if (SPO_SHAPE(3, 2, 3)) spo_launch_shape<3, 2, 3>(g, team, (unsigned)nblk);
    if (SPO_SHAPE(3, 3, 3)) spo_launch_shape<3, 3, 3>(g, team, (unsigned)nblk);
    if (SPO_SHAPE(3, 3, 6)) spo_launch_shape<3, 3, 6>(g, team, (unsigned)nblk);
    if (SPO_SHAPE(6, 3, 6)) spo_launch_shape<6, 3, 6>(g, team, (unsigned)nblk);
    if (SPO_SHAPE(6, 6, 6)) spo_launch_shape<6, 6, 6>(g, team, (unsigned)nblk);
#undef SPO_SHAPE
    HK_CU_LAUNCHED();
    *done = 1;
    return 0;
}

// The shared-memory row kernel for C = A B (any shape): a warp per row while the mean row of C
// fits a quarter of the shared memory, else the whole block; a team's share: values, then 1/16
// as many column indices.
static int spn_launch(spn_args g, int64_t cnnzb)
{
    const int64_t bb = (int64_t)g.br * g.bc;
    const double mean = (double)cnnzb * (double)bb / (double)g.nbr;
    const int team = mean * 8 * 1.25 <= SPN_SMEM / (SPN_THREADS / 32) ? 32 : SPN_THREADS;
    const int teams = SPN_THREADS / team;
    const int64_t per_team = SPN_SMEM / teams; /* bytes */
    g.ccap = per_team / (16 * 4) < 1 ? 1 : per_team / (16 * 4);
    g.cap = (per_team - g.ccap * 4) / 8;
    const int64_t nblk = (g.nbr + teams - 1) / teams;
    HK_CHECK(nblk < (1LL << 31), HK_ERR_UNSUPPORTED,
             "bmat_spgemm_numeric: %lld block rows are too many", (long long)g.nbr);
    if (team == 32)
        spn_rows<32><<<(unsigned)nblk, SPN_THREADS, SPN_SMEM, hk_cu.stream>>>(g);
    else
        spn_rows<SPN_THREADS><<<(unsigned)nblk, SPN_THREADS, SPN_SMEM, hk_cu.stream>>>(g);
    HK_CU_LAUNCHED();
    return 0;
}

// The values of C = A B into C's pattern: spr_rows or spo_rows for AMG's shapes, the
// shared-memory row kernel otherwise; dfirst gets the first row with a product block outside C.
static int sp_numeric_values(const hk_bmat *A, const hk_bmat *B, hk_bmat *C,
                             unsigned long long *dfirst, int upper)
{
    spgemm_kernel kernel;
    HK_CALL(spgemm_kernel_read(&kernel)); // refused whatever the shape
    if (A->nbrows == 0) return 0;
    spn_args g;
    memset(&g, 0, sizeof g);
    g.arp = A->rowptr, g.aci = A->colind, g.av = A->val;
    g.brp = B->rowptr, g.bci = B->colind, g.bv = B->val;
    g.crp = C->rowptr, g.cci = C->colind, g.cv = C->val;
    g.br = A->br, g.bk = A->bc, g.bc = B->bc, g.nbr = A->nbrows, g.first = dfirst;
    g.upper = upper;
    int done = 0;
    HK_CALL(spo_launch(g, C->nnzb, kernel, &done));
    return done ? 0 : spn_launch(g, C->nnzb);
}

static int sp_spgemm_numeric(const hk_bmat *A, const hk_bmat *B, hk_bmat *C, int upper,
                             const char *who)
{
    int ierr = 0;
    unsigned long long *dfirst = NULL;
    int64_t first = -1;
    HK_CALL(hk_bmat_product_check(A, B, C, who));
    HK_CALL(hk_cu_setup_flag(&dfirst));
    HK_TRY(sp_numeric_values(A, B, C, dfirst, upper));
    HK_TRY(hk_cu_first_row_read(dfirst, &first));
    HK_TRY_CHECK(first < 0, HK_ERR_ARG,
                 "%s: block row %lld of A B has a block outside C's pattern; pass the pattern "
                 "that bmat_spgemm made for these A and B",
                 who, (long long)first);
fail:
    return ierr;
}

int hk_cu_bmat_spgemm_numeric(const hk_bmat *A, const hk_bmat *B, hk_bmat *C)
{
    return sp_spgemm_numeric(A, B, C, 0, "bmat_spgemm_numeric");
}

int hk_cu_bmat_spgemm_numeric_upper(const hk_bmat *A, const hk_bmat *B, hk_bmat *C)
{
    return sp_spgemm_numeric(A, B, C, 1, "bmat_spgemm_numeric_upper");
}

// ---- C = A B into a known pattern by a plan (the values-only re-set-up) ----------------------
//
// The re-set-up's products have fixed patterns, so the search that every numeric kernel above
// repeats (where does product block A_p B_q go in C's row?) and the order it must keep can be
// settled once: the plan lists, for each block c of C (upper: each block with column >= row),
// the (A block p, B block q) pairs that add into it, in the order of A's row (B's row holds
// each column once, so that is bmat_spgemm's order). spp_blocks then gives thread (c, r) row r
// of block c: its BC sums in registers over the list, each pair's product over m in order with
// __dmul_rn / __dadd_rn: bmat_spgemm's digits, with no shared memory, no synchronisation, no
// look-up and no long-row path (a row of any length is many independent blocks). The blocks
// are taken in an order sorted by list length, so that a warp's lanes run lists of like length
// (in plan order a warp's lanes were busy 0.42 of its steps on elasticity3d:30's A P, sorted
// 0.95). Memory: 8 bytes a pair (the product's multiply-adds / (BR BK BC)), 8 a block of C and
// 4 a block taken (the sorted order). Measured on an H200 (bracket, 2.52M DOFs, quadratic
// tets): A P 6.9 ms (10.3 in plan order, spr_rows 12.6), R (A P) 3.2 (4.4, spo_rows 11.5);
// their pairs take about 330 and 75 bytes per DOF.
// Making it: a warp per block row of A counts each pair into its block of C (position by a
// binary search in C's row), the counts are scanned into offsets, a second walk writes the
// pairs at atomic cursors (any order) and a thread per block of C sorts its list by p.

struct sp_plan {
    hk_spgemm_plan_shape sh;
    int64_t ntgt, npairs;
    int64_t *off; // cnnzb + 1: block c's pairs are pa/pb[off[c] .. off[c + 1])
    // the ntgt blocks of C the kernel takes (upper: those with column >= row; else all, ntgt =
    // cnnzb): sorted, each window of 256 by descending list length (ties in plan order), so that
    // a warp's blocks have lists of like length; unsorted (a plan made under pairs), in plan
    // order, NULL for every block in order
    int32_t *tgt;
    int sorted;
    int32_t *pa, *pb;
    size_t bytes;
};

#define PL_WARPS 8 // warps (block rows of A) per thread block

// WRITE 0: cnt[c] += the pairs of block c; 1: the pairs written at cursors cur[c]++.
template <bool WRITE>
__global__ void __launch_bounds__(PL_WARPS * 32)
    pl_walk(const int64_t *arp, const int32_t *aci, const int64_t *brp, const int32_t *bci,
            const int64_t *crp, const int32_t *cci, int64_t nbr, int upper, unsigned long long *cnt,
            int32_t *pa, int32_t *pb, unsigned long long *first)
{
    const int lane = threadIdx.x & 31;
    const int64_t i = (int64_t)blockIdx.x * PL_WARPS + (threadIdx.x >> 5);
    if (i >= nbr) return;
    const int64_t c0 = crp[i], c1 = crp[i + 1];
    for (int64_t p = arp[i] + lane; p < arp[i + 1]; p += 32) {
        const int64_t k = aci[p];
        for (int64_t q = brp[k]; q < brp[k + 1]; q++) {
            const int32_t j = bci[q];
            if (upper && j < i) continue;
            const int64_t c = hk_cu_lower_bound(cci, c0, c1, j);
            if (c >= c1 || cci[c] != j) {
                atomicMin(first, (unsigned long long)i);
                continue;
            }
            if (WRITE) {
                const unsigned long long s = atomicAdd(cnt + c, 1ull);
                pa[s] = (int32_t)p, pb[s] = (int32_t)q;
            } else {
                atomicAdd(cnt + c, 1ull);
            }
        }
    }
}

// Each block's list in the order of A's row (an insertion sort: a list is at most A's row).
__global__ void pl_sort(const int64_t *off, int64_t cnnzb, int32_t *pa, int32_t *pb)
{
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < cnnzb;
         c += (int64_t)gridDim.x * blockDim.x) {
        const int64_t e0 = off[c], e1 = off[c + 1];
        for (int64_t e = e0 + 1; e < e1; e++) {
            const int32_t a = pa[e], b = pb[e];
            int64_t f = e;
            for (; f > e0 && pa[f - 1] > a; f--)
                pa[f] = pa[f - 1], pb[f] = pb[f - 1];
            pa[f] = a, pb[f] = b;
        }
    }
}

// upper: cnt[i] = row i's blocks with column >= i; with WRITE (tstart their scanned offsets)
// their indices into tgt.
template <bool WRITE>
__global__ void pl_targets(const int64_t *crp, const int32_t *cci, int64_t nbr, int64_t *cnt,
                           const int64_t *tstart, int32_t *tgt)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nbr;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c1 = crp[i + 1], u = hk_cu_lower_bound(cci, crp[i], c1, i);
        if (!WRITE)
            cnt[i] = c1 - u;
        else
            for (int64_t c = u; c < c1; c++)
                tgt[tstart[i] + (c - u)] = (int32_t)c;
    }
}

static unsigned pl_grid(int64_t n, int threads)
{
    const int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

// The targets' sorted order: window blockIdx.x's 256 targets by descending pair count, ties in
// plan order (a rank sort in shared memory), into stgt; tgt NULL: every block of C in order.
// stgt may be tgt: a window's targets are all read before the barrier and written back into the
// same window after it (the past-the-end ones rank last, so the real ones stay below ntgt).
__global__ void __launch_bounds__(256)
    pl_order(const int64_t *off, const int32_t *tgt, int64_t ntgt, int32_t *stgt)
{
    __shared__ int cnt[256];
    const int x = threadIdx.x;
    const int64_t t = (int64_t)blockIdx.x * 256 + x;
    int32_t c = -1;
    int n = -1; // past the end: after every real block
    if (t < ntgt) {
        c = tgt ? tgt[t] : (int32_t)t;
        n = (int)(off[c + 1] - off[c]);
    }
    cnt[x] = n;
    __syncthreads();
    int rank = 0;
    for (int k = 0; k < 256; k++) {
        const int m = cnt[k];
        rank += m > n || (m == n && k < x);
    }
    if (t < ntgt) stgt[(int64_t)blockIdx.x * 256 + rank] = c;
}

// pl's targets in sorted order (pl_order): the upper list sorted in place, or every block's
// list made; one list either way.
static int pl_sort_targets(sp_plan *pl)
{
    pl->sorted = 1;
    if (pl->ntgt == 0) return 0;
    const int64_t nwin = (pl->ntgt + 255) / 256;
    HK_CHECK(nwin < (1LL << 31), HK_ERR_UNSUPPORTED,
             "bmat_spgemm_plan: %lld blocks of C are too many", (long long)pl->ntgt);
    int32_t *stgt = pl->tgt;
    if (!stgt) HK_CALL(hk_cu_malloc((void **)&stgt, (size_t)pl->ntgt * 4));
    pl_order<<<(unsigned)nwin, 256, 0, hk_cu.stream>>>(pl->off, pl->tgt, pl->ntgt, stgt);
    pl->tgt = stgt;
    HK_CU(cudaGetLastError());
    return 0;
}

static bool spp_shape(int br, int bk, int bc)
{
    return (br == 1 && bk == 1 && bc == 1) || (br == 2 && bk == 2 && bc == 3) ||
           (br == 3 && bk == 2 && bc == 3) || (br == 3 && bk == 3 && bc == 3) ||
           (br == 3 && bk == 3 && bc == 6) || (br == 6 && bk == 3 && bc == 6) ||
           (br == 6 && bk == 6 && bc == 6);
}

void hk_cu_bmat_spgemm_plan_free(void *plan)
{
    sp_plan *pl = (sp_plan *)plan;
    if (!pl) return;
    void *a[] = {pl->off, pl->tgt, pl->pa, pl->pb};
    for (size_t k = 0; k < sizeof a / sizeof a[0]; k++)
        if (a[k]) cudaFree(a[k]);
    free(pl);
}

int hk_cu_bmat_spgemm_plan(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C, int upper,
                           void **plan, size_t *bytes)
{
    int ierr = 0;
    sp_plan *pl = NULL;
    int64_t *cnt = NULL, *tstart = NULL, first = -1;
    unsigned long long *dfirst = NULL;
    spgemm_kernel kernel;
    *plan = NULL, *bytes = 0;
    HK_CALL(
        hk_bmat_product_check(A, B, C, upper ? "bmat_spgemm_plan (upper)" : "bmat_spgemm_plan"));
    HK_CALL(spgemm_kernel_read(&kernel)); // the targets' order: here
    if (kernel == SPGEMM_BY_SHAPE) kernel = SPGEMM_PLAN_DEFAULT;
    // no plan (the caller takes the numeric ops): other shapes, or indices past 32 bits
    if (!spp_shape(A->br, A->bc, B->bc) || A->nnzb >= INT32_MAX || B->nnzb >= INT32_MAX ||
        C->nnzb >= INT32_MAX)
        return 0;
    HK_CALL(hk_calloc(1, sizeof *pl, &pl));
    hk_spgemm_plan_shape_of(A, B, C, upper, &pl->sh);
    const int64_t nbr = A->nbrows, cn = C->nnzb;
    const int64_t big = (nbr > cn ? nbr : cn) + 1;
    HK_TRY(hk_cu_tmp_alloc((void **)&cnt, (size_t)big * sizeof *cnt));
    HK_TRY(hk_cu_malloc((void **)&pl->off, (size_t)(cn + 1) * sizeof *pl->off));
    pl->ntgt = cn;
    if (upper && nbr > 0) { // the blocks on and above the diagonal, listed
        pl_targets<false><<<pl_grid(nbr, 256), 256, 0, hk_cu.stream>>>(C->rowptr, C->colind, nbr,
                                                                       cnt, NULL, NULL);
        HK_CU_TRY(cudaGetLastError());
        HK_TRY(hk_cu_tmp_alloc((void **)&tstart, (size_t)(nbr + 1) * sizeof *tstart));
        HK_TRY(hk_cu_scan_counts(cnt, nbr, tstart, &pl->ntgt));
        HK_TRY(hk_cu_malloc((void **)&pl->tgt, (size_t)(pl->ntgt ? pl->ntgt : 1) * 4));
        pl_targets<true><<<pl_grid(nbr, 256), 256, 0, hk_cu.stream>>>(C->rowptr, C->colind, nbr,
                                                                      NULL, tstart, pl->tgt);
        HK_CU_TRY(cudaGetLastError());
    }
    if (nbr > 0) {
        const unsigned nblk = (unsigned)((nbr + PL_WARPS - 1) / PL_WARPS);
        HK_TRY_CHECK((nbr + PL_WARPS - 1) / PL_WARPS < (1LL << 31), HK_ERR_UNSUPPORTED,
                     "bmat_spgemm_plan: %lld block rows are too many", (long long)nbr);
        HK_TRY(hk_cu_setup_flag(&dfirst));
        HK_CU_TRY(cudaMemsetAsync(cnt, 0, (size_t)(cn + 1) * sizeof *cnt, hk_cu.stream));
        pl_walk<false><<<nblk, PL_WARPS * 32, 0, hk_cu.stream>>>(
            A->rowptr, A->colind, B->rowptr, B->colind, C->rowptr, C->colind, nbr, upper,
            (unsigned long long *)cnt, NULL, NULL, dfirst);
        HK_CU_TRY(cudaGetLastError());
        HK_TRY(hk_cu_first_row_read(dfirst, &first));
        HK_TRY_CHECK(first < 0, HK_ERR_ARG,
                     "bmat_spgemm_plan: block row %lld of A B has a block outside C's pattern; "
                     "pass the pattern that bmat_spgemm made for these A and B",
                     (long long)first);
        HK_TRY(hk_cu_scan_counts(cnt, cn, pl->off, &pl->npairs));
        HK_TRY(hk_cu_malloc((void **)&pl->pa, (size_t)(pl->npairs ? pl->npairs : 1) * 4));
        HK_TRY(hk_cu_malloc((void **)&pl->pb, (size_t)(pl->npairs ? pl->npairs : 1) * 4));
        HK_CU_TRY(cudaMemcpyAsync(cnt, pl->off, (size_t)cn * sizeof *cnt, cudaMemcpyDeviceToDevice,
                                  hk_cu.stream));
        pl_walk<true><<<nblk, PL_WARPS * 32, 0, hk_cu.stream>>>(
            A->rowptr, A->colind, B->rowptr, B->colind, C->rowptr, C->colind, nbr, upper,
            (unsigned long long *)cnt, pl->pa, pl->pb, dfirst);
        HK_CU_TRY(cudaGetLastError());
        if (cn > 0) {
            pl_sort<<<pl_grid(cn, 256), 256, 0, hk_cu.stream>>>(pl->off, cn, pl->pa, pl->pb);
            HK_CU_TRY(cudaGetLastError());
        }
    } else {
        HK_CU_TRY(cudaMemsetAsync(pl->off, 0, (size_t)(cn + 1) * sizeof *pl->off, hk_cu.stream));
    }
    // sorted unless made under pairs (row and stationary do not use the plan: the default's
    // order, so that it serves once the value is unset)
    if (kernel != SPGEMM_PAIRS) HK_TRY(pl_sort_targets(pl));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    pl->bytes = (size_t)(cn + 1) * sizeof(int64_t) + (size_t)(pl->tgt ? pl->ntgt : 0) * 4 +
                (size_t)pl->npairs * 8;
    *bytes = pl->bytes;
    *plan = pl;
    pl = NULL;
fail:
    hk_cu_tmp_free(cnt), hk_cu_tmp_free(tstart);
    hk_cu_bmat_spgemm_plan_free(pl);
    return ierr;
}

// Thread (t, r): row r of target t's block, its BC sums over the block's pairs in order. The
// BR threads of a target read the same B block (one transaction a warp), as 16-byte words where
// its size allows; the bound on registers (MINB blocks of 256 an SM: 85 registers for the 3x3 .
// 3x6 products' 27 loaded doubles and 6 sums, 128 for 6x6 . 6x6) keeps enough warps resident
// to overlap the gathers, which are all the kernel waits for. The targets are tgt's (sorted, or
// the plan's upper blocks in order under pairs) or every block of C in order (NULL).
// TA, TB: the operands' stored types; an fp32 value is widened exactly to fp64 as it is loaded,
// so the products and sums are those of the fp64 operands (bmat_spgemm_numeric_plan_f32). B's
// blocks lie SB values apart: fp32 blocks padded to a multiple of 4 floats are read as 16-byte
// words (the fine level's 3x6 block of P: 20 floats, five loads instead of nine of 16 bytes;
// measured on an H200, bracket's A P at 2.04M DOFs 4.25 -> 3.4-3.75 ms, 14.8M 32.85 -> 26.1).
template <int BR, int BK, int BC, int MINB, typename TA = double, typename TB = double,
          int SB = BK * BC>
__global__ void __launch_bounds__(256, MINB)
    spp_blocks(const int64_t *__restrict__ off, const int32_t *__restrict__ tgt,
               const int32_t *__restrict__ pa, const int32_t *__restrict__ pb,
               const TA *__restrict__ av, const TB *__restrict__ bv, double *cv, int64_t ntgt)
{
    const int64_t gt = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t t = gt / BR;
    if (t >= ntgt) return;
    const int r = (int)(gt - t * BR);
    const int64_t c = tgt ? (int64_t)tgt[t] : t;
    double acc[BC];
#pragma unroll
    for (int s = 0; s < BC; s++)
        acc[s] = 0.0;
    const int64_t e1 = off[c + 1];
    for (int64_t e = off[c]; e < e1; e++) {
        const TA *a = av + (size_t)pa[e] * (BR * BK) + r * BK;
        const TB *b = bv + (size_t)pb[e] * SB;
        double ar[BK], bm[BK * BC];
#pragma unroll
        for (int m = 0; m < BK; m++)
            ar[m] = (double)__ldg(a + m);
        if constexpr (sizeof(TB) == 4 && SB % 4 == 0) { // padded fp32 blocks: 16-byte words
#pragma unroll
            for (int x = 0; x < SB / 4; x++) {
                const float4 v = __ldg((const float4 *)b + x);
                if (4 * x < BK * BC) bm[4 * x] = (double)v.x;
                if (4 * x + 1 < BK * BC) bm[4 * x + 1] = (double)v.y;
                if (4 * x + 2 < BK * BC) bm[4 * x + 2] = (double)v.z;
                if (4 * x + 3 < BK * BC) bm[4 * x + 3] = (double)v.w;
            }
        } else if constexpr (sizeof(TB) == 8 && SB % 2 == 0) { // B blocks on 16 bytes
#pragma unroll
            for (int x = 0; x < BK * BC / 2; x++) {
                const double2 v = __ldg((const double2 *)b + x);
                bm[2 * x] = v.x, bm[2 * x + 1] = v.y;
            }
        } else {
#pragma unroll
            for (int x = 0; x < BK * BC; x++)
                bm[x] = (double)__ldg(b + x);
        }
#pragma unroll
        for (int s = 0; s < BC; s++)
#pragma unroll
            for (int m = 0; m < BK; m++)
                acc[s] = __dadd_rn(acc[s], __dmul_rn(ar[m], bm[m * BC + s]));
    }
    double *dst = cv + (size_t)c * (BR * BC) + r * BC;
#pragma unroll
    for (int s = 0; s < BC; s++)
        dst[s] = acc[s];
}

// HOOKE_SPGEMM's value as a sentence's subject ("unset" where it is).
static const char *spgemm_value(void)
{
    const char *v = getenv("HOOKE_SPGEMM");
    return v && *v ? v : "unset";
}

// The planned kernels' grid (BR threads a block of C; at least one block) once the plan's
// order is the one kernel asks for (a plan is sorted or not when it is made).
static int spp_grid(const sp_plan *pl, spgemm_kernel kernel, const char *op, dim3 *grid)
{
    HK_CHECK((kernel == SPGEMM_PAIRS_SORTED) == (pl->sorted != 0), HK_ERR_ARG,
             "HOOKE_SPGEMM=%s: this plan was made %s; set the value before the plans are made "
             "(the first update)",
             spgemm_value(),
             pl->sorted ? "with C's blocks sorted by list length (pairs-sorted, the default)"
                        : "with C's blocks in plan order (pairs)");
    const int64_t nblk = (pl->ntgt * pl->sh.br + 255) / 256;
    HK_CHECK(nblk < (1LL << 31), HK_ERR_UNSUPPORTED, "%s: %lld blocks of C are too many", op,
             (long long)pl->ntgt);
    *grid = dim3((unsigned)(nblk ? nblk : 1));
    return 0;
}

int hk_cu_bmat_spgemm_numeric_plan(const void *plan, const hk_bmat *A, const hk_bmat *B, hk_bmat *C)
{
    const sp_plan *pl = (const sp_plan *)plan;
    spgemm_kernel kernel;
    HK_CALL(spgemm_kernel_read(&kernel));
    HK_CALL(hk_spgemm_plan_check(pl ? &pl->sh : NULL, A, B, C));
    // the kernels without the plan: for comparison, or B's values not on 16 bytes (a view into
    // a larger array; spp_blocks reads them as 16-byte words)
    if (kernel == SPGEMM_ROW || kernel == SPGEMM_STATIONARY || ((uintptr_t)B->val & 15) != 0)
        return sp_spgemm_numeric(A, B, C, pl->sh.upper, "bmat_spgemm_numeric_plan");
    dim3 grid;
    if (kernel == SPGEMM_BY_SHAPE) kernel = SPGEMM_PLAN_DEFAULT;
    HK_CALL(spp_grid(pl, kernel, "bmat_spgemm_numeric_plan", &grid));
    if (pl->ntgt == 0) return 0;
#define SPP_SHAPE(R, K, CC)                                                                        \
    if (pl->sh.br == (R) && pl->sh.bk == (K) && pl->sh.bc == (CC))                                 \
    spp_blocks<R, K, CC, (K * CC <= 18 ? 3 : 2)><<<grid, 256, 0, hk_cu.stream>>>(                  \
        pl->off, pl->tgt, pl->pa, pl->pb, A->val, B->val, C->val, pl->ntgt)
    SPP_SHAPE(1, 1, 1);
    SPP_SHAPE(2, 2, 3);
    SPP_SHAPE(3, 2, 3);
    SPP_SHAPE(3, 3, 3);
    SPP_SHAPE(3, 3, 6);
    SPP_SHAPE(6, 3, 6);
    SPP_SHAPE(6, 6, 6);
#undef SPP_SHAPE
    HK_CU_LAUNCHED();
    return 0;
}

// The planned product with one operand in fp32 (pc=amg's update with fp32 levels): A P with P's
// padded fp32 copy (b32: blocks of BK*BC rounded up to 4 floats, as pc=amg keeps it) and
// R (A P) with R's fp32 values (a32, unpadded). Other operand shapes, strides or HOOKE_SPGEMM
// values without a planned kernel: HK_ERR_UNSUPPORTED, the caller passes fp64 values instead.
int hk_cu_bmat_spgemm_numeric_plan_f32(const void *plan, const hk_bmat *A, const float *a32,
                                       const hk_bmat *B, const float *b32, int b32_stride,
                                       hk_bmat *C)
{
    const sp_plan *pl = (const sp_plan *)plan;
    if (!a32 && !b32) return hk_cu_bmat_spgemm_numeric_plan(plan, A, B, C);
    spgemm_kernel kernel;
    HK_CALL(spgemm_kernel_read(&kernel));
    HK_CALL(hk_spgemm_plan_check(pl ? &pl->sh : NULL, A, B, C));
    const int br = pl->sh.br, bk = pl->sh.bk, bc = pl->sh.bc;
    HK_CHECK(!b32 || b32_stride >= bk * bc, HK_ERR_ARG,
             "bmat_spgemm_numeric_plan_f32: B's block stride %d is below its %d x %d blocks",
             b32_stride, bk, bc);
    const int pad = (bk * bc + 3) / 4 * 4;
    HK_CHECK(kernel != SPGEMM_ROW && kernel != SPGEMM_STATIONARY && !(a32 && b32) &&
                 (!b32 || (b32_stride == pad && ((uintptr_t)b32 & 15) == 0)) &&
                 (b32 || ((uintptr_t)B->val & 15) == 0),
             HK_ERR_UNSUPPORTED,
             "bmat_spgemm_numeric_plan_f32: no planned kernel for %d x %d . %d x %d blocks with "
             "%s in fp32 (block stride %d) under HOOKE_SPGEMM=%s",
             br, bk, bk, bc, a32 ? (b32 ? "A and B" : "A") : "B", b32 ? b32_stride : br * bk,
             spgemm_value());
    dim3 grid;
    if (kernel == SPGEMM_BY_SHAPE) kernel = SPGEMM_PLAN_DEFAULT;
    HK_CALL(spp_grid(pl, kernel, "bmat_spgemm_numeric_plan_f32", &grid));
    const int64_t nthr = pl->ntgt * br;
    bool done = false;
#define SPP_F32B(R, K, CC)                                                                         \
    if (!done && b32 && br == (R) && bk == (K) && bc == (CC)) {                                    \
        if (nthr)                                                                                  \
            spp_blocks<R, K, CC, (K * CC <= 18 ? 3 : 2), double, float, (K * CC + 3) / 4 * 4>      \
                <<<grid, 256, 0, hk_cu.stream>>>(pl->off, pl->tgt, pl->pa, pl->pb, A->val, b32,    \
                                                 C->val, pl->ntgt);                                \
        done = true;                                                                               \
    }
#define SPP_F32A(R, K, CC)                                                                         \
    if (!done && a32 && br == (R) && bk == (K) && bc == (CC)) {                                    \
        if (nthr)                                                                                  \
            spp_blocks<R, K, CC, (K * CC <= 18 ? 3 : 2), float, double>                            \
                <<<grid, 256, 0, hk_cu.stream>>>(pl->off, pl->tgt, pl->pa, pl->pb, a32, B->val,    \
                                                 C->val, pl->ntgt);                                \
        done = true;                                                                               \
    }
    // A P: 1x1 . 1x1, 2x2 . 2x3, 3x3 . 3x3 (2D's coarse levels), 3x3 . 3x6, 6x6 . 6x6
    SPP_F32B(1, 1, 1)
    SPP_F32B(2, 2, 3)
    SPP_F32B(3, 3, 3)
    SPP_F32B(3, 3, 6)
    SPP_F32B(6, 6, 6)
    // R (A P): 1x1 . 1x1, 3x2 . 2x3, 3x3 . 3x3, 6x3 . 3x6, 6x6 . 6x6
    SPP_F32A(1, 1, 1)
    SPP_F32A(3, 2, 3)
    SPP_F32A(3, 3, 3)
    SPP_F32A(6, 3, 6)
    SPP_F32A(6, 6, 6)
#undef SPP_F32A
#undef SPP_F32B
    HK_CHECK(done, HK_ERR_UNSUPPORTED,
             "bmat_spgemm_numeric_plan_f32: no planned kernel for %d x %d . %d x %d blocks with %s "
             "in fp32",
             br, bk, bk, bc, a32 ? "A" : "B");
    HK_CU_LAUNCHED();
    return 0;
}

// ---- the blocks below the diagonal from their mirrors ---------------------------------------
//
// A warp per block row I, 32 blocks at a time; lane per block (I, J) with J < I (the row's first
// blocks: columns are sorted) finds its mirror (J, I) by a binary search in row J, then the warp
// copies those blocks transposed with consecutive lanes on consecutive entries (a lane copying
// its own block entry by entry made 36 scattered loads and stores a lane: 0.9 ms for the
// bracket's first coarse level on an H200); the lane of the diagonal block copies its upper
// triangle onto its lower. The kernel writes only entries below the scalar diagonal and reads
// only entries above it: no order between lanes.

#define MR_WARPS 8 // warps (block rows) per thread block

__global__ void __launch_bounds__(MR_WARPS * 32)
    sp_mirror(const int64_t *rp, const int32_t *ci, double *v, int64_t nbr, int bs,
              unsigned long long *first)
{
    const unsigned full = 0xffffffffu;
    const int lane = threadIdx.x & 31;
    const int64_t i = (int64_t)blockIdx.x * MR_WARPS + (threadIdx.x >> 5);
    if (i >= nbr) return; // whole warps leave together
    const int bb = bs * bs;
    const int64_t q1 = rp[i + 1];
    for (int64_t base = rp[i]; base < q1; base += 32) { // warp-uniform
        // lane's block: its mirror's position (lower blocks), the diagonal's triangle copied
        const int64_t q = base + lane;
        int64_t m = -1;
        int lower = 0;
        if (q < q1) {
            const int32_t j = ci[q];
            if (j < i) {
                lower = 1;
                m = hk_find_block(rp, ci, j, i);
                if (m < 0) atomicMin(first, (unsigned long long)i);
            } else if (j == i) {
                double *d = v + (size_t)q * bb;
                for (int r = 1; r < bs; r++)
                    for (int c = 0; c < r; c++)
                        d[r * bs + c] = d[c * bs + r];
            }
        }
        // the window's lower blocks (the first ones: columns are sorted) copied by the whole
        // warp, consecutive lanes on consecutive entries of the lower block
        const int nlow = __popc(__ballot_sync(full, lower));
        for (int e0 = 0; e0 < nlow * bb; e0 += 32) { // warp-uniform
            const int e = e0 + lane, u = e < nlow * bb ? e / bb : nlow - 1;
            const int64_t mu = __shfl_sync(full, m, u);
            if (e < nlow * bb && mu >= 0) {
                const int x = e - u * bb, r = x / bs, c = x - r * bs;
                v[(size_t)(base + u) * bb + x] = v[(size_t)mu * bb + c * bs + r];
            }
        }
        if (nlow < 32) break; // the rest of the row is on or above the diagonal
    }
}

int hk_cu_bmat_mirror_lower(hk_bmat *C)
{
    unsigned long long *dfirst = NULL;
    int64_t first = -1;
    HK_CALL(hk_bmat_mirror_check(C));
    const int64_t nblk = (C->nbrows + MR_WARPS - 1) / MR_WARPS;
    if (nblk == 0) return 0;
    HK_CHECK(nblk < (1LL << 31), HK_ERR_UNSUPPORTED,
             "bmat_mirror_lower: %lld block rows are too many", (long long)C->nbrows);
    HK_CALL(hk_cu_setup_flag(&dfirst));
    sp_mirror<<<(unsigned)nblk, MR_WARPS * 32, 0, hk_cu.stream>>>(C->rowptr, C->colind, C->val,
                                                                  C->nbrows, C->br, dfirst);
    HK_CU_LAUNCHED();
    HK_CALL(hk_cu_first_row_read(dfirst, &first));
    return hk_bmat_mirror_fault(first);
}

// ---- blocks put transposed at given positions (bmat_put_transposed) -------------------------
//
// A thread per entry of the destination blocks, consecutive threads on consecutive entries of
// one destination block (its stores coalesced, the source block's loads within a few lines).

__global__ void sp_put_transposed(double *val, int bs, const int64_t *to, const double *src,
                                  int64_t ne)
{
    const int bb = bs * bs;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < ne;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t k = e / bb;
        const int x = (int)(e - k * bb), r = x / bs, c = x - r * bs;
        val[(size_t)to[k] * bb + x] = src[(size_t)k * bb + c * bs + r];
    }
}

int hk_cu_bmat_put_transposed(double *val, int bs, const int64_t *to, const double *src,
                              int64_t n)
{
    HK_CHECK(bs >= 1 && n >= 0, HK_ERR_ARG, "bmat_put_transposed: %d x %d blocks, %lld of them",
             bs, bs, (long long)n);
    if (n == 0) return 0;
    const int64_t ne = n * bs * bs;
    sp_put_transposed<<<hk_cu_grid(ne), HK_CU_BLOCK, 0, hk_cu.stream>>>(val, bs, to, src, ne);
    HK_CU_LAUNCHED();
    return 0;
}

// ---- C = A T for the tentative prolongator T (at most one block per block row) ---------------
//
// T's row k holds one block (column agg(k), the aggregate of node k) or none, so block p of A's
// row (column k) adds A_p T_k to exactly one block of C, the one in column agg(k): no hash table
// and no search of B's rows. tcol[k] = agg(k) (-1: T's row k is empty) is made once per product.
// Pattern: a warp per row of A marks the aggregates it meets for the first time (the earlier
// ones passed round by shuffles), counts them, and writes them out rank-sorted: bmat_spgemm's
// pattern. Values: lane (c, r) of the row's warp owns row r of C's block c (column j) and sums,
// over the blocks of A's row in order whose aggregate is j, row r of A_p times T_k, over m in
// order, with __dmul_rn / __dadd_rn: every entry's sum in bmat_spgemm's order, so its digits.
// The warp finds the lanes' blocks 32 at a time (tcol of 32 blocks of A's row, one load each,
// passed round by shuffles into each lane's bit mask), then every lane walks its own bits.

#define TP_WARPS 8 // warps (block rows) per thread block

// tcol[k] = the column of T's block in row k, -1 for an empty row; *first gets T's first row
// with more than one block.
__global__ void tp_columns(const int64_t *trp, const int32_t *tci, int64_t nbr, int32_t *tcol,
                           unsigned long long *first)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < nbr;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t n = trp[k + 1] - trp[k];
        tcol[k] = n > 0 ? tci[trp[k]] : -1;
        if (n > 1) atomicMin(first, (unsigned long long)k);
    }
}

// C's row i: the aggregates of A's row, each counted once (cnt[i]) or, with C's row pointers,
// written in order of first meeting into tmp[crp[i]...] and rank-sorted into cci.
template <bool WRITE>
__global__ void __launch_bounds__(TP_WARPS * 32)
    tp_pattern(const int64_t *arp, const int32_t *aci, const int32_t *tcol, int64_t nbr,
               int64_t *cnt, const int64_t *crp, int32_t *tmp, int32_t *cci)
{
    const int lane = threadIdx.x & 31;
    const int64_t i = (int64_t)blockIdx.x * TP_WARPS + (threadIdx.x >> 5);
    if (i >= nbr) return; // whole warps leave together
    const int64_t a0 = arp[i], a1 = arp[i + 1];
    int64_t n = 0;
    for (int64_t base = a0; base < a1; base += 32) { // warp-uniform
        const int64_t p = base + lane;
        const int32_t mine = p < a1 ? tcol[aci[p]] : -1;
        bool fresh = mine >= 0;
        for (int64_t e0 = a0; e0 < base; e0 += 32) { // the earlier, full groups of 32
            const int32_t o = tcol[aci[e0 + lane]];
            for (int s = 0; s < 32; s++)
                fresh &= __shfl_sync(0xffffffffu, o, s) != mine;
        }
        for (int s = 0; s < 32; s++) { // the earlier lanes of this group
            const int32_t o = __shfl_sync(0xffffffffu, mine, s);
            fresh &= !(s < lane && o == mine);
        }
        const unsigned b = __ballot_sync(0xffffffffu, fresh);
        if (WRITE && fresh) tmp[crp[i] + n + __popc(b & ((1u << lane) - 1u))] = mine;
        n += __popc(b);
    }
    if (!WRITE) {
        if (lane == 0) cnt[i] = n;
        return;
    }
    __syncwarp();
    const int64_t c0 = crp[i];
    for (int64_t t = lane; t < n; t += 32) {
        const int32_t key = tmp[c0 + t];
        int64_t rank = 0;
        for (int64_t u = 0; u < n; u++)
            rank += tmp[c0 + u] < key;
        cci[c0 + rank] = key;
    }
}

struct tp_args {
    const int64_t *arp, *trp, *crp;
    const int32_t *aci, *tcol, *cci;
    const double *av, *tv;
    double *cv;
    int br;
    int64_t nbr;
    unsigned long long *first; // first block row with a product block outside C's pattern
};

template <int BK, int BC> __global__ void __launch_bounds__(TP_WARPS * 32) tp_values(tp_args g)
{
    const int lane = threadIdx.x & 31;
    const int64_t i = (int64_t)blockIdx.x * TP_WARPS + (threadIdx.x >> 5);
    if (i >= g.nbr) return; // whole warps leave together
    const int br = g.br;
    const int64_t a0 = g.arp[i], a1 = g.arp[i + 1], c0 = g.crp[i], ntask = (g.crp[i + 1] - c0) * br;
    int64_t hits = 0, terms = 0;
    for (int64_t p = a0 + lane; p < a1; p += 32)
        terms += g.tcol[g.aci[p]] >= 0;
    for (int64_t t0 = 0; t0 < ntask; t0 += 32) { // warp-uniform
        const int64_t task = t0 + lane;
        const bool mine = task < ntask;
        const int64_t c = mine ? task / br : 0;
        const int r = mine ? (int)(task % br) : 0;
        const int32_t j = mine ? g.cci[c0 + c] : -2; // -2: no block's aggregate (they are >= -1)
        // a column's hits are counted once, by its row 0 lane (a repeated column: not again)
        const bool counts = mine && r == 0 && (c == 0 || g.cci[c0 + c - 1] < j);
        double acc[BC];
#pragma unroll
        for (int s = 0; s < BC; s++)
            acc[s] = 0.0;
        for (int64_t base = a0; base < a1; base += 32) { // warp-uniform
            const int64_t p = base + lane;
            const int32_t col = p < a1 ? g.tcol[g.aci[p]] : -1;
            unsigned bits = 0;
            for (int s = 0; s < 32; s++)
                bits |= (unsigned)(__shfl_sync(0xffffffffu, col, s) == j) << s;
            while (bits) { // this lane's blocks of the group, in order
                const int s = __ffs(bits) - 1;
                bits &= bits - 1;
                const int64_t q = base + s;
                const double *a = g.av + ((size_t)q * br + r) * BK;
                const double *b = g.tv + (size_t)g.trp[g.aci[q]] * BK * BC;
                hits += counts;
#pragma unroll
                for (int s2 = 0; s2 < BC; s2++)
#pragma unroll
                    for (int m = 0; m < BK; m++)
                        acc[s2] = __dadd_rn(acc[s2], __dmul_rn(a[m], b[m * BC + s2]));
            }
        }
        if (mine) {
            double *dst = g.cv + ((size_t)(c0 + c) * br + r) * BC;
#pragma unroll
            for (int s = 0; s < BC; s++)
                dst[s] = acc[s];
        }
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        hits += __shfl_xor_sync(0xffffffffu, hits, off);
        terms += __shfl_xor_sync(0xffffffffu, terms, off);
    }
    if (lane == 0 && hits != terms) atomicMin(g.first, (unsigned long long)i);
}

// The block shapes (A's columns x T's columns per block) tp_values is built for: AMG's.
static bool tp_shape(int bk, int bc)
{
    return (bk == 1 && bc == 1) || (bk == 2 && (bc == 2 || bc == 3)) ||
           (bk == 3 && (bc == 3 || bc == 6)) || (bk == 6 && bc == 6);
}

static int tp_values_launch(const hk_bmat *A, const hk_bmat *T, const int32_t *tcol, hk_bmat *C,
                            unsigned long long *dfirst)
{
    const int64_t nb = (A->nbrows + TP_WARPS - 1) / TP_WARPS;
    if (nb == 0) return 0;
    HK_CHECK(nb < (1LL << 31), HK_ERR_UNSUPPORTED,
             "amg_tentative_product: %lld block rows are too many", (long long)A->nbrows);
    tp_args g;
    memset(&g, 0, sizeof g);
    g.arp = A->rowptr, g.aci = A->colind, g.av = A->val;
    g.trp = T->rowptr, g.tcol = tcol, g.tv = T->val;
    g.crp = C->rowptr, g.cci = C->colind, g.cv = C->val;
    g.br = A->br, g.nbr = A->nbrows, g.first = dfirst;
    const int bk = A->bc, bc = T->bc;
    const unsigned grid = (unsigned)nb, threads = TP_WARPS * 32;
    if (bk == 1 && bc == 1) tp_values<1, 1><<<grid, threads, 0, hk_cu.stream>>>(g);
    if (bk == 2 && bc == 2) tp_values<2, 2><<<grid, threads, 0, hk_cu.stream>>>(g);
    if (bk == 2 && bc == 3) tp_values<2, 3><<<grid, threads, 0, hk_cu.stream>>>(g);
    if (bk == 3 && bc == 3) tp_values<3, 3><<<grid, threads, 0, hk_cu.stream>>>(g);
    if (bk == 3 && bc == 6) tp_values<3, 6><<<grid, threads, 0, hk_cu.stream>>>(g);
    if (bk == 6 && bc == 6) tp_values<6, 6><<<grid, threads, 0, hk_cu.stream>>>(g);
    HK_CU_LAUNCHED();
    return 0;
}

// tcol (a temporary of T->nbrows entries) for T, and T's rows checked: at most one block each.
static int tp_columns_of(const hk_bmat *T, const char *who, int32_t **tcol)
{
    int ierr = 0;
    unsigned long long *dfirst = NULL;
    int64_t first = -1;
    *tcol = NULL;
    HK_CALL(hk_cu_tmp_alloc((void **)tcol, (size_t)(T->nbrows ? T->nbrows : 1) * sizeof(int32_t)));
    HK_TRY(hk_cu_setup_flag(&dfirst));
    if (T->nbrows > 0) {
        tp_columns<<<hk_cu_grid(T->nbrows), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            T->rowptr, T->colind, T->nbrows, *tcol, dfirst);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_first_row_read(dfirst, &first));
    HK_TRY_CHECK(first < 0, HK_ERR_ARG,
                 "%s: block row %lld of T has more than one block; T must be a tentative "
                 "prolongator (one block per aggregated node; bmat_spgemm takes any B)",
                 who, (long long)first);
fail:
    if (ierr) {
        hk_cu_tmp_free(*tcol);
        *tcol = NULL;
    }
    return ierr;
}

int hk_cu_amg_tentative_product(const hk_bmat *A, const hk_bmat *T, hk_bmat *C)
{
    int ierr = 0;
    int32_t *tcol = NULL, *tmp = NULL;
    int64_t *cnt = NULL, *rp = NULL, nnzb = 0, first = -1;
    unsigned long long *dfirst = NULL;
    memset(C, 0, sizeof *C);
    HK_CALL(hk_bmat_chain_check(A, T, "T", "amg_tentative_product"));
    HK_CALL(tp_columns_of(T, "amg_tentative_product", &tcol));
    if (!tp_shape(A->bc, T->bc)) { // no kernel for this shape: the general product
        hk_cu_tmp_free(tcol);
        return hk_cu_bmat_spgemm(A, T, C);
    }
    const int64_t nbr = A->nbrows, nb = (nbr + TP_WARPS - 1) / TP_WARPS;
    HK_TRY_CHECK(nb < (1LL << 31), HK_ERR_UNSUPPORTED,
                 "amg_tentative_product: %lld block rows are too many", (long long)nbr);
    HK_TRY(hk_cu_tmp_alloc((void **)&cnt, (size_t)(nbr + 1) * sizeof(int64_t)));
    HK_TRY(hk_cu_tmp_alloc((void **)&rp, (size_t)(nbr + 1) * sizeof(int64_t)));
    if (nb > 0) {
        tp_pattern<false><<<(unsigned)nb, TP_WARPS * 32, 0, hk_cu.stream>>>(
            A->rowptr, A->colind, tcol, nbr, cnt, NULL, NULL, NULL);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_CU_TRY(cudaMemsetAsync(rp, 0, sizeof(int64_t), hk_cu.stream));
    HK_TRY(sp_scan(cnt, rp + 1, nbr, true));
    HK_CU_TRY(cudaMemcpyAsync(&nnzb, rp + nbr, sizeof nnzb, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    HK_TRY(hk_bmat_alloc(A->be, A->br, T->bc, nbr, T->nbcols, nnzb, C));
    HK_CU_TRY(cudaMemcpyAsync(C->rowptr, rp, (size_t)(nbr + 1) * sizeof(int64_t),
                              cudaMemcpyDeviceToDevice, hk_cu.stream));
    HK_TRY(hk_cu_tmp_alloc((void **)&tmp, (size_t)(nnzb ? nnzb : 1) * sizeof(int32_t)));
    if (nb > 0) {
        tp_pattern<true><<<(unsigned)nb, TP_WARPS * 32, 0, hk_cu.stream>>>(
            A->rowptr, A->colind, tcol, nbr, NULL, C->rowptr, tmp, C->colind);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_setup_flag(&dfirst));
    HK_TRY(tp_values_launch(A, T, tcol, C, dfirst));
    HK_TRY(hk_cu_first_row_read(dfirst, &first)); // none: C's pattern is the product's
fail:
    if (ierr) {
        cudaStreamSynchronize(hk_cu.stream);
        hk_bmat_free(C);
    }
    // in stream order: the next op's temporaries may reuse them
    hk_cu_tmp_free(tcol), hk_cu_tmp_free(tmp), hk_cu_tmp_free(cnt), hk_cu_tmp_free(rp);
    return ierr;
}

int hk_cu_amg_tentative_product_numeric(const hk_bmat *A, const hk_bmat *T, hk_bmat *C)
{
    int ierr = 0;
    int32_t *tcol = NULL;
    unsigned long long *dfirst = NULL;
    int64_t first = -1;
    HK_CALL(hk_bmat_product_check(A, T, C, "amg_tentative_product_numeric"));
    HK_CALL(tp_columns_of(T, "amg_tentative_product_numeric", &tcol));
    if (!tp_shape(A->bc, T->bc)) {
        hk_cu_tmp_free(tcol);
        return hk_cu_bmat_spgemm_numeric(A, T, C);
    }
    HK_TRY(hk_cu_setup_flag(&dfirst));
    HK_TRY(tp_values_launch(A, T, tcol, C, dfirst));
    HK_TRY(hk_cu_first_row_read(dfirst, &first));
    HK_TRY_CHECK(first < 0, HK_ERR_ARG,
                 "amg_tentative_product_numeric: block row %lld of A T has a block outside C's "
                 "pattern; pass the pattern that amg_tentative_product made for these A and T",
                 (long long)first);
fail:
    hk_cu_tmp_free(tcol);
    return ierr;
}

// ---- P = T - w Dinv (A T) --------------------------------------------------------------------

// The last row with rp[row] <= q (rp[0] = 0).
static __device__ int64_t sp_row_of(const int64_t *rp, int64_t nbr, int64_t q)
{
    return hk_cu_upper_bound(rp, 1, nbr, q) - 1;
}

// One thread per block of A T; column by column (an entry of P reads only its own column of
// the A T block), so pv may be atv (in place).
__global__ void sp_smooth(const int64_t *atrp, const int32_t *atci, const double *atv,
                          const int64_t *trp, const int32_t *tci, const double *tv,
                          const double *dinv, double w, int br, int bc, int64_t nbr, int64_t nnzb,
                          double *pv)
{
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < nnzb;
         q += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = sp_row_of(atrp, nbr, q);
        const int32_t j = atci[q];
        const int64_t t = hk_find_block(trp, tci, i, j);
        const double *tb = t >= 0 ? tv + (size_t)t * br * bc : NULL;
        const double *d = dinv + (size_t)i * br * br, *a = atv + (size_t)q * br * bc;
        double *p = pv + (size_t)q * br * bc;
        for (int c = 0; c < bc; c++) {
            double col[8];
            for (int m = 0; m < br; m++)
                col[m] = a[m * bc + c];
            for (int r = 0; r < br; r++) {
                double s = 0;
                for (int m = 0; m < br; m++)
                    s = __dadd_rn(s, __dmul_rn(d[r * br + m], col[m]));
                p[r * bc + c] = __dsub_rn(tb ? tb[r * bc + c] : 0.0, __dmul_rn(w, s));
            }
        }
    }
}

// First block row of T with a block outside A T's pattern (atomicMin on an integer).
__global__ void sp_subset(const int64_t *atrp, const int32_t *atci, const int64_t *trp,
                          const int32_t *tci, int64_t nbr, int64_t tnnzb,
                          unsigned long long *first)
{
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < tnnzb;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = sp_row_of(trp, nbr, t);
        if (hk_find_block(atrp, atci, i, tci[t]) < 0) atomicMin(first, (unsigned long long)i);
    }
}

// The shapes of amg_smooth_prolongator's arguments, and T's pattern inside A T's.
static int sp_smooth_check(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv)
{
    int ierr = 0;
    unsigned long long *dfirst = NULL;
    int64_t first = -1;
    const int br = AT->br, bc = AT->bc;
    HK_CHECK(T->br == br && T->bc == bc && T->nbrows == AT->nbrows && T->nbcols == AT->nbcols,
             HK_ERR_ARG,
             "amg_smooth_prolongator: T (%lld x %lld blocks of %d x %d) and A T (%lld x %lld "
             "blocks of %d x %d) differ in shape",
             (long long)T->nbrows, (long long)T->nbcols, T->br, T->bc, (long long)AT->nbrows,
             (long long)AT->nbcols, br, bc);
    HK_CHECK(Dinv->prec == HK_FP64 && Dinv->n == AT->nbrows * br * br, HK_ERR_ARG,
             "amg_smooth_prolongator: Dinv must be the fp64 BLOCK_INV output of bmat_diag "
             "(%lld entries; got %lld)",
             (long long)(AT->nbrows * br * br), (long long)Dinv->n);
    HK_CHECK(br <= 8 && bc <= 8, HK_ERR_UNSUPPORTED,
             "amg_smooth_prolongator: blocks of %d x %d exceed the supported 8 x 8", br, bc);
    HK_TRY(hk_cu_setup_flag(&dfirst));
    if (T->nnzb > 0) {
        sp_subset<<<hk_cu_grid(T->nnzb), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            AT->rowptr, AT->colind, T->rowptr, T->colind, AT->nbrows, T->nnzb, dfirst);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_first_row_read(dfirst, &first));
    HK_TRY_CHECK(first < 0, HK_ERR_ARG,
                 "amg_smooth_prolongator: block row %lld of T has a block outside the pattern "
                 "of A T; pass A T = A times this T (its pattern contains T's when A stores its "
                 "diagonal blocks)",
                 (long long)first);
fail:
    return ierr;
}

static int sp_smooth_values(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv, double w,
                            double *pv)
{
    if (AT->nnzb == 0) return 0;
    sp_smooth<<<hk_cu_grid(AT->nnzb), HK_CU_BLOCK, 0, hk_cu.stream>>>(
        AT->rowptr, AT->colind, AT->val, T->rowptr, T->colind, T->val,
        (const double *)Dinv->data, w, AT->br, AT->bc, AT->nbrows, AT->nnzb, pv);
    HK_CU_LAUNCHED();
    return 0;
}

int hk_cu_amg_smooth_prolongator(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv,
                                 double w, hk_bmat *P)
{
    int ierr = 0;
    memset(P, 0, sizeof *P);
    HK_CALL(sp_smooth_check(AT, T, Dinv));
    const int64_t nbr = AT->nbrows;
    HK_TRY(hk_bmat_alloc(AT->be, AT->br, AT->bc, nbr, AT->nbcols, AT->nnzb, P));
    HK_CU_TRY(cudaMemcpyAsync(P->rowptr, AT->rowptr, (size_t)(nbr + 1) * sizeof(int64_t),
                              cudaMemcpyDeviceToDevice, hk_cu.stream));
    if (AT->nnzb > 0)
        HK_CU_TRY(cudaMemcpyAsync(P->colind, AT->colind, (size_t)AT->nnzb * sizeof(int32_t),
                                  cudaMemcpyDeviceToDevice, hk_cu.stream));
    HK_TRY(sp_smooth_values(AT, T, Dinv, w, P->val));
fail:
    if (ierr) hk_bmat_free(P);
    cudaStreamSynchronize(hk_cu.stream);
    return ierr;
}

int hk_cu_amg_smooth_prolongator_numeric(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv,
                                         double w, hk_bmat *P)
{
    HK_CHECK(P->nbrows == AT->nbrows && P->nnzb == AT->nnzb && P->br == AT->br &&
                 P->bc == AT->bc,
             HK_ERR_ARG,
             "amg_smooth_prolongator_numeric: P must have the pattern of A T (%lld block rows, "
             "%lld blocks of %d x %d)",
             (long long)AT->nbrows, (long long)AT->nnzb, AT->br, AT->bc);
    HK_CALL(sp_smooth_check(AT, T, Dinv));
    return sp_smooth_values(AT, T, Dinv, w, P->val);
}

// ---- T = A^T into a kept pattern (the re-set-up's R = P^T) -----------------------------------

// One thread per block of T: its source is block (column, row) of A, found in A's row.
__global__ void sp_transpose_values(const int64_t *arp, const int32_t *aci, const double *av,
                                    const int64_t *trp, const int32_t *tci, int br, int bc,
                                    int64_t tnbr, int64_t tnnzb, double *tv,
                                    unsigned long long *first)
{
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < tnnzb;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t j = sp_row_of(trp, tnbr, t), i = tci[t];
        const int64_t q = hk_find_block(arp, aci, i, (int32_t)j);
        double *b = tv + (size_t)t * br * bc;
        if (q < 0) {
            atomicMin(first, (unsigned long long)j);
            continue;
        }
        const double *a = av + (size_t)q * br * bc;
        for (int r = 0; r < br; r++)
            for (int c = 0; c < bc; c++)
                b[c * br + r] = a[r * bc + c];
    }
}

int hk_cu_bmat_transpose_numeric(const hk_bmat *A, hk_bmat *T)
{
    int ierr = 0;
    unsigned long long *dfirst = NULL;
    int64_t first = -1;
    HK_CHECK(T->br == A->bc && T->bc == A->br && T->nbrows == A->nbcols &&
                 T->nbcols == A->nbrows && T->nnzb == A->nnzb,
             HK_ERR_ARG,
             "bmat_transpose_numeric: T (%lld x %lld blocks of %d x %d, %lld blocks) is not the "
             "transpose's shape of A (%lld x %lld blocks of %d x %d, %lld blocks)",
             (long long)T->nbrows, (long long)T->nbcols, T->br, T->bc, (long long)T->nnzb,
             (long long)A->nbrows, (long long)A->nbcols, A->br, A->bc, (long long)A->nnzb);
    HK_CALL(hk_cu_setup_flag(&dfirst));
    if (T->nnzb > 0) {
        sp_transpose_values<<<hk_cu_grid(T->nnzb), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            A->rowptr, A->colind, A->val, T->rowptr, T->colind, A->br, A->bc, T->nbrows, T->nnzb,
            T->val, dfirst);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_first_row_read(dfirst, &first));
    HK_TRY_CHECK(first < 0, HK_ERR_ARG,
                 "bmat_transpose_numeric: block row %lld of T has a block that A lacks; pass "
                 "the pattern bmat_transpose made for A",
                 (long long)first);
fail:
    return ierr;
}

// ---- dense inverse (tiled Cholesky kernels up to HK_CU_CHOL_MAX rows, cuSOLVER above) and gemv

static cusolverDnHandle_t sp_solver;

static int sp_solver_fail(cusolverStatus_t s, const char *what, int line)
{
    return hk_error_set(HK_ERR_DEVICE, __FILE__, line, "cuSOLVER: %s failed (status %d)", what,
                        (int)s);
}
#define SP_SOLVER_TRY(call)                                                                        \
    do {                                                                                           \
        cusolverStatus_t sp_s_ = (call);                                                           \
        if (sp_s_ != CUSOLVER_STATUS_SUCCESS) {                                                    \
            ierr = sp_solver_fail(sp_s_, #call, __LINE__);                                         \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

// The block rows scattered column-major into the zeroed a (n x n); zero[i] = scalar row i has
// no nonzero entry.
__global__ void sp_scatter(const int64_t *rp, const int32_t *ci, const double *v, int br, int bc,
                           int64_t nbr, int64_t n, double *a, int *zero)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nbr * br;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t bi = i / br;
        const int r = (int)(i % br);
        int nz = 0;
        for (int64_t q = rp[bi]; q < rp[bi + 1]; q++)
            for (int c = 0; c < bc; c++) {
                const double x = v[((size_t)q * br + r) * bc + c];
                a[((int64_t)ci[q] * bc + c) * n + i] = x;
                nz |= x != 0;
            }
        zero[i] = !nz;
    }
}

// Decoupled dofs: identity row and column. Also sets b = I when b is not NULL.
__global__ void sp_decouple(double *a, const int *zero, int64_t n, double *b)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n * n;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = e % n, k = e / n;
        if (zero[i] || zero[k]) a[e] = i == k ? 1.0 : 0.0;
        if (b) b[e] = i == k ? 1.0 : 0.0;
    }
}

// First column whose factor diagonal is not finite (NaN input propagates to it).
__global__ void sp_nonfinite(const double *a, int64_t n, unsigned long long *first)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        if (!isfinite(a[i * n + i])) atomicMin(first, (unsigned long long)i);
}

__global__ void sp_to_float(const double *x, float *y, int64_t n)
{
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (int64_t)gridDim.x * blockDim.x)
        y[e] = (float)x[e];
}

int hk_cu_dense_inverse(const hk_bmat *A, hk_vec *Minv, int64_t *bad)
{
    int ierr = 0;
    double *a = NULL, *b = NULL, *work = NULL;
    int *zero = NULL, *info = NULL;
    unsigned long long *dfirst = NULL;
    int64_t first = -1;
    int hinfo = 0, lwork = 0;
    *bad = -1;
    const int br = A->br, bc = A->bc;
    const int64_t n = A->nbrows * br;
    HK_CHECK(n == A->nbcols * bc, HK_ERR_ARG,
             "dense_inverse: the matrix is %lld x %lld scalars; it must be square",
             (long long)n, (long long)(A->nbcols * bc));
    HK_CHECK(n <= 46340, HK_ERR_UNSUPPORTED,
             "dense_inverse: %lld rows are too many for a dense coarse solve; lower the coarse "
             "size so the coarsest level stays small",
             (long long)n);
    HK_CHECK(Minv->n == n * n, HK_ERR_ARG,
             "dense_inverse: Minv must have n*n = %lld entries (got %lld)", (long long)(n * n),
             (long long)Minv->n);
    if (n == 0) return 0;
    const size_t nn = (size_t)n * n;
    if (!sp_solver && n > HK_CU_CHOL_MAX) {
        cusolverDnHandle_t h = NULL;
        cusolverStatus_t s = cusolverDnCreate(&h);
        if (s != CUSOLVER_STATUS_SUCCESS) return sp_solver_fail(s, "cusolverDnCreate", __LINE__);
        s = cusolverDnSetStream(h, hk_cu.stream);
        if (s != CUSOLVER_STATUS_SUCCESS) {
            cusolverDnDestroy(h);
            return sp_solver_fail(s, "cusolverDnSetStream", __LINE__);
        }
        sp_solver = h;
    }
    HK_TRY(hk_cu_tmp_alloc((void **)&a, nn * sizeof(double)));
    HK_TRY(hk_cu_tmp_alloc((void **)&zero, (size_t)n * sizeof(int)));
    HK_TRY(hk_cu_tmp_alloc((void **)&info, sizeof(int)));
    HK_TRY(hk_cu_setup_flag(&dfirst));
    if (Minv->prec == HK_FP64)
        b = (double *)Minv->data;
    else
        HK_TRY(hk_cu_tmp_alloc((void **)&b, nn * sizeof(double)));
    HK_CU_TRY(cudaMemsetAsync(a, 0, nn * sizeof(double), hk_cu.stream));
    sp_scatter<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(A->rowptr, A->colind, A->val, br,
                                                                 bc, A->nbrows, n, a, zero);
    HK_CU_TRY(cudaGetLastError());
    sp_decouple<<<hk_cu_grid((int64_t)nn), HK_CU_BLOCK, 0, hk_cu.stream>>>(a, zero, n, b);
    HK_CU_TRY(cudaGetLastError());
    if (n <= HK_CU_CHOL_MAX) { // the coarse sizes of AMG: own kernels, no cuSOLVER start-up
        HK_TRY(hk_cu_chol_inverse(a, n, b, dfirst));
        HK_TRY(hk_cu_first_row_read(dfirst, &first));
    } else {
        SP_SOLVER_TRY(cusolverDnDpotrf_bufferSize(sp_solver, CUBLAS_FILL_MODE_LOWER, (int)n, a,
                                                  (int)n, &lwork));
        HK_TRY(hk_cu_tmp_alloc((void **)&work, (size_t)(lwork > 0 ? lwork : 1) * sizeof(double)));
        SP_SOLVER_TRY(cusolverDnDpotrf(sp_solver, CUBLAS_FILL_MODE_LOWER, (int)n, a, (int)n, work,
                                       lwork, info));
        sp_nonfinite<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(a, n, dfirst);
        HK_CU_TRY(cudaGetLastError());
        HK_CU_TRY(cudaMemcpyAsync(&hinfo, info, sizeof hinfo, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_TRY(hk_cu_first_row_read(dfirst, &first)); /* waits: hinfo is read too */
        if (hinfo > 0 && (first < 0 || hinfo - 1 < first)) first = hinfo - 1;
    }
    if (first >= 0) { // not positive definite: Minv = 0
        *bad = first;
        HK_CU_TRY(cudaMemsetAsync(Minv->data, 0,
                                  nn * (Minv->prec == HK_FP64 ? sizeof(double) : sizeof(float)),
                                  hk_cu.stream));
        goto fail;
    }
    if (n > HK_CU_CHOL_MAX)
        SP_SOLVER_TRY(cusolverDnDpotrs(sp_solver, CUBLAS_FILL_MODE_LOWER, (int)n, (int)n, a,
                                       (int)n, b, (int)n, info));
    if (Minv->prec != HK_FP64) {
        sp_to_float<<<hk_cu_grid((int64_t)nn), HK_CU_BLOCK, 0, hk_cu.stream>>>(b, (float *)Minv->data,
                                                                               (int64_t)nn);
        HK_CU_TRY(cudaGetLastError());
    }
fail:
    cudaStreamSynchronize(hk_cu.stream);
    hk_cu_tmp_free(a), hk_cu_tmp_free(zero), hk_cu_tmp_free(info), hk_cu_tmp_free(work);
    if (b && b != Minv->data) hk_cu_tmp_free(b);
    return ierr;
}

// y = M x: a block of 256 threads owns 32 rows; thread (row, g) sums the columns j = g mod 8 of
// its row (consecutive rows: coalesced), then the 8 partial sums in order. Sums in double.
#define GV_ROWS 32
#define GV_GROUPS 8
template <typename T>
__global__ void __launch_bounds__(GV_ROWS *GV_GROUPS) sp_gemv(const T *M, const T *x, T *y,
                                                              int64_t n)
{
    __shared__ double part[GV_GROUPS][GV_ROWS];
    const int r = threadIdx.x % GV_ROWS, gq = threadIdx.x / GV_ROWS;
    const int64_t i = (int64_t)blockIdx.x * GV_ROWS + r;
    double s = 0;
    if (i < n)
        for (int64_t j = gq; j < n; j += GV_GROUPS) s += (double)M[j * n + i] * (double)x[j];
    part[gq][r] = s;
    __syncthreads();
    if (gq == 0 && i < n) {
        double t = 0;
        for (int k = 0; k < GV_GROUPS; k++) t += part[k][r];
        y[i] = (T)t;
    }
}

int hk_cu_dense_gemv(const hk_vec *M, const hk_vec *x, hk_vec *y)
{
    const int64_t n = x->n;
    HK_CHECK(M->prec == x->prec && x->prec == y->prec && y->n == n && M->n == n * n, HK_ERR_ARG,
             "dense_gemv: M must be n x n (%lld entries) and M, x, y of one precision (got "
             "%lld entries, x %lld, y %lld)",
             (long long)(n * n), (long long)M->n, (long long)n, (long long)y->n);
    if (n == 0) return 0;
    const unsigned nb = (unsigned)((n + GV_ROWS - 1) / GV_ROWS);
    if (M->prec == HK_FP64)
        sp_gemv<double><<<nb, GV_ROWS * GV_GROUPS, 0, hk_cu.stream>>>(
            (const double *)M->data, (const double *)x->data, (double *)y->data, n);
    else
        sp_gemv<float><<<nb, GV_ROWS * GV_GROUPS, 0, hk_cu.stream>>>(
            (const float *)M->data, (const float *)x->data, (float *)y->data, n);
    HK_CU_LAUNCHED();
    return 0;
}

// ---- benchmark: this spgemm against cuSPARSE SpGEMM -------------------------------------------

static double sp_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct sp_cus {
    int *rp, *ci, *crp, *cci;
    double *v, *cv;
    void *b1, *b2;
    cusparseSpMatDescr_t A, C;
    cusparseSpGEMMDescr_t d;
};

static void sp_cus_free_c(sp_cus *s)
{
    if (s->d) cusparseSpGEMM_destroyDescr(s->d);
    if (s->C) cusparseDestroySpMat(s->C);
    cudaFree(s->crp), cudaFree(s->cci), cudaFree(s->cv), cudaFree(s->b1), cudaFree(s->b2);
    s->d = NULL, s->C = NULL, s->crp = s->cci = NULL, s->cv = NULL, s->b1 = s->b2 = NULL;
}

// C = A A with cuSPARSE (work estimation, compute, copy), buffers and C allocated inside.
static int sp_cus_run(sp_cus *s, int n, long long *nnzc)
{
    int ierr = 0;
    const double one = 1, zero = 0;
    size_t s1 = 0, s2 = 0;
    int64_t r, c, nz;
    const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
    HK_CU_SPARSE_TRY(cusparseCreateCsr(&s->C, n, n, 0, NULL, NULL, NULL, CUSPARSE_INDEX_32I,
                                       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    HK_CU_SPARSE_TRY(cusparseSpGEMM_createDescr(&s->d));
    HK_CU_SPARSE_TRY(cusparseSpGEMM_workEstimation(hk_cu.sp, op, op, &one, s->A, s->A, &zero, s->C,
                                                   CUDA_R_64F, CUSPARSE_SPGEMM_DEFAULT, s->d, &s1,
                                                   NULL));
    HK_TRY(hk_cu_malloc(&s->b1, s1));
    HK_CU_SPARSE_TRY(cusparseSpGEMM_workEstimation(hk_cu.sp, op, op, &one, s->A, s->A, &zero, s->C,
                                                   CUDA_R_64F, CUSPARSE_SPGEMM_DEFAULT, s->d, &s1,
                                                   s->b1));
    HK_CU_SPARSE_TRY(cusparseSpGEMM_compute(hk_cu.sp, op, op, &one, s->A, s->A, &zero, s->C,
                                            CUDA_R_64F, CUSPARSE_SPGEMM_DEFAULT, s->d, &s2, NULL));
    HK_TRY(hk_cu_malloc(&s->b2, s2));
    HK_CU_SPARSE_TRY(cusparseSpGEMM_compute(hk_cu.sp, op, op, &one, s->A, s->A, &zero, s->C,
                                            CUDA_R_64F, CUSPARSE_SPGEMM_DEFAULT, s->d, &s2, s->b2));
    HK_CU_SPARSE_TRY(cusparseSpMatGetSize(s->C, &r, &c, &nz));
    HK_TRY(hk_cu_malloc((void **)&s->crp, (size_t)(n + 1) * sizeof(int)));
    HK_TRY(hk_cu_malloc((void **)&s->cci, (size_t)nz * sizeof(int)));
    HK_TRY(hk_cu_malloc((void **)&s->cv, (size_t)nz * sizeof(double)));
    HK_CU_SPARSE_TRY(cusparseCsrSetPointers(s->C, s->crp, s->cci, s->cv));
    HK_CU_SPARSE_TRY(cusparseSpGEMM_copy(hk_cu.sp, op, op, &one, s->A, s->A, &zero, s->C, CUDA_R_64F,
                                         CUSPARSE_SPGEMM_DEFAULT, s->d));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    *nnzc = nz;
fail:
    return ierr;
}

extern "C" int hk_cuda_bench_spgemm(const hk_bcsr *K, int reps, hk_cuda_spgemm_timing *t)
{
    int ierr = 0;
    hk_bmat A = {0}, C = {0};
    sp_cus s;
    memset(&s, 0, sizeof s);
    memset(t, 0, sizeof *t);
    int *rp = NULL, *ci = NULL;
    double *v = NULL, ms[16];
    if (reps < 1) reps = 1;
    if (reps > 16) reps = 16;
    const int bs = K->bs;
    const int64_t n = K->nbrows * bs, nnzb = K->rowptr[K->nbrows], nnz = nnzb * bs * bs;
    HK_CHECK(n < INT32_MAX && nnz < INT32_MAX, HK_ERR_UNSUPPORTED,
             "spgemm benchmark: %lld nonzeros exceed 32-bit cuSPARSE indices", (long long)nnz);
    HK_CALL(hk_cu_init());
    HK_TRY(hk_bmat_upload(&hk_backend_cuda, K, &A));
    // ours: the whole op (allocation of C included), median of reps
    for (int r = 0; r < reps; r++) {
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        const double t0 = sp_now_ms();
        HK_TRY(hk_cu_bmat_spgemm(&A, &A, &C));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        ms[r] = sp_now_ms() - t0;
        t->nnz_hooke = C.nnzb * C.br * C.bc;
        hk_bmat_free(&C);
    }
    qsort(ms, (size_t)reps, sizeof ms[0], cmp_double);
    t->ms_hooke = ms[reps / 2];
    // cuSPARSE on the expanded scalar CSR (all bs*bs entries of every block kept)
    rp = (int *)malloc((size_t)(n + 1) * sizeof(int));
    ci = (int *)malloc((size_t)(nnz ? nnz : 1) * sizeof(int));
    v = (double *)malloc((size_t)(nnz ? nnz : 1) * sizeof(double));
    HK_TRY_CHECK(rp && ci && v, HK_ERR_MEMORY, "spgemm benchmark: out of host memory");
    {
        int64_t k = 0;
        rp[0] = 0;
        for (int64_t bi = 0; bi < K->nbrows; bi++)
            for (int r = 0; r < bs; r++) {
                for (int64_t q = K->rowptr[bi]; q < K->rowptr[bi + 1]; q++)
                    for (int c = 0; c < bs; c++) {
                        ci[k] = K->colind[q] * bs + c;
                        v[k++] = K->val[(q * bs + r) * bs + c];
                    }
                rp[bi * bs + r + 1] = (int)k;
            }
    }
    HK_TRY(hk_cu_malloc((void **)&s.rp, (size_t)(n + 1) * sizeof(int)));
    HK_TRY(hk_cu_malloc((void **)&s.ci, (size_t)(nnz ? nnz : 1) * sizeof(int)));
    HK_TRY(hk_cu_malloc((void **)&s.v, (size_t)(nnz ? nnz : 1) * sizeof(double)));
    HK_CU_TRY(cudaMemcpy(s.rp, rp, (size_t)(n + 1) * sizeof(int), cudaMemcpyHostToDevice));
    HK_CU_TRY(cudaMemcpy(s.ci, ci, (size_t)nnz * sizeof(int), cudaMemcpyHostToDevice));
    HK_CU_TRY(cudaMemcpy(s.v, v, (size_t)nnz * sizeof(double), cudaMemcpyHostToDevice));
    HK_CU_SPARSE_TRY(cusparseCreateCsr(&s.A, n, n, nnz, s.rp, s.ci, s.v, CUSPARSE_INDEX_32I,
                                       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    for (int r = 0; r < reps; r++) {
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        const double t0 = sp_now_ms();
        HK_TRY(sp_cus_run(&s, (int)n, &t->nnz_cusparse));
        ms[r] = sp_now_ms() - t0;
        sp_cus_free_c(&s);
    }
    qsort(ms, (size_t)reps, sizeof ms[0], cmp_double);
    t->ms_cusparse = ms[reps / 2];
    t->rows = n;
fail:
    sp_cus_free_c(&s);
    if (s.A) cusparseDestroySpMat(s.A);
    cudaFree(s.rp), cudaFree(s.ci), cudaFree(s.v);
    free(rp), free(ci), free(v);
    hk_bmat_free(&A), hk_bmat_free(&C);
    return ierr;
}

// Loaded by hk_cu_init (cuda_impl.cuh: hk_cu_preloads): this file's kernels of the AMG set-up
// and the solve, for 2D and 3D elasticity.
// cub's kernels of this file (cuda_impl.cuh: hk_cu_warm): sp_scan's inclusive and exclusive
// sums, with the template arguments of its calls.
static void sparse_warm_cub(void)
{
    const int64_t N = HK_CU_WARM_LARGE;
    char *w = (char *)hk_cu_warm_buffer((size_t)N * 16);
    if (!w) return;
    const int64_t *in = (const int64_t *)w;
    int64_t *out = (int64_t *)w + N;
    const int64_t sizes[2] = {HK_CU_WARM_SMALL, N};
    for (int k = 0; k < 2; k++) {
        const int64_t n = sizes[k];
        hk_cu_warm([&](void *t, size_t &tb) {
            return cub::DeviceScan::InclusiveSum(t, tb, in, out, n, hk_cu.stream);
        });
        hk_cu_warm([&](void *t, size_t &tb) {
            return cub::DeviceScan::ExclusiveSum(t, tb, in, out, n, hk_cu.stream);
        });
    }
    hk_cu_warm_free(w);
}

void hk_cu_sparse_preload(void)
{
    static const void *const k[] = {
        (const void *)sp_rows<true>,
        (const void *)sp_rows<false>,
        (const void *)sp_bound,
        (const void *)spo_rows<6, 3, 6, 32, false>,
        (const void *)spo_rows<6, 6, 6, 32, false>,
        (const void *)spo_rows<3, 2, 3, 32, false>,
        (const void *)spo_rows<3, 3, 3, 32, false>,
        (const void *)spo_rows<6, 3, 6, 32, true>,
        (const void *)spo_rows<6, 6, 6, 32, true>,
        (const void *)spo_rows<3, 2, 3, 32, true>,
        (const void *)spo_rows<3, 3, 3, 32, true>,
        (const void *)spr_rows<3, 3, 6, false>,
        (const void *)spr_rows<6, 6, 6, false>,
        (const void *)spr_rows<2, 2, 3, false>,
        (const void *)spr_rows<3, 3, 3, false>,
        (const void *)spr_rows<6, 6, 6, true>,
        (const void *)spr_rows<3, 3, 3, true>,
        (const void *)spr_rows<3, 2, 3, true>,
        (const void *)sp_mirror,
        (const void *)tp_columns,
        (const void *)tp_pattern<false>,
        (const void *)tp_pattern<true>,
        (const void *)tp_values<3, 6>,
        (const void *)tp_values<6, 6>,
        (const void *)tp_values<2, 3>,
        (const void *)tp_values<3, 3>,
        (const void *)sp_smooth,
        (const void *)sp_subset,
        (const void *)sp_transpose_values,
        (const void *)sp_scatter,
        (const void *)sp_decouple,
        (const void *)sp_nonfinite,
        (const void *)sp_to_float,
        (const void *)sp_gemv<float>,
        (const void *)sp_gemv<double>};
    hk_cu_preload(k, (int)(sizeof k / sizeof *k));
    sparse_warm_cub();
}
