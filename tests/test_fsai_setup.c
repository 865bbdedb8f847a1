/* FSAI set-up ops (fsai_pattern, fsai_factor; contracts in solver/hk_impl.h): the CPU ops
 * against a dense computation here (pattern by boolean products Low(B Ã), G by Gaussian
 * elimination on A[P,P]), diag(G A G^T) = 1, faults, pc=fsai converging with both patterns;
 * the device suite compares the CUDA ops with the CPU ones. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"
#include "pc/pc_impl.h"

static double urand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / (double)(1u << 24) * 2.0 - 1.0;
}

/* Random symmetric, diagonally dominant n x n dense matrix (n = nb*bs) with node-block
 * sparsity, as a block CSR (all bs x bs entries of a stored block). */
static double *gen_spd(int nb, int bs, unsigned seed, hk_bcsr *K)
{
    const int n = nb * bs;
    uint32_t s = seed * 2654435761u + 7u;
    double *D = calloc((size_t)n * n, sizeof *D);
    char *link = calloc((size_t)nb * nb, 1);
    for (int I = 0; I < nb; I++) {
        link[I * nb + I] = 1;
        for (int t = 0; t < 3; t++) {
            int J = (int)((urand(&s) + 1) / 2 * nb) % nb;
            link[I * nb + J] = link[J * nb + I] = 1;
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (link[(i / bs) * nb + j / bs]) D[i * n + j] = D[j * n + i] = urand(&s);
    for (int i = 0; i < n; i++) {
        double r = 0;
        for (int j = 0; j < n; j++)
            r += i == j ? 0 : fabs(D[i * n + j]);
        D[i * n + i] = r * (0.6 + 0.3 * (urand(&s) + 1)) + 0.1; /* not always dominant */
    }
    memset(K, 0, sizeof *K);
    K->bs = bs;
    K->nbrows = K->nbcols = nb;
    K->rowptr = calloc((size_t)nb + 1, sizeof *K->rowptr);
    K->colind = malloc((size_t)nb * nb * sizeof *K->colind);
    K->val = malloc((size_t)nb * nb * bs * bs * sizeof *K->val);
    int64_t q = 0;
    for (int I = 0; I < nb; I++) {
        for (int J = 0; J < nb; J++) {
            if (!link[I * nb + J]) continue;
            K->colind[q] = J;
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++)
                    K->val[(q * bs + r) * bs + c] = D[(I * bs + r) * n + J * bs + c];
            q++;
        }
        K->rowptr[I + 1] = q;
    }
    free(link);
    return D;
}

/* Dense reference pattern: R[i*n+j] = 1 when j is in row i of the FSAI pattern. */
static char *ref_pattern(const double *D, int n, int bs, double tau, int k, int block)
{
    const int b = block ? bs : 1, nn = n / b;
    char *At = calloc((size_t)nn * nn, 1), *B = calloc((size_t)nn * nn, 1),
         *C = calloc((size_t)nn * nn, 1);
    double *dg = calloc((size_t)nn, sizeof *dg);
    for (int I = 0; I < nn; I++) { /* node diagonal: a_ii or ||A_II||_F */
        double s = 0;
        for (int r = 0; r < b; r++)
            for (int c = 0; c < b; c++)
                s += D[(I * b + r) * n + I * b + c] * D[(I * b + r) * n + I * b + c];
        dg[I] = block ? sqrt(s) : D[I * n + I];
    }
    for (int I = 0; I < nn; I++)
        for (int J = 0; J < nn; J++) {
            double s = 0, nz = 0;
            for (int r = 0; r < b; r++)
                for (int c = 0; c < b; c++) {
                    double v = D[(I * b + r) * n + J * b + c];
                    s += v * v;
                    nz += v != 0;
                }
            At[I * nn + J] = I == J || (nz && sqrt(s) > tau * sqrt(dg[I] * dg[J]));
        }
    for (int I = 0; I < nn; I++)
        B[I * nn + I] = 1;
    for (int p = 0; p < k; p++) { /* B = Low(B Ã) */
        for (int I = 0; I < nn; I++)
            for (int J = 0; J <= I; J++) {
                char v = 0;
                for (int L = 0; L < nn && !v; L++)
                    v = B[I * nn + L] && At[L * nn + J];
                C[I * nn + J] = v;
            }
        memcpy(B, C, (size_t)nn * nn);
        memset(C, 0, (size_t)nn * nn);
    }
    char *R = calloc((size_t)n * n, 1);
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++)
            R[i * n + j] = B[(i / b) * nn + j / b];
    free(At), free(B), free(C), free(dg);
    return R;
}

/* Dense reference G (n x n row-major) on pattern R: Gaussian elimination with partial
 * pivoting on A[P,P] w = e_m, scaling, post-filtration. */
