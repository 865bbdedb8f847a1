/* Matrix powers and the block Gram reduction of the s-step methods, CPU reference (contracts:
 * mpk_plan, mpk_apply, vec_gram in solver/hk_impl.h; the CUDA version in cuda/cuda_mpk.cu
 * builds the same plan arrays and computes the same sums).
 *
 * The plan (GPU Krylov thesis, section 6.3): partition p owns the block rows
 * [p*block, (p+1)*block); its extended row list holds level 0 (the owned rows, ascending),
 * then level l = 1..k (the rows at graph distance exactly l from the partition, ascending).
 * Level j+1 of the recurrence needs level j on the neighbours, so a pass of kk levels computes
 * at step j the rows of levels <= kk-1-j (a prefix of the list) from values the partition
 * computed itself: no partition waits for another between levels. Every extended row of level
 * < k keeps its matrix row's column indices renumbered into the list (lcol); values are read
 * from K. On the CPU each thread takes whole partitions (cache blocking, Mohiyuddin et al.).
 *
 * The shared schedule (a partition's matrix rows staged in on-chip memory) makes no plan here:
 * the CPU has no memory of that kind to manage, and the CUDA version's sums are those of the
 * ghost zones below, which are its reference.
 *
 * The wavefront schedule (mpk_plan.h) needs no lists: its plan is K's bandwidth and the chunk.
 * A stage is one parallel loop over its levels' rows, each level's range cut evenly among the
 * threads; a row's sum runs over K's row in BSR order, as the ghost zones' and the fp64 BSR
 * SpMV's do, so the digits do not depend on the thread count.
 *
 * Every plan of both schedules (any partition, chunk or pass length) gives the digits of the
 * composed recurrence: the fp64 SpMV of a format summing in BSR order (all but pcsr),
 * vec_axpbypcz's c1 W[j] + c2 W[j-1] + c0 (A U)[j] (hk_mpk_step), d .* W; suite sstep compares
 * them for equality. So no choice of plan changes a result on the cpu.
 *
 * The streamed plan (mpk_stream_plan) is the ghost-zone cut made from a host matrix and
 * packed by solver/mpk_stream.c; its pass computes each partition from the packed arrays alone,
 * the reference for the CUDA copies of the same bytes. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"
#include "mpk_plan.h"
#include "mpk_stream.h"

typedef struct cpu_mpk {
    const hk_bmat *K;
    int bs, k, schedule;
    int64_t shift; /* wavefront: rows between the ranges of two levels of one chunk */
    int64_t nb, block, nparts;
    int64_t *ext_ptr; /* nparts + 1 */
    int64_t *lvl;     /* nparts * (k + 2): start of level l of partition p at [p*(k+2) + l] */
    int32_t *ext_row; /* block row of each extended entry */
    int64_t *ent_ptr; /* ext + 1: entries of each extended row (none for level k) */
    int32_t *lcol;    /* local column of each entry */
    int64_t max_ext;
    hk_mpk_stream *stream; /* HK_MPK_STREAM: the packed partitions (K is NULL) */
} cpu_mpk;

/* The extended rows of partition p (the walk shared with the streamed plan, mpk_stream.c). */
static int mpk_bfs(const hk_bmat *K, int64_t block, int k, int64_t p, int32_t *mark, int32_t **buf,
                   int64_t *cap, int64_t *lstart)
{
    return hk_mpk_ghost_rows(K->rowptr, K->colind, K->nbrows, block, k, p, mark, buf, cap, lstart);
}

/* Block-row products of kk levels of a partition with level starts lstart. */
static int64_t mpk_work(const int64_t *lstart, int kk)
{
    int64_t w = 0;
    for (int j = 0; j < kk; j++)
        w += lstart[kk - j]; /* rows of levels <= kk-1-j */
    return w;
}

static void mpk_destroy(cpu_mpk *P)
{
    if (!P) return;
    free(P->ext_ptr);
    free(P->lvl);
    free(P->ext_row);
    free(P->ent_ptr);
    free(P->lcol);
    if (P->stream) {
        hk_mpk_stream_free(P->stream);
        free(P->stream);
    }
    free(P);
}

/* A plan of either schedule for K and k levels, its other fields zero. */
static int mpk_new(const hk_bmat *K, int k, int schedule, cpu_mpk **out)
{
    cpu_mpk *P = NULL;
    HK_CALL(hk_calloc(1, sizeof *P, &P));
    P->K = K;
    P->bs = K->br;
    P->k = k;
    P->nb = K->nbrows;
    P->schedule = schedule;
    *out = P;
    return 0;
}

