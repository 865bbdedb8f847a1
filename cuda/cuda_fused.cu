// Fused ops of the pipelined Krylov methods on the CUDA backend (semantics in hk_impl.h, CPU
// versions in solver/cpu/cpu_backend.c and cpu_fused.c). Every scalar the step needs is read
// from the backend-resident array S inside the kernel and every result is written back there,
// so an iteration never waits for the host. Each op is one vector kernel (stage 1 of its
// reductions) plus the one-block stage 2, which also derives the step's scalars.
#include "cuda_impl.cuh"

#define HK_GRID_STRIDE(i, n)                                                                       \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

/* Pipelined CG's update (pipelined-solver paper, Algorithm 2, lines 10-12, plus Jacobi) and the
 * first stage of r.r and r.z. PAPER: beta as lines 16-17 write it, stored with alpha by one
 * thread (slots no thread of the kernel reads), the sums left to the SpMV kernel that follows
 * (pipecg_paper_step); else the fused variant's beta with z.Ap (pipecg_update). */
template <bool PAPER>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_pipecg_update(int64_t n, double *__restrict__ x, double *__restrict__ r,
                    double *__restrict__ p, const double *__restrict__ Ap,
                    const double *__restrict__ dinv, double *S, double *part)
{
    const double alpha = S[HK_S_RZ] / S[HK_S_PAP];
    const double beta =
        PAPER ? alpha * alpha * S[HK_S_APZ] / S[HK_S_RZ] - 1.0
              : (S[HK_S_RZ] - 2.0 * alpha * S[HK_S_ZAP] + alpha * alpha * S[HK_S_APZ]) /
                    S[HK_S_RZ];
    if (PAPER && blockIdx.x == 0 && threadIdx.x == 0) {
        S[HK_S_ALPHA] = alpha;
        S[HK_S_BETA] = beta;
    }
    double acc[2] = {0, 0};
    HK_GRID_STRIDE(i, n)
    {
        const double pi = p[i];
        x[i] += alpha * pi;
        const double ri = r[i] - alpha * Ap[i];
        r[i] = ri;
        const double zi = dinv ? dinv[i] * ri : ri;
        p[i] = zi + beta * pi;
        acc[0] += ri * ri;
        acc[1] += ri * zi;
    }
    hk_block_reduce<2>(acc, 2, part);
}

/* The arguments of both updates; the grid of the kernel in *nb. */
template <bool PAPER>
static int pipecg_update_launch(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *Ap,
                                const hk_vec *dinv, double *S, unsigned *nb)
{
    const hk_vec *all[4] = {x, r, p, Ap};
    for (int j = 0; j < 4; j++) {
        FP64(all[j]);
        LEN(x, all[j]);
    }
    if (dinv) {
        FP64(dinv);
        LEN(x, dinv);
    }
    *nb = hk_cu_rgrid(x->n, (const void *)k_pipecg_update<PAPER>);
    k_pipecg_update<PAPER><<<*nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(
        x->n, D(x), D(r), D(p), CD(Ap), dinv ? CD(dinv) : NULL, S, hk_cu.part);
    HK_CU_LAUNCHED();
    return 0;
}

int hk_cu_pipecg_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *Ap, const hk_vec *dinv,
                        double *S)
{
    unsigned nb;
    HK_CALL(pipecg_update_launch<false>(x, r, p, Ap, dinv, S, &nb));
    hk_cu_outs out;
    out.p[0] = S + HK_S_RR;
    out.p[1] = S + HK_S_RZ;
    return hk_cu_finish(nb, 2, out, HK_FIN_PIPECG, S);
}

/* The update kernel of pipecg_paper_step (Algorithm 2's first kernel). */
int hk_cu_pipecg_paper_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *Ap,
                              const hk_vec *dinv, double *S, unsigned *nb)
{
    return pipecg_update_launch<true>(x, r, p, Ap, dinv, S, nb);
}

/* Chronopoulos-Gear PCG's vector updates with the Jacobi preconditioner in one pass (the
 * cgcg_update op; GPU Krylov thesis, Fig. 4.4b: the SAXPY kernels and the preconditioner
 * fused). No __restrict__ on r and u: without a preconditioner they are one vector. */
template <bool B, bool DI>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_cgcg_update(int64_t n, double alpha, double beta, double *__restrict__ x, double *r,
                  double *u, double *__restrict__ p, double *__restrict__ s,
                  const double *__restrict__ w, const double *__restrict__ dinv)
{
    HK_GRID_STRIDE(i, n)
    {
        const double pi = B ? u[i] + beta * p[i] : u[i];
        const double si = B ? w[i] + beta * s[i] : w[i];
        p[i] = pi;
        s[i] = si;
        x[i] += alpha * pi;
        const double ri = r[i] - alpha * si;
        r[i] = ri;
        if (DI) u[i] = ri * dinv[i];
    }
}

