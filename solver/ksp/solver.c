/* hk_solver: the whole solve from options by name (PETSc KSPSetFromOptions style). It picks
 * the backend, converts K to the chosen format, sets up the preconditioner (fp32 for
 * precision=mixed, SBELL paper Algorithm 6), runs the Krylov method and recomputes the true
 * residual in fp64. Every option key is checked, so a typo is an error naming the key. */
#include <stdlib.h>
#include <string.h>

#include "../dist/dist_impl.h"
#include "ksp_impl.h"

#define HK_PATTERN_CHUNKS 64

struct hk_solver {
    const hk_backend_ops *be;
    hk_bmat K;          /* K on the backend, uploaded once; every set-up step starts here */
    hk_nearnull nn;     /* a copy of the caller's near-null space (arrays owned) */
    int have_nn;
    hk_mat *A, *A_low;
    hk_pc *pc;
    const hk_pc_type *pc_type; /* a distributed update's: pc's type while pc is being made */
    hk_ksp ksp, inner;
    hk_format fmt;
    int mixed;
    int64_t n;
    double setup_seconds;
    double setup_phase[5]; /* check, upload, format, pc, start (hk_result's setup_*_seconds) */
    double bnorm; /* of the current solve, for the printing monitor */
    hk_vec *b, *x, *r;
    hk_options *opts; /* a copy of the options: what update_values sets up anew */
    int defect;       /* method=defect: the preconditioner serves the fp32 inner solve */
    int broken;       /* an update_values failed half-way: no solve until destroyed */
    int setups;       /* preconditioner set-ups: 1 + updates + fallbacks */
    double update_seconds;
    double update_phase[4]; /* the last update: values in, check, operator, preconditioner */
    uint64_t pattern[HK_PATTERN_CHUNKS]; /* K's pattern, hashed per chunk of block rows */
    int pattern_known; /* pattern[] filled (a resident K: at the first update_values) */
    char note[192];                      /* hk_result.note of the solve under way */
    hk_dist *dist;      /* distributed solves: this process's rows and their layout; NULL */
};

/* An fp32 preconditioner with a fallback (pc=amg's default fp32 levels) must reduce the best
 * residual by HK_STALL_FACTOR within every HK_STALL_WINDOW iterations, else the solver
 * rebuilds it in fp64. An AMG-preconditioned CG gains about 2x per iteration; the window lets
 * slow but steady solves pass (nearly incompressible hex8 blocks: 1941 iterations to 1e-10,
 * 0.70 per window). */
#define HK_STALL_WINDOW 30
#define HK_STALL_FACTOR 0.8

static const char *const precisions[] = {"double", "mixed", NULL};
/* pipecg.variant, in the order of enum hk_pipecg_variant */
static const char *const pipecg_variants[] = {"auto", "paper", "fused", "gv", NULL};

#define HK_SOLVER_KEYS                                                                             \
    "backend, method, pc, format, precision, tol, atol, maxit, restart, history, monitor, "        \
    "check_every, graphs, stagnation, replace_every, inner.method, inner.tol, inner.maxit, format.slice, "        \
    "format.sigma, format.tpr, format.csr.kernel, format.pcsr.partition, format.pcsr.pad, "        \
    "format.pcsr.prefetch, ksp.s, ksp.basis, mpk.block, mpk.k, mpk.schedule, pipecg.variant, "        \
    "dist.comm, dist.layer"

/* The valid keys for the hint of hk_options_check_used: ours and every preconditioner's. */
static void valid_keys(char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "%s", HK_SOLVER_KEYS);
    for (int i = 0; hk_pc_types[i] && len < n; i++) {
        const char *opts = hk_pc_types[i]->options;
        if (!opts || !opts[0]) continue;
        /* options are space separated: list them comma separated */
        len += (size_t)snprintf(buf + len, n - len, ", ");
        for (const char *c = opts; *c && len + 3 < n; c++) {
            if (*c == ' ') {
                buf[len++] = ',';
                buf[len++] = ' ';
            } else {
                buf[len++] = *c;
            }
        }
        buf[len < n ? len : n - 1] = 0;
    }
}

