/* Storage formats: conversion of a host block CSR matrix to the host arrays of one format
 * (layouts in hk_impl.h, rationale in docs/formats.md), the reference host SpMV of every
 * format, and the bytes one SpMV reads.
 *
 * Scalar formats (csr, ell, sell, cusparse-csr) expand each bs x bs block into bs scalar rows
 * and keep every entry of a block, zeros included, so that stored == nnz for CSR. Their hk_fmt
 * has bs = 1 and nbrows = nrows. Block formats (bsr, bell, sbell, cusparse-bsr) keep bs. */
#include <stdlib.h>
#include <string.h>

#include "hk_impl.h"

/* Scalar or block CSR view that the ELL-type builders read. */
typedef struct fmt_src {
    int b; /* block size of this view */
    int64_t nbrows;
    const int64_t *rowptr;
    const int32_t *colind;
    const double *val; /* b*b per entry, row-major */
} fmt_src;

/* Check the structure of K (sizes, row pointers, column range) so that a bad matrix is an
 * error here and not a crash in a kernel. */
int hk_fmt_check_bcsr(const hk_bcsr *K)
{
    HK_CHECK(K && K->bs >= 1 && K->bs <= 6, HK_ERR_ARG,
             "matrix block size %d is not supported; use 1 to 6", K ? K->bs : 0);
    HK_CHECK(K->nbrows >= 0 && K->nbcols >= 0 && K->nbcols * K->bs < INT32_MAX &&
                 K->nbrows * K->bs < INT32_MAX,
             HK_ERR_ARG,
             "matrix of %lld x %lld block rows/columns is out of range (32-bit column indices)",
             (long long)K->nbrows, (long long)K->nbcols);
    HK_CHECK(K->rowptr && K->rowptr[0] == 0, HK_ERR_ARG,
             "block CSR row pointer must start at 0 (it is missing or starts elsewhere)");
    for (int64_t i = 0; i < K->nbrows; i++) {
        HK_CHECK(K->rowptr[i + 1] >= K->rowptr[i], HK_ERR_ARG,
                 "block CSR row pointer decreases at block row %lld; row pointers must be "
                 "non-decreasing",
                 (long long)i);
        for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++)
            HK_CHECK(K->colind[k] >= 0 && K->colind[k] < K->nbcols, HK_ERR_ARG,
                     "block CSR column index %d in block row %lld is outside 0..%lld",
                     (int)K->colind[k], (long long)i, (long long)K->nbcols - 1);
    }
    return 0;
}

/* Expand K to scalar CSR arrays. */
static int fmt_to_scalar_csr(const hk_bcsr *K, int64_t **rowptr, int32_t **colind, double **val)
{
    int ierr;
    const int bs = K->bs;
    const int64_t n = K->nbrows * bs, nnz = K->rowptr[K->nbrows] * bs * bs;
    int64_t *rp = NULL;
    int32_t *ci = NULL;
    double *v = NULL;
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof *rp, &rp));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *ci, &ci));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *v, &v));
    rp[0] = 0;
    for (int64_t bi = 0; bi < K->nbrows; bi++) {
        const int64_t len = (K->rowptr[bi + 1] - K->rowptr[bi]) * bs;
        for (int r = 0; r < bs; r++)
            rp[bi * bs + r + 1] = rp[bi * bs + r] + len;
    }
#pragma omp parallel for schedule(static)
    for (int64_t bi = 0; bi < K->nbrows; bi++)
        for (int r = 0; r < bs; r++) {
            int64_t p = rp[bi * bs + r];
            for (int64_t k = K->rowptr[bi]; k < K->rowptr[bi + 1]; k++)
                for (int c = 0; c < bs; c++) {
                    ci[p] = K->colind[k] * bs + c;
                    v[p++] = K->val[((size_t)k * bs + r) * bs + c];
                }
        }
    *rowptr = rp;
    *colind = ci;
    *val = v;
    return 0;
fail:
    free(rp);
    free(ci);
    free(v);
    return ierr;
}

