/* memcpy on every host thread (OpenMP): the CUDA backend and the device assembly stage large
 * copies through pinned buffers with it. */
#ifndef HOOKE_COMMON_HOST_COPY_H
#define HOOKE_COMMON_HOST_COPY_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void hk_host_copy_parallel(void *dst, const void *src, size_t bytes);
#ifdef __cplusplus
}
#endif
#endif
