/* hk_halo: the ghost exchange of a distributed array. Each process owns a contiguous range of
 * global ids; the plan says, per neighbour, which owned entries go there and where the entries
 * that come from it land. Set up once (two all-to-all rounds: counts, then ids); every exchange
 * then posts its receives and sends (hk_halo_start) and completes them (hk_halo_wait), so that
 * the caller computes in between. The transport here is MPI on host memory. */
#include <stdlib.h>
#include <string.h>

#include "dist_impl.h"

enum { HALO_TAG_IDS = 7101, HALO_TAG_DATA = 7102 };

typedef struct {
    int64_t id, pos;
} id_pos;

static int cmp_id_pos(const void *a, const void *b)
{
    const int64_t x = ((const id_pos *)a)->id, y = ((const id_pos *)b)->id;
    return (x > y) - (x < y);
}

int hk_halo_owner(const int64_t *starts, int size, int64_t g)
{
    int lo = 0, hi = size - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (starts[mid] <= g)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int hk_halo_create(const hk_comm *c, int64_t row0, int64_t nown, int64_t nghost,
                   const int64_t *ghost, hk_halo **out)
{
    int ierr = 0;
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    hk_halo *h = NULL;
    int64_t *range = NULL, *starts = NULL, *want = NULL, *gives = NULL;
    id_pos *ip = NULL;
    int *owner = NULL;
    *out = NULL;
    HK_TRY(hk_calloc(1, sizeof *h, &h));
    h->comm = c;
    h->row0 = row0;
    h->nown = nown;
    h->nghost = nghost;
    /* the ranges: contiguous, in rank order, from 0 */
    HK_TRY(hk_malloc((size_t)2 * P * sizeof *range, &range));
    HK_TRY(hk_malloc((size_t)(P + 1) * sizeof *starts, &starts));
    int64_t mine[2] = {row0, nown};
    HK_TRY(hk_comm_allgather(c, mine, sizeof mine, range));
    int bad = -1;
    starts[0] = 0;
    for (int r = 0; r < P; r++) {
        if (range[2 * r] != starts[r] || range[2 * r + 1] < 0) bad = bad < 0 ? r : bad;
        starts[r + 1] = starts[r] + range[2 * r + 1];
    }
    HK_TRY_CHECK(bad < 0, HK_ERR_ARG,
                 "distributed rows: process %d owns rows from %lld, but the processes before it "
                 "end at %lld; each process must own the next contiguous range of global rows",
                 bad, bad >= 0 ? (long long)range[2 * bad] : 0LL,
                 bad >= 0 ? (long long)starts[bad] : 0LL);
    /* the ghosts sorted (so one owner's are consecutive), with the caller's positions. From
     * here on a failure of one process is agreed before the next exchange, so that no process
     * waits for one that has left (a process that fails alone must meet no collective). */
    ierr = hk_malloc((size_t)(nghost + 1) * sizeof *ip, &ip);
    if (!ierr) ierr = hk_malloc((size_t)(nghost + 1) * sizeof *h->ghost, &h->ghost);
    if (!ierr) ierr = hk_malloc((size_t)(nghost + 1) * sizeof *h->order, &h->order);
    if (!ierr) ierr = hk_malloc((size_t)(nghost + 1) * sizeof *owner, &owner);
    if (!ierr) ierr = hk_calloc((size_t)P, sizeof *want, &want);
    if (!ierr) ierr = hk_calloc((size_t)P, sizeof *gives, &gives);
    for (int64_t i = 0; i < nghost && !ierr; i++)
        ip[i] = (id_pos){ghost[i], i};
    int ascending = 1; /* a caller's ghosts in global order (a part's) need no sort */
    for (int64_t i = 1; i < nghost && !ierr && ascending; i++)
        ascending = ghost[i] > ghost[i - 1];
    if (!ierr && !ascending) qsort(ip, (size_t)nghost, sizeof *ip, cmp_id_pos);
    for (int64_t k = 0; k < nghost && !ierr; k++) {
        const int64_t g = ip[k].id;
        if (!(g >= 0 && g < starts[P] && (g < row0 || g >= row0 + nown) &&
              (k == 0 || g != ip[k - 1].id))) {
            ierr =
                hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                             "distributed rows: process %d asks for row %lld, which is %s; "
                             "ghosts are distinct rows of other processes, 0 .. %lld",
                             me, (long long)g,
                             g >= row0 && g < row0 + nown ? "its own" : "out of range or repeated",
                             (long long)starts[P] - 1);
            break;
        }
        h->ghost[k] = g;
        h->order[ip[k].pos] = k;
        owner[k] = hk_halo_owner(starts, P, g);
    }
    HK_TRY(hk_comm_agree(c, ierr)); /* every process stops together, or none */
    /* receives: one per owner, consecutive ghosts */
    for (int64_t k = 0; k < nghost; k++)
        want[owner[k]]++;
    HK_TRY(hk_comm_alltoall_i64(c, want, gives));
    for (int r = 0; r < P; r++) {
        h->nrecv += want[r] > 0;
        h->nsend += gives[r] > 0;
    }
    int64_t *ids = NULL;
    ierr = hk_malloc((size_t)(h->nrecv + 1) * sizeof *h->recv_rank, &h->recv_rank);
    if (!ierr) ierr = hk_malloc((size_t)(h->nrecv + 1) * sizeof *h->recv_off, &h->recv_off);
    if (!ierr) ierr = hk_malloc((size_t)(h->nsend + 1) * sizeof *h->send_rank, &h->send_rank);
    if (!ierr) ierr = hk_malloc((size_t)(h->nsend + 1) * sizeof *h->send_off, &h->send_off);
    if (!ierr) ierr = hk_comm_reqs_create(h->nrecv + h->nsend, &h->reqs);
    int64_t nsendt = 0;
    for (int r = 0; r < P; r++)
        nsendt += gives[r];
    if (!ierr) ierr = hk_malloc((size_t)(nsendt + 1) * sizeof *ids, &ids);
    if (!ierr) ierr = hk_malloc((size_t)(nsendt + 1) * sizeof *h->send_idx, &h->send_idx);
    if ((ierr = hk_comm_agree(c, ierr))) {
        free(ids);
        goto fail;
    }
    int k = 0;
    h->recv_off[0] = 0;
    for (int r = 0; r < P; r++)
        if (want[r] > 0) {
            h->recv_rank[k] = r;
            h->recv_off[k + 1] = h->recv_off[k] + want[r];
            k++;
        }
    k = 0;
    h->send_off[0] = 0;
    for (int r = 0; r < P; r++)
        if (gives[r] > 0) {
            h->send_rank[k] = r;
            h->send_off[k + 1] = h->send_off[k] + gives[r];
            k++;
        }
    /* the ids each neighbour wants, as owned local indices */
    for (int j = 0; j < h->nsend && !ierr; j++)
        ierr = hk_comm_irecv(c, ids + h->send_off[j],
                             (size_t)(h->send_off[j + 1] - h->send_off[j]) * sizeof *ids,
                             h->send_rank[j], HALO_TAG_IDS, h->reqs, j);
    for (int j = 0; j < h->nrecv && !ierr; j++)
        ierr = hk_comm_isend(c, h->ghost + h->recv_off[j],
                             (size_t)(h->recv_off[j + 1] - h->recv_off[j]) * sizeof *h->ghost,
                             h->recv_rank[j], HALO_TAG_IDS, h->reqs, h->nsend + j);
    if (!ierr) ierr = hk_comm_waitall(h->reqs);
    for (int64_t j = 0; !ierr && j < nsendt; j++) {
        if (ids[j] < row0 || ids[j] >= row0 + nown)
            ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                                "halo: process %d was asked for row %lld, which it does not own",
                                me, (long long)ids[j]);
        else
            h->send_idx[j] = (int32_t)(ids[j] - row0);
    }
    free(ids);
    if ((ierr = hk_comm_agree(c, ierr))) goto fail;
    *out = h;
    h = NULL;
