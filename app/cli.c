/* Top-level command dispatch and `hooke info`. */
#include <stdio.h>
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
    if (hk_comm_rank(hk_comm_world()) != 0) return 0; /* rank 0 speaks for the run */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: hooke info\n\n"
                   "Print the version, whether Gmsh is built in, and each backend: the CPU's\n"
                   "threads and cores, the CUDA devices with their memory (or why CUDA is not\n"
                   "usable). It takes no options.\n");
            return 0;
        }
        fprintf(stderr,
                "hooke info: unknown argument '%s'; hooke info takes no options "
                "(hooke info --help)\n",
                argv[i]);
        return 2;
    }
    printf("hooke %s\n", HOOKE_VERSION);
#ifdef HOOKE_HAVE_GMSH
    printf("gmsh: built in\n");
#else
    printf("gmsh: not built in\n");
#endif
    if (hk_comm_rank(hk_comm_world()) != 0) return 0;
    printf("mpi: ");
    hk_comm_describe(stdout);
    printf("\npartitions: %s\n", hk_partitioner_name());
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
    if (!strcmp(cmd, "run"))
        return hk_comm_size(hk_comm_world()) > 1 ? hk_cmd_run_mpi(argc - 1, argv + 1)
                                                 : hk_cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "mesh")) return hk_cmd_mesh(argc - 1, argv + 1);
    if (!strcmp(cmd, "solve")) return hk_cmd_solve(argc - 1, argv + 1);
    if (!strcmp(cmd, "info")) return hk_cmd_info(argc - 1, argv + 1);
    fprintf(stderr, "hooke: unknown command '%s'; the commands are run, mesh, solve, bench, info "
                    "(hooke --help)\n", cmd);
    return 2;
}
