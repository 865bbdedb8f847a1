/* hk_eigen: the lowest eigenpairs of K x = lambda M x from options by name. The set-up is
 * hk_solver's (backend, upload and check, storage format, preconditioner, near-null space) on
 * the shifted matrix K - sigma M, definite for sigma < 0 even when K is singular (a
 * free-floating part); M gets the same format on the same backend; LOBPCG (lobpcg.c) then
 * runs on the pencil (K, M), multiplying K as (K - sigma M) + sigma M. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eigen_impl.h"

struct hk_eigen {
    hk_solver *s; /* K - sigma M: backend, format, preconditioner */
    hk_mat *M;    /* M on the backend, NULL for the identity */
    hk_lobpcg L;
    int64_t n;
    double sigma;
    int shift_auto;
    double tol;
    int maxit, block, monitor;
    double setup_seconds;
};

#define HK_EIGEN_KEYS "eigen.tol, eigen.maxit, eigen.block, eigen.shift, monitor"
#define HK_EIGEN_TOL 1e-6
#define HK_EIGEN_MAXIT 1000
/* eigen.shift=auto: sigma = -HK_EIGEN_AUTO_SHIFT trace(K) / trace(M), 1e-8 of the pencil's
 * mean eigenvalue: far below the lowest flexible mode of any mesh (the preconditioner of
 * K - sigma M stays one of K there), far above fp64's rounding of K (the null space's pivots
 * stay positive in AMG's coarse Cholesky). Two free chains (a double zero eigenvalue) with
 * pc=amg converge to 1e-8 in 8 iterations with 1e-8, 1e-7 and 1e-6 alike (7 with 1e-6). */
#define HK_EIGEN_AUTO_SHIFT 1e-8

/* Keys of the linear solver that have no meaning for the eigensolver. */
static int check_keys(const hk_options *o)
{
    static const char *const linear[] = {"method",  "tol",           "atol",        "maxit",
                                         "restart", "history",       "check_every", "stagnation",
                                         "graphs",  "replace_every", NULL};
    static const char *const eigen[] = {"eigen.tol", "eigen.maxit", "eigen.block", "eigen.shift",
                                        NULL};
    for (int i = 0; i < hk_options_count(o); i++) {
        const char *key = hk_options_key(o, i);
        int bad =
            !strncmp(key, "inner.", 6) || !strncmp(key, "ksp.", 4) || !strncmp(key, "mpk.", 4);
        for (int j = 0; linear[j] && !bad; j++)
            bad = !strcmp(key, linear[j]);
        HK_CHECK(!bad, HK_ERR_OPTION,
                 "option %s sets the linear solver and has no use with the eigensolver; its "
                 "options are %s and the preconditioner's (pc, pc.*, format, precision, "
                 "backend)",
                 key, HK_EIGEN_KEYS);
        if (strncmp(key, "eigen.", 6)) continue;
        int known = 0;
        for (int j = 0; eigen[j] && !known; j++)
            known = !strcmp(key, eigen[j]);
        HK_CHECK(known, HK_ERR_OPTION, "unknown option '%s'; the eigensolver's options are %s", key,
                 HK_EIGEN_KEYS);
    }
    return 0;
}

/* Block row i's diagonal block entries (r, r) summed: the trace of a block CSR. */
static double trace(const hk_bcsr *A)
{
    double t = 0;
    const int bs = A->bs;
    for (int64_t i = 0; i < A->nbrows; i++) {
        const int64_t q = hk_find_block(A->rowptr, A->colind, i, i);
        if (q < 0) continue;
        for (int r = 0; r < bs; r++)
            t += A->val[((size_t)q * bs + r) * bs + r];
    }
    return t;
}

/* The largest absolute row sum of A: ||A||_inf, an upper bound of ||A||_2. */
static double norm_inf(const hk_bcsr *A)
{
    const int bs = A->bs;
    double best = 0;
#pragma omp parallel for reduction(max : best) schedule(static) if (A->nbrows > 4096)
    for (int64_t i = 0; i < A->nbrows; i++)
        for (int r = 0; r < bs; r++) {
            double s = 0;
            for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
                for (int c = 0; c < bs; c++)
                    s += fabs(A->val[((size_t)q * bs + r) * bs + c]);
            if (s > best) best = s;
        }
    return best;
}

