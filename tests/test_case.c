/* Case-file reader: a full case parses to the right values, --set overrides reach every kind
 * of key, and every kind of bad input gives one message with file:line:col and a hint. */
#include <stdlib.h>
#include <string.h>

#include "case.h"
#include "test_util.h"

/* Write text to tmpdir/name and return the path (static buffer per slot). */
static const char *full_case = "title: test box\n"
                               "geometry:\n"
                               "  generate: {shape: box, size: [10, 1, 2], cells: [20, 2, 4]}\n"
                               "  order: 2\n"
                               "analysis: 3d\n"
                               "materials:\n"
                               "  - name: steel\n"
                               "    E: 210e9\n"
                               "    nu: 0.3\n"
                               "    density: 7850\n"
                               "supports:\n"
                               "  - {boundary: xmin, fix: all}\n"
                               "  - boundary: ymin\n"
                               "    fix: [y]\n"
                               "  - boundary: xmax\n"
                               "    fix: {z: -1e-3}\n"
                               "loads:\n"
                               "  - traction: {boundary: xmax, value: [0, 0, -1e6]}\n"
                               "  - pressure: {boundary: zmax, value: 2.5e5}\n"
                               "  - force: {boundary: ymax, value: [1, 2, 3]}\n"
                               "  - nodal_force: {boundary: zmin, value: [0, 0, 4]}\n"
                               "  - gravity: [0, 0, -9.81]\n"
                               "  - body_force: [1, 0, 0]\n"
                               "solver:\n"
                               "  method: pipecg\n"
                               "  pc: poly\n"
                               "  pc.poly.degree: 6\n"
                               "  format: {slice: 64}\n"
                               "  tol: 1e-9\n"
                               "  history: true\n"
                               "output:\n"
                               "  file: out/result.vtu\n"
                               "  fields: [displacement, von_mises]\n"
                               "  compress: false\n";

