/* Block IC(0) and ILU(0) on the node blocks (pc.ic0.block=1, pc.ilu0.block=1): exact on
 * block tridiagonal matrices, equal to dense references of the block recurrences on 3D
 * elasticity (every ordering), equal to the scalar factorisations (the scalar IC(0)/ILU(0) of
 * a pattern made of full node blocks is the block one: both are the unique factor with
 * (L L^T)_ij = a_ij, resp. (L U)_ij = a_ij, on the stored entries), CG iterations through the
 * solver options and `hooke solve`, pivot and option errors; on every backend. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#include "pc/pc_impl.h"

static void rhs(long n, double *r)
{
    for (long i = 0; i < n; i++)
        r[i] = 1 + 0.3 * sin(0.7 * (double)i) + 0.1 * (double)(i % 5);
}

/* The node-block pattern of K as an nb x nb 0/1 table. */
static char *block_pattern(const hk_bcsr *K)
{
    const int64_t nb = K->nbrows;
    char *pat = calloc((size_t)(nb * nb), 1);
    for (int64_t i = 0; i < nb; i++)
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++)
            pat[i * nb + K->colind[p]] = 1;
    return pat;
}

/* x = A^-1 b by Gaussian elimination with partial pivoting (A, b overwritten). */
static void dense_solve(long n, double *A, double *b, double *x)
{
    for (long k = 0; k < n; k++) {
        long m = k;
        for (long i = k + 1; i < n; i++)
            if (fabs(A[i * n + k]) > fabs(A[m * n + k])) m = i;
        for (long j = 0; j < n; j++) {
            double t = A[k * n + j];
            A[k * n + j] = A[m * n + j], A[m * n + j] = t;
        }
        double t = b[k];
        b[k] = b[m], b[m] = t;
        for (long i = k + 1; i < n; i++) {
            const double l = A[i * n + k] / A[k * n + k];
            for (long j = k; j < n; j++)
                A[i * n + j] -= l * A[k * n + j];
            b[i] -= l * b[k];
        }
    }
    for (long i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (long j = i + 1; j < n; j++)
            s -= A[i * n + j] * x[j];
        x[i] = s / A[i * n + i];
    }
}

/* Block tridiagonal with full bs x bs blocks (nb block rows); sym = 0: unequal couplings. */
static void block_tridiag(int64_t nb, int bs, int sym, hk_bcsr *K)
{
    const int bb = bs * bs;
    K->bs = bs;
    K->nbrows = K->nbcols = nb;
    K->rowptr = malloc((nb + 1) * sizeof *K->rowptr);
    K->colind = malloc(3 * nb * sizeof *K->colind);
    K->val = malloc(3 * nb * bb * sizeof *K->val);
    int64_t q = 0;
    K->rowptr[0] = 0;
    for (int64_t b = 0; b < nb; b++) {
        for (int64_t c = b - 1; c <= b + 1; c++) {
            if (c < 0 || c >= nb) continue;
            K->colind[q] = (int32_t)c;
            for (int i = 0; i < bs; i++)
                for (int j = 0; j < bs; j++) {
                    double v;
                    if (c == b)
                        v = i == j ? 12 + 0.1 * (b % 3) : 0.5 + 0.1 * (i + j);
                    else if (c == b + 1) /* upper block (b, b+1) */
                        v = -1.0 + 0.2 * i - 0.1 * j;
                    else /* lower block (b, b-1): the transpose of (b-1, b), or not */
                        v = sym ? -1.0 + 0.2 * j - 0.1 * i
                                : 0.7 * (-1.0 + 0.2 * j - 0.1 * i) + 0.05;
                    K->val[q * bb + i * bs + j] = v;
                }
            q++;
        }
        K->rowptr[b + 1] = q;
    }
}

/* Block tridiagonal: no fill, so block IC(0) / ILU(0) are exact, M^-1 r = A^-1 r (natural
 * order; bs 2 and 3). */
