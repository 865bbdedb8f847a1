/* The CUDA backend against the CPU backend and the host reference (device suite: skipped
 * without a GPU).
 *
 * Every device kernel runs on random and finite-element matrices with the edge cases (one
 * block row, fewer block rows than a slice, empty rows, block sizes 1-3, every thread count
 * per block row), in fp64 and fp32; the fused Krylov ops are compared with their CPU versions;
 * reductions must repeat bit for bit; outputs are poisoned with NaN first so an unwritten
 * entry fails. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "test_util.h"
#include "hk_impl.h"
#ifdef HOOKE_HAVE_CUDA
#include "../cuda/hk_cuda.h"
#endif

/* ---- helpers ---------------------------------------------------------------------------- */

static const hk_backend *be_cpu(void)
{
    const hk_backend *b = NULL;
    hk_backend_get("cpu", &b);
    return b;
}

static const hk_backend *be_gpu(void)
{
    const hk_backend *b = NULL;
    if (hk_backend_get("cuda", &b)) hk_error_clear();
    return b;
}

static double *rnd(int64_t n, unsigned seed)
{
    double *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    uint32_t s = seed * 2891336453u + 7u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (double)(s >> 8) / (double)(1u << 24) * 2.0 - 1.0;
    }
    return x;
}

static hk_vec *mk(const hk_backend *be, int64_t n, hk_precision p, const double *h)
{
    hk_vec *v = NULL;
    if (hk_vec_create(be, n, p, &v)) {
        fprintf(stderr, "\n  hk_vec_create: %s\n", hk_error_message());
        return NULL;
    }
    if (h) hk_vec_upload(v, h);
    return v;
}

static double *get(const hk_vec *v)
{
    double *h = malloc((size_t)(v->n ? v->n : 1) * sizeof *h);
    if (hk_vec_download(v, h)) fprintf(stderr, "\n  download: %s\n", hk_error_message());
    return h;
}

/* Compare a device vector with a CPU one; name the case on failure. */
static int same_vec(const char *what, const hk_vec *g, const hk_vec *c, double tol)
{
    double *a = get(g), *b = get(c);
    double d = hk_test_reldiff(a, b, (long)g->n);
    int ok = d <= tol;
    if (!ok) fprintf(stderr, "\n  %s: relative difference %.3g > %.3g\n", what, d, tol);
    free(a);
    free(b);
    return ok;
}

static int same_val(const char *what, double g, double c, double tol)
{
    double d = fabs(g - c) / fmax(fabs(c), 1e-300);
    int ok = d <= tol || g == c;
    if (!ok) fprintf(stderr, "\n  %s: %.17g vs cpu %.17g (rel %.3g)\n", what, g, c, d);
    return ok;
}

/* ---- SpMV of every format --------------------------------------------------------------- */

typedef struct tmat {
    const char *name;
    hk_bcsr K;
} tmat;

static int make_mats(tmat *m)
{
    int k = 0;
    memset(m, 0, 10 * sizeof *m);
    m[k].name = "random bs1, one row";
    HK_CALL(hk_gen_random(1, 1, 1, 1, 0, 1, &m[k++].K));
    m[k].name = "random bs2, 5 block rows (fewer than a slice), empty rows";
    HK_CALL(hk_gen_random(5, 5, 2, 2.5, 1, 2, &m[k++].K));
    m[k].name = "random bs3, 3 block rows";
    HK_CALL(hk_gen_random(3, 3, 3, 2, 0, 3, &m[k++].K));
    m[k].name = "random bs3, 200 block rows, empty rows";
    HK_CALL(hk_gen_random(200, 200, 3, 9, 1, 4, &m[k++].K));
    m[k].name = "random bs1, 1000 rows, empty rows";
    HK_CALL(hk_gen_random(1000, 1000, 1, 7, 1, 5, &m[k++].K));
    m[k].name = "random bs2, 37 x 50 block rectangular";
    HK_CALL(hk_gen_random(37, 50, 2, 4, 1, 6, &m[k++].K));
    m[k].name = "hex8 elasticity 3x3x3 (bs3)";
    HK_CALL(hk_gen_elasticity3d(3, 3, 3, &m[k++].K));
    m[k].name = "quad4 elasticity 6x5 (bs2)";
    HK_CALL(hk_gen_elasticity2d(6, 5, &m[k++].K));
    m[k].name = "poisson 12x12 (bs1)";
    HK_CALL(hk_gen_poisson2d(12, &m[k++].K));
    return k;
}

