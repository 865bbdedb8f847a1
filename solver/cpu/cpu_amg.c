/* CPU reference of the AMG smoother op amg_l1_diag (contract in solver/hk_impl.h): the
 * l1-Jacobi scaling 1/(a_ii + sum_{j != i} |a_ij|) of every scalar row. One block row per
 * iteration, each row summed in column order; the first bad row is a min-reduction, so the
 * result is the same for any thread count. cuda/cuda_amg.cu follows the same arithmetic. */
#include <math.h>
#include <stdint.h>

#include "cpu_impl.h"

int hk_cpu_amg_l1_diag(const hk_bmat *A, hk_vec *out, int64_t *bad)
{
    *bad = -1;
    const int br = A->br, bc = A->bc;
    HK_CHECK(br == bc, HK_ERR_ARG, "amg_l1_diag: blocks are %d x %d; it needs square blocks", br,
             bc);
    const int64_t nb = A->nbrows, n = nb * br;
    HK_CHECK(out->prec == HK_FP64 && out->n == n, HK_ERR_ARG,
             "amg_l1_diag: the output must be an fp64 vector of %lld entries (got %lld)",
             (long long)n, (long long)out->n);
    double *o = out->data;
    int64_t first = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : first)
    for (int64_t i = 0; i < n; i++) {
        const int64_t bi = i / br;
        const int r = (int)(i % br);
        double diag = 0, off = 0;
        int nonzero = 0;
        for (int64_t q = A->rowptr[bi]; q < A->rowptr[bi + 1]; q++)
            for (int c = 0; c < bc; c++) {
                const double v = A->val[((size_t)q * br + r) * bc + c];
                if (v != 0) nonzero = 1;
                if ((int64_t)A->colind[q] * bc + c == i)
                    diag = v;
                else
                    off += fabs(v);
            }
        const double s = diag + off;
        double v = 0;
        if (nonzero) {
            if (s > 0 && isfinite(s)) v = 1 / s;
            if (!(s > 0) || !isfinite(s) || !isfinite(v)) {
                v = 0;
                if (i < first) first = i;
            }
        }
        o[i] = v;
    }
    *bad = first == INT64_MAX ? -1 : first;
    return 0;
}

/* Near-null space (amg_rigid_modes, contract in solver/hk_impl.h): one node per iteration;
 * translations e_a, rotations (bs = 2) (-y, x), (bs = 3) about x (0, -z, y), about y
 * (z, 0, -x), about z (-y, x, 0) of the centred, scaled coordinates. */
int hk_cpu_amg_rigid_modes(int64_t nnodes, int bs, const hk_vec *coords, const double *center,
                           double scale, const hk_vec *decoupled, double *B)
{
    const int64_t n = nnodes * bs;
    HK_CHECK(bs >= 1 && bs <= 6 && (!coords || bs == 2 || bs == 3), HK_ERR_ARG,
             "amg_rigid_modes: block size %d with%s coordinates; coordinates need 2 or 3, "
             "translations 1 to 6",
             bs, coords ? "" : "out");
    HK_CHECK(!coords || (coords->prec == HK_FP64 && coords->n == n), HK_ERR_ARG,
             "amg_rigid_modes: coordinates must be an fp64 vector of %lld entries", (long long)n);
    HK_CHECK(!decoupled || (decoupled->prec == HK_FP64 && decoupled->n == n), HK_ERR_ARG,
             "amg_rigid_modes: the decoupled flags must be an fp64 vector of %lld entries",
             (long long)n);
    const int nns = coords ? (bs == 3 ? 6 : 3) : bs;
    const double *xyz = coords ? coords->data : NULL;
    const double *dec = decoupled ? decoupled->data : NULL;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nnodes; i++) {
        double m[3][6] = {{0}}; /* m[a][k]: dof a of the node, mode k */
        for (int a = 0; a < bs && a < 3; a++)
            m[a][a] = 1;
        double x[3] = {0, 0, 0};
        if (xyz)
            for (int a = 0; a < bs; a++)
                x[a] = (xyz[i * bs + a] - center[a]) * scale;
        if (xyz && bs == 2) {
            m[0][2] = -x[1];
            m[1][2] = x[0];
        } else if (xyz) {
            m[1][3] = -x[2];
            m[2][3] = x[1];
            m[0][4] = x[2];
            m[2][4] = -x[0];
            m[0][5] = -x[1];
            m[1][5] = x[0];
        }
        for (int a = 0; a < bs; a++) {
            const int64_t r = i * bs + a;
            const int off = dec && dec[r] != 0;
            for (int k = 0; k < nns; k++)
                B[r + (size_t)k * n] = off ? 0 : a < 3 ? m[a][k] : (double)(a == k);
        }
    }
    return 0;
}

/* The modes' frame (amg_coord_frame): the mean in NCHUNK fixed chunks of nodes, each summed
 * in order and the chunks in order (the same digits for any thread count), the extent a
 * maximum. */
int hk_amg_coord_frame_host(const double *x, int64_t nnodes, int bs, double *center, double *scale)
{
    enum { NCHUNK = 64 };
    double part[NCHUNK][3] = {{0}}, ext = 0;
    const int64_t nb = nnodes;
    HK_CHECK(bs == 2 || bs == 3, HK_ERR_ARG, "amg_coord_frame: coordinates of dimension %d", bs);
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < NCHUNK; ch++)
        for (int64_t i = nb * ch / NCHUNK; i < nb * (ch + 1) / NCHUNK; i++)
            for (int a = 0; a < bs; a++)
                part[ch][a] += x[i * bs + a];
    for (int a = 0; a < 3; a++) {
        double sum = 0;
        for (int ch = 0; ch < NCHUNK; ch++)
            sum += part[ch][a];
        center[a] = nb ? sum / (double)nb : 0;
    }
    HK_CHECK(isfinite(center[0]) && isfinite(center[1]) && isfinite(center[2]), HK_ERR_ARG,
             "near-null space: a node coordinate is not finite");
    const double *cc = center;
