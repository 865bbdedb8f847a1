/* The device assembly and recovery (fem_cuda/) against the host's (assembly/, postproc/).
 *
 * fem_emul (CPU): the device steps emulated on the host (the same kernel bodies in serial
 * loops) give the host's K, f and fields to the last bit, for every element kind, analysis and
 * material of the catalogue (hk_test_fem_case), with the cells cut into one chunk or into many,
 * and a node of more cells than a row merges at once; the resident K solves as the host's;
 * the errors are the host's sentences. The numeric kernel's variants (HOOKE_FEM_NUMERIC) give
 * the same bytes, and the slot table the pattern writes holds every block's place.
 *
 * fem_cuda (device): the same on the GPU, K and f to 1e-13 of their largest entry (fused
 * multiply-adds round differently), the pattern exactly, the fields to 1e-12; two runs give the
 * same bytes; solved there through hk_solver_create_resident; hooke run --assembly device
 * against --assembly host; every variant of the numeric kernel gives the default's bytes. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "case.h"
#include "fem_device.h"
#include "fem_numeric.h"
#include "hk_impl.h" /* the backend's copy_from: the coordinates handed over */
#include "test_util.h"

/* ---- comparisons ------------------------------------------------------------------------ */

/* max |a - b| over max |b| (NaN propagates). */
static double rel(const double *a, const double *b, int64_t n)
{
    return hk_test_reldiff(a, b, (long)n);
}

/* The device system d against the host's h: the pattern exactly, K within tol of its largest
 * entry (tol 0: the same bytes), f and f_ext within tol of their scale, the supports equal. */
static void compare_systems(const char *name, const hk_system *h, const hk_system *d, double tol)
{
    hk_bcsr K;
    CU_ASSERT_PTR_NULL(d->K.rowptr);
    HK_ASSERT_OK(hk_resident_bcsr_download(&d->Kd, &K));
    const int bs = h->K.bs;
    const int64_t nb = h->K.nbrows, nnzb = h->K.rowptr[nb];
    int ok = K.bs == bs && K.nbrows == nb && K.nbcols == h->K.nbcols;
    ok = ok && !memcmp(K.rowptr, h->K.rowptr, (size_t)(nb + 1) * sizeof *K.rowptr);
    ok = ok && !memcmp(K.colind, h->K.colind, (size_t)nnzb * sizeof *K.colind);
    if (!ok) printf("\n    %s: the pattern differs ", name);
    CU_ASSERT(ok);
    CU_ASSERT_EQUAL(hk_system_nnz(d), hk_system_nnz(h));
    const int64_t nv = nnzb * bs * bs, ndof = h->ndof;
    double eK = ok ? rel(K.val, h->K.val, nv) : 1;
    /* f's scale: the loads, or K's entries times the prescribed values */
    double fs = 0, ks = 0, us = 0;
    for (int64_t i = 0; i < ndof; i++)
        fs = fmax(fs, fabs(h->f_ext[i])), us = fmax(us, fabs(h->u_fixed[i]));
    for (int64_t k = 0; k < nv; k++)
        ks = fmax(ks, fabs(h->K.val[k]));
    fs = fmax(fs, ks * us);
    double ef = 0, ee = 0;
    for (int64_t i = 0; i < ndof; i++) {
        ef = fmax(ef, fabs(d->f[i] - h->f[i]));
        ee = fmax(ee, fabs(d->f_ext[i] - h->f_ext[i]));
    }
    ef = fs > 0 ? ef / fs : ef;
    ee = fs > 0 ? ee / fs : ee;
    const int same = ok && !memcmp(K.val, h->K.val, (size_t)nv * sizeof *K.val) &&
                     !memcmp(d->f, h->f, (size_t)ndof * sizeof *d->f) &&
                     !memcmp(d->f_ext, h->f_ext, (size_t)ndof * sizeof *d->f_ext);
    if (tol == 0 ? !same : (eK > tol || ef > tol || ee > tol))
        printf("\n    %s: K %.2e, f %.2e, f_ext %.2e ", name, eK, ef, ee);
    CU_ASSERT(tol == 0 ? same : eK <= tol && ef <= tol && ee <= tol);
    CU_ASSERT_EQUAL(d->ndof, ndof);
    CU_ASSERT_EQUAL(d->dim, h->dim);
    CU_ASSERT_EQUAL(d->nfixed, h->nfixed);
    CU_ASSERT(!memcmp(d->fixed, h->fixed, (size_t)ndof));
    CU_ASSERT(!memcmp(d->u_fixed, h->u_fixed, (size_t)ndof * sizeof *d->u_fixed));
    hk_bcsr_free(&K);
}

/* One field: within tol of its largest value (tol 0: the same bytes). */
static int field_ok(const char *name, const char *what, const double *a, const double *b, int64_t n,
                    double tol)
{
    const int ok = tol == 0 ? !memcmp(a, b, (size_t)n * sizeof *a) : rel(a, b, n) <= tol;
    if (!ok) printf("\n    %s: %s differs by %.2e ", name, what, rel(a, b, n));
    return ok;
}

/* The largest |entry| of a[0..n). */
static double max_abs(const double *a, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        m = fmax(m, fabs(a[i]));
    return m;
}

/* A von Mises field (of the stress field sig, whose entries differ from the host's by at most
 * tol times max |sig|): within that bound, carried through. Von Mises is a seminorm of the
 * stress, VM(s) = sqrt(0.5 ((sx-sy)^2 + (sy-sz)^2 + (sz-sx)^2) + 3 (txy^2 + tyz^2 + txz^2)),
 * so |VM(a) - VM(b)| <= VM(a - b) <= sqrt(13) max_k |a_k - b_k| (the maximum at a - b =
 * m (1, -1, 1, 1, 1, 1)). Its scale is therefore the stress's, not its own: under a
 * temperature load the stress has a large hydrostatic part that von Mises cancels, and the
 * rounding of the components (fused multiply-adds on the device) is then a larger fraction of
 * von Mises than of the stress. tol 0: the same bytes. */
static int von_mises_ok(const char *name, const char *what, const double *a, const double *b,
                        int64_t n, const double *sig_host, double tol)
{
    if (tol == 0) return field_ok(name, what, a, b, n, 0);
    const double scale = sqrt(13.0) * max_abs(sig_host, 6 * n);
    double e = 0;
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(a[i] - b[i]) <= e)) e = fabs(a[i] - b[i]); /* NaN propagates */
    const int ok = e <= tol * scale;
    if (!ok) printf("\n    %s: %s differs by %.2e of sqrt(13) max |stress| ", name, what, e / scale);
    return ok;
}

static void compare_fields(const char *name, const hk_fields *h, const hk_fields *d, double tol)
{
    const int64_t nn = h->nnodes, ne = h->ncells;
    CU_ASSERT(d->nnodes == nn && d->ncells == ne && d->nsupports == h->nsupports);
    CU_ASSERT(field_ok(name, "u", d->u, h->u, 3 * nn, 0));
    CU_ASSERT(field_ok(name, "strain", d->strain, h->strain, 6 * nn, tol));
    CU_ASSERT(field_ok(name, "stress", d->stress, h->stress, 6 * nn, tol));
    CU_ASSERT(von_mises_ok(name, "von Mises", d->von_mises, h->von_mises, nn, h->stress, tol));
    CU_ASSERT(field_ok(name, "principal", d->principal, h->principal, 3 * nn, tol));
    CU_ASSERT(field_ok(name, "cell stress", d->cell_stress, h->cell_stress, 6 * ne, tol));
    CU_ASSERT(von_mises_ok(name, "cell von Mises", d->cell_von_mises, h->cell_von_mises, ne,
                           h->cell_stress, tol));
    CU_ASSERT(field_ok(name, "reaction", d->reaction, h->reaction, 3 * nn, tol));
    for (int k = 0; k < h->nsupports; k++) {
        CU_ASSERT(field_ok(name, "support reaction", d->support_reaction[k], h->support_reaction[k],
                           3, tol));
        CU_ASSERT(
            field_ok(name, "support moment", d->support_moment[k], h->support_moment[k], 3, tol));
    }
    CU_ASSERT(tol == 0 ? d->max_u == h->max_u : fabs(d->max_u - h->max_u) <= tol * h->max_u);
    CU_ASSERT(tol == 0 ? d->max_von_mises == h->max_von_mises
                       : fabs(d->max_von_mises - h->max_von_mises) <=
                             tol * sqrt(13.0) * max_abs(h->stress, 6 * nn));
}

