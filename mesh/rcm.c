/* Reverse Cuthill-McKee renumbering of mesh nodes (George & Liu's pseudo-peripheral start,
 * neighbours visited by increasing degree) on the graph of the cells' corners, the other nodes
 * placed beside their corners; applied to coordinates, cells and groups. */
#include "mesh_impl.h"

typedef struct {
    int64_t n;
    int64_t *ptr; /* n + 1 */
    int32_t *adj; /* neighbours of node i: adj[ptr[i] .. ptr[i+1]) */
} graph;

/* The cells' corners (their first ncorners nodes) by cell: corner k of cell e is
 * nodes[ptr[e] + k] for k < nc[type]. */
static int ncorners_of(const hk_elems *c, int64_t e)
{
    return hk_eltype_ncorners((hk_eltype)c->type[e]);
}

/* Corner graph: corners i ~ j when they share a cell, on the corners' own numbering (cid:
 * node -> corner index, -1 for other nodes). Built in parallel, each list in the order of
 * its cells: the same graph on any number of threads. */
static int build_graph(const hk_mesh *m, const int32_t *cid, int64_t n, graph *g)
{
    int ierr = 0;
    const hk_elems *c = &m->cells;
    int64_t *cptr = NULL, *cidx = NULL, *fill = NULL, *kptr = NULL;
    int32_t *kc = NULL;
    g->n = n;
    /* the cells' corners, compact (the random reads below stay in cache) */
    HK_TRY(hk_malloc((size_t)(c->n + 1) * sizeof *kptr, &kptr));
    kptr[0] = 0;
    for (int64_t e = 0; e < c->n; e++)
        kptr[e + 1] = kptr[e] + ncorners_of(c, e);
    HK_TRY(hk_malloc((size_t)(kptr[c->n] ? kptr[c->n] : 1) * sizeof *kc, &kc));
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++)
        for (int64_t k = kptr[e]; k < kptr[e + 1]; k++)
            kc[k] = cid[c->nodes[c->ptr[e] + k - kptr[e]]];
    /* corner -> cells */
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *cptr, &cptr));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < kptr[c->n]; k++) {
#pragma omp atomic
        cptr[kc[k] + 1]++;
    }
    for (int64_t i = 0; i < n; i++)
        cptr[i + 1] += cptr[i];
    HK_TRY(hk_malloc((size_t)(cptr[n] ? cptr[n] : 1) * sizeof *cidx, &cidx));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *fill, &fill));
    memcpy(fill, cptr, (size_t)n * sizeof *fill);
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++)
        for (int64_t k = kptr[e]; k < kptr[e + 1]; k++) {
            int64_t pos;
#pragma omp atomic capture
            pos = fill[kc[k]]++;
            cidx[pos] = e;
        }
        hk_sort_lists(cptr, cidx, n); /* in cell order: the atomic fill left thread order */
    /* neighbours: the corners of those cells in the order met, each once; counted, then
     * written */
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *g->ptr, &g->ptr));
    for (int pass = 0; pass < 2; pass++) {
        int fail = 0;
#pragma omp parallel reduction(| : fail)
        {
            int32_t *mark = malloc((size_t)(n ? n : 1) * sizeof *mark);
            fail |= !mark;
            for (int64_t i = 0; mark && i < n; i++)
                mark[i] = -1;
#pragma omp for schedule(dynamic, 1024)
            for (int64_t i = 0; i < n; i++) {
                int64_t cnt = 0;
                for (int64_t k = cptr[i]; mark && k < cptr[i + 1]; k++)
                    for (int64_t a = kptr[cidx[k]]; a < kptr[cidx[k] + 1]; a++) {
                        const int32_t v = kc[a];
                        if (v == i || mark[v] == (int32_t)i) continue;
                        mark[v] = (int32_t)i;
                        if (pass) g->adj[g->ptr[i] + cnt] = v;
                        cnt++;
                    }
                if (!pass) g->ptr[i + 1] = cnt;
            }
            free(mark);
        }
        HK_TRY_CHECK(!fail, HK_ERR_MEMORY, "out of host memory renumbering the mesh nodes");
        if (!pass) {
            for (int64_t i = 0; i < n; i++)
                g->ptr[i + 1] += g->ptr[i];
            HK_TRY(hk_malloc((size_t)(g->ptr[n] ? g->ptr[n] : 1) * sizeof *g->adj, &g->adj));
        }
    }
