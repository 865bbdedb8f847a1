/* Error recording: one thread-local message, the first failure wins until cleared. */
#include "hooke/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char hk_msg[1024];

int hk_error_set(int code, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(hk_msg, sizeof hk_msg, fmt, ap);
    va_end(ap);
    const char *dbg = getenv("HOOKE_DEBUG");
    if (dbg && dbg[0] == '1') {
        size_t n = strlen(hk_msg);
        snprintf(hk_msg + n, sizeof hk_msg - n, " [%s:%d]", file, line);
    }
    return code;
}

const char *hk_error_message(void)
{
    return hk_msg;
}

void hk_error_clear(void)
{
    hk_msg[0] = '\0';
}

const char *hk_error_name(int code)
{
    static const char *names[] = {"HK_SUCCESS",     "HK_ERR_ARG",       "HK_ERR_MEMORY",
                                  "HK_ERR_IO",      "HK_ERR_PARSE",     "HK_ERR_OPTION",
                                  "HK_ERR_NOT_BUILT", "HK_ERR_DEVICE",  "HK_ERR_UNSUPPORTED",
                                  "HK_ERR_MODEL",   "HK_ERR_CASE",      "HK_ERR_NUMERIC",
                                  "HK_ERR_INTERNAL"};
    if (code < 0 || code >= (int)(sizeof names / sizeof names[0])) return "HK_ERR_UNKNOWN";
    return names[code];
}

int hk_malloc_(size_t bytes, void *pptr, const char *file, int line)
{
    void *p = malloc(bytes ? bytes : 1);
    *(void **)pptr = p;
    if (!p)
        return hk_error_set(HK_ERR_MEMORY, file, line, "out of host memory allocating %zu bytes",
                            bytes);
    return 0;
}

int hk_calloc_(size_t count, size_t size, void *pptr, const char *file, int line)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    *(void **)pptr = p;
    if (!p)
        return hk_error_set(HK_ERR_MEMORY, file, line,
                            "out of host memory allocating %zu x %zu bytes", count, size);
    return 0;
}
