// The device transport of distributed runs (the dcomm_* ops of hk_impl.h; solver/dist/dcomm.c):
// one NCCL communicator per distributed layout. It is made non-blocking, so that no call here
// waits without end for a process that has failed: each returns, or fails on its own after the
// layout's timeout. The halo's sends and receives and the gathers of the sums run on a stream of
// their own, ordered against the backend's stream by events, so that an exchange overlaps the
// interior rows' SpMV queued after it; all of one communicator's operations are on that stream,
// in the order every process issues them. NVLink multicast is never asked for (NCCL_NVLS_ENABLE
// is the user's, and off on shared hosts).
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_impl.cuh"

#ifdef HOOKE_HAVE_NCCL
#include <nccl.h>

static_assert(sizeof(ncclUniqueId) == HK_DCOMM_ID_BYTES, "HK_DCOMM_ID_BYTES is NCCL's id size");

#define DCOMM_CHUNK 1024 /* values summed by one gather at most */

struct cu_dcomm {
    ncclComm_t comm;
    int nranks, rank;
    double timeout;          /* seconds a call may wait for the communicator */
    cudaStream_t side;       /* the communicator's stream */
    cudaEvent_t queued;      /* the backend stream's work so far */
    cudaEvent_t halo_done;   /* the last exchange's receives landed, its sends read */
    cudaEvent_t gather_done; /* the last gather of a sum */
    double *gather;          /* DCOMM_CHUNK x nranks: every process's values of one sum */
};

static int nccl_fail(const cu_dcomm *c, ncclResult_t r, const char *what, const char *file,
                     int line)
{
    const char *last = c && c->comm ? ncclGetLastError(c->comm) : NULL;
    return hk_error_set(HK_ERR_DEVICE, file, line, "NCCL on process %d: %s failed: %s%s%s",
                        c ? c->rank : -1, what, ncclGetErrorString(r), last && *last ? ": " : "",
                        last ? last : "");
}

/* One turn of a wait for NCCL's own threads: a yield first, then (a wait of more than a
 * millisecond: a communicator's start, made on a thread of its own while the caller's threads
 * mesh) a short sleep, so that the wait does not hold a core. */
static void wait_turn(double since)
{
    if (hk_time() - since < 1e-3) {
        sched_yield();
        return;
    }
    const struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
}

/* The communicator's state once it leaves ncclInProgress (a non-blocking communicator's calls
 * return while their work goes on), at most c->timeout seconds later. */
static int settle(cu_dcomm *c, ncclResult_t r, const char *what, const char *file, int line)
{
    const double t0 = hk_time();
    while (r == ncclInProgress) {
        if (hk_time() - t0 > c->timeout)
            return hk_error_set(HK_ERR_DEVICE, file, line,
                                "NCCL on process %d: %s did not complete in %.0f s (a process "
                                "that failed or never joined, or a link down)",
                                c->rank, what, c->timeout);
        ncclResult_t q = ncclCommGetAsyncError(c->comm, &r);
        if (q != ncclSuccess) r = q;
        if (r == ncclInProgress) wait_turn(t0); /* NCCL's own threads do the work */
    }
    return r == ncclSuccess ? 0 : nccl_fail(c, r, what, file, line);
}
#define SETTLE(c, call) HK_CALL(settle(c, (call), #call, __FILE__, __LINE__))

int hk_cu_dcomm_id(void *id)
{
    ncclUniqueId u;
    ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess) return nccl_fail(NULL, r, "ncclGetUniqueId", __FILE__, __LINE__);
    memcpy(id, &u, sizeof u);
    return 0;
}

