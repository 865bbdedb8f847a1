// The set-up of pc=ic0 and pc=ilu0 on the device (contracts in solver/hk_impl.h; the CPU
// references are solver/pc/factor_cpu.c and solver/pc/iterfact.c). Compiled without fused
// multiply-add (CMakeLists.txt), so each sum rounds as the CPU's does.
//
// factor_sweeps: fine-grained iterative IC(0) / ILU(0): the scaling to unit diagonal, then a
// warp per row, each lane computing whole entries of the row with the same sums in the same
// order as the CPU (ascending k over row i, the partner entry found by binary search), from
// the previous sweep's values, so a sweep is one launch and the result does not depend on
// scheduling; then the scaling back.
//
// factor_exact: level-scheduled. The levels of the rows (node rows for the block versions)
// in the lower-triangular dependency graph come from hk_cu_levels (cuda_tri.cu: a sync-free
// pass, then a radix sort of the rows by level); one launch per level. Scalar: a warp per
// row; the row's entries are computed in order, and for each the products of a sum are
// formed by the lanes in parallel, then subtracted one by one in the CPU's order (warp
// shuffles), so the result is the CPU's to the bit. Blocks: a thread per node row running
// the CPU's block kernels (solver/pc/factor_block.h). Pivots are checked as on the CPU; a
// row only depends on rows of lower index, so the smallest failing row found here is the
// one the CPU stops at (integer atomicMin: deterministic).
//
// bmat_permute and bmat_sym_check: a thread per row.
#include <cub/cub.cuh>
#include <string.h>

#include "cuda_impl.cuh"
#include "pc/factor_block.h"

/* diagonal positions; a missing one (or, for sym, one not last in its row) is a bad row */
__global__ void k_fs_diag(int64_t n, int sym, const int64_t *rowptr, const int32_t *colind,
                          int64_t *diag, unsigned long long *bad)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t d = find_col(rowptr, colind, i, (int32_t)i);
        diag[i] = d;
        if (d < 0 || (sym && d != rowptr[i + 1] - 1)) atomicMin(bad, (unsigned long long)i);
    }
}

__global__ void k_fs_start(int64_t n, int sym, const int64_t *rowptr, const int32_t *colind,
                           const int64_t *diag, const double *a, double *v)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        for (int64_t e = rowptr[i]; e < rowptr[i + 1]; e++)
            v[e] = !sym && colind[e] < i ? a[e] / a[diag[colind[e]]] : a[e];
}

__global__ void k_fs_sweep(int64_t n, int sym, int report, const int64_t *rowptr,
                           const int32_t *colind, const int64_t *diag, const double *a,
                           const double *old, double *v, unsigned long long *bad)
{
    const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (warp >= n) return;
    const int64_t i = warp, b = rowptr[i], end = rowptr[i + 1];
    for (int64_t e = b + lane; e < end; e += 32) {
        const int32_t j = colind[e];
        const int32_t m = j < i ? j : (int32_t)i;
        double sum = a[e];
        for (int64_t p = b; p < end && colind[p] < m; p++) {
            const int32_t k = colind[p];
            const int64_t q = sym ? find_col(rowptr, colind, j, k) : find_col(rowptr, colind, k, j);
            if (q >= 0) sum -= old[p] * old[q];
        }
        if (j < i) {
            v[e] = sum / old[diag[j]];
        } else if (sym) {
            if (sum > 0 && isfinite(sum))
                v[e] = sqrt(sum);
            else if (report)
                atomicMin(bad, (unsigned long long)i);
        } else {
            v[e] = sum;
            if (j == i && !(sum != 0 && isfinite(sum)) && report)
                atomicMin(bad, (unsigned long long)i);
        }
    }
}

