/* Preconditioners: the registry, the generic create/apply/destroy, the "none" type and the
 * host helpers every type's set-up shares (symmetry check, diagonal, operator copy; the
 * scalar CSR type's own helpers are in csr.c).
 *
 * A preconditioner is set up from the backend matrix K (an hk_bmat in the backend's memory):
 * every type but mlilu through backend ops only (the diag op, SpMVs, the set-up ops of
 * hk_setup.h / hk_impl.h); mlilu on a host copy (hk_pc_setup_on_host), by design. It keeps
 * what its apply needs as backend objects in its own precision (pc->prec), so apply runs
 * through backend ops only and the same code serves every backend. hk_pc_apply converts fp64 vectors to and from an
 * fp32 preconditioner (the SBELL paper's mixed-precision PCG, Algorithm 6). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

const hk_pc_type *const hk_pc_types[] = {&hk_pc_none, &hk_pc_jacobi, &hk_pc_bjacobi,
                                         &hk_pc_poly, &hk_pc_fsai,   &hk_pc_sai,
                                         &hk_pc_ic0,  &hk_pc_ilu0,   &hk_pc_amg,
                                         &hk_pc_mlilu, NULL};

const hk_pc_type *hk_pc_type_find(const char *name)
{
    for (int i = 0; name && hk_pc_types[i]; i++)
        if (!strcmp(hk_pc_types[i]->name, name)) return hk_pc_types[i];
    return NULL;
}

int hk_pc_create(const hk_pc_type *t, const hk_backend_ops *be, hk_precision prec, const hk_bmat *K,
                 hk_mat *A, const hk_nearnull *nn, hk_options *o, hk_pc **out)
{
    int ierr;
    hk_pc *pc = NULL;
    *out = NULL;
    HK_CHECK(t && be && K, HK_ERR_ARG, "hk_pc_create: missing type, backend or matrix");
    HK_CHECK(K->be == be && K->br == K->bc, HK_ERR_ARG,
             "hk_pc_create: the matrix must live on the preconditioner's backend, square blocks");
    HK_CHECK(K->nbrows == K->nbcols, HK_ERR_ARG,
             "preconditioner %s needs a square matrix (got %lld x %lld blocks)", t->name,
             (long long)K->nbrows, (long long)K->nbcols);
    HK_CALL(hk_calloc(1, sizeof *pc, &pc));
    pc->type = t;
    pc->be = be;
    pc->prec = prec;
    pc->bs = K->br;
    pc->n = K->nbrows * K->br;
    pc->nearnull = nn;
    if (prec != HK_FP64) {
        HK_TRY(hk_vec_create(be, pc->n, prec, &pc->r_low));
        HK_TRY(hk_vec_create(be, pc->n, prec, &pc->z_low));
    }
    pc->K = K;
    ierr = t->setup(pc, K, A, o);
    pc->K = NULL;
    if (ierr) goto fail;
    *out = pc;
    return 0;
fail:
    hk_pc_destroy(pc);
    return ierr;
}

int hk_pc_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    HK_CHECK(r->n == pc->n && z->n == pc->n, HK_ERR_ARG,
             "preconditioner %s applied to vectors of length %lld / %lld; it was set up for %lld",
             pc->type->name, (long long)r->n, (long long)z->n, (long long)pc->n);
    const int same = r->prec == pc->prec && z->prec == pc->prec;
    if (same && r->data != z->data) return pc->type->apply(pc, r, z);
    /* conversion buffers in the pc's precision (made at create for fp32, else on first use);
     * also used when r and z are one vector, since the types' apply needs them distinct */
    if (!pc->r_low) HK_CALL(hk_vec_create(pc->be, pc->n, pc->prec, &pc->r_low));
    if (!pc->z_low) HK_CALL(hk_vec_create(pc->be, pc->n, pc->prec, &pc->z_low));
    HK_CALL(pc->be->vec_convert(pc->r_low, r));
    if (same) return pc->type->apply(pc, pc->r_low, z);
    HK_CALL(pc->type->apply(pc, pc->r_low, pc->z_low));
    return pc->be->vec_convert(z, pc->z_low);
}

void hk_pc_destroy(hk_pc *pc)
{
    if (!pc) return;
    if (pc->type && pc->type->destroy && pc->data) pc->type->destroy(pc);
    hk_vec_destroy(pc->dinv);
    hk_vec_destroy(pc->r_low);
    hk_vec_destroy(pc->z_low);
    free(pc);
}

/* ---- none: z = r ---------------------------------------------------------------------- */

