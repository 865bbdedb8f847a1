/* The CPU reference backend: OpenMP, deterministic for any thread count (fixed-chunk
 * reductions, no atomics on values). Memory is plain host memory. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_impl.h"

static int cpu_probe(void)
{
    return 0;
}

static void cpu_describe(FILE *f)
{
    fprintf(f, "backend cpu: OpenMP, %d threads, %ld online cores\n", omp_get_max_threads(),
            sysconf(_SC_NPROCESSORS_ONLN));
}

static int cpu_mem_info(size_t *free_bytes, size_t *total_bytes)
{
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
    long psz = sysconf(_SC_PAGESIZE);
    *total_bytes = (size_t)pages * (size_t)psz;
    *free_bytes = (size_t)avail * (size_t)psz;
    return 0;
}

static int cpu_alloc(void **p, size_t bytes)
{
    /* 64-byte aligned for vector loads */
    void *q = NULL;
    size_t sz = (bytes + 63) & ~(size_t)63;
    if (posix_memalign(&q, 64, sz ? sz : 64))
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                            "out of host memory allocating %zu bytes", bytes);
    /* First touch of large arrays (vectors) by all threads, each its HK_CPU_CHUNKS chunks as
     * the fused ops and the SpMV divide them: on a NUMA host the pages spread over the nodes
     * of their users instead of all landing on the node of the thread that uploads. */
    if (sz >= ((size_t)1 << 20)) {
        double *d = q;
        const int64_t nd = (int64_t)(sz / sizeof *d);
#pragma omp parallel
        {
            const int nt = omp_get_num_threads(), t = omp_get_thread_num();
            const int64_t i1 = hk_cpu_chunk_begin(nd, HK_CPU_CHUNKS * (t + 1) / nt);
            for (int64_t i = hk_cpu_chunk_begin(nd, HK_CPU_CHUNKS * t / nt); i < i1; i++)
                d[i] = 0.0;
        }
    }
    *p = q;
    return 0;
}

static void cpu_dealloc(void *p)
{
    free(p);
}

static int cpu_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes) memcpy(dst, src, bytes);
    return 0;
}

static int cpu_sync(void)
{
    return 0;
}

static int cpu_mem_equal(const void *a, const void *b, size_t bytes, int *equal)
{
    *equal = !bytes || a == b || !memcmp(a, b, bytes);
    return 0;
}

#define SAME_PREC(a, b)                                                                            \
    HK_CHECK((a)->prec == (b)->prec && (a)->n == (b)->n, HK_ERR_ARG,                               \
             "cpu backend: vectors differ in precision or length (%lld vs %lld)",                  \
             (long long)(a)->n, (long long)(b)->n)

/* Element-wise loop over fp64 or fp32 data: T is the element type inside BODY. */
#define HK_FOR_PREC(v, ...)                                                                        \
    do {                                                                                           \
        if ((v)->prec == HK_FP64) {                                                                \
            typedef double T;                                                                      \
            __VA_ARGS__;                                                                           \
        } else {                                                                                   \
            typedef float T;                                                                       \
            __VA_ARGS__;                                                                           \
        }                                                                                          \
    } while (0)
#define HK_OMP_FOR _Pragma("omp parallel for schedule(static)")
/* Element-wise loops: no iteration depends on another, even where a caller passes the same
 * vector twice (each element is read before it is written), so they are vectorised as such. */
#define HK_OMP_FOR_SIMD _Pragma("omp parallel for simd schedule(static)")

static int cpu_vec_set(hk_vec *x, double a)
{
    const int64_t n = x->n;
    HK_FOR_PREC(x, {
        T *xv = x->data;
HK_OMP_FOR_SIMD
        for (int64_t i = 0; i < n; i++) xv[i] = (T)a;
    });
    return 0;
}

static int cpu_vec_copy(hk_vec *y, const hk_vec *x)
{
    SAME_PREC(x, y);
    memcpy(y->data, x->data, (size_t)x->n * (x->prec == HK_FP64 ? 8 : 4));
    return 0;
}

/* y's blocks of bs entries (stride ys, padding zeroed) from x's (stride xs): vec_convert's
 * rounding from fp64 to fp32, exact widening the other way. */
static int cpu_vec_convert_blocks(hk_vec *y, int ys, const hk_vec *x, int xs, int bs)
{
    HK_CHECK(bs >= 1 && xs >= bs && ys >= bs && x->n % xs == 0 && y->n >= x->n / xs * ys,
             HK_ERR_ARG,
             "cpu backend: vec_convert_blocks of blocks of %d (strides %d into %d) between "
             "vectors of %lld and %lld entries",
             bs, xs, ys, (long long)x->n, (long long)y->n);
    const int64_t nb = x->n / xs;
    const int xd = x->prec == HK_FP64, yd = y->prec == HK_FP64;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nb; k++)
        for (int e = 0; e < ys; e++) {
            const size_t i = (size_t)k * xs + e, o = (size_t)k * ys + e;
            const double v = e >= bs ? 0.0
                             : xd    ? ((const double *)x->data)[i]
                                     : (double)((const float *)x->data)[i];
            if (yd)
                ((double *)y->data)[o] = v;
            else
                ((float *)y->data)[o] = (float)v;
        }
    return 0;
}

static int cpu_vec_round_fp32(hk_vec *x)
{
    HK_CHECK(x->prec == HK_FP64, HK_ERR_ARG, "cpu backend: vec_round_fp32 takes an fp64 vector");
    double *v = x->data;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < x->n; i++)
        v[i] = (double)(float)v[i];
    return 0;
}

