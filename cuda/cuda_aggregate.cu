// The aggregation ops of smoothed-aggregation AMG on the device: strength graph of the node
// blocks, distance-2 maximal-independent-set aggregation, tentative prolongator by a QR per
// aggregate. The rules are in docs/amg-aggregation.md; solver/cpu/cpu_aggregate.c is the
// reference, and every floating-point step here is the same operation in the same order with
// explicit rounding (__dmul_rn, __dadd_rn, __dsqrt_rn: no contraction into fused multiply-add),
// so both backends give the same bits. Every round reads only the previous round's arrays;
// the only atomics count integers.
#include <cub/cub.cuh>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.cuh"

extern "C" const hk_backend_ops hk_backend_cuda; /* outputs are allocated on this backend */

/* Wait for the stream and copy bytes from the device to the host. */
static int agg_read(void *host, const void *dev, size_t bytes)
{
    HK_CU(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    return 0;
}

/* Inclusive prefix sum of n int64 values in place-free form (in -> out) with cub. */
static int agg_scan(const int64_t *in, int64_t *out, int64_t n)
{
    if (n <= 0) return 0;
    void *tmp = NULL;
    size_t bytes = 0;
    HK_CU(cub::DeviceScan::InclusiveSum(NULL, bytes, in, out, (int)n, hk_cu.stream));
    HK_CALL(hk_cu_tmp_alloc(&tmp, bytes ? bytes : 8));
    cudaError_t e = cub::DeviceScan::InclusiveSum(tmp, bytes, in, out, (int)n, hk_cu.stream);
    hk_cu_tmp_free(tmp);
    if (e != cudaSuccess) return hk_cu_fail(e, "cub::DeviceScan::InclusiveSum", __FILE__, __LINE__);
    return 0;
}

/* ---- strength -------------------------------------------------------------------------- */

/* Frobenius norm, transpose-symmetric order (as block_norm in cpu_aggregate.c). */
__device__ static double agg_block_norm(const double *a, int b)
{
    double s = 0;
    for (int r = 0; r < b; r++)
        s = __dadd_rn(s, __dmul_rn(a[r * b + r], a[r * b + r]));
    for (int r = 0; r < b; r++)
        for (int c = r + 1; c < b; c++) {
            const double x = __dmul_rn(a[r * b + c], a[r * b + c]);
            const double y = __dmul_rn(a[c * b + r], a[c * b + r]);
            s = __dadd_rn(s, __dadd_rn(x, y));
        }
    return __dsqrt_rn(s);
}

struct agg_mat {
    int b;
    int64_t n;
    const int64_t *rowptr;
    const int32_t *colind;
    const double *val;
};

__global__ static void k_strength_diag(agg_mat A, double *dnorm, char *iso)
{
    const int b = A.b;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < A.n;
         i += (int64_t)gridDim.x * blockDim.x) {
        double d = 0;
        int is = 1;
        for (int64_t p = A.rowptr[i]; p < A.rowptr[i + 1]; p++) {
            const double *v = A.val + (size_t)p * b * b;
            if (A.colind[p] == i)
                d = agg_block_norm(v, b);
            else if (A.colind[p] < A.n) /* columns from nbrows on are not the graph's */
                for (int e = 0; e < b * b && is; e++)
                    if (v[e] != 0) is = 0;
        }
        dnorm[i] = d;
        iso[i] = (char)is;
    }
}

/* Strength flag of each stored block (i, j): SF_NONE when j = i, either node is isolated or
 * ||A_ij|| is NaN (never strong: the CPU's max(||A_ij||, ||A_ji||) is then NaN or ignores
 * ||A_ji||); SF_ABOVE when ||A_ij|| > theta sqrt(d_i d_j), SF_BELOW otherwise. The threshold
 * is the same bits from either side (d_i d_j commutes), so (i, j) is strong exactly when its
 * flag is ABOVE, or BELOW and the flag of (j, i) is ABOVE: max(x, y) > t is x > t or y > t
 * for numbers that are not NaN. */
enum { SF_NONE = 0, SF_BELOW = 1, SF_ABOVE = 2 };

