/* method=scg: s-step (communication-avoiding) preconditioned CG, in the formulation of
 * Chronopoulos and Gear (1989) and Hoemmen (PhD thesis, Berkeley 2010, ch. 5; Carson and
 * Demmel, SIMAX 2014). Per outer step:
 *   1. the basis of the direction and of the preconditioned residual, both for the
 *      preconditioned operator M^-1 A and both with their unpreconditioned partners:
 *        P: U_0 = p, W_0 = q = M p;  R: U_0 = z = M^-1 r, W_0 = r;
 *        W_{j+1} = a_j A U_j + b_j W_j + c_j W_{j-1},  U_{j+1} = M^-1 W_{j+1}
 *      (s levels for P, s-1 for R; Yz = [P.U, R.U], Yw = [P.W, R.W], 2s+1 columns). The matrix
 *      powers op computes a chain in one pass where it can (no pc, or Jacobi fused as a
 *      diagonal); otherwise one SpMV and one pc apply per vector.
 *   2. one block reduction: G = Yw^T Yz (= Yz^T M Yz) and, with a pc, Yw^T Yw for ||r||.
 *   3. s CG steps on the host in coordinates (p = Yz p', r = Yw r', z = Yz r'): with
 *      M^-1 A Yz = Yz B (B from the recurrence), r.z = r'Gr', p.Ap = p'G(Bp').
 *   4. x += Yz x', and r, z, p, q recombined from the basis.
 * The basis is monomial (scaled by 1/hi), Newton (Leja-ordered Chebyshev points of [lo, hi]
 * as shifts) or Chebyshev (T_j of the map of [lo, hi] to [-1, 1]). The bounds of the spectrum
 * of M^-1 A are a Lanczos estimate, as for pc=poly, here read from the coefficients of the
 * first CG steps of every solve (Saad, ch. 6.7.3), which also advance the solution.
 * Residual replacement (van der Vorst and Ye 2000; for s-step CG Carson and Demmel 2014):
 * r = b - A x (z = M^-1 r) at an outer step where the gap estimate crosses sqrt(eps) ||r||, or
 * every replace_every iterations; p and q are kept. Breakdowns of the coordinates (p.Ap or r.z
 * not positive, often a sign of an ill-conditioned basis) restart from the true residual
 * before "not SPD" is believed. */
#include <stdlib.h>
#include <string.h>

#include "ksp_impl.h"
#include "pc/pc_impl.h"

#define SCG_MAX_S HK_SCG_MAX_S
#define SCG_WARMUP 10  /* CG steps at the start of a solve, for the spectrum estimate */
#define SCG_RETRIES 10 /* restarts from the true residual before believing a breakdown */

/* mpk.schedule=ghost with mpk.block=0: partitions of this many block rows (the CUDA kernel's
 * thread block holds a row a thread) */
#define SCG_GHOST_BLOCK 256

static const char *const basis_names[] = {"monomial", "newton", "chebyshev", NULL};
/* mpk.schedule: auto, ghost, wavefront and shared (ghost zones staged on chip) choose the basis's
 * build by rule (hk_scg_setup), so that a run repeats to the last digit; timed times plans and
 * SpMVs and keeps the fastest */
enum { SCHED_AUTO = 0, SCHED_GHOST, SCHED_WAVEFRONT, SCHED_TIMED, SCHED_SHARED };
static const char *const schedule_names[] = {"auto", "ghost", "wavefront", "timed", "shared", NULL};

typedef struct scg_state {
    int s, basis;
    int64_t mpk_block; /* option: -1 k SpMVs, 0 chosen, N block rows per partition (chunk) */
    int mpk_k;         /* option: levels per pass, 0: ksp.s (timed: tuned) */
    int schedule;      /* option: SCHED_* */
    void *plan;        /* the matrix-powers plan; NULL: one SpMV (and pc apply) per vector */
    int kk;            /* levels per pass of the plan */
    hk_mpk_info info;
    hk_vec *d; /* the Jacobi diagonal fused into the matrix powers (NULL: none) */
    int d_owned;
    double t_mpk, t_spmv; /* mpk.schedule=timed: seconds per basis, matrix powers and k SpMVs */
    int made;             /* mpk.schedule=timed: plans made and timed */
    char why[96];         /* why the basis is built with separate SpMVs */
} scg_state;

/* ---- options and set-up ------------------------------------------------------------------ */

int hk_scg_options(hk_ksp *k, hk_options *o)
{
    scg_state *st;
    HK_CALL(hk_calloc(1, sizeof *st, &st));
    k->sstep = st;
    st->s = 4;
    st->basis = HK_BASIS_CHEBYSHEV;
    int block = 0;
    HK_CALL(hk_options_get_int(o, "ksp.s", &st->s));
    HK_CALL(hk_options_get_choice(o, "ksp.basis", basis_names, &st->basis));
    HK_CALL(hk_options_get_int(o, "mpk.block", &block));
    HK_CALL(hk_options_get_int(o, "mpk.k", &st->mpk_k));
    HK_CALL(hk_options_get_choice(o, "mpk.schedule", schedule_names, &st->schedule));
    st->mpk_block = block;
    HK_CHECK(st->s >= 1 && st->s <= SCG_MAX_S, HK_ERR_OPTION,
             "option ksp.s=%d is out of range; use 1..%d (default 4)", st->s, SCG_MAX_S);
    HK_CHECK(block >= -1, HK_ERR_OPTION,
             "option mpk.block=%d must be -1 (one SpMV per basis vector), 0 (chosen) or a number "
             "of block rows per partition",
             block);
    HK_CHECK(st->mpk_k >= 0 && st->mpk_k <= st->s, HK_ERR_OPTION,
             "option mpk.k=%d must be 0 (ksp.s) or 1..ksp.s=%d levels per pass", st->mpk_k, st->s);
    return 0;
}

