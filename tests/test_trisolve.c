/* Incomplete factorisations: node orderings (pc.ordering), the fine-grained iterative IC(0) /
 * ILU(0) (pc.ic0.sweeps, pc.ilu0.sweeps) against the exact ones and a dense IC(0) computed
 * here, pivot errors; and on the device (suite trisolve_cuda) the ic0 apply time of each
 * triangular solve (pc.tri), the device sweeps against the CPU's, and pc=ic0/ilu0 iteration
 * counts on both backends (the solves against the CPU's: suite syncfree_cuda). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "hk_impl.h"
#include "pc/pc_impl.h"

static const hk_backend *backend(const char *name)
{
    const hk_backend *b = NULL;
    if (hk_backend_get(name, &b)) hk_error_clear();
    return b;
}

static void rhs(long n, double *r)
{
    for (long i = 0; i < n; i++)
        r[i] = 1 + 0.3 * sin(0.7 * (double)i) + 0.1 * (double)(i % 5);
}

/* Largest |I - J| over the stored blocks (node bandwidth). */
static int64_t bandwidth(const hk_bcsr *K)
{
    int64_t w = 0;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++)
            if (llabs(K->colind[p] - i) > w) w = llabs(K->colind[p] - i);
    return w;
}

/* Levels of the strictly lower node graph (a node's level: 1 + the highest of its lower
 * neighbours'). */
static int64_t node_levels(const hk_bcsr *K)
{
    int64_t *lev = calloc(K->nbrows + 1, sizeof *lev), nl = 0;
    for (int64_t i = 0; i < K->nbrows; i++) {
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++)
            if (K->colind[p] < i && lev[K->colind[p]] + 1 > lev[i]) lev[i] = lev[K->colind[p]] + 1;
        if (lev[i] + 1 > nl) nl = lev[i] + 1;
    }
    free(lev);
    return nl;
}