static int sweeps_scaled(const hk_bmat *A, int sym, int sweeps, hk_bmat *F, int64_t *bad)
{
    int ierr = 0;
    const int64_t n = A->nbrows, nnz = A->nnzb;
    double *old = NULL;
    int64_t *diag = NULL;
    unsigned long long *dbad = NULL, hbad[2] = {(unsigned long long)n, (unsigned long long)n};
    *bad = -1;
    memset(F, 0, sizeof *F);
    HK_CHECK(A->br == 1 && A->bc == 1 && A->nbrows == A->nbcols, HK_ERR_ARG,
             "factor_sweeps: the matrix must be square with 1 x 1 blocks");
    const int64_t blocks = (n * 32 + HK_CU_BLOCK - 1) / HK_CU_BLOCK;
    HK_CHECK(blocks < ((int64_t)1 << 31), HK_ERR_UNSUPPORTED,
             "factor_sweeps: %lld rows exceed one launch of a warp per row; use sweeps=0 (the "
             "exact factorisation)",
             (long long)n);
    HK_CALL(hk_cu_init());
    HK_CALL(hk_bmat_alloc(A->be, 1, 1, n, n, nnz, F));
    HK_TRY(hk_cu_malloc((void **)&old, (size_t)(nnz ? nnz : 1) * sizeof *old));
    HK_TRY(hk_cu_malloc((void **)&diag, (size_t)(n ? n : 1) * sizeof *diag));
    HK_TRY(hk_cu_malloc((void **)&dbad, sizeof hbad));
    HK_CU_TRY(cudaMemcpyAsync(dbad, hbad, sizeof hbad, cudaMemcpyHostToDevice, hk_cu.stream));
    HK_CU_TRY(cudaMemcpyAsync(F->rowptr, A->rowptr, (size_t)(n + 1) * sizeof *F->rowptr,
                              cudaMemcpyDeviceToDevice, hk_cu.stream));
    if (nnz)
        HK_CU_TRY(cudaMemcpyAsync(F->colind, A->colind, (size_t)nnz * sizeof *F->colind,
                                  cudaMemcpyDeviceToDevice, hk_cu.stream));
    if (n) {
        k_fs_diag<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, sym, A->rowptr, A->colind,
                                                                   diag, dbad);
        HK_CU_TRY(cudaGetLastError());
        HK_CU_TRY(cudaMemcpyAsync(hbad, dbad, sizeof hbad, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        if (hbad[0] < (unsigned long long)n) {
            *bad = (int64_t)hbad[0];
            goto fail;
        }
        k_fs_start<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, sym, A->rowptr, A->colind,
                                                                    diag, A->val, F->val);
        HK_CU_TRY(cudaGetLastError());
        for (int sw = 0; sw < sweeps; sw++) {
            HK_CU_TRY(cudaMemcpyAsync(old, F->val, (size_t)nnz * sizeof *old,
                                      cudaMemcpyDeviceToDevice, hk_cu.stream));
            k_fs_sweep<<<(unsigned)blocks, HK_CU_BLOCK, 0, hk_cu.stream>>>(
                n, sym, sw == sweeps - 1, A->rowptr, A->colind, diag, A->val, old, F->val,
                dbad + 1);
            HK_CU_TRY(cudaGetLastError());
        }
        HK_CU_TRY(cudaMemcpyAsync(hbad, dbad, sizeof hbad, cudaMemcpyDeviceToHost, hk_cu.stream));
        HK_CU_TRY(cudaStreamSynchronize(hk_cu.stream));
        if (hbad[1] < (unsigned long long)n) *bad = (int64_t)hbad[1];
    }
fail:
    if (old) cudaFree(old);
    if (diag) cudaFree(diag);
    if (dbad) cudaFree(dbad);
    if (ierr || *bad >= 0) hk_bmat_free(F);
    return ierr;
}

/* ---- shared pieces ------------------------------------------------------------------------ */

#define GRID_STRIDE(i, n)                                                                          \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                     \
         i += (int64_t)gridDim.x * blockDim.x)

static int dalloc(void **p, size_t bytes)
{
    return hk_cu_malloc(p, bytes ? bytes : 16);
}

static int fetch_value(const void *d, void *h, size_t bytes)
{
    HK_CU(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, hk_cu.stream));
    HK_CU(cudaStreamSynchronize(hk_cu.stream));
    return 0;
}

/* ---- factor_sweeps: scaling to unit diagonal and back (the CPU's rule, iterfact.c) ------ */

__global__ void k_sw_scale_diag(int64_t n, const int64_t *rowptr, const int32_t *colind,
                                const double *val, double *s, unsigned long long *bad)
{
    GRID_STRIDE(i, n)
    {
        const int64_t k = find_col(rowptr, colind, i, (int32_t)i);
        const double d = k >= 0 ? val[k] : 0;
        if (!(d != 0 && isfinite(d)))
            atomicMin(bad, (unsigned long long)i);
        else
            s[i] = 1 / sqrt(fabs(d));
    }
}

__global__ void k_sw_count(int64_t n, int sym, const int64_t *rowptr, const int32_t *colind,
                           int64_t *cnt)
{
    GRID_STRIDE(i, n)
    {
        int64_t c = 0;
        for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
            c += !sym || colind[k] <= i;
        cnt[i] = c;
    }
}

__global__ void k_sw_fill(int64_t n, int sym, const int64_t *rowptr, const int32_t *colind,
                          const double *val, const double *s, const int64_t *srp, int32_t *scol,
                          double *sval)
{
    GRID_STRIDE(i, n)
    {
        int64_t q = srp[i];
        for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
            if (!sym || colind[k] <= i) {
                scol[q] = colind[k];
                sval[q++] = val[k] * s[i] * s[colind[k]];
            }
    }
}

__global__ void k_sw_unscale(int64_t n, int sym, const int64_t *rowptr, const int32_t *colind,
                             const double *s, double *v)
{
    GRID_STRIDE(i, n)
    {
        for (int64_t e = rowptr[i]; e < rowptr[i + 1]; e++) {
            const int32_t j = colind[e];
            v[e] = sym ? v[e] / s[i] : j < i ? v[e] * s[j] / s[i] : v[e] / (s[i] * s[j]);
        }
    }
}

