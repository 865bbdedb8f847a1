/* IC(0): incomplete Cholesky A ~ L L^T with the sparsity of the lower triangle of A (row by
 * row: l_ij = (a_ij - sum_{k<j} l_ik l_jk) / l_jj, l_ii = sqrt(a_ii - sum_k l_ik^2)), set up on
 * the host, exactly or (pc.ic0.sweeps > 0) by the fine-grained iterative method
 * (iterfact.c); optionally after a node reordering (pc.ordering); applied as two triangular
 * solves (L, then L^T) through the backend's tri ops (pc.tri). Reads the lower triangle only:
 * A must be symmetric. */
#include <math.h>
#include <stdlib.h>

#include "pc_impl.h"

static int ic0_setup_host(hk_pc *pc, const hk_bcsr *K, hk_mat *A, hk_options *o)
{
    int ierr = 0;
    hk_csr F = {0}, Lc = {0}, Ut = {0};
    hk_trifactor L = {0}, U = {0};
    hk_bcsr Kp = {0};
    const hk_bcsr *Kf = K;
    double *w = NULL;
    int sweeps = 0;
    HK_CALL(hk_options_get_int(o, "pc.ic0.sweeps", &sweeps));
    HK_CHECK(sweeps >= 0, HK_ERR_OPTION,
             "option pc.ic0.sweeps=%d is negative; use 0 (exact factorisation, the default) or "
             "a number of sweeps such as 3",
             sweeps);
    HK_CALL(hk_tri_pc_begin(pc, "ic0", K, o, &Kp, &Kf));
    HK_TRY(hk_csr_from_bcsr(Kf, &F));
    HK_TRY(hk_csr_check_symmetric(&F, "ic0"));
    const int64_t n = F.n;
    if (sweeps > 0) {
        int64_t bad = -1;
        HK_TRY(hk_ic0_sweeps(pc->be, &F, sweeps, &Lc, &bad));
        HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                     "preconditioner ic0: zero or non-positive pivot at row %lld after %d "
                     "sweeps%s; the matrix is not SPD or IC(0) breaks down - use pc=jacobi, "
                     "pc=fsai, more sweeps or pc.ic0.sweeps=0",
                     (long long)bad, sweeps, Kf != K ? " (row of the reordered matrix)" : "");
        goto factored;
    }
    /* lower triangle of A, diagonal last in each row */
    int64_t nnz = 0;
    for (int64_t k = 0; k < F.rowptr[n]; k++)
        nnz += 1; /* upper bound */
    HK_TRY(hk_csr_alloc(n, n, nnz, &Lc));
    HK_TRY(hk_calloc((size_t)(n ? n : 1), sizeof *w, &w));
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t start = q;
        double aii = 0;
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++) {
            const int32_t j = F.colind[k];
            if (j < i) {
                /* l_ij = (a_ij - sum_{k<j} l_ik l_jk) / l_jj; w holds l_i* computed so far */
                double s = F.val[k];
                const int64_t jd = Lc.rowptr[j + 1] - 1; /* diagonal of row j */
                for (int64_t kk = Lc.rowptr[j]; kk < jd; kk++)
                    s -= w[Lc.colind[kk]] * Lc.val[kk];
                const double l = s / Lc.val[jd];
                w[j] = l;
                Lc.colind[q] = j;
                Lc.val[q++] = l;
            } else if (j == i) {
                aii = F.val[k];
            }
        }
        double d = aii;
        for (int64_t kk = start; kk < q; kk++)
            d -= Lc.val[kk] * Lc.val[kk];
        HK_TRY_CHECK(d > 0 && isfinite(d), HK_ERR_NUMERIC,
                     "preconditioner ic0: non-positive pivot %g at row %lld%s (diagonal %g); "
                     "the matrix is not SPD or IC(0) breaks down - use pc=jacobi, pc=fsai or "
                     "pc=ilu0 with method=gmres",
                     d, (long long)i, Kf != K ? " of the reordered matrix" : "", aii);
        Lc.colind[q] = (int32_t)i;
        Lc.val[q++] = sqrt(d);
        Lc.rowptr[i + 1] = q;
        for (int64_t kk = start; kk < q; kk++)
            w[Lc.colind[kk]] = 0;
    }
factored:
    HK_TRY(hk_csr_transpose(&Lc, &Ut));
    HK_TRY(hk_trifactor_from_csr(&Lc, 0, 0, &L));
    HK_TRY(hk_trifactor_from_csr(&Ut, 1, 0, &U));
    HK_TRY(hk_tri_pc_create(pc, "ic0", &L, &U));
fail:
    hk_csr_free(&F);
    hk_csr_free(&Lc);
    hk_csr_free(&Ut);
    hk_trifactor_free(&L);
    hk_trifactor_free(&U);
    hk_bcsr_free(&Kp);
    free(w);
    return ierr;
}

/* Set-up still runs on the host: K is copied back from the backend first. */
static int ic0_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    return hk_pc_setup_on_host(pc, K, A, o, ic0_setup_host);
}

const hk_pc_type hk_pc_ic0 = {
    .name = "ic0",
    .summary = "incomplete Cholesky, zero fill; sync-free or level-scheduled triangular solves",
    .options = "pc.tri pc.ordering pc.ic0.sweeps",
    .symmetric = 1,
    .setup = ic0_setup,
    .apply = hk_tri_pc_apply,
    .destroy = hk_tri_pc_destroy,
    .describe = hk_tri_pc_describe,
};