void hk_scg_free(hk_ksp *k)
{
    scg_state *st = k->sstep;
    if (!st) return;
    if (st->plan) k->be->mpk_free(st->plan);
    if (st->d_owned) hk_vec_destroy(st->d);
    free(st);
    k->sstep = NULL;
}

void hk_scg_describe(const hk_ksp *k, char *buf, size_t n)
{
    const scg_state *st = k->sstep;
    if (!st) {
        snprintf(buf, n, "scg");
        return;
    }
    if (st->plan && st->info.schedule == HK_MPK_WAVEFRONT) {
        snprintf(buf, n,
                 "scg (s=%d, %s basis; matrix powers: wavefront, %lld chunk%s of %lld block rows "
                 "(bandwidth %lld), %d level%s a pass%s)",
                 st->s, basis_names[st->basis], (long long)st->info.nparts,
                 st->info.nparts == 1 ? "" : "s", (long long)st->info.block,
                 (long long)st->info.bandwidth, st->kk, st->kk > 1 ? "s" : "",
                 st->info.on_chip ? ", on chip" : "");
    } else if (st->plan && st->info.schedule == HK_MPK_SHARED) {
        const double extra = (double)st->info.work / ((double)st->info.k * k->K->nbrows);
        snprintf(buf, n,
                 "scg (s=%d, %s basis; matrix powers: shared, %lld partitions of %lld block rows "
                 "staged on chip (%.0f KiB at most), %d level%s a pass, %.2fx the rows of k "
                 "SpMVs)",
                 st->s, basis_names[st->basis], (long long)st->info.nparts,
                 (long long)st->info.block, (double)st->info.stage_bytes / 1024.0, st->kk,
                 st->kk > 1 ? "s" : "", extra);
    } else if (st->plan) {
        const double extra = (double)st->info.work / ((double)st->info.k * k->K->nbrows);
        snprintf(buf, n,
                 "scg (s=%d, %s basis; matrix powers: ghost zones, %lld partitions of %lld block "
                 "rows, %d level%s a pass, %.2fx the rows of k SpMVs%s)",
                 st->s, basis_names[st->basis], (long long)st->info.nparts,
                 (long long)st->info.block, st->kk, st->kk > 1 ? "s" : "", extra,
                 st->info.on_chip ? ", on chip" : "");
    } else {
        snprintf(buf, n, "scg (s=%d, %s basis; one SpMV per basis vector: %s)", st->s,
                 basis_names[st->basis], st->why);
    }
}

/* The vectors of one chain of s levels for the tuning runs: the best of three runs after a
 * warm-up, or of fewer when one already took more than `cutoff` (it cannot win: the ghost
 * schedules' plans, 2-3x the SpMVs, took most of the tuning time with four runs each). */
static int time_chain(hk_ksp *k, scg_state *st, void *plan, int kk, hk_vec **W, hk_vec **U,
                      const double *coef, double cutoff, double *seconds)
{
    const hk_backend_ops *be = k->be;
    const int s = st->s;
    double best = INFINITY;
    for (int rep = 0; rep < 4 && !(rep > 1 && best > cutoff); rep++) {
        HK_CALL(be->sync());
        const double t0 = hk_time();
        if (plan) {
            for (int j0 = 0; j0 < s; j0 += kk) {
                const int nl = s - j0 < kk ? s - j0 : kk;
                HK_CALL(be->mpk_apply(plan, nl, coef + 3 * j0, st->d, j0 ? W[j0 - 1] : NULL, W + j0,
                                      st->d ? U + j0 : NULL));
            }
        } else {
            for (int j = 0; j < s; j++) {
                HK_CALL(hk_mat_spmv(k->A, st->d ? U[j] : W[j], W[j + 1]));
                HK_CALL(be->vec_axpbypcz(W[j + 1], coef[3 * j + 1], W[j], coef[3 * j + 2],
                                         j ? W[j - 1] : W[j], coef[3 * j]));
                if (st->d) HK_CALL(be->vec_pointwise_mult(U[j + 1], st->d, W[j + 1]));
            }
        }
        HK_CALL(be->sync());
        const double t = hk_time() - t0;
        if (rep > 0 && t < best) best = t; /* the first run warms up */
    }
    *seconds = best;
    return 0;
}

/* Build one plan and time it; keep it in st when it beats *best, else free it. max_work as
 * for mpk_plan (no plan when the ghost zones exceed it). *info: the plan's. */
