// Vector ops of the CUDA backend in fp64 and fp32, the block-diagonal apply, and the
// multi-vector reductions. Element-wise ops mirror the CPU backend's arithmetic (scalars in
// double, one rounding to the vector's type); reductions accumulate in double.
#include "cuda_impl.cuh"

#define HK_GRID_STRIDE(i, n)                                                                       \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

#define SAME(a, b)                                                                                 \
    HK_CHECK((a)->prec == (b)->prec && (a)->n == (b)->n, HK_ERR_ARG,                               \
             "cuda backend: vectors differ in precision or length (%lld vs %lld)",                 \
             (long long)(a)->n, (long long)(b)->n)

template <typename T> __global__ void k_set(int64_t n, T *x, double a)
{
    HK_GRID_STRIDE(i, n) x[i] = (T)a;
}

int hk_cu_vec_set(hk_vec *x, double a)
{
    if (!x->n) return 0;
    if (x->prec == HK_FP64)
        k_set<double>
            <<<hk_cu_grid(x->n), HK_CU_BLOCK, 0, hk_cu.stream>>>(x->n, (double *)x->data, a);
    else
        k_set<float><<<hk_cu_grid(x->n), HK_CU_BLOCK, 0, hk_cu.stream>>>(x->n, (float *)x->data, a);
    HK_CU_LAUNCHED();
    return 0;
}

int hk_cu_vec_copy(hk_vec *y, const hk_vec *x)
{
    SAME(x, y);
    size_t bytes = (size_t)x->n * (x->prec == HK_FP64 ? 8 : 4);
    if (bytes)
        HK_CU(cudaMemcpyAsync(y->data, x->data, bytes, cudaMemcpyDeviceToDevice, hk_cu.stream));
    return 0;
}

template <typename A, typename B> __global__ void k_convert(int64_t n, B *y, const A *x)
{
    HK_GRID_STRIDE(i, n) y[i] = (B)x[i];
}

int hk_cu_vec_convert(hk_vec *y, const hk_vec *x)
{
    HK_CHECK(x->n == y->n, HK_ERR_ARG, "cuda backend: convert between vectors of different length");
    if (x->prec == y->prec) return hk_cu_vec_copy(y, x);
    if (!x->n) return 0;
    if (x->prec == HK_FP64)
        k_convert<double, float><<<hk_cu_grid(x->n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            x->n, (float *)y->data, (const double *)x->data);
    else
        k_convert<float, double><<<hk_cu_grid(x->n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            x->n, (double *)y->data, (const float *)x->data);
    HK_CU_LAUNCHED();
    return 0;
}

// y's blocks of bs (stride ys, padding zeroed) from x's (stride xs): a thread an entry of y.
template <typename A, typename B>
__global__ void k_convert_blocks(int64_t nb, int ys, B *y, int xs, const A *x, int bs)
{
    HK_GRID_STRIDE(i, nb * ys)
    {
        const int64_t k = i / ys;
        const int e = (int)(i - k * ys);
        y[i] = e < bs ? (B)x[k * xs + e] : (B)0;
    }
}

int hk_cu_vec_convert_blocks(hk_vec *y, int ys, const hk_vec *x, int xs, int bs)
{
    HK_CHECK(bs >= 1 && xs >= bs && ys >= bs && x->n % xs == 0 && y->n >= x->n / xs * ys,
             HK_ERR_ARG,
             "cuda backend: vec_convert_blocks of blocks of %d (strides %d into %d) between "
             "vectors of %lld and %lld entries",
             bs, xs, ys, (long long)x->n, (long long)y->n);
    const int64_t nb = x->n / xs, n = nb * ys;
    if (!n) return 0;
    const bool xd = x->prec == HK_FP64, yd = y->prec == HK_FP64;
#define CB(TX, TY)                                                                                 \
    k_convert_blocks<TX, TY><<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(                     \
        nb, ys, (TY *)y->data, xs, (const TX *)x->data, bs)
    if (xd && yd)
        CB(double, double);
    else if (xd)
        CB(double, float);
    else if (yd)
        CB(float, double);
    else
        CB(float, float);
#undef CB
    HK_CU_LAUNCHED();
    return 0;
}

__global__ void k_round_fp32(int64_t n, double *x)
{
    HK_GRID_STRIDE(i, n) x[i] = (double)(float)x[i];
}

