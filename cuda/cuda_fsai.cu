// FSAI set-up ops on the device (contracts: hk_backend_ops in solver/hk_impl.h; the rules and
// their order of floating-point operations: solver/cpu/cpu_fsai.c, which these kernels follow
// step by step with explicitly rounded multiplies and adds, so no fused multiply-add makes
// the digits differ from the CPU reference).
//
// fsai_pattern: diagonal check, the sparsified graph Ã (count, scan, fill), then one warp per
// node grows its node set by k steps of Low(B_p Ã): candidates go into an open-addressing hash
// set in shared memory (atomicCAS), new members are appended to a list by ballot, and the
// finished set is sorted by rank into the hash table's place (each member counts the smaller
// ones), so the result does not depend on the order of insertion; the node's rows share that
// prefix and are written by lanes over consecutive entries. Twice: sizes, then the rows.
// Node sets of more than FSAI_LIST nodes (cap over FSAI_LIST scalar entries) take the old
// path: one thread per node growing a sorted array in global scratch.
// fsai_factor: units of work are rows, or whole nodes where the node's rows share one factor
// (pc.fsai.pattern=block: each row's pattern is a prefix of the last row's): such a node
// gathers and factors its last row's system once and solves its rows with the leading parts
// of that factor, FSAI_NRHS rows side by side, as the CPU reference does. Units by class of
// size m (a node's: its last row's):
//   m <= FSAI_SMALL: one warp per unit, the system in shared memory;
//   FSAI_SMALL < m <= FSAI_MID: one thread block per unit, the m x m system in (opt-in, up to
//     210 KB) dynamic shared memory, launched per size class (48, 64, .., 116, 128, 144,
//     FSAI_MID) so that small systems share an SM; the Cholesky is right-looking (column j is
//     divided by its pivot, then the trailing lower triangle is updated, warps over columns
//     and lanes over rows) - entry (r, c) receives its updates in the order q = 0, 1, .., c-1
//     exactly as the left-looking reference's sum, so the digits are the same;
//   m > FSAI_MID: one warp per unit with its system in a global slab (the slow path).
// A node whose factor fails is redone row by row, which names the first failing row.
// Faults go through an integer atomicMin on (row << 4 | reason): the first faulty row,
// whatever the schedule.
#include <cub/cub.cuh>
#include <stdint.h>

#include "cuda_impl.cuh"

#define FSAI_SMALL 32        /* patterns up to this size keep their system in shared memory */
#define FSAI_WARPS 4         /* warps per block of the factor kernels */
#define FSAI_BATCH 16384     /* nodes per launch of the pattern kernel */
#define FSAI_SLAB_BYTES (512ull << 20) /* global scratch of the large-row factor kernel */
#define FSAI_MID 160         /* patterns up to this size: a thread block, system in shared */
#define FSAI_BLOCK_WARPS 8   /* warps of the block-per-row factor kernel */
#define FSAI_HASH 2048       /* shared hash slots per warp of the pattern kernel */
#define FSAI_LIST 1024       /* most nodes of a set in the warp pattern kernel */
#define FSAI_PWARPS 4        /* warps per block of the pattern kernel (48 KB of shared) */
#define FSAI_NRHS 3          /* rows of a node solved side by side with its one factor */

typedef unsigned long long ull;