static int list_methods(char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; hk_ksp_types[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", hk_ksp_types[i]->name);
    return 0;
}

static int list_pcs(char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; hk_pc_types[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", hk_pc_types[i]->name);
    return 0;
}

/* K must be square with a supported block size (structure only). */
static int check_shape(int have, int bs, int64_t nbrows, int64_t nbcols)
{
    HK_CHECK(have && bs >= 1 && bs <= 6, HK_ERR_ARG,
             "hk_solver_create: no matrix, or a block size outside 1..6");
    HK_CHECK(nbrows == nbcols, HK_ERR_ARG,
             "the solver needs a square matrix; this one has %lld x %lld block rows/columns",
             (long long)nbrows, (long long)nbcols);
    return 0;
}

/* The first non-finite entry of block row `first` (its column indices and values on the host),
 * named by scalar row and column. */
static int name_nonfinite(int bs, int64_t first, int64_t nblk, const int32_t *colind,
                          const double *val)
{
    for (int64_t p = 0; p < nblk; p++)
        for (int e = 0; e < bs * bs; e++) {
            double v = val[(size_t)p * bs * bs + e];
            HK_CHECK(isfinite(v), HK_ERR_NUMERIC,
                     "matrix entry at row %lld, column %lld is %g; the solver needs finite "
                     "values - check the assembly or the input file",
                     (long long)(first * bs + e / bs + 1), (long long)(colind[p] * bs + e % bs + 1),
                     v);
        }
    return hk_error_set(HK_ERR_INTERNAL, __FILE__, __LINE__,
                        "the backend found a non-finite value in block row %lld of K, but none "
                        "is there",
                        (long long)first);
}

/* K's values must be finite: checked where K lives (one pass of the backend's
 * bmat_first_nonfinite); the first bad entry is named from the caller's host copy of that
 * block row (K), or from that one row copied back (K NULL: the matrix never was on the host). */
static int report_nonfinite(const hk_bmat *Kd, const hk_bcsr *K, int64_t first);

static int check_values(const hk_bmat *Kd, const hk_bcsr *K)
{
    int64_t first = -1;
    HK_CHECK(Kd->be->bmat_first_nonfinite, HK_ERR_UNSUPPORTED,
             "backend %s cannot check the matrix values (no bmat_first_nonfinite op)",
             Kd->be->name);
    HK_CALL(Kd->be->bmat_first_nonfinite(Kd, &first));
    return report_nonfinite(Kd, K, first);
}

/* check_values' sentence for block row `first` of Kd (nothing when first < 0). */
static int report_nonfinite(const hk_bmat *Kd, const hk_bcsr *K, int64_t first)
{
    if (first < 0) return 0;
    const int bs = Kd->br;
    if (K)
        return name_nonfinite(bs, first, K->rowptr[first + 1] - K->rowptr[first],
                              K->colind + K->rowptr[first],
                              K->val + (size_t)K->rowptr[first] * bs * bs);
    int64_t rp[2];
    int32_t *ci = NULL;
    double *v = NULL;
    int ierr;
    HK_CALL(Kd->be->copy_from(rp, Kd->rowptr + first, sizeof rp));
    const int64_t nblk = rp[1] - rp[0];
    HK_TRY(hk_malloc((size_t)nblk * sizeof *ci + 1, &ci));
    HK_TRY(hk_malloc((size_t)nblk * bs * bs * sizeof *v + 1, &v));
    if (nblk) {
        HK_TRY(Kd->be->copy_from(ci, Kd->colind + rp[0], (size_t)nblk * sizeof *ci));
        HK_TRY(Kd->be->copy_from(v, Kd->val + (size_t)rp[0] * bs * bs,
                                 (size_t)nblk * bs * bs * sizeof *v));
    }
    ierr = name_nonfinite(bs, first, nblk, ci, v);
fail:
    free(ci);
    free(v);
    return ierr;
}

/* A fingerprint of K's pattern (row lengths and block columns) per chunk of block rows, so
 * that update_values can tell a changed pattern without a copy of it: 64-bit FNV-1a in four
 * interleaved lanes (independent multiplies), chunks in parallel. */
static void pattern_fingerprint(const hk_bcsr *K, uint64_t *h)
{
    const uint64_t prime = 0x100000001b3u;
#pragma omp parallel for schedule(dynamic, 1)
    for (int c = 0; c < HK_PATTERN_CHUNKS; c++) {
        const int64_t r0 = K->nbrows * c / HK_PATTERN_CHUNKS;
        const int64_t r1 = K->nbrows * (c + 1) / HK_PATTERN_CHUNKS;
        uint64_t x[4] = {0xcbf29ce484222325u, 1, 2, 3};
        for (int64_t i = r0; i < r1; i++)
            x[0] = (x[0] ^ (uint64_t)(K->rowptr[i + 1] - K->rowptr[i])) * prime;
        const int64_t q0 = K->rowptr[r0], q1 = K->rowptr[r1];
        int64_t q = q0;
        for (; q + 4 <= q1; q += 4)
            for (int l = 0; l < 4; l++)
                x[l] = (x[l] ^ (uint32_t)K->colind[q + l]) * prime;
        for (; q < q1; q++)
            x[0] = (x[0] ^ (uint32_t)K->colind[q]) * prime;
        h[c] = ((x[0] * prime ^ x[1]) * prime ^ x[2]) * prime ^ x[3];
    }
}

static void print_monitor(int it, double rnorm, void *ctx)
{
    const hk_solver *s = ctx;
    printf("  %6d  |r| %.6e  |r|/|b| %.6e\n", it, rnorm, s->bnorm > 0 ? rnorm / s->bnorm : rnorm);
    fflush(stdout);
}

/* Keep a private copy of the caller's near-null space, checked against K's size (nbrows block
 * rows of bs); rbe: the backend of a resident K (NULL: K on the host), the only place
 * coordinates in a backend's memory may be (copied there, on that backend). */
static int copy_nearnull(int64_t nbrows, int bs, const hk_nearnull *nn, const hk_backend_ops *rbe,
                         hk_solver *s)
{
    if (!nn || (!nn->coords && !nn->vectors)) return 0;
    const int64_t n = nbrows * bs;
    if (nn->coords) {
        HK_CHECK(nn->dim == 2 || nn->dim == 3, HK_ERR_ARG,
                 "near-null space: coordinates must have dimension 2 or 3 (got %d)", nn->dim);
        HK_CHECK(bs == nn->dim, HK_ERR_ARG,
                 "near-null space: %dD node coordinates need a block size of %d, but the "
                 "matrix has block size %d; pass --block-size %d (or vectors instead)",
                 nn->dim, nn->dim, bs, nn->dim);
        const int64_t len = nbrows * nn->dim;
        double *c = NULL;
        if (nn->coords_be) { /* finiteness is checked where the modes are built (pc=amg) */
            HK_CHECK(nn->coords_be == rbe, HK_ERR_ARG,
                     "near-null space: the coordinates are in %s memory but the matrix is %s%s; "
                     "give coordinates in the matrix's memory (or on the host)",
                     nn->coords_be->name, rbe ? "in the memory of " : "on the host",
                     rbe ? rbe->name : "");
            HK_CALL(rbe->alloc((void **)&c, (size_t)(len ? len : 1) * sizeof *c));
            s->nn.dim = nn->dim;
            s->nn.coords = c; /* freed with the solver, on its backend */
            s->nn.coords_be = rbe;
            if (len) HK_CALL(rbe->copy(c, nn->coords, (size_t)len * sizeof *c));
            s->have_nn = 1;
            return 0;
        }
        HK_CALL(hk_malloc((size_t)len * sizeof *c, &c));
        s->nn.dim = nn->dim;
        s->nn.coords = c; /* freed with the solver, also on the error below */
        /* copied and checked in one pass by all threads: the copy's cost is mostly the first
         * touch of its fresh pages (about 15 ms for 20 MB on one thread) */
        int64_t bad = len;
#pragma omp parallel for schedule(static) reduction(min : bad)
        for (int64_t i = 0; i < len; i++) {
            c[i] = nn->coords[i];
            if (!isfinite(c[i]) && i < bad) bad = i;
        }
        HK_CHECK(bad == len, HK_ERR_ARG,
                 "near-null space: coordinate %lld of node %lld is not finite",
                 (long long)(bad % nn->dim + 1), (long long)(bad / nn->dim + 1));
    } else {
        HK_CHECK(nn->nvec >= 1 && nn->nvec <= 16, HK_ERR_ARG,
                 "near-null space: %d vectors given; give 1 to 16", nn->nvec);
        const int64_t len = n * nn->nvec;
        double *v = NULL;
        HK_CALL(hk_malloc((size_t)len * sizeof *v, &v));
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < len; i++)
            v[i] = nn->vectors[i];
        s->nn.nvec = nn->nvec;
        s->nn.vectors = v;
    }
    s->have_nn = 1;
    return 0;
}

/* A process's rows of a distributed K: a supported block size, global columns. */
static int check_dist_matrix(const hk_bcsr *K)
{
    HK_CHECK(K && K->rowptr && K->bs >= 1 && K->bs <= 3, HK_ERR_ARG,
             "hk_solver_create_dist: no matrix, or block size not 1, 2 or 3");
    HK_CHECK(K->nbcols >= K->nbrows, HK_ERR_ARG,
             "hk_solver_create_dist: a process's %lld block rows need the %lld global block "
             "columns as nbcols",
             (long long)K->nbrows, (long long)K->nbcols);
    return 0;
}

static int create(const hk_comm *c, int64_t row0, const hk_bcsr *K, hk_resident_bcsr *R,
                  const hk_backend_ops *vbe, const double *vval, const hk_dist_part_rows *P,
                  const hk_nearnull *nn, hk_options *o_in, hk_solver **out);

/* dist.layer: where the distributed layer runs. auto: on several processes only; always: on
 * one process too (no messages), which measures what the layer costs beside the one-process
 * solver and tests it without mpirun. */
static const char *const dist_layers[] = {"auto", "always", NULL};

/* Whether a distributed entry takes the distributed layer: several processes, or one with
 * dist.layer=always (a bad value is refused where create reads it). */
static int take_layer(const hk_comm *c, hk_options *o)
{
    if (hk_comm_size(c) > 1) return 1;
    int layer = 0;
    if (o && hk_options_get_choice(o, "dist.layer", dist_layers, &layer)) {
        hk_error_clear();
        return 1; /* create refuses it by name */
    }
    return layer == 1;
}

int hk_solver_create(const hk_bcsr *K, hk_options *o_in, hk_solver **out)
{
    return hk_solver_create_nearnull(K, NULL, o_in, out);
}

int hk_solver_create_dist(const hk_comm *c, int64_t row0, const hk_bcsr *K, const hk_nearnull *nn,
                          hk_options *o, hk_solver **out)
{
    if (take_layer(c, o)) return create(c, row0, K, NULL, NULL, NULL, NULL, nn, o, out);
    *out = NULL;
    HK_CHECK(row0 == 0, HK_ERR_ARG,
             "hk_solver_create_dist: one process owns every row, from 0 (row0 is %lld)",
             (long long)row0);
    return hk_solver_create_nearnull(K, nn, o, out);
}

int hk_solver_create_dist_resident(const hk_comm *c, int64_t row0, const hk_bcsr *K,
                                   const hk_backend *be, const double *val, const hk_nearnull *nn,
                                   hk_options *o, hk_solver **out)
{
    HK_CHECK(out, HK_ERR_ARG, "hk_solver_create_dist_resident: no solver pointer");
    *out = NULL;
    if (take_layer(c, o)) {
        /* no values where there are blocks: create refuses it with the others (agreed), as it
         * refuses a bad K; no collective of its own here, so that a process taking
         * hk_solver_create_dist meanwhile makes the same calls */
        static const double none = 0;
        const int given = be && (val || !K || !K->rowptr || !K->rowptr[K->nbrows]);
        return create(c, row0, K, NULL, given ? be : NULL, given && val ? val : &none, NULL, nn, o,
                      out);
    }
    HK_CHECK(be && (val || !K || !K->rowptr || !K->rowptr[K->nbrows]), HK_ERR_ARG,
             "hk_solver_create_dist_resident: no backend or values");
    /* one process: the values to the host, for the one-process set-up */
    HK_CALL(check_dist_matrix(K));
    const int64_t n = K->rowptr[K->nbrows] * K->bs * K->bs;
    hk_bcsr H = *K;
    HK_CALL(hk_malloc((size_t)(n + 1) * sizeof *H.val, &H.val));
    int ierr = n ? be->copy_from(H.val, val, (size_t)n * sizeof *H.val) : 0;
    if (!ierr) ierr = hk_solver_create_dist(c, row0, &H, nn, o, out);
    free(H.val);
    return ierr;
}

int hk_solver_create_dist_device(const hk_comm *c, int64_t row0, int64_t nglobal,
                                 const hk_resident_bcsr *A, int64_t nown, const int64_t *ghost_gid,
                                 int64_t nghost, const hk_nearnull *nn, hk_options *o,
                                 hk_solver **out)
{
    HK_CHECK(out, HK_ERR_ARG, "hk_solver_create_dist_device: no solver pointer");
    *out = NULL;
    const int ok = A && A->be && A->rowptr && A->bs >= 1 && A->bs <= 3 && nown >= 0 &&
                   nown <= A->nbrows && nghost >= 0 && nglobal >= nown &&
                   (nghost == 0 || ghost_gid);
    const char *bad = "hk_solver_create_dist_device: no rows in a backend's memory, or sizes that "
                      "do not fit (block size 1 to 3, nown <= the rows, nglobal >= nown, ghost "
                      "ids given)";
    if (take_layer(c, o)) {
        /* a bad A is refused with the others: this agreement meets create's first one */
        if (!ok) return hk_comm_agree(c, hk_error_set(HK_ERR_ARG, __FILE__, __LINE__, "%s", bad));
        static const double none = 0;
        const hk_bcsr H = {A->bs, nown, nglobal, NULL, NULL, NULL};
        const hk_dist_part_rows P = {A->bs,     row0,      nown,   nglobal, nghost,
                                     A->rowptr, A->colind, A->val ? A->val : &none, ghost_gid};
        return create(c, row0, &H, NULL, A->be, P.val, &P, nn, o, out);
    }
    HK_CHECK(ok, HK_ERR_ARG, "%s", bad);
    /* one process: the rows to the host with global columns, for the one-process set-up */
    hk_bcsr H = {A->bs, nown, nglobal, NULL, NULL, NULL};
    int ierr = 0;
    int32_t *local = NULL;
    HK_TRY(hk_malloc((size_t)(nown + 1) * sizeof *H.rowptr, &H.rowptr));
    HK_TRY(A->be->copy_from(H.rowptr, A->rowptr, (size_t)(nown + 1) * sizeof *H.rowptr));
    const int64_t nnzb = H.rowptr[nown], bb = (int64_t)A->bs * A->bs;
    HK_TRY(hk_malloc((size_t)(nnzb + 1) * sizeof *local, &local));
    HK_TRY(hk_malloc((size_t)(nnzb + 1) * sizeof *H.colind, &H.colind));
    HK_TRY(hk_malloc((size_t)(nnzb * bb + 1) * sizeof *H.val, &H.val));
    if (nnzb) HK_TRY(A->be->copy_from(local, A->colind, (size_t)nnzb * sizeof *local));
    if (nnzb) HK_TRY(A->be->copy_from(H.val, A->val, (size_t)(nnzb * bb) * sizeof *H.val));
    HK_TRY(
        hk_backend_cpu.dist_global_columns(local, nnzb, row0, nown, ghost_gid, nghost, H.colind));
    ierr = hk_solver_create_dist(c, row0, &H, nn, o, out);
fail:
    free(local);
    hk_bcsr_free(&H);
    return ierr;
}

/* hk_solver_create_nearnull from a host matrix K, or from one in a backend's memory R (K
 * NULL), whose arrays become the solver's K at once. c: the processes of a distributed solve
 * (NULL: one process; K on the host then); the status of each stage is agreed by all, so that
 * they stop together. */
static int create(const hk_comm *c, int64_t row0, const hk_bcsr *K, hk_resident_bcsr *R,
                  const hk_backend_ops *vbe, const double *vval, const hk_dist_part_rows *P,
                  const hk_nearnull *nn, hk_options *o_in, hk_solver **out)
{
    int ierr, agreed = 0; /* agreed: a failure every process knows (no agreement left to pair) */
    hk_solver *s = NULL;
    hk_options *own = NULL, *o = o_in;
    const double t0 = hk_time();
    char buf[4096], hint[512];
    *out = NULL;
    if (c)
        HK_CALL(hk_comm_agree(
            c, vval && !vbe ? hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                                           "hk_solver_create_dist_resident: no backend or values")
               : P          ? 0
                            : check_dist_matrix(K)));
    const int bs = K ? K->bs : R->bs;
    const int64_t nbrows = K ? K->nbrows : R->nbrows;
    if (!c)
        HK_TRY(check_shape(K ? K->rowptr != NULL : R->be && R->rowptr, bs, nbrows,
                           K ? K->nbcols : R->nbcols));
    double t_phase = hk_time();
    if (!o) {
        HK_TRY(hk_options_create(&own));
        o = own;
    }
    HK_TRY(hk_calloc(1, sizeof *s, &s));
    if (R) { /* adopted: freed with the solver from here on */
        const hk_bmat A = {R->be, bs, bs, nbrows, R->nbcols, R->nnzb, R->rowptr, R->colind, R->val};
        s->K = A;
        R->rowptr = NULL, R->colind = NULL, R->val = NULL;
    }
    s->n = nbrows * bs;
    /* coordinates may be where the matrix is: a resident one's, or a distributed one's values'
     * backend (a part assembled on its device; pc=amg makes the modes there) */
    HK_TRY(copy_nearnull(nbrows, bs, nn, R ? R->be : c ? vbe : NULL, s));

    /* ---- options ---- */
    const char *backend = "auto", *method = "cg", *pcname = "jacobi", *fmtname = NULL;
    const char *inner_method = "cg";
    int prec = 0, maxit = 10000, restart = 30, history = 0, monitor = 0, check_every = 1;
    int stagnation = HK_KSP_STAG_WINDOW, graphs = 1, replace_every = 0;
    int inner_maxit = 1000;
    double tol = 1e-8, atol = 0, inner_tol = 1e-4;
    HK_TRY(hk_options_get_string(o, "backend", &backend));
    HK_TRY(hk_options_get_string(o, "method", &method));
    HK_TRY(hk_options_get_string(o, "pc", &pcname));
    HK_TRY(hk_options_get_string(o, "format", &fmtname));
    HK_TRY(hk_options_get_choice(o, "precision", precisions, &prec));
    HK_TRY(hk_options_get_double(o, "tol", &tol));
    HK_TRY(hk_options_get_double(o, "atol", &atol));
    HK_TRY(hk_options_get_int(o, "maxit", &maxit));
    HK_TRY(hk_options_get_int(o, "restart", &restart));
    HK_TRY(hk_options_get_int(o, "history", &history));
    HK_TRY(hk_options_get_int(o, "monitor", &monitor));
    /* check_every default: 1, except for the pipelined methods on a GPU: their scalars stay
     * on the device, and every check is a device-to-host round trip that costs more than an
     * iteration of a small system, so they test every 10th (set below once the backend is
     * known). The classical methods read their scalars every iteration anyway. */
    const int check_every_given = hk_options_has(o, "check_every");
    HK_TRY(hk_options_get_int(o, "check_every", &check_every));
    HK_TRY(hk_options_get_int(o, "stagnation", &stagnation));
    HK_TRY(hk_options_get_int(o, "graphs", &graphs));
    HK_TRY(hk_options_get_int(o, "replace_every", &replace_every));
    /* read on one process too (it has nothing to exchange), so a case file serves both */
    int dist_comm = HK_DIST_COMM_AUTO;
    HK_TRY(hk_options_get_choice(o, "dist.comm", hk_dist_comm_names, &dist_comm));
    int dist_layer = 0;
    HK_TRY(hk_options_get_choice(o, "dist.layer", dist_layers, &dist_layer));
    if (pcname && !strcmp(pcname, "amg")) { /* likewise; the distributed pc=amg uses it */
        int gather_rows = 0;
        HK_TRY(hk_options_get_int(o, "pc.amg.dist.gather_rows", &gather_rows));
        HK_TRY_CHECK(gather_rows >= 0, HK_ERR_OPTION,
                     "option pc.amg.dist.gather_rows=%d is out of range; use 0 (only the "
                     "coarsest level on every process) or more (default 50000 scalar rows)",
                     gather_rows);
    }
    const hk_ksp_type *kt = hk_ksp_type_find(method);
    if (!kt) {
        list_methods(buf, sizeof buf);
        hk_options_suggest(method, buf, hint, sizeof hint);
        HK_TRY_CHECK(0, HK_ERR_OPTION, "unknown method=%s; %s%svalid methods are %s", method, hint,
                     *hint ? " " : "", buf);
    }
    const int defect = kt == &hk_ksp_defect;
    /* a direct method has no preconditioner: an explicit one would be silently unused */
    const int direct = kt == &hk_ksp_cholesky;
    if (direct) {
        HK_TRY_CHECK(!strcmp(pcname, "none") || !hk_options_has(o, "pc"), HK_ERR_UNSUPPORTED,
                     "option pc=%s has no use with method=cholesky (a direct solver); remove it "
                     "or choose an iterative method",
                     pcname);
        HK_TRY_CHECK(prec == 0, HK_ERR_UNSUPPORTED,
                     "option precision=mixed has no use with method=cholesky (the factor is "
                     "fp64); remove it");
        pcname = "none";
    }
    const hk_ksp_type *it_type = NULL;
    if (defect) {
        HK_TRY(hk_options_get_string(o, "inner.method", &inner_method));
        HK_TRY(hk_options_get_double(o, "inner.tol", &inner_tol));
        HK_TRY(hk_options_get_int(o, "inner.maxit", &inner_maxit));
        it_type = hk_ksp_type_find(inner_method);
        /* every form of pipecg runs its fused ops in fp64 too (the Ghysels-Vanroose step
         * included: it used to be accepted here and failed in its first step) */
        HK_TRY_CHECK(it_type != &hk_ksp_pipebicgstab && it_type != &hk_ksp_pipegmres &&
                         it_type != &hk_ksp_scg && it_type != &hk_ksp_pipecg,
                     HK_ERR_UNSUPPORTED,
                     "option inner.method=%s: its fused ops run in fp64 and the inner solve of "
                     "defect is fp32; use cg, cgcg, bicgstab or gmres",
                     inner_method);
        if (!it_type || it_type == &hk_ksp_defect) {
            list_methods(buf, sizeof buf);
            HK_TRY_CHECK(0, HK_ERR_OPTION,
                         "option inner.method=%s is not a valid inner method; use one of %s "
                         "(not defect)",
                         inner_method, buf);
        }
        HK_TRY_CHECK(inner_tol > 0 && inner_tol < 1, HK_ERR_OPTION,
                     "option inner.tol=%g must be in (0, 1) (default 1e-4)", inner_tol);
        HK_TRY_CHECK(inner_maxit >= 1, HK_ERR_OPTION,
                     "option inner.maxit=%d must be at least 1 (default 1000)", inner_maxit);
    }
    const hk_pc_type *pt = hk_pc_type_find(pcname);
    if (!pt) {
        list_pcs(buf, sizeof buf);
        hk_options_suggest(pcname, buf, hint, sizeof hint);
        HK_TRY_CHECK(0, HK_ERR_OPTION, "unknown preconditioner pc=%s; %s%svalid ones are %s",
                     pcname, hint, *hint ? " " : "", buf);
    }
    HK_TRY_CHECK(tol >= 0 && tol < 1, HK_ERR_OPTION,
                 "option tol=%g must be in [0, 1) (relative residual; default 1e-8)", tol);
    HK_TRY_CHECK(atol >= 0, HK_ERR_OPTION, "option atol=%g must be >= 0 (default 0)", atol);
    HK_TRY_CHECK(tol > 0 || atol > 0, HK_ERR_OPTION,
                 "tol=0 and atol=0 can never be met; set tol (default 1e-8) or atol");
    HK_TRY_CHECK(maxit >= 1, HK_ERR_OPTION, "option maxit=%d must be at least 1 (default 10000)",
                 maxit);
    HK_TRY_CHECK(restart >= 1 && restart <= 1000, HK_ERR_OPTION,
                 "option restart=%d must be in 1..1000 (default 30)", restart);
    HK_TRY_CHECK(check_every >= 1, HK_ERR_OPTION,
                 "option check_every=%d must be at least 1 (default 1)", check_every);
    HK_TRY_CHECK(stagnation >= 0, HK_ERR_OPTION,
                 "option stagnation=%d must be 0 (off) or a number of iterations (default %d)",
                 stagnation, HK_KSP_STAG_WINDOW);
    HK_TRY_CHECK(replace_every >= -1, HK_ERR_OPTION,
                 "option replace_every=%d must be 0 (replace the residual when the drift "
                 "estimate says so), N > 0 (every N iterations) or -1 (never)",
                 replace_every);
    /* pipecg.variant belongs to pipecg: read only there, so elsewhere it is an unused key and
     * refused by name */
    int pipecg_variant = HK_PIPECG_AUTO;
    if (kt == &hk_ksp_pipecg)
        HK_TRY(hk_options_get_choice(o, "pipecg.variant", pipecg_variants, &pipecg_variant));
    const hk_ksp_type *sym_type = defect ? it_type : kt;
    if (sym_type->needs_symmetric && !pt->symmetric && pt->symmetric_variant)
        pt = pt->symmetric_variant;
    HK_TRY_CHECK(!sym_type->needs_symmetric || pt->symmetric || sym_type->flexible,
                 HK_ERR_UNSUPPORTED,
                 "method=%s needs a symmetric positive definite preconditioner and pc=%s is not "
                 "symmetric; use method=fcg, gmres, fgmres or bicgstab with it",
                 sym_type->name, pt->name);
    if (c) HK_TRY(hk_dist_check_choice(kt->name, pt->name));

    /* ---- backend, matrix, preconditioner ---- */
    /* the values in a backend's memory (R's, or a distributed K's vval): solved there */
    const hk_backend_ops *held = R ? R->be : vval ? vbe : NULL;
    if (held && !strcmp(backend, "auto"))
        s->be = held;
    else
        HK_TRY(hk_backend_get(backend, &s->be));
    HK_TRY_CHECK(!held || s->be == held, HK_ERR_OPTION,
                 "option backend=%s: the matrix is in the memory of backend %s; solve there "
                 "(backend=%s or auto)",
                 backend, held ? held->name : "", held ? held->name : "");
    const hk_bcsr *Kb = K; /* what goes to the backend: K, or the owned block of its rows */
    if (c) {
        /* a process that failed above (an option, its backend's start) fails here with the
         * others, before the layout's collectives */
        if ((ierr = hk_comm_agree(c, 0))) {
            agreed = 1;
            goto fail;
        }
        /* the process's rows laid out and the distributed table (its SpMV, its sums) */
        ierr = P ? hk_dist_create_device(c, s->be, P, dist_comm, &s->dist)
                 : hk_dist_create_values(c, s->be, row0, K, vval, dist_comm, &s->dist);
        if (ierr) { /* agreed inside */
            agreed = 1;
            goto fail;
        }
        hk_dist_ops_init(s->dist);
        s->be = &s->dist->ops;
        /* K: the layout's owned block on the backend (a view, the layout's), its values
         * checked there */
        Kb = NULL;
        s->K = s->dist->Koo_d;
        s->K.be = s->be;
    }
    if (!check_every_given && kt->pipelined && strcmp(s->be->name, "cpu") != 0) check_every = 10;
    /* auto: the backend chooses per matrix (on a GPU by the matrix's size against its L2,
     * on the CPU csr for scalar, bsr for block matrices) */
    s->fmt = HK_FMT_AUTO;
    if (fmtname) HK_TRY(hk_format_from_name(fmtname, &s->fmt));
    /* the sliced format's own options without a format ask for it (the default was sbell on a
     * GPU, and `format: {slice: 64}` in a case file meant sbell with 64-row slices) */
    if (!fmtname && (hk_options_has(o, "format.slice") || hk_options_has(o, "format.sigma")))
        s->fmt = HK_FMT_SBELL;
    /* K goes to the backend once; formats and preconditioners are built there from it */
    /* options, the near-null space's copy, and the backend's start on first use */
    s->setup_phase[4] = hk_time() - t0;
    t_phase = hk_time();
    if (Kb) HK_TRY(hk_bmat_upload(s->be, Kb, &s->K));
    HK_TRY(s->be->sync());
    s->setup_phase[1] = hk_time() - t_phase;
    t_phase = hk_time();
    if (!c) HK_TRY(check_values(&s->K, Kb));
    /* the pattern update_values compares new rows with (a part's rows: the layout keeps
     * their pattern where it lies) */
    if (K && !P) pattern_fingerprint(K, s->pattern), s->pattern_known = 1;
    s->setup_phase[0] = hk_time() - t_phase;
    t_phase = hk_time();
    HK_TRY(hk_mat_create_bmat(&s->K, s->fmt, HK_FP64, o, &s->A));
    /* mixed: fp32 preconditioner; pc=none has nothing to store, so it stays an exact copy
     * (except under defect, whose inner vectors are fp32 anyway) */
    s->mixed = (prec == 1 && strcmp(pt->name, "none") != 0) || defect;
    if (defect) HK_TRY(hk_mat_create_bmat(&s->K, s->fmt, HK_FP32, o, &s->A_low));
    HK_TRY(s->be->sync());
    s->setup_phase[2] = hk_time() - t_phase;
    /* the preconditioner's set-up may sum over the processes (poly's bounds): a process that
     * failed above stops here with the others */
    if (c && (ierr = hk_comm_agree(c, 0))) {
        agreed = 1;
        goto fail;
    }
    ierr = hk_pc_create(pt, s->be, s->mixed ? HK_FP32 : HK_FP64, &s->K,
                        defect ? s->A_low : s->A, s->have_nn ? &s->nn : NULL, o, &s->pc);
    if (c) ierr = hk_comm_agree(c, ierr), agreed = ierr != 0;
    if (ierr) goto fail;
    HK_TRY(hk_vec_create(s->be, s->n, HK_FP64, &s->b));
    HK_TRY(hk_vec_create(s->be, s->n, HK_FP64, &s->x));
    HK_TRY(hk_vec_create(s->be, s->n, HK_FP64, &s->r));

    if (kt == &hk_ksp_scg) HK_TRY(hk_scg_options(&s->ksp, o));
    valid_keys(buf, sizeof buf);
    HK_TRY(hk_options_check_used(o, buf));
    HK_TRY(hk_options_copy(o, &s->opts));
    s->defect = defect;
    s->setups = 1;
    /* the factor is computed on the host from the caller's K (or a copy), whatever the
     * backend */
    if (direct && K) HK_TRY(hk_cholesky_factor(&s->ksp, K));
    if (direct && !K) {
        hk_bcsr Kh;
        HK_TRY(hk_bmat_to_bcsr(&s->K, &Kh));
        ierr = hk_cholesky_factor(&s->ksp, &Kh);
        hk_bcsr_free(&Kh);
        if (ierr) goto fail;
    }

    /* ---- the Krylov objects ---- */
    hk_ksp *k = &s->ksp;
    k->type = kt;
    k->be = s->be;
    k->A = s->A;
    k->A_low = s->A_low;
    k->K = &s->K;
    k->pc = s->pc;
    k->rtol = tol;
    k->atol = atol;
    k->maxit = maxit;
    k->restart = restart;
    k->check_every = check_every;
    k->stag_window = stagnation;
    k->graphs = graphs != 0;
    k->replace_every = replace_every;
    k->pipecg_variant = pipecg_variant;
    k->keep_history = history != 0;
    if (monitor) {
        k->monitor = print_monitor;
        k->monitor_ctx = s;
    }
    if (defect) {
        hk_ksp *in = &s->inner;
        in->type = it_type;
        in->be = s->be;
        in->A = s->A_low;
        in->pc = s->pc;
        in->rtol = inner_tol;
        in->atol = 0;
        in->maxit = inner_maxit;
        in->restart = restart;
        in->check_every = check_every;
        in->stag_window = stagnation;
        in->graphs = graphs != 0;
        in->replace_every = replace_every;
        k->inner = in;
    }
    if (k->sstep) HK_TRY(hk_scg_setup(k));
    HK_TRY(s->be->sync());
    /* the solve's first sums: every process starts it, or none */
    if (c && (ierr = hk_comm_agree(c, 0))) {
        agreed = 1;
        goto fail;
    }
    s->setup_seconds = hk_time() - t0;
    /* the rest (options, the preconditioner, vectors, a direct factor, the Krylov objects) */
    s->setup_phase[3] = s->setup_seconds - s->setup_phase[0] - s->setup_phase[1] -
                        s->setup_phase[2] - s->setup_phase[4];
    hk_options_destroy(own);
    *out = s;
    return 0;
fail:
    /* distributed: a failure of this process alone meets the agreement the others reach next
     * (each stage with collectives ends with one); one every process knows is not agreed again */
    if (c && !agreed) ierr = hk_comm_agree(c, ierr);
    hk_options_destroy(own);
    hk_solver_destroy(s);
    if (R && R->be) { /* what was not adopted yet; the sizes stay */
        R->be->dealloc(R->rowptr);
        R->be->dealloc(R->colind);
        R->be->dealloc(R->val);
        R->rowptr = NULL, R->colind = NULL, R->val = NULL;
    }
    return ierr;
}

