/* The distributed layer on one process (its runs on several are tests/mpi/test_mpi.sh):
 * partitions, the communicator of one process, the layout of a process's rows, and the
 * vec_gather of every backend against the CPU's and the NCCL transport on one GPU (device
 * suite cuda_dist). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"
#include "test_dist_rows.h"
#include "test_util.h"

/* Every part used, each vertex in one part, the same parts twice. */
static void test_partition_graph(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 5, 4, &K));
    const int64_t n = K.nbrows;
    int32_t *p1 = malloc(sizeof *p1 * (size_t)n), *p2 = malloc(sizeof *p2 * (size_t)n);
    for (int parts = 1; parts <= 5; parts++) {
        HK_ASSERT_OK(hk_partition_graph(n, K.rowptr, K.colind, parts, p1));
        HK_ASSERT_OK(hk_partition_graph(n, K.rowptr, K.colind, parts, p2));
        CU_ASSERT(!memcmp(p1, p2, sizeof *p1 * (size_t)n));
        int64_t count[5] = {0};
        for (int64_t i = 0; i < n; i++) {
            CU_ASSERT_FATAL(p1[i] >= 0 && p1[i] < parts);
            count[p1[i]]++;
        }
        for (int q = 0; q < parts; q++) {
            CU_ASSERT(count[q] > 0);
            /* balanced within METIS's tolerance (or exactly, contiguous) */
            CU_ASSERT(count[q] <= 1.2 * (double)n / parts + 1);
        }
    }
    /* fewer rows than parts: every row its own part, no error */
    HK_ASSERT_OK(hk_partition_graph(3, K.rowptr, K.colind, 5, p1));
    CU_ASSERT(p1[0] == 0 && p1[1] == 1 && p1[2] == 3);
    free(p1);
    free(p2);
    hk_bcsr_free(&K);
}

/* Cells of a strip of quadrilaterals: parts used, contiguous along the strip. */
static void test_partition_cells(void)
{
    enum { NC = 40 };
    int64_t ptr[NC + 1];
    int32_t nodes[4 * NC], part[NC];
    for (int e = 0; e < NC; e++) { /* quad e: nodes e, e+1 below, e+NC+2, e+NC+1 above */
        ptr[e] = 4 * e;
        nodes[4 * e] = e, nodes[4 * e + 1] = e + 1;
        nodes[4 * e + 2] = e + NC + 2, nodes[4 * e + 3] = e + NC + 1;
    }
    ptr[NC] = 4 * NC;
    HK_ASSERT_OK(hk_partition_cells(NC, ptr, nodes, 2 * (NC + 1), 2, 4, part));
    int changes = 0, used[4] = {0};
    for (int e = 0; e < NC; e++) {
        CU_ASSERT_FATAL(part[e] >= 0 && part[e] < 4);
        used[part[e]] = 1;
        changes += e > 0 && part[e] != part[e - 1];
    }
    CU_ASSERT(used[0] && used[1] && used[2] && used[3]);
    CU_ASSERT(changes == 3); /* a strip cuts into 4 runs */
}

/* One process: sums and agreement pass through, the halo has nothing to do. */
static void test_comm_one(void)
{
    const hk_comm *c = hk_comm_world();
    CU_ASSERT(hk_comm_size(c) == 1 && hk_comm_rank(c) == 0);
    double v[2] = {1.5, -2};
    HK_ASSERT_OK(hk_comm_sum(c, v, 2));
    CU_ASSERT(v[0] == 1.5 && v[1] == -2);
    CU_ASSERT(hk_comm_agree(c, HK_ERR_NUMERIC) == HK_ERR_NUMERIC);
    hk_halo *h = NULL;
    const int64_t ghost[1] = {0};
    /* a ghost that the process owns is refused with a sentence */
    CU_ASSERT(hk_halo_create(c, 0, 4, 1, ghost, &h) == HK_ERR_ARG);
    CU_ASSERT(strstr(hk_error_message(), "its own") != NULL);
    HK_ASSERT_OK(hk_halo_create(c, 0, 4, 0, ghost, &h));
    double own[4] = {1, 2, 3, 4}, none[1];
    HK_ASSERT_OK(hk_halo_exchange(h, own, 1, none));
    hk_halo_destroy(h);
}

/* The layout of one process's rows of a matrix with columns of "other processes" is refused
 * with the ranges' sentence; with its own rows it is all interior. */
static void test_layout_one(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_poisson2d(6, &K));
    hk_dist *d = NULL;
    HK_ASSERT_OK(hk_dist_create(hk_comm_world(), &hk_backend_cpu, 0, &K, &d));
    CU_ASSERT(d->nint == K.nbrows && d->nbnd == 0 && d->nghost == 0);
    for (int64_t i = 0; i < K.nbrows; i++)
        CU_ASSERT(d->perm[i] == i);
    hk_dist_destroy(d);
    hk_bcsr half = K;
    half.nbrows = K.nbrows / 2; /* the first half's rows: they read columns of the second */
    CU_ASSERT(hk_dist_create(hk_comm_world(), &hk_backend_cpu, 0, &half, &d) == HK_ERR_ARG);
    CU_ASSERT(strstr(hk_error_message(), "out of range") != NULL);
    /* a column beyond the global columns: the same sentence from the check of the host's
     * values and from the pass over the columns alone (the values elsewhere) */
    const int32_t keep = K.colind[K.rowptr[7] + 1];
    K.colind[K.rowptr[7] + 1] = (int32_t)K.nbcols + 3;
    CU_ASSERT(hk_dist_create(hk_comm_world(), &hk_backend_cpu, 0, &K, &d) == HK_ERR_ARG);
    char want[512];
    snprintf(want, sizeof want, "%s", hk_error_message());
    CU_ASSERT(strstr(want, "block row 7 has column") != NULL);
    hk_bcsr P = K;
    P.val = NULL;
    CU_ASSERT(hk_dist_create_values(hk_comm_world(), &hk_backend_cpu, 0, &P, K.val,
                                    HK_DIST_COMM_AUTO, &d) == HK_ERR_ARG);
    CU_ASSERT_STRING_EQUAL(hk_error_message(), want);
    K.colind[K.rowptr[7] + 1] = keep;
    CU_ASSERT(hk_dist_check_choice("cg", "ilu0") == HK_ERR_UNSUPPORTED);
    CU_ASSERT(hk_dist_check_choice("cg", "amg") == 0);
    CU_ASSERT(hk_dist_check_choice("cholesky", "none") == HK_ERR_UNSUPPORTED);
    CU_ASSERT(hk_dist_check_choice("pipecg", "poly") == 0);
    hk_bcsr_free(&K);
}

/* vec_gather of a backend against the plain loop, fp64, fp32 and fp64 into fp32 (each entry
 * rounded as a cast rounds it: the bits compared), records of 1..3 entries and of 4 and 9 (the
 * blocks of 2 x 2 and 3 x 3 that the layout gathers from a matrix's values). */
static void gather_on(const hk_backend *be)
{
    {
        CU_ASSERT_FATAL(be && be->vec_gather != NULL);
        static const int sizes[] = {1, 2, 3, 4, 9};
        for (int k = 0; k < 5; k++)
            for (int kind = 0; kind < 3; kind++) { /* 0 fp64, 1 fp32, 2 fp64 into fp32 */
                const hk_precision px = kind == 1 ? HK_FP32 : HK_FP64;
                const hk_precision py = kind == 0 ? HK_FP64 : HK_FP32;
                const int bs = sizes[k];
                const int64_t nb = 1000, n = 377;
                double *x = hk_test_rand_vec(nb * bs, 11u + (unsigned)bs), *y = NULL;
                int32_t *idx = malloc(sizeof *idx * (size_t)n), *didx = NULL;
                for (int64_t i = 0; i < n; i++)
                    idx[i] = (int32_t)((i * 7919) % nb);
                y = calloc((size_t)(n * bs), sizeof *y);
                hk_vec *vx = NULL, *vy = NULL;
                HK_ASSERT_OK(hk_vec_create(be, nb * bs, px, &vx));
                HK_ASSERT_OK(hk_vec_create(be, n * bs, py, &vy));
                HK_ASSERT_OK(hk_vec_upload(vx, x));
                HK_ASSERT_OK(be->alloc((void **)&didx, sizeof *didx * (size_t)n));
                HK_ASSERT_OK(be->copy_to(didx, idx, sizeof *idx * (size_t)n));
                HK_ASSERT_OK(be->vec_gather(vy, vx, didx, n, bs));
                HK_ASSERT_OK(hk_vec_download(vy, y));
                int same = 1;
                for (int64_t i = 0; i < n; i++)
                    for (int r = 0; r < bs; r++) {
                        double want = x[(int64_t)idx[i] * bs + r];
                        if (py == HK_FP32) want = (float)want;
                        same &= memcmp(&y[i * bs + r], &want, sizeof want) == 0;
                    }
                if (!same)
                    fprintf(stderr, "vec_gather on %s: records of %d, %s, differ from the loop\n",
                            be->name, bs,
                            kind == 0   ? "fp64"
                            : kind == 1 ? "fp32"
                                        : "fp64 into fp32");
                CU_ASSERT(same);
                be->dealloc(didx);
                hk_vec_destroy(vx);
                hk_vec_destroy(vy);
                free(x);
                free(y);
                free(idx);
            }
    }
}

/* Every op of the distributed table is the backend's own only where that is right on the owned
 * entries alone (memory, element-wise vector ops, the local set-up of the distributed
 * preconditioners); every other op is replaced or absent. A new op of hk_backend_ops that is
 * copied unreviewed fails here: give it its line in hk_dist_ops_init (and here when it is
 * local). */
static void test_ops_reviewed(void)
{
    static const size_t local_ok[] = {offsetof(hk_backend_ops, probe),
                                      offsetof(hk_backend_ops, describe),
                                      offsetof(hk_backend_ops, mem_info),
                                      offsetof(hk_backend_ops, alloc),
                                      offsetof(hk_backend_ops, dealloc),
                                      offsetof(hk_backend_ops, copy_to),
                                      offsetof(hk_backend_ops, copy_from),
                                      offsetof(hk_backend_ops, copy),
                                      offsetof(hk_backend_ops, sync),
                                      offsetof(hk_backend_ops, host_alloc),
                                      offsetof(hk_backend_ops, host_free),
                                      offsetof(hk_backend_ops, copy_to_pageable),
                                      offsetof(hk_backend_ops, copy_from_pageable),
                                      offsetof(hk_backend_ops, mem_equal),
                                      offsetof(hk_backend_ops, vec_set),
                                      offsetof(hk_backend_ops, vec_copy),
                                      offsetof(hk_backend_ops, vec_convert),
                                      offsetof(hk_backend_ops, vec_scale),
                                      offsetof(hk_backend_ops, vec_axpby),
                                      offsetof(hk_backend_ops, vec_axpbypcz),
                                      offsetof(hk_backend_ops, vec_pointwise_mult),
                                      offsetof(hk_backend_ops, vec_poly_step),
                                      offsetof(hk_backend_ops, vec_maxpy),
                                      offsetof(hk_backend_ops, bdiag_apply),
                                      offsetof(hk_backend_ops, scal_alloc),
                                      offsetof(hk_backend_ops, scal_free),
                                      offsetof(hk_backend_ops, scal_get),
                                      offsetof(hk_backend_ops, scal_set),
                                      /* no sums (the table's vec_dot_s is NULL) */
                                      offsetof(hk_backend_ops, vec_axpby_s),
                                      offsetof(hk_backend_ops, cgcg_update),
                                      offsetof(hk_backend_ops, block_update),
                                      offsetof(hk_backend_ops, bmat_diag),
                                      offsetof(hk_backend_ops, bmat_first_nonfinite),
                                      offsetof(hk_backend_ops, format_auto),
                                      offsetof(hk_backend_ops, vec_gather),
                                      offsetof(hk_backend_ops, dist_split),
                                      offsetof(hk_backend_ops, dist_scan),
                                      offsetof(hk_backend_ops, dist_global_columns)};
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_poisson2d(4, &K));
    hk_dist *d = NULL;
    HK_ASSERT_OK(hk_dist_create(hk_comm_world(), &hk_backend_cpu, 0, &K, &d));
    hk_dist_ops_init(d);
    const char *first = (const char *)&d->ops.probe, *last = (const char *)&d->ops.dist;
    int unreviewed = 0;
    for (const char *q = first; q < last; q += sizeof(void (*)(void))) {
        const size_t off = (size_t)(q - (const char *)&d->ops);
        void (*mine)(void), (*theirs)(void);
        memcpy(&mine, q, sizeof mine);
        memcpy(&theirs, (const char *)&hk_backend_cpu + off, sizeof theirs);
        if (!mine || mine != theirs) continue;
        int ok = 0;
        for (size_t i = 0; i < sizeof local_ok / sizeof *local_ok; i++)
            ok |= local_ok[i] == off;
        if (!ok)
            fprintf(stderr,
                    "\n  the op at offset %zu of hk_backend_ops is the cpu's own in "
                    "the distributed table: review it in hk_dist_ops_init\n",
                    off);
        unreviewed += !ok;
    }
    CU_ASSERT(unreviewed == 0);
    /* not local: a distributed matrix refilled or converted by the backend would lose its halo
     * plan (the conversion is the distributed one, its parts the backend's) */
    CU_ASSERT_PTR_NULL(d->ops.mat_refill);
    CU_ASSERT_PTR_NULL(d->ops.mat_refill_checked);
    CU_ASSERT(d->ops.mat_convert == hk_dist_mat_convert);
    hk_dist_destroy(d);
    hk_bcsr_free(&K);
}

/* HOOKE_DIST_STAGED=1 (the cpu takes a device's path) set or unset. */
static void dist_staged(int on)
{
    if (on)
        setenv("HOOKE_DIST_STAGED", "1", 1);
    else
        unsetenv("HOOKE_DIST_STAGED");
}

