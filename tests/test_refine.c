/* Uniform refinement (hk_mesh_refine, geometry.refine): every element kind split once and
 * twice with node and cell counts by formula, volumes and boundary areas kept, every child
 * positively oriented, groups carried; refined hexahedra and quadrilaterals are the generators'
 * finer meshes; the same bytes on 1 and 2 threads; the patch test on refined meshes; the new
 * boundary nodes of curved geometry on the exact surface; convergence at the elements' rates
 * against the Lame solution; every ready case with refine: 1 within its stated tolerance. */
#include <dirent.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../assembly/elements.h"
#include "../mesh/mesh_impl.h"
#include "case.h"
#include "test_util.h"

/* ---- helpers (independent of mesh/refine.c) ------------------------------------------------ */

/* Measure (length, area, volume) of element e through its isoparametric map. */
static double elem_measure(const hk_mesh *m, const hk_elems *es, int64_t e)
{
    const hk_elref *r = hk_elref_get((hk_eltype)es->type[e]);
    if (!r) return 0; /* a point */
    const int32_t *nd = es->nodes + es->ptr[e];
    double v = 0;
    for (int q = 0; q < r->nqp; q++) {
        double J[3][3] = {{0}};
        for (int a = 0; a < r->nnodes; a++)
            for (int p = 0; p < 3; p++)
                for (int s = 0; s < r->dim; s++)
                    J[p][s] += m->coords[3 * (int64_t)nd[a] + p] * r->dN[q][a][s];
        /* sqrt(det(J^T J)) */
        double G[3][3] = {{0}};
        for (int s = 0; s < r->dim; s++)
            for (int t = 0; t < r->dim; t++)
                for (int p = 0; p < 3; p++)
                    G[s][t] += J[p][s] * J[p][t];
        double det = r->dim == 1   ? G[0][0]
                     : r->dim == 2 ? G[0][0] * G[1][1] - G[0][1] * G[1][0]
                                   : G[0][0] * (G[1][1] * G[2][2] - G[1][2] * G[2][1]) -
                                         G[0][1] * (G[1][0] * G[2][2] - G[1][2] * G[2][0]) +
                                         G[0][2] * (G[1][0] * G[2][1] - G[1][1] * G[2][0]);
        v += r->qw[q] * sqrt(fabs(det));
    }
    return v;
}

static double elems_measure(const hk_mesh *m, const hk_elems *es)
{
    double v = 0;
    for (int64_t e = 0; e < es->n; e++)
        v += elem_measure(m, es, e);
    return v;
}

/* Edges and quadrilateral faces of the linear types (Gmsh's corner numbering). */
typedef struct {
    int ne, nq, children;
    int e[12][2];
    int q[6][4];
} topo;

static const topo *topo_of(hk_eltype t)
{
    static const topo tri = {3, 0, 4, {{0, 1}, {1, 2}, {2, 0}}, {{0}}};
    static const topo quad = {4, 1, 4, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}, {{0, 1, 2, 3}}};
    static const topo tet = {6, 0, 8, {{0, 1}, {1, 2}, {2, 0}, {0, 3}, {1, 3}, {2, 3}}, {{0}}};
    static const topo hex = {
        12,
        6,
        8,
        {{0, 1},
         {1, 2},
         {2, 3},
         {3, 0},
         {4, 5},
         {5, 6},
         {6, 7},
         {7, 4},
         {0, 4},
         {1, 5},
         {2, 6},
         {3, 7}},
        {{0, 1, 2, 3}, {4, 5, 6, 7}, {0, 1, 5, 4}, {1, 2, 6, 5}, {2, 3, 7, 6}, {3, 0, 4, 7}}};
    static const topo wedge = {
        9,
        3,
        8,
        {{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}, {0, 3}, {1, 4}, {2, 5}},
        {{0, 1, 4, 3}, {1, 2, 5, 4}, {2, 0, 3, 5}}};
    static const topo pyr = {
        8, 1, 10, {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 4}, {1, 4}, {2, 4}, {3, 4}}, {{0, 1, 2, 3}}};
    switch (t) {
    case HK_EL_TRI3:
        return &tri;
    case HK_EL_QUAD4:
        return &quad;
    case HK_EL_TET4:
        return &tet;
    case HK_EL_HEX8:
        return &hex;
    case HK_EL_WEDGE6:
        return &wedge;
    case HK_EL_PYR5:
        return &pyr;
    default:
        return NULL;
    }
}

typedef struct {
    int32_t v[4];
} key4;

static int cmp_key4(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(key4)); /* a total order is all that is needed */
}

static void sort_small(int32_t *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int32_t t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
}

/* Unique keys of k corners among the cells' edges (k = 2) or quadrilateral faces (k = 4). */
static int64_t count_unique(const hk_mesh *m, int k)
{
    int64_t n = 0, cap = 0;
    for (int64_t e = 0; e < m->cells.n; e++) {
        const topo *tp = topo_of((hk_eltype)m->cells.type[e]);
        cap += k == 2 ? tp->ne : tp->nq;
    }
    key4 *keys = calloc((size_t)(cap ? cap : 1), sizeof *keys);
    for (int64_t e = 0; e < m->cells.n; e++) {
        const topo *tp = topo_of((hk_eltype)m->cells.type[e]);
        const int32_t *nd = m->cells.nodes + m->cells.ptr[e];
        for (int j = 0; j < (k == 2 ? tp->ne : tp->nq); j++) {
            key4 *kk = &keys[n++];
            for (int a = 0; a < k; a++)
                kk->v[a] = nd[k == 2 ? tp->e[j][a] : tp->q[j][a]];
            sort_small(kk->v, k);
        }
    }
    qsort(keys, (size_t)n, sizeof *keys, cmp_key4);
    int64_t u = 0;
    for (int64_t i = 0; i < n; i++)
        u += !i || memcmp(&keys[i], &keys[i - 1], sizeof *keys);
    free(keys);
    return u;
}

/* Nodes and cells one refinement gives: a node per vertex, edge, quadrilateral face and
 * hexahedron (2D: quadrilateral). */
static void expected_counts(const hk_mesh *m, int64_t *nodes, int64_t *cells)
{
    int64_t centres = 0;
    *cells = 0;
    for (int64_t e = 0; e < m->cells.n; e++) {
        hk_eltype t = (hk_eltype)m->cells.type[e];
        *cells += topo_of(t)->children;
        centres += t == HK_EL_HEX8 || t == HK_EL_QUAD4;
    }
    *nodes = m->nnodes + count_unique(m, 2) + (m->dim == 3 ? count_unique(m, 4) : 0) + centres;
}

static double min_jacobian_sign(const hk_mesh *m)
{
    double worst = INFINITY;
    for (int64_t e = 0; e < m->cells.n; e++)
        worst = fmin(worst, hk_elem_jacobian_sign(&m->cells, e, m->coords, m->dim));
    return worst;
}

/* One affinely distorted wedge or pyramid (planar faces: its children fill it exactly) with a
 * boundary group on every face. */