/* ---- the wavefront schedule ---------------------------------------------------------- */

/* The CPU's own chunk (mpk.block=0): the rows whose matrix bytes times k fill about 1 MiB a
 * thread (half of a common 2 MiB L2). The rows a stage reads at level j were read at level
 * j - 1 one stage before, so k chunks of matrix rows are live at once. */
#define CPU_WAVE_BYTES ((int64_t)1 << 20)

static int wave_plan(const hk_bmat *K, int64_t want, int k, void **plan, hk_mpk_info *info)
{
    const int64_t nb = K->nbrows, bs = K->br;
    int64_t bw = 0;
#pragma omp parallel for reduction(max : bw) schedule(static)
    for (int64_t i = 0; i < nb; i++)
        for (int64_t t = K->rowptr[i]; t < K->rowptr[i + 1]; t++) {
            const int64_t dist = K->colind[t] > i ? K->colind[t] - i : i - K->colind[t];
            if (dist > bw) bw = dist;
        }
    /* matrix bytes of an average block row: its blocks and their column indices */
    const double row_bytes =
        nb > 0 ? (double)K->nnzb / (double)nb * (double)(bs * bs * 8 + 4) + 8.0 : 8.0;
    const double rows = (double)CPU_WAVE_BYTES * omp_get_max_threads() / (k * row_bytes);
    const int64_t want_auto = rows < 1 ? 1 : rows > (double)nb ? nb : (int64_t)rows;
    cpu_mpk *P = NULL;
    HK_CALL(mpk_new(K, k, HK_MPK_WAVEFRONT, &P));
    hk_mpk_wave_plan(nb, bw, want, want_auto, k, info, &P->shift);
    P->block = info->block;
    P->nparts = info->nparts;
    P->max_ext = info->max_ext;
    *plan = P;
    return 0;
}

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* One level of a stage: W[j] (and U[j]) from x = U[j-1] (W[j-1] without d; at level 1 with d,
 * W[0] times d on the fly), W[j-1] and W[j-2] (wprev or none at level 1). */
typedef struct wave_level {
    const double *x, *wc, *wp; /* wp NULL: no W[j-2] term */
    double *wo, *uo, *u0;      /* uo NULL without d; u0: U[0] of the level's rows (level 1, d) */
    double c0, c1, c2;
} wave_level;

/* Block rows [r0, r1) of one level; B and FLY (scale x by d) are literals at every call. */
ALWAYS_INLINE void wave_range(const hk_bmat *K, const wave_level *L, const double *restrict d,
                              int64_t r0, int64_t r1, const int B, const int FLY)
{
    const int64_t *restrict rowptr = K->rowptr;
    const int32_t *restrict colind = K->colind;
    const double *restrict val = K->val, *restrict x = L->x, *restrict wc = L->wc;
    const double *restrict wp = L->wp;
    double *restrict wo = L->wo, *restrict uo = L->uo, *restrict u0 = L->u0;
    const double c0 = L->c0, c1 = L->c1, c2 = L->c2;
    for (int64_t i = r0; i < r1; i++) {
        double acc[6] = {0, 0, 0, 0, 0, 0};
        for (int64_t t = rowptr[i]; t < rowptr[i + 1]; t++) {
            const double *blk = val + (size_t)t * B * B;
            const size_t o = (size_t)colind[t] * B;
            for (int r = 0; r < B; r++)
                for (int c = 0; c < B; c++)
                    acc[r] += blk[r * B + c] * (FLY ? d[o + c] * x[o + c] : x[o + c]);
        }
        for (int r = 0; r < B; r++) {
            const size_t q = (size_t)i * B + r;
            /* hk_mpk_step's order: c1 W[j-1] + c2 W[j-2] + c0 (A U)[j-1] */
            double w = c1 * wc[q];
            if (wp) w += c2 * wp[q];
            w += c0 * acc[r];
            wo[q] = w;
            if (uo) uo[q] = d[q] * w;
            if (FLY) u0[q] = d[q] * wc[q];
        }
    }
}

