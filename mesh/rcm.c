/* Reverse Cuthill-McKee renumbering of mesh nodes (George & Liu's pseudo-peripheral start,
 * neighbours visited by increasing degree) on the graph of the cells' corners, the other nodes
 * placed beside their corners; applied to coordinates, cells and groups. */
#include <omp.h>

#include "mesh_impl.h"

/* A graph: its lists stored (ptr, adj), or those of a generated grid's points made when asked
 * (adj NULL): a point's class, whether it is at the low or the high end of each axis, picks
 * the offsets to its neighbours. */
typedef struct {
    int64_t n;
    int64_t *ptr; /* n + 1 */
    int32_t *adj; /* neighbours of node i: adj[ptr[i] .. ptr[i+1]) */
    int64_t C[3]; /* a grid's points along each axis */
    uint8_t *cls; /* a grid's points' classes (grid_class), found once, without divisions */
    int kuhn;     /* a grid's cells split along their diagonal (tetrahedra, triangles) */
    int8_t nnb[64];
    int32_t off[64][26];
} graph;

enum { GRID_MAXDEG = 26 };

static int grid_class(const graph *g, int64_t v, int64_t *I)
{
    I[0] = v % g->C[0], I[1] = v / g->C[0] % g->C[1], I[2] = v / (g->C[0] * g->C[1]);
    int c = 0;
    for (int a = 0; a < 3; a++)
        c |= ((I[a] == 0) | (I[a] == g->C[a] - 1) << 1) << (2 * a);
    return c;
}

/* The classes of a grid's points, point by point in index order. */
static int grid_classes(graph *g)
{
    HK_CALL(hk_malloc((size_t)(g->n ? g->n : 1), &g->cls));
    const int64_t C0 = g->C[0], C1 = g->C[1], C2 = g->C[2];
#pragma omp parallel for schedule(static) collapse(2)
    for (int64_t k = 0; k < C2; k++)
        for (int64_t j = 0; j < C1; j++) {
            const int cjk = ((j == 0) | (j == C1 - 1) << 1) << 2 | ((k == 0) | (k == C2 - 1) << 1)
                                                                       << 4;
            uint8_t *c = g->cls + C0 * (j + C1 * k);
            for (int64_t i = 0; i < C0; i++)
                c[i] = (uint8_t)(cjk | (i == 0) | (i == C0 - 1) << 1);
        }
    return 0;
}

/* Node u's neighbours: *nb, count returned (buf: room for a grid point's). */
static inline int64_t neighbours(const graph *g, int32_t u, int32_t *buf, const int32_t **nb)
{
    if (g->adj) {
        *nb = g->adj + g->ptr[u];
        return g->ptr[u + 1] - g->ptr[u];
    }
    const int c = g->cls[u];
    for (int k = 0; k < g->nnb[c]; k++)
        buf[k] = u + g->off[c][k];
    *nb = buf;
    return g->nnb[c];
}

/* The cells' corners (their first ncorners nodes) by cell: corner k of cell e is
 * nodes[ptr[e] + k] for k < nc[type]. */
static int ncorners_of(const hk_elems *c, int64_t e)
{
    return hk_eltype_ncorners((hk_eltype)c->type[e]);
}

/* Corner graph: corners i ~ j when they share a cell, on the corners' own numbering (cid:
 * node -> corner index, -1 for other nodes), each list in increasing order: the same graph on
 * any number of threads. Each cell appends its other corners to each corner's list (one
 * pass over the cells, no corner -> cell lists), then each list drops its repeats. */
static int build_graph(const hk_mesh *m, const int32_t *cid, int64_t n, graph *g)
{
    int ierr = 0;
    const hk_elems *c = &m->cells;
    int64_t *cnt = NULL, *fill = NULL;
    int32_t *raw = NULL;
    g->n = n;
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *cnt, &cnt));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++) {
        const int nc = ncorners_of(c, e);
        for (int k = 0; k < nc; k++) {
#pragma omp atomic
            cnt[cid[c->nodes[c->ptr[e] + k]] + 1] += nc - 1;
        }
    }
    hk_prefix_sum(cnt, n);
    HK_TRY(hk_malloc((size_t)(cnt[n] ? cnt[n] : 1) * sizeof *raw, &raw));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *fill, &fill));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        fill[i] = cnt[i];
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++) {
        const int nc = ncorners_of(c, e);
        const int32_t *nd = c->nodes + c->ptr[e];
        int32_t kc[8];
        for (int k = 0; k < nc; k++)
            kc[k] = cid[nd[k]];
        for (int k = 0; k < nc; k++) {
            int64_t pos;
#pragma omp atomic capture
            {
                pos = fill[kc[k]];
                fill[kc[k]] += nc - 1;
            }
            for (int a = 0; a < nc; a++)
                if (a != k) raw[pos++] = kc[a];
        }
    }
    /* each list without repeats (a mark per corner and thread), sorted; its length in fill */
    int fail = 0;
