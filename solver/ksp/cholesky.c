/* method=cholesky: a sparse direct solver through CHOLMOD (SuiteSparse), for the cases where an
 * iterative method is the wrong tool: small models, thin-walled parts, nearly incompressible
 * materials, many load cases on one K.
 *
 * K = L L^T is computed once, when the solver is created (supernodal, with CHOLMOD's
 * fill-reducing ordering: AMD, or METIS where CHOLMOD was built with it; the dense kernels run
 * in the multithreaded BLAS), and every later solve on the same solver reuses it: each load
 * case costs two triangular solves. The factor lives on the host whatever the backend: on cuda
 * the right-hand side comes down, the solution goes up and the residual is computed on the
 * device as for every method.
 *
 * A solve is one correction x += K^{-1} (b - A x) (from x = 0 that is x = K^{-1} b), repeated
 * (iterative refinement) while the residual is above the tolerance and still falls; the
 * iteration count is the number of corrections, 1 in nearly every case. */
#include <stdlib.h>
#include <string.h>

#include "ksp_impl.h"

static long factorizations; /* process-wide count, for tests: load cases must not refactor */

long hk_cholesky_factorizations(void)
{
    return factorizations;
}

#ifdef HOOKE_HAVE_CHOLMOD
#include <cholmod.h>

/* Corrections at most per solve (the first one included). */
#define HK_CHOLESKY_MAX_CORRECTIONS 3

typedef struct hk_cholesky {
    cholmod_common cm;
    cholmod_factor *L;
    cholmod_dense *R;         /* n x 1: the residual on the host, then the correction (solve2) */
    cholmod_dense *X, *Y, *E; /* solve2's result and workspaces, kept between solves */
    double *x;                /* the iterate on the host */
    int64_t n;
    char desc[160];
} hk_cholesky;

static void cholesky_destroy(hk_cholesky *c)
{
    if (!c) return;
    cholmod_l_free_factor(&c->L, &c->cm);
    cholmod_l_free_dense(&c->R, &c->cm);
    cholmod_l_free_dense(&c->X, &c->cm);
    cholmod_l_free_dense(&c->Y, &c->cm);
    cholmod_l_free_dense(&c->E, &c->cm);
    cholmod_l_finish(&c->cm);
    free(c->x);
    free(c);
}

void hk_cholesky_free(hk_ksp *k)
{
    cholesky_destroy(k->direct);
    k->direct = NULL;
}

/* The block entry K(bi, bj) (its bs x bs values), or NULL when that block is not stored. */
static const double *find_block(const hk_bcsr *K, int64_t bi, int64_t bj)
{
    const int64_t q = hk_find_block(K->rowptr, K->colind, bi, bj);
    return q >= 0 ? K->val + (size_t)q * K->bs * K->bs : NULL;
}

/* CHOLMOD uses one triangle of K: the other must agree, or the answer would be for another
 * matrix. Entries differing by more than rounding are named (1-based scalar indices). */
static int check_symmetric(const hk_bcsr *K)
{
    const int bs = K->bs;
    double scale = 0;
    for (int64_t i = 0; i < (int64_t)K->rowptr[K->nbrows]; i++)
        for (int e = 0; e < bs * bs; e++)
            scale = fmax(scale, fabs(K->val[(size_t)i * bs * bs + e]));
    for (int64_t bi = 0; bi < K->nbrows; bi++)
        for (int64_t p = K->rowptr[bi]; p < K->rowptr[bi + 1]; p++) {
            const int64_t bj = K->colind[p];
            if (bj < bi) continue; /* each pair once, from the upper side */
            const double *a = K->val + (size_t)p * bs * bs;
            const double *t = find_block(K, bj, bi);
            for (int r = 0; r < bs; r++)
                for (int c = 0; c < bs; c++) {
                    const double v = a[r * bs + c], w = t ? t[c * bs + r] : 0.0;
                    const double d = fabs(v - w);
                    HK_CHECK(d <= 1e-10 * fmax(fabs(v), fabs(w)) || d <= 1e-14 * scale,
                             HK_ERR_UNSUPPORTED,
                             "method=cholesky needs a symmetric matrix, but K(%lld,%lld) = %.17g "
                             "and K(%lld,%lld) = %.17g; use method=gmres or bicgstab for a "
                             "nonsymmetric K",
                             (long long)(bi * bs + r + 1), (long long)(bj * bs + c + 1), v,
                             (long long)(bj * bs + c + 1), (long long)(bi * bs + r + 1), w);
                }
        }
    return 0;
}

/* The upper triangle of K by scalar rows is the lower triangle by columns (stype -1): CSC
 * with row indices sorted, built straight from the block rows. */
