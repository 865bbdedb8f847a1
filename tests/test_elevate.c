/* Second-order nodes made by Hooke (hk_mesh_elevate, geometry.order_by: hooke) against the
 * generators' quadratic meshes, Gmsh's own elevation (node order of every quadratic type, node
 * and element counts) and the exact curved geometry (cylinder, sphere, circles); numbering
 * independent of the thread count; curved isoparametric meshes pass the patch test; closed-form
 * cases agree with either elevation. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../assembly/elements.h"
#include "../mesh/mesh_impl.h"
#include "case.h"
#include "test_util.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static double node_dist(const double *a, const double *b)
{
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                (a[2] - b[2]) * (a[2] - b[2]));
}

/* Largest distance between the same node slots of the same elements of a and b (elements in
 * the order perm_a[k] <-> perm_b[k], or the same order when NULL); -1 when types differ. */
static double elems_diff(const hk_mesh *ma, const hk_elems *a, const int64_t *pa, const hk_mesh *mb,
                         const hk_elems *b, const int64_t *pb)
{
    if (a->n != b->n) return -1;
    double worst = 0;
    for (int64_t k = 0; k < a->n; k++) {
        int64_t ea = pa ? pa[k] : k, eb = pb ? pb[k] : k;
        if (a->type[ea] != b->type[eb]) return -1;
        for (int64_t i = 0; i < a->ptr[ea + 1] - a->ptr[ea]; i++)
            worst = fmax(worst, node_dist(ma->coords + 3 * (int64_t)a->nodes[a->ptr[ea] + i],
                                          mb->coords + 3 * (int64_t)b->nodes[b->ptr[eb] + i]));
    }
    return worst;
}

/* Elements ordered by (type, centroid of their corners): the same order in two meshes of the
 * same linear mesh whatever their numbering. */
static const hk_mesh *sort_mesh;
static const hk_elems *sort_elems;
static void centroid(const hk_mesh *m, const hk_elems *es, int64_t e, double *c)
{
    int nc = hk_eltype_ncorners((hk_eltype)es->type[e]);
    c[0] = c[1] = c[2] = 0;
    for (int i = 0; i < nc; i++)
        for (int d = 0; d < 3; d++)
            c[d] += m->coords[3 * (int64_t)es->nodes[es->ptr[e] + i] + d] / nc;
}
static int cmp_centroid(const void *p, const void *q)
{
    int64_t a = *(const int64_t *)p, b = *(const int64_t *)q;
    if (sort_elems->type[a] != sort_elems->type[b])
        return sort_elems->type[a] < sort_elems->type[b] ? -1 : 1;
    double ca[3], cb[3];
    centroid(sort_mesh, sort_elems, a, ca);
    centroid(sort_mesh, sort_elems, b, cb);
    for (int d = 0; d < 3; d++)
        if (fabs(ca[d] - cb[d]) > 1e-9) return ca[d] < cb[d] ? -1 : 1;
    return 0;
}
static int64_t *sorted_elems(const hk_mesh *m, const hk_elems *es)
{
    int64_t *p = malloc((size_t)(es->n ? es->n : 1) * sizeof *p);
    for (int64_t e = 0; e < es->n; e++)
        p[e] = e;
    sort_mesh = m, sort_elems = es;
    qsort(p, (size_t)es->n, sizeof *p, cmp_centroid);
    return p;
}

/* a and b: the same elements and groups with their nodes at the same places. */
static void check_same_mesh(const hk_mesh *a, const hk_mesh *b, int sorted, double tol)
{
    CU_ASSERT_EQUAL(a->nnodes, b->nnodes);
    CU_ASSERT_EQUAL_FATAL(a->cells.n, b->cells.n);
    CU_ASSERT_EQUAL_FATAL(a->nboundaries, b->nboundaries);
    int64_t *pa = sorted ? sorted_elems(a, &a->cells) : NULL;
    int64_t *pb = sorted ? sorted_elems(b, &b->cells) : NULL;
    double d = elems_diff(a, &a->cells, pa, b, &b->cells, pb);
    if (!(d >= 0 && d <= tol)) fprintf(stderr, "\n    cells differ by %g ", d);
    CU_ASSERT(d >= 0 && d <= tol);
    free(pa);
    free(pb);
    for (int g = 0; g < a->nboundaries; g++) {
        const hk_group *ga = &a->boundaries[g], *gb = &b->boundaries[g];
        CU_ASSERT_STRING_EQUAL(ga->name, gb->name);
        CU_ASSERT_EQUAL(ga->nnodes, gb->nnodes);
        pa = sorted ? sorted_elems(a, &ga->elems) : NULL;
        pb = sorted ? sorted_elems(b, &gb->elems) : NULL;
        d = elems_diff(a, &ga->elems, pa, b, &gb->elems, pb);
        if (!(d >= 0 && d <= tol)) fprintf(stderr, "\n    group %s differs by %g ", ga->name, d);
        CU_ASSERT(d >= 0 && d <= tol);
        free(pa);
        free(pb);
    }
}

