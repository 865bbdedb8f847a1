/* hypre's BoomerAMG-PCG as a peer of `hooke bench pcs` (peer_hypre.h says why and how). */
#include "peer_hypre.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooke/error.h"

/* ---- the settings (parsed with or without hypre, so that bad input is refused early) ------- */

typedef struct hypre_key {
    const char *key;
    size_t offset;
    int is_int;
    double lo, hi;
} hypre_key;

/* clang-format off */
#define HYPRE_KEY_INT(k, lo, hi) {#k, offsetof(hk_hypre_settings, k), 1, lo, hi}
#define HYPRE_KEY_REAL(k, lo, hi) {#k, offsetof(hk_hypre_settings, k), 0, lo, hi}
/* clang-format on */
static const hypre_key hypre_keys[] = {
    HYPRE_KEY_REAL(strong, 0, 1),        HYPRE_KEY_REAL(trunc, 0, 1),
    HYPRE_KEY_INT(coarsen, 0, 22),       HYPRE_KEY_INT(interp, 0, 100),
    HYPRE_KEY_INT(pmax, 0, 64),          HYPRE_KEY_INT(relax, 0, 100),
    HYPRE_KEY_INT(sweeps, 1, 10),        HYPRE_KEY_INT(agg, 0, 10),
    HYPRE_KEY_INT(agg_interp, 1, 8),     HYPRE_KEY_INT(agg_pmax, 0, 64),
    HYPRE_KEY_INT(functions, 0, 6),      HYPRE_KEY_INT(max_levels, 2, 40),
    HYPRE_KEY_INT(keep_transpose, 0, 1), HYPRE_KEY_INT(rap2, 0, 1),
    HYPRE_KEY_INT(vendor_spgemm, 0, 1),  HYPRE_KEY_INT(maxit, 1, 100000),
    HYPRE_KEY_INT(print, 0, 1),
};
#define HYPRE_NKEYS (sizeof hypre_keys / sizeof hypre_keys[0])

static void hypre_defaults(hk_hypre_settings *s)
{
    *s = (hk_hypre_settings){.strong = 0.5,
                             .trunc = 0,
                             .coarsen = 8,
                             .interp = 6,
                             .pmax = 4,
                             .relax = 18,
                             .sweeps = 1,
                             .agg = 0,
                             .agg_interp = 5,
                             .agg_pmax = 0,
                             .functions = 0,
                             .max_levels = 25,
                             .keep_transpose = 1,
                             .rap2 = 0,
                             .vendor_spgemm = 0,
                             .maxit = 1000,
                             .print = 0};
}

static int hypre_key_list(char *out, size_t cap)
{
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; i < HYPRE_NKEYS && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s%s", i ? ", " : "", hypre_keys[i].key);
    return 0;
}