static void test_block_tridiag_exact(void)
{
    const struct {
        const char *pc, *opts;
        int sym;
    } cases[] = {{"ic0", "pc.ordering=natural pc.ic0.block=1", 1},
                 {"ilu0", "pc.ordering=natural pc.ilu0.block=1", 0}};
    for (int bs = 2; bs <= 3; bs++)
        for (int c = 0; c < 2; c++) {
            hk_bcsr K;
            block_tridiag(9, bs, cases[c].sym, &K);
            const long n = 9L * bs;
            double *A = hk_test_dense_of(&K), r[27], b[27], ref[27], z[27];
            rhs(n, r);
            memcpy(b, r, sizeof b);
            dense_solve(n, A, b, ref);
            for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
                if (!(*be)->tri_setup) continue;
                HK_ASSERT_OK(
                    hk_test_apply_pc(*be, HK_FP64, &K, cases[c].pc, cases[c].opts, r, z, NULL));
                CU_ASSERT(hk_test_reldiff(z, ref, n) < 1e-12);
                HK_ASSERT_OK(
                    hk_test_apply_pc(*be, HK_FP32, &K, cases[c].pc, cases[c].opts, r, z, NULL));
                CU_ASSERT(hk_test_reldiff(z, ref, n) < 1e-5);
            }
            free(A);
            hk_bcsr_free(&K);
        }
}

/* Dense block IC(0) of A (nb blocks of bs, block pattern pat), left-looking by blocks, then
 * z = L^-T L^-1 r. Returns 0, or -1 when a pivot block is not positive definite. */
static int dense_block_ic0_solve(int64_t nb, int bs, const double *A, const char *pat,
                                 const double *r, double *z)
{
    const long n = nb * bs;
    double *L = calloc((size_t)n * n, sizeof *L);
#define LV(i, j) L[(long)(i)*n + (j)]
    for (int64_t I = 0; I < nb; I++)
        for (int64_t J = 0; J <= I; J++) {
            if (!pat[I * nb + J]) continue;
            double S[9];
            for (int a = 0; a < bs; a++)
                for (int c = 0; c < bs; c++) {
                    double s = A[(I * bs + a) * n + J * bs + c];
                    for (int64_t Kb = 0; Kb < J; Kb++)
                        if (pat[I * nb + Kb] && pat[J * nb + Kb])
                            for (int d = 0; d < bs; d++)
                                s -= LV(I * bs + a, Kb * bs + d) * LV(J * bs + c, Kb * bs + d);
                    S[a * bs + c] = s;
                }
            if (J == I) { /* plain Cholesky of S */
                for (int c = 0; c < bs; c++) {
                    double d = S[c * bs + c];
                    for (int k = 0; k < c; k++)
                        d -= LV(I * bs + c, I * bs + k) * LV(I * bs + c, I * bs + k);
                    if (!(d > 0)) return free(L), -1;
                    LV(I * bs + c, I * bs + c) = sqrt(d);
                    for (int a = c + 1; a < bs; a++) {
                        double s = S[a * bs + c];
                        for (int k = 0; k < c; k++)
                            s -= LV(I * bs + a, I * bs + k) * LV(I * bs + c, I * bs + k);
                        LV(I * bs + a, I * bs + c) = s / LV(I * bs + c, I * bs + c);
                    }
                }
            } else { /* L_IJ = S L_JJ^-T */
                for (int a = 0; a < bs; a++)
                    for (int c = 0; c < bs; c++) {
                        double s = S[a * bs + c];
                        for (int d = 0; d < c; d++)
                            s -= LV(J * bs + c, J * bs + d) * LV(I * bs + a, J * bs + d);
                        LV(I * bs + a, J * bs + c) = s / LV(J * bs + c, J * bs + c);
                    }
            }
        }
#undef LV
    memcpy(z, r, (size_t)n * sizeof *z);
    hk_test_cholesky_solve(n, L, z);
    free(L);
    return 0;
}

/* Dense block ILU(0) (IKJ by blocks, pivot blocks inverted by Gaussian elimination), then
 * z = U_B^-1 L_B^-1 r with the block factors (unit block lower L_B, block upper U_B). */
