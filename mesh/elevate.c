/* hk_mesh_elevate: the second-order nodes of a linear mesh, made by Hooke in parallel.
 *
 * One node per unique edge, per quadrilateral face (complete quad9/hex27/wedge18/pyr14) and per
 * hexahedron (hex27), placed in Gmsh's node order of the quadratic types (the reference
 * coordinates of mesh/eltype.c say which corners each node sits between). The unique edges and
 * faces are found by a count/scan over their smallest corner and sorted within it, so the
 * numbering depends on the linear mesh alone, never on the thread count. Nodes of edges and
 * faces on model curves and surfaces go onto them through the caller's projection (Gmsh's
 * closest point); a moved node that would invert a cell stays straight. */
#include <omp.h>
#include <stdio.h>

#include "shape.h"
#include "mesh_impl.h"

/* ---- the quadratic types ----------------------------------------------------------------- */

typedef struct {
    hk_eltype quad; /* HK_EL_COUNT: no quadratic counterpart */
    int nc, nn;
    int nk[27];    /* corners of node i >= nc: 2 edge, 4 quadrilateral face, 8 centre */
    int cn[27][8]; /* those corners (local) */
    int nsub[27];  /* face and centre nodes: the edge nodes they interpolate */
    int sub[27][12];
    double dN[27][27][3]; /* quadratic shape derivatives at the nodes (Jacobian check) */
} eltab;

hk_eltype hk_eltype_quadratic(hk_eltype t, int incomplete)
{
    switch (t) {
    case HK_EL_POINT1:
        return HK_EL_POINT1;
    case HK_EL_LINE2:
        return HK_EL_LINE3;
    case HK_EL_TRI3:
        return HK_EL_TRI6;
    case HK_EL_QUAD4:
        return incomplete ? HK_EL_QUAD8 : HK_EL_QUAD9;
    case HK_EL_TET4:
        return HK_EL_TET10;
    case HK_EL_HEX8:
        return incomplete ? HK_EL_HEX20 : HK_EL_HEX27;
    case HK_EL_WEDGE6:
        return incomplete ? HK_EL_WEDGE15 : HK_EL_WEDGE18;
    case HK_EL_PYR5:
        return incomplete ? HK_EL_PYR13 : HK_EL_PYR14;
    default:
        return HK_EL_COUNT;
    }
}

static int has(const int *a, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (a[i] == v) return 1;
    return 0;
}

static int build_tab(hk_eltype lin, int incomplete, eltab *t)
{
    memset(t, 0, sizeof *t);
    t->quad = hk_eltype_quadratic(lin, incomplete);
    if (t->quad == HK_EL_COUNT) return 0;
    t->nc = hk_eltype_ncorners(lin);
    t->nn = hk_eltype_get(t->quad)->nnodes;
    if (lin == HK_EL_POINT1) return 0;
    const double *rc = hk_eltype_ref_coords(t->quad);
    for (int i = t->nc; i < t->nn; i++) {
        double N[27], dN[27][3];
        hk_el_shape(lin, rc + 3 * i, N, dN);
        for (int c = 0; c < t->nc; c++)
            if (fabs(N[c]) > 1e-9) t->cn[i][t->nk[i]++] = c;
        HK_CHECK(t->nk[i] == 2 || t->nk[i] == 4 || t->nk[i] == 8, HK_ERR_INTERNAL,
                 "hk_mesh_elevate: node %d of %s lies between %d corners", i,
                 hk_eltype_get(t->quad)->name, t->nk[i]);
    }
    for (int i = t->nc; i < t->nn; i++)
        if (t->nk[i] > 2)
            for (int j = t->nc; j < t->nn; j++)
                if (t->nk[j] == 2 && has(t->cn[i], t->nk[i], t->cn[j][0]) &&
                    has(t->cn[i], t->nk[i], t->cn[j][1]))
                    t->sub[i][t->nsub[i]++] = j;
    for (int i = 0; i < t->nn; i++)
        hk_el_shape(t->quad, rc + 3 * i, NULL, t->dN[i]);
    return 0;
}

/* Sorted global corners of node i of an element with corners nd (-1 if one is off the mesh). */
static int node_key(const eltab *t, int i, const int32_t *nd, int32_t *key)
{
    int k = t->nk[i];
    for (int a = 0; a < k; a++) {
        int32_t v = nd[t->cn[i][a]];
        if (v < 0) return -1;
        int b = a;
        for (; b > 0 && key[b - 1] > v; b--)
            key[b] = key[b - 1];
        key[b] = v;
    }
    return 0;
}

/* ---- unique edges and faces ---------------------------------------------------------------- */

/* The unique keys (sorted corner tuples) of one kind, bucketed by their smallest corner. */
typedef struct {
    int k;          /* corners per key: 2 edges, 4 faces */
    int64_t nv, n;  /* vertices, unique keys */
    int64_t *uptr;  /* nv + 1: the keys whose smallest corner is v */
    int32_t *ukey;  /* n * (k - 1): the other corners */
    int32_t *first; /* n: the smallest corner */
    int64_t *owner; /* n: 32 * (first cell using it) + its local node; edges: that node's
                     * place in the quadratic connectivity */
} keyset;

