/* `hooke bench spmv`: every storage format and precision on generated FEM elasticity matrices
 * (or a Gmsh mesh) against the CSR fp64 baseline and the device copy bandwidth, measured in the
 * same run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "hooke/fem.h"
#include "hk_impl.h"

enum { M_QUAD, M_TRI, M_TRIR, M_HEX, M_TET, M_HEX6, M_COUNT };
static const char *const matrix_names[M_COUNT] = {"quad", "tri", "trirand", "hex", "tet", "hex6"};
static const char *const matrix_desc[M_COUNT] = {
    "2D bilinear quads (bs 2)", "2D linear triangles (bs 2)",
    "2D triangles, random diagonals (rows vary as on an unstructured mesh)",
    "3D trilinear hexes (bs 3)", "3D linear tets (bs 3)",
    "the hex node graph with 6x6 blocks (bs 6: an aggregation AMG coarse level in 3D carries "
    "6 rigid-body modes per aggregate)"};
/* cells per side for small / medium / large (2D, 3D) */
static const int grid2d[3] = {250, 600, 1000};
static const int grid3d[3] = {24, 50, 100};

/* Cells per side of matrix m at size z; hex6 (36 values a block) at 3/5 of hex's. */
static int spmv_cells(int m, int z)
{
    return m == M_HEX6 ? grid3d[z] * 3 / 5 : m >= M_HEX ? grid3d[z] : grid2d[z];
}

static void spmv_usage(FILE *f)
{
    fprintf(f, "usage: hooke bench spmv [--backend auto|cpu|cuda] [--formats LIST] [--json FILE]\n"
               "                        [--size small|medium|large] [--matrices LIST]\n"
               "                        [--precisions fp64,fp32] [--cells N] [--min-time S]\n"
               "                        [--slices LIST]\n\n"
               "Times y = A x for every storage format and precision on generated elasticity\n"
               "stiffness matrices (unit square/cube, left face clamped):\n");
    for (int m = 0; m < M_COUNT; m++) {
        int g[3];
        for (int z = 0; z < 3; z++)
            g[z] = spmv_cells(m, z);
        fprintf(f, "  %-8s %s, %s: %d^%d, %d^%d, %d^%d cells (small, medium, large)\n",
                matrix_names[m], matrix_desc[m], m < M_HEX ? "2D" : "3D", g[0],
                m < M_HEX ? 2 : 3, g[1], m < M_HEX ? 2 : 3, g[2], m < M_HEX ? 2 : 3);
    }
    fprintf(f,
            "\nColumns: padding = stored / nonzeros (SBELL paper, Table 2); time = median per\n"
            "SpMV after warm-up; GFLOP/s = 2 nnz / time; GB/s = (matrix bytes + x + y) / time,\n"
            "with %%copy = that bandwidth over the device's copy bandwidth (vec_copy, measured\n"
            "in the same run); speedup = CSR fp64 time / time (CSR fp64 is always measured);\n"
            "err = max |y - y_ref| / max |y_ref| against the host block CSR product.\n"
            "The format column gives the slice height S of the sliced formats and, on cuda,\n"
            "the threads per block row (a range: long slices get more, format.tpr=auto);\n"
            "(auto) marks the format that format=auto, the solver's default, chooses.\n"
            "Set-up: upload = the block CSR copied to the backend once; build = the format\n"
            "built there from it (mat_build); host conversion = the same format made on the\n"
            "host by hk_fmt_from_bcsr, the baseline (formats used to be built that way).\n\n"
            "  --formats LIST     comma-separated: csr,bsr,ell,sell,bell,sbell,cusparse-csr,\n"
            "                     cusparse-bsr,pcsr (default: all the backend supports;\n"
            "                     cusparse-* need cuda)\n"
            "  --matrices LIST    quad,tri,trirand,hex,tet,hex6 (default all)\n"
            "  --precisions LIST  fp64,fp32 (default both)\n"
            "  --cells N          N cells per side for every matrix instead of --size\n"
            "  --paper            the SBELL paper's Table 1 systems at their sizes (tri 1.06M,\n"
            "                     quad 0.32M, tet 0.62M, hex 0.5M unknowns) plus hex 1M and\n"
            "                     24k DOFs, trirand 1.06M and hex6 0.55M (--matrices filters\n"
            "                     them)\n"
            "  --mesh FILE        also a Gmsh geometry (.geo/.step/.msh) meshed at run time\n"
            "                     (--mesh-size H, --order 1|2), one material, no supports;\n"
            "                     alone (without --matrices/--paper) it is the only matrix\n"
            "  --min-time S       time each SpMV for at least S seconds (default 0.15)\n"
            "  --slices LIST      slice sizes S for sell and sbell, e.g. 8,16,32,64,128 (the\n"
            "                     SBELL paper's Figures 6-7; default format.slice or 32)\n"
            "  --pcsr-pads LIST   padding factors for pcsr, e.g. 1,2,4,8 (the GPU Krylov\n"
            "                     thesis's Fig. 3.6 and Table 3.1; default format.pcsr.pad or 4)\n"
            "  --pcsr-prefetch LIST  partitions per thread block for pcsr, e.g. 1,2,4,8 (the\n"
            "                     thesis's Fig. 3.7; default format.pcsr.prefetch or 4)\n"
            "  format.slice=S format.sigma=auto|0|N format.tpr=T format.csr.kernel=K\n"
            "  format.pcsr.partition=P format.pcsr.pad=N format.pcsr.prefetch=F\n"
            "                     format options (hooke solve --help)\n"
            "\nOn cuda, csr is also measured with each of its kernels (thread: one row per\n"
            "thread, warp: one row per warp, vector: a sub-warp per row, adaptive: row blocks\n"
            "reduced in shared memory), and after each matrix a line gives pcsr's speed-up over\n"
            "the row-per-thread and row-per-warp kernels (the thesis's Table 3.2).\n");
}

