/* Assembly tests: patch tests on distorted meshes of every element type, closed-form
 * uniaxial tension (traction and pressure), load resultants, SPD after elimination, the
 * rigid-body and Jacobian checks, material checks, and O(h^2) convergence of linear elements.
 *
 * The meshes are built here (not with mesh/'s generators) so that the distortion is under the
 * test's control: a structured lattice of corner points, interior corners moved at random,
 * midside/face/centre nodes placed by the element's own straight-sided map (edge midpoints,
 * face and cell averages), so every element is a valid distorted isoparametric element. */
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "../assembly/checks.h"
#include "../assembly/constraints.h"
#include "../assembly/elements.h"
#include "../assembly/pattern.h"
#include "hooke/fem.h"
#include "test_util.h"

/* ---- structured test meshes -------------------------------------------------------------- */

typedef struct tmesh {
    hk_mesh m;
    hk_material mat;
    int nsides; /* boundaries[0 .. nsides): sides; then one point group per boundary node */
} tmesh;

static const double LX = 2.0, LY = 1.0, LZ = 1.5;

/* Lattice offsets (units of half a cell) of the nodes of the pieces of one cell of type t:
 * 1 piece for line/quad/hex, 2 triangles per square, 6 Kuhn tetrahedra per cube (all along
 * the diagonal from the low to the high corner, so neighbouring cells conform). */
static int cell_pieces(hk_eltype t, int off[6][HK_EL_MAXN][3])
{
    const hk_elref *r = hk_elref_get(t);
    memset(off, 0, sizeof(int[6][HK_EL_MAXN][3]));
    if (!r->simplex) {
        for (int a = 0; a < r->nnodes; a++)
            for (int k = 0; k < r->dim; k++)
                off[0][a][k] = (int)lround(r->xi[a][k]) + 1;
        return 1;
    }
    int vert[6][4][3], np = 0;
    if (r->dim == 2) {
        int v[2][3][3] = {{{0, 0, 0}, {2, 0, 0}, {2, 2, 0}}, {{0, 0, 0}, {2, 2, 0}, {0, 2, 0}}};
        np = 2;
        for (int pc = 0; pc < 2; pc++)
            for (int k = 0; k < 3; k++) {
                for (int s = 0; s < 3; s++)
                    vert[pc][s][k] = v[pc][s][k];
                vert[pc][3][k] = 0;
            }
    } else {
        static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                        {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
        for (np = 0; np < 6; np++) {
            int p[3] = {0, 0, 0};
            for (int k = 0; k < 3; k++)
                vert[np][0][k] = 0;
            for (int s = 0; s < 3; s++) {
                p[perms[np][s]] = 2;
                for (int k = 0; k < 3; k++)
                    vert[np][s + 1][k] = p[k];
            }
            int e[3][3];
            for (int s = 0; s < 3; s++)
                for (int k = 0; k < 3; k++)
                    e[s][k] = vert[np][s + 1][k];
            int det = e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) -
                      e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0]) +
                      e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0]);
            if (det < 0)
                for (int k = 0; k < 3; k++) {
                    int tmp = vert[np][1][k];
                    vert[np][1][k] = vert[np][2][k];
                    vert[np][2][k] = tmp;
                }
        }
    }
    for (int pc = 0; pc < np; pc++)
        for (int a = 0; a < r->nnodes; a++)
            for (int k = 0; k < 3; k++) {
                double v = vert[pc][0][k];
                for (int s = 0; s < r->dim; s++)
                    v += r->xi[a][s] * (vert[pc][s + 1][k] - vert[pc][0][k]);
                off[pc][a][k] = (int)lround(v);
            }
    return np;
}

static unsigned lcg(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

typedef struct lattice {
    int d, L, n, simplex;
    double h[3];
    double *jit; /* 3 per lattice point */
    int32_t *id;
} lattice;

static int64_t lat_at(const lattice *lt, const int *P)
{
    return lt->d == 2 ? P[0] + (int64_t)lt->L * P[1]
                      : P[0] + (int64_t)lt->L * (P[1] + (int64_t)lt->L * P[2]);
}

/* Position of a corner lattice point (all coordinates even). */
static void corner_pos(const lattice *lt, const int *P, double *x)
{
    const double *j = lt->jit + 3 * lat_at(lt, P);
    for (int k = 0; k < 3; k++)
        x[k] = k < lt->d ? 0.5 * P[k] * lt->h[k] + j[k] : 0;
}

/* Position of any lattice point: corners as they are; others by the straight-sided map. */
static void lattice_pos(const lattice *lt, const int *P, double *x)
{
    int odd[3], no = 0;
    for (int k = 0; k < lt->d; k++)
        if (P[k] & 1) odd[no++] = k;
    if (no == 0) {
        corner_pos(lt, P, x);
        return;
    }
    for (int k = 0; k < 3; k++)
        x[k] = 0;
    if (lt->simplex) { /* midpoint of the low-to-high diagonal */
        int A[3] = {P[0], P[1], P[2]}, B[3] = {P[0], P[1], P[2]};
        double xa[3], xb[3];
        for (int s = 0; s < no; s++)
            A[odd[s]]--, B[odd[s]]++;
        corner_pos(lt, A, xa);
        corner_pos(lt, B, xb);
        for (int k = 0; k < 3; k++)
            x[k] = 0.5 * (xa[k] + xb[k]);
        return;
    }
    for (int c = 0; c < (1 << no); c++) { /* average of the surrounding corners */
        int A[3] = {P[0], P[1], P[2]};
        double xa[3];
        for (int s = 0; s < no; s++)
            A[odd[s]] += (c >> s & 1) ? 1 : -1;
        corner_pos(lt, A, xa);
        for (int k = 0; k < 3; k++)
            x[k] += xa[k] / (1 << no);
    }
}

/* Fill an hk_elems of elements of type t over an n^dim block of cells, with lattice
 * coordinates mapped by axes (local axis s -> global axis axes[s]) and fixedP[] for the rest.
 * New lattice points get node ids only when new_nodes (cells); facets reuse them. */
static void gen_elems(lattice *lt, hk_eltype t, int n, const int *axes, const int *fixedP,
                      hk_elems *es, int64_t *nextid, int new_nodes)
{
    const hk_elref *r = hk_elref_get(t);
    int off[6][HK_EL_MAXN][3];
    int np = cell_pieces(t, off);
    int64_t ncell = 1;
    for (int s = 0; s < r->dim; s++)
        ncell *= n;
    es->n = ncell * np;
    es->type = malloc((size_t)es->n);
    es->ptr = malloc((size_t)(es->n + 1) * sizeof *es->ptr);
    es->nodes = malloc((size_t)(es->n * r->nnodes) * sizeof *es->nodes);
    es->tag = malloc((size_t)es->n * sizeof *es->tag);
    int64_t e = 0;
    for (int64_t c = 0; c < ncell; c++) {
        int ci[3] = {0, 0, 0};
        int64_t rem = c;
        for (int s = 0; s < r->dim; s++)
            ci[s] = (int)(rem % n), rem /= n;
        for (int pc = 0; pc < np; pc++, e++) {
            es->type[e] = (uint8_t)t;
            es->ptr[e] = e * r->nnodes;
            es->tag[e] = 1000 + e;
            for (int a = 0; a < r->nnodes; a++) {
                int P[3] = {fixedP[0], fixedP[1], fixedP[2]};
                for (int s = 0; s < r->dim; s++)
                    P[axes[s]] = 2 * ci[s] + off[pc][a][s];
                int64_t li = lat_at(lt, P);
                if (lt->id[li] < 0) {
                    if (!new_nodes) abort(); /* facets only reuse the cells' nodes */
                    lt->id[li] = (int32_t)(*nextid)++;
                }
                es->nodes[e * r->nnodes + a] = lt->id[li];
            }
        }
    }
    es->ptr[es->n] = es->n * r->nnodes;
}

/* A distorted [0,LX]x[0,LY](x[0,LZ]) mesh of n cells per direction of type t; amp is the
 * corner jitter in cell sizes; pointgroups adds one point group per boundary node. */
static void tmesh_make(hk_eltype t, int n, double amp, unsigned seed, int pointgroups, tmesh *tm)
{
    memset(tm, 0, sizeof *tm);
    const hk_elref *r = hk_elref_get(t);
    hk_mesh *m = &tm->m;
    lattice lt = {.d = r->dim, .L = 2 * n + 1, .n = n, .simplex = r->simplex};
    lt.h[0] = LX / n, lt.h[1] = LY / n, lt.h[2] = LZ / n;
    int64_t nl = lt.d == 2 ? (int64_t)lt.L * lt.L : (int64_t)lt.L * lt.L * lt.L;
    lt.jit = calloc((size_t)nl * 3, sizeof *lt.jit);
    lt.id = malloc((size_t)nl * sizeof *lt.id);
    for (int64_t i = 0; i < nl; i++) {
        lt.id[i] = -1;
        int P[3] = {(int)(i % lt.L), (int)(i / lt.L % lt.L), (int)(i / lt.L / lt.L)};
        int interior = 1;
        for (int k = 0; k < lt.d; k++)
            interior &= P[k] > 0 && P[k] < 2 * n;
        for (int k = 0; k < lt.d; k++) {
            double u = (double)(lcg(&seed) % 100001) / 50000.0 - 1.0;
            if (interior) lt.jit[3 * i + k] = amp * lt.h[k] * u;
        }
    }
    m->dim = lt.d;
    int64_t nid = 0;
    int axes[3] = {0, 1, 2}, fixedP[3] = {0, 0, 0};
    gen_elems(&lt, t, n, axes, fixedP, &m->cells, &nid, 1);
    m->nnodes = nid;
    m->coords = calloc((size_t)nid * 3, sizeof *m->coords);
    for (int64_t i = 0; i < nl; i++) {
        if (lt.id[i] < 0) continue;
        int P[3] = {(int)(i % lt.L), (int)(i / lt.L % lt.L), (int)(i / lt.L / lt.L)};
        lattice_pos(&lt, P, m->coords + 3 * (size_t)lt.id[i]);
    }
    m->cell_region = calloc((size_t)m->cells.n, sizeof *m->cell_region);
    m->nregions = 1;
    m->regions = calloc(1, sizeof *m->regions);
    strcpy(m->regions[0].name, "body");
    m->regions[0].dim = lt.d;
    /* sides */
    static const char *const n2[4] = {"left", "right", "bottom", "top"};
    static const char *const n3[6] = {"xmin", "xmax", "ymin", "ymax", "zmin", "zmax"};
    tm->nsides = 2 * lt.d;
    int nbnd = 0;
    if (pointgroups)
        for (int64_t i = 0; i < nl; i++) {
            if (lt.id[i] < 0) continue;
            int P[3] = {(int)(i % lt.L), (int)(i / lt.L % lt.L), (int)(i / lt.L / lt.L)};
            int onb = 0;
            for (int k = 0; k < lt.d; k++)
                onb |= P[k] == 0 || P[k] == 2 * n;
            nbnd += onb;
        }
    m->nboundaries = tm->nsides + nbnd;
    m->boundaries = calloc((size_t)m->nboundaries, sizeof *m->boundaries);
    for (int sd = 0; sd < tm->nsides; sd++) {
        hk_group *g = &m->boundaries[sd];
        int ax = sd / 2, hi = sd % 2, fa[2], s = 0;
        for (int k = 0; k < lt.d; k++)
            if (k != ax) fa[s++] = k;
        int fp[3] = {0, 0, 0};
        fp[ax] = hi ? 2 * n : 0;
        strcpy(g->name, lt.d == 2 ? n2[sd] : n3[sd]);
        g->dim = lt.d - 1;
        g->tag = sd + 1;
        gen_elems(&lt, hk_eltype_facet(t), n, fa, fp, &g->elems, &nid, 0);
    }
    int b = tm->nsides;
    if (pointgroups)
        for (int64_t i = 0; i < nl; i++) {
            if (lt.id[i] < 0) continue;
            int P[3] = {(int)(i % lt.L), (int)(i / lt.L % lt.L), (int)(i / lt.L / lt.L)};
            int onb = 0;
            for (int k = 0; k < lt.d; k++)
                onb |= P[k] == 0 || P[k] == 2 * n;
            if (!onb) continue;
            hk_group *g = &m->boundaries[b++];
            snprintf(g->name, sizeof g->name, "node%d", lt.id[i]);
            g->dim = 0;
            g->nnodes = 1;
            g->nodes = malloc(sizeof *g->nodes);
            g->nodes[0] = lt.id[i];
        }
    free(lt.jit);
    free(lt.id);
    tm->mat = (hk_material){.name = "steel", .E = 200e9, .nu = 0.3, .rho = 7800};
}

static void elems_free(hk_elems *e)
{
    free(e->type);
    free(e->ptr);
    free(e->nodes);
    free(e->tag);
}

static void tmesh_free(tmesh *tm)
{
    hk_mesh *m = &tm->m;
    elems_free(&m->cells);
    free(m->coords);
    free(m->cell_region);
    free(m->regions);
    for (int b = 0; b < m->nboundaries; b++) {
        elems_free(&m->boundaries[b].elems);
        free(m->boundaries[b].nodes);
    }
    free(m->boundaries);
    memset(tm, 0, sizeof *tm);
}

static hk_problem tproblem(const tmesh *tm, hk_analysis a)
{
    hk_problem p = {0};
    p.mesh = &tm->m;
    p.analysis = tm->m.dim == 3 ? HK_SOLID : a;
    p.thickness = tm->m.dim == 2 ? 0.1 : 0;
    p.materials = &tm->mat;
    return p;
}

/* y = K x, serial (small systems: no thread start-up in the loop). */
static void spmv_serial(const hk_bcsr *K, const double *x, double *y)
{
    const int bs = K->bs;
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int r = 0; r < bs; r++) {
            double acc = 0;
            for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++)
                for (int c = 0; c < bs; c++)
                    acc += K->val[(k * bs + r) * bs + c] * x[K->colind[k] * bs + c];
            y[i * bs + r] = acc;
        }
}

