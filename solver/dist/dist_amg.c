/* pc=amg on several processes: distributed smoothed aggregation (docs/parallel.md,
 * docs/preconditioners.md).
 *
 * The set-up's products run with the process's backend's own set-up ops (d->local: the GPU
 * of the process on cuda, the threads on cpu) on the process's rows in a local numbering:
 * owned block columns first, then the ghosts (sorted global ids, the halo plan's order). So
 * do the ghost rows' packing and extension, R's and P's distributed patterns and the Galerkin
 * merge (backend ops dist_*, coo_to_csr): the host keeps the MPI messages (through a pinned
 * staging on a device), the tables of one entry a column or a ghost, and the coarse levels'
 * host rows; on the cpu the copies are views, so it is one code path. Per level:
 *   1. aggregates of the owned nodes from the owned diagonal block (uncoupled aggregation: an
 *      aggregate never crosses processes); the coarse unknowns of an aggregate are its
 *      process's, numbered process after process;
 *   2. the tentative prolongator T from the owned near-null space (the rigid-body modes of the
 *      owned nodes in a frame common to all processes); the ghosts' rows of T by one halo
 *      exchange;
 *   3. D^-1 from the owned rows, the spectral bound of D^-1 A by block-Jacobi CG on the
 *      level's distributed operator (the backend's SpMV and summed dot products);
 *   4. P = T - (omega/rho) D^-1 A T with A's ghost columns; the ghosts' rows of P by a second
 *      exchange;
 *   5. the partial Galerkin product P_own^T (A P) of the owned fine rows; the rows of coarse
 *      unknowns owned elsewhere go to their owners, which add them in rank order (the same
 *      bits run after run) on their backend;
 *   6. the owned rows of R = P^T from P's owned and ghost rows (no message), transposed by the
 *      backend; R's, P's and the coarse operator's local patterns are made there too
 *      (dist_local_pattern), the host seeing only one entry per coarse column or per ghost
 *      (the coarse operator's: the next level's host rows, which it keeps anyway).
 * The host's row loops run on the process's threads, each row filled apart, and the backend's
 * ops are deterministic: the bytes do not depend on the thread count.
 * Each coarse operator, P and R is a distributed operator of its own (a halo plan over its
 * input's layout, one block matrix over [the owned columns it reads, the ghosts]) applied with
 * the backend's bmat_spmv, in fp32 or fp64 like the one-process levels. Once a level is small
 * (pc.amg.coarse_size scalar rows in all), every process gathers it and inverts it densely;
 * the cycle gathers the coarsest right-hand side to every process and solves there.
 *
 * The files: this one the hierarchy's set-up (the steps above, the coarsest level) and its
 * entry points; damg_operator.c the distributed operator of a level (dmat) and the set-up's
 * staging; damg_gathered.c the small levels on every process (pc.amg.dist.gather_rows);
 * damg_cycle.c the cycle and the ops table; damg_impl.h what they share. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "damg_impl.h"
#include "text.h"

static const char *const damg_phase_name[DAMG_NPHASES] = {
    "near-null", "aggregation", "level upload", "smoother+bound",
    "tentative", "ghost rows",  "P smoothing",  "Galerkin",
    "R",         "operators",   "coarsest",     "vectors",
    "total"};

static const char *const damg_step_name[DAMG_NSTEPS] = {
    "operators: halo plans", "columns", "upload",
    "ghost rows: send rows", "exchange", "build",
    "Galerkin: products", "others' rows", "route", "merge", "merged pattern", "next rows",
    "mirror",
    "near-null: rows", "modes", "aggregation: strength", "aggregates", "count",
    "coarsest: unsplit", "pack", "gather", "operators", "vectors", "inverse"};

/* ---- the hierarchy ----------------------------------------------------------------------- */


static int level0_spmv(void *A, const hk_vec *x, hk_vec *y)
{
    return hk_mat_spmv(A, x, y);
}

/* Level l's sweep; level 0's operator is an hk_mat of the distributed table, so its
 * Chebyshev steps go through amg_cheb_step (mat, d2) unless HOOKE_AMG_UNFUSED=1. The coarse
 * levels' operators are not (their rows are permuted against the level's vectors). */
hk_amg_sweep hk_damg_sweep_of(const hk_pc *pc, const damg *a, dlev *L, int l)
{
    hk_amg_sweep s = {.be = pc->be,
                      .spmv = l == 0 ? level0_spmv : hk_damg_dmat_spmv,
                      .A = l == 0 ? (void *)L->A0 : (void *)L->A,
                      .kind = a->op.smoother,
                      .bs = L->bs,
                      .degree = a->op.degree,
                      .Dinv = L->Dinv,
                      .l1 = L->l1,
                      .rho = L->rho,
                      .ratio = a->op.ratio,
                      .r = L->r,
                      .t = L->t,
                      .d = L->d,
                      .mat = l == 0 && !a->unfused ? L->A0 : NULL,
                      .d2 = l == 0 ? L->d2 : NULL};
    return s;
}

void hk_damg_free_levels(damg *a)
{
    for (int l = 0; l < DAMG_MAX_LEVELS; l++) {
        dlev *L = &a->lev[l];
        if (L->A0_owned) hk_mat_destroy(L->A0);
        hk_damg_dmat_destroy(L->A);
        hk_damg_dmat_destroy(L->P);
        hk_damg_dmat_destroy(L->R);
        hk_vec *v[] = {L->Dinv,  L->l1,  L->b,  L->x,  L->r,  L->t,  L->d,  L->w,  L->e, L->d2,
                       L->gDinv, L->gl1, L->gb, L->gx, L->gr, L->gt, L->gd, L->gw, L->ge};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
            hk_vec_destroy(v[i]);
        rmat *g[] = {&L->gA, &L->gP, &L->gR};
        for (int i = 0; i < 3; i++) {
            hk_bmat_free(&g[i]->M);
            if (g[i]->v32) a->d->local->dealloc(g[i]->v32);
        }
        if (L->pfull_dev) a->d->local->dealloc(L->pfull_dev);
        memset(L, 0, sizeof *L);
    }
    hk_vec_destroy(a->Minv);
    hk_vec_destroy(a->cb);
    hk_vec_destroy(a->cx);
    a->Minv = a->cb = a->cx = NULL;
    free(a->coff);
    free(a->hperm);
    a->hperm = NULL;
    a->cperm = NULL;
    free(a->hown);
    free(a->hall);
    a->coff = NULL;
    a->hown = a->hall = NULL;
    free(a->gcount);
    free(a->gown);
    free(a->gall);
    a->gcount = NULL;
    a->gown = a->gall = NULL;
    a->g = 0;
    a->nlevels = 0;
}

/* A level's rows on the host: nown block rows in the local numbering, columns [owned, then
 * the halo's ghosts]; gid (level 0) the global id of an owned row, else row0 + i. */
typedef struct hlev {
    int64_t row0, nown;
    int bs;
    hk_halo *halo;
    hk_bmat A;  /* cpu */
    hk_bmat Ad; /* A on the process's backend (hk_damg_local_copy), for its ops */
    const int32_t *perm;
} hlev;

static int64_t hlev_gid(const hlev *H, int64_t i)
{
    return H->row0 + (H->perm ? H->perm[i] : i);
}

static int64_t hlev_gcol(const hlev *H, int32_t c)
{
    return c < H->nown ? hlev_gid(H, c) : H->halo->ghost[c - H->nown];
}

/* Level 0's pattern from the layout: Koo's first nint rows as they are (the caller's), then
 * Kbnd's rows: their row pointers tail[b] = rowptr[nint + b + 1] (nbnd), their columns
 * renumbered into bnd_col (Kbnd's count). */
static void level0_pattern(const hk_dist *d, int64_t *tail, int32_t *bnd_col)
{
    const int64_t nio = d->Koo.rowptr[d->nint], nb = d->Kbnd.rowptr[d->nbnd];
    for (int64_t b = 0; b < d->nbnd; b++)
        tail[b] = nio + d->Kbnd.rowptr[b + 1];
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < nb; p++) {
        const int32_t c = d->Kbnd.colind[p];
        bnd_col[p] = c < d->nbc ? d->bcol[c] : (int32_t)(d->nown + c - d->nbc);
    }
}

static void level0_header(const hk_dist *d, hlev *H)
{
    H->row0 = d->row0;
    H->nown = d->nown;
    H->bs = d->bs;
    H->halo = d->halo;
    H->perm = d->perm;
}

/* Level 0's rows from the layout on the host (H->A): Koo's and Kbnd's in internal numbering,
 * their values the host's where it holds them, else downloaded from the backend's copies. */
static int level0_rows(const hk_dist *d, hlev *H)
{
    const hk_backend_ops *L = d->local;
    const int64_t bb = (int64_t)d->bs * d->bs;
    level0_header(d, H);
    const int64_t nio = d->Koo.rowptr[d->nint], nb = d->Kbnd.rowptr[d->nbnd];
    HK_CALL(hk_bmat_alloc(&hk_backend_cpu, d->bs, d->bs, d->nown, d->nown + d->nghost, nio + nb,
                          &H->A));
    memcpy(H->A.rowptr, d->Koo.rowptr, (size_t)(d->nint + 1) * sizeof *H->A.rowptr);
    level0_pattern(d, H->A.rowptr + d->nint + 1, H->A.colind + nio);
    if (d->Koo.colind) /* on a device the split kept Koo's columns there */
        memcpy(H->A.colind, d->Koo.colind, (size_t)nio * sizeof *H->A.colind);
    else if (nio)
        HK_CALL(hk_damg_to_host(L, H->A.colind, d->Koo_d.colind, (size_t)nio * sizeof *H->A.colind));
    const size_t b_oo = (size_t)(nio * bb) * sizeof(double),
                 b_bnd = (size_t)(nb * bb) * sizeof(double);
    if (d->Koo.val) {
        hk_damg_copy_par(H->A.val, d->Koo.val, b_oo);
        hk_damg_copy_par(H->A.val + nio * bb, d->Kbnd.val, b_bnd);
        return 0;
    }
    if (nio) HK_CALL(hk_damg_to_host(L, H->A.val, d->Koo_d.val, b_oo));
    if (nb) HK_CALL(hk_damg_to_host(L, H->A.val + nio * bb, d->Kbnd_d.val, b_bnd));
    return 0;
}

/* Level 0's rows on the process's backend (H->Ad): on the cpu a view of the host rows; on a
 * device copied there from the layout's Koo and Kbnd on the device (Koo_d, Kbnd_d), only the
 * pattern of the boundary rows uploaded: Koo's row pointers of the interior rows from the
 * layout's host copy as they are, the boundary rows' (shifted) and their renumbered columns
 * made on the threads (H->A stays empty until the coarsest level needs it). */
static int level0_local(const hk_dist *d, hlev *H)
{
    if (d->host_memory) {
        HK_CALL(level0_rows(d, H));
        return hk_damg_local_copy(d, &H->A, &H->Ad);
    }
    const hk_backend_ops *L = d->local;
    const int64_t bb = (int64_t)d->bs * d->bs;
    const int64_t nio = d->Koo.rowptr[d->nint], nb = d->Kbnd.rowptr[d->nbnd];
    int64_t *tail = NULL;
    int32_t *bnd_col = NULL;
    level0_header(d, H);
    int ierr = hk_malloc((size_t)(d->nbnd + 1) * sizeof *tail, &tail);
    if (!ierr) ierr = hk_malloc((size_t)(nb + 1) * sizeof *bnd_col, &bnd_col);
    if (!ierr) {
        level0_pattern(d, tail, bnd_col);
        ierr = hk_bmat_alloc(L, d->bs, d->bs, d->nown, d->nown + d->nghost, nio + nb, &H->Ad);
    }
    hk_bmat *A = &H->Ad;
    if (!ierr)
        ierr = hk_damg_to_backend(L, A->rowptr, d->Koo.rowptr,
                                  (size_t)(d->nint + 1) * sizeof *A->rowptr);
    if (!ierr && d->nbnd)
        ierr = hk_damg_to_backend(L, A->rowptr + d->nint + 1, tail,
                                  (size_t)d->nbnd * sizeof *A->rowptr);
    if (!ierr && nio) ierr = L->copy(A->colind, d->Koo_d.colind, (size_t)nio * sizeof(int32_t));
    if (!ierr && nb)
        ierr = hk_damg_to_backend(L, A->colind + nio, bnd_col, (size_t)nb * sizeof(int32_t));
    if (!ierr && nio) ierr = L->copy(A->val, d->Koo_d.val, (size_t)(nio * bb) * sizeof(double));
    if (!ierr && nb)
        ierr = L->copy(A->val + nio * bb, d->Kbnd_d.val, (size_t)(nb * bb) * sizeof(double));
    free(tail);
    free(bnd_col);
    return ierr;
}

/* A coarse level's values on the host (H->A.val, downloaded from H->Ad) where only its
 * pattern is there (a device keeps them): for the coarsest level's gather. */
static int host_values(const hk_dist *d, hlev *H)
{
    const int64_t n = H->A.nnzb * H->bs * H->bs;
    HK_CALL(hk_backend_cpu.alloc((void **)&H->A.val, (size_t)(n + 1) * sizeof *H->A.val));
    return n ? hk_damg_to_host(d->local, H->A.val, H->Ad.val, (size_t)n * sizeof *H->A.val) : 0;
}

/* The near-null space of level 0 on the process's backend (nown*bs x nns, column-major,
 * *Bout allocated there): the rigid-body modes of the owned nodes in a frame every process
 * shares (the mean node and the largest extent over all processes), or the bs translations;
 * decoupled dofs (supports) zeroed. Everything over the nodes runs on the backend: the
 * coordinates put in the internal order there (vec_gather by the numbering; host coordinates
 * uploaded once as they are, a device assembly's read where they are), each process's sums and
 * bounds (amg_coord_bounds) added over the processes by one allgather of ten numbers, the
 * modes (amg_rigid_modes) from the decoupled flags of the rows there: neither the n x nns array
 * nor the coordinates cross to the host. */
static int level0_nearnull(hk_pc *pc, damg *a, const hlev *H, double **Bout)
{
    enum { NPART = 10 }; /* a process's sums, smallest, largest coordinates, its nodes */
    const hk_dist *d = a->d;
    const hk_backend_ops *L = d->local;
    const hk_nearnull *nn = pc->nearnull;
    const int bs = H->bs, P = hk_comm_size(d->comm);
    const int64_t nb = H->nown, n = nb * bs;
    int ierr = 0;
    double part[NPART] = {0}, *all = NULL, *hown = NULL, c[3] = {0, 0, 0}, ext = 0;
    hk_vec *dd = NULL, *xd = NULL, *up = NULL;
    *Bout = NULL;
    HK_CHECK(!(nn && nn->vectors && !nn->coords), HK_ERR_UNSUPPORTED,
             "pc=amg on %d processes takes node coordinates as its near-null space, not given "
             "vectors; pass coordinates, or run on one process",
             P);
    const int coords = nn && nn->coords;
    HK_CHECK(!coords || (nn->dim == bs && (bs == 2 || bs == 3)), HK_ERR_ARG,
             "pc=amg: node coordinates of dimension %d need a block size of %d, but the "
             "matrix has block size %d",
             coords ? nn->dim : 0, coords ? nn->dim : 0, bs);
    a->nns = coords ? (bs == 3 ? 6 : 3) : bs;
    a->nns_kind = coords    ? "rigid-body modes"
                  : bs == 1 ? "constant vector (no near-null space given)"
                            : "translations only (no coordinates given)";
    HK_TRY(hk_malloc((size_t)NPART * P * sizeof *all, &all));
    HK_TRY(L->alloc((void **)Bout, (size_t)(n * a->nns + 1) * sizeof **Bout));
    if (coords) {
        /* the caller's order where the backend reads it: a device's own (its assembly's) as
         * they are, host ones uploaded there (on the cpu read as they are); another backend's
         * through the host */
        const hk_backend_ops *cbe = nn->coords_be;
        const double *hsrc = nn->coords;
        hk_vec from = {.be = L, .n = n, .prec = HK_FP64, .data = (void *)nn->coords};
        if (cbe && cbe != L) {
            HK_TRY(hk_malloc((size_t)(n + 1) * sizeof *hown, &hown));
            if (n) HK_TRY(cbe->copy_from(hown, nn->coords, (size_t)n * sizeof *hown));
            hsrc = from.data = hown;
        }
        if (cbe != L && !d->host_memory) {
            HK_TRY(hk_damg_vec_sized(L, n, HK_FP64, &up));
            if (n) HK_TRY(hk_damg_to_backend(L, up->data, hsrc, (size_t)n * sizeof(double)));
            from.data = up->data;
        }
        HK_TRY(hk_damg_vec_sized(L, n, HK_FP64, &xd));
        if (nb) HK_TRY(L->vec_gather(xd, &from, d->perm_dev, nb, bs));
        HK_TRY(L->amg_coord_bounds(nb, bs, xd, part, part + 3, part + 6));
        part[9] = (double)nb;
    }
fail:
    /* the frame over the processes (every process calls it): the sums added in rank order
     * (the same bits everywhere), the extent from the bounds (a maximum: exact) */
    ierr = hk_comm_agree(d->comm, ierr);
    if (!ierr) ierr = hk_comm_allgather(d->comm, part, sizeof part, all);
    if (!ierr && coords) {
        double cnt = P > 1 ? 0 : all[9], sum[3];
        for (int k = 0; k < 3; k++)
            sum[k] = P > 1 ? 0 : all[k];
        for (int q = 0; q < P && P > 1; q++) {
            for (int k = 0; k < 3; k++)
                sum[k] += all[NPART * q + k];
            cnt += all[NPART * q + 9];
        }
        for (int k = 0; k < 3; k++)
            c[k] = cnt > 0 ? sum[k] / cnt : 0;
        if (!(isfinite(c[0]) && isfinite(c[1]) && isfinite(c[2])))
            ierr = hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                                "near-null space: a node coordinate is not finite");
        for (int q = 0; q < P; q++)
            for (int k = 0; k < bs && all[NPART * q + 9] > 0; k++)
                ext = fmax(ext, fmax(fabs(all[NPART * q + 6 + k] - c[k]),
                                     fabs(all[NPART * q + 3 + k] - c[k])));
    }
    /* the decoupled rows from the rows on the backend, the modes there */
    int64_t bad;
    if (!ierr) ierr = hk_damg_vec_sized(L, n, HK_FP64, &dd);
    if (!ierr && n) ierr = L->bmat_diag(&H->Ad, HK_DIAG_DECOUPLED, dd, &bad);
    if (!ierr)
        ierr = L->amg_rigid_modes(nb, bs, coords ? xd : NULL, c, coords && ext > 0 ? 1 / ext : 1,
                                  dd, *Bout);
    free(all);
    free(hown);
    hk_vec_destroy(dd);
    hk_vec_destroy(xd);
    hk_vec_destroy(up);
    ierr = hk_comm_agree(d->comm, ierr);
    if (ierr && *Bout) {
        L->dealloc(*Bout);
        *Bout = NULL;
    }
    return ierr;
}