__device__ __forceinline__ double mul_(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double add_(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double sub_(double a, double b) { return __dsub_rn(a, b); }

__device__ __forceinline__ void report(ull *fault, int64_t row, int reason)
{
    atomicMin(fault, ((ull)row << 4) | (ull)reason);
}

static int fault_begin(ull **fault)
{
    HK_CALL(hk_cu_malloc((void **)fault, sizeof(ull)));
    HK_CU(cudaMemsetAsync(*fault, 0xff, sizeof(ull), hk_cu.stream));
    return 0;
}

static int fault_read(const ull *dfault, hk_setup_fault *f)
{
    ull h = 0;
    HK_CU(cudaMemcpyAsync(&h, dfault, sizeof h, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    if (h != ~0ull) {
        f->row = (int64_t)(h >> 4);
        f->reason = (int)(h & 15);
    }
    return 0;
}

/* rowptr[0] = 0, rowptr[1..n] = inclusive sum of counts; *total = rowptr[n] (waits). */
static int scan_rowptr(const int64_t *counts, int64_t n, int64_t *rowptr, int64_t *total)
{
    int ierr = 0;
    void *tmp = NULL;
    size_t bytes = 0;
    HK_CU(cudaMemsetAsync(rowptr, 0, sizeof(int64_t), hk_cu.stream));
    if (n > 0) {
        HK_CHECK(n < INT32_MAX, HK_ERR_UNSUPPORTED, "fsai: %lld rows are too many for one scan",
                 (long long)n);
        HK_CU(cub::DeviceScan::InclusiveSum(tmp, bytes, counts, rowptr + 1, (int)n, hk_cu.stream));
        HK_CALL(hk_cu_malloc(&tmp, bytes ? bytes : 8));
        HK_CU_TRY(
            cub::DeviceScan::InclusiveSum(tmp, bytes, counts, rowptr + 1, (int)n, hk_cu.stream));
    }
    HK_CU_TRY(cudaMemcpyAsync(total, rowptr + n, sizeof(int64_t), cudaMemcpyDeviceToHost,
                              hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
fail:
    cudaFree(tmp);
    return ierr;
}

/* ---- fsai_pattern ------------------------------------------------------------------------ */

__device__ double block_fnorm(const double *val, int64_t q, int bb)
{
    double s = 0;
    for (int e = 0; e < bb; e++)
        s = add_(s, mul_(val[q * bb + e], val[q * bb + e]));
    return sqrt(s);
}

/* dg[i] = a_ii (scalar), checked; then, in block mode, dgb[I] = ||A_II||_F. */
__global__ void fsai_diag_kernel(const int64_t *rowptr, const int32_t *colind, const double *val,
                                 int br, int64_t n, double *dg, ull *fault)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t q = hk_find_block(rowptr, colind, i / br, i / br);
        const double a = q >= 0 ? val[(q * br + i % br) * br + i % br] : 0.0;
        if (!(a > 0) || !isfinite(a)) report(fault, i, HK_FAULT_DIAG);
        dg[i] = a;
    }
}

__global__ void fsai_block_diag_kernel(const int64_t *rowptr, const int32_t *colind,
                                       const double *val, int br, int64_t nb, double *dgb)
{
    for (int64_t I = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; I < nb;
         I += (int64_t)gridDim.x * blockDim.x) {
        const int64_t q = hk_find_block(rowptr, colind, I, I);
        dgb[I] = q >= 0 ? block_fnorm(val, q, br * br) : 0.0;
    }
}

/* Ã per node: counts (fill = 0) or columns (fill = 1, at arow[I]). */
__global__ void fsai_tilde_kernel(const int64_t *rowptr, const int32_t *colind, const double *val,
                                  int br, int block, int64_t nn, double tau, const double *dg,
                                  int fill, int64_t *cnt, const int64_t *arow, int32_t *acol)
{
    for (int64_t I = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; I < nn;
         I += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = 0, q0 = fill ? arow[I] : 0;
        if (block) {
            for (int64_t q = rowptr[I]; q < rowptr[I + 1]; q++) {
                const int32_t J = colind[q];
                if (J == I || block_fnorm(val, q, br * br) > mul_(tau, sqrt(mul_(dg[I], dg[J])))) {
                    if (fill) acol[q0 + c] = J;
                    c++;
                }
            }
        } else {
            const int64_t bi = I / br, r = I % br;
            for (int64_t q = rowptr[bi]; q < rowptr[bi + 1]; q++)
                for (int cc = 0; cc < br; cc++) {
                    const int64_t j = (int64_t)colind[q] * br + cc;
                    const double v = val[(q * br + r) * br + cc];
                    if (j == I || fabs(v) > mul_(tau, sqrt(mul_(dg[I], dg[j])))) {
                        if (fill) acol[q0 + c] = (int32_t)j;
                        c++;
                    }
                }
        }
        if (!fill) cnt[I] = c;
    }
}

/* Node sets of nodes I0 .. I0+nb-1, one thread each. Scratch: three arrays of capn entries
 * per thread, entry e of thread t at e*nb + t (the set sorted, the last front, the next).
 * write = 0: the scalar row lengths into len; write = 1: the scalar rows at srow. */
__global__ void fsai_sets_kernel(const int64_t *arow, const int32_t *acol, int64_t I0, int64_t nb,
                                 int k, int64_t capn, int64_t cap, int b, int32_t *scr, int write,
                                 int64_t *len, const int64_t *srow, int32_t *scol, ull *fault)
{
    const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t >= nb) return;
    const int64_t I = I0 + t;
    int32_t *set = scr + t, *front = scr + capn * nb + t, *next = scr + 2 * capn * nb + t;
#define AT(a, e) (a)[(int64_t)(e) * nb]
    int64_t m = 1, nf = 1, over = 0;
    AT(set, 0) = (int32_t)I;
    AT(front, 0) = (int32_t)I;
    for (int p = 0; p < k && !over; p++) {
        int64_t nn = 0;
        for (int64_t f = 0; f < nf && !over; f++) {
            const int32_t j = AT(front, f);
            for (int64_t q = arow[j]; q < arow[j + 1]; q++) {
                const int32_t c = acol[q];
                if (c > I) continue;
                const int64_t lo =
                    hk_cu_partition_point(0, m, [&](int64_t e) { return AT(set, e) < c; });
                if (lo < m && AT(set, lo) == c) continue;
                if (m == capn) {
                    over = 1;
                    break;
                }
                for (int64_t e = m; e > lo; e--)
                    AT(set, e) = AT(set, e - 1);
                AT(set, lo) = c;
                m++;
                AT(next, nn) = c;
                nn++;
            }
        }
        int32_t *sw = front;
        front = next;
        next = sw;
        nf = nn;
    }
    if (over || (m - 1) * b + b > cap) {
        int64_t r = 0;
        if (!over)
            while ((m - 1) * b + r + 1 <= cap)
                r++;
        report(fault, I * b + r, HK_FAULT_TOO_LARGE);
        return;
    }
    for (int r = 0; r < b; r++) {
        const int64_t i = I * b + r;
        if (!write) {
            len[i] = (m - 1) * b + r + 1;
            continue;
        }
        int32_t *out = scol + srow[i];
        int64_t o = 0;
        for (int64_t a = 0; a < m - 1; a++)
            for (int c = 0; c < b; c++)
                out[o++] = (int32_t)((int64_t)AT(set, a) * b + c);
        for (int c = 0; c <= r; c++)
            out[o++] = (int32_t)(I * b + c);
    }
#undef AT
}

/* Node sets of all nodes, one warp each (see the head of the file). write = 0: the scalar row
 * lengths into len; write = 1: the scalar rows at srow. capn <= FSAI_LIST. */
__global__ void __launch_bounds__(32 * FSAI_PWARPS)
    fsai_sets_warp_kernel(const int64_t *arow, const int32_t *acol, int64_t nn, int k,
                          int64_t capn, int64_t cap, int b, int write, int64_t *len,
                          const int64_t *srow, int32_t *scol, ull *fault)
{
    __shared__ int32_t tab_all[FSAI_PWARPS][FSAI_HASH];
    __shared__ int32_t list_all[FSAI_PWARPS][FSAI_LIST];
    const int lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
    int32_t *tab = tab_all[wib], *list = list_all[wib];
    const unsigned lt = (1u << lane) - 1u;
    for (int64_t I = (int64_t)blockIdx.x * FSAI_PWARPS + wib; I < nn;
         I += (int64_t)gridDim.x * FSAI_PWARPS) {
        for (int h = lane; h < FSAI_HASH; h += 32)
            tab[h] = -1;
        __syncwarp();
        if (lane == 0) {
            tab[((uint32_t)I * 2654435761u) >> 21] = (int32_t)I; /* 11 bits: FSAI_HASH */
            list[0] = (int32_t)I;
        }
        __syncwarp();
        int64_t m = 1, fs = 0;
        int over = 0;
        for (int p = 0; p < k && !over; p++) {
            const int64_t fe = m;
            for (int64_t f = fs; f < fe && !over; f++) {
                const int32_t j = list[f];
                const int64_t q0 = arow[j], q1 = arow[j + 1];
                for (int64_t qb = q0; qb < q1 && !over; qb += 32) {
                    const int64_t q = qb + lane;
                    int ins = 0;
                    int32_t c = 0;
                    if (q < q1) {
                        c = acol[q];
                        if (c <= I) {
                            uint32_t h = ((uint32_t)c * 2654435761u) >> 21;
                            for (;;) {
                                const int32_t old = atomicCAS(&tab[h], -1, c);
                                if (old == -1) {
                                    ins = 1;
                                    break;
                                }
                                if (old == c) break;
                                h = (h + 1) & (FSAI_HASH - 1);
                            }
                        }
                    }
                    const unsigned bal = __ballot_sync(0xffffffffu, ins);
                    const int64_t pos = m + __popc(bal & lt);
                    if (ins && pos < capn) list[pos] = c;
                    m += __popc(bal);
                    if (m > capn) over = 1; /* the same in every lane */
                    __syncwarp();
                }
            }
            fs = fe;
        }
        if (over || (m - 1) * b + b > cap) {
            if (lane == 0) {
                int64_t r = 0;
                if (!over)
                    while ((m - 1) * b + r + 1 <= cap)
                        r++;
                report(fault, I * b + r, HK_FAULT_TOO_LARGE);
            }
            continue;
        }
        if (!write) {
            for (int r = lane; r < b; r += 32)
                len[I * b + r] = (m - 1) * b + r + 1;
            continue;
        }
        /* rank sort into tab, whose hash set is done with (I is the largest member, so it
         * ranks m - 1); then the node's rows, which share the prefix, each written by lanes
         * over consecutive entries */
        for (int64_t e = lane; e < m; e += 32) {
            const int32_t v = list[e];
            int64_t rank = 0;
            for (int64_t x = 0; x < m; x++)
                rank += list[x] < v;
            tab[rank] = v;
        }
        __syncwarp();
        for (int r = 0; r < b; r++) {
            int32_t *out = scol + srow[I * b + r];
            const int len = (int)((m - 1) * b + r + 1);
            for (int t = lane; t < len; t += 32)
                out[t] = (int32_t)((int64_t)tab[t / b] * b + t % b);
        }
        __syncwarp();
    }
}

extern "C" int hk_cu_fsai_pattern(const hk_bmat *K, double tau, int k, int block, int64_t cap,
                                  hk_graph *S, hk_setup_fault *fault)
{
    int ierr = 0;
    memset(S, 0, sizeof *S);
    fault->row = -1;
    fault->reason = HK_FAULT_NONE;
    HK_CHECK(K->br == K->bc && K->nbrows == K->nbcols, HK_ERR_ARG,
             "fsai_pattern: K must be square with square blocks (got %d x %d blocks)", K->br,
             K->bc);
    const int br = K->br, b = block ? br : 1;
    const int64_t n = K->nbrows * br, nn = n / b, capn = cap / b + 1;
    ull *dfault = NULL;
    double *dg = NULL, *dgb = NULL;
    int64_t *cnt = NULL, *arow = NULL, *len = NULL, natil = 0, nnz = 0;
    int32_t *acol = NULL, *scr = NULL;
    const int64_t batch = nn < FSAI_BATCH ? (nn ? nn : 1) : FSAI_BATCH;
    HK_CALL(fault_begin(&dfault));
    HK_TRY(hk_cu_malloc((void **)&dg, (size_t)(n ? n : 1) * sizeof *dg));
    fsai_diag_kernel<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(K->rowptr, K->colind,
                                                                       K->val, br, n, dg, dfault);
    HK_CU_TRY(cudaGetLastError());
    HK_TRY(fault_read(dfault, fault));
    if (fault->row >= 0) goto fail;
    if (block) {
        HK_TRY(hk_cu_malloc((void **)&dgb, (size_t)(nn ? nn : 1) * sizeof *dgb));
        fsai_block_diag_kernel<<<hk_cu_grid(nn), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            K->rowptr, K->colind, K->val, br, nn, dgb);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_malloc((void **)&cnt, (size_t)(n ? n : 1) * sizeof *cnt));
    HK_TRY(hk_cu_malloc((void **)&arow, (size_t)(nn + 1) * sizeof *arow));
    fsai_tilde_kernel<<<hk_cu_grid(nn), HK_CU_BLOCK, 0, hk_cu.stream>>>(
        K->rowptr, K->colind, K->val, br, block, nn, tau, block ? dgb : dg, 0, cnt, NULL, NULL);
    HK_CU_TRY(cudaGetLastError());
    HK_TRY(scan_rowptr(cnt, nn, arow, &natil));
    HK_TRY(hk_cu_malloc((void **)&acol, (size_t)(natil ? natil : 1) * sizeof *acol));
    fsai_tilde_kernel<<<hk_cu_grid(nn), HK_CU_BLOCK, 0, hk_cu.stream>>>(
        K->rowptr, K->colind, K->val, br, block, nn, tau, block ? dgb : dg, 1, NULL, arow, acol);
    HK_CU_TRY(cudaGetLastError());

    if (capn > FSAI_LIST)
        HK_TRY(hk_cu_malloc((void **)&scr, (size_t)batch * 3 * (size_t)capn * sizeof *scr));
    len = cnt; /* n entries: the scalar row lengths */
    for (int pass = 0; pass < 2; pass++) {
        if (capn <= FSAI_LIST && nn > 0) {
            int64_t blocks = (nn + FSAI_PWARPS - 1) / FSAI_PWARPS;
            if (blocks > (1 << 20)) blocks = 1 << 20;
            fsai_sets_warp_kernel<<<(unsigned)blocks, 32 * FSAI_PWARPS, 0, hk_cu.stream>>>(
                arow, acol, nn, k, capn, cap, b, pass, len, S->rowptr, S->colind, dfault);
            HK_CU_TRY(cudaGetLastError());
        }
        for (int64_t I0 = 0; capn > FSAI_LIST && I0 < nn; I0 += batch) {
            const int64_t nb = nn - I0 < batch ? nn - I0 : batch;
            fsai_sets_kernel<<<(unsigned)((nb + 127) / 128), 128, 0, hk_cu.stream>>>(
                arow, acol, I0, nb, k, capn, cap, b, scr, pass, len, S->rowptr, S->colind,
                dfault);
            HK_CU_TRY(cudaGetLastError());
        }
        if (pass == 0) {
            HK_TRY(fault_read(dfault, fault));
            if (fault->row >= 0) goto fail;
            /* the graph's rowptr first, then its columns once their number is known */
            int64_t *rp = NULL;
            HK_TRY(hk_cu_malloc((void **)&rp, (size_t)(n + 1) * sizeof *rp));
            ierr = scan_rowptr(len, n, rp, &nnz);
            if (!ierr) ierr = hk_graph_alloc(K->be, n, n, nnz, S);
            if (!ierr) ierr = K->be->copy(S->rowptr, rp, (size_t)(n + 1) * sizeof *rp);
            cudaFree(rp);
            if (ierr) goto fail;
        }
    }
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
fail:
    if (ierr || fault->row >= 0) hk_graph_free(S);
    cudaFree(dfault);
    cudaFree(dg);
    cudaFree(dgb);
    cudaFree(cnt);
    cudaFree(arow);
    cudaFree(acol);
    cudaFree(scr);
    return ierr;
}

/* ---- fsai_factor ------------------------------------------------------------------------- *
 * A unit of work is one row (its own m x m system), or one node whose rows share a factor
 * (flag from fsai_shared_kernel, the rule of node_shares_factor in solver/cpu/cpu_fsai.c): the
 * node's last row's system is gathered and factored once and the node's rows are solved with
 * the leading part of it, FSAI_NRHS rows at a time. A unit's work: M (ld x ld, column-major: L
 * in the lower triangle, A[P,P] in the upper), dgl (ld), W (FSAI_NRHS x ld: the rows' w;
 * before the solve the block kernel keeps P there). The post-filtration sums t go to the
 * rows' places in wall, which their final values overwrite. */

/* The pattern sizes of the unit's rows r < nr (srow: the unit's first row), 0 for r >= nr. */
__device__ __forceinline__ void rows_m(int (&mr)[FSAI_NRHS], const int64_t *srow, int nr)
{
#pragma unroll
    for (int r = 0; r < FSAI_NRHS; r++)
        mr[r] = r < nr ? (int)(srow[r + 1] - srow[r]) : 0;
}

/* Steps 3-4 and the kept flags of step 5 for the unit's rows r < nr, by one warp: row r's
 * pattern is the first mr[r] entries of the factored one. The rows' backward solves run side
 * by side (each row's entries receive the reference's updates in its order). */
__device__ void fsai_solve_warp(const double *M, int ld, double *W, const int64_t *srow, int nr,
                                double delta, unsigned char *keep)
{
    const int lane = threadIdx.x & 31;
    int mr[FSAI_NRHS];
    rows_m(mr, srow, nr);
    int mmax = 0;
#pragma unroll
    for (int r = 0; r < FSAI_NRHS; r++)
        mmax = mr[r] > mmax ? mr[r] : mmax;
    for (int e = lane; e < nr * ld; e += 32)
        W[e] = 0;
    __syncwarp();
    /* 3. solve with e_m: w_{m-1} = 1 / L_{m-1,m-1}, then backward by columns */
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < FSAI_NRHS; r++)
            if (r < nr) W[r * ld + mr[r] - 1] = 1 / M[(mr[r] - 1) * ld + (mr[r] - 1)];
    }
    __syncwarp();
    for (int kk = mmax - 1; kk >= 0; kk--) {
        const double d = M[kk * ld + kk];
        double wk[FSAI_NRHS];
#pragma unroll
        for (int r = 0; r < FSAI_NRHS; r++)
            wk[r] = kk < mr[r] ? W[r * ld + kk] / d : 0.0;
        __syncwarp(); /* every lane has read w_kk before it is replaced */
#pragma unroll
        for (int r = 0; r < FSAI_NRHS; r++) {
            if (kk >= mr[r]) continue; /* row r's pattern ends before kk (or r >= nr) */
            if (lane == 0) W[r * ld + kk] = wk[r];
            for (int a = lane; a < kk; a += 32)
                W[r * ld + a] = sub_(W[r * ld + a], mul_(M[a * ld + kk], wk[r]));
        }
        __syncwarp();
    }
    /* 4. scaling; the norms by lanes r, each in order */
    double s[FSAI_NRHS];
#pragma unroll
    for (int r = 0; r < FSAI_NRHS; r++)
        s[r] = r < nr ? 1 / sqrt(W[r * ld + mr[r] - 1]) : 0.0;
    __syncwarp();
#pragma unroll
    for (int r = 0; r < FSAI_NRHS; r++)
        for (int a = lane; a < mr[r]; a += 32)
            W[r * ld + a] = mul_(W[r * ld + a], s[r]);
    __syncwarp();
    double nrm = 0;
#pragma unroll
    for (int r = 0; r < FSAI_NRHS; r++)
        if (lane == r)
            for (int a = 0; a < mr[r]; a++)
                nrm = add_(nrm, mul_(W[r * ld + a], W[r * ld + a]));
    nrm = sqrt(nrm);
    /* 5. post-filtration: the kept entries */
#pragma unroll
    for (int r = 0; r < FSAI_NRHS; r++) {
        const double lim = mul_(delta, __shfl_sync(0xffffffffu, nrm, r));
        unsigned char *kp = keep + (r < nr ? srow[r] : 0);
        for (int a = lane; a < mr[r]; a += 32)
            kp[a] = a == mr[r] - 1 || fabs(W[r * ld + a]) > lim;
    }
}

