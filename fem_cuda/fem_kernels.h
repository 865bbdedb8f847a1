/* The per-thread work of the device assembly and recovery: plain functions of arrays, compiled
 * as __host__ __device__ in fem_cuda.cu (each a kernel's body, launched one thread per row,
 * element or node) and as host C in fem_emul.c, which runs the same bodies in serial loops so
 * that the CPU tests check the decomposition itself against assembly/ and postproc/.
 *
 * Determinism: every value is summed by one thread in a fixed order (a block row's
 * contributions in cell order, as the host's assembly adds them), never with atomics on
 * floating-point values; the only atomics are on integers (a node's cell count, the first
 * bad element, the union-find of the mesh's parts), whose results do not depend on their
 * order. */
#ifndef HOOKE_FEM_KERNELS_H
#define HOOKE_FEM_KERNELS_H

#include <stdint.h>

#include "element_kernels.h" /* assembly/: element matrices, HK_EL_FN */
#include "elimination.h"     /* assembly/: a row of the symmetric elimination */
#include "recover_kernels.h" /* postproc/: the recovery of one element, invariants */

/* The mesh and its node-to-cell adjacency in device memory. */
typedef struct hk_fem_mesh {
    int dim;
    int64_t nn, ne;
    const double *coords;   /* 3 nn */
    const int64_t *cptr;    /* ne + 1 */
    const int32_t *cnodes;  /* cptr[ne] */
    const uint8_t *ctype;   /* ne */
    const int32_t *cregion; /* ne */
    const hk_elref *refs;   /* HK_EL_COUNT reference elements */
    const double *node_dT;  /* nn, or NULL */
    const int64_t *n2c_ptr; /* nn + 1 */
    const int64_t *n2c_idx; /* cptr[ne]: the cells of each node, increasing */
    const uint8_t *n2c_loc; /* the node's position in each of those cells */
} hk_fem_mesh;

/* What the assembly needs of a region: its law, its uniform temperature change, its body
 * force (body force + rho g) and whether the isotropic fast kernel applies. */
typedef struct hk_fem_region {
    hk_law law;
    double dT;
    double b[3];
    int iso; /* law.isotropic and not axisymmetric */
} hk_fem_region;

/* Layout of an element's record in the geometry buffer (doubles from its start): at the full
 * rule's points the weights w, radii rad (axisymmetric), gradients g[q][a][i] and, for a
 * thermal load, the temperature change dT; for selective integration the reduced rule's
 * weights wr and gradients gr[q][a][i] (axisymmetric: with the hoop term) and dTr, or the
 * mean dilatation V, TV, dv[a * 2 + i]. -1: absent. */
typedef struct hk_fem_layout {
    int w, rad, g, dT, wr, gr, dTr, V, TV, dv, size;
} hk_fem_layout;

HK_EL_FN int hk_fem_selective(const hk_law *L, int t)
{
    return L->selective && t != HK_EL_TRI3 && t != HK_EL_TET4;
}

/* The record of an element of reference r in dimension d; thermal: the element carries a
 * thermal load (f assembled and a temperature change). */
HK_EL_FN hk_fem_layout hk_fem_layout_of(const hk_elref *r, int d, int axi, int sel, int thermal)
{
    hk_fem_layout L;
    const int nq = r->nqp, nqr = r->nqr, nd = r->nnodes * d;
    int k = 0;
    L.w = k, k += nq;
    L.rad = axi ? k : -1, k += axi ? nq : 0;
    L.g = k, k += nq * nd;
    L.dT = thermal ? k : -1, k += thermal ? nq : 0;
    L.wr = L.gr = L.dTr = L.V = L.TV = L.dv = -1;
    if (sel && axi && nqr == 1) {
        L.V = k++;
        L.TV = k++;
        L.dv = k, k += nd;
    } else if (sel) {
        L.wr = k, k += nqr;
        L.gr = k, k += nqr * nd;
        L.dTr = thermal ? k : -1, k += thermal ? nqr : 0;
    }
    L.size = k;
    return L;
}

/* Whether element e of region R carries a thermal load (the host's rule: a region's
 * temperature change or a nodal field). */
HK_EL_FN int hk_fem_thermal(int with_f, const hk_fem_region *R, const double *node_dT)
{
    return with_f && (R->dT != 0 || node_dT);
}

/* ---- node-to-cell adjacency ------------------------------------------------------------- */

/* For the sorting of cells by node: thread k (one per cell node slot) places the slot in its
 * node's list at a position taken by an integer atomic (cursor); the lists are then sorted by
 * slot (hk_fem_n2c_sort), which makes them the same whatever order the atomics ran in. */
typedef struct hk_fem_n2c_args {
    hk_fem_mesh m;
    int64_t *slot_of;         /* cptr[ne]: the slots of each node's list */
    int64_t *cursor;          /* nn: the next free position of each node's list */
    const int64_t *slot_cell; /* cptr[ne]: the cell of each slot */
} hk_fem_n2c_args;

/* Integer atomics: the device's in CUDA's device pass, plain operations on the host (the
 * emulation runs one thread at a time). */
static inline int64_t hk_fem_atomic_add_i64(int64_t *p, int64_t v)
{
    const int64_t old = *p;
    *p += v;
    return old;
}
static inline void hk_fem_atomic_min_i64(int64_t *p, int64_t v)
{
    if (v < *p) *p = v;
}
static inline int32_t hk_fem_cas_i32(int32_t *p, int32_t cmp, int32_t val)
{
    const int32_t old = *p;
    if (old == cmp) *p = val;
    return old;
}
#if defined(__CUDA_ARCH__)
#define HK_FEM_ATOMIC_ADD_I64(p, v)                                                                \
    ((int64_t)atomicAdd((unsigned long long *)(p), (unsigned long long)(v)))
