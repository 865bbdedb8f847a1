/* A region of a refined mesh (hk_mesh_load_region, docs/parallel.md "The mesh made by the
 * parts"): the coarse cells a process keeps, refined and raised to second order as the whole
 * mesh would be, with a key per node that is the same wherever the node is made (keys.c). */
#include <omp.h>
#include <stdio.h>

#include "mesh_impl.h"

/* ---- the kept cells ------------------------------------------------------------------------ */

/* Elements of src whose nodes all have a newid (>= 0), renumbered, in src's order. */
static int keep_elems(const hk_elems *src, const int32_t *newid, hk_elems *dst)
{
    int64_t n = 0, nref = 0;
    memset(dst, 0, sizeof *dst);
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            dst->n = n;
            HK_CALL(hk_malloc((size_t)n + 1, &dst->type));
            HK_CALL(hk_malloc((size_t)(n + 1) * sizeof *dst->ptr, &dst->ptr));
            HK_CALL(hk_malloc((size_t)(nref + 1) * sizeof *dst->nodes, &dst->nodes));
            HK_CALL(hk_malloc((size_t)(n + 1) * sizeof *dst->tag, &dst->tag));
            dst->ptr[0] = 0;
            n = nref = 0;
        }
        for (int64_t e = 0; e < src->n; e++) {
            int all = 1;
            for (int64_t k = src->ptr[e]; k < src->ptr[e + 1] && all; k++)
                all = newid[src->nodes[k]] >= 0;
            if (!all) continue;
            if (pass) {
                dst->type[n] = src->type[e];
                dst->tag[n] = src->tag ? src->tag[e] : e + 1;
                for (int64_t k = src->ptr[e]; k < src->ptr[e + 1]; k++)
                    dst->nodes[nref + k - src->ptr[e]] = newid[src->nodes[k]];
                dst->ptr[n + 1] = nref + src->ptr[e + 1] - src->ptr[e];
            }
            n++;
            nref += src->ptr[e + 1] - src->ptr[e];
        }
    }
    return 0;
}

/* m cut to its kept cells, in place: their nodes in m's order, each cell's coarse ancestor its
 * index in m, the boundary facets whose nodes are all kept (bnd[b]: a group left without one
 * is set apart in *empty, its place in m's list in where[]), g's entity meshes on the kept
 * nodes (-1 off them), and each kept node's key from its index in m. */
static int cut_to_kept(hk_mesh *m, const uint8_t *keep, hk_elev_geom *g, hk_node_key **keys,
                       hk_group **all_groups, int *nall)
{
    int ierr = 0;
    const hk_elems *c = &m->cells;
    int32_t *newid = NULL;
    hk_mesh r;
    memset(&r, 0, sizeof r);
    HK_TRY(hk_malloc((size_t)(m->nnodes + 1) * sizeof *newid, &newid));
    for (int64_t v = 0; v < m->nnodes; v++)
        newid[v] = -1;
    int64_t nc = 0, nref = 0;
    for (int64_t e = 0; e < c->n; e++)
        if (keep[e]) {
            nc++, nref += c->ptr[e + 1] - c->ptr[e];
            for (int64_t k = c->ptr[e]; k < c->ptr[e + 1]; k++)
                newid[c->nodes[k]] = 0;
        }
    for (int64_t v = 0; v < m->nnodes; v++)
        if (newid[v] == 0) newid[v] = (int32_t)r.nnodes++;
    r.dim = m->dim;
    HK_TRY(hk_malloc((size_t)(3 * r.nnodes + 1) * sizeof *r.coords, &r.coords));
    HK_TRY(hk_malloc((size_t)(r.nnodes + 1) * sizeof **keys, keys));
    for (int64_t v = 0; v < m->nnodes; v++)
        if (newid[v] >= 0) {
            memcpy(r.coords + 3 * (int64_t)newid[v], m->coords + 3 * v, 3 * sizeof *r.coords);
            (*keys)[newid[v]] = hk_node_key_coarse(v);
        }
    r.cells.n = nc;
    HK_TRY(hk_malloc((size_t)nc + 1, &r.cells.type));
    HK_TRY(hk_malloc((size_t)(nc + 1) * sizeof *r.cells.ptr, &r.cells.ptr));
    HK_TRY(hk_malloc((size_t)(nref + 1) * sizeof *r.cells.nodes, &r.cells.nodes));
    HK_TRY(hk_malloc((size_t)(nc + 1) * sizeof *r.cells.tag, &r.cells.tag));
    HK_TRY(hk_malloc((size_t)(nc + 1) * sizeof *r.cell_region, &r.cell_region));
    HK_TRY(hk_malloc((size_t)(nc + 1) * sizeof *r.cell_coarse, &r.cell_coarse));
    r.cells.ptr[0] = 0;
    for (int64_t e = 0, j = 0; e < c->n; e++) {
        if (!keep[e]) continue;
        r.cells.type[j] = c->type[e];
        r.cells.tag[j] = c->tag ? c->tag[e] : e + 1;
        r.cell_region[j] = m->cell_region ? m->cell_region[e] : 0;
        r.cell_coarse[j] = (int32_t)e;
        int64_t q = r.cells.ptr[j];
        for (int64_t k = c->ptr[e]; k < c->ptr[e + 1]; k++)
            r.cells.nodes[q++] = newid[c->nodes[k]];
        r.cells.ptr[++j] = q;
    }
    r.nregions = m->nregions;
    r.regions = m->regions;
    m->regions = NULL;
    m->nregions = 0;
    /* every group, its facets on the kept cells; those with none set apart from the mesh */
    *nall = m->nboundaries;
    HK_TRY(hk_calloc((size_t)m->nboundaries + 1, sizeof **all_groups, all_groups));
    HK_TRY(hk_calloc((size_t)m->nboundaries + 1, sizeof *r.boundaries, &r.boundaries));
    for (int b = 0; b < m->nboundaries; b++) {
        hk_group *a = &(*all_groups)[b];
        memcpy(a->name, m->boundaries[b].name, sizeof a->name);
        a->dim = m->boundaries[b].dim;
        a->tag = m->boundaries[b].tag;
        HK_TRY(keep_elems(&m->boundaries[b].elems, newid, &a->elems));
        if (a->elems.n == 0) continue;
        hk_group *k = &r.boundaries[r.nboundaries++];
        *k = *a;
        memset(&a->elems, 0, sizeof a->elems);
    }
    for (int k = 0; g && k < g->n; k++) {
        hk_elems *f = &g->ent[k].elems;
        for (int64_t i = 0; f->n && i < f->ptr[f->n]; i++)
            if (f->nodes[i] >= 0) f->nodes[i] = newid[f->nodes[i]];
    }
    hk_mesh_free(m);
    *m = r;
    memset(&r, 0, sizeof r);
fail:
    free(newid);
    hk_mesh_free(&r);
    return ierr;
}

