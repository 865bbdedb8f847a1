/* Helpers shared by the test suites: case files through the application layer, one
 * preconditioner application, iteration counts and solves through the solver, host reads of a
 * solve, the `hooke` commands, dense references, random vectors, the matrix-powers suites'
 * matrices and coefficients. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "case.h"
#include "test_util.h"
#include "test_amg_level.h"
#include "hk_impl.h"
#include "ksp/ksp_impl.h"

int hk_test_run_case(const char *rel, int nsets, const char *const *sets, hk_case *c, hk_run *r)
{
    int err = hk_case_load(rel[0] == '/' ? rel : hk_test_path(rel), nsets, sets, c);
    if (err) {
        fprintf(stderr, "\n  %s: %s\n", rel, hk_error_message());
        return err;
    }
    hk_run_opts o = {.backend = "cpu", .quiet = 1};
    err = hk_run_case(c, &o, r);
    if (err) {
        fprintf(stderr, "\n  %s: %s\n", rel, hk_error_message());
        hk_run_free(r);
        hk_case_free(c);
    }
    return err;
}

int hk_test_apply_pc(const hk_backend *be, hk_precision p, const hk_bcsr *K, const char *name,
                     const char *opts, const double *r, double *z, hk_pc **keep)
{
    const long n = (long)K->nbrows * K->bs;
    hk_mat *A = NULL;
    hk_options *o = NULL;
    hk_pc *pc = NULL;
    hk_vec *vr = NULL, *vz = NULL;
    hk_bmat Kd = {0};
    const hk_pc_type *t = hk_pc_type_find(name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    int err = hk_mat_create(be, K, HK_FMT_CSR, HK_FP64, NULL, &A);
    if (!err) err = hk_options_create(&o);
    if (!err && opts) err = hk_options_parse(o, opts);
    if (!err) err = hk_bmat_upload(be, K, &Kd);
    if (!err) err = hk_pc_create(t, be, p, &Kd, A, NULL, o, &pc);
    hk_bmat_free(&Kd);
    if (!err) err = hk_options_check_used(o, t->options);
    if (!err) err = hk_vec_create(be, n, HK_FP64, &vr);
    if (!err) err = hk_vec_create(be, n, HK_FP64, &vz);
    if (!err) err = hk_vec_upload(vr, r);
    if (!err) err = hk_pc_apply(pc, vr, vz);
    if (!err) err = hk_vec_download(vz, z);
    hk_vec_destroy(vr);
    hk_vec_destroy(vz);
    if (keep && !err)
        *keep = pc;
    else
        hk_pc_destroy(pc);
    hk_options_destroy(o);
    hk_mat_destroy(A);
    return err;
}

int hk_test_solve_iterations(const hk_bcsr *K, const char *backend, const char *text,
                             void (*rhs)(long n, double *b))
{
    char opts[512];
    snprintf(opts, sizeof opts, "backend=%s tol=1e-8 maxit=3000 %s", backend, text);
    hk_options *o;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, opts));
    int err = hk_solver_create(K, o, &s);
    if (err) fprintf(stderr, "\n  %s: %s\n", opts, hk_error_message());
    CU_ASSERT_EQUAL_FATAL(err, 0);
    const long n = (long)K->nbrows * K->bs;
    double *b = malloc(n * sizeof *b), *x = calloc(n, sizeof *x);
    if (rhs)
        rhs(n, b);
    else
        for (long i = 0; i < n; i++)
            b[i] = 1 + 0.1 * (i % 7);
    hk_result res;
    err = hk_solver_solve(s, b, x, &res);
    if (err) fprintf(stderr, "\n  %s: %s\n", opts, hk_error_message());
    CU_ASSERT_EQUAL(err, 0);
    int ok = !err && hk_reason_converged(res.reason) && res.true_residual < 1e-7;
    if (!ok)
        fprintf(stderr, "\n  %s: %s after %d iterations, true residual %.2e\n", opts,
                hk_reason_name(res.reason), res.iterations, res.true_residual);
    CU_ASSERT(ok);
    hk_solver_destroy(s);
    hk_options_destroy(o);
    free(b), free(x);
    return ok ? res.iterations : -1;
}

/* The CPU backend with every read of a value by the host counted. */
static int host_reads;
static int count_scal_get(const double *s, int first, int n, double *host)
{
    host_reads++;
    return hk_backend_cpu.scal_get(s, first, n, host);
}
static int count_dot(const hk_vec *x, const hk_vec *y, double *r)
{
    host_reads++;
    return hk_backend_cpu.vec_dot(x, y, r);
}
static int count_mdot(int k, hk_vec *const *X, const hk_vec *y, double *r)
{
    host_reads++;
    return hk_backend_cpu.vec_mdot(k, X, y, r);
}
static int count_gram(int m, hk_vec *const *X, hk_vec *const *Y, double *G, double *GX)
{
    host_reads++;
    return hk_backend_cpu.vec_gram(m, X, Y, G, GX);
}

