/* Static FSAI, factored sparse approximate inverse M^-1 = G^T G ~ A^-1 for SPD A, following
 * the FSAI paper's Algorithm 3.1 (Janna, Ferronato et al.):
 *
 *   1. sparsify: Ã keeps a_ij with |a_ij| > tau sqrt(a_ii a_jj) (and the diagonal);
 *   2. pattern S of G: k steps of the symbolic recursion B_{p+1} = Low(B_p Ã), B_0 = I
 *      (equation 3.9; row i of B_k is the set of columns <= i reachable from i in k steps);
 *   3. per row i (OpenMP over rows): gather the dense A[P_i, P_i], solve A[P_i,P_i] w = e_m by
 *      Cholesky, g_i = w / sqrt(w_m), which gives diag(G A G^T) = 1 (equation 3.7);
 *   4. post-filtration: entries |g_ij| <= delta ||g_i||_2 (j < i) are dropped into eps_i and
 *      the kept row scaled by 1/sqrt(1 + eps_i^T A eps_i) (equation 3.13), which keeps
 *      diag(G A G^T) = 1 exactly.
 *
 * Option pc.fsai.adaptive=N (CPU only) grows the static pattern per row by up to N rounds of
 * adaptive FSAI (Janna et al.): the pc.fsai.adaptive_rho columns with the largest scaled
 * gradient of Kaplan's functional, while it exceeds pc.fsai.adaptive_eps.
 *
 * Option pc.fsai.pattern=block (the default) sparsifies and grows the pattern on node blocks
 * (all dofs of a node share it, ||A_IJ||_F in place of |a_ij|): the block formats store G by
 * node blocks anyway, so entries inside a stored block cost nothing, and one Cholesky per
 * node gives its rows. scalar works on single entries (the paper). The defaults (block,
 * tau 0.12: face couplings of hex elasticity, k 2) give the least SpMV work per solve among
 * the patterns measured in docs/preconditioners.md, at a tenth of the scalar set-up.
 *
 * Every step runs on the backend where K lives, through its fsai_pattern and fsai_factor ops
 * (the exact rules: solver/cpu/cpu_fsai.c; CUDA: cuda/cuda_fsai.cu). G and G^T become
 * hk_mats in the solver's format and the preconditioner's precision; apply is two SpMVs,
 * z = G^T (G r). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

#define FSAI_MAX_ROW 600 /* dense local systems larger than this are refused */

typedef struct {
    hk_mat *G, *Gt;
    hk_vec *t;
    int64_t nnz;
    double times[4]; /* set-up seconds: pattern, factor, transpose, build (hk_pc_fsai_times) */
} fsai_data;

static void fsai_destroy(hk_pc *pc)
{
    fsai_data *d = pc->data;
    hk_mat_destroy(d->G);
    hk_mat_destroy(d->Gt);
    hk_vec_destroy(d->t);
    free(d);
    pc->data = NULL;
}

static double now_synced(const hk_backend_ops *be)
{
    be->sync();
    return hk_time();
}

/* One sentence for a row the set-up ops could not do. */
static int fsai_fault(const hk_setup_fault *f, double tau, int k, const char *pattern)
{
    const long long row = (long long)f->row;
    switch (f->reason) {
    case HK_FAULT_TOO_LARGE:
        return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                            "preconditioner fsai: row %lld of the pattern has more than %d "
                            "entries; raise pc.fsai.tau or lower pc.fsai.k (now %g, %d, "
                            "pattern %s)",
                            row, FSAI_MAX_ROW, tau, k, pattern);
    case HK_FAULT_DIAG:
        return hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                            "preconditioner fsai: row %lld has a diagonal entry that is not "
                            "positive; it needs a positive diagonal (is the matrix SPD, are "
                            "Dirichlet rows kept with a unit diagonal?) - use pc=none or "
                            "pc=ilu0 for such matrices",
                            row + 1);
    case HK_FAULT_ASYMMETRIC:
        return hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                            "preconditioner fsai needs a symmetric matrix, but the local matrix "
                            "of row %lld is not symmetric; use pc=ilu0 or pc=sai with "
                            "method=gmres or bicgstab",
                            row);
    case HK_FAULT_MEMORY:
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                            "preconditioner fsai: out of memory at row %lld", row);
    default:
        return hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                            "preconditioner fsai: the local matrix of row %lld is not "
                            "positive definite, so the matrix is not SPD; use pc=sai or "
                            "pc=ilu0 with method=gmres",
                            row);
    }
}

