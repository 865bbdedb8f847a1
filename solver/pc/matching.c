/* Maximum-product matching with scaling, in the manner of MC64's option 5 (Duff and Koster,
 * "On algorithms for permuting large entries to the diagonal of a sparse matrix", SIMAX 22,
 * 2001), for pc.mlilu.matching (the ILUPACK paper scales and permutes A before its multilevel
 * factorisation). Written from the paper's description:
 *
 *   a row for every column, sigma(j), maximising prod_j |a_sigma(j),j|, is a minimum-cost
 *   perfect matching of the bipartite graph of A with costs c_ij = log a_j - log |a_ij|
 *   (a_j = max_i |a_ij|, so c_ij >= 0; zero entries are no edges). Columns are matched one at
 *   a time by a shortest augmenting path (Dijkstra over the rows on the reduced costs
 *   c_ij - u_i - v_j >= 0, kept feasible by the dual update), after a greedy start on the
 *   edges of zero reduced cost. The duals give the scaling: with Dr_i = exp(u_i) and
 *   Dc_j = exp(v_j) / a_j every entry of Dr A Dc is at most 1 in modulus and the matched ones
 *   are 1.
 *
 * A structurally singular A (no perfect matching) leaves columns without a row; they are
 * paired with the rows left over in increasing order, and their duals stay feasible, so the
 * bound of 1 still holds. The result is a deterministic function of A (columns in order,
 * ties in the heap to the lower row). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlilu.h"

/* Min-heap of rows keyed by d (ties: lower row), with positions for decrease-key. */
typedef struct row_heap {
    int64_t n;
    int32_t *h;   /* heap of rows */
    int64_t *pos; /* row -> position in h, or -1 */
    const double *d;
} row_heap;

static int heap_less(const row_heap *H, int32_t a, int32_t b)
{
    return H->d[a] < H->d[b] || (H->d[a] == H->d[b] && a < b);
}

static void heap_up(row_heap *H, int64_t k)
{
    const int32_t v = H->h[k];
    while (k > 0 && heap_less(H, v, H->h[(k - 1) / 2])) {
        H->h[k] = H->h[(k - 1) / 2];
        H->pos[H->h[k]] = k;
        k = (k - 1) / 2;
    }
    H->h[k] = v;
    H->pos[v] = k;
}

static void heap_push_or_decrease(row_heap *H, int32_t r)
{
    if (H->pos[r] < 0) {
        H->h[H->n] = r;
        H->pos[r] = H->n++;
    }
    heap_up(H, H->pos[r]);
}

static int32_t heap_pop_min(row_heap *H)
{
    const int32_t top = H->h[0];
    H->pos[top] = -1;
    if (--H->n > 0) {
        const int32_t v = H->h[H->n];
        int64_t k = 0;
        for (;;) {
            int64_t c = 2 * k + 1;
            if (c >= H->n) break;
            if (c + 1 < H->n && heap_less(H, H->h[c + 1], H->h[c])) c++;
            if (!heap_less(H, H->h[c], v)) break;
            H->h[k] = H->h[c];
            H->pos[H->h[k]] = k;
            k = c;
        }
        H->h[k] = v;
        H->pos[v] = k;
    }
    return top;
}