/* y = A x on cuda in format fmt, precision p, options opt, against hk_bcsr_spmv. */
static int check_spmv(const char *mname, const hk_bcsr *K, hk_format fmt, hk_precision p,
                      const char *opt)
{
    const hk_backend *gpu = be_gpu();
    const int64_t n = K->nbrows * K->bs, nc = K->nbcols * K->bs;
    char what[256];
    snprintf(what, sizeof what, "%s: %s %s [%s]", mname, hk_format_name(fmt),
             p == HK_FP64 ? "fp64" : "fp32", opt);
    hk_options *o;
    hk_options_create(&o);
    hk_options_parse(o, opt);
    hk_mat *A = NULL;
    int err = hk_mat_create(gpu, K, fmt, p, o, &A);
    hk_options_destroy(o);
    if (err) {
        fprintf(stderr, "\n  %s: %s\n", what, hk_error_message());
        return 0;
    }
    double *x = rnd(nc, 11), *ref = malloc((size_t)(n ? n : 1) * 8),
           *bound = malloc((size_t)(n ? n : 1) * 8);
    if (p == HK_FP32) /* the reference sees what the device sees: fp32-rounded A and x */
        for (int64_t i = 0; i < nc; i++)
            x[i] = (float)x[i];
    hk_bcsr Kr;
    hk_bcsr_copy(K, &Kr);
    const int64_t nv = K->rowptr[K->nbrows] * K->bs * K->bs;
    if (p == HK_FP32)
        for (int64_t i = 0; i < nv; i++)
            Kr.val[i] = (float)Kr.val[i];
    hk_bcsr_spmv(&Kr, x, ref);
    for (int64_t i = 0; i < nv; i++)
        Kr.val[i] = fabs(Kr.val[i]);
    double *ax = malloc((size_t)(nc ? nc : 1) * 8);
    for (int64_t i = 0; i < nc; i++)
        ax[i] = fabs(x[i]);
    hk_bcsr_spmv(&Kr, ax, bound);
    hk_vec *xv = mk(gpu, nc, p, x), *yv = mk(gpu, n, p, NULL);
    gpu->vec_set(yv, NAN); /* poison: every entry must be written */
    err = hk_mat_spmv(A, xv, yv);
    int ok = !err;
    if (err) fprintf(stderr, "\n  %s: %s\n", what, hk_error_message());
    double *y = get(yv);
    const double tol = p == HK_FP64 ? 1e-13 : 2e-6;
    for (int64_t i = 0; ok && i < n; i++) {
        if (!(fabs(y[i] - ref[i]) <= tol * bound[i] + 1e-300) && y[i] != ref[i]) {
            fprintf(stderr, "\n  %s: y[%lld] = %.17g, expected %.17g\n", what, (long long)i, y[i],
                    ref[i]);
            ok = 0;
        }
    }
    free(x), free(ref), free(bound), free(ax), free(y);
    hk_bcsr_free(&Kr);
    hk_vec_destroy(xv), hk_vec_destroy(yv);
    hk_mat_destroy(A);
    return ok;
}

static void test_spmv_formats(void)
{
    tmat m[10];
    const int nm = make_mats(m);
    CU_ASSERT_FATAL(nm == 9);
    static const char *const opts[] = {"",
                                       "format.tpr=1",
                                       "format.tpr=2 format.slice=4",
                                       "format.tpr=8 format.slice=3",
                                       "format.tpr=32 format.slice=1",
                                       "format.slice=64 format.sigma=8"};
    int bad = 0, runs = 0;
    for (int i = 0; i < nm; i++)
        for (int f = 0; f < HK_FMT_COUNT; f++)
            for (int p = 0; p < 2; p++)
                for (int o = 0; o < 6; o++) {
                    if ((f == HK_FMT_CUSPARSE_CSR || f == HK_FMT_CUSPARSE_BSR) && o > 0) continue;
                    bad += !check_spmv(m[i].name, &m[i].K, (hk_format)f, (hk_precision)p, opts[o]);
                    runs++;
                }
    if (bad) fprintf(stderr, "\n  %d of %d SpMV cases failed\n", bad, runs);
    CU_ASSERT_EQUAL(bad, 0);
    for (int i = 0; i < nm; i++)
        hk_bcsr_free(&m[i].K);
}

/* Slices of very different widths (a band matrix with one hub row coupled to every third
 * column: the hub's slice is hundreds of blocks wide, the rest four or five): with
 * format.tpr=auto the sliced formats give the hub's slice more lanes than the others (the
 * k_sell_wide kernel), with a fixed format.tpr every slice the same; both equal the host. */
static void test_spmv_wide_slices(void)
{
    static const struct {
        int64_t n;
        int bs;
        int64_t hub;
    } cases[] = {{3000, 3, 7}, {3000, 1, 1500}, {20000, 2, 19999}};
    static const hk_format fmts[] = {HK_FMT_SBELL, HK_FMT_SELL};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        hk_bcsr K;
        hk_test_band(cases[c].n, cases[c].bs, cases[c].hub, 5, &K);
        char name[64];
        snprintf(name, sizeof name, "band %lld bs%d, hub row %lld", (long long)cases[c].n,
                 cases[c].bs, (long long)cases[c].hub);
        for (int f = 0; f < 2; f++)
            for (int p = 0; p < 2; p++)
                for (int fixed = 0; fixed < 2; fixed++) {
                    const char *opt = fixed ? "format.tpr=4" : "";
                    CU_ASSERT(check_spmv(name, &K, fmts[f], (hk_precision)p, opt));
                    hk_options *o;
                    hk_options_create(&o);
                    hk_options_parse(o, opt);
                    hk_mat *A = NULL;
                    HK_ASSERT_OK(hk_mat_create(be_gpu(), &K, fmts[f], (hk_precision)p, o, &A));
                    hk_options_destroy(o);
                    hk_mat_info info;
                    hk_mat_get_info(A, &info);
                    if (fixed) {
                        CU_ASSERT_EQUAL(info.lanes_min, 4);
                        CU_ASSERT_EQUAL(info.lanes_max, 4);
                    } else {
                        CU_ASSERT(info.lanes_max > info.lanes_min);
                        CU_ASSERT_EQUAL(info.lanes_max, 32);
                    }
                    hk_mat_destroy(A);
                }
        hk_bcsr_free(&K);
    }
}

