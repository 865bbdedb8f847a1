/* The CPU backend's level-scheduled sparse triangular solve (ops tri_setup / tri_solve /
 * tri_destroy, registered in solver/cpu/cpu_backend.c). The set-up splits the factor on the
 * host (hk_trifactor_from_csr: the backend's memory is host memory) and copies the split into
 * the handle, so the factor may be freed afterwards.
 *
 * Rows of one level are independent and a level with enough rows (see par_min) runs in
 * parallel (OpenMP for over its rows, the barrier at its end separating it from the next). Runs
 * of smaller levels, where a barrier per level would cost more than the work, are merged into
 * one serial segment executed in natural row order (ascending for a lower factor, descending for
 * an upper one: every dependency comes earlier in that order). Each row sums in a fixed order,
 * so the result does not depend on the thread count or the segmentation. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

/* Rows a level needs to be solved in parallel: TRI_PAR_WORK / threads, at least 64. Measured on
 * 3D elasticity (16-core host): 2 threads gain nothing below ~1000 rows a level (the level
 * order also costs locality), 16 threads gain from ~64 rows on (13 ms vs 25 ms serial at
 * n = 2e5). */
#ifndef TRI_PAR_WORK
#define TRI_PAR_WORK 2048
#endif

typedef struct {
    int64_t begin, end; /* range of level_rows */
    int parallel;
} tri_seg;

typedef struct {
    hk_precision prec;
    int64_t n, nlevels, nseg;
    int64_t *rowptr, *level_ptr;
    int32_t *colind, *level_rows;
    void *val, *dinv; /* double or float */
    tri_seg *seg;
} cpu_tri;

static int cmp_asc(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_desc(const void *a, const void *b)
{
    return cmp_asc(b, a);
}

void hk_cpu_tri_destroy(void *handle)
{
    cpu_tri *t = handle;
    if (!t) return;
    free(t->rowptr);
    free(t->level_ptr);
    free(t->colind);
    free(t->level_rows);
    free(t->val);
    free(t->dinv);
    free(t->seg);
    free(t);
}

/* The handle of the split T in precision p (upper: solved in descending row order). */
static int tri_build(const hk_trifactor *T, int upper, hk_precision p, void **handle)
{
    int ierr;
    cpu_tri *t = NULL;
    const int64_t n = T->n, nnz = T->rowptr[T->n];
    const size_t es = p == HK_FP64 ? sizeof(double) : sizeof(float);
    *handle = NULL;
    HK_CALL(hk_calloc(1, sizeof *t, &t));
    t->prec = p;
    t->n = n;
    t->nlevels = T->nlevels;
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof *t->rowptr, &t->rowptr));
    HK_TRY(hk_malloc((size_t)(T->nlevels + 1) * sizeof *t->level_ptr, &t->level_ptr));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *t->colind, &t->colind));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *t->level_rows, &t->level_rows));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * es, &t->val));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * es, &t->dinv));
    memcpy(t->rowptr, T->rowptr, (size_t)(n + 1) * sizeof *t->rowptr);
    memcpy(t->level_ptr, T->level_ptr, (size_t)(T->nlevels + 1) * sizeof *t->level_ptr);
    memcpy(t->colind, T->colind, (size_t)nnz * sizeof *t->colind);
    memcpy(t->level_rows, T->level_rows, (size_t)n * sizeof *t->level_rows);
    if (p == HK_FP64) {
        memcpy(t->val, T->val, (size_t)nnz * sizeof(double));
        memcpy(t->dinv, T->dinv, (size_t)n * sizeof(double));
    } else {
        float *v = t->val, *d = t->dinv;
        for (int64_t k = 0; k < nnz; k++)
            v[k] = (float)T->val[k];
        for (int64_t i = 0; i < n; i++)
            d[i] = (float)T->dinv[i];
    }
    /* segments: parallel levels, and runs of small levels in natural order */
    const int threads = omp_get_max_threads();
    const int64_t par_min =
        threads > 1 && TRI_PAR_WORK / threads > 64 ? TRI_PAR_WORK / threads : 64;
    HK_TRY(hk_malloc((size_t)(T->nlevels ? T->nlevels : 1) * sizeof *t->seg, &t->seg));
    for (int64_t l = 0; l < T->nlevels; l++) {
        const int64_t b = T->level_ptr[l], e = T->level_ptr[l + 1];
        const int par = threads > 1 && e - b >= par_min;
        if (!par && t->nseg > 0 && !t->seg[t->nseg - 1].parallel) {
            t->seg[t->nseg - 1].end = e; /* extend the serial run */
        } else {
            t->seg[t->nseg].begin = b;
            t->seg[t->nseg].end = e;
            t->seg[t->nseg].parallel = par;
            t->nseg++;
        }
    }
    for (int64_t g = 0; g < t->nseg; g++)
        if (!t->seg[g].parallel)
            qsort(t->level_rows + t->seg[g].begin, (size_t)(t->seg[g].end - t->seg[g].begin),
                  sizeof *t->level_rows, upper ? cmp_desc : cmp_asc);
    *handle = t;
    return 0;
