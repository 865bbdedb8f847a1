/* Smoothed-aggregation algebraic multigrid (Vanek, Mandel and Brezina, Computing 56, 1996)
 * with the rigid-body modes as near-null space, written once over backend ops: the set-up runs
 * where K lives (cpu or cuda) and only sizes and a few scalars come back to the host.
 *
 * Set-up, per level l with operator A_l (block CSR, bs x bs blocks) and near-null space B_l
 * (n_l x nns, column-major, in backend memory):
 *   1. strength graph of the node blocks (amg_strength, pc.amg.threshold);
 *   2. aggregation by a distance-2 maximal independent set (amg_aggregate);
 *   3. tentative prolongator T (bs x nns blocks) and coarse near-null space B_{l+1} by a QR
 *      per aggregate (amg_tentative): T B_{l+1} = B_l on the aggregated nodes;
 *   4. D^-1 = inverse node blocks of A_l (bmat_diag BLOCK_INV) and an upper bound rho of the
 *      spectrum of D^-1 A_l from a few steps of block-Jacobi preconditioned CG (its Lanczos
 *      tridiagonal), times a safety factor;
 *   5. P = T - (omega/rho) D^-1 A_l T (one damped block-Jacobi step on T; omega = 1.6,
 *      chosen by time to solution on the H100, docs/preconditioners.md);
 *   6. R = P^T, A_{l+1} = R (A_l P) (Galerkin product by two sparse products).
 * Coarsening stops at pc.amg.coarse_size scalar rows, at pc.amg.max_levels, or when a level
 * shrinks by less than 10 %; the coarsest level is solved with a dense inverse (Cholesky).
 *
 * The block Jacobi scaling D^-1 (not the point diagonal) is used throughout: it keeps the node
 * coupling of elasticity, and on coarse levels it leaves out the dofs whose tentative column was
 * dropped (zero row and column of A_{l+1}) instead of dividing by their zero diagonal.
 *
 * Apply: a V- or W-cycle with pre- and post-smoothing. The smoothers are polynomials in
 * D^-1 A (Chebyshev on [rho/ratio, rho], damped block Jacobi) or l1-Jacobi, all A-self-adjoint,
 * so with equal pre and post sweeps the cycle is a symmetric preconditioner for CG. The whole
 * hierarchy (matrices, vectors, coarse inverse) is kept in pc->prec while CG runs in fp64:
 * fp32 by default (pc.amg.precision=auto), which halves the bytes every level's SpMV reads; the
 * solver rebuilds it in fp64 when the fp32 cycle stalls the outer iteration (amg_fallback).
 *
 * Re-set-up (hk_solver_update_values: new values, the same pattern): the aggregates (so the
 * strength graph is not formed again), the tentative prolongators T and the patterns of A T (=
 * P), P^T, A P and every coarse operator are kept; T stays while K's decoupled dofs (supports)
 * are the set-up's (else the near-null space and every T are made again). D^-1, rho and the
 * values of A T, P (smoothed in place), R (a copy per block), A P and A_{l+1} are computed into
 * the kept patterns by the ops' numeric halves (amg_tentative_product_numeric,
 * bmat_spgemm_numeric, amg_smooth_prolongator_numeric, bmat_transpose_numeric: the digits of a
 * fresh set-up with the same aggregates, with no pattern made, sorted or allocated), then the level
 * matrices (rebuilt in place), the transfer values (converted into the kept fp32 arrays) and the
 * coarse inverse. With pc.amg.update=prolongator (MueLu's reuse "RP", PETSc GAMG's
 * reuse_interpolation) P and R are kept as well, and a re-set-up with the set-up's supports
 * forms only D^-1, rho, A P and A_{l+1} = R (A P), the level matrices and the coarse inverse:
 * with K itself the set-up's bytes; other supports make T, P and R again as the default does.
 * fp64 levels keep P and R in fp64. fp32 levels round P's values to fp32 as soon as P is made
 * (so R = P^T, A P and A_c are formed from the P the cycle applies: A_c is its exact Galerkin
 * operator, summed in fp64) and keep P as a padded fp32 copy, R as the fp32 values the cycle
 * applies; the re-set-up's products read them in fp32 (bmat_spgemm_numeric_plan_f32), where a
 * backend lacks that op, fp64 copies of P and R as fp64 levels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pc_impl.h"
#include "text.h"

#define AMG_MAX_LEVELS HK_AMG_STATS_LEVELS
#define AMG_MAX_NNS 6       /* coarse block size; the diag op inverts blocks up to 6 x 6 */
#define AMG_MAX_COARSE HK_AMG_MAX_COARSE /* (n^3 set-up) */

enum { SMOOTHER_CHEBYSHEV = HK_AMG_CHEBYSHEV, SMOOTHER_L1_JACOBI = HK_AMG_L1_JACOBI,
       SMOOTHER_BJACOBI = HK_AMG_BJACOBI };
static const char *const smoother_names[] = {"chebyshev", "l1-jacobi", "bjacobi", NULL};
static const char *const cycle_names[] = {"v", "w", NULL};
/* auto: fp32 levels, rebuilt in fp64 when they stall the solve; fp32, fp64: fixed */
enum { AMG_PREC_AUTO = HK_AMG_PREC_AUTO, AMG_PREC_FP32 = HK_AMG_PREC_FP32,
       AMG_PREC_FP64 = HK_AMG_PREC_FP64 };
static const char *const precision_names[] = {"auto", "fp32", "fp64", NULL};
/* pc.amg.update: aggregates: the re-set-up keeps the aggregates, T and the patterns and makes
 * P and R again (a fresh set-up's hierarchy for those aggregates); prolongator: it keeps P and
 * R too and forms only the coarse operators, the smoother data and the coarse inverse */
enum { AMG_UPDATE_AGGREGATES = HK_AMG_UPDATE_AGGREGATES,
       AMG_UPDATE_PROLONGATOR = HK_AMG_UPDATE_PROLONGATOR };
static const char *const update_names[] = {"aggregates", "prolongator", NULL};

typedef struct amg_level {
    int64_t n, nnz; /* scalar rows and stored scalar entries */
    int bs;
    hk_mat *A; /* level operator in pc->prec */
    int A_owned;
    /* P and R to and from level l+1 as block CSR (NULL on the coarsest): always their
     * patterns (the re-set-up fills them again); their values where bmat_spmv applies them,
     * fp64 in val or fp32 in Pv, Rv (val then freed); else scalar csr copies in P, R */
    hk_bmat Pb, Rb;
    float *Pv, *Rv;
    hk_mat *P, *R;
    /* pc.amg.update=prolongator: P's and R's fp64 values for the coarse operators of the
     * re-set-ups, where Pb.val and Rb.val do not hold them (scalar csr copies, or a backend
     * without the fp32-operand product) */
    double *P64, *R64;
    /* pc.amg.update=prolongator with fp32 levels applied by bmat_spmv (the backend having
     * bmat_spgemm_numeric_plan_f32 and vec_convert_blocks): instead of P64 and R64, P's values
     * in fp32 with each block padded to p32_stride floats (br bc rounded up to a multiple of 4:
     * 16-byte loads), read by A P; R (A P) reads R's values from Rv. Both are exact: fp32
     * levels round P's values to fp32 before R, A P and R (A P) are formed. */
    float *P32;
    int p32_stride;
    hk_vec *Dinv; /* inverse node blocks (n*bs) in pc->prec: chebyshev, bjacobi */
    hk_vec *ritz; /* pc.amg.update_lanczos > 0: the top Ritz vector of D^-1 A, pc->prec */
    hk_vec *l1;   /* l1-Jacobi scaling (n): l1-jacobi */
    double rho;   /* upper bound of the spectrum of D^-1 A (safety included) */
    int32_t *agg; /* the aggregate of each node (backend array; levels with a coarser one) */
    int64_t nagg;
    hk_bmat T;     /* the tentative prolongator (values too): kept for the re-set-ups */
    hk_bmat APpat; /* the pattern of A_l P_l (no values) */
    hk_bmat Apat;  /* the pattern of A_l, l >= 1 (no values; level 0 is K) */
    /* kept from the first re-set-up on, so that the next ones allocate nothing: the fp64
     * values of A_l P_l (APval) and of A_l, l >= 1 (Aval: the Galerkin product's output), and
     * the backend's plans of A_l P_l and of R (A_l P_l) (bmat_spgemm_plan; NULL where it has
     * none), plan_bytes their size */
    double *APval, *Aval;
    void *ap_plan, *rap_plan;
    size_t plan_bytes;
    int planned; /* the plans were asked for (made, or NULL where the backend has none) */
    /* the re-set-ups' work vectors, made by the first one and kept: the fp64 inverse node
     * blocks of an fp32 level (D64) and the spectral bound's products (q, pc->prec) */
    hk_vec *D64, *q;
    hk_vec *Zk[64]; /* pc.amg.update_lanczos: the warm Lanczos steps' vectors (level 0) */
    hk_vec *b, *x; /* right-hand side and solution of this level (levels >= 1) */
    hk_vec *r, *t, *d;
    hk_vec *d2;    /* chebyshev of degree 3 and up through amg_cheb_step */
    hk_vec *w, *e; /* W-cycle: second visit's residual and correction (levels >= 1) */
} amg_level;

typedef struct amg_data {
    int nlevels;
    amg_level lev[AMG_MAX_LEVELS];
    hk_vec *Minv; /* dense inverse of the coarsest operator, column-major, pc->prec */
    /* the re-set-ups' work vectors (fp64, one entry a dof), made by the first one and kept:
     * the diagonal check's output and the flags' difference (scratch), K's decoupled dofs
     * (dec_new, swapped with dec when they changed) */
    hk_vec *scratch, *dec_new;
    double *lanczos_scal; /* the spectral bounds' coefficients (backend scalars), kept */
    /* options */
    double threshold, omega, ratio, safety;
    int max_levels, coarse_size, smoother, degree, pre, post, cycle, lanczos, precision;
    int update;         /* pc.amg.update */
    int update_lanczos; /* pc.amg.update_lanczos (0: the set-up's bound) */
    hk_format fmt; /* pc.amg.format, or the operator's */
    int fmt_given;
    int unfused; /* HOOKE_AMG_UNFUSED=1: the cycle's and the bounds' separate vector ops (for
                  * comparisons) */
    int galerkin_full; /* HOOKE_AMG_GALERKIN=full: A_c by the whole product R (A P) */
    /* HOOKE_AMG_UPDATE_VALUES=transient: each update allocates and frees A P's values, and
     * P's transpose in fp64 where R is kept neither in fp64 nor as the fp32 values that the
     * re-set-up's product reads (no R64: a backend without bmat_spgemm_numeric_plan_f32) */
    int transient;
    /* what was built */
    int nns;
    const char *nns_kind;
    int fp32_range; /* the spectral estimate met a non-finite value in an fp32 level */
    /* the near-null space's frame from the node coordinates (centre, 1 / largest extent) and
     * the coordinates on the backend: made once, kept for the re-set-ups */
    double centre[3], scale;
    int have_frame;
    hk_vec *xyz;
    hk_vec *dec; /* K's decoupled dofs at the set-up (bmat_diag DECOUPLED): while a new K has
                  * the same, the near-null space and every T are the set-up's */
    hk_amg_stats st;
} amg_data;

/* ---- helpers ----------------------------------------------------------------------------- */

static int need_op(const hk_backend_ops *be, const void *op, const char *name)
{
    HK_CHECK(op, HK_ERR_UNSUPPORTED,
             "pc=amg: the %s backend lacks the set-up op %s; use another preconditioner "
             "on this backend",
             be->name, name);
    return 0;
}

/* A view of column j of a column-major n x k backend array as an fp64 vector. */
static hk_vec column_view(const hk_backend_ops *be, double *B, int64_t n, int j)
{
    hk_vec v = {.be = be, .n = n, .prec = HK_FP64, .data = B + (size_t)j * n};
    return v;
}

static double now_synced(const hk_backend_ops *be)
{
    be->sync();
    return hk_time();
}

/* The seconds since *t (the backend synced), and *t = now. */
static double lap(const hk_backend_ops *be, double *t)
{
    const double now = now_synced(be), dt = now - *t;
    *t = now;
    return dt;
}

/* The near-null space of level 0 on the backend (n x nns, column-major): rigid-body modes
 * from the node coordinates, the caller's vectors, or the bs translations; rows of dofs that
 * a support decoupled are zeroed so the hierarchy eliminates supports consistently. */
