/* analysis: the type (3d, plane_stress, plane_strain, axisymmetric), which fixes the dimension
 * the other sections are checked against, and a 2D thickness. */
#include "reader.h"

#include <string.h>

int case_read_analysis(case_ctx *x, struct fy_node *root, struct fy_node *a)
{
    static const char *const keys[] = {"type", "thickness", NULL};
    hk_case *c = x->c;
    struct fy_node *type = NULL, *th = NULL;
    if (fy_node_get_type(a) == FYNT_SCALAR) {
        type = a;
    } else {
        HK_CALL(case_check_mapping(x, a, "analysis", keys));
        type = case_lookup(a, "type");
        th = case_lookup(a, "thickness");
        if (!type)
            return case_err_at(
                x, a, "analysis needs type: 3d, plane_stress, plane_strain or axisymmetric");
    }
    c->analysis_loc = case_node_loc(x, type);
    const char *s = case_scalar(type);
    if (s && !strcmp(s, "plane_stress"))
        c->analysis = HK_PLANE_STRESS, c->dim = 2;
    else if (s && !strcmp(s, "plane_strain"))
        c->analysis = HK_PLANE_STRAIN, c->dim = 2;
    else if (s && (!strcmp(s, "3d") || !strcmp(s, "3D") || !strcmp(s, "solid")))
        c->analysis = HK_SOLID, c->dim = 3;
    else if (s && !strcmp(s, "axisymmetric"))
        c->analysis = HK_AXISYMMETRIC, c->dim = 2;
    else if (s && !strcmp(s, "modal"))
        return case_err_at(x, type,
                           "a modal analysis is asked for by a modal: section beside the "
                           "analysis type; write analysis: 3d (or plane_stress, plane_strain, "
                           "axisymmetric) and modal: {modes: 10}");
    else
        return case_err_at(
            x, type,
            "analysis type must be 3d, plane_stress, plane_strain or axisymmetric, got "
            "'%s'",
            s ? s : "a collection");
    c->thickness = 1.0;
    if (th) {
        if (c->dim == 3)
            return case_err_at(x, th,
                               "thickness applies to 2D analyses only; remove it for a 3d case");
        if (c->analysis == HK_AXISYMMETRIC)
            return case_err_at(
                x, th,
                "thickness does not apply to an axisymmetric analysis (its results are "
                "per radian of the full ring); remove it");
        HK_CALL(case_parse_double(x, th, "analysis.thickness", &c->thickness));
        if (!(c->thickness > 0))
            return case_err_at(x, th, "analysis.thickness must be positive, got %g", c->thickness);
    }
    return 0;
}