/* The layout from the rows' pattern and their values in be's memory (hk_dist_create_values),
 * and from the host's rows on be (on a device, or staged: uploaded as they are, then put in
 * order there), against the layout from the host's rows on the cpu's views: the same owned
 * and boundary blocks on the backend, byte for byte, and the same distributed SpMV; a
 * non-finite value found there and named as the host's check names it. staged: be's layouts
 * under HOOKE_DIST_STAGED=1. */
static void resident_layout_on(const hk_backend *be, int staged)
{
    CU_ASSERT_FATAL(be != NULL);
    const hk_comm *w = hk_comm_world();
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 3, &K));
    test_reverse_rows(&K);
    const int64_t nnzb = K.rowptr[K.nbrows], nv = nnzb * K.bs * K.bs, n = K.nbrows * K.bs;
    double *val = NULL;
    HK_ASSERT_OK(be->alloc((void **)&val, sizeof *val * (size_t)nv));
    HK_ASSERT_OK(be->copy_to(val, K.val, sizeof *val * (size_t)nv));
    hk_bcsr P = K;
    P.val = NULL; /* the host has the pattern only */
    hk_dist *dh = NULL, *dr = NULL, *ds = NULL;
    HK_ASSERT_OK(hk_dist_create(w, &hk_backend_cpu, 0, &K, &dh));
    dist_staged(staged);
    HK_ASSERT_OK(hk_dist_create_values(w, be, 0, &P, val, HK_DIST_COMM_AUTO, &dr));
    HK_ASSERT_OK(hk_dist_create(w, be, 0, &K, &ds));
    dist_staged(0);
    CU_ASSERT(dr->nint == dh->nint && dr->nbnd == dh->nbnd);
    /* what the host keeps of the split: Koo's columns only with host-memory views, Koo's row
     * pointers, Kbnd's pattern and bcol always */
    CU_ASSERT(!dr->Koo.colind == !dr->host_memory);
    if (dr->Koo.colind)
        CU_ASSERT(!memcmp(dr->Koo.colind, dh->Koo.colind, sizeof(int32_t) * (size_t)nnzb));
    CU_ASSERT(!memcmp(dr->Koo.rowptr, dh->Koo.rowptr, sizeof(int64_t) * (size_t)(K.nbrows + 1)));
    CU_ASSERT(dr->nbc == dh->nbc && !memcmp(dr->bcol, dh->bcol, sizeof(int32_t) * (size_t)dh->nbc));
    CU_ASSERT(!memcmp(dr->Kbnd.rowptr, dh->Kbnd.rowptr, sizeof(int64_t) * (size_t)(dh->nbnd + 1)));
    CU_ASSERT(!memcmp(dr->Kbnd.colind, dh->Kbnd.colind,
                      sizeof(int32_t) * (size_t)dh->Kbnd.rowptr[dh->nbnd]));
    CU_ASSERT(test_same_as_host(be, &dr->Koo_d, &dh->Koo));
    CU_ASSERT(test_same_as_host(be, &dr->Kbnd_d, &dh->Kbnd));
    CU_ASSERT(test_same_as_host(be, &ds->Koo_d, &dh->Koo));
    CU_ASSERT(test_same_as_host(be, &ds->Kbnd_d, &dh->Kbnd));
    hk_dist_destroy(ds);
    /* the operator built from the backend's rows: the host's product */
    hk_dist_ops_init(dr);
    hk_bmat Kd = dr->Koo_d;
    Kd.be = &dr->ops;
    hk_mat *A = NULL;
    hk_vec *vx = NULL, *vy = NULL;
    double *x = hk_test_rand_vec(n, 3u), *y = malloc(sizeof *y * (size_t)n);
    double *yd = malloc(sizeof *yd * (size_t)n);
    hk_bcsr_spmv(&K, x, y);
    HK_ASSERT_OK(hk_mat_create_bmat(&Kd, HK_FMT_CSR, HK_FP64, NULL, &A));
    HK_ASSERT_OK(hk_vec_create(&dr->ops, n, HK_FP64, &vx));
    HK_ASSERT_OK(hk_vec_create(&dr->ops, n, HK_FP64, &vy));
    HK_ASSERT_OK(hk_vec_upload(vx, x));
    HK_ASSERT_OK(hk_mat_spmv(A, vx, vy));
    HK_ASSERT_OK(hk_vec_download(vy, yd));
    double err = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        err = fmax(err, fabs(yd[i] - y[i]));
        scale = fmax(scale, fabs(y[i]));
    }
    CU_ASSERT(err <= 1e-13 * scale);
    hk_mat_destroy(A);
    hk_vec_destroy(vx);
    hk_vec_destroy(vy);
    hk_dist_destroy(dr);
    hk_dist_destroy(dh);
    /* a NaN in a row's middle block: the host's sentence, from the backend's check */
    const int64_t row = K.nbrows / 2, at = (K.rowptr[row] + 1) * K.bs * K.bs + 4;
    K.val[at] = NAN;
    HK_ASSERT_OK(be->copy_to(val + at, K.val + at, sizeof *val));
    CU_ASSERT(hk_dist_create(w, &hk_backend_cpu, 0, &K, &dh) == HK_ERR_NUMERIC);
    char want[512];
    snprintf(want, sizeof want, "%s", hk_error_message());
    CU_ASSERT(strstr(want, "is nan") != NULL);
    dist_staged(staged);
    CU_ASSERT(hk_dist_create_values(w, be, 0, &P, val, HK_DIST_COMM_AUTO, &dr) == HK_ERR_NUMERIC);
    CU_ASSERT_STRING_EQUAL(hk_error_message(), want);
    CU_ASSERT(hk_dist_create(w, be, 0, &K, &ds) == HK_ERR_NUMERIC);
    CU_ASSERT_STRING_EQUAL(hk_error_message(), want);
    dist_staged(0);
    be->dealloc(val);
    free(x);
    free(y);
    free(yd);
    hk_bcsr_free(&K);
}

/* The rows [row0, row0 + nown) of K (global columns) as a process's rows with their
 * numbering: interior rows (no column outside them) first, then boundary rows, each in their
 * order; the ghosts sorted. The caller frees the arrays. */
static void split_input(const hk_bcsr *K, int64_t row0, int64_t nown, hk_dist_rows *R)
{
    int64_t *rp = malloc(sizeof *rp * (size_t)(nown + 1));
    int32_t *inv = malloc(sizeof *inv * (size_t)(nown + 1));
    int32_t *perm = malloc(sizeof *perm * (size_t)(nown + 1));
    int64_t *ghost = malloc(sizeof *ghost * (size_t)(K->nbcols + 1));
    unsigned char *mark = calloc((size_t)K->nbcols + 1, 1);
    int64_t nint = 0, nghost = 0;
    for (int64_t i = 0; i <= nown; i++)
        rp[i] = K->rowptr[row0 + i] - K->rowptr[row0];
    for (int pass = 0; pass < 2; pass++)
        for (int64_t i = 0; i < nown; i++) {
            int bnd = 0;
            for (int64_t p = K->rowptr[row0 + i]; p < K->rowptr[row0 + i + 1]; p++) {
                const int64_t g = K->colind[p];
                if (g < row0 || g >= row0 + nown) bnd = 1, mark[g] = 1;
            }
            if (bnd == pass) inv[i] = (int32_t)nint, perm[nint++] = (int32_t)i;
            if (pass == 0 && i == nown - 1) R->nint = nint;
        }
    for (int64_t g = 0; g < K->nbcols; g++)
        if (mark[g]) ghost[nghost++] = g;
    free(mark);
    const hk_dist_rows r = {K->bs,     row0,   nown, R->nint,
                            K->nbcols, nghost, rp,   K->colind + K->rowptr[row0],
                            inv,       perm,   ghost};
    *R = r;
}

/* A backend array of n entries of e bytes against the host's: 1 when the bytes agree, else 0
 * with the first differing entry named. */
static int same_array(const hk_backend_ops *be, const char *what, const void *dev, const void *host,
                      int64_t n, size_t e)
{
    unsigned char *h = malloc(e * (size_t)n + 1);
    int ok = !n || !be->copy_from(h, dev, e * (size_t)n);
    int64_t k = 0;
    while (ok && k < n && !memcmp(h + e * (size_t)k, (const char *)host + e * (size_t)k, e))
        k++;
    if (ok && k < n)
        fprintf(stderr,
                "\n  dist ops on %s: %s differs from the cpu's first at entry %lld of %lld\n",
                be->name, what, (long long)k, (long long)n);
    free(h);
    return ok && k == n;
}

/* The rows of R whose owned columns, renumbered (inv), are not ascending in the caller's order
 * of their blocks: those dist_split must sort. */
static int64_t split_unsorted_rows(const hk_dist_rows *R)
{
    int64_t cnt = 0;
    for (int64_t i = 0; i < R->nown; i++) {
        int64_t last = -1, bad = 0;
        for (int64_t p = R->rowptr[i]; p < R->rowptr[i + 1]; p++) {
            const int64_t g = R->colind[p];
            if (g < R->row0 || g >= R->row0 + R->nown) continue;
            bad |= R->inv[g - R->row0] < last;
            last = R->inv[g - R->row0];
        }
        cnt += bad;
    }
    return cnt;
}

/* dist_scan and dist_split on be against the cpu's, byte for byte, on rows of a 3D elasticity
 * matrix: reversed, every row's columns descending (the sort moves every block): a middle slice
 * (ghosts on both sides), the first rows, and all the rows (no boundary row); else ascending as
 * assembled, on a longer grid, where only the rows that read the boundary rows moved to the
 * end are out of order (few: a device sorts them one by one; none for the first rows and for
 * all). On the cpu the reference's own invariants: every block's gather index names a block of
 * its row with its column, and every row ascending. */