/* M must match K and be usable as a mass matrix: finite values, a positive diagonal. */
static int check_mass(const hk_bcsr *K, const hk_bcsr *M, hk_bcsr *Mb, const hk_bcsr **Mout)
{
    HK_CALL(hk_fmt_check_bcsr(M));
    const int64_t nk = K->nbrows * K->bs, nm = M->nbrows * M->bs;
    HK_CHECK(M->nbrows * M->bs == M->nbcols * M->bs && nm == nk, HK_ERR_ARG,
             "the mass matrix is %lld x %lld and K is %lld x %lld; they must have the same "
             "size",
             (long long)nm, (long long)(M->nbcols * M->bs), (long long)nk, (long long)nk);
    *Mout = M;
    if (M->bs != K->bs) {
        HK_CHECK(M->bs == 1, HK_ERR_ARG,
                 "the mass matrix has blocks of %d and K blocks of %d; give M with K's block "
                 "size or as scalar entries",
                 M->bs, K->bs);
        HK_CALL(hk_bcsr_to_blocks(M, K->bs, Mb));
        *Mout = Mb;
    }
    const hk_bcsr *A = *Mout;
    const int bs = A->bs;
    for (int64_t i = 0; i < A->nbrows; i++) {
        for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
            for (int e = 0; e < bs * bs; e++) {
                const double v = A->val[(size_t)q * bs * bs + e];
                HK_CHECK(isfinite(v), HK_ERR_NUMERIC,
                         "mass matrix entry at row %lld, column %lld is %g; M needs finite "
                         "values",
                         (long long)(i * bs + e / bs + 1),
                         (long long)(A->colind[q] * bs + e % bs + 1), v);
            }
        const int64_t q = hk_find_block(A->rowptr, A->colind, i, i);
        for (int r = 0; r < bs; r++) {
            const double d = q >= 0 ? A->val[((size_t)q * bs + r) * bs + r] : 0;
            HK_CHECK(d > 0, HK_ERR_ARG,
                     "the mass matrix is not positive definite: its diagonal entry at row %lld "
                     "is %g; M must be symmetric positive definite (a dof without mass needs "
                     "to be removed or given a mass)",
                     (long long)(i * bs + r + 1), d);
        }
    }
    return 0;
}

/* P = K - sigma M (M NULL: the identity) on the union of the block patterns. */
static int shifted(const hk_bcsr *K, const hk_bcsr *M, double sigma, hk_bcsr *P)
{
    int ierr = 0;
    const int64_t nb = K->nbrows;
    const int bs = K->bs, b2 = bs * bs;
    memset(P, 0, sizeof *P);
    P->bs = bs;
    P->nbrows = P->nbcols = nb;
    HK_TRY(hk_calloc((size_t)nb + 1, sizeof *P->rowptr, &P->rowptr));
    /* M's row i: its pattern, or the diagonal block alone for the identity */
#define MROW(i, b, e) int64_t b = M ? M->rowptr[i] : 0, e = M ? M->rowptr[(i) + 1] : 1
#define MCOL(i, q) (M ? M->colind[q] : (int32_t)(i))
    for (int64_t i = 0; i < nb; i++) {
        int64_t a = K->rowptr[i], ae = K->rowptr[i + 1], cnt = 0;
        MROW(i, b, be);
        while (a < ae || b < be) {
            const int32_t ca = a < ae ? K->colind[a] : INT32_MAX;
            const int32_t cb = b < be ? MCOL(i, b) : INT32_MAX;
            a += ca <= cb;
            b += cb <= ca;
            cnt++;
        }
        P->rowptr[i + 1] = P->rowptr[i] + cnt;
    }
    const int64_t nnzb = P->rowptr[nb];
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * sizeof *P->colind, &P->colind));
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * b2 * sizeof *P->val, &P->val));
#pragma omp parallel for schedule(static) if (nb > 4096)
    for (int64_t i = 0; i < nb; i++) {
        int64_t a = K->rowptr[i], ae = K->rowptr[i + 1], o = P->rowptr[i];
        MROW(i, b, be);
        while (a < ae || b < be) {
            const int32_t ca = a < ae ? K->colind[a] : INT32_MAX;
            const int32_t cb = b < be ? MCOL(i, b) : INT32_MAX;
            double *pv = P->val + (size_t)o * b2;
            P->colind[o] = ca < cb ? ca : cb;
            for (int e = 0; e < b2; e++) {
                const double kv = ca <= cb ? K->val[(size_t)a * b2 + e] : 0;
                const double mv =
                    cb <= ca ? (M ? M->val[(size_t)b * b2 + e] : (e % (bs + 1) == 0)) : 0;
                pv[e] = kv - sigma * mv;
            }
            a += ca <= cb;
            b += cb <= ca;
            o++;
        }
    }