/* t_a = sum over dropped b (in order) of A_ab w_b for the dropped entries a of the unit's rows,
 * entries first, first + stride, .. of each row, into wall (A_ab from the upper triangle, the
 * diagonal from dgl). */
__device__ void fsai_filter_t(const double *M, int ld, const double *dgl, const double *W,
                              const int64_t *srow, int nr, const unsigned char *keep, double *wall,
                              int first, int stride)
{
    int mr[FSAI_NRHS];
    rows_m(mr, srow, nr);
#pragma unroll
    for (int r = 0; r < FSAI_NRHS; r++) {
        if (r >= nr) continue;
        const unsigned char *kp = keep + srow[r];
        const double *w = W + r * ld;
        for (int a = first; a < mr[r]; a += stride) {
            if (kp[a]) continue;
            double ta = 0;
            for (int bb = 0; bb < mr[r]; bb++) {
                if (kp[bb]) continue;
                const int lo = a < bb ? a : bb, hi = a < bb ? bb : a;
                const double ab = a == bb ? dgl[a] : M[hi * ld + lo];
                ta = add_(ta, mul_(ab, w[bb]));
            }
            wall[srow[r] + a] = ta;
        }
    }
}

/* e = sum of w_a t_a over dropped a, in order (lane r for row r); the filtered rows to wall
 * (one warp). */
__device__ void fsai_finish_warp(const double *W, int ld, const int64_t *srow, int nr,
                                 const unsigned char *keep, double *wall)
{
    const int lane = threadIdx.x & 31;
    int mr[FSAI_NRHS];
    rows_m(mr, srow, nr);
    double e = 0;
#pragma unroll
    for (int r = 0; r < FSAI_NRHS; r++)
        if (lane == r)
            for (int a = 0; a < mr[r]; a++)
                if (!keep[srow[r] + a]) e = add_(e, mul_(W[r * ld + a], wall[srow[r] + a]));
    __syncwarp(); /* the t in wall are read before they are replaced */
#pragma unroll
    for (int r = 0; r < FSAI_NRHS; r++) {
        const double sc = 1 / sqrt(add_(1.0, __shfl_sync(0xffffffffu, e, r)));
        if (r >= nr) continue;
        const unsigned char *kp = keep + srow[r];
        double *out = wall + srow[r];
        for (int a = lane; a < mr[r]; a += 32)
            out[a] = kp[a] ? mul_(W[r * ld + a], sc) : 0.0;
    }
}

/* Steps 3-5 of the unit's rows r < nr by one warp. */
__device__ void fsai_tail_warp(const double *M, int ld, const double *dgl, double *W,
                               const int64_t *srow, int nr, double delta, double *wall,
                               unsigned char *keep)
{
    fsai_solve_warp(M, ld, W, srow, nr, delta, keep);
    __syncwarp();
    fsai_filter_t(M, ld, dgl, W, srow, nr, keep, wall, threadIdx.x & 31, 32);
    __syncwarp();
    fsai_finish_warp(W, ld, srow, nr, keep, wall);
}

