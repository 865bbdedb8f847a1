/* Hooke error codes and the two macros that carry them.
 *
 * Every fallible function returns an int from enum hk_error (0 = success). The first failure
 * records one sentence (what, where, what to do) in a thread-local buffer that the caller
 * prints with hk_error_message(). Anchor: libCEED CeedCall/CeedCheck. */
#ifndef HOOKE_ERROR_H
#define HOOKE_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum hk_error {
    HK_SUCCESS = 0,
    HK_ERR_ARG,         /* invalid argument from the caller (a bug or a bad API use) */
    HK_ERR_MEMORY,      /* host or device allocation failed */
    HK_ERR_IO,          /* a file could not be opened, read or written */
    HK_ERR_PARSE,       /* a file's content is malformed (Matrix Market, YAML, mesh) */
    HK_ERR_OPTION,      /* unknown or malformed option */
    HK_ERR_NOT_BUILT,   /* feature not compiled in (CUDA, ...) */
    HK_ERR_DEVICE,      /* CUDA / cuSPARSE / cuBLAS failure, or no device */
    HK_ERR_UNSUPPORTED, /* valid request this combination does not support */
    HK_ERR_MODEL,       /* the FE model is invalid (rigid-body motion, bad Jacobian, ...) */
    HK_ERR_CASE,        /* the case file is invalid */
    HK_ERR_NUMERIC,     /* NaN/Inf in input or a numerical failure during set-up */
    HK_ERR_INTERNAL     /* should not happen: a bug in Hooke */
};

/* Record a message for code and return code. fmt is printf-like; file/line are Hooke's
 * source location (kept for debugging, shown with HOOKE_DEBUG=1). */
int hk_error_set(int code, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The last recorded message of this thread ("" if none). */
const char *hk_error_message(void);
/* The symbolic name of a code, e.g. "HK_ERR_PARSE". */
const char *hk_error_name(int code);
/* Forget the last message. */
void hk_error_clear(void);

/* Call and return the code on failure. */
#define HK_CALL(expr)                                                                              \
    do {                                                                                           \
        int hk_call_err_ = (expr);                                                                 \
        if (hk_call_err_) return hk_call_err_;                                                     \
    } while (0)

/* Check a condition; on failure record the message and return code. */
#define HK_CHECK(cond, code, ...)                                                                  \
    do {                                                                                           \
        if (!(cond)) return hk_error_set((code), __FILE__, __LINE__, __VA_ARGS__);                 \
    } while (0)

/* Variants for functions with clean-up: they need `int ierr` and a label `fail`. */
#define HK_TRY(expr)                                                                               \
    do {                                                                                           \
        ierr = (expr);                                                                             \
        if (ierr) goto fail;                                                                       \
    } while (0)
#define HK_TRY_CHECK(cond, code, ...)                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            ierr = hk_error_set((code), __FILE__, __LINE__, __VA_ARGS__);                          \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* Allocation helpers that record HK_ERR_MEMORY with the size. */
int hk_malloc_(size_t bytes, void *pptr, const char *file, int line);
int hk_calloc_(size_t count, size_t size, void *pptr, const char *file, int line);
#define hk_malloc(bytes, pptr) hk_malloc_((bytes), (pptr), __FILE__, __LINE__)
#define hk_calloc(count, size, pptr) hk_calloc_((count), (size), (pptr), __FILE__, __LINE__)

/* Host memory this process can still take, in bytes: the smallest of the kernel's available
 * memory, a container's limit and ulimit -v; 0 when unknown. Readers compare a file's declared
 * sizes with it before allocating. */
double hk_host_memory_available(void);
/* "12 MB", "3.4 GB" or "1.2 TB" into buf. */
void hk_format_bytes(char *buf, size_t n, double bytes);

#ifdef __cplusplus
}
#endif
#endif
