/* cg's backend ops (cg_spmv, cg_update, cg_iter), pipecg's one-call step (pipecg_step) and the
 * pipelined methods' SpMV with dot products (spmv_dot2, spmv_mdot) against the generic ops that a
 * method composes where a backend lacks them: the same numbers to rounding without a preconditioner
 * and with Jacobi, for fp64 and fp32 vectors (the inner cg of method=defect) and an fp32 Jacobi
 * under fp64 vectors (precision=mixed); the same digits for 1, 2 and 7 threads; and cg with and
 * without them solving K x = K 1 to x = ones. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "hk_impl.h"
#include "ksp/ksp_impl.h"
#include "test_util.h"

/* The CPU backend without cg's fused ops: cg composes the generic ones, as on cuda. */
static const hk_backend_ops *cpu_composed(void)
{
    static hk_backend_ops be;
    be = hk_backend_cpu;
    be.cg_spmv = NULL;
    be.cg_update = NULL;
    be.cg_iter = NULL;
    return &be;
}

static hk_vec *vec_from(hk_precision p, int64_t n, const double *h)
{
    hk_vec *v = NULL;
    HK_ASSERT_OK(hk_vec_create(&hk_backend_cpu, n, p, &v));
    HK_ASSERT_OK(hk_vec_upload(v, h));
    return v;
}

static double *download(const hk_vec *v)
{
    double *h = malloc((size_t)v->n * sizeof *h);
    HK_ASSERT_OK(hk_vec_download(v, h));
    return h;
}

static double eps_of(hk_precision p)
{
    return p == HK_FP64 ? DBL_EPSILON : FLT_EPSILON;
}

static double rel(double a, double b)
{
    return fabs(a - b) / fmax(fabs(b), 1e-300);
}

/* ---- cg_update ---------------------------------------------------------------------------- */

typedef struct upd_in {
    int64_t n;
    double *x, *r, *p, *ap, *d; /* host values */
} upd_in;

/* Random inputs from seeds seed..seed+4; d a positive diagonal in [1, 1.5). */
static upd_in upd_in_rand(int64_t n, unsigned seed)
{
    upd_in in = {n,
                 hk_test_rand_vec(n, seed),
                 hk_test_rand_vec(n, seed + 1),
                 hk_test_rand_vec(n, seed + 2),
                 hk_test_rand_vec(n, seed + 3),
                 hk_test_rand_vec(n, seed + 4)};
    for (int64_t i = 0; i < n; i++)
        in.d[i] = 1.0 + 0.5 * in.d[i];
    return in;
}

static void upd_in_free(upd_in *in)
{
    free(in->x), free(in->r), free(in->p), free(in->ap), free(in->d);
}

typedef struct upd_out {
    double *x, *r, *z; /* z NULL without a diagonal */
    double d[2];
} upd_out;

static void upd_free(upd_out *o)
{
    free(o->x), free(o->r), free(o->z);
}

/* One update from the host values in vector precision vp, the diagonal in dp (dp < 0: none):
 * fused by the CPU op, or composed as cg composes it (hk_pc_apply's conversions included). */
static upd_out update(const upd_in *in, hk_precision vp, int dp, int fused, double alpha)
{
    const hk_backend_ops *be = &hk_backend_cpu;
    const int64_t n = in->n;
    hk_vec *x = vec_from(vp, n, in->x), *r = vec_from(vp, n, in->r), *p = vec_from(vp, n, in->p),
           *ap = vec_from(vp, n, in->ap), *z = NULL, *dinv = NULL;
    if (dp >= 0) {
        dinv = vec_from((hk_precision)dp, n, in->d);
        HK_ASSERT_OK(hk_vec_create(be, n, vp, &z));
    }
    upd_out o = {NULL, NULL, NULL, {0, 0}};
    if (fused) {
        HK_ASSERT_OK(be->cg_update(x, r, dinv ? z : r, p, ap, dinv, alpha, o.d));
    } else {
        HK_ASSERT_OK(be->vec_axpby(x, alpha, p, 1.0));
        HK_ASSERT_OK(be->vec_axpby(r, -alpha, ap, 1.0));
        if (!dinv) {
            HK_ASSERT_OK(be->vec_dot(r, r, &o.d[0]));
            o.d[1] = o.d[0];
        } else {
            if (dinv->prec == vp) {
                HK_ASSERT_OK(be->vec_pointwise_mult(z, dinv, r));
            } else {
                hk_vec *rl, *zl;
                HK_ASSERT_OK(hk_vec_create(be, n, dinv->prec, &rl));
                HK_ASSERT_OK(hk_vec_create(be, n, dinv->prec, &zl));
                HK_ASSERT_OK(be->vec_convert(rl, r));
                HK_ASSERT_OK(be->vec_pointwise_mult(zl, dinv, rl));
                HK_ASSERT_OK(be->vec_convert(z, zl));
                hk_vec_destroy(rl), hk_vec_destroy(zl);
            }
            hk_vec *X[2] = {z, r};
            HK_ASSERT_OK(be->vec_mdot(2, X, r, o.d));
        }
    }
    o.x = download(x);
    o.r = download(r);
    o.z = z ? download(z) : NULL;
    hk_vec_destroy(x), hk_vec_destroy(r), hk_vec_destroy(p), hk_vec_destroy(ap);
    hk_vec_destroy(z), hk_vec_destroy(dinv);
    return o;
}

