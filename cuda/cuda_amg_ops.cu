// AMG set-up and apply ops on the device (contracts in solver/hk_impl.h; CPU references in
// solver/cpu/cpu_amg.c and solver/cpu/cpu_sparse.c):
//  - amg_rigid_modes: the near-null space from the node coordinates, one thread per node;
//  - amg_coord_frame: those modes' centre and scale from coordinates on the device (fixed
//    chunks, fixed trees); amg_coord_bounds: one process's sums and bounds of them, for the
//    distributed set-up's frame (the same chunks and trees);
//  - bmat_spmv: y = A x for rectangular blocks (the AMG transfer operators P and R), a group
//    of G lanes per block row (G from the mean blocks per row) with a fixed shuffle tree;
//  - hk_cu_chol_inverse: the dense coarse inverse A^-1 = L^-T L^-1 by blocked right-looking
//    Cholesky and blocked triangular solves in 32 x 32 tiles, for the coarse sizes of AMG
//    (no cuSOLVER handle, whose creation costs tens of milliseconds on first use).
#include <math.h>

#include "cuda_impl.cuh"

// ---- near-null space -------------------------------------------------------------------------

__global__ void k_rigid_modes(int64_t nnodes, int bs, int nns, const double *__restrict__ xyz,
                              double c0, double c1, double c2, double scale,
                              const double *__restrict__ dec, double *__restrict__ B)
{
    const int64_t n = nnodes * bs;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nnodes;
         i += (int64_t)gridDim.x * blockDim.x) {
        double m[3][6];
        for (int a = 0; a < 3; a++)
            for (int k = 0; k < 6; k++)
                m[a][k] = a == k ? 1.0 : 0.0;
        double x[3] = {0, 0, 0};
        const double c[3] = {c0, c1, c2};
        if (xyz)
            for (int a = 0; a < bs; a++)
                x[a] = (xyz[i * bs + a] - c[a]) * scale;
        if (xyz && bs == 2) {
            m[0][2] = -x[1];
            m[1][2] = x[0];
        } else if (xyz) {
            m[1][3] = -x[2];
            m[2][3] = x[1];
            m[0][4] = x[2];
            m[2][4] = -x[0];
            m[0][5] = -x[1];
            m[1][5] = x[0];
        }
        for (int a = 0; a < bs; a++) {
            const int64_t r = i * bs + a;
            const bool off = dec && dec[r] != 0;
            for (int k = 0; k < nns; k++)
                B[r + (size_t)k * n] = off ? 0.0 : a < 3 ? m[a][k] : (double)(a == k);
        }
    }
}

extern "C" int hk_cu_amg_rigid_modes(int64_t nnodes, int bs, const hk_vec *coords,
                                     const double *center, double scale, const hk_vec *decoupled,
                                     double *B)
{
    const int64_t n = nnodes * bs;
    HK_CHECK(bs >= 1 && bs <= 6 && (!coords || bs == 2 || bs == 3), HK_ERR_ARG,
             "amg_rigid_modes: block size %d with%s coordinates; coordinates need 2 or 3, "
             "translations 1 to 6",
             bs, coords ? "" : "out");
    HK_CHECK(!coords || (coords->prec == HK_FP64 && coords->n == n), HK_ERR_ARG,
             "amg_rigid_modes: coordinates must be an fp64 vector of %lld entries", (long long)n);
    HK_CHECK(!decoupled || (decoupled->prec == HK_FP64 && decoupled->n == n), HK_ERR_ARG,
             "amg_rigid_modes: the decoupled flags must be an fp64 vector of %lld entries",
             (long long)n);
    if (nnodes == 0) return 0;
    const int nns = coords ? (bs == 3 ? 6 : 3) : bs;
    const double c0 = coords ? center[0] : 0, c1 = coords ? center[1] : 0;
    const double c2 = coords && bs == 3 ? center[2] : 0;
    k_rigid_modes<<<hk_cu_grid(nnodes), HK_CU_BLOCK, 0, hk_cu.stream>>>(
        nnodes, bs, nns, coords ? (const double *)coords->data : NULL, c0, c1, c2, scale,
        decoupled ? (const double *)decoupled->data : NULL, B);
    HK_CU_LAUNCHED();
    return 0;
}

