/* The CPU backend's private pieces shared between its files. */
#ifndef HOOKE_CPU_IMPL_H
#define HOOKE_CPU_IMPL_H

#include "hk_impl.h"

#define HK_CPU_CHUNKS 256 /* the fixed chunks of the deterministic reductions (below) */

/* A built matrix on the CPU backend (A->bdata): the format's arrays in the hk_fmt layout,
 * values in A->prec (F.val for fp64, val32 for fp32; the other is NULL). */
typedef struct hk_cpu_mat {
    hk_fmt F;
    float *val32;
    double *carry; /* PCSR: 2 per partition, the partial sums of rows that cross partitions */
    /* CSR/BSR (has_reach set): the lowest and highest (block) column that the rows of each of
     * the HK_CPU_CHUNKS chunks of (block) rows read (an empty chunk: INT32_MAX, -1), so a
     * fused op knows which rows need only the thread's own part of x */
    int has_reach;
    int32_t reach_lo[HK_CPU_CHUNKS], reach_hi[HK_CPU_CHUNKS];
} hk_cpu_mat;

/* Formats built from a backend block CSR, and their download (solver/cpu/cpu_build.c). */
int hk_cpu_mat_build(hk_mat *A, const hk_bmat *K);
int hk_cpu_mat_download(const hk_mat *A, hk_fmt *F);
int hk_cpu_mat_convert(hk_mat *dst, const hk_mat *src);
void hk_cpu_mat_release(hk_mat *A);
int hk_cpu_bmat_transpose(const hk_bmat *A, hk_bmat *T);
int hk_cpu_bmat_expand(const hk_bmat *A, hk_bmat *S);
int hk_cpu_bmat_compress(const hk_bmat *S, int bs, hk_bmat *B);
/* PCSR (solver/cpu/cpu_pcsr.c): the arrays from a scalar CSR view (rowptr, colind, val of n
 * rows) with partition P and padding factor pad, values in fp32 when f32; and its SpMV, the
 * CUDA kernel's arithmetic step for step (same sums in the same order: the same digits). */
int hk_cpu_pcsr_build(int64_t n, const int64_t *rowptr, const int32_t *colind, const double *val,
                      int P, int pad, int f32, hk_cpu_mat *m);
int hk_cpu_pcsr_spmv(const hk_cpu_mat *m, const void *x, void *y, hk_precision p);
/* SpMV for every format (solver/cpu/cpu_spmv.c). */
int hk_cpu_mat_spmv(hk_mat *A, const hk_vec *x, hk_vec *y);
/* Block rows [b0, b1) of y = A x on the calling thread, for the fused ops that reduce over the
 * rows while they are in cache; only where hk_cpu_spmv_has_rows (fp64 CSR and BSR). */
int hk_cpu_spmv_has_rows(const hk_mat *A);
void hk_cpu_spmv_rows(const hk_mat *A, const double *x, double *y, int64_t b0, int64_t b1);

/* The host's copy bandwidth (read + write, GB/s; best of reps copies of bytes, threads placing
 * their own pages), for judging the CPU kernels (solver/cpu/cpu_stream.c). */
int hk_cpu_copy_bandwidth(size_t bytes, int reps, double *gbs);

/* Deterministic reductions: the index range is cut into HK_CPU_CHUNKS fixed chunks whatever
 * the thread count, each summed in order, then the chunk sums in order. */
static inline int64_t hk_cpu_chunk_begin(int64_t n, int c)
{
    return (int64_t)((__int128)n * c / HK_CPU_CHUNKS);
}

/* Chunk c of an SpMV's output: block rows [*b0, *b1) of the built format (scalar rows for the
 * scalar formats), scalar entries [*i0, *i1). */
static inline void hk_cpu_spmv_chunk(const hk_mat *A, int64_t n, int c, int64_t *b0,
                                     int64_t *b1, int64_t *i0, int64_t *i1)
{
    const int bs = ((const hk_cpu_mat *)A->bdata)->F.bs;
    const int64_t nb = n / bs;
    *b0 = hk_cpu_chunk_begin(nb, c);
    *b1 = hk_cpu_chunk_begin(nb, c + 1);
    *i0 = *b0 * bs;
    *i1 = *b1 * bs;
}

