/* hk_mat: one storage format of a block CSR matrix on a backend. The conversion runs on the
 * host (formats.c); the backend then makes its copy (mat_upload). */
#include <stdlib.h>
#include <string.h>

#include "hk_impl.h"

static const char *const format_names[HK_FMT_COUNT] = {
    "csr", "bsr", "ell", "sell", "bell", "sbell", "cusparse-csr", "cusparse-bsr"};

const char *hk_format_name(hk_format f)
{
    return (f >= 0 && f < HK_FMT_COUNT) ? format_names[f] : "?";
}

int hk_format_from_name(const char *name, hk_format *f)
{
    for (int i = 0; i < HK_FMT_COUNT; i++)
        if (!strcmp(name, format_names[i])) {
            *f = (hk_format)i;
            return 0;
        }
    return hk_error_set(HK_ERR_OPTION, __FILE__, __LINE__,
                        "unknown format '%s'; valid formats are csr, bsr, ell, sell, bell, "
                        "sbell, cusparse-csr, cusparse-bsr",
                        name);
}

int hk_mat_create(const hk_backend *be, const hk_bcsr *K, hk_format fmt, hk_precision p,
                  hk_options *o, hk_mat **Aout)
{
    int ierr;
    hk_mat *A = NULL;
    int slice = 32, sigma = 0, tpr = 0;
    *Aout = NULL;
    HK_CHECK(be && K && K->bs >= 1 && K->bs <= 3, HK_ERR_ARG,
             "hk_mat_create: block size must be 1, 2 or 3");
    if (o) {
        HK_CALL(hk_options_get_int(o, "format.slice", &slice));
        HK_CALL(hk_options_get_int(o, "format.sigma", &sigma));
        HK_CALL(hk_options_get_int(o, "format.tpr", &tpr));
    }
    HK_CHECK(slice >= 1 && slice <= 1024, HK_ERR_OPTION,
             "option format.slice=%d is out of range; use 1..1024 (default 32)", slice);
    HK_CHECK(sigma >= 0, HK_ERR_OPTION,
             "option format.sigma=%d must be 0 (sort the whole matrix) or a window of rows",
             sigma);
    HK_CHECK(tpr >= 0 && tpr <= 32 && (tpr & (tpr - 1)) == 0, HK_ERR_OPTION,
             "option format.tpr=%d must be 0 (auto) or a power of two up to 32", tpr);
    HK_CALL(hk_calloc(1, sizeof *A, &A));
    A->be = be;
    A->fmt = fmt;
    A->prec = p;
    A->bs = K->bs;
    A->nrows = K->nbrows * K->bs;
    A->ncols = K->nbcols * K->bs;
    A->tpr = tpr;
    HK_TRY(hk_fmt_from_bcsr(K, fmt, slice, sigma, &A->host));
    HK_TRY(be->mat_upload(A));
    *Aout = A;
    return 0;
fail:
    hk_fmt_free(&A->host);
    free(A);
    return ierr;
}

/* Transitional: until every backend builds formats itself (mat_build), the matrix is copied
 * back and converted on the host. Blocks larger than 3 x 3 are expanded to scalar rows. */
int hk_mat_create_bmat(const hk_bmat *K, hk_format fmt, hk_precision p, hk_options *o,
                       hk_mat **A)
{
    int ierr;
    hk_bcsr Kh = {0}, S = {0};
    *A = NULL;
    HK_CALL(hk_bmat_to_bcsr(K, &Kh));
    if (Kh.bs > 3) {
        const int bs = Kh.bs;
        const int64_t nnzb = Kh.rowptr[Kh.nbrows];
        S.bs = 1;
        S.nbrows = Kh.nbrows * bs;
        S.nbcols = Kh.nbcols * bs;
        HK_TRY(hk_malloc((size_t)(S.nbrows + 1) * sizeof *S.rowptr, &S.rowptr));
        HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * bs * bs * sizeof *S.colind, &S.colind));
        HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * bs * bs * sizeof *S.val, &S.val));
        int64_t k = 0;
        S.rowptr[0] = 0;
        for (int64_t bi = 0; bi < Kh.nbrows; bi++)
            for (int r = 0; r < bs; r++) {
                for (int64_t q = Kh.rowptr[bi]; q < Kh.rowptr[bi + 1]; q++)
                    for (int c = 0; c < bs; c++) {
                        S.colind[k] = (int32_t)(Kh.colind[q] * bs + c);
                        S.val[k++] = Kh.val[(q * bs + r) * bs + c];
                    }
                S.rowptr[bi * bs + r + 1] = k;
            }
    }
    HK_TRY(hk_mat_create(K->be, Kh.bs > 3 ? &S : &Kh, fmt, p, o, A));
fail:
    hk_bcsr_free(&Kh);
    hk_bcsr_free(&S);
    return ierr;
}

void hk_mat_destroy(hk_mat *A)
{
    if (!A) return;
    if (A->be->mat_release) A->be->mat_release(A);
    hk_fmt_free(&A->host);
    free(A);
}

int hk_mat_spmv(hk_mat *A, const hk_vec *x, hk_vec *y)
{
    HK_CHECK(x->n == A->ncols && y->n == A->nrows, HK_ERR_ARG,
             "hk_mat_spmv: sizes differ (matrix %lld x %lld, x %lld, y %lld)",
             (long long)A->nrows, (long long)A->ncols, (long long)x->n, (long long)y->n);
    HK_CHECK(x->prec == A->prec && y->prec == A->prec, HK_ERR_ARG,
             "hk_mat_spmv: vector precision differs from the matrix precision");
    return A->be->mat_spmv(A, x, y);
}

void hk_mat_get_info(const hk_mat *A, hk_mat_info *info)
{
    memset(info, 0, sizeof *info);
    info->format = A->fmt;
    info->precision = A->prec;
    info->bs = A->bs;
    info->nrows = A->nrows;
    info->ncols = A->ncols;
    info->nnz = A->host.nnz;
    info->stored = A->host.stored;
    info->padding = A->host.nnz ? (double)A->host.stored / (double)A->host.nnz : 1.0;
    info->bytes = hk_fmt_bytes(&A->host, A->prec);
}