static void dense_block_ilu0_solve(int64_t nb, int bs, const double *A0, const char *pat,
                                   const double *r, double *z)
{
    const long n = nb * bs;
    double *A = malloc((size_t)n * n * sizeof *A), *Dinv = malloc((size_t)nb * 9 * sizeof *Dinv);
    memcpy(A, A0, (size_t)n * n * sizeof *A);
#define AV(i, j) A[(long)(i)*n + (j)]
    for (int64_t I = 0; I < nb; I++) {
        for (int64_t J = 0; J < I; J++) {
            if (!pat[I * nb + J]) continue;
            double X[9];
            for (int a = 0; a < bs; a++)
                for (int c = 0; c < bs; c++) {
                    double s = 0;
                    for (int d = 0; d < bs; d++)
                        s += AV(I * bs + a, J * bs + d) * Dinv[J * 9 + d * bs + c];
                    X[a * bs + c] = s;
                }
            for (int a = 0; a < bs; a++)
                for (int c = 0; c < bs; c++)
                    AV(I * bs + a, J * bs + c) = X[a * bs + c];
            for (int64_t Kb = J + 1; Kb < nb; Kb++)
                if (pat[I * nb + Kb] && pat[J * nb + Kb])
                    for (int a = 0; a < bs; a++)
                        for (int c = 0; c < bs; c++)
                            for (int d = 0; d < bs; d++)
                                AV(I * bs + a, Kb * bs + c) -=
                                    X[a * bs + d] * AV(J * bs + d, Kb * bs + c);
        }
        for (int c = 0; c < bs; c++) { /* column c of D_I^-1 */
            double D[9], e[3], x[3];
            for (int a = 0; a < bs; a++) {
                for (int d = 0; d < bs; d++)
                    D[a * bs + d] = AV(I * bs + a, I * bs + d);
                e[a] = a == c;
            }
            dense_solve(bs, D, e, x);
            for (int a = 0; a < bs; a++)
                Dinv[I * 9 + a * bs + c] = x[a];
        }
    }
    double *y = malloc(n * sizeof *y);
    for (int64_t I = 0; I < nb; I++) /* L_B y = r */
        for (int a = 0; a < bs; a++) {
            double s = r[I * bs + a];
            for (long k = 0; k < I * bs; k++)
                if (pat[I * nb + k / bs]) s -= AV(I * bs + a, k) * y[k];
            y[I * bs + a] = s;
        }
    for (int64_t I = nb - 1; I >= 0; I--) { /* U_B z = y: z_I = D_I^-1 (y_I - sum U_IK z_K) */
        double s[3];
        for (int a = 0; a < bs; a++) {
            s[a] = y[I * bs + a];
            for (long k = (I + 1) * bs; k < n; k++)
                if (pat[I * nb + k / bs]) s[a] -= AV(I * bs + a, k) * z[k];
        }
        for (int a = 0; a < bs; a++) {
            z[I * bs + a] = 0;
            for (int d = 0; d < bs; d++)
                z[I * bs + a] += Dinv[I * 9 + a * bs + d] * s[d];
        }
    }
#undef AV
    free(A), free(Dinv), free(y);
}

/* K with unequal off-diagonal blocks (a nonsymmetric matrix of the elasticity pattern). */
static void skew(hk_bcsr *K)
{
    const int bb = K->bs * K->bs;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++)
            if (K->colind[p] != i)
                for (int e = 0; e < bb; e++)
                    K->val[p * bb + e] *= K->colind[p] > i ? 1.3 : 0.75;
}

/* On 3D elasticity (fill dropped) in each ordering, the block ic0 / ilu0 applies equal
 * P^T M^-1 P r of the dense block recurrences on P A P^T written above, and the scalar
 * factorisations' applies (the same factors); fp32 loosely. */