static double *ref_factor(const double *D, int n, const char *R, double delta)
{
    double *G = calloc((size_t)n * n, sizeof *G);
    int *P = malloc(n * sizeof *P);
    double *M = malloc((size_t)n * (n + 1) * sizeof *M), *w = malloc(n * sizeof *w);
    for (int i = 0; i < n; i++) {
        int m = 0;
        for (int j = 0; j <= i; j++)
            if (R[i * n + j]) P[m++] = j;
        const int W = m + 1;
        for (int a = 0; a < m; a++) {
            for (int c = 0; c < m; c++)
                M[a * W + c] = D[P[a] * n + P[c]];
            M[a * W + m] = a == m - 1;
        }
        for (int c = 0; c < m; c++) {
            int p = c;
            for (int r = c + 1; r < m; r++)
                if (fabs(M[r * W + c]) > fabs(M[p * W + c])) p = r;
            for (int e = 0; e < W; e++) {
                double t = M[c * W + e];
                M[c * W + e] = M[p * W + e];
                M[p * W + e] = t;
            }
            for (int r = 0; r < m; r++) {
                if (r == c) continue;
                double f = M[r * W + c] / M[c * W + c];
                for (int e = c; e < W; e++)
                    M[r * W + e] -= f * M[c * W + e];
            }
        }
        for (int a = 0; a < m; a++)
            w[a] = M[a * W + m] / M[a * W + a];
        double s = 1 / sqrt(w[m - 1]), nrm = 0;
        for (int a = 0; a < m; a++) {
            w[a] *= s;
            nrm += w[a] * w[a];
        }
        nrm = sqrt(nrm);
        double e = 0;
        for (int a = 0; a < m - 1; a++)
            for (int b = 0; b < m - 1; b++)
                if (fabs(w[a]) <= delta * nrm && fabs(w[b]) <= delta * nrm)
                    e += w[a] * D[P[a] * n + P[b]] * w[b];
        for (int a = 0; a < m; a++)
            if (a == m - 1 || fabs(w[a]) > delta * nrm) G[i * n + P[a]] = w[a] / sqrt(1 + e);
    }
    free(P), free(M), free(w);
    return G;
}

static int64_t ops_cap = 600; /* the pattern's row limit in run_ops */

/* Run both ops on be; host copies of S and G (NULL when a fault). */
static void run_ops(const hk_backend_ops *be, const hk_bcsr *K, double tau, int k, int block,
                    double delta, hk_graph *Sh, hk_bmat *Gh, hk_setup_fault *f)
{
    hk_bmat Kb = {0}, G = {0};
    hk_graph S = {0};
    memset(Sh, 0, sizeof *Sh);
    memset(Gh, 0, sizeof *Gh);
    HK_ASSERT_OK(hk_bmat_upload(be, K, &Kb));
    HK_ASSERT_OK(be->fsai_pattern(&Kb, tau, k, block, ops_cap, &S, f));
    if (f->row < 0) {
        HK_ASSERT_OK(be->fsai_factor(&Kb, &S, delta, &G, f));
        HK_ASSERT_OK(hk_graph_to_host(&S, Sh));
        if (f->row < 0) HK_ASSERT_OK(hk_bmat_to_host(&G, Gh));
    }
    hk_graph_free(&S);
    hk_bmat_free(&G);
    hk_bmat_free(&Kb);
}

static void test_ops_vs_dense(void)
{
    static const struct {
        int nb, bs, k, block;
        double tau, delta;
    } cases[] = {{30, 1, 1, 0, 0.0, 0.0},  {30, 1, 2, 0, 0.05, 0.01}, {20, 2, 2, 0, 0.1, 0.05},
                 {20, 3, 2, 0, 0.05, 0.0}, {20, 3, 2, 1, 0.05, 0.01}, {15, 2, 3, 1, 0.2, 0.1},
                 {12, 3, 1, 1, 0.0, 0.0},  {1, 3, 2, 1, 0.0, 0.0}};
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        hk_bcsr K;
        double *D = gen_spd(cases[c].nb, cases[c].bs, 11 + c, &K);
        const int n = cases[c].nb * cases[c].bs;
        char *R = ref_pattern(D, n, cases[c].bs, cases[c].tau, cases[c].k, cases[c].block);
        double *Gr = ref_factor(D, n, R, cases[c].delta);
        hk_graph S;
        hk_bmat G;
        hk_setup_fault f;
        run_ops(&hk_backend_cpu, &K, cases[c].tau, cases[c].k, cases[c].block, cases[c].delta,
                &S, &G, &f);
        CU_ASSERT_EQUAL(f.row, -1);
        int pat_ok = S.n == n, g_ok = G.nbrows == n;
        double gmax = 0, diff = 0;
        for (int i = 0; pat_ok && i < n; i++) {
            int cnt = 0;
            for (int j = 0; j < n; j++)
                cnt += R[i * n + j];
            pat_ok &= S.rowptr[i + 1] - S.rowptr[i] == cnt;
            for (int64_t p = S.rowptr[i]; pat_ok && p < S.rowptr[i + 1]; p++)
                pat_ok &= R[i * n + S.colind[p]] && (p == S.rowptr[i] || S.colind[p] > S.colind[p - 1]);
        }
        /* G against the dense reference; entries not stored are 0 there too */
        double *Gd = calloc((size_t)n * n, sizeof *Gd);
        for (int i = 0; g_ok && i < n; i++)
            for (int64_t p = G.rowptr[i]; p < G.rowptr[i + 1]; p++)
                Gd[i * n + G.colind[p]] = G.val[p];
        for (int e = 0; e < n * n; e++) {
            gmax = fmax(gmax, fabs(Gr[e]));
            diff = fmax(diff, fabs(Gd[e] - Gr[e]));
        }
        /* diag(G A G^T) = 1 */
        double dmax = 0;
        for (int i = 0; i < n; i++) {
            double s = 0;
            for (int a = 0; a < n; a++)
                for (int b = 0; b < n; b++)
                    s += Gd[i * n + a] * D[a * n + b] * Gd[i * n + b];
            dmax = fmax(dmax, fabs(s - 1));
        }
        if (!pat_ok || !g_ok || diff > 1e-12 * gmax || dmax > 1e-12)
            printf("\n    case %u: pattern %s, G diff %.2e (max %.2e), diag(GAG^T)-1 %.2e", c,
                   pat_ok ? "ok" : "differs", diff, gmax, dmax);
        CU_ASSERT(pat_ok && g_ok);
        CU_ASSERT(diff <= 1e-12 * gmax);
        CU_ASSERT(dmax <= 1e-12);
        free(Gd), free(Gr), free(R), free(D);
        hk_graph_free(&S);
        hk_bmat_free(&G);
        hk_bcsr_free(&K);
    }
}

