/* `hooke bench output`: the recovery stage (hk_postproc) and the .vtu writer on a large mesh.
 * The fields are real recovered ones: a tet10 box with a smooth displacement field (or the
 * result of a case file), so they compress as a run's do. Every writer setting (compression
 * none, zlib, lz4; Float64 or Float32 fields) is timed beside the former libxml2 writer
 * (base64 appended data, zlib level 1 in 32 KiB blocks), measured in the same run; the
 * recovery on every thread beside one thread. The sweep of how the uncompressed file reaches
 * the disk (threads in pwrite at once) stands beside what the file system does with one
 * thread and large writes from one buffer (dd-like), in the same directory and run. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <omp.h>

#include "bench.h"
#include "case.h"

static void output_usage(FILE *f)
{
    fprintf(f, "usage: hooke bench output [--size small|medium|large] [--cells N] [--case FILE]\n"
               "                          [--dir DIR] [--reps N] [--sync] [--overwrite]\n"
               "                          [--no-baseline] [--sweep] [--json FILE]\n\n"
               "Writes the fields of a tet10 box of N^3 cells (6 tets per cell; --size small,\n"
               "medium, large: N = 30, 50, 84, i.e. 0.68M, 3.1M, 14.5M DOFs) with a smooth\n"
               "displacement field, recovered by hk_postproc, with every compression (none, zlib\n"
               "level 1, lz4 where built) and precision (Float64, Float32 fields), and with the\n"
               "former libxml2 writer (base64; plain and zlib) as the baseline in the same run.\n"
               "Prints seconds (median of --reps, default 3, and the first write's, which a run\n"
               "makes once), file size and MB/s of file. The rows 'early-mesh' and 'early' are\n"
               "hooke run's output stage when the mesh's part of the file was written during\n"
               "the solve (hk_vtu_early_start), without and with the fields' pages filled ahead\n"
               "(as when the solve outlasts both): the time of the fields' part. Before that, the\n"
               "recovery stage (hk_postproc) on every thread and on one. Then the sweep of the\n"
               "uncompressed Float64 (and Float32) file's writing: at most 1, 2, 4, 8 or all\n"
               "threads in pwrite at once (HOOKE_OUTPUT_WRITERS), beside the file system's own\n"
               "speed: one thread writing as many bytes from one buffer in 16 MiB writes\n"
               "(dd-like), without and with fsync, in the same folder.\n"
               "HOOKE_OUTPUT_PROFILE=1 prints each write's phases.\n"
               "  --case FILE   run this case file (hooke run's pipeline) and write its fields\n"
               "  --dir DIR     where the files go (default /tmp; each is removed after its run)\n"
               "  --sync        include fsync (the disk, not only the page cache) in the time\n"
               "  --overwrite   each write replaces the previous one's file, as a repeated\n"
               "                hooke run -o FILE does (default: the file is removed before)\n"
               "  --no-baseline skip the libxml2 writer and the one-thread recovery\n"
               "  --sweep       only the sweep and the dd-like rows (and the recovery)\n");
}

/* One writer setting and its measurements. */
typedef struct {
    const char *writer; /* "direct", "early" (the fields' part of hk_vtu_early, after filling
                         * them ahead), "early-mesh" (without), "libxml2", or "dd" (one thread,
                         * large writes from one buffer: the file system's speed) */
    hk_vtu_compression comp;
    int float32;
    double seconds, first, bytes; /* median and first write */
    /* direct: HOOKE_OUTPUT_WRITERS (-1: as the environment says, 0: all); dd: fsync in the
     * time */
    int writers;
    int dd_sync;
    double dd_bytes; /* dd: bytes to write */
} out_row;

/* A row of the writer sweep. */
static out_row sweep_row(int float32, int writers)
{
    return (out_row){"direct", HK_VTU_NONE, float32, 0, 0, 0, writers, 0, 0};
}

/* The row's name in the table. */
static const char *row_label(const out_row *w, char *buf, size_t n)
{
    if (!strcmp(w->writer, "dd"))
        snprintf(buf, n, "dd-like: one thread, 16 MiB writes%s", w->dd_sync ? ", fsync" : "");
    else if (w->writers == 0)
        snprintf(buf, n, "direct, pwrite, all %d threads writing", omp_get_max_threads());
    else if (w->writers > 0)
        snprintf(buf, n, "direct, pwrite, %d thread%s writing", w->writers,
                 w->writers > 1 ? "s" : "");
    else
        snprintf(buf, n, "%s", w->writer);
    return buf;
}