// The modes' frame (amg_coord_frame) from coordinates on the device: the nodes cut into
// FRAME_CHUNKS fixed chunks, one block each; a thread sums (then takes the maximum over) its
// nodes i0 + t, i0 + t + FRAME_BLOCK, ... in order, the block adds its threads by a fixed tree,
// one thread adds the chunks in order. The grid and the order depend on nothing but nnodes.
#define FRAME_CHUNKS 1024
#define FRAME_BLOCK 256

// op 0: part[3*ch + a] = the chunk's sum of coordinate a; op 1: part[3*FRAME_CHUNKS + ch] =
// the chunk's largest |x_a - center[a]| (center: res[0..2]).
__global__ void __launch_bounds__(FRAME_BLOCK)
    k_frame_chunks(int op, int64_t nnodes, int bs, const double *__restrict__ xyz,
                   double *__restrict__ part, const double *__restrict__ res)
{
    __shared__ double sh[3][FRAME_BLOCK];
    const int ch = blockIdx.x, t = threadIdx.x;
    const int64_t i0 = nnodes * ch / FRAME_CHUNKS, i1 = nnodes * (ch + 1) / FRAME_CHUNKS;
    double v[3] = {0, 0, 0};
    for (int64_t i = i0 + t; i < i1; i += FRAME_BLOCK)
        for (int a = 0; a < bs; a++) {
            const double x = xyz[i * bs + a];
            if (op == 0)
                v[a] += x;
            else
                v[0] = fmax(v[0], fabs(x - res[a]));
        }
    for (int a = 0; a < 3; a++)
        sh[a][t] = v[a];
    __syncthreads();
    for (int w = FRAME_BLOCK / 2; w > 0; w /= 2) {
        if (t < w)
            for (int a = 0; a < 3; a++)
                sh[a][t] = op == 0 ? sh[a][t] + sh[a][t + w] : fmax(sh[a][t], sh[a][t + w]);
        __syncthreads();
    }
    if (t == 0) {
        if (op == 0)
            for (int a = 0; a < 3; a++)
                part[3 * ch + a] = sh[a][0];
        else
            part[3 * FRAME_CHUNKS + ch] = sh[0][0];
    }
}

// op 0: res[a] = the mean of coordinate a; op 1: res[3] = the largest extent. One thread.
__global__ void k_frame_total(int op, int64_t nnodes, const double *__restrict__ part,
                              double *__restrict__ res)
{
    if (op == 0)
        for (int a = 0; a < 3; a++) {
            double sum = 0;
            for (int ch = 0; ch < FRAME_CHUNKS; ch++)
                sum += part[3 * ch + a];
            res[a] = nnodes ? sum / (double)nnodes : 0;
        }
    else {
        double ext = 0;
        for (int ch = 0; ch < FRAME_CHUNKS; ch++)
            ext = fmax(ext, part[3 * FRAME_CHUNKS + ch]);
        res[3] = ext;
    }
}

