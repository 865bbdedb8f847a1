/* The Hooke test runner: every suite registered by HK_SUITE / HK_DEVICE_SUITE.
 * Usage: hooke_tests [suite-name ...]   (no names: all suites). */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define HK_MAX_SUITES 128

static struct {
    const char *name;
    int device;
    const hk_test_case *cases;
    int n;
} suites[HK_MAX_SUITES];
static int nsuites;

void hk_test_register_suite(const char *name, int device, const hk_test_case *cases, int n)
{
    if (nsuites < HK_MAX_SUITES) {
        suites[nsuites].name = name;
        suites[nsuites].device = device;
        suites[nsuites].cases = cases;
        suites[nsuites].n = n;
        nsuites++;
    }
}

static const hk_backend *usable[4];
static int have_cuda = -1;

static void find_backends(void)
{
    if (have_cuda >= 0) return;
    int k = 0;
    const hk_backend *be;
    if (hk_backend_get("cpu", &be) == 0) usable[k++] = be;
    have_cuda = hk_backend_get("cuda", &be) == 0;
    if (have_cuda) usable[k++] = be;
    usable[k] = NULL;
    hk_error_clear();
}

const hk_backend *const *hk_test_backends(void)
{
    find_backends();
    return usable;
}

int hk_test_have_cuda(void)
{
    find_backends();
    return have_cuda;
}

double hk_test_reldiff(const double *a, const double *b, long n)
{
    double dmax = 0, bmax = 1e-300;
    for (long i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= dmax)) dmax = d; /* NaN propagates */
        if (fabs(b[i]) > bmax) bmax = fabs(b[i]);
    }
    return dmax / bmax;
}

double hk_test_relres(const hk_bcsr *K, const double *b, const double *x)
{
    const int64_t n = K->nbrows * K->bs;
    double *Ax = malloc((size_t)n * sizeof *Ax), rr = 0, bb = 0;
    hk_bcsr_spmv(K, x, Ax);
    for (int64_t i = 0; i < n; i++) {
        rr += (b[i] - Ax[i]) * (b[i] - Ax[i]);
        bb += b[i] * b[i];
    }
    free(Ax);
    return sqrt(rr / bb);
}

const char *hk_test_path(const char *rel)
{
    static char buf[8][1024];
    static int slot;
    slot = (slot + 1) % 8;
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", HOOKE_SOURCE_DIR, rel);
    return buf[slot];
}

const char *hk_test_tmpdir(void)
{
    static char dir[64];
    if (!dir[0]) {
        strcpy(dir, "/tmp/hooke-test-XXXXXX");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return dir;
}

static int selected(const char *name, int argc, char **argv)
{
    if (argc <= 1) return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    find_backends();
    int skipped = 0;
    for (int s = 0; s < nsuites; s++) {
        if (!selected(suites[s].name, argc, argv)) continue;
        if (suites[s].device && !have_cuda) {
            printf("suite %s: skipped (no CUDA device%s)\n", suites[s].name,
#ifdef HOOKE_HAVE_CUDA
                   ""
#else
                   "; built without CUDA"
#endif
            );
            skipped++;
            continue;
        }
        CU_pSuite suite = CU_add_suite(suites[s].name, NULL, NULL);
        for (int i = 0; i < suites[s].n; i++)
            CU_add_test(suite, suites[s].cases[i].name, suites[s].cases[i].fn);
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    unsigned nfail_tests = CU_get_number_of_tests_failed();
    unsigned nrun = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    printf("\nhooke_tests: %u tests run, %u failed, %d device suites skipped\n", nrun, nfail_tests,
           skipped);
    return failed ? 1 : 0;
}