static int tune_one(hk_ksp *k, scg_state *st, int schedule, int64_t block, int kk, double max_work,
                    hk_vec **W, hk_vec **U, const double *coef, double *best, hk_mpk_info *info)
{
    const hk_backend_ops *be = k->be;
    void *plan = NULL;
    double t;
    HK_CALL(be->mpk_plan(k->K, schedule, block, kk, max_work, &plan, info));
    if (!plan) return 0;
    st->made++;
    int ierr = time_chain(k, st, plan, kk, W, U, coef, 1.5 * *best, &t);
    if (ierr || !(t < *best)) {
        be->mpk_free(plan);
        return ierr;
    }
    if (st->plan) be->mpk_free(st->plan);
    st->plan = plan;
    st->kk = kk;
    st->info = *info;
    *best = t;
    return 0;
}

/* The plan given by mpk.schedule/mpk.block/mpk.k without timing: block 0 is the backend's
 * wavefront chunk, or SCG_GHOST_BLOCK rows of ghost zones (staged on chip: HK_MPK_SHARED,
 * where the backend makes no plan when a partition does not fit, and says why). */
static int fixed_plan(hk_ksp *k, scg_state *st, int schedule, int64_t block)
{
    st->kk = st->mpk_k ? st->mpk_k : st->s;
    if (schedule != HK_MPK_WAVEFRONT && block == 0) block = SCG_GHOST_BLOCK;
    HK_CALL(k->be->mpk_plan(k->K, schedule, block, st->kk, 0.0, &st->plan, &st->info));
    if (!st->plan && schedule == HK_MPK_SHARED && st->info.stage_bytes > 0)
        snprintf(st->why, sizeof st->why,
                 "mpk.schedule=shared: a partition needs %.0f KiB on chip, more than the device "
                 "has",
                 (double)st->info.stage_bytes / 1024.0);
    else if (!st->plan && schedule == HK_MPK_SHARED)
        snprintf(st->why, sizeof st->why, "backend %s stages no partitions on chip",
                 k->be->name);
    return 0;
}

/* mpk.schedule=auto: the wavefront with the backend's chunk where K's block rows make at least
 * mpk_wave_chunks chunks of twice its bandwidth (the cpu: always), else one SpMV per basis
 * vector. A rule, not a timing: the plans and the SpMVs may round differently (cuda), and the
 * basis, and every digit after it, must not depend on the machine's load. */
static int auto_plan(hk_ksp *k, scg_state *st)
{
    HK_CALL(fixed_plan(k, st, HK_MPK_WAVEFRONT, 0));
    const int64_t nb = k->K->nbrows, bw = st->info.bandwidth > 0 ? st->info.bandwidth : 1;
    const int want = k->be->mpk_wave_chunks;
    if (want <= 0 || nb / (2 * bw) >= want) return 0;
    k->be->mpk_free(st->plan);
    st->plan = NULL;
    snprintf(st->why, sizeof st->why,
             "%lld block rows make fewer than %d chunks of twice the bandwidth %lld", (long long)nb,
             want, (long long)bw);
    return 0;
}

/* mpk.schedule=timed: the fastest of the s SpMVs, a few ghost partition sizes, wavefront chunks
 * and pass lengths (the thesis's auto-tuner, reduced to a search over a fixed list). */