#define HK_FEM_ATOMIC_MIN_I64(p, v) atomicMin((long long *)(p), (long long)(v))
#define HK_FEM_CAS_I32(p, cmp, val) atomicCAS((int *)(p), (int)(cmp), (int)(val))
#else
#define HK_FEM_ATOMIC_ADD_I64(p, v) hk_fem_atomic_add_i64((p), (v))
#define HK_FEM_ATOMIC_MIN_I64(p, v) hk_fem_atomic_min_i64((p), (v))
#define HK_FEM_CAS_I32(p, cmp, val) hk_fem_cas_i32((p), (cmp), (val))
#endif
#ifdef __CUDACC__
#define HK_FEM_VOLATILE volatile /* the union-find reads links other threads write */
#else
#define HK_FEM_VOLATILE
#endif

/* The cell of every slot: thread e writes its cell's slots. */
typedef struct hk_fem_slots_args {
    hk_fem_mesh m;
    int64_t *slot_cell;
} hk_fem_slots_args;

HK_EL_FN void hk_fem_slots_body(int64_t e, const hk_fem_slots_args *a)
{
    for (int64_t k = a->m.cptr[e]; k < a->m.cptr[e + 1]; k++)
        a->slot_cell[k] = e;
}

/* Count the cells of every node (integer atomics). */
typedef struct hk_fem_count_args {
    hk_fem_mesh m;
    int64_t *count; /* nn, zeroed */
} hk_fem_count_args;

HK_EL_FN void hk_fem_count_body(int64_t k, const hk_fem_count_args *a)
{
    HK_FEM_ATOMIC_ADD_I64(&a->count[a->m.cnodes[k]], 1);
}

HK_EL_FN void hk_fem_n2c_place_body(int64_t k, const hk_fem_n2c_args *a)
{
    const int32_t v = a->m.cnodes[k];
    const int64_t pos = HK_FEM_ATOMIC_ADD_I64(&a->cursor[v], 1);
    a->slot_of[a->m.n2c_ptr[v] + pos] = k;
}

/* Node i's list sorted by slot (insertion sort: lists are short), then the cells and the
 * node's positions in them. Slots increase with cells, so the cells come out increasing. */
typedef struct hk_fem_n2c_sort_args {
    hk_fem_mesh m;
    int64_t *slot_of;
    const int64_t *slot_cell;
    int64_t *idx;
    uint8_t *loc;
} hk_fem_n2c_sort_args;

HK_EL_FN void hk_fem_n2c_sort_body(int64_t i, const hk_fem_n2c_sort_args *a)
{
    const int64_t c0 = a->m.n2c_ptr[i], c1 = a->m.n2c_ptr[i + 1];
    int64_t *s = a->slot_of;
    for (int64_t c = c0 + 1; c < c1; c++) {
        const int64_t v = s[c];
        int64_t j = c - 1;
        while (j >= c0 && s[j] > v) {
            s[j + 1] = s[j];
            j--;
        }
        s[j + 1] = v;
    }
    for (int64_t c = c0; c < c1; c++) {
        const int64_t e = a->slot_cell[s[c]];
        a->idx[c] = e;
        a->loc[c] = (uint8_t)(s[c] - a->m.cptr[e]);
    }
}

/* The adjacency of the marked nodes only (the host's boundary loads ask for few nodes): their
 * list lengths (the others 0) into count[i + 1], then, once summed into ptr, their lists. */
typedef struct hk_fem_marked_args {
    hk_fem_mesh m;
    const uint8_t *mask; /* nn */
    int64_t *count;      /* nn + 1 */
    const int64_t *ptr;  /* the summed counts */
    int64_t *idx;
} hk_fem_marked_args;

HK_EL_FN void hk_fem_marked_count_body(int64_t i, const hk_fem_marked_args *a)
{
    a->count[i + 1] = a->mask[i] ? a->m.n2c_ptr[i + 1] - a->m.n2c_ptr[i] : 0;
}

HK_EL_FN void hk_fem_marked_fill_body(int64_t i, const hk_fem_marked_args *a)
{
    const int64_t c0 = a->m.n2c_ptr[i];
    for (int64_t k = a->ptr[i]; k < a->ptr[i + 1]; k++)
        a->idx[k] = a->m.n2c_idx[c0 + k - a->ptr[i]];
}

/* ---- connected parts (the rigid-body check) ---------------------------------------------- */

typedef struct hk_fem_parts_args {
    hk_fem_mesh m;
    int32_t *par; /* nn: a forest whose every link goes to a smaller node */
    int32_t *label;
} hk_fem_parts_args;

HK_EL_FN int32_t hk_fem_root(HK_FEM_VOLATILE int32_t *par, int32_t a)
{
    while (par[a] != a)
        a = par[a];
    return a;
}

/* The root of a, each node on the way linked to its grandparent (path halving: the chains of
 * the joins stay short). A node that is not a root never becomes one again and its ancestors
 * stay its ancestors, so the store may race with other threads' joins and halvings: every
 * link still points to a smaller node of the same part. */