static void single_cell(hk_eltype t, hk_mesh *m)
{
    static const double A[3][3] = {{1.1, 0.2, -0.1}, {0.15, 0.9, 0.2}, {-0.05, 0.1, 1.3}};
    const int nc = t == HK_EL_WEDGE6 ? 6 : 5;
    const double *rc = hk_eltype_ref_coords(t);
    memset(m, 0, sizeof *m);
    m->dim = 3;
    m->nnodes = nc;
    m->coords = calloc(3 * (size_t)nc, sizeof *m->coords);
    for (int i = 0; i < nc; i++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                m->coords[3 * i + a] += A[a][b] * rc[3 * i + b];
    hk_elems_builder b;
    memset(&b, 0, sizeof b);
    int32_t nd[8] = {0, 1, 2, 3, 4, 5};
    HK_ASSERT_OK(hk_elems_push(&b, t, nd, 1));
    m->cells = b.e;
    m->cell_region = calloc(1, sizeof *m->cell_region);
    m->nregions = 1;
    m->regions = calloc(1, sizeof *m->regions);
    snprintf(m->regions[0].name, sizeof m->regions[0].name, "domain");
    m->regions[0].dim = 3;
    /* faces: triangles and quadrilaterals (orientation fixed below), and a point group */
    static const int wf[5][4] = {
        {0, 2, 1, -1}, {3, 4, 5, -1}, {0, 1, 4, 3}, {1, 2, 5, 4}, {2, 0, 3, 5}};
    static const int pf[5][4] = {
        {0, 3, 2, 1}, {0, 1, 4, -1}, {1, 2, 4, -1}, {2, 3, 4, -1}, {3, 0, 4, -1}};
    const int(*f)[4] = t == HK_EL_WEDGE6 ? wf : pf;
    m->nboundaries = 6;
    m->boundaries = calloc(6, sizeof *m->boundaries);
    for (int g = 0; g < 6; g++) {
        hk_elems_builder fb;
        memset(&fb, 0, sizeof fb);
        snprintf(m->boundaries[g].name, sizeof m->boundaries[g].name, "g%d", g);
        if (g == 5) {
            int32_t p = 1;
            m->boundaries[g].dim = 0;
            HK_ASSERT_OK(hk_elems_push(&fb, HK_EL_POINT1, &p, 1));
        } else {
            int32_t q[4] = {f[g][0], f[g][1], f[g][2], f[g][3]};
            m->boundaries[g].dim = 2;
            HK_ASSERT_OK(hk_elems_push(&fb, q[3] < 0 ? HK_EL_TRI3 : HK_EL_QUAD4, q, g + 1));
        }
        m->boundaries[g].elems = fb.e;
        HK_ASSERT_OK(hk_group_collect_nodes(&m->boundaries[g], m->nnodes));
    }
    HK_ASSERT_OK(hk_mesh_orient_facets(m));
}

/* The test meshes: every linear kind, the straight-sided hybrid bar holding four of them. */
enum { NMESH = 8 };
static const char *const mesh_names[NMESH] = {"tri3 rectangle", "quad4 rectangle", "tet4 box",
                                              "hex8 box",       "wedge6",          "pyr5",
                                              "hybrid bar",     "mixed 2D"};

static int make_mesh(int k, hk_mesh *m)
{
    switch (k) {
    case 0:
        return hk_mesh_rectangle(3, 2, 3, 2, HK_EL_TRI3, m);
    case 1:
        return hk_mesh_rectangle(3, 2, 3, 2, HK_EL_QUAD4, m);
    case 2:
        return hk_mesh_box(1, 2, 1, 2, 2, 1, HK_EL_TET4, m);
    case 3:
        return hk_mesh_box(2, 1, 1, 2, 1, 2, HK_EL_HEX8, m);
    case 4:
        single_cell(HK_EL_WEDGE6, m);
        return 0;
    case 5:
        single_cell(HK_EL_PYR5, m);
        return 0;
#ifdef HOOKE_HAVE_GMSH
    case 6:
        return hk_mesh_load(hk_test_path("tests/data/mesh/hybrid_bar_o1_v41.msh"), NULL, m);
    case 7:
        return hk_mesh_load(hk_test_path("tests/data/mesh/mixed_v41.msh"), NULL, m);
#endif
    default:
        return -1;
    }
}

/* ---- counts, volumes, orientation, groups ------------------------------------------------- */

static void check_refined(const hk_mesh *m0, const hk_mesh *m1, int64_t nodes, int64_t cells,
                          const char *name, int level)
{
    CU_ASSERT_EQUAL(m1->nnodes, nodes);
    CU_ASSERT_EQUAL(m1->cells.n, cells);
    const double v0 = elems_measure(m0, &m0->cells), v1 = elems_measure(m1, &m1->cells);
    if (fabs(v1 - v0) > 1e-12 * v0)
        fprintf(stderr, "\n    %s, level %d: measure %.15g, was %.15g ", name, level, v1, v0);
    CU_ASSERT(fabs(v1 - v0) <= 1e-12 * v0);
    CU_ASSERT(min_jacobian_sign(m1) > 0);
    hk_mesh_quality q;
    HK_ASSERT_OK(hk_mesh_measure_quality(m1, &q));
    CU_ASSERT(q.min > 0);
    CU_ASSERT_EQUAL(q.cells, m1->cells.n);
    for (int64_t e = 0; e < m1->cells.n; e++)
        CU_ASSERT_FATAL(m1->cell_region[e] >= 0 && m1->cell_region[e] < m1->nregions);
    CU_ASSERT_EQUAL_FATAL(m1->nboundaries, m0->nboundaries);
    for (int g = 0; g < m0->nboundaries; g++) {
        const hk_group *a = &m0->boundaries[g], *b = &m1->boundaries[g];
        CU_ASSERT_STRING_EQUAL(a->name, b->name);
        CU_ASSERT_EQUAL(a->dim, b->dim);
        const int64_t per = a->dim == 0 ? 1 : a->dim == 1 ? 2 : 4;
        CU_ASSERT_EQUAL(b->elems.n, per * a->elems.n);
        const double fa = elems_measure(m0, &a->elems), fb = elems_measure(m1, &b->elems);
        CU_ASSERT(fabs(fb - fa) <= 1e-12 * (fa > 0 ? fa : 1));
        /* the group's nodes are its elements' nodes */
        int64_t bad = 0;
        for (int64_t k = 0; k < b->elems.ptr[b->elems.n]; k++) {
            int32_t v = b->elems.nodes[k];
            int64_t lo = 0, hi = b->nnodes;
            while (lo < hi) {
                int64_t mid = (lo + hi) / 2;
                if (b->nodes[mid] < v)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            bad += lo == b->nnodes || b->nodes[lo] != v;
        }
        CU_ASSERT_EQUAL(bad, 0);
        /* points stay on the same node */
        if (a->dim == 0) CU_ASSERT(!memcmp(a->elems.nodes, b->elems.nodes, sizeof(int32_t)));
    }
}

static void copy_mesh(const hk_mesh *a, hk_mesh *b);

static void test_every_kind(void)
{
    for (int k = 0; k < NMESH; k++) {
        hk_mesh m0, m1;
        if (make_mesh(k, &m0) < 0) continue;
        for (int level = 1; level <= 2; level++) {
            int64_t nodes, cells;
            expected_counts(&m0, &nodes, &cells);
            copy_mesh(&m0, &m1);
            hk_mesh_refine_stats st;
            HK_ASSERT_OK(hk_mesh_refine(&m1, 1, &st));
            CU_ASSERT_EQUAL(st.levels, 1);
            CU_ASSERT_EQUAL(st.cells_before, m0.cells.n);
            CU_ASSERT(st.after.min > 0 && st.after.mean <= 1 + 1e-12);
            check_refined(&m0, &m1, nodes, cells, mesh_names[k], level);
            fprintf(stderr,
                    "\n    %s, level %d: %lld -> %lld cells, %lld nodes, quality min %.3f "
                    "mean %.3f -> min %.3f mean %.3f ",
                    mesh_names[k], level, (long long)m0.cells.n, (long long)m1.cells.n,
                    (long long)m1.nnodes, st.before.min, st.before.mean, st.after.min,
                    st.after.mean);
            hk_mesh_free(&m0);
            m0 = m1;
        }
        hk_mesh_free(&m0);
        /* twice in one call: the same as once and once again */
        hk_mesh a, b;
        make_mesh(k, &a);
        make_mesh(k, &b);
        HK_ASSERT_OK(hk_mesh_refine(&a, 2, NULL));
        HK_ASSERT_OK(hk_mesh_refine(&b, 1, NULL));
        HK_ASSERT_OK(hk_mesh_refine(&b, 1, NULL));
        CU_ASSERT_EQUAL_FATAL(a.nnodes, b.nnodes);
        CU_ASSERT(!memcmp(a.coords, b.coords, 3 * (size_t)a.nnodes * sizeof *a.coords));
        CU_ASSERT(!memcmp(a.cells.nodes, b.cells.nodes,
                          (size_t)a.cells.ptr[a.cells.n] * sizeof *a.cells.nodes));
        hk_mesh_free(&a);
        hk_mesh_free(&b);
    }
}

/* A deep copy through the element builders. */
static void copy_elems(const hk_elems *a, hk_elems *b)
{
    hk_elems_builder bb;
    memset(&bb, 0, sizeof bb);
    for (int64_t e = 0; e < a->n; e++)
        HK_ASSERT_OK(hk_elems_push(&bb, (hk_eltype)a->type[e], a->nodes + a->ptr[e], a->tag[e]));
    *b = bb.e;
}

static void copy_mesh(const hk_mesh *a, hk_mesh *b)
{
    *b = *a;
    b->coords = malloc(3 * (size_t)a->nnodes * sizeof *b->coords);
    memcpy(b->coords, a->coords, 3 * (size_t)a->nnodes * sizeof *b->coords);
    copy_elems(&a->cells, &b->cells);
    b->cell_region = malloc((size_t)a->cells.n * sizeof *b->cell_region);
    memcpy(b->cell_region, a->cell_region, (size_t)a->cells.n * sizeof *b->cell_region);
    if (a->coarse.n) copy_elems(&a->coarse, &b->coarse);
    if (a->cell_coarse) {
        b->cell_coarse = malloc((size_t)a->cells.n * sizeof *b->cell_coarse);
        memcpy(b->cell_coarse, a->cell_coarse, (size_t)a->cells.n * sizeof *b->cell_coarse);
    }
    b->regions = calloc((size_t)a->nregions, sizeof *b->regions);
    memcpy(b->regions, a->regions, (size_t)a->nregions * sizeof *b->regions);
    b->boundaries = calloc((size_t)a->nboundaries, sizeof *b->boundaries);
    for (int g = 0; g < a->nboundaries; g++) {
        b->boundaries[g] = a->boundaries[g];
        copy_elems(&a->boundaries[g].elems, &b->boundaries[g].elems);
        b->boundaries[g].nodes = malloc((size_t)(a->boundaries[g].nnodes + 1) * sizeof(int32_t));
        memcpy(b->boundaries[g].nodes, a->boundaries[g].nodes,
               (size_t)a->boundaries[g].nnodes * sizeof(int32_t));
    }
}

/* ---- refined hexahedra and quadrilaterals are the generators' finer grids ------------------ */

static const hk_mesh *sort_mesh;
static const hk_elems *sort_elems;
static void centroid(const hk_mesh *m, const hk_elems *es, int64_t e, double *c)
{
    const int nc = hk_eltype_ncorners((hk_eltype)es->type[e]);
    c[0] = c[1] = c[2] = 0;
    for (int i = 0; i < nc; i++)
        for (int d = 0; d < 3; d++)
            c[d] += m->coords[3 * (int64_t)es->nodes[es->ptr[e] + i] + d] / nc;
}
static int cmp_centroid(const void *p, const void *q)
{
    double ca[3], cb[3];
    centroid(sort_mesh, sort_elems, *(const int64_t *)p, ca);
    centroid(sort_mesh, sort_elems, *(const int64_t *)q, cb);
    for (int d = 2; d >= 0; d--)
        if (fabs(ca[d] - cb[d]) > 1e-9) return ca[d] < cb[d] ? -1 : 1;
    return 0;
}
static int64_t *sorted(const hk_mesh *m, const hk_elems *es)
{
    int64_t *p = malloc((size_t)(es->n ? es->n : 1) * sizeof *p);
    for (int64_t e = 0; e < es->n; e++)
        p[e] = e;
    sort_mesh = m, sort_elems = es;
    qsort(p, (size_t)es->n, sizeof *p, cmp_centroid);
    return p;
}

/* Largest distance between the same node slots of the same elements (by centroid). */
static double elems_distance(const hk_mesh *a, const hk_elems *ea, const hk_mesh *b,
                             const hk_elems *eb)
{
    if (ea->n != eb->n) return INFINITY;
    int64_t *pa = sorted(a, ea), *pb = sorted(b, eb);
    double worst = 0;
    for (int64_t k = 0; k < ea->n; k++) {
        if (ea->type[pa[k]] != eb->type[pb[k]]) worst = INFINITY;
        for (int64_t i = 0; i < ea->ptr[pa[k] + 1] - ea->ptr[pa[k]] && worst < INFINITY; i++) {
            const double *x = a->coords + 3 * (int64_t)ea->nodes[ea->ptr[pa[k]] + i],
                         *y = b->coords + 3 * (int64_t)eb->nodes[eb->ptr[pb[k]] + i];
            worst = fmax(worst, fabs(x[0] - y[0]) + fabs(x[1] - y[1]) + fabs(x[2] - y[2]));
        }
    }
    free(pa);
    free(pb);
    return worst;
}

static void test_generator_grids(void)
{
    for (int order = 1; order <= 2; order++) {
        hk_mesh a, b;
        /* quadrilaterals, refined once; hexahedra twice; then raised to order 2 */
        HK_ASSERT_OK(hk_mesh_rectangle(3, 2, 3, 2, HK_EL_QUAD4, &a));
        HK_ASSERT_OK(hk_mesh_refine(&a, 1, NULL));
        HK_ASSERT_OK(hk_mesh_rectangle(3, 2, 6, 4, order == 2 ? HK_EL_QUAD9 : HK_EL_QUAD4, &b));
        if (order == 2) {
            hk_elev_stats es;
            HK_ASSERT_OK(hk_mesh_elevate(&a, 0, NULL, &es));
        }
        CU_ASSERT_EQUAL(a.nnodes, b.nnodes);
        CU_ASSERT(elems_distance(&a, &a.cells, &b, &b.cells) < 1e-12);
        for (int g = 0; g < a.nboundaries; g++)
            CU_ASSERT(elems_distance(&a, &a.boundaries[g].elems, &b, &b.boundaries[g].elems) <
                      1e-12);
        hk_mesh_free(&a);
        hk_mesh_free(&b);
        HK_ASSERT_OK(hk_mesh_box(2, 1, 1, 2, 1, 2, HK_EL_HEX8, &a));
        HK_ASSERT_OK(hk_mesh_refine(&a, 2, NULL));
        HK_ASSERT_OK(hk_mesh_box(2, 1, 1, 8, 4, 8, order == 2 ? HK_EL_HEX27 : HK_EL_HEX8, &b));
        if (order == 2) {
            hk_elev_stats es;
            HK_ASSERT_OK(hk_mesh_elevate(&a, 0, NULL, &es));
        }
        CU_ASSERT_EQUAL(a.nnodes, b.nnodes);
        CU_ASSERT(elems_distance(&a, &a.cells, &b, &b.cells) < 1e-12);
        for (int g = 0; g < a.nboundaries; g++) {
            CU_ASSERT_STRING_EQUAL(a.boundaries[g].name, b.boundaries[g].name);
            CU_ASSERT(elems_distance(&a, &a.boundaries[g].elems, &b, &b.boundaries[g].elems) <
                      1e-12);
        }
        hk_mesh_free(&a);
        hk_mesh_free(&b);
    }
}

/* ---- the same bytes on any number of threads ---------------------------------------------- */

static void same_bytes(const hk_mesh *a, const hk_mesh *b)
{
    CU_ASSERT_EQUAL_FATAL(a->nnodes, b->nnodes);
    CU_ASSERT_EQUAL_FATAL(a->cells.n, b->cells.n);
    CU_ASSERT(!memcmp(a->coords, b->coords, 3 * (size_t)a->nnodes * sizeof *a->coords));
    CU_ASSERT(!memcmp(a->cells.type, b->cells.type, (size_t)a->cells.n));
    CU_ASSERT(!memcmp(a->cells.nodes, b->cells.nodes,
                      (size_t)a->cells.ptr[a->cells.n] * sizeof *a->cells.nodes));
    CU_ASSERT(!memcmp(a->cell_region, b->cell_region, (size_t)a->cells.n * sizeof *a->cell_region));
    CU_ASSERT_EQUAL_FATAL(a->nboundaries, b->nboundaries);
    for (int g = 0; g < a->nboundaries; g++) {
        const hk_elems *fa = &a->boundaries[g].elems, *fb = &b->boundaries[g].elems;
        CU_ASSERT_EQUAL_FATAL(fa->n, fb->n);
        CU_ASSERT(!memcmp(fa->nodes, fb->nodes, (size_t)fa->ptr[fa->n] * sizeof *fa->nodes));
    }
    /* the coarse mesh and each cell's ancestor in it */
    CU_ASSERT_EQUAL_FATAL(a->coarse.n, b->coarse.n);
    CU_ASSERT_EQUAL_FATAL(!a->cell_coarse, !b->cell_coarse);
    if (a->cell_coarse)
        CU_ASSERT(
            !memcmp(a->cell_coarse, b->cell_coarse, (size_t)a->cells.n * sizeof *a->cell_coarse));
    if (a->coarse.n) {
        CU_ASSERT(!memcmp(a->coarse.ptr, b->coarse.ptr,
                          (size_t)(a->coarse.n + 1) * sizeof *a->coarse.ptr));
        CU_ASSERT(!memcmp(a->coarse.nodes, b->coarse.nodes,
                          (size_t)a->coarse.ptr[a->coarse.n] * sizeof *a->coarse.nodes));
    }
}

static void test_threads(void)
{
    const int threads = omp_get_max_threads();
    for (int k = 0; k < NMESH; k++) {
        hk_mesh a, b;
        if (make_mesh(k, &a) < 0) continue;
        make_mesh(k, &b);
        omp_set_num_threads(1);
        HK_ASSERT_OK(hk_mesh_refine(&a, 2, NULL));
        omp_set_num_threads(2);
        HK_ASSERT_OK(hk_mesh_refine(&b, 2, NULL));
        same_bytes(&a, &b);
        hk_mesh_free(&a);
        hk_mesh_free(&b);
    }
    omp_set_num_threads(threads);
}

/* ---- each cell's coarse ancestor ------------------------------------------------------------ */

/* 1 when point x lies in the linear cell of type t with corners xc (3 each), to a relative
 * tolerance: the corner map inverted by Newton from the reference centroid, then the reference
 * element's inequalities (Gmsh's: simplices on [0,1], quads and hexes on [-1,1]^d, wedges a
 * triangle times [-1,1], pyramids base [-1,1]^2 at zeta 0 and apex at zeta 1). */
static int inside_cell(hk_eltype t, const double *xc, const double *x)
{
    const int d = hk_eltype_get(t)->dim;
    double r[3], y[3], J[3][3];
    hk_eltype_centroid(t, r);
    for (int it = 0; it < 50; it++) {
        hk_mesh_linear_map(t, xc, r, y, J);
        double f[3] = {x[0] - y[0], x[1] - y[1], x[2] - y[2]}, dr[3] = {0, 0, 0};
        if (d == 2) {
            const double det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
            dr[0] = (f[0] * J[1][1] - f[1] * J[0][1]) / det;
            dr[1] = (J[0][0] * f[1] - J[1][0] * f[0]) / det;
        } else {
            const double det = J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
                               J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
                               J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
            for (int c = 0; c < 3; c++) { /* Cramer: column c replaced by f */
                double A[3][3];
                memcpy(A, J, sizeof A);
                for (int a = 0; a < 3; a++)
                    A[a][c] = f[a];
                dr[c] = (A[0][0] * (A[1][1] * A[2][2] - A[1][2] * A[2][1]) -
                         A[0][1] * (A[1][0] * A[2][2] - A[1][2] * A[2][0]) +
                         A[0][2] * (A[1][0] * A[2][1] - A[1][1] * A[2][0])) /
                        det;
            }
        }
        for (int a = 0; a < d; a++)
            r[a] += dr[a];
        if (fabs(dr[0]) + fabs(dr[1]) + fabs(dr[2]) < 1e-13) break;
    }
    const double e = 1e-9, u = r[0], v = r[1], w = r[2];
    switch (t) {
    case HK_EL_TRI3:
        return u > -e && v > -e && u + v < 1 + e;
    case HK_EL_TET4:
        return u > -e && v > -e && w > -e && u + v + w < 1 + e;
    case HK_EL_QUAD4:
        return fabs(u) < 1 + e && fabs(v) < 1 + e;
    case HK_EL_HEX8:
        return fabs(u) < 1 + e && fabs(v) < 1 + e && fabs(w) < 1 + e;
    case HK_EL_WEDGE6:
        return u > -e && v > -e && u + v < 1 + e && fabs(w) < 1 + e;
    case HK_EL_PYR5:
        return w > -e && w < 1 + e && fabs(u) < 1 - w + e && fabs(v) < 1 - w + e;
    default:
        return 0;
    }
}

/* Every cell of m has an ancestor among m->coarse (ncoarse cells) and its corners' centroid
 * lies inside it; each coarse cell has children (each[t] of them for a coarse cell of type t
 * where each[t] > 0). Returns the cells that fail. */
static int64_t misplaced(const hk_mesh *m, int64_t ncoarse, const int64_t *each)
{
    int64_t bad = 0, *nch = calloc((size_t)ncoarse + 1, sizeof *nch);
    if (m->coarse.n != ncoarse || !m->cell_coarse || !nch) {
        free(nch);
        return m->cells.n ? m->cells.n : 1;
    }
    for (int64_t f = 0; f < m->cells.n; f++) {
        const int64_t a = m->cell_coarse[f];
        if (a < 0 || a >= ncoarse) {
            bad++;
            continue;
        }
        nch[a]++;
        const hk_eltype ft = (hk_eltype)m->cells.type[f], ct = (hk_eltype)m->coarse.type[a];
        const int nf = hk_eltype_ncorners(ft), nc = hk_eltype_ncorners(ct);
        double x[3] = {0, 0, 0}, xc[24];
        for (int i = 0; i < nf; i++)
            for (int k = 0; k < 3; k++)
                x[k] += m->coords[3 * (int64_t)m->cells.nodes[m->cells.ptr[f] + i] + k] / nf;
        for (int i = 0; i < nc; i++)
            memcpy(xc + 3 * i, m->coords + 3 * (int64_t)m->coarse.nodes[m->coarse.ptr[a] + i],
                   3 * sizeof *xc);
        bad += !inside_cell(ct, xc, x);
    }
    for (int64_t a = 0; a < ncoarse; a++)
        bad += !nch[a] || (each[m->coarse.type[a]] && nch[a] != each[m->coarse.type[a]]);
    free(nch);
    return bad;
}

/* Every kind refined twice on 1 and 2 threads: each fine cell inside its coarse ancestor, the
 * same ancestors on both (same_bytes), and after the RCM renumbering (the coarse corners
 * follow); refined once and then once more, the same ancestors as twice at once; through
 * hk_mesh_load (coarse cells reordered, refined, raised to order 2, renumbered). */
static void test_ancestors(void)
{
    const int threads = omp_get_max_threads();
    for (int k = 0; k < NMESH; k++) {
        hk_mesh a, b, c;
        if (make_mesh(k, &a) < 0) continue;
        make_mesh(k, &b);
        make_mesh(k, &c);
        const int64_t n0 = a.cells.n;
        int64_t each[HK_EL_COUNT] = {0};
        each[HK_EL_TRI3] = each[HK_EL_QUAD4] = 16;
        each[HK_EL_TET4] = each[HK_EL_HEX8] = each[HK_EL_WEDGE6] = 64;
        each[HK_EL_PYR5] = 6 * 10 + 4 * 8;
        CU_ASSERT(a.coarse.n == 0 && !a.cell_coarse);
        omp_set_num_threads(1);
        HK_ASSERT_OK(hk_mesh_refine(&a, 2, NULL));
        omp_set_num_threads(2);
        HK_ASSERT_OK(hk_mesh_refine(&b, 2, NULL));
        same_bytes(&a, &b);
        const int64_t bad = misplaced(&a, n0, each);
        if (bad)
            fprintf(stderr, "\n    %s: %lld cells off their ancestor ", mesh_names[k],
                    (long long)bad);
        CU_ASSERT_EQUAL(bad, 0);
        HK_ASSERT_OK(hk_mesh_renumber_rcm(&a));
        CU_ASSERT_EQUAL(misplaced(&a, n0, each), 0);
        HK_ASSERT_OK(hk_mesh_refine(&c, 1, NULL));
        HK_ASSERT_OK(hk_mesh_refine(&c, 1, NULL));
        CU_ASSERT_EQUAL_FATAL(c.cells.n, b.cells.n);
        CU_ASSERT(!memcmp(c.cell_coarse, b.cell_coarse, (size_t)b.cells.n * sizeof *b.cell_coarse));
        hk_mesh_free(&a);
        hk_mesh_free(&b);
        hk_mesh_free(&c);
    }
    /* unrefined: no coarse mesh */
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_box(1, 1, 1, 2, 2, 2, HK_EL_TET4, &m));
    HK_ASSERT_OK(hk_mesh_refine(&m, 0, NULL));
    CU_ASSERT(m.coarse.n == 0 && !m.cell_coarse);
    hk_mesh_free(&m);
#ifdef HOOKE_HAVE_GMSH
    for (int k = 0; k < 2; k++) {
        static const char *const file[] = {"tests/data/mesh/hybrid_bar_o1_v41.msh",
                                           "tests/data/mesh/mixed_v41.msh"};
        hk_mesh a, b, c;
        hk_mesh_options o = {.order = 2, .refine = 2, .renumber = 1};
        HK_ASSERT_OK(hk_mesh_load(hk_test_path(file[k]), NULL, &c));
        omp_set_num_threads(1);
        HK_ASSERT_OK(hk_mesh_load(hk_test_path(file[k]), &o, &a));
        omp_set_num_threads(2);
        HK_ASSERT_OK(hk_mesh_load(hk_test_path(file[k]), &o, &b));
        same_bytes(&a, &b);
        int64_t none[HK_EL_COUNT] = {0};
        CU_ASSERT_EQUAL(misplaced(&a, c.cells.n, none), 0);
        hk_mesh_free(&a);
        hk_mesh_free(&b);
        hk_mesh_free(&c);
    }
#endif
    omp_set_num_threads(threads);
}

/* ---- the patch test on refined meshes ------------------------------------------------------ */

static const double PG[3][3] = {
    {1.0e-3, 2.0e-3, -0.5e-3}, {-1.5e-3, 0.7e-3, 1.1e-3}, {0.4e-3, -0.9e-3, 1.3e-3}};
static const double PC[3] = {1e-3, -2e-3, 0.5e-3};

/* Every node on the bounding box held at u = c + G x (one point group each): a refined mesh
 * (every kind, order 1 or 2) reproduces the linear field inside to rounding. */
static double patch_error(hk_mesh *m)
{
    const int d = m->dim;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < m->nnodes; i++)
        for (int a = 0; a < d; a++)
            lo[a] = fmin(lo[a], m->coords[3 * i + a]), hi[a] = fmax(hi[a], m->coords[3 * i + a]);
    uint8_t *onb = calloc((size_t)m->nnodes, 1);
    int64_t nb = 0, inside = 0;
    for (int g = 0; g < m->nboundaries; g++) /* the single cells' faces are groups */
        for (int64_t i = 0; i < m->boundaries[g].nnodes; i++)
            onb[m->boundaries[g].nodes[i]] = m->boundaries[g].dim == d - 1;
    for (int64_t i = 0; i < m->nnodes; i++) {
        for (int a = 0; a < d; a++)
            onb[i] |= fabs(m->coords[3 * i + a] - lo[a]) < 1e-9 ||
                      fabs(m->coords[3 * i + a] - hi[a]) < 1e-9;
        nb += onb[i];
    }
    const int nold = m->nboundaries;
    hk_group *gr = realloc(m->boundaries, (size_t)(nold + nb) * sizeof *gr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gr);
    m->boundaries = gr;
    hk_support *sup = calloc((size_t)nb, sizeof *sup);
    int64_t k = 0;
    for (int64_t i = 0; i < m->nnodes; i++) {
        if (!onb[i]) continue;
        hk_group *g = &m->boundaries[nold + k];
        memset(g, 0, sizeof *g);
        snprintf(g->name, sizeof g->name, "n%lld", (long long)i);
        g->nnodes = 1;
        g->nodes = malloc(sizeof *g->nodes);
        g->nodes[0] = (int32_t)i;
        sup[k].boundary = nold + (int)k;
        sup[k].mask = d == 2 ? 3 : 7;
        for (int a = 0; a < d; a++) {
            sup[k].value[a] = PC[a];
            for (int b = 0; b < d; b++)
                sup[k].value[a] += PG[a][b] * m->coords[3 * i + b];
        }
        k++;
    }
    m->nboundaries = nold + (int)nb;
    hk_material *mat = calloc((size_t)m->nregions, sizeof *mat);
    for (int r = 0; r < m->nregions; r++)
        mat[r].E = 200e9, mat[r].nu = 0.3;
    hk_problem p = {.mesh = m,
                    .analysis = d == 2 ? HK_PLANE_STRESS : HK_SOLID,
                    .thickness = 1,
                    .materials = mat,
                    .nsupports = (int)nb,
                    .supports = sup};
    hk_system s;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    double *u = calloc((size_t)s.ndof, sizeof *u);
    hk_options *o = NULL;
    hk_solver *sv = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu method=cg pc=jacobi tol=1e-15 maxit=100000"));
    HK_ASSERT_OK(hk_solver_create(&s.K, o, &sv));
    hk_options_destroy(o);
    hk_result res;
    hk_solver_solve(sv, s.f, u, &res); /* tol 1e-15 may end in stagnation at rounding */
    hk_error_clear();
    hk_solver_destroy(sv);
    double err = 0, ref = 0;
    for (int64_t i = 0; i < m->nnodes; i++) {
        inside += !onb[i];
        for (int a = 0; a < d; a++) {
            double ue = PC[a];
            for (int b = 0; b < d; b++)
                ue += PG[a][b] * m->coords[3 * i + b];
            const double ui = s.fixed[d * i + a] ? s.u_fixed[d * i + a] : u[d * i + a];
            err = fmax(err, fabs(ui - ue));
            ref = fmax(ref, fabs(ue));
        }
    }
    CU_ASSERT(inside > 0);
    free(u);
    free(sup);
    free(onb);
    free(mat);
    hk_system_free(&s);
    return err / ref;
}