/* A displacement field with every strain component (not a solution: recovery does not care). */
static double *smooth_u(const hk_mesh *m, int64_t ndof)
{
    double *u = malloc((size_t)ndof * sizeof *u);
    for (int64_t i = 0; i < m->nnodes; i++)
        for (int c = 0; c < m->dim; c++) {
            const double *x = m->coords + 3 * i;
            u[i * m->dim + c] =
                1e-4 * (sin(1.3 * x[0] + 0.7 * x[1] + 0.4 * x[2] + c) + 0.3 * x[0] * x[1]);
        }
    return u;
}

/* ---- a fan: a node of more cells than a row merges at once ------------------------------- */

/* A disk of nseg triangles (tri3, or tri6 with midside nodes) around the origin. */
static void fan_mesh(int nseg, hk_eltype t, hk_mesh *m)
{
    const int quad = t == HK_EL_TRI6, per = quad ? 6 : 3;
    memset(m, 0, sizeof *m);
    m->dim = 2;
    m->nnodes = 1 + nseg + (quad ? 2 * nseg : 0);
    m->coords = calloc(3 * (size_t)m->nnodes, sizeof *m->coords);
    for (int k = 0; k < nseg; k++) {
        const double a = 2 * M_PI * k / nseg, b = 2 * M_PI * (k + 0.5) / nseg;
        m->coords[3 * (1 + k)] = cos(a), m->coords[3 * (1 + k) + 1] = sin(a);
        if (!quad) continue;
        double *spoke = m->coords + 3 * (1 + nseg + k), *rim = m->coords + 3 * (1 + 2 * nseg + k);
        spoke[0] = 0.5 * cos(a), spoke[1] = 0.5 * sin(a);
        rim[0] = cos(b) * cos(M_PI / nseg), rim[1] = sin(b) * cos(M_PI / nseg);
    }
    m->cells.n = nseg;
    m->cells.type = malloc((size_t)nseg);
    m->cells.ptr = malloc(((size_t)nseg + 1) * sizeof *m->cells.ptr);
    m->cells.nodes = malloc((size_t)nseg * per * sizeof *m->cells.nodes);
    m->cells.tag = malloc((size_t)nseg * sizeof *m->cells.tag);
    m->cell_region = calloc((size_t)nseg, sizeof *m->cell_region);
    for (int k = 0; k < nseg; k++) {
        int32_t *c = m->cells.nodes + (size_t)k * per;
        const int k1 = (k + 1) % nseg;
        c[0] = 0, c[1] = 1 + k, c[2] = 1 + k1;
        if (quad) c[3] = 1 + nseg + k, c[4] = 1 + 2 * nseg + k, c[5] = 1 + nseg + k1;
        m->cells.type[k] = (uint8_t)t;
        m->cells.ptr[k] = (int64_t)k * per;
        m->cells.tag[k] = k + 1;
    }
    m->cells.ptr[nseg] = (int64_t)nseg * per;
    m->nregions = 1;
    m->regions = calloc(1, sizeof *m->regions);
    strcpy(m->regions[0].name, "disk");
    m->regions[0].dim = 2;
    /* the rim's first node pinned, its second held in y */
    m->nboundaries = 2;
    m->boundaries = calloc(2, sizeof *m->boundaries);
    for (int g = 0; g < 2; g++) {
        snprintf(m->boundaries[g].name, sizeof m->boundaries[g].name, "pin%d", g);
        m->boundaries[g].nnodes = 1;
        m->boundaries[g].nodes = malloc(sizeof(int32_t));
        m->boundaries[g].nodes[0] = 1 + g * (nseg / 4);
    }
}

/* The device assembly's node coordinates for the solver (d->coords_d, dim per node, in K's
 * backend's memory): the mesh's, exactly. */
static void check_coords(const char *name, const hk_problem *p, const hk_system *d)
{
    const hk_mesh *m = p->mesh;
    const int64_t n = m->nnodes * m->dim;
    double *x = malloc((size_t)n * sizeof *x + 8);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d->coords_d);
    CU_ASSERT_PTR_EQUAL(d->coords_be, d->Kd.be);
    HK_ASSERT_OK(d->coords_be->copy_from(x, d->coords_d, (size_t)n * sizeof *x));
    int same = 1;
    for (int64_t i = 0; i < m->nnodes; i++)
        for (int a = 0; a < m->dim; a++)
            same = same && x[i * m->dim + a] == m->coords[3 * i + a];
    if (!same) printf("\n    %s: the coordinates handed over differ from the mesh's ", name);
    CU_ASSERT(same);
    free(x);
}

/* ---- the emulation (CPU) ---------------------------------------------------------------- */

/* Every catalogue case: host, emulated device in one chunk, in chunks of about one cell; the
 * same bytes for K, f, f_ext and the fields. */
static void check_case(const hk_fem_driver *drv, hk_test_fem *tc, double tol_k, double tol_f)
{
    hk_system h, d, d2;
    HK_ASSERT_OK(hk_assemble(&tc->p, &h));
    hk_fem_chunk_bytes = 0;
    HK_ASSERT_OK(hk_fem_assemble_with(drv, &tc->p, &d));
    compare_systems(tc->name, &h, &d, tol_k);
    check_coords(tc->name, &tc->p, &d);
    hk_fem_chunk_bytes = 1; /* one cell a chunk */
    HK_ASSERT_OK(hk_fem_assemble_with(drv, &tc->p, &d2));
    compare_systems(tc->name, &h, &d2, tol_k);
    hk_fem_chunk_bytes = 0;
    /* the stiffness alone */
    hk_bcsr Kh, Kd;
    hk_resident_bcsr R;
    HK_ASSERT_OK(hk_assemble_stiffness(&tc->p, &Kh));
    HK_ASSERT_OK(hk_fem_stiffness_with(drv, &tc->p, &R));
    HK_ASSERT_OK(hk_resident_bcsr_download(&R, &Kd));
    const int64_t nv = Kh.rowptr[Kh.nbrows] * Kh.bs * Kh.bs;
    CU_ASSERT(Kd.rowptr[Kd.nbrows] == Kh.rowptr[Kh.nbrows]);
    CU_ASSERT(tol_k == 0 ? !memcmp(Kd.val, Kh.val, (size_t)nv * sizeof *Kd.val)
                         : rel(Kd.val, Kh.val, nv) <= tol_k);
    /* the recovery, from the host system (the same u for both) */
    double *u = smooth_u(&tc->mesh, h.ndof);
    hk_fields fh, fd;
    HK_ASSERT_OK(hk_postproc(&tc->p, &h, u, &fh));
    HK_ASSERT_OK(hk_fem_postproc_with(drv, &tc->p, &h, u, &fd));
    compare_fields(tc->name, &fh, &fd, tol_f);
    hk_fem_chunk_bytes = 1;
    hk_fields_free(&fd);
    HK_ASSERT_OK(hk_fem_postproc_with(drv, &tc->p, &h, u, &fd));
    compare_fields(tc->name, &fh, &fd, tol_f);
    hk_fem_chunk_bytes = 0;
    hk_fields_free(&fh);
    hk_fields_free(&fd);
    free(u);
    hk_bcsr_free(&Kh);
    hk_bcsr_free(&Kd);
    hk_resident_bcsr_free(&R);
    hk_system_free(&h);
    hk_system_free(&d);
    hk_system_free(&d2);
}

static void test_emul_catalogue(void)
{
    hk_test_fem tc;
    int n = 0;
    for (int k = 0; hk_test_fem_case(k, &tc); k++, n++) {
        check_case(&hk_fem_emul_driver, &tc, 0, 0);
        hk_test_fem_free(&tc);
    }
    CU_ASSERT(n >= 69);
}

/* The kernels' threads in reverse order (other atomic orders, other union-find joins): the
 * same bytes. */
static void test_emul_reverse(void)
{
    hk_test_fem tc;
    hk_fem_emul_reverse = 1;
    for (int k = 0; hk_test_fem_case(k, &tc); k += 7) {
        check_case(&hk_fem_emul_driver, &tc, 0, 0);
        hk_test_fem_free(&tc);
    }
    hk_fem_emul_reverse = 0;
}

