/* common/psort.c: the parallel sort gives qsort's bytes on 1 to 4 threads (items of a total
 * order, many sizes around its blocks), the running sum a serial one's. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "psort.h"
#include "test_util.h"

typedef struct item {
    int64_t key;
    int32_t v, pad;
} item;

static int cmp_item(const void *a, const void *b)
{
    const item *p = a, *q = b;
    if (p->key != q->key) return p->key < q->key ? -1 : 1;
    return (p->v > q->v) - (p->v < q->v);
}

static uint32_t next_random(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void test_sort(void)
{
    const int threads = omp_get_max_threads();
    static const size_t sizes[] = {0, 1, 2, 100, 8191, 8192, 8193, 20000, 65537, 300001};
    for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++) {
        const size_t n = sizes[c];
        item *in = malloc((n + 1) * sizeof *in), *ref = malloc((n + 1) * sizeof *ref),
             *a = malloc((n + 1) * sizeof *a);
        uint32_t s = 7 + (uint32_t)c;
        for (size_t i = 0; i < n; i++) /* repeated keys, told apart by v */
            in[i] = (item){(int64_t)(next_random(&s) % (n / 3 + 1)) - 5, (int32_t)(n - i), 0};
        memcpy(ref, in, n * sizeof *ref);
        qsort(ref, n, sizeof *ref, cmp_item);
        for (int nt = 1; nt <= 4; nt++) {
            omp_set_num_threads(nt);
            memcpy(a, in, n * sizeof *a);
            CU_ASSERT_EQUAL(hk_sort_parallel(a, n, sizeof *a, cmp_item), 0);
            CU_ASSERT(!memcmp(a, ref, n * sizeof *a));
        }
        free(in);
        free(ref);
        free(a);
    }
    omp_set_num_threads(threads);
}

static void test_running_sum(void)
{
    const int threads = omp_get_max_threads();
    static const int64_t sizes[] = {0, 1, 255, 256, 257, 100000};
    for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++) {
        const int64_t n = sizes[c];
        int64_t *a = malloc((size_t)(n + 1) * sizeof *a);
        for (int nt = 1; nt <= 3; nt++) {
            omp_set_num_threads(nt);
            uint32_t s = 3;
            for (int64_t i = 0; i < n; i++)
                a[i] = next_random(&s) % 9;
            hk_running_sum(a, n);
            int64_t run = 0, bad = 0;
            s = 3;
            for (int64_t i = 0; i < n; i++) {
                run += next_random(&s) % 9;
                bad += a[i] != run;
            }
            CU_ASSERT_EQUAL(bad, 0);
        }
        free(a);
    }
    omp_set_num_threads(threads);
}

HK_SUITE(psort, {"parallel sort: qsort's bytes on 1 to 4 threads", test_sort},
         {"running sum: a serial one's on 1 to 3 threads", test_running_sum})