static void keyset_free(keyset *ks)
{
    free(ks->uptr);
    free(ks->ukey);
    free(ks->first);
    free(ks->owner);
    memset(ks, 0, sizeof *ks);
}

static int cmp_ints(const int32_t *a, const int32_t *b, int w)
{
    for (int i = 0; i < w; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* An entry of a bucket: the corners after the smallest, then 32 * cell + local node, packed
 * into S = 1 (edges) or 2 (faces) words: the key is the words' first 32 * (2S - 1) bits. */
typedef struct {
    uint64_t k0;     /* the key's first 64 bits (edges: the other corner) */
    uint32_t k1, id; /* faces: the key's last corner; the smallest 32 * cell + node */
} bucket_key;

static bucket_key entry_key(const uint64_t *p, int S)
{
    bucket_key k;
    if (S == 1)
        k.k0 = p[0] >> 32, k.k1 = 0;
    else
        k.k0 = p[0], k.k1 = (uint32_t)(p[1] >> 32);
    k.id = (uint32_t)(p[S - 1] & 0xffffffffu);
    return k;
}

static int key_less(const bucket_key *a, const bucket_key *b)
{
    return a->k0 < b->k0 || (a->k0 == b->k0 && a->k1 < b->k1);
}

/* A thread's room for one bucket's distinct keys: a hash table of their indices, the keys in
 * the order met, and their ranks in key order. */
typedef struct {
    int64_t cap, tsize;
    int32_t *table; /* tsize: -1 or an index into key */
    bucket_key *key;
    int32_t *order, *rank;
} bucket_scratch;

static void scratch_free(bucket_scratch *s)
{
    free(s->table);
    free(s->key);
    free(s->order);
    free(s->rank);
    memset(s, 0, sizeof *s);
}

/* The distinct keys of bucket b (m entries of S words) with the smallest id of each, into
 * s->key (in the order met) and s->order (their indices sorted by key, so s->rank[j] is the
 * rank of key j); e2k (may be NULL): for each entry, the index of its key. Returns the count,
 * -1 when out of memory. The set, the ids and the ranks do not depend on the entries' order. */
static int64_t bucket_keys(const uint64_t *b, int64_t m, int S, bucket_scratch *s, int32_t *e2k)
{
    if (m == 0) return 0;
    if (m > s->cap) {
        int64_t c = 2 * m, t = 16;
        while (t < 2 * c)
            t *= 2;
        scratch_free(s);
        s->table = malloc((size_t)t * sizeof *s->table);
        s->key = malloc((size_t)c * sizeof *s->key);
        s->order = malloc((size_t)c * sizeof *s->order);
        s->rank = malloc((size_t)c * sizeof *s->rank);
        if (!s->table || !s->key || !s->order || !s->rank) {
            scratch_free(s);
            return -1;
        }
        s->cap = c, s->tsize = t;
    }
    int64_t t = 16;
    while (t < 2 * m)
        t *= 2;
    for (int64_t i = 0; i < t; i++)
        s->table[i] = -1;
    int64_t u = 0;
    for (int64_t i = 0; i < m; i++) {
        const bucket_key k = entry_key(b + i * S, S);
        uint64_t h = (k.k0 * 0x9E3779B97F4A7C15ull ^ k.k1 * 0xC2B2AE3D27D4EB4Full) >> 20;
        int32_t j;
        for (;; h++) {
            j = s->table[h & (uint64_t)(t - 1)];
            if (j < 0 || (s->key[j].k0 == k.k0 && s->key[j].k1 == k.k1)) break;
        }
        if (j < 0) {
            j = (int32_t)u++;
            s->table[h & (uint64_t)(t - 1)] = j;
            s->key[j] = k;
        } else if (k.id < s->key[j].id) {
            s->key[j].id = k.id;
        }
        if (e2k) e2k[i] = j;
    }
    for (int64_t i = 0; i < u; i++) {
        int32_t x = (int32_t)i;
        int64_t j = i;
        for (; j > 0 && key_less(&s->key[x], &s->key[s->order[j - 1]]); j--)
            s->order[j] = s->order[j - 1];
        s->order[j] = x;
    }
    for (int64_t r = 0; r < u; r++)
        s->rank[s->order[r]] = (int32_t)r;
    return u;
}

/* The keys of kind k of the cells c: numbered base + 0, 1, ... in the order of their sorted
 * corners, written into the quadratic connectivity qnodes (rows qptr). */
static int keyset_build(keyset *ks, int k, const hk_elems *c, const eltab *tab, int64_t nv,
                        int32_t *qnodes, const int64_t *qptr, int64_t base)
{
    int ierr = 0;
    const int w = k - 1, S = k == 2 ? 1 : 2;
    int64_t *ptr = NULL, *ucnt = NULL, *bc = NULL, *pstart = NULL;
    uint64_t *ent = NULL;
    uint16_t *low = NULL;
    memset(ks, 0, sizeof *ks);
    ks->k = k, ks->nv = nv;
    /* The entries bucketed by their smallest corner in two stable counting passes, without
     * atomics (whose locked read-modify-writes to scattered counters serialize the cache
     * misses): by its high bits into partitions of at most 2^shift corners (each block of
     * cells counting and writing its own places), then within each partition by its low bits
     * (low). Entries stay in cell order within a bucket, on any thread count. */
    int shift = 0;
    while (nv > 0 && ((nv - 1) >> shift) >= 4096 && shift < 16)
        shift++;
    const int64_t P = nv > 0 ? ((nv - 1) >> shift) + 1 : 1;
    enum { MAXB = 256 };
    const int nb = c->n < 4096 ? 1 : omp_get_max_threads() < MAXB ? omp_get_max_threads() : MAXB;
    HK_TRY(hk_calloc((size_t)nb * (size_t)P, sizeof *bc, &bc));
    HK_TRY(hk_malloc((size_t)(P + 1) * sizeof *pstart, &pstart));
#pragma omp parallel for schedule(static, 1) if (nb > 1)
    for (int b = 0; b < nb; b++) {
        int64_t *cnt = bc + (int64_t)b * P;
        for (int64_t e = c->n * b / nb; e < c->n * (b + 1) / nb; e++) {
            const eltab *t = &tab[c->type[e]];
            int32_t key[8];
            for (int i = t->nc; i < t->nn; i++)
                if (t->nk[i] == k && !node_key(t, i, c->nodes + c->ptr[e], key))
                    cnt[key[0] >> shift]++;
        }
    }
    int64_t ntot = 0;
    for (int64_t q = 0; q < P; q++) {
        pstart[q] = ntot;
        for (int b = 0; b < nb; b++) {
            const int64_t n = bc[(int64_t)b * P + q];
            bc[(int64_t)b * P + q] = ntot;
            ntot += n;
        }
    }
    pstart[P] = ntot;
    HK_TRY(hk_malloc((size_t)(ntot ? ntot : 1) * S * sizeof *ent, &ent));
    HK_TRY(hk_malloc((size_t)(ntot ? ntot : 1) * sizeof *low, &low));
    HK_TRY(hk_calloc((size_t)nv + 1, sizeof *ptr, &ptr));
#pragma omp parallel for schedule(static, 1) if (nb > 1)
    for (int b = 0; b < nb; b++) {
        int64_t *at = bc + (int64_t)b * P;
        for (int64_t e = c->n * b / nb; e < c->n * (b + 1) / nb; e++) {
            const eltab *t = &tab[c->type[e]];
            int32_t key[8];
            for (int i = t->nc; i < t->nn; i++)
                if (t->nk[i] == k && !node_key(t, i, c->nodes + c->ptr[e], key)) {
                    const int64_t pos = at[key[0] >> shift]++;
                    /* edges: the place in qnodes (its order is that of cell and node) */
                    uint64_t id = S == 1 ? (uint64_t)(qptr[e] + i) : 32 * (uint64_t)e + (uint64_t)i;
                    uint64_t *p = ent + pos * S;
                    low[pos] = (uint16_t)(key[0] & ((1 << shift) - 1));
                    if (S == 1) {
                        p[0] = (uint64_t)key[1] << 32 | id;
                    } else {
                        p[0] = (uint64_t)key[1] << 32 | (uint32_t)key[2];
                        p[1] = (uint64_t)key[3] << 32 | id;
                    }
                }
        }
    }
    /* within each partition: its corners' buckets (ptr) and the entries moved into them */
    int fail = 0;
#pragma omp parallel reduction(| : fail)
    {
        int64_t *cnt = malloc(((size_t)1 << shift) * sizeof *cnt + sizeof *cnt);
        uint64_t *buf = NULL;
        int64_t cap = 0;
        fail |= !cnt;
#pragma omp for schedule(dynamic, 16)
        for (int64_t q = 0; q < P; q++) {
            if (!cnt) continue;
            const int64_t v0 = q << shift, nk = (v0 + (1 << shift) < nv ? 1 << shift : nv - v0);
            const int64_t lo = pstart[q], m = pstart[q + 1] - lo;
            memset(cnt, 0, (size_t)(nk + 1) * sizeof *cnt);
            for (int64_t j = lo; j < lo + m; j++)
                cnt[low[j] + 1]++;
            for (int64_t r = 0; r < nk; r++) {
                cnt[r + 1] += cnt[r];
                ptr[v0 + r] = lo + cnt[r];
            }
            if (m * S > cap) {
                free(buf);
                cap = 2 * m * S;
                buf = malloc((size_t)cap * sizeof *buf);
                if (!buf) {
                    cap = 0;
                    fail = 1;
                    continue;
                }
            }
            memcpy(buf, ent + lo * S, (size_t)(m * S) * sizeof *buf);
            for (int64_t j = 0; j < m; j++) {
                const int64_t to = lo + cnt[low[lo + j]]++;
                memcpy(ent + to * S, buf + j * S, (size_t)S * sizeof *buf);
            }
        }
        free(buf);
        free(cnt);
    }
    HK_TRY_CHECK(!fail, HK_ERR_MEMORY, "out of host memory raising the mesh order");
    ptr[nv] = ntot;
    free(low);
    low = NULL;
    /* each bucket's distinct keys (a hash table, then the few distinct ones sorted): counted,
     * then numbered in key order; the first cell and node using a key own it */
    HK_TRY(hk_calloc((size_t)nv + 1, sizeof *ucnt, &ucnt));
#pragma omp parallel reduction(| : fail)
    {
        bucket_scratch sc;
        memset(&sc, 0, sizeof sc);
#pragma omp for schedule(dynamic, 512)
        for (int64_t v = 0; v < nv; v++) {
            const int64_t u = bucket_keys(ent + ptr[v] * S, ptr[v + 1] - ptr[v], S, &sc, NULL);
            fail |= u < 0;
            ucnt[v + 1] = u < 0 ? 0 : u;
        }
        scratch_free(&sc);
    }
    HK_TRY_CHECK(!fail, HK_ERR_MEMORY, "out of host memory raising the mesh order");
    hk_prefix_sum(ucnt, nv);
    ks->n = ucnt[nv];
    ks->uptr = ucnt;
    ucnt = NULL;
    HK_TRY(hk_malloc((size_t)(ks->n ? ks->n : 1) * w * sizeof *ks->ukey, &ks->ukey));
    HK_TRY(hk_malloc((size_t)(ks->n ? ks->n : 1) * sizeof *ks->first, &ks->first));
    HK_TRY(hk_malloc((size_t)(ks->n ? ks->n : 1) * sizeof *ks->owner, &ks->owner));
#pragma omp parallel reduction(| : fail)
    {
        bucket_scratch sc;
        memset(&sc, 0, sizeof sc);
        int32_t *e2k = NULL;
        int64_t e2k_cap = 0;
#pragma omp for schedule(dynamic, 512)
        for (int64_t v = 0; v < nv; v++) {
            const uint64_t *b = ent + ptr[v] * S;
            const int64_t m = ptr[v + 1] - ptr[v], u0 = ks->uptr[v];
            if (m > e2k_cap) {
                free(e2k);
                e2k_cap = 2 * m;
                e2k = malloc((size_t)e2k_cap * sizeof *e2k);
                if (!e2k) e2k_cap = 0;
            }
            if (!m) continue;
            const int64_t u = e2k ? bucket_keys(b, m, S, &sc, e2k) : -1;
            if (u < 0) {
                fail = 1;
                continue;
            }
            for (int64_t r = 0; r < u; r++) {
                const bucket_key *kk = &sc.key[sc.order[r]];
                int32_t *q = ks->ukey + (u0 + r) * w;
                q[0] = (int32_t)(kk->k0 >> (S == 1 ? 0 : 32));
                if (S == 2) q[1] = (int32_t)(kk->k0 & 0xffffffffu), q[2] = (int32_t)kk->k1;
                ks->first[u0 + r] = (int32_t)v;
                ks->owner[u0 + r] = (int64_t)kk->id;
            }
            for (int64_t i = 0; i < m; i++) {
                const uint64_t id = b[i * S + S - 1] & 0xffffffffu;
                const int64_t at = S == 1 ? (int64_t)id : qptr[id / 32] + (int64_t)(id % 32);
                qnodes[at] = (int32_t)(base + u0 + sc.rank[e2k[i]]);
            }
        }
        free(e2k);
        scratch_free(&sc);
    }
    HK_TRY_CHECK(!fail, HK_ERR_MEMORY, "out of host memory raising the mesh order");
fail:
    free(ptr);
    free(ucnt);
    free(ent);
    free(bc);
    free(pstart);
    free(low);
    if (ierr) keyset_free(ks);
    return ierr;
}

/* Index of the sorted key (k corners), -1 if absent. */
static int64_t keyset_find(const keyset *ks, const int32_t *key)
{
    const int w = ks->k - 1;
    if (key[0] < 0 || key[0] >= ks->nv) return -1;
    int64_t lo = ks->uptr[key[0]], hi = ks->uptr[key[0] + 1];
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        int c = cmp_ints(ks->ukey + mid * w, key + 1, w);
        if (!c) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* ---- elevation ----------------------------------------------------------------------------- */

typedef struct {
    const hk_mesh *m;
    const eltab *tab;
    keyset edges, faces;
    int64_t nv, ne, nf, ncent; /* corners, edge, face and centre nodes */
    hk_elems q;                /* the quadratic cells */
    double *x;                 /* 3 per node */
    uint8_t *moved;            /* per higher-order node: off its straight position */
} elev;

/* The global node (or -1) of node i of a facet or cell of linear type t with corners nd. */
static int64_t lookup(const elev *E, const eltab *t, int i, const int32_t *nd)
{
    int32_t key[8];
    if (node_key(t, i, nd, key)) return -1;
    int64_t u = keyset_find(t->nk[i] == 2 ? &E->edges : &E->faces, key);
    if (u < 0) return -1;
    return t->nk[i] == 2 ? E->nv + u : E->nv + E->ne + u;
}

/* Corners of higher-order node id (global), into c; returns their count. */
static int node_corners(const elev *E, int64_t id, int32_t *c)
{
    int64_t h = id - E->nv;
    if (h < E->ne) {
        c[0] = E->edges.first[h], c[1] = E->edges.ukey[h];
        return 2;
    }
    h -= E->ne;
    if (h < E->nf) {
        c[0] = E->faces.first[h];
        memcpy(c + 1, E->faces.ukey + 3 * h, 3 * sizeof *c);
        return 4;
    }
    return -1; /* a centre: its cell's corners */
}

static void straight_point(const elev *E, const int32_t *c, int k, double *p)
{
    p[0] = p[1] = p[2] = 0;
    for (int a = 0; a < k; a++)
        for (int d = 0; d < 3; d++)
            p[d] += E->x[3 * (int64_t)c[a] + d];
    for (int d = 0; d < 3; d++)
        p[d] /= k;
}

/* Serendipity interpolation of node i of cell e from its corners and edge nodes: the centre
 * of a quadrilateral face (-1/4 corners + 1/2 edges) or of a hexahedron (-1/4, +1/4), which
 * follows curved edges; the straight centre when the edges are straight. */
static int interp_node(elev *E, int64_t e, int i, double *p)
{
    const eltab *t = &E->tab[E->m->cells.type[e]];
    const int32_t *qn = E->q.nodes + E->q.ptr[e];
    double wc = -0.25, we = t->nk[i] == 4 ? 0.5 : 0.25;
    int moved = 0;
    p[0] = p[1] = p[2] = 0;
    for (int a = 0; a < t->nk[i]; a++)
        for (int d = 0; d < 3; d++)
            p[d] += wc * E->x[3 * (int64_t)qn[t->cn[i][a]] + d];
    for (int a = 0; a < t->nsub[i]; a++) {
        int64_t id = qn[t->sub[i][a]];
        moved |= E->moved[id - E->nv];
        for (int d = 0; d < 3; d++)
            p[d] += we * E->x[3 * id + d];
    }
    return moved;
}

static double dist(const double *a, const double *b)
{
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                (a[2] - b[2]) * (a[2] - b[2]));
}

/* Move the higher-order nodes [lo, hi) (global ids) of the classified entities onto them. */
static int project_range(elev *E, const hk_elev_geom *g, const int32_t *cls, int64_t lo, int64_t hi,
                         hk_elev_stats *st)
{
    int ierr = 0;
    int64_t *cnt = NULL, *list = NULL;
    double *xyz = NULL;
    int64_t *bpos = NULL;
    /* the nodes listed by entity, in node order within each: counted by blocks of nodes,
     * each block then writing its own places */
    enum { MAXB = 64 };
    const int nb = hi - lo < 4096 ? 1 : omp_get_max_threads() < MAXB ? omp_get_max_threads() : MAXB;
    HK_TRY(hk_calloc((size_t)g->n + 1, sizeof *cnt, &cnt));
    HK_TRY(hk_calloc((size_t)nb * (size_t)g->n + 1, sizeof *bpos, &bpos));
#pragma omp parallel for schedule(static, 1) if (nb > 1)
    for (int b = 0; b < nb; b++)
        for (int64_t id = lo + (hi - lo) * b / nb; id < lo + (hi - lo) * (b + 1) / nb; id++)
            if (cls[id - E->nv] >= 0) bpos[(int64_t)b * g->n + cls[id - E->nv]]++;
    for (int k = 0; k < g->n; k++) {
        int64_t at = cnt[k];
        for (int b = 0; b < nb; b++) {
            const int64_t c = bpos[(int64_t)b * g->n + k];
            bpos[(int64_t)b * g->n + k] = at;
            at += c;
        }
        cnt[k + 1] = at;
    }
    HK_TRY(hk_malloc((size_t)(cnt[g->n] ? cnt[g->n] : 1) * sizeof *list, &list));
    HK_TRY(hk_malloc((size_t)(cnt[g->n] ? cnt[g->n] : 1) * 3 * sizeof *xyz, &xyz));
#pragma omp parallel for schedule(static, 1) if (nb > 1)
    for (int b = 0; b < nb; b++)
        for (int64_t id = lo + (hi - lo) * b / nb; id < lo + (hi - lo) * (b + 1) / nb; id++)
            if (cls[id - E->nv] >= 0) list[bpos[(int64_t)b * g->n + cls[id - E->nv]]++] = id;
    for (int k = 0; k < g->n; k++) {
        int64_t n = cnt[k + 1] - cnt[k];
        const int64_t *l = list + cnt[k];
        if (!n || g->ent[k].flat) continue;
        for (int64_t j = 0; j < n; j++)
            memcpy(xyz + 3 * j, E->x + 3 * l[j], 3 * sizeof *xyz);
        if (g->project(g->ctx, &g->ent[k], xyz, n)) {
            st->failed += n;
            continue;
        }
        for (int64_t j = 0; j < n; j++) {
            int32_t c[4];
            int nc = node_corners(E, l[j], c);
            double size = 0, *p = E->x + 3 * l[j];
            for (int a = 0; a < nc; a++)
                for (int b = a + 1; b < nc; b++)
                    size = fmax(size, dist(E->x + 3 * (int64_t)c[a], E->x + 3 * (int64_t)c[b]));
            /* a closest point far off the edge is on another part of the surface */
            if (!(dist(xyz + 3 * j, p) <= 0.5 * size)) {
                st->too_far++;
                continue;
            }
            memcpy(p, xyz + 3 * j, 3 * sizeof *p);
            E->moved[l[j] - E->nv] = 1;
            st->projected++;
        }
    }
fail:
    free(cnt);
    free(bpos);
    free(list);
    free(xyz);
    return ierr;
}

/* Smallest Jacobian determinant of quadratic cell e over its nodes. */
static double min_det(const elev *E, int64_t e)
{
    const eltab *t = &E->tab[E->m->cells.type[e]];
    const int32_t *qn = E->q.nodes + E->q.ptr[e];
    const int dim = E->m->dim;
    double worst = INFINITY;
    for (int i = 0; i < t->nn; i++) {
        double J[3][3] = {{0}};
        for (int a = 0; a < t->nn; a++)
            for (int r = 0; r < 3; r++)
                for (int s = 0; s < 3; s++)
                    J[r][s] += E->x[3 * (int64_t)qn[a] + r] * t->dN[i][a][s];
        double det = dim == 2 ? J[0][0] * J[1][1] - J[0][1] * J[1][0]
                              : J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
                                    J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
                                    J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
        worst = fmin(worst, det);
    }
    return worst;
}

static int cell_moved(const elev *E, int64_t e)
{
    const eltab *t = &E->tab[E->m->cells.type[e]];
    const int32_t *qn = E->q.nodes + E->q.ptr[e];
    for (int i = t->nc; i < t->nn; i++)
        if (E->moved[qn[i] - E->nv]) return 1;
    return 0;
}

/* Cells that a moved node inverts get their moved nodes back on the straight positions,
 * until none is inverted (a straight cell keeps the linear mesh's orientation). */
static int keep_valid(elev *E, hk_elev_stats *st)
{
    int ierr = 0;
    const hk_elems *c = &E->m->cells;
    uint8_t *bad = NULL;
    HK_TRY(hk_calloc((size_t)(c->n ? c->n : 1), 1, &bad));
    for (;;) {
        int64_t nbad = 0;
#pragma omp parallel for schedule(static) reduction(+ : nbad)
        for (int64_t e = 0; e < c->n; e++) {
            bad[e] = cell_moved(E, e) && !(min_det(E, e) > 0);
            nbad += bad[e];
        }
        if (!nbad) break;
        for (int64_t e = 0; e < c->n; e++) {
            if (!bad[e]) continue;
            const eltab *t = &E->tab[c->type[e]];
            const int32_t *qn = E->q.nodes + E->q.ptr[e];
            for (int i = t->nc; i < t->nn; i++) {
                int64_t id = qn[i];
                if (!E->moved[id - E->nv]) continue;
                int32_t cn[8];
                int k = node_corners(E, id, cn);
                if (k < 0) {
                    k = t->nk[i];
                    for (int a = 0; a < k; a++)
                        cn[a] = qn[t->cn[i][a]];
                }
                straight_point(E, cn, k, E->x + 3 * id);
                E->moved[id - E->nv] = 0;
                st->straight++;
            }
        }
    }
fail:
    free(bad);
    return ierr;
}

/* The higher-order nodes of facet e of f into qn (corners first); 0 when the facet's type has
 * no quadratic counterpart or a node is not the cells'. */
static int facet_nodes(const elev *E, const hk_elems *f, int64_t e, int32_t *qn)
{
    const eltab *t = &E->tab[f->type[e]];
    const int32_t *nd = f->nodes + f->ptr[e];
    if (t->quad == HK_EL_COUNT) return 0;
    for (int i = 0; i < t->nc; i++)
        qn[i] = nd[i];
    for (int i = t->nc; i < t->nn; i++) {
        int64_t id = lookup(E, t, i, nd);
        if (id < 0) return 0;
        qn[i] = (int32_t)id;
    }
    return 1;
}

/* Facets (or points, lines) of a boundary group raised to second order; those whose nodes are
 * not the cells' are dropped. In parallel: which are kept, their places, then their nodes. */
static int elevate_facets(const elev *E, hk_elems *f, int64_t *dropped)
{
    int ierr = 0;
    hk_elems q;
    int64_t *kept = NULL;
    memset(&q, 0, sizeof q);
    HK_TRY(hk_calloc((size_t)f->n + 1, sizeof *kept, &kept));
    HK_TRY(hk_calloc((size_t)f->n + 1, sizeof *q.ptr, &q.ptr));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < f->n; e++) {
        int32_t qn[27];
        if (facet_nodes(E, f, e, qn)) kept[e + 1] = 1, q.ptr[e + 1] = E->tab[f->type[e]].nn;
    }
    hk_prefix_sum(kept, f->n);
    hk_prefix_sum(q.ptr, f->n); /* by the old index: the kept ones' rows move down below */
    q.n = kept[f->n];
    *dropped += f->n - q.n;
    const int64_t nq = q.ptr[f->n];
    HK_TRY(hk_malloc((size_t)(q.n ? q.n : 1), &q.type));
    HK_TRY(hk_malloc((size_t)(q.n ? q.n : 1) * sizeof *q.tag, &q.tag));
    HK_TRY(hk_malloc((size_t)(nq ? nq : 1) * sizeof *q.nodes, &q.nodes));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < f->n; e++) {
        if (kept[e + 1] == kept[e]) continue;
        const int64_t k = kept[e];
        q.type[k] = (uint8_t)E->tab[f->type[e]].quad;
        q.tag[k] = f->tag[e];
        facet_nodes(E, f, e, q.nodes + q.ptr[e]);
    }
    /* the rows by the new index (through f's own rows, no longer needed) */
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < f->n; e++)
        if (kept[e + 1] > kept[e]) f->ptr[kept[e]] = q.ptr[e];
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < q.n; k++)
        q.ptr[k] = f->ptr[k];
    q.ptr[q.n] = nq;
    hk_elems_free(f);
    *f = q;
    memset(&q, 0, sizeof q);
