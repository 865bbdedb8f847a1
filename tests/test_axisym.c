/* Axisymmetric analysis (x = r, y = z, the hoop direction theta in the place of z; per
 * radian): the Lame cylinder against its closed form, exact uniform states on distorted
 * meshes with nodes on the axis (axial stretch, radial pressure, heating, orthotropic and
 * anisotropic laws), the per-radian convention of loads and reactions on a ring, selective
 * integration at nu = 0.4999, the ready case cases/axisym/, and bad input as one sentence. */
#include <stdlib.h>
#include <string.h>

#include "case.h"
#include "test_util.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* The section a <= r <= b, 0 <= z <= h as nx x ny cells; boundaries left (r = a, the axis
 * when a = 0), right (r = b), bottom (z = 0), top (z = h). */
static void ring(double a, double b, double h, int nx, int ny, hk_eltype t, hk_mesh *m)
{
    HK_ASSERT_OK(hk_mesh_rectangle(b - a, h, nx, ny, t, m));
    for (int64_t i = 0; i < m->nnodes; i++)
        m->coords[3 * i] += a;
}

/* Moves the interior corner nodes by up to 15 % of a cell (deterministically) and puts every
 * mid-side and centre node back on its straight edge / the corners' mean: straight-sided
 * distorted elements, on which uniform states stay exact. */
static void distort(hk_mesh *m, double a, double b, double h, int nx, int ny)
{
    const double hx = (b - a) / nx, hy = h / ny, tol = 1e-12 * (b + h);
    for (int64_t i = 0; i < m->nnodes; i++) {
        double *x = m->coords + 3 * i;
        if (x[0] < a + tol || x[0] > b - tol || x[1] < tol || x[1] > h - tol) continue;
        x[0] += 0.15 * hx * sin(7.1 * (double)i + 0.3);
        x[1] += 0.15 * hy * cos(3.7 * (double)i + 1.1);
    }
    static const int tri_e[3][2] = {{0, 1}, {1, 2}, {2, 0}};
    static const int quad_e[4][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}};
    for (int64_t e = 0; e < m->cells.n; e++) {
        const int32_t *n = m->cells.nodes + m->cells.ptr[e];
        const int nn = (int)(m->cells.ptr[e + 1] - m->cells.ptr[e]);
        const int tri = m->cells.type[e] == HK_EL_TRI3 || m->cells.type[e] == HK_EL_TRI6;
        const int nc = tri ? 3 : 4;
        if (nn == nc) continue;
        for (int k = 0; k < nc; k++) {
            const int *ed = tri ? tri_e[k] : quad_e[k];
            for (int c = 0; c < 2; c++)
                m->coords[3 * n[nc + k] + c] =
                    0.5 * (m->coords[3 * n[ed[0]] + c] + m->coords[3 * n[ed[1]] + c]);
        }
        if (nn == 9)
            for (int c = 0; c < 2; c++)
                m->coords[3 * n[8] + c] =
                    0.25 * (m->coords[3 * n[0] + c] + m->coords[3 * n[1] + c] +
                            m->coords[3 * n[2] + c] + m->coords[3 * n[3] + c]);
    }
}

static int bnd(const hk_mesh *m, const char *name)
{
    const int b = hk_mesh_find_boundary(m, name);
    CU_ASSERT_FATAL(b >= 0);
    return b;
}

/* ring() with its interior nodes moved by distort(). */
static void distorted_ring(double a, double b, double h, int nx, int ny, hk_eltype t, hk_mesh *m)
{
    ring(a, b, h, nx, ny, t, m);
    distort(m, a, b, h, nx, ny);
}

/* The axisymmetric problem on m of one material with nloads loads and nsupports supports. */
static hk_problem axi_problem(const hk_mesh *m, const hk_material *mat, int nloads,
                              const hk_load *loads, int nsupports, const hk_support *sup)
{
    return (hk_problem){.mesh = m,
                        .analysis = HK_AXISYMMETRIC,
                        .materials = mat,
                        .nloads = nloads,
                        .loads = loads,
                        .nsupports = nsupports,
                        .supports = sup};
}

/* Assemble, solve (direct where CHOLMOD is built in, else tight CG) and recover. */
static void run(const hk_problem *p, hk_system *s, double **u, hk_fields *f)
{
    HK_ASSERT_OK(hk_assemble(p, s));
    *u = calloc((size_t)s->ndof, sizeof **u);
    CU_ASSERT_PTR_NOT_NULL_FATAL(*u);
    hk_options *o = NULL;
    hk_solver *sv = NULL;
    HK_ASSERT_OK(hk_options_create(&o));
#ifdef HOOKE_HAVE_CHOLMOD
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu method=cholesky"));
#else
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu method=cg pc=jacobi tol=1e-13 maxit=100000"));
#endif
    HK_ASSERT_OK(hk_solver_create(&s->K, o, &sv));
    hk_options_destroy(o);
    hk_result res;
    HK_ASSERT_OK(hk_solver_solve(sv, s->f, *u, &res));
    CU_ASSERT(hk_reason_converged(res.reason));
    hk_solver_destroy(sv);
    HK_ASSERT_OK(hk_postproc(p, s, *u, f));
}

