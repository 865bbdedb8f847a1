/* hk_mesh_refine: uniform refinement of a linear mesh, in parallel and the same on any number
 * of threads.
 *
 * Each level raises the mesh to its complete quadratic types (hk_mesh_elevate: one node per
 * edge, per quadrilateral face and per hexahedron, numbered by their sorted corners, those on
 * model curves and surfaces moved onto them) and splits every quadratic element into linear
 * children on its nodes: line 1 -> 2, triangle and quadrilateral 1 -> 4, hexahedron and prism
 * 1 -> 8 (the corner homotheties, plus the two central prisms), tetrahedron 1 -> 8 (the four
 * corner tetrahedra and the inner octahedron cut along its shortest diagonal, which keeps the
 * children's shapes within a bounded number of classes), pyramid -> 6 pyramids + 4 tetrahedra.
 * The children are defined by reference coordinates and oriented like their parent, so a
 * facet's children keep its outward normal. */
#include <omp.h>
#include <stdio.h>

#include "mesh_impl.h"

/* ---- split tables ----------------------------------------------------------------------- */

enum { MAX_CHILD = 10, MAX_VAR = 3 };

typedef struct {
    hk_eltype quad;           /* the complete quadratic type whose nodes the children use */
    int nchild, nvar, nout;   /* children, variants (tetrahedra: 3 diagonals), corners out */
    uint8_t ctype[MAX_CHILD]; /* child types (the same in every variant) */
    int8_t cn[MAX_VAR][MAX_CHILD][8]; /* child corners: local nodes of the quadratic element */
    int8_t diag[MAX_VAR][2];          /* tetrahedra: the octahedron diagonal of each variant */
    int nk[27];                       /* corners under local node i (1 corner, 2, 4, 8) */
    int8_t kc[27][8];                 /* those corners */
} split_tab;

/* The linear type whose children a complete quadratic type carries (HK_EL_COUNT: none). */
static hk_eltype linear_of(hk_eltype q)
{
    switch (q) {
    case HK_EL_POINT1:
        return HK_EL_POINT1;
    case HK_EL_LINE3:
        return HK_EL_LINE2;
    case HK_EL_TRI6:
        return HK_EL_TRI3;
    case HK_EL_QUAD9:
        return HK_EL_QUAD4;
    case HK_EL_TET10:
        return HK_EL_TET4;
    case HK_EL_HEX27:
        return HK_EL_HEX8;
    case HK_EL_WEDGE18:
        return HK_EL_WEDGE6;
    case HK_EL_PYR14:
        return HK_EL_PYR5;
    default:
        return HK_EL_COUNT;
    }
}

static double det_dim(double J[3][3], int d)
{
    if (d == 1) return J[0][0];
    if (d == 2) return J[0][0] * J[1][1] - J[0][1] * J[1][0];
    return J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
           J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
           J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
}

/* The local node of quadratic type q at reference point p, -1 if none. */
static int node_at(hk_eltype q, const double *p)
{
    const double *rc = hk_eltype_ref_coords(q);
    for (int i = 0; i < hk_eltype_get(q)->nnodes; i++)
        if (fabs(rc[3 * i] - p[0]) + fabs(rc[3 * i + 1] - p[1]) + fabs(rc[3 * i + 2] - p[2]) <
            1e-12)
            return i;
    return -1;
}

/* Append child type ct with corners at reference points pts to variant v, oriented as the
 * parent (a positive Jacobian in the parent's reference space). */
static int add_child(split_tab *s, int v, int k, hk_eltype ct, const double (*pts)[3])
{
    const int nc = hk_eltype_ncorners(ct), d = hk_eltype_get(ct)->dim;
    double xc[24], r[3], x[3], J[3][3];
    int loc[8], perm[27];
    for (int a = 0; a < nc; a++) {
        loc[a] = node_at(s->quad, pts[a]);
        HK_CHECK(loc[a] >= 0, HK_ERR_INTERNAL, "refine: a child of %s has a corner off its nodes",
                 hk_eltype_get(s->quad)->name);
        memcpy(xc + 3 * a, pts[a], sizeof pts[a]);
    }
    hk_eltype_centroid(ct, r);
    hk_mesh_linear_map(ct, xc, r, x, J);
    double det = d ? det_dim(J, d) : 1;
    HK_CHECK(det != 0, HK_ERR_INTERNAL, "refine: a child of %s is flat",
             hk_eltype_get(s->quad)->name);
    if (det < 0) {
        int tmp[8];
        HK_CALL(hk_eltype_flip_perm(ct, perm));
        for (int a = 0; a < nc; a++)
            tmp[a] = loc[perm[a]];
        memcpy(loc, tmp, sizeof tmp);
    }
    s->ctype[k] = (uint8_t)ct;
    for (int a = 0; a < nc; a++)
        s->cn[v][k][a] = (int8_t)loc[a];
    return 0;
}

static void midpoint(const double *a, const double *b, double *m)
{
    for (int d = 0; d < 3; d++)
        m[d] = 0.5 * (a[d] + b[d]);
}

