// FSAI set-up ops on the device (contracts: hk_backend_ops in solver/hk_impl.h; the rules and
// their order of floating-point operations: solver/cpu/cpu_fsai.c, which these kernels follow
// step by step with explicitly rounded multiplies and adds, so no fused multiply-add makes
// the digits differ from the CPU reference).
//
// fsai_pattern: diagonal check, the sparsified graph Ã (count, scan, fill), then one thread per
// node grows its node set by k steps of Low(B_p Ã) in a sorted array in global scratch
// (rows processed in batches so the scratch stays bounded), twice: sizes, then the rows.
// fsai_factor: one warp per row; the local dense system A[P_i,P_i] in shared memory when the
// pattern has at most FSAI_SMALL entries, otherwise in a global slab per warp (a second kernel
// over the large rows, with as many warps as the slab memory allows). Faults go through an
// integer atomicMin on (row << 4 | reason): the first faulty row, whatever the schedule.
#include <cub/cub.cuh>
#include <stdint.h>

#include "cuda_impl.cuh"

#define FSAI_SMALL 32        /* patterns up to this size keep their system in shared memory */
#define FSAI_WARPS 4         /* warps per block of the factor kernels */
#define FSAI_BATCH 16384     /* nodes per launch of the pattern kernel */
#define FSAI_SLAB_BYTES (512ull << 20) /* global scratch of the large-row factor kernel */

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