/* Jacobi-preconditioned CG on K to a relative residual of 1e-13 (large systems). */
static int cg_solve(const hk_bcsr *K, const double *b, double *x)
{
    const int bs = K->bs;
    const int64_t n = K->nbrows * bs;
    double *r = malloc(n * sizeof *r), *z = malloc(n * sizeof *z), *pp = malloc(n * sizeof *pp),
           *q = malloc(n * sizeof *q), *dinv = malloc(n * sizeof *dinv);
    for (int64_t i = 0; i < K->nbrows; i++)
        for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++)
            if (K->colind[k] == i)
                for (int c = 0; c < bs; c++)
                    dinv[i * bs + c] = 1 / K->val[(k * bs + c) * bs + c];
    double bn = 0, rz = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = 0, r[i] = b[i], z[i] = dinv[i] * r[i], pp[i] = z[i];
        bn += b[i] * b[i], rz += r[i] * z[i];
    }
    bn = sqrt(bn);
    int it;
    for (it = 0; it < 20000; it++) {
        spmv_serial(K, pp, q);
        double pq = 0;
        for (int64_t i = 0; i < n; i++)
            pq += pp[i] * q[i];
        double al = rz / pq, rn = 0;
        for (int64_t i = 0; i < n; i++)
            x[i] += al * pp[i], r[i] -= al * q[i], rn += r[i] * r[i];
        if (sqrt(rn) <= 1e-13 * bn) break;
        double rz2 = 0;
        for (int64_t i = 0; i < n; i++)
            z[i] = dinv[i] * r[i], rz2 += r[i] * z[i];
        for (int64_t i = 0; i < n; i++)
            pp[i] = z[i] + rz2 / rz * pp[i];
        rz = rz2;
    }
    free(r), free(z), free(pp), free(q), free(dinv);
    return it < 20000 ? 0 : -1;
}

/* Solve the eliminated system: dense Cholesky when small, CG otherwise. */
static void solve_system(const hk_system *s, double *u)
{
    const int64_t n = s->ndof;
    if (n <= 1500) {
        double *A = hk_test_dense_of(&s->K);
        CU_ASSERT_EQUAL_FATAL(hk_test_cholesky(n, A), 0);
        memcpy(u, s->f, n * sizeof *u);
        hk_test_cholesky_solve(n, A, u);
        free(A);
    } else {
        CU_ASSERT_EQUAL_FATAL(cg_solve(&s->K, s->f, u), 0);
    }
}

/* ---- patch test -------------------------------------------------------------------------- */

/* Linear field u_i = c_i + sum_k G[i][k] x_k. */
static const double PG[3][3] = {
    {1.0e-3, 2.0e-3, -0.5e-3}, {-1.5e-3, 0.7e-3, 1.1e-3}, {0.4e-3, -0.9e-3, 1.3e-3}};
static const double PC[3] = {1e-3, -2e-3, 0.5e-3};

static void linear_field(int d, const double *x, double *u)
{
    for (int i = 0; i < d; i++) {
        u[i] = PC[i];
        for (int k = 0; k < d; k++)
            u[i] += PG[i][k] * x[k];
    }
}

/* Max over elements and quadrature points of |grad u_h - G| / |G|. */
static double gradient_error(const hk_mesh *m, const double *u)
{
    const int d = m->dim;
    double err = 0;
    for (int64_t e = 0; e < m->cells.n; e++) {
        const hk_elref *r = hk_elref_get((hk_eltype)m->cells.type[e]);
        const int32_t *nd = m->cells.nodes + m->cells.ptr[e];
        for (int q = 0; q < r->nqp; q++) {
            double J[3][3] = {{0}}, Ji[3][3] = {{0}};
            for (int a = 0; a < r->nnodes; a++)
                for (int i = 0; i < d; i++)
                    for (int k = 0; k < d; k++)
                        J[i][k] += m->coords[3 * nd[a] + i] * r->dN[q][a][k];
            if (d == 2) {
                double det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
                Ji[0][0] = J[1][1] / det, Ji[0][1] = -J[0][1] / det;
                Ji[1][0] = -J[1][0] / det, Ji[1][1] = J[0][0] / det;
            } else {
                double det = J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
                             J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
                             J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++) {
                        int i1 = (j + 1) % 3, i2 = (j + 2) % 3, j1 = (i + 1) % 3, j2 = (i + 2) % 3;
                        Ji[i][j] = (J[i1][j1] * J[i2][j2] - J[i1][j2] * J[i2][j1]) / det;
                    }
            }
            for (int i = 0; i < d; i++)
                for (int k = 0; k < d; k++) {
                    double gsum = 0;
                    for (int a = 0; a < r->nnodes; a++) {
                        double dx = 0;
                        for (int l = 0; l < d; l++)
                            dx += r->dN[q][a][l] * Ji[l][k];
                        gsum += u[nd[a] * d + i] * dx;
                    }
                    err = fmax(err, fabs(gsum - PG[i][k]) / 2e-3);
                }
        }
    }
    return err;
}

static void patch_test(hk_eltype t, hk_analysis a)
{
    const hk_elref *r = hk_elref_get(t);
    int n = r->dim == 2 ? 4 : 3;
    tmesh tm;
    tmesh_make(t, n, 0.2, 12345u + (unsigned)t, 1, &tm);
    const hk_mesh *m = &tm.m;
    const int d = m->dim;
    int ns = m->nboundaries - tm.nsides;
    hk_support *sup = calloc((size_t)ns, sizeof *sup);
    for (int k = 0; k < ns; k++) {
        const hk_group *g = &m->boundaries[tm.nsides + k];
        sup[k].boundary = tm.nsides + k;
        sup[k].mask = d == 2 ? 3 : 7;
        linear_field(d, m->coords + 3 * g->nodes[0], sup[k].value);
    }
    hk_problem p = tproblem(&tm, a);
    p.nsupports = ns;
    p.supports = sup;
    hk_system s;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    double *u = malloc(s.ndof * sizeof *u), *ue = malloc(s.ndof * sizeof *ue);
    solve_system(&s, u);
    int64_t nfree = 0;
    for (int64_t i = 0; i < m->nnodes; i++) {
        linear_field(d, m->coords + 3 * i, ue + i * d);
        nfree += !s.fixed[i * d];
    }
    CU_ASSERT(nfree > 0); /* the interior is really solved */
    double err = hk_test_reldiff(u, ue, (long)s.ndof);
    double gerr = gradient_error(m, u);
    if (err > 1e-10 || gerr > 1e-9)
        fprintf(stderr, "\n  patch %s: displacement error %.2e, gradient error %.2e\n", r->name,
                err, gerr);
    CU_ASSERT(err <= 1e-10);
    CU_ASSERT(gerr <= 1e-9);
    free(u);
    free(ue);
    free(sup);
    hk_system_free(&s);
    tmesh_free(&tm);
}

