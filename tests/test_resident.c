/* hk_solver_create_resident: a matrix already in a backend's memory, taken over by the solver
 * (the API a device assembly hands its K through). On the cpu backend, whose memory is the
 * host's, the test fills the arrays directly; the same solve from hk_solver_create must give
 * the same digits. The cuda side runs in the device suite fem_cuda (test_fem_device.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

/* A copy of K in the cpu backend's memory (the host's: filled directly). */
static void resident_copy(const hk_backend *be, const hk_bcsr *K, hk_resident_bcsr *A)
{
    const int64_t nnzb = K->rowptr[K->nbrows];
    CU_ASSERT_STRING_EQUAL_FATAL(hk_backend_name(be), "cpu");
    HK_ASSERT_OK(hk_resident_bcsr_alloc(be, K->bs, K->nbrows, K->nbcols, nnzb, A));
    memcpy(A->rowptr, K->rowptr, (size_t)(K->nbrows + 1) * sizeof *K->rowptr);
    memcpy(A->colind, K->colind, (size_t)nnzb * sizeof *K->colind);
    memcpy(A->val, K->val, (size_t)nnzb * K->bs * K->bs * sizeof *K->val);
}

/* s1 and s2 solve one random b (seed) of n entries: both converge, in the same iterations, to
 * the same bytes. */
static void same_solutions(hk_solver *s1, hk_solver *s2, int64_t n, unsigned seed)
{
    double *b = hk_test_rand_vec(n, seed), *x1 = calloc((size_t)n, sizeof *x1),
           *x2 = calloc((size_t)n, sizeof *x2);
    hk_result r1, r2;
    HK_ASSERT_OK(hk_solver_solve(s1, b, x1, &r1));
    HK_ASSERT_OK(hk_solver_solve(s2, b, x2, &r2));
    CU_ASSERT(hk_reason_converged(r1.reason) && hk_reason_converged(r2.reason));
    CU_ASSERT_EQUAL(r1.iterations, r2.iterations);
    CU_ASSERT(memcmp(x1, x2, (size_t)n * sizeof *x1) == 0);
    free(b);
    free(x1);
    free(x2);
}

/* The same solve from a host matrix and from a resident one: identical x. */
static void solve_both(const char *opts, const hk_bcsr *K, const hk_nearnull *nn)
{
    const hk_backend *be;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    const int64_t n = K->nbrows * K->bs;
    double *b = hk_test_rand_vec(n, 7), *x1 = calloc((size_t)n, sizeof *x1),
           *x2 = calloc((size_t)n, sizeof *x2);
    /* backend=cpu for both: with auto the host matrix's solver takes a GPU where there is
     * one, while the resident matrix's stays on the backend that holds it (the cpu here), and
     * the two would compare cuda's digits with the cpu's */
    hk_options *o1, *o2;
    HK_ASSERT_OK(hk_options_create(&o1));
    HK_ASSERT_OK(hk_options_parse(o1, "backend=cpu"));
    HK_ASSERT_OK(hk_options_parse(o1, opts));
    HK_ASSERT_OK(hk_options_create(&o2));
    HK_ASSERT_OK(hk_options_parse(o2, "backend=cpu"));
    HK_ASSERT_OK(hk_options_parse(o2, opts));
    hk_solver *s1, *s2;
    hk_result r1, r2;
    HK_ASSERT_OK(hk_solver_create_nearnull(K, nn, o1, &s1));
    HK_ASSERT_OK(hk_solver_solve(s1, b, x1, &r1));
    hk_resident_bcsr A;
    resident_copy(be, K, &A);
    HK_ASSERT_OK(hk_solver_create_resident(&A, nn, o2, &s2));
    /* taken over: the pointers are gone, the sizes stay */
    CU_ASSERT(A.rowptr == NULL && A.colind == NULL && A.val == NULL);
    CU_ASSERT(A.nbrows == K->nbrows && A.bs == K->bs && A.nnzb == K->rowptr[K->nbrows]);
    HK_ASSERT_OK(hk_solver_solve(s2, b, x2, &r2));
    CU_ASSERT(hk_reason_converged(r1.reason));
    CU_ASSERT_EQUAL(r1.iterations, r2.iterations);
    CU_ASSERT(memcmp(x1, x2, (size_t)n * sizeof *x1) == 0);
    hk_solver_destroy(s1);
    hk_solver_destroy(s2);
    hk_options_destroy(o1);
    hk_options_destroy(o2);
    free(b);
    free(x1);
    free(x2);
}

