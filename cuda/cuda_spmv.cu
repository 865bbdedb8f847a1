// Matrices on the CUDA backend: SpMV for every format in fp64 and fp32 (block sizes 1 to 6)
// on the arrays mat_build made on the device (cuda_build.cu), the SpMV with fused dot
// products for the pipelined methods, and the per-matrix set-up of the kernels (threads per
// block row, cuSPARSE descriptors).
//
// Two kernel families cover the six native formats (besides them: CSR's vector and adaptive
// kernels, cuda_csr.cu, and PCSR's own kernel, cuda_pcsr.cu):
//   - row-pointer kernel (k_bsr): CSR is BSR with 1x1 blocks;
//   - sliced kernel (k_sell): SBELL as in the SBELL paper, values column-major inside a slice
//     of S block rows so consecutive block rows read consecutive addresses. SELL is SBELL with
//     1x1 blocks, BELL is SBELL with one slice of all block rows (S = nbrows), ELL is BELL with
//     1x1 blocks: the address formulas of hk_impl.h coincide.
// Each block row gets a group of tpr threads (1..32, a power of two, inside one warp); lane l
// takes the row's blocks l, l+tpr, ... and the group sums with warp shuffles. Groups loop over
// block rows with a grid stride (used only beyond 2^22 blocks, 2^16 when fused). The fused
// kernels write one partial per block and value into the matrix's own buffer; the grid depends
// only on the matrix, so the sums repeat. Sums run in double in both precisions and are rounded
// once per output entry, as on the CPU backend.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "cuda_impl.cuh"

static int is_rowptr_family(hk_format f)
{
    return f == HK_FMT_CSR || f == HK_FMT_BSR || f == HK_FMT_CUSPARSE_CSR ||
           f == HK_FMT_CUSPARSE_BSR;
}
static int is_cusparse(hk_format f)
{
    return f == HK_FMT_CUSPARSE_CSR || f == HK_FMT_CUSPARSE_BSR;
}

/* ---- epilogues: what the row kernels do with each entry v of A x ------------------------ */
/* An epilogue sums K values per thread block into the part buffer (NF: their array's size, at
 * least 1); begin() runs first in every thread and false skips the whole kernel. With FIN the
 * last block of the grid also runs finish() (stage 2 of the sums) in the same kernel, so no
 * second launch waits on the first; MINB is the sliced kernel's minimum of resident blocks per
 * SM (its register budget). Besides the plain store, the pipelined methods' vector updates run
 * here, on each entry of A x as it is made, so the product is never written and read back and
 * a launch is saved. */
/* What every epilogue but pipelined CG's shares: no stage 2 in the kernel, no register cap.
 * (An aggregate with a base: initialise it as {{}, members...}.) */
struct epi_base {
    static constexpr bool FIN = false;
    static constexpr int MINB = 1;
    __device__ void finish(const double *, unsigned) const {}
};

template <typename T> struct epi_store : epi_base { /* y = A x */
    static constexpr int K = 0, NF = 1;
    T *y;
    __device__ bool begin() { return true; }
    __device__ int k() const { return 0; }
    __device__ void entry(int64_t i, double v, double (&)[NF]) const { y[i] = (T)v; }
};

/* Entry i's terms of the fused dot products of f over y (y_i = v): w_j,i (d_j,i) y_i. */
__device__ __forceinline__ void fuse_terms(const hk_cu_fuse &f, int64_t i, double v,
                                           double (&fs)[4])
{
#pragma unroll
    for (int j = 0; j < 4; j++) {
        if (j < f.k) {
            double w = f.w[j] ? f.w[j][i] : v;
            if (f.d[j]) w = f.d[j][i] * w;
            fs[j] += w * v;
        }
    }
}

struct epi_dots : epi_base { /* y = A x and the dot products of f (hk_cu_mat_spmv_fused) */
    static constexpr int K = 4, NF = 4;
    double *y;
    hk_cu_fuse f;
    __device__ bool begin() { return true; }
    __device__ int k() const { return f.k; }
    __device__ void entry(int64_t i, double v, double (&fs)[NF]) const
    {
        y[i] = v;
        fuse_terms(f, i, v, fs);
    }
};

template <typename T> struct epi_poly : epi_base { /* vec_poly_step of t = A x (t not stored) */
    static constexpr int K = 0, NF = 1;
    T *y, *z;
    const T *d, *x;
    double a, b, c, e, f;
    __device__ bool begin() { return true; }
    __device__ int k() const { return 0; }
    __device__ void entry(int64_t i, double v, double (&)[NF]) const
    {
        hk_cu_poly_entry<T>(i, y, a, d, (T)v, b, x, c, z, e, f);
    }
};

/* y = A x and x . y (spmv_dot_s: pc=amg's bound, p.Ap), any precision: y rounded to T as
 * the plain store, the sum of x_i y_i in double, its stage 2 in the grid's last block. */
template <typename T> struct epi_dot_s {
    static constexpr int K = 1, NF = 1;
    static constexpr bool FIN = true;
    static constexpr int MINB = 1;
    T *y;
    const T *x;
    double *s;
    __device__ bool begin() { return true; }
    __device__ int k() const { return K; }
    __device__ void entry(int64_t i, double v, double (&fs)[NF]) const
    {
        const T yi = (T)v;
        y[i] = yi;
        fs[0] += (double)x[i] * (double)yi;
    }
    __device__ void finish(const double *part, unsigned nb) const
    {
        __shared__ double d[1];
        hk_cu_sum_parts(part, nb, 1, d);
        if (threadIdx.x == 0) *s = d[0];
    }
};

/* amg_cheb_step's vectors and coefficients on the device (hk_impl.h, hk_cheb_step). */
template <typename T> struct cheb_args {
    const T *rin, *D, *dp;
    T *r, *dn, *x;
    double a, c;
    int xmode;
};

/* Node block I of amg_cheb_step, with v its BS entries of A p where PROD (else no product):
 * the arithmetic of vec_axpby and bdiag_apply entry by entry (hk_cu_axpby_entry,
 * hk_cu_bdiag_block), so the digits are those of the separate kernels. */
template <typename T, int BS, bool PROD>
__device__ __forceinline__ void cheb_block(const cheb_args<T> &q, int64_t I, const double (&v)[BS])
{
    T u[BS];
#pragma unroll
    for (int r = 0; r < BS; r++) {
        const int64_t i = I * BS + r;
        u[r] = PROD ? hk_cu_axpby_entry<T>(1.0, q.rin[i], -1.0, (T)v[r]) : q.rin[i];
        if (q.r) q.r[i] = u[r];
    }
    if (!q.D) return;
    T s[BS];
    hk_cu_bdiag_block<T, BS>(q.D + I * (BS * BS), u, s);
#pragma unroll
    for (int r = 0; r < BS; r++) {
        const int64_t i = I * BS + r;
        const T w = q.c == 0.0 ? (T)(q.a * s[r]) : hk_cu_axpby_entry<T>(q.a, s[r], q.c, q.dp[i]);
        if (q.dn) q.dn[i] = w;
        if (!q.x) continue;
        bool none = q.xmode & HK_CHEB_X_ZERO;
        T xv = none ? (T)0 : q.x[i];
        if (q.xmode & HK_CHEB_X_DP) {
            xv = none ? q.dp[i] : hk_cu_axpby_entry<T>(1.0, q.dp[i], 1.0, xv);
            none = false;
        }
        if (q.xmode & HK_CHEB_X_DN) xv = none ? w : hk_cu_axpby_entry<T>(1.0, w, 1.0, xv);
        q.x[i] = xv;
    }
}