int hk_solver_create_nearnull(const hk_bcsr *K, const hk_nearnull *nn, hk_options *o, hk_solver **s)
{
    HK_CHECK(K, HK_ERR_ARG, "hk_solver_create: no matrix, or block size not 1, 2 or 3");
    return create(NULL, 0, K, NULL, NULL, NULL, NULL, nn, o, s);
}

int hk_solver_create_resident(hk_resident_bcsr *A, const hk_nearnull *nn, hk_options *o,
                              hk_solver **s)
{
    HK_CHECK(A && s, HK_ERR_ARG, "hk_solver_create_resident: no matrix or no solver pointer");
    return create(NULL, 0, NULL, A, NULL, NULL, NULL, nn, o, s);
}

hk_pc *hk_solver_get_pc(hk_solver *s)
{
    return s->pc;
}

void hk_solver_update_phases(const hk_solver *s, double phases[4])
{
    for (int i = 0; i < 4; i++)
        phases[i] = s->update_phase[i];
}

hk_mat *hk_solver_get_mat(hk_solver *s)
{
    return s->A;
}

void hk_solver_destroy(hk_solver *s)
{
    if (!s) return;
    hk_vec_destroy(s->b);
    hk_vec_destroy(s->x);
    hk_vec_destroy(s->r);
    hk_pc_destroy(s->pc);
    hk_mat_destroy(s->A_low);
    hk_mat_destroy(s->A);
    if (!s->dist) hk_bmat_free(&s->K); /* else the layout's (freed with it) */
    hk_options_destroy(s->opts);
    if (s->nn.coords_be)
        s->nn.coords_be->dealloc((void *)s->nn.coords);
    else
        free((void *)s->nn.coords);
    free((void *)s->nn.vectors);
    free(s->ksp.history);
    free(s->inner.history);
    hk_cholesky_free(&s->ksp);
    hk_scg_free(&s->ksp);
    hk_ksp_pool_free(&s->ksp);
    hk_ksp_pool_free(&s->inner);
    hk_dist_destroy(s->dist); /* last: the objects above live on its table */
    free(s);
}

