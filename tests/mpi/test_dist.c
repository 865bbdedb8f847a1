/* hooke_mpi_tests: the distributed layer under mpirun (tests/mpi/test_mpi.sh runs it on 2 and
 * 3 processes; backend=cuda with a GPU per process: HOOKE_TEST_BACKEND=cuda).
 *
 *   halo     ranges of any size (one process may own nothing), ghosts in any order: every ghost
 *            gets its owner's value
 *   sums     hk_comm_sum gives every process the same bits, the sum in rank order
 *   spmv     the distributed operator of every storage format, fp64 and fp32, against the
 *            one-process product of the same rows (ranges with no rows, no ghosts, all ghosts)
 *   agree    a failure on one process is every process's, with its sentence
 *   alone    a failure of one process stops every process, none left waiting: a receiver out
 *            of memory (hk_comm_recv_buf), a solver option refused on one process only
 *
 * One line per check on rank 0; exit 1 when any check failed on any process. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"

static int failures;

static void check(const hk_comm *c, int ok, const char *what)
{
    int64_t bad = !ok;
    hk_comm_sum_i64(c, &bad, 1);
    if (hk_comm_rank(c) == 0) printf("  %-62s %s\n", what, bad ? "FAILED" : "ok");
    failures += bad != 0;
}

/* Process r's first global row and count of n rows: uneven, the middle process owns `mid`
 * rows (0 allowed). */
static void range(int64_t n, int P, int r, int64_t mid, int64_t *row0, int64_t *cnt)
{
    int64_t start = 0;
    for (int q = 0; q <= r; q++) {
        int64_t c;
        if (P >= 3 && q == P / 2)
            c = mid;
        else {
            const int others = P >= 3 ? P - 1 : P;
            const int k = q > P / 2 && P >= 3 ? q - 1 : q;
            const int64_t rest = n - (P >= 3 ? mid : 0);
            c = rest * (k + 1) / others - rest * k / others;
        }
        if (q == r) {
            *row0 = start;
            *cnt = c;
        }
        start += c;
    }
}

static void test_halo(const hk_comm *c)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    const int64_t n = 1000;
    int64_t row0 = 0, nown = 0;
    range(n, P, me, 0, &row0, &nown);
    /* ghosts: every 7th row owned elsewhere, in reverse order */
    int64_t *ghost = malloc(sizeof *ghost * (size_t)n), ng = 0;
    for (int64_t g = n - 1; g >= 0; g -= 7)
        if (g < row0 || g >= row0 + nown) ghost[ng++] = g;
    double *own = malloc(sizeof *own * (size_t)(2 * nown + 1));
    double *gv = malloc(sizeof *gv * (size_t)(2 * ng + 1));
    for (int64_t i = 0; i < nown; i++)
        own[2 * i] = (double)(row0 + i), own[2 * i + 1] = -0.5 * (double)(row0 + i);
    hk_halo *h = NULL;
    int ok = !hk_halo_create(c, row0, nown, ng, ghost, &h) && !hk_halo_exchange(h, own, 2, gv);
    for (int64_t k = 0; ok && k < ng; k++)
        ok = gv[2 * k] == (double)ghost[k] && gv[2 * k + 1] == -0.5 * (double)ghost[k];
    check(c, ok, "halo: ghosts in any order, a process owning nothing");
    hk_halo_destroy(h);
    free(ghost);
    free(own);
    free(gv);
}

static void test_sums(const hk_comm *c)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    double v[3] = {1e16, 1.0 + me, 0.1 * (me + 1)};
    if (me == P - 1) v[0] = -1e16;
    hk_comm_sum(c, v, 3);
    double *all = malloc(sizeof *all * 3 * (size_t)P);
    hk_comm_allgather(c, v, sizeof v, all);
    int same = 1;
    for (int r = 0; r < P; r++)
        same &= !memcmp(all + 3 * r, v, sizeof v);
    double expect = 0; /* in rank order */
    for (int r = 0; r < P; r++)
        expect += 0.1 * (r + 1);
    check(c, same && v[2] == expect, "sums: the same bits on every process, in rank order");
    free(all);
}

/* The owned rows of K (rows [row0, row0 + cnt)) as a distributed matrix of format f; y = A x
 * against the one-process product. */