static void test_patch(void)
{
    /* the hybrid bar (hexahedra, prisms, pyramids, tetrahedra) and the tri/quad rectangle,
     * refined twice, each also raised to order 2; the distorted single cells once */
    static const int meshes[] = {6, 7, 4, 5, 2};
    for (size_t k = 0; k < sizeof meshes / sizeof *meshes; k++)
        for (int order = 1; order <= 2; order++) {
            hk_mesh m;
            if (make_mesh(meshes[k], &m) < 0) continue;
            HK_ASSERT_OK(hk_mesh_refine(&m, meshes[k] == 2 ? 1 : 2, NULL));
            if (order == 2) {
                hk_elev_stats es;
                HK_ASSERT_OK(hk_mesh_elevate(&m, 0, NULL, &es));
            }
            const int64_t cells = m.cells.n;
            const double err = patch_error(&m);
            fprintf(stderr, "\n    patch test, %s refined, order %d (%lld cells): error %.1e ",
                    mesh_names[meshes[k]], order, (long long)cells, err);
            CU_ASSERT(err < 1e-9);
            hk_mesh_free(&m);
        }
}

#ifdef HOOKE_HAVE_GMSH

/* ---- curved geometry: the new boundary nodes on the CAD ------------------------------------ */

typedef double (*surface_fn)(const double *x);
static double off_cylinder(const double *x)
{
    return fabs(hypot(x[0], x[1]) - 1);
}
static double off_sphere(const double *x)
{
    return fabs(hypot(hypot(x[0] - 1, x[1] - 2), x[2] - 3) - 0.5) / 0.5;
}
static double off_bore(const double *x)
{
    return fabs(hypot(x[0], x[1]) - 0.1) / 0.1;
}
static double off_outer(const double *x)
{
    return fabs(hypot(x[0], x[1]) - 0.2) / 0.2;
}
static double off_hole(const double *x)
{
    return fabs(hypot(x[0], x[1]) - 0.01) / 0.01;
}

