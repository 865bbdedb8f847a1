/* The near-null space from the applications: hk_mm_read_array (good and bad files), `hooke
 * solve --coords` (a wrong row count refused with its sentence, a solve with coordinates that
 * converges), the generators' node coordinates and `hooke run`'s (hk_run_nearnull) checked
 * against the geometry: the rigid-body modes built from them are in the null space of the
 * stiffness on every row away from the supports. */
#include <stdlib.h>
#include <string.h>

#include "case.h"
#include "test_util.h"

static const char *tmp_path(const char *name)
{
    static char path[4][512];
    static int slot;
    slot = (slot + 1) % 4;
    snprintf(path[slot], sizeof path[slot], "%s/%s", hk_test_tmpdir(), name);
    return path[slot];
}

static void write_text(const char *name, const char *text)
{
    FILE *f = fopen(tmp_path(name), "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

/* Coordinates (rows x dim, row after row) as a Matrix Market array file. */
static void write_coords(const char *name, int64_t rows, int dim, const double *c)
{
    FILE *f = fopen(tmp_path(name), "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "%%%%MatrixMarket matrix array real general\n%% node coordinates\n%lld %d\n",
            (long long)rows, dim);
    for (int j = 0; j < dim; j++)
        for (int64_t i = 0; i < rows; i++)
            fprintf(f, "%.17g\n", c[i * dim + j]);
    fclose(f);
}

/* ---- hk_mm_read_array -------------------------------------------------------------------- */

static void expect_error(const char *name, const char *text, const char *words)
{
    int64_t rows = 7;
    int cols = 7;
    double *x = (double *)1;
    write_text(name, text);
    CU_ASSERT_EQUAL(hk_mm_read_array(tmp_path(name), &rows, &cols, &x), HK_ERR_PARSE);
    const char *msg = hk_error_message();
    int ok = strstr(msg, name) && strstr(msg, words);
    if (!ok) fprintf(stderr, "\n  %s: message '%s' lacks '%s'\n", name, msg, words);
    CU_ASSERT(ok);
    CU_ASSERT_PTR_NULL(x);
    CU_ASSERT_EQUAL(rows, 0);
    hk_error_clear();
}

static void test_read_array(void)
{
    /* 3 rows x 2 columns stored column after column; comments and blank lines skipped */
    write_text("a.mtx", "%%MatrixMarket matrix array real general\n% c\n3 2\n1\n2.5\n\n-3\n"
                        "4e1\n5\n6\n");
    int64_t rows = 0;
    int cols = 0;
    double *x = NULL;
    HK_ASSERT_OK(hk_mm_read_array(tmp_path("a.mtx"), &rows, &cols, &x));
    CU_ASSERT_EQUAL(rows, 3);
    CU_ASSERT_EQUAL(cols, 2);
    const double want[6] = {1, 40, 2.5, 5, -3, 6}; /* row after row */
    for (int k = 0; k < 6; k++)
        CU_ASSERT_EQUAL(x[k], want[k]);
    free(x);
    /* integer field */
    write_text("i.mtx", "%%MatrixMarket matrix array integer general\n2 3\n1\n2\n3\n4\n5\n6\n");
    HK_ASSERT_OK(hk_mm_read_array(tmp_path("i.mtx"), &rows, &cols, &x));
    CU_ASSERT(rows == 2 && cols == 3 && x[1] == 3 && x[3] == 2 && x[5] == 6);
    free(x);

    expect_error("coo.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n",
                 "layout 'coordinate' where 'array' is needed");
    expect_error("nan.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\nnan\n4\n",
                 "value 3 (row 1, column 2) 'nan' is not a finite real number");
    expect_error("word.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2x\n3\n4\n",
                 "(row 2, column 1) '2x'");
    expect_error("short.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n",
                 "announces 4 values but the 6 bytes after it hold at most 3");
    expect_error("long.mtx", "%%MatrixMarket matrix array real general\n1 2\n1\n2\n3\n",
                 "more values than the 2");
    expect_error("size.mtx", "%%MatrixMarket matrix array real general\n3\n1\n2\n3\n",
                 "an array's size line is 'ROWS COLUMNS'");
    CU_ASSERT_EQUAL(hk_mm_read_array(tmp_path("none.mtx"), &rows, &cols, &x), HK_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "none.mtx"));
    hk_error_clear();
    /* the vector reader keeps its own rule */
    int64_t n = 0;
    CU_ASSERT_EQUAL(hk_mm_read_vector(tmp_path("a.mtx"), &n, &x), HK_ERR_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "a vector must have exactly one column"));
    hk_error_clear();
}

/* ---- rigid-body modes against the stiffness ---------------------------------------------- */

