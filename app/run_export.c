/* output.matrix / output.rhs / output.coordinates: the assembled system in Matrix Market, for
 * any other solver and for `hooke solve K.mtx --rhs f.mtx --block-size 3` (docs/output.md). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "case.h"

/* Node coordinates as a Matrix Market dense array, nnodes x dim, column by column as the
 * format stores arrays (all x, then all y, then all z). */
static int write_coordinates(const char *path, const hk_mesh *m)
{
    FILE *f = fopen(path, "w");
    HK_CHECK(f, HK_ERR_IO, "cannot write the coordinates file '%s': %s; check the folder", path,
             strerror(errno));
    fprintf(f, "%%%%MatrixMarket matrix array real general\n"
               "%% node coordinates written by Hooke: row i is node i (the matrix's block row i)\n"
               "%lld %d\n",
            (long long)m->nnodes, m->dim);
    for (int d = 0; d < m->dim; d++)
        for (int64_t i = 0; i < m->nnodes; i++)
            fprintf(f, "%.17g\n", m->coords[3 * i + d]);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    HK_CHECK(!bad, HK_ERR_IO, "writing the coordinates file '%s' failed (disk full?)", path);
    return 0;
}

int hk_run_export_system(const hk_case *c, hk_run *r)
{
    double t = hk_time();
    if (c->matrix_file[0]) HK_CALL(hk_mm_write_matrix(c->matrix_file, &r->sys.K));
    if (c->rhs_file[0]) HK_CALL(hk_mm_write_vector(c->rhs_file, r->sys.ndof, r->sys.f));
    if (c->coords_file[0]) HK_CALL(write_coordinates(c->coords_file, &r->mesh));
    if (c->mass_file[0] && r->sys.M.rowptr) HK_CALL(hk_mm_write_matrix(c->mass_file, &r->sys.M));
    r->t_export = hk_time() - t;
    return 0;
}