#define WAVE_RANGE_B(B)                                                                            \
    static void wave_range_##B(const hk_bmat *K, const wave_level *L, const double *d, int64_t r0, \
                               int64_t r1)                                                         \
    {                                                                                              \
        if (L->u0)                                                                                 \
            wave_range(K, L, d, r0, r1, B, 1);                                                     \
        else                                                                                       \
            wave_range(K, L, d, r0, r1, B, 0);                                                     \
    }
WAVE_RANGE_B(1)
WAVE_RANGE_B(2)
WAVE_RANGE_B(3)
WAVE_RANGE_B(4)
WAVE_RANGE_B(5)
WAVE_RANGE_B(6)

static void wave_apply(const cpu_mpk *P, int kk, const double *coef, const double *d,
                       const double *wprev, hk_vec *const *W, hk_vec *const *U)
{
    wave_level L[HK_MPK_MAXK];
    for (int j = 1; j <= kk; j++) {
        wave_level *l = &L[j - 1];
        l->x = d && j > 1 ? U[j - 1]->data : W[j - 1]->data;
        l->wc = W[j - 1]->data;
        l->wp = j > 1 ? W[j - 2]->data : wprev;
        l->wo = W[j]->data;
        l->uo = d ? U[j]->data : NULL;
        l->u0 = d && j == 1 ? U[0]->data : NULL;
        l->c0 = coef[3 * (j - 1)];
        l->c1 = coef[3 * (j - 1) + 1];
        l->c2 = coef[3 * (j - 1) + 2];
    }
    const int64_t nb = P->nb, C = P->block, h = P->shift;
    const int64_t stages = hk_mpk_wave_stages(nb, C, h, kk);
    void (*range)(const hk_bmat *, const wave_level *, const double *, int64_t, int64_t) =
        P->bs == 1   ? wave_range_1
        : P->bs == 2 ? wave_range_2
        : P->bs == 3 ? wave_range_3
        : P->bs == 4 ? wave_range_4
        : P->bs == 5 ? wave_range_5
                     : wave_range_6;
    /* one region for the whole pass; the barrier at the end of each stage orders the levels */
#pragma omp parallel if (nb * kk > 2048)
    {
        const int64_t nt = omp_get_num_threads(), me = omp_get_thread_num();
        for (int64_t t = 1; t <= stages; t++) {
            /* the levels of a stage are independent; the highest first, so that a stage that
             * read a level of its own would read stale values even on one thread */
            for (int j = kk; j >= 1; j--) {
                int64_t lo, hi;
                hk_mpk_wave_rows(nb, C, h, t, j, &lo, &hi);
                if (lo >= hi) continue;
                const int64_t m = hi - lo;
                range(P->K, &L[j - 1], d, lo + m * me / nt, lo + m * (me + 1) / nt);
            }
#pragma omp barrier
        }
    }
}