static void test_same_solution(void)
{
    hk_bcsr K;
    double *coords = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 5, 4, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(6, 5, 4, &coords));
    hk_nearnull nn = {.dim = 3, .coords = coords};
    solve_both("method=cg pc=jacobi tol=1e-10", &K, NULL);
    solve_both("method=pipecg pc=poly tol=1e-10", &K, NULL);
    solve_both("method=cg pc=amg tol=1e-10", &K, &nn);
#ifdef HOOKE_HAVE_CHOLMOD
    solve_both("method=cholesky", &K, NULL);
#endif
    free(coords);
    hk_bcsr_free(&K);
}

/* A download gives the matrix back; a second download of a taken-over matrix is an error. */
static void test_download(void)
{
    const hk_backend *be;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    hk_bcsr K, B;
    HK_ASSERT_OK(hk_gen_elasticity2d(7, 5, &K));
    hk_resident_bcsr A;
    resident_copy(be, &K, &A);
    HK_ASSERT_OK(hk_resident_bcsr_download(&A, &B));
    const int64_t nnzb = K.rowptr[K.nbrows];
    CU_ASSERT(B.bs == K.bs && B.nbrows == K.nbrows && B.nbcols == K.nbcols);
    CU_ASSERT(memcmp(B.rowptr, K.rowptr, (size_t)(K.nbrows + 1) * sizeof *K.rowptr) == 0);
    CU_ASSERT(memcmp(B.colind, K.colind, (size_t)nnzb * sizeof *K.colind) == 0);
    CU_ASSERT(memcmp(B.val, K.val, (size_t)nnzb * 4 * sizeof *K.val) == 0);
    hk_bcsr_free(&B);
    hk_resident_bcsr_free(&A);
    CU_ASSERT(A.be == NULL && A.rowptr == NULL);
    CU_ASSERT_NOT_EQUAL(hk_resident_bcsr_download(&A, &B), 0);
    hk_bcsr_free(&K);
}

/* Bad input: a non-finite entry named by row and column (read back from the backend), an
 * unknown option; the arrays are freed on failure too (the pointers gone). */
static void test_errors(void)
{
    const hk_backend *be;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity2d(4, 3, &K));
    hk_resident_bcsr A;
    resident_copy(be, &K, &A);
    const int64_t k = A.rowptr[3] + 1; /* block row 3, its second block */
    A.val[k * 4 + 2] = NAN;            /* block entry (1, 0) */
    const int32_t col = A.colind[k];
    hk_solver *s = NULL;
    CU_ASSERT_EQUAL(hk_solver_create_resident(&A, NULL, NULL, &s), HK_ERR_NUMERIC);
    char want[96];
    snprintf(want, sizeof want, "matrix entry at row %d, column %d is nan", 3 * 2 + 1 + 1,
             col * 2 + 0 + 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), want));
    CU_ASSERT(s == NULL && A.rowptr == NULL && A.val == NULL);

    resident_copy(be, &K, &A);
    hk_options *o;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "method=cg pc=jacobi tolerance=1e-8"));
    CU_ASSERT_EQUAL(hk_solver_create_resident(&A, NULL, o, &s), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "tolerance"));
    CU_ASSERT(s == NULL && A.rowptr == NULL);
    hk_options_destroy(o);

    resident_copy(be, &K, &A);
    A.nbcols = A.nbrows + 1;
    CU_ASSERT_EQUAL(hk_solver_create_resident(&A, NULL, NULL, &s), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "square"));
    CU_ASSERT(A.rowptr == NULL);
    hk_bcsr_free(&K);
}

/* New values for a solver made from a resident matrix: its pattern is read back for the
 * check once; the update solves as the host solver's update; another pattern is refused. */