fail:
    free(cptr);
    free(cidx);
    free(fill);
    free(kptr);
    free(kc);
    return ierr;
}

static int64_t degree(const graph *g, int64_t i)
{
    return g->ptr[i + 1] - g->ptr[i];
}

/* BFS from s over unnumbered nodes (mask 0); returns the number of levels, fills order with
 * the visited nodes (count in *cnt) and the start of the last level in *last. Marks visited
 * nodes with stamp in lvl[]. */
static int64_t bfs_levels(const graph *g, int64_t s, const uint8_t *done, int64_t *lvl,
                          int64_t stamp, int32_t *order, int64_t *cnt, int64_t *last)
{
    int64_t head = 0, tail = 0, nlev = 0, lstart = 0;
    order[tail++] = (int32_t)s;
    lvl[s] = stamp;
    while (head < tail) {
        int64_t lend = tail;
        lstart = head;
        nlev++;
        while (head < lend) {
            int32_t u = order[head++];
            for (int64_t k = g->ptr[u]; k < g->ptr[u + 1]; k++) {
                int32_t v = g->adj[k];
                if (done[v] || lvl[v] == stamp) continue;
                lvl[v] = stamp;
                order[tail++] = v;
            }
        }
    }
    *cnt = tail;
    *last = lstart;
    return nlev;
}

/* Sort a few nodes by (degree, index): neighbour lists are short, insertion sort. */
static void sort_by_degree(const graph *g, int32_t *v, int64_t n)
{
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
    for (int gi = 0; gi < m->nboundaries; gi++) {
        hk_group *g = &m->boundaries[gi];
        hk_elems *f = &g->elems;
        for (int64_t k = 0; k < (f->n ? f->ptr[f->n] : 0); k++)
            f->nodes[k] = newid[f->nodes[k]];
        HK_CALL(hk_group_collect_nodes(g, m->nnodes));
    }
    return 0;
}

/* Reverse Cuthill-McKee order of the graph's vertices into order[0..n). */
static int rcm_order(const graph *g, int32_t *order)
{
    int ierr = 0;
    const int64_t n = g->n;
    int64_t *lvl = NULL, numbered = 0;
    int32_t *tmp = NULL;
    uint8_t *done = NULL;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *lvl, &lvl));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *tmp, &tmp));
    HK_TRY(hk_calloc((size_t)(n ? n : 1), 1, &done));
    for (int64_t i = 0; i < n; i++)
        lvl[i] = -1;
    int64_t stamp = 0, scan = 0;
    while (numbered < n) {
        /* start: the unnumbered node of least degree (first in index order), then walk to
         * a pseudo-peripheral node (George & Liu) */
        int64_t s = -1;
        for (int64_t i = scan; i < n; i++)
            if (!done[i] && (s < 0 || degree(g, i) < degree(g, s))) s = i;
        int64_t cnt, last, ecc = bfs_levels(g, s, done, lvl, stamp++, tmp, &cnt, &last);
        for (int it = 0; it < 8; it++) {
            int64_t best = tmp[last];
            for (int64_t k = last; k < cnt; k++)
                if (degree(g, tmp[k]) < degree(g, best)) best = tmp[k];
            int64_t cnt2, last2;
            int64_t e2 = bfs_levels(g, best, done, lvl, stamp++, tmp, &cnt2, &last2);
            if (e2 <= ecc) break;
            ecc = e2, s = best, cnt = cnt2, last = last2;
        }
        /* Cuthill-McKee from s */
        int64_t head = numbered;
        order[numbered++] = (int32_t)s;
        done[s] = 1;
        while (head < numbered) {
            int32_t u = order[head++];
            int64_t first = numbered;
            for (int64_t k = g->ptr[u]; k < g->ptr[u + 1]; k++) {
                int32_t v = g->adj[k];
                if (done[v]) continue;
                done[v] = 1;
                order[numbered++] = v;
            }
            sort_by_degree(g, order + first, numbered - first);
        }
        while (scan < n && done[scan])
            scan++;
    }
