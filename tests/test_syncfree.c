/* pc.tri=syncfree, the sync-free triangular solve of the ILUPACK-GMRES paper (section 4.2):
 * rows in level order, warps of 32, 16, 8, 4, 2 or 1 rows by row length, the solution's
 * entries their own ready flags.
 *
 * trisched (host): the warp schedule (hk_tri_warp_schedule) on generated factors of every
 * shape and on the IC(0)/ILU(0) factors of FE matrices (block sizes 1-3, natural, RCM and
 * colour orderings): a permutation of the rows, warps of one level and one length class, the
 * classes ascending in a level, and every dependency of a warp's rows solved by an earlier
 * warp (what keeps the device solve free of deadlock).
 * syncfree_cuda (device): the device's schedule equals the host's; every solve method against
 * the CPU solve on the same shapes (lower/upper, unit or not, with and without a stored unit
 * diagonal, empty rows, rows of up to 300 entries, chains of rows each on the one before),
 * fp64 and fp32, repeated and interleaved solves of several handles, the same bytes on every
 * repetition and with every polling back-off; NaN and infinity in b give the CPU's NaN and
 * infinity pattern (and the solve ends); pc=ic0/ilu0 applies on cuda against cpu.
 * trisolve_timing_cuda (device, prints only): the L and U solves of the IC(0)/ILU(0) factors of
 * the bracket and of 3D elasticity at two sizes, natural and colour order, per method. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "case.h"
#include "test_util.h"
#include "hk_impl.h"
#include "pc/pc_impl.h"
#ifdef HOOKE_HAVE_CUDA
#include "../cuda/hk_cuda.h"
#endif

static const hk_backend *backend(const char *name)
{
    const hk_backend *b = NULL;
    if (hk_backend_get(name, &b)) hk_error_clear();
    return b;
}

/* ---- factors -------------------------------------------------------------------------- */

enum { KIND_WIDE, KIND_CHAIN, KIND_RANDOM, KIND_LONG, KIND_MIXED, KIND_BIDIAG, KIND_EMPTY, NKIND };
static const char *const kind_name[NKIND] = {"wide levels",    "chain", "random with empty rows",
                                             "long rows",      "mixed", "bidiagonal",
                                             "empty rows only"};

/* A triangular factor in CSR in solve order r (lower: row r; upper: row n-1-r with mirrored
 * columns), columns sorted. Kinds: wide (each row on 3 rows at least 4096 back: n/4096 levels),
 * chain (on the row before and a random earlier one), random (0..40 entries, a fifth of the
 * rows empty), long (lengths cycling through 0, 1, 2, 3, 5, 9, 17, 33, 100, 129, 300: every
 * class and rows of several passes), mixed (0..70 entries among the 64 rows before, an eighth
 * of the rows also on the row before: many levels of mixed classes), bidiagonal (each row on
 * the one before only: n levels of one row), empty (no strict entries: one level). diag: 0 no
 * diagonal stored (unit solves only; an empty factor then has no entry at all), 1
 * a diagonal 1..2, 2 a stored diagonal of 1e30 (ignored by unit solves). */
static void gen_factor(int64_t n, int kind, int upper, int diag, unsigned seed, hk_csr *F)
{
    uint32_t s = seed * 747796405u + 1u;
#define RND() (s = s * 1664525u + 1013904223u, s >> 8)
    static const int long_len[] = {0, 1, 2, 3, 5, 9, 17, 33, 100, 129, 300};
    const int64_t cap = n * 302 + 1;
    HK_ASSERT_OK(hk_csr_alloc(n, n, cap, F));
    int32_t *cols = malloc(320 * sizeof *cols);
    hk_csr G;
    HK_ASSERT_OK(hk_csr_alloc(n, n, cap, &G)); /* rows by solve position */
    int64_t q = 0;
    for (int64_t r = 0; r < n; r++) {
        int nd = 0;
        if (kind == KIND_WIDE && r >= 4096) {
            for (int d = 0; d < 3; d++)
                cols[nd++] = (int32_t)(RND() % (uint32_t)(r / 4096 * 4096));
        } else if (kind == KIND_CHAIN && r > 0) {
            cols[nd++] = (int32_t)(r - 1);
            if (r > 5 && RND() % 2) cols[nd++] = (int32_t)(RND() % (uint32_t)(r - 1));
        } else if (kind == KIND_RANDOM && r > 0 && RND() % 5) {
            const int len = (int)(RND() % 41);
            for (int d = 0; d < len; d++)
                cols[nd++] = (int32_t)(RND() % (uint32_t)r);
        } else if (kind == KIND_LONG && r > 0) {
            const int len = long_len[r % 11];
            for (int d = 0; d < len; d++)
                cols[nd++] = (int32_t)(RND() % (uint32_t)r);
        } else if (kind == KIND_MIXED && r > 0) {
            const int len = (int)(RND() % 71);
            const int64_t lo = r > 64 ? r - 64 : 0;
            for (int d = 0; d < len; d++)
                cols[nd++] = (int32_t)(lo + RND() % (uint32_t)(r - lo));
            if (RND() % 8 == 0) cols[nd++] = (int32_t)(r - 1);
        } else if (kind == KIND_BIDIAG && r > 0) {
            cols[nd++] = (int32_t)(r - 1);
        }
        for (int a = 1; a < nd; a++) /* sort, drop duplicates */
            for (int b = a; b > 0 && cols[b - 1] > cols[b]; b--) {
                const int32_t t = cols[b];
                cols[b] = cols[b - 1];
                cols[b - 1] = t;
            }
        int m = 0;
        for (int a = 0; a < nd; a++)
            if (!m || cols[m - 1] != cols[a]) cols[m++] = cols[a];
        if (diag) cols[m++] = (int32_t)r;
        for (int a = 0; a < m; a++) {
            G.colind[q] = cols[a];
            G.val[q++] = cols[a] == r ? (diag == 2 ? 1e30 : 1.0 + (double)(RND() % 100) / 100.0)
                                      : ((double)(RND() % 1000) / 1000.0 - 0.5) * 0.6;
        }
        G.rowptr[r + 1] = q;
    }
    /* row i of F: solve position r = i (lower) or n-1-i (upper, columns mirrored) */
    int64_t f = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t r = upper ? n - 1 - i : i;
        const int64_t a = G.rowptr[r], e = G.rowptr[r + 1];
        for (int64_t k = 0; k < e - a; k++) {
            const int64_t src = upper ? e - 1 - k : a + k;
            F->colind[f] = upper ? (int32_t)(n - 1 - G.colind[src]) : G.colind[src];
            F->val[f++] = G.val[src];
        }
        F->rowptr[i + 1] = f;
    }
    hk_csr_free(&G);
    free(cols);