typedef struct spmv_row {
    const char *matrix;
    hk_format fmt;
    hk_precision prec;
    hk_mat_info info;
    int slice; /* S of sell/sbell, 0 otherwise */
    const char *kernel;      /* csr on cuda: the format.csr.kernel asked for; NULL otherwise */
    int pad, partition, prefetch; /* pcsr; 0 otherwise */
    /* set-up: upload of the block CSR, the format's build on the backend from it, and the
     * host conversion hk_fmt_from_bcsr (what every format cost before it was built on the
     * backend, and still the reference the tests compare with) */
    double upload_s, build_s, host_convert_s;
    double seconds, gflops, gbs, speedup, err;
    double vs_cusparse_csr, vs_cusparse_bsr; /* same precision; 0 when not measured */
    double vs_csr_thread, vs_csr_warp;       /* csr thread / warp time over this row's */
    int is_auto; /* the format format=auto gives this matrix in this precision */
} spmv_row;

/* The row format=auto would run: its format with the default CSR kernel and slice height. */
static int spmv_row_is_auto(const spmv_row *r)
{
    return r->is_auto && (!r->kernel || !strcmp(r->kernel, "auto")) &&
           (!r->slice || r->slice == 32);
}

/* Parse a comma-separated list against names[n]; sets sel[i]. */
static int parse_list(const char *opt, const char *text, const char *const *names, int n, int *sel)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    for (int i = 0; i < n; i++)
        sel[i] = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int i;
        for (i = 0; i < n && strcmp(tok, names[i]); i++) {
        }
        if (i == n) {
            fprintf(stderr, "hooke bench spmv: %s: '%s' is unknown; choose from", opt, tok);
            for (int k = 0; k < n; k++)
                fprintf(stderr, "%s %s", k ? "," : "", names[k]);
            fprintf(stderr, "\n");
            return 1;
        }
        sel[i] = 1;
    }
    return 0;
}

