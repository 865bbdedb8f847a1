/* hooke_mpi_tests: the distributed layer under mpirun (tests/mpi/test_mpi.sh runs it on 2 and
 * 3 processes; backend=cuda with a GPU per process: HOOKE_TEST_BACKEND=cuda).
 *
 *   halo     ranges of any size (one process may own nothing), ghosts in any order: every ghost
 *            gets its owner's value; hk_halo_exchange_with packs only the wanted rows
 *   sums     hk_comm_sum gives every process the same bits, the sum in rank order
 *   spmv     the distributed operator of every storage format, fp64 and fp32, against the
 *            one-process product of the same rows (ranges with no rows, no ghosts, all ghosts)
 *   agree    a failure on one process is every process's, with its sentence
 *   alone    a failure of one process stops every process, none left waiting: a receiver out
 *            of memory (hk_comm_recv_buf), a solver option refused on one process only
 *   dcomm    the device transport (dist.comm=nccl): on cuda built with NCCL, NCCL itself; on
 *            the cpu a host transport of the same contract (MPI on host memory), so that the
 *            layer's device path runs here too. The SpMV of every format (above) through it,
 *            its sums against MPI's, a communicator one process cannot make refused by all;
 *            on cuda also the solver with dist.comm=mpi and nccl against one process (1e-8)
 *            and nccl's x repeating byte for byte; pc=amg's set-up with its ghost rows and
 *            Galerkin blocks sent device to device against the same through the host (x byte
 *            for byte) and against dist.comm=mpi
 *   fused    pc=amg's level 0 through the distributed amg_cheb_step against the separate
 *            calls (HOOKE_AMG_UNFUSED=1): the same iterations and x byte for byte on every
 *            transport
 *
 * `hooke_mpi_tests --fatal`: a transport failing on the last process in the middle of an SpMV
 * ends the run (exit non-zero, the sentence on stderr) instead of leaving the others waiting;
 * test_mpi.sh checks that mpirun returns.
 *
 * One line per check on rank 0; exit 1 when any check failed on any process. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"
#include "../test_dist_rows.h"

static int failures;

/* ---- a host transport of the dcomm_* contract (hk_impl.h): MPI on host memory ---------- */

static int hx_id(void *id)
{
    memset(id, 0x5a, HK_DCOMM_ID_BYTES);
    return 0;
}

static int hx_create(const void *id, int nranks, int rank, double timeout, void **dc)
{
    const hk_comm *c = hk_comm_world();
    HK_CHECK(((const unsigned char *)id)[HK_DCOMM_ID_BYTES - 1] == 0x5a &&
                 nranks == hk_comm_size(c) && rank == hk_comm_rank(c) && timeout > 0,
             HK_ERR_INTERNAL, "host transport: a communicator of %d processes, rank %d", nranks,
             rank);
    return hk_calloc(1, sizeof(int), dc);
}

static int hx_exchange(void *dc, int nrecv, const int *recv_rank, const int64_t *recv_off,
                       void *recv, int nsend, const int *send_rank, const int64_t *send_off,
                       const void *send, size_t bytes)
{
    const hk_comm *c = hk_comm_world();
    hk_comm_reqs *r = NULL;
    HK_CALL(hk_comm_reqs_create(nrecv + nsend, &r));
    int ierr = 0;
    for (int j = 0; j < nrecv && !ierr; j++)
        ierr = hk_comm_irecv(c, (char *)recv + recv_off[j] * bytes,
                             (size_t)(recv_off[j + 1] - recv_off[j]) * bytes, recv_rank[j], 7301, r,
                             j);
    for (int j = 0; j < nsend && !ierr; j++)
        ierr = hk_comm_isend(c, (const char *)send + send_off[j] * bytes,
                             (size_t)(send_off[j + 1] - send_off[j]) * bytes, send_rank[j], 7301, r,
                             nrecv + j);
    if (!ierr) ierr = hk_comm_waitall(r);
    hk_comm_reqs_destroy(r);
    return ierr;
}

static int hx_wait(void *dc)
{
    return 0;
}

static int hx_sum(void *dc, double *v, int n)
{
    return hk_comm_sum(hk_comm_world(), v, n);
}

static void hx_destroy(void *dc, int abort)
{
    free(dc);
}

/* The transport of backend be for the dcomm checks: its own (cuda with NCCL), else the host
 * one on the cpu; NULL where there is none (cuda built without NCCL). */
static hk_backend_ops host_transport;
static const hk_backend_ops *transport_of(const hk_backend_ops *be)
{
    if (be->dcomm_create) return be;
    if (strcmp(be->name, "cpu") != 0) return NULL;
    host_transport = *be;
    host_transport.dcomm_id = hx_id;
    host_transport.dcomm_create = hx_create;
    host_transport.dcomm_exchange = hx_exchange;
    host_transport.dcomm_wait = hx_wait;
    host_transport.dcomm_sum = hx_sum;
    host_transport.dcomm_destroy = hx_destroy;
    return &host_transport;
}

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

/* hk_halo_exchange_with on 22 values a row spread over two arrays (row g: g + j / 32 in the
 * first 20, -g and j in the last two): ghosts in ascending order and in reverse, the values
 * placed by the caller, and only the rows another process wants packed (the processes' packs
 * add up to their ghosts). */
typedef struct halo_rows {
    int64_t row0, nown, bad;
    const int64_t *ghost;
    double *got; /* ng x 22 */
    long long packed;
} halo_rows;

static void halo_pack(void *ctx, int64_t i, double *v)
{
    halo_rows *x = ctx;
    if (i < 0 || i >= x->nown) {
#pragma omp atomic write
        x->bad = 1;
        return;
    }
    const double g = (double)(x->row0 + i);
    for (int j = 0; j < 20; j++)
        v[j] = g + j / 32.0;
    v[20] = -g, v[21] = 21;
#pragma omp atomic
    x->packed++;
}

static void halo_unpack(void *ctx, int64_t k, const double *v)
{
    halo_rows *x = ctx;
    memcpy(x->got + 22 * k, v, 22 * sizeof *v);
}

static void test_halo_with(const hk_comm *c)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    const int64_t n = 5000;
    int64_t row0 = 0, nown = 0;
    range(n, P, me, 0, &row0, &nown);
    int64_t *ghost = malloc(sizeof *ghost * (size_t)n), ng = 0;
    for (int reverse = 0; reverse < 2; reverse++) {
        ng = 0;
        for (int64_t j = 0; j < n; j += 3) {
            const int64_t g = reverse ? n - 1 - j : j;
            if (g < row0 || g >= row0 + nown) ghost[ng++] = g;
        }
        halo_rows x = {row0, nown, 0, ghost, malloc(sizeof(double) * 22 * (size_t)(ng + 1)), 0};
        hk_halo *h = NULL;
        int ok = !hk_halo_create(c, row0, nown, ng, ghost, &h) &&
                 !hk_halo_exchange_with(h, 22, halo_pack, halo_unpack, &x) && !x.bad;
        for (int64_t k = 0; ok && k < ng; k++) {
            const double *v = x.got + 22 * k, g = (double)ghost[k];
            for (int j = 0; j < 20; j++)
                ok &= v[j] == g + j / 32.0;
            ok &= v[20] == -g && v[21] == 21;
        }
        int64_t sums[2] = {x.packed, ng};
        hk_comm_sum_i64(c, sums, 2);
        check(c, ok && sums[0] == sums[1],
              reverse ? "halo with callbacks: ghosts in reverse order"
                      : "halo with callbacks: ghosts ascending, only the wanted rows packed");
        hk_halo_destroy(h);
        free(x.got);
    }
    free(ghost);
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
static int spmv_case(const hk_comm *c, const hk_backend_ops *be, int transport, const hk_bcsr *K,
                     int64_t row0, int64_t cnt, hk_format f, hk_precision p)
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
    int ierr = hk_dist_create_comm(c, be, row0, &L, transport, &d);
    if (!ierr && transport != HK_DIST_COMM_AUTO &&
        strcmp(hk_dist_comm_name(d), hk_dist_comm_names[transport]) != 0)
        ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__, "dist.comm=%s gave %s",
                            hk_dist_comm_names[transport], hk_dist_comm_name(d));
    if (!ierr) {
        hk_dist_ops_init(d);
        Koo = d->Koo_d; /* the layout's owned block on the backend (its values are there only) */
        Koo.be = &d->ops;
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
    if (!ierr && p == HK_FP64) { /* the solve's ordering on the backend: the host's bytes */
        hk_vec *t = NULL, *v = NULL;
        double *got = malloc(sizeof *got * (size_t)(nl + 1));
        ierr = hk_vec_create(&d->ops, nl, p, &t);
        if (!ierr) ierr = hk_vec_create(&d->ops, nl, p, &v);
        if (!ierr) ierr = hk_dist_upload_ordered(d, x + row0 * bs, t, v);
        if (!ierr) ierr = hk_vec_download(v, got);
        if (!ierr && memcmp(got, xi, sizeof *got * (size_t)nl))
            ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                                "hk_dist_upload_ordered: not hk_dist_to_internal's bytes");
        if (!ierr) ierr = hk_dist_download_ordered(d, vy, t, got);
        if (!ierr && memcmp(got, yl, sizeof *got * (size_t)nl))
            ierr = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                                "hk_dist_download_ordered: not hk_dist_from_internal's bytes");
        hk_vec_destroy(t);
        hk_vec_destroy(v);
        free(got);
    }
    if (ierr && *hk_error_message())
        fprintf(stderr, "process %d: %s\n", hk_comm_rank(c), hk_error_message());
    hk_vec_destroy(vx);
    hk_vec_destroy(vy);
    hk_mat_destroy(A);
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

static void test_spmv(const hk_comm *c, const hk_backend_ops *be, int transport)
{
    const char *tn = hk_dist_comm_names[transport];
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
                ok &= spmv_case(c, be, transport, K, row0, cnt, fmts[k], (hk_precision)prec);
            }
            snprintf(what, sizeof what, "spmv %s: %s %s, interior + boundary rows, empty ranges",
                     tn, hk_format_name(fmts[k]), prec ? "fp32" : "fp64");
            check(c, ok, what);
        }
    /* every row a boundary row (one block row per process and more: a dense coupling) */
    hk_bcsr D = {0};
    hk_gen_random(2 * P, 2 * P, 2, 2.0 * P, 0, 7, &D);
    snprintf(what, sizeof what, "spmv %s: every row a boundary row (dense coupling)", tn);
    check(c, spmv_case(c, be, transport, &D, 2 * me, 2, HK_FMT_BSR, HK_FP64), what);
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

/* ---- the device transport ------------------------------------------------------------- */

/* The rows [row0, row0 + cnt) of K as a process's rows (arrays into K's). */
static hk_bcsr rows_of(const hk_bcsr *K, int64_t row0, int64_t cnt)
{
    hk_bcsr L = {K->bs,
                 cnt,
                 K->nbcols,
                 NULL,
                 K->colind + K->rowptr[row0],
                 K->val + (size_t)K->rowptr[row0] * K->bs * K->bs};
    L.rowptr = malloc(sizeof *L.rowptr * (size_t)(cnt + 1));
    for (int64_t i = 0; i <= cnt; i++)
        L.rowptr[i] = K->rowptr[row0 + i] - K->rowptr[row0];
    return L;
}

/* The distributed table's sums through the transport tb against MPI's (the same local sums
 * added in rank order: equal to rounding), and the same bits on every process. */
