/* hk_dist_scatter: one process's whole system cut into the processes' rows (hooke solve, hooke
 * bench scale). Rank 0 renumbers the block rows part after part, builds each process's rows
 * with the new global columns and sends them; every process receives its own. */
#include <stdlib.h>
#include <string.h>

#include "dist_impl.h"

enum { TAG_ROWS = 7201 };

/* The rows old[0..m) of K renumbered by new_of, and their entries of b (b may be NULL). */
static int rows_of(const hk_bcsr *K, const double *b, const int32_t *old, int64_t m,
                   const int32_t *new_of, hk_bcsr *L, double **bl)
{
    const int bs = K->bs, bb = bs * bs;
    int64_t nnz = 0;
    for (int64_t k = 0; k < m; k++)
        nnz += K->rowptr[old[k] + 1] - K->rowptr[old[k]];
    memset(L, 0, sizeof *L);
    L->bs = bs;
    L->nbrows = m;
    L->nbcols = K->nbcols;
    HK_CALL(hk_malloc((size_t)(m + 1) * sizeof *L->rowptr, &L->rowptr));
    HK_CALL(hk_malloc((size_t)(nnz + 1) * sizeof *L->colind, &L->colind));
    HK_CALL(hk_malloc((size_t)(nnz + 1) * bb * sizeof *L->val, &L->val));
    HK_CALL(hk_malloc((size_t)(m * bs + 1) * sizeof **bl, bl));
    int64_t q = 0;
    L->rowptr[0] = 0;
    for (int64_t k = 0; k < m; k++) {
        const int64_t i = old[k];
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++, q++)
            L->colind[q] = new_of[K->colind[p]];
        memcpy(L->val + (size_t)L->rowptr[k] * bb, K->val + (size_t)K->rowptr[i] * bb,
               (size_t)(K->rowptr[i + 1] - K->rowptr[i]) * bb * sizeof *L->val);
        L->rowptr[k + 1] = q;
        if (b) memcpy(*bl + k * bs, b + i * bs, (size_t)bs * sizeof **bl);
    }
    return 0;
}

static int send_rows(const hk_comm *c, int to, const hk_bcsr *L, const double *bl, int64_t row0)
{
    const int64_t head[4] = {L->bs, L->nbrows, L->nbcols, row0};
    const int64_t nnz = L->rowptr[L->nbrows];
    HK_CALL(hk_comm_send(c, head, sizeof head, to, TAG_ROWS));
    HK_CALL(hk_comm_send(c, L->rowptr, (size_t)(L->nbrows + 1) * sizeof *L->rowptr, to, TAG_ROWS));
    HK_CALL(hk_comm_send(c, L->colind, (size_t)nnz * sizeof *L->colind, to, TAG_ROWS));
    HK_CALL(hk_comm_send(c, L->val, (size_t)nnz * L->bs * L->bs * sizeof *L->val, to, TAG_ROWS));
    return hk_comm_send(c, bl, (size_t)(L->nbrows * L->bs) * sizeof *bl, to, TAG_ROWS);
}

static int recv_rows(const hk_comm *c, hk_bcsr *L, double **bl, int64_t *row0)
{
    int64_t head[4];
    memset(L, 0, sizeof *L);
    HK_CALL(hk_comm_recv(c, head, sizeof head, 0, TAG_ROWS));
    L->bs = (int)head[0];
    L->nbrows = head[1];
    L->nbcols = head[2];
    *row0 = head[3];
    HK_CALL(hk_malloc((size_t)(L->nbrows + 1) * sizeof *L->rowptr, &L->rowptr));
    HK_CALL(hk_comm_recv(c, L->rowptr, (size_t)(L->nbrows + 1) * sizeof *L->rowptr, 0, TAG_ROWS));
    const int64_t nnz = L->rowptr[L->nbrows];
    HK_CALL(hk_malloc((size_t)(nnz + 1) * sizeof *L->colind, &L->colind));
    HK_CALL(hk_malloc((size_t)(nnz + 1) * L->bs * L->bs * sizeof *L->val, &L->val));
    HK_CALL(hk_malloc((size_t)(L->nbrows * L->bs + 1) * sizeof **bl, bl));
    HK_CALL(hk_comm_recv(c, L->colind, (size_t)nnz * sizeof *L->colind, 0, TAG_ROWS));
    HK_CALL(hk_comm_recv(c, L->val, (size_t)nnz * L->bs * L->bs * sizeof *L->val, 0, TAG_ROWS));
    return hk_comm_recv(c, *bl, (size_t)(L->nbrows * L->bs) * sizeof **bl, 0, TAG_ROWS);
}