static void test_curved(void)
{
    static const struct {
        const char *geo;
        int n;
        const char *curved[2];
        surface_fn off[2];
        double exact, size; /* volume or area (0: none), element size */
    } c[] = {{"tests/data/mesh/cylinder.geo", 1, {"side"}, {off_cylinder}, 2 * M_PI, 0.4},
             {"tests/data/mesh/sphere.geo", 1, {"skin"}, {off_sphere}, M_PI / 6, 0.15},
             {"cases/lame/lame.geo",
              2,
              {"bore", "outer"},
              {off_bore, off_outer},
              M_PI / 4 * (0.04 - 0.01),
              0.04},
             {"cases/kirsch/kirsch.geo", 1, {"hole"}, {off_hole}, 0.01 - M_PI / 4 * 1e-4, 0.02}};
    for (size_t k = 0; k < sizeof c / sizeof *c; k++)
        for (int order = 1; order <= 2; order++) {
            /* one coarse mesh (Gmsh's sizes scaled by 2 and by 4 from size / 2 and size / 4)
             * refined once and twice */
            hk_mesh m0, m2;
            hk_mesh_options o = {.order = order, .size = c[k].size / 2, .refine = 1};
            HK_ASSERT_OK(hk_mesh_load(hk_test_path(c[k].geo), &o, &m0));
            const int64_t coarse = hk_mesh_load_refine_stats().cells_before;
            o.refine = 2;
            o.size = c[k].size / 4;
            HK_ASSERT_OK(hk_mesh_load(hk_test_path(c[k].geo), &o, &m2));
            /* nested where the sizes are Gmsh's own (a Threshold field is not scaled alike) */
            const int nested = hk_mesh_load_refine_stats().cells_before == coarse;
            const hk_mesh_refine_stats rs = hk_mesh_load_refine_stats();
            CU_ASSERT_EQUAL(rs.levels, 2);
            CU_ASSERT(rs.projected > 0);
            /* every node of the curved groups on the exact surface */
            double worst = 0;
            int64_t on = 0;
            for (int g = 0; g < c[k].n; g++) {
                const int b = hk_mesh_find_boundary(&m2, c[k].curved[g]);
                CU_ASSERT_FATAL(b >= 0);
                for (int64_t i = 0; i < m2.boundaries[b].nnodes; i++, on++)
                    worst = fmax(worst,
                                 c[k].off[g](m2.coords + 3 * (int64_t)m2.boundaries[b].nodes[i]));
            }
            const double v0 = elems_measure(&m0, &m0.cells), v2 = elems_measure(&m2, &m2.cells);
            const double e0 = fabs(v0 - c[k].exact) / c[k].exact,
                         e2 = fabs(v2 - c[k].exact) / c[k].exact;
            hk_mesh_quality q;
            HK_ASSERT_OK(hk_mesh_measure_quality(&m2, &q));
            fprintf(stderr,
                    "\n    %s, order %d, refined twice: %lld boundary nodes off the surface by "
                    "%.1e; measure error %.1e (refined once %.1e); quality min %.2f mean %.2f ",
                    c[k].geo, order, (long long)on, worst, e2, e0, q.min, q.mean);
            CU_ASSERT(on > 16);
            CU_ASSERT(worst < 1e-10);
            CU_ASSERT(q.min > 0);
            CU_ASSERT(min_jacobian_sign(&m2) > 0);
            /* the chords err by h^2 (quadratic: h^4 on these curves): a level less by about 4
             * (16) times; without the projection the error would stay the coarse mesh's */
            CU_ASSERT(!nested || e2 < e0 / (order == 1 ? 2.5 : 5));
            CU_ASSERT(nested || strstr(c[k].geo, "kirsch"));
            hk_mesh_free(&m0);
            hk_mesh_free(&m2);
        }
}