static void test_dcomm_sums(const hk_comm *c, const hk_backend_ops *tb)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    hk_bcsr K = {0};
    hk_gen_elasticity3d_tet(3, 3, 4, &K);
    int64_t row0 = 0, cnt = 0;
    range(K.nbrows, P, me, 7, &row0, &cnt);
    hk_bcsr L = rows_of(&K, row0, cnt);
    const int64_t nl = cnt * K.bs;
    hk_dist *dd[2] = {NULL, NULL};
    double got[2][8] = {{0}};
    int ierr = 0;
    for (int t = 0; t < 2 && !ierr; t++) {
        hk_dist *d = NULL;
        ierr = hk_dist_create_comm(c, tb, row0, &L, t ? HK_DIST_COMM_NCCL : HK_DIST_COMM_MPI, &d);
        if (ierr) break;
        dd[t] = d;
        hk_dist_ops_init(d);
        const hk_backend_ops *o = &d->ops;
        hk_vec *x = NULL, *y = NULL, *z = NULL, *w = NULL, *dinv = NULL;
        hk_bmat Koo = {0};
        hk_mat *A = NULL;
        double *S = NULL, *h = malloc(sizeof *h * (size_t)(nl + 1));
        for (int64_t i = 0; i < nl; i++)
            h[i] = cos(0.11 * (double)(row0 * K.bs + i)) + 0.5;
        ierr = hk_vec_create(o, nl, HK_FP64, &x);
        if (!ierr) ierr = hk_vec_create(o, nl, HK_FP64, &y);
        if (!ierr) ierr = hk_vec_create(o, nl, HK_FP64, &z);
        if (!ierr) ierr = hk_vec_create(o, nl, HK_FP64, &w);
        if (!ierr) ierr = hk_vec_create(o, nl, HK_FP64, &dinv);
        if (!ierr) ierr = hk_vec_upload(x, h);
        if (!ierr) ierr = o->vec_set(dinv, 0.25);
        if (!ierr) ierr = o->vec_set(z, -1.5);
        if (!ierr) Koo = d->Koo_d, Koo.be = o; /* the layout's, on the backend */
        if (!ierr) ierr = hk_mat_create_bmat(&Koo, HK_FMT_CSR, HK_FP64, NULL, &A);
        if (!ierr) ierr = o->scal_alloc(&S, HK_S_MAX);
        if (!ierr) ierr = hk_mat_spmv(A, x, y);
        if (!ierr) ierr = o->vec_dot(x, y, &got[t][0]);
        hk_vec *X[2] = {x, y};
        if (!ierr) ierr = o->vec_mdot(2, X, y, &got[t][1]);
        if (!ierr) ierr = o->spmv_dot2(A, x, w, dinv, z, S);
        if (!ierr) ierr = o->scal_get(S, HK_S_PAP, 2, &got[t][3]);
        if (!ierr) ierr = o->scal_get(S, HK_S_ZAP, 1, &got[t][5]);
        if (!ierr) ierr = o->vec_mdot_s(2, X, x, S + 10);
        if (!ierr) ierr = o->scal_get(S, 10, 2, &got[t][6]);
        hk_vec_destroy(x);
        hk_vec_destroy(y);
        hk_vec_destroy(z);
        hk_vec_destroy(w);
        hk_vec_destroy(dinv);
        hk_mat_destroy(A);
        if (S) o->scal_free(S);
        free(h);
        ierr = hk_comm_agree(c, ierr);
    }
    if (ierr) fprintf(stderr, "process %d: %s\n", me, hk_error_message());
    int ok = !ierr && !strcmp(hk_dist_comm_name(dd[1]), "nccl");
    for (int k = 0; ok && k < 8; k++)
        ok = fabs(got[0][k] - got[1][k]) <= 1e-12 * fmax(fabs(got[0][k]), 1);
    double *all = malloc(sizeof *all * 8 * (size_t)P);
    hk_comm_allgather(c, got[1], sizeof got[1], all);
    for (int r = 0; r < P; r++)
        ok &= !memcmp(all + 8 * r, got[1], sizeof got[1]);
    free(all);
    check(c, ok, "dcomm: the table's sums as MPI's, the same bits everywhere");
    hk_dist_destroy(dd[0]);
    hk_dist_destroy(dd[1]);
    free(L.rowptr);
    hk_bcsr_free(&K);
}

/* A communicator that the last process cannot make: every process fails with its sentence
 * (the others' NCCL waits for it until the timeout, then gives up), none left waiting. */
static const hk_backend_ops *failing_base;
static int failing_calls; /* failing_create's, on this process */
static int failing_create(const void *id, int nranks, int rank, double timeout, void **dc)
{
    *dc = NULL;
    failing_calls++;
    if (rank == nranks - 1)
        return hk_error_set(HK_ERR_DEVICE, __FILE__, __LINE__, "no transport on the last one");
    return failing_base->dcomm_create(id, nranks, rank, timeout, dc);
}

static void test_dcomm_refused(const hk_comm *c, const hk_backend_ops *be, const hk_backend_ops *tb)
{
    static hk_backend_ops failing;
    failing = *tb;
    failing_base = tb;
    failing.dcomm_create = failing_create;
    hk_dcomm *t = NULL;
    hk_error_clear();
    int e = hk_dcomm_create(c, &failing, 5.0, &t);
    check(c, e == HK_ERR_DEVICE && !t && strstr(hk_error_message(), "no transport on the last"),
          "dcomm: a communicator one process cannot make fails all");
    hk_dcomm_destroy(t);
    if (be->dcomm_create) return;
    /* a backend without one: dist.comm=nccl refused by name, every process */
    hk_bcsr K = {0};
    hk_gen_poisson2d(6, &K);
    int64_t row0 = 0, cnt = 0;
    range(K.nbrows, hk_comm_size(c), hk_comm_rank(c), 4, &row0, &cnt);
    hk_bcsr L = rows_of(&K, row0, cnt);
    hk_dist *d = NULL;
    hk_error_clear();
    e = hk_dist_create_comm(c, be, row0, &L, HK_DIST_COMM_NCCL, &d);
    check(c, e && !d && strstr(hk_error_message(), "dist.comm=nccl"),
          "dcomm: dist.comm=nccl refused where the backend has no transport");
    hk_dist_destroy(d);
    free(L.rowptr);
    hk_bcsr_free(&K);
}

/* The run's communicator made ahead (hk_dcomm_prepare, then hk_dist_comm_start on a thread of
 * its own while this one makes other collectives, as hooke run's device start does while it
 * meshes): two layouts of dist.comm=nccl borrow it (the same one, kept when they go), their
 * SpMV right through it; after hk_dist_comm_end a layout makes its own again. One that the
 * last process cannot make: every process's layout fails with that process's sentence, and
 * the run ends it. */
static void *start_main(void *arg)
{
    (void)arg;
    hk_dist_comm_start();
    return NULL;
}

static void test_dcomm_prepared(const hk_comm *c, const hk_backend_ops *tb)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    hk_bcsr K = {0};
    hk_gen_elasticity3d_tet(4, 3, 5, &K);
    int64_t row0 = 0, cnt = 0;
    range(K.nbrows, P, me, 20, &row0, &cnt);
    hk_bcsr L = rows_of(&K, row0, cnt);
    hk_dist *d[3] = {NULL, NULL, NULL};
    pthread_t th;
    int ierr = hk_dcomm_prepare(c, tb, HK_DCOMM_TIMEOUT);
    const int started = !ierr && pthread_create(&th, NULL, start_main, NULL) == 0;
    double v = me + 1.0; /* the others' collectives go on meanwhile */
    if (!ierr) ierr = hk_comm_sum(c, &v, 1);
    if (started) pthread_join(th, NULL);
    ierr = hk_comm_agree(c, ierr);
    for (int k = 0; k < 2 && !ierr; k++)
        ierr = hk_dist_create_comm(c, tb, row0, &L, HK_DIST_COMM_NCCL, &d[k]);
    int ok = started && !ierr && d[0]->dcomm && d[0]->dcomm == d[1]->dcomm && d[0]->dcomm->run;
    hk_dist_destroy(d[0]);
    hk_dist_destroy(d[1]);
    /* the layouts gone, the communicator is still the run's: an SpMV's exchange through it */
    ok = ok && spmv_case(c, tb, HK_DIST_COMM_NCCL, &K, row0, cnt, HK_FMT_CSR, HK_FP64);
    hk_dist_comm_end();
    ierr = hk_dist_create_comm(c, tb, row0, &L, HK_DIST_COMM_NCCL, &d[2]);
    ok = ok && !ierr && d[2]->dcomm && !d[2]->dcomm->run;
    hk_dist_destroy(d[2]);
    if (ierr && *hk_error_message()) fprintf(stderr, "process %d: %s\n", me, hk_error_message());
    check(c, ok && v == P * (P + 1) / 2.0,
          "dcomm: the run's communicator made ahead on a thread, borrowed by the layouts");
    /* one the last process cannot make */
    static hk_backend_ops failing;
    failing = *tb;
    failing_base = tb;
    failing.dcomm_create = failing_create;
    failing_calls = 0;
    ierr = hk_dcomm_prepare(c, &failing, 5.0); /* the others' NCCL waits 5 s for the last */
    const int started2 = !ierr && pthread_create(&th, NULL, start_main, NULL) == 0;
    if (started2) pthread_join(th, NULL);
    hk_error_clear();
    hk_dist *df = NULL;
    const int e = hk_dist_create_comm(c, &failing, row0, &L, HK_DIST_COMM_NCCL, &df);
    check(c,
          started2 && e == HK_ERR_DEVICE && !df && failing_calls == 1 &&
              strstr(hk_error_message(), "no transport on the last"),
          "dcomm: the run's communicator one process cannot make fails every layout");
    hk_dist_destroy(df);
    hk_dist_comm_end();
    free(L.rowptr);
    hk_bcsr_free(&K);
}

/* The solver on backend be with dist.comm=mpi and nccl: x against one process's to 1e-8, and
 * nccl's x the same bytes in a second solve (a fresh solver). */
