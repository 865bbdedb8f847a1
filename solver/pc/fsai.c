/* Static FSAI, factored sparse approximate inverse M^-1 = G^T G ~ A^-1 for SPD A, following
 * the FSAI paper's Algorithm 3.1 (Janna, Ferronato et al.):
 *
 *   1. sparsify: Ã keeps a_ij with |a_ij| > tau sqrt(a_ii a_jj) (and the diagonal);
 *   2. pattern S of G: k steps of the symbolic recursion B_{p+1} = Low(B_p Ã), B_0 = I
 *      (equation 3.9; row i of B_k is the set of columns <= i reachable from i in k steps);
 *   3. per row i (OpenMP over rows): gather the dense A[P_i, P_i], solve A[P_i,P_i] w = e_m by
 *      Cholesky, g_i = w / sqrt(w_m), which gives diag(G A G^T) = 1 (equation 3.7);
 *   4. post-filtration: entries |g_ij| <= delta ||g_i||_2 (j < i) are dropped into eps_i and
 *      the kept row scaled by 1/sqrt(1 + eps_i^T A eps_i) (equation 3.13), which keeps
 *      diag(G A G^T) = 1 exactly.
 *
 * G and G^T are stored as csr hk_mats in the preconditioner's precision; apply is two SpMVs,
 * z = G^T (G r), on any backend. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

#define FSAI_MAX_ROW 600 /* dense local systems larger than this are refused */

typedef struct {
    hk_mat *G, *Gt;
    hk_vec *t;
    int64_t nnz;
} fsai_data;

/* Row i of the pattern: columns <= i reachable in k steps of Ã from i, sorted (i last). */
static int64_t fsai_row_pattern(const hk_csr *At, int64_t i, int k, int32_t *mark, int32_t *set,
                                int64_t cap)
{
    int64_t m = 1, done = 0;
    set[0] = (int32_t)i;
    mark[i] = (int32_t)i;
    for (int p = 0; p < k; p++) {
        const int64_t end = m;
        for (int64_t q = done; q < end; q++) { /* expand the entries added last step only */
            const int32_t j = set[q];
            for (int64_t kk = At->rowptr[j]; kk < At->rowptr[j + 1]; kk++) {
                const int32_t c = At->colind[kk];
                if (c > i || mark[c] == i) continue;
                if (m == cap) return -1;
                mark[c] = (int32_t)i;
                set[m++] = c;
            }
        }
        done = end;
    }
    /* sort ascending (insertion sort: rows are short) */
    for (int64_t a = 1; a < m; a++) {
        int32_t v = set[a];
        int64_t b = a;
        for (; b > 0 && set[b - 1] > v; b--)
            set[b] = set[b - 1];
        set[b] = v;
    }
    return m;
}

static void fsai_destroy(hk_pc *pc)
{
    fsai_data *d = pc->data;
    hk_mat_destroy(d->G);
    hk_mat_destroy(d->Gt);
    hk_vec_destroy(d->t);
    free(d);
    pc->data = NULL;
}