/* The same nodes and cells from hk_mesh_load on 1 and 2 threads, projections included. */
static void test_load_threads(void)
{
    const int threads = omp_get_max_threads();
    static const char *const geo[] = {"tests/data/mesh/cylinder.geo", "cases/kirsch/kirsch.geo"};
    for (int k = 0; k < 2; k++) {
        hk_mesh a, b;
        hk_mesh_options o = {.order = 2, .refine = 2, .renumber = 1};
        omp_set_num_threads(1);
        HK_ASSERT_OK(hk_mesh_load(hk_test_path(geo[k]), &o, &a));
        omp_set_num_threads(2);
        HK_ASSERT_OK(hk_mesh_load(hk_test_path(geo[k]), &o, &b));
        same_bytes(&a, &b);
        hk_mesh_free(&a);
        hk_mesh_free(&b);
    }
    omp_set_num_threads(threads);
}

/* ---- hk_mesh_load_region ------------------------------------------------------------------ */

/* The coarse cells in nparts contiguous blocks; part me's block and the cells sharing a corner
 * with it kept (me < 0: every cell). part[] gets each coarse cell's block. */
typedef struct region_pick {
    int nparts, me;
    int32_t *part;
    int64_t ncoarse;
} region_pick;

static int pick_block(void *ctx, const hk_mesh *coarse, int levels, uint8_t *keep)
{
    region_pick *p = ctx;
    const hk_elems *c = &coarse->cells;
    (void)levels;
    p->ncoarse = c->n;
    HK_CALL(hk_malloc((size_t)c->n * sizeof *p->part, &p->part));
    uint8_t *near = calloc((size_t)coarse->nnodes + 1, 1);
    HK_CHECK(near, HK_ERR_MEMORY, "out of memory");
    for (int64_t e = 0; e < c->n; e++) {
        p->part[e] = (int32_t)(e * p->nparts / c->n);
        if (p->part[e] == p->me)
            for (int64_t k = c->ptr[e]; k < c->ptr[e + 1]; k++)
                near[c->nodes[k]] = 1;
    }
    for (int64_t e = 0; e < c->n; e++) {
        keep[e] = p->me < 0;
        for (int64_t k = c->ptr[e]; k < c->ptr[e + 1] && !keep[e]; k++)
            keep[e] = near[c->nodes[k]];
    }
    free(near);
    return 0;
}

typedef struct key_at {
    hk_node_key k;
    int64_t v;
} key_at;

