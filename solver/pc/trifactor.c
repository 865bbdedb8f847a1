/* Triangular factors for ic0 and ilu0: split a factor held in CSR into the strictly
 * triangular part plus the inverse diagonal, compute its level sets (the level-set
 * scheduling of the ILUPACK-GMRES paper: a row's level is one more than the highest level of
 * the rows it depends on), hand both factors to the backend, and apply z = U^-1 L^-1 r. */
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

void hk_trifactor_free(hk_trifactor *T)
{
    if (!T) return;
    free(T->rowptr);
    free(T->colind);
    free(T->val);
    free(T->dinv);
    free(T->level_ptr);
    free(T->level_rows);
    memset(T, 0, sizeof *T);
}

int hk_trifactor_from_csr(const hk_csr *F, int upper, int unit, hk_trifactor *T)
{
    int ierr = 0;
    const int64_t n = F->n;
    int64_t *level = NULL;
    memset(T, 0, sizeof *T);
    T->n = n;
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++)
            nnz += upper ? F->colind[k] > i : F->colind[k] < i;
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *T->rowptr, &T->rowptr));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *T->colind, &T->colind));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *T->val, &T->val));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *T->dinv, &T->dinv));
    HK_TRY(hk_calloc((size_t)(n ? n : 1), sizeof *level, &level));
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        T->dinv[i] = 1;
        int have_diag = 0;
        for (int64_t k = F->rowptr[i]; k < F->rowptr[i + 1]; k++) {
            const int32_t j = F->colind[k];
            if (j == i) {
                if (!unit) T->dinv[i] = 1 / F->val[k];
                have_diag = 1;
            } else if (upper ? j > i : j < i) {
                T->colind[q] = j;
                T->val[q++] = F->val[k];
            }
        }
        HK_TRY_CHECK(unit || have_diag, HK_ERR_INTERNAL,
                     "triangular factor: row %lld has no diagonal entry", (long long)i);
        T->rowptr[i + 1] = q;
    }
    /* levels: dependencies come before (lower) or after (upper) each row */
    int64_t nlev = 0;
    for (int64_t s = 0; s < n; s++) {
        const int64_t i = upper ? n - 1 - s : s;
        int64_t l = 0;
        for (int64_t k = T->rowptr[i]; k < T->rowptr[i + 1]; k++)
            if (level[T->colind[k]] + 1 > l) l = level[T->colind[k]] + 1;
        level[i] = l;
        if (l + 1 > nlev) nlev = l + 1;
    }
    T->nlevels = nlev;
    HK_TRY(hk_calloc((size_t)nlev + 1, sizeof *T->level_ptr, &T->level_ptr));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *T->level_rows, &T->level_rows));
    for (int64_t i = 0; i < n; i++)
        T->level_ptr[level[i] + 1]++;
    for (int64_t l = 0; l < nlev; l++)
        T->level_ptr[l + 1] += T->level_ptr[l];
    for (int64_t i = 0; i < n; i++)
        T->level_rows[T->level_ptr[level[i]]++] = (int32_t)i;
    for (int64_t l = nlev; l > 0; l--)
        T->level_ptr[l] = T->level_ptr[l - 1];
    T->level_ptr[0] = 0;
    free(level);
    return 0;
fail:
    free(level);
    hk_trifactor_free(T);
    return ierr;
}

int hk_tri_pc_create(hk_pc *pc, const char *who, const hk_trifactor *L, const hk_trifactor *U)
{
    const hk_backend_ops *be = pc->be;
    HK_CHECK(be->tri_create && be->tri_solve && be->tri_destroy, HK_ERR_UNSUPPORTED,
             "%s is not available on the %s backend (it has no triangular solve); use jacobi, "
             "bjacobi, poly, fsai or sai, or backend=cpu",
             who, be->name);
    hk_tri_pc *t;
    HK_CALL(hk_calloc(1, sizeof *t, &t));
    pc->data = t; /* hk_pc_destroy cleans up on failure */
    t->levels_L = L->nlevels;
    t->levels_U = U->nlevels;
    HK_CALL(be->tri_create(L, pc->prec, &t->L));
    HK_CALL(be->tri_create(U, pc->prec, &t->U));
    HK_CALL(hk_vec_create(be, pc->n, pc->prec, &t->y));
    return 0;
}

int hk_tri_pc_apply(hk_pc *pc, const hk_vec *r, hk_vec *z)
{
    hk_tri_pc *t = pc->data;
    HK_CALL(pc->be->tri_solve(t->L, r, t->y));
    return pc->be->tri_solve(t->U, t->y, z);
}

void hk_tri_pc_destroy(hk_pc *pc)
{
    hk_tri_pc *t = pc->data;
    if (t->L) pc->be->tri_destroy(t->L);
    if (t->U) pc->be->tri_destroy(t->U);
    hk_vec_destroy(t->y);
    free(t);
    pc->data = NULL;
}