/* A mid-size FEM matrix (24k DOFs: the auto thread count picks several per block row) and a
 * grid larger than the fused kernels' cap (tpr=32). */
static void test_spmv_fem_sizes(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(19, 19, 19, &K)); /* 20^3 nodes */
    int bad = 0;
    for (int f = 0; f < HK_FMT_COUNT; f++)
        for (int p = 0; p < 2; p++) {
            bad += !check_spmv("hex8 20^3 nodes", &K, (hk_format)f, (hk_precision)p, "");
            if (f == HK_FMT_SBELL || f == HK_FMT_CSR || f == HK_FMT_BSR)
                bad += !check_spmv("hex8 20^3 nodes", &K, (hk_format)f, (hk_precision)p,
                                   "format.tpr=32");
        }
    CU_ASSERT_EQUAL(bad, 0);
    hk_bcsr_free(&K);
}

/* ---- vector ops ---------------------------------------------------------------------------- */

static void test_vec_ops(void)
{
    const hk_backend *gpu = be_gpu(), *cpu = be_cpu();
    static const int64_t sizes[] = {1, 255, 1000, 300001};
    for (int si = 0; si < 4; si++)
        for (int p = 0; p < 2; p++) {
            const int64_t n = sizes[si];
            const hk_precision P = (hk_precision)p;
            const double tol = p ? 1e-6 : 1e-14, dtol = p ? 1e-6 : 1e-12;
            char what[128];
            double *hx = rnd(n, 1 + si), *hy = rnd(n, 2 + si), *hz = rnd(n, 3 + si);
            hk_vec *gx = mk(gpu, n, P, hx), *gy = mk(gpu, n, P, hy), *gz = mk(gpu, n, P, hz);
            hk_vec *cx = mk(cpu, n, P, hx), *cy = mk(cpu, n, P, hy), *cz = mk(cpu, n, P, hz);
            snprintf(what, sizeof what, "n=%lld %s", (long long)n, p ? "fp32" : "fp64");
            /* set, scale, axpby (b = 0 ignores NaN in y), axpbypcz, pointwise */
            HK_ASSERT_OK(gpu->vec_axpby(gy, 1.5, gx, -0.5));
            HK_ASSERT_OK(cpu->vec_axpby(cy, 1.5, cx, -0.5));
            CU_ASSERT(same_vec(what, gy, cy, tol));
            HK_ASSERT_OK(gpu->vec_set(gz, NAN));
            HK_ASSERT_OK(cpu->vec_set(cz, NAN));
            HK_ASSERT_OK(gpu->vec_axpby(gz, 2.0, gx, 0.0));
            HK_ASSERT_OK(cpu->vec_axpby(cz, 2.0, cx, 0.0));
            CU_ASSERT(same_vec(what, gz, cz, tol));
            HK_ASSERT_OK(gpu->vec_axpbypcz(gz, 0.25, gx, -1.0, gy, 3.0));
            HK_ASSERT_OK(cpu->vec_axpbypcz(cz, 0.25, cx, -1.0, cy, 3.0));
            CU_ASSERT(same_vec(what, gz, cz, tol));
            HK_ASSERT_OK(gpu->vec_set(gz, NAN));
            HK_ASSERT_OK(cpu->vec_set(cz, NAN));
            HK_ASSERT_OK(gpu->vec_axpbypcz(gz, 0.25, gx, -1.0, gy, 0.0));
            HK_ASSERT_OK(cpu->vec_axpbypcz(cz, 0.25, cx, -1.0, cy, 0.0));
            CU_ASSERT(same_vec(what, gz, cz, tol));
            HK_ASSERT_OK(gpu->vec_scale(gz, -3.0));
            HK_ASSERT_OK(cpu->vec_scale(cz, -3.0));
            CU_ASSERT(same_vec(what, gz, cz, tol));
            HK_ASSERT_OK(gpu->vec_pointwise_mult(gz, gx, gy));
            HK_ASSERT_OK(cpu->vec_pointwise_mult(cz, cx, cy));
            CU_ASSERT(same_vec(what, gz, cz, tol));
            HK_ASSERT_OK(gpu->vec_copy(gz, gx));
            CU_ASSERT(same_vec(what, gz, cx, 0));
            HK_ASSERT_OK(gpu->vec_set(gz, 0.125));
            double *hz2 = get(gz);
            CU_ASSERT_EQUAL(hz2[n - 1], 0.125);
            free(hz2);
            /* conversion both ways */
            hk_vec *go = mk(gpu, n, (hk_precision)!p, NULL),
                   *co = mk(cpu, n, (hk_precision)!p, NULL);
            HK_ASSERT_OK(gpu->vec_convert(go, gx));
            HK_ASSERT_OK(cpu->vec_convert(co, cx));
            CU_ASSERT(same_vec(what, go, co, 0));
            HK_ASSERT_OK(gpu->vec_convert(gz, go));
            HK_ASSERT_OK(cpu->vec_convert(cz, co));
            CU_ASSERT(same_vec(what, gz, cz, 0));
            hk_vec_destroy(go), hk_vec_destroy(co);
            /* dot, mdot and maxpy with more vectors than one kernel takes (16) */
            double dg, dc;
            HK_ASSERT_OK(gpu->vec_dot(gx, gy, &dg));
            HK_ASSERT_OK(cpu->vec_dot(cx, cy, &dc));
            CU_ASSERT(same_val(what, dg, dc, dtol));
            enum { K = 20 };
            hk_vec *GX[K], *CX[K];
            double a[K], rg[K], rc[K];
            for (int j = 0; j < K; j++) {
                double *h = rnd(n, 100 + j);
                GX[j] = mk(gpu, n, P, h);
                CX[j] = mk(cpu, n, P, h);
                a[j] = 0.1 * (j - 7);
                free(h);
            }
            HK_ASSERT_OK(gpu->vec_mdot(K, GX, gy, rg));
            HK_ASSERT_OK(cpu->vec_mdot(K, CX, cy, rc));
            for (int j = 0; j < K; j++)
                CU_ASSERT(same_val(what, rg[j], rc[j], dtol));
            HK_ASSERT_OK(gpu->vec_maxpy(gy, K, a, GX));
            HK_ASSERT_OK(cpu->vec_maxpy(cy, K, a, CX));
            CU_ASSERT(same_vec(what, gy, cy, p ? 1e-5 : 1e-13));
            for (int j = 0; j < K; j++)
                hk_vec_destroy(GX[j]), hk_vec_destroy(CX[j]);
            /* block-diagonal apply, block sizes 1..3 */
            for (int bs = 1; bs <= 3; bs++) {
                const int64_t nb = n / bs * bs;
                if (!nb) continue;
                double *hd = rnd(nb * bs, 50 + bs);
                hk_vec *gd = mk(gpu, nb * bs, P, hd), *cd = mk(cpu, nb * bs, P, hd);
                hk_vec *gu = mk(gpu, nb, P, hx), *cu = mk(cpu, nb, P, hx);
                hk_vec *gw = mk(gpu, nb, P, NULL), *cw = mk(cpu, nb, P, NULL);
                gpu->vec_set(gw, NAN);
                HK_ASSERT_OK(gpu->bdiag_apply(gd, bs, gu, gw));
                HK_ASSERT_OK(cpu->bdiag_apply(cd, bs, cu, cw));
                CU_ASSERT(same_vec("bdiag_apply", gw, cw, tol));
                hk_vec_destroy(gd), hk_vec_destroy(cd), hk_vec_destroy(gu), hk_vec_destroy(cu);
                hk_vec_destroy(gw), hk_vec_destroy(cw);
                free(hd);
            }
            hk_vec_destroy(gx), hk_vec_destroy(gy), hk_vec_destroy(gz);
            hk_vec_destroy(cx), hk_vec_destroy(cy), hk_vec_destroy(cz);
            free(hx), free(hy), free(hz);
        }
}