#define AGG_WARP_FOR(i, n)                                                                         \
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; i < (n);               \
         i += ((int64_t)gridDim.x * blockDim.x) >> 5)

/* A warp per block row, a lane per block: every value of A is read once, and the norms of a
 * warp's 32 consecutive blocks share their cache lines. */
__global__ static void k_strength_flags(agg_mat A, const double *dnorm, const char *iso,
                                        double theta, unsigned char *flag)
{
    const int b = A.b, lane = threadIdx.x & 31;
    AGG_WARP_FOR(i, A.n)
    {
        const int64_t end = A.rowptr[i + 1];
        const double di = dnorm[i];
        const char isoi = iso[i];
        for (int64_t p = A.rowptr[i] + lane; p < end; p += 32) {
            const int64_t j = A.colind[p];
            unsigned char f = SF_NONE;
            if (j != i && j < A.n && !isoi && !iso[j]) {
                const double nij = agg_block_norm(A.val + (size_t)p * b * b, b);
                const double thr = __dmul_rn(theta, __dsqrt_rn(__dmul_rn(di, dnorm[j])));
                if (!isnan(nij)) f = nij > thr ? SF_ABOVE : SF_BELOW;
            }
            flag[p] = f;
        }
    }
}

/* A warp per block row: the strong columns in order, compacted by ballot into the row's own
 * span of buf (A's row pointers: a bound on the row's length); cnt[i] = their number. Only a
 * block below the threshold looks up its transpose. */
__global__ static void k_strength_pick(agg_mat A, const unsigned char *flag, int32_t *buf,
                                       int64_t *cnt)
{
    const int lane = threadIdx.x & 31;
    AGG_WARP_FOR(i, A.n)
    {
        const int64_t beg = A.rowptr[i], end = A.rowptr[i + 1];
        int64_t k = beg;
        for (int64_t p0 = beg; p0 < end; p0 += 32) {
            const int64_t p = p0 + lane;
            int32_t j = -1;
            bool strong = false;
            if (p < end) {
                j = A.colind[p];
                const unsigned char f = flag[p];
                if (f == SF_ABOVE) {
                    strong = true;
                } else if (f == SF_BELOW) {
                    const int64_t q = hk_find_block(A.rowptr, A.colind, j, i);
                    strong = q >= 0 && flag[q] == SF_ABOVE;
                }
            }
            const unsigned m = __ballot_sync(0xffffffffu, strong);
            if (strong) buf[k + __popc(m & ((1u << lane) - 1u))] = j;
            k += __popc(m);
        }
        if (lane == 0) cnt[i] = k - beg;
    }
}

/* A warp per row: the picked columns from buf into S. */
__global__ static void k_strength_copy(agg_mat A, const int32_t *buf, const int64_t *rowptr,
                                       int32_t *colind)
{
    const int lane = threadIdx.x & 31;
    AGG_WARP_FOR(i, A.n)
    {
        const int64_t src = A.rowptr[i], dst = rowptr[i], len = rowptr[i + 1] - dst;
        for (int64_t k = lane; k < len; k += 32)
            colind[dst + k] = buf[src + k];
    }
}