static int nearnull_build(hk_pc *pc, amg_data *d, const hk_bmat *K, const hk_vec *dec,
                          double **Bout)
{
    const hk_backend_ops *be = pc->be;
    const hk_nearnull *nn = pc->nearnull;
    const int bs = K->br;
    const int64_t nb = K->nbrows, n = nb * bs;
    double *Bh = NULL, *B = NULL;
    hk_vec *keep = NULL;
    int ierr = 0, nns;
    *Bout = NULL;
    if (nn && nn->coords) {
        HK_CHECK(nn->dim == bs && (bs == 2 || bs == 3), HK_ERR_ARG,
                 "pc=amg: %dD node coordinates need a block size of %d, but the matrix has "
                 "block size %d; give vectors instead",
                 nn->dim, nn->dim, bs);
        nns = bs == 3 ? 6 : 3;
        d->nns_kind = "rigid-body modes";
    } else if (nn && nn->vectors) {
        nns = nn->nvec;
        HK_CHECK(nns >= 1 && nns <= AMG_MAX_NNS, HK_ERR_ARG,
                 "pc=amg: %d near-null vectors given; give 1 to %d", nns, AMG_MAX_NNS);
        d->nns_kind = nns == 1 ? "given vector" : "given vectors";
    } else {
        nns = bs;
        d->nns_kind = bs == 1 ? "constant vector (no near-null space given)"
                              : "translations only (no coordinates given)";
    }
    d->nns = nns;
    /* centred on the mean node and scaled by the largest extent: the rotations are then of
     * the same size as the translations (no matrix values); once per hierarchy, kept for the
     * re-set-ups. Coordinates in the backend's memory (a device assembly's) stay there: copied
     * to the hierarchy's own vector and framed by the backend; host ones are framed here. */
    const int resident = nn && nn->coords && nn->coords_be;
    HK_CHECK(!resident || (nn->coords_be == be && be->amg_rigid_modes && be->amg_coord_frame),
             HK_ERR_ARG,
             "pc=amg: the node coordinates are in %s memory but the set-up runs on %s; give "
             "them on the host",
             resident ? nn->coords_be->name : "", be->name);
    if (resident && !d->xyz) {
        HK_TRY(hk_vec_create(be, n, HK_FP64, &d->xyz));
        if (n) HK_TRY(be->copy(d->xyz->data, nn->coords, (size_t)n * sizeof(double)));
    }
    if (nn && nn->coords && !d->have_frame) {
        if (resident)
            HK_TRY(be->amg_coord_frame(nb, bs, d->xyz, d->centre, &d->scale));
        else
            HK_TRY(hk_amg_coord_frame_host(nn->coords, nb, bs, d->centre, &d->scale));
        d->have_frame = 1;
    }
    const double *c = d->centre, s = nn && nn->coords ? d->scale : 1;
    HK_TRY(be->alloc((void **)&B, (size_t)(n ? n : 1) * nns * sizeof *B));
    if (be->amg_rigid_modes && !(nn && nn->vectors)) {
        /* built where B lives: only the coordinates (n values, not n x nns) travel, once (kept
         * for the re-set-ups) */
        if (nn && nn->coords && !d->xyz) {
            HK_TRY(hk_vec_create(be, n, HK_FP64, &d->xyz));
            HK_TRY(hk_vec_upload(d->xyz, nn->coords));
        }
        HK_TRY(be->amg_rigid_modes(nb, bs, d->xyz, c, s, dec, B));
        *Bout = B;
        B = NULL;
        goto fail;
    }
    HK_TRY(hk_calloc((size_t)(n ? n : 1) * nns, sizeof *Bh, &Bh));
    if (nn && nn->coords) {
        for (int64_t i = 0; i < nb; i++) {
            double x[3] = {0, 0, 0};
            for (int a = 0; a < bs; a++)
                x[a] = (nn->coords[i * bs + a] - c[a]) * s;
            double *row = Bh + i * bs; /* entry (dof a of node i, mode m): row[a + m*n] */
            for (int a = 0; a < bs; a++)
                row[a + (size_t)a * n] = 1; /* translations */
            if (bs == 2) {                  /* rotation in the plane: (-y, x) */
                row[0 + 2 * (size_t)n] = -x[1];
                row[1 + 2 * (size_t)n] = x[0];
            } else { /* about x: (0, -z, y); about y: (z, 0, -x); about z: (-y, x, 0) */
                row[1 + 3 * (size_t)n] = -x[2];
                row[2 + 3 * (size_t)n] = x[1];
                row[0 + 4 * (size_t)n] = x[2];
                row[2 + 4 * (size_t)n] = -x[0];
                row[0 + 5 * (size_t)n] = -x[1];
                row[1 + 5 * (size_t)n] = x[0];
            }
        }
    } else if (nn && nn->vectors) {
        memcpy(Bh, nn->vectors, (size_t)n * nns * sizeof *Bh);
    } else {
        for (int64_t i = 0; i < n; i++)
            Bh[i + (size_t)(i % bs) * n] = 1;
    }
    if (n) HK_TRY(be->copy_to(B, Bh, (size_t)n * nns * sizeof *B));
    /* keep = 1 - decoupled, multiplied into every column on the backend */
    HK_TRY(hk_vec_create(be, n, HK_FP64, &keep));
    HK_TRY(be->vec_set(keep, 1.0));
    HK_TRY(be->vec_axpby(keep, -1.0, dec, 1.0));
    for (int j = 0; j < nns; j++) {
        hk_vec col = column_view(be, B, n, j);
        HK_TRY(be->vec_pointwise_mult(&col, keep, &col));
    }
    *Bout = B;
    B = NULL;
fail:
    if (B) be->dealloc(B);
    hk_vec_destroy(keep);
    free(Bh);
    return ierr;
}

/* *v: a vector of n entries in precision p, kept when it already is one (else made). */
static int work_vec(const hk_backend_ops *be, int64_t n, hk_precision p, hk_vec **v)
{
    if (*v && (*v)->n == n && (*v)->prec == p) return 0;
    hk_vec_destroy(*v);
    *v = NULL;
    return hk_vec_create(be, n, p, v);
}

/* *dec = K's decoupled dofs (1: no nonzero off the diagonal in its row, a support), fp64 (a
 * kept *dec of that size is written over). */
static int decoupled_dofs(hk_pc *pc, const hk_bmat *K, hk_vec **dec)
{
    int64_t bad;
    HK_CALL(work_vec(pc->be, K->nbrows * K->br, HK_FP64, dec));
    const int ierr = pc->be->bmat_diag(K, HK_DIAG_DECOUPLED, *dec, &bad);
    if (ierr) {
        hk_vec_destroy(*dec);
        *dec = NULL;
    }
    return ierr;
}

/* *same = the 0/1 flags a and b (bmat_diag DECOUPLED's exact 0.0 and 1.0) are equal: their
 * bytes by mem_equal, or where a backend lacks it their difference's square sum exactly 0 (t:
 * a work vector of their size, written over). */
static int same_flags(const hk_backend_ops *be, const hk_vec *a, const hk_vec *b, hk_vec *t,
                      int *same)
{
    double dd = 1;
    *same = 0;
    if (be->mem_equal) /* the flags are 0 or 1: equal values are equal bytes; one pass */
        return be->mem_equal(a->data, b->data, (size_t)a->n * sizeof(double), same);
    int ierr = be->vec_copy(t, a);
    if (!ierr) ierr = be->vec_axpby(t, -1.0, b, 1.0);
    if (!ierr) ierr = be->vec_dot(t, t, &dd);
    *same = !ierr && dd == 0;
    return ierr;
}

/* An upper bound of the spectrum of D^-1 A (D^-1 = Dinv, inverse node blocks) from `steps`
 * steps of preconditioned CG, whose coefficients give the Lanczos tridiagonal of D^-1 A in
 * the A inner product; its largest eigenvalue (a lower bound of the true one that converges
 * from below quickly) times the safety factor. */
static int level_spmv(void *A, const hk_vec *x, hk_vec *y)
{
    return hk_mat_spmv(A, x, y);
}

/* Level L's smoother sweep description. */
static hk_amg_sweep level_sweep(hk_pc *pc, amg_data *d, amg_level *L)
{
    hk_amg_sweep s = {.be = pc->be,
                      .spmv = level_spmv,
                      .A = L->A,
                      .kind = d->smoother,
                      .bs = L->bs,
                      .degree = d->degree,
                      .Dinv = L->Dinv,
                      .l1 = L->l1,
                      .rho = L->rho,
                      .ratio = d->ratio,
                      .r = L->r,
                      .t = L->t,
                      .d = L->d,
                      .mat = d->unfused ? NULL : L->A,
                      .d2 = L->d2,
                      .scal = d->lanczos_scal};
    return s;
}

/* The bound's scalars: S[2k] = r_k . z_k, S[2k + 1] = p_k . A p_k. On a backend with vec_dot_s
 * and vec_axpby_s they stay in its memory (S backend scalars) and are read once after the last
 * step: a step waits for nothing (two waits a step before: 0.1 ms a step of the bracket's
 * small coarse levels on an H200, where the kernels are short). Elsewhere (the distributed ops)
 * S is host memory and these two use the waiting ops, with the same digits. */
static int dot_s(const hk_backend_ops *be, int dev, const hk_vec *x, const hk_vec *y, double *s)
{
    return dev ? be->vec_dot_s(x, y, s) : be->vec_dot(x, y, s);
}

/* y = a (an / ad) x + b (bn / bd) y (an, bn NULL: a, b), as dot_s. */
static int axpby_s(const hk_backend_ops *be, int dev, hk_vec *y, double a, const double *an,
                   const double *ad, const hk_vec *x, double b, const double *bn, const double *bd)
{
    if (dev) return be->vec_axpby_s(y, a, an, ad, x, b, bn, bd);
    return be->vec_axpby(y, an ? a * (*an / *ad) : a, x, bn ? b * (*bn / *bd) : b);
}

/* Whether the backend keeps the bound's coefficients in its own memory (vec_dot_s,
 * vec_axpby_s, scal_alloc): then no step waits. */
static int lanczos_on_backend(const hk_backend_ops *be)
{
    return be->vec_dot_s && be->vec_axpby_s && be->scal_alloc;
}

/* hk_amg_lanczos_bound; with Z (steps vectors of the level's size and precision) also the
 * Ritz vector of the largest Ritz value into ritz: y = sum_j s_j v_j over the Lanczos vectors
 * v_j = (-1)^j z_j / sqrt(r_j . z_j) of the CG's preconditioned residuals z_j (D-orthonormal),
 * s the tridiagonal's top eigenvector. Z = NULL: the digits of the bound alone (the Ritz
 * vector costs a copy of each z_j and the sum, and changes no digit of rho). All `steps` steps
 * run on the backend; the coefficients read after them decide where the recurrence ended
 * (r . z below 1e-24 of its start) and whether a step met a non-positive or non-finite p . A p,
 * as the step itself would have: the later steps' numbers are then ignored. */
static int lanczos_ritz(const hk_amg_sweep *s, int steps, double safety, int level, hk_vec *q,
                        double *rho, int *fp32_range, hk_vec **Z, hk_vec *ritz)
{
    const hk_backend_ops *be = s->be;
    int ierr = 0, k = 0;
    double al[64], be_[64], T[64 * 64], ev[64], V[64 * 64], rzs[64];
    double hs[HK_AMG_LANCZOS_SCALARS], *S = s->scal;
    hk_vec *r = s->r, *z = s->t, *p = s->d;
    const hk_precision prec = r->prec;
    const int dev = lanczos_on_backend(be);
    HK_CHECK(steps >= 1 && 2 * steps + 1 <= HK_AMG_LANCZOS_SCALARS, HK_ERR_INTERNAL,
             "pc=amg: %d Lanczos steps are out of range", steps);
    if (!dev) S = hs;
    else if (!S) HK_CALL(be->scal_alloc(&S, HK_AMG_LANCZOS_SCALARS));
    /* three ops a step instead of six where the backend has the fused ones (s->mat: the
     * level's operator as hk_mat, NULL with HOOKE_AMG_UNFUSED=1 or on distributed levels) */
    const int fused = dev && s->mat && be->spmv_dot_s && be->bdiag_update_dot_s;
    HK_TRY(be->bdiag_apply(s->Dinv, s->bs, r, z));
    HK_TRY(be->vec_copy(p, z));
    HK_TRY(dot_s(be, dev, r, z, &S[0]));
    for (int j = 0; j < steps; j++) {
        if (Z) HK_TRY(be->vec_copy(Z[j], z));
        /* q = A p, p.Ap; r -= (r.z / p.Ap) q; z = D^-1 r, r.z; p = z + (r.z new / r.z) p */
        if (fused) {
            HK_TRY(be->spmv_dot_s(s->mat, p, q, &S[2 * j + 1]));
            HK_TRY(be->bdiag_update_dot_s(r, &S[2 * j], &S[2 * j + 1], q, s->Dinv, s->bs, z,
                                          &S[2 * j + 2]));
        } else {
            HK_TRY(s->spmv(s->A, p, q));
            HK_TRY(dot_s(be, dev, p, q, &S[2 * j + 1]));
            HK_TRY(axpby_s(be, dev, r, -1.0, &S[2 * j], &S[2 * j + 1], q, 1.0, NULL, NULL));
            HK_TRY(be->bdiag_apply(s->Dinv, s->bs, r, z));
            HK_TRY(dot_s(be, dev, r, z, &S[2 * j + 2]));
        }
        HK_TRY(axpby_s(be, dev, p, 1.0, NULL, NULL, z, 1.0, &S[2 * j + 2], &S[2 * j]));
    }
    if (dev) HK_TRY(be->scal_get(S, 0, 2 * steps + 1, hs));
    const double rz0 = hs[0];
    for (k = 0; k < steps && hs[2 * k] > 1e-24 * rz0;) {
        const double rz = hs[2 * k], pq = hs[2 * k + 1], rzn = hs[2 * k + 2];
        rzs[k] = rz;
        if (prec == HK_FP32 && !(isfinite(pq) && isfinite(rz))) {
            *fp32_range = 1; /* the set-up may build the levels in fp64 instead */
            HK_TRY_CHECK(0, HK_ERR_NUMERIC,
                         "pc=amg: the fp32 operator of level %d overflows (p.Ap = %g in its "
                         "spectral estimate): its values exceed fp32's range; use "
                         "pc.amg.precision=auto or fp64",
                         level, pq);
        }
        HK_TRY_CHECK(pq > 0 && isfinite(pq) && isfinite(rz), HK_ERR_NUMERIC,
                     "pc=amg: the operator of level %d is not positive definite (p.Ap = %g in "
                     "its spectral estimate); pc=amg needs an SPD matrix",
                     level, pq);
        al[k] = rz / pq;
        be_[k] = rzn / rz;
        k++;
    }
    HK_TRY_CHECK(k > 0, HK_ERR_NUMERIC,
                 "pc=amg: no spectral estimate on level %d (the block-Jacobi scaled start "
                 "vector is zero); check the matrix for zero node blocks",
                 level);
    memset(T, 0, sizeof T);
    for (int j = 0; j < k; j++) {
        T[j * k + j] = 1 / al[j] + (j ? be_[j - 1] / al[j - 1] : 0);
        if (j + 1 < k) T[j * k + j + 1] = T[(j + 1) * k + j] = sqrt(be_[j]) / al[j];
    }
    HK_TRY(hk_dense_symeig(k, T, ev, Z ? V : NULL));
    HK_TRY_CHECK(ev[k - 1] > 0 && isfinite(ev[k - 1]), HK_ERR_NUMERIC,
                 "pc=amg: the spectral estimate of level %d is %g; pc=amg needs an SPD matrix",
                 level, ev[k - 1]);
    *rho = safety * ev[k - 1];
    for (int j = 0; Z && j < k; j++) {
        const double c = (j & 1 ? -1 : 1) * V[(size_t)(k - 1) * k + j] / sqrt(rzs[j]);
        HK_TRY(be->vec_axpby(ritz, c, Z[j], j ? 1.0 : 0.0));
    }
fail:
    if (dev && S != s->scal) be->scal_free(S);
    return ierr;
}

