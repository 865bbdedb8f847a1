/* The distributed ops table: a copy of the backend's own table in which every reduction is
 * summed over the processes and the operator is the distributed one (docs/parallel.md). The
 * Krylov methods and preconditioners run on it unchanged. An op is replaced when it
 *   - returns sums to the host (vec_dot, vec_mdot, vec_gram, block_gram, block_dots, cg_update,
 *     spmv_cgcg after its SpMV):
 *     the backend's op on the owned entries, then hk_comm_sum;
 *   - leaves sums in backend scalars (pipecg_update, pipecg_gv_step, pipebicg_s, pipebicg_update,
 *     vec_mdot_s, vec_maxpy_s_nrm, vec_scale_s_dot): the backend's op, then those slots summed
 *     (read, summed, written back; coefficients derived from sums are derived again from the
 *     global sums);
 *   - involves the operator (mat_build, mat_spmv, spmv_dot2, spmv_mdot, block_spmv): the
 *     distributed SpMV (dist.c), then the reductions; amg_cheb_step: the SpMV's exchange
 *     around the backend's op on the interior rows, then on the boundary rows.
 * With the device transport (dist.comm=nccl, dcomm.c) the sums are taken in device memory:
 * those left in backend scalars never visit the host, the fp64 dot products are summed before
 * they are read, and the other host sums go through the device.
 * The other ops that fuse an SpMV into a vector update, matrix powers, graphs and the set-up ops of the
 * preconditioners that are not distributed are absent: the methods then make their separate
 * calls (docs/architecture.md), and hk_solver_create_dist refuses those preconditioners. */
#include <stdlib.h>
#include <string.h>

#include "dist_impl.h"
#include "pipecg_gv.h"

/* In a step with the device transport: the others' devices wait for this process's part of
 * the sum, so a failure is the end of the run. */
#define DEV_CALL(d, call)                                                                          \
    do {                                                                                           \
        const int dev_e_ = (call);                                                                 \
        if (dev_e_) hk_dcomm_fatal((d)->dcomm, dev_e_);                                            \
    } while (0)

static hk_dist *dist_of(const hk_vec *x)
{
    return x->be->dist;
}

/* HOOKE_DIST_PROFILE: the time a sum's local part begins; on a device with MPI after waiting
 * for the queued work (the partial sums' read would wait for it), counted apart. */
static double sum_start(const hk_dist *d)
{
    return d->host_memory || d->dcomm ? hk_dprof_now()
                                      : hk_dprof_drain(d->local, &hk_dist_prof.sums_drain);
}

/* Host values summed over the processes by the layout's transport; t_local: when the
 * backend's op that made the partial sums began (HOOKE_DIST_PROFILE; 0: none). */
static int sum_host_from(const hk_dist *d, double *v, int n, double t_local)
{
    const double t = hk_dprof_now();
    int ierr = 0;
    if (!d->dcomm)
        ierr = hk_comm_sum(d->comm, v, n);
    else
        hk_dcomm_sum_host(d->dcomm, v, n);
    hk_dprof_sum(t_local, t);
    return ierr;
}

static int sum_host(const hk_dist *d, double *v, int n)
{
    return sum_host_from(d, v, n, 0);
}

int hk_be_sum(const hk_backend_ops *be, double *v, int n)
{
    return be && be->dist ? sum_host(be->dist, v, n) : 0;
}

int hk_be_agree(const hk_backend_ops *be, int ierr)
{
    return be && be->dist ? hk_comm_agree(be->dist->comm, ierr) : ierr;
}

/* Sum n backend scalars S[first..) over the processes. */
static int sum_slots(const hk_dist *d, double *S, int first, int n)
{
    double h[HK_S_MAX];
    const double t0 = sum_start(d);
    if (d->dcomm) {
        hk_dcomm_sum(d->dcomm, S + first, n);
        hk_dprof_sum(0, t0);
        return 0;
    }
    HK_CHECK(n <= HK_S_MAX, HK_ERR_ARG, "distributed sum of %d scalars", n);
    HK_CALL(d->local->scal_get(S, first, n, h)); /* waits for the op that made them */
    const double t1 = hk_dprof_now();
    HK_CALL(hk_comm_sum(d->comm, h, n));
    HK_CALL(d->local->scal_set(S, first, n, h));
    hk_dprof_sum(t0, t1);
    return 0;
}

/* ---- sums to the host ---------------------------------------------------------------------- */

/* The device transport sums the fp64 dot products where the backend computed them. */
static int dots_on_device(const hk_dist *d, int k, hk_vec *const *X, const hk_vec *y)
{
    int ok = d->dcomm && d->local->vec_mdot_s && y->prec == HK_FP64;
    for (int j = 0; ok && j < k; j++)
        ok = X[j]->prec == HK_FP64;
    return ok;
}