#undef MROW
#undef MCOL
    return 0;
fail:
    hk_bcsr_free(P);
    return ierr;
}

/* M must be positive definite: the lowest eigenvalue of M x = mu diag(M) x, by a small LOBPCG
 * on the backend (2 columns, no preconditioner: the diagonal scaling is the pencil's), is
 * positive. A Ritz value at or below zero proves M indefinite; a mass matrix scaled by its
 * diagonal is well conditioned (a lumped one: the identity, done at once), so the run stops at
 * a relative residual of 1e-2 within a few dozen iterations. */
static int check_mass_definite(hk_eigen *e, const hk_bcsr *Mm)
{
    int ierr = 0;
    hk_bcsr D = {0};
    hk_mat *Dm = NULL;
    hk_lobpcg T = {0};
    const int bs = Mm->bs;
    const int64_t nb = Mm->nbrows;
    D.bs = bs;
    D.nbrows = D.nbcols = nb;
    HK_TRY(hk_malloc((size_t)(nb + 1) * sizeof *D.rowptr, &D.rowptr));
    HK_TRY(hk_malloc((size_t)(nb ? nb : 1) * sizeof *D.colind, &D.colind));
    HK_TRY(hk_calloc((size_t)(nb ? nb : 1) * bs * bs, sizeof *D.val, &D.val));
    for (int64_t i = 0; i < nb; i++) {
        D.rowptr[i] = i;
        D.colind[i] = (int32_t)i;
        const int64_t q = hk_find_block(Mm->rowptr, Mm->colind, i, i);
        for (int r = 0; r < bs; r++)
            D.val[((size_t)i * bs + r) * bs + r] = Mm->val[((size_t)q * bs + r) * bs + r];
    }
    D.rowptr[nb] = nb;
    HK_TRY(hk_mat_create(e->M->be, &D, e->M->asked, HK_FP64, NULL, &Dm));
    T.be = e->M->be;
    T.A = e->M;
    T.B = Dm;
    T.n = e->n;
    T.m = e->n < 2 ? 1 : 2;
    T.nev = 1;
    T.maxit = 200;
    T.tol = 1e-2;
    T.anorm = norm_inf(Mm);
    T.seed = 2;
    HK_TRY(hk_calloc((size_t)T.m, sizeof *T.theta, &T.theta));
    HK_TRY(hk_calloc((size_t)T.m, sizeof *T.residual, &T.residual));
    HK_TRY(hk_calloc((size_t)T.m, 1, &T.status));
    HK_TRY(hk_lobpcg_run(&T));
    HK_TRY_CHECK(T.theta[0] > 0, HK_ERR_ARG,
                 "the mass matrix is not positive definite: M x = mu diag(M) x has mu = %.3g "
                 "<= 0; M must be symmetric positive definite",
                 T.theta[0]);
fail:
    hk_lobpcg_free(&T);
    free(T.theta);
    free(T.residual);
    free(T.status);
    hk_mat_destroy(Dm);
    hk_bcsr_free(&D);
    return ierr;
}

