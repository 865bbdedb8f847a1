/* Multilevel inverse-based ILU in the style of ILUPACK (Bollhöfer and Saad, "Multilevel
 * preconditioners constructed from inverse-based ILUs", SISC 27, 2006; the ILUPACK-GMRES
 * paper's preconditioner). Set up on the host, level by level:
 *
 *   1. scale: A0 = Dr A Dc, rows then columns to unit max norm (entries at most 1); or, with
 *      pc.mlilu.matching, match first: a maximum-product matching (solver/pc/matching.c, in
 *      the manner of MC64) gives a row permutation Q0 that puts large entries on the diagonal
 *      and its scaling (A0 = Q0 Dr A Dc: entries at most 1, diagonal 1);
 *   2. order: a symmetric permutation P of A0 (pc.ordering on the pattern of A0 + A0^T; amd:
 *      the fill-reducing order the ILUPACK paper applies before factoring);
 *   3. factor P A0 P^T row by row (IKJ ILU; its row i of L and column i of U are what a Crout
 *      ILU has at step i) with inverse-based pivoting and dropping: the running estimates
 *      nuL_i ~ ||e_i^T L^-1|| and nuU_i ~ ||U^-1 e_i|| (unit factors) come from the
 *      sign-choice estimator y_i = b_i - (L y)_i-part, b_i = -sign(...) = +-1. A row/column
 *      whose estimate exceeds kappa, or whose pivot is (near) zero, is postponed to the end;
 *      l_ij is dropped when |l_ij| nuL_j <= droptol, u_ij (unit) when |u_ij| nuU_i <= droptol;
 *   4. with the accepted rows first (block B) and the postponed last (C), Q P A0 P^T Q^T =
 *      [B F; E C] ~ [L_B 0; L_E I] [U_B U_F; 0 S]: U_F is what the accepted U rows hold in
 *      the postponed columns, L_E and S = C - L_E U_F come from eliminating the postponed rows
 *      with all accepted pivots (the same dropping; S sparsified relative to its row maximum);
 *   5. S is the next level's matrix. The last level (pc.mlilu.levels, or S small) is inverted
 *      densely (partial pivoting) when it has at most pc.mlilu.dense rows (400), else factored by
 * the same ILU without postponement (a zero pivot replaced by 1e-4, as ILUT does).
 *
 * Apply, per level (everything backend objects, no host work):
 *   b1 = Rin_B b, b2 = Rin_C b   (Rin = Q P Q0 Dr: the scaled permutation, split in two)
 *   y1 = L_B^-1 b1, b2 -= L_E y1, x2 = next level's solve of b2, y1 -= U_F x2,
 *   x1 = U_B^-1 y1, z = Rout_B x1 + Rout_C x2   (Rout = Dc P^T Q^T).
 * pc.mlilu.apply=blocks is the memory-saving form of the ILUPACK-GMRES paper (equation 11):
 * L_E and U_F, which carry the fill of eliminating the postponed rows, are dropped once S is
 * formed and the blocks E and F of the scaled, permuted matrix are kept instead:
 *   s = (L_B U_B)^-1 b1, b2 -= E s, x2 = next level's solve of b2,
 *   x1 = s - (L_B U_B)^-1 F x2  (two solves with B's factors per level instead of one).
 * Not symmetric. pc.mlilu.symmetric=1 (the default with CG-type methods, which get the type
 * hk_pc_mlilu_spd) builds the SPD form instead: D A D to unit diagonal, an inverse-based
 * incomplete LDL^T per level (factor_level_sym), symmetric Schur complements, a Cholesky last
 * level; the same apply is then W^T diag(D_B^-1, S^-1) W per level, symmetric positive
 * definite. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlilu.h"

#define MAX_LEVELS 32    /* pc.mlilu.levels at most */
/* pc.ordering's default for the nonsymmetric form: AMD where the build has it (measured in
 * docs/preconditioners.md: 10-35 % less fill, up to 30 % fewer GMRES iterations and several
 * times fewer triangular-solve levels than the natural order on the generated
 * convection-diffusion matrices). The symmetric form keeps the natural order: on 3D
 * elasticity AMD costs it 30 % more CG iterations. */
#ifdef HOOKE_HAVE_AMD
#define MLILU_DEFAULT_ORDERING HK_ORDER_AMD
#else
#define MLILU_DEFAULT_ORDERING HK_ORDER_NATURAL
#endif
#define TINY_PIVOT 1e-12 /* |pivot| below this (entries of the scaled matrix are <= 1) */

typedef struct mlilu_level {
    int64_t n, nB, nC;
    hk_mat *Sinv;                        /* last level, dense inverse (else NULL) */
    hk_mat *RinB, *RinC, *RoutB, *RoutC; /* nB x n, nC x n, n x nB, n x nC */
    void *L, *U;                         /* tri handles of the B block */
    int64_t levels_L, levels_U;
    hk_mat *LE, *UF; /* nC x nB, nB x nC (pc.mlilu.apply=factors) */
    hk_mat *E, *F;   /* nC x nB, nB x nC: the blocks of M (pc.mlilu.apply=blocks) */
    hk_vec *b1, *y1, *x1, *t1, *b2, *t2, *x2, *t0;
    int64_t nnz; /* stored factor entries of this level */
} mlilu_level;

typedef struct mlilu {
    int nlev;
    mlilu_level lev[MAX_LEVELS];
    int method; /* pc.tri */
    double kappa, droptol;
    int dense;     /* pc.mlilu.dense */
    int symmetric; /* the SPD variant: L D L^T levels, symmetric scaling, Cholesky last level */
    int matching;  /* pc.mlilu.matching: 0 off, 1 on, 2 auto (levels with a zero diagonal) */
    int matched_levels;
    int blocks;   /* pc.mlilu.apply=blocks: keep E and F, not L_E and U_F */
    int ordering; /* pc.ordering (HK_ORDER_*) */
    int64_t nnzA, nnz_factors, unmatched;
} mlilu;

static const char *const sym_names[] = {"0", "1", "auto", NULL};
static const char *const matching_names[] = {"off", "on", "auto", NULL};
static const char *const apply_names[] = {"factors", "blocks", NULL};
extern const hk_pc_type hk_pc_mlilu_spd;

/* ---- growable row storage ---------------------------------------------------------------- */

typedef struct rows {
    int64_t n, nnz, cap;
    int64_t *ptr; /* n + 1 */
    int32_t *col;
    double *val;
} rows;

static int rows_init(rows *R, int64_t n)
{
    memset(R, 0, sizeof *R);
    R->n = 0;
    R->cap = 1024;
    HK_CALL(hk_calloc((size_t)n + 1, sizeof *R->ptr, &R->ptr));
    HK_CALL(hk_malloc((size_t)R->cap * sizeof *R->col, &R->col));
    return hk_malloc((size_t)R->cap * sizeof *R->val, &R->val);
}

static int rows_push(rows *R, int32_t c, double v)
{
    if (R->nnz == R->cap) {
        int64_t cap = 2 * R->cap;
        int32_t *col = realloc(R->col, (size_t)cap * sizeof *col);
        HK_CHECK(col, HK_ERR_MEMORY, "pc=mlilu: out of memory for the factor (%lld entries)",
                 (long long)cap);
        R->col = col;
        double *val = realloc(R->val, (size_t)cap * sizeof *val);
        HK_CHECK(val, HK_ERR_MEMORY, "pc=mlilu: out of memory for the factor (%lld entries)",
                 (long long)cap);
        R->val = val;
        R->cap = cap;
    }
    R->col[R->nnz] = c;
    R->val[R->nnz++] = v;
    return 0;
}