#pragma omp parallel reduction(| : fail)
    {
        int32_t *mark = malloc((size_t)(n ? n : 1) * sizeof *mark);
        fail |= !mark;
        for (int64_t i = 0; mark && i < n; i++)
            mark[i] = -1;
#pragma omp for schedule(dynamic, 1024)
        for (int64_t i = 0; i < n; i++) {
            int64_t w = cnt[i];
            for (int64_t k = cnt[i]; mark && k < cnt[i + 1]; k++) {
                const int32_t v = raw[k];
                if (v == i || mark[v] == (int32_t)i) continue;
                mark[v] = (int32_t)i;
                raw[w++] = v;
            }
            hk_sort_i32(raw + cnt[i], w - cnt[i]);
            fill[i] = w - cnt[i];
        }
        free(mark);
    }
    HK_TRY_CHECK(!fail, HK_ERR_MEMORY, "out of host memory renumbering the mesh nodes");
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *g->ptr, &g->ptr));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        g->ptr[i + 1] = fill[i];
    hk_prefix_sum(g->ptr, n);
    HK_TRY(hk_malloc((size_t)(g->ptr[n] ? g->ptr[n] : 1) * sizeof *g->adj, &g->adj));
#pragma omp parallel for schedule(dynamic, 1024)
    for (int64_t i = 0; i < n; i++)
        memcpy(g->adj + g->ptr[i], raw + cnt[i], (size_t)fill[i] * sizeof *g->adj);
fail:
    free(cnt);
    free(fill);
    free(raw);
    return ierr;
}

/* The corner graph of a generated grid (hk_mesh_grid_slab's cells, C[a] corners along axis a,
 * C[2] = 1 in 2D), without its cells or stored lists: the corners are the grid's points,
 * numbered x fastest (as the generator numbers its nodes), and two share a cell when they are
 * neighbours across a cell: any of the 26 (8 in 2D) around for hexahedra and quadrilaterals;
 * for the Kuhn split of a cube into 6 tetrahedra along its 000-111 diagonal those whose offset
 * is all 0 or 1, or all 0 or -1; for triangles cut along their square's 00-11 diagonal the 4
 * across edges and the 2 along that diagonal. The offsets of each class of point, those that
 * stay in the grid. */
static void grid_graph(const int64_t *C, hk_eltype t, graph *g)
{
    memset(g, 0, sizeof *g);
    g->n = C[0] * C[1] * C[2];
    memcpy(g->C, C, sizeof g->C);
    g->kuhn = t == HK_EL_TET4 || t == HK_EL_TET10 || t == HK_EL_TRI3 || t == HK_EL_TRI6;
    for (int c = 0; c < 64; c++)
        for (int dz = -1; dz <= 1; dz++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    const int d[3] = {dx, dy, dz};
                    const int lo = dx < dy ? (dx < dz ? dx : dz) : (dy < dz ? dy : dz);
                    const int hi = dx > dy ? (dx > dz ? dx : dz) : (dy > dz ? dy : dz);
                    int ok = lo || hi;
                    if (t == HK_EL_TET4 || t == HK_EL_TET10)
                        ok &= lo >= 0 || hi <= 0;
                    else if (t == HK_EL_TRI3 || t == HK_EL_TRI6)
                        ok &= dz == 0 && (dx == 0 || dy == 0 || dx == dy);
                    else if (t < HK_EL_TET4) /* quadrilaterals */
                        ok &= dz == 0;
                    for (int a = 0; a < 3; a++) /* not off the low or the high end */
                        ok &= !(d[a] < 0 && (c >> (2 * a) & 1)) && !(d[a] > 0 && (c >> (2 * a) & 2));
                    if (ok)
                        g->off[c][g->nnb[c]++] = (int32_t)(dx + C[0] * (dy + C[1] * dz));
                }
}

/* The BFS distance between grid points I and J: the most steps along one axis, or (Kuhn) the
 * most up plus the most down (a step goes up or down on any axes, not both). */
static int64_t grid_dist(const graph *g, const int64_t *I, const int64_t *J)
{
    int64_t up = 0, down = 0;
    for (int a = 0; a < 3; a++) {
        const int64_t d = J[a] - I[a];
        up = d > up ? d : up;
        down = -d > down ? -d : down;
    }
    return g->kuhn ? up + down : up > down ? up : down;
}

