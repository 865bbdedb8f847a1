/* hk_comm: the processes of one run. MPI_COMM_WORLD (a duplicate) when Hooke was built with MPI
 * and mpirun started the process, else this process alone. The only file that includes mpi.h:
 * everything above it sees sizes, ranks and the collectives of include/hooke/solver.h. */
#include <stdlib.h>
#include <string.h>

#include "dist_impl.h"

#ifdef HOOKE_HAVE_MPI
#include <mpi.h>
#endif

struct hk_comm {
    int rank, size;
#ifdef HOOKE_HAVE_MPI
    MPI_Comm mpi;
#endif
};

static hk_comm world = {.rank = 0, .size = 1};
static int world_local = 1; /* the world's processes on this machine */
static int mpi_started;
static int agreed_failure; /* hk_comm_agree returned a failure: every process knows it */

/* Processes mpirun started (0: not started by mpirun). Open MPI, MPICH/Hydra, MVAPICH. */
static int env_int(const char *const *names, int fallback)
{
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return atoi(v);
    }
    return fallback;
}

static int env_size(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
                                        NULL};
    return env_int(names, 0);
}

static int env_rank(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK",
                                        NULL};
    return env_int(names, 0);
}

int hk_comm_local_rank(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                        "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", NULL};
    return env_int(names, 0);
}

int hk_comm_world_init(int *argc, char ***argv)
{
    const int n = env_size();
    if (n <= 0) return 0; /* not started by mpirun: one process, MPI untouched */
#ifdef HOOKE_HAVE_MPI
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return hk_error_set(HK_ERR_DEVICE, __FILE__, __LINE__,
                            "MPI_Init failed; check the MPI installation (mpirun --version) and "
                            "start hooke with the mpirun of the MPI it was built with");
    mpi_started = 1;
    MPI_Comm_dup(MPI_COMM_WORLD, &world.mpi);
    /* PMPI_ names for the calls some libraries shadow: Gmsh's binary SDK (the PyPI wheel)
     * exports MUMPS's sequential stubs MPI_Comm_rank, MPI_Init and MPI_Finalize, and when it is
     * loaded before libmpi every process would read rank 0 and never finalise */
    PMPI_Comm_rank(world.mpi, &world.rank);
    MPI_Comm_size(world.mpi, &world.size);
    if (world.size != n || world.rank != env_rank()) {
        const int rank = world.rank, size = world.size;
        world.rank = 0, world.size = 1;
        return hk_error_set(HK_ERR_DEVICE, __FILE__, __LINE__,
                            "MPI reports process %d of %d where mpirun started process %d of %d: "
                            "another library linked into hooke shadows MPI's functions; rebuild "
                            "hooke with the MPI library linked before it",
                            rank, size, env_rank(), n);
    }
    MPI_Comm node;
    if (MPI_Comm_split_type(world.mpi, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_size(node, &world_local);
        MPI_Comm_free(&node);
    }
    return 0;
#else
    (void)argc, (void)argv;
    if (n == 1) return 0;
    if (env_rank() != 0) { /* one sentence from rank 0 is enough */
        hk_error_clear();
        return HK_ERR_NOT_BUILT;
    }
    return hk_error_set(HK_ERR_NOT_BUILT, __FILE__, __LINE__,
                        "this hooke was built without MPI, so it cannot run as %d processes "
                        "(mpirun -np %d); rebuild with libopenmpi-dev installed "
                        "(HOOKE_WITH_MPI=ON), or run it without mpirun",
                        n, n);
#endif
}

const hk_comm *hk_comm_world(void)
{
    return &world;
}

int hk_comm_world_local(void)
{
    return world_local;
}

int hk_comm_world_end(int status)
{
#ifdef HOOKE_HAVE_MPI
    if (!mpi_started) return status;
    /* usage errors (status 2) come from the arguments, the same on every process */
    if (status == 0 || status == 2 || agreed_failure || world.size == 1) {
        MPI_Comm_free(&world.mpi);
        PMPI_Finalize(); /* not MPI_Finalize: see hk_comm_world_init */
        return status;
    }
    MPI_Abort(MPI_COMM_WORLD, status);
#endif
    return status;
}

_Noreturn void hk_comm_abort(int code)
{
    fprintf(stderr, "hooke: process %d of %d: %s; ending the run\n", world.rank, world.size,
            *hk_error_message() ? hk_error_message() : "failed");
    fflush(stderr);
#ifdef HOOKE_HAVE_MPI
    if (mpi_started) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    exit(code);
}

int hk_comm_rank(const hk_comm *c)
{
    return c ? c->rank : 0;
}

int hk_comm_size(const hk_comm *c)
{
    return c ? c->size : 1;
}

void hk_comm_describe(FILE *f)
{
#ifdef HOOKE_HAVE_MPI
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    v[len < (int)sizeof v ? len : (int)sizeof v - 1] = 0;
    char *cut = strpbrk(v, ",\n");
    if (cut) *cut = 0;
    fprintf(f, "%s, %d process%s in this run (mpirun -np N hooke ...)", v, world.size,
            world.size == 1 ? "" : "es");
#ifdef HOOKE_HAVE_NCCL
    fprintf(f, "; cuda between GPUs: MPI through the host (dist.comm=mpi, the default) or NCCL (dist.comm=nccl)");
#elif defined(HOOKE_HAVE_CUDA)
    fprintf(f, "; cuda between GPUs: MPI through the host (built without NCCL)");
#endif
#else
    fprintf(f, "none (built without MPI: one process per run)");
#endif
}

/* ---- collectives ---------------------------------------------------------------------- */

#ifdef HOOKE_HAVE_MPI
/* MPI counts are int: messages go in pieces of at most 1 GiB. */
#define HK_COMM_PIECE ((size_t)1 << 30)
#endif

int hk_comm_allgather(const hk_comm *c, const void *mine, size_t bytes, void *all)
{
    if (!c || c->size == 1) {
        if (bytes) memmove(all, mine, bytes);
        return 0;
    }
#ifdef HOOKE_HAVE_MPI
    HK_CHECK(bytes * (size_t)c->size < HK_COMM_PIECE, HK_ERR_ARG,
             "hk_comm_allgather: %zu bytes per process is too large", bytes);
    MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, c->mpi);
#endif
    return 0;
}