static const hk_eltype all_types[10] = {HK_EL_TRI3,  HK_EL_TRI6, HK_EL_QUAD4, HK_EL_QUAD8,
                                        HK_EL_QUAD9, HK_EL_TET4, HK_EL_TET10, HK_EL_HEX8,
                                        HK_EL_HEX20, HK_EL_HEX27};

static void test_patch_plane_stress(void)
{
    for (int k = 0; k < 5; k++)
        patch_test(all_types[k], HK_PLANE_STRESS);
}
static void test_patch_plane_strain(void)
{
    for (int k = 0; k < 5; k++)
        patch_test(all_types[k], HK_PLANE_STRAIN);
}
static void test_patch_3d(void)
{
    for (int k = 5; k < 10; k++)
        patch_test(all_types[k], HK_SOLID);
}

/* ---- shape functions --------------------------------------------------------------------- */

/* Kronecker property at the nodes, partition of unity and exact derivatives (finite
 * differences) at an interior point, for every element type. */
static void test_shape_functions(void)
{
    for (int t = HK_EL_LINE2; t <= HK_EL_HEX27; t++) {
        const hk_elref *r = hk_elref_get((hk_eltype)t);
        double N[HK_EL_MAXN], dN[HK_EL_MAXN][3];
        for (int a = 0; a < r->nnodes; a++) {
            hk_el_shape((hk_eltype)t, r->xi[a], N, dN);
            for (int b = 0; b < r->nnodes; b++)
                CU_ASSERT_DOUBLE_EQUAL(N[b], a == b, 1e-14);
        }
        double x[3] = {0.21, 0.17, 0.13}, s = 0, g[3] = {0, 0, 0};
        hk_el_shape((hk_eltype)t, x, N, dN);
        for (int a = 0; a < r->nnodes; a++) {
            s += N[a];
            for (int k = 0; k < 3; k++)
                g[k] += dN[a][k];
        }
        CU_ASSERT_DOUBLE_EQUAL(s, 1, 1e-14);
        for (int k = 0; k < 3; k++)
            CU_ASSERT_DOUBLE_EQUAL(g[k], 0, 1e-13);
        for (int k = 0; k < r->dim; k++) {
            double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]}, Np[HK_EL_MAXN],
                   Nm[HK_EL_MAXN], dd[HK_EL_MAXN][3];
            xp[k] += 1e-6, xm[k] -= 1e-6;
            hk_el_shape((hk_eltype)t, xp, Np, dd);
            hk_el_shape((hk_eltype)t, xm, Nm, dd);
            for (int a = 0; a < r->nnodes; a++)
                CU_ASSERT_DOUBLE_EQUAL((Np[a] - Nm[a]) / 2e-6, dN[a][k], 1e-8);
        }
        /* the rule integrates 1 to the reference measure */
        double w = 0;
        for (int q = 0; q < r->nqp; q++)
            w += r->qw[q];
        double meas = r->simplex ? (r->dim == 2 ? 0.5 : 1.0 / 6) : pow(2, r->dim);
        CU_ASSERT_DOUBLE_EQUAL(w, meas, 1e-14);
    }
}

/* Node ordering against Gmsh's reference coordinates, written out here from the Gmsh manual
 * ("Node ordering") independently of assembly/elements.c: N_b(node a) = delta_ab. */
static void test_gmsh_ordering(void)
{
    static const double line3[3][3] = {{-1, 0, 0}, {1, 0, 0}, {0, 0, 0}};
    static const double tri6[6][3] = {{0, 0, 0},  {1, 0, 0},   {0, 1, 0},
                                      {.5, 0, 0}, {.5, .5, 0}, {0, .5, 0}};
    static const double quad9[9][3] = {{-1, -1, 0}, {1, -1, 0}, {1, 1, 0},  {-1, 1, 0}, {0, -1, 0},
                                       {1, 0, 0},   {0, 1, 0},  {-1, 0, 0}, {0, 0, 0}};
    static const double tet10[10][3] = {{0, 0, 0},   {1, 0, 0},   {0, 1, 0},  {0, 0, 1},
                                        {.5, 0, 0},  {.5, .5, 0}, {0, .5, 0}, {0, 0, .5},
                                        {0, .5, .5}, {.5, 0, .5}};
    static const double hex27[27][3] = {
        {-1, -1, -1}, {1, -1, -1}, {1, 1, -1},  {-1, 1, -1}, {-1, -1, 1}, {1, -1, 1}, {1, 1, 1},
        {-1, 1, 1},   {0, -1, -1}, {-1, 0, -1}, {-1, -1, 0}, {1, 0, -1},  {1, -1, 0}, {0, 1, -1},
        {1, 1, 0},    {-1, 1, 0},  {0, -1, 1},  {-1, 0, 1},  {1, 0, 1},   {0, 1, 1},  {0, 0, -1},
        {0, -1, 0},   {-1, 0, 0},  {1, 0, 0},   {0, 1, 0},   {0, 0, 1},   {0, 0, 0}};
    static const struct {
        hk_eltype t;
        const double (*x)[3];
    } tab[] = {{HK_EL_LINE2, line3}, {HK_EL_LINE3, line3}, {HK_EL_TRI3, tri6},
               {HK_EL_TRI6, tri6},   {HK_EL_QUAD4, quad9}, {HK_EL_QUAD8, quad9},
               {HK_EL_QUAD9, quad9}, {HK_EL_TET4, tet10},  {HK_EL_TET10, tet10},
               {HK_EL_HEX8, hex27},  {HK_EL_HEX20, hex27}, {HK_EL_HEX27, hex27}};
    for (size_t k = 0; k < sizeof tab / sizeof tab[0]; k++) {
        const hk_elref *r = hk_elref_get(tab[k].t);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        for (int a = 0; a < r->nnodes; a++) {
            double N[HK_EL_MAXN], dN[HK_EL_MAXN][3];
            hk_el_shape(tab[k].t, tab[k].x[a], N, dN);
            for (int b = 0; b < r->nnodes; b++) {
                if (fabs(N[b] - (a == b)) > 1e-14)
                    fprintf(stderr, "\n  %s: N_%d(node %d) = %g\n", r->name, b, a, N[b]);
                CU_ASSERT_DOUBLE_EQUAL(N[b], a == b, 1e-14);
            }
        }
    }
}

/* Patch test on meshes of mesh/'s generators (hk_mesh_rectangle, hk_mesh_box): their Gmsh
 * ordering against ours. Interior corner nodes are moved at random, the higher-order nodes
 * are put back on the straight-sided map of the corners. */
static void generator_patch(hk_eltype t)
{
    const hk_elref *r = hk_elref_get(t);
    hk_mesh g;
    memset(&g, 0, sizeof g);
    int err = r->dim == 2 ? hk_mesh_rectangle(LX, LY, 3, 3, t, &g)
                          : hk_mesh_box(LX, LY, LZ, 2, 2, 2, t, &g);
    if (err) fprintf(stderr, "\n  generator %s: %s\n", r->name, hk_error_message());
    CU_ASSERT_EQUAL_FATAL(err, 0);
    const int d = g.dim;
    const double Ls[3] = {LX, LY, LZ};
    unsigned seed = 4242u + (unsigned)t;
    /* corners: the first ncorners nodes of each cell */
    char *corner = calloc((size_t)g.nnodes, 1), *onb = calloc((size_t)g.nnodes, 1);
    for (int64_t e = 0; e < g.cells.n; e++)
        for (int a = 0; a < r->ncorners; a++)
            corner[g.cells.nodes[g.cells.ptr[e] + a]] = 1;
    for (int64_t i = 0; i < g.nnodes; i++)
        for (int k = 0; k < d; k++) {
            double x = g.coords[3 * i + k];
            onb[i] |= fabs(x) < 1e-12 || fabs(x - Ls[k]) < 1e-12;
        }
    double h = LY / 3;
    for (int64_t i = 0; i < g.nnodes; i++)
        for (int k = 0; k < d; k++) {
            double u = (double)(lcg(&seed) % 100001) / 50000.0 - 1.0;
            if (corner[i] && !onb[i]) g.coords[3 * i + k] += 0.15 * h * u;
        }
    hk_eltype lin = r->dim == 2 ? (r->simplex ? HK_EL_TRI3 : HK_EL_QUAD4)
                                : (r->simplex ? HK_EL_TET4 : HK_EL_HEX8);
    for (int64_t e = 0; e < g.cells.n; e++) {
        const int32_t *nd = g.cells.nodes + g.cells.ptr[e];
        for (int a = r->ncorners; a < r->nnodes; a++) {
            double N[HK_EL_MAXN], dN[HK_EL_MAXN][3], x[3] = {0, 0, 0};
            hk_el_shape(lin, r->xi[a], N, dN);
            for (int c = 0; c < r->ncorners; c++)
                for (int k = 0; k < 3; k++)
                    x[k] += N[c] * g.coords[3 * nd[c] + k];
            for (int k = 0; k < 3; k++)
                g.coords[3 * nd[a] + k] = x[k];
        }
    }
    /* our own groups: one per boundary node */
    tmesh tm;
    memset(&tm, 0, sizeof tm);
    tm.m = g;
    tm.m.nboundaries = 0;
    tm.m.boundaries = NULL;
    tm.mat = (hk_material){.name = "steel", .E = 200e9, .nu = 0.3, .rho = 7800};
    int nb = 0;
    for (int64_t i = 0; i < g.nnodes; i++)
        nb += onb[i];
    hk_group *grp = calloc((size_t)nb, sizeof *grp);
    hk_support *sup = calloc((size_t)nb, sizeof *sup);
    nb = 0;
    for (int64_t i = 0; i < g.nnodes; i++) {
        if (!onb[i]) continue;
        grp[nb].dim = 0;
        grp[nb].nnodes = 1;
        grp[nb].nodes = malloc(sizeof(int32_t));
        grp[nb].nodes[0] = (int32_t)i;
        sup[nb] = (hk_support){.boundary = nb, .mask = 7};
        linear_field(d, g.coords + 3 * i, sup[nb].value);
        nb++;
    }
    tm.m.boundaries = grp;
    tm.m.nboundaries = nb;
    hk_problem p = tproblem(&tm, HK_PLANE_STRAIN);
    p.nsupports = nb, p.supports = sup;
    hk_system s;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    double *u = malloc(s.ndof * sizeof *u), *ue = malloc(s.ndof * sizeof *ue);
    solve_system(&s, u);
    for (int64_t i = 0; i < g.nnodes; i++)
        linear_field(d, g.coords + 3 * i, ue + i * d);
    double e1 = hk_test_reldiff(u, ue, (long)s.ndof), e2 = gradient_error(&tm.m, u);
    if (e1 > 1e-10 || e2 > 1e-9)
        fprintf(stderr, "\n  generator patch %s: %.2e %.2e\n", r->name, e1, e2);
    CU_ASSERT(e1 <= 1e-10);
    CU_ASSERT(e2 <= 1e-9);
    hk_system_free(&s);
    for (int b = 0; b < nb; b++)
        free(grp[b].nodes);
    free(grp);
    free(sup);
    free(u);
    free(ue);
    free(corner);
    free(onb);
    hk_mesh_free(&g);
}

