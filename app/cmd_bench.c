/* hooke bench: placeholder until its issue lands. */
#include <stdio.h>

#include "app.h"

int hk_cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "hooke bench: not implemented yet\n");
    return 1;
}