static void split_on(const hk_backend_ops *be, int reversed)
{
    CU_ASSERT_FATAL(be != NULL);
    hk_bcsr K = {0};
    HK_ASSERT_OK(reversed ? hk_gen_elasticity3d(7, 5, 4, &K) : hk_gen_elasticity3d(4, 4, 60, &K));
    if (reversed) test_reverse_rows(&K);
    const int64_t n = K.nbrows;
    const int64_t slices[3][2] = {{n / 3, reversed ? n / 3 + 37 : 2 * n / 3}, {0, n / 2}, {0, n}};
    for (int t = 0; t < 3; t++) {
        hk_dist_rows R = {0};
        split_input(&K, slices[t][0], slices[t][1] - slices[t][0], &R);
        const int64_t nown = R.nown, nbnd = R.nown - R.nint, nnzb = R.rowptr[nown];
        const int64_t unsorted = split_unsorted_rows(&R);
        /* reversed: every row (a device's segmented sort); else a few rows, or none */
        CU_ASSERT(reversed ? unsorted * 8 > nown
                           : t == 0 ? unsorted > 0 && unsorted * 8 <= nown : unsorted == 0);
        hk_bmat Hoo = {0}, Hbnd = {0}, Doo = {0}, Dbnd = {0};
        int32_t *hs_oo = NULL, *hs_bnd = NULL, *hbcol = NULL, *ds_oo = NULL, *ds_bnd = NULL,
                *dbcol = NULL;
        int64_t hnbc = -1, dnbc = -2;
        HK_ASSERT_OK(hk_backend_cpu.dist_split(&R, &Hoo, &hs_oo, &Hbnd, &hs_bnd, &hbcol, &hnbc));
        CU_ASSERT(t < 2 ? nbnd > 0 && R.nghost > 0 : nbnd == 0 && R.nghost == 0);
        /* the reference: sorted rows, gather indices that name their blocks */
        int ok = Hoo.nbrows == nown && Hbnd.nbrows == nbnd && Hbnd.nbcols == hnbc + R.nghost;
        for (int64_t ni = 0; ni < nown && ok; ni++)
            for (int64_t q = Hoo.rowptr[ni]; q < Hoo.rowptr[ni + 1]; q++) {
                const int64_t p = hs_oo[q], g = R.colind[p], i = R.perm[ni];
                ok = ok && p >= R.rowptr[i] && p < R.rowptr[i + 1] && g >= R.row0 &&
                     g < R.row0 + nown && R.inv[g - R.row0] == Hoo.colind[q] &&
                     (q == Hoo.rowptr[ni] || Hoo.colind[q - 1] < Hoo.colind[q]);
            }
        for (int64_t b = 0; b < nbnd && ok; b++) {
            const int64_t i = R.perm[R.nint + b];
            ok = Hbnd.rowptr[b + 1] - Hbnd.rowptr[b] == R.rowptr[i + 1] - R.rowptr[i];
            for (int64_t q = Hbnd.rowptr[b]; q < Hbnd.rowptr[b + 1] && ok; q++) {
                const int64_t p = hs_bnd[q], g = R.colind[p], c = Hbnd.colind[q];
                ok = p >= R.rowptr[i] && p < R.rowptr[i + 1] &&
                     (c < hnbc ? g >= R.row0 && g < R.row0 + nown && hbcol[c] == R.inv[g - R.row0]
                               : R.ghost[c - hnbc] == g) &&
                     (q == Hbnd.rowptr[b] || Hbnd.colind[q - 1] < c);
            }
        }
        for (int64_t c = 1; c < hnbc && ok; c++)
            ok = hbcol[c - 1] < hbcol[c];
        CU_ASSERT(ok);
        {
            /* the same rows in be's memory (on the cpu: the comparison itself checked) */
            void *in[5] = {NULL};
            const void *src[5] = {R.rowptr, R.colind, R.inv, R.perm, R.ghost};
            const size_t bytes[5] = {sizeof(int64_t) * (size_t)(nown + 1),
                                     sizeof(int32_t) * (size_t)nnzb, sizeof(int32_t) * (size_t)nown,
                                     sizeof(int32_t) * (size_t)nown,
                                     sizeof(int64_t) * (size_t)R.nghost};
            for (int k = 0; k < 5; k++) {
                HK_ASSERT_OK(be->alloc(&in[k], bytes[k] + 8));
                if (bytes[k]) HK_ASSERT_OK(be->copy_to(in[k], src[k], bytes[k]));
            }
            hk_dist_rows D = R;
            D.rowptr = in[0], D.colind = in[1], D.inv = in[2], D.perm = in[3], D.ghost = in[4];
            /* the scan: every row's kind and the ghosts, as the reference's and the input's */
            int32_t *hkind = malloc(sizeof *hkind * (size_t)(nown + 1)), *dkind = NULL;
            int64_t *hghost = NULL, *dghost = NULL, hng = -1, dng = -2, hbad = -3, dbad = -4;
            HK_ASSERT_OK(hk_backend_cpu.dist_scan(&R, hkind, &hghost, &hng, &hbad));
            CU_ASSERT(hbad == -1 && hng == R.nghost &&
                      !memcmp(hghost, R.ghost, sizeof *hghost * (size_t)hng));
            int kinds_ok = 1;
            for (int64_t i = 0; i < nown; i++)
                kinds_ok &= hkind[i] == (R.inv[i] < R.nint ? -2 : -1);
            CU_ASSERT(kinds_ok);
            HK_ASSERT_OK(be->alloc((void **)&dkind, sizeof *dkind * (size_t)(nown + 1)));
            HK_ASSERT_OK(be->dist_scan(&D, dkind, &dghost, &dng, &dbad));
            CU_ASSERT(dbad == -1 && dng == hng);
            if (dbad == -1 && dng == hng) {
                CU_ASSERT(same_array(be, "the scan's kinds", dkind, hkind, nown, 4));
                CU_ASSERT(same_array(be, "the scan's ghosts", dghost, hghost, hng, 8));
            }
            be->dealloc(dghost);
            free(hghost);
            /* a column past the global ones in two rows: the first of them found */
            if (nown > 2) {
                int32_t *bad = malloc(sizeof *bad * (size_t)nnzb);
                memcpy(bad, R.colind, sizeof *bad * (size_t)nnzb);
                bad[R.rowptr[nown - 1]] = (int32_t)K.nbcols;
                bad[R.rowptr[nown / 2 + 1] - 1] = (int32_t)(K.nbcols + 5); /* its last block */
                hk_dist_rows B = R;
                B.colind = bad;
                HK_ASSERT_OK(hk_backend_cpu.dist_scan(&B, hkind, &hghost, &hng, &hbad));
                HK_ASSERT_OK(be->copy_to(in[1], bad, sizeof *bad * (size_t)nnzb));
                HK_ASSERT_OK(be->dist_scan(&D, dkind, &dghost, &dng, &dbad));
                CU_ASSERT(hbad == nown / 2 && dbad == hbad);
                HK_ASSERT_OK(be->copy_to(in[1], R.colind, sizeof *bad * (size_t)nnzb));
                free(bad);
            }
            be->dealloc(dkind);
            free(hkind);
            HK_ASSERT_OK(be->dist_split(&D, &Doo, &ds_oo, &Dbnd, &ds_bnd, &dbcol, &dnbc));
            HK_ASSERT_OK(be->sync());
            CU_ASSERT(dnbc == hnbc);
            CU_ASSERT(Doo.nnzb == Hoo.nnzb && Dbnd.nnzb == Hbnd.nnzb && Doo.nbrows == nown &&
                      Dbnd.nbrows == nbnd && Dbnd.nbcols == Hbnd.nbcols);
            if (dnbc == hnbc && Doo.nnzb == Hoo.nnzb && Dbnd.nnzb == Hbnd.nnzb) {
                CU_ASSERT(
                    same_array(be, "Koo's row pointers", Doo.rowptr, Hoo.rowptr, nown + 1, 8));
                CU_ASSERT(same_array(be, "Koo's columns", Doo.colind, Hoo.colind, Hoo.nnzb, 4));
                CU_ASSERT(same_array(be, "Koo's gather index", ds_oo, hs_oo, Hoo.nnzb, 4));
                CU_ASSERT(
                    same_array(be, "Kbnd's row pointers", Dbnd.rowptr, Hbnd.rowptr, nbnd + 1, 8));
                CU_ASSERT(same_array(be, "Kbnd's columns", Dbnd.colind, Hbnd.colind, Hbnd.nnzb, 4));
                CU_ASSERT(same_array(be, "Kbnd's gather index", ds_bnd, hs_bnd, Hbnd.nnzb, 4));
                CU_ASSERT(same_array(be, "bcol", dbcol, hbcol, hnbc, 4));
            }
            for (int k = 0; k < 5; k++)
                be->dealloc(in[k]);
            hk_bmat_free(&Doo);
            hk_bmat_free(&Dbnd);
            be->dealloc(ds_oo);
            be->dealloc(ds_bnd);
            be->dealloc(dbcol);
        }
        hk_bmat_free(&Hoo);
        hk_bmat_free(&Hbnd);
        free(hs_oo);
        free(hs_bnd);
        free(hbcol);
        free((void *)R.rowptr);
        free((void *)R.inv);
        free((void *)R.perm);
        free((void *)R.ghost);
    }
    hk_bcsr_free(&K);
}

static void test_split_cpu(void)
{
    split_on(&hk_backend_cpu, 1);
    split_on(&hk_backend_cpu, 0);
}

static void test_split_cuda(void)
{
    split_on(hk_test_cuda_backend(), 1);
    split_on(hk_test_cuda_backend(), 0);
}

static void test_resident_cpu(void)
{
    resident_layout_on(&hk_backend_cpu, 0);
    /* the device's path on the cpu: pattern and gather index uploaded (host rows: their values
     * too, as they are), values gathered and checked in the backend's memory, copies instead
     * of views */
    resident_layout_on(&hk_backend_cpu, 1);
}

static void test_resident_cuda(void)
{
    resident_layout_on(hk_test_cuda_backend(), 0);
}

/* dist_global_columns on be against its definition (the cpu's loop, byte for byte): local
 * columns of every kind, owned, ghosts, and outside the part on both sides (-1). */
static void global_columns_on(const hk_backend_ops *be)
{
    CU_ASSERT_FATAL(be != NULL && be->dist_global_columns != NULL);
    const int64_t n = 200003, nown = 5000, nghost = 700, row0 = 12345;
    int32_t *col = malloc(sizeof *col * (size_t)n), *want = malloc(sizeof *want * (size_t)n);
    int32_t *got = malloc(sizeof *got * (size_t)n), *dcol = NULL, *dout = NULL;
    int64_t *gid = malloc(sizeof *gid * (size_t)nghost), *dgid = NULL;
    unsigned r = 12345u;
    for (int64_t g = 0; g < nghost; g++) /* not in order: the part's ghosts need not be */
        gid[g] = (g * 7919) % 100000 + (g % 2 ? 20000 : 0);
    int64_t kinds[3] = {0, 0, 0};
    for (int64_t k = 0; k < n; k++) {
        r = r * 1103515245u + 12345u;
        col[k] = (int32_t)((r >> 8) % (uint32_t)(nown + nghost + 6)) - 3;
        const int64_t c = col[k];
        want[k] = c >= 0 && c < nown            ? (int32_t)(row0 + c)
                  : c >= nown && c < nown + nghost ? (int32_t)gid[c - nown]
                                                   : -1;
        kinds[c < 0 || c >= nown + nghost ? 2 : c >= nown]++;
    }
    CU_ASSERT(kinds[0] > 0 && kinds[1] > 0 && kinds[2] > 0);
    HK_ASSERT_OK(be->alloc((void **)&dcol, sizeof *dcol * (size_t)n));
    HK_ASSERT_OK(be->alloc((void **)&dout, sizeof *dout * (size_t)n));
    HK_ASSERT_OK(be->alloc((void **)&dgid, sizeof *dgid * (size_t)nghost));
    HK_ASSERT_OK(be->copy_to(dcol, col, sizeof *col * (size_t)n));
    HK_ASSERT_OK(be->copy_to(dgid, gid, sizeof *gid * (size_t)nghost));
    HK_ASSERT_OK(be->dist_global_columns(dcol, n, row0, nown, dgid, nghost, dout));
    HK_ASSERT_OK(be->copy_from(got, dout, sizeof *got * (size_t)n));
    int64_t first = -1;
    for (int64_t k = 0; k < n && first < 0; k++)
        if (got[k] != want[k]) first = k;
    if (first >= 0)
        fprintf(stderr, "dist_global_columns on %s: entry %lld (local column %d) is %d, not %d\n",
                be->name, (long long)first, col[first], got[first], want[first]);
    CU_ASSERT(first < 0);
    HK_ASSERT_OK(be->dist_global_columns(dcol, 0, row0, nown, dgid, nghost, dout)); /* none */
    be->dealloc(dcol);
    be->dealloc(dout);
    be->dealloc(dgid);
    free(col);
    free(want);
    free(got);
    free(gid);
}

/* The layout from rows whose pattern and values are in be's memory (hk_dist_create_device, a
 * part's rows as a device assembly hands them; one process: every column owned) against the
 * host's rows on the cpu's views: the same blocks, byte for byte; a NaN and a column outside
 * the part named as the host's check names them. staged: under HOOKE_DIST_STAGED=1. */
static void device_rows_on(const hk_backend *be, int staged)
{
    CU_ASSERT_FATAL(be != NULL);
    const hk_comm *w = hk_comm_world();
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 3, &K));
    test_reverse_rows(&K);
    const int64_t n = K.nbrows, nnzb = K.rowptr[n], nv = nnzb * K.bs * K.bs;
    hk_resident_bcsr A = {0};
    HK_ASSERT_OK(hk_resident_bcsr_alloc(be, K.bs, n, n, nnzb, &A));
    HK_ASSERT_OK(be->copy_to(A.rowptr, K.rowptr, sizeof *K.rowptr * (size_t)(n + 1)));
    HK_ASSERT_OK(be->copy_to(A.colind, K.colind, sizeof *K.colind * (size_t)nnzb));
    HK_ASSERT_OK(be->copy_to(A.val, K.val, sizeof *K.val * (size_t)nv));
    const hk_dist_part_rows P = {K.bs, 0, n, n, 0, A.rowptr, A.colind, A.val, NULL};
    hk_dist *dh = NULL, *dr = NULL;
    HK_ASSERT_OK(hk_dist_create(w, &hk_backend_cpu, 0, &K, &dh));
    dist_staged(staged);
    HK_ASSERT_OK(hk_dist_create_device(w, be, &P, HK_DIST_COMM_AUTO, &dr));
    dist_staged(0);
    CU_ASSERT(dr->nint == dh->nint && dr->nbnd == dh->nbnd && dr->nghost == 0);
    CU_ASSERT(!memcmp(dr->Koo.rowptr, dh->Koo.rowptr, sizeof(int64_t) * (size_t)(n + 1)));
    CU_ASSERT(test_same_as_host(be, &dr->Koo_d, &dh->Koo));
    hk_dist_destroy(dr);
    hk_dist_destroy(dh);
    /* a NaN in a row's middle block, then a column past the part's nodes (global -1 there,
     * given so to the host): the host's sentences, the rows' bytes read where they lie */
    const int64_t row = n / 2, mid = K.rowptr[row] + 1, at = mid * K.bs * K.bs + 4;
    const double keep_v = K.val[at];
    K.val[at] = NAN;
    HK_ASSERT_OK(be->copy_to(A.val + at, K.val + at, sizeof *K.val));
    for (int t = 0; t < 2; t++) {
        if (t) { /* the value back, a column out */
            const int32_t part_col = (int32_t)(n + 3);
            K.val[at] = keep_v;
            HK_ASSERT_OK(be->copy_to(A.val + at, K.val + at, sizeof *K.val));
            K.colind[mid] = -1;
            HK_ASSERT_OK(be->copy_to(A.colind + mid, &part_col, sizeof part_col));
        }
        const int code = t ? HK_ERR_ARG : HK_ERR_NUMERIC;
        CU_ASSERT(hk_dist_create(w, &hk_backend_cpu, 0, &K, &dh) == code);
        char want[512];
        snprintf(want, sizeof want, "%s", hk_error_message());
        CU_ASSERT(strstr(want, t ? "outside" : "is nan") != NULL);
        dist_staged(staged);
        CU_ASSERT(hk_dist_create_device(w, be, &P, HK_DIST_COMM_AUTO, &dr) == code);
        dist_staged(0);
        CU_ASSERT_STRING_EQUAL(hk_error_message(), want);
    }
    hk_resident_bcsr_free(&A);
    hk_bcsr_free(&K);
}

/* One process: hk_solver_create_dist_device brings the rows to the host (their columns made
 * global there) and is hk_solver_create_dist: the same x, byte for byte. */
static void device_rows_one_process(void)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(4, 3, 5, &K));
    const int64_t n = K.nbrows, nnzb = K.rowptr[n], nl = n * K.bs;
    hk_resident_bcsr A = {0};
    HK_ASSERT_OK(hk_resident_bcsr_alloc(&hk_backend_cpu, K.bs, n, n, nnzb, &A));
    memcpy(A.rowptr, K.rowptr, sizeof *K.rowptr * (size_t)(n + 1));
    memcpy(A.colind, K.colind, sizeof *K.colind * (size_t)nnzb);
    memcpy(A.val, K.val, sizeof *K.val * (size_t)(nnzb * K.bs * K.bs));
    double *b = hk_test_rand_vec(nl, 7u), *x[2];
    for (int k = 0; k < 2; k++) {
        x[k] = calloc((size_t)nl, sizeof *x[k]);
        hk_options *o = NULL;
        hk_solver *s = NULL;
        hk_result res;
        HK_ASSERT_OK(hk_options_create(&o));
        HK_ASSERT_OK(hk_options_parse(o, "backend=cpu method=cg pc=jacobi tol=1e-10"));
        HK_ASSERT_OK(k ? hk_solver_create_dist_device(hk_comm_world(), 0, n, &A, n, NULL, 0, NULL,
                                                      o, &s)
                       : hk_solver_create_dist(hk_comm_world(), 0, &K, NULL, o, &s));
        HK_ASSERT_OK(hk_solver_solve(s, b, x[k], &res));
        hk_solver_destroy(s);
        hk_options_destroy(o);
    }
    CU_ASSERT(!memcmp(x[0], x[1], sizeof *x[0] * (size_t)nl));
    /* sizes that do not fit: one sentence */
    hk_solver *s = NULL;
    CU_ASSERT(hk_solver_create_dist_device(hk_comm_world(), 0, n, &A, n + 1, NULL, 0, NULL, NULL,
                                           &s) == HK_ERR_ARG);
    CU_ASSERT(strstr(hk_error_message(), "hk_solver_create_dist_device") != NULL);
    for (int k = 0; k < 2; k++)
        free(x[k]);
    free(b);
    hk_resident_bcsr_free(&A);
    hk_bcsr_free(&K);
}