static void test_update_values(void)
{
    const hk_backend *be;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    hk_bcsr K, K2, K3;
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 4, &K));
    HK_ASSERT_OK(hk_bcsr_copy(&K, &K2));
    for (int64_t k = 0; k < K2.rowptr[K2.nbrows] * 9; k++)
        K2.val[k] *= 1.5;
    HK_ASSERT_OK(hk_gen_elasticity3d(4, 5, 4, &K3)); /* the same size, another pattern */
    /* backend=cpu: the resident K is in the cpu's memory (see solve_both) */
    hk_options *o1, *o2;
    HK_ASSERT_OK(hk_options_create(&o1));
    HK_ASSERT_OK(hk_options_parse(o1, "backend=cpu method=cg pc=jacobi tol=1e-10"));
    HK_ASSERT_OK(hk_options_create(&o2));
    HK_ASSERT_OK(hk_options_parse(o2, "backend=cpu method=cg pc=jacobi tol=1e-10"));
    hk_solver *s1, *s2;
    hk_resident_bcsr A;
    resident_copy(be, &K, &A);
    HK_ASSERT_OK(hk_solver_create(&K, o1, &s1));
    HK_ASSERT_OK(hk_solver_create_resident(&A, NULL, o2, &s2));
    if (K3.nbrows == K.nbrows && K3.rowptr[K3.nbrows] == K.rowptr[K.nbrows]) {
        CU_ASSERT_EQUAL(hk_solver_update_values(s2, &K3), HK_ERR_ARG);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "pattern"));
    }
    hk_solver_destroy(s2);
    resident_copy(be, &K, &A);
    HK_ASSERT_OK(hk_solver_create_resident(&A, NULL, o2, &s2));
    HK_ASSERT_OK(hk_solver_update_values(s1, &K2));
    HK_ASSERT_OK(hk_solver_update_values(s2, &K2));
    same_solutions(s1, s2, K.nbrows * 3, 3);
    hk_solver_destroy(s1);
    hk_solver_destroy(s2);
    hk_options_destroy(o1);
    hk_options_destroy(o2);
    hk_bcsr_free(&K);
    hk_bcsr_free(&K2);
    hk_bcsr_free(&K3);
}

/* A copy of K in backend be's memory through the backend's upload. */
static void upload_copy(const hk_backend *be, const hk_bcsr *K, hk_resident_bcsr *A)
{
    hk_bmat B;
    HK_ASSERT_OK(hk_bmat_upload(be, K, &B));
    HK_ASSERT_OK(be->sync());
    *A = (hk_resident_bcsr){be, B.br, B.nbrows, B.nbcols, B.nnzb, B.rowptr, B.colind, B.val};
}

/* A (in its backend's memory, read back) holds K's pattern and values, byte for byte. */
static int resident_equals(const hk_resident_bcsr *A, const hk_bcsr *K)
{
    hk_bcsr B;
    if (hk_resident_bcsr_download(A, &B)) return 0;
    const int64_t nnzb = K->rowptr[K->nbrows];
    const int same = B.nbrows == K->nbrows && B.bs == K->bs && B.rowptr[B.nbrows] == nnzb &&
                     !memcmp(B.rowptr, K->rowptr, (size_t)(K->nbrows + 1) * sizeof *K->rowptr) &&
                     !memcmp(B.colind, K->colind, (size_t)nnzb * sizeof *K->colind) &&
                     !memcmp(B.val, K->val, (size_t)nnzb * K->bs * K->bs * sizeof *K->val);
    hk_bcsr_free(&B);
    return same;
}

/* K's values written into A's value array (the one an update handed back). */
static void refill(const hk_backend *be, hk_resident_bcsr *A, const hk_bcsr *K)
{
    HK_ASSERT_OK(be->copy_to(A->val, K->val,
                             (size_t)A->nnzb * A->bs * A->bs * sizeof *K->val));
    HK_ASSERT_OK(be->sync());
}

/* A's three pointers as they were (a refused update leaves A alone). */
static int same_arrays(const hk_resident_bcsr *A, const hk_resident_bcsr *was)
{
    return A->rowptr == was->rowptr && A->colind == was->colind && A->val == was->val &&
           A->nnzb == was->nnzb && A->nbrows == was->nbrows;
}

/* Options parsed from text (the test fails on a bad one). */
static hk_options *parsed_options(const char *text)
{
    hk_options *o = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, text));
    return o;
}

/* New values V refused by s (err, a sentence with `words`): the resident copy of V given is
 * left as it was, arrays and values, and freed here. */
