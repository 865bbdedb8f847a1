/* The generated test matrices that `hooke solve --generate` and `hooke bench pcs` share
 * (hk_app_generate). A file of its own so that the commands using it need not call back into
 * the dispatcher that calls them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "hooke/solver.h"

/* Parse "kind:N" and generate the matrix; for the elasticity kinds also the node coordinates
 * (*coords, *dim; NULL and 0 for the others). */
int hk_app_generate(const char *spec, const char *who, hk_bcsr *A, double **coords, int *dim)
{
    *coords = NULL;
    *dim = 0;
    const char *colon = strchr(spec, ':');
    char *end = NULL;
    long n = colon ? strtol(colon + 1, &end, 10) : 0;
    if (colon && end && end != colon + 1 && !*end && (n < 1 || n > 100000)) {
        fprintf(stderr, "%s: --generate '%s': N = %ld is out of range; use 1..100000\n",
                who, spec, n);
        return -1;
    }
    if (!colon || !end || end == colon + 1 || *end) {
        fprintf(stderr,
                "%s: --generate '%s' is not KIND:N; use e.g. elasticity3d:10, "
                "elasticity2d:50, poisson:100 or convdiff:100\n",
                who, spec);
        return -1;
    }
    size_t len = (size_t)(colon - spec);
    int err;
    if (len == 12 && !strncmp(spec, "elasticity3d", len)) {
        err = hk_gen_elasticity3d((int)n, (int)n, (int)n, A);
        if (!err) err = hk_gen_elasticity3d_coords((int)n, (int)n, (int)n, coords);
        *dim = 3;
    } else if (len == 12 && !strncmp(spec, "elasticity2d", len)) {
        err = hk_gen_elasticity2d((int)n, (int)n, A);
        if (!err) err = hk_gen_elasticity2d_coords((int)n, (int)n, coords);
        *dim = 2;
    } else if (len == 7 && !strncmp(spec, "poisson", len))
        err = hk_gen_poisson2d((int)n, A);
    else if (len == 8 && !strncmp(spec, "convdiff", len))
        err = hk_gen_convdiff2d((int)n, 20.0, A);
    else if (len == 9 && !strncmp(spec, "poisson3d", len))
        err = hk_gen_poisson3d((int)n, A);
    else if (len == 10 && !strncmp(spec, "convdiff3d", len))
        err = hk_gen_convdiff3d((int)n, 20.0, A);
    else if (len == 6 && !strncmp(spec, "recirc", len))
        err = hk_gen_recirc2d((int)n, 200.0, A);
    else if (len == 8 && !strncmp(spec, "porous3d", len))
        err = hk_gen_porous3d((int)n, 6.0, 1, A);
    else if (len == 7 && !strncmp(spec, "circuit", len))
        err = hk_gen_circuit((int)n, 1, A);
    else if (len == 17 && !strncmp(spec, "convdiff-shuffled", len)) {
        err = hk_gen_convdiff2d((int)n, 20.0, A);
        if (!err) err = hk_gen_shuffle_rows(A, 1);
    } else {
        fprintf(stderr,
                "%s: unknown matrix kind in --generate '%s'; the kinds are "
                "elasticity3d, elasticity2d, poisson, convdiff, poisson3d, convdiff3d, recirc, "
                "porous3d, circuit, convdiff-shuffled\n",
                who, spec);
        return -1;
    }
    if (err) fprintf(stderr, "%s: %s\n", who, hk_error_message());
    return err ? -1 : 0;
}