static void test_vec_errors(void)
{
    const hk_backend *gpu = be_gpu();
    hk_vec *a = mk(gpu, 10, HK_FP64, NULL), *b = mk(gpu, 10, HK_FP32, NULL);
    double d;
    CU_ASSERT_EQUAL(gpu->vec_dot(a, b, &d), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "precision"));
    CU_ASSERT_EQUAL(gpu->pipecg_update(b, b, b, b, NULL, NULL), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "fp64"));
    /* scalars round trip */
    double *S, in[3] = {1.5, -2, 3e-300}, out[3];
    HK_ASSERT_OK(gpu->scal_alloc(&S, 8));
    HK_ASSERT_OK(gpu->scal_get(S, 0, 3, out));
    CU_ASSERT(out[0] == 0 && out[2] == 0);
    HK_ASSERT_OK(gpu->scal_set(S, 2, 3, in));
    HK_ASSERT_OK(gpu->scal_get(S, 2, 3, out));
    CU_ASSERT(!memcmp(in, out, sizeof in));
    gpu->scal_free(S);
    size_t fr = 0, tot = 0;
    HK_ASSERT_OK(gpu->mem_info(&fr, &tot));
    CU_ASSERT(fr > 0 && fr <= tot);
    hk_vec_destroy(a), hk_vec_destroy(b);
}

/* ---- fused ops ----------------------------------------------------------------------------- */

/* Backend pair for the fused tests: the same matrix and vectors on cpu and cuda. */
typedef struct side {
    const hk_backend *be;
    hk_mat *A;
    hk_vec *v[10];
    double *S;
} side;

static void side_make(side *s, const hk_backend *be, const hk_bcsr *K, hk_format fmt,
                      const char *opt)
{
    const int64_t n = K->nbrows * K->bs;
    hk_options *o;
    hk_options_create(&o);
    hk_options_parse(o, opt);
    s->be = be;
    HK_ASSERT_OK(hk_mat_create(be, K, fmt, HK_FP64, o, &s->A));
    hk_options_destroy(o);
    for (int j = 0; j < 10; j++) {
        double *h = rnd(n, 300 + j);
        if (j == 9)
            for (int64_t i = 0; i < n; i++)
                h[i] = 1.0 / (2.0 + h[i]); /* a positive dinv */
        s->v[j] = mk(be, n, HK_FP64, h);
        free(h);
    }
    HK_ASSERT_OK(be->scal_alloc(&s->S, HK_S_MAX));
    double init[HK_S_MAX];
    for (int j = 0; j < HK_S_MAX; j++)
        init[j] = 0.5 + 0.01 * j; /* nonzero denominators */
    HK_ASSERT_OK(be->scal_set(s->S, 0, HK_S_MAX, init));
}