fail:
    free(kept);
    hk_elems_free(&q);
    return ierr;
}

int hk_mesh_elevate(hk_mesh *m, int incomplete, const hk_elev_geom *g, hk_elev_stats *st)
{
    int ierr = 0;
    eltab *tab = NULL;
    elev E;
    memset(&E, 0, sizeof E);
    memset(st, 0, sizeof *st);
    int32_t *cls = NULL;
    int64_t *cent = NULL;
    const hk_elems *c = &m->cells;
    E.m = m;
    E.nv = m->nnodes;
    HK_TRY_CHECK(c->n < INT32_MAX / 32 && m->nnodes < INT32_MAX, HK_ERR_UNSUPPORTED,
                 "hk_mesh_elevate: %lld cells and %lld nodes; raising the order takes fewer "
                 "than 2^26 cells",
                 (long long)c->n, (long long)m->nnodes);
    HK_TRY(hk_calloc(HK_EL_COUNT, sizeof *tab, &tab));
    for (int t = 0; t < HK_EL_COUNT; t++)
        HK_TRY(build_tab((hk_eltype)t, incomplete, &tab[t]));
    E.tab = tab;
    int64_t bad = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t e = 0; e < c->n; e++)
        if (tab[c->type[e]].quad == HK_EL_COUNT || c->type[e] == HK_EL_POINT1)
            bad = e < bad ? e : bad;
    HK_TRY_CHECK(bad == INT64_MAX, HK_ERR_ARG,
                 "hk_mesh_elevate: cell %lld is a %s, not a linear cell; give a linear mesh",
                 (long long)c->tag[bad], hk_eltype_get((hk_eltype)c->type[bad])->name);

    /* the quadratic cells: corners as they were, the other nodes from the keys */
    E.q.n = c->n;
    HK_TRY(hk_malloc((size_t)(c->n ? c->n : 1), &E.q.type));
    HK_TRY(hk_malloc((size_t)(c->n + 1) * sizeof *E.q.ptr, &E.q.ptr));
    HK_TRY(hk_calloc((size_t)c->n + 1, sizeof *cent, &cent));
    E.q.ptr[0] = 0;
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++) {
        const eltab *t = &tab[c->type[e]];
        E.q.type[e] = (uint8_t)t->quad;
        E.q.ptr[e + 1] = t->nn;
        cent[e + 1] = t->nn > t->nc && t->nk[t->nn - 1] == 8;
    }
    hk_prefix_sum(E.q.ptr, c->n);
    hk_prefix_sum(cent, c->n);
    HK_TRY(hk_malloc((size_t)(E.q.ptr[c->n] ? E.q.ptr[c->n] : 1) * sizeof *E.q.nodes, &E.q.nodes));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++)
        memcpy(E.q.nodes + E.q.ptr[e], c->nodes + c->ptr[e],
               (size_t)tab[c->type[e]].nc * sizeof *E.q.nodes);
    HK_TRY(keyset_build(&E.edges, 2, c, tab, E.nv, E.q.nodes, E.q.ptr, E.nv));
    E.ne = E.edges.n;
    HK_TRY(keyset_build(&E.faces, 4, c, tab, E.nv, E.q.nodes, E.q.ptr, E.nv + E.ne));
    E.nf = E.faces.n;
    E.ncent = cent[c->n];
    const int64_t nho = E.ne + E.nf + E.ncent, ntot = E.nv + nho;
    HK_TRY_CHECK(ntot < INT32_MAX, HK_ERR_UNSUPPORTED,
                 "hk_mesh_elevate: the quadratic mesh would have %lld nodes; Hooke takes < 2^31",
                 (long long)ntot);
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++)
        if (cent[e + 1] > cent[e]) {
            const eltab *t = &tab[c->type[e]];
            E.q.nodes[E.q.ptr[e] + t->nn - 1] = (int32_t)(E.nv + E.ne + E.nf + cent[e]);
        }
    st->edges = E.ne, st->faces = E.nf, st->centres = E.ncent;

    /* positions: straight edges, then projected; faces and centres interpolate the edges */
    HK_TRY(hk_malloc((size_t)ntot * 3 * sizeof *E.x, &E.x));
    HK_TRY(hk_calloc((size_t)(nho ? nho : 1), 1, &E.moved));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < E.nv; i++)
        memcpy(E.x + 3 * i, m->coords + 3 * i, 3 * sizeof *E.x);
