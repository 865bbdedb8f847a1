/* Static sparse approximate inverse M ~ A^-1 by Frobenius-norm minimisation, as in the GSAI
 * chapter of the GPU Krylov thesis (ch. 5, equations 5.1-5.4 and Fig. 5.1):
 *
 *   min ||A M - I||_F  =  sum_k min ||A m_k - e_k||_2   (one least-squares problem per column)
 *
 * The pattern is the sparsified A (equation 5.3): M(i,j) may be nonzero when
 * |A(i,j)| > (1 - tau) max_j |A(i,j)|, diagonal always (tau = 1: the pattern of A). For column
 * k, J = the rows of the pattern's column k, I = the rows where A(:, J) is nonzero, and
 * A(I, J) m = e_k(I) is solved by Householder QR (the thesis uses Gram-Schmidt on the GPU;
 * Householder is the stabler choice on the host). Columns run in parallel (OpenMP).
 *
 * M is not symmetric: use it with bicgstab or gmres. Applied as one SpMV, z = M r, with M a
 * csr hk_mat in the preconditioner's precision. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

#define SAI_MAX_COLS 400  /* |J| */
#define SAI_MAX_ROWS 4000 /* |I| */

typedef struct {
    hk_mat *M;
    int64_t nnz;
} sai_data;

static void sai_destroy(hk_pc *pc)
{
    sai_data *d = pc->data;
    hk_mat_destroy(d->M);
    free(d);
    pc->data = NULL;
}

static int sai_setup_host(hk_pc *pc, const hk_bcsr *K, hk_mat *A, hk_options *o)
{
    int ierr = 0;
    double tau = 0.9;
    hk_csr F = {0}, Ft = {0}, S = {0}, St = {0}, Mt = {0}, M = {0};
    sai_data *d = NULL;
    HK_CALL(hk_options_get_double(o, "pc.sai.tau", &tau));
    HK_CHECK(tau >= 0 && tau <= 1, HK_ERR_OPTION,
             "option pc.sai.tau=%g is out of range; use 0..1 (default 0.9, 1 = pattern of A)", tau);
    HK_CALL(hk_calloc(1, sizeof *d, &d));
    pc->data = d;
    HK_TRY(hk_csr_from_bcsr(K, &F));
    const int64_t n = F.n;
    HK_TRY(hk_csr_transpose(&F, &Ft)); /* row j of Ft = column j of A */

    /* the pattern S (equation 5.3), then its columns (rows of S^T) */
    HK_TRY(hk_csr_alloc(n, n, F.rowptr[n] + n, &S));
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        double amax = 0;
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++)
            if (fabs(F.val[k]) > amax) amax = fabs(F.val[k]);
        int diag_done = 0;
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++) {
            const int32_t j = F.colind[k];
            if (j > i && !diag_done) { /* a structurally missing diagonal is still kept */
                S.colind[q++] = (int32_t)i;
                diag_done = 1;
            }
            if (j == i || fabs(F.val[k]) > (1 - tau) * amax) {
                S.colind[q++] = j;
                if (j == i) diag_done = 1;
            }
        }
        if (!diag_done) S.colind[q++] = (int32_t)i;
        S.rowptr[i + 1] = q;
    }
    for (int64_t k = 0; k < q; k++)
        S.val[k] = 1;
    HK_TRY(hk_csr_transpose(&S, &St));
    /* M^T row k = column k of M, same pattern as St */
    HK_TRY(hk_csr_alloc(n, n, St.rowptr[n], &Mt));
    memcpy(Mt.rowptr, St.rowptr, (size_t)(n + 1) * sizeof *Mt.rowptr);
    memcpy(Mt.colind, St.colind, (size_t)St.rowptr[n] * sizeof *Mt.colind);

    int64_t bad_col = -1;
    int bad_kind = 0; /* 1 too large, 2 rank deficient, 3 memory */
