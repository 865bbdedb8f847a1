/* Private contract of the distributed layer (solver/dist/, docs/parallel.md):
 *   comm.c      hk_comm: MPI or one process; the only file that includes mpi.h
 *   halo.c      hk_halo: who sends which owned entries to whom, and the exchange's transport
 *   partition.c hk_partition_*: METIS or contiguous blocks
 *   dist.c      hk_dist: a process's rows renumbered (interior first), the operator A_int/A_bnd,
 *               its SpMV overlapping the exchange
 *   dist_ops.c  the distributed ops table: the backend's, with reductions summed over processes
 *               and the operator's ops replaced
 *   dcomm.c     the device transport (dist.comm=nccl): the halo exchange and the sums between
 *               the devices' memories through the backend's dcomm_* ops */
#ifndef HOOKE_DIST_IMPL_H
#define HOOKE_DIST_IMPL_H

#include <stdint.h>

#include "hk_impl.h"

/* ---- point-to-point without waiting (comm.c) ------------------------------------------- */

#define HK_COMM_PIECE_MAX ((size_t)INT32_MAX)
typedef struct hk_comm_reqs hk_comm_reqs;
int hk_comm_reqs_create(int n, hk_comm_reqs **r);
void hk_comm_reqs_destroy(hk_comm_reqs *r);
int hk_comm_isend(const hk_comm *c, const void *buf, size_t bytes, int to, int tag, hk_comm_reqs *r,
                  int slot);
int hk_comm_irecv(const hk_comm *c, void *buf, size_t bytes, int from, int tag, hk_comm_reqs *r,
                  int slot);
int hk_comm_waitall(hk_comm_reqs *r);
/* Every process's bytes (counts[q] from process q; bytes = counts[this process]) into all,
 * in rank order (MPI_Allgatherv; at most 1 GiB in all). */
int hk_comm_allgatherv(const hk_comm *c, const void *mine, size_t bytes, void *all,
                       const size_t *counts);
/* send[q] to process q, recv[q] from process q (one value each). */
int hk_comm_alltoall_i64(const hk_comm *c, const int64_t *send, int64_t *recv);
/* n values to each process from send[q * n ...], n from each into recv[q * n ...] */
int hk_comm_alltoall_i64n(const hk_comm *c, const int64_t *send, int64_t *recv, int n);

/* ---- the halo plan (halo.c) -------------------------------------------------------------
 * Ghosts sorted by global id, so those of one owner are consecutive: the values from
 * recv_rank[k] land at ghost positions [recv_off[k], recv_off[k+1]). The owned entries
 * send_idx[send_off[k] .. send_off[k+1]) (local indices in the caller's order) go to
 * send_rank[k], in the order that process listed them. order[i] = the sorted position of the
 * caller's ghost i. */
struct hk_halo {
    const hk_comm *comm;
    int64_t row0, nown, nghost;
    int64_t *ghost; /* nghost sorted global ids */
    int64_t *order; /* nghost: caller's ghost i is sorted ghost order[i] */
    int nrecv, nsend;
    int *recv_rank, *send_rank;
    int64_t *recv_off, *send_off;  /* nrecv + 1, nsend + 1 */
    int32_t *send_idx;             /* send_off[nsend] owned local indices */
    hk_comm_reqs *reqs;            /* nrecv + nsend */
    double *host_send, *host_recv; /* hk_halo_exchange's buffers (width grown on demand) */
    int host_width;
};

/* The process owning global id g: starts[] (size + 1) the processes' first ids, ascending. */
int hk_halo_owner(const int64_t *starts, int size, int64_t g);

/* Post the exchange of one round: send (send_off[nsend] entries of `bytes` each, in send_idx
 * order) and recv (nghost entries, sorted ghost order), both host memory; _wait completes it.
 * The two calls are the transport: a device transport (NCCL, CUDA-aware MPI) replaces them
 * with the same buffers in device memory. */
int hk_halo_start(hk_halo *h, const void *send, void *recv, size_t bytes);
int hk_halo_wait(hk_halo *h);