/* ELL (b = 1) / BELL: column-major over (block) rows, width = longest row. */
static int fmt_build_ell(const fmt_src *s, hk_fmt *F)
{
    const int b2 = s->b * s->b;
    const int64_t n = s->nbrows;
    int64_t W = 0;
    for (int64_t i = 0; i < n; i++)
        if (s->rowptr[i + 1] - s->rowptr[i] > W) W = s->rowptr[i + 1] - s->rowptr[i];
    const size_t slots = (size_t)W * (size_t)n;
    F->width = (int32_t)W;
    F->stored = (int64_t)slots * b2;
    HK_CALL(hk_malloc((slots ? slots : 1) * sizeof *F->colind, &F->colind));
    HK_CALL(hk_calloc((slots ? slots : 1) * b2, sizeof *F->val, &F->val));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const int64_t b = s->rowptr[i], len = s->rowptr[i + 1] - b;
        for (int64_t k = 0; k < W; k++) {
            const size_t slot = (size_t)k * n + i;
            F->colind[slot] = k < len ? s->colind[b + k] : -1;
            if (k < len)
                for (int e = 0; e < b2; e++)
                    F->val[((size_t)k * b2 + e) * n + i] = s->val[(size_t)(b + k) * b2 + e];
        }
    }
    return 0;
}

typedef struct fmt_key {
    int64_t len, row;
} fmt_key;

static int fmt_key_cmp(const void *a, const void *b)
{
    const fmt_key *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1; /* longer first */
    return (x->row > y->row) - (x->row < y->row);          /* stable */
}

int64_t hk_sigma_auto(const int64_t *count, int64_t L, int64_t n, int S)
{
    const int64_t window = 128 * (int64_t)S;
    if (n <= window) return n > 0 ? n : 1;
    int64_t mode = 0;
    for (int64_t l = 0; l <= L; l++)
        if (count[l] > mode) mode = count[l];
    return 2 * mode >= n ? n : window;
}

/* The automatic window from K's row lengths (host arrays). */
static int sigma_from_rows(const int64_t *rowptr, int64_t n, int S, int *sigma)
{
    int64_t L = 0, *count = NULL;
    for (int64_t i = 0; i < n; i++)
        if (rowptr[i + 1] - rowptr[i] > L) L = rowptr[i + 1] - rowptr[i];
    HK_CALL(hk_calloc((size_t)L + 1, sizeof *count, &count));
    for (int64_t i = 0; i < n; i++)
        count[rowptr[i + 1] - rowptr[i]]++;
    *sigma = (int)hk_sigma_auto(count, L, n, S);
    free(count);
    return 0;
}

int hk_sigma_resolve(const int64_t *rowptr, int64_t n, int S, int *sigma)
{
    if (*sigma == HK_SIGMA_AUTO) return sigma_from_rows(rowptr, n, S, sigma);
    return 0;
}

/* SELL (b = 1) / SBELL: rows sorted by length (descending) inside windows of sigma rows,
 * slices of S rows, each slice ELL column-major with its own width. */
static int fmt_build_sliced(const fmt_src *s, int S, int sigma, hk_fmt *F)
{
    int ierr = 0;
    const int b2 = s->b * s->b;
    const int64_t n = s->nbrows;
    const int64_t nsl = (n + S - 1) / S;
    fmt_key *keys = NULL;
    F->slice = S;
    F->sigma = sigma;
    F->nslices = nsl;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *keys, &keys));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *F->perm, &F->perm));
    HK_TRY(hk_malloc((size_t)(nsl + 1) * sizeof *F->slice_ptr, &F->slice_ptr));
    HK_TRY(hk_malloc((size_t)(nsl ? nsl : 1) * sizeof *F->slice_width, &F->slice_width));
    for (int64_t i = 0; i < n; i++)
        keys[i] = (fmt_key){s->rowptr[i + 1] - s->rowptr[i], i};
    for (int64_t w = 0; w < n; w += sigma)
        qsort(keys + w, (size_t)(n - w < sigma ? n - w : sigma), sizeof *keys, fmt_key_cmp);
    for (int64_t i = 0; i < n; i++)
        F->perm[i] = (int32_t)keys[i].row;
    F->slice_ptr[0] = 0;
    for (int64_t sl = 0; sl < nsl; sl++) {
        int64_t W = 0;
        for (int64_t j = sl * S; j < n && j < (sl + 1) * S; j++)
            if (keys[j].len > W) W = keys[j].len;
        F->slice_width[sl] = (int32_t)W;
        F->slice_ptr[sl + 1] = F->slice_ptr[sl] + W * S;
    }
    const size_t slots = (size_t)F->slice_ptr[nsl];
    F->stored = (int64_t)slots * b2;
    HK_TRY(hk_malloc((slots ? slots : 1) * sizeof *F->colind, &F->colind));
    HK_TRY(hk_calloc((slots ? slots : 1) * b2, sizeof *F->val, &F->val));