fail:
    hk_cpu_tri_destroy(t);
    return ierr;
}

int hk_cpu_tri_setup(const hk_bmat *F, int upper, int unit, int method, hk_precision p,
                     void **handle, int64_t *nlevels)
{
    (void)method; /* the CPU solves by levels */
    *handle = NULL;
    HK_CHECK(F->br == 1 && F->bc == 1 && F->nbrows == F->nbcols, HK_ERR_ARG,
             "tri_setup: the factor must be square with 1 x 1 blocks");
    const hk_csr v = {
        .n = F->nbrows, .m = F->nbcols, .rowptr = F->rowptr, .colind = F->colind, .val = F->val};
    hk_trifactor T = {0};
    HK_CALL(hk_trifactor_from_csr(&v, upper, unit, &T));
    *nlevels = T.nlevels;
    int ierr = tri_build(&T, upper, p, handle);
    hk_trifactor_free(&T);
    return ierr;
}

/* One solve per precision (T = double, float), the sums always in double. */
#define TRI_ROW(T)                                                                                 \
    do {                                                                                           \
        const int32_t i = t->level_rows[q];                                                        \
        double s = bv[i];                                                                          \
        for (int64_t k = t->rowptr[i]; k < t->rowptr[i + 1]; k++)                                  \
            s -= (double)val[k] * (double)xv[t->colind[k]];                                        \
        xv[i] = (T)(s * (double)dinv[i]);                                                          \
    } while (0)
#define TRI_SOLVE_FN(name, T)                                                                      \
    static void name(const cpu_tri *t, const T *bv, T *xv)                                         \
    {                                                                                              \
        const T *val = t->val, *dinv = t->dinv;                                                    \
        for (int64_t g = 0; g < t->nseg; g++) {                                                    \
            const int64_t b = t->seg[g].begin, e = t->seg[g].end;                                  \
            if (t->seg[g].parallel) {                                                              \
                _Pragma("omp parallel for schedule(static)") for (int64_t q = b; q < e; q++)       \
                    TRI_ROW(T);                                                                    \
            } else {                                                                               \
                for (int64_t q = b; q < e; q++)                                                    \
                    TRI_ROW(T);                                                                    \
            }                                                                                      \
        }                                                                                          \
    }
TRI_SOLVE_FN(tri_solve_f64, double)
TRI_SOLVE_FN(tri_solve_f32, float)

int hk_cpu_tri_solve(void *handle, const hk_vec *b, hk_vec *x)
{
    cpu_tri *t = handle;
    HK_CHECK(b->n == t->n && x->n == t->n && b->prec == t->prec && x->prec == t->prec &&
                 b->data != x->data,
             HK_ERR_ARG,
             "tri_solve: vectors must be distinct, of length %lld and the factor's "
             "precision",
             (long long)t->n);
    if (t->prec == HK_FP64)
        tri_solve_f64(t, b->data, x->data);
    else
        tri_solve_f32(t, b->data, x->data);
    return 0;
}
