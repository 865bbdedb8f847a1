/* Bad inputs through the `hooke` binary, as a new user meets them: each row is a file (or a
 * folder), a command line, the exit status and a fragment of the one sentence the command
 * must print. Every run is bounded: 4 GB of address space (ulimit -v) and 60 s (a hang or a
 * runaway allocation fails the row instead of the machine). tests/data/fuzz/ holds the same
 * classes as seeds for the fuzzers (fuzz/README.md). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test_util.h"

/* A small case on a generated mesh (no Gmsh): the rows add keys or replace parts of it. */
#define BOX_CASE                                                                                   \
    "title: box\n"                                                                                 \
    "geometry: {generate: {shape: box, size: [1, 1, 1], cells: [2, 2, 2], element: hex8}}\n"       \
    "analysis: 3d\n"
#define BOX_REST                                                                                   \
    "supports:\n"                                                                                  \
    "  - {boundary: xmin, fix: all}\n"                                                             \
    "loads:\n"                                                                                     \
    "  - traction: {boundary: xmax, value: [0, 0, -1e6]}\n"
#define STEEL "materials: [{name: steel, E: 200e9, nu: 0.3}]\n"
/* nine levels of nine aliases: 9^9 values once expanded ("billion laughs") */
#define LAUGHS                                                                                     \
    "a0: &a0 [lol]\n"                                                                              \
    "a1: &a1 [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0]\n"                                      \
    "a2: &a2 [*a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1]\n"                                      \
    "a3: &a3 [*a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2]\n"                                      \
    "a4: &a4 [*a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3]\n"                                      \
    "a5: &a5 [*a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4]\n"                                      \
    "a6: &a6 [*a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5]\n"                                      \
    "a7: &a7 [*a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6]\n"                                      \
    "a8: &a8 [*a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7]\n"                                      \
    "a9: &a9 [*a8, *a8, *a8, *a8, *a8, *a8, *a8, *a8, *a8]\n"
/* a NUL byte before loads: (it once cut the file there: a run with no loads) */
#define NUL_CASE                                                                                   \
    BOX_CASE STEEL "supports:\n  - {boundary: xmin, fix: all}\n\0loads:\n"                         \
                   "  - traction: {boundary: xmax, value: [0, 0, -1e6]}\n"

typedef struct bad_input {
    const char *file;     /* written in the test folder; "DIR:name" makes a folder; NULL none */
    const char *text;     /* its content (NULL with a folder) */
    size_t len;           /* its length when it holds NUL bytes, else 0 */
    const char *args;     /* after `hooke` */
    int status;           /* expected exit status */
    const char *sentence; /* a fragment the output must contain */
    const char *absent;   /* a fragment it must not contain, or NULL */
} bad_input;