/* Step 1 for row P[a] of the pattern P (m entries, sorted) by the lanes of one warp: its
 * entries in the columns of P go to column a of M (m x m), found by binary search in P. */
__device__ __forceinline__ void fsai_gather_row(const int64_t *krow, const int32_t *kcol,
                                                const double *kval, int br, const int32_t *P,
                                                int m, int a, int lane, double *M)
{
    const int64_t bi = P[a] / br, r = P[a] % br;
    const int64_t q0 = krow[bi], ne = (krow[bi + 1] - q0) * br;
    for (int64_t e = lane; e < ne; e += 32) {
        const int64_t q = q0 + e / br;
        const int c = (int)(e % br);
        const int64_t j = (int64_t)kcol[q] * br + c;
        const int lo = (int)hk_cu_lower_bound(P, 0, m, j);
        if (lo < m && P[lo] == j) M[lo * m + a] = kval[(q * br + r) * br + c];
    }
}

/* The reference's symmetry test of the entries x = M_ba, y = M_ab with diagonals da, db:
 * |x - y| > 1e-10 (max(|x|, |y|) + sqrt(|da db|)), rounded as on the CPU. */
__device__ __forceinline__ bool fsai_asym(double x, double y, double da, double db)
{
    return fabs(sub_(x, y)) > mul_(1e-10, add_(fmax(fabs(x), fabs(y)), sqrt(fabs(mul_(da, db)))));
}

/* Steps 1-2 for the pattern P (m entries, global) by one warp: M (m x m) receives A[P,P] in its
 * upper triangle and L in its lower, dgl the diagonal of A[P,P]. Returns a fault reason or 0,
 * the same in every lane. */
__device__ __forceinline__ int fsai_chol_warp(const int64_t *krow, const int32_t *kcol,
                                              const double *kval, int br, const int32_t *P, int m,
                                              double *M, double *dgl)
{
    const int lane = threadIdx.x & 31;
    for (int e = lane; e < m * m; e += 32)
        M[e] = 0;
    __syncwarp();
    /* 1. gather: lanes over the entries of row P[a] */
    for (int a = 0; a < m; a++)
        fsai_gather_row(krow, kcol, kval, br, P, m, a, lane, M);
    __syncwarp();
    for (int a = lane; a < m; a += 32)
        dgl[a] = M[a * m + a];
    __syncwarp();
    int asym = 0;
    for (int a = lane; a < m; a += 32)
        for (int bb = a + 1; bb < m && !asym; bb++) {
            if (fsai_asym(M[bb * m + a], M[a * m + bb], dgl[a], dgl[bb])) asym = 1;
        }
    if (__any_sync(0xffffffffu, asym)) return HK_FAULT_ASYMMETRIC;
    /* 2. Cholesky, left-looking: lanes over the rows of column j */
    for (int j = 0; j < m; j++) {
        double d = M[j * m + j];
        for (int q = 0; q < j; q++)
            d = sub_(d, mul_(M[q * m + j], M[q * m + j]));
        if (!(d > 0) || !isfinite(d)) return HK_FAULT_NOT_SPD; /* the same d in every lane */
        d = sqrt(d);
        __syncwarp();
        if (lane == 0) M[j * m + j] = d;
        for (int r = j + 1 + lane; r < m; r += 32) {
            double s = M[j * m + r];
            for (int q = 0; q < j; q++)
                s = sub_(s, mul_(M[q * m + r], M[q * m + j]));
            M[j * m + r] = s / d;
        }
        __syncwarp();
    }
    return 0;
}

/* Row i alone by one warp (srow + i: its place in wall and keep); work = m*m + (1 +
 * FSAI_NRHS) m doubles. */
__device__ __forceinline__ void fsai_row_warp(const int64_t *krow, const int32_t *kcol,
                                              const double *kval, int br, int64_t i,
                                              const int64_t *srow, const int32_t *scol,
                                              double delta, double *work, double *wall,
                                              unsigned char *keep, ull *fault)
{
    const int64_t p0 = srow[i];
    const int m = (int)(srow[i + 1] - p0);
    if (m < 1 || scol[p0 + m - 1] != i) { /* the diagonal must close the row */
        if ((threadIdx.x & 31) == 0) report(fault, i, HK_FAULT_NOT_SPD);
        return;
    }
    double *dgl = work + m * m;
    const int why = fsai_chol_warp(krow, kcol, kval, br, scol + p0, m, work, dgl);
    if (why) {
        if ((threadIdx.x & 31) == 0) report(fault, i, why);
        return;
    }
    fsai_tail_warp(work, m, dgl, dgl + m, srow + i, 1, delta, wall, keep);
}

/* Node I's rows by one warp: one factor on the last row's pattern, its rows' solves FSAI_NRHS
 * at a time; if the factor fails, row by row as the reference does, which names the first
 * failing row. work = ml*ml + (1 + FSAI_NRHS) ml doubles. */
__device__ void fsai_node_warp(const int64_t *krow, const int32_t *kcol, const double *kval, int br,
                               int64_t I, const int64_t *srow, const int32_t *scol, double delta,
                               double *work, double *wall, unsigned char *keep, ull *fault)
{
    const int64_t i0 = I * br, pl = srow[i0 + br - 1];
    const int ml = (int)(srow[i0 + br] - pl);
    double *dgl = work + ml * ml;
    if (!fsai_chol_warp(krow, kcol, kval, br, scol + pl, ml, work, dgl)) {
        for (int r0 = 0; r0 < br; r0 += FSAI_NRHS) {
            const int nr = br - r0 < FSAI_NRHS ? br - r0 : FSAI_NRHS;
            fsai_tail_warp(work, ml, dgl, dgl + ml, srow + i0 + r0, nr, delta, wall, keep);
            __syncwarp();
        }
        return;
    }
    for (int r = 0; r < br; r++) {
        __syncwarp();
        fsai_row_warp(krow, kcol, kval, br, i0 + r, srow, scol, delta, work, wall, keep, fault);
    }
}

/* Steps 1-2 for the pattern Pg (m entries, global) by the whole thread block: M (m x m) and
 * dgl as in fsai_chol_warp, P (m int32, shared) the pattern. Returns a fault reason or 0, the
 * same in every thread; ends with a barrier. */
__device__ __forceinline__ int fsai_chol_block(const int64_t *krow, const int32_t *kcol,
                                               const double *kval, int br, const int32_t *Pg, int m,
                                               double *M, double *dgl, int32_t *P)
{
    const int tid = threadIdx.x, lane = tid & 31, wib = tid >> 5;
    const int nt = 32 * FSAI_BLOCK_WARPS;
    for (int a = tid; a < m; a += nt)
        P[a] = Pg[a];
    for (int e = tid; e < m * m; e += nt)
        M[e] = 0;
    __syncthreads();
    /* 1. gather: warps over the rows P[a], lanes over their entries */
    for (int a = wib; a < m; a += FSAI_BLOCK_WARPS)
        fsai_gather_row(krow, kcol, kval, br, P, m, a, lane, M);
    __syncthreads();
    for (int a = tid; a < m; a += nt)
        dgl[a] = M[a * m + a];
    __syncthreads();
    int asym = 0;
    for (int e = tid; e < m * m; e += nt) {
        const int a = e % m, bb = e / m;
        if (bb <= a) continue;
        if (fsai_asym(M[bb * m + a], M[a * m + bb], dgl[a], dgl[bb])) asym = 1;
    }
    if (__syncthreads_or(asym)) return HK_FAULT_ASYMMETRIC;
    /* 2. Cholesky, right-looking: entry (r, c) gets its updates in the order q = 0 .. c-1
     * and is then divided by the pivot, as in the left-looking reference */
    for (int j = 0; j < m; j++) {
        double d = M[j * m + j];        /* final: the previous step ended with a barrier */
        if (!(d > 0) || !isfinite(d)) { /* the same d in every thread */
            __syncthreads();
            return HK_FAULT_NOT_SPD;
        }
        d = sqrt(d);
        for (int r = j + 1 + tid; r < m; r += nt)
            M[j * m + r] = M[j * m + r] / d;
        __syncthreads(); /* column j is final; every thread has read the pivot */
        if (tid == 0) M[j * m + j] = d;
        double lr[FSAI_MID / 32];
#pragma unroll
        for (int t = 0; t < FSAI_MID / 32; t++) {
            const int r = lane + 32 * t;
            lr[t] = r > j && r < m ? M[j * m + r] : 0.0;
        }
        for (int c = j + 1 + wib; c < m; c += FSAI_BLOCK_WARPS) {
            const double lc = M[j * m + c];
#pragma unroll
            for (int t = 0; t < FSAI_MID / 32; t++) {
                const int r = lane + 32 * t;
                if (r >= c && r < m) M[c * m + r] = sub_(M[c * m + r], mul_(lr[t], lc));
            }
        }
        __syncthreads();
    }
    return 0;
}