extern "C" int hk_cu_amg_strength(const hk_bmat *A, double theta, hk_graph *S)
{
    int ierr = 0;
    memset(S, 0, sizeof *S);
    HK_CHECK(A->br == A->bc && A->br >= 1 && A->nbcols >= A->nbrows, HK_ERR_ARG,
             "amg_strength: the matrix must have square blocks and at least as many block "
             "columns as rows (got %lld x %lld block rows and columns of %d x %d blocks)",
             (long long)A->nbrows, (long long)A->nbcols, A->br, A->bc);
    HK_CHECK(theta >= 0 && isfinite(theta), HK_ERR_ARG,
             "amg_strength: threshold %g must be a finite number >= 0 (pc.amg.threshold)", theta);
    HK_CHECK(A->nbrows < INT32_MAX, HK_ERR_ARG,
             "amg_strength: %lld block rows; the device version takes fewer than 2^31",
             (long long)A->nbrows);
    const int64_t n = A->nbrows, nnzb = A->nnzb;
    const agg_mat M = {A->br, n, A->rowptr, A->colind, A->val};
    const unsigned wgrid = hk_cu_grid(32 * n);
    double *dnorm = NULL;
    char *iso = NULL;
    unsigned char *flag = NULL;
    int32_t *buf = NULL;
    int64_t *cnt = NULL, nnz = 0; /* cnt: n counts then n+1 prefix sums */
    HK_CALL(hk_cu_init());
    HK_TRY(hk_cu_tmp_alloc((void **)&dnorm, (size_t)(n ? n : 1) * sizeof *dnorm));
    HK_TRY(hk_cu_tmp_alloc((void **)&iso, (size_t)(n ? n : 1)));
    HK_TRY(hk_cu_tmp_alloc((void **)&flag, (size_t)(nnzb ? nnzb : 1)));
    HK_TRY(hk_cu_tmp_alloc((void **)&buf, (size_t)(nnzb ? nnzb : 1) * sizeof *buf));
    HK_TRY(hk_cu_tmp_alloc((void **)&cnt, (size_t)(2 * n + 1) * sizeof *cnt));
    HK_CU_TRY(cudaMemsetAsync(cnt + n, 0, sizeof *cnt, hk_cu.stream));
    if (n) {
        k_strength_diag<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(M, dnorm, iso);
        HK_CU_TRY(cudaGetLastError());
        k_strength_flags<<<wgrid, HK_CU_BLOCK, 0, hk_cu.stream>>>(M, dnorm, iso, theta, flag);
        HK_CU_TRY(cudaGetLastError());
        k_strength_pick<<<wgrid, HK_CU_BLOCK, 0, hk_cu.stream>>>(M, flag, buf, cnt);
        HK_CU_TRY(cudaGetLastError());
        HK_TRY(agg_scan(cnt, cnt + n + 1, n));
        HK_TRY(agg_read(&nnz, cnt + 2 * n, sizeof nnz));
    }
    HK_TRY(hk_graph_alloc(&hk_backend_cuda, n, n, nnz, S));
    HK_CU_TRY(cudaMemcpyAsync(S->rowptr, cnt + n, (size_t)(n + 1) * sizeof *cnt,
                              cudaMemcpyDeviceToDevice, hk_cu.stream));
    if (n) {
        k_strength_copy<<<wgrid, HK_CU_BLOCK, 0, hk_cu.stream>>>(M, buf, S->rowptr, S->colind);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    hk_cu_tmp_free(dnorm), hk_cu_tmp_free(iso), hk_cu_tmp_free(flag), hk_cu_tmp_free(buf);
    hk_cu_tmp_free(cnt);
    return 0;
fail:
    cudaStreamSynchronize(hk_cu.stream);
    hk_cu_tmp_free(dnorm), hk_cu_tmp_free(iso), hk_cu_tmp_free(flag), hk_cu_tmp_free(buf);
    hk_cu_tmp_free(cnt);
    hk_graph_free(S);
    return ierr;
}

/* ---- aggregation ----------------------------------------------------------------------- */

enum { AGG_OUT = 0, AGG_UNDECIDED = 1, AGG_ROOT = 2 };

__device__ static uint64_t agg_tuple(int state, int64_t i)
{
    return (uint64_t)state << 62 | (uint64_t)(hk_hash32((uint32_t)i) >> 2) << 32 | (uint64_t)i;
}

struct agg_graph {
    int64_t n;
    const int64_t *rowptr;
    const int32_t *colind;
};

#define AGG_FOR(i, n)                                                                              \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                     \
         i += (int64_t)gridDim.x * blockDim.x)

__global__ static void k_agg_init(agg_graph S, uint64_t *t0)
{
    AGG_FOR(i, S.n)
    t0[i] = agg_tuple(S.rowptr[i + 1] > S.rowptr[i] ? AGG_UNDECIDED : AGG_OUT, i);
}

__global__ static void k_agg_max(agg_graph S, const uint64_t *t, uint64_t *tm)
{
    AGG_FOR(i, S.n)
    {
        uint64_t m = t[i];
        for (int64_t p = S.rowptr[i]; p < S.rowptr[i + 1]; p++) {
            const uint64_t v = t[S.colind[p]];
            if (v > m) m = v;
        }
        tm[i] = m;
    }
}