/* A multigrid level's Chebyshev step (amg_cheb_step) on each block row of A p: the block's
 * entries at once, which its node block of D^-1 needs (ROWS: row_out hands over the row). */
template <typename T> struct epi_cheb : epi_base {
    static constexpr int K = 0, NF = 1;
    static constexpr bool ROWS = true;
    cheb_args<T> q;
    __device__ bool begin() { return true; }
    __device__ int k() const { return 0; }
    template <int BS>
    __device__ void rows(int64_t row, const double (&acc)[BS], double (&)[NF]) const
    {
        cheb_block<T, BS, true>(q, row, acc);
    }
};

/* Whether an epilogue takes whole block rows (rows<BS>) instead of entries (entry). */
template <class E, class = void> struct epi_rows : std::false_type {};
template <class E> struct epi_rows<E, std::void_t<decltype(E::ROWS)>> : std::bool_constant<E::ROWS> {};

struct epi_gv { /* n = A m, then pipecg_gv_step's updates, inner products and stage 2 */
    static constexpr int K = 7, NF = 7;
    static constexpr bool FIN = true;
    /* at least 3 blocks per SM (85 registers, not 90): 12k block rows of 8 lanes then fit in one
     * wave of an H100's 132 SMs instead of 1.44 */
    static constexpr int MINB = 3;
    double *S;
    double alpha, beta;
    double *x, *r, *u, *w, *n, *z, *q, *s, *p;
    const double *m;
    __device__ bool begin()
    {
        if (S[HK_G_HALT] != 0) return false; /* the same for every thread */
        alpha = S[HK_G_ALPHA], beta = S[HK_G_BETA];
        return true;
    }
    __device__ int k() const { return K; }
    __device__ void entry(int64_t i, double v, double (&fs)[NF]) const
    {
        n[i] = v;
        hk_pipecg_gv_entry(i, alpha, beta, x, r, u, w, m, v, z, q, s, p, fs);
    }
    __device__ void finish(const double *part, unsigned nb) const
    {
        hk_cu_pipecg_gv_stage2(part, nb, S);
    }
};

/* The second stage of the paper's pipelined CG step (pipecg_paper_step) by one whole block:
 * p.Ap and Ap.(dinv.*Ap) from the SpMV's nb partials each in part, r.r and r.z from the
 * update kernel's nb1 each in part1, into S. */
__device__ __forceinline__ void paper_stage2(const double *part, unsigned nb, const double *part1,
                                             unsigned nb1, double *S)
{
    __shared__ double d[4];
    hk_cu_sum_parts(part, nb, 2, d);
    hk_cu_sum_parts(part1, nb1, 2, d + 2);
    if (threadIdx.x == 0) {
        S[HK_S_PAP] = d[0];
        S[HK_S_APZ] = d[1];
        S[HK_S_RR] = d[2];
        S[HK_S_RZ] = d[3];
    }
}

/* Ap = A p with Algorithm 2's line 14, (Ap, Ap) and (p, Ap) (with Jacobi (Ap, dinv.*Ap)), and
 * in the last block the iteration's whole second stage, the update kernel's sums included:
 * the paper's second kernel. */
struct epi_paper {
    static constexpr int K = 2, NF = 2;
    static constexpr bool FIN = true;
    static constexpr int MINB = 1;
    double *Ap;
    const double *p, *dinv;
    const double *part1; /* the update kernel's partials of r.r and r.z */
    unsigned nb1;
    double *S;
    __device__ bool begin() { return true; }
    __device__ int k() const { return K; }
    __device__ void entry(int64_t i, double v, double (&fs)[NF]) const
    {
        Ap[i] = v;
        fs[0] += p[i] * v;
        fs[1] += v * (dinv ? dinv[i] * v : v);
    }
    __device__ void finish(const double *part, unsigned nb) const
    {
        paper_stage2(part, nb, part1, nb1, S);
    }
};

/* w = A u with Chronopoulos-Gear's three inner products r.u, w.u, r.r (spmv_cgcg; the GPU
 * Krylov thesis fuses the dot products into the SpMV kernel), their second stage in the last
 * block into dres, which the host then reads. */
struct epi_cgcg {
    static constexpr int K = 3, NF = 3;
    static constexpr bool FIN = true;
    static constexpr int MINB = 1;
    double *w;
    const double *u, *r;
    double *dres;
    __device__ bool begin() { return true; }
    __device__ int k() const { return K; }
    __device__ void entry(int64_t i, double v, double (&fs)[NF]) const
    {
        w[i] = v;
        const double ui = u[i], ri = r[i];
        fs[0] += ri * ui;
        fs[1] += v * ui;
        fs[2] += ri * ri;
    }
    __device__ void finish(const double *part, unsigned nb) const
    {
        __shared__ double d[3];
        hk_cu_sum_parts(part, nb, 3, d);
        if (threadIdx.x < 3) dres[threadIdx.x] = d[threadIdx.x];
    }
};

/* ---- kernels --------------------------------------------------------------------------- */

/* Sum a group's per-lane results and hand each entry of the block row to the epilogue. (Each
 * entry in its own lane of the group instead of all in lane 0 cost fp32 SBELL 5-30 % on an
 * H100, quad 0.32M 15.8 -> 20.8 us, hex 0.5M 77.0 -> 81.8, and gained nothing measurable.) */
template <int BS, class E>
__device__ __forceinline__ void row_out(double (&acc)[BS], bool active, int lane, int tpr,
                                        int64_t row, const E &epi, double (&fs)[E::NF])
{
    for (int o = tpr >> 1; o > 0; o >>= 1)
#pragma unroll
        for (int r = 0; r < BS; r++)
            acc[r] += __shfl_down_sync(0xffffffffu, acc[r], o, tpr);
    if (active && lane == 0) {
        if constexpr (epi_rows<E>::value) {
            epi.template rows<BS>(row, acc, fs);
        } else {
#pragma unroll
            for (int r = 0; r < BS; r++)
                epi.entry(row * BS + r, acc[r], fs);
        }
    }
}

/* The end of a row kernel: the block's partial sums, and with FIN the grid's stage 2 in its
 * last block. */
template <class E>
__device__ __forceinline__ void kernel_end(const E &epi, double (&fs)[E::NF], double *part,
                                           unsigned *ticket)
{
    if (!E::K) return;
    hk_block_reduce<E::NF>(fs, epi.k(), part);
    if (E::FIN && hk_cu_last_block(ticket)) epi.finish(part, gridDim.x);
}

/* Loop header shared by both families: g is this group's block row, gw the first block row
 * of this warp (uniform across the warp, so every lane runs the shuffles). */
#define GROUP_LOOP(nbrows)                                                                         \
    const int64_t t_ = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;                             \
    const int lane = threadIdx.x & (tpr - 1);                                                      \
    const int64_t gstride = ((int64_t)gridDim.x * blockDim.x) / tpr;                               \
    int64_t g = t_ / tpr;                                                                          \
    for (int64_t gw = (t_ & ~(int64_t)31) / tpr; gw < (nbrows); gw += gstride, g += gstride)