/* spmv_cgcg returns its inner products to the host */
static int count_spmv_cgcg(hk_mat *A, const hk_vec *u, hk_vec *w, const hk_vec *r, double *d)
{
    host_reads++;
    return hk_backend_cpu.spmv_cgcg(A, u, w, r, d);
}

int hk_test_host_reads(const hk_bcsr *K, hk_format fmt, const char *pc, hk_ksp *k)
{
    static hk_backend_ops counting;
    counting = hk_backend_cpu;
    counting.scal_get = count_scal_get;
    counting.vec_dot = count_dot;
    counting.vec_mdot = count_mdot;
    counting.vec_gram = count_gram;
    counting.spmv_cgcg = count_spmv_cgcg;
    const int64_t n = K->nbrows * K->bs;
    hk_bmat Kd = {0};
    HK_ASSERT_OK(hk_mat_create(&counting, K, fmt, HK_FP64, NULL, &k->A));
    HK_ASSERT_OK(hk_bmat_upload(&counting, K, &Kd));
    HK_ASSERT_OK(
        hk_pc_create(hk_pc_type_find(pc), &counting, HK_FP64, &Kd, k->A, NULL, NULL, &k->pc));
    hk_bmat_free(&Kd);
    k->be = &counting;
    double *one = malloc((size_t)n * sizeof *one), *hb = malloc((size_t)n * sizeof *hb);
    for (int64_t i = 0; i < n; i++)
        one[i] = 1.0;
    hk_bcsr_spmv(K, one, hb);
    hk_vec *b, *x;
    HK_ASSERT_OK(hk_vec_create(&counting, n, HK_FP64, &b));
    HK_ASSERT_OK(hk_vec_create(&counting, n, HK_FP64, &x));
    HK_ASSERT_OK(hk_vec_upload(b, hb));
    HK_ASSERT_OK(counting.vec_set(x, 0.0));
    host_reads = 0;
    HK_ASSERT_OK(k->type->solve(k, b, x));
    const int reads = host_reads;
    CU_ASSERT(hk_reason_converged(k->res.reason));
    CU_ASSERT(k->res.iterations >= 20);
    hk_vec_destroy(b);
    hk_vec_destroy(x);
    for (int i = 0; i < k->npool; i++)
        hk_vec_destroy(k->pool[i]); /* the method's work vectors */
    free(k->pool);
    k->pool = NULL;
    k->npool = k->pool_cap = 0;
    free(one);
    free(hb);
    hk_pc_destroy(k->pc);
    hk_mat_destroy(k->A);
    k->pc = NULL;
    k->A = NULL;
    return reads;
}

int hk_test_hooke_cmd(const char *args, char *out, size_t cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && OMP_NUM_THREADS=1 '%s' %s 2>&1", hk_test_tmpdir(),
             HOOKE_BINARY, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t len = fread(out, 1, cap - 1, p);
    out[len] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int hk_test_shell(const char *dir, const char *cmd, char *out, size_t cap)
{
    char log[700], line[4096];
    snprintf(log, sizeof log, "%s/shell.log", dir);
    snprintf(line, sizeof line, "cd '%s' && ( %s ) > '%s' 2>&1", dir, cmd, log);
    const int st = system(line);
    FILE *f = fopen(log, "r");
    size_t len = f ? fread(out, 1, cap - 1, f) : 0;
    out[len] = 0;
    if (f) fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int read_all(const char *path, char **buf, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc(*n + 1);
    size_t got = fread(*buf, 1, *n, f);
    fclose(f);
    return got == *n ? 0 : -1;
}

int hk_test_same_file(const char *a, const char *b)
{
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    int same =
        !read_all(a, &x, &nx) && !read_all(b, &y, &ny) && nx == ny && nx > 0 && !memcmp(x, y, nx);
    free(x);
    free(y);
    return same;
}

int hk_test_same_bytes(const char *args, const char *ext, char *why, size_t cap)
{
    static const int threads[3] = {1, 2, 2};
    char out[3][1200], cmd[4096], log[8192];
    int ok = 1;
    why[0] = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(out[i], sizeof out[i], "%s/same%d%s", hk_test_tmpdir(), i, ext);
        remove(out[i]);
        snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=%d OMP_WAIT_POLICY=passive '%s' %s -o '%s'",
                 threads[i], HOOKE_BINARY, args, out[i]);
        const int st = hk_test_shell(hk_test_tmpdir(), cmd, log, sizeof log);
        if (st != 0 && ok) {
            snprintf(why, cap, "run %d (%d thread%s) exited with %d", i + 1, threads[i],
                     threads[i] > 1 ? "s" : "", st);
            ok = 0;
        }
    }
    for (int i = 1; i < 3 && ok; i++)
        if (!hk_test_same_file(out[0], out[i])) {
            snprintf(why, cap, "run %d (%d thread%s) wrote other bytes than run 1 (1 thread)",
                     i + 1, threads[i], threads[i] > 1 ? "s" : "");
            ok = 0;
        }
    return ok;
}