#pragma omp parallel for schedule(static)
    for (int64_t u = 0; u < E.ne; u++) {
        int32_t cn[2] = {E.edges.first[u], E.edges.ukey[u]};
        straight_point(&E, cn, 2, E.x + 3 * (E.nv + u));
    }
    if (g && g->n) {
        HK_TRY(hk_malloc((size_t)(E.ne + E.nf ? E.ne + E.nf : 1) * sizeof *cls, &cls));
#pragma omp parallel for schedule(static)
        for (int64_t h = 0; h < E.ne + E.nf; h++)
            cls[h] = -1;
        /* entity by entity (a node on several goes onto the last), each one's facets in
         * parallel: a node's facets on one entity all write its index */
        for (int k = 0; k < g->n; k++) {
            const hk_elems *f = &g->ent[k].elems;
#pragma omp parallel for schedule(static)
            for (int64_t e = 0; e < f->n; e++) {
                const eltab *t = &tab[f->type[e]];
                for (int i = t->nc; i < t->nn; i++) {
                    int64_t id = lookup(&E, t, i, f->nodes + f->ptr[e]);
                    if (id >= 0) {
#pragma omp atomic write
                        cls[id - E.nv] = k;
                    }
                }
            }
        }
        HK_TRY(project_range(&E, g, cls, E.nv, E.nv + E.ne, st));
    }