static void test_dcomm_solve(const hk_comm *c, const hk_backend_ops *be)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    hk_bcsr K = {0};
    hk_gen_elasticity3d(6, 5, 8, &K);
    const int64_t n = K.nbrows * K.bs;
    int64_t row0 = 0, cnt = 0;
    range(K.nbrows, P, me, 30, &row0, &cnt);
    hk_bcsr L = rows_of(&K, row0, cnt);
    const int64_t nl = cnt * K.bs;
    double *b = malloc(sizeof *b * (size_t)n), *x1 = malloc(sizeof *x1 * (size_t)n);
    double *x[3];
    for (int k = 0; k < 3; k++)
        x[k] = calloc((size_t)nl + 1, sizeof *x[k]);
    for (int64_t i = 0; i < n; i++)
        b[i] = sin(0.05 * (double)i) + (i % 3 == 2 ? -1.0 : 0.0);
    /* pc=amg: its coarse levels' operators, P and R through the transport too */
    static const char *const methods[] = {"cg pc=jacobi", "pipecg pc=jacobi", "gmres pc=jacobi",
                                          "cg pc=amg pc.amg.coarse_size=40"};
    for (int m = 0; m < 4; m++) {
        char opts[200], what[160];
        int ierr = 0;
        hk_result res;
        snprintf(opts, sizeof opts, "backend=%s method=%s tol=1e-12 maxit=5000", be->name,
                 methods[m]);
        { /* one process: the whole system */
            hk_options *o = NULL;
            hk_solver *s = NULL;
            memset(x1, 0, sizeof *x1 * (size_t)n);
            ierr = hk_options_create(&o);
            if (!ierr) ierr = hk_options_parse(o, opts);
            if (!ierr) ierr = hk_solver_create(&K, o, &s);
            if (!ierr) ierr = hk_solver_solve(s, b, x1, &res);
            hk_solver_destroy(s);
            hk_options_destroy(o);
        }
        /* mpi, nccl, nccl again */
        for (int k = 0; k < 3; k++) {
            char o2[240];
            snprintf(o2, sizeof o2, "%s dist.comm=%s", opts, k ? "nccl" : "mpi");
            hk_options *o = NULL;
            hk_solver *s = NULL;
            int e = hk_options_create(&o);
            if (!e) e = hk_options_parse(o, o2);
            e = hk_comm_agree(c, e);
            if (!e) e = hk_solver_create_dist(c, row0, &L, NULL, o, &s);
            if (!e && strcmp(hk_solver_dist_comm(s), k ? "nccl" : "mpi") != 0)
                e = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__, "dist.comm not as asked");
            if (!e) e = hk_solver_solve(s, b + row0 * K.bs, x[k], &res);
            if (e && *hk_error_message())
                fprintf(stderr, "process %d: %s\n", me, hk_error_message());
            ierr |= e;
            hk_solver_destroy(s);
            hk_options_destroy(o);
        }
        double err[2] = {0, 0}, scale = 0;
        for (int64_t i = 0; i < nl; i++) {
            scale = fmax(scale, fabs(x1[row0 * K.bs + i]));
            for (int k = 0; k < 2; k++)
                err[k] = fmax(err[k], fabs(x[k][i] - x1[row0 * K.bs + i]));
        }
        hk_comm_max(c, err, 2);
        hk_comm_max(c, &scale, 1);
        snprintf(what, sizeof what, "dcomm: %s on %s, mpi and nccl as one process (1e-8)",
                 methods[m], be->name);
        check(c, !ierr && err[0] <= 1e-8 * scale && err[1] <= 1e-8 * scale, what);
        snprintf(what, sizeof what, "dcomm: %s on %s, nccl's x repeats byte for byte", methods[m],
                 be->name);
        check(c, !ierr && !memcmp(x[1], x[2], sizeof *x[1] * (size_t)nl), what);
    }
    for (int k = 0; k < 3; k++)
        free(x[k]);
    free(b);
    free(x1);
    free(L.rowptr);
    hk_bcsr_free(&K);
}

/* ---- pc=amg's distributed set-up on the process's backend ------------------------------ */

/* The level sizes of a distributed pc=amg out of the solver's description ("distributed, 3
 * levels: 2880, 168, 18 rows"), or "" when absent. */
static void amg_levels(const hk_solver *s, char *out, size_t len)
{
    char *buf = NULL;
    size_t n = 0;
    out[0] = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return;
    hk_solver_describe(s, f);
    fclose(f);
    const char *a = buf ? strstr(buf, "distributed, ") : NULL;
    const char *b = a ? strstr(a, " rows;") : NULL;
    if (a && b && (size_t)(b - a) < len) {
        memcpy(out, a, (size_t)(b - a));
        out[b - a] = 0;
    }
    free(buf);
}

/* One distributed solve with options opts on the rows L (from row0): x, the iterations and
 * the level sizes (amg_levels); a failure printed with its sentence. Collective. */
static int amg_solve(const hk_comm *c, int64_t row0, const hk_bcsr *L, const hk_nearnull *nn,
                     const char *opts, const double *b, double *x, int *its, char *lev, size_t len)
{
    hk_options *o = NULL;
    hk_solver *s = NULL;
    hk_result res;
    *its = -1;
    lev[0] = 0;
    /* every set-up here also checks its R and P, made where P's blocks are, against the
     * host's way byte for byte (a failure names what differs) */
    setenv("HOOKE_AMG_CHECK_TRANSFER", "1", 0);
    int e = hk_options_create(&o);
    if (!e) e = hk_options_parse(o, opts);
    e = hk_comm_agree(c, e);
    if (!e) e = hk_solver_create_dist(c, row0, L, nn, o, &s);
    if (!e) e = hk_solver_solve(s, b, x, &res);
    if (!e) *its = res.iterations;
    if (!e) amg_levels(s, lev, len);
    if (e && *hk_error_message())
        fprintf(stderr, "process %d: %s\n", hk_comm_rank(c), hk_error_message());
    hk_solver_destroy(s);
    hk_options_destroy(o);
    return e;
}

/* pc=amg's test problem on several processes: 3D elasticity on 9 x 8 x 10 hexahedra, this
 * process's rows (the middle one 40 rows: range) with the nodes' coordinates (rigid-body
 * modes); n the whole problem's entries, nl this process's. */
typedef struct amg_rows {
    hk_bcsr K, L;
    double *xyz;
    hk_nearnull nn;
    int64_t row0, cnt, n, nl;
} amg_rows;

static void amg_rows_make(const hk_comm *c, amg_rows *A)
{
    memset(A, 0, sizeof *A);
    hk_gen_elasticity3d(9, 8, 10, &A->K);
    hk_gen_elasticity3d_coords(9, 8, 10, &A->xyz);
    A->n = A->K.nbrows * A->K.bs;
    range(A->K.nbrows, hk_comm_size(c), hk_comm_rank(c), 40, &A->row0, &A->cnt);
    A->L = rows_of(&A->K, A->row0, A->cnt);
    A->nn = (hk_nearnull){.dim = 3, .coords = A->xyz ? A->xyz + A->row0 * 3 : NULL};
    A->nl = A->cnt * A->K.bs;
}

static void amg_rows_free(amg_rows *A)
{
    free(A->xyz);
    free(A->L.rowptr);
    hk_bcsr_free(&A->K);
}

/* pc=amg's coarse operators on several processes (the upper blocks of the partial products
 * routed and merged, the lower ones mirrored, some mirrors sent by other processes): each one
 * checked (HOOKE_AMG_CHECK_TRANSFER) exactly symmetric, bit for bit, and against the
 * one-process Galerkin product of the gathered A and P: its pattern, its values to 1e-12; on
 * every process, every level but the coarsest (fp32 and fp64 levels). */
static void test_amg_symmetric(const hk_comm *c, const hk_backend *be)
{
    amg_rows A;
    amg_rows_make(c, &A);
    const hk_bcsr K = A.K, L = A.L;
    const hk_nearnull nn = A.nn;
    const int64_t n = A.n, nl = A.nl, row0 = A.row0;
    double *b = malloc(sizeof *b * (size_t)n), *x = calloc((size_t)nl + 1, sizeof *x);
    for (int64_t i = 0; i < n; i++)
        b[i] = sin(0.05 * (double)i) + 0.25;
    static const char *const variants[] = {"", " pc.amg.precision=fp64"};
    for (int v = 0; v < 2; v++) {
        char opts[240], lev[160], what[400];
        int its = -1;
        snprintf(opts, sizeof opts, "backend=%s method=cg pc=amg tol=1e-10 maxit=500 "
                 "pc.amg.coarse_size=40%s", be->name, variants[v]);
        const int64_t before = hk_damg_galerkin_checked();
        int ierr = amg_solve(c, row0, &L, &nn, opts, b + row0 * K.bs, x, &its, lev, sizeof lev);
        int64_t checked = hk_damg_galerkin_checked() - before;
        hk_comm_min_i64(c, &checked, 1);
        snprintf(what, sizeof what,
                 "amg coarse operators on %s%s: symmetric bit for bit, the gathered product's "
                 "(%lld checked)",
                 be->name, variants[v], (long long)checked);
        check(c, !ierr && checked >= 2, what);
    }
    free(x);
    free(b);
    amg_rows_free(&A);
}

/* pc=amg on several processes with its set-up on backend be's ops against the cpu's: the
 * same levels (aggregation is exact on every backend), iterations within 2, x to 1e-7; on the
 * cpu a second set-up gives x byte for byte. Rigid-body modes from the nodes' coordinates. */
static void test_amg_setup(const hk_comm *c, const hk_backend *be)
{
    amg_rows A;
    amg_rows_make(c, &A);
    const hk_bcsr K = A.K, L = A.L;
    const hk_nearnull nn = A.nn;
    const int64_t n = A.n, nl = A.nl, row0 = A.row0;
    double *b = malloc(sizeof *b * (size_t)n), *x[2];
    for (int k = 0; k < 2; k++)
        x[k] = calloc((size_t)nl + 1, sizeof *x[k]);
    for (int64_t i = 0; i < n; i++)
        b[i] = cos(0.03 * (double)i) + (i % 3 == 1 ? 0.5 : 0.0);
    static const char *const variants[] = {
        "pc.amg.coarse_size=40",
        "pc.amg.coarse_size=40 pc.amg.precision=fp64 pc.amg.smoother=l1-jacobi"};
    for (int v = 0; v < 2; v++) {
        char lev[2][160], what[400];
        int its[2] = {-1, -1}, ierr = 0;
        for (int k = 0; k < 2; k++) {
            char opts[240];
            snprintf(opts, sizeof opts, "backend=%s method=cg pc=amg tol=1e-10 maxit=500 %s",
                     k ? be->name : "cpu", variants[v]);
            memset(x[k], 0, sizeof *x[k] * (size_t)nl);
            ierr |= amg_solve(c, row0, &L, &nn, opts, b + row0 * K.bs, x[k], &its[k], lev[k],
                              sizeof lev[k]);
        }
        double err = 0, scale = 0;
        for (int64_t i = 0; i < nl; i++) {
            scale = fmax(scale, fabs(x[0][i]));
            err = fmax(err, fabs(x[1][i] - x[0][i]));
        }
        hk_comm_max(c, &err, 1);
        hk_comm_max(c, &scale, 1);
        const int same_levels = lev[0][0] && !strcmp(lev[0], lev[1]) &&
                                !strstr(lev[0], " 1 level") && !strstr(lev[0], " 2 levels");
        snprintf(what, sizeof what, "amg set-up on %s (%s): %s as on the cpu, %d and %d iterations",
                 be->name, variants[v], lev[1][0] ? lev[1] : "no levels", its[1], its[0]);
        check(c, !ierr && same_levels && abs(its[1] - its[0]) <= 2 && err <= 1e-7 * scale, what);
        if (!strcmp(be->name, "cpu")) {
            snprintf(what, sizeof what, "amg set-up on cpu (%s): x repeats byte for byte",
                     variants[v]);
            int same = !memcmp(x[0], x[1], sizeof *x[0] * (size_t)nl);
            int64_t differ = !same;
            hk_comm_max_i64(c, &differ, 1);
            check(c, !ierr && !differ, what);
        }
    }
    for (int k = 0; k < 2; k++)
        free(x[k]);
    free(b);
    amg_rows_free(&A);
}

/* The rows' values in be's memory (hk_dist_create_values, hk_solver_create_dist_resident)
 * against the same rows on the host: the layout's Koo and Kbnd on the backend byte for byte
 * (rows given with their blocks in reverse order, so that the gather moves them), pc=amg's
 * answer byte for byte, and a NaN on the last process named as the host's check names it. */
