/* Assembly of the linear system, from the top: this file orders the steps and holds the
 * numeric loop; the steps themselves live in the files below it (docs/assembly.md has the
 * picture of which file calls which).
 *
 * 1. checks of the mesh and the problem (checks.c),
 * 2. node-to-cell adjacency, symbolic block CSR pattern (pattern.c),
 * 3. numeric assembly with block-row ownership: each thread owns a range of block rows and
 *    adds the element matrices (element_kernels.h) of the cells touching them into its rows
 *    only (no atomics, no colouring); every row gets its contributions in cell order, so the
 *    digits do not depend on the number of threads, and the cells are visited in mesh order
 *    (cache-friendly),
 * 4. supports, springs, rigid-body check, loads, symmetric elimination, rigid couplings
 *    (constraints.c, springs.c, loads.c, coupling.c);
 * and for a modal analysis (hk_assemble_modal) the same K without loads, the rigid-body motions
 * counted instead of refused, and the mass matrix with its elimination (mass.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "checks.h"
#include "constraints.h"
#include "coupling.h"
#include "element_kernels.h"
#include "groups.h"
#include "loads.h"
#include "mass.h"
#include "springs.h"

void hk_system_free(hk_system *s)
{
    if (!s) return;
    hk_bcsr_free(&s->K);
    hk_resident_bcsr_free(&s->Kd);
    hk_backend_free(s->coords_be, s->coords_d);
    free(s->f);
    free(s->f_ext);
    free(s->fixed);
    free(s->u_fixed);
    free(s->rigid_point);
    free(s->rigid_of);
    hk_bcsr_free(&s->M);
    free(s->mass_r);
    memset(s, 0, sizeof *s);
}

/* Numeric assembly of K (pattern given) and, when f != NULL, the body loads.
 *
 * Each thread owns a contiguous range of block rows (balanced by node-to-cell counts), visits
 * in increasing order every cell with a node in its range, and adds that cell's contributions
 * to its own rows only: no two threads write one row, and every row receives its
 * contributions in cell order, so the digits are those of the serial loop for any thread
 * count. Cells straddling two ranges are computed by both threads (a thin layer). */