static void rows_end(rows *R)
{
    R->ptr[++R->n] = R->nnz;
}

static void rows_free(rows *R)
{
    free(R->ptr);
    free(R->col);
    free(R->val);
    memset(R, 0, sizeof *R);
}

/* ---- min-heap of column indices ---------------------------------------------------------- */

static void heap_push(int32_t *h, int64_t *nh, int32_t v)
{
    int64_t i = (*nh)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static int32_t heap_pop(int32_t *h, int64_t *nh)
{
    const int32_t top = h[0], v = h[--(*nh)];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= *nh) break;
        if (c + 1 < *nh && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    if (*nh > 0) h[i] = v;
    return top;
}

/* ---- CSR assembly ------------------------------------------------------------------------- */

static int cmp_pair(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sort each row of C by column (entries moved with their values). */
static int csr_sort_rows(hk_csr *C)
{
    int64_t maxlen = 1;
    for (int64_t i = 0; i < C->n; i++)
        if (C->rowptr[i + 1] - C->rowptr[i] > maxlen) maxlen = C->rowptr[i + 1] - C->rowptr[i];
    struct {
        int32_t c;
        int32_t pad;
        double v;
    } * tmp;
    HK_CALL(hk_malloc((size_t)maxlen * sizeof *tmp, &tmp));
    for (int64_t i = 0; i < C->n; i++) {
        const int64_t a = C->rowptr[i], len = C->rowptr[i + 1] - a;
        for (int64_t k = 0; k < len; k++) {
            tmp[k].c = C->colind[a + k];
            tmp[k].v = C->val[a + k];
        }
        qsort(tmp, (size_t)len, sizeof *tmp, cmp_pair);
        for (int64_t k = 0; k < len; k++) {
            C->colind[a + k] = tmp[k].c;
            C->val[a + k] = tmp[k].v;
        }
    }
    free(tmp);
    return 0;
}

/* CSR (n x m) of the rows R (nrows of them), columns mapped through map (NULL: identity),
 * sorted; an empty matrix gets an explicit zero so every backend accepts it. */
static int csr_of_rows(const rows *R, int64_t m, hk_csr *C)
{
    const int64_t n = R->n, nnz = R->nnz ? R->nnz : 1;
    HK_CALL(hk_csr_alloc(n, m, nnz, C));
    memcpy(C->rowptr, R->ptr, (size_t)(n + 1) * sizeof *C->rowptr);
    memcpy(C->colind, R->col, (size_t)R->nnz * sizeof *C->colind);
    memcpy(C->val, R->val, (size_t)R->nnz * sizeof *C->val);
    if (!R->nnz && n > 0 && m > 0) {
        C->colind[0] = 0;
        C->val[0] = 0;
        for (int64_t i = 1; i <= n; i++)
            C->rowptr[i] = 1;
    }
    return csr_sort_rows(C);
}

/* ---- one level of the factorisation ------------------------------------------------------- */

typedef struct factor_out {
    int64_t nB, nC;
    int32_t *acc, *post; /* index -> position in B / in C, or -1 */
    rows F;              /* nB rows of B's factor: L (unit, strictly lower), U with diagonal */
    rows UF, LE, S;      /* nB x nC, nC x nB, nC x nC (columns already mapped) */
} factor_out;

static void factor_out_free(factor_out *f)
{
    free(f->acc);
    free(f->post);
    rows_free(&f->F);
    rows_free(&f->UF);
    rows_free(&f->LE);
    rows_free(&f->S);
    memset(f, 0, sizeof *f);
}

/* Entry v of D U in column c of M: to B's factor F where c was accepted, else to U_F. */
static int push_du(factor_out *f, int32_t c, double v)
{
    if (f->acc[c] >= 0) return rows_push(&f->F, f->acc[c], v);
    return rows_push(&f->UF, f->post[c], v);
}

/* Factor the scaled, ordered M (n x n, rows sorted). final: accept every pivot (zero pivots
 * replaced). */
static int factor_level(const hk_csr *M, double kappa, double tau, int final, int level,
                        factor_out *f)
{
    int ierr = 0;
    const int64_t n = M->n;
    const size_t nz = (size_t)(n ? n : 1);
    double *w = NULL, *d = NULL, *yL = NULL, *zU = NULL, *t = NULL, *nuL = NULL, *nuU = NULL;
    int64_t *mark = NULL;
    int32_t *list = NULL, *heap = NULL;
    rows Lr = {0}, Ur = {0}; /* per accepted pivot, indexed by B position; U unit, original cols */
    int64_t *ustart = NULL;
    memset(f, 0, sizeof *f);
    HK_TRY(hk_malloc(nz * sizeof *w, &w));
    HK_TRY(hk_calloc(nz, sizeof *d, &d));
    HK_TRY(hk_calloc(nz, sizeof *yL, &yL));
    HK_TRY(hk_calloc(nz, sizeof *zU, &zU));
    HK_TRY(hk_calloc(nz, sizeof *t, &t));
    HK_TRY(hk_calloc(nz, sizeof *nuL, &nuL));
    HK_TRY(hk_calloc(nz, sizeof *nuU, &nuU));
    HK_TRY(hk_malloc(nz * sizeof *mark, &mark));
    HK_TRY(hk_malloc(nz * sizeof *list, &list));
    HK_TRY(hk_malloc(nz * sizeof *heap, &heap));
    HK_TRY(hk_malloc(nz * sizeof *f->acc, &f->acc));
    HK_TRY(hk_malloc(nz * sizeof *f->post, &f->post));
    HK_TRY(hk_calloc(nz + 1, sizeof *ustart, &ustart));
    HK_TRY(rows_init(&Lr, n));
    HK_TRY(rows_init(&Ur, n));
    int32_t *Bidx = NULL; /* B position -> index */
    HK_TRY(hk_malloc(nz * sizeof *Bidx, &Bidx));
    for (int64_t i = 0; i < n; i++) {
        mark[i] = -1;
        f->acc[i] = f->post[i] = -1;
    }

    /* pass 1 (pass = 0): rows in order, accepted or postponed; pass 2: the postponed rows
     * eliminated by every accepted pivot, giving L_E and S. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            HK_TRY(rows_init(&f->LE, f->nC));
            HK_TRY(rows_init(&f->S, f->nC));
        }
        for (int64_t i = 0; i < n; i++) {
            if (pass == 1 && f->post[i] < 0) continue;
            int64_t nl = 0, nh = 0;
            for (int64_t k = M->rowptr[i]; k < M->rowptr[i + 1]; k++) {
                const int32_t c = M->colind[k];
                w[c] = M->val[k];
                mark[c] = nl;
                list[nl++] = c;
                if (f->acc[c] >= 0) heap_push(heap, &nh, c);
            }
            const int64_t lstart = pass ? f->LE.nnz : Lr.nnz;
            double s = 0;
            while (nh > 0) {
                const int32_t j = heap_pop(heap, &nh);
                const double l = w[j] / d[j];
                w[j] = 0;
                if (fabs(l) * nuL[j] <= tau) continue;
                if (pass)
                    HK_TRY(rows_push(&f->LE, f->acc[j], l));
                else
                    HK_TRY(rows_push(&Lr, j, l));
                s += l * yL[j];
                const int64_t b = f->acc[j];
                for (int64_t k = ustart[b]; k < ustart[b + 1]; k++) {
                    const int32_t c = Ur.col[k];
                    if (mark[c] < 0) {
                        w[c] = 0;
                        mark[c] = nl;
                        list[nl++] = c;
                        if (f->acc[c] >= 0) heap_push(heap, &nh, c);
                    }
                    w[c] -= l * d[j] * Ur.val[k];
                }
            }
            if (pass == 1) {
                double smax = 0;
                for (int64_t q = 0; q < nl; q++)
                    if (f->post[list[q]] >= 0 && fabs(w[list[q]]) > smax) smax = fabs(w[list[q]]);
                for (int64_t q = 0; q < nl; q++) {
                    const int32_t c = list[q];
                    if (f->post[c] >= 0 && (c == i || fabs(w[c]) > tau * smax))
                        HK_TRY(rows_push(&f->S, f->post[c], w[c]));
                    mark[c] = -1;
                }
                rows_end(&f->LE);
                rows_end(&f->S);
                continue;
            }
            double p = mark[i] >= 0 ? w[i] : 0;
            const double nl_est = 1 + fabs(s), nu_est = 1 + fabs(t[i]);
            int accept = isfinite(p) && fabs(p) > TINY_PIVOT && nl_est <= kappa && nu_est <= kappa;
            if (final && !accept) {
                HK_TRY_CHECK(isfinite(p), HK_ERR_NUMERIC,
                             "pc=mlilu: the factor of level %d is not finite at its row %lld; "
                             "use a smaller pc.mlilu.droptol or more pc.mlilu.levels, or "
                             "pc.mlilu.matching=on when the matrix has small diagonal entries",
                             level, (long long)i);
                if (fabs(p) <= TINY_PIVOT) p = p < 0 ? -1e-4 : 1e-4;
                accept = 1;
            }
            if (!accept) {
                f->post[i] = (int32_t)f->nC++;
                Lr.nnz = lstart; /* forget the L row */
            } else {
                const int64_t b = f->nB++;
                f->acc[i] = (int32_t)b;
                Bidx[b] = (int32_t)i;
                d[i] = p;
                nuL[i] = nl_est;
                nuU[i] = nu_est;
                yL[i] = (s >= 0 ? -1 : 1) - s;
                zU[i] = (t[i] >= 0 ? -1 : 1) - t[i];
                rows_end(&Lr);
                for (int64_t q = 0; q < nl; q++) {
                    const int32_t c = list[q];
                    if (c == i || f->acc[c] >= 0 || w[c] == 0) continue;
                    const double u = w[c] / p;
                    if (fabs(u) * nu_est <= tau) continue;
                    HK_TRY(rows_push(&Ur, c, u));
                    t[c] += u * zU[i];
                }
                ustart[b + 1] = Ur.nnz;
            }
            for (int64_t q = 0; q < nl; q++)
                mark[list[q]] = -1;
        }
    }
    /* B's factor and U_F in B / C numbering */
    HK_TRY(rows_init(&f->F, f->nB));
    HK_TRY(rows_init(&f->UF, f->nB));
    for (int64_t b = 0; b < f->nB; b++) {
        const int32_t i = Bidx[b];
        for (int64_t k = Lr.ptr[b]; k < Lr.ptr[b + 1]; k++)
            HK_TRY(rows_push(&f->F, f->acc[Lr.col[k]], Lr.val[k]));
        HK_TRY(rows_push(&f->F, (int32_t)b, d[i]));
        for (int64_t k = ustart[b]; k < ustart[b + 1]; k++) {
            HK_TRY(push_du(f, Ur.col[k], d[i] * Ur.val[k]));
        }
        rows_end(&f->F);
        rows_end(&f->UF);
    }
