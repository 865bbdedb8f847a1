/* Modal analysis end to end (cases/modal/, app/run_modal.c): natural frequencies against closed
 * forms (Euler-Bernoulli and Timoshenko cantilevers, slender and stocky, free-free, a plane
 * strain strip) and NAFEMS free-vibration benchmarks (FV32, FV41 axisymmetric, FV52), repeated
 * eigenvalues with their full multiplicity, rigid-body modes of free parts, effective masses,
 * mass-normalised shapes (recomputed on the host), modal.shift, lumped mass, the per-mode .vtu
 * files and .pvd, the same bytes twice, and the case file's modal messages. Every case runs on
 * every usable backend. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "case.h"
#include "test_util.h"

/* ---- Timoshenko beam: the roots of the frequency determinant ----------------------------- */

typedef struct beam {
    double E, G, k, rho, A, I, L;
    int free_free; /* 0: clamped at x = 0, free at x = L */
} beam;

static double det4(double m[4][4])
{
    double d = 1;
    for (int c = 0; c < 4; c++) {
        int p = c;
        for (int r = c + 1; r < 4; r++)
            if (fabs(m[r][c]) > fabs(m[p][c])) p = r;
        if (m[p][c] == 0) return 0;
        if (p != c) {
            for (int k = 0; k < 4; k++) {
                double t = m[c][k];
                m[c][k] = m[p][k];
                m[p][k] = t;
            }
            d = -d;
        }
        d *= m[c][c];
        for (int r = c + 1; r < 4; r++) {
            double f = m[r][c] / m[c][c];
            for (int k = c; k < 4; k++)
                m[r][k] -= f * m[c][k];
        }
    }
    return d;
}

/* The boundary determinant at circular frequency w (below the cut-off sqrt(kGA / (rho I))).
 * W'' - Phi' + rho w^2 W / kG = 0, EI Phi'' + kGA (W' - Phi) + rho I w^2 Phi = 0; with e^(s x):
 * kGA EI s^4 + (kGA rho I + rho A EI) w^2 s^2 + rho A w^2 (rho I w^2 - kGA) = 0, s^2 = al^2 > 0
 * and -be^2 < 0; W = cosh, sinh, cos, sin with Phi = q1 al sinh, q1 al cosh, -q2 be sin,
 * q2 be cos, q = -kGA / (EI s^2 - kGA + rho I w^2). Clamped: W = Phi = 0; free: Phi' = 0 (no
 * moment), W' - Phi = 0 (no shear). */
static double beam_det(const beam *b, double w)
{
    const double kGA = b->k * b->G * b->A, EI = b->E * b->I, w2 = w * w;
    const double a2 = kGA * EI, a1 = (kGA * b->rho * b->I + b->rho * b->A * EI) * w2,
                 a0 = b->rho * b->A * w2 * (b->rho * b->I * w2 - kGA);
    const double disc = sqrt(a1 * a1 - 4 * a2 * a0);
    const double S1 = (-a1 + disc) / (2 * a2), S2 = (-a1 - disc) / (2 * a2);
    const double al = sqrt(S1), be = sqrt(-S2), L = b->L;
    const double q1 = -kGA / (EI * S1 - kGA + b->rho * b->I * w2);
    const double q2 = -kGA / (EI * S2 - kGA + b->rho * b->I * w2);
    double m[4][4];
    /* rows: two conditions at x = 0, two at x = L */
    for (int end = 0; end < 2; end++) {
        const double x = end ? L : 0;
        const double ch = cosh(al * x), sh = sinh(al * x), c = cos(be * x), s = sin(be * x);
        double *W = m[2 * end], *P = m[2 * end + 1];
        if (end == 0 && !b->free_free) { /* W(0), Phi(0) */
            W[0] = 1, W[1] = 0, W[2] = 1, W[3] = 0;
            P[0] = 0, P[1] = q1 * al, P[2] = 0, P[3] = q2 * be;
            continue;
        }
        /* Phi' and W' - Phi */
        W[0] = q1 * al * al * ch, W[1] = q1 * al * al * sh;
        W[2] = -q2 * be * be * c, W[3] = -q2 * be * be * s;
        P[0] = (1 - q1) * al * sh, P[1] = (1 - q1) * al * ch;
        P[2] = -(1 - q2) * be * s, P[3] = (1 - q2) * be * c;
    }
    for (int i = 0; i < 4; i++) {
        double sc = 0;
        for (int j = 0; j < 4; j++)
            sc = fmax(sc, fabs(m[i][j]));
        for (int j = 0; j < 4; j++)
            m[i][j] /= sc;
    }
    return det4(m);
}

