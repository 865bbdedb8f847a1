#include "marked.h"

int64_t hk_list_marked(const uint8_t *mark, int64_t n, int32_t *at, int64_t *list)
{
    enum { NBLOCK = 256 };
    int64_t cnt[NBLOCK + 1];
    cnt[0] = 0;
#pragma omp parallel for schedule(static)
    for (int b = 0; b < NBLOCK; b++) {
        int64_t k = 0;
        for (int64_t i = n * b / NBLOCK; i < n * (b + 1) / NBLOCK; i++)
            k += mark[i] != 0;
        cnt[b + 1] = k;
    }
    for (int b = 0; b < NBLOCK; b++)
        cnt[b + 1] += cnt[b];
#pragma omp parallel for schedule(static)
    for (int b = 0; b < NBLOCK; b++) {
        int64_t k = cnt[b];
        for (int64_t i = n * b / NBLOCK; i < n * (b + 1) / NBLOCK; i++) {
            if (at) at[i] = mark[i] ? (int32_t)k : -1;
            if (mark[i] && list) list[k] = i;
            k += mark[i] != 0;
        }
    }
    return cnt[NBLOCK];
}