/* t2 = the new states from t0 (old) and t1 (distance-1 maxima); counts the undecided. */
__global__ static void k_agg_update(agg_graph S, const uint64_t *t0, const uint64_t *t1,
                                    uint64_t *t2, unsigned long long *undecided)
{
    AGG_FOR(i, S.n)
    {
        uint64_t m = t1[i];
        for (int64_t p = S.rowptr[i]; p < S.rowptr[i + 1]; p++) {
            const uint64_t v = t1[S.colind[p]];
            if (v > m) m = v;
        }
        uint64_t t = t0[i];
        if (t >> 62 == AGG_UNDECIDED) {
            if (m >> 62 == AGG_ROOT)
                t = agg_tuple(AGG_OUT, i);
            else if (m == t)
                t = agg_tuple(AGG_ROOT, i);
            else
                atomicAdd(undecided, 1ull);
        }
        t2[i] = t;
    }
}

__global__ static void k_agg_rootflag(int64_t n, const uint64_t *t, int64_t *flag)
{
    AGG_FOR(i, n)
    flag[i] = t[i] >> 62 == AGG_ROOT;
}

/* rootid: inclusive prefix sums of the root flags (root i has id rootid[i] - 1). */
__global__ static void k_agg_first(agg_graph S, const uint64_t *t, const int64_t *rootid,
                                   int32_t *agg)
{
    AGG_FOR(i, S.n)
    {
        int32_t a = t[i] >> 62 == AGG_ROOT ? (int32_t)(rootid[i] - 1) : -1;
        if (a < 0)
            for (int64_t p = S.rowptr[i]; p < S.rowptr[i + 1]; p++) {
                const int32_t j = S.colind[p];
                if (t[j] >> 62 == AGG_ROOT) {
                    const int32_t b = (int32_t)(rootid[j] - 1);
                    if (a < 0 || b < a) a = b;
                }
            }
        agg[i] = a;
    }
}

__global__ static void k_agg_join(agg_graph S, const int32_t *cur, int32_t *next,
                                  unsigned long long *changed)
{
    AGG_FOR(i, S.n)
    {
        int32_t a = cur[i];
        if (a < 0) {
            int64_t bestc = 0;
            for (int64_t p = S.rowptr[i]; p < S.rowptr[i + 1]; p++) {
                const int32_t c = cur[S.colind[p]];
                if (c < 0) continue;
                int64_t k = 0;
                for (int64_t q = S.rowptr[i]; q < S.rowptr[i + 1]; q++)
                    k += cur[S.colind[q]] == c;
                if (k > bestc || (k == bestc && c < a)) {
                    a = c;
                    bestc = k;
                }
            }
            if (a >= 0) atomicAdd(changed, 1ull);
        }
        next[i] = a;
    }
}