static hk_bcsr dense_bcsr(int n, const double *D)
{
    hk_bcsr K = {.bs = 1, .nbrows = n, .nbcols = n};
    K.rowptr = calloc(n + 1, sizeof *K.rowptr);
    K.colind = malloc((size_t)n * n * sizeof *K.colind);
    K.val = malloc((size_t)n * n * sizeof *K.val);
    int64_t q = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++)
            if (D[i * n + j] != 0) {
                K.colind[q] = j;
                K.val[q++] = D[i * n + j];
            }
        K.rowptr[i + 1] = q;
    }
    return K;
}

/* n x n dense D as a block CSR of bs x bs blocks (the blocks with a nonzero entry). */
static hk_bcsr dense_bcsr_blocks(int n, int bs, const double *D)
{
    const int nb = n / bs;
    hk_bcsr K = {.bs = bs, .nbrows = nb, .nbcols = nb};
    K.rowptr = calloc(nb + 1, sizeof *K.rowptr);
    K.colind = malloc((size_t)nb * nb * sizeof *K.colind);
    K.val = malloc((size_t)n * n * sizeof *K.val);
    int64_t q = 0;
    for (int I = 0; I < nb; I++) {
        for (int J = 0; J < nb; J++) {
            int nz = 0;
            for (int e = 0; e < bs * bs; e++)
                nz |= D[(I * bs + e / bs) * n + J * bs + e % bs] != 0;
            if (!nz) continue;
            K.colind[q] = J;
            for (int e = 0; e < bs * bs; e++)
                K.val[q * bs * bs + e] = D[(I * bs + e / bs) * n + J * bs + e % bs];
            q++;
        }
        K.rowptr[I + 1] = q;
    }
    return K;
}

/* Node pattern (bs 3, tau 0, k 1) on two nodes where node 1's rows 3, 4, 5 share a factor of
 * A[0..5, 0..5]. bad = 0: a_44 = 1 coupled to a_00 = 2 by 3, so A[0..4, 0..4] is indefinite
 * while A[0..3, 0..3] is not: row 4 is the first failing row. bad = 1: a_35 != a_53, so only
 * row 5's local matrix is not symmetric. */
static hk_bcsr node_fault_matrix(int bad)
{
    double D[36] = {0};
    for (int i = 0; i < 6; i++)
        D[i * 6 + i] = bad ? 4 : 2;
    D[1 * 6 + 3] = D[3 * 6 + 1] = 0.5;
    if (!bad) {
        D[4 * 6 + 4] = 1;
        D[0 * 6 + 4] = D[4 * 6 + 0] = 3;
    } else {
        D[3 * 6 + 5] = 1;
        D[5 * 6 + 3] = 1.5;
    }
    return dense_bcsr_blocks(6, 3, D);
}