int hk_cu_vec_round_fp32(hk_vec *x)
{
    HK_CHECK(x->prec == HK_FP64, HK_ERR_ARG, "cuda backend: vec_round_fp32 takes an fp64 vector");
    if (!x->n) return 0;
    k_round_fp32<<<hk_cu_grid(x->n), HK_CU_BLOCK, 0, hk_cu.stream>>>(x->n, (double *)x->data);
    HK_CU_LAUNCHED();
    return 0;
}

template <typename T> __global__ void k_scale(int64_t n, T *x, double a)
{
    HK_GRID_STRIDE(i, n) x[i] = (T)(a * x[i]);
}

int hk_cu_vec_scale(hk_vec *x, double a)
{
    if (!x->n) return 0;
    if (x->prec == HK_FP64)
        k_scale<double>
            <<<hk_cu_grid(x->n), HK_CU_BLOCK, 0, hk_cu.stream>>>(x->n, (double *)x->data, a);
    else
        k_scale<float>
            <<<hk_cu_grid(x->n), HK_CU_BLOCK, 0, hk_cu.stream>>>(x->n, (float *)x->data, a);
    HK_CU_LAUNCHED();
    return 0;
}

template <typename T> __global__ void k_axpby(int64_t n, T *y, double a, const T *x, double b)
{
    if (b == 0.0) {
        HK_GRID_STRIDE(i, n) y[i] = (T)(a * x[i]);
    } else {
        HK_GRID_STRIDE(i, n) y[i] = hk_cu_axpby_entry<T>(a, x[i], b, y[i]);
    }
}

int hk_cu_vec_axpby(hk_vec *y, double a, const hk_vec *x, double b)
{
    SAME(x, y);
    if (!x->n) return 0;
    const unsigned g = hk_cu_grid(x->n);
    if (x->prec == HK_FP64)
        k_axpby<double><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(x->n, (double *)y->data, a,
                                                             (const double *)x->data, b);
    else
        k_axpby<float><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(x->n, (float *)y->data, a,
                                                            (const float *)x->data, b);
    HK_CU_LAUNCHED();
    return 0;
}

// k_axpby with a = a0 * (*an / *ad) where an is given, b likewise (backend scalars, read by
// every thread: the quotient is the host's, so the digits are vec_axpby's).
template <typename T>
__global__ void k_axpby_s(int64_t n, T *y, double a0, const double *an, const double *ad,
                          const T *x, double b0, const double *bn, const double *bd)
{
    const double a = an ? a0 * (*an / *ad) : a0, b = bn ? b0 * (*bn / *bd) : b0;
    if (b == 0.0) {
        HK_GRID_STRIDE(i, n) y[i] = (T)(a * x[i]);
    } else {
        HK_GRID_STRIDE(i, n) y[i] = hk_cu_axpby_entry<T>(a, x[i], b, y[i]);
    }
}

int hk_cu_vec_axpby_s(hk_vec *y, double a, const double *an, const double *ad, const hk_vec *x,
                      double b, const double *bn, const double *bd)
{
    SAME(x, y);
    if (!x->n) return 0;
    const unsigned g = hk_cu_grid(x->n);
    if (x->prec == HK_FP64)
        k_axpby_s<double><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            x->n, (double *)y->data, a, an, ad, (const double *)x->data, b, bn, bd);
    else
        k_axpby_s<float><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            x->n, (float *)y->data, a, an, ad, (const float *)x->data, b, bn, bd);
    HK_CU_LAUNCHED();
    return 0;
}

template <typename T>
__global__ void k_axpbypcz(int64_t n, T *z, double a, const T *x, double b, const T *y, double c)
{
    if (c == 0.0) {
        HK_GRID_STRIDE(i, n) z[i] = (T)(a * x[i] + b * y[i]);
    } else {
        HK_GRID_STRIDE(i, n) z[i] = (T)(a * x[i] + b * y[i] + c * z[i]);
    }
}

int hk_cu_vec_axpbypcz(hk_vec *z, double a, const hk_vec *x, double b, const hk_vec *y, double c)
{
    SAME(x, y);
    SAME(x, z);
    if (!x->n) return 0;
    const unsigned g = hk_cu_grid(x->n);
    if (x->prec == HK_FP64)
        k_axpbypcz<double><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            x->n, (double *)z->data, a, (const double *)x->data, b, (const double *)y->data, c);
    else
        k_axpbypcz<float><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            x->n, (float *)z->data, a, (const float *)x->data, b, (const float *)y->data, c);
    HK_CU_LAUNCHED();
    return 0;
}