/* End the run from one process (every process's mpirun ends with it): its sentence on stderr,
 * then MPI_Abort. For a failure the others cannot learn of (comm.c). */
_Noreturn void hk_comm_abort(int code);

/* ---- the device transport (dcomm.c) -----------------------------------------------------
 * dist.comm: auto (mpi: measured faster than nccl on two GPUs at the sizes run so far), mpi
 * (host memory and MPI: staged through the host on a device backend), nccl (the backend's
 * dcomm_* ops). */
enum hk_dist_transport { HK_DIST_COMM_AUTO = 0, HK_DIST_COMM_MPI, HK_DIST_COMM_NCCL };
extern const char *const hk_dist_comm_names[]; /* by enum hk_dist_transport, NULL-terminated */
#define HK_DCOMM_TIMEOUT 60.0 /* seconds a process waits for the others to join or answer */
#define HK_DCOMM_SCRATCH 64   /* backend scalars of a device transport's sums of host values */

typedef struct hk_dcomm {
    const hk_backend_ops *be; /* the backend's own table, whose dcomm_* ops carry it */
    const hk_comm *comm;
    void *dc;        /* the backend's communicator */
    double *scratch; /* HK_DCOMM_SCRATCH backend scalars */
    int run;         /* the run's, made ahead (hk_dcomm_prepare): the layouts borrow it */
} hk_dcomm;

/* The communicator of every process of c on backend be (collective; every failure agreed: all
 * processes return the first failing one's sentence). A process that does not join within
 * timeout seconds fails the others' creation. */
int hk_dcomm_create(const hk_comm *c, const hk_backend_ops *be, double timeout, hk_dcomm **t);
/* The layout's hk_dcomm_destroy; nothing for the run's communicator (hk_dist_comm_end's). */
void hk_dcomm_destroy(hk_dcomm *t);
/* hk_dist_comm_prepare (include/hooke/solver.h) with the backend's table be itself and the
 * timeout (HK_DCOMM_TIMEOUT there; tests: a transport of their own, a shorter wait). */
int hk_dcomm_prepare(const hk_comm *c, const hk_backend_ops *be, double timeout);
/* The ops below are queued on the backend's stream; a failure is the process's alone, in the
 * middle of work the others wait for on their devices, so it ends the run (hk_comm_abort). */
/* One round of h: send (send_off[nsend] entries of bytes each) and recv (nghost entries),
 * both in the backend's memory; _wait makes the work queued next wait for the round. */
void hk_dcomm_exchange(hk_dcomm *t, const hk_halo *h, const void *send, void *recv, size_t bytes);
/* The same round with any peers and per-peer ranges (an all-to-all-v of entries of bytes each):
 * recv_off[j]..recv_off[j + 1] from recv_rank[j], j < nrecv, likewise the sends; ranges with
 * nothing in them send nothing. The peers' lists must match (each pair's sizes agree). */
void hk_dcomm_exchange_v(hk_dcomm *t, int nrecv, const int *recv_rank, const int64_t *recv_off,
                         void *recv, int nsend, const int *send_rank, const int64_t *send_off,
                         const void *send, size_t bytes);
void hk_dcomm_wait(hk_dcomm *t);
/* n backend scalars S summed over the processes in place (rank order: the same bits
 * everywhere). */
void hk_dcomm_sum(hk_dcomm *t, double *S, int n);
/* n host values summed over the processes through the device (rank order). */
void hk_dcomm_sum_host(hk_dcomm *t, double *v, int n);
/* r[j] = X[j].y for j < k summed over the processes, to the host: the local sums stay on the
 * device (fp64 vectors, the backend's vec_mdot_s) until the global ones are read. */
void hk_dcomm_dots(hk_dcomm *t, int k, hk_vec *const *X, const hk_vec *y, double *r);
/* End the run for a failure of the transport on this process (ierr's sentence). */
_Noreturn void hk_dcomm_fatal(hk_dcomm *t, int ierr);

/* ---- the distributed layout and operator (dist.c) ---------------------------------------- */