static int cmp_key_at(const void *x, const void *y)
{
    const hk_node_key *a = &((const key_at *)x)->k, *b = &((const key_at *)y)->k;
    if (a->a != b->a) return a->a < b->a ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

/* A region of the whole mesh: every cell kept gives hk_mesh_load's mesh byte for byte, with a
 * key per node, no two alike; two halves each with a layer of neighbours: every node's key is
 * the whole mesh's, and the nodes of a half's own cells have the whole mesh's coordinates, bit
 * for bit (the curved geometry's projections and the second-order nodes included). */
static void test_region(void)
{
    static const struct {
        const char *geo;
        int refine;
        double size;
    } c[] = {{"cases/kirsch/kirsch.geo", 2, 0},
             {"tests/data/mesh/cylinder.geo", 2, 0},
             {"cases/bracket/bracket.geo", 1, 0.004}};
    for (int k = 0; k < 3; k++) {
        hk_mesh whole, all;
        hk_mesh_options o = {.order = 2, .refine = c[k].refine, .renumber = 1, .size = c[k].size};
        region_pick pa = {.nparts = 2, .me = -1};
        hk_mesh_region ra = {.select = pick_block, .ctx = &pa};
        HK_ASSERT_OK(hk_mesh_load(hk_test_path(c[k].geo), &o, &whole));
        HK_ASSERT_OK(hk_mesh_load_region(hk_test_path(c[k].geo), &o, &ra, &all));
        CU_ASSERT_FATAL(ra.refined && ra.keys);
        CU_ASSERT_EQUAL_FATAL(whole.nnodes, all.nnodes);
        CU_ASSERT_EQUAL_FATAL(whole.cells.n, all.cells.n);
        CU_ASSERT(!memcmp(whole.coords, all.coords, 3 * (size_t)whole.nnodes * sizeof(double)));
        CU_ASSERT(!memcmp(whole.cells.nodes, all.cells.nodes,
                          (size_t)whole.cells.ptr[whole.cells.n] * sizeof(int32_t)));
        CU_ASSERT(!memcmp(whole.cell_coarse, all.cell_coarse, (size_t)whole.cells.n * 4));
        CU_ASSERT_EQUAL_FATAL(whole.nboundaries, all.nboundaries);
        for (int g = 0; g < whole.nboundaries; g++) {
            const hk_elems *fa = &whole.boundaries[g].elems, *fb = &all.boundaries[g].elems;
            CU_ASSERT_EQUAL_FATAL(fa->n, fb->n);
            CU_ASSERT(!memcmp(fa->nodes, fb->nodes, (size_t)fa->ptr[fa->n] * sizeof(int32_t)));
        }
        key_at *ka = malloc((size_t)all.nnodes * sizeof *ka);
        CU_ASSERT_FATAL(ka != NULL);
        for (int64_t v = 0; v < all.nnodes; v++)
            ka[v] = (key_at){ra.keys[v], v};
        qsort(ka, (size_t)all.nnodes, sizeof *ka, cmp_key_at);
        int64_t dup = 0, missing = 0, moved = 0, owned = 0;
        for (int64_t v = 1; v < all.nnodes; v++)
            dup += !cmp_key_at(ka + v - 1, ka + v);
        CU_ASSERT_EQUAL(dup, 0);
        for (int me = 0; me < 2; me++) {
            hk_mesh h;
            region_pick ph = {.nparts = 2, .me = me};
            hk_mesh_region rh = {.select = pick_block, .ctx = &ph};
            HK_ASSERT_OK(hk_mesh_load_region(hk_test_path(c[k].geo), &o, &rh, &h));
            CU_ASSERT(h.cells.n < all.cells.n);
            uint8_t *own = calloc((size_t)h.nnodes + 1, 1);
            CU_ASSERT_FATAL(own != NULL);
            for (int64_t e = 0; e < h.cells.n; e++)
                if (ph.part[h.cell_coarse[e]] == me)
                    for (int64_t q = h.cells.ptr[e]; q < h.cells.ptr[e + 1]; q++)
                        own[h.cells.nodes[q]] = 1;
            for (int64_t v = 0; v < h.nnodes; v++) {
                key_at x = {rh.keys[v], v}, *f;
                f = bsearch(&x, ka, (size_t)all.nnodes, sizeof *ka, cmp_key_at);
                if (!f) {
                    missing++;
                    continue;
                }
                if (!own[v]) continue;
                owned++;
                moved += !!memcmp(h.coords + 3 * v, all.coords + 3 * f->v, 3 * sizeof(double));
            }
            free(own);
            free(rh.keys);
            free(ph.part);
            hk_mesh_free(&h);
        }
        CU_ASSERT_EQUAL(missing, 0);
        CU_ASSERT_EQUAL(moved, 0);
        CU_ASSERT(owned >= all.nnodes); /* each node in a half's own cells, some in both */
        free(ka);
        free(ra.keys);
        free(pa.part);
        hk_mesh_free(&whole);
        hk_mesh_free(&all);
    }
}

/* geometry.refine: auto (docs/geometry.md): none at a ready case's own size; above 100k
 * estimated cells, levels until Gmsh's share is at most 20k cells, but never coarser than the
 * model's shortest curve; the refined cells' shapes stay within the coarse mesh's. */
static void test_auto(void)
{
    static const struct {
        const char *geo;
        double size;
        int levels;  /* what auto must choose */
        int limited; /* the shortest curve stopped it (a note says so) */
    } c[] = {{"cases/bracket/bracket.geo", 0, 0, 0},      /* its own sizes */
             {"cases/bracket/bracket.geo", 0.002, 0, 0},  /* about 48k cells */
             {"cases/bracket/bracket.geo", 0.0015, 1, 0}, /* 115k: one level, 14k */
             {"cases/bracket/bracket.geo", 0.001, 2, 0},  /* 386k: two levels, 6k */
             {"tests/data/mesh/square.geo", 0.002, 3, 0}, /* 400k triangles: 6k */
             {"tests/data/mesh/notch.geo", 0.002, 2, 1}}; /* 0.016 would pass the notch */
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        hk_mesh m;
        hk_mesh_options o = {.order = 1,
                             .size = c[k].size,
                             .refine = HK_REFINE_AUTO,
                             .threads = 1,
                             .algorithm3d = 1};
        HK_ASSERT_OK(hk_mesh_load(hk_test_path(c[k].geo), &o, &m));
        const hk_mesh_refine_stats rs = hk_mesh_load_refine_stats();
        fprintf(stderr,
                "\n    %s at size %g: auto refines %d time%s, %lld -> %lld cells, quality "
                "min %.3f mean %.3f -> min %.3f mean %.3f",
                c[k].geo, c[k].size, rs.levels, rs.levels == 1 ? "" : "s",
                (long long)rs.cells_before, (long long)m.cells.n, rs.before.min, rs.before.mean,
                rs.after.min, rs.after.mean);
        CU_ASSERT_EQUAL(rs.levels, c[k].levels);
        CU_ASSERT_EQUAL(strstr(hk_mesh_load_notes(), "shortest model curve") != NULL, c[k].limited);
        if (rs.levels) {
            /* the split keeps a few shape classes: the finest cells no worse than half the
             * coarse mesh's worst, the mean about the same */
            CU_ASSERT(rs.after.min >= 0.5 * rs.before.min);
            CU_ASSERT(rs.after.mean >= 0.9 * rs.before.mean);
            /* Gmsh's share: the estimate is a lower bound, Gmsh makes up to about 1.6x */
            CU_ASSERT(rs.cells_before <= 2 * (c[k].limited ? 100000 : 20000));
        }
        hk_mesh_free(&m);
    }
}

/* A .msh is refined without geometry, then raised to the asked order; a quadratic one and
 * order_by: gmsh are refused in one sentence. */
static void test_load_msh(void)
{
    hk_mesh a, b;
    hk_mesh_options o = {.order = 2, .refine = 1};
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/hybrid_bar_o1_v41.msh"), NULL, &a));
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/hybrid_bar_o1_v41.msh"), &o, &b));
    HK_ASSERT_OK(hk_mesh_refine(&a, 1, NULL));
    CU_ASSERT_EQUAL(b.cells.n, a.cells.n);
    int64_t quadratic = 0;
    for (int64_t e = 0; e < b.cells.n; e++)
        quadratic += hk_eltype_get((hk_eltype)b.cells.type[e])->order == 2;
    CU_ASSERT_EQUAL(quadratic, b.cells.n);
    CU_ASSERT(fabs(elems_measure(&b, &b.cells) - 0.01) < 1e-14);
    hk_mesh_free(&a);
    hk_mesh_free(&b);
    /* a quadratic file */
    o.order = 1;
    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("tests/data/mesh/hybrid_bar_o2_v41.msh"), &o, &a),
                    HK_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "linear cells"));
    hk_error_clear();
    /* Gmsh's own second-order nodes cannot be refined */
    hk_mesh_options g = {.order = 2, .refine = 1, .order_by = HK_ORDER_BY_GMSH};
    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("cases/lame/lame.geo"), &g, &a), HK_ERR_OPTION);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "order_by"));
    hk_error_clear();
    /* more levels than there are */
    hk_mesh_options big = {.refine = HK_REFINE_MAX + 1};
    CU_ASSERT_EQUAL(hk_mesh_load(hk_test_path("cases/lame/lame.geo"), &big, &a), HK_ERR_OPTION);
    hk_error_clear();
}

/* ---- convergence against Lame's solution ---------------------------------------------------- */