static void test_generator_patch(void)
{
    for (int k = 0; k < 10; k++)
        generator_patch(all_types[k]);
}

/* ---- uniaxial tension: closed form ------------------------------------------------------- */

/* Symmetry supports (x on xmin, y on ymin, z on zmin) and a traction or pressure on xmax:
 * u_x = s x / E', u_y = -nu' s y / E', (u_z = -nu s z / E). */
static void tension(hk_eltype t, hk_analysis a, int pressure)
{
    tmesh tm;
    tmesh_make(t, 3, 0.2, 777u + (unsigned)t, 0, &tm);
    const hk_mesh *m = &tm.m;
    const int d = m->dim;
    hk_support sup[3];
    for (int c = 0; c < d; c++)
        sup[c] = (hk_support){.boundary = 2 * c, .mask = 1u << c};
    const double sig = 50e6;
    hk_load ld = {.kind = pressure ? HK_LOAD_PRESSURE : HK_LOAD_TRACTION, .boundary = 1};
    if (pressure)
        ld.value[0] = -sig; /* negative pressure pulls */
    else
        ld.value[0] = sig;
    hk_problem p = tproblem(&tm, a);
    p.nsupports = d;
    p.supports = sup;
    p.nloads = 1;
    p.loads = &ld;
    hk_system s;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    double *u = malloc(s.ndof * sizeof *u), *ue = malloc(s.ndof * sizeof *ue);
    solve_system(&s, u);
    double E = tm.mat.E, nu = tm.mat.nu, Ep = E, nup = nu;
    if (d == 2 && a == HK_PLANE_STRAIN) Ep = E / (1 - nu * nu), nup = nu / (1 - nu);
    for (int64_t i = 0; i < m->nnodes; i++) {
        const double *x = m->coords + 3 * i;
        ue[i * d] = sig * x[0] / Ep;
        for (int c = 1; c < d; c++)
            ue[i * d + c] = -nup * sig * x[c] / Ep;
    }
    double err = hk_test_reldiff(u, ue, (long)s.ndof);
    if (err > 1e-9)
        fprintf(stderr, "\n  tension %s %s: error %.2e\n", hk_el_name(t),
                pressure ? "pressure" : "traction", err);
    CU_ASSERT(err <= 1e-9);
    free(u);
    free(ue);
    hk_system_free(&s);
    tmesh_free(&tm);
}

static void test_tension(void)
{
    for (int k = 0; k < 5; k++) {
        tension(all_types[k], HK_PLANE_STRESS, 0);
        tension(all_types[k], HK_PLANE_STRAIN, 1);
    }
    for (int k = 5; k < 10; k++)
        tension(all_types[k], HK_SOLID, k % 2);
}

/* The assembled system solved by the library (cg + jacobi) on every backend gives the
 * closed-form tension field: assembly's K is what the solver expects. */
static void test_library_solve(void)
{
    tmesh tm;
    tmesh_make(HK_EL_HEX20, 3, 0.2, 321u, 0, &tm);
    const hk_mesh *m = &tm.m;
    hk_support sup[3];
    for (int c = 0; c < 3; c++)
        sup[c] = (hk_support){.boundary = 2 * c, .mask = 1u << c};
    hk_load ld = {.kind = HK_LOAD_PRESSURE, .boundary = 1, .value = {-20e6}};
    hk_problem p = tproblem(&tm, HK_SOLID);
    p.nsupports = 3, p.supports = sup, p.nloads = 1, p.loads = &ld;
    hk_system s;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    double *u = malloc(s.ndof * sizeof *u), *ue = malloc(s.ndof * sizeof *ue);
    for (int64_t i = 0; i < m->nnodes; i++)
        for (int c = 0; c < 3; c++)
            ue[3 * i + c] = (c == 0 ? 1 : -tm.mat.nu) * 20e6 * m->coords[3 * i + c] / tm.mat.E;
    for (const hk_backend *const *b = hk_test_backends(); *b; b++) {
        char opt[128];
        snprintf(opt, sizeof opt, "backend=%s method=cg pc=jacobi tol=1e-13 maxit=20000",
                 hk_backend_name(*b));
        hk_options *o;
        hk_solver *sv;
        hk_result res;
        HK_ASSERT_OK(hk_options_create(&o));
        HK_ASSERT_OK(hk_options_parse(o, opt));
        HK_ASSERT_OK(hk_solver_create(&s.K, o, &sv));
        memset(u, 0, s.ndof * sizeof *u);
        HK_ASSERT_OK(hk_solver_solve(sv, s.f, u, &res));
        double err = hk_test_reldiff(u, ue, (long)s.ndof);
        if (err > 1e-9)
            fprintf(stderr, "\n  library solve on %s: error %.2e (%d iterations, %s)\n",
                    hk_backend_name(*b), err, res.iterations, hk_reason_name(res.reason));
        CU_ASSERT(err <= 1e-9);
        hk_solver_destroy(sv);
        hk_options_destroy(o);
    }
    free(u);
    free(ue);
    hk_system_free(&s);
    tmesh_free(&tm);
}

/* ---- load resultants --------------------------------------------------------------------- */

static void sum_force(const hk_system *s, double *F)
{
    for (int c = 0; c < 3; c++)
        F[c] = 0;
    for (int64_t i = 0; i < s->ndof; i++)
        F[i % s->dim] += s->f_ext[i];
}

/* Supports that hold the model: the whole xmin / left side fixed (the loads stay in f_ext,
 * which is what the resultant tests read). */
static void hold(const tmesh *tm, hk_support *sup, int *ns)
{
    sup[0] = (hk_support){.boundary = 0, .mask = tm->m.dim == 2 ? 3u : 7u};
    *ns = 1;
}

static void test_load_resultants(void)
{
    for (int k = 0; k < 10; k++) {
        hk_eltype t = all_types[k];
        tmesh tm;
        tmesh_make(t, 2, 0.2, 99u + (unsigned)k, 0, &tm);
        const int d = tm.m.dim;
        hk_support sup[2];
        int ns;
        hold(&tm, sup, &ns);
        const double th = 0.1, V = d == 2 ? LX * LY * th : LX * LY * LZ;
        /* gravity + body force */
        {
            hk_problem p = tproblem(&tm, HK_PLANE_STRESS);
            p.nsupports = ns, p.supports = sup;
            p.gravity[d - 1] = -9.81;
            p.body_force[0] = 1000;
            hk_system s;
            HK_ASSERT_OK(hk_assemble(&p, &s));
            double F[3];
            sum_force(&s, F);
            CU_ASSERT_DOUBLE_EQUAL(F[d - 1], -9.81 * tm.mat.rho * V, 1e-10 * 9.81 * 7800 * V);
            CU_ASSERT_DOUBLE_EQUAL(F[0], 1000 * V, 1e-10 * 1000 * V);
            hk_system_free(&s);
        }
        /* pressure on every side: zero resultant; on the top side: -p A n */
        {
            hk_load ld[6];
            for (int sd = 0; sd < 2 * d; sd++)
                ld[sd] = (hk_load){.kind = HK_LOAD_PRESSURE, .boundary = sd, .value = {3e5}};
            hk_problem p = tproblem(&tm, HK_PLANE_STRESS);
            p.nsupports = ns, p.supports = sup;
            p.nloads = 2 * d, p.loads = ld;
            hk_system s;
            HK_ASSERT_OK(hk_assemble(&p, &s));
            double F[3];
            sum_force(&s, F);
            for (int c = 0; c < d; c++)
                CU_ASSERT(fabs(F[c]) <= 1e-9 * 3e5);
            hk_system_free(&s);
            p.nloads = 1;
            p.loads = &ld[2 * d - 1]; /* top / zmax */
            HK_ASSERT_OK(hk_assemble(&p, &s));
            sum_force(&s, F);
            double A = d == 2 ? LX * th : LX * LY;
            CU_ASSERT_DOUBLE_EQUAL(F[d - 1], -3e5 * A, 1e-10 * 3e5 * A);
            CU_ASSERT_DOUBLE_EQUAL(F[0], 0, 1e-10 * 3e5 * A);
            hk_system_free(&s);
        }
        /* traction on ymax / top, total force, nodal force */
        {
            hk_load ld[3] = {{.kind = HK_LOAD_TRACTION, .boundary = 3, .value = {1e4, -2e4, 5e3}},
                             {.kind = HK_LOAD_FORCE, .boundary = 1, .value = {7, 11, 13}},
                             {.kind = HK_LOAD_NODAL, .boundary = 1, .value = {1, 0, 0}}};
            hk_problem p = tproblem(&tm, HK_PLANE_STRESS);
            p.nsupports = ns, p.supports = sup;
            p.nloads = 3, p.loads = ld;
            hk_system s;
            HK_ASSERT_OK(hk_assemble(&p, &s));
            double F[3];
            sum_force(&s, F);
            double A = d == 2 ? LX * th : LX * LZ;
            /* number of nodes of side 1 */
            int64_t nn = 0;
            {
                const hk_elems *fe = &tm.m.boundaries[1].elems;
                char *seen = calloc(tm.m.nnodes, 1);
                for (int64_t q = 0; q < fe->ptr[fe->n]; q++)
                    if (!seen[fe->nodes[q]]) seen[fe->nodes[q]] = 1, nn++;
                free(seen);
            }
            CU_ASSERT_DOUBLE_EQUAL(F[0], 1e4 * A + 7 + (double)nn, 1e-10 * 1e4 * A);
            CU_ASSERT_DOUBLE_EQUAL(F[1], -2e4 * A + 11, 1e-10 * 2e4 * A);
            if (d == 3) CU_ASSERT_DOUBLE_EQUAL(F[2], 5e3 * A + 13, 1e-10 * 1e4 * A);
            hk_system_free(&s);
        }
        tmesh_free(&tm);
    }
}

