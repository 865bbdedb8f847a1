/* Reverse Cuthill-McKee renumbering of mesh nodes (George & Liu's pseudo-peripheral start,
 * neighbours visited by increasing degree), applied to coordinates, cells and groups. */
#include "mesh_impl.h"

typedef struct {
    int64_t n;
    int64_t *ptr; /* n + 1 */
    int32_t *adj; /* neighbours of node i: adj[ptr[i] .. ptr[i+1]) */
} graph;

/* Node graph: i ~ j when they share a cell. */
static int build_graph(const hk_mesh *m, graph *g)
{
    int ierr = 0;
    const hk_elems *c = &m->cells;
    const int64_t n = m->nnodes;
    int64_t *cptr = NULL, *cidx = NULL;
    int32_t *mark = NULL;
    g->n = n;
    HK_TRY(hk_mesh_node_cells(m, &cptr, &cidx));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *mark, &mark));
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *g->ptr, &g->ptr));
    /* two passes: count, then fill */
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < n; i++)
            mark[i] = -1;
        for (int64_t i = 0; i < n; i++) {
            int64_t cnt = 0;
            for (int64_t k = cptr[i]; k < cptr[i + 1]; k++) {
                int64_t e = cidx[k];
                for (int64_t j = c->ptr[e]; j < c->ptr[e + 1]; j++) {
                    int32_t v = c->nodes[j];
                    if (v == i || mark[v] == (int32_t)i) continue;
                    mark[v] = (int32_t)i;
                    if (pass) g->adj[g->ptr[i] + cnt] = v;
                    cnt++;
                }
            }
            if (!pass) g->ptr[i + 1] = cnt;
        }
        if (!pass) {
            for (int64_t i = 0; i < n; i++)
                g->ptr[i + 1] += g->ptr[i];
            HK_TRY(hk_malloc((size_t)(g->ptr[n] ? g->ptr[n] : 1) * sizeof *g->adj, &g->adj));
        }
    }
fail:
    free(cptr);
    free(cidx);
    free(mark);
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

static int permute(hk_mesh *m, const int32_t *newid)
{
    double *xc = NULL;
    HK_CALL(hk_malloc((size_t)(3 * (m->nnodes ? m->nnodes : 1)) * sizeof *xc, &xc));
    for (int64_t i = 0; i < m->nnodes; i++)
        memcpy(xc + 3 * (int64_t)newid[i], m->coords + 3 * i, 3 * sizeof *xc);
    free(m->coords);
    m->coords = xc;
    hk_elems *c = &m->cells;
    for (int64_t k = 0; k < (c->n ? c->ptr[c->n] : 0); k++)
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

int hk_mesh_renumber_rcm(hk_mesh *m)
{
    HK_CHECK(m && (m->nnodes == 0 || m->coords), HK_ERR_ARG,
             "hk_mesh_renumber_rcm: the mesh is NULL or has no coordinates");
    int ierr = 0;
    graph g = {0, NULL, NULL};
    int64_t n = m->nnodes, *lvl = NULL, numbered = 0;
    int32_t *order = NULL, *tmp = NULL, *newid = NULL;
    uint8_t *done = NULL;
    if (n == 0) return 0;
    HK_TRY(build_graph(m, &g));
    HK_TRY(hk_malloc((size_t)n * sizeof *lvl, &lvl));
    HK_TRY(hk_malloc((size_t)n * sizeof *order, &order));
    HK_TRY(hk_malloc((size_t)n * sizeof *tmp, &tmp));
    HK_TRY(hk_malloc((size_t)n * sizeof *newid, &newid));
    HK_TRY(hk_calloc((size_t)n, 1, &done));
    for (int64_t i = 0; i < n; i++)
        lvl[i] = -1;
    int64_t stamp = 0, scan = 0;
    while (numbered < n) {
        /* start: the unnumbered node of least degree (first in index order), then walk to
         * a pseudo-peripheral node (George & Liu) */
        int64_t s = -1;
        for (int64_t i = scan; i < n; i++)
            if (!done[i] && (s < 0 || degree(&g, i) < degree(&g, s))) s = i;
        int64_t cnt, last, ecc = bfs_levels(&g, s, done, lvl, stamp++, tmp, &cnt, &last);
        for (int it = 0; it < 8; it++) {
            int64_t best = tmp[last];
            for (int64_t k = last; k < cnt; k++)
                if (degree(&g, tmp[k]) < degree(&g, best)) best = tmp[k];
            int64_t cnt2, last2;
            int64_t e2 = bfs_levels(&g, best, done, lvl, stamp++, tmp, &cnt2, &last2);
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
            for (int64_t k = g.ptr[u]; k < g.ptr[u + 1]; k++) {
                int32_t v = g.adj[k];
                if (done[v]) continue;
                done[v] = 1;
                order[numbered++] = v;
            }
            sort_by_degree(&g, order + first, numbered - first);
        }
        while (scan < n && done[scan])
            scan++;
    }
    for (int64_t k = 0; k < n; k++)
        newid[order[k]] = (int32_t)(n - 1 - k); /* reverse */
    HK_TRY(permute(m, newid));
fail:
    free(g.ptr);
    free(g.adj);
    free(lvl);
    free(order);
    free(tmp);
    free(newid);
    free(done);
    return ierr;
}