/* Beyond this the squares in ||b||^2 overflow, and the method stops at once with NaN. */
#define HK_HUGE_RHS 1e150

/* One pass over v on the threads: its first non-finite entry, its first entry above
 * HK_HUGE_RHS in magnitude (0-based, -1: none) and whether every entry is +0.0 (the same
 * answers on any number of threads: first indices by min). */
static void scan_vec(const double *v, int64_t n, int64_t *nonfinite, int64_t *huge, int *zero)
{
    int64_t nf = INT64_MAX, hg = INT64_MAX;
    int z = 1;
#pragma omp parallel for schedule(static) reduction(min : nf, hg) reduction(&& : z)
    for (int64_t i = 0; i < n; i++) {
        const double a = v[i];
        if (!isfinite(a) && i < nf) nf = i;
        if (fabs(a) > HK_HUGE_RHS && i < hg) hg = i;
        z = z && a == 0.0 && !signbit(a); /* +0.0 only: what vec_set writes */
    }
    *nonfinite = nf == INT64_MAX ? -1 : nf;
    *huge = hg == INT64_MAX ? -1 : hg;
    *zero = z;
}

/* The fingerprint of a K that was never on the host (hk_solver_create_resident): its pattern
 * read back once, at the first update of its values. */
static int resident_fingerprint(hk_solver *s)
{
    int ierr = 0;
    const hk_bmat *A = &s->K;
    hk_bcsr P = {A->br, A->nbrows, A->nbcols, NULL, NULL, NULL};
    HK_TRY(hk_malloc((size_t)(A->nbrows + 1) * sizeof *P.rowptr, &P.rowptr));
    HK_TRY(hk_malloc((size_t)A->nnzb * sizeof *P.colind + 1, &P.colind));
    HK_TRY(A->be->copy_from(P.rowptr, A->rowptr, (size_t)(A->nbrows + 1) * sizeof *P.rowptr));
    if (A->nnzb) HK_TRY(A->be->copy_from(P.colind, A->colind, (size_t)A->nnzb * sizeof *P.colind));
    pattern_fingerprint(&P, s->pattern);
    s->pattern_known = 1;
fail:
    free(P.rowptr);
    free(P.colind);
    return ierr;
}

