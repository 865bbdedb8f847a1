/* The mass matrix of a modal analysis and its elimination (docs/modal.md, "Mass matrices").
 *
 * Assembly: the element kernels' consistent mass int rho N^T N (element_kernels.h, on each
 * element's mass rule) or its HRZ lumping, added into block rows owned by threads as
 * assemble.c adds K: each thread visits the cells with a node in its rows in mesh order, so M
 * is bit-identical for any thread count. Consistent: K's block pattern; lumped: a
 * block-diagonal one (the blocks diagonal).
 *
 * Elimination: the eigenproblem K x = lambda M x is meant on the free dofs. K's prescribed rows
 * and columns are zero but for the diagonal d_i (constraints.c); M's are zeroed the same way
 * and get the diagonal d_i / lambda_fixed, so each prescribed dof is an eigenpair (lambda_fixed,
 * e_i) decoupled from the rest, and every other eigenpair is one of the free dofs' problem with
 * x_i = 0 there. lambda_fixed is Gershgorin's bound max_i sum_j |K_ij| / M_ii over the free
 * rows: at the top of the spectrum, above the lowest modes that are sought, and not far above
 * the largest eigenvalue, so that these rows add no scale the eigensolver's Rayleigh-Ritz
 * step would have to resolve. Dofs of nodes without a cell are treated alike. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "element_kernels.h"
#include "groups.h"
#include "mass.h"

/* Every region with cells needs a positive density. */
static int check_density(const hk_problem *p)
{
    const hk_mesh *m = p->mesh;
    for (int64_t e = 0; e < m->cells.n; e++) {
        const int rg = m->cell_region[e];
        const double rho = p->materials[rg].rho;
        HK_CHECK(rho > 0 && isfinite(rho), HK_ERR_MODEL,
                 "region '%s' (material '%s') has density %g; a modal analysis needs the mass "
                 "of every region: give the material a positive density (kg/m^3)",
                 hk_asm_region_name(m, rg), p->materials[rg].name, rho);
    }
    return 0;
}

/* M's pattern: K's (consistent) or one block per row (lumped); values zeroed. */
static int mass_pattern(const hk_bcsr *K, int lumped, hk_bcsr *M)
{
    int ierr = 0;
    const int64_t nb = K->nbrows;
    const int b2 = K->bs * K->bs;
    memset(M, 0, sizeof *M);
    M->bs = K->bs;
    M->nbrows = M->nbcols = nb;
    const int64_t nnzb = lumped ? nb : K->rowptr[nb];
    HK_TRY(hk_malloc((size_t)(nb + 1) * sizeof *M->rowptr, &M->rowptr));
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * sizeof *M->colind, &M->colind));
    HK_TRY(hk_calloc((size_t)(nnzb ? nnzb : 1) * b2, sizeof *M->val, &M->val));
    if (lumped) {
        for (int64_t i = 0; i < nb; i++)
            M->rowptr[i] = i, M->colind[i] = (int32_t)i;
        M->rowptr[nb] = nb;
    } else {
        memcpy(M->rowptr, K->rowptr, (size_t)(nb + 1) * sizeof *M->rowptr);
        memcpy(M->colind, K->colind, (size_t)nnzb * sizeof *M->colind);
    }
    return 0;
fail:
    hk_bcsr_free(M);
    return ierr;
}

int hk_mass_assemble(const hk_problem *p, const hk_adj *n2c, const hk_bcsr *K, int lumped,
                     hk_bcsr *M)
{
    int ierr = 0;
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    const int64_t nc = m->cells.n;
    const double fac = hk_asm_thickness(p);
    const int axi = p->analysis == HK_AXISYMMETRIC;
    const int nthr = nc >= 4096 ? omp_get_max_threads() : 1;
    int64_t *bounds = NULL, bad = INT64_MAX;
    HK_CALL(check_density(p));
    HK_CALL(mass_pattern(K, lumped, M));
    HK_TRY(hk_malloc((size_t)(nthr + 1) * sizeof *bounds, &bounds));
    hk_asm_row_ranges(n2c, nthr, bounds);
#pragma omp parallel num_threads(nthr)
    {
        const int t = omp_get_thread_num();
        const int64_t r0 = bounds[t], r1 = bounds[t + 1];
        double me[HK_EL_MAXN * HK_EL_MAXN], diag[HK_EL_MAXN];
        double x[HK_EL_MAXN][3];
        int64_t mybad = INT64_MAX;
        for (int64_t e = 0; e < nc; e++) {
            const int32_t *nodes = m->cells.nodes + m->cells.ptr[e];
            const int n = (int)(m->cells.ptr[e + 1] - m->cells.ptr[e]);
            int mine = 0;
            for (int a = 0; a < n && !mine; a++)
                mine = nodes[a] >= r0 && nodes[a] < r1;
            if (!mine) continue;
            const hk_elref *r = hk_elref_mass_get((hk_eltype)m->cells.type[e]);
            for (int a = 0; a < n; a++)
                for (int i = 0; i < 3; i++)
                    x[a][i] = m->coords[3 * (size_t)nodes[a] + i];
            const double rho = p->materials[m->cell_region[e]].rho;
            if (hk_el_mass(r, d, (const double(*)[3])x, rho, axi, fac, me)) {
                if (e < mybad) mybad = e;
                continue;
            }
            if (lumped) hk_el_mass_lump_hrz(n, me, diag);
            for (int a = 0; a < n; a++) {
                const int32_t ra = nodes[a];
                if (ra < r0 || ra >= r1) continue;
                if (lumped) {
                    double *blk = M->val + (size_t)ra * (size_t)(d * d);
                    for (int i = 0; i < d; i++)
                        blk[i * d + i] += diag[a];
                    continue;
                }
                for (int b = 0; b < n; b++) {
                    double *blk =
                        M->val + (size_t)hk_asm_find_block(M, ra, nodes[b]) * (size_t)(d * d);
                    for (int i = 0; i < d; i++)
                        blk[i * d + i] += me[a * n + b];
                }
            }
        }
#pragma omp critical(hk_mass_bad)
        if (mybad < bad) bad = mybad;
    }
    if (bad != INT64_MAX) {
        const hk_eltype t = (hk_eltype)m->cells.type[bad];
        HK_TRY_CHECK(0, HK_ERR_MODEL,
                     "element %lld (%s, Gmsh tag %lld) in region '%s' has a non-positive "
                     "Jacobian%s at a point of its mass rule; it is inverted or degenerate — "
                     "check the mesh",
                     (long long)bad, hk_el_name(t), hk_asm_tag(&m->cells, bad),
                     hk_asm_region_name(m, m->cell_region[bad]),
                     axi ? " or radius r = x <= 0" : "");
    }
    free(bounds);
    return 0;
fail:
    free(bounds);
    hk_bcsr_free(M);
    return ierr;
}