static void done(hk_system *s, double *u, hk_fields *f, hk_mesh *m)
{
    hk_fields_free(f);
    free(u);
    hk_system_free(s);
    hk_mesh_free(m);
}

/* Largest |stress - ref| over the nodes, every component. */
static double stress_error(const hk_mesh *m, const hk_fields *f, const double ref[6])
{
    double err = 0;
    for (int64_t i = 0; i < m->nnodes; i++)
        for (int k = 0; k < 6; k++)
            err = fmax(err, fabs(f->stress[6 * i + k] - ref[k]));
    return err;
}

/* Largest |u - (sr r, sz z)| over the nodes. */
static double linear_u_error(const hk_mesh *m, const hk_fields *f, double sr, double sz)
{
    double err = 0;
    for (int64_t i = 0; i < m->nnodes; i++)
        err = fmax(err, fmax(fabs(f->u[3 * i] - sr * m->coords[3 * i]),
                             fabs(f->u[3 * i + 1] - sz * m->coords[3 * i + 1])));
    return err;
}

static const hk_eltype all_types[] = {HK_EL_TRI3, HK_EL_TRI6, HK_EL_QUAD4, HK_EL_QUAD8,
                                      HK_EL_QUAD9};

/* ---- the Lame cylinder ----------------------------------------------------------------------- */

/* Thick cylinder a <= r <= b under internal pressure p with u_z = 0 on both ends (eps_zz = 0,
 * a long tube): sigma_rr = A - B/r^2, sigma_tt = A + B/r^2, sigma_zz = 2 nu A with
 * A = p a^2/(b^2 - a^2), B = p a^2 b^2/(b^2 - a^2); u_r = (1 + nu)/E ((1 - 2 nu) A r + B/r).
 * Returns the worst relative error of u_r and of the stresses (over the nodes, relative to
 * the bore's hoop stress). */
static void lame(hk_eltype t, int nx, double nu, int integration, double *eu, double *es)
{
    const double a = 0.1, b = 0.2, h = 0.02, p = 1e6, E = 10e6;
    const double A = p * a * a / (b * b - a * a), B = A * b * b;
    hk_mesh m;
    ring(a, b, h, nx, 1, t, &m);
    hk_support sup[2] = {{.boundary = bnd(&m, "bottom"), .mask = 2u, .value = {0}},
                         {.boundary = bnd(&m, "top"), .mask = 2u, .value = {0}}};
    hk_load ld = {.kind = HK_LOAD_PRESSURE, .boundary = bnd(&m, "left"), .value = {p, 0, 0}};
    hk_material mat = {.name = "m", .E = E, .nu = nu, .integration = integration};
    hk_problem pr = axi_problem(&m, &mat, 1, &ld, 2, sup);
    hk_system s;
    double *u;
    hk_fields f;
    run(&pr, &s, &u, &f);
    /* the pressure per radian: p a h radially, nothing axially */
    double fr = 0, fz = 0;
    for (int64_t i = 0; i < m.nnodes; i++)
        fr += s.f_ext[2 * i], fz += s.f_ext[2 * i + 1];
    CU_ASSERT_DOUBLE_EQUAL(fr, p * a * h, 1e-12 * p * a * h);
    CU_ASSERT(fabs(fz) < 1e-12 * p * a * h);
    *eu = *es = 0;
    const double st_a = A + B / (a * a);
    for (int64_t i = 0; i < m.nnodes; i++) {
        const double r = m.coords[3 * i];
        const double ur = (1 + nu) / E * ((1 - 2 * nu) * A * r + B / r);
        const double ref[6] = {A - B / (r * r), 2 * nu * A, A + B / (r * r), 0, 0, 0};
        *eu = fmax(*eu, fabs(f.u[3 * i] - ur) / ur);
        *eu = fmax(*eu, fabs(f.u[3 * i + 1]) / ur);
        for (int k = 0; k < 6; k++)
            *es = fmax(*es, fabs(f.stress[6 * i + k] - ref[k]) / st_a);
    }
    /* the held ends carry sigma_zz over the section, per radian: int 2 nu A r dr */
    if (nu < 0.49) {
        const double Fz = 2 * nu * A * (b * b - a * a) / 2;
        CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[1][1], Fz, 0.01 * Fz);
        CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[0][1], -Fz, 0.01 * Fz);
    }
    done(&s, u, &f, &m);
}