static int update_numeric(hk_solver *s, const hk_bcsr *K, double t0);

/* P's pattern against the solver's fingerprint; fn names the call, rank (>= 0) the process of a
 * distributed solver whose rows start at global block row row0. */
static int same_fingerprint(const hk_solver *s, const hk_bcsr *P, const char *fn, int rank,
                            int64_t row0)
{
    uint64_t h[HK_PATTERN_CHUNKS];
    pattern_fingerprint(P, h);
    for (int c = 0; c < HK_PATTERN_CHUNKS; c++) {
        if (h[c] == s->pattern[c]) continue;
        const long long from = row0 + P->nbrows * c / HK_PATTERN_CHUNKS + 1,
                        to = row0 + P->nbrows * (c + 1) / HK_PATTERN_CHUNKS;
        if (rank < 0)
            return hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                                "%s: the new matrix's sparsity pattern differs from the solver's "
                                "in block rows %lld..%lld; only the values may change (create a "
                                "new solver for a new pattern)",
                                fn, from, to);
        return hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                            "%s: process %d's new rows differ in sparsity pattern from those it "
                            "created the solver with, in global block rows %lld..%lld; only the "
                            "values may change (create a new solver for a new pattern)",
                            fn, rank, from, to);
    }
    return 0;
}

static int update_dist(hk_solver *s, const hk_bcsr *K, const hk_resident_bcsr *A);

int hk_solver_update_values(hk_solver *s, const hk_bcsr *K)
{
    HK_CHECK(s, HK_ERR_ARG, "hk_solver_update_values: missing solver or matrix");
    if (s->dist) return update_dist(s, K, NULL);
    HK_CHECK(K, HK_ERR_ARG, "hk_solver_update_values: missing solver or matrix");
    HK_CALL(check_shape(K->rowptr != NULL, K->bs, K->nbrows, K->nbcols));
    const hk_backend_ops *be = s->be;
    const int64_t nnzb = K->rowptr[K->nbrows];
    HK_CHECK(K->bs == s->K.br && K->nbrows == s->K.nbrows && nnzb == s->K.nnzb, HK_ERR_ARG,
             "hk_solver_update_values: the new matrix has %lld block rows of %d x %d blocks and "
             "%lld blocks, the solver's %lld block rows of %d x %d and %lld blocks; only the "
             "values may change (create a new solver for a new pattern)",
             (long long)K->nbrows, K->bs, K->bs, (long long)nnzb, (long long)s->K.nbrows, s->K.br,
             s->K.br, (long long)s->K.nnzb);
    if (!s->pattern_known) HK_CALL(resident_fingerprint(s));
    HK_CALL(same_fingerprint(s, K, "hk_solver_update_values", -1, 0));
    const double t0 = hk_time();
    s->broken = 1; /* until the whole update is through */
    if (nnzb) HK_CALL(be->copy_to(s->K.val, K->val, (size_t)nnzb * K->bs * K->bs * sizeof(double)));
    return update_numeric(s, K, t0);
}

/* The new values are in s->K.val (K: the caller's host copy of them, NULL for a resident
 * matrix): check them, rebuild the operator and the preconditioner's numeric part. */
static int update_numeric(hk_solver *s, const hk_bcsr *K, double t0)
{
    const hk_backend_ops *be = s->be;
    int ierr = 0;
    hk_ksp *k = &s->ksp;
    HK_CALL(be->sync());
    double t = hk_time();
    s->update_phase[0] = t - t0;
    /* the check in the refill's pass where the backend can (the values read once), else
     * apart; a bad value is named either way, and the solver stays broken */
    int64_t bad = -1;
    int refilled = 0;
    if (s->A->be->mat_refill_checked && s->A->bdata) {
        const int ierr = s->A->be->mat_refill_checked(s->A, &s->K, &bad);
        if (ierr == HK_ERR_UNSUPPORTED)
            hk_error_clear();
        else
            HK_CALL(ierr);
        refilled = !ierr;
    }
    if (refilled) { /* its time is the format's (the check phase 0) */
        HK_CALL(report_nonfinite(&s->K, K, bad));
        s->update_phase[1] = 0;
    } else {
        HK_CALL(check_values(&s->K, K));
        s->update_phase[1] = hk_time() - t;
        t = hk_time();
        HK_CALL(hk_mat_rebuild(s->A, &s->K));
    }
    if (s->A_low) HK_CALL(hk_mat_rebuild(s->A_low, &s->K));
    HK_CALL(be->sync());
    s->update_phase[2] = hk_time() - t;
    t = hk_time();
    hk_mat *Apc = s->defect ? s->A_low : s->A;
    if (s->pc->type->update) {
        s->pc->K = &s->K;
        ierr = s->pc->type->update(s->pc, &s->K, Apc);
        s->pc->K = NULL;
        HK_CALL(ierr);
    } else {
        hk_pc *pc = NULL;
        HK_CALL(hk_pc_create(s->pc->type, be, s->mixed ? HK_FP32 : HK_FP64, &s->K, Apc,
                             s->have_nn ? &s->nn : NULL, s->opts, &pc));
        hk_pc_destroy(s->pc);
        s->pc = k->pc = pc;
        if (k->inner) k->inner->pc = pc;
    }
    if (k->direct) { /* the factor is the host's, from the caller's K */
        HK_CHECK(K, HK_ERR_UNSUPPORTED,
                 "hk_solver_update_values_resident: method=cholesky factors on the host from a "
                 "host matrix; give the new values with hk_solver_update_values");
        hk_cholesky_free(k);
        HK_CALL(hk_cholesky_factor(k, K));
    }
    if (k->sstep) { /* its Jacobi diagonal and tuning belong to the old values */
        hk_scg_free(k);
        HK_CALL(hk_scg_options(k, s->opts));
        HK_CALL(hk_scg_setup(k));
    }
    HK_CALL(be->sync());
    s->update_phase[3] = hk_time() - t;
    s->update_seconds = hk_time() - t0;
    s->setups++;
    s->broken = 0;
    return 0;
}

/* Whether resident A may replace s's values: its backend, sizes and pattern (compared on the
 * backend). */
static int resident_same_pattern(const hk_solver *s, const hk_resident_bcsr *A)
{
    HK_CHECK(s && A && A->be && A->rowptr && A->colind && A->val, HK_ERR_ARG,
             "hk_solver_update_values_resident: missing solver or matrix arrays");
    HK_CHECK(!s->ksp.direct, HK_ERR_UNSUPPORTED,
             "hk_solver_update_values_resident: method=cholesky factors on the host from a "
             "host matrix; give the new values with hk_solver_update_values");
    HK_CHECK(A->be == s->be, HK_ERR_ARG,
             "hk_solver_update_values_resident: the new matrix is in %s memory, the solver on "
             "%s; give it in the solver's backend's memory",
             A->be->name, s->be->name);
    HK_CHECK(A->bs == s->K.br && A->nbrows == s->K.nbrows && A->nbcols == s->K.nbcols &&
                 A->nnzb == s->K.nnzb,
             HK_ERR_ARG,
             "hk_solver_update_values_resident: the new matrix has %lld block rows of %d x %d "
             "blocks and %lld blocks, the solver's %lld block rows of %d x %d and %lld blocks; "
             "only the values may change (create a new solver for a new pattern)",
             (long long)A->nbrows, A->bs, A->bs, (long long)A->nnzb, (long long)s->K.nbrows,
             s->K.br, s->K.br, (long long)s->K.nnzb);
    int same_rows = 0, same_cols = 0;
    HK_CALL(s->be->mem_equal(A->rowptr, s->K.rowptr, (size_t)(A->nbrows + 1) * sizeof *A->rowptr,
                             &same_rows));
    if (same_rows)
        HK_CALL(s->be->mem_equal(A->colind, s->K.colind, (size_t)A->nnzb * sizeof *A->colind,
                                 &same_cols));
    HK_CHECK(same_rows && same_cols, HK_ERR_ARG,
             "hk_solver_update_values_resident: the new matrix's sparsity pattern differs from "
             "the solver's (its %s); only the values may change (create a new solver for a new "
             "pattern)",
             same_rows ? "column indices" : "row pointers");
    return 0;
}

