/* libFuzzer target: the Matrix Market reader (solver/mmio.c), matrices, vectors and arrays,
 * and the grouping of a matrix read into blocks. */
#include "fuzz_util.h"
#include "hooke/solver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".mtx");
    if (!path) return 0;
    hk_bcsr A, B;
    if (!hk_mm_read_matrix(path, &A)) {
        for (int bs = 2; bs <= 6; bs++)
            if (!hk_bcsr_to_blocks(&A, bs, &B)) hk_bcsr_free(&B);
        hk_bcsr_free(&A);
    }
    int64_t n = 0;
    int cols = 0;
    double *x = NULL;
    if (!hk_mm_read_vector(path, &n, &x)) free(x);
    x = NULL;
    if (!hk_mm_read_array(path, &n, &cols, &x)) free(x);
    hk_error_clear();
    return 0;
}