static int same_bits(const double *a, const double *b, int64_t n)
{
    return (!a && !b) || (a && b && !memcmp(a, b, (size_t)n * sizeof *a));
}

static void test_update_equals_composed(void)
{
    /* 1237: chunks of unequal length with a lane tail; 100: fewer entries than chunks */
    static const int64_t sizes[] = {1237, 100};
    static const char *const pname[] = {"fp64", "fp32"};
    const int nt = omp_get_max_threads();
    for (int s = 0; s < 2; s++) {
        const int64_t n = sizes[s];
        upd_in in = upd_in_rand(n, 1);
        for (int vp = HK_FP64; vp <= HK_FP32; vp++)
            for (int dp = -1; dp <= HK_FP32; dp++) {
                const double alpha = 0.37;
                upd_out f = update(&in, vp, dp, 1, alpha), c = update(&in, vp, dp, 0, alpha);
                const double e = 2 * eps_of(vp);
                int ok = hk_test_reldiff(f.x, c.x, n) <= e && hk_test_reldiff(f.r, c.r, n) <= e &&
                         (dp < 0 || hk_test_reldiff(f.z, c.z, n) <= e) &&
                         rel(f.d[0], c.d[0]) <= 1e-13 && rel(f.d[1], c.d[1]) <= 1e-13;
                if (!ok)
                    fprintf(stderr,
                            "\n  cg_update n=%lld %s vectors, dinv %s: differs from the "
                            "composed ops (r.z %.17g vs %.17g, r.r %.17g vs %.17g)",
                            (long long)n, pname[vp], dp < 0 ? "none" : pname[dp], f.d[0], c.d[0],
                            f.d[1], c.d[1]);
                CU_ASSERT(ok);
                /* r.r of the new r, recomputed on the host (the definition, not the op) */
                double rr = 0;
                for (int64_t i = 0; i < n; i++)
                    rr += f.r[i] * f.r[i];
                CU_ASSERT(rel(f.d[1], rr) <= 1e-12);
                /* the same digits for 1, 2 and 7 threads */
                static const int threads[] = {1, 2, 7};
                upd_out t[3];
                for (int k = 0; k < 3; k++) {
                    omp_set_num_threads(threads[k]);
                    t[k] = update(&in, vp, dp, 1, alpha);
                }
                omp_set_num_threads(nt);
                for (int k = 1; k < 3; k++) {
                    const int same = same_bits(t[k].x, t[0].x, n) && same_bits(t[k].r, t[0].r, n) &&
                                     same_bits(t[k].z, t[0].z, n) &&
                                     !memcmp(t[k].d, t[0].d, sizeof t[0].d);
                    if (!same)
                        fprintf(stderr, "\n  cg_update %s/%s: %d threads differ from 1", pname[vp],
                                dp < 0 ? "none" : pname[dp], threads[k]);
                    CU_ASSERT(same);
                }
                for (int k = 0; k < 3; k++)
                    upd_free(&t[k]);
                upd_free(&f), upd_free(&c);
            }
        upd_in_free(&in);
    }
}

/* ---- cg_spmv ------------------------------------------------------------------------------ */

/* p = z + beta p (beta = 0: p = z; no z: p as it is), y = A p, p.Ap: by the CPU op, or composed
 * as cg composes it. p, y and *pap receive the results. */
