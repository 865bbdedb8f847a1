// Sparse triangular solves on the device (ops tri_create / tri_solve / tri_destroy; pc=ic0 and
// pc=ilu0 through solver/pc/trifactor.c), three ways chosen by the factor's method (pc.tri):
//
// syncfree (default): no barrier at all. Rows are handed out in solve order (ascending for a
// lower factor, descending for an upper one) by a global atomic counter, a group of G lanes
// per row (G = 4..32 from the mean row length, 32/G rows per warp). Each lane spins with
// volatile loads on the ready flags of its entries' columns, then reads those x values and
// sums; the group reduces with shuffles and its first lane writes x_i, fences, and raises
// ready[i]. A row only waits on rows handed out before it, whose warps already run (they
// took their rows from the counter), so no launch order or block scheduling can deadlock;
// rows of one warp waiting on each other rely on independent thread scheduling (sm_70+).
// The flags and the counter are cleared by one memset per solve (graph-capturable).
//
// levels: level-scheduled, as described below.
//
// cusparse: cusparseSpSV on the factor with its diagonal (a baseline to compare with).
// Semantics as the CPU
// version (solver/pc/tri_cpu.c): x_i = (b_i - sum_k T_ik x_k) * dinv_i, the sum in double in
// the stored order, one rounding; so the result is the same for any schedule.
//
// The rows of one level are independent (the level-set scheduling of the ILUPACK-GMRES
// paper). A level with many rows is one launch, one thread per row. A run of consecutive
// small levels, where a launch per level would cost more than the work, is one launch of a
// single block that walks the levels with a block barrier between them (a barrier makes the
// block's global writes visible to the whole block).
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.cuh"

#define TRI_GRID_MIN 2048 /* rows a level needs to get a launch of its own */

typedef struct {
    int64_t l0, l1; /* levels [l0, l1) */
    int block;      /* 1: one block walks the levels; 0: one launch for level l0 */
} tri_seg;

typedef struct {
    hk_precision prec;
    int method;      /* enum hk_tri_method actually used */
    int upper;       /* entries right of the diagonal: solve order descending */
    int group;       /* syncfree: lanes per row */
    unsigned *ready; /* syncfree: n flags, then the row counter */
    /* cusparse: the factor with its diagonal, descriptors, work buffer */
    int64_t *sp_rowptr;
    int32_t *sp_colind;
    void *sp_val, *sp_buf;
    cusparseSpMatDescr_t sp_A;
    cusparseSpSVDescr_t sp_sv;
    int64_t n, nlevels, nseg;
    int64_t *rowptr, *level_ptr; /* device */
    int32_t *colind, *level_rows;
    void *val, *dinv;
    int64_t *hlevel_ptr; /* host copy: launch sizes */
    tri_seg *seg;        /* host */
} cu_tri;

/* x is read and written in the same launch: plain (coherent) loads, no __restrict__. */
template <typename T>
__device__ __forceinline__ void tri_row(int32_t i, const int64_t *rowptr, const int32_t *col,
                                        const T *val, const T *dinv, const T *b, T *x)
{
    double s = b[i];
    const int64_t end = rowptr[i + 1];
    for (int64_t k = rowptr[i]; k < end; k++)
        s -= (double)val[k] * (double)x[col[k]];
    x[i] = (T)(s * (double)dinv[i]);
}

template <typename T>
__global__ void k_tri_level(int64_t q0, int64_t q1, const int32_t *rows, const int64_t *rowptr,
                            const int32_t *col, const T *val, const T *dinv, const T *b, T *x)
{
    const int64_t q = q0 + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (q < q1) tri_row<T>(rows[q], rowptr, col, val, dinv, b, x);
}

template <typename T>
__global__ void k_tri_block(int64_t l0, int64_t l1, const int64_t *level_ptr, const int32_t *rows,
                            const int64_t *rowptr, const int32_t *col, const T *val, const T *dinv,
                            const T *b, T *x)
{
    for (int64_t l = l0; l < l1; l++) {
        const int64_t e = level_ptr[l + 1];
        for (int64_t q = level_ptr[l] + threadIdx.x; q < e; q += blockDim.x)
            tri_row<T>(rows[q], rowptr, col, val, dinv, b, x);
        __syncthreads();
    }
}