fail:
    free(w), free(d), free(yL), free(zU), free(t), free(nuL), free(nuU);
    free(mark), free(list), free(heap), free(ustart), free(Bidx);
    rows_free(&Lr);
    rows_free(&Ur);
    if (ierr) factor_out_free(f);
    return ierr;
}

/* ---- the symmetric (SPD) variant: inverse-based incomplete LDL^T ------------------------ */

typedef struct sym_entry {
    int32_t b, c; /* row (B position of its pivot) and column (index of M) */
    double u;     /* unit factor entry u_bc = l_cb */
    int64_t next; /* next entry of column c, in increasing b (-1: last) */
} sym_entry;

static int sym_push(sym_entry **e, int64_t *ne, int64_t *cap, int32_t b, int32_t c, double u)
{
    if (*ne == *cap) {
        const int64_t nc = 2 * *cap;
        sym_entry *m = realloc(*e, (size_t)nc * sizeof *m);
        HK_CHECK(m, HK_ERR_MEMORY, "pc=mlilu: out of memory for the factor (%lld entries)",
                 (long long)nc);
        *e = m;
        *cap = nc;
    }
    (*e)[*ne] = (sym_entry){b, c, u, -1};
    (*ne)++;
    return 0;
}

/* The error for a pivot that is not positive where postponing is no longer possible. */
static int sym_pivot_error(double p, int level, int64_t row)
{
    return hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                        "pc=mlilu (symmetric): the pivot of row %lld of the matrix is %g (not "
                        "positive) on level %d, where postponing cannot cure it; the matrix is "
                        "not positive definite, or the dropping made it indefinite: use a "
                        "smaller pc.mlilu.droptol, or pc.mlilu.symmetric=0 with method=gmres",
                        (long long)row, p, level);
}

/* Symmetric counterpart of factor_level on the symmetric, unit-diagonal M: M = L D L^T with
 * L = U^T, computed by rows of U (Crout: row i of U is formed with column i of U, kept as
 * linked lists of the entries), so the stored factor is exactly of that form whatever is
 * dropped. One estimate nu_i ~ ||e_i^T L^-1|| (= ||U^-1 e_i||) by the sign-choice forward
 * solve; row i is postponed with its column when nu_i > kappa or its pivot is below
 * TINY_PIVOT (not positive). u_ic is dropped when |u_ic| nu_i <= tau. The Schur complement
 * S = C - U_F^T D U_F is formed from the upper triangle and mirrored, so it is exactly
 * symmetric; s_pq is dropped when |s_pq| <= tau sqrt(|s_pp s_qq|). final: nothing is
 * postponed, a pivot that is not positive is an error naming orig[i] (the row of K). */