static int build_split(hk_eltype lin, split_tab *s)
{
    memset(s, 0, sizeof *s);
    s->quad = hk_eltype_quadratic(lin, 0);
    if (s->quad == HK_EL_COUNT) return 0;
    const int nc = hk_eltype_ncorners(lin), nn = hk_eltype_get(s->quad)->nnodes;
    const double *rc = hk_eltype_ref_coords(s->quad);
    for (int i = 0; i < nn; i++)
        s->nk[i] = hk_eltype_node_corners(s->quad, i, s->kc[i]);
    s->nvar = 1;
    if (lin == HK_EL_POINT1) {
        s->nchild = 1, s->nout = 1;
        s->ctype[0] = HK_EL_POINT1;
        return 0;
    }
    double pts[8][3];
    int k = 0;
    /* the corner homotheties (a pyramid's apex included): corner j of child i at the
     * midpoint of corners i and j */
    for (int i = 0; i < nc; i++) {
        for (int j = 0; j < nc; j++)
            midpoint(rc + 3 * i, rc + 3 * j, pts[j]);
        HK_CALL(add_child(s, 0, k++, lin, (const double(*)[3])pts));
    }
    if (lin == HK_EL_TRI3) {
        for (int j = 0; j < 3; j++)
            midpoint(rc + 3 * j, rc + 3 * ((j + 1) % 3), pts[j]);
        HK_CALL(add_child(s, 0, k++, HK_EL_TRI3, (const double(*)[3])pts));
    } else if (lin == HK_EL_WEDGE6) {
        /* the central prisms of the lower and upper halves: the middle triangle of the
         * bottom, of the mid-plane and of the top */
        for (int half = 0; half < 2; half++) {
            for (int j = 0; j < 3; j++) {
                const int a = j, b = (j + 1) % 3;
                double lo[3], hi[3];
                midpoint(rc + 3 * a, rc + 3 * b, lo);             /* bottom edge */
                midpoint(rc + 3 * (a + 3), rc + 3 * (b + 3), hi); /* top edge */
                double mid[3];
                midpoint(lo, hi, mid);
                memcpy(pts[j], half ? mid : lo, sizeof mid);
                memcpy(pts[j + 3], half ? hi : mid, sizeof mid);
            }
            HK_CALL(add_child(s, 0, k++, HK_EL_WEDGE6, (const double(*)[3])pts));
        }
    } else if (lin == HK_EL_PYR5) {
        /* the upside-down pyramid under the apex child: its base the lateral edges'
         * midpoints, its apex the base centre; then a tetrahedron under each base edge */
        double centre[3] = {0, 0, 0}, lat[4][3];
        for (int j = 0; j < 4; j++)
            midpoint(rc + 3 * j, rc + 3 * 4, lat[j]);
        for (int j = 0; j < 4; j++)
            memcpy(pts[j], lat[j], sizeof lat[j]);
        memcpy(pts[4], centre, sizeof centre);
        HK_CALL(add_child(s, 0, k++, HK_EL_PYR5, (const double(*)[3])pts));
        for (int j = 0; j < 4; j++) {
            midpoint(rc + 3 * j, rc + 3 * ((j + 1) % 4), pts[0]);
            memcpy(pts[1], centre, sizeof centre);
            memcpy(pts[2], lat[j], sizeof lat[j]);
            memcpy(pts[3], lat[(j + 1) % 4], sizeof lat[j]);
            HK_CALL(add_child(s, 0, k++, HK_EL_TET4, (const double(*)[3])pts));
        }
    } else if (lin == HK_EL_TET4) {
        /* the octahedron of the six edge midpoints, cut along one of its three diagonals
         * (the midpoints of opposite edges) into four tetrahedra around it */
        static const int opp[3][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}, {0, 3, 1, 2}};
        const int base = k;
        s->nvar = 3;
        for (int v = 0; v < 3; v++) {
            double A[3], B[3], eq[4][3];
            midpoint(rc + 3 * opp[v][0], rc + 3 * opp[v][1], A);
            midpoint(rc + 3 * opp[v][2], rc + 3 * opp[v][3], B);
            s->diag[v][0] = (int8_t)node_at(s->quad, A);
            s->diag[v][1] = (int8_t)node_at(s->quad, B);
            /* the equator, in cycle order: consecutive edges share a corner */
            const int a = opp[v][0], b = opp[v][1], c = opp[v][2], d = opp[v][3];
            const int ring[4][2] = {{a, c}, {c, b}, {b, d}, {d, a}};
            for (int j = 0; j < 4; j++)
                midpoint(rc + 3 * ring[j][0], rc + 3 * ring[j][1], eq[j]);
            for (int j = 0; j < 4; j++) {
                memcpy(pts[0], A, sizeof A);
                memcpy(pts[1], B, sizeof B);
                memcpy(pts[2], eq[j], sizeof A);
                memcpy(pts[3], eq[(j + 1) % 4], sizeof A);
                HK_CALL(add_child(s, v, base + j, HK_EL_TET4, (const double(*)[3])pts));
            }
            /* the corner children are the same in every variant */
            if (v) memcpy(s->cn[v], s->cn[0], (size_t)base * sizeof s->cn[0][0]);
        }
        k = base + 4;
    }
    s->nchild = k;
    for (int c = 0; c < k; c++)
        s->nout += hk_eltype_ncorners((hk_eltype)s->ctype[c]);
    return 0;
}

