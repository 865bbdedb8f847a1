/* CPU versions of the Krylov methods' fused ops (classical and pipelined CG, BiCGStab and GMRES);
 * semantics in hk_impl.h. On the CPU "fused" means one pass over the vectors per op: the
 * element-wise work and the dot products of a chunk done together while the chunk is in cache, and
 * an SpMV fused with its dot products row range by row range (fp64 CSR and BSR; other formats: the
 * SpMV, then one pass for all the dot products). Reductions are the backend's deterministic
 * ones: fixed chunks summed in HK_CPU_LANES lanes, then the chunk sums in order (cpu_impl.h);
 * an SpMV's chunks are whole block rows, hk_cpu_chunk_begin of the block-row count. */
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "cpu_impl.h"

#define FP64_ONLY(v)                                                                               \
    HK_CHECK((v)->prec == HK_FP64, HK_ERR_ARG,                                                     \
             "cpu backend: the pipelined Krylov fused ops run their vectors in fp64")

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* The SpMV y = A x, its chunk c computed inside the chunk loop when the format has a
 * row-range kernel (fused), else before the loop (SPMV_BEFORE). */
#define SPMV_BEFORE(A, x, y, fused)                                                                \
    do {                                                                                           \
        if (!(fused)) HK_CALL(hk_cpu_mat_spmv(A, x, y));                                           \
    } while (0)

static int spmv_args(hk_mat *A, const hk_vec *x, hk_vec *y)
{
    FP64_ONLY(x);
    FP64_ONLY(y);
    HK_CHECK(A->bdata, HK_ERR_ARG, "cpu SpMV: matrix was not built");
    HK_CHECK(A->prec == HK_FP64, HK_ERR_ARG,
             "cpu backend: the fused SpMV ops need an fp64 matrix (format.precision=fp64)");
    HK_CHECK(x->n == A->ncols && y->n == A->nrows && x->n == y->n, HK_ERR_ARG,
             "cpu fused SpMV: sizes differ (matrix %lld x %lld, x %lld, y %lld)",
             (long long)A->nrows, (long long)A->ncols, (long long)x->n, (long long)y->n);
    HK_CHECK(x->data != y->data, HK_ERR_ARG, "cpu SpMV: x and y must be different vectors");
    return 0;
}

/* ---- pipelined CG ----------------------------------------------------------------------- */

/* One chunk of the pipecg update; D: a Jacobi diagonal is given (a literal at each call). */
ALWAYS_INLINE void pipecg_chunk(int64_t i0, int64_t i1, double alpha, double beta,
                                double *restrict xv, double *restrict rv, double *restrict pv,
                                const double *restrict apv, const double *restrict dv, double *srr,
                                double *srz, const int D)
{
    double rr[HK_CPU_LANES] = {0}, rz[HK_CPU_LANES] = {0};
    HK_CPU_LANE_FOR(i0, i1, i, l, {
        const double pi = pv[i];
        xv[i] += alpha * pi;
        const double ri = rv[i] - alpha * apv[i];
        rv[i] = ri;
        const double zi = D ? dv[i] * ri : ri;
        pv[i] = zi + beta * pi;
        rr[l] += ri * ri;
        rz[l] += ri * zi;
    });
    *srr = hk_cpu_lanes_sum(rr);
    *srz = hk_cpu_lanes_sum(rz);
}

/* alpha and beta of the next pipelined-CG step from S: beta as the new r.z over the old one
 * expanded with z.Ap (pipecg_update), or as the paper's Algorithm 2 writes it, which assumes
 * z.Ap = p.Ap (pipecg_paper_step). */
static inline void pipecg_coefficients(const double *S, int paper, double *alpha, double *beta)
{
    const double a = S[HK_S_RZ] / S[HK_S_PAP];
    *alpha = a;
    *beta = paper ? a * a * S[HK_S_APZ] / S[HK_S_RZ] - 1.0
                  : (S[HK_S_RZ] - 2.0 * a * S[HK_S_ZAP] + a * a * S[HK_S_APZ]) / S[HK_S_RZ];
}

static int pipecg_update_with(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *Ap, const hk_vec *dinv,
                              double *S, int paper)
{
    HK_CHECK(x->prec == HK_FP64 && r->prec == HK_FP64 && p->prec == HK_FP64 && Ap->prec == HK_FP64,
             HK_ERR_ARG, "pipelined CG runs its vectors in fp64");
    const int64_t n = x->n;
    double alpha, beta;
    pipecg_coefficients(S, paper, &alpha, &beta);
    double *xv = x->data, *rv = r->data, *pv = p->data;
    const double *apv = Ap->data, *dv = dinv ? dinv->data : NULL;
    double prr[HK_CPU_CHUNKS], prz[HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        const int64_t i0 = hk_cpu_chunk_begin(n, c), i1 = hk_cpu_chunk_begin(n, c + 1);
        if (dv)
            pipecg_chunk(i0, i1, alpha, beta, xv, rv, pv, apv, dv, &prr[c], &prz[c], 1);
        else
            pipecg_chunk(i0, i1, alpha, beta, xv, rv, pv, apv, NULL, &prr[c], &prz[c], 0);
    }
    S[HK_S_RR] = hk_cpu_chunk_sum(prr);
    S[HK_S_RZ] = hk_cpu_chunk_sum(prz);
    S[HK_S_ALPHA] = alpha;
    S[HK_S_BETA] = beta;
    return 0;
}

int hk_cpu_pipecg_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *Ap, const hk_vec *dinv,
                         double *S)
{
    return pipecg_update_with(x, r, p, Ap, dinv, S, 0);
}