int hk_eigen_create(const hk_bcsr *K, const hk_bcsr *M, const hk_nearnull *nn, hk_options *o,
                    hk_eigen **out)
{
    int ierr = 0;
    hk_eigen *e = NULL;
    hk_options *own = NULL;
    hk_bcsr Mb = {0}, P = {0};
    const hk_bcsr *Mm = NULL;
    const double t0 = hk_time();
    *out = NULL;
    HK_CHECK(K && K->rowptr, HK_ERR_ARG, "hk_eigen_create: no matrix K");
    HK_CHECK(K->nbrows == K->nbcols, HK_ERR_ARG,
             "the eigensolver needs a square matrix K; this one has %lld x %lld block "
             "rows/columns",
             (long long)K->nbrows, (long long)K->nbcols);
    HK_CALL(hk_fmt_check_bcsr(K));
    if (M) HK_TRY(check_mass(K, M, &Mb, &Mm));
    HK_TRY(hk_calloc(1, sizeof *e, &e));
    e->n = K->nbrows * K->bs;

    /* ---- options: our own copy, with pc=amg unless the caller chose one ---- */
    HK_TRY(hk_options_copy(o, &own));
    HK_TRY(check_keys(own));
    e->tol = HK_EIGEN_TOL;
    e->maxit = HK_EIGEN_MAXIT;
    const char *shift = "auto";
    HK_TRY(hk_options_get_double(own, "eigen.tol", &e->tol));
    HK_TRY(hk_options_get_int(own, "eigen.maxit", &e->maxit));
    HK_TRY(hk_options_get_int(own, "eigen.block", &e->block));
    HK_TRY(hk_options_get_string(own, "eigen.shift", &shift));
    HK_TRY(hk_options_get_int(own, "monitor", &e->monitor));
    HK_TRY_CHECK(e->tol > 0 && e->tol < 1, HK_ERR_OPTION,
                 "option eigen.tol=%g must be in (0, 1) (relative residual; default %g)", e->tol,
                 HK_EIGEN_TOL);
    HK_TRY_CHECK(e->maxit >= 1, HK_ERR_OPTION,
                 "option eigen.maxit=%d must be at least 1 (default %d)", e->maxit, HK_EIGEN_MAXIT);
    HK_TRY_CHECK(e->block >= 0, HK_ERR_OPTION,
                 "option eigen.block=%d must be 0 (automatic: nev + max(4, nev/2)) or the "
                 "number of columns, at least the pairs asked for",
                 e->block);
    e->shift_auto = !strcmp(shift, "auto");
    if (!e->shift_auto) {
        char *end = NULL;
        e->sigma = strtod(shift, &end);
        HK_TRY_CHECK(end != shift && !*end && isfinite(e->sigma), HK_ERR_OPTION,
                     "option eigen.shift=%s must be auto (the default) or a number below the "
                     "lowest eigenvalue sought, e.g. eigen.shift=-1e3",
                     shift);
    } else {
        const double tk = trace(K), tm = Mm ? trace(Mm) : (double)e->n;
        HK_TRY_CHECK(tk > 0 && isfinite(tk), HK_ERR_ARG,
                     "K's diagonal sums to %g; a stiffness matrix is positive semidefinite with "
                     "a positive diagonal",
                     tk);
        e->sigma = -HK_EIGEN_AUTO_SHIFT * tk / tm;
    }
    if (!hk_options_has(own, "pc")) HK_TRY(hk_options_set(own, "pc", "amg"));
    {
        const char *pcname = "amg";
        HK_TRY(hk_options_get_string(own, "pc", &pcname));
        const hk_pc_type *pt = hk_pc_type_find(pcname);
        if (pt && !pt->symmetric && pt->symmetric_variant) pt = pt->symmetric_variant;
        HK_TRY_CHECK(!pt || pt->symmetric, HK_ERR_UNSUPPORTED,
                     "pc=%s is not symmetric positive definite; the eigensolver needs an SPD "
                     "preconditioner (amg, jacobi, bjacobi, poly, fsai, ic0, none)",
                     pcname);
    }

    /* ---- K - sigma M, its format and preconditioner on the backend ---- */
    const hk_bcsr *Pm = K;
    if (e->sigma != 0) {
        HK_TRY(shifted(K, Mm, e->sigma, &P));
        Pm = &P;
    }
    e->L.anorm = norm_inf(K);
    ierr = hk_solver_create_nearnull(Pm, nn, own, &e->s);
    if (ierr && !e->shift_auto && ierr != HK_ERR_OPTION) {
        /* the preconditioner of K - sigma M failed: say which shift made that matrix */
        char msg[768];
        snprintf(msg, sizeof msg, "%s", hk_error_message());
        hk_error_clear();
        ierr = hk_error_set(ierr, __FILE__, __LINE__,
                            "%s (the preconditioner is set up on K - sigma M with "
                            "eigen.shift=%g, which must lie below the lowest eigenvalue)",
                            msg, e->sigma);
    }
    if (ierr) goto fail;
    hk_bcsr_free(&P);
    hk_mat *A = hk_solver_get_mat(e->s);
    if (Mm) {
        HK_TRY(hk_mat_create(A->be, Mm, A->asked, HK_FP64, own, &e->M));
        HK_TRY(check_mass_definite(e, Mm));
    }
    e->L.be = A->be;
    e->L.A = A;
    e->L.B = e->M;
    e->L.sigma = e->sigma;
    e->L.pc = hk_solver_get_pc(e->s);
    e->L.n = e->n;
    e->L.tol = e->tol;
    e->L.maxit = e->maxit;
    e->L.monitor = e->monitor;
    e->L.seed = 1;
    {
        /* the block ops' first use (cuda: the cuBLAS handle and its workspace) in the set-up,
         * not in the first solve's time */
        hk_vec *one = NULL;
        double g;
        HK_TRY(hk_vec_create(A->be, 1, HK_FP64, &one));
        ierr = A->be->vec_set(one, 1.0);
        if (!ierr && A->be->block_gram) ierr = A->be->block_gram(1, 1, one, 1, one, &g);
        hk_vec_destroy(one);
        if (ierr) goto fail;
    }
    HK_TRY(A->be->sync());
    e->setup_seconds = hk_time() - t0;
    hk_options_destroy(own);
    hk_bcsr_free(&Mb);
    *out = e;
    return 0;
fail:
    hk_options_destroy(own);
    hk_bcsr_free(&Mb);
    hk_bcsr_free(&P);
    hk_eigen_destroy(e);
    return ierr;
}

