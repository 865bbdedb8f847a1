/* hk_mesh_write_msh: a mesh as Gmsh .msh 2.2 ASCII, so that `hooke mesh` can mesh once and
 * cases can point at the file. The format needs no model entities: every element line names
 * its physical group and an elementary entity; each group gets an entity of its own, so a
 * facet in two boundary groups is written once per group and read back into both.
 *
 * Read back by hk_mesh_load (which numbers a file's nodes in the order of their tags), the
 * file gives the same node numbering, the same cells in the same order and the same groups. */
#include <errno.h>
#include <stdio.h>

#include "mesh_impl.h"

static int write_elems(FILE *f, const hk_elems *e, int64_t first, const int64_t *sel,
                       int64_t nsel, int phys, int entity, int64_t *id)
{
    for (int64_t k = first; k < nsel; k++) {
        int64_t i = sel ? sel[k] : k;
        const hk_eltype_info *in = hk_eltype_get((hk_eltype)e->type[i]);
        if (!in || in->gmsh_type <= 0) return -1;
        fprintf(f, "%lld %d 2 %d %d", (long long)++*id, in->gmsh_type, phys, entity);
        for (int64_t a = e->ptr[i]; a < e->ptr[i + 1]; a++)
            fprintf(f, " %lld", (long long)e->nodes[a] + 1);
        fputc('\n', f);
    }
    return 0;
}

int hk_mesh_write_msh(const char *path, const hk_mesh *m)
{
    HK_CHECK(path && *path, HK_ERR_ARG, "hk_mesh_write_msh: no file name given");
    HK_CHECK(m && m->coords && m->cells.n > 0 && m->nregions > 0, HK_ERR_ARG,
             "hk_mesh_write_msh: the mesh for '%s' is empty", path);
    FILE *f = fopen(path, "w");
    HK_CHECK(f, HK_ERR_IO, "cannot write the mesh file '%s': %s; check the folder exists and is "
             "writable", path, strerror(errno));
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof buf);
    int ierr = 0;
    int64_t *sel = NULL;
    /* physical tags: regions 1..nregions; boundaries numbered per dimension after them (a
     * physical tag is unique within its dimension) */
    fprintf(f, "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$PhysicalNames\n%d\n",
            m->nregions + m->nboundaries);
    for (int r = 0; r < m->nregions; r++)
        fprintf(f, "%d %d \"%s\"\n", m->dim, r + 1, m->regions[r].name);
    for (int b = 0; b < m->nboundaries; b++)
        fprintf(f, "%d %d \"%s\"\n", m->boundaries[b].dim, m->nregions + b + 1,
                m->boundaries[b].name);
    fprintf(f, "$EndPhysicalNames\n$Nodes\n%lld\n", (long long)m->nnodes);
    for (int64_t i = 0; i < m->nnodes; i++) {
        const double *x = m->coords + 3 * i;
        fprintf(f, "%lld %.17g %.17g %.17g\n", (long long)i + 1, x[0], x[1], x[2]);
    }
    int64_t nel = m->cells.n;
    for (int b = 0; b < m->nboundaries; b++)
        nel += m->boundaries[b].elems.n;
    fprintf(f, "$EndNodes\n$Elements\n%lld\n", (long long)nel);
    /* cells grouped by region, in mesh order within each (the loader reads them so) */
    HK_TRY(hk_malloc((size_t)m->cells.n * sizeof *sel, &sel));
    int64_t id = 0;
    for (int r = 0; r < m->nregions; r++) {
        int64_t n = 0;
        for (int64_t e = 0; e < m->cells.n; e++)
            if ((m->cell_region ? m->cell_region[e] : 0) == r) sel[n++] = e;
        HK_TRY_CHECK(!write_elems(f, &m->cells, 0, sel, n, r + 1, r + 1, &id), HK_ERR_ARG,
                     "hk_mesh_write_msh: region '%s' has an element type Gmsh cannot name",
                     m->regions[r].name);
    }
    for (int b = 0; b < m->nboundaries; b++) {
        const hk_group *g = &m->boundaries[b];
        HK_TRY_CHECK(!write_elems(f, &g->elems, 0, NULL, g->elems.n, m->nregions + b + 1,
                                  m->nregions + b + 1, &id),
                     HK_ERR_ARG,
                     "hk_mesh_write_msh: boundary '%s' has an element type Gmsh cannot name",
                     g->name);
    }
    fprintf(f, "$EndElements\n");
fail:
    free(sel);
    if (fclose(f) && !ierr)
        ierr = hk_error_set(HK_ERR_IO, __FILE__, __LINE__,
                            "cannot finish writing the mesh file '%s': %s (disk full?)", path,
                            strerror(errno));
    if (ierr) remove(path);
    return ierr;
}