/* A fan of 120 triangles (tri3, tri6): the centre's row is the merge's other path. */
static void test_emul_fan(void)
{
    for (int q = 0; q < 2; q++) {
        hk_test_fem tc;
        memset(&tc, 0, sizeof tc);
        fan_mesh(120, q ? HK_EL_TRI6 : HK_EL_TRI3, &tc.mesh);
        tc.mats[0] = (hk_material){.name = "steel", .E = 200e9, .nu = 0.3, .rho = 7800};
        tc.sups = calloc(2, sizeof *tc.sups);
        tc.sups[0] = (hk_support){.boundary = 0, .mask = 3};
        tc.sups[1] = (hk_support){.boundary = 1, .mask = 2};
        tc.p = (hk_problem){.mesh = &tc.mesh,
                            .analysis = HK_PLANE_STRESS,
                            .thickness = 0.01,
                            .materials = tc.mats,
                            .gravity = {0, -9.81, 0},
                            .nsupports = 2,
                            .supports = tc.sups};
        snprintf(tc.name, sizeof tc.name, "fan of 120 %s", q ? "tri6" : "tri3");
        check_case(&hk_fem_emul_driver, &tc, 0, 0);
        hk_test_fem_free(&tc);
    }
}

/* The numeric kernel's variants (each flag alone and all together): the host's bytes for every
 * catalogue case, in one chunk and in chunks of one cell. */
static const int numeric_variants[] = {0, HK_FEM_NUM_D3, HK_FEM_NUM_SORTED,
                                       HK_FEM_NUM_D3 | HK_FEM_NUM_SORTED};
#define NUMERIC_NVARIANTS ((int)(sizeof numeric_variants / sizeof *numeric_variants))

static void test_emul_variants(void)
{
    for (int v = 0; v < NUMERIC_NVARIANTS; v++) {
        hk_test_fem tc;
        hk_fem_numeric_force = numeric_variants[v];
        /* all cases with every flag, every third case with one */
        for (int k = 0; hk_test_fem_case(k, &tc); k += v == NUMERIC_NVARIANTS - 1 ? 1 : 3) {
            hk_system h, d;
            HK_ASSERT_OK(hk_assemble(&tc.p, &h));
            HK_ASSERT_OK(hk_fem_assemble_with(&hk_fem_emul_driver, &tc.p, &d));
            compare_systems(tc.name, &h, &d, 0);
            hk_system_free(&d);
            hk_fem_chunk_bytes = 1;
            HK_ASSERT_OK(hk_fem_assemble_with(&hk_fem_emul_driver, &tc.p, &d));
            compare_systems(tc.name, &h, &d, 0);
            hk_fem_chunk_bytes = 0;
            hk_system_free(&d);
            hk_system_free(&h);
            hk_test_fem_free(&tc);
        }
    }
    hk_fem_numeric_force = -1;
}

/* The recovery in chunks of about one cell, its downloads through pinned pieces of an odd
 * size: the bytes of one chunk and whole copies, with drv (the emulation, or the device). */
static void check_recover_chunks(const hk_fem_driver *drv, const char *name, const hk_problem *p)
{
    hk_system h;
    HK_ASSERT_OK(hk_assemble(p, &h));
    double *u = smooth_u(p->mesh, h.ndof);
    hk_fields f0, fv;
    HK_ASSERT_OK(hk_fem_postproc_with(drv, p, &h, u, &f0));
    hk_fem_chunk_bytes = 1;
    hk_fem_stage_bytes = 4099;
    HK_ASSERT_OK(hk_fem_postproc_with(drv, p, &h, u, &fv));
    hk_fem_chunk_bytes = 0;
    hk_fem_stage_bytes = 0;
    compare_fields(name, &f0, &fv, 0);
    hk_fields_free(&fv);
    hk_fem_recover_force = HK_FEM_REC_HUGE; /* the fields' pages advised huge: the same bytes */
    HK_ASSERT_OK(hk_fem_postproc_with(drv, p, &h, u, &fv));
    hk_fem_recover_force = -1;
    compare_fields(name, &f0, &fv, 0);
    hk_fields_free(&fv);
    hk_fields_free(&f0);
    free(u);
    hk_system_free(&h);
}

/* HOOKE_FEM_RECOVER=keep: the assembly's session recovers the same mesh with the bytes of a
 * fresh one; a mesh moved after the assembly (the same pointers) and another mesh are opened
 * anew, not recovered from the kept copy. */
static void check_keep(const hk_fem_driver *drv, hk_test_fem *a, hk_test_fem *b)
{
    hk_system h;
    hk_fields f0, fk;
    HK_ASSERT_OK(hk_fem_assemble_with(drv, &a->p, &h));
    double *u = smooth_u(&a->mesh, h.ndof);
    HK_ASSERT_OK(hk_fem_postproc_with(drv, &a->p, &h, u, &f0));
    hk_system_free(&h);
    for (int moved = 0; moved < 2; moved++) {
        hk_fem_recover_force = HK_FEM_REC_KEEP;
        HK_ASSERT_OK(hk_fem_assemble_with(drv, &a->p, &h));
        hk_fem_recover_force = -1;
        if (moved) a->mesh.coords[3 * (a->mesh.nnodes / 2)] += 1e-3;
        HK_ASSERT_OK(hk_fem_postproc_with(drv, &a->p, &h, u, &fk));
        if (moved) {
            hk_fields_free(&f0);
            HK_ASSERT_OK(hk_fem_postproc_with(drv, &a->p, &h, u, &f0));
            a->mesh.coords[3 * (a->mesh.nnodes / 2)] -= 1e-3;
        }
        compare_fields(a->name, &f0, &fk, 0);
        hk_fields_free(&fk);
        hk_system_free(&h);
    }
    /* kept for a, recovered for b: b's own bytes */
    hk_system hb;
    HK_ASSERT_OK(hk_fem_assemble_with(drv, &b->p, &hb));
    double *ub = smooth_u(&b->mesh, hb.ndof);
    hk_fields fb;
    HK_ASSERT_OK(hk_fem_postproc_with(drv, &b->p, &hb, ub, &fb));
    hk_fem_recover_force = HK_FEM_REC_KEEP;
    HK_ASSERT_OK(hk_fem_assemble_with(drv, &a->p, &h));
    hk_fem_recover_force = -1;
    HK_ASSERT_OK(hk_fem_postproc_with(drv, &b->p, &hb, ub, &fk));
    compare_fields(b->name, &fb, &fk, 0);
    hk_fields_free(&fk);
    hk_fields_free(&fb);
    hk_fields_free(&f0);
    hk_system_free(&h);
    hk_system_free(&hb);
    free(u);
    free(ub);
}

/* check_keep on a 3D and a 2D pair of catalogue cases. */
static void keep_cases(const hk_fem_driver *drv)
{
    static const int pairs[2][2] = {{48, 52}, {4, 30}};
    for (int k = 0; k < 2; k++) {
        hk_test_fem a, b;
        CU_ASSERT_FATAL(hk_test_fem_case(pairs[k][0], &a) && hk_test_fem_case(pairs[k][1], &b));
        check_keep(drv, &a, &b);
        hk_test_fem_free(&a);
        hk_test_fem_free(&b);
    }
}

static void test_emul_keep(void)
{
    keep_cases(&hk_fem_emul_driver);
}

/* Supports at rest (their zeros set on the device, not uploaded) and moved (uploaded): the
 * host's bytes, with drv, within tol (0: bytes). */
static void check_prescribed(const hk_fem_driver *drv, double tol)
{
    static const int cases[2] = {4, 49};
    for (int k = 0; k < 2; k++)
        for (int moved = 0; moved < 2; moved++) {
            hk_test_fem tc;
            CU_ASSERT_FATAL(hk_test_fem_case(cases[k], &tc));
            if (moved) tc.sups[0].value[0] = 1e-4, tc.sups[0].value[1] = -2e-4;
            hk_system h, d;
            HK_ASSERT_OK(hk_assemble(&tc.p, &h));
            HK_ASSERT_OK(hk_fem_assemble_with(drv, &tc.p, &d));
            compare_systems(tc.name, &h, &d, tol);
            hk_system_free(&h);
            hk_system_free(&d);
            hk_test_fem_free(&tc);
        }
}

static void test_emul_prescribed(void)
{
    check_prescribed(&hk_fem_emul_driver, 0);
}

static void test_emul_recover_chunks(void)
{
    hk_test_fem tc;
    for (int k = 0; hk_test_fem_case(k, &tc); k += 2) {
        check_recover_chunks(&hk_fem_emul_driver, tc.name, &tc.p);
        hk_test_fem_free(&tc);
    }
}

/* hk_fem_huge_pages on arrays of several huge pages, at odd offsets, written before and after:
 * advice only, no byte changed (the fields of HOOKE_FEM_RECOVER=huge). */