static const split_tab *split_tables(void)
{
    static split_tab tab[HK_EL_COUNT];
    static int ready = 0;
    int ok = 1;
#pragma omp critical(hk_refine_tables)
    if (!ready) {
        for (int t = 0; t < HK_EL_COUNT && ok; t++)
            ok = !build_split((hk_eltype)t, &tab[t]);
        ready = ok;
    }
    return ok ? tab : NULL;
}

/* ---- splitting ---------------------------------------------------------------------------- */

static double dist2(const double *x, int64_t a, int64_t b)
{
    double s = 0;
    for (int d = 0; d < 3; d++)
        s += (x[3 * a + d] - x[3 * b + d]) * (x[3 * a + d] - x[3 * b + d]);
    return s;
}

/* The variant of quadratic element e: for a tetrahedron the shortest diagonal of its
 * octahedron (the first of equal ones), else 0. */
static int variant(const split_tab *s, const int32_t *nd, const double *x)
{
    int best = 0;
    double lb = INFINITY;
    for (int v = 0; v < s->nvar; v++) {
        double l = dist2(x, nd[s->diag[v][0]], nd[s->diag[v][1]]);
        if (l < lb) lb = l, best = v;
    }
    return best;
}

/* Quadratic elements q (complete types) split into their linear children: out->type, ptr,
 * nodes, tag (1-based child numbers); first[e] is the first child of element e (q->n + 1
 * entries, may be NULL). */
static int split_elems(const hk_elems *q, const split_tab *tab, const double *x, hk_elems *out,
                       int64_t **first_out)
{
    int ierr = 0;
    int64_t *first = NULL, *nptr = NULL;
    memset(out, 0, sizeof *out);
    HK_TRY(hk_malloc((size_t)(q->n + 1) * sizeof *first, &first));
    HK_TRY(hk_malloc((size_t)(q->n + 1) * sizeof *nptr, &nptr));
    first[0] = nptr[0] = 0;
    int64_t bad = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t e = 0; e < q->n; e++) {
        const hk_eltype lin = linear_of((hk_eltype)q->type[e]);
        if (lin == HK_EL_COUNT) {
            bad = e < bad ? e : bad;
            first[e + 1] = nptr[e + 1] = 0;
            continue;
        }
        first[e + 1] = tab[lin].nchild;
        nptr[e + 1] = tab[lin].nout;
    }
    HK_TRY_CHECK(bad == INT64_MAX, HK_ERR_INTERNAL,
                 "refine: element %lld is a %s, not a complete quadratic type",
                 (long long)q->tag[bad], hk_eltype_get((hk_eltype)q->type[bad])->name);
    hk_prefix_sum(first, q->n);
    hk_prefix_sum(nptr, q->n);
    const int64_t nch = first[q->n], nout = nptr[q->n];
    HK_TRY_CHECK(nout < INT64_MAX / 8, HK_ERR_UNSUPPORTED, "refine: too many elements");
    out->n = nch;
    HK_TRY(hk_malloc((size_t)(nch ? nch : 1), &out->type));
    HK_TRY(hk_malloc((size_t)(nch + 1) * sizeof *out->ptr, &out->ptr));
    HK_TRY(hk_malloc((size_t)(nch ? nch : 1) * sizeof *out->tag, &out->tag));
    HK_TRY(hk_malloc((size_t)(nout ? nout : 1) * sizeof *out->nodes, &out->nodes));
    out->ptr[0] = 0;
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < q->n; e++) {
        const split_tab *s = &tab[linear_of((hk_eltype)q->type[e])];
        const int32_t *nd = q->nodes + q->ptr[e];
        const int v = variant(s, nd, x);
        int64_t c = first[e], w = nptr[e];
        for (int k = 0; k < s->nchild; k++, c++) {
            const int ncc = hk_eltype_ncorners((hk_eltype)s->ctype[k]);
            out->type[c] = s->ctype[k];
            out->tag[c] = c + 1;
            for (int a = 0; a < ncc; a++)
                out->nodes[w + a] = nd[s->cn[v][k][a]];
            w += ncc;
            out->ptr[c + 1] = w;
        }
    }
fail:
    free(nptr);
    if (ierr) {
        hk_elems_free(out);
        free(first);
        first = NULL;
    }
    if (first_out)
        *first_out = first;
    else
        free(first);
    return ierr;
}

