/* The CPU backend's private pieces shared between its files. */
#ifndef HOOKE_CPU_IMPL_H
#define HOOKE_CPU_IMPL_H

#include "hk_impl.h"

/* A built matrix on the CPU backend (A->bdata): the format's arrays in the hk_fmt layout,
 * values in A->prec (F.val for fp64, val32 for fp32; the other is NULL). */
typedef struct hk_cpu_mat {
    hk_fmt F;
    float *val32;
    double *carry; /* PCSR: 2 per partition, the partial sums of rows that cross partitions */
} hk_cpu_mat;

/* Formats built from a backend block CSR, and their download (solver/cpu/cpu_build.c). */
int hk_cpu_mat_build(hk_mat *A, const hk_bmat *K);
int hk_cpu_mat_download(const hk_mat *A, hk_fmt *F);
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

/* The host's copy bandwidth (read + write, GB/s; best of reps copies of bytes, threads placing
 * their own pages), for judging the CPU kernels (solver/cpu/cpu_stream.c). */
int hk_cpu_copy_bandwidth(size_t bytes, int reps, double *gbs);

/* Deterministic reductions: the index range is cut into HK_CPU_CHUNKS fixed chunks whatever
 * the thread count, each summed in order, then the chunk sums in order. */
#define HK_CPU_CHUNKS 256
static inline int64_t hk_cpu_chunk_begin(int64_t n, int c)
{
    return (int64_t)((__int128)n * c / HK_CPU_CHUNKS);
}

/* Sum the per-chunk partial results in chunk order (deterministic). */
static inline double hk_cpu_chunk_sum(const double *part)
{
    double s = 0;
    for (int c = 0; c < HK_CPU_CHUNKS; c++)
        s += part[c];
    return s;
}

/* cpu_pipecg_gv.c */
int hk_cpu_pipecg_gv_update(double alpha, double beta, hk_vec *const *V, double *d);

#endif