static int fsai_setup_host(hk_pc *pc, const hk_bcsr *K, hk_mat *A, hk_options *o)
{
    int ierr = 0, k = 2;
    double tau = 0.05, delta = 0.01;
    hk_csr F = {0}, At = {0}, G = {0}, Gt = {0};
    double *diag = NULL;
    int32_t **rows_c = NULL;
    double **rows_v = NULL;
    int64_t *rowlen = NULL;
    fsai_data *d = NULL;
    HK_CALL(hk_options_get_double(o, "pc.fsai.tau", &tau));
    HK_CALL(hk_options_get_int(o, "pc.fsai.k", &k));
    HK_CALL(hk_options_get_double(o, "pc.fsai.delta", &delta));
    HK_CHECK(tau >= 0 && tau <= 1, HK_ERR_OPTION,
             "option pc.fsai.tau=%g is out of range; use 0..1 (default 0.05)", tau);
    HK_CHECK(k >= 1 && k <= 20, HK_ERR_OPTION,
             "option pc.fsai.k=%d is out of range; use 1..20 (default 2)", k);
    HK_CHECK(delta >= 0 && delta < 1, HK_ERR_OPTION,
             "option pc.fsai.delta=%g is out of range; use 0 <= delta < 1 (default 0.01)", delta);
    HK_CALL(hk_calloc(1, sizeof *d, &d));
    pc->data = d;
    const int64_t n = pc->n;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *diag, &diag));
    HK_TRY(hk_pc_positive_diag(K, "fsai", diag));
    HK_TRY(hk_csr_from_bcsr(K, &F));
    HK_TRY(hk_csr_check_symmetric(&F, "fsai")); /* A[P,P] is gathered from rows only */

    /* 1. sparsified Ã, both triangles: row i of B_p Ã reaches columns c <= i through rows j < i
     * whose entries c may lie above j */
    HK_TRY(hk_csr_alloc(n, n, F.rowptr[n], &At));
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t kk = F.rowptr[i]; kk < F.rowptr[i + 1]; kk++) {
            const int32_t j = F.colind[kk];
            if (j == i || fabs(F.val[kk]) > tau * sqrt(diag[i] * diag[j])) {
                At.colind[q] = j;
                At.val[q++] = F.val[kk];
            }
        }
        At.rowptr[i + 1] = q;
    }

    /* 2-4. per row: pattern, local solve, scaling, post-filtration */
    HK_TRY(hk_calloc((size_t)(n ? n : 1), sizeof *rows_c, &rows_c));
    HK_TRY(hk_calloc((size_t)(n ? n : 1), sizeof *rows_v, &rows_v));
    HK_TRY(hk_calloc((size_t)(n ? n : 1), sizeof *rowlen, &rowlen));
    int64_t bad_row = -1;
    int bad_kind = 0; /* 1: too large, 2: not SPD, 3: memory */