HK_EL_FN int32_t hk_fem_root_halving(HK_FEM_VOLATILE int32_t *par, int32_t a)
{
    for (;;) {
        const int32_t p = par[a];
        if (p == a) return a;
        const int32_t g = par[p];
        if (g != p) par[a] = g;
        a = g;
    }
}

/* Join the trees of a and b: the larger root goes under the smaller one (an integer CAS that
 * retries when another thread moved that root first). Every link points to a smaller node,
 * so a part's root ends as its smallest node, whatever the order of the joins. */
HK_EL_FN void hk_fem_unite(int32_t *par, int32_t a, int32_t b)
{
    for (;;) {
        a = hk_fem_root_halving(par, a);
        b = hk_fem_root_halving(par, b);
        if (a == b) return;
        if (a > b) {
            const int32_t t = a;
            a = b, b = t;
        }
        const int32_t old = HK_FEM_CAS_I32(&par[b], b, a);
        if (old == b) return;
    }
}

HK_EL_FN void hk_fem_parts_init_body(int64_t i, const hk_fem_parts_args *a)
{
    a->par[i] = (int32_t)i;
}

HK_EL_FN void hk_fem_parts_join_body(int64_t e, const hk_fem_parts_args *a)
{
    const int64_t k0 = a->m.cptr[e];
    for (int64_t k = k0 + 1; k < a->m.cptr[e + 1]; k++)
        hk_fem_unite(a->par, a->m.cnodes[k0], a->m.cnodes[k]);
}

HK_EL_FN void hk_fem_parts_label_body(int64_t i, const hk_fem_parts_args *a)
{
    a->label[i] = a->m.n2c_ptr[i + 1] == a->m.n2c_ptr[i] ? -1 : hk_fem_root(a->par, (int32_t)i);
}

/* ---- rows ordered by their number of cells ----------------------------------------------- */

/* order[] lists the nodes by class, class 0 first: the nodes of HK_FEM_ORDER_CLASSES - 1 cells
 * or more, then one cell fewer per class (the last: nodes of no cell). Counts and places by
 * integer atomics, so the order within a class varies from run to run; a row's sums do not
 * depend on when its row is taken, so K does not either. */
#define HK_FEM_ORDER_CLASSES 64

typedef struct hk_fem_order_args {
    const int64_t *n2c_ptr;
    int64_t *start; /* HK_FEM_ORDER_CLASSES: the counts, then the next free place of a class */
    int64_t *order; /* nn */
} hk_fem_order_args;

HK_EL_FN int hk_fem_order_class(const int64_t *n2c_ptr, int64_t i)
{
    const int64_t nc = n2c_ptr[i + 1] - n2c_ptr[i];
    return nc >= HK_FEM_ORDER_CLASSES - 1 ? 0 : (int)(HK_FEM_ORDER_CLASSES - 1 - nc);
}

HK_EL_FN void hk_fem_order_count_body(int64_t i, const hk_fem_order_args *a)
{
    HK_FEM_ATOMIC_ADD_I64(&a->start[hk_fem_order_class(a->n2c_ptr, i)], 1);
}

HK_EL_FN void hk_fem_order_place_body(int64_t i, const hk_fem_order_args *a)
{
    a->order[HK_FEM_ATOMIC_ADD_I64(&a->start[hk_fem_order_class(a->n2c_ptr, i)], 1)] = i;
}

/* The node coordinates for the solver's near-null space: dim per node (the mesh keeps 3). */
typedef struct hk_fem_coords_args {
    const double *coords; /* 3 * nn */
    double *out;          /* dim * nn */
    int dim;
} hk_fem_coords_args;

HK_EL_FN void hk_fem_coords_body(int64_t i, const hk_fem_coords_args *a)
{
    for (int d = 0; d < a->dim; d++)
        a->out[i * a->dim + d] = a->coords[3 * i + d];
}

/* Row k of a kernel over rows: order[k], or k itself without an order. */
HK_EL_FN int64_t hk_fem_row_at(const int64_t *order, int64_t k)
{
    return order ? order[k] : k;
}

/* ---- the block CSR pattern --------------------------------------------------------------- */

/* Each cell's nodes sorted ascending (the rows' sorted lists are merged from these). */
typedef struct hk_fem_sortcells_args {
    hk_fem_mesh m;
    int32_t *snodes; /* cptr[ne] */
} hk_fem_sortcells_args;

HK_EL_FN void hk_fem_sortcells_body(int64_t e, const hk_fem_sortcells_args *a)
{
    const int64_t k0 = a->m.cptr[e], k1 = a->m.cptr[e + 1];
    for (int64_t k = k0; k < k1; k++) {
        const int32_t v = a->m.cnodes[k];
        int64_t j = k - 1;
        while (j >= k0 && a->snodes[j] > v) {
            a->snodes[j + 1] = a->snodes[j];
            j--;
        }
        a->snodes[j + 1] = v;
    }
}

#define HK_FEM_MERGE 48 /* a row merges up to this many cells' lists at once */

/* Block row i: the nodes of its cells (and i itself), sorted, each once. A k-way merge of the
 * cells' sorted lists; a node of more cells than HK_FEM_MERGE takes the smallest node above
 * the last one found, cell after cell, instead. out: the row's column indices (NULL: count
 * only). Returns the row's length. */
typedef struct hk_fem_row_args {
    hk_fem_mesh m;
    const int32_t *snodes;
    int64_t *count;        /* nn + 1: the row lengths at [i + 1] (the count pass) */
    const int64_t *rowptr; /* the fill pass */
    int32_t *colind;
    const int64_t *order; /* the rows' order (hk_fem_row_at), or NULL */
} hk_fem_row_args;