/* Put the higher-order nodes of quadratic cell e back at the mean of their corners. */
static void straighten(const split_tab *tab, const hk_elems *q, int64_t e, double *x)
{
    const split_tab *s = &tab[linear_of((hk_eltype)q->type[e])];
    const int32_t *nd = q->nodes + q->ptr[e];
    const int nn = hk_eltype_get((hk_eltype)q->type[e])->nnodes;
    for (int i = hk_eltype_ncorners((hk_eltype)q->type[e]); i < nn; i++) {
        double p[3] = {0, 0, 0};
        for (int a = 0; a < s->nk[i]; a++)
            for (int d = 0; d < 3; d++)
                p[d] += x[3 * (int64_t)nd[s->kc[i][a]] + d];
        for (int d = 0; d < 3; d++)
            x[3 * (int64_t)nd[i] + d] = p[d] / s->nk[i];
    }
}

/* ---- quality ------------------------------------------------------------------------------ */

/* The scaled Jacobian at each measured corner: the determinant of its edge vectors over the
 * product of their lengths, divided by the ideal shape's value (equilateral triangle, square,
 * regular tetrahedron, cube, right prism on an equilateral triangle, pyramid with equilateral
 * sides), so 1 is ideal and 0 or less a flat or inverted corner. */
typedef struct {
    int nc; /* corners measured (a pyramid's apex, with four edges, is not) */
    int8_t corner[8];
    int8_t nb[8][3]; /* each one's edge neighbours, in positive order */
    double ideal;
} qual_tab;

static const qual_tab *quality_tables(void)
{
    static qual_tab tab[HK_EL_COUNT];
    static int ready = 0;
    const split_tab *st = split_tables();
    if (!st) return NULL;
#pragma omp critical(hk_quality_tables)
    if (!ready) {
        static const double ideal[HK_EL_COUNT] = {
            [HK_EL_TRI3] = 0.86602540378443865,   [HK_EL_QUAD4] = 1,
            [HK_EL_TET4] = 0.70710678118654752,   [HK_EL_HEX8] = 1,
            [HK_EL_WEDGE6] = 0.86602540378443865, [HK_EL_PYR5] = 0.70710678118654752};
        for (int t = 0; t < HK_EL_COUNT; t++) {
            if (!ideal[t]) continue;
            const split_tab *s = &st[t];
            qual_tab *qt = &tab[t];
            const int d = hk_eltype_get((hk_eltype)t)->dim;
            const int nc = hk_eltype_ncorners((hk_eltype)t), nn = hk_eltype_get(s->quad)->nnodes;
            const double *rc = hk_eltype_ref_coords(s->quad);
            qt->ideal = ideal[t];
            for (int i = 0; i < nc; i++) {
                int nb[4], k = 0;
                for (int j = nc; j < nn; j++)
                    if (s->nk[j] == 2 && (s->kc[j][0] == i || s->kc[j][1] == i) && k < 4)
                        nb[k++] = s->kc[j][0] == i ? s->kc[j][1] : s->kc[j][0];
                if (k != d) continue;
                double J[3][3] = {{0}};
                for (int a = 0; a < d; a++)
                    for (int r = 0; r < 3; r++)
                        J[r][a] = rc[3 * nb[a] + r] - rc[3 * i + r];
                if (det_dim(J, d) < 0) {
                    int tmp = nb[0];
                    nb[0] = nb[1], nb[1] = tmp;
                }
                qt->corner[qt->nc] = (int8_t)i;
                for (int a = 0; a < d; a++)
                    qt->nb[qt->nc][a] = (int8_t)nb[a];
                qt->nc++;
            }
        }
        ready = 1;
    }
    return tab;
}