#undef RND
}

/* The IC(0) (sym) or ILU(0) factor of K in the node ordering `kind`, by the ops of backend be
 * (expanded to scalar rows, exact factorisation): F (ic0: L; ilu0: L and U in one) and, for
 * ic0, U = L^T; matrices of be. */
static void fe_factors(const hk_backend *be, const hk_bcsr *K, int kind, int sym, hk_bmat *F,
                       hk_bmat *U)
{
    int32_t *perm = NULL;
    int64_t nc = 0;
    hk_bcsr P;
    HK_ASSERT_OK(hk_node_ordering(K, kind, &perm, &nc));
    if (perm)
        HK_ASSERT_OK(hk_bcsr_permute(K, perm, &P));
    else
        HK_ASSERT_OK(hk_bcsr_copy(K, &P));
    hk_bmat B = {0}, S = {0};
    hk_factor_fault f;
    HK_ASSERT_OK(hk_bmat_upload(be, &P, &B));
    HK_ASSERT_OK(be->bmat_expand(&B, &S));
    HK_ASSERT_OK(be->factor_exact(&S, sym, F, &f));
    CU_ASSERT_EQUAL(f.row, -1);
    memset(U, 0, sizeof *U);
    if (sym) HK_ASSERT_OK(be->bmat_transpose(F, U));
    hk_bmat_free(&B);
    hk_bmat_free(&S);
    hk_bcsr_free(&P);
    free(perm);
}

static hk_csr csr_view(const hk_bmat *F)
{
    const hk_csr v = {
        .n = F->nbrows, .m = F->nbcols, .rowptr = F->rowptr, .colind = F->colind, .val = F->val};
    return v;
}

/* The FE matrices: poisson (1 x 1 blocks), 2D and 3D elasticity (2 x 2, 3 x 3). */
enum { NFE = 3 };
static const char *const fe_name[NFE] = {"poisson 14", "elasticity2d 9x7", "elasticity3d 5x4x4"};
static void fe_matrix(int i, hk_bcsr *K)
{
    if (i == 0) HK_ASSERT_OK(hk_gen_poisson2d(14, K));
    if (i == 1) HK_ASSERT_OK(hk_gen_elasticity2d(9, 7, K));
    if (i == 2) HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 4, K));
}

/* ---- the schedule on the host ------------------------------------------------------------ */

