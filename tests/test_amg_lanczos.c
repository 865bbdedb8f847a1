/* pc=amg's spectral bound in three ops a step (solver/pc/amg.c, lanczos_ritz): spmv_dot_s
 * (q = A p with p . q) and bdiag_update_dot_s (r -= (rz / pq) q; z = D^-1 r; r . z). On the cpu
 * both give the bytes of the separate calls they replace (mat_spmv, vec_dot, vec_axpby_s,
 * bdiag_apply), on every thread count, in fp64 and fp32, block sizes 1, 3 and 6; bad arguments
 * are refused. Device suite cuda_amg_lanczos: cuda's ops against the cpu's separate calls within
 * rounding, their vectors against cuda's own separate kernels byte for byte, every run the same
 * bytes. Whole solves with and without the fused ops (HOOKE_AMG_UNFUSED=1 switches the cycle's
 * and the bound's alike) are compared in test_amg_cheb.c. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

static const hk_backend *backend(const char *name)
{
    const hk_backend *b = NULL;
    if (hk_backend_get(name, &b)) hk_error_clear();
    return b;
}

/* The vectors of one step on a backend: p, q, r, z and the node blocks D. */
enum { V_P, V_Q, V_R, V_Z, V_D, NV };

static void make_vecs(const hk_backend *be, int64_t n, int bs, hk_precision prec, hk_vec **v)
{
    hk_test_step_vecs(be, n, bs, prec, NV, V_D, 23u, 7u, v);
}

static void free_vecs(hk_vec **v)
{
    hk_test_free_vecs(v, NV);
}

/* The backend scalars of a step: S[0] = r.z (old), S[1] = p.q, S[2] = r.z (new). */
static const double rz_old = 0.8125, pq_fixed = 1234.5;

/* One step's two halves on be, fused (the ops) or by the separate calls; S: 3 backend
 * scalars, out: their values. fix: the update takes p.q = pq_fixed instead of the product's
 * sum (whose last digits differ between the fused and the separate sums on cuda), so that r
 * and z can be compared byte for byte. */
static void step(const hk_backend *be, hk_mat *A, int bs, hk_vec **v, int fused, int fix,
                 double *S, double *out)
{
    double h[3];
    HK_ASSERT_OK(be->scal_set(S, 0, 1, &rz_old));
    if (fused)
        HK_ASSERT_OK(be->spmv_dot_s(A, v[V_P], v[V_Q], &S[1]));
    else {
        HK_ASSERT_OK(hk_mat_spmv(A, v[V_P], v[V_Q]));
        HK_ASSERT_OK(be->vec_dot_s(v[V_P], v[V_Q], &S[1]));
    }
    HK_ASSERT_OK(be->scal_get(S, 1, 1, &out[1]));
    if (fix) HK_ASSERT_OK(be->scal_set(S, 1, 1, &pq_fixed));
    if (fused)
        HK_ASSERT_OK(be->bdiag_update_dot_s(v[V_R], &S[0], &S[1], v[V_Q], v[V_D], bs, v[V_Z],
                                            &S[2]));
    else {
        HK_ASSERT_OK(be->vec_axpby_s(v[V_R], -1.0, &S[0], &S[1], v[V_Q], 1.0, NULL, NULL));
        HK_ASSERT_OK(be->bdiag_apply(v[V_D], bs, v[V_R], v[V_Z]));
        HK_ASSERT_OK(be->vec_dot_s(v[V_R], v[V_Z], &S[2]));
    }
    HK_ASSERT_OK(be->scal_get(S, 0, 3, h));
    out[0] = h[0];
    out[2] = h[2];
}

/* q, r and z of f against g: the same bytes (tol < 0) or within tol. */
static int same_vecs(const char *label, hk_vec **f, hk_vec **g, double tol)
{
    static const int idx[3] = {V_Q, V_R, V_Z};
    static const char *const name[3] = {"q", "r", "z"};
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        const int64_t n = f[idx[k]]->n;
        double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
        HK_ASSERT_OK(hk_vec_download(f[idx[k]], a));
        HK_ASSERT_OK(hk_vec_download(g[idx[k]], b));
        const double d = hk_test_reldiff(a, b, (long)n);
        const int same = tol < 0 ? !memcmp(a, b, (size_t)n * sizeof *a) : d <= tol;
        if (!same) printf("\n  %s: %s differs (relative %.2e)", label, name[k], d);
        ok &= same;
        free(a);
        free(b);
    }
    return ok;
}