static int assemble_numeric(const hk_problem *p, const hk_adj *n2c, hk_bcsr *K, double *f)
{
    int ierr = 0;
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    const int64_t nc = m->cells.n;
    const double fac = hk_asm_thickness(p);
    const int axi = p->analysis == HK_AXISYMMETRIC;
    const int nthr = nc >= 4096 ? omp_get_max_threads() : 1;
    int64_t *bounds = NULL, bad = INT64_MAX;
    hk_law *laws = NULL;
    double *dTr = NULL;
    HK_TRY(hk_malloc((size_t)(nthr + 1) * sizeof *bounds, &bounds));
    hk_asm_row_ranges(n2c, nthr, bounds);
    /* the law and the uniform temperature change of each region, once */
    HK_TRY(hk_malloc((size_t)m->nregions * sizeof *laws + 1, &laws));
    HK_TRY(hk_malloc((size_t)m->nregions * sizeof *dTr + 1, &dTr));
    for (int rg = 0; rg < m->nregions; rg++) {
        dTr[rg] = f ? hk_problem_region_dT(p, rg) : 0;
        memset(&laws[rg], 0, sizeof laws[rg]);
        laws[rg].isotropic = 1;
    }
    for (int64_t e = 0; e < nc; e++) { /* only regions with cells have a (checked) material */
        const int rg = m->cell_region[e];
        if (laws[rg].nv == 0) HK_TRY(hk_material_law(&p->materials[rg], p->analysis, d, &laws[rg]));
    }
    const double *node_dT = f ? p->node_dT : NULL;
#pragma omp parallel num_threads(nthr)
    {
        const int t = omp_get_thread_num();
        const int64_t r0 = bounds[t], r1 = bounds[t + 1];
        double *Ke = malloc(sizeof(double) * (HK_EL_MAXN * 3) * (HK_EL_MAXN * 3));
        double fe[HK_EL_MAXN * 3];
        double x[HK_EL_MAXN][3];
        int64_t mybad = Ke ? INT64_MAX : -2;
        for (int64_t e = 0; e < nc && Ke; e++) {
            const int32_t *nodes = m->cells.nodes + m->cells.ptr[e];
            const int n = (int)(m->cells.ptr[e + 1] - m->cells.ptr[e]);
            int mine = 0;
            for (int a = 0; a < n && !mine; a++)
                mine = nodes[a] >= r0 && nodes[a] < r1;
            if (!mine) continue;
            const hk_elref *r = hk_elref_get((hk_eltype)m->cells.type[e]);
            const int nd = n * d;
            for (int a = 0; a < n; a++)
                for (int i = 0; i < 3; i++)
                    x[a][i] = m->coords[3 * (size_t)nodes[a] + i];
            const int rg = m->cell_region[e];
            const hk_material *mt = &p->materials[rg];
            const hk_law *L = &laws[rg];
            double b[3];
            for (int i = 0; i < 3; i++)
                b[i] = p->body_force[i] + mt->rho * p->gravity[i];
            const int sel = L->selective && r->type != HK_EL_TRI3 && r->type != HK_EL_TET4;
            int badjac =
                L->isotropic && !axi
                    ? hk_el_stiffness_iso(r, d, (const double(*)[3])x,
                                          sel ? L->lambda - L->kappa : L->lambda, L->mu, fac, b, Ke,
                                          f ? fe : NULL)
                    : hk_el_stiffness_general(r, d, (const double(*)[3])x, L, sel ? L->kappa : 0,
                                              axi, fac, b, Ke, f ? fe : NULL);
            if (!badjac && sel)
                badjac = hk_el_volumetric_reduced(r, d, (const double(*)[3])x, L->kappa, axi, fac,
                                                  Ke, 0, 0, NULL, NULL);
            if (!badjac && f && (dTr[rg] != 0 || node_dT)) {
                double Tn[HK_EL_MAXN];
                for (int a = 0; a < n && node_dT; a++)
                    Tn[a] = node_dT[nodes[a]];
                /* selective and an isotropic expansion: the thermal stress D alpha =
                 * 3 kappa alpha is volumetric and goes on the reduced rule */
                const int vol = sel && L->alpha6[0] == L->alpha6[1] && L->alpha6[1] == L->alpha6[2];
                badjac = vol ? hk_el_volumetric_reduced(r, d, (const double(*)[3])x, L->kappa, axi,
                                                        fac, NULL, 3 * L->kappa * L->alpha6[0],
                                                        dTr[rg], node_dT ? Tn : NULL, fe)
                             : hk_el_thermal_load(r, d, (const double(*)[3])x, L, axi, fac, dTr[rg],
                                                  node_dT ? Tn : NULL, fe);
            }
            if (badjac) {
                if (e < mybad) mybad = e;
                continue;
            }
            for (int a = 0; a < n; a++) {
                const int32_t ra = nodes[a];
                if (ra < r0 || ra >= r1) continue;
                for (int bb = 0; bb < n; bb++) {
                    double *blk =
                        K->val + (size_t)hk_asm_find_block(K, ra, nodes[bb]) * (size_t)(d * d);
                    const double *ke = Ke + (size_t)(a * d) * nd + bb * d;
                    for (int i = 0; i < d; i++)
                        for (int j = 0; j < d; j++)
                            blk[i * d + j] += ke[(size_t)i * nd + j];
                }
                if (f)
                    for (int i = 0; i < d; i++)
                        f[(size_t)ra * d + i] += fe[a * d + i];
            }
        }
        free(Ke);
#pragma omp critical(hk_asm_bad)
        if (mybad < bad) bad = mybad;
    }
    HK_TRY_CHECK(bad != -2, HK_ERR_MEMORY, "out of memory for the element matrices");
    if (bad != INT64_MAX) HK_TRY(hk_check_inverted(p, bad));
fail:
    free(bounds);
    free(laws);
    free(dTr);
    return ierr;
}

/* ---- public entry points ----------------------------------------------------------------- */

int64_t hk_system_nnz(const hk_system *s)
{
    if (s->K.rowptr) return s->K.rowptr[s->K.nbrows] * s->K.bs * s->K.bs;
    return s->Kd.nnzb * s->Kd.bs * s->Kd.bs;
}