int hk_amg_lanczos_bound(const hk_amg_sweep *s, int steps, double safety, int level, hk_vec *q,
                         double *rho, int *fp32_range)
{
    return lanczos_ritz(s, steps, safety, level, q, rho, fp32_range, NULL, NULL);
}

/* An upper bound of the spectrum of D^-1 A (D^-1 = Dinv, inverse node blocks) from `steps`
 * steps of preconditioned CG, whose coefficients give the Lanczos tridiagonal of D^-1 A in
 * the A inner product; its largest eigenvalue (a lower bound of the true one that converges
 * from below quickly) times the safety factor, from a fixed start vector.
 * With pc.amg.update_lanczos=N (N > 0) the bound of the fine level also keeps its top Ritz
 * vector (L->ritz), and a re-set-up takes N steps started from it (r = A y, so z = D^-1 A y:
 * one power step on the old eigenvector) instead of pc.amg.lanczos steps from the fixed start
 * vector. The top of the spectrum of the block-Jacobi scaled K hardly moves when a material
 * changes, nor its eigenvector, and Lanczos from it reaches at least that vector's Rayleigh
 * quotient at once (elasticity3d:20 with a region 10 or 1000 times stiffer: 4 warm steps within
 * 0.2 % of 60 cold ones, 10 cold ones 1.3-1.6 % below). The coarse levels always take the cold
 * steps: with kept P their spectra move with the material (level 1 of that grid, region 1000
 * times stiffer: its top 1.53 -> 1.82, which 4 warm steps put at 1.62, so 1.78 with the safety
 * factor, under the top; 10 cold ones at 1.80). warm: a re-set-up. */
static int spectral_bound(hk_pc *pc, amg_data *d, amg_level *L, int level, int warm)
{
    const hk_backend_ops *be = pc->be;
    int ierr = 0;
    hk_vec *q = NULL, *Z[64] = {NULL};
    const int keep = d->update_lanczos > 0 && level == 0;
    const int resetup = warm; /* q and Z kept in L->q, L->Zk from the first re-set-up on */
    warm = warm && keep && L->ritz && L->ritz->prec == pc->prec;
    const int want = warm ? d->update_lanczos : d->lanczos;
    const int steps = want < L->n ? want : (int)L->n;
    if (resetup) {
        HK_CALL(work_vec(be, L->n, pc->prec, &L->q));
        q = L->q;
    } else {
        HK_CALL(hk_vec_create(be, L->n, pc->prec, &q));
    }
    if (!d->lanczos_scal && lanczos_on_backend(be))
        HK_TRY(be->scal_alloc(&d->lanczos_scal, HK_AMG_LANCZOS_SCALARS));
    const hk_amg_sweep s = level_sweep(pc, d, L);
    if (warm) /* r = A y */
        HK_TRY(s.spmv(s.A, L->ritz, L->r));
    else /* a deterministic start with every entry nonzero, made on the backend */
        HK_TRY(be->amg_start_vector(L->r));
    if (keep) {
        for (int j = 0; j < steps; j++) {
            if (resetup) {
                HK_TRY(work_vec(be, L->n, pc->prec, &L->Zk[j]));
                Z[j] = L->Zk[j];
            } else {
                HK_TRY(hk_vec_create(be, L->n, pc->prec, &Z[j]));
            }
        }
        if (L->ritz && L->ritz->prec != pc->prec) {
            hk_vec_destroy(L->ritz);
            L->ritz = NULL;
        }
        if (!L->ritz) HK_TRY(hk_vec_create(be, L->n, pc->prec, &L->ritz));
    }
    HK_TRY(lanczos_ritz(&s, steps, d->safety, level, q, &L->rho, &d->fp32_range,
                        keep ? Z : NULL, L->ritz));
fail:
    for (int j = 0; j < steps && j < 64; j++)
        if (Z[j] != L->Zk[j]) hk_vec_destroy(Z[j]);
    if (q != L->q) hk_vec_destroy(q);
    return ierr;
}

/* Inverse node blocks of A in pc->prec (L->Dinv) and in fp64 (*D64: L->Dinv itself when the
 * level is fp64, else a vector the caller destroys). */
static int block_inverse(hk_pc *pc, const hk_bmat *A, int level, amg_level *L, int resetup,
                         hk_vec **D64)
{
    const hk_backend_ops *be = pc->be;
    int ierr = 0;
    int64_t bad = -1;
    hk_vec *D = NULL;
    const int64_t nd = L->n * L->bs;
    *D64 = NULL;
    if (pc->prec == HK_FP64 && L->D64) {
        hk_vec_destroy(L->D64);
        L->D64 = NULL;
    }
    if (resetup) { /* written over: L->Dinv itself (fp64 levels) or the kept L->D64 */
        HK_CALL(work_vec(be, nd, HK_FP64, pc->prec == HK_FP64 ? &L->Dinv : &L->D64));
        D = pc->prec == HK_FP64 ? L->Dinv : L->D64;
    } else {
        hk_vec_destroy(L->Dinv);
        L->Dinv = NULL;
        HK_CALL(hk_vec_create(be, nd, HK_FP64, &D));
    }
    HK_TRY(be->bmat_diag(A, HK_DIAG_BLOCK_INV, D, &bad));
    HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                 "pc=amg: the %dx%d diagonal block of node %lld on level %d is singular or not "
                 "finite (scalar row %lld); pc=amg needs an SPD matrix whose node blocks are "
                 "invertible",
                 L->bs, L->bs, (long long)(bad / L->bs), level, (long long)bad);
    if (pc->prec == HK_FP64) { /* no copy: the smoother's blocks are the fp64 ones */
        L->Dinv = *D64 = D;
        return 0;
    }
    HK_TRY(work_vec(be, nd, pc->prec, &L->Dinv));
    HK_TRY(be->vec_convert(L->Dinv, D));
    *D64 = D;
    return 0;
fail:
    if (D != L->Dinv && D != L->D64) hk_vec_destroy(D);
    return ierr;
}

static int l1_scaling(hk_pc *pc, const hk_bmat *A, int level, amg_level *L)
{
    const hk_backend_ops *be = pc->be;
    int ierr = 0;
    int64_t bad = -1;
    hk_vec *D = NULL;
    hk_vec_destroy(L->l1);
    L->l1 = NULL;
    HK_CALL(need_op(be, (const void *)be->amg_l1_diag, "amg_l1_diag"));
    HK_CALL(hk_vec_create(be, L->n, HK_FP64, &D));
    HK_TRY(be->amg_l1_diag(A, D, &bad));
    HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                 "pc=amg: scalar row %lld of level %d has a non-positive l1 row sum (diagonal "
                 "not positive); use pc.amg.smoother=chebyshev or check that the matrix is SPD",
                 (long long)bad, level);
    HK_TRY(hk_vec_create(be, L->n, pc->prec, &L->l1));
    HK_TRY(be->vec_convert(L->l1, D));
fail:
    hk_vec_destroy(D);
    return ierr;
}

/* A backend matrix of the rectangular-block M with 1 x 1 blocks, in scalar csr. */
static int transfer_matrix(hk_pc *pc, const hk_bmat *M, hk_mat **out)
{
    hk_bmat S = {0};
    HK_CALL(pc->be->bmat_expand(M, &S));
    int ierr = hk_mat_create_bmat(&S, HK_FMT_CSR, pc->prec, NULL, out);
    hk_bmat_free(&S);
    return ierr;
}

/* fp64 transfer values *val that the level does not apply (*val taken): kept in *keep for
 * pc.amg.update=prolongator's re-set-ups (the old ones freed; keep non-NULL), else freed. */
static void retire_values(const hk_backend_ops *be, double **val, double **keep)
{
    if (keep) {
        if (*keep) be->dealloc(*keep);
        *keep = *val;
    } else if (*val) {
        be->dealloc(*val);
    }
    *val = NULL;
}

/* A block transfer operator kept as it is (no scalar expansion); in fp32 for an fp32 level:
 * *v32 gets the values and M's fp64 values are retired (retire_values with keep). */
static int block_transfer(hk_pc *pc, hk_bmat *M, float **v32, double **keep)
{
    const hk_backend_ops *be = pc->be;
    const int64_t nv = M->nnzb * M->br * M->bc;
    *v32 = NULL;
    if (pc->prec != HK_FP32 || nv == 0) return 0;
    HK_CALL(be->alloc((void **)v32, (size_t)nv * sizeof **v32));
    hk_vec src = {.be = be, .n = nv, .prec = HK_FP64, .data = M->val};
    hk_vec dst = {.be = be, .n = nv, .prec = HK_FP32, .data = *v32};
    HK_CALL(be->vec_convert(&dst, &src));
    retire_values(be, &M->val, keep);
    return 0;
}

/* Whether pc.amg.update=prolongator keeps P as a padded fp32 copy (amg_level.P32) instead of
 * fp64 copies of P and R: fp32 levels whose block transfer operators (P's pattern M) bmat_spmv
 * applies, on a backend with the fp32-operand product and the blocks' conversion. */
static int keeps_p32(const hk_pc *pc, const amg_data *d, const hk_bmat *M)
{
    const hk_backend_ops *be = pc->be;
    return d->update == AMG_UPDATE_PROLONGATOR && pc->prec == HK_FP32 && be->bmat_spmv &&
           M->br <= 8 && M->bc <= 8 && be->bmat_spgemm_numeric_plan_f32 && be->vec_convert_blocks &&
           be->bmat_spgemm_plan;
}

static void free_p32(const hk_backend_ops *be, amg_level *L)
{
    if (L->P32) be->dealloc(L->P32);
    L->P32 = NULL;
    L->p32_stride = 0;
}

/* L->P32 (allocated once) from the fp64 values val (fp32-exact) of P's pattern M: each block of
 * br bc values padded with zeros to a multiple of 4 floats, so that the product reads a block
 * in 16-byte words. */
static int padded_p32(const hk_backend_ops *be, amg_level *L, const hk_bmat *M, double *val)
{
    const int bb = M->br * M->bc, stride = (bb + 3) / 4 * 4;
    const int64_t nb = M->nnzb;
    if (L->P32 && L->p32_stride != stride) free_p32(be, L);
    if (!L->P32)
        HK_CALL(be->alloc((void **)&L->P32, (size_t)(nb ? nb : 1) * stride * sizeof(float)));
    L->p32_stride = stride;
    if (!nb) return 0;
    hk_vec src = {.be = be, .n = nb * bb, .prec = HK_FP64, .data = val};
    hk_vec dst = {.be = be, .n = nb * stride, .prec = HK_FP32, .data = L->P32};
    return be->vec_convert_blocks(&dst, stride, &src, bb, bb);
}

/* fp32 levels: M's values rounded to fp32 in place (fp64 storage holding fp32 values), so that
 * the fp32 P the cycle applies is P itself, R = P^T its transpose exactly, and A_c = R (A P)
 * (summed in fp64) the exact Galerkin operator of the transfer the cycle applies. fp64 levels:
 * nothing. */
static int round_fp32(const hk_pc *pc, hk_bmat *M)
{
    const hk_backend_ops *be = pc->be;
    const int64_t nv = M->nnzb * M->br * M->bc;
    if (pc->prec != HK_FP32 || nv == 0) return 0;
    hk_vec v = {.be = be, .n = nv, .prec = HK_FP64, .data = M->val};
    return be->vec_round_fp32(&v);
}

/* Level L's transfer operators from the fp64 P and R, moved into the level (the old ones
 * freed): block CSR applied by bmat_spmv with values in pc->prec, or scalar csr copies where
 * the backend lacks that op; the block patterns stay either way, and with
 * pc.amg.update=prolongator the fp64 values too (in Pb.val and Rb.val, or in P64 and R64). */
static int install_transfer(hk_pc *pc, amg_data *d, amg_level *L, hk_bmat *P, hk_bmat *R)
{
    const hk_backend_ops *be = pc->be;
    const int keep = d->update == AMG_UPDATE_PROLONGATOR;
    hk_bmat_free(&L->Pb);
    hk_bmat_free(&L->Rb);
    if (L->Pv) be->dealloc(L->Pv);
    if (L->Rv) be->dealloc(L->Rv);
    if (L->P64) be->dealloc(L->P64);
    if (L->R64) be->dealloc(L->R64);
    L->Pv = L->Rv = NULL;
    L->P64 = L->R64 = NULL;
    free_p32(be, L);
    hk_mat_destroy(L->P);
    hk_mat_destroy(L->R);
    L->P = L->R = NULL;
    L->Pb = *P;
    L->Rb = *R;
    memset(P, 0, sizeof *P);
    memset(R, 0, sizeof *R);
    /* fp32 levels with the fp32-operand product: P's padded fp32 copy, R read from Rv */
    const int p32 = keeps_p32(pc, d, &L->Pb);
    /* else P's transpose made by each update */
    const int keep_r = keep && !d->transient && !p32;
    if (be->bmat_spmv && L->Pb.br <= 8 && L->Pb.bc <= 8) {
        if (p32) HK_CALL(padded_p32(be, L, &L->Pb, L->Pb.val));
        HK_CALL(block_transfer(pc, &L->Pb, &L->Pv, keep && !p32 ? &L->P64 : NULL));
        return block_transfer(pc, &L->Rb, &L->Rv, keep_r ? &L->R64 : NULL);
    }
    HK_CALL(need_op(be, (const void *)be->bmat_expand, "bmat_expand"));
    HK_CALL(transfer_matrix(pc, &L->Pb, &L->P));
    HK_CALL(transfer_matrix(pc, &L->Rb, &L->R));
    retire_values(be, &L->Pb.val, keep ? &L->P64 : NULL);
    retire_values(be, &L->Rb.val, keep_r ? &L->R64 : NULL);
    return 0;
}

