/* hooke run: placeholder until its issue lands. */
#include <stdio.h>

#include "app.h"

int hk_cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "hooke run: not implemented yet\n");
    return 1;
}