static int64_t grid_degree(const graph *g, int64_t v)
{
    return g->nnb[g->cls[v]];
}

/* The grid's start as rcm_order's George & Liu search finds it, without its walks: a BFS from
 * s has its last level at s's greatest distance (a grid corner's: the distance grows along
 * each axis to an end), the points at that distance; the least by degree then index of those,
 * or of every point, found in one pass. */
static int64_t grid_least(const graph *g, const int64_t *S, int64_t at)
{
    const int64_t n = g->n, C0 = g->C[0], C1 = g->C[1], C2 = g->C[2];
    int64_t best = INT64_MAX;
#pragma omp parallel for schedule(static) collapse(2) reduction(min : best)
    for (int64_t k = 0; k < C2; k++)
        for (int64_t j = 0; j < C1; j++)
            for (int64_t i = 0; i < C0; i++) {
                const int64_t I[3] = {i, j, k}, v = i + C0 * (j + C1 * k);
                if (S && grid_dist(g, S, I) != at) continue;
                const int64_t key = g->nnb[g->cls[v]] * n + v;
                best = key < best ? key : best;
            }
    return best % n;
}

static int64_t grid_ecc(const graph *g, const int64_t *S)
{
    int64_t e = 0;
    for (int k = 0; k < 8; k++) {
        const int64_t J[3] = {k & 1 ? g->C[0] - 1 : 0, k & 2 ? g->C[1] - 1 : 0,
                              k & 4 ? g->C[2] - 1 : 0};
        const int64_t d = grid_dist(g, S, J);
        e = d > e ? d : e;
    }
    return e;
}

static int64_t grid_start(const graph *g)
{
    int64_t s = grid_least(g, NULL, 0), S[3], B[3];
    grid_class(g, s, S);
    int64_t ecc = grid_ecc(g, S);
    for (int it = 0; it < 8; it++) {
        const int64_t best = grid_least(g, S, ecc);
        grid_class(g, best, B);
        const int64_t e2 = grid_ecc(g, B);
        if (e2 <= ecc) break;
        ecc = e2, s = best;
        memcpy(S, B, sizeof S);
    }
    return s;
}

static int64_t degree(const graph *g, int64_t i)
{
    return g->adj ? g->ptr[i + 1] - g->ptr[i] : grid_degree(g, i);
}

/* A thread's nodes of the next level. */
typedef struct {
    int32_t *v;
    int64_t n, cap;
} level_part;

enum { MAX_PARTS = 256 };

/* v appended to a thread's part; 1 out of memory. */
static int part_push(level_part *p, int32_t v)
{
    if (p->n == p->cap) {
        int64_t c = p->cap ? 2 * p->cap : 4096;
        int32_t *q = realloc(p->v, (size_t)c * sizeof *q);
        if (!q) return 1;
        p->v = q, p->cap = c;
    }
    p->v[p->n++] = v;
    return 0;
}

/* A walk's wide levels run in one parallel region (two barriers a level, no region forked per
 * level: on cores shared with other processes each fork, join or barrier can wait for a
 * sleeping thread to be woken, about as long as walking a few thousand nodes), each thread
 * taking a run of the level; a level is wide from this many nodes. */
static int64_t wide_level = HK_RCM_WIDE_LEVEL;

int64_t hk_mesh_rcm_wide_level(int64_t nodes)
{
    const int64_t old = wide_level;
    wide_level = nodes > 0 ? nodes : HK_RCM_WIDE_LEVEL;
    return old;
}

static int walk_threads(void)
{
    return omp_get_max_threads() < MAX_PARTS ? omp_get_max_threads() : MAX_PARTS;
}

/* A wide level's join: thread t's part goes at *off (the level's end on entry) after the
 * parts of the threads before it, *tot the next level's size; 1 where a thread ran out of
 * memory (its count -1). */
static int join_counts(const int64_t *cnt, int t, int T, int64_t *off, int64_t *tot)
{
    int bad = 0;
    for (int q = 0; q < T; q++) {
        bad |= cnt[q] < 0;
        *off += q < t ? cnt[q] : 0, *tot += cnt[q];
    }
    return bad;
}

/* The BFS levels from order[a .. b) over unnumbered nodes (done 0) not stamped in lvl, in
 * one parallel region: each thread claims its run's next nodes, then the parts are joined in
 * thread order. Appends them at order + b; *levels += the levels walked, a .. b's included,
 * *last = the start of the last one; returns the end of the order (-1 out of memory). */