int hk_test_solve_cmd(const char *args, char *out, size_t cap)
{
    char a[1900];
    snprintf(a, sizeof a, "solve %s", args);
    return hk_test_hooke_cmd(a, out, cap);
}

const hk_backend *hk_test_cuda_backend(void)
{
    const hk_backend *b = NULL;
    if (hk_backend_get("cuda", &b)) hk_error_clear();
    return b;
}

double *hk_test_rand_vec(int64_t n, unsigned seed)
{
    double *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    uint32_t s = seed * 747796405u + 1u;
    for (int64_t i = 0; x && i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (double)(s >> 8) / (double)(1u << 24) * 2.0 - 1.0;
    }
    return x;
}

void hk_test_step_vecs(const hk_backend *be, int64_t n, int bs, hk_precision prec, int nv,
                       int dblk, unsigned seed, unsigned step, hk_vec **v)
{
    for (int j = 0; j < nv; j++) {
        const int64_t len = j == dblk ? n * bs : n;
        double *h = hk_test_rand_vec(len, seed + step * (unsigned)j);
        if (j == dblk)
            for (int64_t i = 0; i < len; i++)
                h[i] = 0.1 * h[i] + ((i % (bs * bs)) % (bs + 1) == 0 ? 0.5 : 0.0);
        HK_ASSERT_OK(hk_vec_create(be, len, prec, &v[j]));
        HK_ASSERT_OK(hk_vec_upload(v[j], h));
        free(h);
    }
}

void hk_test_free_vecs(hk_vec **v, int nv)
{
    for (int j = 0; j < nv; j++)
        hk_vec_destroy(v[j]);
}

void hk_test_fill(double *h, int64_t n, unsigned seed)
{
    for (int64_t i = 0; i < n; i++)
        h[i] = 0.5 + (double)(hk_hash32((uint32_t)i * 2654435761u + seed) & 0xffff) / 65536.0;
}

void hk_test_tridiag(int64_t n, hk_bcsr *K)
{
    memset(K, 0, sizeof *K);
    K->bs = 1;
    K->nbrows = K->nbcols = n;
    K->rowptr = malloc((size_t)(n + 1) * sizeof *K->rowptr);
    K->colind = malloc((size_t)(3 * n) * sizeof *K->colind);
    K->val = malloc((size_t)(3 * n) * sizeof *K->val);
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        K->rowptr[i] = q;
        for (int64_t j = i - 1; j <= i + 1; j++)
            if (j >= 0 && j < n) {
                K->colind[q] = (int32_t)j;
                K->val[q++] = j == i ? 2.0 : -1.0;
            }
    }
    K->rowptr[n] = q;
}

