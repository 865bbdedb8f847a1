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

typedef struct stage_piece {
    int j;           /* the array */
    size_t off, len; /* bytes */
} stage_piece;

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

/* The staged piece after *p in list (its arrays of min_bytes and more, in order, each cut into
 * pieces of piece bytes), from p = {-1, 0, 0}; 0 when there is none. */
static int next_piece(const hk_cu_download *list, int n, size_t min_bytes, size_t piece,
                      stage_piece *p)
{
    int j = p->j;
    size_t off = p->off + p->len;
    while (j < 0 || (j < n && (list[j].bytes < min_bytes || off >= list[j].bytes)))
        j++, off = 0;
    if (j >= n) return 0;
    p->j = j, p->off = off;
    p->len = list[j].bytes - off < piece ? list[j].bytes - off : piece;
    return 1;
}

cudaError_t hk_cu_staged_download_list(const hk_cu_download *list, int n, cudaStream_t s,
                                       size_t min_bytes, size_t piece)
{
    int large = 0;
    for (int j = 0; j < n; j++)
        large |= list[j].bytes >= min_bytes && list[j].bytes > 0;
    const int staged = large && stage_init();
    for (int j = 0; j < n; j++) /* the small arrays (all of them without staging) directly */
        if (list[j].bytes && (!staged || list[j].bytes < min_bytes))
            STAGE_TRY(cudaMemcpyAsync(list[j].host_dst, list[j].src, list[j].bytes,
                                      cudaMemcpyDeviceToHost, s));
    if (staged) {
        /* piece k into buffer k % 2; piece k + 1 is on its way while piece k is copied out,
         * across the arrays' ends */
        stage_piece next = {-1, 0, 0}, prev = {-1, 0, 0};
        piece = piece_bytes(piece);
        for (size_t k = 0;; k++) {
            const int more = next_piece(list, n, min_bytes, piece, &next);
            if (more) {
                STAGE_TRY(cudaEventSynchronize(stage_done[k % 2])); /* free of earlier uses */
                STAGE_TRY(cudaMemcpyAsync(stage_buf[k % 2],
                                          (const char *)list[next.j].src + next.off, next.len,
                                          cudaMemcpyDeviceToHost, s));
                STAGE_TRY(cudaEventRecord(stage_done[k % 2], s));
            }
            if (k > 0) {
                STAGE_TRY(cudaEventSynchronize(stage_done[(k - 1) % 2]));
                hk_host_copy_parallel((char *)list[prev.j].host_dst + prev.off,
                                      stage_buf[(k - 1) % 2], prev.len);
            }
            if (!more) break;
            prev = next;
        }
    }
    return cudaStreamSynchronize(s);
}

cudaError_t hk_cu_staged_download(void *host_dst, const void *src, size_t bytes, cudaStream_t s,
                                  size_t min_bytes, size_t piece)
{
    const hk_cu_download one = {host_dst, src, bytes};
    return hk_cu_staged_download_list(&one, 1, s, min_bytes, piece);
}
