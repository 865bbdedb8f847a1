/* hk_bmat and hk_graph: block CSR matrices and patterns in a backend's memory, the working
 * form of every set-up step (solver/hk_setup.h). These helpers only allocate and copy through
 * the backend's memory ops; the set-up algorithms themselves are backend ops. */
#include <stdlib.h>
#include <string.h>

#include "hk_impl.h"
#include "spgemm_plan.h"

static int be_alloc(const hk_backend_ops *be, void **p, size_t bytes)
{
    return be->alloc(p, bytes ? bytes : 8);
}

void hk_bmat_free(hk_bmat *A)
{
    if (!A) return;
    if (A->be) {
        A->be->dealloc(A->rowptr);
        A->be->dealloc(A->colind);
        A->be->dealloc(A->val);
    }
    memset(A, 0, sizeof *A);
}

int hk_bmat_alloc(const hk_backend_ops *be, int br, int bc, int64_t nbrows, int64_t nbcols,
                  int64_t nnzb, hk_bmat *A)
{
    int ierr;
    memset(A, 0, sizeof *A);
    HK_CHECK(br >= 1 && bc >= 1 && nbrows >= 0 && nbcols >= 0 && nnzb >= 0, HK_ERR_ARG,
             "hk_bmat_alloc: bad sizes (%d x %d blocks, %lld x %lld, %lld blocks)", br, bc,
             (long long)nbrows, (long long)nbcols, (long long)nnzb);
    A->be = be;
    A->br = br;
    A->bc = bc;
    A->nbrows = nbrows;
    A->nbcols = nbcols;
    A->nnzb = nnzb;
    HK_TRY(be_alloc(be, (void **)&A->rowptr, (size_t)(nbrows + 1) * sizeof(int64_t)));
    HK_TRY(be_alloc(be, (void **)&A->colind, (size_t)nnzb * sizeof(int32_t)));
    HK_TRY(be_alloc(be, (void **)&A->val, (size_t)nnzb * br * bc * sizeof(double)));
    return 0;
fail:
    hk_bmat_free(A);
    return ierr;
}

int hk_bmat_upload(const hk_backend_ops *be, const hk_bcsr *K, hk_bmat *A)
{
    int ierr;
    const int64_t nnzb = K->rowptr[K->nbrows];
    HK_CALL(hk_bmat_alloc(be, K->bs, K->bs, K->nbrows, K->nbcols, nnzb, A));
    HK_TRY(be->copy_to(A->rowptr, K->rowptr, (size_t)(K->nbrows + 1) * sizeof(int64_t)));
    if (nnzb) {
        HK_TRY(be->copy_to(A->colind, K->colind, (size_t)nnzb * sizeof(int32_t)));
        HK_TRY(be->copy_to(A->val, K->val, (size_t)nnzb * K->bs * K->bs * sizeof(double)));
    }
    return 0;
fail:
    hk_bmat_free(A);
    return ierr;
}

int hk_bmat_to_host(const hk_bmat *A, hk_bmat *H)
{
    int ierr;
    HK_CALL(hk_bmat_alloc(&hk_backend_cpu, A->br, A->bc, A->nbrows, A->nbcols, A->nnzb, H));
    HK_TRY(A->be->copy_from(H->rowptr, A->rowptr, (size_t)(A->nbrows + 1) * sizeof(int64_t)));
    if (A->nnzb) {
        HK_TRY(A->be->copy_from(H->colind, A->colind, (size_t)A->nnzb * sizeof(int32_t)));
        HK_TRY(A->be->copy_from(H->val, A->val,
                                (size_t)A->nnzb * A->br * A->bc * sizeof(double)));
    }
    return 0;
fail:
    hk_bmat_free(H);
    return ierr;
}