#pragma omp parallel for schedule(static)
    for (int64_t u = 0; u < E.nf; u++) {
        int64_t o = E.faces.owner[u];
        E.moved[E.ne + u] =
            (uint8_t)interp_node(&E, o / 32, (int)(o % 32), E.x + 3 * (E.nv + E.ne + u));
    }
    if (g && g->n && E.nf) HK_TRY(project_range(&E, g, cls, E.nv + E.ne, E.nv + E.ne + E.nf, st));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++)
        if (cent[e + 1] > cent[e]) {
            const eltab *t = &tab[c->type[e]];
            int64_t id = E.nv + E.ne + E.nf + cent[e];
            E.moved[id - E.nv] = (uint8_t)interp_node(&E, e, t->nn - 1, E.x + 3 * id);
        }
    HK_TRY(keep_valid(&E, st));
    if (m->dim == 2) {
#pragma omp parallel for schedule(static)
        for (int64_t i = E.nv; i < ntot; i++)
            E.x[3 * i + 2] = 0;
    }

    /* boundary groups on the same nodes */
    for (int b = 0; b < m->nboundaries; b++) {
        hk_group *gr = &m->boundaries[b];
        HK_TRY(elevate_facets(&E, &gr->elems, &st->dropped));
        HK_TRY_CHECK(gr->elems.n > 0, HK_ERR_MODEL,
                     "boundary group '%s' (dimension %d) has no element on the faces of the "
                     "cells; put its entities on a region's boundary or remove the group",
                     gr->name, gr->dim);
        HK_TRY(hk_group_collect_nodes(gr, ntot));
    }
    if (g && g->raise_entities)
        for (int k = 0; k < g->n; k++) {
            int64_t off_mesh = 0;
            HK_TRY(elevate_facets(&E, &g->ent[k].elems, &off_mesh));
        }
    E.q.tag = m->cells.tag; /* the cells keep their tags */
    m->cells.tag = NULL;
    hk_elems_free(&m->cells);
    m->cells = E.q;
    memset(&E.q, 0, sizeof E.q);
    free(m->coords);
    m->coords = E.x;
    E.x = NULL;
    m->nnodes = ntot;
fail:
    free(tab);
    free(cls);
    free(cent);
    free(E.x);
    free(E.moved);
    hk_elems_free(&E.q);
    keyset_free(&E.edges);
    keyset_free(&E.faces);
    return ierr;
}
