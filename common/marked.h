/* The marked items of an array in order, listed on the host threads (OpenMP). */
#ifndef HOOKE_COMMON_MARKED_H
#define HOOKE_COMMON_MARKED_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* The i < n with mark[i] set, increasing: their places (at[i], -1 for an unmarked one) and
 * their indices (list, room for all of them); either may be NULL. Counted in fixed blocks, so
 * the same on any number of threads. Returns their count. */
int64_t hk_list_marked(const uint8_t *mark, int64_t n, int32_t *at, int64_t *list);
#ifdef __cplusplus
}
#endif
#endif
