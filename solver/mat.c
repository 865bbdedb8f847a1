/* hk_mat: one storage format of a block CSR matrix on a backend. The block CSR is uploaded
 * once (hk_bmat) and the backend builds the format from it in its own memory (mat_build);
 * the host sees sizes only. */
#include <stdlib.h>
#include <string.h>

#include "hk_impl.h"

static const char *const format_names[HK_FMT_COUNT] = {
    "csr", "bsr", "ell", "sell", "bell", "sbell", "cusparse-csr", "cusparse-bsr", "pcsr"};

const char *hk_format_name(hk_format f)
{
    if (f == HK_FMT_AUTO) return "auto";
    return (f >= 0 && f < HK_FMT_COUNT) ? format_names[f] : "?";
}

hk_format hk_format_auto_by_cache(int bs, size_t bytes, size_t cache)
{
    if (cache > 0 && bytes > cache) return HK_FMT_SBELL;
    return bs == 1 ? HK_FMT_CSR : HK_FMT_BSR;
}

int hk_format_auto(const hk_bmat *K, hk_precision p, hk_format *fmt)
{
    if (K->be->format_auto) return K->be->format_auto(K, p, fmt);
    *fmt = hk_format_auto_by_cache(K->br, 0, 0);
    return 0;
}

size_t hk_format_auto_bytes(const hk_bmat *K, hk_precision p)
{
    const size_t val = p == HK_FP32 ? sizeof(float) : sizeof(double);
    const size_t nnzb = (size_t)K->nnzb;
    return nnzb * (size_t)K->br * (size_t)K->bc * val + nnzb * sizeof(int32_t) +
           ((size_t)K->nbrows + 1) * sizeof(int64_t);
}

int hk_format_from_name(const char *name, hk_format *f)
{
    if (!strcmp(name, "auto")) {
        *f = HK_FMT_AUTO;
        return 0;
    }
    for (int i = 0; i < HK_FMT_COUNT; i++)
        if (!strcmp(name, format_names[i])) {
            *f = (hk_format)i;
            return 0;
        }
    return hk_error_set(HK_ERR_OPTION, __FILE__, __LINE__,
                        "unknown format '%s'; valid formats are auto, csr, bsr, ell, sell, bell, "
                        "sbell, cusparse-csr, cusparse-bsr, pcsr",
                        name);
}

int hk_mat_create(const hk_backend *be, const hk_bcsr *K, hk_format fmt, hk_precision p,
                  hk_options *o, hk_mat **Aout)
{
    int ierr;
    hk_bmat Kd = {0};
    *Aout = NULL;
    HK_CHECK(be && K && K->bs >= 1 && K->bs <= 6, HK_ERR_ARG,
             "hk_mat_create: block size %d is not supported; use 1 to 6", K ? K->bs : 0);
    HK_CALL(hk_fmt_check_bcsr(K));
    HK_CALL(hk_bmat_upload(be, K, &Kd));
    ierr = hk_mat_create_bmat(&Kd, fmt, p, o, Aout);
    hk_bmat_free(&Kd);
    return ierr;
}

int hk_mat_create_bmat(const hk_bmat *K, hk_format fmt, hk_precision p, hk_options *o,
                       hk_mat **Aout)
{
    int ierr;
    hk_mat *A = NULL;
    int slice = 32, sigma = HK_SIGMA_AUTO, tpr = 0, csr_kernel = HK_CSR_AUTO;
    int part = HK_PCSR_PARTITION, pad = HK_PCSR_PAD, prefetch = HK_PCSR_PREFETCH;
    static const char *const csr_kernels[] = {"auto", "thread", "warp", "vector", "adaptive",
                                              NULL};
    *Aout = NULL;
    HK_CHECK(K && K->be, HK_ERR_ARG, "hk_mat_create_bmat: no matrix");
    HK_CHECK(K->br == K->bc && K->br >= 1 && K->br <= 6, HK_ERR_ARG,
             "hk_mat_create: blocks are %d x %d; formats need square blocks of size 1 to 6",
             K->br, K->bc);
    const hk_format asked = fmt;
    if (fmt == HK_FMT_AUTO) HK_CALL(hk_format_auto(K, p, &fmt));
    HK_CHECK(fmt >= 0 && fmt < HK_FMT_COUNT, HK_ERR_ARG, "hk_mat_create: unknown format code %d",
             (int)fmt);
    HK_CHECK(K->nbrows * K->br < INT32_MAX && K->nbcols * K->bc < INT32_MAX, HK_ERR_ARG,
             "matrix of %lld x %lld block rows/columns is out of range (32-bit column indices)",
             (long long)K->nbrows, (long long)K->nbcols);
    if (o) {
        HK_CALL(hk_options_get_int(o, "format.slice", &slice));
        const char *sg = "auto";
        if (hk_options_has(o, "format.sigma"))
            HK_CALL(hk_options_get_string(o, "format.sigma", &sg));
        if (strcmp(sg, "auto") != 0) {
            char *end = NULL;
            const long v = strtol(sg, &end, 10);
            HK_CHECK(end != sg && !*end && v >= 0 && v <= INT32_MAX, HK_ERR_OPTION,
                     "option format.sigma=%s must be auto (the default), 0 (sort the whole "
                     "matrix) or a window of rows",
                     sg);
            sigma = (int)v;
        }
        HK_CALL(hk_options_get_int(o, "format.tpr", &tpr));
        HK_CALL(hk_options_get_choice(o, "format.csr.kernel", csr_kernels, &csr_kernel));
        HK_CALL(hk_options_get_int(o, "format.pcsr.partition", &part));
        HK_CALL(hk_options_get_int(o, "format.pcsr.pad", &pad));
        HK_CALL(hk_options_get_int(o, "format.pcsr.prefetch", &prefetch));
    }
    HK_CHECK(part >= 32 && part <= 1024 && (part & (part - 1)) == 0, HK_ERR_OPTION,
             "option format.pcsr.partition=%d must be a power of two from 32 to 1024 (default "
             "%d)",
             part, HK_PCSR_PARTITION);
    HK_CHECK(pad >= 1 && pad <= 32 && (pad & (pad - 1)) == 0, HK_ERR_OPTION,
             "option format.pcsr.pad=%d must be a power of two from 1 to 32 (default %d)", pad,
             HK_PCSR_PAD);
    HK_CHECK(prefetch >= 1 && prefetch <= 64, HK_ERR_OPTION,
             "option format.pcsr.prefetch=%d is out of range; use 1..64 partitions per block "
             "(default %d)",
             prefetch, HK_PCSR_PREFETCH);
    HK_CHECK(slice >= 1 && slice <= 1024, HK_ERR_OPTION,
             "option format.slice=%d is out of range; use 1..1024 (default 32)", slice);
    HK_CHECK(tpr >= 0 && tpr <= 32 && (tpr & (tpr - 1)) == 0, HK_ERR_OPTION,
             "option format.tpr=%d must be 0 (auto) or a power of two up to 32", tpr);
    HK_CHECK(K->be->mat_build, HK_ERR_UNSUPPORTED,
             "backend %s cannot build storage formats (no mat_build op)", K->be->name);
    HK_CALL(hk_calloc(1, sizeof *A, &A));
    A->be = K->be;
    A->fmt = fmt;
    A->asked = asked;
    A->prec = p;
    A->bs = K->br;
    A->nrows = K->nbrows * K->br;
    A->ncols = K->nbcols * K->bc;
    A->slice = slice;
    A->sigma = sigma;
    A->tpr = tpr;
    A->csr_kernel = csr_kernel;
    A->pcsr_partition = part;
    A->pcsr_pad = pad;
    A->pcsr_prefetch = prefetch;
    HK_TRY(K->be->mat_build(A, K));
    *Aout = A;
    return 0;
fail:
    free(A);
    return ierr;
}