template <typename T, int BS, class E>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_bsr(int64_t nbrows, int tpr, const int64_t *__restrict__ rowptr,
          const int32_t *__restrict__ col, const T *__restrict__ val, const T *__restrict__ x,
          E epi, double *part, unsigned *ticket)
{
    if (!epi.begin()) return;
    double fs[E::NF] = {};
    GROUP_LOOP(nbrows)
    {
        double acc[BS];
#pragma unroll
        for (int r = 0; r < BS; r++)
            acc[r] = 0;
        const bool active = g < nbrows;
        if (active) {
            const int64_t end = rowptr[g + 1];
            for (int64_t kk = rowptr[g] + lane; kk < end; kk += tpr) {
                const int64_t c = col[kk];
                const T *v = val + kk * (BS * BS);
#pragma unroll
                for (int cc = 0; cc < BS; cc++) {
                    const double xc = x[c * BS + cc];
#pragma unroll
                    for (int r = 0; r < BS; r++)
                        acc[r] += (double)v[r * BS + cc] * xc;
                }
            }
        }
        row_out<BS>(acc, active, lane, tpr, g, epi, fs);
    }
    kernel_end(epi, fs, part, ticket);
}

/* The slot loop of one block row's lane of the sliced kernel: acc += the row's slots lane,
 * lane + tpr, ... (< w) times x. With AHEAD the next slot's column is loaded one iteration
 * early, so a slot's x gathers wait for no load of their own iteration. Padding slots hold
 * column -1 and zero values; their loads are not skipped by a branch, so the value loads need
 * not wait for the column and more loads are in flight, and the x entry of a padding slot
 * (read at column 0) is selected away, so NaN or Inf in x never reaches a row through
 * padding. The matrix is read once per product, so its loads are marked streaming (__ldcs:
 * evict first) and leave the caches to x. */
template <typename T, int BS, bool AHEAD>
__device__ __forceinline__ void sell_slots(double (&acc)[BS], int lane, int tpr, int w,
                                           int64_t base, int64_t S, int64_t j,
                                           const int32_t *__restrict__ col,
                                           const T *__restrict__ val, const T *__restrict__ x)
{
    int32_t cn = AHEAD && lane < w ? __ldcs(col + base + (int64_t)lane * S + j) : -1;
#pragma unroll 1
    for (int k = lane; k < w; k += tpr) {
        const int64_t slot = base + (int64_t)k * S;
        const int32_t c = AHEAD ? cn : __ldcs(col + slot + j);
        if (AHEAD && k + tpr < w) cn = __ldcs(col + slot + (int64_t)tpr * S + j);
        const int64_t cs = c >= 0 ? (int64_t)c * BS : 0;
        const T *v = val + slot * (BS * BS) + j;
#pragma unroll
        for (int cc = 0; cc < BS; cc++) {
            const T xr = __ldg(x + cs + cc);
            const double xc = c >= 0 ? (double)xr : 0.0;
#pragma unroll
            for (int r = 0; r < BS; r++)
                acc[r] += (double)__ldcs(v + (r * BS + cc) * S) * xc;
        }
    }
}

/* Whether sell_slots loads the column ahead, measured on an H100 (bench spmv --paper, two
 * runs each, us per product): fp32 gains with every block size (hex-1M 150.5 -> 143.2, 83 ->
 * 88 % of copy; hex-0.5M 81.5 -> 76.3; tet 61.6 -> 58.3; quad 18.7 -> 17.7; trirand 45.3 ->
 * 43.7), fp64 with 2x2 blocks a little (quad 31.4 -> 30.4, trirand 63.2 -> 62.3) and loses
 * with 3x3 and 6x6 (hex-1M 250 -> 255, hex6 259 -> 267), whose wider rows of values keep
 * enough loads in flight. Loading the next slot's values ahead as well cost registers and
 * gained nothing that repeated. */
template <typename T, int BS> constexpr bool sell_ahead()
{
    return sizeof(T) == 4 || BS <= 2;
}

/* One block row g (its slice's row j = g mod S) of the sliced kernel by a group of tpr lanes;
 * the row's entries then go to the epilogue. */
template <typename T, int BS, class E>
__device__ __forceinline__ void
sell_row(int64_t g, bool active, int lane, int tpr, int64_t S, const int64_t *__restrict__ sptr,
         const int32_t *__restrict__ swidth, const int32_t *__restrict__ perm,
         const int32_t *__restrict__ col, const T *__restrict__ val, const T *__restrict__ x,
         const E &epi, double (&fs)[E::NF])
{
    double acc[BS];
#pragma unroll
    for (int r = 0; r < BS; r++)
        acc[r] = 0;
    int64_t row = g;
    if (active) {
        const int64_t s = g / S, j = g - s * S;
        const int64_t base = sptr[s];
        /* Before the column was loaded ahead, measured on an H100 (bench spmv --paper, fp64 /
         * fp32): loading the padding slots without a branch took tet 106.6 -> 97.6 / 73.1 ->
         * 63.6 us, tri 71.2 -> 67.9, trirand 80.9 -> 78.4, hex-1M 256.6 -> 253.1 / 152.9 ->
         * 155.3; streaming matrix loads fp64 tri 67.6 -> 61.4 us, trirand 70.1 -> 62.6, tet
         * 94.8 -> 92.0, hex-1M 252.9 -> 249.5 (96 % of copy), fp32 hex-1M 158.4 -> 151.7.
         * The kernel's __launch_bounds__(HK_CU_BLOCK, 1) (MINB of the plain store) and the
         * unroll 1 in sell_slots matter: with neither, ptxas kept 40 registers instead of 56,
         * fewer loads in flight, and hex-1M fp64 took 272 us instead of 253; unrolling the slot
         * loop or forcing more blocks per SM was slower (so was two slots per pass for small
         * matrices: bracket 37k DOFs 29.4 against 29.0 us, hex-1M 257.1 against 247.9). */
        sell_slots<T, BS, sell_ahead<T, BS>()>(acc, lane, tpr, swidth[s], base, S, j, col, val, x);
        if (perm) row = perm[g];
    }
    row_out<BS>(acc, active, lane, tpr, row, epi, fs);
}

template <typename T, int BS, class E>
__global__ void __launch_bounds__(HK_CU_BLOCK, E::MINB)
    k_sell(int64_t nbrows, int64_t S, int tpr, const int64_t *__restrict__ sptr,
           const int32_t *__restrict__ swidth, const int32_t *__restrict__ perm,
           const int32_t *__restrict__ col, const T *__restrict__ val, const T *__restrict__ x,
           E epi, double *part, unsigned *ticket)
{
    if (!epi.begin()) return;
    double fs[E::NF] = {};
    GROUP_LOOP(nbrows)
    {
        sell_row<T, BS>(g, g < nbrows, lane, tpr, S, sptr, swidth, perm, col, val, x, epi, fs);
    }
    kernel_end(epi, fs, part, ticket);
}

/* The sliced kernel with lanes per slice (hk_cu_mat.wtab): warp w takes the 32 / L rows
 * r0, r0 + 1, ... of slice s with L lanes each, (s, r0 | L << 16) = wtab[w]. One warp per entry,
 * no grid stride. */
template <typename T, int BS, class E>
__global__ void __launch_bounds__(HK_CU_BLOCK, E::MINB)
    k_sell_wide(int64_t nbrows, int64_t S, int64_t nwarps, const int2 *__restrict__ wtab,
                const int64_t *__restrict__ sptr, const int32_t *__restrict__ swidth,
                const int32_t *__restrict__ perm, const int32_t *__restrict__ col,
                const T *__restrict__ val, const T *__restrict__ x, E epi, double *part,
                unsigned *ticket)
{
    if (!epi.begin()) return;
    double fs[E::NF] = {};
    const int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
    const int wl = threadIdx.x & 31;
    int L = 1;
    int64_t g = 0;
    bool active = false;
    if (w < nwarps) {
        const int2 e = wtab[w];
        L = e.y >> 16;
        const int64_t j = (e.y & 0xffff) + wl / L;
        g = (int64_t)e.x * S + j;
        active = j < S && g < nbrows;
    }
    sell_row<T, BS>(g, active, wl & (L - 1), L, S, sptr, swidth, perm, col, val, x, epi, fs);
    kernel_end(epi, fs, part, ticket);
}