int hk_bmat_to_bcsr(const hk_bmat *A, hk_bcsr *K)
{
    int ierr;
    memset(K, 0, sizeof *K);
    HK_CHECK(A->br == A->bc, HK_ERR_ARG, "hk_bmat_to_bcsr: blocks are %d x %d, not square",
             A->br, A->bc);
    const size_t bb = (size_t)A->br * A->bc;
    K->bs = A->br;
    K->nbrows = A->nbrows;
    K->nbcols = A->nbcols;
    HK_TRY(hk_malloc((size_t)(A->nbrows + 1) * sizeof *K->rowptr, &K->rowptr));
    HK_TRY(hk_malloc((size_t)(A->nnzb ? A->nnzb : 1) * sizeof *K->colind, &K->colind));
    HK_TRY(hk_malloc((size_t)(A->nnzb ? A->nnzb : 1) * bb * sizeof *K->val, &K->val));
    HK_TRY(A->be->copy_from(K->rowptr, A->rowptr, (size_t)(A->nbrows + 1) * sizeof(int64_t)));
    if (A->nnzb) {
        HK_TRY(A->be->copy_from(K->colind, A->colind, (size_t)A->nnzb * sizeof(int32_t)));
        HK_TRY(A->be->copy_from(K->val, A->val, (size_t)A->nnzb * bb * sizeof(double)));
    }
    return 0;
fail:
    hk_bcsr_free(K);
    return ierr;
}

void hk_graph_free(hk_graph *G)
{
    if (!G) return;
    if (G->be) {
        G->be->dealloc(G->rowptr);
        G->be->dealloc(G->colind);
    }
    memset(G, 0, sizeof *G);
}

int hk_graph_alloc(const hk_backend_ops *be, int64_t n, int64_t m, int64_t nnz, hk_graph *G)
{
    int ierr;
    memset(G, 0, sizeof *G);
    HK_CHECK(n >= 0 && m >= 0 && nnz >= 0, HK_ERR_ARG, "hk_graph_alloc: bad sizes");
    G->be = be;
    G->n = n;
    G->m = m;
    G->nnz = nnz;
    HK_TRY(be_alloc(be, (void **)&G->rowptr, (size_t)(n + 1) * sizeof(int64_t)));
    HK_TRY(be_alloc(be, (void **)&G->colind, (size_t)nnz * sizeof(int32_t)));
    return 0;
fail:
    hk_graph_free(G);
    return ierr;
}

int hk_graph_to_host(const hk_graph *G, hk_graph *H)
{
    int ierr;
    HK_CALL(hk_graph_alloc(&hk_backend_cpu, G->n, G->m, G->nnz, H));
    HK_TRY(G->be->copy_from(H->rowptr, G->rowptr, (size_t)(G->n + 1) * sizeof(int64_t)));
    if (G->nnz)
        HK_TRY(G->be->copy_from(H->colind, G->colind, (size_t)G->nnz * sizeof(int32_t)));
    return 0;
fail:
    hk_graph_free(H);
    return ierr;
}

int hk_bmat_chain_check(const hk_bmat *A, const hk_bmat *B, const char *bname, const char *who)
{
    HK_CHECK(A->bc == B->br && A->nbcols == B->nbrows, HK_ERR_ARG,
             "%s: A (%lld x %lld blocks of %d x %d) and %s (%lld x %lld blocks of %d x %d) do not "
             "chain; A's block columns must match %s's block rows",
             who, (long long)A->nbrows, (long long)A->nbcols, A->br, A->bc, bname,
             (long long)B->nbrows, (long long)B->nbcols, B->br, B->bc, bname);
    HK_CHECK(B->nbcols <= INT32_MAX, HK_ERR_UNSUPPORTED,
             "%s: %lld block columns exceed 32-bit column indices", who, (long long)B->nbcols);
    return 0;
}

int hk_bmat_product_check(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C, const char *who)
{
    HK_CHECK(A->bc == B->br && A->nbcols == B->nbrows && C->br == A->br && C->bc == B->bc &&
                 C->nbrows == A->nbrows && C->nbcols == B->nbcols,
             HK_ERR_ARG,
             "%s: A (%lld x %lld blocks of %d x %d), B (%lld x %lld blocks of %d x %d) and C "
             "(%lld x %lld blocks of %d x %d) do not fit C = A B",
             who, (long long)A->nbrows, (long long)A->nbcols, A->br, A->bc, (long long)B->nbrows,
             (long long)B->nbcols, B->br, B->bc, (long long)C->nbrows, (long long)C->nbcols, C->br,
             C->bc);
    return 0;
}