/* Convert, check against the reference, time; fills row. */
static int spmv_measure(const hk_backend *be, const hk_bcsr *K, const double *x, const double *yref,
                        hk_format f, hk_precision p, hk_options *o, double min_time, spmv_row *row)
{
    int ierr;
    struct {
        hk_mat *A;
        hk_vec *x, *y;
    } c = {NULL, NULL, NULL};
    double *y = NULL;
    const int64_t n = K->nbrows * K->bs;
    hk_bmat Kd = {0};
    hk_fmt Fh = {0};
    int slice = 32, sigma = 0;
    HK_TRY(be->sync());
    double t0 = hk_time();
    HK_TRY(hk_bmat_upload(be, K, &Kd));
    HK_TRY(be->sync());
    row->upload_s = hk_time() - t0;
    hk_format fauto;
    HK_TRY(hk_format_auto(&Kd, p, &fauto));
    row->is_auto = fauto == f;
    t0 = hk_time();
    HK_TRY(hk_mat_create_bmat(&Kd, f, p, o, &c.A));
    HK_TRY(be->sync());
    row->build_s = hk_time() - t0;
    hk_bmat_free(&Kd);
    slice = c.A->slice; /* the request as the backend got it (sigma may be auto) */
    sigma = c.A->sigma;
    t0 = hk_time();
    if (f == HK_FMT_PCSR)
        HK_TRY(hk_fmt_pcsr_from_bcsr(K, c.A->pcsr_partition, c.A->pcsr_pad, &Fh));
    else
        HK_TRY(hk_fmt_from_bcsr(K, f, slice, sigma, &Fh));
    row->host_convert_s = hk_time() - t0;
    hk_fmt_free(&Fh);
    hk_mat_get_info(c.A, &row->info);
    row->slice = (f == HK_FMT_SELL || f == HK_FMT_SBELL) ? c.A->slice : 0;
    if (f == HK_FMT_PCSR) {
        row->pad = c.A->pcsr_pad;
        row->partition = c.A->pcsr_partition;
        row->prefetch = c.A->pcsr_prefetch;
    }
    HK_TRY(hk_vec_create(be, n, p, &c.x));
    HK_TRY(hk_vec_create(be, n, p, &c.y));
    HK_TRY(hk_vec_upload(c.x, x));
    HK_TRY(hk_mat_spmv(c.A, c.x, c.y));
    HK_TRY(be->sync());
    HK_TRY(hk_malloc((size_t)n * sizeof *y, &y));
    HK_TRY(hk_vec_download(c.y, y));
    double dmax = 0, ymax = 1e-300;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(y[i] - yref[i]);
        if (!(d <= dmax)) dmax = d;
        if (fabs(yref[i]) > ymax) ymax = fabs(yref[i]);
    }
    row->err = dmax / ymax;
    HK_TRY(hk_bench_time_spmv(c.A, c.x, c.y, 3, 7, min_time, &row->seconds));
    const double vb = p == HK_FP64 ? 8.0 : 4.0;
    row->fmt = f;
    row->prec = p;
    row->gflops = 2.0 * (double)row->info.nnz / row->seconds * 1e-9;
    row->gbs = ((double)row->info.bytes + 2.0 * (double)n * vb) / row->seconds * 1e-9;
fail:
    hk_bmat_free(&Kd);
    hk_fmt_free(&Fh);
    free(y);
    hk_vec_destroy(c.x);
    hk_vec_destroy(c.y);
    hk_mat_destroy(c.A);
    return ierr;
}

/* One matrix to measure: a generator with its cells per side, or a Gmsh mesh. */
typedef struct spmv_job {
    int m;            /* M_*, or -1 for the mesh */
    int cells;        /* cells per side of the generator */
    char label[64];
} spmv_job;

/* The SBELL paper's Table 1 systems at their sizes (2D triangles ~1.06M unknowns, 2D quads
 * ~0.32M, 3D tets ~0.62M, 3D hexes ~0.5M), plus the 3D hex systems of ANCHORS.md: ~1M DOFs
 * (70^3 nodes) and ~24k DOFs (20^3 nodes). */
static const spmv_job paper_jobs[] = {
    {M_TRI, 727, "tri-1.06M"},  {M_QUAD, 399, "quad-0.32M"}, {M_TET, 58, "tet-0.62M"},
    {M_HEX, 54, "hex-0.5M"},    {M_HEX, 69, "hex-1M"},       {M_HEX, 19, "hex-24k"},
    {M_TRIR, 727, "trirand-1.06M"}, {M_HEX6, 44, "hex6-0.55M"}};

/* Stiffness of a Gmsh geometry (meshed at run time with size h and order, or a .msh), one
 * steel-like material on every region, no supports: the SpMV does not need them. */
static int mesh_matrix(const char *path, double h, int order, hk_bcsr *K)
{
    int ierr;
    hk_mesh mesh = {0};
    hk_material *mat = NULL;
    hk_mesh_options mo = {.size = h, .order = order, .renumber = 1};
    HK_CALL(hk_mesh_load(path, &mo, &mesh));
    HK_TRY(hk_calloc((size_t)(mesh.nregions > 0 ? mesh.nregions : 1), sizeof *mat, &mat));
    for (int r = 0; r < mesh.nregions; r++) {
        snprintf(mat[r].name, sizeof mat[r].name, "steel");
        mat[r].E = 210e9;
        mat[r].nu = 0.3;
        mat[r].rho = 7850;
    }
    hk_problem p = {.mesh = &mesh,
                    .analysis = mesh.dim == 3 ? HK_SOLID : HK_PLANE_STRESS,
                    .thickness = 1.0,
                    .materials = mat};
    HK_TRY(hk_assemble_stiffness(&p, K));
    ierr = 0;
fail:
    free(mat);
    hk_mesh_free(&mesh);
    return ierr;
}

/* The hex mesh's node graph with 6x6 blocks: block (a, b) of a 6x6 block repeats the 3x3
 * block of the hex elasticity matrix at (a mod 3, b mod 3), halved off the 3x3 diagonal
 * blocks, so K stays symmetric; only the layout matters to the SpMV (the bench checks each
 * product against the host block CSR product). */