/* K with its nodes shuffled by a fixed pseudo-random permutation. */
static void shuffled(const hk_bcsr *K, hk_bcsr *S)
{
    const int64_t n = K->nbrows;
    int32_t *perm = malloc(n * sizeof *perm);
    for (int64_t i = 0; i < n; i++)
        perm[i] = (int32_t)i;
    uint32_t s = 12345;
    for (int64_t i = n - 1; i > 0; i--) {
        s = s * 1664525u + 1013904223u;
        int64_t j = (s >> 8) % (i + 1);
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    HK_ASSERT_OK(hk_bcsr_permute(K, perm, S));
    free(perm);
}

/* ---- orderings ------------------------------------------------------------------------ */

/* perm is a bijection, the same on a second call; P K P^T (P x) = P (K x); colour: about as
 * many node levels as colours, and 8..27 colours on a hex mesh (8 nodes of an element are a
 * clique; 27 the most neighbours); rcm: the bandwidth of a shuffled mesh back to about the
 * natural one; a disconnected graph (two chains and isolated nodes) is ordered fully. */
/* The last ordering kind the build has (amd needs SuiteSparse's AMD). */
#ifdef HOOKE_HAVE_AMD
#define LAST_ORDER HK_ORDER_AMD
#else
#define LAST_ORDER HK_ORDER_COLOUR
#endif

static void test_orderings(void)
{
    hk_bcsr K, S, P;
    HK_ASSERT_OK(hk_gen_elasticity3d(9, 6, 5, &K));
    shuffled(&K, &S);
    const int64_t n = K.nbrows;
    const long ns = (long)n * K.bs;
    double *x = malloc(ns * sizeof *x), *y = malloc(ns * sizeof *y);
    double *px = malloc(ns * sizeof *px), *py = malloc(ns * sizeof *py), *y2 = malloc(ns * 8);
    for (int kind = HK_ORDER_RCM; kind <= LAST_ORDER; kind++) {
        int32_t *perm = NULL, *again = NULL;
        int64_t nc = 0, nc2 = 0;
        HK_ASSERT_OK(hk_node_ordering(&S, kind, &perm, &nc));
        HK_ASSERT_OK(hk_node_ordering(&S, kind, &again, &nc2));
        CU_ASSERT(!memcmp(perm, again, n * sizeof *perm) && nc == nc2);
        char *seen = calloc(n, 1);
        int bij = 1;
        for (int64_t i = 0; i < n; i++) {
            if (perm[i] < 0 || perm[i] >= n || seen[perm[i]])
                bij = 0;
            else
                seen[perm[i]] = 1;
        }
        CU_ASSERT(bij);
        HK_ASSERT_OK(hk_bcsr_permute(&S, perm, &P));
        rhs(ns, x);
        hk_bcsr_spmv(&S, x, y);
        for (int64_t i = 0; i < n; i++)
            for (int r = 0; r < K.bs; r++) {
                px[i * K.bs + r] = x[(int64_t)perm[i] * K.bs + r];
                py[i * K.bs + r] = y[(int64_t)perm[i] * K.bs + r];
            }
        hk_bcsr_spmv(&P, px, y2);
        CU_ASSERT(hk_test_reldiff(y2, py, ns) < 1e-14);
        if (kind == HK_ORDER_COLOUR) {
            printf("\n    colour: %lld colours, %lld node levels (natural %lld)", (long long)nc,
                   (long long)node_levels(&P), (long long)node_levels(&K));
            CU_ASSERT(nc >= 8 && nc <= 27);
            CU_ASSERT(node_levels(&P) <= nc);
        } else if (kind == HK_ORDER_AMD) {
            printf("\n    amd: node levels %lld (natural %lld)", (long long)node_levels(&P),
                   (long long)node_levels(&K));
        } else {
            printf("\n    rcm: bandwidth %lld (natural %lld, shuffled %lld)",
                   (long long)bandwidth(&P), (long long)bandwidth(&K), (long long)bandwidth(&S));
            CU_ASSERT(bandwidth(&P) <= 3 * bandwidth(&K) / 2);
            CU_ASSERT(bandwidth(&S) > 3 * bandwidth(&K));
        }
        hk_bcsr_free(&P);
        free(perm), free(again), free(seen);
    }
    free(x), free(y), free(px), free(py), free(y2);
    hk_bcsr_free(&K);
    hk_bcsr_free(&S);

    /* disconnected: chains 0-1-2-3 and 5-6-7, isolated 4 and 8 */
    const int64_t m = 9;
    hk_bcsr D = {.bs = 1, .nbrows = m, .nbcols = m};
    D.rowptr = calloc(m + 1, sizeof *D.rowptr);
    D.colind = malloc(3 * m * sizeof *D.colind);
    D.val = malloc(3 * m * sizeof *D.val);
    int64_t q = 0;
    for (int64_t i = 0; i < m; i++) {
        const int left = i == 1 || i == 2 || i == 3 || i == 6 || i == 7;
        const int right = i == 0 || i == 1 || i == 2 || i == 5 || i == 6;
        if (left) D.colind[q] = (int32_t)(i - 1), D.val[q++] = -1;
        D.colind[q] = (int32_t)i, D.val[q++] = 3;
        if (right) D.colind[q] = (int32_t)(i + 1), D.val[q++] = -1;
        D.rowptr[i + 1] = q;
    }
    for (int kind = HK_ORDER_RCM; kind <= HK_ORDER_COLOUR; kind++) {
        int32_t *perm = NULL;
        int64_t nc = 0;
        HK_ASSERT_OK(hk_node_ordering(&D, kind, &perm, &nc));
        int64_t sum = 0;
        for (int64_t i = 0; i < m; i++)
            sum += perm[i];
        CU_ASSERT_EQUAL(sum, m * (m - 1) / 2);
        if (kind == HK_ORDER_COLOUR) CU_ASSERT_EQUAL(nc, 2);
        if (kind == HK_ORDER_RCM) { /* a chain stays a chain: bandwidth 1 */
            hk_bcsr P2;
            HK_ASSERT_OK(hk_bcsr_permute(&D, perm, &P2));
            CU_ASSERT_EQUAL(bandwidth(&P2), 1);
            hk_bcsr_free(&P2);
        }
        free(perm);
    }
    hk_bcsr_free(&D);
}

/* Dense IC(0) of the n x n row-major A on the pattern pat (nonzero = stored; right-looking,
 * zero fill), then z = L^-T L^-1 r; returns 0, or -1 on a non-positive pivot. */
static int dense_ic0_solve(long n, const double *A0, const double *pat, const double *r, double *z)
{
    double *A = malloc(n * n * sizeof *A);
    memcpy(A, A0, n * n * sizeof *A);
    for (long k = 0; k < n; k++) {
        if (!(A[k * n + k] > 0)) return free(A), -1;
        A[k * n + k] = sqrt(A[k * n + k]);
        for (long i = k + 1; i < n; i++)
            if (pat[i * n + k] != 0) A[i * n + k] /= A[k * n + k];
        for (long j = k + 1; j < n; j++)
            for (long i = j; i < n; i++)
                if (pat[i * n + j] != 0 && pat[i * n + k] != 0 && pat[j * n + k] != 0)
                    A[i * n + j] -= A[i * n + k] * A[j * n + k];
    }
    for (long i = 0; i < n; i++) { /* L y = r */
        double s = r[i];
        for (long k = 0; k < i; k++)
            if (pat[i * n + k] != 0) s -= A[i * n + k] * z[k];
        z[i] = s / A[i * n + i];
    }
    for (long i = n - 1; i >= 0; i--) { /* L^T z = y */
        double s = z[i];
        for (long k = i + 1; k < n; k++)
            if (pat[k * n + i] != 0) s -= A[k * n + i] * z[k];
        z[i] = s / A[i * n + i];
    }
    free(A);
    return 0;
}

/* pc=ic0 with each ordering equals P^T (dense IC(0) of P A P^T)^-1 P r computed here, on a
 * 2D elasticity matrix (2 x 2 node blocks), on every backend, fp64 (and fp32 loosely), with
 * the exact and the iterative factorisation (enough sweeps). */
static void test_ic0_ordering_dense(void)
{
    hk_bcsr K, P;
    HK_ASSERT_OK(hk_gen_elasticity2d(5, 4, &K));
    const int bs = K.bs;
    const long n = (long)K.nbrows * bs;
    double *r = malloc(n * 8), *pr = malloc(n * 8), *pz = malloc(n * 8), *ref = malloc(n * 8),
           *z = malloc(n * 8), *A = malloc(n * n * 8), *pat = malloc(n * n * 8);
    rhs(n, r);
    for (int kind = HK_ORDER_NATURAL; kind <= LAST_ORDER; kind++) {
        int32_t *perm = NULL;
        int64_t nc;
        HK_ASSERT_OK(hk_node_ordering(&K, kind, &perm, &nc));
        if (perm)
            HK_ASSERT_OK(hk_bcsr_permute(&K, perm, &P));
        else
            HK_ASSERT_OK(hk_bcsr_copy(&K, &P));
        memset(A, 0, n * n * 8);
        memset(pat, 0, n * n * 8);
        for (int64_t bi = 0; bi < P.nbrows; bi++)
            for (int64_t p = P.rowptr[bi]; p < P.rowptr[bi + 1]; p++)
                for (int a = 0; a < bs; a++)
                    for (int c = 0; c < bs; c++)
                        A[(bi * bs + a) * n + P.colind[p] * bs + c] = P.val[(p * bs + a) * bs + c],
                                                                 pat[(bi * bs + a) * n +
                                                                     P.colind[p] * bs + c] = 1;
        for (long i = 0; i < K.nbrows; i++)
            for (int a = 0; a < bs; a++)
                pr[i * bs + a] = r[(perm ? perm[i] : i) * bs + a];
        CU_ASSERT_EQUAL_FATAL(dense_ic0_solve(n, A, pat, pr, pz), 0);
        for (long i = 0; i < K.nbrows; i++)
            for (int a = 0; a < bs; a++)
                ref[(perm ? perm[i] : i) * bs + a] = pz[i * bs + a];
        for (const hk_backend *const *b = hk_test_backends(); *b; b++) {
            if (!(*b)->tri_setup) continue;
            for (int sw = 0; sw < 2; sw++) {
                char opts[128];
                snprintf(opts, sizeof opts, "pc.ordering=%s pc.ic0.sweeps=%d",
                         hk_ordering_names[kind], sw ? 400 : 0);
                HK_ASSERT_OK(hk_test_apply_pc(*b, HK_FP64, &K, "ic0", opts, r, z, NULL));
                CU_ASSERT(hk_test_reldiff(z, ref, n) < 1e-10);
                if (hk_test_reldiff(z, ref, n) >= 1e-10)
                    printf("\n    %s %s: %g", hk_backend_name(*b), opts,
                           hk_test_reldiff(z, ref, n));
            }
            char opts[64];
            snprintf(opts, sizeof opts, "pc.ordering=%s", hk_ordering_names[kind]);
            HK_ASSERT_OK(hk_test_apply_pc(*b, HK_FP32, &K, "ic0", opts, r, z, NULL));
            CU_ASSERT(hk_test_reldiff(z, ref, n) < 1e-4);
        }
        hk_bcsr_free(&P);
        free(perm);
    }
    free(r), free(pr), free(pz), free(ref), free(z), free(A), free(pat);
    hk_bcsr_free(&K);
}

/* The sweeps reach the exact factorisation: ic0 and ilu0 applies with many sweeps equal the
 * exact ones (3D elasticity; convection-diffusion for ilu0), and a few sweeps already make a
 * preconditioner better than Jacobi. */
static void test_sweeps_converge(void)
{
    const hk_backend *cpu = backend("cpu");
    hk_bcsr K, C;
    HK_ASSERT_OK(hk_gen_elasticity3d(4, 3, 3, &K));
    HK_ASSERT_OK(hk_gen_convdiff2d(12, 20, &C));
    const struct {
        const char *pc, *key;
        hk_bcsr *A;
    } cases[] = {{"ic0", "pc.ic0.sweeps", &K}, {"ilu0", "pc.ilu0.sweeps", &C}};
    for (int c = 0; c < 2; c++) {
        const long n = (long)cases[c].A->nbrows * cases[c].A->bs;
        double *r = malloc(n * 8), *ze = malloc(n * 8), *z = malloc(n * 8);
        rhs(n, r);
        HK_ASSERT_OK(hk_test_apply_pc(cpu, HK_FP64, cases[c].A, cases[c].pc, NULL, r, ze, NULL));
        double prev = INFINITY;
        int sweeps[] = {1, 3, 10, 1000};
        printf("\n    %s apply vs exact:", cases[c].pc);
        for (int s = 0; s < 4; s++) {
            char opts[64];
            snprintf(opts, sizeof opts, "%s=%d", cases[c].key, sweeps[s]);
            HK_ASSERT_OK(hk_test_apply_pc(cpu, HK_FP64, cases[c].A, cases[c].pc, opts, r, z, NULL));
            const double d = hk_test_reldiff(z, ze, n);
            printf(" %d sweeps %.1e", sweeps[s], d);
            if (s == 3) CU_ASSERT(d < 1e-12);
            if (s >= 2) CU_ASSERT(d < prev);
            prev = d;
        }
        free(r), free(ze), free(z);
    }
    hk_bcsr_free(&K);
    hk_bcsr_free(&C);
}

/* Iterations of cg+ic0 per ordering and with 3 sweeps on 3D elasticity; colour has far fewer
 * levels; everything converges; gmres+ilu0 likewise on convection-diffusion. */
static void test_ordering_iterations(void)
{
    hk_bcsr K, C;
    HK_ASSERT_OK(hk_gen_elasticity3d(8, 8, 8, &K));
    HK_ASSERT_OK(hk_gen_convdiff2d(40, 50, &C));
    const int jac = hk_test_solve_iterations(&K, "cpu", "method=cg pc=jacobi", rhs);
    printf("\n    elasticity3d 8^3 cg: jacobi %d", jac);
    int64_t levels[3] = {0};
    for (int kind = 0; kind < 3; kind++) {
        char opts[128];
        snprintf(opts, sizeof opts, "method=cg pc=ic0 pc.ordering=%s", hk_ordering_names[kind]);
        const int it = hk_test_solve_iterations(&K, "cpu", opts, rhs);
        strcat(opts, " pc.ic0.sweeps=3");
        const int it3 = hk_test_solve_iterations(&K, "cpu", opts, rhs);
        const long n = (long)K.nbrows * K.bs;
        double *r = malloc(n * 8), *z = malloc(n * 8);
        rhs(n, r);
        hk_pc *pc = NULL;
        snprintf(opts, sizeof opts, "pc.ordering=%s", hk_ordering_names[kind]);
        HK_ASSERT_OK(hk_test_apply_pc(backend("cpu"), HK_FP64, &K, "ic0", opts, r, z, &pc));
        const hk_tri_pc *t = pc->data;
        levels[kind] = t->levels_L;
        printf(", ic0 %s %d (3 sweeps %d; %lld levels)", hk_ordering_names[kind], it, it3,
               (long long)t->levels_L);
        CU_ASSERT(it > 0 && it < jac);
        CU_ASSERT(it3 > 0 && it3 < jac);
        hk_pc_destroy(pc);
        free(r), free(z);
    }
    CU_ASSERT(levels[HK_ORDER_COLOUR] * 5 < levels[HK_ORDER_NATURAL]);
    printf("\n    convdiff gmres ilu0:");
    for (int kind = 0; kind < 3; kind++) {
        char opts[128];
        snprintf(opts, sizeof opts, "method=gmres pc=ilu0 pc.ordering=%s", hk_ordering_names[kind]);
        const int it = hk_test_solve_iterations(&C, "cpu", opts, rhs);
        strcat(opts, " pc.ilu0.sweeps=3");
        const int it3 = hk_test_solve_iterations(&C, "cpu", opts, rhs);
        printf(" %s %d (3 sweeps %d)", hk_ordering_names[kind], it, it3);
        CU_ASSERT(it > 0 && it3 > 0);
    }
    hk_bcsr_free(&K);
    hk_bcsr_free(&C);
}

/* Pivot failures name the row; bad option values are refused. */
static void test_sweeps_errors(void)
{
    const hk_backend *cpu = backend("cpu");
    double r[4] = {1, 2, 3, 4}, z[4];
    /* tridiag(-2, 1, -2): IC(0) pivot 1 - 4 < 0 at row 1 */
    hk_bcsr T = {.bs = 1, .nbrows = 4, .nbcols = 4};
    int64_t rp[5] = {0, 2, 5, 8, 10};
    int32_t ci[10] = {0, 1, 0, 1, 2, 1, 2, 3, 2, 3};
    double v[10] = {1, -2, -2, 1, -2, -2, 1, -2, -2, 1};
    T.rowptr = rp, T.colind = ci, T.val = v;
    CU_ASSERT_EQUAL(hk_test_apply_pc(cpu, HK_FP64, &T, "ic0", "pc.ic0.sweeps=5", r, z, NULL),
                    HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "at row 2")); /* rows counted from 1 */
    CU_ASSERT_EQUAL(hk_test_apply_pc(cpu, HK_FP64, &T, "ic0", "pc.ordering=rcm", r, z, NULL),
                    HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "reordered"));
    /* [[1 1][1 1]] blocks: ILU(0) pivot u_11 = 0 */
    hk_bcsr S = {.bs = 1, .nbrows = 2, .nbcols = 2};
    int64_t rp2[3] = {0, 2, 4};
    int32_t ci2[4] = {0, 1, 0, 1};
    double v2[4] = {1, 1, 1, 1};
    S.rowptr = rp2, S.colind = ci2, S.val = v2;
    CU_ASSERT_EQUAL(hk_test_apply_pc(cpu, HK_FP64, &S, "ilu0", "pc.ilu0.sweeps=4", r, z, NULL),
                    HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "at row 2"));
    /* zero diagonal */
    v2[0] = 0;
    CU_ASSERT_EQUAL(hk_test_apply_pc(cpu, HK_FP64, &S, "ilu0", "pc.ilu0.sweeps=4", r, z, NULL),
                    HK_ERR_NUMERIC);
    CU_ASSERT_EQUAL(hk_test_apply_pc(cpu, HK_FP64, &T, "ic0", "pc.tri=fast", r, z, NULL),
                    HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "syncfree"));
    CU_ASSERT_EQUAL(hk_test_apply_pc(cpu, HK_FP64, &T, "ic0", "pc.ordering=metis", r, z, NULL),
                    HK_ERR_OPTION);
    CU_ASSERT_EQUAL(hk_test_apply_pc(cpu, HK_FP64, &T, "ic0", "pc.ic0.sweeps=-1", r, z, NULL),
                    HK_ERR_OPTION);
}