static int64_t bfs_wide(const graph *g, const uint8_t *done, int64_t *lvl, int64_t stamp,
                        int32_t *order, int64_t a, int64_t b, int64_t *levels, int64_t *last,
                        level_part *parts)
{
    int64_t cnt[MAX_PARTS], end = b, nlev = 0, lstart = a;
    int fail = 0;
#pragma omp parallel num_threads(walk_threads())
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        level_part *p = &parts[t];
        int64_t la = a, lb = b, add = 0, lfirst = a;
        while (la < lb) {
            int mine = 0;
            p->n = 0;
            for (int64_t h = la + (lb - la) * t / T; h < la + (lb - la) * (t + 1) / T && !mine;
                 h++) {
                const int32_t u = order[h];
                for (int64_t k = g->ptr[u]; k < g->ptr[u + 1] && !mine; k++) {
                    const int32_t v = g->adj[k];
                    int64_t old = lvl[v];
                    if (done[v] || old == stamp ||
                        !__atomic_compare_exchange_n(&lvl[v], &old, stamp, 0, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED))
                        continue;
                    mine = part_push(p, v);
                }
            }
            cnt[t] = mine ? -1 : p->n;
#pragma omp barrier
            int64_t off = lb, tot = 0;
            if (join_counts(cnt, t, T, &off, &tot)) {
                if (t == 0) fail = 1;
                break;
            }
            memcpy(order + off, p->v, (size_t)p->n * sizeof *order);
#pragma omp barrier
            lfirst = la, la = lb, lb += tot, add++;
        }
        if (t == 0) end = lb, nlev = add, lstart = lfirst;
    }
    if (fail) return -1;
    *levels += nlev;
    *last = lstart;
    return end;
}

/* BFS from s over unnumbered nodes (done 0), level by level, the wide levels in parallel
 * (bfs_wide): returns the number of levels (-1 out of memory), fills order with the visited
 * nodes (count in *cnt) and the start of the last level in *last. The levels are the same sets
 * on any number of threads, the order within one is not. Marks visited nodes with stamp in
 * lvl[]. */
static int64_t bfs_levels(const graph *g, int64_t s, const uint8_t *done, int64_t *lvl,
                          int64_t stamp, int32_t *order, int64_t *cnt, int64_t *last,
                          level_part *parts)
{
    int64_t tail = 0, nlev = 0, lstart = 0, lprev = 0;
    order[tail++] = (int32_t)s;
    lvl[s] = stamp;
    while (lstart < tail) {
        const int64_t lend = tail;
        lprev = lstart;
        nlev++;
        if (lend - lstart >= wide_level && walk_threads() > 1) { /* this level and the rest */
            nlev--;
            tail = bfs_wide(g, done, lvl, stamp, order, lstart, lend, &nlev, &lprev, parts);
            if (tail < 0) return -1;
            break;
        }
        for (int64_t h = lstart; h < lend; h++) {
            const int32_t u = order[h];
            for (int64_t k = g->ptr[u]; k < g->ptr[u + 1]; k++) {
                const int32_t v = g->adj[k];
                if (done[v] || lvl[v] == stamp) continue;
                lvl[v] = stamp;
                order[tail++] = v;
            }
        }
        lstart = lend;
    }
    *cnt = tail;
    *last = lprev;
    return nlev;
}

/* Sort a few nodes by (degree, index): neighbour lists are short, insertion sort (on keys
 * found once for a list that fits, degree then index in one number). */