static void test_block_dense_reference(void)
{
    hk_bcsr K, S, P;
    HK_ASSERT_OK(hk_gen_elasticity3d(3, 3, 2, &K));
    HK_ASSERT_OK(hk_bcsr_copy(&K, &S));
    skew(&S);
    const int bs = K.bs;
    const int64_t nb = K.nbrows;
    const long n = nb * bs;
    double *r = malloc(n * 8), *pr = malloc(n * 8), *pz = malloc(n * 8), *ref = malloc(n * 8),
           *z = malloc(n * 8), *zs = malloc(n * 8);
    rhs(n, r);
    for (int sym = 1; sym >= 0; sym--) {
        const hk_bcsr *A = sym ? &K : &S;
        const char *pc = sym ? "ic0" : "ilu0";
        for (int kind = HK_ORDER_NATURAL; kind <= HK_ORDER_COLOUR; kind++) {
            int32_t *perm = NULL;
            int64_t nc;
            HK_ASSERT_OK(hk_node_ordering(A, kind, &perm, &nc));
            if (perm)
                HK_ASSERT_OK(hk_bcsr_permute(A, perm, &P));
            else
                HK_ASSERT_OK(hk_bcsr_copy(A, &P));
            double *D = hk_test_dense_of(&P);
            char *pat = block_pattern(&P);
            for (int64_t i = 0; i < nb; i++)
                for (int a = 0; a < bs; a++)
                    pr[i * bs + a] = r[(perm ? perm[i] : i) * bs + a];
            if (sym) {
                CU_ASSERT_EQUAL_FATAL(dense_block_ic0_solve(nb, bs, D, pat, pr, pz), 0);
            } else {
                dense_block_ilu0_solve(nb, bs, D, pat, pr, pz);
            }
            for (int64_t i = 0; i < nb; i++)
                for (int a = 0; a < bs; a++)
                    ref[(perm ? perm[i] : i) * bs + a] = pz[i * bs + a];
            char opts[96], scal[96];
            snprintf(opts, sizeof opts, "pc.ordering=%s pc.%s.block=1", hk_ordering_names[kind],
                     pc);
            snprintf(scal, sizeof scal, "pc.ordering=%s", hk_ordering_names[kind]);
            for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
                if (!(*be)->tri_setup) continue;
                HK_ASSERT_OK(hk_test_apply_pc(*be, HK_FP64, A, pc, opts, r, z, NULL));
                const double d = hk_test_reldiff(z, ref, n);
                if (d >= 1e-11) printf("\n    %s %s %s: %g", hk_backend_name(*be), pc, opts, d);
                CU_ASSERT(d < 1e-11);
                HK_ASSERT_OK(hk_test_apply_pc(*be, HK_FP64, A, pc, scal, r, zs, NULL));
                CU_ASSERT(hk_test_reldiff(zs, z, n) < 1e-11);
                HK_ASSERT_OK(hk_test_apply_pc(*be, HK_FP32, A, pc, opts, r, z, NULL));
                CU_ASSERT(hk_test_reldiff(z, ref, n) < 1e-4);
            }
            free(D), free(pat), free(perm);
            hk_bcsr_free(&P);
        }
    }
    free(r), free(pr), free(pz), free(ref), free(z), free(zs);
    hk_bcsr_free(&K);
    hk_bcsr_free(&S);
}

/* cg+ic0 block vs scalar on 3D elasticity per ordering, through the solver options: the same
 * factor, so the same iterations (within one, for round-off at the tolerance); gmres+ilu0
 * likewise on the nonsymmetric variant. */
static void test_block_iterations(void)
{
    hk_bcsr K, S;
    HK_ASSERT_OK(hk_gen_elasticity3d(8, 6, 6, &K));
    HK_ASSERT_OK(hk_bcsr_copy(&K, &S));
    skew(&S);
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        if (!(*be)->tri_setup) continue;
        const char *bn = hk_backend_name(*be);
        const int jac = hk_test_solve_iterations(&K, bn, "method=cg pc=jacobi", rhs);
        printf("\n    %s: cg jacobi %d", bn, jac);
        for (int kind = 0; kind < 3; kind++) {
            char o[160];
            snprintf(o, sizeof o, "method=cg pc=ic0 pc.ordering=%s", hk_ordering_names[kind]);
            const int sc = hk_test_solve_iterations(&K, bn, o, rhs);
            strcat(o, " pc.ic0.block=1");
            const int bl = hk_test_solve_iterations(&K, bn, o, rhs);
            snprintf(o, sizeof o, "method=gmres pc=ilu0 pc.ordering=%s", hk_ordering_names[kind]);
            const int gs = hk_test_solve_iterations(&S, bn, o, rhs);
            strcat(o, " pc.ilu0.block=1");
            const int gb = hk_test_solve_iterations(&S, bn, o, rhs);
            printf("; %s ic0 %d block %d, ilu0 %d block %d", hk_ordering_names[kind], sc, bl, gs,
                   gb);
            CU_ASSERT(bl > 0 && bl < jac && abs(bl - sc) <= 1);
            CU_ASSERT(gb > 0 && abs(gb - gs) <= 1);
        }
    }
    hk_bcsr_free(&K);
    hk_bcsr_free(&S);
}