HK_SUITE(trisolve,
         {"orderings: bijective, deterministic, P K P^T, colours, bandwidth", test_orderings},
         {"ic0 with each ordering and sweeps equals a dense IC(0) of P A P^T",
          test_ic0_ordering_dense},
         {"iterative IC(0)/ILU(0) sweeps converge to the exact factors", test_sweeps_converge},
         {"iterations per ordering and with 3 sweeps (3D elasticity, convection-diffusion)",
          test_ordering_iterations},
         {"pivot failures name the row; option errors", test_sweeps_errors})

/* ---- device: the four solves against the CPU solve ------------------------------------ */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static const char *const method_names[] = {"syncfree", "levels", "cusparse", "syncfree-flags"};
#define NMETHOD 4

/* Timings that matter: L and U solve of the IC(0) factors of 3D elasticity (30^3 nodes, 89k
 * DOFs) per method and ordering, fp64 and fp32, next to one SpMV of K. */
static void test_solve_timings(void)
{
    const hk_backend *gpu = backend("cuda");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpu);
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(30, 30, 30, &K));
    const long n = (long)K.nbrows * K.bs;
    double *r = malloc(n * 8), *z = malloc(n * 8);
    rhs(n, r);
    {
        hk_mat *A = NULL;
        hk_vec *x, *y;
        HK_ASSERT_OK(hk_mat_create(gpu, &K, HK_FMT_CSR, HK_FP64, NULL, &A));
        HK_ASSERT_OK(hk_vec_create(gpu, n, HK_FP64, &x));
        HK_ASSERT_OK(hk_vec_create(gpu, n, HK_FP64, &y));
        HK_ASSERT_OK(hk_vec_upload(x, r));
        gpu->mat_spmv(A, x, y);
        gpu->sync();
        double t0 = now();
        for (int k = 0; k < 20; k++)
            gpu->mat_spmv(A, x, y);
        gpu->sync();
        printf("\n    %ld dofs: csr spmv %.3f ms", n, (now() - t0) / 20 * 1e3);
        hk_vec_destroy(x), hk_vec_destroy(y);
        hk_mat_destroy(A);
    }
    for (int ord = 0; ord < 3; ord++)
        for (int p = 0; p < 2; p++)
            for (int m = 0; m < NMETHOD; m++) {
                char opts[128];
                snprintf(opts, sizeof opts, "pc.ordering=%s pc.tri=%s", hk_ordering_names[ord],
                         method_names[m]);
                hk_pc *pc = NULL;
                HK_ASSERT_OK(hk_test_apply_pc(gpu, (hk_precision)p, &K, "ic0", opts, r, z, &pc));
                if (!pc) continue;
                hk_vec *x, *y;
                HK_ASSERT_OK(hk_vec_create(gpu, n, (hk_precision)p, &x));
                HK_ASSERT_OK(hk_vec_create(gpu, n, (hk_precision)p, &y));
                HK_ASSERT_OK(hk_vec_upload(x, r));
                pc->type->apply(pc, x, y);
                gpu->sync();
                double t0 = now();
                for (int k = 0; k < 10; k++)
                    HK_ASSERT_OK(pc->type->apply(pc, x, y));
                gpu->sync();
                const hk_tri_pc *t = pc->data;
                printf("\n    ic0 %-8s %-8s %s: %8.3f ms per apply (L %lld levels, U %lld)",
                       hk_ordering_names[ord], method_names[m], p ? "fp32" : "fp64",
                       (now() - t0) / 10 * 1e3, (long long)t->levels_L, (long long)t->levels_U);
                hk_vec_destroy(x), hk_vec_destroy(y);
                hk_pc_destroy(pc);
            }
    free(r), free(z);
    hk_bcsr_free(&K);
}