/* The first n bending frequencies (Hz) of the beam, from 1 Hz up (below, the free-free beam's
 * determinant is at the rounding of its rigid-body roots). */
static void beam_frequencies(const beam *b, int n, double *f)
{
    int found = 0;
    double w = 2 * M_PI, prev = beam_det(b, w);
    while (found < n && w < 1e7) {
        const double w1 = w * 1.0005, v = beam_det(b, w1);
        if ((v > 0) != (prev > 0)) {
            double lo = w, hi = w1;
            for (int it = 0; it < 200; it++) {
                const double mid = 0.5 * (lo + hi);
                if ((beam_det(b, mid) > 0) == (beam_det(b, lo) > 0))
                    lo = mid;
                else
                    hi = mid;
            }
            f[found++] = 0.5 * (lo + hi) / (2 * M_PI);
        }
        w = w1, prev = v;
    }
}

/* Euler-Bernoulli: f = (beta L)^2 / (2 pi L^2) sqrt(E I / (rho A)). */
static double euler_bernoulli(const beam *b, double betaL)
{
    return betaL * betaL / (2 * M_PI * b->L * b->L) * sqrt(b->E * b->I / (b->rho * b->A));
}

/* A steel beam of square section h x h (Cowper's k for a rectangle). */
static beam square_beam(double L, double h, double rho, int free_free)
{
    const double E = 200e9, nu = 0.3;
    beam b = {E, E / (2 * (1 + nu)), 10 * (1 + nu) / (12 + 11 * nu), rho, h * h, h * h * h * h / 12,
              L, free_free};
    return b;
}

/* The closed form solver's own check: Euler-Bernoulli is its limit for a stiff shear (k large)
 * and no rotary inertia (I small, E I kept), clamped-free and free-free. */
static void test_beam_reference(void)
{
    beam b = square_beam(1, 0.05, 7850, 0);
    b.k = 1e9, b.I *= 1e-6, b.E *= 1e6; /* E I kept, rho I -> 0 */
    double f[2];
    beam_frequencies(&b, 2, f);
    CU_ASSERT(fabs(f[0] / euler_bernoulli(&b, 1.875104069) - 1) < 1e-6);
    CU_ASSERT(fabs(f[1] / euler_bernoulli(&b, 4.694091133) - 1) < 1e-6);
    b = square_beam(1, 0.05, 7850, 1);
    b.k = 1e9, b.I *= 1e-6, b.E *= 1e6;
    beam_frequencies(&b, 1, f);
    CU_ASSERT(fabs(f[0] / euler_bernoulli(&b, 4.730040745) - 1) < 1e-5);
}

/* ---- running the cases ------------------------------------------------------------------- */

static int run_on(const hk_backend *be, const char *rel, int nsets, const char *const *sets,
                  hk_case *c, hk_run *r)
{
    int err = hk_case_load(hk_test_path(rel), nsets, sets, c);
    if (err) {
        fprintf(stderr, "\n  %s: %s\n", rel, hk_error_message());
        return err;
    }
    hk_run_opts o = {.backend = hk_backend_name(be), .quiet = 1};
    err = hk_run_case(c, &o, r);
    if (err) {
        fprintf(stderr, "\n  %s on %s: %s\n", rel, hk_backend_name(be), hk_error_message());
        hk_run_free(r);
        hk_case_free(c);
    }
    return err;
}

static double rel(double v, double ref)
{
    return fabs(v - ref) / fabs(ref);
}

