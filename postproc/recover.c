/* Strain and stress recovery, von Mises, principal stresses and reactions (hk_postproc).
 *
 * Per element: strain and stress at the Gauss points (volume-weighted into the element
 * average), at the element's own nodes (from its shape functions, averaged over the elements
 * sharing a node) and the internal force integral B^T sigma (for the reactions
 * r = f_int - f_ext at the prescribed dofs). Elements are processed in parallel in chunks and
 * scattered in element order, so results do not depend on the thread count.
 *
 * Axisymmetric (x = r, y = z, the hoop direction theta in the place of z): the gradient's zz
 * entry is the hoop strain u_r / r (at a node on the axis, r = 0, its limit du_r/dr, which
 * holds when u_r = 0 there), volumes and internal forces are per radian (weight r), and the
 * internal force has the hoop term int sigma_tt N_a / r. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "threads.h"
#include "elements.h" /* assembly/: reference elements (shape functions, Gauss rules) */
#include "groups.h"   /* assembly/: the nodes of a group */
#include "springs.h"  /* assembly/: spring forces of the reactions */
#include "pp_impl.h"
#include "recover_kernels.h"

/* The thread (of nthreads) that sums into node g: blocks of 16 consecutive nodes (whole cache
 * lines of the 6-component arrays) spread over the threads by a multiplicative hash. */
static inline unsigned node_owner(int64_t g, unsigned nthreads)
{
    const uint64_t h = ((uint64_t)g >> 4) * 0x9E3779B97F4A7C15ull;
    return (unsigned)(((h >> 32) * nthreads) >> 32);
}

void hk_fields_free(hk_fields *f)
{
    if (!f) return;
    free(f->u);
    free(f->strain);
    free(f->stress);
    free(f->von_mises);
    free(f->principal);
    free(f->cell_stress);
    free(f->cell_von_mises);
    free(f->reaction);
    free(f->support_reaction);
    free(f->support_moment);
    memset(f, 0, sizeof *f);
}

/* ---- the fields' arrays reserved ahead (hk_fields_reserve) ------------------------------- */

/* The arrays hk_pp_prepare makes, in its order: u, strain, stress, von Mises, principal,
 * cell stress, cell von Mises, reaction, and the internal forces (hk_pp_work's fint). */
enum { RESERVED = 9 };

static const int reserved_per_node[RESERVED] = {3, 6, 6, 1, 3, 0, 0, 3, 3};
static const int reserved_per_cell[RESERVED] = {0, 0, 0, 0, 0, 6, 1, 0, 0};

static struct {
    int on, threads;
    int64_t nnodes, ncells;
    double *arr[RESERVED];
    pthread_t thread;
    atomic_int stop;
    double seconds, touched; /* the thread's time and the bytes whose pages it took */
} reserve;

static size_t reserved_bytes(int k, int64_t nn, int64_t ne)
{
    return (size_t)(reserved_per_node[k] * nn + reserved_per_cell[k] * ne) * sizeof(double);
}

/* The thread: one zero written into every page of the arrays, array by array in pieces, on
 * reserve.threads OpenMP threads, until done or told to stop. */
static void *reserve_main(void *arg)
{
    (void)arg;
    const double t0 = hk_time();
    enum { PIECE = 256 }; /* pages */
    for (int k = 0; k < RESERVED && !atomic_load(&reserve.stop); k++) {
        char *b = (char *)reserve.arr[k];
        const size_t bytes = reserved_bytes(k, reserve.nnodes, reserve.ncells);
        const int64_t pages = (int64_t)((bytes + 4095) / 4096);
        const int64_t pieces = (pages + PIECE - 1) / PIECE;
        double done = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(reserve.threads) reduction(+ : done)
        for (int64_t q = 0; q < pieces; q++) {
            if (atomic_load(&reserve.stop)) continue;
            const int64_t p1 = (q + 1) * PIECE < pages ? (q + 1) * PIECE : pages;
            for (int64_t pg = q * PIECE; pg < p1; pg++)
                b[4096 * pg] = 0;
            done += (double)(p1 - q * PIECE) * 4096;
        }
        reserve.touched += done;
    }
    reserve.seconds = hk_time() - t0;
    return NULL;
}

/* The last reservation's thread: its seconds and the bytes whose pages it took (kept past
 * the reservation, for hk_fields_reserve_stats). */
static double reserve_stats[2];