/* pc=ic0 / ilu0 iteration counts on cuda equal the CPU ones (at most 1 apart: the sync-free
 * sums round in another order), per ordering and method (syncfree with 3 sweeps of the
 * device factorisation). */
static void test_iterations_both_backends(void)
{
    hk_bcsr K, C;
    HK_ASSERT_OK(hk_gen_elasticity3d(10, 8, 8, &K));
    HK_ASSERT_OK(hk_gen_convdiff2d(60, 50, &C));
    for (int ord = 0; ord < 3; ord++)
        for (int m = 0; m < NMETHOD; m++) {
            char o1[160], o2[160];
            snprintf(o1, sizeof o1, "method=cg pc=ic0 pc.ordering=%s pc.tri=%s",
                     hk_ordering_names[ord], method_names[m]);
            snprintf(o2, sizeof o2, "method=gmres pc=ilu0 pc.ordering=%s pc.tri=%s",
                     hk_ordering_names[ord], method_names[m]);
            if (m == 0) { /* with the device factorisation too */
                strcat(o1, " pc.ic0.sweeps=3");
                strcat(o2, " pc.ilu0.sweeps=3");
            }
            const int ic = hk_test_solve_iterations(&K, "cpu", o1, rhs),
                      ig = hk_test_solve_iterations(&K, "cuda", o1, rhs);
            const int lc = hk_test_solve_iterations(&C, "cpu", o2, rhs),
                      lg = hk_test_solve_iterations(&C, "cuda", o2, rhs);
            printf("\n    %-8s %-8s%s: cg+ic0 cpu %d cuda %d, gmres+ilu0 cpu %d cuda %d",
                   hk_ordering_names[ord], method_names[m], m == 0 ? " 3 sweeps" : "", ic, ig, lc,
                   lg);
            CU_ASSERT(ic > 0 && abs(ic - ig) <= 1);
            CU_ASSERT(lc > 0 && abs(lc - lg) <= 1);
        }
    hk_bcsr_free(&K);
    hk_bcsr_free(&C);
}