static void direction(const hk_mat *A, const hk_vec *z, double beta, hk_vec *p, hk_vec *y,
                      int fused, double *pap)
{
    const hk_backend_ops *be = &hk_backend_cpu;
    HK_ASSERT_OK(be->vec_set(y, 0.0));
    if (fused) {
        HK_ASSERT_OK(be->cg_spmv((hk_mat *)A, z, beta, p, y, pap));
        return;
    }
    if (z && beta == 0.0) HK_ASSERT_OK(be->vec_copy(p, z));
    if (z && beta != 0.0) HK_ASSERT_OK(be->vec_axpby(p, 1.0, z, beta));
    HK_ASSERT_OK(hk_mat_spmv((hk_mat *)A, p, y));
    HK_ASSERT_OK(be->vec_dot(p, y, pap));
}

static void test_cg_spmv_equals_composed(void)
{
    const hk_backend_ops *be = &hk_backend_cpu;
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 3, &K));
    const int64_t n = K.nbrows * K.bs;
    double *hp = hk_test_rand_vec(n, 11), *hz = hk_test_rand_vec(n, 12);
    double *hnan = malloc((size_t)n * sizeof *hnan);
    for (int64_t i = 0; i < n; i++)
        hnan[i] = NAN; /* beta = 0 must not read the old p */
    static const hk_format fmts[] = {HK_FMT_CSR,  HK_FMT_BSR,   HK_FMT_ELL, HK_FMT_SELL,
                                     HK_FMT_BELL, HK_FMT_SBELL, HK_FMT_PCSR};
    static const double betas[] = {0.7, 0.0, -1.0}; /* -1: no z, p as it is */
    const int nt = omp_get_max_threads();
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++)
        for (int pr = HK_FP64; pr <= HK_FP32; pr++)
            for (int bi = 0; bi < 3; bi++) {
                const double beta = betas[bi] < 0 ? 0.0 : betas[bi];
                const double *p0 = betas[bi] == 0.0 ? hnan : hp;
                hk_mat *A = NULL;
                HK_ASSERT_OK(hk_mat_create(be, &K, fmts[f], (hk_precision)pr, NULL, &A));
                hk_vec *z = betas[bi] < 0 ? NULL : vec_from(pr, n, hz), *p = vec_from(pr, n, p0),
                       *y = NULL;
                HK_ASSERT_OK(hk_vec_create(be, n, pr, &y));
                double pap_c, pap_f, pap_t[3];
                direction(A, z, beta, p, y, 0, &pap_c);
                double *pc = download(p), *yc = download(y);
                HK_ASSERT_OK(hk_vec_upload(p, p0));
                direction(A, z, beta, p, y, 1, &pap_f);
                double *pf = download(p), *yf = download(y);
                const double e = 2 * eps_of(pr);
                const int ok = hk_test_reldiff(pf, pc, n) <= e && hk_test_reldiff(yf, yc, n) <= e &&
                               rel(pap_f, pap_c) <= 1e-12 && isfinite(pap_f);
                if (!ok)
                    fprintf(stderr,
                            "\n  cg_spmv %s %s beta %g: differs from the composed ops (%.17g vs "
                            "%.17g)",
                            hk_format_name(fmts[f]), pr == HK_FP64 ? "fp64" : "fp32", betas[bi],
                            pap_f, pap_c);
                CU_ASSERT(ok);
                /* the same digits for 1, 2 and 7 threads */
                double *yt[3], *pt[3];
                static const int threads[] = {1, 2, 7};
                for (int k = 0; k < 3; k++) {
                    omp_set_num_threads(threads[k]);
                    HK_ASSERT_OK(hk_vec_upload(p, p0));
                    direction(A, z, beta, p, y, 1, &pap_t[k]);
                    yt[k] = download(y);
                    pt[k] = download(p);
                }
                omp_set_num_threads(nt);
                for (int k = 1; k < 3; k++)
                    CU_ASSERT(same_bits(yt[k], yt[0], n) && same_bits(pt[k], pt[0], n) &&
                              pap_t[k] == pap_t[0]);
                for (int k = 0; k < 3; k++)
                    free(yt[k]), free(pt[k]);
                free(pc), free(yc), free(pf), free(yf);
                hk_vec_destroy(z), hk_vec_destroy(p), hk_vec_destroy(y);
                hk_mat_destroy(A);
            }
    /* a wrong-precision call is refused with a sentence, not computed */
    hk_mat *A = NULL;
    HK_ASSERT_OK(hk_mat_create(be, &K, HK_FMT_CSR, HK_FP32, NULL, &A));
    hk_vec *p = vec_from(HK_FP64, n, hp), *y = NULL;
    HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &y));
    double pap;
    CU_ASSERT(be->cg_spmv(A, NULL, 0.0, p, y, &pap) != 0);
    CU_ASSERT(be->cg_spmv(A, p, 0.0, p, y, &pap) != 0); /* z = p */
    hk_vec_destroy(p), hk_vec_destroy(y);
    hk_mat_destroy(A);
    free(hp), free(hz), free(hnan);
    hk_bcsr_free(&K);
}

