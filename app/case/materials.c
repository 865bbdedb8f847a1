/* materials: isotropic, orthotropic or anisotropic laws, their axes, expansion, density and
 * the regions each one fills. */
#include "reader.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A positive number under key k of material m, or an error naming it. */
static int material_number(case_ctx *x, struct fy_node *m, const char *k, const char *name,
                           const char *meaning, int positive, double *out)
{
    struct fy_node *v = case_lookup(m, k);
    if (!v) return case_err_at(x, m, "material '%s' needs %s (%s)", name, k, meaning);
    HK_CALL(case_parse_double(x, v, k, out));
    if (positive && !(*out > 0))
        return case_err_at(x, v, "%s = %g of material '%s' must be positive (%s)", k, *out, name,
                           meaning);
    return 0;
}

/* The stiffness matrix D of an anisotropic material: n rows of n numbers. */
static int read_stiffness(case_ctx *x, struct fy_node *v, const char *name, int n, double D[6][6])
{
    const char *order = n == 6 ? "xx yy zz xy yz xz" : n == 4 ? "rr zz tt rz" : "xx yy xy";
    if (fy_node_get_type(v) != FYNT_SEQUENCE || fy_node_sequence_item_count(v) != n)
        return case_err_at(
            x, v,
            "D of material '%s' must be a list of %d rows of %d numbers (Voigt order "
            "%s, engineering shear strains)",
            name, n, n, order);
    for (int i = 0; i < n; i++) {
        struct fy_node *row = fy_node_sequence_get_by_index(v, i);
        if (fy_node_get_type(row) != FYNT_SEQUENCE || fy_node_sequence_item_count(row) != n)
            return case_err_at(x, row, "row %d of D of material '%s' must be a list of %d numbers",
                               i, name, n);
        for (int j = 0; j < n; j++) {
            char w[64];
            snprintf(w, sizeof w, "D[%d][%d]", i, j);
            HK_CALL(case_parse_double(x, fy_node_sequence_get_by_index(row, j), w, &D[i][j]));
        }
    }
    return 0;
}

/* orientation: {axis1: [...], axis2: [...]}: material axis 1 along axis1, axis 2 in the plane
 * of axis1 and axis2 (made orthogonal to axis 1), axis 3 = axis 1 x axis 2. */
static int read_orientation(case_ctx *x, struct fy_node *v, hk_material *mt)
{
    static const char *const keys[] = {"axis1", "axis2", NULL};
    char what[96];
    snprintf(what, sizeof what, "orientation of material '%s'", mt->name);
    HK_CALL(case_check_mapping(x, v, what, keys));
    struct fy_node *a1 = case_lookup(v, "axis1"), *a2 = case_lookup(v, "axis2");
    if (!a1 || !a2)
        return case_err_at(x, v, "%s needs axis1: [...] and axis2: [...] (two directions)", what);
    double e1[3], e2[3];
    HK_CALL(case_parse_vec(x, a1, "axis1", e1));
    HK_CALL(case_parse_vec(x, a2, "axis2", e2));
    double n1 = sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
    double n2 = sqrt(e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]);
    if (!(n1 > 0)) return case_err_at(x, a1, "axis1 of material '%s' is the zero vector", mt->name);
    if (!(n2 > 0)) return case_err_at(x, a2, "axis2 of material '%s' is the zero vector", mt->name);
    double dot = 0;
    for (int i = 0; i < 3; i++)
        e1[i] /= n1, dot += e1[i] * e2[i];
    double m2 = 0;
    for (int i = 0; i < 3; i++)
        e2[i] -= dot * e1[i], m2 += e2[i] * e2[i];
    m2 = sqrt(m2);
    if (!(m2 > 1e-8 * n2))
        return case_err_at(x, a2,
                           "axis2 of material '%s' is parallel to axis1; give a second "
                           "direction across it",
                           mt->name);
    for (int i = 0; i < 3; i++)
        mt->axes[0][i] = e1[i], mt->axes[1][i] = e2[i] / m2;
    mt->axes[2][0] = mt->axes[0][1] * mt->axes[1][2] - mt->axes[0][2] * mt->axes[1][1];
    mt->axes[2][1] = mt->axes[0][2] * mt->axes[1][0] - mt->axes[0][0] * mt->axes[1][2];
    mt->axes[2][2] = mt->axes[0][0] * mt->axes[1][1] - mt->axes[0][1] * mt->axes[1][0];
    mt->has_axes = 1;
    return 0;
}