/* Fused values over y computed after a separate SpMV (formats without a fused kernel). */
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_fuse_reduce(int64_t n, const double *__restrict__ y, hk_cu_fuse f, double *part)
{
    double fs[4] = {0, 0, 0, 0};
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        fuse_terms(f, i, y[i], fs);
    }
    hk_block_reduce<4>(fs, f.k, part);
}

/* After a separate SpMV (formats without a fused kernel): the sums of epi_paper, then of
 * epi_cgcg, over all entries, partials into part. */
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_paper_reduce(int64_t n, const double *__restrict__ p, const double *__restrict__ Ap,
                   const double *__restrict__ dinv, double *part)
{
    double fs[2] = {0, 0};
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const double v = Ap[i];
        fs[0] += p[i] * v;
        fs[1] += v * (dinv ? dinv[i] * v : v);
    }
    hk_block_reduce<2>(fs, 2, part);
}

__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_paper_finish(const double *part, unsigned nb, const double *part1, unsigned nb1, double *S)
{
    paper_stage2(part, nb, part1, nb1, S);
}

__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_cgcg_reduce(int64_t n, const double *__restrict__ u, const double *__restrict__ w,
                  const double *__restrict__ r, double *part)
{
    double fs[3] = {0, 0, 0};
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const double ui = u[i], ri = r[i];
        fs[0] += ri * ui;
        fs[1] += w[i] * ui;
        fs[2] += ri * ri;
    }
    hk_block_reduce<3>(fs, 3, part);
}

int hk_cu_fuse_reduce(int64_t n, const double *y, const hk_cu_fuse &f, unsigned *nb)
{
    *nb = hk_cu_rgrid(n, (const void *)k_fuse_reduce);
    k_fuse_reduce<<<*nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(n, y, f, hk_cu.part);
    HK_CU_LAUNCHED();
    return 0;
}

/* Occupancy of the reducing kernel, found at start-up and not first inside a graph capture. */
void hk_cu_spmv_init_grids(void)
{
    hk_cu_rgrid(1, (const void *)k_fuse_reduce);
    hk_cu_rgrid(1, (const void *)k_paper_reduce);
    hk_cu_rgrid(1, (const void *)k_cgcg_reduce);
}

/* ---- launch ---------------------------------------------------------------------------- */

/* Grid of a format's kernel: one group of tpr lanes per block row, so the fused kernel is
 * scheduled exactly like the plain one. (A fused grid capped at 1024 blocks left a tail: on
 * the H200 at 1M DOFs a pipelined-CG iteration took 0.27 ms against 0.18 ms for the plain
 * SBELL SpMV alone.) Beyond HK_CU_FUSED_MAXB blocks the kernel walks the rest with its grid
 * stride. */
#define HK_CU_FUSED_MAXB (1 << 16)
/* Largest system whose fused ops run in the SpMV's epilogue (see fuse_in_spmv). */
#define HK_CU_FUSE_MAX_ROWS (1 << 18)
static unsigned grid_blocks(int64_t nbrows, int tpr, int fused)
{
    int64_t nb = (nbrows * tpr + HK_CU_BLOCK - 1) / HK_CU_BLOCK;
    if (fused && nb < 1) nb = 1; /* the fused sums must still be written (zero) */
    if (nb > (fused ? HK_CU_FUSED_MAXB : (1 << 22))) nb = fused ? HK_CU_FUSED_MAXB : (1 << 22);
    return (unsigned)nb;
}

/* Grid of the lanes-per-slice kernel: one warp per table entry. */
static unsigned warps_grid(int64_t nwarps)
{
    return (unsigned)((nwarps + HK_CU_BLOCK / 32 - 1) / (HK_CU_BLOCK / 32));
}

template <typename T, int BS, class E>
static void launch_bs(const hk_mat *A, const hk_cu_mat *m, const T *x, const E &epi,
                      unsigned *nbout)
{
    const unsigned nb =
        m->wtab ? warps_grid(m->nwarps) : grid_blocks(m->nbrows, m->tpr, E::K > 0);
    *nbout = nb;
    if (!nb) return;
    if (is_rowptr_family(A->fmt))
        k_bsr<T, BS, E><<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            m->nbrows, m->tpr, m->rowptr, m->colind, (const T *)m->val, x, epi, m->part, m->ticket);
    else if (m->wtab)
        k_sell_wide<T, BS, E><<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            m->nbrows, m->S, m->nwarps, m->wtab, m->sptr, m->swidth, m->perm, m->colind,
            (const T *)m->val, x, epi, m->part, m->ticket);
    else
        k_sell<T, BS, E><<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            m->nbrows, m->S, m->tpr, m->sptr, m->swidth, m->perm, m->colind, (const T *)m->val, x,
            epi, m->part, m->ticket);
}

/* A x through one of the two kernel families with epilogue epi (T the matrix's precision). */
template <typename T, class E>
static int launch(const hk_mat *A, const void *x, const E &epi, unsigned *nbout)
{
    const hk_cu_mat *m = (const hk_cu_mat *)A->bdata;
    const T *xt = (const T *)x;
    unsigned nb = 0;
    switch (m->bs) {
    case 1: launch_bs<T, 1>(A, m, xt, epi, &nb); break;
    case 2: launch_bs<T, 2>(A, m, xt, epi, &nb); break;
    case 3: launch_bs<T, 3>(A, m, xt, epi, &nb); break;
    case 4: launch_bs<T, 4>(A, m, xt, epi, &nb); break;
    case 5: launch_bs<T, 5>(A, m, xt, epi, &nb); break;
    case 6: launch_bs<T, 6>(A, m, xt, epi, &nb); break;
    default: return hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                                 "cuda SpMV: block size %d (must be 1 to 6)", m->bs);
    }
    HK_CU_LAUNCHED();
    if (nbout) *nbout = nb;
    return 0;
}

static int cusparse_spmv(hk_mat *A, const hk_vec *x, hk_vec *y)
{
    hk_cu_mat *m = (hk_cu_mat *)A->bdata;
    HK_CU_SPARSE(cusparseDnVecSetValues(m->dx, x->data));
    HK_CU_SPARSE(cusparseDnVecSetValues(m->dy, y->data));
    if (A->prec == HK_FP64) {
        const double one = 1, zero = 0;
        HK_CU_SPARSE(cusparseSpMV(hk_cu.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, m->sp, m->dx,
                                  &zero, m->dy, CUDA_R_64F, m->alg, m->spbuf));
    } else {
        const float one = 1, zero = 0;
        HK_CU_SPARSE(cusparseSpMV(hk_cu.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, m->sp, m->dx,
                                  &zero, m->dy, CUDA_R_32F, m->alg, m->spbuf));
    }
    return 0;
}

/* Formats whose SpMV is not one of the two kernel families (no fused variant): PCSR and the
 * CSR kernels of cuda_csr.cu. */
static int own_kernel(const hk_mat *A)
{
    const hk_cu_mat *m = (const hk_cu_mat *)A->bdata;
    return A->fmt == HK_FMT_PCSR || (A->fmt == HK_FMT_CSR && (m->csr_kernel == HK_CSR_ADAPTIVE ||
                                                              m->csr_kernel == HK_CSR_VECTOR));
}