/* Stage times on stderr when HOOKE_ASSEMBLY_PROFILE is set (for tuning; off by default). */
static void stage(const char *name, double *t)
{
    static int on = -1;
    if (on < 0) on = getenv("HOOKE_ASSEMBLY_PROFILE") != NULL;
    double now = hk_time();
    if (on && name) fprintf(stderr, "assembly: %-10s %8.2f ms\n", name, 1e3 * (now - *t));
    *t = now;
}

int hk_assemble_stiffness(const hk_problem *p, hk_bcsr *K)
{
    int ierr;
    hk_adj n2c = {0};
    double t = 0;
    HK_CHECK(K, HK_ERR_ARG, "hk_assemble_stiffness: K is NULL");
    memset(K, 0, sizeof *K);
    stage(NULL, &t);
    HK_TRY(hk_check_problem(p));
    stage("checks", &t);
    HK_TRY(hk_asm_node_cells(p->mesh, &n2c));
    stage("adjacency", &t);
    HK_TRY(hk_asm_pattern(p->mesh, &n2c, K));
    stage("pattern", &t);
    HK_TRY(assemble_numeric(p, &n2c, K, NULL));
    stage("numeric", &t);
    hk_adj_free(&n2c);
    return 0;
fail:
    hk_adj_free(&n2c);
    hk_bcsr_free(K);
    return ierr;
}

/* The first half of hk_assemble: the checks and the steps that need the whole model. */
static int assemble_prepare(const hk_problem *p, hk_system *s, hk_adj *n2c, double *t)
{
    HK_CALL(hk_check_problem(p));
    stage("checks", t);
    const hk_mesh *m = p->mesh;
    s->dim = m->dim;
    s->nnodes = m->nnodes;
    const int nrigid = hk_rigid_count(p); /* 2 block rows each for the reference points */
    s->ndof = (int64_t)m->dim * (m->nnodes + 2 * (int64_t)nrigid);
    HK_CALL(hk_calloc((size_t)s->ndof, sizeof *s->f_ext, &s->f_ext));
    HK_CALL(hk_calloc((size_t)s->ndof, sizeof *s->f, &s->f));
    HK_CALL(hk_calloc((size_t)s->ndof, sizeof *s->fixed, &s->fixed));
    HK_CALL(hk_calloc((size_t)s->ndof, sizeof *s->u_fixed, &s->u_fixed));
    HK_CALL(hk_asm_node_cells(m, n2c));
    stage("adjacency", t);
    /* cheap checks first: supports, rigid-body motion, loads */
    HK_CALL(hk_supports_apply(p, s->fixed, s->u_fixed, &s->nfixed));
    HK_CALL(hk_springs_check(p, n2c));
    HK_CALL(hk_check_rigid(p, n2c, s->fixed, hk_springs_directions));
    stage("supports", t);
    HK_CALL(hk_loads_apply(p, n2c, s->f_ext));
    stage("loads", t);
    return 0;
}

/* The second half: K, the body loads, springs, elimination, rigid couplings. */
static int assemble_finish(const hk_problem *p, const hk_adj *n2c, hk_system *s, double *t)
{
    HK_CALL(hk_asm_pattern(p->mesh, n2c, &s->K));
    stage("pattern", t);
    HK_CALL(assemble_numeric(p, n2c, &s->K, s->f_ext));
    HK_CALL(hk_springs_add(p, n2c, &s->K));
    stage("numeric", t);
    HK_CALL(hk_eliminate(s, n2c));
    if (hk_rigid_count(p)) HK_CALL(hk_rigid_apply(p, n2c, s));
    stage("eliminate", t);
    return 0;
}

int hk_assemble(const hk_problem *p, hk_system *s)
{
    int ierr;
    hk_adj n2c = {0};
    double t = 0;
    HK_CHECK(s, HK_ERR_ARG, "hk_assemble: the output system is NULL");
    memset(s, 0, sizeof *s);
    stage(NULL, &t);
    HK_TRY(assemble_prepare(p, s, &n2c, &t));
    HK_TRY(assemble_finish(p, &n2c, s, &t));
    hk_adj_free(&n2c);
    return 0;
fail:
    hk_adj_free(&n2c);
    hk_system_free(s);
    return ierr;
}