int hk_comm_allgatherv(const hk_comm *c, const void *mine, size_t bytes, void *all,
                       const size_t *counts)
{
    if (!c || c->size == 1) {
        if (bytes) memmove(all, mine, bytes);
        return 0;
    }
#ifdef HOOKE_HAVE_MPI
    int cnt[c->size], displ[c->size];
    size_t total = 0;
    for (int r = 0; r < c->size; r++) {
        cnt[r] = (int)counts[r];
        displ[r] = (int)total;
        total += counts[r];
    }
    HK_CHECK(total < HK_COMM_PIECE && bytes == counts[c->rank], HK_ERR_ARG,
             "hk_comm_allgatherv: %zu bytes in all is too large (or %zu bytes given for %zu)",
             total, bytes, counts[c->rank]);
    MPI_Allgatherv(mine, (int)bytes, MPI_BYTE, all, cnt, displ, MPI_BYTE, c->mpi);
#endif
    return 0;
}

int hk_comm_sum(const hk_comm *c, double *v, int n)
{
    if (!c || c->size == 1 || n <= 0) return 0;
    /* the few sums of a Krylov iteration: no allocation */
    double stack[256], *all = stack;
    if ((size_t)n * c->size > sizeof stack / sizeof *stack)
        HK_CALL(hk_malloc((size_t)n * c->size * sizeof *all, &all));
    int ierr = hk_comm_allgather(c, v, (size_t)n * sizeof *v, all);
    for (int i = 0; !ierr && i < n; i++) {
        double s = 0; /* rank order: the same bits everywhere, every time */
        for (int r = 0; r < c->size; r++)
            s += all[(size_t)r * n + i];
        v[i] = s;
    }
    if (all != stack) free(all);
    return ierr;
}

#ifdef HOOKE_HAVE_MPI
static int allreduce(const hk_comm *c, void *v, int n, MPI_Datatype t, MPI_Op op)
{
    if (!c || c->size == 1 || n <= 0) return 0;
    MPI_Allreduce(MPI_IN_PLACE, v, n, t, op, c->mpi);
    return 0;
}
#define HK_ALLREDUCE(c, v, n, t, op) allreduce(c, v, n, t, op)
#else
#define HK_ALLREDUCE(c, v, n, t, op) ((void)(c), (void)(v), (void)(n), 0)
#endif

