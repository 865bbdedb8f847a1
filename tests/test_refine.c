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
    static const topo hex = {12,
                             6,
                             8,
                             {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {4, 5}, {5, 6}, {6, 7}, {7, 4},
                              {0, 4}, {1, 5}, {2, 6}, {3, 7}},
                             {{0, 1, 2, 3}, {4, 5, 6, 7}, {0, 1, 5, 4}, {1, 2, 6, 5}, {2, 3, 7, 6},
                              {3, 0, 4, 7}}};
    static const topo wedge = {
        9,
        3,
        8,
        {{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}, {0, 3}, {1, 4}, {2, 5}},
        {{0, 1, 4, 3}, {1, 2, 5, 4}, {2, 0, 3, 5}}};
    static const topo pyr = {8,
                             1,
                             10,
                             {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 4}, {1, 4}, {2, 4}, {3, 4}},
                             {{0, 1, 2, 3}}};
    switch (t) {
    case HK_EL_TRI3: return &tri;
    case HK_EL_QUAD4: return &quad;
    case HK_EL_TET4: return &tet;
    case HK_EL_HEX8: return &hex;
    case HK_EL_WEDGE6: return &wedge;
    case HK_EL_PYR5: return &pyr;
    default: return NULL;
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
    static const int wf[5][4] = {{0, 2, 1, -1}, {3, 4, 5, -1}, {0, 1, 4, 3}, {1, 2, 5, 4}, {2, 0, 3, 5}};
    static const int pf[5][4] = {{0, 3, 2, 1}, {0, 1, 4, -1}, {1, 2, 4, -1}, {2, 3, 4, -1},
                                 {3, 0, 4, -1}};
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
    case 0: return hk_mesh_rectangle(3, 2, 3, 2, HK_EL_TRI3, m);
    case 1: return hk_mesh_rectangle(3, 2, 3, 2, HK_EL_QUAD4, m);
    case 2: return hk_mesh_box(1, 2, 1, 2, 2, 1, HK_EL_TET4, m);
    case 3: return hk_mesh_box(2, 1, 1, 2, 1, 2, HK_EL_HEX8, m);
    case 4: single_cell(HK_EL_WEDGE6, m); return 0;
    case 5: single_cell(HK_EL_PYR5, m); return 0;
#ifdef HOOKE_HAVE_GMSH
    case 6: return hk_mesh_load(hk_test_path("tests/data/mesh/hybrid_bar_o1_v41.msh"), NULL, m);
    case 7: return hk_mesh_load(hk_test_path("tests/data/mesh/mixed_v41.msh"), NULL, m);
#endif
    default: return -1;
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
            fprintf(stderr, "\n    %s, level %d: %lld -> %lld cells, %lld nodes, quality min %.3f "
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

HK_SUITE(refine, {"every element kind refined once and twice: counts, volumes, groups",
                  test_every_kind},
         {"refined quads and hexes are the generators' finer grids", test_generator_grids},
         {"the same nodes and cells on 1 and 2 threads", test_threads})