/* alpha: one number (isotropic expansion) or [a1, a2, a3] along the material axes. */
static int read_alpha(case_ctx *x, struct fy_node *v, hk_material *mt)
{
    if (fy_node_get_type(v) == FYNT_SCALAR) {
        HK_CALL(case_parse_double(x, v, "alpha", &mt->alpha[0]));
        mt->alpha[1] = mt->alpha[2] = mt->alpha[0];
        return 0;
    }
    if (fy_node_get_type(v) != FYNT_SEQUENCE || fy_node_sequence_item_count(v) != 3)
        return case_err_at(x, v,
                           "alpha of material '%s' must be a number (1.2e-5) or three numbers "
                           "[a1, a2, a3] along the material axes",
                           mt->name);
    for (int i = 0; i < 3; i++) {
        char w[32];
        snprintf(w, sizeof w, "alpha[%d]", i);
        HK_CALL(case_parse_double(x, fy_node_sequence_get_by_index(v, i), w, &mt->alpha[i]));
    }
    return 0;
}

static const char *const material_keys[] = {
    "name", "type",  "E",           "nu",          "density", "E1",  "E2",
    "E3",   "nu12",  "nu13",        "nu23",        "G12",     "G13", "G23",
    "D",    "alpha", "orientation", "integration", "regions", NULL};

/* type: isotropic (default), orthotropic or anisotropic. */
static int read_material_kind(case_ctx *x, struct fy_node *tnode, hk_material *mt)
{
    mt->kind = HK_MAT_ISOTROPIC;
    if (!tnode) return 0;
    const char *t = case_scalar(tnode);
    if (t && !strcmp(t, "orthotropic"))
        mt->kind = HK_MAT_ORTHOTROPIC;
    else if (t && !strcmp(t, "anisotropic"))
        mt->kind = HK_MAT_ANISOTROPIC;
    else if (!t || strcmp(t, "isotropic"))
        return case_err_at(x, tnode,
                           "type of material '%s' must be isotropic, orthotropic or "
                           "anisotropic, got '%s'",
                           mt->name, t ? t : "a collection");
    return 0;
}

/* Keys of the other kinds are mistakes, not silently ignored. */
static int check_kind_keys(case_ctx *x, struct fy_node *m, const hk_material *mt)
{
    static const char *const kn[] = {"isotropic", "orthotropic", "anisotropic"};
    for (int k = 0; material_keys[k]; k++) {
        const char *kk = material_keys[k];
        int iso = !strcmp(kk, "E") || !strcmp(kk, "nu");
        int ortho = kk[0] == 'E' || kk[0] == 'G' || !strncmp(kk, "nu", 2);
        ortho = ortho && !iso;
        int aniso = !strcmp(kk, "D");
        int wrong = (iso && mt->kind != HK_MAT_ISOTROPIC) ||
                    (ortho && mt->kind != HK_MAT_ORTHOTROPIC) ||
                    (aniso && mt->kind != HK_MAT_ANISOTROPIC);
        if (wrong && case_lookup(m, kk))
            return case_err_at(x, case_key_of(m, kk),
                               "material '%s' is %s, so '%s' does not apply; %s", mt->name,
                               kn[mt->kind], kk,
                               mt->kind == HK_MAT_ISOTROPIC
                                   ? "give type: orthotropic (E1 .. G23) or type: anisotropic (D)"
                               : mt->kind == HK_MAT_ORTHOTROPIC
                                   ? "an orthotropic material takes E1 E2 E3 nu12 nu13 nu23 G12 "
                                     "G13 G23"
                                   : "an anisotropic material takes its stiffness matrix D");
    }
    return 0;
}

