/* Node keys (hk_node_key): the same for a node wherever the mesh around it is made.
 *
 * A coarse node's key comes from its index in the coarse mesh; a node made on an edge, a
 * quadrilateral face or inside a hexahedron (refinement's levels and the second-order nodes
 * both make them through hk_mesh_elevate) gets a hash of its corners' keys, sorted. Two
 * regions that share an edge make the same nodes on it with the same keys. */
#include <omp.h>

#include "mesh_impl.h"

/* splitmix64's finaliser: every bit of z moves every bit of the result */
static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

hk_node_key hk_node_key_coarse(int64_t i)
{
    const uint64_t u = (uint64_t)i + 1;
    return (hk_node_key){mix64(u), mix64(u ^ 0xa5a5a5a5a5a5a5a5ull)};
}

static int key_less(const hk_node_key *x, const hk_node_key *y)
{
    return x->a < y->a || (x->a == y->a && x->b < y->b);
}

/* The key of a node made between the n nodes of keys p (sorted here). */
static hk_node_key key_between(hk_node_key *p, int n)
{
    for (int i = 1; i < n; i++) {
        hk_node_key x = p[i];
        int j = i;
        for (; j > 0 && key_less(&x, &p[j - 1]); j--)
            p[j] = p[j - 1];
        p[j] = x;
    }
    uint64_t a = mix64(0x51ed270b27ull + (uint64_t)n),
             b = mix64(0x3c6ef372fe94f82bull ^ (uint64_t)n);
    for (int i = 0; i < n; i++) {
        a = mix64(a ^ p[i].a) + p[i].b;
        b = mix64(b ^ p[i].b) + ((p[i].a << 17) | (p[i].a >> 47));
    }
    return (hk_node_key){mix64(a ^ (b >> 1)), mix64(b + a)};
}

int hk_node_keys_extend(const hk_mesh *m, int64_t nv, hk_node_key **keys)
{
    int ierr = 0;
    const hk_elems *c = &m->cells;
    const int64_t nnew = m->nnodes - nv;
    uint8_t *done = NULL;
    hk_node_key *k = realloc(*keys, (size_t)(m->nnodes + 1) * sizeof *k);
    HK_CHECK(k, HK_ERR_MEMORY, "out of host memory for the keys of %lld nodes",
             (long long)m->nnodes);
    *keys = k;
    HK_TRY(hk_calloc((size_t)nnew + 1, 1, &done));
    /* every node by the first cell to reach it (its corners are the same in every cell) */
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < c->n; e++) {
        const hk_eltype t = (hk_eltype)c->type[e];
        const int32_t *nd = c->nodes + c->ptr[e];
        const int nc = hk_eltype_ncorners(t), nn = (int)(c->ptr[e + 1] - c->ptr[e]);
        for (int i = nc; i < nn; i++) {
            if (nd[i] < nv) continue;
            uint8_t was;
#pragma omp atomic capture
            {
                was = done[nd[i] - nv];
                done[nd[i] - nv] = 1;
            }
            if (was) continue;
            int8_t cn[8];
            hk_node_key p[8];
            const int np = hk_eltype_node_corners(t, i, cn);
            for (int a = 0; a < np; a++)
                p[a] = k[nd[cn[a]]];
            k[nd[i]] = key_between(p, np);
        }
    }
    for (int64_t v = 0; v < nnew; v++)
        HK_TRY_CHECK(done[v], HK_ERR_INTERNAL, "node %lld of the raised mesh is in no cell",
                     (long long)(nv + v));
fail:
    free(done);
    return ierr;
}