/* Reverse the orientation of facet e of es (Gmsh ordering kept valid). */
static void flip_facet(hk_elems *es, int64_t e)
{
    static const int pl[3] = {1, 0, 2}, pt[6] = {0, 2, 1, 5, 4, 3},
                     pq[9] = {0, 3, 2, 1, 7, 6, 5, 4, 8};
    int32_t *nd = es->nodes + es->ptr[e], tmp[9];
    int n = (int)(es->ptr[e + 1] - es->ptr[e]);
    const int *perm = n <= 3 && (es->type[e] == HK_EL_LINE2 || es->type[e] == HK_EL_LINE3) ? pl
                      : (es->type[e] == HK_EL_TRI3 || es->type[e] == HK_EL_TRI6)           ? pt
                                                                                           : pq;
    for (int a = 0; a < n; a++)
        tmp[a] = nd[perm[a]];
    memcpy(nd, tmp, (size_t)n * sizeof *nd);
}

/* Pressure does not depend on the facets' orientation: flip every other facet of a side and
 * get the same nodal forces. */
static void test_pressure_orientation(void)
{
    for (int k = 0; k < 10; k++) {
        tmesh tm;
        tmesh_make(all_types[k], 2, 0.2, 31u + (unsigned)k, 0, &tm);
        const int d = tm.m.dim;
        hk_support sup = {.boundary = 0, .mask = 7};
        hk_load ld[2] = {{.kind = HK_LOAD_PRESSURE, .boundary = 1, .value = {2e5}},
                         {.kind = HK_LOAD_PRESSURE, .boundary = 2 * d - 1, .value = {-1e5}}};
        hk_problem p = tproblem(&tm, HK_PLANE_STRESS);
        p.nsupports = 1, p.supports = &sup, p.nloads = 2, p.loads = ld;
        hk_system s1, s2;
        HK_ASSERT_OK(hk_assemble(&p, &s1));
        for (int b = 1; b < 2 * d; b += 2 * d - 2)
            for (int64_t e = 0; e < tm.m.boundaries[b].elems.n; e += 2)
                flip_facet(&tm.m.boundaries[b].elems, e);
        HK_ASSERT_OK(hk_assemble(&p, &s2));
        CU_ASSERT(hk_test_reldiff(s2.f_ext, s1.f_ext, (long)s1.ndof) < 1e-14);
        double F[3];
        sum_force(&s1, F);
        double A1 = d == 2 ? LY * 0.1 : LY * LZ;
        CU_ASSERT_DOUBLE_EQUAL(F[0], -2e5 * A1, 1e-10 * 2e5 * A1);
        hk_system_free(&s1);
        hk_system_free(&s2);
        tmesh_free(&tm);
    }
}

/* Two regions in series along x with different E (nu = 0): piecewise linear u_x, exact. */
static void test_two_regions(void)
{
    tmesh tm;
    tmesh_make(HK_EL_QUAD8, 4, 0, 1u, 0, &tm);
    hk_mesh *m = &tm.m;
    m->nregions = 2;
    m->regions = realloc(m->regions, 2 * sizeof *m->regions);
    memset(&m->regions[1], 0, sizeof m->regions[1]);
    strcpy(m->regions[1].name, "stiff");
    for (int64_t e = 0; e < m->cells.n; e++) {
        double xc = 0;
        for (int a = 0; a < 4; a++)
            xc += m->coords[3 * m->cells.nodes[m->cells.ptr[e] + a]] / 4;
        m->cell_region[e] = xc > 1;
    }
    hk_material mats[2] = {{.name = "soft", .E = 1e9, .nu = 0, .rho = 1},
                           {.name = "hard", .E = 3e9, .nu = 0, .rho = 1}};
    hk_support sup[2] = {{.boundary = 0, .mask = 1}, {.boundary = 2, .mask = 2}};
    hk_load ld = {.kind = HK_LOAD_TRACTION, .boundary = 1, .value = {6e6}};
    hk_problem p = tproblem(&tm, HK_PLANE_STRESS);
    p.materials = mats;
    p.nsupports = 2, p.supports = sup, p.nloads = 1, p.loads = &ld;
    hk_system s;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    double *u = malloc(s.ndof * sizeof *u), *ue = calloc(s.ndof, sizeof *ue);
    solve_system(&s, u);
    for (int64_t i = 0; i < m->nnodes; i++) {
        double x = m->coords[3 * i];
        ue[2 * i] = x <= 1 ? 6e6 * x / 1e9 : 6e6 / 1e9 + 6e6 * (x - 1) / 3e9;
    }
    CU_ASSERT(hk_test_reldiff(u, ue, (long)s.ndof) < 1e-10);
    free(u);
    free(ue);
    hk_system_free(&s);
    tmesh_free(&tm);
}

/* The same digits for one thread and for all threads (colouring fixes the order). */
static void test_thread_independence(void)
{
    tmesh tm;
    tmesh_make(HK_EL_HEX8, 17, 0.2, 9u, 0, &tm); /* 4913 cells: the parallel path */
    hk_support sup = {.boundary = 0, .mask = 7, .value = {0.001, 0, 0}};
    hk_problem p = tproblem(&tm, HK_SOLID);
    p.gravity[2] = -9.81;
    p.nsupports = 1, p.supports = &sup;
    hk_system s1, s2;
    int nthr = omp_get_max_threads();
    omp_set_num_threads(1);
    HK_ASSERT_OK(hk_assemble(&p, &s1));
    omp_set_num_threads(nthr > 1 ? nthr : 2);
    HK_ASSERT_OK(hk_assemble(&p, &s2));
    omp_set_num_threads(nthr);
    int64_t nv = s1.K.rowptr[s1.K.nbrows] * 9;
    CU_ASSERT_EQUAL(s1.K.rowptr[s1.K.nbrows], s2.K.rowptr[s2.K.nbrows]);
    CU_ASSERT(memcmp(s1.K.colind, s2.K.colind, s1.K.rowptr[s1.K.nbrows] * sizeof(int32_t)) == 0);
    CU_ASSERT(memcmp(s1.K.val, s2.K.val, nv * sizeof(double)) == 0);
    CU_ASSERT(memcmp(s1.f, s2.f, s1.ndof * sizeof(double)) == 0);
    hk_system_free(&s1);
    hk_system_free(&s2);
    tmesh_free(&tm);
}

/* ---- the host's checks on any number of threads ------------------------------------------ */

/* What the host steps before K give on the current thread count: the checks' message, the
 * supports' arrays and message, the rigid-body check's message on the mesh's own parts and on
 * slabs[0] x slabs[1] parts given as labels (slabs of the box in x and z), the free motions'
 * count. */
typedef struct host_steps {
    int err[4];
    char msg[4][512];
    uint8_t *fixed;
    double *u_fixed;
    int64_t nfixed;
    int nfree;
} host_steps;

static void run_host_steps(const hk_problem *p, const int slabs[2], host_steps *h)
{
    const hk_mesh *m = p->mesh;
    const int64_t ndof = (int64_t)m->dim * m->nnodes;
    memset(h, 0, sizeof *h);
    h->err[0] = hk_check_problem(p);
    snprintf(h->msg[0], sizeof h->msg[0], "%s", h->err[0] ? hk_error_message() : "");
    h->fixed = calloc((size_t)ndof, 1);
    h->u_fixed = calloc((size_t)ndof, sizeof *h->u_fixed);
    h->err[1] = hk_supports_apply(p, h->fixed, h->u_fixed, &h->nfixed);
    snprintf(h->msg[1], sizeof h->msg[1], "%s", h->err[1] ? hk_error_message() : "");
    if (h->err[0] || h->err[1]) return;
    hk_adj n2c;
    HK_ASSERT_OK(hk_asm_node_cells(m, &n2c));
    h->err[2] = hk_check_rigid(p, &n2c, h->fixed, NULL);
    snprintf(h->msg[2], sizeof h->msg[2], "%s", h->err[2] ? hk_error_message() : "");
    HK_ASSERT_OK(hk_count_rigid(p, &n2c, h->fixed, NULL, &h->nfree));
    int32_t *label = malloc((size_t)m->nnodes * sizeof *label), first[64];
    for (int k = 0; k < 64; k++)
        first[k] = -1;
    for (int64_t i = 0; i < m->nnodes; i++) {
        const double *x = m->coords + 3 * i;
        const int sx = (int)fmin(slabs[0] - 1, floor(slabs[0] * x[0] / LX)),
                  sz = (int)fmin(slabs[1] - 1, floor(slabs[1] * x[2] / LZ)), key = sx * 8 + sz;
        if (first[key] < 0) first[key] = (int32_t)i;
        label[i] = first[key];
    }
    h->err[3] = hk_check_rigid_labels(p, label, NULL, h->fixed, NULL);
    snprintf(h->msg[3], sizeof h->msg[3], "%s", h->err[3] ? hk_error_message() : "");
    free(label);
    hk_adj_free(&n2c);
}

static void host_steps_free(host_steps *h)
{
    free(h->fixed);
    free(h->u_fixed);
}

/* run_host_steps on 1, 3 and all (at least 4) threads: the same bytes and messages; h1 keeps
 * the one thread's. */
static void host_steps_threads(const hk_problem *p, const int slabs[2], host_steps *h1)
{
    const int nthr = omp_get_max_threads(), counts[2] = {3, nthr > 4 ? nthr : 4};
    const int64_t ndof = (int64_t)p->mesh->dim * p->mesh->nnodes;
    omp_set_num_threads(1);
    run_host_steps(p, slabs, h1);
    for (int k = 0; k < 2; k++) {
        host_steps h;
        omp_set_num_threads(counts[k]);
        run_host_steps(p, slabs, &h);
        int same = h.nfixed == h1->nfixed && h.nfree == h1->nfree &&
                   !memcmp(h.fixed, h1->fixed, (size_t)ndof) &&
                   !memcmp(h.u_fixed, h1->u_fixed, (size_t)ndof * sizeof *h.u_fixed);
        for (int j = 0; j < 4; j++)
            same &= h.err[j] == h1->err[j] && !strcmp(h.msg[j], h1->msg[j]);
        CU_ASSERT(same);
        if (!same) printf("\n  %d threads: other bytes or messages than one thread's\n", counts[k]);
        host_steps_free(&h);
    }
    omp_set_num_threads(nthr);
}

/* The checks, the supports and the rigid-body check on a mesh of several blocks of nodes (the
 * parallel paths): one thread's bytes and messages on any number, and the first bad element,
 * node or support in order named. */