void hk_test_band(int64_t n, int bs, int64_t hub, unsigned seed, hk_bcsr *K)
{
    static const int off[4] = {-3, -1, 0, 2};
    const int b2 = bs * bs;
    memset(K, 0, sizeof *K);
    K->bs = bs;
    K->nbrows = K->nbcols = n;
    K->rowptr = malloc((size_t)(n + 1) * sizeof *K->rowptr);
    K->colind = malloc((size_t)(6 * n + 8) * sizeof *K->colind);
    K->val = malloc((size_t)(6 * n + 8) * b2 * sizeof *K->val);
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        K->rowptr[i] = q;
        for (int64_t j = 0; j < n; j++) {
            int in = 0;
            for (int o = 0; o < 4; o++)
                in |= j == i + off[o];
            if (hub >= 0) in |= (i == hub && j % 3 == 0) || (j == hub && i % 3 == 0);
            if (!in) continue;
            K->colind[q] = (int32_t)j;
            for (int e = 0; e < b2; e++) {
                const uint32_t x = hk_hash32((uint32_t)(q * b2 + e) * 2654435761u + seed);
                K->val[q * b2 + e] = (double)(x & 0xffff) / 65536.0 - 0.5 +
                                     (j == i && e % (bs + 1) == 0 ? 4.0 : 0.0);
            }
            q++;
        }
    }
    K->rowptr[n] = q;
}

void hk_test_mpk_coefs(int b, int k, double *coef)
{
    if (b < 3) {
        hk_scg_basis_coef(b, k, 0.2, 8.0, coef);
        return;
    }
    for (int j = 0; j < k; j++) {
        coef[3 * j] = 0.3 + 0.01 * j;
        coef[3 * j + 1] = -0.7;
        coef[3 * j + 2] = 0.2;
    }
}

int hk_test_solve_ones(const hk_backend *be, const hk_bcsr *K, const char *opts, double *x,
                       hk_result *res, double *maxerr)
{
    const int64_t n = K->nbrows * K->bs;
    double *b = malloc((size_t)(n ? n : 1) * sizeof *b);
    double *one = malloc((size_t)(n ? n : 1) * sizeof *one);
    double *xo = x ? x : malloc((size_t)(n ? n : 1) * sizeof *xo);
    for (int64_t i = 0; i < n; i++)
        one[i] = 1.0, xo[i] = 0.0;
    hk_bcsr_spmv(K, one, b);
    hk_options *o = NULL;
    hk_solver *s = NULL;
    char text[512];
    snprintf(text, sizeof text, "backend=%s %s", hk_backend_name(be), opts);
    memset(res, 0, sizeof *res);
    int err = hk_options_create(&o);
    if (!err) err = hk_options_parse(o, text);
    if (!err) err = hk_solver_create(K, o, &s);
    if (!err) err = hk_solver_solve(s, b, xo, res);
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        const double d = fabs(xo[i] - 1.0);
        if (!(d <= e)) e = d; /* NaN propagates */
    }
    if (maxerr) *maxerr = e;
    hk_solver_destroy(s);
    hk_options_destroy(o);
    free(b);
    free(one);
    if (!x) free(xo);
    return err;
}

const char *hk_test_write_case(const char *name, const char *text)
{
    static char buf[8][1024];
    static int slot;
    slot = (slot + 1) % 8;
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", hk_test_tmpdir(), name);
    FILE *f = fopen(buf[slot], "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
    return buf[slot];
}

double *hk_test_dense_of(const hk_bcsr *K)
{
    const int bs = K->bs;
    const int64_t n = K->nbrows * bs;
    double *A = calloc((size_t)(n * n), sizeof *A);
    for (int64_t i = 0; A && i < K->nbrows; i++)
        for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++)
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++)
                    A[(i * bs + r) * n + K->colind[k] * bs + c] = K->val[(k * bs + r) * bs + c];
    return A;
}

int hk_test_cholesky(int64_t n, double *A)
{
    for (int64_t j = 0; j < n; j++) {
        double s = A[j * n + j];
        for (int64_t k = 0; k < j; k++)
            s -= A[j * n + k] * A[j * n + k];
        if (!(s > 0)) return -1;
        const double d = sqrt(s);
        A[j * n + j] = d;
        for (int64_t i = j + 1; i < n; i++) {
            double t = A[i * n + j];
            for (int64_t k = 0; k < j; k++)
                t -= A[i * n + k] * A[j * n + k];
            A[i * n + j] = t / d;
        }
    }
    return 0;
}

void hk_test_cholesky_solve(int64_t n, const double *L, double *x)
{
    for (int64_t i = 0; i < n; i++) {
        double t = x[i];
        for (int64_t k = 0; k < i; k++)
            t -= L[i * n + k] * x[k];
        x[i] = t / L[i * n + i];
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        double t = x[i];
        for (int64_t k = i + 1; k < n; k++)
            t -= L[k * n + i] * x[k];
        x[i] = t / L[i * n + i];
    }
}