/* y = P x (prolongation) or y = R x (restriction) of level L. */
static int transfer_apply(hk_pc *pc, amg_level *L, int restrict_, const hk_vec *x, hk_vec *y)
{
    if (L->P) return hk_mat_spmv(restrict_ ? L->R : L->P, x, y);
    return pc->be->bmat_spmv(restrict_ ? &L->Rb : &L->Pb, restrict_ ? L->Rv : L->Pv, x, y);
}

/* *v: a vector of n entries in pc->prec (kept when it already is one). */
static int level_vec(hk_pc *pc, int64_t n, hk_vec **v)
{
    if (*v && (*v)->prec == pc->prec) return 0;
    hk_vec_destroy(*v);
    *v = NULL;
    return hk_vec_create(pc->be, n, pc->prec, v);
}

static int level_vectors(hk_pc *pc, amg_data *d, int l)
{
    amg_level *L = &d->lev[l];
    HK_CALL(level_vec(pc, L->n, &L->r));
    HK_CALL(level_vec(pc, L->n, &L->t));
    HK_CALL(level_vec(pc, L->n, &L->d));
    if (d->smoother == SMOOTHER_CHEBYSHEV && d->degree >= 3 && !d->unfused &&
        pc->be->amg_cheb_step)
        HK_CALL(level_vec(pc, L->n, &L->d2));
    if (l > 0) {
        HK_CALL(level_vec(pc, L->n, &L->b));
        HK_CALL(level_vec(pc, L->n, &L->x));
        if (d->cycle == 1) {
            HK_CALL(level_vec(pc, L->n, &L->w));
            HK_CALL(level_vec(pc, L->n, &L->e));
        }
    }
    return 0;
}

/* Everything the set-up built (the options stay). */
static void free_levels(hk_pc *pc, amg_data *d)
{
    for (int l = 0; l < AMG_MAX_LEVELS; l++) {
        amg_level *L = &d->lev[l];
        if (L->A_owned) hk_mat_destroy(L->A);
        hk_mat_destroy(L->P);
        hk_mat_destroy(L->R);
        hk_bmat_free(&L->Pb);
        hk_bmat_free(&L->Rb);
        hk_bmat_free(&L->APpat);
        hk_bmat_free(&L->Apat);
        hk_bmat_free(&L->T);
        if (L->Pv) pc->be->dealloc(L->Pv);
        if (L->Rv) pc->be->dealloc(L->Rv);
        if (L->P64) pc->be->dealloc(L->P64);
        if (L->R64) pc->be->dealloc(L->R64);
        free_p32(pc->be, L);
        if (L->agg) pc->be->dealloc(L->agg);
        if (L->APval) pc->be->dealloc(L->APval);
        if (L->Aval) pc->be->dealloc(L->Aval);
        if (L->ap_plan) pc->be->bmat_spgemm_plan_free(L->ap_plan);
        if (L->rap_plan) pc->be->bmat_spgemm_plan_free(L->rap_plan);
        hk_vec *v[] = {L->Dinv, L->l1, L->b, L->x,    L->r,   L->t, L->d,
                       L->d2,   L->w,  L->e, L->ritz, L->D64, L->q};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
            hk_vec_destroy(v[i]);
        for (int j = 0; j < 64; j++)
            hk_vec_destroy(L->Zk[j]);
        memset(L, 0, sizeof *L);
    }
    hk_vec_destroy(d->Minv);
    d->Minv = NULL;
    hk_vec_destroy(d->dec);
    hk_vec_destroy(d->dec_new);
    hk_vec_destroy(d->scratch);
    d->dec = d->dec_new = d->scratch = NULL;
    if (d->lanczos_scal) pc->be->scal_free(d->lanczos_scal);
    d->lanczos_scal = NULL;
    d->nlevels = 0;
}

static void amg_destroy(hk_pc *pc)
{
    free_levels(pc, pc->data);
    hk_vec_destroy(((amg_data *)pc->data)->xyz);
    free(pc->data);
    pc->data = NULL;
}

int hk_amg_read_options(hk_options *o, hk_amg_options *d)
{
    const char *fmtname = NULL;
    d->precision = AMG_PREC_AUTO;
    d->format = NULL;
    d->threshold = 0.02;
    d->omega = 1.6;
    d->ratio = 30;
    d->safety = 1.1;
    d->max_levels = 10;
    d->coarse_size = 1000;
    d->smoother = SMOOTHER_CHEBYSHEV;
    d->degree = 2;
    d->pre = d->post = 1;
    d->cycle = 0;
    d->lanczos = 10;
    d->update = AMG_UPDATE_AGGREGATES;
    d->update_lanczos = 0;
    HK_CALL(hk_options_get_double(o, "pc.amg.threshold", &d->threshold));
    HK_CALL(hk_options_get_double(o, "pc.amg.omega", &d->omega));
    HK_CALL(hk_options_get_double(o, "pc.amg.ratio", &d->ratio));
    HK_CALL(hk_options_get_double(o, "pc.amg.safety", &d->safety));
    HK_CALL(hk_options_get_int(o, "pc.amg.max_levels", &d->max_levels));
    HK_CALL(hk_options_get_int(o, "pc.amg.coarse_size", &d->coarse_size));
    HK_CALL(hk_options_get_choice(o, "pc.amg.smoother", smoother_names, &d->smoother));
    HK_CALL(hk_options_get_int(o, "pc.amg.degree", &d->degree));
    HK_CALL(hk_options_get_int(o, "pc.amg.pre", &d->pre));
    HK_CALL(hk_options_get_int(o, "pc.amg.post", &d->post));
    HK_CALL(hk_options_get_choice(o, "pc.amg.cycle", cycle_names, &d->cycle));
    HK_CALL(hk_options_get_int(o, "pc.amg.lanczos", &d->lanczos));
    HK_CALL(hk_options_get_string(o, "pc.amg.format", &fmtname));
    HK_CALL(hk_options_get_choice(o, "pc.amg.precision", precision_names, &d->precision));
    HK_CALL(hk_options_get_choice(o, "pc.amg.update", update_names, &d->update));
    HK_CALL(hk_options_get_int(o, "pc.amg.update_lanczos", &d->update_lanczos));
    HK_CHECK(d->threshold >= 0 && d->threshold < 1, HK_ERR_OPTION,
             "option pc.amg.threshold=%g is out of range; use 0 <= threshold < 1 (default 0.02)",
             d->threshold);
    HK_CHECK(d->omega >= 0 && d->omega <= 2, HK_ERR_OPTION,
             "option pc.amg.omega=%g is out of range; use 0..2 (default 1.6; 0: unsmoothed "
             "aggregation)",
             d->omega);
    HK_CHECK(d->ratio > 1 && d->ratio <= 1000, HK_ERR_OPTION,
             "option pc.amg.ratio=%g is out of range; use 1 < ratio <= 1000 (default 30)",
             d->ratio);
    HK_CHECK(d->safety >= 1 && d->safety <= 2, HK_ERR_OPTION,
             "option pc.amg.safety=%g is out of range; use 1..2 (default 1.1)", d->safety);
    HK_CHECK(d->max_levels >= 1 && d->max_levels <= AMG_MAX_LEVELS, HK_ERR_OPTION,
             "option pc.amg.max_levels=%d is out of range; use 1..%d (default 10)", d->max_levels,
             AMG_MAX_LEVELS);
    HK_CHECK(d->coarse_size >= 1 && d->coarse_size <= AMG_MAX_COARSE, HK_ERR_OPTION,
             "option pc.amg.coarse_size=%d is out of range; use 1..%d (default 1000)",
             d->coarse_size, AMG_MAX_COARSE);
    HK_CHECK(d->degree >= 1 && d->degree <= 10, HK_ERR_OPTION,
             "option pc.amg.degree=%d is out of range; use 1..10 (default 2)", d->degree);
    HK_CHECK(d->pre >= 0 && d->pre <= 10, HK_ERR_OPTION,
             "option pc.amg.pre=%d is out of range; use 0..10 (default 1)", d->pre);
    HK_CHECK(d->post >= 0 && d->post <= 10, HK_ERR_OPTION,
             "option pc.amg.post=%d is out of range; use 0..10 (default 1)", d->post);
    HK_CHECK(d->pre + d->post >= 1, HK_ERR_OPTION,
             "options pc.amg.pre=0 and pc.amg.post=0 leave the cycle without a smoother; use "
             "at least one sweep (default 1 and 1)");
    HK_CHECK(d->lanczos >= 2 && d->lanczos <= 60, HK_ERR_OPTION,
             "option pc.amg.lanczos=%d is out of range; use 2..60 (default 10)", d->lanczos);
    HK_CHECK(d->update_lanczos == 0 || (d->update_lanczos >= 2 && d->update_lanczos <= 60),
             HK_ERR_OPTION,
             "option pc.amg.update_lanczos=%d is out of range; use 0 (the updates' bounds as the "
             "set-up's, the default) or 2..60 (steps from the last top Ritz vector)",
             d->update_lanczos);
    d->format = fmtname;
    if (fmtname) {
        hk_format f;
        int ierr = hk_format_from_name(fmtname, &f);
        HK_CHECK(!ierr, HK_ERR_OPTION,
                 "option pc.amg.format=%s is not a format; use csr, bsr, ell, sell, bell, "
                 "sbell, cusparse-csr or cusparse-bsr (default: the operator's format)",
                 fmtname);
    }
    return 0;
}

static int read_options(amg_data *d, hk_options *o, hk_format *fmt, int *fmt_given)
{
    hk_amg_options op;
    HK_CALL(hk_amg_read_options(o, &op));
    d->threshold = op.threshold;
    d->omega = op.omega;
    d->ratio = op.ratio;
    d->safety = op.safety;
    d->max_levels = op.max_levels;
    d->coarse_size = op.coarse_size;
    d->smoother = op.smoother;
    d->degree = op.degree;
    d->pre = op.pre;
    d->post = op.post;
    d->cycle = op.cycle;
    d->lanczos = op.lanczos;
    d->precision = op.precision;
    d->update = op.update;
    d->update_lanczos = op.update_lanczos;
    d->st.update_keeps_p = op.update == AMG_UPDATE_PROLONGATOR;
    *fmt_given = op.format != NULL;
    if (op.format) HK_CALL(hk_format_from_name(op.format, fmt));
    return 0;
}

/* ---- set-up ------------------------------------------------------------------------------ */

/* Every scalar diagonal entry of K positive (an SPD matrix; supports kept as unit rows). */
static int check_diagonal(hk_pc *pc, const hk_bmat *K, hk_vec **keep)
{
    hk_vec *dg = NULL;
    int64_t bad = -1;
    if (keep)
        HK_CALL(work_vec(pc->be, pc->n, HK_FP64, keep));
    else
        HK_CALL(hk_vec_create(pc->be, pc->n, HK_FP64, &dg));
    int ierr = pc->be->bmat_diag(K, HK_DIAG_INV, keep ? *keep : dg, &bad);
    hk_vec_destroy(dg);
    HK_CALL(ierr);
    HK_CHECK(bad < 0, HK_ERR_NUMERIC,
             "pc=amg: row %lld has a diagonal entry that is not positive; pc=amg needs an "
             "SPD matrix (supports kept as unit rows) - check the assembly, or use "
             "pc=ilu0 with method=gmres for other matrices",
             (long long)bad + 1);
    return 0;
}

/* The levels' precision: pc->prec, and the conversion buffers of hk_pc_apply in it. */
void hk_amg_set_precision(hk_pc *pc, hk_precision p)
{
    if (pc->prec == p) return;
    hk_vec_destroy(pc->r_low);
    hk_vec_destroy(pc->z_low);
    pc->r_low = pc->z_low = NULL;
    pc->prec = p;
}

/* M on the pattern pat with values of its own (undefined): the pattern arrays are pat's, so
 * it is released with drop_values, never hk_bmat_free. */
static int values_on(const hk_backend_ops *be, const hk_bmat *pat, hk_bmat *M)
{
    *M = *pat;
    M->val = NULL;
    const size_t nv = (size_t)pat->nnzb * pat->br * pat->bc;
    return be->alloc((void **)&M->val, (nv ? nv : 1) * sizeof(double));
}

static void drop_values(const hk_backend_ops *be, hk_bmat *M)
{
    if (M->val) be->dealloc(M->val);
    memset(M, 0, sizeof *M);
}

/* The operator of level l for SpMV in pc->prec from A_l (level 0: K, and the solver's
 * operator A where the precisions agree, or A converted where only they differ), and the
 * level's vectors. A matrix of this level in this precision is rebuilt in place with the new
 * values: at level 0 of fp32 levels from the solver's fp64 operator A, which holds K's values
 * (the solver refills A before it updates the preconditioner), by rounding A's values where
 * the layouts are the same (a streaming pass instead of scattering K's rows again). */
static int level_operator(hk_pc *pc, amg_data *d, int l, const hk_bmat *Al, const hk_bmat *K,
                          hk_mat *A)
{
    amg_level *L = &d->lev[l];
    if (L->A && L->A_owned && L->A->prec == pc->prec) {
        int ierr = HK_ERR_UNSUPPORTED;
        if (l == 0 && A && A->be == pc->be && A->prec == HK_FP64 && pc->prec == HK_FP32)
            ierr = hk_mat_convert_values(L->A, A);
        if (ierr == HK_ERR_UNSUPPORTED) {
            hk_error_clear();
            ierr = hk_mat_rebuild(L->A, Al);
        }
        HK_CALL(ierr);
    } else {
        if (L->A_owned) hk_mat_destroy(L->A);
        L->A = NULL;
        L->A_owned = 0;
        if (l == 0 && !d->fmt_given) {
            HK_CALL(hk_pc_operator(pc, K, A, &L->A, &L->A_owned));
        } else {
            HK_CALL(hk_mat_create_bmat(Al, d->fmt, pc->prec, NULL, &L->A));
            L->A_owned = 1;
        }
    }
    return level_vectors(pc, d, l);
}