/* Smallest Jacobian determinant of the cells at their nodes. */
static double min_node_det(const hk_mesh *m)
{
    double worst = INFINITY;
    for (int64_t e = 0; e < m->cells.n; e++) {
        const hk_elref *r = hk_elref_get((hk_eltype)m->cells.type[e]);
        const int32_t *nd = m->cells.nodes + m->cells.ptr[e];
        for (int i = 0; i < r->nnodes; i++) {
            double dN[HK_EL_MAXN][3], J[3][3] = {{0}};
            hk_el_shape(r->type, r->xi[i], NULL, dN);
            for (int a = 0; a < r->nnodes; a++)
                for (int p = 0; p < 3; p++)
                    for (int q = 0; q < 3; q++)
                        J[p][q] += m->coords[3 * (int64_t)nd[a] + p] * dN[a][q];
            double det = m->dim == 2 ? J[0][0] * J[1][1] - J[0][1] * J[1][0]
                                     : J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
                                           J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
                                           J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
            worst = fmin(worst, det);
        }
    }
    return worst;
}

/* Volume (3D) or area (2D) of the cells through their isoparametric map. */
static double mesh_measure(const hk_mesh *m)
{
    double v = 0;
    for (int64_t e = 0; e < m->cells.n; e++) {
        const hk_elref *r = hk_elref_get((hk_eltype)m->cells.type[e]);
        const int32_t *nd = m->cells.nodes + m->cells.ptr[e];
        for (int q = 0; q < r->nqp; q++) {
            double J[3][3] = {{0}};
            for (int a = 0; a < r->nnodes; a++)
                for (int p = 0; p < 3; p++)
                    for (int s = 0; s < 3; s++)
                        J[p][s] += m->coords[3 * (int64_t)nd[a] + p] * r->dN[q][a][s];
            double det = m->dim == 2 ? J[0][0] * J[1][1] - J[0][1] * J[1][0]
                                     : J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
                                           J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
                                           J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
            v += r->qw[q] * det;
        }
    }
    return v;
}

/* ---- generated meshes: the generators' quadratic types ----------------------------------- */

static void test_generated(void)
{
    static const struct {
        int dim;
        hk_eltype lin, quad;
        int incomplete;
    } c[] = {{2, HK_EL_TRI3, HK_EL_TRI6, 0},   {2, HK_EL_QUAD4, HK_EL_QUAD9, 0},
             {2, HK_EL_QUAD4, HK_EL_QUAD8, 1}, {3, HK_EL_TET4, HK_EL_TET10, 0},
             {3, HK_EL_HEX8, HK_EL_HEX27, 0},  {3, HK_EL_HEX8, HK_EL_HEX20, 1},
             {3, HK_EL_TET4, HK_EL_TET10, 1}};
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        hk_mesh a, b;
        hk_elev_stats st;
        if (c[k].dim == 2) {
            HK_ASSERT_OK(hk_mesh_rectangle(2, 1, 5, 3, c[k].lin, &a));
            HK_ASSERT_OK(hk_mesh_rectangle(2, 1, 5, 3, c[k].quad, &b));
        } else {
            HK_ASSERT_OK(hk_mesh_box(1, 2, 3, 2, 3, 4, c[k].lin, &a));
            HK_ASSERT_OK(hk_mesh_box(1, 2, 3, 2, 3, 4, c[k].quad, &b));
        }
        HK_ASSERT_OK(hk_mesh_elevate(&a, c[k].incomplete, NULL, &st));
        CU_ASSERT_EQUAL(st.projected + st.straight + st.too_far + st.failed + st.dropped, 0);
        check_same_mesh(&a, &b, 0, 1e-14 * 3);
        hk_mesh_free(&a);
        hk_mesh_free(&b);
    }
    /* a quadratic mesh is refused */
    hk_mesh m;
    hk_elev_stats st;
    HK_ASSERT_OK(hk_mesh_box(1, 1, 1, 1, 1, 1, HK_EL_TET10, &m));
    CU_ASSERT_EQUAL(hk_mesh_elevate(&m, 0, NULL, &st), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "tet10"));
    hk_mesh_free(&m);
}