/* Every property the device solve relies on; returns the number of violations. */
static int check_schedule(const hk_trifactor *T, const int32_t *order, const int32_t *wd,
                          int64_t nw)
{
    const int64_t n = T->n;
    int bad = 0;
    int64_t *lev = malloc((n ? n : 1) * sizeof *lev), *pos = malloc((n ? n : 1) * sizeof *pos);
    int64_t *warp_of = malloc((n ? n : 1) * sizeof *warp_of);
    for (int64_t l = 0; l < T->nlevels; l++)
        for (int64_t p = T->level_ptr[l]; p < T->level_ptr[l + 1]; p++)
            lev[T->level_rows[p]] = l;
    for (int64_t i = 0; i < n; i++)
        pos[i] = -1;
    for (int64_t q = 0; q < n; q++) { /* a permutation */
        if (order[q] < 0 || order[q] >= n || pos[order[q]] >= 0) {
            bad++;
            continue;
        }
        pos[order[q]] = q;
    }
    /* warps: contiguous from 0 to n, 1..32 >> class rows of one level and class */
    int64_t at = 0;
    for (int64_t w = 0; w < nw; w++) {
        const int c = wd[2 * w + 1] & 7, cnt = wd[2 * w + 1] >> 8;
        bad += wd[2 * w] != at || c > 5 || cnt < 1 || cnt > (32 >> c);
        for (int t = 0; t < cnt && at + t < n; t++) {
            const int32_t i = order[at + t];
            bad += hk_tri_row_class(T->rowptr[i + 1] - T->rowptr[i]) != c;
            bad += lev[i] != lev[order[at]];
            warp_of[at + t] = w;
        }
        at += cnt;
    }
    bad += at != n;
    if (bad) goto done;
    /* (level, class) ascending over the positions, rows ascending within one; full warps
     * except the last of a run */
    for (int64_t q = 1; q < n; q++) {
        const int32_t a = order[q - 1], b = order[q];
        const int64_t ka = lev[a] * 8 + hk_tri_row_class(T->rowptr[a + 1] - T->rowptr[a]);
        const int64_t kb = lev[b] * 8 + hk_tri_row_class(T->rowptr[b + 1] - T->rowptr[b]);
        bad += ka > kb || (ka == kb && a >= b);
    }
    for (int64_t w = 0; w + 1 < nw; w++) {
        const int c = wd[2 * w + 1] & 7, cnt = wd[2 * w + 1] >> 8;
        const int32_t last = order[wd[2 * w] + cnt - 1], next = order[wd[2 * w + 2]];
        const int same =
            lev[last] == lev[next] && hk_tri_row_class(T->rowptr[next + 1] - T->rowptr[next]) == c;
        bad += same && cnt != (32 >> c); /* a run continues only after a full warp */
    }
    /* every dependency in an earlier warp */
    for (int64_t q = 0; q < n; q++) {
        const int32_t i = order[q];
        for (int64_t k = T->rowptr[i]; k < T->rowptr[i + 1]; k++)
            bad += warp_of[pos[T->colind[k]]] >= warp_of[q];
    }
done:
    free(lev);
    free(pos);
    free(warp_of);
    return bad;
}

static void schedule_case(const hk_csr *F, int upper, int unit, const char *what)
{
    hk_trifactor T;
    int32_t *order = NULL, *wd = NULL;
    int64_t nw = -1;
    HK_ASSERT_OK(hk_trifactor_from_csr(F, upper, unit, &T));
    HK_ASSERT_OK(hk_tri_warp_schedule(&T, &order, &wd, &nw));
    const int bad = check_schedule(&T, order, wd, nw);
    if (bad)
        printf("\n    %s %s: %d violations of the schedule", what, upper ? "upper" : "lower", bad);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(nw >= (T.n + 31) / 32 && nw <= T.n);
    free(order);
    free(wd);
    hk_trifactor_free(&T);
}

static void test_schedule_generated(void)
{
    const int64_t sizes[] = {1, 2, 37, 5000};
    for (int kind = 0; kind < NKIND; kind++)
        for (int si = 0; si < 4; si++)
            for (int upper = 0; upper < 2; upper++)
                for (int diag = 0; diag < 3; diag++) {
                    hk_csr F;
                    gen_factor(sizes[si], kind, upper, diag, 11 + kind + si, &F);
                    schedule_case(&F, upper, diag != 1, kind_name[kind]);
                    hk_csr_free(&F);
                }
    /* the check catches a broken schedule: a chain's order reversed, a warp's class changed */
    {
        hk_csr F;
        hk_trifactor T;
        int32_t *order = NULL, *wd = NULL;
        int64_t nw = 0;
        gen_factor(200, KIND_CHAIN, 0, 1, 9, &F);
        HK_ASSERT_OK(hk_trifactor_from_csr(&F, 0, 0, &T));
        HK_ASSERT_OK(hk_tri_warp_schedule(&T, &order, &wd, &nw));
        CU_ASSERT_EQUAL(check_schedule(&T, order, wd, nw), 0);
        wd[2 * 7 + 1] ^= 1;
        CU_ASSERT(check_schedule(&T, order, wd, nw) > 0);
        wd[2 * 7 + 1] ^= 1;
        for (int64_t a = 0, b = T.n - 1; a < b; a++, b--) {
            const int32_t t = order[a];
            order[a] = order[b];
            order[b] = t;
        }
        CU_ASSERT(check_schedule(&T, order, wd, nw) > 0);
        free(order), free(wd);
        hk_trifactor_free(&T);
        hk_csr_free(&F);
    }
    /* a wide factor: 4 levels of 4096 rows, several warps a (level, class) */
    hk_csr F;
    gen_factor(4 * 4096 + 7, KIND_WIDE, 0, 1, 3, &F);
    schedule_case(&F, 0, 0, "wide");
    hk_csr_free(&F);
}

/* fn on both triangles of the IC(0) and ILU(0) factors of every FE matrix in each ordering
 * (factored by the CPU backend). */
