/* hooke solve: placeholder until its issue lands. */
#include <stdio.h>

#include "app.h"

int hk_cmd_solve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "hooke solve: not implemented yet\n");
    return 1;
}