/* The level's vectors (pc->prec) on the distributed table. */
static int level_vectors(hk_pc *pc, damg *a, dlev *L, int l)
{
    const int64_t n = L->nown * L->bs;
    hk_vec **v[] = {&L->r, &L->t, &L->d, &L->b, &L->x, &L->w, &L->e};
    const int count = l == 0 ? 3 : a->op.cycle == 1 ? 7 : 5;
    for (int k = 0; k < count; k++)
        HK_CALL(hk_damg_vec_sized(pc->be, n, pc->prec, v[k]));
    /* level 0's fused Chebyshev alternates d_k between d and d2 (hk_amg_smooth) */
    if (l == 0 && a->op.smoother == HK_AMG_CHEBYSHEV && a->op.degree >= 3 && !a->unfused &&
        pc->be->amg_cheb_step)
        HK_CALL(hk_damg_vec_sized(pc->be, n, pc->prec, &L->d2));
    return 0;
}

/* The rows of P_own^T (A P) of coarse unknowns owned elsewhere, sent to their owners, and the
 * rows received for this process's, as contiguous arrays in the staging (others_rows fills the
 * sent part, route the received one). M's rows are ascending global ids, so the rows owned
 * elsewhere are M's first rows [0, lo) and last rows [hi, nr), blocks [0, a) and [b, nnz) of
 * M, and one owner's rows are a contiguous range of them: they go as they are (row ids,
 * rowptr, global columns, blocks), no entry packed on the host. */
typedef struct routed {
    int64_t nr, lo, hi, a, b;
    const int64_t *rowptr;   /* M's (host: the staging, or M's own on the cpu) */
    const int64_t *gcol;     /* the sent blocks' global columns, the prefix's then the suffix's */
    const double *pre, *suf; /* the prefix's blocks, the suffix's (M's own on the cpu) */
    int64_t n;               /* blocks received, in the senders' rank order: */
    int32_t *erow;           /* their rows - the merge's row0 */
    int64_t *ekey;           /* their columns' merge keys (merge_key) */
    double *ev;              /* their blocks (host; NULL where dev) */
    /* dev: the blocks go device to device (device_messages): pre and suf are then M's own
     * blocks on the backend, and the received ones land in ev_dev there (free with
     * routed_free) */
    int dev;
    double *ev_dev, *send_dev; /* send_dev: the sent blocks, read by the transport */
} routed;

static void routed_free(const hk_dist *d, routed *X)
{
    if (X->ev_dev) d->local->dealloc(X->ev_dev);
    if (X->send_dev) d->local->dealloc(X->send_dev);
    X->ev_dev = X->send_dev = NULL;
}

static inline int64_t merge_key(int64_t J, int64_t row0, int64_t nown);

/* The sent rows' counts to each process (rows, blocks; none to itself) from the processes' first
 * rows starts (size + 1) and M's row ids rc. */
static void route_counts(const routed *X, const int64_t *rc, const int64_t *starts, int P, int me,
                         int64_t *first, int64_t *cnt)
{
    for (int q = 0; q < P; q++) {
        const int64_t r0 = hk_lower_bound_i64(rc, 0, X->nr, starts[q]);
        const int64_t r1 = hk_lower_bound_i64(rc, 0, X->nr, starts[q + 1]);
        first[q] = r0;
        cnt[2 * q] = q == me ? 0 : r1 - r0;
        cnt[2 * q + 1] = q == me ? 0 : X->rowptr[r1] - X->rowptr[r0];
    }
}

/* route's blocks through the layout's device transport: M's prefix and suffix (X->pre, X->suf
 * on the backend) copied there into one array in the sent order (every owner's blocks a range
 * of it, in rank order), then one round with every process that sends or receives any: the
 * sent counts cnt and received ones rcnt as route's (rows, blocks a process), the received
 * blocks into X->ev_dev at bo[q]; the sent array stays in X->send_dev. A failure before the
 * round is agreed; the round's own ends the run (hk_dcomm_exchange_v). Collective. */
static int route_blocks_dev(const hk_dist *d, routed *X, const int64_t *cnt, const int64_t *rcnt,
                            const int64_t *bo, int bsz)
{
    const hk_comm *c = d->comm;
    const int P = hk_comm_size(c);
    const int64_t ns = X->a + (X->rowptr[X->nr] - X->b);
    int ierr = 0, nr = 0, nsd = 0;
    int *rrank = NULL, *srank = NULL;
    int64_t *roff = NULL, *soff = NULL;
    double *sendv = NULL;
    ierr = hk_malloc(((size_t)P + 1) * sizeof *rrank, &rrank);
    if (!ierr) ierr = hk_malloc(((size_t)P + 1) * sizeof *srank, &srank);
    if (!ierr) ierr = hk_malloc(((size_t)P + 1) * sizeof *roff, &roff);
    if (!ierr) ierr = hk_malloc(((size_t)P + 1) * sizeof *soff, &soff);
    if (!ierr) ierr = d->local->alloc((void **)&sendv, (size_t)(ns * bsz + 1) * sizeof *sendv);
    if (!ierr && X->a)
        ierr = hk_damg_copy_on(d, sendv, X->pre, (size_t)(X->a * bsz) * sizeof *sendv);
    if (!ierr && ns > X->a)
        ierr = hk_damg_copy_on(d, sendv + X->a * bsz, X->suf,
                               (size_t)((ns - X->a) * bsz) * sizeof *sendv);
    if (!ierr) {
        roff[0] = soff[0] = 0;
        for (int q = 0; q < P; q++) {
            if (rcnt[2 * q + 1]) {
                rrank[nr] = q;
                roff[nr + 1] = roff[nr] + rcnt[2 * q + 1];
                if (roff[nr] != bo[q]) ierr = HK_ERR_INTERNAL;
                nr++;
            }
            if (cnt[2 * q + 1]) {
                srank[nsd] = q;
                soff[nsd + 1] = soff[nsd] + cnt[2 * q + 1];
                nsd++;
            }
        }
        /* the owners' ranges tile the sent array: the prefix's rows are the lower ranks' */
        if (ierr || soff[nsd] != ns)
            ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                                "pc=amg: the Galerkin rows routed do not tile their blocks");
    }
    HK_TRY(hk_comm_agree(c, ierr));
    hk_dcomm_exchange_v(d->dcomm, nr, rrank, roff, X->ev_dev, nsd, srank, soff, sendv,
                        (size_t)bsz * sizeof *sendv);
    hk_dcomm_wait(d->dcomm);
    X->send_dev = sendv; /* freed after the merge (routed_free), the round long done */
    sendv = NULL;
fail:
    if (sendv) d->local->dealloc(sendv);
    free(rrank);
    free(srank);
    free(roff);
    free(soff);
    return ierr;
}

/* Sends X's rows to their owners and receives the others' for this process's rows [row0, ...):
 * per sender, its row ids, rowptr slice, global columns and blocks, each into one contiguous
 * array in rank order; then X->erow and X->ekey on the threads (in place of the received
 * columns), so that the blocks go to the merge as received. Collective. */
static int route(const hk_dist *d, stage *s, const int64_t *starts, const int64_t *rc, int bsz,
                 int64_t row0, int64_t nown, routed *X)
{
    const hk_comm *c = d->comm;
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    int ierr = 0, nreq = 0;
    int64_t *first = NULL, *cnt = NULL, *rcnt = NULL, *ro = NULL, *bo = NULL;
    int64_t *rrow = NULL, *rptr = NULL;
    hk_comm_reqs *rq = NULL;
    X->n = 0;
    X->erow = NULL;
    X->ekey = NULL;
    X->ev = NULL;
    X->ev_dev = X->send_dev = NULL;
    ierr = hk_calloc((size_t)P + 1, sizeof *first, &first);
    if (!ierr) ierr = hk_calloc(2 * (size_t)P, sizeof *cnt, &cnt);
    if (!ierr) ierr = hk_calloc(2 * (size_t)P, sizeof *rcnt, &rcnt);
    if (!ierr) ierr = hk_calloc((size_t)P + 1, sizeof *ro, &ro);
    if (!ierr) ierr = hk_calloc((size_t)P + 1, sizeof *bo, &bo);
    if (!ierr) route_counts(X, rc, starts, P, me, first, cnt);
    HK_TRY(hk_comm_agree(c, ierr));
    HK_TRY(hk_comm_alltoall_i64n(c, cnt, rcnt, 2));
    for (int q = 0; q < P; q++) {
        ro[q + 1] = ro[q] + rcnt[2 * q];
        bo[q + 1] = bo[q] + rcnt[2 * q + 1];
        nreq += (X->dev ? 3 : 4) * ((cnt[2 * q] > 0) + (rcnt[2 * q] > 0));
    }
    const int64_t nrr = ro[P], n = bo[P];
    ierr =
        hk_damg_stage_get(d, s, STAGE_RECV_ROW, (size_t)(nrr + 1) * sizeof *rrow, (void **)&rrow);
    if (!ierr) /* a sender's rowptr slice has one more entry than its rows */
        ierr = hk_damg_stage_get(d, s, STAGE_RECV_PTR, (size_t)(nrr + P + 1) * sizeof *rptr,
                                 (void **)&rptr);
    if (!ierr)
        ierr = hk_damg_stage_get(d, s, STAGE_RECV_COL, (size_t)(n + 1) * 8, (void **)&X->ekey);
    if (!ierr && X->dev)
        ierr = d->local->alloc((void **)&X->ev_dev, (size_t)(n * bsz + 1) * sizeof(double));
    else if (!ierr)
        ierr = hk_damg_stage_get(d, s, STAGE_RECV, (size_t)(n * bsz + 1) * sizeof(double),
                                 (void **)&X->ev);
    if (!ierr)
        ierr = hk_damg_stage_get(d, s, STAGE_RECV_I32, (size_t)(n + 1) * sizeof(int32_t),
                                 (void **)&X->erow);
    if (!ierr) ierr = hk_comm_reqs_create(nreq > 0 ? nreq : 1, &rq);
    HK_TRY(hk_comm_agree(c, ierr));
    /* the blocks device to device, queued: they move while the messages below do, and the
     * merge's work waits for them */
    if (X->dev) HK_TRY(route_blocks_dev(d, X, cnt, rcnt, bo, bsz));
    int slot = 0;
    for (int q = 0; q < P && !ierr; q++) {
        if (!rcnt[2 * q]) continue;
        const int64_t nb = rcnt[2 * q + 1];
        ierr = hk_comm_irecv(c, rrow + ro[q], (size_t)rcnt[2 * q] * 8, q, DAMG_TAG_ROUTE_ROWS, rq,
                             slot++);
        if (!ierr)
            ierr = hk_comm_irecv(c, rptr + ro[q] + q, (size_t)(rcnt[2 * q] + 1) * 8, q,
                                 DAMG_TAG_ROUTE_PTR, rq, slot++);
        if (!ierr)
            ierr = hk_comm_irecv(c, X->ekey + bo[q], (size_t)nb * 8, q, DAMG_TAG_ROUTE_COLS, rq,
                                 slot++);
        if (!ierr && !X->dev)
            ierr = hk_comm_irecv(c, X->ev + bo[q] * bsz, (size_t)(nb * bsz) * sizeof(double), q,
                                 DAMG_TAG_ROUTE, rq, slot++);
    }
    for (int q = 0; q < P && !ierr; q++) {
        if (!cnt[2 * q]) continue;
        const int64_t r0 = first[q], nb = cnt[2 * q + 1];
        const int64_t p0 = X->rowptr[r0]; /* the first block, in the sent arrays at k: */
        const int64_t k = r0 < X->lo ? p0 : X->a + (p0 - X->b);
        const double *v = r0 < X->lo ? X->pre + p0 * bsz : X->suf + (p0 - X->b) * bsz;
        ierr =
            hk_comm_isend(c, rc + r0, (size_t)cnt[2 * q] * 8, q, DAMG_TAG_ROUTE_ROWS, rq, slot++);
        if (!ierr)
            ierr = hk_comm_isend(c, X->rowptr + r0, (size_t)(cnt[2 * q] + 1) * 8, q,
                                 DAMG_TAG_ROUTE_PTR, rq, slot++);
        if (!ierr)
            ierr =
                hk_comm_isend(c, X->gcol + k, (size_t)nb * 8, q, DAMG_TAG_ROUTE_COLS, rq, slot++);
        if (!ierr && !X->dev)
            ierr = hk_comm_isend(c, v, (size_t)(nb * bsz) * sizeof(double), q, DAMG_TAG_ROUTE, rq,
                                 slot++);
    }
    /* (a row range of no blocks still sends its empty messages: both sides post them) */
    if (!ierr) ierr = hk_comm_waitall(rq);
    HK_TRY(ierr);
    /* each received block's row and merge key, on the threads, sender after sender */
    for (int q = 0; q < P; q++) {
        const int64_t *ptr = rptr + ro[q] + q, *row = rrow + ro[q];
        const int64_t nrq = rcnt[2 * q], base = bo[q];
        int32_t *erow = X->erow;
        int64_t *ekey = X->ekey;
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t j = 0; j < nrq; j++)
            for (int64_t p = base + ptr[j] - ptr[0]; p < base + ptr[j + 1] - ptr[0]; p++) {
                erow[p] = (int32_t)(row[j] - row0);
                ekey[p] = merge_key(ekey[p], row0, nown);
            }
    }
    X->n = n;
fail:
    if (ierr) routed_free(d, X);
    free(first);
    free(cnt);
    free(rcnt);
    free(ro);
    free(bo);
    hk_comm_reqs_destroy(rq);
    return ierr;
}

/* This process's coarse rows [row0, row0 + nown) from the local rows of M (on the process's
 * backend, its rows and columns global ids rc[], those rows outside the range skipped) and
 * the blocks R received (route: their local rows, merge keys and values): blocks of one (row,
 * column) summed in that order (M's, then R's in rank order: the same bits run after run), on
 * the backend (coo_to_csr). A row's blocks in the local order: its columns in [row0, row0 +
 * nown) ascending, then the others ascending (the order of the coarse level's host rows and of
 * its distributed operator, which then take them as they are): merge_key's order. Only R's
 * arrays (uploaded from the staging as received) and the maps of M's rows and columns (one
 * entry a local coarse unknown) go to the backend; out there: *rowptr (nown + 1), the blocks'
 * keys *key, their values *val. */
static inline int64_t merge_key(int64_t J, int64_t row0, int64_t nown)
{
    return J >= row0 && J < row0 + nown ? J - row0 : J < row0 ? J + nown : J;
}

/* merge_key's inverse: the global column of a key */
static inline int64_t merge_col(int64_t k, int64_t row0, int64_t nown)
{
    return k < nown ? row0 + k : k < row0 + nown ? k - nown : k;
}

/* bytes of host memory h on the process's backend: h itself where that is host memory, else
 * an upload (*dev, freed by the caller with off_backend; from the staging s where given). */
static int on_backend(const hk_dist *d, const stage *s, const void *h, size_t bytes,
                      const void **dev)
{
    if (d->host_memory) {
        *dev = h;
        return 0;
    }
    void *p = NULL;
    HK_CALL(d->local->alloc(&p, bytes ? bytes : 1));
    *dev = p;
    return bytes ? hk_damg_stage_up(d, s, p, h, bytes) : 0;
}

static void off_backend(const hk_dist *d, const void *dev)
{
    if (!d->host_memory && dev) d->local->dealloc((void *)dev);
}

static int merge_rows(const hk_dist *d, const stage *s, int64_t row0, int64_t nown, int64_t nglob,
                      const hk_bmat *M, const int64_t *rc, const routed *R, int64_t **rowptr,
                      int64_t **key, double **val)
{
    const int bsz = M->br * M->bc;
    const int64_t nr = M->nbrows, nc = M->nbcols, n = R->n;
    int ierr = 0;
    int32_t *rmap = NULL;
    int64_t *cmap = NULL;
    const void *rmap_d = NULL, *cmap_d = NULL, *erow_d = NULL, *ekey_d = NULL, *ev_d = NULL;
    HK_TRY(hk_malloc((size_t)(nr + 1) * sizeof *rmap, &rmap));
    HK_TRY(hk_malloc((size_t)(nc + 1) * sizeof *cmap, &cmap));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nr; i++)
        rmap[i] = rc[i] >= row0 && rc[i] < row0 + nown ? (int32_t)(rc[i] - row0) : -1;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < nc; c++)
        cmap[c] = merge_key(rc[c], row0, nown);
    /* the received rows, keys and blocks from the staging as route left them */
    HK_TRY(on_backend(d, NULL, rmap, (size_t)nr * sizeof *rmap, &rmap_d));
    HK_TRY(on_backend(d, NULL, cmap, (size_t)nc * sizeof *cmap, &cmap_d));
    HK_TRY(on_backend(d, s, R->erow, (size_t)n * sizeof *R->erow, &erow_d));
    HK_TRY(on_backend(d, s, R->ekey, (size_t)n * sizeof *R->ekey, &ekey_d));
    if (R->ev_dev) /* received there (a device transport) */
        ev_d = R->ev_dev;
    else
        HK_TRY(on_backend(d, s, R->ev, (size_t)(n * bsz) * sizeof *R->ev, &ev_d));
    HK_TRY(d->local->coo_to_csr(M, rmap_d, cmap_d, n, erow_d, ekey_d, ev_d, nown, nglob, rowptr,
                                key, val));
fail:
    off_backend(d, rmap_d);
    off_backend(d, cmap_d);
    off_backend(d, erow_d);
    off_backend(d, ekey_d);
    if (ev_d != R->ev_dev) off_backend(d, ev_d);
    free(rmap);
    free(cmap);
    return ierr;
}

/* The merged rows' pattern on the host: *rp (nown + 1) and the blocks' merge keys *gk
 * (merge_key's: coarse_rows reads them as they are) from merge_rows' rowptr and keys on the
 * backend, downloaded into the staging s (the caller frees nothing of them); on the cpu those
 * arrays themselves (*rowptr and *key taken over, NULL after; the caller frees them). */
static int merged_pattern(const hk_dist *d, stage *s, int64_t nown, int64_t **rowptr, int64_t **key,
                          int64_t **rp, int64_t **gk)
{
    int64_t **gc = gk;
    *rp = *gc = NULL;
    if (d->host_memory) {
        *rp = *rowptr;
        *gc = *key;
        *rowptr = *key = NULL;
    } else {
        HK_CALL(hk_damg_stage_get(d, s, STAGE_MERGE_PTR, (size_t)(nown + 1) * sizeof **rp,
                                  (void **)rp));
        HK_CALL(hk_damg_stage_down(d, s, *rp, *rowptr, (size_t)(nown + 1) * sizeof **rp));
        HK_CALL(hk_damg_stage_get(d, s, STAGE_MERGE_COL, (size_t)((*rp)[nown] + 1) * sizeof **gc,
                                  (void **)gc));
        if ((*rp)[nown])
            HK_CALL(hk_damg_stage_down(d, s, *gc, *key, (size_t)(*rp)[nown] * sizeof **gc));
    }
    return 0;
}

/* Host rows of the next level [row0, row0 + nown) from its rows in the local order with their
 * merge keys key (merge_rows'); columns: owned offsets (the keys below nown), then nown + the
 * positions among the ghosts' keys gkey[0..ng) (ascending: every key from nown up, which
 * merge_col turns into the ghosts' global ids in their order); H->A takes *val over. H->halo
 * is its operator's, set by the caller. */