static int cpu_vec_convert(hk_vec *y, const hk_vec *x)
{
    HK_CHECK(x->n == y->n, HK_ERR_ARG, "cpu backend: convert between vectors of different length");
    const int64_t n = x->n;
    if (x->prec == y->prec) return cpu_vec_copy(y, x);
    if (x->prec == HK_FP64) {
        const double *xv = x->data;
        float *yv = y->data;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) yv[i] = (float)xv[i];
    } else {
        const float *xv = x->data;
        double *yv = y->data;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) yv[i] = xv[i];
    }
    return 0;
}

static int cpu_vec_scale(hk_vec *x, double a)
{
    const int64_t n = x->n;
    HK_FOR_PREC(x, {
        T *xv = x->data;
HK_OMP_FOR_SIMD
        for (int64_t i = 0; i < n; i++) xv[i] = (T)(a * xv[i]);
    });
    return 0;
}

static int cpu_vec_axpby(hk_vec *y, double a, const hk_vec *x, double b)
{
    SAME_PREC(x, y);
    const int64_t n = x->n;
    HK_FOR_PREC(x, {
        const T *xv = x->data;
        T *yv = y->data;
        if (b == 0.0) {
HK_OMP_FOR_SIMD
            for (int64_t i = 0; i < n; i++) yv[i] = (T)(a * xv[i]);
        } else {
HK_OMP_FOR_SIMD
            for (int64_t i = 0; i < n; i++) yv[i] = (T)(a * xv[i] + b * yv[i]);
        }
    });
    return 0;
}

static int cpu_vec_axpbypcz(hk_vec *z, double a, const hk_vec *x, double b, const hk_vec *y,
                            double c)
{
    SAME_PREC(x, y);
    SAME_PREC(x, z);
    const int64_t n = x->n;
    HK_FOR_PREC(x, {
        const T *xv = x->data, *yv = y->data;
        T *zv = z->data;
        if (c == 0.0) {
HK_OMP_FOR_SIMD
            for (int64_t i = 0; i < n; i++) zv[i] = (T)(a * xv[i] + b * yv[i]);
        } else {
HK_OMP_FOR_SIMD
            for (int64_t i = 0; i < n; i++) zv[i] = (T)(a * xv[i] + b * yv[i] + c * zv[i]);
        }
    });
    return 0;
}

static int cpu_vec_pointwise_mult(hk_vec *w, const hk_vec *x, const hk_vec *y)
{
    SAME_PREC(x, y);
    SAME_PREC(x, w);
    const int64_t n = x->n;
    HK_FOR_PREC(x, {
        const T *xv = x->data, *yv = y->data;
        T *wv = w->data;
HK_OMP_FOR_SIMD
        for (int64_t i = 0; i < n; i++) wv[i] = xv[i] * yv[i];
    });
    return 0;
}

/* Entry i of vec_poly_step with t_i = ti (vectors of type T, arithmetic in double). */
#define POLY_ENTRY(T, i, yv, zv, dv, ti, xv, a, b, c, e, f)                                        \
    do {                                                                                           \
        double v_ = (a) * ((double)(dv)[i] * (ti));                                                \
        if (xv) v_ += (b) * (xv)[i];                                                               \
        if ((c) != 0.0) v_ += (c) * (yv)[i];                                                       \
        const T vi_ = (T)v_;                                                                       \
        (yv)[i] = vi_;                                                                             \
        (zv)[i] = (T)((f) != 0.0 ? (e) * vi_ + (f) * (zv)[i] : (e) * vi_);                         \
    } while (0)

static int cpu_vec_poly_step(hk_vec *y, double a, const hk_vec *d, const hk_vec *t, double b,
                             const hk_vec *x, double c, hk_vec *z, double e, double f)
{
    SAME_PREC(y, d);
    SAME_PREC(y, t);
    SAME_PREC(y, z);
    if (x) SAME_PREC(y, x);
    HK_CHECK(x || b == 0.0, HK_ERR_ARG,
             "vec_poly_step: x is NULL with b = %g; pass x or b = 0", b);
    const int64_t n = y->n;
    HK_FOR_PREC(y, {
        T *yv = y->data, *zv = z->data;
        const T *dv = d->data, *tv = t->data, *xv = x ? (const T *)x->data : NULL;
HK_OMP_FOR_SIMD
        for (int64_t i = 0; i < n; i++)
            POLY_ENTRY(T, i, yv, zv, dv, tv[i], xv, a, b, c, e, f);
    });
    return 0;
}

/* t = A x and the polynomial step on it: for fp64 CSR and BSR each thread computes the rows of
 * a group of its chunks and then the step's entries of those rows while t is in cache (one
 * parallel region instead of two); other formats and fp32 make the two calls. */
static int cpu_spmv_poly_step(hk_mat *A, const hk_vec *x, hk_vec *t, hk_vec *y, double a,
                              const hk_vec *d, double b, double c, hk_vec *z, double e, double f)
{
    HK_CHECK(A->bdata, HK_ERR_ARG, "cpu SpMV: matrix was not built");
    const hk_vec *v[5] = {x, t, y, d, z};
    for (int j = 0; j < 5; j++)
        HK_CHECK(v[j]->prec == A->prec && v[j]->n == A->nrows && A->nrows == A->ncols, HK_ERR_ARG,
                 "spmv_poly_step: the vectors differ from the square matrix in size or precision");
    HK_CHECK(x->data != t->data && x->data != y->data && x->data != z->data, HK_ERR_ARG,
             "spmv_poly_step: x must differ from t, y and z");
    if (A->prec != HK_FP64 || !hk_cpu_spmv_has_rows(A)) {
        HK_CALL(hk_cpu_mat_spmv(A, x, t));
        return cpu_vec_poly_step(y, a, d, t, b, x, c, z, e, f);
    }
    const int bs = ((const hk_cpu_mat *)A->bdata)->F.bs;
    const int64_t n = A->nrows;
    const int G = hk_cpu_group_chunks(n);
    const double *xv = x->data, *dv = d->data;
    double *tv = t->data, *yv = y->data, *zv = z->data;
#pragma omp parallel
    {
        const hk_cpu_row_part q = hk_cpu_row_part_of(A, n, omp_get_thread_num(),
                                                     omp_get_num_threads());
        for (int g = q.c0; g < q.c1; g += G) {
            int64_t b0, e1;
            hk_cpu_group_rows(A, n, g, g + G < q.c1 ? g + G : q.c1, &b0, &e1);
            hk_cpu_spmv_rows(A, xv, tv, b0, e1);
            for (int64_t i = b0 * bs; i < e1 * bs; i++)
                POLY_ENTRY(double, i, yv, zv, dv, tv[i], xv, a, b, c, e, f);
        }
    }
    return 0;
}