static void test_emul_huge_pages(void)
{
    const size_t n = (size_t)3 << 20; /* 24 MB of doubles */
    double *a = malloc(n * sizeof *a);
    CU_ASSERT_FATAL(a != NULL);
    for (size_t i = 0; i < n / 2; i++)
        a[i] = (double)i * 0.5;
    hk_fem_huge_pages(a + 3, (n - 7) * sizeof *a);
    hk_fem_huge_pages(a, 100); /* less than a huge page: nothing */
    hk_fem_touch_pages(a + n / 2, n / 2 * sizeof *a);
    for (size_t i = n / 2; i < n; i++)
        a[i] = (double)i * 0.5;
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= a[i] == (double)i * 0.5;
    CU_ASSERT(ok);
    free(a);
}

/* HOOKE_FEM_NUMERIC: names and commas; an unknown name refused in one sentence naming it. */
static void test_emul_variant_names(void)
{
    int flags = -1;
    setenv("HOOKE_FEM_NUMERIC", "sorted,,d3", 1);
    HK_ASSERT_OK(hk_fem_numeric_variant(&flags));
    CU_ASSERT_EQUAL(flags, HK_FEM_NUM_D3 | HK_FEM_NUM_SORTED);
    setenv("HOOKE_FEM_NUMERIC", "plain", 1);
    HK_ASSERT_OK(hk_fem_numeric_variant(&flags));
    CU_ASSERT_EQUAL(flags, 0);
    setenv("HOOKE_FEM_NUMERIC", "d3", 1); /* the reference of the default */
    HK_ASSERT_OK(hk_fem_numeric_variant(&flags));
    CU_ASSERT_EQUAL(flags, HK_FEM_NUM_D3);
    setenv("HOOKE_FEM_NUMERIC", "d3,slots", 1); /* removed variants are unknown */
    CU_ASSERT_EQUAL(hk_fem_numeric_variant(&flags), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "unknown variant 'slots'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "HOOKE_FEM_NUMERIC=d3,slots"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "plain, d3 or sorted"));
    unsetenv("HOOKE_FEM_NUMERIC"); /* the default: d3,sorted, the fastest measured */
    HK_ASSERT_OK(hk_fem_numeric_variant(&flags));
    CU_ASSERT_EQUAL(flags, HK_FEM_NUM_D3 | HK_FEM_NUM_SORTED);
    /* HOOKE_FEM_RECOVER likewise; unset: plain */
    setenv("HOOKE_FEM_RECOVER", "plain,keep", 1);
    HK_ASSERT_OK(hk_fem_recover_variant(&flags));
    CU_ASSERT_EQUAL(flags, HK_FEM_REC_KEEP);
    setenv("HOOKE_FEM_RECOVER", "plain", 1);
    HK_ASSERT_OK(hk_fem_recover_variant(&flags));
    CU_ASSERT_EQUAL(flags, 0);
    setenv("HOOKE_FEM_RECOVER", "huge,keep", 1);
    HK_ASSERT_OK(hk_fem_recover_variant(&flags));
    CU_ASSERT_EQUAL(flags, HK_FEM_REC_HUGE | HK_FEM_REC_KEEP);
    setenv("HOOKE_FEM_RECOVER", "keep,fixed", 1); /* removed variants are unknown */
    CU_ASSERT_EQUAL(hk_fem_recover_variant(&flags), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "HOOKE_FEM_RECOVER=keep,fixed: unknown "
                                                      "variant 'fixed'; give a comma list of plain, "
                                                      "keep or huge"));
    unsetenv("HOOKE_FEM_RECOVER");
    HK_ASSERT_OK(hk_fem_recover_variant(&flags));
    CU_ASSERT_EQUAL(flags, 0);
}

/* Solves the host's system h (K on the host) and the device's d (K handed over resident) with
 * cg + jacobi to 1e-10 on backend `backend`: the relative difference of the solutions. */
static double solve_both(const hk_system *h, hk_system *d, const char *backend)
{
    char opts[128];
    snprintf(opts, sizeof opts, "%s method=cg pc=jacobi tol=1e-10", backend);
    double *x1 = calloc((size_t)h->ndof, sizeof *x1), *x2 = calloc((size_t)h->ndof, sizeof *x2);
    hk_options *o1, *o2;
    HK_ASSERT_OK(hk_options_create(&o1));
    HK_ASSERT_OK(hk_options_parse(o1, opts));
    HK_ASSERT_OK(hk_options_create(&o2));
    HK_ASSERT_OK(hk_options_parse(o2, "method=cg pc=jacobi tol=1e-10")); /* backend: K's */
    hk_solver *s1, *s2;
    hk_result r1, r2;
    HK_ASSERT_OK(hk_solver_create(&h->K, o1, &s1));
    HK_ASSERT_OK(hk_solver_create_resident(&d->Kd, NULL, o2, &s2));
    HK_ASSERT_OK(hk_solver_solve(s1, h->f, x1, &r1));
    HK_ASSERT_OK(hk_solver_solve(s2, d->f, x2, &r2));
    CU_ASSERT(hk_reason_converged(r1.reason) && hk_reason_converged(r2.reason));
    const double e = rel(x2, x1, h->ndof);
    hk_solver_destroy(s1);
    hk_solver_destroy(s2);
    hk_options_destroy(o1);
    hk_options_destroy(o2);
    free(x1);
    free(x2);
    return e;
}

/* The emulated K in the cpu backend's memory solves through hk_solver_create_resident to the
 * host assembly's solution, digit for digit. */
static void test_emul_solve(void)
{
    hk_test_fem tc;
    HK_ASSERT_OK(hk_test_fem_case(50, &tc) ? 0 : -1); /* tet10, selective integration */
    hk_system h, d;
    HK_ASSERT_OK(hk_assemble(&tc.p, &h));
    HK_ASSERT_OK(hk_fem_assemble_with(&hk_fem_emul_driver, &tc.p, &d));
    CU_ASSERT(solve_both(&h, &d, "backend=cpu") == 0); /* the same digits */
    CU_ASSERT(hk_system_nnz(&d) == hk_system_nnz(&h)); /* the sizes stay after the hand-over */
    hk_system_free(&h);
    hk_system_free(&d);
    hk_test_fem_free(&tc);
}

/* The host's sentences: an inverted element, free rigid-body motion, a bad support; springs
 * and rigid couplings refused by name. */
static void expect_same_error(const hk_fem_driver *drv, const hk_problem *p)
{
    hk_system s;
    char want[1024];
    const int e1 = hk_assemble(p, &s);
    CU_ASSERT_NOT_EQUAL(e1, 0);
    snprintf(want, sizeof want, "%s", hk_error_message());
    const int e2 = hk_fem_assemble_with(drv, p, &s);
    CU_ASSERT_EQUAL(e2, e1);
    if (strcmp(hk_error_message(), want))
        printf("\n    host: %s\n    device: %s ", want, hk_error_message());
    CU_ASSERT_STRING_EQUAL(hk_error_message(), want);
}

static void check_errors(const hk_fem_driver *drv)
{
    hk_test_fem tc;
    HK_ASSERT_OK(hk_test_fem_case(51, &tc) ? 0 : -1); /* hex8 */
    hk_problem p = tc.p;
    /* no support: free rigid-body motion */
    p.nsupports = 0;
    expect_same_error(drv, &p);
    /* a support on a boundary that does not exist */
    hk_support bad = {.boundary = 99, .mask = 1};
    p = tc.p;
    p.nsupports = 1, p.supports = &bad;
    expect_same_error(drv, &p);
    /* an inverted element: two nodes of cell 5 swapped */
    int32_t *c = tc.mesh.cells.nodes + tc.mesh.cells.ptr[5], t = c[0];
    c[0] = c[1], c[1] = t;
    expect_same_error(drv, &tc.p);
    c[1] = c[0], c[0] = t;
    /* springs and rigid couplings */
    hk_support sp[2] = {
        tc.p.supports[0],
        {.boundary = tc.p.supports[0].boundary, .kind = HK_SUPPORT_SPRING, .k_node = {1e6, 0, 0}}};
    p = tc.p;
    p.nsupports = 2, p.supports = sp;
    hk_system s;
    CU_ASSERT_EQUAL(hk_fem_assemble_with(drv, &p, &s), HK_ERR_UNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "spring"));
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "--assembly host"));
    CU_ASSERT_PTR_NOT_NULL(hk_assemble_on_limit(&p));
    CU_ASSERT_PTR_NULL(hk_assemble_on_limit(&tc.p));
    hk_test_fem_free(&tc);
}

static void test_emul_errors(void)
{
    check_errors(&hk_fem_emul_driver);
}

