/* Large uploads on the cuda backend go through pinned staging buffers (cuda/cuda_core.cu):
 * sizes around and across the staging chunk arrive intact, and the source may be changed or
 * freed as soon as copy_to returns. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

static void test_staged_upload(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cuda", &be));
    const size_t mb = (size_t)1 << 20;
    const size_t sizes[] = {1, 4 * 32 * mb - 8, 4 * 32 * mb, 4 * 32 * mb + 8, 300 * mb + 24};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        const size_t n = sizes[t] / sizeof(double) ? sizes[t] / sizeof(double) : 1;
        double *h = malloc(n * sizeof *h), *back = malloc(n * sizeof *back);
        void *d = NULL;
        CU_ASSERT_FATAL(h && back);
        for (size_t i = 0; i < n; i++)
            h[i] = (double)i * 0.5 + (double)t;
        HK_ASSERT_OK(be->alloc(&d, n * sizeof *h));
        HK_ASSERT_OK(be->copy_to(d, h, n * sizeof *h));
        memset(h, 0xff, n * sizeof *h); /* the source may change at once */
        HK_ASSERT_OK(be->copy_from(back, d, n * sizeof *h));
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += back[i] != (double)i * 0.5 + (double)t;
        CU_ASSERT_EQUAL(bad, 0);
        be->dealloc(d);
        free(h);
        free(back);
    }
}

HK_DEVICE_SUITE(cuda_upload, {"staged uploads arrive intact, the source is free at once", test_staged_upload})