/* The shape measure of cell e (its corners; 2D cells in the xy plane). */
static double cell_quality(const qual_tab *tab, const hk_elems *c, int64_t e, const double *x,
                           int dim)
{
    const hk_eltype t = (hk_eltype)c->type[e];
    static const hk_eltype lin[HK_EL_COUNT] = {
        [HK_EL_TRI3] = HK_EL_TRI3,      [HK_EL_TRI6] = HK_EL_TRI3,
        [HK_EL_QUAD4] = HK_EL_QUAD4,    [HK_EL_QUAD8] = HK_EL_QUAD4,
        [HK_EL_QUAD9] = HK_EL_QUAD4,    [HK_EL_TET4] = HK_EL_TET4,
        [HK_EL_TET10] = HK_EL_TET4,     [HK_EL_HEX8] = HK_EL_HEX8,
        [HK_EL_HEX20] = HK_EL_HEX8,     [HK_EL_HEX27] = HK_EL_HEX8,
        [HK_EL_WEDGE6] = HK_EL_WEDGE6,  [HK_EL_WEDGE15] = HK_EL_WEDGE6,
        [HK_EL_WEDGE18] = HK_EL_WEDGE6, [HK_EL_PYR5] = HK_EL_PYR5,
        [HK_EL_PYR13] = HK_EL_PYR5,     [HK_EL_PYR14] = HK_EL_PYR5};
    const qual_tab *qt = &tab[lin[t]];
    const int32_t *nd = c->nodes + c->ptr[e];
    const int d = hk_eltype_get(t)->dim;
    double worst = INFINITY;
    if (!qt->nc || d != dim) return NAN;
    if (lin[t] == HK_EL_TET4) {
        /* every corner's determinant is 6 V: only the edge lengths differ */
        static const int edge[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
        static const int at[4][3] = {{0, 1, 2}, {0, 3, 4}, {1, 3, 5}, {2, 4, 5}};
        double v[6][3], l2[6], J[3][3];
        for (int k = 0; k < 6; k++) {
            const double *a = x + 3 * (int64_t)nd[edge[k][0]], *b = x + 3 * (int64_t)nd[edge[k][1]];
            for (int r = 0; r < 3; r++)
                v[k][r] = b[r] - a[r];
            l2[k] = v[k][0] * v[k][0] + v[k][1] * v[k][1] + v[k][2] * v[k][2];
        }
        for (int r = 0; r < 3; r++)
            for (int a = 0; a < 3; a++)
                J[r][a] = v[a][r];
        double p2 = 0; /* the largest product of a corner's squared edge lengths */
        for (int k = 0; k < 4; k++)
            p2 = fmax(p2, l2[at[k][0]] * l2[at[k][1]] * l2[at[k][2]]);
        return p2 > 0 ? det_dim(J, 3) / sqrt(p2) / qt->ideal : 0;
    }
    for (int k = 0; k < qt->nc; k++) {
        double J[3][3] = {{0}}, len = 1;
        const double *x0 = x + 3 * (int64_t)nd[qt->corner[k]];
        for (int a = 0; a < d; a++) {
            const double *xa = x + 3 * (int64_t)nd[qt->nb[k][a]];
            double l2 = 0;
            for (int r = 0; r < 3; r++) {
                J[r][a] = xa[r] - x0[r];
                l2 += J[r][a] * J[r][a];
            }
            len *= sqrt(l2);
        }
        double q = len > 0 ? det_dim(J, d) / len : 0;
        worst = fmin(worst, q / qt->ideal);
    }
    return worst;
}

int hk_mesh_measure_quality(const hk_mesh *m, hk_mesh_quality *q)
{
    HK_CHECK(m, HK_ERR_ARG, "hk_mesh_measure_quality: NULL argument");
    return hk_mesh_measure_quality_of(m, NULL, m->cells.n, q);
}

int hk_mesh_measure_quality_of(const hk_mesh *m, const int64_t *cells, int64_t n,
                               hk_mesh_quality *q)
{
    HK_CHECK(m && q, HK_ERR_ARG, "hk_mesh_measure_quality: NULL argument");
    const qual_tab *tab = quality_tables();
    HK_CHECK(tab, HK_ERR_INTERNAL, "hk_mesh_measure_quality: %s", hk_error_message());
    memset(q, 0, sizeof *q);
    /* fixed chunks of the list summed in order: the same mean on any number of threads, and
     * a list's the same as a mesh of its cells would give */
    enum { NCHUNK = 256 };
    double cmin[NCHUNK], csum[NCHUNK];
    int64_t ccnt[NCHUNK];
#pragma omp parallel for schedule(static)
    for (int k = 0; k < NCHUNK; k++) {
        double lo = INFINITY, sum = 0;
        int64_t cnt = 0;
        for (int64_t i = n * k / NCHUNK; i < n * (k + 1) / NCHUNK; i++) {
            double v = cell_quality(tab, &m->cells, cells ? cells[i] : i, m->coords, m->dim);
            if (isnan(v)) continue;
            lo = fmin(lo, v), sum += v, cnt++;
        }
        cmin[k] = lo, csum[k] = sum, ccnt[k] = cnt;
    }
    double lo = INFINITY, sum = 0;
    for (int k = 0; k < NCHUNK; k++)
        lo = fmin(lo, cmin[k]), sum += csum[k], q->cells += ccnt[k];
    q->min = q->cells ? lo : 0;
    q->mean = q->cells ? sum / (double)q->cells : 0;
    return 0;
}

int hk_mesh_grid_quality(int dim, const double *size, const int *cells, hk_eltype t,
                         hk_mesh_quality *q)
{
    /* every cell of the grid holds the elements of the first one (mesh.c's cell_table),
     * translated: one cell of the same size measures them all, without a pass over the whole
     * grid's cells */
    HK_CHECK(size && cells && q && (dim == 2 || dim == 3), HK_ERR_ARG,
             "hk_mesh_grid_quality: NULL argument or dimension %d", dim);
    double one[3] = {0, 0, 0};
    int n[3] = {1, 1, 1};
    for (int a = 0; a < dim; a++) {
        HK_CHECK(cells[a] > 0, HK_ERR_ARG, "hk_mesh_grid_quality: %d cells along axis %d",
                 cells[a], a);
        one[a] = size[a] / cells[a];
    }
    hk_mesh m = {0};
    HK_CALL(hk_mesh_grid_slab(dim, one, n, t, 0, 0, 1, &m));
    const int ierr = hk_mesh_measure_quality(&m, q);
    hk_mesh_free(&m);
    return ierr;
}

/* ---- refinement ----------------------------------------------------------------------------- */

static int refinable(hk_eltype t, int cell)
{
    switch (t) {
    case HK_EL_TRI3:
    case HK_EL_QUAD4:
        return 1;
    case HK_EL_TET4:
    case HK_EL_HEX8:
    case HK_EL_WEDGE6:
    case HK_EL_PYR5:
        return cell;
    case HK_EL_POINT1:
    case HK_EL_LINE2:
        return !cell;
    default:
        return 0;
    }
}

/* Bytes of the arrays of a set of elements. */
static double elems_bytes(const hk_elems *e)
{
    return e->n ? (double)e->n * (1 + 2 * sizeof(int64_t)) + (double)e->ptr[e->n] * sizeof(int32_t)
                : 0;
}

/* The orientation of child c: hk_elem_jacobian_sign, with the tetrahedra's (most children)
 * determinant written out. */
static double child_sign(const hk_elems *ch, int64_t c, const double *x, int dim)
{
    if (ch->type[c] != HK_EL_TET4) return hk_elem_jacobian_sign(ch, c, x, dim);
    const int32_t *nd = ch->nodes + ch->ptr[c];
    const double *x0 = x + 3 * (int64_t)nd[0];
    double J[3][3];
    for (int a = 0; a < 3; a++)
        for (int r = 0; r < 3; r++)
            J[r][a] = x[3 * (int64_t)nd[a + 1] + r] - x0[r];
    return det_dim(J, 3);
}

/* Split the quadratic cells of m into their children, straightening the higher-order nodes
 * of a cell where a child would be inverted (a node projected onto a strongly curved
 * surface); the regions and the coarse ancestors follow (a cell's children take its place,
 * in order: a first level's parent is the ancestor). */
static int split_cells(hk_mesh *m, const split_tab *tab, const hk_elev_geom *g,
                       int64_t *straightened)
{
    int ierr = 0;
    hk_elems ch;
    int64_t *first = NULL;
    int32_t *reg = NULL, *anc = NULL;
    uint8_t *done = NULL, *bad = NULL, *curved = NULL;
    const hk_elems *q = &m->cells;
    memset(&ch, 0, sizeof ch);
    HK_TRY(hk_calloc((size_t)(q->n ? q->n : 1), 1, &done));
    HK_TRY(hk_calloc((size_t)(q->n ? q->n : 1), 1, &bad));
    /* Only cells with a node on a curved entity (moved by the projection) can have inverted
     * children: the others' children are their parent's map restricted to a part of the
     * reference element (affine, trilinear, prism), valid where it is; pyramids are checked
     * too, their rational map does not restrict so. */
    HK_TRY(hk_calloc((size_t)m->nnodes + 1, 1, &curved));
    for (int k = 0; g && k < g->n; k++) {
        const hk_elems *f = &g->ent[k].elems;
        for (int64_t i = 0; !g->ent[k].flat && f->n && i < f->ptr[f->n]; i++)
            if (f->nodes[i] >= 0) curved[f->nodes[i]] = 1;
    }
    for (;;) {
        HK_TRY(split_elems(q, tab, m->coords, &ch, &first));
        int64_t nbad = 0;
#pragma omp parallel for schedule(static) reduction(+ : nbad)
        for (int64_t e = 0; e < q->n; e++) {
            bad[e] = 0;
            if (done[e]) continue;
            int check = q->type[e] == HK_EL_PYR14;
            for (int64_t k = q->ptr[e]; k < q->ptr[e + 1] && !check; k++)
                check = curved[q->nodes[k]];
            for (int64_t c = first[e]; check && c < first[e + 1] && !bad[e]; c++)
                bad[e] = !(child_sign(&ch, c, m->coords, m->dim) > 0);
            nbad += bad[e];
        }
        if (!nbad) break;
        for (int64_t e = 0; e < q->n; e++)
            if (bad[e]) {
                straighten(tab, q, e, m->coords);
                done[e] = 1;
                (*straightened)++;
            }
        hk_elems_free(&ch);
        free(first);
        first = NULL;
    }
    HK_TRY(hk_malloc((size_t)(ch.n ? ch.n : 1) * sizeof *reg, &reg));
    HK_TRY(hk_malloc((size_t)(ch.n ? ch.n : 1) * sizeof *anc, &anc));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < q->n; e++)
        for (int64_t c = first[e]; c < first[e + 1]; c++) {
            reg[c] = m->cell_region ? m->cell_region[e] : 0;
            anc[c] = m->cell_coarse ? m->cell_coarse[e] : (int32_t)e;
        }
    hk_elems_free(&m->cells);
    m->cells = ch;
    memset(&ch, 0, sizeof ch);
    free(m->cell_region);
    m->cell_region = reg;
    reg = NULL;
    free(m->cell_coarse);
    m->cell_coarse = anc;
    anc = NULL;
fail:
    hk_elems_free(&ch);
    free(first);
    free(reg);
    free(anc);
    free(done);
    free(bad);
    free(curved);
    return ierr;
}

