/* The hooke command: dispatches to the subcommands in app/. */
#include "app.h"

int main(int argc, char **argv)
{
    return hk_app_main(argc, argv);
}