static void each_fe_triangle(void (*fn)(const hk_csr *F, int upper, int unit, const char *what))
{
    for (int mi = 0; mi < NFE; mi++)
        for (int kind = HK_ORDER_NATURAL; kind <= HK_ORDER_COLOUR; kind++)
            for (int sym = 0; sym < 2; sym++) {
                hk_bcsr K;
                hk_bmat F = {0}, U = {0};
                fe_matrix(mi, &K);
                fe_factors(backend("cpu"), &K, kind, sym, &F, &U);
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", fe_name[mi], sym ? "ic0" : "ilu0",
                         hk_ordering_names[kind]);
                hk_csr v = csr_view(&F);
                fn(&v, 0, !sym, what);
                v = csr_view(sym ? &U : &F);
                fn(&v, 1, 0, what);
                hk_bmat_free(&F);
                hk_bmat_free(&U);
                hk_bcsr_free(&K);
            }
}

/* The warps of the IC(0) / ILU(0) factors of FE matrices in each ordering; the classes of a
 * 3D elasticity factor are mostly 32 (one row a warp), of a Poisson factor 2 or 4. */
static void test_schedule_fe(void)
{
    each_fe_triangle(schedule_case);
}

/* pc.tri names every method (the option error lists them) and the CPU accepts each. */
static void test_tri_option(void)
{
    const hk_backend *cpu = backend("cpu");
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity2d(4, 3, &K));
    const long n = (long)K.nbrows * K.bs;
    double *r = malloc(n * 8), *z = malloc(n * 8), *z0 = malloc(n * 8);
    for (long i = 0; i < n; i++)
        r[i] = 1 + 0.1 * (double)(i % 7);
    HK_ASSERT_OK(hk_test_apply_pc(cpu, HK_FP64, &K, "ic0", "pc.tri=levels", r, z0, NULL));
    for (int m = 0; hk_tri_method_names[m]; m++) {
        char o[64];
        snprintf(o, sizeof o, "pc.tri=%s", hk_tri_method_names[m]);
        HK_ASSERT_OK(hk_test_apply_pc(cpu, HK_FP64, &K, "ic0", o, r, z, NULL));
        CU_ASSERT(!memcmp(z, z0, n * 8)); /* the CPU solves by levels whatever pc.tri says */
    }
    CU_ASSERT_EQUAL(hk_test_apply_pc(cpu, HK_FP64, &K, "ilu0", "pc.tri=syncfree2", r, z, NULL),
                    HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "syncfree-flags"));
    hk_error_clear();
    free(r), free(z), free(z0);
    hk_bcsr_free(&K);
}

HK_SUITE(trisched,
         {"sync-free warp schedule: generated factors (every class, chains, empty, long rows)",
          test_schedule_generated},
         {"sync-free warp schedule: IC(0)/ILU(0) factors, bs 1-3, each ordering", test_schedule_fe},
         {"pc.tri: every method named, the CPU solves by levels", test_tri_option})

/* ---- the device ------------------------------------------------------------------------- */

#ifdef HOOKE_HAVE_CUDA

static void rhs(int64_t n, double *b)
{
    for (int64_t i = 0; i < n; i++)
        b[i] = 1 + 0.3 * sin(0.7 * (double)i) + 0.1 * (double)(i % 5);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Same NaN / infinity / finite class entry by entry. */
static int same_classes(const double *a, const double *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (isnan(a[i]) != isnan(b[i]) || isinf(a[i]) != isinf(b[i])) return 0;
    return 1;
}

/* The finite entries' largest difference over the largest finite reference entry. */
static double finite_reldiff(const double *a, const double *b, int64_t n)
{
    double d = 0, m = 1e-300;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(a[i]) && isfinite(b[i])) {
            if (!(fabs(a[i] - b[i]) <= d)) d = fabs(a[i] - b[i]);
            if (fabs(b[i]) > m) m = fabs(b[i]);
        }
    return d / m;
}

/* The device's schedule of a syncfree handle equals the host reference of the same factor. */
static void schedule_equal(const hk_csr *F, void *hg, int upper, int unit, const char *what)
{
    hk_trifactor T;
    int32_t *oc = NULL, *wc = NULL, *og = NULL, *wg = NULL;
    int64_t nc = -1, ng = -2;
    HK_ASSERT_OK(hk_trifactor_from_csr(F, upper, unit, &T));
    HK_ASSERT_OK(hk_tri_warp_schedule(&T, &oc, &wc, &nc));
    HK_ASSERT_OK(hk_cuda_tri_schedule(hg, &ng, &og, &wg));
    const int same = nc == ng && !memcmp(oc, og, (size_t)T.n * sizeof *oc) &&
                     !memcmp(wc, wg, (size_t)(2 * nc) * sizeof *wc);
    if (!same)
        printf("\n    %s %s: device schedule differs (%lld and %lld warps)", what,
               upper ? "upper" : "lower", (long long)nc, (long long)ng);
    CU_ASSERT(same);
    free(oc), free(wc), free(og), free(wg);
    hk_trifactor_free(&T);
}

/* One factor on both backends: every method in both precisions against the CPU solve, three
 * solves a handle (x set to garbage before each) giving the same bytes, the schedule of the
 * syncfree handle equal to the host's. */