int hk_cheb_step_check(const hk_mat *A, const hk_cheb_step *s)
{
    HK_CHECK(A && A->bdata, HK_ERR_ARG, "amg_cheb_step: the matrix is not built");
    /* A may be rectangular (a distributed operator's interior or boundary rows): p has its
     * columns, every other vector its rows */
    HK_CHECK(!s->p || (s->p->prec == A->prec && s->p->n == A->ncols), HK_ERR_ARG,
             "amg_cheb_step: p differs from the matrix's columns in size or precision");
    const hk_vec *v[6] = {s->rin, s->r, s->dp, s->dn, s->x, s->t};
    for (int j = 0; j < 6; j++)
        HK_CHECK(!v[j] || (v[j]->prec == A->prec && v[j]->n == A->nrows), HK_ERR_ARG,
                 "amg_cheb_step: a vector differs from the matrix's rows in size or precision");
    HK_CHECK(s->rin && (!s->p || s->t), HK_ERR_ARG,
             "amg_cheb_step: rin, and t with a product, must be given");
    HK_CHECK(!s->p || (s->p != s->r && s->p != s->dn && s->p != s->x && s->p != s->t),
             HK_ERR_ARG, "amg_cheb_step: p must differ from r, dn, x and t");
    if (!s->D) return 0;
    HK_CHECK(s->bs >= 1 && s->bs <= 6 && A->nrows % s->bs == 0 && s->D->prec == A->prec &&
                 s->D->n == A->nrows * s->bs,
             HK_ERR_ARG, "amg_cheb_step: node blocks of size %d that do not fit the matrix",
             s->bs);
    HK_CHECK((s->c == 0.0 && !(s->xmode & HK_CHEB_X_DP)) || s->dp, HK_ERR_ARG,
             "amg_cheb_step: dp is NULL with c = %g or x += dp asked", s->c);
    HK_CHECK(!s->x || !(s->xmode & HK_CHEB_X_ZERO) ||
                 (s->xmode & (HK_CHEB_X_DP | HK_CHEB_X_DN)),
             HK_ERR_ARG, "amg_cheb_step: a zero x with nothing added to it");
    return 0;
}

/* amg_cheb_step over node blocks [b0, b1) of T vectors (v: the product, or NULL), in vec_axpby's
 * and bdiag_apply's arithmetic entry by entry. */