#pragma omp parallel for schedule(static)
    for (int64_t sl = 0; sl < nsl; sl++) {
        const int64_t base = F->slice_ptr[sl], W = F->slice_width[sl];
        for (int64_t j = 0; j < S; j++) {
            const int64_t nr = sl * S + j;
            const int64_t old = nr < n ? F->perm[nr] : -1;
            const int64_t b = old >= 0 ? s->rowptr[old] : 0;
            const int64_t len = old >= 0 ? s->rowptr[old + 1] - b : 0;
            for (int64_t k = 0; k < W; k++) {
                F->colind[base + k * S + j] = k < len ? s->colind[b + k] : -1;
                if (k < len)
                    for (int e = 0; e < b2; e++)
                        F->val[(size_t)(base + k * S) * b2 + (size_t)e * S + j] =
                            s->val[(size_t)(b + k) * b2 + e];
            }
        }
    }
fail:
    free(keys);
    return ierr;
}

/* PCSR (GPU Krylov thesis, section 3.4.2) from a scalar CSR view: rows padded to multiples of
 * pad, the padded entries cut into partitions of P, the first row of each partition and the
 * split vector. Written straight from the layout comment in hk_impl.h. */
static int fmt_build_pcsr(const fmt_src *s, int P, int pad, hk_fmt *F)
{
    const int64_t n = s->nbrows;
    F->partition = P;
    F->pad = pad;
    HK_CALL(hk_malloc((size_t)(n + 1) * sizeof *F->rowptr, &F->rowptr));
    F->rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t len = s->rowptr[i + 1] - s->rowptr[i];
        F->rowptr[i + 1] = F->rowptr[i] + (len + pad - 1) / pad * pad;
    }
    const int64_t total = F->rowptr[n];
    /* every row has an owner: at least one partition when there are rows */
    F->nparts = n > 0 ? ((total + P - 1) / P > 0 ? (total + P - 1) / P : 1) : 0;
    F->stored = F->nparts * P;
    const size_t slots = (size_t)F->stored;
    HK_CALL(hk_malloc((slots ? slots : 1) * sizeof *F->colind, &F->colind));
    HK_CALL(hk_calloc(slots ? slots : 1, sizeof *F->val, &F->val));
    HK_CALL(hk_malloc((size_t)(F->nparts + 1) * sizeof *F->part_row, &F->part_row));
    HK_CALL(hk_malloc((size_t)(F->nparts ? F->nparts : 1) * sizeof *F->split, &F->split));
    for (size_t k = 0; k < slots; k++)
        F->colind[k] = -1;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = s->rowptr[i]; k < s->rowptr[i + 1]; k++) {
            F->colind[F->rowptr[i] + k - s->rowptr[i]] = s->colind[k];
            F->val[F->rowptr[i] + k - s->rowptr[i]] = s->val[k];
        }
    int64_t i = 0;
    for (int64_t p = 0; p < F->nparts; p++) {
        while (i < n && F->rowptr[i] < p * P)
            i++;
        F->part_row[p] = (int32_t)i;
        const int64_t end = F->rowptr[i] < (p + 1) * P ? F->rowptr[i] : (p + 1) * P;
        F->split[p] = p == 0 ? 0 : (int32_t)(end - p * P);
    }
    F->part_row[F->nparts] = (int32_t)n;
    return 0;
}

int hk_fmt_pcsr_from_bcsr(const hk_bcsr *K, int partition, int pad, hk_fmt *F)
{
    int ierr = 0;
    int64_t *srp = NULL;
    int32_t *sci = NULL;
    double *sv = NULL;
    memset(F, 0, sizeof *F);
    HK_CALL(hk_fmt_check_bcsr(K));
    if (partition <= 0) partition = HK_PCSR_PARTITION;
    if (pad <= 0) pad = HK_PCSR_PAD;
    HK_CHECK(partition >= 32 && partition <= 1024 && !(partition & (partition - 1)) &&
                 pad <= 32 && !(pad & (pad - 1)),
             HK_ERR_OPTION,
             "PCSR partition %d and padding factor %d: use a power of two from 32 to 1024 and "
             "one from 1 to 32",
             partition, pad);
    const int bs = K->bs;
    F->fmt = HK_FMT_PCSR;
    F->bs = 1;
    F->nrows = F->nbrows = K->nbrows * bs;
    F->ncols = F->nbcols = K->nbcols * bs;
    F->nnz = K->rowptr[K->nbrows] * bs * bs;
    fmt_src src = {1, K->nbrows, K->rowptr, K->colind, K->val};
    if (bs > 1) {
        HK_TRY(fmt_to_scalar_csr(K, &srp, &sci, &sv));
        src = (fmt_src){1, F->nrows, srp, sci, sv};
    }
    HK_TRY(fmt_build_pcsr(&src, partition, pad, F));
fail:
    free(srp);
    free(sci);
    free(sv);
    if (ierr) hk_fmt_free(F);
    return ierr;
}