/* dist.layer=always: one process through the distributed layer (no message) solves as the
 * one-process solver does, to the tolerance: cg with jacobi and with amg (its distributed
 * hierarchy, named so); from host rows and from rows in the backend's memory alike; a value
 * that is not a choice refused by name. */
static void test_layer_one(void)
{
    hk_bcsr K = {0};
    double *xyz = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 5, 7, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(6, 5, 7, &xyz));
    const int64_t n = K.nbrows, nnzb = K.rowptr[n], nl = n * K.bs;
    hk_resident_bcsr A = {0};
    double *b = hk_test_rand_vec(nl, 11u);
    const hk_nearnull nn = {.dim = 3, .coords = xyz};
    static const char *const pcs[] = {"pc=jacobi", "pc=amg"};
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < 3; k++) { /* plain, the layer from host rows, from the backend's */
            double *x = calloc((size_t)nl, sizeof *x), *ref = calloc((size_t)nl, sizeof *ref);
            char opts[128];
            snprintf(opts, sizeof opts, "backend=cpu method=cg tol=1e-10 %s%s", pcs[p],
                     k ? " dist.layer=always" : "");
            hk_options *o = NULL;
            hk_solver *s = NULL, *plain = NULL;
            hk_result res, rref;
            HK_ASSERT_OK(hk_options_create(&o));
            HK_ASSERT_OK(hk_options_parse(o, opts));
            if (k == 2) {
                HK_ASSERT_OK(hk_resident_bcsr_alloc(&hk_backend_cpu, K.bs, n, n, nnzb, &A));
                memcpy(A.val, K.val, sizeof *K.val * (size_t)(nnzb * K.bs * K.bs));
                HK_ASSERT_OK(hk_solver_create_dist_resident(hk_comm_world(), 0, &K,
                                                            &hk_backend_cpu, A.val, &nn, o,
                                                            &s));
                hk_resident_bcsr_free(&A);
            } else {
                HK_ASSERT_OK(hk_solver_create_dist(hk_comm_world(), 0, &K, &nn, o, &s));
            }
            HK_ASSERT_OK(hk_solver_solve(s, b, x, &res));
            CU_ASSERT(hk_reason_converged(res.reason));
            /* the layer names itself: its transport, and pc=amg's distributed hierarchy */
            char *desc = NULL;
            size_t len = 0;
            FILE *m = open_memstream(&desc, &len);
            hk_solver_describe(s, m);
            fclose(m);
            CU_ASSERT((hk_solver_dist_comm(s) != NULL) == (k > 0));
            if (p == 1) CU_ASSERT((strstr(desc, "distributed") != NULL) == (k > 0));
            free(desc);
            hk_options *op = NULL;
            HK_ASSERT_OK(hk_options_create(&op));
            snprintf(opts, sizeof opts, "backend=cpu method=cg tol=1e-10 %s", pcs[p]);
            HK_ASSERT_OK(hk_options_parse(op, opts));
            HK_ASSERT_OK(hk_solver_create_nearnull(&K, &nn, op, &plain));
            HK_ASSERT_OK(hk_solver_solve(plain, b, ref, &rref));
            double dx = 0, nx = 0;
            for (int64_t i = 0; i < nl; i++) {
                dx += (x[i] - ref[i]) * (x[i] - ref[i]);
                nx += ref[i] * ref[i];
            }
            CU_ASSERT(sqrt(dx) <= 1e-7 * sqrt(nx));
            hk_solver_destroy(plain);
            hk_solver_destroy(s);
            hk_options_destroy(op);
            hk_options_destroy(o);
            free(x);
            free(ref);
        }
    hk_options *o = NULL;
    hk_solver *s = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu pc=jacobi dist.layer=sometimes"));
    CU_ASSERT(hk_solver_create_dist(hk_comm_world(), 0, &K, NULL, o, &s) == HK_ERR_OPTION);
    CU_ASSERT(strstr(hk_error_message(), "dist.layer") != NULL);
    hk_options_destroy(o);
    free(b);
    free(xyz);
    hk_bcsr_free(&K);
}

static void test_device_rows_cpu(void)
{
    device_rows_one_process();
    global_columns_on(&hk_backend_cpu);
    device_rows_on(&hk_backend_cpu, 0);
    device_rows_on(&hk_backend_cpu, 1);
}

static void test_device_rows_cuda(void)
{
    global_columns_on(hk_test_cuda_backend());
    device_rows_on(hk_test_cuda_backend(), 0);
}

/* The transfer operators' pattern ops of a backend on host inputs (uploaded), their outputs
 * downloaded: rank, list of dist_read_columns over col[0..n) of ncols columns, then
 * dist_local_pattern's rp, lcol, src, ypos, nint over rows rowptr (its first entry the base)
 * with map. */
typedef struct pattern_out {
    int32_t *rank, *list, *lcol, *src, *ypos;
    int64_t *rp, nread, nint;
} pattern_out;

static void *on_backend(const hk_backend *be, const void *h, size_t bytes)
{
    void *d = NULL;
    HK_ASSERT_OK(be->alloc(&d, bytes + 8));
    if (bytes) HK_ASSERT_OK(be->copy_to(d, h, bytes));
    return d;
}

static void *to_host(const hk_backend *be, void *d, size_t bytes)
{
    void *h = malloc(bytes + 8);
    if (bytes) HK_ASSERT_OK(be->copy_from(h, d, bytes));
    be->dealloc(d);
    return h;
}

static pattern_out pattern_on(const hk_backend *be, const int32_t *col, int64_t n, int64_t ncols,
                              int64_t nrows, const int64_t *rowptr, const int32_t *lc,
                              const int32_t *map, int64_t nmap, int64_t nbc, int split)
{
    pattern_out o = {0};
    const int64_t nnz = rowptr[nrows] - rowptr[0];
    CU_ASSERT_FATAL(be->dist_read_columns != NULL && be->dist_local_pattern != NULL);
    int32_t *c = on_backend(be, col, sizeof *col * (size_t)n), *rank = NULL, *list = NULL;
    HK_ASSERT_OK(be->alloc((void **)&rank, sizeof *rank * (size_t)(ncols + 1)));
    HK_ASSERT_OK(be->alloc((void **)&list, sizeof *list * (size_t)(ncols + 1)));
    HK_ASSERT_OK(be->dist_read_columns(c, n, ncols, rank, list, &o.nread));
    o.rank = to_host(be, rank, sizeof *rank * (size_t)ncols);
    o.list = to_host(be, list, sizeof *list * (size_t)o.nread);
    be->dealloc(c);
    int64_t *rp = NULL, *r = on_backend(be, rowptr, sizeof *rowptr * (size_t)(nrows + 1));
    int32_t *l = on_backend(be, lc, sizeof *lc * (size_t)nnz), *lcol = NULL, *src = NULL;
    int32_t *m = on_backend(be, map, sizeof *map * (size_t)nmap), *ypos = NULL;
    HK_ASSERT_OK(be->alloc((void **)&rp, sizeof *rp * (size_t)(nrows + 1)));
    HK_ASSERT_OK(be->alloc((void **)&lcol, sizeof *lcol * (size_t)(nnz + 1)));
    HK_ASSERT_OK(be->alloc((void **)&src, sizeof *src * (size_t)(nnz + 1)));
    HK_ASSERT_OK(be->alloc((void **)&ypos, sizeof *ypos * (size_t)(nrows + 1)));
    HK_ASSERT_OK(be->dist_local_pattern(nrows, r, l, m, nbc, split, rp, lcol, src, ypos, &o.nint));
    o.rp = to_host(be, rp, sizeof *rp * (size_t)(nrows + 1));
    o.lcol = to_host(be, lcol, sizeof *lcol * (size_t)nnz);
    o.src = to_host(be, src, sizeof *src * (size_t)nnz);
    o.ypos = to_host(be, ypos, sizeof *ypos * (size_t)nrows);
    be->dealloc(r);
    be->dealloc(l);
    be->dealloc(m);
    return o;
}

static void pattern_free(pattern_out *o)
{
    free(o->rank);
    free(o->list);
    free(o->rp);
    free(o->lcol);
    free(o->src);
    free(o->ypos);
}

/* The pattern ops on a hand-made case worked out by hand: columns read and ranked; 4 rows
 * (row pointers from 10), one reading ghosts, one empty, two unsorted; split and not, and
 * split asked where every row is interior (nothing moves). */
static void local_pattern_known(const hk_backend *be)
{
    static const int32_t col[] = {5, 2, 2, 7, 0, 5};
    static const int64_t rowptr[] = {10, 13, 15, 15, 18};
    static const int32_t lc[] = {4, 1, 3, 0, 2, 5, 6, 1};
    static const int32_t map[] = {0, 2, 1, 3, 4, 1, 0};
    static const int32_t rank[] = {0, -1, 1, -1, -1, 2, -1, 3, -1}, list[] = {0, 2, 5, 7};
    static const int64_t rp_split[] = {0, 2, 2, 5, 8}, rp_plain[] = {0, 3, 5, 5, 8};
    static const int32_t lcol_split[] = {0, 1, 0, 1, 2, 2, 3, 4},
                         src_split[] = {3, 4, 6, 5, 7, 1, 2, 0}, ypos[] = {3, 0, 1, 2};
    static const int32_t lcol_plain[] = {2, 3, 4, 0, 1, 0, 1, 2},
                         src_plain[] = {1, 2, 0, 3, 4, 6, 5, 7};
    for (int split = 0; split < 2; split++) {
        pattern_out o = pattern_on(be, col, 6, 9, 4, rowptr, lc, map, 7, 3, split);
        CU_ASSERT(o.nread == 4 && !memcmp(o.rank, rank, sizeof rank) &&
                  !memcmp(o.list, list, sizeof list));
        CU_ASSERT(o.nint == (split ? 3 : 0));
        CU_ASSERT(!memcmp(o.rp, split ? rp_split : rp_plain, sizeof rp_split));
        CU_ASSERT(!memcmp(o.lcol, split ? lcol_split : lcol_plain, sizeof lcol_split));
        CU_ASSERT(!memcmp(o.src, split ? src_split : src_plain, sizeof src_split));
        if (split) CU_ASSERT(!memcmp(o.ypos, ypos, sizeof ypos));
        pattern_free(&o);
    }
    pattern_out o = pattern_on(be, col, 6, 9, 4, rowptr, lc, map, 7, 5, 1); /* no ghost read */
    CU_ASSERT(o.nint == 0 && !memcmp(o.rp, rp_plain, sizeof rp_plain) &&
              !memcmp(o.src, src_plain, sizeof src_plain));
    pattern_free(&o);
}

/* A large random case (rows of 0 to 40 distinct columns in random order, a random table, row
 * pointers from an offset) on be against the cpu's, byte for byte, each array named where it
 * differs (on the cpu: its repeat). */
static void local_pattern_random(const hk_backend *be)
{
    const int64_t nrows = 20000, ncols = 30000, base = 12345;
    int64_t *rowptr = malloc(sizeof *rowptr * (size_t)(nrows + 1));
    uint64_t r = 88172645463325252ull;
#define NEXT() (r ^= r << 13, r ^= r >> 7, r ^= r << 17, r)
    rowptr[0] = base;
    for (int64_t i = 0; i < nrows; i++)
        rowptr[i + 1] = rowptr[i] + (int64_t)(NEXT() % 41);
    const int64_t nnz = rowptr[nrows] - base;
    int32_t *lc = malloc(sizeof *lc * (size_t)(nnz + 1)), *map = malloc(sizeof *map * ncols);
    for (int64_t i = 0; i < nrows; i++) { /* distinct in a row: a random stride from a start */
        const int64_t p0 = rowptr[i] - base, len = rowptr[i + 1] - rowptr[i];
        const int64_t start = (int64_t)(NEXT() % ncols), step = 1 + (int64_t)(NEXT() % 700);
        for (int64_t k = 0; k < len; k++)
            lc[p0 + k] = (int32_t)((start + k * step) % ncols);
    }
    for (int64_t j = 0; j < ncols; j++) /* a permutation: distinct local columns */
        map[j] = (int32_t)((j * 7919) % ncols);
    for (int split = 0; split < 2; split++) {
        const int64_t nbc = split ? ncols - 600 : ncols / 2;
        pattern_out a = pattern_on(&hk_backend_cpu, lc, nnz / 3, ncols, nrows, rowptr, lc, map,
                                   ncols, nbc, split);
        pattern_out b = pattern_on(be, lc, nnz / 3, ncols, nrows, rowptr, lc, map, ncols, nbc,
                                   split);
        const char *differ = a.nread != b.nread || memcmp(a.rank, b.rank, sizeof *a.rank * ncols)
                                 ? "dist_read_columns' ranks"
                             : memcmp(a.list, b.list, sizeof *a.list * (size_t)a.nread)
                                 ? "dist_read_columns' list"
                             : a.nint != b.nint ? "dist_local_pattern's interior rows"
                             : memcmp(a.rp, b.rp, sizeof *a.rp * (size_t)(nrows + 1))
                                 ? "dist_local_pattern's row pointers"
                             : memcmp(a.lcol, b.lcol, sizeof *a.lcol * (size_t)nnz)
                                 ? "dist_local_pattern's columns"
                             : memcmp(a.src, b.src, sizeof *a.src * (size_t)nnz)
                                 ? "dist_local_pattern's sources"
                             : a.nint && memcmp(a.ypos, b.ypos, sizeof *a.ypos * (size_t)nrows)
                                 ? "dist_local_pattern's ypos"
                                 : NULL;
        if (differ) printf("(split %d: %s's %s differ from the cpu's) ", split, be->name, differ);
        CU_ASSERT(differ == NULL);
        CU_ASSERT(!split || (a.nint > 0 && a.nint < nrows)); /* both kinds of rows */
        pattern_free(&a);
        pattern_free(&b);
    }
#undef NEXT
    free(rowptr);
    free(lc);
    free(map);
}