static int factor_level_sym(const hk_csr *M, double kappa, double tau, int final, int level,
                            const int64_t *orig, factor_out *f)
{
    int ierr = 0;
    const int64_t n = M->n;
    const size_t nz = (size_t)(n ? n : 1);
    double *w = NULL, *d = NULL, *y = NULL, *sd = NULL;
    int64_t *mark = NULL, *head = NULL, *tail = NULL, *ustart = NULL, *cnt = NULL;
    int32_t *list = NULL, *Bidx = NULL;
    sym_entry *e = NULL;
    int64_t ne = 0, cap = 1024;
    rows Su = {0};
    memset(f, 0, sizeof *f);
    HK_TRY(hk_calloc(nz, sizeof *w, &w));
    HK_TRY(hk_calloc(nz, sizeof *d, &d));
    HK_TRY(hk_calloc(nz, sizeof *y, &y));
    HK_TRY(hk_malloc(nz * sizeof *mark, &mark));
    HK_TRY(hk_malloc(nz * sizeof *head, &head));
    HK_TRY(hk_malloc(nz * sizeof *tail, &tail));
    HK_TRY(hk_calloc(nz + 1, sizeof *ustart, &ustart));
    HK_TRY(hk_malloc(nz * sizeof *list, &list));
    HK_TRY(hk_malloc(nz * sizeof *Bidx, &Bidx));
    HK_TRY(hk_malloc(nz * sizeof *f->acc, &f->acc));
    HK_TRY(hk_malloc(nz * sizeof *f->post, &f->post));
    HK_TRY(hk_malloc((size_t)cap * sizeof *e, &e));
    for (int64_t i = 0; i < n; i++) {
        mark[i] = head[i] = tail[i] = -1;
        f->acc[i] = f->post[i] = -1;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t nl = 0;
        /* row i of M in the columns not yet accepted */
        for (int64_t k = M->rowptr[i]; k < M->rowptr[i + 1]; k++) {
            const int32_t c = M->colind[k];
            if (f->acc[c] >= 0) continue;
            w[c] = M->val[k];
            mark[c] = nl;
            list[nl++] = c;
        }
        /* minus u_ji d_j U(j, :) for every accepted j with u_ji != 0 (column i of U) */
        double s = 0;
        for (int64_t q = head[i]; q >= 0; q = e[q].next) {
            const int32_t b = e[q].b, j = Bidx[b];
            const double du = d[j] * e[q].u;
            s += e[q].u * y[j];
            for (int64_t k = ustart[b]; k < ustart[b + 1]; k++) {
                const int32_t c = e[k].c;
                if (f->acc[c] >= 0) continue;
                if (mark[c] < 0) {
                    w[c] = 0;
                    mark[c] = nl;
                    list[nl++] = c;
                }
                w[c] -= du * e[k].u;
            }
        }
        const double p = mark[i] >= 0 ? w[i] : 0, nu = 1 + fabs(s);
        const int pos = isfinite(p) && p > TINY_PIVOT;
        if (final && !pos) {
            ierr = sym_pivot_error(p, level, orig[i]);
            goto fail;
        }
        if (!pos || (!final && nu > kappa)) {
            f->post[i] = (int32_t)f->nC++;
        } else {
            const int32_t b = (int32_t)f->nB++;
            f->acc[i] = b;
            Bidx[b] = (int32_t)i;
            d[i] = p;
            y[i] = (s >= 0 ? -1 : 1) - s;
            for (int64_t q = 0; q < nl; q++) {
                const int32_t c = list[q];
                if (c == i || w[c] == 0) continue;
                const double u = w[c] / p;
                if (fabs(u) * nu <= tau) continue;
                HK_TRY(sym_push(&e, &ne, &cap, b, c, u));
                if (tail[c] >= 0)
                    e[tail[c]].next = ne - 1;
                else
                    head[c] = ne - 1;
                tail[c] = ne - 1;
            }
            ustart[b + 1] = ne;
        }
        for (int64_t q = 0; q < nl; q++)
            mark[list[q]] = -1;
    }
    /* B's factor: row b holds L (column Bidx[b] of U, unit), d, then D U (accepted columns);
     * U_F = D U in the postponed columns; L_E = U_F^T unit (column p of U) */
    HK_TRY(rows_init(&f->F, f->nB));
    HK_TRY(rows_init(&f->UF, f->nB));
    for (int64_t b = 0; b < f->nB; b++) {
        const int32_t i = Bidx[b];
        for (int64_t q = head[i]; q >= 0; q = e[q].next)
            HK_TRY(rows_push(&f->F, e[q].b, e[q].u));
        HK_TRY(rows_push(&f->F, (int32_t)b, d[i]));
        for (int64_t k = ustart[b]; k < ustart[b + 1]; k++) {
            HK_TRY(push_du(f, e[k].c, d[i] * e[k].u));
        }
        rows_end(&f->F);
        rows_end(&f->UF);
    }
    if (f->nC == 0) goto fail; /* done: ierr is 0 */
    HK_TRY(rows_init(&f->LE, f->nC));
    HK_TRY(rows_init(&Su, f->nC));
    HK_TRY(hk_malloc((size_t)f->nC * sizeof *sd, &sd));
    for (int64_t i = 0; i < n; i++) {
        if (f->post[i] < 0) continue;
        int64_t nl = 0;
        for (int64_t k = M->rowptr[i]; k < M->rowptr[i + 1]; k++) {
            const int32_t c = M->colind[k];
            if (f->post[c] < 0 || c < i) continue;
            w[c] = M->val[k];
            mark[c] = nl;
            list[nl++] = c;
        }
        for (int64_t q = head[i]; q >= 0; q = e[q].next) {
            const int32_t b = e[q].b;
            const double dj = d[Bidx[b]], up = e[q].u;
            HK_TRY(rows_push(&f->LE, b, up));
            for (int64_t k = ustart[b]; k < ustart[b + 1]; k++) {
                const int32_t c = e[k].c;
                if (f->post[c] < 0 || c < i) continue;
                if (mark[c] < 0) {
                    w[c] = 0;
                    mark[c] = nl;
                    list[nl++] = c;
                }
                w[c] -= dj * (up * e[k].u); /* the same bits as entry (c, i) would get */
            }
        }
        rows_end(&f->LE);
        sd[f->post[i]] = mark[i] >= 0 ? w[i] : 0;
        for (int64_t q = 0; q < nl; q++) {
            const int32_t c = list[q];
            HK_TRY(rows_push(&Su, f->post[c], w[c]));
            mark[c] = -1;
        }
        rows_end(&Su);
    }
    /* S: the upper triangle's kept entries and their mirror images, by rows */
    HK_TRY(hk_calloc((size_t)f->nC + 1, sizeof *cnt, &cnt));
    for (int64_t p = 0; p < f->nC; p++)
        for (int64_t k = Su.ptr[p]; k < Su.ptr[p + 1]; k++) {
            const int32_t q = Su.col[k];
            if (q != p && !(fabs(Su.val[k]) > tau * sqrt(fabs(sd[p] * sd[q])))) {
                Su.col[k] = -1;
                continue;
            }
            cnt[p + 1]++;
            if (q != p) cnt[q + 1]++;
        }
    for (int64_t p = 0; p < f->nC; p++)
        cnt[p + 1] += cnt[p];
    HK_TRY(hk_calloc((size_t)f->nC + 1, sizeof *f->S.ptr, &f->S.ptr));
    memcpy(f->S.ptr, cnt, ((size_t)f->nC + 1) * sizeof *cnt);
    f->S.n = f->nC;
    f->S.nnz = f->S.cap = cnt[f->nC];
    HK_TRY(hk_malloc((size_t)(f->S.cap ? f->S.cap : 1) * sizeof *f->S.col, &f->S.col));
    HK_TRY(hk_malloc((size_t)(f->S.cap ? f->S.cap : 1) * sizeof *f->S.val, &f->S.val));
    for (int64_t p = 0; p < f->nC; p++)
        for (int64_t k = Su.ptr[p]; k < Su.ptr[p + 1]; k++) {
            const int32_t q = Su.col[k];
            if (q < 0) continue;
            f->S.col[cnt[p]] = q;
            f->S.val[cnt[p]++] = Su.val[k];
            if (q != p) {
                f->S.col[cnt[q]] = (int32_t)p;
                f->S.val[cnt[q]++] = Su.val[k];
            }
        }
fail:
    free(w), free(d), free(y), free(sd), free(mark), free(head), free(tail), free(ustart);
    free(cnt), free(list), free(Bidx), free(e);
    rows_free(&Su);
    if (ierr) factor_out_free(f);
    return ierr;
}

/* ---- set-up --------------------------------------------------------------------------------- */