static void side_free(side *s)
{
    hk_mat_destroy(s->A);
    for (int j = 0; j < 10; j++)
        hk_vec_destroy(s->v[j]);
    s->be->scal_free(s->S);
}

static int same_S(const char *what, side *g, side *c, double tol)
{
    double sg[HK_S_MAX], sc[HK_S_MAX];
    g->be->scal_get(g->S, 0, HK_S_MAX, sg);
    c->be->scal_get(c->S, 0, HK_S_MAX, sc);
    int ok = 1;
    for (int j = 0; j < HK_S_MAX; j++) {
        char w[160];
        snprintf(w, sizeof w, "%.140s S[%d]", what, j);
        ok &= same_val(w, sg[j], sc[j], tol);
    }
    return ok;
}

static int same_all(const char *what, side *g, side *c, double tol)
{
    int ok = same_S(what, g, c, tol);
    for (int j = 0; j < 10; j++) {
        char w[160];
        snprintf(w, sizeof w, "%.140s vector %d", what, j);
        ok &= same_vec(w, g->v[j], c->v[j], tol);
    }
    return ok;
}

static void fused_case(const hk_bcsr *K, hk_format fmt, const char *opt)
{
    side g, c;
    char what[160];
    snprintf(what, sizeof what, "%s [%s], n=%lld", hk_format_name(fmt), opt,
             (long long)(K->nbrows * K->bs));
    side_make(&g, be_gpu(), K, fmt, opt);
    /* the CPU side uses csr for the cusparse formats (same operator) */
    side_make(&c, be_cpu(), K,
              fmt == HK_FMT_CUSPARSE_CSR   ? HK_FMT_CSR
              : fmt == HK_FMT_CUSPARSE_BSR ? HK_FMT_BSR
                                           : fmt,
              opt);
    const double tol = 1e-11;
    side *s[2] = {&g, &c};
    for (int w = 0; w < 2; w++) { /* with and without Jacobi */
        for (int k = 0; k < 2; k++) {
            const hk_backend *be = s[k]->be;
            hk_vec **v = s[k]->v;
            HK_ASSERT_OK(be->spmv_dot2(s[k]->A, v[2], v[3], w ? v[9] : NULL, v[1], s[k]->S));
            HK_ASSERT_OK(be->pipecg_update(v[0], v[1], v[2], v[3], w ? v[9] : NULL, s[k]->S));
        }
        CU_ASSERT(same_all(what, &g, &c, tol));
    }
    /* spmv_mdot with 0..4 dots, one of them against y itself */
    static const int slots[4] = {HK_S_BI_APR0, 30, HK_S_BI_ASAS, 31};
    for (int kk = 0; kk <= 4; kk++) {
        for (int k = 0; k < 2; k++) {
            hk_vec **v = s[k]->v;
            const hk_vec *W[4] = {v[4], v[5], v[5], v[6]};
            W[2] = v[5]; /* = y below */
            HK_ASSERT_OK(s[k]->be->spmv_mdot(s[k]->A, v[2], v[5], kk, W, s[k]->S, slots));
        }
        CU_ASSERT(same_all(what, &g, &c, tol));
    }
    /* pipelined BiCGStab steps, with phat = p and shat = s (no preconditioner) and without */
    for (int alias = 0; alias < 2; alias++) {
        for (int k = 0; k < 2; k++) {
            hk_vec **v = s[k]->v;
            const hk_backend *be = s[k]->be;
            HK_ASSERT_OK(be->pipebicg_s(v[4], v[1], v[3], s[k]->S));
            HK_ASSERT_OK(be->pipebicg_update(v[0], v[1], v[2], alias ? v[2] : v[6], v[4],
                                             alias ? v[4] : v[7], v[8], v[3], v[5], s[k]->S));
        }
        CU_ASSERT(same_all(what, &g, &c, tol));
    }
    /* GMRES: mdot, maxpy with norm, scale with and without a dot (more than 16 vectors) */
    for (int k = 0; k < 2; k++) {
        hk_vec **v = s[k]->v;
        const hk_backend *be = s[k]->be;
        hk_vec *X[18];
        for (int j = 0; j < 18; j++)
            X[j] = v[j % 8];
        HK_ASSERT_OK(be->vec_mdot_s(18, X, v[8], s[k]->S + 40));
        HK_ASSERT_OK(be->vec_maxpy_s_nrm(v[8], 18, s[k]->S + 40, X, s[k]->S + 20));
        HK_ASSERT_OK(be->vec_scale_s_dot(v[8], s[k]->S + 20, v[1], s[k]->S + 21));
        HK_ASSERT_OK(be->vec_scale_s_dot(v[8], s[k]->S + 20, NULL, s[k]->S + 22));
    }
    CU_ASSERT(same_all(what, &g, &c, 1e-10));
    side_free(&g);
    side_free(&c);
}

static void test_fused_ops(void)
{
    hk_bcsr K3, K1, Kb;
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 3, &K3));
    HK_ASSERT_OK(hk_gen_poisson2d(9, &K1));
    HK_ASSERT_OK(hk_gen_elasticity3d(23, 23, 23, &Kb)); /* 41k DOFs, many blocks */
    for (int f = 0; f < HK_FMT_COUNT; f++) {
        fused_case(&K3, (hk_format)f, "");
        fused_case(&K1, (hk_format)f, "format.tpr=4 format.slice=5");
    }
    fused_case(&Kb, HK_FMT_SBELL, "format.tpr=32");
    fused_case(&Kb, HK_FMT_CSR, "format.tpr=32");
    fused_case(&Kb, HK_FMT_SBELL, "");
    hk_bcsr_free(&K3);
    hk_bcsr_free(&K1);
    hk_bcsr_free(&Kb);
}