/* The coarse mesh is small, so this costs little; the finer levels read nodes at random
 * through their cells, and a scrambled numbering makes that about 1.7 times slower (a
 * 750k-tetrahedron box raised to order 2 on one thread). */
int hk_mesh_localize(hk_mesh *m, const hk_elev_geom *g)
{
    int ierr = 0;
    int32_t *newid = NULL, *reg = NULL, *anc = NULL;
    int64_t *cnt = NULL, *perm = NULL;
    hk_elems q;
    memset(&q, 0, sizeof q);
    const hk_elems *c = &m->cells;
    HK_TRY(hk_mesh_rcm_order(m, &newid));
    if (!newid) goto fail;
    HK_TRY(hk_mesh_permute_nodes(m, newid));
    for (int k = 0; g && k < g->n; k++) {
        hk_elems *f = &g->ent[k].elems;
        for (int64_t i = 0; f->n && i < f->ptr[f->n]; i++)
            if (f->nodes[i] >= 0) f->nodes[i] = newid[f->nodes[i]];
    }
    /* cells by their smallest node (a counting sort: stable, the same on any thread count) */
    HK_TRY(hk_calloc((size_t)m->nnodes + 1, sizeof *cnt, &cnt));
    HK_TRY(hk_malloc((size_t)(c->n ? c->n : 1) * sizeof *perm, &perm));
    for (int64_t e = 0; e < c->n; e++) {
        int32_t lo = INT32_MAX;
        for (int64_t k = c->ptr[e]; k < c->ptr[e + 1]; k++)
            lo = c->nodes[k] < lo ? c->nodes[k] : lo;
        perm[e] = lo;
        cnt[lo + 1]++;
    }
    for (int64_t i = 0; i < m->nnodes; i++)
        cnt[i + 1] += cnt[i];
    for (int64_t e = 0; e < c->n; e++)
        perm[e] = cnt[perm[e]]++; /* the new place of cell e */
    q.n = c->n;
    HK_TRY(hk_malloc((size_t)(c->n ? c->n : 1), &q.type));
    HK_TRY(hk_malloc((size_t)(c->n + 1) * sizeof *q.ptr, &q.ptr));
    HK_TRY(hk_malloc((size_t)(c->n ? c->n : 1) * sizeof *q.tag, &q.tag));
    HK_TRY(hk_malloc((size_t)(c->ptr[c->n] ? c->ptr[c->n] : 1) * sizeof *q.nodes, &q.nodes));
    HK_TRY(hk_malloc((size_t)(c->n ? c->n : 1) * sizeof *reg, &reg));
    if (m->cell_coarse) HK_TRY(hk_malloc((size_t)(c->n ? c->n : 1) * sizeof *anc, &anc));
    q.ptr[0] = 0;
    for (int64_t e = 0; e < c->n; e++)
        q.ptr[perm[e] + 1] = c->ptr[e + 1] - c->ptr[e];
    for (int64_t e = 0; e < c->n; e++)
        q.ptr[e + 1] += q.ptr[e];
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++) {
        const int64_t p = perm[e];
        q.type[p] = c->type[e];
        q.tag[p] = c->tag[e];
        reg[p] = m->cell_region ? m->cell_region[e] : 0;
        if (anc) anc[p] = m->cell_coarse[e];
        memcpy(q.nodes + q.ptr[p], c->nodes + c->ptr[e],
               (size_t)(c->ptr[e + 1] - c->ptr[e]) * sizeof *q.nodes);
    }
    hk_elems_free(&m->cells);
    m->cells = q;
    memset(&q, 0, sizeof q);
    free(m->cell_region);
    m->cell_region = reg;
    reg = NULL;
    if (anc) {
        free(m->cell_coarse);
        m->cell_coarse = anc;
        anc = NULL;
    }