/* ---- sync-free solve ------------------------------------------------------------------ */

template <typename T> __device__ __forceinline__ T load_volatile(const T *p)
{
    return *(const volatile T *)p;
}

template <typename T, int G>
__global__ void k_tri_syncfree(int64_t n, int upper, const int64_t *rowptr, const int32_t *col,
                               const T *val, const T *dinv, const T *b, T *x, unsigned *ready)
{
    constexpr int R = 32 / G; /* rows per warp */
    const int lane = threadIdx.x & 31, sub = lane / G, sl = lane % G;
    unsigned base = 0;
    if (lane == 0) base = atomicAdd(&ready[n], (unsigned)R);
    base = __shfl_sync(0xffffffffu, base, 0);
    const int64_t q = (int64_t)base + sub;
    int64_t i = -1, k0 = 0, k1 = 0;
    if (q < n) {
        i = upper ? n - 1 - q : q;
        k0 = rowptr[i];
        k1 = rowptr[i + 1];
    }
    /* wait for every dependency of this lane, then one fence, then read their values */
    for (int64_t k = k0 + sl; k < k1; k += G) {
        const int32_t j = col[k];
        while (load_volatile(&ready[j]) == 0) {
        }
    }
    __threadfence();
    double s = 0;
    for (int64_t k = k0 + sl; k < k1; k += G)
        s += (double)val[k] * (double)load_volatile(&x[col[k]]);
    const unsigned mask = G == 32 ? 0xffffffffu : ((1u << G) - 1u) << (sub * G);
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1)
        s += __shfl_xor_sync(mask, s, o);
    if (i >= 0 && sl == 0) {
        *(volatile T *)&x[i] = (T)(((double)b[i] - s) * (double)dinv[i]);
        __threadfence();
        *(volatile unsigned *)&ready[i] = 1u;
    }
}

static void tri_destroy(void *handle)
{
    cu_tri *t = (cu_tri *)handle;
    if (!t) return;
    if (t->sp_sv) cusparseSpSV_destroyDescr(t->sp_sv);
    if (t->sp_A) cusparseDestroySpMat(t->sp_A);
    void *d[] = {t->rowptr, t->level_ptr, t->colind,    t->level_rows, t->val,   t->dinv,
                 t->ready,  t->sp_rowptr, t->sp_colind, t->sp_val,     t->sp_buf};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (d[i]) cudaFree(d[i]);
    free(t->hlevel_ptr);
    free(t->seg);
    free(t);
}

static int put(void **d, const void *h, size_t bytes)
{
    HK_CU(cudaMalloc(d, bytes ? bytes : 16));
    if (bytes) HK_CU(cudaMemcpy(*d, h, bytes, cudaMemcpyHostToDevice));
    return 0;
}

/* cuSPARSE SpSV: the factor with its diagonal 1/dinv in place (columns sorted), 32-bit
 * indices, analysis done once here. */