static void test_faults(void)
{
    hk_graph S;
    hk_bmat G;
    hk_setup_fault f;
    /* rows 0-1 fine, row 2's local matrix [[2,0,3],[0,2,0],[3,0,2]] is indefinite */
    const double D1[16] = {2, 0, 3, 0, 0, 2, 0, 0, 3, 0, 2, 0, 0, 0, 0, 2};
    hk_bcsr K = dense_bcsr(4, D1);
    run_ops(&hk_backend_cpu, &K, 0, 1, 0, 0, &S, &G, &f);
    CU_ASSERT_EQUAL(f.row, 2);
    CU_ASSERT_EQUAL(f.reason, HK_FAULT_NOT_SPD);
    hk_graph_free(&S);
    /* the preconditioner names the row in one sentence */
    hk_options *o;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu pc=fsai pc.fsai.tau=0 pc.fsai.k=1"));
    CU_ASSERT_EQUAL(hk_solver_create(&K, o, &s), HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "row 2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "not positive definite"));
    hk_solver_destroy(s);
    hk_options_destroy(o);
    hk_bcsr_free(&K);
    /* node pattern: the node's shared factor fails, the first failing row of the node is
     * named (not the node's first or last row) */
    for (int bad = 0; bad < 2; bad++) {
        K = node_fault_matrix(bad);
        run_ops(&hk_backend_cpu, &K, 0, 1, 1, 0, &S, &G, &f);
        CU_ASSERT_EQUAL(f.row, bad ? 5 : 4);
        CU_ASSERT_EQUAL(f.reason, bad ? HK_FAULT_ASYMMETRIC : HK_FAULT_NOT_SPD);
        hk_graph_free(&S);
        hk_bcsr_free(&K);
    }
    K = node_fault_matrix(0);
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu pc=fsai pc.fsai.pattern=block pc.fsai.tau=0 "
                                     "pc.fsai.k=1"));
    s = NULL;
    CU_ASSERT_EQUAL(hk_solver_create(&K, o, &s), HK_ERR_NUMERIC);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "row 4 "));
    hk_solver_destroy(s);
    hk_options_destroy(o);
    hk_bcsr_free(&K);
    /* a zero diagonal and a too-large row */
    const double D2[9] = {1, 0.1, 0, 0.1, 0, 0, 0, 0, 1};
    K = dense_bcsr(3, D2);
    run_ops(&hk_backend_cpu, &K, 0, 1, 0, 0, &S, &G, &f);
    CU_ASSERT_EQUAL(f.row, 1);
    CU_ASSERT_EQUAL(f.reason, HK_FAULT_DIAG);
    hk_bcsr_free(&K);
    hk_bcsr Kr;
    double *D = gen_spd(40, 1, 3, &Kr);
    hk_bmat Kb = {0};
    HK_ASSERT_OK(hk_bmat_upload(&hk_backend_cpu, &Kr, &Kb));
    HK_ASSERT_OK(hk_backend_cpu.fsai_pattern(&Kb, 0, 20, 0, 5, &S, &f));
    CU_ASSERT_EQUAL(f.reason, HK_FAULT_TOO_LARGE);
    CU_ASSERT(f.row >= 5 && f.row < 40);
    CU_ASSERT_PTR_NULL(S.rowptr);
    hk_bmat_free(&Kb);
    hk_bcsr_free(&Kr);
    free(D);
}

static int solve_its_nnz(const hk_bcsr *K, const char *text, int ones, double *setup, int64_t *nnz)
{
    hk_options *o;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, text));
    int err = hk_solver_create(K, o, &s);
    if (err) fprintf(stderr, "\n  %s: %s\n", text, hk_error_message());
    CU_ASSERT_EQUAL_FATAL(err, 0);
    const long n = (long)K->nbrows * K->bs;
    double *b = malloc(n * sizeof *b), *x = calloc(n, sizeof *x);
    const int bs = K->bs;
    for (long i = 0; i < n; i++) { /* ones: b = K 1, as hooke solve --generate */
        b[i] = 1 + 0.1 * (i % 7);
        if (!ones) continue;
        b[i] = 0;
        for (int64_t q = K->rowptr[i / bs]; q < K->rowptr[i / bs + 1]; q++)
            for (int c = 0; c < bs; c++)
                b[i] += K->val[((size_t)q * bs + (size_t)(i % bs)) * bs + (size_t)c];
    }
    hk_result res;
    HK_ASSERT_OK(hk_solver_solve(s, b, x, &res));
    const int ok = hk_reason_converged(res.reason) && res.true_residual < 1e-7;
    CU_ASSERT(ok);
    if (setup) *setup = res.setup_seconds;
    if (nnz) *nnz = hk_pc_fsai_nnz(hk_solver_get_pc(s));
    hk_solver_destroy(s);
    hk_options_destroy(o);
    free(b), free(x);
    return ok ? res.iterations : -1;
}

static int solve_its(const hk_bcsr *K, const char *text, double *setup)
{
    return solve_its_nnz(K, text, 0, setup, NULL);
}

static void test_pc_converges(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 6, 6, &K));
    const int jac = solve_its(&K, "backend=cpu tol=1e-8 pc=jacobi", NULL);
    const int sc = solve_its(&K, "backend=cpu tol=1e-8 pc=fsai pc.fsai.pattern=scalar", NULL);
    const int bl =
        solve_its(&K, "backend=cpu tol=1e-8 pc=fsai pc.fsai.pattern=block pc.fsai.tau=0.05", NULL);
    const int bsr =
        solve_its(&K, "backend=cpu tol=1e-8 format=sbell pc=fsai pc.fsai.pattern=scalar", NULL);
    printf("\n    jacobi %d, fsai scalar %d (sbell %d), block %d", jac, sc, bsr, bl);
    CU_ASSERT(sc > 0 && 2 * sc <= jac);
    CU_ASSERT(bl > 0 && 2 * bl <= jac);
    CU_ASSERT_EQUAL(sc, bsr);
    hk_bcsr_free(&K);
}

/* The defaults on 3D elasticity with b = K 1 (a smooth solution, the hard case for a local
 * preconditioner): the node-block pattern of two steps over the face couplings needs at least
 * 1.4x fewer CG iterations than jacobi with G holding under 0.35 of K's entries; four
 * steps reach 2x. */