fail:
    free(newid);
    free(reg);
    free(anc);
    free(cnt);
    free(perm);
    hk_elems_free(&q);
    return ierr;
}

/* The cells before the first refinement into m->coarse (a copy; their nodes are the fine
 * mesh's corners, renumbered with it). A mesh refined again keeps its first coarse mesh. */
static int keep_coarse(hk_mesh *m)
{
    const hk_elems *c = &m->cells;
    hk_elems *k = &m->coarse;
    const int64_t nref = c->ptr[c->n];
    hk_elems_free(k);
    k->n = c->n;
    int ierr = hk_malloc((size_t)(c->n ? c->n : 1), &k->type);
    if (!ierr) ierr = hk_malloc((size_t)(c->n + 1) * sizeof *k->ptr, &k->ptr);
    if (!ierr) ierr = hk_malloc((size_t)(nref ? nref : 1) * sizeof *k->nodes, &k->nodes);
    if (!ierr) ierr = hk_malloc((size_t)(c->n ? c->n : 1) * sizeof *k->tag, &k->tag);
    if (ierr) {
        hk_elems_free(k);
        return ierr;
    }
    memcpy(k->type, c->type, (size_t)c->n);
    memcpy(k->ptr, c->ptr, (size_t)(c->n + 1) * sizeof *k->ptr);
    memcpy(k->nodes, c->nodes, (size_t)nref * sizeof *k->nodes);
    for (int64_t e = 0; e < c->n; e++)
        k->tag[e] = c->tag ? c->tag[e] : e + 1;
    return 0;
}