/* The coarsest level l: the dense inverse of A_l in pc->prec. */
static int coarsest(hk_pc *pc, amg_data *d, int l, const hk_bmat *Al)
{
    const hk_backend_ops *be = pc->be;
    const amg_level *L = &d->lev[l];
    int64_t bad = -1;
    if (d->Minv && d->Minv->prec != pc->prec) {
        hk_vec_destroy(d->Minv);
        d->Minv = NULL;
    }
    if (!d->Minv) HK_CALL(hk_vec_create(be, L->n * L->n, pc->prec, &d->Minv));
    HK_CALL(be->dense_inverse(Al, d->Minv, &bad));
    HK_CHECK(bad < 0, HK_ERR_NUMERIC,
             "pc=amg: the coarsest matrix (level %d, %lld rows) is singular or not "
             "positive definite at row %lld; the near-null space is probably not "
             "eliminated by the supports (is the structure fixed against rigid-body "
             "motion?), or the matrix is not SPD",
             l, (long long)L->n, (long long)bad);
    return 0;
}

/* The fp64 values *val of a kept transfer pattern M moved into the level: converted into *v32
 * (allocated once) for an fp32 level, *val then retired into *keep (retire_values), else M's
 * own values (the old ones and *keep freed); *val is taken. */
static int install_values(hk_pc *pc, hk_bmat *M, float **v32, double **val, double **keep)
{
    const hk_backend_ops *be = pc->be;
    const int64_t nv = M->nnzb * M->br * M->bc;
    if (pc->prec == HK_FP32 && nv > 0) {
        if (!*v32) HK_CALL(be->alloc((void **)v32, (size_t)nv * sizeof **v32));
        hk_vec src = {.be = be, .n = nv, .prec = HK_FP64, .data = *val};
        hk_vec dst = {.be = be, .n = nv, .prec = HK_FP32, .data = *v32};
        HK_CALL(be->vec_convert(&dst, &src));
        retire_values(be, val, keep);
        if (M->val) be->dealloc(M->val);
        M->val = NULL;
        return 0;
    }
    if (*v32) be->dealloc(*v32);
    *v32 = NULL;
    if (keep && *keep) be->dealloc(*keep);
    if (keep) *keep = NULL;
    if (M->val) be->dealloc(M->val);
    M->val = *val;
    *val = NULL;
    return 0;
}

/* The re-set-up's transfer operators: the values of P and R (fp64, on the kept patterns of
 * L->Pb and L->Rb; taken) into the level, without new patterns. */
static int refill_transfer(hk_pc *pc, amg_data *d, amg_level *L, hk_bmat *P, hk_bmat *R)
{
    const int keep = d->update == AMG_UPDATE_PROLONGATOR;
    if (L->P) { /* scalar csr copies (a backend without bmat_spmv): made again */
        hk_mat_destroy(L->P);
        hk_mat_destroy(L->R);
        L->P = L->R = NULL;
        HK_CALL(transfer_matrix(pc, P, &L->P));
        HK_CALL(transfer_matrix(pc, R, &L->R));
        if (keep) retire_values(pc->be, &P->val, &L->P64);
        retire_values(pc->be, &R->val, keep && !d->transient ? &L->R64 : NULL);
        return 0;
    }
    const int p32 = keeps_p32(pc, d, &L->Pb);
    if (p32)
        HK_CALL(padded_p32(pc->be, L, &L->Pb, P->val));
    else
        free_p32(pc->be, L);
    HK_CALL(install_values(pc, &L->Pb, &L->Pv, &P->val, keep && !p32 ? &L->P64 : NULL));
    return install_values(pc, &L->Rb, &L->Rv, &R->val,
                          keep && !d->transient && !p32 ? &L->R64 : NULL);
}

/* pc.amg.update=prolongator: the kept P and R of level L as fp64 block matrices (views: the
 * level's patterns and kept values, never freed by the caller). */
static void kept_transfer(const amg_level *L, hk_bmat *P, hk_bmat *R)
{
    *P = L->Pb;
    *R = L->Rb;
    P->val = L->Pb.val ? L->Pb.val : L->P64;
    R->val = L->Rb.val ? L->Rb.val : L->R64;
}

/* HOOKE_AMG_UPDATE_VALUES=transient with fp32 levels keeps no fp64 R: *R (kept_transfer's view,
 * R->val NULL) gets new values, P's transpose (the same bytes as the set-up's R); the caller
 * frees R->val. Nothing when R has values. */
static int transient_transpose(const hk_backend_ops *be, const amg_level *L, const hk_bmat *P,
                               hk_bmat *R)
{
    if (R->val) return 0;
    HK_CALL(values_on(be, &L->Rb, R));
    const int ierr = be->bmat_transpose_numeric(P, R);
    if (ierr) {
        be->dealloc(R->val);
        R->val = NULL;
    }
    return ierr;
}

/* The kept transfer operators of level L applied in pc->prec after the levels' precision
 * changed (the fp64 fallback of fp32 levels): fp64 levels apply the kept fp64 values
 * themselves (moved into Pb.val, Rb.val), or P's padded fp32 copy and R's fp32 values widened
 * (exact: fp32 levels rounded P, so these are the values fp64 copies would hold); scalar csr
 * copies are made again in the new precision. */
static int kept_transfer_precision(hk_pc *pc, amg_level *L)
{
    const hk_backend_ops *be = pc->be;
    if (L->P) {
        if (L->P->prec == pc->prec) return 0;
        hk_bmat P, R;
        kept_transfer(L, &P, &R);
        const int made = !R.val;
        HK_CALL(transient_transpose(be, L, &P, &R));
        hk_mat_destroy(L->P);
        hk_mat_destroy(L->R);
        L->P = L->R = NULL;
        int ierr = transfer_matrix(pc, &P, &L->P);
        if (!ierr) ierr = transfer_matrix(pc, &R, &L->R);
        if (made) be->dealloc(R.val);
        return ierr;
    }
    if (pc->prec != HK_FP64) return 0;
    if (L->P32) {
        const int bp = L->Pb.br * L->Pb.bc;
        const int64_t np = L->Pb.nnzb * bp, nr = L->Rb.nnzb * L->Rb.br * L->Rb.bc;
        double *p = NULL, *r = NULL;
        int ierr = be->alloc((void **)&p, (size_t)(np ? np : 1) * sizeof *p);
        if (!ierr) ierr = be->alloc((void **)&r, (size_t)(nr ? nr : 1) * sizeof *r);
        if (!ierr && np) {
            hk_vec src = {
                .be = be, .n = L->Pb.nnzb * L->p32_stride, .prec = HK_FP32, .data = L->P32};
            hk_vec dst = {.be = be, .n = np, .prec = HK_FP64, .data = p};
            ierr = be->vec_convert_blocks(&dst, bp, &src, L->p32_stride, bp);
        }
        if (!ierr && nr) {
            hk_vec src = {.be = be, .n = nr, .prec = HK_FP32, .data = L->Rv};
            hk_vec dst = {.be = be, .n = nr, .prec = HK_FP64, .data = r};
            ierr = be->vec_convert(&dst, &src);
        }
        if (ierr) {
            if (p) be->dealloc(p);
            if (r) be->dealloc(r);
            return ierr;
        }
        L->Pb.val = p;
        L->Rb.val = r;
        free_p32(be, L);
        if (L->Pv) be->dealloc(L->Pv);
        if (L->Rv) be->dealloc(L->Rv);
        L->Pv = L->Rv = NULL;
        return 0;
    }
    if (!L->P64) return 0;
    if (!L->R64) { /* transient: the fp64 levels apply P's transpose, made here once */
        hk_bmat P, R;
        kept_transfer(L, &P, &R);
        HK_CALL(transient_transpose(be, L, &P, &R));
        L->R64 = R.val;
    }
    L->Pb.val = L->P64;
    L->Rb.val = L->R64;
    L->P64 = L->R64 = NULL;
    if (L->Pv) be->dealloc(L->Pv);
    if (L->Rv) be->dealloc(L->Rv);
    L->Pv = L->Rv = NULL;
    return 0;
}

/* The blocks of A_{l+1} below the diagonal from those above it; a pattern without a block's
 * mirror (K's pattern is not symmetric) is refused with the way out. */
static int mirror_coarse(const hk_backend_ops *be, int l, hk_bmat *Anext)
{
    const int ierr = be->bmat_mirror_lower(Anext);
    if (ierr != HK_ERR_ARG) return ierr;
    char why[512];
    snprintf(why, sizeof why, "%s", hk_error_message());
    hk_error_clear();
    HK_CHECK(0, HK_ERR_ARG,
             "pc=amg: level %d's operator has no symmetric pattern (%s); store K with a "
             "symmetric pattern (both (i, j) and (j, i), zeros allowed), or set "
             "HOOKE_AMG_GALERKIN=full",
             l + 1, why);
    return 0;
}

/* Level l's smoother data from A_l: D^-1 (*D64 its fp64 copy, see block_inverse), the
 * spectral bound (warm: a re-set-up's, spectral_bound), the l1 scaling. */
static int smoother_data(hk_pc *pc, amg_data *d, int l, const hk_bmat *Al, int warm,
                         hk_amg_phases *ph, hk_vec **D64)
{
    amg_level *L = &d->lev[l];
    const double t0 = now_synced(pc->be);
    HK_CALL(block_inverse(pc, Al, l, L, warm, D64));
    const double t1 = now_synced(pc->be);
    ph->block_inverse += t1 - t0;
    HK_CALL(spectral_bound(pc, d, L, l, warm));
    *(l == 0 ? &ph->bound_fine : &ph->bound_coarse) += now_synced(pc->be) - t1;
    if (d->smoother == SMOOTHER_L1_JACOBI) HK_CALL(l1_scaling(pc, Al, l, L));
    d->st.rho[l] = L->rho;
    ph->smoother += now_synced(pc->be) - t0;
    return 0;
}

/* *v: fp64 values for the pattern M, allocated by the first re-set-up and kept. */
static int kept_values(const hk_backend_ops *be, const hk_bmat *M, double **v)
{
    if (*v) return 0;
    const size_t nv = (size_t)M->nnzb * M->br * M->bc;
    return be->alloc((void **)v, (nv ? nv : 1) * sizeof(double));
}

/* Whether M's values are a level's kept A_l values (Aval: never freed by their users). */
static int values_kept(const amg_data *d, const hk_bmat *M)
{
    for (int l = 1; l < AMG_MAX_LEVELS; l++)
        if (M->val && M->val == d->lev[l].Aval) return 1;
    return 0;
}

/* drop_values, except for a level's kept values (only the view goes). */
static void release_values(const hk_backend_ops *be, const amg_data *d, hk_bmat *M)
{
    if (values_kept(d, M))
        memset(M, 0, sizeof *M);
    else
        drop_values(be, M);
}

/* C = A B (upper: the blocks on and above the diagonal) by the plan where there is one, else by
 * the numeric ops; the same digits either way. With a32 (A's values in fp32) or b32 (B's, its
 * blocks b32_stride floats apart) the values are read from there: by the backend's fp32-operand
 * product where it has one for these shapes, else widened into a temporary fp64 array (exact:
 * the same digits). */
static int planned_product(const hk_backend_ops *be, const void *plan, int upper, const hk_bmat *A,
                           const float *a32, const hk_bmat *B, const float *b32, int b32_stride,
                           hk_bmat *C)
{
    if (a32 || b32) {
        if (plan && be->bmat_spgemm_numeric_plan_f32) {
            const int ierr = be->bmat_spgemm_numeric_plan_f32(plan, A, a32, B, b32, b32_stride, C);
            if (ierr != HK_ERR_UNSUPPORTED) return ierr;
            hk_error_clear();
        }
        const hk_bmat *M = a32 ? A : B;
        const int bb = M->br * M->bc;
        const int64_t nv = M->nnzb * bb;
        double *w = NULL;
        HK_CALL(be->alloc((void **)&w, (size_t)(nv ? nv : 1) * sizeof *w));
        hk_vec dst = {.be = be, .n = nv, .prec = HK_FP64, .data = w};
        hk_vec src = {.be = be,
                      .n = a32 ? nv : M->nnzb * b32_stride,
                      .prec = HK_FP32,
                      .data = (void *)(a32 ? a32 : b32)};
        int ierr = 0;
        if (nv)
            ierr = a32 ? be->vec_convert(&dst, &src)
                       : be->vec_convert_blocks(&dst, bb, &src, b32_stride, bb);
        hk_bmat A64 = *A, B64 = *B;
        if (a32) A64.val = w;
        if (b32) B64.val = w;
        if (!ierr) ierr = planned_product(be, plan, upper, &A64, NULL, &B64, NULL, 0, C);
        be->dealloc(w);
        return ierr;
    }
    if (plan) return be->bmat_spgemm_numeric_plan(plan, A, B, C);
    return upper ? be->bmat_spgemm_numeric_upper(A, B, C) : be->bmat_spgemm_numeric(A, B, C);
}

/* The re-set-up's A_{l+1} = R (A_l P) into the kept patterns of A P and A_{l+1} (*Anext: a view
 * of the kept values lev[l+1].Aval, released with release_values) by the numeric halves,
 * whose digits are the set-up's products'; each step timed into ph from *t1. The first
 * re-set-up allocates the values and makes the products' plans (both kept: the next ones
 * allocate nothing and search no row; timed as the values' allocations); with
 * HOOKE_AMG_UPDATE_VALUES=transient A P's values are freed at the end and allocated again by
 * the next. */