static int d_vec_dot(const hk_vec *x, const hk_vec *y, double *r)
{
    const hk_dist *d = dist_of(x);
    hk_vec *X[1] = {(hk_vec *)x};
    const double t0 = sum_start(d);
    if (dots_on_device(d, 1, X, y)) {
        hk_dcomm_dots(d->dcomm, 1, X, y, r);
        hk_dprof_sum(0, t0);
        return 0;
    }
    HK_CALL(d->local->vec_dot(x, y, r));
    return sum_host_from(d, r, 1, t0);
}

static int d_vec_mdot(int k, hk_vec *const *X, const hk_vec *y, double *r)
{
    const hk_dist *d = dist_of(y);
    const double t0 = sum_start(d);
    if (dots_on_device(d, k, X, y)) {
        hk_dcomm_dots(d->dcomm, k, X, y, r);
        hk_dprof_sum(0, t0);
        return 0;
    }
    HK_CALL(d->local->vec_mdot(k, X, y, r));
    return sum_host_from(d, r, k, t0);
}

static int d_vec_gram(int m, hk_vec *const *X, hk_vec *const *Y, double *G, double *GX)
{
    const hk_dist *d = dist_of(X[0]);
    HK_CALL(d->local->vec_gram(m, X, Y, G, GX));
    HK_CALL(sum_host(d, G, m * m));
    return GX ? sum_host(d, GX, m * m) : 0;
}

static int d_block_gram(int64_t n, int p, const hk_vec *X, int q, const hk_vec *Y, double *G)
{
    const hk_dist *d = dist_of(X);
    HK_CALL(d->local->block_gram(n, p, X, q, Y, G));
    return sum_host(d, G, p * q);
}

static int d_block_dots(int64_t n, int k, const hk_vec *X, const hk_vec *Y, double *dd)
{
    const hk_dist *d = dist_of(X);
    HK_CALL(d->local->block_dots(n, k, X, Y, dd));
    return sum_host(d, dd, k);
}

static int d_cg_update(hk_vec *x, hk_vec *r, hk_vec *z, const hk_vec *p, const hk_vec *Ap,
                       const hk_vec *dinv, double alpha, double *dd)
{
    const hk_dist *d = dist_of(x);
    const double t0 = sum_start(d);
    HK_CALL(d->local->cg_update(x, r, z, p, Ap, dinv, alpha, dd));
    return sum_host_from(d, dd, 2, t0);
}

/* ---- sums left in backend scalars ---------------------------------------------------------- */

static int d_pipecg_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *Ap, const hk_vec *dinv,
                           double *S)
{
    const hk_dist *d = dist_of(x);
    HK_CALL(d->local->pipecg_update(x, r, p, Ap, dinv, S));
    return sum_slots(d, S, HK_S_RR, 2); /* RR, RZ */
}

/* The step with the backend's op on the owned entries; it records its local sums in S and
 * derives from them: the sums are taken over the processes and the derivation is made again
 * from the state before the step, as one process makes it. */
static int d_pipecg_gv_step(hk_vec *const *V, double *S)
{
    const hk_dist *d = dist_of(V[0]);
    double h[HK_G_COUNT], sums[7];
    HK_CALL(d->local->scal_get(S, 0, HK_G_COUNT, h));
    if (h[HK_G_HALT] != 0) return 0;
    HK_CALL(d->local->pipecg_gv_step(V, S));
    const double t0 = sum_start(d);
    if (d->dcomm) hk_dcomm_sum(d->dcomm, S + HK_G_GAMMA, 7); /* then read summed */
    HK_CALL(d->local->scal_get(S, HK_G_GAMMA, 7, sums));
    const double t1 = hk_dprof_now();
    if (!d->dcomm) HK_CALL(hk_comm_sum(d->comm, sums, 7));
    hk_dprof_sum(d->dcomm ? 0 : t0, d->dcomm ? t0 : t1);
    hk_pipecg_gv_after_step(h, sums);
    return d->local->scal_set(S, 0, HK_G_COUNT, h);
}

static int d_pipebicg_s(hk_vec *s, const hk_vec *r, const hk_vec *Ap, double *S)
{
    const hk_dist *d = dist_of(s);
    HK_CALL(d->local->pipebicg_s(s, r, Ap, S));
    return sum_slots(d, S, HK_S_BI_SS, 1);
}