static void refused_left_alone(const hk_backend *be, hk_solver *s, const hk_bcsr *V, int err,
                               const char *words)
{
    hk_resident_bcsr A;
    upload_copy(be, V, &A);
    const hk_resident_bcsr was = A;
    CU_ASSERT_EQUAL(hk_solver_update_values_resident(s, &A), err);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), words));
    CU_ASSERT(same_arrays(&A, &was) && resident_equals(&A, V));
    hk_resident_bcsr_free(&A);
}

/* New values already in the backend's memory (hk_solver_update_values_resident): the host
 * update's digits with pc=amg (its numeric re-set-up); another pattern or size refused by
 * name, A left as it was and the solver still solving; on success A's value array is the
 * solver's previous one (its old values), A's pattern arrays untouched, and A reused for the
 * next values gives the host update's digits again. */
static void update_resident_on(const char *backend)
{
    const hk_backend *be;
    HK_ASSERT_OK(hk_backend_get(backend, &be));
    hk_bcsr K, K2;
    double *coords = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 5, 4, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(6, 5, 4, &coords));
    hk_nearnull nn = {.dim = 3, .coords = coords};
    HK_ASSERT_OK(hk_bcsr_copy(&K, &K2));
    for (int64_t i = 0; i < K2.nbrows; i++) /* D K D, D > 0 per node: still SPD */
        for (int64_t p = K2.rowptr[i]; p < K2.rowptr[i + 1]; p++)
            for (int e = 0; e < 9; e++)
                K2.val[p * 9 + e] *= (1.0 + 0.2 * (double)(i % 3)) * (1.0 + 0.2 * (double)(K2.colind[p] % 3));
    hk_options *o1, *o2;
    HK_ASSERT_OK(hk_options_create(&o1));
    char opts[96];
    snprintf(opts, sizeof opts, "backend=%s method=cg pc=amg tol=1e-10", backend);
    HK_ASSERT_OK(hk_options_parse(o1, opts));
    HK_ASSERT_OK(hk_options_create(&o2));
    HK_ASSERT_OK(hk_options_parse(o2, opts));
    hk_solver *s1, *s2;
    hk_resident_bcsr A;
    HK_ASSERT_OK(hk_solver_create_nearnull(&K, &nn, o1, &s1));
    upload_copy(be, &K, &A);
    HK_ASSERT_OK(hk_solver_create_resident(&A, &nn, o2, &s2));

    /* another pattern: one column index moved; refused, A left as it was */
    { /* K2 with the last column index of block row 0 moved */
        hk_bcsr B;
        HK_ASSERT_OK(hk_bcsr_copy(&K2, &B));
        int32_t *c = &B.colind[B.rowptr[1] - 1];
        *c = *c == (int32_t)(B.nbcols - 1) ? *c - 1 : (int32_t)(B.nbcols - 1);
        refused_left_alone(be, s2, &B, HK_ERR_ARG, "column indices");
        hk_bcsr_free(&B);
    }
    /* other sizes */
    upload_copy(be, &K2, &A);
    A.nnzb--;
    hk_resident_bcsr was = A;
    CU_ASSERT_EQUAL(hk_solver_update_values_resident(s2, &A), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "only the values may change"));
    CU_ASSERT(same_arrays(&A, &was));
    A.nnzb++;
    CU_ASSERT(resident_equals(&A, &K2));
    same_solutions(s1, s2, K.nbrows * 3, 4); /* the refusals left the solver as it was */

    /* A (K2's values) in, the solver's previous array (K's values) back; the pattern arrays
     * stay A's */
    was = A;
    HK_ASSERT_OK(hk_solver_update_values(s1, &K2));
    HK_ASSERT_OK(hk_solver_update_values_resident(s2, &A));
    CU_ASSERT(A.val != NULL && A.val != was.val);
    CU_ASSERT(A.rowptr == was.rowptr && A.colind == was.colind && A.nnzb == was.nnzb);
    CU_ASSERT(resident_equals(&A, &K)); /* K's pattern (A's own) and K's values */
    same_solutions(s1, s2, K.nbrows * 3, 5);
    /* the handed-back array refilled with new values and A given again: the two arrays
     * alternate, the host update's digits */
    hk_bcsr K3;
    HK_ASSERT_OK(hk_bcsr_copy(&K2, &K3));
    for (int64_t k = 0; k < K3.rowptr[K3.nbrows] * 9; k++)
        K3.val[k] *= 0.75;
    refill(be, &A, &K3);
    HK_ASSERT_OK(hk_solver_update_values(s1, &K3));
    HK_ASSERT_OK(hk_solver_update_values_resident(s2, &A));
    CU_ASSERT(A.val == was.val && resident_equals(&A, &K2));
    same_solutions(s1, s2, K.nbrows * 3, 6);
    hk_resident_bcsr_free(&A);
    hk_bcsr_free(&K3);
    hk_solver_destroy(s1);
    hk_solver_destroy(s2);
    hk_options_destroy(o1);
    hk_options_destroy(o2);
    free(coords);
    hk_bcsr_free(&K);
    hk_bcsr_free(&K2);
}