/* Steps 3-5 of the unit's rows r < nr: the solves by the first warp, the filtration sums by
 * the block. Ends with a barrier. */
__device__ void fsai_tail_block(const double *M, int ld, const double *dgl, double *W,
                                const int64_t *srow, int nr, double delta, double *wall,
                                unsigned char *keep)
{
    const int wib = threadIdx.x >> 5;
    if (wib == 0) fsai_solve_warp(M, ld, W, srow, nr, delta, keep);
    __syncthreads();
    fsai_filter_t(M, ld, dgl, W, srow, nr, keep, wall, threadIdx.x, 32 * FSAI_BLOCK_WARPS);
    __syncthreads();
    if (wib == 0) fsai_finish_warp(W, ld, srow, nr, keep, wall);
    __syncthreads();
}

/* Row i alone by the thread block, work in shm (m*m + (1 + FSAI_NRHS) m doubles). */
__device__ __forceinline__ void fsai_row_block(const int64_t *krow, const int32_t *kcol,
                                               const double *kval, int br, int64_t i,
                                               const int64_t *srow, const int32_t *scol,
                                               double delta, double *shm, double *wall,
                                               unsigned char *keep, ull *fault)
{
    const int64_t p0 = srow[i];
    const int m = (int)(srow[i + 1] - p0);
    if (scol[p0 + m - 1] != i) { /* the diagonal must close the row (m >= 1 here) */
        if (threadIdx.x == 0) report(fault, i, HK_FAULT_NOT_SPD);
        return;
    }
    double *dgl = shm + m * m, *W = dgl + m;
    const int why = fsai_chol_block(krow, kcol, kval, br, scol + p0, m, shm, dgl, (int32_t *)W);
    if (why) {
        if (threadIdx.x == 0) report(fault, i, why);
        return;
    }
    fsai_tail_block(shm, m, dgl, W, srow + i, 1, delta, wall, keep);
}

/* Units whose size (the row's m; a node's: its last row's) is in mlo < m <= mhi, one thread
 * block each, the blocks over the nodes; dynamic shared: m*m + (1 + FSAI_NRHS) m doubles.
 * Steps 1-2 by the whole block, the solves by its first warp, the filtration sums by the
 * block. */
__global__ void __launch_bounds__(32 * FSAI_BLOCK_WARPS)
    fsai_factor_block_kernel(const int64_t *krow, const int32_t *kcol, const double *kval, int br,
                             const int64_t *srow, const int32_t *scol, const unsigned char *shared,
                             int64_t nn, double delta, double *wall, unsigned char *keep, int mlo,
                             int mhi, ull *fault)
{
    extern __shared__ double shm[];
    for (int64_t I = blockIdx.x; I < nn; I += gridDim.x) {
        const int64_t i0 = I * br;
        if (!shared || !shared[I]) { /* the node's rows one by one */
            for (int r = 0; r < br; r++) {
                const int64_t m = srow[i0 + r + 1] - srow[i0 + r];
                if (m <= mlo || m > mhi) continue; /* the same in the whole block */
                fsai_row_block(krow, kcol, kval, br, i0 + r, srow, scol, delta, shm, wall, keep,
                               fault);
                __syncthreads();
            }
            continue;
        }
        const int64_t pl = srow[i0 + br - 1];
        if (srow[i0 + br] - pl <= mlo || srow[i0 + br] - pl > mhi) continue;
        const int m = (int)(srow[i0 + br] - pl);
        double *dgl = shm + m * m, *W = dgl + m;
        if (!fsai_chol_block(krow, kcol, kval, br, scol + pl, m, shm, dgl, (int32_t *)W)) {
            for (int r0 = 0; r0 < br; r0 += FSAI_NRHS) {
                const int nr = br - r0 < FSAI_NRHS ? br - r0 : FSAI_NRHS;
                fsai_tail_block(shm, m, dgl, W, srow + i0 + r0, nr, delta, wall, keep);
            }
            continue;
        }
        for (int r = 0; r < br; r++) { /* row by row: names the first failing row */
            fsai_row_block(krow, kcol, kval, br, i0 + r, srow, scol, delta, shm, wall, keep, fault);
            __syncthreads();
        }
    }
}

/* small = 1: units with m <= FSAI_SMALL, work in shared memory; small = 0: units with m > mbig,
 * work in gwork (slab doubles per warp). The warps over the nodes. */
template <int SMALL>
__global__ void __launch_bounds__(32 * FSAI_WARPS)
    fsai_factor_kernel(const int64_t *krow, const int32_t *kcol, const double *kval, int br,
                       const int64_t *srow, const int32_t *scol, const unsigned char *shared,
                       int64_t nn, double delta, double *wall, unsigned char *keep, double *gwork,
                       int64_t slab, int64_t mbig, ull *fault)
{
    __shared__ double sh[SMALL ? FSAI_WARPS : 1]
                        [SMALL ? FSAI_SMALL * FSAI_SMALL + (1 + FSAI_NRHS) * FSAI_SMALL : 1];
    const int wib = threadIdx.x >> 5;
    const int64_t gw = (int64_t)blockIdx.x * FSAI_WARPS + wib,
                  nw = (int64_t)gridDim.x * FSAI_WARPS;
    double *work = SMALL ? sh[wib] : gwork + gw * slab;
    for (int64_t I = gw; I < nn; I += nw) {
        const int64_t i0 = I * br;
        if (shared && shared[I]) {
            const int64_t m = srow[i0 + br] - srow[i0 + br - 1];
            if (SMALL ? m <= FSAI_SMALL : m > mbig)
                fsai_node_warp(krow, kcol, kval, br, I, srow, scol, delta, work, wall, keep, fault);
        } else
            for (int r = 0; r < br; r++) { /* the node's rows one by one */
                const int64_t m = srow[i0 + r + 1] - srow[i0 + r];
                if (SMALL ? m > FSAI_SMALL : m <= mbig) continue;
                fsai_row_warp(krow, kcol, kval, br, i0 + r, srow, scol, delta, work, wall, keep,
                              fault);
                __syncwarp();
            }
        __syncwarp();
    }
}

/* shared[I] = whether node I's rows share one factor (node_shares_factor of the reference). */
__global__ void fsai_shared_kernel(const int64_t *srow, const int32_t *scol, int64_t nn, int br,
                                   unsigned char *shared)
{
    for (int64_t I = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; I < nn;
         I += (int64_t)gridDim.x * blockDim.x) {
        const int64_t last = I * br + br - 1, pl = srow[last], ml = srow[last + 1] - pl;
        int ok = 1;
        for (int r = 0; r < br && ok; r++) {
            const int64_t i = I * br + r, p0 = srow[i], m = srow[i + 1] - p0;
            if (m < 1 || m > ml || scol[p0 + m - 1] != i)
                ok = 0;
            else if (r < br - 1)
                for (int64_t a = 0; a < m && ok; a++)
                    ok = scol[p0 + a] == scol[pl + a];
        }
        shared[I] = (unsigned char)ok;
    }
}

__global__ void fsai_maxlen_kernel(const int64_t *srow, int64_t n, ull *mmax)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        atomicMax(mmax, (ull)(srow[i + 1] - srow[i]));
}

__global__ void fsai_count_kernel(const int64_t *srow, const unsigned char *keep, int64_t n,
                                  int64_t *cnt)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = 0;
        for (int64_t p = srow[i]; p < srow[i + 1]; p++)
            c += keep[p];
        cnt[i] = c;
    }
}

__global__ void fsai_compact_kernel(const int64_t *srow, const int32_t *scol,
                                    const unsigned char *keep, const double *wall, int64_t n,
                                    const int64_t *grow, int32_t *gcol, double *gval)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t q = grow[i];
        for (int64_t p = srow[i]; p < srow[i + 1]; p++)
            if (keep[p]) {
                gcol[q] = scol[p];
                gval[q++] = wall[p];
            }
    }
}

