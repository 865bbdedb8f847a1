/* Node orderings for the incomplete factorisations (pc.ordering of ic0, ilu0, mlilu): computed on
 * the node (block) graph of K, so the 3 x 3 node blocks stay together, and applied as a
 * symmetric permutation P K P^T before the factorisation.
 *
 * rcm: reverse Cuthill-McKee. Per connected component a start node of small degree (the
 *   first unvisited node of least degree, moved to the lowest-degree node of the last BFS
 *   level while that lengthens the BFS: the George-Liu pseudo-peripheral search), a BFS
 *   visiting each node's unvisited neighbours by increasing degree (ties: lower index), and
 *   the whole order reversed. Small bandwidth: fewer, longer levels; IC(0) keeps the quality
 *   of the natural order.
 * colour: greedy multicolouring in natural node order (each node takes the least colour no
 *   earlier-coloured neighbour has), nodes then sorted by colour (stable). Nodes of one colour
 *   are not coupled, so the factor's levels number about bs x colours: much parallelism, at
 *   the price of a weaker IC(0) (more iterations).
 * amd: approximate minimum degree (Amestoy, Davis and Duff) of the pattern of K + K^T, by
 *   SuiteSparse's AMD library when the build has it (HOOKE_HAVE_AMD), else refused with a
 *   message: a fill-reducing order, for the factorisations that fill (pc=mlilu, as the
 *   ILUPACK paper orders before factoring).
 * All are deterministic functions of the pattern. */
#include <stdlib.h>
#include <string.h>

#include "pc_impl.h"

#ifdef HOOKE_HAVE_AMD
#include <amd.h>
#endif

const char *const hk_ordering_names[] = {"natural", "rcm", "colour", "amd", NULL};

/* AMD of the node graph of K (its pattern; amd_order symmetrises it and ignores the
 * diagonal). */
static int order_amd(const hk_bcsr *K, int32_t *perm)
{
#ifdef HOOKE_HAVE_AMD
    int ierr = 0;
    const int64_t n = K->nbrows, nnz = K->rowptr[n];
    int *Ap = NULL, *Ai = NULL, *P = NULL;
    HK_CHECK(n < INT32_MAX && nnz < INT32_MAX, HK_ERR_UNSUPPORTED,
             "pc.ordering=amd: %lld nodes and %lld couplings are too many for AMD's 32-bit "
             "indices; use pc.ordering=rcm",
             (long long)n, (long long)nnz);
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof *Ap, &Ap));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *Ai, &Ai));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *P, &P));
    for (int64_t i = 0; i <= n; i++) /* the rows as AMD's columns: the pattern of K^T */
        Ap[i] = (int)K->rowptr[i];
    for (int64_t p = 0; p < nnz; p++)
        Ai[p] = K->colind[p];
    double control[AMD_CONTROL], info[AMD_INFO];
    amd_defaults(control);
    const int st = amd_order((int)n, Ap, Ai, P, control, info);
    HK_TRY_CHECK(st == AMD_OK || st == AMD_OK_BUT_JUMBLED,
                 st == AMD_OUT_OF_MEMORY ? HK_ERR_MEMORY : HK_ERR_INTERNAL,
                 "pc.ordering=amd: AMD failed (status %d) on a graph of %lld nodes", st,
                 (long long)n);
    for (int64_t i = 0; i < n; i++)
        perm[i] = P[i];
fail:
    free(Ap), free(Ai), free(P);
    return ierr;
#else
    (void)K, (void)perm;
    return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__,
                        "pc.ordering=amd needs SuiteSparse's AMD, which this build lacks; "
                        "install libsuitesparse-dev and rebuild, or use pc.ordering=rcm");
#endif
}

static int64_t degree_of(const hk_bcsr *K, int64_t i)
{
    int64_t d = 0;
    for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++)
        d += K->colind[p] != i;
    return d;
}

/* BFS from s over the nodes not done whose visit stamp differs from stamp, appending to
 * order from position at; neighbours by increasing degree (ties: lower index). Returns the
 * new end; *last_begin = where the last level starts, *depth = number of levels. */