/* The groups back in their places: the refined ones from m, the others empty. */
static int groups_back(hk_mesh *m, hk_group *all, int nall)
{
    int j = 0;
    for (int b = 0; b < nall; b++) {
        if (j < m->nboundaries && !strcmp(m->boundaries[j].name, all[b].name) &&
            m->boundaries[j].dim == all[b].dim && m->boundaries[j].tag == all[b].tag) {
            hk_elems_free(&all[b].elems);
            all[b] = m->boundaries[j++];
            continue;
        }
        if (!all[b].elems.ptr) HK_CALL(hk_calloc(1, sizeof *all[b].elems.ptr, &all[b].elems.ptr));
        HK_CALL(hk_calloc(1, sizeof *all[b].nodes, &all[b].nodes));
        all[b].nnodes = 0;
    }
    HK_CHECK(j == m->nboundaries, HK_ERR_INTERNAL, "a refined region lost track of its groups");
    free(m->boundaries);
    m->boundaries = all;
    m->nboundaries = nall;
    return 0;
}

int hk_mesh_region_make(hk_mesh_region *reg, int levels, int order2, int incomplete, int straight,
                        int renumber, hk_elev_geom *g, hk_mesh *m, hk_mesh_refine_stats *st)
{
    int ierr = 0;
    uint8_t *keep = NULL;
    hk_group *all = NULL;
    int nall = 0;
    int32_t *newid = NULL;
    hk_node_key *keys = NULL, *pk = NULL;
    HK_TRY(hk_mesh_localize(m, g));
    HK_TRY(hk_calloc((size_t)m->cells.n + 1, 1, &keep));
    HK_TRY(reg->select(reg->ctx, m, levels, keep));
    HK_TRY(cut_to_kept(m, keep, g, &keys, &all, &nall));
    HK_TRY(hk_mesh_refine_keyed(m, levels, g, st, &keys));
    if (order2) {
        hk_elev_stats es;
        const int64_t nv = m->nnodes;
        HK_TRY(hk_mesh_elevate(m, incomplete, straight ? NULL : g, &es));
        HK_TRY(hk_node_keys_extend(m, nv, &keys));
        st->straight += es.straight + es.too_far + es.failed;
    }
    if (renumber) {
        HK_TRY(hk_mesh_rcm_order(m, &newid));
        if (newid) {
            HK_TRY(hk_mesh_permute_nodes(m, newid));
            HK_TRY(hk_malloc((size_t)(m->nnodes + 1) * sizeof *pk, &pk));
            for (int64_t v = 0; v < m->nnodes; v++)
                pk[newid[v]] = keys[v];
            free(keys);
            keys = pk;
            pk = NULL;
        }
    }
    HK_TRY(groups_back(m, all, nall));
    all = NULL;
    reg->keys = keys;
    keys = NULL;
    reg->refined = 1;
fail:
    for (int b = 0; all && b < nall; b++) {
        hk_elems_free(&all[b].elems);
        free(all[b].nodes);
    }
    free(all);
    free(keep);
    free(newid);
    free(keys);
    free(pk);
    return ierr;
}