int hk_assemble_prepare(const hk_problem *p, hk_system *s)
{
    int ierr;
    hk_adj n2c = {0};
    double t = 0;
    HK_CHECK(s, HK_ERR_ARG, "hk_assemble_prepare: the output system is NULL");
    memset(s, 0, sizeof *s);
    stage(NULL, &t);
    ierr = assemble_prepare(p, s, &n2c, &t);
    hk_adj_free(&n2c);
    if (ierr) hk_system_free(s);
    return ierr;
}

/* Marks the nodes of boundary b (its node list and its facets' nodes; an index or node out of
 * range is left to the checks that name it). */
static void mark_boundary(const hk_mesh *m, int b, uint8_t *want)
{
    if (b < 0 || b >= m->nboundaries) return;
    const hk_group *g = &m->boundaries[b];
    for (int64_t k = 0; g->nodes && k < g->nnodes; k++)
        if (g->nodes[k] >= 0 && g->nodes[k] < m->nnodes) want[g->nodes[k]] = 1;
    for (int64_t k = 0; g->elems.n > 0 && k < g->elems.ptr[g->elems.n]; k++)
        if (g->elems.nodes[k] >= 0 && g->elems.nodes[k] < m->nnodes) want[g->elems.nodes[k]] = 1;
}

/* The node-to-cell lists the region's supports and loads read: those of their boundaries'
 * nodes (hk_springs_check, hk_loads_apply_region and the facets' outward normals look at no
 * other node), without the whole part's lists. */
static int region_node_cells(const hk_problem *p, hk_adj *n2c)
{
    const hk_mesh *m = p->mesh;
    uint8_t *want = NULL;
    HK_CALL(hk_calloc((size_t)m->nnodes + 1, 1, &want));
    for (int k = 0; p->supports && k < p->nsupports; k++)
        mark_boundary(m, p->supports[k].boundary, want);
    for (int l = 0; p->loads && l < p->nloads; l++)
        if (p->loads[l].kind != HK_LOAD_TEMPERATURE) /* its index is a region's */
            mark_boundary(m, p->loads[l].boundary, want);
    const int ierr = hk_asm_node_cells_of(m, want, n2c);
    free(want);
    return ierr;
}

int hk_assemble_prepare_region(const hk_problem *p, const hk_region_sums *rs, hk_system *s)
{
    int ierr;
    hk_adj n2c = {0};
    double t = 0;
    HK_CHECK(s, HK_ERR_ARG, "hk_assemble_prepare_region: the output system is NULL");
    memset(s, 0, sizeof *s);
    stage(NULL, &t);
    HK_TRY(hk_check_problem(p));
    stage("checks", &t);
    HK_TRY_CHECK(hk_rigid_count(p) == 0, HK_ERR_UNSUPPORTED,
                 "rigid couplings need the whole model in one process; use a distributing "
                 "coupling or run on one process");
    const hk_mesh *m = p->mesh;
    s->dim = m->dim;
    s->nnodes = m->nnodes;
    s->ndof = (int64_t)m->dim * m->nnodes;
    HK_TRY(hk_calloc((size_t)s->ndof + 1, sizeof *s->f_ext, &s->f_ext));
    HK_TRY(hk_calloc((size_t)s->ndof + 1, sizeof *s->fixed, &s->fixed));
    HK_TRY(hk_calloc((size_t)s->ndof + 1, sizeof *s->u_fixed, &s->u_fixed));
    HK_TRY(region_node_cells(p, &n2c));
    stage("adjacency", &t);
    HK_TRY(hk_supports_apply(p, s->fixed, s->u_fixed, &s->nfixed));
    HK_TRY(hk_springs_check(p, &n2c));
    stage("supports", &t);
    HK_TRY(hk_loads_apply_region(p, &n2c, rs, s->f_ext));
    stage("loads", &t);
    hk_adj_free(&n2c);
    return 0;
fail:
    hk_adj_free(&n2c);
    hk_system_free(s);
    return ierr;
}

