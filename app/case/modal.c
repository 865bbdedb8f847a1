/* modal: a modal analysis of the case's part (docs/case-format.md, docs/modal.md): how many
 * natural frequencies, from which frequency, with which mass matrix, to which tolerance. Read
 * early, beside analysis, which stays the geometric kind (3d, plane_stress, plane_strain,
 * axisymmetric): supports may then be left out (a free-floating part) and every material needs
 * a density (checked after the materials, case_modal_need_density). */
#include "reader.h"

#include <math.h>
#include <string.h>

int case_read_modal(case_ctx *x, struct fy_node *root, struct fy_node *sec)
{
    static const char *const keys[] = {"modes", "shift", "mass", "tol", "maxit", NULL};
    hk_case *c = x->c;
    struct fy_node *n;
    if (!sec) return 0;
    if (fy_node_get_type(sec) != FYNT_MAPPING)
        return case_err_at(x, case_key_of(root, "modal"),
                           "modal must be a mapping like {modes: 10}; see docs/modal.md");
    HK_CALL(case_check_mapping(x, sec, "modal", keys));
    c->modal = 1;
    c->modal_loc = case_node_loc(x, case_key_of(root, "modal"));
    if (!(n = case_lookup(sec, "modes")))
        return case_err_at(x, sec,
                           "modal needs modes: N, the number of natural frequencies to find "
                           "(the lowest N, or the first N above shift)");
    HK_CALL(case_parse_int(x, n, "modal.modes", &c->modes));
    if (c->modes < 1)
        return case_err_at(x, n, "modal.modes = %d; ask for at least one mode", c->modes);
    c->modes_loc = case_node_loc(x, n);
    if ((n = case_lookup(sec, "shift"))) {
        HK_CALL(case_parse_double(x, n, "modal.shift", &c->modal_shift));
        if (!(c->modal_shift >= 0) || !isfinite(c->modal_shift))
            return case_err_at(x, n,
                               "modal.shift = %g Hz; give a frequency >= 0 (the modes above it "
                               "are reported)",
                               c->modal_shift);
    }
    c->mass = HK_MASS_CONSISTENT;
    if ((n = case_lookup(sec, "mass"))) {
        const char *s = case_scalar(n);
        if (s && !strcmp(s, "lumped"))
            c->mass = HK_MASS_LUMPED;
        else if (!s || strcmp(s, "consistent"))
            return case_err_at(x, n,
                               "modal.mass must be consistent (the default) or lumped, got "
                               "'%s'",
                               s ? s : "a collection");
    }
    if ((n = case_lookup(sec, "tol"))) {
        HK_CALL(case_parse_double(x, n, "modal.tol", &c->modal_tol));
        if (!(c->modal_tol > 0 && c->modal_tol < 1))
            return case_err_at(x, n,
                               "modal.tol = %g; give a relative residual in (0, 1), e.g. 1e-6 "
                               "(the default)",
                               c->modal_tol);
    }
    if ((n = case_lookup(sec, "maxit"))) {
        HK_CALL(case_parse_int(x, n, "modal.maxit", &c->modal_maxit));
        if (c->modal_maxit < 1)
            return case_err_at(x, n, "modal.maxit = %d; give at least 1 (default 1000)",
                               c->modal_maxit);
    }
    return 0;
}

int case_modal_need_density(const hk_case *c)
{
    for (int i = 0; c->modal && i < c->nmaterials; i++)
        if (!(c->materials[i].m.rho > 0))
            return hk_case_error(c, c->materials[i].loc,
                                 "materials[%d] (%s): a modal analysis needs density; add "
                                 "density (kg/m^3 in SI)",
                                 i, c->materials[i].m.name);
    return 0;
}