/* Dense inverse of A (n x n) by LU with partial pivoting, as CSR (every entry stored). */
static int dense_inverse(const hk_csr *A, int level, hk_csr *Inv)
{
    int ierr = 0;
    const int64_t n = A->n;
    double *D = NULL, *X = NULL;
    int64_t *piv = NULL;
    HK_CALL(hk_calloc((size_t)(n * n), sizeof *D, &D));
    HK_TRY(hk_calloc((size_t)(n * n), sizeof *X, &X));
    HK_TRY(hk_malloc((size_t)n * sizeof *piv, &piv));
    double amax = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            D[i * n + A->colind[k]] = A->val[k];
            if (fabs(A->val[k]) > amax) amax = fabs(A->val[k]);
        }
    for (int64_t c = 0; c < n; c++) {
        int64_t p = c;
        for (int64_t r = c + 1; r < n; r++)
            if (fabs(D[r * n + c]) > fabs(D[p * n + c])) p = r;
        HK_TRY_CHECK(fabs(D[p * n + c]) > 1e-14 * amax, HK_ERR_NUMERIC,
                     "pc=mlilu: the last level's matrix (level %d, %lld rows) is singular at its "
                     "column %lld; the matrix may be singular, else use a smaller pc.mlilu.droptol",
                     level, (long long)n, (long long)c);
        piv[c] = p;
        if (p != c)
            for (int64_t k = 0; k < n; k++) {
                double tmp = D[c * n + k];
                D[c * n + k] = D[p * n + k];
                D[p * n + k] = tmp;
            }
        for (int64_t r = c + 1; r < n; r++) {
            const double l = D[r * n + c] /= D[c * n + c];
            if (l != 0)
                for (int64_t k = c + 1; k < n; k++)
                    D[r * n + k] -= l * D[c * n + k];
        }
    }
    for (int64_t e = 0; e < n; e++) { /* column e of the inverse into row-major X */
        double *x = X;                /* work in column e of X with stride n */
        for (int64_t i = 0; i < n; i++)
            x[i * n + e] = 0;
        x[e * n + e] = 1;
        for (int64_t c = 0; c < n; c++) /* the row swaps, in order */
            if (piv[c] != c) {
                double tmp = x[c * n + e];
                x[c * n + e] = x[piv[c] * n + e];
                x[piv[c] * n + e] = tmp;
            }
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < i; k++)
                x[i * n + e] -= D[i * n + k] * x[k * n + e];
        for (int64_t i = n - 1; i >= 0; i--) {
            double s = x[i * n + e];
            for (int64_t k = i + 1; k < n; k++)
                s -= D[i * n + k] * x[k * n + e];
            x[i * n + e] = s / D[i * n + i];
        }
    }
    HK_TRY(hk_csr_alloc(n, n, n * n, Inv));
    for (int64_t i = 0; i < n; i++) {
        Inv->rowptr[i + 1] = (i + 1) * n;
        for (int64_t k = 0; k < n; k++) {
            Inv->colind[i * n + k] = (int32_t)k;
            Inv->val[i * n + k] = X[i * n + k];
        }
    }
fail:
    free(D), free(X), free(piv);
    return ierr;
}

/* Dense inverse of the symmetric A (n x n) by Cholesky, as CSR (every entry stored), exactly
 * symmetric (X = L^-T L^-1 formed from its upper triangle); a pivot that is not positive is
 * an error naming orig[c], the row of K. */
static int dense_inverse_spd(const hk_csr *A, int level, const int64_t *orig, hk_csr *Inv)
{
    int ierr = 0;
    const int64_t n = A->n;
    double *D = NULL, *X = NULL;
    HK_CALL(hk_calloc((size_t)(n * n), sizeof *D, &D));
    HK_TRY(hk_calloc((size_t)(n * n), sizeof *X, &X));
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            D[i * n + A->colind[k]] = A->val[k];
    double p; /* lower triangle of D becomes L (D = L L^T), by rows */
    const int64_t c = hk_dense_cholesky(n, D, n, 1, 1e-14, &p);
    if (c >= 0) {
        ierr = sym_pivot_error(p, level, orig[c]);
        goto fail;
    }
    for (int64_t i = 0; i < n; i++) { /* L^-1 in place of the lower triangle, by columns */
        D[i * n + i] = 1 / D[i * n + i];
        for (int64_t r = i + 1; r < n; r++) {
            double s = 0;
            for (int64_t k = i; k < r; k++)
                s -= D[r * n + k] * D[k * n + i];
            D[r * n + i] = s / D[r * n + r];
        }
    }
    for (int64_t i = 0; i < n; i++) /* X = L^-T L^-1, upper triangle mirrored */
        for (int64_t j = i; j < n; j++) {
            double s = 0;
            for (int64_t k = j; k < n; k++)
                s += D[k * n + i] * D[k * n + j];
            X[i * n + j] = X[j * n + i] = s;
        }
    HK_TRY(hk_csr_alloc(n, n, n * n, Inv));
    for (int64_t i = 0; i < n; i++) {
        Inv->rowptr[i + 1] = (i + 1) * n;
        for (int64_t k = 0; k < n; k++) {
            Inv->colind[i * n + k] = (int32_t)k;
            Inv->val[i * n + k] = X[i * n + k];
        }
    }
fail:
    free(D), free(X);
    return ierr;
}

/* The node ordering kind applied to the pattern of A + A^T (bs = 1). */
static int order_level(const hk_csr *A, int kind, int32_t **perm)
{
    int ierr = 0;
    hk_csr T = {0}, P = {0};
    int64_t ncol = 0;
    *perm = NULL;
    if (kind == HK_ORDER_NATURAL) return 0;
    HK_CALL(hk_csr_transpose(A, &T));
    HK_TRY(hk_csr_alloc(A->n, A->n, A->rowptr[A->n] + T.rowptr[A->n], &P));
    int64_t q = 0;
    for (int64_t i = 0; i < A->n; i++) { /* merge two sorted rows */
        int64_t a = A->rowptr[i], b = T.rowptr[i];
        while (a < A->rowptr[i + 1] || b < T.rowptr[i + 1]) {
            int32_t c;
            if (b >= T.rowptr[i + 1] || (a < A->rowptr[i + 1] && A->colind[a] < T.colind[b]))
                c = A->colind[a++];
            else if (a >= A->rowptr[i + 1] || T.colind[b] < A->colind[a])
                c = T.colind[b++];
            else
                c = A->colind[a++], b++;
            P.colind[q] = c;
            P.val[q++] = 1;
        }
        P.rowptr[i + 1] = q;
    }
    hk_bcsr view = {.bs = 1,
                    .nbrows = P.n,
                    .nbcols = P.n,
                    .rowptr = P.rowptr,
                    .colind = P.colind,
                    .val = P.val};
    HK_TRY(hk_node_ordering(&view, kind, perm, &ncol));
fail:
    hk_csr_free(&T);
    hk_csr_free(&P);
    return ierr;
}

static int mat_of_rows(hk_pc *pc, const rows *R, int64_t m, hk_mat **out)
{
    hk_csr C = {0};
    HK_CALL(csr_of_rows(R, m, &C));
    int ierr = hk_pc_mat_like(pc, NULL, &C, out);
    hk_csr_free(&C);
    return ierr;
}

/* Build level lev from its matrix A (host, n x n) whose rows are the rows orig of K; *S
 * receives the next level's matrix (n = 0 when this level is the last) and *orig_next its
 * rows of K. */
