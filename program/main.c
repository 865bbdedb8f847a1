/* The hooke command. `hooke bench` goes to bench/, which sits above app/ (its benchmarks time
 * app/'s run pipeline, so app/ cannot call into it); every other command to app/'s dispatcher. */
#include <string.h>

#include "app.h"
#include "bench.h"

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "bench")) return hk_cmd_bench(argc - 1, argv + 1);
    return hk_app_main(argc, argv);
}