int hk_peer_hypre_parse(const char *text, hk_hypre_settings *s)
{
    hypre_defaults(s);
    char buf[512];
    HK_CHECK(text && strlen(text) < sizeof buf, HK_ERR_OPTION,
             "--peer: give 'hypre' and at most %zu characters of KEY=VALUE settings",
             sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    const char *name = strtok_r(buf, " ", &save);
    HK_CHECK(name && !strcmp(name, "hypre"), HK_ERR_OPTION,
             "--peer '%s': the only peer is hypre (--peer 'hypre [KEY=VALUE ...]')", text);
    for (char *tok = strtok_r(NULL, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        const hypre_key *k = NULL;
        if (eq) {
            *eq = 0;
            for (size_t i = 0; i < HYPRE_NKEYS && !k; i++)
                if (!strcmp(hypre_keys[i].key, tok)) k = &hypre_keys[i];
        }
        if (!k) {
            char keys[400];
            hypre_key_list(keys, sizeof keys);
            HK_CHECK(0, HK_ERR_OPTION,
                     "--peer hypre: '%s' is not a KEY=VALUE setting of the peer; they are %s "
                     "(docs/BENCHMARKS.md, \"The hypre peer\")",
                     tok, keys);
        }
        char *end = NULL;
        const double v = strtod(eq + 1, &end);
        HK_CHECK(end != eq + 1 && !*end && v >= k->lo && v <= k->hi &&
                     (!k->is_int || v == (double)(int)v),
                 HK_ERR_OPTION, "--peer hypre: %s=%s is not %s from %g to %g", k->key, eq + 1,
                 k->is_int ? "a whole number" : "a number", k->lo, k->hi);
        if (k->is_int)
            *(int *)((char *)s + k->offset) = (int)v;
        else
            *(double *)((char *)s + k->offset) = v;
    }
    return 0;
}

#ifndef HOOKE_HAVE_HYPRE

static const char hypre_absent[] =
    "--peer hypre: this hooke was built without hypre; configure it with "
    "-DHOOKE_HYPRE_DIR=<a hypre install> (docs/BENCHMARKS.md, \"The hypre peer\", says how to "
    "build one)";

int hk_peer_hypre_built(char *desc, size_t cap)
{
    snprintf(desc, cap, "%s", hypre_absent);
    return 0;
}

int hk_peer_hypre_solve(const hk_bcsr *K, const double *f, const hk_hypre_settings *s, double tol,
                        double *u, hk_peer_result *r)
{
    return hk_error_set(HK_ERR_NOT_BUILT, __FILE__, __LINE__, "%s", hypre_absent);
}

#else /* HOOKE_HAVE_HYPRE */

#include <HYPRE.h>
#include <HYPRE_krylov.h>
#include <HYPRE_parcsr_ls.h>
#include <HYPRE_utilities.h>
#if defined(HYPRE_USING_CUDA)
#include <cuda_runtime_api.h>
#endif

/* hypre's arrays live where its objects do: the GPU's memory for a CUDA build. */
static int peer_alloc(size_t bytes, void **p)
{
#if defined(HYPRE_USING_CUDA)
    HK_CHECK(cudaMalloc(p, bytes ? bytes : 1) == cudaSuccess, HK_ERR_MEMORY,
             "--peer hypre: cannot allocate %zu bytes on the GPU for hypre's input", bytes);
    return 0;
#else
    return hk_malloc(bytes ? bytes : 1, p);
#endif
}

static void peer_free(void *p)
{
#if defined(HYPRE_USING_CUDA)
    if (p) cudaFree(p);
#else
    free(p);
#endif
}

static int peer_copy(void *dst, const void *src, size_t bytes, int to_host)
{
#if defined(HYPRE_USING_CUDA)
    HK_CHECK(cudaMemcpy(dst, src, bytes,
                        to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice) == cudaSuccess,
             HK_ERR_DEVICE, "--peer hypre: a copy of %zu bytes to or from the GPU failed", bytes);
#else
    memcpy(dst, src, bytes);
#endif
    return 0;
}

static void peer_sync(void)
{
#if defined(HYPRE_USING_CUDA)
    cudaDeviceSynchronize();
#endif
}

static void peer_finalize(void)
{
    HYPRE_Finalize();
}

static int peer_init(void)
{
    static int done;
    if (done) return 0;
    HK_CHECK(HYPRE_Initialize() == 0, HK_ERR_DEVICE, "--peer hypre: HYPRE_Initialize failed");
#if defined(HYPRE_USING_GPU)
    /* as hypre's manual sets a GPU run up: its objects and set-up on the device, its own
     * SpGEMM unless asked, its random numbers on the GPU */
    HYPRE_SetMemoryLocation(HYPRE_MEMORY_DEVICE);
    HYPRE_SetExecutionPolicy(HYPRE_EXEC_DEVICE);
    HYPRE_SetUseGpuRand(1);
#endif
    atexit(peer_finalize);
    done = 1;
    return 0;
}

int hk_peer_hypre_built(char *desc, size_t cap)
{
#if defined(HYPRE_USING_CUDA)
    snprintf(desc, cap, "hypre %s, CUDA", HYPRE_RELEASE_VERSION);
#else
    snprintf(desc, cap, "hypre %s, host", HYPRE_RELEASE_VERSION);
#endif
    return 1;
}

/* One hypre error code into one sentence. */
static int hypre_check(HYPRE_Int e, const char *what)
{
    if (!e) return 0;
    char msg[256];
    HYPRE_DescribeError(e, msg);
    HYPRE_ClearAllErrors();
    return hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__, "--peer hypre: %s failed: %s", what,
                        msg);
}
#define HYPRE_TRY(expr, what) HK_TRY(hypre_check((expr), (what)))

/* K's scalar rows as hypre's IJ input: row lengths, row numbers, columns, values. */
typedef struct ij_rows {
    HYPRE_Int *ncols;
    HYPRE_BigInt *rows, *cols;
    double *vals;
} ij_rows;

static void ij_rows_free(ij_rows *h, int device)
{
    void (*rel)(void *) = device ? peer_free : free;
    rel(h->ncols);
    rel(h->rows);
    rel(h->cols);
    rel(h->vals);
    memset(h, 0, sizeof *h);
}

static int ij_rows_host(const hk_bcsr *K, ij_rows *h)
{
    const int bs = K->bs;
    const int64_t n = K->nbrows * bs, nnz = K->rowptr[K->nbrows] * bs * bs;
    HK_CALL(hk_malloc((size_t)n * sizeof *h->ncols, &h->ncols));
    HK_CALL(hk_malloc((size_t)n * sizeof *h->rows, &h->rows));
    HK_CALL(hk_malloc((size_t)nnz * sizeof *h->cols, &h->cols));
    HK_CALL(hk_malloc((size_t)nnz * sizeof *h->vals, &h->vals));
#pragma omp parallel for schedule(static)
    for (int64_t I = 0; I < K->nbrows; I++) {
        const int64_t b0 = K->rowptr[I], nb = K->rowptr[I + 1] - b0;
        for (int a = 0; a < bs; a++) {
            const int64_t i = I * bs + a, at = b0 * bs * bs + (int64_t)a * nb * bs;
            h->ncols[i] = (HYPRE_Int)(nb * bs);
            h->rows[i] = (HYPRE_BigInt)i;
            for (int64_t k = 0; k < nb; k++)
                for (int c = 0; c < bs; c++) {
                    h->cols[at + k * bs + c] = (HYPRE_BigInt)K->colind[b0 + k] * bs + c;
                    h->vals[at + k * bs + c] = K->val[(b0 + k) * bs * bs + a * bs + c];
                }
        }
    }
    return 0;
}

static int ij_rows_device(const ij_rows *h, int64_t n, int64_t nnz, ij_rows *d)
{
    HK_CALL(peer_alloc((size_t)n * sizeof *d->ncols, (void **)&d->ncols));
    HK_CALL(peer_alloc((size_t)n * sizeof *d->rows, (void **)&d->rows));
    HK_CALL(peer_alloc((size_t)nnz * sizeof *d->cols, (void **)&d->cols));
    HK_CALL(peer_alloc((size_t)nnz * sizeof *d->vals, (void **)&d->vals));
    HK_CALL(peer_copy(d->ncols, h->ncols, (size_t)n * sizeof *d->ncols, 0));
    HK_CALL(peer_copy(d->rows, h->rows, (size_t)n * sizeof *d->rows, 0));
    HK_CALL(peer_copy(d->cols, h->cols, (size_t)nnz * sizeof *d->cols, 0));
    HK_CALL(peer_copy(d->vals, h->vals, (size_t)nnz * sizeof *d->vals, 0));
    return 0;
}

static void amg_settings(HYPRE_Solver amg, const hk_hypre_settings *s, int bs)
{
    HYPRE_BoomerAMGSetPrintLevel(amg, s->print);
    HYPRE_BoomerAMGSetTol(amg, 0.0); /* one V-cycle per application */
    HYPRE_BoomerAMGSetMaxIter(amg, 1);
    HYPRE_BoomerAMGSetStrongThreshold(amg, s->strong);
    HYPRE_BoomerAMGSetCoarsenType(amg, s->coarsen);
    HYPRE_BoomerAMGSetInterpType(amg, s->interp);
    HYPRE_BoomerAMGSetPMaxElmts(amg, s->pmax);
    HYPRE_BoomerAMGSetTruncFactor(amg, s->trunc);
    HYPRE_BoomerAMGSetRelaxType(amg, s->relax);
    HYPRE_BoomerAMGSetRelaxOrder(amg, 0);
    HYPRE_BoomerAMGSetNumSweeps(amg, s->sweeps);
    HYPRE_BoomerAMGSetAggNumLevels(amg, s->agg);
    HYPRE_BoomerAMGSetAggInterpType(amg, s->agg_interp);
    HYPRE_BoomerAMGSetAggPMaxElmts(amg, s->agg_pmax);
    HYPRE_BoomerAMGSetNumFunctions(amg, s->functions ? s->functions : bs);
    HYPRE_BoomerAMGSetMaxLevels(amg, s->max_levels);
    HYPRE_BoomerAMGSetKeepTranspose(amg, s->keep_transpose);
    HYPRE_BoomerAMGSetRAP2(amg, s->rap2);
}

/* One set-up and solve on the assembled objects; timed when r is given. */
static int pcg_once(HYPRE_ParCSRMatrix A, HYPRE_ParVector b, HYPRE_ParVector x,
                    const hk_hypre_settings *s, int bs, double tol, hk_peer_result *r)
{
    int ierr = 0;
    HYPRE_Solver pcg = NULL, amg = NULL;
    /* from x = 0 every time (values set into an assembled IJ vector on the GPU would wait
     * for another assemble: the ParCSR vector is zeroed itself) */
    HYPRE_TRY(HYPRE_ParVectorSetConstantValues(x, 0.0), "zeroing x");
#if defined(HYPRE_USING_GPU)
    HYPRE_SetSpGemmUseVendor(s->vendor_spgemm); /* a process-wide choice: set per peer */
#endif
    HYPRE_TRY(HYPRE_BoomerAMGCreate(&amg), "HYPRE_BoomerAMGCreate");
    amg_settings(amg, s, bs);
    HYPRE_TRY(HYPRE_ParCSRPCGCreate(0, &pcg), "HYPRE_ParCSRPCGCreate");
    HYPRE_PCGSetTol(pcg, tol);
    HYPRE_PCGSetAbsoluteTol(pcg, 0.0);
    HYPRE_PCGSetTwoNorm(pcg, 1); /* ||r|| / ||b||, as hooke's CG stops */
    HYPRE_PCGSetMaxIter(pcg, s->maxit);
    HYPRE_PCGSetPrintLevel(pcg, 0);
    HYPRE_PCGSetLogging(pcg, 1);
    HYPRE_PCGSetPrecond(pcg, (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSolve,
                        (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSetup, amg);
    peer_sync();
    double t0 = hk_time();
    HYPRE_TRY(HYPRE_ParCSRPCGSetup(pcg, A, b, x), "HYPRE_ParCSRPCGSetup");
    peer_sync();
    double t1 = hk_time();
    /* hypre's PCG returns an error code when it does not converge: read its verdict instead */
    HYPRE_ParCSRPCGSolve(pcg, A, b, x);
    peer_sync();
    double t2 = hk_time();
    HYPRE_ClearAllErrors();
    if (r) {
        HYPRE_Int its = 0, conv = 0;
        double rel = 0;
        HYPRE_PCGGetNumIterations(pcg, &its);
        HYPRE_PCGGetFinalRelativeResidualNorm(pcg, &rel);
        HYPRE_PCGGetConverged(pcg, &conv);
        r->iterations = its;
        r->final_relres = rel;
        r->converged = conv;
        r->setup_s = t1 - t0;
        r->solve_s = t2 - t1;
    }
fail:
    if (pcg) HYPRE_ParCSRPCGDestroy(pcg);
    if (amg) HYPRE_BoomerAMGDestroy(amg);
    return ierr;
}

int hk_peer_hypre_solve(const hk_bcsr *K, const double *f, const hk_hypre_settings *s, double tol,
                        double *u, hk_peer_result *r)
{
    HK_CHECK(K && K->rowptr && f && u && s && r, HK_ERR_ARG, "--peer hypre: no matrix");
    const int bs = K->bs;
    const int64_t n = K->nbrows * bs, nnz = K->rowptr[K->nbrows] * bs * bs;
    HK_CHECK(nnz < INT32_MAX && K->nbrows == K->nbcols, HK_ERR_UNSUPPORTED,
             "--peer hypre: K has %lld nonzeros; the peer's hypre counts them in 32 bits (build "
             "hypre with -DHYPRE_ENABLE_MIXEDINT=ON for more)",
             (long long)nnz);
    HK_CALL(peer_init());
    int ierr = 0;
#if defined(HYPRE_USING_CUDA)
    const int device = 1; /* hypre's input arrays on the GPU (its manual's fast path) */
#else
    const int device = 0;
#endif
    ij_rows h = {0}, d = {0};
    double *fd = NULL, *ud = NULL;
    HYPRE_IJMatrix Aij = NULL;
    HYPRE_IJVector bij = NULL, xij = NULL;
    HYPRE_ParCSRMatrix A;
    HYPRE_ParVector b, x;
    memset(r, 0, sizeof *r);
    const double t0 = hk_time();
    HK_TRY(ij_rows_host(K, &h));
    const ij_rows *in = &h;
    if (device) {
        HK_TRY(ij_rows_device(&h, n, nnz, &d));
        in = &d;
    }
    HK_TRY(peer_alloc((size_t)n * sizeof *fd, (void **)&fd));
    HK_TRY(peer_alloc((size_t)n * sizeof *ud, (void **)&ud));
    HK_TRY(peer_copy(fd, f, (size_t)n * sizeof *fd, 0));
    HYPRE_TRY(HYPRE_IJMatrixCreate(0, 0, n - 1, 0, n - 1, &Aij), "HYPRE_IJMatrixCreate");
    HYPRE_TRY(HYPRE_IJMatrixSetObjectType(Aij, HYPRE_PARCSR), "HYPRE_IJMatrixSetObjectType");
    HYPRE_TRY(HYPRE_IJMatrixInitialize(Aij), "HYPRE_IJMatrixInitialize");
    HYPRE_TRY(HYPRE_IJMatrixSetValues(Aij, (HYPRE_Int)n, in->ncols, in->rows, in->cols, in->vals),
              "HYPRE_IJMatrixSetValues");
    HYPRE_TRY(HYPRE_IJMatrixAssemble(Aij), "HYPRE_IJMatrixAssemble");
    HYPRE_TRY(HYPRE_IJMatrixGetObject(Aij, (void **)&A), "HYPRE_IJMatrixGetObject");
    HYPRE_IJVector *vs[2] = {&bij, &xij}; /* both from f: each solve zeroes x first */
    for (int v = 0; v < 2; v++) {
        HYPRE_TRY(HYPRE_IJVectorCreate(0, 0, n - 1, vs[v]), "HYPRE_IJVectorCreate");
        HYPRE_TRY(HYPRE_IJVectorSetObjectType(*vs[v], HYPRE_PARCSR), "HYPRE_IJVectorSetObjectType");
        HYPRE_TRY(HYPRE_IJVectorInitialize(*vs[v]), "HYPRE_IJVectorInitialize");
        HYPRE_TRY(HYPRE_IJVectorSetValues(*vs[v], (HYPRE_Int)n, in->rows, fd),
                  "HYPRE_IJVectorSetValues");
        HYPRE_TRY(HYPRE_IJVectorAssemble(*vs[v]), "HYPRE_IJVectorAssemble");
    }
    HYPRE_TRY(HYPRE_IJVectorGetObject(bij, (void **)&b), "HYPRE_IJVectorGetObject");
    HYPRE_TRY(HYPRE_IJVectorGetObject(xij, (void **)&x), "HYPRE_IJVectorGetObject");
    if (device) ij_rows_free(&h, 0); /* the host copy is no longer needed */
    peer_sync();
    r->load_s = hk_time() - t0;
    /* a first set-up and solve, not timed: the GPU libraries' handles and hypre's memory pool
     * start there, as hooke's rows start theirs before the clock */
    HK_TRY(pcg_once(A, b, x, s, bs, tol, NULL));
    HK_TRY(pcg_once(A, b, x, s, bs, tol, r));
    HYPRE_TRY(HYPRE_IJVectorGetValues(xij, (HYPRE_Int)n, in->rows, ud), "HYPRE_IJVectorGetValues");
    HK_TRY(peer_copy(u, ud, (size_t)n * sizeof *u, 1));
fail:
    if (Aij) HYPRE_IJMatrixDestroy(Aij);
    if (bij) HYPRE_IJVectorDestroy(bij);
    if (xij) HYPRE_IJVectorDestroy(xij);
    ij_rows_free(&h, 0);
    ij_rows_free(&d, 1);
    peer_free(fd);
    peer_free(ud);
    return ierr;
}

#endif /* HOOKE_HAVE_HYPRE */