static void test_resident(const hk_comm *c, const hk_backend *be)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    hk_bcsr K = {0};
    double *xyz = NULL;
    hk_gen_elasticity3d(7, 6, 8, &K);
    hk_gen_elasticity3d_coords(7, 6, 8, &xyz);
    const int bb = K.bs * K.bs;
    test_reverse_rows(&K);
    int64_t row0 = 0, cnt = 0;
    range(K.nbrows, P, me, 30, &row0, &cnt);
    hk_bcsr L = rows_of(&K, row0, cnt), pat = L;
    pat.val = NULL;
    const int64_t nv = L.rowptr[cnt] * bb, nl = cnt * K.bs;
    double *val = NULL, *b = malloc(sizeof *b * (size_t)(nl + 1)), *x[2];
    for (int k = 0; k < 2; k++)
        x[k] = calloc((size_t)nl + 1, sizeof *x[k]);
    for (int64_t i = 0; i < nl; i++)
        b[i] = cos(0.05 * (double)(row0 * K.bs + i)) + 0.25;
    int ierr = be->alloc((void **)&val, sizeof *val * (size_t)(nv + 1));
    if (!ierr && nv) ierr = be->copy_to(val, L.val, sizeof *val * (size_t)nv);
    ierr = hk_comm_agree(c, ierr);
    hk_dist *dh = NULL, *dr = NULL;
    /* the host's layout is the reference with the cpu's views, HOOKE_DIST_STAGED=1 or not
     * (staged, the cpu keeps Koo's columns and the values in its backend copies) */
    char *staged = getenv("HOOKE_DIST_STAGED") ? strdup(getenv("HOOKE_DIST_STAGED")) : NULL;
    unsetenv("HOOKE_DIST_STAGED");
    if (!ierr) ierr = hk_dist_create_comm(c, &hk_backend_cpu, row0, &L, HK_DIST_COMM_MPI, &dh);
    if (staged) setenv("HOOKE_DIST_STAGED", staged, 1);
    free(staged);
    if (!ierr) ierr = hk_dist_create_values(c, be, row0, &pat, val, HK_DIST_COMM_MPI, &dr);
    int same = !ierr && dr->nint == dh->nint && dr->nbnd == dh->nbnd &&
               test_same_as_host(be, &dr->Koo_d, &dh->Koo) &&
               test_same_as_host(be, &dr->Kbnd_d, &dh->Kbnd);
    int64_t bnd = dh ? dh->nbnd : 0;
    hk_comm_sum_i64(c, &bnd, 1);
    hk_dist_destroy(dh);
    hk_dist_destroy(dr);
    char what[200];
    snprintf(what, sizeof what,
             "layout from values on %s: Koo, Kbnd the host's bytes (%lld "
             "boundary rows)",
             be->name, (long long)bnd);
    check(c, same && bnd > 0, what);
    /* the solver from either, pc=amg: the same answer, byte for byte; from the values and
     * the coordinates in be's memory (a part assembled on its device) too */
    const hk_nearnull nn = {.dim = 3, .coords = xyz + row0 * 3};
    double *xyz_be = NULL;
    ierr = be->alloc((void **)&xyz_be, sizeof *xyz_be * (size_t)(3 * cnt + 1));
    if (!ierr && cnt)
        ierr = be->copy_to(xyz_be, xyz + row0 * 3, sizeof *xyz_be * (size_t)(3 * cnt));
    ierr = hk_comm_agree(c, ierr);
    const hk_nearnull nn_be = {.dim = 3, .coords = xyz_be, .coords_be = be};
    double *x2 = calloc((size_t)nl + 1, sizeof *x2);
    int its[3] = {-1, -1, -1};
    for (int k = 0; k < 3 && !ierr; k++) {
        char opts[160];
        snprintf(opts, sizeof opts, "backend=%s method=cg pc=amg tol=1e-10 pc.amg.coarse_size=40",
                 be->name);
        hk_options *o = NULL;
        hk_solver *s = NULL;
        hk_result res;
        int e = hk_options_create(&o);
        if (!e) e = hk_options_parse(o, opts);
        e = hk_comm_agree(c, e);
        if (!e)
            e = k ? hk_solver_create_dist_resident(c, row0, &pat, be, val, k == 2 ? &nn_be : &nn, o,
                                                   &s)
                  : hk_solver_create_dist(c, row0, &L, &nn, o, &s);
        if (!e) e = hk_solver_solve(s, b, k == 2 ? x2 : x[k], &res);
        if (!e) its[k] = res.iterations;
        if (e && *hk_error_message()) fprintf(stderr, "process %d: %s\n", me, hk_error_message());
        ierr |= e;
        hk_solver_destroy(s);
        hk_options_destroy(o);
    }
    int64_t differ = ierr || memcmp(x[0], x[1], sizeof *x[0] * (size_t)nl) != 0;
    hk_comm_max_i64(c, &differ, 1);
    snprintf(what, sizeof what, "solver from values on %s, pc=amg: x the host's bytes (%d, %d its)",
             be->name, its[0], its[1]);
    check(c, !differ, what);
    differ = ierr || memcmp(x[0], x2, sizeof *x2 * (size_t)nl) != 0;
    hk_comm_max_i64(c, &differ, 1);
    snprintf(what, sizeof what,
             "solver from values and coordinates on %s, pc=amg: x the host's bytes (%d its)",
             be->name, its[2]);
    check(c, !differ, what);
    be->dealloc(xyz_be);
    free(x2);
    /* a NaN in the last process's middle row: every process fails with the host's sentence */
    char want[400] = "", got[400] = "";
    if (me == P - 1 && cnt > 0) {
        const int64_t at = L.rowptr[cnt / 2] * bb + 2;
        L.val[at] = NAN;
        if (be->copy_to(val + at, L.val + at, sizeof *val)) ierr = 1;
    }
    int e1 = hk_dist_create_comm(c, &hk_backend_cpu, row0, &L, HK_DIST_COMM_MPI, &dh);
    snprintf(want, sizeof want, "%s", hk_error_message());
    int e2 = hk_dist_create_values(c, be, row0, &pat, val, HK_DIST_COMM_MPI, &dr);
    snprintf(got, sizeof got, "%s", hk_error_message());
    snprintf(what, sizeof what, "a NaN in values on %s: refused on every process as on the host",
             be->name);
    check(c,
          !ierr && e1 == HK_ERR_NUMERIC && e2 == HK_ERR_NUMERIC && strstr(want, "is nan") &&
              !strcmp(want, got),
          what);
    be->dealloc(val);
    for (int k = 0; k < 2; k++)
        free(x[k]);
    free(b);
    free(xyz);
    free(L.rowptr);
    hk_bcsr_free(&K);
}

/* A part's rows as a device assembly hands them (hk_solver_create_dist_device): L's rows with
 * the part's own columns (owned ones from 0, then the ghosts numbered in descending global
 * order, so that the layout's sorted ghosts are not the part's order), all in be's memory. */
typedef struct part_rows {
    hk_resident_bcsr A;
    int64_t *ghost_gid, nghost;
} part_rows;

static int part_rows_make(const hk_backend *be, const hk_bcsr *L, int64_t row0, part_rows *R)
{
    const int64_t n = L->nbrows, nnzb = L->rowptr[n], bb = (int64_t)L->bs * L->bs;
    uint8_t *seen = calloc((size_t)L->nbcols + 1, 1);
    int32_t *loc = malloc(sizeof *loc * (size_t)(nnzb + 1));
    int32_t *at = malloc(sizeof *at * (size_t)(L->nbcols + 1));
    memset(R, 0, sizeof *R);
    R->ghost_gid = malloc(sizeof *R->ghost_gid * (size_t)(L->nbcols + 1));
    for (int64_t p = 0; p < nnzb; p++) {
        const int32_t g = L->colind[p];
        if ((g < row0 || g >= row0 + n) && !seen[g]) seen[g] = 1;
    }
    for (int64_t g = L->nbcols - 1; g >= 0; g--)
        if (seen[g]) at[g] = (int32_t)(n + R->nghost), R->ghost_gid[R->nghost++] = g;
    for (int64_t p = 0; p < nnzb; p++) {
        const int32_t g = L->colind[p];
        loc[p] = g >= row0 && g < row0 + n ? (int32_t)(g - row0) : at[g];
    }
    int ierr = hk_resident_bcsr_alloc(be, L->bs, n, n + R->nghost, nnzb, &R->A);
    if (!ierr) ierr = be->copy_to(R->A.rowptr, L->rowptr, sizeof *L->rowptr * (size_t)(n + 1));
    if (!ierr && nnzb) ierr = be->copy_to(R->A.colind, loc, sizeof *loc * (size_t)nnzb);
    if (!ierr && nnzb) ierr = be->copy_to(R->A.val, L->val, sizeof *L->val * (size_t)(nnzb * bb));
    free(seen);
    free(loc);
    free(at);
    return ierr;
}

static void part_rows_free(part_rows *R)
{
    hk_resident_bcsr_free(&R->A);
    free(R->ghost_gid);
}

/* The rows' pattern and values in be's memory with the part's columns (hk_dist_create_device,
 * hk_solver_create_dist_device) against the same rows on the host: Koo and Kbnd byte for byte,
 * pc=amg's answer byte for byte, a NaN and a column outside the part named as the host's
 * check names them, on every process. */