static int read_isotropic(case_ctx *x, struct fy_node *m, hk_material *mt)
{
    struct fy_node *v;
    if (!(v = case_lookup(m, "E")))
        return case_err_at(x, m, "material '%s' needs E (Young's modulus)", mt->name);
    HK_CALL(case_parse_double(x, v, "E", &mt->E));
    if (!(mt->E > 0))
        return case_err_at(
            x, v, "E = %g of material '%s' must be positive (Young's modulus, in Pa for SI)", mt->E,
            mt->name);
    if (!(v = case_lookup(m, "nu")))
        return case_err_at(x, m, "material '%s' needs nu (Poisson's ratio)", mt->name);
    HK_CALL(case_parse_double(x, v, "nu", &mt->nu));
    if (!(mt->nu > -1 && mt->nu < 0.5))
        return case_err_at(x, v,
                           "nu = %g of material '%s' must be in (-1, 0.5); 0.5 is "
                           "incompressible, which displacement elements cannot model",
                           mt->nu, mt->name);
    return 0;
}

/* The elastic constants of the material's kind. */
static int read_elastic_constants(case_ctx *x, struct fy_node *m, hk_material *mt)
{
    static const char *const ortho_keys[] = {"E1",   "E2",  "E3",  "nu12", "nu13",
                                             "nu23", "G12", "G13", "G23"};
    const hk_case *c = x->c;
    if (mt->kind == HK_MAT_ISOTROPIC) return read_isotropic(x, m, mt);
    if (mt->kind == HK_MAT_ORTHOTROPIC) {
        for (int k = 0; k < 9; k++)
            HK_CALL(material_number(x, m, ortho_keys[k], mt->name,
                                    k < 3   ? "Young's modulus along a material axis"
                                    : k < 6 ? "Poisson's ratio of two material axes"
                                            : "shear modulus of two material axes",
                                    k < 3 || k >= 6, &mt->ortho[k]));
        return 0;
    }
    /* 3D: xx yy zz xy yz xz; axisymmetric: rr zz tt rz; plane: xx yy xy */
    const int nD = c->dim == 3 ? 6 : c->analysis == HK_AXISYMMETRIC ? 4 : 3;
    struct fy_node *v = case_lookup(m, "D");
    if (!v)
        return case_err_at(x, m, "anisotropic material '%s' needs D, its %dx%d stiffness matrix",
                           mt->name, nD, nD);
    return read_stiffness(x, v, mt->name, nD, mt->D);
}

/* integration: auto, full or selective (isotropic materials only). */
static int read_integration(case_ctx *x, struct fy_node *v, hk_material *mt)
{
    static const char *const names[] = {"auto", "full", "selective"};
    const char *t = case_scalar(v);
    int k = 0;
    while (k < 3 && !(t && !strcmp(t, names[k])))
        k++;
    if (k == 3)
        return case_err_at(x, v,
                           "integration of material '%s' must be auto, full or selective, got "
                           "'%s'",
                           mt->name, t ? t : "a collection");
    if (k && mt->kind != HK_MAT_ISOTROPIC)
        return case_err_at(x, v,
                           "integration of material '%s' applies to isotropic materials only "
                           "(their volumetric part); leave it out",
                           mt->name);
    mt->integration = k; /* HK_INTEGRATION_AUTO, _FULL, _SELECTIVE */
    return 0;
}

/* Positive definiteness and the rest, with the library's own sentence. */
static int check_law(case_ctx *x, struct fy_node *m, struct fy_node *tnode, const hk_material *mt)
{
    const hk_case *c = x->c;
    hk_law law;
    if (!hk_material_law(mt, c->analysis, c->dim, &law)) return 0;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", hk_error_message());
    struct fy_node *at = mt->kind == HK_MAT_ANISOTROPIC ? case_lookup(m, "D") : tnode ? tnode : m;
    return case_err_at(x, at, "%s", msg);
}

