/* Top-level command dispatch, `hooke info`, and the generated test matrices that `hooke solve`
 * and `hooke bench pcs` share (hk_app_generate). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "hooke/solver.h"

#ifndef HOOKE_VERSION
#define HOOKE_VERSION "dev"
#endif

static void usage(FILE *f)
{
    fprintf(f, "hooke %s - finite-element linear elasticity with a GPU sparse solver\n\n"
               "usage: hooke <command> [options]\n\n"
               "commands:\n"
               "  run CASE.yaml     mesh, assemble, solve and write VTU for ParaView\n"
               "  mesh CASE.yaml    mesh the case's geometry once and write a .msh to reuse\n"
               "  solve A.mtx       solve a Matrix Market system with any method/preconditioner\n"
               "  bench [WHAT]      benchmarks against their baselines (spmv, solvers, assembly)\n"
               "  info              backends, devices and what was built in\n\n"
               "`hooke <command> --help` explains each command. Try:\n"
               "  hooke run cases/bracket/bracket.yaml      (then open cases/bracket/bracket.vtu)\n"
               "Case files: docs/case-format.md; your own geometry: docs/geometry.md.\n",
            HOOKE_VERSION);
}

int hk_cmd_info(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("hooke %s\n", HOOKE_VERSION);
#ifdef HOOKE_HAVE_GMSH
    printf("gmsh: built in\n");
#else
    printf("gmsh: not built in\n");
#endif
    hk_backends_describe_all(stdout);
    return 0;
}

int hk_app_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("hooke %s\n", HOOKE_VERSION);
        return 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "run")) return hk_cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "mesh")) return hk_cmd_mesh(argc - 1, argv + 1);
    if (!strcmp(cmd, "solve")) return hk_cmd_solve(argc - 1, argv + 1);
    if (!strcmp(cmd, "info")) return hk_cmd_info(argc - 1, argv + 1);
    fprintf(stderr, "hooke: unknown command '%s'; the commands are run, mesh, solve, bench, info "
                    "(hooke --help)\n", cmd);
    return 2;
}

/* Parse "kind:N" and generate the matrix; for the elasticity kinds also the node coordinates
 * (*coords, *dim; NULL and 0 for the others). */
int hk_app_generate(const char *spec, const char *who, hk_bcsr *A, double **coords, int *dim)
{
    *coords = NULL;
    *dim = 0;
    const char *colon = strchr(spec, ':');
    char *end = NULL;
    long n = colon ? strtol(colon + 1, &end, 10) : 0;
    if (colon && end && end != colon + 1 && !*end && (n < 1 || n > 100000)) {
        fprintf(stderr, "%s: --generate '%s': N = %ld is out of range; use 1..100000\n",
                who, spec, n);
        return -1;
    }
    if (!colon || !end || end == colon + 1 || *end) {
        fprintf(stderr,
                "%s: --generate '%s' is not KIND:N; use e.g. elasticity3d:10, "
                "elasticity2d:50, poisson:100 or convdiff:100\n",
                who, spec);
        return -1;
    }
    size_t len = (size_t)(colon - spec);
    int err;
    if (len == 12 && !strncmp(spec, "elasticity3d", len)) {
        err = hk_gen_elasticity3d((int)n, (int)n, (int)n, A);
        if (!err) err = hk_gen_elasticity3d_coords((int)n, (int)n, (int)n, coords);
        *dim = 3;
    } else if (len == 12 && !strncmp(spec, "elasticity2d", len)) {
        err = hk_gen_elasticity2d((int)n, (int)n, A);
        if (!err) err = hk_gen_elasticity2d_coords((int)n, (int)n, coords);
        *dim = 2;
    } else if (len == 7 && !strncmp(spec, "poisson", len))
        err = hk_gen_poisson2d((int)n, A);
    else if (len == 8 && !strncmp(spec, "convdiff", len))
        err = hk_gen_convdiff2d((int)n, 20.0, A);
    else {
        fprintf(stderr,
                "%s: unknown matrix kind in --generate '%s'; the kinds are "
                "elasticity3d, elasticity2d, poisson, convdiff\n",
                who, spec);
        return -1;
    }
    if (err) fprintf(stderr, "%s: %s\n", who, hk_error_message());
    return err ? -1 : 0;
}