static void test_lame(void)
{
    static const struct {
        hk_eltype t;
        int nx;
        double tol_u, tol_s;
    } cs[] = {{HK_EL_QUAD8, 12, 0.01, 0.01},
              {HK_EL_TRI6, 12, 0.01, 0.01},
              {HK_EL_QUAD9, 12, 0.01, 0.01},
              {HK_EL_QUAD4, 16, 0.01, 0.1},
              {HK_EL_TRI3, 16, 0.01, 0.1}};
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        double eu, es;
        lame(cs[k].t, cs[k].nx, 0.3, HK_INTEGRATION_AUTO, &eu, &es);
        fprintf(stderr, "\n    lame %-5s %2d cells: u_r off by %.4f %%, stresses by %.3f %% ",
                hk_eltype_get(cs[k].t)->name, cs[k].nx, 100 * eu, 100 * es);
        CU_ASSERT(eu < cs[k].tol_u);
        CU_ASSERT(es < cs[k].tol_s);
    }
}

/* nu = 0.4999: integration auto (selective, with the hoop strain in the volumetric part; the
 * mean dilatation on quad4 and tri6) stays within 1 % on quad4, quad8 and tri6 (tri6 in the
 * stresses too); the fully integrated quad4 locks. */
static void test_lame_incompressible(void)
{
    double eu, es;
    lame(HK_EL_QUAD4, 16, 0.4999, HK_INTEGRATION_AUTO, &eu, &es);
    fprintf(stderr, "\n    nu 0.4999 quad4 selective: u_r off by %.3f %% ", 100 * eu);
    CU_ASSERT(eu < 0.01);
    lame(HK_EL_QUAD8, 8, 0.4999, HK_INTEGRATION_AUTO, &eu, &es);
    fprintf(stderr, "quad8 selective: %.3f %% (stresses %.2f %%) ", 100 * eu, 100 * es);
    CU_ASSERT(eu < 0.01);
    lame(HK_EL_TRI6, 8, 0.4999, HK_INTEGRATION_AUTO, &eu, &es);
    fprintf(stderr, "tri6 selective: %.3f %% (stresses %.2f %%) ", 100 * eu, 100 * es);
    CU_ASSERT(eu < 0.01);
    CU_ASSERT(es < 0.01);
    lame(HK_EL_QUAD4, 16, 0.4999, HK_INTEGRATION_FULL, &eu, &es);
    fprintf(stderr, "quad4 full: %.1f %% ", 100 * eu);
    CU_ASSERT(eu > 0.05);
}

/* ---- exact uniform states ---------------------------------------------------------------------
 */

/* The raw stiffness: the translation along the axis is free of strain, a radial one is not
 * (it stretches the rings). */
static void test_rigid_modes(void)
{
    for (size_t k = 0; k < sizeof all_types / sizeof all_types[0]; k++) {
        hk_mesh m;
        distorted_ring(0, 1, 2, 3, 4, all_types[k], &m);
        hk_material mat = {.name = "m", .E = 1000, .nu = 0.3};
        hk_problem pr = axi_problem(&m, &mat, 0, NULL, 0, NULL);
        hk_bcsr K;
        HK_ASSERT_OK(hk_assemble_stiffness(&pr, &K));
        const int64_t n = 2 * m.nnodes;
        double *v = calloc((size_t)n, sizeof *v), *Kv = calloc((size_t)n, sizeof *Kv);
        double kmax = 0, z = 0, rr = 0;
        for (int64_t i = 0; i < K.rowptr[K.nbrows] * 4; i++)
            kmax = fmax(kmax, fabs(K.val[i]));
        for (int64_t i = 0; i < m.nnodes; i++)
            v[2 * i + 1] = 1;
        hk_bcsr_spmv(&K, v, Kv);
        for (int64_t i = 0; i < n; i++)
            z = fmax(z, fabs(Kv[i]));
        for (int64_t i = 0; i < m.nnodes; i++)
            v[2 * i] = 1, v[2 * i + 1] = 0;
        hk_bcsr_spmv(&K, v, Kv);
        for (int64_t i = 0; i < n; i++)
            rr = fmax(rr, fabs(Kv[i]));
        CU_ASSERT(z < 1e-12 * kmax);
        CU_ASSERT(rr > 1e-3 * kmax);
        free(v), free(Kv);
        hk_bcsr_free(&K);
        hk_mesh_free(&m);
    }
}