/* The three dot products of spmv_dot2 over one chunk; D: dinv given, R: r given. */
ALWAYS_INLINE void dot2_chunk(int64_t i0, int64_t i1, const double *restrict pv,
                              const double *restrict av, const double *restrict dv,
                              const double *restrict rv, double *s1, double *s2, double *s3,
                              const int D, const int R)
{
    double a[HK_CPU_LANES] = {0}, b[HK_CPU_LANES] = {0}, c[HK_CPU_LANES] = {0};
    HK_CPU_LANE_FOR(i0, i1, i, l, {
        const double ai = av[i], dai = D ? dv[i] * ai : ai, pa = pv[i] * ai;
        a[l] += pa;
        b[l] += ai * dai;
        c[l] += R ? rv[i] * dai : pa;
    });
    *s1 = hk_cpu_lanes_sum(a);
    *s2 = hk_cpu_lanes_sum(b);
    *s3 = hk_cpu_lanes_sum(c);
}

/* sum_l W[j].y over [i0, i1) for j < K (K a literal at each call). */
ALWAYS_INLINE void mdot_chunk(int64_t i0, int64_t i1, const double *restrict yv,
                              const double *const *wv, double *out, const int K)
{
    double s[4][HK_CPU_LANES] = {{0}};
    const double *w0 = wv[0], *w1 = K > 1 ? wv[1] : NULL, *w2 = K > 2 ? wv[2] : NULL,
                 *w3 = K > 3 ? wv[3] : NULL;
    HK_CPU_LANE_FOR(i0, i1, i, l, {
        const double yi = yv[i];
        s[0][l] += w0[i] * yi;
        if (K > 1) s[1][l] += w1[i] * yi;
        if (K > 2) s[2][l] += w2[i] * yi;
        if (K > 3) s[3][l] += w3[i] * yi;
    });
    for (int j = 0; j < K; j++)
        out[j * HK_CPU_CHUNKS] = hk_cpu_lanes_sum(s[j]);
}

/* cgcg's three sums over one chunk of w = A u: r.u, w.u, r.r. */
ALWAYS_INLINE void cgcg_dots_chunk(int64_t i0, int64_t i1, const double *restrict uv,
                                   const double *restrict wv, const double *restrict rv, double *s1,
                                   double *s2, double *s3)
{
    double a[HK_CPU_LANES] = {0}, b[HK_CPU_LANES] = {0}, c[HK_CPU_LANES] = {0};
    HK_CPU_LANE_FOR(i0, i1, i, l, {
        const double ui = uv[i], ri = rv[i];
        a[l] += ri * ui;
        b[l] += wv[i] * ui;
        c[l] += ri * ri;
    });
    *s1 = hk_cpu_lanes_sum(a);
    *s2 = hk_cpu_lanes_sum(b);
    *s3 = hk_cpu_lanes_sum(c);
}

/* chunk_dots.k of spmv_cgcg's sums */
#define CHUNK_DOTS_CGCG (-1)

/* The chunk sums taken right after a chunk's SpMV rows y = A p: with k = 1..4, W[j].y into
 * s[0][j * HK_CPU_CHUNKS + c] for j < k (cg: k = 1, W[0] = p); with k = 0, spmv_dot2's three
 * (PAP, APZ, ZAP into s[0..2][c]; dinv dv and r rv may be NULL); with CHUNK_DOTS_CGCG, r.p,
 * y.p and r.r (r in rv) into s[0..2][c]. */
typedef struct chunk_dots {
    int k;
    const double *wv[4];
    const double *dv, *rv;
    double *s[3];
} chunk_dots;

static inline void chunk_dots_of(const chunk_dots *d, const double *pv, const double *yv, int c,
                                 int64_t i0, int64_t i1)
{
    const int three = d->k <= 0;
    double *s1 = &d->s[0][c], *s2 = three ? &d->s[1][c] : NULL, *s3 = three ? &d->s[2][c] : NULL;
    switch (d->k) { /* K a literal in each call */
    case CHUNK_DOTS_CGCG:
        cgcg_dots_chunk(i0, i1, pv, yv, d->rv, s1, s2, s3);
        return;
    case 1:
        mdot_chunk(i0, i1, yv, d->wv, s1, 1);
        return;
    case 2:
        mdot_chunk(i0, i1, yv, d->wv, s1, 2);
        return;
    case 3:
        mdot_chunk(i0, i1, yv, d->wv, s1, 3);
        return;
    case 4:
        mdot_chunk(i0, i1, yv, d->wv, s1, 4);
        return;
    default:
        break;
    }
    if (d->dv && d->rv)
        dot2_chunk(i0, i1, pv, yv, d->dv, d->rv, s1, s2, s3, 1, 1);
    else if (d->dv)
        dot2_chunk(i0, i1, pv, yv, d->dv, NULL, s1, s2, s3, 1, 0);
    else if (d->rv)
        dot2_chunk(i0, i1, pv, yv, NULL, d->rv, s1, s2, s3, 0, 1);
    else
        dot2_chunk(i0, i1, pv, yv, NULL, NULL, s1, s2, s3, 0, 0);
}

/* SpMV rows and chunk sums of chunks [g0, g1) in groups of G chunks: each group's rows in one
 * sweep (a dot product after every chunk broke the matrix streams: +5 % over the plain SpMV on
 * 81k DOFs, one thread), then each chunk's sums while the group is in cache (each chunk its
 * own, so neither grouping nor order changes them). rows 0: y was computed before (a format
 * without a row-range kernel), only the sums. */