__device__ int64_t find_block(const int64_t *rowptr, const int32_t *colind, int64_t bi, int64_t bj)
{
    int64_t lo = rowptr[bi], hi = rowptr[bi + 1];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (colind[mid] < bj)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < rowptr[bi + 1] && colind[lo] == bj ? lo : -1;
}

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
        const int64_t q = find_block(rowptr, colind, i / br, i / br);
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
        const int64_t q = find_block(rowptr, colind, I, I);
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
                int64_t lo = 0, hi = m;
                while (lo < hi) {
                    int64_t mid = (lo + hi) / 2;
                    if (AT(set, mid) < c)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
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

    HK_TRY(hk_cu_malloc((void **)&scr, (size_t)batch * 3 * (size_t)capn * sizeof *scr));
    len = cnt; /* n entries: the scalar row lengths */
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t I0 = 0; I0 < nn; I0 += batch) {
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

/* ---- fsai_factor ------------------------------------------------------------------------- */

/* Row i by one warp; work = m*m (M, column-major) + 3m (dgl, w, t) doubles. Writes the
 * filtered row to wall and its kept flags to keep (both at srow[i]). */
__device__ void fsai_row_warp(const int64_t *krow, const int32_t *kcol, const double *kval,
                              int br, int64_t i, const int32_t *P, int64_t m, double delta,
                              double *M, double *wout, unsigned char *keep, ull *fault)
{
    const int lane = threadIdx.x & 31;
    double *dgl = M + m * m, *w = dgl + m, *t = w + m;
    if (m < 1 || P[m - 1] != i) {
        if (lane == 0) report(fault, i, HK_FAULT_NOT_SPD);
        return;
    }
    for (int64_t e = lane; e < m * m; e += 32)
        M[e] = 0;
    __syncwarp();
    /* 1. gather: lanes over the entries of row P[a] */
    for (int64_t a = 0; a < m; a++) {
        const int64_t bi = P[a] / br, r = P[a] % br;
        const int64_t q0 = krow[bi], ne = (krow[bi + 1] - q0) * br;
        for (int64_t e = lane; e < ne; e += 32) {
            const int64_t q = q0 + e / br;
            const int c = (int)(e % br);
            const int64_t j = (int64_t)kcol[q] * br + c;
            int64_t lo = 0, hi = m;
            while (lo < hi) {
                int64_t mid = (lo + hi) / 2;
                if (P[mid] < j)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < m && P[lo] == j) M[lo * m + a] = kval[(q * br + r) * br + c];
        }
    }
    __syncwarp();
    for (int64_t a = lane; a < m; a += 32)
        dgl[a] = M[a * m + a];
    __syncwarp();
    int asym = 0;
    for (int64_t a = lane; a < m; a += 32)
        for (int64_t bb = a + 1; bb < m && !asym; bb++) {
            const double x = M[bb * m + a], y = M[a * m + bb];
            if (fabs(sub_(x, y)) >
                mul_(1e-10, add_(fmax(fabs(x), fabs(y)), sqrt(fabs(mul_(dgl[a], dgl[bb]))))))
                asym = 1;
        }
    if (__any_sync(0xffffffffu, asym)) {
        if (lane == 0) report(fault, i, HK_FAULT_ASYMMETRIC);
        return;
    }
    /* 2. Cholesky, left-looking: lanes over the rows of column j */
    for (int64_t j = 0; j < m; j++) {
        double d = M[j * m + j];
        for (int64_t q = 0; q < j; q++)
            d = sub_(d, mul_(M[q * m + j], M[q * m + j]));
        if (!(d > 0) || !isfinite(d)) { /* the same d in every lane */
            if (lane == 0) report(fault, i, HK_FAULT_NOT_SPD);
            return;
        }
        d = sqrt(d);
        __syncwarp();
        if (lane == 0) M[j * m + j] = d;
        for (int64_t r = j + 1 + lane; r < m; r += 32) {
            double s = M[j * m + r];
            for (int64_t q = 0; q < j; q++)
                s = sub_(s, mul_(M[q * m + r], M[q * m + j]));
            M[j * m + r] = s / d;
        }
        __syncwarp();
    }
    /* 3. solve with e_m: backward by columns */
    for (int64_t a = lane; a < m - 1; a += 32)
        w[a] = 0;
    if (lane == 0) w[m - 1] = 1 / M[(m - 1) * m + (m - 1)];
    __syncwarp();
    for (int64_t kk = m - 1; kk >= 0; kk--) {
        if (lane == 0) w[kk] = w[kk] / M[kk * m + kk];
        __syncwarp();
        const double wk = w[kk];
        for (int64_t r = lane; r < kk; r += 32)
            w[r] = sub_(w[r], mul_(M[r * m + kk], wk));
        __syncwarp();
    }
    /* 4. scaling */
    const double s = 1 / sqrt(w[m - 1]);
    __syncwarp();
    for (int64_t a = lane; a < m; a += 32)
        w[a] = mul_(w[a], s);
    __syncwarp();
    double nrm = 0;
    if (lane == 0) {
        for (int64_t a = 0; a < m; a++)
            nrm = add_(nrm, mul_(w[a], w[a]));
        nrm = sqrt(nrm);
    }
    nrm = __shfl_sync(0xffffffffu, nrm, 0);
    /* 5. post-filtration */
    const double lim = mul_(delta, nrm);
    for (int64_t a = lane; a < m; a += 32)
        keep[a] = a == m - 1 || fabs(w[a]) > lim;
    __syncwarp();
    for (int64_t a = lane; a < m; a += 32) {
        double ta = 0;
        if (!keep[a])
            for (int64_t bb = 0; bb < m; bb++) {
                if (keep[bb]) continue;
                const int64_t lo = a < bb ? a : bb, hi = a < bb ? bb : a;
                const double ab = a == bb ? dgl[a] : M[hi * m + lo];
                ta = add_(ta, mul_(ab, w[bb]));
            }
        t[a] = ta;
    }
    __syncwarp();
    double e = 0;
    if (lane == 0)
        for (int64_t a = 0; a < m; a++)
            if (!keep[a]) e = add_(e, mul_(w[a], t[a]));
    e = __shfl_sync(0xffffffffu, e, 0);
    const double sc = 1 / sqrt(add_(1.0, e));
    for (int64_t a = lane; a < m; a += 32)
        wout[a] = keep[a] ? mul_(w[a], sc) : 0.0;
}

/* small = 1: rows with m <= FSAI_SMALL, work in shared memory; small = 0: the other rows,
 * work in gwork (slab doubles per warp). */
template <int SMALL>
__global__ void __launch_bounds__(32 * FSAI_WARPS)
    fsai_factor_kernel(const int64_t *krow, const int32_t *kcol, const double *kval, int br,
                       const int64_t *srow, const int32_t *scol, int64_t n, double delta,
                       double *wall, unsigned char *keep, double *gwork, int64_t slab,
                       ull *fault)
{
    __shared__ double sh[SMALL ? FSAI_WARPS : 1][SMALL ? FSAI_SMALL * FSAI_SMALL + 3 * FSAI_SMALL
                                                       : 1];
    const int wib = threadIdx.x >> 5;
    const int64_t gw = (int64_t)blockIdx.x * FSAI_WARPS + wib,
                  nw = (int64_t)gridDim.x * FSAI_WARPS;
    double *work = SMALL ? sh[wib] : gwork + gw * slab;
    for (int64_t i = gw; i < n; i += nw) {
        const int64_t p0 = srow[i], m = srow[i + 1] - p0;
        if (SMALL ? m > FSAI_SMALL : m <= FSAI_SMALL) continue;
        fsai_row_warp(krow, kcol, kval, br, i, scol + p0, m, delta, work, wall + p0, keep + p0,
                      fault);
        __syncwarp();
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
    unsigned char *keep = NULL;
    int64_t *cnt = NULL, nnz = 0;
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
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        /* rows of up to FSAI_SMALL entries: a warp each, system in shared memory */
        int64_t nb = (n + FSAI_WARPS - 1) / FSAI_WARPS;
        if (nb > (1 << 20)) nb = 1 << 20;
        fsai_factor_kernel<1><<<(unsigned)nb, 32 * FSAI_WARPS, 0, hk_cu.stream>>>(
            K->rowptr, K->colind, K->val, K->br, S->rowptr, S->colind, n, delta, wall, keep, NULL,
            0, dfault);
        HK_CU_TRY(cudaGetLastError());
        if (hmax > FSAI_SMALL) {
            /* larger rows: a global slab per warp, as many warps as FSAI_SLAB_BYTES holds */
            const int64_t slab = (int64_t)hmax * (int64_t)hmax + 3 * (int64_t)hmax;
            int64_t nw = (int64_t)(FSAI_SLAB_BYTES / ((size_t)slab * sizeof(double)));
            if (nw > 8192) nw = 8192;
            if (nw < FSAI_WARPS) nw = FSAI_WARPS;
            const int64_t blocks = nw / FSAI_WARPS;
            HK_TRY(hk_cu_malloc((void **)&gwork,
                                (size_t)blocks * FSAI_WARPS * (size_t)slab * sizeof(double)));
            fsai_factor_kernel<0><<<(unsigned)blocks, 32 * FSAI_WARPS, 0, hk_cu.stream>>>(
                K->rowptr, K->colind, K->val, K->br, S->rowptr, S->colind, n, delta, wall, keep,
                gwork, slab, dfault);
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
    cudaFree(cnt);
    return ierr;
}