/* hk_assemble_on / hk_postproc_on with the cpu backend (or none) are the host's. */
static void test_on_cpu(void)
{
    const hk_backend *cpu;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    hk_test_fem tc;
    HK_ASSERT_OK(hk_test_fem_case(12, &tc) ? 0 : -1);
    hk_system h, d;
    HK_ASSERT_OK(hk_assemble(&tc.p, &h));
    HK_ASSERT_OK(hk_assemble_on(cpu, &tc.p, &d));
    CU_ASSERT_PTR_NOT_NULL(d.K.rowptr);
    CU_ASSERT_PTR_NULL(d.Kd.rowptr);
    CU_ASSERT(!memcmp(d.K.val, h.K.val, (size_t)hk_system_nnz(&h) * sizeof *h.K.val));
    hk_resident_bcsr R;
    HK_ASSERT_OK(hk_assemble_stiffness_on(NULL, &tc.p, &R));
    CU_ASSERT(R.be == cpu && R.nnzb * R.bs * R.bs == hk_system_nnz(&h));
    hk_resident_bcsr_free(&R);
    double *u = smooth_u(&tc.mesh, h.ndof);
    hk_fields fh, fd;
    HK_ASSERT_OK(hk_postproc(&tc.p, &h, u, &fh));
    HK_ASSERT_OK(hk_postproc_on(cpu, &tc.p, &h, u, &fd));
    compare_fields(tc.name, &fh, &fd, 0);
    hk_fields_free(&fh);
    hk_fields_free(&fd);
    free(u);
    hk_system_free(&h);
    hk_system_free(&d);
    hk_test_fem_free(&tc);
}

/* The device memory estimate: K's bytes at least, the mesh's, and within reason. */
static void test_estimate(void)
{
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_box(1, 1, 1, 10, 10, 10, HK_EL_TET10, &m));
    const double nnz = 216.0 * (double)m.nnodes, b = hk_assemble_on_bytes(&m, nnz);
    CU_ASSERT(b > 8.4 * nnz);
    CU_ASSERT(b < 8.4 * nnz + 400.0 * 3 * (double)m.nnodes);
    hk_mesh_free(&m);
}

/* ---- hooke run: --assembly device against --assembly host ------------------------------- */

/* The cases of cases/ that hooke run can mesh here, solved to 1e-10 on backend `be`, assembled
 * and recovered on the host and on the device (`be`'s, or the host for springs and rigid
 * couplings, with a note): max |u|, max von Mises and the support reactions within tol
 * (0: the same digits). */
static void compare_runs(const char *be, double tol)
{
    /* generated meshes first, then meshed by Gmsh (once, written to a .msh both runs read) */
    static const char *const cases[] = {
        "box/box.yaml",
        "thermal/clamped_bar.yaml",
        "orthotropic/ortho_bar.yaml",
        "force/force_bar.yaml",
        "springs/springs.yaml",
#ifdef HOOKE_HAVE_GMSH
        "bracket/bracket.yaml",
        "axisym/thick_cylinder.yaml",
        "hybrid/hybrid.yaml",
        "lame/lame_incompressible.yaml",
        "cantilever/cantilever_loadcases.yaml",
        "remote/tube_rigid.yaml",
#endif
    };
    const size_t ngenerated = 5;
    char backend[64], file[HK_CASE_PATH + 32];
    snprintf(backend, sizeof backend, "solver.backend=%s", be);
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        hk_case c[2];
        hk_run r[2];
        int ok = 1;
        char rel[128];
        snprintf(rel, sizeof rel, "cases/%s", cases[k]);
        if (k >= ngenerated) { /* mesh once: both runs read that mesh */
            hk_case c0;
            hk_run r0;
            hk_run_opts o = {.quiet = 1, .assembly = "host"};
            HK_ASSERT_OK(hk_case_load(hk_test_path(rel), 0, NULL, &c0));
            HK_ASSERT_OK(hk_run_assemble(&c0, &o, &r0));
            snprintf(file, sizeof file, "geometry.file=%s/compare-%zu.msh", hk_test_tmpdir(), k);
            HK_ASSERT_OK(hk_mesh_write_msh(file + 14, &r0.mesh));
            hk_run_free(&r0);
            hk_case_free(&c0);
        }
        for (int dev = 0; dev < 2 && ok; dev++) {
            const char *sets[4] = {"solver.tol=1e-10", backend, "solver.method=cg", file};
            HK_ASSERT_OK(hk_case_load(hk_test_path(rel), k < ngenerated ? 3 : 4, sets, &c[dev]));
            hk_run_opts o = {.quiet = 1, .assembly = dev ? "device" : "host"};
            const int err = hk_run_case(&c[dev], &o, &r[dev]);
            /* springs and rigid couplings: --assembly device refuses, auto assembles on the
             * host */
            if (dev && err == HK_ERR_UNSUPPORTED) {
                CU_ASSERT(hk_assemble_on_limit(&r[dev].model.problem) != NULL);
                hk_run_free(&r[dev]);
                o.assembly = "auto";
                HK_ASSERT_OK(hk_run_case(&c[dev], &o, &r[dev]));
                CU_ASSERT_STRING_EQUAL(r[dev].assembled_on, "host");
                CU_ASSERT(r[dev].assembly_note[0] != 0);
            } else {
                HK_ASSERT_OK(err);
                if (dev) CU_ASSERT_STRING_EQUAL(r[dev].assembled_on, be);
            }
            CU_ASSERT_STRING_EQUAL(r[dev].recovered_on, dev ? be : "host");
        }
        if (!strcmp(be, "cuda")) {
            /* the memory guard: K off the host where the device assembles, on it otherwise
             * (the same model as the host run's after a fallback) */
            const double host_k = r[0].mem.host_estimate - r[0].mem.host_resident_mesh,
                         dev_k = r[1].mem.host_estimate - r[1].mem.host_resident_mesh;
            if (strcmp(r[1].assembled_on, "host")) {
                CU_ASSERT(dev_k < host_k);
            } else {
                CU_ASSERT_DOUBLE_EQUAL(dev_k, host_k, 1e-9 * host_k);
            }
        }
        const int nlc = r[0].nlc ? r[0].nlc : 1;
        for (int l = 0; l < nlc; l++) {
            const hk_fields *a = r[0].nlc ? &r[0].lc[l].fields : &r[0].fields,
                            *b = r[1].nlc ? &r[1].lc[l].fields : &r[1].fields;
            double e = fabs(b->max_u - a->max_u) / a->max_u;
            e = fmax(e, fabs(b->max_von_mises - a->max_von_mises) / a->max_von_mises);
            /* a support's reaction is a sum of nodal reactions, so its rounding is a fraction
             * of the sum of their magnitudes, not of the result: a load that the supports
             * carry as a moment alone (tube_rigid's torsion and bending) leaves reaction
             * forces of 1e-8 N, noise of the cancellation among nodal forces of 100 N */
            double rs = 0, rd = 0;
            for (int64_t i = 0; i < 3 * a->nnodes; i++)
                rs += fabs(a->reaction[i]);
            for (int q = 0; q < a->nsupports; q++)
                for (int i = 0; i < 3; i++) {
                    rs = fmax(rs, fabs(a->support_reaction[q][i]));
                    rd = fmax(rd, fabs(b->support_reaction[q][i] - a->support_reaction[q][i]));
                }
            e = fmax(e, rs > 0 ? rd / rs : rd);
            if (e > tol) printf("\n    %s (load case %d): %.2e ", cases[k], l, e);
            CU_ASSERT(e <= tol);
        }
        for (int dev = 0; dev < 2; dev++) {
            hk_run_free(&r[dev]);
            hk_case_free(&c[dev]);
        }
    }
}

/* ---- a part's rows (distributed runs) ---------------------------------------------------- */

/* s with copies of prep's supports and external loads, as a part receives them. */
static void part_system(const hk_system *prep, hk_system *s)
{
    const size_t n = (size_t)prep->ndof;
    memset(s, 0, sizeof *s);
    s->fixed = malloc(n + 1);
    s->u_fixed = malloc((n + 1) * sizeof *s->u_fixed);
    s->f_ext = malloc((n + 1) * sizeof *s->f_ext);
    memcpy(s->fixed, prep->fixed, n);
    memcpy(s->u_fixed, prep->u_fixed, n * sizeof *s->u_fixed);
    memcpy(s->f_ext, prep->f_ext, n * sizeof *s->f_ext);
    s->nfixed = prep->nfixed;
}

