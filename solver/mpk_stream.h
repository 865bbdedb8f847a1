/* The streamed matrix-powers plan (GPU Krylov thesis, section 6.3.1: global-memory cache
 * blocking for matrices larger than the device memory), cut and extracted once on the host
 * for both backends (mpk_stream_plan in solver/hk_impl.h): the CPU reference computes each
 * partition from exactly these arrays, the CUDA backend copies them to the device in turn.
 *
 * Partition p owns the block rows [p*block, (p+1)*block); its rows are listed as in the ghost
 * plan (cpu_mpk.c): level 0 the owned rows, then level l = 1..k the rows at graph distance
 * exactly l, each level ascending. Its packed bytes (one segment of the pack, so one copy
 * moves it) hold a local block CSR of its rows of level < k (the rows a pass computes) with
 * columns renumbered into the list, and the list itself (the global rows it gathers W[0],
 * wprev and d from). The owned rows are the first lvl[1] entries of the list: local row e < lvl[1]
 * is global row p*block + e, where the levels are scattered back. */
#ifndef HOOKE_SOLVER_MPK_STREAM_H
#define HOOKE_SOLVER_MPK_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "hk_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device budget when none is given: 256 MiB (docs/solver.md). */
#define HK_MPK_STREAM_MB 256
/* Work vectors of one partition on the device, in vectors of its rows: W three deep, U two
 * deep, d. */
#define HK_MPK_STREAM_VECS 6

typedef struct hk_mpk_stream {
    int bs, k;
    int64_t nb, block, nparts;
    int64_t *lvl;  /* nparts * (k + 2): rows of partition p before level l, [k + 1] = all */
    int64_t *nnzb; /* nparts: blocks of partition p's local matrix */
    size_t *off;   /* nparts + 1: byte offset of partition p in the pack */
    int64_t ext_rows, max_rows; /* rows of all partitions; of the largest */
    int64_t work;               /* block-row products of a pass of k levels */
    size_t max_bytes;           /* the largest partition's packed bytes */
    unsigned char *pack;        /* off[nparts] bytes, from the caller's allocator */
    void (*dealloc)(void *);
} hk_mpk_stream;

/* Partition p's arrays inside a copy of its packed bytes at base (host pack or device buffer):
 * val (nnzb blocks of bs x bs, row-major) first, then the local row pointer (ninner + 1), the
 * local column of each block (nnzb) and the global row of each listed row (nrows). */
typedef struct hk_mpk_part {
    int64_t nrows, ninner, nown, nnzb;
    const int64_t *lvl; /* k + 2 level starts (host memory) */
    double *val;
    int32_t *rowptr, *colind, *rows;
} hk_mpk_part;

/* Bytes of a packed partition (a multiple of 256, so that every segment is aligned). */
size_t hk_mpk_stream_part_bytes(int bs, int64_t nrows, int64_t ninner, int64_t nnzb);
void hk_mpk_stream_part(const hk_mpk_stream *S, int64_t p, void *base, hk_mpk_part *v);
/* Device bytes of a streamed pass: two buffers of the largest partition and its work vectors. */
size_t hk_mpk_stream_device_bytes(const hk_mpk_stream *S);

/* Cut the host block CSR K (square blocks of 1..6, square) into partitions of block rows
 * with ghost zones of k levels and pack them into memory from alloc (freed with dealloc).
 * block > 0: partitions of that many block rows (clamped to the rows); block = 0: the largest
 * size whose device bytes (hk_mpk_stream_device_bytes) fit budget bytes (0: HK_MPK_STREAM_MB
 * MiB), found by shrinking from the whole matrix. When max_work > 0 and the partitions' work
 * exceeds max_work * k * nbrows (smaller partitions would only add to it), nothing is packed:
 * S->pack is NULL, S's sizes describe the refused cut. Errors name the argument and the fix. */
int hk_mpk_stream_build(const hk_bcsr *K, int64_t block, size_t budget, int k, double max_work,
                        int (*alloc)(void **p, size_t bytes), void (*dealloc)(void *p),
                        hk_mpk_stream *S);
void hk_mpk_stream_free(hk_mpk_stream *S);
/* Fill info (schedule HK_MPK_STREAM) from S. */
void hk_mpk_stream_info(const hk_mpk_stream *S, hk_mpk_info *info);

/* The rows of partition p's ghost zone (shared with the ghost plan, cpu_mpk.c) into *buf
 * (grown as needed), level starts into lstart (k + 2 values); mark: nb stamps, none equal to
 * p on entry for the rows to be found. */
int hk_mpk_ghost_rows(const int64_t *rowptr, const int32_t *colind, int64_t nb, int64_t block,
                      int k, int64_t p, int32_t *mark, int32_t **buf, int64_t *cap,
                      int64_t *lstart);
/* Thread t's row of nb stamps for hk_mpk_ghost_rows (marks: one row a thread), all reset. */
static inline int32_t *hk_mpk_marks(int32_t *marks, int64_t nb, int t)
{
    int32_t *mark = marks + (size_t)t * (size_t)nb;
    for (int64_t i = 0; i < nb; i++)
        mark[i] = -1;
    return mark;
}

#ifdef __cplusplus
}
#endif
#endif