int hk_solver_update_values_resident(hk_solver *s, hk_resident_bcsr *A)
{
    if (s && s->dist) return update_dist(s, NULL, A);
    HK_CALL(resident_same_pattern(s, A)); /* refused: A left as it was */
    const double t0 = hk_time();
    /* The caller's values become K's and K's previous array goes back in A->val (no copy, no
     * free: a device free waits for the whole device, and the caller would allocate again for
     * the next values). Nothing else holds K's old array: the operator's formats and the
     * preconditioners keep copies or reach K through &s->K. A's pattern arrays stay the
     * caller's (the solver has its own). */
    s->broken = 1; /* until the whole update is through */
    double *old = s->K.val;
    s->K.val = A->val;
    A->val = old;
    return update_numeric(s, NULL, t0);
}

/* ---- new values for a distributed solver ----
 * Each process gives its own rows in the form it created the solver with; every verdict is
 * agreed, so that all processes refuse or go on together. The layout stays (ghosts, the
 * interior/boundary numbering, the halo plan, the transport): the values are gathered into it
 * by the indices kept from create, then the operator is built and the preconditioner set up
 * anew, as at create (the same bytes as a solver created on the new values). */

/* The fingerprint of a part's rows (hk_solver_create_dist_device) with global columns, as a
 * host K of the same rows has it: their pattern read back once, at the first host update. */
static int part_fingerprint(hk_solver *s)
{
    const hk_dist *d = s->dist;
    const hk_backend_ops *L = d->local;
    hk_bcsr P = {d->bs, d->nown, d->nglobal, NULL, NULL, NULL};
    int32_t *loc = NULL;
    int ierr = 0;
    HK_TRY(hk_malloc((size_t)(d->nown + 1) * sizeof *P.rowptr, &P.rowptr));
    HK_TRY(hk_malloc((size_t)(d->nnzb + 1) * sizeof *loc, &loc));
    HK_TRY(hk_malloc((size_t)(d->nnzb + 1) * sizeof *P.colind, &P.colind));
    HK_TRY(L->copy_from(P.rowptr, d->part_rowptr, (size_t)(d->nown + 1) * sizeof *P.rowptr));
    if (d->nnzb) HK_TRY(L->copy_from(loc, d->part_colind, (size_t)d->nnzb * sizeof *loc));
    HK_TRY(hk_backend_cpu.dist_global_columns(loc, d->nnzb, d->row0, d->nown, d->part_ghost,
                                              d->part_nghost, P.colind));
    pattern_fingerprint(&P, s->pattern);
    s->pattern_known = 1;
fail:
    free(loc);
    hk_bcsr_free(&P);
    return ierr;
}

/* The sizes of the process's new rows against the layout's (one sentence naming them). */
static int dist_same_sizes(const hk_solver *s, const char *fn, int bs, int64_t nbrows,
                           int64_t nbcols, int64_t nnzb)
{
    const hk_dist *d = s->dist;
    HK_CHECK(bs == d->bs && nbrows == d->nown && nbcols == d->nglobal && nnzb == d->nnzb,
             HK_ERR_ARG,
             "%s: process %d's new rows (global block rows %lld..%lld) are %lld block rows of "
             "%d x %d blocks, %lld blocks and %lld global block columns, the solver's %lld of "
             "%d x %d, %lld blocks and %lld columns; only the values may change (create a new "
             "solver for a new pattern)",
             fn, hk_comm_rank(d->comm), (long long)(d->row0 + 1), (long long)(d->row0 + d->nown),
             (long long)nbrows, bs, bs, (long long)nnzb, (long long)nbcols, (long long)d->nown,
             d->bs, d->bs, (long long)d->nnzb, (long long)d->nglobal);
    return 0;
}

/* hk_solver_update_values' rows: this process's, global columns, the create's pattern. */
static int dist_host_rows(hk_solver *s, const hk_bcsr *K)
{
    static const char fn[] = "hk_solver_update_values";
    HK_CHECK(K && K->rowptr && K->colind, HK_ERR_ARG,
             "%s: process %d gives no rows (missing matrix or its pattern)", fn,
             hk_comm_rank(s->dist->comm));
    HK_CALL(dist_same_sizes(s, fn, K->bs, K->nbrows, K->nbcols, K->rowptr[K->nbrows]));
    HK_CHECK(K->val || !s->dist->nnzb, HK_ERR_ARG, "%s: process %d's new rows have no values", fn,
             hk_comm_rank(s->dist->comm));
    if (!s->pattern_known) HK_CALL(part_fingerprint(s));
    return same_fingerprint(s, K, fn, hk_comm_rank(s->dist->comm), s->dist->row0);
}

/* hk_solver_update_values_resident's rows: in the backend's memory, in the form the solver
 * was created from (a part's columns for hk_solver_create_dist_device, compared with its kept
 * pattern there; else global columns, compared with the fingerprint: on a device their
 * pattern read back). */
static int dist_resident_rows(hk_solver *s, const hk_resident_bcsr *A)
{
    static const char fn[] = "hk_solver_update_values_resident";
    const hk_dist *d = s->dist;
    const hk_backend_ops *L = d->local;
    const int me = hk_comm_rank(d->comm);
    HK_CHECK(A && A->be && A->rowptr && A->colind && A->val, HK_ERR_ARG,
             "%s: process %d gives no rows (missing matrix arrays)", fn, me);
    HK_CHECK(A->be == L, HK_ERR_ARG,
             "%s: process %d's new rows are in %s memory, the solver on %s; give them in the "
             "solver's backend's memory",
             fn, me, A->be->name, L->name);
    if (d->part_rowptr) { /* a part's rows: the first nown of A, as at create */
        int same_rows = 0, same_cols = 0;
        HK_CHECK(A->bs == d->bs && A->nbrows >= d->nown, HK_ERR_ARG,
                 "%s: process %d's new rows are %lld block rows of %d x %d blocks, the solver "
                 "has %lld of %d x %d (global block rows %lld..%lld); only the values may "
                 "change (create a new solver for a new pattern)",
                 fn, me, (long long)A->nbrows, A->bs, A->bs, (long long)d->nown, d->bs, d->bs,
                 (long long)(d->row0 + 1), (long long)(d->row0 + d->nown));
        HK_CALL(L->mem_equal(A->rowptr, d->part_rowptr, (size_t)(d->nown + 1) * sizeof *A->rowptr,
                             &same_rows));
        if (same_rows && d->nnzb)
            HK_CALL(L->mem_equal(A->colind, d->part_colind, (size_t)d->nnzb * sizeof *A->colind,
                                 &same_cols));
        HK_CHECK(same_rows && (same_cols || !d->nnzb), HK_ERR_ARG,
                 "%s: process %d's new rows (global block rows %lld..%lld) differ in sparsity "
                 "pattern (their %s) from those it created the solver with; only the values "
                 "may change (create a new solver for a new pattern)",
                 fn, me, (long long)(d->row0 + 1), (long long)(d->row0 + d->nown),
                 same_rows ? "column indices" : "row pointers");
        return 0;
    }
    HK_CALL(dist_same_sizes(s, fn, A->bs, A->nbrows, A->nbcols, A->nnzb));
    if (d->host_memory) {
        const hk_bcsr P = {A->bs, A->nbrows, A->nbcols, A->rowptr, A->colind, NULL};
        return same_fingerprint(s, &P, fn, me, d->row0);
    }
    hk_bcsr P = {A->bs, A->nbrows, A->nbcols, NULL, NULL, NULL};
    int ierr = 0;
    HK_TRY(hk_malloc((size_t)(A->nbrows + 1) * sizeof *P.rowptr, &P.rowptr));
    HK_TRY(hk_malloc((size_t)(A->nnzb + 1) * sizeof *P.colind, &P.colind));
    HK_TRY(L->copy_from(P.rowptr, A->rowptr, (size_t)(A->nbrows + 1) * sizeof *P.rowptr));
    if (A->nnzb) HK_TRY(L->copy_from(P.colind, A->colind, (size_t)A->nnzb * sizeof *P.colind));
    ierr = P.rowptr[A->nbrows] == A->nnzb
               ? same_fingerprint(s, &P, fn, me, d->row0)
               : hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                              "%s: process %d's new rows hold %lld blocks by their row pointers "
                              "but say %lld (nnzb)",
                              fn, me, (long long)P.rowptr[A->nbrows], (long long)A->nnzb);
fail:
    hk_bcsr_free(&P);
    return ierr;
}