static int spmv_case(const hk_comm *c, const hk_backend_ops *be, const hk_bcsr *K, int64_t row0,
                     int64_t cnt, hk_format f, hk_precision p)
{
    const int bs = K->bs;
    hk_bcsr L = {bs, cnt, K->nbcols, NULL, NULL, NULL};
    L.rowptr = malloc(sizeof *L.rowptr * (size_t)(cnt + 1));
    for (int64_t i = 0; i <= cnt; i++)
        L.rowptr[i] = K->rowptr[row0 + i] - K->rowptr[row0];
    L.colind = K->colind + K->rowptr[row0];
    L.val = K->val + (size_t)K->rowptr[row0] * bs * bs;
    const int64_t n = K->nbrows * bs, nl = cnt * bs;
    double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    double *xi = malloc(sizeof *xi * (size_t)(nl + 1)), *yi = malloc(sizeof *yi * (size_t)(nl + 1));
    double *yl = malloc(sizeof *yl * (size_t)(nl + 1));
    for (int64_t i = 0; i < n; i++)
        x[i] = sin(0.37 * (double)i) + 0.25;
    hk_bcsr_spmv(K, x, y);
    hk_dist *d = NULL;
    hk_bmat Koo = {0};
    hk_mat *A = NULL;
    hk_vec *vx = NULL, *vy = NULL;
    int ierr = hk_dist_create(c, be, row0, &L, &d);
    if (!ierr) {
        hk_dist_ops_init(d);
        ierr = hk_bmat_upload(&d->ops, &d->Koo, &Koo);
    }
    if (!ierr) ierr = hk_mat_create_bmat(&Koo, f, p, NULL, &A);
    if (!ierr) ierr = hk_vec_create(&d->ops, nl, p, &vx);
    if (!ierr) ierr = hk_vec_create(&d->ops, nl, p, &vy);
    if (!ierr) {
        hk_dist_to_internal(d, x + row0 * bs, xi);
        ierr = hk_vec_upload(vx, xi);
    }
    if (!ierr) ierr = hk_mat_spmv(A, vx, vy);
    if (!ierr) ierr = hk_vec_download(vy, yi);
    double err = 0, scale = 0;
    if (!ierr) {
        hk_dist_from_internal(d, yi, yl);
        for (int64_t i = 0; i < nl; i++) {
            err = fmax(err, fabs(yl[i] - y[row0 * bs + i]));
            scale = fmax(scale, fabs(y[row0 * bs + i]));
        }
    }
    if (ierr && *hk_error_message())
        fprintf(stderr, "process %d: %s\n", hk_comm_rank(c), hk_error_message());
    hk_vec_destroy(vx);
    hk_vec_destroy(vy);
    hk_mat_destroy(A);
    hk_bmat_free(&Koo);
    hk_dist_destroy(d);
    free(L.rowptr);
    free(x);
    free(y);
    free(xi);
    free(yi);
    free(yl);
    const double tol = p == HK_FP64 ? 1e-13 : 1e-5;
    return !ierr && err <= tol * (scale > 0 ? scale : 1);
}

static void test_spmv(const hk_comm *c, const hk_backend_ops *be)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    hk_bcsr K3 = {0}, K1 = {0};
    hk_gen_elasticity3d_tet(4, 3, 5, &K3); /* bs 3, 120 block rows */
    hk_gen_poisson2d(13, &K1);             /* bs 1, 169 rows */
    static const hk_format fmts[] = {HK_FMT_CSR,  HK_FMT_BSR,   HK_FMT_ELL, HK_FMT_SELL,
                                     HK_FMT_BELL, HK_FMT_SBELL, HK_FMT_PCSR};
    char what[96];
    for (size_t k = 0; k < sizeof fmts / sizeof *fmts; k++)
        for (int prec = 0; prec < 2; prec++) {
            int ok = 1;
            for (int mid = 0; mid < 2; mid++) { /* the middle process owns nothing, or 20 rows */
                int64_t row0 = 0, cnt = 0;
                const hk_bcsr *K = fmts[k] == HK_FMT_PCSR ? &K1 : &K3;
                range(K->nbrows, P, me, mid ? 20 : 0, &row0, &cnt);
                ok &= spmv_case(c, be, K, row0, cnt, fmts[k], (hk_precision)prec);
            }
            snprintf(what, sizeof what, "spmv: %s %s, interior + boundary rows, empty ranges",
                     hk_format_name(fmts[k]), prec ? "fp32" : "fp64");
            check(c, ok, what);
        }
    /* every row a boundary row (one block row per process and more: a dense coupling) */
    hk_bcsr D = {0};
    hk_gen_random(2 * P, 2 * P, 2, 2.0 * P, 0, 7, &D);
    check(c, spmv_case(c, be, &D, 2 * me, 2, HK_FMT_BSR, HK_FP64),
          "spmv: every row a boundary row (dense coupling)");
    hk_bcsr_free(&D);
    hk_bcsr_free(&K3);
    hk_bcsr_free(&K1);
}