/* Entry (r, c) of block row i's diagonal block, 0 when absent. */
static double diag_entry(const hk_bcsr *A, int64_t i, int r)
{
    const int64_t q = hk_asm_find_block(A, i, (int32_t)i);
    return q < 0 ? 0 : A->val[((size_t)q * A->bs + r) * A->bs + r];
}

int hk_mass_eliminate(hk_system *s)
{
    hk_bcsr *M = &s->M;
    const hk_bcsr *K = &s->K;
    const int bs = M->bs, b2 = bs * bs, d = s->dim;
    const int64_t nb = M->nbrows, n = nb * bs;
    HK_CHECK(K->bs == bs && K->nbrows == nb, HK_ERR_ARG,
             "hk_mass_eliminate: M (%lld block rows of %d) does not match K (%lld of %d)",
             (long long)nb, bs, (long long)K->nbrows, K->bs);
    free(s->mass_r);
    s->mass_r = NULL;
    HK_CALL(hk_calloc((size_t)(n * d), sizeof *s->mass_r, &s->mass_r));
    /* M r_c and r_c^T M r_c before the elimination: the inertia of a translation */
    for (int c = 0; c < d; c++) {
        double *mr = s->mass_r + (size_t)c * n, tot = 0;
        for (int64_t i = 0; i < nb; i++)
            for (int r = 0; r < bs; r++) {
                double v = 0;
                for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++)
                    v += M->val[(size_t)q * b2 + r * bs + c];
                mr[i * bs + r] = v;
                if (r == c) tot += v;
            }
        s->total_mass[c] = tot;
    }
    /* placeholder rows: prescribed, or without mass (nodes without a cell) */
    uint8_t *hold;
    HK_CALL(hk_malloc((size_t)n + 1, &hold));
    double lam = 0;
    for (int64_t i = 0; i < nb; i++)
        for (int r = 0; r < bs; r++) {
            const double mii = diag_entry(M, i, r);
            hold[i * bs + r] = s->fixed[i * bs + r] || !(mii > 0);
            if (hold[i * bs + r]) continue;
            double row = 0;
            for (int64_t q = K->rowptr[i]; q < K->rowptr[i + 1]; q++)
                for (int c = 0; c < bs; c++)
                    row += fabs(K->val[(size_t)q * b2 + r * bs + c]);
            if (row / mii > lam) lam = row / mii;
        }
    if (!(lam > 0 && isfinite(lam))) {
        free(hold);
        HK_CHECK(0, HK_ERR_MODEL,
                 "the model has no free dof with mass; a modal analysis needs some unsupported "
                 "part with density");
    }
    s->lambda_fixed = lam;
#pragma omp parallel for schedule(static) if (nb >= 20000)
    for (int64_t i = 0; i < nb; i++)
        for (int r = 0; r < bs; r++) {
            const int64_t gi = i * bs + r;
            for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++) {
                const int64_t j = M->colind[q];
                double *row = M->val + (size_t)q * b2 + (size_t)r * bs;
                for (int c = 0; c < bs; c++) {
                    const int64_t gj = j * bs + c;
                    if (gj == gi && hold[gi])
                        row[c] = diag_entry(K, i, r) / lam;
                    else if (hold[gi] || hold[gj])
                        row[c] = 0;
                }
            }
        }
    free(hold);
    return 0;
}