hk_solver *hk_test_solver(const hk_bcsr *K, const hk_nearnull *nn, const char *opts)
{
    hk_options *o = NULL;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, opts));
    int ierr = hk_solver_create_nearnull(K, nn, o, &s);
    if (ierr) fprintf(stderr, "\n  create with '%s': %s\n", opts, hk_error_message());
    CU_ASSERT_EQUAL_FATAL(ierr, 0);
    hk_options_destroy(o);
    return s;
}

static double node_factor(int64_t i)
{
    return ldexp(1.0, (int)lround(2.0 * sin(0.05 * (double)i)));
}

void hk_test_node_scaled(const hk_bcsr *K, hk_bcsr *S)
{
    HK_ASSERT_OK(hk_bcsr_copy(K, S));
    const int b = K->bs;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int64_t q = K->rowptr[i]; q < K->rowptr[i + 1]; q++) {
            const double si = node_factor(i), sj = node_factor(K->colind[q]);
            for (int e = 0; e < b * b; e++)
                S->val[q * b * b + e] *= si * sj;
        }
}

void hk_test_bmat_to(const hk_backend *be, const hk_bmat *H, hk_bmat *D)
{
    CU_ASSERT_EQUAL_FATAL(hk_bmat_alloc(be, H->br, H->bc, H->nbrows, H->nbcols, H->nnzb, D), 0);
    be->copy_to(D->rowptr, H->rowptr, (size_t)(H->nbrows + 1) * sizeof(int64_t));
    if (H->nnzb) {
        be->copy_to(D->colind, H->colind, (size_t)H->nnzb * sizeof(int32_t));
        be->copy_to(D->val, H->val, (size_t)H->nnzb * H->br * H->bc * sizeof(double));
    }
}

void hk_test_level_make(int m, hk_test_level *L)
{
    const hk_backend_ops *be = &hk_backend_cpu;
    memset(L, 0, sizeof *L);
    hk_bcsr Kh = {0};
    double *xyz = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(m, m, m, &Kh));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(m, m, m, &xyz));
    HK_ASSERT_OK(hk_bmat_upload(be, &Kh, &L->K));
    const int64_t nb = L->K.nbrows, n = nb * 3;
    hk_graph S = {0};
    int32_t *agg = malloc((size_t)nb * sizeof *agg);
    int64_t nagg = 0;
    HK_ASSERT_OK(be->amg_strength(&L->K, 0.02, &S));
    HK_ASSERT_OK(be->amg_aggregate(&S, agg, &nagg));
    hk_vec *c = NULL;
    HK_ASSERT_OK(hk_vec_create(be, n, HK_FP64, &c));
    HK_ASSERT_OK(hk_vec_upload(c, xyz));
    double *B = malloc((size_t)n * 6 * sizeof *B), *Bc = malloc((size_t)nagg * 36 * sizeof *Bc);
    const double centre[3] = {0.5, 0.5, 0.5};
    HK_ASSERT_OK(be->amg_rigid_modes(nb, 3, c, centre, 1.0, NULL, B));
    HK_ASSERT_OK(be->amg_tentative(agg, nagg, nb, 3, 6, B, &L->T, Bc));
    HK_ASSERT_OK(be->bmat_spgemm(&L->K, &L->T, &L->AT));
    HK_ASSERT_OK(hk_vec_create(be, n * 3, HK_FP64, &L->Dinv));
    int64_t bad = -1;
    HK_ASSERT_OK(be->bmat_diag(&L->K, HK_DIAG_BLOCK_INV, L->Dinv, &bad));
    L->w = 0.37;
    HK_ASSERT_OK(be->amg_smooth_prolongator(&L->AT, &L->T, L->Dinv, L->w, &L->P));
    HK_ASSERT_OK(be->bmat_transpose(&L->P, &L->R));
    HK_ASSERT_OK(be->bmat_spgemm(&L->K, &L->P, &L->AP));
    HK_ASSERT_OK(be->bmat_spgemm(&L->R, &L->AP, &L->Ac));
    hk_graph_free(&S);
    hk_vec_destroy(c);
    hk_bcsr_free(&Kh);
    free(agg), free(B), free(Bc), free(xyz);
}

void hk_test_level_free(hk_test_level *L)
{
    hk_bmat *M[] = {&L->K, &L->T, &L->AT, &L->P, &L->R, &L->AP, &L->Ac};
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++)
        hk_bmat_free(M[i]);
    hk_vec_destroy(L->Dinv);
}