typedef struct hk_dist {
    hk_backend_ops ops;          /* the distributed table: the backend's with replacements */
    const hk_backend_ops *local; /* the backend's own table */
    const hk_comm *comm;
    int bs;
    int host_memory; /* the backend's memory is host memory (no staging) */
    int64_t nglobal, row0, nown, nint, nbnd, nghost, nbc; /* block rows / columns */
    int32_t *perm; /* internal row i is the caller's row perm[i] */
    int32_t *inv;  /* its inverse: the caller's row i is internal row inv[i] */
    hk_halo *halo; /* over block rows; send_idx in internal numbering */
    /* On the host: Koo's row pointers and Kbnd's pattern; Koo's columns and the values only
     * on a host-memory backend (elsewhere the split made them on the device, colind and val
     * NULL here: Koo_d, Kbnd_d hold them) */
    hk_bcsr Koo;  /* owned rows x owned columns, internal numbering */
    hk_bcsr Kbnd; /* boundary rows x [nbc owned columns read, then ghosts] */
    /* Koo and Kbnd on the backend (d->local), what the operator, the solver's K and pc=amg's
     * level 0 read: views of the host's where host_memory, else the device's own arrays */
    hk_bmat Koo_d, Kbnd_d;
    int32_t *bcol;                /* nbc internal owned columns of Kbnd (ascending) */
    int32_t *send_dev, *bcol_dev; /* send_idx and bcol in the backend's memory */
    /* perm and inv in the backend's memory (the split's uploads; perm and inv themselves on
     * a host-memory backend): the solve puts b and x in order there */
    int32_t *perm_dev, *inv_dev;
    hk_dcomm *dcomm;              /* dist.comm=nccl: the device transport; NULL: MPI */
    /* the distributed set-up outside the preconditioner, which HOOKE_AMG_PROFILE prints beside
     * pc=amg's phases: when the layout began (hk_time), its host part's wall seconds, its
     * part on the backend's (Koo and Kbnd uploaded, or gathered and checked there; the
     * backend's start on first use lands there), and the last operator build's
     * (hk_dist_mat_build); after hk_dist_update_values, the update's (no host part) */
    double t_begin, t_layout, t_layout_upload, t_operator;
    /* the layout's steps (wall seconds): rows checked, ghosts listed, halo plan, rows
     * numbered, Koo and Kbnd split, host values */
    double t_layout_step[6];
    /* kept for new values of the same rows (hk_dist_update_values): the caller's block of
     * each block of Koo and Kbnd (the split's gather indices, in the backend's memory) and
     * the caller's block count */
    int32_t *src_oo, *src_bnd;
    int64_t nnzb;
    /* rows given as a part's (hk_dist_create_device): their pattern kept in the backend's
     * memory (new rows are compared with it there) and the part's ghost ids on the host;
     * NULL where the rows came with a host pattern */
    int64_t *part_rowptr;
    int32_t *part_colind;
    int64_t *part_ghost, part_nghost;
} hk_dist;

/* The layout of a process's rows (hk_solver_create_dist's arguments) on backend be; refuses a
 * non-finite value (every process agrees on it). Its table (d->ops) is filled by
 * hk_dist_ops_init. */
int hk_dist_create(const hk_comm *c, const hk_backend_ops *be, int64_t row0, const hk_bcsr *K,
                   hk_dist **d);
/* The same with the transport chosen (enum hk_dist_transport; hk_dist_create: auto); nccl
 * where be has no device transport is refused by name. */
int hk_dist_create_comm(const hk_comm *c, const hk_backend_ops *be, int64_t row0, const hk_bcsr *K,
                        int transport, hk_dist **d);
/* The same with the rows' values in be's memory (val_dev: K->rowptr[K->nbrows] blocks of bs x
 * bs in K's order; K->val unused, K gives the pattern on the host); val_dev NULL: K->val, on a
 * device backend (and the cpu under HOOKE_DIST_STAGED=1) uploaded once as they are and then
 * taken as val_dev. The
 * layout is computed from the pattern alone; each of Koo and Kbnd gets a gather index (the
 * source block of each of its blocks) and its values are gathered where they lie (the
 * backend's vec_gather, bs*bs entries a record), then checked there (bmat_first_nonfinite).
 * On a host-memory backend the gathered values are d->Koo's and d->Kbnd's own. */