/* Rows of an SpMV swept at once before the fused work on them (a pass after every chunk broke
 * the matrix streams: +5 % over the plain SpMV on 81k DOFs, one thread): 8192 rows of x and y
 * (128 KB) stay in L2. */
#define HK_SPMV_GROUP_ROWS 8192

/* Chunks per sweep of about HK_SPMV_GROUP_ROWS rows for an SpMV of n rows. */
static inline int hk_cpu_group_chunks(int64_t n)
{
    const int64_t per = n / HK_CPU_CHUNKS + 1;
    return (int)(HK_SPMV_GROUP_ROWS / per > 1 ? HK_SPMV_GROUP_ROWS / per : 1);
}

/* Block rows [*b0, *e1) of chunks [g, g1). */
static inline void hk_cpu_group_rows(const hk_mat *A, int64_t n, int g, int g1, int64_t *b0,
                                     int64_t *e1)
{
    int64_t b1, e0, i0, i1;
    hk_cpu_spmv_chunk(A, n, g, b0, &b1, &i0, &i1);
    hk_cpu_spmv_chunk(A, n, g1 - 1, &e0, e1, &i0, &i1);
}

/* The fused SpMV ops share one layout: thread t of nt owns the chunks [c0, c1) = [256 t / nt,
 * 256 (t + 1) / nt) of the matrix's (block) rows, for the element-wise work as for the SpMV, so
 * each thread reads and writes the same entries of every vector in every pass (the pages it
 * placed, cpu_alloc), and an SpMV row range needs other threads' entries of p only where the
 * matrix reaches there. */
typedef struct hk_cpu_row_part {
    int t, nt, c0, c1;
    int64_t e0, e1; /* the thread's entries of every vector */
} hk_cpu_row_part;

static inline hk_cpu_row_part hk_cpu_row_part_of(const hk_mat *A, int64_t n, int t, int nt)
{
    const int bs = ((const hk_cpu_mat *)A->bdata)->F.bs;
    const int c0 = HK_CPU_CHUNKS * t / nt, c1 = HK_CPU_CHUNKS * (t + 1) / nt;
    return (hk_cpu_row_part){
        t, nt, c0, c1, hk_cpu_chunk_begin(n / bs, c0) * bs, hk_cpu_chunk_begin(n / bs, c1) * bs};
}

/* Sum the per-chunk partial results in chunk order (deterministic). */
static inline double hk_cpu_chunk_sum(const double *part)
{
    double s = 0;
    for (int c = 0; c < HK_CPU_CHUNKS; c++)
        s += part[c];
    return s;
}

/* Sums inside a chunk run in HK_CPU_LANES interleaved partial sums: lane l takes the chunk's
 * elements l, l + 4, l + 8, ... (the tail after the last full group continues at lane 0), and
 * the lanes are added as (0 + 1) + (2 + 3). The order is fixed by the chunk alone, so results
 * stay independent of the thread count, and four independent additions fill vector registers
 * and hide the adder's latency that one running sum waits on at every element. */
#define HK_CPU_LANES 4
static inline double hk_cpu_lanes_sum(const double *s)
{
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* for (j = b; j < e; j++) BODY with l the lane of j (see HK_CPU_LANES). */
#define HK_CPU_LANE_FOR(b, e, j, l, ...)                                                           \
    do {                                                                                           \
        const int64_t b_ = (b), e_ = (e);                                                          \
        const int64_t m_ = b_ + (e_ - b_) / HK_CPU_LANES * HK_CPU_LANES;                           \
        for (int64_t i_ = b_; i_ < m_; i_ += HK_CPU_LANES)                                         \
            for (int l = 0; l < HK_CPU_LANES; l++) {                                               \
                const int64_t j = i_ + l;                                                          \
                __VA_ARGS__                                                                        \
            }                                                                                      \
        for (int64_t j = m_; j < e_; j++) {                                                        \
            const int l = (int)(j - m_);                                                           \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    } while (0)

/* cpu_pipecg_gv.c */
int hk_cpu_pipecg_gv_step(hk_vec *const *V, double *S);
int hk_cpu_spmv_pipecg_gv_step(hk_mat *A, hk_vec *const *V, double *S);

#endif