static int d_pipebicg_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *phat, const hk_vec *s,
                             const hk_vec *shat, const hk_vec *As, const hk_vec *Ap,
                             const hk_vec *r0s, double *S)
{
    const hk_dist *d = dist_of(x);
    HK_CALL(d->local->pipebicg_update(x, r, p, phat, s, shat, As, Ap, r0s, S));
    HK_CALL(sum_slots(d, S, HK_S_BI_RR0, 1));
    return sum_slots(d, S, HK_S_BI_RR, 1);
}

static int d_vec_mdot_s(int k, hk_vec *const *X, const hk_vec *y, double *S)
{
    const hk_dist *d = dist_of(y);
    if (d->dcomm) {
        DEV_CALL(d, d->local->vec_mdot_s(k, X, y, S));
        const double t0 = sum_start(d);
        hk_dcomm_sum(d->dcomm, S, k);
        hk_dprof_sum(0, t0);
        return 0;
    }
    HK_CALL(d->local->vec_mdot_s(k, X, y, S));
    double h[HK_S_MAX];
    for (int j0 = 0; j0 < k; j0 += HK_S_MAX) { /* gmres's restart may exceed a slot array */
        const int n = k - j0 < HK_S_MAX ? k - j0 : HK_S_MAX;
        const double t0 = sum_start(d);
        HK_CALL(d->local->scal_get(S + j0, 0, n, h));
        const double t1 = hk_dprof_now();
        HK_CALL(hk_comm_sum(d->comm, h, n));
        HK_CALL(d->local->scal_set(S + j0, 0, n, h));
        hk_dprof_sum(t0, t1);
    }
    return 0;
}

static int d_vec_maxpy_s_nrm(hk_vec *y, int k, const double *S, hk_vec *const *X, double *nrm2)
{
    const hk_dist *d = dist_of(y);
    HK_CALL(d->local->vec_maxpy_s_nrm(y, k, S, X, nrm2));
    return sum_slots(d, nrm2, 0, 1);
}

static int d_vec_scale_s_dot(hk_vec *y, const double *nrm2, const hk_vec *w, double *dd)
{
    const hk_dist *d = dist_of(y);
    HK_CALL(d->local->vec_scale_s_dot(y, nrm2, w, dd));
    return w ? sum_slots(d, dd, 0, 1) : 0;
}

/* ---- the operator with its reductions ----------------------------------------------------- */

/* Ap = A p, then S[PAP] = p.Ap, S[APZ] = Ap.(dinv.*Ap), S[ZAP] = r.(dinv.*Ap) (r NULL: p.Ap)
 * summed over the processes. */
static int d_spmv_dot2(hk_mat *A, const hk_vec *p, hk_vec *Ap, const hk_vec *dinv, const hk_vec *r,
                       double *S)
{
    const hk_dist *d = A->be->dist;
    const hk_backend_ops *L = d->local;
    HK_CALL(hk_dist_mat_spmv(A, p, Ap));
    hk_vec *t = NULL;
    if (d->dcomm && dinv) HK_CALL(hk_dist_mat_scratch(A, &t));
    hk_vec *P1[1] = {(hk_vec *)p}, *P2[2] = {Ap, (hk_vec *)r};
    if (dots_on_device(d, 1, P1, Ap) && dots_on_device(d, r ? 2 : 1, P2, t ? t : Ap)) {
        /* the three local sums into the transport's scalars, summed there, then to S: no host
         * round trip */
        double *T = d->dcomm->scratch;
        DEV_CALL(d, L->vec_mdot_s(1, P1, Ap, T));
        if (t) DEV_CALL(d, L->vec_pointwise_mult(t, dinv, Ap));
        DEV_CALL(d, L->vec_mdot_s(r ? 2 : 1, P2, t ? t : Ap, T + 1));
        if (!r) DEV_CALL(d, L->copy(T + 2, T, sizeof *T));
        const double t0 = sum_start(d);
        hk_dcomm_sum(d->dcomm, T, 3);
        hk_dprof_sum(0, t0);
        DEV_CALL(d, L->copy(S + HK_S_PAP, T, 2 * sizeof *T)); /* PAP, APZ */
        DEV_CALL(d, L->copy(S + HK_S_ZAP, T + 2, sizeof *T));
        return 0;
    }
    double v[3];
    const double t0 = sum_start(d);
    HK_CALL(L->vec_dot(p, Ap, &v[0]));
    const hk_vec *z = Ap;
    if (dinv) {
        HK_CALL(hk_dist_mat_scratch(A, &t));
        HK_CALL(L->vec_pointwise_mult(t, dinv, Ap));
        z = t;
    }
    HK_CALL(L->vec_dot(Ap, z, &v[1]));
    if (r)
        HK_CALL(L->vec_dot(r, z, &v[2]));
    else
        v[2] = v[0];
    HK_CALL(sum_host_from(d, v, 3, t0));
    HK_CALL(L->scal_set(S, HK_S_PAP, 2, v)); /* PAP, APZ */
    return L->scal_set(S, HK_S_ZAP, 1, &v[2]);
}

