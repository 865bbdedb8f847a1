/* A memcpy on every thread, for large host-to-host copies (the CUDA backend stages uploads
 * through pinned buffers with it: one thread's memcpy is slower than the copy engine). */
#include <stdint.h>
#include <string.h>

#include "host_copy.h"

void hk_host_copy_parallel(void *dst, const void *src, size_t bytes)
{
    const size_t chunk = (size_t)1 << 20;
    const int64_t nchunks = (int64_t)((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < nchunks; c++) {
        const size_t off = (size_t)c * chunk;
        const size_t n = bytes - off < chunk ? bytes - off : chunk;
        memcpy((char *)dst + off, (const char *)src + off, n);
    }
}