#define CHEB_BLOCKS(T, s, v, b0, b1)                                                               \
    do {                                                                                           \
        const int bs_ = (s)->D ? (s)->bs : 1;                                                      \
        const T *rin_ = (s)->rin->data, *D_ = (s)->D ? (const T *)(s)->D->data : NULL;             \
        const T *dp_ = (s)->dp ? (const T *)(s)->dp->data : NULL;                                  \
        T *r_ = (s)->r ? (T *)(s)->r->data : NULL, *dn_ = (s)->dn ? (T *)(s)->dn->data : NULL;     \
        T *x_ = (s)->x ? (T *)(s)->x->data : NULL;                                                 \
        const double a_ = (s)->a, c_ = (s)->c;                                                     \
        const int xm_ = (s)->xmode;                                                                \
        HK_OMP_FOR                                                                                 \
        for (int64_t I = (b0); I < (b1); I++) {                                                    \
            T u[6], w[6];                                                                          \
            for (int q = 0; q < bs_; q++) {                                                        \
                const int64_t i = I * bs_ + q;                                                     \
                u[q] = (v) ? (T)(1.0 * rin_[i] + -1.0 * (v)[i]) : rin_[i];                         \
                if (r_) r_[i] = u[q];                                                              \
            }                                                                                      \
            if (!D_) continue;                                                                     \
            const T *blk = D_ + I * bs_ * bs_;                                                     \
            double acc[6] = {0, 0, 0, 0, 0, 0};                                                    \
            for (int q = 0; q < bs_; q++)                                                          \
                for (int cc = 0; cc < bs_; cc++) acc[q] += (double)blk[q * bs_ + cc] * u[cc];      \
            for (int q = 0; q < bs_; q++) {                                                        \
                const int64_t i = I * bs_ + q;                                                     \
                const T sq = (T)acc[q];                                                            \
                w[q] = c_ == 0.0 ? (T)(a_ * sq) : (T)(a_ * sq + c_ * dp_[i]);                      \
                if (dn_) dn_[i] = w[q];                                                            \
                if (!x_) continue;                                                                 \
                int none = xm_ & HK_CHEB_X_ZERO;                                                   \
                T xv = none ? 0 : x_[i];                                                           \
                if (xm_ & HK_CHEB_X_DP) {                                                          \
                    xv = none ? dp_[i] : (T)(1.0 * dp_[i] + 1.0 * xv);                             \
                    none = 0;                                                                      \
                }                                                                                  \
                if (xm_ & HK_CHEB_X_DN) xv = none ? w[q] : (T)(1.0 * w[q] + 1.0 * xv);             \
                x_[i] = xv;                                                                        \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* The product into t by mat_spmv, then the step's entries: the reference of the fused kernels,
 * with the digits of the separate calls. */
static int cpu_amg_cheb_step(hk_mat *A, const hk_cheb_step *s)
{
    HK_CALL(hk_cheb_step_check(A, s));
    if (s->p) HK_CALL(hk_cpu_mat_spmv(A, s->p, s->t));
    const int64_t nb = s->D ? A->nrows / s->bs : A->nrows;
    HK_FOR_PREC(s->rin, {
        const T *v = s->p ? (const T *)s->t->data : NULL;
        CHEB_BLOCKS(T, s, v, 0, nb);
    });
    return 0;
}

static int cpu_vec_dot(const hk_vec *x, const hk_vec *y, double *r)
{
    SAME_PREC(x, y);
    const int64_t n = x->n;
    double part[HK_CPU_CHUNKS];
    HK_FOR_PREC(x, {
        const T *restrict xv = x->data, *restrict yv = y->data;
HK_OMP_FOR
        for (int c = 0; c < HK_CPU_CHUNKS; c++) {
            double s[HK_CPU_LANES] = {0};
            HK_CPU_LANE_FOR(hk_cpu_chunk_begin(n, c), hk_cpu_chunk_begin(n, c + 1), i, l,
                            s[l] += (double)xv[i] * (double)yv[i];);
            part[c] = hk_cpu_lanes_sum(s);
        }
    });
    *r = hk_cpu_chunk_sum(part);
    return 0;
}

/* Up to two dot products against y in one pass (cg's r.z and r.r); more: one pass each. */
static int cpu_vec_mdot(int k, hk_vec *const *X, const hk_vec *y, double *r)
{
    if (k != 2) {
        for (int j = 0; j < k; j++) HK_CALL(cpu_vec_dot(X[j], y, &r[j]));
        return 0;
    }
    SAME_PREC(X[0], y);
    SAME_PREC(X[1], y);
    const int64_t n = y->n;
    double part[2][HK_CPU_CHUNKS];
    HK_FOR_PREC(y, {
        const T *restrict yv = y->data, *restrict av = X[0]->data, *restrict bv = X[1]->data;
HK_OMP_FOR
        for (int c = 0; c < HK_CPU_CHUNKS; c++) {
            double sa[HK_CPU_LANES] = {0}, sb[HK_CPU_LANES] = {0};
            HK_CPU_LANE_FOR(hk_cpu_chunk_begin(n, c), hk_cpu_chunk_begin(n, c + 1), i, l, {
                const double yi = yv[i];
                sa[l] += (double)av[i] * yi;
                sb[l] += (double)bv[i] * yi;
            });
            part[0][c] = hk_cpu_lanes_sum(sa);
            part[1][c] = hk_cpu_lanes_sum(sb);
        }
    });
    r[0] = hk_cpu_chunk_sum(part[0]);
    r[1] = hk_cpu_chunk_sum(part[1]);
    return 0;
}

static int cpu_vec_maxpy(hk_vec *y, int k, const double *a, hk_vec *const *X)
{
    for (int j = 0; j < k; j++) SAME_PREC(X[j], y);
    const int64_t n = y->n;
    HK_FOR_PREC(y, {
        T *yv = y->data;
HK_OMP_FOR
        for (int64_t i = 0; i < n; i++) {
            double s = yv[i];
            for (int j = 0; j < k; j++) s += a[j] * ((const T *)X[j]->data)[i];
            yv[i] = (T)s;
        }
    });
    return 0;
}

static int cpu_bdiag_apply(const hk_vec *D, int bs, const hk_vec *x, hk_vec *y)
{
    SAME_PREC(x, y);
    HK_CHECK(D->prec == x->prec && D->n == x->n * bs && bs >= 1 && bs <= 6, HK_ERR_ARG,
             "cpu backend: block diagonal of wrong size or precision, or block size %d not in "
             "1..6",
             bs);
    const int64_t nb = x->n / bs;
    HK_FOR_PREC(x, {
        const T *dv = D->data, *xv = x->data;
        T *yv = y->data;
HK_OMP_FOR
        for (int64_t i = 0; i < nb; i++) {
            const T *blk = dv + (size_t)i * bs * bs;
            double acc[6] = {0, 0, 0, 0, 0, 0};
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++) acc[r] += (double)blk[r * bs + c] * xv[i * bs + c];
            for (int r = 0; r < bs; r++) yv[i * bs + r] = (T)acc[r];
        }
    });
    return 0;
}

/* The scalars are in host memory: the plain ops with the coefficients read here. */
static int cpu_vec_dot_s(const hk_vec *x, const hk_vec *y, double *s)
{
    return cpu_vec_dot(x, y, s);
}

static int cpu_vec_axpby_s(hk_vec *y, double a, const double *an, const double *ad,
                           const hk_vec *x, double b, const double *bn, const double *bd)
{
    return cpu_vec_axpby(y, an ? a * (*an / *ad) : a, x, bn ? b * (*bn / *bd) : b);
}

int hk_spmv_dot_check(const hk_mat *A, const hk_vec *x, const hk_vec *y)
{
    HK_CHECK(A->nrows == A->ncols && x->n == A->ncols && y->n == A->nrows && x->prec == A->prec &&
                 y->prec == A->prec,
             HK_ERR_ARG,
             "spmv_dot_s: vectors that differ from the square matrix in size or precision");
    HK_CHECK(x->data != y->data, HK_ERR_ARG, "spmv_dot_s: x and y must be different vectors");
    return 0;
}

int hk_bdiag_update_dot_check(const hk_vec *r, const hk_vec *q, const hk_vec *D, int bs,
                              const hk_vec *z)
{
    HK_CHECK(q->prec == r->prec && z->prec == r->prec && q->n == r->n && z->n == r->n,
             HK_ERR_ARG,
             "bdiag_update_dot_s: r, q and z differ in precision or length (%lld, %lld and %lld "
             "entries)",
             (long long)r->n, (long long)q->n, (long long)z->n);
    HK_CHECK(bs >= 1 && bs <= 6 && r->n % bs == 0 && D->prec == r->prec && D->n == r->n * bs,
             HK_ERR_ARG,
             "bdiag_update_dot_s: block diagonal of wrong size or precision, or block size %d "
             "not in 1..6",
             bs);
    HK_CHECK(r->data != q->data && r->data != z->data && q->data != z->data, HK_ERR_ARG,
             "bdiag_update_dot_s: r, q and z must be different vectors");
    return 0;
}

/* The reference of the fused bound ops: the product, then vec_dot (its digits). */
static int cpu_spmv_dot_s(hk_mat *A, const hk_vec *x, hk_vec *y, double *s)
{
    HK_CALL(hk_spmv_dot_check(A, x, y));
    HK_CALL(hk_cpu_mat_spmv(A, x, y));
    return cpu_vec_dot(x, y, s);
}

/* One parallel region instead of three passes: the node blocks' updates by chunks of blocks,
 * then (after the barrier) r . z by vec_dot's chunks of entries, so the digits are those of
 * vec_axpby_s, bdiag_apply and vec_dot; with the static schedule a thread sums mostly the
 * entries it has just written. */
static int cpu_bdiag_update_dot_s(hk_vec *r, const double *an, const double *ad,
                                  const hk_vec *q, const hk_vec *D, int bs, hk_vec *z, double *s)
{
    HK_CALL(hk_bdiag_update_dot_check(r, q, D, bs, z));
    const double a = -1.0 * (*an / *ad), b = 1.0;
    const int64_t n = r->n, nb = n / bs;
    double part[HK_CPU_CHUNKS];
    HK_FOR_PREC(r, {
        T *restrict rv = r->data, *restrict zv = z->data;
        const T *restrict qv = q->data, *restrict dv = D->data;
_Pragma("omp parallel")
        {
_Pragma("omp for schedule(static)")
            for (int c = 0; c < HK_CPU_CHUNKS; c++) {
                const int64_t I1 = hk_cpu_chunk_begin(nb, c + 1);
                for (int64_t I = hk_cpu_chunk_begin(nb, c); I < I1; I++) {
                    T u[6];
                    double acc[6] = {0, 0, 0, 0, 0, 0};
                    const T *blk = dv + (size_t)I * bs * bs;
                    for (int k = 0; k < bs; k++) {
                        const int64_t i = I * bs + k;
                        u[k] = (T)(a * qv[i] + b * rv[i]);
                        rv[i] = u[k];
                    }
                    for (int k = 0; k < bs; k++)
                        for (int cc = 0; cc < bs; cc++) acc[k] += (double)blk[k * bs + cc] * u[cc];
                    for (int k = 0; k < bs; k++) zv[I * bs + k] = (T)acc[k];
                }
            }
_Pragma("omp for schedule(static)")
            for (int c = 0; c < HK_CPU_CHUNKS; c++) {
                double sl[HK_CPU_LANES] = {0};
                HK_CPU_LANE_FOR(hk_cpu_chunk_begin(n, c), hk_cpu_chunk_begin(n, c + 1), i, l,
                                sl[l] += (double)rv[i] * (double)zv[i];);
                part[c] = hk_cpu_lanes_sum(sl);
            }
        }
    });
    *s = hk_cpu_chunk_sum(part);
    return 0;
}

static int cpu_scal_alloc(double **s, int n)
{
    return hk_calloc((size_t)n, sizeof(double), s);
}

static void cpu_scal_free(double *s)
{
    free(s);
}

static int cpu_scal_get(const double *s, int first, int n, double *host)
{
    memcpy(host, s + first, (size_t)n * sizeof(double));
    return 0;
}

static int cpu_scal_set(double *s, int first, int n, const double *host)
{
    memcpy(s + first, host, (size_t)n * sizeof(double));
    return 0;
}

/* Fused ops of the Krylov methods (solver/cpu/cpu_fused.c). */
int hk_cpu_pipecg_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *Ap, const hk_vec *dinv,
                         double *S);
int hk_cpu_spmv_dot2(hk_mat *A, const hk_vec *p, hk_vec *Ap, const hk_vec *dinv, const hk_vec *r,
                     double *S);
int hk_cpu_spmv_mdot(hk_mat *A, const hk_vec *x, hk_vec *y, int k, const hk_vec *const *W,
                     double *S, const int *slot);
int hk_cpu_pipecg_step(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *p, hk_vec *Ap, const hk_vec *dinv,
                       double *S);
int hk_cpu_pipecg_paper_step(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *p, hk_vec *Ap,
                             const hk_vec *dinv, double *S);
int hk_cpu_cgcg_update(hk_vec *x, hk_vec *r, hk_vec *u, hk_vec *p, hk_vec *s, const hk_vec *w,
                       const hk_vec *dinv, double alpha, double beta);
int hk_cpu_spmv_cgcg(hk_mat *A, const hk_vec *u, hk_vec *w, const hk_vec *r, double *d);
int hk_cpu_cg_spmv(hk_mat *A, const hk_vec *z, double beta, hk_vec *p, hk_vec *Ap, double *pap);
int hk_cpu_cg_update(hk_vec *x, hk_vec *r, hk_vec *z, const hk_vec *p, const hk_vec *Ap,
                     const hk_vec *dinv, double alpha, double *d);
int hk_cpu_cg_iter(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *z, hk_vec *p, hk_vec *Ap,
                   const hk_vec *dinv, double alpha, double rz, double *d);
int hk_cpu_pipebicg_s(hk_vec *s, const hk_vec *r, const hk_vec *Ap, double *S);
int hk_cpu_pipebicg_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *phat, const hk_vec *s,
                           const hk_vec *shat, const hk_vec *As, const hk_vec *Ap,
                           const hk_vec *r0s, double *S);
