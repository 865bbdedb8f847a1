/* CPU versions of the Krylov methods' fused ops (pipelined BiCGStab and GMRES); semantics in
 * hk_impl.h. On the CPU "fused" means one pass over the vectors per op, with the same
 * deterministic chunked reductions as the rest of the backend. */
#include <math.h>

#include "cpu_impl.h"

#define FP64_ONLY(v)                                                                               \
    HK_CHECK((v)->prec == HK_FP64, HK_ERR_ARG,                                                     \
             "cpu backend: the pipelined Krylov fused ops run their vectors in fp64")

int hk_cpu_spmv_mdot(hk_mat *A, const hk_vec *x, hk_vec *y, int k, const hk_vec *const *W,
                     double *S, const int *slot)
{
    HK_CHECK(k >= 0 && k <= 4, HK_ERR_ARG, "spmv_mdot: at most 4 fused dot products (got %d)", k);
    FP64_ONLY(x);
    FP64_ONLY(y);
    for (int j = 0; j < k; j++)
        FP64_ONLY(W[j]);
    HK_CALL(hk_cpu_mat_spmv(A, x, y));
    const int64_t n = y->n;
    const double *yv = y->data;
    double part[4][HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        for (int j = 0; j < k; j++) {
            const double *wv = W[j]->data;
            double s = 0;
            for (int64_t i = hk_cpu_chunk_begin(n, c); i < hk_cpu_chunk_begin(n, c + 1); i++)
                s += wv[i] * yv[i];
            part[j][c] = s;
        }
    }
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
    double *sv = s->data;
    const double *rv = r->data, *av = Ap->data;
    double part[HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        double ss = 0;
        for (int64_t i = hk_cpu_chunk_begin(n, c); i < hk_cpu_chunk_begin(n, c + 1); i++) {
            double si = rv[i] - alpha * av[i];
            sv[i] = si;
            ss += si * si;
        }
        part[c] = ss;
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
    double *xv = x->data, *rv = r->data, *pv = p->data;
    const double *phv = phat->data, *sv = s->data, *shv = shat->data, *asv = As->data,
                 *apv = Ap->data, *r0v = r0s->data;
    double prr0[HK_CPU_CHUNKS], prr[HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        double srr0 = 0, srr = 0;
        for (int64_t i = hk_cpu_chunk_begin(n, c); i < hk_cpu_chunk_begin(n, c + 1); i++) {
            xv[i] += alpha * phv[i] + omega * shv[i];
            double ri = sv[i] - omega * asv[i];
            rv[i] = ri;
            pv[i] = ri + beta * (pv[i] - omega * apv[i]);
            srr0 += ri * r0v[i];
            srr += ri * ri;
        }
        prr0[c] = srr0;
        prr[c] = srr;
    }
    S[HK_S_BI_RR0] = hk_cpu_chunk_sum(prr0);
    S[HK_S_BI_RR] = hk_cpu_chunk_sum(prr);
    S[HK_S_BI_OMEGA] = omega;
    S[HK_S_BI_BETA] = beta;
    return 0;
}

int hk_cpu_vec_mdot_s(int k, hk_vec *const *X, const hk_vec *y, double *S)
{
    FP64_ONLY(y);
    for (int j = 0; j < k; j++)
        FP64_ONLY(X[j]);
    const int64_t n = y->n;
    const double *yv = y->data;
    /* one chunked pass per basis vector: deterministic, and y stays in cache per chunk */
    for (int j = 0; j < k; j++) {
        const double *xv = X[j]->data;
        double part[HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
        for (int c = 0; c < HK_CPU_CHUNKS; c++) {
            double s = 0;
            for (int64_t i = hk_cpu_chunk_begin(n, c); i < hk_cpu_chunk_begin(n, c + 1); i++)
                s += xv[i] * yv[i];
            part[c] = s;
        }
        S[j] = hk_cpu_chunk_sum(part);
    }
    return 0;
}

int hk_cpu_vec_maxpy_s_nrm(hk_vec *y, int k, const double *S, hk_vec *const *X, double *nrm2)
{
    FP64_ONLY(y);
    for (int j = 0; j < k; j++)
        FP64_ONLY(X[j]);
    const int64_t n = y->n;
    double *yv = y->data;
    double part[HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        double s = 0;
        for (int64_t i = hk_cpu_chunk_begin(n, c); i < hk_cpu_chunk_begin(n, c + 1); i++) {
            double v = yv[i];
            for (int j = 0; j < k; j++)
                v -= S[j] * ((const double *)X[j]->data)[i];
            yv[i] = v;
            s += v * v;
        }
        part[c] = s;
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
    double *yv = y->data;
    const double *wv = w ? w->data : NULL;
    double part[HK_CPU_CHUNKS];
#pragma omp parallel for schedule(static)
    for (int c = 0; c < HK_CPU_CHUNKS; c++) {
        double s = 0;
        for (int64_t i = hk_cpu_chunk_begin(n, c); i < hk_cpu_chunk_begin(n, c + 1); i++) {
            yv[i] *= scale;
            if (wv) s += wv[i] * yv[i];
        }
        part[c] = s;
    }
    if (w) *d = hk_cpu_chunk_sum(part);
    return 0;
}
