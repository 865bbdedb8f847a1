/* The start of a matrix-powers plan (mpk_plan) and the arithmetic of the wavefront schedule,
 * shared by the CPU reference (solver/cpu/cpu_mpk.c) and the CUDA version (cuda/cuda_mpk.cu)
 * so both refuse the same arguments, cut the same partitions and run the same stages. */
#ifndef HOOKE_SOLVER_MPK_PLAN_H
#define HOOKE_SOLVER_MPK_PLAN_H

#include <stdint.h>
#include <string.h>

#include "hk_impl.h"

#ifdef __CUDACC__
#define HK_MPK_HD __host__ __device__
#else
#define HK_MPK_HD
#endif

/* Clears *plan and *info, checks K, the schedule, k and *block, and sets info's schedule, k
 * and (ghost zones, shared) block and nparts. Ghost zones and shared: *block is clamped to the
 * block rows (at least 1) and *nparts set. Wavefront: *block >= 0 is left for hk_mpk_wave_chunk,
 * which needs K's bandwidth. */
static inline int hk_mpk_plan_begin(const hk_bmat *K, int schedule, int64_t *block, int k,
                                    void **plan, hk_mpk_info *info, int64_t *nparts)
{
    *plan = NULL;
    memset(info, 0, sizeof *info);
    HK_CHECK(K && K->br == K->bc && K->br >= 1 && K->br <= 6 && K->nbrows == K->nbcols, HK_ERR_ARG,
             "matrix powers: the matrix must be square with square blocks of 1..6");
    HK_CHECK(schedule == HK_MPK_GHOST || schedule == HK_MPK_WAVEFRONT || schedule == HK_MPK_SHARED,
             HK_ERR_ARG, "matrix powers: unknown schedule %d", schedule);
    HK_CHECK(k >= 1 && k <= HK_MPK_MAXK, HK_ERR_OPTION,
             "matrix powers: %d levels per pass; use 1..%d (option mpk.k)", k, HK_MPK_MAXK);
    const int wave = schedule == HK_MPK_WAVEFRONT;
    HK_CHECK(*block >= (wave ? 0 : 1), HK_ERR_OPTION,
             "matrix powers: a %s of %lld block rows; use at least %s (option mpk.block)",
             wave ? "chunk" : "partition", (long long)*block, wave ? "0 (chosen)" : "1");
    const int64_t nb = K->nbrows;
    HK_CHECK(nb < ((int64_t)1 << 31), HK_ERR_UNSUPPORTED,
             "matrix powers: %lld block rows are too many for 32-bit indices", (long long)nb);
    info->schedule = schedule;
    info->k = k;
    *nparts = 0;
    if (wave) return 0;
    if (*block > nb) *block = nb > 0 ? nb : 1;
    *nparts = nb > 0 ? (nb + *block - 1) / *block : 0;
    info->block = *block;
    info->nparts = *nparts;
    info->ext_rows = 0;
    return 0;
}

/* ---- a level of a partition (ghost zones and streamed plans, both backends) ------------ */

/* One level of the recurrence over a partition's listed rows: its current and previous W (wc,
 * wp) and its next W and U (wn, un) in the partition's entries, the level's outputs (wo, uo)
 * in the vectors' entries; un and uo are written only with d (hd). */
typedef struct hk_mpk_level {
    double c0, c1, c2;
    int hd;
    const double *wc, *wp;
    double *wn, *un, *wo, *uo;
} hk_mpk_level;

/* Level j + 1 of a pass (coefficients coef[3j..3j+2]). */
static inline HK_MPK_HD hk_mpk_level hk_mpk_level_at(const double *coef, int j, int hd,
                                                     const double *wc, const double *wp, double *wn,
                                                     double *un, double *wo, double *uo)
{
    const hk_mpk_level L = {coef[3 * j], coef[3 * j + 1], coef[3 * j + 2], hd, wc, wp, wn, un, wo,
                            uo};
    return L;
}

/* Entry q (vector entry i, dq = d[i] where there is d) of the level from au = (A U)_q:
 * w = c1 wc + c2 wp + c0 au and u = dq w, into the outputs too where the row is owned. The
 * terms are added in vec_axpbypcz's order (z = a x + b y + c z with z = A U), so that a pass
 * gives the digits of the SpMVs and vector ops it replaces (on the cpu: every plan and the
 * composed chain agree, and scg may pick among them by timing). */
static inline HK_MPK_HD void hk_mpk_step(const hk_mpk_level *L, double au, double dq, int64_t q,
                                         int64_t i, int own)
{
    const double w = L->c1 * L->wc[q] + L->c2 * L->wp[q] + L->c0 * au;
    L->wn[q] = w;
    double u = 0.0;
    if (L->hd) {
        u = dq * w;
        L->un[q] = u;
    }
    if (own) {
        L->wo[i] = w;
        if (L->hd) L->uo[i] = u;
    }
}

/* After a level the partition's W vectors move one back (the next becomes the current), and
 * U's with d; without d, U is W. */
static inline HK_MPK_HD void hk_mpk_rotate(double **wp, double **wc, double **wn, double **uc,
                                           double **un, int hd)
{
    double *t = *wp;
    *wp = *wc;
    *wc = *wn;
    *wn = t;
    if (hd) {
        t = *uc;
        *uc = *un;
        *un = t;
    } else {
        *uc = *wc;
        *un = *wn;
    }
}

/* ---- the wavefront schedule (shared arithmetic of both backends) ----------------------- */

/* The plan of a wavefront: chunk rows C, the shift h between levels, the chunks. want is the
 * requested chunk (0: want_auto, the backend's choice); bw is K's bandwidth. A chunk is at
 * least 2 bw rows, so level j of a chunk needs level j - 1 only of the same and the previous
 * chunk; one chunk of all rows needs no shift (the pass is then k plain SpMVs). */
static inline void hk_mpk_wave_plan(int64_t nb, int64_t bw, int64_t want, int64_t want_auto, int k,
                                    hk_mpk_info *info, int64_t *shift)
{
    int64_t c = want > 0 ? want : want_auto;
    if (c < 2 * bw) c = 2 * bw;
    if (c < 1) c = 1;
    if (c >= nb) c = nb > 0 ? nb : 1;
    *shift = c >= nb ? 0 : bw;
    info->block = c;
    info->bandwidth = bw;
    info->nparts = nb > 0 ? (nb + c - 1) / c : 0;
    info->ext_rows = nb;
    info->max_ext = c;
    info->work = (int64_t)k * nb;
}

/* Stages of a pass of kk levels. */
static inline int64_t hk_mpk_wave_stages(int64_t nb, int64_t chunk, int64_t shift, int kk)
{
    return nb > 0 ? kk - 1 + (nb + (kk - 1) * shift + chunk - 1) / chunk : 0;
}

/* The block rows [*lo, *hi) of level j (1..kk) at stage t (1..stages); empty when *lo >= *hi. */
static inline HK_MPK_HD void hk_mpk_wave_rows(int64_t nb, int64_t chunk, int64_t shift, int64_t t,
                                              int j, int64_t *lo, int64_t *hi)
{
    int64_t a = (t - j) * chunk - (int64_t)(j - 1) * shift, b = a + chunk;
    *lo = a < 0 ? 0 : a;
    *hi = b > nb ? nb : b;
}

#endif