/* The factor_sweeps op on cuda against cpu on the same scaled input: 3D elasticity lower
 * triangle (ic0) and convection-diffusion (ilu0), 1, 3 and 30 sweeps; the same pattern,
 * values to 1e-12; the same bad row on an indefinite matrix; set-up time on 89k DOFs. */
static void fs_input(const hk_bcsr *K, int sym, hk_csr *S)
{
    hk_csr F;
    HK_ASSERT_OK(hk_csr_from_bcsr(K, &F));
    double *sc = malloc(F.n * 8);
    for (int64_t i = 0; i < F.n; i++)
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++)
            if (F.colind[k] == i) sc[i] = 1 / sqrt(fabs(F.val[k]));
    HK_ASSERT_OK(hk_csr_alloc(F.n, F.n, F.rowptr[F.n], S));
    int64_t q = 0;
    for (int64_t i = 0; i < F.n; i++) {
        for (int64_t k = F.rowptr[i]; k < F.rowptr[i + 1]; k++)
            if (!sym || F.colind[k] <= i) {
                S->colind[q] = F.colind[k];
                S->val[q++] = F.val[k] * sc[i] * sc[F.colind[k]];
            }
        S->rowptr[i + 1] = q;
    }
    free(sc);
    hk_csr_free(&F);
}