/* max over the block rows keep(node) of |K r|, relative to max |K| |r|, for each rigid-body
 * mode r built from coords (bs = dim; translations and rotations). */
static double rigid_residual(const hk_bcsr *K, const double *coords, int (*keep)(const double *))
{
    const int dim = K->bs, nmodes = dim == 3 ? 6 : 3;
    const int64_t n = K->nbrows * dim;
    double *r = malloc(n * sizeof *r), *y = malloc(n * sizeof *y), worst = 0, kmax = 0;
    for (int64_t k = 0; k < K->rowptr[K->nbrows] * dim * dim; k++)
        kmax = fmax(kmax, fabs(K->val[k]));
    for (int m = 0; m < nmodes; m++) {
        double rmax = 0;
        for (int64_t i = 0; i < K->nbrows; i++) {
            const double *x = coords + i * dim;
            double *u = r + i * dim;
            for (int d = 0; d < dim; d++)
                u[d] = m == d ? 1.0 : 0.0;
            if (dim == 2 && m == 2) u[0] = -x[1], u[1] = x[0];
            if (dim == 3 && m >= 3) {
                const int a = (m - 3 + 1) % 3, b = (m - 3 + 2) % 3; /* rotation about axis m-3 */
                u[a] = -x[b];
                u[b] = x[a];
            }
            for (int d = 0; d < dim; d++)
                rmax = fmax(rmax, fabs(u[d]));
        }
        hk_bcsr_spmv(K, r, y);
        for (int64_t i = 0; i < K->nbrows; i++)
            if (keep(coords + i * dim))
                for (int d = 0; d < dim; d++)
                    worst = fmax(worst, fabs(y[i * dim + d]) / (kmax * rmax));
    }
    free(r);
    free(y);
    return worst;
}

/* Rows of the generated unit grids two cells or more from the clamped face x = 0 (cells of
 * 1/3 in x below). */
static int away_from_x0(const double *x)
{
    return x[0] > 0.5;
}

static int next_to_x0(const double *x)
{
    return x[0] > 0.1 && x[0] < 0.5;
}