static void test_full_case(void)
{
    const char *path = hk_test_write_case("full.yaml", full_case);
    hk_case c;
    HK_ASSERT_OK(hk_case_load(path, 0, NULL, &c));
    CU_ASSERT_STRING_EQUAL(c.title, "test box");
    CU_ASSERT_STRING_EQUAL(c.name, "full");
    CU_ASSERT_EQUAL(c.generate, 1);
    CU_ASSERT_EQUAL(c.gen_dim, 3);
    CU_ASSERT_DOUBLE_EQUAL(c.gen_size[0], 10, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.gen_size[2], 2, 0);
    CU_ASSERT_EQUAL(c.gen_cells[1], 2);
    CU_ASSERT_EQUAL(c.gen_element, HK_EL_HEX27); /* order 2, hexes, complete */
    CU_ASSERT_EQUAL(c.analysis, HK_SOLID);
    CU_ASSERT_EQUAL(c.dim, 3);
    CU_ASSERT_EQUAL_FATAL(c.nmaterials, 1);
    CU_ASSERT_STRING_EQUAL(c.materials[0].m.name, "steel");
    CU_ASSERT_DOUBLE_EQUAL(c.materials[0].m.E, 210e9, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.materials[0].m.nu, 0.3, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.materials[0].m.rho, 7850, 0);
    CU_ASSERT_EQUAL(c.materials[0].nregions, 0);
    CU_ASSERT_EQUAL_FATAL(c.nsupports, 3);
    CU_ASSERT_EQUAL(c.supports[0].mask, 7u);
    CU_ASSERT_EQUAL(c.supports[1].mask, 2u);
    CU_ASSERT_STRING_EQUAL(c.supports[1].boundary, "ymin");
    CU_ASSERT_EQUAL(c.supports[1].loc.line, 13); /* "  - boundary: ymin" */
    CU_ASSERT_EQUAL(c.supports[1].loc.col, 15);
    CU_ASSERT_EQUAL(c.supports[2].mask, 4u);
    CU_ASSERT_DOUBLE_EQUAL(c.supports[2].value[2], -1e-3, 0);
    CU_ASSERT_EQUAL_FATAL(c.nloads, 4);
    CU_ASSERT_EQUAL(c.loads[0].kind, HK_LOAD_TRACTION);
    CU_ASSERT_DOUBLE_EQUAL(c.loads[0].value[2], -1e6, 0);
    CU_ASSERT_EQUAL(c.loads[1].kind, HK_LOAD_PRESSURE);
    CU_ASSERT_DOUBLE_EQUAL(c.loads[1].value[0], 2.5e5, 0);
    CU_ASSERT_EQUAL(c.loads[2].kind, HK_LOAD_FORCE);
    CU_ASSERT_DOUBLE_EQUAL(c.loads[2].value[1], 2, 0);
    CU_ASSERT_EQUAL(c.loads[3].kind, HK_LOAD_NODAL);
    CU_ASSERT_DOUBLE_EQUAL(c.gravity[2], -9.81, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.body_force[0], 1, 0);
    const char *s = NULL;
    int deg = 0, slice = 0, hist = 0;
    HK_ASSERT_OK(hk_options_get_string(c.solver, "method", &s));
    CU_ASSERT_STRING_EQUAL(s, "pipecg");
    HK_ASSERT_OK(hk_options_get_int(c.solver, "pc.poly.degree", &deg));
    CU_ASSERT_EQUAL(deg, 6);
    HK_ASSERT_OK(hk_options_get_int(c.solver, "format.slice", &slice));
    CU_ASSERT_EQUAL(slice, 64);
    HK_ASSERT_OK(hk_options_get_int(c.solver, "history", &hist));
    CU_ASSERT_EQUAL(hist, 1);
    char expect[2048];
    snprintf(expect, sizeof expect, "%s/out/result.vtu", hk_test_tmpdir());
    CU_ASSERT_STRING_EQUAL(c.output, expect);
    CU_ASSERT_EQUAL(c.fields, (unsigned)(HK_FIELD_DISPLACEMENT | HK_FIELD_VON_MISES));
    CU_ASSERT_EQUAL(c.compress, 0);
    hk_case_free(&c);
}

/* A .geo next to the case is found relative to the case file; defaults fill the rest. */
static void test_file_geometry_and_defaults(void)
{
    hk_test_write_case("plate.geo", "Point(1) = {0, 0, 0};\n");
    const char *path =
        hk_test_write_case("plate.yaml", "geometry: {file: plate.geo, size: 0.5, quad: true}\n"
                                 "analysis: {type: plane_strain, thickness: 2}\n"
                                 "materials: [{E: 1, nu: 0.25, regions: [plate, rim]}]\n"
                                 "supports: [{boundary: left, fix: x}]\n");
    hk_case c;
    HK_ASSERT_OK(hk_case_load(path, 0, NULL, &c));
    char expect[2048];
    snprintf(expect, sizeof expect, "%s/plate.geo", hk_test_tmpdir());
    CU_ASSERT_STRING_EQUAL(c.geo_file, expect);
    snprintf(expect, sizeof expect, "%s/plate.vtu", hk_test_tmpdir());
    CU_ASSERT_STRING_EQUAL(c.output, expect);
    CU_ASSERT_EQUAL(c.generate, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.mesh.size, 0.5, 0);
    CU_ASSERT_EQUAL(c.mesh.order, 1);
    CU_ASSERT_EQUAL(c.mesh.quad, 1);
    CU_ASSERT_EQUAL(c.mesh.renumber, 1);
    CU_ASSERT_EQUAL(c.analysis, HK_PLANE_STRAIN);
    CU_ASSERT_DOUBLE_EQUAL(c.thickness, 2, 0);
    CU_ASSERT_EQUAL(c.materials[0].nregions, 2);
    CU_ASSERT_STRING_EQUAL(c.materials[0].regions[1], "rim");
    CU_ASSERT_EQUAL(c.supports[0].mask, 1u);
    CU_ASSERT_EQUAL(c.nloads, 0);
    CU_ASSERT_EQUAL(c.fields, (unsigned)HK_FIELD_ALL);
    CU_ASSERT_EQUAL(c.compress, 1);
    hk_case_free(&c);
}