int hk_cu_mat_spmv(hk_mat *A, const hk_vec *x, hk_vec *y)
{
    HK_CHECK(A->bdata, HK_ERR_ARG, "cuda backend: matrix was not built");
    HK_CHECK(x->prec == A->prec && y->prec == A->prec && x->n == A->ncols && y->n == A->nrows,
             HK_ERR_ARG, "cuda backend: SpMV vectors differ from the matrix in size or precision");
    if (is_cusparse(A->fmt)) return cusparse_spmv(A, x, y);
    if (A->fmt == HK_FMT_PCSR) return hk_cu_pcsr_spmv(A, x->data, y->data);
    if (own_kernel(A)) return hk_cu_csr_spmv(A, x->data, y->data);
    if (A->prec == HK_FP64) return launch<double>(A, x->data, epi_store<double>{{}, D(y)}, NULL);
    return launch<float>(A, x->data, epi_store<float>{{}, (float *)y->data}, NULL);
}

/* Whether a fused op runs its work in the SpMV's epilogue: the two kernel families only,
 * and small systems only. Measured on the H200 (hooke bench cg, pipelined CG, SBELL): 24k
 * DOFs fused 0.0204 ms/it vs 0.0216 unfused (latency-bound: one launch less wins); 1M DOFs
 * fused 0.244 vs 0.210 unfused (the fused kernel's extra registers cost the bandwidth-bound
 * SpMV more than the second pass over y). The papers' fused ops follow the same rule
 * (pipecg_paper_step, spmv_cgcg: the pipelined-solver paper and the GPU Krylov thesis fuse at
 * every size, but on the H100 at 2.3M DOFs the paper's pipelined CG took 0.94x cg's time per
 * iteration fused and 0.91x unfused, cgcg 0.99x and 0.96x). HOOKE_CUDA_FUSE=1 or 0 forces
 * either. */
static int fuse_forced(void)
{
    static int force = -2;
    if (force == -2) {
        const char *e = getenv("HOOKE_CUDA_FUSE");
        force = e && (e[0] == '0' || e[0] == '1') ? e[0] - '0' : -1;
    }
    return force;
}

static int fuse_in_spmv(const hk_mat *A)
{
    const int force = fuse_forced();
    if (is_cusparse(A->fmt) || own_kernel(A)) return 0;
    return force >= 0 ? force : A->nrows < HK_CU_FUSE_MAX_ROWS;
}

int hk_cu_mat_spmv_fused(hk_mat *A, const hk_vec *x, hk_vec *y, const hk_cu_fuse &f, unsigned *nb,
                         const double **part)
{
    HK_CHECK(A->bdata, HK_ERR_ARG, "cuda backend: matrix was not built");
    HK_CHECK(A->prec == HK_FP64 && x->prec == HK_FP64 && y->prec == HK_FP64, HK_ERR_ARG,
             "cuda backend: the fused SpMV of the pipelined methods runs in fp64 (matrix "
             "precision %s)",
             A->prec == HK_FP64 ? "fp64" : "fp32");
    HK_CHECK(x->n == A->ncols && y->n == A->nrows, HK_ERR_ARG,
             "cuda backend: SpMV vectors differ from the matrix in size");
    if (!fuse_in_spmv(A)) {
        HK_CALL(hk_cu_mat_spmv(A, x, y));
        *part = hk_cu.part;
        return hk_cu_fuse_reduce(y->n, (const double *)y->data, f, nb);
    }
    *part = ((const hk_cu_mat *)A->bdata)->part;
    return launch<double>(A, x->data, epi_dots{{}, D(y), f}, nb);
}

/* The spmv_dot2 and spmv_mdot ops of the pipelined methods: the fused SpMV and the stage 2 of
 * its dot products. */
int hk_cu_spmv_dot2(hk_mat *A, const hk_vec *p, hk_vec *Ap, const hk_vec *dinv, const hk_vec *r,
                    double *S)
{
    if (r) {
        FP64(r);
        LEN(Ap, r);
    }
    if (dinv) {
        FP64(dinv);
        LEN(Ap, dinv);
    }
    LEN(p, Ap);
    hk_cu_fuse f;
    f.k = 3;
    f.w[0] = CD(p); /* p.Ap */
    f.d[0] = NULL;
    f.w[1] = NULL; /* Ap.(dinv.*Ap) */
    f.d[1] = dinv ? CD(dinv) : NULL;
    f.w[2] = r ? CD(r) : CD(p); /* r.(dinv.*Ap), or p.Ap again */
    f.d[2] = r && dinv ? CD(dinv) : NULL;
    f.w[3] = f.d[3] = NULL;
    unsigned nb;
    const double *part;
    HK_CALL(hk_cu_mat_spmv_fused(A, p, Ap, f, &nb, &part));
    hk_cu_outs out;
    out.p[0] = S + HK_S_PAP;
    out.p[1] = S + HK_S_APZ;
    out.p[2] = S + HK_S_ZAP;
    return hk_cu_finish_part(part, nb, 3, out, HK_FIN_PLAIN, NULL);
}

int hk_cu_spmv_mdot(hk_mat *A, const hk_vec *x, hk_vec *y, int k, const hk_vec *const *W, double *S,
                    const int *slot)
{
    HK_CHECK(k >= 0 && k <= 4, HK_ERR_ARG, "spmv_mdot: at most 4 fused dot products (got %d)", k);
    hk_cu_fuse f;
    f.k = k;
    for (int j = 0; j < 4; j++) {
        f.w[j] = NULL;
        f.d[j] = NULL;
    }
    for (int j = 0; j < k; j++) {
        FP64(W[j]);
        LEN(W[j], y);
        f.w[j] = W[j] == y ? NULL : CD(W[j]);
    }
    unsigned nb;
    const double *part;
    HK_CALL(hk_cu_mat_spmv_fused(A, x, y, f, &nb, &part));
    if (!k) return 0;
    hk_cu_outs out;
    for (int j = 0; j < k; j++)
        out.p[j] = S + slot[j];
    return hk_cu_finish_part(part, nb, k, out, HK_FIN_PLAIN, NULL);
}

/* y = A x and x . y into the backend scalar *s (the spmv_dot_s op): one kernel where the
 * SpMV's epilogue can sum (fuse_in_spmv: the two kernel families, below 2^18 rows unless
 * HOOKE_CUDA_FUSE says otherwise), else the product and vec_dot_s. */
int hk_cu_spmv_dot_s(hk_mat *A, const hk_vec *x, hk_vec *y, double *s)
{
    HK_CHECK(A->bdata, HK_ERR_ARG, "cuda backend: matrix was not built");
    HK_CALL(hk_spmv_dot_check(A, x, y));
    if (!fuse_in_spmv(A)) {
        HK_CALL(hk_cu_mat_spmv(A, x, y));
        return hk_cu_vec_dot_s(x, y, s);
    }
    if (A->prec == HK_FP64)
        return launch<double>(A, x->data, epi_dot_s<double>{D(y), CD(x), s}, NULL);
    return launch<float>(A, x->data,
                         epi_dot_s<float>{(float *)y->data, (const float *)x->data, s}, NULL);
}

/* Algorithm 2's iteration as written (the pipecg_paper_step op): the update kernel, then the
 * SpMV with its two inner products and the second stage of all four in its last block; two
 * kernels. Without a fused kernel for the format: the SpMV, a reduction pass and a one-block
 * second stage. */