/* New values for a distributed solver: K (host rows) or A (rows in the backend's memory). */
static int update_dist(hk_solver *s, const hk_bcsr *K, const hk_resident_bcsr *A)
{
    hk_dist *d = s->dist;
    const hk_comm *c = d->comm;
    hk_ksp *k = &s->ksp;
    /* a refusal (sizes, pattern) on any process is every process's; the solver stays usable */
    HK_CALL(hk_comm_agree(c, A ? dist_resident_rows(s, A) : dist_host_rows(s, K)));
    const double t0 = hk_time();
    s->broken = 1; /* until the whole update is through */
    hk_bcsr pat = {d->bs, d->nown, d->nglobal, NULL, NULL, NULL};
    if (A)
        pat.rowptr = A->rowptr, pat.colind = A->colind;
    else
        pat = *K;
    /* into the layout, checked there (a non-finite value refused by all, named as at create) */
    HK_CALL(hk_comm_agree(c, hk_dist_update_values(d, &pat, A != NULL, A && d->part_rowptr,
                                                   A ? A->val : NULL, &s->update_phase[0],
                                                   &s->update_phase[1])));
    /* the operator built anew on the layout's matrices (no collective in it) */
    double t = hk_time();
    int ierr = hk_mat_rebuild(s->A, &s->K);
    if (!ierr && s->A_low) ierr = hk_mat_rebuild(s->A_low, &s->K);
    if (!ierr) ierr = s->be->sync();
    HK_CALL(hk_comm_agree(c, ierr));
    s->update_phase[2] = hk_time() - t;
    t = hk_time();
    /* the preconditioner set up anew, as at create (its set-up has collectives: each process
     * meets the agreement after it); the old one freed first, so that a distributed hierarchy
     * is not held twice (the solver cannot solve until this is through anyway) */
    const hk_pc_type *pt = s->pc ? s->pc->type : s->pc_type; /* none: a failed update's */
    s->pc_type = pt;
    hk_pc *pc = NULL;
    hk_pc_destroy(s->pc);
    s->pc = k->pc = NULL;
    if (k->inner) k->inner->pc = NULL;
    HK_CALL(hk_comm_agree(c, hk_pc_create(pt, s->be, s->mixed ? HK_FP32 : HK_FP64, &s->K,
                                          s->defect ? s->A_low : s->A, s->have_nn ? &s->nn : NULL,
                                          s->opts, &pc)));
    s->pc = k->pc = pc;
    if (k->inner) k->inner->pc = pc;
    ierr = 0;
    if (k->sstep) { /* its Jacobi diagonal and tuning belong to the old values */
        hk_scg_free(k);
        ierr = hk_scg_options(k, s->opts);
        if (!ierr) ierr = hk_scg_setup(k);
    }
    if (!ierr) ierr = s->be->sync();
    HK_CALL(hk_comm_agree(c, ierr));
    s->update_phase[3] = hk_time() - t;
    s->update_seconds = hk_time() - t0;
    s->setups++;
    s->broken = 0;
    return 0;
}

/* The fp32 preconditioner stalled the solve at relative residual `at`: rebuilt in fp64. */
static int fall_back(hk_solver *s, double at)
{
    const double t0 = hk_time();
    hk_pc *pc = s->pc;
    pc->K = &s->K;
    int ierr = pc->type->fallback(pc, &s->K, s->A, at);
    pc->K = NULL;
    HK_CALL(ierr);
    HK_CALL(s->be->sync());
    s->setups++;
    if (isfinite(at))
        snprintf(s->note, sizeof s->note,
                 "%s: fp32 levels stalled at %.1e, continued with fp64 levels (rebuilt in "
                 "%.2f s)",
                 pc->type->name, at, hk_time() - t0);
    else
        snprintf(s->note, sizeof s->note,
                 "%s: fp32 levels overflowed (values beyond fp32's range), continued with fp64 "
                 "levels (rebuilt in %.2f s)",
                 pc->type->name, hk_time() - t0);
    return 0;
}

static void set_setup_times(const hk_solver *s, hk_result *res)
{
    res->setup_seconds = s->setup_seconds;
    res->setup_check_seconds = s->setup_phase[0];
    res->setup_upload_seconds = s->setup_phase[1];
    res->setup_format_seconds = s->setup_phase[2];
    res->setup_pc_seconds = s->setup_phase[3];
    res->setup_start_seconds = s->setup_phase[4];
    res->update_seconds = s->update_seconds;
    res->setups = s->setups;
}

/* b and the initial guess x must be finite and b not huge; entries are named by their row
 * (global in a distributed solve). */
/* b and the initial guess x checked in one pass each; *x_zero: the guess is all zeros (set on
 * the backend instead of uploaded). */
static int check_rhs(const hk_solver *s, const double *b, const double *x, int *x_zero)
{
    const int64_t off = s->dist ? s->dist->row0 * s->dist->bs : 0;
    int64_t bad, huge, xhuge;
    int bzero;
    scan_vec(b, s->n, &bad, &huge, &bzero);
    HK_CHECK(bad < 0, HK_ERR_NUMERIC,
             "right-hand side entry %lld is %g; the solver needs finite values",
             (long long)(off + bad + 1), bad >= 0 ? b[bad] : 0.0);
    HK_CHECK(huge < 0, HK_ERR_NUMERIC,
             "right-hand side entry %lld is %g, too large for the solver's inner products (their "
             "squares overflow); keep values below %g, e.g. with other units",
             (long long)(off + huge + 1), huge >= 0 ? b[huge] : 0.0, HK_HUGE_RHS);
    scan_vec(x, s->n, &bad, &xhuge, x_zero);
    HK_CHECK(bad < 0, HK_ERR_NUMERIC,
             "initial guess entry %lld is %g; pass finite values (zeros will do)",
             (long long)(off + bad + 1), bad >= 0 ? x[bad] : 0.0);
    return 0;
}

/* HOOKE_DIST_PROFILE: the method's seconds from tm to now; the first attempt's split at its
 * first preconditioner application (hk_dprof_pc) into the first residual, that application
 * and the iterations. */
static void profile_method(int first_attempt, double tm)
{
    double rest = hk_time() - tm;
    hk_dprof *p = &hk_dist_prof;
    if (first_attempt && p->pc_first_end > 0 && p->pc_first_begin >= tm) {
        p->step[HK_DSTEP_START] += p->pc_first_begin - tm;
        p->step[HK_DSTEP_FIRST_PC] += p->pc_first_end - p->pc_first_begin;
        rest -= p->pc_first_end - tm;
    }
    p->step[HK_DSTEP_ITERATIONS] += rest;
}

/* v from the caller's host array h: uploaded, and on a distributed solver put in the layout's
 * order on the backend (r the scratch). */
static int upload_in_order(hk_solver *s, const double *h, hk_vec *v)
{
    return s->dist ? hk_dist_upload_ordered(s->dist, h, s->r, v) : hk_vec_upload(v, h);
}

int hk_solver_solve(hk_solver *s, const double *b, double *x, hk_result *res)
{
    HK_CHECK(s && res, HK_ERR_ARG, "hk_solver_solve: missing solver or result");
    memset(res, 0, sizeof *res);
    HK_CHECK(!s->broken, HK_ERR_ARG,
             "hk_solver_solve: this solver's hk_solver_update_values failed; destroy it and "
             "create a new one");
    s->note[0] = 0;
    hk_ksp *k = &s->ksp;
    const hk_backend_ops *be = s->be;
    /* HOOKE_DIST_PROFILE: the steps outside the iterations (tp[k]: when step k ended) */
    double tp[HK_DSTEPS + 1];
    tp[0] = hk_time();
    /* distributed: a missing or bad input on one process stops every process */
    int x_zero = 0;
    int bad_input = !b || !x ? hk_error_set(HK_ERR_ARG, __FILE__, __LINE__,
                                            "hk_solver_solve: missing b or x")
                             : check_rhs(s, b, x, &x_zero);
    if (s->dist) bad_input = hk_comm_agree(s->dist->comm, bad_input);
    if (bad_input) {
        res->reason = HK_DIVERGED_NAN;
        set_setup_times(s, res);
        return bad_input;
    }
    tp[1 + HK_DSTEP_CHECK] = hk_time();
    /* distributed: b and x put in the layout's order (interior rows first) on the backend,
     * through r as the scratch (a zero guess is not read) */
    HK_CALL(upload_in_order(s, b, s->b));
    if (x_zero) /* a zero guess (the usual one) is set where it lives, not copied there */
        HK_CALL(be->vec_set(s->x, 0.0));
    else
        HK_CALL(upload_in_order(s, x, s->x));
    tp[1 + HK_DSTEP_UPLOAD] = hk_time();
    double bb;
    HK_CALL(be->vec_dot(s->b, s->b, &bb));
    s->bnorm = sqrt(bb);
    HK_CALL(be->sync());
    tp[1 + HK_DSTEP_BNORM] = hk_time();
    if (s->dist) hk_dist_profile_begin(s->dist); /* HOOKE_DIST_PROFILE */
    const int prof = s->dist && hk_dist_prof.on;
    if (prof)
        for (int k = HK_DSTEP_CHECK; k <= HK_DSTEP_BNORM; k++)
            hk_dist_prof.step[k] = tp[k + 1] - tp[k];
    const double t0 = hk_time();
    /* A method's recursive residual can drift from b - A x (rounding, an fp32 preconditioner,
     * pipelined recurrences). "Converged" must hold for the true residual, recomputed here in
     * fp64: when it is above HK_TRUE_RESIDUAL_FACTOR times the tolerance the method restarts
     * from x (up to HK_TRUE_RESIDUAL_RESTARTS times, within maxit); if it still is, the reason
     * says so and the solve counts as not converged. */
    const int maxit0 = k->maxit;
    const double tol = fmax(k->rtol * s->bnorm, k->atol);
    int iterations = 0;
    double rnorm0 = 0, rr = 0;
    int ierr = 0;
    /* an fp32 preconditioner that can be rebuilt in fp64 (pc=amg's default): a solve that
     * stalls (no halving of the residual in HK_STALL_WINDOW iterations), stops for any other
     * reason, or ends with the true residual above the tolerance, goes on from x with the fp64
     * preconditioner (not for defect, whose inner solve is fp32 by design) */
    const int stall0 = k->stall_window;
    int first = 1;
    for (int attempt = 0;; attempt++) {
        const int armed = s->pc->fallback_armed && s->pc->type->fallback && !s->defect;
        k->stall_window = armed ? HK_STALL_WINDOW : 0;
        k->stall_factor = HK_STALL_FACTOR;
        const double tm = prof ? hk_time() : 0;
        HK_TRY(k->type->solve(k, s->b, s->x));
        if (prof) profile_method(first, tm);
        iterations += k->res.iterations;
        if (first) rnorm0 = k->res.rnorm0;
        first = 0;
        const double tr = prof ? hk_time() : 0;
        HK_TRY(hk_mat_spmv(s->A, s->x, s->r));
        HK_TRY(be->vec_axpby(s->r, 1.0, s->b, -1.0));
        HK_TRY(be->vec_dot(s->r, s->r, &rr));
        if (prof) hk_dist_prof.step[HK_DSTEP_TRUE_RES] += hk_time() - tr;
        const int converged = hk_reason_converged(k->res.reason);
        if (converged && sqrt(rr) <= HK_TRUE_RESIDUAL_FACTOR * tol) break;
        if (armed && iterations < maxit0) {
            /* NaN: a value left fp32's range (the method stopped on it) */
            HK_TRY(fall_back(s, k->res.reason == HK_DIVERGED_NAN ? NAN
                                : s->bnorm > 0                   ? sqrt(rr) / s->bnorm
                                                                 : sqrt(rr)));
            /* an fp32 overflow left NaN in x: the fp64 solve starts from the caller's guess */
            if (!isfinite(rr)) HK_TRY(x_zero ? be->vec_set(s->x, 0.0) : upload_in_order(s, x, s->x));
            k->maxit = maxit0 - iterations;
            attempt = -1; /* the fp64 solve has its own restarts */
            continue;
        }
        if (!converged) break;
        if (attempt == HK_TRUE_RESIDUAL_RESTARTS || iterations >= maxit0) {
            k->res.reason = HK_DIVERGED_TRUE_RESIDUAL;
            break;
        }
        k->maxit = maxit0 - iterations;
    }
    k->maxit = maxit0;
    k->stall_window = stall0;
    const double ts = hk_time();
    HK_CALL(be->sync());
    const double t1 = hk_time();
    /* a failed download still meets the others in the profile's sums; distributed: x put
     * back in the caller's order on the backend first (r the scratch) */
    const int down = s->dist ? hk_dist_download_ordered(s->dist, s->x, s->r, x)
                             : hk_vec_download(s->x, x);
    if (prof) {
        const double now = hk_time();
        hk_dist_prof.step[HK_DSTEP_END_SYNC] = t1 - ts;
        hk_dist_prof.step[HK_DSTEP_DOWNLOAD] = now - t1;
        hk_dist_prof.step[HK_DSTEP_TOTAL] = now - tp[0];
    }
    const int profiled = s->dist ? hk_dist_profile_end(s->dist, t1 - t0, iterations) : 0;
    HK_CALL(down ? down : profiled);
    *res = k->res;
    res->iterations = iterations;
    res->rnorm0 = rnorm0;
    res->true_residual = s->bnorm > 0 ? sqrt(rr) / s->bnorm : sqrt(rr);
    set_setup_times(s, res);
    res->solve_seconds = t1 - t0;
    res->history = k->keep_history ? k->history : NULL;
    if (!k->keep_history) res->history_len = 0;
    memcpy(res->note, s->note, sizeof res->note);
    return 0;
fail:
    k->maxit = maxit0;
    k->stall_window = stall0;
    return ierr;
}