extern "C" int hk_cu_fsai_factor(const hk_bmat *K, const hk_graph *S, double delta, hk_bmat *G,
                                 hk_setup_fault *fault)
{
    int ierr = 0;
    memset(G, 0, sizeof *G);
    fault->row = -1;
    fault->reason = HK_FAULT_NONE;
    const int64_t n = S->n;
    HK_CHECK(K->br == K->bc && n == K->nbrows * K->br, HK_ERR_ARG,
             "fsai_factor: the pattern has %lld rows, the matrix %lld", (long long)n,
             (long long)(K->nbrows * K->br));
    ull *dfault = NULL, *dmax = NULL, hmax = 0;
    double *wall = NULL, *gwork = NULL;
    unsigned char *keep = NULL, *shared = NULL;
    int64_t *cnt = NULL, nnz = 0;
    const int br = K->br;
    HK_CALL(fault_begin(&dfault));
    HK_TRY(hk_cu_malloc((void **)&dmax, sizeof *dmax));
    HK_CU_TRY(cudaMemsetAsync(dmax, 0, sizeof *dmax, hk_cu.stream));
    HK_TRY(hk_cu_malloc((void **)&wall, (size_t)(S->nnz ? S->nnz : 1) * sizeof *wall));
    HK_TRY(hk_cu_malloc((void **)&keep, (size_t)(S->nnz ? S->nnz : 1)));
    HK_TRY(hk_cu_malloc((void **)&cnt, (size_t)(n ? n : 1) * sizeof *cnt));
    if (n > 0) {
        fsai_maxlen_kernel<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(S->rowptr, n, dmax);
        HK_CU_TRY(cudaGetLastError());
        HK_CU_TRY(cudaMemcpyAsync(&hmax, dmax, sizeof hmax, cudaMemcpyDeviceToHost, hk_cu.stream));
        if (br > 1) { /* the nodes whose rows share one factor */
            HK_TRY(hk_cu_malloc((void **)&shared, (size_t)(n / br)));
            fsai_shared_kernel<<<hk_cu_grid(n / br), HK_CU_BLOCK, 0, hk_cu.stream>>>(
                S->rowptr, S->colind, n / br, br, shared);
            HK_CU_TRY(cudaGetLastError());
        }
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        HK_TRY_CHECK(hmax <= 16384, HK_ERR_UNSUPPORTED,
                     "fsai_factor on cuda: a pattern row has %llu entries, more than 16384; "
                     "raise pc.fsai.tau or lower pc.fsai.k",
                     hmax);
        /* units (rows, or nodes sharing a factor) of up to FSAI_SMALL entries: a warp each,
         * system in shared memory */
        const int64_t nn = n / br;
        int64_t nb = (nn + FSAI_WARPS - 1) / FSAI_WARPS;
        if (nb > (1 << 20)) nb = 1 << 20;
        fsai_factor_kernel<1><<<(unsigned)nb, 32 * FSAI_WARPS, 0, hk_cu.stream>>>(
            K->rowptr, K->colind, K->val, br, S->rowptr, S->colind, shared, nn, delta, wall, keep,
            NULL, 0, 0, dfault);
        HK_CU_TRY(cudaGetLastError());
        /* mid-size units: a thread block each, by size class so that small systems share an
         * SM */
        int optin = 0, dev = 0, mbig = FSAI_SMALL;
        HK_CU_TRY(cudaGetDevice(&dev));
        HK_CU_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        /* 116: two blocks per SM of 228 KB; 96: three; 64: six (1 KB per block reserved) */
        static const int fsai_class[] = {48, 64, 80, 96, 116, 128, 144, FSAI_MID};
        for (int c = 0; c < 8 && (ull)mbig < hmax; c++) {
            const int mhi = fsai_class[c];
            const size_t bytes =
                ((size_t)mhi * mhi + (1 + FSAI_NRHS) * (size_t)mhi) * sizeof(double);
            if (bytes > (size_t)optin) break; /* larger rows take the global slab */
            HK_CU_TRY(cudaFuncSetAttribute(fsai_factor_block_kernel,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
            const int64_t blocks = nn < 65536 ? nn : 65536;
            fsai_factor_block_kernel<<<(unsigned)blocks, 32 * FSAI_BLOCK_WARPS, bytes,
                                       hk_cu.stream>>>(K->rowptr, K->colind, K->val, br, S->rowptr,
                                                       S->colind, shared, nn, delta, wall, keep,
                                                       mbig, mhi, dfault);
            HK_CU_TRY(cudaGetLastError());
            mbig = mhi;
        }
        if (hmax > (ull)mbig) {
            /* larger units: a global slab per warp, as many warps as FSAI_SLAB_BYTES holds */
            const int64_t slab = (int64_t)hmax * (int64_t)hmax + (1 + FSAI_NRHS) * (int64_t)hmax;
            int64_t nw = (int64_t)(FSAI_SLAB_BYTES / ((size_t)slab * sizeof(double)));
            if (nw > 8192) nw = 8192;
            if (nw < FSAI_WARPS) nw = FSAI_WARPS;
            const int64_t blocks = nw / FSAI_WARPS;
            HK_TRY(hk_cu_malloc((void **)&gwork,
                                (size_t)blocks * FSAI_WARPS * (size_t)slab * sizeof(double)));
            fsai_factor_kernel<0><<<(unsigned)blocks, 32 * FSAI_WARPS, 0, hk_cu.stream>>>(
                K->rowptr, K->colind, K->val, br, S->rowptr, S->colind, shared, nn, delta, wall,
                keep, gwork, slab, mbig, dfault);
            HK_CU_TRY(cudaGetLastError());
        }
    }
    HK_TRY(fault_read(dfault, fault));
    if (fault->row >= 0) goto fail;
    {
        int64_t *grow = NULL;
        HK_TRY(hk_cu_malloc((void **)&grow, (size_t)(n + 1) * sizeof *grow));
        if (n > 0) {
            fsai_count_kernel<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(S->rowptr, keep, n,
                                                                                cnt);
            const cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess) ierr = hk_cu_fail(e, "fsai_count_kernel", __FILE__, __LINE__);
        }
        if (!ierr) ierr = scan_rowptr(cnt, n, grow, &nnz);
        if (!ierr) ierr = hk_bmat_alloc(K->be, 1, 1, n, n, nnz, G);
        if (!ierr) ierr = K->be->copy(G->rowptr, grow, (size_t)(n + 1) * sizeof *grow);
        cudaFree(grow);
        if (ierr) goto fail;
    }
    if (n > 0) {
        fsai_compact_kernel<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            S->rowptr, S->colind, keep, wall, n, G->rowptr, G->colind, G->val);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
fail:
    if (ierr || fault->row >= 0) hk_bmat_free(G);
    cudaFree(dfault);
    cudaFree(dmax);
    cudaFree(wall);
    cudaFree(gwork);
    cudaFree(keep);
    cudaFree(shared);
    cudaFree(cnt);
    return ierr;
}

/* ---- sai_pattern, sai_factor ------------------------------------------------------------
 * The rules of solver/cpu/cpu_fsai.c: the pattern one thread per column; the least-squares
 * problems one warp per column: the rows I collected in order of first appearance (lanes
 * over the entries of a row of A^T, new rows appended by ballot), A(I,J) gathered, Householder
 * QR or classical Gram-Schmidt (the thesis's Fig. 5.4, R packed by columns) with every sum
 * over rows in the warp order of sai_sum (32 strided partial sums, then a butterfly), which
 * the CPU reference repeats. Problems with |I| <= SAI_SR, |J| <= SAI_SC and |I||J| <= SAI_SA
 * keep their work in shared memory; the others a global slab per warp. */

#define SAI_SR 256  /* rows of a problem in shared memory */
#define SAI_SC 64   /* columns of a problem in shared memory */
#define SAI_SA 2048 /* entries of A(I,J) in shared memory */
#define SAI_LIST_MAX 8192 /* max_rows the size kernel can take (its row list is in shared) */

/* amax[i] = max |a_ij| of scalar row i (of the br x br block matrix rowptr/val), or with
 * br = 1 and the transpose's arrays the maximum of column i. */
__global__ void sai_amax_kernel(const int64_t *rowptr, const double *val, int br, int64_t n,
                                double *amax)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t bi = i / br, r = i % br;
        double a = 0;
        for (int64_t q = rowptr[bi]; q < rowptr[bi + 1]; q++)
            for (int c = 0; c < br; c++) {
                const double v = fabs(val[(q * br + r) * br + c]);
                if (v > a) a = v;
            }
        amax[i] = a;
    }
}

__global__ void sai_pattern_kernel(const int64_t *trow, const int32_t *tcol, const double *tval,
                                   int64_t n, double tau, const double *amax, int colmax, int fill,
                                   int64_t *cnt, const int64_t *srow, int32_t *scol)
{
    const double lim = sub_(1.0, tau);
    for (int64_t kk = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; kk < n;
         kk += (int64_t)gridDim.x * blockDim.x) {
        int64_t c = 0;
        int32_t *out = fill ? scol + srow[kk] : NULL;
        int diag = 0;
        for (int64_t p = trow[kk]; p < trow[kk + 1]; p++) {
            const int32_t i = tcol[p];
            if (i > kk && !diag) {
                if (fill) out[c] = (int32_t)kk;
                c++;
                diag = 1;
            }
            if (i == kk || fabs(tval[p]) > mul_(lim, amax[colmax ? kk : i])) {
                if (fill) out[c] = i;
                c++;
                if (i == kk) diag = 1;
            }
        }
        if (!diag) {
            if (fill) out[c] = (int32_t)kk;
            c++;
        }
        if (!fill) cnt[kk] = c;
    }
}