static int numeric_galerkin(hk_pc *pc, amg_data *d, int l, const hk_bmat *Al, const hk_bmat *P,
                            const float *p32, int p32_stride, const hk_bmat *R, const float *r32,
                            hk_amg_phases *ph, double *t1, hk_bmat *Anext)
{
    const hk_backend_ops *be = pc->be;
    amg_level *L = &d->lev[l], *C = &d->lev[l + 1];
    HK_CALL(kept_values(be, &L->APpat, &L->APval));
    HK_CALL(kept_values(be, &C->Apat, &C->Aval));
    hk_bmat AP = L->APpat;
    AP.val = L->APval;
    *Anext = C->Apat;
    Anext->val = C->Aval;
    const int upper = !d->galerkin_full;
    if (!L->planned && be->bmat_spgemm_plan) {
        size_t b1 = 0, b2 = 0;
        HK_CALL(be->bmat_spgemm_plan(Al, P, &AP, 0, &L->ap_plan, &b1));
        HK_CALL(be->bmat_spgemm_plan(R, &AP, Anext, upper, &L->rap_plan, &b2));
        L->plan_bytes = b1 + b2;
        L->planned = 1;
    }
    ph->values += lap(be, t1);
    HK_CALL(planned_product(be, L->ap_plan, 0, Al, NULL, P, p32, p32_stride, &AP));
    ph->ap += lap(be, t1);
    HK_CALL(planned_product(be, L->rap_plan, upper, R, r32, &AP, NULL, 0, Anext));
    ph->rap += lap(be, t1);
    if (upper) {
        HK_CALL(mirror_coarse(be, l, Anext));
        ph->mirror += lap(be, t1);
    }
    if (d->transient) { /* the memory of the largest kept array for an allocation each update */
        be->dealloc(L->APval);
        L->APval = NULL;
        ph->values += lap(be, t1);
    }
    return 0;
}

/* The re-set-up of pc.amg.update=prolongator on level l: D^-1 and the spectral bound of the
 * new A_l, then A_{l+1} = R (A_l P) with the kept P and R (numeric_galerkin); with A_l the
 * set-up's, the set-up's bytes. */
static int coarse_operator(hk_pc *pc, amg_data *d, int l, const hk_bmat *Al, hk_amg_phases *ph,
                           hk_bmat *Anext)
{
    const hk_backend_ops *be = pc->be;
    amg_level *L = &d->lev[l];
    hk_bmat P = {0}, R = {0};
    hk_vec *D64 = NULL;
    int ierr = 0, made_r = 0;
    HK_TRY(smoother_data(pc, d, l, Al, 1, ph, &D64));
    double t0 = now_synced(be), t1 = t0;
    HK_TRY(kept_transfer_precision(pc, L));
    kept_transfer(L, &P, &R);
    /* fp32 levels with P's padded fp32 copy: A P reads it, R (A P) reads R's fp32 values */
    const float *p32 = P.val ? NULL : L->P32, *r32 = R.val || !L->P32 ? NULL : L->Rv;
    HK_TRY_CHECK((P.val || p32) && (R.val || r32 || d->transient), HK_ERR_INTERNAL,
                 "pc=amg: level %d kept no transfer values for the re-set-up", l);
    made_r = !R.val && !r32;
    if (made_r) {
        HK_TRY(transient_transpose(be, L, &P, &R));
        ph->transpose += lap(be, &t1);
    }
    HK_TRY(numeric_galerkin(pc, d, l, Al, &P, p32, L->p32_stride, &R, r32, ph, &t1, Anext));
    if (made_r) {
        be->dealloc(R.val);
        R.val = NULL;
        ph->values += lap(be, &t1);
    }
    ph->galerkin += now_synced(be) - t0;
fail:
    if (made_r && R.val) be->dealloc(R.val);
    if (D64 != L->Dinv && D64 != L->D64) hk_vec_destroy(D64);
    return ierr;
}

/* Level l's smoother data and transfer operators, and the next level's operator: *Anext gets
 * A_{l+1}'s values on the pattern kept in lev[l+1].Apat (release it with release_values), *Bc
 * the coarse near-null space (NULL when B is: the re-set-up with the kept T).
 * fresh: the set-up, whose sparse products find the patterns (amg_tentative_product for A T,
 * bmat_spgemm for the others) and keep them, and which keeps T. Else the re-set-up: T is the
 * kept one unless B is given (the decoupled dofs changed: T and Bc again from B), and only the
 * numeric halves run, into the kept patterns (amg_tentative_product_numeric,
 * bmat_spgemm_numeric, amg_smooth_prolongator_numeric in place over A T, and
 * bmat_transpose_numeric): no pattern is made, sorted or allocated, and the digits are those of
 * the whole ops. keep_p (a re-set-up of pc.amg.update=prolongator with the set-up's supports):
 * P and R are the kept ones (no T, A T, smoothing or transpose), and only A P and R (A P) run. */
static int level_transfer(hk_pc *pc, amg_data *d, int l, const hk_bmat *Al, const double *B,
                          int fresh, int keep_p, hk_amg_phases *ph, hk_bmat *Anext, double **Bc)
{
    const hk_backend_ops *be = pc->be;
    amg_level *L = &d->lev[l], *C = &d->lev[l + 1];
    hk_bmat T = {0}, AT = {0}, P = {0}, R = {0}, AP = {0};
    hk_vec *D64 = NULL;
    int ierr = 0;
    double t0;
    memset(Anext, 0, sizeof *Anext);
    *Bc = NULL;
    if (keep_p) return coarse_operator(pc, d, l, Al, ph, Anext);

    /* tentative prolongator and the coarse near-null space */
    t0 = now_synced(be);
    if (B) {
        HK_TRY(be->alloc((void **)Bc,
                         (size_t)(L->nagg ? L->nagg : 1) * d->nns * d->nns * sizeof **Bc));
        HK_TRY(be->amg_tentative(L->agg, L->nagg, Al->nbrows, Al->br, d->nns, B, &T, *Bc));
        hk_bmat_free(&L->T);
        L->T = T;
        memset(&T, 0, sizeof T);
    }
    HK_TRY_CHECK(L->T.rowptr, HK_ERR_INTERNAL, "pc=amg: level %d has no tentative prolongator",
                 l);
    ph->tentative += now_synced(be) - t0;

    /* smoother data and the spectral bound of D^-1 A */
    HK_TRY(smoother_data(pc, d, l, Al, !fresh, ph, &D64));

    /* P = T - (omega/rho) D^-1 A T; A T has P's pattern. The steps are timed one by one for
     * HOOKE_AMG_PROFILE (t1: the step's start) */
    t0 = now_synced(be);
    double t1 = t0;
    if (fresh) {
        HK_TRY(be->amg_tentative_product(Al, &L->T, &AT));
        ph->at += lap(be, &t1);
        HK_TRY(be->amg_smooth_prolongator(&AT, &L->T, D64, d->omega / L->rho, &P));
        hk_bmat_free(&AT);
        ph->smooth += lap(be, &t1);
    } else { /* A T into P's values, then smoothed in place */
        HK_TRY(values_on(be, &L->Pb, &P));
        ph->values += lap(be, &t1);
        HK_TRY(be->amg_tentative_product_numeric(Al, &L->T, &P));
        ph->at += lap(be, &t1);
        HK_TRY(be->amg_smooth_prolongator_numeric(&P, &L->T, D64, d->omega / L->rho, &P));
        ph->smooth += lap(be, &t1);
    }
    HK_TRY(round_fp32(pc, &P)); /* fp32 levels: the P they apply, before R and A_c are formed */
    ph->smooth += lap(be, &t1);
    if (D64 != L->Dinv && D64 != L->D64) hk_vec_destroy(D64);
    D64 = NULL;
    ph->prolongator += now_synced(be) - t0;

    /* R = P^T, A_c = R (A P): A_c is symmetric (A is, R = P^T), so by default only its blocks
     * on and above the diagonal are summed and the others are their transposes (half the
     * product's work, and A_c exactly symmetric) */
    t0 = t1 = now_synced(be);
    if (fresh) {
        HK_TRY(be->bmat_transpose(&P, &R));
        ph->transpose += lap(be, &t1);
        HK_TRY(be->bmat_spgemm(Al, &P, &AP));
        ph->ap += lap(be, &t1);
        if (d->galerkin_full) {
            HK_TRY(be->bmat_spgemm(&R, &AP, Anext));
        } else {
            HK_TRY(be->bmat_spgemm_pattern(&R, &AP, Anext));
            HK_TRY(be->bmat_spgemm_numeric_upper(&R, &AP, Anext));
        }
        ph->rap += lap(be, &t1);
        if (!d->galerkin_full) HK_TRY(mirror_coarse(be, l, Anext));
        ph->mirror += lap(be, &t1);
        C->Apat = *Anext; /* the pattern stays with level l+1; *Anext shares it */
        C->Apat.val = NULL;
        be->dealloc(AP.val);
        AP.val = NULL;
        L->APpat = AP;
        memset(&AP, 0, sizeof AP);
        ph->values += lap(be, &t1);
    } else {
        HK_TRY(values_on(be, &L->Rb, &R));
        ph->values += lap(be, &t1);
        HK_TRY(be->bmat_transpose_numeric(&P, &R));
        ph->transpose += lap(be, &t1);
        HK_TRY(numeric_galerkin(pc, d, l, Al, &P, NULL, 0, &R, NULL, ph, &t1, Anext));
    }
    ph->galerkin += now_synced(be) - t0;

    t0 = now_synced(be);
    if (fresh)
        HK_TRY(install_transfer(pc, d, L, &P, &R));
    else
        HK_TRY(refill_transfer(pc, d, L, &P, &R));
    ph->matrices += now_synced(be) - t0;
fail:
    hk_bmat_free(&T);
    hk_bmat_free(&AT);
    if (fresh) {
        hk_bmat_free(&AP);
        hk_bmat_free(&P);
        hk_bmat_free(&R);
    } else {
        drop_values(be, &AP);
        drop_values(be, &P);
        drop_values(be, &R);
    }
    if (D64 != L->Dinv && D64 != L->D64) hk_vec_destroy(D64);
    return ierr;
}

/* Level l's transfer operators (level_transfer from A_l = Al and level l's near-null space
 * *B; keep_p: the kept P and R), then level l+1 is the current one: *Acur gets A_{l+1}'s
 * values (on its kept pattern; the old values are dropped) and *B the coarse near-null space. */
static int descend(hk_pc *pc, amg_data *d, int l, const hk_bmat *Al, int fresh, int keep_p,
                   hk_amg_phases *ph, hk_bmat *Acur, double **B)
{
    const hk_backend_ops *be = pc->be;
    hk_bmat Anext = {0};
    double *Bc = NULL;
    const int ierr = level_transfer(pc, d, l, Al, *B, fresh, keep_p, ph, &Anext, &Bc);
    if (ierr) {
        release_values(be, d, &Anext);
        if (Bc) be->dealloc(Bc);
        return ierr;
    }
    release_values(be, d, Acur);
    *Acur = Anext;
    if (*B) be->dealloc(*B);
    *B = Bc;
    return 0;
}

/* The device bytes of the hierarchy (hk_amg_stats), per fine-level DOF. */
static size_t vec_bytes(const hk_vec *v)
{
    return v ? (size_t)v->n * (v->prec == HK_FP64 ? sizeof(double) : sizeof(float)) : 0;
}

static size_t pattern_bytes(const hk_bmat *M)
{
    return M->rowptr ? (size_t)(M->nbrows + 1) * sizeof(int64_t) + (size_t)M->nnzb * 4 : 0;
}

static void amg_memory(const hk_pc *pc, amg_data *d)
{
    hk_amg_stats *st = &d->st;
    st->bytes_matrices = st->bytes_transfer = st->bytes_smoother = st->bytes_vectors = 0;
    st->bytes_reuse = 0;
    for (int l = 0; l < d->nlevels; l++) {
        const amg_level *L = &d->lev[l];
        if (L->A_owned) st->bytes_matrices += L->A->bytes;
        const hk_bmat *M[2] = {&L->Pb, &L->Rb};
        for (int k = 0; k < 2; k++) {
            const size_t nv = (size_t)M[k]->nnzb * M[k]->br * M[k]->bc;
            st->bytes_transfer += pattern_bytes(M[k]) + (M[k]->val ? nv * sizeof(double) : 0);
        }
        if (L->Pv) st->bytes_transfer += (size_t)L->Pb.nnzb * L->Pb.br * L->Pb.bc * 4;
        if (L->Rv) st->bytes_transfer += (size_t)L->Rb.nnzb * L->Rb.br * L->Rb.bc * 4;
        if (L->P) st->bytes_transfer += L->P->bytes + L->R->bytes;
        st->bytes_reuse += vec_bytes(L->ritz) + vec_bytes(L->D64) + vec_bytes(L->q);
        for (int j = 0; j < 64; j++)
            st->bytes_reuse += vec_bytes(L->Zk[j]);
        if (L->P64) st->bytes_reuse += (size_t)L->Pb.nnzb * L->Pb.br * L->Pb.bc * sizeof(double);
        if (L->R64) st->bytes_reuse += (size_t)L->Rb.nnzb * L->Rb.br * L->Rb.bc * sizeof(double);
        if (L->P32) st->bytes_reuse += (size_t)L->Pb.nnzb * L->p32_stride * sizeof(float);
        st->bytes_smoother += vec_bytes(L->Dinv) + vec_bytes(L->l1);
        const hk_vec *v[] = {L->b, L->x, L->r, L->t, L->d, L->d2, L->w, L->e};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
            st->bytes_vectors += vec_bytes(v[i]);
        if (L->APval) st->bytes_reuse += (size_t)L->APpat.nnzb * L->APpat.br * L->APpat.bc * 8;
        if (L->Aval) st->bytes_reuse += (size_t)L->nnz * sizeof(double);
        st->bytes_reuse += L->plan_bytes;
        st->bytes_reuse += (L->agg ? (size_t)(L->n / L->bs) * sizeof(int32_t) : 0) +
                           pattern_bytes(&L->APpat) + pattern_bytes(&L->Apat) +
                           pattern_bytes(&L->T) +
                           (L->T.val ? (size_t)L->T.nnzb * L->T.br * L->T.bc * sizeof(double)
                                     : 0);
    }
    st->bytes_reuse +=
        vec_bytes(d->xyz) + vec_bytes(d->dec) + vec_bytes(d->dec_new) + vec_bytes(d->scratch);
    /* hk_pc_apply's conversion buffers, made on the first apply of an fp32 hierarchy */
    if (pc->prec != HK_FP64) st->bytes_vectors += 2 * (size_t)pc->n * sizeof(float);
    st->bytes_coarse = vec_bytes(d->Minv);
    st->bytes = st->bytes_matrices + st->bytes_transfer + st->bytes_smoother + st->bytes_vectors +
                st->bytes_coarse + st->bytes_reuse;
    st->bytes_per_dof = pc->n ? (double)st->bytes / (double)pc->n : 0;
    st->fp32 = pc->prec == HK_FP32;
}

