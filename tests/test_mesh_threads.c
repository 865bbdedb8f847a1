/* The mesh stage's parallel steps give the same bytes on any number of threads: the prefix
 * sums, numbering and group nodes they share (against serial references), the RCM
 * renumbering, the second-order nodes and the refinement, on every element kind (tri, quad,
 * tet, hex, wedge, pyramid; order 1 and 2) with their physical groups. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../mesh/mesh_impl.h"
#include "test_util.h"

/* ---- shared pieces against serial references ----------------------------------------------- */

static int cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static uint32_t next_random(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void test_primitives(void)
{
    const int threads = omp_get_max_threads();
    enum { N = 300000, NODES = 70000 };
    int64_t *ref = malloc((N + 1) * sizeof *ref), *a = malloc((N + 1) * sizeof *a);
    int32_t *z = malloc(N * sizeof *z), *zref = malloc(N * sizeof *zref);
    uint32_t s = 11;
    for (int64_t i = 0; i <= N; i++)
        ref[i] = next_random(&s) % 7;
    for (int64_t i = 0; i < N; i++)
        zref[i] = next_random(&s) % 3 ? -1 : 0;
    int64_t nz = 0;
    for (int64_t i = 0; i < N; i++)
        if (!zref[i]) zref[i] = (int32_t)nz++;
    for (int nt = 1; nt <= 3; nt++) {
        omp_set_num_threads(nt);
        /* counts into offsets, a serial sum as the reference */
        s = 11;
        for (int64_t i = 0; i <= N; i++)
            a[i] = next_random(&s) % 7;
        hk_prefix_sum(a, N);
        int64_t run = 0, bad = 0;
        for (int64_t i = 0; i <= N; i++) {
            run += ref[i];
            bad += a[i] != run;
        }
        CU_ASSERT_EQUAL(bad, 0);
        /* zeros numbered in index order */
        for (int64_t i = 0; i < N; i++)
            z[i] = zref[i] < 0 ? -1 : 0;
        CU_ASSERT_EQUAL(hk_number_zeros(z, N), nz);
        CU_ASSERT(!memcmp(z, zref, N * sizeof *z));
    }
    /* a group's sorted unique nodes: many (a bitmap), few (sorted), out of range (sorted) */
    static const int64_t sizes[] = {200000, 1000, 200000};
    for (int k = 0; k < 3; k++) {
        const int64_t n = sizes[k];
        hk_group g;
        memset(&g, 0, sizeof g);
        g.elems.n = n;
        g.elems.ptr = malloc((n + 1) * sizeof *g.elems.ptr);
        g.elems.nodes = malloc(n * sizeof *g.elems.nodes);
        g.elems.ptr[0] = 0;
        s = 5u + (uint32_t)k;
        for (int64_t e = 0; e < n; e++) {
            g.elems.ptr[e + 1] = e + 1;
            g.elems.nodes[e] = (int32_t)(next_random(&s) % NODES);
        }
        const int64_t total = k == 2 ? NODES / 2 : NODES; /* k = 2: nodes past the total */
        int32_t *want = malloc(n * sizeof *want);
        memcpy(want, g.elems.nodes, n * sizeof *want);
        qsort(want, (size_t)n, sizeof *want, cmp_int32);
        int64_t u = 0;
        for (int64_t i = 0; i < n; i++)
            if (!u || want[i] != want[u - 1]) want[u++] = want[i];
        for (int nt = 1; nt <= 2; nt++) {
            omp_set_num_threads(nt);
            HK_ASSERT_OK(hk_group_collect_nodes(&g, total));
            CU_ASSERT_EQUAL_FATAL(g.nnodes, u);
            CU_ASSERT(!memcmp(g.nodes, want, (size_t)u * sizeof *want));
        }
        free(want);
        free(g.nodes);
        free(g.elems.ptr);
        free(g.elems.nodes);
    }
    omp_set_num_threads(threads);
    free(ref);
    free(a);
    free(z);
    free(zref);
}

/* ---- whole steps on 1 and 2 threads ---------------------------------------------------------- */

static void same_bytes(const hk_mesh *a, const hk_mesh *b, const char *what)
{
    int same = a->nnodes == b->nnodes && a->cells.n == b->cells.n &&
               a->nboundaries == b->nboundaries;
    same = same && !memcmp(a->coords, b->coords, 3 * (size_t)a->nnodes * sizeof *a->coords) &&
           !memcmp(a->cells.type, b->cells.type, (size_t)a->cells.n) &&
           !memcmp(a->cells.ptr, b->cells.ptr, (size_t)(a->cells.n + 1) * sizeof *a->cells.ptr) &&
           !memcmp(a->cells.nodes, b->cells.nodes,
                   (size_t)a->cells.ptr[a->cells.n] * sizeof *a->cells.nodes) &&
           !memcmp(a->cells.tag, b->cells.tag, (size_t)a->cells.n * sizeof *a->cells.tag) &&
           (!a->cell_region ||
            !memcmp(a->cell_region, b->cell_region, (size_t)a->cells.n * sizeof *a->cell_region));
    for (int g = 0; same && g < a->nboundaries; g++) {
        const hk_group *ga = &a->boundaries[g], *gb = &b->boundaries[g];
        const hk_elems *fa = &ga->elems, *fb = &gb->elems;
        same = fa->n == fb->n && ga->nnodes == gb->nnodes &&
               !memcmp(fa->type, fb->type, (size_t)fa->n) &&
               !memcmp(fa->ptr, fb->ptr, (size_t)(fa->n + 1) * sizeof *fa->ptr) &&
               !memcmp(fa->nodes, fb->nodes, (size_t)fa->ptr[fa->n] * sizeof *fa->nodes) &&
               !memcmp(ga->nodes, gb->nodes, (size_t)ga->nnodes * sizeof *ga->nodes);
    }
    if (!same) fprintf(stderr, "\n    %s: different bytes on 1 and 2 threads ", what);
    CU_ASSERT(same);
}

/* The meshes: generated grids of every generated type, and Gmsh files with wedges, pyramids
 * and mixed triangles and quadrilaterals (refined twice on one thread, so that every
 * parallel loop has many cells). linear: only linear cells. Returns -1 past the last. */
enum { NMESH = 13 };
static const char *const mesh_names[NMESH] = {
    "tri3 grid",  "quad4 grid", "tet4 box",  "hex8 box",  "tri6 grid",
    "quad8 grid", "quad9 grid", "tet10 box", "hex20 box", "hex27 box",
    "hybrid bar (hex, tet, pyramid, wedge) refined", "mixed tri/quad refined",
    "hybrid bar, order 2 from Gmsh"};

static int make_mesh(int k, int linear, hk_mesh *m)
{
    static const hk_eltype t2[] = {HK_EL_TRI3, HK_EL_QUAD4, HK_EL_TRI6, HK_EL_QUAD8, HK_EL_QUAD9};
    static const hk_eltype t3[] = {HK_EL_TET4, HK_EL_HEX8, HK_EL_TET10, HK_EL_HEX20, HK_EL_HEX27};
    memset(m, 0, sizeof *m);
    if (k >= NMESH) return -1;
    if (linear && ((k >= 4 && k <= 9) || k == 12)) return 0;
    switch (k) {
    case 0:
    case 1:
    case 4:
    case 5:
    case 6:
        return hk_mesh_rectangle(3, 2, 60, 40, t2[k < 4 ? k : k - 2], m) ? -1 : 1;
    case 2:
    case 3:
    case 7:
    case 8:
    case 9:
        return hk_mesh_box(1, 2, 1, 12, 16, 10, t3[k < 4 ? k - 2 : k - 5], m) ? -1 : 1;
#ifdef HOOKE_HAVE_GMSH
    case 10:
    case 11: {
        const int threads = omp_get_max_threads();
        int err = hk_mesh_load(hk_test_path(k == 10 ? "tests/data/mesh/hybrid_bar_o1_v41.msh"
                                                    : "tests/data/mesh/mixed_v41.msh"),
                               NULL, m);
        omp_set_num_threads(1);
        if (!err) err = hk_mesh_refine(m, 2, NULL);
        omp_set_num_threads(threads);
        return err ? -1 : 1;
    }
    case 12:
        return hk_mesh_load(hk_test_path("tests/data/mesh/hybrid_bar_o2_v41.msh"), NULL, m) ? -1
                                                                                             : 1;
#endif
    default:
        return 0;
    }
}

static void test_rcm_threads(void)
{
    const int threads = omp_get_max_threads();
    const int64_t wide = hk_mesh_rcm_wide_level(64); /* the parallel walks on these meshes */
    for (int k = 0; k < NMESH; k++) {
        hk_mesh a, b;
        int made = make_mesh(k, 0, &a);
        CU_ASSERT(made >= 0);
        if (made <= 0) continue;
        CU_ASSERT_FATAL(make_mesh(k, 0, &b) == 1);
        omp_set_num_threads(1);
        HK_ASSERT_OK(hk_mesh_renumber_rcm(&a));
        omp_set_num_threads(2);
        HK_ASSERT_OK(hk_mesh_renumber_rcm(&b));
        same_bytes(&a, &b, mesh_names[k]);
        hk_mesh_free(&a);
        hk_mesh_free(&b);
    }
    omp_set_num_threads(threads);
    hk_mesh_rcm_wide_level(wide);
}

static void test_elevate_threads(void)
{
    const int threads = omp_get_max_threads();
    for (int incomplete = 0; incomplete < 2; incomplete++)
        for (int k = 0; k < NMESH; k++) {
            hk_mesh a, b;
            hk_elev_stats sa, sb;
            int made = make_mesh(k, 1, &a);
            CU_ASSERT(made >= 0);
            if (made <= 0) continue;
            CU_ASSERT_FATAL(make_mesh(k, 1, &b) == 1);
            omp_set_num_threads(1);
            HK_ASSERT_OK(hk_mesh_elevate(&a, incomplete, NULL, &sa));
            omp_set_num_threads(2);
            HK_ASSERT_OK(hk_mesh_elevate(&b, incomplete, NULL, &sb));
            CU_ASSERT(!memcmp(&sa, &sb, sizeof sa));
            CU_ASSERT(sa.edges > 0);
            same_bytes(&a, &b, mesh_names[k]);
            hk_mesh_free(&a);
            hk_mesh_free(&b);
        }
    omp_set_num_threads(threads);
}

static void test_refine_threads(void)
{
    const int threads = omp_get_max_threads();
    for (int k = 0; k < NMESH; k++) {
        hk_mesh a, b;
        int made = make_mesh(k, 1, &a);
        CU_ASSERT(made >= 0);
        if (made <= 0) continue;
        CU_ASSERT_FATAL(make_mesh(k, 1, &b) == 1);
        omp_set_num_threads(1);
        HK_ASSERT_OK(hk_mesh_refine(&a, 1, NULL));
        omp_set_num_threads(2);
        HK_ASSERT_OK(hk_mesh_refine(&b, 1, NULL));
        same_bytes(&a, &b, mesh_names[k]);
        hk_mesh_free(&a);
        hk_mesh_free(&b);
    }
    omp_set_num_threads(threads);
}

/* The generated grids and slabs (hk_mesh_grid_slab, made element by element in parallel): the
 * same bytes on 1 and 3 threads, and a slab's nodes where the whole grid has them. */
static void test_generate_threads(void)
{
    static const hk_eltype types[2][5] = {
        {HK_EL_TRI3, HK_EL_TRI6, HK_EL_QUAD4, HK_EL_QUAD8, HK_EL_QUAD9},
        {HK_EL_TET4, HK_EL_TET10, HK_EL_HEX8, HK_EL_HEX20, HK_EL_HEX27}};
    const int threads = omp_get_max_threads();
    const double size[3] = {1.5, 0.7, 1.1};
    for (int d = 2; d <= 3; d++)
        for (int k = 0; k < 5; k++)
            for (int axis = 0; axis < d; axis++) {
                const int cells[3] = {d == 2 ? 31 : 9, d == 2 ? 23 : 7, 8};
                const int lo = cells[axis] / 3, hi = cells[axis] - 1;
                hk_mesh a, b;
                omp_set_num_threads(1);
                HK_ASSERT_OK(hk_mesh_grid_slab(d, size, cells, types[d - 2][k], axis, lo, hi, &a));
                omp_set_num_threads(3);
                HK_ASSERT_OK(hk_mesh_grid_slab(d, size, cells, types[d - 2][k], axis, lo, hi, &b));
                same_bytes(&a, &b, hk_eltype_get(types[d - 2][k])->name);
                hk_mesh_free(&b);
                /* the whole grid: the slab's cells are a run of its cells, their nodes at the
                 * same coordinates */
                HK_ASSERT_OK(hk_mesh_grid_slab(d, size, cells, types[d - 2][k], axis, 0,
                                               cells[axis], &b));
                int64_t per = b.cells.n / ((int64_t)cells[0] * cells[1] * (d == 3 ? cells[2] : 1));
                int64_t bad = 0, e = 0;
                for (int64_t q = 0; q < b.cells.n / per; q++) {
                    const int64_t I[3] = {q % cells[0], q / cells[0] % cells[1],
                                          q / ((int64_t)cells[0] * cells[1])};
                    if (I[axis] < lo || I[axis] >= hi) continue;
                    for (int64_t p = 0; p < per; p++, e++)
                        for (int64_t j = 0; j < a.cells.ptr[e + 1] - a.cells.ptr[e]; j++) {
                            const double *xa = a.coords + 3 * a.cells.nodes[a.cells.ptr[e] + j];
                            const int64_t f = q * per + p;
                            const double *xb = b.coords + 3 * b.cells.nodes[b.cells.ptr[f] + j];
                            bad += memcmp(xa, xb, 3 * sizeof *xa) != 0;
                        }
                }
                CU_ASSERT_EQUAL(e, a.cells.n);
                CU_ASSERT_EQUAL(bad, 0);
                hk_mesh_free(&a);
                hk_mesh_free(&b);
            }
    omp_set_num_threads(threads);
}

/* A generated grid's RCM order from its structure (hk_mesh_grid_slab_rcm) is the one from its
 * cells (hk_mesh_renumber_rcm), node for node: every generated type, whole grids and slabs
 * along each axis, thin ones, on 1 and 2 threads; levels from 256 nodes walked in parallel
 * (the largest box on 3 threads too), against one thread's serial walk. */
static void test_grid_rcm(void)
{
    static const hk_eltype types[2][5] = {
        {HK_EL_TRI3, HK_EL_TRI6, HK_EL_QUAD4, HK_EL_QUAD8, HK_EL_QUAD9},
        {HK_EL_TET4, HK_EL_TET10, HK_EL_HEX8, HK_EL_HEX20, HK_EL_HEX27}};
    static const int grids[][4] = {{2, 30, 20, 1}, {2, 1, 9, 1}, {2, 7, 1, 1},  {3, 6, 5, 7},
                                   {3, 1, 1, 1},   {3, 4, 1, 9}, {3, 50, 44, 40}, {3, 2, 3, 11},
                                   {2, 13, 2, 1}};
    const int threads = omp_get_max_threads();
    const int64_t wide = hk_mesh_rcm_wide_level(256); /* the parallel walk from these sizes */
    const double size[3] = {2, 1, 1.3};
    int64_t checked = 0;
    for (size_t gi = 0; gi < sizeof grids / sizeof grids[0]; gi++) {
        const int d = grids[gi][0], *cells = grids[gi] + 1;
        for (int k = 0; k < 5; k++) {
            const hk_eltype t = types[d - 2][k];
            if (gi == 6 && t != HK_EL_HEX8 && t != HK_EL_TET4) continue; /* time: 100k nodes */
            for (int axis = 0; axis < d; axis++)
                for (int s = 0; s < 3; s++) {
                    const int n = cells[axis];
                    const int lo = s == 2 ? n / 2 : 0, hi = s == 0 ? n : s == 1 ? (n + 1) / 2 : n;
                    if (lo >= hi || (s && n < 2)) continue;
                    hk_mesh ref, a, b;
                    omp_set_num_threads(1);
                    HK_ASSERT_OK(hk_mesh_grid_slab(d, size, cells, t, axis, lo, hi, &ref));
                    HK_ASSERT_OK(hk_mesh_renumber_rcm(&ref));
                    HK_ASSERT_OK(hk_mesh_grid_slab_rcm(d, size, cells, t, axis, lo, hi, &a, NULL));
                    for (int nt = 2; nt <= (gi == 6 ? 3 : 2); nt++) {
                        omp_set_num_threads(nt);
                        HK_ASSERT_OK(
                            hk_mesh_grid_slab_rcm(d, size, cells, t, axis, lo, hi, &b, NULL));
                        same_bytes(&ref, &b, hk_eltype_get(t)->name);
                        hk_mesh_free(&b);
                    }
                    same_bytes(&ref, &a, hk_eltype_get(t)->name);
                    if (gi == 6) { /* the cells' graph on 3 threads too */
                        HK_ASSERT_OK(hk_mesh_grid_slab(d, size, cells, t, axis, lo, hi, &b));
                        HK_ASSERT_OK(hk_mesh_renumber_rcm(&b));
                        same_bytes(&ref, &b, hk_eltype_get(t)->name);
                        hk_mesh_free(&b);
                    }
                    hk_mesh_free(&ref);
                    hk_mesh_free(&a);
                    checked++;
                }
        }
    }
    CU_ASSERT(checked > 150);
    omp_set_num_threads(threads);
    hk_mesh_rcm_wide_level(wide);
}

#ifdef HOOKE_HAVE_GMSH
/* hk_mesh_load's phases add up to the call: every step is in one of them. */
static void test_phases_add_up(void)
{
    hk_mesh m;
    hk_mesh_options o = {.order = 2, .refine = 1, .renumber = 1};
    const double t0 = omp_get_wtime();
    HK_ASSERT_OK(hk_mesh_load(hk_test_path("cases/kirsch/kirsch.geo"), &o, &m));
    const double wall = omp_get_wtime() - t0;
    const hk_mesh_load_times t = hk_mesh_load_phase_times();
    const double sum = t.open + t.surfaces + t.volume + t.read + t.refine + t.order + t.renumber;
    fprintf(stderr, "\n    kirsch, refine 1, order 2: phases %.4f s of %.4f s ", sum, wall);
    CU_ASSERT(t.open > 0 && t.surfaces > 0 && t.read > 0 && t.refine > 0 && t.order > 0 &&
              t.renumber > 0);
    CU_ASSERT(t.volume == 0); /* a 2D model: its surfaces are the whole of Gmsh's meshing */
    CU_ASSERT(sum <= wall && sum > 0.95 * wall - 0.002);
    hk_mesh_free(&m);
}
#endif

HK_SUITE(
    mesh_threads,
    {"prefix sums, numbering, group nodes: serial references on 1 to 3 threads", test_primitives},
    {"RCM renumbering: the same bytes on 1 and 2 threads, every element kind", test_rcm_threads},
    {"second-order nodes: the same bytes on 1 and 2 threads, every element kind",
     test_elevate_threads},
    {"refinement: the same bytes on 1 and 2 threads, every element kind", test_refine_threads},
    {"generated grids and slabs: the same bytes on 1 and 3 threads, a slab's nodes the grid's",
     test_generate_threads},
    {"a generated grid's RCM from its structure: the cells' RCM, on 1 and 2 threads",
     test_grid_rcm}
#ifdef HOOKE_HAVE_GMSH
    ,
    {"hk_mesh_load's phases add up to the call", test_phases_add_up}
#endif
)
