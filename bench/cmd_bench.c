/* `hooke bench`: dispatch to the benchmark subcommands (bench.h) and their common usage. */
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* ---- subcommand table -------------------------------------------------------------------- */

typedef struct bench_cmd {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} bench_cmd;

/* One line per benchmark (see bench.h). */
static const bench_cmd bench_cmds[] = {
    {"spmv", "SpMV of every storage format and precision on FEM elasticity matrices",
     hk_bench_spmv},
    {"cg", "CG and pipelined CG per iteration vs cuSPARSE+cuBLAS CG and the CPU", hk_bench_cg},
    {"assembly", "elements/s per element type, stage times of a 1M-DOF case", hk_bench_assembly},
    {"solvers", "every method x jacobi/poly x double/mixed to 1e-8, vs the CPU", hk_bench_solvers},
    {"pcs", "every preconditioner: set-up, apply, time to 1e-8 on assembled cases, vs the CPU",
     hk_bench_pcs},
    {"app", "the bracket end to end: every stage, peak memory, vs the single-thread mesher",
     hk_bench_app},
    {"mpk", "matrix powers vs k SpMVs (k = 2..8), scg vs cg, on 2D and 3D elasticity",
     hk_bench_mpk},
    {"eigen", "LOBPCG + amg vs + jacobi, block SpMV vs k SpMVs, Rayleigh-Ritz", hk_bench_eigen},
    {"output", "stress recovery and .vtu writing (none/zlib/lz4, fp64/fp32) vs the old writer",
     hk_bench_output},
    {"modal", "the bracket's lowest modes: LOBPCG + amg vs + jacobi vs shift-invert Lanczos",
     hk_bench_modal},
    {"pcpapers", "the seed papers' sai, mlilu and fsai experiments on generated analogues",
     hk_bench_pcpapers},
    {"scale", "weak and strong scaling on the processes of mpirun vs one process",
     hk_bench_scale},
};
#define NCMDS ((int)(sizeof bench_cmds / sizeof bench_cmds[0]))

static void bench_usage(FILE *f)
{
    fprintf(f, "usage: hooke bench WHAT [options]\n\n"
               "Benchmarks print a Markdown table (and JSON with --json FILE); every figure is\n"
               "the median of repeated runs after warm-up, next to a baseline measured in the\n"
               "same run.\n\nbenchmarks:\n");
    for (int i = 0; i < NCMDS; i++)
        fprintf(f, "  %-10s %s\n", bench_cmds[i].name, bench_cmds[i].summary);
    fprintf(f, "\ncommon options:\n"
               "  --backend auto|cpu|cuda   where to run (default auto: cuda when present)\n"
               "  --size small|medium|large problem sizes (default small, ~1 min on 2 cores)\n"
               "  --json FILE               also write the results as JSON\n\n"
               "`hooke bench WHAT --help` explains each benchmark.\n");
}

int hk_cmd_bench(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        bench_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 0; i < NCMDS; i++)
        if (!strcmp(argv[1], bench_cmds[i].name)) return bench_cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "hooke bench: unknown benchmark '%s'; the benchmarks are", argv[1]);
    for (int i = 0; i < NCMDS; i++)
        fprintf(stderr, "%s %s", i ? "," : "", bench_cmds[i].name);
    fprintf(stderr, " (hooke bench --help)\n");
    return 2;
}