static void test_device_rows(const hk_comm *c, const hk_backend *be)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    hk_bcsr K = {0};
    double *xyz = NULL;
    hk_gen_elasticity3d(7, 6, 8, &K);
    hk_gen_elasticity3d_coords(7, 6, 8, &xyz);
    const int bb = K.bs * K.bs;
    test_reverse_rows(&K);
    int64_t row0 = 0, cnt = 0;
    range(K.nbrows, P, me, 30, &row0, &cnt);
    hk_bcsr L = rows_of(&K, row0, cnt);
    part_rows R;
    int ierr = hk_comm_agree(c, part_rows_make(be, &L, row0, &R));
    hk_dist_part_rows D = {K.bs,       row0,       cnt,     K.nbrows,   R.nghost,
                           R.A.rowptr, R.A.colind, R.A.val, R.ghost_gid};
    hk_dist *dh = NULL, *dr = NULL;
    char *staged = getenv("HOOKE_DIST_STAGED") ? strdup(getenv("HOOKE_DIST_STAGED")) : NULL;
    unsetenv("HOOKE_DIST_STAGED");
    if (!ierr) ierr = hk_dist_create_comm(c, &hk_backend_cpu, row0, &L, HK_DIST_COMM_MPI, &dh);
    if (staged) setenv("HOOKE_DIST_STAGED", staged, 1);
    free(staged);
    if (!ierr) ierr = hk_dist_create_device(c, be, &D, HK_DIST_COMM_MPI, &dr);
    int same = !ierr && dr->nint == dh->nint && dr->nbnd == dh->nbnd && dr->nghost == dh->nghost &&
               test_same_as_host(be, &dr->Koo_d, &dh->Koo) &&
               test_same_as_host(be, &dr->Kbnd_d, &dh->Kbnd);
    int64_t bnd = dh ? dh->nbnd : 0;
    hk_comm_sum_i64(c, &bnd, 1);
    hk_dist_destroy(dh);
    hk_dist_destroy(dr);
    char what[200];
    snprintf(what, sizeof what, "layout from a part's rows on %s: Koo, Kbnd the host's (%lld)",
             be->name, (long long)bnd);
    check(c, same && bnd > 0, what);
    /* the solver from either, pc=amg, the coordinates on the host: the same bytes */
    const hk_nearnull nn = {.dim = 3, .coords = xyz + row0 * 3};
    const int64_t nl = cnt * K.bs;
    double *b = malloc(sizeof *b * (size_t)(nl + 1)), *x[2];
    for (int64_t i = 0; i < nl; i++)
        b[i] = sin(0.07 * (double)(row0 * K.bs + i)) + 0.5;
    int its[2] = {-1, -1};
    for (int k = 0; k < 2; k++) {
        x[k] = calloc((size_t)nl + 1, sizeof *x[k]);
        char opts[160];
        snprintf(opts, sizeof opts, "backend=%s method=cg pc=amg tol=1e-10 pc.amg.coarse_size=40",
                 be->name);
        hk_options *o = NULL;
        hk_solver *s = NULL;
        hk_result res;
        int e = ierr ? ierr : hk_options_create(&o);
        if (!e) e = hk_options_parse(o, opts);
        e = hk_comm_agree(c, e);
        if (!e)
            e = k ? hk_solver_create_dist_device(c, row0, K.nbrows, &R.A, cnt, R.ghost_gid,
                                                 R.nghost, &nn, o, &s)
                  : hk_solver_create_dist(c, row0, &L, &nn, o, &s);
        if (!e) e = hk_solver_solve(s, b, x[k], &res);
        if (!e) its[k] = res.iterations;
        if (e && *hk_error_message()) fprintf(stderr, "process %d: %s\n", me, hk_error_message());
        ierr |= e;
        hk_solver_destroy(s);
        hk_options_destroy(o);
    }
    int64_t differ = ierr || memcmp(x[0], x[1], sizeof *x[0] * (size_t)nl) != 0;
    hk_comm_max_i64(c, &differ, 1);
    snprintf(what, sizeof what,
             "solver from a part's rows on %s, pc=amg: x the host's (%d, %d its)", be->name, its[0],
             its[1]);
    check(c, !differ && its[0] > 0, what);
    /* a NaN in the last process's middle row, then a column outside its part: every process
     * fails with the host's sentence */
    for (int t = 0; t < 2; t++) {
        char want[400] = "", got[400] = "";
        const int64_t mid = L.rowptr[cnt / 2];
        /* a part's column past its nodes is global column -1 (dist_global_columns) */
        int32_t keep = 0, badcol = (int32_t)(cnt + R.nghost + 2), hostcol = -1;
        if (me == P - 1 && cnt > 0 && t == 0) {
            const int64_t at = mid * bb + 2;
            L.val[at] = NAN;
            if (be->copy_to(R.A.val + at, L.val + at, sizeof *L.val)) ierr = 1;
        }
        if (me == P - 1 && cnt > 0 && t == 1) {
            keep = L.colind[mid];
            L.colind[mid] = hostcol;
            if (be->copy_to(R.A.colind + mid, &badcol, sizeof badcol)) ierr = 1;
        }
        int e1 = hk_dist_create_comm(c, &hk_backend_cpu, row0, &L, HK_DIST_COMM_MPI, &dh);
        snprintf(want, sizeof want, "%s", hk_error_message());
        int e2 = hk_dist_create_device(c, be, &D, HK_DIST_COMM_MPI, &dr);
        snprintf(got, sizeof got, "%s", hk_error_message());
        if (me == P - 1 && cnt > 0 && t == 1) L.colind[mid] = keep;
        snprintf(what, sizeof what, "%s in a part's rows on %s: refused as on the host",
                 t ? "a column outside the part" : "a NaN", be->name);
        const int want_code = t ? HK_ERR_ARG : HK_ERR_NUMERIC;
        check(c,
              !ierr && e1 == want_code && e2 == want_code &&
                  strstr(want, t ? "outside" : "is nan") && !strcmp(want, got),
              what);
        if (!e1) hk_dist_destroy(dh);
        if (!e2) hk_dist_destroy(dr);
    }
    part_rows_free(&R);
    for (int k = 0; k < 2; k++)
        free(x[k]);
    free(b);
    free(xyz);
    free(L.rowptr);
    hk_bcsr_free(&K);
}

/* ---- new values for a distributed solver (hk_solver_update_values*) -------------------- */

/* K's values changed, its pattern kept: D K D with D a positive diagonal (still symmetric
 * positive definite), as a material change would. */
static void update_scale(hk_bcsr *K)
{
    const int bs = K->bs, bb = bs * bs;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++)
            for (int e = 0; e < bb; e++) {
                const double r = (double)(i * bs + e / bs), q = (double)K->colind[p] * bs + e % bs;
                K->val[p * bb + e] *= (1.0 + 0.5 * sin(0.37 * r)) * (1.0 + 0.5 * sin(0.37 * q));
            }
}

/* The rows L in be's memory as hk_resident_bcsr (global columns). */
static int resident_rows(const hk_backend *be, const hk_bcsr *L, hk_resident_bcsr *A)
{
    const int64_t nnzb = L->rowptr[L->nbrows], bb = (int64_t)L->bs * L->bs;
    int ierr = hk_resident_bcsr_alloc(be, L->bs, L->nbrows, L->nbcols, nnzb, A);
    if (!ierr)
        ierr = be->copy_to(A->rowptr, L->rowptr, sizeof *L->rowptr * (size_t)(L->nbrows + 1));
    if (!ierr && nnzb) ierr = be->copy_to(A->colind, L->colind, sizeof *L->colind * (size_t)nnzb);
    if (!ierr && nnzb) ierr = be->copy_to(A->val, L->val, sizeof *L->val * (size_t)(nnzb * bb));
    return ierr;
}

/* How the update checks make and feed a solver: created on the new values (the reference),
 * or created on the old ones, solved, and given the new ones by update_values (host rows) or
 * update_values_resident (rows in be's memory), from host rows or from a part's rows, or
 * (mixed) a part's rows on even processes and host rows on odd ones, as a run whose process
 * cannot assemble on its device has it. */
enum { UPD_FRESH, UPD_HOST, UPD_RESIDENT, UPD_PART_RESIDENT, UPD_PART_HOST, UPD_MIXED, UPD_WAYS };
static const char *const upd_way_names[UPD_WAYS] = {"fresh",
                                                    "update_values",
                                                    "update_values_resident",
                                                    "a part's rows, update_values_resident",
                                                    "a part's rows, update_values",
                                                    "a part's rows and host rows mixed"};

typedef struct upd_rows {
    int64_t row0, nglobal;
    hk_bcsr L[2];       /* the old and the new values, host rows */
    hk_resident_bcsr A; /* the new values in be's memory (global columns) */
    part_rows P[2];     /* the old and the new values as a part's rows */
    const hk_nearnull *nn;
} upd_rows;

/* One solve of way w (above) with options opts: x, the result and the update's phases; a
 * failure printed with its sentence. Collective. */
static int upd_solve(const hk_comm *c, const upd_rows *U, int w, const char *opts, const double *b,
                     double *x, hk_result *res, double phases[4])
{
    hk_options *o = NULL;
    hk_solver *s = NULL;
    const int64_t nl = U->L[0].nbrows * U->L[0].bs;
    memset(res, 0, sizeof *res);
    memset(phases, 0, 4 * sizeof *phases);
    int e = hk_options_create(&o);
    if (!e) e = hk_options_parse(o, opts);
    e = hk_comm_agree(c, e);
    if (w == UPD_MIXED) w = hk_comm_rank(c) % 2 ? UPD_HOST : UPD_PART_RESIDENT;
    const int part = w == UPD_PART_RESIDENT || w == UPD_PART_HOST;
    const part_rows *P = &U->P[0];
    if (!e && part)
        e = hk_solver_create_dist_device(c, U->row0, U->nglobal, &P->A, U->L[0].nbrows,
                                         P->ghost_gid, P->nghost, U->nn, o, &s);
    else if (!e)
        e = hk_solver_create_dist(c, U->row0, &U->L[w == UPD_FRESH], U->nn, o, &s);
    if (!e && w != UPD_FRESH) { /* a solve on the old values first */
        memset(x, 0, sizeof *x * (size_t)nl);
        e = hk_solver_solve(s, b, x, res);
        if (!e && w == UPD_HOST) e = hk_solver_update_values(s, &U->L[1]);
        if (!e && w == UPD_PART_HOST) e = hk_solver_update_values(s, &U->L[1]);
        if (!e && w == UPD_RESIDENT)
            e = hk_solver_update_values_resident(s, (hk_resident_bcsr *)&U->A);
        if (!e && w == UPD_PART_RESIDENT)
            e = hk_solver_update_values_resident(s, (hk_resident_bcsr *)&U->P[1].A);
        if (!e) hk_solver_update_phases(s, phases);
    }
    memset(x, 0, sizeof *x * (size_t)nl);
    if (!e) e = hk_solver_solve(s, b, x, res);
    if (e && *hk_error_message())
        fprintf(stderr, "process %d: %s\n", hk_comm_rank(c), hk_error_message());
    hk_solver_destroy(s);
    hk_options_destroy(o);
    return e;
}

/* check() with a suffix to its label. */
static void check_tag(const hk_comm *c, int ok, const char *what, const char *tag)
{
    char w[480];
    snprintf(w, sizeof w, "%s%s", what, tag);
    check(c, ok, w);
}

/* hk_solver_update_values and _resident on a distributed solver (the middle process of 3 or
 * more owning mid_rows rows; tag: the checks' label's end): after the update a solve gives the
 * bytes of a solver created on the new values (pc=jacobi, poly, amg, and amg with dist.comm=nccl
 * where the backend has NCCL; host rows, rows in be's memory, a part's rows), with the update's
 * seconds filled; another pattern or size on one process is refused on every process (the solver
 * still solves), a NaN on the last process is refused on every process with create's sentence (the
 * solver then refuses to solve). */