int hk_cu_pipecg_paper_step(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *p, hk_vec *Ap,
                            const hk_vec *dinv, double *S)
{
    HK_CHECK(A->bdata, HK_ERR_ARG, "cuda backend: matrix was not built");
    HK_CHECK(A->prec == HK_FP64 && A->nrows == A->ncols && p->n == A->nrows, HK_ERR_ARG,
             "cuda backend: pipecg_paper_step needs a square fp64 matrix of the vectors' size");
    unsigned nb1;
    HK_CALL(hk_cu_pipecg_paper_update(x, r, p, Ap, dinv, S, &nb1));
    const double *part1 = hk_cu.part, *dv = dinv ? CD(dinv) : NULL;
    if (fuse_in_spmv(A))
        return launch<double>(A, p->data, epi_paper{D(Ap), CD(p), dv, part1, nb1, S}, NULL);
    HK_CALL(hk_cu_mat_spmv(A, p, Ap));
    double *part2 = hk_cu.part + 2 * (size_t)nb1;
    const unsigned nb2 = hk_cu_rgrid(p->n, (const void *)k_paper_reduce);
    k_paper_reduce<<<nb2, HK_CU_BLOCK, 0, hk_cu.stream>>>(p->n, CD(p), CD(Ap), dv, part2);
    HK_CU_LAUNCHED();
    k_paper_finish<<<1, HK_CU_BLOCK, 0, hk_cu.stream>>>(part2, nb2, part1, nb1, S);
    HK_CU_LAUNCHED();
    return 0;
}

/* w = A u and cgcg's three inner products (the spmv_cgcg op), read by the host: one kernel
 * (the SpMV with the sums and, in its last block, their second stage) and one copy; without a
 * fused kernel for the format, the SpMV, a reduction pass and its second stage. */
int hk_cu_spmv_cgcg(hk_mat *A, const hk_vec *u, hk_vec *w, const hk_vec *r, double *d)
{
    HK_CHECK(A->bdata, HK_ERR_ARG, "cuda backend: matrix was not built");
    HK_CHECK(A->prec == HK_FP64 && A->nrows == A->ncols && u->n == A->nrows, HK_ERR_ARG,
             "cuda backend: spmv_cgcg needs a square fp64 matrix of the vectors' size");
    FP64(u);
    FP64(w);
    FP64(r);
    LEN(u, w);
    LEN(u, r);
    HK_CHECK(r->data != w->data && u->data != w->data, HK_ERR_ARG,
             "spmv_cgcg: w must be a vector other than u and r");
    if (fuse_in_spmv(A)) {
        HK_CALL(launch<double>(A, u->data, epi_cgcg{D(w), CD(u), CD(r), hk_cu.dres}, NULL));
        HK_CU(cudaMemcpyAsync(hk_cu.hres, hk_cu.dres, 3 * sizeof(double), cudaMemcpyDeviceToHost,
                              hk_cu.stream));
        HK_CU(cudaStreamSynchronize(hk_cu.stream));
        memcpy(d, hk_cu.hres, 3 * sizeof(double));
        return 0;
    }
    HK_CALL(hk_cu_mat_spmv(A, u, w));
    const unsigned nb = hk_cu_rgrid(u->n, (const void *)k_cgcg_reduce);
    k_cgcg_reduce<<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(u->n, CD(u), CD(w), CD(r), hk_cu.part);
    HK_CU_LAUNCHED();
    return hk_cu_finish_host(nb, 3, d);
}

/* t = A x and the polynomial step on it (the spmv_poly_step op), in one kernel where the
 * epilogue can run; t is then not written. */
int hk_cu_spmv_poly_step(hk_mat *A, const hk_vec *x, hk_vec *t, hk_vec *y, double a,
                         const hk_vec *d, double b, double c, hk_vec *z, double e, double f)
{
    HK_CHECK(A->bdata, HK_ERR_ARG, "cuda backend: matrix was not built");
    if (!fuse_in_spmv(A)) {
        HK_CALL(hk_cu_mat_spmv(A, x, t));
        return hk_cu_vec_poly_step(y, a, d, t, b, x, c, z, e, f);
    }
    const hk_vec *v[5] = {x, t, y, d, z};
    for (int j = 0; j < 5; j++)
        HK_CHECK(v[j]->prec == A->prec && v[j]->n == A->nrows && A->nrows == A->ncols, HK_ERR_ARG,
                 "cuda backend: spmv_poly_step on vectors that differ from the square matrix in "
                 "size or precision");
    if (A->prec == HK_FP64)
        return launch<double>(A, x->data,
                              epi_poly<double>{{}, D(y), D(z), CD(d), CD(x), a, b, c, e, f}, NULL);
    return launch<float>(A, x->data,
                         epi_poly<float>{{}, (float *)y->data, (float *)z->data,
                                         (const float *)d->data, (const float *)x->data, a, b, c,
                                         e, f},
                         NULL);
}

/* amg_cheb_step's entries without a product (v NULL) or after a separate one (v = A p). */
template <typename T, int BS>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_cheb(int64_t nb, const T *__restrict__ v, cheb_args<T> q)
{
    for (int64_t I = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; I < nb;
         I += (int64_t)gridDim.x * blockDim.x) {
        double vv[BS];
#pragma unroll
        for (int r = 0; r < BS; r++)
            vv[r] = v ? (double)v[I * BS + r] : 0.0;
        if (v)
            cheb_block<T, BS, true>(q, I, vv);
        else
            cheb_block<T, BS, false>(q, I, vv);
    }
}

/* The Chebyshev step in the SpMV's epilogue where the kernel's blocks are D's (sbell, bell,
 * bsr, and any format for a residual alone, D NULL); elsewhere (scalar formats of a block
 * matrix, cuSPARSE, csr's own kernels) or with HOOKE_CUDA_FUSE=0 the product into t and one
 * vector kernel. Unlike the Krylov methods' fused ops (fuse_in_spmv) at every size: this
 * epilogue sums nothing, it reads and writes what the separate kernels would. */
template <typename T> static int cheb_launch(hk_mat *A, const hk_cheb_step *s)
{
    const hk_cu_mat *m = (const hk_cu_mat *)A->bdata;
    auto dv = [](const hk_vec *v) { return v ? (const T *)v->data : (const T *)NULL; };
    auto mv = [](hk_vec *v) { return v ? (T *)v->data : (T *)NULL; };
    const cheb_args<T> q = {dv(s->rin), dv(s->D), dv(s->dp), mv(s->r), mv(s->dn), mv(s->x),
                            s->a,       s->c,     s->xmode};
    const int bs = s->D ? s->bs : 1;
    const bool epilogue = !is_cusparse(A->fmt) && !own_kernel(A) && fuse_forced() != 0 &&
                          (!s->D || m->bs == s->bs);
    if (s->p && epilogue) return launch<T>(A, s->p->data, epi_cheb<T>{{}, q}, NULL);
    if (s->p) HK_CALL(hk_cu_mat_spmv(A, s->p, s->t));
    const T *v = s->p ? dv(s->t) : NULL;
    const int64_t nb = A->nrows / bs;
    const unsigned g = hk_cu_grid(nb);
#define HK_CHEB_CASE(B)                                                                            \
    case B: k_cheb<T, B><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(nb, v, q); break;
    switch (bs) {
        HK_CHEB_CASE(1) HK_CHEB_CASE(2) HK_CHEB_CASE(3)
        HK_CHEB_CASE(4) HK_CHEB_CASE(5) HK_CHEB_CASE(6)
    }
#undef HK_CHEB_CASE
    HK_CU_LAUNCHED();
    return 0;
}

int hk_cu_amg_cheb_step(hk_mat *A, const hk_cheb_step *s)
{
    HK_CALL(hk_cheb_step_check(A, s));
    if (!A->nrows) return 0;
    return A->prec == HK_FP64 ? cheb_launch<double>(A, s) : cheb_launch<float>(A, s);
}