fail:
    free(range);
    free(starts);
    free(want);
    free(gives);
    free(ip);
    free(owner);
    hk_halo_destroy(h);
    return ierr;
}

void hk_halo_destroy(hk_halo *h)
{
    if (!h) return;
    free(h->ghost);
    free(h->order);
    free(h->recv_rank);
    free(h->recv_off);
    free(h->send_rank);
    free(h->send_off);
    free(h->send_idx);
    hk_comm_reqs_destroy(h->reqs);
    free(h->host_send);
    free(h->host_recv);
    free(h);
}

int hk_halo_start(hk_halo *h, const void *send, void *recv, size_t bytes)
{
    /* a fresh request array per round: the sends are posted after the receives */
    for (int j = 0; j < h->nrecv; j++)
        HK_CALL(hk_comm_irecv(h->comm, (char *)recv + (size_t)h->recv_off[j] * bytes,
                              (size_t)(h->recv_off[j + 1] - h->recv_off[j]) * bytes,
                              h->recv_rank[j], HALO_TAG_DATA, h->reqs, j));
    for (int j = 0; j < h->nsend; j++)
        HK_CALL(hk_comm_isend(h->comm, (const char *)send + (size_t)h->send_off[j] * bytes,
                              (size_t)(h->send_off[j + 1] - h->send_off[j]) * bytes,
                              h->send_rank[j], HALO_TAG_DATA, h->reqs, h->nrecv + j));
    return 0;
}