static void spmv_sweep(const hk_mat *A, int64_t n, const double *pv, double *yv,
                       const chunk_dots *d, int g0, int g1, int G, int rows)
{
    for (int g = g0; g < g1; g += G) {
        const int g1_ = g + G < g1 ? g + G : g1;
        int64_t b0, b1, e1, i0, i1;
        if (rows) {
            hk_cpu_group_rows(A, n, g, g1_, &b0, &e1);
            hk_cpu_spmv_rows(A, pv, yv, b0, e1);
        }
        for (int c = g; c < g1_; c++) {
            hk_cpu_spmv_chunk(A, n, c, &b0, &b1, &i0, &i1);
            chunk_dots_of(d, pv, yv, c, i0, i1);
        }
    }
}

/* spmv_dot2 and spmv_mdot: each thread sweeps its own chunks. */
static void spmv_sweep_all(const hk_mat *A, int64_t n, const double *pv, double *yv,
                           const chunk_dots *d, int rows)
{
    const int G = hk_cpu_group_chunks(n);
#pragma omp parallel
    {
        const hk_cpu_row_part q = hk_cpu_row_part_of(A, n, omp_get_thread_num(), omp_get_num_threads());
        spmv_sweep(A, n, pv, yv, d, q.c0, q.c1, G, rows);
    }
}

int hk_cpu_spmv_dot2(hk_mat *A, const hk_vec *p, hk_vec *Ap, const hk_vec *dinv, const hk_vec *r,
                     double *S)
{
    HK_CALL(spmv_args(A, p, Ap));
    const int64_t n = p->n;
    HK_CHECK(!r || (r->prec == HK_FP64 && r->n == n), HK_ERR_ARG,
             "spmv_dot2: r must be an fp64 vector of p's length (or NULL)");
    HK_CHECK(!dinv || (dinv->prec == HK_FP64 && dinv->n == n), HK_ERR_ARG,
             "spmv_dot2: dinv must be an fp64 vector of p's length (or NULL)");
    const int fused = hk_cpu_spmv_has_rows(A);
    SPMV_BEFORE(A, p, Ap, fused);
    const double *pv = p->data, *dv = dinv ? dinv->data : NULL, *rv = r ? r->data : NULL;
    double *av = Ap->data;
    double ppap[HK_CPU_CHUNKS], papz[HK_CPU_CHUNKS], pzap[HK_CPU_CHUNKS];
    const chunk_dots d = {0, {NULL}, dv, rv, {ppap, papz, pzap}};
    spmv_sweep_all(A, n, pv, av, &d, fused);
    S[HK_S_PAP] = hk_cpu_chunk_sum(ppap);
    S[HK_S_APZ] = hk_cpu_chunk_sum(papz);
    S[HK_S_ZAP] = hk_cpu_chunk_sum(pzap);
    return 0;
}

/* ---- pipelined BiCGStab ----------------------------------------------------------------- */

int hk_cpu_spmv_mdot(hk_mat *A, const hk_vec *x, hk_vec *y, int k, const hk_vec *const *W,
                     double *S, const int *slot)
{
    HK_CHECK(k >= 0 && k <= 4, HK_ERR_ARG, "spmv_mdot: at most 4 fused dot products (got %d)", k);
    HK_CALL(spmv_args(A, x, y));
    for (int j = 0; j < k; j++) {
        FP64_ONLY(W[j]);
        HK_CHECK(W[j]->n == y->n, HK_ERR_ARG, "spmv_mdot: W[%d] differs in length from y", j);
    }
    if (k == 0) return hk_cpu_mat_spmv(A, x, y);
    const int fused = hk_cpu_spmv_has_rows(A);
    SPMV_BEFORE(A, x, y, fused);
    double part[4][HK_CPU_CHUNKS];
    chunk_dots d = {k, {NULL}, NULL, NULL, {&part[0][0], NULL, NULL}};
    for (int j = 0; j < k; j++)
        d.wv[j] = W[j]->data;
    spmv_sweep_all(A, y->n, x->data, y->data, &d, fused);
    for (int j = 0; j < k; j++)
        S[slot[j]] = hk_cpu_chunk_sum(part[j]);
    return 0;
}

int hk_cpu_pipebicg_s(hk_vec *s, const hk_vec *r, const hk_vec *Ap, double *S)
{
    FP64_ONLY(s);
    FP64_ONLY(r);
    FP64_ONLY(Ap);
    const int64_t n = s->n;
    const double alpha = S[HK_S_BI_RR0] / S[HK_S_BI_APR0];
    double *restrict sv = s->data;
    const double *restrict rv = r->data, *restrict av = Ap->data;
    double part[HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        double ss[HK_CPU_LANES] = {0};
        HK_CPU_LANE_FOR(hk_cpu_chunk_begin(n, c), hk_cpu_chunk_begin(n, c + 1), i, l, {
            const double si = rv[i] - alpha * av[i];
            sv[i] = si;
            ss[l] += si * si;
        });
        part[c] = hk_cpu_lanes_sum(ss);
    }
    S[HK_S_BI_SS] = hk_cpu_chunk_sum(part);
    S[HK_S_BI_ALPHA] = alpha;
    return 0;
}