int hk_dist_create_values(const hk_comm *c, const hk_backend_ops *be, int64_t row0,
                          const hk_bcsr *K, const double *val_dev, int transport, hk_dist **d);
/* A part's rows where its device assembled them (hk_solver_create_dist_device): nown block
 * rows of bs x bs blocks, rowptr (nown + 1, rowptr[0] = 0), colind and val in the backend's
 * memory; their columns the part's own: c < nown is the global block column row0 + c, nown + g
 * (g < nghost) is ghost_gid[g] (a host array); nglobal global block columns. */
typedef struct hk_dist_part_rows {
    int bs;
    int64_t row0, nown, nglobal, nghost;
    const int64_t *rowptr;
    const int32_t *colind;
    const double *val;
    const int64_t *ghost_gid;
} hk_dist_part_rows;
/* hk_dist_create_values from such rows, their pattern never on the host: the columns made
 * global there (the backend's dist_global_columns, a copy the layout reads and frees), then
 * the layout reads them where they lie; what comes down is the small part (the rows' kinds,
 * the ghosts, one row to name a bad entry) and what the layout keeps on the host anyway. */
int hk_dist_create_device(const hk_comm *c, const hk_backend_ops *be, const hk_dist_part_rows *P,
                          int transport, hk_dist **d);
/* New values for the rows d was made from (d->nnzb blocks of bs x bs in the caller's order,
 * the pattern unchanged): val_dev in the backend's memory, or (NULL) K->val on the host, on a
 * device uploaded once. They are gathered into Koo_d and Kbnd_d by the kept gather indices
 * (the layout, the halo plan and the transport stay) and checked there; a non-finite value is
 * named as at create, from K's pattern (pattern_dev: K's rowptr and colind in the backend's
 * memory; part_cols: its columns the part's, d->part_ghost). Not collective: the caller
 * agrees. *t_in, *t_check: the seconds of the gather (with the upload) and of the check. */
int hk_dist_update_values(hk_dist *d, const hk_bcsr *K, int pattern_dev, int part_cols,
                          const double *val_dev, double *t_in, double *t_check);
/* The transport d uses: "nccl" or "mpi". */
const char *hk_dist_comm_name(const hk_dist *d);
void hk_dist_destroy(hk_dist *d);
/* b_int[i] = b[perm[i]] (scalar entries of block rows) and back. */
void hk_dist_to_internal(const hk_dist *d, const double *b, double *b_int);
void hk_dist_from_internal(const hk_dist *d, const double *x_int, double *x);
/* The same on the backend: v (the layout's order, fp64) from the caller's host array h
 * through the scratch t (as long as v), or the caller's h from v through t: one upload or
 * download and one vec_gather there, no host pass. */
int hk_dist_upload_ordered(const hk_dist *d, const double *h, hk_vec *t, hk_vec *v);
int hk_dist_download_ordered(const hk_dist *d, const hk_vec *v, hk_vec *t, double *h);
/* Sort the blocks (bb values each) of every row by column (short rows). */
int hk_dist_sort_blocks(int64_t nrows, const int64_t *rowptr, int32_t *colind, double *val, int bb);
/* One sentence for a method or preconditioner that is not distributed, else 0. */
int hk_dist_check_choice(const char *method, const char *pc);

/* The operator's ops of the distributed table (dist.c). */
int hk_dist_mat_build(hk_mat *A, const hk_bmat *K);
int hk_dist_mat_convert(hk_mat *dst, const hk_mat *src);
int hk_dist_mat_spmv(hk_mat *A, const hk_vec *x, hk_vec *y);
/* amg_cheb_step on the distributed operator (pc=amg's level 0): the SpMV's exchange, the
 * backend's op on the interior rows while the ghosts travel, then on the boundary rows. */
int hk_dist_amg_cheb_step(hk_mat *A, const hk_cheb_step *s);
void hk_dist_mat_release(hk_mat *A);
/* An fp64 scratch vector of A's rows, kept with A (the fused reductions of dist_ops.c). */
int hk_dist_mat_scratch(hk_mat *A, hk_vec **t);
/* Fill d->ops from d->local (dist_ops.c). */
void hk_dist_ops_init(hk_dist *d);