static int timed_plan(hk_ksp *k, scg_state *st)
{
    const hk_backend_ops *be = k->be;
    const int s = st->s;
    int ierr = 0;
    hk_vec *v[2 * (SCG_MAX_S + 1)] = {0};
    /* monomial-like coefficients with a modest scale: timing only */
    double coef[3 * SCG_MAX_S];
    for (int j = 0; j < s; j++) {
        coef[3 * j] = 0.25;
        coef[3 * j + 1] = 0.5;
        coef[3 * j + 2] = j ? -0.25 : 0.0;
    }
    HK_TRY(hk_ksp_vecs(k, 2 * (s + 1), v));
    hk_vec **W = v, **U = v + s + 1;
    {
        double *h = NULL;
        HK_TRY(hk_malloc((size_t)W[0]->n * sizeof *h, &h));
        for (int64_t i = 0; i < W[0]->n; i++)
            h[i] = 1.0 + 0.25 * sin(0.37 * (double)i);
        ierr = hk_vec_upload(W[0], h);
        free(h);
        if (ierr) goto fail;
    }
    if (st->d) HK_TRY(be->vec_pointwise_mult(U[0], st->d, W[0]));
    HK_TRY(time_chain(k, st, NULL, 0, W, U, coef, INFINITY, &st->t_spmv));
    double best = st->t_spmv;
    const int64_t nb = k->K->nbrows;
    int64_t blocks[8];
    int nbl = 0;
    for (int64_t b = 64; b < nb && nbl < 7; b *= 4)
        blocks[nbl++] = b;
    blocks[nbl++] = nb;
    const int kks[2] = {st->mpk_k ? st->mpk_k : s, 2};
    const int nkk = st->mpk_k || s <= 2 ? 1 : 2;
    hk_mpk_info info;
    /* ghost zones: more than twice the rows of the k SpMVs cannot win, not even built */
    for (int bi = 0; bi < nbl; bi++)
        for (int ki = 0; ki < nkk; ki++)
            HK_TRY(
                tune_one(k, st, HK_MPK_GHOST, blocks[bi], kks[ki], 2.0, W, U, coef, &best, &info));
    /* the same partitions staged on chip, 16..4096 block rows: on-chip
     * memory holds tens (3D elasticity) to thousands (a banded scalar matrix) of block rows
     * with their matrix rows; a staged row is read from memory once a pass, so up to three
     * times the rows may still win; a plan whose largest partition does not fit (or a
     * backend without on-chip staging) is not made */
    for (int64_t b = 16;; b *= 4) {
        const int64_t bb = b < nb ? b : nb;
        for (int ki = 0; ki < nkk; ki++)
            HK_TRY(tune_one(k, st, HK_MPK_SHARED, bb, kks[ki], 3.0, W, U, coef, &best, &info));
        if (bb == nb || b >= 4096) break;
    }
    /* the wavefront: the backend's chunk, half and twice it; a size the plan raises to twice
     * the bandwidth or clamps to the rows onto one already timed is skipped */
    for (int ki = 0; ki < nkk; ki++) {
        HK_TRY(tune_one(k, st, HK_MPK_WAVEFRONT, 0, kks[ki], 0.0, W, U, coef, &best, &info));
        int64_t done[3] = {info.block, -1, -1};
        for (int i = 0; i < 2; i++) {
            int64_t c = i ? 2 * done[0] : done[0] / 2;
            if (c < 2 * info.bandwidth) c = 2 * info.bandwidth;
            if (c < 1) c = 1;
            if (c > nb) c = nb;
            if (c == done[0] || c == done[1]) continue;
            done[i + 1] = c;
            hk_mpk_info ci;
            HK_TRY(tune_one(k, st, HK_MPK_WAVEFRONT, c, kks[ki], 0.0, W, U, coef, &best, &ci));
        }
    }
    st->t_mpk = best;
    if (!st->plan && st->made)
        snprintf(st->why, sizeof st->why, "%s measured faster than matrix powers", "the SpMV");
    else if (!st->plan)
        snprintf(st->why, sizeof st->why, "no plan of mpk.schedule=%s on backend %s",
                 schedule_names[st->schedule], be->name);
fail:
    hk_ksp_vecs_free(k, 2 * (s + 1), v);
    return ierr;
}

/* Build and keep the matrix-powers plan (nothing when the pc cannot be fused): by rule
 * (mpk.schedule auto, ghost, wavefront, shared, mpk.block, mpk.k), or by timing (mpk.schedule=timed). On
 * the cpu every plan and the SpMVs give the same digits (solver/cpu/cpu_mpk.c), so there even
 * the timed choice changes only the speed; on cuda they round differently. */
int hk_scg_setup(hk_ksp *k)
{
    scg_state *st = k->sstep;
    const hk_backend_ops *be = k->be;
    HK_CHECK(be->vec_gram, HK_ERR_UNSUPPORTED, "method=scg: backend %s has no Gram reduction",
             be->name);
    if (!be->mpk_plan || !be->mpk_apply) {
        snprintf(st->why, sizeof st->why, "backend %s has no matrix powers", be->name);
        return 0;
    }
    if (st->mpk_block < 0) {
        snprintf(st->why, sizeof st->why, "mpk.block=-1");
        return 0;
    }
    if (!k->K || k->A->prec != HK_FP64) {
        snprintf(st->why, sizeof st->why, "no fp64 block matrix");
        return 0;
    }
    if (!hk_ksp_pc_is_none(k)) {
        if (!k->pc->dinv) {
            snprintf(st->why, sizeof st->why, "pc=%s is applied between the SpMVs",
                     k->pc->type->name);
            return 0;
        }
        if (k->pc->dinv->prec == HK_FP64) {
            st->d = k->pc->dinv;
        } else {
            /* fp32 Jacobi (precision=mixed): its diagonal promoted once, applied exactly */
            HK_CALL(hk_vec_create(be, k->pc->dinv->n, HK_FP64, &st->d));
            st->d_owned = 1;
            HK_CALL(be->vec_convert(st->d, k->pc->dinv));
        }
    }
    if (st->schedule == SCHED_TIMED && st->mpk_block == 0) return timed_plan(k, st);
    if (st->schedule == SCHED_AUTO && st->mpk_block == 0) return auto_plan(k, st);
    return fixed_plan(k, st,
                      st->schedule == SCHED_WAVEFRONT ? HK_MPK_WAVEFRONT
                      : st->schedule == SCHED_SHARED  ? HK_MPK_SHARED
                                                      : HK_MPK_GHOST,
                      st->mpk_block);
}

/* ---- the basis ------------------------------------------------------------------------- */