/* Largest radial displacement error over the nodes, relative to u_r at the bore. */
static double lame_error(int order, int refine)
{
    const double a = 0.1, b = 0.2, p = 100e6, E = 200e9, nu = 0.3;
    const double A = (1 + nu) / E * p * a * a / (b * b - a * a);
    char so[64], sr[64], sz[64];
    snprintf(so, sizeof so, "geometry.order=%d", order);
    snprintf(sr, sizeof sr, "geometry.refine=%d", refine);
    snprintf(sz, sizeof sz, "geometry.size=%.17g", 0.08 / (1 << refine)); /* one coarse mesh */
    const char *sets[] = {so, sr, sz, "solver.tol=1e-11", "solver.pc=amg"};
    hk_case c;
    hk_run r;
    if (hk_test_run_case("cases/lame/lame.yaml", 5, sets, &c, &r)) return INFINITY;
    double worst = 0;
    for (int64_t i = 0; i < r.mesh.nnodes; i++) {
        const double *x = r.mesh.coords + 3 * i, rr = hypot(x[0], x[1]);
        const double ue = A * ((1 - 2 * nu) * rr + b * b / rr);
        worst = fmax(worst, fabs(hypot(r.u[2 * i], r.u[2 * i + 1]) - ue));
    }
    hk_run_free(&r);
    hk_case_free(&c);
    return worst / (A * ((1 - 2 * nu) * a + b * b / a));
}

static void test_convergence(void)
{
    for (int order = 1; order <= 2; order++) {
        /* refined 1 to 4 times from one coarse mesh (Gmsh's sizes scaled by 2 to 16) */
        double e[4];
        for (int l = 0; l < 4; l++)
            e[l] = lame_error(order, l + 1);
        const double r1 = log2(e[1] / e[2]), r2 = log2(e[2] / e[3]);
        fprintf(stderr,
                "\n    Lame, order %d, refined 1 to 4 times: error %.2e %.2e %.2e %.2e, rates "
                "%.2f %.2f %.2f ",
                order, e[0], e[1], e[2], e[3], log2(e[0] / e[1]), r1, r2);
        /* nodal displacements: O(h^2) for linear elements, O(h^3) for quadratic ones, once
         * past the coarsest meshes (three elements through the wall) */
        CU_ASSERT(r2 > (order == 1 ? 1.8 : 2.7));
        CU_ASSERT(r1 > (order == 1 ? 1.7 : 2.4));
    }
}

/* ---- every ready case with refine: 1 --------------------------------------------------------- */

/* a node's displacement or stress, a group's mean displacement, the largest |u|, the twist of
 * the section x = x[0] about the x axis, the frequency of mode comp (a modal case) */
typedef enum { P_RUNS, P_NODE_U, P_NODE_S, P_MEAN_U, P_MAX_U, P_TWIST, P_FREQ } probe_kind;

typedef struct {
    const char *file;
    probe_kind kind;
    double x[3];
    int comp, lc;
    const char *group;
    double expect, tol; /* the header's value and tolerance (relative) */
    const char *extra;  /* a --set to keep the run short, or NULL */
} case_probe;

/* The headline of each case file, as its header states it. */
static const case_probe probes[] = {
    {"axisym/thick_cylinder.yaml", P_NODE_U, {0.1, 0, 0}, 0, -1, NULL, 9.5333e-5, 0.01, NULL},
    {"box/box.yaml", P_RUNS, {0}, 0, -1, NULL, 0, 0, "geometry.generate.cells=[4,4,4]"},
    {"bracket/bracket.yaml", P_MAX_U, {0}, 0, -1, NULL, 0.69e-3, 0.02, NULL},
    {"cantilever/cantilever.yaml", P_MEAN_U, {0}, 2, -1, "tip", -2.015e-4, 0.02, NULL},
    /* tol 1e-10 is near this mesh's rounding floor: the true residual can end a little above */
    {"cantilever/cantilever_loadcases.yaml",
     P_MEAN_U,
     {0},
     2,
     0,
     "tip",
     -2.015e-4,
     0.02,
     "solver.tol=1e-9"},
    {"cook/cook.yaml", P_NODE_U, {48, 52, 0}, 1, -1, NULL, 23.96, 0.01, NULL},
    {"force/force_bar.yaml", P_NODE_U, {1, 0, 0}, 0, -1, NULL, 5e-6, 1e-6, NULL},
    {"hybrid/hybrid.yaml", P_MEAN_U, {0}, 2, -1, "tip", -2.015e-4, 0.02, "solver.tol=1e-9"},
    {"kirsch/kirsch.yaml", P_NODE_S, {0, 0.01, 0}, 0, -1, NULL, 300e6, 0.05, NULL},
    {"lame/lame.yaml", P_NODE_U, {0.1, 0, 0}, 0, -1, NULL, 9.5333e-5, 0.01, NULL},
    {"lame/lame_incompressible.yaml", P_NODE_U, {0.1, 0, 0}, 0, -1, NULL, 0.019998, 0.01, NULL},
    {"le1/le1.yaml", P_NODE_S, {2, 0, 0}, 1, -1, NULL, 92.7e6, 0.03, NULL},
    {"le10/le10.yaml", P_NODE_S, {2, 0, 0.3}, 1, -1, NULL, -5.38e6, 0.03, NULL},
    {"modal/cantilever.yaml", P_FREQ, {0}, 0, -1, NULL, 40.689, 0.01, NULL},
    {"modal/free_beam.yaml", P_FREQ, {0}, 6, -1, NULL, 257.11, 0.01, NULL},
    {"modal/fv32.yaml", P_FREQ, {0}, 0, -1, NULL, 44.623, 0.005, NULL},
    {"modal/fv41.yaml", P_FREQ, {0}, 1, -1, NULL, 243.53, 0.005, NULL},
    {"modal/fv52.yaml", P_FREQ, {0}, 0, -1, NULL, 45.897, 0.01, "geometry.generate.cells=[5,5,1]"},
    {"modal/stocky.yaml", P_FREQ, {0}, 0, -1, NULL, 158.22, 0.025, NULL},
    {"modal/strip.yaml", P_FREQ, {0}, 0, -1, NULL, 42.646, 0.01, NULL},
    {"orthotropic/ortho_bar.yaml", P_NODE_U, {1, 0, 0}, 0, -1, NULL, 7.143e-7, 1e-3, NULL},
    /* the 10 mm wall needs a coarse mesh of about its thickness (docs/geometry.md) */
    {"remote/tube.yaml", P_TWIST, {0.5, 0, 0}, 0, 0, NULL, 1.1215e-3, 0.02, "geometry.size=0.01"},
    {"remote/tube_rigid.yaml",
     P_TWIST,
     {0.5, 0, 0},
     0,
     0,
     NULL,
     1.1215e-3,
     0.02,
     "geometry.size=0.01"},
    {"springs/springs.yaml",
     P_NODE_U,
     {0, 0, 0.5},
     2,
     -1,
     NULL,
     -1.001667e-3,
     1e-4,
     "solver.tol=1e-10"},
    {"thermal/clamped_bar.yaml", P_NODE_S, {0.5, 0.05, 0.05}, 0, -1, NULL, -240e6, 1e-6, NULL},
    {"thermal/free_bar.yaml", P_NODE_U, {1, 0, 0}, 0, -1, NULL, 1.2e-3, 1e-6, NULL},
};

static int64_t nearest_node(const hk_mesh *m, const double *x)
{
    int64_t best = -1;
    double bd = INFINITY;
    for (int64_t i = 0; i < m->nnodes; i++) {
        const double *p = m->coords + 3 * i;
        double d = (p[0] - x[0]) * (p[0] - x[0]) + (p[1] - x[1]) * (p[1] - x[1]) +
                   (p[2] - x[2]) * (p[2] - x[2]);
        if (d < bd) bd = d, best = i;
    }
    return best;
}

static void check_case(const case_probe *p)
{
    const char *sets[2] = {"geometry.refine=1", p->extra};
    char rel[256];
    snprintf(rel, sizeof rel, "cases/%s", p->file);
    hk_case c;
    hk_run r;
    int err = hk_test_run_case(rel, p->extra ? 2 : 1, sets, &c, &r);
    CU_ASSERT_EQUAL(err, 0);
    if (err) return;
    const hk_fields *f = p->lc >= 0 ? &r.lc[p->lc].fields : &r.fields;
    const double *u = f->u;
    const int d = 3;
    double v = 0;
    if (p->kind == P_NODE_U) {
        v = u[d * nearest_node(&r.mesh, p->x) + p->comp];
    } else if (p->kind == P_NODE_S) {
        v = f->stress[6 * nearest_node(&r.mesh, p->x) + p->comp];
    } else if (p->kind == P_MEAN_U) {
        const int g = hk_mesh_find_boundary(&r.mesh, p->group);
        CU_ASSERT_FATAL(g >= 0);
        for (int64_t i = 0; i < r.mesh.boundaries[g].nnodes; i++)
            v += u[d * (int64_t)r.mesh.boundaries[g].nodes[i] + p->comp];
        v /= (double)r.mesh.boundaries[g].nnodes;
    } else if (p->kind == P_MAX_U) {
        v = f->max_u;
    } else if (p->kind == P_FREQ) {
        CU_ASSERT_FATAL(p->comp < r.modal.nmodes);
        v = r.modal.freq[p->comp];
    } else if (p->kind == P_TWIST) {
        double num = 0, den = 0;
        for (int64_t i = 0; i < r.mesh.nnodes; i++) {
            const double *x = r.mesh.coords + 3 * i;
            if (fabs(x[0] - p->x[0]) > 1e-9) continue;
            num += x[1] * u[3 * i + 2] - x[2] * u[3 * i + 1];
            den += x[1] * x[1] + x[2] * x[2];
        }
        v = num / den;
    }
    const double off = p->kind == P_RUNS ? 0 : fabs(v - p->expect) / fabs(p->expect);
    fprintf(stderr, "\n    %s, refine 1: %lld cells%s, %.5g against %.5g (%.2f %%) ", p->file,
            (long long)r.mesh.cells.n, c.generate ? " (generated)" : "", v, p->expect, 100 * off);
    CU_ASSERT(off <= p->tol);
    hk_run_free(&r);
    hk_case_free(&c);
}