static const bad_input rows[] = {
    /* ---- Matrix Market: declared sizes against the file and memory ---- */
    {"huge.mtx", "%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 1\n1 1 1\n",
     0, "solve huge.mtx", 2,
     "huge.mtx:2: the 2000000000 x 2000000000 matrix has 1 entries, so at least 1999999999 of "
     "its rows are empty and it is singular; fix the size line",
     NULL},
    {"huge8.mtx", "%%MatrixMarket matrix coordinate real general\n100000000 100000000 1\n1 1 1\n",
     0, "solve huge8.mtx", 2, "huge8.mtx:2: the 100000000 x 100000000 matrix has 1 entries", NULL},
    {"count.mtx", "%%MatrixMarket matrix coordinate real general\n30000 30000 90000000\n1 1 1\n", 0,
     "solve count.mtx", 2,
     "count.mtx:2: the size line announces 90000000 entries but the 6 bytes after it hold at "
     "most 1",
     NULL},
    {"rect.mtx", "%%MatrixMarket matrix coordinate real general\n2000000000 1 1\n1 1 1\n", 0,
     "solve rect.mtx", 2, "rect.mtx:2: the 2000000000 x 1 matrix has 1 entries", NULL},
    {"bigrhs.mtx", "%%MatrixMarket matrix array real general\n1000000000 1\n1\n", 0,
     "solve --generate poisson:3 --rhs bigrhs.mtx", 2,
     "bigrhs.mtx:2: the size line announces 1000000000 values", NULL},
    /* ---- the solver: rows counted from 1, options named with the closest ones ---- */
    {"neg.mtx",
     "%%MatrixMarket matrix coordinate real general\n5 5 5\n1 1 1\n2 2 1\n3 3 1\n4 4 1\n5 5 -1\n",
     0, "solve neg.mtx", 2,
     "preconditioner jacobi: row 5 has a diagonal entry that is zero, negative", "row 4"},
    {NULL, NULL, 0, "solve --generate poisson:4 metod=cg", 2,
     "unknown option 'metod'; did you mean 'method'?", NULL},
    {NULL, NULL, 0, "solve --generate poisson:4 pc=poly pc.poly.degre=3", 2,
     "did you mean 'pc.poly.degree'?", NULL},
    {NULL, NULL, 0, "solve --generate poisson:4 zzzz=1", 2,
     "pc.amg.*, pc.mlilu.* (each one in hooke solve --help)", NULL},
    {NULL, NULL, 0, "solve --generate poisson:4 method=pcg", 2,
     "unknown method=pcg; did you mean 'cg'", NULL},
    {NULL, NULL, 0, "solve --generate poisson:4 --block-size 7", 2,
     "--block-size '7' must be 1 to 6", NULL},
    {NULL, NULL, 0, "solve --generate elasticity3d:4 pc=amg tol=1e-18", 1,
     "the tolerance 1e-18 is below what rounding lets this system reach", "another preconditioner"},
    {NULL, NULL, 0, "solve --generate poisson:4 -o new/folder/x.mtx", 0, "true residual", NULL},
    /* ---- commands ---- */
    {NULL, NULL, 0, "info --help", 0, "usage: hooke info", "gmsh:"},
    {NULL, NULL, 0, "info --bogus", 2, "hooke info takes no options", NULL},
    /* ---- meshes and geometry ---- */
    {"nodes.msh", "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n2000000000\n1 0 0 0\n$EndNodes\n",
     0, "run nodes.yaml", 1,
     "nodes.msh:5: the $Nodes section declares 2000000000 nodes but the 18 bytes after it hold "
     "at most 2; the file is truncated or the count is wrong",
     NULL},
    {"nodes4.msh",
     "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 100000000 1 100000000\n3 1 0 1\n1\n0 0 "
     "0\n$EndNodes\n",
     0, "run nodes4.yaml", 1, "nodes4.msh:5: the $Nodes section declares 100000000 nodes but the",
     NULL},
    {"v1.msh", "$MeshFormat\n1.0 0 8\n$EndMeshFormat\n", 0, "run v1.yaml", 1,
     "v1.msh:2: this is Gmsh's mesh format 1, which Hooke does not read; save it as format 2.2 "
     "or 4.1",
     NULL},
    {"DIR:folder.geo", NULL, 0, "run folder.yaml", 1,
     "'folder.geo' is a folder, not a mesh or geometry file", "dimension"},
    {"pyr.geo",
     "SetFactory(\"OpenCASCADE\");\nBox(1) = {0, 0, 0, 1, 1, 1};\nTransfinite Surface{1};\n"
     "Recombine Surface{1};\nMesh.MeshSizeMax = 0.5;\nPhysical Volume(\"solid\") = {1};\n"
     "Physical Surface(\"fixed\") = {1};\nPhysical Surface(\"tip\") = {2};\n",
     0, "run pyr.yaml", 0, "(tet4 + pyr5)", "no mesh nodes"},
    /* HXT makes no pyramids (it failed, left the volume unmeshed or crashed Gmsh) */
    {NULL, NULL, 0, "run pyr.yaml --set geometry.algorithm3d=hxt", 0,
     "volumes meshed with Delaunay, as HXT does not make the pyramids", "no mesh nodes"},
    /* ---- hooke run: results and their summary ---- */
    {"e300.yaml", BOX_CASE "materials: [{name: s, E: 1e300, nu: 0.3}]\n" BOX_REST, 0,
     "run e300.yaml -o e300.vtu", 0, "max |u|        6.17", "max |u|        0.000000e+00"},
    {"tiny.yaml", BOX_CASE "materials: [{name: s, E: 1e-300, nu: 0.3}]\n" BOX_REST, 0,
     "run tiny.yaml -o tiny.vtu --set solver.method=cholesky", 0, "max |u|        6.17", "inf"},
    {"nowrite.yaml", BOX_CASE STEEL BOX_REST, 0, "run nowrite.yaml -o /proc/no/x.vtu", 1,
     "cannot create the output folder", "output         /proc"},
    {"chol.yaml", BOX_CASE STEEL BOX_REST "solver: {method: cg, pc: amg, pc.amg.degree: 2}\n", 0,
     "run chol.yaml -o chol.vtu --set solver.method=cholesky", 0,
     "pc=amg of the case dropped: cholesky is a direct solver", NULL},
    {"floor.yaml", BOX_CASE STEEL BOX_REST "solver: {method: cg, pc: amg, tol: 1e-18}\n", 0,
     "run floor.yaml -o floor.vtu", 1, "raise it (--set solver.tol=", NULL},
    {"typo.yaml", BOX_CASE STEEL BOX_REST "solver:\n  metod: cg\n", 0, "run typo.yaml", 1,
     "typo.yaml:10:10: unknown option 'metod'; did you mean 'method'?", NULL},
    {"mesh.yaml", BOX_CASE STEEL BOX_REST, 0, "mesh mesh.yaml -o out/dir/m.msh", 0,
     "wrote out/dir/m.msh", NULL},
    /* ---- case files: bounded, text only, one document, nothing ignored ---- */
    {"laughs.yaml", LAUGHS BOX_CASE STEEL BOX_REST, 0, "run laughs.yaml", 1,
     "laughs.yaml:2:11: the YAML aliases (*name) of this file expand to more than 100000 values",
     "empty or not YAML"},
    {"nul.yaml", NUL_CASE, sizeof NUL_CASE - 1, "run nul.yaml", 1,
     "nul.yaml:7:1: the file holds a NUL byte, and what follows it would be lost", NULL},
    {"ctrl.yaml", "title: b\x1bx\n" BOX_CASE STEEL BOX_REST, 0, "run ctrl.yaml", 1,
     "ctrl.yaml:1:9: the file holds the control character 0x1b", NULL},
    /* libfyaml looped forever on a directive line with a byte that is not UTF-8 (fuzzing) */
    {"latin1.yaml", "title: x\n%\xdc\n" BOX_CASE STEEL BOX_REST, 0, "run latin1.yaml", 1,
     "latin1.yaml:2:2: the file holds the byte 0xdc, which is not UTF-8 text", NULL},
    {"setbyte.yaml", BOX_CASE STEEL BOX_REST, 0,
     "run setbyte.yaml --set \"$(printf 'title=x\\334')\"", 1,
     "--set number 1, byte 8: the override holds the byte 0xdc, which is not UTF-8 text", NULL},
    {"twodocs.yaml", BOX_CASE STEEL BOX_REST "---\nloads: []\n", 0, "run twodocs.yaml", 1,
     "twodocs.yaml:10:1: a second YAML document starts here", NULL},
    {"deep.yaml",
     BOX_CASE STEEL BOX_REST
     "solver: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
     "[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
     "]]]]]]]]]]\n",
     0, "run deep.yaml", 1, "deep.yaml:9:", NULL},
    {"nosupports.yaml", BOX_CASE STEEL "supports: []\nloads: []\n", 0, "run nosupports.yaml", 1,
     "nosupports.yaml:5:1: supports is empty, but the body needs supports", "must be a list"},
    {"noalpha.yaml", BOX_CASE STEEL BOX_REST "  - temperature: 100\n", 0, "run noalpha.yaml", 1,
     "noalpha.yaml:9:18: this temperature change acts on material 'steel', which has no alpha",
     NULL},
    {"conflict.yaml",
     BOX_CASE STEEL "supports:\n  - {boundary: xmin, fix: all}\n  - {boundary: xmin, fix: {x: "
                    "0.1}}\nloads: []\n",
     0, "run conflict.yaml", 1,
     "conflict.yaml:7:16: node 2 at (0, 1, 1) gets x displacement 0 from the support on 'xmin' "
     "and 0.1",
     NULL},
    {"bigload.yaml",
     BOX_CASE STEEL "supports:\n  - {boundary: xmin, fix: all}\nloads:\n  - traction: {boundary: "
                    "xmax, value: [0, 0, -1e300]}\n",
     0, "run bigload.yaml", 1, "bigload.yaml:8:26: right-hand side entry", NULL},
    /* a geometry with a point group, then a pressure on it */
    {"sq.geo",
     "Point(1) = {0, 0, 0, 0.5}; Point(2) = {1, 0, 0, 0.5}; Point(3) = {1, 1, 0, 0.5};\n"
     "Point(4) = {0, 1, 0, 0.5}; Line(1) = {1, 2}; Line(2) = {2, 3}; Line(3) = {3, 4};\n"
     "Line(4) = {4, 1}; Curve Loop(1) = {1, 2, 3, 4}; Plane Surface(1) = {1};\n"
     "Physical Surface(\"plate\") = {1}; Physical Curve(\"left\") = {4};\n"
     "Physical Point(\"corner\") = {3};\n",
     0, "info --help", 0, "usage: hooke info", NULL},
    {"point.yaml",
     "title: p\ngeometry: {file: sq.geo}\nanalysis: plane_stress\n"
     "materials: [{name: s, E: 1e9, nu: 0.3}]\nsupports: [{boundary: left, fix: all}]\nloads:\n"
     "  - pressure: {boundary: corner, value: 1e6}\n",
     0, "run point.yaml", 1,
     "point.yaml:7:26: a pressure needs a boundary of dimension 1, but boundary 'corner' has "
     "dimension 0",
     NULL},
};