static int coarse_rows(int64_t row0, int64_t nown, int bs, const int64_t *gkey, int64_t ng,
                       const int64_t *rowptr, const int64_t *key, double **val, hlev *H)
{
    const int64_t nnz = rowptr[nown];
    H->row0 = row0;
    H->nown = nown;
    H->bs = bs;
    H->halo = NULL;
    H->perm = NULL;
    HK_CALL(hk_damg_pattern_alloc(&hk_backend_cpu, bs, bs, nown, nown + ng, nnz, &H->A));
    memcpy(H->A.rowptr, rowptr, (size_t)(nown + 1) * sizeof *rowptr);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < nnz; p++)
        H->A.colind[p] =
            (int32_t)(key[p] < nown ? key[p] : nown + hk_damg_find_i64(gkey, ng, key[p]));
    H->A.val = *val;
    *val = NULL;
    return 0;
}

/* The records of D's rows rows[0..n) (D on be, columns colmap[c]: global ids) as the
 * neighbours receive them, [count, (column, block)...]: packed on be and downloaded (host
 * arrays, allocated): row j's block count (*cnt)[j], its record at (*at)[j] in *rec. */
static int pack_records(const hk_backend_ops *be, const hk_dist *d, stage *s, const hk_bmat *D,
                        const int64_t *colmap, const int32_t *rows, int64_t n, int64_t **cnt,
                        int64_t **at, double **rec, double **rec_dev);

int hk_damg_send_records(const hk_backend_ops *be, const hk_bmat *D, const int64_t *colmap,
                         const int32_t *rows, int64_t n, int64_t **cnt, int64_t **at, double **rec)
{
    return pack_records(be, NULL, NULL, D, colmap, rows, n, cnt, at, rec, NULL);
}

/* hk_damg_send_records with *rec in d's staging s where s is given (then not the caller's to
 * free): the records come down from be straight into pinned memory, the messages' buffer.
 * With rec_dev, for a device transport: the records stay on be (*rec_dev, the caller's to
 * free with be->dealloc; *rec NULL), nothing of them comes down. */
static int pack_records(const hk_backend_ops *be, const hk_dist *d, stage *s, const hk_bmat *D,
                        const int64_t *colmap, const int32_t *rows, int64_t n, int64_t **cnt,
                        int64_t **at, double **rec, double **rec_dev)
{
    const int bsz = D->br * D->bc;
    int ierr = 0;
    int32_t *rows_dev = NULL;
    int64_t *len_dev = NULL, *colmap_dev = NULL, *at_dev = NULL;
    double *out_dev = NULL;
    *cnt = *at = NULL;
    *rec = NULL;
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof **cnt, cnt));
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof **at, at));
    HK_TRY(hk_damg_upload(be, rows, (size_t)n * sizeof *rows, (void **)&rows_dev));
    if (n) {
        HK_TRY(be->alloc((void **)&len_dev, (size_t)n * sizeof *len_dev));
        HK_TRY(be->dist_row_lengths(D, rows_dev, n, len_dev));
        HK_TRY(hk_damg_to_host(be, *cnt, len_dev, (size_t)n * sizeof **cnt));
    }
    (*at)[0] = 0;
    for (int64_t j = 0; j < n; j++)
        (*at)[j + 1] = (*at)[j] + 1 + (*cnt)[j] * (1 + bsz);
    const int64_t len = (*at)[n];
    if (rec_dev) {
        *rec_dev = NULL;
        HK_TRY(be->alloc((void **)&out_dev, (size_t)(len + 1) * sizeof *out_dev));
    } else if (s)
        HK_TRY(hk_damg_stage_get(d, s, STAGE_SEND, (size_t)(len + 1) * sizeof **rec, (void **)rec));
    else
        HK_TRY(hk_malloc((size_t)(len + 1) * sizeof **rec, rec));
    if (len) {
        HK_TRY(
            hk_damg_upload(be, colmap, (size_t)D->nbcols * sizeof *colmap, (void **)&colmap_dev));
        HK_TRY(hk_damg_upload(be, *at, (size_t)(n + 1) * sizeof **at, (void **)&at_dev));
        if (!out_dev) HK_TRY(be->alloc((void **)&out_dev, (size_t)len * sizeof *out_dev));
        HK_TRY(be->dist_pack_rows(D, colmap_dev, rows_dev, n, at_dev, out_dev));
        if (!rec_dev && s)
            HK_TRY(hk_damg_stage_down(d, s, *rec, out_dev, (size_t)len * sizeof **rec));
        else if (!rec_dev)
            HK_TRY(be->copy_from(*rec, out_dev, (size_t)len * sizeof **rec));
    }
    if (rec_dev) {
        *rec_dev = out_dev;
        out_dev = NULL;
    }
fail:
    if (rows_dev) be->dealloc(rows_dev);
    if (len_dev) be->dealloc(len_dev);
    if (colmap_dev) be->dealloc(colmap_dev);
    if (at_dev) be->dealloc(at_dev);
    if (out_dev) be->dealloc(out_dev);
    if (ierr) {
        free(*cnt);
        free(*at);
        if (!s) free(*rec);
        *cnt = *at = NULL;
        *rec = NULL;
    }
    return ierr;
}

/* The ghosts' rows of a matrix by two exchanges over the halo: the block count of each row the
 * neighbours need (scnt), then those rows as records [count, (column, block)...] of their own
 * length (send, record j at sat[j]), one message a neighbour (no padding to the widest row);
 * *rec as received (in the staging s: the caller frees nothing of it), record j (the halo's
 * sorted ghost order: ghost k's at halo->order[k]) at (*rat)[j] (ng + 1 offsets). */
static int exchange_rows(const hk_dist *d, stage *s, hk_halo *halo, int bsz, const int64_t *scnt,
                         const int64_t *sat, const double *send, double **rec, int64_t **rat)
{
    const hk_comm *c = d->comm;
    const int64_t ng = halo->nghost;
    int ierr = 0;
    int64_t *rcnt = NULL, *at = NULL;
    double *recv = NULL;
    *rec = NULL;
    *rat = NULL;
    ierr = hk_malloc((size_t)(ng + 1) * sizeof *rcnt, &rcnt);
    if (!ierr) ierr = hk_malloc((size_t)(ng + 1) * sizeof *at, &at);
    HK_TRY(hk_comm_agree(c, ierr));
    HK_TRY(hk_halo_start(halo, scnt, rcnt, sizeof *scnt));
    HK_TRY(hk_halo_wait(halo));
    at[0] = 0;
    for (int64_t j = 0; j < ng; j++)
        at[j + 1] = at[j] + 1 + rcnt[j] * (1 + bsz);
    ierr = hk_damg_stage_get(d, s, STAGE_RECV, (size_t)(at[ng] + 1) * sizeof *recv, (void **)&recv);
    HK_TRY(hk_comm_agree(c, ierr));
    /* the receives first, then the sends, in the halo's requests (as hk_halo_start) */
    for (int j = 0; j < halo->nrecv && !ierr; j++) {
        const int64_t a = at[halo->recv_off[j]], b = at[halo->recv_off[j + 1]];
        ierr = hk_comm_irecv(c, recv + a, (size_t)(b - a) * sizeof *recv, halo->recv_rank[j],
                             DAMG_TAG_ROWS, halo->reqs, j);
    }
    for (int j = 0; j < halo->nsend && !ierr; j++) {
        const int64_t a = sat[halo->send_off[j]], b = sat[halo->send_off[j + 1]];
        ierr = hk_comm_isend(c, send + a, (size_t)(b - a) * sizeof *send, halo->send_rank[j],
                             DAMG_TAG_ROWS, halo->reqs, halo->nrecv + j);
    }
    if (!ierr) ierr = hk_comm_waitall(halo->reqs);
    HK_TRY(ierr);
    *rec = recv;
    *rat = at;
    at = NULL;
fail:
    free(rcnt);
    free(at);
    return ierr;
}

/* Whether the set-up's large messages (the ghost rows' records, the Galerkin blocks routed to
 * their owners) go device to device: where the layout has a device transport (dist.comm=nccl),
 * unless HOOKE_AMG_DEVICE_MESSAGES=0 (for measurement and tests: through the host with MPI,
 * as without one). The processes agree (the lowest value). Collective where d->dcomm. */
static int device_messages(const hk_dist *d, int *dev)
{
    *dev = 0;
    if (!d->dcomm) return 0; /* every process alike: the layout's transport is agreed */
    int on = 1;
    HK_CALL(hk_comm_agree(d->comm, hk_env_switch("HOOKE_AMG_DEVICE_MESSAGES", "1",
                                                 "device to device, the default", "0",
                                                 "through the host", 1, &on)));
    int64_t v = on;
    HK_CALL(hk_comm_min_i64(d->comm, &v, 1));
    *dev = v != 0;
    return 0;
}

/* exchange_rows between the backends' memories through the layout's device transport: the
 * counts as there (host, MPI), then the records from send_dev (on the backend, record j at
 * sat[j]) into *rec_dev (allocated on the backend, the caller's to free; the halo's sorted
 * ghost order, record j at (*rat)[j]), the work queued next waiting for them. *rcnt: the
 * received records' block counts (host, allocated). Collective. */
static int exchange_rows_dev(const hk_dist *d, hk_halo *halo, int bsz, const int64_t *scnt,
                             const int64_t *sat, const double *send_dev, double **rec_dev,
                             int64_t **rat, int64_t **rcnt)
{
    const hk_comm *c = d->comm;
    const hk_backend_ops *L = d->local;
    const int64_t ng = halo->nghost;
    int ierr = 0;
    int64_t *cnt = NULL, *at = NULL, *roff = NULL, *soff = NULL;
    double *recv = NULL;
    *rec_dev = NULL;
    *rat = *rcnt = NULL;
    ierr = hk_malloc((size_t)(ng + 1) * sizeof *cnt, &cnt);
    if (!ierr) ierr = hk_malloc((size_t)(ng + 1) * sizeof *at, &at);
    HK_TRY(hk_comm_agree(c, ierr));
    HK_TRY(hk_halo_start(halo, scnt, cnt, sizeof *scnt));
    HK_TRY(hk_halo_wait(halo));
    at[0] = 0;
    for (int64_t j = 0; j < ng; j++)
        at[j + 1] = at[j] + 1 + cnt[j] * (1 + bsz);
    ierr = L->alloc((void **)&recv, (size_t)(at[ng] + 1) * sizeof *recv);
    if (!ierr) ierr = hk_malloc(((size_t)halo->nrecv + 1) * sizeof *roff, &roff);
    if (!ierr) ierr = hk_malloc(((size_t)halo->nsend + 1) * sizeof *soff, &soff);
    HK_TRY(hk_comm_agree(c, ierr));
    /* one range a neighbour, in doubles: the records of its ghosts, of its send rows */
    for (int j = 0; j <= halo->nrecv; j++)
        roff[j] = at[halo->recv_off[j]];
    for (int j = 0; j <= halo->nsend; j++)
        soff[j] = sat[halo->send_off[j]];
    hk_dcomm_exchange_v(d->dcomm, halo->nrecv, halo->recv_rank, roff, recv, halo->nsend,
                        halo->send_rank, soff, send_dev, sizeof *recv);
    hk_dcomm_wait(d->dcomm);
    *rec_dev = recv;
    *rat = at;
    *rcnt = cnt;
    recv = NULL;
    at = cnt = NULL;
fail:
    if (recv) L->dealloc(recv);
    free(cnt);
    free(at);
    free(roff);
    free(soff);
    return ierr;
}

/* The sorted union *cols (allocated, *ncols) of the columns colmap[c] (nc, ascending) marked
 * used (cpos[c] 1, else 0) and the ghosts' columns gcols[0..ngc) (ascending); cpos[c] then a
 * used column's position in it. One merge: the owned rows' columns are in colmap's order. */
static int column_union(const int64_t *colmap, int64_t nc, int32_t *cpos, const int64_t *gcols,
                        int64_t ngc, int64_t **cols, int64_t *ncols)
{
    int64_t unsorted = 0;
#pragma omp parallel for schedule(static) reduction(+ : unsorted)
    for (int64_t c = 1; c < nc; c++)
        unsorted += colmap[c] <= colmap[c - 1];
    HK_CHECK(!unsorted, HK_ERR_INTERNAL,
             "pc=amg: the columns of a transfer operator are not ascending");
    HK_CALL(hk_malloc((size_t)(nc + ngc + 1) * sizeof **cols, cols));
    int64_t m = 0, a = 0, b = 0;
    while (a < nc || b < ngc) {
        while (a < nc && !cpos[a])
            a++;
        const int take_a = a < nc && (b >= ngc || colmap[a] <= gcols[b]);
        if (!take_a && b >= ngc) break;
        const int64_t g = take_a ? colmap[a] : gcols[b];
        if (m == 0 || (*cols)[m - 1] != g) (*cols)[m++] = g;
        if (take_a)
            cpos[a++] = (int32_t)(m - 1);
        else
            b++;
    }
    *ncols = m;
    return 0;
}

/* Xd (on be): D's rows (on be, columns colmap[c]: global ids, ascending), then the ghosts'
 * rows from the received records [count, (column, block)...] (host memory, uploaded: rec in
 * the halo's sorted ghost order, record j at rat[j], rat[ng] their length, ghost k's record
 * j = order[k]); columns are positions in the sorted union *cols (host, allocated, *ncols) of
 * the columns that occur. Only per-column and per-ghost arrays pass the host: D's columns used
 * (a mark a column, downloaded), the ghosts' columns (from the records), the union; D's blocks
 * are renamed and copied on be. */
static int ghost_matrix(const hk_backend_ops *be, const hk_dist *d, stage *s, const hk_bmat *D,
                        const int64_t *colmap, int64_t ng, const double *rec, const int64_t *rat,
                        const int64_t *order, const int64_t *rcnt, const double *rec_dev,
                        hk_bmat *Xd, int64_t **cols, int64_t *ncols);

int hk_damg_ghost_matrix(const hk_backend_ops *be, const hk_bmat *D, const int64_t *colmap,
                         int64_t ng, const double *rec, const int64_t *rat, const int64_t *order,
                         hk_bmat *Xd, int64_t **cols, int64_t *ncols)
{
    return ghost_matrix(be, NULL, NULL, D, colmap, ng, rec, rat, order, NULL, NULL, Xd, cols,
                        ncols);
}

/* The received blocks' global columns gcols[p] (ghost k's blocks at gat[k], its record at
 * grat[k]) from records on d's backend: gathered there (one double a block) and downloaded,
 * not the records (more than the gather's int32 indices reach: the records come down). */
static int record_columns_dev(const hk_dist *d, int64_t ng, int bsz, const double *rec_dev,
                              int64_t len, const int64_t *grat, const int64_t *gat, int64_t *gcols)
{
    const hk_backend_ops *L = d->local;
    const int64_t n = gat[ng];
    int ierr = 0;
    int32_t *idx = NULL;
    double *g = NULL, *h = NULL;
    if (!n) return 0;
    if (len > INT32_MAX) {
        HK_CALL(hk_malloc((size_t)len * sizeof *h, &h));
        ierr = hk_damg_to_host(L, h, rec_dev, (size_t)len * sizeof *h);
        if (!ierr) {
#pragma omp parallel for schedule(dynamic, 64)
            for (int64_t k = 0; k < ng; k++)
                for (int64_t j = 0; j < gat[k + 1] - gat[k]; j++)
                    gcols[gat[k] + j] = (int64_t)h[grat[k] + 1 + j * (1 + bsz)];
        }
        free(h);
        return ierr;
    }
    HK_TRY(hk_malloc((size_t)n * sizeof *idx, &idx));
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t k = 0; k < ng; k++)
        for (int64_t j = 0; j < gat[k + 1] - gat[k]; j++)
            idx[gat[k] + j] = (int32_t)(grat[k] + 1 + j * (1 + bsz));
    HK_TRY(L->alloc((void **)&g, (size_t)n * sizeof *g));
    HK_TRY(hk_damg_gather_blocks(d, g, rec_dev, len, 1, idx, n));
    /* the doubles into gcols' own bytes, then each one turned into its id in place */
    HK_TRY(hk_damg_to_host(L, gcols, g, (size_t)n * sizeof *g));
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < n; p++) {
        double v;
        memcpy(&v, gcols + p, sizeof v);
        gcols[p] = (int64_t)v;
    }
fail:
    free(idx);
    if (g) L->dealloc(g);
    return ierr;
}

/* hk_damg_ghost_matrix with the ghosts' columns (one a received block) in d's staging s where
 * s is given. With rec_dev (a device transport's records, on be; rec NULL): the records'
 * block counts from rcnt (record j's), their columns gathered there (record_columns_dev), and
 * the records read where they are. */
static int ghost_matrix(const hk_backend_ops *be, const hk_dist *d, stage *s, const hk_bmat *D,
                        const int64_t *colmap, int64_t ng, const double *rec, const int64_t *rat,
                        const int64_t *order, const int64_t *rcnt, const double *rec_dev,
                        hk_bmat *Xd, int64_t **cols, int64_t *ncols)
{
    const int bsz = D->br * D->bc;
    const int64_t nc = D->nbcols, nown = D->nbrows, nm = D->nnzb;
    int ierr = 0;
    int64_t *gat = NULL, *gcols = NULL, *grat = NULL; /* gat: ghost k's first block */
    int64_t *gat_dev = NULL, *grat_dev = NULL, *cols_dev = NULL;
    int32_t *cpos = NULL, *cpos_dev = NULL;
    double *rec_up = NULL;
    memset(Xd, 0, sizeof *Xd);
    *cols = NULL;
    *ncols = 0;
    HK_TRY(hk_malloc((size_t)(ng + 1) * sizeof *gat, &gat));
    HK_TRY(hk_malloc((size_t)(ng + 1) * sizeof *grat, &grat));
    gat[0] = 0;
    for (int64_t k = 0; k < ng; k++) {
        grat[k] = rat[order[k]];
        gat[k + 1] = gat[k] + (rec_dev ? rcnt[order[k]] : (int64_t)rec[grat[k]]);
    }
    const int64_t ngnnz = gat[ng];
    if (s)
        HK_TRY(hk_damg_stage_get(d, s, STAGE_SEND_COL, (size_t)(ngnnz + 1) * sizeof *gcols,
                                 (void **)&gcols));
    else
        HK_TRY(hk_malloc((size_t)(ngnnz + 1) * sizeof *gcols, &gcols));
    if (rec_dev)
        HK_TRY(record_columns_dev(d, ng, bsz, rec_dev, rat[ng], grat, gat, gcols));
    else {
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t k = 0; k < ng; k++)
            for (int64_t j = 0; j < gat[k + 1] - gat[k]; j++)
                gcols[gat[k] + j] = (int64_t)rec[grat[k] + 1 + j * (1 + bsz)];
    }
    int64_t ngc = 0;
    HK_TRY(hk_damg_sorted_unique(gcols, ngnnz, &ngc));
    /* the columns D's rows use, marked on be */
    HK_TRY(hk_malloc((size_t)(nc + 1) * sizeof *cpos, &cpos));
    HK_TRY(be->alloc((void **)&cpos_dev, (size_t)(nc + 1) * sizeof *cpos_dev));
    HK_TRY(be->dist_mark_columns(D, cpos_dev));
    if (nc) HK_TRY(hk_damg_to_host(be, cpos, cpos_dev, (size_t)nc * sizeof *cpos));
    HK_TRY(column_union(colmap, nc, cpos, gcols, ngc, cols, ncols));
    if (nc) HK_TRY(hk_damg_to_backend(be, cpos_dev, cpos, (size_t)nc * sizeof *cpos));
    /* the records as received, with the per-ghost offsets and the union */
    if (!rec_dev && s && rat[ng]) { /* rec is in the staging */
        HK_TRY(be->alloc((void **)&rec_up, (size_t)rat[ng] * sizeof *rec));
        HK_TRY(hk_damg_stage_up(d, s, rec_up, rec, (size_t)rat[ng] * sizeof *rec));
    } else if (!rec_dev)
        HK_TRY(hk_damg_upload(be, rec, (size_t)rat[ng] * sizeof *rec, (void **)&rec_up));
    HK_TRY(hk_damg_upload(be, grat, (size_t)ng * sizeof *grat, (void **)&grat_dev));
    HK_TRY(hk_damg_upload(be, gat, (size_t)(ng + 1) * sizeof *gat, (void **)&gat_dev));
    HK_TRY(hk_damg_upload(be, *cols, (size_t)*ncols * sizeof **cols, (void **)&cols_dev));
    HK_TRY(hk_damg_pattern_alloc(be, D->br, D->bc, nown + ng, *ncols, nm + ngnnz, Xd));
    HK_TRY(be->alloc((void **)&Xd->val, (size_t)((nm + ngnnz) * bsz + 1) * sizeof *Xd->val));
    HK_TRY(be->dist_extend_rows(D, cpos_dev, ng, rec_dev ? rec_dev : rec_up, grat_dev, gat_dev,
                                cols_dev, *ncols, Xd));