static void test_local_pattern_cpu(void)
{
    local_pattern_known(&hk_backend_cpu);
    local_pattern_random(&hk_backend_cpu);
}

/* The same ops on cuda: the hand-made case, then the random one against the cpu's. */
static void test_local_pattern_cuda(void)
{
    const hk_backend *be = hk_test_cuda_backend();
    local_pattern_known(be);
    local_pattern_random(be);
}

static void test_gather_cpu(void)
{
    gather_on(&hk_backend_cpu);
}

static void test_gather_cuda(void)
{
    gather_on(hk_test_cuda_backend());
}

/* The halos' host staging (hk_dist_host_alloc) on backend be: an upload queued from it and the
 * download back give the bytes; the buffer is then refilled (the upload has run by the
 * download's wait) and a second round gives the new bytes. */
static void host_staging_on(const hk_backend *be)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_poisson2d(4, &K));
    hk_dist *d = NULL;
    HK_ASSERT_OK(hk_dist_create(hk_comm_world(), be, 0, &K, &d));
    const int64_t n = 100000; /* 800 KB: more than the driver stages in one piece */
    double *h = NULL, *back = malloc(sizeof *back * (size_t)n), *dev = NULL;
    HK_ASSERT_OK(hk_dist_host_alloc(d, sizeof *h * (size_t)n, (void **)&h));
    HK_ASSERT_OK(be->alloc((void **)&dev, sizeof *dev * (size_t)n));
    for (int round = 0; round < 2; round++) {
        for (int64_t i = 0; i < n; i++)
            h[i] = (double)(i + 1) * (round ? -0.5 : 3.0);
        HK_ASSERT_OK(be->copy_to(dev, h, sizeof *dev * (size_t)n));
        HK_ASSERT_OK(be->copy_from(back, dev, sizeof *dev * (size_t)n));
        CU_ASSERT(!memcmp(back, h, sizeof *h * (size_t)n));
    }
    be->dealloc(dev);
    hk_dist_host_free(d, h);
    hk_dist_host_free(d, NULL);
    hk_dist_destroy(d);
    free(back);
    hk_bcsr_free(&K);
}

static void test_host_staging_cpu(void)
{
    CU_ASSERT(hk_backend_cpu.host_alloc == NULL); /* malloc's memory: the fallback */
    host_staging_on(&hk_backend_cpu);
}

static void test_host_staging_cuda(void)
{
    const hk_backend *be = hk_test_cuda_backend();
    CU_ASSERT(be->host_alloc != NULL && be->host_free != NULL);
    host_staging_on(be);
}

/* Whether B's SpMV of vx gives A's bytes (ya, yb: host scratch of vy's size); says which
 * conversion (what) differs where it does. */
static int same_spmv(hk_mat *A, hk_mat *B, const hk_vec *vx, hk_vec *vy, double *ya, double *yb,
                     const char *what)
{
    HK_ASSERT_OK(hk_mat_spmv(A, vx, vy));
    HK_ASSERT_OK(hk_vec_download(vy, ya));
    HK_ASSERT_OK(hk_mat_spmv(B, vx, vy));
    HK_ASSERT_OK(hk_vec_download(vy, yb));
    const int same = !memcmp(ya, yb, sizeof *ya * (size_t)vy->n);
    if (!same)
        printf("\n  format %s: the %s fp32 operator's SpMV differs from the built one's ",
               hk_format_name(A->fmt), what);
    return same;
}

/* The distributed operator's fp32 copy by mat_convert (each part converted by the backend,
 * hk_pc_operator's way where the format is the same) against the one built from K in fp32:
 * the same statistics and SpMV bytes, formats csr and bsr; a values-only conversion after the
 * fp64 values changed gives the bytes of a new build from them. One process, the layout on be. */
static void dist_convert_on(const hk_backend *be)
{
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 3, &K));
    const int64_t n = K.nbrows * K.bs;
    hk_dist *d = NULL;
    HK_ASSERT_OK(hk_dist_create(hk_comm_world(), be, 0, &K, &d));
    hk_dist_ops_init(d);
    const hk_backend_ops *o = &d->ops;
    CU_ASSERT_FATAL(o->mat_convert == hk_dist_mat_convert);
    double *x = hk_test_rand_vec(n, 7u), *ya = malloc(sizeof *ya * (size_t)n),
           *yb = malloc(sizeof *yb * (size_t)n);
    const hk_format fmts[2] = {HK_FMT_CSR, HK_FMT_BSR};
    for (int f = 0; f < 2; f++) {
        hk_bmat Koo = d->Koo_d;
        Koo.be = o;
        hk_mat *A64 = NULL, *A32 = NULL, *C32 = NULL;
        hk_vec *vx = NULL, *vy = NULL;
        HK_ASSERT_OK(hk_mat_create_bmat(&Koo, fmts[f], HK_FP64, NULL, &A64));
        HK_ASSERT_OK(hk_mat_create_bmat(&Koo, fmts[f], HK_FP32, NULL, &A32));
        HK_ASSERT_OK(hk_mat_convert(A64, &C32));
        CU_ASSERT(C32->prec == HK_FP32 && C32->fmt == A32->fmt && C32->nnz == A32->nnz &&
                  C32->stored == A32->stored && C32->bytes == A32->bytes);
        HK_ASSERT_OK(hk_vec_create(o, n, HK_FP32, &vx));
        HK_ASSERT_OK(hk_vec_create(o, n, HK_FP32, &vy));
        HK_ASSERT_OK(hk_vec_upload(vx, x));
        CU_ASSERT(same_spmv(A32, C32, vx, vy, ya, yb, "converted"));
        /* the fp64 operator rebuilt from values scaled by 3, the copy's values converted again */
        hk_mat_destroy(A64);
        hk_mat_destroy(A32);
        A64 = A32 = NULL;
        hk_bmat S = Koo;
        const int64_t nv = S.nnzb * S.br * S.bc;
        HK_ASSERT_OK(be->alloc((void **)&S.val, sizeof(double) * (size_t)(nv + 1)));
        double *hv = malloc(sizeof *hv * (size_t)(nv + 1));
        HK_ASSERT_OK(be->copy_from(hv, Koo.val, sizeof *hv * (size_t)nv));
        for (int64_t k = 0; k < nv; k++)
            hv[k] *= 3;
        HK_ASSERT_OK(be->copy_to(S.val, hv, sizeof *hv * (size_t)nv));
        HK_ASSERT_OK(hk_mat_create_bmat(&S, fmts[f], HK_FP64, NULL, &A64));
        HK_ASSERT_OK(hk_mat_create_bmat(&S, fmts[f], HK_FP32, NULL, &A32));
        HK_ASSERT_OK(hk_mat_convert_values(C32, A64));
        CU_ASSERT(same_spmv(A32, C32, vx, vy, ya, yb, "values converted"));
        be->dealloc(S.val);
        free(hv);
        hk_vec_destroy(vx);
        hk_vec_destroy(vy);
        hk_mat_destroy(A64);
        hk_mat_destroy(A32);
        hk_mat_destroy(C32);
    }
    hk_dist_destroy(d);
    free(x);
    free(ya);
    free(yb);
    hk_bcsr_free(&K);
}

static void test_convert_cpu(void)
{
    dist_convert_on(&hk_backend_cpu);
}

static void test_convert_cuda(void)
{
    dist_convert_on(hk_test_cuda_backend());
}

/* copy_to_pageable and copy_from_pageable on backend be (pc=amg's set-up staging): arrays of
 * malloc's memory, of sizes below, at and across the pinned buffers' pieces (32 MB) and of an
 * odd length, up and down again; each against the plain copy_to and copy_from, byte for byte,
 * the source rewritten at once after an upload (it has been read when the call returns). */
static void pageable_copies_on(const hk_backend *be)
{
    CU_ASSERT_FATAL(be->copy_to_pageable != NULL && be->copy_from_pageable != NULL);
    const size_t sizes[] = {0, 8, 1000, (size_t)4 << 20, ((size_t)5 << 20) + 24,
                            ((size_t)70 << 20) + 8};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        const size_t bytes = sizes[t], n = bytes / 8;
        double *h = malloc(bytes + 8), *back = malloc(bytes + 8), *plain = malloc(bytes + 8);
        void *dev = NULL, *dev2 = NULL;
        CU_ASSERT_FATAL(h && back && plain);
        HK_ASSERT_OK(be->alloc(&dev, bytes + 8));
        HK_ASSERT_OK(be->alloc(&dev2, bytes + 8));
        for (size_t i = 0; i < n; i++)
            h[i] = (double)i * 0.75 - (double)(i % 7);
        HK_ASSERT_OK(be->copy_to_pageable(dev, h, bytes));
        for (size_t i = 0; i < n; i++) /* the upload read h already */
            h[i] = -1;
        HK_ASSERT_OK(be->copy_from(plain, dev, bytes));
        size_t bad = n;
        for (size_t i = 0; i < n && bad == n; i++)
            if (plain[i] != (double)i * 0.75 - (double)(i % 7)) bad = i;
        if (bad < n)
            printf("\n  copy_to_pageable of %zu bytes: double %zu is %.17g ", bytes, bad,
                   plain[bad]);
        CU_ASSERT(bad == n);
        /* down: a second array uploaded the plain way, then copy_from_pageable */
        for (size_t i = 0; i < n; i++)
            h[i] = (double)(n - i) * 1.5;
        HK_ASSERT_OK(be->copy_to(dev2, h, bytes));
        memset(back, 0x5a, bytes + 8);
        HK_ASSERT_OK(be->copy_from_pageable(back, dev2, bytes));
        CU_ASSERT(!memcmp(back, h, bytes));
        if (bytes) {
            unsigned char guard[8];
            memset(guard, 0x5a, sizeof guard);
            CU_ASSERT(!memcmp((char *)back + bytes, guard, 8)); /* nothing past the end */
        }
        if (bytes && memcmp(back, h, bytes))
            printf("\n  copy_from_pageable of %zu bytes differs from the source ", bytes);
        be->dealloc(dev);
        be->dealloc(dev2);
        free(h);
        free(back);
        free(plain);
    }
}

static void test_pageable_copies_cpu(void)
{
    pageable_copies_on(&hk_backend_cpu);
}

static void test_pageable_copies_cuda(void)
{
    pageable_copies_on(hk_test_cuda_backend());
}

/* dist.comm=nccl on one process (a communicator of one GPU, no neighbours): the layout's SpMV,
 * dot products and a sum of more values than one gather takes, through the device path, against
 * the plain product and loops. */
static void test_nccl_one(void)
{
    const hk_backend *be = hk_test_cuda_backend();
    if (!be->dcomm_create) {
        printf("(built without NCCL: nothing to run) ");
        return;
    }
    hk_bcsr K = {0};
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 3, &K));
    const int64_t n = K.nbrows * K.bs, m = 1500;
    hk_dist *d = NULL;
    HK_ASSERT_OK(hk_dist_create_comm(hk_comm_world(), be, 0, &K, HK_DIST_COMM_NCCL, &d));
    CU_ASSERT(!strcmp(hk_dist_comm_name(d), "nccl"));
    hk_dist_ops_init(d);
    const hk_backend_ops *o = &d->ops;
    double *x = hk_test_rand_vec(n, 5u), *y = malloc(sizeof *y * (size_t)n);
    double *yd = malloc(sizeof *yd * (size_t)n), *v = hk_test_rand_vec(m, 9u);
    double *vd = malloc(sizeof *vd * (size_t)m);
    hk_bcsr_spmv(&K, x, y);
    hk_bmat Koo = {0};
    hk_mat *A = NULL;
    hk_vec *vx = NULL, *vy = NULL;
    double *S = NULL;
    Koo = d->Koo_d; /* the layout's owned block on the backend (its values are there only) */
    Koo.be = o;
    HK_ASSERT_OK(hk_mat_create_bmat(&Koo, HK_FMT_CSR, HK_FP64, NULL, &A));
    HK_ASSERT_OK(hk_vec_create(o, n, HK_FP64, &vx));
    HK_ASSERT_OK(hk_vec_create(o, n, HK_FP64, &vy));
    HK_ASSERT_OK(hk_vec_upload(vx, x));
    HK_ASSERT_OK(hk_mat_spmv(A, vx, vy));
    HK_ASSERT_OK(hk_vec_download(vy, yd));
    double err = 0, scale = 0, xy = 0, yy = 0, got[3];
    for (int64_t i = 0; i < n; i++) {
        err = fmax(err, fabs(yd[i] - y[i]));
        scale = fmax(scale, fabs(y[i]));
        xy += x[i] * y[i];
        yy += y[i] * y[i];
    }
    CU_ASSERT(err <= 1e-13 * scale);
    HK_ASSERT_OK(o->vec_dot(vx, vy, &got[0]));
    hk_vec *X[2] = {vx, vy};
    HK_ASSERT_OK(o->vec_mdot(2, X, vy, &got[1]));
    CU_ASSERT(fabs(got[0] - xy) <= 1e-12 * fabs(xy));
    CU_ASSERT(fabs(got[1] - xy) <= 1e-12 * fabs(xy) && fabs(got[2] - yy) <= 1e-12 * yy);
    /* one process: the sum is the values themselves, bit for bit, over two gathers */
    HK_ASSERT_OK(be->scal_alloc(&S, (int)m));
    HK_ASSERT_OK(be->scal_set(S, 0, (int)m, v));
    hk_dcomm_sum(d->dcomm, S, (int)m);
    HK_ASSERT_OK(be->scal_get(S, 0, (int)m, vd));
    CU_ASSERT(!memcmp(v, vd, sizeof *v * (size_t)m));
    be->scal_free(S);
    hk_vec_destroy(vx);
    hk_vec_destroy(vy);
    hk_mat_destroy(A);
    hk_dist_destroy(d);
    free(x);
    free(y);
    free(yd);
    free(v);
    free(vd);
    hk_bcsr_free(&K);
}