static void sort_by_degree(const graph *g, int32_t *v, int64_t n)
{
    enum { FEW = 32 };
    if (n <= FEW) {
        int64_t key[FEW];
        for (int64_t i = 0; i < n; i++)
            key[i] = degree(g, v[i]) << 32 | (uint32_t)v[i];
        for (int64_t i = 1; i < n; i++) {
            const int64_t x = key[i];
            int64_t j = i - 1;
            for (; j >= 0 && key[j] > x; j--)
                key[j + 1] = key[j];
            key[j + 1] = x;
        }
        for (int64_t i = 0; i < n; i++)
            v[i] = (int32_t)(key[i] & 0xffffffff);
        return;
    }
    for (int64_t i = 1; i < n; i++) {
        int32_t x = v[i];
        int64_t dx = degree(g, x), j = i - 1;
        while (j >= 0 && (degree(g, v[j]) > dx || (degree(g, v[j]) == dx && v[j] > x))) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
}

int hk_mesh_permute_nodes(hk_mesh *m, const int32_t *newid)
{
    double *xc = NULL;
    HK_CALL(hk_malloc((size_t)(3 * (m->nnodes ? m->nnodes : 1)) * sizeof *xc, &xc));
    /* newid is a permutation: every thread writes its own places */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m->nnodes; i++)
        memcpy(xc + 3 * (int64_t)newid[i], m->coords + 3 * i, 3 * sizeof *xc);
    free(m->coords);
    m->coords = xc;
    hk_elems *c = &m->cells;
    const int64_t nk = c->n ? c->ptr[c->n] : 0;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nk; k++)
        c->nodes[k] = newid[c->nodes[k]];
    /* the coarse mesh's corners are nodes of this one */
    const int64_t nck = m->coarse.n ? m->coarse.ptr[m->coarse.n] : 0;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nck; k++)
        m->coarse.nodes[k] = newid[m->coarse.nodes[k]];
    for (int gi = 0; gi < m->nboundaries; gi++) {
        hk_group *g = &m->boundaries[gi];
        hk_elems *f = &g->elems;
        const int64_t nf = f->n ? f->ptr[f->n] : 0;
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < nf; k++)
            f->nodes[k] = newid[f->nodes[k]];
        HK_CALL(hk_group_collect_nodes(g, m->nnodes));
    }
    return 0;
}

/* The Cuthill-McKee levels from order[a .. b) on (numbered: pos, done), in one parallel
 * region. The serial walk appends each node's unnumbered neighbours, by degree then index, in
 * the order of the level, so a node of the next level follows the level's first node next to
 * it (its parent), beside its siblings by degree and index. Each thread takes a run of the
 * level and lists, parent by parent, the unnumbered neighbours that have no neighbour in the
 * level before the parent, sorted by degree and index; the runs joined in thread order are
 * the serial walk's next level, on any number of threads. Returns the end of the order (-1
 * out of memory). */
static int64_t cm_wide(const graph *g, int32_t *order, int32_t *pos, uint8_t *done, int64_t a,
                       int64_t b, level_part *parts)
{
    int64_t cnt[MAX_PARTS], end = b;
    int fail = 0;
#pragma omp parallel num_threads(walk_threads())
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        level_part *p = &parts[t];
        int64_t la = a, lb = b;
        while (la < lb) {
            int mine = 0;
            p->n = 0;
            for (int64_t h = la + (lb - la) * t / T; h < la + (lb - la) * (t + 1) / T && !mine;
                 h++) {
                const int32_t u = order[h];
                const int64_t first = p->n;
                int32_t ub[GRID_MAXDEG], vb[GRID_MAXDEG];
                const int32_t *un, *vn;
                const int64_t nu = neighbours(g, u, ub, &un);
                for (int64_t k = 0; k < nu && !mine; k++) {
                    const int32_t v = un[k];
                    if (done[v]) continue;
                    int parent = 1; /* u, unless a neighbour of v in the level comes first */
                    const int64_t nv = neighbours(g, v, vb, &vn);
                    for (int64_t j = 0; j < nv && parent; j++) {
                        const int32_t pw = pos[vn[j]];
                        parent = pw < la || pw >= h;
                    }
                    if (parent) mine = part_push(p, v);
                }
                sort_by_degree(g, p->v + first, p->n - first);
            }
            cnt[t] = mine ? -1 : p->n;
#pragma omp barrier
            int64_t off = lb, tot = 0;
            if (join_counts(cnt, t, T, &off, &tot)) {
                if (t == 0) fail = 1;
                break;
            }
            for (int64_t i = 0; i < p->n; i++) {
                const int32_t v = p->v[i];
                order[off + i] = v;
                pos[v] = (int32_t)(off + i);
                done[v] = 1;
            }
#pragma omp barrier
            la = lb, lb += tot;
        }
        if (t == 0) end = lb;
    }
    return fail ? -1 : end;
}

/* The Cuthill-McKee walk from order[a] (numbered), its narrow levels on this thread, from its
 * first wide one on cm_wide; returns the end of the order (-1 out of memory). */
static int64_t cm_walk(const graph *g, int32_t *order, int32_t *pos, uint8_t *done, int64_t a,
                       level_part *parts)
{
    int64_t numbered = a + 1;
    for (int64_t b = numbered; a < b; a = b, b = numbered) {
        if (b - a >= wide_level && walk_threads() > 1) /* this level and the rest */
            return cm_wide(g, order, pos, done, a, b, parts);
        for (int64_t h = a; h < b; h++) {
            const int32_t u = order[h];
            const int64_t first = numbered;
            int32_t ub[GRID_MAXDEG];
            const int32_t *un;
            const int64_t nu = neighbours(g, u, ub, &un);
            for (int64_t k = 0; k < nu; k++) {
                const int32_t v = un[k];
                if (done[v]) continue;
                done[v] = 1;
                order[numbered++] = v;
            }
            sort_by_degree(g, order + first, numbered - first);
            for (int64_t k = first; k < numbered; k++)
                pos[order[k]] = (int32_t)k;
        }
    }
    return numbered;
}