static void test_update_resident(void)
{
    update_resident_on("cpu");
}

/* K with its values scaled per node (D K D, D > 0: still SPD), round r. */
static void scaled_copy(const hk_bcsr *K, int r, hk_bcsr *K2)
{
    HK_ASSERT_OK(hk_bcsr_copy(K, K2));
    const int bb = K->bs * K->bs;
    for (int64_t i = 0; i < K2->nbrows; i++)
        for (int64_t p = K2->rowptr[i]; p < K2->rowptr[i + 1]; p++)
            for (int e = 0; e < bb; e++)
                K2->val[p * bb + e] *= (1.0 + 0.1 * r * (double)(i % 3)) *
                                       (1.0 + 0.1 * r * (double)(K2->colind[p] % 3));
}

/* Round r's values (K scaled by scaled_copy) into *Kr and into the resident A: uploaded at the
 * first round, written into the array the last update handed back after that. */
static void round_values(const hk_backend *be, const hk_bcsr *K, int r, hk_bcsr *Kr,
                         hk_resident_bcsr *A)
{
    scaled_copy(K, r, Kr);
    if (r == 1)
        upload_copy(be, Kr, A);
    else
        refill(be, A, Kr);
}

/* The resident values are taken over, not copied: every holder of K's values (the operator's
 * formats, its fp32 copy, a preconditioner updated or made anew, the s-step method's matrix
 * powers) sees the new ones, update after update (the host update's bytes); a non-finite value
 * is named and leaves a solver that refuses to solve and is destroyed cleanly. */
static void update_resident_holders_on(const char *backend)
{
    static const char *const cases[] = {"method=cg pc=amg pc.amg.update=prolongator format=sbell",
                                        "method=cg pc=amg format=csr",
                                        "method=cg pc=jacobi format=bsr",
                                        "method=cg pc=bjacobi format=ell",
                                        "method=scg pc=jacobi",
                                        "method=defect pc=amg",
                                        NULL};
    const hk_backend *be;
    HK_ASSERT_OK(hk_backend_get(backend, &be));
    hk_bcsr K;
    double *coords = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 4, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(5, 4, 4, &coords));
    hk_nearnull nn = {.dim = 3, .coords = coords};
    const int64_t n = K.nbrows * K.bs;
    for (int c = 0; cases[c]; c++) {
        char opts[160];
        snprintf(opts, sizeof opts, "backend=%s tol=1e-10 %s", backend, cases[c]);
        hk_options *o1 = parsed_options(opts), *o2 = parsed_options(opts);
        hk_solver *s1 = NULL, *s2 = NULL;
        hk_resident_bcsr A, A2 = {0};
        HK_ASSERT_OK(hk_solver_create_nearnull(&K, &nn, o1, &s1));
        upload_copy(be, &K, &A);
        HK_ASSERT_OK(hk_solver_create_resident(&A, &nn, o2, &s2));
        if (!s1 || !s2) {
            fprintf(stderr, "\n  %s: %s\n", opts, hk_error_message());
            hk_solver_destroy(s1), hk_solver_destroy(s2);
            hk_options_destroy(o1), hk_options_destroy(o2);
            continue;
        }
        /* one resident matrix for every round: the array each update hands back is refilled
         * with the next round's values (what a modal or nonlinear loop does) */
        hk_bcsr Kprev;
        HK_ASSERT_OK(hk_bcsr_copy(&K, &Kprev));
        for (int r = 1; r <= 3; r++) {
            hk_bcsr K2;
            round_values(be, &K, r, &K2, &A2);
            HK_ASSERT_OK(hk_solver_update_values(s1, &K2));
            HK_ASSERT_OK(hk_solver_update_values_resident(s2, &A2));
            CU_ASSERT(resident_equals(&A2, &Kprev)); /* the previous round's values back */
            same_solutions(s1, s2, n, 3 + (unsigned)r);
            hk_bcsr_free(&Kprev);
            Kprev = K2;
        }
        /* a NaN in block row 4 (entry row 14 or so): named, the solver unusable; A2 gets the
         * previous values back all the same */
        hk_bcsr K3;
        scaled_copy(&K, 4, &K3);
        const int64_t q = K3.rowptr[4] + 1;
        K3.val[q * 9 + 5] = NAN;
        refill(be, &A2, &K3);
        CU_ASSERT_EQUAL(hk_solver_update_values_resident(s2, &A2), HK_ERR_NUMERIC);
        char want[64];
        snprintf(want, sizeof want, "row %d, column %d is nan", 4 * 3 + 5 / 3 + 1,
                 K3.colind[q] * 3 + 5 % 3 + 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), want));
        CU_ASSERT(resident_equals(&A2, &Kprev));
        hk_resident_bcsr_free(&A2);
        hk_bcsr_free(&Kprev);
        double *b = hk_test_rand_vec(n, 9), *x = calloc((size_t)n, sizeof *x);
        hk_result res;
        CU_ASSERT_EQUAL(hk_solver_solve(s2, b, x, &res), HK_ERR_ARG);
        free(b), free(x);
        hk_bcsr_free(&K3);
        hk_solver_destroy(s1);
        hk_solver_destroy(s2);
        hk_options_destroy(o1);
        hk_options_destroy(o2);
    }
    free(coords);
    hk_bcsr_free(&K);
}