/* n = A m and pipelined CG's step (the spmv_pipecg_gv_step op): the step's updates, inner
 * products and their stage 2 in the SpMV kernel where its epilogue can run (one launch per
 * step), else the SpMV and the step's two kernels. */
int hk_cu_spmv_pipecg_gv_step(hk_mat *A, hk_vec *const *V, double *S)
{
    HK_CHECK(A->bdata, HK_ERR_ARG, "cuda backend: matrix was not built");
    if (!fuse_in_spmv(A) || A->prec != HK_FP64) {
        HK_CALL(hk_cu_mat_spmv(A, V[4], V[5]));
        return hk_cu_pipecg_gv_step(V, S);
    }
    for (int j = 0; j < 10; j++)
        HK_CHECK(V[j]->prec == HK_FP64 && V[j]->n == A->nrows && A->nrows == A->ncols, HK_ERR_ARG,
                 "cuda backend: spmv_pipecg_gv_step on vectors that differ from the square fp64 "
                 "matrix in size or precision");
    return launch<double>(A, V[4]->data,
                          epi_gv{S, 0.0, 0.0, D(V[0]), D(V[1]), D(V[2]), D(V[3]), D(V[5]), D(V[6]),
                                 D(V[7]), D(V[8]), D(V[9]), CD(V[4])},
                          NULL);
}

/* ---- kernel set-up after the build ---------------------------------------------------- */

/* Threads per block row when A->tpr is 0 (format.tpr=auto), from the matrix's row lengths:
 * - long rows get several lanes: the largest power of two up to 4 that leaves each lane at
 *   least 6 blocks of the mean row (hex elasticity, 27 blocks a row: 4; tet, 14: 2; 2D
 *   meshes, 7-9: 1). Measured on an H100 (bench spmv --paper, SBELL, fp64 / fp32, us, tpr 1
 *   against the rule's choice): hex 0.5M 139.5 / 93.0 against 129.3 / 84.8 (4), hex 1M 255.3 /
 *   154.6 against 251.8 / 157.4 (4), tet 97.9 / 64.0 against 96.2 / 63.2 (2), while the 2D
 *   matrices lose 6-12 % with 2 lanes. More lanes give more loads in flight and shorter
 *   per-thread work, so the last, partly filled wave of blocks costs less;
 * - then enough threads to fill the device for small systems (ANCHORS.md: one thread per block
 *   row leaves an H200 idle at 24k DOFs), at most 8 lanes and never more lanes than blocks in
 *   a row; four times that target when the longest row is over 2.5 times the mean, so the
 *   slices of the longest rows do not run alone at the end (H200, an unstructured Gmsh tet10
 *   bracket, 197k block rows, mean 25 blocks, longest 115: 219 us with 1 lane, 149 with 2, 129
 *   with 4; cuSPARSE CSR 194).
 * - fp32 with at least 1.5 waves of block rows keeps one lane (the exception in the code).
 * CSR's kernels choose their own (hk_cu_mat_finish). */
static int auto_tpr(hk_format fmt, int fp32, int64_t nbrows, double per_row, int64_t longest)
{
    int tpr = 1;
    if (fmt == HK_FMT_CSR) return tpr;
    const int factor = (double)longest > 2.5 * per_row ? 4 : 1;
    const int64_t fill = (int64_t)(hk_cu.nsm > 0 ? hk_cu.nsm : 100) * 1024;
    const int64_t target = fill * factor;
    /* fp32 with one lane per block row keeps its column look-ahead (sell_slots) busy over
     * the whole row; with at least 1.5 waves of rows that won (H100, us, 1 lane against the
     * row-length rule's 2-4: hex-1M 136.8-137.3 against 140.8-142.5, tet 0.62M 56.1-56.6
     * against 57.3-58.7), while hex 0.5M (1.3 waves) lost with it (80.0-80.6 against
     * 75.5-77.6). */
    if (!(fp32 && nbrows >= fill * 3 / 2))
        while (tpr < 4 && tpr * 2 * 6 <= per_row)
            tpr *= 2;
    while (tpr < 8 && nbrows * tpr < target && tpr * 2 <= per_row)
        tpr *= 2;
    return tpr;
}

/* Lanes per slice for the sliced kernel (format.tpr=auto): a slice more than 1.5 times as
 * wide as the mean slice per lane gets twice the lanes, again, up to 32, so no warp runs far
 * longer than the rest. On an unstructured mesh the row lengths vary (a tet10 vertex node
 * couples to up to ~115 nodes, an edge node to ~30; mean 25), and the sorted slices put the
 * longest rows together: with one lane count for all, their blocks ran 3-4 times as long as
 * the rest, and at a small size (one partial wave) the product waited for them (bracket, 37k
 * DOFs: the SMs were active 40 % of the kernel's time). Measured on an H100 (bench spmv,
 * SBELL fp64, us, factor 1.5 / table off / factor 1): bracket 37k DOFs 24.6 / 29.3 / 22.3,
 * hex 36k 17.2 / 17.6 / 23.5 (factor 1 doubled the 27-block interior slices of a hex mesh and
 * cost a second partial wave), tet 36k 14.2 / 14.4 / 18.1. Sets m->wtab and *lanes_max (the
 * most lanes of a slice), or leaves both when no slice needs more lanes. */