/* ---- determinism, graphs, baselines --------------------------------------------------------- */

static void test_determinism(void)
{
    const hk_backend *gpu = be_gpu();
    const int64_t n = 1 << 20;
    double *h = rnd(n, 77), *h2 = rnd(n, 78);
    hk_vec *x = mk(gpu, n, HK_FP64, h), *y = mk(gpu, n, HK_FP64, h2);
    double d1, d2;
    HK_ASSERT_OK(gpu->vec_dot(x, y, &d1));
    HK_ASSERT_OK(gpu->vec_dot(x, y, &d2));
    CU_ASSERT(memcmp(&d1, &d2, sizeof d1) == 0);
    hk_vec_destroy(x), hk_vec_destroy(y);
    free(h), free(h2);
    /* the fused SpMV + dots twice from the same state */
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(15, 15, 15, &K));
    side a, b;
    side_make(&a, gpu, &K, HK_FMT_SBELL, "");
    side_make(&b, gpu, &K, HK_FMT_SBELL, "");
    for (int k = 0; k < 3; k++) {
        HK_ASSERT_OK(gpu->spmv_dot2(a.A, a.v[2], a.v[3], a.v[9], a.v[1], a.S));
        HK_ASSERT_OK(gpu->pipecg_update(a.v[0], a.v[1], a.v[2], a.v[3], a.v[9], a.S));
        HK_ASSERT_OK(gpu->spmv_dot2(b.A, b.v[2], b.v[3], b.v[9], b.v[1], b.S));
        HK_ASSERT_OK(gpu->pipecg_update(b.v[0], b.v[1], b.v[2], b.v[3], b.v[9], b.S));
    }
    double sa[HK_S_MAX], sb[HK_S_MAX];
    gpu->scal_get(a.S, 0, HK_S_MAX, sa);
    gpu->scal_get(b.S, 0, HK_S_MAX, sb);
    CU_ASSERT(memcmp(sa, sb, sizeof sa) == 0);
    double *va = get(a.v[0]), *vb = get(b.v[0]);
    CU_ASSERT(memcmp(va, vb, (size_t)a.v[0]->n * 8) == 0);
    free(va), free(vb);
    side_free(&a);
    side_free(&b);
    hk_bcsr_free(&K);
}

/* Three recorded pipelined-CG iterations replayed twice equal six direct ones, bit for bit. */
static void test_graph_replay(void)
{
    const hk_backend *gpu = be_gpu();
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu->graph_begin);
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(8, 8, 8, &K));
    side a, b;
    side_make(&a, gpu, &K, HK_FMT_SBELL, "");
    side_make(&b, gpu, &K, HK_FMT_SBELL, "");
    for (int k = 0; k < 6; k++) {
        HK_ASSERT_OK(gpu->spmv_dot2(a.A, a.v[2], a.v[3], NULL, a.v[1], a.S));
        HK_ASSERT_OK(gpu->pipecg_update(a.v[0], a.v[1], a.v[2], a.v[3], NULL, a.S));
    }
    void *g = NULL;
    HK_ASSERT_OK(gpu->graph_begin());
    for (int k = 0; k < 3; k++) {
        HK_ASSERT_OK(gpu->spmv_dot2(b.A, b.v[2], b.v[3], NULL, b.v[1], b.S));
        HK_ASSERT_OK(gpu->pipecg_update(b.v[0], b.v[1], b.v[2], b.v[3], NULL, b.S));
    }
    HK_ASSERT_OK(gpu->graph_end(&g));
    HK_ASSERT_OK(gpu->graph_launch(g));
    HK_ASSERT_OK(gpu->graph_launch(g));
    double sa[HK_S_MAX], sb[HK_S_MAX];
    HK_ASSERT_OK(gpu->scal_get(a.S, 0, HK_S_MAX, sa));
    HK_ASSERT_OK(gpu->scal_get(b.S, 0, HK_S_MAX, sb));
    CU_ASSERT(memcmp(sa, sb, sizeof sa) == 0);
    gpu->graph_free(g);
    /* a waiting op inside a recording is an error, not a hang */
    double d;
    HK_ASSERT_OK(gpu->graph_begin());
    CU_ASSERT_NOT_EQUAL(gpu->vec_dot(a.v[0], a.v[1], &d), 0);
    g = NULL;
    gpu->graph_end(&g);
    if (g) gpu->graph_free(g);
    hk_error_clear();
    side_free(&a);
    side_free(&b);
    hk_bcsr_free(&K);
}