static int refine_levels(hk_mesh *m, int levels, const hk_elev_geom *g, hk_mesh_refine_stats *st,
                         hk_node_key **keys);

int hk_mesh_refine_geom(hk_mesh *m, int levels, const hk_elev_geom *g, hk_mesh_refine_stats *st)
{
    return refine_levels(m, levels, g, st, NULL);
}

int hk_mesh_refine_keyed(hk_mesh *m, int levels, const hk_elev_geom *g, hk_mesh_refine_stats *st,
                         hk_node_key **keys)
{
    return refine_levels(m, levels, g, st, keys);
}

/* keys (may be NULL): each node's key, extended to the new nodes of every level */
static int refine_levels(hk_mesh *m, int levels, const hk_elev_geom *g, hk_mesh_refine_stats *st,
                         hk_node_key **keys)
{
    int ierr = 0;
    hk_mesh_refine_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    HK_CHECK(m && m->coords, HK_ERR_ARG, "hk_mesh_refine: the mesh is NULL or empty");
    HK_CHECK(levels >= 0 && levels <= HK_REFINE_MAX, HK_ERR_OPTION,
             "mesh refinement %d times is not supported; give 0 to %d levels", levels,
             HK_REFINE_MAX);
    const double t0 = omp_get_wtime();
    const split_tab *tab = split_tables();
    HK_CHECK(tab, HK_ERR_INTERNAL, "hk_mesh_refine: %s", hk_error_message());
    for (int64_t e = 0; e < m->cells.n; e++) {
        const hk_eltype t = (hk_eltype)m->cells.type[e];
        HK_CHECK(refinable(t, 1), HK_ERR_UNSUPPORTED,
                 "cell %lld is a %s; mesh refinement takes linear cells (tri3, quad4, tet4, hex8, "
                 "wedge6, pyr5): give a linear mesh and raise the order after refining "
                 "(geometry.order: 2)",
                 (long long)m->cells.tag[e], hk_eltype_get(t)->name);
    }
    for (int b = 0; b < m->nboundaries; b++) {
        const hk_elems *f = &m->boundaries[b].elems;
        for (int64_t e = 0; e < f->n; e++)
            HK_CHECK(refinable((hk_eltype)f->type[e], 0), HK_ERR_UNSUPPORTED,
                     "boundary '%s' has a %s element; mesh refinement takes points, line2, tri3 "
                     "and quad4 boundary elements",
                     m->boundaries[b].name, hk_eltype_get((hk_eltype)f->type[e])->name);
    }
    /* hk_mesh_elevate numbers up to 2^26 cells: the last level's mesh and its raised order */
    const double grow = m->dim == 3 ? 8 : 4, cells = (double)m->cells.n * pow(grow, levels);
    HK_CHECK(cells < (double)(INT32_MAX / 32), HK_ERR_UNSUPPORTED,
             "refining %lld cells %d time%s gives %.3g cells; Hooke refines to fewer than 2^26 "
             "(67M): refine fewer times or mesh coarser (geometry.size)",
             (long long)m->cells.n, levels, levels == 1 ? "" : "s", cells);
    st->levels = levels;
    st->cells_before = m->cells.n, st->nodes_before = m->nnodes;
    if (levels && !m->cell_coarse) HK_CALL(keep_coarse(m));
    HK_CALL(hk_mesh_measure_quality(m, &st->before));
    for (int l = 0; l < levels; l++) {
        hk_elev_geom gl;
        hk_elev_stats es;
        if (g) gl = *g, gl.raise_entities = 1;
        const int64_t nv = m->nnodes;
        HK_TRY(hk_mesh_elevate(m, 0, g ? &gl : NULL, &es));
        if (keys) HK_TRY(hk_node_keys_extend(m, nv, keys));
        st->projected += es.projected;
        st->straight += es.straight + es.too_far + es.failed;
        HK_TRY(split_cells(m, tab, g ? &gl : NULL, &st->straight));
        st->bytes += (double)m->nnodes * 3 * sizeof(double) + elems_bytes(&m->cells) +
                     (double)m->cells.n * sizeof(int32_t);
        for (int b = 0; b < m->nboundaries; b++) {
            hk_elems ch;
            HK_TRY(split_elems(&m->boundaries[b].elems, tab, m->coords, &ch, NULL));
            hk_elems_free(&m->boundaries[b].elems);
            m->boundaries[b].elems = ch;
            st->bytes += elems_bytes(&ch);
        }
        for (int k = 0; g && k < g->n; k++) {
            hk_elems ch;
            HK_TRY(split_elems(&g->ent[k].elems, tab, m->coords, &ch, NULL));
            hk_elems_free(&g->ent[k].elems);
            g->ent[k].elems = ch;
        }
    }
    HK_TRY(hk_mesh_measure_quality(m, &st->after));
    st->seconds = omp_get_wtime() - t0;
fail:
    return ierr;
}

int hk_mesh_refine(hk_mesh *m, int levels, hk_mesh_refine_stats *st)
{
    return hk_mesh_refine_geom(m, levels, NULL, st);
}