int hk_cpu_pipebicg_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *phat, const hk_vec *s,
                           const hk_vec *shat, const hk_vec *As, const hk_vec *Ap,
                           const hk_vec *r0s, double *S)
{
    FP64_ONLY(x);
    FP64_ONLY(r);
    FP64_ONLY(p);
    FP64_ONLY(phat);
    FP64_ONLY(s);
    FP64_ONLY(shat);
    FP64_ONLY(As);
    FP64_ONLY(Ap);
    FP64_ONLY(r0s);
    const int64_t n = x->n;
    const double alpha = S[HK_S_BI_ALPHA];
    const double omega = S[HK_S_BI_ASAS] != 0.0 ? S[HK_S_BI_ASS] / S[HK_S_BI_ASAS] : 0.0;
    const double beta = -S[HK_S_BI_ASR0] / S[HK_S_BI_APR0];
    /* phat may be p and shat may be s (no preconditioner): only x, r, p are written, and each
     * element is read before it is written, so no restrict on the pairs that may alias */
    double *restrict xv = x->data, *restrict rv = r->data, *pv = p->data;
    const double *phv = phat->data, *sv = s->data, *shv = shat->data;
    const double *restrict asv = As->data, *restrict apv = Ap->data, *restrict r0v = r0s->data;
    double prr0[HK_CPU_CHUNKS], prr[HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        double srr0[HK_CPU_LANES] = {0}, srr[HK_CPU_LANES] = {0};
        HK_CPU_LANE_FOR(hk_cpu_chunk_begin(n, c), hk_cpu_chunk_begin(n, c + 1), i, l, {
            xv[i] += alpha * phv[i] + omega * shv[i];
            const double ri = sv[i] - omega * asv[i];
            rv[i] = ri;
            pv[i] = ri + beta * (pv[i] - omega * apv[i]);
            srr0[l] += ri * r0v[i];
            srr[l] += ri * ri;
        });
        prr0[c] = hk_cpu_lanes_sum(srr0);
        prr[c] = hk_cpu_lanes_sum(srr);
    }
    S[HK_S_BI_RR0] = hk_cpu_chunk_sum(prr0);
    S[HK_S_BI_RR] = hk_cpu_chunk_sum(prr);
    S[HK_S_BI_OMEGA] = omega;
    S[HK_S_BI_BETA] = beta;
    return 0;
}

/* ---- pipelined GMRES -------------------------------------------------------------------- */

int hk_cpu_vec_mdot_s(int k, hk_vec *const *X, const hk_vec *y, double *S)
{
    FP64_ONLY(y);
    for (int j = 0; j < k; j++)
        FP64_ONLY(X[j]);
    if (k <= 0) return 0;
    const int64_t n = y->n;
    const double *yv = y->data;
    double *part;
    HK_CALL(hk_malloc((size_t)k * HK_CPU_CHUNKS * sizeof *part, &part));
    /* one pass: chunk by chunk, every basis vector against the chunk of y while it is in L1 */
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        const int64_t i0 = hk_cpu_chunk_begin(n, c), i1 = hk_cpu_chunk_begin(n, c + 1);
        int j = 0;
        for (; j + 4 <= k; j += 4) {
            const double *wv[4] = {X[j]->data, X[j + 1]->data, X[j + 2]->data, X[j + 3]->data};
            mdot_chunk(i0, i1, yv, wv, &part[(size_t)j * HK_CPU_CHUNKS + c], 4);
        }
        for (; j < k; j++) {
            const double *wv[1] = {X[j]->data};
            mdot_chunk(i0, i1, yv, wv, &part[(size_t)j * HK_CPU_CHUNKS + c], 1);
        }
    }
    for (int j = 0; j < k; j++)
        S[j] = hk_cpu_chunk_sum(part + (size_t)j * HK_CPU_CHUNKS);
    free(part);
    return 0;
}

int hk_cpu_vec_maxpy_s_nrm(hk_vec *y, int k, const double *S, hk_vec *const *X, double *nrm2)
{
    FP64_ONLY(y);
    for (int j = 0; j < k; j++)
        FP64_ONLY(X[j]);
    const int64_t n = y->n;
    double *restrict yv = y->data;
    double part[HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        const int64_t i0 = hk_cpu_chunk_begin(n, c), i1 = hk_cpu_chunk_begin(n, c + 1);
        /* y_i -= S[j] X[j]_i in order j = 0, 1, ... as before, one vector at a time over the
         * chunk (y's chunk stays in L1), then the norm over the chunk */
        for (int j = 0; j < k; j++) {
            const double sj = S[j];
            const double *restrict xv = X[j]->data;
            for (int64_t i = i0; i < i1; i++)
                yv[i] -= sj * xv[i];
        }
        double s[HK_CPU_LANES] = {0};
        HK_CPU_LANE_FOR(i0, i1, i, l, s[l] += yv[i] * yv[i];);
        part[c] = hk_cpu_lanes_sum(s);
    }
    *nrm2 = hk_cpu_chunk_sum(part);
    return 0;
}

int hk_cpu_vec_scale_s_dot(hk_vec *y, const double *nrm2, const hk_vec *w, double *d)
{
    FP64_ONLY(y);
    if (w) FP64_ONLY(w);
    const int64_t n = y->n;
    const double scale = *nrm2 > 0 ? 1.0 / sqrt(*nrm2) : 1.0;
    double *restrict yv = y->data;
    const double *restrict wv = w ? w->data : NULL;
    double part[HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        const int64_t i0 = hk_cpu_chunk_begin(n, c), i1 = hk_cpu_chunk_begin(n, c + 1);
        double s[HK_CPU_LANES] = {0};
        if (wv) {
            HK_CPU_LANE_FOR(i0, i1, i, l, {
                const double yi = yv[i] * scale;
                yv[i] = yi;
                s[l] += wv[i] * yi;
            });
        } else {
            for (int64_t i = i0; i < i1; i++)
                yv[i] *= scale;
        }
        part[c] = hk_cpu_lanes_sum(s);
    }
    if (w) *d = hk_cpu_chunk_sum(part);
    return 0;
}

/* ---- classical CG ----------------------------------------------------------------------- */