/* Hexahedra, pyramids, tetrahedra and prisms (tests/data/mesh/hybrid_bar.geo): the linear
 * mesh raised by Hooke is the mesh Gmsh raised itself, node for node, complete and incomplete
 * (read from .msh: Gmsh 4.8 aborts when it meshes pyramids twice in a process). */
static void test_hybrid_order(void)
{
    static const char *const o2[2] = {"tests/data/mesh/hybrid_bar_o2_v41.msh",
                                      "tests/data/mesh/hybrid_bar_o2i_v41.msh"};
    for (int inc = 0; inc < 2; inc++) {
        hk_mesh a, b;
        hk_elev_stats st;
        HK_ASSERT_OK(hk_mesh_load(hk_test_path("tests/data/mesh/hybrid_bar_o1_v41.msh"), NULL, &a));
        HK_ASSERT_OK(hk_mesh_elevate(&a, inc, NULL, &st));
        HK_ASSERT_OK(hk_mesh_load(hk_test_path(o2[inc]), NULL, &b));
        int kinds = 0;
        static const hk_eltype t[2][4] = {{HK_EL_HEX27, HK_EL_PYR14, HK_EL_TET10, HK_EL_WEDGE18},
                                          {HK_EL_HEX20, HK_EL_PYR13, HK_EL_TET10, HK_EL_WEDGE15}};
        for (int j = 0; j < 4; j++) {
            int64_t n = 0;
            for (int64_t e = 0; e < a.cells.n; e++)
                n += a.cells.type[e] == t[inc][j];
            kinds += n > 0;
        }
        CU_ASSERT_EQUAL(kinds, 4);
        check_same_mesh(&a, &b, 1, 1e-12);
        hk_mesh_free(&a);
        hk_mesh_free(&b);
    }
}

/* ---- curved geometry ------------------------------------------------------------------------ */

static void load(const char *rel, int order_by, int renumber, hk_mesh *m)
{
    /* Delaunay on one thread: the same linear mesh every time (HXT varies) */
    hk_mesh_options o = {
        .order = 2, .threads = 1, .algorithm3d = 1, .renumber = renumber, .order_by = order_by};
    HK_ASSERT_OK(hk_mesh_load(hk_test_path(rel), &o, m));
}

/* Distance of x from the exact curved boundary named by the test. */
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

/* Every mid-edge node of the cells: on the exact surface where it is a node of a curved group
 * (relative distance), else exactly the midpoint of its edge. Returns the nodes on them. */
static int64_t check_mid_nodes(const hk_mesh *m, int ncurved, const char *const *curved,
                               const surface_fn *off, double *worst_off, int64_t *not_mid)
{
    uint8_t *on = calloc((size_t)m->nnodes, 1);
    for (int k = 0; k < ncurved; k++) {
        int g = hk_mesh_find_boundary(m, curved[k]);
        CU_ASSERT_FATAL(g >= 0);
        for (int64_t i = 0; i < m->boundaries[g].nnodes; i++)
            on[m->boundaries[g].nodes[i]] = (uint8_t)(k + 1);
    }
    int64_t non = 0;
    *worst_off = 0, *not_mid = 0;
    for (int64_t e = 0; e < m->cells.n; e++) {
        hk_eltype t = (hk_eltype)m->cells.type[e];
        CU_ASSERT_FATAL(t == HK_EL_TET10 || t == HK_EL_TRI6);
        const int32_t *nd = m->cells.nodes + m->cells.ptr[e];
        const hk_elref *r = hk_elref_get(t);
        for (int i = r->ncorners; i < r->nnodes; i++) {
            int c[2], k = 0;
            double N[HK_EL_MAXN], dN[HK_EL_MAXN][3];
            hk_el_shape(t == HK_EL_TET10 ? HK_EL_TET4 : HK_EL_TRI3, r->xi[i], N, dN);
            for (int a = 0; a < r->ncorners; a++)
                if (fabs(N[a]) > 1e-9 && k < 2) c[k++] = a;
            const double *x = m->coords + 3 * (int64_t)nd[i];
            if (on[nd[i]]) {
                non++;
                *worst_off = fmax(*worst_off, off[on[nd[i]] - 1](x));
            } else {
                for (int d = 0; d < 3; d++)
                    *not_mid += x[d] != 0.5 * (m->coords[3 * (int64_t)nd[c[0]] + d] +
                                               m->coords[3 * (int64_t)nd[c[1]] + d]);
            }
        }
    }
    free(on);
    return non;
}