template <typename T> __global__ void k_pmult(int64_t n, T *w, const T *x, const T *y)
{
    HK_GRID_STRIDE(i, n) w[i] = x[i] * y[i];
}

int hk_cu_vec_pointwise_mult(hk_vec *w, const hk_vec *x, const hk_vec *y)
{
    SAME(x, y);
    SAME(x, w);
    if (!x->n) return 0;
    const unsigned g = hk_cu_grid(x->n);
    if (x->prec == HK_FP64)
        k_pmult<double><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            x->n, (double *)w->data, (const double *)x->data, (const double *)y->data);
    else
        k_pmult<float><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            x->n, (float *)w->data, (const float *)x->data, (const float *)y->data);
    HK_CU_LAUNCHED();
    return 0;
}

/* ---- reductions ------------------------------------------------------------------------ */

struct hk_cu_ptrs {
    const void *p[HK_CU_MAXK];
};

/* part[j] = partial sums of X[j] . y for j < k (one pass over y). */
template <typename T>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_mdot(int64_t n, int k, hk_cu_ptrs X, const T *__restrict__ y, double *part)
{
    double acc[HK_CU_MAXK];
#pragma unroll
    for (int j = 0; j < HK_CU_MAXK; j++)
        acc[j] = 0;
    HK_GRID_STRIDE(i, n)
    {
        const double yi = y[i];
#pragma unroll
        for (int j = 0; j < HK_CU_MAXK; j++)
            if (j < k) acc[j] += (double)((const T *)X.p[j])[i] * yi;
    }
    hk_block_reduce<HK_CU_MAXK>(acc, k, part);
}

/* Partials of X[j].y for j < k <= HK_CU_MAXK; returns the grid. */
static int mdot_partials(int k, hk_vec *const *X, const hk_vec *y, unsigned *nb)
{
    hk_cu_ptrs P;
    for (int j = 0; j < k; j++) {
        SAME(X[j], y);
        P.p[j] = X[j]->data;
    }
    *nb = y->prec == HK_FP64 ? hk_cu_rgrid(y->n, (const void *)k_mdot<double>)
                             : hk_cu_rgrid(y->n, (const void *)k_mdot<float>);
    if (y->prec == HK_FP64)
        k_mdot<double><<<*nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(y->n, k, P, (const double *)y->data,
                                                              hk_cu.part);
    else
        k_mdot<float>
            <<<*nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(y->n, k, P, (const float *)y->data, hk_cu.part);
    HK_CU_LAUNCHED();
    return 0;
}

int hk_cu_vec_dot(const hk_vec *x, const hk_vec *y, double *r)
{
    hk_vec *X[1] = {(hk_vec *)x};
    unsigned nb;
    HK_CALL(mdot_partials(1, X, y, &nb));
    return hk_cu_finish_host(nb, 1, r);
}

// vec_dot's partial sums and their sum on the device, into *s: no wait.
int hk_cu_vec_dot_s(const hk_vec *x, const hk_vec *y, double *s)
{
    hk_vec *X[1] = {(hk_vec *)x};
    unsigned nb;
    HK_CALL(mdot_partials(1, X, y, &nb));
    hk_cu_outs out;
    out.p[0] = s;
    return hk_cu_finish(nb, 1, out, HK_FIN_PLAIN, NULL);
}

int hk_cu_vec_mdot(int k, hk_vec *const *X, const hk_vec *y, double *r)
{
    for (int j0 = 0; j0 < k; j0 += HK_CU_MAXK) {
        const int kk = k - j0 < HK_CU_MAXK ? k - j0 : HK_CU_MAXK;
        unsigned nb;
        HK_CALL(mdot_partials(kk, X + j0, y, &nb));
        HK_CALL(hk_cu_finish_host(nb, kk, r + j0));
    }
    return 0;
}

int hk_cu_vec_mdot_s(int k, hk_vec *const *X, const hk_vec *y, double *S)
{
    HK_CHECK(y->prec == HK_FP64, HK_ERR_ARG,
             "cuda backend: the pipelined Krylov fused ops run their vectors in fp64");
    for (int j0 = 0; j0 < k; j0 += HK_CU_MAXK) {
        const int kk = k - j0 < HK_CU_MAXK ? k - j0 : HK_CU_MAXK;
        unsigned nb;
        HK_CALL(mdot_partials(kk, X + j0, y, &nb));
        hk_cu_outs out;
        for (int j = 0; j < kk; j++)
            out.p[j] = S + j0 + j;
        HK_CALL(hk_cu_finish(nb, kk, out, HK_FIN_PLAIN, NULL));
    }
    return 0;
}