#pragma omp parallel
    {
        int32_t *mark = malloc((size_t)(n ? n : 1) * sizeof *mark);
        int32_t *loc = malloc((size_t)(n ? n : 1) * sizeof *loc);
        int32_t *set = malloc(FSAI_MAX_ROW * sizeof *set);
        double *M = malloc((size_t)FSAI_MAX_ROW * FSAI_MAX_ROW * sizeof *M);
        double *w = malloc(FSAI_MAX_ROW * sizeof *w);
        const int ok = mark && loc && set && M && w;
        if (ok)
            for (int64_t i = 0; i < n; i++)
                mark[i] = loc[i] = -1;
#pragma omp for schedule(dynamic, 64)
        for (int64_t i = 0; i < n; i++) {
            if (!ok) {
#pragma omp critical(fsai_err)
                if (bad_row < 0 || i < bad_row) bad_row = i, bad_kind = 3;
                continue;
            }
            int64_t m = fsai_row_pattern(&At, i, k, mark, set, FSAI_MAX_ROW);
            if (m < 0) {
#pragma omp critical(fsai_err)
                if (bad_row < 0 || i < bad_row) bad_row = i, bad_kind = 1;
                continue;
            }
            /* gather A[P,P] (column-major, symmetric: read row set[a] of A) */
            for (int64_t a = 0; a < m; a++)
                loc[set[a]] = (int32_t)a;
            memset(M, 0, (size_t)m * m * sizeof *M);
            for (int64_t a = 0; a < m; a++) {
                const int32_t r = set[a];
                for (int64_t kk = F.rowptr[r]; kk < F.rowptr[r + 1]; kk++) {
                    const int32_t c = F.colind[kk];
                    if (loc[c] >= 0) M[(size_t)loc[c] * m + a] = F.val[kk];
                }
            }
            for (int64_t a = 0; a < m; a++)
                loc[set[a]] = -1;
            /* the Cholesky overwrites the lower triangle only: the strict upper triangle
             * keeps A[P,P] for the filtration's eps^T A eps */
            int piv = hk_dense_cholesky((int)m, M);
            if (piv >= 0) {
#pragma omp critical(fsai_err)
                if (bad_row < 0 || i < bad_row) bad_row = i, bad_kind = 2;
                continue;
            }
            for (int64_t a = 0; a < m; a++)
                w[a] = 0;
            w[m - 1] = 1;
            hk_dense_cholesky_solve((int)m, M, w);
            const double s = 1 / sqrt(w[m - 1]);
            double nrm = 0;
            for (int64_t a = 0; a < m; a++) {
                w[a] *= s;
                nrm += w[a] * w[a];
            }
            nrm = sqrt(nrm);
            /* post-filtration: eps = dropped entries, e^T A e from the upper triangle of M */
            int64_t kept = 0;
            double eAe = 0;
            for (int64_t a = 0; a < m - 1; a++) {
                if (fabs(w[a]) > delta * nrm) continue;
                for (int64_t b = 0; b < m - 1; b++) {
                    if (fabs(w[b]) > delta * nrm) continue;
                    /* A[P,P](a,b): row min, column max in the upper triangle */
                    int64_t lo = a < b ? a : b, hi = a < b ? b : a;
                    double aab = lo == hi ? diag[set[a]] : M[(size_t)hi * m + lo];
                    eAe += w[a] * aab * w[b];
                }
            }
            const double sc = 1 / sqrt(1 + eAe);
            for (int64_t a = 0; a < m; a++)
                kept += a == m - 1 || fabs(w[a]) > delta * nrm;
            int32_t *rc = malloc((size_t)kept * sizeof *rc);
            double *rv = malloc((size_t)kept * sizeof *rv);
            if (!rc || !rv) {
                free(rc), free(rv);
#pragma omp critical(fsai_err)
                if (bad_row < 0 || i < bad_row) bad_row = i, bad_kind = 3;
                continue;
            }
            int64_t t = 0;
            for (int64_t a = 0; a < m; a++)
                if (a == m - 1 || fabs(w[a]) > delta * nrm) {
                    rc[t] = set[a];
                    rv[t++] = w[a] * sc;
                }
            rows_c[i] = rc;
            rows_v[i] = rv;
            rowlen[i] = kept;
        }
        free(mark), free(loc), free(set), free(M), free(w);
    }
    if (bad_row >= 0) {
        if (bad_kind == 1)
            ierr = hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                                "preconditioner fsai: row %lld of the pattern has more than %d "
                                "entries; raise pc.fsai.tau or lower pc.fsai.k (now %g, %d)",
                                (long long)bad_row, FSAI_MAX_ROW, tau, k);
        else if (bad_kind == 2)
            ierr = hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                                "preconditioner fsai: the local matrix of row %lld is not "
                                "positive definite, so the matrix is not SPD; use pc=sai or "
                                "pc=ilu0 with method=gmres",
                                (long long)bad_row);
        else
            ierr =
                hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                             "preconditioner fsai: out of memory at row %lld", (long long)bad_row);
        goto fail;
    }
    /* assemble G (rows already sorted) and G^T */
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++)
        nnz += rowlen[i];
    HK_TRY(hk_csr_alloc(n, n, nnz, &G));
    for (int64_t i = 0; i < n; i++) {
        G.rowptr[i + 1] = G.rowptr[i] + rowlen[i];
        memcpy(G.colind + G.rowptr[i], rows_c[i], (size_t)rowlen[i] * sizeof *G.colind);
        memcpy(G.val + G.rowptr[i], rows_v[i], (size_t)rowlen[i] * sizeof *G.val);
    }
    HK_TRY(hk_csr_transpose(&G, &Gt));
    HK_TRY(hk_pc_mat_like(pc, A, &G, &d->G));
    HK_TRY(hk_pc_mat_like(pc, A, &Gt, &d->Gt));
    HK_TRY(hk_vec_create(pc->be, n, pc->prec, &d->t));
    d->nnz = nnz;
fail:
    if (rows_c)
        for (int64_t i = 0; i < n; i++)
            free(rows_c[i]);
    if (rows_v)
        for (int64_t i = 0; i < n; i++)
            free(rows_v[i]);
    free(rows_c);
    free(rows_v);
    free(rowlen);
    free(diag);
    hk_csr_free(&F);
    hk_csr_free(&At);
    hk_csr_free(&G);
    hk_csr_free(&Gt);
    return ierr;
}

static int fsai_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    fsai_data *d = pc->data;
    HK_CALL(hk_mat_spmv(d->G, r, d->t));
    return hk_mat_spmv(d->Gt, d->t, z);
}

int64_t hk_pc_fsai_nnz(const hk_pc *pc)
{
    return pc && pc->type == &hk_pc_fsai ? ((const fsai_data *)pc->data)->nnz : -1;
}

/* Set-up still runs on the host: K is copied back from the backend first. */
static int fsai_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    return hk_pc_setup_on_host(pc, K, A, o, fsai_setup_host);
}

const hk_pc_type hk_pc_fsai = {
    .name = "fsai",
    .summary = "static factored sparse approximate inverse G^T G (SPD; two SpMVs per apply)",
    .options = "pc.fsai.tau pc.fsai.k pc.fsai.delta",
    .symmetric = 1,
    .setup = fsai_setup,
    .apply = fsai_apply,
    .destroy = fsai_destroy,
};