/* Host staging of a device's exchanges: the backend's host memory where it has some (pinned
 * on cuda: the copies need no staging by the driver), else malloc's; freed by
 * hk_dist_host_free (NULL: nothing). */
int hk_dist_host_alloc(const hk_dist *d, size_t bytes, void **p);
void hk_dist_host_free(const hk_dist *d, void *p);

/* pc=amg's ghost rows (dist_amg.c), the parts without messages; tests call them on one
 * process. hk_damg_send_records: the records [count, (column, block)...] of D's rows
 * rows[0..n) (D on be, columns colmap[c] global ids), packed on be into host arrays: row j's
 * block count (*cnt)[j], its record at (*at)[j] of *rec. hk_damg_ghost_matrix: Xd on be, D's
 * rows then one row a ghost k < ng from the received records (rec, record j at rat[j],
 * rat[ng] their length, ghost k's record j = order[k]), columns positions in the sorted
 * union *cols (host, *ncols) of the global ids D's blocks and the records use. */
int hk_damg_send_records(const hk_backend_ops *be, const hk_bmat *D, const int64_t *colmap,
                         const int32_t *rows, int64_t n, int64_t **cnt, int64_t **at, double **rec);
int hk_damg_ghost_matrix(const hk_backend_ops *be, const hk_bmat *D, const int64_t *colmap,
                         int64_t ng, const double *rec, const int64_t *rat, const int64_t *order,
                         hk_bmat *Xd, int64_t **cols, int64_t *ncols);

/* pc=amg's partial Galerkin product (dist_amg.c): C = Rt AP on AP's backend, where Rt is P's
 * transpose with P's ghost rows (Rt->nbcols = AP's rows + the ghosts) and AP = A P of the
 * owned rows: AP's rows run on by empty ones for the ghosts (a padded rowptr, freed here), so
 * that C is P_own^T AP, every block the terms, in the order, of bmat_spgemm(P_own^T, AP): Rt
 * serves the Galerkin product and R, one transpose. upper: C's pattern whole
 * (bmat_spgemm_pattern), its values only in the blocks with column >= row (the others
 * zero; bmat_spgemm_numeric_upper, each block the digits of the whole product), where
 * the backend has those ops, else the whole product. */
int hk_damg_galerkin_partial(const hk_backend_ops *Lb, const hk_bmat *Rt, const hk_bmat *AP,
                             int upper, hk_bmat *C);
/* How many coarse operators this process has checked under HOOKE_AMG_CHECK_TRANSFER=1 against
 * the one-process Galerkin product of the gathered A and P (exactly symmetric, the product to
 * 1e-12): tests ask it, so that a check that did not run does not pass. */
int64_t hk_damg_galerkin_checked(void);

/* A view of x (or of its entries [off, off + n)) as a vector of the backend's own table. */
static inline hk_vec hk_dist_view(const hk_dist *d, const hk_vec *x, int64_t off, int64_t n)
{
    const size_t e = x->prec == HK_FP64 ? sizeof(double) : sizeof(float);
    hk_vec v = {d->local, n, x->prec, (char *)x->data + (size_t)off * e};
    return v;
}

/* ---- where a distributed solve waits (dist_profile.c, HOOKE_DIST_PROFILE=1) ---------------
 * Per solve, each exchange of a level's operator (A), prolongation (P: level l+1 to l),
 * restriction (R: level l to l+1) and gather of a level's vector to every process (G), and
 * each sum over the processes: how many, and the wall seconds inside them, split into the
 * staging (device<->host copies and the stream synchronisations they force; for a sum the
 * backend's partial sums read back) and the transport (MPI start and wait, or the device
 * transport's calls). Off (the default), the counters are not touched: one test of a global. */