int hk_mc64_matching(const hk_csr *A, int32_t *rowof, double *dr, double *dc, int64_t *unmatched)
{
    int ierr = 0;
    const int64_t n = A->n;
    const size_t nz = (size_t)(n ? n : 1);
    hk_csr T = {0}; /* A^T: the columns of A as rows */
    double *cost = NULL, *u = NULL, *v = NULL, *amax = NULL, *d = NULL;
    int32_t *colof = NULL, *pred = NULL, *visited = NULL, *heap = NULL;
    int64_t *pos = NULL, nvis = 0;
    *unmatched = 0;
    HK_CALL(hk_csr_transpose(A, &T));
    const int64_t nnz = T.rowptr[n];
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *cost, &cost));
    HK_TRY(hk_malloc(nz * sizeof *u, &u));
    HK_TRY(hk_malloc(nz * sizeof *v, &v));
    HK_TRY(hk_calloc(nz, sizeof *amax, &amax));
    HK_TRY(hk_malloc(nz * sizeof *d, &d));
    HK_TRY(hk_malloc(nz * sizeof *colof, &colof));
    HK_TRY(hk_malloc(nz * sizeof *pred, &pred));
    HK_TRY(hk_malloc(nz * sizeof *visited, &visited));
    HK_TRY(hk_malloc(nz * sizeof *heap, &heap));
    HK_TRY(hk_malloc(nz * sizeof *pos, &pos));
    /* costs c_ij = log a_j - log |a_ij| by columns (rows of T); zero entries are no edges */
    for (int64_t j = 0; j < n; j++) {
        for (int64_t p = T.rowptr[j]; p < T.rowptr[j + 1]; p++)
            if (fabs(T.val[p]) > amax[j]) amax[j] = fabs(T.val[p]);
        HK_TRY_CHECK(isfinite(amax[j]), HK_ERR_NUMERIC,
                     "pc.mlilu.matching: column %lld has an entry that is not finite; check the "
                     "matrix",
                     (long long)j);
        for (int64_t p = T.rowptr[j]; p < T.rowptr[j + 1]; p++)
            cost[p] = T.val[p] != 0 ? log(amax[j]) - log(fabs(T.val[p])) : INFINITY;
    }
    /* feasible duals: u_i = min_j c_ij, v_j = min_i (c_ij - u_i) */
    for (int64_t i = 0; i < n; i++) {
        u[i] = INFINITY;
        rowof[i] = colof[i] = -1;
        pos[i] = -1;
        d[i] = INFINITY;
    }
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = T.rowptr[j]; p < T.rowptr[j + 1]; p++)
            if (cost[p] < u[T.colind[p]]) u[T.colind[p]] = cost[p];
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(u[i])) u[i] = 0; /* an empty row */
    for (int64_t j = 0; j < n; j++) {
        v[j] = INFINITY;
        for (int64_t p = T.rowptr[j]; p < T.rowptr[j + 1]; p++)
            if (cost[p] - u[T.colind[p]] < v[j]) v[j] = cost[p] - u[T.colind[p]];
        if (!isfinite(v[j])) v[j] = 0;
    }
    /* greedy start: each column takes its first free row of zero reduced cost */
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = T.rowptr[j]; p < T.rowptr[j + 1]; p++) {
            const int32_t i = T.colind[p];
            if (colof[i] < 0 && isfinite(cost[p]) && cost[p] - u[i] - v[j] == 0) {
                colof[i] = (int32_t)j;
                rowof[j] = i;
                break;
            }
        }
    /* shortest augmenting paths for the columns left */
    row_heap H = {0, heap, pos, d};
    for (int64_t j0 = 0; j0 < n; j0++) {
        if (rowof[j0] >= 0) continue;
        H.n = 0;
        nvis = 0;
        int32_t found = -1, j = (int32_t)j0;
        double dj = 0, L = INFINITY;
        for (;;) {
            /* scan column j (distance dj): relax its rows */
            for (int64_t p = T.rowptr[j]; p < T.rowptr[j + 1]; p++) {
                if (!isfinite(cost[p])) continue;
                const int32_t i = T.colind[p];
                if (pos[i] == -2) continue; /* finalised */
                double rc = cost[p] - u[i] - v[j];
                if (rc < 0) rc = 0; /* rounding of the dual updates */
                const double di = dj + rc;
                if (di < d[i]) {
                    if (!isfinite(d[i])) visited[nvis++] = i;
                    d[i] = di;
                    pred[i] = j;
                    heap_push_or_decrease(&H, i);
                }
            }
            if (H.n == 0) break; /* no free row reachable: structurally singular */
            const int32_t r = heap_pop_min(&H);
            pos[r] = -2;
            if (colof[r] < 0) {
                found = r;
                L = d[r];
                break;
            }
            j = colof[r];
            dj = d[r];
        }
        if (found >= 0) {
            /* duals: rows finalised before the free one, u_i += d_i - L; their columns (and
             * j0), v += L - d */
            v[j0] += L;
            for (int64_t q = 0; q < nvis; q++) {
                const int32_t i = visited[q];
                if (pos[i] == -2 && i != found) {
                    u[i] += d[i] - L;
                    v[colof[i]] += L - d[i];
                }
            }
            /* augment along the path */
            for (int32_t i = found;;) {
                const int32_t jj = pred[i], next = rowof[jj];
                rowof[jj] = i;
                colof[i] = jj;
                if (jj == j0) break;
                i = next;
            }
        }
        for (int64_t q = 0; q < nvis; q++) { /* reset the rows touched */
            d[visited[q]] = INFINITY;
            pos[visited[q]] = -1;
        }
    }
    /* columns without a row get the rows left over, in order */
    for (int64_t j = 0, i = 0; j < n; j++) {
        if (rowof[j] >= 0) continue;
        (*unmatched)++;
        while (colof[i] >= 0)
            i++;
        colof[i] = (int32_t)j;
        rowof[j] = (int32_t)i;
    }
    for (int64_t i = 0; i < n; i++)
        dr[i] = exp(u[i]);
    for (int64_t j = 0; j < n; j++)
        dc[j] = amax[j] > 0 ? exp(v[j]) / amax[j] : 1;
fail:
    hk_csr_free(&T);
    free(cost), free(u), free(v), free(amax), free(d);
    free(colof), free(pred), free(visited), free(heap), free(pos);
    return ierr;
}