#ifdef HOOKE_HAVE_CUDA
/* The cuSPARSE+cuBLAS baseline CG against a host CG with the same start (b = 1, x0 = 0). */
static void test_baseline_cg(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(4, 4, 4, &K));
    const int64_t n = K.nbrows * K.bs;
    const int its = 15;
    double *x = calloc(n, 8), *r = malloc(n * 8), *p = malloc(n * 8), *q = malloc(n * 8);
    for (int64_t i = 0; i < n; i++)
        r[i] = p[i] = 1;
    double rr = n;
    for (int it = 0; it < its; it++) {
        hk_bcsr_spmv(&K, p, q);
        double pq = 0, rrn = 0;
        for (int64_t i = 0; i < n; i++)
            pq += p[i] * q[i];
        const double alpha = rr / pq;
        for (int64_t i = 0; i < n; i++)
            x[i] += alpha * p[i], r[i] -= alpha * q[i];
        for (int64_t i = 0; i < n; i++)
            rrn += r[i] * r[i];
        for (int64_t i = 0; i < n; i++)
            p[i] = r[i] + rrn / rr * p[i];
        rr = rrn;
    }
    hk_cuda_cg_timing t;
    HK_ASSERT_OK(hk_cuda_baseline_cg(&K, its, &t));
    CU_ASSERT(same_val("baseline CG ||r||", t.rnorm, sqrt(rr), 1e-8));
    CU_ASSERT(t.ms_per_iter > 0 && t.spmv_ms > 0);
    double gbs = 0;
    HK_ASSERT_OK(hk_cuda_copy_bandwidth(64 << 20, 5, &gbs));
    CU_ASSERT(gbs > 10); /* GB/s: any working GPU */
    free(x), free(r), free(p), free(q);
    hk_bcsr_free(&K);
}
#else
static void test_baseline_cg(void) {}
#endif

/* ---- triangular solves (pc=ic0/ilu0/mlilu) ------------------------------------------------ */

/* A triangular factor F (1 x 1 blocks, diagonal included, columns sorted) with wide levels
 * (>= 2048 rows: one launch each), a long chain of one-row levels (walked by one block) and
 * random extra dependencies; lower or upper (then row i is built as row n-1-i mirrored).
 * Returns its number of levels, counted here as in solver/pc/trifactor.c. */
static int64_t make_tri(int64_t n, int upper, unsigned seed, hk_bcsr *F)
{
    F->bs = 1;
    F->nbrows = F->nbcols = n;
    F->rowptr = calloc(n + 1, 8);
    F->colind = malloc(n * 4 * 4);
    F->val = malloc(n * 4 * 8);
    int32_t *c4 = malloc(n * 4 * 4); /* up to 4 entries per row, row i at 4 i */
    double *v4 = malloc(n * 4 * 8);
    uint32_t s = seed;
#define RND() (s = s * 1664525u + 1013904223u, s >> 8)
    for (int64_t r = 0; r < n; r++) { /* r: position in solve order */
        const int64_t i = upper ? n - 1 - r : r;
        int32_t *c = c4 + 4 * i;
        double *v = v4 + 4 * i;
        int64_t deps[3];
        int nd = 0, m = 0;
        if (r >= 5000 && r < 10000) deps[nd++] = r - 5000;   /* second wide level */
        if (r >= 10000) deps[nd++] = r - 1;                  /* a chain */
        if (r > 0 && RND() % 3 == 0) deps[nd++] = RND() % r; /* random earlier row */
        for (int d = 0; d < nd; d++) {
            const int32_t j = (int32_t)(upper ? n - 1 - deps[d] : deps[d]);
            const double x = ((double)(RND() % 1000) / 1000.0 - 0.5) * 0.5;
            int dup = 0;
            for (int e = 0; e < m; e++)
                dup |= c[e] == j;
            if (dup) continue;
            c[m] = j;
            v[m++] = x;
        }
        c[m] = (int32_t)i;
        v[m++] = 1.0 + (double)(RND() % 100) / 100.0;
        for (int a = 1; a < m; a++) /* sort the row by column */
            for (int b = a; b > 0 && c[b - 1] > c[b]; b--) {
                const int32_t tc = c[b];
                const double tv = v[b];
                c[b] = c[b - 1], v[b] = v[b - 1];
                c[b - 1] = tc, v[b - 1] = tv;
            }
        F->rowptr[i + 1] = m; /* counts first */
    }
#undef RND
    for (int64_t i = 0; i < n; i++) {
        const int64_t len = F->rowptr[i + 1];
        F->rowptr[i + 1] += F->rowptr[i];
        memcpy(F->colind + F->rowptr[i], c4 + 4 * i, len * 4);
        memcpy(F->val + F->rowptr[i], v4 + 4 * i, len * 8);
    }
    free(c4), free(v4);
    int64_t *level = calloc(n, 8), nl = 0;
    for (int64_t r = 0; r < n; r++) {
        const int64_t i = upper ? n - 1 - r : r;
        int64_t l = 0;
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++)
            if (F->colind[k] != i && level[F->colind[k]] + 1 > l) l = level[F->colind[k]] + 1;
        level[i] = l;
        if (l + 1 > nl) nl = l + 1;
    }
    free(level);
    return nl;
}