static int gen_hex6(int cells, hk_bcsr *K)
{
    hk_bcsr K3 = {0};
    HK_CALL(hk_gen_elasticity3d(cells, cells, cells, &K3));
    const int64_t nb = K3.nbrows, nnzb = K3.rowptr[nb];
    int ierr = 0;
    memset(K, 0, sizeof *K);
    K->bs = 6;
    K->nbrows = K->nbcols = nb;
    HK_TRY(hk_malloc((size_t)(nb + 1) * sizeof *K->rowptr, &K->rowptr));
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * sizeof *K->colind, &K->colind));
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * 36 * sizeof *K->val, &K->val));
    memcpy(K->rowptr, K3.rowptr, (size_t)(nb + 1) * sizeof *K->rowptr);
    memcpy(K->colind, K3.colind, (size_t)nnzb * sizeof *K->colind);
    for (int64_t q = 0; q < nnzb; q++)
        for (int a = 0; a < 6; a++)
            for (int b = 0; b < 6; b++)
                K->val[q * 36 + a * 6 + b] =
                    K3.val[q * 9 + (a % 3) * 3 + b % 3] * (a / 3 == b / 3 ? 1.0 : 0.5);
fail:
    if (ierr) hk_bcsr_free(K);
    hk_bcsr_free(&K3);
    return ierr;
}

static int gen_matrix(int m, int cells, hk_bcsr *K)
{
    const int n2 = cells, n3 = cells;
    switch (m) {
    case M_QUAD:
        return hk_gen_elasticity2d(n2, n2, K);
    case M_TRI:
        return hk_gen_elasticity2d_tri(n2, n2, K);
    case M_TRIR:
        return hk_gen_elasticity2d_tri_random(n2, n2, 1u, K);
    case M_HEX:
        return hk_gen_elasticity3d(n3, n3, n3, K);
    case M_HEX6:
        return gen_hex6(n3, K);
    default:
        return hk_gen_elasticity3d_tet(n3, n3, n3, K);
    }
}