void hk_cu_dcomm_destroy(void *dc, int abort)
{
    cu_dcomm *c = (cu_dcomm *)dc;
    if (!c) return;
    if (c->comm) {
        int failed = abort;
        if (!failed && c->side) failed = cudaStreamSynchronize(c->side) != cudaSuccess;
        /* flushed and ended with the others; a communicator that cannot be is aborted */
        if (!failed)
            failed =
                settle(c, ncclCommFinalize(c->comm), "ncclCommFinalize", __FILE__, __LINE__) != 0;
        if (failed)
            ncclCommAbort(c->comm);
        else
            ncclCommDestroy(c->comm);
    }
    if (c->queued) cudaEventDestroy(c->queued);
    if (c->halo_done) cudaEventDestroy(c->halo_done);
    if (c->gather_done) cudaEventDestroy(c->gather_done);
    if (c->side) cudaStreamDestroy(c->side);
    cudaFree(c->gather);
    free(c);
}

int hk_cu_dcomm_create(const void *id, int nranks, int rank, double timeout, void **out)
{
    int ierr = 0;
    *out = NULL;
    HK_CALL(hk_cu_init()); /* the device of this process (its local rank) first */
    cu_dcomm *c = (cu_dcomm *)calloc(1, sizeof *c);
    HK_CHECK(c, HK_ERR_MEMORY, "out of host memory for a NCCL communicator");
    c->nranks = nranks;
    c->rank = rank;
    c->timeout = timeout;
    {
        ncclUniqueId u;
        memcpy(&u, id, sizeof u);
        ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
        cfg.blocking = 0;
        ncclResult_t r = ncclCommInitRankConfig(&c->comm, nranks, u, rank, &cfg);
        if (r != ncclSuccess && r != ncclInProgress) {
            ierr = nccl_fail(c, r, "ncclCommInitRankConfig", __FILE__, __LINE__);
            goto fail;
        }
        if ((ierr = settle(c, r, "ncclCommInitRankConfig", __FILE__, __LINE__))) goto fail;
    }
    HK_CU_TRY(cudaStreamCreateWithFlags(&c->side, cudaStreamNonBlocking));
    HK_CU_TRY(cudaEventCreateWithFlags(&c->queued, cudaEventDisableTiming));
    HK_CU_TRY(cudaEventCreateWithFlags(&c->halo_done, cudaEventDisableTiming));
    HK_CU_TRY(cudaEventCreateWithFlags(&c->gather_done, cudaEventDisableTiming));
    if ((ierr = hk_cu_malloc((void **)&c->gather, (size_t)DCOMM_CHUNK * nranks * sizeof(double))))
        goto fail;
    *out = c;
    return 0;
fail:
    hk_cu_dcomm_destroy(c, 1);
    return ierr;
}

/* The communicator's stream after the backend stream's work so far. */
static int side_after_main(cu_dcomm *c)
{
    HK_CU(cudaEventRecord(c->queued, hk_cu.stream));
    HK_CU(cudaStreamWaitEvent(c->side, c->queued, 0));
    return 0;
}

int hk_cu_dcomm_exchange(void *dc, int nrecv, const int *recv_rank, const int64_t *recv_off,
                         void *recv, int nsend, const int *send_rank, const int64_t *send_off,
                         const void *send, size_t bytes)
{
    cu_dcomm *c = (cu_dcomm *)dc;
    HK_CALL(side_after_main(c));
    if (nrecv + nsend > 0) {
        ncclResult_t r = ncclGroupStart();
        for (int j = 0; j < nrecv && r == ncclSuccess; j++)
            if (recv_off[j + 1] > recv_off[j])
                r = ncclRecv((char *)recv + (size_t)recv_off[j] * bytes,
                             (size_t)(recv_off[j + 1] - recv_off[j]) * bytes, ncclUint8,
                             recv_rank[j], c->comm, c->side);
        for (int j = 0; j < nsend && r == ncclSuccess; j++)
            if (send_off[j + 1] > send_off[j])
                r = ncclSend((const char *)send + (size_t)send_off[j] * bytes,
                             (size_t)(send_off[j + 1] - send_off[j]) * bytes, ncclUint8,
                             send_rank[j], c->comm, c->side);
        const ncclResult_t e = ncclGroupEnd();
        if (r != ncclSuccess) return nccl_fail(c, r, "ncclSend/ncclRecv", __FILE__, __LINE__);
        SETTLE(c, e);
    }
    HK_CU(cudaEventRecord(c->halo_done, c->side));
    return 0;
}