static int cusparse_create(cu_tri *t, const hk_trifactor *T, hk_precision p)
{
    int ierr = 0;
    const int64_t n = T->n, nnz = T->rowptr[n] + n;
    const size_t es = p == HK_FP64 ? 8 : 4;
    const cudaDataType dt = p == HK_FP64 ? CUDA_R_64F : CUDA_R_32F;
    int32_t *rp = NULL, *ci = NULL;
    char *v = NULL;
    void *dummy = NULL;
    cusparseDnVecDescr_t vb = NULL, vx = NULL;
    size_t bytes = 0;
    const double one = 1;
    const float onef = 1;
    HK_CHECK(nnz < INT32_MAX, HK_ERR_UNSUPPORTED,
             "pc.tri=cusparse: the factor has %lld entries, more than 32-bit indices hold; use "
             "pc.tri=syncfree",
             (long long)nnz);
    HK_TRY(hk_malloc((size_t)(n + 1) * 4, &rp));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * 4, &ci));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * es, &v));
    {
        int64_t q = 0;
        rp[0] = 0;
        for (int64_t i = 0; i < n; i++) {
            int diag_done = 0;
            for (int64_t k = T->rowptr[i]; k <= T->rowptr[i + 1]; k++) {
                const int at_end = k == T->rowptr[i + 1];
                if (!diag_done && (at_end || T->colind[k] > i)) {
                    ci[q] = (int32_t)i;
                    if (p == HK_FP64)
                        ((double *)v)[q++] = 1 / T->dinv[i];
                    else
                        ((float *)v)[q++] = (float)(1 / T->dinv[i]);
                    diag_done = 1;
                }
                if (at_end) break;
                ci[q] = T->colind[k];
                if (p == HK_FP64)
                    ((double *)v)[q++] = T->val[k];
                else
                    ((float *)v)[q++] = (float)T->val[k];
            }
            rp[i + 1] = (int32_t)q;
        }
    }
    HK_TRY(put((void **)&t->sp_rowptr, rp, (size_t)(n + 1) * 4));
    HK_TRY(put((void **)&t->sp_colind, ci, (size_t)nnz * 4));
    HK_TRY(put(&t->sp_val, v, (size_t)nnz * es));
    HK_CU_SPARSE_TRY(cusparseCreateCsr(&t->sp_A, n, n, nnz, t->sp_rowptr, t->sp_colind, t->sp_val,
                                       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                       CUSPARSE_INDEX_BASE_ZERO, dt));
    {
        cusparseFillMode_t fill = t->upper ? CUSPARSE_FILL_MODE_UPPER : CUSPARSE_FILL_MODE_LOWER;
        cusparseDiagType_t diag = CUSPARSE_DIAG_TYPE_NON_UNIT;
        HK_CU_SPARSE_TRY(
            cusparseSpMatSetAttribute(t->sp_A, CUSPARSE_SPMAT_FILL_MODE, &fill, sizeof fill));
        HK_CU_SPARSE_TRY(
            cusparseSpMatSetAttribute(t->sp_A, CUSPARSE_SPMAT_DIAG_TYPE, &diag, sizeof diag));
    }
    HK_TRY(hk_cu_malloc(&dummy, (size_t)(2 * n + 2) * es));
    HK_CU_SPARSE_TRY(cusparseCreateDnVec(&vb, n, dummy, dt));
    HK_CU_SPARSE_TRY(cusparseCreateDnVec(&vx, n, (char *)dummy + (size_t)(n + 1) * es, dt));
    HK_CU_SPARSE_TRY(cusparseSpSV_createDescr(&t->sp_sv));
    HK_CU_SPARSE_TRY(
        cusparseSpSV_bufferSize(hk_cu.sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                p == HK_FP64 ? (const void *)&one : (const void *)&onef, t->sp_A,
                                vb, vx, dt, CUSPARSE_SPSV_ALG_DEFAULT, t->sp_sv, &bytes));
    HK_TRY(hk_cu_malloc(&t->sp_buf, bytes ? bytes : 16));
    HK_CU_SPARSE_TRY(cusparseSpSV_analysis(hk_cu.sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                           p == HK_FP64 ? (const void *)&one : (const void *)&onef,
                                           t->sp_A, vb, vx, dt, CUSPARSE_SPSV_ALG_DEFAULT, t->sp_sv,
                                           t->sp_buf));
    HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
fail:
    if (vb) cusparseDestroyDnVec(vb);
    if (vx) cusparseDestroyDnVec(vx);
    if (dummy) cudaFree(dummy);
    free(rp);
    free(ci);
    free(v);
    return ierr;
}