static int64_t bfs(const hk_bcsr *K, const int64_t *deg, const char *done, int32_t *visit,
                   int32_t stamp, int64_t s, int32_t *order, int64_t at, int32_t *nbr,
                   int64_t *last_begin, int64_t *depth)
{
    int64_t head = at, tail = at, level_end;
    order[tail++] = (int32_t)s;
    visit[s] = stamp;
    *last_begin = at;
    *depth = 1;
    level_end = tail;
    while (head < tail) {
        if (head == level_end) {
            *last_begin = head;
            level_end = tail;
            (*depth)++;
        }
        const int64_t i = order[head++];
        int nn = 0;
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++) {
            const int32_t j = K->colind[p];
            if (done[j] || visit[j] == stamp) continue;
            int q = nn++;
            while (q > 0 &&
                   (deg[nbr[q - 1]] > deg[j] || (deg[nbr[q - 1]] == deg[j] && nbr[q - 1] > j))) {
                nbr[q] = nbr[q - 1];
                q--;
            }
            nbr[q] = j;
            visit[j] = stamp;
        }
        for (int q = 0; q < nn; q++)
            order[tail++] = nbr[q];
    }
    return tail;
}

static int order_rcm(const hk_bcsr *K, int32_t *perm)
{
    int ierr = 0;
    const int64_t n = K->nbrows;
    int64_t *deg = NULL;
    int32_t *visit = NULL, *nbr = NULL, *trial = NULL;
    char *done = NULL;
    int64_t maxdeg = 1;
    HK_TRY(hk_malloc((size_t)n * sizeof *deg, &deg));
    HK_TRY(hk_calloc((size_t)n, sizeof *visit, &visit));
    HK_TRY(hk_calloc((size_t)n, sizeof *done, &done));
    HK_TRY(hk_malloc((size_t)n * sizeof *trial, &trial));
    for (int64_t i = 0; i < n; i++) {
        deg[i] = degree_of(K, i);
        if (K->rowptr[i + 1] - K->rowptr[i] > maxdeg) maxdeg = K->rowptr[i + 1] - K->rowptr[i];
    }
    HK_TRY(hk_malloc((size_t)maxdeg * sizeof *nbr, &nbr));
    int64_t filled = 0, from = 0;
    int32_t stamp = 0;
    while (filled < n) {
        while (done[from])
            from++;
        int64_t s = from;
        for (int64_t i = from; i < n; i++)
            if (!done[i] && deg[i] < deg[s]) s = i;
        /* pseudo-peripheral start: move to a least-degree node of the last level while the
         * BFS gets deeper */
        int64_t depth0 = 0;
        for (int it = 0; it < 8; it++) {
            int64_t last, depth;
            const int64_t end = bfs(K, deg, done, visit, ++stamp, s, trial, 0, nbr, &last, &depth);
            if (depth <= depth0) break;
            depth0 = depth;
            int64_t best = trial[last];
            for (int64_t q = last; q < end; q++)
                if (deg[trial[q]] < deg[best]) best = trial[q];
            s = best;
        }
        int64_t last, depth;
        const int64_t end = bfs(K, deg, done, visit, ++stamp, s, perm, filled, nbr, &last, &depth);
        for (int64_t q = filled; q < end; q++)
            done[perm[q]] = 1;
        filled = end;
    }
    for (int64_t a = 0, b = n - 1; a < b; a++, b--) {
        const int32_t t = perm[a];
        perm[a] = perm[b];
        perm[b] = t;
    }
fail:
    free(deg);
    free(visit);
    free(done);
    free(nbr);
    free(trial);
    return ierr;
}