void hk_scg_basis_coef(int basis, int s, double lo, double hi, double *coef)
{
    if (basis == HK_BASIS_MONOMIAL || !(hi > lo)) {
        for (int j = 0; j < s; j++) {
            coef[3 * j] = 1.0 / hi;
            coef[3 * j + 1] = coef[3 * j + 2] = 0.0;
        }
        return;
    }
    if (basis == HK_BASIS_NEWTON) {
        /* shifts: Chebyshev points of [lo, hi] in Leja order (largest first, then each the
         * farthest, in product of distances, from those chosen); scale: the capacity */
        double pts[SCG_MAX_S], sh[SCG_MAX_S];
        int used[SCG_MAX_S] = {0};
        for (int i = 0; i < s; i++)
            pts[i] = 0.5 * (hi + lo) + 0.5 * (hi - lo) * cos(M_PI * (2 * i + 1) / (2.0 * s));
        for (int j = 0; j < s; j++) {
            int bi = -1;
            double bv = -1;
            for (int i = 0; i < s; i++) {
                if (used[i]) continue;
                double v = j ? 1.0 : fabs(pts[i]);
                for (int q = 0; q < j; q++)
                    v *= fabs(pts[i] - sh[q]);
                if (v > bv) {
                    bv = v;
                    bi = i;
                }
            }
            used[bi] = 1;
            sh[j] = pts[bi];
        }
        const double cap = 0.25 * (hi - lo);
        for (int j = 0; j < s; j++) {
            coef[3 * j] = 1.0 / cap;
            coef[3 * j + 1] = -sh[j] / cap;
            coef[3 * j + 2] = 0.0;
        }
        return;
    }
    /* Chebyshev: xi = (2 t - (hi + lo)) / (hi - lo); T_1 = xi T_0, T_{j+1} = 2 xi T_j - T_{j-1} */
    const double w = hi - lo;
    coef[0] = 2.0 / w;
    coef[1] = -(hi + lo) / w;
    coef[2] = 0.0;
    for (int j = 1; j < s; j++) {
        coef[3 * j] = 4.0 / w;
        coef[3 * j + 1] = -2.0 * (hi + lo) / w;
        coef[3 * j + 2] = -1.0;
    }
}

/* One chain: W[0] (and U[0] = M^-1 W[0]) given; W[1..levels], U[1..levels]. U == W without a
 * preconditioner. */
static int build_chain(hk_ksp *k, scg_state *st, int levels, const double *coef, hk_vec **W,
                       hk_vec **U)
{
    const hk_backend_ops *be = k->be;
    if (levels <= 0) return 0;
    if (st->plan) {
        for (int j0 = 0; j0 < levels; j0 += st->kk) {
            const int nl = levels - j0 < st->kk ? levels - j0 : st->kk;
            HK_CALL(be->mpk_apply(st->plan, nl, coef + 3 * j0, st->d, j0 ? W[j0 - 1] : NULL, W + j0,
                                  st->d ? U + j0 : NULL));
        }
        return 0;
    }
    /* the plan's arithmetic (hk_mpk_step): with a fused diagonal U = d .* W, also U_0 (an fp32
     * Jacobi's apply rounds otherwise) */
    const int none = U == W;
    if (st->d_owned) HK_CALL(be->vec_pointwise_mult(U[0], st->d, W[0]));
    for (int j = 0; j < levels; j++) {
        const double a = coef[3 * j], b = coef[3 * j + 1], c = coef[3 * j + 2];
        HK_CALL(hk_mat_spmv(k->A, U[j], W[j + 1]));
        if (j > 0 && c != 0.0)
            HK_CALL(be->vec_axpbypcz(W[j + 1], b, W[j], c, W[j - 1], a));
        else
            HK_CALL(be->vec_axpby(W[j + 1], b, W[j], a));
        if (st->d)
            HK_CALL(be->vec_pointwise_mult(U[j + 1], st->d, W[j + 1]));
        else if (!none)
            HK_CALL(hk_ksp_pc(k, W[j + 1], U[j + 1]));
    }
    return 0;
}

/* y = B x for the coordinates of the basis: blocks P (offset 0, s+1 vectors) and R (offset
 * s+1, s vectors); M^-1 A U_i = (U_{i+1} - b_i U_i - c_i U_{i-1}) / a_i. The last vector of a
 * block has no image in the basis; the CG steps never need it. */
static void apply_B(int s, const double *coef, const double *x, double *y)
{
    const int m = 2 * s + 1;
    for (int i = 0; i < m; i++)
        y[i] = 0;
    for (int blk = 0; blk < 2; blk++) {
        const int off = blk ? s + 1 : 0, len = blk ? s : s + 1;
        for (int i = 0; i + 1 < len; i++) {
            const double v = x[off + i];
            if (v == 0) continue;
            const double a = coef[3 * i], b = coef[3 * i + 1], c = coef[3 * i + 2];
            y[off + i + 1] += v / a;
            y[off + i] -= v * b / a;
            if (i > 0) y[off + i - 1] -= v * c / a;
        }
    }
}

static double quad(int m, const double *G, const double *u, const double *v)
{
    double s = 0;
    for (int i = 0; i < m; i++) {
        if (u[i] == 0) continue;
        double t = 0;
        for (int j = 0; j < m; j++)
            t += G[i * m + j] * v[j];
        s += u[i] * t;
    }
    return s;
}

