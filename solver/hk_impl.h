/* Private structures of the solver library: objects, host format arrays, the backend ops
 * table, preconditioner and Krylov type tables. Only solver/ and cuda/ include this.
 *
 * Contract between the pieces:
 *   formats.c   hk_bcsr -> hk_fmt on the host: the reference layouts that tests compare with
 *   backend     hk_bmat -> a format in its own memory (mat_build), SpMV, vector ops, fused ops
 *   pc/ files    set-up through backend set-up ops on hk_bmat, apply through backend ops only
 *                (mlilu alone sets up on a host copy)
 *   ksp/ files   each method once, through backend ops only (never CUDA, never raw arrays) */
#ifndef HOOKE_SOLVER_IMPL_H
#define HOOKE_SOLVER_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hooke/solver.h"
#include "hk_setup.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "did you mean 'x'?" (up to three equally close names) for a word not in list (names
 * separated by commas or spaces), or "" when none is close; into buf, which it returns. */
const char *hk_options_suggest(const char *word, const char *list, char *buf, size_t n);

/* Sort a[0..n) ascending by insertion: for short rows and nearly sorted lists. */
static inline void hk_isort_i32(int32_t *a, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        const int32_t v = a[i];
        int64_t j = i - 1;
        while (j >= 0 && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

/* The same for 64-bit keys (e.g. a column and a position packed in one). */
static inline void hk_isort_i64(int64_t *a, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        const int64_t v = a[i];
        int64_t j = i - 1;
        while (j >= 0 && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

#ifdef __CUDACC__
#define HK_IMPL_HD __host__ __device__
#else
#define HK_IMPL_HD
#endif

/* hk_lower_bound_i32/_i64: in a[lo..hi) ascending, the first q with a[q] >= key (hi when there
 * is none); host and device. */
#define HK_LOWER_BOUND(name, T)                                                                    \
    static inline HK_IMPL_HD int64_t name(const T *a, int64_t lo, int64_t hi, int64_t key)         \
    {                                                                                              \
        while (lo < hi) {                                                                          \
            const int64_t mid = lo + (hi - lo) / 2;                                                \
            if (a[mid] < key)                                                                      \
                lo = mid + 1;                                                                      \
            else                                                                                   \
                hi = mid;                                                                          \
        }                                                                                          \
        return lo;                                                                                 \
    }
HK_LOWER_BOUND(hk_lower_bound_i32, int32_t)
HK_LOWER_BOUND(hk_lower_bound_i64, int64_t)
#undef HK_LOWER_BOUND

/* The entry of block column j in block row i of a block CSR pattern (columns ascending in each
 * row), or -1; host and device. */
static inline HK_IMPL_HD int64_t hk_find_block(const int64_t *rowptr, const int32_t *colind,
                                               int64_t i, int64_t j)
{
    const int64_t q = hk_lower_bound_i32(colind, rowptr[i], rowptr[i + 1], j);
    return q < rowptr[i + 1] && colind[q] == j ? q : -1;
}

/* ---- vectors --------------------------------------------------------------------------- */

struct hk_vec_s {
    const struct hk_backend_ops *be;
    int64_t n;
    hk_precision prec;
    void *data; /* n doubles or floats in the backend's memory */
};

/* ---- the layouts of the formats ---------------------------------------------------------
 *
 * hk_fmt holds one format's arrays on the host (hk_fmt_from_bcsr, mat_download); the
 * backends build exactly these arrays in their own memory (mat_build). Every layout keeps the source's column indices (x is never permuted). Padding entries have
 * column index -1 and value 0; kernels skip them. Value arrays are fp64; a backend makes its
 * own fp32 copy when the matrix precision is HK_FP32.
 *
 * CSR   (bs = 1): rowptr[nrows+1], colind[nnz], val[nnz].
 * BSR   (bs>=1): rowptr[nbrows+1], colind[nnzb] block columns, val[nnzb*bs*bs] row-major blocks.
 * ELL   (bs = 1): width W; entry k of row i at k*nrows + i (column-major).
 * SELL  (bs = 1): rows renumbered by perm (perm[new] = old) sorting row lengths descending
 *                 inside windows of sigma rows; slices of S consecutive new rows; slice s has
 *                 width slice_width[s] and starts at entry slice_ptr[s]; entry k of local row j
 *                 at slice_ptr[s] + k*S + j. The last slice is padded to S rows (rows >= nrows
 *                 are all padding). y[perm[new]] receives the row's result.
 * BELL  (bs>=1): width W in blocks; block k of block row i: colind[k*nbrows + i],
 *                 value entry e = r*bs + c at val[(k*bs*bs + e)*nbrows + i].
 * SBELL (bs>=1): block rows renumbered by perm (descending number of blocks, inside windows of
 *                 sigma block rows; sigma = nbrows by default, the SBELL paper's global sort);
 *                 slices of S block rows; slice s has width slice_width[s] (in blocks) and
 *                 starts at block slot slice_ptr[s]; block k of local block row j:
 *                 colind[slice_ptr[s] + k*S + j], value e at
 *                 val[(slice_ptr[s] + k*S)*bs*bs + e*S + j]
 *                 so that consecutive block rows (threads) read consecutive addresses.
 * PCSR  (bs = 1): CSR with every row padded to a multiple of the padding factor pad (rowptr
 *                 counts the padding, so every row starts at a multiple of pad); the padded
 *                 entries cut into nparts partitions of partition entries (the tail of the last
 *                 one is padding). part_row[p] = the first row starting at or after entry
 *                 p*partition (part_row[nparts] = nrows): partition p owns the rows
 *                 [part_row[p], part_row[p+1]). split[p] = the entries at the start of
 *                 partition p that continue a row begun in an earlier partition (0 for p = 0).
 * The cusparse-* formats use the CSR / BSR arrays.
 * Scalar formats (CSR, ELL, SELL, cusparse-csr) of a bs > 1 source expand every block into bs
 * scalar rows, keeping all bs*bs entries (zeros too): their hk_fmt has bs = 1, nbrows = nrows.
 * stored counts padding; nnz = nnzb*bs*bs of the source, so CSR/BSR have stored == nnz. */
typedef struct hk_fmt {
    hk_format fmt;
    int bs;
    int64_t nrows, ncols;     /* scalar rows and columns */
    int64_t nbrows, nbcols;   /* block rows and columns (= scalar for bs = 1) */
    int64_t nnz;              /* scalar nonzeros of the source block CSR (nnzb*bs*bs) */
    int64_t stored;           /* scalar entries stored, padding included */
    int64_t *rowptr;          /* CSR, BSR */
    int32_t *colind;          /* all formats */
    double *val;              /* all formats */
    int32_t width;            /* ELL, BELL */
    int32_t slice;            /* SELL, SBELL: S */
    int32_t sigma;            /* SELL, SBELL: sorting window */
    int64_t nslices;          /* SELL, SBELL */
    int64_t *slice_ptr;       /* nslices + 1 */
    int32_t *slice_width;     /* nslices */
    int32_t *perm;            /* SELL: nrows; SBELL: nbrows. perm[new] = old */
    int32_t partition, pad;   /* PCSR: entries per partition, padding factor */
    int64_t nparts;           /* PCSR */
    int32_t *part_row;        /* PCSR: nparts + 1 */
    int32_t *split;           /* PCSR: nparts */
} hk_fmt;

/* PCSR defaults: the thesis's 256-entry partitions (one per thread of a block), padding factor
 * 4 (its best, Fig. 3.6) and four partitions per block with prefetching (Fig. 3.7). */
#define HK_PCSR_PARTITION 256
#define HK_PCSR_PAD 4
#define HK_PCSR_PREFETCH 4

/* Check K's structure (block size 1..6, sizes, row pointers, column range): an error naming
 * the block row, so that a bad matrix never reaches a kernel (hk_mat_create calls it). */
int hk_fmt_check_bcsr(const hk_bcsr *K);
/* format.sigma=auto (the default, HK_SIGMA_AUTO): the sorting window of SELL/SBELL chosen from
 * the histogram of row lengths. count[l] = rows (block rows) of length l, l = 0..L, n rows,
 * slices of S. Sorting the whole matrix (the SBELL paper) removes the most padding, but it
 * moves rows of equal length next to each other from anywhere in the mesh, so the x entries a
 * slice reads are scattered; when one length dominates (structured meshes: the interior
 * rows), the stable sort keeps those rows in order and nothing is lost. Rule: the whole
 * matrix when at least half of the rows share one length (or n <= 128 S), else windows of
 * 128 S rows (measured on an H100, docs/formats.md: trirand 80.9 -> 73.3 us, hex and tet
 * within 4 %). Returns the window, n for the whole matrix. */
#define HK_SIGMA_AUTO (-1)
int64_t hk_sigma_auto(const int64_t *count, int64_t L, int64_t n, int S);
/* *sigma = hk_sigma_auto of the rows of a host row-pointer array when it is HK_SIGMA_AUTO. */
int hk_sigma_resolve(const int64_t *rowptr, int64_t n, int S, int *sigma);
/* Convert K to fmt with slice S and window sigma (0: the whole matrix, HK_SIGMA_AUTO: the
 * rule above). */
int hk_fmt_from_bcsr(const hk_bcsr *K, hk_format fmt, int slice, int sigma, hk_fmt *F);
/* The same for PCSR with its partition size and padding factor (<= 0: defaults). */
int hk_fmt_pcsr_from_bcsr(const hk_bcsr *K, int partition, int pad, hk_fmt *F);
void hk_fmt_free(hk_fmt *F);
/* Reference SpMV on the host arrays, any format, fp64 (tests and the CPU backend). */
void hk_fmt_spmv_host(const hk_fmt *F, const double *x, double *y);
/* Bytes one SpMV reads of the matrix in precision p (values + indices + pointers). */
size_t hk_fmt_bytes(const hk_fmt *F, hk_precision p);
/* The same from F's sizes alone (arrays not needed): last_width = slice_width[nslices-1]. */
size_t hk_fmt_bytes_shape(const hk_fmt *F, int32_t last_width, hk_precision p);

/* ---- matrices -------------------------------------------------------------------------- */

/* A storage format built on K's backend from the backend block CSR K (square blocks); the
 * options as for hk_mat_create. hk_mat_create is hk_bmat_upload + this. */
int hk_mat_create_bmat(const hk_bmat *K, hk_format fmt, hk_precision p, hk_options *o,
                       hk_mat **A);
/* Build A again from K (the same shape; new values, or a new pattern) in A's format,
 * precision and format parameters; the hk_mat object stays, so pointers to it stay valid. */
/* A's values from K, whose sizes and sparsity pattern are those of the matrix A was built
 * from (the caller knows: a values-only update): in place where the backend can (mat_refill),
 * else released and built anew. */
int hk_mat_rebuild(hk_mat *A, const hk_bmat *K);
/* *dst = src (fp64) in fp32 by the backend's mat_convert: src's format, slicing and layout,
 * its values rounded; HK_ERR_UNSUPPORTED (nothing made) where the backend or format cannot. */
int hk_mat_convert(const hk_mat *src, hk_mat **dst);
/* dst's values (fp32) from src (fp64) in place, where dst was built from a matrix of src's
 * pattern with src's format and slicing (the caller knows): HK_ERR_UNSUPPORTED, dst untouched,
 * where the backend, the format or the settings do not allow it. */
int hk_mat_convert_values(hk_mat *dst, const hk_mat *src);

/* format=auto on a device with a last-level cache of `cache` bytes (0: none, the CPU): a matrix
 * that fits in it (bytes, one product's reads of its row-pointer layout) is latency-bound, and
 * the row-pointer kernel, one group of lanes per block row in the mesh's order, balances it
 * best: CSR for bs 1, else BSR. A larger one is bandwidth-bound: SBELL, whose sorted slices
 * read the values coalesced and without row pointers. Measured on an H100 (50 MB L2),
 * docs/BENCHMARKS.md "Storage format by size". */
hk_format hk_format_auto_by_cache(int bs, size_t bytes, size_t cache);
/* The format format=auto gives K in precision p on K's backend (its format_auto op, or the
 * rule without a cache). */
int hk_format_auto(const hk_bmat *K, hk_precision p, hk_format *fmt);
/* The bytes of K's values in precision p, block column indices and row pointers. */
size_t hk_format_auto_bytes(const hk_bmat *K, hk_precision p);

struct hk_mat_s {
    const struct hk_backend_ops *be;
    hk_format fmt;
    hk_format asked; /* fmt, or HK_FMT_AUTO when the backend chose fmt: matrices made like
                      * this one (preconditioner copies, multigrid levels) choose again */
    hk_precision prec;
    int bs;        /* block size of the source (scalar formats expand it) */
    int64_t nrows, ncols;
    int slice;     /* SELL/SBELL slice height S requested (format.slice, default 32) */
    int sigma;     /* sorting window requested (format.sigma; 0 = the whole matrix,
                    * HK_SIGMA_AUTO = chosen by hk_sigma_auto) */
    int tpr;       /* threads per block row requested (0 = backend decides) */
    int csr_kernel; /* enum hk_csr_kernel: the CSR SpMV on cuda (format.csr.kernel) */
    int pcsr_partition, pcsr_pad, pcsr_prefetch; /* format.pcsr.* */
    /* filled by mat_build */
    int64_t nnz;    /* scalar nonzeros of the source (nnzb*bs*bs) */
    int64_t stored; /* scalar entries stored, padding included */
    int64_t width;  /* ELL/BELL width; longest (block) row for the other formats */
    size_t bytes;   /* bytes one SpMV reads of the matrix (hk_fmt_bytes) */
    int lanes_min, lanes_max; /* threads per block row of the SpMV kernel (0: one, no choice) */
    void *bdata;    /* backend-private: the built arrays, descriptors */
};

/* format.csr.kernel: auto (adaptive, or vector when format.tpr is given), one row per thread,
 * one row per warp, a sub-warp per row (width from the mean row length or format.tpr), or
 * row blocks of about equal entries reduced in shared memory (CSR-adaptive). */
enum hk_csr_kernel { HK_CSR_AUTO = 0, HK_CSR_THREAD, HK_CSR_WARP, HK_CSR_VECTOR, HK_CSR_ADAPTIVE };

/* ---- the backend ops table --------------------------------------------------------------
 *
 * All pointers are in the backend's memory. Operations are ordered on one stream; only the
 * ones that return host values (dot, norms, scal_get, copy_from) wait. Vectors passed to one
 * call have the same length; precision is per vector (a kernel may require them to match,
 * except vec_convert). Reductions must be deterministic: fixed-order two-stage sums, no atomics
 * on floating-point values. */

/* Slots of the backend-resident scalar array used by the fused pipelined-CG ops. */
enum {
    HK_S_RR = 0,  /* r.r */
    HK_S_RZ,      /* r.z  (z = dinv .* r; = r.r without preconditioner) */
    HK_S_PAP,     /* p.Ap */
    HK_S_APZ,     /* Ap.(dinv .* Ap)  (= Ap.Ap without preconditioner) */
    HK_S_ALPHA,
    HK_S_BETA,
    HK_S_ZAP,     /* r.(dinv .* Ap) = z.Ap (= p.Ap in exact arithmetic) */
    HK_S_PIPECG_COUNT,
    /* pipelined BiCGStab (pipelined-solver paper, Algorithm 4; krylov engineer) */
    HK_S_BI_RR0 = 8, /* r.r0*  (r0* the fixed shadow residual) */
    HK_S_BI_APR0,    /* Ap.r0* */
    HK_S_BI_SS,      /* s.s */
    HK_S_BI_ASS,     /* As.s */
    HK_S_BI_ASAS,    /* As.As */
    HK_S_BI_ASR0,    /* As.r0* */
    HK_S_BI_RR,      /* r.r of the updated r */
    HK_S_BI_ALPHA,
    HK_S_BI_OMEGA,
    HK_S_BI_BETA,
    HK_S_BI_END,
    HK_S_MAX = 64 /* a method may use slots up to this for its own fused ops */
};

/* The id of a device communicator (dcomm_id): NCCL's ncclUniqueId is 128 bytes. */
#define HK_DCOMM_ID_BYTES 128

/* pc.tri: sync-free (the ILUPACK-GMRES paper's: level order, warps by row length, the
 * solution's entries their own ready flags), level-scheduled, cuSPARSE SpSV, or the earlier
 * sync-free solve with separate ready flags; a backend lacking one falls back to levels. */
enum hk_tri_method { HK_TRI_SYNCFREE = 0, HK_TRI_LEVELS, HK_TRI_CUSPARSE, HK_TRI_SYNCFREE_FLAGS };
/* pc.tri=syncfree: a row of len strict entries gets 2^class lanes of a warp (class 0..5: the
 * smallest power of two >= len, at most 32), so a warp solves 32 >> class rows of one class */
#ifdef __CUDACC__
#define HK_TRI_HD __host__ __device__
#else
#define HK_TRI_HD
#endif
static inline HK_TRI_HD int hk_tri_row_class(int64_t len)
{
    int c = 0;
    while (c < 5 && ((int64_t)1 << c) < len)
        c++;
    return c;
}

/* A matrix-powers plan (mpk_plan): partitions, ghost zones and the work of one pass. */
#define HK_MPK_MAXK 16 /* levels of one pass at most */
#define HK_GRAM_MAX 24 /* vectors of one Gram matrix at most */
/* How a pass is cut (mpk.schedule): partitions with ghost zones computed independently, or
 * a wavefront over chunks of consecutive block rows (no redundant rows; see mpk_plan); a
 * streamed plan (mpk_stream_plan) is ghost-zone partitions kept in host memory; shared: the
 * ghost-zone partitions with each partition's matrix rows staged in on-chip memory for its k
 * levels (the GPU Krylov thesis's section 6.3.2; see mpk_plan). */
enum hk_mpk_schedule { HK_MPK_GHOST = 0, HK_MPK_WAVEFRONT, HK_MPK_STREAM, HK_MPK_SHARED };
typedef struct hk_mpk_info {
    int schedule;     /* enum hk_mpk_schedule */
    int64_t block;    /* block rows per partition (wavefront: per chunk) */
    int64_t bandwidth; /* wavefront: the largest |column - row| of K in block rows */
    int k;            /* levels the ghost zones allow */
    int64_t nparts;   /* partitions */
    int64_t ext_rows; /* block rows of all partitions with their ghost zones */
    int64_t max_ext;  /* the largest partition with its ghost zone, block rows */
    int64_t work;     /* block-row products of k levels (k*nbrows without ghosts) */
    int on_chip;      /* cuda: a partition's vectors live in shared memory (else in L2) */
    size_t host_bytes; /* streamed: the packed partitions in host memory (a pass copies them) */
    size_t dev_bytes;  /* streamed: device memory of a pass (two partition buffers, vectors) */
    size_t stage_bytes; /* shared: on-chip bytes of the largest partition (its matrix rows and
                           five work vectors), also when that is too many and no plan is made */
} hk_mpk_info;

/* amg_cheb_step: with v = A p rounded to the vectors' precision (mat_spmv's y), entry by
 * entry of every node block,
 *   u = rin - v (vec_axpby(u = v, 1, rin, -1)'s arithmetic; p NULL: u = rin, no product);
 *   r = u where r is given; nothing more when D is NULL (a residual b - A x);
 *   s = D u (bdiag_apply's arithmetic), w = a s + c dp (vec_axpby's: c = 0, dp not read);
 *   dn = w where dn is given;
 *   x where given, by xmode: old x read unless HK_CHEB_X_ZERO (then taken as 0, with at least
 *   one addend), HK_CHEB_X_DP x += dp, then HK_CHEB_X_DN x += w (vec_axpby(x, 1, ., 1)'s
 *   arithmetic; onto a zero x the first addend is copied).
 * p must differ from r, dn and x (the product reads it while they are written); rin may be r,
 * dp may be p. t: scratch of A's rows, the product where the backend does not fuse it (its
 * contents afterwards unspecified). A may be rectangular (a distributed operator's interior or
 * boundary rows, whose columns are more, or others, than its rows): p has A->ncols entries,
 * rin, r, dp, dn, x and t A->nrows, D A->nrows * bs. */
enum { HK_CHEB_X_ZERO = 1, HK_CHEB_X_DP = 2, HK_CHEB_X_DN = 4 };
typedef struct hk_cheb_step {
    const hk_vec *p, *rin;
    hk_vec *r;
    const hk_vec *D;
    int bs;
    double a, c;
    const hk_vec *dp;
    hk_vec *dn, *x;
    int xmode;
    hk_vec *t;
} hk_cheb_step;
/* The checks every backend's amg_cheb_step makes first (sizes, precisions, which vectors may
 * coincide, xmode): 0, or the error naming what is wrong (solver/cpu/cpu_backend.c). */
int hk_cheb_step_check(const hk_mat *A, const hk_cheb_step *s);
/* The same for the spectral bound's fused ops spmv_dot_s and bdiag_update_dot_s (the table's
 * comments say what they take). */
int hk_spmv_dot_check(const hk_mat *A, const hk_vec *x, const hk_vec *y);
int hk_bdiag_update_dot_check(const hk_vec *r, const hk_vec *q, const hk_vec *D, int bs,
                              const hk_vec *z);

/* A process's rows of a distributed operator in a backend's memory, for its dist_split op:
 * the caller's nown block rows (rowptr, colind: global block columns, nglobal of them), the
 * owned ones [row0, row0 + nown); inv[i]: the caller's row i's internal number (interior rows,
 * which read no ghost, are [0, nint)), perm its inverse; ghost: the nghost global columns
 * outside the owned ones that the rows read, sorted. */
typedef struct hk_dist_rows {
    int bs;
    int64_t row0, nown, nint, nglobal, nghost;
    const int64_t *rowptr;
    const int32_t *colind, *inv, *perm;
    const int64_t *ghost;
} hk_dist_rows;

typedef struct hk_backend_ops {
    const char *name;
    /* 0 when usable; otherwise an error whose message says why (not built, no device). */
    int (*probe)(void);
    void (*describe)(FILE *f);
    /* Free and total memory where the data lives (host RAM for cpu). */
    int (*mem_info)(size_t *free_bytes, size_t *total_bytes);

    /* memory */
    int (*alloc)(void **p, size_t bytes);
    void (*dealloc)(void *p);
    int (*copy_to)(void *dst, const void *host_src, size_t bytes);
    int (*copy_from)(void *host_dst, const void *src, size_t bytes);
    int (*copy)(void *dst, const void *src, size_t bytes);
    int (*sync)(void);
    /* Host memory the device copies to and from directly (page-locked on cuda: a copy from it
     * is queued without a wait, one to it needs no staging by the driver), for buffers that
     * every iteration stages (a distributed solve's halos). NULL: the caller uses malloc. */
    int (*host_alloc)(void **p, size_t bytes);
    void (*host_free)(void *p);
    /* copy_to and copy_from for large arrays in pageable host memory (malloc's), which a
     * device's driver copies on one thread: through the backend's own pinned buffers, every
     * host thread copying (cuda_staging.cu); on the cpu a memcpy by threads. For buffers that
     * a few copies use once (the distributed AMG set-up's message staging, where pinning
     * would cost more than the copies). NULL: copy_to, copy_from. */
    int (*copy_to_pageable)(void *dst, const void *host_src, size_t bytes);
    int (*copy_from_pageable)(void *host_dst, const void *src, size_t bytes);
    /* *equal = 1 when the bytes at a and b (both in this backend's memory) are the same, else
     * 0 (a new matrix's pattern against the solver's, without a copy to the host). */
    int (*mem_equal)(const void *a, const void *b, size_t bytes, int *equal);

    /* vectors */
    int (*vec_set)(hk_vec *x, double a);
    int (*vec_copy)(hk_vec *y, const hk_vec *x);
    int (*vec_convert)(hk_vec *y, const hk_vec *x); /* y = x, precisions may differ */
    /* Optional: x and y as blocks of bs entries, block k at k * xs in x and at k * ys in y
     * (x->n / xs blocks; xs, ys >= bs; y->n >= the blocks times ys): y's block = x's, precisions
     * may differ (rounded as vec_convert rounds), y's entries bs .. ys - 1 of each block set to
     * 0, x's past bs not read (pc=amg's padded fp32 copy of P and its widening back). */
    int (*vec_convert_blocks)(hk_vec *y, int ys, const hk_vec *x, int xs, int bs);
    /* x (fp64) rounded to fp32 in place, x_i = (double)(float)x_i (vec_convert's rounding), in
     * one pass (pc=amg's fp32 levels round P with it; the distributed table has none). */
    int (*vec_round_fp32)(hk_vec *x);
    int (*vec_scale)(hk_vec *x, double a);
    int (*vec_axpby)(hk_vec *y, double a, const hk_vec *x, double b); /* y = a x + b y */
    /* z = a x + b y + c z */
    int (*vec_axpbypcz)(hk_vec *z, double a, const hk_vec *x, double b, const hk_vec *y,
                        double c);
    int (*vec_pointwise_mult)(hk_vec *w, const hk_vec *x, const hk_vec *y); /* w = x .* y */
    /* One step of a polynomial preconditioner's three-term recurrence (pc=poly) in one pass:
     * y = a (d .* t) + b x + c y, then z = e y + f z. x may be NULL when b = 0; the old y and
     * z are not read when c = 0 or f = 0 (they may hold anything). One precision; y and z
     * distinct from each other and from d, t, x. */
    int (*vec_poly_step)(hk_vec *y, double a, const hk_vec *d, const hk_vec *t, double b,
                         const hk_vec *x, double c, hk_vec *z, double e, double f);
    /* t = A x (A square, in the vectors' precision), then vec_poly_step(y, a, d, t, b, x, c, z,
     * e, f), in one pass where the backend can: t's contents afterwards are unspecified (it is
     * then not written). NULL where a backend lacks it: pc=poly makes the two calls. */
    int (*spmv_poly_step)(hk_mat *A, const hk_vec *x, hk_vec *t, hk_vec *y, double a,
                          const hk_vec *d, double b, double c, hk_vec *z, double e, double f);
    /* One step of a multigrid level's Chebyshev smoother (hk_amg_smooth) in one pass, on
     * the vectors of hk_cheb_step (below; one precision, A's, A square or not, the node blocks
     * of D bs x bs); cuda runs it in the SpMV's epilogue (one launch). NULL where a backend
     * lacks it: the smoother makes the separate calls, with the same digits. */
    int (*amg_cheb_step)(hk_mat *A, const struct hk_cheb_step *s);
    int (*vec_dot)(const hk_vec *x, const hk_vec *y, double *r);
    /* r[j] = X[j] . y for j < k (one pass over y; classical Gram-Schmidt) */
    int (*vec_mdot)(int k, hk_vec *const *X, const hk_vec *y, double *r);
    /* y += sum_j a[j] X[j] */
    int (*vec_maxpy)(hk_vec *y, int k, const double *a, hk_vec *const *X);

    /* matrices */
    void (*mat_release)(hk_mat *A);
    int (*mat_spmv)(hk_mat *A, const hk_vec *x, hk_vec *y); /* y = A x, same precision */

    /* y = D x with D = n/bs dense bs x bs blocks stored row-major in the vector D
     * (block-Jacobi apply); all three in one precision. */
    int (*bdiag_apply)(const hk_vec *D, int bs, const hk_vec *x, hk_vec *y);

    /* backend-resident scalars (host memory on cpu, device memory on cuda) */
    int (*scal_alloc)(double **s, int n);
    void (*scal_free)(double *s);
    int (*scal_get)(const double *s, int first, int n, double *host); /* waits */
    int (*scal_set)(double *s, int first, int n, const double *host);
    /* Without a wait, for recurrences whose coefficients stay on the backend (pc=amg's
     * spectral bound): *s (a backend scalar) = x . y with vec_dot's digits, any precision;
     * y = a' x + b' y with vec_axpby's digits, a' = a * (*an / *ad) where an is given (backend
     * scalars), else a, and b' likewise. NULL where a backend lacks them: the caller then
     * reads and writes the scalars itself (solver/pc/amg.c's dot_s / axpby_s). */
    int (*vec_dot_s)(const hk_vec *x, const hk_vec *y, double *s);
    int (*vec_axpby_s)(hk_vec *y, double a, const double *an, const double *ad, const hk_vec *x,
                       double b, const double *bn, const double *bd);
    /* The bound's step in fewer passes, without a wait, any precision (A's and the vectors'
     * one), *s a backend scalar; the sums deterministic (the same digits on every run and
     * thread count) but not necessarily vec_dot's:
     * spmv_dot_s: y = A x (mat_spmv's digits), then *s = x . y; x and y distinct.
     * bdiag_update_dot_s: r = r - (*an / *ad) q (vec_axpby_s(r, -1, an, ad, q, 1, NULL, NULL)'s
     * arithmetic), z = D r (bdiag_apply's: D holds n / bs node blocks of bs x bs, row-major),
     * then *s = r . z of the new r and z; r, q, z distinct.
     * NULL where a backend lacks them (the distributed table too): the caller makes the
     * separate calls. CPU reference: solver/cpu/cpu_backend.c (vec_dot's digits there). */
    int (*spmv_dot_s)(hk_mat *A, const hk_vec *x, hk_vec *y, double *s);
    int (*bdiag_update_dot_s)(hk_vec *r, const double *an, const double *ad, const hk_vec *q,
                              const hk_vec *D, int bs, hk_vec *z, double *s);

    /* Fused pipelined CG (pipelined-solver paper, Algorithm 2, with optional Jacobi dinv):
     * alpha = S[RZ]/S[PAP], beta = (S[RZ] - 2 alpha S[ZAP] + alpha^2 S[APZ]) / S[RZ] (the
     * new r.z over the old one, expanded) computed on the backend;
     * x += alpha p; r -= alpha Ap; p = dinv.*r + beta p (dinv NULL: identity);
     * S[RR] = r.r, S[RZ] = r.(dinv.*r) of the new r; S[ALPHA], S[BETA] stored. */
    int (*pipecg_update)(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *Ap, const hk_vec *dinv,
                         double *S);
    /* Ap = A p; S[PAP] = p.Ap; S[APZ] = Ap.(dinv.*Ap); S[ZAP] = r.(dinv.*Ap), or p.Ap when r
     * is NULL — the SpMV with its reductions fused. With r NULL beta reduces to the
     * algorithm's alpha^2 S[APZ]/S[RZ] - 1, which assumes z.Ap = p.Ap (pipecg.variant=fused
     * passes r; the paper variant starts and restarts with r NULL, pipecg_paper_step below). */
    int (*spmv_dot2)(hk_mat *A, const hk_vec *p, hk_vec *Ap, const hk_vec *dinv, const hk_vec *r,
                     double *S);
    /* pipecg_update, then spmv_dot2 with the new p and r, in one call (cpu only; NULL:
     * pipecg calls the two). */
    int (*pipecg_step)(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *p, hk_vec *Ap, const hk_vec *dinv,
                       double *S);
    /* One iteration of the pipelined-solver paper's Algorithm 2 as written (lines 10-17, Jacobi
     * dinv or NULL), in one call: alpha = S[RZ]/S[PAP], beta = alpha^2 S[APZ]/S[RZ] - 1 (the
     * paper's recurrence, which assumes z.Ap = p.Ap); x += alpha p; r -= alpha Ap;
     * p = dinv.*r + beta p; Ap = A p; S[RR] = r.r, S[RZ] = r.(dinv.*r), S[PAP] = p.Ap,
     * S[APZ] = Ap.(dinv.*Ap) of the new vectors; S[ALPHA], S[BETA] stored; S[ZAP] untouched.
     * All fp64. cuda: the paper's two kernels, the update with the first stage of r.r and r.z,
     * the SpMV with that of p.Ap and Ap.(dinv.*Ap) and, in its last block, the second stage of
     * all four, at every size (formats without a fused SpMV kernel: a reduction pass after it).
     * cpu: one parallel region as pipecg_step. NULL where a backend lacks it: method=pipecg
     * refuses pipecg.variant=paper. */
    int (*pipecg_paper_step)(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *p, hk_vec *Ap,
                             const hk_vec *dinv, double *S);

    /* Chronopoulos-Gear PCG fused as in the GPU Krylov thesis, ch. 4 (method=cgcg; all fp64):
     * cgcg_update: the vector updates and the Jacobi preconditioner in one pass:
     *   p = u + beta p; s = w + beta s (beta = 0: p = u, s = w, the old p and s not read);
     *   x += alpha p; r -= alpha s; then u = dinv .* r of the new r where dinv is given (dinv
     *   NULL: u is not written; it may be r, pc=none, or the caller applies its
     *   preconditioner to r next).
     * spmv_cgcg: w = A u with the iteration's inner products fused into the product:
     *   d[0] = r.u, d[1] = w.u, d[2] = r.r (host values, one read; u may be r). On cuda the
     *   sums' second stage runs in the SpMV kernel's last block, at every size.
     * NULL where a backend lacks them: cgcg composes the generic ops. */
    int (*cgcg_update)(hk_vec *x, hk_vec *r, hk_vec *u, hk_vec *p, hk_vec *s, const hk_vec *w,
                       const hk_vec *dinv, double alpha, double beta);
    int (*spmv_cgcg)(hk_mat *A, const hk_vec *u, hk_vec *w, const hk_vec *r, double *d);

    /* Pipelined CG with a general preconditioner (Ghysels-Vanroose), one iteration's eight
     * vector updates in one pass, V = {x, r, u, w, m, n, z, q, s, p}, scalars in the backend
     * array S (HK_G_COUNT slots, solver/pipecg_gv.h). Nothing when S[HK_G_HALT] is set; else
     * with alpha = S[HK_G_ALPHA], beta = S[HK_G_BETA]:
     * z = n + beta z; q = m + beta q; s = w + beta s; p = u + beta p (new z, q, s, p), then
     * x += alpha p; r -= alpha s; u -= alpha q; w -= alpha z; then hk_pipecg_gv_after_step(S,
     * d) on the backend with d = r.u, w.u, r.r, q.q, u.u, p.p, x.x of the new vectors (the
     * next step's coefficients derived there). Never waits. */
    int (*pipecg_gv_step)(hk_vec *const *V, double *S);
    /* n = A m (V[5] = A V[4], fp64), then pipecg_gv_step(V, S), in one pass where the backend
     * can (the step's updates and inner products on each entry of A m as it is made; while
     * S[HK_G_HALT] is set n may be left as it was). NULL where a backend lacks it: pipecg makes
     * the two calls. */
    int (*spmv_pipecg_gv_step)(hk_mat *A, hk_vec *const *V, double *S);

    /* Classical CG's iteration in two passes over the vectors (method=cg; cpu only). NULL
     * where a backend lacks them: cg then composes vec_copy/vec_axpby, mat_spmv, vec_dot, the
     * preconditioner and vec_mdot, with the same results to rounding (solver/ksp/cg.c,
     * cg_spmv_step and cg_update_step, is the one place that chooses).
     * cg_spmv: p = z + beta p (beta = 0: p = z, the old p not read; z NULL: p as it is), then
     *   Ap = A p and *pap = p.Ap (host value); vectors in A's precision, z other than p.
     * cg_update: x += alpha p; r -= alpha Ap; z = dinv .* r (dinv NULL: no preconditioner,
     *   z is not written and may be r); d[0] = r.z and d[1] = r.r of the new r (host values,
     *   sums in fp64). x, r, z, p, Ap share one precision; dinv (Jacobi's inverse diagonal)
     *   may have the other one, and the product is then rounded as hk_pc_apply rounds it:
     *   z = (vector type)((dinv type) r * dinv). */
    int (*cg_spmv)(hk_mat *A, const hk_vec *z, double beta, hk_vec *p, hk_vec *Ap, double *pap);
    int (*cg_update)(hk_vec *x, hk_vec *r, hk_vec *z, const hk_vec *p, const hk_vec *Ap,
                     const hk_vec *dinv, double alpha, double *d);
    /* cg_iter: cg_update without a preconditioner or with Jacobi, then cg_spmv with beta =
     *   d[0] / rz (rz: the previous r.z) and z (r without dinv), in one call: d[0] = r.z,
     *   d[1] = r.r, d[2] = p.Ap of the new direction (cpu only; NULL: cg calls the two). */
    int (*cg_iter)(hk_mat *A, hk_vec *x, hk_vec *r, hk_vec *z, hk_vec *p, hk_vec *Ap,
                   const hk_vec *dinv, double alpha, double rz, double *d);

    /* (The Krylov code may add further fused ops below for pipelined BiCGStab and GMRES; a
     * NULL op means the backend lacks it and the method says so.) */

    /* ---- fused ops of the krylov engineer (CPU versions: solver/cpu/cpu_fused.c) ----------
     * All vectors fp64. S is a backend-resident scalar array (scal_alloc); slot numbers are
     * the HK_S_BI_* names above, or offsets the caller passes in. A result written to S is
     * never read back by these ops' caller until scal_get, so a backend need not wait. */

    /* y = A x, then S[slot[j]] = W[j].y for j < k (k <= 4; W[j] may be y itself). The SpMV
     * with its reductions fused (pipelined BiCGStab lines 6-7 and 10-12). */
    int (*spmv_mdot)(hk_mat *A, const hk_vec *x, hk_vec *y, int k, const hk_vec *const *W,
                     double *S, const int *slot);
    /* Pipelined BiCGStab line 8-9: alpha = S[BI_RR0]/S[BI_APR0] on the backend;
     * s = r - alpha Ap; S[BI_SS] = s.s; S[BI_ALPHA] = alpha. */
    int (*pipebicg_s)(hk_vec *s, const hk_vec *r, const hk_vec *Ap, double *S);
    /* Pipelined BiCGStab lines 13-20, right-preconditioned form (phat = M^-1 p, shat = M^-1 s;
     * without a preconditioner pass phat = p, shat = s):
     * omega = S[BI_ASS]/S[BI_ASAS], beta = -S[BI_ASR0]/S[BI_APR0], alpha = S[BI_ALPHA];
     * x += alpha phat + omega shat; r = s - omega As; p = r + beta (p - omega Ap);
     * S[BI_RR0] = r.r0s, S[BI_RR] = r.r of the new r; S[BI_OMEGA], S[BI_BETA] stored.
     * When S[BI_ASAS] == 0 (s = 0, converged at the half step) omega = 0 is used. */
    int (*pipebicg_update)(hk_vec *x, hk_vec *r, hk_vec *p, const hk_vec *phat, const hk_vec *s,
                           const hk_vec *shat, const hk_vec *As, const hk_vec *Ap,
                           const hk_vec *r0s, double *S);
    /* Pipelined GMRES (Algorithm 6), classical Gram-Schmidt without host round trips:
     * S[j] = X[j].y for j < k, results left on the backend (S may be an offset pointer). */
    int (*vec_mdot_s)(int k, hk_vec *const *X, const hk_vec *y, double *S);
    /* y -= sum_{j<k} S[j] X[j] (coefficients read on the backend); *nrm2 = y.y after it
     * (nrm2 points into a backend scalar array). */
    int (*vec_maxpy_s_nrm)(hk_vec *y, int k, const double *S, hk_vec *const *X, double *nrm2);
    /* y *= 1/sqrt(*nrm2) (no scaling when *nrm2 == 0); then *d = w.y (w may be NULL: skip). */
    int (*vec_scale_s_dot)(hk_vec *y, const double *nrm2, const hk_vec *w, double *d);

    /* ---- incomplete factorisations and their triangular solves (pc ic0/ilu0/mlilu) -----
     * NULL when the backend lacks them; the preconditioner then says so at set-up. CPU
     * references in solver/pc/factor_cpu.c (the exact factorisations, the permutation, the
     * symmetry check, tri_setup), solver/pc/tri_cpu.c (the solves) and solver/pc/iterfact.c
     * (the sweeps); CUDA in cuda/cuda_factor.cu and cuda/cuda_tri.cu.
     *
     * bmat_permute: P = Q A Q^T for the node permutation perm (backend array of nbrows
     *   entries, perm[new] = old): block row i of P is block row perm[i] of A with its block
     *   columns renumbered by the inverse of perm and sorted (blocks moved whole).
     * bmat_sym_check: A (1 x 1 blocks, square) against T = A^T (bmat_transpose): the first row
     *   i (then the first column j) where |a_ij - a_ji| > 1e-10 (max(|a_ij|, |a_ji|) +
     *   sqrt(|a_ii a_jj|)), a missing entry counting as 0; f->row = i (-1 when symmetric),
     *   f->col = j, f->v = {a_ij, a_ji}.
     * factor_exact: the exact IC(0) (sym = 1) / ILU(0) (sym = 0) of A (square). 1 x 1 blocks:
     *   the scalar factorisation; br x br blocks (br <= 8): on the node blocks (the block
     *   algorithms of solver/pc/factor_cpu.c). F (1 x 1 blocks, allocated by the op) is the
     *   factor on scalar rows: ic0: L, the lower triangle of A's (block) pattern with the
     *   diagonal entry last in each row (the diagonal blocks' lower triangles for blocks),
     *   L L^T = A on that pattern; ilu0: the pattern of A (expanded), L strictly below the
     *   diagonal (unit diagonal implied) and U on and above. Each row's sums are formed in
     *   the order of the CPU reference, so the backends agree to rounding. The first failing
     *   row (node) goes to *f (F is then not allocated); no error is returned for it.
     * tri_setup: a handle for tri_solve on the triangle of the factor F (1 x 1 blocks, square,
     *   columns sorted) selected by upper (entries right of the diagonal, else left): its
     *   strict part, the inverse diagonal (1 when unit; a missing diagonal is an error
     *   otherwise) and the level sets (a row's level is one more than the highest level of
     *   the rows it depends on), solved by method (enum hk_tri_method; a backend lacking one
     *   solves by levels) in precision p; *nlevels = the number of levels.
     *   The handle keeps copies: F may be freed once the handle exists. pc=mlilu, which sets
     *   up on the host, uploads its factors (hk_csr_upload) for this op.
     * tri_solve solves T x = b (b, x distinct, precision p); tri_destroy frees the handle. */
    int (*bmat_permute)(const hk_bmat *A, const int32_t *perm, hk_bmat *P);
    int (*bmat_sym_check)(const hk_bmat *A, const hk_bmat *T, hk_factor_fault *f);
    int (*factor_exact)(const hk_bmat *A, int sym, hk_bmat *F, hk_factor_fault *f);
    int (*tri_setup)(const hk_bmat *F, int upper, int unit, int method, hk_precision p,
                     void **handle, int64_t *nlevels);
    int (*tri_solve)(void *handle, const hk_vec *b, hk_vec *x);
    void (*tri_destroy)(void *handle);
    /* Fine-grained iterative IC(0) (sym = 1) / ILU(0) (sym = 0) of Chow and Patel on A (1 x 1
     * blocks, square; sym = 1 reads its lower triangle only): the matrix is scaled to unit
     * diagonal (s_i = 1/sqrt|a_ii|), F (allocated by the op) gets the factor entries after
     * sweeps Jacobi-style sweeps on the scaled matrix, scaled back (ic0: L on the lower
     * pattern, diagonal last; ilu0: L (unit, strictly lower) and U in A's pattern). The exact
     * rule, which every backend follows to the same sums, is in solver/pc/iterfact.c. *bad =
     * the first row with a missing or zero diagonal or a bad pivot in the last sweep (F is
     * then not allocated), or -1. */
    int (*factor_sweeps)(const hk_bmat *A, int sym, int sweeps, hk_bmat *F, int64_t *bad);

    /* ---- set-up on the backend (contracts: solver/hk_setup.h) ----------------------------
     * CPU references in solver/cpu/, CUDA versions in cuda/. An op a backend lacks is NULL
     * and its caller says so. Outputs (hk_bmat, hk_graph, hk_vec) are allocated by the op on
     * the same backend unless stated; *bad-style outputs are host values (-1: none). */

    /* formats: build A->fmt in A->prec from K (br == bc == A->bs) on the backend, with
     * A->slice and A->sigma (layouts above hk_fmt, identical to hk_fmt_from_bcsr); fills
     * A's statistics (nnz, stored, width, bytes) and A->bdata. mat_download returns the built arrays to the
     * host in the hk_fmt layout (fp64 values; tests compare them with hk_fmt_from_bcsr). */
    int (*mat_build)(hk_mat *A, const hk_bmat *K);
    /* Optional: A was built by mat_build from a matrix of K's sizes and sparsity pattern; its
     * values replaced from K in place, the layout (slices, permutation, indices, the kernel's
     * tables) and every array's address kept: the bytes of a fresh mat_build from K. 0 when
     * done; HK_ERR_UNSUPPORTED when this format cannot (hk_mat_rebuild then builds anew). */
    int (*mat_refill)(hk_mat *A, const hk_bmat *K);
    /* Optional: mat_refill that also finds, in the same pass over K's values, K's first block
     * row holding a NaN or an infinity (*first_bad, -1 when none: bmat_first_nonfinite's row),
     * so that a values-only update reads the new values once. HK_ERR_UNSUPPORTED, nothing
     * written, where the format's refill cannot (the caller checks, then refills). */
    int (*mat_refill_checked)(hk_mat *A, const hk_bmat *K, int64_t *first_bad);
    /* Optional: dst in fp32 from src, a built fp64 matrix of this backend (the fp32 operator
     * of a preconditioner from the solver's own): dst's settings (format, slicing, tpr, ...) are
     * src's, set by the caller with dst->prec = HK_FP32. With dst->bdata NULL, dst gets src's
     * layout (indices, slices, permutation copied; the kernel's tables made as mat_build makes
     * them) and src's values rounded to fp32, padding zeros kept: the bytes of a fresh mat_build
     * from the K that src was built from. With dst->bdata set (dst built before from a matrix of
     * src's pattern in src's format and slicing), only its values are replaced in place, every
     * address kept. HK_ERR_UNSUPPORTED where a format cannot (the caller builds from K). */
    int (*mat_convert)(hk_mat *dst, const hk_mat *src);
    /* format=auto: the layout this backend's SpMV runs fastest for K in precision p
     * (hk_format_auto_by_cache with its cache); NULL: csr for bs 1, bsr otherwise. */
    int (*format_auto)(const hk_bmat *K, hk_precision p, hk_format *fmt);
    int (*mat_download)(const hk_mat *A, hk_fmt *F);

    /* generic sparse set-up: T = A^T (blocks transposed: bc x br); S = A with 1 x 1 blocks
     * (every stored block entry kept, zeros too); C = A B (A->bc == B->br, the block pattern
     * is the symbolic product, deterministic sums in the order of A's row then B's row). */
    int (*bmat_transpose)(const hk_bmat *A, hk_bmat *T);
    int (*bmat_expand)(const hk_bmat *A, hk_bmat *S);
    /* B = S (1 x 1 blocks, sizes multiples of bs <= 8) regrouped into bs x bs blocks, every
     * entry kept, zeros where S has none (solver/bmat_compress.h): the inverse of bmat_expand,
     * for factors built by rows (FSAI, SAI) that the operator's block formats then store. */
    int (*bmat_compress)(const hk_bmat *S, int bs, hk_bmat *B);
    int (*bmat_spgemm)(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
    /* The values of C = A B into C's pattern (rowptr and colind as bmat_spgemm made them for
     * these patterns; val allocated by the caller): every entry summed in bmat_spgemm's order,
     * so the digits are the same; a product block outside the pattern is an error naming its
     * block row. The numeric re-set-up of pc=amg (hk_solver_update_values). */
    int (*bmat_spgemm_numeric)(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
    /* Optional (pc=amg's symmetric Galerkin product; NULL: it forms A_c by the whole product).
     * _pattern: bmat_spgemm's pattern of C = A B exactly, C->val allocated with its contents
     * unspecified. _numeric_upper: bmat_spgemm_numeric restricted to C's blocks with block
     * column >= block row, each one the digits bmat_spgemm_numeric gives it, the other blocks
     * untouched; a summed product block outside the pattern is an error naming its block row
     * (products below the diagonal are not looked at). bmat_mirror_lower: C square in blocks,
     * its blocks square, its pattern symmetric: every block (I, J) with J < I becomes the
     * transpose of block (J, I), and each diagonal block's lower triangle the transpose of its
     * upper one (C is then exactly symmetric); a block without its mirror is an error naming
     * its block row. */
    int (*bmat_spgemm_pattern)(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
    int (*bmat_spgemm_numeric_upper)(const hk_bmat *A, const hk_bmat *B, hk_bmat *C);
    int (*bmat_mirror_lower)(hk_bmat *C);
    /* Optional (distributed pc=amg's coarse operator: the blocks below the diagonal whose
     * mirrors another process holds; NULL: that set-up refuses the backend): for k < n, block
     * to[k] of val (bs x bs blocks) = block k of src transposed. to holds n distinct block
     * positions; val, to, src in the backend's memory; src does not overlap val. */
    int (*bmat_put_transposed)(double *val, int bs, const int64_t *to, const double *src,
                               int64_t n);
    /* Optional (pc=amg's values-only re-set-up; NULL: it calls the numeric ops above).
     * bmat_spgemm_plan: for C = A B into C's pattern (upper: only its blocks with block column
     * >= block row, as _numeric_upper), what lets the values be summed with no search of the
     * rows: per block of C the (block of A, block of B) pairs that add into it, in
     * bmat_spgemm's order; in backend memory (*bytes), freed by bmat_spgemm_plan_free. A
     * product block outside C's pattern is an error naming its block row; *plan = NULL (no
     * error) where the backend has no planned product for the shapes or sizes.
     * bmat_spgemm_numeric_plan: the values that bmat_spgemm_numeric (upper:
     * bmat_spgemm_numeric_upper) gives, byte for byte, for A, B, C of the plan's patterns
     * (their sizes are checked, their columns are the caller's promise). */
    int (*bmat_spgemm_plan)(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C, int upper,
                            void **plan, size_t *bytes);
    int (*bmat_spgemm_numeric_plan)(const void *plan, const hk_bmat *A, const hk_bmat *B,
                                    hk_bmat *C);
    void (*bmat_spgemm_plan_free)(void *plan);
    /* Optional (pc=amg's values-only re-set-up with fp32 levels; NULL: it keeps fp64 copies of
     * P and R). bmat_spgemm_numeric_plan's values, byte for byte, with A's values read from the
     * fp32 array a32 where it is given (A->val then unused) and B's from b32 where it is given
     * (block k at b32 + k * b32_stride, b32_stride >= B's br * bc, the padding not read; B->val
     * then unused): each fp32 value is widened exactly to fp64 before the same products and
     * sums. HK_ERR_UNSUPPORTED where the backend has no variant for the plan's shapes with these
     * operands (or no plan kernel under its settings): the caller then passes fp64 values to
     * bmat_spgemm_numeric_plan. */
    int (*bmat_spgemm_numeric_plan_f32)(const void *plan, const hk_bmat *A, const float *a32,
                                        const hk_bmat *B, const float *b32, int b32_stride,
                                        hk_bmat *C);
    /* C = A T for T with at most one block per block row (pc=amg's tentative prolongator:
     * the block of row k in column agg(k)): bmat_spgemm's pattern and digits (each entry summed
     * in the order of A's row), by a product that needs no search of T's rows; a row of T with
     * more than one block is an error naming it. _numeric: the values into C's pattern, as
     * bmat_spgemm_numeric. The CPU's are the reference (the general product after the check). */
    int (*amg_tentative_product)(const hk_bmat *A, const hk_bmat *T, hk_bmat *C);
    int (*amg_tentative_product_numeric)(const hk_bmat *A, const hk_bmat *T, hk_bmat *C);
    /* out (fp64, allocated by the caller: n = nbrows*br, or nbrows*br*br for BLOCK_INV) by
     * mode (enum hk_diag_mode); *bad = first bad scalar row (0-based) or -1. */
    int (*bmat_diag)(const hk_bmat *A, int mode, hk_vec *out, int64_t *bad);
    /* *row = the first block row (0-based) holding a NaN or infinite value, or -1: the
     * solver's check of K, run where K lives after its upload. */
    int (*bmat_first_nonfinite)(const hk_bmat *A, int64_t *row);

    /* aggregation AMG (pc=amg): strength graph of the node blocks (j != i strong when
     * ||A_ij||_F > theta sqrt(||A_ii||_F ||A_jj||_F), the larger of A_ij and A_ji where both
     * are stored; none for a node whose off-diagonal blocks are zero; a matrix with more
     * block columns than rows is read as its square part: columns from nbrows on, a
     * distributed level's ghosts, are left out of the graph and of the isolation test, so
     * that it gives the graph of its owned diagonal block); distance-2 MIS
     * aggregation (agg[i] in [0, nagg), -1 for a node without strong neighbours; the exact
     * rule is in docs/amg-aggregation.md and both backends follow it to the same result);
     * tentative prolongator
     * T (br = b, bc = nns, one block per aggregated node) and coarse near-null space Bc
     * ((nagg*nns) x nns, column-major, caller-allocated) from B (n x nns, column-major) by a
     * QR per aggregate, dependent columns dropped (set to 0); P = T - w Dinv (A T) on the
     * pattern of AT (Dinv: BLOCK_INV output). agg is a caller-allocated backend array. */
    int (*amg_strength)(const hk_bmat *A, double theta, hk_graph *S);
    int (*amg_aggregate)(const hk_graph *S, int32_t *agg, int64_t *nagg);
    int (*amg_tentative)(const int32_t *agg, int64_t nagg, int64_t nnodes, int b, int nns,
                         const double *B, hk_bmat *T, double *Bc);
    int (*amg_smooth_prolongator)(const hk_bmat *AT, const hk_bmat *T, const hk_vec *Dinv,
                                  double w, hk_bmat *P);
    /* The re-set-up's numeric halves (pc=amg, hk_solver_update_values), each the digits of the
     * whole op: amg_smooth_prolongator's values into P, whose pattern is A T's (P->val
     * caller-allocated; it may be AT->val: in place); the values of T = A^T into T's pattern
     * (bmat_transpose's for A; val caller-allocated), a block of T that A lacks an error
     * naming T's block row. */
    int (*amg_smooth_prolongator_numeric)(const hk_bmat *AT, const hk_bmat *T,
                                          const hk_vec *Dinv, double w, hk_bmat *P);
    int (*bmat_transpose_numeric)(const hk_bmat *A, hk_bmat *T);
    /* dense coarse solve: Minv (caller-allocated, n*n entries in its precision, n = scalar
     * rows of A) = A^-1 by Cholesky of A's lower triangle; an exactly zero row is a decoupled
     * dof (identity: its row and column of Minv are the identity's, so a solve returns the
     * right-hand side's entry there, 0 on AMG coarse levels); *bad = the first scalar row with
     * a non-positive or non-finite pivot, or -1 (Minv is then 0). y = M x for a dense n x n M
     * (column-major) in one precision (sums in fp64). */
    int (*dense_inverse)(const hk_bmat *A, hk_vec *Minv, int64_t *bad);
    int (*dense_gemv)(const hk_vec *M, const hk_vec *x, hk_vec *y);
    /* l1-Jacobi scaling (pc.amg.smoother=l1-jacobi): out_i = 1/(a_ii + sum_{j != i} |a_ij|)
     * over scalar row i (out fp64, n = nbrows*br, caller-allocated); 0 for an all-zero row;
     * a row whose sum is not positive and finite gets 0 and *bad = the first such row, or -1. */
    int (*amg_l1_diag)(const hk_bmat *A, hk_vec *out, int64_t *bad);
    /* The start vector of pc=amg's spectral estimate, built where it is used: v_i = 0.5 +
     * (hk_hash32(i) & 0xffff) / 65536 (every entry in [0.5, 1.5), generic, the same digits on
     * every backend), in v's precision. */
    int (*amg_start_vector)(hk_vec *v);
    /* near-null space of pc=amg (B: (nnodes*bs) x nns, column-major, caller-allocated):
     * coords NULL: the bs translations (nns = bs); else the rigid-body modes (bs = 2: nns = 3,
     * bs = 3: nns = 6) of the node coordinates (fp64, nnodes*bs), x = (coords - center)*scale;
     * rows i with decoupled[i] != 0 (bmat_diag DECOUPLED; may be NULL) are zero. y = A x for
     * a block CSR A of any br x bc blocks (br, bc <= 8) with x, y of one precision; the values
     * are A->val, or val32 (fp32, the same layout, backend memory) when it is not NULL; sums
     * in fp64 (their order within a row may differ between backends). */
    int (*amg_rigid_modes)(int64_t nnodes, int bs, const hk_vec *coords, const double *center,
                           double scale, const hk_vec *decoupled, double *B);
    /* The frame of those modes from coordinates in the backend's memory (fp64, nnodes*bs,
     * bs = 2 or 3): center[a] = the mean of coordinate a (center[bs..2] = 0), *scale = 1 /
     * the largest |x_a - center[a]| (1 when that is 0). Deterministic: the CPU sums 64 fixed
     * chunks of nodes in order (hk_amg_coord_frame_host), a device in a fixed order of its
     * own (its digits may differ in the last place). A non-finite coordinate: HK_ERR_ARG. */
    int (*amg_coord_frame)(int64_t nnodes, int bs, const hk_vec *coords, double *center,
                           double *scale);
    /* That frame's parts on one process of several (pc=amg adds them over the processes):
     * from coordinates in the backend's memory (fp64, nnodes*bs, bs = 2 or 3), sum[a] = the
     * sum of coordinate a (the CPU in node order, one thread; a device in a fixed order of its
     * own), lo[a], hi[a] = its smallest and largest (no node: +inf and -inf); entries bs..2
     * are 0. A non-finite coordinate makes its sum non-finite (the caller checks the sums). */
    int (*amg_coord_bounds)(int64_t nnodes, int bs, const hk_vec *coords, double *sum, double *lo,
                            double *hi);
    int (*bmat_spmv)(const hk_bmat *A, const float *val32, const hk_vec *x, hk_vec *y);

    /* FSAI and SAI set-up ops (pc=fsai, pc=sai; the exact rules, which every backend follows
     * to the same result, are in solver/cpu/cpu_fsai.c). Patterns and factors are on scalar
     * rows (n = nbrows*br of the square-block K). A row that cannot be done is no error: it
     * goes to *fault (first such row and why; row -1 when none) and no output is allocated.
     * fsai_pattern: S = lower pattern of G: the sparsified Ã (block = 0: scalar entries with
     *   |a_ij| > tau sqrt(a_ii a_jj); block = 1: node blocks with ||A_IJ||_F > tau
     *   sqrt(||A_II||_F ||A_JJ||_F), all dofs of a node sharing the pattern), k steps of
     *   B_{p+1} = Low(B_p Ã), rows sorted (diagonal last); rows over cap entries: TOO_LARGE.
     * fsai_factor: G (1 x 1 blocks, columns a subset of S's) = per row the Cholesky of
     *   A[P_i,P_i], g_i = w / sqrt(w_m), post-filtration with delta and 1/sqrt(1+eps^T A eps).
     * sai_pattern: St (row k = column k of M) = {i : i == k or |a_ik| > (1-tau) max},
     *   max = max_j |a_ij| (row i's, colmax = 0: equation 5.3 of the GPU Krylov thesis) or
     *   max_i |a_ik| (column k's, colmax = 1: the thesis's "Find J" step); Kt = the scalar
     *   transpose of K (1 x 1 blocks).
     * sai_factor: Mt (1 x 1 blocks on St) = column k of M = argmin ||A(I,J) m - e_k(I)|| by
     *   Householder QR (qr = HK_SAI_HOUSEHOLDER) or by classical Gram-Schmidt, m = R^-1 Q^T e
     *   (qr = HK_SAI_GRAM_SCHMIDT, the thesis's Fig. 5.4); |I| over max_rows or |J| over
     *   max_cols: TOO_LARGE. */
    int (*fsai_pattern)(const hk_bmat *K, double tau, int k, int block, int64_t cap,
                        hk_graph *S, hk_setup_fault *fault);
    int (*fsai_factor)(const hk_bmat *K, const hk_graph *S, double delta, hk_bmat *G,
                       hk_setup_fault *fault);
    int (*sai_pattern)(const hk_bmat *K, const hk_bmat *Kt, double tau, int colmax, hk_graph *St);
    int (*sai_factor)(const hk_bmat *Kt, const hk_graph *St, int64_t max_rows, int64_t max_cols,
                      int qr, hk_bmat *Mt, hk_setup_fault *fault);

    /* ---- replay of recorded iterations (cuda: CUDA graphs; NULL on cpu) -------------------
     * graph_begin starts recording the ops issued after it instead of running them;
     * graph_end stops and returns a replayable graph; graph_launch runs it once more (queued,
     * does not wait); graph_free releases it. Between begin and end no op may wait for the
     * device (no vec_dot, vec_mdot, scal_get, copy_from, sync) and nothing may be allocated.
     * Host scalars passed to ops are frozen into the graph; scalars read from a backend
     * array (the fused ops) are read at replay. A method records check_every iterations of
     * fused ops once, then per check: graph_launch + one scal_get. */
    int (*graph_begin)(void);
    int (*graph_end)(void **graph);
    int (*graph_launch)(void *graph);
    void (*graph_free)(void *graph);

    /* ---- s-step methods (method=scg; CPU: solver/cpu/cpu_mpk.c, CUDA: cuda/cuda_mpk.cu) ---
     * Matrix powers (GPU Krylov thesis ch. 6): mpk_plan cuts the block rows of K (square
     * blocks, bs <= 6; K must outlive the plan) into partitions of `block` block rows and adds
     * to each its ghost zone, the rows at graph distance <= k, so that one pass computes k
     * levels of a partition without touching another's results (rows near the partition's
     * edge are computed redundantly). The plan is built on the backend from K's pattern;
     * *info says what it holds. When the redundant work would exceed max_work times the k
     * SpMVs it replaces (max_work > 0), no plan is made: *plan = NULL, info->work filled.
     * schedule HK_MPK_WAVEFRONT instead cuts the block rows into chunks of `block` rows (0:
     * the backend chooses from its cache size; any size is raised to at least twice K's
     * bandwidth h = max |column - row|) and computes a pass in stages: at stage t level j
     * (1..kk) covers the rows of chunk t - j shifted back by (j - 1) h rows, whose inputs
     * (level j - 1 on that range widened by h) were all finished at stages t - 1 and t - 2.
     * No row is computed twice (info->work = k nbrows, nparts = chunks, ext_rows = nbrows),
     * and a chunk's matrix rows are read again at the next levels while they are still in
     * cache. max_work is then ignored. The CPU runs exactly these stages; CUDA runs the same
     * recurrence as one kernel whose tiles of a thread block's rows wait on flags instead of
     * stage barriers, with the chunk rounded to whole tiles and at least h plus one tile
     * (cuda/cuda_mpk.cu); info->block is the chunk used.
     * schedule HK_MPK_SHARED cuts the ghost-zone partitions of HK_MPK_GHOST, and a pass copies
     * each partition's matrix rows (blocks and local columns) and its work vectors into the
     * on-chip memory of one thread block before it computes its levels from there; when the
     * largest partition (info->stage_bytes) does not fit, or on a backend without such memory
     * (the CPU), no plan is made (*plan = NULL, no error), as for max_work.
     * mpk_apply computes kk <= k levels of the three-term recurrence, for j < kk:
     *   W[j+1] = coef[3j+1] W[j] + coef[3j+2] W[j-1] + coef[3j] A U[j]  (added in this order)
     *   U[j+1] = d .* W[j+1]          (d NULL: no scaling, U = W and U is not used)
     * with W[0] given, W[-1] = wprev (NULL: that term is 0) and U[0] = d .* W[0] written too.
     * All vectors fp64. d is the Jacobi preconditioner, so U is the basis of D A and W = U/d.
     * On the cpu every plan (either schedule, any partition, chunk or pass length) gives the
     * digits of the composed chain: mat_spmv of a format that sums in BSR order (every fp64
     * format but pcsr), vec_axpbypcz(W[j+1], coef[3j+1], W[j], coef[3j+2], W[j-1], coef[3j])
     * or vec_axpby without W[j-1], vec_pointwise_mult.
     * mpk_wave_chunks: scg's default basis (solver/ksp/scg.c) is the wavefront with the
     * backend's chunk where K's block rows make at least this many chunks of twice its
     * bandwidth, else one SpMV per vector (a fixed rule, not a timing, so that a run repeats).
     * vec_gram: G[i*m + j] = X[i].Y[j] (Y NULL: Y = X) and, GX not NULL, GX[i*m + j] =
     * X[i].X[j], for i, j < m <= HK_GRAM_MAX, in one pass over the vectors (host results). */
    int (*mpk_plan)(const hk_bmat *K, int schedule, int64_t block, int k, double max_work,
                    void **plan, struct hk_mpk_info *info);
    int (*mpk_apply)(void *plan, int kk, const double *coef, const hk_vec *d, const hk_vec *wprev,
                     hk_vec *const *W, hk_vec *const *U);
    void (*mpk_free)(void *plan);
    int mpk_wave_chunks;
    /* Optional: a streamed plan (HK_MPK_STREAM) for a matrix larger than the backend's memory,
     * built from the HOST block CSR K (not needed afterwards; never uploaded whole): ghost-zone
     * partitions of `block` block rows (0: the largest whose device bytes fit budget bytes, 0:
     * HK_MPK_STREAM_MB MiB) cut and packed in host memory by solver/mpk_stream.c; mpk_apply
     * then copies each partition in turn (cuda: pinned memory, two buffers, copies overlapping
     * the computation) and computes the same recurrence into the same backend vectors. As for
     * mpk_plan, max_work > 0 refuses partitions whose redundant work exceeds max_work times
     * the k SpMVs (*plan = NULL, info->work and info->block filled, no error): their packs
     * would take that many times K's host memory. */
    int (*mpk_stream_plan)(const hk_bcsr *K, int64_t block, size_t budget, int k, double max_work,
                           void **plan, struct hk_mpk_info *info);
    int (*vec_gram)(int m, hk_vec *const *X, hk_vec *const *Y, double *G, double *GX);

    /* ---- blocks of vectors (the eigensolver, solver/eigen/; CPU: solver/cpu/cpu_block.c,
     * CUDA: cuda/cuda_block.cu) ------------------------------------------------------------
     * A block is one fp64 hk_vec holding k columns of n entries, column after column (column j
     * at entries [j n, (j + 1) n)); a block's columns c0.. are a block too (solver/eigen/
     * block.c makes such views). Host matrices C, G are column-major. Sums are deterministic
     * (a fixed order for given sizes, whatever the thread count; cuda: cuBLAS dgemm, which
     * repeats on one device).
     * block_spmv: Y = A X for k >= 1 columns (X: k A->ncols entries, Y: k A->nrows; fp64 A),
     *   reading the matrix once for up to 8 columns where the format has a block kernel (csr,
     *   bsr, ell, sell, bell, sbell; cuda: block sizes up to 3), each column's sums in the
     *   order of the single SpMV's; other formats: k single SpMVs.
     * block_gram: G[i + j p] = X_i . Y_j (p columns of X, q of Y, n rows; host result).
     * block_update: Y = X C + beta Y (X: p columns, C: p x q host, Y: q columns, distinct from
     *   X; beta = 0: Y is not read).
     * block_dots: d[j] = X_j . Y_j for j < k (host result). */
    int (*block_spmv)(hk_mat *A, int k, const hk_vec *X, hk_vec *Y);
    int (*block_gram)(int64_t n, int p, const hk_vec *X, int q, const hk_vec *Y, double *G);
    int (*block_update)(int64_t n, int p, const hk_vec *X, int q, const double *C, double beta,
                        hk_vec *Y);
    int (*block_dots)(int64_t n, int k, const hk_vec *X, const hk_vec *Y, double *d);

    /* ---- distributed runs (solver/dist/, docs/parallel.md) -------------------------------
     * vec_gather: y[i bs + r] = x[idx[i] bs + r] for i < n, r < bs (idx: n block indices in
     * the backend's memory; x, y of one precision, or x fp64 and y fp32, each entry rounded as
     * vec_convert rounds it; y->n >= n bs): packs the halo's send buffer and the boundary
     * rows' owned columns, puts an operator's values in order (converted in the same pass).
     * NULL: the backend cannot run distributed. */
    int (*vec_gather)(hk_vec *y, const hk_vec *x, const int32_t *idx, int64_t n, int bs);
    /* The transfer operators' local patterns (pc=amg on several processes, solver/dist/
     * dist_amg.c), made where the blocks are. dist_read_columns: which of ncols columns the n
     * entries col[0..n) read: rank[j] the number of read columns before j where j is read, -1
     * where not (ncols entries); list (NULL: not made) the read columns ascending; *nread
     * (host) how many. dist_local_pattern: nrows rows whose blocks are col[rowptr[i] -
     * rowptr[0] .. rowptr[i + 1] - rowptr[0]), column j read as local column map[j] (>= 0,
     * distinct within a row; < nbc an owned column, else a ghost). Out: rp (nrows + 1), lcol
     * (rowptr[nrows] - rowptr[0]) each row's local columns ascending, src[q] the position
     * (from rowptr[0]) of block q's source; split nonzero and rows of both kinds (an interior
     * row reads no ghost): the interior rows first, then the boundary rows, each kind in its
     * order, ypos[i] row i's new position, *nint (host) the interior rows; else the rows in
     * their order and *nint 0 (ypos, nrows entries, then scratch). All arrays on the backend,
     * outputs allocated by the caller; the same bytes on every backend. */
    int (*dist_read_columns)(const int32_t *col, int64_t n, int64_t ncols, int32_t *rank,
                             int32_t *list, int64_t *nread);
    int (*dist_local_pattern)(int64_t nrows, const int64_t *rowptr, const int32_t *col,
                              const int32_t *map, int64_t nbc, int split, int64_t *rp,
                              int32_t *lcol, int32_t *src, int32_t *ypos, int64_t *nint);
    /* dist_split: a process's rows split for the distributed operator (solver/dist/dist.c),
     * every array in the backend's memory (hk_dist_rows). Koo: every internal row's owned
     * columns in internal numbering (nown x nown); Kbnd: the boundary rows [nint, nown) whole,
     * their columns renumbered into [the nbc owned columns they read, then the ghosts]
     * (nown - nint x nbc + nghost). Every row sorted by column (equal columns in the caller's
     * order); both allocated by hk_bmat_alloc (bs x bs blocks, values not filled). src_oo,
     * src_bnd: each of their blocks' position in R->colind; bcol: the nbc internal owned
     * columns the boundary rows read, ascending; the three allocated by the op (be's alloc,
     * at least one entry). The same bytes on every backend and thread count. */
    int (*dist_split)(const hk_dist_rows *R, hk_bmat *Koo, int32_t **src_oo, hk_bmat *Kbnd,
                      int32_t **src_bnd, int32_t **bcol, int64_t *nbc);
    /* dist_scan: one pass over a process's rows (R: rowptr, colind, row0, nown, nglobal; the
     * rest unused), every array in the backend's memory: kind[i] (nown entries, the caller's)
     * -1 for a row that reads a column outside [row0, row0 + nown) (a boundary row), -2 for
     * the others; *ghost: those columns, sorted and unique (*nghost of them, allocated by the
     * op, be's alloc, at least one entry). *bad: the first row with a column outside
     * [0, nglobal) (then kind and ghost are not made), -1 where none. */
    int (*dist_scan)(const hk_dist_rows *R, int32_t *kind, int64_t **ghost, int64_t *nghost,
                     int64_t *bad);
    /* dist_global_columns: a part's columns made global (a part assembled on its device hands
     * its rows there, hk_solver_create_dist_device): out[k] (n entries) = row0 + c for the local
     * column c = col[k] < nown (the owned nodes), ghost_gid[c - nown] for nown <= c < nown +
     * nghost (the part's other nodes), -1 for any other c (the layout's scan then names the
     * row). col, ghost_gid and out in the backend's memory; the same bytes on every backend. */
    int (*dist_global_columns)(const int32_t *col, int64_t n, int64_t row0, int64_t nown,
                               const int64_t *ghost_gid, int64_t nghost, int32_t *out);
    /* COO to CSR, duplicates summed in input order (pc=amg's distributed Galerkin merge: a
     * process's own rows of P^T (A P) with the blocks its neighbours sent). The input entries,
     * in order, are A's blocks (block CSR; block p of A's row i has row rmap[i], or none when
     * rmap[i] < 0, and key cmap[A->colind[p]]) then the n entries k (row erow[k], key ekey[k],
     * block eval + k bsz, bsz = A->br A->bc); rows in [0, nrows), keys in [0, nkeys). Every
     * array is in the backend's memory (A's values included). Out, allocated by the op there:
     * *rowptr (nrows + 1), each row's distinct keys ascending in *key (rowptr[nrows] of them)
     * and their blocks in *val: each (row, key)'s entries summed in input order, the first
     * copied, the others added one at a time (the same bits on every backend). A row or key
     * out of range is an error naming the entry. CPU reference: solver/cpu/cpu_dist.c. */
    int (*coo_to_csr)(const hk_bmat *A, const int32_t *rmap, const int64_t *cmap, int64_t n,
                      const int32_t *erow, const int64_t *ekey, const double *eval, int64_t nrows,
                      int64_t nkeys, int64_t **rowptr, int64_t **key, double **val);
    /* The ghost rows of the distributed AMG set-up (solver/dist/dist_amg.c): rows of a block
     * matrix A travel as records of doubles [count, (column, block of br bc)...], columns
     * as global ids. Every array is in the backend's memory.
     * dist_row_lengths: len[j] = the blocks of row rows[j] of A, j < n.
     * dist_pack_rows: record j (row rows[j], j < n) at out[at[j]], its columns colmap[c]
     * (A->nbcols ascending global ids).
     * dist_mark_columns: mark[c] = 1 where A has a block in column c, else 0 (c < nbcols).
     * dist_extend_rows: X = A's rows (column c renamed cpos[c]), then one row a ghost k < ng:
     * the record at rec[rat[k]], its blocks from X's block A->nnzb + gat[k] (gat: ng + 1,
     * gat[0] = 0), its columns the positions of their ids in cols[0..ncols) (ascending; each
     * id there). X: A->nbrows + ng rows, A->nnzb + gat[ng] blocks, its arrays allocated by
     * the caller. NULL: distributed pc=amg refuses the backend. */
    int (*dist_row_lengths)(const hk_bmat *A, const int32_t *rows, int64_t n, int64_t *len);
    int (*dist_pack_rows)(const hk_bmat *A, const int64_t *colmap, const int32_t *rows, int64_t n,
                          const int64_t *at, double *out);
    int (*dist_mark_columns)(const hk_bmat *A, int32_t *mark);
    int (*dist_extend_rows)(const hk_bmat *A, const int32_t *cpos, int64_t ng, const double *rec,
                            const int64_t *rat, const int64_t *gat, const int64_t *cols,
                            int64_t ncols, hk_bmat *X);
    /* The device transport (dist.comm=nccl: NCCL on cuda; NULL where the backend or the build
     * has none, and the layer stages through host memory and MPI). One communicator dc per
     * layout: dcomm_id writes a new one's id (HK_DCOMM_ID_BYTES) on one process, every
     * process passes it to dcomm_create, which returns once all nranks have joined or fails
     * on its own after timeout seconds (the caller agrees on the outcome). dcomm_exchange
     * posts one round's receives (recv_off[j] .. recv_off[j+1] entries of `bytes` from
     * recv_rank[j]) and sends, device buffers, after the work queued so far, without holding
     * up the work queued next; dcomm_wait makes the work queued next wait for that round.
     * dcomm_sum: n device doubles v summed over the processes in place, in rank order from
     * every process's v (the same bits everywhere), queued. dcomm_destroy(dc, abort): abort
     * ends its pending operations at once (after a failure). Errors of these ops are the
     * process's alone: the layer ends the run on them (solver/dist/dcomm.c). */
    int (*dcomm_id)(void *id);
    int (*dcomm_create)(const void *id, int nranks, int rank, double timeout, void **dc);
    int (*dcomm_exchange)(void *dc, int nrecv, const int *recv_rank, const int64_t *recv_off,
                          void *recv, int nsend, const int *send_rank, const int64_t *send_off,
                          const void *send, size_t bytes);
    int (*dcomm_wait)(void *dc);
    int (*dcomm_sum)(void *dc, double *v, int n);
    void (*dcomm_destroy)(void *dc, int abort);
    /* dcomm_connect: dc's links to the other processes made now, waited for (at most its
     * timeout; NCCL makes a pair's link at its first message and a sum's at the first sum:
     * about 1.4 s on four H200s inside the first set-up otherwise): a message of one value
     * with every other process (with the ranks either side only, above 16 processes) and one
     * sum's gather. NULL: nothing to make ahead. */
    int (*dcomm_connect)(void *dc);
    /* NULL in a backend's own table. In the distributed table of a solver (a copy of the
     * backend's with its reductions summed over the processes, solver/dist/dist_ops.c): the
     * layout, whose communicator sums them. A new op that sums over entries or reads a matrix
     * needs its line in hk_dist_ops_init (replaced, or NULL where it is not distributed). */
    struct hk_dist *dist;
} hk_backend_ops;

/* For code above the ops that reduces on the host (pc=poly's start vector): v[0..n) summed
 * over the processes of be's distributed table (nothing on a backend's own table); the status
 * of a set-up step agreed by every process (hk_comm_agree; the status itself otherwise). */
int hk_be_sum(const hk_backend_ops *be, double *v, int n);
/* amg_coord_frame's CPU arithmetic on host coordinates (solver/cpu/cpu_amg.c; pc=amg uses it
 * for coordinates given on the host, whatever the backend). */
int hk_amg_coord_frame_host(const double *x, int64_t nnodes, int bs, double *center, double *scale);
int hk_be_agree(const hk_backend_ops *be, int ierr);

/* The pairs of one vec_gram call (CPU and CUDA alike): over V = X then Y (distinct: Y given
 * and not X), X^T Y (only i <= j when not distinct) then, want_gx, X^T X (i <= j); pair q is
 * V[a[q]].V[b[q]]; the count is returned. hk_gram_scatter puts the sums s[q] into G, GX. */
int hk_gram_pairs(int m, int distinct, int want_gx, unsigned char *a, unsigned char *b);
void hk_gram_scatter(int m, int distinct, const double *s, double *G, double *GX);

extern const hk_backend_ops hk_backend_cpu;
#ifdef HOOKE_HAVE_CUDA
extern const hk_backend_ops hk_backend_cuda;
#endif

/* ---- preconditioners ------------------------------------------------------------------- */

typedef struct hk_pc hk_pc;

typedef struct hk_pc_type {
    const char *name;
    const char *summary; /* one line for help */
    const char *options; /* its option keys, space separated, for error hints */
    int symmetric;       /* usable with CG-type methods */
    /* A nonsymmetric type's symmetric positive definite form (may be NULL): the type that
     * CG-type methods get instead when they are given this one. */
    const struct hk_pc_type *symmetric_variant;
    /* Set up from K (block CSR in the backend's memory, fp64) and the operator A (its format
     * and precision) through backend ops; store what apply needs as backend objects in
     * pc->prec. */
    int (*setup)(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o);
    /* z = M^{-1} r; r and z have precision pc->prec. */
    int (*apply)(hk_pc *pc, const hk_vec *r, hk_vec *z);
    /* apply only issues backend ops that neither wait for the device nor allocate, so a
     * pipelined method may record it in a replayed graph (graph_begin) */
    int apply_capturable;
    void (*destroy)(hk_pc *pc);
    /* Optional: what the set-up built, for the solve line (may be NULL). */
    void (*describe)(const hk_pc *pc, char *buf, size_t len);
    /* Optional: K's values changed, its pattern not (hk_solver_update_values): redo the
     * numeric part of the set-up and keep the rest. NULL: the solver sets up anew. A is the
     * solver's operator, rebuilt in place with the new values. */
    int (*update)(hk_pc *pc, const hk_bmat *K, hk_mat *A);
    /* Optional, with pc->fallback_armed: the reduced-precision preconditioner stalled at the
     * relative residual `at` (NaN or infinite: it overflowed); rebuild it in fp64 (pc->prec
     * becomes HK_FP64, armed cleared). */
    int (*fallback)(hk_pc *pc, const hk_bmat *K, hk_mat *A, double at);
} hk_pc_type;

struct hk_pc {
    const hk_pc_type *type;
    const hk_backend_ops *be;
    hk_precision prec; /* precision of the preconditioner's data and apply */
    int64_t n;
    int bs;
    void *data;        /* the type's own state */
    hk_vec *r_low, *z_low; /* conversion buffers when prec differs from the caller's vectors */
    hk_vec *dinv;      /* set by jacobi: inverse diagonal, lets pipecg fuse it */
    const hk_nearnull *nearnull; /* the caller's near-null space (pc=amg), may be NULL */
    const hk_bmat *K;  /* the backend matrix, during set-up only (NULL afterwards) */
    int fallback_armed; /* set by a type whose fp32 form rebuilds in fp64 when it stalls */
};

const hk_pc_type *hk_pc_type_find(const char *name);
extern const hk_pc_type *const hk_pc_types[]; /* NULL-terminated registry */
/* K lives on be (hk_bmat_upload); nn may be NULL. */
int hk_pc_create(const hk_pc_type *t, const hk_backend_ops *be, hk_precision prec,
                 const hk_bmat *K, hk_mat *A, const hk_nearnull *nn, hk_options *o,
                 hk_pc **pc);
/* z = M^{-1} r for fp64 r and z, converting when the preconditioner is fp32. */
int hk_pc_apply(hk_pc *pc, const hk_vec *r, hk_vec *z);
void hk_pc_destroy(hk_pc *pc);

/* ---- Krylov methods -------------------------------------------------------------------- */

typedef struct hk_ksp hk_ksp;

/* pipecg.variant: auto (paper for pc=none/jacobi in fp64, else gv), paper (Algorithm 2 as
 * written, pipecg_paper_step), fused (Algorithm 2 with beta from the new r.z expanded with a
 * z.Ap dot: pipecg_update and spmv_dot2), gv (Ghysels-Vanroose, any preconditioner). */
enum hk_pipecg_variant { HK_PIPECG_AUTO = 0, HK_PIPECG_PAPER, HK_PIPECG_FUSED, HK_PIPECG_GV };

typedef struct hk_ksp_type {
    const char *name;
    const char *summary;
    int needs_symmetric; /* CG family */
    int flexible;        /* tolerates a variable preconditioner */
    int pipelined;       /* scalars stay on the backend between checks (check_every pays) */
    int residual_monotone; /* the residual norm never rises (GMRES): stagnation counts at once */
    int (*solve)(hk_ksp *k, const hk_vec *b, hk_vec *x);
} hk_ksp_type;

struct hk_ksp {
    const hk_ksp_type *type;
    const hk_backend_ops *be;
    hk_mat *A;      /* fp64 operator */
    hk_mat *A_low;  /* fp32 copy for defect correction (NULL otherwise) */
    hk_pc *pc;      /* never NULL: "none" is a type */
    double rtol, atol;
    int maxit, restart, check_every;
    hk_result res;
    int keep_history;
    double *history;
    int history_cap;
    hk_monitor_fn monitor;
    void *monitor_ctx;
    /* stagnation tracking (hk_ksp_converged) and the fp32 inner solver of method=defect */
    double stag_best;
    int stag_it;
    int stag_window;    /* iterations without progress before "stagnation" (0: off) */
    int stag_armed;     /* the residual has once dropped below its initial value */
    /* stall test of a preconditioner that can fall back to fp64 (hk_solver_solve sets it):
     * the best residual must drop below stall_factor times its value of stall_window
     * iterations before (0: off) */
    int stall_window, stall_it;
    double stall_factor, stall_ref, stall_best;
    int graphs;         /* replay recorded iterations where the backend can (option graphs) */
    int replace_every;  /* pipelined residual replacement: 0 drift estimate, N every N, -1 off */
    int pipecg_variant; /* method=pipecg: enum hk_pipecg_variant (pipecg.variant) */
    hk_ksp *inner;
    /* work vectors kept between solves (no device allocation per solve); owner frees */
    hk_vec **pool;
    int npool, pool_cap;
    void *direct; /* the factor of a direct method (method=cholesky), owned */
    const hk_bmat *K; /* the operator's block CSR on the backend (matrix powers), not owned */
    void *sstep;      /* method=scg: its options, matrix-powers plan and tuning, owned */
};

extern const hk_ksp_type *const hk_ksp_types[]; /* NULL-terminated registry */
const hk_ksp_type *hk_ksp_type_find(const char *name);

/* The solver's preconditioner and fp64 operator (benchmarks time their apply and SpMV). */
hk_pc *hk_solver_get_pc(hk_solver *s);
hk_mat *hk_solver_get_mat(hk_solver *s);
/* The last values-only update's phases in seconds: the new values into the solver's K (with
 * the pattern's check), their check (finite; 0 where the rebuild checked them in its own pass,
 * mat_refill_checked), the operator's format rebuilt, the preconditioner's update (zeros
 * before the first update). */
void hk_solver_update_phases(const hk_solver *s, double phases[4]);

/* Shared helpers for the methods: record a residual norm (history, monitor) and decide on
 * convergence; returns 1 when done and sets k->res.reason. */
int hk_ksp_converged(hk_ksp *k, int it, double rnorm, double bnorm);

#ifdef __cplusplus
}
#endif
#endif