extern "C" int hk_cu_amg_coord_frame(int64_t nnodes, int bs, const hk_vec *coords, double *center,
                                     double *scale)
{
    static_assert(4 * FRAME_CHUNKS <= HK_CU_MAXK * HK_CU_MAXB, "the partials fit hk_cu.part");
    HK_CHECK(bs == 2 || bs == 3, HK_ERR_ARG, "amg_coord_frame: coordinates of dimension %d", bs);
    HK_CHECK(coords && coords->prec == HK_FP64 && coords->n == nnodes * bs, HK_ERR_ARG,
             "amg_coord_frame: coordinates must be an fp64 vector of %lld entries",
             (long long)(nnodes * bs));
    const double *x = (const double *)coords->data;
    for (int op = 0; op < 2; op++) {
        k_frame_chunks<<<FRAME_CHUNKS, FRAME_BLOCK, 0, hk_cu.stream>>>(op, nnodes, bs, x,
                                                                       hk_cu.part, hk_cu.dres);
        HK_CU_LAUNCHED();
        k_frame_total<<<1, 1, 0, hk_cu.stream>>>(op, nnodes, hk_cu.part, hk_cu.dres);
        HK_CU_LAUNCHED();
    }
    HK_CU(cudaMemcpyAsync(hk_cu.hres, hk_cu.dres, 4 * sizeof(double), cudaMemcpyDeviceToHost,
                          hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    for (int a = 0; a < 3; a++)
        center[a] = hk_cu.hres[a];
    HK_CHECK(isfinite(center[0]) && isfinite(center[1]) && isfinite(center[2]), HK_ERR_ARG,
             "near-null space: a node coordinate is not finite");
    *scale = hk_cu.hres[3] > 0 ? 1 / hk_cu.hres[3] : 1;
    return 0;
}

// The distributed frame's parts (amg_coord_bounds), in k_frame_chunks' chunks, threads and
// trees: part[9*ch + k] = the chunk's sum (k < 3), smallest (3..5) and largest (6..8) of
// coordinate k % 3.
__global__ void __launch_bounds__(FRAME_BLOCK)
    k_bounds_chunks(int64_t nnodes, int bs, const double *__restrict__ xyz,
                    double *__restrict__ part)
{
    __shared__ double sh[9][FRAME_BLOCK];
    const int ch = blockIdx.x, t = threadIdx.x;
    const int64_t i0 = nnodes * ch / FRAME_CHUNKS, i1 = nnodes * (ch + 1) / FRAME_CHUNKS;
    double v[9];
    for (int a = 0; a < 3; a++) {
        v[a] = 0;
        v[3 + a] = INFINITY;
        v[6 + a] = -INFINITY;
    }
    for (int64_t i = i0 + t; i < i1; i += FRAME_BLOCK)
        for (int a = 0; a < bs; a++) {
            const double x = xyz[i * bs + a];
            v[a] += x;
            v[3 + a] = fmin(v[3 + a], x);
            v[6 + a] = fmax(v[6 + a], x);
        }
    for (int k = 0; k < 9; k++)
        sh[k][t] = v[k];
    __syncthreads();
    for (int w = FRAME_BLOCK / 2; w > 0; w /= 2) {
        if (t < w) {
            for (int a = 0; a < 3; a++) {
                sh[a][t] += sh[a][t + w];
                sh[3 + a][t] = fmin(sh[3 + a][t], sh[3 + a][t + w]);
                sh[6 + a][t] = fmax(sh[6 + a][t], sh[6 + a][t + w]);
            }
        }
        __syncthreads();
    }
    if (t == 0)
        for (int k = 0; k < 9; k++)
            part[9 * ch + k] = sh[k][0];
}

// res[k] = the chunks' part[9*ch + k] added (k < 3) or their minimum or maximum, in chunk
// order. One thread.
__global__ void k_bounds_total(const double *__restrict__ part, double *__restrict__ res)
{
    for (int k = 0; k < 9; k++) {
        double r = k < 3 ? 0 : k < 6 ? INFINITY : -INFINITY;
        for (int ch = 0; ch < FRAME_CHUNKS; ch++) {
            const double p = part[9 * ch + k];
            r = k < 3 ? r + p : k < 6 ? fmin(r, p) : fmax(r, p);
        }
        res[k] = r;
    }
}

extern "C" int hk_cu_amg_coord_bounds(int64_t nnodes, int bs, const hk_vec *coords, double *sum,
                                      double *lo, double *hi)
{
    static_assert(9 * FRAME_CHUNKS <= HK_CU_MAXK * HK_CU_MAXB, "the partials fit hk_cu.part");
    static_assert(9 <= HK_CU_MAXK, "the results fit hk_cu.dres");
    HK_CHECK(bs == 2 || bs == 3, HK_ERR_ARG, "amg_coord_bounds: coordinates of dimension %d", bs);
    HK_CHECK(coords && coords->prec == HK_FP64 && coords->n == nnodes * bs, HK_ERR_ARG,
             "amg_coord_bounds: coordinates must be an fp64 vector of %lld entries",
             (long long)(nnodes * bs));
    k_bounds_chunks<<<FRAME_CHUNKS, FRAME_BLOCK, 0, hk_cu.stream>>>(
        nnodes, bs, (const double *)coords->data, hk_cu.part);
    HK_CU_LAUNCHED();
    k_bounds_total<<<1, 1, 0, hk_cu.stream>>>(hk_cu.part, hk_cu.dres);
    HK_CU_LAUNCHED();
    HK_CU(cudaMemcpyAsync(hk_cu.hres, hk_cu.dres, 9 * sizeof(double), cudaMemcpyDeviceToHost,
                          hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    for (int a = 0; a < 3; a++) {
        sum[a] = a < bs ? hk_cu.hres[a] : 0;
        lo[a] = a < bs ? hk_cu.hres[3 + a] : 0;
        hi[a] = a < bs ? hk_cu.hres[6 + a] : 0;
    }
    return 0;
}

// ---- y = A x for rectangular blocks ------------------------------------------------------------

// G lanes (a power of two <= 32, inside one warp) per block row: lane g sums the blocks
// g, g + G, ... of the row, then the G partial sums are added by a fixed shuffle tree.
// BR = BC = 0: any shape up to 8 x 8 (br, bc at run time); else compiled for BR x BC.
template <typename T, typename V, int BR_, int BC_>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_bmat_spmv(int64_t nbrows, int G, int br, int bc, const int64_t *__restrict__ rowptr,
                const int32_t *__restrict__ colind, const V *__restrict__ val,
                const T *__restrict__ x, T *__restrict__ y)
{
    constexpr int RMAX = BR_ ? BR_ : 8, CMAX = BC_ ? BC_ : 8;
    const int BR = BR_ ? BR_ : br, BC = BC_ ? BC_ : bc;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i = t / G;
    const int g = (int)(t % G);
    double acc[RMAX];
    for (int r = 0; r < RMAX; r++)
        acc[r] = 0;
    if (i < nbrows)
        for (int64_t q = rowptr[i] + g; q < rowptr[i + 1]; q += G) {
            const V *v = val + (size_t)q * BR * BC;
            const int64_t j0 = (int64_t)colind[q] * BC;
            double xc[CMAX];
            for (int c = 0; c < BC; c++)
                xc[c] = (double)x[j0 + c];
            for (int r = 0; r < BR; r++) {
                double s = 0;
                for (int c = 0; c < BC; c++)
                    s += (double)v[r * BC + c] * xc[c];
                acc[r] += s;
            }
        }
    // every lane of the warp takes part (rows past the end carry zeros)
    for (int off = G / 2; off > 0; off /= 2)
        for (int r = 0; r < RMAX; r++)
            acc[r] += __shfl_down_sync(0xffffffffu, acc[r], off, G);
    if (i < nbrows && g == 0)
        for (int r = 0; r < BR; r++)
            y[i * BR + r] = (T)acc[r];
}

template <typename T, int BR, int BC>
static int bmat_spmv_launch(const hk_bmat *A, const float *val32, int G, const hk_vec *x, hk_vec *y)
{
    const int64_t threads = A->nbrows * G;
    const int64_t blocks = (threads + HK_CU_BLOCK - 1) / HK_CU_BLOCK;
    HK_CHECK(blocks < INT32_MAX, HK_ERR_UNSUPPORTED, "bmat_spmv: %lld block rows are too many",
             (long long)A->nbrows);
    if (val32)
        k_bmat_spmv<T, float, BR, BC><<<(unsigned)blocks, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            A->nbrows, G, A->br, A->bc, A->rowptr, A->colind, val32, (const T *)x->data,
            (T *)y->data);
    else
        k_bmat_spmv<T, double, BR, BC><<<(unsigned)blocks, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            A->nbrows, G, A->br, A->bc, A->rowptr, A->colind, A->val, (const T *)x->data,
            (T *)y->data);
    HK_CU_LAUNCHED();
    return 0;
}

template <typename T>
static int bmat_spmv_shape(const hk_bmat *A, const float *val32, int G, const hk_vec *x, hk_vec *y)
{
    // the shapes of elasticity AMG transfers (b x nns, nns x b) compiled; others at run time
#define HK_SPMV_SHAPE(R, C)                                                                        \
    if (A->br == R && A->bc == C) return bmat_spmv_launch<T, R, C>(A, val32, G, x, y)
    HK_SPMV_SHAPE(3, 6);
    HK_SPMV_SHAPE(6, 3);
    HK_SPMV_SHAPE(6, 6);
    HK_SPMV_SHAPE(2, 3);
    HK_SPMV_SHAPE(3, 2);
    HK_SPMV_SHAPE(3, 3);
    HK_SPMV_SHAPE(1, 1);
#undef HK_SPMV_SHAPE
    return bmat_spmv_launch<T, 0, 0>(A, val32, G, x, y);
}

extern "C" int hk_cu_bmat_spmv(const hk_bmat *A, const float *val32, const hk_vec *x, hk_vec *y)
{
    const int br = A->br, bc = A->bc;
    HK_CHECK(br >= 1 && br <= 8 && bc >= 1 && bc <= 8, HK_ERR_ARG,
             "bmat_spmv: %d x %d blocks; at most 8 x 8", br, bc);
    HK_CHECK(x->n == A->nbcols * bc && y->n == A->nbrows * br && x->prec == y->prec, HK_ERR_ARG,
             "bmat_spmv: x must have %lld and y %lld entries of one precision (got %lld, %lld)",
             (long long)(A->nbcols * bc), (long long)(A->nbrows * br), (long long)x->n,
             (long long)y->n);
    if (A->nbrows == 0) return 0;
    // lanes per row: the power of two at most the mean number of blocks per row (1..32)
    const double mean = (double)A->nnzb / (double)A->nbrows;
    int G = 1;
    while (G < 32 && 2.0 * G <= mean)
        G *= 2;
    return x->prec == HK_FP64 ? bmat_spmv_shape<double>(A, val32, G, x, y)
                              : bmat_spmv_shape<float>(A, val32, G, x, y);
}

// ---- dense Cholesky inverse in 32 x 32 tiles ---------------------------------------------------

#define CT 32 // tile size

// Factor the diagonal tile at k0 (nb = min(32, n - k0) columns) in place: one block of 32
// threads, thread i owns row i of the tile in shared memory. A pivot that is not positive
// and finite: its column goes to *first (atomicMin, the smallest bad column wins) and the
// factorization continues with NaN (later pivots are then bad too, but not smaller).
__global__ void k_chol_diag(double *a, int64_t n, int64_t k0, unsigned long long *first)
{
    __shared__ double s[CT][CT + 1];
    const int i = threadIdx.x;
    const int nb = (int)min((int64_t)CT, n - k0);
    if (i < nb)
        for (int c = 0; c <= i; c++)
            s[i][c] = a[(k0 + c) * n + k0 + i];
    __syncthreads();
    for (int j = 0; j < nb; j++) {
        if (i == j) {
            const double d = s[j][j];
            if (!(d > 0) || !isfinite(d)) {
                atomicMin(first, (unsigned long long)(k0 + j));
                s[j][j] = NAN;
            } else
                s[j][j] = sqrt(d);
        }
        __syncthreads();
        if (i > j && i < nb) s[i][j] /= s[j][j];
        __syncthreads();
        if (i > j && i < nb) // row i of the trailing triangle; column j is final now
            for (int c = j + 1; c <= i; c++)
                s[i][c] -= s[i][j] * s[c][j];
        __syncthreads();
    }
    if (i < nb)
        for (int c = 0; c <= i; c++)
            a[(k0 + c) * n + k0 + i] = s[i][c];
}

// L21 = A21 L11^-T for the rows below the diagonal tile: one block of 32 threads per row tile,
// thread i solves row i.
__global__ void k_chol_panel(double *a, int64_t n, int64_t k0)
{
    __shared__ double L[CT][CT + 1];
    const int i = threadIdx.x;
    const int nb = (int)min((int64_t)CT, n - k0);
    const int64_t r = k0 + nb + (int64_t)blockIdx.x * CT + i;
    for (int rr = 0; rr < nb; rr++)
        if (i <= rr) L[rr][i] = a[(k0 + i) * n + k0 + rr];
    __syncthreads();
    if (r >= n) return;
    double x[CT];
    for (int c = 0; c < nb; c++) {
        double v = a[(k0 + c) * n + r];
        for (int m = 0; m < c; m++)
            v -= x[m] * L[c][m];
        x[c] = v / L[c][c];
    }
    for (int c = 0; c < nb; c++)
        a[(k0 + c) * n + r] = x[c];
}

// A22 -= L21 L21^T on the lower tiles of the trailing matrix: block (ti, tj), tj <= ti, of
// 32 x 32 threads; thread (x, y) updates row ti*32 + x, column tj*32 + y.
__global__ void __launch_bounds__(CT *CT) k_chol_update(double *a, int64_t n, int64_t k0)
{
    __shared__ double Li[CT][CT + 1], Lj[CT][CT + 1];
    int ti = 0, rest = (int)blockIdx.x;
    while (rest > ti)
        rest -= ++ti; // blockIdx.x = ti (ti + 1) / 2 + tj
    const int tj = rest;
    const int nb = (int)min((int64_t)CT, n - k0);
    const int64_t k1 = k0 + nb;
    const int x = threadIdx.x, y = threadIdx.y;
    const int64_t ri = k1 + (int64_t)ti * CT, rj = k1 + (int64_t)tj * CT;
    // column y of the panel, rows of tile ti and tj (coalesced in x)
    Li[x][y] = (y < nb && ri + x < n) ? a[(k0 + y) * n + ri + x] : 0.0;
    Lj[x][y] = (y < nb && rj + x < n) ? a[(k0 + y) * n + rj + x] : 0.0;
    __syncthreads();
    const int64_t row = ri + x, col = rj + y;
    if (row >= n || col >= n || col > row) return;
    double s = 0;
    for (int m = 0; m < nb; m++)
        s += Li[x][m] * Lj[y][m];
    a[col * n + row] -= s;
}

// b = A^-1 = L^-T L^-1 from the factor in a's lower triangle: one block of 32 x 32 threads per
// tile of 32 right-hand-side columns, the identity's columns c0.., first L y = e (row tiles
// from the diagonal down: rows above c0 are zero), then L^T x = y (row tiles up).
__global__ void __launch_bounds__(CT *CT) k_chol_solve(const double *a, int64_t n, double *b)
{
    __shared__ double Lt[CT][CT + 1], Xt[CT][CT + 1], acc[CT][CT + 1];
    const int x = threadIdx.x, y = threadIdx.y; // x: row in a tile, y: right-hand side
    const int T = (int)((n + CT - 1) / CT);
    const int ct = (int)blockIdx.x;
    const int64_t col = (int64_t)ct * CT + y;
    // forward: Y_rt = L_rt,rt^-1 (E_rt - sum_{kt<rt} L_rt,kt Y_kt)
    for (int rt = ct; rt < T; rt++) {
        const int64_t row = (int64_t)rt * CT + x;
        double s = (row == col) ? 1.0 : 0.0;
        for (int kt = ct; kt < rt; kt++) {
            __syncthreads();
            const int64_t kr = (int64_t)kt * CT;
            // Lt[x][y] = L(rt row x, kt col y); Xt[x][y] = Y(kt row x, rhs y)
            Lt[x][y] = (row < n) ? a[(kr + y) * n + row] : 0.0;
            Xt[x][y] = (kr + x < n && col < n) ? b[col * n + kr + x] : 0.0;
            __syncthreads();
            for (int m = 0; m < CT; m++)
                s -= Lt[x][m] * Xt[m][y];
        }
        __syncthreads();
        Lt[x][y] =
            (row < n && (int64_t)rt * CT + y < n) ? a[((int64_t)rt * CT + y) * n + row] : 0.0;
        acc[x][y] = s;
        __syncthreads();
        if (x == 0 && col < n) { // thread (0, y) solves column y of the diagonal tile
            const int nb = (int)min((int64_t)CT, n - (int64_t)rt * CT);
            for (int i = 0; i < nb; i++) {
                double v = acc[i][y];
                for (int m = 0; m < i; m++)
                    v -= Lt[i][m] * acc[m][y];
                acc[i][y] = v / Lt[i][i];
            }
        }
        __syncthreads();
        if (row < n && col < n) b[col * n + row] = acc[x][y];
    }
    // backward: X_rt = L_rt,rt^-T (Y_rt - sum_{kt>rt} L_kt,rt^T X_kt)
    for (int rt = T - 1; rt >= 0; rt--) {
        const int64_t row = (int64_t)rt * CT + x;
        __syncthreads();
        // Y is zero above the diagonal tile of this column tile (b holds no Y there)
        double s = (rt >= ct && row < n && col < n) ? b[col * n + row] : 0.0;
        for (int kt = rt + 1; kt < T; kt++) {
            __syncthreads();
            const int64_t kr = (int64_t)kt * CT;
            // Lt[i][j] = (L^T)(rt row i, kt col j) = L(kr + j, rt*32 + i), read coalesced
            Lt[y][x] = (kr + x < n && (int64_t)rt * CT + y < n)
                           ? a[((int64_t)rt * CT + y) * n + kr + x]
                           : 0.0;
            Xt[x][y] = (kr + x < n && col < n) ? b[col * n + kr + x] : 0.0;
            __syncthreads();
            for (int m = 0; m < CT; m++)
                s -= Lt[x][m] * Xt[m][y];
        }
        __syncthreads();
        // Lt[x][y] = L(rt row x, rt col y)
        Lt[x][y] =
            (row < n && (int64_t)rt * CT + y < n) ? a[((int64_t)rt * CT + y) * n + row] : 0.0;
        acc[x][y] = s;
        __syncthreads();
        if (x == 0 && col < n) {
            const int nb = (int)min((int64_t)CT, n - (int64_t)rt * CT);
            for (int i = nb - 1; i >= 0; i--) {
                double v = acc[i][y];
                for (int m = i + 1; m < nb; m++)
                    v -= Lt[m][i] * acc[m][y];
                acc[i][y] = v / Lt[i][i];
            }
        }
        __syncthreads();
        if (row < n && col < n) b[col * n + row] = acc[x][y];
    }
}

// Factor a (column-major n x n, lower triangle used) in place and, unless a pivot is bad,
// write A^-1 to b. *first (device) receives the smallest bad pivot column (initialised by the
// caller). Queued on hk_cu.stream; the caller reads *first after the work.
int hk_cu_chol_inverse(double *a, int64_t n, double *b, unsigned long long *first)
{
    const int T = (int)((n + CT - 1) / CT);
    for (int t = 0; t < T; t++) {
        const int64_t k0 = (int64_t)t * CT;
        k_chol_diag<<<1, CT, 0, hk_cu.stream>>>(a, n, k0, first);
        HK_CU_LAUNCHED();
        const int below = T - 1 - t; // row tiles under the diagonal tile
        if (below == 0) break;
        k_chol_panel<<<below, CT, 0, hk_cu.stream>>>(a, n, k0);
        HK_CU_LAUNCHED();
        k_chol_update<<<below *(below + 1) / 2, dim3(CT, CT), 0, hk_cu.stream>>>(a, n, k0);
        HK_CU_LAUNCHED();
    }
    k_chol_solve<<<T, dim3(CT, CT), 0, hk_cu.stream>>>(a, n, b);
    HK_CU_LAUNCHED();
    return 0;
}

// Loaded by hk_cu_init (cuda_impl.cuh: hk_cu_preloads): this file's kernels of the AMG set-up
// and the solve, for 2D and 3D elasticity.
void hk_cu_amg_ops_preload(void)
{
    static const void *const k[] = {
        (const void *)k_rigid_modes,
        (const void *)k_frame_chunks,
        (const void *)k_frame_total,
        (const void *)k_bmat_spmv<float, float, 3, 6>,
        (const void *)k_bmat_spmv<float, float, 6, 3>,
        (const void *)k_bmat_spmv<float, float, 6, 6>,
        (const void *)k_bmat_spmv<float, float, 2, 3>,
        (const void *)k_bmat_spmv<float, float, 3, 2>,
        (const void *)k_bmat_spmv<float, float, 3, 3>,
        (const void *)k_chol_diag,
        (const void *)k_chol_panel,
        (const void *)k_chol_update,
        (const void *)k_chol_solve};
    hk_cu_preload(k, (int)(sizeof k / sizeof *k));
}