/* y = sum c_i X_i over the nonzero c_i. */
static int combine(const hk_backend_ops *be, hk_vec *y, int m, const double *c, hk_vec *const *X)
{
    double a[HK_GRAM_MAX];
    hk_vec *V[HK_GRAM_MAX];
    int n = 0;
    for (int i = 0; i < m; i++)
        if (c[i] != 0) {
            a[n] = c[i];
            V[n++] = X[i];
        }
    if (n == 0) return be->vec_set(y, 0.0);
    HK_CALL(be->vec_axpby(y, a[0], V[0], 0.0));
    return n > 1 ? be->vec_maxpy(y, n - 1, a + 1, V + 1) : 0;
}

/* ---- the solve ------------------------------------------------------------------------- */

/* The bounds of the spectrum of M^-1 A from n CG steps (alpha, beta): the Lanczos tridiagonal
 * T_jj = 1/alpha_j + beta_{j-1}/alpha_{j-1}, T_j,j+1 = sqrt(beta_j)/alpha_j; hi is the largest
 * Ritz value with its residual bound or 1.05 times it (pc=poly's safeguard), lo the smallest. */
static int ritz_bounds(int n, const double *alpha, const double *beta, double *lo, double *hi)
{
    double T[SCG_WARMUP * SCG_WARMUP] = {0}, Y[SCG_WARMUP * SCG_WARMUP], ev[SCG_WARMUP];
    for (int j = 0; j < n; j++) {
        T[j * n + j] = 1.0 / alpha[j] + (j ? beta[j - 1] / alpha[j - 1] : 0.0);
        if (j + 1 < n) T[j * n + j + 1] = T[(j + 1) * n + j] = sqrt(beta[j]) / alpha[j];
    }
    HK_CALL(hk_dense_symeig(n, T, ev, Y));
    const double tmax = ev[n - 1], tmin = ev[0];
    const double resid = fabs(sqrt(beta[n - 1]) / alpha[n - 1] * Y[(n - 1) * n + (n - 1)]);
    *hi = fmax(tmax + resid, 1.05 * tmax);
    *lo = tmin > 0 && tmin < *hi ? tmin : *hi * 1e-6;
    return 0;
}

static int bad_scalar(hk_ksp *k, int it, double v, int *retry)
{
    if (hk_ksp_bad(v)) return hk_ksp_stop(k, it, HK_DIVERGED_NAN);
    if (v > 0) return 0;
    if (*retry) return 2; /* the caller restarts from the true residual */
    return hk_ksp_stop(k, it, HK_DIVERGED_NOT_SPD);
}

static int scg_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    const hk_backend_ops *be = k->be;
    scg_state *st = k->sstep;
    HK_CHECK(st, HK_ERR_ARG, "method=scg: not set up (hk_scg_options)");
    HK_CHECK(x->prec == HK_FP64 && k->A->prec == HK_FP64, HK_ERR_UNSUPPORTED,
             "method=scg runs in fp64 only; as inner.method of defect use cg or pipecg");
    const int s = st->s, m = 2 * s + 1, none = hk_ksp_pc_is_none(k);
    /* Yw (and Yz with a pc), then the new r, p, (z, q) and an SpMV result */
    const int base = none ? m : 2 * m, nv = base + (none ? 3 : 5);
    hk_vec *v[2 * (2 * SCG_MAX_S + 1) + 5] = {0};
    hk_vec *Yw[HK_GRAM_MAX], *Yz[HK_GRAM_MAX];
    int ierr, done, it = 0, retries = 0;
    double bnorm, rnorm, rz, lo = 0, hi = 0, xn = 0;
    hk_ksp_floor floor = {0};
    double G[HK_GRAM_MAX * HK_GRAM_MAX], GX[HK_GRAM_MAX * HK_GRAM_MAX], coef[3 * SCG_MAX_S];
    double alpha[SCG_WARMUP], beta[SCG_WARMUP];
    hk_ksp_drift drift;
    HK_CALL(hk_ksp_vecs(k, nv, v));
    for (int i = 0; i < m; i++) {
        Yw[i] = v[i];
        Yz[i] = none ? v[i] : v[m + i];
    }
    hk_vec *tr = v[base], *tp = v[base + 1], *t = v[base + 2];
    hk_vec *tz = none ? NULL : v[base + 3], *tq = none ? NULL : v[base + 4];
    /* r = Yw[s+1], z = Yz[s+1], q = Yw[0], p = Yz[0] (z = r and p = q without a pc) */
#define R_ (Yw[s + 1])
#define Z_ (Yz[s + 1])
#define Q_ (Yw[0])
#define P_ (Yz[0])
    HK_TRY(hk_ksp_start(k, b, x, R_, &bnorm, &rnorm, &done));
    if (done) goto out;
    memset(&drift, 0, sizeof drift);
    HK_TRY(hk_ksp_drift_init(k, b, tr, tp, &drift));
    const double normA = drift.normA;

    /* ---- the direction starts (and restarts) at p = z of the residual in r ---- */