/* hk_assemble_rows_on's first rows (about two thirds of the nodes, the others standing for a
 * part's ghosts) against hk_assemble_rows's: the pattern exactly, K, f and f_ext within tol_k
 * (0: the same bytes); hk_postproc_part_on's fields against hk_postproc_part's within tol_f,
 * the maxima and supports' sums over the same owned nodes. A device without the memory fails
 * with HK_ERR_MEMORY and leaves the system as it came: the host then assembles its bytes. */
static void check_rows(const hk_fem_driver *drv, double tol_k, double tol_f)
{
    hk_test_fem tc;
    int tested = 0;
    for (int k = 0; hk_test_fem_case(k, &tc); k++) {
        if (hk_assemble_on_limit(&tc.p)) { /* springs, rigid couplings: the host's */
            hk_test_fem_free(&tc);
            continue;
        }
        hk_system prep, h, d;
        HK_ASSERT_OK(hk_assemble_prepare(&tc.p, &prep));
        part_system(&prep, &h);
        part_system(&prep, &d);
        const int64_t nn = tc.mesh.nnodes, nrows = (2 * nn + 2) / 3, ndof = prep.ndof;
        const int bs = tc.mesh.dim, bb = bs * bs;
        HK_ASSERT_OK(hk_assemble_rows(&tc.p, &h));
        HK_ASSERT_OK(hk_fem_assemble_rows_with(drv, &tc.p, nrows, &d));
        /* the stages' times kept for a distributed run's profile: this assembly's */
        const char *st = hk_fem_stage_times();
        CU_ASSERT(strstr(st, "pattern ") && strstr(st, "numeric ") && strstr(st, "download "));
        const int64_t nnzb = h.K.rowptr[nrows];
        int ok = d.K.nbrows == nrows && d.K.bs == bs && d.K.nbcols == nn && d.ndof == ndof;
        ok = ok && !memcmp(d.K.rowptr, h.K.rowptr, (size_t)(nrows + 1) * sizeof *d.K.rowptr);
        ok = ok && !memcmp(d.K.colind, h.K.colind, (size_t)nnzb * sizeof *d.K.colind);
        if (!ok) printf("\n    %s: the rows' pattern differs ", tc.name);
        CU_ASSERT(ok);
        if (ok) {
            const double eK = rel(d.K.val, h.K.val, nnzb * bb), ef = rel(d.f, h.f, ndof),
                         ee = rel(d.f_ext, h.f_ext, ndof);
            const int same = !memcmp(d.K.val, h.K.val, (size_t)(nnzb * bb) * sizeof *d.K.val) &&
                             !memcmp(d.f, h.f, (size_t)ndof * sizeof *d.f) &&
                             !memcmp(d.f_ext, h.f_ext, (size_t)ndof * sizeof *d.f_ext);
            if (tol_k == 0 ? !same : (eK > tol_k || ef > tol_k || ee > tol_k))
                printf("\n    %s: rows K %.2e, f %.2e, f_ext %.2e ", tc.name, eK, ef, ee);
            CU_ASSERT(tol_k == 0 ? same : eK <= tol_k && ef <= tol_k && ee <= tol_k);
        }
        double *u = smooth_u(&tc.mesh, ndof);
        hk_fields fh, fd;
        HK_ASSERT_OK(hk_postproc_part(&tc.p, &h, u, nrows, &fh));
        HK_ASSERT_OK(hk_fem_postproc_part_with(drv, &tc.p, &d, u, nrows, &fd));
        st = hk_fem_stage_times(); /* the recovery's, the assembly's gone */
        CU_ASSERT(strstr(st, "recover ") && !strstr(st, "numeric "));
        compare_fields(tc.name, &fh, &fd, tol_f);
        {
            /* the fields' arrays reserved ahead, their pages taken on a thread meanwhile: the
             * same bytes on the host and the device; a reservation for other sizes is not
             * taken (freed) and changes nothing either */
            const int64_t ne = tc.mesh.cells.n;
            const double most = hk_fields_reserve_bytes(nn, ne);
            double secs = -1, touched = -1;
            hk_fields fr;
            CU_ASSERT(most == 8.0 * (25 * nn + 7 * ne));
            HK_ASSERT_OK(hk_fields_reserve(nn, ne, 2));
            HK_ASSERT_OK(hk_postproc_part(&tc.p, &h, u, nrows, &fr));
            hk_fields_reserve_stats(&secs, &touched);
            CU_ASSERT(secs >= 0 && touched >= 0 && touched <= most + 9 * 4096);
            compare_fields(tc.name, &fh, &fr, 0);
            hk_fields_free(&fr);
            HK_ASSERT_OK(hk_fields_reserve(nn, ne, 1));
            HK_ASSERT_OK(hk_fem_postproc_part_with(drv, &tc.p, &d, u, nrows, &fr));
            compare_fields(tc.name, &fd, &fr, 0);
            hk_fields_free(&fr);
            HK_ASSERT_OK(hk_fields_reserve(nn + 1, ne, 2));
            HK_ASSERT_OK(hk_fem_postproc_part_with(drv, &tc.p, &d, u, nrows, &fr));
            compare_fields(tc.name, &fd, &fr, 0);
            hk_fields_free(&fr);
            HK_ASSERT_OK(hk_fields_reserve(nn, ne, 2));
            hk_fields_reserve_cancel(); /* not taken: freed */
            CU_ASSERT_EQUAL(hk_fields_reserve(-1, ne, 2), HK_ERR_ARG);
        }
        hk_fields_free(&fh);
        hk_fields_free(&fd);
        free(u);
        hk_system_free(&d);
        /* the values left on the device (a distributed solver takes them there): the pattern
         * on the host, the first rows' values in the device's K as downloaded above */
        part_system(&prep, &d);
        HK_ASSERT_OK(hk_fem_assemble_rows_resident_with(drv, &tc.p, nrows, &d));
        ok = d.K.val == NULL && d.Kd.be && d.Kd.val && d.K.nbrows == nrows &&
             !memcmp(d.K.rowptr, h.K.rowptr, (size_t)(nrows + 1) * sizeof *d.K.rowptr) &&
             !memcmp(d.K.colind, h.K.colind, (size_t)nnzb * sizeof *d.K.colind);
        if (ok) { /* the device's K, every row of the part: its first rows' values */
            hk_bcsr D = {0};
            ok = !hk_resident_bcsr_download(&d.Kd, &D) && D.rowptr[nrows] == nnzb;
            const double eK = ok ? rel(D.val, h.K.val, nnzb * bb) : 1;
            ok = ok && (tol_k == 0 ? !memcmp(D.val, h.K.val, (size_t)(nnzb * bb) * sizeof *D.val)
                                   : eK <= tol_k);
            hk_bcsr_free(&D);
        }
        if (!ok) printf("\n    %s: the rows kept on the device differ ", tc.name);
        CU_ASSERT(ok);
        hk_system_free(&d);
        /* a device too small: HK_ERR_MEMORY, the loads as they came, then the host's bytes */
        if (drv == &hk_fem_emul_driver) {
            part_system(&prep, &d);
            hk_fem_emul_free_bytes = 1000;
            CU_ASSERT_EQUAL(hk_fem_assemble_rows_with(drv, &tc.p, nrows, &d), HK_ERR_MEMORY);
            CU_ASSERT_EQUAL(hk_fem_assemble_rows_resident_with(drv, &tc.p, nrows, &d),
                            HK_ERR_MEMORY);
            hk_fem_emul_free_bytes = 0;
            CU_ASSERT(d.f == NULL && d.K.rowptr == NULL && d.Kd.val == NULL);
            CU_ASSERT(!memcmp(d.f_ext, prep.f_ext, (size_t)ndof * sizeof *d.f_ext));
            HK_ASSERT_OK(hk_assemble_rows(&tc.p, &d));
            CU_ASSERT(!memcmp(d.f_ext, h.f_ext, (size_t)ndof * sizeof *d.f_ext));
            CU_ASSERT(!memcmp(d.K.val, h.K.val, (size_t)(nnzb * bb) * sizeof *d.K.val));
            hk_system_free(&d);
        }
        hk_system_free(&h);
        hk_system_free(&prep);
        hk_test_fem_free(&tc);
        tested++;
    }
    CU_ASSERT(tested >= 10);
}

static void test_emul_rows(void)
{
    check_rows(&hk_fem_emul_driver, 0, 0);
}

/* HOOKE_FEM_EMULATE: 1 routes the cpu backend through the emulation, 0 or unset through the
 * host; another value is refused in one sentence naming it. */
