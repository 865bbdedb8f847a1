/* hooke mesh: mesh a case's geometry once and write it as a Gmsh .msh, so that the case (or
 * others) can point geometry.file at it and skip meshing (docs/geometry.md, "Reusing a
 * mesh"). The mesh is written before the node renumbering of the run: a case that reads it
 * renumbers it exactly as a run that meshes the geometry itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "case.h"

static void mesh_help(FILE *f)
{
    fprintf(f,
            "usage: hooke mesh CASE.yaml -o PART.msh [--set KEY=VALUE ...] [--verbose]\n\n"
            "Mesh the case's geometry with its geometry: keys (size, order, order_by, quad,\n"
            "refine, threads, algorithm2d, algorithm3d) and write the mesh as a Gmsh .msh file\n"
            "(format 2.2, regions and boundaries as named physical groups). A case with\n"
            "  geometry: {file: PART.msh}\n"
            "then reads it as is: the same nodes, elements and groups, no meshing.\n\n"
            "  -o, --output FILE.msh   where to write (required)\n"
            "  --set KEY=VALUE         override a case key, as with hooke run\n"
            "  --verbose               Gmsh's own messages\n"
            "  --quiet                 no progress lines\n");
}

int hk_cmd_mesh(int argc, char **argv)
{
    const char *case_path = NULL, *out = NULL;
    int verbose = 0, quiet = 0, nsets = 0, rc = 1;
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    if (!sets) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            mesh_help(stdout);
            free(sets);
            return 0;
        } else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
            verbose = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--set") ||
                    !strcmp(a, "-s")) &&
                   i + 1 < argc) {
            if (a[1] == 'o' || a[2] == 'o')
                out = argv[++i];
            else
                sets[nsets++] = argv[++i];
        } else if (!strncmp(a, "--set=", 6)) {
            sets[nsets++] = a + 6;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr,
                    "hooke mesh: unknown or incomplete option '%s'; the options are -o, --set, "
                    "--verbose, --quiet (hooke mesh --help)\n",
                    a);
            free(sets);
            return 2;
        } else if (case_path) {
            fprintf(stderr, "hooke mesh: one case file at a time ('%s' and '%s')\n", case_path,
                    a);
            free(sets);
            return 2;
        } else {
            case_path = a;
        }
    }
    size_t lo = out ? strlen(out) : 0;
    if (!case_path || !out || lo < 4 || strcmp(out + lo - 4, ".msh")) {
        fprintf(stderr, "hooke mesh: %s; usage: hooke mesh CASE.yaml -o PART.msh\n",
                !case_path ? "no case file" : !out ? "no output file (-o PART.msh)"
                                                   : "the output must be a .msh file");
        free(sets);
        return 2;
    }
    hk_case c;
    hk_mesh m;
    memset(&m, 0, sizeof m);
    int err = hk_case_load(case_path, nsets, sets, &c);
    free(sets);
    if (err) {
        fprintf(stderr, "hooke mesh: %s\n", hk_error_message());
        return 1;
    }
    double t = hk_time();
    if (c.generate) {
        if (c.gen_dim == 2)
            err = hk_mesh_rectangle(c.gen_size[0], c.gen_size[1], c.gen_cells[0], c.gen_cells[1],
                                    c.gen_element, &m);
        else
            err = hk_mesh_box(c.gen_size[0], c.gen_size[1], c.gen_size[2], c.gen_cells[0],
                              c.gen_cells[1], c.gen_cells[2], c.gen_element, &m);
    } else {
        hk_mesh_options mo = c.mesh;
        mo.verbose = verbose;
        mo.renumber = 0; /* the case that reads the file renumbers, as a run would */
        err = hk_mesh_load(c.geo_file, &mo, &m);
        if (!err && !quiet && *hk_mesh_load_notes())
            fprintf(stderr, "hooke mesh: %s\n", hk_mesh_load_notes());
    }
    if (err) goto fail;
    double tm = hk_time() - t;
    t = hk_time();
    err = hk_app_make_parent_dirs(out);
    if (!err) err = hk_mesh_write_msh(out, &m);
    if (err) goto fail;
    if (!quiet) {
        fprintf(stderr, "hooke mesh: %lld nodes, %lld elements, %d regions, %d boundaries in "
                        "%.2f s; wrote %s in %.2f s\n",
                (long long)m.nnodes, (long long)m.cells.n, m.nregions, m.nboundaries, tm, out,
                hk_time() - t);
        hk_mesh_quality q = {0, 0, 0};
        const hk_mesh_refine_stats rs = hk_mesh_load_refine_stats();
        if (!c.generate && rs.levels)
            q = rs.after; /* the corners' shapes: the order changes none */
        if ((!c.generate && rs.levels) || !hk_mesh_measure_quality(&m, &q))
            fprintf(stderr, "hooke mesh: element quality (scaled Jacobian) min %.3f mean %.3f\n",
                    q.min, q.mean);
        if (!c.generate && rs.levels)
            fprintf(stderr,
                    "hooke mesh: refined %d time%s, %lld -> %lld cells in %.2f s (%.2f GB/s), "
                    "quality min %.3f mean %.3f -> min %.3f mean %.3f\n",
                    rs.levels, rs.levels == 1 ? "" : "s", (long long)rs.cells_before,
                    (long long)rs.after.cells, rs.seconds,
                    rs.seconds > 0 ? rs.bytes / rs.seconds / 1e9 : 0.0, rs.before.min,
                    rs.before.mean, rs.after.min, rs.after.mean);
        if (!c.generate) {
            char phases[256];
            hk_run_mesh_phases(phases, sizeof phases);
            fprintf(stderr, "hooke mesh: phases (s): %s\n", phases);
        }
    }
    rc = 0;
fail:
    if (rc) fprintf(stderr, "hooke mesh: %s\n", hk_error_message());
    hk_mesh_free(&m);
    hk_case_free(&c);
    return rc;
}