static int none_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    return 0;
}

static int none_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    return pc->be->vec_copy(z, r);
}

const hk_pc_type hk_pc_none = {
    .name = "none",
    .summary = "no preconditioner (M = I)",
    .options = "",
    .symmetric = 1,
    .setup = none_setup,
    .apply = none_apply,
    .apply_capturable = 1,
    .destroy = NULL,
};

/* ---- shared host helpers --------------------------------------------------------------- */

int hk_csr_check_symmetric(const hk_csr *A, const char *who)
{
    /* the CPU backend's bmat_sym_check on views of A and its transpose: one rule for both */
    hk_csr T = {0};
    hk_factor_fault f;
    HK_CALL(hk_csr_transpose(A, &T));
    const hk_bmat Av = {.be = &hk_backend_cpu,
                        .br = 1,
                        .bc = 1,
                        .nbrows = A->n,
                        .nbcols = A->m,
                        .nnzb = A->rowptr[A->n],
                        .rowptr = A->rowptr,
                        .colind = A->colind,
                        .val = A->val};
    const hk_bmat Tv = {.be = &hk_backend_cpu,
                        .br = 1,
                        .bc = 1,
                        .nbrows = T.n,
                        .nbcols = T.m,
                        .nnzb = T.rowptr[T.n],
                        .rowptr = T.rowptr,
                        .colind = T.colind,
                        .val = T.val};
    int ierr = hk_cpu_bmat_sym_check(&Av, &Tv, &f);
    hk_csr_free(&T);
    HK_CALL(ierr);
    HK_CHECK(f.row < 0, HK_ERR_NUMERIC,
             "preconditioner %s needs a symmetric matrix, but entry (%lld, %lld) is %g and "
             "(%lld, %lld) is %g; use pc=ilu0 or pc=sai with method=gmres or bicgstab",
             who, (long long)f.row, (long long)f.col, f.v[0], (long long)f.col,
             (long long)f.row, f.v[1]);
    return 0;
}

int hk_pc_positive_diag(const hk_bcsr *K, const char *who, double *d)
{
    const int bs = K->bs;
    for (int64_t bi = 0; bi < K->nbrows; bi++) {
        int found = 0;
        for (int64_t p = K->rowptr[bi]; p < K->rowptr[bi + 1]; p++) {
            if (K->colind[p] != bi) continue;
            for (int r = 0; r < bs; r++)
                d[bi * bs + r] = K->val[(p * bs + r) * bs + r];
            found = 1;
            break;
        }
        for (int r = 0; r < bs; r++) {
            double v = found ? d[bi * bs + r] : 0.0;
            HK_CHECK(v > 0 && isfinite(v), HK_ERR_NUMERIC,
                     "preconditioner %s: row %lld has diagonal entry %g; it needs a positive "
                     "diagonal (is the matrix SPD, are Dirichlet rows kept with a unit "
                     "diagonal?) - use pc=none or pc=ilu0 for such matrices",
                     who, (long long)(bi * bs + r + 1), v);
        }
    }
    return 0;
}

/* The diag op in fp64 into a new vector; *bad as the op returns it. */
static int diag_fp64(hk_pc *pc, int mode, hk_vec **out, int64_t *bad)
{
    const hk_bmat *K = pc->K;
    const int64_t n = K->nbrows * K->br * (mode == HK_DIAG_BLOCK_INV ? K->br : 1);
    *out = NULL;
    HK_CHECK(pc->be->bmat_diag, HK_ERR_UNSUPPORTED,
             "preconditioner %s: the %s backend has no diag op; use --backend cpu",
             pc->type->name, pc->be->name);
    HK_CALL(hk_vec_create(pc->be, n, HK_FP64, out));
    int ierr = pc->be->bmat_diag(K, mode, *out, bad);
    if (ierr) {
        hk_vec_destroy(*out);
        *out = NULL;
    }
    return ierr;
}