fail:
    free(gat);
    if (!s) free(gcols);
    free(grat);
    free(cpos);
    if (cpos_dev) be->dealloc(cpos_dev);
    if (gat_dev) be->dealloc(gat_dev);
    if (grat_dev) be->dealloc(grat_dev);
    if (cols_dev) be->dealloc(cols_dev);
    if (rec_up) be->dealloc(rec_up);
    if (ierr) {
        free(*cols);
        *cols = NULL;
        *ncols = 0;
        hk_bmat_free(Xd);
    }
    return ierr;
}

/* D (on the backend) extended by its ghosts' rows: Xd on the backend, its columns cols (global
 * ids, host). The rows the neighbours need are packed on the backend and downloaded as records,
 * exchanged, and the received ones uploaded; Xd is built there (hk_damg_ghost_matrix). X: its
 * pattern on the host (val NULL), NULL where the caller needs none; on a host-memory backend
 * (cpu) X is required and is Xd itself (Xd a view of X's arrays: free X, hk_damg_free_copy Xd). */
static int with_ghost_rows(const hk_dist *d, stage *s, hk_halo *halo, const hk_bmat *D,
                           const int64_t *colmap, hk_bmat *X, hk_bmat *Xd, int64_t **cols,
                           int64_t *ncols, double *st)
{
    double t[2];
    hk_damg_lap_start(t);
    const hk_comm *c = d->comm;
    const hk_backend_ops *L = d->local;
    const int64_t ns = halo->send_off[halo->nsend];
    int ierr = 0;
    int64_t *scnt = NULL, *sat = NULL, *rat = NULL, *rcnt = NULL;
    double *send = NULL, *rec = NULL, *send_dev = NULL, *rec_dev = NULL;
    memset(Xd, 0, sizeof *Xd);
    if (X) memset(X, 0, sizeof *X);
    *cols = NULL;
    HK_CHECK(X || !d->host_memory, HK_ERR_INTERNAL,
             "pc=amg: the ghost rows on a host-memory backend need their host matrix");
    HK_CHECK(L->dist_row_lengths && L->dist_pack_rows && L->dist_mark_columns &&
                 L->dist_extend_rows,
             HK_ERR_UNSUPPORTED,
             "pc=amg: backend %s cannot set up distributed levels (no dist_pack_rows ops); use "
             "backend=cpu or cuda",
             L->name);
    /* with a device transport the records stay on the backends: packed, sent, received and
     * read there (the same bytes as through the host) */
    int dev = 0;
    HK_TRY(device_messages(d, &dev));
    ierr = pack_records(L, d, s, D, colmap, halo->send_idx, ns, &scnt, &sat, &send,
                        dev ? &send_dev : NULL);
    HK_TRY(hk_comm_agree(c, ierr));
    hk_damg_step_lap(L, st, ST_GR_SEND, t);
    if (dev)
        HK_TRY(
            exchange_rows_dev(d, halo, D->br * D->bc, scnt, sat, send_dev, &rec_dev, &rat, &rcnt));
    else
        HK_TRY(exchange_rows(d, s, halo, D->br * D->bc, scnt, sat, send, &rec, &rat));
    hk_damg_step_lap(L, st, ST_GR_EXCHANGE, t);
    if (st) { /* the messages' bytes (MSG_GR_*) */
        double *m = st + 2 * DAMG_NSTEPS;
        m[MSG_GR_SENT] += (double)(ns + sat[ns]) * 8;
        m[MSG_GR_RECV] += (double)(halo->nghost + rat[halo->nghost]) * 8;
        m[MSG_GR_COUNT] += 2.0 * halo->nsend;
        m[MSG_GR_ROUNDS] += 1;
        for (int j = 0; j < halo->nsend; j++) {
            const double b = (double)(sat[halo->send_off[j + 1]] - sat[halo->send_off[j]]) * 8;
            if (b > m[MSG_GR_LARGEST]) m[MSG_GR_LARGEST] = b;
        }
    }
    ierr = ghost_matrix(L, d, s, D, colmap, halo->nghost, rec, rat, halo->order, rcnt, rec_dev, Xd,
                        cols, ncols);
    if (!ierr && X) ierr = hk_damg_pattern_to_host(d, Xd, X);
    if (ierr) {
        hk_bmat_free(Xd);
        if (X) memset(X, 0, sizeof *X);
        free(*cols);
        *cols = NULL;
    }
    hk_damg_step_lap(L, st, ST_GR_BUILD, t);
fail:
    /* (the backend's stream has the exchange's sends and receives done before these go) */
    if (send_dev) L->dealloc(send_dev);
    if (rec_dev) L->dealloc(rec_dev);
    free(scnt);
    free(sat);
    free(rat);
    free(rcnt);
    return ierr;
}

/* The first n rows of X (nnz blocks: read from a host copy, X may be on a device) as a view
 * (shares X's arrays). */
static hk_bmat rows_view(const hk_bmat *X, int64_t n, int64_t nnz)
{
    hk_bmat v = *X;
    v.nbrows = n;
    v.nnzb = nnz;
    return v;
}

/* The status ierr agreed, then R's blocks (rnnz) and P's owned blocks (pnnz) summed over all
 * processes: a matrix whose pattern is not symmetric has more of one. Collective. */
static int blocks_check(const hk_comm *c, int ierr, int64_t rnnz, int64_t pnnz)
{
    int64_t count[2] = {rnnz, pnnz};
    ierr = hk_comm_agree(c, ierr);
    if (!ierr) ierr = hk_comm_sum_i64(c, count, 2);
    if (!ierr && count[0] != count[1])
        ierr = hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                            "pc=amg on several processes needs a matrix whose pattern is "
                            "symmetric (an entry (i, j) stored where (j, i) is), but R = P^T "
                            "has %lld blocks and P %lld; store both entries of each pair, or "
                            "run on one process",
                            (long long)count[0], (long long)count[1]);
    return ierr;
}

/* The rows [crow0, crow0 + nagg) of R = P^T with the fine columns as global ids on the host
 * (the host's way, which HOOKE_AMG_CHECK_TRANSFER compares with restriction's), from Pext:
 * P's rows of H's owned nodes, then of its ghosts (their columns positions in cP). A fine node
 * whose P row reads an owned coarse unknown is owned or a ghost (a neighbour of the aggregate
 * in A's pattern, which is symmetric), so R's rows need no message: each is P's column read
 * downwards, owned nodes in H's order, then the ghosts ascending, which is the order of R's
 * columns as a distributed operator (hk_damg_dmat_create then finds them sorted). Every process
 * checks the count: the blocks of R over all processes are the blocks of P. val_out NULL: the
 * pattern only (the values made on a device: Rt's). Collective. */
static int restriction_rows(const hk_comm *c, const hlev *H, const hk_bmat *Pext, const int64_t *cP,
                            int64_t crow0, int64_t nagg, int64_t **rowptr_out, int64_t **gcol_out,
                            double **val_out)
{
    const int br = Pext->br, bc = Pext->bc, bb = br * bc;
    const int64_t nrows = Pext->nbrows, nch = omp_get_max_threads();
    int ierr = 0;
    int64_t *rowptr = NULL, *gcol = NULL, *fill = NULL; /* fill: per chunk of rows, per J */
    double *val = NULL;
    ierr = hk_calloc((size_t)nagg + 1, sizeof *rowptr, &rowptr);
    if (!ierr) ierr = hk_calloc((size_t)(nagg * nch + 1), sizeof *fill, &fill);
    /* a transpose by chunks of Pext's rows: each chunk counts its blocks per coarse row, a
     * chunk's blocks of row J follow the earlier chunks', so every row of R lists its fine
     * nodes in Pext's order, whatever thread runs a chunk */
    if (!ierr) {
#pragma omp parallel for schedule(static, 1)
        for (int64_t t = 0; t < nch; t++)
            for (int64_t i = nrows * t / nch; i < nrows * (t + 1) / nch; i++)
                for (int64_t p = Pext->rowptr[i]; p < Pext->rowptr[i + 1]; p++) {
                    const int64_t J = cP[Pext->colind[p]] - crow0;
                    if (J >= 0 && J < nagg) fill[t * nagg + J]++;
                }
        for (int64_t J = 0; J < nagg; J++) {
            int64_t q = rowptr[J];
            for (int64_t t = 0; t < nch; t++) {
                const int64_t k = fill[t * nagg + J];
                fill[t * nagg + J] = q;
                q += k;
            }
            rowptr[J + 1] = q;
        }
    }
    const int64_t rnnz = ierr ? 0 : rowptr[nagg];
    if (!ierr) ierr = hk_malloc((size_t)(rnnz + 1) * sizeof *gcol, &gcol);
    if (!ierr && val_out) ierr = hk_malloc((size_t)(rnnz + 1) * bb * sizeof *val, &val);
    if (!ierr) {
#pragma omp parallel for schedule(static, 1)
        for (int64_t t = 0; t < nch; t++)
            for (int64_t i = nrows * t / nch; i < nrows * (t + 1) / nch; i++) {
                const int64_t g = i < H->nown ? hlev_gid(H, i) : H->halo->ghost[i - H->nown];
                for (int64_t p = Pext->rowptr[i]; p < Pext->rowptr[i + 1]; p++) {
                    const int64_t J = cP[Pext->colind[p]] - crow0;
                    if (J < 0 || J >= nagg) continue;
                    const int64_t q = fill[t * nagg + J]++;
                    gcol[q] = g;
                    if (!val) continue;
                    const double *a = Pext->val + p * bb;
                    double *b = val + q * bb;
                    for (int r = 0; r < br; r++) /* the block transposed, as bmat_transpose */
                        for (int k = 0; k < bc; k++)
                            b[k * br + r] = a[r * bc + k];
                }
            }
    }
    ierr = blocks_check(c, ierr, rnnz, ierr ? 0 : Pext->rowptr[H->nown]);
    free(fill);
    if (ierr) {
        free(rowptr);
        free(gcol);
        free(val);
        return ierr;
    }
    *rowptr_out = rowptr;
    *gcol_out = gcol;
    if (val_out) *val_out = val;
    return 0;
}

/* R = P^T's rows of this process's coarse unknowns [crow0, crow0 + nagg), where P's blocks
 * are: Pextd (P's owned and ghost rows, columns positions in cP, nP of them, ascending)
 * transposed by the backend into Rt (by the caller, for the Galerkin product too), whose rows of
 * those unknowns list their fine rows in Pextd's order (owned nodes in H's order, then the ghosts
 * ascending: the order of R's columns as a distributed operator), the blocks transposed. Out: *rp
 * (on the backend, nagg + 1) the rows' first blocks in Rt (an unknown no fine row reads: an empty
 * row), *r0 the first of them, *rnnz their blocks, *pnnz P's owned blocks. Every process checks the
 * count: the blocks of R over all processes are the blocks of P. Collective. */
static int restriction(const hk_dist *d, const hlev *H, const hk_bmat *Pextd, const int64_t *cP,
                       int64_t nP, int64_t crow0, int64_t nagg, const hk_bmat *Rt, int64_t **rp,
                       int64_t *r0, int64_t *rnnz, int64_t *pnnz)
{
    const hk_backend_ops *L = d->local;
    const int64_t j0 = hk_lower_bound_i64(cP, 0, nP, crow0);
    const int64_t j1 = hk_lower_bound_i64(cP, 0, nP, crow0 + nagg);
    int64_t *at = NULL, *rows = NULL;
    *rp = NULL;
    *r0 = *rnnz = *pnnz = 0;
    int ierr = hk_malloc((size_t)(j1 - j0 + 1) * sizeof *at, &at);
    if (!ierr) ierr = hk_malloc((size_t)(nagg + 1) * sizeof *rows, &rows);
    if (!ierr) ierr = L->copy_from(at, Rt->rowptr + j0, (size_t)(j1 - j0 + 1) * sizeof *at);
    if (!ierr) ierr = L->copy_from(pnnz, Pextd->rowptr + H->nown, sizeof *pnnz);
    if (!ierr) {
        for (int64_t J = 0, k = j0; J < nagg; J++) {
            rows[J] = at[k - j0];
            if (k < j1 && cP[k] == crow0 + J) k++;
        }
        rows[nagg] = at[j1 - j0];
        *r0 = at[0];
        *rnnz = at[j1 - j0] - at[0];
        ierr = hk_damg_upload(L, rows, (size_t)(nagg + 1) * sizeof *rows, (void **)rp);
    }
    ierr = blocks_check(d->comm, ierr, *rnnz, *pnnz);
    free(at);
    free(rows);
    return ierr;
}

/* R's operator (level l's, into L->R) from Rt's rows rp (restriction): its columns are the
 * fine rows of Pextd that R reads (dist_read_columns over R's blocks: the owned ones' ranks
 * are their positions among the owned columns read, the ghosts' follow), its ghosts those of
 * H's halo that R reads (the ghost rows' ranks downloaded: one per ghost). Collective. */
static int restriction_operator(hk_pc *pc, damg *a, int l, const hlev *H, const hk_bmat *Rt,
                                const int64_t *rp, int64_t r0, int64_t rnnz, int64_t nagg,
                                const int32_t *inv0, int split)
{
    const hk_dist *d = a->d;
    const hk_backend_ops *L = d->local;
    const int64_t nown = H->nown, ngh = H->halo->nghost, bb = (int64_t)Rt->br * Rt->bc;
    int32_t *rank = NULL, *list = NULL, *grank = NULL;
    int64_t *ghost = NULL, nread = 0, ng = 0;
    double t[2];
    hk_damg_lap_start(t);
    int ierr = L->alloc((void **)&rank, (size_t)(nown + ngh + 1) * sizeof *rank);
    if (!ierr) ierr = L->alloc((void **)&list, (size_t)(nown + ngh + 1) * sizeof *list);
    if (!ierr)
        ierr = L->dist_read_columns(Rt->colind + r0, rnnz, nown + ngh, rank, list, &nread);
    if (!ierr) ierr = hk_malloc((size_t)(ngh + 1) * sizeof *grank, &grank);
    if (!ierr) ierr = hk_malloc((size_t)(ngh + 1) * sizeof *ghost, &ghost);
    if (!ierr && ngh) ierr = hk_damg_to_host(L, grank, rank + nown, (size_t)ngh * sizeof *grank);
    if (!ierr)
        for (int64_t k = 0; k < ngh; k++)
            if (grank[k] >= 0) ghost[ng++] = H->halo->ghost[k];
    free(grank);
    ierr = hk_comm_agree(d->comm, ierr);
    if (!ierr) {
        ierr = hk_damg_dmat_create_dev(d, pc->prec, nagg, Rt->br, Rt->bc, rnnz, rp, Rt->colind + r0,
                                       rank, Rt->val + r0 * bb, nread - ng, list, ghost, ng,
                                       H->row0, nown, inv0, split, a->st, t, &a->lev[l].R);
        ghost = NULL;
        list = NULL;
    }
    free(ghost);
    if (list) L->dealloc(list);
    if (rank) L->dealloc(rank);
    return ierr;
}

/* P's operator (level l's, into L->P): Pextd's owned rows, their columns positions in cP; the
 * positions P reads (dist_read_columns, their ranks downloaded: one per coarse column) make on
 * the host the table of their local columns, [the owned coarse columns read, the ghosts],
 * which the backend applies to the blocks. Collective. */
static int prolongator_operator(hk_pc *pc, damg *a, int l, const hlev *H, const hk_bmat *Pextd,
                                const int64_t *cP, int64_t nP, int64_t crow0, int64_t nagg,
                                int64_t pnnz, int split)
{
    const hk_dist *d = a->d;
    const hk_backend_ops *L = d->local;
    int32_t *rank = NULL, *map = NULL, *bcol = NULL, *bcol_dev = NULL;
    int64_t *ghost = NULL, nread = 0, nbc = 0, ng = 0;
    double t[2];
    hk_damg_lap_start(t);
    int ierr = L->alloc((void **)&rank, (size_t)(nP + 1) * sizeof *rank);
    if (!ierr) ierr = L->dist_read_columns(Pextd->colind, pnnz, nP, rank, NULL, &nread);
    if (!ierr) ierr = hk_malloc((size_t)(nP + 1) * sizeof *map, &map);
    if (!ierr) ierr = hk_malloc((size_t)(nP + 1) * sizeof *bcol, &bcol);
    if (!ierr) ierr = hk_malloc((size_t)(nP + 1) * sizeof *ghost, &ghost);
    if (!ierr && nP) ierr = hk_damg_to_host(L, map, rank, (size_t)nP * sizeof *map);
    if (!ierr) {
        for (int64_t j = 0; j < nP; j++) /* the owned coarse columns read, ascending */
            if (map[j] >= 0 && cP[j] >= crow0 && cP[j] < crow0 + nagg) {
                bcol[nbc] = (int32_t)(cP[j] - crow0);
                map[j] = (int32_t)nbc++;
            }
        for (int64_t j = 0; j < nP; j++) /* then the ghosts, ascending */
            if (map[j] >= 0 && (cP[j] < crow0 || cP[j] >= crow0 + nagg)) {
                ghost[ng] = cP[j];
                map[j] = (int32_t)(nbc + ng++);
            }
        if (nP) ierr = hk_damg_to_backend(L, rank, map, (size_t)nP * sizeof *map);
    }
    if (!ierr) ierr = hk_damg_upload(L, bcol, (size_t)nbc * sizeof *bcol, (void **)&bcol_dev);
    ierr = hk_comm_agree(d->comm, ierr);
    if (!ierr) {
        ierr = hk_damg_dmat_create_dev(
            d, pc->prec, H->nown, Pextd->br, Pextd->bc, pnnz, Pextd->rowptr, Pextd->colind, rank,
            Pextd->val, nbc, bcol_dev, ghost, ng, crow0, nagg, NULL, split, a->st, t, &a->lev[l].P);
        ghost = NULL;
        bcol_dev = NULL;
    }
    free(map);
    free(bcol);
    free(ghost);
    if (bcol_dev) L->dealloc(bcol_dev);
    if (rank) L->dealloc(rank);
    return ierr;
}

