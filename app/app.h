/* The hooke command's subcommands. Each returns the process exit code. */
#ifndef HOOKE_APP_H
#define HOOKE_APP_H

int hk_app_main(int argc, char **argv);
int hk_cmd_run(int argc, char **argv);   /* app/cmd_run.c */
int hk_cmd_solve(int argc, char **argv); /* app/cmd_solve.c */
int hk_cmd_mesh(int argc, char **argv);  /* app/cmd_mesh.c */
int hk_cmd_bench(int argc, char **argv); /* app/cmd_bench.c */
int hk_cmd_info(int argc, char **argv);  /* app/cli.c */

#endif
