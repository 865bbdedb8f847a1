/* output: the .vtu file, its fields and encoding, and the exported system (.mtx). */
#include "reader.h"

#include <stdio.h>
#include <string.h>

/* output.matrix, output.rhs, output.coordinates, output.mass (modal): Matrix Market files of the
 * system. */
static int read_output_system(case_ctx *x, struct fy_node *o)
{
    static const char *const key[] = {"matrix", "rhs", "coordinates", "mass"};
    hk_case *c = x->c;
    char *dst[] = {c->matrix_file, c->rhs_file, c->coords_file, c->mass_file};
    for (int i = 0; i < 4; i++) {
        struct fy_node *n = case_lookup(o, key[i]);
        if (!n) continue;
        char what[32];
        snprintf(what, sizeof what, "output.%s", key[i]);
        HK_CALL(case_resolve_path(x, n, what, dst[i]));
        size_t l = strlen(dst[i]);
        if (l < 4 || strcmp(dst[i] + l - 4, ".mtx"))
            return case_err_at(x, n, "%s must end in .mtx (Matrix Market), like %s: %s.mtx", what,
                               key[i],
                               i == 0   ? "K"
                               : i == 1 ? "f"
                               : i == 2 ? "xyz"
                                        : "M");
        if (i == 3 && !c->modal)
            return case_err_at(x, n,
                               "output.mass is the mass matrix of a modal analysis; add a modal: "
                               "section or remove output.mass");
        if (i == 1 && c->nloadcases)
            return case_err_at(x, n,
                               "output.rhs holds one right-hand side; with load_cases, move the "
                               "loads of one case to loads: to export its right-hand side");
    }
    return 0;
}

/* output.compression, output.level, output.precision: how the .vtu's arrays are stored. */
static int read_output_format(case_ctx *x, struct fy_node *o)
{
    static const char *const comp_names[] = {"none", "zlib", "lz4", NULL};
    static const int comp_values[] = {HK_VTU_NONE, HK_VTU_ZLIB, HK_VTU_LZ4};
    static const char *const prec_names[] = {"float64", "float32", NULL};
    static const int prec_values[] = {0, 1};
    hk_case *c = x->c;
    struct fy_node *n, *kn = case_lookup(o, "compress"), *cn = case_lookup(o, "compression");
    /* The older key: true asks for the fastest compressor in the build (LZ4: 2x zlib's speed
     * for 10 % more bytes on the GPU host, docs/output.md), zlib where a zlib level is given. */
    if (kn)
        c->compression = !c->compress                                   ? HK_VTU_NONE
                         : hk_vtu_have_lz4() && !case_lookup(o, "level") ? HK_VTU_LZ4
                                                                         : HK_VTU_ZLIB;
    if (cn) {
        int comp = 0;
        HK_CALL(case_parse_choice(x, cn, "output.compression", comp_names, comp_values, &comp));
        if (kn && (comp != HK_VTU_NONE) != c->compress)
            return case_err_at(x, cn,
                               "output.compression: %s contradicts output.compress: %s; keep "
                               "one of them",
                               case_scalar(cn), c->compress ? "true" : "false");
        if (comp == HK_VTU_LZ4 && !hk_vtu_have_lz4())
            return case_err_at(x, cn,
                               "output.compression: lz4 is not in this build; install "
                               "liblz4-dev (scripts/install-deps.sh) and rebuild, or use zlib "
                               "or none");
        c->compression = comp;
    }
    if ((n = case_lookup(o, "level"))) {
        HK_CALL(case_parse_int(x, n, "output.level", &c->zlevel));
        if (c->zlevel < 1 || c->zlevel > 9)
            return case_err_at(x, n,
                               "output.level must be a zlib level from 1 (fastest) to 9 "
                               "(smallest), got %d",
                               c->zlevel);
        if (c->compression != HK_VTU_ZLIB)
            return case_err_at(x, n, "output.level is zlib's level; it needs compression: zlib");
    }
    if ((n = case_lookup(o, "precision")))
        HK_CALL(case_parse_choice(x, n, "output.precision", prec_names, prec_values, &c->float32));
    return 0;
}

int case_read_output(case_ctx *x, struct fy_node *root, struct fy_node *o)
{
    static const char *const keys[] = {"file",        "fields",      "compress",  "ascii",
                                       "compression", "level",       "precision", "matrix",
                                       "rhs",         "coordinates", "mass",      NULL};
    static const char *const fnames[] = {"displacement", "strain",   "stress",      "von_mises",
                                         "principal",    "reaction", "cell_stress", NULL};
    hk_case *c = x->c;
    struct fy_node *n;
    c->fields = HK_FIELD_ALL;
    c->compress = 1;
    c->compression = HK_VTU_NONE; /* fastest, and smaller than the former base64 + zlib */
    int k = c->dir[0] ? snprintf(c->output, sizeof c->output, "%s/%s.vtu", c->dir, c->name)
                      : snprintf(c->output, sizeof c->output, "%s.vtu", c->name);
    if (k >= (int)sizeof c->output)
        return hk_case_error(c, (hk_case_loc){0, 0, -1},
                             "the output path is too long; set output.file");
    if (!o) return 0;
    HK_CALL(case_check_mapping(x, o, "output", keys));
    if ((n = case_lookup(o, "file"))) {
        HK_CALL(case_resolve_path(x, n, "output.file", c->output));
        size_t l = strlen(c->output);
        if (l < 4 || strcmp(c->output + l - 4, ".vtu"))
            return case_err_at(x, n,
                               "output.file must end in .vtu (VTK unstructured grid for ParaView)");
    }
    HK_CALL(read_output_system(x, o));
    if ((n = case_lookup(o, "compress")))
        HK_CALL(case_parse_bool(x, n, "output.compress", &c->compress));
    if ((n = case_lookup(o, "ascii"))) HK_CALL(case_parse_bool(x, n, "output.ascii", &c->ascii));
    HK_CALL(read_output_format(x, o));
    if ((n = case_lookup(o, "fields"))) {
        if (fy_node_get_type(n) != FYNT_SEQUENCE)
            return case_err_at(x, n, "output.fields must be a list like [displacement, von_mises]");
        c->fields = 0;
        void *it = NULL;
        struct fy_node *e;
        while ((e = fy_node_sequence_iterate(n, &it))) {
            const char *s = case_scalar(e);
            int k = -1;
            for (int i = 0; s && fnames[i]; i++)
                if (!strcmp(s, fnames[i])) k = i;
            if (k < 0) {
                char hint[512];
                case_key_hint(s ? s : "", fnames, hint, sizeof hint);
                return case_err_at(x, e, "unknown output field '%s'; %s", s ? s : "?", hint);
            }
            c->fields |= 1u << k;
        }
    }
    return 0;
}