static int lower_csc(const hk_bcsr *K, cholmod_common *cm, cholmod_sparse **out)
{
    const int bs = K->bs;
    const int64_t n = K->nbrows * bs;
    int64_t nnz = 0;
    for (int64_t bi = 0; bi < K->nbrows; bi++)
        for (int64_t p = K->rowptr[bi]; p < K->rowptr[bi + 1]; p++) {
            const int64_t bj = K->colind[p];
            if (bj > bi) nnz += (int64_t)bs * bs;
            if (bj == bi) nnz += (int64_t)bs * (bs + 1) / 2;
        }
    cholmod_sparse *A =
        cholmod_l_allocate_sparse((size_t)n, (size_t)n, (size_t)nnz, 1, 1, -1, CHOLMOD_REAL, cm);
    HK_CHECK(A, HK_ERR_MEMORY,
             "method=cholesky: no memory for the %lld x %lld matrix with %lld entries in CHOLMOD's "
             "format",
             (long long)n, (long long)n, (long long)nnz);
    SuiteSparse_long *cp = A->p, *ri = A->i;
    double *v = A->x;
    int64_t q = 0;
    for (int64_t bi = 0; bi < K->nbrows; bi++)
        for (int r = 0; r < bs; r++) {
            const int64_t row = bi * bs + r;
            cp[row] = q;
            for (int64_t p = K->rowptr[bi]; p < K->rowptr[bi + 1]; p++) {
                const int64_t bj = K->colind[p];
                if (bj < bi) continue;
                for (int c = bj == bi ? r : 0; c < bs; c++) {
                    ri[q] = bj * bs + c;
                    v[q++] = K->val[((size_t)p * bs + r) * bs + c];
                }
            }
        }
    cp[n] = q;
    *out = A;
    return 0;
}

static const char *ordering_name(int o)
{
    switch (o) {
    case CHOLMOD_NATURAL:
        return "natural";
    case CHOLMOD_AMD:
        return "AMD";
    case CHOLMOD_METIS:
        return "METIS";
    case CHOLMOD_NESDIS:
        return "nested dissection";
    case CHOLMOD_COLAMD:
        return "COLAMD";
    }
    return "given";
}

int hk_cholesky_factor(hk_ksp *k, const hk_bcsr *K)
{
    int ierr;
    hk_cholesky *c = NULL;
    cholmod_sparse *A = NULL;
    HK_CALL(check_symmetric(K));
    HK_TRY(hk_calloc(1, sizeof *c, &c));
    cholmod_l_start(&c->cm);
    c->cm.print = 0; /* errors become our sentences below */
    c->cm.supernodal = CHOLMOD_SUPERNODAL;
    c->cm.final_ll = 1; /* L L^T, not L D L^T */
    c->n = K->nbrows * K->bs;
    HK_TRY(hk_malloc((size_t)c->n * sizeof *c->x, &c->x));
    HK_TRY(lower_csc(K, &c->cm, &A));
    c->L = cholmod_l_analyze(A, &c->cm);
    HK_TRY_CHECK(c->L, c->cm.status == CHOLMOD_OUT_OF_MEMORY ? HK_ERR_MEMORY : HK_ERR_NUMERIC,
                 "method=cholesky: CHOLMOD's analysis (ordering) of K failed with status %d%s",
                 c->cm.status, c->cm.status == CHOLMOD_OUT_OF_MEMORY ? " (out of memory)" : "");
    cholmod_l_factorize(A, c->L, &c->cm);
    factorizations++;
    if (c->cm.status == CHOLMOD_NOT_POSDEF) {
        /* L->minor is the pivot in the fill-reducing order; Perm maps it back to K's row */
        const SuiteSparse_long *perm = c->L->Perm;
        const int64_t minor = (int64_t)c->L->minor;
        const int64_t row = perm && minor < c->n ? (int64_t)perm[minor] : minor;
        HK_TRY_CHECK(0, HK_ERR_NUMERIC,
                     "method=cholesky: K is not positive definite, the factorisation stopped at "
                     "row %lld (node %lld, component %d); check the supports there (a part "
                     "free to move makes K singular) and the material, or use an iterative "
                     "method (method=gmres) for an indefinite K",
                     (long long)row + 1, (long long)(row / K->bs) + 1, (int)(row % K->bs) + 1);
    }
    HK_TRY_CHECK(c->cm.status == CHOLMOD_OK || c->cm.status > 0,
                 c->cm.status == CHOLMOD_OUT_OF_MEMORY ? HK_ERR_MEMORY : HK_ERR_NUMERIC,
                 "method=cholesky: CHOLMOD's factorisation of K failed with status %d%s",
                 c->cm.status,
                 c->cm.status == CHOLMOD_OUT_OF_MEMORY
                     ? " (out of memory: the factor needs more than K; use an iterative method)"
                     : "");
    c->R = cholmod_l_allocate_dense((size_t)c->n, 1, (size_t)c->n, CHOLMOD_REAL, &c->cm);
    HK_TRY_CHECK(c->R, HK_ERR_MEMORY, "method=cholesky: no memory for a vector of %lld values",
                 (long long)c->n);
    {
        const int sel = c->cm.selected >= 0 && c->cm.selected < CHOLMOD_MAXMETHODS
                            ? c->cm.method[c->cm.selected].ordering
                            : -1;
        snprintf(c->desc, sizeof c->desc, "CHOLMOD %s, %s ordering, %.3g M entries in L",
                 c->L->is_super ? "supernodal" : "simplicial", ordering_name(sel), c->cm.lnz / 1e6);
    }
    cholmod_l_free_sparse(&A, &c->cm);
    k->direct = c;
    return 0;
fail:
    if (c) cholmod_l_free_sparse(&A, &c->cm);
    cholesky_destroy(c);
    return ierr;
}