static void test_elasticity_ratio(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(16, 16, 16, &K));
    const int64_t nnza = K.rowptr[K.nbrows] * K.bs * K.bs;
    int64_t n2 = 0, n4 = 0;
    const int jac = solve_its_nnz(&K, "backend=cpu tol=1e-8 pc=jacobi", 1, NULL, NULL);
    const int f2 = solve_its_nnz(&K, "backend=cpu tol=1e-8 pc=fsai", 1, NULL, &n2);
    const int f4 = solve_its_nnz(&K, "backend=cpu tol=1e-8 pc=fsai pc.fsai.k=4", 1, NULL, &n4);
    printf("\n    jacobi %d, fsai %d (nnz(G)/nnz(K) %.2f), k=4 %d (%.2f)", jac, f2,
           (double)n2 / nnza, f4, (double)n4 / nnza);
    CU_ASSERT(f2 > 0 && 10 * jac >= 14 * f2);
    CU_ASSERT(20 * n2 < 7 * nnza);
    CU_ASSERT(f4 > 0 && jac >= 2 * f4);
    hk_bcsr_free(&K);
}

/* Adaptive pattern, one round of one column: every row gains the column j < i outside its
 * static pattern with the largest |(A g_i)_j| / sqrt(a_jj) (g_i from the dense reference),
 * when that exceeds eps; with more rounds pc=fsai converges in fewer iterations than the
 * static pattern it starts from, and the cuda backend refuses the option in one sentence. */
static void test_adaptive(void)
{
    hk_bcsr Kr;
    const int nb = 25, bs = 2, n = nb * bs;
    double *D = gen_spd(nb, bs, 5, &Kr);
    char *R = ref_pattern(D, n, bs, 0.1, 1, 0);
    double *G0 = ref_factor(D, n, R, 0);
    hk_bmat Kb = {0};
    hk_graph S0 = {0}, S = {0};
    hk_setup_fault f;
    HK_ASSERT_OK(hk_bmat_upload(&hk_backend_cpu, &Kr, &Kb));
    HK_ASSERT_OK(hk_backend_cpu.fsai_pattern(&Kb, 0.1, 1, 0, 600, &S0, &f));
    CU_ASSERT_EQUAL_FATAL(f.row, -1);
    const double eps = 1e-3;
    HK_ASSERT_OK(hk_cpu_fsai_adaptive(&Kb, &S0, 1, 1, eps, 600, &S, &f));
    CU_ASSERT_EQUAL_FATAL(f.row, -1);
    int ok = 1, grown = 0;
    for (int i = 0; i < n; i++) {
        int best = -1;
        double top = 0;
        for (int j = 0; j < i; j++) {
            if (R[i * n + j]) continue;
            double r = 0;
            for (int b = 0; b < n; b++)
                r += D[j * n + b] * G0[i * n + b];
            const double v = fabs(r) / sqrt(D[j * n + j]);
            if (v > top * (1 + 1e-9)) top = v, best = j;
        }
        char *row = calloc(n, 1);
        for (int j = 0; j < n; j++)
            row[j] = R[i * n + j];
        if (best >= 0 && top > eps) row[best] = 1, grown++;
        int cnt = 0;
        for (int j = 0; j < n; j++)
            cnt += row[j];
        ok &= S.rowptr[i + 1] - S.rowptr[i] == cnt;
        for (int64_t p = S.rowptr[i]; ok && p < S.rowptr[i + 1]; p++)
            ok &= row[S.colind[p]] && (p == S.rowptr[i] || S.colind[p] > S.colind[p - 1]);
        free(row);
    }
    CU_ASSERT(ok);
    CU_ASSERT(grown > n / 2);
    hk_graph_free(&S0), hk_graph_free(&S);
    hk_bmat_free(&Kb);
    hk_bcsr_free(&Kr);
    free(D), free(R), free(G0);

    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 6, 6, &K));
    const int st = solve_its(&K, "backend=cpu tol=1e-8 pc=fsai pc.fsai.k=1", NULL);
    const int ad = solve_its(&K,
                             "backend=cpu tol=1e-8 pc=fsai pc.fsai.k=1 pc.fsai.adaptive=4 "
                             "pc.fsai.adaptive_rho=8",
                             NULL);
    printf("\n    k=1: static %d, adaptive %d iterations", st, ad);
    CU_ASSERT(ad > 0 && ad < st);
    hk_options *o;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu pc=fsai pc.fsai.adaptive=-1"));
    CU_ASSERT_EQUAL(hk_solver_create(&K, o, &s), HK_ERR_OPTION);
    hk_solver_destroy(s);
    hk_options_destroy(o);
    hk_bcsr_free(&K);
}

HK_SUITE(fsai_setup, {"fsai ops vs dense reference: pattern, G to 1e-12, diag(GAG^T) = 1",
                      test_ops_vs_dense},
         {"faults: not SPD, zero diagonal, too large; the pc names the row", test_faults},
         {"pc=fsai converges, scalar and block patterns", test_pc_converges},
         {"defaults: >= 1.4x fewer CG iterations than jacobi on 3D elasticity, k=4 >= 2x",
          test_elasticity_ratio},
         {"adaptive pattern: the column of the largest gradient joins each row", test_adaptive})

/* ---- device: the CUDA ops against the CPU ops ----------------------------------------- */

/* Compare both backends' ops; returns the longest row of the pattern (for a node pattern the
 * size of the largest node system), 0 on a fault. */
