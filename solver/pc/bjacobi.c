/* Block Jacobi: M = blockdiag(A), one bs x bs block per node (bs = 1, 2, 3). Set-up inverts
 * each diagonal block on the host (Gauss-Jordan with partial pivoting) and stores the inverses
 * row-major in one backend vector; apply is be->bdiag_apply. For elasticity the node block
 * couples the displacement components, so it beats point Jacobi at the same apply cost. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

/* Invert the bs x bs row-major block a into inv; returns 0 when singular. */
static int invert_block(int bs, const double *a, double *inv)
{
    double m[3][6];
    double amax = 0;
    for (int r = 0; r < bs; r++)
        for (int c = 0; c < bs; c++) {
            m[r][c] = a[r * bs + c];
            m[r][bs + c] = (r == c);
            if (fabs(m[r][c]) > amax) amax = fabs(m[r][c]);
        }
    if (!(amax > 0) || !isfinite(amax)) return 0;
    for (int c = 0; c < bs; c++) {
        int p = c;
        for (int r = c + 1; r < bs; r++)
            if (fabs(m[r][c]) > fabs(m[p][c])) p = r;
        /* relative to the block's size: a pivot at round-off level means singular */
        if (fabs(m[p][c]) <= 1e-13 * amax) return 0;
        if (p != c)
            for (int k = 0; k < 2 * bs; k++) {
                double t = m[c][k];
                m[c][k] = m[p][k];
                m[p][k] = t;
            }
        double piv = m[c][c];
        for (int k = 0; k < 2 * bs; k++)
            m[c][k] /= piv;
        for (int r = 0; r < bs; r++) {
            if (r == c || m[r][c] == 0) continue;
            double f = m[r][c];
            for (int k = 0; k < 2 * bs; k++)
                m[r][k] -= f * m[c][k];
        }
    }
    for (int r = 0; r < bs; r++)
        for (int c = 0; c < bs; c++)
            inv[r * bs + c] = m[r][bs + c];
    return 1;
}

typedef struct {
    hk_vec *D; /* inverse blocks, n*bs entries */
} bjacobi_data;

static int bjacobi_setup_host(hk_pc *pc, const hk_bcsr *K, hk_mat *A, hk_options *o)
{
    int ierr = 0;
    const int bs = K->bs;
    double *inv = NULL;
    bjacobi_data *d = NULL;
    HK_CALL(hk_calloc((size_t)pc->n * bs, sizeof *inv, &inv));
    for (int64_t bi = 0; bi < K->nbrows; bi++) {
        const double *blk = NULL;
        for (int64_t p = K->rowptr[bi]; p < K->rowptr[bi + 1]; p++)
            if (K->colind[p] == bi) blk = K->val + (size_t)p * bs * bs;
        HK_TRY_CHECK(blk && invert_block(bs, blk, inv + (size_t)bi * bs * bs), HK_ERR_NUMERIC,
                     "preconditioner bjacobi: the %dx%d diagonal block of block row %lld (rows "
                     "%lld..%lld) is %s; check that this node is constrained or connected to an "
                     "element, or use pc=jacobi",
                     bs, bs, (long long)bi, (long long)(bi * bs), (long long)(bi * bs + bs - 1),
                     blk ? "singular" : "missing");
    }
    HK_TRY(hk_calloc(1, sizeof *d, &d));
    HK_TRY(hk_pc_vec_from_host(pc->be, pc->n * bs, pc->prec, inv, &d->D));
    pc->data = d;
    d = NULL;
fail:
    free(d);
    free(inv);
    return ierr;
}

static int bjacobi_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    bjacobi_data *d = pc->data;
    return pc->be->bdiag_apply(d->D, pc->bs, r, z);
}

static void bjacobi_destroy(hk_pc *pc)
{
    bjacobi_data *d = pc->data;
    hk_vec_destroy(d->D);
    free(d);
    pc->data = NULL;
}

/* Set-up still runs on the host: K is copied back from the backend first. */
static int bjacobi_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    return hk_pc_setup_on_host(pc, K, A, o, bjacobi_setup_host);
}

const hk_pc_type hk_pc_bjacobi = {
    .name = "bjacobi",
    .summary = "block Jacobi: inverse of each bs x bs node block",
    .options = "",
    .symmetric = 1,
    .setup = bjacobi_setup,
    .apply = bjacobi_apply,
    .destroy = bjacobi_destroy,
};
