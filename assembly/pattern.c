/* The node-to-cell adjacency and the symbolic block CSR pattern of K. */
#include <stdlib.h>
#include <string.h>

#include <omp.h>
#include <sys/mman.h>

#include "mesh_impl.h" /* mesh/: hk_mesh_node_cells */
#include "pattern.h"

void hk_adj_free(hk_adj *a)
{
    free(a->ptr);
    free(a->idx);
    memset(a, 0, sizeof *a);
}

int hk_asm_node_cells(const hk_mesh *m, hk_adj *a)
{
    memset(a, 0, sizeof *a);
    a->n = m->nnodes;
    return hk_mesh_node_cells(m, &a->ptr, &a->idx);
}

int hk_asm_node_cells_of(const hk_mesh *m, const uint8_t *want, hk_adj *a)
{
    int ierr = 0;
    const int64_t nn = m->nnodes, ne = m->cells.n;
    const int64_t *cptr = m->cells.ptr;
    const int32_t *cn = m->cells.nodes;
    memset(a, 0, sizeof *a);
    a->n = nn;
    /* node v's count at ptr[v + 2], summed in parallel into its list's start at ptr[v + 1],
     * which the fill moves on to its end, node v + 1's start: no second array of the part's
     * nodes and no serial pass over them */
    HK_TRY(hk_calloc((size_t)nn + 2, sizeof *a->ptr, &a->ptr));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < ne; e++)
        for (int64_t k = cptr[e]; k < cptr[e + 1]; k++)
            if (want[cn[k]]) {
#pragma omp atomic
                a->ptr[cn[k] + 2]++;
            }
    hk_prefix_sum(a->ptr + 1, nn);
    HK_TRY(hk_malloc((size_t)a->ptr[nn + 1] * sizeof *a->idx + 1, &a->idx));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < ne; e++) {
        for (int64_t k = cptr[e]; k < cptr[e + 1]; k++) {
            if (!want[cn[k]]) continue;
            int64_t pos;
#pragma omp atomic capture
            pos = a->ptr[cn[k] + 1]++;
            a->idx[pos] = e;
        }
    }
    /* increasing, whatever order the threads filled them in (short lists: insertion) */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++)
        for (int64_t k = a->ptr[i] + 1; k < a->ptr[i + 1]; k++) {
            const int64_t e = a->idx[k];
            int64_t j = k;
            for (; j > a->ptr[i] && a->idx[j - 1] > e; j--)
                a->idx[j] = a->idx[j - 1];
            a->idx[j] = e;
        }
fail:
    if (ierr) hk_adj_free(a);
    return ierr;
}

/* The value array of K: 2 MiB aligned and marked for transparent huge pages where the system
 * has them (hundreds of MB for 1M DOFs: 512x fewer page faults), not zeroed. free()-able. */
static int alloc_values(size_t count, double **val)
{
    const size_t align = (size_t)2 << 20, bytes = count * sizeof(double) + 1;
    void *ptr = NULL;
    HK_CHECK(posix_memalign(&ptr, align, bytes) == 0, HK_ERR_MEMORY,
             "out of host memory for the %.1f MB of matrix values", (double)bytes / 1048576.0);
#ifdef MADV_HUGEPAGE
    if (bytes >= align) madvise(ptr, bytes / align * align, MADV_HUGEPAGE);
#endif
    *val = ptr;
    return 0;
}

static int cmp_i32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

int hk_asm_pattern(const hk_mesh *m, const hk_adj *n2c, hk_bcsr *K)
{
    int ierr = 0;
    const int64_t nn = m->nnodes;
    const int bs = m->dim;
    memset(K, 0, sizeof *K);
    K->bs = bs;
    K->nbrows = K->nbcols = nn;
    HK_TRY(hk_calloc((size_t)nn + 1, sizeof *K->rowptr, &K->rowptr));
    /* small meshes: one thread (thread start-up and barriers would dominate) */
    int nthr = nn < 20000 ? 1 : omp_get_max_threads();
    int32_t *marks = NULL; /* per thread: the row that last saw each node */
    HK_TRY(hk_malloc((size_t)nthr * (size_t)nn * sizeof *marks + 1, &marks));
    for (int pass = 0; pass < 2; pass++) {
#pragma omp parallel num_threads(nthr)
        {
            int32_t *mark = marks + (size_t)omp_get_thread_num() * (size_t)nn;
            for (int64_t i = 0; i < nn; i++)
                mark[i] = -1;
#pragma omp for schedule(dynamic, 256)
            for (int64_t i = 0; i < nn; i++) {
                int64_t cnt = 0, base = pass ? K->rowptr[i] : 0;
                mark[i] = (int32_t)i;
                if (pass) K->colind[base] = (int32_t)i;
                cnt = 1;
                for (int64_t c = n2c->ptr[i]; c < n2c->ptr[i + 1]; c++) {
                    int64_t e = n2c->idx[c];
                    for (int64_t k = m->cells.ptr[e]; k < m->cells.ptr[e + 1]; k++) {
                        int32_t j = m->cells.nodes[k];
                        if (mark[j] == i) continue;
                        mark[j] = (int32_t)i;
                        if (pass) K->colind[base + cnt] = j;
                        cnt++;
                    }
                }
                if (pass)
                    qsort(K->colind + base, (size_t)cnt, sizeof(int32_t), cmp_i32);
                else
                    K->rowptr[i + 1] = cnt;
            }
        }
        if (pass == 0) {
            for (int64_t i = 0; i < nn; i++)
                K->rowptr[i + 1] += K->rowptr[i];
            HK_TRY(hk_malloc((size_t)K->rowptr[nn] * sizeof *K->colind, &K->colind));
        }
    }
    HK_TRY(alloc_values((size_t)K->rowptr[nn] * (size_t)(bs * bs), &K->val));
    /* zero in parallel, by block rows: the page faults of first touch are spread over the
     * threads instead of serialising the numeric phase */
#pragma omp parallel for schedule(static) num_threads(nthr)
    for (int64_t i = 0; i < nn; i++)
        memset(K->val + (size_t)K->rowptr[i] * (size_t)(bs * bs), 0,
               (size_t)(K->rowptr[i + 1] - K->rowptr[i]) * (size_t)(bs * bs) * sizeof *K->val);
    free(marks);
    return 0;
fail:
    free(marks);
    hk_bcsr_free(K);
    return ierr;
}

void hk_asm_row_ranges(const hk_adj *n2c, int nthr, int64_t *bounds)
{
    const int64_t nn = n2c->n;
    bounds[0] = 0;
    for (int t = 1; t < nthr; t++) { /* first row whose cell count prefix reaches t/nthr */
        int64_t target = n2c->ptr[nn] / nthr * t, lo = bounds[t - 1], hi = nn;
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (n2c->ptr[mid] < target)
                lo = mid + 1;
            else
                hi = mid;
        }
        bounds[t] = lo;
    }
    bounds[nthr] = nn;
}