/* `hooke solve` takes the option like any other and converges in the scalar count. */
static void test_block_solve_cmd(void)
{
    char out[8192];
    int it[2];
    for (int b = 0; b < 2; b++) {
        char args[256];
        snprintf(args, sizeof args,
                 "--generate elasticity3d:6 --backend cpu method=cg pc=ic0 pc.ic0.block=%d "
                 "tol=1e-8",
                 b);
        const int rc = hk_test_solve_cmd(args, out, sizeof out);
        if (rc) fprintf(stderr, "\n%s\n", out);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        const char *s = strstr(out, "iterations:");
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        it[b] = atoi(s + 11);
    }
    printf("\n    hooke solve elasticity3d:6 cg+ic0: scalar %d, block %d", it[0], it[1]);
    CU_ASSERT(it[1] > 0 && abs(it[1] - it[0]) <= 1);
    CU_ASSERT_EQUAL(
        hk_test_solve_cmd("--generate elasticity3d:4 --backend cpu pc=ic0 pc.ic0.block=2", out, sizeof out),
        2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "pc.ic0.block"));
}

/* A pivot block that is not positive definite (ic0) or singular (ilu0) is named by its node;
 * option errors. */
static void test_block_errors(void)
{
    const hk_backend *cpu = hk_test_backends()[0];
    hk_bcsr K;
    block_tridiag(4, 3, 1, &K);
    /* node 2's diagonal block becomes indefinite: its (1, 1) entry is made negative */
    const int64_t p2 = K.rowptr[2] + 1; /* (2, 2) is the second block of row 2 */
    CU_ASSERT_EQUAL_FATAL(K.colind[p2], 2);
    K.val[p2 * 9 + 4] = -20;
    double r[12], z[12];
    rhs(12, r);
    CU_ASSERT_EQUAL(hk_test_apply_pc(cpu, HK_FP64, &K, "ic0", "pc.ic0.block=1", r, z, NULL),
                    HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "pivot block of node 3 is not positive"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "scalar row 8"));
    CU_ASSERT_EQUAL(
        hk_test_apply_pc(cpu, HK_FP64, &K, "ic0", "pc.ic0.block=1 pc.ordering=rcm", r, z, NULL),
        HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "reordered"));
    /* ilu0: node 1's block made singular (two equal rows) */
    const int64_t p1 = K.rowptr[1] + 1;
    CU_ASSERT_EQUAL_FATAL(K.colind[p1], 1);
    for (int c = 0; c < 3; c++)
        K.val[p1 * 9 + 3 + c] = K.val[p1 * 9 + c];
    /* and no coupling to node 0, so the pivot block is the block itself */
    for (int e = 0; e < 9; e++)
        K.val[(p1 - 1) * 9 + e] = 0;
    CU_ASSERT_EQUAL(hk_test_apply_pc(cpu, HK_FP64, &K, "ilu0", "pc.ilu0.block=1", r, z, NULL),
                    HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "pivot block of node 2 is singular"));
    /* options */
    CU_ASSERT_EQUAL(hk_test_apply_pc(cpu, HK_FP64, &K, "ic0", "pc.ic0.block=2", r, z, NULL),
                    HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "pc.ic0.block=2"));
    CU_ASSERT_EQUAL(
        hk_test_apply_pc(cpu, HK_FP64, &K, "ic0", "pc.ic0.block=1 pc.ic0.sweeps=3", r, z, NULL),
        HK_ERR_OPTION);
    CU_ASSERT_EQUAL(
        hk_test_apply_pc(cpu, HK_FP64, &K, "ilu0", "pc.ilu0.block=1 pc.ilu0.sweeps=3", r, z, NULL),
        HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "do not combine"));
    hk_bcsr_free(&K);
}

HK_SUITE(blockilu,
         {"block ic0 / ilu0 are exact on block tridiagonal matrices (bs 2, 3)",
          test_block_tridiag_exact},
         {"block ic0 / ilu0 equal dense block recurrences and the scalar factors, each ordering",
          test_block_dense_reference},
         {"cg+ic0, gmres+ilu0: block and scalar iterations agree (3D elasticity)",
          test_block_iterations},
         {"hooke solve with pc.ic0.block", test_block_solve_cmd},
         {"not-SPD and singular pivot blocks name the node; option errors", test_block_errors})