static int same_scalars(const char *label, const double *a, const double *b, double tol)
{
    int ok = 1;
    for (int k = 1; k < 3; k++) {
        const double d = fabs(a[k] - b[k]) / (fabs(b[k]) > 1e-300 ? fabs(b[k]) : 1.0);
        const int same = tol < 0 ? !memcmp(&a[k], &b[k], sizeof *a) : d <= tol;
        if (!same)
            printf("\n  %s: %s %.17g against %.17g", label, k == 1 ? "p.q" : "r.z", a[k], b[k]);
        ok &= same;
    }
    return ok;
}

/* The fused step on be (matrix in fmt) against ref's separate calls (matrix in rfmt): block sizes
 * 1, 3 and 6, fp64 and fp32; vtol, stol: the vectors' and the scalars' tolerances by precision
 * (< 0: bytes); fix as for step. With twice, be's fused step runs a second time on fresh
 * vectors and must give its first run's bytes. */
static void compare(const hk_backend *be, const hk_backend *ref, hk_format fmt, hk_format rfmt,
                    const double vtol[2], const double stol[2], int fix, int twice)
{
    static const int sizes[3] = {1, 3, 6};
    for (int sb = 0; sb < 3; sb++) {
        const int bs = sizes[sb];
        hk_bcsr K = {0};
        hk_test_band(bs == 6 ? 700 : 2000, bs, 300, 5u, &K);
        const int64_t n = K.nbrows * bs;
        for (int p = 0; p < 2; p++) {
            const hk_precision prec = p ? HK_FP32 : HK_FP64;
            hk_mat *A = NULL, *R = NULL;
            hk_vec *f[NV], *g[NV];
            double *S = NULL, *T = NULL, sf[3], sg[3];
            HK_ASSERT_OK(hk_mat_create(be, &K, fmt, prec, NULL, &A));
            HK_ASSERT_OK(hk_mat_create(ref, &K, rfmt, prec, NULL, &R));
            HK_ASSERT_OK(be->scal_alloc(&S, 3));
            HK_ASSERT_OK(ref->scal_alloc(&T, 3));
            make_vecs(be, n, bs, prec, f);
            make_vecs(ref, n, bs, prec, g);
            step(be, A, bs, f, 1, fix, S, sf);
            step(ref, R, bs, g, 0, fix, T, sg);
            char label[160];
            snprintf(label, sizeof label, "%s %s bs %d %s", hk_backend_name(be),
                     hk_format_name(fmt), bs, p ? "fp32" : "fp64");
            CU_ASSERT(same_vecs(label, f, g, vtol[p]));
            CU_ASSERT(same_scalars(label, sf, sg, stol[p]));
            if (twice) {
                hk_vec *h[NV];
                double sh[3];
                make_vecs(be, n, bs, prec, h);
                step(be, A, bs, h, 1, fix, S, sh);
                CU_ASSERT(same_vecs(label, h, f, -1.0));
                CU_ASSERT(same_scalars(label, sh, sf, -1.0));
                free_vecs(h);
            }
            free_vecs(f);
            free_vecs(g);
            be->scal_free(S);
            ref->scal_free(T);
            hk_mat_destroy(A);
            hk_mat_destroy(R);
        }
        hk_bcsr_free(&K);
    }
}

static const double bytes_[2] = {-1.0, -1.0};

/* The cpu's ops against its own separate calls, byte for byte, on a row-kernel format, a sliced
 * one and a scalar one, on 1 and 3 threads. */
static void test_ops_cpu(void)
{
    const hk_backend *cpu = backend("cpu");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cpu->spmv_dot_s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cpu->bdiag_update_dot_s);
    const int nt = omp_get_max_threads();
    for (int t = 1; t <= 3; t += 2) {
        omp_set_num_threads(t);
        compare(cpu, cpu, HK_FMT_BSR, HK_FMT_BSR, bytes_, bytes_, 0, 1);
        compare(cpu, cpu, HK_FMT_SBELL, HK_FMT_SBELL, bytes_, bytes_, 0, 0);
        compare(cpu, cpu, HK_FMT_CSR, HK_FMT_CSR, bytes_, bytes_, 0, 0);
    }
    omp_set_num_threads(nt);
}