static int setup_level(hk_pc *pc, mlilu *ml, int lev, int ordering, int final, const hk_csr *A,
                       const int64_t *orig, hk_csr *S, int64_t **orig_next)
{
    int ierr = 0;
    const hk_backend_ops *be = pc->be;
    mlilu_level *L = &ml->lev[lev];
    const int64_t n = A->n;
    double *dr = NULL, *dc = NULL;
    int32_t *perm = NULL, *iperm = NULL, *rowof = NULL, *rowsrc = NULL;
    hk_csr M = {0}, B = {0}, Fc = {0}, Inv = {0};
    hk_bmat Fb = {0}; /* B's factor on the backend, until the triangular solves are set up */
    factor_out f = {0};
    rows Ri = {0}, Rc = {0}, Ob = {0}, Oc = {0}, Eb = {0}, Fb2 = {0};
    int64_t *orig_M = NULL; /* index of M -> row of K */
    memset(S, 0, sizeof *S);
    *orig_next = NULL;
    L->n = n;
    if (final && n <= ml->dense) {
        HK_CALL(ml->symmetric ? dense_inverse_spd(A, lev, orig, &Inv)
                              : dense_inverse(A, lev, &Inv));
        ierr = hk_pc_mat_like(pc, NULL, &Inv, &L->Sinv);
        L->nnz = n * n;
        hk_csr_free(&Inv);
        return ierr;
    }
    /* matching on this level: on, or (auto) where a diagonal entry is zero or missing, the
     * rows that an ILU without pivoting cannot take */
    int match = ml->matching == 1;
    for (int64_t i = 0; ml->matching == 2 && !match && i < n; i++) {
        double a = 0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i) a = A->val[k];
        match = a == 0;
    }
    ml->matched_levels += match;
    /* 1. scaling to unit max norm, rows then columns; symmetric: to unit diagonal, D A D */
    HK_TRY(hk_malloc((size_t)n * sizeof *dr, &dr));
    HK_TRY(hk_calloc((size_t)n, sizeof *dc, &dc));
    for (int64_t i = 0; ml->symmetric && i < n; i++) {
        double a = 0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->colind[k] == i) a = A->val[k];
        if (!(isfinite(a) && a > 0)) {
            ierr = lev ? sym_pivot_error(a, lev, orig[i])
                       : hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                                      "pc=mlilu (symmetric): the diagonal entry of row %lld is "
                                      "%g, so the matrix is not positive definite; use "
                                      "pc.mlilu.symmetric=0 with method=gmres",
                                      (long long)orig[i], a);
            goto fail;
        }
        dr[i] = dc[i] = 1 / sqrt(a);
    }
    for (int64_t i = 0; !ml->symmetric && !match && i < n; i++) {
        double m = 0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (fabs(A->val[k]) > m) m = fabs(A->val[k]);
        HK_TRY_CHECK(m > 0 && isfinite(m), HK_ERR_NUMERIC,
                     "pc=mlilu: row %lld of the level-%d matrix is zero or not finite, so the "
                     "matrix is singular; check the matrix",
                     (long long)i, lev);
        dr[i] = 1 / m;
    }
    for (int64_t i = 0; !ml->symmetric && !match && i < n; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (fabs(A->val[k]) * dr[i] > dc[A->colind[k]])
                dc[A->colind[k]] = fabs(A->val[k]) * dr[i];
    for (int64_t j = 0; !ml->symmetric && !match && j < n; j++) {
        HK_TRY_CHECK(dc[j] > 0, HK_ERR_NUMERIC,
                     "pc=mlilu: column %lld of the level-%d matrix is zero, so the matrix is "
                     "singular; check the matrix",
                     (long long)j, lev);
        dc[j] = 1 / dc[j];
    }
    /* 1'. matching: row rowof[j] of A becomes row j, so the large entries reach the diagonal,
     * with the matching's scaling (Dr A Dc at most 1, 1 on the diagonal) */
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *rowof, &rowof));
    for (int64_t j = 0; j < n; j++)
        rowof[j] = (int32_t)j;
    if (match) {
        int64_t unm = 0;
        HK_TRY(hk_mc64_matching(A, rowof, dr, dc, &unm));
        ml->unmatched += unm;
        HK_TRY(hk_csr_alloc(n, n, A->rowptr[n], &B));
        for (int64_t j = 0, q = 0; j < n; j++) {
            const int64_t i = rowof[j];
            for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++, q++) {
                B.colind[q] = A->colind[p];
                B.val[q] = A->val[p];
            }
            B.rowptr[j + 1] = q;
        }
    }
    /* 2. ordering of the matched matrix (pattern of B + B^T); M = P Dr B Dc P^T, its row k
     * the row rowsrc[k] = rowof[perm[k]] of A, its column k the column perm[k] */
    HK_TRY(order_level(match ? &B : A, ordering, &perm));
    HK_TRY(hk_malloc((size_t)n * sizeof *iperm, &iperm));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *rowsrc, &rowsrc));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *orig_M, &orig_M));
    for (int64_t k = 0; k < n; k++) {
        iperm[perm ? perm[k] : k] = (int32_t)k;
        rowsrc[k] = rowof[perm ? perm[k] : k];
        orig_M[k] = orig[rowsrc[k]];
    }
    HK_TRY(hk_csr_alloc(n, n, A->rowptr[n], &M));
    for (int64_t k = 0, q = 0; k < n; k++) {
        const int64_t i = rowsrc[k];
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++, q++) {
            M.colind[q] = iperm[A->colind[p]];
            /* the scale factors' product first, so a symmetric A gives a symmetric M */
            M.val[q] = A->val[p] * (dr[i] * dc[A->colind[p]]);
        }
        M.rowptr[k + 1] = q;
    }
    HK_TRY(csr_sort_rows(&M));
    /* 3-4. the factorisation; an all-postponed level becomes the last one */
    if (ml->symmetric)
        HK_TRY(factor_level_sym(&M, ml->kappa, ml->droptol, final, lev, orig_M, &f));
    else
        HK_TRY(factor_level(&M, ml->kappa, ml->droptol, final, lev, &f));
    if (f.nB == 0) {
        factor_out_free(&f);
        if (ml->symmetric)
            HK_TRY(factor_level_sym(&M, ml->kappa, ml->droptol, 1, lev, orig_M, &f));
        else
            HK_TRY(factor_level(&M, ml->kappa, ml->droptol, 1, lev, &f));
    }
    L->nB = f.nB;
    L->nC = f.nC;
    if (ml->blocks && f.nC > 0) {
        /* the couplings as they stand in M: F = M(B, C), E = M(C, B) */
        HK_TRY(rows_init(&Fb2, f.nB));
        HK_TRY(rows_init(&Eb, f.nC));
        for (int64_t k = 0; k < n; k++) {
            const int acc = f.acc[k] >= 0;
            for (int64_t p = M.rowptr[k]; p < M.rowptr[k + 1]; p++) {
                const int32_t c = M.colind[p];
                if (acc && f.post[c] >= 0) HK_TRY(rows_push(&Fb2, f.post[c], M.val[p]));
                if (!acc && f.acc[c] >= 0) HK_TRY(rows_push(&Eb, f.acc[c], M.val[p]));
            }
            if (acc)
                rows_end(&Fb2);
            else
                rows_end(&Eb);
        }
        L->nnz = f.F.nnz + Fb2.nnz + Eb.nnz;
    } else {
        L->nnz = f.F.nnz + f.UF.nnz + (f.LE.n ? f.LE.nnz : 0);
    }
    /* the scaled permutations, split into the B and C parts */
    HK_TRY(rows_init(&Ri, f.nB));
    HK_TRY(rows_init(&Rc, f.nC));
    HK_TRY(rows_init(&Ob, n));
    HK_TRY(rows_init(&Oc, n));
    for (int64_t k = 0; k < n; k++) /* k: index of M, ascending = B order and C order */
        if (f.acc[k] >= 0) {
            const int64_t i = rowsrc[k];
            HK_TRY(rows_push(&Ri, (int32_t)i, dr[i]));
            rows_end(&Ri);
        }
    for (int64_t k = 0; k < n; k++)
        if (f.post[k] >= 0) {
            const int64_t i = rowsrc[k];
            HK_TRY(rows_push(&Rc, (int32_t)i, dr[i]));
            rows_end(&Rc);
        }
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = iperm[i];
        if (f.acc[k] >= 0) HK_TRY(rows_push(&Ob, f.acc[k], dc[i]));
        if (f.post[k] >= 0) HK_TRY(rows_push(&Oc, f.post[k], dc[i]));
        rows_end(&Ob);
        rows_end(&Oc);
    }
    HK_TRY(mat_of_rows(pc, &Ri, n, &L->RinB));
    HK_TRY(mat_of_rows(pc, &Ob, f.nB, &L->RoutB));
    /* B's triangular factors */
    HK_TRY(csr_of_rows(&f.F, f.nB, &Fc));
    HK_TRY(hk_csr_upload(be, &Fc, &Fb));
    HK_TRY(be->tri_setup(&Fb, 0, 1, ml->method, pc->prec, &L->L, &L->levels_L));
    HK_TRY(be->tri_setup(&Fb, 1, 0, ml->method, pc->prec, &L->U, &L->levels_U));
    hk_bmat_free(&Fb); /* the handles keep their own copies */
    HK_TRY(hk_vec_create(be, f.nB, pc->prec, &L->b1));
    HK_TRY(hk_vec_create(be, f.nB, pc->prec, &L->y1));
    HK_TRY(hk_vec_create(be, f.nB, pc->prec, &L->x1));
    if (f.nC > 0) {
        HK_TRY(mat_of_rows(pc, &Rc, n, &L->RinC));
        HK_TRY(mat_of_rows(pc, &Oc, f.nC, &L->RoutC));
        if (ml->blocks) {
            HK_TRY(mat_of_rows(pc, &Eb, f.nB, &L->E));
            HK_TRY(mat_of_rows(pc, &Fb2, f.nC, &L->F));
        } else {
            HK_TRY(mat_of_rows(pc, &f.LE, f.nB, &L->LE));
            HK_TRY(mat_of_rows(pc, &f.UF, f.nC, &L->UF));
        }
        HK_TRY(hk_vec_create(be, f.nB, pc->prec, &L->t1));
        HK_TRY(hk_vec_create(be, f.nC, pc->prec, &L->b2));
        HK_TRY(hk_vec_create(be, f.nC, pc->prec, &L->t2));
        HK_TRY(hk_vec_create(be, f.nC, pc->prec, &L->x2));
        HK_TRY(hk_vec_create(be, n, pc->prec, &L->t0));
        HK_TRY(csr_of_rows(&f.S, f.nC, S));
        HK_TRY(hk_malloc((size_t)f.nC * sizeof **orig_next, orig_next));
        for (int64_t k = 0; k < n; k++)
            if (f.post[k] >= 0) (*orig_next)[f.post[k]] = orig_M[k];
    }