void hk_spgemm_plan_shape_of(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C, int upper,
                             hk_spgemm_plan_shape *s)
{
    *s = (hk_spgemm_plan_shape){.upper = upper,
                                .br = A->br,
                                .bk = A->bc,
                                .bc = B->bc,
                                .nbr = A->nbrows,
                                .annzb = A->nnzb,
                                .bnnzb = B->nnzb,
                                .cnnzb = C->nnzb};
}

int hk_spgemm_plan_check(const hk_spgemm_plan_shape *s, const hk_bmat *A, const hk_bmat *B,
                         const hk_bmat *C)
{
    HK_CHECK(s && A->br == s->br && A->bc == s->bk && B->bc == s->bc && A->nbrows == s->nbr &&
                 A->nnzb == s->annzb && B->nnzb == s->bnnzb && C->nnzb == s->cnnzb &&
                 C->br == s->br && C->bc == s->bc,
             HK_ERR_ARG,
             "bmat_spgemm_numeric_plan: the plan was made for other patterns (A %lld blocks, B "
             "%lld, C %lld); make it again for these",
             s ? (long long)s->annzb : -1LL, s ? (long long)s->bnnzb : -1LL,
             s ? (long long)s->cnnzb : -1LL);
    return 0;
}

int hk_bmat_mirror_check(const hk_bmat *C)
{
    HK_CHECK(C->br == C->bc && C->nbrows == C->nbcols, HK_ERR_ARG,
             "bmat_mirror_lower: C (%lld x %lld blocks of %d x %d) must be square with square "
             "blocks",
             (long long)C->nbrows, (long long)C->nbcols, C->br, C->bc);
    return 0;
}

int hk_bmat_mirror_fault(int64_t row)
{
    HK_CHECK(row < 0, HK_ERR_ARG,
             "bmat_mirror_lower: block row %lld has a block below the diagonal whose mirror "
             "above it is missing; the pattern must be symmetric (A symmetric and R = P^T give "
             "R A P one)",
             (long long)row);
    return 0;
}

/* ---- hk_resident_bcsr: the public face of a square-block hk_bmat ------------------------ */

int hk_resident_bcsr_alloc(const hk_backend *be, int bs, int64_t nbrows, int64_t nbcols,
                           int64_t nnzb, hk_resident_bcsr *A)
{
    hk_bmat B;
    HK_CHECK(A, HK_ERR_ARG, "hk_resident_bcsr_alloc: no matrix");
    memset(A, 0, sizeof *A);
    HK_CHECK(be, HK_ERR_ARG, "hk_resident_bcsr_alloc: no backend");
    HK_CALL(hk_bmat_alloc(be, bs, bs, nbrows, nbcols, nnzb, &B));
    A->be = be;
    A->bs = bs;
    A->nbrows = nbrows, A->nbcols = nbcols, A->nnzb = nnzb;
    A->rowptr = B.rowptr, A->colind = B.colind, A->val = B.val;
    return 0;
}

void hk_resident_bcsr_free(hk_resident_bcsr *A)
{
    if (!A) return;
    hk_bmat B = {A->be, A->bs, A->bs, A->nbrows, A->nbcols, A->nnzb, A->rowptr, A->colind, A->val};
    hk_bmat_free(&B);
    memset(A, 0, sizeof *A);
}

int hk_resident_bcsr_download(const hk_resident_bcsr *A, hk_bcsr *K)
{
    HK_CHECK(A && A->be && A->rowptr && K, HK_ERR_ARG,
             "hk_resident_bcsr_download: no matrix (or its arrays were handed to a solver)");
    const hk_bmat B = {A->be,   A->bs,     A->bs,     A->nbrows, A->nbcols,
                       A->nnzb, A->rowptr, A->colind, A->val};
    return hk_bmat_to_bcsr(&B, K);
}