/* A solid cylinder (nodes on the axis, u_r = 0 held there) stretched along its axis by a
 * prescribed u_z = e h on top: u_r = -nu e r, u_z = e z, sigma_zz = E e, hoop strain -nu e
 * (also at the axis nodes), exact on every element type; the ends carry E e b^2 / 2 per
 * radian. */
static void test_axial_stretch(void)
{
    const double b = 1, h = 2, E = 1000, e = 1e-3;
    for (size_t k = 0; k < 2 * sizeof all_types / sizeof all_types[0]; k++) {
        const double nu = k < 5 ? 0.3 : 0.4999; /* then selective integration */
        hk_mesh m;
        distorted_ring(0, b, h, 3, 4, all_types[k % 5], &m);
        hk_support sup[3] = {{.boundary = bnd(&m, "left"), .mask = 1u, .value = {0}},
                             {.boundary = bnd(&m, "bottom"), .mask = 2u, .value = {0}},
                             {.boundary = bnd(&m, "top"), .mask = 2u, .value = {0, e * h, 0}}};
        hk_material mat = {.name = "m", .E = E, .nu = nu};
        hk_problem pr = axi_problem(&m, &mat, 0, NULL, 3, sup);
        hk_system s;
        double *u;
        hk_fields f;
        run(&pr, &s, &u, &f);
        const double ref[6] = {0, E * e, 0, 0, 0, 0};
        const double du = linear_u_error(&m, &f, -nu * e, e), ds = stress_error(&m, &f, ref);
        double dh = 0;
        for (int64_t i = 0; i < m.nnodes; i++)
            dh = fmax(dh, fabs(f.strain[6 * i + 2] + nu * e));
        const double F = E * e * b * b / 2;
        if (du > 1e-10 * e || ds > 1e-9 * E * e || dh > 1e-10 * e)
            fprintf(stderr, "\n    stretch %s nu %g: u %g, stress %g, hoop strain %g ",
                    hk_eltype_get(all_types[k % 5])->name, nu, du, ds, dh);
        CU_ASSERT(du < 1e-10 * e);
        CU_ASSERT(ds < 1e-9 * E * e);
        CU_ASSERT(dh < 1e-10 * e);
        CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[2][1], F, 1e-9 * F);
        CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[1][1], -F, 1e-9 * F);
        CU_ASSERT(fabs(f.support_reaction[0][0]) < 1e-9 * F);
        CU_ASSERT_DOUBLE_EQUAL(f.max_von_mises, E * e, 1e-9 * E * e);
        done(&s, u, &f, &m);
    }
}

/* A solid cylinder under external pressure p with u_z = 0 on its ends: sigma_rr = sigma_tt =
 * -p, sigma_zz = -2 nu p, u_r = -(1 + nu)(1 - 2 nu) p r / E, von Mises (1 - 2 nu) p; the
 * pressure per radian is p b h. */
static void test_radial_pressure(void)
{
    const double b = 1, h = 0.5, E = 1000, p = 2;
    for (size_t k = 0; k < 2 * sizeof all_types / sizeof all_types[0]; k++) {
        const double nu = k < 5 ? 0.3 : 0.4999; /* then selective integration */
        hk_mesh m;
        distorted_ring(0, b, h, 3, 2, all_types[k % 5], &m);
        hk_support sup[3] = {{.boundary = bnd(&m, "left"), .mask = 1u, .value = {0}},
                             {.boundary = bnd(&m, "bottom"), .mask = 2u, .value = {0}},
                             {.boundary = bnd(&m, "top"), .mask = 2u, .value = {0}}};
        hk_load ld = {.kind = HK_LOAD_PRESSURE, .boundary = bnd(&m, "right"), .value = {p, 0, 0}};
        hk_material mat = {.name = "m", .E = E, .nu = nu};
        hk_problem pr = axi_problem(&m, &mat, 1, &ld, 3, sup);
        hk_system s;
        double *u;
        hk_fields f;
        run(&pr, &s, &u, &f);
        double fr = 0;
        for (int64_t i = 0; i < m.nnodes; i++)
            fr += s.f_ext[2 * i];
        CU_ASSERT_DOUBLE_EQUAL(fr, -p * b * h, 1e-12 * p * b * h);
        const double ref[6] = {-p, -2 * nu * p, -p, 0, 0, 0};
        const double du = linear_u_error(&m, &f, -(1 + nu) * (1 - 2 * nu) * p / E, 0);
        const double ds = stress_error(&m, &f, ref);
        double dvm = 0;
        for (int64_t i = 0; i < m.nnodes; i++)
            dvm = fmax(dvm, fabs(f.von_mises[i] - (1 - 2 * nu) * p));
        if (du > 1e-12 || ds > 1e-9 * p)
            fprintf(stderr, "\n    pressure %s nu %g: u %g, stress %g ",
                    hk_eltype_get(all_types[k % 5])->name, nu, du, ds);
        CU_ASSERT(du < 1e-12);
        CU_ASSERT(ds < 1e-9 * p);
        CU_ASSERT(dvm < 1e-9 * p);
        /* the ends hold sigma_zz over the section: 2 nu p b^2 / 2 per radian */
        CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[2][1], -nu * p * b * b, 1e-9 * p);
        done(&s, u, &f, &m);
    }
}