HK_EL_FN int64_t hk_fem_row(const hk_fem_row_args *a, int64_t i, int32_t *out)
{
    const hk_fem_mesh *m = &a->m;
    const int64_t c0 = m->n2c_ptr[i], nc = m->n2c_ptr[i + 1] - c0;
    if (nc == 0) {
        if (out) out[0] = (int32_t)i;
        return 1;
    }
    int64_t cnt = 0;
    if (nc <= HK_FEM_MERGE) {
        /* list k: its head node cur[k] (INT32_MAX once done) at snodes[pos[k]], left[k] more
         * after it; the heads are compared where they are kept, each node read once */
        int64_t pos[HK_FEM_MERGE];
        int left[HK_FEM_MERGE];
        int32_t cur[HK_FEM_MERGE];
        for (int k = 0; k < nc; k++) {
            const int64_t e = m->n2c_idx[c0 + k];
            pos[k] = m->cptr[e], left[k] = (int)(m->cptr[e + 1] - m->cptr[e]) - 1;
            cur[k] = left[k] >= 0 ? a->snodes[pos[k]] : INT32_MAX;
        }
        for (;;) {
            int32_t v = INT32_MAX;
            for (int k = 0; k < nc; k++)
                if (cur[k] < v) v = cur[k];
            if (v == INT32_MAX) break;
            if (out) out[cnt] = v;
            cnt++;
            for (int k = 0; k < nc; k++)
                if (cur[k] == v) cur[k] = left[k]-- > 0 ? a->snodes[++pos[k]] : INT32_MAX;
        }
        return cnt;
    }
    int32_t last = -1;
    for (;;) {
        int32_t v = INT32_MAX;
        for (int64_t c = c0; c < c0 + nc; c++) {
            const int64_t e = m->n2c_idx[c];
            for (int64_t k = m->cptr[e]; k < m->cptr[e + 1]; k++) {
                const int32_t x = a->snodes[k];
                if (x > last && x < v) v = x;
            }
        }
        if (v == INT32_MAX) break;
        if (out) out[cnt] = v;
        cnt++;
        last = v;
    }
    return cnt;
}

HK_EL_FN void hk_fem_row_count_body(int64_t k, const hk_fem_row_args *a)
{
    const int64_t i = hk_fem_row_at(a->order, k);
    a->count[i + 1] = hk_fem_row(a, i, 0);
}

HK_EL_FN void hk_fem_row_fill_body(int64_t k, const hk_fem_row_args *a)
{
    const int64_t i = hk_fem_row_at(a->order, k);
    hk_fem_row(a, i, a->colind + a->rowptr[i]);
}

/* ---- prefix sums (three passes of fixed segments: deterministic, no library) ------------ */

#define HK_FEM_SEG 2048 /* entries a thread sums serially */

typedef struct hk_fem_scan_args {
    int64_t *x; /* n entries, scanned in place: x[k] becomes x[0] + ... + x[k] */
    int64_t n;
    int64_t *part; /* one per segment */
} hk_fem_scan_args;

HK_EL_FN void hk_fem_scan_sum_body(int64_t s, const hk_fem_scan_args *a)
{
    int64_t t = 0;
    const int64_t k1 = (s + 1) * HK_FEM_SEG < a->n ? (s + 1) * HK_FEM_SEG : a->n;
    for (int64_t k = s * HK_FEM_SEG; k < k1; k++)
        t += a->x[k];
    a->part[s] = t;
}

HK_EL_FN void hk_fem_scan_part_body(int64_t s, const hk_fem_scan_args *a) /* one thread */
{
    const int64_t ns = (a->n + HK_FEM_SEG - 1) / HK_FEM_SEG;
    int64_t t = 0;
    for (int64_t k = 0; k < ns; k++) {
        const int64_t v = a->part[k];
        a->part[k] = t;
        t += v;
    }
}

HK_EL_FN void hk_fem_scan_apply_body(int64_t s, const hk_fem_scan_args *a)
{
    int64_t t = a->part[s];
    const int64_t k1 = (s + 1) * HK_FEM_SEG < a->n ? (s + 1) * HK_FEM_SEG : a->n;
    for (int64_t k = s * HK_FEM_SEG; k < k1; k++) {
        t += a->x[k];
        a->x[k] = t;
    }
}

/* ---- element geometry ------------------------------------------------------------------- */

typedef struct hk_fem_geo_args {
    hk_fem_mesh m;
    const hk_fem_region *regions;
    int axi, with_f;
    double fac;          /* thickness in 2D, 1 in 3D and axisymmetric */
    int64_t e0;          /* the chunk's first cell */
    const int64_t *goff; /* the chunk's record offsets */
    double *geo;
    int64_t *bad; /* the first cell with det J <= 0 (or r <= 0), INT64_MAX if none */
} hk_fem_geo_args;

/* One point's gradients g[b][i] into a record, node after node. */
HK_EL_FN void hk_fem_store_gradients(double *out, int n, int d, const double (*g)[3])
{
    for (int b = 0; b < n; b++)
        for (int i = 0; i < d; i++)
            out[b * d + i] = g[b][i];
}

/* The temperature change at a point with shape functions N: the region's, plus the nodal
 * field Tn (NULL: none) interpolated, summed as the host's kernels sum it. */
