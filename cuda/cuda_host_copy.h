/* memcpy on every host thread (OpenMP), for the pinned staging of large uploads. */
#ifndef HOOKE_CUDA_HOST_COPY_H
#define HOOKE_CUDA_HOST_COPY_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
void hk_host_copy_parallel(void *dst, const void *src, size_t bytes);
#ifdef __cplusplus
}
#endif
#endif