/* Reverse Cuthill-McKee order of the graph's vertices into order[0..n). */
static int rcm_order(const graph *g, int32_t *order)
{
    int ierr = 0;
    const int64_t n = g->n;
    int64_t *lvl = NULL, *bydeg = NULL, numbered = 0;
    int32_t *tmp = NULL, *cand = NULL, *pos = NULL;
    uint8_t *done = NULL;
    level_part parts[MAX_PARTS];
    memset(parts, 0, sizeof parts);
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *pos, &pos));
    HK_TRY(hk_calloc((size_t)(n ? n : 1), 1, &done));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        pos[i] = -1;
    if (!g->adj) { /* a grid: one component, its start from its structure */
        const int64_t s = grid_start(g);
        pos[s] = 0, order[0] = (int32_t)s, done[s] = 1;
        numbered = cm_walk(g, order, pos, done, 0, parts);
        HK_TRY_CHECK(numbered == n, numbered < 0 ? HK_ERR_MEMORY : HK_ERR_INTERNAL,
                     numbered < 0 ? "out of host memory renumbering the mesh nodes"
                                  : "the grid's Cuthill-McKee walk numbered %lld of %lld points",
                     (long long)numbered, (long long)n);
        goto fail; /* done */
    }
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *lvl, &lvl));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *tmp, &tmp));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        lvl[i] = -1;
    /* the nodes by degree, then index (a counting sort): each component's start is the first
     * one not yet numbered, found without scanning every node again */
    int64_t maxdeg = 0;
#pragma omp parallel for schedule(static) reduction(max : maxdeg)
    for (int64_t i = 0; i < n; i++)
        maxdeg = degree(g, i) > maxdeg ? degree(g, i) : maxdeg;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *cand, &cand));
    /* blocks of nodes counted on their own (the threads' blocks, when their counts are few),
     * then each block's nodes placed after the lower degrees' and the blocks before it */
    const int64_t nd = maxdeg + 1;
    const int nb = n < (1 << 16) || nd * omp_get_max_threads() > (1 << 22) ? 1
                   : omp_get_max_threads() < MAX_PARTS ? omp_get_max_threads()
                                                        : MAX_PARTS;
    HK_TRY(hk_calloc((size_t)(nd * nb + 1), sizeof *bydeg, &bydeg));
#pragma omp parallel for schedule(static, 1) if (nb > 1)
    for (int b = 0; b < nb; b++)
        for (int64_t i = n * b / nb; i < n * (b + 1) / nb; i++)
            bydeg[degree(g, i) * nb + b + 1]++;
    for (int64_t k = 0; k < nd * nb; k++) /* (degree, block) in order */
        bydeg[k + 1] += bydeg[k];
#pragma omp parallel for schedule(static, 1) if (nb > 1)
    for (int b = 0; b < nb; b++)
        for (int64_t i = n * b / nb; i < n * (b + 1) / nb; i++)
            cand[bydeg[degree(g, i) * nb + b]++] = (int32_t)i;
    int64_t stamp = 0, scan = 0;
    while (numbered < n) {
        /* start: the unnumbered node of least degree (first in index order), then walk to
         * a pseudo-peripheral node (George & Liu) */
        while (done[cand[scan]])
            scan++;
        int64_t s = cand[scan];
        int64_t cnt, last, ecc = bfs_levels(g, s, done, lvl, stamp++, tmp, &cnt, &last, parts);
        HK_TRY_CHECK(ecc >= 0, HK_ERR_MEMORY, "out of host memory renumbering the mesh nodes");
        for (int it = 0; it < 8; it++) {
            /* the last level's node of least degree, then least index (its order varies) */
            int64_t best = tmp[last];
            for (int64_t k = last; k < cnt; k++)
                if (degree(g, tmp[k]) < degree(g, best) ||
                    (degree(g, tmp[k]) == degree(g, best) && tmp[k] < best))
                    best = tmp[k];
            int64_t cnt2, last2;
            int64_t e2 = bfs_levels(g, best, done, lvl, stamp++, tmp, &cnt2, &last2, parts);
            HK_TRY_CHECK(e2 >= 0, HK_ERR_MEMORY, "out of host memory renumbering the mesh nodes");
            if (e2 <= ecc) break;
            ecc = e2, s = best, cnt = cnt2, last = last2;
        }
        /* Cuthill-McKee from s, a level at a time */
        pos[s] = (int32_t)numbered;
        order[numbered++] = (int32_t)s;
        done[s] = 1;
        numbered = cm_walk(g, order, pos, done, numbered - 1, parts);
        HK_TRY_CHECK(numbered >= 0, HK_ERR_MEMORY, "out of host memory renumbering the mesh nodes");
    }