/* Ap = A p and the chunk sums d for the thread's chunks, right after the thread wrote its own
 * entries of p and set ready[t]: first the longest run of its chunks whose rows read only its
 * own entries, then, once every thread whose entries the other rows read has set its flag, the
 * rest. No barrier: a thread waits only for the threads its rows reach, and only after its
 * own interior rows, by when they have long finished their (shorter) update of p. Without the
 * column reach of the chunks (has_reach unset) the wait covers every thread; ready NULL: the
 * team has passed a barrier after writing p. */
static void spmv_part(const hk_mat *A, int64_t n, const hk_cpu_row_part *q, const double *pv, double *av,
                      const chunk_dots *d, atomic_int *ready)
{
    const hk_cpu_mat *m = A->bdata;
    const int bs = m->F.bs;
    const int G = hk_cpu_group_chunks(n);
    const int64_t P0 = q->e0 / bs, P1 = q->e1 / bs; /* own (block) columns */
    int ca = q->c0, cb = q->c0;                     /* the longest interior run */
    int64_t lo = INT64_MAX, hi = -1;                /* columns read by the other chunks */
    if (m->has_reach) {
        for (int c = q->c0; c < q->c1;) {
            if (m->reach_lo[c] >= P0 && m->reach_hi[c] < P1) {
                int e = c;
                while (e < q->c1 && m->reach_lo[e] >= P0 && m->reach_hi[e] < P1)
                    e++;
                if (e - c > cb - ca) ca = c, cb = e;
                c = e;
            } else {
                c++;
            }
        }
        for (int c = q->c0; c < q->c1; c++)
            if (c < ca || c >= cb) {
                lo = m->reach_lo[c] < lo ? m->reach_lo[c] : lo;
                hi = m->reach_hi[c] > hi ? m->reach_hi[c] : hi;
            }
    } else {
        lo = 0;
        hi = INT64_MAX;
    }
    spmv_sweep(A, n, pv, av, d, ca, cb, G, 1);
    if (ready && hi >= lo)
        for (int u = 0; u < q->nt; u++) {
            const hk_cpu_row_part o = hk_cpu_row_part_of(A, n, u, q->nt);
            if (u == q->t || o.e1 / bs <= lo || o.e0 / bs > hi) continue;
            while (!atomic_load_explicit(&ready[u], memory_order_acquire))
                sched_yield();
        }
    spmv_sweep(A, n, pv, av, d, q->c0, ca, G, 1);
    spmv_sweep(A, n, pv, av, d, cb, q->c1, G, 1);
}

/* x += alpha p (X: x given; alpha p + x, vec_axpby's arithmetic), then p = z + beta p over
 * [i0, i1) (vec_axpby's; beta = 0: vec_copy's, the old p not read). */
ALWAYS_INLINE void cg_direction_chunk(int64_t i0, int64_t i1, const double *restrict zv,
                                      double beta, double *restrict pv, double *restrict xv,
                                      double alpha, const int X)
{
    if (X)
        for (int64_t i = i0; i < i1; i++) {
            const double pi = pv[i];
            xv[i] = alpha * pi + xv[i];
            pv[i] = zv[i] + beta * pi;
        }
    else if (beta == 0.0)
        for (int64_t i = i0; i < i1; i++)
            pv[i] = zv[i];
    else
        for (int64_t i = i0; i < i1; i++)
            pv[i] = zv[i] + beta * pv[i];
}

/* The flags of the threads that have written their part of p (at most one per chunk; a team
 * larger than that synchronises with a barrier instead). */
#define SPMV_READY_INIT(ready)                                                                     \
    for (int u_ = 0; u_ < HK_CPU_CHUNKS; u_++)                                                     \
    atomic_init(&(ready)[u_], 0)

/* Inside the region, once the thread has written its entries of p: its flag, then its SpMV
 * rows and chunk sums d. */
static inline void spmv_after(const hk_mat *A, int64_t n, const hk_cpu_row_part *q, const double *pv,
                              double *av, const chunk_dots *d, atomic_int *ready)
{
    if (q->nt > HK_CPU_CHUNKS) {
#pragma omp barrier
        ready = NULL;
    } else {
        atomic_store_explicit(&ready[q->t], 1, memory_order_release);
    }
    if (q->c1 > q->c0) spmv_part(A, n, q, pv, av, d, ready);
}

int hk_cpu_cg_spmv(hk_mat *A, const hk_vec *z, double beta, hk_vec *p, hk_vec *Ap, double *pap)
{
    HK_CHECK(!z || (z->prec == p->prec && z->n == p->n && z->data != p->data), HK_ERR_ARG,
             "cg_spmv: z must be a vector of p's precision and length, other than p");
    if (!hk_cpu_spmv_has_rows(A) || p->prec != HK_FP64 || Ap->prec != HK_FP64) {
        /* no row-range kernel (fp32, ELL/SELL/PCSR): the direction, the SpMV, then the dot */
        const hk_backend_ops *be = &hk_backend_cpu;
        if (z) HK_CALL(beta == 0.0 ? be->vec_copy(p, z) : be->vec_axpby(p, 1.0, z, beta));
        HK_CALL(hk_mat_spmv(A, p, Ap));
        return be->vec_dot(p, Ap, pap);
    }
    HK_CALL(spmv_args(A, p, Ap));
    const int64_t n = p->n;
    const double *zv = z ? z->data : NULL;
    double *pv = p->data, *av = Ap->data;
    double part[HK_CPU_CHUNKS];
    const chunk_dots d = {1, {pv}, NULL, NULL, {part, NULL, NULL}};
    atomic_int ready[HK_CPU_CHUNKS];
    SPMV_READY_INIT(ready);
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), t = omp_get_thread_num();
        const hk_cpu_row_part q = hk_cpu_row_part_of(A, n, t, nt);
        if (zv) cg_direction_chunk(q.e0, q.e1, zv, beta, pv, NULL, 0.0, 0);
        spmv_after(A, n, &q, pv, av, &d, ready);
    }
    *pap = hk_cpu_chunk_sum(part);
    return 0;
}