static void test_update(const hk_comm *c, const hk_backend *be, int64_t mid_rows, const char *tag)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    hk_bcsr K[2] = {{0}, {0}};
    double *xyz = NULL;
    for (int v = 0; v < 2; v++) {
        hk_gen_elasticity3d(7, 6, 8, &K[v]);
        test_reverse_rows(&K[v]); /* the layout's gather is not the identity */
    }
    hk_gen_elasticity3d_coords(7, 6, 8, &xyz);
    update_scale(&K[1]);
    upd_rows U = {0};
    int64_t cnt = 0;
    range(K[0].nbrows, P, me, mid_rows, &U.row0, &cnt);
    U.nglobal = K[0].nbrows;
    const hk_nearnull nn = {.dim = 3, .coords = xyz + U.row0 * 3};
    U.nn = &nn;
    int ierr = 0;
    for (int v = 0; v < 2; v++) {
        U.L[v] = rows_of(&K[v], U.row0, cnt);
        ierr |= part_rows_make(be, &U.L[v], U.row0, &U.P[v]);
    }
    ierr |= resident_rows(be, &U.L[1], &U.A);
    ierr = hk_comm_agree(c, ierr);
    const int64_t nl = cnt * K[0].bs;
    double *b = malloc(sizeof *b * (size_t)(nl + 1)), *x[UPD_WAYS];
    for (int64_t i = 0; i < nl; i++)
        b[i] = cos(0.05 * (double)(U.row0 * K[0].bs + i)) + 0.25;
    for (int w = 0; w < UPD_WAYS; w++)
        x[w] = calloc((size_t)nl + 1, sizeof *x[w]);
    /* the device transport too where the backend has one (cuda with NCCL) */
    static const char *const pcs[] = {"pc=jacobi", "pc=poly", "pc=amg pc.amg.coarse_size=40",
                                      "pc=amg pc.amg.coarse_size=40 dist.comm=nccl"};
    const int npcs = be->dcomm_create ? 4 : 3;
    char what[400];
    for (int k = 0; k < npcs && !ierr; k++) {
        char opts[200];
        snprintf(opts, sizeof opts, "backend=%s method=cg tol=1e-10 maxit=2000 %s", be->name,
                 pcs[k]);
        hk_result res[UPD_WAYS];
        double ph[UPD_WAYS][4];
        int e = 0;
        for (int w = 0; w < UPD_WAYS; w++)
            e |= upd_solve(c, &U, w, opts, b, x[w], &res[w], ph[w]);
        for (int w = 1; w < UPD_WAYS; w++) {
            int64_t differ = e || memcmp(x[0], x[w], sizeof *x[0] * (size_t)nl) != 0 ||
                             res[w].iterations != res[0].iterations;
            /* the update's seconds: its phases within its whole, the preconditioner's there */
            const double sum = ph[w][0] + ph[w][1] + ph[w][2] + ph[w][3];
            int64_t times = res[w].update_seconds > 0 && ph[w][3] > 0 && ph[w][0] >= 0 &&
                            ph[w][1] >= 0 && ph[w][2] >= 0 &&
                            sum <= res[w].update_seconds * 1.0001 + 1e-9 && res[w].setups >= 2;
            hk_comm_max_i64(c, &differ, 1);
            hk_comm_min_i64(c, &times, 1);
            snprintf(what, sizeof what,
                     "update on %s, %s, %s: x the bytes of a fresh solver (%d its)", be->name,
                     pcs[k], upd_way_names[w], res[w].iterations);
            check_tag(c, !differ && times && res[0].iterations > 0, what, tag);
        }
    }
    /* refusals: every process returns the same code and sentence */
    char opts[200], got[400] = "", want[400] = "";
    snprintf(opts, sizeof opts, "backend=%s method=cg tol=1e-10 pc=jacobi", be->name);
    hk_options *o = NULL;
    hk_solver *s = NULL;
    hk_result res;
    double *xs = calloc((size_t)nl + 1, sizeof *xs);
    int e = ierr ? ierr : hk_options_create(&o);
    if (!e) e = hk_options_parse(o, opts);
    e = hk_comm_agree(c, e);
    if (!e) e = hk_solver_create_dist(c, U.row0, &U.L[0], &nn, o, &s);
    const int64_t mid = cnt > 0 ? U.L[1].rowptr[cnt / 2] : 0;
    /* another column in one block of the last process's middle row */
    int32_t keep = 0;
    if (me == P - 1 && cnt > 0) {
        keep = U.L[1].colind[mid];
        U.L[1].colind[mid] = (int32_t)((keep + 1) % U.nglobal);
    }
    int e1 = e ? e : hk_solver_update_values(s, &U.L[1]);
    snprintf(got, sizeof got, "%s", hk_error_message());
    if (me == P - 1 && cnt > 0) U.L[1].colind[mid] = keep;
    int64_t code = e1, lo = e1;
    hk_comm_max_i64(c, &code, 1);
    hk_comm_min_i64(c, &lo, 1);
    snprintf(want, sizeof want, "process %d's new rows differ in sparsity pattern", P - 1);
    int e2 = e ? e : hk_solver_solve(s, b, xs, &res); /* still usable */
    snprintf(what, sizeof what,
             "update on %s: another pattern on the last process refused on every process",
             be->name);
    check_tag(c, !e && e1 == HK_ERR_ARG && code == lo && strstr(got, want) && !e2, what, tag);
    if (me == 0) printf("    (%s)\n", got);
    /* rows of another size on the first process */
    U.L[1].nbrows -= me == 0 && cnt > 0;
    e1 = e ? e : hk_solver_update_values(s, &U.L[1]);
    snprintf(got, sizeof got, "%s", hk_error_message());
    U.L[1].nbrows += me == 0 && cnt > 0;
    code = lo = e1;
    hk_comm_max_i64(c, &code, 1);
    hk_comm_min_i64(c, &lo, 1);
    snprintf(what, sizeof what,
             "update on %s: other sizes on the first process refused on every process", be->name);
    check_tag(c, !e && e1 == HK_ERR_ARG && code == lo && strstr(got, "process 0's new rows"), what,
              tag);
    /* a NaN in the last process's middle row: refused by all, named as create names it */
    if (me == P - 1 && cnt > 0) U.L[1].val[mid * 9 + 4] = NAN;
    e1 = e ? e : hk_solver_update_values(s, &U.L[1]);
    snprintf(got, sizeof got, "%s", hk_error_message());
    e2 = e ? e : hk_solver_solve(s, b, xs, &res); /* broken now */
    hk_solver *s2 = NULL;
    int e3 = e ? e : hk_solver_create_dist(c, U.row0, &U.L[1], &nn, o, &s2);
    snprintf(want, sizeof want, "%s", hk_error_message());
    hk_solver_destroy(s2);
    code = lo = e1;
    hk_comm_max_i64(c, &code, 1);
    hk_comm_min_i64(c, &lo, 1);
    snprintf(what, sizeof what,
             "update on %s: a NaN on the last process refused on every process as at create",
             be->name);
    check_tag(c,
              !e && e1 == HK_ERR_NUMERIC && code == lo && e3 == HK_ERR_NUMERIC &&
                  strstr(got, "is nan") && !strcmp(got, want) && e2 != 0,
              what, tag);
    if (me == 0) printf("    (%s)\n", got);
    hk_solver_destroy(s);
    s = NULL;
    /* rows in be's memory: another column on the last process (global columns: against the
     * fingerprint; a part's: against its pattern kept where it lies), then a NaN there in a
     * part's rows at a ghost column, named by its global column as create names it */
    for (int t = 0; t < 3; t++) {
        const int part = t > 0;
        hk_resident_bcsr *A = part ? &U.P[1].A : &U.A;
        if (!e)
            e = part ? hk_solver_create_dist_device(c, U.row0, U.nglobal, &U.P[0].A, cnt,
                                                    U.P[0].ghost_gid, U.P[0].nghost, &nn, o, &s)
                     : hk_solver_create_dist(c, U.row0, &U.L[0], &nn, o, &s);
        int32_t kc = 0, bc = 0;
        double kv = 0, nan = NAN;
        /* the NaN in the first row's last block: its smallest column, a ghost (another
         * process's row), so the part's column is named by its ghost id */
        const int64_t at = t == 2 && cnt > 0 ? (U.L[1].rowptr[1] - 1) * 9 + 4 : mid * 9 + 4;
        if (me == P - 1 && cnt > 0 && t < 2) {
            ierr |= be->copy_from(&kc, A->colind + mid, sizeof kc);
            bc = (int32_t)((kc + 1) % (part ? cnt : U.nglobal));
            ierr |= be->copy_to(A->colind + mid, &bc, sizeof bc);
        }
        if (me == P - 1 && cnt > 0 && t == 2) {
            ierr |= be->copy_from(&kv, A->val + at, sizeof kv);
            ierr |= be->copy_to(A->val + at, &nan, sizeof nan);
        }
        e1 = e ? e : hk_solver_update_values_resident(s, A);
        snprintf(got, sizeof got, "%s", hk_error_message());
        if (me == P - 1 && cnt > 0 && t < 2) ierr |= be->copy_to(A->colind + mid, &kc, sizeof kc);
        if (me == P - 1 && cnt > 0 && t == 2) ierr |= be->copy_to(A->val + at, &kv, sizeof kv);
        e2 = e ? e : hk_solver_solve(s, b, xs, &res);
        code = lo = e1;
        hk_comm_max_i64(c, &code, 1);
        hk_comm_min_i64(c, &lo, 1);
        if (t < 2) {
            snprintf(want, sizeof want, "process %d's new rows", P - 1);
            snprintf(what, sizeof what,
                     "update_values_resident on %s (%s): another pattern on the last process "
                     "refused on every process",
                     be->name, part ? "a part's rows" : "global columns");
            check_tag(c,
                      !e && !ierr && e1 == HK_ERR_ARG && code == lo && strstr(got, want) &&
                          strstr(got, "differ in sparsity pattern") && !e2,
                      what, tag);
        } else {
            /* create's sentence for these values (the host rows with the NaN) */
            if (me == P - 1 && cnt > 0) U.L[1].val[at] = NAN;
            e3 = hk_solver_create_dist(c, U.row0, &U.L[1], &nn, o, &s2);
            snprintf(want, sizeof want, "%s", hk_error_message());
            hk_solver_destroy(s2);
            s2 = NULL;
            snprintf(what, sizeof what,
                     "update_values_resident on %s (a part's rows): a NaN on the last process "
                     "refused on every process as at create",
                     be->name);
            check_tag(c,
                      !e && !ierr && e1 == HK_ERR_NUMERIC && code == lo && e3 == HK_ERR_NUMERIC &&
                          strstr(got, "is nan") && !strcmp(got, want) && e2 != 0,
                      what, tag);
        }
        if (me == 0) printf("    (%s)\n", got);
        hk_solver_destroy(s);
        s = NULL;
    }
    hk_options_destroy(o);
    free(xs);
    for (int w = 0; w < UPD_WAYS; w++)
        free(x[w]);
    free(b);
    hk_resident_bcsr_free(&U.A);
    for (int v = 0; v < 2; v++) {
        part_rows_free(&U.P[v]);
        free(U.L[v].rowptr);
        hk_bcsr_free(&K[v]);
    }
    free(xyz);
}

/* One comparison of pc=amg's set-up on a device's path (HOOKE_DIST_STAGED=1: copies,
 * downloads and the device's steps on the cpu) with the views' on the rows L (from row0):
 * x byte for byte, the same levels, at least 3 of them. Collective. */
static void staged_case(const hk_comm *c, int64_t row0, const hk_bcsr *L, const hk_nearnull *nn,
                        const double *b, const char *variant, const char *label)
{
    const int64_t nl = L->nbrows * L->bs;
    double *x[2];
    char lev[2][160], what[400];
    int ierr = 0;
    for (int k = 0; k < 2; k++) {
        x[k] = calloc((size_t)nl + 1, sizeof *x[k]);
        char opts[240];
        snprintf(opts, sizeof opts, "backend=cpu method=cg pc=amg tol=1e-10 maxit=500 %s", variant);
        if (k) setenv("HOOKE_DIST_STAGED", "1", 1);
        int its = 0;
        ierr |= amg_solve(c, row0, L, nn, opts, b, x[k], &its, lev[k], sizeof lev[k]);
        unsetenv("HOOKE_DIST_STAGED");
    }
    int64_t differ = ierr || memcmp(x[0], x[1], sizeof *x[0] * (size_t)nl);
    hk_comm_max_i64(c, &differ, 1);
    const int deep = lev[0][0] && !strcmp(lev[0], lev[1]) && !strstr(lev[0], " 1 level") &&
                     !strstr(lev[0], " 2 levels");
    snprintf(what, sizeof what,
             "amg set-up on the device's path (%s%s): %s, x byte for byte as the views'", variant,
             label, lev[1][0] ? lev[1] : "no levels");
    check(c, !differ && deep, what);
    for (int k = 0; k < 2; k++)
        free(x[k]);
}

/* The staged and gathered checks' problem: elasticity3d 9 x 8 x 10 with its coordinates, and a
 * right-hand side (variant 0: a sine, 1: a cosine, each with a constant on one dof of three). */