/* ---- coo_to_csr: COO to CSR, duplicates summed in input order ----------------------------- */

/* A coo_to_csr input on the host: A (rows of 0 to 11 blocks; rmap: a fifth of the rows
 * without a row, the others on random rows, several A rows on one), n more entries; few keys,
 * so that many entries meet, and values of exponents -8 to 8, so that the order of a sum shows
 * in its bits. */
typedef struct coo_in {
    hk_bmat A;
    int32_t *rmap, *erow;
    int64_t *cmap, *ekey;
    double *eval;
    int64_t n, nrows, nkeys;
} coo_in;

static uint64_t coo_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static double coo_value(uint64_t *s)
{
    const double m = (double)coo_rand(s) / 2147483648.0 - 0.5;
    return ldexp(m, (int)(coo_rand(s) % 53) - 26);
}

static void coo_make(int64_t nar, int64_t nc, int64_t n, int64_t nrows, int64_t nkeys, int bs,
                     uint64_t seed, coo_in *in)
{
    uint64_t s = seed;
    memset(in, 0, sizeof *in);
    hk_bmat *A = &in->A;
    A->be = &hk_backend_cpu;
    A->br = A->bc = bs;
    A->nbrows = nar;
    A->nbcols = nc;
    A->rowptr = malloc(sizeof *A->rowptr * (size_t)(nar + 1));
    A->rowptr[0] = 0;
    for (int64_t i = 0; i < nar; i++)
        A->rowptr[i + 1] = A->rowptr[i] + (int64_t)(coo_rand(&s) % 12);
    A->nnzb = A->rowptr[nar];
    const int64_t bsz = (int64_t)bs * bs;
    A->colind = malloc(sizeof *A->colind * (size_t)(A->nnzb + 1));
    A->val = malloc(sizeof *A->val * (size_t)(A->nnzb * bsz + 1));
    for (int64_t p = 0; p < A->nnzb; p++)
        A->colind[p] = (int32_t)(coo_rand(&s) % (uint64_t)nc);
    for (int64_t e = 0; e < A->nnzb * bsz; e++)
        A->val[e] = coo_value(&s);
    in->rmap = malloc(sizeof *in->rmap * (size_t)(nar + 1));
    in->cmap = malloc(sizeof *in->cmap * (size_t)(nc + 1));
    for (int64_t i = 0; i < nar; i++)
        in->rmap[i] = coo_rand(&s) % 5 == 0 ? -1 : (int32_t)(coo_rand(&s) % (uint64_t)nrows);
    for (int64_t c = 0; c < nc; c++)
        in->cmap[c] = (int64_t)(coo_rand(&s) % (uint64_t)nkeys);
    in->n = n;
    in->erow = malloc(sizeof *in->erow * (size_t)(n + 1));
    in->ekey = malloc(sizeof *in->ekey * (size_t)(n + 1));
    in->eval = malloc(sizeof *in->eval * (size_t)(n * bsz + 1));
    for (int64_t k = 0; k < n; k++) {
        in->erow[k] = (int32_t)(coo_rand(&s) % (uint64_t)nrows);
        in->ekey[k] = (int64_t)(coo_rand(&s) % (uint64_t)nkeys);
    }
    for (int64_t e = 0; e < n * bsz; e++)
        in->eval[e] = coo_value(&s);
    in->nrows = nrows;
    in->nkeys = nkeys;
}

static void coo_free(coo_in *in)
{
    free(in->A.rowptr);
    free(in->A.colind);
    free(in->A.val);
    free(in->rmap);
    free(in->cmap);
    free(in->erow);
    free(in->ekey);
    free(in->eval);
}

/* The op's output against the definition, by another road: for each row, each key from the
 * smallest up, every input entry read in input order and the matching ones summed (the first
 * copied). Bytes compared; the first difference printed. */
static int coo_check(const coo_in *in, const int64_t *rowptr, const int64_t *key, const double *val)
{
    const hk_bmat *A = &in->A;
    const int bsz = A->br * A->bc;
    int64_t *arow = malloc(sizeof *arow * (size_t)(A->nnzb + 1)); /* input entry's row */
    int64_t q = 0, bad = 0;
    double *v = malloc(sizeof *v * (size_t)bsz);
    for (int64_t i = 0; i < A->nbrows; i++)
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            arow[p] = in->rmap[i];
    for (int64_t r = 0; r < in->nrows && !bad; r++) {
        if (rowptr[r] != q) {
            fprintf(stderr, "\n  coo_to_csr: row %lld starts at %lld, not %lld\n", (long long)r,
                    (long long)rowptr[r], (long long)q);
            bad = 1;
            break;
        }
        for (int64_t kk = 0; kk < in->nkeys && !bad; kk++) {
            int found = 0;
            for (int64_t e = 0; e < A->nnzb + in->n; e++) {
                const int64_t er = e < A->nnzb ? arow[e] : in->erow[e - A->nnzb];
                const int64_t ek = e < A->nnzb ? in->cmap[A->colind[e]] : in->ekey[e - A->nnzb];
                if (er != r || ek != kk) continue;
                const double *x = e < A->nnzb ? A->val + e * bsz : in->eval + (e - A->nnzb) * bsz;
                for (int j = 0; j < bsz; j++)
                    v[j] = found ? v[j] + x[j] : x[j];
                found = 1;
            }
            if (!found) continue;
            if (q >= rowptr[in->nrows] || key[q] != kk ||
                memcmp(val + q * bsz, v, sizeof *v * bsz)) {
                fprintf(stderr, "\n  coo_to_csr: row %lld, key %lld: block %lld differs\n",
                        (long long)r, (long long)kk, (long long)q);
                bad = 1;
            }
            q++;
        }
    }
    if (!bad && rowptr[in->nrows] != q) {
        fprintf(stderr, "\n  coo_to_csr: %lld blocks, not %lld\n", (long long)rowptr[in->nrows],
                (long long)q);
        bad = 1;
    }
    free(arow);
    free(v);
    return !bad;
}

/* The cpu op on random inputs (one key, blocks 1 x 1 to 6 x 6, no A, no entries, no row at
 * all) against the definition, and a bad entry named. */
static void test_coo_cpu(void)
{
    static const struct {
        int64_t nar, nc, n, nrows, nkeys;
        int bs;
    } cases[] = {{40, 30, 25, 12, 9, 2},   {60, 50, 100, 7, 1, 1}, {0, 1, 50, 10, 20, 3},
                 {50, 40, 0, 15, 1000, 6}, {30, 20, 10, 1, 5, 1},  {0, 1, 0, 4, 3, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        coo_in in;
        coo_make(cases[c].nar, cases[c].nc, cases[c].n, cases[c].nrows, cases[c].nkeys, cases[c].bs,
                 11u + c, &in);
        int64_t *rowptr = NULL, *key = NULL;
        double *val = NULL;
        HK_ASSERT_OK(hk_backend_cpu.coo_to_csr(&in.A, in.rmap, in.cmap, in.n, in.erow, in.ekey,
                                               in.eval, in.nrows, in.nkeys, &rowptr, &key, &val));
        CU_ASSERT(rowptr && coo_check(&in, rowptr, key, val));
        hk_backend_cpu.dealloc(rowptr);
        hk_backend_cpu.dealloc(key);
        hk_backend_cpu.dealloc(val);
        coo_free(&in);
    }
    coo_in in;
    coo_make(20, 10, 8, 5, 7, 2, 3u, &in);
    int64_t *rowptr = NULL, *key = NULL;
    double *val = NULL;
    in.ekey[3] = 7;
    CU_ASSERT(hk_backend_cpu.coo_to_csr(&in.A, in.rmap, in.cmap, in.n, in.erow, in.ekey, in.eval,
                                        in.nrows, in.nkeys, &rowptr, &key, &val) == HK_ERR_ARG);
    char want[160];
    snprintf(want, sizeof want, "coo_to_csr: input entry %lld has its row or key out of range",
             (long long)in.A.nnzb + 3);
    CU_ASSERT(strstr(hk_error_message(), want) != NULL);
    CU_ASSERT(rowptr == NULL && key == NULL && val == NULL);
    coo_free(&in);
}

/* The same inputs on cuda (uploaded): its rowptr, keys and values the cpu's bytes, also on
 * inputs of several of cub's tiles (200k entries of 6 x 6); a bad entry named in the cpu's
 * sentence. */
static void test_coo_cuda(void)
{
    const hk_backend *be = hk_test_cuda_backend();
    static const struct {
        int64_t nar, nc, n, nrows, nkeys;
        int bs;
    } cases[] = {{40, 30, 25, 12, 9, 2},
                 {60, 50, 100, 7, 1, 1},
                 {0, 1, 50, 10, 20, 3},
                 {50, 40, 0, 15, 1000, 6},
                 {30, 20, 10, 1, 5, 1},
                 {0, 1, 0, 4, 3, 2},
                 {40000, 30000, 20000, 26000, 90000, 6},
                 {30000, 5000, 60000, 300, 2000, 3}};
    for (int bad = 0; bad < 2; bad++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            if (bad && c > 0) break;
            coo_in in;
            coo_make(cases[c].nar, cases[c].nc, cases[c].n, cases[c].nrows, cases[c].nkeys,
                     cases[c].bs, 11u + c, &in);
            if (bad) in.erow[4] = (int32_t)in.nrows;
            const hk_bmat *A = &in.A;
            const int64_t bsz = (int64_t)A->br * A->bc, nr = in.nrows;
            hk_bmat Ad = {0};
            hk_test_bmat_to(be, A, &Ad);
            void *rmap = NULL, *cmap = NULL, *erow = NULL, *ekey = NULL, *eval = NULL;
            HK_ASSERT_OK(be->alloc(&rmap, sizeof *in.rmap * (size_t)(A->nbrows + 1)));
            HK_ASSERT_OK(be->alloc(&cmap, sizeof *in.cmap * (size_t)(A->nbcols + 1)));
            HK_ASSERT_OK(be->alloc(&erow, sizeof *in.erow * (size_t)(in.n + 1)));
            HK_ASSERT_OK(be->alloc(&ekey, sizeof *in.ekey * (size_t)(in.n + 1)));
            HK_ASSERT_OK(be->alloc(&eval, sizeof *in.eval * (size_t)(in.n * bsz + 1)));
            HK_ASSERT_OK(be->copy_to(rmap, in.rmap, sizeof *in.rmap * (size_t)(A->nbrows + 1)));
            HK_ASSERT_OK(be->copy_to(cmap, in.cmap, sizeof *in.cmap * (size_t)(A->nbcols + 1)));
            HK_ASSERT_OK(be->copy_to(erow, in.erow, sizeof *in.erow * (size_t)(in.n + 1)));
            HK_ASSERT_OK(be->copy_to(ekey, in.ekey, sizeof *in.ekey * (size_t)(in.n + 1)));
            HK_ASSERT_OK(be->copy_to(eval, in.eval, sizeof *in.eval * (size_t)(in.n * bsz + 1)));
            int64_t *rp = NULL, *key = NULL, *rpd = NULL, *keyd = NULL;
            double *val = NULL, *vald = NULL;
            const int ec = hk_backend_cpu.coo_to_csr(A, in.rmap, in.cmap, in.n, in.erow, in.ekey,
                                                     in.eval, nr, in.nkeys, &rp, &key, &val);
            char want[512];
            snprintf(want, sizeof want, "%s", ec ? hk_error_message() : "");
            const int ed = be->coo_to_csr(&Ad, rmap, cmap, in.n, erow, ekey, eval, nr, in.nkeys,
                                          &rpd, &keyd, &vald);
            CU_ASSERT(ec == (bad ? HK_ERR_ARG : 0) && ed == ec);
            if (bad) { /* the cpu's sentence (HOOKE_DEBUG=1 adds each one's own place) */
                CU_ASSERT(!strncmp(hk_error_message(), want, strcspn(want, "[")));
                CU_ASSERT(rpd == NULL && keyd == NULL && vald == NULL);
            } else if (!ec && !ed) {
                const int64_t nnz = rp[nr];
                int64_t *hrp = malloc(sizeof *hrp * (size_t)(nr + 1));
                int64_t *hkey = malloc(sizeof *hkey * (size_t)(nnz + 1));
                double *hval = malloc(sizeof *hval * (size_t)(nnz * bsz + 1));
                HK_ASSERT_OK(be->copy_from(hrp, rpd, sizeof *hrp * (size_t)(nr + 1)));
                const int same_rows = !memcmp(hrp, rp, sizeof *hrp * (size_t)(nr + 1));
                if (same_rows && nnz) {
                    HK_ASSERT_OK(be->copy_from(hkey, keyd, sizeof *hkey * (size_t)nnz));
                    HK_ASSERT_OK(be->copy_from(hval, vald, sizeof *hval * (size_t)(nnz * bsz)));
                }
                int64_t first = -1;
                for (int64_t q = 0; same_rows && q < nnz && first < 0; q++)
                    if (hkey[q] != key[q] ||
                        memcmp(hval + q * bsz, val + q * bsz, sizeof *hval * (size_t)bsz))
                        first = q;
                if (!same_rows)
                    fprintf(stderr, "\n  coo_to_csr case %zu: cuda's rowptr differs\n", c);
                else if (first >= 0)
                    fprintf(stderr,
                            "\n  coo_to_csr case %zu: block %lld differs: key %lld (cpu %lld), "
                            "first value %a (cpu %a)\n",
                            c, (long long)first, (long long)hkey[first], (long long)key[first],
                            hval[first * bsz], val[first * bsz]);
                CU_ASSERT(same_rows && first < 0);
                free(hrp);
                free(hkey);
                free(hval);
            }
            hk_backend_cpu.dealloc(rp);
            hk_backend_cpu.dealloc(key);
            hk_backend_cpu.dealloc(val);
            if (rpd) be->dealloc(rpd);
            if (keyd) be->dealloc(keyd);
            if (vald) be->dealloc(vald);
            be->dealloc(rmap);
            be->dealloc(cmap);
            be->dealloc(erow);
            be->dealloc(ekey);
            be->dealloc(eval);
            hk_bmat_free(&Ad);
            coo_free(&in);
        }
}

/* ---- pc=amg's ghost rows (hk_damg_send_records, hk_damg_ghost_matrix) --------------------- */

/* A host block matrix of nrows rows of br x bc blocks over nc columns, its rows' columns
 * ascending and distinct (row i: none when i % 9 == 4, else up to 6 of them), the columns
 * c % 7 == 5 never used; values from seed. */
static hk_bmat ghost_case_rows(int64_t nrows, int64_t nc, int br, int bc, unsigned seed)
{
    hk_bmat M = {0};
    int64_t nnz = 0;
    unsigned s = seed;
    int32_t *cols = malloc(sizeof *cols * (size_t)(nrows * 6 + 1));
    int64_t *rp = malloc(sizeof *rp * (size_t)(nrows + 1));
    rp[0] = 0;
    for (int64_t i = 0; i < nrows; i++) {
        int64_t c = 0;
        for (int k = 0; k < 6 && i % 9 != 4; k++) {
            s = s * 1103515245u + 12345u;
            c += 1 + (int64_t)((s >> 16) % 4);
            if (c >= nc) break;
            if (c % 7 != 5) cols[nnz++] = (int32_t)c;
        }
        rp[i + 1] = nnz;
    }
    HK_ASSERT_OK(hk_bmat_alloc(&hk_backend_cpu, br, bc, nrows, nc, nnz, &M));
    memcpy(M.rowptr, rp, sizeof *rp * (size_t)(nrows + 1));
    memcpy(M.colind, cols, sizeof *cols * (size_t)nnz);
    double *v = hk_test_rand_vec(nnz * br * bc + 1, seed);
    memcpy(M.val, v, sizeof *v * (size_t)(nnz * br * bc));
    free(v);
    free(cols);
    free(rp);
    return M;
}

/* M (host) on be: the same arrays on the cpu, a copy elsewhere. */
static hk_bmat ghost_case_on(const hk_backend *be, const hk_bmat *M)
{
    if (be == &hk_backend_cpu) return *M;
    hk_bmat D = {0};
    const int64_t bb = (int64_t)M->br * M->bc;
    HK_ASSERT_OK(hk_bmat_alloc(be, M->br, M->bc, M->nbrows, M->nbcols, M->nnzb, &D));
    HK_ASSERT_OK(be->copy_to(D.rowptr, M->rowptr, sizeof *M->rowptr * (size_t)(M->nbrows + 1)));
    HK_ASSERT_OK(be->copy_to(D.colind, M->colind, sizeof *M->colind * (size_t)M->nnzb));
    HK_ASSERT_OK(be->copy_to(D.val, M->val, sizeof *M->val * (size_t)(M->nnzb * bb)));
    return D;
}

static int cmp_id(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Where a and b (n entries of sz bytes) first differ, -1 if nowhere. */
static int64_t first_diff(const void *a, const void *b, int64_t n, size_t sz)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp((const char *)a + (size_t)i * sz, (const char *)b + (size_t)i * sz, sz))
            return i;
    return -1;
}