/* The whole set-up from K: levels, aggregates and patterns found. */
/* This process's CPU seconds, all its threads. */
static double process_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* With HOOKE_AMG_PROFILE set, the phases of a set-up or of a values-only update (what) on
 * stderr, and the sparse products inside P smoothing and Galerkin (docs/parallel.md). */
static void print_phases(const char *what, const hk_amg_phases *p, double cpu, const char *galerkin)
{
    static int on = -1;
    if (on < 0) on = getenv("HOOKE_AMG_PROFILE") != NULL;
    if (!on) return;
    fprintf(stderr,
            "amg %s (one process, seconds): near-null %.3f, strength %.3f, aggregation "
            "%.3f, tentative %.3f, smoother+bound %.3f, P smoothing %.3f, Galerkin %.3f, level "
            "matrices %.3f, coarsest %.3f, total %.3f (CPU %.3f)\n"
            "amg %s products: A T %.4f, P smoothing %.4f, R = P^T %.4f, A P %.4f, R (A P) %.4f "
            "(%s), mirror %.4f, their values' allocations and frees %.4f; near-null: diagonal "
            "check %.4f, decoupled dofs %.4f, modes %.4f; smoother: inverse node blocks %.4f, "
            "bound of the fine level %.4f, of the coarse levels %.4f\n",
            what, p->nearnull, p->strength, p->aggregate, p->tentative, p->smoother, p->prolongator,
            p->galerkin, p->matrices, p->coarse, p->total, cpu, what, p->at, p->smooth,
            p->transpose, p->ap, p->rap, galerkin, p->mirror, p->values, p->diag_check,
            p->decoupled, p->modes, p->block_inverse, p->bound_fine, p->bound_coarse);
}

static int amg_build(hk_pc *pc, amg_data *d, const hk_bmat *K, hk_mat *A)
{
    const hk_backend_ops *be = pc->be;
    int ierr = 0;
    hk_bmat Acur = {0};
    hk_graph S = {0};
    double *B = NULL;
    hk_amg_phases *ph = &d->st.setup;
    memset(ph, 0, sizeof *ph);
    const double t_start = now_synced(be), cpu_start = process_cpu();
    double t0;

    HK_CALL(check_diagonal(pc, K, NULL));
    ph->diag_check = now_synced(be) - t_start;
    hk_vec_destroy(d->dec);
    d->dec = NULL;
    HK_CALL(decoupled_dofs(pc, K, &d->dec));
    ph->decoupled = now_synced(be) - t_start - ph->diag_check;
    HK_CALL(nearnull_build(pc, d, K, d->dec, &B));
    ph->nearnull = now_synced(be) - t_start;
    ph->modes = ph->nearnull - ph->diag_check - ph->decoupled;

    const hk_bmat *Al = K; /* the current level's operator (level 0: K, not owned) */
    int l = 0;
    for (;; l++) {
        amg_level *L = &d->lev[l];
        L->bs = Al->br;
        L->n = Al->nbrows * Al->br;
        L->nnz = Al->nnzb * Al->br * Al->bc;
        d->st.rows[l] = L->n;
        d->st.nnz[l] = L->nnz;
        d->st.bs[l] = L->bs;
        t0 = now_synced(be);
        HK_TRY(level_operator(pc, d, l, Al, K, A));
        ph->matrices += now_synced(be) - t0;

        const int last = l + 1 >= d->max_levels || L->n <= d->coarse_size;
        if (!last) {
            t0 = now_synced(be);
            HK_TRY(be->amg_strength(Al, d->threshold, &S));
            ph->strength += now_synced(be) - t0;
            t0 = hk_time();
            HK_TRY(be->alloc((void **)&L->agg,
                             (size_t)(Al->nbrows ? Al->nbrows : 1) * sizeof *L->agg));
            HK_TRY(be->amg_aggregate(&S, L->agg, &L->nagg));
            hk_graph_free(&S);
            ph->aggregate += now_synced(be) - t0;
        }
        /* coarsening stalls when the next level would keep 90 % of the rows */
        if (last || L->nagg == 0 || (double)L->nagg * d->nns > 0.9 * (double)L->n) {
            if (L->agg) be->dealloc(L->agg);
            L->agg = NULL;
            L->nagg = 0;
            HK_TRY_CHECK(L->n <= AMG_MAX_COARSE, HK_ERR_NUMERIC,
                         "pc=amg: coarsening stopped at level %d with %lld rows, too many for "
                         "the dense coarse solve (at most %d); raise pc.amg.max_levels, or "
                         "lower pc.amg.threshold (now %g) so that more nodes are aggregated",
                         l, (long long)L->n, AMG_MAX_COARSE, d->threshold);
            t0 = now_synced(be);
            HK_TRY(coarsest(pc, d, l, Al));
            ph->coarse += now_synced(be) - t0;
            break;
        }
        HK_TRY_CHECK(l + 1 < AMG_MAX_LEVELS, HK_ERR_INTERNAL, "pc=amg: too many levels");
        HK_TRY(descend(pc, d, l, Al, 1, 0, ph, &Acur, &B));
        Al = &Acur;
    }
    d->nlevels = l + 1;
    d->st.nlevels = d->nlevels;
    d->st.nns = d->nns;
    d->st.nns_kind = d->nns_kind;
    double tot = 0;
    for (int j = 0; j < d->nlevels; j++)
        tot += (double)d->st.nnz[j];
    d->st.op_complexity = d->st.nnz[0] ? tot / (double)d->st.nnz[0] : 1;
    ph->total = now_synced(be) - t_start;
    amg_memory(pc, d);
    print_phases("set-up", ph, process_cpu() - cpu_start, d->galerkin_full ? "full" : "symmetric");
fail:
    hk_graph_free(&S);
    release_values(be, d, &Acur);
    if (B) be->dealloc(B);
    return ierr;
}

/* The numeric part again from K's new values (the same pattern), in pc->prec: the kept
 * aggregates and patterns, everything else computed anew; with pc.amg.update=prolongator and
 * the set-up's supports the kept P and R too (only the coarse operators, the smoother data and
 * the coarse inverse anew). */
static int amg_renumeric(hk_pc *pc, amg_data *d, const hk_bmat *K, hk_mat *A)
{
    const hk_backend_ops *be = pc->be;
    int ierr = 0;
    hk_bmat Acur = {0};
    double *B = NULL;
    hk_amg_phases *ph = &d->st.update;
    memset(ph, 0, sizeof *ph);
    const double t_start = now_synced(be), cpu_start = process_cpu();
    double t0;
    HK_CHECK(K->nbrows * K->br == d->lev[0].n && K->nnzb * K->br * K->bc == d->lev[0].nnz,
             HK_ERR_ARG,
             "pc=amg: the re-set-up needs the matrix of the set-up's pattern (%lld rows, %lld "
             "entries; got %lld, %lld)",
             (long long)d->lev[0].n, (long long)d->lev[0].nnz, (long long)(K->nbrows * K->br),
             (long long)(K->nnzb * K->br * K->bc));
    const int nns = d->nns;
    int same = 0;
    /* into the kept work vectors: the diagonal check's output, the new flags */
    HK_CALL(check_diagonal(pc, K, &d->scratch));
    HK_CALL(decoupled_dofs(pc, K, &d->dec_new));
    if (d->dec) HK_TRY(same_flags(be, d->dec_new, d->dec, d->scratch, &same));
    if (!same) { /* other supports: the near-null space and every T again (B given below) */
        HK_TRY(nearnull_build(pc, d, K, d->dec_new, &B));
        HK_TRY_CHECK(d->nns == nns, HK_ERR_INTERNAL,
                     "pc=amg: the near-null space changed its size");
        hk_vec *old = d->dec; /* the new flags kept, the old vector the next one's room */
        d->dec = d->dec_new;
        d->dec_new = old;
    }
    ph->nearnull = now_synced(be) - t_start;
    /* P and R were made from the set-up's supports: with others they are made again */
    const int keep_p = d->update == AMG_UPDATE_PROLONGATOR && same;
    d->st.last_update_kept = keep_p;

    const hk_bmat *Al = K;
    for (int l = 0; l < d->nlevels; l++) {
        t0 = now_synced(be);
        HK_TRY(level_operator(pc, d, l, Al, K, A));
        ph->matrices += now_synced(be) - t0;
        if (l == d->nlevels - 1) {
            t0 = now_synced(be);
            HK_TRY(coarsest(pc, d, l, Al));
            ph->coarse += now_synced(be) - t0;
            break;
        }
        HK_TRY(descend(pc, d, l, Al, 0, keep_p, ph, &Acur, &B));
        Al = &Acur;
    }
    ph->total = now_synced(be) - t_start;
    amg_memory(pc, d);
    print_phases(keep_p ? "update (P, R kept)" : "update", ph, process_cpu() - cpu_start,
                 d->galerkin_full ? "full" : "symmetric");
fail:
    release_values(be, d, &Acur);
    if (B) be->dealloc(B);
    return ierr;
}

/* A set-up (fresh) or re-set-up that failed with ierr because an fp32 level overflowed:
 * with pc.amg.precision=auto, the levels again in fp64 (the description says so). */
static int fp64_if_overflow(hk_pc *pc, amg_data *d, int ierr, const hk_bmat *K, hk_mat *A,
                            int fresh)
{
    if (!ierr || !d->fp32_range || !pc->fallback_armed) return ierr;
    hk_error_clear();
    d->fp32_range = 0;
    pc->fallback_armed = 0;
    hk_amg_set_precision(pc, HK_FP64);
    d->st.stalled_at = NAN;
    if (!fresh) return amg_renumeric(pc, d, K, A);
    free_levels(pc, d);
    return amg_build(pc, d, K, A);
}

static int amg_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    const hk_backend_ops *be = pc->be;
    /* on a distributed table: the distributed hierarchy (solver/dist/dist_amg.c) */
    if (be->dist) {
        pc->type = &hk_pc_dist_amg;
        return pc->type->setup(pc, K, A, o);
    }
    amg_data *d = NULL;
    HK_CALL(hk_calloc(1, sizeof *d, &d));
    pc->data = d; /* hk_pc_destroy cleans up on failure */
    d->fmt = A ? A->asked : HK_FMT_CSR;
    HK_CALL(read_options(d, o, &d->fmt, &d->fmt_given));
    HK_CALL(hk_env_switch("HOOKE_AMG_UNFUSED", "1",
                          "the cycle's and the bounds' separate vector ops", "0", "the fused ops",
                          0, &d->unfused));
    HK_CALL(hk_env_switch("HOOKE_AMG_GALERKIN", "full",
                          "every block of the coarse operator by the product", "symmetric",
                          "its upper blocks, the lower ones their transposes; the default", 0,
                          &d->galerkin_full));
    HK_CALL(hk_env_switch(
        "HOOKE_AMG_UPDATE_VALUES", "transient",
        "each update allocates A P's values (and an fp64 R where R is not read in "
        "fp32) and frees them",
        "kept", "the first update's kept for the next ones; the default", 0, &d->transient));
    /* a backend without the symmetric product's ops forms A_c by the whole product */
    if (!be->bmat_spgemm_pattern || !be->bmat_spgemm_numeric_upper || !be->bmat_mirror_lower)
        d->galerkin_full = 1;
    const struct {
        const void *op;
        const char *name;
    } ops[] = {{(const void *)be->bmat_diag, "bmat_diag"},
               {(const void *)be->dense_inverse, "dense_inverse"},
               {(const void *)be->dense_gemv, "dense_gemv"},
               {(const void *)be->vec_round_fp32, "vec_round_fp32"},
               {(const void *)be->amg_strength, "amg_strength"},
               {(const void *)be->amg_aggregate, "amg_aggregate"},
               {(const void *)be->amg_tentative, "amg_tentative"},
               {(const void *)be->amg_start_vector, "amg_start_vector"},
               {(const void *)be->bmat_spgemm, "bmat_spgemm"},
               {(const void *)be->bmat_spgemm_numeric, "bmat_spgemm_numeric"},
               {(const void *)be->amg_tentative_product, "amg_tentative_product"},
               {(const void *)be->amg_tentative_product_numeric, "amg_tentative_product_numeric"},
               {(const void *)be->amg_smooth_prolongator, "amg_smooth_prolongator"},
               {(const void *)be->amg_smooth_prolongator_numeric, "amg_smooth_prolongator_numeric"},
               {(const void *)be->bmat_transpose_numeric, "bmat_transpose_numeric"},
               {(const void *)be->bmat_transpose, "bmat_transpose"}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        HK_CALL(need_op(be, ops[i].op, ops[i].name));
    HK_CHECK(K->br <= AMG_MAX_NNS, HK_ERR_ARG, "pc=amg: block size %d is larger than %d", K->br,
             AMG_MAX_NNS);
    /* fp32 levels unless asked for fp64; auto may fall back to fp64 (amg_fallback) */
    hk_amg_set_precision(pc, d->precision == AMG_PREC_FP64 ? HK_FP64 : HK_FP32);
    pc->fallback_armed = d->precision == AMG_PREC_AUTO;
    return fp64_if_overflow(pc, d, amg_build(pc, d, K, A), K, A, 1);
}

/* hk_solver_update_values: the same pattern, new values. */
static int amg_update(hk_pc *pc, const hk_bmat *K, hk_mat *A)
{
    amg_data *d = pc->data;
    HK_CALL(fp64_if_overflow(pc, d, amg_renumeric(pc, d, K, A), K, A, 0));
    d->st.updates++;
    return 0;
}

/* The fp32 levels stalled the solve at relative residual `at`: the same hierarchy in fp64. */
static int amg_fallback(hk_pc *pc, const hk_bmat *K, hk_mat *A, double at)
{
    amg_data *d = pc->data;
    HK_CHECK(pc->fallback_armed && pc->prec == HK_FP32, HK_ERR_INTERNAL,
             "pc=amg: no fp32 hierarchy to fall back from");
    pc->fallback_armed = 0;
    hk_amg_set_precision(pc, HK_FP64);
    d->st.stalled_at = at;
    return amg_renumeric(pc, d, K, A);
}