/* Whether n bytes at x and y on the process's backend are equal: *same cleared where not. */
static int same_bytes(const hk_backend_ops *L, const void *x, const void *y, size_t n, int *same)
{
    int eq = 1;
    if (n && (!x || !y)) eq = x == y;
    else if (n)
        HK_CALL(L->mem_equal(x, y, n, &eq));
    *same &= eq;
    return 0;
}

/* The first thing in which operators m and h differ ("" where none): pattern, values, owned
 * columns read, split, ghosts and halo plan. */
static int dmat_compare(const dmat *m, const dmat *h, const char **what)
{
    const hk_backend_ops *L = m->d->local;
    const hk_halo *a = m->halo, *b = h->halo;
    const int64_t nnz = m->M.nnzb;
    const size_t vb = (size_t)(nnz * m->br * m->bc) * (m->v32 ? sizeof(float) : sizeof(double));
    int same = m->nrows == h->nrows && m->nbc == h->nbc && m->ng == h->ng && m->ns == h->ns &&
               nnz == h->M.nnzb && m->M.nbcols == h->M.nbcols;
    *what = "";
    if (!same) {
        *what = "its sizes (rows, blocks, owned columns read, ghosts, sends)";
        return 0;
    }
    same = !memcmp(m->ghost, h->ghost, (size_t)m->ng * sizeof *m->ghost) &&
           a->nsend == b->nsend && a->nrecv == b->nrecv &&
           !memcmp(a->send_rank, b->send_rank, (size_t)a->nsend * sizeof *a->send_rank) &&
           !memcmp(a->recv_rank, b->recv_rank, (size_t)a->nrecv * sizeof *a->recv_rank) &&
           !memcmp(a->send_off, b->send_off, (size_t)(a->nsend + 1) * sizeof *a->send_off) &&
           !memcmp(a->recv_off, b->recv_off, (size_t)(a->nrecv + 1) * sizeof *a->recv_off) &&
           !memcmp(a->send_idx, b->send_idx, (size_t)m->ns * sizeof *a->send_idx);
    if (!same) {
        *what = "its ghosts or halo plan";
        return 0;
    }
    HK_CALL(same_bytes(L, m->M.rowptr, h->M.rowptr, (size_t)(m->nrows + 1) * sizeof(int64_t),
                       &same));
    HK_CALL(same_bytes(L, m->M.colind, h->M.colind, (size_t)nnz * sizeof(int32_t), &same));
    if (!same) {
        *what = "its pattern";
        return 0;
    }
    HK_CALL(same_bytes(L, m->bcol_dev, h->bcol_dev, (size_t)m->nbc * sizeof(int32_t), &same));
    if (!same) {
        *what = "its owned columns read";
        return 0;
    }
    same = m->nint == h->nint && m->nzint == h->nzint;
    if (same && m->nint)
        HK_CALL(same_bytes(L, m->ypos_dev, h->ypos_dev, (size_t)m->nrows * sizeof(int32_t), &same));
    if (!same) {
        *what = "its split (interior rows, ypos)";
        return 0;
    }
    HK_CALL(same_bytes(L, m->v32 ? (void *)m->v32 : (void *)m->M.val,
                       h->v32 ? (void *)h->v32 : (void *)h->M.val, vb, &same));
    if (!same) *what = "its values";
    return 0;
}

/* HOOKE_AMG_CHECK_TRANSFER=1 (tests): level l's R and P, made where P's blocks are, against the
 * operators the host makes from Pextd's pattern downloaded (global columns, hk_damg_dmat_create):
 * byte for byte, else an error naming what differs. Collective. */
static int transfer_check(hk_pc *pc, damg *a, int l, const hlev *H, const hk_bmat *Pextd,
                          const hk_bmat *Rt, int64_t r0, const int64_t *cP, int64_t crow0,
                          int64_t nagg, const int32_t *inv0, int split_r, int split_p)
{
    const hk_dist *d = a->d;
    const dlev *L = &a->lev[l];
    const int bb = Rt->br * Rt->bc;
    hk_bmat X = {0};
    int64_t *rp = NULL, *gc = NULL;
    double *vv = NULL;
    dmat *Rh = NULL, *Ph = NULL;
    const char *wr = "", *wp = "";
    int ierr = hk_damg_pattern_to_host(d, Pextd, &X);
    HK_TRY(hk_comm_agree(d->comm, ierr));
    HK_TRY(restriction_rows(d->comm, H, &X, cP, crow0, nagg, &rp, &gc,
                            d->host_memory ? &vv : NULL));
    HK_TRY(hk_damg_dmat_create(d, pc->prec, nagg, Rt->br, Rt->bc, rp, gc, vv, Rt->val + r0 * bb,
                               H->row0, H->nown, inv0, split_r, NULL, &Rh));
    free(gc);
    gc = NULL;
    ierr = hk_malloc((size_t)(X.rowptr[H->nown] + 1) * sizeof *gc, &gc);
    if (!ierr)
        for (int64_t p = 0; p < X.rowptr[H->nown]; p++)
            gc[p] = cP[X.colind[p]];
    HK_TRY(hk_comm_agree(d->comm, ierr));
    HK_TRY(hk_damg_dmat_create(d, pc->prec, H->nown, Pextd->br, Pextd->bc, X.rowptr, gc, X.val,
                               Pextd->val, crow0, nagg, NULL, split_p, NULL, &Ph));
    ierr = dmat_compare(L->R, Rh, &wr);
    if (!ierr) ierr = dmat_compare(L->P, Ph, &wp);
    if (!ierr && (*wr || *wp))
        ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                            "HOOKE_AMG_CHECK_TRANSFER: level %d's %s made from the device's "
                            "blocks differs from the host's in %s",
                            l, *wr ? "R" : "P", *wr ? wr : wp);
    ierr = hk_comm_agree(d->comm, ierr);
fail:
    hk_damg_dmat_destroy(Rh);
    hk_damg_dmat_destroy(Ph);
    free(rp);
    free(gc);
    free(vv);
    hk_damg_free_copy(d, &X);
    return ierr;
}

/* HOOKE_AMG_CHECK_TRANSFER=1 (tests): level j's operator, made where its rows H are
 * (coarse_operator), against the one the host makes from their global columns
 * (hk_damg_dmat_create): byte for byte, else an error naming what differs. Collective. */
static int coarse_check(hk_pc *pc, damg *a, int j, const hlev *H, int split)
{
    const hk_dist *d = a->d;
    const dmat *A = a->lev[j].A;
    const int64_t nown = H->nown, nnz = H->A.nnzb;
    int64_t *gc = NULL;
    dmat *Ah = NULL;
    const char *what = "";
    int ierr = hk_malloc((size_t)(nnz + 1) * sizeof *gc, &gc);
    if (!ierr)
        for (int64_t p = 0; p < nnz; p++) {
            const int32_t col = H->A.colind[p];
            gc[p] = col < nown ? H->row0 + col : A->ghost[col - nown];
        }
    HK_TRY(hk_comm_agree(d->comm, ierr));
    HK_TRY(hk_damg_dmat_create(d, pc->prec, nown, H->bs, H->bs, H->A.rowptr, gc, H->A.val,
                               d->host_memory ? NULL : H->Ad.val, H->row0, nown, NULL, split, NULL,
                               &Ah));
    ierr = dmat_compare(A, Ah, &what);
    if (!ierr && *what)
        ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                            "HOOKE_AMG_CHECK_TRANSFER: level %d's operator made where its rows "
                            "are differs from the host's in %s",
                            j, what);
    ierr = hk_comm_agree(d->comm, ierr);
fail:
    hk_damg_dmat_destroy(Ah);
    free(gc);
    return ierr;
}

/* The blocks of M (on the process's backend; its rows and columns global ids rc[], ascending)
 * whose row is owned elsewhere (not in [crow0, crow0 + nown)), for route: rc ascending keeps
 * this process's rows together, so the others are M's first and last rows, whose blocks (a
 * prefix and a suffix of M's arrays) come down with M's rowptr into the staging, nothing else
 * (on the cpu M's own arrays are read); their global columns are made on the threads. */
static int others_rows(const hk_dist *d, stage *s, const hk_bmat *M, const int64_t *rc,
                       int64_t crow0, int64_t nown, routed *X)
{
    const int bsz = M->br * M->bc;
    const int64_t nr = M->nbrows;
    int64_t unsorted = 0;
    memset(X, 0, sizeof *X);
    HK_CALL(device_messages(d, &X->dev)); /* collective: before any failure of one process */
#pragma omp parallel for schedule(static) reduction(+ : unsorted)
    for (int64_t i = 1; i < nr; i++)
        unsorted += rc[i] <= rc[i - 1];
    HK_CHECK(!unsorted, HK_ERR_INTERNAL,
             "pc=amg: the local coarse unknowns of a Galerkin product are not ascending");
    X->nr = nr;
    X->lo = hk_lower_bound_i64(rc, 0, nr, crow0);
    X->hi = hk_lower_bound_i64(rc, 0, nr, crow0 + nown);
    int64_t *rowptr = M->rowptr;
    if (!d->host_memory) {
        HK_CALL(hk_damg_stage_get(d, s, STAGE_SEND_PTR, (size_t)(nr + 1) * sizeof *rowptr,
                                  (void **)&rowptr));
        HK_CALL(hk_damg_stage_down(d, s, rowptr, M->rowptr, (size_t)(nr + 1) * sizeof *rowptr));
    }
    X->rowptr = rowptr;
    const int64_t a = rowptr[X->lo], b = rowptr[X->hi], nnz = rowptr[nr], ns = a + (nnz - b);
    X->a = a;
    X->b = b;
    const int32_t *pre = M->colind, *suf = M->colind + b; /* the sent blocks' local columns */
    X->pre = M->val;
    X->suf = M->val + b * bsz;
    if (!d->host_memory) {
        int32_t *col = NULL;
        double *val = NULL;
        /* the blocks come down only for the host's messages: a device transport sends them
         * from M's own (X->pre, X->suf as set above) */
        HK_CALL(
            hk_damg_stage_get(d, s, STAGE_SEND_I32, (size_t)(ns + 1) * sizeof *col, (void **)&col));
        if (!X->dev)
            HK_CALL(hk_damg_stage_get(d, s, STAGE_SEND, (size_t)(ns * bsz + 1) * sizeof *val,
                                      (void **)&val));
        if (a) {
            HK_CALL(hk_damg_stage_down(d, s, col, M->colind, (size_t)a * sizeof *col));
            if (val)
                HK_CALL(hk_damg_stage_down(d, s, val, M->val, (size_t)(a * bsz) * sizeof *val));
        }
        if (nnz > b) {
            HK_CALL(
                hk_damg_stage_down(d, s, col + a, M->colind + b, (size_t)(nnz - b) * sizeof *col));
            if (val)
                HK_CALL(hk_damg_stage_down(d, s, val + a * bsz, M->val + b * bsz,
                                           (size_t)((nnz - b) * bsz) * sizeof *val));
        }
        pre = col;
        suf = col + a;
        if (val) {
            X->pre = val;
            X->suf = val + a * bsz;
        }
    }
    int64_t *gcol = NULL;
    HK_CALL(
        hk_damg_stage_get(d, s, STAGE_SEND_COL, (size_t)(ns + 1) * sizeof *gcol, (void **)&gcol));
    const int64_t lo = X->lo, hi = X->hi;
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t i = 0; i < lo + (nr - hi); i++) {
        const int64_t I = i < lo ? i : hi + (i - lo);
        for (int64_t p = rowptr[I]; p < rowptr[I + 1]; p++)
            gcol[I < lo ? p : a + (p - b)] = rc[I < lo ? pre[p] : suf[p - b]];
    }
    X->gcol = gcol;
    return 0;
}

/* HOOKE_AMG_CHECK_TRANSFER: the levels whose coarse operator galerkin_check passed (tests) */
static int64_t galerkin_checked;

int64_t hk_damg_galerkin_checked(void)
{
    return galerkin_checked;
}

/* Every process's rows of X (host: rowptr, val; row i's global id gid[i], block p's global
 * column gcol[p]) gathered into *G on every process (cpu): nglob x ncols blocks, each row's
 * columns sorted. Collective. */
static int gather_global(const hk_comm *c, const hk_bmat *X, const int64_t *gid,
                         const int64_t *gcol, int64_t nglob, int64_t ncols, hk_bmat *G)
{
    const int P = hk_comm_size(c);
    const int64_t n = X->nbrows, nnz = X->rowptr[n], bb = (int64_t)X->br * X->bc;
    int64_t mine[2] = {n, nnz}, *all = NULL, *len = NULL, *rows = NULL, *lens = NULL, *cols = NULL;
    int64_t *at = NULL, *perm = NULL;
    double *vals = NULL;
    size_t *cnt = NULL;
    int ierr = hk_malloc(2 * (size_t)P * sizeof *all, &all);
    if (!ierr) ierr = hk_malloc((size_t)P * sizeof *cnt, &cnt);
    if (!ierr) ierr = hk_malloc((size_t)(n + 1) * sizeof *len, &len);
    HK_TRY(hk_comm_agree(c, ierr));
    HK_TRY(hk_comm_allgather(c, mine, sizeof mine, all));
    int64_t N = 0, NZ = 0;
    for (int q = 0; q < P; q++) {
        N += all[2 * q];
        NZ += all[2 * q + 1];
    }
    for (int64_t i = 0; i < n; i++)
        len[i] = X->rowptr[i + 1] - X->rowptr[i];
    ierr = hk_malloc((size_t)(N + 1) * sizeof *rows, &rows);
    if (!ierr) ierr = hk_malloc((size_t)(N + 1) * sizeof *lens, &lens);
    if (!ierr) ierr = hk_malloc((size_t)(NZ + 1) * sizeof *cols, &cols);
    if (!ierr) ierr = hk_malloc((size_t)(NZ * bb + 1) * sizeof *vals, &vals);
    if (!ierr) ierr = hk_calloc((size_t)nglob + 2, sizeof *at, &at);
    if (!ierr) ierr = hk_malloc((size_t)(NZ + 1) * sizeof *perm, &perm);
    if (!ierr && N != nglob)
        ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                            "HOOKE_AMG_CHECK_TRANSFER: %lld rows gathered for a level of %lld",
                            (long long)N, (long long)nglob);
    HK_TRY(hk_comm_agree(c, ierr));
    for (int q = 0; q < P; q++)
        cnt[q] = (size_t)all[2 * q] * sizeof(int64_t);
    HK_TRY(hk_comm_allgatherv(c, gid, (size_t)n * sizeof *gid, rows, cnt));
    HK_TRY(hk_comm_allgatherv(c, len, (size_t)n * sizeof *len, lens, cnt));
    for (int q = 0; q < P; q++)
        cnt[q] = (size_t)all[2 * q + 1] * sizeof(int64_t);
    HK_TRY(hk_comm_allgatherv(c, gcol, (size_t)nnz * sizeof *gcol, cols, cnt));
    for (int q = 0; q < P; q++)
        cnt[q] = (size_t)(all[2 * q + 1] * bb) * sizeof(double);
    HK_TRY(hk_comm_allgatherv(c, X->val, (size_t)(nnz * bb) * sizeof(double), vals, cnt));
    HK_TRY(hk_bmat_alloc(&hk_backend_cpu, X->br, X->bc, nglob, ncols, NZ, G));
    for (int64_t k = 0; k < N; k++)
        at[rows[k] + 1] = lens[k];
    for (int64_t r = 0; r < nglob; r++)
        at[r + 1] += at[r];
    memcpy(G->rowptr, at, (size_t)(nglob + 1) * sizeof *at);
    for (int64_t k = 0, p = 0; k < N; k++) /* each gathered row's blocks, in its order */
        for (int64_t e = 0; e < lens[k]; e++, p++)
            perm[at[rows[k]] + e] = p;
    for (int64_t r = 0; r < nglob; r++) { /* a row's columns sorted (insertion: test sizes) */
        for (int64_t e = G->rowptr[r] + 1; e < G->rowptr[r + 1]; e++)
            for (int64_t f = e; f > G->rowptr[r] && cols[perm[f - 1]] > cols[perm[f]]; f--) {
                const int64_t t = perm[f];
                perm[f] = perm[f - 1];
                perm[f - 1] = t;
            }
        for (int64_t e = G->rowptr[r]; e < G->rowptr[r + 1]; e++) {
            G->colind[e] = (int32_t)cols[perm[e]];
            memcpy(G->val + e * bb, vals + perm[e] * bb, (size_t)bb * sizeof *vals);
        }
    }
fail:
    free(all);
    free(cnt);
    free(len);
    free(rows);
    free(lens);
    free(cols);
    free(vals);
    free(at);
    free(perm);
    return ierr;
}

/* HOOKE_AMG_CHECK_TRANSFER=1 (tests): level l + 1's operator (its rows Hn, ghost: their ghosts'
 * global ids) against the one-process Galerkin product of level l's A (its rows H) and P (the
 * owned rows of Pextd, columns cP) gathered on every process: exactly symmetric (each block
 * below the diagonal the transpose of its mirror, each diagonal block symmetric, bit for bit),
 * the product's pattern, its values to 1e-12 of its largest; else an error naming what
 * differs. Collective. */