void hk_cholesky_describe(const hk_ksp *k, char *buf, size_t n)
{
    const hk_cholesky *c = k->direct;
    snprintf(buf, n, "%s", c ? c->desc : "not factored");
}

static int cholesky_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    hk_cholesky *c = k->direct;
    const hk_backend_ops *be = k->be;
    hk_vec *r = NULL;
    int ierr, done;
    double bnorm, rnorm;
    HK_CHECK(c, HK_ERR_INTERNAL, "method=cholesky: solve without a factor");
    HK_CALL(hk_ksp_vecs(k, 1, &r));
    HK_TRY(hk_ksp_start(k, b, x, r, &bnorm, &rnorm, &done));
    if (done) goto out;
    HK_TRY(hk_vec_download(x, c->x));
    for (int it = 1;; it++) {
        /* x += K^{-1} r on the host */
        HK_TRY(hk_vec_download(r, c->R->x));
        HK_TRY_CHECK(
            cholmod_l_solve2(CHOLMOD_A, c->L, c->R, NULL, &c->X, NULL, &c->Y, &c->E, &c->cm),
            HK_ERR_NUMERIC, "method=cholesky: CHOLMOD's triangular solves failed (status %d)",
            c->cm.status);
        const double *dx = c->X->x;
        for (int64_t i = 0; i < c->n; i++)
            c->x[i] += dx[i];
        HK_TRY(hk_vec_upload(x, c->x));
        HK_TRY(hk_mat_spmv(k->A, x, r));
        HK_TRY(be->vec_axpby(r, 1.0, b, -1.0));
        double rr;
        HK_TRY(be->vec_dot(r, r, &rr));
        const double prev = rnorm;
        rnorm = sqrt(rr);
        if (hk_ksp_converged(k, it, rnorm, bnorm)) break;
        /* Refinement that no longer helps: the residual is at the rounding floor of b - A x
         * (about eps |K| |x|, above eps |b| when the loads are small against the stiffness,
         * as for self-weight). That is the exact solution in fp64: accepted within the
         * margin the solver grants every method's true residual, refused below it. */
        if (it >= HK_CHOLESKY_MAX_CORRECTIONS || !(rnorm < 0.5 * prev)) {
            const double tol = fmax(k->rtol * bnorm, k->atol);
            hk_ksp_stop(k, it,
                        rnorm <= HK_TRUE_RESIDUAL_FACTOR * tol
                            ? (k->rtol * bnorm >= k->atol ? HK_CONVERGED_RTOL : HK_CONVERGED_ATOL)
                            : HK_DIVERGED_STAGNATION);
            break;
        }
    }
out:
    hk_ksp_vecs_free(k, 1, &r);
    return 0;
fail:
    hk_ksp_vecs_free(k, 1, &r);
    return ierr;
}

#else /* no CHOLMOD in this build */

int hk_cholesky_factor(hk_ksp *k, const hk_bcsr *K)
{
    (void)k;
    (void)K;
    return hk_error_set(HK_ERR_NOT_BUILT, __FILE__, __LINE__,
                        "method=cholesky needs CHOLMOD, rebuild with libsuitesparse-dev "
                        "(scripts/install-deps.sh), or use an iterative method (method=cg)");
}

void hk_cholesky_free(hk_ksp *k)
{
    k->direct = NULL;
}

void hk_cholesky_describe(const hk_ksp *k, char *buf, size_t n)
{
    (void)k;
    snprintf(buf, n, "not built");
}

static int cholesky_solve(hk_ksp *k, const hk_vec *b, hk_vec *x)
{
    (void)b;
    (void)x;
    return hk_cholesky_factor(k, NULL);
}

#endif

const hk_ksp_type hk_ksp_cholesky = {
    .name = "cholesky",
    .summary = "sparse direct solver (CHOLMOD), K = L L^T once, reused by every solve",
    .needs_symmetric = 1,
    .solve = cholesky_solve,
};