extern "C" int hk_cu_amg_aggregate(const hk_graph *S, int32_t *agg, int64_t *nagg)
{
    int ierr = 0;
    *nagg = 0;
    const int64_t n = S->n;
    HK_CHECK(S->n == S->m && n < INT32_MAX, HK_ERR_ARG,
             "amg_aggregate: the strength graph must be square with fewer than 2^31 nodes "
             "(got %lld x %lld)",
             (long long)S->n, (long long)S->m);
    if (n == 0) return 0;
    const agg_graph G = {n, S->rowptr, S->colind};
    const unsigned grid = hk_cu_grid(n);
    uint64_t *t0 = NULL, *t1 = NULL, *t2 = NULL;
    int64_t *flag = NULL, nroot = 0;
    int32_t *next = NULL;
    unsigned long long *counter = NULL, hcount = 0;
    HK_CALL(hk_cu_init());
    HK_TRY(hk_cu_tmp_alloc((void **)&t0, (size_t)n * sizeof *t0));
    HK_TRY(hk_cu_tmp_alloc((void **)&t1, (size_t)n * sizeof *t1));
    HK_TRY(hk_cu_tmp_alloc((void **)&t2, (size_t)n * sizeof *t2));
    HK_TRY(hk_cu_tmp_alloc((void **)&flag, (size_t)2 * n * sizeof *flag));
    HK_TRY(hk_cu_tmp_alloc((void **)&next, (size_t)n * sizeof *next));
    HK_TRY(hk_cu_tmp_alloc((void **)&counter, sizeof *counter));

    k_agg_init<<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(G, t0);
    HK_CU_TRY(cudaGetLastError());
    for (;;) { /* at least one node is decided per round */
        HK_CU_TRY(cudaMemsetAsync(counter, 0, sizeof *counter, hk_cu.stream));
        k_agg_max<<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(G, t0, t1);
        HK_CU_TRY(cudaGetLastError());
        k_agg_update<<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(G, t0, t1, t2, counter);
        HK_CU_TRY(cudaGetLastError());
        uint64_t *sw = t0;
        t0 = t2;
        t2 = sw;
        HK_TRY(agg_read(&hcount, counter, sizeof hcount));
        if (!hcount) break;
    }
    k_agg_rootflag<<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(n, t0, flag);
    HK_CU_TRY(cudaGetLastError());
    HK_TRY(agg_scan(flag, flag + n, n));
    HK_TRY(agg_read(&nroot, flag + 2 * n - 1, sizeof nroot));
    k_agg_first<<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(G, t0, flag + n, agg);
    HK_CU_TRY(cudaGetLastError());
    for (;;) {
        HK_CU_TRY(cudaMemsetAsync(counter, 0, sizeof *counter, hk_cu.stream));
        k_agg_join<<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(G, agg, next, counter);
        HK_CU_TRY(cudaGetLastError());
        HK_TRY(agg_read(&hcount, counter, sizeof hcount));
        if (!hcount) break;
        HK_CU_TRY(cudaMemcpyAsync(agg, next, (size_t)n * sizeof *agg, cudaMemcpyDeviceToDevice,
                                  hk_cu.stream));
    }
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    *nagg = nroot;
fail:
    cudaStreamSynchronize(hk_cu.stream);
    hk_cu_tmp_free(t0), hk_cu_tmp_free(t1), hk_cu_tmp_free(t2), hk_cu_tmp_free(flag);
    hk_cu_tmp_free(next), hk_cu_tmp_free(counter);
    return ierr;
}

/* ---- tentative prolongator ------------------------------------------------------------- */

/* First node with an aggregate outside -1..nagg-1 (atomicMin on an integer); aggregate sizes;
 * T's row flags. */
__global__ static void k_tent_scan_agg(int64_t nn, const int32_t *agg, int64_t nagg,
                                       unsigned long long *bad, int64_t *size, int64_t *rowflag)
{
    AGG_FOR(i, nn)
    {
        const int32_t a = agg[i];
        if (a < -1 || a >= nagg) {
            atomicMin(bad, (unsigned long long)i);
            rowflag[i] = 0;
            continue;
        }
        rowflag[i] = a >= 0;
        if (a >= 0) atomicAdd((unsigned long long *)&size[a], 1ull);
    }
}

__global__ static void k_tent_iota(int64_t n, int32_t *v)
{
    AGG_FOR(i, n)
    v[i] = (int32_t)i;
}

/* T's column indices and the near-null space rows copied into T's values. */
__global__ static void k_tent_fill(int64_t nn, int b, int nns, const int32_t *agg,
                                   const double *B, const int64_t *trow, int32_t *tcol,
                                   double *tval)
{
    const int64_t n = nn * b;
    AGG_FOR(i, nn)
    {
        if (agg[i] < 0) continue;
        const int64_t p = trow[i];
        tcol[p] = agg[i];
        for (int r = 0; r < b; r++)
            for (int c = 0; c < nns; c++)
                tval[((size_t)p * b + r) * nns + c] = B[(size_t)(i * b + r) + (size_t)n * c];
    }
}

