/* The .vtu format keys of a case file (output.compression, output.level, output.precision and
 * the older output.compress): their values, their errors at file:line:col, and the files
 * hooke run's pipeline writes with them. VTK's own reading of every format is checked in
 * test_postproc.c. */
#include <stdlib.h>
#include <string.h>

#include "case.h"
#include "test_util.h"

#define HEAD                                                                                       \
    "geometry: {generate: {shape: rectangle, size: [4, 1], cells: [16, 4]}}\n"                     \
    "analysis: plane_stress\n"                                                                     \
    "materials: [{name: alu, E: 70e9, nu: 0.33}]\n"                                                \
    "supports: [{boundary: left, fix: all}]\n"                                                     \
    "loads: [{traction: {boundary: right, value: [0, -1e6]}}]\n"                                   \
    "solver: {method: cg, pc: jacobi, tol: 1e-10}\n"

/* Load HEAD + output and return the error code (the case is freed). */
static int load(const char *output, hk_case *c)
{
    char text[2048];
    snprintf(text, sizeof text, HEAD "%s", output);
    return hk_case_load(hk_test_write_case("fmt.yaml", text), 0, NULL, c);
}

static void test_keys(void)
{
    static const struct {
        const char *output;
        int compression, level, float32;
    } good[] = {
        {"", HK_VTU_NONE, 0, 0},
        {"output: {compress: true}\n", -1, 0, 0}, /* -1: LZ4 where built, else zlib */
        {"output: {compress: true, level: 3}\n", HK_VTU_ZLIB, 3, 0},
        {"output: {compress: false}\n", HK_VTU_NONE, 0, 0},
        {"output: {compression: zlib, level: 6}\n", HK_VTU_ZLIB, 6, 0},
        {"output: {compression: none, precision: float32}\n", HK_VTU_NONE, 0, 1},
        {"output: {compression: zlib, compress: true, precision: float64}\n", HK_VTU_ZLIB, 0, 0},
    };
    for (int i = 0; i < (int)(sizeof good / sizeof good[0]); i++) {
        hk_case c;
        int err = load(good[i].output, &c);
        CU_ASSERT_EQUAL(err, 0);
        if (err) {
            printf("\n  %s: %s\n", good[i].output, hk_error_message());
            continue;
        }
        const int fast = hk_vtu_have_lz4() ? HK_VTU_LZ4 : HK_VTU_ZLIB;
        CU_ASSERT_EQUAL(c.compression, good[i].compression < 0 ? fast : good[i].compression);
        CU_ASSERT_EQUAL(c.zlevel, good[i].level);
        CU_ASSERT_EQUAL(c.float32, good[i].float32);
        hk_case_free(&c);
    }
    hk_case c;
    int err = load("output: {compression: lz4}\n", &c);
    if (hk_vtu_have_lz4()) {
        CU_ASSERT_EQUAL(err, 0);
        if (!err) CU_ASSERT_EQUAL(c.compression, HK_VTU_LZ4);
        if (!err) hk_case_free(&c);
    } else {
        CU_ASSERT_EQUAL(err, HK_ERR_CASE);
        CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "fmt.yaml:7:23: output.compression: "
                                                          "lz4 is not in this build; install "
                                                          "liblz4-dev"));
    }
    /* --set reaches the new keys */
    const char *sets[] = {"output.compression=zlib", "output.level=9", "output.precision=float32"};
    HK_ASSERT_OK(hk_case_load(hk_test_write_case("fmt.yaml", HEAD), 3, sets, &c));
    CU_ASSERT_EQUAL(c.compression, HK_VTU_ZLIB);
    CU_ASSERT_EQUAL(c.zlevel, 9);
    CU_ASSERT_EQUAL(c.float32, 1);
    hk_case_free(&c);
}

static void test_bad_keys(void)
{
    static const struct {
        const char *output, *expect[2];
    } bad[] = {
        {"output: {compression: gzip}\n",
         {"fmt.yaml:7:23: unknown output.compression 'gzip'", "none, zlib, lz4"}},
        {"output: {compression: zlib, compress: false}\n",
         {"fmt.yaml:7:23: output.compression: zlib contradicts output.compress: false",
          "keep one"}},
        {"output: {compression: none, compress: true}\n",
         {"fmt.yaml:7:23: output.compression: none contradicts output.compress: true", NULL}},
        {"output: {compression: zlib, level: 0}\n",
         {"fmt.yaml:7:36: output.level must be a zlib level from 1", "got 0"}},
        {"output: {compression: zlib, level: fast}\n",
         {"fmt.yaml:7:36: output.level must be a whole number", NULL}},
        {"output: {level: 3}\n",
         {"fmt.yaml:7:17: output.level is zlib's level; it needs compression: zlib", NULL}},
        {"output: {precision: half}\n", {"fmt.yaml:7:21: unknown output.precision 'half'", NULL}},
        {"output: {compresion: zlib}\n",
         {"fmt.yaml:7:10: unknown key 'compresion' in output", "did you mean 'compression'"}},
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        hk_case c;
        int err = load(bad[i].output, &c);
        CU_ASSERT_EQUAL(err, HK_ERR_CASE);
        if (!err) hk_case_free(&c);
        for (int k = 0; k < 2 && bad[i].expect[k]; k++) {
            const int ok = strstr(hk_error_message(), bad[i].expect[k]) != NULL;
            CU_ASSERT(ok);
            if (!ok) printf("\n  expected '%s' in: %s\n", bad[i].expect[k], hk_error_message());
        }
    }
}