extern "C" int hk_cu_sai_pattern(const hk_bmat *K, const hk_bmat *Kt, double tau, int colmax,
                                 hk_graph *St)
{
    int ierr = 0;
    memset(St, 0, sizeof *St);
    HK_CHECK(K->br == K->bc && Kt->br == 1 && Kt->bc == 1 && Kt->nbrows == K->nbcols * K->bc &&
                 K->nbrows * K->br == K->nbcols * K->bc,
             HK_ERR_ARG, "sai_pattern: K must be square and Kt its scalar transpose");
    const int64_t n = K->nbrows * K->br;
    double *amax = NULL;
    int64_t *cnt = NULL, *rp = NULL, nnz = 0;
    HK_TRY(hk_cu_malloc((void **)&amax, (size_t)(n ? n : 1) * sizeof *amax));
    HK_TRY(hk_cu_malloc((void **)&cnt, (size_t)(n ? n : 1) * sizeof *cnt));
    HK_TRY(hk_cu_malloc((void **)&rp, (size_t)(n + 1) * sizeof *rp));
    if (n > 0) {
        if (colmax) /* column k of A = row k of Kt */
            sai_amax_kernel<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(Kt->rowptr, Kt->val, 1,
                                                                             n, amax);
        else
            sai_amax_kernel<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(K->rowptr, K->val,
                                                                             K->br, n, amax);
        HK_CU_TRY(cudaGetLastError());
        sai_pattern_kernel<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            Kt->rowptr, Kt->colind, Kt->val, n, tau, amax, colmax, 0, cnt, NULL, NULL);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(scan_rowptr(cnt, n, rp, &nnz));
    HK_TRY(hk_graph_alloc(K->be, n, n, nnz, St));
    HK_TRY(K->be->copy(St->rowptr, rp, (size_t)(n + 1) * sizeof *rp));
    if (n > 0) {
        sai_pattern_kernel<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            Kt->rowptr, Kt->colind, Kt->val, n, tau, amax, colmax, 1, NULL, St->rowptr, St->colind);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
fail:
    if (ierr) hk_graph_free(St);
    cudaFree(amax);
    cudaFree(cnt);
    cudaFree(rp);
    return ierr;
}

/* The rows I of column k's problem (J = scol[0..n2)) into rows, in order of first appearance;
 * returns |I|, or -1 when it exceeds max_rows. One warp, the result in every lane. */
__device__ int sai_collect(const int64_t *trow, const int32_t *tcol, const int32_t *J, int n2,
                           int32_t *rows, int64_t max_rows)
{
    const int lane = threadIdx.x & 31;
    const unsigned lt = (1u << lane) - 1u;
    int n1 = 0;
    for (int b = 0; b < n2; b++) {
        const int32_t j = J[b];
        const int64_t p0 = trow[j], p1 = trow[j + 1];
        for (int64_t pb = p0; pb < p1; pb += 32) {
            const int64_t p = pb + lane;
            int isnew = p < p1; /* the columns of a row are distinct: no duplicates in a batch */
            const int32_t i = isnew ? tcol[p] : -1;
            for (int x = 0; x < n1 && isnew; x++)
                if (rows[x] == i) isnew = 0;
            const unsigned bal = __ballot_sync(0xffffffffu, isnew);
            if (n1 + __popc(bal) > max_rows) return -1;
            if (isnew) rows[n1 + __popc(bal & lt)] = i;
            n1 += __popc(bal);
            __syncwarp();
        }
    }
    return n1;
}

/* Sum of x_i y_i over i = i0 .. m-1 in the warp order (every lane gets it). */
__device__ double sai_wsum(const double *x, const double *y, int i0, int m)
{
    double acc = 0;
    for (int i = i0 + (threadIdx.x & 31); i < m; i += 32)
        acc = add_(acc, mul_(x[i], y[i]));
    for (int o = 16; o > 0; o >>= 1)
        acc = add_(acc, __shfl_xor_sync(0xffffffffu, acc, o));
    return acc;
}

/* Column k's sizes: nrow[k] = |I| (-1 on a fault), and the largest |I|, |I||J| and |J| seen. */
__global__ void sai_size_kernel(const int64_t *trow, const int32_t *tcol, const int64_t *srow,
                                const int32_t *scol, int64_t n, int64_t max_rows, int64_t max_cols,
                                int32_t *nrow, ull *maxr, ull *maxa, ull *maxc, ull *fault)
{
    extern __shared__ int32_t list[];
    const int lane = threadIdx.x & 31;
    for (int64_t k = blockIdx.x; k < n; k += gridDim.x) {
        const int64_t j0 = srow[k], n2 = srow[k + 1] - j0;
        int n1 = -1, why = 0;
        if (n2 > max_cols)
            why = HK_FAULT_TOO_LARGE;
        else {
            n1 = sai_collect(trow, tcol, scol + j0, (int)n2, list, max_rows);
            if (n1 < 0) why = HK_FAULT_TOO_LARGE;
        }
        if (!why) {
            int has_k = 0;
            for (int a = lane; a < n1; a += 32)
                has_k |= list[a] == k;
            if (!__any_sync(0xffffffffu, has_k) || n1 < n2) why = HK_FAULT_RANK;
        }
        if (lane == 0) {
            nrow[k] = why ? -1 : n1;
            if (why)
                report(fault, k, why);
            else {
                atomicMax(maxr, (ull)n1);
                atomicMax(maxa, (ull)n1 * (ull)n2);
                atomicMax(maxc, (ull)n2);
            }
        }
        __syncwarp();
    }
}

/* Classical Gram-Schmidt on A (n1 x n2, column-major, gathered) and x = R^-1 Q^T e_p, as
 * sai_cgs_ls in solver/cpu/cpu_fsai.c: R packed by columns (r_cj at j(j+1)/2 + c), the row p
 * of k in I found from rows. Returns 0, or 1 after reporting a rank-deficient column. */
__device__ int sai_cgs_warp(double *A, int n1, int n2, double *R, const int32_t *rows, int64_t k,
                            double amax, double *x, ull *fault)
{
    const int lane = threadIdx.x & 31;
    int p = -1;
    for (int a = lane; a < n1; a += 32)
        if (rows[a] == k) p = a;
    for (int o = 16; o > 0; o >>= 1)
        p = max(p, __shfl_xor_sync(0xffffffffu, p, o));
    for (int j = 0; j < n2; j++) {
        double *a = A + j * n1, *rj = R + j * (j + 1) / 2;
        for (int c = 0; c < j; c++) {
            const double r = sai_wsum(A + c * n1, a, 0, n1); /* from the original a_j */
            if (lane == 0) rj[c] = r;
        }
        __syncwarp();
        for (int i = lane; i < n1; i += 32) {
            double v = a[i];
            for (int c = 0; c < j; c++)
                v = sub_(v, mul_(rj[c], A[c * n1 + i]));
            a[i] = v;
        }
        __syncwarp();
        const double norm = sqrt(sai_wsum(a, a, 0, n1));
        if (!(norm > mul_(1e-14, amax))) { /* the same in every lane */
            if (lane == 0) report(fault, k, HK_FAULT_RANK);
            return 1;
        }
        if (lane == 0) rj[j] = norm;
        for (int i = lane; i < n1; i += 32)
            a[i] = a[i] / norm;
        __syncwarp();
    }
    if (lane == 0)
        for (int j = n2 - 1; j >= 0; j--) {
            double s = A[j * n1 + p]; /* (Q^T e_p)_j */
            for (int c = j + 1; c < n2; c++)
                s = sub_(s, mul_(R[c * (c + 1) / 2 + j], x[c]));
            x[j] = s / R[j * (j + 1) / 2 + j];
        }
    __syncwarp();
    return 0;
}

/* Column k's problem by one warp; work: rows (|I| int32, space for ldr), then A (|I| x |J|),
 * e (|I|), x (|J|), and for Gram-Schmidt (cgs) R (|J|(|J|+1)/2). */
