/* Elastic supports and remote loads: springs against closed forms (a bar on springs, a block on
 * a Winkler bed, a grounded node spring), the spring stiffness symmetric, positive and with the
 * right totals, the resultant force and moment of a distributing coupling exact, a rigid
 * coupling's nodes moving rigidly, reactions (force and moment) in equilibrium with the applied
 * loads, the ready cases cases/springs and cases/remote against their headers, and bad input
 * refused with one sentence at file:line:col. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "case.h"
#include "pattern.h"
#include "springs.h"
#include "test_util.h"

static void cross(const double a[3], const double b[3], double c[3])
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

/* Largest |u_c - want| over the nodes with coordinate k equal to at (component c). */
static double plane_error(const hk_run *r, const hk_fields *f, int k, double at, int c, double want)
{
    double err = 0;
    for (int64_t i = 0; i < r->mesh.nnodes; i++)
        if (fabs(r->mesh.coords[3 * i + k] - at) < 1e-9)
            err = fmax(err, fabs(f->u[3 * i + c] - want));
    return err;
}

/* The reactions of every support and the applied load (force F and moment M about the origin)
 * must add up to zero. */
static void check_equilibrium(const hk_run *r, const hk_fields *f, const double F[3],
                              const double M[3], double tolF, double tolM)
{
    double R[3] = {F[0], F[1], F[2]}, RM[3] = {M[0], M[1], M[2]};
    for (int k = 0; k < r->model.problem.nsupports; k++) {
        const double *x0 = r->model.problem.supports[k].moment_point, *Fk = f->support_reaction[k];
        double shift[3];
        cross(x0, Fk, shift); /* moment about x0 -> about the origin */
        for (int a = 0; a < 3; a++) {
            R[a] += Fk[a];
            RM[a] += f->support_moment[k][a] + shift[a];
        }
    }
    for (int a = 0; a < 3; a++) {
        CU_ASSERT(fabs(R[a]) <= tolF);
        CU_ASSERT(fabs(RM[a]) <= tolM);
    }
}

/* A bar on springs: 1 m x 0.1 m x 0.1 m pulled by F on its end face, held at the other end by
 * normal springs k only (and the symmetry planes y = 0, z = 0): the end slides by F / (k A),
 * exactly (a uniform state). 3D hex20 and tet10, 2D quad8 in plane stress (thickness 0.1). */