static void solves_vs_cpu(const hk_csr *F, int upper, int unit, const char *what)
{
    const hk_backend *gpu = backend("cuda"), *cpu = backend("cpu");
    const int64_t n = F->n;
    hk_bmat Fc = {0}, Fg = {0};
    HK_ASSERT_OK(hk_csr_upload(cpu, F, &Fc));
    HK_ASSERT_OK(hk_csr_upload(gpu, F, &Fg));
    double *hb = malloc((n ? n : 1) * 8), *xc = malloc((n ? n : 1) * 8);
    double *xg = malloc((n ? n : 1) * 8), *x0 = malloc((n ? n : 1) * 8);
    rhs(n, hb);
    for (int p = 0; p < 2; p++) {
        void *hc = NULL;
        int64_t lc = -1;
        HK_ASSERT_OK(cpu->tri_setup(&Fc, upper, unit, HK_TRI_LEVELS, (hk_precision)p, &hc, &lc));
        hk_vec *cb, *cx;
        HK_ASSERT_OK(hk_vec_create(cpu, n, (hk_precision)p, &cb));
        HK_ASSERT_OK(hk_vec_create(cpu, n, (hk_precision)p, &cx));
        HK_ASSERT_OK(hk_vec_upload(cb, hb));
        HK_ASSERT_OK(cpu->tri_solve(hc, cb, cx));
        HK_ASSERT_OK(hk_vec_download(cx, xc));
        for (int m = 0; hk_tri_method_names[m]; m++) {
            void *hg = NULL;
            int64_t lg = -2;
            HK_ASSERT_OK(gpu->tri_setup(&Fg, upper, unit, m, (hk_precision)p, &hg, &lg));
            CU_ASSERT_EQUAL(lg, lc);
            if (m == HK_TRI_SYNCFREE && p == 0) schedule_equal(F, hg, upper, unit, what);
            hk_vec *gb, *gx;
            HK_ASSERT_OK(hk_vec_create(gpu, n, (hk_precision)p, &gb));
            HK_ASSERT_OK(hk_vec_create(gpu, n, (hk_precision)p, &gx));
            HK_ASSERT_OK(hk_vec_upload(gb, hb));
            for (int rep = 0; rep < 3; rep++) {
                HK_ASSERT_OK(gpu->vec_set(gx, rep == 1 ? NAN : -1.0));
                HK_ASSERT_OK(gpu->tri_solve(hg, gb, gx));
                HK_ASSERT_OK(hk_vec_download(gx, xg));
                const double d = hk_test_reldiff(xg, xc, (long)n);
                if (!(d < (p ? 1e-5 : 1e-12)))
                    printf("\n    %s %s %s %s: rel diff %g", what, upper ? "upper" : "lower",
                           p ? "fp32" : "fp64", hk_tri_method_names[m], d);
                CU_ASSERT(d < (p ? 1e-5 : 1e-12));
                if (rep == 0)
                    memcpy(x0, xg, n * 8);
                else if (m != HK_TRI_CUSPARSE) /* deterministic; cuSPARSE makes no promise */
                    CU_ASSERT(!memcmp(x0, xg, n * 8));
            }
            CU_ASSERT_EQUAL(gpu->tri_solve(hg, gb, gb), HK_ERR_ARG);
            hk_error_clear();
            gpu->tri_destroy(hg);
            hk_vec_destroy(gb), hk_vec_destroy(gx);
        }
        cpu->tri_destroy(hc);
        hk_vec_destroy(cb), hk_vec_destroy(cx);
    }
    hk_bmat_free(&Fc), hk_bmat_free(&Fg);
    free(hb), free(xc), free(xg), free(x0);
}

static void test_cuda_generated(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(backend("cuda"));
    const int64_t sizes[] = {1, 37, 3001, 20000};
    for (int kind = 0; kind < NKIND; kind++)
        for (int si = 0; si < 4; si++)
            for (int upper = 0; upper < 2; upper++) {
                /* non-unit; unit with a stored diagonal to ignore; unit without one */
                const int diags[3] = {1, 2, 0};
                for (int di = 0; di < (si == 2 ? 3 : 1); di++) {
                    hk_csr F;
                    gen_factor(sizes[si], kind, upper, diags[di], 5 + kind + si, &F);
                    char what[80];
                    snprintf(what, sizeof what, "%s n=%lld diag %d", kind_name[kind],
                             (long long)sizes[si], diags[di]);
                    solves_vs_cpu(&F, upper, diags[di] != 1, what);
                    hk_csr_free(&F);
                }
            }
}

/* IC(0) and ILU(0) factors of FE matrices (bs 1-3) in each ordering, both triangles. */
static void test_cuda_fe_factors(void)
{
    each_fe_triangle(solves_vs_cpu);
}

/* Handles used in turn (the tickets of each handle's launches), and every polling back-off:
 * the same bytes as a handle solving alone. */