/* What the file system does: bytes from one buffer in 16 MiB writes by one thread. */
static int write_dd(const out_row *row, const char *path, int sync)
{
    const size_t chunk = (size_t)16 << 20;
    unsigned char *buf = malloc(chunk);
    HK_CHECK(buf, HK_ERR_MEMORY, "out of memory for the dd-like write's buffer");
    memset(buf, 0x5a, chunk);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) free(buf);
    HK_CHECK(fd >= 0, HK_ERR_IO, "could not open '%s' for writing: %s", path, strerror(errno));
    int ok = 1;
    for (double left = row->dd_bytes; left > 0 && ok;) {
        const size_t n = left < (double)chunk ? (size_t)left : chunk;
        ok = write(fd, buf, n) == (ssize_t)n;
        left -= (double)n;
    }
    if (ok && (sync || row->dd_sync)) ok = fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    free(buf);
    if (!ok) remove(path); /* no partial file of the run's size left in --dir */
    HK_CHECK(ok, HK_ERR_IO, "could not write '%s' (disk full?)", path);
    return 0;
}

/* setenv, or unsetenv for NULL. */
static void put_env(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

static const char *comp_name(hk_vtu_compression c)
{
    return c == HK_VTU_ZLIB ? "zlib" : c == HK_VTU_LZ4 ? "lz4" : "none";
}

/* One write; *t0 is when its timed part starts: for "early", after the mesh's part. */
static int write_once(const out_row *row, const char *path, const hk_mesh *m, const hk_fields *f,
                      int sync, double *t0)
{
    if (!strcmp(row->writer, "dd")) return write_dd(row, path, sync);
    if (row->writers >= 0) { /* the row's setting for this write only */
        char *old_w = getenv("HOOKE_OUTPUT_WRITERS");
        old_w = old_w ? strdup(old_w) : NULL;
        char w[16];
        snprintf(w, sizeof w, "%d", row->writers);
        setenv("HOOKE_OUTPUT_WRITERS", row->writers ? w : "all", 1);
        out_row plain = *row;
        plain.writers = -1;
        const int err = write_once(&plain, path, m, f, sync, t0);
        put_env("HOOKE_OUTPUT_WRITERS", old_w);
        free(old_w);
        return err;
    }
    if (!strncmp(row->writer, "early", 5)) {
        hk_vtu_options o = {.compression = row->comp, .float32 = row->float32};
        hk_vtu_early *e =
            hk_vtu_early_start(path, m, f, &o, strcmp(row->writer, "early") ? 0 : INT64_MAX);
        HK_CHECK(e, HK_ERR_INTERNAL, "hk_vtu_early_start did not start for '%s'", path);
        hk_vtu_early_wait(e); /* as if the solve took longer than the mesh's part */
        *t0 = hk_time();
        HK_CALL(hk_vtu_early_finish(e, path, f));
    } else if (!strcmp(row->writer, "libxml2")) {
        HK_CALL(hk_vtu_write_libxml2(path, m, f, row->comp == HK_VTU_ZLIB));
    } else {
        hk_vtu_options o = {.compression = row->comp, .level = 1, .float32 = row->float32};
        HK_CALL(hk_vtu_write(path, m, f, &o));
    }
    if (sync) {
        int fd = open(path, O_RDONLY);
        HK_CHECK(fd >= 0 && fsync(fd) == 0, HK_ERR_IO, "could not fsync '%s'", path);
        close(fd);
    }
    return 0;
}

/* Median seconds of reps writes (the file removed before each, outside the time, unless
 * overwrite), the first write's and the file's size. */
static int time_writer(out_row *row, const char *path, const hk_mesh *m, const hk_fields *f,
                       int reps, int sync, int overwrite)
{
    double t[64];
    struct stat st;
    for (int r = 0; r < reps; r++) {
        if (!overwrite) remove(path);
        double t0 = hk_time();
        HK_CALL(write_once(row, path, m, f, sync, &t0));
        t[r] = hk_time() - t0;
        HK_CHECK(stat(path, &st) == 0, HK_ERR_IO, "'%s' was not written", path);
        row->bytes = (double)st.st_size;
    }
    remove(path);
    row->seconds = hk_bench_median(t, reps);
    row->first = t[0];
    return 0;
}

/* A smooth displacement on the box and the problem hk_postproc needs (one face held, so
 * reactions are computed too). */
static int box_fields(int n, hk_mesh *m, hk_system *s, double **u)
{
    HK_CALL(hk_mesh_box(1.0, 1.0, 1.0, n, n, n, HK_EL_TET10, m));
    const int64_t nn = m->nnodes;
    memset(s, 0, sizeof *s);
    s->dim = 3, s->ndof = 3 * nn, s->nnodes = nn;
    HK_CALL(hk_calloc((size_t)s->ndof, 1, &s->fixed));
    HK_CALL(hk_calloc((size_t)s->ndof, sizeof(double), &s->f_ext));
    HK_CALL(hk_calloc((size_t)s->ndof, sizeof(double), &s->u_fixed));
    HK_CALL(hk_malloc((size_t)s->ndof * sizeof(double), u));
    const int xmin = hk_mesh_find_boundary(m, "xmin");
    HK_CHECK(xmin >= 0, HK_ERR_INTERNAL, "the generated box has no boundary 'xmin'");
    for (int64_t j = 0; j < m->boundaries[xmin].nnodes; j++)
        for (int c = 0; c < 3; c++)
            s->fixed[3 * (int64_t)m->boundaries[xmin].nodes[j] + c] = 1;
    /* a gentle waviness of the grid, so coordinates and fields take irregular values as on
     * a Gmsh mesh (a straight grid repeats them, which flatters the compression) */
    const double a = 0.1 / n, pi2 = 6.283185307179586;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++) {
        double *y = m->coords + 3 * i, y0 = y[0], y1 = y[1], y2 = y[2];
        y[0] += a * sin(pi2 * (1.37 * y1 + 0.71 * y2)) * sin(M_PI * y0);
        y[1] += a * sin(pi2 * (0.93 * y2 + 1.21 * y0)) * sin(M_PI * y1);
        y[2] += a * sin(pi2 * (1.11 * y0 + 0.83 * y1)) * sin(M_PI * y2);
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++) {
        const double *x = m->coords + 3 * i;
        double *ui = *u + 3 * i;
        ui[0] = 1e-3 * x[0] * x[0] + 2e-4 * sin(3 * x[1]) * x[0];
        ui[1] = -3e-4 * x[0] * x[1] + 1e-4 * cos(2 * x[2]) * x[0];
        ui[2] = 5e-4 * x[2] * x[0] * x[0] - 2e-4 * x[1] * x[0];
    }
    return 0;
}