/* One chunk of cg_update for vectors of type T and a diagonal of type D; P: dinv is given, X: x
 * is updated here (literals at each call). The arithmetic is vec_axpby's, hk_pc_apply's and
 * vec_dot's, element by element and lane by lane: the composed ops' digits (unless a compiler
 * contracts one side into multiply-adds and not the other). */
#define CG_UPDATE_CHUNK(name, T, D)                                                                \
    ALWAYS_INLINE void name(int64_t i0, int64_t i1, double alpha, T *restrict xv, T *restrict rv,  \
                            T *restrict zv, const T *restrict pv, const T *restrict apv,           \
                            const D *restrict dv, double *srz, double *srr, const int P,           \
                            const int X)                                                           \
    {                                                                                              \
        double rz[HK_CPU_LANES] = {0}, rr[HK_CPU_LANES] = {0};                                     \
        HK_CPU_LANE_FOR(i0, i1, i, l, {                                                            \
            if (X) xv[i] = (T)(alpha * pv[i] + xv[i]);                                             \
            const T ri = (T)(-alpha * apv[i] + rv[i]);                                             \
            rv[i] = ri;                                                                            \
            rr[l] += (double)ri * (double)ri;                                                      \
            if (P) {                                                                               \
                const T zi = (T)((D)ri * dv[i]);                                                   \
                zv[i] = zi;                                                                        \
                rz[l] += (double)ri * (double)zi;                                                  \
            }                                                                                      \
        });                                                                                        \
        *srr = hk_cpu_lanes_sum(rr);                                                               \
        *srz = P ? hk_cpu_lanes_sum(rz) : *srr;                                                    \
    }
CG_UPDATE_CHUNK(cg_chunk_dd, double, double)
CG_UPDATE_CHUNK(cg_chunk_ds, double, float)
CG_UPDATE_CHUNK(cg_chunk_sd, float, double)
CG_UPDATE_CHUNK(cg_chunk_ss, float, float)
#undef CG_UPDATE_CHUNK

int hk_cpu_cg_update(hk_vec *x, hk_vec *r, hk_vec *z, const hk_vec *p, const hk_vec *Ap,
                     const hk_vec *dinv, double alpha, double *d)
{
    const int64_t n = x->n;
    const hk_precision t = x->prec;
    HK_CHECK(r->prec == t && p->prec == t && Ap->prec == t && (!dinv || z->prec == t), HK_ERR_ARG,
             "cg_update: x, r, z, p and Ap must share one precision");
    HK_CHECK(r->n == n && p->n == n && Ap->n == n && (!dinv || (z->n == n && dinv->n == n)),
             HK_ERR_ARG, "cg_update: vectors differ in length from x (%lld)", (long long)n);
    HK_CHECK(!dinv || z->data != r->data, HK_ERR_ARG,
             "cg_update: z must be a vector other than r when dinv is given");
    const int f64 = t == HK_FP64, d64 = dinv && dinv->prec == HK_FP64;
    void *xv = x->data, *rv = r->data, *zv = dinv ? z->data : NULL;
    const void *pv = p->data, *apv = Ap->data, *dv = dinv ? dinv->data : NULL;
    double prz[HK_CPU_CHUNKS], prr[HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        const int64_t i0 = hk_cpu_chunk_begin(n, c), i1 = hk_cpu_chunk_begin(n, c + 1);
        double *sz = &prz[c], *sr = &prr[c];
        if (f64 && !dv)
            cg_chunk_dd(i0, i1, alpha, xv, rv, NULL, pv, apv, NULL, sz, sr, 0, 1);
        else if (f64 && d64)
            cg_chunk_dd(i0, i1, alpha, xv, rv, zv, pv, apv, dv, sz, sr, 1, 1);
        else if (f64)
            cg_chunk_ds(i0, i1, alpha, xv, rv, zv, pv, apv, dv, sz, sr, 1, 1);
        else if (!dv)
            cg_chunk_ss(i0, i1, alpha, xv, rv, NULL, pv, apv, NULL, sz, sr, 0, 1);
        else if (d64)
            cg_chunk_sd(i0, i1, alpha, xv, rv, zv, pv, apv, dv, sz, sr, 1, 1);
        else
            cg_chunk_ss(i0, i1, alpha, xv, rv, zv, pv, apv, dv, sz, sr, 1, 1);
    }
    d[0] = hk_cpu_chunk_sum(prz);
    d[1] = hk_cpu_chunk_sum(prr);
    return 0;
}