/* The thread stopped and joined; the arrays stay reserved. */
static void reserve_join(void)
{
    if (!reserve.on || reserve.on == 2) return;
    atomic_store(&reserve.stop, 1);
    pthread_join(reserve.thread, NULL);
    reserve.on = 2;
    reserve_stats[0] = reserve.seconds, reserve_stats[1] = reserve.touched;
}

void hk_fields_reserve_cancel(void)
{
    reserve_join();
    for (int k = 0; k < RESERVED; k++)
        free(reserve.arr[k]);
    memset(&reserve, 0, sizeof reserve);
}

int hk_fields_reserve(int64_t nnodes, int64_t ncells, int threads)
{
    hk_fields_reserve_cancel();
    reserve_stats[0] = reserve_stats[1] = 0;
    HK_CHECK(nnodes >= 0 && ncells >= 0, HK_ERR_ARG, "hk_fields_reserve: %lld nodes and %lld cells",
             (long long)nnodes, (long long)ncells);
    reserve.nnodes = nnodes, reserve.ncells = ncells;
    reserve.threads = threads > 0 ? threads : 1;
    for (int k = 0; k < RESERVED; k++) {
        const int ierr = hk_calloc(reserved_bytes(k, nnodes, ncells) / sizeof(double) + 1,
                                   sizeof(double), &reserve.arr[k]);
        if (ierr) {
            hk_fields_reserve_cancel();
            return ierr;
        }
    }
    atomic_store(&reserve.stop, 0);
    reserve.on = 1;
    if (hk_thread_create(&reserve.thread, reserve_main, NULL) != 0)
        reserve.on = 2; /* no thread: the arrays still serve, their pages taken when filled */
    return 0;
}

double hk_fields_reserve_bytes(int64_t nnodes, int64_t ncells)
{
    double b = 0;
    for (int k = 0; k < RESERVED; k++)
        b += (double)reserved_bytes(k, nnodes, ncells);
    return b;
}

void hk_fields_reserve_stats(double *seconds, double *touched)
{
    *seconds = reserve_stats[0], *touched = reserve_stats[1];
}

/* Array k of hk_pp_prepare for a mesh of nn nodes and ne cells, n doubles zeroed: the
 * reserved one where it was made for these sizes, else a fresh one. */
static int take_or_calloc(int k, int64_t nn, int64_t ne, size_t n, double **out)
{
    if (reserve.on && reserve.arr[k] && reserve.nnodes == nn && reserve.ncells == ne) {
        reserve_join();
        *out = reserve.arr[k];
        reserve.arr[k] = NULL;
        return 0;
    }
    return hk_calloc(n, sizeof(double), out);
}

/* Element e has a recovery kernel of the mesh's dimension, its node count and a valid region. */
static int check_element(const hk_mesh *m, int64_t e)
{
    int t = m->cells.type[e];
    const hk_elref *el = hk_eltype_has_kernel((hk_eltype)t) ? hk_elref_get((hk_eltype)t) : NULL;
    HK_CHECK(el && el->dim == m->dim, HK_ERR_UNSUPPORTED,
             "element %lld: a %s has no stress recovery in a %dD model (supported: tri3 tri6 "
             "quad4 quad8 quad9 in 2D, tet4 tet10 hex8 hex20 hex27 wedge6 wedge15 wedge18 "
             "pyr5 pyr13 pyr14 in 3D)",
             (long long)m->cells.tag[e], hk_el_name(t), m->dim);
    HK_CHECK(m->cells.ptr[e + 1] - m->cells.ptr[e] == el->nnodes, HK_ERR_MODEL,
             "element %lld (%s) has %lld nodes, expected %d", (long long)m->cells.tag[e], el->name,
             (long long)(m->cells.ptr[e + 1] - m->cells.ptr[e]), el->nnodes);
    if (m->cell_region && m->nregions > 0)
        HK_CHECK(m->cell_region[e] >= 0 && m->cell_region[e] < m->nregions, HK_ERR_MODEL,
                 "element %lld has region index %d outside 0..%d", (long long)m->cells.tag[e],
                 m->cell_region[e], m->nregions - 1);
    return 0;
}