static int galerkin_check(const hk_dist *d, const hlev *H, const hk_bmat *Pextd, const int64_t *cP,
                          int64_t nglob_c, const hlev *Hn, const int64_t *ghost)
{
    const hk_comm *c = d->comm;
    const hk_backend_ops *cpu = &hk_backend_cpu;
    hk_bmat Ah = {0}, Ph = {0}, Ch = {0}, Ag = {0}, Pg = {0}, Cg = {0}, Rg = {0}, APg = {0};
    hk_bmat Ref = {0};
    int64_t *gid = NULL, *gcol = NULL;
    const char *what = NULL;
    int ierr = 0;
    int64_t nglob_f = 0, nown = H->nown;
    HK_TRY(hk_comm_agree(c, hk_comm_sum_i64(c, &nown, 1)));
    nglob_f = nown;
    /* host copies of A's rows, P's, A_c's (views on the cpu; level 0's A on a device is only
     * there) */
    if (d->host_memory) {
        Ah = H->A;
        Ph = *Pextd;
        Ch = Hn->A;
    } else {
        ierr = hk_bmat_to_host(&H->Ad, &Ah);
        if (!ierr) ierr = hk_bmat_to_host(Pextd, &Ph);
        if (!ierr) ierr = hk_bmat_to_host(&Hn->Ad, &Ch);
    }
    const int64_t cb = (int64_t)Hn->bs * Hn->bs;
    HK_TRY(hk_comm_agree(c, ierr));
    /* gathered: A (global rows and columns), P's owned rows, A_c's */
    const int64_t mx = Ah.nnzb > Ch.nnzb ? Ah.nnzb : Ch.nnzb;
    ierr = hk_malloc((size_t)(H->nown + Hn->nown + 1) * sizeof *gid, &gid);
    if (!ierr) ierr = hk_malloc((size_t)(mx + Ph.rowptr[H->nown] + 1) * sizeof *gcol, &gcol);
    HK_TRY(hk_comm_agree(c, ierr));
    for (int64_t i = 0; i < H->nown; i++)
        gid[i] = hlev_gid(H, i);
    for (int64_t p = 0; p < Ah.nnzb; p++)
        gcol[p] = hlev_gcol(H, Ah.colind[p]);
    Ah.nbrows = H->nown;
    HK_TRY(gather_global(c, &Ah, gid, gcol, nglob_f, nglob_f, &Ag));
    hk_bmat Pv = Ph;
    Pv.nbrows = H->nown;
    Pv.nnzb = Ph.rowptr[H->nown];
    for (int64_t p = 0; p < Pv.nnzb; p++)
        gcol[p] = cP[Ph.colind[p]];
    HK_TRY(gather_global(c, &Pv, gid, gcol, nglob_f, nglob_c, &Pg));
    for (int64_t i = 0; i < Hn->nown; i++)
        gid[i] = Hn->row0 + i;
    for (int64_t p = 0; p < Ch.nnzb; p++) {
        const int32_t col = Ch.colind[p];
        gcol[p] = col < Hn->nown ? Hn->row0 + col : ghost[col - Hn->nown];
    }
    HK_TRY(gather_global(c, &Ch, gid, gcol, nglob_c, nglob_c, &Cg));
    /* the one-process product, then the comparisons (the same on every process) */
    ierr = cpu->bmat_transpose(&Pg, &Rg);
    if (!ierr) ierr = cpu->bmat_spgemm(&Ag, &Pg, &APg);
    if (!ierr) ierr = cpu->bmat_spgemm(&Rg, &APg, &Ref);
    if (!ierr && (Ref.nnzb != Cg.nnzb ||
                  memcmp(Ref.rowptr, Cg.rowptr, (size_t)(nglob_c + 1) * sizeof *Ref.rowptr) ||
                  memcmp(Ref.colind, Cg.colind, (size_t)Ref.nnzb * sizeof *Ref.colind)))
        what = "its pattern differs from the gathered product's";
    if (!ierr && !what) {
        const int bs = Cg.br;
        double big = 0, diff = 0;
        for (int64_t e = 0; e < Ref.nnzb * cb; e++) {
            big = fmax(big, fabs(Ref.val[e]));
            diff = fmax(diff, fabs(Ref.val[e] - Cg.val[e]));
        }
        if (!(diff <= 1e-12 * big)) what = "its values differ from the gathered product's";
        for (int64_t i = 0; i < nglob_c && !what; i++)
            for (int64_t p = Cg.rowptr[i]; p < Cg.rowptr[i + 1] && !what; p++) {
                const int64_t m = hk_find_block(Cg.rowptr, Cg.colind, Cg.colind[p], (int32_t)i);
                if (m < 0) {
                    what = "a block has no mirror";
                    break;
                }
                for (int r = 0; r < bs; r++)
                    for (int q = 0; q < bs; q++)
                        if (memcmp(Cg.val + p * cb + r * bs + q, Cg.val + m * cb + q * bs + r,
                                   sizeof *Cg.val))
                            what = "it is not symmetric bit for bit";
            }
    }
    if (!ierr && what)
        ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                            "HOOKE_AMG_CHECK_TRANSFER: a distributed coarse operator (%lld rows): "
                            "%s",
                            (long long)nglob_c, what);
    ierr = hk_comm_agree(c, ierr);
    if (!ierr) galerkin_checked++;
fail:
    if (!d->host_memory) {
        hk_bmat_free(&Ah);
        hk_bmat_free(&Ph);
        hk_bmat_free(&Ch);
    }
    hk_bmat *g[] = {&Ag, &Pg, &Cg, &Rg, &APg, &Ref};
    for (int k = 0; k < 6; k++)
        hk_bmat_free(g[k]);
    free(gid);
    free(gcol);
    return ierr;
}

/* Level j's operator (into a->lev[j].A) from its rows H (coarse_rows': local columns, all of
 * its ghost[0..ng) read) where they are, as P's and R's: the columns read marked on the
 * backend (dist_read_columns: the owned ones read ascending, then the ghosts), the local
 * pattern made there (hk_damg_dmat_create_dev); the same operator as hk_damg_dmat_create makes
 * from the global columns on the host, without their pass and upload. *ghost is taken (NULL
 * after, also on a failure). Collective. */
static int coarse_operator(hk_pc *pc, damg *a, int j, const hlev *H, int64_t **ghost, int64_t ng,
                           int split)
{
    const hk_dist *d = a->d;
    const hk_backend_ops *L = d->local;
    const hk_bmat *S = d->host_memory ? &H->A : &H->Ad; /* the cpu's rows are the host's */
    const int64_t nown = H->nown;
    int32_t *rank = NULL, *list = NULL;
    int64_t nread = 0;
    double t[2];
    hk_damg_lap_start(t);
    int ierr = L->alloc((void **)&rank, (size_t)(nown + ng + 1) * sizeof *rank);
    if (!ierr) ierr = L->alloc((void **)&list, (size_t)(nown + ng + 1) * sizeof *list);
    if (!ierr) ierr = L->dist_read_columns(S->colind, S->nnzb, nown + ng, rank, list, &nread);
    if (!ierr && nread < ng)
        ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                            "pc=amg: a coarse operator reads %lld columns, fewer than its %lld "
                            "ghosts",
                            (long long)nread, (long long)ng);
    ierr = hk_comm_agree(d->comm, ierr);
    if (!ierr) {
        ierr = hk_damg_dmat_create_dev(d, pc->prec, nown, S->br, S->bc, S->nnzb, S->rowptr,
                                       S->colind, rank, S->val, nread - ng, list, *ghost, ng,
                                       H->row0, nown, NULL, split, a->st, t, &a->lev[j].A);
        *ghost = NULL;
        list = NULL;
    }
    free(*ghost);
    *ghost = NULL;
    if (list) L->dealloc(list);
    if (rank) L->dealloc(rank);
    return ierr;
}

/* Level l's transfer operators and the next level (its operator, host rows and near-null
 * space); H and *B are replaced by the next level's. The products run on the process's
 * backend (agg, D64, *B and H->Ad there); the host keeps the exchanges of T's and P's ghost
 * rows, the routing of the coarse rows owned elsewhere (merged on the backend) and R's rows,
 * from downloaded parts of T, P and P^T (A P). */
/* Whether level j (its rows and those above it in a->rows) is above the first level on every
 * process (hk_damg_gather_levels' g), as far as its rows tell: its operators keep their exchanges
 * and are split (hk_damg_dmat_create). A level that turns out to be the coarsest only at its
 * aggregation is taken for one above: hk_damg_gather_levels puts the P above it back in order. */
static int split_below(const damg *a, int j)
{
    if (j == 0 || a->gather_rows <= 0) return 1;
    if (j + 1 >= a->op.max_levels || a->rows[j] <= a->op.coarse_size) return 0; /* coarsest */
    for (int k = 1; k <= j; k++)
        if (a->rows[k] <= a->gather_rows) return 0;
    return 1;
}

/* Whether level j's operator (j >= 1) keeps its exchanges: j above g and not the coarsest. */
static int split_operator(const damg *a, int j)
{
    return split_below(a, j) && j + 1 < a->op.max_levels && a->rows[j] > a->op.coarse_size;
}

int hk_damg_galerkin_partial(const hk_backend_ops *Lb, const hk_bmat *Rt, const hk_bmat *AP,
                             int upper, hk_bmat *C)
{
    const int64_t n = AP->nbrows, m = Rt->nbcols - n;
    int64_t *rp = NULL, *tail = NULL;
    HK_CHECK(m >= 0, HK_ERR_INTERNAL, "pc=amg: P's transpose reads fewer rows than A P has");
    int ierr = Lb->alloc((void **)&rp, (size_t)(n + m + 1) * sizeof *rp);
    if (!ierr) ierr = Lb->copy(rp, AP->rowptr, (size_t)(n + 1) * sizeof *rp);
    if (!ierr && m) ierr = hk_malloc((size_t)m * sizeof *tail, &tail);
    if (!ierr && m) {
        for (int64_t k = 0; k < m; k++)
            tail[k] = AP->nnzb;
        ierr = Lb->copy_to(rp + n + 1, tail, (size_t)m * sizeof *tail);
    }
    if (!ierr) {
        hk_bmat APx = *AP;
        APx.nbrows = n + m;
        APx.rowptr = rp;
        if (upper && Lb->bmat_spgemm_pattern && Lb->bmat_spgemm_numeric_upper) {
            ierr = Lb->bmat_spgemm_pattern(Rt, &APx, C);
            /* the blocks below the diagonal, which the upper product leaves and the mirror
             * writes after the merge, routed and summed as zeros, not as leftover memory */
            hk_vec all = {.be = Lb, .n = C->nnzb * C->br * C->bc, .prec = HK_FP64, .data = C->val};
            if (!ierr && all.n) ierr = Lb->vec_set(&all, 0.0);
            if (!ierr) ierr = Lb->bmat_spgemm_numeric_upper(Rt, &APx, C);
        } else {
            ierr = Lb->bmat_spgemm(Rt, &APx, C);
        }
    }
    free(tail);
    if (rp) Lb->dealloc(rp);
    return ierr;
}

/* The next level's blocks below the diagonal (column < row in global ids) from their mirrors
 * above it, transposed: the partial products form their upper blocks only, which are routed
 * and merged (each summed as the whole product sums it), so A_c is exactly symmetric. A mirror
 * in this process's rows (an owned column), and each diagonal block's lower triangle, by
 * bmat_mirror_lower on the owned columns (the ghosts' columns, numbered after them, count as
 * above the diagonal there); a mirror in a lower rank's rows (a ghost column below row0) is sent
 * by that rank: every process sends the blocks of its rows in columns of higher ranks to those
 * columns' owners (counts, then the blocks' (row, column) ids and the blocks, host-staged), and
 * puts the ones it receives transposed where they belong (bmat_put_transposed). Every lower
 * block is written: the received ones must be as many as this process's blocks in lower ranks'
 * columns, each one found (else the pattern is not symmetric, an error). H: the rows
 * (coarse_rows': values on the backend in H->Ad, on the cpu in H->A), ghost[0..ng) their ghosts'
 * global ids, starts the processes' first rows. Collective. */
static int mirror_rows(const hk_dist *d, stage *s, hlev *H, const int64_t *starts,
                       const int64_t *ghost, int64_t ng)
{
    const hk_comm *c = d->comm;
    const hk_backend_ops *L = d->local;
    const int P = hk_comm_size(c), bs = H->bs;
    const int64_t nown = H->nown, row0 = H->row0, bb = (int64_t)bs * bs;
    const int64_t *rp = H->A.rowptr;
    const int32_t *ci = H->A.colind;
    hk_bmat *S = d->host_memory ? &H->A : &H->Ad;
    int ierr = 0, nreq = 0;
    int64_t *cnt = NULL, *rcnt = NULL, *off = NULL, *roff = NULL, *sid = NULL, *rid = NULL;
    int64_t *to = NULL, *at = NULL;
    int32_t *idx = NULL, *gown = NULL;
    double *sv = NULL, *rv = NULL, *sv_dev = NULL;
    const void *to_d = NULL, *rv_d = NULL;
    hk_comm_reqs *rq = NULL;
    ierr = L->bmat_mirror_lower && L->bmat_put_transposed && L->vec_gather
               ? 0
               : hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                              "pc=amg: backend %s cannot mirror a distributed coarse operator "
                              "(no bmat_put_transposed); use backend=cpu or cuda",
                              L->name);
    /* this process's mirrors: the owned columns as a square matrix */
    if (!ierr) {
        hk_bmat V = *S;
        V.nbcols = nown;
        ierr = L->bmat_mirror_lower(&V);
    }
    HK_TRY(hk_comm_agree(c, ierr));
    if (P == 1) return 0;
    /* the ghosts below row0 (lower ranks'), then the higher ranks'; each ghost's owner */
    const int64_t nlo = hk_lower_bound_i64(ghost, 0, ng, row0);
    ierr = hk_calloc(2 * (size_t)P + 2, sizeof *cnt, &cnt);
    if (!ierr) ierr = hk_calloc(2 * (size_t)P + 2, sizeof *rcnt, &rcnt);
    if (!ierr) ierr = hk_calloc((size_t)P + 1, sizeof *off, &off);
    if (!ierr) ierr = hk_calloc((size_t)P + 1, sizeof *roff, &roff);
    if (!ierr) ierr = hk_malloc((size_t)(ng + 1) * sizeof *gown, &gown);
    if (!ierr)
        for (int64_t g = 0, q = 0; g < ng; g++) {
            while (q + 1 < P && ghost[g] >= starts[q + 1])
                q++;
            gown[g] = (int32_t)q;
        }
    /* the sent blocks: each row's last ones (columns from nown + nlo), grouped by owner, each
     * owner's in row order */
    int64_t nlow = 0; /* this process's blocks in lower ranks' columns */
    if (!ierr)
        for (int64_t i = 0; i < nown; i++) {
            const int64_t m = hk_lower_bound_i32(ci, rp[i], rp[i + 1], (int32_t)(nown + nlo));
            nlow += m - hk_lower_bound_i32(ci, rp[i], m, (int32_t)nown);
            for (int64_t p = m; p < rp[i + 1]; p++)
                cnt[gown[ci[p] - nown]]++;
        }
    HK_TRY(hk_comm_agree(c, ierr));
    HK_TRY(hk_comm_alltoall_i64(c, cnt, rcnt));
    for (int q = 0; q < P; q++) {
        off[q + 1] = off[q] + cnt[q];
        roff[q + 1] = roff[q] + rcnt[q];
        nreq += 2 * ((cnt[q] > 0) + (rcnt[q] > 0));
    }
    const int64_t ns = off[P], nr = roff[P];
    ierr = nr == nlow ? 0
                      : hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                                     "pc=amg: a coarse operator's pattern is not symmetric (%lld "
                                     "blocks below the diagonal in other processes' columns, %lld "
                                     "mirrors sent); store K with a symmetric pattern",
                                     (long long)nlow, (long long)nr);
    if (!ierr) ierr = hk_malloc((size_t)(ns + 1) * sizeof *idx, &idx);
    if (!ierr) ierr = hk_malloc((size_t)(P + 1) * sizeof *at, &at);
    if (!ierr)
        ierr = hk_damg_stage_get(d, s, STAGE_SEND_COL, (size_t)(2 * ns + 1) * sizeof *sid,
                                 (void **)&sid);
    if (!ierr)
        ierr = hk_damg_stage_get(d, s, STAGE_RECV_COL, (size_t)(2 * nr + 1) * sizeof *rid,
                                 (void **)&rid);
    if (!ierr)
        ierr = hk_damg_stage_get(d, s, STAGE_SEND, (size_t)(ns * bb + 1) * sizeof *sv,
                                 (void **)&sv);
    if (!ierr)
        ierr = hk_damg_stage_get(d, s, STAGE_RECV, (size_t)(nr * bb + 1) * sizeof *rv,
                                 (void **)&rv);
    if (!ierr) ierr = hk_malloc((size_t)(nr + 1) * sizeof *to, &to);
    if (!ierr) ierr = hk_comm_reqs_create(nreq > 0 ? nreq : 1, &rq);
    if (!ierr) {
        memcpy(at, off, (size_t)P * sizeof *at);
        for (int64_t i = 0; i < nown; i++)
            for (int64_t p = hk_lower_bound_i32(ci, rp[i], rp[i + 1], (int32_t)(nown + nlo));
                 p < rp[i + 1]; p++) {
                const int64_t k = at[gown[ci[p] - nown]]++;
                idx[k] = (int32_t)p;
                sid[2 * k] = row0 + i;
                sid[2 * k + 1] = ghost[ci[p] - nown];
            }
    }
    /* the sent blocks gathered where the values are, then to the host's staging */
    if (!ierr && d->host_memory) {
        ierr = hk_damg_gather_blocks(d, sv, S->val, S->nnzb, bb, idx, ns);
    } else if (!ierr && ns) {
        ierr = L->alloc((void **)&sv_dev, (size_t)(ns * bb) * sizeof *sv_dev);
        if (!ierr) ierr = hk_damg_gather_blocks(d, sv_dev, S->val, S->nnzb, bb, idx, ns);
        if (!ierr) ierr = hk_damg_stage_down(d, s, sv, sv_dev, (size_t)(ns * bb) * sizeof *sv);
    }
    HK_TRY(hk_comm_agree(c, ierr));
    int slot = 0;
    for (int q = 0; q < P && !ierr; q++) {
        if (!rcnt[q]) continue;
        ierr = hk_comm_irecv(c, rid + 2 * roff[q], (size_t)(2 * rcnt[q]) * sizeof *rid, q,
                             DAMG_TAG_MIRROR_IDS, rq, slot++);
        if (!ierr)
            ierr = hk_comm_irecv(c, rv + roff[q] * bb, (size_t)(rcnt[q] * bb) * sizeof *rv, q,
                                 DAMG_TAG_MIRROR, rq, slot++);
    }
    for (int q = 0; q < P && !ierr; q++) {
        if (!cnt[q]) continue;
        ierr = hk_comm_isend(c, sid + 2 * off[q], (size_t)(2 * cnt[q]) * sizeof *sid, q,
                             DAMG_TAG_MIRROR_IDS, rq, slot++);
        if (!ierr)
            ierr = hk_comm_isend(c, sv + off[q] * bb, (size_t)(cnt[q] * bb) * sizeof *sv, q,
                                 DAMG_TAG_MIRROR, rq, slot++);
    }
    if (!ierr) ierr = hk_comm_waitall(rq);
    HK_TRY(ierr);
    /* each received block (row J of a lower rank, column I owned here) goes transposed to
     * block (I, J): its position in row I */
    int64_t bad = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t k = 0; k < nr; k++) {
        const int64_t J = rid[2 * k], I = rid[2 * k + 1];
        const int64_t g = hk_damg_find_i64(ghost, nlo, J);
        to[k] = I >= row0 && I < row0 + nown && g >= 0
                    ? hk_find_block(rp, ci, (int32_t)(I - row0), (int32_t)(nown + g))
                    : -1;
        if (to[k] < 0 && k < bad) bad = k;
    }
    if (bad != INT64_MAX)
        ierr = hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                            "pc=amg: a coarse operator's pattern is not symmetric (block (%lld, "
                            "%lld) has no mirror); store K with a symmetric pattern",
                            (long long)rid[2 * bad + 1], (long long)rid[2 * bad]);
    if (!ierr) ierr = on_backend(d, NULL, to, (size_t)nr * sizeof *to, &to_d);
    if (!ierr) ierr = on_backend(d, s, rv, (size_t)(nr * bb) * sizeof *rv, &rv_d);
    if (!ierr && nr) ierr = L->bmat_put_transposed(S->val, bs, to_d, rv_d, nr);
    ierr = hk_comm_agree(c, ierr);
fail:
    off_backend(d, to_d);
    off_backend(d, rv_d);
    if (sv_dev) L->dealloc(sv_dev);
    hk_comm_reqs_destroy(rq);
    free(cnt);
    free(rcnt);
    free(off);
    free(roff);
    free(gown);
    free(idx);
    free(at);
    free(to);
    return ierr;
}

