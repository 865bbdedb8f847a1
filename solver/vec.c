/* hk_vec: a vector of fp64 or fp32 values in a backend's memory. */
#include <stdlib.h>

#include "hk_impl.h"

int hk_vec_create(const hk_backend *be, int64_t n, hk_precision p, hk_vec **v)
{
    int ierr;
    hk_vec *x = NULL;
    *v = NULL;
    HK_CHECK(be && n >= 0, HK_ERR_ARG, "hk_vec_create: invalid backend or size %lld",
             (long long)n);
    HK_CALL(hk_calloc(1, sizeof *x, &x));
    x->be = be;
    x->n = n;
    x->prec = p;
    HK_TRY(be->alloc(&x->data, (size_t)n * (p == HK_FP64 ? sizeof(double) : sizeof(float))));
    *v = x;
    return 0;
fail:
    free(x);
    return ierr;
}

void hk_vec_destroy(hk_vec *v)
{
    if (!v) return;
    if (v->data) v->be->dealloc(v->data);
    free(v);
}

int64_t hk_vec_size(const hk_vec *v)
{
    return v->n;
}

int hk_vec_upload(hk_vec *v, const double *host)
{
    if (v->prec == HK_FP64) return v->be->copy_to(v->data, host, (size_t)v->n * sizeof(double));
    float *tmp;
    HK_CALL(hk_malloc((size_t)v->n * sizeof(float), &tmp));
    for (int64_t i = 0; i < v->n; i++) tmp[i] = (float)host[i];
    int ierr = v->be->copy_to(v->data, tmp, (size_t)v->n * sizeof(float));
    free(tmp);
    return ierr;
}

int hk_vec_download(const hk_vec *v, double *host)
{
    if (v->prec == HK_FP64)
        return v->be->copy_from(host, v->data, (size_t)v->n * sizeof(double));
    float *tmp;
    HK_CALL(hk_malloc((size_t)v->n * sizeof(float), &tmp));
    int ierr = v->be->copy_from(tmp, v->data, (size_t)v->n * sizeof(float));
    for (int64_t i = 0; !ierr && i < v->n; i++) host[i] = tmp[i];
    free(tmp);
    return ierr;
}
