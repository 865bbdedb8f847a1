/* pc=amg on several processes (dist_amg.c): apply. The cycle runs on the backend through the
 * distributed ops table and the one-process smoother (hk_amg_smooth): Chebyshev, block Jacobi
 * or l1-Jacobi, V or W; from level g (pc.amg.dist.gather_rows) it runs on the whole levels on
 * every process (damg_gathered.c). Also the preconditioner's ops table (hk_pc_dist_amg). */
#include <stdio.h>
#include <stdlib.h>

#include "damg_impl.h"

/* ---- apply ------------------------------------------------------------------------------- */

/* y = M x on a level on every process (no exchange). */
static int rmat_spmv(void *op, const hk_vec *x, hk_vec *y)
{
    const rmat *r = op;
    return r->M.be->bmat_spmv(&r->M, r->v32, x, y);
}

/* The whole level l's right-hand side and correction (the coarsest's: the dense solve's). */
static hk_vec *whole_b(damg *a, int l)
{
    return l == a->nlevels - 1 ? a->cb : a->lev[l].gb;
}

static hk_vec *whole_x(damg *a, int l)
{
    return l == a->nlevels - 1 ? a->cx : a->lev[l].gx;
}

static int rvisit(hk_pc *pc, damg *a, int l);

/* The cycle of a level on every process: the distributed cycle's steps on the whole level
 * with the backend's own ops, each row's sum the owner's. */
static int rcycle(hk_pc *pc, damg *a, int l, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = a->d->local;
    if (l == a->nlevels - 1) return be->dense_gemv(a->Minv, b, x);
    dlev *L = &a->lev[l];
    /* the distributed level's sweep on the whole level's operator, data and scratch */
    hk_amg_sweep s = hk_damg_sweep_of(pc, a, L, l);
    s.be = be;
    s.spmv = rmat_spmv;
    s.A = &L->gA;
    s.mat = NULL; /* the whole level's operator is no hk_mat: the separate calls */
    s.d2 = NULL;
    s.Dinv = L->gDinv;
    s.l1 = L->gl1;
    s.r = L->gr;
    s.t = L->gt;
    s.d = L->gd;
    for (int k = 0; k < a->op.pre; k++)
        HK_CALL(hk_amg_smooth(&s, b, x, k == 0));
    if (a->op.pre == 0) HK_CALL(be->vec_set(x, 0.0));
    HK_CALL(rmat_spmv(&L->gA, x, L->gr));
    HK_CALL(be->vec_axpby(L->gr, 1.0, b, -1.0));
    HK_CALL(rmat_spmv(&L->gR, L->gr, whole_b(a, l + 1)));
    HK_CALL(rvisit(pc, a, l + 1));
    HK_CALL(rmat_spmv(&L->gP, whole_x(a, l + 1), L->gt));
    HK_CALL(be->vec_axpby(x, 1.0, L->gt, 1.0));
    for (int k = 0; k < a->op.post; k++)
        HK_CALL(hk_amg_smooth(&s, b, x, 0));
    return 0;
}

/* Level l (on every process) from its whole right-hand side, with the W-cycle's second visit
 * on the residual, as the distributed cycle makes it. */
static int rvisit(hk_pc *pc, damg *a, int l)
{
    const hk_backend_ops *be = a->d->local;
    hk_vec *b = whole_b(a, l), *x = whole_x(a, l);
    HK_CALL(rcycle(pc, a, l, b, x));
    if (a->op.cycle == 1 && l < a->nlevels - 1) {
        dlev *C = &a->lev[l];
        HK_CALL(rmat_spmv(&C->gA, x, C->gw));
        HK_CALL(be->vec_axpby(C->gw, 1.0, b, -1.0));
        HK_CALL(rcycle(pc, a, l, C->gw, C->ge));
        HK_CALL(be->vec_axpby(x, 1.0, C->ge, 1.0));
    }
    return 0;
}

/* From level l to level g = l + 1 on every process and back: the restricted residual (the
 * process's rows, b) gathered into level g's whole vector, g's cycle there, then P_l reads
 * its columns from the whole correction (no exchange) into t. */
static int visit_gathered(hk_pc *pc, damg *a, int l, const hk_vec *b, hk_vec *t)
{
    const hk_dist *d = a->d;
    const hk_backend_ops *Lb = d->local;
    dlev *F = &a->lev[l];
    const int g = l + 1;
    HK_CALL(hk_damg_gather_vec(d, b->data, a->gcount, a->gown, a->gall, whole_b(a, g)->data, g));
    HK_CALL(rvisit(pc, a, g));
    dmat *m = F->P;
    const int64_t n = m->nbc + m->ng;
    if (n) HK_CALL(Lb->vec_gather(m->xe, whole_x(a, g), F->pfull_dev, n, m->bc));
    if (!m->nrows) return 0;
    hk_vec tl = hk_dist_view(d, t, 0, t->n);
    return Lb->bmat_spmv(&m->M, m->v32, m->xe, &tl);
}

/* r = b - A x on the level of sweep s (t: scratch), in one op where its operator is an
 * hk_mat of a table with amg_cheb_step (level 0), with the separate calls' digits. */