static int tri_create(const hk_trifactor *T, hk_precision p, void **handle)
{
    int ierr = 0;
    cu_tri *t = NULL;
    void *tmp = NULL;
    *handle = NULL;
    HK_CALL(hk_cu_init());
    const int64_t n = T->n, nnz = T->rowptr[T->n], nl = T->nlevels;
    const size_t es = p == HK_FP64 ? sizeof(double) : sizeof(float);
    HK_CALL(hk_calloc(1, sizeof *t, &t));
    t->prec = p;
    t->n = n;
    t->nlevels = nl;
    HK_TRY(put((void **)&t->rowptr, T->rowptr, (size_t)(n + 1) * 8));
    HK_TRY(put((void **)&t->level_ptr, T->level_ptr, (size_t)(nl + 1) * 8));
    HK_TRY(put((void **)&t->colind, T->colind, (size_t)nnz * 4));
    HK_TRY(put((void **)&t->level_rows, T->level_rows, (size_t)n * 4));
    if (p == HK_FP64) {
        HK_TRY(put(&t->val, T->val, (size_t)nnz * 8));
        HK_TRY(put(&t->dinv, T->dinv, (size_t)n * 8));
    } else {
        HK_TRY(hk_malloc((size_t)(nnz > n ? nnz : n) * es + 16, &tmp));
        float *f = (float *)tmp;
        for (int64_t k = 0; k < nnz; k++)
            f[k] = (float)T->val[k];
        HK_TRY(put(&t->val, f, (size_t)nnz * es));
        for (int64_t i = 0; i < n; i++)
            f[i] = (float)T->dinv[i];
        HK_TRY(put(&t->dinv, f, (size_t)n * es));
    }
    HK_TRY(hk_malloc((size_t)(nl + 1) * 8, &t->hlevel_ptr));
    memcpy(t->hlevel_ptr, T->level_ptr, (size_t)(nl + 1) * 8);
    /* segments: big levels alone, runs of small levels walked by one block */
    HK_TRY(hk_malloc((size_t)(nl ? nl : 1) * sizeof *t->seg, &t->seg));
    for (int64_t l = 0; l < nl; l++) {
        const int big = T->level_ptr[l + 1] - T->level_ptr[l] >= TRI_GRID_MIN;
        if (!big && t->nseg > 0 && t->seg[t->nseg - 1].block) {
            t->seg[t->nseg - 1].l1 = l + 1;
        } else {
            t->seg[t->nseg].l0 = l;
            t->seg[t->nseg].l1 = l + 1;
            t->seg[t->nseg].block = !big;
            t->nseg++;
        }
    }
    /* solve order: an upper factor has entries right of the diagonal */
    for (int64_t i = 0; i < n && !t->upper; i++)
        for (int64_t k = T->rowptr[i]; k < T->rowptr[i + 1]; k++)
            if (T->colind[k] > i) t->upper = 1;
    t->method = T->method;
    if (t->method == HK_TRI_SYNCFREE) {
        const double mean = n ? (double)nnz / (double)n : 0;
        t->group = mean <= 4 ? 4 : mean <= 8 ? 8 : mean <= 16 ? 16 : 32;
        HK_TRY(hk_cu_malloc((void **)&t->ready, (size_t)(n + 1) * sizeof(unsigned)));
    } else if (t->method == HK_TRI_CUSPARSE) {
        HK_TRY(cusparse_create(t, T, p));
    } else {
        t->method = HK_TRI_LEVELS;
    }
    free(tmp);
    *handle = t;
    return 0;
fail:
    free(tmp);
    tri_destroy(t);
    return ierr;
}

template <typename T> static void tri_launch(const cu_tri *t, const T *b, T *x)
{
    for (int64_t g = 0; g < t->nseg; g++) {
        const tri_seg *s = &t->seg[g];
        if (s->block) {
            k_tri_block<T><<<1, HK_CU_BLOCK, 0, hk_cu.stream>>>(
                s->l0, s->l1, t->level_ptr, t->level_rows, t->rowptr, t->colind, (const T *)t->val,
                (const T *)t->dinv, b, x);
        } else {
            const int64_t q0 = t->hlevel_ptr[s->l0], q1 = t->hlevel_ptr[s->l0 + 1];
            const unsigned grid = (unsigned)((q1 - q0 + HK_CU_BLOCK - 1) / HK_CU_BLOCK);
            k_tri_level<T><<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(q0, q1, t->level_rows, t->rowptr,
                                                                   t->colind, (const T *)t->val,
                                                                   (const T *)t->dinv, b, x);
        }
    }
}