static void test_update_resident_holders(void)
{
    update_resident_holders_on("cpu");
}

/* A loop that reuses the array each update hands back: every round solves to the bytes of a
 * solver made afresh (hk_solver_create) with that round's values, for preconditioners whose
 * update redoes their whole set-up. */
static void update_resident_reuse_on(const char *backend)
{
    static const char *const cases[] = {"method=cg pc=jacobi", "method=cg pc=poly format=csr",
                                        NULL};
    const hk_backend *be;
    HK_ASSERT_OK(hk_backend_get(backend, &be));
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 3, &K));
    const int64_t n = K.nbrows * K.bs;
    for (int c = 0; cases[c]; c++) {
        char opts[128];
        snprintf(opts, sizeof opts, "backend=%s tol=1e-10 %s", backend, cases[c]);
        hk_options *o1 = parsed_options(opts), *o2 = parsed_options(opts);
        hk_solver *s = NULL;
        hk_resident_bcsr A, A2 = {0};
        upload_copy(be, &K, &A);
        HK_ASSERT_OK(hk_solver_create_resident(&A, NULL, o2, &s));
        for (int r = 1; r <= 3 && s; r++) {
            hk_bcsr Kr;
            round_values(be, &K, r, &Kr, &A2);
            HK_ASSERT_OK(hk_solver_update_values_resident(s, &A2));
            CU_ASSERT_PTR_NOT_NULL(A2.val);
            hk_solver *fresh = NULL;
            HK_ASSERT_OK(hk_solver_create(&Kr, o1, &fresh));
            if (fresh) same_solutions(fresh, s, n, 20 + (unsigned)r);
            hk_solver_destroy(fresh);
            hk_bcsr_free(&Kr);
        }
        hk_resident_bcsr_free(&A2);
        hk_solver_destroy(s);
        hk_options_destroy(o1);
        hk_options_destroy(o2);
    }
    hk_bcsr_free(&K);
}

static void test_update_resident_reuse(void)
{
    update_resident_reuse_on("cpu");
}

/* method=cholesky refuses resident values up front (its factor is the host's): A left as it
 * was, the solver still solving with its factor. */