int hk_cu_cgcg_update(hk_vec *x, hk_vec *r, hk_vec *u, hk_vec *p, hk_vec *s, const hk_vec *w,
                      const hk_vec *dinv, double alpha, double beta)
{
    const hk_vec *all[6] = {x, r, u, p, s, w};
    for (int j = 0; j < 6; j++) {
        FP64(all[j]);
        LEN(x, all[j]);
    }
    if (dinv) {
        FP64(dinv);
        LEN(x, dinv);
        HK_CHECK(u->data != r->data, HK_ERR_ARG,
                 "cgcg_update: u must be a vector other than r when dinv is given");
    }
    if (!x->n) return 0;
    const unsigned g = hk_cu_grid(x->n);
    const int64_t n = x->n;
    const double *dv = dinv ? CD(dinv) : NULL;
    if (beta != 0.0 && dinv)
        k_cgcg_update<true, true><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, alpha, beta, D(x), D(r), D(u), D(p), D(s), CD(w), dv);
    else if (beta != 0.0)
        k_cgcg_update<true, false><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, alpha, beta, D(x), D(r), D(u), D(p), D(s), CD(w), dv);
    else if (dinv)
        k_cgcg_update<false, true><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, alpha, beta, D(x), D(r), D(u), D(p), D(s), CD(w), dv);
    else
        k_cgcg_update<false, false><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, alpha, beta, D(x), D(r), D(u), D(p), D(s), CD(w), dv);
    HK_CU_LAUNCHED();
    return 0;
}

/* Pipelined BiCGStab lines 8-9: s = r - alpha Ap, partial s.s. */
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_bicg_s(int64_t n, double *__restrict__ s, const double *__restrict__ r,
             const double *__restrict__ Ap, const double *__restrict__ S, double *part)
{
    const double alpha = S[HK_S_BI_RR0] / S[HK_S_BI_APR0];
    double acc[1] = {0};
    HK_GRID_STRIDE(i, n)
    {
        const double si = r[i] - alpha * Ap[i];
        s[i] = si;
        acc[0] += si * si;
    }
    hk_block_reduce<1>(acc, 1, part);
}

int hk_cu_pipebicg_s(hk_vec *s, const hk_vec *r, const hk_vec *Ap, double *S)
{
    FP64(s);
    FP64(r);
    FP64(Ap);
    LEN(s, r);
    LEN(s, Ap);
    const unsigned nb = hk_cu_rgrid(s->n, (const void *)k_bicg_s);
    k_bicg_s<<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(s->n, D(s), CD(r), CD(Ap), S, hk_cu.part);
    HK_CU_LAUNCHED();
    hk_cu_outs out;
    out.p[0] = S + HK_S_BI_SS;
    return hk_cu_finish(nb, 1, out, HK_FIN_BICG_S, S);
}

/* Pipelined BiCGStab lines 13-20 (right preconditioned), partials of r.r0s and r.r. No
 * __restrict__: without a preconditioner phat is p and shat is s. */
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_bicg_update(int64_t n, double *x, double *r, double *p, const double *phat, const double *s,
                  const double *shat, const double *As, const double *Ap, const double *r0s,
                  const double *S, double *part)
{
    const double alpha = S[HK_S_BI_ALPHA];
    const double omega = S[HK_S_BI_ASAS] != 0.0 ? S[HK_S_BI_ASS] / S[HK_S_BI_ASAS] : 0.0;
    const double beta = -S[HK_S_BI_ASR0] / S[HK_S_BI_APR0];
    double acc[2] = {0, 0};
    HK_GRID_STRIDE(i, n)
    {
        x[i] += alpha * phat[i] + omega * shat[i];
        const double ri = s[i] - omega * As[i];
        r[i] = ri;
        p[i] = ri + beta * (p[i] - omega * Ap[i]);
        acc[0] += ri * r0s[i];
        acc[1] += ri * ri;
    }
    hk_block_reduce<2>(acc, 2, part);
}

int hk_cu_pipebicg_update(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *phat, const hk_vec *s,
                          const hk_vec *shat, const hk_vec *As, const hk_vec *Ap, const hk_vec *r0s,
                          double *S)
{
    const hk_vec *all[] = {x, r, p, phat, s, shat, As, Ap, r0s};
    for (int j = 0; j < 9; j++) {
        FP64(all[j]);
        LEN(all[j], x);
    }
    const unsigned nb = hk_cu_rgrid(x->n, (const void *)k_bicg_update);
    k_bicg_update<<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(
        x->n, D(x), D(r), D(p), CD(phat), CD(s), CD(shat), CD(As), CD(Ap), CD(r0s), S, hk_cu.part);
    HK_CU_LAUNCHED();
    hk_cu_outs out;
    out.p[0] = S + HK_S_BI_RR0;
    out.p[1] = S + HK_S_BI_RR;
    return hk_cu_finish(nb, 2, out, HK_FIN_BICG_UPD, S);
}