/* the case files that point at the .msh and .geo rows */
static void write_geometry_cases(const char *dir)
{
    static const char *const geo[] = {"nodes", "nodes4", "v1", "folder", "pyr"};
    static const char *const ext[] = {"msh", "msh", "msh", "geo", "geo"};
    for (int k = 0; k < 5; k++) {
        char path[700];
        snprintf(path, sizeof path, "%s/%s.yaml", dir, geo[k]);
        FILE *f = fopen(path, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fprintf(f,
                "title: t\ngeometry: {file: %s.%s}\nanalysis: 3d\n" STEEL
                "supports: [{boundary: fixed, fix: all}]\n"
                "loads: [{traction: {boundary: tip, value: [0, 0, -1e3]}}]\n",
                geo[k], ext[k]);
        fclose(f);
    }
}

static void test_bad_inputs(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/bad", hk_test_tmpdir());
    mkdir(dir, 0777);
    write_geometry_cases(dir);
    static char out[1 << 16];
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const bad_input *b = &rows[i];
        char path[700], cmd[2048];
        if (b->file && !strncmp(b->file, "DIR:", 4)) {
            snprintf(path, sizeof path, "%s/%s", dir, b->file + 4);
            mkdir(path, 0777);
        } else if (b->file) {
            snprintf(path, sizeof path, "%s/%s", dir, b->file);
            FILE *f = fopen(path, "wb");
            CU_ASSERT_PTR_NOT_NULL_FATAL(f);
            fwrite(b->text, 1, b->len ? b->len : strlen(b->text), f);
            fclose(f);
        }
        /* no GPU visible: a device's runtime reserves virtual address space that the limit
         * would count against the run's memory check, which then speaks first on a GPU host
         * (these rows are about the case file's sentences, the same on any backend); 4 GB, not
         * 2: the GPU host's CUDA and Gmsh libraries alone map about 1.7 GB, which left a 2 GB
         * run 258 MB and its memory check refused the one-cell cases there */
        snprintf(cmd, sizeof cmd,
                 "ulimit -v 4000000 && CUDA_VISIBLE_DEVICES= OMP_NUM_THREADS=1 timeout 60 '%s' %s",
                 HOOKE_BINARY, b->args);
        const int rc = hk_test_shell(dir, cmd, out, sizeof out);
        const int ok =
            rc == b->status && strstr(out, b->sentence) && !(b->absent && strstr(out, b->absent));
        if (!ok)
            fprintf(stderr, "\n  hooke %s: exit %d (expected %d), expected '%s'%s%s in:\n%s\n",
                    b->args, rc, b->status, b->sentence, b->absent ? " and not " : "",
                    b->absent ? b->absent : "", out);
        CU_ASSERT(ok);
    }
}