static void fs_compare(const hk_csr *S, int sym, int sweeps, int64_t *bad_out, double *ms)
{
    const hk_backend *gpu = backend("cuda"), *cpu = backend("cpu");
    hk_bcsr view = {.bs = 1,
                    .nbrows = S->n,
                    .nbcols = S->n,
                    .rowptr = S->rowptr,
                    .colind = S->colind,
                    .val = S->val};
    hk_bmat Ac = {0}, Ag = {0}, Fc = {0}, Fg = {0};
    int64_t bc = -2, bg = -2;
    HK_ASSERT_OK(hk_bmat_upload(cpu, &view, &Ac));
    HK_ASSERT_OK(hk_bmat_upload(gpu, &view, &Ag));
    HK_ASSERT_OK(cpu->factor_sweeps(&Ac, sym, sweeps, &Fc, &bc));
    gpu->sync();
    const double t0 = now();
    HK_ASSERT_OK(gpu->factor_sweeps(&Ag, sym, sweeps, &Fg, &bg));
    gpu->sync();
    if (ms) *ms = (now() - t0) * 1e3;
    CU_ASSERT_EQUAL(bc, bg);
    if (bad_out) *bad_out = bg;
    if (bc < 0 && bg < 0) {
        hk_bcsr Hc = {0}, Hg = {0};
        HK_ASSERT_OK(hk_bmat_to_bcsr(&Fc, &Hc));
        HK_ASSERT_OK(hk_bmat_to_bcsr(&Fg, &Hg));
        const int64_t nnz = S->rowptr[S->n];
        CU_ASSERT(!memcmp(Hc.rowptr, Hg.rowptr, (S->n + 1) * 8));
        CU_ASSERT(!memcmp(Hc.colind, Hg.colind, nnz * 4));
        const double d = hk_test_reldiff(Hg.val, Hc.val, nnz);
        if (!(d < 1e-12)) printf("\n    sym %d sweeps %d: rel diff %g", sym, sweeps, d);
        CU_ASSERT(d < 1e-12);
        hk_bcsr_free(&Hc), hk_bcsr_free(&Hg);
    }
    hk_bmat_free(&Ac), hk_bmat_free(&Ag), hk_bmat_free(&Fc), hk_bmat_free(&Fg);
}

