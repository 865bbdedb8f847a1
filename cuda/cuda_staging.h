/* Copies between pageable host memory and the device through two pinned buffers in turn:
 * the driver copies pageable memory through its own small staging buffer on one thread (and
 * takes a fresh destination's page faults one by one), so large copies go here, the DMA of one
 * piece running while every host thread copies the other (hk_host_copy_parallel). One pair of
 * buffers (HK_CU_STAGE_BYTES each) serves the CUDA backend and the device assembly; they live
 * as long as the process. Without them (pinned memory refused) copies go directly. */
#ifndef HOOKE_CUDA_STAGING_H
#define HOOKE_CUDA_STAGING_H
#include <cuda_runtime.h>
#include <stddef.h>

#define HK_CU_STAGE_BYTES ((size_t)32 << 20)

/* Host to device on stream s: staged when bytes >= min_bytes, in pieces of piece bytes (0 or
 * more than HK_CU_STAGE_BYTES: HK_CU_STAGE_BYTES). Returns once host_src has been read (it may
 * be freed); the copy itself completes on s. The first CUDA error, or cudaSuccess. */
cudaError_t hk_cu_staged_upload(void *dst, const void *host_src, size_t bytes, cudaStream_t s,
                                size_t min_bytes, size_t piece);
/* Device to host after the work queued on stream s: staged as the upload; returns once host_dst
 * holds the data (s synchronised). */
cudaError_t hk_cu_staged_download(void *host_dst, const void *src, size_t bytes, cudaStream_t s,
                                  size_t min_bytes, size_t piece);
/* Several downloads as one: the staged pieces of all of them in one pipeline, the DMA of the
 * next array's first piece running while the host copies out the last of the one before. */
typedef struct hk_cu_download {
    void *host_dst;
    const void *src;
    size_t bytes;
} hk_cu_download;
cudaError_t hk_cu_staged_download_list(const hk_cu_download *list, int n, cudaStream_t s,
                                       size_t min_bytes, size_t piece);
#endif