int hk_mat_rebuild(hk_mat *A, const hk_bmat *K)
{
    HK_CHECK(K->be == A->be && K->br == A->bs && K->nbrows * K->br == A->nrows &&
                 K->nbcols * K->bc == A->ncols,
             HK_ERR_ARG,
             "hk_mat_rebuild: the matrix (%lld x %lld, block size %d) does not match the built "
             "one (%lld x %lld, block size %d)",
             (long long)(K->nbrows * K->br), (long long)(K->nbcols * K->bc), K->br,
             (long long)A->nrows, (long long)A->ncols, A->bs);
    if (A->be->mat_refill && A->bdata) {
        const int ierr = A->be->mat_refill(A, K);
        if (ierr != HK_ERR_UNSUPPORTED) return ierr;
        hk_error_clear();
    }
    if (A->be->mat_release) A->be->mat_release(A);
    return A->be->mat_build(A, K);
}

/* Whether the backend converts src (built, fp64) into fp32; an HK_ERR_UNSUPPORTED error if not. */
static int convertible(const hk_mat *src)
{
    HK_CHECK(src->be->mat_convert && src->bdata && src->prec == HK_FP64, HK_ERR_UNSUPPORTED,
             "backend %s cannot convert a %s matrix of format %s into fp32", src->be->name,
             src->prec == HK_FP64 ? "fp64" : "fp32", hk_format_name(src->fmt));
    return 0;
}

int hk_mat_convert(const hk_mat *src, hk_mat **Aout)
{
    hk_mat *A = NULL;
    *Aout = NULL;
    HK_CALL(convertible(src));
    HK_CALL(hk_calloc(1, sizeof *A, &A));
    *A = *src; /* the settings; the built arrays and statistics are mat_convert's */
    A->prec = HK_FP32;
    A->bdata = NULL;
    const int ierr = src->be->mat_convert(A, src);
    if (ierr) {
        free(A);
        return ierr;
    }
    *Aout = A;
    return 0;
}

int hk_mat_convert_values(hk_mat *dst, const hk_mat *src)
{
    HK_CALL(convertible(src));
    /* the layout follows from the pattern, the format and these settings */
    const int same = dst->be == src->be && dst->bdata && dst->prec == HK_FP32 &&
                     dst->fmt == src->fmt && dst->bs == src->bs && dst->nrows == src->nrows &&
                     dst->ncols == src->ncols && dst->nnz == src->nnz &&
                     dst->stored == src->stored && dst->slice == src->slice &&
                     dst->sigma == src->sigma && dst->pcsr_partition == src->pcsr_partition &&
                     dst->pcsr_pad == src->pcsr_pad;
    HK_CHECK(same, HK_ERR_UNSUPPORTED,
             "the fp32 matrix (format %s) does not have the layout of the fp64 one (format %s)",
             hk_format_name(dst->fmt), hk_format_name(src->fmt));
    return src->be->mat_convert(dst, src);
}

void hk_mat_destroy(hk_mat *A)
{
    if (!A) return;
    if (A->be->mat_release) A->be->mat_release(A);
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
    info->nnz = A->nnz;
    info->stored = A->stored;
    info->padding = A->nnz ? (double)A->stored / (double)A->nnz : 1.0;
    info->bytes = A->bytes;
    info->lanes_min = A->lanes_min > 0 ? A->lanes_min : 1;
    info->lanes_max = A->lanes_max > A->lanes_min ? A->lanes_max : info->lanes_min;
}