/* The first bytes of a file. */
static const char *head_of(const char *path)
{
    static char buf[8192];
    FILE *f = fopen(path, "rb");
    if (!f) return "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* hooke run's pipeline writes what the keys ask for. */
static void test_pipeline(void)
{
    static const struct {
        const char *output, *compressor, *stress_type;
    } runs[] = {
        {"", NULL, "Float64"},
        {"output: {compression: zlib, level: 3, precision: float32}\n", "vtkZLibDataCompressor",
         "Float32"},
        {"output: {compression: lz4}\n", "vtkLZ4DataCompressor", "Float64"},
    };
    for (int i = 0; i < 3; i++) {
        if (i == 2 && !hk_vtu_have_lz4()) continue;
        hk_case c;
        hk_run r;
        hk_run_opts o = {.backend = "cpu", .quiet = 1};
        HK_ASSERT_OK(load(runs[i].output, &c));
        HK_ASSERT_OK(hk_run_case(&c, &o, &r));
        char path[1024], want[128];
        snprintf(path, sizeof path, "%s/fmt%d.vtu", hk_test_tmpdir(), i);
        HK_ASSERT_OK(hk_run_write(&c, &r, path, &o));
        const char *h = head_of(path);
        CU_ASSERT_PTR_NOT_NULL(strstr(h, "<AppendedData encoding=\"raw\">"));
        CU_ASSERT_EQUAL(strstr(h, "compressor=") != NULL, runs[i].compressor != NULL);
        if (runs[i].compressor) CU_ASSERT_PTR_NOT_NULL(strstr(h, runs[i].compressor));
        snprintf(want, sizeof want, "type=\"%s\" Name=\"stress\"", runs[i].stress_type);
        CU_ASSERT_PTR_NOT_NULL(strstr(h, want));
        CU_ASSERT_PTR_NOT_NULL(strstr(h, "type=\"Float64\" Name=\"Points\""));
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

/* hooke run -o writes the mesh's part of the file while it solves and fills the fields' part
 * ahead: the same bytes as with HOOKE_OUTPUT_EARLY=0 (all at the end) and =mesh (no filling
 * ahead), with 1 and 2 threads, also over an existing file; a run that fails after meshing
 * leaves the existing file and no temporary one. */
static void test_early_output(void)
{
    const char *yaml = hk_test_write_case("early.yaml", HEAD);
    static const char *const early[3] = {"0", "mesh", "1"};
    char cmd[4096], log[8192], out[6][1024];
    for (int i = 0; i < 6; i++) {
        const int threads = 1 + i / 3;
        snprintf(out[i], sizeof out[i], "%s/early%d.vtu", hk_test_tmpdir(), i);
        if (i >= 4) {
            FILE *f = fopen(out[i], "w"); /* an older result to replace */
            if (f) fputs("an older result", f), fclose(f);
        } else {
            remove(out[i]);
        }
        snprintf(cmd, sizeof cmd,
                 "OMP_NUM_THREADS=%d OMP_WAIT_POLICY=passive HOOKE_OUTPUT_EARLY=%s '%s' run '%s' "
                 "-q -o '%s'",
                 threads, early[i % 3], HOOKE_BINARY, yaml, out[i]);
        const int st = hk_test_shell(hk_test_tmpdir(), cmd, log, sizeof log);
        CU_ASSERT_EQUAL(st, 0);
        if (st) printf("\n  %s\n  %s\n", cmd, log);
    }
    for (int i = 1; i < 6; i++) {
        const int same = hk_test_same_file(out[0], out[i]);
        CU_ASSERT(same);
        if (!same) printf("\n  %s differs from %s\n", out[i], out[0]);
    }
    /* fails at assembly (rigid-body motion): the older file stays */
    const char *bad = hk_test_write_case(
        "early_bad.yaml", "geometry: {generate: {shape: rectangle, size: [4, 1], cells: [16, 4]}}\n"
                          "analysis: plane_stress\n"
                          "materials: [{name: alu, E: 70e9, nu: 0.33}]\n"
                          "supports: [{boundary: left, fix: [x]}]\n"
                          "loads: [{traction: {boundary: right, value: [0, -1e6]}}]\n");
    FILE *f = fopen(out[5], "w");
    if (f) fputs("an older result", f), fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' run '%s' -q -o '%s'", HOOKE_BINARY, bad, out[5]);
    CU_ASSERT_NOT_EQUAL(hk_test_shell(hk_test_tmpdir(), cmd, log, sizeof log), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "rigid-body motion"));
    CU_ASSERT_STRING_EQUAL(head_of(out[5]), "an older result");
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -c 'early5.vtu.part-'", hk_test_tmpdir());
    hk_test_shell(hk_test_tmpdir(), cmd, log, sizeof log);
    CU_ASSERT_EQUAL(atoi(log), 0);
}

HK_SUITE(vtu, {"output.compression, level, precision, compress: values and --set", test_keys},
         {"output format keys: errors at file:line:col", test_bad_keys},
         {"hooke run's pipeline writes the format asked for", test_pipeline},
         {"hooke run -o: the mesh written early gives the same bytes; a failed run keeps the file",
          test_early_output})