/* Pipelined CG with a general preconditioner: the eight vector updates of one iteration and
 * the seven inner products of the new vectors in one pass (semantics in hk_impl.h); alpha and
 * beta read from S, nothing done while S[HK_G_HALT] is set. */
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_pipecg_gv_step(int64_t n, const double *__restrict__ S, double *__restrict__ x,
                     double *__restrict__ r, double *__restrict__ u, double *__restrict__ w,
                     const double *__restrict__ m, const double *__restrict__ nv,
                     double *__restrict__ z, double *__restrict__ q, double *__restrict__ s,
                     double *__restrict__ p, double *part)
{
    if (S[HK_G_HALT] != 0) return; /* the same for every thread */
    const double alpha = S[HK_G_ALPHA], beta = S[HK_G_BETA];
    double a[7] = {0, 0, 0, 0, 0, 0, 0};
    HK_GRID_STRIDE(i, n)
    {
        hk_pipecg_gv_entry(i, alpha, beta, x, r, u, w, m, nv[i], z, q, s, p, a);
    }
    hk_block_reduce<7>(a, 7, part);
}

/* Stage 2 of k_pipecg_gv_step in one block (hk_cu_pipecg_gv_stage2). */
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_pipecg_gv_finish(const double *__restrict__ part, unsigned nb, double *S)
{
    if (S[HK_G_HALT] != 0) return; /* the same for every thread */
    hk_cu_pipecg_gv_stage2(part, nb, S);
}

int hk_cu_pipecg_gv_step(hk_vec *const *V, double *S)
{
    for (int j = 0; j < 10; j++) {
        FP64(V[j]);
        LEN(V[0], V[j]);
    }
    const int64_t n = V[0]->n;
    const unsigned nb = hk_cu_rgrid(n, (const void *)k_pipecg_gv_step);
    k_pipecg_gv_step<<<nb, HK_CU_BLOCK, 0, hk_cu.stream>>>(
        n, S, D(V[0]), D(V[1]), D(V[2]), D(V[3]), CD(V[4]), CD(V[5]), D(V[6]), D(V[7]), D(V[8]),
        D(V[9]), hk_cu.part);
    HK_CU_LAUNCHED();
    k_pipecg_gv_finish<<<1, HK_CU_BLOCK, 0, hk_cu.stream>>>(hk_cu.part, nb, S);
    HK_CU_LAUNCHED();
    return 0;
}

/* One step of pc=poly's recurrence (semantics in hk_impl.h): the pointwise scaling and the two
 * vector updates of a Chebyshev step in one pass. */
template <typename T>
__global__ void __launch_bounds__(HK_CU_BLOCK)
    k_poly_step(int64_t n, T *__restrict__ y, double a, const T *__restrict__ d,
                const T *__restrict__ t, double b, const T *__restrict__ x, double c,
                T *__restrict__ z, double e, double f)
{
    HK_GRID_STRIDE(i, n)
    {
        hk_cu_poly_entry<T>(i, y, a, d, t[i], b, x, c, z, e, f);
    }
}

int hk_cu_vec_poly_step(hk_vec *y, double a, const hk_vec *d, const hk_vec *t, double b,
                        const hk_vec *x, double c, hk_vec *z, double e, double f)
{
    const hk_vec *all[4] = {d, t, z, x};
    for (int j = 0; j < 4; j++)
        HK_CHECK(!all[j] || (all[j]->prec == y->prec && all[j]->n == y->n), HK_ERR_ARG,
                 "cuda backend: vec_poly_step on vectors of different precision or length");
    HK_CHECK(x || b == 0.0, HK_ERR_ARG, "vec_poly_step: x is NULL with b = %g; pass x or b = 0",
             b);
    if (!y->n) return 0;
    const unsigned g = hk_cu_grid(y->n);
    if (y->prec == HK_FP64)
        k_poly_step<double><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            y->n, D(y), a, CD(d), CD(t), b, x ? CD(x) : NULL, c, D(z), e, f);
    else
        k_poly_step<float><<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(
            y->n, (float *)y->data, a, (const float *)d->data, (const float *)t->data, b,
            x ? (const float *)x->data : NULL, c, (float *)z->data, e, f);
    HK_CU_LAUNCHED();
    return 0;
}

void hk_cu_fused_init_grids(void)
{
    hk_cu_rgrid(1, (const void *)k_pipecg_gv_step);
    hk_cu_rgrid(1, (const void *)k_pipecg_update<false>);
    hk_cu_rgrid(1, (const void *)k_pipecg_update<true>);
    hk_cu_rgrid(1, (const void *)k_bicg_s);
    hk_cu_rgrid(1, (const void *)k_bicg_update);
}