/* A warp per aggregate, every step spread over the lanes: lane l owns the rows l, l+32, ... of
 * the aggregate's local matrix (m = size * b rows, nns columns). A dot product is the lane's
 * sum over its rows in order, then an xor-shuffle butterfly (h = 16, 8, 4, 2, 1); IEEE addition
 * is commutative, so every lane ends with the same bits, the tree qr_dot in cpu_aggregate.c
 * computes. Column updates touch only the lane's own rows, so the lanes need no barrier
 * between steps, and every lane holds the same norms and so takes the same branches. The
 * aggregate's rows (scattered through T by node) are gathered column by column into shared
 * memory first, consecutive rows in consecutive words; an aggregate too large for the warp's
 * share is done in place in global memory. start: inclusive sums of the sizes. */
#define TQ_WARPS 2
#define TQ_CAP 3072 /* doubles per warp: 170 nodes of 3 x 6, 85 of 6 x 6 */

struct tq_rows {
    double *sh; /* column-major m x nns, or NULL: in place in V */
    double *V;
    const int32_t *nodes;
    const int64_t *trow;
    int64_t m;
    int b, nns;
    __device__ double &at(int64_t e, int c) const
    {
        return sh ? sh[c * m + e] : V[((size_t)trow[nodes[e / b]] * b + e % b) * nns + c];
    }
};

__device__ static double tq_dot(const tq_rows &M, int lane, int x, int y)
{
    double s = 0;
    for (int64_t e = lane; e < M.m; e += 32)
        s = __dadd_rn(s, __dmul_rn(M.at(e, x), M.at(e, y)));
    for (int h = 16; h >= 1; h >>= 1)
        s = __dadd_rn(s, __shfl_xor_sync(0xffffffffu, s, h));
    return s;
}

__global__ static void __launch_bounds__(TQ_WARPS * 32)
    k_tent_qr(int64_t nagg, int b, int nns, const int32_t *list, const int64_t *start,
              const int64_t *trow, double *V, double *Bc)
{
    __shared__ double sv[TQ_WARPS][TQ_CAP];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int64_t a = (int64_t)blockIdx.x * TQ_WARPS + w;
    if (a >= nagg) return; /* whole warps leave together */
    const int64_t ld = nagg * nns, bn = (int64_t)b * nns;
    const int64_t s0 = a ? start[a - 1] : 0, s = start[a] - s0;
    const tq_rows M = {s * bn <= TQ_CAP ? sv[w] : NULL, V, list + s0, trow, s * b, b, nns};
    if (M.sh)
        for (int64_t x = lane; x < s * bn; x += 32) {
            const int64_t k = x / bn, rc = x - k * bn, r = rc / nns;
            M.sh[(rc - r * nns) * M.m + k * b + r] = V[(size_t)trow[M.nodes[k]] * bn + rc];
        }
    __syncwarp();
    double *R = Bc + (size_t)a * nns; /* R[r + ld*c] */
    uint64_t kept = 0;
    for (int j = 0; j < nns; j++) {
        const double orig = __dsqrt_rn(tq_dot(M, lane, j, j));
        for (int q = j + 1 + lane; q < nns; q += 32)
            R[q + ld * j] = 0;
        for (int q = 0; q < j; q++) {
            double d = 0;
            if (kept >> q & 1) {
                d = tq_dot(M, lane, q, j);
                for (int64_t e = lane; e < M.m; e += 32)
                    M.at(e, j) = __dsub_rn(M.at(e, j), __dmul_rn(d, M.at(e, q)));
            }
            if (lane == 0) R[q + ld * j] = d;
        }
        const double nrm = __dsqrt_rn(tq_dot(M, lane, j, j));
        const bool keep = nrm > __dmul_rn(1e-10, orig);
        if (keep) kept |= (uint64_t)1 << j;
        for (int64_t e = lane; e < M.m; e += 32)
            M.at(e, j) = keep ? __ddiv_rn(M.at(e, j), nrm) : 0.0;
        if (lane == 0) R[j + ld * j] = keep ? nrm : 0.0;
    }
    __syncwarp();
    if (M.sh)
        for (int64_t x = lane; x < s * bn; x += 32) {
            const int64_t k = x / bn, rc = x - k * bn, r = rc / nns;
            V[(size_t)trow[M.nodes[k]] * bn + rc] = M.sh[(rc - r * nns) * M.m + k * b + r];
        }
}