struct hk_cu_coef {
    double a[HK_CU_MAXK];
};

/* y += sum_j a[j] X[j], summed in double in order j = 0..k-1, one rounding. */
template <typename T>
__global__ void k_maxpy(int64_t n, T *__restrict__ y, int k, hk_cu_coef a, hk_cu_ptrs X)
{
    HK_GRID_STRIDE(i, n)
    {
        double s = y[i];
#pragma unroll
        for (int j = 0; j < HK_CU_MAXK; j++)
            if (j < k) s += a.a[j] * ((const T *)X.p[j])[i];
        y[i] = (T)s;
    }
}

int hk_cu_vec_maxpy(hk_vec *y, int k, const double *a, hk_vec *const *X)
{
    if (!y->n) return 0;
    for (int j0 = 0; j0 < k; j0 += HK_CU_MAXK) {
        const int kk = k - j0 < HK_CU_MAXK ? k - j0 : HK_CU_MAXK;
        hk_cu_ptrs P;
        hk_cu_coef C;
        for (int j = 0; j < kk; j++) {
            SAME(X[j0 + j], y);
            P.p[j] = X[j0 + j]->data;
            C.a[j] = a[j0 + j];
        }
        const unsigned g = hk_cu_grid(y->n);
        if (y->prec == HK_FP64)
            k_maxpy<double><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(y->n, (double *)y->data, kk, C, P);
        else
            k_maxpy<float><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(y->n, (float *)y->data, kk, C, P);
        HK_CU_LAUNCHED();
    }
    return 0;
}

/* y -= sum_j S[j] X[j] (coefficients read on the device); with last, partials of y.y. */
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_maxpy_s(int64_t n, double *__restrict__ y, int k, const double *S, hk_cu_ptrs X, int last,
              double *part)
{
    __shared__ double c[HK_CU_MAXK];
    if (threadIdx.x < k) c[threadIdx.x] = S[threadIdx.x];
    __syncthreads();
    double acc[1] = {0};
    HK_GRID_STRIDE(i, n)
    {
        double v = y[i];
#pragma unroll
        for (int j = 0; j < HK_CU_MAXK; j++)
            if (j < k) v -= c[j] * ((const double *)X.p[j])[i];
        y[i] = v;
        acc[0] += v * v;
    }
    if (last) hk_block_reduce<1>(acc, 1, part);
}

int hk_cu_vec_maxpy_s_nrm(hk_vec *y, int k, const double *S, hk_vec *const *X, double *nrm2)
{
    HK_CHECK(y->prec == HK_FP64, HK_ERR_ARG,
             "cuda backend: the pipelined Krylov fused ops run their vectors in fp64");
    const unsigned nb = hk_cu_rgrid(y->n, (const void *)k_maxpy_s);
    int j0 = 0;
    do {
        const int kk = k - j0 < HK_CU_MAXK ? k - j0 : HK_CU_MAXK;
        hk_cu_ptrs P;
        for (int j = 0; j < kk; j++) {
            SAME(X[j0 + j], y);
            P.p[j] = X[j0 + j]->data;
        }
        const int last = j0 + kk >= k;
        k_maxpy_s<<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(y->n, (double *)y->data, kk, S + j0, P,
                                                        last, hk_cu.part);
        HK_CU_LAUNCHED();
        j0 += kk;
    } while (j0 < k);
    hk_cu_outs out;
    out.p[0] = nrm2;
    return hk_cu_finish(nb, 1, out, HK_FIN_PLAIN, NULL);
}

/* y *= 1/sqrt(*nrm2) (1 when *nrm2 <= 0); partials of w.y when w is given. */
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_scale_s_dot(int64_t n, double *__restrict__ y, const double *nrm2,
                  const double *__restrict__ w, double *part)
{
    const double nn = *nrm2;
    const double scale = nn > 0 ? 1.0 / sqrt(nn) : 1.0;
    double acc[1] = {0};
    HK_GRID_STRIDE(i, n)
    {
        const double v = y[i] * scale;
        y[i] = v;
        if (w) acc[0] += w[i] * v;
    }
    if (w) hk_block_reduce<1>(acc, 1, part);
}