/* The same numbers of nodes, elements and group elements as Gmsh's elevation. */
static void check_counts(const hk_mesh *a, const hk_mesh *b)
{
    CU_ASSERT_EQUAL(a->nnodes, b->nnodes);
    CU_ASSERT_EQUAL(a->cells.n, b->cells.n);
    CU_ASSERT_EQUAL_FATAL(a->nboundaries, b->nboundaries);
    for (int g = 0; g < a->nboundaries; g++) {
        CU_ASSERT_EQUAL(a->boundaries[g].elems.n, b->boundaries[g].elems.n);
        CU_ASSERT_EQUAL(a->boundaries[g].nnodes, b->boundaries[g].nnodes);
    }
}

static void test_curved(void)
{
    static const struct {
        const char *geo;
        int n;
        const char *curved[2];
        surface_fn off[2];
        double exact; /* volume or area */
    } c[] = {{"tests/data/mesh/cylinder.geo", 1, {"side"}, {off_cylinder}, 2 * M_PI},
             {"tests/data/mesh/sphere.geo", 1, {"skin"}, {off_sphere}, M_PI / 6},
             /* no area check: with one element size the bore's and the outer arc's chords
              * err by the same area in opposite directions */
             {"cases/lame/lame.geo", 2, {"bore", "outer"}, {off_bore, off_outer}, 0}};
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        hk_mesh h, g, lin;
        load(c[k].geo, HK_ORDER_BY_HOOKE, 0, &h);
        CU_ASSERT_EQUAL(hk_mesh_load_notes()[0], 0);
        load(c[k].geo, HK_ORDER_BY_GMSH, 0, &g);
        hk_mesh_options o1 = {.order = 1, .threads = 1, .algorithm3d = 1};
        HK_ASSERT_OK(hk_mesh_load(hk_test_path(c[k].geo), &o1, &lin));
        check_counts(&h, &g);
        double worst;
        int64_t not_mid, non = check_mid_nodes(&h, c[k].n, c[k].curved, c[k].off, &worst, &not_mid);
        double vh = mesh_measure(&h), vg = mesh_measure(&g), vl = mesh_measure(&lin);
        double ex = c[k].exact ? c[k].exact : vl;
        fprintf(stderr,
                "\n    %s: %lld nodes (Gmsh %lld), %lld mid-nodes on the curved boundary, off "
                "by %.1e; measure error hooke %.1e, gmsh %.1e, linear %.1e ",
                c[k].geo, (long long)h.nnodes, (long long)g.nnodes, (long long)non, worst,
                fabs(vh - ex) / ex, fabs(vg - ex) / ex, fabs(vl - ex) / ex);
        CU_ASSERT(non > 10);
        CU_ASSERT(worst < 1e-10);
        CU_ASSERT_EQUAL(not_mid, 0);
        CU_ASSERT(min_node_det(&h) > 0);
        /* curved: far closer to the exact measure than the straight mesh, like Gmsh's */
        if (c[k].exact) CU_ASSERT(fabs(vh - c[k].exact) < 0.1 * fabs(vl - c[k].exact));
        hk_mesh_free(&h);
        hk_mesh_free(&g);
        hk_mesh_free(&lin);
    }
}

