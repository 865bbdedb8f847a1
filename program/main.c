/* The hooke command. `hooke bench` goes to bench/, which sits above app/ (its benchmarks time
 * app/'s run pipeline, so app/ cannot call into it); every other command to app/'s dispatcher.
 * Started by mpirun, the processes of the run are set up first and finished last
 * (docs/parallel.md); run, solve, info and bench scale run on several, the others refuse. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "bench.h"

/* The commands that run on several processes. */
static int distributed(int argc, char **argv)
{
    if (argc < 2) return 1;
    const char *c = argv[1];
    if (!strcmp(c, "bench")) return argc > 2 && !strcmp(argv[2], "scale");
    return !strcmp(c, "run") || !strcmp(c, "solve") || !strcmp(c, "info") || c[0] == '-';
}

int main(int argc, char **argv)
{
    if (hk_comm_world_init(&argc, &argv)) {
        if (*hk_error_message()) fprintf(stderr, "hooke: %s\n", hk_error_message());
        return hk_comm_world_end(1);
    }
    const hk_comm *w = hk_comm_world();
    if (hk_comm_size(w) > 1 && !distributed(argc, argv)) {
        if (hk_comm_rank(w) == 0)
            fprintf(stderr,
                    "hooke: '%s' runs on one process; start it without mpirun (run, solve and "
                    "bench scale run on several)\n",
                    argv[1]);
        return hk_comm_world_end(2);
    }
    hk_app_share_threads();
    int status;
    if (argc > 1 && !strcmp(argv[1], "bench"))
        status = hk_cmd_bench(argc - 1, argv + 1);
    else
        status = hk_app_main(argc, argv);
    return hk_comm_world_end(status);
}