/* ---- loads and reactions per radian ------------------------------------------------------- */

/* A ring a <= r <= b on a support in z: an axial `force` F (per radian) on its top spreads as
 * the uniform stress -F / int r dr = -2F/(b^2 - a^2) (exact), the support takes F; a force
 * split equally over the top's nodes is also taken whole (nodal forces are per radian, not
 * weighted by r); its weight rho g h (b^2 - a^2)/2 too. A full ring: 2 pi times these. */
static void test_loaded_ring(void)
{
    const double a = 0.5, b = 1, h = 0.2, E = 1000, nu = 0.25, F = 3, rho = 2, g = 9.81;
    const hk_eltype types[] = {HK_EL_QUAD8, HK_EL_TRI6, HK_EL_QUAD4};
    for (int k = 0; k < 3; k++)
        for (int kind = 0; kind < 3; kind++) {
            hk_mesh m;
            distorted_ring(a, b, h, 4, 2, types[k], &m);
            hk_support sup = {.boundary = bnd(&m, "bottom"), .mask = 2u, .value = {0}};
            hk_load ld = {.kind = kind == 0 ? HK_LOAD_FORCE : HK_LOAD_FORCE_SPLIT,
                          .boundary = bnd(&m, "top"),
                          .value = {0, -F, 0}};
            hk_material mat = {.name = "m", .E = E, .nu = nu, .rho = rho};
            hk_problem pr = axi_problem(&m, &mat, kind < 2, &ld, 1, &sup);
            pr.gravity[1] = kind == 2 ? -g : 0;
            hk_system s;
            double *u;
            hk_fields f;
            run(&pr, &s, &u, &f);
            const double R = kind < 2 ? F : rho * g * h * (b * b - a * a) / 2;
            CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[0][1], R, 1e-9 * R);
            if (kind == 0) {
                const double sz = -2 * F / (b * b - a * a);
                const double ref[6] = {0, sz, 0, 0, 0, 0};
                const double du = linear_u_error(&m, &f, -nu * sz / E, sz / E);
                const double ds = stress_error(&m, &f, ref);
                if (du > 1e-12 * F || ds > 1e-9 * F)
                    fprintf(stderr, "\n    ring %s: u %g, stress %g ",
                            hk_eltype_get(types[k])->name, du, ds);
                CU_ASSERT(du < 1e-12 * F);
                CU_ASSERT(ds < 1e-9 * F);
            }
            done(&s, u, &f, &m);
        }
}

/* ---- thermal, orthotropic, anisotropic ------------------------------------------------------ */

/* A free solid cylinder heated by dT: stress-free, u = alpha dT x; the same ring held
 * everywhere: u = 0, sigma_rr = sigma_zz = sigma_tt = -E alpha dT / (1 - 2 nu). */