int hk_cpu_vec_mdot_s(int k, hk_vec *const *X, const hk_vec *y, double *S);
int hk_cpu_vec_maxpy_s_nrm(hk_vec *y, int k, const double *S, hk_vec *const *X, double *nrm2);
int hk_cpu_vec_scale_s_dot(hk_vec *y, const double *nrm2, const hk_vec *w, double *d);

/* Matrix powers and the Gram reduction of the s-step methods (cpu_mpk.c). */
int hk_cpu_mpk_plan(const hk_bmat *K, int schedule, int64_t block, int k, double max_work,
                    void **plan, hk_mpk_info *info);
int hk_cpu_mpk_apply(void *plan, int kk, const double *coef, const hk_vec *d, const hk_vec *wprev,
                     hk_vec *const *W, hk_vec *const *U);
void hk_cpu_mpk_free(void *plan);
int hk_cpu_mpk_stream_plan(const hk_bcsr *K, int64_t block, size_t budget, int k,
                           double max_work, void **plan, hk_mpk_info *info);
int hk_cpu_vec_gram(int m, hk_vec *const *X, hk_vec *const *Y, double *G, double *GX);
/* Blocks of vectors for the eigensolver (cpu_block.c). */
int hk_cpu_block_spmv(hk_mat *A, int k, const hk_vec *X, hk_vec *Y);
int hk_cpu_block_gram(int64_t n, int p, const hk_vec *X, int q, const hk_vec *Y, double *G);
int hk_cpu_block_update(int64_t n, int p, const hk_vec *X, int q, const double *C, double beta,
                        hk_vec *Y);