#define GHOST_SAME(what, a, b, n)                                                                  \
    do {                                                                                           \
        const int64_t at_ = first_diff((a), (b), (n), sizeof *(a));                                \
        if (at_ >= 0)                                                                              \
            fprintf(stderr,                                                                        \
                    "\n  %s: %s differs from the definition first at entry %lld of %lld\n",        \
                    be->name, what, (long long)at_, (long long)(n));                               \
        CU_ASSERT(at_ < 0);                                                                        \
    } while (0)

/* A process's rows D (40, columns colmap: every third id of 200 from 7 on, one in seven of
 * them unused) and its 12 ghosts' rows, sent by a neighbour whose rows B read ids of a
 * wider set (some D's, some not): the records packed on be, the matrix built on be, each
 * against the definition written out here (records by hand; the columns' union by a sort;
 * ghost k's record j = order[k], a permutation), byte for byte. */
static void ghost_rows_on(const hk_backend *be, int br, int bc)
{
    const int bsz = br * bc;
    const int64_t nown = 40, nc = 66, nb = 30, nc2 = 90, ng = 12;
    int64_t colmap[66], colmap2[90], order[12];
    int32_t send[12];
    for (int64_t c = 0; c < nc; c++)
        colmap[c] = 7 + 3 * c;
    for (int64_t c = 0; c < nc2; c++)
        colmap2[c] = 5 + 2 * c + (c > 40 ? 3 : 0);
    for (int64_t k = 0; k < ng; k++) {
        send[k] = (int32_t)((k * 7 + 3) % nb); /* the neighbour's rows, not in order */
        order[k] = (k * 5) % ng;
    }
    hk_bmat Dh = ghost_case_rows(nown, nc, br, bc, 11u), Bh = ghost_case_rows(nb, nc2, br, bc, 23u);
    hk_bmat D = ghost_case_on(be, &Dh), B = ghost_case_on(be, &Bh);
    /* the records by hand */
    int64_t *cnt = NULL, *at = NULL, *want_at = malloc(sizeof *want_at * (size_t)(ng + 1));
    double *rec = NULL;
    want_at[0] = 0;
    for (int64_t j = 0; j < ng; j++)
        want_at[j + 1] = want_at[j] + 1 + (Bh.rowptr[send[j] + 1] - Bh.rowptr[send[j]]) * (1 + bsz);
    double *want = calloc((size_t)want_at[ng] + 1, sizeof *want);
    for (int64_t j = 0; j < ng; j++) {
        double *r = want + want_at[j];
        r[0] = (double)(Bh.rowptr[send[j] + 1] - Bh.rowptr[send[j]]);
        for (int64_t p = Bh.rowptr[send[j]], k = 0; p < Bh.rowptr[send[j] + 1]; p++, k++) {
            r[1 + k * (1 + bsz)] = (double)colmap2[Bh.colind[p]];
            memcpy(r + 2 + k * (1 + bsz), Bh.val + p * bsz, sizeof(double) * (size_t)bsz);
        }
    }
    HK_ASSERT_OK(hk_damg_send_records(be, &B, colmap2, send, ng, &cnt, &at, &rec));
    GHOST_SAME("the records' offsets", at, want_at, ng + 1);
    GHOST_SAME("the records", rec, want, want_at[ng]);
    CU_ASSERT(want_at[ng] > ng * (1 + bsz)); /* blocks travel */
    /* the matrix by its definition */
    int64_t nid = 0, *ids = malloc(sizeof *ids * (size_t)(nc + want_at[ng] + 1));
    for (int64_t p = 0; p < Dh.nnzb; p++)
        ids[nid++] = colmap[Dh.colind[p]];
    for (int64_t j = 0; j < ng; j++)
        for (int64_t k = 0; k < (int64_t)want[want_at[j]]; k++)
            ids[nid++] = (int64_t)want[want_at[j] + 1 + k * (1 + bsz)];
    qsort(ids, (size_t)nid, sizeof *ids, cmp_id);
    int64_t m = 0;
    for (int64_t i = 0; i < nid; i++)
        if (!m || ids[m - 1] != ids[i]) ids[m++] = ids[i];
    int64_t nx = Dh.nnzb;
    for (int64_t k = 0; k < ng; k++)
        nx += (int64_t)want[want_at[order[k]]];
    int64_t *xrp = malloc(sizeof *xrp * (size_t)(nown + ng + 1));
    int32_t *xci = malloc(sizeof *xci * (size_t)(nx + 1));
    double *xv = malloc(sizeof *xv * (size_t)(nx * bsz + 1));
    memcpy(xrp, Dh.rowptr, sizeof *xrp * (size_t)(nown + 1));
    for (int64_t p = 0; p < Dh.nnzb; p++) {
        const int64_t g = colmap[Dh.colind[p]];
        xci[p] = (int32_t)((const int64_t *)bsearch(&g, ids, (size_t)m, sizeof *ids, cmp_id) - ids);
    }
    memcpy(xv, Dh.val, sizeof *xv * (size_t)(Dh.nnzb * bsz));
    for (int64_t k = 0, q = Dh.nnzb; k < ng; k++) {
        const double *r = want + want_at[order[k]];
        for (int64_t j = 0; j < (int64_t)r[0]; j++, q++) {
            const int64_t g = (int64_t)r[1 + j * (1 + bsz)];
            xci[q] =
                (int32_t)((const int64_t *)bsearch(&g, ids, (size_t)m, sizeof *ids, cmp_id) - ids);
            memcpy(xv + q * bsz, r + 2 + j * (1 + bsz), sizeof *xv * (size_t)bsz);
        }
        xrp[nown + k + 1] = q;
    }
    hk_bmat X = {0};
    int64_t *cols = NULL, ncols = 0;
    HK_ASSERT_OK(hk_damg_ghost_matrix(be, &D, colmap, ng, rec, at, order, &X, &cols, &ncols));
    CU_ASSERT(X.nbrows == nown + ng && X.nnzb == nx && X.nbcols == m && ncols == m);
    /* the case has what the union handles: D's columns partly unused, the ghosts' columns
     * partly D's and partly new */
    int used = 0, shared = 0, fresh = 0;
    for (int64_t c = 0; c < nc; c++) {
        int in_rows = 0;
        for (int64_t p = 0; p < Dh.nnzb; p++)
            in_rows |= Dh.colind[p] == c;
        used += in_rows;
    }
    for (int64_t j = 0; j < ng; j++)
        for (int64_t k = 0; k < (int64_t)want[want_at[j]]; k++) {
            const int64_t g = (int64_t)want[want_at[j] + 1 + k * (1 + bsz)];
            const int in_d = g >= 7 && (g - 7) % 3 == 0 && (g - 7) / 3 < nc;
            shared += in_d;
            fresh += !in_d;
        }
    CU_ASSERT(used < nc && shared > 0 && fresh > 0);
    GHOST_SAME("the columns' ids", cols, ids, m < ncols ? m : ncols);
    int64_t *grp = malloc(sizeof *grp * (size_t)(nown + ng + 1));
    int32_t *gci = malloc(sizeof *gci * (size_t)(nx + 1));
    double *gv = malloc(sizeof *gv * (size_t)(nx * bsz + 1));
    if (X.nnzb == nx && X.nbrows == nown + ng) {
        HK_ASSERT_OK(be->copy_from(grp, X.rowptr, sizeof *grp * (size_t)(nown + ng + 1)));
        HK_ASSERT_OK(be->copy_from(gci, X.colind, sizeof *gci * (size_t)nx));
        HK_ASSERT_OK(be->copy_from(gv, X.val, sizeof *gv * (size_t)(nx * bsz)));
        GHOST_SAME("X's row ends", grp, xrp, nown + ng + 1);
        GHOST_SAME("X's columns", gci, xci, nx);
        GHOST_SAME("X's blocks", gv, xv, nx * bsz);
    }
    hk_bmat_free(&X);
    if (be != &hk_backend_cpu) {
        hk_bmat_free(&D);
        hk_bmat_free(&B);
    }
    hk_bmat_free(&Dh);
    hk_bmat_free(&Bh);
    free(cnt);
    free(at);
    free(rec);
    free(want_at);
    free(want);
    free(ids);
    free(xrp);
    free(xci);
    free(xv);
    free(cols);
    free(grp);
    free(gci);
    free(gv);
}

static void test_ghost_rows_cpu(void)
{
    ghost_rows_on(&hk_backend_cpu, 3, 6);
    ghost_rows_on(&hk_backend_cpu, 2, 2);
}

static void test_ghost_rows_cuda(void)
{
    ghost_rows_on(hk_test_cuda_backend(), 3, 6);
    ghost_rows_on(hk_test_cuda_backend(), 2, 2);
}

/* ---- pc=amg's partial Galerkin product (hk_damg_galerkin_partial) ----------------------- */

/* Whether host block matrices x and y have the same pattern and value bytes; the first
 * difference named (what, on be). */
static int same_bmat(const char *what, const char *be, const hk_bmat *x, const hk_bmat *y)
{
    const int64_t bb = (int64_t)x->br * x->bc;
    const char *part = NULL;
    int64_t at = -1;
    if (x->br != y->br || x->bc != y->bc || x->nbrows != y->nbrows || x->nbcols != y->nbcols ||
        x->nnzb != y->nnzb)
        part = "shape";
    else if ((at = first_diff(x->rowptr, y->rowptr, x->nbrows + 1, sizeof *x->rowptr)) >= 0)
        part = "rowptr";
    else if ((at = first_diff(x->colind, y->colind, x->nnzb, sizeof *x->colind)) >= 0)
        part = "colind";
    else if ((at = first_diff(x->val, y->val, x->nnzb * bb, sizeof *x->val)) >= 0)
        part = "values";
    if (part)
        fprintf(stderr, "\n  galerkin_partial on %s, %s: %s differs (entry %lld)\n", be, what, part,
                (long long)at);
    return !part;
}

/* On be: A (nown rows of 3x3 blocks over nown + ng columns) times Pext (nown + ng rows of 3x6
 * blocks over nc coarse columns, some rows empty), C = Rt (A P) with Rt = Pext^T, into *Ch
 * (host), checked byte for byte against P_own^T (A P) by the plain product on be. */