static void test_thermal(void)
{
    const double E = 1000, al = 1e-5, dT = 50;
    const hk_eltype types[] = {HK_EL_QUAD8, HK_EL_TRI6, HK_EL_QUAD4, HK_EL_TRI3, HK_EL_QUAD9};
    for (int k = 0; k < 10; k++) {
        const double nu = k < 5 ? 0.3 : 0.4999; /* then selective integration */
        hk_mesh m;
        distorted_ring(0, 1, 1, 3, 3, types[k % 5], &m);
        hk_support sup[2] = {{.boundary = bnd(&m, "left"), .mask = 1u, .value = {0}},
                             {.boundary = bnd(&m, "bottom"), .mask = 2u, .value = {0}}};
        hk_load ld = {.kind = HK_LOAD_TEMPERATURE, .boundary = -1, .value = {dT, 0, 0}};
        hk_material mat = {.name = "m", .E = E, .nu = nu, .alpha = {al, al, al}};
        hk_problem pr = axi_problem(&m, &mat, 1, &ld, 2, sup);
        hk_system s;
        double *u;
        hk_fields f;
        run(&pr, &s, &u, &f);
        const double zero[6] = {0}, s0 = E * al * dT;
        const double du = linear_u_error(&m, &f, al * dT, al * dT), ds = stress_error(&m, &f, zero);
        if (du > 1e-12 || ds > 1e-9 * s0)
            fprintf(stderr, "\n    free heated %s nu %g: u %g, stress %g ",
                    hk_eltype_get(types[k % 5])->name, nu, du, ds);
        CU_ASSERT(du < 1e-12);
        CU_ASSERT(ds < 1e-9 * s0);
        CU_ASSERT(fabs(f.support_reaction[1][1]) < 1e-9 * s0);
        done(&s, u, &f, &m);

        distorted_ring(0.5, 1, 1, 2, 2, types[k % 5], &m);
        hk_support held[4] = {{.boundary = bnd(&m, "left"), .mask = 1u, .value = {0}},
                              {.boundary = bnd(&m, "right"), .mask = 1u, .value = {0}},
                              {.boundary = bnd(&m, "bottom"), .mask = 2u, .value = {0}},
                              {.boundary = bnd(&m, "top"), .mask = 2u, .value = {0}}};
        pr.mesh = &m, pr.nsupports = 4, pr.supports = held;
        run(&pr, &s, &u, &f);
        const double sh = -s0 / (1 - 2 * nu), ref[6] = {sh, sh, sh, 0, 0, 0};
        const double dh = stress_error(&m, &f, ref);
        if (dh > 1e-9 * fabs(sh))
            fprintf(stderr, "\n    held heated %s nu %g: stress %g of %g ",
                    hk_eltype_get(types[k % 5])->name, nu, dh, sh);
        CU_ASSERT(dh < 1e-9 * fabs(sh));
        /* the outer wall pushes the ring in with sigma_rr b h per radian */
        CU_ASSERT_DOUBLE_EQUAL(f.support_reaction[1][0], sh * 1 * 1, 1e-9 * fabs(sh));
        done(&s, u, &f, &m);
    }
}

/* Uniaxial stress s along the axis of a solid cylinder of a general law: the strains are the
 * compliance's column, u_r = eps_rr r (eps_rr = eps_tt, which the law must give for a uniform
 * state). Orthotropic with axes r, z, theta and nu21 = nu23; an anisotropic 4 x 4 D equal to
 * the isotropic one. The hoop row uses E3 and nu23, not the in-plane constants. */
static void test_general_laws(void)
{
    const double s = 5;
    hk_material ortho = {.name = "ortho",
                         .kind = HK_MAT_ORTHOTROPIC,
                         .ortho = {10e3, 140e3, 10e3, 0.02, 0.3, 0.28, 5e3, 4e3, 3.6e3}};
    const double E = 1000, nu = 0.3, lam = E * nu / ((1 + nu) * (1 - 2 * nu)),
                 mu = E / (2 * (1 + nu));
    hk_material aniso = {.name = "aniso", .kind = HK_MAT_ANISOTROPIC};
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++)
            aniso.D[i][j] = lam;
        aniso.D[i][i] += 2 * mu;
    }
    aniso.D[3][3] = mu;
    hk_law L;
    HK_ASSERT_OK(hk_material_law(&ortho, HK_AXISYMMETRIC, 2, &L));
    CU_ASSERT_EQUAL(L.nv, 4);
    const double ez[2] = {s / 140e3, s / E}, er[2] = {-0.28 * s / 140e3, -nu * s / E};
    for (int k = 0; k < 2; k++) {
        hk_mesh m;
        distorted_ring(0, 1, 1, 3, 3, HK_EL_QUAD8, &m);
        hk_support sup[2] = {{.boundary = bnd(&m, "left"), .mask = 1u, .value = {0}},
                             {.boundary = bnd(&m, "bottom"), .mask = 2u, .value = {0}}};
        hk_load ld = {.kind = HK_LOAD_TRACTION, .boundary = bnd(&m, "top"), .value = {0, s, 0}};
        hk_problem pr = axi_problem(&m, k ? &aniso : &ortho, 1, &ld, 2, sup);
        hk_system sy;
        double *u;
        hk_fields f;
        run(&pr, &sy, &u, &f);
        const double ref[6] = {0, s, 0, 0, 0, 0};
        const double du = linear_u_error(&m, &f, er[k], ez[k]), ds = stress_error(&m, &f, ref);
        if (du > 1e-9 * fabs(ez[k]) || ds > 1e-9 * s)
            fprintf(stderr, "\n    %s: u %g, stress %g ", k ? "aniso" : "ortho", du, ds);
        CU_ASSERT(du < 1e-9 * fabs(ez[k]));
        CU_ASSERT(ds < 1e-9 * s);
        done(&sy, u, &f, &m);
    }
}