#pragma omp parallel
    {
        int32_t *loc = malloc((size_t)(n ? n : 1) * sizeof *loc);
        int32_t *rows = malloc(SAI_MAX_ROWS * sizeof *rows);
        double *Ah = malloc((size_t)SAI_MAX_ROWS * SAI_MAX_COLS * sizeof *Ah);
        double *e = malloc(SAI_MAX_ROWS * sizeof *e), *m = malloc(SAI_MAX_COLS * sizeof *m);
        const int ok = loc && rows && Ah && e && m;
        if (ok)
            for (int64_t i = 0; i < n; i++)
                loc[i] = -1;
#pragma omp for schedule(dynamic, 64)
        for (int64_t k = 0; k < n; k++) {
            int kind = ok ? 0 : 3;
            const int64_t j0 = St.rowptr[k], n2 = St.rowptr[k + 1] - j0;
            int64_t n1 = 0;
            if (!kind && n2 > SAI_MAX_COLS) kind = 1;
            /* I = rows where A(:, J) is nonzero; assemble A(I, J) column-major */
            for (int64_t b = 0; !kind && b < n2; b++) {
                const int32_t j = St.colind[j0 + b];
                for (int64_t p = Ft.rowptr[j]; p < Ft.rowptr[j + 1]; p++) {
                    const int32_t i = Ft.colind[p];
                    if (loc[i] < 0) {
                        if (n1 == SAI_MAX_ROWS) {
                            kind = 1;
                            break;
                        }
                        loc[i] = (int32_t)n1;
                        rows[n1++] = i;
                        for (int64_t c = 0; c < n2; c++)
                            Ah[(size_t)c * SAI_MAX_ROWS + loc[i]] = 0;
                    }
                    Ah[(size_t)b * SAI_MAX_ROWS + loc[i]] = Ft.val[p];
                }
            }
            if (!kind) {
                /* compact to leading dimension n1 for the QR */
                for (int64_t c = 1; c < n2; c++)
                    memmove(Ah + (size_t)c * n1, Ah + (size_t)c * SAI_MAX_ROWS,
                            (size_t)n1 * sizeof *Ah);
                int has_k = 0; /* e_k(I) = 0 would give a zero column of M */
                for (int64_t a = 0; a < n1; a++) {
                    e[a] = rows[a] == k;
                    has_k |= rows[a] == k;
                }
                if (!has_k || n1 < n2 || hk_dense_qr_ls((int)n1, (int)n2, Ah, e, m) >= 0) kind = 2;
            }
            for (int64_t a = 0; a < n1; a++)
                loc[rows[a]] = -1;
            if (kind) {
#pragma omp critical(sai_err)
                if (bad_col < 0 || k < bad_col) bad_col = k, bad_kind = kind;
                continue;
            }
            memcpy(Mt.val + j0, m, (size_t)n2 * sizeof *m);
        }
        free(loc), free(rows), free(Ah), free(e), free(m);
    }
    if (bad_col >= 0) {
        if (bad_kind == 1)
            ierr = hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                                "preconditioner sai: the least-squares problem of column %lld "
                                "is too large (over %d x %d); lower pc.sai.tau (now %g)",
                                (long long)bad_col, SAI_MAX_ROWS, SAI_MAX_COLS, tau);
        else if (bad_kind == 2)
            ierr = hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                                "preconditioner sai: A(I,J) of column %lld is rank deficient, so "
                                "A is singular there (an empty or dependent column?); check the "
                                "matrix or use pc.sai.tau=1",
                                (long long)bad_col);
        else
            ierr = hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                                "preconditioner sai: out of memory at column %lld",
                                (long long)bad_col);
        goto fail;
    }
    HK_TRY(hk_csr_transpose(&Mt, &M));
    HK_TRY(hk_pc_mat_like(pc, A, &M, &d->M));
    d->nnz = M.rowptr[n];
fail:
    hk_csr_free(&F);
    hk_csr_free(&Ft);
    hk_csr_free(&S);
    hk_csr_free(&St);
    hk_csr_free(&Mt);
    hk_csr_free(&M);
    return ierr;
}

static int sai_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    sai_data *d = pc->data;
    return hk_mat_spmv(d->M, r, z);
}

/* Set-up still runs on the host: K is copied back from the backend first. */
static int sai_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    return hk_pc_setup_on_host(pc, K, A, o, sai_setup_host);
}

const hk_pc_type hk_pc_sai = {
    .name = "sai",
    .summary = "static sparse approximate inverse, min ||AM - I||_F (nonsymmetric: bicgstab, "
               "gmres)",
    .options = "pc.sai.tau",
    .symmetric = 0,
    .setup = sai_setup,
    .apply = sai_apply,
    .destroy = sai_destroy,
};