static int descend(hk_pc *pc, damg *a, int l, hlev *H, const int32_t *agg, int64_t nagg,
                   const hk_vec *D64, double **B, const int32_t *inv0)
{
    const hk_dist *d = a->d;
    const hk_comm *c = d->comm;
    const hk_backend_ops *Lb = d->local;
    const int P = hk_comm_size(c), me = hk_comm_rank(c), bs = H->bs, nns = a->nns;
    dlev *L = &a->lev[l], *C = &a->lev[l + 1];
    int ierr = 0;
    int64_t *starts = NULL, *cT = NULL, *cP = NULL, *Tmap = NULL;
    int64_t nT = 0, nP = 0;
    double *Bc = NULL, *Acv_dev = NULL;        /* Acv_dev: A_c's merged values (device) */
    int64_t *mrp_dev = NULL, *mkey_dev = NULL; /* and its rowptr and keys (merge_rows) */
    /* on the backend: T, Textd, AT, Pm, Pextd, AP, Rt, Ac; on the host: Text, Pext (T's and
     * P's rows with their ghosts' rows; Textd, Pextd are their copies: views on the cpu) */
    hk_bmat T = {0}, Text = {0}, AT = {0}, Pm = {0}, Pext = {0}, AP = {0}, Ac = {0};
    hk_bmat Textd = {0}, Pextd = {0}, Rt = {0};
    routed R = {0};
    int64_t *rp = NULL, *gc = NULL, *cghost = NULL,
            cng = 0; /* gc: merge keys; cghost: A_c's ghosts */
    double *vv = NULL;
    hlev Hn = {0};
    double *ph = a->ph, t[2], ts[2];
    hk_damg_lap_start(t);

    /* T and the coarse near-null space from the owned near-null space */
    ierr = Lb->alloc((void **)&Bc, (size_t)(nagg + 1) * nns * nns * sizeof *Bc);
    if (!ierr) ierr = Lb->amg_tentative(agg, nagg, H->nown, bs, nns, *B, &T, Bc);
    if (!ierr) ierr = hk_calloc((size_t)P + 1, sizeof *starts, &starts);
    HK_TRY(hk_comm_agree(c, ierr));
    int64_t mine = nagg;
    HK_TRY(hk_comm_allgather(c, &mine, sizeof mine, starts + 1));
    for (int q = 0; q < P; q++)
        starts[q + 1] += starts[q];
    const int64_t crow0 = starts[me];
    a->rows[l + 1] = starts[P] * nns;
    HK_TRY(hk_comm_agree(c, hk_malloc((size_t)(nagg + 1) * sizeof *Tmap, &Tmap)));
    for (int64_t k = 0; k < nagg; k++)
        Tmap[k] = crow0 + k;
    hk_damg_lap(ph, PH_TENTATIVE, t);
    /* A T with the ghosts' rows of T, then P (their host copies only where they are Textd and
     * Pextd themselves) */
    ierr = with_ghost_rows(d, &a->stg, H->halo, &T, Tmap, d->host_memory ? &Text : NULL, &Textd,
                           &cT, &nT, a->st);
    hk_damg_lap(ph, PH_EXCHANGE, t);
    /* T has one block a row (ghost rows included): the backend's tentative product where it
     * has one (a warp per row of A on cuda), the general one otherwise; the same bytes */
    if (!ierr)
        ierr = Lb->amg_tentative_product ? Lb->amg_tentative_product(&H->Ad, &Textd, &AT)
                                         : Lb->bmat_spgemm(&H->Ad, &Textd, &AT);
    if (!ierr) {
        const hk_bmat Tv = rows_view(&Textd, H->nown, T.nnzb);
        ierr = Lb->amg_smooth_prolongator(&AT, &Tv, D64, a->op.omega / L->rho, &Pm);
    }
    HK_TRY(hk_comm_agree(c, ierr));
    hk_damg_lap(ph, PH_SMOOTH, t);
    /* A P with the ghosts' rows of P, and the partial coarse operator P_own^T (A P) */
    ierr = with_ghost_rows(d, &a->stg, H->halo, &Pm, cT, d->host_memory ? &Pext : NULL, &Pextd, &cP,
                           &nP, a->st);
    hk_damg_lap(ph, PH_EXCHANGE, t);
    hk_damg_lap_start(ts);
    if (!ierr) ierr = Lb->bmat_spgemm(&H->Ad, &Pextd, &AP);
    /* P_own^T (A P) as Rt (A P) with A P's rows run on by empty ones for P's ghost rows: Rt =
     * Pextd^T is R's transpose (restriction reads its owned coarse rows), and its blocks in
     * ghost columns meet empty rows, so every block of the product has the terms, in the order,
     * of P_own^T's (one transpose, not a second one of P's owned rows). Its pattern whole, its
     * values only on and above the diagonal (global ids: cP is ascending): A_c is symmetric,
     * its lower blocks are mirrored once merged (mirror_rows) */
    if (!ierr) ierr = Lb->bmat_transpose(&Pextd, &Rt);
    if (!ierr) ierr = hk_damg_galerkin_partial(Lb, &Rt, &AP, 1, &Ac);
    hk_damg_step_lap(Lb, a->st, ST_GAL_PRODUCTS, ts);
    /* A_c's values stay on the backend but for the rows of coarse unknowns owned elsewhere,
     * which go to their owners; each merges what it receives with its own rows there */
    if (!ierr) ierr = others_rows(d, &a->stg, &Ac, cP, crow0, nagg, &R);
    HK_TRY(hk_comm_agree(c, ierr));
    hk_damg_step_lap(Lb, a->st, ST_GAL_OTHERS, ts);
    HK_TRY(route(d, &a->stg, starts, cP, nns * nns, crow0, nagg, &R));
    hk_damg_step_lap(Lb, a->st, ST_GAL_ROUTE, ts);
    ierr =
        merge_rows(d, &a->stg, crow0, nagg, starts[P], &Ac, cP, &R, &mrp_dev, &mkey_dev, &Acv_dev);
    routed_free(d, &R);
    hk_damg_step_lap(Lb, a->st, ST_GAL_MERGE, ts);
    /* the merged pattern on the host (rp, gc: keys); on the cpu the values are host rows (vv) */
    if (!ierr) ierr = merged_pattern(d, &a->stg, nagg, &mrp_dev, &mkey_dev, &rp, &gc);
    if (!ierr && d->host_memory) {
        vv = Acv_dev;
        Acv_dev = NULL;
    }
    HK_TRY(hk_comm_agree(c, ierr));
    if (mkey_dev) Lb->dealloc(mkey_dev);
    mkey_dev = NULL;
    hk_bmat_free(&Ac);
    hk_damg_step_lap(Lb, a->st, ST_GAL_PATTERN, ts);
    /* the next level's rows: their ghosts (the merged columns owned elsewhere: keys from nagg
     * up), their host rows with local columns; on a device the merge's rowptr and values are
     * there already, the local columns uploaded (on every process, also one without rows, so
     * that none skips the level's upload, which is agreed) */
    ierr = hk_damg_ghost_columns(rp[nagg], gc, 0, nagg, &cghost, &cng);
    if (!ierr) ierr = coarse_rows(crow0, nagg, nns, cghost, cng, rp, gc, &vv, &Hn);
    for (int64_t k = 0; k < cng && !ierr; k++) /* the ghosts' keys into their global ids */
        cghost[k] = merge_col(cghost[k], crow0, nagg);
    if (!ierr && !d->host_memory) {
        const hk_bmat S0 = {.be = Lb,
                            .br = nns,
                            .bc = nns,
                            .nbrows = nagg,
                            .nbcols = Hn.A.nbcols,
                            .nnzb = Hn.A.nnzb,
                            .rowptr = mrp_dev};
        Hn.Ad = S0;
        mrp_dev = NULL;
        ierr = Lb->alloc((void **)&Hn.Ad.colind, (size_t)(Hn.A.nnzb + 1) * sizeof(int32_t));
        if (!ierr && Hn.A.nnzb)
            ierr = hk_damg_to_backend(Lb, Hn.Ad.colind, Hn.A.colind,
                                      (size_t)Hn.A.nnzb * sizeof(int32_t));
        if (!ierr) {
            Hn.Ad.val = Acv_dev;
            Acv_dev = NULL;
        }
    }
    if (d->host_memory) { /* else in the staging */
        free(rp);
        free(gc);
    }
    free(vv);
    rp = gc = NULL;
    vv = NULL;
    HK_TRY(hk_comm_agree(c, ierr));
    hk_damg_step_lap(Lb, a->st, ST_GAL_ROWS, ts);
    /* the blocks below the diagonal (zeros: the partial products' upper blocks alone were
     * formed) from their mirrors above it */
    HK_TRY(mirror_rows(d, &a->stg, &Hn, starts, cghost, cng));
    hk_damg_step_lap(Lb, a->st, ST_GAL_MIRROR, ts);
    hk_damg_lap(ph, PH_GALERKIN, t);
    /* A_c's operator from those rows where they are */
    HK_TRY(coarse_operator(pc, a, l + 1, &Hn, &cghost, cng, split_operator(a, l + 1)));
    Hn.halo = C->A->halo;
    hk_damg_lap(ph, PH_OPERATORS, t);
    /* R = P^T: this process's coarse rows from P's owned and ghost rows, where they are */
    int64_t *rrp = NULL, r0 = 0, rnnz = 0, pnnz = 0;
    ierr = restriction(d, H, &Pextd, cP, nP, crow0, nagg, &Rt, &rrp, &r0, &rnnz, &pnnz);
    hk_damg_lap(ph, PH_RESTRICT, t);
    if (!ierr)
        ierr = restriction_operator(pc, a, l, H, &Rt, rrp, r0, rnnz, nagg, inv0,
                                    split_below(a, l));
    if (rrp) Lb->dealloc(rrp);
    HK_TRY(ierr);
    /* P: the owned fine rows of Pextd, coarse columns [owned read, ghosts] */
    HK_TRY(prolongator_operator(pc, a, l, H, &Pextd, cP, nP, crow0, nagg, pnnz,
                                split_below(a, l + 1)));
    hk_damg_lap(ph, PH_OPERATORS, t);
    { /* a test's check, outside the phases */
        int check = 0;
        HK_TRY(hk_comm_agree(c, hk_env_switch("HOOKE_AMG_CHECK_TRANSFER", "1",
                                              "R and P compared with the host's", "0", "no check",
                                              0, &check)));
        if (check)
            HK_TRY(transfer_check(pc, a, l, H, &Pextd, &Rt, r0, cP, crow0, nagg, inv0,
                                  split_below(a, l), split_below(a, l + 1)));
        if (check) HK_TRY(coarse_check(pc, a, l + 1, &Hn, split_operator(a, l + 1)));
        if (check)
            HK_TRY(galerkin_check(d, H, &Pextd, cP, starts[P], &Hn, C->A->ghost));
    }
    hk_damg_lap_start(t);
    hk_bmat_free(&Rt);
    hk_damg_lap(ph, PH_OPERATORS, t);
    C->row0 = crow0;
    C->nown = nagg;
    C->nglob = starts[P];
    C->bs = nns;
    hk_damg_free_copy(d, &H->Ad);
    hk_bmat_free(&H->A);
    *H = Hn;
    memset(&Hn, 0, sizeof Hn);
    Lb->dealloc(*B);
    *B = Bc;
    Bc = NULL;
fail:
    hk_bmat_free(&Hn.A);
    hk_damg_free_copy(d, &Hn.Ad);
    if (Acv_dev) Lb->dealloc(Acv_dev);
    free(starts);
    free(cT);
    free(cP);
    free(Tmap);
    free(cghost);
    if (Bc) Lb->dealloc(Bc);
    if (d->host_memory) {
        free(rp);
        free(gc);
    }
    free(vv);
    if (mrp_dev) Lb->dealloc(mrp_dev);
    if (mkey_dev) Lb->dealloc(mkey_dev);
    hk_damg_free_copy(d, &Textd);
    hk_damg_free_copy(d, &Pextd);
    hk_bmat_free(&T);
    hk_bmat_free(&Text);
    hk_bmat_free(&AT);
    hk_bmat_free(&Pm);
    hk_bmat_free(&Pext);
    hk_bmat_free(&AP);
    hk_bmat_free(&Ac);
    hk_bmat_free(&Rt);
    return ierr;
}

/* The coarsest level H gathered on every process (rank after rank), its dense inverse. */
static int coarsest(hk_pc *pc, damg *a, int l, const hlev *H, const int32_t *inv0)
{
    const hk_dist *d = a->d;
    const hk_comm *c = d->comm;
    const hk_backend_ops *Lb = d->local;
    const int P = hk_comm_size(c), me = hk_comm_rank(c), bs = H->bs, bb = bs * bs;
    int ierr = 0;
    int64_t *info = NULL, *rp = NULL; /* info: per process: rows, blocks */
    int32_t *col = NULL;
    double *val = NULL;
    size_t *cnt = NULL; /* per process: the bytes of its rows' ends, columns, values */
    hk_bmat G = {0}, Gd = {0};
    HK_TRY(hk_comm_agree(c, hk_calloc((size_t)2 * P + 2, sizeof *info, &info)));
    int64_t mine[2] = {H->nown, H->A.rowptr[H->nown]};
    HK_TRY(hk_comm_allgather(c, mine, sizeof mine, info));
    int64_t nrows = 0, nnz = 0;
    for (int q = 0; q < P; q++) {
        nrows += info[2 * q];
        nnz += info[2 * q + 1];
    }
    HK_TRY_CHECK(nrows * bs <= HK_AMG_MAX_COARSE, HK_ERR_NUMERIC,
                 "pc=amg: coarsening stopped at level %d with %lld rows on %d processes, too "
                 "many for the dense coarse solve (at most %d); raise pc.amg.max_levels, or "
                 "lower pc.amg.threshold (now %g) so that more nodes are aggregated",
                 l, (long long)(nrows * bs), P, HK_AMG_MAX_COARSE, a->op.threshold);
    ierr = hk_bmat_alloc(&hk_backend_cpu, bs, bs, nrows, nrows, nnz, &G);
    if (!ierr) ierr = hk_calloc((size_t)3 * P + 1, sizeof *cnt, &cnt);
    if (!ierr) ierr = hk_malloc((size_t)(H->nown + 1) * sizeof *rp, &rp);
    if (!ierr) ierr = hk_malloc((size_t)(info[2 * me + 1] + 1) * sizeof *col, &col);
    if (!ierr) ierr = hk_malloc((size_t)(info[2 * me + 1] * bb + 1) * sizeof *val, &val);
    HK_TRY(hk_comm_agree(c, ierr));
    G.rowptr[0] = 0;
    int64_t p0 = 0; /* this process's first block in G: the earlier processes' blocks */
    for (int q = 0; q < P; q++) {
        cnt[q] = (size_t)info[2 * q] * sizeof *rp;
        cnt[P + q] = (size_t)info[2 * q + 1] * sizeof *col;
        cnt[2 * P + q] = (size_t)(info[2 * q + 1] * bb) * sizeof *val;
        if (q < me) p0 += info[2 * q + 1];
    }
    /* this process's rows in the callers' order (level 0: perm), global columns; every
     * process's by three allgathervs */
    for (int64_t k = 0, p1 = 0; k < H->nown; k++) {
        const int64_t i = H->perm ? inv0[k] : k;
        for (int64_t p = H->A.rowptr[i]; p < H->A.rowptr[i + 1]; p++, p1++) {
            col[p1] = (int32_t)hlev_gcol(H, H->A.colind[p]);
            memcpy(val + p1 * bb, H->A.val + p * bb, (size_t)bb * sizeof(double));
        }
        rp[k] = p0 + p1;
    }
    HK_TRY(hk_comm_allgatherv(c, rp, cnt[me], G.rowptr + 1, cnt));
    HK_TRY(hk_comm_allgatherv(c, col, cnt[P + me], G.colind, cnt + P));
    HK_TRY(hk_comm_allgatherv(c, val, cnt[2 * P + me], G.val, cnt + 2 * P));
    ierr = hk_dist_sort_blocks(nrows, G.rowptr, G.colind, G.val, bb);
    if (!ierr) ierr = hk_bmat_alloc(Lb, bs, bs, nrows, nrows, nnz, &Gd);
    if (!ierr) ierr = hk_damg_to_backend(Lb, Gd.rowptr, G.rowptr, (size_t)(nrows + 1) * sizeof(int64_t));
    if (!ierr && nnz) ierr = hk_damg_to_backend(Lb, Gd.colind, G.colind, (size_t)nnz * sizeof(int32_t));
    if (!ierr && nnz) ierr = hk_damg_to_backend(Lb, Gd.val, G.val, (size_t)(nnz * bb) * sizeof(double));
    const int64_t n = nrows * bs;
    if (!ierr) ierr = hk_damg_vec_sized(Lb, n * n, pc->prec, &a->Minv);
    if (!ierr) ierr = hk_damg_vec_sized(Lb, n, pc->prec, &a->cb);
    if (!ierr) ierr = hk_damg_vec_sized(Lb, n, pc->prec, &a->cx);
    int64_t bad = -1;
    if (!ierr) ierr = Lb->dense_inverse(&Gd, a->Minv, &bad);
    if (!ierr && bad >= 0)
        ierr = hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                            "pc=amg: the coarsest matrix (level %d, %lld rows) is singular or "
                            "not positive definite at row %lld; the near-null space is probably "
                            "not eliminated by the supports (is the structure fixed against "
                            "rigid-body motion?), or the matrix is not SPD",
                            l, (long long)n, (long long)bad);
    /* the gather's offsets and staging */
    const size_t e = pc->prec == HK_FP64 ? sizeof(double) : sizeof(float);
    int64_t maxrows = 0;
    if (!ierr) ierr = hk_calloc((size_t)P + 1, sizeof *a->coff, &a->coff);
    for (int q = 0; q < P && !ierr; q++) {
        a->coff[q + 1] = a->coff[q] + info[2 * q] * bs;
        if (info[2 * q] > maxrows) maxrows = info[2 * q];
    }
    if (!ierr) ierr = hk_malloc((size_t)(maxrows * bs + 1) * e, &a->hown);
    if (!ierr) ierr = hk_malloc((size_t)(maxrows * bs + 1) * e * P, &a->hall);
    if (!ierr && H->perm) {
        a->cperm = H->perm;
        ierr = hk_malloc((size_t)(maxrows * bs + 1) * e, &a->hperm);
    }
    HK_TRY(hk_comm_agree(c, ierr));
fail:
    free(info);
    free(rp);
    free(col);
    free(val);
    free(cnt);
    hk_bmat_free(&G);
    hk_bmat_free(&Gd);
    return ierr;
}