int hk_cpu_block_dots(int64_t n, int k, const hk_vec *X, const hk_vec *Y, double *d);

/* Level-scheduled triangular solves of the ic0/ilu0/mlilu preconditioners and their set-up
 * from a factor (solver/pc/tri_cpu.c). */
int hk_cpu_tri_setup(const hk_bmat *F, int upper, int unit, int method, hk_precision p,
                     void **handle, int64_t *nlevels);
int hk_cpu_tri_solve(void *handle, const hk_vec *b, hk_vec *x);
void hk_cpu_tri_destroy(void *handle);
int hk_cpu_factor_sweeps(const hk_bmat *A, int sym, int sweeps, hk_bmat *F, int64_t *bad);
/* Set-up ops of ic0/ilu0 (solver/pc/factor_cpu.c). */
int hk_cpu_bmat_permute(const hk_bmat *A, const int32_t *perm, hk_bmat *P);
int hk_cpu_bmat_sym_check(const hk_bmat *A, const hk_bmat *T, hk_factor_fault *f);
int hk_cpu_factor_exact(const hk_bmat *A, int sym, hk_bmat *F, hk_factor_fault *f);

/* Diagonal, inverse diagonal blocks, decoupled rows of a backend matrix (cpu_diag.c). */
int hk_cpu_bmat_diag(const hk_bmat *A, int mode, hk_vec *out, int64_t *bad);
int hk_cpu_bmat_first_nonfinite(const hk_bmat *A, int64_t *row);
/* l1-Jacobi scaling of pc=amg (cpu_amg.c). */
int hk_cpu_amg_l1_diag(const hk_bmat *A, hk_vec *out, int64_t *bad);
int hk_cpu_amg_rigid_modes(int64_t nnodes, int bs, const hk_vec *coords, const double *center,
                           double scale, const hk_vec *decoupled, double *B);
int hk_cpu_amg_coord_frame(int64_t nnodes, int bs, const hk_vec *coords, double *center,
                           double *scale);
int hk_cpu_amg_coord_bounds(int64_t nnodes, int bs, const hk_vec *coords, double *sum, double *lo,
                            double *hi);
int hk_cpu_bmat_spmv(const hk_bmat *A, const float *val32, const hk_vec *x, hk_vec *y);
int hk_cpu_amg_start_vector(hk_vec *v);
/* Aggregation AMG: strength graph, aggregation, tentative prolongator (cpu_aggregate.c). */
int hk_cpu_amg_strength(const hk_bmat *A, double theta, hk_graph *S);
int hk_cpu_amg_aggregate(const hk_graph *S, int32_t *agg, int64_t *nagg);
int hk_cpu_amg_tentative(const int32_t *agg, int64_t nagg, int64_t nnodes, int b, int nns,
                         const double *B, hk_bmat *T, double *Bc);

/* FSAI and SAI set-up (cpu_fsai.c). */
int hk_cpu_fsai_pattern(const hk_bmat *K, double tau, int k, int block, int64_t cap, hk_graph *S,
                        hk_setup_fault *fault);
int hk_cpu_fsai_factor(const hk_bmat *K, const hk_graph *S, double delta, hk_bmat *G,
                       hk_setup_fault *fault);
int hk_cpu_sai_pattern(const hk_bmat *K, const hk_bmat *Kt, double tau, int colmax, hk_graph *St);
int hk_cpu_sai_factor(const hk_bmat *Kt, const hk_graph *St, int64_t max_rows, int64_t max_cols,
                      int qr, hk_bmat *Mt, hk_setup_fault *fault);