int hk_cpu_cg_iter(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *z, hk_vec *p, hk_vec *Ap,
                   const hk_vec *dinv, double alpha, double rz, double *d)
{
    const int64_t n = x->n;
    if (!hk_cpu_spmv_has_rows(A) || x->prec != HK_FP64) {
        /* no row-range kernel (fp32, ELL/SELL/PCSR): the update, then the next direction */
        HK_CALL(hk_cpu_cg_update(x, r, z, p, Ap, dinv, alpha, d));
        return hk_cpu_cg_spmv(A, dinv ? z : r, d[0] / rz, p, Ap, &d[2]);
    }
    HK_CALL(spmv_args(A, p, Ap));
    HK_CHECK(r->prec == HK_FP64 && r->n == n && p->n == n &&
                 (!dinv || (z->prec == HK_FP64 && z->n == n && dinv->n == n)),
             HK_ERR_ARG, "cg_iter: x, r, z, p and Ap must be fp64 vectors of one length (%lld)",
             (long long)n);
    HK_CHECK(!dinv || (z->data != r->data && z->data != p->data), HK_ERR_ARG,
             "cg_iter: z must be a vector other than r and p when dinv is given");
    const int d64 = dinv && dinv->prec == HK_FP64;
    double *xv = x->data, *rv = r->data, *pv = p->data, *av = Ap->data;
    double *zv = dinv ? z->data : rv;
    const void *dv = dinv ? dinv->data : NULL;
    double prz[HK_CPU_CHUNKS], prr[HK_CPU_CHUNKS], ppap[HK_CPU_CHUNKS];
    const chunk_dots dots = {1, {pv}, NULL, NULL, {ppap, NULL, NULL}};
    atomic_int ready[HK_CPU_CHUNKS], arrived;
    SPMV_READY_INIT(ready);
    atomic_init(&arrived, 0);
    /* One region: r and z of the thread's chunks and their sums; a barrier (beta needs every
     * chunk's r.z); x and p of the same entries, reading p once for both; the SpMV of the same
     * rows (spmv_after). Every thread adds the chunk sums of r.z in the same order, so all
     * see the same beta. The barrier is a counter that the threads wait on yielding the core:
     * with OMP_WAIT_POLICY=passive an OpenMP barrier sleeps and wakes through the kernel,
     * ~20 us on the 2-core machine, and the counter measured 3 % of an iteration faster at
     * 24k DOFs (hooke bench cg, cg_iter against the SpMV). */
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), t = omp_get_thread_num();
        const hk_cpu_row_part q = hk_cpu_row_part_of(A, n, t, nt);
        for (int c = q.c0; c < q.c1; c++) {
            int64_t b0, b1, i0, i1;
            hk_cpu_spmv_chunk(A, n, c, &b0, &b1, &i0, &i1);
            double *sz = &prz[c], *sr = &prr[c];
            if (!dv)
                cg_chunk_dd(i0, i1, alpha, NULL, rv, NULL, NULL, av, NULL, sz, sr, 0, 0);
            else if (d64)
                cg_chunk_dd(i0, i1, alpha, NULL, rv, zv, NULL, av, dv, sz, sr, 1, 0);
            else
                cg_chunk_ds(i0, i1, alpha, NULL, rv, zv, NULL, av, dv, sz, sr, 1, 0);
        }
        atomic_fetch_add_explicit(&arrived, 1, memory_order_acq_rel);
        while (atomic_load_explicit(&arrived, memory_order_acquire) < nt)
            sched_yield();
        const double beta = hk_cpu_chunk_sum(prz) / rz;
        cg_direction_chunk(q.e0, q.e1, zv, beta, pv, xv, alpha, 1);
        spmv_after(A, n, &q, pv, av, &dots, ready);
    }
    d[0] = hk_cpu_chunk_sum(prz);
    d[1] = hk_cpu_chunk_sum(prr);
    d[2] = hk_cpu_chunk_sum(ppap);
    return 0;
}

/* ---- pipelined CG in one region --------------------------------------------------------- */

/* pipecg_step (paper 0: beta with z.Ap, r.(dinv.*Ap) reduced with the product) and
 * pipecg_paper_step (paper 1: Algorithm 2's beta, p.Ap and Ap.(dinv.*Ap) only). */
static int pipecg_step_with(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *p, hk_vec *Ap,
                            const hk_vec *dinv, double *S, int paper)
{
    if (!hk_cpu_spmv_has_rows(A)) {
        /* no row-range kernel: the update, then the SpMV with its dot products */
        const double zap = S[HK_S_ZAP];
        HK_CALL(pipecg_update_with(x, r, p, Ap, dinv, S, paper));
        HK_CALL(hk_cpu_spmv_dot2(A, p, Ap, dinv, paper ? NULL : r, S));
        if (paper) S[HK_S_ZAP] = zap;
        return 0;
    }
    HK_CALL(spmv_args(A, p, Ap));
    const int64_t n = x->n;
    HK_CHECK(x->prec == HK_FP64 && r->prec == HK_FP64 && x->n == n && r->n == n &&
                 (!dinv || (dinv->prec == HK_FP64 && dinv->n == n)),
             HK_ERR_ARG, "pipecg_step: x, r, p, Ap and dinv must be fp64 vectors of one length");
    double alpha, beta;
    pipecg_coefficients(S, paper, &alpha, &beta);
    double *xv = x->data, *rv = r->data, *pv = p->data, *av = Ap->data;
    const double *dv = dinv ? dinv->data : NULL;
    double prr[HK_CPU_CHUNKS], prz[HK_CPU_CHUNKS];
    double ppap[HK_CPU_CHUNKS], papz[HK_CPU_CHUNKS], pzap[HK_CPU_CHUNKS];
    const chunk_dots dots = {0, {NULL}, dv, paper ? NULL : rv, {ppap, papz, pzap}};
    atomic_int ready[HK_CPU_CHUNKS];
    SPMV_READY_INIT(ready);
    /* One region and no barrier: alpha and beta are known before it, so each thread updates x,
     * r and p of its own rows and then multiplies them, waiting only for the threads whose p
     * its boundary rows read (spmv_after). */
#pragma omp parallel
    {
        const hk_cpu_row_part q = hk_cpu_row_part_of(A, n, omp_get_thread_num(), omp_get_num_threads());
        for (int c = q.c0; c < q.c1; c++) {
            int64_t b0, b1, i0, i1;
            hk_cpu_spmv_chunk(A, n, c, &b0, &b1, &i0, &i1);
            if (dv)
                pipecg_chunk(i0, i1, alpha, beta, xv, rv, pv, av, dv, &prr[c], &prz[c], 1);
            else
                pipecg_chunk(i0, i1, alpha, beta, xv, rv, pv, av, NULL, &prr[c], &prz[c], 0);
        }
        spmv_after(A, n, &q, pv, av, &dots, ready);
    }
    S[HK_S_RR] = hk_cpu_chunk_sum(prr);
    S[HK_S_RZ] = hk_cpu_chunk_sum(prz);
    S[HK_S_ALPHA] = alpha;
    S[HK_S_BETA] = beta;
    S[HK_S_PAP] = hk_cpu_chunk_sum(ppap);
    S[HK_S_APZ] = hk_cpu_chunk_sum(papz);
    if (!paper) S[HK_S_ZAP] = hk_cpu_chunk_sum(pzap);
    return 0;
}