fail:
    free(lvl);
    free(tmp);
    free(pos);
    free(done);
    free(bydeg);
    free(cand);
    for (int t = 0; t < MAX_PARTS; t++)
        free(parts[t].v);
    return ierr;
}

/* Cuthill-McKee on the graph of the cells' corners; each other node (on an edge, a face, in a
 * cell) follows the corner it lies next to that comes first, in the order of the node
 * numbers; then the whole order reversed. For a linear mesh this is RCM on the node graph;
 * for a quadratic one it is close to it (a mid-edge node sits beside its edge's first corner)
 * at a fraction of the cost: the corner graph is several times smaller than the node graph. */
static int rcm_numbers(const hk_mesh *m, const int64_t *grid, hk_eltype t, int32_t **newid_out);

int hk_mesh_renumber_rcm(hk_mesh *m)
{
    HK_CHECK(m && (m->nnodes == 0 || m->coords), HK_ERR_ARG,
             "hk_mesh_renumber_rcm: the mesh is NULL or has no coordinates");
    int32_t *newid = NULL;
    int ierr = hk_mesh_rcm_order(m, &newid);
    if (!ierr && newid) ierr = hk_mesh_permute_nodes(m, newid);
    free(newid);
    return ierr;
}

int hk_mesh_rcm_order(const hk_mesh *m, int32_t **newid_out)
{
    *newid_out = NULL;
    HK_CHECK(m && (m->nnodes == 0 || m->coords), HK_ERR_ARG,
             "hk_mesh_rcm_order: the mesh is NULL or has no coordinates");
    return rcm_numbers(m, NULL, HK_EL_COUNT, newid_out);
}

/* The generated slab, then its grid's RCM numbers (here rather than in the generator, so that
 * mesh.c need not call back into this file, which calls its group helpers). */
int hk_mesh_grid_slab_rcm(int dim, const double *size, const int *cells, hk_eltype t, int axis,
                          int lo, int hi, hk_mesh *m, double *t_rcm)
{
    HK_CALL(hk_mesh_grid_slab(dim, size, cells, t, axis, lo, hi, m));
    const double t0 = hk_time();
    int64_t corners[3];
    for (int a = 0; a < 3; a++) /* the grid's corner points along each axis, as generated */
        corners[a] = a < dim ? (a == axis ? hi - lo : cells[a]) + 1 : 1;
    int32_t *newid = NULL;
    int ierr = rcm_numbers(m, corners, t, &newid);
    if (!ierr) ierr = hk_mesh_permute_nodes(m, newid);
    free(newid);
    if (ierr) hk_mesh_free(m);
    if (t_rcm) *t_rcm = hk_time() - t0;
    return ierr;
}

/* hk_mesh_rcm_order's numbers; the corner graph from the cells, or (grid: the corners along
 * each axis, t the cells' type) from the structure of a generated grid. */