static int order_colour(const hk_bcsr *K, int32_t *perm, int64_t *ncolours)
{
    int ierr = 0;
    const int64_t n = K->nbrows;
    int32_t *colour = NULL;
    int64_t *seen = NULL;
    int64_t maxdeg = 1, nc = 0;
    for (int64_t i = 0; i < n; i++)
        if (K->rowptr[i + 1] - K->rowptr[i] + 1 > maxdeg)
            maxdeg = K->rowptr[i + 1] - K->rowptr[i] + 1;
    HK_TRY(hk_malloc((size_t)n * sizeof *colour, &colour));
    HK_TRY(hk_malloc((size_t)(maxdeg + 1) * sizeof *seen, &seen));
    for (int64_t c = 0; c <= maxdeg; c++)
        seen[c] = -1;
    for (int64_t i = 0; i < n; i++) {
        /* colours of the earlier neighbours in row i */
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++) {
            const int32_t j = K->colind[p];
            if (j < i && colour[j] <= maxdeg) seen[colour[j]] = i;
        }
        int32_t c = 0;
        while (seen[c] == i)
            c++;
        colour[i] = c;
        if (c + 1 > nc) nc = c + 1;
    }
    /* a nonsymmetric pattern: an entry (i, j), j > i, without (j, i) may couple two nodes of
     * one colour; such a j (none on FE matrices) gets a colour of its own */
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++) {
            const int32_t j = K->colind[p];
            if (j > i && colour[j] == colour[i]) colour[j] = (int32_t)(nc++);
        }
    int64_t *start = NULL;
    HK_TRY(hk_calloc((size_t)nc + 1, sizeof *start, &start));
    for (int64_t i = 0; i < n; i++)
        start[colour[i] + 1]++;
    for (int64_t c = 0; c < nc; c++)
        start[c + 1] += start[c];
    for (int64_t i = 0; i < n; i++)
        perm[start[colour[i]]++] = (int32_t)i;
    free(start);
    *ncolours = nc;
fail:
    free(colour);
    free(seen);
    return ierr;
}

int hk_node_ordering(const hk_bcsr *K, int kind, int32_t **perm, int64_t *ncolours)
{
    const int64_t n = K->nbrows;
    int ierr = 0;
    *perm = NULL;
    *ncolours = 0;
    if (kind == HK_ORDER_NATURAL) return 0;
    HK_CALL(hk_malloc((size_t)(n ? n : 1) * sizeof **perm, perm));
    if (kind == HK_ORDER_RCM)
        ierr = order_rcm(K, *perm);
    else if (kind == HK_ORDER_AMD)
        ierr = order_amd(K, *perm);
    else
        ierr = order_colour(K, *perm, ncolours);
    if (ierr) {
        free(*perm);
        *perm = NULL;
    }
    return ierr;
}

int hk_bcsr_permute(const hk_bcsr *K, const int32_t *perm, hk_bcsr *P)
{
    int ierr = 0;
    const int64_t n = K->nbrows, nnzb = K->rowptr[n];
    const int bb = K->bs * K->bs;
    int32_t *iperm = NULL;
    memset(P, 0, sizeof *P);
    P->bs = K->bs;
    P->nbrows = P->nbcols = n;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *iperm, &iperm));
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof *P->rowptr, &P->rowptr));
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * sizeof *P->colind, &P->colind));
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * bb * sizeof *P->val, &P->val));
    for (int64_t i = 0; i < n; i++)
        iperm[perm[i]] = (int32_t)i;
    P->rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t o = perm[i], b = P->rowptr[i];
        int64_t len = 0;
        for (int64_t p = K->rowptr[o]; p < K->rowptr[o + 1]; p++) {
            /* insertion sort by the new column, moving blocks along */
            const int32_t c = iperm[K->colind[p]];
            int64_t q = b + len++;
            while (q > b && P->colind[q - 1] > c) {
                P->colind[q] = P->colind[q - 1];
                memcpy(P->val + q * bb, P->val + (q - 1) * bb, (size_t)bb * sizeof *P->val);
                q--;
            }
            P->colind[q] = c;
            memcpy(P->val + q * bb, K->val + p * bb, (size_t)bb * sizeof *P->val);
        }
        P->rowptr[i + 1] = b + len;
    }
    free(iperm);
    return 0;
fail:
    free(iperm);
    hk_bcsr_free(P);
    return ierr;
}