/* Arguments the ops refuse: aliased vectors, D of the wrong size, a vector of the other
 * precision. */
static void test_ops_errors(void)
{
    const hk_backend *cpu = backend("cpu");
    hk_bcsr K = {0};
    hk_test_band(300, 3, -1, 3u, &K);
    hk_mat *A = NULL;
    HK_ASSERT_OK(hk_mat_create(cpu, &K, HK_FMT_BSR, HK_FP64, NULL, &A));
    hk_vec *v[NV], *w = NULL;
    double *S = NULL;
    make_vecs(cpu, 900, 3, HK_FP64, v);
    HK_ASSERT_OK(hk_vec_create(cpu, 900, HK_FP32, &w));
    HK_ASSERT_OK(cpu->scal_alloc(&S, 3));
    HK_ASSERT_OK(cpu->scal_set(S, 0, 1, &rz_old));
    CU_ASSERT_NOT_EQUAL(cpu->spmv_dot_s(A, v[V_P], v[V_P], &S[1]), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "different vectors"));
    hk_error_clear();
    CU_ASSERT_NOT_EQUAL(cpu->spmv_dot_s(A, v[V_P], w, &S[1]), 0);
    hk_error_clear();
    HK_ASSERT_OK(cpu->spmv_dot_s(A, v[V_P], v[V_Q], &S[1]));
    CU_ASSERT_NOT_EQUAL(
        cpu->bdiag_update_dot_s(v[V_R], &S[0], &S[1], v[V_Q], v[V_D], 3, v[V_R], &S[2]), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "different vectors"));
    hk_error_clear();
    CU_ASSERT_NOT_EQUAL(
        cpu->bdiag_update_dot_s(v[V_R], &S[0], &S[1], v[V_Q], v[V_D], 2, v[V_Z], &S[2]), 0);
    hk_error_clear();
    CU_ASSERT_NOT_EQUAL(
        cpu->bdiag_update_dot_s(v[V_R], &S[0], &S[1], v[V_Q], v[V_D], 3, w, &S[2]), 0);
    hk_error_clear();
    HK_ASSERT_OK(cpu->bdiag_update_dot_s(v[V_R], &S[0], &S[1], v[V_Q], v[V_D], 3, v[V_Z], &S[2]));
    free_vecs(v);
    hk_vec_destroy(w);
    cpu->scal_free(S);
    hk_mat_destroy(A);
    hk_bcsr_free(&K);
}

HK_SUITE(amg_lanczos, {"the bound's fused ops equal the separate calls byte for byte",
                       test_ops_cpu},
         {"the bound's fused ops refuse bad arguments", test_ops_errors})

/* cuda's ops, every format kind (the SpMV's epilogue: sbell, bsr, sell; the product, then
 * vec_dot_s: csr's own kernels, cusparse-bsr), against the cpu's separate calls within
 * rounding, twice with the same bytes; then against cuda's own separate kernels on the same
 * format with the update's p.q fixed: the vectors byte for byte (the epilogue stores the plain
 * kernel's sums, the update repeats vec_axpby's and bdiag_apply's entry arithmetic), the sums
 * within rounding (another order). */
static void test_ops_cuda(void)
{
    const hk_backend *gpu = backend("cuda"), *cpu = backend("cpu");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu->spmv_dot_s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu->bdiag_update_dot_s);
    static const hk_format fmts[] = {HK_FMT_SBELL, HK_FMT_BSR, HK_FMT_SELL, HK_FMT_CSR,
                                     HK_FMT_CUSPARSE_BSR};
    const double vtol[2] = {1e-12, 1e-5}, stol[2] = {1e-12, 1e-5}, sown[2] = {1e-13, 1e-6};
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
        compare(gpu, cpu, fmts[f], HK_FMT_BSR, vtol, stol, 0, 1);
    compare(gpu, gpu, HK_FMT_SBELL, HK_FMT_SBELL, bytes_, sown, 1, 0);
    compare(gpu, gpu, HK_FMT_BSR, HK_FMT_BSR, bytes_, sown, 1, 0);
    compare(gpu, gpu, HK_FMT_SELL, HK_FMT_SELL, bytes_, sown, 1, 0);
}

HK_DEVICE_SUITE(cuda_amg_lanczos,
                {"the bound's fused ops on cuda equal the cpu's calls", test_ops_cuda})