int hk_cu_factor_sweeps(const hk_bmat *A, int sym, int sweeps, hk_bmat *F, int64_t *bad)
{
    int ierr = 0;
    const int64_t n = A->nbrows;
    double *s = NULL;
    int64_t *cnt = NULL;
    unsigned long long *dbad = NULL;
    hk_bmat S = {0};
    *bad = -1;
    memset(F, 0, sizeof *F);
    HK_CHECK(A->br == 1 && A->bc == 1 && A->nbrows == A->nbcols, HK_ERR_ARG,
             "factor_sweeps: the matrix must be square with 1 x 1 blocks");
    HK_CALL(hk_cu_init());
    HK_TRY(dalloc((void **)&s, (size_t)n * sizeof *s));
    HK_TRY(dalloc((void **)&cnt, (size_t)(n + 1) * sizeof *cnt));
    HK_TRY(hk_cu_first_row_alloc(&dbad));
    if (n) {
        k_sw_scale_diag<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, A->rowptr, A->colind,
                                                                         A->val, s, dbad);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_first_row_read(dbad, bad));
    if (*bad >= 0) goto fail;
    {
        int64_t nnz = 0;
        if (n) {
            k_sw_count<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, sym, A->rowptr,
                                                                        A->colind, cnt);
            HK_CU_TRY(cudaGetLastError());
        }
        /* the pattern first, into S's row pointers */
        int64_t *rp = NULL;
        HK_TRY(dalloc((void **)&rp, (size_t)(n + 1) * sizeof *rp));
        ierr = hk_cu_scan_counts(cnt, n, rp, &nnz);
        if (!ierr) ierr = hk_bmat_alloc(A->be, 1, 1, n, n, nnz, &S);
        if (!ierr) {
            const cudaError_t e = cudaMemcpyAsync(S.rowptr, rp, (size_t)(n + 1) * sizeof *rp,
                                              cudaMemcpyDeviceToDevice, hk_cu.stream);
            if (e != cudaSuccess) ierr = hk_cu_fail(e, "cudaMemcpyAsync", __FILE__, __LINE__);
        }
        cudaFree(rp);
        if (ierr) goto fail;
    }
    if (n) {
        k_sw_fill<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, sym, A->rowptr, A->colind, A->val, s, S.rowptr, S.colind, S.val);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(sweeps_scaled(&S, sym, sweeps, F, bad));
    if (*bad < 0 && n) {
        k_sw_unscale<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, sym, F->rowptr,
                                                                      F->colind, s, F->val);
        HK_CU_TRY(cudaGetLastError());
    }
fail:
    if (s) cudaFree(s);
    if (cnt) cudaFree(cnt);
    if (dbad) cudaFree(dbad);
    hk_bmat_free(&S);
    if (ierr) hk_bmat_free(F);
    return ierr;
}

/* ---- bmat_permute ------------------------------------------------------------------------- */

__global__ void k_perm_inverse(int64_t n, const int32_t *perm, int32_t *iperm, int64_t *cnt,
                               const int64_t *rowptr)
{
    GRID_STRIDE(i, n)
    {
        iperm[perm[i]] = (int32_t)i;
        cnt[i] = rowptr[perm[i] + 1] - rowptr[perm[i]];
    }
}

/* row i of P: row perm[i] of A with renumbered columns, insertion-sorted (as the CPU's
 * hk_bcsr_permute); src = the block of A each entry comes from */
__global__ void k_perm_rows(int64_t n, const int32_t *perm, const int32_t *iperm,
                            const int64_t *rowptr, const int32_t *colind, const int64_t *prp,
                            int32_t *pcol, int64_t *src)
{
    GRID_STRIDE(i, n)
    {
        const int64_t o = perm[i], b = prp[i];
        int64_t len = 0;
        for (int64_t p = rowptr[o]; p < rowptr[o + 1]; p++) {
            const int32_t c = iperm[colind[p]];
            int64_t q = b + len++;
            while (q > b && pcol[q - 1] > c) {
                pcol[q] = pcol[q - 1];
                src[q] = src[q - 1];
                q--;
            }
            pcol[q] = c;
            src[q] = p;
        }
    }
}

__global__ void k_perm_vals(int64_t total, int bb, const int64_t *src, const double *val,
                            double *pval)
{
    GRID_STRIDE(t, total)
    {
        const int64_t q = t / bb;
        pval[t] = val[src[q] * bb + t % bb];
    }
}

int hk_cu_bmat_permute(const hk_bmat *A, const int32_t *perm, hk_bmat *P)
{
    int ierr = 0;
    const int64_t n = A->nbrows, nnzb = A->nnzb;
    const int bb = A->br * A->bc;
    int32_t *iperm = NULL;
    int64_t *cnt = NULL, *src = NULL, total = 0;
    memset(P, 0, sizeof *P);
    HK_CHECK(A->br == A->bc && A->nbrows == A->nbcols, HK_ERR_ARG,
             "bmat_permute: the matrix must be square with square blocks");
    HK_CALL(hk_cu_init());
    HK_TRY(hk_bmat_alloc(A->be, A->br, A->bc, n, n, nnzb, P));
    HK_TRY(dalloc((void **)&iperm, (size_t)n * sizeof *iperm));
    HK_TRY(dalloc((void **)&cnt, (size_t)(n + 1) * sizeof *cnt));
    HK_TRY(dalloc((void **)&src, (size_t)nnzb * sizeof *src));
    if (n) {
        k_perm_inverse<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, perm, iperm, cnt,
                                                                        A->rowptr);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_scan_counts(cnt, n, P->rowptr, &total));
    if (n) {
        k_perm_rows<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, perm, iperm, A->rowptr, A->colind, P->rowptr, P->colind, src);
        HK_CU_TRY(cudaGetLastError());
    }
    if (nnzb) {
        k_perm_vals<<<hk_cu_grid(nnzb * bb), HK_CU_BLOCK, 0, hk_cu.stream>>>(nnzb * bb, bb, src,
                                                                             A->val, P->val);
        HK_CU_TRY(cudaGetLastError());
    }
fail:
    if (iperm) cudaFree(iperm);
    if (cnt) cudaFree(cnt);
    if (src) cudaFree(src);
    if (ierr) hk_bmat_free(P);
    return ierr;
}

/* ---- bmat_sym_check ----------------------------------------------------------------------- */

__device__ double abs_diag(const int64_t *rowptr, const int32_t *colind, const double *val,
                           int64_t i)
{
    const int64_t k = find_col(rowptr, colind, i, (int32_t)i);
    return k >= 0 ? fabs(val[k]) : 0.0;
}

