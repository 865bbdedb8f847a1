/* Block Jacobi: M = blockdiag(A), one bs x bs block per node. Set-up is the backend's diag op
 * (HK_DIAG_BLOCK_INV: Gauss-Jordan with partial pivoting per block, where K lives), which
 * stores the inverses row-major in one backend vector; apply is be->bdiag_apply. For
 * elasticity the node block couples the displacement components, so it beats point Jacobi at
 * the same apply cost. */
#include <stdlib.h>

#include "pc_impl.h"

typedef struct {
    hk_vec *D; /* inverse blocks, n*bs entries */
} bjacobi_data;

static int bjacobi_setup(hk_pc *pc, const hk_bmat *K, hk_mat *A, hk_options *o)
{
    bjacobi_data *d = NULL;
    HK_CALL(hk_calloc(1, sizeof *d, &d));
    int ierr = hk_pc_diag(pc, HK_DIAG_BLOCK_INV, &d->D);
    if (ierr) {
        free(d);
        return ierr;
    }
    pc->data = d;
    return 0;
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

const hk_pc_type hk_pc_bjacobi = {
    .name = "bjacobi",
    .summary = "block Jacobi: inverse of each bs x bs node block",
    .options = "",
    .symmetric = 1,
    .setup = bjacobi_setup,
    .apply = bjacobi_apply,
    .apply_capturable = 1,
    .destroy = bjacobi_destroy,
};