/* ---- cg_iter ------------------------------------------------------------------------------ */

typedef struct iter_out {
    double *x, *r, *z, *p, *ap; /* z NULL without a diagonal */
    double d[3];
} iter_out;

static void iter_free(iter_out *o)
{
    free(o->x), free(o->r), free(o->z), free(o->p), free(o->ap);
}

/* One cg iteration from the host values (fp64 vectors, the diagonal in dp, dp < 0: none; rz the
 * previous r.z): by the CPU's cg_iter, or composed as cg composes it without one (the update,
 * then p = z + beta p, A p and p.Ap by the generic ops). */
static iter_out iterate(hk_mat *A, const upd_in *in, int dp, int fused, double alpha, double rz)
{
    const hk_backend_ops *be = &hk_backend_cpu;
    const int64_t n = in->n;
    hk_vec *x = vec_from(HK_FP64, n, in->x), *r = vec_from(HK_FP64, n, in->r),
           *p = vec_from(HK_FP64, n, in->p), *ap = vec_from(HK_FP64, n, in->ap), *z = r,
           *dinv = NULL;
    if (dp >= 0) {
        dinv = vec_from((hk_precision)dp, n, in->d);
        HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &z));
    }
    iter_out o = {NULL, NULL, NULL, NULL, NULL, {0, 0, 0}};
    if (fused) {
        HK_ASSERT_OK(be->cg_iter(A, x, r, z, p, ap, dinv, alpha, rz, o.d));
    } else {
        HK_ASSERT_OK(be->vec_axpby(x, alpha, p, 1.0));
        HK_ASSERT_OK(be->vec_axpby(r, -alpha, ap, 1.0));
        if (dinv) {
            if (dinv->prec == HK_FP64) {
                HK_ASSERT_OK(be->vec_pointwise_mult(z, dinv, r));
            } else {
                hk_vec *rl, *zl;
                HK_ASSERT_OK(hk_vec_create(be, n, HK_FP32, &rl));
                HK_ASSERT_OK(hk_vec_create(be, n, HK_FP32, &zl));
                HK_ASSERT_OK(be->vec_convert(rl, r));
                HK_ASSERT_OK(be->vec_pointwise_mult(zl, dinv, rl));
                HK_ASSERT_OK(be->vec_convert(z, zl));
                hk_vec_destroy(rl), hk_vec_destroy(zl);
            }
        }
        hk_vec *X[2] = {z, r};
        HK_ASSERT_OK(be->vec_mdot(2, X, r, o.d));
        HK_ASSERT_OK(be->vec_axpby(p, 1.0, z, o.d[0] / rz));
        HK_ASSERT_OK(hk_mat_spmv(A, p, ap));
        HK_ASSERT_OK(be->vec_dot(p, ap, &o.d[2]));
    }
    o.x = download(x), o.r = download(r), o.p = download(p), o.ap = download(ap);
    o.z = dinv ? download(z) : NULL;
    hk_vec_destroy(x), hk_vec_destroy(r), hk_vec_destroy(p), hk_vec_destroy(ap);
    if (dinv) hk_vec_destroy(z), hk_vec_destroy(dinv);
    return o;
}

/* Sizes with chunks shorter than the matrix's reach (each thread's rows read the entries of
 * several others at 7 threads) and longer (the SpMV's interior rows first); formats with the
 * row kernel (csr, bsr) and without (sbell: the op's two-pass form). */
