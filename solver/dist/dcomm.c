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
 * on an MPI error, instead of leaving them waiting.
 *
 * The run's communicator (hk_dist_comm_prepare, _start, _end): made ahead of the solvers, on
 * a thread of the caller's while its other threads mesh, its links made then too; every
 * layout of dist.comm=nccl on the same processes and backend borrows it instead of making its
 * own (NCCL's start took 0.6 s and its first messages 1.4 s of a 14.6M-DOF-a-GPU set-up on
 * four H200s). Its failure is agreed where a layout takes it, as a creation's. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dist_impl.h"

const char *const hk_dist_comm_names[] = {"auto", "mpi", "nccl", NULL};

void hk_dcomm_destroy(hk_dcomm *t)
{
    if (!t || t->run) return;
    if (t->dc) t->be->dcomm_destroy(t->dc, 0);
    if (t->scratch) t->be->scal_free(t->scratch);
    free(t);
}

/* ---- the run's communicator ----------------------------------------------------------- */

enum { RUN_NONE, RUN_ID, RUN_STARTING, RUN_DONE };
static struct {
    pthread_mutex_t lock;
    pthread_cond_t done; /* state became RUN_DONE */
    int state;
    const hk_comm *comm;
    const hk_backend_ops *be;
    double timeout; /* seconds a process waits for the others */
    char id[HK_DCOMM_ID_BYTES];
    hk_dcomm *t;      /* RUN_DONE without a failure */
    int ierr, waited; /* the failure; waited: this process waited out the timeout for another */
    char msg[1024];
} run = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER, .state = RUN_NONE};

/* The backend table of a name, without starting it (the device starts on its own thread). */
static const hk_backend_ops *backend_named(const char *name)
{
#ifdef HOOKE_HAVE_CUDA
    if (!name || !strcmp(name, "auto") || !strcmp(name, "cuda")) return &hk_backend_cuda;
#else
    (void)name;
#endif
    return NULL;
}

int hk_dist_comm_prepare(const hk_comm *c, const char *backend)
{
    const hk_backend_ops *be = backend_named(backend);
    return be ? hk_dcomm_prepare(c, be, HK_DCOMM_TIMEOUT) : 0;
}

int hk_dcomm_prepare(const hk_comm *c, const hk_backend_ops *be, double timeout)
{
    struct {
        int ok;
        char id[HK_DCOMM_ID_BYTES];
    } m = {0, {0}};
    if (!c || hk_comm_size(c) < 2 || !be->dcomm_id || !be->dcomm_create) return 0;
    pthread_mutex_lock(&run.lock);
    const int busy = run.state != RUN_NONE;
    pthread_mutex_unlock(&run.lock);
    if (busy) return 0; /* one a run (every process alike: the same calls) */
    /* a failure to make the id leaves every process without (the layouts make their own, and
     * report it there) */
    if (hk_comm_rank(c) == 0) {
        m.ok = be->dcomm_id(m.id) == 0;
        if (!m.ok) hk_error_clear();
    }
    HK_CALL(hk_comm_bcast(c, &m, sizeof m, 0));
    if (!m.ok) return 0;
    pthread_mutex_lock(&run.lock);
    run.comm = c;
    run.be = be;
    run.timeout = timeout;
    memcpy(run.id, m.id, sizeof run.id);
    run.t = NULL;
    run.ierr = run.waited = 0;
    run.msg[0] = 0;
    run.state = RUN_ID;
    pthread_mutex_unlock(&run.lock);
    return 0;
}

/* The run's communicator made and linked on this thread (its device first: the current device
 * is per thread), its outcome kept for the layout that takes it. */