int hk_cpu_mpk_plan(const hk_bmat *K, int schedule, int64_t block, int k, double max_work,
                    void **plan, hk_mpk_info *info)
{
    int64_t nparts;
    HK_CALL(hk_mpk_plan_begin(K, schedule, &block, k, plan, info, &nparts));
    if (schedule == HK_MPK_WAVEFRONT) return wave_plan(K, block, k, plan, info);
    /* no on-chip memory a program manages: no staged plan (the ghost zones' pass already works
     * partition by partition out of a thread's cache) */
    if (schedule == HK_MPK_SHARED) return 0;
    const int64_t nb = K->nbrows;
    const int nt = omp_get_max_threads();
    int ierr = 0;
    cpu_mpk *P = NULL;
    int32_t *marks = NULL;
    int64_t *cnt = NULL;
    HK_TRY(mpk_new(K, k, HK_MPK_GHOST, &P));
    P->block = block;
    P->nparts = nparts;
    HK_TRY(hk_malloc((size_t)nt * (size_t)(nb > 0 ? nb : 1) * sizeof *marks, &marks));
    HK_TRY(hk_calloc((size_t)nparts * (k + 2) + 1, sizeof *cnt, &cnt));
    const double cap = max_work > 0 ? max_work * (double)k * (double)nb : 0;
    /* pass 1: level sizes of every partition (a sample first, so a hopeless size is refused
     * before the whole graph is walked) */
    int failed = 0;
    for (int pass = 0; pass < 2 && !failed; pass++) {
        const int64_t np = pass == 0 ? (nparts < 16 ? nparts : 16) : nparts;
        double work = 0;
#pragma omp parallel reduction(+ : work) reduction(| : failed)
        {
            const int t = omp_get_thread_num();
            int32_t *mark = hk_mpk_marks(marks, nb, t);
            int32_t *buf = NULL;
            int64_t bcap = 0;
#pragma omp for schedule(dynamic, 16)
            for (int64_t q = 0; q < np; q++) {
                const int64_t p = pass == 0 ? q * nparts / np : q;
                int64_t *ls = cnt + (size_t)p * (k + 2);
                if (failed || mpk_bfs(K, block, k, p, mark, &buf, &bcap, ls)) {
                    failed = 1;
                    continue;
                }
                work += (double)mpk_work(ls, k);
            }
            free(buf);
        }
        if (failed) {
            ierr = HK_ERR_MEMORY;
            goto fail;
        }
        if (pass == 0 && np > 0) work *= (double)nparts / (double)np;
        info->work = (int64_t)work;
        if (cap > 0 && work > (pass == 0 ? 2 * cap : cap)) goto fail; /* no plan, no error */
    }
    /* offsets */
    HK_TRY(hk_malloc(((size_t)nparts + 1) * sizeof *P->ext_ptr, &P->ext_ptr));
    HK_TRY(hk_malloc((size_t)nparts * (k + 2) * sizeof *P->lvl + 8, &P->lvl));
    P->ext_ptr[0] = 0;
    for (int64_t p = 0; p < nparts; p++) {
        const int64_t *ls = cnt + (size_t)p * (k + 2);
        for (int l = 0; l <= k + 1; l++)
            P->lvl[(size_t)p * (k + 2) + l] = P->ext_ptr[p] + ls[l];
        P->ext_ptr[p + 1] = P->ext_ptr[p] + ls[k + 1];
        if (ls[k + 1] > P->max_ext) P->max_ext = ls[k + 1];
    }
    const int64_t next = P->ext_ptr[nparts];
    info->ext_rows = next;
    info->max_ext = P->max_ext;
    HK_TRY(hk_malloc((size_t)(next > 0 ? next : 1) * sizeof *P->ext_row, &P->ext_row));
    HK_TRY(hk_malloc(((size_t)next + 1) * sizeof *P->ent_ptr, &P->ent_ptr));
    /* pass 2: the lists themselves, then the entry counts */
#pragma omp parallel reduction(| : failed)
    {
        const int t = omp_get_thread_num();
        int32_t *mark = hk_mpk_marks(marks, nb, t);
        int32_t *buf = NULL;
        int64_t bcap = 0, ls[HK_MPK_MAXK + 2];
#pragma omp for schedule(dynamic, 16)
        for (int64_t p = 0; p < nparts; p++) {
            if (failed || mpk_bfs(K, block, k, p, mark, &buf, &bcap, ls)) {
                failed = 1;
                continue;
            }
            memcpy(P->ext_row + P->ext_ptr[p], buf, (size_t)ls[k + 1] * sizeof *buf);
        }
        free(buf);
    }
    if (failed) {
        ierr = HK_ERR_MEMORY;
        goto fail;
    }
    P->ent_ptr[0] = 0;
    for (int64_t p = 0; p < nparts; p++)
        for (int64_t e = P->ext_ptr[p]; e < P->ext_ptr[p + 1]; e++) {
            const int inner = e < P->lvl[(size_t)p * (k + 2) + k];
            const int32_t g = P->ext_row[e];
            P->ent_ptr[e + 1] = P->ent_ptr[e] + (inner ? K->rowptr[g + 1] - K->rowptr[g] : 0);
        }
    HK_TRY(hk_malloc((size_t)(P->ent_ptr[next] > 0 ? P->ent_ptr[next] : 1) * sizeof *P->lcol,
                     &P->lcol));
    /* local columns: mark holds the partition, a second array the local index */
#pragma omp parallel
    {
        const int t = omp_get_thread_num();
        int32_t *mark = hk_mpk_marks(marks, nb, t);
#pragma omp for schedule(dynamic, 16)
        for (int64_t p = 0; p < nparts; p++) {
            const int64_t e0 = P->ext_ptr[p];
            /* mark[g] = g's place in this partition's list, reset before the next one */
            for (int64_t e = e0; e < P->ext_ptr[p + 1]; e++)
                mark[P->ext_row[e]] = (int32_t)(e - e0);
            for (int64_t e = e0; e < P->lvl[(size_t)p * (k + 2) + k]; e++) {
                const int32_t g = P->ext_row[e];
                int64_t o = P->ent_ptr[e];
                for (int64_t q = K->rowptr[g]; q < K->rowptr[g + 1]; q++)
                    P->lcol[o++] = (int32_t)mark[K->colind[q]];
            }
            for (int64_t e = e0; e < P->ext_ptr[p + 1]; e++)
                mark[P->ext_row[e]] = -1;
        }
    }
    free(marks);
    free(cnt);
    *plan = P;
    return 0;
fail:
    free(marks);
    free(cnt);
    mpk_destroy(P);
    return ierr;
}