static void test_emul_variable(void)
{
    const hk_backend *cpu = NULL;
    HK_ASSERT_OK(hk_backend_get("cpu", &cpu));
    CU_ASSERT(!hk_fem_on_device(cpu));
    setenv("HOOKE_FEM_EMULATE", "1", 1);
    CU_ASSERT(hk_fem_on_device(cpu));
    setenv("HOOKE_FEM_EMULATE", "0", 1);
    CU_ASSERT(!hk_fem_on_device(cpu));
    setenv("HOOKE_FEM_EMULATE", "yes", 1);
    hk_system s;
    hk_test_fem tc;
    CU_ASSERT_FATAL(hk_test_fem_case(0, &tc));
    CU_ASSERT_EQUAL(hk_assemble_on(cpu, &tc.p, &s), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "HOOKE_FEM_EMULATE=yes: set it to 1"));
    /* the emulated device's free memory: bytes, or refused */
    setenv("HOOKE_FEM_EMULATE", "1", 1);
    setenv("HOOKE_FEM_EMULATE_FREE", "12k", 1);
    CU_ASSERT_EQUAL(hk_assemble_on(cpu, &tc.p, &s), HK_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "HOOKE_FEM_EMULATE_FREE=12k: give"));
    setenv("HOOKE_FEM_EMULATE_FREE", "1000", 1);
    CU_ASSERT_EQUAL(hk_assemble_on(cpu, &tc.p, &s), HK_ERR_MEMORY);
    CU_ASSERT_EQUAL(hk_fem_emul_free_bytes, 1000);
    hk_fem_emul_free_bytes = 0;
    unsetenv("HOOKE_FEM_EMULATE_FREE");
    unsetenv("HOOKE_FEM_EMULATE");
    hk_test_fem_free(&tc);
}

/* hooke run's device path on the CPU (the emulated driver for the cpu backend): K handed to
 * the solver in the cpu backend's memory, recovery by the emulation; the same digits as the
 * host's run. */
static void test_emul_run(void)
{
    hk_fem_cpu_driver = &hk_fem_emul_driver;
    compare_runs("cpu", 0);
    hk_fem_cpu_driver = NULL;
}

/* A device without the memory: --assembly device refuses in one sentence, auto assembles and
 * recovers on the host and says why; the host's digits. */
static void test_emul_small_device(void)
{
    hk_case c;
    hk_run r, h;
    const char *sets[1] = {"solver.backend=cpu"};
    HK_ASSERT_OK(hk_case_load(hk_test_path("cases/box/box.yaml"), 1, sets, &c));
    hk_run_opts o = {.quiet = 1, .assembly = "host"};
    HK_ASSERT_OK(hk_run_case(&c, &o, &h));
    hk_fem_cpu_driver = &hk_fem_emul_driver;
    hk_fem_emul_free_bytes = 1000;
    o.assembly = "device";
    CU_ASSERT_EQUAL(hk_run_case(&c, &o, &r), HK_ERR_MEMORY);
    CU_ASSERT_PTR_NOT_NULL(strstr(hk_error_message(), "GB is free"));
    hk_run_free(&r);
    o.assembly = "auto";
    HK_ASSERT_OK(hk_run_case(&c, &o, &r));
    CU_ASSERT_STRING_EQUAL(r.assembled_on, "host");
    CU_ASSERT_STRING_EQUAL(r.recovered_on, "host");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.assembly_note, "device memory"));
    CU_ASSERT(r.fields.max_u == h.fields.max_u && r.fields.max_von_mises == h.fields.max_von_mises);
    hk_fem_emul_free_bytes = 0;
    hk_fem_cpu_driver = NULL;
    hk_run_free(&r);
    hk_run_free(&h);
    hk_case_free(&c);
}

HK_SUITE(fem_emul,
         {"every element kind, analysis, material: the host's bytes (K, f, fields)",
          test_emul_catalogue},
         {"the kernels' threads in reverse order: the host's bytes", test_emul_reverse},
         {"a node of 120 cells: the host's bytes", test_emul_fan},
         {"the numeric kernel's variants: the host's bytes", test_emul_variants},
         {"the recovery in chunks of one cell, and with huge pages: one chunk's bytes",
          test_emul_recover_chunks},
         {"the assembly's session kept for the recovery: a fresh one's bytes", test_emul_keep},
         {"supports at rest and moved: the host's bytes", test_emul_prescribed},
         {"HOOKE_FEM_NUMERIC's and HOOKE_FEM_RECOVER's names", test_emul_variant_names},
         {"the fields' pages advised huge: no byte changed", test_emul_huge_pages},
         {"the resident K solves to the host's digits", test_emul_solve},
         {"the host's error sentences; springs and rigid couplings refused", test_emul_errors},
         {"on the cpu backend: the host's assembly and recovery", test_on_cpu},
         {"device memory estimate", test_estimate},
         {"hooke run --assembly device: the host's digits", test_emul_run},
         {"a device without the memory: refused, or left to the host", test_emul_small_device},
         {"a part's rows and fields: the host's bytes; a device too small leaves them to the host",
          test_emul_rows},
         {"HOOKE_FEM_EMULATE (1, 0, another value refused) and HOOKE_FEM_EMULATE_FREE",
          test_emul_variable})

/* ---- the device ------------------------------------------------------------------------- */

#ifdef HOOKE_HAVE_CUDA

static void test_cuda_catalogue(void)
{
    hk_test_fem tc;
    for (int k = 0; hk_test_fem_case(k, &tc); k++) {
        check_case(&hk_fem_cuda_driver, &tc, 1e-13, 1e-12);
        hk_test_fem_free(&tc);
    }
}

static void test_cuda_fan(void)
{
    hk_test_fem tc;
    memset(&tc, 0, sizeof tc);
    fan_mesh(200, HK_EL_TRI6, &tc.mesh);
    tc.mats[0] = (hk_material){.name = "steel", .E = 200e9, .nu = 0.3, .rho = 7800};
    tc.sups = calloc(2, sizeof *tc.sups);
    tc.sups[0] = (hk_support){.boundary = 0, .mask = 3};
    tc.sups[1] = (hk_support){.boundary = 1, .mask = 2};
    tc.p = (hk_problem){.mesh = &tc.mesh,
                        .analysis = HK_PLANE_STRAIN,
                        .materials = tc.mats,
                        .gravity = {0, -9.81, 0},
                        .nsupports = 2,
                        .supports = tc.sups};
    snprintf(tc.name, sizeof tc.name, "fan of 200 tri6");
    check_case(&hk_fem_cuda_driver, &tc, 1e-13, 1e-12);
    hk_test_fem_free(&tc);
}

/* Larger meshes (rows in many segments, many thread blocks): box k of tet10 16^3, hex8 24^3,
 * hex27 8^3, clamped at x = 0, under gravity, an end traction and a temperature change; name
 * and p filled, p pointing at the other arguments. */
static const hk_eltype box_types[3] = {HK_EL_TET10, HK_EL_HEX8, HK_EL_HEX27};
static const int box_cells[3] = {16, 24, 8};

static void box_problem(int k, hk_mesh *m, hk_material *mat, hk_support *sup, hk_load ld[2],
                        hk_problem *p, char name[64])
{
    HK_ASSERT_OK(hk_mesh_box(1, 1, 1, box_cells[k], box_cells[k], box_cells[k], box_types[k], m));
    *mat = (hk_material){
        .name = "steel", .E = 200e9, .nu = 0.3, .rho = 7800, .alpha = {1e-5, 1e-5, 1e-5}};
    *sup = (hk_support){.boundary = hk_mesh_find_boundary(m, "xmin"), .mask = 7};
    ld[0] = (hk_load){.kind = HK_LOAD_TRACTION,
                      .boundary = hk_mesh_find_boundary(m, "xmax"),
                      .value = {0, 0, -1e6}};
    ld[1] = (hk_load){.kind = HK_LOAD_TEMPERATURE, .boundary = -1, .value = {30}};
    *p = (hk_problem){.mesh = m,
                      .analysis = HK_SOLID,
                      .materials = mat,
                      .gravity = {0, 0, -9.81},
                      .nloads = 2,
                      .loads = ld,
                      .nsupports = 1,
                      .supports = sup};
    snprintf(name, 64, "%s box of %d^3", hk_eltype_get(box_types[k])->name, box_cells[k]);
}

/* Each box assembled and recovered twice, the second time with the copies cut into small
 * pinned pieces: the same bytes; against the host to rounding. */