static void test_set_overrides(void)
{
    const char *path = hk_test_write_case("full.yaml", full_case);
    const char *sets[] = {"solver.method=cg",        /* replace */
                          "solver.pc.poly.degree=9", /* dotted key that exists */
                          "solver.pc.poly.kind=ls",  /* dotted key that is new */
                          "geometry.generate.cells=[4, 1, 1]",
                          "materials.0.E=70e9", /* list item by index */
                          "supports.1.fix=[x, y]",
                          "output.compress=true",
                          "geometry.generate.element=tet10",
                          "title=overridden"};
    hk_case c;
    HK_ASSERT_OK(hk_case_load(path, 9, sets, &c));
    const char *s = NULL;
    int deg = 0;
    HK_ASSERT_OK(hk_options_get_string(c.solver, "method", &s));
    CU_ASSERT_STRING_EQUAL(s, "cg");
    HK_ASSERT_OK(hk_options_get_int(c.solver, "pc.poly.degree", &deg));
    CU_ASSERT_EQUAL(deg, 9);
    HK_ASSERT_OK(hk_options_get_string(c.solver, "pc.poly.kind", &s));
    CU_ASSERT_STRING_EQUAL(s, "ls");
    CU_ASSERT_EQUAL(c.gen_cells[0], 4);
    CU_ASSERT_EQUAL(c.gen_cells[2], 1);
    CU_ASSERT_DOUBLE_EQUAL(c.materials[0].m.E, 70e9, 0);
    CU_ASSERT_EQUAL(c.supports[1].mask, 3u);
    CU_ASSERT_EQUAL(c.compress, 1);
    CU_ASSERT_EQUAL(c.gen_element, HK_EL_TET10);
    CU_ASSERT_STRING_EQUAL(c.title, "overridden");
    hk_case_free(&c);

    /* a bad override names itself, not a line of the file */
    const char *bad1[] = {"materials.0.E=-5"};
    CU_ASSERT_EQUAL(hk_case_load(path, 1, bad1, &c), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "--set materials.0.E=-5: E = -5"));
    const char *bad2[] = {"geometry.sise=2"};
    CU_ASSERT_EQUAL(hk_case_load(path, 1, bad2, &c), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "--set geometry.sise=2: unknown key 'sise'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "did you mean 'size'"));
    const char *bad3[] = {"materials.3.E=1"};
    CU_ASSERT_EQUAL(hk_case_load(path, 1, bad3, &c), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "list of 1 items"));
    const char *bad4[] = {"solver"};
    CU_ASSERT_EQUAL(hk_case_load(path, 1, bad4, &c), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "key.path=value"));
}

/* Regression (fuzzing): --set below a key with no value or a scalar said "could not add" and
 * leaked the new nodes; it must say which key is not a section. */
static void test_set_below_value(void)
{
    /* regression (fuzzing): a folder given as the case read as "empty or not YAML" */
    hk_case c0;
    CU_ASSERT_EQUAL(hk_case_load(hk_test_tmpdir(), 0, NULL, &c0), HK_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "is a folder, not a case file"));
    const char *path = hk_test_write_case("empty_geo.yaml", "geometry:\nanalysis: 3d\ntitle: t\n");
    const char *sets[] = {"geometry.generate.element=tet10"};
    hk_case c;
    CU_ASSERT_EQUAL(hk_case_load(path, 1, sets, &c), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "--set geometry.generate.element=tet10: "
                                                      "'geometry' is a single value or empty"));
    const char *sets2[] = {"title.x.y=1"};
    CU_ASSERT_EQUAL(hk_case_load(path, 1, sets2, &c), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "'title' is a single value or empty, not "
                                                      "a section; there is no 'x.y' below it"));
    /* regression (fuzzing): a name where an index belongs blamed the name, not the list */
    const char *lpath = hk_test_write_case("list_out.yaml", "output: [a, b]\n");
    const char *sets3[] = {"output.fields=[stress]"};
    CU_ASSERT_EQUAL(hk_case_load(lpath, 1, sets3, &c), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "'output' is a list of 2 items; address an "
                                                      "item by its index 0..1 (not 'fields')"));
}