int hk_bench_spmv(int argc, char **argv)
{
    hk_bench_opts bo = HK_BENCH_OPTS_DEFAULT;
    const char *formats = NULL, *matrices = NULL, *precisions = NULL;
    hk_options *o = NULL;
    int rc = 1, nrows = 0, cap = 0, cells = 0, nslice_list = 0, slice_list[16];
    int npad_list = 0, pad_list[16], npf_list = 0, pf_list[16];
    int paper = 0, mesh_order = 1;
    const char *mesh_path = NULL;
    double min_time = 0.15, mesh_size = 0;
    spmv_job *jobs = NULL;
    int njobs = 0;
    spmv_row *rows = NULL;
    if (hk_options_create(&o)) goto error;
    for (int i = 1; i < argc;) {
        int r = hk_bench_option(argc, argv, &i, &bo, spmv_usage);
        if (r == HK_BENCH_HELP) rc = 0;
        if (r < 0) goto done;
        if (r > 0) continue;
        const char *a = argv[i];
        if ((!strcmp(a, "--formats") || !strcmp(a, "--matrices") ||
                    !strcmp(a, "--precisions")) &&
                   i + 1 < argc) {
            const char **dst = a[2] == 'f' ? &formats : a[2] == 'm' ? &matrices : &precisions;
            *dst = argv[i + 1];
            i += 2;
        } else if (!strcmp(a, "--paper")) {
            paper = 1;
            i++;
        } else if (!strcmp(a, "--mesh") && i + 1 < argc) {
            mesh_path = argv[i + 1];
            i += 2;
        } else if ((!strcmp(a, "--mesh-size") || !strcmp(a, "--order")) && i + 1 < argc) {
            char *end;
            double v = strtod(argv[i + 1], &end);
            const int is_order = a[2] == 'o';
            if (*end || !(v > 0) || (is_order && v != 1 && v != 2)) {
                fprintf(stderr, "hooke bench spmv: %s %s must be %s\n", a, argv[i + 1],
                        is_order ? "1 or 2" : "a positive element size");
                rc = 2;
                goto done;
            }
            if (is_order)
                mesh_order = (int)v;
            else
                mesh_size = v;
            i += 2;
        } else if (!strcmp(a, "--cells") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[i + 1], &end, 10);
            if (*end || v < 1 || v > 4000) {
                fprintf(stderr, "hooke bench spmv: --cells %s must be an integer in 1..4000\n",
                        argv[i + 1]);
                rc = 2;
                goto done;
            }
            cells = (int)v;
            i += 2;
        } else if (!strcmp(a, "--slices") && i + 1 < argc) {
            char buf[256], *tok, *end;
            snprintf(buf, sizeof buf, "%s", argv[i + 1]);
            for (tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                long v = strtol(tok, &end, 10);
                if (*end || v < 1 || v > 1024 || nslice_list == 16) {
                    fprintf(stderr,
                            "hooke bench spmv: --slices %s: each slice size must be an integer "
                            "in 1..1024, at most 16 of them\n",
                            argv[i + 1]);
                    rc = 2;
                    goto done;
                }
                slice_list[nslice_list++] = (int)v;
            }
            i += 2;
        } else if ((!strcmp(a, "--pcsr-pads") || !strcmp(a, "--pcsr-prefetch")) && i + 1 < argc) {
            const int pads = !strcmp(a, "--pcsr-pads");
            int *list = pads ? pad_list : pf_list, *cnt = pads ? &npad_list : &npf_list;
            char buf[256], *tok, *end;
            snprintf(buf, sizeof buf, "%s", argv[i + 1]);
            for (tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                long v = strtol(tok, &end, 10);
                if (*end || v < 1 || v > (pads ? 32 : 64) || (pads && (v & (v - 1))) ||
                    *cnt == 16) {
                    fprintf(stderr,
                            "hooke bench spmv: %s %s: each value must be %s, at most 16 of "
                            "them\n",
                            a, argv[i + 1],
                            pads ? "a power of two in 1..32" : "an integer in 1..64");
                    rc = 2;
                    goto done;
                }
                list[(*cnt)++] = (int)v;
            }
            i += 2;
        } else if (!strcmp(a, "--min-time") && i + 1 < argc) {
            char *end;
            min_time = strtod(argv[i + 1], &end);
            if (*end || !(min_time >= 0 && min_time <= 60)) {
                fprintf(stderr, "hooke bench spmv: --min-time %s must be seconds in 0..60\n",
                        argv[i + 1]);
                rc = 2;
                goto done;
            }
            i += 2;
        } else if (strchr(a, '=') && a[0] != '-') {
            if (hk_options_parse(o, a)) goto error;
            i++;
        } else {
            fprintf(stderr,
                    "hooke bench spmv: unknown or incomplete option '%s' (hooke bench "
                    "spmv --help)\n",
                    a);
            rc = 2;
            goto done;
        }
    }

    const hk_backend *be;
    if (hk_bench_backend("hooke bench spmv", bo.backend, &be)) {
        rc = 1;
        goto done;
    }
    const int cuda = strcmp(hk_backend_name(be), "cpu") != 0;
    const char *fnames[HK_FMT_COUNT];
    for (int f = 0; f < HK_FMT_COUNT; f++)
        fnames[f] = hk_format_name((hk_format)f);
    int fsel[HK_FMT_COUNT], msel[M_COUNT], psel[2];
    static const char *const pnames[2] = {"fp64", "fp32"};
    for (int f = 0; f < HK_FMT_COUNT; f++)
        fsel[f] = cuda || (f != HK_FMT_CUSPARSE_CSR && f != HK_FMT_CUSPARSE_BSR);
    for (int m = 0; m < M_COUNT; m++)
        msel[m] = 1;
    psel[0] = psel[1] = 1;
    if (formats && parse_list("--formats", formats, fnames, HK_FMT_COUNT, fsel)) goto done;
    if (matrices && parse_list("--matrices", matrices, matrix_names, M_COUNT, msel)) goto done;
    if (precisions && parse_list("--precisions", precisions, pnames, 2, psel)) goto done;
    jobs = calloc(M_COUNT + sizeof paper_jobs / sizeof paper_jobs[0] + 1, sizeof *jobs);
    if (!jobs) goto done;
    if (paper) {
        for (size_t k = 0; k < sizeof paper_jobs / sizeof paper_jobs[0]; k++)
            if (msel[paper_jobs[k].m] || !matrices) jobs[njobs++] = paper_jobs[k];
    } else if (!mesh_path || matrices) {
        for (int m = 0; m < M_COUNT; m++) {
            if (!msel[m]) continue;
            jobs[njobs].m = m;
            jobs[njobs].cells = cells > 0 ? cells : spmv_cells(m, bo.size);
            snprintf(jobs[njobs].label, sizeof jobs[njobs].label, "%s", matrix_names[m]);
            njobs++;
        }
    }
    if (mesh_path) {
        const char *base = strrchr(mesh_path, '/');
        jobs[njobs].m = -1;
        snprintf(jobs[njobs].label, sizeof jobs[njobs].label, "%s", base ? base + 1 : mesh_path);
        njobs++;
    }
    for (int f = 0; f < HK_FMT_COUNT; f++)
        if (fsel[f] && !cuda && (f == HK_FMT_CUSPARSE_CSR || f == HK_FMT_CUSPARSE_BSR)) {
            fprintf(stderr, "hooke bench spmv: format %s needs the cuda backend; use %s on cpu\n",
                    fnames[f], f == HK_FMT_CUSPARSE_CSR ? "csr" : "bsr");
            rc = 2;
            goto done;
        }

    /* the csr kernel the user asked for (restored after the kernel rows of each matrix) */
    const char *user_kernel = "auto";
    if (hk_options_has(o, "format.csr.kernel") &&
        hk_options_get_string(o, "format.csr.kernel", &user_kernel))
        goto error;
    static const char *const csr_kernels[] = {"thread", "warp", "vector", "adaptive"};

    double copy_bps = 0;
    long long ncopy = cuda ? (1LL << 26) : (1LL << 23); /* 512 MiB / 64 MiB per vector */
    if (hk_bench_copy_bandwidth(be, ncopy, min_time, &copy_bps)) goto error;

    printf("## hooke bench spmv (%s, backend %s)\n\n", hk_bench_size_name(bo.size),
           hk_backend_name(be));
    hk_backend_describe(be, stdout);
    printf("\ncopy bandwidth (vec_copy of %lld doubles, read + write): %.1f GB/s\n\n", ncopy,
           copy_bps * 1e-9);
    hk_table_head(stdout, "lrrllrrrrrrrrrrrr",
                  "matrix|dofs|nnz|format|prec|padding|time (us)|GFLOP/s|GB/s|%%copy|"
                  "vs csr fp64|vs cusparse-csr|vs cusparse-bsr|err|upload (ms)|build (ms)|"
                  "host conversion (ms)");

    for (int jb = 0; jb < njobs; jb++) {
        const spmv_job *job = &jobs[jb];
        const int first_row = nrows;
        hk_bcsr K = {0};
        double *x = NULL, *yref = NULL;
        if (job->m >= 0 ? gen_matrix(job->m, job->cells, &K)
                        : mesh_matrix(mesh_path, mesh_size, mesh_order, &K))
            goto error;
        const int64_t n = K.nbrows * K.bs;
        x = malloc((size_t)n * sizeof *x);
        yref = malloc((size_t)n * sizeof *yref);
        if (!x || !yref) {
            fprintf(stderr, "hooke bench spmv: out of memory for the vectors\n");
            free(x), free(yref), hk_bcsr_free(&K);
            goto done;
        }
        for (int64_t i = 0; i < n; i++)
            x[i] = 1.0 + 0.5 * sin(0.001 * (double)i);
        hk_bcsr_spmv(&K, x, yref);
        double base = 0;
        /* CSR fp64 first: the baseline of every ratio. Variants of a format: slice sizes
         * (sell, sbell), kernels (csr on cuda: variant 0 is the kernel asked for, then one
         * per kernel), padding factor x prefetch (pcsr). */
        for (int f = -1; f < HK_FMT_COUNT; f++)
            for (int p = 0; p < 2; p++) {
                const int sliced = f == HK_FMT_SELL || f == HK_FMT_SBELL;
                const int kernels = f == HK_FMT_CSR && cuda;
                const int npads = npad_list ? npad_list : 1, npfs = npf_list ? npf_list : 1;
                const int nvar = sliced    ? (nslice_list ? nslice_list : 1)
                                 : kernels ? 5
                                 : f == HK_FMT_PCSR ? npads * npfs
                                                    : 1;
                for (int si = 0; si < nvar; si++) {
                    const int is_base = f < 0;
                    if (is_base && p == 1) continue;
                    if (!is_base && (!fsel[f] || !psel[p])) continue;
                    if (!is_base && f == HK_FMT_CSR && p == 0 && si == 0)
                        continue; /* already measured */
                    char sv[16];
                    int oerr = 0;
                    if (sliced && nslice_list) {
                        snprintf(sv, sizeof sv, "%d", slice_list[si]);
                        oerr = hk_options_set(o, "format.slice", sv);
                    }
                    if (kernels)
                        oerr = hk_options_set(o, "format.csr.kernel",
                                              si ? csr_kernels[si - 1] : user_kernel);
                    if (f == HK_FMT_PCSR && npad_list) {
                        snprintf(sv, sizeof sv, "%d", pad_list[si / npfs]);
                        oerr = oerr || hk_options_set(o, "format.pcsr.pad", sv);
                    }
                    if (f == HK_FMT_PCSR && npf_list) {
                        snprintf(sv, sizeof sv, "%d", pf_list[si % npfs]);
                        oerr = oerr || hk_options_set(o, "format.pcsr.prefetch", sv);
                    }
                    if (oerr) {
                        free(x), free(yref), hk_bcsr_free(&K);
                        goto error;
                    }
                    if (nrows == cap) {
                        cap = cap ? 2 * cap : 64;
                        spmv_row *nr = realloc(rows, (size_t)cap * sizeof *rows);
                        if (!nr) {
                            fprintf(stderr, "hooke bench spmv: out of memory\n");
                            free(x), free(yref), hk_bcsr_free(&K);
                            goto done;
                        }
                        rows = nr;
                    }
                    spmv_row *r = &rows[nrows];
                    memset(r, 0, sizeof *r);
                    r->matrix = job->label;
                    if (cuda && (is_base || f == HK_FMT_CSR))
                        r->kernel = si ? csr_kernels[si - 1] : user_kernel;
                    oerr = spmv_measure(be, &K, x, yref, is_base ? HK_FMT_CSR : (hk_format)f,
                                        (hk_precision)p, o, min_time, r);
                    if (!oerr && kernels)
                        oerr = hk_options_set(o, "format.csr.kernel", user_kernel);
                    if (oerr) {
                        free(x), free(yref), hk_bcsr_free(&K);
                        goto error;
                    }
                    if (is_base) base = r->seconds;
                    r->speedup = base / r->seconds;
                    nrows++;
                }
            }
        /* ratios to cuSPARSE of the same precision (measured last), then the rows */
        for (int i = first_row; i < nrows; i++)
            for (int k = first_row; k < nrows; k++) {
                if (rows[k].prec != rows[i].prec) continue;
                if (rows[k].fmt == HK_FMT_CUSPARSE_CSR)
                    rows[i].vs_cusparse_csr = rows[k].seconds / rows[i].seconds;
                if (rows[k].fmt == HK_FMT_CUSPARSE_BSR)
                    rows[i].vs_cusparse_bsr = rows[k].seconds / rows[i].seconds;
                if (rows[k].fmt == HK_FMT_CSR && rows[k].kernel &&
                    !strcmp(rows[k].kernel, "thread"))
                    rows[i].vs_csr_thread = rows[k].seconds / rows[i].seconds;
                if (rows[k].fmt == HK_FMT_CSR && rows[k].kernel && !strcmp(rows[k].kernel, "warp"))
                    rows[i].vs_csr_warp = rows[k].seconds / rows[i].seconds;
            }
        for (int i = first_row; i < nrows; i++) {
            const spmv_row *r = &rows[i];
            char fname[48], vc[16], vb[16];
            if (r->slice && r->info.lanes_max > r->info.lanes_min)
                snprintf(fname, sizeof fname, "%s S=%d %d-%d lanes", hk_format_name(r->fmt),
                         r->slice, r->info.lanes_min, r->info.lanes_max);
            else if (r->slice && r->info.lanes_min > 1)
                snprintf(fname, sizeof fname, "%s S=%d %d lanes", hk_format_name(r->fmt), r->slice,
                         r->info.lanes_min);
            else if (r->slice)
                snprintf(fname, sizeof fname, "%s S=%d", hk_format_name(r->fmt), r->slice);
            else if (r->kernel)
                snprintf(fname, sizeof fname, "%s %s", hk_format_name(r->fmt), r->kernel);
            else if (r->pad && (npad_list || npf_list))
                snprintf(fname, sizeof fname, "%s n=%d pf=%d", hk_format_name(r->fmt), r->pad,
                         r->prefetch);
            else
                snprintf(fname, sizeof fname, "%s", hk_format_name(r->fmt));
            if (spmv_row_is_auto(r)) {
                const size_t len = strlen(fname);
                snprintf(fname + len, sizeof fname - len, " (auto)");
            }
            hk_table_row(stdout,
                         "%s|%lld|%lld|%s|%s|%.3f|%.1f|%.2f|%.1f|%.0f%%|%.2fx|%s|%s|%.1e|%.2f|"
                         "%.2f|%.2f",
                         r->matrix, (long long)r->info.nrows, (long long)r->info.nnz, fname,
                         pnames[r->prec], r->info.padding, r->seconds * 1e6, r->gflops, r->gbs,
                         100.0 * r->gbs * 1e9 / copy_bps, r->speedup,
                         hk_bench_ratio_text(vc, sizeof vc, r->vs_cusparse_csr),
                         hk_bench_ratio_text(vb, sizeof vb, r->vs_cusparse_bsr), r->err,
                         r->upload_s * 1e3, r->build_s * 1e3, r->host_convert_s * 1e3);
        }
        /* the thesis's Table 3.2: PCSR over the row-per-thread and row-per-warp CSR kernels */
        for (int i = first_row; i < nrows; i++) {
            const spmv_row *r = &rows[i];
            if (r->fmt != HK_FMT_PCSR || !(r->vs_csr_thread > 0) || !(r->vs_csr_warp > 0))
                continue;
            printf("\n%s, pcsr n=%d P=%d pf=%d %s: %.2fx over row-per-thread csr, %.2fx over "
                   "row-per-warp csr, %.2fx over cusparse-csr (thesis, Table 3.2: 3.37x and "
                   "2.45x on a GT8800)\n",
                   r->matrix, r->pad, r->partition, r->prefetch, pnames[r->prec],
                   r->vs_csr_thread, r->vs_csr_warp, r->vs_cusparse_csr);
        }
        fflush(stdout);
        free(x);
        free(yref);
        hk_bcsr_free(&K);
    }
    if (hk_options_check_used(o, "format.slice, format.sigma, format.tpr, format.csr.kernel, "
                                 "format.pcsr.partition, format.pcsr.pad, format.pcsr.prefetch"))
        goto error;
    /* copy bandwidth again at the end: on a shared machine the better of the two is the
     * figure the SpMV rates should be read against */
    double copy2 = 0;
    if (hk_bench_copy_bandwidth(be, ncopy, min_time, &copy2)) goto error;
    if (copy2 > copy_bps) copy_bps = copy2;
    printf("\ncopy bandwidth measured again at the end: %.1f GB/s (best of the two: %.1f GB/s)\n",
           copy2 * 1e-9, copy_bps * 1e-9);

    if (bo.json) {
        hk_json j;
        if (hk_json_open(&j, bo.json)) goto done;
        hk_json_begin_object(&j, NULL);
        hk_json_string(&j, "benchmark", "spmv");
        hk_json_string(&j, "backend", hk_backend_name(be));
        hk_json_string(&j, "size", hk_bench_size_name(bo.size));
        hk_json_int(&j, "cells", cells);
        hk_json_int(&j, "paper_sizes", paper);
        hk_json_number(&j, "copy_bandwidth_GBs", copy_bps * 1e-9);
        hk_json_int(&j, "copy_doubles", ncopy);
        hk_json_begin_array(&j, "results");
        for (int i = 0; i < nrows; i++) {
            const spmv_row *r = &rows[i];
            hk_json_begin_object(&j, NULL);
            hk_json_string(&j, "matrix", r->matrix);
            hk_json_string(&j, "format", hk_format_name(r->fmt));
            hk_json_int(&j, "auto", spmv_row_is_auto(r));
            hk_json_string(&j, "precision", pnames[r->prec]);
            hk_json_int(&j, "slice", r->slice);
            hk_json_string(&j, "csr_kernel", r->kernel ? r->kernel : "");
            hk_json_int(&j, "pcsr_pad", r->pad);
            hk_json_int(&j, "pcsr_partition", r->partition);
            hk_json_int(&j, "pcsr_prefetch", r->prefetch);
            hk_json_int(&j, "bs", r->info.bs);
            hk_json_int(&j, "rows", r->info.nrows);
            hk_json_int(&j, "nnz", r->info.nnz);
            hk_json_int(&j, "stored", r->info.stored);
            hk_json_number(&j, "padding", r->info.padding);
            hk_json_int(&j, "lanes_min", r->info.lanes_min);
            hk_json_int(&j, "lanes_max", r->info.lanes_max);
            hk_json_int(&j, "matrix_bytes", (long long)r->info.bytes);
            hk_json_number(&j, "upload_s", r->upload_s);
            hk_json_number(&j, "build_s", r->build_s);
            hk_json_number(&j, "host_convert_s", r->host_convert_s);
            hk_json_number(&j, "time_s", r->seconds);
            hk_json_number(&j, "gflops", r->gflops);
            hk_json_number(&j, "GBs", r->gbs);
            hk_json_number(&j, "fraction_of_copy_bandwidth", r->gbs * 1e9 / copy_bps);
            hk_json_number(&j, "speedup_vs_csr_fp64", r->speedup);
            hk_json_number(&j, "speedup_vs_cusparse_csr", r->vs_cusparse_csr);
            hk_json_number(&j, "speedup_vs_cusparse_bsr", r->vs_cusparse_bsr);
            hk_json_number(&j, "speedup_vs_csr_thread", r->vs_csr_thread);
            hk_json_number(&j, "speedup_vs_csr_warp", r->vs_csr_warp);
            hk_json_number(&j, "rel_err", r->err);
            hk_json_end_object(&j);
        }
        hk_json_end_array(&j);
        hk_json_end_object(&j);
        if (hk_json_close(&j)) {
            fprintf(stderr, "hooke bench spmv: writing %s failed\n", bo.json);
            goto done;
        }
        printf("\nwrote %s\n", bo.json);
    }
    rc = 0;
    goto done;
error:
    fprintf(stderr, "hooke bench spmv: %s\n", hk_error_message());
    rc = 1;
done:
    free(rows);
    free(jobs);
    hk_options_destroy(o);
    return rc;
}