void hk_eigen_destroy(hk_eigen *e)
{
    if (!e) return;
    hk_lobpcg_free(&e->L);
    free(e->L.theta);
    free(e->L.residual);
    free(e->L.status);
    hk_mat_destroy(e->M);
    hk_solver_destroy(e->s);
    free(e);
}

int hk_eigen_solve(hk_eigen *e, int nev, double *lambda, double *X, double *residual,
                   hk_eigen_result *res)
{
    HK_CHECK(e && lambda && res, HK_ERR_ARG, "hk_eigen_solve: missing solver, lambda or result");
    memset(res, 0, sizeof *res);
    const int64_t n = e->n;
    HK_CHECK(nev >= 1, HK_ERR_ARG,
             "%d eigenpairs asked for; ask for at least one (hooke solve --eigen N, N >= 1)", nev);
    HK_CHECK(nev <= n, HK_ERR_ARG,
             "%d eigenpairs asked for, but the problem has only %lld unknowns; ask for at "
             "most %lld",
             nev, (long long)n, (long long)n);
    HK_CHECK(!e->block || e->block >= nev, HK_ERR_OPTION,
             "option eigen.block=%d is below the %d pairs asked for; the block needs at least "
             "one column per pair (0: automatic)",
             e->block, nev);
    int m = e->block ? e->block : nev + (nev / 2 > 4 ? nev / 2 : 4);
    if (m > n) m = (int)n;
    hk_lobpcg *L = &e->L;
    if (m > L->m_alloc) {
        free(L->theta);
        free(L->residual);
        free(L->status);
        L->theta = L->residual = NULL;
        L->status = NULL;
        HK_CALL(hk_calloc((size_t)m, sizeof *L->theta, &L->theta));
        HK_CALL(hk_calloc((size_t)m, sizeof *L->residual, &L->residual));
        HK_CALL(hk_calloc((size_t)m, 1, &L->status));
    }
    L->m = m;
    L->nev = nev;
    const double t0 = hk_time();
    HK_CALL(hk_lobpcg_run(L));
    HK_CALL(L->be->sync());
    res->solve_seconds = hk_time() - t0;
    res->setup_seconds = e->setup_seconds;
    res->nev = nev;
    res->block = m;
    res->iterations = L->iterations;
    res->restarts = L->restarts;
    res->stagnated = L->stagnated;
    res->spmv_columns = L->spmv_cols;
    res->pc_applies = L->pc_applies;
    res->shift = e->sigma;
    for (int j = 0; j < nev; j++) {
        lambda[j] = L->theta[j];
        if (residual) residual[j] = L->residual[j];
        res->converged += L->status[j] != 0;
        res->at_floor += L->status[j] == 2;
        if (L->residual[j] > res->max_residual || !(L->residual[j] <= res->max_residual))
            res->max_residual = L->residual[j];
        /* a converged negative eigenvalue (not a zero one at the rounding floor) */
        HK_CHECK(!(L->status[j] == 1 && L->theta[j] < 0), HK_ERR_NUMERIC,
                 "K is not positive semidefinite: the pencil K x = lambda M x has the "
                 "eigenvalue %g; a stiffness matrix has none below zero (check the matrix, "
                 "its symmetry and its supports)",
                 lambda[j]);
    }
    if (X) {
        const hk_vec Xb = hk_block_cols(L->S[L->cur], n, 0, nev);
        HK_CALL(L->be->copy_from(X, Xb.data, (size_t)n * nev * sizeof *X));
        /* the sign: the entry of largest magnitude (the first such) positive */
        for (int j = 0; j < nev; j++) {
            double *x = X + (size_t)j * n;
            int64_t at = 0;
            for (int64_t i = 1; i < n; i++)
                if (fabs(x[i]) > fabs(x[at])) at = i;
            if (x[at] < 0)
                for (int64_t i = 0; i < n; i++)
                    x[i] = -x[i];
        }
    }
    return 0;
}