static void test_cuda_interleaved(void)
{
    const hk_backend *gpu = backend("cuda");
    const int64_t n = 20000;
    hk_csr F[3];
    hk_bmat G[3] = {{0}};
    void *h[3] = {NULL};
    hk_vec *b, *x[3];
    double *hb = malloc(n * 8), *ref[3], *got = malloc(n * 8);
    rhs(n, hb);
    HK_ASSERT_OK(hk_vec_create(gpu, n, HK_FP64, &b));
    HK_ASSERT_OK(hk_vec_upload(b, hb));
    for (int i = 0; i < 3; i++) {
        int64_t nl;
        gen_factor(n,
                   i == 0   ? KIND_MIXED
                   : i == 1 ? KIND_CHAIN
                            : KIND_LONG,
                   i == 1, 1, 40 + i, &F[i]);
        HK_ASSERT_OK(hk_csr_upload(gpu, &F[i], &G[i]));
        HK_ASSERT_OK(gpu->tri_setup(&G[i], i == 1, 0, HK_TRI_SYNCFREE, HK_FP64, &h[i], &nl));
        HK_ASSERT_OK(hk_vec_create(gpu, n, HK_FP64, &x[i]));
        HK_ASSERT_OK(gpu->tri_solve(h[i], b, x[i]));
        ref[i] = malloc(n * 8);
        HK_ASSERT_OK(hk_vec_download(x[i], ref[i]));
    }
    const unsigned backoff[4] = {0, 50, 400, 3000};
    for (int round = 0; round < 12; round++) {
        const int i = (round * 7 + round / 3) % 3;
        HK_ASSERT_OK(hk_cuda_tri_backoff(h[i], backoff[round % 4]));
        HK_ASSERT_OK(gpu->tri_solve(h[i], b, x[i]));
        if (round % 2) HK_ASSERT_OK(gpu->tri_solve(h[(i + 1) % 3], b, x[(i + 1) % 3]));
        HK_ASSERT_OK(hk_vec_download(x[i], got));
        CU_ASSERT(!memcmp(got, ref[i], n * 8));
    }
    for (int i = 0; i < 3; i++) {
        gpu->tri_destroy(h[i]);
        hk_vec_destroy(x[i]);
        hk_bmat_free(&G[i]);
        hk_csr_free(&F[i]);
        free(ref[i]);
    }
    hk_vec_destroy(b);
    free(hb), free(got);
    /* a handle of another method is refused by the schedule and back-off calls */
    CU_ASSERT_EQUAL(hk_cuda_tri_backoff(NULL, 1), HK_ERR_ARG);
    hk_error_clear();
}

/* b with NaN and infinity: the solve ends, with the CPU's NaN / infinity / finite pattern and
 * its finite values (a NaN result is stored as a NaN that is not the sentinel). */
static void test_cuda_nonfinite(void)
{
    const hk_backend *gpu = backend("cuda"), *cpu = backend("cpu");
    const int64_t n = 5000;
    for (int kind = 0; kind < NKIND; kind++)
        for (int upper = 0; upper < 2; upper++)
            for (int p = 0; p < 2; p++) {
                hk_csr F;
                gen_factor(n, kind, upper, 1, 70 + kind, &F);
                hk_bmat Fc = {0}, Fg = {0};
                HK_ASSERT_OK(hk_csr_upload(cpu, &F, &Fc));
                HK_ASSERT_OK(hk_csr_upload(gpu, &F, &Fg));
                double *hb = malloc(n * 8), *xc = malloc(n * 8), *xg = malloc(n * 8);
                rhs(n, hb);
                hb[upper ? n - 1 - 17 : 17] = NAN;
                hb[upper ? n / 3 : n - 1 - n / 3] = INFINITY;
                hb[n / 2] = -INFINITY;
                void *hc = NULL, *hg = NULL;
                int64_t l;
                HK_ASSERT_OK(cpu->tri_setup(&Fc, upper, 0, 0, (hk_precision)p, &hc, &l));
                HK_ASSERT_OK(
                    gpu->tri_setup(&Fg, upper, 0, HK_TRI_SYNCFREE, (hk_precision)p, &hg, &l));
                hk_vec *cb, *cx, *gb, *gx;
                HK_ASSERT_OK(hk_vec_create(cpu, n, (hk_precision)p, &cb));
                HK_ASSERT_OK(hk_vec_create(cpu, n, (hk_precision)p, &cx));
                HK_ASSERT_OK(hk_vec_create(gpu, n, (hk_precision)p, &gb));
                HK_ASSERT_OK(hk_vec_create(gpu, n, (hk_precision)p, &gx));
                HK_ASSERT_OK(hk_vec_upload(cb, hb));
                HK_ASSERT_OK(hk_vec_upload(gb, hb));
                HK_ASSERT_OK(cpu->tri_solve(hc, cb, cx));
                HK_ASSERT_OK(gpu->tri_solve(hg, gb, gx));
                HK_ASSERT_OK(gpu->sync()); /* returns: no row waited forever */
                HK_ASSERT_OK(hk_vec_download(cx, xc));
                HK_ASSERT_OK(hk_vec_download(gx, xg));
                const int same = same_classes(xg, xc, n);
                const double d = finite_reldiff(xg, xc, n);
                if (!same || !(d < (p ? 1e-5 : 1e-12)))
                    printf("\n    %s %s %s: classes %s, finite diff %g", kind_name[kind],
                           upper ? "upper" : "lower", p ? "fp32" : "fp64",
                           same ? "equal" : "differ", d);
                CU_ASSERT(same);
                CU_ASSERT(d < (p ? 1e-5 : 1e-12));
                /* the rows that depend on nothing non-finite stay finite */
                int64_t nfinite = 0;
                for (int64_t i = 0; i < n; i++)
                    nfinite += isfinite(xg[i]) != 0;
                CU_ASSERT(nfinite > 0);
                cpu->tri_destroy(hc);
                gpu->tri_destroy(hg);
                hk_vec_destroy(cb), hk_vec_destroy(cx), hk_vec_destroy(gb), hk_vec_destroy(gx);
                hk_bmat_free(&Fc), hk_bmat_free(&Fg);
                hk_csr_free(&F);
                free(hb), free(xc), free(xg);
            }
}