static void test_factor_sweeps_vs_cpu(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(backend("cuda"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(backend("cuda")->factor_sweeps);
    hk_bcsr K, C;
    hk_csr S;
    HK_ASSERT_OK(hk_gen_elasticity3d(8, 7, 6, &K));
    HK_ASSERT_OK(hk_gen_convdiff2d(30, 40, &C));
    const int sw[] = {1, 3, 30};
    for (int s = 0; s < 3; s++) {
        fs_input(&K, 1, &S);
        fs_compare(&S, 1, sw[s], NULL, NULL);
        hk_csr_free(&S);
        fs_input(&C, 0, &S);
        fs_compare(&S, 0, sw[s], NULL, NULL);
        hk_csr_free(&S);
    }
    /* indefinite tridiag(-2, 1, -2): the pivot of row 1 fails in ic0 */
    hk_bcsr T = {.bs = 1, .nbrows = 4, .nbcols = 4};
    int64_t rp[5] = {0, 2, 5, 8, 10};
    int32_t ci[10] = {0, 1, 0, 1, 2, 1, 2, 3, 2, 3};
    double v[10] = {1, -2, -2, 1, -2, -2, 1, -2, -2, 1};
    T.rowptr = rp, T.colind = ci, T.val = v;
    int64_t bad = -1;
    fs_input(&T, 1, &S);
    fs_compare(&S, 1, 5, &bad, NULL);
    CU_ASSERT_EQUAL(bad, 1);
    hk_csr_free(&S);
    hk_bcsr_free(&K), hk_bcsr_free(&C);
    /* time on 3D elasticity 30^3 (89k dofs), 3 sweeps */
    HK_ASSERT_OK(hk_gen_elasticity3d(30, 30, 30, &K));
    double ms = 0;
    fs_input(&K, 1, &S);
    fs_compare(&S, 1, 3, NULL, &ms);
    printf("\n    ic0 3 sweeps on the device, 89k dofs: %.2f ms", ms);
    hk_csr_free(&S);
    hk_bcsr_free(&K);
}

/* Each solve against the CPU's on generated and FE factors: suite syncfree_cuda
 * (tests/test_syncfree.c). */
HK_DEVICE_SUITE(trisolve_cuda,
                {"ic0 apply time per ordering and solve method (89k dofs)", test_solve_timings},
                {"iterative IC(0)/ILU(0) sweeps on cuda equal cpu; bad pivot row",
                 test_factor_sweeps_vs_cpu},
                {"ic0/ilu0 iterations equal on cpu and cuda per ordering and method",
                 test_iterations_both_backends})