restart:
    if (!none) HK_TRY(hk_ksp_pc(k, R_, Z_));
    HK_TRY(be->vec_dot(R_, Z_, &rz));
    {
        int retry = 0;
        if (bad_scalar(k, it, rz, &retry)) goto out;
    }
    HK_TRY(be->vec_copy(P_, Z_));
    if (!none) HK_TRY(be->vec_copy(Q_, R_));
    hk_ksp_drift_reset(&drift, it, rnorm);
    /* CG steps for the spectrum estimate (the first time only) */
    for (int nw = 0; !(hi > 0); nw++) {
        if (nw == SCG_WARMUP) {
            HK_TRY(ritz_bounds(nw, alpha, beta, &lo, &hi));
            hk_scg_basis_coef(st->basis, s, lo, hi, coef);
            /* p = M^-1 q, as after every outer step: z + beta p rounds differently, and a
             * matrix-powers pass, which makes U_0 = d .* W_0 itself, would then start from
             * another p than the SpMVs */
            if (!none) HK_TRY(hk_ksp_pc(k, Q_, P_));
            break;
        }
        double pap, g[2];
        int retry = 0;
        HK_TRY(hk_mat_spmv(k->A, P_, t));
        HK_TRY(be->vec_dot(P_, t, &pap));
        if (bad_scalar(k, it, pap, &retry)) goto out;
        const double a = rz / pap;
        HK_TRY(be->vec_axpby(x, a, P_, 1.0));
        HK_TRY(be->vec_axpby(R_, -a, t, 1.0));
        it++;
        if (!none) {
            HK_TRY(hk_ksp_pc(k, R_, Z_));
            hk_vec *X2[2] = {Z_, R_};
            HK_TRY(be->vec_mdot(2, X2, R_, g));
        } else {
            HK_TRY(be->vec_dot(R_, R_, &g[0]));
            g[1] = g[0];
        }
        rnorm = sqrt(fabs(g[1]));
        if (hk_ksp_converged(k, it, rnorm, bnorm)) goto out;
        if (bad_scalar(k, it, g[0], &retry)) goto out;
        alpha[nw] = a;
        beta[nw] = g[0] / rz;
        rz = g[0];
        HK_TRY(be->vec_axpby(P_, 1.0, Z_, beta[nw]));
        if (!none) HK_TRY(be->vec_axpby(Q_, 1.0, R_, beta[nw]));
    }

    /* ---- s-step iterations ---- */
    for (;;) {
        double xc[HK_GRAM_MAX] = {0}, rc[HK_GRAM_MAX] = {0}, pc[HK_GRAM_MAX] = {0};
        double Bp[HK_GRAM_MAX];
        HK_TRY(build_chain(k, st, s, coef, Yw, Yz));
        HK_TRY(build_chain(k, st, s - 1, coef, Yw + s + 1, Yz + s + 1));
        HK_TRY(be->vec_gram(m, Yw, none ? NULL : Yz, G, none ? NULL : GX));
        for (int i = 0; i < m; i++)
            for (int j = 0; j < i; j++) /* symmetric in exact arithmetic */
                G[i * m + j] = G[j * m + i] = 0.5 * (G[i * m + j] + G[j * m + i]);
        const double *Gr = none ? G : GX;
        pc[0] = 1;
        rc[s + 1] = 1;
        rz = quad(m, G, rc, rc);
        int j, stop = 0, broke = 0, retry = retries < SCG_RETRIES;
        for (j = 0; j < s; j++) {
            apply_B(s, coef, pc, Bp);
            const double pap = quad(m, G, pc, Bp);
            int bs = bad_scalar(k, it, pap, &retry);
            if (bs) {
                stop = bs == 1;
                broke = bs == 2;
                break;
            }
            const double a = rz / pap;
            for (int i = 0; i < m; i++) {
                xc[i] += a * pc[i];
                rc[i] -= a * Bp[i];
            }
            it++;
            const double rz_new = quad(m, G, rc, rc);
            rnorm = sqrt(fabs(quad(m, Gr, rc, rc)));
            stop = hk_ksp_converged(k, it, rnorm, bnorm);
            if (!stop || hk_reason_converged(k->res.reason)) {
                /* also at convergence: should the true residual disagree, CG goes on */
                bs = bad_scalar(k, it, rz_new, &retry);
                if (bs) {
                    stop = bs == 1;
                    broke = bs == 2;
                    j++;
                    break;
                }
                const double bt = rz_new / rz;
                for (int i = 0; i < m; i++)
                    pc[i] = rc[i] + bt * pc[i];
                rz = rz_new;
            }
            if (stop) {
                j++;
                break;
            }
        }
        /* x += Yz x'; r, z, p, q from the coordinates (after any number of steps) */
        if (j > 0) {
            double a[HK_GRAM_MAX];
            hk_vec *V[HK_GRAM_MAX];
            int n = 0;
            for (int i = 0; i < m; i++)
                if (xc[i] != 0) {
                    a[n] = xc[i];
                    V[n++] = Yz[i];
                }
            if (n) HK_TRY(be->vec_maxpy(x, n, a, V));
            HK_TRY(combine(be, tr, m, rc, Yw));
            if (none) {
                HK_TRY(combine(be, tp, m, pc, Yz));
            } else {
                /* z = M^-1 r and p = M^-1 q by the preconditioner, not recombined from the
                 * U basis: recombined, their gaps to M^-1 r and M^-1 q entered the next
                 * basis through its shifts (U_1 = M^-1 W_1 = a M^-1 A p + b M^-1 q, read
                 * as a M^-1 A p + b p), were multiplied by the coordinates' magnitudes at
                 * every recombination and grew from one outer step to the next: s = 1 took
                 * 2144 iterations for cg's 147 with hi ten times too large, and the bracket
                 * with pc=poly at s = 4 took 673-713 for cg's 460 (now 454-520) */
                HK_TRY(combine(be, tq, m, pc, Yw));
                HK_TRY(hk_ksp_pc(k, tr, tz));
                HK_TRY(hk_ksp_pc(k, tq, tp));
            }
            hk_vec *sw = R_;
            R_ = tr;
            tr = sw;
            sw = P_;
            P_ = tp;
            tp = sw;
            if (none) {
                Yz[s + 1] = Yw[s + 1];
                Yw[0] = Yz[0];
            } else {
                sw = Z_;
                Z_ = tz;
                tz = sw;
                sw = Q_;
                Q_ = tq;
                tq = sw;
            }
        }
        if (stop && !hk_reason_converged(k->res.reason)) goto out;
        /* the gap between r and b - A x grows by the rounding of the recombination, weighed
         * by the basis vectors' norms (Carson and Demmel's bound, simplified: hi bounds
         * A M^-1 on the W vectors). The rounding of x itself, eps ||A|| ||x|| a step in the
         * bound, is left to the floor test: counted here it overstated the gap by orders of
         * magnitude once the residual was below 1e-2 (the bracket with Jacobi: a replacement
         * every one or two steps from there, recursive and true residuals agreeing to four
         * digits each time), and the replacements, each a perturbation of the recurrence,
         * held the solve back (1639 against 1562 iterations to 5e-11 with s = 1, 1985
         * against 1543 with s = 4). */
        if (k->replace_every == 0) {
            double g = 0;
            for (int i = 0; i < m; i++)
                g += (fabs(rc[i]) + hi * fabs(xc[i])) * sqrt(fabs(Gr[i * m + i]));
            drift.gap += HK_EPS * g;
        }
        HK_TRY(hk_ksp_floor_xnorm(k, x, rnorm, bnorm, &xn));
        if (!stop && !broke &&
            hk_ksp_floor_due(&floor, it, rnorm, hk_ksp_residual_floor(normA, xn, bnorm))) {
            double tn;
            int fstop;
            HK_TRY(hk_ksp_floor_test(k, it, b, x, R_, bnorm, &floor, &tn, &fstop));
            if (fstop) goto out;
            rnorm = tn;
            goto restart; /* from the true residual now in R_ */
        }
        int replace = !stop && !broke && hk_ksp_drift_want(k, &drift, it, rnorm);
        if (replace && k->replace_every == 0) {
            /* only clear of the rounding floor (hk_ksp_replace_clear), with ||x|| read now: xn
             * is still 0 above sqrt(eps) ||b||, where the floor can already be near ||r|| */
            double xx;
            HK_TRY(be->vec_dot(x, x, &xx));
            replace = !hk_ksp_bad(xx) &&
                      hk_ksp_replace_clear(hk_ksp_residual_floor(normA, sqrt(xx), bnorm), rnorm);
        }
        if (stop || broke || replace) {
            /* residual replacement; at convergence it confirms on the true residual */
            HK_TRY(hk_ksp_true_residual_norm(k, b, x, R_, &rnorm));
            if (stop) {
                if (rnorm <= k->rtol * bnorm || rnorm <= k->atol || it >= k->maxit ||
                    retries >= SCG_RETRIES)
                    goto out;
                /* the true residual disagrees by more than the tolerance: the direction p,
                 * built from the recursive residual, no longer belongs to it, and a step
                 * along it from the replaced r can raise the error (the bracket with Jacobi
                 * at tol=5e-11: from 7.9e-11 up to 1e-3, "stagnation" after 3500
                 * iterations); restart the direction from the true residual instead */
                k->res.reason = HK_REASON_NONE;
                retries++;
                goto restart;
            }
            if (broke) {
                /* a breakdown of the coordinates: restart the direction from the true
                 * residual (p = z, q = r); a breakdown right after it means the matrix or
                 * the preconditioner */
                retries++;
                if (hk_ksp_converged(k, it, rnorm, bnorm)) goto out;
                goto restart;
            }
            if (!none) HK_TRY(hk_ksp_pc(k, R_, Z_));
            hk_ksp_drift_reset(&drift, it, rnorm);
        }
    }
#undef R_
#undef Z_
#undef Q_
#undef P_
out:
    ierr = 0;
fail:
    hk_ksp_floor_free(k, &floor);
    hk_ksp_vecs_free(k, nv, v);
    return ierr;
}

const hk_ksp_type hk_ksp_scg = {.name = "scg",
                                .summary = "s-step CG (Chronopoulos-Gear/Hoemmen), matrix "
                                           "powers basis, one Gram reduction per s steps (SPD)",
                                .needs_symmetric = 1,
                                .flexible = 0,
                                .solve = scg_solve};