enum { HK_DPROF_A = 0, HK_DPROF_P, HK_DPROF_R, HK_DPROF_G, HK_DPROF_KINDS };
/* The steps of hk_solver_solve on a process, in order: b and x checked (and agreed), uploaded
 * and put in the layout's order there (a zero x set), b's norm, the method (from its start to
 * the first preconditioner application: the first residual; that application; the rest: the
 * iterations), the true residual, the last synchronisation, x put back in the caller's order
 * there and downloaded. */
enum {
    HK_DSTEP_CHECK = 0,
    HK_DSTEP_UPLOAD,
    HK_DSTEP_BNORM,
    HK_DSTEP_START,
    HK_DSTEP_FIRST_PC,
    HK_DSTEP_ITERATIONS,
    HK_DSTEP_TRUE_RES,
    HK_DSTEP_END_SYNC,
    HK_DSTEP_DOWNLOAD,
    HK_DSTEP_TOTAL, /* all of hk_solver_solve */
    HK_DSTEPS
};
#define HK_DPROF_LEVELS 10
typedef struct hk_dprof {
    int on; /* agreed over the processes at the first solve */
    double n[HK_DPROF_KINDS][HK_DPROF_LEVELS], drain[HK_DPROF_KINDS][HK_DPROF_LEVELS],
        stage[HK_DPROF_KINDS][HK_DPROF_LEVELS], comm[HK_DPROF_KINDS][HK_DPROF_LEVELS];
    double sums, sums_drain, sums_local, sums_comm;
    /* the solve's steps outside the iterations (hk_solver_solve) and the first
     * preconditioner application's bounds (hk_dprof_pc) */
    double step[HK_DSTEPS];
    double pc_first_begin, pc_first_end;
} hk_dprof;
extern hk_dprof hk_dist_prof;
/* The time now when the profile is on, else 0 (no clock read). */
static inline double hk_dprof_now(void)
{
    return hk_dist_prof.on ? hk_time() : 0;
}
/* When on: waits for the work queued on backend L (the kernels before an exchange or a sum,
 * which its first copy to the host would wait for), adds those seconds to *drain and returns
 * the time after; off: 0, no wait. */
static inline double hk_dprof_drain(const hk_backend_ops *L, double *drain)
{
    if (!hk_dist_prof.on) return 0;
    const double t0 = hk_time();
    L->sync();
    const double t1 = hk_time();
    *drain += t1 - t0;
    return t1;
}
/* One exchange of kind at level (the seconds waiting for the queued work, of the staging and
 * of the transport), when on. */
static inline void hk_dprof_exchange(int kind, int level, double drain, double stage, double comm)
{
    if (!hk_dist_prof.on) return;
    const int l = level < 0 ? 0 : level >= HK_DPROF_LEVELS ? HK_DPROF_LEVELS - 1 : level;
    hk_dist_prof.n[kind][l] += 1;
    hk_dist_prof.drain[kind][l] += drain;
    hk_dist_prof.stage[kind][l] += stage;
    hk_dist_prof.comm[kind][l] += comm;
}
/* One sum over the processes: its local part (from t_local, 0: not measured) up to t_comm,
 * then its transport up to now. */
static inline void hk_dprof_sum(double t_local, double t_comm)
{
    if (!hk_dist_prof.on) return;
    const double now = hk_time();
    hk_dist_prof.sums += 1;
    if (t_local > 0) hk_dist_prof.sums_local += t_comm - t_local;
    hk_dist_prof.sums_comm += now - t_comm;
}
/* A preconditioner application from t0 (hk_dprof_now) to now: the first of the solve is
 * kept (its bounds split the method's seconds into the first residual, that application and
 * the iterations). */
static inline void hk_dprof_pc(double t0)
{
    if (!hk_dist_prof.on || hk_dist_prof.pc_first_end > 0) return;
    hk_dist_prof.pc_first_begin = t0;
    hk_dist_prof.pc_first_end = hk_time();
}
/* Around a solve (collective; hk_solver_solve): the counters cleared, then rank 0 prints the
 * slowest process's figures beside the solve's seconds and iterations, and a second line with
 * the solve's steps (hk_dist_prof.step, filled by the caller). */
void hk_dist_profile_begin(const hk_dist *d);
int hk_dist_profile_end(const hk_dist *d, double seconds, int iterations);

#endif
