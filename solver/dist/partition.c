/* Partitions for distributed runs: METIS (k-way on a graph, the dual graph of a mesh's cells)
 * when Hooke is built with it, else contiguous blocks (of rows, of cells in the mesh's order).
 * Both are deterministic: METIS with a fixed seed. */
#include <stdlib.h>
#include <string.h>

#include "dist_impl.h"

#ifdef HOOKE_HAVE_METIS
#include <metis.h>
#endif

const char *hk_partitioner_name(void)
{
#ifdef HOOKE_HAVE_METIS
    return "metis";
#else
    return "contiguous";
#endif
}

/* Contiguous blocks of about n / nparts items. */
static void contiguous(int64_t n, int nparts, int32_t *part)
{
    for (int64_t i = 0; i < n; i++)
        part[i] = (int32_t)(i * nparts / (n > 0 ? n : 1));
}

/* 1 when every part has an item (nothing to check when there are fewer items than parts). */
static int all_parts_used(int64_t n, int nparts, const int32_t *part)
{
    if (n < nparts) return 1;
    char *seen = calloc((size_t)nparts, 1);
    if (!seen) return 0;
    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        if (part[i] >= 0 && part[i] < nparts) seen[part[i]] = 1;
    for (int p = 0; p < nparts; p++)
        ok &= seen[p];
    free(seen);
    return ok;
}

#ifdef HOOKE_HAVE_METIS
static void metis_options(idx_t *opt)
{
    METIS_SetDefaultOptions(opt);
    opt[METIS_OPTION_SEED] = 12345;
    opt[METIS_OPTION_NUMBERING] = 0;
}

static int metis_error(int status, const char *what)
{
    return hk_error_set(status == METIS_ERROR_MEMORY ? HK_ERR_MEMORY : HK_ERR_INTERNAL, __FILE__,
                        __LINE__, "METIS could not partition the %s (status %d)", what, status);
}

/* The symmetric adjacency of the pattern without its diagonal: A + A^T. */
static int symmetric_graph(int64_t n, const int64_t *rowptr, const int32_t *colind, idx_t **xadj,
                           idx_t **adj)
{
    int ierr = 0;
    int64_t *cnt = NULL, *pos = NULL;
    int32_t *tmp = NULL;
    *xadj = NULL;
    *adj = NULL;
    HK_TRY(hk_calloc((size_t)n + 1, sizeof *cnt, &cnt));
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
            if (colind[k] != i) cnt[i + 1]++, cnt[colind[k] + 1]++;
    for (int64_t i = 0; i < n; i++)
        cnt[i + 1] += cnt[i];
    HK_TRY(hk_malloc((size_t)(cnt[n] + 1) * sizeof *tmp, &tmp));
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof *pos, &pos));
    memcpy(pos, cnt, (size_t)(n + 1) * sizeof *pos);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
            if (colind[k] != i) tmp[pos[i]++] = colind[k], tmp[pos[colind[k]]++] = (int32_t)i;
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof **xadj, xadj));
    HK_TRY(hk_malloc((size_t)(cnt[n] + 1) * sizeof **adj, adj));
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t *r = tmp + cnt[i];
        const int64_t len = cnt[i + 1] - cnt[i];
        hk_isort_i32(r, len);
        (*xadj)[i] = (idx_t)m;
        for (int64_t k = 0; k < len; k++)
            if (k == 0 || r[k] != r[k - 1]) (*adj)[m++] = r[k];
    }
    (*xadj)[n] = (idx_t)m;
fail:
    free(cnt);
    free(pos);
    free(tmp);
    return ierr;
}
#endif

int hk_partition_graph(int64_t n, const int64_t *rowptr, const int32_t *colind, int nparts,
                       int32_t *part)
{
    HK_CHECK(nparts >= 1 && n >= 0, HK_ERR_ARG, "hk_partition_graph: %d parts of %lld rows", nparts,
             (long long)n);
    if (nparts == 1 || n <= nparts) {
        contiguous(n, nparts, part);
        return 0;
    }
#ifdef HOOKE_HAVE_METIS
    if (n < INT32_MAX && 2 * rowptr[n] < INT32_MAX) {
        idx_t *xadj = NULL, *adj = NULL, opt[METIS_NOPTIONS], nv = (idx_t)n, ncon = 1, np = nparts,
              cut = 0;
        HK_CALL(symmetric_graph(n, rowptr, colind, &xadj, &adj));
        idx_t *p = NULL;
        int ierr = hk_malloc((size_t)n * sizeof *p, &p);
        if (!ierr) {
            metis_options(opt);
            const int st = METIS_PartGraphKway(&nv, &ncon, xadj, adj, NULL, NULL, NULL, &np, NULL,
                                               NULL, opt, &cut, p);
            if (st != METIS_OK) ierr = metis_error(st, "matrix graph");
            for (int64_t i = 0; !ierr && i < n; i++)
                part[i] = (int32_t)p[i];
        }
        free(p);
        free(xadj);
        free(adj);
        if (ierr) return ierr;
        if (all_parts_used(n, nparts, part)) return 0;
    }
#else
    (void)rowptr, (void)colind;
#endif
    contiguous(n, nparts, part);
    return 0;
}

int hk_partition_cells(int64_t ncells, const int64_t *ptr, const int32_t *nodes, int64_t nnodes,
                       int ncommon, int nparts, int32_t *part)
{
    HK_CHECK(nparts >= 1 && ncells >= 0, HK_ERR_ARG, "hk_partition_cells: %d parts of %lld cells",
             nparts, (long long)ncells);
    if (nparts == 1 || ncells <= nparts) {
        contiguous(ncells, nparts, part);
        return 0;
    }
#ifdef HOOKE_HAVE_METIS
    if (ptr[ncells] < INT32_MAX && nnodes < INT32_MAX) {
        idx_t ne = (idx_t)ncells, nn = (idx_t)nnodes, nc = ncommon, np = nparts, cut = 0;
        idx_t opt[METIS_NOPTIONS], *eptr = NULL, *eind = NULL, *ep = NULL, *npart = NULL;
        int ierr = hk_malloc((size_t)(ncells + 1) * sizeof *eptr, &eptr);
        if (!ierr) ierr = hk_malloc((size_t)(ptr[ncells] + 1) * sizeof *eind, &eind);
        if (!ierr) ierr = hk_malloc((size_t)ncells * sizeof *ep, &ep);
        if (!ierr) ierr = hk_malloc((size_t)(nnodes + 1) * sizeof *npart, &npart);
        if (!ierr) {
            for (int64_t e = 0; e <= ncells; e++)
                eptr[e] = (idx_t)ptr[e];
            for (int64_t k = 0; k < ptr[ncells]; k++)
                eind[k] = nodes[k];
            metis_options(opt);
            const int st = METIS_PartMeshDual(&ne, &nn, eptr, eind, NULL, NULL, &nc, &np, NULL, opt,
                                              &cut, ep, npart);
            if (st != METIS_OK) ierr = metis_error(st, "mesh");
            for (int64_t e = 0; !ierr && e < ncells; e++)
                part[e] = (int32_t)ep[e];
        }
        free(eptr);
        free(eind);
        free(ep);
        free(npart);
        if (ierr) return ierr;
        if (all_parts_used(ncells, nparts, part)) return 0;
    }
#else
    (void)ptr, (void)nodes, (void)nnodes, (void)ncommon;
#endif
    contiguous(ncells, nparts, part);
    return 0;
}