/* The same numbering and places whatever the thread count (RCM on and off). */
static void test_threads(void)
{
    int threads = omp_get_max_threads();
    for (int renumber = 0; renumber < 2; renumber++) {
        hk_mesh a, b;
        omp_set_num_threads(1);
        load("tests/data/mesh/cylinder.geo", HK_ORDER_BY_HOOKE, renumber, &a);
        omp_set_num_threads(4);
        load("tests/data/mesh/cylinder.geo", HK_ORDER_BY_HOOKE, renumber, &b);
        CU_ASSERT_EQUAL(omp_get_max_threads(), 4);
        CU_ASSERT_EQUAL_FATAL(a.nnodes, b.nnodes);
        CU_ASSERT_EQUAL_FATAL(a.cells.n, b.cells.n);
        CU_ASSERT(!memcmp(a.coords, b.coords, (size_t)(3 * a.nnodes) * sizeof *a.coords));
        CU_ASSERT(!memcmp(a.cells.nodes, b.cells.nodes,
                          (size_t)a.cells.ptr[a.cells.n] * sizeof *a.cells.nodes));
        for (int g = 0; g < a.nboundaries; g++) {
            CU_ASSERT_EQUAL_FATAL(a.boundaries[g].elems.n, b.boundaries[g].elems.n);
            const hk_elems *fa = &a.boundaries[g].elems, *fb = &b.boundaries[g].elems;
            CU_ASSERT(!memcmp(fa->nodes, fb->nodes, (size_t)fa->ptr[fa->n] * sizeof *fa->nodes));
        }
        hk_mesh_free(&a);
        hk_mesh_free(&b);
    }
    omp_set_num_threads(threads);
}

/* ---- the patch test on the curved mesh ---------------------------------------------------- */

static const double PG[3][3] = {
    {1.0e-3, 2.0e-3, -0.5e-3}, {-1.5e-3, 0.7e-3, 1.1e-3}, {0.4e-3, -0.9e-3, 1.3e-3}};

/* Every boundary node held at u = G x: the isoparametric curved cylinder reproduces the linear
 * field inside, up to the 4-point rule's error on curved tetrahedra (det J J^-1 is then
 * quadratic, the integrand cubic); a node shared wrongly would be off by the field itself. */
static double patch_error(int order_by)
{
    hk_mesh m;
    load("tests/data/mesh/cylinder.geo", order_by, 1, &m);
    /* one point group per boundary node, holding its value */
    uint8_t *onb = calloc((size_t)m.nnodes, 1);
    int64_t nb = 0;
    for (int g = 0; g < m.nboundaries; g++)
        for (int64_t i = 0; i < m.boundaries[g].nnodes; i++)
            onb[m.boundaries[g].nodes[i]] = 1;
    for (int64_t i = 0; i < m.nnodes; i++)
        nb += onb[i];
    int nold = m.nboundaries;
    hk_group *gr = realloc(m.boundaries, (size_t)(nold + nb) * sizeof *gr);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gr);
    m.boundaries = gr;
    hk_support *sup = calloc((size_t)nb, sizeof *sup);
    int64_t k = 0;
    for (int64_t i = 0; i < m.nnodes; i++) {
        if (!onb[i]) continue;
        hk_group *g = &m.boundaries[nold + k];
        memset(g, 0, sizeof *g);
        snprintf(g->name, sizeof g->name, "n%lld", (long long)i);
        g->nnodes = 1;
        g->nodes = malloc(sizeof *g->nodes);
        g->nodes[0] = (int32_t)i;
        sup[k].boundary = nold + (int)k;
        sup[k].mask = 7;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                sup[k].value[a] += PG[a][b] * m.coords[3 * i + b];
        k++;
    }
    m.nboundaries = nold + (int)nb;
    hk_material mat = {.E = 200e9, .nu = 0.3};
    hk_problem p = {
        .mesh = &m, .analysis = HK_SOLID, .materials = &mat, .nsupports = (int)nb, .supports = sup};
    hk_system s;
    HK_ASSERT_OK(hk_assemble(&p, &s));
    double *u = calloc((size_t)s.ndof, sizeof *u);
    hk_options *o = NULL;
    hk_solver *sv = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu method=cg pc=jacobi tol=1e-14 maxit=100000"));
    HK_ASSERT_OK(hk_solver_create(&s.K, o, &sv));
    hk_options_destroy(o);
    hk_result res;
    HK_ASSERT_OK(hk_solver_solve(sv, s.f, u, &res));
    CU_ASSERT(hk_reason_converged(res.reason));
    hk_solver_destroy(sv);
    double err = 0, ref = 0;
    int64_t inside = 0;
    for (int64_t i = 0; i < m.nnodes; i++) {
        inside += !onb[i];
        for (int a = 0; a < 3; a++) {
            double ue = 0;
            for (int b = 0; b < 3; b++)
                ue += PG[a][b] * m.coords[3 * i + b];
            double ui = s.fixed[3 * i + a] ? s.u_fixed[3 * i + a] : u[3 * i + a];
            err = fmax(err, fabs(ui - ue));
            ref = fmax(ref, fabs(ue));
        }
    }
    CU_ASSERT(inside > 50);
    free(u);
    free(sup);
    free(onb);
    hk_system_free(&s);
    hk_mesh_free(&m);
    return err / ref;
}