static void galerkin_partial_case(const hk_backend *be, int64_t nown, int64_t ng, int64_t nc,
                                  unsigned seed, hk_bmat *Ch)
{
    hk_bmat Ah = ghost_case_rows(nown, nown + ng, 3, 3, seed);
    hk_bmat Ph = ghost_case_rows(nown + ng, nc, 3, 6, seed + 1);
    hk_bmat A = ghost_case_on(be, &Ah), P = ghost_case_on(be, &Ph);
    hk_bmat AP = {0}, Rt = {0}, Pt = {0}, C = {0}, Cp = {0}, Hp = {0};
    HK_ASSERT_OK(be->bmat_spgemm(&A, &P, &AP));
    HK_ASSERT_OK(be->bmat_transpose(&P, &Rt));
    hk_bmat Pv = P;
    Pv.nbrows = nown;
    Pv.nnzb = Ph.rowptr[nown];
    HK_ASSERT_OK(be->bmat_transpose(&Pv, &Pt));
    HK_ASSERT_OK(be->bmat_spgemm(&Pt, &AP, &Cp));
    HK_ASSERT_OK(hk_damg_galerkin_partial(be, &Rt, &AP, 0, &C));
    HK_ASSERT_OK(hk_bmat_to_host(&C, Ch));
    HK_ASSERT_OK(hk_bmat_to_host(&Cp, &Hp));
    CU_ASSERT(Ch->nnzb > 0 && Ph.rowptr[nown] < Ph.nnzb); /* ghost rows' blocks in Rt */
    CU_ASSERT(same_bmat("against P_own^T (A P)", be->name, Ch, &Hp));
    /* upper: the whole pattern, the blocks on and above the diagonal the whole one's bytes */
    hk_bmat Cu = {0}, Hu = {0};
    HK_ASSERT_OK(hk_damg_galerkin_partial(be, &Rt, &AP, 1, &Cu));
    HK_ASSERT_OK(hk_bmat_to_host(&Cu, &Hu));
    const int64_t bb = (int64_t)Hu.br * Hu.bc;
    int64_t upper = 0, differ = 0;
    for (int64_t i = 0; i < Hu.nbrows && Hu.nnzb == Hp.nnzb; i++)
        for (int64_t p = Hu.rowptr[i]; p < Hu.rowptr[i + 1]; p++)
            if (Hu.colind[p] >= i) {
                upper++;
                differ += memcmp(Hu.val + p * bb, Hp.val + p * bb, (size_t)bb * sizeof *Hu.val) != 0;
            }
    hk_bmat Hv = Hu;
    Hv.val = Hp.val; /* the pattern compared */
    CU_ASSERT(same_bmat("upper: the pattern", be->name, &Hv, &Hp));
    CU_ASSERT(upper > 0 && upper < Hp.nnzb && differ == 0);
    hk_bmat_free(&Cu);
    hk_bmat_free(&Hu);
    hk_bmat_free(&Hp);
    hk_bmat_free(&AP);
    hk_bmat_free(&Rt);
    hk_bmat_free(&Pt);
    hk_bmat_free(&C);
    hk_bmat_free(&Cp);
    if (be != &hk_backend_cpu) {
        hk_bmat_free(&A);
        hk_bmat_free(&P);
    }
    hk_bmat_free(&Ah);
    hk_bmat_free(&Ph);
}

/* hk_damg_galerkin_partial on be: a sparse case (many coarse columns) and a dense one (C's
 * rows nearly full), with each numeric kernel HOOKE_SPGEMM names (read at each product; the
 * cpu has one), the same bytes as P_own^T (A P) and, off the cpu, as the cpu's. */
static void galerkin_partial_on(const hk_backend *be)
{
    static const char *kernels[] = {"", "row", "stationary"};
    const char *was = getenv("HOOKE_SPGEMM");
    char *keep = was ? strdup(was) : NULL;
    for (int c = 0; c < 2; c++) {
        const int64_t nown = c ? 40 : 300, ng = c ? 25 : 90, nc = c ? 14 : 260;
        hk_bmat ref = {0};
        if (be != &hk_backend_cpu)
            galerkin_partial_case(&hk_backend_cpu, nown, ng, nc, 7u + c, &ref);
        for (int k = 0; k < (int)(sizeof kernels / sizeof *kernels); k++) {
            setenv("HOOKE_SPGEMM", kernels[k], 1);
            hk_bmat Ch = {0};
            galerkin_partial_case(be, nown, ng, nc, 7u + c, &Ch);
            if (be != &hk_backend_cpu) CU_ASSERT(same_bmat(kernels[k], be->name, &Ch, &ref));
            hk_bmat_free(&Ch);
        }
        hk_bmat_free(&ref);
    }
    if (keep)
        setenv("HOOKE_SPGEMM", keep, 1);
    else
        unsetenv("HOOKE_SPGEMM");
    free(keep);
}

/* bmat_put_transposed on be: blocks of every size up to 6 put transposed at scattered
 * positions, the others untouched, byte for byte as defined (the cpu's loop). */
static void put_transposed_on(const hk_backend *be)
{
    for (int bs = 1; bs <= 6; bs++) {
        const int64_t nblk = 3000, n = 1100, bb = (int64_t)bs * bs;
        double *val = hk_test_rand_vec(nblk * bb, 31u + (unsigned)bs);
        double *src = hk_test_rand_vec(n * bb, 57u + (unsigned)bs);
        double *want = malloc(sizeof *want * (size_t)(nblk * bb));
        double *got = malloc(sizeof *got * (size_t)(nblk * bb));
        int64_t *to = malloc(sizeof *to * (size_t)n);
        for (int64_t k = 0; k < n; k++)
            to[k] = (k * 2711 + 17) % nblk; /* distinct: 2711 and 3000 are coprime */
        memcpy(want, val, sizeof *want * (size_t)(nblk * bb));
        for (int64_t k = 0; k < n; k++)
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++)
                    want[to[k] * bb + r * bs + c] = src[k * bb + c * bs + r];
        double *val_d = NULL, *src_d = NULL;
        int64_t *to_d = NULL;
        HK_ASSERT_OK(be->alloc((void **)&val_d, sizeof *val * (size_t)(nblk * bb)));
        HK_ASSERT_OK(be->alloc((void **)&src_d, sizeof *src * (size_t)(n * bb)));
        HK_ASSERT_OK(be->alloc((void **)&to_d, sizeof *to * (size_t)n));
        HK_ASSERT_OK(be->copy_to(val_d, val, sizeof *val * (size_t)(nblk * bb)));
        HK_ASSERT_OK(be->copy_to(src_d, src, sizeof *src * (size_t)(n * bb)));
        HK_ASSERT_OK(be->copy_to(to_d, to, sizeof *to * (size_t)n));
        HK_ASSERT_OK(be->bmat_put_transposed(val_d, bs, to_d, src_d, n));
        HK_ASSERT_OK(be->bmat_put_transposed(val_d, bs, to_d, src_d, 0)); /* nothing */
        HK_ASSERT_OK(be->copy_from(got, val_d, sizeof *got * (size_t)(nblk * bb)));
        CU_ASSERT(!memcmp(got, want, sizeof *got * (size_t)(nblk * bb)));
        be->dealloc(val_d);
        be->dealloc(src_d);
        be->dealloc(to_d);
        free(val);
        free(src);
        free(want);
        free(got);
        free(to);
    }
}

static void test_put_transposed_cpu(void)
{
    put_transposed_on(&hk_backend_cpu);
}

static void test_put_transposed_cuda(void)
{
    put_transposed_on(hk_test_cuda_backend());
}

/* dist.layer=always, pc=amg: every coarse operator of the distributed hierarchy checked
 * (HOOKE_AMG_CHECK_TRANSFER=1) against the one-process Galerkin product of the gathered A and
 * P: exactly symmetric (lower blocks the transposes of the upper ones, bit for bit), the
 * product's pattern, its values to 1e-12; fp64 and fp32 levels. */
static void test_layer_galerkin(void)
{
    hk_bcsr K = {0};
    double *xyz = NULL;
    HK_ASSERT_OK(hk_gen_elasticity3d(9, 8, 10, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(9, 8, 10, &xyz));
    const int64_t nl = K.nbrows * K.bs;
    double *b = hk_test_rand_vec(nl, 13u);
    const hk_nearnull nn = {.dim = 3, .coords = xyz};
    static const char *const variants[] = {"", " pc.amg.precision=fp64"};
    setenv("HOOKE_AMG_CHECK_TRANSFER", "1", 1);
    for (int v = 0; v < 2; v++) {
        char opts[200];
        snprintf(opts, sizeof opts,
                 "backend=cpu method=cg tol=1e-10 pc=amg pc.amg.coarse_size=40 "
                 "dist.layer=always%s",
                 variants[v]);
        double *x = calloc((size_t)nl, sizeof *x);
        hk_options *o = NULL;
        hk_solver *s = NULL;
        hk_result res;
        const int64_t before = hk_damg_galerkin_checked();
        HK_ASSERT_OK(hk_options_create(&o));
        HK_ASSERT_OK(hk_options_parse(o, opts));
        HK_ASSERT_OK(hk_solver_create_dist(hk_comm_world(), 0, &K, &nn, o, &s));
        HK_ASSERT_OK(hk_solver_solve(s, b, x, &res));
        CU_ASSERT(hk_reason_converged(res.reason));
        CU_ASSERT(hk_damg_galerkin_checked() - before >= 2); /* at least 3 levels */
        hk_solver_destroy(s);
        hk_options_destroy(o);
        free(x);
    }
    unsetenv("HOOKE_AMG_CHECK_TRANSFER");
    free(b);
    free(xyz);
    hk_bcsr_free(&K);
}

static void test_galerkin_partial_cpu(void)
{
    galerkin_partial_on(&hk_backend_cpu);
}

static void test_galerkin_partial_cuda(void)
{
    galerkin_partial_on(hk_test_cuda_backend());
}

HK_SUITE(
    dist, {"partitions of a graph: every part used, balanced, repeatable", test_partition_graph},
    {"partitions of a mesh's cells along their dual graph", test_partition_cells},
    {"one process: sums, agreement and an empty halo pass through", test_comm_one},
    {"one process's rows: all interior; columns beyond them or beyond the matrix refused",
     test_layout_one},
    {"dist.layer=always: one process through the layer solves as the plain solver (jacobi, "
     "amg; host rows, rows in the backend's memory); a bad value named",
     test_layer_one},
    {"vec_gather on the cpu, fp64, fp32 and fp64 into fp32, records of 1 to 9", test_gather_cpu},
    {"the transfer operators' pattern ops on the cpu: a case worked out by hand, a large "
     "random one repeated",
     test_local_pattern_cpu},
    {"dist_scan and dist_split on the cpu: the rows' kinds and ghosts, rows sorted, gather "
     "indices naming their blocks, a bad column's first row",
     test_split_cpu},
    {"the layout from values in the backend's memory, and from host rows taken the "
     "device's way: the host's bytes, its check's sentence (views, and the device's path)",
     test_resident_cpu},
    {"the layout from a part's rows in the backend's memory (their columns made global "
     "there): the host's bytes, its check's sentences (views, and the device's path)",
     test_device_rows_cpu},
    {"the distributed table keeps the backend's own ops only where they are local",
     test_ops_reviewed},
    {"the halos' host staging without a backend op: malloc's, round trips", test_host_staging_cpu},
    {"coo_to_csr on the cpu: duplicates summed in input order, a bad entry named", test_coo_cpu},
    {"pc=amg's ghost rows on the cpu: records and the extended rows as defined",
     test_ghost_rows_cpu},
    {"pc=amg's staging copies (copy_to_pageable, copy_from_pageable) on the cpu: the plain "
     "copies' bytes, nothing past the end",
     test_pageable_copies_cpu},
    {"the distributed operator's fp32 copy converted part by part: the fp32 build's "
     "statistics and SpMV bytes (csr, bsr), values converted again after new ones",
     test_convert_cpu},
    {"pc=amg's partial Galerkin product from R's transpose (A P's rows run on by empty ones) on "
     "the cpu: P_own^T (A P)'s bytes; its upper blocks alone: the same pattern and bytes there",
     test_galerkin_partial_cpu},
    {"bmat_put_transposed on the cpu: blocks of 1 to 6 put transposed as defined",
     test_put_transposed_cpu},
    {"dist.layer=always, pc=amg: each coarse operator exactly symmetric and the gathered "
     "one-process Galerkin product's to 1e-12 (fp32 and fp64 levels)",
     test_layer_galerkin})
HK_DEVICE_SUITE(cuda_dist, {"vec_gather on cuda against the plain loop", test_gather_cuda},
                {"pc=amg's partial Galerkin product on cuda (each HOOKE_SPGEMM kernel): "
                 "P_own^T (A P)'s bytes and the cpu's; its upper blocks alone: the same "
                 "pattern and bytes there",
                 test_galerkin_partial_cuda},
                {"bmat_put_transposed on cuda: blocks of 1 to 6 put transposed as defined (the "
                 "cpu's bytes)",
                 test_put_transposed_cuda},
                {"the transfer operators' pattern ops on cuda: the hand-made case, a random one "
                 "byte for byte as the cpu's",
                 test_local_pattern_cuda},
                {"dist_scan and dist_split on cuda against the cpu's, byte for byte (a middle "
                 "slice, the first rows, all rows), a bad column's first row",
                 test_split_cuda},
                {"the layout from values on cuda, and from host rows uploaded as they are: the "
                 "host's bytes, SpMV, a NaN named",
                 test_resident_cuda},
                {"dist_global_columns on cuda as defined (the cpu's bytes), and the layout from a "
                 "part's rows on cuda: the host's bytes, a NaN and a bad column named",
                 test_device_rows_cuda},
                {"dist.comm=nccl on one GPU: SpMV, dots, a sum of two gathers", test_nccl_one},
                {"the halos' host staging: pinned on cuda, round trips through the device",
                 test_host_staging_cuda},
                {"coo_to_csr on cuda: the cpu's rowptr, keys and value bytes; a bad entry named",
                 test_coo_cuda},
                {"pc=amg's ghost rows on cuda: records and the extended rows, byte for byte as "
                 "defined (as the cpu's)",
                 test_ghost_rows_cuda},
                {"pc=amg's staging copies on cuda (through the pinned buffers from 4 MB, 0 B to "
                 "70 MB): the plain copies' bytes, nothing past the end, the source free at once",
                 test_pageable_copies_cuda},
                {"the distributed operator's fp32 copy converted on cuda: the fp32 build's "
                 "statistics and SpMV bytes (csr, bsr), values converted again after new ones",
                 test_convert_cuda})