static int d_spmv_mdot(hk_mat *A, const hk_vec *x, hk_vec *y, int k, const hk_vec *const *W,
                       double *S, const int *slot)
{
    const hk_dist *d = A->be->dist;
    HK_CALL(hk_dist_mat_spmv(A, x, y));
    double v[4];
    HK_CHECK(k >= 0 && k <= 4, HK_ERR_ARG, "spmv_mdot: %d inner products (at most 4)", k);
    if (dots_on_device(d, k, (hk_vec *const *)W, y)) { /* summed in place, then to the slots */
        double *T = d->dcomm->scratch;
        DEV_CALL(d, d->local->vec_mdot_s(k, (hk_vec *const *)W, y, T));
        const double t0 = sum_start(d);
        hk_dcomm_sum(d->dcomm, T, k);
        hk_dprof_sum(0, t0);
        for (int j = 0; j < k; j++)
            DEV_CALL(d, d->local->copy(S + slot[j], T + j, sizeof *T));
        return 0;
    }
    const double t0 = sum_start(d);
    for (int j = 0; j < k; j++)
        HK_CALL(d->local->vec_dot(W[j], y, &v[j]));
    HK_CALL(sum_host_from(d, v, k, t0));
    for (int j = 0; j < k; j++)
        HK_CALL(d->local->scal_set(S, slot[j], 1, &v[j]));
    return 0;
}

/* w = A u, then d[0] = r.u, d[1] = w.u, d[2] = r.r summed over the processes (cgcg). */
static int d_spmv_cgcg(hk_mat *A, const hk_vec *u, hk_vec *w, const hk_vec *r, double *dd)
{
    const hk_dist *d = A->be->dist;
    HK_CALL(hk_dist_mat_spmv(A, u, w));
    hk_vec *X[2] = {(hk_vec *)r, w};
    HK_CALL(d->local->vec_mdot(2, X, u, dd));
    HK_CALL(d->local->vec_dot(r, r, &dd[2]));
    return sum_host(d, dd, 3);
}

static int d_block_spmv(hk_mat *A, int k, const hk_vec *X, hk_vec *Y)
{
    for (int j = 0; j < k; j++) {
        const hk_vec x = {X->be, A->ncols, X->prec, (double *)X->data + (size_t)j * A->ncols};
        hk_vec y = {Y->be, A->nrows, Y->prec, (double *)Y->data + (size_t)j * A->nrows};
        HK_CALL(hk_dist_mat_spmv(A, &x, &y));
    }
    return 0;
}