void hk_cpu_mpk_free(void *plan)
{
    mpk_destroy(plan);
}

/* ---- the streamed plan ------------------------------------------------------------------
 * The partitions packed by solver/mpk_stream.c, each computed from its own packed arrays
 * alone (K is not kept): the reference for the CUDA copies of the same bytes. */

static int host_alloc(void **p, size_t bytes)
{
    return hk_malloc(bytes, p);
}

int hk_cpu_mpk_stream_plan(const hk_bcsr *K, int64_t block, size_t budget, int k, double max_work,
                           void **plan, hk_mpk_info *info)
{
    *plan = NULL;
    memset(info, 0, sizeof *info);
    int ierr = 0;
    cpu_mpk *P = NULL;
    HK_TRY(hk_calloc(1, sizeof *P, &P));
    HK_TRY(hk_calloc(1, sizeof *P->stream, &P->stream));
    HK_TRY(hk_mpk_stream_build(K, block, budget, k, max_work, host_alloc, free, P->stream));
    hk_mpk_stream_info(P->stream, info);
    if (!P->stream->pack) goto fail; /* refused by max_work: no plan, no error */
    P->bs = K->bs;
    P->k = k;
    P->nb = K->nbrows;
    P->schedule = HK_MPK_STREAM;
    P->block = P->stream->block;
    P->nparts = P->stream->nparts;
    P->max_ext = P->stream->max_rows;
    *plan = P;
    return 0;
fail:
    mpk_destroy(P);
    return ierr;
}

/* ---- a pass over partitions (ghost zones and streamed) ---------------------------------- */

/* One partition's listed rows: their global block rows, the level starts (level l from
 * lvl[l] - base) and the blocks of each computed row with columns local to the list, from a
 * local block CSR (streamed: rowptr, colind, val) or from K's rows (ghost zones: K, with the
 * local columns at lcol + ent_ptr[e]). */
typedef struct part_rows {
    const int32_t *rows;
    const int64_t *lvl;
    int64_t base;
    const int32_t *rowptr, *colind;
    const double *val;
    const hk_bmat *K;
    const int64_t *ent_ptr;
    const int32_t *lcol;
} part_rows;

static part_rows part_of(const cpu_mpk *P, int64_t p)
{
    part_rows v = {0};
    if (P->stream) {
        const hk_mpk_stream *S = P->stream;
        hk_mpk_part s;
        hk_mpk_stream_part(S, p, S->pack + S->off[p], &s);
        v.rows = s.rows;
        v.lvl = s.lvl;
        v.rowptr = s.rowptr;
        v.colind = s.colind;
        v.val = s.val;
        return v;
    }
    const int64_t e0 = P->ext_ptr[p];
    v.rows = P->ext_row + e0;
    v.lvl = P->lvl + (size_t)p * (P->k + 2);
    v.base = e0;
    v.K = P->K;
    v.ent_ptr = P->ent_ptr + e0;
    v.lcol = P->lcol;
    return v;
}

/* kk levels of one partition: gather W[0], wprev and U[0] = d .* W[0] of its listed rows, then
 * at step j the rows of levels <= kk-1-j, scattering its owned rows. mem: 3 vectors of its
 * rows (5 with d) of slot entries each. */