int hk_cu_vec_scale_s_dot(hk_vec *y, const double *nrm2, const hk_vec *w, double *d)
{
    HK_CHECK(y->prec == HK_FP64 && (!w || (w->prec == HK_FP64 && w->n == y->n)), HK_ERR_ARG,
             "cuda backend: the pipelined Krylov fused ops run their vectors in fp64");
    const unsigned nb = hk_cu_rgrid(y->n, (const void *)k_scale_s_dot);
    k_scale_s_dot<<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(
        y->n, (double *)y->data, nrm2, w ? (const double *)w->data : NULL, hk_cu.part);
    HK_CU_LAUNCHED();
    if (!w) return 0;
    hk_cu_outs out;
    out.p[0] = d;
    return hk_cu_finish(nb, 1, out, HK_FIN_PLAIN, NULL);
}

/* ---- block-diagonal apply --------------------------------------------------------------- */

template <typename T, int BS>
__global__ void k_bdiag(int64_t nb, const T *__restrict__ D, const T *__restrict__ x,
                        T *__restrict__ y)
{
    HK_GRID_STRIDE(i, nb)
    {
        T u[BS], s[BS];
#pragma unroll
        for (int r = 0; r < BS; r++)
            u[r] = x[i * BS + r];
        hk_cu_bdiag_block<T, BS>(D + i * (BS * BS), u, s);
#pragma unroll
        for (int r = 0; r < BS; r++)
            y[i * BS + r] = s[r];
    }
}

template <typename T>
static void bdiag_launch(int bs, int64_t nb, const void *D, const void *x, void *y)
{
    const unsigned g = hk_cu_grid(nb);
#define HK_BDIAG_CASE(B)                                                                           \
    case B:                                                                                        \
        k_bdiag<T, B><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(nb, (const T *)D, (const T *)x, (T *)y); \
        break;
    switch (bs) {
        HK_BDIAG_CASE(1) HK_BDIAG_CASE(2) HK_BDIAG_CASE(3)
        HK_BDIAG_CASE(4) HK_BDIAG_CASE(5) HK_BDIAG_CASE(6)
    }
#undef HK_BDIAG_CASE
}

int hk_cu_bdiag_apply(const hk_vec *D, int bs, const hk_vec *x, hk_vec *y)
{
    SAME(x, y);
    HK_CHECK(bs >= 1 && bs <= 6 && x->n % bs == 0, HK_ERR_ARG,
             "cuda backend: block diagonal with block size %d (must be 1..6 and divide %lld)", bs,
             (long long)x->n);
    HK_CHECK(D->prec == x->prec && D->n == x->n * bs, HK_ERR_ARG,
             "cuda backend: block diagonal of wrong size or precision");
    const int64_t nb = x->n / bs;
    if (!nb) return 0;
    if (x->prec == HK_FP64)
        bdiag_launch<double>(bs, nb, D->data, x->data, y->data);
    else
        bdiag_launch<float>(bs, nb, D->data, x->data, y->data);
    HK_CU_LAUNCHED();
    return 0;
}

/* ---- pc=amg's bound: r -= (an / ad) q; z = D r; r . z -------------------------------- */

/* Node blocks by grid stride: vec_axpby_s's entry arithmetic (a = -1 (an / ad), b = 1, passed
 * as an argument as vec_axpby_s's b is, so the compiler contracts the two alike),
 * bdiag_apply's block (hk_cu_bdiag_block), the products r_i z_i summed in double; the grid's
 * stage 2 in its last block (the context's ticket), so the op is one launch. */
template <typename T, int BS>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_bdiag_update_dot(int64_t nb, T *__restrict__ r, const double *an, const double *ad,
                       double b, const T *__restrict__ q, const T *__restrict__ D,
                       T *__restrict__ z, double *part, unsigned *ticket, double *s)
{
    const double a = -1.0 * (*an / *ad);
    double fs[1] = {0};
    HK_GRID_STRIDE(I, nb)
    {
        T u[BS], w[BS];
#pragma unroll
        for (int k = 0; k < BS; k++) {
            const int64_t i = I * BS + k;
            u[k] = hk_cu_axpby_entry<T>(a, q[i], b, r[i]);
            r[i] = u[k];
        }
        hk_cu_bdiag_block<T, BS>(D + I * (BS * BS), u, w);
#pragma unroll
        for (int k = 0; k < BS; k++) {
            z[I * BS + k] = w[k];
            fs[0] += (double)u[k] * (double)w[k];
        }
    }
    hk_block_reduce<1>(fs, 1, part);
    if (hk_cu_last_block(ticket)) {
        __shared__ double d[1];
        hk_cu_sum_parts(part, gridDim.x, 1, d);
        if (threadIdx.x == 0) *s = d[0];
    }
}

