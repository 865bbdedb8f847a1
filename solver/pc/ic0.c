/* IC(0): incomplete Cholesky A ~ L L^T with the sparsity of the lower triangle of A (row by
 * row: l_ij = (a_ij - sum_{k<j} l_ik l_jk) / l_jj, l_ii = sqrt(a_ii - sum_k l_ik^2)), set up on
 * the host; applied as two level-scheduled triangular solves (L, then L^T) through the
 * backend's tri ops. Reads the lower triangle only: A must be symmetric. */
#include <math.h>
#include <stdlib.h>

#include "pc_impl.h"

static int ic0_setup_host(hk_pc *pc, const hk_bcsr *K, hk_mat *A, hk_options *o)
{
    int ierr = 0;
    hk_csr F = {0}, Lc = {0}, Ut = {0};
    hk_trifactor L = {0}, U = {0};
    double *w = NULL;
    HK_CHECK(pc->be->tri_create, HK_ERR_UNSUPPORTED,
             "ic0 is not available on the %s backend (it has no triangular solve); use "
             "jacobi, bjacobi, poly, fsai or sai, or backend=cpu",
             pc->be->name);
    HK_CALL(hk_csr_from_bcsr(K, &F));
    HK_TRY(hk_csr_check_symmetric(&F, "ic0"));
    const int64_t n = F.n;
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
                     "preconditioner ic0: non-positive pivot %g at row %lld (diagonal %g); the "
                     "matrix is not SPD or IC(0) breaks down - use pc=jacobi, pc=fsai or "
                     "pc=ilu0 with method=gmres",
                     d, (long long)i, aii);
        Lc.colind[q] = (int32_t)i;
        Lc.val[q++] = sqrt(d);
        Lc.rowptr[i + 1] = q;
        for (int64_t kk = start; kk < q; kk++)
            w[Lc.colind[kk]] = 0;
    }
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
    .summary = "incomplete Cholesky, zero fill; level-scheduled triangular solves",
    .options = "",
    .symmetric = 1,
    .setup = ic0_setup,
    .apply = hk_tri_pc_apply,
    .destroy = hk_tri_pc_destroy,
};