/* x = A_c^-1 b on the gathered coarsest level. */
int hk_damg_coarse_solve(hk_pc *pc, damg *a, const hk_vec *b, hk_vec *x)
{
    const hk_dist *d = a->d;
    const hk_backend_ops *Lb = d->local;
    const int P = hk_comm_size(d->comm), me = hk_comm_rank(d->comm);
    const size_t e = pc->prec == HK_FP64 ? sizeof(double) : sizeof(float);
    int64_t maxn = 0;
    for (int q = 0; q < P; q++)
        if (a->coff[q + 1] - a->coff[q] > maxn) maxn = a->coff[q + 1] - a->coff[q];
    const int64_t mine = a->coff[me + 1] - a->coff[me], bs = a->lev[0].bs;
    double drain = 0;
    const double t0 = d->host_memory ? hk_dprof_now() : hk_dprof_drain(Lb, &drain);
    if (mine && a->cperm) { /* internal to the callers' order */
        HK_CALL(Lb->copy_from(a->hperm, b->data, (size_t)mine * e));
        for (int64_t i = 0; i < mine / bs; i++)
            memcpy((char *)a->hown + (size_t)a->cperm[i] * bs * e,
                   (char *)a->hperm + (size_t)i * bs * e, (size_t)bs * e);
    } else if (mine)
        HK_CALL(Lb->copy_from(a->hown, b->data, (size_t)mine * e));
    const double t1 = hk_dprof_now();
    HK_CALL(hk_comm_allgather(d->comm, a->hown, (size_t)maxn * e, a->hall));
    const double t2 = hk_dprof_now();
    for (int q = 0; q < P; q++) {
        const int64_t nq = a->coff[q + 1] - a->coff[q];
        if (nq)
            HK_CALL(Lb->copy_to((char *)a->cb->data + (size_t)a->coff[q] * e,
                                (char *)a->hall + (size_t)q * maxn * e, (size_t)nq * e));
    }
    hk_dprof_exchange(HK_DPROF_G, a->nlevels - 1, drain, t1 - t0 + hk_dprof_now() - t2, t2 - t1);
    HK_CALL(Lb->dense_gemv(a->Minv, a->cb, a->cx));
    if (!mine) return 0;
    if (a->cperm) { /* back to the internal order */
        HK_CALL(Lb->copy_from(a->hown, (char *)a->cx->data + (size_t)a->coff[me] * e,
                              (size_t)mine * e));
        for (int64_t i = 0; i < mine / bs; i++)
            memcpy((char *)a->hperm + (size_t)i * bs * e,
                   (char *)a->hown + (size_t)a->cperm[i] * bs * e, (size_t)bs * e);
        return Lb->copy_to(x->data, a->hperm, (size_t)mine * e);
    }
    hk_vec xl = hk_dist_view(d, x, 0, mine);
    const hk_vec src = hk_dist_view(d, a->cx, a->coff[me], mine);
    return Lb->vec_copy(&xl, &src);
}

/* v (fp64, the backend's own table) into the level vector *out (pc->prec, distributed). */
static int level_vector_of(hk_pc *pc, const hk_vec *v, hk_vec **out)
{
    const hk_dist *d = pc->be->dist;
    HK_CALL(hk_damg_vec_sized(pc->be, v->n, pc->prec, out));
    if (!v->n) return 0;
    hk_vec o = hk_dist_view(d, *out, 0, v->n);
    return d->local->vec_convert(&o, v);
}

/* Dinv (and l1) of level l from its rows on the backend (H->Ad); *D64 the fp64 blocks (the
 * backend's own table, caller destroys). */
static int smoother_data(hk_pc *pc, damg *a, int l, const hlev *H, hk_vec **D64)
{
    const hk_backend_ops *Lb = a->d->local;
    dlev *L = &a->lev[l];
    const int64_t n = H->nown * H->bs;
    int ierr = 0;
    int64_t bad = -1;
    hk_vec *l1 = NULL;
    *D64 = NULL;
    HK_TRY(hk_damg_vec_sized(Lb, n * H->bs, HK_FP64, D64));
    if (n) HK_TRY(Lb->bmat_diag(&H->Ad, HK_DIAG_BLOCK_INV, *D64, &bad));
    HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                 "pc=amg: the %dx%d diagonal block of node %lld on level %d is singular or not "
                 "finite (scalar row %lld); pc=amg needs an SPD matrix whose node blocks are "
                 "invertible",
                 H->bs, H->bs, (long long)hlev_gid(H, bad / H->bs), l, (long long)bad);
    HK_TRY(level_vector_of(pc, *D64, &L->Dinv));
    if (a->op.smoother == HK_AMG_L1_JACOBI) {
        HK_TRY(hk_damg_vec_sized(Lb, n, HK_FP64, &l1));
        if (n) HK_TRY(Lb->amg_l1_diag(&H->Ad, l1, &bad));
        HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                     "pc=amg: scalar row %lld of level %d has a non-positive l1 row sum "
                     "(diagonal not positive); use pc.amg.smoother=chebyshev or check that the "
                     "matrix is SPD",
                     (long long)bad, l);
        HK_TRY(level_vector_of(pc, l1, &L->l1));
    }
fail:
    hk_vec_destroy(l1);
    return ierr;
}

static int profiling(void)
{
    static int on = -1;
    if (on < 0) on = getenv("HOOKE_AMG_PROFILE") != NULL;
    return on;
}

/* With HOOKE_AMG_PROFILE set, rank 0 prints each phase's largest time over the processes, and
 * on a second line each step's. */
static int print_phases(const damg *a)
{
    if (!profiling()) return 0;
    const hk_dist *d = a->d;
    enum { NX = 5 };
    double m[2 * DAMG_NPHASES + NX], *x = m + 2 * DAMG_NPHASES;
    memcpy(m, a->ph, sizeof a->ph);
    x[0] = d->t_layout;
    x[1] = d->t_layout_upload;
    /* between the layout and this set-up: the solver's K (a view of the layout's) and the
     * operator's build */
    x[2] = a->t_pc - d->t_begin - d->t_layout - d->t_layout_upload;
    x[3] = d->t_operator;
    x[4] = hk_time() - d->t_begin;
    HK_CALL(hk_comm_max(d->comm, m, 2 * DAMG_NPHASES + NX));
    double st[2 * DAMG_NSTEPS + DAMG_NMSG + 6];
    memcpy(st, a->steps, sizeof a->steps);
    st[2 * DAMG_NSTEPS + MSG_STAGE_T] = a->stg.t_alloc;
    st[2 * DAMG_NSTEPS + MSG_STAGE_MB] = a->stg.bytes / 1e6;
    memcpy(st + 2 * DAMG_NSTEPS + DAMG_NMSG, d->t_layout_step, sizeof d->t_layout_step);
    HK_CALL(hk_comm_max(d->comm, st, 2 * DAMG_NSTEPS + DAMG_NMSG + 6));
    if (hk_comm_rank(a->d->comm)) return 0;
    fprintf(stderr,
            "amg set-up (distributed, %d processes; the slowest process's wall (CPU) seconds):",
            hk_comm_size(a->d->comm));
    for (int k = 0; k < DAMG_NPHASES; k++)
        fprintf(stderr, "%s %s %.3f (%.3f)", k ? "," : "", damg_phase_name[k], m[k],
                m[DAMG_NPHASES + k]);
    /* the solver's distributed set-up before the preconditioner (wall seconds); what the
     * run's set-up has beyond "since the layout" is the options and the backend's start */
    fprintf(stderr,
            "; before it (wall): layout %.3f, layout on the backend %.3f, K and operator "
            "%.3f (the operator's build %.3f); since the layout %.3f\n",
            x[0], x[1], x[2], x[3], x[4]);
    fprintf(stderr, "amg set-up steps (the slowest process's wall (CPU) seconds):");
    for (int k = 0; k < DAMG_NSTEPS; k++)
        fprintf(stderr, "%s %s %.3f (%.3f)", k ? "," : "", damg_step_name[k], st[k],
                st[DAMG_NSTEPS + k]);
    const double *ls = st + 2 * DAMG_NSTEPS + DAMG_NMSG, *msg = st + 2 * DAMG_NSTEPS;
    fprintf(stderr,
            "; layout (wall): check %.3f, ghosts %.3f, halo plan %.3f, numbering %.3f, split "
            "%.3f, host values %.3f\n",
            ls[0], ls[1], ls[2], ls[3], ls[4], ls[5]);
    /* each the largest over the processes */
    fprintf(stderr,
            "amg set-up ghost rows' messages (the most of a process): %.0f exchanges, %.1f MB "
            "sent in %.0f messages (the largest %.2f MB), %.1f MB received; the exchanges' "
            "host staging (%s) allocated in the steps: %.1f MB in %.3f s\n",
            msg[MSG_GR_ROUNDS], msg[MSG_GR_SENT] / 1e6, msg[MSG_GR_COUNT],
            msg[MSG_GR_LARGEST] / 1e6, msg[MSG_GR_RECV] / 1e6,
            a->stg.pin ? "pinned" : "pageable", msg[MSG_STAGE_MB], msg[MSG_STAGE_T]);
    return 0;
}

/* ---- the entry points: set-up, fallback -------------------------------------------------- */

/* pc.amg.dist.gather_rows' default: a level of at most this many scalar rows in all is on
 * every process. On a GPU such a level's kernels are bound by their launches, while each of its
 * exchanges costs a host round trip and waits for the slowest process; but gathering a level
 * costs the set-up its bytes (an allgatherv of every process's rows). Measured on 4 x H200
 * (docs/BENCHMARKS.md run 47, the bracket at 19.3M DOFs): gathering from the 1.2k-row level
 * instead of the 27k-row one (55 MB) took the set-up from 0.66 to 0.50 s with the same 38
 * iterations and solve time (0.31 s), so the default gathers only levels of a few thousand
 * rows. */
#define DAMG_GATHER_ROWS 5000

static int build(hk_pc *pc, damg *a, const hk_bmat *K, hk_mat *A)
{
    hk_dist *d = a->d;
    const hk_comm *c = d->comm;
    const hk_backend_ops *Lb = d->local;
    int ierr = 0, l = 0;
    hlev H = {0};
    double *B = NULL; /* the near-null space on the backend */
    int32_t *agg = NULL;
    const int32_t *inv0 = d->inv; /* level 0's internal row of each caller's row */
    hk_graph S = {0};
    hk_vec *q = NULL, *D64 = NULL;
    double *ph = a->ph, t[2], t_start[2], ts[2];
    memset(a->ph, 0, sizeof a->ph);
    memset(a->steps, 0, sizeof a->steps);
    a->st = profiling() ? a->steps : NULL;
    a->stg.t_alloc = a->stg.bytes = 0; /* this set-up's (the buffers are kept) */
    HK_CALL(hk_damg_stage_kind(d, &a->stg));
    hk_damg_lap_start(t);
    hk_damg_lap_start(t_start);
    hk_damg_lap_start(ts);
    ierr = level0_local(d, &H);
    HK_TRY(hk_comm_agree(c, ierr));
    hk_damg_step_lap(Lb, a->st, ST_NN_ROWS, ts);
    HK_TRY(level0_nearnull(pc, a, &H, &B));
    hk_damg_step_lap(Lb, a->st, ST_NN_MODES, ts);
    hk_damg_lap(ph, PH_NEARNULL, t);
    for (;; l++) {
        dlev *L = &a->lev[l];
        if (l == 0) {
            L->row0 = d->row0;
            L->nown = d->nown;
            L->nglob = d->nglobal;
            L->bs = d->bs;
            HK_TRY(hk_comm_agree(c, hk_pc_operator(pc, K, A, &L->A0, &L->A0_owned)));
        }
        int64_t nnz = (H.A.rowptr ? H.A.rowptr[H.nown] : H.Ad.nnzb) * H.bs * H.bs;
        HK_TRY(hk_comm_sum_i64(c, &nnz, 1));
        a->rows[l] = L->nglob * L->bs;
        a->nnz[l] = nnz;
        HK_TRY(hk_comm_agree(c, level_vectors(pc, a, L, l)));
        hk_damg_lap(ph, PH_VECTORS, t);
        /* the level's rows on the backend (a view on the cpu; on a device they are there) */
        HK_TRY(hk_comm_agree(c, H.Ad.rowptr ? 0 : hk_damg_local_copy(d, &H.A, &H.Ad)));
        hk_damg_lap(ph, PH_UPLOAD, t);
        const int last = l + 1 >= a->op.max_levels || L->nglob * L->bs <= a->op.coarse_size;
        int64_t nagg = 0;
        if (!last) {
            /* the strength graph of the owned diagonal block: level 0's is the layout's Koo
             * (the same rows, sorted), which K is on the backend; a coarse level's rows are
             * read as they are, amg_strength leaving out their ghost columns (from nown on) */
            hk_bmat Kl = *K;
            Kl.be = Lb;
            hk_damg_lap_start(ts);
            if (!ierr && H.nown)
                ierr = Lb->amg_strength(l == 0 ? &Kl : &H.Ad, a->op.threshold, &S);
            hk_damg_step_lap(Lb, a->st, ST_AGG_STRENGTH, ts);
            if (!ierr) ierr = Lb->alloc((void **)&agg, (size_t)(H.nown + 1) * sizeof *agg);
            if (!ierr && H.nown) ierr = Lb->amg_aggregate(&S, agg, &nagg);
            hk_graph_free(&S);
            hk_damg_step_lap(Lb, a->st, ST_AGG_AGGREGATE, ts);
            HK_TRY(hk_comm_agree(c, ierr));
        }
        int64_t tot = nagg;
        HK_TRY(hk_comm_sum_i64(c, &tot, 1));
        if (!last) hk_damg_step_lap(Lb, a->st, ST_AGG_COUNT, ts);
        hk_damg_lap(ph, PH_AGGREGATE, t);
        if (last || tot == 0 || (double)tot * a->nns > 0.9 * (double)(L->nglob * L->bs)) {
            if (!H.A.rowptr) /* level 0 on a device: its host rows only now */
                HK_TRY(hk_comm_agree(c, level0_rows(d, &H)));
            else if (!H.A.val) /* a coarse level on a device: its values only now */
                HK_TRY(hk_comm_agree(c, host_values(d, &H)));
            double tc[2];
            hk_damg_lap_start(tc);
            HK_TRY(coarsest(pc, a, l, &H, l == 0 ? inv0 : NULL));
            hk_damg_step_lap(Lb, a->st, ST_CO_INVERSE, tc);
            hk_damg_lap(ph, PH_COARSE, t);
            break;
        }
        HK_TRY_CHECK(l + 1 < DAMG_MAX_LEVELS, HK_ERR_INTERNAL, "pc=amg: too many levels");
        /* smoother data and the spectral bound on the level's distributed operator */
        HK_TRY(hk_comm_agree(c, smoother_data(pc, a, l, &H, &D64)));
        HK_TRY(hk_comm_agree(c, hk_damg_vec_sized(pc->be, L->nown * L->bs, pc->prec, &q)));
        {
            hk_vec rl = hk_dist_view(d, L->r, 0, L->r->n);
            HK_TRY(hk_comm_agree(c, L->nown ? d->local->amg_start_vector(&rl) : 0));
            const hk_amg_sweep s = hk_damg_sweep_of(pc, a, L, l);
            const int64_t rows = L->nglob * L->bs; /* all processes': the same steps */
            const int steps = a->op.lanczos < rows ? a->op.lanczos : (int)rows;
            HK_TRY(hk_amg_lanczos_bound(&s, steps, a->op.safety, l, q, &L->rho, &a->fp32_range));
        }
        hk_vec_destroy(q);
        q = NULL;
        hk_damg_lap(ph, PH_BOUND, t);
        HK_TRY(descend(pc, a, l, &H, agg, nagg, D64, &B, l == 0 ? inv0 : NULL));
        hk_damg_lap_start(t);
        hk_vec_destroy(D64);
        D64 = NULL;
        Lb->dealloc(agg);
        agg = NULL;
    }
    a->nlevels = l + 1;
    HK_TRY(hk_damg_gather_levels(pc, a));
    hk_damg_lap(ph, PH_COARSE, t);
    double tot = 0;
    for (int j = 0; j < a->nlevels; j++)
        tot += (double)a->nnz[j];
    a->op_complexity = a->nnz[0] ? tot / (double)a->nnz[0] : 1;
    hk_damg_lap(ph, PH_TOTAL, t_start);
    ierr = print_phases(a);
fail:
    if (ierr) hk_damg_stage_free(d, &a->stg);
    hk_damg_free_copy(d, &H.Ad);
    hk_bmat_free(&H.A);
    hk_graph_free(&S);
    hk_vec_destroy(q);
    if (B) Lb->dealloc(B);
    hk_vec_destroy(D64);
    if (agg) Lb->dealloc(agg);
    return ierr;
}

/* A set-up that failed because an fp32 level overflowed: again in fp64 (precision=auto). */
static int build_or_fp64(hk_pc *pc, damg *a, const hk_bmat *K, hk_mat *A)
{
    int ierr = build(pc, a, K, A);
    if (!ierr || !a->fp32_range || !pc->fallback_armed) return ierr;
    hk_error_clear();
    a->fp32_range = 0;
    pc->fallback_armed = 0;
    hk_damg_free_levels(a);
    hk_amg_set_precision(pc, HK_FP64);
    return build(pc, a, K, A);
}

int hk_damg_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    damg *a = NULL;
    HK_CALL(hk_calloc(1, sizeof *a, &a));
    pc->data = a;
    a->d = pc->be->dist;
    a->t_pc = hk_time();
    HK_CALL(hk_amg_read_options(o, &a->op));
    HK_CALL(hk_comm_agree(a->d->comm, hk_env_switch("HOOKE_AMG_UNFUSED", "1",
                                                    "the cycle's and the bounds' separate vector "
                                                    "ops",
                                                    "0", "the fused ops", 0, &a->unfused)));
    int gather_rows = DAMG_GATHER_ROWS;
    HK_CALL(hk_options_get_int(o, "pc.amg.dist.gather_rows", &gather_rows));
    HK_CHECK(gather_rows >= 0, HK_ERR_OPTION,
             "option pc.amg.dist.gather_rows=%d is out of range; use 0 (only the coarsest level "
             "on every process) or more (default %d scalar rows)",
             gather_rows, DAMG_GATHER_ROWS);
    a->gather_rows = gather_rows;
    HK_CHECK(!a->op.format, HK_ERR_UNSUPPORTED,
             "option pc.amg.format=%s is not distributed: on several processes the coarse "
             "levels and transfers are block matrices of the backend's bmat_spmv; remove it, or "
             "run on one process",
             a->op.format);
    HK_CHECK(K->br <= DAMG_MAX_NNS, HK_ERR_ARG, "pc=amg: block size %d is larger than %d", K->br,
             DAMG_MAX_NNS);
    const hk_backend_ops *L = a->d->local;
    HK_CHECK(L->bmat_spmv && L->dense_inverse && L->dense_gemv && L->amg_start_vector &&
                 L->amg_strength && L->amg_aggregate && L->amg_tentative && L->bmat_spgemm &&
                 L->bmat_transpose && L->amg_smooth_prolongator && L->bmat_diag && L->amg_l1_diag &&
                 L->vec_convert,
             HK_ERR_UNSUPPORTED,
             "pc=amg on several processes: the %s backend lacks one of the AMG set-up ops "
             "(strength, aggregation, tentative, sparse products, transpose, diagonals) or "
             "bmat_spmv, dense_inverse, dense_gemv, amg_start_vector; use backend=cpu or cuda",
             L->name);
    hk_amg_set_precision(pc, a->op.precision == HK_AMG_PREC_FP64 ? HK_FP64 : HK_FP32);
    pc->fallback_armed = a->op.precision == HK_AMG_PREC_AUTO;
    return build_or_fp64(pc, a, K, A);
}

/* The fp32 levels stalled the solve: the hierarchy again in fp64. */
int hk_damg_fallback(hk_pc *pc, const hk_bmat *K, hk_mat *A, double at)
{
    damg *a = pc->data;
    HK_CHECK(pc->fallback_armed && pc->prec == HK_FP32, HK_ERR_INTERNAL,
             "pc=amg: no fp32 hierarchy to fall back from");
    pc->fallback_armed = 0;
    hk_damg_free_levels(a);
    hk_amg_set_precision(pc, HK_FP64);
    return build(pc, a, K, A);
}