static int fsai_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    int ierr = 0, k = 2, adaptive = 0, rho = 4;
    double tau, delta = 0.01, eps = 0.01;
    const char *pattern = "block";
    hk_graph S = {0};
    hk_bmat G = {0}, Gt = {0};
    hk_setup_fault f = {-1, 0};
    fsai_data *d = NULL;
    const hk_backend_ops *be = K->be;
    HK_CALL(hk_options_get_string(o, "pc.fsai.pattern", &pattern));
    /* block: keeps the face couplings of hex elasticity (scaled block norms 0.16; edges 0.10,
     * corners 0.04) and those of similar strength on tets; scalar: the paper's range */
    const int block = !strcmp(pattern, "block");
    tau = block ? 0.12 : 0.05;
    HK_CALL(hk_options_get_double(o, "pc.fsai.tau", &tau));
    HK_CALL(hk_options_get_int(o, "pc.fsai.k", &k));
    HK_CALL(hk_options_get_double(o, "pc.fsai.delta", &delta));
    HK_CALL(hk_options_get_int(o, "pc.fsai.adaptive", &adaptive));
    HK_CALL(hk_options_get_int(o, "pc.fsai.adaptive_rho", &rho));
    HK_CALL(hk_options_get_double(o, "pc.fsai.adaptive_eps", &eps));
    HK_CHECK(adaptive >= 0 && adaptive <= 100, HK_ERR_OPTION,
             "option pc.fsai.adaptive=%d is out of range; use 0 (static pattern) .. 100 rounds",
             adaptive);
    HK_CHECK(rho >= 1 && rho <= 100, HK_ERR_OPTION,
             "option pc.fsai.adaptive_rho=%d is out of range; use 1..100 (default 4)", rho);
    HK_CHECK(eps >= 0, HK_ERR_OPTION,
             "option pc.fsai.adaptive_eps=%g is out of range; use eps >= 0 (default 0.01)", eps);
    HK_CHECK(!adaptive || be == &hk_backend_cpu, HK_ERR_UNSUPPORTED,
             "option pc.fsai.adaptive works on the cpu backend only; use backend=cpu or "
             "pc.fsai.adaptive=0");
    HK_CHECK(tau >= 0 && tau <= 1, HK_ERR_OPTION,
             "option pc.fsai.tau=%g is out of range; use 0..1 (default 0.12 with the block "
             "pattern, 0.05 with scalar)",
             tau);
    HK_CHECK(k >= 1 && k <= 20, HK_ERR_OPTION,
             "option pc.fsai.k=%d is out of range; use 1..20 (default 2)", k);
    HK_CHECK(delta >= 0 && delta < 1, HK_ERR_OPTION,
             "option pc.fsai.delta=%g is out of range; use 0 <= delta < 1 (default 0.01)", delta);
    HK_CHECK(!strcmp(pattern, "scalar") || block, HK_ERR_OPTION,
             "option pc.fsai.pattern=%s is not known; use block (node blocks, the default) or "
             "scalar (single entries)",
             pattern);
    HK_CHECK(be->fsai_pattern && be->fsai_factor, HK_ERR_UNSUPPORTED,
             "preconditioner fsai: the %s backend cannot set it up; use backend=cpu", be->name);
    HK_CALL(hk_calloc(1, sizeof *d, &d));
    pc->data = d;
    double t0 = now_synced(be);
    HK_TRY(be->fsai_pattern(K, tau, k, block, FSAI_MAX_ROW, &S, &f));
    if (adaptive && f.row < 0) {
        hk_graph S2 = {0};
        HK_TRY(hk_cpu_fsai_adaptive(K, &S, adaptive, rho, eps, FSAI_MAX_ROW, &S2, &f));
        hk_graph_free(&S);
        S = S2;
    }
    d->times[0] = now_synced(be) - t0;
    t0 = now_synced(be);
    if (f.row < 0) HK_TRY(be->fsai_factor(K, &S, delta, &G, &f));
    d->times[1] = now_synced(be) - t0;
    if (f.row >= 0) {
        ierr = fsai_fault(&f, tau, k, pattern);
        goto fail;
    }
    t0 = now_synced(be);
    HK_TRY(hk_pc_bmat_transpose(&G, &Gt));
    d->times[2] = now_synced(be) - t0;
    t0 = now_synced(be);
    HK_TRY(hk_pc_mat_from_bmat(pc, A, &G, &d->G));
    HK_TRY(hk_pc_mat_from_bmat(pc, A, &Gt, &d->Gt));
    d->times[3] = now_synced(be) - t0;
    HK_TRY(hk_vec_create(pc->be, pc->n, pc->prec, &d->t));
    d->nnz = G.nnzb;
fail:
    hk_graph_free(&S);
    hk_bmat_free(&G);
    hk_bmat_free(&Gt);
    return ierr;
}

static int fsai_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    fsai_data *d = pc->data;
    HK_CALL(hk_mat_spmv(d->G, r, d->t));
    return hk_mat_spmv(d->Gt, d->t, z);
}

int64_t hk_pc_fsai_nnz(const hk_pc *pc)
{
    return pc && pc->type == &hk_pc_fsai ? ((const fsai_data *)pc->data)->nnz : -1;
}

int hk_pc_fsai_times(const hk_pc *pc, double t[4])
{
    if (!pc || pc->type != &hk_pc_fsai) return -1;
    memcpy(t, ((const fsai_data *)pc->data)->times, 4 * sizeof *t);
    return 0;
}

const hk_pc_type hk_pc_fsai = {
    .name = "fsai",
    .summary = "static factored sparse approximate inverse G^T G (SPD; two SpMVs per apply)",
    .options = "pc.fsai.tau pc.fsai.k pc.fsai.delta pc.fsai.pattern pc.fsai.adaptive "
               "pc.fsai.adaptive_rho pc.fsai.adaptive_eps",
    .symmetric = 1,
    .setup = fsai_setup,
    .apply = fsai_apply,
    .apply_capturable = 1,
    .destroy = fsai_destroy,
};