int hk_cpu_pipecg_step(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *p, hk_vec *Ap, const hk_vec *dinv,
                       double *S)
{
    return pipecg_step_with(A, x, r, p, Ap, dinv, S, 0);
}

int hk_cpu_pipecg_paper_step(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *p, hk_vec *Ap,
                             const hk_vec *dinv, double *S)
{
    return pipecg_step_with(A, x, r, p, Ap, dinv, S, 1);
}

/* ---- Chronopoulos-Gear CG (GPU Krylov thesis, ch. 4) ------------------------------------- */

/* One chunk of cgcg_update; B: beta != 0 (else p = u, s = w), D: dinv given (literals at each
 * call). The arithmetic is vec_axpby's and vec_pointwise_mult's, entry by entry. No restrict
 * on r and u: without a preconditioner they are one vector (u is then not written). */
ALWAYS_INLINE void cgcg_chunk(int64_t i0, int64_t i1, double alpha, double beta,
                              double *restrict xv, double *rv, double *uv, double *restrict pv,
                              double *restrict sv, const double *restrict wv,
                              const double *restrict dv, const int B, const int D)
{
    for (int64_t i = i0; i < i1; i++) {
        const double pi = B ? 1.0 * uv[i] + beta * pv[i] : uv[i];
        const double si = B ? 1.0 * wv[i] + beta * sv[i] : wv[i];
        pv[i] = pi;
        sv[i] = si;
        xv[i] = alpha * pi + 1.0 * xv[i];
        const double ri = -alpha * si + 1.0 * rv[i];
        rv[i] = ri;
        if (D) uv[i] = ri * dv[i];
    }
}

int hk_cpu_cgcg_update(hk_vec *x, hk_vec *r, hk_vec *u, hk_vec *p, hk_vec *s, const hk_vec *w,
                       const hk_vec *dinv, double alpha, double beta)
{
    const hk_vec *all[6] = {x, r, u, p, s, w};
    const int64_t n = x->n;
    for (int j = 0; j < 6; j++) {
        FP64_ONLY(all[j]);
        HK_CHECK(all[j]->n == n, HK_ERR_ARG, "cgcg_update: vectors differ in length from x (%lld)",
                 (long long)n);
    }
    HK_CHECK(!dinv || (dinv->prec == HK_FP64 && dinv->n == n && u->data != r->data), HK_ERR_ARG,
             "cgcg_update: dinv must be an fp64 vector of x's length, and u a vector other than r");
    double *xv = x->data, *rv = r->data, *uv = u->data, *pv = p->data, *sv = s->data;
    const double *wv = w->data, *dv = dinv ? dinv->data : NULL;
    const int B = beta != 0.0;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        const int64_t i0 = hk_cpu_chunk_begin(n, c), i1 = hk_cpu_chunk_begin(n, c + 1);
        if (B && dv)
            cgcg_chunk(i0, i1, alpha, beta, xv, rv, uv, pv, sv, wv, dv, 1, 1);
        else if (B)
            cgcg_chunk(i0, i1, alpha, beta, xv, rv, uv, pv, sv, wv, NULL, 1, 0);
        else if (dv)
            cgcg_chunk(i0, i1, alpha, beta, xv, rv, uv, pv, sv, wv, dv, 0, 1);
        else
            cgcg_chunk(i0, i1, alpha, beta, xv, rv, uv, pv, sv, wv, NULL, 0, 0);
    }
    return 0;
}

int hk_cpu_spmv_cgcg(hk_mat *A, const hk_vec *u, hk_vec *w, const hk_vec *r, double *d)
{
    HK_CALL(spmv_args(A, u, w));
    FP64_ONLY(r);
    HK_CHECK(r->n == u->n && r->data != w->data, HK_ERR_ARG,
             "spmv_cgcg: r must be a vector of u's length other than w");
    const int64_t n = u->n;
    const int fused = hk_cpu_spmv_has_rows(A);
    SPMV_BEFORE(A, u, w, fused);
    double pru[HK_CPU_CHUNKS], pwu[HK_CPU_CHUNKS], prr[HK_CPU_CHUNKS];
    const chunk_dots dots = {CHUNK_DOTS_CGCG, {NULL}, NULL, r->data, {pru, pwu, prr}};
    spmv_sweep_all(A, n, u->data, w->data, &dots, fused);
    d[0] = hk_cpu_chunk_sum(pru);
    d[1] = hk_cpu_chunk_sum(pwu);
    d[2] = hk_cpu_chunk_sum(prr);
    return 0;
}