static void test_host_steps_threads(void)
{
    tmesh tm;
    const int n = 28; /* 29^3 = 24389 nodes, 21952 cells */
    tmesh_make(HK_EL_HEX8, n, 0.2, 5u, 0, &tm);
    hk_mesh *m = &tm.m;
    const int64_t N1 = n + 1, N2 = N1 * N1;
    /* a group of xmin's nodes listed twice */
    int64_t nx;
    int32_t *xn;
    HK_ASSERT_OK(hk_group_nodes(m, 0, &nx, &xn));
    m->boundaries = realloc(m->boundaries, (size_t)(m->nboundaries + 1) * sizeof *m->boundaries);
    hk_group *twice = &m->boundaries[m->nboundaries++];
    memset(twice, 0, sizeof *twice);
    strcpy(twice->name, "twice");
    twice->nnodes = 2 * nx;
    twice->nodes = malloc((size_t)(2 * nx) * sizeof *twice->nodes);
    for (int64_t k = 0; k < nx; k++)
        twice->nodes[k] = twice->nodes[nx + k] = xn[k];
    /* xmin held (x prescribed), ymin in y, zmin in z: they share edges; held; "twice" again as
     * xmin */
    hk_support sup[4] = {{.boundary = 0, .mask = 7, .value = {1e-3, 0, 0}},
                         {.boundary = 2, .mask = 2},
                         {.boundary = 4, .mask = 4},
                         {.boundary = 6, .mask = 7, .value = {1e-3, 0, 0}}};
    hk_problem p = tproblem(&tm, HK_SOLID);
    host_steps h;
    const int one[2] = {1, 1}, five[2] = {5, 1}, many[2] = {5, 5};
    for (int ns = 3; ns <= 4; ns++) {
        p.nsupports = ns, p.supports = sup;
        host_steps_threads(&p, one, &h);
        CU_ASSERT(!h.err[0] && !h.err[1] && !h.err[2] && !h.err[3] && h.nfree == 0);
        CU_ASSERT_EQUAL(h.nfixed, 3 * N2 + 2 * (N2 - N1));
        host_steps_free(&h);
    }
    p.nsupports = 3;
    /* "twice" alone: the same arrays as xmin alone */
    host_steps h2;
    p.nsupports = 1, p.supports = sup + 3;
    host_steps_threads(&p, one, &h2);
    p.supports = sup;
    host_steps_threads(&p, one, &h);
    CU_ASSERT(h.nfixed == 3 * N2 && h2.nfixed == h.nfixed);
    CU_ASSERT(!memcmp(h.fixed, h2.fixed, (size_t)(3 * m->nnodes)));
    CU_ASSERT(!memcmp(h.u_fixed, h2.u_fixed, (size_t)(3 * m->nnodes) * sizeof *h.u_fixed));
    host_steps_free(&h);
    host_steps_free(&h2);
    /* x from ymin, then another from "twice": its first node on ymin is named */
    hk_support clash2[2] = {{.boundary = 2, .mask = 1, .value = {2e-3}},
                            {.boundary = 6, .mask = 1, .value = {1e-3}}};
    p.nsupports = 2, p.supports = clash2;
    host_steps_threads(&p, one, &h);
    int32_t first = -1;
    for (int64_t k = 0; k < nx && first < 0; k++)
        if (m->coords[3 * (int64_t)xn[k] + 1] == 0) first = xn[k];
    char want[64];
    snprintf(want, sizeof want, "node %d at (", first);
    CU_ASSERT(first >= 0 && strstr(h.msg[1], want) == h.msg[1]);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[1], "x displacement 0.002 from the support on 'ymin' and "
                                            "0.001 from the support on 'twice'"));
    host_steps_free(&h);
    free(xn);
    p.nsupports = 3, p.supports = sup;
    /* as parts, slabs in x: those without xmin's nodes can slide in x */
    host_steps_threads(&p, five, &h);
    CU_ASSERT_EQUAL(h.err[3], HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[3], "(5 parts) (free: translation x)"));
    host_steps_free(&h);
    /* 25 parts (more than the parallel sums take) */
    host_steps_threads(&p, many, &h);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[3], "(25 parts) (free: translation x)"));
    host_steps_free(&h);
    /* zmin alone: free in x, y and about z */
    p.nsupports = 1, p.supports = sup + 2;
    host_steps_threads(&p, one, &h);
    CU_ASSERT_EQUAL(h.err[2], HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[2], "translation x, translation y") ||
                           strstr(h.msg[2], "translation y, translation x"));
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[2], "rotation about z"));
    CU_ASSERT_EQUAL(h.nfree, 3);
    host_steps_free(&h);
    /* x from xmin and, after zmax (z only), another x from ymin: the message names xmin */
    hk_support clash[3] = {{.boundary = 0, .mask = 1, .value = {1e-3}},
                           {.boundary = 5, .mask = 4},
                           {.boundary = 2, .mask = 1, .value = {2e-3}}};
    p.nsupports = 3, p.supports = clash;
    host_steps_threads(&p, one, &h);
    CU_ASSERT_EQUAL(h.err[1], HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[1], "x displacement 0.001 from the support on 'xmin' and "
                                            "0.002 from the support on 'ymin'"));
    host_steps_free(&h);
    p.nsupports = 3, p.supports = sup;
    /* two bad cells: the first in order is named */
    const int64_t e1 = 15000, e2 = 20000;
    m->cells.nodes[m->cells.ptr[e2] + 1] = (int32_t)m->nnodes + 5;
    m->cell_region[e1] = 7;
    host_steps_threads(&p, one, &h);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[0], "element 15000 (hex8, Gmsh tag "));
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[0], "has region 7, outside"));
    host_steps_free(&h);
    m->cell_region[e1] = 0;
    host_steps_threads(&p, one, &h);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[0], "element 20000 (hex8, Gmsh tag "));
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[0], "refers to node 24394, outside"));
    host_steps_free(&h);
    m->cells.nodes[m->cells.ptr[e2] + 1] = 0;
    /* two non-finite coordinates: the first node is named */
    const double y = m->coords[3 * 20000 + 1], z = m->coords[3 * 9000 + 2];
    m->coords[3 * 20000 + 1] = NAN;
    m->coords[3 * 9000 + 2] = INFINITY;
    host_steps_threads(&p, one, &h);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[0], "node 9000 has a non-finite coordinate"));
    host_steps_free(&h);
    m->coords[3 * 20000 + 1] = y, m->coords[3 * 9000 + 2] = z;
    tmesh_free(&tm);
    /* axisymmetric: two nodes at x < 0, the first named */
    tmesh_make(HK_EL_QUAD4, 140, 0, 6u, 0, &tm); /* 141^2 = 19881 nodes */
    p = tproblem(&tm, HK_AXISYMMETRIC);
    tm.m.coords[3 * 17000] = -0.5;
    tm.m.coords[3 * 7000] = -0.25;
    host_steps_threads(&p, one, &h);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg[0], "node 7000 of an element lies at r = x = -0.25 < 0"));
    host_steps_free(&h);
    tmesh_free(&tm);
}

/* The node-to-cell lists of some nodes (hk_asm_node_cells_of) on 1, 3 and 4 threads: the whole
 * mesh's lists for those nodes, byte for byte, and empty ones for the others; and a region's
 * supports and loads prepared with them (hk_assemble_prepare_region: pressure with its outward
 * normals, traction, a force spread over an area, a nodal force, springs) give the whole
 * model's bytes (hk_assemble_prepare). */
static void test_node_cells_of(void)
{
    tmesh tm;
    tmesh_make(HK_EL_HEX8, 6, 0.2, 17u, 0, &tm);
    const hk_mesh *m = &tm.m;
    const int64_t nn = m->nnodes;
    hk_adj all, some;
    HK_ASSERT_OK(hk_asm_node_cells(m, &all));
    uint8_t *want = calloc((size_t)nn, 1);
    for (int64_t i = 0; i < nn; i += 3)
        want[i] = 1;
    const int nthr = omp_get_max_threads(), counts[3] = {1, 3, nthr > 4 ? nthr : 4};
    for (int c = 0; c < 3; c++) {
        omp_set_num_threads(counts[c]);
        HK_ASSERT_OK(hk_asm_node_cells_of(m, want, &some));
        int ok = some.n == nn;
        for (int64_t i = 0; ok && i < nn; i++) {
            const int64_t len = some.ptr[i + 1] - some.ptr[i];
            ok = want[i] ? len == all.ptr[i + 1] - all.ptr[i] &&
                               !memcmp(some.idx + some.ptr[i], all.idx + all.ptr[i],
                                       (size_t)len * sizeof *some.idx)
                         : len == 0;
        }
        CU_ASSERT(ok);
        hk_adj_free(&some);
    }
    omp_set_num_threads(nthr);
    hk_adj_free(&all);
    free(want);
    hk_support sup[2] = {
        {.boundary = 0, .mask = 7},
        {.kind = HK_SUPPORT_SPRING, .boundary = 4, .k_normal = 1e6, .k_node = {0, 0, 1e3}}};
    hk_load ld[4] = {{.kind = HK_LOAD_PRESSURE, .boundary = 1, .value = {2e5}},
                     {.kind = HK_LOAD_TRACTION, .boundary = 3, .value = {0, 1e4, 0}},
                     {.kind = HK_LOAD_FORCE, .boundary = 5, .value = {7, 11, 13}},
                     {.kind = HK_LOAD_NODAL, .boundary = 2, .value = {1, 0, 0}}};
    hk_problem p = tproblem(&tm, HK_SOLID);
    p.nsupports = 2, p.supports = sup, p.nloads = 4, p.loads = ld;
    hk_system whole, region;
    HK_ASSERT_OK(hk_assemble_prepare(&p, &whole));
    HK_ASSERT_OK(hk_assemble_prepare_region(&p, NULL, &region));
    const size_t ndof = (size_t)(3 * nn);
    CU_ASSERT(region.ndof == whole.ndof && region.nfixed == whole.nfixed);
    CU_ASSERT(!memcmp(region.f_ext, whole.f_ext, ndof * sizeof *whole.f_ext));
    CU_ASSERT(!memcmp(region.fixed, whole.fixed, ndof));
    CU_ASSERT(!memcmp(region.u_fixed, whole.u_fixed, ndof * sizeof *whole.u_fixed));
    double F = 0;
    for (size_t i = 1; i < ndof; i += 3)
        F += region.f_ext[i];
    CU_ASSERT(F > 0); /* the traction's pull along y is there */
    hk_system_free(&whole);
    hk_system_free(&region);
    tmesh_free(&tm);
}