static double *amg_problem(hk_bcsr *K, double **xyz, int variant)
{
    hk_gen_elasticity3d(9, 8, 10, K);
    hk_gen_elasticity3d_coords(9, 8, 10, xyz);
    const int64_t n = K->nbrows * K->bs;
    double *b = malloc(sizeof *b * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        b[i] = variant ? cos(0.07 * (double)i) + (i % 3 == 0 ? 0.5 : 0.0)
                       : sin(0.05 * (double)i) + (i % 3 == 2 ? 0.25 : 0.0);
    return b;
}

/* pc=amg's set-up on a device's path against the views': at least 3 levels, also where the
 * middle process owns no rows (no coarse rows, no ghosts) or a few, and where the processes'
 * rows are not coupled (no ghosts: no coarse row owned elsewhere, none sent or received). */
static void test_amg_staged(const hk_comm *c)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    hk_bcsr K = {0};
    double *xyz = NULL, *b = amg_problem(&K, &xyz, 0);
    static const char *const variants[] = {
        "pc.amg.coarse_size=40",
        "pc.amg.coarse_size=40 pc.amg.precision=fp64 pc.amg.smoother=l1-jacobi"};
    static const int64_t mids[] = {0, 3, 40};
    for (int m = 0; m < 3; m++)
        for (int v = 0; v < 2 && (P >= 3 || m == 2); v++) {
            int64_t row0 = 0, cnt = 0;
            range(K.nbrows, P, me, mids[m], &row0, &cnt);
            hk_bcsr L = rows_of(&K, row0, cnt);
            const hk_nearnull nn = {.dim = 3, .coords = xyz ? xyz + row0 * 3 : NULL};
            char rows[64] = "";
            if (P >= 3)
                snprintf(rows, sizeof rows, ", the middle process's rows %lld", (long long)mids[m]);
            staged_case(c, row0, &L, &nn, b + row0 * K.bs, variants[v], rows);
            free(L.rowptr);
        }
    /* every process owns a copy of K of its own (the whole matrix block diagonal) */
    {
        hk_bcsr L = K;
        L.nbcols = K.nbcols * P;
        L.colind = malloc(sizeof *L.colind * (size_t)(K.rowptr[K.nbrows] + 1));
        for (int64_t p = 0; p < K.rowptr[K.nbrows]; p++)
            L.colind[p] = K.colind[p] + (int32_t)(me * K.nbcols);
        const hk_nearnull nn = {.dim = 3, .coords = xyz};
        staged_case(c, me * K.nbrows, &L, &nn, b, variants[0], ", a copy of K on each process");
        free(L.colind);
    }
    free(b);
    free(xyz);
    hk_bcsr_free(&K);
}

/* pc=amg's set-up with a device transport (tb: NCCL on cuda, the host one on the cpu): the
 * ghost rows' records and the Galerkin blocks routed device to device against the same
 * solver's set-up with those messages through the host (HOOKE_AMG_DEVICE_MESSAGES=0) and
 * against dist.comm=mpi. The values in tb's memory (hk_solver_create_dist_resident), so that
 * the cpu's host transport is the solver's backend. Device messages against host ones: x byte
 * for byte (the same records, the same sums), every set-up's R and P checked against the
 * host's way (HOOKE_AMG_CHECK_TRANSFER); against mpi: the same levels, x to 1e-8 (on the cpu
 * byte for byte: the host transport sums as MPI does). Also where the middle process owns no
 * rows or a few. Collective. */
static void test_amg_transport(const hk_comm *c, const hk_backend_ops *tb)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c), cpu = !strcmp(tb->name, "cpu");
    hk_bcsr K = {0};
    double *xyz = NULL, *b = amg_problem(&K, &xyz, 0);
    static const char *const variants[] = {
        "pc.amg.coarse_size=40",
        "pc.amg.coarse_size=40 pc.amg.precision=fp64 pc.amg.smoother=l1-jacobi"};
    static const int64_t mids[] = {0, 3, 40};
    char *was =
        getenv("HOOKE_AMG_DEVICE_MESSAGES") ? strdup(getenv("HOOKE_AMG_DEVICE_MESSAGES")) : NULL;
    setenv("HOOKE_AMG_CHECK_TRANSFER", "1", 0);
    for (int m = 0; m < 3; m++)
        for (int v = 0; v < 2 && (P >= 3 || m == 2); v++) {
            int64_t row0 = 0, cnt = 0;
            range(K.nbrows, P, me, mids[m], &row0, &cnt);
            hk_bcsr L = rows_of(&K, row0, cnt), pat = L;
            pat.val = NULL;
            const int bb = K.bs * K.bs;
            const int64_t nv = L.rowptr[cnt] * bb, nl = cnt * K.bs;
            const hk_nearnull nn = {.dim = 3, .coords = xyz ? xyz + row0 * 3 : NULL};
            double *val = NULL, *x[3];
            char lev[3][160];
            int its[3] = {-1, -1, -1};
            int ierr = tb->alloc((void **)&val, sizeof *val * (size_t)(nv + 1));
            if (!ierr && nv) ierr = tb->copy_to(val, L.val, sizeof *val * (size_t)nv);
            ierr = hk_comm_agree(c, ierr);
            /* mpi, nccl with the set-up's messages through the host, nccl device to device */
            for (int k = 0; k < 3; k++) {
                x[k] = calloc((size_t)nl + 1, sizeof *x[k]);
                lev[k][0] = 0;
                if (ierr) continue;
                char opts[300];
                snprintf(opts, sizeof opts,
                         "backend=auto method=cg pc=amg tol=1e-10 maxit=500 %s dist.comm=%s",
                         variants[v], k ? "nccl" : "mpi");
                setenv("HOOKE_AMG_DEVICE_MESSAGES", k == 2 ? "1" : "0", 1);
                hk_options *o = NULL;
                hk_solver *s = NULL;
                hk_result res;
                int e = hk_options_create(&o);
                if (!e) e = hk_options_parse(o, opts);
                e = hk_comm_agree(c, e);
                if (!e) e = hk_solver_create_dist_resident(c, row0, &pat, tb, val, &nn, o, &s);
                if (!e && strcmp(hk_solver_dist_comm(s), k ? "nccl" : "mpi") != 0)
                    e = hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__, "dist.comm not as asked");
                if (!e) e = hk_solver_solve(s, b + row0 * K.bs, x[k], &res);
                if (!e) its[k] = res.iterations;
                if (!e) amg_levels(s, lev[k], sizeof lev[k]);
                if (e && *hk_error_message())
                    fprintf(stderr, "process %d: %s\n", me, hk_error_message());
                ierr |= e;
                hk_solver_destroy(s);
                hk_options_destroy(o);
            }
            if (was)
                setenv("HOOKE_AMG_DEVICE_MESSAGES", was, 1);
            else
                unsetenv("HOOKE_AMG_DEVICE_MESSAGES");
            double err = 0, scale = 0;
            int64_t differ = ierr || memcmp(x[1], x[2], sizeof *x[1] * (size_t)nl) != 0;
            int64_t differ_mpi = ierr || memcmp(x[0], x[2], sizeof *x[0] * (size_t)nl) != 0;
            for (int64_t i = 0; i < nl; i++) {
                scale = fmax(scale, fabs(x[0][i]));
                err = fmax(err, fabs(x[2][i] - x[0][i]));
            }
            hk_comm_max_i64(c, &differ, 1);
            hk_comm_max_i64(c, &differ_mpi, 1);
            hk_comm_max(c, &err, 1);
            hk_comm_max(c, &scale, 1);
            const int deep = lev[0][0] && !strcmp(lev[0], lev[1]) && !strcmp(lev[0], lev[2]) &&
                             !strstr(lev[0], " 1 level") && !strstr(lev[0], " 2 levels");
            char rows[64] = "", what[400];
            if (P >= 3)
                snprintf(rows, sizeof rows, ", the middle process's rows %lld", (long long)mids[m]);
            snprintf(what, sizeof what,
                     "amg set-up's messages device to device on %s (%s%s): %s, x byte for byte as "
                     "through the host (%d its)",
                     tb->name, variants[v], rows, lev[2][0] ? lev[2] : "no levels", its[2]);
            check(c, !ierr && deep && !differ, what);
            snprintf(what, sizeof what,
                     "amg set-up's messages device to device on %s (%s%s): x %s dist.comm=mpi's "
                     "(%d, %d its)",
                     tb->name, variants[v], rows, cpu ? "byte for byte as" : "to 1e-8 of", its[0],
                     its[2]);
            check(c, !ierr && deep && (cpu ? !differ_mpi : err <= 1e-8 * scale), what);
            for (int k = 0; k < 3; k++)
                free(x[k]);
            tb->dealloc(val);
            free(L.rowptr);
        }
    free(was);
    free(b);
    free(xyz);
    hk_bcsr_free(&K);
}

/* pc.amg.dist.gather_rows: the small levels on every process against the cycle with every
 * level distributed (gather_rows=0): x to 1e-10 relative with the same iterations, where the
 * gathered part starts at level 1 and where it is the coarsest alone, also where the middle
 * process owns no rows (so no rows of any coarse level) or a few. On a device (whose SpMV
 * kernel picks its lanes per row by the matrix's mean row length, so that a whole level's
 * sums may round otherwise than a process's rows') x to 1e-7 and the iterations within 1. */
static void test_amg_gathered(const hk_comm *c, const hk_backend *be)
{
    const int cpu = !strcmp(be->name, "cpu");
    const int P = hk_comm_size(c), me = hk_comm_rank(c);
    hk_bcsr K = {0};
    double *xyz = NULL, *b = amg_problem(&K, &xyz, 1);
    static const char *const variants[] = {
        "pc.amg.coarse_size=20",
        "pc.amg.coarse_size=20 pc.amg.precision=fp64 pc.amg.smoother=l1-jacobi pc.amg.cycle=w"};
    /* 100000: from level 1 on; 1: the coarsest only */
    static const char *const gathers[] = {"100000", "1"};
    static const int64_t mids[] = {0, 3, 40};
    for (int m = 0; m < 3; m++)
        for (int v = 0; v < 2 && (P >= 3 || m == 2); v++) {
            int64_t row0 = 0, cnt = 0;
            range(K.nbrows, P, me, mids[m], &row0, &cnt);
            hk_bcsr L = rows_of(&K, row0, cnt);
            const hk_nearnull nn = {.dim = 3, .coords = xyz ? xyz + row0 * 3 : NULL};
            const int64_t nl = cnt * K.bs;
            double *x[3];
            char lev[3][160];
            int its[3] = {-1, -1, -1}, ierr = 0;
            for (int k = 0; k < 3; k++) {
                x[k] = calloc((size_t)nl + 1, sizeof *x[k]);
                char opts[300];
                snprintf(opts, sizeof opts,
                         "backend=%s method=cg pc=amg tol=1e-10 maxit=500 %s "
                         "pc.amg.dist.gather_rows=%s",
                         be->name, variants[v], k ? gathers[k - 1] : "0");
                ierr |= amg_solve(c, row0, &L, &nn, opts, b + row0 * K.bs, x[k], &its[k], lev[k],
                                  sizeof lev[k]);
            }
            double err[2] = {0, 0}, scale = 0;
            for (int64_t i = 0; i < nl; i++) {
                scale = fmax(scale, fabs(x[0][i]));
                for (int k = 1; k < 3; k++)
                    err[k - 1] = fmax(err[k - 1], fabs(x[k][i] - x[0][i]));
            }
            hk_comm_max(c, err, 2);
            hk_comm_max(c, &scale, 1);
            const int deep = lev[0][0] && !strcmp(lev[0], lev[1]) && !strcmp(lev[0], lev[2]) &&
                             !strstr(lev[0], " 1 level") && !strstr(lev[0], " 2 levels");
            char rows[64] = "", what[400];
            if (P >= 3)
                snprintf(rows, sizeof rows, ", the middle process's rows %lld", (long long)mids[m]);
            const double tol = cpu ? 1e-10 : 1e-7;
            const int dits = cpu ? 0 : 1;
            snprintf(what, sizeof what,
                     "amg levels on every process on %s (%s%s): %s, x to %g, %d, %d, %d its",
                     be->name, variants[v], rows, lev[1][0] ? lev[1] : "no levels", tol, its[0],
                     its[1], its[2]);
            check(c,
                  !ierr && deep && its[0] > 0 && abs(its[1] - its[0]) <= dits &&
                      abs(its[2] - its[0]) <= dits && err[0] <= tol * scale &&
                      err[1] <= tol * scale,
                  what);
            for (int k = 0; k < 3; k++)
                free(x[k]);
            free(L.rowptr);
        }
    free(b);
    free(xyz);
    hk_bcsr_free(&K);
}