static void test_agree(const hk_comm *c)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    hk_error_clear();
    int e =
        me == P - 1 ? hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__, "failed on the last") : 0;
    e = hk_comm_agree(c, e);
    check(c, e == HK_ERR_NUMERIC && !strcmp(hk_error_message(), "failed on the last"),
          "agree: one process's failure is every process's, with its sentence");
    check(c, hk_comm_agree(c, 0) == 0, "agree: no failure, no failure");
}

/* A failure that one process meets alone, where the others would go on to a collective or wait
 * for its message: each must end with every process failing, no one left waiting (mpirun's
 * timeout in test_mpi.sh turns a wait into a failure). */
static void test_alone(const hk_comm *c, const hk_backend *be)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    static const char word[] = "part";
    /* more bytes than an address space holds: process 1 cannot allocate them and says so, and
     * process 0 does not send them (its buffer is never read) */
    const size_t huge = (size_t)1 << 60;
    void *got = NULL;
    size_t n = 0;
    int e = 0;
    hk_error_clear();
    if (me == 0) e = hk_comm_send_buf(c, word, huge, 1, 31);
    if (me == 1) e = hk_comm_recv_buf(c, &got, &n, 0, 31);
    free(got);
    const int alone = me <= 1 ? e == HK_ERR_MEMORY : e == 0;
    e = hk_comm_agree(c, e);
    check(c, alone && e == HK_ERR_MEMORY,
          "alone: a receiver out of memory fails itself and its sender");
    /* then an empty buffer and a small one arrive as sent */
    got = NULL;
    n = 1;
    e = 0;
    if (me == 0) e = hk_comm_send_buf(c, word, 0, 1, 32) || hk_comm_send_buf(c, word, 5, 1, 33);
    int ok = !e;
    if (me == 1) {
        ok = !hk_comm_recv_buf(c, &got, &n, 0, 32) && !got && n == 0;
        ok = ok && !hk_comm_recv_buf(c, &got, &n, 0, 33) && n == 5 && !strcmp(got, "part");
        free(got);
    }
    check(c, ok, "alone: an empty buffer and a small one arrive as sent");

    /* a solver option refused on the last process only (the others go on to the layout's
     * collectives): every process fails, with the last one's sentence */
    hk_bcsr K = {0};
    hk_gen_poisson2d(8, &K);
    int64_t row0 = 0, cnt = 0;
    range(K.nbrows, P, me, 10, &row0, &cnt);
    hk_bcsr L = {1, cnt, K.nbcols, NULL, K.colind + K.rowptr[row0], K.val + K.rowptr[row0]};
    L.rowptr = malloc(sizeof *L.rowptr * (size_t)(cnt + 1));
    for (int64_t i = 0; i <= cnt; i++)
        L.rowptr[i] = K.rowptr[row0 + i] - K.rowptr[row0];
    hk_options *o = NULL;
    hk_solver *s = NULL;
    hk_options_create(&o);
    hk_options_set(o, "backend", be->name);
    hk_options_set(o, "pc", "jacobi");
    hk_options_set(o, "method", me == P - 1 ? "nosuch" : "cg");
    hk_error_clear();
    e = hk_solver_create_dist(c, row0, &L, NULL, o, &s);
    check(c, e == HK_ERR_OPTION && !s && strstr(hk_error_message(), "nosuch"),
          "alone: a solver option refused on one process stops all");
    hk_solver_destroy(s);
    hk_options_destroy(o);
    free(L.rowptr);
    hk_bcsr_free(&K);
}

int main(int argc, char **argv)
{
    if (hk_comm_world_init(&argc, &argv)) {
        fprintf(stderr, "hooke_mpi_tests: %s\n", hk_error_message());
        return 1;
    }
    const hk_comm *c = hk_comm_world();
    const char *bn = getenv("HOOKE_TEST_BACKEND");
    const hk_backend *be = NULL;
    if (hk_backend_get(bn ? bn : "cpu", &be)) {
        fprintf(stderr, "hooke_mpi_tests: %s\n", hk_error_message());
        return hk_comm_world_end(1);
    }
    if (hk_comm_rank(c) == 0)
        printf("hooke_mpi_tests: %d processes, backend %s\n", hk_comm_size(c), be->name);
    test_halo(c);
    test_sums(c);
    test_spmv(c, be);
    test_agree(c);
    test_alone(c, be);
    int64_t f = failures;
    hk_comm_max_i64(c, &f, 1);
    if (hk_comm_rank(c) == 0) printf("hooke_mpi_tests: %s\n", f ? "FAILED" : "all passed");
    hk_comm_agree(c, f ? HK_ERR_INTERNAL : 0);
    return hk_comm_world_end(f ? 1 : 0);
}