static void test_cuda_determinism(void)
{
    for (int k = 0; k < 3; k++) {
        hk_mesh m;
        hk_material mats[1];
        hk_support sup;
        hk_load ld[2];
        hk_problem p;
        char name[64];
        box_problem(k, &m, mats, &sup, ld, &p, name);
        hk_system h, d1, d2;
        HK_ASSERT_OK(hk_assemble(&p, &h));
        HK_ASSERT_OK(hk_fem_assemble_with(&hk_fem_cuda_driver, &p, &d1));
        /* the second through pinned pieces of an odd size (many, each copy in turn) */
        hk_fem_stage_bytes = 4099;
        HK_ASSERT_OK(hk_fem_assemble_with(&hk_fem_cuda_driver, &p, &d2));
        hk_fem_stage_bytes = 0;
        compare_systems(name, &h, &d1, 1e-13);
        hk_bcsr K1, K2;
        HK_ASSERT_OK(hk_resident_bcsr_download(&d1.Kd, &K1));
        HK_ASSERT_OK(hk_resident_bcsr_download(&d2.Kd, &K2));
        const int64_t nv = K1.rowptr[K1.nbrows] * 9;
        CU_ASSERT(!memcmp(K1.val, K2.val, (size_t)nv * sizeof *K1.val));
        CU_ASSERT(!memcmp(d1.f, d2.f, (size_t)h.ndof * sizeof *d1.f));
        CU_ASSERT(!memcmp(d1.f_ext, d2.f_ext, (size_t)h.ndof * sizeof *d1.f_ext));
        double *u = smooth_u(&m, h.ndof);
        hk_fields fh, f1, f2;
        HK_ASSERT_OK(hk_postproc(&p, &h, u, &fh));
        HK_ASSERT_OK(hk_fem_postproc_with(&hk_fem_cuda_driver, &p, &h, u, &f1));
        hk_fem_stage_bytes = 4099;
        HK_ASSERT_OK(hk_fem_postproc_with(&hk_fem_cuda_driver, &p, &h, u, &f2));
        hk_fem_stage_bytes = 0;
        compare_fields(name, &fh, &f1, 1e-12);
        compare_fields(name, &f1, &f2, 0);
        hk_fields_free(&fh);
        hk_fields_free(&f1);
        hk_fields_free(&f2);
        free(u);
        hk_bcsr_free(&K1);
        hk_bcsr_free(&K2);
        hk_system_free(&h);
        hk_system_free(&d1);
        hk_system_free(&d2);
        hk_mesh_free(&m);
    }
}

/* K assembled on the device and solved there (hk_solver_create_resident with backend cuda)
 * against the host's K solved on the device. */
static void test_cuda_solve(void)
{
    hk_mesh m;
    HK_ASSERT_OK(hk_mesh_box(2, 1, 1, 16, 8, 8, HK_EL_TET10, &m));
    hk_material mat = {.name = "steel", .E = 200e9, .nu = 0.3, .rho = 7800};
    hk_support sup = {.boundary = hk_mesh_find_boundary(&m, "xmin"), .mask = 7};
    hk_problem p = {.mesh = &m,
                    .analysis = HK_SOLID,
                    .materials = &mat,
                    .gravity = {0, 0, -9.81},
                    .nsupports = 1,
                    .supports = &sup};
    hk_system h, d;
    HK_ASSERT_OK(hk_assemble(&p, &h));
    const hk_backend *cuda = hk_test_cuda_backend();
    HK_ASSERT_OK(hk_assemble_on(cuda, &p, &d));
    const double e = solve_both(&h, &d, "backend=cuda");
    printf("\n    solution from the device's K against the host's: %.2e ", e);
    CU_ASSERT(e < 1e-8);
    hk_system_free(&h);
    hk_system_free(&d);
    hk_mesh_free(&m);
}

/* K of problem p on the device with the numeric kernel's variant `flags`, downloaded. */
static void cuda_stiffness(const hk_problem *p, int flags, hk_bcsr *K)
{
    hk_resident_bcsr R;
    hk_fem_numeric_force = flags;
    HK_ASSERT_OK(hk_fem_stiffness_with(&hk_fem_cuda_driver, p, &R));
    hk_fem_numeric_force = -1;
    HK_ASSERT_OK(hk_resident_bcsr_download(&R, K));
    hk_resident_bcsr_free(&R);
}

/* K's values of variant `flags` against the default's: the same bytes (the same additions in
 * the same order, the same roundings). */
static void compare_variant(const char *name, const hk_problem *p, const hk_bcsr *K0, int flags)
{
    hk_bcsr K;
    cuda_stiffness(p, flags, &K);
    const int64_t nv = K0->rowptr[K0->nbrows] * K0->bs * K0->bs;
    const int same = K.rowptr[K.nbrows] == K0->rowptr[K0->nbrows] &&
                     !memcmp(K.val, K0->val, (size_t)nv * sizeof *K.val);
    if (!same)
        printf("\n    %s, variant %d: K differs from the default's by %.2e ", name, flags,
               K.rowptr[K.nbrows] == K0->rowptr[K0->nbrows] ? rel(K.val, K0->val, nv) : 1.0);
    CU_ASSERT(same);
    hk_bcsr_free(&K);
}

/* check(name, problem) on each box of box_problem. */
static void each_box(void (*check)(const char *name, const hk_problem *p))
{
    for (int k = 0; k < 3; k++) {
        hk_mesh m;
        hk_material mat;
        hk_support sup;
        hk_load ld[2];
        hk_problem p;
        char name[64];
        box_problem(k, &m, &mat, &sup, ld, &p, name);
        check(name, &p);
        hk_mesh_free(&m);
    }
}

static void every_numeric_variant(const char *name, const hk_problem *p)
{
    hk_bcsr K0;
    cuda_stiffness(p, 0, &K0);
    for (int v = 0; v < NUMERIC_NVARIANTS; v++)
        compare_variant(name, p, &K0, numeric_variants[v]);
    hk_bcsr_free(&K0);
}

/* Every variant of the numeric kernel on the boxes (tet10: the isotropic 3D path), all of them
 * together on every catalogue case: the default's bytes. */
static void test_cuda_variants(void)
{
    each_box(every_numeric_variant);
    hk_test_fem tc;
    for (int k = 0; hk_test_fem_case(k, &tc); k++) {
        hk_bcsr K0;
        cuda_stiffness(&tc.p, 0, &K0);
        compare_variant(tc.name, &tc.p, &K0, numeric_variants[NUMERIC_NVARIANTS - 1]);
        hk_bcsr_free(&K0);
        hk_test_fem_free(&tc);
    }
}

/* The recovery in chunks (its downloads in small pieces) on the boxes and every catalogue case:
 * one chunk's bytes. */
static void cuda_recover_chunks(const char *name, const hk_problem *p)
{
    check_recover_chunks(&hk_fem_cuda_driver, name, p);
}

static void test_cuda_recover_chunks(void)
{
    each_box(cuda_recover_chunks);
    hk_test_fem tc;
    for (int k = 0; hk_test_fem_case(k, &tc); k++) {
        check_recover_chunks(&hk_fem_cuda_driver, tc.name, &tc.p);
        hk_test_fem_free(&tc);
    }
}

static void test_cuda_keep(void)
{
    keep_cases(&hk_fem_cuda_driver);
}

static void test_cuda_prescribed(void)
{
    check_prescribed(&hk_fem_cuda_driver, 1e-13);
}

static void test_cuda_errors(void)
{
    check_errors(&hk_fem_cuda_driver);
}

static void test_cuda_run(void)
{
    compare_runs("cuda", 1e-6);
}

static void test_cuda_rows(void)
{
    check_rows(&hk_fem_cuda_driver, 1e-13, 1e-12);
}

HK_DEVICE_SUITE(fem_cuda,
                {"every element kind, analysis, material: K and f to 1e-13, fields to 1e-12",
                 test_cuda_catalogue},
                {"a node of 200 cells", test_cuda_fan},
                {"two runs give the same bytes (K, f, fields)", test_cuda_determinism},
                {"the numeric kernel's variants: the default's bytes", test_cuda_variants},
                {"the recovery in chunks of one cell, and with huge pages: one chunk's bytes",
                 test_cuda_recover_chunks},
                {"the assembly's session kept for the recovery: a fresh one's bytes",
                 test_cuda_keep},
                {"supports at rest and moved: the host's K and f to 1e-13", test_cuda_prescribed},
                {"K assembled and solved on the device", test_cuda_solve},
                {"the host's error sentences", test_cuda_errors},
                {"hooke run: --assembly device against --assembly host", test_cuda_run},
                {"a part's rows downloaded and its fields: the host's to 1e-13 and 1e-12",
                 test_cuda_rows})

#endif
