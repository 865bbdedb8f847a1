/* Runs at scale: the threaded mesher on every case in cases/ (a valid mesh: every physical
 * group, no inverted or tangled element, the volume of a single-thread Delaunay mesh), meshes
 * and systems written and read back (hooke mesh -> geometry.file, output.matrix/rhs ->
 * hooke solve) to the run's own answer. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "case.h"
#include "test_util.h"

#ifdef HOOKE_HAVE_GMSH

/* Coarse sizes that keep each case under a second (cases not listed: their own size). */
static const char *coarse_size(const char *name)
{
    static const char *const t[][2] = {
        {"bracket", "0.008"}, {"cantilever", "0.1"}, {"cook", "6"},   {"le1", "0.2"},
        {"le10", "0.3"},      {"kirsch", "0.02"},    {"lame", "0.05"}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (!strcmp(name, t[i][0])) return t[i][1];
    return NULL;
}

/* Sum of |corner simplex volume| (area in 2D) over the cells; -1 for non-simplex cells. */
static double mesh_volume(const hk_mesh *m)
{
    double v = 0;
    for (int64_t e = 0; e < m->cells.n; e++) {
        const int32_t *n = m->cells.nodes + m->cells.ptr[e];
        const double *a = m->coords + 3 * (int64_t)n[0], *b = m->coords + 3 * (int64_t)n[1],
                     *c = m->coords + 3 * (int64_t)n[2];
        double u[3], w[3];
        for (int k = 0; k < 3; k++)
            u[k] = b[k] - a[k], w[k] = c[k] - a[k];
        int t = m->cells.type[e];
        if (t == HK_EL_TRI3 || t == HK_EL_TRI6) {
            v += 0.5 * fabs(u[0] * w[1] - u[1] * w[0]);
        } else if (t == HK_EL_TET4 || t == HK_EL_TET10) {
            const double *d = m->coords + 3 * (int64_t)n[3];
            double z[3] = {d[0] - a[0], d[1] - a[1], d[2] - a[2]};
            v += fabs(u[0] * (w[1] * z[2] - w[2] * z[1]) - u[1] * (w[0] * z[2] - w[2] * z[0]) +
                      u[2] * (w[0] * z[1] - w[1] * z[0])) /
                 6;
        } else {
            return -1;
        }
    }
    return v;
}

/* Mesh and assemble case cases/<name>/<file> with the overrides; assembly checks every
 * element's Jacobian at its quadrature points and binding every group the case names. */
static int assemble_case(const char *path, int nsets, const char *const *sets, hk_case *c,
                         hk_run *r)
{
    int err = hk_case_load(path, nsets, sets, c);
    if (err) {
        fprintf(stderr, "\n  %s: %s\n", path, hk_error_message());
        return err;
    }
    hk_run_opts o = {.backend = "cpu", .quiet = 1};
    err = hk_run_assemble(c, &o, r);
    if (err) {
        fprintf(stderr, "\n  %s: %s\n", path, hk_error_message());
        hk_run_free(r);
        hk_case_free(c);
    }
    return err;
}

static int same_groups(const hk_mesh *a, const hk_mesh *b)
{
    if (a->nregions != b->nregions || a->nboundaries != b->nboundaries) return 0;
    for (int i = 0; i < a->nregions; i++)
        if (hk_mesh_find_region(b, a->regions[i].name) < 0) return 0;
    for (int i = 0; i < a->nboundaries; i++) {
        int j = hk_mesh_find_boundary(b, a->boundaries[i].name);
        if (j < 0 || b->boundaries[j].elems.n == 0) return 0;
    }
    return 1;
}

static void check_threaded_case(const char *dir, const char *file, const char *extra)
{
    char path[2048], rel[1024], size[64], *s1[4], *s0[6];
    snprintf(rel, sizeof rel, "cases/%s/%s", dir, file);
    snprintf(path, sizeof path, "%s", hk_test_path(rel));
    const char *cs = coarse_size(dir);
    int n1 = 0, n0 = 0;
    s1[n1++] = "geometry.threads=2";
    if (cs) snprintf(size, sizeof size, "geometry.size=%s", cs), s1[n1++] = size;
    if (extra) s1[n1++] = (char *)extra;
    for (int i = 0; i < n1; i++)
        s0[n0++] = s1[i];
    s0[0] = "geometry.threads=1";
    s0[n0++] = "geometry.algorithm3d=delaunay";
    s0[n0++] = "geometry.algorithm2d=frontal";
    hk_case c1, c0;
    hk_run r1, r0;
    memset(&r1, 0, sizeof r1), memset(&r0, 0, sizeof r0);
    int e1 = assemble_case(path, n1, (const char *const *)s1, &c1, &r1);
    CU_ASSERT_EQUAL(e1, 0);
    if (e1) return;
    const char *notes = hk_mesh_load_notes();
    if (!c1.generate && strstr(notes, "inverted")) {
        fprintf(stderr, "\n  %s: %s\n", rel, notes);
        CU_FAIL("the threaded mesher gave inverted elements");
    }
    int e0 = assemble_case(path, n0, (const char *const *)s0, &c0, &r0);
    CU_ASSERT_EQUAL(e0, 0);
    if (!e0) {
        CU_ASSERT(same_groups(&r1.mesh, &r0.mesh));
        CU_ASSERT(r1.mesh.nregions >= 1 && r1.mesh.nboundaries >= 1);
        double v1 = mesh_volume(&r1.mesh), v0 = mesh_volume(&r0.mesh);
        if (v1 >= 0 && v0 > 0 && fabs(v1 - v0) > 0.01 * v0) {
            fprintf(stderr, "\n  %s: volume %.6g threaded, %.6g single-thread Delaunay\n", rel, v1,
                    v0);
            CU_FAIL("the threaded mesh does not fill the geometry's volume");
        }
        hk_run_free(&r0);
        hk_case_free(&c0);
    }
    hk_run_free(&r1);
    hk_case_free(&c1);
}

/* Every case file of every folder in cases/, on two threads with the default algorithms. */
static void test_threaded_mesher_every_case(void)
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
            check_threaded_case(de->d_name, f->d_name, NULL);
            ncases++;
        }
        closedir(d2);
    }
    closedir(d);
    CU_ASSERT(ncases >= 8);
    /* hexahedra from subdivided HXT tetrahedra */
    check_threaded_case("cantilever", "cantilever.yaml", "geometry.quad=true");
}

