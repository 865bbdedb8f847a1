/* ILU(0): incomplete LU with the sparsity of A (Saad, Iterative Methods, Algorithm 10.4, IKJ
 * order), set up on the host, exactly or (pc.ilu0.sweeps > 0) by the fine-grained iterative
 * method (iterfact.c); optionally after a node reordering (pc.ordering); applied as two
 * triangular solves through the backend's tri ops (unit lower L, then U; pc.tri). For
 * nonsymmetric matrices with BiCGStab/GMRES. */
#include <math.h>
#include <stdlib.h>

#include "pc_impl.h"

static int ilu0_setup_host(hk_pc *pc, const hk_bcsr *K, hk_mat *A, hk_options *o)
{
    int ierr = 0;
    hk_csr F = {0};
    hk_trifactor L = {0}, U = {0};
    hk_bcsr Kp = {0};
    const hk_bcsr *Kf = K;
    int64_t *diag = NULL, *marker = NULL;
    int sweeps = 0;
    HK_CALL(hk_options_get_int(o, "pc.ilu0.sweeps", &sweeps));
    HK_CHECK(sweeps >= 0, HK_ERR_OPTION,
             "option pc.ilu0.sweeps=%d is negative; use 0 (exact factorisation, the default) "
             "or a number of sweeps such as 3",
             sweeps);
    HK_CALL(hk_tri_pc_begin(pc, "ilu0", K, o, &Kp, &Kf));
    HK_TRY(hk_csr_from_bcsr(Kf, &F));
    const int64_t n = F.n;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *diag, &diag));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *marker, &marker));
    for (int64_t i = 0; i < n; i++) {
        marker[i] = -1;
        diag[i] = -1;
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++)
            if (F.colind[k] == i) diag[i] = k;
        HK_TRY_CHECK(diag[i] >= 0, HK_ERR_NUMERIC,
                     "preconditioner ilu0: row %lld has no diagonal entry, so ILU(0) has a zero "
                     "pivot there; reorder the unknowns or use pc=sai",
                     (long long)i);
    }
    if (sweeps > 0) {
        int64_t bad = -1;
        HK_TRY(hk_ilu0_sweeps(pc->be, &F, sweeps, &bad));
        HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                     "preconditioner ilu0: zero pivot at row %lld after %d sweeps%s; reorder "
                     "the unknowns, use more sweeps, pc.ilu0.sweeps=0 or pc=sai",
                     (long long)bad, sweeps, Kf != K ? " (row of the reordered matrix)" : "");
    }
    for (int64_t i = 0; i < n && sweeps == 0; i++) {
        double rowmax = 0;
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++) {
            marker[F.colind[k]] = k;
            if (fabs(F.val[k]) > rowmax) rowmax = fabs(F.val[k]);
        }
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1] && F.colind[k] < i; k++) {
            const int32_t j = F.colind[k];
            const double l = F.val[k] / F.val[diag[j]];
            F.val[k] = l;
            for (int64_t kk = diag[j] + 1; kk < F.rowptr[j + 1]; kk++) {
                int64_t m = marker[F.colind[kk]];
                if (m >= 0) F.val[m] -= l * F.val[kk];
            }
        }
        const double piv = F.val[diag[i]];
        HK_TRY_CHECK(isfinite(piv) && fabs(piv) > 1e-14 * rowmax, HK_ERR_NUMERIC,
                     "preconditioner ilu0: zero pivot %g at row %lld (the incomplete "
                     "factorisation breaks down there); reorder the unknowns or use pc=sai",
                     piv, (long long)i);
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++)
            marker[F.colind[k]] = -1;
    }
    HK_TRY(hk_trifactor_from_csr(&F, 0, 1, &L));
    HK_TRY(hk_trifactor_from_csr(&F, 1, 0, &U));
    HK_TRY(hk_tri_pc_create(pc, "ilu0", &L, &U));
fail:
    hk_csr_free(&F);
    hk_trifactor_free(&L);
    hk_trifactor_free(&U);
    free(diag);
    free(marker);
    hk_bcsr_free(&Kp);
    return ierr;
}

/* Set-up still runs on the host: K is copied back from the backend first. */
static int ilu0_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    return hk_pc_setup_on_host(pc, K, A, o, ilu0_setup_host);
}

const hk_pc_type hk_pc_ilu0 = {
    .name = "ilu0",
    .summary = "incomplete LU, zero fill; sync-free or level-scheduled triangular solves",
    .options = "pc.tri pc.ordering pc.ilu0.sweeps",
    .symmetric = 0,
    .setup = ilu0_setup,
    .apply = hk_tri_pc_apply,
    .destroy = hk_tri_pc_destroy,
    .describe = hk_tri_pc_describe,
};