/* ---- output and errors ----------------------------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

/* The .vtu names the tensor components rr zz tt rz zt rt. */
static void test_vtu_names(void)
{
    hk_mesh m;
    ring(0, 1, 1, 2, 2, HK_EL_QUAD4, &m);
    hk_support sup[2] = {{.boundary = bnd(&m, "left"), .mask = 1u, .value = {0}},
                         {.boundary = bnd(&m, "bottom"), .mask = 2u, .value = {0}}};
    hk_load ld = {.kind = HK_LOAD_PRESSURE, .boundary = bnd(&m, "right"), .value = {1, 0, 0}};
    hk_material mat = {.name = "m", .E = 1000, .nu = 0.3};
    hk_problem pr = axi_problem(&m, &mat, 1, &ld, 2, sup);
    hk_system s;
    double *u;
    hk_fields f;
    run(&pr, &s, &u, &f);
    CU_ASSERT_EQUAL(f.axisymmetric, 1);
    char path[1024];
    snprintf(path, sizeof path, "%s/axi.vtu", hk_test_tmpdir());
    hk_vtu_options o = {0};
    HK_ASSERT_OK(hk_vtu_write(path, &m, &f, &o));
    char *text = slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "ComponentName0=\"rr\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "ComponentName2=\"tt\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "ComponentName3=\"rz\""));
    CU_ASSERT_PTR_NULL(strstr(text, "\"xx\""));
    free(text);
    done(&s, u, &f, &m);
}

static int has(const char *want)
{
    const int ok = strstr(hk_error_message(), want) != NULL;
    if (!ok) fprintf(stderr, "\n    got: %s\n    want: %s\n", hk_error_message(), want);
    return ok;
}

/* A 3D mesh, a node at r < 0, no axial support: one sentence each, from the library and at
 * file:line:col from a case file (also thickness and a D of the wrong size). */
static void test_errors(void)
{
    hk_material mat = {.name = "m", .E = 1000, .nu = 0.3};
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_box(1, 1, 1, 1, 1, 1, HK_EL_HEX8, &m));
    hk_support sup = {.boundary = bnd(&m, "zmin"), .mask = 7u, .value = {0}};
    hk_problem pr = axi_problem(&m, &mat, 0, NULL, 1, &sup);
    hk_system s;
    CU_ASSERT_EQUAL(hk_assemble(&pr, &s), HK_ERR_MODEL);
    CU_ASSERT(has("an axisymmetric analysis needs a 2D mesh of the r-z section"));
    hk_mesh_free(&m);

    ring(-0.25, 1, 1, 5, 1, HK_EL_QUAD4, &m);
    sup = (hk_support){.boundary = bnd(&m, "bottom"), .mask = 3u, .value = {0}};
    pr.mesh = &m;
    CU_ASSERT_EQUAL(hk_assemble(&pr, &s), HK_ERR_MODEL);
    CU_ASSERT(has("lies at r = x = -0.25 < 0; an axisymmetric section lies in x >= 0"));
    hk_mesh_free(&m);

    ring(0, 1, 1, 2, 2, HK_EL_QUAD4, &m);
    sup = (hk_support){.boundary = bnd(&m, "left"), .mask = 1u, .value = {0}};
    pr.mesh = &m;
    CU_ASSERT_EQUAL(hk_assemble(&pr, &s), HK_ERR_MODEL);
    CU_ASSERT(has("free: translation along the axis y"));

    /* case files */
    static const struct {
        const char *analysis, *geometry, *material, *want;
    } bad[] = {
        {"axisymmetric", "box, size: [1, 1, 1], cells: [1, 1, 1]", "{E: 1e9, nu: 0.3}",
         "a.yaml:2:21: a box is 3D but the analysis is 2D"},
        {"{type: axisymmetric, thickness: 2}", "rectangle, size: [1, 1], cells: [1, 1]",
         "{E: 1e9, nu: 0.3}", "a.yaml:3:43: thickness does not apply to an axisymmetric analysis"},
        {"axisymmetric", "rectangle, size: [1, 1], cells: [1, 1]",
         "{type: anisotropic, D: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}",
         "a.yaml:5:38: D of material 'material1' must be a list of 4 rows of 4 numbers (Voigt "
         "order rr zz tt rz"},
        {"axisymmetric_x", "rectangle, size: [1, 1], cells: [1, 1]", "{E: 1e9, nu: 0.3}",
         "a.yaml:3:11: analysis type must be 3d, plane_stress, plane_strain or axisymmetric"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text,
                 "geometry:\n  generate: {shape: %s}\nanalysis: %s\n"
                 "supports: [{boundary: bottom, fix: [y]}]\nmaterials: [%s]\n",
                 bad[i].geometry, bad[i].analysis, bad[i].material);
        hk_case c;
        CU_ASSERT_EQUAL(hk_case_load(hk_test_write_case("a.yaml", text), 0, NULL, &c), HK_ERR_CASE);
        CU_ASSERT(has(bad[i].want));
    }
    /* a mesh with nodes at r < 0, and a 3D mesh, when the case is bound to it */
    hk_case c;
    HK_ASSERT_OK(
        hk_case_load(hk_test_write_case("b.yaml", "geometry:\n  generate: {shape: rectangle, size: [1, 1], "
                                          "cells: [2, 2]}\nanalysis: axisymmetric\n"
                                          "supports: [{boundary: bottom, fix: [y]}]\n"
                                          "materials: [{E: 1e9, nu: 0.3}]\n"),
                     0, NULL, &c));
    hk_case_model model;
    for (int64_t i = 0; i < m.nnodes; i++)
        m.coords[3 * i] -= 0.5;
    CU_ASSERT_EQUAL(hk_case_bind(&c, &m, &model), HK_ERR_CASE);
    CU_ASSERT(has("b.yaml:3:11: node"));
    CU_ASSERT(has("lies at r = x = -0.5 < 0"));
    hk_mesh_free(&m);
    HK_ASSERT_OK(hk_mesh_box(1, 1, 1, 1, 1, 1, HK_EL_HEX8, &m));
    CU_ASSERT_EQUAL(hk_case_bind(&c, &m, &model), HK_ERR_CASE);
    CU_ASSERT(has("b.yaml:3:11: the analysis is axisymmetric (2D) but the mesh is 3D"));
    hk_mesh_free(&m);
    hk_case_free(&c);
}

