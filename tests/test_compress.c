/* bmat_compress, the regrouping of a scalar CSR into bs x bs blocks (FSAI/SAI factors into
 * the operator's block formats): compress(expand(A)) = A block for block on random block
 * matrices with empty rows, bs 1..6; a scalar pattern whose entries leave holes in a block
 * gets zeros there; CUDA equals the CPU. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

static int same_host(const hk_bmat *X, const hk_bmat *Y)
{
    hk_bmat A = {0}, B = {0};
    int same = !hk_bmat_to_host(X, &A) && !hk_bmat_to_host(Y, &B) && A.br == B.br &&
               A.bc == B.bc && A.nbrows == B.nbrows && A.nbcols == B.nbcols && A.nnzb == B.nnzb;
    if (same)
        same = !memcmp(A.rowptr, B.rowptr, (size_t)(A.nbrows + 1) * sizeof *A.rowptr) &&
               !memcmp(A.colind, B.colind, (size_t)A.nnzb * sizeof *A.colind) &&
               !memcmp(A.val, B.val, (size_t)A.nnzb * A.br * A.bc * sizeof *A.val);
    hk_bmat_free(&A);
    hk_bmat_free(&B);
    return same;
}

static void round_trip(const hk_backend *be)
{
    for (int bs = 1; bs <= 6; bs++) {
        hk_bcsr K = {0};
        hk_bmat A = {0}, S = {0}, B = {0};
        HK_ASSERT_OK(hk_gen_random(37, 29, bs, 2.5, 1, 100u + (unsigned)bs, &K));
        HK_ASSERT_OK(hk_bmat_upload(be, &K, &A));
        HK_ASSERT_OK(be->bmat_expand(&A, &S));
        HK_ASSERT_OK(be->bmat_compress(&S, bs, &B));
        CU_ASSERT(same_host(&A, &B));
        hk_bmat_free(&A);
        hk_bmat_free(&S);
        hk_bmat_free(&B);
        hk_bcsr_free(&K);
    }
}

static void test_round_trip_cpu(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    round_trip(be);
}

/* Scalar 4 x 4 with entries (0,1), (1,3), (3,0) and bs 2: blocks (0,0) [0 a; 0 0], (0,1)
 * [0 0; 0 b], (1,0) [0 0; c 0]; errors for a size that is not a multiple of bs. */
static void test_holes_and_errors(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    hk_bmat S = {0}, B = {0};
    HK_ASSERT_OK(hk_bmat_alloc(be, 1, 1, 4, 4, 3, &S));
    const int64_t rp[5] = {0, 1, 2, 2, 3};
    const int32_t ci[3] = {1, 3, 0};
    const double v[3] = {1.5, 2.5, 3.5};
    memcpy(S.rowptr, rp, sizeof rp);
    memcpy(S.colind, ci, sizeof ci);
    memcpy(S.val, v, sizeof v);
    HK_ASSERT_OK(be->bmat_compress(&S, 2, &B));
    CU_ASSERT_EQUAL(B.nnzb, 3);
    CU_ASSERT(B.rowptr[1] == 2 && B.rowptr[2] == 3);
    CU_ASSERT(B.colind[0] == 0 && B.colind[1] == 1 && B.colind[2] == 0);
    const double want[12] = {0, 1.5, 0, 0, 0, 0, 0, 2.5, 0, 0, 3.5, 0};
    CU_ASSERT(!memcmp(B.val, want, sizeof want));
    hk_bmat_free(&B);
    CU_ASSERT_EQUAL(be->bmat_compress(&S, 3, &B), HK_ERR_ARG);
    hk_error_clear();
    hk_bmat_free(&S);
}

static void test_round_trip_cuda(void)
{
    const hk_backend *be = NULL;
    HK_ASSERT_OK(hk_backend_get("cuda", &be));
    round_trip(be);
}

HK_SUITE(compress, {"compress(expand(A)) = A, bs 1..6", test_round_trip_cpu},
         {"holes become zeros; sizes must be multiples of bs", test_holes_and_errors})
HK_DEVICE_SUITE(cuda_compress, {"cuda: compress(expand(A)) = A, bs 1..6", test_round_trip_cuda})