extern "C" int hk_cu_amg_tentative(const int32_t *agg, int64_t nagg, int64_t nnodes, int b,
                                   int nns, const double *B, hk_bmat *T, double *Bc)
{
    int ierr = 0;
    memset(T, 0, sizeof *T);
    HK_CHECK(b >= 1 && nns >= 1 && nns <= 64 && nnodes >= 0 && nagg >= 0 && nagg < INT32_MAX,
             HK_ERR_ARG,
             "amg_tentative: bad sizes (%lld nodes of %d dofs, %lld aggregates, %d near-null "
             "vectors; need at least one dof per node and 1..64 vectors)",
             (long long)nnodes, b, (long long)nagg, nns);
    HK_CHECK(nnodes < INT32_MAX, HK_ERR_ARG,
             "amg_tentative: %lld nodes; the device version takes fewer than 2^31",
             (long long)nnodes);
    const int64_t nn = nnodes;
    int64_t *size = NULL, *rowflag = NULL, nnzb = 0;
    int32_t *keys = NULL, *vals = NULL;
    unsigned long long *bad = NULL;
    int64_t hbad = -1;
    void *tmp = NULL;
    size_t tbytes = 0;
    HK_CALL(hk_cu_init());
    /* size: nagg counts then nagg inclusive sums; rowflag: nn flags then nn + 1 row pointers;
     * keys / vals: agg and the node indices, then both sorted by aggregate (stable) */
    HK_TRY(hk_cu_tmp_alloc((void **)&size, (size_t)(2 * nagg + 1) * sizeof *size));
    HK_TRY(hk_cu_tmp_alloc((void **)&rowflag, (size_t)(2 * nn + 1) * sizeof *rowflag));
    HK_TRY(hk_cu_tmp_alloc((void **)&keys, (size_t)(2 * nn + 1) * sizeof *keys));
    HK_TRY(hk_cu_tmp_alloc((void **)&vals, (size_t)(2 * nn + 1) * sizeof *vals));
    HK_TRY(hk_cu_setup_flag(&bad));
    HK_CU_TRY(cudaMemsetAsync(size, 0, (size_t)nagg * sizeof *size, hk_cu.stream));
    HK_CU_TRY(cudaMemsetAsync(rowflag + nn, 0, sizeof *rowflag, hk_cu.stream));
    if (nn) {
        k_tent_scan_agg<<<hk_cu_grid(nn), HK_CU_BLOCK, 0, hk_cu.stream>>>(nn, agg, nagg, bad, size,
                                                                          rowflag);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_first_row_read(bad, &hbad));
    if (hbad >= 0) {
        int32_t a = 0;
        HK_TRY(agg_read(&a, agg + hbad, sizeof a));
        ierr = hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                            "amg_tentative: node %lld has aggregate %d outside -1..%lld; pass "
                            "the output of amg_aggregate with its count",
                            (long long)hbad, a, (long long)nagg - 1);
        goto fail;
    }
    if (nn) {
        HK_TRY(agg_scan(rowflag, rowflag + nn + 1, nn));
        HK_TRY(agg_read(&nnzb, rowflag + 2 * nn, sizeof nnzb));
    }
    HK_TRY(agg_scan(size, size + nagg, nagg));
    HK_TRY(hk_bmat_alloc(&hk_backend_cuda, b, nns, nn, nagg, nnzb, T));
    HK_CU_TRY(cudaMemcpyAsync(T->rowptr, rowflag + nn, (size_t)(nn + 1) * sizeof *rowflag,
                              cudaMemcpyDeviceToDevice, hk_cu.stream));
    if (nn) {
        /* node lists: the nodes sorted by aggregate, stable, so increasing within one; the
         * nn - nnzb nodes with aggregate -1 come first */
        HK_CU_TRY(cudaMemcpyAsync(keys, agg, (size_t)nn * sizeof *keys, cudaMemcpyDeviceToDevice,
                                  hk_cu.stream));
        k_tent_iota<<<hk_cu_grid(nn), HK_CU_BLOCK, 0, hk_cu.stream>>>(nn, vals);
        HK_CU_TRY(cudaGetLastError());
        cub::DoubleBuffer<int32_t> dk(keys, keys + nn), dv(vals, vals + nn);
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(NULL, tbytes, dk, dv, (int)nn, 0, 32,
                                                   hk_cu.stream));
        HK_TRY(hk_cu_tmp_alloc(&tmp, tbytes ? tbytes : 8));
        HK_CU_TRY(cub::DeviceRadixSort::SortPairs(tmp, tbytes, dk, dv, (int)nn, 0, 32,
                                                   hk_cu.stream));
        const int32_t *list = dv.Current() + (nn - nnzb);
        k_tent_fill<<<hk_cu_grid(nn), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            nn, b, nns, agg, B, T->rowptr, T->colind, T->val);
        HK_CU_TRY(cudaGetLastError());
        if (nagg) {
            const int64_t nblk = (nagg + TQ_WARPS - 1) / TQ_WARPS;
            k_tent_qr<<<(unsigned)nblk, TQ_WARPS * 32, 0, hk_cu.stream>>>(
                nagg, b, nns, list, size + nagg, T->rowptr, T->val, Bc);
            HK_CU_TRY(cudaGetLastError());
        }
    } else if (nagg) { /* aggregates without nodes: R = 0 */
        HK_CU_TRY(cudaMemsetAsync(Bc, 0, (size_t)nagg * nns * nns * sizeof *Bc, hk_cu.stream));
    }
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    hk_cu_tmp_free(size), hk_cu_tmp_free(rowflag), hk_cu_tmp_free(keys), hk_cu_tmp_free(vals);
    hk_cu_tmp_free(tmp);
    return 0;
