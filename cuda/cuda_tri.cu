// Level-scheduled sparse triangular solve on the device (ops tri_create / tri_solve /
// tri_destroy; pc=ic0 and pc=ilu0 through solver/pc/trifactor.c). Semantics as the CPU
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

static void tri_destroy(void *handle)
{
    cu_tri *t = (cu_tri *)handle;
    if (!t) return;
    void *d[] = {t->rowptr, t->level_ptr, t->colind, t->level_rows, t->val, t->dinv};
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

static int tri_solve(void *handle, const hk_vec *b, hk_vec *x)
{
    const cu_tri *t = (const cu_tri *)handle;
    HK_CHECK(b->n == t->n && x->n == t->n && b->prec == t->prec && x->prec == t->prec &&
                 b->data != x->data,
             HK_ERR_ARG,
             "tri_solve: vectors must be distinct, of length %lld and the factor's precision",
             (long long)t->n);
    if (t->prec == HK_FP64)
        tri_launch<double>(t, (const double *)b->data, (double *)x->data);
    else
        tri_launch<float>(t, (const float *)b->data, (float *)x->data);
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