template <typename T, int BS>
static void bdiag_update_dot_launch(int64_t nb, hk_vec *r, const double *an, const double *ad,
                                    const hk_vec *q, const hk_vec *D, hk_vec *z, double *s)
{
    const unsigned g = hk_cu_rgrid(nb, (const void *)k_bdiag_update_dot<T, BS>);
    k_bdiag_update_dot<T, BS><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
        nb, (T *)r->data, an, ad, 1.0, (const T *)q->data, (const T *)D->data, (T *)z->data,
        hk_cu.part, hk_cu.ticket, s);
}

template <typename T>
static void bdiag_update_dot_bs(int bs, int64_t nb, hk_vec *r, const double *an, const double *ad,
                                const hk_vec *q, const hk_vec *D, hk_vec *z, double *s)
{
    switch (bs) {
    case 1: bdiag_update_dot_launch<T, 1>(nb, r, an, ad, q, D, z, s); break;
    case 2: bdiag_update_dot_launch<T, 2>(nb, r, an, ad, q, D, z, s); break;
    case 3: bdiag_update_dot_launch<T, 3>(nb, r, an, ad, q, D, z, s); break;
    case 4: bdiag_update_dot_launch<T, 4>(nb, r, an, ad, q, D, z, s); break;
    case 5: bdiag_update_dot_launch<T, 5>(nb, r, an, ad, q, D, z, s); break;
    case 6: bdiag_update_dot_launch<T, 6>(nb, r, an, ad, q, D, z, s); break;
    }
}

int hk_cu_bdiag_update_dot_s(hk_vec *r, const double *an, const double *ad, const hk_vec *q,
                             const hk_vec *D, int bs, hk_vec *z, double *s)
{
    HK_CALL(hk_bdiag_update_dot_check(r, q, D, bs, z));
    const int64_t nb = r->n / bs;
    if (r->prec == HK_FP64)
        bdiag_update_dot_bs<double>(bs, nb, r, an, ad, q, D, z, s);
    else
        bdiag_update_dot_bs<float>(bs, nb, r, an, ad, q, D, z, s);
    HK_CU_LAUNCHED();
    return 0;
}

// Loaded by hk_cu_init (cuda_impl.cuh: hk_cu_preloads): the bound's update of the AMG set-up
// for 2D and 3D elasticity (node blocks of 2, 3 and 6).
void hk_cu_vec_preload(void)
{
    static const void *const k[] = {(const void *)k_bdiag_update_dot<float, 2>,
                                    (const void *)k_bdiag_update_dot<float, 3>,
                                    (const void *)k_bdiag_update_dot<float, 6>,
                                    (const void *)k_bdiag_update_dot<double, 3>,
                                    (const void *)k_bdiag_update_dot<double, 6>};
    hk_cu_preload(k, (int)(sizeof k / sizeof *k));
}

/* Occupancy of the reducing kernels, found at start-up and not first inside a graph capture. */
void hk_cu_vec_init_grids(void)
{
    hk_cu_rgrid(1, (const void *)k_bdiag_update_dot<float, 3>);
    hk_cu_rgrid(1, (const void *)k_bdiag_update_dot<float, 6>);
    hk_cu_rgrid(1, (const void *)k_bdiag_update_dot<float, 2>);
    hk_cu_rgrid(1, (const void *)k_bdiag_update_dot<double, 3>);
    hk_cu_rgrid(1, (const void *)k_bdiag_update_dot<double, 6>);
    hk_cu_rgrid(1, (const void *)k_bdiag_update_dot<double, 2>);
    hk_cu_rgrid(1, (const void *)k_mdot<double>);
    hk_cu_rgrid(1, (const void *)k_mdot<float>);
    hk_cu_rgrid(1, (const void *)k_maxpy_s);
    hk_cu_rgrid(1, (const void *)k_scale_s_dot);
}