/* y = A x (host). */
static void spmv(const hk_bcsr *A, const double *x, double *y)
{
    const int bs = A->bs;
    for (int64_t i = 0; i < A->nbrows; i++)
        for (int r = 0; r < bs; r++) {
            double s = 0;
            for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
                for (int c = 0; c < bs; c++)
                    s += A->val[((size_t)q * bs + r) * bs + c] * x[(int64_t)A->colind[q] * bs + c];
            y[i * bs + r] = s;
        }
}

/* The modes as the library gives them, checked on the host: K x = lambda M x to the reported
 * residual, x^T M x = 1, M-orthogonal pairs, zero at the prescribed dofs. */
static void check_shapes(const hk_run *r)
{
    const hk_run_modal *md = &r->modal;
    const int64_t n = r->sys.ndof;
    double *Kx = malloc((size_t)n * sizeof *Kx), *Mx = malloc((size_t)n * sizeof *Mx);
    double *My = malloc((size_t)n * sizeof *My);
    CU_ASSERT_FATAL(Kx && Mx && My);
    double worst_res = 0, worst_norm = 0, worst_orth = 0;
    for (int j = 0; j < md->nmodes; j++) {
        const double *x = md->X + (size_t)j * n;
        spmv(&r->sys.K, x, Kx);
        spmv(&r->sys.M, x, Mx);
        double num = 0, den = 0, xmx = 0;
        for (int64_t i = 0; i < n; i++) {
            const double d = Kx[i] - md->lambda[j] * Mx[i];
            num += d * d, den += Mx[i] * Mx[i], xmx += x[i] * Mx[i];
            if (r->sys.fixed[i]) CU_ASSERT(x[i] == 0);
        }
        if (!md->rigid[j]) worst_res = fmax(worst_res, sqrt(num / den) / fabs(md->lambda[j]));
        worst_norm = fmax(worst_norm, fabs(xmx - 1));
        for (int k = 0; k < j; k++) {
            spmv(&r->sys.M, md->X + (size_t)k * n, My);
            double xy = 0;
            for (int64_t i = 0; i < n; i++)
                xy += x[i] * My[i];
            worst_orth = fmax(worst_orth, fabs(xy));
        }
    }
    CU_ASSERT(worst_res < 1e-5);
    CU_ASSERT(worst_norm < 1e-10);
    CU_ASSERT(worst_orth < 1e-6);
    free(Kx), free(Mx), free(My);
}

/* The share of mode j's kinetic energy (x^T M x = 1) in component c. */
static double energy_in(const hk_run *r, int j, int c)
{
    const hk_bcsr *M = &r->sys.M;
    const int bs = M->bs;
    const double *x = r->modal.X + (size_t)j * r->sys.ndof;
    double s = 0;
    for (int64_t i = 0; i < M->nbrows; i++)
        for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++)
            s += x[i * bs + c] * M->val[((size_t)q * bs + c) * bs + c] *
                 x[(int64_t)M->colind[q] * bs + c];
    return s;
}

static double eff_fraction(const hk_run *r, int j, int c)
{
    return r->modal.eff_mass[j][c] / r->modal.total_mass[c];
}

/* ---- beams ------------------------------------------------------------------------------- */

/* Slender cantilever: the pairs equal, within 1 % / 2 % of Timoshenko and 1 % / 3 % of
 * Euler-Bernoulli; the first pair's effective mass y + z is the beam's 61.3 % (Euler-Bernoulli:
 * 0.6131), the second's 18.8 % (0.1883), none along x. */