static void test_cg_iter_equals_composed(void)
{
    static const int dims[2][3] = {{5, 4, 3}, {16, 14, 12}};
    static const hk_format fmts[] = {HK_FMT_CSR, HK_FMT_BSR, HK_FMT_SBELL};
    static const char *const dname[] = {"none", "fp64", "fp32"};
    const int nt = omp_get_max_threads();
    for (int s = 0; s < 2; s++) {
        hk_bcsr K;
        HK_ASSERT_OK(hk_gen_elasticity3d(dims[s][0], dims[s][1], dims[s][2], &K));
        const int64_t n = K.nbrows * K.bs;
        upd_in in = upd_in_rand(n, 21);
        for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
            hk_mat *A = NULL;
            HK_ASSERT_OK(hk_mat_create(&hk_backend_cpu, &K, fmts[f], HK_FP64, NULL, &A));
            for (int dp = -1; dp <= HK_FP32; dp++) {
                const double alpha = 0.37, rz = 0.8 * (double)n;
                iter_out fo = iterate(A, &in, dp, 1, alpha, rz),
                         co = iterate(A, &in, dp, 0, alpha, rz);
                const double e = 4 * DBL_EPSILON;
                const int ok =
                    hk_test_reldiff(fo.x, co.x, n) <= e && hk_test_reldiff(fo.r, co.r, n) <= e &&
                    (dp < 0 || hk_test_reldiff(fo.z, co.z, n) <= e) &&
                    hk_test_reldiff(fo.p, co.p, n) <= 1e-13 &&
                    hk_test_reldiff(fo.ap, co.ap, n) <= 1e-12 && rel(fo.d[0], co.d[0]) <= 1e-13 &&
                    rel(fo.d[1], co.d[1]) <= 1e-13 && rel(fo.d[2], co.d[2]) <= 1e-12;
                if (!ok)
                    fprintf(stderr,
                            "\n  cg_iter n=%lld %s dinv %s: differs from the composed ops "
                            "(p.Ap %.17g vs %.17g)",
                            (long long)n, hk_format_name(fmts[f]), dname[dp + 1], fo.d[2], co.d[2]);
                CU_ASSERT(ok);
                /* the same digits for 1, 2 and 7 threads */
                static const int threads[] = {1, 2, 7};
                iter_out t[3];
                for (int k = 0; k < 3; k++) {
                    omp_set_num_threads(threads[k]);
                    t[k] = iterate(A, &in, dp, 1, alpha, rz);
                }
                omp_set_num_threads(nt);
                for (int k = 1; k < 3; k++) {
                    const int same = same_bits(t[k].x, t[0].x, n) && same_bits(t[k].r, t[0].r, n) &&
                                     same_bits(t[k].z, t[0].z, n) && same_bits(t[k].p, t[0].p, n) &&
                                     same_bits(t[k].ap, t[0].ap, n) &&
                                     !memcmp(t[k].d, t[0].d, sizeof t[0].d);
                    if (!same)
                        fprintf(stderr, "\n  cg_iter n=%lld %s dinv %s: %d threads differ from 1",
                                (long long)n, hk_format_name(fmts[f]), dname[dp + 1], threads[k]);
                    CU_ASSERT(same);
                }
                for (int k = 0; k < 3; k++)
                    iter_free(&t[k]);
                iter_free(&fo), iter_free(&co);
            }
            hk_mat_destroy(A);
        }
        upd_in_free(&in);
        hk_bcsr_free(&K);
    }
}

/* ---- the pipelined methods' SpMV with dot products ----------------------------------------- */

typedef struct sdot_out {
    double *y;
    double s[7]; /* spmv_dot2's PAP, APZ, ZAP, then spmv_mdot's k = 4 sums */
} sdot_out;

/* spmv_dot2 (dinv and r given) and spmv_mdot (k = 4, W[3] = y itself) on p: by the CPU ops, or
 * composed (hk_mat_spmv, then vec_dot on the definitions). */
static sdot_out spmv_dots(hk_mat *A, const double *hp, const double *hr, const double *hd,
                          int64_t n, int fused)
{
    const hk_backend_ops *be = &hk_backend_cpu;
    hk_vec *p = vec_from(HK_FP64, n, hp), *r = vec_from(HK_FP64, n, hr),
           *d = vec_from(HK_FP64, n, hd), *y = NULL, *t = NULL;
    HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &y));
    HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &t));
    sdot_out o = {NULL, {0}};
    const hk_vec *W[4] = {p, r, d, y};
    if (fused) {
        double S[HK_S_MAX];
        const int slot[4] = {20, 21, 22, 23};
        HK_ASSERT_OK(be->spmv_dot2(A, p, y, d, r, S));
        o.s[0] = S[HK_S_PAP], o.s[1] = S[HK_S_APZ], o.s[2] = S[HK_S_ZAP];
        HK_ASSERT_OK(be->spmv_mdot(A, p, y, 4, W, S, slot));
        for (int j = 0; j < 4; j++)
            o.s[3 + j] = S[20 + j];
    } else {
        HK_ASSERT_OK(hk_mat_spmv(A, p, y));
        HK_ASSERT_OK(be->vec_dot(p, y, &o.s[0]));
        HK_ASSERT_OK(be->vec_pointwise_mult(t, d, y)); /* dinv .* Ap */
        HK_ASSERT_OK(be->vec_dot(y, t, &o.s[1]));
        HK_ASSERT_OK(be->vec_dot(r, t, &o.s[2]));
        for (int j = 0; j < 4; j++)
            HK_ASSERT_OK(be->vec_dot(W[j], y, &o.s[3 + j]));
    }
    o.y = download(y);
    hk_vec_destroy(p), hk_vec_destroy(r), hk_vec_destroy(d), hk_vec_destroy(y), hk_vec_destroy(t);
    return o;
}

