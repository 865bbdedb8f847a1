/* Static sparse approximate inverse M ~ A^-1 by Frobenius-norm minimisation, as in the GSAI
 * chapter of the GPU Krylov thesis (ch. 5, equations 5.1-5.4 and Fig. 5.1):
 *
 *   min ||A M - I||_F  =  sum_k min ||A m_k - e_k||_2   (one least-squares problem per column)
 *
 * The pattern is the sparsified A (equation 5.3): M(i,k) may be nonzero when |A(i,k)| >
 * (1 - tau) max, diagonal always (tau = 1: the pattern of A). The maximum is column k's,
 * max_i |A(i,k)|, as the thesis's "Find J" step computes it (pc.sai.max=column, the default),
 * or row i's, max_j |A(i,j)|, as equation 5.3 is written (pc.sai.max=row). For column k,
 * J = the rows of the pattern's column k, I = the rows where A(:, J) is nonzero, and
 * A(I, J) m = e_k(I) is solved as in the thesis's Fig. 5.4 by classical Gram-Schmidt,
 * m = R^-1 Q^T e_k(I) (pc.sai.qr=gram-schmidt, the default), or by Householder QR
 * (pc.sai.qr=householder). Columns run in parallel.
 *
 * M is not symmetric: use it with bicgstab or gmres. Applied as one SpMV, z = M r, with M an
 * hk_mat in the solver's format and the preconditioner's precision.
 *
 * The set-up runs on the backend where K lives: the pattern and the least-squares columns
 * through its sai_pattern and sai_factor ops (rules: solver/cpu/cpu_fsai.c; CUDA:
 * cuda/cuda_fsai.cu); a backend without them refuses pc=sai with a message. */
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

static const char *const sai_max_names[] = {"row", "column", NULL};
static const char *const sai_qr_names[] = {"householder", "gram-schmidt", NULL};

static void sai_destroy(hk_pc *pc)
{
    sai_data *d = pc->data;
    hk_mat_destroy(d->M);
    free(d);
    pc->data = NULL;
}

static int sai_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    /* the thesis's variant by default: the same iterations as the row maximum with
     * Householder on the generated convection-diffusion matrices (a few per cent fewer on the
     * recirculating flow) at half the CPU set-up (docs/preconditioners.md) */
    int ierr = 0, colmax = 1, qr = HK_SAI_GRAM_SCHMIDT;
    double tau = 0.9;
    hk_bmat Kx = {0}, Kt = {0}, Mt = {0}, M = {0};
    hk_graph St = {0};
    hk_setup_fault f = {-1, 0};
    sai_data *d = NULL;
    const hk_backend_ops *be = K->be;
    HK_CALL(hk_options_get_double(o, "pc.sai.tau", &tau));
    HK_CALL(hk_options_get_choice(o, "pc.sai.max", sai_max_names, &colmax));
    HK_CALL(hk_options_get_choice(o, "pc.sai.qr", sai_qr_names, &qr));
    HK_CHECK(tau >= 0 && tau <= 1, HK_ERR_OPTION,
             "option pc.sai.tau=%g is out of range; use 0..1 (default 0.9, 1 = pattern of A)", tau);
    HK_CALL(hk_calloc(1, sizeof *d, &d));
    pc->data = d;
    /* columns of A are rows of the scalar transpose */
    HK_TRY(hk_pc_bmat_expand(K, &Kx));
    HK_TRY(hk_pc_bmat_transpose(&Kx, &Kt));
    hk_bmat_free(&Kx);
    HK_TRY_CHECK(be->sai_pattern && be->sai_factor, HK_ERR_UNSUPPORTED,
                 "pc=sai is not available on the %s backend (no sai_pattern/sai_factor ops)",
                 be->name);
    HK_TRY(be->sai_pattern(K, &Kt, tau, colmax, &St));
    HK_TRY(be->sai_factor(&Kt, &St, SAI_MAX_ROWS, SAI_MAX_COLS, qr, &Mt, &f));
    if (f.row >= 0) {
        if (f.reason == HK_FAULT_TOO_LARGE)
            ierr = hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                                "preconditioner sai: the least-squares problem of column %lld "
                                "is too large (over %d x %d); lower pc.sai.tau (now %g)",
                                (long long)f.row, SAI_MAX_ROWS, SAI_MAX_COLS, tau);
        else if (f.reason == HK_FAULT_MEMORY)
            ierr = hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                                "preconditioner sai: out of memory at column %lld",
                                (long long)f.row);
        else
            ierr = hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                                "preconditioner sai: A(I,J) of column %lld is rank deficient, so "
                                "A is singular there (an empty or dependent column?); check the "
                                "matrix or use pc.sai.tau=1%s",
                                (long long)f.row,
                                qr == HK_SAI_GRAM_SCHMIDT ? " or pc.sai.qr=householder" : "");
        goto fail;
    }
    HK_TRY(hk_pc_bmat_transpose(&Mt, &M));
    HK_TRY(hk_pc_mat_from_bmat(pc, A, &M, &d->M));
    d->nnz = M.nnzb;
fail:
    hk_bmat_free(&Kx);
    hk_bmat_free(&Kt);
    hk_bmat_free(&Mt);
    hk_bmat_free(&M);
    hk_graph_free(&St);
    return ierr;
}

static int sai_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    sai_data *d = pc->data;
    return hk_mat_spmv(d->M, r, z);
}

int64_t hk_pc_sai_nnz(const hk_pc *pc)
{
    return pc && pc->type == &hk_pc_sai && pc->data ? ((const sai_data *)pc->data)->nnz : -1;
}

const hk_pc_type hk_pc_sai = {
    .name = "sai",
    .summary = "static sparse approximate inverse, min ||AM - I||_F (nonsymmetric: bicgstab, "
               "gmres)",
    .options = "pc.sai.tau pc.sai.max pc.sai.qr",
    .symmetric = 0,
    .setup = sai_setup,
    .apply = sai_apply,
    .apply_capturable = 1,
    .destroy = sai_destroy,
};
