// Large host-device copies through two pinned buffers in turn (cuda_staging.h).
#include "../common/host_copy.h"
#include "cuda_staging.h"

static char *stage_buf[2];
static cudaEvent_t stage_done[2]; /* the last use of each buffer, on whichever stream used it */
static int stage_ready = -1;      /* -1 not tried, 0 unavailable (direct copies), 1 ready */

static int stage_init(void)
{
    if (stage_ready >= 0) return stage_ready;
    stage_ready = 0;
    for (int b = 0; b < 2; b++) {
        if (cudaMallocHost((void **)&stage_buf[b], HK_CU_STAGE_BYTES) != cudaSuccess ||
            cudaEventCreateWithFlags(&stage_done[b], cudaEventDisableTiming) != cudaSuccess) {
            cudaGetLastError();
            return 0;
        }
    }
    stage_ready = 1;
    return 1;
}

static size_t piece_bytes(size_t piece)
{
    return piece && piece < HK_CU_STAGE_BYTES ? piece : HK_CU_STAGE_BYTES;
}

#define STAGE_TRY(call)                                                                            \
    do {                                                                                           \
        cudaError_t stage_e_ = (call);                                                             \
        if (stage_e_ != cudaSuccess) return stage_e_;                                              \
    } while (0)

cudaError_t hk_cu_staged_upload(void *dst, const void *host_src, size_t bytes, cudaStream_t s,
                                size_t min_bytes, size_t piece)
{
    if (!bytes) return cudaSuccess;
    if (bytes < min_bytes || !stage_init())
        /* pageable source: the call returns once the driver has staged it */
        return cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, s);
    piece = piece_bytes(piece);
    for (size_t off = 0, k = 0; off < bytes; off += piece, k++) {
        const int b = (int)(k & 1);
        const size_t n = bytes - off < piece ? bytes - off : piece;
        STAGE_TRY(cudaEventSynchronize(stage_done[b])); /* its previous piece has left */
        hk_host_copy_parallel(stage_buf[b], (const char *)host_src + off, n);
        STAGE_TRY(cudaMemcpyAsync((char *)dst + off, stage_buf[b], n, cudaMemcpyHostToDevice, s));
        STAGE_TRY(cudaEventRecord(stage_done[b], s));
    }
    return cudaSuccess; /* the source has been read in full */
}

cudaError_t hk_cu_staged_download(void *host_dst, const void *src, size_t bytes, cudaStream_t s,
                                  size_t min_bytes, size_t piece)
{
    if (bytes >= min_bytes && stage_init()) {
        piece = piece_bytes(piece);
        const size_t n = (bytes + piece - 1) / piece;
        /* piece k into buffer k % 2; piece k + 1 is on its way while piece k is copied out */
        for (size_t k = 0; k <= n; k++) {
            if (k < n) {
                const size_t o = k * piece, len = bytes - o < piece ? bytes - o : piece;
                STAGE_TRY(cudaEventSynchronize(stage_done[k % 2])); /* free of earlier uses */
                STAGE_TRY(cudaMemcpyAsync(stage_buf[k % 2], (const char *)src + o, len,
                                          cudaMemcpyDeviceToHost, s));
                STAGE_TRY(cudaEventRecord(stage_done[k % 2], s));
            }
            if (k > 0) {
                const size_t o = (k - 1) * piece, len = bytes - o < piece ? bytes - o : piece;
                STAGE_TRY(cudaEventSynchronize(stage_done[(k - 1) % 2]));
                hk_host_copy_parallel((char *)host_dst + o, stage_buf[(k - 1) % 2], len);
            }
        }
    } else if (bytes) {
        STAGE_TRY(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, s));
    }
    return cudaStreamSynchronize(s);
}