static void test_tri_solve(void)
{
    const hk_backend *gpu = be_gpu(), *cpu = be_cpu();
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu->tri_setup);
    const int64_t n = 12000;
    for (int upper = 0; upper < 2; upper++)
        for (int p = 0; p < 2; p++) {
            hk_bcsr F;
            const int64_t nl = make_tri(n, upper, 17 + upper, &F);
            CU_ASSERT(nl > 2000); /* the chain is there */
            hk_bmat Fg = {0}, Fc = {0};
            HK_ASSERT_OK(hk_bmat_upload(gpu, &F, &Fg));
            HK_ASSERT_OK(hk_bmat_upload(cpu, &F, &Fc));
            void *hg = NULL, *hc = NULL;
            int64_t lg = -1, lc = -1;
            HK_ASSERT_OK(gpu->tri_setup(&Fg, upper, 0, HK_TRI_SYNCFREE, (hk_precision)p, &hg, &lg));
            HK_ASSERT_OK(cpu->tri_setup(&Fc, upper, 0, HK_TRI_SYNCFREE, (hk_precision)p, &hc, &lc));
            CU_ASSERT_EQUAL(lg, nl);
            CU_ASSERT_EQUAL(lc, nl);
            hk_bmat_free(&Fg), hk_bmat_free(&Fc); /* the handles keep their own copies */
            double *hb = rnd(n, 5);
            hk_vec *gb = mk(gpu, n, (hk_precision)p, hb), *gx = mk(gpu, n, (hk_precision)p, NULL);
            hk_vec *cb = mk(cpu, n, (hk_precision)p, hb), *cx = mk(cpu, n, (hk_precision)p, NULL);
            gpu->vec_set(gx, NAN);
            HK_ASSERT_OK(gpu->tri_solve(hg, gb, gx));
            HK_ASSERT_OK(cpu->tri_solve(hc, cb, cx));
            /* same sums in the same order: equal up to contraction of multiply-adds */
            CU_ASSERT(
                same_vec(upper ? "upper tri_solve" : "lower tri_solve", gx, cx, p ? 1e-5 : 1e-12));
            CU_ASSERT_EQUAL(gpu->tri_solve(hg, gb, gb), HK_ERR_ARG);
            gpu->tri_destroy(hg);
            cpu->tri_destroy(hc);
            hk_vec_destroy(gb), hk_vec_destroy(gx), hk_vec_destroy(cb), hk_vec_destroy(cx);
            free(hb);
            hk_bcsr_free(&F);
        }
}

/* A matrix larger than the free device memory is refused before its arrays are allocated,
 * with both sizes and what to do (a fake block CSR claiming 2^40 blocks in one row; only its
 * row pointer exists on the device). */
static void test_too_large(void)
{
    const hk_backend *gpu = be_gpu();
    const int64_t rowptr[2] = {0, (int64_t)1 << 40};
    hk_bmat K;
    memset(&K, 0, sizeof K);
    K.be = gpu;
    K.br = K.bc = 1;
    K.nbrows = K.nbcols = 1;
    K.nnzb = rowptr[1];
    HK_ASSERT_OK(gpu->alloc((void **)&K.rowptr, sizeof rowptr));
    HK_ASSERT_OK(gpu->copy_to(K.rowptr, rowptr, sizeof rowptr));
    hk_mat *A = NULL;
    CU_ASSERT_EQUAL(hk_mat_create_bmat(&K, HK_FMT_CSR, HK_FP64, NULL, &A), HK_ERR_MEMORY);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "GB on the GPU but only"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "--backend cpu"));
    CU_ASSERT_PTR_NULL(A);
    gpu->dealloc(K.rowptr);
}

/* Describe names the device, its compute capability and driver. */
static void test_describe(void)
{
    const hk_backend *gpu = be_gpu();
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    hk_backend_describe(gpu, f);
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "compute capability"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "driver"));
}

HK_DEVICE_SUITE(cuda,
                {"SpMV of every format, precision and thread count vs host", test_spmv_formats},
                {"SpMV on a 24k-DOF hex8 matrix, auto and 32 threads per row", test_spmv_fem_sizes},
                {"SpMV on slices of very different widths: more lanes for the wide ones",
                 test_spmv_wide_slices},
                {"vector ops, conversions, mdot/maxpy, bdiag vs cpu", test_vec_ops},
                {"argument errors, scalars, memory info", test_vec_errors},
                {"fused pipelined CG/BiCGStab/GMRES ops vs cpu", test_fused_ops},
                {"reductions repeat bit for bit", test_determinism},
                {"CUDA graph replay equals direct ops", test_graph_replay},
                {"cuSPARSE+cuBLAS baseline CG and copy bandwidth", test_baseline_cg},
                {"level-scheduled triangular solves vs cpu (wide levels, long chains)",
                 test_tri_solve},
                {"a matrix larger than the free memory is refused with both sizes", test_too_large},
                {"describe names the device", test_describe})

/* ---- host part (runs everywhere) --------------------------------------------------------- */

/* hooke bench cg end to end on the CPU backend: rows for cg and pipecg, valid JSON fields. */
static void test_bench_cg_cpu(void)
{
    char json[512];
    snprintf(json, sizeof json, "%s/bench-cg.json", hk_test_tmpdir());
    char *argv[] = {"cg", "--backend", "cpu", "--nodes", "4,5", "--iters", "6", "--json", json};
    fflush(stdout);
    CU_ASSERT_EQUAL(hk_bench_cg(9, argv), 0);
    FILE *f = fopen(json, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char buf[8192];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    buf[len] = 0;
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\"method\": \"pipecg\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\"dofs\": 375"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "ms_per_iter"));
    char *bad[] = {"cg", "--nodes", "x"};
    CU_ASSERT_EQUAL(hk_bench_cg(3, bad), 2);
}

HK_SUITE(cuda_host, {"hooke bench cg on the cpu backend, JSON", test_bench_cg_cpu})
