/* What the fuzz targets share: the input as a file, since the readers take paths. */
#ifndef HOOKE_FUZZ_UTIL_H
#define HOOKE_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Write data to a file of this process in $TMPDIR (or /tmp) ending in suffix; its path (a
 * static buffer, the same for every call with the same suffix). NULL when it cannot. */
static inline const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    static char path[512];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/hooke-fuzz-%ld%s", dir && *dir ? dir : "/tmp", (long)getpid(),
             suffix);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    size_t w = fwrite(data, 1, size, f);
    if (fclose(f) || w != size) return NULL;
    return path;
}

#endif