static void run_start(void)
{
    const hk_backend_ops *be = run.be;
    const hk_comm *c = run.comm;
    const double timeout = run.timeout, t0 = hk_time();
    hk_dcomm *t = NULL;
    int ierr = be->probe ? be->probe() : 0;
    if (!ierr) ierr = hk_calloc(1, sizeof *t, &t);
    if (!ierr) {
        t->be = be;
        t->comm = c;
        t->run = 1;
        ierr = be->scal_alloc(&t->scratch, HK_DCOMM_SCRATCH);
    }
    if (!ierr) ierr = be->dcomm_create(run.id, hk_comm_size(c), hk_comm_rank(c), timeout, &t->dc);
    double t1 = hk_time();
    int waited = ierr && t1 - t0 >= timeout;
    if (!ierr && be->dcomm_connect) {
        ierr = be->dcomm_connect(t->dc);
        waited = ierr && hk_time() - t1 >= timeout;
    }
    pthread_mutex_lock(&run.lock);
    if (ierr) {
        snprintf(run.msg, sizeof run.msg, "%s", hk_error_message());
        hk_error_clear();
        if (t) {
            if (t->dc) be->dcomm_destroy(t->dc, 1); /* the others may have none */
            if (t->scratch) be->scal_free(t->scratch);
            free(t);
        }
        t = NULL;
    }
    run.t = t;
    run.ierr = ierr;
    run.waited = waited;
    run.state = RUN_DONE;
    pthread_cond_broadcast(&run.done);
    pthread_mutex_unlock(&run.lock);
}

void hk_dist_comm_start(void)
{
    pthread_mutex_lock(&run.lock);
    const int mine = run.state == RUN_ID;
    if (mine) run.state = RUN_STARTING;
    pthread_mutex_unlock(&run.lock);
    if (mine) run_start();
}

/* The run's communicator, waited for (or started here, where nobody has started it). */
static void run_wait(void)
{
    hk_dist_comm_start();
    pthread_mutex_lock(&run.lock);
    while (run.state == RUN_STARTING)
        pthread_cond_wait(&run.done, &run.lock);
    pthread_mutex_unlock(&run.lock);
}

void hk_dist_comm_end(void)
{
    pthread_mutex_lock(&run.lock);
    while (run.state == RUN_STARTING) /* (one never started is not started now) */
        pthread_cond_wait(&run.done, &run.lock);
    hk_dcomm *t = run.t;
    run.t = NULL;
    run.state = RUN_NONE;
    pthread_mutex_unlock(&run.lock);
    if (t) {
        t->run = 0;
        hk_dcomm_destroy(t);
    }
}

/* The run's communicator for a layout on c and be: agreed by every process that all take it
 * (*taken), its failure agreed as a creation's. */
static int take_run(const hk_comm *c, const hk_backend_ops *be, hk_dcomm **out, int *taken)
{
    pthread_mutex_lock(&run.lock);
    int64_t mine = run.state != RUN_NONE && run.comm == c && run.be == be;
    pthread_mutex_unlock(&run.lock);
    *taken = 0;
    HK_CALL(hk_comm_min_i64(c, &mine, 1));
    if (!mine) return 0;
    *taken = 1;
    run_wait();
    const int mine_err = run.ierr;
    if (mine_err) hk_error_set(mine_err, __FILE__, __LINE__, "%s", run.msg);
    /* a process that waited out the timeout names only the wait: the cause is the sentence of
     * a process that failed without waiting, agreed first */
    int ierr = hk_comm_agree(c, run.waited ? 0 : mine_err);
    if (!ierr && mine_err) hk_error_set(mine_err, __FILE__, __LINE__, "%s", run.msg);
    if (!ierr) ierr = hk_comm_agree(c, mine_err);
    if (ierr && run.t) {
        /* made here but not by every process: ended at once (nothing to flush), and every
         * later layout fails with the agreed sentence */
        pthread_mutex_lock(&run.lock);
        hk_dcomm *t = run.t;
        run.t = NULL;
        run.ierr = ierr;
        run.waited = 0;
        snprintf(run.msg, sizeof run.msg, "%s", hk_error_message());
        pthread_mutex_unlock(&run.lock);
        t->be->dcomm_destroy(t->dc, 1);
        t->dc = NULL;
        t->run = 0;
        hk_dcomm_destroy(t);
    }
    if (ierr) return ierr;
    *out = run.t;
    return 0;
}

int hk_dcomm_create(const hk_comm *c, const hk_backend_ops *be, double timeout, hk_dcomm **out)
{
    hk_dcomm *t = NULL;
    char id[HK_DCOMM_ID_BYTES] = {0};
    int ierr = 0, taken = 0;
    *out = NULL;
    HK_TRY(hk_comm_agree(c, be->dcomm_create
                                ? 0
                                : hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                                               "backend %s has no device transport", be->name)));
    /* the run's, made ahead, where there is one for these processes and this backend */
    HK_CALL(take_run(c, be, out, &taken));
    if (taken) return 0;
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
