/* Smoke tests of the core: errors, options, backend registry. */
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

static void test_options_parse(void)
{
    hk_options *o;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "method=cg  tol=1e-8 maxit=50 pc.poly.kind=ls"));
    int maxit = 0;
    double tol = 0;
    const char *m = NULL;
    static const char *const kinds[] = {"neumann", "ls", "chebyshev", NULL};
    int kind = -1;
    HK_ASSERT_OK(hk_options_get_int(o, "maxit", &maxit));
    HK_ASSERT_OK(hk_options_get_double(o, "tol", &tol));
    HK_ASSERT_OK(hk_options_get_string(o, "method", &m));
    HK_ASSERT_OK(hk_options_get_choice(o, "pc.poly.kind", kinds, &kind));
    CU_ASSERT_EQUAL(maxit, 50);
    CU_ASSERT_DOUBLE_EQUAL(tol, 1e-8, 1e-20);
    CU_ASSERT_STRING_EQUAL(m, "cg");
    CU_ASSERT_EQUAL(kind, 1);
    CU_ASSERT_EQUAL(hk_options_check_used(o, "x"), 0);
    hk_options_destroy(o);
}

static void test_options_errors(void)
{
    hk_options *o;
    HK_ASSERT_OK(hk_options_create(&o));
    CU_ASSERT_EQUAL(hk_options_parse(o, "method"), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "key=value"));
    HK_ASSERT_OK(hk_options_parse(o, "maxit=ten metod=cg"));
    int maxit = 1;
    CU_ASSERT_EQUAL(hk_options_get_int(o, "maxit", &maxit), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "maxit=ten"));
    CU_ASSERT_EQUAL(hk_options_check_used(o, "method, pc"), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "unknown option 'metod'; did you mean "
                                                      "'method'?"));
    hk_options_destroy(o);
    /* far from every valid key: the list, each key once */
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "zzz=1"));
    CU_ASSERT_EQUAL(hk_options_check_used(o, "method, pc, pc.tri, pc.tri"), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "valid options: method, pc, pc.tri ("));
    hk_options_destroy(o);
}

/* Regression (fuzzing): tol=1e-400 was "not a finite number"; it is out of double range. */
static void test_options_range(void)
{
    hk_options *o;
    double tol = 0;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "tol=1e-400 atol=1e999 inner.tol=nan"));
    CU_ASSERT_EQUAL(hk_options_get_double(o, "tol", &tol), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "tol=1e-400 is out of the range of double"));
    CU_ASSERT_EQUAL(hk_options_get_double(o, "atol", &tol), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "atol=1e999 is out of the range"));
    CU_ASSERT_EQUAL(hk_options_get_double(o, "inner.tol", &tol), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "inner.tol=nan is not a finite number"));
    CU_ASSERT_EQUAL(tol, 0);
    hk_options_destroy(o);
}

static void test_backend_registry(void)
{
    const hk_backend *be;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    CU_ASSERT_STRING_EQUAL(hk_backend_name(be), "cpu");
    HK_ASSERT_OK(hk_backend_get("auto", &be));
    CU_ASSERT_EQUAL(hk_backend_get("gpu", &be), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "auto, cpu, cuda"));
    if (!hk_test_have_cuda()) {
        int err = hk_backend_get("cuda", &be);
        CU_ASSERT(err == HK_ERR_NOT_BUILT || err == HK_ERR_DEVICE);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "cuda"));
    }
}

static void test_vec_ops(void)
{
    for (const hk_backend *const *b = hk_test_backends(); *b; b++) {
        for (int p = 0; p < 2; p++) {
            hk_vec *x, *y;
            enum { N = 1000 };
            double hx[N], hy[N];
            for (int i = 0; i < N; i++) hx[i] = i % 7 - 3, hy[i] = 1.0 / (1 + i % 5);
            HK_ASSERT_OK(hk_vec_create(*b, N, (hk_precision)p, &x));
            HK_ASSERT_OK(hk_vec_create(*b, N, (hk_precision)p, &y));
            HK_ASSERT_OK(hk_vec_upload(x, hx));
            HK_ASSERT_OK(hk_vec_upload(y, hy));
            const hk_backend_ops *be = *b;
            double d, ref = 0;
            for (int i = 0; i < N; i++) ref += (double)(float)hx[i] * (p ? (double)(float)hy[i] : hy[i]);
            HK_ASSERT_OK(be->vec_dot(x, y, &d));
            CU_ASSERT_DOUBLE_EQUAL(d, ref, 1e-10 * fabs(ref) + 1e-12);
            HK_ASSERT_OK(be->vec_axpby(y, 2.0, x, -1.0));
            double out[N];
            HK_ASSERT_OK(hk_vec_download(y, out));
            CU_ASSERT_DOUBLE_EQUAL(out[17], 2 * hx[17] - hy[17], p ? 1e-6 : 1e-15);
            hk_vec_destroy(x);
            hk_vec_destroy(y);
        }
    }
}

HK_SUITE(core, {"options parse and typed getters", test_options_parse},
         {"options report malformed and unknown keys", test_options_errors},
         {"options out of double range say so", test_options_range},
         {"backend registry by name", test_backend_registry},
         {"vector ops on every backend and precision", test_vec_ops})