fail:
    cudaStreamSynchronize(hk_cu.stream);
    hk_cu_tmp_free(size), hk_cu_tmp_free(rowflag), hk_cu_tmp_free(keys), hk_cu_tmp_free(vals);
    hk_cu_tmp_free(tmp);
    hk_bmat_free(T);
    return ierr;
}

// cub's kernels of this file (cuda_impl.cuh: hk_cu_warm): agg_scan's sums and the tentative
// prolongator's sort of the nodes by aggregate, with the template arguments of those calls.
static void aggregate_warm_cub(void)
{
    const int64_t N = HK_CU_WARM_LARGE;
    char *w = (char *)hk_cu_warm_buffer((size_t)N * 32);
    if (!w) return;
    const int64_t *in = (const int64_t *)w;
    int64_t *out = (int64_t *)w + N;
    int32_t *keys = (int32_t *)(w + 16 * N), *vals = keys + 2 * N;
    const int sizes[2] = {HK_CU_WARM_SMALL, (int)N};
    for (int k = 0; k < 2; k++) {
        const int n = sizes[k];
        hk_cu_warm([&](void *t, size_t &tb) {
            return cub::DeviceScan::InclusiveSum(t, tb, in, out, n, hk_cu.stream);
        });
        cub::DoubleBuffer<int32_t> dk(keys, keys + n), dv(vals, vals + n);
        hk_cu_warm([&](void *t, size_t &tb) {
            return cub::DeviceRadixSort::SortPairs(t, tb, dk, dv, n, 0, 32, hk_cu.stream);
        });
    }
    hk_cu_warm_free(w);
}

// Loaded by hk_cu_init (cuda_impl.cuh: hk_cu_preloads): this file's kernels of the AMG set-up
// and the solve, for 2D and 3D elasticity, and cub's (warmed).
void hk_cu_aggregate_preload(void)
{
    static const void *const k[] = {
        (const void *)k_strength_diag,
        (const void *)k_strength_flags,
        (const void *)k_strength_pick,
        (const void *)k_strength_copy,
        (const void *)k_agg_init,
        (const void *)k_agg_max,
        (const void *)k_agg_update,
        (const void *)k_agg_rootflag,
        (const void *)k_agg_first,
        (const void *)k_agg_join,
        (const void *)k_tent_scan_agg,
        (const void *)k_tent_iota,
        (const void *)k_tent_fill,
        (const void *)k_tent_qr};
    hk_cu_preload(k, (int)(sizeof k / sizeof *k));
    aggregate_warm_cub();
}