/* ---- the ready case ------------------------------------------------------------------------ */

#ifdef HOOKE_HAVE_GMSH
/* cases/axisym/thick_cylinder.yaml against the values in its header: u_r and sigma_tt at the
 * bore within 1 % (quad8), the axial reaction per radian; and at nu = 0.4999 on quad4. */
static void test_ready_case(void)
{
    const double a = 0.1, b = 0.2, p = 100e6, E = 200e9;
    for (int k = 0; k < 2; k++) {
        const double nu = k ? 0.4999 : 0.3;
        const char *sets[] = {"materials.0.nu=0.4999", "geometry.order=1"};
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(hk_test_run_case("cases/axisym/thick_cylinder.yaml", k ? 2 : 0, sets, &c, &r));
        const double A = p * a * a / (b * b - a * a), B = A * b * b;
        const double ua = (1 + nu) / E * ((1 - 2 * nu) * A * a + B / a), sta = A + B / (a * a);
        const int g = hk_mesh_find_boundary(&r.mesh, "bore");
        CU_ASSERT_FATAL(g >= 0);
        double eu = 0, es = 0;
        for (int64_t i = 0; i < r.mesh.boundaries[g].nnodes; i++) {
            const int64_t n = r.mesh.boundaries[g].nodes[i];
            eu = fmax(eu, fabs(r.fields.u[3 * n] - ua) / ua);
            es = fmax(es, fabs(r.fields.stress[6 * n + 2] - sta) / sta);
        }
        fprintf(stderr,
                "\n    thick_cylinder nu %g: bore u_r %.5e (off %.3f %%), sigma_tt off %.3f %% ",
                nu, ua, 100 * eu, 100 * es);
        CU_ASSERT(eu < 0.01);
        if (!k) {
            CU_ASSERT(es < 0.01);
            const double Fz = nu * A * (b * b - a * a);
            CU_ASSERT_DOUBLE_EQUAL(r.fields.support_reaction[1][1], Fz, 0.01 * Fz);
        }
        hk_run_free(&r);
        hk_case_free(&c);
    }
}
#endif

HK_SUITE(axisym, {"Lame cylinder: quadratic within 1 %, linear coarse", test_lame},
         {"Lame at nu = 0.4999: selective within 1 %, full locks", test_lame_incompressible},
         {"stiffness: axial translation free, radial not", test_rigid_modes},
         {"axial stretch with axis nodes: exact, reactions per radian", test_axial_stretch},
         {"solid cylinder under radial pressure: exact", test_radial_pressure},
         {"loaded ring: force, split force, gravity per radian", test_loaded_ring},
         {"heated cylinder: free stress-free, held -E alpha dT/(1-2nu)", test_thermal},
         {"orthotropic and anisotropic laws: exact uniaxial state", test_general_laws},
         {"vtu components rr zz tt rz", test_vtu_names},
         {"bad input: one sentence (library, file:line:col)", test_errors},
#ifdef HOOKE_HAVE_GMSH
         {"cases/axisym/thick_cylinder.yaml: header values", test_ready_case},
#endif
)