/* The mesh's parts found on every thread: two boxes whose cells alternate, plus a node on no
 * cell; each part labelled by its smallest node, the same bytes on 1, 3 and 4 threads. */
static void test_part_labels_threads(void)
{
    tmesh tm;
    tmesh_make(HK_EL_TET4, 14, 0.2, 8u, 0, &tm);
    const hk_mesh *a = &tm.m;
    const int64_t nn = a->nnodes, ne = a->cells.n, nper = a->cells.ptr[1];
    hk_mesh m = {.dim = 3, .nnodes = 2 * nn + 1};
    m.cells.n = 2 * ne;
    m.cells.ptr = malloc((size_t)(2 * ne + 1) * sizeof *m.cells.ptr);
    m.cells.nodes = malloc((size_t)(2 * ne * nper) * sizeof *m.cells.nodes);
    m.cells.type = malloc((size_t)(2 * ne));
    for (int64_t e = 0; e < 2 * ne; e++) { /* box a's cell e / 2, then box b's */
        m.cells.ptr[e] = e * nper;
        m.cells.type[e] = a->cells.type[e / 2];
        for (int64_t k = 0; k < nper; k++)
            m.cells.nodes[e * nper + k] =
                a->cells.nodes[e / 2 * nper + k] + (e % 2 ? (int32_t)nn : 0);
    }
    m.cells.ptr[2 * ne] = 2 * ne * nper;
    hk_adj n2c;
    HK_ASSERT_OK(hk_asm_node_cells(&m, &n2c));
    int32_t *label[3];
    const int nthr = omp_get_max_threads(), counts[3] = {1, 3, nthr > 4 ? nthr : 4};
    for (int k = 0; k < 3; k++) {
        label[k] = malloc((size_t)m.nnodes * sizeof *label[k]);
        omp_set_num_threads(counts[k]);
        HK_ASSERT_OK(hk_mesh_part_labels(&m, &n2c, label[k]));
    }
    omp_set_num_threads(nthr);
    int ok = 1;
    for (int64_t i = 0; i < m.nnodes; i++)
        ok &= label[0][i] == (i < nn ? 0 : i < 2 * nn ? nn : -1);
    CU_ASSERT(ok);
    for (int k = 1; k < 3; k++)
        CU_ASSERT(!memcmp(label[0], label[k], (size_t)m.nnodes * sizeof *label[0]));
    for (int k = 0; k < 3; k++)
        free(label[k]);
    hk_adj_free(&n2c);
    free(m.cells.ptr);
    free(m.cells.nodes);
    free(m.cells.type);
    tmesh_free(&tm);
}

/* ---- the eliminated matrix --------------------------------------------------------------- */

static void test_spd_after_elimination(void)
{
    for (int k = 0; k < 10; k++) {
        tmesh tm;
        tmesh_make(all_types[k], 2, 0.2, 5u + (unsigned)k, 0, &tm);
        const int d = tm.m.dim;
        hk_support sup[2] = {{.boundary = 0, .mask = d == 2 ? 3u : 7u, .value = {1e-3, 0, 0}},
                             {.boundary = 1, .mask = 1u, .value = {2e-3}}};
        hk_problem p = tproblem(&tm, HK_PLANE_STRAIN);
        p.nsupports = 2, p.supports = sup;
        hk_system s;
        HK_ASSERT_OK(hk_assemble(&p, &s));
        const int64_t n = s.ndof;
        double *A = hk_test_dense_of(&s.K), asym = 0, amax = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                asym = fmax(asym, fabs(A[i * n + j] - A[j * n + i]));
                amax = fmax(amax, fabs(A[i * n + j]));
            }
        CU_ASSERT(asym <= 1e-13 * amax);
        /* fixed rows/columns: only the diagonal, of the matrix's own scale */
        for (int64_t i = 0; i < n; i++) {
            if (!s.fixed[i]) continue;
            CU_ASSERT(A[i * n + i] > 1e-3 * amax);
            double off = 0;
            for (int64_t j = 0; j < n; j++)
                if (j != i) off = fmax(off, fabs(A[i * n + j]) + fabs(A[j * n + i]));
            CU_ASSERT_EQUAL(off, 0);
        }
        CU_ASSERT_EQUAL(hk_test_cholesky(n, A), 0);
        free(A);
        /* the solution takes the prescribed values */
        double *u = malloc(n * sizeof *u);
        solve_system(&s, u);
        for (int64_t i = 0; i < n; i++)
            if (s.fixed[i]) CU_ASSERT_DOUBLE_EQUAL(u[i], s.u_fixed[i], 1e-15);
        free(u);
        hk_system_free(&s);
        tmesh_free(&tm);
    }
}

/* A node without an element gets an identity-like row: the matrix stays SPD. */
static void test_orphan_node(void)
{
    tmesh tm;
    tmesh_make(HK_EL_QUAD4, 2, 0, 1u, 0, &tm);
    hk_mesh *m = &tm.m;
    m->nnodes++;
    m->coords = realloc(m->coords, 3 * m->nnodes * sizeof *m->coords);
    for (int k = 0; k < 3; k++)
        m->coords[3 * (m->nnodes - 1) + k] = 5;
    hk_support sup = {.boundary = 0, .mask = 3};
    hk_problem p = tproblem(&tm, HK_PLANE_STRESS);
    p.nsupports = 1, p.supports = &sup;
    hk_system s;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    double *A = hk_test_dense_of(&s.K);
    CU_ASSERT_EQUAL(hk_test_cholesky(s.ndof, A), 0);
    free(A);
    double *u = malloc(s.ndof * sizeof *u);
    solve_system(&s, u);
    CU_ASSERT_EQUAL(u[s.ndof - 1], 0);
    free(u);
    hk_system_free(&s);
    tmesh_free(&tm);
}

/* ---- checks ------------------------------------------------------------------------------ */

static void test_rigid_body_detection(void)
{
    /* 2D: x fixed on the left only: free translation y */
    tmesh tm;
    tmesh_make(HK_EL_QUAD4, 3, 0.1, 3u, 0, &tm);
    hk_support sup[3] = {{.boundary = 0, .mask = 1}, {.boundary = 2, .mask = 2}};
    hk_problem p = tproblem(&tm, HK_PLANE_STRESS);
    p.nsupports = 1, p.supports = sup;
    hk_system s;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "rigid-body motion"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "translation y"));
    CU_ASSERT_PTR_NULL(strstr(hk_error_message(), "rotation"));
    /* y fixed on the bottom only: free translation x, and rotation is held */
    p.supports = sup + 1;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "translation x"));
    /* both: held */
    p.nsupports = 2, p.supports = sup;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    hk_system_free(&s);
    /* nothing: all three */
    p.nsupports = 0;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "translation x"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "translation y"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "rotation about z"));
    tmesh_free(&tm);

    /* 3D: z fixed on zmin: free translation x, y and rotation about z */
    tmesh_make(HK_EL_HEX8, 2, 0.1, 4u, 1, &tm);
    hk_support s3[3] = {
        {.boundary = 4, .mask = 4}, {.boundary = 0, .mask = 1}, {.boundary = 2, .mask = 2}};
    p = tproblem(&tm, HK_SOLID);
    p.nsupports = 1, p.supports = s3;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    const char *msg = hk_error_message();
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "translation x"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "translation y"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "rotation about z"));
    CU_ASSERT_PTR_NULL(strstr(msg, "rotation about x"));
    CU_ASSERT_PTR_NULL(strstr(msg, "translation z"));
    /* plus x on xmin: y translation still free */
    p.nsupports = 2;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "translation y"));
    CU_ASSERT_PTR_NULL(strstr(hk_error_message(), "rotation"));
    p.nsupports = 3;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    hk_system_free(&s);
    /* two points pinned in all components: free rotation about their axis only */
    int a = -1, b = -1;
    for (int g = tm.nsides; g < tm.m.nboundaries; g++) {
        const double *x = tm.m.coords + 3 * tm.m.boundaries[g].nodes[0];
        if (x[0] == 0 && x[1] == 0 && x[2] == 0) a = g;
        if (x[0] == LX && x[1] == 0 && x[2] == 0) b = g;
    }
    CU_ASSERT_FATAL(a >= 0 && b >= 0);
    hk_support pin[2] = {{.boundary = a, .mask = 7}, {.boundary = b, .mask = 7}};
    p.nsupports = 2, p.supports = pin;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    msg = hk_error_message();
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "(free: rotation about x)"));
    tmesh_free(&tm);

    /* a second part (one extra quad) that no support holds */
    tmesh_make(HK_EL_QUAD4, 2, 0, 5u, 0, &tm);
    hk_mesh *m = &tm.m;
    int64_t n0 = m->nnodes, c0 = m->cells.n;
    m->nnodes += 4;
    m->coords = realloc(m->coords, 3 * m->nnodes * sizeof *m->coords);
    const double sq[4][2] = {{5, 0}, {6, 0}, {6, 1}, {5, 1}};
    for (int a = 0; a < 4; a++) {
        m->coords[3 * (n0 + a)] = sq[a][0];
        m->coords[3 * (n0 + a) + 1] = sq[a][1];
        m->coords[3 * (n0 + a) + 2] = 0;
    }
    m->cells.n++;
    m->cells.type = realloc(m->cells.type, m->cells.n);
    m->cells.ptr = realloc(m->cells.ptr, (m->cells.n + 1) * sizeof *m->cells.ptr);
    m->cells.nodes = realloc(m->cells.nodes, 4 * m->cells.n * sizeof *m->cells.nodes);
    m->cells.tag = realloc(m->cells.tag, m->cells.n * sizeof *m->cells.tag);
    m->cell_region = realloc(m->cell_region, m->cells.n * sizeof *m->cell_region);
    m->cells.type[c0] = HK_EL_QUAD4;
    m->cells.ptr[c0 + 1] = m->cells.ptr[c0] + 4;
    for (int a = 0; a < 4; a++)
        m->cells.nodes[m->cells.ptr[c0] + a] = (int32_t)(n0 + a);
    m->cells.tag[c0] = 77;
    m->cell_region[c0] = 0;
    hk_support clamp = {.boundary = 0, .mask = 3};
    p = tproblem(&tm, HK_PLANE_STRESS);
    p.nsupports = 1, p.supports = &clamp;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    char want[64];
    snprintf(want, sizeof want, "of the part containing node %lld", (long long)n0);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), want));
    tmesh_free(&tm);
}