const char *hk_solver_dist_comm(const hk_solver *s)
{
    return s && s->dist ? hk_dist_comm_name(s->dist) : NULL;
}

void hk_solver_describe(const hk_solver *s, FILE *f)
{
    if (!s) return;
    char pcn[512], on[96];
    if (s->dist)
        snprintf(on, sizeof on, "%s, %d processes, %s", s->be->name, hk_comm_size(s->dist->comm),
                 hk_dist_comm_name(s->dist));
    else
        snprintf(on, sizeof on, "%s", s->be->name);
    if (!s->pc) { /* a distributed update failed in its set-up */
        snprintf(pcn, sizeof pcn, "no preconditioner (its update failed)");
    } else if (s->pc->type->describe && s->pc->data) {
        char info[448];
        s->pc->type->describe(s->pc, info, sizeof info);
        snprintf(pcn, sizeof pcn, "%s (%s)", s->pc->type->name, info);
    } else {
        snprintf(pcn, sizeof pcn, "%s", s->pc->type->name);
    }
    if (s->ksp.direct) {
        char info[256];
        hk_cholesky_describe(&s->ksp, info, sizeof info);
        fprintf(f, "%s (%s, on the host), residual in %s fp64 on %s\n", s->ksp.type->name, info,
                hk_format_name(s->A->fmt), on);
    } else if (s->ksp.sstep) {
        char info[384];
        hk_scg_describe(&s->ksp, info, sizeof info);
        fprintf(f, "%s + %s%s, %s fp64 on %s\n", info, pcn,
                s->mixed ? " fp32 (mixed precision)" : "", hk_format_name(s->A->fmt), on);
    } else if (s->ksp.inner)
        fprintf(f, "defect(%s, fp32) + %s fp32, %s fp64 + fp32 copy on %s\n",
                s->ksp.inner->type->name, pcn, hk_format_name(s->A->fmt), on);
    else
        fprintf(f, "%s%s%s%s + %s%s, %s fp64 on %s\n", s->ksp.type->name,
                s->ksp.pipecg_variant ? " (" : "",
                s->ksp.pipecg_variant ? pipecg_variants[s->ksp.pipecg_variant] : "",
                s->ksp.pipecg_variant ? ")" : "", pcn, s->mixed ? " fp32 (mixed precision)" : "",
                hk_format_name(s->A->fmt), on);
}

void hk_solver_set_monitor(hk_solver *s, hk_monitor_fn fn, void *ctx)
{
    if (!s) return;
    s->ksp.monitor = fn;
    s->ksp.monitor_ctx = ctx;
}

void hk_solver_print_help(FILE *f)
{
    fprintf(f, "Solver options (key=value; unknown keys are errors):\n"
               "  backend=auto|cpu|cuda   where to run (auto: cuda when a device is present)\n"
               "  method=NAME             Krylov method (default cg), one of:\n");
    for (int i = 0; hk_ksp_types[i]; i++)
        fprintf(f, "      %-13s %s\n", hk_ksp_types[i]->name, hk_ksp_types[i]->summary);
    fprintf(f, "  pc=NAME                 preconditioner (default jacobi), one of:\n");
    for (int i = 0; hk_pc_types[i]; i++)
        fprintf(f, "      %-13s %s%s%s%s\n", hk_pc_types[i]->name, hk_pc_types[i]->summary,
                hk_pc_types[i]->options && hk_pc_types[i]->options[0] ? " [options: " : "",
                hk_pc_types[i]->options ? hk_pc_types[i]->options : "",
                hk_pc_types[i]->options && hk_pc_types[i]->options[0] ? "]" : "");
    fprintf(f, "  format=NAME             storage format (default auto: csr for scalar, bsr for "
               "block\n                          matrices; on cuda sbell once the matrix "
               "outgrows the L2 cache):\n                         ");
    for (int i = 0; i < HK_FMT_COUNT; i++)
        fprintf(f, " %s", hk_format_name((hk_format)i));
    fprintf(f, "\n"
               "  format.slice=32         SELL/SBELL slice height S\n"
               "  format.sigma=auto       sorting window in rows (auto: from the row lengths; 0: whole matrix)\n"
               "  format.tpr=0            threads per block row on cuda (0: auto)\n"
               "  format.csr.kernel=auto  csr on cuda: thread, warp, vector (sub-warp per row;\n"
               "                          auto), adaptive (row blocks in shared memory)\n"
               "  format.pcsr.partition=256  pcsr: entries per partition (thread block)\n"
               "  format.pcsr.pad=4       pcsr: rows padded to a multiple of this\n"
               "  format.pcsr.prefetch=4  pcsr on cuda: partitions per thread block\n"
               "  precision=double|mixed  mixed: fp32 preconditioner, fp64 outer loop "
               "(default double)\n"
               "  tol=1e-8                relative tolerance on ||b-Ax||/||b||\n"
               "  atol=0                  absolute tolerance on ||b-Ax||\n"
               "  maxit=10000             iteration limit\n"
               "  restart=30              GMRES restart length m\n"
               "  check_every=1|10        test the residual every N iterations (pipelined "
               "methods read\n"
               "                          their backend scalars only then; default 10 for "
               "them on cuda)\n"
               "  graphs=1                cuda: record the check_every iterations of pipecg once\n"
               "                          and replay them as one CUDA graph (0: launch each op)\n"
               "  stagnation=2000         stop when the best residual has not dropped 0.1 %%\n"
               "                          in this many iterations (0: never); for cg and\n"
               "                          bicgstab counted from the first drop below the\n"
               "                          initial residual\n"
               "  ksp.s=4                 scg: CG steps per outer step (1..8)\n"
               "  ksp.basis=chebyshev     scg: monomial, newton or chebyshev basis\n"
               "  mpk.block=0             scg: matrix-powers partition (wavefront: chunk) in\n"
               "                          block rows (0: chosen, -1: one SpMV per basis vector)\n"
               "  mpk.k=0                 scg: levels per matrix-powers pass (0: s, 1..s)\n"
               "  mpk.schedule=auto       scg: matrix powers by ghost zones, a wavefront over\n"
               "                          chunks, or ghost zones staged on chip (shared; cuda)\n"
               "                          (auto: by a rule; timed: the fastest measured, not\n"
               "                          reproducible run to run on cuda)\n"
               "  pipecg.variant=auto     pipecg: paper (Algorithm 2 as written; pc none or\n"
               "                          jacobi), fused (its beta with a z.Ap product), gv\n"
               "                          (Ghysels-Vanroose, any pc); auto: paper for none and\n"
               "                          jacobi, gv otherwise\n"
               "  replace_every=0         pipecg, scg: recompute the residual from x\n"
               "                          when the drift estimate says so (0), every N\n"
               "                          iterations (N), or never (-1)\n"
               "  dist.comm=auto          under mpirun: how the processes exchange halos and\n"
               "                          sums: nccl (device to device, the cuda backend;\n"
               "                          needs a build with NCCL), mpi (through the host on\n"
               "                          cuda); auto: mpi (measured faster on two\n"
               "                          H200s at 0.4-1.6M DOFs a GPU)\n"
               "  pc.amg.dist.gather_rows=50000  under mpirun, pc=amg: levels with at most\n"
               "                          this many scalar rows live on every process (the\n"
               "                          cycle below them exchanges nothing); 0: none\n"
               "  history=0|1             keep the residual history\n"
               "  monitor=0|1             print the residual at every test\n"
               "  inner.method=cg         defect correction: the fp32 inner method\n"
               "  inner.tol=1e-4          defect correction: inner relative tolerance\n"
               "  inner.maxit=1000        defect correction: inner iteration limit\n");
}