static void test_update_resident_cholesky(void)
{
#ifdef HOOKE_HAVE_CHOLMOD
    const hk_backend *be;
    HK_ASSERT_OK(hk_backend_get("cpu", &be));
    hk_bcsr K, K2;
    HK_ASSERT_OK(hk_gen_elasticity3d(4, 4, 3, &K));
    scaled_copy(&K, 1, &K2);
    hk_options *o1 = parsed_options("backend=cpu method=cholesky"),
               *o2 = parsed_options("backend=cpu method=cholesky");
    hk_solver *s1 = NULL, *s2 = NULL;
    hk_resident_bcsr A;
    HK_ASSERT_OK(hk_solver_create(&K, o1, &s1));
    upload_copy(be, &K, &A);
    HK_ASSERT_OK(hk_solver_create_resident(&A, NULL, o2, &s2));
    refused_left_alone(be, s2, &K2, HK_ERR_UNSUPPORTED, "method=cholesky");
    if (s1 && s2) same_solutions(s1, s2, K.nbrows * K.bs, 8);
    hk_solver_destroy(s1);
    hk_solver_destroy(s2);
    hk_options_destroy(o1);
    hk_options_destroy(o2);
    hk_bcsr_free(&K);
    hk_bcsr_free(&K2);
#endif
}

/* x1 and x2 (n entries): max |x1 - x2| / max |x1|. */
static double rel_diff(const double *x1, const double *x2, int64_t n)
{
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++)
        d = fmax(d, fabs(x1[i] - x2[i])), m = fmax(m, fabs(x1[i]));
    return m > 0 ? d / m : d;
}

/* s1 and s2 solve one b: both converge; exact: the same iterations and bytes, else (a device
 * frames the coordinates with its own sums: last digits) iterations within one and x to
 * 1e-8. */
static void close_solutions(hk_solver *s1, hk_solver *s2, int64_t n, int exact)
{
    if (exact) {
        same_solutions(s1, s2, n, 11);
        return;
    }
    double *b = hk_test_rand_vec(n, 11), *x1 = calloc((size_t)n, sizeof *x1),
           *x2 = calloc((size_t)n, sizeof *x2);
    hk_result r1, r2;
    HK_ASSERT_OK(hk_solver_solve(s1, b, x1, &r1));
    HK_ASSERT_OK(hk_solver_solve(s2, b, x2, &r2));
    CU_ASSERT(hk_reason_converged(r1.reason) && hk_reason_converged(r2.reason));
    CU_ASSERT(abs(r1.iterations - r2.iterations) <= 1);
    const double e = rel_diff(x1, x2, n);
    printf("\n    %d and %d iterations, x differs by %.2e ", r1.iterations, r2.iterations, e);
    CU_ASSERT(e < 1e-8);
    free(b);
    free(x1);
    free(x2);
}

/* Node coordinates in the backend's memory (as hooke run's device assembly hands them over,
 * hk_nearnull.coords_be), freed by the caller once the solver is made: pc=amg's modes from
 * them solve as from host coordinates (cpu: the same digits; a device: the digits of its own
 * sums of the frame), also after new values; a host matrix refuses them. */
