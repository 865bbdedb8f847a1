/* The .pvtu of a distributed run: the pieces' list and the arrays they hold (names, types,
 * components as hk_vtu_write writes them), so that ParaView opens the pieces as one model
 * (VTK's PUnstructuredGrid). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pp_impl.h"

static void put_array(FILE *fp, const char *type, const char *name, int ncomp,
                      const char *const *comp)
{
    fprintf(fp, "      <PDataArray type=\"%s\" Name=\"%s\" NumberOfComponents=\"%d\"", type, name,
            ncomp);
    for (int c = 0; comp && c < ncomp; c++)
        fprintf(fp, " ComponentName%d=\"%s\"", c, comp[c]);
    fputs("/>\n", fp);
}

int hk_pvtu_write(const char *path, int npieces, const char *const *pieces, const hk_fields *f,
                  int has_region, const hk_vtu_options *opt)
{
    static const char *const tensor[6] = {"xx", "yy", "zz", "xy", "yz", "xz"};
    static const char *const axi[6] = {"rr", "zz", "tt", "rz", "zt", "rt"};
    HK_CHECK(path && npieces >= 1 && pieces, HK_ERR_ARG, "hk_pvtu_write: no path or no pieces");
    FILE *fp = fopen(path, "w");
    HK_CHECK(fp, HK_ERR_IO, "could not open '%s' for writing: %s (does its folder exist?)", path,
             strerror(errno));
    const char *ft = opt && opt->float32 ? "Float32" : "Float64";
    const char *const *tn = f && f->axisymmetric ? axi : tensor;
    fputs("<?xml version=\"1.0\"?>\n"
          "<VTKFile type=\"PUnstructuredGrid\" version=\"0.1\" byte_order=\"LittleEndian\" "
          "header_type=\"UInt64\">\n"
          "  <PUnstructuredGrid GhostLevel=\"0\">\n"
          "    <PPoints>\n",
          fp);
    put_array(fp, "Float64", "Points", 3, NULL);
    fputs("    </PPoints>\n    <PPointData>\n", fp);
    if (f) {
        if (f->u) put_array(fp, ft, "displacement", 3, NULL);
        if (f->stress) put_array(fp, ft, "stress", 6, tn);
        if (f->strain) put_array(fp, ft, "strain", 6, tn);
        if (f->von_mises) put_array(fp, ft, "von_mises", 1, NULL);
        if (f->principal) put_array(fp, ft, "principal_stress", 3, NULL);
        if (f->reaction) put_array(fp, ft, "reaction", 3, NULL);
    }
    fputs("    </PPointData>\n    <PCellData>\n", fp);
    if (has_region) put_array(fp, "Int32", "region", 1, NULL);
    if (f) {
        if (f->cell_stress) put_array(fp, ft, "element_stress", 6, tn);
        if (f->cell_von_mises) put_array(fp, ft, "element_von_mises", 1, NULL);
    }
    fputs("    </PCellData>\n", fp);
    for (int i = 0; i < npieces; i++) {
        fputs("    <Piece Source=\"", fp);
        hk_pp_put_escaped(fp, pieces[i]);
        fputs("\"/>\n", fp);
    }
    fputs("  </PUnstructuredGrid>\n</VTKFile>\n", fp);
    const int bad = ferror(fp);
    if (fclose(fp) != 0 || bad) {
        remove(path);
        return hk_error_set(HK_ERR_IO, __FILE__, __LINE__,
                            "could not write '%s' (disk full or no permission?)", path);
    }
    return 0;
}
