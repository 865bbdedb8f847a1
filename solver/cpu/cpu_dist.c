/* CPU backend: the gather of the distributed operator's halo (vec_gather, hk_impl.h): the
 * owned entries a neighbour needs into the send buffer, the boundary rows' owned columns into
 * the extended vector. */
#include "cpu_impl.h"

int hk_cpu_vec_gather(hk_vec *y, const hk_vec *x, const int32_t *idx, int64_t n, int bs)
{
    HK_CHECK(x->prec == y->prec && y->n >= n * bs && bs >= 1, HK_ERR_ARG,
             "vec_gather: %lld blocks of %d into a vector of %lld entries (precisions %s)",
             (long long)n, bs, (long long)y->n, x->prec == y->prec ? "equal" : "differ");
    if (x->prec == HK_FP64) {
        const double *xs = x->data;
        double *ys = y->data;
#pragma omp parallel for schedule(static) if (n * bs > 50000)
        for (int64_t i = 0; i < n; i++)
            for (int r = 0; r < bs; r++)
                ys[i * bs + r] = xs[(int64_t)idx[i] * bs + r];
    } else {
        const float *xs = x->data;
        float *ys = y->data;
#pragma omp parallel for schedule(static) if (n * bs > 50000)
        for (int64_t i = 0; i < n; i++)
            for (int r = 0; r < bs; r++)
                ys[i * bs + r] = xs[(int64_t)idx[i] * bs + r];
    }
    return 0;
}

/* dist_read_columns (hk_impl.h): the columns marked (each mark written only where not yet: a
 * column many entries read is read, not written, on the other threads), then ranked in one
 * pass. */
int hk_cpu_dist_read_columns(const int32_t *col, int64_t n, int64_t ncols, int32_t *rank,
                             int32_t *list, int64_t *nread)
{
    HK_CHECK(ncols <= INT32_MAX, HK_ERR_UNSUPPORTED,
             "dist_read_columns: %lld columns is more than 32-bit indices hold", (long long)ncols);
#pragma omp parallel for schedule(static) if (ncols > 50000)
    for (int64_t j = 0; j < ncols; j++)
        rank[j] = -1;
#pragma omp parallel for schedule(static) if (n > 50000)
    for (int64_t p = 0; p < n; p++) {
        int32_t was;
#pragma omp atomic read
        was = rank[col[p]];
        if (was != 0) {
#pragma omp atomic write
            rank[col[p]] = 0;
        }
    }
    int32_t k = 0;
    for (int64_t j = 0; j < ncols; j++)
        if (rank[j] == 0) {
            if (list) list[k] = (int32_t)j;
            rank[j] = k++;
        }
    *nread = k;
    return 0;
}

/* dist_local_pattern (hk_impl.h): the rows' kinds, their new positions in row order, then each
 * row written where it goes and sorted there (insertion: rows are short and mostly sorted). */
int hk_cpu_dist_local_pattern(int64_t nrows, const int64_t *rowptr, const int32_t *col,
                              const int32_t *map, int64_t nbc, int split, int64_t *rp,
                              int32_t *lcol, int32_t *src, int32_t *ypos, int64_t *nint)
{
    const int64_t base = rowptr[0];
    int64_t ni = 0;
    *nint = 0;
    if (split) {
#pragma omp parallel for schedule(static) reduction(+ : ni) if (nrows > 5000)
        for (int64_t i = 0; i < nrows; i++) {
            int bnd = 0;
            for (int64_t p = rowptr[i] - base; p < rowptr[i + 1] - base && !bnd; p++)
                bnd = map[col[p]] >= nbc;
            ypos[i] = bnd; /* the kind, until the positions */
            ni += !bnd;
        }
        split = ni > 0 && ni < nrows;
    }
    if (split) {
        int64_t ki = 0, kb = ni;
        for (int64_t i = 0; i < nrows; i++)
            ypos[i] = (int32_t)(ypos[i] ? kb++ : ki++);
        rp[0] = 0;
        for (int64_t i = 0; i < nrows; i++)
            rp[ypos[i] + 1] = rowptr[i + 1] - rowptr[i];
        for (int64_t i = 0; i < nrows; i++)
            rp[i + 1] += rp[i];
        *nint = ni;
    } else
        for (int64_t i = 0; i <= nrows; i++)
            rp[i] = rowptr[i] - base;
#pragma omp parallel for schedule(dynamic, 256) if (nrows > 5000)
    for (int64_t i = 0; i < nrows; i++) {
        const int64_t p0 = rowptr[i] - base, len = rowptr[i + 1] - rowptr[i];
        const int64_t q0 = rp[split ? ypos[i] : i];
        for (int64_t k = 0; k < len; k++) {
            const int32_t c = map[col[p0 + k]], s = (int32_t)(p0 + k);
            int64_t q = k;
            for (; q > 0 && lcol[q0 + q - 1] > c; q--) {
                lcol[q0 + q] = lcol[q0 + q - 1];
                src[q0 + q] = src[q0 + q - 1];
            }
            lcol[q0 + q] = c;
            src[q0 + q] = s;
        }
    }
    return 0;
}