/* pc=ic0 / ilu0 applies with pc.tri=syncfree on cuda equal the CPU's (each ordering, fp64 and
 * fp32, bs 1-3); cg+ic0 and gmres+ilu0 iterations within one of the CPU's. */
static void test_cuda_pc_apply(void)
{
    const hk_backend *gpu = backend("cuda"), *cpu = backend("cpu");
    for (int mi = 0; mi < NFE; mi++) {
        hk_bcsr K;
        fe_matrix(mi, &K);
        const long n = (long)K.nbrows * K.bs;
        double *r = malloc(n * 8), *zc = malloc(n * 8), *zg = malloc(n * 8);
        rhs(n, r);
        for (int kind = HK_ORDER_NATURAL; kind <= HK_ORDER_COLOUR; kind++)
            for (int sym = 0; sym < 2; sym++)
                for (int p = 0; p < 2; p++) {
                    char o[96];
                    snprintf(o, sizeof o, "pc.tri=syncfree pc.ordering=%s",
                             hk_ordering_names[kind]);
                    const char *pc = sym ? "ic0" : "ilu0";
                    HK_ASSERT_OK(hk_test_apply_pc(cpu, (hk_precision)p, &K, pc, o, r, zc, NULL));
                    HK_ASSERT_OK(hk_test_apply_pc(gpu, (hk_precision)p, &K, pc, o, r, zg, NULL));
                    const double d = hk_test_reldiff(zg, zc, n);
                    if (!(d < (p ? 1e-4 : 1e-11)))
                        printf("\n    %s %s %s %s: %g", fe_name[mi], pc, o, p ? "fp32" : "fp64", d);
                    CU_ASSERT(d < (p ? 1e-4 : 1e-11));
                }
        free(r), free(zc), free(zg);
        hk_bcsr_free(&K);
    }
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(8, 7, 6, &K));
    for (int kind = HK_ORDER_NATURAL; kind <= HK_ORDER_COLOUR; kind++) {
        char o[128];
        snprintf(o, sizeof o, "method=cg pc=ic0 pc.tri=syncfree pc.ordering=%s",
                 hk_ordering_names[kind]);
        const int ic = hk_test_solve_iterations(&K, "cpu", o, NULL),
                  ig = hk_test_solve_iterations(&K, "cuda", o, NULL);
        printf("\n    %s: cpu %d cuda %d", o, ic, ig);
        CU_ASSERT(ic > 0 && abs(ic - ig) <= 1);
    }
    hk_bcsr_free(&K);
}

HK_DEVICE_SUITE(
    syncfree_cuda,
    {"every pc.tri vs cpu: generated factors of every shape, the schedule as the host's",
     test_cuda_generated},
    {"every pc.tri vs cpu: IC(0)/ILU(0) factors, bs 1-3, each ordering", test_cuda_fe_factors},
    {"sync-free handles in turn and every back-off: the same bytes", test_cuda_interleaved},
    {"sync-free: NaN and infinity in b end the solve with the cpu's pattern", test_cuda_nonfinite},
    {"pc=ic0/ilu0 with pc.tri=syncfree: applies and iterations as on the cpu", test_cuda_pc_apply})

/* ---- timings (device, printed) ---------------------------------------------------------- */

/* Seconds per call of one solve: the median of 5 batches, each at least ~10 ms. */
static double time_solve(const hk_backend *gpu, void *h, const hk_vec *b, hk_vec *x)
{
    double t0 = now();
    HK_ASSERT_OK(gpu->tri_solve(h, b, x));
    HK_ASSERT_OK(gpu->sync());
    const double est = now() - t0;
    int reps = est > 0 ? (int)(0.01 / est) : 100;
    if (reps < 1) reps = 1;
    if (reps > 500) reps = 500;
    double t[5];
    for (int k = 0; k < 5; k++) {
        t0 = now();
        for (int r = 0; r < reps; r++)
            gpu->tri_solve(h, b, x);
        HK_ASSERT_OK(gpu->sync());
        t[k] = (now() - t0) / reps;
    }
    for (int a = 1; a < 5; a++) /* median */
        for (int c = a; c > 0 && t[c - 1] > t[c]; c--) {
            const double s = t[c];
            t[c] = t[c - 1];
            t[c - 1] = s;
        }
    return t[2];
}