/* Sparse product, prolongator smoothing, dense coarse solve (cpu_sparse.c). */
int hk_cpu_bmat_spgemm(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
int hk_cpu_bmat_spgemm_numeric(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
int hk_cpu_bmat_spgemm_pattern(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
int hk_cpu_bmat_spgemm_numeric_upper(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
int hk_cpu_bmat_mirror_lower(hk_bmat *C);
int hk_cpu_bmat_put_transposed(double *val, int bs, const int64_t *to, const double *src,
                               int64_t n);
int hk_cpu_bmat_spgemm_plan(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C, int upper,
                            void **plan, size_t *bytes);
int hk_cpu_bmat_spgemm_numeric_plan(const void *plan, const hk_bmat *A, const hk_bmat *B,
                                    hk_bmat *C);
void hk_cpu_bmat_spgemm_plan_free(void *plan);
int hk_cpu_bmat_spgemm_numeric_plan_f32(const void *plan, const hk_bmat *A, const float *a32,
                                        const hk_bmat *B, const float *b32, int b32_stride,
                                        hk_bmat *C);
int hk_cpu_amg_tentative_product(const hk_bmat *A, const hk_bmat *T, hk_bmat *C);
int hk_cpu_amg_tentative_product_numeric(const hk_bmat *A, const hk_bmat *T, hk_bmat *C);
int hk_cpu_amg_smooth_prolongator(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv,
                                  double w, hk_bmat *P);
int hk_cpu_amg_smooth_prolongator_numeric(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv,
                                          double w, hk_bmat *P);
int hk_cpu_bmat_transpose_numeric(const hk_bmat *A, hk_bmat *T);
int hk_cpu_dense_inverse(const hk_bmat *A, hk_vec *Minv, int64_t *bad);
int hk_cpu_dense_gemv(const hk_vec *M, const hk_vec *x, hk_vec *y);
/* The halo's gather (cpu_dist.c). */
int hk_cpu_vec_gather(hk_vec *y, const hk_vec *x, const int32_t *idx, int64_t n, int bs);
int hk_cpu_dist_read_columns(const int32_t *col, int64_t n, int64_t ncols, int32_t *rank,
                             int32_t *list, int64_t *nread);
int hk_cpu_dist_local_pattern(int64_t nrows, const int64_t *rowptr, const int32_t *col,
                              const int32_t *map, int64_t nbc, int split, int64_t *rp,
                              int32_t *lcol, int32_t *src, int32_t *ypos, int64_t *nint);
int hk_cpu_dist_split(const hk_dist_rows *R, hk_bmat *Koo, int32_t **src_oo, hk_bmat *Kbnd,
                      int32_t **src_bnd, int32_t **bcol, int64_t *nbc);
int hk_cpu_dist_scan(const hk_dist_rows *R, int32_t *kind, int64_t **ghost, int64_t *nghost,
                     int64_t *bad);
int hk_cpu_dist_global_columns(const int32_t *col, int64_t n, int64_t row0, int64_t nown,
                               const int64_t *ghost_gid, int64_t nghost, int32_t *out);
int hk_cpu_coo_to_csr(const hk_bmat *A, const int32_t *rmap, const int64_t *cmap, int64_t n,
                      const int32_t *erow, const int64_t *ekey, const double *eval, int64_t nrows,
                      int64_t nkeys, int64_t **rowptr, int64_t **key, double **val);
/* The distributed AMG set-up's ghost rows (cpu_dist.c). */
int hk_cpu_dist_row_lengths(const hk_bmat *A, const int32_t *rows, int64_t n, int64_t *len);
int hk_cpu_dist_pack_rows(const hk_bmat *A, const int64_t *colmap, const int32_t *rows, int64_t n,
                          const int64_t *at, double *out);
int hk_cpu_dist_mark_columns(const hk_bmat *A, int32_t *mark);
int hk_cpu_dist_extend_rows(const hk_bmat *A, const int32_t *cpos, int64_t ng, const double *rec,
                            const int64_t *rat, const int64_t *gat, const int64_t *cols,
                            int64_t ncols, hk_bmat *X);
int hk_cpu_copy_pageable(void *dst, const void *src, size_t bytes);

const hk_backend_ops hk_backend_cpu = {
    .name = "cpu",
    .probe = cpu_probe,
    .describe = cpu_describe,
    .mem_info = cpu_mem_info,
    .alloc = cpu_alloc,
    .dealloc = cpu_dealloc,
    .copy_to = cpu_copy,
    .copy_from = cpu_copy,
    .copy = cpu_copy,
    .sync = cpu_sync,
    .mem_equal = cpu_mem_equal,
    .vec_set = cpu_vec_set,
    .vec_copy = cpu_vec_copy,
    .vec_convert = cpu_vec_convert,
    .vec_convert_blocks = cpu_vec_convert_blocks,
    .vec_round_fp32 = cpu_vec_round_fp32,
    .vec_scale = cpu_vec_scale,
    .vec_axpby = cpu_vec_axpby,
    .vec_axpbypcz = cpu_vec_axpbypcz,
    .vec_pointwise_mult = cpu_vec_pointwise_mult,
    .vec_poly_step = cpu_vec_poly_step,
    .spmv_poly_step = cpu_spmv_poly_step,
    .amg_cheb_step = cpu_amg_cheb_step,
    .vec_dot = cpu_vec_dot,
    .vec_mdot = cpu_vec_mdot,
    .vec_maxpy = cpu_vec_maxpy,
    .mat_release = hk_cpu_mat_release,
    .mat_spmv = hk_cpu_mat_spmv,
    .bdiag_apply = cpu_bdiag_apply,
    .scal_alloc = cpu_scal_alloc,
    .scal_free = cpu_scal_free,
    .scal_get = cpu_scal_get,
    .scal_set = cpu_scal_set,
    .vec_dot_s = cpu_vec_dot_s,
    .vec_axpby_s = cpu_vec_axpby_s,
    .spmv_dot_s = cpu_spmv_dot_s,
    .bdiag_update_dot_s = cpu_bdiag_update_dot_s,
    .pipecg_update = hk_cpu_pipecg_update,
    .pipecg_gv_step = hk_cpu_pipecg_gv_step,
    .spmv_pipecg_gv_step = hk_cpu_spmv_pipecg_gv_step,
    .cg_spmv = hk_cpu_cg_spmv,
    .cg_update = hk_cpu_cg_update,
    .cg_iter = hk_cpu_cg_iter,
    .pipecg_step = hk_cpu_pipecg_step,
    .pipecg_paper_step = hk_cpu_pipecg_paper_step,
    .cgcg_update = hk_cpu_cgcg_update,
    .spmv_cgcg = hk_cpu_spmv_cgcg,
    .spmv_dot2 = hk_cpu_spmv_dot2,
    .spmv_mdot = hk_cpu_spmv_mdot,
    .pipebicg_s = hk_cpu_pipebicg_s,
    .pipebicg_update = hk_cpu_pipebicg_update,
    .vec_mdot_s = hk_cpu_vec_mdot_s,
    .vec_maxpy_s_nrm = hk_cpu_vec_maxpy_s_nrm,
    .vec_scale_s_dot = hk_cpu_vec_scale_s_dot,
    .bmat_permute = hk_cpu_bmat_permute,
    .bmat_sym_check = hk_cpu_bmat_sym_check,
    .factor_exact = hk_cpu_factor_exact,
    .tri_setup = hk_cpu_tri_setup,
    .tri_solve = hk_cpu_tri_solve,
    .tri_destroy = hk_cpu_tri_destroy,
    .factor_sweeps = hk_cpu_factor_sweeps,
    .bmat_diag = hk_cpu_bmat_diag,
    .bmat_first_nonfinite = hk_cpu_bmat_first_nonfinite,
    .amg_l1_diag = hk_cpu_amg_l1_diag,
    .mat_build = hk_cpu_mat_build,
    .mat_convert = hk_cpu_mat_convert,
    .mat_download = hk_cpu_mat_download,
    .bmat_transpose = hk_cpu_bmat_transpose,
    .bmat_expand = hk_cpu_bmat_expand,
    .bmat_compress = hk_cpu_bmat_compress,
    .fsai_pattern = hk_cpu_fsai_pattern,
    .fsai_factor = hk_cpu_fsai_factor,
    .sai_pattern = hk_cpu_sai_pattern,
    .sai_factor = hk_cpu_sai_factor,
    .bmat_spgemm = hk_cpu_bmat_spgemm,
    .bmat_spgemm_numeric = hk_cpu_bmat_spgemm_numeric,
    .bmat_spgemm_pattern = hk_cpu_bmat_spgemm_pattern,
    .bmat_spgemm_numeric_upper = hk_cpu_bmat_spgemm_numeric_upper,
    .bmat_mirror_lower = hk_cpu_bmat_mirror_lower,
    .bmat_put_transposed = hk_cpu_bmat_put_transposed,
    .bmat_spgemm_plan = hk_cpu_bmat_spgemm_plan,
    .bmat_spgemm_numeric_plan = hk_cpu_bmat_spgemm_numeric_plan,
    .bmat_spgemm_plan_free = hk_cpu_bmat_spgemm_plan_free,
    .bmat_spgemm_numeric_plan_f32 = hk_cpu_bmat_spgemm_numeric_plan_f32,
    .amg_tentative_product = hk_cpu_amg_tentative_product,
    .amg_tentative_product_numeric = hk_cpu_amg_tentative_product_numeric,
    .amg_smooth_prolongator = hk_cpu_amg_smooth_prolongator,
    .amg_smooth_prolongator_numeric = hk_cpu_amg_smooth_prolongator_numeric,
    .bmat_transpose_numeric = hk_cpu_bmat_transpose_numeric,
    .dense_inverse = hk_cpu_dense_inverse,
    .dense_gemv = hk_cpu_dense_gemv,
    .amg_strength = hk_cpu_amg_strength,
    .amg_aggregate = hk_cpu_amg_aggregate,
    .amg_tentative = hk_cpu_amg_tentative,
    .amg_rigid_modes = hk_cpu_amg_rigid_modes,
    .amg_coord_frame = hk_cpu_amg_coord_frame,
    .amg_coord_bounds = hk_cpu_amg_coord_bounds,
    .bmat_spmv = hk_cpu_bmat_spmv,
    .amg_start_vector = hk_cpu_amg_start_vector,
    .mpk_plan = hk_cpu_mpk_plan,
    .mpk_apply = hk_cpu_mpk_apply,
    .mpk_free = hk_cpu_mpk_free,
    .mpk_wave_chunks = 0, /* always: one chunk is k SpMVs in one pass */
    .mpk_stream_plan = hk_cpu_mpk_stream_plan,
    .vec_gram = hk_cpu_vec_gram,
    .block_spmv = hk_cpu_block_spmv,
    .block_gram = hk_cpu_block_gram,
    .block_update = hk_cpu_block_update,
    .block_dots = hk_cpu_block_dots,
    .vec_gather = hk_cpu_vec_gather,
    .dist_read_columns = hk_cpu_dist_read_columns,
    .dist_local_pattern = hk_cpu_dist_local_pattern,
    .dist_split = hk_cpu_dist_split,
    .dist_scan = hk_cpu_dist_scan,
    .dist_global_columns = hk_cpu_dist_global_columns,
    .coo_to_csr = hk_cpu_coo_to_csr,
    .dist_row_lengths = hk_cpu_dist_row_lengths,
    .dist_pack_rows = hk_cpu_dist_pack_rows,
    .dist_mark_columns = hk_cpu_dist_mark_columns,
    .dist_extend_rows = hk_cpu_dist_extend_rows,
    .copy_to_pageable = hk_cpu_copy_pageable,
    .copy_from_pageable = hk_cpu_copy_pageable,
};
