/* Sorting and offsets on the host threads (OpenMP). */
#ifndef HOOKE_COMMON_PSORT_H
#define HOOKE_COMMON_PSORT_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* Sort n items of size bytes at base by cmp: blocks sorted by qsort on the threads, then merged
 * pairwise, each merge split among the threads. cmp must order any two different items (no
 * ties), so that every correct sort, qsort's on one thread included, gives these bytes. Returns
 * 0 or an allocation's error. */
int hk_sort_parallel(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* a[0..n-1] into their running sums in place (a[i] += a[i-1]), in fixed blocks. */
void hk_running_sum(int64_t *a, int64_t n);
#ifdef __cplusplus
}
#endif
#endif