/* Input checks: one sentence each, naming what is wrong and the fix. */
static int check_input(const hk_problem *p, const hk_system *s, const double *u)
{
    HK_CHECK(p && p->mesh, HK_ERR_ARG, "hk_postproc: the problem or its mesh is NULL");
    HK_CHECK(u, HK_ERR_ARG, "hk_postproc: the displacement vector u is NULL");
    HK_CHECK(s && s->fixed && s->f_ext, HK_ERR_ARG,
             "hk_postproc: the assembled system (with fixed and f_ext) is needed for the "
             "reactions; pass the hk_system from hk_assemble");
    const hk_mesh *m = p->mesh;
    HK_CHECK(m->dim == 2 || m->dim == 3, HK_ERR_ARG, "hk_postproc: mesh dimension %d is not 2 or 3",
             m->dim);
    HK_CHECK(s->dim == m->dim && s->ndof == m->dim * (m->nnodes + 2 * (int64_t)s->nrigid) &&
                 (!s->nrigid || (s->rigid_of && s->rigid_point)),
             HK_ERR_ARG,
             "hk_postproc: the system has %lld dofs of block size %d but the mesh has %lld nodes "
             "in %dD; pass the system assembled for this mesh",
             (long long)s->ndof, s->dim, (long long)m->nnodes, m->dim);
    if (m->dim == 3)
        HK_CHECK(p->analysis == HK_SOLID, HK_ERR_MODEL,
                 "hk_postproc: a 3D mesh needs the solid analysis, not plane stress/strain or "
                 "axisymmetric");
    else
        HK_CHECK(p->analysis == HK_PLANE_STRESS || p->analysis == HK_PLANE_STRAIN ||
                     p->analysis == HK_AXISYMMETRIC,
                 HK_ERR_MODEL,
                 "hk_postproc: a 2D mesh needs the plane stress, plane strain or axisymmetric "
                 "analysis");
    if (m->dim == 2)
        HK_CHECK(isfinite(p->thickness) && p->thickness >= 0, HK_ERR_MODEL,
                 "hk_postproc: the thickness %g of the 2D model is not valid; give a positive "
                 "thickness (0 means unit thickness)",
                 p->thickness);
    HK_CHECK(p->materials, HK_ERR_ARG, "hk_postproc: the problem has no materials");
    for (int r = 0; r < (m->nregions > 0 ? m->nregions : 1); r++) {
        const hk_material *mat = &p->materials[r];
        const char *rn = m->nregions > 0 ? m->regions[r].name : "(default)";
        if (mat->kind != HK_MAT_ISOTROPIC) continue; /* hk_material_law checks the others */
        HK_CHECK(mat->E > 0 && isfinite(mat->E), HK_ERR_MODEL,
                 "material '%s' of region '%s': Young's modulus E = %g must be positive", mat->name,
                 rn, mat->E);
        HK_CHECK(mat->nu > -1 && mat->nu < 0.5, HK_ERR_MODEL,
                 "material '%s' of region '%s': Poisson's ratio nu = %g must lie in (-1, 0.5)",
                 mat->name, rn, mat->nu);
    }
    /* elements and dofs checked on every thread; the first bad one in order is reported */
    int64_t bad = m->cells.n;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t e = 0; e < m->cells.n; e++)
        if (check_element(m, e) && e < bad) bad = e;
    if (bad < m->cells.n) return check_element(m, bad);
    bad = s->ndof;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t i = 0; i < s->ndof; i++)
        if (!isfinite(u[i]) && i < bad) bad = i;
    HK_CHECK(bad == s->ndof, HK_ERR_NUMERIC,
             "hk_postproc: displacement dof %lld (node %lld) is %g; the solve did not "
             "converge to a finite answer",
             (long long)bad, (long long)(bad / m->dim), bad < s->ndof ? u[bad] : 0.0);
    for (int k = 0; k < p->nsupports; k++)
        HK_CHECK(p->supports[k].boundary >= 0 && p->supports[k].boundary < m->nboundaries,
                 HK_ERR_ARG, "hk_postproc: support %d names boundary index %d outside 0..%d", k,
                 p->supports[k].boundary, m->nboundaries - 1);
    return 0;
}

void hk_pp_work_free(hk_pp_work *w)
{
    free(w->laws);
    free(w->dTr);
    free(w->fint);
    memset(w, 0, sizeof *w);
}