fail:
    free(dr), free(dc), free(perm), free(iperm), free(orig_M), free(rowof), free(rowsrc);
    hk_csr_free(&M);
    hk_csr_free(&B);
    rows_free(&Eb), rows_free(&Fb2);
    hk_csr_free(&Fc);
    hk_bmat_free(&Fb);
    factor_out_free(&f);
    rows_free(&Ri), rows_free(&Rc), rows_free(&Ob), rows_free(&Oc);
    return ierr;
}

static int mlilu_setup_host(hk_pc *pc, const hk_bcsr *K, hk_mat *A, hk_options *o)
{
    (void)A;
    int ierr = 0;
    const hk_backend_ops *be = pc->be;
    double kappa = 5, droptol = 1e-2;
    int levels = 10, dense = 400, ordering = -1, method = be == &hk_backend_cpu ? 0 : 2,
        symmetric = 2, matching = 2, blocks = 0;
    hk_csr Al = {0}, Sn = {0};
    int64_t *orig = NULL, *orig_next = NULL;
    HK_CALL(hk_options_get_choice(o, "pc.mlilu.symmetric", sym_names, &symmetric));
    /* the type CG-type methods get (hk_pc_mlilu's symmetric_variant) must be symmetric */
    const int for_cg = pc->type == &hk_pc_mlilu_spd;
    HK_CHECK(!(for_cg && symmetric == 0), HK_ERR_OPTION,
             "option pc.mlilu.symmetric=0 asks for the nonsymmetric multilevel ILU, which the "
             "CG-type methods cannot use; drop the option (or set 1), or use method=gmres, "
             "fgmres or bicgstab");
    if (symmetric == 2) symmetric = for_cg;
    HK_CALL(hk_options_get_choice(o, "pc.mlilu.matching", matching_names, &matching));
    HK_CALL(hk_options_get_choice(o, "pc.mlilu.apply", apply_names, &blocks));
    HK_CHECK(!(symmetric && matching == 1), HK_ERR_OPTION,
             "option pc.mlilu.matching=on permutes rows only, which the symmetric form "
             "(pc.mlilu.symmetric=1, what CG-type methods get) cannot take; drop the option, or "
             "use pc.mlilu.symmetric=0 with method=gmres, fgmres or bicgstab");
    if (symmetric) matching = 0;
    HK_CALL(hk_options_get_double(o, "pc.mlilu.kappa", &kappa));
    HK_CALL(hk_options_get_double(o, "pc.mlilu.droptol", &droptol));
    HK_CALL(hk_options_get_int(o, "pc.mlilu.levels", &levels));
    HK_CALL(hk_options_get_int(o, "pc.mlilu.dense", &dense));
    HK_CALL(hk_options_get_choice(o, "pc.ordering", hk_ordering_names, &ordering));
    if (ordering < 0) ordering = symmetric ? HK_ORDER_NATURAL : MLILU_DEFAULT_ORDERING;
    HK_CALL(hk_options_get_choice(o, "pc.tri", hk_tri_method_names, &method));
    HK_CHECK(isfinite(kappa) ? kappa >= 1 : kappa > 0, HK_ERR_OPTION,
             "option pc.mlilu.kappa=%g is below 1 (the bound on the inverse factors' norms is "
             "at least 1); use a value such as 5 (the default) or 10",
             kappa);
    HK_CHECK(droptol >= 0 && droptol < 1, HK_ERR_OPTION,
             "option pc.mlilu.droptol=%g is outside [0, 1); use a value such as 1e-2 (the "
             "default), or 0 to drop nothing",
             droptol);
    HK_CHECK(levels >= 1 && levels <= MAX_LEVELS, HK_ERR_OPTION,
             "option pc.mlilu.levels=%d is outside 1..%d; use a value such as 10 (the default)",
             levels, MAX_LEVELS);
    HK_CHECK(dense >= 0 && dense <= 4000, HK_ERR_OPTION,
             "option pc.mlilu.dense=%d is outside 0..4000 (rows of a last level inverted "
             "densely); use a value such as 400 (the default)",
             dense);
    HK_CHECK(be->tri_setup && be->tri_solve && be->tri_destroy, HK_ERR_UNSUPPORTED,
             "mlilu is not available on the %s backend (it has no triangular solve); use "
             "jacobi, bjacobi, poly, fsai or sai, or backend=cpu",
             be->name);
    mlilu *ml;
    HK_CALL(hk_calloc(1, sizeof *ml, &ml));
    pc->data = ml; /* hk_pc_destroy cleans up on failure */
    ml->kappa = kappa;
    ml->droptol = droptol;
    ml->method = method;
    ml->dense = dense;
    ml->symmetric = symmetric;
    ml->matching = matching;
    ml->blocks = blocks;
    ml->ordering = ordering;
    HK_CALL(hk_csr_from_bcsr(K, &Al));
    ml->nnzA = Al.rowptr[Al.n];
    if (symmetric) HK_TRY(hk_csr_check_symmetric(&Al, "mlilu (pc.mlilu.symmetric=1)"));
    HK_TRY(hk_malloc((size_t)(Al.n ? Al.n : 1) * sizeof *orig, &orig));
    for (int64_t i = 0; i < Al.n; i++)
        orig[i] = i;
    for (int l = 0; l < levels; l++) {
        const int final = l == levels - 1 || Al.n <= dense;
        ml->nlev = l + 1;
        HK_TRY(setup_level(pc, ml, l, ordering, final, &Al, orig, &Sn, &orig_next));
        ml->nnz_factors += ml->lev[l].nnz;
        hk_csr_free(&Al);
        Al = Sn;
        memset(&Sn, 0, sizeof Sn);
        free(orig);
        orig = orig_next;
        orig_next = NULL;
        if (Al.n == 0) break;
    }
    HK_TRY_CHECK(Al.n == 0, HK_ERR_INTERNAL, "pc=mlilu: level %d left a Schur complement",
                 ml->nlev);
fail:
    hk_csr_free(&Al);
    hk_csr_free(&Sn);
    free(orig);
    free(orig_next);
    return ierr;
}

