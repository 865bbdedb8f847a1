/* Blocks of 4 and 6 (hooke solve --block-size 1..6): a 3D elasticity matrix regrouped into
 * 6x6 blocks (two nodes a block) or 4x4 blocks solves with every preconditioner and format;
 * on a GPU, the CUDA backend converges as the CPU does. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

/* elasticity3d on a grid of 3 x 3 x 4 hexes (80 nodes, 240 dofs), regrouped into bs blocks */
static void regrouped(int bs, hk_bcsr *B)
{
    hk_bcsr K, S;
    char path[600];
    HK_ASSERT_OK(hk_gen_elasticity3d(3, 3, 4, &K));
    snprintf(path, sizeof path, "%s/blocks%d.mtx", hk_test_tmpdir(), bs);
    HK_ASSERT_OK(hk_mm_write_matrix(path, &K));
    HK_ASSERT_OK(hk_mm_read_matrix(path, &S));
    HK_ASSERT_OK(hk_bcsr_to_blocks(&S, bs, B));
    CU_ASSERT_EQUAL(B->bs, bs);
    hk_bcsr_free(&K);
    hk_bcsr_free(&S);
}

static const char *const configs[] = {"pc=jacobi",
                                      "pc=bjacobi format=bsr",
                                      "pc=poly format=sell",
                                      "pc=fsai",
                                      "pc=ic0",
                                      "pc=amg",
                                      "pc=amg precision=mixed format=sbell",
                                      "method=gmres pc=ilu0",
                                      "method=pipecg pc=poly"};

static void solve_all(const char *backend)
{
    for (int bs = 4; bs <= 6; bs += 2) {
        hk_bcsr B;
        regrouped(bs, &B);
        for (size_t k = 0; k < sizeof configs / sizeof *configs; k++) {
            const int it = hk_test_solve_iterations(&B, backend, configs[k], NULL);
            if (it < 0)
                fprintf(stderr, "\n  bs %d, %s on %s did not converge\n", bs, configs[k], backend);
            CU_ASSERT(it > 0);
        }
        hk_bcsr_free(&B);
    }
}

static void test_cpu(void)
{
    solve_all("cpu");
}

/* the CUDA backend takes the same blocks: the same iterations to within a few. ic0 and ilu0
 * are compared in one ordering: their defaults differ (colour on a GPU, natural on the CPU),
 * and colouring alone costs 13 -> 19 iterations here. */
static void test_cuda(void)
{
    for (int bs = 4; bs <= 6; bs += 2) {
        hk_bcsr B;
        regrouped(bs, &B);
        for (size_t k = 0; k < sizeof configs / sizeof *configs; k++) {
            char opts[128];
            const int factor = strstr(configs[k], "ic0") || strstr(configs[k], "ilu0");
            snprintf(opts, sizeof opts, "%s%s", configs[k], factor ? " pc.ordering=colour" : "");
            const int c = hk_test_solve_iterations(&B, "cpu", opts, NULL);
            const int g = hk_test_solve_iterations(&B, "cuda", opts, NULL);
            const int ok = c > 0 && g > 0 && abs(c - g) <= 2 + c / 10;
            if (!ok)
                fprintf(stderr, "\n  bs %d, %s: cpu %d, cuda %d iterations\n", bs, opts, c, g);
            CU_ASSERT(ok);
        }
        hk_bcsr_free(&B);
    }
}

HK_SUITE(blocks6, {"4x4 and 6x6 blocks: every pc and format converges (cpu)", test_cpu})
HK_DEVICE_SUITE(cuda_blocks6, {"4x4 and 6x6 blocks: cuda converges as cpu does", test_cuda})