int hk_cu_dcomm_wait(void *dc)
{
    cu_dcomm *c = (cu_dcomm *)dc;
    HK_CU(cudaStreamWaitEvent(hk_cu.stream, c->halo_done, 0));
    return 0;
}

/* v[i] = the processes' values of entry i added in rank order from 0 (one thread an entry):
 * every process adds the same numbers in the same order. */
__global__ void k_rank_sum(int n, int nranks, const double *__restrict__ all,
                           double *__restrict__ v)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double s = 0;
    for (int r = 0; r < nranks; r++)
        s += all[(size_t)r * n + i];
    v[i] = s;
}

int hk_cu_dcomm_sum(void *dc, double *v, int n)
{
    cu_dcomm *c = (cu_dcomm *)dc;
    for (int i0 = 0; i0 < n; i0 += DCOMM_CHUNK) {
        const int m = n - i0 < DCOMM_CHUNK ? n - i0 : DCOMM_CHUNK;
        /* the gather buffer's last reader (the previous sum) is on the backend's stream */
        HK_CALL(side_after_main(c));
        SETTLE(c, ncclAllGather(v + i0, c->gather, (size_t)m, ncclDouble, c->comm, c->side));
        HK_CU(cudaEventRecord(c->gather_done, c->side));
        HK_CU(cudaStreamWaitEvent(hk_cu.stream, c->gather_done, 0));
        k_rank_sum<<<(m + HK_CU_BLOCK - 1) / HK_CU_BLOCK, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            m, c->nranks, c->gather, v + i0);
        HK_CU_LAUNCHED();
    }
    return 0;
}

/* The links made ahead (hk_impl.h, dcomm_connect): one value to and from every other process
 * (the ranks either side only, above 16) in one group, then one gather in place, on the
 * communicator's stream, waited for there without the host's stream; the values are
 * whatever the gather buffer holds (never read). */
int hk_cu_dcomm_connect(void *dc)
{
    cu_dcomm *c = (cu_dcomm *)dc;
    const int P = c->nranks, me = c->rank;
    if (P < 2) return 0;
    double *send = c->gather, *recv = c->gather + P; /* DCOMM_CHUNK x P doubles: room */
    HK_CALL(side_after_main(c));
    ncclResult_t r = ncclGroupStart();
    for (int q = 0; q < P && r == ncclSuccess; q++) {
        const int near = q == (me + 1) % P || q == (me + P - 1) % P;
        if (q == me || (P > 16 && !near)) continue;
        r = ncclRecv(recv + q, 1, ncclDouble, q, c->comm, c->side);
        if (r == ncclSuccess) r = ncclSend(send + q, 1, ncclDouble, q, c->comm, c->side);
    }
    const ncclResult_t e = ncclGroupEnd();
    if (r != ncclSuccess) return nccl_fail(c, r, "ncclSend/ncclRecv", __FILE__, __LINE__);
    SETTLE(c, e);
    SETTLE(c, ncclAllGather(c->gather + me, c->gather, 1, ncclDouble, c->comm, c->side));
    HK_CU(cudaEventRecord(c->gather_done, c->side));
    const double t0 = hk_time();
    for (;;) {
        const cudaError_t q = cudaEventQuery(c->gather_done);
        if (q == cudaSuccess) return 0;
        if (q != cudaErrorNotReady) return hk_cu_fail(q, "cudaEventQuery", __FILE__, __LINE__);
        ncclResult_t a = ncclSuccess;
        if (ncclCommGetAsyncError(c->comm, &a) == ncclSuccess && a != ncclSuccess &&
            a != ncclInProgress)
            return nccl_fail(c, a, "connecting the processes", __FILE__, __LINE__);
        if (hk_time() - t0 > c->timeout)
            return hk_error_set(HK_ERR_DEVICE, __FILE__, __LINE__,
                                "NCCL on process %d: connecting the processes did not complete "
                                "in %.0f s (a process that failed or never joined, or a link "
                                "down)",
                                me, c->timeout);
        wait_turn(t0);
    }
}
#endif