static int mlilu_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    return hk_pc_setup_on_host(pc, K, A, o, mlilu_setup_host);
}

static int level_apply(hk_pc *pc, mlilu *ml, int l, const hk_vec *b, hk_vec *z)
{
    const hk_backend_ops *be = pc->be;
    mlilu_level *L = &ml->lev[l];
    if (L->Sinv) return be->mat_spmv(L->Sinv, b, z);
    HK_CALL(be->mat_spmv(L->RinB, b, L->b1));
    HK_CALL(be->tri_solve(L->L, L->b1, L->y1));
    if (ml->blocks) { /* the paper's equation (11): two B solves, the blocks E and F of M */
        HK_CALL(be->tri_solve(L->U, L->y1, L->x1)); /* s_B = (L D U)^-1 b1 */
        if (L->nC > 0) {
            HK_CALL(be->mat_spmv(L->RinC, b, L->b2));
            HK_CALL(be->mat_spmv(L->E, L->x1, L->t2));
            HK_CALL(be->vec_axpby(L->b2, -1.0, L->t2, 1.0)); /* y_C = b2 - E s_B */
            HK_CALL(level_apply(pc, ml, l + 1, L->b2, L->x2));
            HK_CALL(be->mat_spmv(L->F, L->x2, L->t1));
            HK_CALL(be->tri_solve(L->L, L->t1, L->b1));
            HK_CALL(be->tri_solve(L->U, L->b1, L->t1)); /* (L D U)^-1 F x_C */
            HK_CALL(be->vec_axpby(L->x1, -1.0, L->t1, 1.0));
        }
    } else if (L->nC > 0) {
        HK_CALL(be->mat_spmv(L->RinC, b, L->b2));
        HK_CALL(be->mat_spmv(L->LE, L->y1, L->t2));
        HK_CALL(be->vec_axpby(L->b2, -1.0, L->t2, 1.0));
        HK_CALL(level_apply(pc, ml, l + 1, L->b2, L->x2));
        HK_CALL(be->mat_spmv(L->UF, L->x2, L->t1));
        HK_CALL(be->vec_axpby(L->y1, -1.0, L->t1, 1.0));
    }
    if (!ml->blocks) HK_CALL(be->tri_solve(L->U, L->y1, L->x1));
    HK_CALL(be->mat_spmv(L->RoutB, L->x1, z));
    if (L->nC > 0) {
        HK_CALL(be->mat_spmv(L->RoutC, L->x2, L->t0));
        HK_CALL(be->vec_axpby(z, 1.0, L->t0, 1.0));
    }
    return 0;
}

static int mlilu_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    return level_apply(pc, pc->data, 0, r, z);
}

static void mlilu_destroy(hk_pc *pc)
{
    mlilu *ml = pc->data;
    if (!ml) return;
    for (int l = 0; l < MAX_LEVELS; l++) {
        mlilu_level *L = &ml->lev[l];
        hk_mat *mats[] = {L->Sinv, L->RinB, L->RinC, L->RoutB, L->RoutC, L->LE, L->UF, L->E, L->F};
        for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++)
            hk_mat_destroy(mats[k]);
        hk_vec *vecs[] = {L->b1, L->y1, L->x1, L->t1, L->b2, L->t2, L->x2, L->t0};
        for (size_t k = 0; k < sizeof vecs / sizeof vecs[0]; k++)
            hk_vec_destroy(vecs[k]);
        if (L->L) pc->be->tri_destroy(L->L);
        if (L->U) pc->be->tri_destroy(L->U);
    }
    free(ml);
    pc->data = NULL;
}

static void mlilu_describe(const hk_pc *pc, char *buf, size_t len)
{
    const mlilu *ml = pc->data;
    if (!ml) {
        snprintf(buf, len, "-");
        return;
    }
    int w = snprintf(buf, len, "%d levels (rows", ml->nlev);
    for (int l = 0; l < ml->nlev && w > 0 && (size_t)w < len; l++)
        w += snprintf(buf + w, len - (size_t)w, "%s%lld", l ? " " : " ", (long long)ml->lev[l].n);
    char matched[48] = "";
    if (ml->matched_levels)
        snprintf(matched, sizeof matched, ", matching on %d of %d levels", ml->matched_levels,
                 ml->nlev);
    if (w > 0 && (size_t)w < len)
        snprintf(buf + w, len - (size_t)w,
                 "), fill %.2f, kappa %g, droptol %g%s, %s order%s%s, level 0 solves %lld + "
                 "%lld levels",
                 ml->nnzA ? (double)ml->nnz_factors / (double)ml->nnzA : 0.0, ml->kappa,
                 ml->droptol, ml->symmetric ? ", symmetric (LDL^T)" : "",
                 hk_ordering_names[ml->ordering], matched,
                 ml->blocks ? ", apply with the blocks E, F" : "", (long long)ml->lev[0].levels_L,
                 (long long)ml->lev[0].levels_U);
}

int hk_pc_mlilu_info(const hk_pc *pc, int *nlev, int64_t *rows, double *fill)
{
    if (!pc || (pc->type != &hk_pc_mlilu && pc->type != &hk_pc_mlilu_spd) || !pc->data) return -1;
    const mlilu *ml = pc->data;
    *nlev = ml->nlev;
    for (int l = 0; rows && l < ml->nlev; l++)
        rows[l] = ml->lev[l].n;
    *fill = ml->nnzA ? (double)ml->nnz_factors / (double)ml->nnzA : 0.0;
    return 0;
}

#define MLILU_OPTIONS                                                                              \
    "pc.tri pc.ordering pc.mlilu.kappa pc.mlilu.droptol pc.mlilu.levels pc.mlilu.dense "           \
    "pc.mlilu.symmetric pc.mlilu.matching pc.mlilu.apply"

const hk_pc_type hk_pc_mlilu = {
    .name = "mlilu",
    .summary = "multilevel inverse-based ILU (ILUPACK style): postponed pivots, Schur levels; "
               "an SPD LDL^T form with CG-type methods",
    .options = MLILU_OPTIONS,
    .symmetric = 0,
    .symmetric_variant = &hk_pc_mlilu_spd,
    .setup = mlilu_setup,
    .apply = mlilu_apply,
    .destroy = mlilu_destroy,
    .describe = mlilu_describe,
};

/* What CG-type methods get for pc=mlilu: the same set-up, symmetric by default. */
const hk_pc_type hk_pc_mlilu_spd = {
    .name = "mlilu",
    .summary = "multilevel inverse-based incomplete LDL^T (SPD form of mlilu)",
    .options = MLILU_OPTIONS,
    .symmetric = 1,
    .setup = mlilu_setup,
    .apply = mlilu_apply,
    .destroy = mlilu_destroy,
    .describe = mlilu_describe,
};