static void time_matrix(const char *name, const hk_bcsr *K)
{
    const hk_backend *gpu = backend("cuda");
    const int64_t n = K->nbrows * K->bs;
    double *hb = malloc(n * 8);
    rhs(n, hb);
    hk_vec *b, *x;
    HK_ASSERT_OK(hk_vec_create(gpu, n, HK_FP64, &b));
    HK_ASSERT_OK(hk_vec_create(gpu, n, HK_FP64, &x));
    HK_ASSERT_OK(hk_vec_upload(b, hb));
    static const int kinds[2] = {HK_ORDER_NATURAL, HK_ORDER_COLOUR};
    static const int methods[4] = {HK_TRI_SYNCFREE, HK_TRI_SYNCFREE_FLAGS, HK_TRI_CUSPARSE,
                                   HK_TRI_LEVELS};
    for (int sym = 1; sym >= 0; sym--)
        for (int o = 0; o < 2; o++) {
            hk_bmat F = {0}, U = {0};
            fe_factors(gpu, K, kinds[o], sym, &F, &U);
            double us[4][2] = {{0}};
            int64_t nl[2] = {0, 0};
            for (int mi = 0; mi < 4; mi++)
                for (int tri = 0; tri < 2; tri++) {
                    void *h = NULL;
                    const hk_bmat *T = tri && sym ? &U : &F;
                    HK_ASSERT_OK(
                        gpu->tri_setup(T, tri, !sym && !tri, methods[mi], HK_FP64, &h, &nl[tri]));
                    /* levels: one launch or block walk per level; skip the long chains */
                    us[mi][tri] = methods[mi] == HK_TRI_LEVELS && nl[tri] > 400
                                      ? NAN
                                      : 1e6 * time_solve(gpu, h, b, x);
                    gpu->tri_destroy(h);
                }
            for (int mi = 0; mi < 4; mi++)
                printf("\n| %s | %lld | %s | %s | %lld + %lld | %s | %.1f | %.1f | %.2f |", name,
                       (long long)n, sym ? "ic0" : "ilu0", hk_ordering_names[kinds[o]],
                       (long long)nl[0], (long long)nl[1], hk_tri_method_names[methods[mi]],
                       us[mi][0], us[mi][1], (us[2][0] + us[2][1]) / (us[mi][0] + us[mi][1]));
            /* the polling back-off of the syncfree solve, on the lower factor */
            if (sym) {
                void *h = NULL;
                int64_t l;
                HK_ASSERT_OK(gpu->tri_setup(&F, 0, 0, HK_TRI_SYNCFREE, HK_FP64, &h, &l));
                printf("\n|   back-off ns (L, us):");
                const unsigned ns[4] = {0, 100, 400, 1600};
                for (int i = 0; i < 4; i++) {
                    HK_ASSERT_OK(hk_cuda_tri_backoff(h, ns[i]));
                    printf(" %u: %.1f", ns[i], 1e6 * time_solve(gpu, h, b, x));
                }
                printf(" |");
                gpu->tri_destroy(h);
            }
            hk_bmat_free(&F);
            hk_bmat_free(&U);
        }
    hk_vec_destroy(b), hk_vec_destroy(x);
    free(hb);
}

/* The table of BENCHMARKS.md's sync-free row: L and U solve times (fp64, µs) per method, and
 * cuSPARSE's L + U time over each method's (above 1: faster than cuSPARSE). */
static void test_timing_table(void)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(backend("cuda"));
    printf("\n| matrix | DOFs | pc | ordering | levels L + U | pc.tri | L µs | U µs | "
           "cuSPARSE / this |");
    printf("\n|---|---:|---|---|---:|---|---:|---:|---:|");
    static const struct {
        const char *name, *set;
    } cases[2] = {{"bracket", NULL}, {"bracket 0.0015", "geometry.size=0.0015"}};
    for (int c = 0; c < 2; c++) {
        hk_case hc;
        hk_run r;
        memset(&r, 0, sizeof r);
        const char *sets[1] = {cases[c].set};
        HK_ASSERT_OK(hk_case_load(hk_test_path("cases/bracket/bracket.yaml"), cases[c].set ? 1 : 0,
                                  sets, &hc));
        hk_run_opts ro = {.quiet = 1};
        HK_ASSERT_OK(hk_run_assemble(&hc, &ro, &r));
        time_matrix(cases[c].name, &r.sys.K);
        hk_run_free(&r);
        hk_case_free(&hc);
    }
    const int sizes[2] = {30, 60};
    for (int s = 0; s < 2; s++) {
        hk_bcsr K;
        char name[32];
        HK_ASSERT_OK(hk_gen_elasticity3d(sizes[s], sizes[s], sizes[s], &K));
        snprintf(name, sizeof name, "elasticity3d:%d", sizes[s]);
        time_matrix(name, &K);
        hk_bcsr_free(&K);
    }
}

HK_DEVICE_SUITE(trisolve_timing_cuda,
                {"L and U solve times per pc.tri: bracket, 3D elasticity 30^3 and 60^3 (printed)",
                 test_timing_table})

#endif