static void test_spring_bar(void)
{
    const double F = 1e4, k = 1e11, E = 200e9, A = 0.01, L = 1;
    for (int g = 0; g < 3; g++) {
        const int twod = g == 2;
        const char *sets[3][6] = {
            {"geometry.generate={shape: box, size: [1, 0.1, 0.1], cells: [6, 2, 2], element: "
             "hex20}",
             "materials=[{name: steel, E: 200e9, nu: 0.3}]",
             "supports=[{boundary: xmin, type: spring, normal: 1e11}, {boundary: ymin, fix: [y]}, "
             "{boundary: zmin, fix: [z]}]",
             "loads=[{force: {boundary: xmax, value: [1e4, 0, 0]}}]", "solver.pc=amg"},
            {"geometry.generate={shape: box, size: [1, 0.1, 0.1], cells: [4, 2, 2], element: "
             "tet10}",
             "materials=[{name: steel, E: 200e9, nu: 0.3}]",
             "supports=[{boundary: xmin, type: spring, normal: 1e11}, {boundary: ymin, fix: [y]}, "
             "{boundary: zmin, fix: [z]}]",
             "loads=[{force: {boundary: xmax, value: [1e4, 0, 0]}}]", "solver.pc=amg"},
            {"geometry.generate={shape: rectangle, size: [1, 0.1], cells: [6, 2], element: quad8}",
             "materials=[{name: steel, E: 200e9, nu: 0.3}]",
             "supports=[{boundary: left, type: spring, normal: 1e11}, {boundary: bottom, fix: "
             "[y]}]",
             "loads=[{force: {boundary: right, value: [1e4, 0]}}]",
             "analysis={type: plane_stress, thickness: 0.1}", "solver.pc=amg"}};
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(hk_test_run_case("cases/springs/springs.yaml", twod ? 6 : 5, sets[g], &c, &r));
        const double u0 = F / (k * A), u1 = u0 + F * L / (E * A);
        CU_ASSERT(plane_error(&r, &r.fields, 0, 0, 0, u0) < 1e-9 * u0);
        CU_ASSERT(plane_error(&r, &r.fields, 0, L, 0, u1) < 1e-9 * u1);
        /* the springs pull back with -F; the load acts at the end face's centre */
        CU_ASSERT_DOUBLE_EQUAL(r.fields.support_reaction[0][0], -F, 1e-9 * F);
        double Fv[3] = {F, 0, 0}, Mapp[3], xc[3] = {L, 0.05, twod ? 0 : 0.05};
        cross(xc, Fv, Mapp);
        check_equilibrium(&r, &r.fields, Fv, Mapp, 1e-8 * F, 1e-8 * F);
        hk_run_free(&r);
        hk_case_free(&c);
    }
    /* axisymmetric: a solid cylinder of radius 0.1 (r-z section) standing on an axial spring
     * bed, pulled by a force per radian F on its top; the bed and the load are both per radian
     * of the ring, A = R^2 / 2 */
    {
        const char *sets[] = {
            "geometry.generate={shape: rectangle, size: [0.1, 1], cells: [2, 6], element: quad8}",
            "materials=[{name: steel, E: 200e9, nu: 0.3}]",
            "supports=[{boundary: bottom, type: spring, normal: 1e11}, {boundary: left, fix: [x]}]",
            "loads=[{force: {boundary: top, value: [0, 1e4]}}]",
            "analysis=axisymmetric",
            "solver.pc=amg"};
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(hk_test_run_case("cases/springs/springs.yaml", 6, sets, &c, &r));
        const double Ar = 0.1 * 0.1 / 2, u0 = F / (k * Ar), u1 = u0 + F * L / (E * Ar);
        CU_ASSERT(plane_error(&r, &r.fields, 1, 0, 1, u0) < 1e-9 * u0);
        CU_ASSERT(plane_error(&r, &r.fields, 1, L, 1, u1) < 1e-9 * u1);
        CU_ASSERT_DOUBLE_EQUAL(r.fields.support_reaction[0][1], -F, 1e-9 * F);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

/* cases/springs/springs.yaml: the bottom settles by p / k, the top by p / k + p H / E, the bed
 * carries p A at (0.5, 0.5, 0); sigma_zz = -p everywhere. */
static void test_springs_case(void)
{
    const double p = 1e5, k = 1e8, E = 30e9, H = 0.5;
    hk_case c;
    hk_run r;
    HK_ASSERT_OK(hk_test_run_case("cases/springs/springs.yaml", 0, NULL, &c, &r));
    CU_ASSERT(plane_error(&r, &r.fields, 2, 0, 2, -p / k) < 1e-9 * p / k);
    CU_ASSERT(plane_error(&r, &r.fields, 2, H, 2, -(p / k + p * H / E)) < 1e-9 * p / k);
    for (int64_t i = 0; i < r.mesh.nnodes; i++)
        CU_ASSERT(fabs(r.fields.stress[6 * i + 2] + p) < 1e-6 * p);
    CU_ASSERT_DOUBLE_EQUAL(r.fields.support_reaction[0][2], p, 1e-9 * p);
    CU_ASSERT_DOUBLE_EQUAL(r.fields.support_moment[0][0], 0.5 * p, 1e-9 * p);
    CU_ASSERT_DOUBLE_EQUAL(r.fields.support_moment[0][1], -0.5 * p, 1e-9 * p);
    /* the pressure's resultant -p A e_z at (0.5, 0.5, H) */
    double F[3] = {0, 0, -p}, x[3] = {0.5, 0.5, H}, M[3];
    cross(x, F, M);
    check_equilibrium(&r, &r.fields, F, M, 1e-8 * p, 1e-8 * p);
    hk_run_free(&r);
    hk_case_free(&c);
    /* moment_about moves the point of the reported moment: about (0.5, 0.5, 0) it vanishes */
    const char *sets[] = {
        "supports=[{boundary: zmin, type: spring, normal: 1e8, moment_about: "
        "[0.5, 0.5, 0]}, {boundary: xmin, fix: [x]}, {boundary: ymin, fix: [y]}]"};
    HK_ASSERT_OK(hk_test_run_case("cases/springs/springs.yaml", 1, sets, &c, &r));
    for (int a = 0; a < 3; a++)
        CU_ASSERT(fabs(r.fields.support_moment[0][a]) < 1e-8 * p);
    check_equilibrium(&r, &r.fields, F, M, 1e-8 * p, 1e-8 * p);
    hk_run_free(&r);
    hk_case_free(&c);
}

/* A grounded spring at one node: the bar pulled by F with x held only by a spring k_x at the
 * point group 'origin' moves there by F / k_x (the spring carries the whole load). */
static void test_node_spring(void)
{
    const double F = 1e4, kx = 5e7;
    const char *sets[] = {
        "geometry.generate={shape: box, size: [1, 0.1, 0.1], cells: [6, 2, 2], element: hex8}",
        "materials=[{name: steel, E: 200e9, nu: 0.3}]",
        "supports=[{boundary: origin, type: spring, stiffness: [5e7, 0, 0]}, {boundary: ymin, "
        "fix: [y]}, {boundary: zmin, fix: [z]}]",
        "loads=[{force: {boundary: xmax, value: [1e4, 0, 0]}}]", "solver.pc=amg"};
    hk_case c;
    hk_run r;
    HK_ASSERT_OK(hk_test_run_case("cases/springs/springs.yaml", 5, sets, &c, &r));
    const hk_group *g = &r.mesh.boundaries[hk_mesh_find_boundary(&r.mesh, "origin")];
    CU_ASSERT_FATAL(g->nnodes == 1);
    const int64_t o = g->nodes[0];
    CU_ASSERT_DOUBLE_EQUAL(r.fields.u[3 * o], F / kx, 1e-9 * F / kx);
    CU_ASSERT_DOUBLE_EQUAL(r.fields.support_reaction[0][0], -F, 1e-9 * F);
    CU_ASSERT_DOUBLE_EQUAL(r.fields.reaction[3 * o], -F, 1e-9 * F);
    double Fv[3] = {F, 0, 0}, x[3] = {1, 0.05, 0.05}, M[3];
    cross(x, Fv, M);
    check_equilibrium(&r, &r.fields, Fv, M, 1e-8 * F, 1e-8 * F);
    hk_run_free(&r);
    hk_case_free(&c);
}

/* The spring stiffness added to K: K(with springs) - K(without) is symmetric, positive
 * semi-definite, and its zz entries sum to k_n A, its xx and yy entries to k_t A on the flat
 * face z = 0 (sum_ab int N_a N_b dA = A), its xz entries to 0. Supports on the opposite face,
 * so no spring node is eliminated. */
static void test_spring_stiffness(void)
{
    const double kn = 3e8, kt = 1e8, A = 2 * 0.5;
    static const hk_eltype types[] = {HK_EL_HEX8, HK_EL_HEX20, HK_EL_HEX27, HK_EL_TET4,
                                      HK_EL_TET10};
    for (int t = 0; t < 5; t++) {
        hk_mesh m;
        HK_ASSERT_OK(hk_mesh_box(2, 0.5, 0.3, 3, 2, 2, types[t], &m));
        hk_material mat = {.E = 1e9, .nu = 0.25};
        hk_support sup[2] = {{.boundary = hk_mesh_find_boundary(&m, "zmax"), .mask = 7},
                             {.boundary = hk_mesh_find_boundary(&m, "zmin"),
                              .kind = HK_SUPPORT_SPRING,
                              .k_normal = kn,
                              .k_tangential = kt}};
        hk_problem p = {
            .mesh = &m, .analysis = HK_SOLID, .materials = &mat, .nsupports = 1, .supports = sup};
        hk_system s0, s1;
        HK_ASSERT_OK(hk_assemble(&p, &s0));
        p.nsupports = 2;
        HK_ASSERT_OK(hk_assemble(&p, &s1));
        CU_ASSERT_FATAL(s0.K.rowptr[s0.K.nbrows] == s1.K.rowptr[s1.K.nbrows]);
        const int64_t nb = s1.K.nbrows;
        double sum[3][3] = {{0}}, asym = 0, scale = kn * A;
        const int64_t n = 3 * nb;
        double *dK = calloc((size_t)(n * n), sizeof *dK);
        for (int64_t i = 0; i < nb; i++)
            for (int64_t q = s1.K.rowptr[i]; q < s1.K.rowptr[i + 1]; q++)
                for (int a = 0; a < 3; a++)
                    for (int b = 0; b < 3; b++) {
                        double v = s1.K.val[q * 9 + a * 3 + b] - s0.K.val[q * 9 + a * 3 + b];
                        dK[(3 * i + a) * n + 3 * s1.K.colind[q] + b] = v;
                        sum[a][b] += v;
                    }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                asym = fmax(asym, fabs(dK[i * n + j] - dK[j * n + i]));
        CU_ASSERT(asym == 0);
        CU_ASSERT_DOUBLE_EQUAL(sum[2][2], kn * A, 1e-12 * scale);
        CU_ASSERT_DOUBLE_EQUAL(sum[0][0], kt * A, 1e-12 * scale);
        CU_ASSERT_DOUBLE_EQUAL(sum[1][1], kt * A, 1e-12 * scale);
        CU_ASSERT(fabs(sum[0][2]) < 1e-12 * scale && fabs(sum[0][1]) < 1e-12 * scale);
        /* x^T dK x >= 0 for pseudo-random x */
        srand(7);
        double *x = malloc((size_t)n * sizeof *x);
        for (int trial = 0; trial < 20; trial++) {
            double q = 0, nx = 0;
            for (int64_t i = 0; i < n; i++)
                x[i] = rand() / (double)RAND_MAX - 0.5, nx += x[i] * x[i];
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++)
                    q += x[i] * dK[i * n + j] * x[j];
            CU_ASSERT(q >= -1e-12 * scale * nx);
        }
        free(x);
        free(dK);
        hk_system_free(&s0);
        hk_system_free(&s1);
        hk_mesh_free(&m);
    }
}

/* A distributing coupling's nodal forces have exactly the remote load's resultant force F and
 * moment M about the reference point, on flat faces of every facet type (hex8/20/27 give
 * quad4/8/9 faces, tet4/10 tri3/6) and on a 2D edge (line2/3). */
static void test_remote_resultants(void)
{
    static const hk_eltype t3[] = {HK_EL_HEX8, HK_EL_HEX20, HK_EL_HEX27, HK_EL_TET4, HK_EL_TET10};
    static const hk_eltype t2[] = {HK_EL_QUAD4, HK_EL_QUAD8, HK_EL_TRI6};
    for (int t = 0; t < 8; t++) {
        const int twod = t >= 5;
        hk_mesh m;
        if (twod)
            HK_ASSERT_OK(hk_mesh_rectangle(1.5, 0.4, 5, 3, t2[t - 5], &m));
        else
            HK_ASSERT_OK(hk_mesh_box(1.5, 0.4, 0.3, 5, 3, 2, t3[t], &m));
        /* a distorted mesh: the weights are not equal */
        for (int64_t i = 0; i < m.nnodes; i++) {
            double *x = m.coords + 3 * i;
            x[1] += 0.05 * x[0] * x[0];
            if (!twod) x[2] += 0.03 * x[0] * x[1];
        }
        hk_material mat = {.E = 1e9, .nu = 0.25};
        hk_support sup = {.boundary = hk_mesh_find_boundary(&m, twod ? "left" : "xmin"), .mask = 7};
        hk_load ld = {.kind = HK_LOAD_REMOTE,
                      .boundary = hk_mesh_find_boundary(&m, twod ? "right" : "xmax"),
                      .value = {120, -340, twod ? 0 : 75},
                      .moment = {twod ? 0 : 55, twod ? 0 : -20, 90},
                      .point = {2.3, 0.7, twod ? 0 : -0.4},
                      .coupling = HK_COUPLING_DISTRIBUTING};
        hk_problem p = {.mesh = &m,
                        .analysis = twod ? HK_PLANE_STRESS : HK_SOLID,
                        .thickness = 0.2,
                        .materials = &mat,
                        .nloads = 1,
                        .loads = &ld,
                        .nsupports = 1,
                        .supports = &sup};
        hk_system s;
        HK_ASSERT_OK(hk_assemble(&p, &s));
        const int d = m.dim;
        double F[3] = {0, 0, 0}, M[3] = {0, 0, 0};
        for (int64_t i = 0; i < m.nnodes; i++) {
            double f[3] = {0, 0, 0}, r[3], mm[3];
            for (int c = 0; c < d; c++)
                f[c] = s.f_ext[i * d + c];
            for (int c = 0; c < 3; c++)
                r[c] = m.coords[3 * i + c] - ld.point[c];
            cross(r, f, mm);
            for (int c = 0; c < 3; c++)
                F[c] += f[c], M[c] += mm[c];
        }
        for (int c = 0; c < 3; c++) {
            CU_ASSERT_DOUBLE_EQUAL(F[c], ld.value[c], 1e-12 * 400);
            CU_ASSERT_DOUBLE_EQUAL(M[c], ld.moment[c], 1e-12 * 1000);
        }
        hk_system_free(&s);
        hk_mesh_free(&m);
    }
}

/* Solve an assembled system (cholesky, or cg + jacobi to 1e-10) and post-process it. */
static void solve_post(const hk_problem *p, hk_system *s, double **u, hk_fields *f)
{
    hk_options *o = NULL;
    hk_solver *sv = NULL;
    hk_result res;
    HK_ASSERT_OK(hk_options_create(&o));
#ifdef HOOKE_HAVE_CHOLMOD
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu method=cholesky"));
#else /* the rigid couplings' systems reach a true residual of about 3e-11, not 1e-12 */
    HK_ASSERT_OK(hk_options_parse(o, "backend=cpu method=cg pc=jacobi tol=1e-10 maxit=20000"));
#endif
    HK_ASSERT_OK(hk_solver_create(&s->K, o, &sv));
    *u = calloc((size_t)s->ndof, sizeof **u);
    HK_ASSERT_OK(hk_solver_solve(sv, s->f, *u, &res));
    CU_ASSERT(hk_reason_converged(res.reason));
    hk_solver_destroy(sv);
    hk_options_destroy(o);
    HK_ASSERT_OK(hk_postproc(p, s, *u, f));
}

/* A rigid coupling: K stays symmetric, the coupled nodes move as a rigid body with the
 * reference point (to rounding), and the reactions balance the remote force and moment, in 3D
 * and in 2D; a distributing coupling's reactions balance too. */
static void test_remote_rigid(void)
{
    for (int t = 0; t < 4; t++) {
        const int twod = t >= 2, rigid = t % 2 == 0;
        hk_mesh m;
        if (twod)
            HK_ASSERT_OK(hk_mesh_rectangle(1, 0.2, 8, 2, HK_EL_QUAD8, &m));
        else
            HK_ASSERT_OK(hk_mesh_box(1, 0.2, 0.1, 6, 2, 2, HK_EL_HEX20, &m));
        hk_material mat = {.E = 2e9, .nu = 0.3};
        hk_support sup = {.boundary = hk_mesh_find_boundary(&m, twod ? "left" : "xmin"),
                          .mask = 7,
                          .moment_point = {0.1, -0.2, twod ? 0 : 0.3}};
        hk_load ld = {.kind = HK_LOAD_REMOTE,
                      .boundary = hk_mesh_find_boundary(&m, twod ? "right" : "xmax"),
                      .value = {30, -20, twod ? 0 : 10},
                      .moment = {twod ? 0 : 4, twod ? 0 : -3, 5},
                      .point = {1.2, 0.1, twod ? 0 : 0.05},
                      .coupling = rigid ? HK_COUPLING_RIGID : HK_COUPLING_DISTRIBUTING};
        hk_problem p = {.mesh = &m,
                        .analysis = twod ? HK_PLANE_STRESS : HK_SOLID,
                        .thickness = 0.1,
                        .materials = &mat,
                        .nloads = 1,
                        .loads = &ld,
                        .nsupports = 1,
                        .supports = &sup};
        hk_system s;
        HK_ASSERT_OK(hk_assemble(&p, &s));
        const int d = m.dim;
        CU_ASSERT_EQUAL(s.ndof, d * (m.nnodes + (rigid ? 2 : 0)));
        CU_ASSERT_EQUAL(s.K.nbrows, m.nnodes + (rigid ? 2 : 0));
        /* symmetric, to the last bit */
        double asym = 0;
        for (int64_t i = 0; i < s.K.nbrows; i++)
            for (int64_t q = s.K.rowptr[i]; q < s.K.rowptr[i + 1]; q++) {
                int64_t j = s.K.colind[q], qt = -1;
                for (int64_t q2 = s.K.rowptr[j]; q2 < s.K.rowptr[j + 1]; q2++)
                    if (s.K.colind[q2] == i) qt = q2;
                CU_ASSERT_FATAL(qt >= 0);
                for (int a = 0; a < d; a++)
                    for (int b = 0; b < d; b++)
                        asym = fmax(asym, fabs(s.K.val[q * d * d + a * d + b] -
                                               s.K.val[qt * d * d + b * d + a]));
            }
        CU_ASSERT(asym == 0);
        double *u;
        hk_fields f;
        solve_post(&p, &s, &u, &f);
        double umax = f.max_u;
        CU_ASSERT(umax > 0);
        if (rigid) {
            const double *tr = u + m.nnodes * d, *th = tr + d;
            const hk_group *g = &m.boundaries[ld.boundary];
            double err = 0;
            for (int64_t k = 0; k < g->nnodes; k++) {
                const int64_t i = g->nodes[k];
                double r[3], w[3] = {0, 0, 0}, wr[3];
                for (int c = 0; c < 3; c++)
                    r[c] = m.coords[3 * i + c] - ld.point[c];
                if (twod)
                    w[2] = th[0];
                else
                    memcpy(w, th, sizeof w);
                cross(w, r, wr);
                for (int c = 0; c < d; c++)
                    err = fmax(err, fabs(f.u[3 * i + c] - (tr[c] + wr[c])));
            }
            CU_ASSERT(err <= 1e-14 * umax);
            /* the eliminated rows themselves solve to 0: the displacement is the recovery's */
            CU_ASSERT(u[g->nodes[0] * d] == 0);
        }
        double Mo[3], xF[3];
        cross(ld.point, ld.value, xF);
        for (int c = 0; c < 3; c++)
            Mo[c] = ld.moment[c] + xF[c];
        hk_run r = {0};
        r.model.problem = p;
        check_equilibrium(&r, &f, ld.value, Mo, 1e-9 * 30, 1e-9 * 30);
        free(u);
        hk_fields_free(&f);
        hk_system_free(&s);
        hk_mesh_free(&m);
    }
}

/* Least-squares rotation about the x axis of the nodes at x = L: sum (y u_z - z u_y) / sum r^2;
 * and their mean u_z. */
static void tip_motion(const hk_run *r, const hk_fields *f, double L, double *phi, double *uz)
{
    double num = 0, den = 0, sz = 0;
    int cnt = 0;
    for (int64_t i = 0; i < r->mesh.nnodes; i++) {
        const double *x = r->mesh.coords + 3 * i;
        if (fabs(x[0] - L) > 1e-9) continue;
        const double *ui = f->u + 3 * i;
        num += x[1] * ui[2] - x[2] * ui[1];
        den += x[1] * x[1] + x[2] * x[2];
        sz += ui[2], cnt++;
    }
    *phi = num / den;
    *uz = sz / cnt;
}

/* cases/remote: the tube's twist T L / (G J) and, in bending, its end rotation M L / (E I) and
 * deflection -M L^2 / (2 E I), within 2 %, through a distributing and a rigid coupling; the
 * root's reaction moment is -T (-M) exactly. */
static void test_remote_cases(void)
{
    const double E = 200e9, nu = 0.3, G = E / (2 * (1 + nu)), L = 0.5, ro = 0.05, ri = 0.04;
    const double J = M_PI / 2 * (pow(ro, 4) - pow(ri, 4)), I = J / 2, T = 1000;
    const double phi = T * L / (G * J), th = T * L / (E * I), w = -T * L * L / (2 * E * I);
    for (int rigid = 0; rigid < 2; rigid++) {
        hk_case c;
        hk_run r;
        const char *sets[] = {"geometry.size=0.02"};
        HK_ASSERT_OK(hk_test_run_case(
            rigid ? "cases/remote/tube_rigid.yaml" : "cases/remote/tube.yaml", 1, sets, &c, &r));
        CU_ASSERT_FATAL(r.nlc == 2);
        double p, uz;
        tip_motion(&r, &r.lc[0].fields, L, &p, &uz);
        CU_ASSERT(fabs(p - phi) < 0.02 * phi);
        tip_motion(&r, &r.lc[1].fields, L, &p, &uz);
        CU_ASSERT(fabs(uz - w) < 0.02 * fabs(w));
        CU_ASSERT_DOUBLE_EQUAL(r.lc[0].fields.support_moment[0][0], -T, 1e-6 * T);
        CU_ASSERT_DOUBLE_EQUAL(r.lc[1].fields.support_moment[0][1], -T, 1e-6 * T);
        if (rigid) { /* the reference point's own rotations */
            const int64_t ref = r.mesh.nnodes * 3;
            CU_ASSERT(fabs(r.lc[0].u[ref + 3] - phi) < 0.02 * phi);
            CU_ASSERT(fabs(r.lc[1].u[ref + 4] - th) < 0.02 * th);
            CU_ASSERT(fabs(r.lc[1].u[ref + 2] - (w - 0.1 * th)) < 0.02 * fabs(w - 0.1 * th));
        }
        printf("\n    %s: twist %.5e (beam %.5e), deflection %.5e (beam %.5e) ",
               rigid ? "rigid" : "distributing", (tip_motion(&r, &r.lc[0].fields, L, &p, &uz), p),
               phi, (tip_motion(&r, &r.lc[1].fields, L, &p, &uz), uz), w);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

/* Write text to <tmp>/name and return its path. */
#define BAD_HEAD                                                                                   \
    "title: bad\n"                                                                                 \
    "geometry:\n"                                                                                  \
    "  generate: {shape: box, size: [1, 0.1, 0.1], cells: [4, 1, 1], element: hex8}\n"             \
    "analysis: 3d\n"                                                                               \
    "materials:\n"                                                                                 \
    "  - {name: steel, E: 200e9, nu: 0.3}\n"

/* Bad input: one sentence at file:line:col. */
static void test_bad_input(void)
{
    static const struct {
        const char *text, *where, *what;
    } bad[] = {
        {BAD_HEAD "supports:\n"
                  "  - {boundary: xmin, type: spring, normal: -1e8}\n",
         ":8:44: normal stiffness = -1e+08 is negative", "must be >= 0"},
        {BAD_HEAD "supports:\n"
                  "  - {boundary: xmin, type: spring, stiffness: [1e6, -2, 0]}\n",
         ":8:48: stiffness[1] = -2 is negative", "must be >= 0"},
        {BAD_HEAD "supports:\n"
                  "  - {boundary: xmin, type: spring, normal: .inf}\n",
         ":8:44: normal stiffness must be a finite number", ".inf"},
        {BAD_HEAD "supports:\n"
                  "  - {boundary: xmin, type: springs, normal: 1}\n",
         ":8:28: supports[0] has type 'springs'", "use fixed (the default) or spring"},
        {BAD_HEAD "supports:\n"
                  "  - {boundary: xmin, normal: 1e8, fix: all}\n",
         ":8:22: supports[0] sets normal", "add type: spring"},
        {BAD_HEAD "supports:\n"
                  "  - {boundary: xmin, fix: all}\n"
                  "loads:\n"
                  "  - remote_force: {boundary: xmax, force: [1, 0, 0]}\n",
         ":10:20: loads[0].remote_force needs point", "reference point"},
        {BAD_HEAD "supports:\n"
                  "  - {boundary: xmin, fix: all}\n"
                  "loads:\n"
                  "  - remote_force: {boundary: xmax, point: [2, 0, 0], force: [1, 0, 0], "
                  "coupling: kinematic}\n",
         ":10:82: coupling 'kinematic' is not known", "use distributing or rigid"},
        {BAD_HEAD "supports:\n"
                  "  - {boundary: xmin, fix: all}\n"
                  "load_cases:\n"
                  "  - name: a\n"
                  "    loads:\n"
                  "      - remote_force: {boundary: xmax, point: [2, 0, 0], moment: [1, 0, 0], "
                  "coupling: rigid}\n"
                  "  - name: b\n"
                  "    loads:\n"
                  "      - remote_force: {boundary: xmax, point: [3, 0, 0], moment: [1, 0, 0], "
                  "coupling: rigid}\n",
         ":15:34: a rigid coupling is part of the stiffness matrix", "another boundary or point"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const char *path = hk_test_write_case("bad.yaml", bad[k].text);
        hk_case c;
        int err = hk_case_load(path, 0, NULL, &c);
        CU_ASSERT_EQUAL(err, HK_ERR_CASE);
        const char *msg = hk_error_message();
        int ok = strstr(msg, "bad.yaml") && strstr(msg, bad[k].where) && strstr(msg, bad[k].what) &&
                 !strchr(msg, '\n');
        if (!ok) fprintf(stderr, "\n  case %zu: %s\n", k, msg);
        CU_ASSERT(ok);
        if (!err) hk_case_free(&c);
    }
    /* found at assembly, named at the case file: a rigid coupling on a held face, and springs per
     * area on a point group */
    static const struct {
        const char *text, *what;
    } model[] = {
        {BAD_HEAD "supports:\n"
                  "  - {boundary: xmin, fix: all}\n"
                  "loads:\n"
                  "  - remote_force: {boundary: xmin, point: [-1, 0, 0], force: [1, 0, 0], "
                  "coupling: rigid}\n",
         "is held by a support and coupled rigidly"},
        {BAD_HEAD "supports:\n"
                  "  - {boundary: xmin, fix: all}\n"
                  "  - {boundary: origin, type: spring, normal: 1e6}\n",
         "has a stiffness per area, which needs a boundary of dimension 2"},
        {BAD_HEAD "supports:\n"
                  "  - {boundary: xmax, type: spring, normal: 1e6}\n",
         "the supports do not prevent rigid-body motion"},
    };
    for (size_t k = 0; k < sizeof model / sizeof model[0]; k++) {
        const char *path = hk_test_write_case("bad.yaml", model[k].text);
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(hk_case_load(path, 0, NULL, &c));
        hk_run_opts o = {.backend = "cpu", .quiet = 1};
        int err = hk_run_case(&c, &o, &r);
        CU_ASSERT(err != 0);
        const char *msg = hk_error_message();
        int ok = strstr(msg, "bad.yaml") && strstr(msg, model[k].what) && !strchr(msg, '\n');
        if (!ok) fprintf(stderr, "\n  model case %zu: %s\n", k, msg);
        CU_ASSERT(ok);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

/* The directions a spring support holds, as the rigid-body check reads them: stiff normally
 * and tangentially, every axis at each node of its faces (each visit a unit axis, the three
 * axes as often); stiff normally only, the faces' normal (here -z on z = 0). */
typedef struct held_seen {
    int64_t visits, axis[3], other;
} held_seen;

static void held_record(void *ctx, int32_t node, const double dir[3])
{
    held_seen *h = ctx;
    (void)node;
    h->visits++;
    int k = -1;
    for (int a = 0; a < 3; a++)
        if (dir[a] == 1 && dir[(a + 1) % 3] == 0 && dir[(a + 2) % 3] == 0) k = a;
    if (k >= 0)
        h->axis[k]++;
    else
        h->other++;
}

static void test_spring_directions(void)
{
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_box(2, 0.5, 0.3, 3, 2, 2, HK_EL_HEX8, &m));
    hk_material mat = {.E = 1e9, .nu = 0.25};
    hk_support sup = {.boundary = hk_mesh_find_boundary(&m, "zmin"),
                      .kind = HK_SUPPORT_SPRING,
                      .k_normal = 3e8,
                      .k_tangential = 1e8};
    hk_problem p = {
        .mesh = &m, .analysis = HK_SOLID, .materials = &mat, .nsupports = 1, .supports = &sup};
    hk_adj n2c = {0};
    HK_ASSERT_OK(hk_asm_node_cells(&m, &n2c));
    held_seen h = {0};
    HK_ASSERT_OK(hk_springs_directions(&p, &n2c, held_record, &h));
    CU_ASSERT(h.visits > 0 && h.other == 0);
    CU_ASSERT(h.axis[0] == h.visits / 3 && h.axis[1] == h.axis[0] && h.axis[2] == h.axis[0]);
    sup.k_tangential = 0; /* the normal alone: -z, not an axis of +1 */
    held_seen g = {0};
    HK_ASSERT_OK(hk_springs_directions(&p, &n2c, held_record, &g));
    CU_ASSERT(g.visits == h.visits / 3 && g.other == g.visits);
    hk_adj_free(&n2c);
    hk_mesh_free(&m);
}

HK_SUITE(supports, {"a bar on springs: u = F / (k A), 3D, 2D and axisymmetric", test_spring_bar},
         {"cases/springs: a block on a Winkler bed, u = p / k", test_springs_case},
         {"a grounded node spring: u = F / k", test_node_spring},
         {"spring stiffness symmetric, positive, totals k A", test_spring_stiffness},
         {"the directions springs hold for the rigid-body check", test_spring_directions},
         {"distributing coupling: resultant force and moment exact", test_remote_resultants},
         {"rigid coupling: rigid motion, symmetric K, reactions in equilibrium", test_remote_rigid},
         {"cases/remote: tube in torsion and bending vs beam theory", test_remote_cases},
         {"bad supports and remote forces: one sentence at file:line:col", test_bad_input})