HK_EL_FN double hk_fem_point_dT(double dT_region, const double *N, const double *Tn, int n)
{
    double dT = dT_region;
    for (int b = 0; b < n && Tn; b++)
        dT += N[b] * Tn[b];
    return dT;
}

/* Element e's record: what hk_el_stiffness_iso / _general, hk_el_volumetric_reduced and the
 * loads compute per quadrature point, by the same functions. */
HK_EL_FN void hk_fem_geo_body(int64_t k, const hk_fem_geo_args *a)
{
    const hk_fem_mesh *m = &a->m;
    const int64_t e = a->e0 + k;
    const hk_elref *r = &m->refs[m->ctype[e]];
    const hk_fem_region *R = &a->regions[m->cregion[e]];
    const int d = m->dim, n = r->nnodes, axi = a->axi;
    const int sel = hk_fem_selective(&R->law, r->type);
    const int thermal = hk_fem_thermal(a->with_f, R, m->node_dT);
    const hk_fem_layout L = hk_fem_layout_of(r, d, axi, sel, thermal);
    const int32_t *nodes = m->cnodes + m->cptr[e];
    double *rec = a->geo + a->goff[k];
    double x[HK_EL_MAXN][3], Tn[HK_EL_MAXN], g[HK_EL_MAXN][3];
    for (int b = 0; b < n; b++)
        for (int i = 0; i < 3; i++)
            x[b][i] = m->coords[3 * (int64_t)nodes[b] + i];
    const double *Tp = thermal && m->node_dT ? Tn : 0;
    for (int b = 0; b < n && Tp; b++)
        Tn[b] = m->node_dT[nodes[b]];
    int bad = 0;
    for (int q = 0; q < r->nqp && !bad; q++) {
        double w = 0, rad = 0;
        bad = hk_el_point_gradients(r, d, (const double(*)[3])x, q, a->fac, g, &w, axi ? &rad : 0);
        rec[L.w + q] = w;
        if (axi) rec[L.rad + q] = rad;
        hk_fem_store_gradients(rec + L.g + q * n * d, n, d, g);
        if (thermal) rec[L.dT + q] = hk_fem_point_dT(R->dT, r->N[q], Tp, n);
    }
    if (!bad && L.V >= 0)
        bad = hk_el_mean_dilatation(r, (const double(*)[3])x, a->fac, thermal ? R->dT : 0, Tp,
                                    rec + L.dv, rec + L.V, rec + L.TV);
    for (int q = 0; q < r->nqr && !bad && L.wr >= 0; q++) {
        double w = 0;
        bad = hk_el_reduced_gradients(r, d, (const double(*)[3])x, q, axi, a->fac, g, &w);
        rec[L.wr + q] = w;
        hk_fem_store_gradients(rec + L.gr + q * n * d, n, d, g);
        if (thermal) rec[L.dTr + q] = hk_fem_point_dT(R->dT, r->Nr[q], Tp, n);
    }
    if (bad) HK_FEM_ATOMIC_MIN_I64(a->bad, e);
}

/* ---- numeric: block rows gather their cells' blocks ------------------------------------- */

/* Variants of the numeric kernel (HOOKE_FEM_NUMERIC, docs/assembly.md), flags that give the
 * same additions in the same order, hence the same digits up to the device's fused
 * multiply-adds: the 3D blocks with the dimension a constant, so that the loops unroll and the
 * small matrices stay in registers (D3, a kernel of its own in the CUDA build); the rows taken
 * in the order of their number of cells, the most first (SORTED; hk_fem_order_*), so that the
 * rows sharing a warp loop over as many cells (the launch only; the pattern's row merges take
 * the same order). Both are the default. */
#define HK_FEM_NUM_D3 2
#define HK_FEM_NUM_SORTED 64

/* Block (A, B) of cell e's element matrix (A, B local nodes), from its record: the digits the
 * whole-element kernels of element_kernels.h put there. */
HK_EL_FN void hk_fem_block(const hk_fem_geo_args *a, int64_t e, int A, int B, double *blk)
{
    const hk_fem_mesh *m = &a->m;
    const hk_elref *r = &m->refs[m->ctype[e]];
    const hk_fem_region *R = &a->regions[m->cregion[e]];
    const hk_law *law = &R->law;
    const int d = m->dim, n = r->nnodes, nd = n * d, nq = r->nqp, axi = a->axi;
    const int sel = hk_fem_selective(law, r->type);
    const hk_fem_layout L =
        hk_fem_layout_of(r, d, axi, sel, hk_fem_thermal(a->with_f, R, m->node_dT));
    const double *rec = a->geo + a->goff[e - a->e0];
    if (R->iso) {
        hk_el_iso_block(d, nq, rec + L.g, nd, d, rec + L.w, A, B,
                        sel ? law->lambda - law->kappa : law->lambda, law->mu, blk);
    } else {
        double D[6][6];
        hk_el_shifted_law(law, sel ? law->kappa : 0, D);
        for (int k = 0; k < d * d; k++)
            blk[k] = 0;
        for (int q = 0; q < nq; q++) {
            const double w = rec[L.w + q], rad = axi ? rec[L.rad + q] : 0;
            double BA[6][3], BB[6][3], DB[6][3];
            hk_el_bmatrix_at(r, d, q, A, rec + L.g + (q * n + A) * d, rad, BA);
            hk_el_bmatrix_at(r, d, q, B, rec + L.g + (q * n + B) * d, rad, BB);
            hk_el_db(law->nv, d, D, BB, DB);
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++)
                    blk[i * d + j] += w * hk_el_btdb(law->nv, BA, DB, i, j);
        }
    }
    if (L.V >= 0) {
        const double *dv = rec + L.dv, V = rec[L.V];
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++)
                blk[i * d + j] += law->kappa / V * dv[A * d + i] * dv[B * d + j];
    }
    for (int q = 0; q < r->nqr && L.wr >= 0; q++) {
        const double w = rec[L.wr + q], *gA = rec + L.gr + (q * n + A) * d,
                     *gB = rec + L.gr + (q * n + B) * d;
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++)
                blk[i * d + j] += w * law->kappa * gA[i] * gB[j];
    }
}