int hk_pp_prepare(const hk_problem *p, const hk_system *s, const double *u, hk_fields *out,
                  hk_pp_work *w)
{
    HK_CHECK(out && w, HK_ERR_ARG, "hk_postproc: the output fields pointer is NULL");
    memset(out, 0, sizeof *out);
    memset(w, 0, sizeof *w);
    HK_CALL(check_input(p, s, u));
    const hk_mesh *m = p->mesh;
    const int dim = m->dim;
    const int64_t nn = m->nnodes, ne = m->cells.n;
    int ierr = 0;
    w->nowned = nn;
    /* 2D: thickness 0 means unit thickness, as in the assembly; axisymmetric: per radian */
    w->thick =
        dim == 2 && p->analysis != HK_AXISYMMETRIC ? (p->thickness > 0 ? p->thickness : 1.0) : 1.0;
    out->nnodes = nn, out->ncells = ne;
    out->axisymmetric = p->analysis == HK_AXISYMMETRIC;
    /* the arrays reserved ahead for this mesh's sizes, if any (hk_fields_reserve) */
    double **arrays[RESERVED] = {
        &out->u,           &out->strain,         &out->stress,   &out->von_mises, &out->principal,
        &out->cell_stress, &out->cell_von_mises, &out->reaction, &w->fint};
    for (int k = 0; k < RESERVED; k++)
        HK_TRY(take_or_calloc(k, nn, ne, reserved_bytes(k, nn, ne) / sizeof(double), arrays[k]));
    if (reserve.on) hk_fields_reserve_cancel(); /* what another mesh's reservation held */
    out->nsupports = p->nsupports;
    HK_TRY(hk_calloc((size_t)(p->nsupports > 0 ? p->nsupports : 1), sizeof(double[3]),
                     &out->support_reaction));
    HK_TRY(hk_calloc((size_t)(p->nsupports > 0 ? p->nsupports : 1), sizeof(double[3]),
                     &out->support_moment));

    /* displacements, 3 per node; prescribed dofs take the system's prescribed values */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++) {
        for (int c = 0; c < dim; c++) {
            int64_t d = i * dim + c;
            out->u[3 * i + c] = s->fixed[d] && s->u_fixed ? s->u_fixed[d] : u[d];
        }
    }
    /* nodes of a rigid coupling: u = u_ref + theta x (x - x_ref) */
#pragma omp parallel for schedule(static) if (s->nrigid)
    for (int64_t i = 0; i < nn; i++) {
        if (!s->nrigid) continue;
        const int k = s->rigid_of[i];
        if (k < 0) continue;
        const double *t = u + (nn + 2 * k) * dim, *th = t + dim, *x0 = s->rigid_point[k];
        const double r[3] = {m->coords[3 * i] - x0[0], m->coords[3 * i + 1] - x0[1],
                             m->coords[3 * i + 2] - x0[2]};
        double *ui = out->u + 3 * i;
        if (dim == 2) {
            ui[0] = t[0] - th[0] * r[1];
            ui[1] = t[1] + th[0] * r[0];
        } else {
            ui[0] = t[0] + th[1] * r[2] - th[2] * r[1];
            ui[1] = t[1] + th[2] * r[0] - th[0] * r[2];
            ui[2] = t[2] + th[0] * r[1] - th[1] * r[0];
        }
    }

    w->nlaws = m->nregions > 0 ? m->nregions : 1;
    HK_TRY(hk_calloc((size_t)w->nlaws, sizeof *w->laws, &w->laws));
    HK_TRY(hk_calloc((size_t)w->nlaws, sizeof *w->dTr, &w->dTr));
    for (int r = 0; r < w->nlaws; r++) {
        HK_TRY(hk_material_law(&p->materials[r], p->analysis, dim, &w->laws[r]));
        w->dTr[r] = hk_problem_region_dT(p, r);
    }
    return 0;
fail:
    hk_pp_work_free(w);
    hk_fields_free(out);
    return ierr;
}

/* The region (law) of cell e. */
static int cell_law(const hk_mesh *m, int64_t e)
{
    return m->cell_region && m->nregions > 0 ? m->cell_region[e] : 0;
}

/* Element e's strains, stresses and internal forces into o: 0, or 1 when it is inverted. */
static int element(const hk_problem *p, const hk_pp_work *w, const double *u3, int64_t e,
                   hk_rec_elem *o)
{
    const hk_mesh *m = p->mesh;
    const int r = cell_law(m, e);
    return hk_rec_element(hk_elref_get((hk_eltype)m->cells.type[e]), p->analysis, &w->laws[r],
                          w->dTr[r], p->node_dT, w->thick, m->coords, u3,
                          m->cells.nodes + m->cells.ptr[e], o);
}