#endif

#ifdef HOOKE_HAVE_GMSH

static int run_cmd(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int same_elems(const hk_elems *a, const hk_elems *b)
{
    if (a->n != b->n || memcmp(a->type, b->type, (size_t)a->n) ||
        memcmp(a->ptr, b->ptr, (size_t)(a->n + 1) * sizeof *a->ptr))
        return 0;
    return !memcmp(a->nodes, b->nodes, (size_t)a->ptr[a->n] * sizeof *a->nodes);
}

/* hooke mesh writes the mesh; the case reading it gets the nodes, elements, groups and
 * displacements of the run that meshes the geometry itself (meshed deterministically: one
 * thread, Delaunay; HXT differs a little from one meshing to the next). */
static void mesh_roundtrip(const char *rel, const char *size)
{
    char path[2048], msh[1024], fileset[1200], sizeset[64], cmd[8192];
    snprintf(path, sizeof path, "%s", hk_test_path(rel));
    snprintf(msh, sizeof msh, "%s/roundtrip.msh", hk_test_tmpdir());
    snprintf(sizeset, sizeof sizeset, "geometry.size=%s", size);
    snprintf(fileset, sizeof fileset, "geometry.file=%s", msh);
    const char *sets[] = {"geometry.threads=1", "geometry.algorithm3d=delaunay",
                          "geometry.algorithm2d=frontal", sizeset, fileset};
    snprintf(cmd, sizeof cmd, "%s mesh %s -o %s --quiet --set %s --set %s --set %s --set %s",
             HOOKE_BINARY, path, msh, sets[0], sets[1], sets[2], sets[3]);
    CU_ASSERT_EQUAL_FATAL(run_cmd(cmd), 0);
    hk_case c0, c1;
    hk_run r0, r1;
    int e0 = hk_test_run_case(path, 4, sets, &c0, &r0);
    CU_ASSERT_EQUAL_FATAL(e0, 0);
    int e1 = hk_test_run_case(path, 5, sets, &c1, &r1);
    CU_ASSERT_EQUAL(e1, 0);
    if (!e1) {
        const hk_mesh *a = &r0.mesh, *b = &r1.mesh;
        CU_ASSERT_EQUAL_FATAL(a->nnodes, b->nnodes);
        CU_ASSERT(!memcmp(a->coords, b->coords, (size_t)(3 * a->nnodes) * sizeof(double)));
        CU_ASSERT(same_elems(&a->cells, &b->cells));
        CU_ASSERT(!memcmp(a->cell_region, b->cell_region, (size_t)a->cells.n * sizeof(int32_t)));
        CU_ASSERT_EQUAL_FATAL(a->nregions, b->nregions);
        CU_ASSERT_EQUAL_FATAL(a->nboundaries, b->nboundaries);
        for (int i = 0; i < a->nregions; i++)
            CU_ASSERT_STRING_EQUAL(a->regions[i].name, b->regions[i].name);
        for (int i = 0; i < a->nboundaries; i++) {
            int j = hk_mesh_find_boundary(b, a->boundaries[i].name);
            CU_ASSERT_FATAL(j >= 0);
            CU_ASSERT(same_elems(&a->boundaries[i].elems, &b->boundaries[j].elems));
            CU_ASSERT_EQUAL(a->boundaries[i].nnodes, b->boundaries[j].nnodes);
        }
        double d = 0, m = 0;
        for (int64_t i = 0; i < r0.sys.ndof; i++) {
            d = fmax(d, fabs(r0.u[i] - r1.u[i]));
            m = fmax(m, fabs(r0.u[i]));
        }
        CU_ASSERT(m > 0 && d <= 1e-12 * m);
        hk_run_free(&r1);
        hk_case_free(&c1);
    }
    hk_run_free(&r0);
    hk_case_free(&c0);
}

static void test_mesh_roundtrip(void)
{
    mesh_roundtrip("cases/cook/cook.yaml", "4");
    mesh_roundtrip("cases/cantilever/cantilever.yaml", "0.1");
}

/* output.matrix, output.rhs, output.coordinates, then hooke solve on the files: the run's
 * displacements to the solver tolerance; the coordinates are the mesh's. */
static void test_system_roundtrip(void)
{
    const char *tmp = hk_test_tmpdir();
    char path[2048], K[1024], f[1024], x[1024], u[1024], sK[1100], sf[1100], sx[1100], cmd[8192];
    snprintf(path, sizeof path, "%s", hk_test_path("cases/cantilever/cantilever.yaml"));
    snprintf(K, sizeof K, "%s/K.mtx", tmp);
    snprintf(f, sizeof f, "%s/f.mtx", tmp);
    snprintf(x, sizeof x, "%s/xyz.mtx", tmp);
    snprintf(u, sizeof u, "%s/u.mtx", tmp);
    snprintf(sK, sizeof sK, "output.matrix=%s", K);
    snprintf(sf, sizeof sf, "output.rhs=%s", f);
    snprintf(sx, sizeof sx, "output.coordinates=%s", x);
    const char *sets[] = {"geometry.size=0.1", "solver.tol=1e-10", sK, sf, sx};
    hk_case c;
    hk_run r;
    CU_ASSERT_EQUAL_FATAL(hk_test_run_case(path, 5, sets, &c, &r), 0);
    /* a different method and preconditioner than the run's, to the same tolerance */
    snprintf(cmd, sizeof cmd,
             "%s solve %s --rhs %s --block-size 3 -o %s backend=cpu method=cg pc=jacobi "
             "tol=1e-10 maxit=20000 > /dev/null",
             HOOKE_BINARY, K, f, u);
    CU_ASSERT_EQUAL(run_cmd(cmd), 0);
    int64_t n = 0;
    double *us = NULL;
    CU_ASSERT_EQUAL(hk_mm_read_vector(u, &n, &us), 0);
    CU_ASSERT_EQUAL(n, r.sys.ndof);
    if (us && n == r.sys.ndof) {
        double d = 0, m = 0;
        for (int64_t i = 0; i < n; i++) {
            d += (us[i] - r.u[i]) * (us[i] - r.u[i]);
            m += r.u[i] * r.u[i];
        }
        /* both stop at ||f - K u|| <= 1e-10 ||f||; K's condition number here is ~1e5 */
        CU_ASSERT(m > 0 && sqrt(d) <= 1e-4 * sqrt(m));
    }
    free(us);
    /* the coordinates: nnodes x 3, column by column */
    FILE *fx = fopen(x, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx);
    char line[256];
    long long rows = 0;
    int cols = 0;
    while (fgets(line, sizeof line, fx) && line[0] == '%')
        ;
    CU_ASSERT_EQUAL(sscanf(line, "%lld %d", &rows, &cols), 2);
    CU_ASSERT_EQUAL(rows, r.mesh.nnodes);
    CU_ASSERT_EQUAL(cols, 3);
    int64_t bad = 0;
    for (int d = 0; d < cols && rows == r.mesh.nnodes; d++)
        for (int64_t i = 0; i < rows; i++) {
            double v;
            if (fscanf(fx, "%lf", &v) != 1 || v != r.mesh.coords[3 * i + d]) bad++;
        }
    CU_ASSERT_EQUAL(bad, 0);
    fclose(fx);
    hk_run_free(&r);
    hk_case_free(&c);
}

/* An absurd geometry.size is refused before meshing, within a second, in one sentence that
 * names the estimate, what is available and the key to change. */
static void test_memory_guard(void)
{
    const char *sets[] = {"geometry.size=1e-6"};
    hk_case c;
    hk_run r;
    memset(&r, 0, sizeof r);
    CU_ASSERT_EQUAL_FATAL(hk_case_load(hk_test_path("cases/bracket/bracket.yaml"), 1, sets, &c), 0);
    hk_run_opts o = {.backend = "cpu", .quiet = 1};
    double t = hk_time();
    int err = hk_run_case(&c, &o, &r);
    t = hk_time() - t;
    CU_ASSERT_EQUAL(err, HK_ERR_MEMORY);
    CU_ASSERT(t < 1.0);
    const char *msg = hk_error_message();
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "of host memory"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "is available"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "raise geometry.size"));
    CU_ASSERT_EQUAL(r.mesh.nnodes, 0); /* refused before meshing */
    hk_run_free(&r);
    hk_case_free(&c);
    /* a generated grid too large for the host: refused before it is generated */
    const char *grid[] = {"geometry.generate.cells=[3000,3000,3000]"};
    CU_ASSERT_EQUAL_FATAL(hk_case_load(hk_test_path("cases/box/box.yaml"), 1, grid, &c), 0);
    t = hk_time();
    CU_ASSERT_EQUAL(hk_run_case(&c, &o, &r), HK_ERR_MEMORY);
    CU_ASSERT(hk_time() - t < 1.0);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "lower geometry.generate.cells"));
    hk_run_free(&r);
    hk_case_free(&c);
    /* a run that fits goes through, with its estimate */
    const char *ok[] = {"geometry.size=0.1"};
    CU_ASSERT_EQUAL_FATAL(hk_case_load(hk_test_path("cases/cantilever/cantilever.yaml"), 1, ok, &c),
                          0);
    CU_ASSERT_EQUAL(hk_run_assemble(&c, &o, &r), 0);
    CU_ASSERT(r.mem.host_estimate > 0 && r.mem.host_estimate < r.mem.host_available);
    hk_run_free(&r);
    hk_case_free(&c);
}

HK_SUITE(scale,
         {"an absurd geometry.size is refused within a second, naming the memory",
          test_memory_guard},
         {"the threaded mesher gives a valid mesh for every case in cases/",
          test_threaded_mesher_every_case},
         {"hooke mesh -> geometry.file: the same nodes, elements, groups and solution",
          test_mesh_roundtrip},
         {"output.matrix/rhs -> hooke solve: the run's displacements; output.coordinates",
          test_system_roundtrip})

#endif