static void part_levels(const part_rows *v, int bs, int kk, const double *coef, const double *dv,
                        const double *wp0, hk_vec *const *W, hk_vec *const *U, double *mem,
                        size_t slot)
{
    const int b2 = bs * bs;
    double *wp = mem, *wc = mem + slot, *wn = mem + 2 * slot;
    double *uc = dv ? mem + 3 * slot : wc, *un = dv ? mem + 4 * slot : wn;
    const int64_t nown = v->lvl[1] - v->base, nload = v->lvl[kk + 1] - v->base;
    const double *w0 = W[0]->data;
    for (int64_t e = 0; e < nload; e++) {
        const int64_t g = v->rows[e];
        for (int r = 0; r < bs; r++) {
            const int64_t i = g * bs + r, q = e * bs + r;
            wc[q] = w0[i];
            wp[q] = wp0 ? wp0[i] : 0.0;
            if (dv) {
                uc[q] = dv[i] * w0[i];
                if (e < nown) ((double *)U[0]->data)[i] = uc[q];
            }
        }
    }
    for (int j = 0; j < kk; j++) {
        const hk_mpk_level L = hk_mpk_level_at(coef, j, dv != NULL, wc, wp, wn, un, W[j + 1]->data,
                                               dv ? U[j + 1]->data : NULL);
        const int64_t nrow = v->lvl[kk - j] - v->base; /* rows of levels <= kk-1-j */
        for (int64_t e = 0; e < nrow; e++) {
            const int64_t g = v->rows[e];
            const int32_t *lc;
            const double *a;
            int64_t len;
            if (v->rowptr) {
                lc = v->colind + v->rowptr[e];
                a = v->val + (size_t)v->rowptr[e] * b2;
                len = v->rowptr[e + 1] - v->rowptr[e];
            } else {
                lc = v->lcol + v->ent_ptr[e];
                a = v->K->val + (size_t)v->K->rowptr[g] * b2;
                len = v->K->rowptr[g + 1] - v->K->rowptr[g];
            }
            double acc[6] = {0, 0, 0, 0, 0, 0};
            for (int64_t t = 0; t < len; t++) {
                const double *x = uc + (size_t)lc[t] * bs;
                const double *blk = a + (size_t)t * b2;
                for (int r = 0; r < bs; r++)
                    for (int c = 0; c < bs; c++)
                        acc[r] += blk[r * bs + c] * x[c];
            }
            for (int r = 0; r < bs; r++) {
                const int64_t q = e * bs + r, i = g * bs + r;
                hk_mpk_step(&L, acc[r], dv ? dv[i] : 0.0, q, i, e < nown);
            }
        }
        hk_mpk_rotate(&wp, &wc, &wn, &uc, &un, dv != NULL);
    }
}

/* A pass of the ghost-zone or streamed plan: each thread takes whole partitions (cache
 * blocking), their work vectors its own. */
static int parts_apply(const cpu_mpk *P, int kk, const double *coef, const double *dv,
                       const double *wp0, hk_vec *const *W, hk_vec *const *U)
{
    const int nsl = dv ? 5 : 3;
    const size_t slot = (size_t)P->max_ext * P->bs;
    int failed = 0;
#pragma omp parallel reduction(| : failed)
    {
        double *mem = malloc(slot * nsl * sizeof *mem + 8);
        if (!mem) failed = 1;
#pragma omp for schedule(dynamic, 1)
        for (int64_t p = 0; p < P->nparts; p++) {
            if (!mem) continue;
            const part_rows v = part_of(P, p);
            part_levels(&v, P->bs, kk, coef, dv, wp0, W, U, mem, slot);
        }
        free(mem);
    }
    const int st = P->schedule == HK_MPK_STREAM;
    HK_CHECK(!failed, HK_ERR_MEMORY,
             "matrix powers%s: out of host memory for %s work vectors (%zu bytes a thread); use a "
             "smaller mpk.block",
             st ? " (streamed)" : "", st ? "a partition's" : "the partitions'",
             slot * nsl * sizeof(double));
    return 0;
}

#define CHECK_VEC(v, what)                                                                         \
    HK_CHECK((v) && (v)->prec == HK_FP64 && (v)->n == n, HK_ERR_ARG,                               \
             "matrix powers: %s must be an fp64 vector of the matrix's %lld rows", what,           \
             (long long)n)

int hk_cpu_mpk_apply(void *plan, int kk, const double *coef, const hk_vec *d, const hk_vec *wprev,
                     hk_vec *const *W, hk_vec *const *U)
{
    cpu_mpk *P = plan;
    HK_CHECK(P, HK_ERR_ARG, "matrix powers: no plan");
    HK_CHECK(kk >= 1 && kk <= P->k, HK_ERR_ARG,
             "matrix powers: %d levels asked of a plan made for %d", kk, P->k);
    const int bs = P->bs;
    const int64_t n = P->nb * bs;
    for (int j = 0; j <= kk; j++) {
        CHECK_VEC(W[j], "every W");
        if (d) CHECK_VEC(U[j], "every U");
    }
    if (d) CHECK_VEC(d, "d");
    if (wprev) CHECK_VEC(wprev, "wprev");
    const double *dv = d ? d->data : NULL, *wp0 = wprev ? wprev->data : NULL;
    if (P->schedule == HK_MPK_WAVEFRONT) {
        wave_apply(P, kk, coef, dv, wp0, W, U);
        return 0;
    }
    return parts_apply(P, kk, coef, dv, wp0, W, U);
}