static void test_negative_jacobian(void)
{
    static const hk_eltype ts[3] = {HK_EL_QUAD4, HK_EL_TET10, HK_EL_HEX20};
    for (int k = 0; k < 3; k++) {
        tmesh tm;
        tmesh_make(ts[k], 2, 0, 8u, 0, &tm);
        hk_elems *c = &tm.m.cells;
        /* mirror element 3: swap two corners (and their edges keep positions) */
        int32_t *nd = c->nodes + c->ptr[3];
        if (ts[k] == HK_EL_TET10) {
            int32_t t0 = nd[1];
            nd[1] = nd[2], nd[2] = t0; /* corners 1 <-> 2, edges 4 (0-1) <-> 6 (2-0) */
            t0 = nd[4], nd[4] = nd[6], nd[6] = t0;
            t0 = nd[8], nd[8] = nd[9], nd[9] = t0; /* 8 (3-2) <-> 9 (3-1) */
        } else if (ts[k] == HK_EL_QUAD4) {
            int32_t t0 = nd[1];
            nd[1] = nd[3], nd[3] = t0;
        } else { /* hex20: mirror z: corners 0..3 <-> 4..7, edges accordingly */
            int32_t tmp[20];
            static const int mir[20] = {4,  5,  6,  7,  0,  1,  2, 3, 16, 17,
                                        10, 18, 12, 19, 14, 15, 8, 9, 11, 13};
            for (int a = 0; a < 20; a++)
                tmp[a] = nd[mir[a]];
            memcpy(nd, tmp, sizeof tmp);
        }
        hk_support sup = {.boundary = 0, .mask = 7};
        hk_problem p = tproblem(&tm, HK_PLANE_STRESS);
        p.nsupports = 1, p.supports = &sup;
        hk_system s;
        CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
        char want[96];
        snprintf(want, sizeof want, "element 3 (%s, Gmsh tag 1003) in region 'body'",
                 hk_el_name(ts[k]));
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), want));
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "non-positive Jacobian"));
        hk_bcsr K;
        CU_ASSERT_EQUAL(hk_assemble_stiffness(&p, &K), HK_ERR_MODEL);
        tmesh_free(&tm);
    }
}

static void test_material_checks(void)
{
    tmesh tm;
    tmesh_make(HK_EL_TRI3, 2, 0, 1u, 0, &tm);
    hk_support sup = {.boundary = 0, .mask = 3};
    hk_problem p = tproblem(&tm, HK_PLANE_STRESS);
    p.nsupports = 1, p.supports = &sup;
    hk_system s;
    tm.mat.E = -1;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "material 'steel' of region 'body'"));
    tm.mat.E = 1e9;
    tm.mat.nu = 0.5;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "nu = 0.5"));
    tm.mat.nu = 0.49;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    hk_system_free(&s);
    p.materials = NULL;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "region 'body' has no material"));
    p.materials = &tm.mat;
    p.analysis = HK_SOLID;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    /* conflicting supports */
    p.analysis = HK_PLANE_STRESS;
    hk_support two[2] = {{.boundary = 0, .mask = 3}, {.boundary = 2, .mask = 1, .value = {1}}};
    p.nsupports = 2, p.supports = two;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "make the prescribed values agree"));
    /* regression (fuzzing): the node number is internal (renumbered); its place is named */
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), ") gets x displacement"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), " at ("));
    /* traction on a point group is refused */
    p.nsupports = 1, p.supports = &sup;
    tm.m.boundaries[1].dim = 0;
    hk_load ld = {.kind = HK_LOAD_TRACTION, .boundary = 1, .value = {1, 0, 0}};
    p.nloads = 1, p.loads = &ld;
    CU_ASSERT_EQUAL(hk_assemble(&p, &s), HK_ERR_MODEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "boundary 'right' has dimension 0"));
    tmesh_free(&tm);
}

/* hk_assemble_stiffness gives the same K as hk_assemble before elimination (no supports on
 * free rows): compare on rows away from the supports. */
static void test_stiffness_only(void)
{
    tmesh tm;
    tmesh_make(HK_EL_HEX8, 3, 0.2, 2u, 0, &tm);
    hk_problem p = tproblem(&tm, HK_SOLID);
    hk_bcsr K;
    HK_ASSERT_OK(hk_assemble_stiffness(&p, &K));
    /* K u = 0 for a rigid motion (translation and rotation about z) */
    double *u = malloc(3 * tm.m.nnodes * sizeof *u), *y = malloc(3 * tm.m.nnodes * sizeof *y);
    for (int64_t i = 0; i < tm.m.nnodes; i++) {
        const double *x = tm.m.coords + 3 * i;
        u[3 * i] = 1 - x[1], u[3 * i + 1] = 2 + x[0], u[3 * i + 2] = 3;
    }
    hk_bcsr_spmv(&K, u, y);
    double ymax = 0, kmax = 0;
    for (int64_t i = 0; i < 3 * tm.m.nnodes; i++)
        ymax = fmax(ymax, fabs(y[i]));
    for (int64_t k = 0; k < K.rowptr[K.nbrows] * 9; k++)
        kmax = fmax(kmax, fabs(K.val[k]));
    CU_ASSERT(ymax <= 1e-12 * kmax);
    CU_ASSERT_EQUAL(K.bs, 3);
    CU_ASSERT_EQUAL(K.nbrows, tm.m.nnodes);
    /* every block row of an interior node of a hex8 mesh couples 27 nodes */
    int64_t maxrow = 0;
    for (int64_t i = 0; i < K.nbrows; i++)
        maxrow = K.rowptr[i + 1] - K.rowptr[i] > maxrow ? K.rowptr[i + 1] - K.rowptr[i] : maxrow;
    CU_ASSERT_EQUAL(maxrow, 27);
    free(u);
    free(y);
    hk_bcsr_free(&K);
    tmesh_free(&tm);
}

/* ---- convergence ------------------------------------------------------------------------- */

/* u = (e^x cos y, -e^x sin y) / 1000 (grad of a harmonic function: div sigma = 0), exact
 * values on the boundary; the RMS nodal error of linear elements must fall as h^2. */
static double mms_error(hk_eltype t, int n)
{
    tmesh tm;
    tmesh_make(t, n, 0, 1u, 1, &tm);
    const hk_mesh *m = &tm.m;
    int ns = m->nboundaries - tm.nsides;
    hk_support *sup = calloc((size_t)ns, sizeof *sup);
    for (int k = 0; k < ns; k++) {
        const double *x = m->coords + 3 * m->boundaries[tm.nsides + k].nodes[0];
        sup[k] = (hk_support){.boundary = tm.nsides + k, .mask = 3};
        sup[k].value[0] = exp(x[0]) * cos(x[1]) / 1000;
        sup[k].value[1] = -exp(x[0]) * sin(x[1]) / 1000;
    }
    hk_problem p = tproblem(&tm, HK_PLANE_STRAIN);
    p.nsupports = ns, p.supports = sup;
    hk_system s;
    int err = hk_assemble(&p, &s);
    CU_ASSERT_EQUAL(err, 0);
    double e2 = 0;
    if (!err) {
        double *u = malloc(s.ndof * sizeof *u);
        solve_system(&s, u);
        for (int64_t i = 0; i < m->nnodes; i++) {
            const double *x = m->coords + 3 * i;
            double ex = exp(x[0]) * cos(x[1]) / 1000 - u[2 * i];
            double ey = -exp(x[0]) * sin(x[1]) / 1000 - u[2 * i + 1];
            e2 += ex * ex + ey * ey;
        }
        e2 = sqrt(e2 / (double)m->nnodes);
        free(u);
        hk_system_free(&s);
    }
    free(sup);
    tmesh_free(&tm);
    return e2;
}

static void test_convergence_linear(void)
{
    static const hk_eltype ts[2] = {HK_EL_TRI3, HK_EL_QUAD4};
    for (int k = 0; k < 2; k++) {
        double lh[4], le[4];
        for (int r = 0; r < 4; r++) {
            int n = 8 << r;
            lh[r] = log(1.0 / n);
            le[r] = log(mms_error(ts[k], n));
        }
        double mh = 0, me = 0, sxy = 0, sxx = 0;
        for (int r = 0; r < 4; r++)
            mh += lh[r] / 4, me += le[r] / 4;
        for (int r = 0; r < 4; r++)
            sxy += (lh[r] - mh) * (le[r] - me), sxx += (lh[r] - mh) * (lh[r] - mh);
        double rate = sxy / sxx;
        if (rate < 1.85 || rate > 2.15)
            fprintf(stderr, "\n  convergence %s: rate %.3f\n", hk_el_name(ts[k]), rate);
        CU_ASSERT(rate > 1.85 && rate < 2.15);
    }
}

HK_SUITE(assembly,
         {"shape functions: Kronecker, unity, derivatives, rule weights", test_shape_functions},
         {"node ordering equals Gmsh's reference coordinates", test_gmsh_ordering},
         {"patch test on mesh/ generator meshes (ordering cross-check)", test_generator_patch},
         {"patch test, distorted meshes, plane stress (tri3..quad9)", test_patch_plane_stress},
         {"patch test, distorted meshes, plane strain (tri3..quad9)", test_patch_plane_strain},
         {"patch test, distorted meshes, 3D (tet4..hex27)", test_patch_3d},
         {"uniaxial tension by traction and pressure equals closed form", test_tension},
         {"library solve (cg + jacobi) on every backend: closed form", test_library_solve},
         {"resultants of gravity, body force, pressure, traction, forces", test_load_resultants},
         {"pressure independent of facet orientation", test_pressure_orientation},
         {"two regions with different materials in series", test_two_regions},
         {"same digits on one thread and on all threads", test_thread_independence},
         {"checks, supports, rigid-body check: one thread's bytes and messages on any number",
          test_host_steps_threads},
         {"the mesh's parts: smallest node labels, the same bytes on any number of threads",
          test_part_labels_threads},
         {"node-to-cell lists of some nodes; a region's supports and loads with them",
          test_node_cells_of},
         {"K symmetric positive definite after elimination", test_spd_after_elimination},
         {"node without element gets an identity-like row", test_orphan_node},
         {"rigid-body motion detected and named", test_rigid_body_detection},
         {"non-positive Jacobian detected with element id", test_negative_jacobian},
         {"material and support checks", test_material_checks},
         {"stiffness only: rigid motions in the kernel, pattern", test_stiffness_only},
         {"manufactured solution: O(h^2) for tri3 and quad4", test_convergence_linear})