static int wide_slices(hk_cu_mat *m, int64_t nsl, int *lanes_max)
{
    int ierr = 0;
    int32_t *lanes = NULL; /* each slice's width, then its lanes */
    int2 *tab = NULL;
    const int tpr = m->tpr;
    const int64_t S = m->S;
    /* a warp of the table takes rows of one slice only: slices of fewer than 32 / tpr rows
     * would leave lanes idle, so they keep the plain kernel */
    if (nsl < 2 || S > 0xffff || S * tpr < 32) return 0;
    HK_TRY(hk_malloc((size_t)nsl * sizeof *lanes, &lanes));
    HK_CU_TRY(cudaMemcpyAsync(lanes, m->swidth, (size_t)nsl * sizeof *lanes,
                              cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
    {
        double sum = 0;
        for (int64_t s = 0; s < nsl; s++)
            sum += lanes[s];
        const double mean = sum / (double)nsl;
        int64_t nw = 0;
        int most = tpr;
        for (int64_t s = 0; s < nsl; s++) {
            int L = tpr;
            while (L < 32 && (double)lanes[s] * tpr > 1.5 * mean * L)
                L *= 2;
            lanes[s] = L;
            if (L > most) most = L;
            nw += (S + 32 / L - 1) / (32 / L); /* warps of 32 / L rows */
        }
        if (most == tpr || warps_grid(nw) > HK_CU_FUSED_MAXB) goto done;
        HK_TRY(hk_malloc((size_t)nw * sizeof *tab, &tab));
        int64_t k = 0;
        for (int64_t s = 0; s < nsl; s++)
            for (int64_t r0 = 0; r0 < S; r0 += 32 / lanes[s])
                tab[k++] = make_int2((int)s, (int)r0 | lanes[s] << 16);
        HK_TRY(hk_cu_malloc((void **)&m->wtab, (size_t)nw * sizeof *tab));
        HK_CU_TRY(cudaMemcpyAsync(m->wtab, tab, (size_t)nw * sizeof *tab, cudaMemcpyHostToDevice,
                                  hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        m->nwarps = nw;
        *lanes_max = most;
    }
done:
fail:
    free(lanes);
    free(tab);
    return ierr;
}

void hk_cu_mat_release(hk_mat *A)
{
    hk_cu_mat *m = (hk_cu_mat *)A->bdata;
    if (!m) return;
    if (m->dx) cusparseDestroyDnVec(m->dx);
    if (m->dy) cusparseDestroyDnVec(m->dy);
    if (m->sp) cusparseDestroySpMat(m->sp);
    void *arrays[] = {m->rowptr,   m->colind, m->val,   m->sptr,  m->swidth,
                      m->perm,     m->rowptr32, m->spbuf, m->part, m->part_row,
                      m->split,    m->carry,  m->rblock, m->wtab};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        if (arrays[i]) cudaFree(arrays[i]);
    free(m);
    A->bdata = NULL;
}

int hk_cu_mat_finish(hk_mat *A, hk_cu_mat *m, int64_t longest)
{
    int ierr = 0;
    void *tmpv = NULL;
    const hk_format fmt = A->fmt;
    const int bs = m->bs;
    const int64_t nbrows = m->nbrows, nslots = A->stored / ((int64_t)bs * bs);
    const int to_float = A->prec == HK_FP32;
    const size_t vsz = to_float ? 4 : 8;
    m->tpr = A->tpr > 0 ? A->tpr
                        : auto_tpr(fmt, to_float, nbrows,
                                   nbrows ? (double)A->nnz / ((double)bs * bs) / nbrows : 0,
                                   longest);
    if (fmt == HK_FMT_CSR) {
        /* format.csr.kernel: auto is the vector kernel (a group of lanes per row, 16-byte
         * loads; its group from the mean row unless format.tpr gives one), which beat the
         * adaptive kernel and cuSPARSE on every matrix of bench spmv --paper in both
         * precisions (docs/cuda.md); thread and warp are the classic row-per-thread and
         * row-per-warp kernels */
        m->csr_kernel = A->csr_kernel;
        if (m->csr_kernel == HK_CSR_AUTO) m->csr_kernel = HK_CSR_VECTOR;
        if (m->csr_kernel == HK_CSR_VECTOR && A->tpr <= 0)
            m->tpr = hk_cu_csr_group(nbrows, A->stored, to_float);
        if (m->csr_kernel == HK_CSR_THREAD) m->tpr = 1;
        if (m->csr_kernel == HK_CSR_WARP) m->tpr = 32;
        if (m->csr_kernel == HK_CSR_ADAPTIVE)
            HK_CALL(hk_cu_csr_blocks(m, nbrows, A->stored, A->prec == HK_FP32));
    }
    HK_CHECK(m->tpr >= 1 && m->tpr <= 32 && !(m->tpr & (m->tpr - 1)), HK_ERR_OPTION,
             "option format.tpr=%d must be 0 (auto) or a power of two up to 32", m->tpr);
    if (!is_cusparse(fmt)) {
        A->lanes_min = A->lanes_max = m->tpr;
        if ((fmt == HK_FMT_SELL || fmt == HK_FMT_SBELL) && A->tpr <= 0)
            HK_CALL(wide_slices(m, m->shape.nslices, &A->lanes_max));
        /* NF <= 8 partials per block, then the stage-2 ticket (zero) */
        m->part_nb = m->wtab ? warps_grid(m->nwarps) : grid_blocks(nbrows, m->tpr, 1);
        const size_t pbytes = sizeof(double) * 8 * m->part_nb;
        HK_CALL(hk_cu_malloc((void **)&m->part, pbytes + sizeof(double)));
        m->ticket = (unsigned *)(m->part + 8 * m->part_nb);
        HK_CU(cudaMemsetAsync(m->ticket, 0, sizeof(unsigned), hk_cu.stream));
        return 0;
    }
    {
        const cudaDataType vt = to_float ? CUDA_R_32F : CUDA_R_64F;
        if (fmt == HK_FMT_CUSPARSE_CSR || bs == 1) { /* 1x1 blocks: the same arrays as CSR */
            HK_CU_SPARSE_TRY(cusparseCreateCsr(&m->sp, A->nrows, A->ncols, nslots, m->rowptr32,
                                               m->colind, m->val, CUSPARSE_INDEX_32I,
                                               CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, vt));
            m->alg = CUSPARSE_SPMV_CSR_ALG1;
        } else {
            HK_CU_SPARSE_TRY(cusparseCreateBsr(&m->sp, nbrows, A->ncols / bs, nslots, bs, bs,
                                               m->rowptr32, m->colind, m->val, CUSPARSE_INDEX_32I,
                                               CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, vt,
                                               CUSPARSE_ORDER_ROW));
            m->alg = CUSPARSE_SPMV_ALG_DEFAULT;
        }
        /* descriptors need device pointers for the buffer query: a scratch vector */
        const int64_t nv = A->nrows > A->ncols ? A->nrows : A->ncols;
        HK_TRY(hk_cu_malloc(&tmpv, (size_t)(nv > 0 ? nv : 1) * vsz));
        HK_CU_SPARSE_TRY(cusparseCreateDnVec(&m->dx, A->ncols, tmpv, vt));
        HK_CU_SPARSE_TRY(cusparseCreateDnVec(&m->dy, A->nrows, tmpv, vt));
        size_t bsz = 0;
        if (to_float) {
            const float one = 1, zero = 0;
            HK_CU_SPARSE_TRY(cusparseSpMV_bufferSize(hk_cu.sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                     &one, m->sp, m->dx, &zero, m->dy, vt, m->alg,
                                                     &bsz));
        } else {
            const double one = 1, zero = 0;
            HK_CU_SPARSE_TRY(cusparseSpMV_bufferSize(hk_cu.sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                     &one, m->sp, m->dx, &zero, m->dy, vt, m->alg,
                                                     &bsz));
        }
        HK_TRY(hk_cu_malloc(&m->spbuf, bsz ? bsz : 256));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        cudaFree(tmpv);
        tmpv = NULL;
    }
    return 0;
fail:
    if (tmpv) {
        cudaStreamSynchronize(hk_cu.stream);
        cudaFree(tmpv);
    }
    return ierr;
}

// Loaded by hk_cu_init (cuda_impl.cuh: hk_cu_preloads): this file's kernels of the AMG set-up
// and the solve, for 2D and 3D elasticity.
void hk_cu_spmv_preload(void)
{
    static const void *const k[] = {
        (const void *)k_sell_wide<float, 3, epi_cheb<float>>,
        (const void *)k_sell_wide<float, 6, epi_cheb<float>>,
        (const void *)k_sell_wide<double, 3, epi_store<double>>,
        (const void *)k_sell_wide<float, 3, epi_store<float>>,
        (const void *)k_sell_wide<float, 6, epi_store<float>>,
        (const void *)k_bsr<float, 6, epi_cheb<float>>,
        (const void *)k_bsr<float, 6, epi_store<float>>,
        (const void *)k_cheb<float, 3>,
        (const void *)k_cheb<float, 6>,
        (const void *)k_sell_wide<float, 2, epi_cheb<float>>,
        (const void *)k_sell_wide<double, 2, epi_store<double>>,
        (const void *)k_sell_wide<float, 3, epi_store<float>>,
        (const void *)k_sell_wide<float, 3, epi_dot_s<float>>,
        (const void *)k_sell_wide<float, 6, epi_dot_s<float>>,
        (const void *)k_sell_wide<float, 2, epi_dot_s<float>>,
        (const void *)k_bsr<float, 6, epi_dot_s<float>>,
        (const void *)k_bsr<float, 3, epi_dot_s<float>>};
    hk_cu_preload(k, (int)(sizeof k / sizeof *k));
}