int hk_halo_wait(hk_halo *h)
{
    return hk_comm_waitall(h->reqs);
}

/* The send and receive buffers for width values an entry: every process grows its buffers at
 * the same call, agreed before the exchange. */
static int halo_buffers(hk_halo *h, int width)
{
    if (width <= h->host_width) return 0;
    const int64_t ns = h->send_off[h->nsend];
    free(h->host_send);
    free(h->host_recv);
    h->host_send = h->host_recv = NULL;
    h->host_width = 0;
    int ierr = hk_malloc((size_t)(ns + 1) * width * sizeof(double), &h->host_send);
    if (!ierr) ierr = hk_malloc((size_t)(h->nghost + 1) * width * sizeof(double), &h->host_recv);
    HK_CALL(hk_comm_agree(h->comm, ierr));
    h->host_width = width;
    return 0;
}

/* Threads for a copy of n entries of width values: one below 64k values (a few boundary
 * entries need none). */
static int halo_threads_wanted(int64_t n, int width)
{
    return n * width > ((int64_t)1 << 16);
}

/* hk_halo_exchange's callbacks: rows of width values of two arrays */
typedef struct halo_arrays {
    const double *owned;
    double *ghost;
    int width;
} halo_arrays;

static void pack_row(void *ctx, int64_t i, double *v)
{
    const halo_arrays *x = ctx;
    memcpy(v, x->owned + (size_t)i * x->width, (size_t)x->width * sizeof *v);
}

static void unpack_row(void *ctx, int64_t k, const double *v)
{
    const halo_arrays *x = ctx;
    memcpy(x->ghost + (size_t)k * x->width, v, (size_t)x->width * sizeof *v);
}

int hk_halo_exchange(hk_halo *h, const double *owned, int width, double *ghost_vals)
{
    halo_arrays x = {owned, ghost_vals, width};
    return hk_halo_exchange_with(h, width, pack_row, unpack_row, &x);
}

int hk_halo_exchange_with(hk_halo *h, int width, hk_halo_pack_fn pack, hk_halo_unpack_fn unpack,
                          void *ctx)
{
    HK_CALL(halo_buffers(h, width));
    const int64_t ns = h->send_off[h->nsend], ng = h->nghost;
    double *send = h->host_send;
    const double *recv = h->host_recv;
#pragma omp parallel for schedule(static) if (halo_threads_wanted(ns, width))
    for (int64_t j = 0; j < ns; j++)
        pack(ctx, h->send_idx[j], send + (size_t)j * width);
    HK_CALL(hk_halo_start(h, send, h->host_recv, (size_t)width * sizeof(double)));
    HK_CALL(hk_halo_wait(h));
#pragma omp parallel for schedule(static) if (halo_threads_wanted(ng, width))
    for (int64_t i = 0; i < ng; i++)
        unpack(ctx, i, recv + (size_t)h->order[i] * width);
    return 0;
}