int hk_pc_diag(hk_pc *pc, int mode, hk_vec **out)
{
    const hk_bmat *K = pc->K;
    const int bs = K->br;
    const char *who = pc->type->name;
    hk_vec *d = NULL, *low = NULL;
    int64_t bad = -1;
    int ierr;
    *out = NULL;
    HK_CHECK(mode == HK_DIAG_INV || mode == HK_DIAG_INV_SQRT || mode == HK_DIAG_BLOCK_INV,
             HK_ERR_ARG, "hk_pc_diag: mode %d is not a preconditioner's diagonal", mode);
    /* the positive diagonal first: it also catches the dofs the block inverse would leave out
     * as decoupled (zero row and column inside the block), which a preconditioner must not */
    HK_TRY(diag_fp64(pc, mode == HK_DIAG_BLOCK_INV ? HK_DIAG_INV : mode, &d, &bad));
    if (bad >= 0) {
        /* rows counted from 1, as in a Matrix Market file and the matrix-value check */
        char block[64] = "";
        if (bs > 1)
            snprintf(block, sizeof block, " (block row %lld, its row %d)",
                     (long long)(bad / bs + 1), (int)(bad % bs + 1));
        ierr = hk_error_set(HK_ERR_NUMERIC, __FILE__, __LINE__,
                            "preconditioner %s: row %lld%s has a diagonal entry that is zero, "
                            "negative, not finite or missing; it needs a positive diagonal (is "
                            "the matrix SPD, are Dirichlet rows kept with a unit diagonal?) - use "
                            "pc=none or pc=ilu0 for such matrices",
                            who, (long long)bad + 1, block);
        goto fail;
    }
    if (mode == HK_DIAG_BLOCK_INV) {
        hk_vec_destroy(d);
        d = NULL;
        HK_TRY(diag_fp64(pc, HK_DIAG_BLOCK_INV, &d, &bad));
        const int64_t bi = bad / bs;
        HK_TRY_CHECK(bad < 0, HK_ERR_NUMERIC,
                     "preconditioner %s: the %dx%d diagonal block of block row %lld (rows "
                     "%lld..%lld, counted from 1) is singular or not finite; check that this "
                     "node is constrained or connected to an element, or use pc=jacobi",
                     who, bs, bs, (long long)bi + 1, (long long)(bi * bs + 1),
                     (long long)(bi * bs + bs));
    }
    if (pc->prec != HK_FP64) {
        HK_TRY(hk_vec_create(pc->be, d->n, pc->prec, &low));
        HK_TRY(pc->be->vec_convert(low, d));
        hk_vec_destroy(d);
        d = low;
        low = NULL;
    }
    *out = d;
    return 0;
fail:
    hk_vec_destroy(d);
    hk_vec_destroy(low);
    return ierr;
}

/* Format options (slice, sigma; PCSR's partition, padding, prefetch) that reproduce A's
 * layout for another matrix. */
static int format_options_like(const hk_mat *A, hk_options **fo)
{
    HK_CALL(hk_options_create(fo));
    int ierr = 0;
    char buf[32];
    if (A && A->slice > 0) {
        snprintf(buf, sizeof buf, "%d", A->slice);
        ierr = hk_options_set(*fo, "format.slice", buf);
        if (!ierr && A->sigma > 0) {
            snprintf(buf, sizeof buf, "%d", A->sigma);
            ierr = hk_options_set(*fo, "format.sigma", buf);
        }
    }
    if (!ierr && A && A->fmt == HK_FMT_PCSR) { /* the fp32 copies keep the PCSR layout */
        snprintf(buf, sizeof buf, "%d", A->pcsr_partition);
        ierr = hk_options_set(*fo, "format.pcsr.partition", buf);
        snprintf(buf, sizeof buf, "%d", A->pcsr_pad);
        if (!ierr) ierr = hk_options_set(*fo, "format.pcsr.pad", buf);
        snprintf(buf, sizeof buf, "%d", A->pcsr_prefetch);
        if (!ierr) ierr = hk_options_set(*fo, "format.pcsr.prefetch", buf);
    }
    if (ierr) {
        hk_options_destroy(*fo);
        *fo = NULL;
    }
    return ierr;
}

int hk_pc_setup_on_host(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o,
                        int (*setup_host)(hk_pc *, const hk_bcsr *, hk_mat *, hk_options *))
{
    hk_bcsr Kh = {0};
    HK_CALL(hk_bmat_to_bcsr(K, &Kh));
    int ierr = setup_host(pc, &Kh, A, o);
    hk_bcsr_free(&Kh);
    return ierr;
}

/* Whether the copy of K that hk_pc_operator builds in precision p (format_options_like's
 * settings, A's format asked) has A's format and settings, so that A converted is that copy. */
static int build_like(const hk_bmat *K, const hk_mat *A, hk_precision p)
{
    hk_format fmt = A->asked;
    if (fmt == HK_FMT_AUTO && hk_format_auto(K, p, &fmt)) {
        hk_error_clear();
        return 0;
    }
    const int pcsr_default = A->pcsr_partition == HK_PCSR_PARTITION && A->pcsr_pad == HK_PCSR_PAD &&
                             A->pcsr_prefetch == HK_PCSR_PREFETCH;
    return fmt == A->fmt && (A->sigma > 0 || A->sigma == HK_SIGMA_AUTO) && A->tpr == 0 &&
           A->csr_kernel == HK_CSR_AUTO && (A->fmt == HK_FMT_PCSR || pcsr_default);
}