void hk_dist_ops_init(hk_dist *d)
{
    const hk_backend_ops *L = d->local;
    hk_backend_ops o = *L;
    o.dist = d;
    /* sums to the host */
    o.vec_dot = d_vec_dot;
    o.vec_mdot = d_vec_mdot;
    o.vec_gram = L->vec_gram ? d_vec_gram : NULL;
    o.block_gram = L->block_gram ? d_block_gram : NULL;
    o.block_dots = L->block_dots ? d_block_dots : NULL;
    o.cg_update = L->cg_update ? d_cg_update : NULL;
    /* sums in backend scalars */
    o.pipecg_update = L->pipecg_update ? d_pipecg_update : NULL;
    o.pipecg_gv_step = L->pipecg_gv_step ? d_pipecg_gv_step : NULL;
    o.pipebicg_s = L->pipebicg_s ? d_pipebicg_s : NULL;
    o.pipebicg_update = L->pipebicg_update ? d_pipebicg_update : NULL;
    o.vec_mdot_s = L->vec_mdot_s ? d_vec_mdot_s : NULL;
    o.vec_dot_s = NULL; /* the local op would sum this process's entries only: the callers
                         * (pc=amg's bound) take vec_dot, which sums over the processes */
    o.spmv_dot_s = NULL; /* likewise: the bound makes the separate calls */
    o.bdiag_update_dot_s = NULL;
    o.vec_maxpy_s_nrm = L->vec_maxpy_s_nrm ? d_vec_maxpy_s_nrm : NULL;
    o.vec_scale_s_dot = L->vec_scale_s_dot ? d_vec_scale_s_dot : NULL;
    /* the operator */
    o.mat_build = hk_dist_mat_build;
    o.mat_refill = NULL; /* the distributed operator is built anew (hk_dist_mat_build) */
    o.mat_refill_checked = NULL;
    /* an fp32 copy: each part converted by the backend (NULL: built from the local K) */
    o.mat_convert = L->mat_convert ? hk_dist_mat_convert : NULL;
    o.mat_spmv = hk_dist_mat_spmv;
    o.mat_release = hk_dist_mat_release;
    o.mat_download = NULL;
    o.spmv_dot2 = d_spmv_dot2;
    o.spmv_mdot = d_spmv_mdot;
    o.spmv_cgcg = L->spmv_cgcg ? d_spmv_cgcg : NULL;
    o.block_spmv = d_block_spmv;
    /* vector updates without sums stay the backend's (vec_axpby, ..., cgcg_update);
     * an SpMV fused into an update: the methods make the two calls */
    o.spmv_poly_step = NULL;
    /* pc=amg's level 0 (the distributed operator): the backend's op on each part's rows
     * around the SpMV's exchange; the coarse levels make the separate calls */
    o.amg_cheb_step = L->amg_cheb_step ? hk_dist_amg_cheb_step : NULL;
    o.pipecg_step = NULL;
    o.pipecg_paper_step = NULL; /* method=pipecg says so for pipecg.variant=paper */
    o.spmv_pipecg_gv_step = NULL;
    o.cg_spmv = NULL;
    o.cg_iter = NULL;
    /* recorded graphs (a sum over processes is a host call), matrix powers */
    o.graph_begin = NULL;
    o.graph_end = NULL;
    o.graph_launch = NULL;
    o.graph_free = NULL;
    o.mpk_plan = NULL;
    o.mpk_apply = NULL;
    o.mpk_free = NULL;
    o.mpk_stream_plan = NULL;
    /* set-up of the preconditioners that are not distributed */
    o.bmat_permute = NULL;
    o.bmat_sym_check = NULL;
    o.factor_exact = NULL;
    o.tri_setup = NULL;
    o.tri_solve = NULL;
    o.tri_destroy = NULL;
    o.factor_sweeps = NULL;
    o.amg_l1_diag = NULL;
    o.bmat_transpose = NULL;
    o.bmat_transpose_numeric = NULL;
    o.bmat_expand = NULL;
    o.bmat_compress = NULL;
    o.bmat_spgemm = NULL;
    o.bmat_spgemm_numeric = NULL;
    o.bmat_spgemm_pattern = NULL;
    o.bmat_spgemm_numeric_upper = NULL;
    o.bmat_mirror_lower = NULL;
    o.bmat_put_transposed = NULL; /* the coarse operator's mirrors: dist_amg.c calls d->local's */
    o.bmat_spgemm_plan = NULL;
    o.bmat_spgemm_numeric_plan = NULL;
    o.bmat_spgemm_numeric_plan_f32 = NULL;
    o.vec_convert_blocks = NULL; /* pc=amg's kept P only: no distributed user */
    o.vec_round_fp32 = NULL;     /* pc=amg's fp32 levels' P only: no distributed user */
    o.bmat_spgemm_plan_free = NULL;
    o.amg_tentative_product = NULL;
    o.amg_tentative_product_numeric = NULL;
    o.amg_start_vector = NULL;
    o.fsai_pattern = NULL;
    o.fsai_factor = NULL;
    o.sai_pattern = NULL;
    o.sai_factor = NULL;
    o.amg_strength = NULL;
    o.amg_aggregate = NULL;
    o.amg_tentative = NULL;
    o.amg_smooth_prolongator = NULL;
    o.amg_smooth_prolongator_numeric = NULL;
    o.amg_rigid_modes = NULL;
    o.amg_coord_frame = NULL;
    o.amg_coord_bounds = NULL;
    o.dense_inverse = NULL;
    o.dense_gemv = NULL;
    o.bmat_spmv = NULL;
    o.dist_read_columns = NULL;
    o.dist_local_pattern = NULL;
    /* the Galerkin merge's sums are a process's own rows (dist_amg.c calls its backend's) */
    o.coo_to_csr = NULL;
    o.dist_row_lengths = NULL; /* the set-up's ghost rows run on d->local */
    o.dist_pack_rows = NULL;
    o.dist_mark_columns = NULL;
    o.dist_extend_rows = NULL;
    /* the transport belongs to the layout, not to the table's users */
    o.dcomm_id = NULL;
    o.dcomm_create = NULL;
    o.dcomm_exchange = NULL;
    o.dcomm_wait = NULL;
    o.dcomm_sum = NULL;
    o.dcomm_destroy = NULL;
    o.dcomm_connect = NULL;
    d->ops = o;
}