static int rcm_numbers(const hk_mesh *m, const int64_t *grid, hk_eltype t, int32_t **newid_out)
{
    int ierr = 0;
    graph g = {0};
    const hk_elems *c = &m->cells;
    const int64_t n = m->nnodes;
    int32_t *cid = NULL, *order = NULL, *rank = NULL, *anchor = NULL, *newid = NULL;
    int32_t *list = NULL, *cnode = NULL;
    int64_t *start = NULL, *used = NULL;
    if (n == 0) return 0;
    static int8_t nkc[HK_EL_COUNT][27], kc[HK_EL_COUNT][27][8];
    static int tables = 0;
#pragma omp critical(hk_rcm_tables)
    if (!tables) {
        for (int t = 0; t < HK_EL_COUNT; t++)
            for (int i = 0; i < hk_eltype_get((hk_eltype)t)->nnodes; i++)
                nkc[t][i] = (int8_t)hk_eltype_node_corners((hk_eltype)t, i, kc[t][i]);
        tables = 1;
    }
    /* the corners, numbered in node order; a grid of linear cells: every node a corner (the
     * generator makes no other node), not looked for */
    const int linear = grid && hk_eltype_get(t)->nnodes == hk_eltype_ncorners(t);
    int64_t nc = n;
    if (!linear) {
        HK_TRY(hk_malloc((size_t)n * sizeof *cid, &cid));
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++)
            cid[i] = -1;
#pragma omp parallel for schedule(static)
        for (int64_t e = 0; e < c->n; e++) {
            const int nce = ncorners_of(c, e);
            for (int k = 0; k < nce; k++) {
#pragma omp atomic write
                cid[c->nodes[c->ptr[e] + k]] = 0;
            }
        }
        nc = hk_number_zeros(cid, n);
    }
    if (grid) {
        HK_TRY_CHECK(nc == grid[0] * grid[1] * grid[2], HK_ERR_INTERNAL,
                     "hk_mesh_grid_slab_rcm: %lld corners in the cells, %lld in the grid",
                     (long long)nc, (long long)(grid[0] * grid[1] * grid[2]));
        grid_graph(grid, t, &g);
        HK_TRY(grid_classes(&g));
    } else
        HK_TRY(build_graph(m, cid, nc, &g));
    HK_TRY(hk_malloc((size_t)(nc ? nc : 1) * sizeof *order, &order));
    HK_TRY(rcm_order(&g, order));
    if (nc == n) { /* every node a corner (cid the identity): the order reversed */
        HK_TRY(hk_malloc((size_t)n * sizeof *newid, &newid));
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n; k++)
            newid[order[k]] = (int32_t)(n - 1 - k);
        goto done;
    }
    HK_TRY(hk_malloc((size_t)(nc ? nc : 1) * sizeof *rank, &rank));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nc; k++)
        rank[order[k]] = (int32_t)k;
    /* the other nodes: the first-ranked of the corners they lie between (the same corners in
     * every cell that has the node, so every cell writes the same value); nc for a node in
     * no cell */
    HK_TRY(hk_malloc((size_t)n * sizeof *anchor, &anchor));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        anchor[i] = cid[i] >= 0 ? rank[cid[i]] : (int32_t)nc;
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++) {
        const hk_eltype t = (hk_eltype)c->type[e];
        const int32_t *nd = c->nodes + c->ptr[e];
        for (int i = ncorners_of(c, e); i < c->ptr[e + 1] - c->ptr[e]; i++) {
            if (cid[nd[i]] >= 0) continue;
            int32_t r = INT32_MAX;
            for (int a = 0; a < nkc[t][i]; a++) {
                int32_t ra = rank[cid[nd[kc[t][i][a]]]];
                if (ra < r) r = ra;
            }
#pragma omp atomic write
            anchor[nd[i]] = r;
        }
    }
    /* positions: each corner, then the nodes it anchors in node order; nodes in no cell
     * last. The anchored nodes are bucketed by their anchor (any order), each bucket sorted. */
    HK_TRY(hk_calloc((size_t)nc + 2, sizeof *start, &start));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        if (cid[i] < 0) {
#pragma omp atomic
            start[anchor[i] + 1]++;
        }
    hk_prefix_sum(start, nc + 1);
    HK_TRY(hk_malloc((size_t)(start[nc + 1] ? start[nc + 1] : 1) * sizeof *list, &list));
    HK_TRY(hk_malloc((size_t)(nc + 1) * sizeof *used, &used));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k <= nc; k++)
        used[k] = start[k];
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        if (cid[i] < 0) {
            int64_t p;
#pragma omp atomic capture
            p = used[anchor[i]]++;
            list[p] = (int32_t)i;
        }
    HK_TRY(hk_malloc((size_t)(nc ? nc : 1) * sizeof *cnode, &cnode));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        if (cid[i] >= 0) cnode[cid[i]] = (int32_t)i;
    HK_TRY(hk_malloc((size_t)n * sizeof *newid, &newid));
#pragma omp parallel for schedule(dynamic, 1024)
    for (int64_t k = 0; k <= nc; k++) {
        int64_t pos = start[k] + k; /* k corners before this bucket */
        hk_sort_i32(list + start[k], start[k + 1] - start[k]);
        if (k < nc) newid[cnode[order[k]]] = (int32_t)(n - 1 - pos++); /* reversed */
        for (int64_t j = start[k]; j < start[k + 1]; j++)
            newid[list[j]] = (int32_t)(n - 1 - pos++);
    }
done:
    *newid_out = newid;
    newid = NULL;
fail:
    free(g.cls);
    free(g.ptr);
    free(g.adj);
    free(cid);
    free(order);
    free(rank);
    free(anchor);
    free(newid);
    free(start);
    free(used);
    free(list);
    free(cnode);
    return ierr;
}
