/* The device transport of a distributed layout (dist.comm=nccl, docs/parallel.md): the halo
 * exchange and the sums over the processes between the devices' memories, through the
 * backend's dcomm_* ops (NCCL on cuda, cuda/cuda_nccl.cu), queued on its stream.
 *
 * Sums: every process's partial sums are gathered on every device and added in rank order by
 * the same kernel, so every process gets the same bits, run after run (as hk_comm_sum on the
 * host; no reliance on the order in which a library's all-reduce adds).
 *
 * Failures: the set-up agrees on every failure as the rest of the layer does (a process that
 * cannot join fails the others' creation after the timeout, and all return its sentence). An
 * exchange or a sum that fails afterwards is one process's alone, while the others' devices
 * wait for its messages: it ends the run with its sentence (hk_comm_abort), as MPI ends a run
 * on an MPI error, instead of leaving them waiting. */
#include <stdlib.h>

#include "dist_impl.h"

const char *const hk_dist_comm_names[] = {"auto", "mpi", "nccl", NULL};

void hk_dcomm_destroy(hk_dcomm *t)
{
    if (!t) return;
    if (t->dc) t->be->dcomm_destroy(t->dc, 0);
    if (t->scratch) t->be->scal_free(t->scratch);
    free(t);
}

int hk_dcomm_create(const hk_comm *c, const hk_backend_ops *be, double timeout, hk_dcomm **out)
{
    hk_dcomm *t = NULL;
    char id[HK_DCOMM_ID_BYTES] = {0};
    int ierr = 0;
    *out = NULL;
    HK_TRY(hk_comm_agree(c, be->dcomm_create
                                ? 0
                                : hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                                               "backend %s has no device transport", be->name)));
    ierr = hk_calloc(1, sizeof *t, &t);
    if (!ierr) {
        t->be = be;
        t->comm = c;
        ierr = be->scal_alloc(&t->scratch, HK_DCOMM_SCRATCH);
    }
    if (!ierr && hk_comm_rank(c) == 0) ierr = be->dcomm_id(id);
    HK_TRY(hk_comm_agree(c, ierr));
    HK_TRY(hk_comm_bcast(c, id, sizeof id, 0));
    {
        /* a process that waited out the timeout for another names only the wait: the cause is
         * the sentence of a process that failed without waiting, agreed first */
        const double t0 = hk_time();
        ierr = be->dcomm_create(id, hk_comm_size(c), hk_comm_rank(c), timeout, &t->dc);
        const int waited = ierr && hk_time() - t0 >= timeout;
        HK_TRY(hk_comm_agree(c, waited ? 0 : ierr));
        HK_TRY(hk_comm_agree(c, ierr));
    }
    *out = t;
    return 0;
fail:
    if (t && t->dc) t->be->dcomm_destroy(t->dc, 1); /* the others have none: nothing to flush */
    if (t) t->dc = NULL;
    hk_dcomm_destroy(t);
    return ierr;
}

_Noreturn void hk_dcomm_fatal(hk_dcomm *t, int ierr)
{
    /* this process's pending operations end now; the others end with mpirun */
    if (t && t->dc) t->be->dcomm_destroy(t->dc, 1);
    hk_comm_abort(ierr ? ierr : HK_ERR_INTERNAL);
}

void hk_dcomm_exchange(hk_dcomm *t, const hk_halo *h, const void *send, void *recv, size_t bytes)
{
    hk_dcomm_exchange_v(t, h->nrecv, h->recv_rank, h->recv_off, recv, h->nsend, h->send_rank,
                        h->send_off, send, bytes);
}

void hk_dcomm_exchange_v(hk_dcomm *t, int nrecv, const int *recv_rank, const int64_t *recv_off,
                         void *recv, int nsend, const int *send_rank, const int64_t *send_off,
                         const void *send, size_t bytes)
{
    const int ierr = t->be->dcomm_exchange(t->dc, nrecv, recv_rank, recv_off, recv, nsend,
                                           send_rank, send_off, send, bytes);
    if (ierr) hk_dcomm_fatal(t, ierr);
}

void hk_dcomm_wait(hk_dcomm *t)
{
    const int ierr = t->be->dcomm_wait(t->dc);
    if (ierr) hk_dcomm_fatal(t, ierr);
}

void hk_dcomm_sum(hk_dcomm *t, double *S, int n)
{
    const int ierr = n > 0 ? t->be->dcomm_sum(t->dc, S, n) : 0;
    if (ierr) hk_dcomm_fatal(t, ierr);
}

void hk_dcomm_sum_host(hk_dcomm *t, double *v, int n)
{
    const hk_backend_ops *be = t->be;
    for (int i0 = 0; i0 < n; i0 += HK_DCOMM_SCRATCH) {
        const int m = n - i0 < HK_DCOMM_SCRATCH ? n - i0 : HK_DCOMM_SCRATCH;
        int ierr = be->scal_set(t->scratch, 0, m, v + i0);
        if (!ierr) ierr = be->dcomm_sum(t->dc, t->scratch, m);
        if (!ierr) ierr = be->scal_get(t->scratch, 0, m, v + i0);
        if (ierr) hk_dcomm_fatal(t, ierr);
    }
}

void hk_dcomm_dots(hk_dcomm *t, int k, hk_vec *const *X, const hk_vec *y, double *r)
{
    const hk_backend_ops *be = t->be;
    for (int j0 = 0; j0 < k; j0 += HK_DCOMM_SCRATCH) {
        const int m = k - j0 < HK_DCOMM_SCRATCH ? k - j0 : HK_DCOMM_SCRATCH;
        int ierr = be->vec_mdot_s(m, X + j0, y, t->scratch);
        if (!ierr) ierr = be->dcomm_sum(t->dc, t->scratch, m);
        if (!ierr) ierr = be->scal_get(t->scratch, 0, m, r + j0);
        if (ierr) hk_dcomm_fatal(t, ierr);
    }
}