static int64_t compare_backends(const hk_bcsr *K, double tau, int k, int block, double delta)
{
    const hk_backend *cu = NULL;
    HK_ASSERT_OK(hk_backend_get("cuda", &cu));
    hk_graph Sc, Sg;
    hk_bmat Gc, Gg;
    hk_setup_fault fc, fg;
    run_ops(&hk_backend_cpu, K, tau, k, block, delta, &Sc, &Gc, &fc);
    run_ops(cu, K, tau, k, block, delta, &Sg, &Gg, &fg);
    CU_ASSERT_EQUAL(fc.row, fg.row);
    CU_ASSERT_EQUAL(fc.reason, fg.reason);
    int64_t mmax = 0;
    for (int64_t i = 0; fc.row < 0 && i < Sc.n; i++)
        if (Sc.rowptr[i + 1] - Sc.rowptr[i] > mmax) mmax = Sc.rowptr[i + 1] - Sc.rowptr[i];
    if (fc.row < 0 && fg.row < 0) {
        CU_ASSERT_EQUAL_FATAL(Sc.nnz, Sg.nnz);
        CU_ASSERT(!memcmp(Sc.rowptr, Sg.rowptr, (size_t)(Sc.n + 1) * sizeof *Sc.rowptr));
        CU_ASSERT(!memcmp(Sc.colind, Sg.colind, (size_t)Sc.nnz * sizeof *Sc.colind));
        CU_ASSERT_EQUAL_FATAL(Gc.nnzb, Gg.nnzb);
        CU_ASSERT(!memcmp(Gc.colind, Gg.colind, (size_t)Gc.nnzb * sizeof *Gc.colind));
        const double d = hk_test_reldiff(Gg.val, Gc.val, (long)Gc.nnzb);
        if (d > 1e-12) printf("\n    G differs by %.2e (tau %g k %d block %d)", d, tau, k, block);
        CU_ASSERT(d <= 1e-12);
    }
    hk_graph_free(&Sc), hk_graph_free(&Sg);
    hk_bmat_free(&Gc), hk_bmat_free(&Gg);
    return mmax;
}

static void test_cuda_ops(void)
{
    for (unsigned c = 0; c < 6; c++) {
        hk_bcsr K;
        double *D = gen_spd(40 + 7 * c, 1 + c % 3, 100 + c, &K);
        compare_backends(&K, 0.05 * (c % 3), 1 + c % 3, c % 2, 0.01 * (c % 2));
        free(D);
        hk_bcsr_free(&K);
    }
    /* FEM: scalar rows of about 80-200 entries (global slab) and block ones */
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(8, 8, 8, &K));
    compare_backends(&K, 0.05, 2, 0, 0.01);
    compare_backends(&K, 0.05, 2, 1, 0.01);
    compare_backends(&K, 0.0, 1, 0, 0.0); /* rows of up to 41 entries */
    compare_backends(&K, 0.0, 3, 0, 0.0); /* large rows, or the same row over the limit */
    ops_cap = 3000; /* node sets over the shared-memory list: the global-scratch pattern path */
    compare_backends(&K, 0.0, 3, 0, 0.0);
    ops_cap = 600;
    hk_bcsr_free(&K);
    /* a non-SPD row is reported the same */
    const double D1[16] = {2, 0, 3, 0, 0, 2, 0, 0, 3, 0, 2, 0, 0, 0, 0, 2};
    K = dense_bcsr(4, D1);
    compare_backends(&K, 0, 1, 0, 0);
    hk_bcsr_free(&K);
}

/* The node pattern, where a node's rows share one factor: bs 2 and 3, nodes in every size
 * class (warp <= 32, thread block 33..160, the global slab above), post-filtration on and
 * off, and a node whose shared factor fails (the same first failing row and reason). */
static void test_cuda_node_ops(void)
{
    hk_bcsr K;
    for (unsigned c = 0; c < 4; c++) { /* random node couplings, bs 2 and 3 */
        double *D = gen_spd(30 + 9 * c, 2 + c % 2, 300 + c, &K);
        compare_backends(&K, 0.05 * (c % 2), 1 + c / 2, 1, 0.02 * (c % 2));
        free(D);
        hk_bcsr_free(&K);
    }
    HK_ASSERT_OK(hk_gen_elasticity2d(24, 20, &K)); /* bs 2 */
    CU_ASSERT(compare_backends(&K, 0.12, 2, 1, 0.01) <= 32);
    const int64_t m2 = compare_backends(&K, 0.0, 3, 1, 0.01);
    CU_ASSERT(m2 > 32 && m2 <= 160);
    CU_ASSERT(compare_backends(&K, 0.0, 6, 1, 0.0) > 160);
    hk_bcsr_free(&K);
    HK_ASSERT_OK(hk_gen_elasticity3d(8, 8, 8, &K)); /* bs 3 */
    const int64_t m3 = compare_backends(&K, 0.12, 2, 1, 0.01); /* the defaults */
    CU_ASSERT(m3 > 32 && m3 <= 160);
    compare_backends(&K, 0.0, 1, 1, 0.0);
    CU_ASSERT(compare_backends(&K, 0.0, 2, 1, 0.01) > 160); /* over the batched limit */
    hk_bcsr_free(&K);
    for (int bad = 0; bad < 2; bad++) { /* row 4 not SPD; row 5 not symmetric */
        K = node_fault_matrix(bad);
        compare_backends(&K, 0, 1, 1, 0);
        hk_bcsr_free(&K);
    }
}