static void test_spmv_dots_equal_composed(void)
{
    static const int dims[2][3] = {{5, 4, 3}, {16, 14, 12}};
    static const hk_format fmts[] = {HK_FMT_CSR, HK_FMT_BSR, HK_FMT_SBELL};
    const int nt = omp_get_max_threads();
    for (int s = 0; s < 2; s++) {
        hk_bcsr K;
        HK_ASSERT_OK(hk_gen_elasticity3d(dims[s][0], dims[s][1], dims[s][2], &K));
        const int64_t n = K.nbrows * K.bs;
        double *hp = hk_test_rand_vec(n, 31), *hr = hk_test_rand_vec(n, 32),
               *hd = hk_test_rand_vec(n, 33);
        for (int64_t i = 0; i < n; i++)
            hd[i] = 1.0 + 0.5 * hd[i];
        for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
            hk_mat *A = NULL;
            HK_ASSERT_OK(hk_mat_create(&hk_backend_cpu, &K, fmts[f], HK_FP64, NULL, &A));
            sdot_out fo = spmv_dots(A, hp, hr, hd, n, 1), co = spmv_dots(A, hp, hr, hd, n, 0);
            int ok = hk_test_reldiff(fo.y, co.y, n) <= 1e-13;
            for (int j = 0; j < 7; j++)
                ok = ok && rel(fo.s[j], co.s[j]) <= 1e-12;
            if (!ok)
                fprintf(stderr, "\n  spmv_dot2/spmv_mdot n=%lld %s: differ from the composed ops",
                        (long long)n, hk_format_name(fmts[f]));
            CU_ASSERT(ok);
            static const int threads[] = {1, 2, 7};
            sdot_out t[3];
            for (int k = 0; k < 3; k++) {
                omp_set_num_threads(threads[k]);
                t[k] = spmv_dots(A, hp, hr, hd, n, 1);
            }
            omp_set_num_threads(nt);
            for (int k = 1; k < 3; k++)
                CU_ASSERT(same_bits(t[k].y, t[0].y, n) && !memcmp(t[k].s, t[0].s, sizeof t[0].s));
            for (int k = 0; k < 3; k++)
                free(t[k].y);
            free(fo.y), free(co.y);
            hk_mat_destroy(A);
        }
        free(hp), free(hr), free(hd);
        hk_bcsr_free(&K);
    }
}

/* ---- pipecg_step ---------------------------------------------------------------------------- */

typedef struct pipe_out {
    double *x, *r, *p, *ap;
    double S[HK_S_PIPECG_COUNT];
} pipe_out;

static void pipe_free(pipe_out *o)
{
    free(o->x), free(o->r), free(o->p), free(o->ap);
}

/* One fused pipelined CG step from the host values and scalars S0: by the CPU's pipecg_step,
 * or by the two ops pipecg calls without it. */
static pipe_out pipe_step(hk_mat *A, const upd_in *in, int jacobi, const double *S0, int fused)
{
    const hk_backend_ops *be = &hk_backend_cpu;
    const int64_t n = in->n;
    hk_vec *x = vec_from(HK_FP64, n, in->x), *r = vec_from(HK_FP64, n, in->r),
           *p = vec_from(HK_FP64, n, in->p), *ap = vec_from(HK_FP64, n, in->ap),
           *d = jacobi ? vec_from(HK_FP64, n, in->d) : NULL;
    double S[HK_S_MAX];
    memcpy(S, S0, HK_S_PIPECG_COUNT * sizeof *S);
    if (fused) {
        HK_ASSERT_OK(be->pipecg_step(A, x, r, p, ap, d, S));
    } else {
        HK_ASSERT_OK(be->pipecg_update(x, r, p, ap, d, S));
        HK_ASSERT_OK(be->spmv_dot2(A, p, ap, d, r, S));
    }
    pipe_out o = {download(x), download(r), download(p), download(ap), {0}};
    memcpy(o.S, S, sizeof o.S);
    hk_vec_destroy(x), hk_vec_destroy(r), hk_vec_destroy(p), hk_vec_destroy(ap), hk_vec_destroy(d);
    return o;
}

