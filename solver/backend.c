/* Backend registry: every backend is listed by name, built or not, so "cuda" in a CPU-only
 * build answers "not built with CUDA" instead of "unknown". Anchor: libCEED
 * backends/ceed-backend-list.h. */
#include <stdio.h>
#include <string.h>

#include "hk_impl.h"

#ifndef HOOKE_HAVE_CUDA
static int cuda_missing_probe(void)
{
    return hk_error_set(HK_ERR_NOT_BUILT, __FILE__, __LINE__,
                        "backend 'cuda' is not available: this hooke was built without CUDA "
                        "(rebuild with nvcc on the PATH and -DHOOKE_WITH_CUDA=ON), use "
                        "--backend cpu");
}
static void cuda_missing_describe(FILE *f)
{
    fprintf(f, "backend cuda: not built (no CUDA compiler at build time)\n");
}
static const hk_backend_ops hk_backend_cuda_missing = {
    .name = "cuda", .probe = cuda_missing_probe, .describe = cuda_missing_describe};
#endif

static const hk_backend_ops *const registry[] = {
    &hk_backend_cpu,
#ifdef HOOKE_HAVE_CUDA
    &hk_backend_cuda,
#else
    &hk_backend_cuda_missing,
#endif
    NULL};

static const char *const names[] = {"cpu", "cuda", NULL};

const char *const *hk_backend_list(void)
{
    return names;
}

int hk_backend_get(const char *name, const hk_backend **be)
{
    *be = NULL;
    if (!name || !strcmp(name, "auto")) {
        for (int i = 1; registry[i]; i++) {
            if (registry[i]->probe() == 0) {
                *be = registry[i];
                return 0;
            }
        }
        hk_error_clear();
        *be = registry[0];
        return 0;
    }
    for (int i = 0; registry[i]; i++) {
        if (!strcmp(registry[i]->name, name)) {
            HK_CALL(registry[i]->probe());
            *be = registry[i];
            return 0;
        }
    }
    return hk_error_set(HK_ERR_OPTION, __FILE__, __LINE__,
                        "unknown backend '%s'; valid backends are auto, cpu, cuda", name);
}

const char *hk_backend_name(const hk_backend *be)
{
    return be ? be->name : "(none)";
}

int hk_backend_alloc(const hk_backend *be, size_t bytes, void **p)
{
    HK_CHECK(be && p, HK_ERR_ARG, "hk_backend_alloc: no backend or no pointer");
    *p = NULL;
    return be->alloc(p, bytes ? bytes : 8);
}

void hk_backend_free(const hk_backend *be, void *p)
{
    if (be && p) be->dealloc(p);
}

void hk_backend_describe(const hk_backend *be, FILE *f)
{
    if (be && be->describe) be->describe(f);
}

void hk_backends_describe_all(FILE *f)
{
    for (int i = 0; registry[i]; i++) {
        registry[i]->describe(f);
        if (registry[i]->probe()) {
            fprintf(f, "  (unusable: %s)\n", hk_error_message());
            hk_error_clear();
        }
    }
}