int hk_pc_operator(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_mat **Aop, int *owned)
{
    *owned = 0;
    *Aop = NULL;
    if (A && A->prec == pc->prec && A->be == pc->be) {
        *Aop = A;
        return 0;
    }
    if (A && A->be == pc->be && A->prec == HK_FP64 && pc->prec == HK_FP32 && A->be->mat_convert &&
        build_like(K, A, pc->prec)) {
        /* A's layout with its values rounded: what the build below would make, without
         * sorting and scattering K again */
        const int ierr = hk_mat_convert(A, Aop);
        if (ierr != HK_ERR_UNSUPPORTED) {
            if (!ierr) *owned = 1;
            return ierr;
        }
        hk_error_clear();
    }
    /* same format and slicing as the solver's operator, in the preconditioner's precision */
    hk_options *fo = NULL;
    HK_CALL(format_options_like(A, &fo));
    int ierr = hk_mat_create_bmat(K, A ? A->asked : HK_FMT_CSR, pc->prec, fo, Aop);
    hk_options_destroy(fo);
    if (!ierr) *owned = 1;
    return ierr;
}

/* Whether fmt stores bs x bs blocks (auto chooses block formats for bs > 1). */
static int format_is_block(hk_format fmt)
{
    return fmt == HK_FMT_AUTO || fmt == HK_FMT_BSR || fmt == HK_FMT_BELL || fmt == HK_FMT_SBELL ||
           fmt == HK_FMT_CUSPARSE_BSR;
}

int hk_pc_mat_like(hk_pc *pc, const hk_mat *A, const hk_csr *M, hk_mat **out)
{
    const hk_format fmt = A ? A->asked : HK_FMT_CSR;
    const int block = pc->bs > 1 && format_is_block(fmt);
    hk_bcsr view = {.bs = 1,
                    .nbrows = M->n,
                    .nbcols = M->m,
                    .rowptr = M->rowptr,
                    .colind = M->colind,
                    .val = M->val};
    hk_bcsr B = {0};
    hk_options *fo = NULL;
    int ierr;
    *out = NULL;
    HK_CALL(format_options_like(A, &fo));
    if (block) HK_TRY(hk_bcsr_to_blocks(&view, pc->bs, &B));
    HK_TRY(hk_mat_create(pc->be, block ? &B : &view, fmt, pc->prec, fo, out));
fail:
    hk_bcsr_free(&B);
    hk_options_destroy(fo);
    return ierr;
}

int hk_pc_mat_from_bmat(hk_pc *pc, const hk_mat *A, const hk_bmat *M, hk_mat **out)
{
    /* On the backend: a block format of the operator gets M regrouped into its pc->bs blocks
     * (bmat_compress), then the format is built there (mat_build); no host copy. */
    const hk_format fmt = A ? A->asked : HK_FMT_CSR;
    const int block = pc->bs > 1 && format_is_block(fmt);
    hk_bmat B = {0};
    hk_options *fo = NULL;
    int ierr;
    *out = NULL;
    HK_CHECK(M->br == 1 && M->bc == 1, HK_ERR_ARG, "hk_pc_mat_from_bmat: M must have 1 x 1 blocks");
    HK_CHECK(!block || pc->be->bmat_compress, HK_ERR_UNSUPPORTED,
             "backend %s cannot regroup a factor into %dx%d blocks (no bmat_compress op)",
             pc->be->name, pc->bs, pc->bs);
    HK_CALL(format_options_like(A, &fo));
    if (block) HK_TRY(pc->be->bmat_compress(M, pc->bs, &B));
    HK_TRY(hk_mat_create_bmat(block ? &B : M, fmt, pc->prec, fo, out));
fail:
    hk_bmat_free(&B);
    hk_options_destroy(fo);
    return ierr;
}

int hk_pc_vec_from_host(const hk_backend_ops *be, int64_t n, hk_precision p, const double *h,
                        hk_vec **v)
{
    HK_CALL(hk_vec_create(be, n, p, v));
    int ierr = hk_vec_upload(*v, h);
    if (ierr) {
        hk_vec_destroy(*v);
        *v = NULL;
    }
    return ierr;
}