static int residual(const hk_amg_sweep *s, const hk_vec *b, const hk_vec *x, hk_vec *r, hk_vec *t)
{
    if (s->mat && s->be->amg_cheb_step) {
        const hk_cheb_step st = {.p = x, .rin = b, .r = r, .t = t};
        return s->be->amg_cheb_step(s->mat, &st);
    }
    HK_CALL(s->spmv(s->A, x, r));
    return s->be->vec_axpby(r, 1.0, b, -1.0);
}

static int cycle(hk_pc *pc, damg *a, int l, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = pc->be;
    dlev *L = &a->lev[l];
    if (l == a->nlevels - 1) return hk_damg_coarse_solve(pc, a, b, x);
    dlev *C = &a->lev[l + 1];
    const hk_amg_sweep s = hk_damg_sweep_of(pc, a, L, l);
    for (int k = 0; k < a->op.pre; k++)
        HK_CALL(hk_amg_smooth(&s, b, x, k == 0));
    if (a->op.pre == 0) HK_CALL(be->vec_set(x, 0.0));
    HK_CALL(residual(&s, b, x, L->r, L->t));
    HK_CALL(hk_damg_dmat_spmv(L->R, L->r, C->b));
    if (l + 1 >= a->g) {
        HK_CALL(visit_gathered(pc, a, l, C->b, L->t));
        HK_CALL(be->vec_axpby(x, 1.0, L->t, 1.0));
        for (int k = 0; k < a->op.post; k++)
            HK_CALL(hk_amg_smooth(&s, b, x, 0));
        return 0;
    }
    HK_CALL(cycle(pc, a, l + 1, C->b, C->x));
    if (a->op.cycle == 1 && l + 1 < a->nlevels - 1) { /* W: a second visit on the residual */
        HK_CALL(hk_damg_dmat_spmv(C->A, C->x, C->w));
        HK_CALL(be->vec_axpby(C->w, 1.0, C->b, -1.0));
        HK_CALL(cycle(pc, a, l + 1, C->w, C->e));
        HK_CALL(be->vec_axpby(C->x, 1.0, C->e, 1.0));
    }
    HK_CALL(hk_damg_dmat_spmv(L->P, C->x, L->t));
    HK_CALL(be->vec_axpby(x, 1.0, L->t, 1.0));
    for (int k = 0; k < a->op.post; k++)
        HK_CALL(hk_amg_smooth(&s, b, x, 0));
    return 0;
}

static int damg_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    damg *a = pc->data;
    const double t0 = hk_dprof_now();
    HK_CALL(cycle(pc, a, 0, r, z));
    /* HOOKE_DIST_PROFILE: the solve's first application with its kernels (the first launches
     * of the cycle's) */
    if (hk_dist_prof.on && hk_dist_prof.pc_first_end == 0) HK_CALL(a->d->local->sync());
    hk_dprof_pc(t0);
    return 0;
}

static void damg_destroy(hk_pc *pc)
{
    damg *a = pc->data;
    if (a) hk_damg_stage_free(a->d, &a->stg); /* the set-ups' staging (hk_damg_stage_get) */
    hk_damg_free_levels(pc->data);
    free(pc->data);
    pc->data = NULL;
}

static const char *const smoother_label[] = {"chebyshev", "l1-jacobi", "bjacobi"};

static void damg_describe(const hk_pc *pc, char *buf, size_t len)
{
    const damg *a = pc->data;
    size_t k = (size_t)snprintf(buf, len, "distributed, %d level%s: ", a->nlevels,
                                a->nlevels == 1 ? "" : "s");
    for (int l = 0; l < a->nlevels && k < len; l++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", l ? ", " : "", (long long)a->rows[l]);
    if (k < len)
        k += (size_t)snprintf(buf + k, len - k,
                              " rows; operator complexity %.2f; %d %s; %s, %s-cycle; %s levels; ",
                              a->op_complexity, a->nns, a->nns_kind, smoother_label[a->op.smoother],
                              a->op.cycle ? "W" : "V", pc->prec == HK_FP32 ? "fp32" : "fp64");
    if (k < len && a->g < a->nlevels - 1)
        snprintf(buf + k, len - k, "levels from %lld rows on every process",
                 (long long)a->rows[a->g]);
    else if (k < len)
        snprintf(buf + k, len - k, "coarsest gathered on every process");
}

const hk_pc_type hk_pc_dist_amg = {
    .name = "amg",
    .summary = "smoothed-aggregation multigrid with the rigid-body modes, distributed",
    .options = "pc.amg.threshold pc.amg.max_levels pc.amg.coarse_size pc.amg.smoother "
               "pc.amg.degree pc.amg.pre pc.amg.post pc.amg.cycle pc.amg.omega pc.amg.ratio "
               "pc.amg.safety pc.amg.lanczos pc.amg.precision pc.amg.dist.gather_rows",
    .symmetric = 1,
    .setup = hk_damg_setup,
    .apply = damg_apply,
    .apply_capturable = 0,
    .destroy = damg_destroy,
    .describe = damg_describe,
    .update = NULL,
    .fallback = hk_damg_fallback,
};