int hk_bench_output(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    const char *case_path = NULL, *dir = "/tmp";
    int cells = 0, reps = 3, sync = 0, baseline = 1, overwrite = 0, sweep_only = 0;
    for (int i = 1; i < argc;) {
        int k = hk_bench_option(argc, argv, &i, &bo, output_usage); /* moves i past it */
        if (k < 0) return k == HK_BENCH_HELP ? 0 : 2;
        if (k) continue;
        const char *a = argv[i++];
        if (!strcmp(a, "--cells") && i < argc) {
            cells = atoi(argv[i++]);
            if (cells < 1) {
                fprintf(stderr, "hooke bench output: --cells needs a positive integer\n");
                return 2;
            }
        } else if (!strcmp(a, "--reps") && i < argc) {
            reps = atoi(argv[i++]);
            if (reps < 1 || reps > 64) {
                fprintf(stderr, "hooke bench output: --reps needs an integer in 1..64\n");
                return 2;
            }
        } else if (!strcmp(a, "--case") && i < argc) {
            case_path = argv[i++];
        } else if (!strcmp(a, "--dir") && i < argc) {
            dir = argv[i++];
        } else if (!strcmp(a, "--sync")) {
            sync = 1;
        } else if (!strcmp(a, "--overwrite")) {
            overwrite = 1;
        } else if (!strcmp(a, "--no-baseline")) {
            baseline = 0;
        } else if (!strcmp(a, "--sweep")) {
            sweep_only = 1, baseline = 0;
        } else {
            fprintf(stderr, "hooke bench output: unknown option '%s'\n", a);
            output_usage(stderr);
            return 2;
        }
    }
    if (!cells) cells = (int)hk_bench_pick(bo.size, 30, 50, 84);
    char path[4096];
    snprintf(path, sizeof path, "%s/hooke-bench-output-%ld.vtu", dir, (long)getpid());

    int rc = 1, err = 0, failed = 1, case_loaded = 0;
    hk_case c;
    hk_run r;
    hk_mesh m;
    hk_system s;
    double *u = NULL;
    hk_fields f;
    memset(&c, 0, sizeof c);
    memset(&r, 0, sizeof r);
    memset(&m, 0, sizeof m);
    memset(&s, 0, sizeof s);
    memset(&f, 0, sizeof f);
    const hk_mesh *mesh = &m;
    const hk_fields *fields = &f;
    double t_post = NAN, t_post1 = NAN;
    const int nthreads = omp_get_max_threads();
    if (case_path) {
        hk_run_opts o = {.backend = bo.backend, .quiet = 1};
        if (hk_case_load(case_path, 0, NULL, &c)) goto fail;
        case_loaded = 1;
        err = hk_run_case(&c, &o, &r);
        if (err && err != HK_ERR_NUMERIC) goto fail; /* unconverged: its fields still serve */
        mesh = &r.mesh;
        fields = r.nlc ? &r.lc[0].fields : &r.fields;
        t_post = r.nlc ? r.lc[0].t_post : r.t_post;
    } else {
        hk_material mat = {.name = "steel", .E = 200e9, .nu = 0.3};
        if (box_fields(cells, &m, &s, &u)) goto fail;
        hk_support sup = {.boundary = hk_mesh_find_boundary(&m, "xmin"), .mask = 7};
        hk_problem p = {
            .mesh = &m, .analysis = HK_SOLID, .materials = &mat, .nsupports = 1, .supports = &sup};
        double tp[64];
        for (int k = 0; k < reps; k++) {
            hk_fields_free(&f);
            double t0 = hk_time();
            if (hk_postproc(&p, &s, u, &f)) goto fail;
            tp[k] = hk_time() - t0;
        }
        t_post = hk_bench_median(tp, reps);
        if (baseline && nthreads > 1) {
            hk_fields f1;
            omp_set_num_threads(1);
            double t0 = hk_time();
            err = hk_postproc(&p, &s, u, &f1);
            t_post1 = hk_time() - t0;
            omp_set_num_threads(nthreads);
            if (err) goto fail;
            hk_fields_free(&f1);
        }
    }
    out_row rows[40];
    int nrows = 0;
    if (baseline) {
        rows[nrows++] = (out_row){"libxml2", HK_VTU_NONE, 0, 0, 0, 0, -1, 0, 0};
        rows[nrows++] = (out_row){"libxml2", HK_VTU_ZLIB, 0, 0, 0, 0, -1, 0, 0};
    }
    for (int f32 = 0; f32 < 2 && !sweep_only; f32++)
        for (int cp = HK_VTU_NONE; cp <= HK_VTU_LZ4; cp++)
            if (cp != HK_VTU_LZ4 || hk_vtu_have_lz4())
                rows[nrows++] = (out_row){"direct", (hk_vtu_compression)cp, f32, 0, 0, 0, -1, 0, 0};
    for (int f32 = 0; f32 < 2 && !sweep_only; f32++) {
        rows[nrows++] = (out_row){"early-mesh", HK_VTU_NONE, f32, 0, 0, 0, -1, 0, 0};
        rows[nrows++] = (out_row){"early", HK_VTU_NONE, f32, 0, 0, 0, -1, 0, 0};
    }
    /* the sweep: writers 1, 2, 4, 8 (those below the thread count) and all; Float32 (converted
     * on the fly) at the ends */
    const int sweep0 = nrows;
    for (int w = 1; w < nthreads && w <= 8; w *= 2)
        rows[nrows++] = sweep_row(0, w);
    rows[nrows++] = sweep_row(0, 0);
    rows[nrows++] = sweep_row(1, 1);
    rows[nrows++] = sweep_row(1, 0);
    for (int k = 0; k < nrows; k++)
        if (time_writer(&rows[k], path, mesh, fields, reps, sync, overwrite)) goto fail;
    /* the file system's own speed for the sweep's Float64 file */
    for (int ds = 0; ds < 2; ds++) {
        rows[nrows] = (out_row){"dd", HK_VTU_NONE, 0, 0, 0, 0, -1, ds, rows[sweep0].bytes};
        if (time_writer(&rows[nrows++], path, mesh, fields, reps, sync, overwrite)) goto fail;
    }

    const long long nn = (long long)mesh->nnodes, ne = (long long)mesh->cells.n;
    printf("## hooke bench output: %s, %lld nodes, %lld cells, %d threads%s%s\n\n",
           case_path ? case_path : "tet10 box", nn, ne, nthreads, sync ? ", with fsync" : "",
           overwrite ? ", each file over the previous one" : "");
    printf("recovery (hk_postproc): %.3f s", t_post);
    if (!isnan(t_post1)) printf(" (one thread: %.3f s, %.2fx)", t_post1, t_post1 / t_post);
    printf("\n\nFiles in %s; MB = 10^6 bytes. %s\n\n", dir,
           sweep_only ? "Baseline of the sweep: the dd-like rows, the file system's own speed, "
                        "measured in the same run."
                      : "Baseline: today's default of hooke run, the libxml2 writer with zlib, "
                        "measured in the same run; of the sweep: the dd-like rows.");
    const out_row *base = NULL;
    for (int k = 0; k < nrows; k++)
        if (sweep_only ? !strcmp(rows[k].writer, "dd") && !rows[k].dd_sync
                       : !strcmp(rows[k].writer, "libxml2") && rows[k].comp == HK_VTU_ZLIB)
            base = &rows[k];
    hk_table_head(stdout, "lllrrrrrr",
                  "writer|compression|fields|seconds|first write s|file MB|MB/s of file|speed-up "
                  "vs baseline|size vs baseline");
    for (int k = 0; k < nrows; k++) {
        const out_row *w = &rows[k];
        const int is_base = w == base;
        char speed[32], size[32] = "-";
        hk_bench_ratio_text(speed, sizeof speed,
                            base && !is_base ? base->seconds / w->seconds : NAN);
        if (base && !is_base) snprintf(size, sizeof size, "%.2fx", w->bytes / base->bytes);
        char label[80];
        hk_table_row(stdout, "%s|%s%s|%s|%.3f|%.3f|%.1f|%.0f|%s|%s",
                     row_label(w, label, sizeof label), comp_name(w->comp),
                     !strcmp(w->writer, "libxml2") && w->comp == HK_VTU_NONE ? " (base64)" : "",
                     w->float32 ? "Float32" : "Float64", w->seconds, w->first, w->bytes / 1e6,
                     w->bytes / 1e6 / w->seconds, speed, size);
    }
    failed = rc = 0;
    if (bo.json) {
        hk_json j;
        if (hk_json_open(&j, bo.json)) {
            rc = 1;
        } else {
            hk_json_begin_object(&j, NULL);
            hk_json_string(&j, "bench", "output");
            hk_json_string(&j, "case", case_path ? case_path : "tet10 box");
            hk_json_int(&j, "nodes", nn);
            hk_json_int(&j, "cells", ne);
            hk_json_int(&j, "threads", nthreads);
            hk_json_int(&j, "fsync", sync);
            hk_json_int(&j, "overwrite", overwrite);
            hk_json_number(&j, "postproc_seconds", t_post);
            hk_json_number(&j, "postproc_seconds_one_thread", t_post1);
            hk_json_begin_array(&j, "writers");
            for (int k = 0; k < nrows; k++) {
                hk_json_begin_object(&j, NULL);
                hk_json_string(&j, "writer", rows[k].writer);
                hk_json_int(&j, "writers", rows[k].writers);
                hk_json_int(&j, "dd_fsync", rows[k].dd_sync);
                hk_json_string(&j, "compression", comp_name(rows[k].comp));
                hk_json_string(&j, "fields", rows[k].float32 ? "Float32" : "Float64");
                hk_json_number(&j, "seconds", rows[k].seconds);
                hk_json_number(&j, "first_seconds", rows[k].first);
                hk_json_number(&j, "bytes", rows[k].bytes);
                hk_json_end_object(&j);
            }
            hk_json_end_array(&j);
            hk_json_end_object(&j);
            rc = hk_json_close(&j) ? 1 : 0;
        }
    }
fail:
    if (failed) fprintf(stderr, "hooke bench output: %s\n", hk_error_message());
    remove(path);
    hk_fields_free(&f);
    free(u);
    hk_system_free(&s);
    hk_mesh_free(&m);
    hk_run_free(&r);
    if (case_loaded) hk_case_free(&c);
    return rc;
}