int hk_assemble_rows(const hk_problem *p, hk_system *s)
{
    int ierr;
    hk_adj n2c = {0};
    double t = 0;
    HK_CHECK(s && s->fixed && s->u_fixed && s->f_ext && !s->f && !s->K.rowptr, HK_ERR_ARG,
             "hk_assemble_rows: give fixed, u_fixed and f_ext of the part's nodes (from "
             "hk_assemble_prepare), without K and f");
    stage(NULL, &t);
    HK_CALL(hk_check_problem(p));
    const hk_mesh *m = p->mesh;
    HK_CHECK(hk_rigid_count(p) == 0, HK_ERR_UNSUPPORTED,
             "rigid couplings need the whole model in one process; use a distributing coupling "
             "or run on one process");
    s->dim = m->dim;
    s->nnodes = m->nnodes;
    s->ndof = (int64_t)m->dim * m->nnodes;
    HK_CALL(hk_calloc((size_t)s->ndof, sizeof *s->f, &s->f));
    HK_TRY(hk_asm_node_cells(m, &n2c));
    HK_TRY(assemble_finish(p, &n2c, s, &t));
    hk_adj_free(&n2c);
    return 0;
fail:
    hk_adj_free(&n2c);
    return ierr;
}

int hk_assemble_modal(const hk_problem *p, hk_mass_kind mass, hk_system *s)
{
    int ierr;
    hk_adj n2c = {0};
    double t = 0;
    HK_CHECK(s, HK_ERR_ARG, "hk_assemble_modal: the output system is NULL");
    HK_CHECK(p && (mass == HK_MASS_CONSISTENT || mass == HK_MASS_LUMPED), HK_ERR_ARG,
             "hk_assemble_modal: no problem, or mass kind %d is neither consistent nor lumped",
             (int)mass);
    memset(s, 0, sizeof *s);
    /* the free vibrations: no loads, and so no rigid couplings (they belong to remote loads) */
    hk_problem q = *p;
    q.nloads = 0;
    q.loads = NULL;
    q.node_dT = NULL;
    memset(q.body_force, 0, sizeof q.body_force);
    memset(q.gravity, 0, sizeof q.gravity);
    stage(NULL, &t);
    HK_TRY(hk_check_problem(&q));
    stage("checks", &t);
    const hk_mesh *m = q.mesh;
    s->dim = m->dim;
    s->nnodes = m->nnodes;
    s->ndof = (int64_t)m->dim * m->nnodes;
    HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->f_ext, &s->f_ext));
    HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->f, &s->f));
    HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->fixed, &s->fixed));
    HK_TRY(hk_calloc((size_t)s->ndof, sizeof *s->u_fixed, &s->u_fixed));
    HK_TRY(hk_asm_node_cells(m, &n2c));
    stage("adjacency", &t);
    HK_TRY(hk_supports_apply(&q, s->fixed, s->u_fixed, &s->nfixed));
    memset(s->u_fixed, 0, (size_t)s->ndof * sizeof *s->u_fixed); /* modes: held at zero */
    HK_TRY(hk_springs_check(&q, &n2c));
    HK_TRY(hk_count_rigid(&q, &n2c, s->fixed, hk_springs_directions, &s->free_rigid));
    stage("supports", &t);
    HK_TRY(hk_asm_pattern(m, &n2c, &s->K));
    stage("pattern", &t);
    HK_TRY(assemble_numeric(&q, &n2c, &s->K, NULL));
    HK_TRY(hk_springs_add(&q, &n2c, &s->K));
    stage("numeric", &t);
    HK_TRY(hk_eliminate(s, &n2c));
    stage("eliminate", &t);
    HK_TRY(hk_mass_assemble(&q, &n2c, &s->K, mass == HK_MASS_LUMPED, &s->M));
    stage("mass", &t);
    HK_TRY(hk_mass_eliminate(s));
    stage("mass elim", &t);
    hk_adj_free(&n2c);
    return 0;
fail:
    hk_adj_free(&n2c);
    hk_system_free(s);
    return ierr;
}