/* regions: a name or a list of names. */
static int read_regions(case_ctx *x, struct fy_node *v, hk_case_material *cm)
{
    if (fy_node_get_type(v) == FYNT_SCALAR) {
        cm->nregions = 1;
    } else if (fy_node_get_type(v) == FYNT_SEQUENCE && fy_node_sequence_item_count(v) > 0) {
        cm->nregions = fy_node_sequence_item_count(v);
    } else {
        return case_err_at(x, v,
                           "regions of material '%s' must be a list of region names like [body]",
                           cm->m.name);
    }
    HK_CALL(hk_calloc((size_t)cm->nregions, sizeof *cm->regions, &cm->regions));
    HK_CALL(hk_calloc((size_t)cm->nregions, sizeof *cm->region_loc, &cm->region_loc));
    for (int r = 0; r < cm->nregions; r++) {
        struct fy_node *e =
            fy_node_get_type(v) == FYNT_SCALAR ? v : fy_node_sequence_get_by_index(v, r);
        HK_CALL(case_parse_name(x, e, "region name", cm->regions[r], HK_CASE_NAME));
        cm->region_loc[r] = case_node_loc(x, e);
    }
    return 0;
}

/* materials[i]; *nall counts the materials without regions (at most one). */
static int read_material(case_ctx *x, struct fy_node *m, int i, int *nall)
{
    hk_case_material *cm = &x->c->materials[i];
    struct fy_node *v, *tnode;
    char what[64];
    snprintf(what, sizeof what, "materials[%d]", i);
    HK_CALL(case_check_mapping(x, m, what, material_keys));
    cm->loc = case_node_loc(x, m);
    if ((v = case_lookup(m, "name")))
        HK_CALL(case_parse_name(x, v, "material name", cm->m.name, sizeof cm->m.name));
    else
        snprintf(cm->m.name, sizeof cm->m.name, "material%d", i + 1);
    tnode = case_lookup(m, "type");
    HK_CALL(read_material_kind(x, tnode, &cm->m));
    HK_CALL(check_kind_keys(x, m, &cm->m));
    HK_CALL(read_elastic_constants(x, m, &cm->m));
    if ((v = case_lookup(m, "integration"))) HK_CALL(read_integration(x, v, &cm->m));
    if ((v = case_lookup(m, "orientation"))) HK_CALL(read_orientation(x, v, &cm->m));
    if ((v = case_lookup(m, "alpha"))) {
        HK_CALL(read_alpha(x, v, &cm->m));
        cm->has_alpha = 1;
    }
    HK_CALL(check_law(x, m, tnode, &cm->m));
    if ((v = case_lookup(m, "density"))) {
        HK_CALL(case_parse_double(x, v, "density", &cm->m.rho));
        if (!(cm->m.rho >= 0))
            return case_err_at(x, v, "density = %g of material '%s' must not be negative",
                               cm->m.rho, cm->m.name);
    }
    if ((v = case_lookup(m, "regions"))) return read_regions(x, v, cm);
    if (++*nall > 1)
        return case_err_at(x, m,
                           "only one material may leave out 'regions' (it takes every region no "
                           "other material names); give material '%s' its regions",
                           cm->m.name);
    return 0;
}

int case_read_materials(case_ctx *x, struct fy_node *root, struct fy_node *ms)
{
    hk_case *c = x->c;
    if (fy_node_get_type(ms) != FYNT_SEQUENCE || fy_node_sequence_item_count(ms) == 0)
        return case_err_at(
            x, case_key_of(root, "materials"),
            "materials must be a list (lines starting with '- name: ...') of at least "
            "one material");
    int n = fy_node_sequence_item_count(ms);
    HK_CALL(hk_calloc((size_t)n, sizeof *c->materials, &c->materials));
    c->nmaterials = n;
    int nall = 0;
    for (int i = 0; i < n; i++)
        HK_CALL(read_material(x, fy_node_sequence_get_by_index(ms, i), i, &nall));
    return case_modal_need_density(c);
}