int hk_comm_max(const hk_comm *c, double *v, int n)
{
    return HK_ALLREDUCE(c, v, n, MPI_DOUBLE, MPI_MAX);
}

int hk_comm_sum_i64(const hk_comm *c, int64_t *v, int n)
{
    return HK_ALLREDUCE(c, v, n, MPI_INT64_T, MPI_SUM);
}

int hk_comm_max_i64(const hk_comm *c, int64_t *v, int n)
{
    return HK_ALLREDUCE(c, v, n, MPI_INT64_T, MPI_MAX);
}

int hk_comm_min_i64(const hk_comm *c, int64_t *v, int n)
{
    return HK_ALLREDUCE(c, v, n, MPI_INT64_T, MPI_MIN);
}

int hk_comm_bcast(const hk_comm *c, void *buf, size_t bytes, int root)
{
    if (!c || c->size == 1) return 0;
#ifdef HOOKE_HAVE_MPI
    for (size_t off = 0; off < bytes; off += HK_COMM_PIECE) {
        const size_t n = bytes - off < HK_COMM_PIECE ? bytes - off : HK_COMM_PIECE;
        MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, root, c->mpi);
    }
#endif
    return 0;
}

int hk_comm_send(const hk_comm *c, const void *buf, size_t bytes, int to, int tag)
{
    HK_CHECK(c && c->size > 1, HK_ERR_ARG, "hk_comm_send: one process has no one to send to");
#ifdef HOOKE_HAVE_MPI
    for (size_t off = 0; off < bytes; off += HK_COMM_PIECE) {
        const size_t n = bytes - off < HK_COMM_PIECE ? bytes - off : HK_COMM_PIECE;
        MPI_Send((const char *)buf + off, (int)n, MPI_BYTE, to, tag, c->mpi);
    }
#endif
    return 0;
}

int hk_comm_recv(const hk_comm *c, void *buf, size_t bytes, int from, int tag)
{
    HK_CHECK(c && c->size > 1, HK_ERR_ARG, "hk_comm_recv: one process has no one to hear from");
#ifdef HOOKE_HAVE_MPI
    for (size_t off = 0; off < bytes; off += HK_COMM_PIECE) {
        const size_t n = bytes - off < HK_COMM_PIECE ? bytes - off : HK_COMM_PIECE;
        MPI_Recv((char *)buf + off, (int)n, MPI_BYTE, from, tag, c->mpi, MPI_STATUS_IGNORE);
    }
#endif
    return 0;
}

/* The size goes first; the receiver answers whether it could allocate the buffer before the
 * contents follow, so that a receiver out of memory fails on its own (and agrees on it with the
 * others afterwards) instead of leaving the sender blocked in a send that is never received.
 * An empty buffer is the size alone. */
int hk_comm_send_buf(const hk_comm *c, const void *buf, size_t bytes, int to, int tag)
{
    uint64_t n = bytes;
    int32_t ready = 0;
    HK_CALL(hk_comm_send(c, &n, sizeof n, to, tag));
    if (!bytes) return 0;
    HK_CALL(hk_comm_recv(c, &ready, sizeof ready, to, tag));
    HK_CHECK(ready, HK_ERR_MEMORY, "process %d could not allocate %zu bytes to receive a message",
             to, bytes);
    return hk_comm_send(c, buf, bytes, to, tag);
}

int hk_comm_recv_buf(const hk_comm *c, void **buf, size_t *bytes, int from, int tag)
{
    uint64_t n = 0;
    *buf = NULL;
    *bytes = 0;
    HK_CALL(hk_comm_recv(c, &n, sizeof n, from, tag));
    if (!n) return 0;
    const int ierr = hk_malloc((size_t)n, buf);
    const int32_t ready = !ierr;
    HK_CALL(hk_comm_send(c, &ready, sizeof ready, from, tag));
    if (ierr) return ierr;
    *bytes = (size_t)n;
    return hk_comm_recv(c, *buf, (size_t)n, from, tag);
}