/* ---- apply ------------------------------------------------------------------------------- */

/* Whether a sweep runs Chebyshev by amg_cheb_step (one backend op per degree). */
static int cheb_fused(const hk_amg_sweep *s)
{
    return s->kind == SMOOTHER_CHEBYSHEV && s->mat && s->be->amg_cheb_step &&
           (s->degree < 3 || s->d2);
}

/* The Chebyshev sweep of hk_amg_smooth below by amg_cheb_step, with its digits: per degree
 * one op does the product, the residual's update, the scaling by D^-1 and the recurrence.
 * The op of degree k reads d_{k-1} for its product, so x += d_{k-1} waits for that op (its
 * entries are added there, in the same order), and the last op adds d_m as well; d_k
 * alternates between d and d2. A zero x is never read, and from it the first residual is b
 * itself (no product, nothing written). */
static int cheb_sweep_fused(const hk_amg_sweep *s, const hk_vec *b, hk_vec *x, int zero)
{
    const hk_backend_ops *be = s->be;
    const double hi = s->rho, lo = hi / s->ratio;
    const double theta = (hi + lo) / 2, delta = (hi - lo) / 2, sigma = theta / delta;
    double rho_old = 1 / sigma;
    hk_vec *const dbuf[2] = {s->d, s->d2};
    /* d_0 = D^-1 (b - A x) / theta; r = b - A x kept when x was not zero */
    hk_cheb_step st = {.p = zero ? NULL : x,
                       .rin = b,
                       .r = zero ? NULL : s->r,
                       .D = s->Dinv,
                       .bs = s->bs,
                       .a = 1 / theta,
                       .dn = s->d,
                       .t = s->t};
    if (s->degree == 1 && zero) { /* x = d_0 */
        st.dn = NULL;
        st.x = x;
        st.xmode = HK_CHEB_X_ZERO | HK_CHEB_X_DN;
        return be->amg_cheb_step(s->mat, &st);
    }
    HK_CALL(be->amg_cheb_step(s->mat, &st));
    if (s->degree == 1) return be->vec_axpby(x, 1.0, s->d, 1.0); /* x is the product's */
    for (int k = 1; k < s->degree; k++) {
        const int last = k == s->degree - 1, first_zero = k == 1 && zero;
        const double rho_new = 1 / (2 * sigma - rho_old);
        hk_vec *dp = dbuf[(k - 1) & 1];
        /* r -= A d_{k-1}; d_k = (2 rho_new / delta) D^-1 r + rho_new rho_old d_{k-1};
         * x += d_{k-1} (the last: and d_k) */
        const hk_cheb_step q = {.p = dp,
                                .rin = first_zero ? b : s->r,
                                .r = last ? NULL : s->r,
                                .D = s->Dinv,
                                .bs = s->bs,
                                .a = 2 * rho_new / delta,
                                .c = rho_new * rho_old,
                                .dp = dp,
                                .dn = last ? NULL : dbuf[k & 1],
                                .x = x,
                                .xmode = (first_zero ? HK_CHEB_X_ZERO : 0) | HK_CHEB_X_DP |
                                         (last ? HK_CHEB_X_DN : 0),
                                .t = s->t};
        HK_CALL(be->amg_cheb_step(s->mat, &q));
        rho_old = rho_new;
    }
    return 0;
}

/* One sweep of the level's smoother on A x = b; zero: x is taken as 0 on entry (no SpMV for
 * the first residual). Every smoother is x += q(D^-1 A) D^-1 (b - A x) for a fixed
 * polynomial q (l1-jacobi: D = the l1 diagonal), hence A-self-adjoint. */
int hk_amg_smooth(const hk_amg_sweep *s, const hk_vec *b, hk_vec *x, int zero)
{
    const hk_backend_ops *be = s->be;
    if (cheb_fused(s)) return cheb_sweep_fused(s, b, x, zero);
    hk_vec *r = s->r, *t = s->t, *dv = s->d;
    if (zero)
        HK_CALL(be->vec_copy(r, b));
    else {
        HK_CALL(s->spmv(s->A, x, r));
        HK_CALL(be->vec_axpby(r, 1.0, b, -1.0));
    }
    if (s->kind == SMOOTHER_L1_JACOBI) {
        HK_CALL(be->vec_pointwise_mult(t, s->l1, r));
        return zero ? be->vec_copy(x, t) : be->vec_axpby(x, 1.0, t, 1.0);
    }
    HK_CALL(be->bdiag_apply(s->Dinv, s->bs, r, t));
    if (s->kind == SMOOTHER_BJACOBI) {
        const double w = 4.0 / (3.0 * s->rho); /* damps [rho/4, rho] to at most 2/3 */
        return zero ? be->vec_axpby(x, w, t, 0.0) : be->vec_axpby(x, w, t, 1.0);
    }
    /* Chebyshev iteration on [rho/ratio, rho] (Saad, Iterative Methods, Algorithm 12.1) */
    const double hi = s->rho, lo = hi / s->ratio;
    const double theta = (hi + lo) / 2, delta = (hi - lo) / 2, sigma = theta / delta;
    double rho_old = 1 / sigma;
    HK_CALL(be->vec_axpby(dv, 1 / theta, t, 0.0));
    HK_CALL(zero ? be->vec_copy(x, dv) : be->vec_axpby(x, 1.0, dv, 1.0));
    for (int k = 1; k < s->degree; k++) {
        HK_CALL(s->spmv(s->A, dv, t));
        HK_CALL(be->vec_axpby(r, -1.0, t, 1.0)); /* r = b - A x */
        HK_CALL(be->bdiag_apply(s->Dinv, s->bs, r, t));
        const double rho_new = 1 / (2 * sigma - rho_old);
        HK_CALL(be->vec_axpby(dv, 2 * rho_new / delta, t, rho_new * rho_old));
        HK_CALL(be->vec_axpby(x, 1.0, dv, 1.0));
        rho_old = rho_new;
    }
    return 0;
}

static int smooth(hk_pc *pc, amg_data *d, amg_level *L, const hk_vec *b, hk_vec *x, int zero)
{
    const hk_amg_sweep s = level_sweep(pc, d, L);
    return hk_amg_smooth(&s, b, x, zero);
}

/* r = b - A x (t: scratch of the level's size), one op where the backend has it. */
static int residual(hk_pc *pc, amg_data *d, hk_mat *A, const hk_vec *b, const hk_vec *x,
                    hk_vec *r, hk_vec *t)
{
    const hk_backend_ops *be = pc->be;
    if (!d->unfused && be->amg_cheb_step) {
        const hk_cheb_step st = {.p = x, .rin = b, .r = r, .t = t};
        return be->amg_cheb_step(A, &st);
    }
    HK_CALL(hk_mat_spmv(A, x, r));
    return be->vec_axpby(r, 1.0, b, -1.0);
}

/* x = M_l^-1 b on level l (x overwritten). */
static int cycle(hk_pc *pc, amg_data *d, int l, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = pc->be;
    amg_level *L = &d->lev[l];
    if (l == d->nlevels - 1) return be->dense_gemv(d->Minv, b, x);
    amg_level *C = &d->lev[l + 1];
    for (int s = 0; s < d->pre; s++)
        HK_CALL(smooth(pc, d, L, b, x, s == 0));
    if (d->pre == 0) HK_CALL(be->vec_set(x, 0.0));
    /* coarse-grid correction */
    HK_CALL(residual(pc, d, L->A, b, x, L->r, L->t));
    HK_CALL(transfer_apply(pc, L, 1, L->r, C->b));
    HK_CALL(cycle(pc, d, l + 1, C->b, C->x));
    if (d->cycle == 1 && l + 1 < d->nlevels - 1) { /* W: a second visit on the residual */
        HK_CALL(residual(pc, d, C->A, C->b, C->x, C->w, C->t));
        HK_CALL(cycle(pc, d, l + 1, C->w, C->e));
        HK_CALL(be->vec_axpby(C->x, 1.0, C->e, 1.0));
    }
    HK_CALL(transfer_apply(pc, L, 0, C->x, L->t));
    HK_CALL(be->vec_axpby(x, 1.0, L->t, 1.0));
    for (int s = 0; s < d->post; s++)
        HK_CALL(smooth(pc, d, L, b, x, 0));
    return 0;
}

static int amg_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    return cycle(pc, pc->data, 0, r, z);
}

/* ---- introspection ----------------------------------------------------------------------- */

int hk_pc_amg_info(const hk_pc *pc, hk_amg_stats *st)
{
    HK_CHECK(pc && pc->type == &hk_pc_amg && pc->data, HK_ERR_ARG,
             "hk_pc_amg_info: not an amg preconditioner");
    *st = ((const amg_data *)pc->data)->st;
    return 0;
}

/* A host copy (cpu hk_bmat, fp64 values) of a kept transfer pattern M with its values: M's own
 * or the fp32 ones in v32, widened. */
static int transfer_to_host(const hk_bmat *M, const float *v32, hk_bmat *H)
{
    if (M->val) return hk_bmat_to_host(M, H);
    const int64_t nv = M->nnzb * M->br * M->bc;
    float *f = NULL;
    int ierr = 0;
    HK_CHECK(v32 || nv == 0, HK_ERR_INTERNAL, "pc=amg: a transfer operator without values");
    HK_CALL(hk_bmat_alloc(&hk_backend_cpu, M->br, M->bc, M->nbrows, M->nbcols, M->nnzb, H));
    HK_TRY(M->be->copy_from(H->rowptr, M->rowptr, (size_t)(M->nbrows + 1) * sizeof(int64_t)));
    if (nv) {
        HK_TRY(M->be->copy_from(H->colind, M->colind, (size_t)M->nnzb * sizeof(int32_t)));
        HK_TRY(hk_malloc((size_t)nv * sizeof *f, &f));
        HK_TRY(M->be->copy_from(f, v32, (size_t)nv * sizeof *f));
        for (int64_t k = 0; k < nv; k++)
            H->val[k] = (double)f[k];
    }
    free(f);
    return 0;
fail:
    free(f);
    hk_bmat_free(H);
    return ierr;
}

int hk_pc_amg_level(const hk_pc *pc, int l, hk_bmat *P, hk_bmat *R, hk_fmt *A)
{
    memset(P, 0, sizeof *P);
    memset(R, 0, sizeof *R);
    memset(A, 0, sizeof *A);
    HK_CHECK(pc && pc->type == &hk_pc_amg && pc->data, HK_ERR_ARG,
             "hk_pc_amg_level: not an amg preconditioner");
    const amg_data *d = pc->data;
    HK_CHECK(l >= 0 && l < d->nlevels, HK_ERR_ARG, "hk_pc_amg_level: no level %d (%d levels)", l,
             d->nlevels);
    const amg_level *L = &d->lev[l];
    int ierr = 0;
    HK_CALL(pc->be->mat_download(L->A, A));
    if (l + 1 < d->nlevels) {
        HK_TRY_CHECK(!L->P, HK_ERR_UNSUPPORTED,
                     "hk_pc_amg_level: the transfer operators are scalar csr copies");
        HK_TRY(transfer_to_host(&L->Pb, L->Pv, P));
        HK_TRY(transfer_to_host(&L->Rb, L->Rv, R));
    }
    return 0;
fail:
    hk_fmt_free(A);
    hk_bmat_free(P);
    hk_bmat_free(R);
    return ierr;
}

/* "681k" style row counts. */
static void short_count(int64_t n, char *buf, size_t len)
{
    if (n >= 10000000)
        snprintf(buf, len, "%.0fM", n / 1e6);
    else if (n >= 1000000)
        snprintf(buf, len, "%.1fM", n / 1e6);
    else if (n >= 10000)
        snprintf(buf, len, "%.0fk", n / 1e3);
    else if (n >= 1000)
        snprintf(buf, len, "%.1fk", n / 1e3);
    else
        snprintf(buf, len, "%lld", (long long)n);
}

static void amg_describe(const hk_pc *pc, char *buf, size_t len)
{
    const amg_data *d = pc->data;
    size_t k = (size_t)snprintf(buf, len, "%d level%s: ", d->nlevels, d->nlevels == 1 ? "" : "s");
    for (int l = 0; l < d->nlevels && k < len; l++) {
        char c[32];
        short_count(d->st.rows[l], c, sizeof c);
        k += (size_t)snprintf(buf + k, len - k, "%s%s", l ? ", " : "", c);
    }
    if (k < len)
        k += (size_t)snprintf(buf + k, len - k,
                              " rows; operator complexity %.2f; %d %s; %s, %s-cycle; %s levels",
                              d->st.op_complexity, d->nns, d->nns_kind, smoother_names[d->smoother],
                              d->cycle ? "W" : "V", pc->prec == HK_FP32 ? "fp32" : "fp64");
    if (k < len && d->st.stalled_at != 0)
        k += (size_t)(isfinite(d->st.stalled_at)
                          ? snprintf(buf + k, len - k, " (fp32 stalled at %.1e)", d->st.stalled_at)
                          : snprintf(buf + k, len - k, " (fp32 overflowed)"));
    if (k < len && d->update == AMG_UPDATE_PROLONGATOR)
        k += (size_t)snprintf(buf + k, len - k, ", updates keep P");
    if (k < len) snprintf(buf + k, len - k, ", %.0f bytes/DOF", d->st.bytes_per_dof);
}

const hk_pc_type hk_pc_amg = {
    .name = "amg",
    .summary = "smoothed-aggregation multigrid with the rigid-body modes (elasticity, Poisson)",
    .options = "pc.amg.threshold pc.amg.max_levels pc.amg.coarse_size pc.amg.smoother "
               "pc.amg.degree pc.amg.pre pc.amg.post pc.amg.cycle pc.amg.format pc.amg.omega "
               "pc.amg.ratio pc.amg.safety pc.amg.lanczos pc.amg.precision pc.amg.update "
               "pc.amg.update_lanczos",
    .symmetric = 1,
    .setup = amg_setup,
    .apply = amg_apply,
    .apply_capturable = 1,
    .destroy = amg_destroy,
    .describe = amg_describe,
    .update = amg_update,
    .fallback = amg_fallback,
};