static void test_pipecg_step_equals_composed(void)
{
    static const int dims[2][3] = {{5, 4, 3}, {16, 14, 12}};
    static const hk_format fmts[] = {HK_FMT_CSR, HK_FMT_BSR, HK_FMT_SBELL};
    const int nt = omp_get_max_threads();
    for (int s = 0; s < 2; s++) {
        hk_bcsr K;
        HK_ASSERT_OK(hk_gen_elasticity3d(dims[s][0], dims[s][1], dims[s][2], &K));
        const int64_t n = K.nbrows * K.bs;
        upd_in in = upd_in_rand(n, 41);
        /* RR, RZ, PAP, APZ, ALPHA, BETA, ZAP: alpha = 0.4, beta = 0.5 */
        const double S0[HK_S_PIPECG_COUNT] = {2.0, 2.0, 5.0, 2.5, 0, 0, 3.0};
        for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
            hk_mat *A = NULL;
            HK_ASSERT_OK(hk_mat_create(&hk_backend_cpu, &K, fmts[f], HK_FP64, NULL, &A));
            for (int j = 0; j < 2; j++) {
                pipe_out fo = pipe_step(A, &in, j, S0, 1), co = pipe_step(A, &in, j, S0, 0);
                int ok = hk_test_reldiff(fo.x, co.x, n) <= 4 * DBL_EPSILON &&
                         hk_test_reldiff(fo.r, co.r, n) <= 4 * DBL_EPSILON &&
                         hk_test_reldiff(fo.p, co.p, n) <= 4 * DBL_EPSILON &&
                         hk_test_reldiff(fo.ap, co.ap, n) <= 1e-13;
                for (int i = 0; i < HK_S_PIPECG_COUNT; i++)
                    ok = ok && rel(fo.S[i], co.S[i]) <= 1e-12;
                if (!ok)
                    fprintf(stderr, "\n  pipecg_step n=%lld %s jacobi %d: differs from the two ops",
                            (long long)n, hk_format_name(fmts[f]), j);
                CU_ASSERT(ok);
                static const int threads[] = {1, 2, 7};
                pipe_out t[3];
                for (int k = 0; k < 3; k++) {
                    omp_set_num_threads(threads[k]);
                    t[k] = pipe_step(A, &in, j, S0, 1);
                }
                omp_set_num_threads(nt);
                for (int k = 1; k < 3; k++)
                    CU_ASSERT(same_bits(t[k].x, t[0].x, n) && same_bits(t[k].r, t[0].r, n) &&
                              same_bits(t[k].p, t[0].p, n) && same_bits(t[k].ap, t[0].ap, n) &&
                              !memcmp(t[k].S, t[0].S, sizeof t[0].S));
                for (int k = 0; k < 3; k++)
                    pipe_free(&t[k]);
                pipe_free(&fo), pipe_free(&co);
            }
            hk_mat_destroy(A);
        }
        upd_in_free(&in);
        hk_bcsr_free(&K);
    }
}

/* ---- cg with and without the fused ops ------------------------------------------------------ */

typedef struct cg_case {
    const char *pc;
    hk_format fmt;
    hk_precision vp, pp; /* vectors and matrix; preconditioner */
    double rtol, xtol;   /* tolerance; bound on max |x - 1| */
} cg_case;

/* cg on K x = K 1 from x = 0 on backend be (check every 3 iterations, so that both the checked
 * and the unchecked updates run); x receives the solution. */
static void solve_cg(const hk_backend_ops *be, const hk_bcsr *K, const cg_case *c, double *x,
                     hk_result *res)
{
    const int64_t n = K->nbrows * K->bs;
    hk_ksp k;
    memset(&k, 0, sizeof k);
    k.type = hk_ksp_type_find("cg");
    k.be = be;
    k.rtol = c->rtol;
    k.maxit = 3000;
    k.check_every = 3;
    hk_bmat Kd = {0};
    HK_ASSERT_OK(hk_mat_create(be, K, c->fmt, c->vp, NULL, &k.A));
    HK_ASSERT_OK(hk_bmat_upload(be, K, &Kd));
    HK_ASSERT_OK(hk_pc_create(hk_pc_type_find(c->pc), be, c->pp, &Kd, k.A, NULL, NULL, &k.pc));
    hk_bmat_free(&Kd);
    double *one = malloc((size_t)n * sizeof *one), *hb = malloc((size_t)n * sizeof *hb);
    for (int64_t i = 0; i < n; i++)
        one[i] = 1.0;
    hk_bcsr_spmv(K, one, hb);
    hk_vec *b = vec_from(c->vp, n, hb), *xv = NULL;
    HK_ASSERT_OK(hk_vec_create(be, n, c->vp, &xv));
    HK_ASSERT_OK(be->vec_set(xv, 0.0));
    HK_ASSERT_OK(k.type->solve(&k, b, xv));
    HK_ASSERT_OK(hk_vec_download(xv, x));
    *res = k.res;
    hk_vec_destroy(b), hk_vec_destroy(xv);
    hk_ksp_pool_free(&k);
    free(k.history);
    hk_pc_destroy(k.pc);
    hk_mat_destroy(k.A);
    free(one), free(hb);
}