int hk_comm_agree(const hk_comm *c, int ierr)
{
    if (!c || c->size == 1) return ierr;
    int *all;
    if (hk_malloc((size_t)c->size * sizeof *all, &all)) return HK_ERR_MEMORY;
    int gerr = hk_comm_allgather(c, &ierr, sizeof ierr, all);
    int first = -1;
    for (int r = 0; r < c->size && first < 0; r++)
        if (all[r]) first = r;
    const int code = first >= 0 ? all[first] : 0;
    free(all);
    if (gerr) return gerr;
    if (first < 0) return 0;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", hk_error_message());
    HK_CALL(hk_comm_bcast(c, msg, sizeof msg, first));
    msg[sizeof msg - 1] = 0;
    if (c->rank != first) hk_error_set(code, __FILE__, __LINE__, "%s", msg);
    agreed_failure = 1;
    return code;
}

/* ---- point-to-point without waiting (the halo exchange) ------------------------------------ */

struct hk_comm_reqs {
    int n;
#ifdef HOOKE_HAVE_MPI
    MPI_Request r[];
#endif
};

int hk_comm_reqs_create(int n, hk_comm_reqs **r)
{
#ifdef HOOKE_HAVE_MPI
    HK_CALL(hk_calloc(1, sizeof **r + (size_t)(n > 0 ? n : 1) * sizeof(MPI_Request), r));
    for (int i = 0; i < n; i++)
        (*r)->r[i] = MPI_REQUEST_NULL;
#else
    HK_CALL(hk_calloc(1, sizeof **r, r));
#endif
    (*r)->n = n;
    return 0;
}

void hk_comm_reqs_destroy(hk_comm_reqs *r)
{
    free(r);
}

int hk_comm_isend(const hk_comm *c, const void *buf, size_t bytes, int to, int tag, hk_comm_reqs *r,
                  int slot)
{
    HK_CHECK(bytes < HK_COMM_PIECE_MAX && slot < r->n, HK_ERR_ARG,
             "hk_comm_isend: a message of %zu bytes (slot %d of %d)", bytes, slot, r->n);
#ifdef HOOKE_HAVE_MPI
    MPI_Isend(buf, (int)bytes, MPI_BYTE, to, tag, c->mpi, &r->r[slot]);
#else
    (void)c, (void)buf, (void)to, (void)tag;
#endif
    return 0;
}

int hk_comm_irecv(const hk_comm *c, void *buf, size_t bytes, int from, int tag, hk_comm_reqs *r,
                  int slot)
{
    HK_CHECK(bytes < HK_COMM_PIECE_MAX && slot < r->n, HK_ERR_ARG,
             "hk_comm_irecv: a message of %zu bytes (slot %d of %d)", bytes, slot, r->n);
#ifdef HOOKE_HAVE_MPI
    MPI_Irecv(buf, (int)bytes, MPI_BYTE, from, tag, c->mpi, &r->r[slot]);
#else
    (void)c, (void)buf, (void)from, (void)tag;
#endif
    return 0;
}

int hk_comm_waitall(hk_comm_reqs *r)
{
#ifdef HOOKE_HAVE_MPI
    /* nothing posted (one process's layout posts nothing): no MPI call, so that a process
     * that did not start MPI may run the distributed layer alone */
    int posted = 0;
    for (int i = 0; i < r->n && !posted; i++)
        posted = r->r[i] != MPI_REQUEST_NULL;
    if (posted) MPI_Waitall(r->n, r->r, MPI_STATUSES_IGNORE);
#else
    (void)r;
#endif
    return 0;
}

int hk_comm_alltoall_i64n(const hk_comm *c, const int64_t *send, int64_t *recv, int n)
{
    if (!c || c->size == 1) {
        memcpy(recv, send, (size_t)n * sizeof *recv);
        return 0;
    }
#ifdef HOOKE_HAVE_MPI
    MPI_Alltoall(send, n, MPI_INT64_T, recv, n, MPI_INT64_T, c->mpi);
#endif
    return 0;
}

int hk_comm_alltoall_i64(const hk_comm *c, const int64_t *send, int64_t *recv)
{
    if (!c || c->size == 1) {
        recv[0] = send[0];
        return 0;
    }
#ifdef HOOKE_HAVE_MPI
    MPI_Alltoall(send, 1, MPI_INT64_T, recv, 1, MPI_INT64_T, c->mpi);
#endif
    return 0;
}