static void test_cuda_pc(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(10, 10, 10, &K));
    for (int block = 0; block < 2; block++) {
        char a[128], b[128];
        snprintf(a, sizeof a, "backend=cpu tol=1e-8 pc=fsai pc.fsai.pattern=%s",
                 block ? "block" : "scalar");
        snprintf(b, sizeof b, "backend=cuda tol=1e-8 pc=fsai pc.fsai.pattern=%s",
                 block ? "block" : "scalar");
        const int ic = solve_its(&K, a, NULL), ig = solve_its(&K, b, NULL);
        printf("\n    pattern %s: cpu %d, cuda %d iterations", block ? "block" : "scalar", ic, ig);
        CU_ASSERT(ic > 0 && abs(ic - ig) <= 1);
    }
    /* the adaptive pattern is CPU only: refused in one sentence */
    hk_options *o;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "backend=cuda pc=fsai pc.fsai.adaptive=2"));
    CU_ASSERT_EQUAL(hk_solver_create(&K, o, &s), HK_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "cpu backend only"));
    hk_solver_destroy(s);
    hk_options_destroy(o);
    hk_bcsr_free(&K);
}

/* Set-up of pc=fsai on K with the options in text: total seconds and the split. */
static void setup_split(const hk_bcsr *K, const char *text, double *total, double t[4])
{
    hk_options *o;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, text));
    const double t0 = hk_time();
    const int err = hk_solver_create(K, o, &s);
    if (err) fprintf(stderr, "\n  %s: %s\n", text, hk_error_message());
    CU_ASSERT_EQUAL_FATAL(err, 0);
    *total = hk_time() - t0;
    CU_ASSERT_EQUAL(hk_pc_fsai_times(hk_solver_get_pc(s), t), 0);
    hk_solver_destroy(s);
    hk_options_destroy(o);
}

/* Set-up time split (pattern, factor, transpose, build) of pc=fsai at elasticity3d:30 and :60
 * on both backends; the cpu at :60 (about 20 s on 16 cores) only with HK_FSAI_CPU60=1. */
static void test_cuda_times(void)
{
    const int sizes[2] = {30, 60};
    for (int z = 0; z < 2; z++) {
        hk_bcsr K;
        HK_ASSERT_OK(hk_gen_elasticity3d(sizes[z], sizes[z], sizes[z], &K));
        for (int be = 0; be < 2; be++) {
            if (!be && z == 1 && !getenv("HK_FSAI_CPU60")) {
                printf("\n    elasticity3d:60 cpu: set HK_FSAI_CPU60=1 to time it");
                continue;
            }
            double tot = 0, t[4] = {0};
            setup_split(&K, be ? "backend=cuda pc=fsai" : "backend=cpu pc=fsai", &tot, t);
            printf("\n    elasticity3d:%d (%ld dofs) fsai set-up %s: %.3f s = pattern %.3f + "
                   "factor %.3f + transpose %.3f + build %.3f (+ rest %.3f)",
                   sizes[z], (long)K.nbrows * K.bs, be ? "cuda" : "cpu ", tot, t[0], t[1], t[2],
                   t[3], tot - t[0] - t[1] - t[2] - t[3]);
        }
        hk_bcsr_free(&K);
    }
}

HK_DEVICE_SUITE(cuda_fsai, {"CUDA fsai ops equal the CPU ones (pattern, G to 1e-12, faults)",
                            test_cuda_ops},
                {"node pattern on cuda: one factor per node equals the CPU ops, every size "
                 "class, faults",
                 test_cuda_node_ops},
                {"pc=fsai on cuda: iterations as on cpu", test_cuda_pc},
                {"fsai set-up time split, elasticity3d:30 and :60", test_cuda_times})

/* ---- device: sai_pattern and sai_factor on cuda against the CPU ops ---------------------- */

/* Both SAI ops on be (Kt by the backend's expand and transpose); host copies of St and Mt
 * (Mt empty when a fault). */
static void run_sai(const hk_backend_ops *be, const hk_bcsr *K, double tau, int colmax, int qr,
                    int64_t max_rows, int64_t max_cols, hk_graph *Sh, hk_bmat *Mh,
                    hk_setup_fault *f)
{
    hk_bmat Kb = {0}, Kx = {0}, Kt = {0}, Mt = {0};
    hk_graph St = {0};
    memset(Sh, 0, sizeof *Sh);
    memset(Mh, 0, sizeof *Mh);
    HK_ASSERT_OK(hk_bmat_upload(be, K, &Kb));
    HK_ASSERT_OK(hk_pc_bmat_expand(&Kb, &Kx));
    HK_ASSERT_OK(hk_pc_bmat_transpose(&Kx, &Kt));
    HK_ASSERT_OK(be->sai_pattern(&Kb, &Kt, tau, colmax, &St));
    HK_ASSERT_OK(be->sai_factor(&Kt, &St, max_rows, max_cols, qr, &Mt, f));
    HK_ASSERT_OK(hk_graph_to_host(&St, Sh));
    if (f->row < 0) HK_ASSERT_OK(hk_bmat_to_host(&Mt, Mh));
    hk_graph_free(&St);
    hk_bmat_free(&Mt), hk_bmat_free(&Kt), hk_bmat_free(&Kx), hk_bmat_free(&Kb);
}

/* Both backends' SAI ops for every maximum (row, column) and least-squares solver
 * (Householder, Gram-Schmidt): the same pattern, faults and M to rounding. */
