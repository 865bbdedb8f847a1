#include "psort.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "hooke/error.h"

typedef int (*cmp_fn)(const void *, const void *);

/* How many of the first k items of the merge of a (na items) and b (nb) come from a. */
static size_t co_rank(const char *a, size_t na, const char *b, size_t nb, size_t k, size_t size,
                      cmp_fn cmp)
{
    size_t lo = k > nb ? k - nb : 0, hi = k < na ? k : na;
    while (lo < hi) {
        const size_t i = lo + (hi - lo) / 2, j = k - i;
        if (cmp(a + i * size, b + (j - 1) * size) <= 0)
            lo = i + 1;
        else
            hi = i;
    }
    return lo;
}

/* Items k0 .. k1 - 1 of the merge of a and b into out (out + k0 * size onwards). */
static void merge_range(const char *a, size_t na, const char *b, size_t nb, char *out, size_t k0,
                        size_t k1, size_t size, cmp_fn cmp)
{
    size_t i = co_rank(a, na, b, nb, k0, size, cmp), j = k0 - i;
    for (size_t k = k0; k < k1; k++) {
        const int take_a = j >= nb || (i < na && cmp(a + i * size, b + j * size) <= 0);
        const char *src = take_a ? a + i++ * size : b + j++ * size;
        memcpy(out + k * size, src, size);
    }
}

int hk_sort_parallel(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    int nt = 1;
#ifdef _OPENMP
    nt = omp_get_max_threads();
#endif
    enum { MIN_BLOCK = 4096 };
    if (nt < 2 || n < 2 * MIN_BLOCK) {
        qsort(base, n, size, cmp);
        return 0;
    }
    size_t nb = 1; /* blocks: a power of two, about two a thread */
    while (nb < 2 * (size_t)nt && n / (2 * nb) >= MIN_BLOCK)
        nb *= 2;
    char *tmp = NULL;
    HK_CALL(hk_malloc(n * size, &tmp));
    char *src = base, *dst = tmp;
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t b = 0; b < nb; b++)
        qsort(src + n * b / nb * size, n * (b + 1) / nb - n * b / nb, size, cmp);
    /* merge rounds: runs of w blocks pairwise into runs of 2w, each pair's output cut into
     * pieces so that every round keeps the threads busy */
    for (size_t w = 1; w < nb; w *= 2) {
        const size_t npairs = nb / (2 * w), pieces = (size_t)(2 * nt) / npairs + 1;
#pragma omp parallel for schedule(dynamic, 1)
        for (size_t t = 0; t < npairs * pieces; t++) {
            const size_t p = t / pieces, c = t % pieces;
            const size_t s0 = n * (2 * p * w) / nb, s1 = n * (2 * p * w + w) / nb,
                         s2 = n * (2 * p * w + 2 * w) / nb, len = s2 - s0;
            merge_range(src + s0 * size, s1 - s0, src + s1 * size, s2 - s1, dst + s0 * size,
                        len * c / pieces, len * (c + 1) / pieces, size, cmp);
        }
        char *x = src;
        src = dst, dst = x;
    }
    if (src != base) {
#pragma omp parallel for schedule(static)
        for (size_t b = 0; b < nb; b++)
            memcpy((char *)base + n * b / nb * size, src + n * b / nb * size,
                   (n * (b + 1) / nb - n * b / nb) * size);
    }
    free(tmp);
    return 0;
}

void hk_running_sum(int64_t *a, int64_t n)
{
    enum { NBLOCK = 256 };
    int64_t sum[NBLOCK + 1];
    sum[0] = 0;
#pragma omp parallel for schedule(static)
    for (int b = 0; b < NBLOCK; b++) {
        int64_t s = 0;
        for (int64_t i = n * b / NBLOCK; i < n * (b + 1) / NBLOCK; i++)
            s += a[i];
        sum[b + 1] = s;
    }
    for (int b = 0; b < NBLOCK; b++)
        sum[b + 1] += sum[b];
#pragma omp parallel for schedule(static)
    for (int b = 0; b < NBLOCK; b++) {
        int64_t s = sum[b];
        for (int64_t i = n * b / NBLOCK; i < n * (b + 1) / NBLOCK; i++)
            a[i] = s += a[i];
    }
}