/* The pairs (a, b) of one Gram call over V = X (then Y when distinct), into out[q]. */
typedef struct gram_pairs {
    int np;
    unsigned char a[3 * HK_GRAM_MAX * HK_GRAM_MAX], b[3 * HK_GRAM_MAX * HK_GRAM_MAX];
} gram_pairs;

/* Pair list shared with the CUDA version: X^T Y (upper triangle when Y is X) then X^T X. */
int hk_gram_pairs(int m, int distinct, int want_gx, unsigned char *a, unsigned char *b)
{
    int np = 0;
    if (!distinct) {
        for (int i = 0; i < m; i++)
            for (int j = i; j < m; j++) {
                a[np] = (unsigned char)i;
                b[np++] = (unsigned char)j;
            }
        return np;
    }
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            a[np] = (unsigned char)i;
            b[np++] = (unsigned char)(m + j);
        }
    if (want_gx)
        for (int i = 0; i < m; i++)
            for (int j = i; j < m; j++) {
                a[np] = (unsigned char)i;
                b[np++] = (unsigned char)j;
            }
    return np;
}

void hk_gram_scatter(int m, int distinct, const double *s, double *G, double *GX)
{
    int q = 0;
    if (!distinct) {
        for (int i = 0; i < m; i++)
            for (int j = i; j < m; j++, q++) {
                G[i * m + j] = G[j * m + i] = s[q];
                if (GX) GX[i * m + j] = GX[j * m + i] = s[q];
            }
        return;
    }
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            G[i * m + j] = s[q++];
    if (GX)
        for (int i = 0; i < m; i++)
            for (int j = i; j < m; j++, q++)
                GX[i * m + j] = GX[j * m + i] = s[q];
}

int hk_cpu_vec_gram(int m, hk_vec *const *X, hk_vec *const *Y, double *G, double *GX)
{
    HK_CHECK(m >= 1 && m <= HK_GRAM_MAX, HK_ERR_ARG, "vec_gram: %d vectors; at most %d", m,
             HK_GRAM_MAX);
    const int64_t n = X[0]->n;
    const int distinct = Y && Y != X;
    const double *v[2 * HK_GRAM_MAX];
    for (int i = 0; i < m; i++) {
        HK_CHECK(X[i]->prec == HK_FP64 && X[i]->n == n &&
                     (!distinct || (Y[i]->prec == HK_FP64 && Y[i]->n == n)),
                 HK_ERR_ARG, "vec_gram: the vectors must be fp64 of one length");
        v[i] = X[i]->data;
        v[m + i] = distinct ? Y[i]->data : X[i]->data;
    }
    gram_pairs pr;
    pr.np = hk_gram_pairs(m, distinct, GX != NULL, pr.a, pr.b);
    const int np = pr.np;
    double *part = NULL, *sum = NULL;
    HK_CALL(hk_malloc((size_t)HK_CPU_CHUNKS * np * sizeof *part, &part));
    int ierr = hk_malloc((size_t)np * sizeof *sum, &sum);
    if (ierr) {
        free(part);
        return ierr;
    }
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        const int64_t i0 = hk_cpu_chunk_begin(n, c), i1 = hk_cpu_chunk_begin(n, c + 1);
        for (int q = 0; q < np; q++) {
            const double *x = v[pr.a[q]], *y = v[pr.b[q]];
            double s = 0;
            for (int64_t i = i0; i < i1; i++)
                s += x[i] * y[i];
            part[(size_t)c * np + q] = s;
        }
    }
    for (int q = 0; q < np; q++) {
        double s = 0;
        for (int c = 0; c < HK_CPU_CHUNKS; c++)
            s += part[(size_t)c * np + q];
        sum[q] = s;
    }
    hk_gram_scatter(m, distinct, sum, G, GX);
    free(part);
    free(sum);
    return 0;
}