static void test_generator_coords(void)
{
    hk_bcsr K;
    double *c = NULL;
    /* 3D, different cell counts per axis so a swapped axis or spacing shows */
    HK_ASSERT_OK(hk_gen_elasticity3d(3, 4, 2, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(3, 4, 2, &c));
    CU_ASSERT_EQUAL(K.nbrows, 4 * 5 * 3);
    CU_ASSERT(c[0] == 0 && c[1] == 0 && c[2] == 0);
    const double *last = c + (K.nbrows - 1) * 3, *n1 = c + 3 * (1 + 4 * 1); /* node (1, 1, 0) */
    CU_ASSERT(last[0] == 1 && last[1] == 1 && last[2] == 1);
    CU_ASSERT_DOUBLE_EQUAL(n1[0], 1.0 / 3, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(n1[1], 0.25, 1e-15);
    double res = rigid_residual(&K, c, away_from_x0);
    CU_ASSERT(res < 1e-12);
    /* next to the clamp the eliminated columns are missing: the check can fail */
    CU_ASSERT(rigid_residual(&K, c, next_to_x0) > 1e-3);
    hk_bcsr_free(&K);
    free(c);
    /* the tet grid numbers its nodes the same way */
    HK_ASSERT_OK(hk_gen_elasticity3d_tet(3, 2, 2, &K));
    HK_ASSERT_OK(hk_gen_elasticity3d_coords(3, 2, 2, &c));
    CU_ASSERT(rigid_residual(&K, c, away_from_x0) < 1e-12);
    hk_bcsr_free(&K);
    free(c);
    /* 2D */
    HK_ASSERT_OK(hk_gen_elasticity2d(3, 5, &K));
    HK_ASSERT_OK(hk_gen_elasticity2d_coords(3, 5, &c));
    CU_ASSERT_EQUAL(K.nbrows, 4 * 6);
    CU_ASSERT(rigid_residual(&K, c, away_from_x0) < 1e-12);
    hk_bcsr_free(&K);
    free(c);
    CU_ASSERT_EQUAL(hk_gen_elasticity3d_coords(0, 1, 1, &c), HK_ERR_ARG);
    CU_ASSERT_PTR_NULL(c);
    hk_error_clear();
}

/* hooke run's near-null space: the mesh's node coordinates in K's block-row order. */
static int away_from_xmin(const double *x)
{
    return x[0] > 1.5; /* the case below: cells of 1 in x, xmin clamped */
}

static void test_run_coords(void)
{
    write_text("nn.yaml", "geometry:\n  generate: {shape: box, size: [4, 1, 1], cells: [4, 2, 2]}\n"
                          "analysis: 3d\nmaterials: [{name: m, E: 1000, nu: 0.3}]\n"
                          "supports: [{boundary: xmin, fix: all}]\n"
                          "loads:\n  - traction: {boundary: xmax, value: [0, 0, -1]}\n");
    hk_case c;
    hk_run r;
    HK_ASSERT_OK(hk_case_load(tmp_path("nn.yaml"), 0, NULL, &c));
    hk_run_opts o = {.quiet = 1};
    HK_ASSERT_OK(hk_run_assemble(&c, &o, &r));
    hk_nearnull nn;
    double *coords = NULL;
    HK_ASSERT_OK(hk_run_nearnull(&r, &nn, &coords));
    CU_ASSERT_EQUAL(nn.dim, 3);
    CU_ASSERT_PTR_EQUAL(nn.coords, coords);
    CU_ASSERT_PTR_NULL(nn.vectors);
    CU_ASSERT_EQUAL(r.sys.K.nbrows, r.mesh.nnodes);
    for (int64_t i = 0; i < r.mesh.nnodes; i++)
        for (int d = 0; d < 3; d++)
            CU_ASSERT_EQUAL(coords[i * 3 + d], r.mesh.coords[3 * i + d]);
    CU_ASSERT(rigid_residual(&r.sys.K, coords, away_from_xmin) < 1e-10);
    free(coords);
    hk_run_free(&r);
    hk_case_free(&c);
}

/* ---- hooke solve --coords ------------------------------------------------------------------ */

static void test_solve_coords(void)
{
    char out[8192];
    hk_bcsr K;
    double *c = NULL;
    HK_ASSERT_OK(hk_gen_elasticity2d(4, 4, &K));
    HK_ASSERT_OK(hk_gen_elasticity2d_coords(4, 4, &c));
    HK_ASSERT_OK(hk_mm_write_matrix(tmp_path("el2.mtx"), &K));
    write_coords("xy.mtx", K.nbrows, 2, c);
    write_coords("xy_short.mtx", K.nbrows - 1, 2, c);
    write_coords("xyz.mtx", K.nbrows * 2 / 3, 3, c);

    /* with coordinates: runs and converges, says where they came from */
    int rc = hk_test_solve_cmd("el2.mtx --block-size 2 --coords xy.mtx method=cg pc=amg --backend cpu",
                       out, sizeof out);
    if (rc) fprintf(stderr, "\n%s\n", out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "coordinates: 25 nodes in 2D from xy.mtx"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "converged"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "max error vs ones"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "3 rigid-body modes"));

    /* a wrong row count is refused with the sentence */
    rc = hk_test_solve_cmd("el2.mtx --block-size 2 --coords xy_short.mtx pc=jacobi --backend cpu", out,
                   sizeof out);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--coords xy_short.mtx has 24 rows of 2 coordinates but "
                                       "the matrix has 25 nodes (block rows) of 2 dofs"));
    /* 3 columns for a 2D matrix */
    rc = hk_test_solve_cmd("el2.mtx --block-size 2 --coords xyz.mtx pc=jacobi --backend cpu", out,
                   sizeof out);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "of 3 coordinates"));
    /* scalar rows: the fix is --block-size */
    rc = hk_test_solve_cmd("el2.mtx --coords xy.mtx pc=jacobi --backend cpu", out, sizeof out);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "pass --block-size 2"));
    /* not an array file: the reader's sentence with the file */
    rc = hk_test_solve_cmd("el2.mtx --block-size 2 --coords el2.mtx pc=jacobi --backend cpu", out,
                   sizeof out);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "el2.mtx:1: layout 'coordinate' where 'array'"));
    /* a matrix file without --coords passes none; a generator passes its own */
    rc = hk_test_solve_cmd("el2.mtx --block-size 2 pc=amg --backend cpu", out, sizeof out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NULL(strstr(out, "coordinates:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "translations only"));
    rc = hk_test_solve_cmd("--generate elasticity3d:3 pc=jacobi --backend cpu", out, sizeof out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "coordinates: 64 nodes in 3D from the generated grid"));
    rc = hk_test_solve_cmd("--help", out, sizeof out);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--coords xyz.mtx"));
    hk_bcsr_free(&K);
    free(c);
}

HK_SUITE(nearnull_cmd, {"hk_mm_read_array: good files, bad files named", test_read_array},
         {"generator coordinates: rigid-body modes in the stiffness's null space",
          test_generator_coords},
         {"hooke run: the mesh's node coordinates in K's order", test_run_coords},
         {"hooke solve --coords: checked, passed, converges", test_solve_coords})