static void compare_sai(const hk_bcsr *K, double tau, int64_t max_rows, int64_t max_cols)
{
    for (int v = 0; v < 4; v++) {
        const int colmax = v & 1, qr = v >> 1 ? HK_SAI_GRAM_SCHMIDT : HK_SAI_HOUSEHOLDER;
        const hk_backend *cu = NULL;
        HK_ASSERT_OK(hk_backend_get("cuda", &cu));
        hk_graph Sc, Sg;
        hk_bmat Mc, Mg;
        hk_setup_fault fc, fg;
        run_sai(&hk_backend_cpu, K, tau, colmax, qr, max_rows, max_cols, &Sc, &Mc, &fc);
        run_sai(cu, K, tau, colmax, qr, max_rows, max_cols, &Sg, &Mg, &fg);
        CU_ASSERT_EQUAL_FATAL(Sc.nnz, Sg.nnz);
        CU_ASSERT(!memcmp(Sc.rowptr, Sg.rowptr, (size_t)(Sc.n + 1) * sizeof *Sc.rowptr));
        CU_ASSERT(!memcmp(Sc.colind, Sg.colind, (size_t)Sc.nnz * sizeof *Sc.colind));
        CU_ASSERT_EQUAL(fc.row, fg.row);
        CU_ASSERT_EQUAL(fc.reason, fg.reason);
        if (fc.row < 0 && fg.row < 0) {
            CU_ASSERT_EQUAL_FATAL(Mc.nnzb, Mg.nnzb);
            const double d = hk_test_reldiff(Mg.val, Mc.val, (long)Mc.nnzb);
            if (d > 1e-12)
                printf("\n    M differs by %.2e (tau %g, max %s, %s)", d, tau,
                       colmax ? "column" : "row", qr ? "gram-schmidt" : "householder");
            CU_ASSERT(d <= 1e-12);
        }
        hk_graph_free(&Sc), hk_graph_free(&Sg);
        hk_bmat_free(&Mc), hk_bmat_free(&Mg);
    }
}

/* gen_spd made nonsymmetric: every stored off-diagonal entry scaled by 0.5 .. 1.5 */
static void gen_nonsym(int nb, int bs, unsigned seed, hk_bcsr *K)
{
    free(gen_spd(nb, bs, seed, K));
    uint32_t s = seed + 99;
    for (int64_t I = 0; I < K->nbrows; I++)
        for (int64_t q = K->rowptr[I]; q < K->rowptr[I + 1]; q++)
            for (int e = 0; e < bs * bs; e++)
                if (K->colind[q] != I || e / bs != e % bs)
                    K->val[q * bs * bs + e] *= 1 + 0.5 * urand(&s);
}

static void test_cuda_sai_ops(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_convdiff2d(40, 30.0, &K));
    compare_sai(&K, 0.9, 4000, 400);
    compare_sai(&K, 1.0, 4000, 400);
    compare_sai(&K, 0.5, 4000, 400);
    hk_bcsr_free(&K);
    for (unsigned c = 0; c < 4; c++) {
        gen_nonsym(60 + 10 * c, 1 + c % 3, 200 + c, &K);
        compare_sai(&K, 1.0, 4000, 400); /* bs 3: |I||J| over the shared-memory limit */
        compare_sai(&K, 0.7, 4000, 400);
        compare_sai(&K, 1.0, 12, 400); /* |I| too large: the same first column */
        compare_sai(&K, 1.0, 4000, 3); /* |J| too large */
        hk_bcsr_free(&K);
    }
    /* a zero column: e_k is not in the rows of A(:, J), rank deficient at the same column */
    const double D[16] = {2, 1, 0, 0, 1, 3, 0, 1, 0, 1, 0, 0, 0, 0, 0, 2};
    K = dense_bcsr(4, D);
    compare_sai(&K, 1.0, 4000, 400);
    hk_bcsr_free(&K);
}

static void test_cuda_sai_solve(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_convdiff2d(100, 50.0, &K));
    const char *methods[2] = {"bicgstab", "gmres"};
    const char *variants[2] = {"", " pc.sai.max=row pc.sai.qr=householder"};
    for (int m = 0; m < 4; m++) {
        char a[160], b[160];
        snprintf(a, sizeof a, "backend=cpu method=%s tol=1e-8 pc=sai%s", methods[m & 1],
                 variants[m >> 1]);
        snprintf(b, sizeof b, "backend=cuda method=%s tol=1e-8 pc=sai%s", methods[m & 1],
                 variants[m >> 1]);
        double tc = 0, tg = 0;
        const int ic = solve_its(&K, a, &tc), ig = solve_its(&K, b, &tg);
        printf("\n    convdiff2d:100 %s+sai%s: cpu %d its (set-up %.3f s), cuda %d its (set-up "
               "%.3f s)",
               methods[m & 1], variants[m >> 1], ic, tc, ig, tg);
        CU_ASSERT(ic > 0 && abs(ic - ig) <= 2);
    }
    hk_bcsr_free(&K);
}

HK_DEVICE_SUITE(cuda_sai,
                {"CUDA sai ops equal the CPU ones (pattern, M to 1e-12, faults; row and "
                 "column maxima, Householder and Gram-Schmidt)",
                 test_cuda_sai_ops},
                {"pc=sai on cuda with bicgstab and gmres: iterations as on cpu",
                 test_cuda_sai_solve})