fail:
    free(lvl);
    free(tmp);
    free(done);
    return ierr;
}

/* Cuthill-McKee on the graph of the cells' corners; each other node (on an edge, a face, in a
 * cell) follows the corner it lies next to that comes first, in the order of the node
 * numbers; then the whole order reversed. For a linear mesh this is RCM on the node graph;
 * for a quadratic one it is close to it (a mid-edge node sits beside its edge's first corner)
 * at a fraction of the cost: the corner graph is several times smaller than the node graph. */
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
    int ierr = 0;
    *newid_out = NULL;
    HK_CHECK(m && (m->nnodes == 0 || m->coords), HK_ERR_ARG,
             "hk_mesh_rcm_order: the mesh is NULL or has no coordinates");
    graph g = {0, NULL, NULL};
    const hk_elems *c = &m->cells;
    const int64_t n = m->nnodes;
    int32_t *cid = NULL, *order = NULL, *rank = NULL, *anchor = NULL, *newid = NULL;
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
    /* the corners, numbered in node order */
    HK_TRY(hk_malloc((size_t)n * sizeof *cid, &cid));
    for (int64_t i = 0; i < n; i++)
        cid[i] = -1;
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++)
        for (int k = 0; k < ncorners_of(c, e); k++) {
#pragma omp atomic write
            cid[c->nodes[c->ptr[e] + k]] = 0;
        }
    int64_t nc = 0;
    for (int64_t i = 0; i < n; i++)
        if (!cid[i]) cid[i] = (int32_t)nc++;
    HK_TRY(build_graph(m, cid, nc, &g));
    HK_TRY(hk_malloc((size_t)(nc ? nc : 1) * sizeof *order, &order));
    HK_TRY(rcm_order(&g, order));
    HK_TRY(hk_malloc((size_t)(nc ? nc : 1) * sizeof *rank, &rank));
    for (int64_t k = 0; k < nc; k++)
        rank[order[k]] = (int32_t)k;
    /* the other nodes: the first-ranked of the corners they lie between (the same corners in
     * every cell that has the node, so every cell writes the same value) */
    HK_TRY(hk_malloc((size_t)n * sizeof *anchor, &anchor));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        anchor[i] = cid[i] >= 0 ? rank[cid[i]] : -1;
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
    /* positions: each corner, then the nodes it anchors in node order; nodes in no cell last */
    HK_TRY(hk_calloc((size_t)nc + 2, sizeof *start, &start));
    for (int64_t i = 0; i < n; i++)
        if (cid[i] < 0) start[(anchor[i] >= 0 ? anchor[i] : nc) + 1]++;
    for (int64_t k = 0; k <= nc; k++)
        start[k + 1] += start[k] + (k < nc);
    HK_TRY(hk_malloc((size_t)n * sizeof *newid, &newid));
    HK_TRY(hk_calloc((size_t)nc + 1, sizeof *used, &used));
    for (int64_t i = 0; i < n; i++) {
        int64_t pos;
        if (cid[i] >= 0) {
            pos = start[rank[cid[i]]];
        } else {
            const int64_t a = anchor[i] >= 0 ? anchor[i] : nc;
            pos = start[a] + (a < nc) + used[a]++;
        }
        newid[i] = (int32_t)(n - 1 - pos); /* reversed */
    }
    *newid_out = newid;
    newid = NULL;
fail:
    free(g.ptr);
    free(g.adj);
    free(cid);
    free(order);
    free(rank);
    free(anchor);
    free(newid);
    free(start);
    free(used);
    return ierr;
}