static void test_cg_fused_and_composed(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(7, 6, 5, &K));
    const int64_t n = K.nbrows * K.bs;
    static const cg_case cases[] = {
        {"none", HK_FMT_CSR, HK_FP64, HK_FP64, 1e-10, 1e-6},
        {"jacobi", HK_FMT_CSR, HK_FP64, HK_FP64, 1e-10, 1e-6},
        {"jacobi", HK_FMT_BSR, HK_FP64, HK_FP64, 1e-10, 1e-6},
        {"jacobi", HK_FMT_SBELL, HK_FP64, HK_FP64, 1e-10, 1e-6},
        {"jacobi", HK_FMT_CSR, HK_FP64, HK_FP32, 1e-10, 1e-6}, /* precision=mixed */
        {"none", HK_FMT_CSR, HK_FP32, HK_FP32, 1e-5, 1e-2},    /* defect's inner cg */
        {"jacobi", HK_FMT_BSR, HK_FP32, HK_FP32, 1e-5, 1e-2},
        {"bjacobi", HK_FMT_CSR, HK_FP64, HK_FP64, 1e-10, 1e-6}, /* composed on both */
    };
    double *xf = malloc((size_t)n * sizeof *xf), *xc = malloc((size_t)n * sizeof *xc);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const cg_case *c = &cases[i];
        hk_result rf, rc;
        solve_cg(&hk_backend_cpu, &K, c, xf, &rf);
        solve_cg(cpu_composed(), &K, c, xc, &rc);
        double ef = 0, ec = 0;
        for (int64_t j = 0; j < n; j++) {
            ef = fmax(ef, fabs(xf[j] - 1.0));
            ec = fmax(ec, fabs(xc[j] - 1.0));
        }
        const int ok = hk_reason_converged(rf.reason) && hk_reason_converged(rc.reason) &&
                       abs(rf.iterations - rc.iterations) <= 1 && ef <= c->xtol && ec <= c->xtol;
        if (!ok)
            fprintf(stderr,
                    "\n  cg pc=%s %s %s: fused %d its (max |x-1| %.3g), composed %d "
                    "(%.3g)",
                    c->pc, hk_format_name(c->fmt), c->vp == HK_FP64 ? "fp64" : "fp32",
                    rf.iterations, ef, rc.iterations, ec);
        CU_ASSERT(ok);
        /* the two paths differ by rounding only: far closer to each other than to ones */
        CU_ASSERT(hk_test_reldiff(xf, xc, n) <= (c->vp == HK_FP64 ? 1e-9 : 1e-3));
    }
    /* the fused solve repeats to the last digit for 1, 2 and 7 threads */
    const int nt = omp_get_max_threads();
    double *xt = malloc((size_t)n * sizeof *xt);
    for (int i = 1; i < 3; i++) {
        hk_result r1, rt;
        omp_set_num_threads(1);
        solve_cg(&hk_backend_cpu, &K, &cases[i], xf, &r1);
        static const int threads[] = {2, 7};
        for (int t = 0; t < 2; t++) {
            omp_set_num_threads(threads[t]);
            solve_cg(&hk_backend_cpu, &K, &cases[i], xt, &rt);
            CU_ASSERT(rt.iterations == r1.iterations && same_bits(xt, xf, n));
        }
    }
    omp_set_num_threads(nt);
    free(xf), free(xc), free(xt);
    hk_bcsr_free(&K);
}

HK_SUITE(cg_fused,
         {"cg_update equals the composed ops, any thread count", test_update_equals_composed},
         {"cg_spmv equals the composed ops for every format", test_cg_spmv_equals_composed},
         {"cg_iter equals the composed ops, any thread count", test_cg_iter_equals_composed},
         {"spmv_dot2 and spmv_mdot equal the composed ops, any thread count",
          test_spmv_dots_equal_composed},
         {"pipecg_step equals pipecg_update then spmv_dot2, any thread count",
          test_pipecg_step_equals_composed},
         {"cg with and without the fused ops solves to ones", test_cg_fused_and_composed})