static void test_patch_curved(void)
{
    double eh = patch_error(HK_ORDER_BY_HOOKE), eg = patch_error(HK_ORDER_BY_GMSH);
    fprintf(stderr, "\n    curved patch: error %.1e of the field (Gmsh's nodes: %.1e) ", eh, eg);
    CU_ASSERT(eh <= 1e-5);
    CU_ASSERT(eg <= 1e-5);
}

/* ---- projections that would invert cells, or land far away -------------------------------- */

/* Fake projections: push along -z by shift (times 2x unless uniform), or fail. */
typedef struct {
    double shift;
    int uniform, fails;
} fake_ctx;

static int fake_project(void *ctx, const hk_elev_entity *e, double *xyz, int64_t n)
{
    const fake_ctx *f = ctx;
    (void)e;
    if (f->fails) return -1;
    for (int64_t i = 0; i < n; i++)
        xyz[3 * i + 2] -= f->shift * (f->uniform ? 1 : 2 * xyz[3 * i]);
    return 0;
}

static void test_invalid_projection(void)
{
    /* the top face (z = 1) of a unit box of 2 x 2 x 2 cubes (h = 0.5), 6 tetrahedra each: 8
     * triangles, 16 edges, 14 of them off x = 0 where the push is 0 */
    static const fake_ctx c[] = {{0.005, 0, 0}, {0.1, 0, 0}, {0.6, 1, 0}, {0.01, 0, 1}};
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        hk_mesh m;
        HK_ASSERT_OK(hk_mesh_box(1, 1, 1, 2, 2, 2, HK_EL_TET4, &m));
        int top = hk_mesh_find_boundary(&m, "zmax");
        CU_ASSERT_FATAL(top >= 0);
        hk_elev_entity ent = {.dim = 2, .tag = 1, .elems = m.boundaries[top].elems};
        hk_elev_geom g = {.n = 1, .ent = &ent, .project = fake_project, .ctx = (void *)&c[k]};
        hk_elev_stats st;
        HK_ASSERT_OK(hk_mesh_elevate(&m, 0, &g, &st));
        CU_ASSERT_EQUAL(st.projected + st.too_far + st.failed, 16);
        CU_ASSERT(min_node_det(&m) > 0);
        int64_t below = 0; /* top mid-nodes that stayed pushed in */
        for (int64_t i = 0; i < m.nnodes; i++)
            below += m.coords[3 * i + 2] > 0.75 && m.coords[3 * i + 2] < 1;
        if (c[k].fails) {
            CU_ASSERT_EQUAL(st.failed, 16);
            CU_ASSERT_EQUAL(below, 0);
        } else if (c[k].uniform) {
            CU_ASSERT_EQUAL(st.too_far, 16); /* more than half of every edge away */
            CU_ASSERT_EQUAL(below, 0);
        } else if (c[k].shift < 0.01) {
            CU_ASSERT_EQUAL(st.projected, 16); /* a small push inverts nothing */
            CU_ASSERT_EQUAL(st.straight, 0);
            CU_ASSERT_EQUAL(below, 14);
        } else {
            /* pushed in by up to 0.4 h: the cells that would fold keep theirs straight */
            fprintf(stderr, "\n    pushed in by up to 0.4 h: %lld of 16 mid-nodes kept straight ",
                    (long long)st.straight);
            CU_ASSERT_EQUAL(st.projected, 16);
            CU_ASSERT(st.straight > 0 && st.straight < 16);
            CU_ASSERT(below > 0 && below < 14);
        }
        hk_mesh_free(&m);
    }
}

/* ---- closed-form cases with either elevation ---------------------------------------------- */

static int run_case(const char *rel, const char *order_by, hk_case *c, hk_run *r)
{
    char set[64];
    snprintf(set, sizeof set, "geometry.order_by=%s", order_by);
    /* Delaunay on one thread: both elevations raise the same linear mesh */
    const char *sets[] = {set, "geometry.algorithm3d=delaunay", "geometry.threads=1"};
    return hk_test_run_case(rel, 3, sets, c, r);
}