int hk_fmt_from_bcsr(const hk_bcsr *K, hk_format fmt, int slice, int sigma, hk_fmt *F)
{
    if (fmt == HK_FMT_PCSR) return hk_fmt_pcsr_from_bcsr(K, 0, 0, F);
    int ierr = 0;
    int64_t *srp = NULL;
    int32_t *sci = NULL;
    double *sv = NULL;
    memset(F, 0, sizeof *F);
    HK_CALL(hk_fmt_check_bcsr(K));
    HK_CHECK(fmt >= 0 && fmt < HK_FMT_COUNT, HK_ERR_ARG, "unknown format code %d", (int)fmt);
    if (slice <= 0) slice = 32;
    HK_CHECK(slice <= 1024, HK_ERR_OPTION,
             "slice size %d is too large; use format.slice between 1 and 1024", slice);
    const int bs = K->bs;
    const int64_t nnzb = K->rowptr[K->nbrows];
    const int scalar =
        fmt == HK_FMT_CSR || fmt == HK_FMT_ELL || fmt == HK_FMT_SELL || fmt == HK_FMT_CUSPARSE_CSR;
    F->fmt = fmt;
    F->nrows = K->nbrows * bs;
    F->ncols = K->nbcols * bs;
    F->nnz = nnzb * bs * bs;
    F->bs = scalar ? 1 : bs;
    F->nbrows = scalar ? F->nrows : K->nbrows;
    F->nbcols = scalar ? F->ncols : K->nbcols;

    fmt_src src = {bs, K->nbrows, K->rowptr, K->colind, K->val};
    if (scalar && bs > 1) {
        HK_TRY(fmt_to_scalar_csr(K, &srp, &sci, &sv));
        src = (fmt_src){1, F->nrows, srp, sci, sv};
    }
    if (sigma == HK_SIGMA_AUTO && (fmt == HK_FMT_SELL || fmt == HK_FMT_SBELL))
        HK_TRY(hk_sigma_resolve(src.rowptr, src.nbrows, slice, &sigma));
    if (sigma <= 0 || sigma > src.nbrows) sigma = (int)(src.nbrows > 0 ? src.nbrows : 1);

    switch (fmt) {
    case HK_FMT_CSR:
    case HK_FMT_CUSPARSE_CSR:
    case HK_FMT_BSR:
    case HK_FMT_CUSPARSE_BSR: {
        if (srp) { /* take over the expanded arrays */
            F->rowptr = srp, F->colind = sci, F->val = sv;
            srp = NULL, sci = NULL, sv = NULL;
        } else {
            const int64_t nb = src.rowptr[src.nbrows];
            const size_t b2 = (size_t)src.b * src.b;
            HK_TRY(hk_malloc((size_t)(src.nbrows + 1) * sizeof *F->rowptr, &F->rowptr));
            HK_TRY(hk_malloc((size_t)(nb ? nb : 1) * sizeof *F->colind, &F->colind));
            HK_TRY(hk_malloc((size_t)(nb ? nb : 1) * b2 * sizeof *F->val, &F->val));
            memcpy(F->rowptr, src.rowptr, (size_t)(src.nbrows + 1) * sizeof *F->rowptr);
            memcpy(F->colind, src.colind, (size_t)nb * sizeof *F->colind);
            memcpy(F->val, src.val, (size_t)nb * b2 * sizeof *F->val);
        }
        F->stored = F->nnz;
        break;
    }
    case HK_FMT_ELL:
    case HK_FMT_BELL:
        HK_TRY(fmt_build_ell(&src, F));
        break;
    case HK_FMT_SELL:
    case HK_FMT_SBELL:
        HK_TRY(fmt_build_sliced(&src, slice, sigma, F));
        break;
    default:
        HK_TRY_CHECK(0, HK_ERR_INTERNAL, "format %d has no conversion", (int)fmt);
    }
    free(srp);
    free(sci);
    free(sv);
    return 0;
fail:
    free(srp);
    free(sci);
    free(sv);
    hk_fmt_free(F);
    return ierr;
}