int hk_pp_element_error(const hk_problem *p, const hk_pp_work *w, const hk_fields *out, int64_t e)
{
    hk_rec_elem *o = NULL;
    double det = 0;
    if (!hk_malloc(sizeof *o, &o)) { /* the determinant again, for the message */
        element(p, w, out->u, e, o);
        det = o->det;
        free(o);
    }
    return hk_error_set(HK_ERR_MODEL, __FILE__, __LINE__,
                        "element %lld has a non-positive Jacobian determinant (%g): it is "
                        "inverted or degenerate; fix its node order or the mesh",
                        (long long)p->mesh->cells.tag[e], det);
}

int hk_pp_finish(const hk_problem *p, const hk_system *s, hk_pp_work *w, hk_fields *out)
{
    const hk_mesh *m = p->mesh;
    const int dim = m->dim;
    const int64_t nn = m->nnodes;
    const double *fint = w->fint;
    int ierr = 0;
    double *ud = NULL, *ys = NULL, *yk = NULL;
    int32_t *gnodes = NULL;

    /* maxima: node by node on every thread (a max does not depend on the order it is taken
     * in) */
    double max_u = 0, max_vm = 0;
#pragma omp parallel for schedule(static) reduction(max : max_u, max_vm)
    for (int64_t i = 0; i < nn; i++) {
        const double *ui = out->u + 3 * i;
        /* scaled by the largest component: no overflow or underflow of the squares for
         * extreme but finite values (E = 1e300 gave max |u| = 0) */
        const double um = fmax(fabs(ui[0]), fmax(fabs(ui[1]), fabs(ui[2])));
        double un = 0;
        if (um > 0 && isfinite(um)) {
            const double a = ui[0] / um, b = ui[1] / um, c = ui[2] / um;
            un = um * sqrt(a * a + b * b + c * c);
        } else if (!(um == 0))
            un = um; /* inf or NaN stays visible */
        if (i >= w->nowned) continue; /* another part's node: its maxima are that part's */
        if (un > max_u) max_u = un;
        if (out->von_mises[i] > max_vm) max_vm = out->von_mises[i];
    }
    out->max_u = max_u, out->max_von_mises = max_vm;

    /* reactions r = f_int - f_ext at the prescribed dofs, the springs' forces -K_s u where
     * they act (a held dof's own reaction is f_int + K_s u - f_ext, the springs take the
     * rest) */
    int springs = 0; /* without spring supports their forces are zero: no arrays for them */
    for (int k = 0; k < p->nsupports; k++)
        springs |= p->supports[k].kind == HK_SUPPORT_SPRING;
    if (springs) {
        HK_TRY(hk_calloc((size_t)(dim * nn), sizeof(double), &ud));
        HK_TRY(hk_calloc((size_t)(dim * nn), sizeof(double), &ys));
        HK_TRY(hk_calloc((size_t)(dim * nn), sizeof(double), &yk));
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < nn; i++)
            for (int c = 0; c < dim; c++)
                ud[i * dim + c] = out->u[3 * i + c];
        HK_TRY(hk_springs_apply(p, -1, ud, ys));
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++)
        for (int c = 0; c < dim; c++) {
            int64_t d = i * dim + c;
            const double y = ys ? ys[d] : 0.0;
            out->reaction[3 * i + c] = s->fixed[d] ? fint[3 * i + c] - s->f_ext[d] : -y;
        }
    for (int k = 0; k < p->nsupports; k++) {
        const hk_support *sp = &p->supports[k];
        const double *x0 = sp->moment_point;
        const int spring = sp->kind == HK_SUPPORT_SPRING;
        if (spring) {
            memset(yk, 0, sizeof(double) * (size_t)(dim * nn));
            HK_TRY(hk_springs_apply(p, k, ud, yk));
        }
        /* every node of the group once (a node list, or the unique nodes of its facets) */
        int64_t gn;
        HK_TRY(hk_group_nodes(m, sp->boundary, &gn, &gnodes));
        for (int64_t j = 0; j < gn; j++) {
            const int64_t i = gnodes[j];
            if (i >= w->nowned) continue; /* summed by the part that owns it */
            double rf[3] = {0, 0, 0};
            for (int c = 0; c < dim; c++) {
                const int64_t d = i * dim + c;
                if (spring)
                    rf[c] = -yk[d];
                else if (sp->mask & (1u << c))
                    rf[c] = s->fixed[d] ? fint[3 * i + c] + (ys ? ys[d] : 0.0) - s->f_ext[d] : 0;
            }
            const double *x = m->coords + 3 * i;
            const double r[3] = {x[0] - x0[0], x[1] - x0[1], x[2] - x0[2]};
            double *R = out->support_reaction[k], *M = out->support_moment[k];
            for (int c = 0; c < dim; c++)
                R[c] += rf[c];
            M[0] += r[1] * rf[2] - r[2] * rf[1];
            M[1] += r[2] * rf[0] - r[0] * rf[2];
            M[2] += r[0] * rf[1] - r[1] * rf[0];
        }
        free(gnodes);
        gnodes = NULL;
    }