/* hk_el_iso_entry of S's entries x = S[r][c], y = S[c][r] (diag: r == c). On the device with
 * the operations hk_fem_block's compiled code gives it where d, r and c are variables: lam x
 * fused, mu y rounded, and mu tr or a zero added apart (the explicit roundings keep the
 * compiler from fusing that addition where the indices are constants). */
HK_EL_FN double hk_fem_iso_entry(double x, double y, double tr, double lam, double mu, int diag)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(__fma_rn(x, lam, __dmul_rn(y, mu)), diag ? __dmul_rn(tr, mu) : 0.0);
#else
    return lam * x + mu * y + (diag ? mu * tr : 0);
#endif
}

/* hk_el_iso_block in 3D with every index a constant, so that S and the block stay in
 * registers (with d a variable they live in local memory, read and written at every point). */
HK_EL_FN void hk_fem_iso_block3(int nq, const double *g, int sq, const double *wq, int a, int b,
                                double lam, double mu, double *blk)
{
    double S[3][3];
    hk_el_iso_sums(3, nq, g, sq, 3, wq, a < b ? a : b, a < b ? b : a, S);
    const double tr = hk_el_trace(3, S);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            /* (r, c) = (i, j) for a < b, (j, i) for a > b, the lower triangle's for a == b */
            const double x = hk_fem_iso_entry(S[i][j], S[j][i], tr, lam, mu, i == j),
                         y = hk_fem_iso_entry(S[j][i], S[i][j], tr, lam, mu, i == j);
            blk[i * 3 + j] = a < b || (a == b && i >= j) ? x : y;
        }
}

/* hk_fem_block of a 3D cell (not axisymmetric) of an isotropic region R: the same digits with
 * the indices constants. */
HK_EL_FN void hk_fem_block3_iso(const hk_fem_geo_args *a, const hk_fem_region *R, int64_t e, int A,
                                int B, double *blk)
{
    const hk_fem_mesh *m = &a->m;
    const hk_elref *r = &m->refs[m->ctype[e]];
    const hk_law *law = &R->law;
    const int n = r->nnodes, nd = n * 3;
    const int sel = hk_fem_selective(law, r->type);
    const hk_fem_layout L =
        hk_fem_layout_of(r, 3, 0, sel, hk_fem_thermal(a->with_f, R, m->node_dT));
    const double *rec = a->geo + a->goff[e - a->e0];
    hk_fem_iso_block3(r->nqp, rec + L.g, nd, rec + L.w, A, B,
                      sel ? law->lambda - law->kappa : law->lambda, law->mu, blk);
    for (int q = 0; q < r->nqr && L.wr >= 0; q++) {
        const double w = rec[L.wr + q], *gA = rec + L.gr + (q * n + A) * 3,
                     *gB = rec + L.gr + (q * n + B) * 3;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                blk[i * 3 + j] += w * law->kappa * gA[i] * gB[j];
    }
}

typedef struct hk_fem_numeric_args {
    hk_fem_geo_args g;
    int64_t e1; /* the chunk is cells [g.e0, e1) */
    const int64_t *rowptr;
    const int32_t *colind;
    double *val;
    int flags;            /* HK_FEM_NUM_*: D3 only in 3D */
    const int64_t *order; /* the rows' order (SORTED: hk_fem_order_args), or NULL */
} hk_fem_numeric_args;

/* The cells of block row i inside the chunk: n2c positions [*c0, *c1). */
HK_EL_FN void hk_fem_chunk_range(const hk_fem_mesh *m, int64_t i, int64_t e0, int64_t e1,
                                 int64_t *c0, int64_t *c1)
{
    const int64_t lo = m->n2c_ptr[i], hi = m->n2c_ptr[i + 1];
    int64_t a = lo, b = hi;
    while (a < b) { /* the first cell >= e0 */
        const int64_t mid = a + (b - a) / 2;
        if (m->n2c_idx[mid] < e0)
            a = mid + 1;
        else
            b = mid;
    }
    *c0 = a;
    b = hi;
    while (a < b) { /* the first cell >= e1 */
        const int64_t mid = a + (b - a) / 2;
        if (m->n2c_idx[mid] < e1)
            a = mid + 1;
        else
            b = mid;
    }
    *c1 = a;
}

HK_EL_FN void hk_fem_numeric_range(int64_t i, const hk_fem_numeric_args *a, int64_t *c0,
                                   int64_t *c1)
{
    hk_fem_chunk_range(&a->g.m, i, a->g.e0, a->e1, c0, c1);
}

/* Lane `lane` of block row i adds block (A, lane) of the row's cell at n2c position c, A the
 * row's node in that cell: lanes take distinct blocks of the row, cells follow one another
 * (the caller orders them), so every block receives its cells' contributions in cell order.
 * flags: a->flags, a constant in each of the device's compiled kernels. */