/* Rank 0: the new numbering and every other process's rows sent; its own kept. */
static int scatter_root(const hk_comm *c, const hk_bcsr *K, const double *b, const int32_t *part,
                        hk_bcsr *L, double **bl, int64_t *row0, int32_t *old_of)
{
    const int P = hk_comm_size(c);
    const int64_t n = K->nbrows;
    int ierr = 0;
    int32_t *new_of = NULL;
    int64_t *starts = NULL, *next = NULL;
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof *new_of, &new_of));
    HK_TRY(hk_calloc((size_t)P + 1, sizeof *starts, &starts));
    HK_TRY(hk_malloc((size_t)(P + 1) * sizeof *next, &next));
    for (int64_t i = 0; i < n; i++) {
        const int q = part ? part[i] : (int)(i * P / (n > 0 ? n : 1));
        HK_TRY_CHECK(q >= 0 && q < P, HK_ERR_ARG,
                     "hk_dist_scatter: block row %lld goes to process %d of %d", (long long)i, q,
                     P);
        starts[q + 1]++;
    }
    for (int q = 0; q < P; q++)
        starts[q + 1] += starts[q];
    memcpy(next, starts, (size_t)P * sizeof *next);
    for (int64_t i = 0; i < n; i++) {
        const int q = part ? part[i] : (int)(i * P / (n > 0 ? n : 1));
        new_of[i] = (int32_t)next[q]++;
        old_of[new_of[i]] = (int32_t)i;
    }
    for (int q = P - 1; q >= 0 && !ierr; q--) { /* its own last: it keeps them */
        hk_bcsr Lq;
        double *bq = NULL;
        const int64_t r0 = starts[q], m = starts[q + 1] - r0;
        ierr = rows_of(K, b, old_of + r0, m, new_of, &Lq, &bq);
        if (!ierr && q > 0) ierr = send_rows(c, q, &Lq, bq, r0);
        if (q > 0 || ierr) {
            hk_bcsr_free(&Lq);
            free(bq);
        } else {
            *L = Lq;
            *bl = bq;
            *row0 = r0;
        }
    }
fail:
    free(new_of);
    free(starts);
    free(next);
    return ierr;
}

int hk_dist_scatter(const hk_comm *c, const hk_bcsr *K, const double *b, const int32_t *part,
                    hk_bcsr *Kloc, double **bloc, int64_t *row0, int32_t **old_of)
{
    int ierr = 0;
    int32_t *old = NULL;
    double *bl = NULL;
    memset(Kloc, 0, sizeof *Kloc);
    *row0 = 0;
    if (old_of) *old_of = NULL;
    if (hk_comm_rank(c) == 0) {
        ierr = hk_malloc((size_t)(K->nbrows + 1) * sizeof *old, &old);
        if (!ierr) ierr = scatter_root(c, K, b, part, Kloc, &bl, row0, old);
    } else {
        ierr = recv_rows(c, Kloc, &bl, row0);
    }
    ierr = hk_comm_agree(c, ierr);
    if (ierr) {
        hk_bcsr_free(Kloc);
        free(bl);
        free(old);
        return ierr;
    }
    if (bloc)
        *bloc = bl;
    else
        free(bl);
    if (old_of)
        *old_of = old;
    else
        free(old);
    return 0;
}