static void test_every_case(void)
{
    char casedir[1024];
    snprintf(casedir, sizeof casedir, "%s", hk_test_path("cases"));
    DIR *d = opendir(casedir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *de;
    int ncases = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char sub[2048];
        snprintf(sub, sizeof sub, "%s/%s", casedir, de->d_name);
        DIR *d2 = opendir(sub);
        if (!d2) continue;
        struct dirent *f;
        while ((f = readdir(d2))) {
            size_t l = strlen(f->d_name);
            if (l < 6 || strcmp(f->d_name + l - 5, ".yaml")) continue;
            char file[600];
            snprintf(file, sizeof file, "%s/%s", de->d_name, f->d_name);
            const case_probe *p = NULL;
            for (size_t k = 0; k < sizeof probes / sizeof *probes && !p; k++)
                if (!strcmp(probes[k].file, file)) p = &probes[k];
            if (!p) fprintf(stderr, "\n    %s: no headline in this test's table; add it ", file);
            CU_ASSERT_PTR_NOT_NULL(p);
            if (p) check_case(p);
            ncases++;
        }
        closedir(d2);
    }
    closedir(d);
    CU_ASSERT(ncases >= 19);
}

/* ---- the case file's key --------------------------------------------------------------------- */

static void test_case_key(void)
{
    hk_case c;
    const char *bad[][1] = {{"geometry.refine=7"}, {"geometry.refine=two"}, {"geometry.refine=-1"}};
    for (int k = 0; k < 3; k++) {
        CU_ASSERT_NOT_EQUAL(hk_case_load(hk_test_path("cases/lame/lame.yaml"), 1, bad[k], &c), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "geometry.refine must be auto or"));
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), bad[k][0])); /* where: the --set */
        hk_error_clear();
    }
    const char *two[] = {"geometry.refine=2"}, *aut[] = {"geometry.refine=auto"};
    HK_ASSERT_OK(hk_case_load(hk_test_path("cases/lame/lame.yaml"), 1, two, &c));
    CU_ASSERT_EQUAL(c.mesh.refine, 2);
    hk_case_free(&c);
    HK_ASSERT_OK(hk_case_load(hk_test_path("cases/lame/lame.yaml"), 1, aut, &c));
    CU_ASSERT_EQUAL(c.mesh.refine, HK_REFINE_AUTO);
    CU_ASSERT_EQUAL(c.mesh.threads, 0); /* one thread, Delaunay: reproducible */
    CU_ASSERT_EQUAL(c.mesh.algorithm3d, 0);
    hk_case_free(&c);
    /* geometry.threads: 0 is every core */
    const char *all[] = {"geometry.threads=0"};
    HK_ASSERT_OK(hk_case_load(hk_test_path("cases/lame/lame.yaml"), 1, all, &c));
    CU_ASSERT_EQUAL(c.mesh.threads, HK_MESH_THREADS_ALL);
    hk_case_free(&c);
    /* a generated grid: 2^refine times the cells along each axis */
    HK_ASSERT_OK(hk_case_load(hk_test_path("cases/box/box.yaml"), 1, two, &c));
    CU_ASSERT(c.generate && c.gen_cells[0] == 48 && c.gen_cells[2] == 48 && !c.mesh.refine);
    hk_case_free(&c);
    const char *big[] = {"geometry.refine=6", "geometry.generate.cells=[2000,2,2]"};
    CU_ASSERT_NOT_EQUAL(hk_case_load(hk_test_path("cases/box/box.yaml"), 2, big, &c), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "the most is 100000"));
    hk_error_clear();
}

/* ---- the same result file, bit for bit ------------------------------------------------------- */

/* hooke run (the binary) twice on one thread and on two, and hooke mesh twice: the same .vtu
 * and .msh bytes, on every usable backend; with the default meshing and with refinement. (The
 * solver's methods and preconditioners: suite solve_cmd.) */
static void test_reproducible(void)
{
    static const struct {
        const char *rel, *sets;
    } runs[] = {
        {"cases/cantilever/cantilever.yaml", "--set geometry.size=0.1"},
        {"cases/kirsch/kirsch.yaml", "--set geometry.size=0.02"},
        {"cases/cantilever/cantilever.yaml", "--set geometry.size=0.1 --set geometry.refine=1"},
        {"cases/hybrid/hybrid.yaml", "--set geometry.refine=1 --set solver.tol=1e-9"}};
    const char *tmp = hk_test_tmpdir();
    for (const hk_backend *const *be = hk_test_backends(); *be; be++)
        for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
            char args[2048], why[256];
            snprintf(args, sizeof args, "run '%s' --backend %s --quiet %s",
                     hk_test_path(runs[k].rel), hk_backend_name(*be), runs[k].sets);
            const int same = hk_test_same_bytes(args, ".vtu", why, sizeof why);
            fprintf(stderr, "\n    %s %s on %s, 1, 2, 2 threads: %s ", runs[k].rel, runs[k].sets,
                    hk_backend_name(*be), same ? "the same .vtu bytes" : why);
            CU_ASSERT(same);
        }
    /* hooke mesh: the same .msh, twice */
    char msh[2][1200], cmd[4096];
    for (int i = 0; i < 2; i++) {
        snprintf(msh[i], sizeof msh[i], "%s/repro%d.msh", tmp, i);
        snprintf(cmd, sizeof cmd,
                 "OMP_NUM_THREADS=%d '%s' mesh '%s' -o '%s' --quiet --set geometry.size=0.01 > "
                 "/dev/null 2>&1",
                 i + 1, HOOKE_BINARY, hk_test_path("cases/bracket/bracket.yaml"), msh[i]);
        CU_ASSERT_EQUAL(system(cmd), 0);
    }
    CU_ASSERT(hk_test_same_file(msh[0], msh[1]));
}

#endif

/* hk_mesh_grid_quality (one cell) against the whole grid measured cell by cell: every element
 * kind of the generators, cells that are not cubes. */
static void test_grid_quality(void)
{
    static const struct {
        int dim;
        hk_eltype t;
    } kinds[] = {{2, HK_EL_TRI3}, {2, HK_EL_TRI6}, {2, HK_EL_QUAD4}, {2, HK_EL_QUAD8},
                 {2, HK_EL_QUAD9}, {3, HK_EL_TET4}, {3, HK_EL_TET10}, {3, HK_EL_HEX8},
                 {3, HK_EL_HEX20}, {3, HK_EL_HEX27}};
    const double size[3] = {3.0, 1.0, 0.7};
    const int cells[3] = {7, 4, 3};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        hk_mesh m = {0};
        hk_mesh_quality whole, one;
        HK_ASSERT_OK(hk_mesh_grid_slab(kinds[k].dim, size, cells, kinds[k].t, 0, 0, cells[0], &m));
        HK_ASSERT_OK(hk_mesh_measure_quality(&m, &whole));
        HK_ASSERT_OK(hk_mesh_grid_quality(kinds[k].dim, size, cells, kinds[k].t, &one));
        CU_ASSERT(whole.cells > one.cells && one.cells > 0);
        /* a box's corners are right angles (1); the simplices of cells that are not cubes
         * are not regular: figures that could differ */
        const int simplex = kinds[k].t == HK_EL_TRI3 || kinds[k].t == HK_EL_TRI6 ||
                            kinds[k].t == HK_EL_TET4 || kinds[k].t == HK_EL_TET10;
        CU_ASSERT(whole.min > 0.1 && whole.min < (simplex ? 0.99 : 1.0 + 1e-12));
        CU_ASSERT_DOUBLE_EQUAL(one.min, whole.min, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(one.mean, whole.mean, 1e-12);
        hk_mesh_free(&m);
    }
    hk_mesh_quality q;
    const int bad[3] = {7, 0, 3};
    CU_ASSERT_EQUAL(hk_mesh_grid_quality(3, size, bad, HK_EL_HEX8, &q), HK_ERR_ARG);
}

HK_SUITE(refine,
         {"every element kind refined once and twice: counts, volumes, groups", test_every_kind},
         {"refined quads and hexes are the generators' finer grids", test_generator_grids},
         {"the same nodes and cells on 1 and 2 threads", test_threads},
         {"each cell inside its coarse ancestor, through renumbering and hk_mesh_load",
          test_ancestors},
         {"the patch test on refined meshes of every kind, order 1 and 2", test_patch},
         {"a generated grid's quality from one cell: the whole grid's", test_grid_quality},
#ifdef HOOKE_HAVE_GMSH
         {"geometry.refine in the case file, and its errors", test_case_key},
         {"refined boundary nodes on the cylinder, sphere and circles", test_curved},
         {"hk_mesh_load with refinement: the same bytes on 1 and 2 threads", test_load_threads},
         {"geometry.refine: auto from the size and the shortest curve", test_auto},
         {"hk_mesh_load_region: a region's nodes are the whole mesh's, keys and coordinates",
          test_region},
         {"a .msh refined and raised; quadratic files and order_by gmsh refused", test_load_msh},
         {"Lame: errors fall at the elements' rates under refinement", test_convergence},
         {"hooke run and hooke mesh give the same bytes every time", test_reproducible},
         {"every ready case with refine: 1 within its stated tolerance", test_every_case}
#endif
)
