/* The device assembly and recovery emulated on the host: fem_driver.inc with host memory and
 * every kernel's body run for each thread index in turn (a valid schedule of the kernels,
 * whose threads never depend on one another's order). It is what the CPU tests check the
 * device decomposition with (pattern, per-block element matrices, row gathering, chunks,
 * elimination, recovery), against assembly/ and postproc/; K lives in the cpu backend's
 * memory, so the solver adopts it as it adopts a device's. */
#include <stdlib.h>
#include <string.h>

#include "fem_device.h"

static int dv_alloc(void **p, size_t bytes)
{
    *p = malloc(bytes);
    HK_CHECK(*p, HK_ERR_MEMORY, "out of host memory for %.3f GB (emulated device assembly)",
             bytes / 1e9);
    return 0;
}

static void dv_free(void *p)
{
    free(p);
}

static int dv_up(void *d, const void *h, size_t bytes)
{
    if (bytes) memcpy(d, h, bytes);
    return 0;
}

static int dv_down(void *h, const void *d, size_t bytes)
{
    if (bytes) memcpy(h, d, bytes);
    return 0;
}

static int dv_down_list(const hk_fem_down *list, int n)
{
    for (int j = 0; j < n; j++)
        HK_CALL(dv_down(list[j].host, list[j].dev, list[j].bytes));
    return 0;
}

static int dv_copy(void *d, const void *s, size_t bytes)
{
    if (bytes) memcpy(d, s, bytes);
    return 0;
}

static int dv_zero(void *d, size_t bytes)
{
    if (bytes) memset(d, 0, bytes);
    return 0;
}

static int dv_sync(void)
{
    return 0;
}

size_t hk_fem_emul_free_bytes = 0;

static int dv_free_bytes(size_t *free_bytes)
{
    *free_bytes = hk_fem_emul_free_bytes ? hk_fem_emul_free_bytes : (size_t)1 << 62;
    return 0;
}

/* A chunk's budget: the caller's, or 256 MB. */
static size_t dv_chunk_bytes(size_t free_bytes, size_t asked)
{
    (void)free_bytes;
    return asked ? asked : (size_t)256 << 20;
}

static const hk_backend *dv_backend(void)
{
    const hk_backend *be = NULL;
    hk_backend_get("cpu", &be);
    return be;
}

int hk_fem_emul_reverse = 0;

/* Thread k of n: in order, or from the last (hk_fem_emul_reverse). */
static int64_t thread_index(int64_t k, int64_t n)
{
    return hk_fem_emul_reverse ? n - 1 - k : k;
}

#define HK_FEM_KERNEL(name, args_t, body)                                                          \
    static int name(int64_t n, const args_t *a)                                                    \
    {                                                                                              \
        for (int64_t k = 0; k < n; k++)                                                            \
            body(thread_index(k, n), a);                                                           \
        return 0;                                                                                  \
    }

#define HK_FEM_ROW_KERNEL(name, args_t, range, body)                                               \
    static int name(int64_t rows, int lanes, const args_t *a)                                      \
    {                                                                                              \
        for (int64_t k = 0; k < rows; k++) {                                                       \
            const int64_t i = hk_fem_row_at(a->order, thread_index(k, rows));                      \
            int64_t c0, c1;                                                                        \
            range(i, a, &c0, &c1);                                                                 \
            for (int64_t c = c0; c < c1; c++)                                                      \
                for (int l = 0; l < lanes; l++)                                                    \
                    body(i, c, (int)thread_index(l, lanes), a, a->flags);                          \
        }                                                                                          \
        return 0;                                                                                  \
    }

#define HK_FEM_DRIVER hk_fem_emul_driver
#define HK_FEM_DRIVER_NAME "emulated"
#define HK_FEM_EXTERN

#include "fem_driver.inc"