/* --json with --verbose: stdout is the JSON alone (Gmsh's Info lines once went there). */
static void test_json_verbose(void)
{
    char dir[512], cmd[2048];
    snprintf(dir, sizeof dir, "%s/bad", hk_test_tmpdir());
    mkdir(dir, 0777);
    write_geometry_cases(dir);
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        if (rows[i].file && !strcmp(rows[i].file, "pyr.geo"))
            hk_test_write_case("bad/pyr.geo", rows[i].text);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && OMP_NUM_THREADS=1 timeout 60 '%s' run pyr.yaml -o p.vtu --json "
             "--verbose 2>/dev/null",
             dir, HOOKE_BINARY);
    FILE *p = popen(cmd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    static char out[1 << 16];
    size_t len = fread(out, 1, sizeof out - 1, p);
    out[len] = 0;
    CU_ASSERT_EQUAL(pclose(p), 0);
    int ok = out[0] == '{' && strstr(out, "\"ok\": true") && !strstr(out, "Info") && len > 2 &&
             out[len - 2] == '}';
    if (!ok) fprintf(stderr, "\n  stdout of --json --verbose:\n%s\n", out);
    CU_ASSERT(ok);
}

HK_SUITE(bad_inputs, {"bad inputs: exit status and one clear sentence, bounded", test_bad_inputs},
         {"--json --verbose: stdout is JSON alone", test_json_verbose})