__device__ void sai_column_warp(const int64_t *trow, const int32_t *tcol, const double *tval,
                                int64_t k, const int32_t *J, int n2, int n1, int32_t *rows,
                                double *A, double *e, double *x, double *R, int cgs, double *out,
                                ull *fault)
{
    const int lane = threadIdx.x & 31;
    sai_collect(trow, tcol, J, n2, rows, n1); /* the same n1 as the size kernel found */
    for (int t = lane; t < n1 * n2; t += 32)
        A[t] = 0;
    __syncwarp();
    for (int b = 0; b < n2; b++) {
        const int32_t j = J[b];
        for (int64_t p = trow[j] + lane; p < trow[j + 1]; p += 32) {
            const int32_t i = tcol[p];
            int a = 0;
            while (rows[a] != i) /* i is in rows */
                a++;
            A[b * n1 + a] = tval[p];
        }
    }
    __syncwarp(); /* A is read across lanes from here on */
    for (int a = lane; a < n1; a += 32)
        e[a] = rows[a] == k ? 1.0 : 0.0;
    double amax = 0;
    for (int t = lane; t < n1 * n2; t += 32)
        amax = fmax(amax, fabs(A[t]));
    __syncwarp();
    for (int o = 16; o > 0; o >>= 1)
        amax = fmax(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (cgs) {
        if (!sai_cgs_warp(A, n1, n2, R, rows, k, amax, x, fault))
            for (int b = lane; b < n2; b += 32)
                out[b] = x[b];
        return;
    }
    for (int j = 0; j < n2; j++) {
        double *v = A + j * n1;
        const double norm = sqrt(sai_wsum(v, v, j, n1));
        if (!(norm > mul_(1e-14, amax))) { /* the same in every lane */
            if (lane == 0) report(fault, k, HK_FAULT_RANK);
            return;
        }
        const double alpha = v[j] >= 0 ? -norm : norm;
        __syncwarp();
        if (lane == 0) v[j] = sub_(v[j], alpha);
        __syncwarp();
        const double vnorm2 = sai_wsum(v, v, j, n1);
        for (int c = j + 1; c <= n2; c++) { /* c = n2: the right-hand side */
            double *col = c < n2 ? A + c * n1 : e;
            const double s = mul_(2.0, sai_wsum(v, col, j, n1)) / vnorm2;
            __syncwarp();
            for (int i = j + lane; i < n1; i += 32)
                col[i] = sub_(col[i], mul_(s, v[i]));
            __syncwarp();
        }
        if (lane == 0) v[j] = alpha;
        __syncwarp();
    }
    if (lane == 0)
        for (int j = n2 - 1; j >= 0; j--) {
            double s = e[j];
            for (int c = j + 1; c < n2; c++)
                s = sub_(s, mul_(A[c * n1 + j], x[c]));
            x[j] = s / A[j * n1 + j];
        }
    __syncwarp();
    for (int b = lane; b < n2; b += 32)
        out[b] = x[b];
}

/* big = 0: the problems that fit in shared memory, one warp (block) each; big = 1: the
 * others, in a global slab of slab doubles per warp (rows first, as int32; R after x, of
 * maxc(maxc+1)/2 entries). CGS: classical Gram-Schmidt, else Householder. */
template <int BIG, int CGS>
__global__ void __launch_bounds__(32)
    sai_factor_kernel(const int64_t *trow, const int32_t *tcol, const double *tval,
                      const int64_t *srow, const int32_t *scol, const int32_t *nrow, int64_t n,
                      double *mval, double *gwork, int64_t slab, int64_t maxr, int64_t maxa,
                      int64_t maxc, ull *fault)
{
    __shared__ int32_t srows[BIG ? 1 : SAI_SR];
    __shared__ double sA[BIG ? 1 : SAI_SA], se[BIG ? 1 : SAI_SR], sx[BIG ? 1 : SAI_SC];
    __shared__ double sR[BIG || !CGS ? 1 : SAI_SC * (SAI_SC + 1) / 2];
    int32_t *rows = srows;
    double *A = sA, *e = se, *x = sx, *R = sR;
    if (BIG) {
        double *w = gwork + (int64_t)blockIdx.x * slab;
        rows = (int32_t *)w;
        A = w + (maxr + 1) / 2;
        R = A + maxa + maxr + maxc;
    }
    for (int64_t k = blockIdx.x; k < n; k += gridDim.x) {
        const int n1 = nrow[k];
        if (n1 < 0) continue;
        const int64_t j0 = srow[k];
        const int n2 = (int)(srow[k + 1] - j0);
        const int small = n1 <= SAI_SR && n2 <= SAI_SC && (int64_t)n1 * n2 <= SAI_SA;
        if (BIG ? small : !small) continue;
        if (BIG) {
            e = A + (int64_t)n1 * n2;
            x = e + n1;
        }
        sai_column_warp(trow, tcol, tval, k, scol + j0, n2, n1, rows, A, e, x, R, CGS, mval + j0,
                        fault);
        __syncwarp();
    }
}

/* The two kernels of one least-squares method (cgs: Gram-Schmidt). */
static void sai_factor_launch(int cgs, int big, unsigned grid, const hk_bmat *Kt,
                              const hk_graph *St, const int32_t *nrow, int64_t n, double *mval,
                              double *gwork, int64_t slab, int64_t maxr, int64_t maxa, int64_t maxc,
                              ull *fault)
{
    auto kern = cgs ? (big ? sai_factor_kernel<1, 1> : sai_factor_kernel<0, 1>)
                    : (big ? sai_factor_kernel<1, 0> : sai_factor_kernel<0, 0>);
    kern<<<grid, 32, 0, hk_cu.stream>>>(Kt->rowptr, Kt->colind, Kt->val, St->rowptr, St->colind,
                                        nrow, n, mval, gwork, slab, maxr, maxa, maxc, fault);
}

extern "C" int hk_cu_sai_factor(const hk_bmat *Kt, const hk_graph *St, int64_t max_rows,
                                int64_t max_cols, int qr, hk_bmat *Mt, hk_setup_fault *fault)
{
    int ierr = 0;
    fault->row = -1;
    fault->reason = HK_FAULT_NONE;
    memset(Mt, 0, sizeof *Mt);
    const int64_t n = St->n;
    HK_CHECK(Kt->br == 1 && Kt->bc == 1 && Kt->nbrows == n, HK_ERR_ARG,
             "sai_factor: Kt must be the scalar transpose (1 x 1 blocks, %lld rows)",
             (long long)n);
    HK_CHECK(max_rows >= 1 && max_rows <= SAI_LIST_MAX && max_cols >= 1 && max_cols < INT32_MAX,
             HK_ERR_UNSUPPORTED,
             "sai_factor on cuda: max_rows=%lld is over %d; lower the limit of |I|",
             (long long)max_rows, SAI_LIST_MAX);
    const int cgs = qr == HK_SAI_GRAM_SCHMIDT;
    ull *dfault = NULL, *dmax = NULL, hmax[3] = {0, 0, 0};
    int32_t *nrow = NULL;
    double *gwork = NULL;
    HK_CALL(fault_begin(&dfault));
    HK_TRY(hk_cu_malloc((void **)&dmax, 3 * sizeof *dmax));
    HK_CU_TRY(cudaMemsetAsync(dmax, 0, 3 * sizeof *dmax, hk_cu.stream));
    HK_TRY(hk_cu_malloc((void **)&nrow, (size_t)(n ? n : 1) * sizeof *nrow));
    HK_TRY(hk_bmat_alloc(St->be, 1, 1, n, n, St->nnz, Mt));
    HK_TRY(St->be->copy(Mt->rowptr, St->rowptr, (size_t)(n + 1) * sizeof *Mt->rowptr));
    if (St->nnz) HK_TRY(St->be->copy(Mt->colind, St->colind, (size_t)St->nnz * sizeof *Mt->colind));
    if (n > 0) {
        const unsigned blocks = (unsigned)(n < 65536 ? n : 65536);
        sai_size_kernel<<<blocks, 32, (size_t)max_rows * sizeof(int32_t), hk_cu.stream>>>(
            Kt->rowptr, Kt->colind, St->rowptr, St->colind, n, max_rows, max_cols, nrow, dmax,
            dmax + 1, dmax + 2, dfault);
        HK_CU_TRY(cudaGetLastError());
        HK_CU_TRY(cudaMemcpyAsync(hmax, dmax, sizeof hmax, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        const int64_t maxr = (int64_t)hmax[0], maxa = (int64_t)hmax[1], maxc = (int64_t)hmax[2];
        sai_factor_launch(cgs, 0, blocks, Kt, St, nrow, n, Mt->val, NULL, 0, 0, 0, 0, dfault);
        HK_CU_TRY(cudaGetLastError());
        if (maxr > SAI_SR || maxa > SAI_SA) { /* |J| > SAI_SC implies |I||J| > SAI_SA */
            /* the slab: rows (int32, rounded up to doubles), A, e, x, and R for Gram-Schmidt */
            const int64_t slab =
                (maxr + 1) / 2 + maxa + maxr + maxc + (cgs ? maxc * (maxc + 1) / 2 : 0);
            int64_t nw = (int64_t)(FSAI_SLAB_BYTES / ((size_t)slab * sizeof(double)));
            if (nw > 8192) nw = 8192;
            if (nw < 1) nw = 1;
            HK_TRY(hk_cu_malloc((void **)&gwork, (size_t)nw * (size_t)slab * sizeof(double)));
            sai_factor_launch(cgs, 1, (unsigned)nw, Kt, St, nrow, n, Mt->val, gwork, slab, maxr,
                              maxa, maxc, dfault);
            HK_CU_TRY(cudaGetLastError());
        }
    }
    HK_TRY(fault_read(dfault, fault));
fail:
    if (ierr || fault->row >= 0) hk_bmat_free(Mt);
    cudaFree(dfault);
    cudaFree(dmax);
    cudaFree(nrow);
    cudaFree(gwork);
    return ierr;
}