static void test_cases(void)
{
    static const char *const by[2] = {"hooke", "gmsh"};
    /* Lame, plane strain: u_r at every bore node within 1 % */
    const double a = 0.1, b = 0.2, p = 100e6, E = 200e9, nu = 0.3;
    const double ref = (1 + nu) / E * p * a * a / (b * b - a * a) * ((1 - 2 * nu) * a + b * b / a);
    for (int k = 0; k < 2; k++) {
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(run_case("cases/lame/lame.yaml", by[k], &c, &r));
        int g = hk_mesh_find_boundary(&r.mesh, "bore");
        CU_ASSERT_FATAL(g >= 0);
        double worst = 0;
        for (int64_t i = 0; i < r.mesh.boundaries[g].nnodes; i++) {
            int64_t n = r.mesh.boundaries[g].nodes[i];
            double ur = hypot(r.u[2 * n], r.u[2 * n + 1]);
            worst = fmax(worst, fabs(ur - ref) / ref);
        }
        fprintf(stderr, "\n    lame, order_by %s: worst bore u_r off by %.3f %% ", by[k],
                100 * worst);
        CU_ASSERT(worst < 0.01);
        hk_run_free(&r);
        hk_case_free(&c);
    }
    /* the bracket: peak von Mises about 157 MPa (155 with Gmsh 4.9), top moving 0.69 mm; the
     * same linear mesh raised either way gives the same answers closely (the placements on
     * the cylinders and the fillet agree) */
    double vmk[2] = {0, 0}, uk[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(run_case("cases/bracket/bracket.yaml", by[k], &c, &r));
        double vm = r.fields.max_von_mises / 1e6, u = r.fields.max_u * 1e3;
        fprintf(stderr,
                "\n    bracket, order_by %s: %lld nodes, max von Mises %.4f MPa, max |u| "
                "%.6f mm ",
                by[k], (long long)r.mesh.nnodes, vm, u);
        CU_ASSERT(fabs(vm - 156) < 0.03 * 156);
        CU_ASSERT(fabs(u - 0.69) < 0.02 * 0.69);
        vmk[k] = vm, uk[k] = u;
        hk_run_free(&r);
        hk_case_free(&c);
    }
    CU_ASSERT(fabs(vmk[0] - vmk[1]) < 1e-3 * vmk[1]);
    CU_ASSERT(fabs(uk[0] - uk[1]) < 1e-4 * uk[1]);
}

/* geometry.order_by takes hooke or gmsh, and says so */
static void test_case_key(void)
{
    hk_case c;
    const char *bad[] = {"geometry.order_by=both"};
    CU_ASSERT_NOT_EQUAL(hk_case_load(hk_test_path("cases/lame/lame.yaml"), 1, bad, &c), 0);
    const char *msg = hk_error_message();
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "geometry.order_by"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "hooke"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "gmsh"));
    const char *good[] = {"geometry.order_by=gmsh"};
    HK_ASSERT_OK(hk_case_load(hk_test_path("cases/lame/lame.yaml"), 1, good, &c));
    CU_ASSERT_EQUAL(c.mesh.order_by, HK_ORDER_BY_GMSH);
    hk_case_free(&c);
    HK_ASSERT_OK(hk_case_load(hk_test_path("cases/lame/lame.yaml"), 0, NULL, &c));
    CU_ASSERT_EQUAL(c.mesh.order_by, HK_ORDER_BY_HOOKE);
    hk_case_free(&c);
}

HK_SUITE(elevate, {"geometry.order_by: hooke or gmsh", test_case_key},
         {"raised generated meshes are the generators' quadratic ones", test_generated},
#ifdef HOOKE_HAVE_GMSH
         {"hex/pyramid/tet/prism bar raised node for node as Gmsh does", test_hybrid_order},
         {"cylinder, sphere, circles: Gmsh's counts, mid-nodes on the geometry", test_curved},
         {"the same numbering on 1 and 4 threads", test_threads},
         {"patch test on the curved cylinder", test_patch_curved},
         {"nodes that would invert a cell or land far stay straight", test_invalid_projection},
         {"Lame and the bracket with either elevation", test_cases}
#else
         {"nodes that would invert a cell or land far stay straight", test_invalid_projection}
#endif
)