void hk_eigen_describe(const hk_eigen *e, FILE *f)
{
    if (!e) return;
    hk_pc *pc = hk_solver_get_pc(e->s);
    hk_mat *A = hk_solver_get_mat(e->s);
    char info[448] = "";
    if (pc->type->describe && pc->data) pc->type->describe(pc, info, sizeof info);
    fprintf(f, "lobpcg + %s%s%s%s%s, %s fp64 on %s, shift %.3g%s\n", pc->type->name,
            info[0] ? " (" : "", info, info[0] ? ")" : "", pc->prec == HK_FP32 ? " fp32" : "",
            hk_format_name(A->fmt), A->be->name, e->sigma, e->M ? "" : ", M = I");
}

void hk_eigen_print_help(FILE *f)
{
    fprintf(f, "Eigensolver options (with --eigen; key=value, unknown keys are errors):\n"
               "  eigen.tol=1e-6          relative residual ||K x - lambda M x|| /\n"
               "                          (|lambda| ||M x||) of every pair (zero eigenvalues:\n"
               "                          the rounding floor 100 eps ||K|| ||x||)\n"
               "  eigen.maxit=1000        LOBPCG iteration limit\n"
               "  eigen.block=0           columns of the block (0: nev + max(4, nev/2))\n"
               "  eigen.shift=auto        sigma: the preconditioner is set up on K - sigma M,\n"
               "                          which must be positive definite (sigma below the\n"
               "                          lowest eigenvalue); auto: -1e-8 trace(K)/trace(M), so\n"
               "                          free-floating parts (singular K) work\n"
               "  monitor=0|1|2           print every LOBPCG iteration (2: with every pair's\n"
               "                          residual and the basis's sizes)\n"
               "  pc=amg                  preconditioner of K - sigma M (any symmetric one:\n"
               "                          amg, jacobi, bjacobi, poly, fsai, ic0, none), with its\n"
               "                          pc.* options; format, format.*, precision, backend as\n"
               "                          for the linear solver\n");
}