HK_EL_FN void hk_fem_numeric_body(int64_t i, int64_t c, int lane, const hk_fem_numeric_args *a,
                                  const int flags)
{
    const hk_fem_mesh *m = &a->g.m;
    const int64_t e = m->n2c_idx[c];
    const int n = m->refs[m->ctype[e]].nnodes, d = flags & HK_FEM_NUM_D3 ? 3 : m->dim;
    if (lane >= n) return;
    const int32_t j = m->cnodes[m->cptr[e] + lane];
    int64_t lo = a->rowptr[i], hi = a->rowptr[i + 1];
    while (lo < hi) { /* block (A, lane)'s column in the row */
        const int64_t mid = lo + (hi - lo) / 2;
        if (a->colind[mid] < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    double *v = a->val + (size_t)lo * d * d;
    const hk_fem_region *R = &a->g.regions[m->cregion[e]];
    if (flags & HK_FEM_NUM_D3 && R->iso) { /* apart: its block indexed by constants only */
        double b3[9];
        hk_fem_block3_iso(&a->g, R, e, m->n2c_loc[c], lane, b3);
        for (int k = 0; k < 9; k++)
            v[k] += b3[k];
        return;
    }
    double blk[9];
    hk_fem_block(&a->g, e, m->n2c_loc[c], lane, blk);
    for (int k = 0; k < d * d; k++)
        v[k] += blk[k];
}

/* Node i's share of its cells' body and thermal loads, added to f_ext in cell order (as the
 * host adds each cell's fe). */
typedef struct hk_fem_loads_args {
    hk_fem_geo_args g;
    int64_t e1;
    double *f;            /* d per node */
    const int64_t *order; /* the nodes' order (hk_fem_row_at), or NULL */
} hk_fem_loads_args;

HK_EL_FN void hk_fem_loads_body(int64_t k, const hk_fem_loads_args *a)
{
    const int64_t i = hk_fem_row_at(a->order, k);
    const hk_fem_mesh *m = &a->g.m;
    const int d = m->dim, axi = a->g.axi;
    int64_t c0, c1;
    hk_fem_chunk_range(m, i, a->g.e0, a->e1, &c0, &c1);
    for (int64_t c = c0; c < c1; c++) {
        const int64_t e = m->n2c_idx[c];
        const int A = m->n2c_loc[c];
        const hk_elref *r = &m->refs[m->ctype[e]];
        const hk_fem_region *R = &a->g.regions[m->cregion[e]];
        const hk_law *law = &R->law;
        const int n = r->nnodes, sel = hk_fem_selective(law, r->type);
        const int thermal = hk_fem_thermal(1, R, m->node_dT);
        const hk_fem_layout L = hk_fem_layout_of(r, d, axi, sel, thermal);
        const double *rec = a->g.geo + a->g.goff[e - a->g.e0];
        double fe[3] = {0, 0, 0};
        for (int q = 0; q < r->nqp; q++)
            for (int k = 0; k < d; k++)
                fe[k] += rec[L.w + q] * r->N[q][A] * R->b[k];
        if (thermal) {
            /* selective with an isotropic expansion: the volumetric thermal load on the
             * reduced rule, as the host does */
            const int vol =
                sel && law->alpha6[0] == law->alpha6[1] && law->alpha6[1] == law->alpha6[2];
            const double s0 = 3 * law->kappa * law->alpha6[0];
            if (vol && L.V >= 0) {
                for (int k = 0; k < d; k++)
                    fe[k] += s0 * rec[L.TV] / rec[L.V] * rec[L.dv + A * d + k];
            } else if (vol) {
                for (int q = 0; q < r->nqr; q++)
                    for (int k = 0; k < d; k++)
                        fe[k] +=
                            rec[L.wr + q] * s0 * rec[L.dTr + q] * rec[L.gr + (q * n + A) * d + k];
            } else {
                for (int q = 0; q < r->nqp; q++) {
                    double B[6][3];
                    hk_el_bmatrix_at(r, d, q, A, rec + L.g + (q * n + A) * d,
                                     axi ? rec[L.rad + q] : 0, B);
                    for (int k = 0; k < d; k++) {
                        double s = 0;
                        for (int v = 0; v < law->nv; v++)
                            s += B[v][k] * law->sig0[v];
                        fe[k] += rec[L.w + q] * rec[L.dT + q] * s;
                    }
                }
            }
        }
        for (int k = 0; k < d; k++)
            a->f[i * d + k] += fe[k];
    }
}

/* ---- symmetric elimination -------------------------------------------------------------- */

typedef struct hk_fem_elim_args {
    const int64_t *n2c_ptr;
    int bs;
    int64_t nb;
    const int64_t *rowptr;
    const int32_t *colind;
    double *val;
    const uint8_t *fixed;
    const double *u_fixed, *f_ext;
    double *f;
    double mean;  /* the diagonal of rows of nodes without a cell */
    double *diag; /* bs per block row: the assembled diagonal (0 for a row without one); the
                   * memory of f, which the elimination writes after the mean is known */
    double *psum; /* per segment: the assembled diagonal's sum and count (HK_FEM_SEG rows) */
    int64_t *pcnt;
} hk_fem_elim_args;

HK_EL_FN int hk_fem_orphan(const hk_fem_elim_args *a, int64_t i)
{
    return a->n2c_ptr[i + 1] == a->n2c_ptr[i];
}

/* Block row i's assembled diagonal into diag[i * bs ..] (zeros for an orphan or a row without
 * a diagonal block: adding a zero to a sum that starts at +0 changes none of its bits), so
 * that the segment sums below read contiguous values instead of searching rows. */
HK_EL_FN void hk_fem_diag_copy_body(int64_t i, const hk_fem_elim_args *a)
{
    const int bs = a->bs;
    for (int r = 0; r < bs; r++)
        a->diag[i * bs + r] = 0;
    if (hk_fem_orphan(a, i)) return;
    int64_t lo = a->rowptr[i], hi = a->rowptr[i + 1];
    while (lo < hi) { /* the first column >= i (columns increase) */
        const int64_t mid = lo + (hi - lo) / 2;
        if (a->colind[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < a->rowptr[i + 1] && a->colind[lo] == i)
        for (int r = 0; r < bs; r++)
            a->diag[i * bs + r] = a->val[(size_t)lo * bs * bs + r * bs + r];
}

/* Rows of segment s: the sum of their assembled diagonals (rows of nodes on a cell), and the
 * number of rows of nodes on no cell (pcnt), in row order. */
HK_EL_FN void hk_fem_diag_sum_body(int64_t s, const hk_fem_elim_args *a)
{
    const int bs = a->bs;
    double sum = 0;
    int64_t orphans = 0;
    const int64_t i1 = (s + 1) * HK_FEM_SEG < a->nb ? (s + 1) * HK_FEM_SEG : a->nb;
    for (int64_t i = s * HK_FEM_SEG; i < i1; i++) {
        if (hk_fem_orphan(a, i)) {
            orphans++;
            continue;
        }
        for (int r = 0; r < bs; r++)
            sum += a->diag[i * bs + r];
    }
    a->psum[s] = sum;
    a->pcnt[s] = orphans;
}

/* Scalar row gi = i * bs + r: the host's hk_eliminate for that row. */
HK_EL_FN void hk_fem_elim_body(int64_t gi, const hk_fem_elim_args *a)
{
    const int64_t i = gi / a->bs;
    a->f[gi] = hk_eliminate_row(a->bs, i, (int)(gi % a->bs), hk_fem_orphan(a, i), a->mean,
                                a->rowptr, a->colind, a->val, a->fixed, a->u_fixed, a->f_ext);
}

/* ---- recovery --------------------------------------------------------------------------- */

typedef struct hk_fem_rec_args {
    hk_fem_mesh m;
    const hk_law *laws; /* per region */
    const double *dTr;  /* per region */
    hk_analysis an;
    double thick;
    const double *u3; /* 3 per node */
    int64_t e0, e1;   /* the chunk */
    hk_rec_elem *buf; /* e1 - e0 */
    double *cell_stress, *cell_vm;
    double *strain, *stress, *fint, *count, *vm, *principal;
    int64_t *bad;
} hk_fem_rec_args;

/* The recovery's variant (HOOKE_FEM_RECOVER, docs/assembly.md): KEEP, the assembly's device
 * session (mesh, adjacency) kept for the recovery of the same mesh, which then uploads and
 * builds nothing (fem_device.c; held through the solve). */
#define HK_FEM_REC_KEEP 8
/* HUGE: the fields' host arrays marked for transparent huge pages before their pages are
 * faulted in (hk_fem_huge_pages; 512x fewer faults where the system has them). */
#define HK_FEM_REC_HUGE 16

/* Element e0 + k recovered into buf[k], its cell averages stored. */
HK_EL_FN void hk_fem_rec_elem_body(int64_t k, const hk_fem_rec_args *a)
{
    const hk_fem_mesh *m = &a->m;
    const int64_t e = a->e0 + k;
    const int rg = m->cregion[e];
    hk_rec_elem *o = &a->buf[k];
    const hk_elref *r = &m->refs[m->ctype[e]];
    hk_rec_element(r, a->an, &a->laws[rg], a->dTr[rg], m->node_dT, a->thick, m->coords, a->u3,
                   m->cnodes + m->cptr[e], o);
    if (o->err) HK_FEM_ATOMIC_MIN_I64(a->bad, e);
    for (int i = 0; i < 6; i++)
        a->cell_stress[6 * e + i] = o->cell_sig[i];
    a->cell_vm[e] = hk_rec_von_mises(o->cell_sig);
}

/* Node i adds its cells' values at it, in cell order (the host's scatter order). */
HK_EL_FN void hk_fem_rec_gather_body(int64_t i, const hk_fem_rec_args *a)
{
    int64_t c0, c1;
    hk_fem_chunk_range(&a->m, i, a->e0, a->e1, &c0, &c1);
    for (int64_t c = c0; c < c1; c++) {
        const hk_rec_elem *o = &a->buf[a->m.n2c_idx[c] - a->e0];
        const int A = a->m.n2c_loc[c];
        for (int k = 0; k < 6; k++) {
            a->strain[6 * i + k] += o->eps[A][k];
            a->stress[6 * i + k] += o->sig[A][k];
        }
        for (int k = 0; k < 3; k++)
            a->fint[3 * i + k] += o->fint[A][k];
        a->count[i] += 1;
    }
}

HK_EL_FN void hk_fem_rec_finish_body(int64_t i, const hk_fem_rec_args *a)
{
    hk_rec_node_finish(a->count[i], a->strain + 6 * i, a->stress + 6 * i, &a->vm[i],
                       a->principal + 3 * i);
}

#endif