static void resident_coords_on(const char *backend, int dim)
{
    const hk_backend *be;
    HK_ASSERT_OK(hk_backend_get(backend, &be));
    hk_bcsr K, K2;
    double *coords = NULL, *coords_d = NULL;
    if (dim == 3) {
        HK_ASSERT_OK(hk_gen_elasticity3d(7, 5, 4, &K));
        HK_ASSERT_OK(hk_gen_elasticity3d_coords(7, 5, 4, &coords));
    } else {
        HK_ASSERT_OK(hk_gen_elasticity2d(19, 13, &K));
        HK_ASSERT_OK(hk_gen_elasticity2d_coords(19, 13, &coords));
    }
    const size_t bytes = (size_t)K.nbrows * dim * sizeof *coords;
    HK_ASSERT_OK(hk_bcsr_copy(&K, &K2));
    for (int64_t k = 0; k < K2.rowptr[K2.nbrows] * dim * dim; k++)
        K2.val[k] *= 1.25;
    hk_nearnull host = {.dim = dim, .coords = coords};
    HK_ASSERT_OK(hk_backend_alloc(be, bytes, (void **)&coords_d));
    HK_ASSERT_OK(be->copy_to(coords_d, coords, bytes));
    HK_ASSERT_OK(be->sync());
    hk_nearnull dev = {.dim = dim, .coords = coords_d, .coords_be = be};
    hk_options *o1, *o2;
    char opts[96];
    snprintf(opts, sizeof opts, "backend=%s method=cg pc=amg tol=1e-10", backend);
    HK_ASSERT_OK(hk_options_create(&o1));
    HK_ASSERT_OK(hk_options_parse(o1, opts));
    HK_ASSERT_OK(hk_options_create(&o2));
    HK_ASSERT_OK(hk_options_parse(o2, opts));
    hk_solver *s1 = NULL, *s2 = NULL;
    CU_ASSERT_EQUAL(hk_solver_create_nearnull(&K, &dev, o1, &s1), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "the matrix is on the host"));
    CU_ASSERT_PTR_NULL(s1);
    HK_ASSERT_OK(hk_solver_create_nearnull(&K, &host, o1, &s1));
    hk_resident_bcsr A;
    upload_copy(be, &K, &A);
    HK_ASSERT_OK(hk_solver_create_resident(&A, &dev, o2, &s2));
    hk_backend_free(be, coords_d); /* the solver keeps its own */
    coords_d = NULL;
    const int exact = !strcmp(backend, "cpu");
    close_solutions(s1, s2, K.nbrows * dim, exact);
    upload_copy(be, &K2, &A);
    HK_ASSERT_OK(hk_solver_update_values(s1, &K2));
    HK_ASSERT_OK(hk_solver_update_values_resident(s2, &A));
    hk_resident_bcsr_free(&A); /* the previous values, not reused */
    close_solutions(s1, s2, K.nbrows * dim, exact);
    hk_solver_destroy(s1);
    hk_solver_destroy(s2);
    /* a coordinate that is not finite: refused by the frame, the arrays freed */
    coords[5] = NAN;
    HK_ASSERT_OK(hk_backend_alloc(be, bytes, (void **)&coords_d));
    HK_ASSERT_OK(be->copy_to(coords_d, coords, bytes));
    HK_ASSERT_OK(be->sync());
    dev.coords = coords_d;
    upload_copy(be, &K, &A);
    s2 = NULL;
    CU_ASSERT_EQUAL(hk_solver_create_resident(&A, &dev, o2, &s2), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "not finite"));
    CU_ASSERT(s2 == NULL && A.rowptr == NULL);
    hk_backend_free(be, coords_d);
    hk_options_destroy(o1);
    hk_options_destroy(o2);
    free(coords);
    hk_bcsr_free(&K);
    hk_bcsr_free(&K2);
}

static void test_resident_coords(void)
{
    resident_coords_on("cpu", 3);
    resident_coords_on("cpu", 2);
}

static void test_cuda_resident_coords(void)
{
    resident_coords_on("cuda", 3);
    resident_coords_on("cuda", 2);
}

static void test_cuda_update_resident(void)
{
    update_resident_on("cuda");
}

static void test_cuda_update_resident_holders(void)
{
    update_resident_holders_on("cuda");
}

static void test_cuda_update_resident_reuse(void)
{
    update_resident_reuse_on("cuda");
}

HK_SUITE(resident, {"a resident matrix solves to the host matrix's digits", test_same_solution},
         {"download gives the matrix back", test_download},
         {"bad values, options and shapes: named, the arrays freed", test_errors},
         {"new values: checked against the pattern read back, the host's digits",
          test_update_values},
         {"new resident values: the host update's digits, the previous values handed back in "
          "A; another pattern or size refused, A left as it was",
          test_update_resident},
         {"new resident values taken over: every format, preconditioner and method sees them, "
          "update after update with the handed-back array refilled; a NaN named, the solver "
          "unusable",
          test_update_resident_holders},
         {"the handed-back array reused: each round a fresh solver's bytes",
          test_update_resident_reuse},
         {"method=cholesky refuses resident values, A left as it was, the solver solving",
          test_update_resident_cholesky},
         {"coordinates in the backend's memory: the host coordinates' digits; a host matrix "
          "refuses them",
          test_resident_coords})

HK_DEVICE_SUITE(cuda_resident,
                {"new resident values on cuda: the host update's digits, the previous values "
                 "handed back in A; another pattern refused on the device, A left as it was",
                 test_cuda_update_resident},
                {"new resident values taken over on cuda: every format, preconditioner and "
                 "method sees them, update after update with the handed-back array refilled; a "
                 "NaN named, the solver unusable",
                 test_cuda_update_resident_holders},
                {"the handed-back array reused on cuda: each round a fresh solver's bytes",
                 test_cuda_update_resident_reuse},
                {"coordinates in the device's memory: pc=amg solves as with host coordinates",
                 test_cuda_resident_coords})