/* the first column of row i where A and T differ beyond round-off (the CPU's test), or -1 */
__device__ int32_t sym_row(int64_t i, const int64_t *arp, const int32_t *aci, const double *av,
                           const int64_t *trp, const int32_t *tci, const double *tv, double *pa,
                           double *pt)
{
    const double di = abs_diag(arp, aci, av, i);
    int64_t p = arp[i], q = trp[i];
    while (p < arp[i + 1] || q < trp[i + 1]) {
        const int32_t ca = p < arp[i + 1] ? aci[p] : INT32_MAX;
        const int32_t ct = q < trp[i + 1] ? tci[q] : INT32_MAX;
        const int32_t c = ca < ct ? ca : ct;
        double a = 0, t = 0;
        if (ca == c) a = av[p++];
        if (ct == c) t = tv[q++];
        if (fabs(a - t) > 1e-10 * (fmax(fabs(a), fabs(t)) + sqrt(di * abs_diag(arp, aci, av, c)))) {
            *pa = a;
            *pt = t;
            return c;
        }
    }
    return -1;
}

__global__ void k_sym_rows(int64_t n, const int64_t *arp, const int32_t *aci, const double *av,
                           const int64_t *trp, const int32_t *tci, const double *tv,
                           unsigned long long *bad)
{
    GRID_STRIDE(i, n)
    {
        double a, t;
        if (sym_row(i, arp, aci, av, trp, tci, tv, &a, &t) >= 0)
            atomicMin(bad, (unsigned long long)i);
    }
}

/* the details of the first bad row: column and both values */
__global__ void k_sym_detail(int64_t i, const int64_t *arp, const int32_t *aci, const double *av,
                             const int64_t *trp, const int32_t *tci, const double *tv,
                             double *out)
{
    double a = 0, t = 0;
    const int32_t c = sym_row(i, arp, aci, av, trp, tci, tv, &a, &t);
    out[0] = c;
    out[1] = a;
    out[2] = t;
}

int hk_cu_bmat_sym_check(const hk_bmat *A, const hk_bmat *T, hk_factor_fault *f)
{
    int ierr = 0;
    const int64_t n = A->nbrows;
    unsigned long long *dbad = NULL;
    double *det = NULL, h[3];
    memset(f, 0, sizeof *f);
    f->row = -1;
    HK_CHECK(A->br == 1 && A->bc == 1 && T->br == 1 && T->bc == 1 && A->nbrows == A->nbcols &&
                 T->nbrows == A->nbrows,
             HK_ERR_ARG, "bmat_sym_check: A and its transpose T must be square, 1 x 1 blocks");
    HK_CALL(hk_cu_init());
    HK_TRY(hk_cu_first_row_alloc(&dbad));
    HK_TRY(dalloc((void **)&det, sizeof h));
    if (n) {
        k_sym_rows<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(
            n, A->rowptr, A->colind, A->val, T->rowptr, T->colind, T->val, dbad);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_first_row_read(dbad, &f->row));
    if (f->row >= 0) {
        k_sym_detail<<<1, 1, 0, hk_cu.stream>>>(f->row, A->rowptr, A->colind, A->val, T->rowptr,
                                                T->colind, T->val, det);
        HK_CU_TRY(cudaGetLastError());
        HK_TRY(fetch_value(det, h, sizeof h));
        f->reason = HK_FACTOR_ASYMMETRIC;
        f->col = (int64_t)h[0];
        f->v[0] = h[1];
        f->v[1] = h[2];
    }
fail:
    if (dbad) cudaFree(dbad);
    if (det) cudaFree(det);
    return ierr;
}

/* ---- factor_exact: patterns --------------------------------------------------------------- */

/* entries left of the diagonal per row, plus one (the lower pattern with the diagonal last) */
__global__ void k_lower_count(int64_t n, const int64_t *rowptr, const int32_t *colind,
                              int64_t *cnt)
{
    GRID_STRIDE(i, n)
    {
        int64_t c = 1;
        for (int64_t k = rowptr[i]; k < rowptr[i + 1] && colind[k] < i; k++)
            c++;
        cnt[i] = c;
    }
}

/* the lower pattern's columns and its values from A (bb values per entry; the diagonal's
 * from A's diagonal entry, zero when A has none) */
__global__ void k_lower_fill(int64_t n, int bb, const int64_t *rowptr, const int32_t *colind,
                             const double *val, const int64_t *lrp, int32_t *lcol, double *lval)
{
    GRID_STRIDE(i, n)
    {
        const int64_t b = lrp[i], dq = lrp[i + 1] - 1, ab = rowptr[i];
        for (int64_t e = b; e < dq; e++) {
            lcol[e] = colind[ab + (e - b)];
            for (int t = 0; t < bb; t++)
                lval[e * bb + t] = val[(ab + (e - b)) * bb + t];
        }
        lcol[dq] = (int32_t)i;
        const int64_t ad = ab + (dq - b);
        const int has = ad < rowptr[i + 1] && colind[ad] == i;
        for (int t = 0; t < bb; t++)
            lval[dq * bb + t] = has ? val[ad * bb + t] : 0.0;
    }
}

/* diagonal positions; the first row without one is bad */
__global__ void k_diag_pos(int64_t n, const int64_t *rowptr, const int32_t *colind, int64_t *diag,
                           unsigned long long *bad)
{
    GRID_STRIDE(i, n)
    {
        diag[i] = find_col(rowptr, colind, i, (int32_t)i);
        if (diag[i] < 0) atomicMin(bad, (unsigned long long)i);
    }
}