void hk_fmt_free(hk_fmt *F)
{
    if (!F) return;
    free(F->rowptr);
    free(F->colind);
    free(F->val);
    free(F->slice_ptr);
    free(F->slice_width);
    free(F->perm);
    free(F->part_row);
    free(F->split);
    memset(F, 0, sizeof *F);
}

/* Straightforward serial SpMV of every layout, written from the hk_impl.h comment alone: the
 * reference the optimised backends are tested against. */
void hk_fmt_spmv_host(const hk_fmt *F, const double *x, double *y)
{
    const int b = F->bs, b2 = b * b;
    const int64_t n = F->nbrows;
    for (int64_t i = 0; i < F->nrows; i++)
        y[i] = 0;
    switch (F->fmt) {
    case HK_FMT_PCSR: /* padded rows; padding has column -1 */
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++)
                if (F->colind[k] >= 0) y[i] += F->val[k] * x[F->colind[k]];
        break;
    case HK_FMT_CSR:
    case HK_FMT_CUSPARSE_CSR:
    case HK_FMT_BSR:
    case HK_FMT_CUSPARSE_BSR:
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++)
                for (int r = 0; r < b; r++)
                    for (int c = 0; c < b; c++)
                        y[i * b + r] +=
                            F->val[(size_t)k * b2 + r * b + c] * x[(size_t)F->colind[k] * b + c];
        break;
    case HK_FMT_ELL:
    case HK_FMT_BELL:
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < F->width; k++) {
                const int32_t col = F->colind[(size_t)k * n + i];
                if (col < 0) continue;
                for (int r = 0; r < b; r++)
                    for (int c = 0; c < b; c++)
                        y[i * b + r] +=
                            F->val[((size_t)k * b2 + r * b + c) * n + i] * x[(size_t)col * b + c];
            }
        break;
    case HK_FMT_SELL:
    case HK_FMT_SBELL: {
        const int64_t S = F->slice;
        for (int64_t sl = 0; sl < F->nslices; sl++)
            for (int64_t j = 0; j < S && sl * S + j < n; j++) {
                const int64_t old = F->perm[sl * S + j];
                for (int64_t k = 0; k < F->slice_width[sl]; k++) {
                    const int64_t slot = F->slice_ptr[sl] + k * S + j;
                    const int32_t col = F->colind[slot];
                    if (col < 0) continue;
                    for (int r = 0; r < b; r++)
                        for (int c = 0; c < b; c++)
                            y[old * b + r] += F->val[(size_t)(F->slice_ptr[sl] + k * S) * b2 +
                                                     (size_t)(r * b + c) * S + j] *
                                              x[(size_t)col * b + c];
                }
            }
        break;
    }
    default:
        break;
    }
}

size_t hk_fmt_bytes(const hk_fmt *F, hk_precision p)
{
    return hk_fmt_bytes_shape(
        F, F->nslices > 0 && F->slice_width ? F->slice_width[F->nslices - 1] : 0, p);
}

size_t hk_fmt_bytes_shape(const hk_fmt *F, int32_t last_width, hk_precision p)
{
    const size_t vb = p == HK_FP64 ? sizeof(double) : sizeof(float);
    const size_t b2 = (size_t)F->bs * F->bs;
    size_t bytes = (size_t)F->stored * vb;                        /* values, padding included */
    bytes += (size_t)F->stored / (b2 ? b2 : 1) * sizeof(int32_t); /* one index per (block) slot */
    switch (F->fmt) {
    case HK_FMT_CSR:
    case HK_FMT_CUSPARSE_CSR:
    case HK_FMT_BSR:
    case HK_FMT_CUSPARSE_BSR:
        bytes += (size_t)(F->nbrows + 1) * sizeof(int64_t);
        break;
    case HK_FMT_PCSR: /* row pointers, first row of each partition, split vector */
        bytes += (size_t)(F->nbrows + 1) * sizeof(int64_t) +
                 (size_t)(2 * F->nparts + 1) * sizeof(int32_t);
        break;
    case HK_FMT_SELL:
    case HK_FMT_SBELL: {
        bytes += (size_t)(F->nslices + 1) * sizeof(int64_t) + (size_t)F->nslices * sizeof(int32_t) +
                 (size_t)F->nbrows * sizeof(int32_t);
        /* the rows that pad the last slice to S are stored but never read */
        const int64_t tail = F->nslices * F->slice - F->nbrows;
        if (F->nslices > 0 && tail > 0)
            bytes -=
                (size_t)tail * (size_t)last_width * (b2 * vb + sizeof(int32_t));
        break;
    }
    default:
        break;
    }
    return bytes;
}