template <typename T, int G> static void syncfree_launch_g(const cu_tri *t, const T *b, T *x)
{
    const int rows_per_block = (HK_CU_BLOCK / 32) * (32 / G);
    const unsigned grid = (unsigned)((t->n + rows_per_block - 1) / rows_per_block);
    k_tri_syncfree<T, G><<<grid, HK_CU_BLOCK, 0, hk_cu.stream>>>(
        t->n, t->upper, t->rowptr, t->colind, (const T *)t->val, (const T *)t->dinv, b, x,
        t->ready);
}

template <typename T> static void syncfree_launch(const cu_tri *t, const T *b, T *x)
{
    switch (t->group) {
    case 4:
        syncfree_launch_g<T, 4>(t, b, x);
        break;
    case 8:
        syncfree_launch_g<T, 8>(t, b, x);
        break;
    case 16:
        syncfree_launch_g<T, 16>(t, b, x);
        break;
    default:
        syncfree_launch_g<T, 32>(t, b, x);
        break;
    }
}

static int cusparse_solve(const cu_tri *t, const hk_vec *b, hk_vec *x)
{
    int ierr = 0;
    const cudaDataType dt = t->prec == HK_FP64 ? CUDA_R_64F : CUDA_R_32F;
    const double one = 1;
    const float onef = 1;
    cusparseDnVecDescr_t vb = NULL, vx = NULL;
    HK_CU_SPARSE_TRY(cusparseCreateDnVec(&vb, t->n, b->data, dt));
    HK_CU_SPARSE_TRY(cusparseCreateDnVec(&vx, t->n, x->data, dt));
    HK_CU_SPARSE_TRY(
        cusparseSpSV_solve(hk_cu.sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                           t->prec == HK_FP64 ? (const void *)&one : (const void *)&onef, t->sp_A,
                           vb, vx, dt, CUSPARSE_SPSV_ALG_DEFAULT, t->sp_sv));
fail:
    if (vb) cusparseDestroyDnVec(vb);
    if (vx) cusparseDestroyDnVec(vx);
    return ierr;
}

static int tri_solve(void *handle, const hk_vec *b, hk_vec *x)
{
    const cu_tri *t = (const cu_tri *)handle;
    HK_CHECK(b->n == t->n && x->n == t->n && b->prec == t->prec && x->prec == t->prec &&
                 b->data != x->data,
             HK_ERR_ARG,
             "tri_solve: vectors must be distinct, of length %lld and the factor's precision",
             (long long)t->n);
    if (t->method == HK_TRI_CUSPARSE) return cusparse_solve(t, b, x);
    if (t->method == HK_TRI_SYNCFREE) {
        if (t->n == 0) return 0;
        HK_CU(cudaMemsetAsync(t->ready, 0, (size_t)(t->n + 1) * sizeof(unsigned), hk_cu.stream));
        if (t->prec == HK_FP64)
            syncfree_launch<double>(t, (const double *)b->data, (double *)x->data);
        else
            syncfree_launch<float>(t, (const float *)b->data, (float *)x->data);
    } else if (t->prec == HK_FP64) {
        tri_launch<double>(t, (const double *)b->data, (double *)x->data);
    } else {
        tri_launch<float>(t, (const float *)b->data, (float *)x->data);
    }
    HK_CU_LAUNCHED();
    return 0;
}

int hk_cu_tri_create(const hk_trifactor *T, hk_precision p, void **handle)
{
    return tri_create(T, p, handle);
}
int hk_cu_tri_solve(void *handle, const hk_vec *b, hk_vec *x)
{
    return tri_solve(handle, b, x);
}
void hk_cu_tri_destroy(void *handle)
{
    tri_destroy(handle);
}