/* ---- factor_exact: scalar IC(0), a warp per row --------------------------------------------
 * L holds the lower pattern (diagonal last) with A's values; row i's entry e becomes
 * l_ij = (a_ij - sum_k l_ik l_jk) / l_jj over row j's entries k in order, l_ik looked up in
 * row i left of e (0 where absent, as the CPU's dense work row); the lanes form the products,
 * lane after lane subtracts them in order. On a bad pivot the diagonal slot keeps d. */
__global__ void k_ic0_level(int64_t q0, int64_t q1, const int32_t *rows, const int64_t *lrp,
                            const int32_t *lcol, double *lval, unsigned long long *bad)
{
    const int64_t q = q0 + (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (q >= q1) return;
    const int64_t i = rows[q], b = lrp[i], dq = lrp[i + 1] - 1;
    for (int64_t e = b; e < dq; e++) {
        const int32_t j = lcol[e];
        const int64_t jb = lrp[j], jd = lrp[j + 1] - 1;
        double s = lval[e];
        for (int64_t c0 = jb; c0 < jd; c0 += 32) {
            double prod = 0;
            if (c0 + lane < jd) {
                const int64_t at = find_in(lcol, b, e, lcol[c0 + lane]);
                prod = (at >= 0 ? lval[at] : 0.0) * lval[c0 + lane];
            }
            const int cnt = jd - c0 < 32 ? (int)(jd - c0) : 32;
            for (int t = 0; t < cnt; t++)
                s -= __shfl_sync(0xffffffffu, prod, t);
        }
        const double l = s / lval[jd];
        __syncwarp();
        if (lane == 0) lval[e] = l;
        __syncwarp();
    }
    double d = lval[dq];
    for (int64_t c0 = b; c0 < dq; c0 += 32) {
        double prod = 0;
        if (c0 + lane < dq) prod = lval[c0 + lane] * lval[c0 + lane];
        const int cnt = dq - c0 < 32 ? (int)(dq - c0) : 32;
        for (int t = 0; t < cnt; t++)
            d -= __shfl_sync(0xffffffffu, prod, t);
    }
    if (lane == 0) {
        if (d > 0 && isfinite(d)) {
            lval[dq] = sqrt(d);
        } else {
            lval[dq] = d;
            atomicMin(bad, (unsigned long long)i);
        }
    }
}

/* ---- factor_exact: scalar ILU(0), a warp per row (IKJ) ------------------------------------
 * For the entries j < i of row i in order: l = f_ij / u_jj, then the lanes update the
 * entries of row i that row j has right of its diagonal (distinct entries, each in the
 * order of j: the CPU's sums). The pivot test uses the row's largest original entry. */
__global__ void k_ilu0_level(int64_t q0, int64_t q1, const int32_t *rows, const int64_t *rowptr,
                             const int32_t *colind, const int64_t *diag, double *f,
                             unsigned long long *bad)
{
    const int64_t q = q0 + (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (q >= q1) return;
    const int64_t i = rows[q], rb = rowptr[i], re = rowptr[i + 1];
    double rowmax = 0;
    for (int64_t k = rb + lane; k < re; k += 32)
        rowmax = fmax(rowmax, fabs(f[k]));
    for (int o = 16; o > 0; o >>= 1)
        rowmax = fmax(rowmax, __shfl_xor_sync(0xffffffffu, rowmax, o));
    for (int64_t k = rb; k < re && colind[k] < i; k++) {
        const int32_t j = colind[k];
        const double l = f[k] / f[diag[j]];
        __syncwarp();
        if (lane == 0) f[k] = l;
        for (int64_t kk = diag[j] + 1 + lane; kk < rowptr[j + 1]; kk += 32) {
            const int64_t m = find_in(colind, rb, re, colind[kk]);
            if (m >= 0) f[m] -= l * f[kk];
        }
        __syncwarp();
    }
    const double piv = f[diag[i]];
    if (lane == 0 && !(isfinite(piv) && fabs(piv) > 1e-14 * rowmax))
        atomicMin(bad, (unsigned long long)i);
}

/* ---- factor_exact: block IC(0) and ILU(0), a thread per node row -------------------------- */

#define FB_MAX 8 /* largest node block */

/* block IC(0) on the lower block pattern (diagonal block last): the CPU's ic0_block */
__global__ void k_bic0_level(int64_t q0, int64_t q1, const int32_t *rows, int bs,
                             const int64_t *rp, const int32_t *ci, double *v,
                             unsigned long long *bad, int *fsub, double *fpiv)
{
    const int64_t q = q0 + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (q >= q1) return;
    const int bb = bs * bs;
    const int64_t i = rows[q], b = rp[i], dq = rp[i + 1] - 1;
    for (int64_t e = b; e < dq; e++) {
        const int32_t j = ci[e];
        const int64_t jd = rp[j + 1] - 1;
        for (int64_t g = rp[j]; g < jd; g++) {
            const int64_t m = find_in(ci, b, e, ci[g]);
            if (m >= 0) block_sub_xyt(bs, v + m * bb, v + g * bb, v + e * bb);
        }
        block_solve_lt(bs, v + jd * bb, v + e * bb);
        block_sub_xyt(bs, v + e * bb, v + e * bb, v + dq * bb);
    }
    double piv = 0;
    const int r = block_cholesky(bs, v + dq * bb, &piv);
    if (r >= 0) {
        fsub[i] = r;
        fpiv[i] = piv;
        atomicMin(bad, (unsigned long long)i);
    }
}

/* scalar rows of the block factor: the off-diagonal blocks' rows, then the diagonal block's
 * lower triangle */
__global__ void k_bic0_count(int64_t nb, int bs, const int64_t *rp, int64_t *cnt)
{
    GRID_STRIDE(r, nb * bs)
    {
        const int64_t i = r / bs;
        const int a = (int)(r % bs);
        cnt[r] = (rp[i + 1] - rp[i] - 1) * bs + a + 1;
    }
}

__global__ void k_bic0_expand(int64_t nb, int bs, const int64_t *rp, const int32_t *ci,
                              const double *v, const int64_t *lrp, int32_t *lcol, double *lval)
{
    GRID_STRIDE(r, nb * bs)
    {
        const int64_t i = r / bs;
        const int a = (int)(r % bs), bb = bs * bs;
        int64_t q = lrp[r];
        for (int64_t e = rp[i]; e < rp[i + 1]; e++)
            for (int c = 0; c < bs && (ci[e] < i || c <= a); c++) {
                lcol[q] = ci[e] * bs + c;
                lval[q++] = v[e * bb + a * bs + c];
            }
    }
}

/* block ILU(0) in place on a copy of A's blocks: the CPU's ilu0_block */
__global__ void k_bilu0_level(int64_t q0, int64_t q1, const int32_t *rows, int bs,
                              const int64_t *rowptr, const int32_t *colind, const int64_t *diag,
                              double *v, unsigned long long *bad, int *fsub, double *fpiv)
{
    const int64_t q = q0 + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (q >= q1) return;
    const int bb = bs * bs;
    const int64_t i = rows[q], rb = rowptr[i], re = rowptr[i + 1];
    double rowmax = 0;
    for (int64_t p = rb; p < re; p++)
        for (int e = 0; e < bb; e++)
            if (fabs(v[p * bb + e]) > rowmax) rowmax = fabs(v[p * bb + e]);
    for (int64_t p = rb; p < re && colind[p] < i; p++) {
        const int32_t j = colind[p];
        double *X = v + p * bb;
        const double *Dj = v + diag[j] * bb;
        block_solve_u_right(bs, Dj, X);
        block_solve_l_right(bs, Dj, X);
        for (int64_t pp = diag[j] + 1; pp < rowptr[j + 1]; pp++) {
            const int64_t m = find_in(colind, rb, re, colind[pp]);
            if (m >= 0) block_sub_xy(bs, X, v + pp * bb, v + m * bb);
        }
    }
    double piv = 0;
    const int r = block_lu(bs, v + diag[i] * bb, 1e-14 * rowmax, &piv);
    if (r >= 0) {
        fsub[i] = r;
        fpiv[i] = piv;
        atomicMin(bad, (unsigned long long)i);
    }
}

/* the scalar factors from the block LU (pattern of expand(A)): L_ij l_j below, the LU of the
 * pivot block on the diagonal, l_i^-1 U_ij above; a thread per node row */
__global__ void k_bilu0_expand(int64_t nb, int bs, const int64_t *rowptr, const int32_t *colind,
                               const int64_t *diag, const double *v, double *fval)
{
    GRID_STRIDE(i, nb)
    {
        const int bb = bs * bs;
        double tmp[FB_MAX * FB_MAX];
        const double *Di = v + diag[i] * bb;
        const int64_t len = rowptr[i + 1] - rowptr[i];
        for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++) {
            const int32_t j = colind[p];
            if (j < i) {
                const double *Dj = v + diag[j] * bb;
                for (int a = 0; a < bs; a++)
                    for (int c = 0; c < bs; c++) {
                        double s = v[p * bb + a * bs + c];
                        for (int d = c + 1; d < bs; d++)
                            s += v[p * bb + a * bs + d] * Dj[d * bs + c];
                        tmp[a * bs + c] = s;
                    }
            } else {
                for (int e = 0; e < bb; e++)
                    tmp[e] = v[p * bb + e];
                if (j > i) block_solve_l_left(bs, Di, tmp);
            }
            /* scalar row i*bs + a starts at rowptr[i]*bb + a*len*bs (expand's layout) */
            for (int a = 0; a < bs; a++)
                for (int c = 0; c < bs; c++)
                    fval[rowptr[i] * bb + a * len * bs + (p - rowptr[i]) * bs + c] =
                        tmp[a * bs + c];
        }
    }
}

/* ---- factor_exact: the op ------------------------------------------------------------------ */

/* one launch per level: warps (scalar) or threads (blocks) per row */
template <typename Launch>
static int per_level(const int64_t *hlevel_ptr, int64_t nlevels, int rows_per_block, Launch go)
{
    for (int64_t l = 0; l < nlevels; l++) {
        const int64_t q0 = hlevel_ptr[l], q1 = hlevel_ptr[l + 1];
        const unsigned grid = (unsigned)((q1 - q0 + rows_per_block - 1) / rows_per_block);
        go(grid, q0, q1);
        HK_CU(cudaGetLastError());
    }
    return 0;
}

/* the fault of the first bad row: its pivot block's row and pivot, or a scalar value */
static int block_fault(int64_t row, const int *fsub, const double *fpiv, hk_factor_fault *f)
{
    f->row = row;
    f->reason = HK_FACTOR_PIVOT;
    HK_CALL(fetch_value(fsub + row, &f->sub, sizeof f->sub));
    return fetch_value(fpiv + row, &f->v[0], sizeof f->v[0]);
}

/* IC(0): the lower pattern with A's values, levels, the rows, then (blocks) the expansion.
 * Scalar: the lower pattern is F itself. */
static int exact_ic0(const hk_bmat *A, hk_bmat *F, hk_factor_fault *f)
{
    int ierr = 0;
    const int bs = A->br, bb = bs * bs;
    const int64_t n = A->nbrows;
    int64_t *cnt = NULL, *lrp = NULL, *hlp = NULL, *lptr = NULL, nnz = 0, nl = 0;
    int32_t *lcol = NULL, *lrows = NULL;
    double *lval = NULL, *fpiv = NULL;
    int *fsub = NULL;
    unsigned long long *dbad = NULL;
    HK_TRY(dalloc((void **)&cnt, (size_t)(n * bs + 1) * sizeof *cnt));
    HK_TRY(dalloc((void **)&lrp, (size_t)(n + 1) * sizeof *lrp));
    HK_TRY(hk_cu_first_row_alloc(&dbad));
    if (n) {
        k_lower_count<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, A->rowptr, A->colind,
                                                                       cnt);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_scan_counts(cnt, n, lrp, &nnz));
    if (bs == 1) {
        HK_TRY(hk_bmat_alloc(A->be, 1, 1, n, n, nnz, F));
        lcol = F->colind;
        lval = F->val;
    } else {
        HK_TRY(dalloc((void **)&lcol, (size_t)nnz * sizeof *lcol));
        HK_TRY(dalloc((void **)&lval, (size_t)nnz * bb * sizeof *lval));
    }
    if (n) {
        k_lower_fill<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, bb, A->rowptr, A->colind,
                                                                      A->val, lrp, lcol, lval);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_levels(n, lrp, lcol, 0, &lrows, &lptr, &hlp, &nl));
    if (bs == 1) {
        HK_CU_TRY(cudaMemcpyAsync(F->rowptr, lrp, (size_t)(n + 1) * sizeof *lrp,
                                  cudaMemcpyDeviceToDevice, hk_cu.stream));
        {
            auto go = [&](unsigned g, int64_t q0, int64_t q1) {
                k_ic0_level<<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(q0, q1, lrows, lrp, lcol, lval,
                                                                 dbad);
            };
            HK_TRY(per_level(hlp, nl, HK_CU_BLOCK / 32, go));
        }
        HK_TRY(hk_cu_first_row_read(dbad, &f->row));
        if (f->row >= 0) {
            /* the pivot stayed in the diagonal slot; a_ii is A's entry after the row's lower
             * part when that is the diagonal */
            int64_t lb = 0, le = 0, ab = 0, ae = 0;
            int32_t c = -1;
            f->reason = HK_FACTOR_PIVOT;
            HK_TRY(fetch_value(lrp + f->row, &lb, sizeof lb));
            HK_TRY(fetch_value(lrp + f->row + 1, &le, sizeof le));
            HK_TRY(fetch_value(lval + le - 1, &f->v[0], sizeof f->v[0]));
            HK_TRY(fetch_value(A->rowptr + f->row, &ab, sizeof ab));
            HK_TRY(fetch_value(A->rowptr + f->row + 1, &ae, sizeof ae));
            f->v[1] = 0;
            if (ab + (le - 1 - lb) < ae) {
                HK_TRY(fetch_value(A->colind + ab + (le - 1 - lb), &c, sizeof c));
                if (c == f->row)
                    HK_TRY(fetch_value(A->val + ab + (le - 1 - lb), &f->v[1], sizeof f->v[1]));
            }
        }
        lcol = NULL; /* F's */
        lval = NULL;
        goto fail;
    }
    HK_TRY(dalloc((void **)&fsub, (size_t)n * sizeof *fsub));
    HK_TRY(dalloc((void **)&fpiv, (size_t)n * sizeof *fpiv));
    {
        auto go = [&](unsigned g, int64_t q0, int64_t q1) {
            k_bic0_level<<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(q0, q1, lrows, bs, lrp, lcol, lval,
                                                              dbad, fsub, fpiv);
        };
        HK_TRY(per_level(hlp, nl, HK_CU_BLOCK, go));
    }
    HK_TRY(hk_cu_first_row_read(dbad, &f->row));
    if (f->row >= 0) {
        HK_TRY(block_fault(f->row, fsub, fpiv, f));
        goto fail;
    }
    {
        const int64_t ns = n * bs;
        int64_t snnz = 0, *srp = NULL;
        k_bic0_count<<<hk_cu_grid(ns), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, bs, lrp, cnt);
        HK_CU_TRY(cudaGetLastError());
        HK_TRY(dalloc((void **)&srp, (size_t)(ns + 1) * sizeof *srp));
        ierr = hk_cu_scan_counts(cnt, ns, srp, &snnz);
        if (!ierr) ierr = hk_bmat_alloc(A->be, 1, 1, ns, ns, snnz, F);
        if (!ierr) {
            const cudaError_t e = cudaMemcpyAsync(F->rowptr, srp, (size_t)(ns + 1) * sizeof *srp,
                                              cudaMemcpyDeviceToDevice, hk_cu.stream);
            if (e != cudaSuccess) ierr = hk_cu_fail(e, "cudaMemcpyAsync", __FILE__, __LINE__);
        }
        cudaFree(srp);
        if (ierr) goto fail;
        k_bic0_expand<<<hk_cu_grid(ns), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, bs, lrp, lcol, lval,
                                                                        F->rowptr, F->colind,
                                                                        F->val);
        HK_CU_TRY(cudaGetLastError());
    }