fail:
    free(ud);
    free(ys);
    free(yk);
    free(gnodes);
    return ierr;
}

int hk_postproc(const hk_problem *p, const hk_system *s, const double *u, hk_fields *out)
{
    return hk_postproc_part(p, s, u, p && p->mesh ? p->mesh->nnodes : 0, out);
}

int hk_postproc_part(const hk_problem *p, const hk_system *s, const double *u, int64_t nowned,
                     hk_fields *out)
{
    hk_pp_work w;
    HK_CALL(hk_pp_prepare(p, s, u, out, &w));
    w.nowned = nowned < w.nowned ? nowned : w.nowned;
    const hk_mesh *m = p->mesh;
    const int64_t nn = m->nnodes, ne = m->cells.n;
    int ierr = 0;
    double *count = NULL, *fint = w.fint;
    hk_rec_elem *buf = NULL;
    HK_TRY(hk_calloc((size_t)nn, sizeof(double), &count));

    /* elements in chunks: computed in parallel, then summed into their nodes. Each thread
     * adds only the nodes it owns (blocks of 16 nodes dealt out by node_owner), scanning the
     * chunk's elements in order, so every node's sums are taken in element order whatever the
     * thread count, and the node arrays are first touched by the threads that fill them. Two
     * buffers: the threads sum chunk k from one while the first done compute chunk k + 1 into
     * the other, one barrier a chunk. */
    enum { CHUNK = 2048 };
    HK_TRY(hk_malloc(2 * CHUNK * sizeof(hk_rec_elem), &buf));
    int64_t bad = ne; /* the first element with a non-positive Jacobian */
#pragma omp parallel reduction(min : bad)
    {
        const unsigned nthreads = (unsigned)omp_get_num_threads();
        const unsigned me = (unsigned)omp_get_thread_num();
        for (int64_t e0 = 0; e0 < ne; e0 += CHUNK) {
            const int64_t e1 = e0 + CHUNK < ne ? e0 + CHUNK : ne;
            hk_rec_elem *cb = buf + (e0 / CHUNK % 2) * CHUNK;
#pragma omp for schedule(static)
            for (int64_t e = e0; e < e1; e++) {
                hk_rec_elem *o = &cb[e - e0];
                if (element(p, &w, out->u, e, o)) {
                    if (e < bad) bad = e;
                    continue;
                }
                for (int k = 0; k < 6; k++)
                    out->cell_stress[6 * e + k] = o->cell_sig[k];
                out->cell_von_mises[e] = hk_rec_von_mises(o->cell_sig);
            }
            for (int64_t e = e0; e < e1; e++) {
                const hk_rec_elem *o = &cb[e - e0];
                if (o->err) continue; /* reported below */
                const int32_t *nodes = m->cells.nodes + m->cells.ptr[e];
                const int nen = (int)(m->cells.ptr[e + 1] - m->cells.ptr[e]);
                for (int a = 0; a < nen; a++) {
                    const int64_t g = nodes[a];
                    if (node_owner(g, nthreads) != me) continue;
                    for (int k = 0; k < 6; k++) {
                        out->strain[6 * g + k] += o->eps[a][k];
                        out->stress[6 * g + k] += o->sig[a][k];
                    }
                    for (int k = 0; k < 3; k++)
                        fint[3 * g + k] += o->fint[a][k];
                    count[g] += 1;
                }
            }
        }
    }
    if (bad < ne) HK_TRY(hk_pp_element_error(p, &w, out, bad));

    /* nodal averages and invariants, node by node on every thread */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++)
        hk_rec_node_finish(count[i], out->strain + 6 * i, out->stress + 6 * i, &out->von_mises[i],
                           out->principal + 3 * i);
    HK_TRY(hk_pp_finish(p, s, &w, out));
fail:
    free(count);
    free(buf);
    hk_pp_work_free(&w);
    if (ierr) hk_fields_free(out);
    return ierr;
}