#pragma omp parallel for schedule(static) reduction(max : ext)
    for (int64_t i = 0; i < nb; i++)
        for (int a = 0; a < bs; a++)
            ext = fmax(ext, fabs(x[i * bs + a] - cc[a]));
    *scale = ext > 0 ? 1 / ext : 1;
    return 0;
}

int hk_cpu_amg_coord_frame(int64_t nnodes, int bs, const hk_vec *coords, double *center,
                           double *scale)
{
    HK_CHECK(coords && coords->prec == HK_FP64 && coords->n == nnodes * bs, HK_ERR_ARG,
             "amg_coord_frame: coordinates must be an fp64 vector of %lld entries",
             (long long)(nnodes * bs));
    return hk_amg_coord_frame_host(coords->data, nnodes, bs, center, scale);
}

/* The distributed frame's parts (amg_coord_bounds): the sums in node order on one thread (the
 * arithmetic of the distributed set-up's host sum, whose bytes it keeps), the bounds by the
 * threads (a minimum and a maximum are exact in any order). */
int hk_cpu_amg_coord_bounds(int64_t nnodes, int bs, const hk_vec *coords, double *sum, double *lo,
                            double *hi)
{
    HK_CHECK(bs == 2 || bs == 3, HK_ERR_ARG, "amg_coord_bounds: coordinates of dimension %d", bs);
    HK_CHECK(coords && coords->prec == HK_FP64 && coords->n == nnodes * bs, HK_ERR_ARG,
             "amg_coord_bounds: coordinates must be an fp64 vector of %lld entries",
             (long long)(nnodes * bs));
    const double *x = coords->data;
    double s[3] = {0, 0, 0};
    for (int64_t i = 0; i < nnodes; i++)
        for (int a = 0; a < bs; a++)
            s[a] += x[i * bs + a];
    double l0 = INFINITY, l1 = INFINITY, l2 = INFINITY, h0 = -INFINITY, h1 = -INFINITY,
           h2 = -INFINITY;
#pragma omp parallel for schedule(static) reduction(min : l0, l1, l2) reduction(max : h0, h1, h2)
    for (int64_t i = 0; i < nnodes; i++) {
        const double *p = x + i * bs;
        l0 = fmin(l0, p[0]);
        h0 = fmax(h0, p[0]);
        l1 = fmin(l1, p[1]);
        h1 = fmax(h1, p[1]);
        if (bs == 3) {
            l2 = fmin(l2, p[2]);
            h2 = fmax(h2, p[2]);
        }
    }
    const double l[3] = {l0, l1, l2}, h[3] = {h0, h1, h2};
    for (int a = 0; a < 3; a++) {
        sum[a] = a < bs ? s[a] : 0;
        lo[a] = a < bs ? l[a] : 0;
        hi[a] = a < bs ? h[a] : 0;
    }
    return 0;
}

/* y = A x for rectangular blocks (bmat_spmv): one block row per iteration, its blocks in
 * order, sums in fp64; values fp64 (A->val) or fp32 (val32). */
int hk_cpu_bmat_spmv(const hk_bmat *A, const float *val32, const hk_vec *x, hk_vec *y)
{
    const int br = A->br, bc = A->bc;
    HK_CHECK(br >= 1 && br <= 8 && bc >= 1 && bc <= 8, HK_ERR_ARG,
             "bmat_spmv: %d x %d blocks; at most 8 x 8", br, bc);
    HK_CHECK(x->n == A->nbcols * bc && y->n == A->nbrows * br && x->prec == y->prec, HK_ERR_ARG,
             "bmat_spmv: x must have %lld and y %lld entries of one precision (got %lld, %lld)",
             (long long)(A->nbcols * bc), (long long)(A->nbrows * br), (long long)x->n,
             (long long)y->n);
    const int f32 = x->prec == HK_FP32;
    const double *xd = x->data;
    const float *xf = x->data;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < A->nbrows; i++) {
        double acc[8] = {0};
        for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) {
            const size_t v0 = (size_t)q * br * bc;
            const int64_t j0 = (int64_t)A->colind[q] * bc;
            for (int r = 0; r < br; r++) {
                double s = 0;
                for (int c = 0; c < bc; c++) {
                    const size_t e = v0 + (size_t)(r * bc + c);
                    s += (val32 ? (double)val32[e] : A->val[e]) *
                         (f32 ? (double)xf[j0 + c] : xd[j0 + c]);
                }
                acc[r] += s;
            }
        }
        for (int r = 0; r < br; r++) {
            if (f32)
                ((float *)y->data)[i * br + r] = (float)acc[r];
            else
                ((double *)y->data)[i * br + r] = acc[r];
        }
    }
    return 0;
}

/* The start vector of the spectral estimate (amg_start_vector): v_i = 0.5 + (h(i) & 0xffff) /
 * 65536 with h = hk_hash32, every entry in [0.5, 1.5), exact in either precision. */
int hk_cpu_amg_start_vector(hk_vec *v)
{
    const int64_t n = v->n;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const double x = 0.5 + (double)(hk_hash32((uint32_t)i) & 0xffffu) / 65536.0;
        if (v->prec == HK_FP64)
            ((double *)v->data)[i] = x;
        else
            ((float *)v->data)[i] = (float)x;
    }
    return 0;
}