/* ---- pc=amg's level 0 through the fused Chebyshev step -------------------------------- */

/* One distributed solve for test_amg_fused by path: 0 the mpi transport on the host's rows, 1
 * the same on a device's path (HOOKE_DIST_STAGED=1: staged halos), 2 the device transport tb
 * (dist.comm=nccl, the values in tb's memory); unfused: HOOKE_AMG_UNFUSED=1. Collective. */
static int fused_solve(const hk_comm *c, const hk_backend_ops *tb, int path, int unfused,
                       int64_t row0, const hk_bcsr *L, const hk_nearnull *nn, const char *opts,
                       const double *b, double *x, int *its, char *lev, size_t len)
{
    if (unfused) setenv("HOOKE_AMG_UNFUSED", "1", 1);
    if (path == 1) setenv("HOOKE_DIST_STAGED", "1", 1);
    int ierr = 0;
    if (path < 2)
        ierr = amg_solve(c, row0, L, nn, opts, b, x, its, lev, len);
    else {
        const int64_t nv = L->rowptr[L->nbrows] * L->bs * L->bs;
        hk_bcsr pat = *L;
        pat.val = NULL;
        double *val = NULL;
        hk_options *o = NULL;
        hk_solver *s = NULL;
        hk_result res;
        *its = -1;
        lev[0] = 0;
        ierr = tb->alloc((void **)&val, sizeof *val * (size_t)(nv + 1));
        if (!ierr && nv) ierr = tb->copy_to(val, L->val, sizeof *val * (size_t)nv);
        if (!ierr) ierr = hk_options_create(&o);
        if (!ierr) ierr = hk_options_parse(o, opts);
        if (!ierr) ierr = hk_options_set(o, "dist.comm", "nccl");
        ierr = hk_comm_agree(c, ierr);
        if (!ierr) ierr = hk_solver_create_dist_resident(c, row0, &pat, tb, val, nn, o, &s);
        if (!ierr) ierr = hk_solver_solve(s, b, x, &res);
        if (!ierr) *its = res.iterations;
        if (!ierr) amg_levels(s, lev, len);
        if (ierr && *hk_error_message())
            fprintf(stderr, "process %d: %s\n", hk_comm_rank(c), hk_error_message());
        hk_solver_destroy(s);
        hk_options_destroy(o);
        if (val) tb->dealloc(val);
    }
    unsetenv("HOOKE_AMG_UNFUSED");
    unsetenv("HOOKE_DIST_STAGED");
    return ierr;
}

/* pc=amg's level 0 by the distributed table's amg_cheb_step (its sweeps' steps and the
 * residual, the exchange around the interior rows' step) against the separate calls
 * (HOOKE_AMG_UNFUSED=1): the same iterations and x byte for byte, for Chebyshev of degree 1 to
 * 4 (d2 from degree 3), V and W, fp32 and fp64 levels, l1-Jacobi (the residual alone), on the
 * mpi transport, a device's staged path (cpu) and the device transport; also where the middle
 * process owns no rows or a few. */
static void test_amg_fused(const hk_comm *c, const hk_backend *be, const hk_backend_ops *tb)
{
    const int P = hk_comm_size(c), me = hk_comm_rank(c), cpu = !strcmp(be->name, "cpu");
    hk_bcsr K = {0};
    double *xyz = NULL, *b = amg_problem(&K, &xyz, 1);
    static const char *const variants[] = {
        "pc.amg.coarse_size=40",
        "pc.amg.coarse_size=40 pc.amg.degree=3 pc.amg.pre=2 pc.amg.post=2",
        "pc.amg.coarse_size=40 pc.amg.degree=1",
        "pc.amg.coarse_size=40 pc.amg.degree=4 pc.amg.cycle=w pc.amg.precision=fp64",
        "pc.amg.coarse_size=40 pc.amg.smoother=l1-jacobi"};
    static const char *const path_name[] = {"mpi", "mpi, staged", "device transport"};
    static const int64_t mids[] = {0, 3, 40};
    for (int m = 0; m < 3; m++) {
        if (P < 3 && m < 2) continue;
        int64_t row0 = 0, cnt = 0;
        range(K.nbrows, P, me, mids[m], &row0, &cnt);
        hk_bcsr L = rows_of(&K, row0, cnt);
        const hk_nearnull nn = {.dim = 3, .coords = xyz ? xyz + row0 * 3 : NULL};
        const int64_t nl = cnt * K.bs;
        for (int path = 0; path < 3; path++) {
            if ((path == 1 && !cpu) || (path == 2 && !tb)) continue;
            for (int v = 0; v < 5; v++) {
                /* every variant once (the middle process's 40 rows, mpi), a few on the other
                 * paths and where the middle process owns few rows or none */
                if ((path > 0 && v >= 3) || (m < 2 && (v >= 2 || path == 1))) continue;
                double *x[2];
                char lev[2][160], what[480];
                int its[2] = {-1, -1}, ierr = 0;
                char opts[300];
                snprintf(opts, sizeof opts, "backend=%s method=cg pc=amg tol=1e-10 maxit=500 %s",
                         path == 2 ? "auto" : be->name, variants[v]);
                for (int k = 0; k < 2; k++) {
                    x[k] = calloc((size_t)nl + 1, sizeof *x[k]);
                    ierr |= fused_solve(c, tb, path, k, row0, &L, &nn, opts, b + row0 * K.bs,
                                        x[k], &its[k], lev[k], sizeof lev[k]);
                }
                int64_t differ = ierr || its[0] != its[1] ||
                                 memcmp(x[0], x[1], sizeof *x[0] * (size_t)nl) != 0;
                hk_comm_max_i64(c, &differ, 1);
                const int deep = lev[0][0] && !strcmp(lev[0], lev[1]) &&
                                 !strstr(lev[0], " 1 level");
                char rows[64] = "";
                if (P >= 3)
                    snprintf(rows, sizeof rows, ", the middle process's rows %lld",
                             (long long)mids[m]);
                snprintf(what, sizeof what,
                         "amg level 0 fused on %s (%s, %s%s): x byte for byte as unfused (%d, "
                         "%d its)",
                         be->name, path_name[path], variants[v], rows, its[0], its[1]);
                check(c, !differ && deep && its[0] > 0, what);
                for (int k = 0; k < 2; k++)
                    free(x[k]);
            }
        }
        free(L.rowptr);
    }
    free(b);
    free(xyz);
    hk_bcsr_free(&K);
}

/* --fatal: the last process's transport fails in the middle of an SpMV. */
static int fatal_exchange(void *dc, int nrecv, const int *recv_rank, const int64_t *recv_off,
                          void *recv, int nsend, const int *send_rank, const int64_t *send_off,
                          const void *send, size_t bytes)
{
    const hk_comm *c = hk_comm_world();
    if (hk_comm_rank(c) == hk_comm_size(c) - 1)
        return hk_error_set(HK_ERR_DEVICE, __FILE__, __LINE__,
                            "the transport failed on the last process");
    return failing_base->dcomm_exchange(dc, nrecv, recv_rank, recv_off, recv, nsend, send_rank,
                                        send_off, send, bytes);
}

static int run_fatal(const hk_comm *c, const hk_backend_ops *tb)
{
    static hk_backend_ops fatal;
    fatal = *tb;
    failing_base = tb;
    fatal.dcomm_exchange = fatal_exchange;
    hk_bcsr K = {0};
    hk_gen_poisson2d(12, &K);
    int64_t row0 = 0, cnt = 0;
    range(K.nbrows, hk_comm_size(c), hk_comm_rank(c), 20, &row0, &cnt);
    spmv_case(c, &fatal, HK_DIST_COMM_NCCL, &K, row0, cnt, HK_FMT_CSR, HK_FP64);
    hk_bcsr_free(&K);
    /* not reached by the last process; the others wait for it until mpirun ends them */
    fprintf(stderr, "process %d: the failed exchange did not end the run\n", hk_comm_rank(c));
    return 1;
}

int main(int argc, char **argv)
{
    if (hk_comm_world_init(&argc, &argv)) {
        fprintf(stderr, "hooke_mpi_tests: %s\n", hk_error_message());
        return 1;
    }
    const hk_comm *c = hk_comm_world();
    if (hk_comm_size(c) < 2) { /* the checks compare processes with one another */
        fprintf(stderr, "hooke_mpi_tests: run it as 2 or more processes (mpirun -np 2 "
                        "hooke_mpi_tests); one process has nothing to exchange\n");
        return hk_comm_world_end(1);
    }
    const char *bn = getenv("HOOKE_TEST_BACKEND");
    const hk_backend *be = NULL;
    if (hk_backend_get(bn ? bn : "cpu", &be)) {
        fprintf(stderr, "hooke_mpi_tests: %s\n", hk_error_message());
        return hk_comm_world_end(1);
    }
    const hk_backend_ops *tb = transport_of(be);
    if (argc > 1 && !strcmp(argv[1], "--fatal")) {
        if (!tb) return hk_comm_world_end(0); /* nothing to fail: cuda built without NCCL */
        return hk_comm_world_end(run_fatal(c, tb));
    }
    if (hk_comm_rank(c) == 0)
        printf("hooke_mpi_tests: %d processes, backend %s, device transport %s\n", hk_comm_size(c),
               be->name,
               tb == be ? "NCCL"
               : tb     ? "the host one (MPI, the cpu)"
                        : "none (built without NCCL)");
    test_halo(c);
    test_halo_with(c);
    test_sums(c);
    test_spmv(c, be, HK_DIST_COMM_MPI);
    if (tb) test_spmv(c, tb, HK_DIST_COMM_NCCL);
    test_agree(c);
    test_alone(c, be);
    if (tb) {
        test_dcomm_sums(c, tb);
        test_dcomm_refused(c, be, tb);
        test_dcomm_prepared(c, tb);
    }
    if (be->dcomm_create) test_dcomm_solve(c, be);
    test_amg_setup(c, be);
    test_amg_symmetric(c, be);
    test_resident(c, be);
    test_device_rows(c, be);
    test_update(c, be, 30, "");
    if (hk_comm_size(c) >= 3) test_update(c, be, 0, " (a process owns no rows)");
    if (!strcmp(be->name, "cpu") && !getenv("HOOKE_DIST_STAGED")) {
        /* the device's path: the values uploaded and gathered there */
        setenv("HOOKE_DIST_STAGED", "1", 1);
        test_update(c, be, 30, " (HOOKE_DIST_STAGED=1)");
        unsetenv("HOOKE_DIST_STAGED");
    }
    test_amg_staged(c);
    test_amg_gathered(c, be);
    if (tb) test_amg_transport(c, tb);
    test_amg_fused(c, be, tb);
    int64_t f = failures;
    hk_comm_max_i64(c, &f, 1);
    if (hk_comm_rank(c) == 0) printf("hooke_mpi_tests: %s\n", f ? "FAILED" : "all passed");
    hk_comm_agree(c, f ? HK_ERR_INTERNAL : 0);
    return hk_comm_world_end(f ? 1 : 0);
}