fail:
    if (bs == 1) {
        lcol = NULL; /* F's arrays, freed with F */
        lval = NULL;
    }
    void *d[] = {cnt, lrp, lptr, lcol, lrows, lval, fpiv, fsub, dbad};
    for (size_t k = 0; k < sizeof d / sizeof d[0]; k++)
        if (d[k]) cudaFree(d[k]);
    free(hlp);
    if (ierr || f->row >= 0) hk_bmat_free(F);
    return ierr;
}

/* ILU(0): a copy of A's values factored in place on A's pattern, then (blocks) expanded */
static int exact_ilu0(const hk_bmat *A, hk_bmat *F, hk_factor_fault *f)
{
    int ierr = 0;
    const int bs = A->br, bb = bs * bs;
    const int64_t n = A->nbrows, nnzb = A->nnzb;
    int64_t *diag = NULL, *hlp = NULL, *lptr = NULL, nl = 0;
    int32_t *lrows = NULL;
    double *v = NULL, *fpiv = NULL;
    int *fsub = NULL;
    unsigned long long *dbad = NULL;
    HK_TRY(dalloc((void **)&diag, (size_t)n * sizeof *diag));
    HK_TRY(hk_cu_first_row_alloc(&dbad));
    if (n) {
        k_diag_pos<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, A->rowptr, A->colind, diag,
                                                                    dbad);
        HK_CU_TRY(cudaGetLastError());
    }
    HK_TRY(hk_cu_first_row_read(dbad, &f->row));
    if (f->row >= 0) {
        f->reason = HK_FACTOR_NO_DIAG;
        goto fail;
    }
    HK_TRY(hk_cu_levels(n, A->rowptr, A->colind, 0, &lrows, &lptr, &hlp, &nl));
    if (bs == 1) {
        HK_TRY(hk_bmat_alloc(A->be, 1, 1, n, n, nnzb, F));
        HK_CU_TRY(cudaMemcpyAsync(F->rowptr, A->rowptr, (size_t)(n + 1) * sizeof *F->rowptr,
                                  cudaMemcpyDeviceToDevice, hk_cu.stream));
        if (nnzb) {
            HK_CU_TRY(cudaMemcpyAsync(F->colind, A->colind, (size_t)nnzb * sizeof *F->colind,
                                      cudaMemcpyDeviceToDevice, hk_cu.stream));
            HK_CU_TRY(cudaMemcpyAsync(F->val, A->val, (size_t)nnzb * sizeof *F->val,
                                      cudaMemcpyDeviceToDevice, hk_cu.stream));
        }
        {
            auto go = [&](unsigned g, int64_t q0, int64_t q1) {
                k_ilu0_level<<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(q0, q1, lrows, F->rowptr,
                                                                  F->colind, diag, F->val, dbad);
            };
            HK_TRY(per_level(hlp, nl, HK_CU_BLOCK / 32, go));
        }
        HK_TRY(hk_cu_first_row_read(dbad, &f->row));
        if (f->row >= 0) {
            int64_t at = 0;
            f->reason = HK_FACTOR_PIVOT;
            HK_TRY(fetch_value(diag + f->row, &at, sizeof at));
            HK_TRY(fetch_value(F->val + at, &f->v[0], sizeof f->v[0]));
        }
        goto fail;
    }
    HK_TRY(dalloc((void **)&v, (size_t)nnzb * bb * sizeof *v));
    HK_TRY(dalloc((void **)&fsub, (size_t)n * sizeof *fsub));
    HK_TRY(dalloc((void **)&fpiv, (size_t)n * sizeof *fpiv));
    if (nnzb)
        HK_CU_TRY(cudaMemcpyAsync(v, A->val, (size_t)nnzb * bb * sizeof *v,
                                  cudaMemcpyDeviceToDevice, hk_cu.stream));
    {
        auto go = [&](unsigned g, int64_t q0, int64_t q1) {
            k_bilu0_level<<<g, HK_CU_BLOCK, 0, hk_cu.stream>>>(q0, q1, lrows, bs, A->rowptr,
                                                               A->colind, diag, v, dbad, fsub,
                                                               fpiv);
        };
        HK_TRY(per_level(hlp, nl, HK_CU_BLOCK, go));
    }
    HK_TRY(hk_cu_first_row_read(dbad, &f->row));
    if (f->row >= 0) {
        HK_TRY(block_fault(f->row, fsub, fpiv, f));
        goto fail;
    }
    /* the scalar pattern is bmat_expand's; its values are then overwritten */
    HK_TRY(hk_cu_bmat_expand(A, F));
    if (n) {
        k_bilu0_expand<<<hk_cu_grid(n), HK_CU_BLOCK, 0, hk_cu.stream>>>(n, bs, A->rowptr,
                                                                        A->colind, diag, v,
                                                                        F->val);
        HK_CU_TRY(cudaGetLastError());
    }
fail:
    void *d[] = {diag, lptr, lrows, v, fpiv, fsub, dbad};
    for (size_t k = 0; k < sizeof d / sizeof d[0]; k++)
        if (d[k]) cudaFree(d[k]);
    free(hlp);
    if (ierr || f->row >= 0) hk_bmat_free(F);
    return ierr;
}

int hk_cu_factor_exact(const hk_bmat *A, int sym, hk_bmat *F, hk_factor_fault *f)
{
    memset(F, 0, sizeof *F);
    memset(f, 0, sizeof *f);
    f->row = -1;
    HK_CHECK(A->br == A->bc && A->br <= FB_MAX && A->nbrows == A->nbcols, HK_ERR_ARG,
             "factor_exact: the matrix must be square with square blocks of at most 8 x 8");
    HK_CALL(hk_cu_init());
    return sym ? exact_ic0(A, F, f) : exact_ilu0(A, F, f);
}