/* One bad input per row: the file, and what the message must contain. */
typedef struct bad_case {
    const char *yaml;
    const char *expect[3];
} bad_case;

#define GOOD_HEAD                                                                                  \
    "geometry: {generate: {shape: rectangle, size: [2, 1], cells: [4, 2]}}\n"                      \
    "analysis: plane_stress\n"
#define GOOD_MAT "materials: [{name: alu, E: 70e9, nu: 0.33}]\n"
#define GOOD_SUP "supports: [{boundary: left, fix: all}]\n"

static const bad_case bad_cases[] = {
    {"geometry: {generate: {shape: box\nanalysis: 3d\n", {"bad.yaml:", "YAML syntax error", NULL}},
    {"- just\n- a list\n", {"bad.yaml:1:3:", "mapping of sections", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "geometri: {}\n",
     {"bad.yaml:5:1:", "unknown key 'geometri'", "did you mean 'geometry'"}},
    {GOOD_HEAD "materials:\n  - name: a\n    E: abc\n    nu: 0.3\n" GOOD_SUP,
     {"bad.yaml:5:8:", "E must be a finite number, got 'abc'", NULL}},
    {GOOD_HEAD "materials:\n  - name: a\n    E: 0\n    nu: 0.3\n" GOOD_SUP,
     {"bad.yaml:5:8:", "E = 0", "must be positive"}},
    {GOOD_HEAD "materials:\n  - {name: a, E: 1, nu: 0.5}\n" GOOD_SUP,
     {"bad.yaml:4:25:", "nu = 0.5", "incompressible"}},
    {GOOD_HEAD "materials:\n  - {name: a, E: 1}\n" GOOD_SUP, {"bad.yaml:4:6:", "needs nu", NULL}},
    {"geometry: {generate: {shape: rectangle, size: [2, 1], cells: [4, 2]}}\n"
     "analysis: {type: plane_stress, thickness: -1}\n" GOOD_MAT GOOD_SUP,
     {"bad.yaml:2:43:", "thickness must be positive", NULL}},
    {"geometry: {generate: {shape: box, size: [2, 1, 1], cells: [4, 2, 2]}}\n"
     "analysis: {type: 3d, thickness: 1}\n" GOOD_MAT GOOD_SUP,
     {"bad.yaml:2:33:", "2D analyses only", NULL}},
    {"geometry: {generate: {shape: rectangle, size: [2, 1], cells: [4, 2]}, order: 3}\n"
     "analysis: plane_stress\n" GOOD_MAT GOOD_SUP,
     {"bad.yaml:1:78:", "order must be 1 (linear) or 2 (quadratic), got 3", NULL}},
    {"geometry: {file: missing.geo}\nanalysis: 3d\n" GOOD_MAT GOOD_SUP,
     {"bad.yaml:1:18:", "cannot open geometry file", "relative to the case file"}},
    {"geometry: {file: part.txt}\nanalysis: 3d\n" GOOD_MAT GOOD_SUP,
     {"bad.yaml:1:18:", "not a .geo, .msh", NULL}},
    {"geometry: {generate: {shape: box, size: [2, 1, 1], cells: [4, 2, 2]}}\n"
     "analysis: plane_stress\n" GOOD_MAT GOOD_SUP,
     {"bad.yaml:1:30:", "a box is 3D but the analysis is 2D", NULL}},
    {"geometry: {generate: {shape: rectangle, size: [2, -1], cells: [4, 2]}}\n"
     "analysis: plane_stress\n" GOOD_MAT GOOD_SUP,
     {"bad.yaml:1:51:", "size[1] = -1 must be positive", NULL}},
    {"analysis: plane_stress\n" GOOD_MAT GOOD_SUP,
     {"bad.yaml:1:1:", "no 'geometry' section", NULL}},
    {GOOD_HEAD GOOD_MAT "supports: [{boundary: left, fix: [x, z]}]\n",
     {"bad.yaml:4:38:", "component z does not exist in a 2D analysis", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "loads:\n  - traction: {boundary: right, value: [1, 2, 3, 4]}\n",
     {"bad.yaml:6:41:", "has 4 components", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "loads:\n  - traction: {boundary: right, value: [1, 2, 3]}\n",
     {"bad.yaml:6:41:", "z component in a 2D analysis", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "loads:\n  - torque: {boundary: right, value: 1}\n",
     {"bad.yaml:6:5:", "unknown key 'torque' in loads[0]", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "loads:\n  - pressure: {boundary: right}\n",
     {"bad.yaml:6:16:", "needs boundary: NAME and value", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "loads:\n  - gravity: [0, -9.81]\n",
     {"bad.yaml:3:14:", "no density", NULL}},
    {GOOD_HEAD "materials: [{name: a, E: 1, nu: 0.3}, {name: b, E: 2, nu: 0.3}]\n" GOOD_SUP,
     {"bad.yaml:3:40:", "only one material may leave out 'regions'", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "output: {fields: [displacement, vonmises]}\n",
     {"bad.yaml:5:33:", "unknown output field 'vonmises'", "did you mean 'von_mises'"}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "output: {file: result.vtk}\n",
     {"bad.yaml:5:16:", "must end in .vtu", NULL}},
    /* regression (fuzzing): 1e-320 was "must be a finite number" */
    {GOOD_HEAD "materials: [{name: a, E: 1e-320, nu: 0.3}]\n" GOOD_SUP,
     {"bad.yaml:3:26:", "E = 1e-320 is out of the range of double precision", NULL}},
    {GOOD_HEAD "materials: [{name: a, E: 1e999, nu: 0.3}]\n" GOOD_SUP,
     {"bad.yaml:3:26:", "E = 1e999 is out of the range", NULL}},
    /* regression (fuzzing): an empty list or mapping has no token; the message had no line */
    {GOOD_HEAD GOOD_MAT GOOD_SUP "title: []\n", {"bad.yaml:5:1:", "title must be one line", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "loads: [{force: {boundary: {}, value: [1, 0]}}]\n",
     {"bad.yaml:5:18:", "boundary must be a name", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "solver: [cg]\n",
     {"bad.yaml:5:1:", "solver must be a mapping", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "output: {compress: maybe}\n",
     {"bad.yaml:5:20:", "output.compress must be true or false", NULL}},
    {GOOD_HEAD GOOD_MAT "supports: [{boundary: left}]\n", {"bad.yaml:4:13:", "needs fix", NULL}},
    {GOOD_HEAD "materials:\n  - name: a\n    E:\n    nu: 0.3\n" GOOD_SUP,
     {"bad.yaml:5:5:", "'E' in materials[0] has no value", NULL}},
    {"", {"bad.yaml: the file is empty or not YAML", NULL}},
    {"a: 1\na: 2\n", {"bad.yaml:2:1:", "duplicate key", NULL}},
    /* load cases */
    {GOOD_HEAD GOOD_MAT GOOD_SUP "loads: []\nload_cases: [{name: a, loads: []}]\n",
     {"bad.yaml:6:1:", "either loads (line 5) or load_cases, not both", "move the top-level"}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "load_cases:\n  - {name: up, loads: []}\n  - {name: up, loads: []}\n",
     {"bad.yaml:7:12:", "load case name 'up' is already used by load_cases[0]", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "load_cases: []\n",
     {"bad.yaml:5:1:", "load_cases must be a non-empty list", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "load_cases:\n  - loads: []\n",
     {"bad.yaml:6:5:", "load_cases[0] needs name: WORD", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "load_cases:\n  - {name: a, lods: []}\n",
     {"bad.yaml:6:15:", "unknown key 'lods' in load_cases[0]", "did you mean 'loads'"}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "load_cases: [{name: a/b, loads: []}]\n",
     {"bad.yaml:5:21:", "load case name 'a/b' has '/'", "file name"}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "load_cases: [{name: a}]\n",
     {"bad.yaml:5:15:", "load_cases[0] ('a') needs loads", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "load_cases:\n  - name: a\n    loads: [{torque: 1}]\n",
     {"bad.yaml:7:14:", "unknown key 'torque' in load_cases[0].loads[0]", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "load_cases:\n  - name: a\n    loads: {pressure: 1}\n",
     {"bad.yaml:7:5:", "load_cases[0].loads must be a list", NULL}},
    {GOOD_HEAD GOOD_MAT GOOD_SUP "load_cases: [{name: g, loads: [{gravity: [0, -9.81]}]}]\n",
     {"bad.yaml:3:", "gravity is set in load case 'g' but material 'alu' has no density", NULL}},
};

static void test_bad_inputs(void)
{
    int n = (int)(sizeof bad_cases / sizeof bad_cases[0]);
    for (int i = 0; i < n; i++) {
        const char *path = hk_test_write_case("bad.yaml", bad_cases[i].yaml);
        hk_case c;
        int err = hk_case_load(path, 0, NULL, &c);
        CU_ASSERT_EQUAL(err, HK_ERR_CASE);
        if (err != HK_ERR_CASE) {
            fprintf(stderr, "\n  bad case %d was accepted (err %d)\n", i, err);
            if (!err) hk_case_free(&c);
            continue;
        }
        for (int k = 0; k < 3 && bad_cases[i].expect[k]; k++) {
            int ok = strstr(hk_error_message(), bad_cases[i].expect[k]) != NULL;
            CU_ASSERT(ok);
            if (!ok)
                fprintf(stderr, "\n  bad case %d: expected '%s' in: %s\n", i,
                        bad_cases[i].expect[k], hk_error_message());
        }
    }
    /* a missing case file is an I/O error naming it */
    hk_case c;
    CU_ASSERT_EQUAL(hk_case_load("/nonexistent/x.yaml", 0, NULL, &c), HK_ERR_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "/nonexistent/x.yaml"));
}

/* load_cases: each case its own loads (gravity included), names and lines kept, --set reaches
 * into them, binding checks every case's boundaries and rebinds case by case. */
static void test_load_cases(void)
{
    const char *path = hk_test_write_case("lc.yaml", GOOD_HEAD
                                  "materials: [{name: alu, E: 70e9, nu: 0.33, density: 2700}]\n"
                                  GOOD_SUP
                                  "load_cases:\n"                                          /* 5 */
                                  "  - name: pull\n"                                       /* 6 */
                                  "    loads:\n"                                           /* 7 */
                                  "      - traction: {boundary: right, value: [1e6, 0]}\n" /* 8 */
                                  "      - force: {boundary: top, value: [0, -10]}\n"      /* 9 */
                                  "  - name: weight-2\n"                                   /* 10 */
                                  "    loads:\n"                                           /* 11 */
                                  "      - gravity: [0, -9.81]\n"                          /* 12 */
                                  "      - pressure: {boundary: hole, value: 5}\n");       /* 13 */
    hk_case c;
    HK_ASSERT_OK(hk_case_load(path, 0, NULL, &c));
    CU_ASSERT_EQUAL(c.nloads, 0);
    CU_ASSERT_EQUAL_FATAL(c.nloadcases, 2);
    CU_ASSERT_STRING_EQUAL(c.loadcases[0].name, "pull");
    CU_ASSERT_EQUAL(c.loadcases[0].loc.line, 6);
    CU_ASSERT_EQUAL_FATAL(c.loadcases[0].nloads, 2);
    CU_ASSERT_EQUAL(c.loadcases[0].loads[0].kind, HK_LOAD_TRACTION);
    CU_ASSERT_DOUBLE_EQUAL(c.loadcases[0].loads[0].value[0], 1e6, 0);
    CU_ASSERT_EQUAL(c.loadcases[0].loads[1].kind, HK_LOAD_FORCE);
    CU_ASSERT_STRING_EQUAL(c.loadcases[0].loads[1].boundary, "top");
    CU_ASSERT_DOUBLE_EQUAL(c.loadcases[0].gravity[1], 0, 0);
    CU_ASSERT_STRING_EQUAL(c.loadcases[1].name, "weight-2");
    CU_ASSERT_EQUAL_FATAL(c.loadcases[1].nloads, 1);
    CU_ASSERT_EQUAL(c.loadcases[1].loads[0].kind, HK_LOAD_PRESSURE);
    CU_ASSERT_EQUAL(c.loadcases[1].loads[0].loc.line, 13);
    CU_ASSERT_DOUBLE_EQUAL(c.loadcases[1].gravity[1], -9.81, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.gravity[1], 0, 0); /* not the top level's */

    /* binding: case 0 first; case 1's boundary 'hole' is missing -> its line */
    hk_group regions[1] = {{.name = "domain", .dim = 2}};
    hk_group bnds[3] = {
        {.name = "left", .dim = 1}, {.name = "right", .dim = 1}, {.name = "top", .dim = 1}};
    hk_mesh m = {.dim = 2, .nregions = 1, .regions = regions, .nboundaries = 3, .boundaries = bnds};
    hk_case_model model;
    CU_ASSERT_EQUAL(hk_case_bind(&c, &m, &model), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(),
                                  "lc.yaml:13:30: the mesh has no boundary named 'hole'"));
    hk_case_free(&c);

    const char *sets[] = {"load_cases.1.loads.1.pressure.boundary=top",
                          "load_cases.0.loads.0.traction.value=[2e6, 0]",
                          "load_cases.1.name=self"};
    HK_ASSERT_OK(hk_case_load(path, 3, sets, &c));
    CU_ASSERT_DOUBLE_EQUAL(c.loadcases[0].loads[0].value[0], 2e6, 0);
    CU_ASSERT_STRING_EQUAL(c.loadcases[1].name, "self");
    HK_ASSERT_OK(hk_case_bind(&c, &m, &model));
    CU_ASSERT_EQUAL(model.problem.nloads, 2); /* case 0 */
    CU_ASSERT_EQUAL(model.problem.loads[0].boundary, 1);
    CU_ASSERT_DOUBLE_EQUAL(model.problem.gravity[1], 0, 0);
    HK_ASSERT_OK(hk_case_bind_loadcase(&c, &m, 1, &model));
    CU_ASSERT_EQUAL(model.problem.nloads, 1);
    CU_ASSERT_EQUAL(model.problem.loads[0].kind, HK_LOAD_PRESSURE);
    CU_ASSERT_EQUAL(model.problem.loads[0].boundary, 2);
    CU_ASSERT_DOUBLE_EQUAL(model.problem.gravity[1], -9.81, 0);
    CU_ASSERT_EQUAL(model.problem.nsupports, 1); /* shared */
    CU_ASSERT_EQUAL(hk_case_bind_loadcase(&c, &m, 2, &model), HK_ERR_ARG);
    hk_case_model_free(&model);
    hk_case_free(&c);

    /* an override that makes a duplicate name, or addresses a case that is not there */
    const char *dup[] = {"load_cases.1.name=pull"};
    CU_ASSERT_EQUAL(hk_case_load(path, 1, dup, &c), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "--set load_cases.1.name=pull: load case "
                                                      "name 'pull' is already used"));
    const char *past[] = {"load_cases.2.name=x"};
    CU_ASSERT_EQUAL(hk_case_load(path, 1, past, &c), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "a list of 2 items"));
}

/* Binding to a mesh (built by hand: plain data) reports names the mesh lacks, with the names
 * it has and the case-file line. */
static void test_bind_errors(void)
{
    hk_group regions[1] = {{.name = "plate", .dim = 2}};
    hk_group bnds[3] = {
        {.name = "left", .dim = 1}, {.name = "right", .dim = 1}, {.name = "hole", .dim = 1}};
    hk_mesh m = {.dim = 2, .nregions = 1, .regions = regions, .nboundaries = 3, .boundaries = bnds};
    hk_test_write_case("g.geo", "\n");
    const char *p1 = hk_test_write_case("bind.yaml", "geometry: {file: g.geo}\nanalysis: plane_stress\n"
                                             "materials: [{E: 1, nu: 0.3}]\n"
                                             "supports:\n  - {boundary: left, fix: all}\n"
                                             "loads:\n  - pressure: {boundary: bore, value: 1}\n");
    hk_case c;
    hk_case_model model;
    HK_ASSERT_OK(hk_case_load(p1, 0, NULL, &c));
    CU_ASSERT_EQUAL(hk_case_bind(&c, &m, &model), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(),
                                  "bind.yaml:7:26: the mesh has no boundary named 'bore'; "
                                  "it has: left, right, hole"));
    hk_case_free(&c);

    const char *sets[] = {"loads.0.pressure.boundary=hole"};
    HK_ASSERT_OK(hk_case_load(p1, 1, sets, &c));
    HK_ASSERT_OK(hk_case_bind(&c, &m, &model));
    CU_ASSERT_EQUAL(model.problem.nloads, 1);
    CU_ASSERT_EQUAL(model.loads[0].boundary, 2);
    CU_ASSERT_EQUAL(model.supports[0].boundary, 0);
    CU_ASSERT_DOUBLE_EQUAL(model.materials[0].E, 1, 0);
    CU_ASSERT_EQUAL(model.problem.analysis, HK_PLANE_STRESS);
    hk_case_model_free(&model);
    hk_case_free(&c);

    const char *p2 = hk_test_write_case("bind2.yaml", "geometry: {file: g.geo}\nanalysis: plane_stress\n"
                                              "materials:\n  - {E: 1, nu: 0.3, regions: [web]}\n"
                                              "supports: [{boundary: left, fix: all}]\n");
    HK_ASSERT_OK(hk_case_load(p2, 0, NULL, &c));
    CU_ASSERT_EQUAL(hk_case_bind(&c, &m, &model), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(),
                                  "bind2.yaml:4:31: the mesh has no region named 'web'; "
                                  "it has: plate"));
    hk_case_free(&c);

    const char *p3 = hk_test_write_case("bind3.yaml", "geometry: {file: g.geo}\nanalysis: 3d\n"
                                              "materials: [{E: 1, nu: 0.3}]\n"
                                              "supports: [{boundary: left, fix: all}]\n");
    HK_ASSERT_OK(hk_case_load(p3, 0, NULL, &c));
    CU_ASSERT_EQUAL(hk_case_bind(&c, &m, &model), HK_ERR_CASE);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(hk_error_message(), "bind3.yaml:2:11: the analysis is 3d but the mesh is 2D"));
    hk_case_free(&c);
}

HK_SUITE(case, {"a full case file parses to the right values", test_full_case},
         {"geometry file relative to the case, defaults", test_file_geometry_and_defaults},
         {"--set overrides every kind of key and names itself in errors", test_set_overrides},
         {"--set below a key without a section, a folder as case: named", test_set_below_value},
         {"every kind of bad input: file:line:col and a hint", test_bad_inputs},
         {"binding to a mesh names missing boundaries and regions", test_bind_errors},
         {"load_cases: parsed per case, --set, bound case by case", test_load_cases})