static void test_cantilever(void)
{
    const beam b = square_beam(1, 0.05, 7850, 0);
    double ft[2];
    beam_frequencies(&b, 2, ft);
    const double eb[2] = {euler_bernoulli(&b, 1.875104069), euler_bernoulli(&b, 4.694091133)};
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(run_on(*be, "cases/modal/cantilever.yaml", 0, NULL, &c, &r));
        const hk_run_modal *md = &r.modal;
        CU_ASSERT_EQUAL_FATAL(md->nmodes, 4);
        fprintf(stderr, "\n    cantilever on %s: %.4f %.4f %.4f %.4f Hz, Timoshenko %.4f %.4f ",
                hk_backend_name(*be), md->freq[0], md->freq[1], md->freq[2], md->freq[3], ft[0],
                ft[1]);
        for (int p = 0; p < 2; p++) {
            CU_ASSERT(rel(md->freq[2 * p + 1], md->freq[2 * p]) < 1e-6); /* both of the pair */
            for (int j = 2 * p; j < 2 * p + 2; j++) {
                CU_ASSERT(rel(md->freq[j], ft[p]) < (p ? 0.02 : 0.01));
                CU_ASSERT(rel(md->freq[j], eb[p]) < (p ? 0.03 : 0.01));
                CU_ASSERT(!md->rigid[j]);
                CU_ASSERT(eff_fraction(&r, j, 0) < 1e-8);
            }
            const double yz = eff_fraction(&r, 2 * p, 1) + eff_fraction(&r, 2 * p, 2) +
                              eff_fraction(&r, 2 * p + 1, 1) + eff_fraction(&r, 2 * p + 1, 2);
            CU_ASSERT(rel(yz / 2, p ? 0.1883 : 0.6131) < 0.02);
        }
        CU_ASSERT_EQUAL(md->free_rigid, 0);
        CU_ASSERT(r.converged);
        check_shapes(&r);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

/* The bending modes (effective mass in y or z) of a run, in order: their indices. */
static int bending_modes(const hk_run *r, int *idx, int max)
{
    int n = 0;
    for (int j = 0; j < r->modal.nmodes && n < max; j++)
        if (eff_fraction(r, j, 1) + eff_fraction(r, j, 2) > 1e-3) idx[n++] = j;
    return n;
}

/* Stocky cantilever: Timoshenko within 2.5 %, the second pair far below Euler-Bernoulli; the
 * torsion mode between the pairs carries no effective mass. */
static void test_stocky(void)
{
    const beam b = square_beam(1, 0.2, 7850, 0);
    double ft[2];
    beam_frequencies(&b, 2, ft);
    const double eb2 = euler_bernoulli(&b, 4.694091133);
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(run_on(*be, "cases/modal/stocky.yaml", 0, NULL, &c, &r));
        int idx[8];
        const int nb = bending_modes(&r, idx, 8);
        CU_ASSERT_EQUAL_FATAL(nb, 4);
        fprintf(stderr, "\n    stocky on %s: bending %.3f %.3f %.3f %.3f Hz, Timoshenko %.3f %.3f ",
                hk_backend_name(*be), r.modal.freq[idx[0]], r.modal.freq[idx[1]],
                r.modal.freq[idx[2]], r.modal.freq[idx[3]], ft[0], ft[1]);
        for (int k = 0; k < 4; k++)
            CU_ASSERT(rel(r.modal.freq[idx[k]], ft[k / 2]) < 0.025);
        CU_ASSERT(r.modal.freq[idx[2]] < 0.9 * eb2);
        CU_ASSERT_EQUAL(idx[2], 3); /* mode 3 is the torsion */
        check_shapes(&r);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

/* Free-free: six rigid-body modes at zero frequency whose effective masses add up to the whole
 * mass in every direction, then the bending pairs of the free-free Timoshenko beam within 1 %;
 * with modal.shift = 1 Hz the same elastic modes, numbered from 7. */
static void test_free_beam(void)
{
    const beam b = square_beam(1, 0.05, 7850, 1);
    double ft[2];
    beam_frequencies(&b, 2, ft);
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(run_on(*be, "cases/modal/free_beam.yaml", 0, NULL, &c, &r));
        const hk_run_modal *md = &r.modal;
        CU_ASSERT_EQUAL_FATAL(md->nmodes, 10);
        CU_ASSERT_EQUAL(md->free_rigid, 6);
        double sum[3] = {0, 0, 0};
        for (int j = 0; j < 6; j++) {
            CU_ASSERT(md->rigid[j]);
            CU_ASSERT(md->freq[j] < 1e-2);
            for (int d = 0; d < 3; d++)
                sum[d] += eff_fraction(&r, j, d);
        }
        for (int d = 0; d < 3; d++)
            CU_ASSERT(fabs(sum[d] - 1) < 1e-6);
        CU_ASSERT(rel(md->total_mass[0], 7850 * 0.05 * 0.05) < 1e-12);
        fprintf(stderr, "\n    free beam on %s: %.4f %.4f %.4f %.4f Hz, Timoshenko %.4f %.4f ",
                hk_backend_name(*be), md->freq[6], md->freq[7], md->freq[8], md->freq[9], ft[0],
                ft[1]);
        for (int j = 6; j < 10; j++) {
            CU_ASSERT(!md->rigid[j]);
            CU_ASSERT(rel(md->freq[j], ft[(j - 6) / 2]) < 0.01);
        }
        CU_ASSERT(rel(md->freq[7], md->freq[6]) < 1e-6);
        CU_ASSERT(rel(md->freq[9], md->freq[8]) < 1e-6);
        check_shapes(&r);
        const double f7 = md->freq[6];
        hk_run_free(&r);
        hk_case_free(&c);

        const char *sets[] = {"modal.shift=1", "modal.modes=2"};
        HK_ASSERT_OK(run_on(*be, "cases/modal/free_beam.yaml", 2, sets, &c, &r));
        CU_ASSERT_EQUAL(r.modal.nmodes, 2);
        CU_ASSERT_EQUAL(r.modal.skipped, 6);
        CU_ASSERT(rel(r.modal.freq[0], f7) < 1e-8);
        CU_ASSERT(!r.modal.rigid[0]);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

/* Plane strain: a beam of modulus E / (1 - nu^2), Timoshenko with k = 5/6, within 1 %; and the
 * lumped mass within 2 % of it. */
static void test_strip(void)
{
    const double E = 200e9, nu = 0.3, h = 0.05;
    beam b = {E / (1 - nu * nu), E / (2 * (1 + nu)), 5.0 / 6, 7850, h, h * h * h / 12, 1, 0};
    double ft[3];
    beam_frequencies(&b, 3, ft);
    for (const hk_backend *const *be = hk_test_backends(); *be; be++)
        for (int lumped = 0; lumped <= 1; lumped++) {
            const char *sets[] = {"modal.mass=lumped"};
            hk_case c;
            hk_run r;
            HK_ASSERT_OK(run_on(*be, "cases/modal/strip.yaml", lumped, sets, &c, &r));
            CU_ASSERT_EQUAL_FATAL(r.modal.nmodes, 3);
            fprintf(stderr, "\n    strip on %s (%s): %.4f %.4f %.4f Hz, Timoshenko %.4f %.4f %.4f ",
                    hk_backend_name(*be), lumped ? "lumped" : "consistent", r.modal.freq[0],
                    r.modal.freq[1], r.modal.freq[2], ft[0], ft[1], ft[2]);
            for (int j = 0; j < 3; j++)
                CU_ASSERT(rel(r.modal.freq[j], ft[j]) < (lumped ? 0.02 : 0.01));
            if (lumped) CU_ASSERT_EQUAL(r.sys.M.rowptr[r.sys.M.nbrows], r.sys.M.nbrows);
            check_shapes(&r);
            hk_run_free(&r);
            hk_case_free(&c);
        }
}

/* ---- NAFEMS ------------------------------------------------------------------------------ */

#ifdef HOOKE_HAVE_GMSH
/* FV32, the tapered membrane: the six reference frequencies within 0.5 %. */
static void test_fv32(void)
{
    static const double ref[6] = {44.623, 130.03, 162.70, 246.05, 379.90, 391.44};
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(run_on(*be, "cases/modal/fv32.yaml", 0, NULL, &c, &r));
        CU_ASSERT_EQUAL_FATAL(r.modal.nmodes, 6);
        double worst = 0;
        for (int j = 0; j < 6; j++)
            worst = fmax(worst, rel(r.modal.freq[j], ref[j]));
        fprintf(stderr, "\n    FV32 on %s: worst of 6 frequencies off by %.3f %% ",
                hk_backend_name(*be), 100 * worst);
        CU_ASSERT(worst < 0.005);
        check_shapes(&r);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

/* FV41, the free cylinder (axisymmetric): one rigid-body mode, then the five reference
 * frequencies within 0.5 %; the rigid mode carries the whole axial mass. */
static void test_fv41(void)
{
    static const double ref[5] = {243.53, 377.41, 394.11, 397.72, 405.28};
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(run_on(*be, "cases/modal/fv41.yaml", 0, NULL, &c, &r));
        CU_ASSERT_EQUAL_FATAL(r.modal.nmodes, 6);
        CU_ASSERT_EQUAL(r.modal.free_rigid, 1);
        CU_ASSERT(r.modal.rigid[0] && r.modal.freq[0] < 1e-2);
        CU_ASSERT(fabs(eff_fraction(&r, 0, 1) - 1) < 1e-6);
        /* per radian: rho L (b^2 - a^2) / 2 */
        CU_ASSERT(rel(r.modal.total_mass[1], 8000 * 10 * (2.2 * 2.2 - 1.8 * 1.8) / 2) < 1e-9);
        double worst = 0;
        for (int j = 0; j < 5; j++)
            worst = fmax(worst, rel(r.modal.freq[j + 1], ref[j]));
        fprintf(stderr, "\n    FV41 on %s: worst of 5 frequencies off by %.3f %% ",
                hk_backend_name(*be), 100 * worst);
        CU_ASSERT(worst < 0.005);
        check_shapes(&r);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}
#endif

/* FV52, the thick plate: the flexural modes (most kinetic energy in z) at the reference
 * frequencies within 1 %, both members of each pair. */
static void test_fv52(void)
{
    static const double ref[6] = {45.897, 109.44, 109.44, 167.89, 206.19, 206.19};
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(run_on(*be, "cases/modal/fv52.yaml", 0, NULL, &c, &r));
        int nf = 0;
        double f[6], worst = 0;
        for (int j = 0; j < r.modal.nmodes && nf < 6; j++)
            if (energy_in(&r, j, 2) > 0.5) f[nf++] = r.modal.freq[j];
        CU_ASSERT_EQUAL_FATAL(nf, 6);
        for (int j = 0; j < 6; j++)
            worst = fmax(worst, rel(f[j], ref[j]));
        fprintf(stderr,
                "\n    FV52 on %s: flexural %.3f %.3f %.3f %.3f %.3f %.3f Hz (worst %.2f %%) ",
                hk_backend_name(*be), f[0], f[1], f[2], f[3], f[4], f[5], 100 * worst);
        CU_ASSERT(worst < 0.01);
        CU_ASSERT(rel(f[2], f[1]) < 1e-6);
        CU_ASSERT(rel(f[5], f[4]) < 1e-6);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

/* ---- output and messages ----------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) free(b), b = NULL;
    if (b) b[n] = 0, *len = (size_t)n;
    fclose(f);
    return b;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* hooke run on the strip: the summary's modal table, a .vtu per mode with the mode shape and
 * the frequency, the .pvd listing them, --json; twice the same bytes. */
static void test_output_files(void)
{
    char cmd[1024], out[16384];
    const char *dir = hk_test_tmpdir();
    snprintf(cmd, sizeof cmd, "run %s -o %s/strip.vtu", hk_test_path("cases/modal/strip.yaml"),
             dir);
    CU_ASSERT_EQUAL_FATAL(hk_test_hooke_cmd(cmd, out, sizeof out), 0);
    CU_ASSERT(strstr(out, "mode  frequency (Hz)") != NULL);
    CU_ASSERT(strstr(out, "eff. mass y") != NULL);
    char path[1024];
    size_t len, len2;
    snprintf(path, sizeof path, "%s/strip.pvd", dir);
    char *pvd = slurp(path, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pvd);
    CU_ASSERT_EQUAL(count(pvd, "<DataSet"), 3);
    CU_ASSERT(strstr(pvd, "file=\"strip-mode01.vtu\"") != NULL);
    CU_ASSERT(strstr(pvd, "file=\"strip-mode03.vtu\"") != NULL);
    free(pvd);
    snprintf(path, sizeof path, "%s/strip-mode02.vtu", dir);
    char *vtu = slurp(path, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(vtu);
    CU_ASSERT(strstr(vtu, "Name=\"mode_shape\"") != NULL);
    CU_ASSERT(strstr(vtu, "Name=\"frequency_hz\"") != NULL);
    CU_ASSERT_EQUAL_FATAL(hk_test_hooke_cmd(cmd, out, sizeof out), 0);
    char *again = slurp(path, &len2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(again);
    CU_ASSERT(len == len2 && memcmp(vtu, again, len) == 0);
    free(vtu);
    free(again);
    snprintf(cmd, sizeof cmd, "run %s -o %s/strip.vtu --json -q",
             hk_test_path("cases/modal/strip.yaml"), dir);
    CU_ASSERT_EQUAL_FATAL(hk_test_hooke_cmd(cmd, out, sizeof out), 0);
    CU_ASSERT(strstr(out, "\"modal\": {") != NULL);
    CU_ASSERT(strstr(out, "\"frequency_hz\": 42.7") != NULL);
    CU_ASSERT(strstr(out, "\"effective_mass_fraction\": [") != NULL);
    CU_ASSERT_EQUAL(count(out, "\"mode\": "), 3);
}

/* The case file's modal messages: each one sentence at its line. */
static void test_case_messages(void)
{
    static const struct {
        const char *body, *expect;
    } bad[] = {
        {"analysis: 3d\nmodal: {modes: 0}\n", "modal.modes = 0; ask for at least one mode"},
        {"analysis: 3d\nmodal: 5\n", "modal must be a mapping like {modes: 10}"},
        {"analysis: 3d\nmodal: {mode: 5}\n", "did you mean 'modes'"},
        {"analysis: 3d\nmodal: {shift: 1}\n", "modal needs modes: N"},
        {"analysis: 3d\nmodal: {modes: 2, mass: diagonal}\n",
         "modal.mass must be consistent (the default) or lumped"},
        {"analysis: 3d\nmodal: {modes: 2, shift: -1}\n", "give a frequency >= 0"},
        {"analysis: 3d\nmodal: {modes: 2, tol: 2}\n", "give a relative residual in (0, 1)"},
        {"analysis: modal\n", "write analysis: 3d (or plane_stress"},
        {"analysis: 3d\nmodal: {modes: 2}\nmaterials:\n  - {name: steel, E: 200e9, nu: 0.3}\n",
         "materials[0] (steel): a modal analysis needs density"},
        {"analysis: 3d\noutput: {mass: M.mtx}\n", "output.mass is the mass matrix of a modal"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[1024];
        const int has_mat = strstr(bad[i].body, "materials") != NULL;
        snprintf(text, sizeof text,
                 "geometry:\n  generate: {shape: box, size: [1, 1, 1], cells: [1, 1, 1], "
                 "element: hex8}\n%s%s%s",
                 bad[i].body,
                 has_mat ? "" : "materials:\n  - {name: steel, E: 200e9, nu: 0.3, density: 1}\n",
                 strstr(bad[i].body, "modal:") ? ""
                                               : "supports:\n  - {boundary: xmin, fix: all}\n");
        hk_case c;
        const int err = hk_case_load(hk_test_write_case("modal_bad.yaml", text), 0, NULL, &c);
        CU_ASSERT_EQUAL(err, HK_ERR_CASE);
        if (!err) hk_case_free(&c);
        const char *msg = hk_error_message();
        if (!strstr(msg, bad[i].expect) || !strstr(msg, "modal_bad.yaml:"))
            fprintf(stderr, "\n    case %zu: got '%s' ", i, msg);
        CU_ASSERT(strstr(msg, bad[i].expect) != NULL);
        CU_ASSERT(strstr(msg, "modal_bad.yaml:") != NULL);
        hk_error_clear();
    }
    /* more modes than free dofs: at the modes key */
    hk_case c;
    hk_run r;
    const char *sets[] = {"modal.modes=100", "geometry.generate.cells=[2,1]"};
    CU_ASSERT_NOT_EQUAL(run_on(hk_test_backends()[0], "cases/modal/strip.yaml", 2, sets, &c, &r),
                        0);
    CU_ASSERT(strstr(hk_error_message(), "free dofs") != NULL);
    hk_error_clear();
    /* the tolerance twice */
    const char *twice[] = {"modal.tol=1e-7", "solver.eigen.tol=1e-8"};
    CU_ASSERT_NOT_EQUAL(run_on(hk_test_backends()[0], "cases/modal/strip.yaml", 2, twice, &c, &r),
                        0);
    CU_ASSERT(strstr(hk_error_message(), "given twice") != NULL);
    hk_error_clear();
}

/* A static case's loads and linear-solver keys are noted as ignored, not refused. */
static void test_static_case_as_modal(void)
{
    const char *sets[] = {"modal.modes=2", "geometry.generate.cells=[4,4,4]"};
    hk_case c;
    hk_run r;
    HK_ASSERT_OK(run_on(hk_test_backends()[0], "cases/box/box.yaml", 2, sets, &c, &r));
    CU_ASSERT(strstr(r.modal.notes, "1 load, gravity ignored") != NULL);
    CU_ASSERT(strstr(r.modal.notes, "solver.method, solver.tol ignored") != NULL);
    CU_ASSERT_EQUAL(r.modal.nmodes, 2);
    hk_run_free(&r);
    hk_case_free(&c);
}

/* Springs add stiffness and no mass: the block on its elastic foundation (cases/springs, with a
 * density) bounces at sqrt(k A / m) / (2 pi) = 45.94 Hz (k = 1e8 N/m^3 over A = 1 m^2, m =
 * 2400 x 0.5 kg; the block itself is nearly rigid at that frequency), carrying all its mass
 * along z. */
static void test_springs_bounce(void)
{
    const char *sets[] = {"modal.modes=1", "materials.0.density=2400"};
    const double ref = sqrt(1e8 * 1.0 / (2400 * 0.5)) / (2 * M_PI);
    for (const hk_backend *const *be = hk_test_backends(); *be; be++) {
        hk_case c;
        hk_run r;
        HK_ASSERT_OK(run_on(*be, "cases/springs/springs.yaml", 2, sets, &c, &r));
        fprintf(stderr, "\n    springs on %s: %.4f Hz against %.4f Hz ", hk_backend_name(*be),
                r.modal.freq[0], ref);
        CU_ASSERT(rel(r.modal.freq[0], ref) < 0.005);
        CU_ASSERT(fabs(eff_fraction(&r, 0, 2) - 1) < 1e-3);
        CU_ASSERT_EQUAL(r.modal.free_rigid, 0);
        hk_run_free(&r);
        hk_case_free(&c);
    }
}

HK_SUITE(modal, {"Timoshenko reference: Euler-Bernoulli limits", test_beam_reference},
         {"slender cantilever: EB, Timoshenko, pairs, effective masses", test_cantilever},
         {"stocky cantilever: Timoshenko, torsion between the pairs", test_stocky},
         {"free-free beam: 6 rigid-body modes, elastic pairs, shift", test_free_beam},
         {"plane-strain strip, consistent and lumped mass", test_strip},
#ifdef HOOKE_HAVE_GMSH
         {"NAFEMS FV32 tapered membrane (plane stress)", test_fv32},
         {"NAFEMS FV41 free cylinder (axisymmetric)", test_fv41},
#endif
         {"NAFEMS FV52 thick plate: flexural modes and pairs", test_fv52},
         {"per-mode .vtu, .pvd, JSON, same bytes twice", test_output_files},
         {"case-file messages of the modal section", test_case_messages},
         {"a static case run as modal: notes", test_static_case_as_modal},
         {"springs: the block bounces at sqrt(k A / m) / 2 pi", test_springs_bounce})
