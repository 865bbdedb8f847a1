/* The aggregation ops of smoothed-aggregation AMG (docs/amg-aggregation.md).
 *
 * Suite aggregate (cpu backend): the strength graph against a norm computed here; the
 * aggregation against a sequential greedy construction of the same rule (roots in decreasing
 * priority, distance-2 neighbourhoods blocked), plus its properties (every node with a strong
 * neighbour aggregated, aggregates connected, roots at distance >= 3, the same result for 1 and
 * 3 threads) on a structured 3D elasticity matrix and random graphs; the tentative prolongator:
 * Q^T Q = I on the kept columns of each aggregate, T Bc = B, dependent columns of a one- and a
 * two-node aggregate with the six rigid-body modes.
 *
 * Suite cuda_aggregate (device): the CUDA ops against the CPU ops on the same inputs: identical
 * graphs and aggregates, the same bytes of T and Bc. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "hk_impl.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static const hk_backend_ops *cpu(void)
{
    return &hk_backend_cpu;
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Frobenius norm in plain row-major order (the op uses another order; the test skips entries
 * within rounding of the threshold). */
static double fro(const double *a, int b)
{
    double s = 0;
    for (int e = 0; e < b * b; e++)
        s += a[e] * a[e];
    return sqrt(s);
}

static const double *blk(const hk_bcsr *K, int64_t i, int64_t j)
{
    for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++)
        if (K->colind[p] == j) return K->val + (size_t)p * K->bs * K->bs;
    return NULL;
}

/* Host strength graph from K on the cpu backend, or -1 on failure. */
static int strength(const hk_backend_ops *be, const hk_bcsr *K, double theta, hk_graph *S)
{
    hk_bmat A = {0};
    int err = hk_bmat_upload(be, K, &A);
    hk_graph G = {0};
    if (!err) err = be->amg_strength(&A, theta, &G);
    if (!err && be != cpu()) {
        err = hk_graph_to_host(&G, S);
        hk_graph_free(&G);
    } else if (!err) {
        *S = G;
    }
    hk_bmat_free(&A);
    if (err) fprintf(stderr, "\n  strength: %s\n", hk_error_message());
    return err;
}

/* K with ghost columns after its own (a distributed level's rows): every third row gets a
 * block in one of 7 columns from n on, larger than its diagonal, and row 5's own off-diagonal
 * blocks are zeroed in both (isolated in the owned block, though its ghost block is not zero).
 * amg_strength must give W the graph of K. */
static void with_ghost_columns(hk_bcsr *K, hk_bcsr *W)
{
    const int64_t n = K->nbrows, bb = (int64_t)K->bs * K->bs;
    for (int64_t p = K->rowptr[5]; p < K->rowptr[6]; p++)
        if (K->colind[p] != 5) memset(K->val + p * bb, 0, (size_t)bb * sizeof *K->val);
    int64_t extra = 0;
    for (int64_t i = 0; i < n; i++)
        extra += i % 3 == 0 || i == 5;
    W->bs = K->bs;
    W->nbrows = n;
    W->nbcols = n + 7;
    const int64_t nnz = K->rowptr[n] + extra;
    W->rowptr = malloc(sizeof *W->rowptr * (size_t)(n + 1));
    W->colind = malloc(sizeof *W->colind * (size_t)nnz);
    W->val = malloc(sizeof *W->val * (size_t)(nnz * bb));
    int64_t q = 0;
    W->rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++, q++) {
            W->colind[q] = K->colind[p];
            memcpy(W->val + q * bb, K->val + p * bb, (size_t)bb * sizeof *W->val);
        }
        if (i % 3 == 0 || i == 5) {
            W->colind[q] = (int32_t)(n + i % 7);
            for (int64_t e = 0; e < bb; e++)
                W->val[q * bb + e] = 1e6 * (double)(e + 1);
            q++;
        }
        W->rowptr[i + 1] = q;
    }
}

static int64_t edge(const hk_graph *S, int64_t i, int64_t j)
{
    for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++)
        if (S->colind[p] == j) return 1;
    return 0;
}

/* Check S against the definition on K: sorted, no diagonal, every entry decided by a margin
 * of 1e-12 relative agrees. Returns the number of entries checked. */
static int64_t check_strength(const hk_bcsr *K, double theta, const hk_graph *S)
{
    const int b = K->bs;
    const int64_t n = K->nbrows;
    int64_t checked = 0;
    CU_ASSERT_EQUAL_FATAL(S->n, n);
    for (int64_t i = 0; i < n; i++) {
        for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++) {
            CU_ASSERT(S->colind[p] != i);
            if (p > S->rowptr[i]) CU_ASSERT(S->colind[p] > S->colind[p - 1]);
        }
        int iso = 1;
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++)
            if (K->colind[p] != i)
                for (int e = 0; e < b * b; e++)
                    iso &= K->val[(size_t)p * b * b + e] == 0;
        const double *di = blk(K, i, i);
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++) {
            const int64_t j = K->colind[p];
            if (j == i) continue;
            int isoj = 1;
            for (int64_t q = K->rowptr[j]; q < K->rowptr[j + 1]; q++)
                if (K->colind[q] != j)
                    for (int e = 0; e < b * b; e++)
                        isoj &= K->val[(size_t)q * b * b + e] == 0;
            const double *dj = blk(K, j, j), *aji = blk(K, j, i);
            double m = fro(K->val + (size_t)p * b * b, b);
            if (aji && fro(aji, b) > m) m = fro(aji, b);
            const double rhs = theta * sqrt((di ? fro(di, b) : 0) * (dj ? fro(dj, b) : 0));
            const int got = (int)edge(S, i, j);
            if (iso || isoj) {
                CU_ASSERT_EQUAL(got, 0);
            } else if (fabs(m - rhs) > 1e-12 * (m + rhs)) {
                CU_ASSERT_EQUAL(got, m > rhs);
                checked++;
            }
        }
    }
    return checked;
}

/* ---- strength --------------------------------------------------------------------------- */

static void test_strength(void)
{
    const double thetas[3] = {0.0, 0.08, 0.3};
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(5, 4, 3, &K));
    for (int t = 0; t < 3; t++) {
        hk_graph S = {0};
        HK_ASSERT_OK(strength(cpu(), &K, thetas[t], &S));
        CU_ASSERT(check_strength(&K, thetas[t], &S) > 0);
        /* symmetric on a symmetric pattern; the clamped plane (x = 0) is isolated */
        for (int64_t i = 0; i < S.n; i++)
            for (int64_t p = S.rowptr[i]; p < S.rowptr[i + 1]; p++)
                CU_ASSERT(edge(&S, S.colind[p], i));
        for (int64_t i = 0; i < S.n; i += 6)
            CU_ASSERT_EQUAL(S.rowptr[i + 1] - S.rowptr[i], 0);
        hk_graph_free(&S);
    }
    /* a row whose off-diagonal blocks are zero while its column is not: isolated both ways */
    const int64_t r = 40;
    for (int64_t p = K.rowptr[r]; p < K.rowptr[r + 1]; p++)
        if (K.colind[p] != r) memset(K.val + (size_t)p * 9, 0, 9 * sizeof(double));
    hk_graph S = {0};
    HK_ASSERT_OK(strength(cpu(), &K, 0.08, &S));
    check_strength(&K, 0.08, &S);
    CU_ASSERT_EQUAL(S.rowptr[r + 1] - S.rowptr[r], 0);
    for (int64_t i = 0; i < S.n; i++)
        CU_ASSERT(!edge(&S, i, r));
    hk_graph_free(&S);
    hk_bcsr_free(&K);
    /* random blocks, unsymmetric pattern, empty rows, block sizes 1..3 */
    for (int bs = 1; bs <= 3; bs++) {
        HK_ASSERT_OK(hk_gen_random(300, 300, bs, 6, 1, 70 + bs, &K));
        for (int t = 0; t < 3; t++) {
            HK_ASSERT_OK(strength(cpu(), &K, thetas[t], &S));
            CU_ASSERT(check_strength(&K, thetas[t], &S) > 0);
            hk_graph_free(&S);
        }
        hk_bcsr_free(&K);
    }
    /* ghost columns after the rows' own: the owned block's graph */
    {
        hk_bcsr W = {0};
        hk_graph Sk = {0}, Sw = {0};
        HK_ASSERT_OK(hk_gen_elasticity3d(6, 5, 4, &K));
        with_ghost_columns(&K, &W);
        HK_ASSERT_OK(strength(cpu(), &K, 0.08, &Sk));
        HK_ASSERT_OK(strength(cpu(), &W, 0.08, &Sw));
        CU_ASSERT(Sk.rowptr[5 + 1] == Sk.rowptr[5]); /* row 5 isolated */
        CU_ASSERT(Sk.n == Sw.n && Sk.nnz == Sw.nnz && Sk.nnz > 0 &&
                  !memcmp(Sk.rowptr, Sw.rowptr, sizeof *Sk.rowptr * (size_t)(Sk.n + 1)) &&
                  !memcmp(Sk.colind, Sw.colind, sizeof *Sk.colind * (size_t)Sk.nnz));
        hk_graph_free(&Sk), hk_graph_free(&Sw);
        hk_bcsr_free(&W);
        hk_bcsr_free(&K);
    }
    /* arguments */
    HK_ASSERT_OK(hk_gen_elasticity2d(3, 3, &K));
    hk_bmat A = {0};
    HK_ASSERT_OK(hk_bmat_upload(cpu(), &K, &A));
    CU_ASSERT_EQUAL(cpu()->amg_strength(&A, -1, &S), HK_ERR_ARG);
    CU_ASSERT_EQUAL(cpu()->amg_strength(&A, NAN, &S), HK_ERR_ARG);
    A.bc = 1;
    CU_ASSERT_EQUAL(cpu()->amg_strength(&A, 0.1, &S), HK_ERR_ARG);
    A.bc = A.br;
    A.nbcols = A.nbrows - 1; /* fewer columns than rows */
    CU_ASSERT_EQUAL(cpu()->amg_strength(&A, 0.1, &S), HK_ERR_ARG);
    A.nbcols = A.nbrows;
    hk_error_clear();
    hk_bmat_free(&A);
    hk_bcsr_free(&K);
}

/* ---- aggregation ------------------------------------------------------------------------ */

/* A symmetric random graph: n nodes, about deg neighbours each, every 7th node isolated,
 * nodes of the last tenth only among themselves (a second component). */
static void random_graph(int64_t n, int deg, unsigned seed, hk_graph *G)
{
    uint32_t s = seed * 2891336453u + 1u;
    char *adj = calloc((size_t)n * n, 1);
    const int64_t cut = n - n / 10;
    for (int64_t i = 0; i < n; i++)
        for (int d = 0; d < deg / 2; d++) {
            int64_t lo = i < cut ? 0 : cut, hi = i < cut ? cut : n;
            int64_t j = lo + (int64_t)(lcg(&s) % (uint32_t)(hi - lo));
            if (j == i || i % 7 == 0 || j % 7 == 0) continue;
            adj[i * n + j] = adj[j * n + i] = 1;
        }
    int64_t nnz = 0;
    for (int64_t k = 0; k < n * n; k++)
        nnz += adj[k];
    HK_ASSERT_OK(hk_graph_alloc(cpu(), n, n, nnz, G));
    int64_t q = 0;
    G->rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < n; j++)
            if (adj[i * n + j]) G->colind[q++] = (int32_t)j;
        G->rowptr[i + 1] = q;
    }
    free(adj);
}

static uint64_t prio(int64_t i)
{
    return (uint64_t)(hk_hash32((uint32_t)i) >> 2) << 32 | (uint64_t)i;
}

static int cmp_desc(const void *a, const void *b)
{
    const uint64_t x = prio(*(const int64_t *)a), y = prio(*(const int64_t *)b);
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The rule of docs/amg-aggregation.md computed sequentially: greedy roots in decreasing
 * priority among nodes with neighbours, none within distance 2 of another; roots numbered in
 * index order with their neighbours; then rounds of joining. root[] gets 1 at roots. */
static int64_t reference_aggregate(const hk_graph *S, int32_t *agg, char *root)
{
    const int64_t n = S->n;
    int64_t *ord = malloc((size_t)n * sizeof *ord);
    char *blocked = calloc((size_t)n, 1);
    for (int64_t i = 0; i < n; i++)
        ord[i] = i;
    qsort(ord, (size_t)n, sizeof *ord, cmp_desc);
    memset(root, 0, (size_t)n);
    for (int64_t k = 0; k < n; k++) {
        const int64_t i = ord[k];
        if (blocked[i] || S->rowptr[i + 1] == S->rowptr[i]) continue;
        root[i] = 1;
        blocked[i] = 1;
        for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++) {
            const int64_t j = S->colind[p];
            blocked[j] = 1;
            for (int64_t q = S->rowptr[j]; q < S->rowptr[j + 1]; q++)
                blocked[S->colind[q]] = 1;
        }
    }
    int64_t nagg = 0;
    for (int64_t i = 0; i < n; i++)
        agg[i] = root[i] ? (int32_t)nagg++ : -1;
    for (int64_t i = 0; i < n; i++)
        if (root[i])
            for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++)
                agg[S->colind[p]] = agg[i];
    int32_t *next = malloc((size_t)n * sizeof *next);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int64_t i = 0; i < n; i++) {
            next[i] = agg[i];
            if (agg[i] >= 0) continue;
            int64_t bestc = 0;
            for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++) {
                const int32_t a = agg[S->colind[p]];
                int64_t c = 0;
                for (int64_t q = S->rowptr[i]; q < S->rowptr[i + 1]; q++)
                    c += a >= 0 && agg[S->colind[q]] == a;
                if (c > bestc || (c > 0 && c == bestc && a < next[i])) next[i] = a, bestc = c;
            }
            changed |= next[i] >= 0;
        }
        memcpy(agg, next, (size_t)n * sizeof *agg);
    }
    free(next), free(ord), free(blocked);
    return nagg;
}

/* Distances from src by breadth-first search (up to maxd; -1 beyond). */
static void bfs(const hk_graph *S, int64_t src, int maxd, int *dist, int64_t *queue)
{
    for (int64_t i = 0; i < S->n; i++)
        dist[i] = -1;
    int64_t h = 0, t = 0;
    dist[src] = 0;
    queue[t++] = src;
    while (h < t) {
        const int64_t i = queue[h++];
        if (dist[i] == maxd) continue;
        for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++)
            if (dist[S->colind[p]] < 0) dist[S->colind[p]] = dist[i] + 1, queue[t++] = S->colind[p];
    }
}

/* Properties of an aggregation of a symmetric graph; returns the mean aggregate size. */
static double check_aggregation(const hk_graph *S, const int32_t *agg, int64_t nagg)
{
    const int64_t n = S->n;
    int32_t *ref = malloc((size_t)n * sizeof *ref);
    char *root = malloc((size_t)n);
    int64_t rn = reference_aggregate(S, ref, root);
    CU_ASSERT_EQUAL(nagg, rn);
    CU_ASSERT_EQUAL(memcmp(agg, ref, (size_t)n * sizeof *agg), 0);
    int64_t *size = calloc((size_t)(nagg + 1), sizeof *size), aggregated = 0;
    for (int64_t i = 0; i < n; i++) {
        const int has = S->rowptr[i + 1] > S->rowptr[i];
        CU_ASSERT(has ? agg[i] >= 0 && agg[i] < nagg : agg[i] == -1);
        if (agg[i] >= 0) size[agg[i]]++, aggregated++;
    }
    for (int64_t a = 0; a < nagg; a++)
        CU_ASSERT(size[a] >= 2);
    /* roots at distance >= 3 from each other; each aggregate connected inside itself */
    int *dist = malloc((size_t)n * sizeof *dist);
    int64_t *queue = malloc((size_t)n * sizeof *queue);
    for (int64_t i = 0; i < n; i++)
        if (root[i]) {
            bfs(S, i, 2, dist, queue);
            for (int64_t j = 0; j < n; j++)
                if (j != i && dist[j] >= 0) CU_ASSERT(!root[j]);
        }
    char *seen = calloc((size_t)(nagg + 1), 1);
    int32_t *mark = malloc((size_t)n * sizeof *mark);
    for (int64_t i = 0; i < n; i++)
        mark[i] = 0;
    for (int64_t i = 0; i < n; i++) {
        const int32_t a = agg[i];
        if (a < 0 || seen[a]) continue;
        seen[a] = 1;
        int64_t h = 0, t = 0, reached = 1;
        queue[t++] = i;
        mark[i] = 1;
        while (h < t) {
            const int64_t u = queue[h++];
            for (int64_t p = S->rowptr[u]; p < S->rowptr[u + 1]; p++) {
                const int32_t v = S->colind[p];
                if (agg[v] == a && !mark[v]) mark[v] = 1, queue[t++] = v, reached++;
            }
        }
        CU_ASSERT_EQUAL(reached, size[a]);
    }
    free(ref), free(root), free(size), free(dist), free(queue), free(seen), free(mark);
    return nagg ? (double)aggregated / nagg : 0;
}

static int aggregate(const hk_backend_ops *be, const hk_graph *S, int32_t *agg, int64_t *nagg)
{
    int err = be->amg_aggregate(S, agg, nagg);
    if (err) fprintf(stderr, "\n  aggregate: %s\n", hk_error_message());
    return err;
}

static void test_aggregate_elasticity(void)
{
    const int nt = omp_get_max_threads();
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(20, 20, 20, &K));
    hk_graph S = {0};
    HK_ASSERT_OK(strength(cpu(), &K, 0.08, &S));
    const int64_t n = S.n;
    int32_t *a1 = malloc((size_t)n * sizeof *a1), *a3 = malloc((size_t)n * sizeof *a3);
    int64_t n1 = 0, n3 = 0;
    omp_set_num_threads(1);
    HK_ASSERT_OK(aggregate(cpu(), &S, a1, &n1));
    omp_set_num_threads(3);
    HK_ASSERT_OK(aggregate(cpu(), &S, a3, &n3));
    omp_set_num_threads(nt);
    CU_ASSERT_EQUAL(n1, n3);
    CU_ASSERT_EQUAL(memcmp(a1, a3, (size_t)n * sizeof *a1), 0);
    const double mean = check_aggregation(&S, a1, n1);
    printf("\n    21^3-node hex elasticity: %lld aggregates, mean size %.1f nodes ", (long long)n1,
           mean);
    CU_ASSERT(mean > 20 && mean < 80);
    for (int64_t i = 0; i < n; i += 21) /* clamped nodes */
        CU_ASSERT_EQUAL(a1[i], -1);
    free(a1), free(a3);
    hk_graph_free(&S);
    hk_bcsr_free(&K);
}

static void test_aggregate_random(void)
{
    const int nt = omp_get_max_threads();
    const int64_t sizes[4] = {1, 2, 200, 700};
    const int degs[4] = {2, 2, 4, 12};
    for (int c = 0; c < 4; c++) {
        hk_graph S = {0};
        random_graph(sizes[c], degs[c], 10 + c, &S);
        const int64_t n = S.n;
        int32_t *a1 = malloc((size_t)n * sizeof *a1), *a3 = malloc((size_t)n * sizeof *a3);
        int64_t n1 = 0, n3 = 0;
        omp_set_num_threads(1);
        HK_ASSERT_OK(aggregate(cpu(), &S, a1, &n1));
        omp_set_num_threads(3);
        HK_ASSERT_OK(aggregate(cpu(), &S, a3, &n3));
        omp_set_num_threads(nt);
        CU_ASSERT_EQUAL(n1, n3);
        CU_ASSERT_EQUAL(memcmp(a1, a3, (size_t)n * sizeof *a1), 0);
        check_aggregation(&S, a1, n1);
        free(a1), free(a3);
        hk_graph_free(&S);
    }
    /* a path: roots every third node or so, everything aggregated */
    hk_graph P = {0};
    const int64_t n = 50;
    HK_ASSERT_OK(hk_graph_alloc(cpu(), n, n, 2 * (n - 1), &P));
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
        P.rowptr[i] = q;
        if (i > 0) P.colind[q++] = (int32_t)(i - 1);
        if (i < n - 1) P.colind[q++] = (int32_t)(i + 1);
    }
    P.rowptr[n] = q;
    int32_t agg[50];
    int64_t na = 0;
    HK_ASSERT_OK(aggregate(cpu(), &P, agg, &na));
    check_aggregation(&P, agg, na);
    CU_ASSERT(na >= 50 / 5 && na <= 50 / 3 + 1);
    hk_graph_free(&P);
}

/* ---- tentative prolongator -------------------------------------------------------------- */

/* The six rigid-body modes (n x 6, column-major) of nodes at coords xyz (3 per node). */
static double *rigid_modes(int64_t nn, const double *xyz)
{
    const int64_t n = 3 * nn;
    double *B = calloc((size_t)n * 6, sizeof *B);
    for (int64_t i = 0; i < nn; i++) {
        const double x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
        for (int d = 0; d < 3; d++)
            B[3 * i + d + n * d] = 1;
        B[3 * i + 1 + n * 3] = -z, B[3 * i + 2 + n * 3] = y; /* rotation about x */
        B[3 * i + 0 + n * 4] = z, B[3 * i + 2 + n * 4] = -x; /* about y */
        B[3 * i + 0 + n * 5] = -y, B[3 * i + 1 + n * 5] = x; /* about z */
    }
    return B;
}

/* Check T and Bc from (agg, B): pattern, R upper triangular, Q^T Q = I on kept columns and
 * 0 on dropped ones, T Bc = B. Returns the number of kept columns over all aggregates. */
static int64_t check_tentative(const int32_t *agg, int64_t nagg, int64_t nn, int b, int nns,
                               const double *B, const hk_bmat *T, const double *Bc)
{
    const int64_t n = nn * b, ld = nagg * nns;
    int64_t kept = 0;
    CU_ASSERT_EQUAL_FATAL(T->nbrows, nn);
    CU_ASSERT_EQUAL(T->nbcols, nagg);
    CU_ASSERT(T->br == b && T->bc == nns);
    for (int64_t i = 0; i < nn; i++) {
        CU_ASSERT_EQUAL_FATAL(T->rowptr[i + 1] - T->rowptr[i], agg[i] >= 0);
        if (agg[i] >= 0) CU_ASSERT_EQUAL(T->colind[T->rowptr[i]], agg[i]);
    }
    double bmax = 0;
    for (int64_t k = 0; k < n * nns; k++)
        if (fabs(B[k]) > bmax) bmax = fabs(B[k]);
    /* T Bc against B row by row */
    for (int64_t i = 0; i < nn; i++)
        for (int r = 0; r < b; r++)
            for (int c = 0; c < nns; c++) {
                if (agg[i] < 0) continue;
                const double *t = T->val + ((size_t)T->rowptr[i] * b + r) * nns;
                double s = 0;
                for (int k = 0; k < nns; k++)
                    s += t[k] * Bc[agg[i] * nns + k + ld * c];
                CU_ASSERT(fabs(s - B[i * b + r + n * c]) <= 1e-12 * bmax);
            }
    /* Q^T Q per aggregate; R upper triangular, dropped rows zero */
    double *G = malloc((size_t)nns * nns * sizeof *G);
    for (int64_t a = 0; a < nagg; a++) {
        memset(G, 0, (size_t)nns * nns * sizeof *G);
        for (int64_t i = 0; i < nn; i++) {
            if (agg[i] != a) continue;
            const double *t = T->val + (size_t)T->rowptr[i] * b * nns;
            for (int r = 0; r < b; r++)
                for (int c = 0; c < nns; c++)
                    for (int d = 0; d < nns; d++)
                        G[c * nns + d] += t[r * nns + c] * t[r * nns + d];
        }
        for (int c = 0; c < nns; c++) {
            const double rcc = Bc[a * nns + c + ld * c];
            kept += rcc != 0;
            for (int r = c + 1; r < nns; r++)
                CU_ASSERT_EQUAL(Bc[a * nns + r + ld * c], 0.0);
            if (rcc == 0)
                for (int d = c; d < nns; d++)
                    CU_ASSERT_EQUAL(Bc[a * nns + c + ld * d], 0.0);
            for (int d = 0; d < nns; d++) {
                const int keep = rcc != 0 && Bc[a * nns + d + ld * d] != 0;
                CU_ASSERT(fabs(G[c * nns + d] - (keep && c == d)) < 1e-12);
            }
        }
    }
    free(G);
    return kept;
}

static int tentative(const hk_backend_ops *be, const int32_t *agg, int64_t nagg, int64_t nn, int b,
                     int nns, const double *B, hk_bmat *T, double *Bc)
{
    int err = be->amg_tentative(agg, nagg, nn, b, nns, B, T, Bc);
    if (err) fprintf(stderr, "\n  tentative: %s\n", hk_error_message());
    return err;
}

/* Node coordinates of hk_gen_elasticity3d(nx, ny, nz). */
static double *grid_coords(int nx, int ny, int nz)
{
    const int64_t NX = nx + 1, NY = ny + 1, nn = NX * NY * (nz + 1);
    double *xyz = malloc((size_t)nn * 3 * sizeof *xyz);
    for (int64_t v = 0; v < nn; v++) {
        xyz[3 * v] = (double)(v % NX) / nx;
        xyz[3 * v + 1] = (double)((v / NX) % NY) / ny;
        xyz[3 * v + 2] = (double)(v / (NX * NY)) / nz;
    }
    return xyz;
}

static void test_tentative(void)
{
    const int nt = omp_get_max_threads();
    hk_bcsr K;
    const int nx = 10, ny = 8, nz = 6;
    HK_ASSERT_OK(hk_gen_elasticity3d(nx, ny, nz, &K));
    hk_graph S = {0};
    HK_ASSERT_OK(strength(cpu(), &K, 0.08, &S));
    const int64_t nn = S.n;
    int32_t *agg = malloc((size_t)nn * sizeof *agg);
    int64_t nagg = 0;
    HK_ASSERT_OK(aggregate(cpu(), &S, agg, &nagg));
    double *xyz = grid_coords(nx, ny, nz);
    double *B = rigid_modes(nn, xyz);
    double *Bc = malloc((size_t)nagg * 36 * sizeof *Bc), *Bc3 = malloc((size_t)nagg * 36 * sizeof *Bc3);
    hk_bmat T = {0}, T3 = {0};
    omp_set_num_threads(1);
    HK_ASSERT_OK(tentative(cpu(), agg, nagg, nn, 3, 6, B, &T, Bc));
    omp_set_num_threads(3);
    HK_ASSERT_OK(tentative(cpu(), agg, nagg, nn, 3, 6, B, &T3, Bc3));
    omp_set_num_threads(nt);
    CU_ASSERT_EQUAL(check_tentative(agg, nagg, nn, 3, 6, B, &T, Bc), nagg * 6);
    CU_ASSERT_EQUAL(memcmp(T.val, T3.val, (size_t)T.nnzb * 18 * sizeof(double)), 0);
    CU_ASSERT_EQUAL(memcmp(Bc, Bc3, (size_t)nagg * 36 * sizeof(double)), 0);
    hk_bmat_free(&T), hk_bmat_free(&T3);
    /* aggregates of hundreds of nodes (many rows per partial sum of the dot products) */
    int32_t *big = malloc((size_t)nn * sizeof *big);
    for (int64_t i = 0; i < nn; i++)
        big[i] = i % 3 == 2 ? -1 : (int32_t)(i % 3);
    HK_ASSERT_OK(tentative(cpu(), big, 2, nn, 3, 6, B, &T, Bc));
    CU_ASSERT_EQUAL(check_tentative(big, 2, nn, 3, 6, B, &T, Bc), 12);
    hk_bmat_free(&T);
    free(big);

    /* a one-node aggregate keeps the 3 translations, a two-node one 5 modes (the rotation
     * about the line through both is lost); an unaggregated node gets no block */
    int32_t small[6] = {0, 1, 1, -1, 2, 2};
    const double pts[18] = {0.3, 0.1, 0.7, 1, 0, 0, 1, 1, 0, 5, 5, 5, 0, 0, 1, 2, 0.5, 1};
    double *Bs = rigid_modes(6, pts);
    double Bcs[3 * 6 * 6];
    HK_ASSERT_OK(tentative(cpu(), small, 3, 6, 3, 6, Bs, &T, Bcs));
    CU_ASSERT_EQUAL(check_tentative(small, 3, 6, 3, 6, Bs, &T, Bcs), 3 + 5 + 5);
    CU_ASSERT_EQUAL(T.nnzb, 5);
    for (int c = 3; c < 6; c++) /* aggregate 0: rotations dropped, their Q columns zero */
        for (int r = 0; r < 3; r++)
            CU_ASSERT_EQUAL(T.val[r * 6 + c], 0.0);
    hk_bmat_free(&T);
    /* one scalar dof per node, the constant vector only: Bc = sqrt(size) */
    int32_t sc[4] = {1, 0, 1, 1};
    double ones[4] = {1, 1, 1, 1}, Bc1[2];
    HK_ASSERT_OK(tentative(cpu(), sc, 2, 4, 1, 1, ones, &T, Bc1));
    CU_ASSERT_DOUBLE_EQUAL(Bc1[0], 1.0, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(Bc1[1], sqrt(3.0), 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(T.val[0], 1 / sqrt(3.0), 1e-15);
    hk_bmat_free(&T);
    /* arguments */
    small[4] = 3;
    CU_ASSERT_EQUAL(cpu()->amg_tentative(small, 3, 6, 3, 6, Bs, &T, Bcs), HK_ERR_ARG);
    small[4] = -2;
    CU_ASSERT_EQUAL(cpu()->amg_tentative(small, 3, 6, 3, 6, Bs, &T, Bcs), HK_ERR_ARG);
    CU_ASSERT_EQUAL(cpu()->amg_tentative(small, 3, 6, 0, 6, Bs, &T, Bcs), HK_ERR_ARG);
    hk_error_clear();
    free(Bs), free(B), free(xyz), free(agg), free(Bc), free(Bc3);
    hk_graph_free(&S);
    hk_bcsr_free(&K);
}

HK_SUITE(aggregate, {"strength graph against the definition, isolated rows", test_strength},
         {"aggregation of a 3D elasticity graph: the rule, its properties, threads",
          test_aggregate_elasticity},
         {"aggregation of random graphs and a path", test_aggregate_random},
         {"tentative prolongator: Q^T Q = I, T Bc = B, dependent modes", test_tentative})

/* ---- the CUDA ops against the CPU ops --------------------------------------------------- */

static const hk_backend_ops *gpu(void)
{
    const hk_backend *b = NULL;
    if (hk_backend_get("cuda", &b)) hk_error_clear();
    return b;
}

/* A device copy of n bytes of host data (NULL on failure, reported). */
static void *dev_copy(const void *h, size_t bytes)
{
    void *d = NULL;
    if (gpu()->alloc(&d, bytes ? bytes : 8) || (h && bytes && gpu()->copy_to(d, h, bytes))) {
        fprintf(stderr, "\n  device copy: %s\n", hk_error_message());
        return NULL;
    }
    return d;
}

static void same_graph(const hk_graph *a, const hk_graph *b)
{
    CU_ASSERT_EQUAL_FATAL(a->n, b->n);
    CU_ASSERT_EQUAL_FATAL(a->nnz, b->nnz);
    CU_ASSERT_EQUAL(a->m, b->m);
    CU_ASSERT_EQUAL(memcmp(a->rowptr, b->rowptr, (size_t)(a->n + 1) * sizeof(int64_t)), 0);
    CU_ASSERT_EQUAL(memcmp(a->colind, b->colind, (size_t)a->nnz * sizeof(int32_t)), 0);
}

static void test_cuda_strength(void)
{
    const double thetas[3] = {0.0, 0.08, 0.3};
    hk_bcsr K;
    for (int c = 0; c < 7; c++) {
        if (c == 0) HK_ASSERT_OK(hk_gen_elasticity3d(12, 10, 9, &K));
        if (c == 1) HK_ASSERT_OK(hk_gen_elasticity2d_tri_random(20, 17, 3, &K));
        if (c >= 2 && c <= 4) HK_ASSERT_OK(hk_gen_random(2000, 2000, c - 1, 7, 1, 90 + c, &K));
        if (c == 5) /* rows longer than a warp: the kernels' rows in several rounds of 32 */
            HK_ASSERT_OK(hk_gen_random(600, 600, 1, 80, 1, 95, &K));
        if (c == 6) /* blocks of a coarse level */
            HK_ASSERT_OK(hk_gen_random(400, 400, 6, 9, 1, 96, &K));
        if (c == 0) /* an isolated row with a nonzero column */
            for (int64_t p = K.rowptr[300]; p < K.rowptr[301]; p++)
                if (K.colind[p] != 300) memset(K.val + (size_t)p * 9, 0, 9 * sizeof(double));
        for (int t = 0; t < 3; t++) {
            hk_graph Sc = {0}, Sg = {0};
            HK_ASSERT_OK(strength(cpu(), &K, thetas[t], &Sc));
            HK_ASSERT_OK(strength(gpu(), &K, thetas[t], &Sg));
            same_graph(&Sc, &Sg);
            CU_ASSERT(check_strength(&K, thetas[t], &Sg) > 0);
            hk_graph_free(&Sc), hk_graph_free(&Sg);
        }
        hk_bcsr_free(&K);
    }
    /* ghost columns after the rows' own (a distributed coarse level's rows): the CPU's graph
     * of the owned block */
    {
        hk_bcsr W = {0};
        HK_ASSERT_OK(hk_gen_elasticity3d(12, 10, 9, &K));
        with_ghost_columns(&K, &W);
        for (int t = 0; t < 3; t++) {
            hk_graph Sc = {0}, Sg = {0};
            HK_ASSERT_OK(strength(cpu(), &K, thetas[t], &Sc));
            HK_ASSERT_OK(strength(gpu(), &W, thetas[t], &Sg));
            same_graph(&Sc, &Sg);
            hk_graph_free(&Sc), hk_graph_free(&Sg);
        }
        hk_bcsr_free(&W);
        hk_bcsr_free(&K);
    }
    /* NaN and infinite blocks (the rule's max with a NaN norm: strong only by the other side
     * when that side is the number) */
    HK_ASSERT_OK(hk_gen_elasticity3d(6, 5, 4, &K));
    for (int64_t i = 10; i < K.nbrows; i += 17)
        for (int64_t p = K.rowptr[i]; p < K.rowptr[i + 1]; p++)
            if (K.colind[p] != i) {
                K.val[(size_t)p * 9 + (i % 3 == 0 ? 4 : 1)] = i % 2 ? NAN : INFINITY;
                break;
            }
    for (int t = 0; t < 3; t++) {
        hk_graph Sc = {0}, Sg = {0};
        HK_ASSERT_OK(strength(cpu(), &K, thetas[t], &Sc));
        HK_ASSERT_OK(strength(gpu(), &K, thetas[t], &Sg));
        same_graph(&Sc, &Sg);
        hk_graph_free(&Sc), hk_graph_free(&Sg);
    }
    hk_bcsr_free(&K);
    /* an empty matrix */
    hk_bcsr E = {0};
    E.bs = 3;
    E.rowptr = calloc(1, sizeof *E.rowptr);
    E.colind = malloc(sizeof *E.colind);
    E.val = malloc(sizeof *E.val);
    hk_graph S0 = {0};
    HK_ASSERT_OK(strength(gpu(), &E, 0.1, &S0));
    CU_ASSERT(S0.n == 0 && S0.nnz == 0 && S0.rowptr[0] == 0);
    hk_graph_free(&S0);
    hk_bcsr_free(&E);
}

/* agg and nagg from both backends on host graph S; identical. Returns the CPU aggregates. */
static int32_t *both_aggregate(const hk_graph *S, int64_t *nagg)
{
    const int64_t n = S->n;
    int32_t *ac = malloc((size_t)(n ? n : 1) * sizeof *ac), *ag = malloc((size_t)(n ? n : 1) * 4);
    int64_t nc = -1, ng = -2;
    HK_ASSERT_OK(aggregate(cpu(), S, ac, &nc));
    hk_graph D = {0};
    HK_ASSERT_OK(hk_graph_alloc(gpu(), S->n, S->m, S->nnz, &D));
    HK_ASSERT_OK(gpu()->copy_to(D.rowptr, S->rowptr, (size_t)(n + 1) * sizeof(int64_t)));
    if (S->nnz) HK_ASSERT_OK(gpu()->copy_to(D.colind, S->colind, (size_t)S->nnz * 4));
    int32_t *dagg = NULL;
    HK_ASSERT_OK(gpu()->alloc((void **)&dagg, (size_t)(n ? n : 1) * 4));
    HK_ASSERT_OK(aggregate(gpu(), &D, dagg, &ng));
    if (n) HK_ASSERT_OK(gpu()->copy_from(ag, dagg, (size_t)n * 4));
    CU_ASSERT_EQUAL(nc, ng);
    CU_ASSERT_EQUAL(memcmp(ac, ag, (size_t)n * 4), 0);
    gpu()->dealloc(dagg);
    hk_graph_free(&D);
    free(ag);
    *nagg = nc;
    return ac;
}

static void test_cuda_aggregate(void)
{
    hk_bcsr K;
    HK_ASSERT_OK(hk_gen_elasticity3d(30, 30, 30, &K));
    hk_graph S = {0};
    HK_ASSERT_OK(strength(cpu(), &K, 0.08, &S));
    int64_t nagg = 0;
    int32_t *agg = both_aggregate(&S, &nagg);
    printf("\n    31^3-node hex elasticity: %lld aggregates, mean size %.1f nodes ",
           (long long)nagg, check_aggregation(&S, agg, nagg));
    free(agg);
    hk_graph_free(&S);
    hk_bcsr_free(&K);
    /* random symmetric graphs, a single node, and an unsymmetric pattern (same rule, same
     * result even where the properties of the symmetric case do not hold) */
    const int64_t sizes[3] = {1, 300, 900};
    for (int c = 0; c < 3; c++) {
        random_graph(sizes[c], 10, 40 + c, &S);
        agg = both_aggregate(&S, &nagg);
        check_aggregation(&S, agg, nagg);
        free(agg);
        hk_graph_free(&S);
    }
    HK_ASSERT_OK(hk_gen_random(3000, 3000, 1, 5, 1, 77, &K));
    HK_ASSERT_OK(hk_graph_alloc(cpu(), 3000, 3000, K.rowptr[3000], &S));
    int64_t q = 0;
    for (int64_t i = 0; i < 3000; i++) {
        S.rowptr[i] = q;
        for (int64_t p = K.rowptr[i]; p < K.rowptr[i + 1]; p++)
            if (K.colind[p] != i) S.colind[q++] = K.colind[p];
    }
    S.rowptr[3000] = q;
    S.nnz = q;
    agg = both_aggregate(&S, &nagg);
    CU_ASSERT(nagg > 0);
    free(agg);
    hk_graph_free(&S);
    hk_bcsr_free(&K);
}

/* T and Bc from both backends on the same input: same pattern, same bytes. */
static void both_tentative(const int32_t *agg, int64_t nagg, int64_t nn, int b, int nns,
                           const double *B)
{
    const size_t nbc = (size_t)nagg * nns * nns;
    double *Bcc = malloc((nbc ? nbc : 1) * sizeof *Bcc), *Bcg = malloc((nbc ? nbc : 1) * 8);
    hk_bmat Tc = {0}, Tg = {0}, Th = {0};
    HK_ASSERT_OK(tentative(cpu(), agg, nagg, nn, b, nns, B, &Tc, Bcc));
    int32_t *dagg = dev_copy(agg, (size_t)nn * 4);
    double *dB = dev_copy(B, (size_t)nn * b * nns * 8), *dBc = dev_copy(NULL, nbc * 8);
    CU_ASSERT_FATAL(dagg && dB && dBc);
    HK_ASSERT_OK(tentative(gpu(), dagg, nagg, nn, b, nns, dB, &Tg, dBc));
    HK_ASSERT_OK(hk_bmat_to_host(&Tg, &Th));
    if (nbc) HK_ASSERT_OK(gpu()->copy_from(Bcg, dBc, nbc * 8));
    CU_ASSERT(Th.br == b && Th.bc == nns && Th.nbrows == nn && Th.nbcols == nagg);
    CU_ASSERT_EQUAL_FATAL(Th.nnzb, Tc.nnzb);
    CU_ASSERT_EQUAL(memcmp(Th.rowptr, Tc.rowptr, (size_t)(nn + 1) * 8), 0);
    CU_ASSERT_EQUAL(memcmp(Th.colind, Tc.colind, (size_t)Tc.nnzb * 4), 0);
    CU_ASSERT_EQUAL(memcmp(Th.val, Tc.val, (size_t)Tc.nnzb * b * nns * sizeof(double)), 0);
    CU_ASSERT_EQUAL(memcmp(Bcg, Bcc, nbc * sizeof(double)), 0);
    check_tentative(agg, nagg, nn, b, nns, B, &Th, Bcg);
    gpu()->dealloc(dagg), gpu()->dealloc(dB), gpu()->dealloc(dBc);
    hk_bmat_free(&Tc), hk_bmat_free(&Tg), hk_bmat_free(&Th);
    free(Bcc), free(Bcg);
}

static void test_cuda_tentative(void)
{
    hk_bcsr K;
    const int nx = 24, ny = 20, nz = 16;
    HK_ASSERT_OK(hk_gen_elasticity3d(nx, ny, nz, &K));
    hk_graph S = {0};
    HK_ASSERT_OK(strength(cpu(), &K, 0.08, &S));
    int64_t nagg = 0;
    int32_t *agg = malloc((size_t)S.n * sizeof *agg);
    HK_ASSERT_OK(aggregate(cpu(), &S, agg, &nagg));
    double *xyz = grid_coords(nx, ny, nz), *B = rigid_modes(S.n, xyz);
    both_tentative(agg, nagg, S.n, 3, 6, B);
    /* one scalar dof per node with two vectors; 1- and 2-node aggregates; an empty one */
    both_tentative(agg, nagg, S.n, 1, 2, B);
    /* aggregates too large for a warp's shared memory (the kernel's global-memory path) */
    int32_t *two = malloc((size_t)S.n * sizeof *two);
    for (int64_t i = 0; i < S.n; i++)
        two[i] = i % 3 == 2 ? -1 : (int32_t)(i % 3);
    both_tentative(two, 2, S.n, 3, 6, B);
    /* runs of consecutive nodes: sizes about a warp's 32 rows and the shared-memory share
     * (170 nodes of 3 x 6, 85 of 6 x 6, 512 of 3 x 2) on both sides */
    const int64_t runs[12] = {1, 10, 11, 32, 33, 85, 86, 170, 171, 512, 513, 700};
    int64_t nrun = 0;
    for (int64_t i = 0, k = 0; i < S.n; k++, nrun++)
        for (int64_t r = 0; r < runs[k % 12] && i < S.n; r++)
            two[i++] = (int32_t)nrun;
    both_tentative(two, nrun, S.n, 3, 6, B);
    both_tentative(two, nrun, S.n / 2, 6, 6, B);
    both_tentative(two, nrun, S.n, 3, 2, B);
    free(two);
    int32_t small[6] = {0, 1, 1, -1, 2, 2};
    const double pts[18] = {0.3, 0.1, 0.7, 1, 0, 0, 1, 1, 0, 5, 5, 5, 0, 0, 1, 2, 0.5, 1};
    double *Bs = rigid_modes(6, pts);
    both_tentative(small, 3, 6, 3, 6, Bs);
    both_tentative(small, 4, 6, 3, 6, Bs);
    /* a bad aggregate id is refused */
    small[2] = 7;
    int32_t *dagg = dev_copy(small, sizeof small);
    double *dB = dev_copy(Bs, 18 * 6 * 8), *dBc = dev_copy(NULL, 3 * 36 * 8);
    hk_bmat T = {0};
    CU_ASSERT_EQUAL(gpu()->amg_tentative(dagg, 3, 6, 3, 6, dB, &T, dBc), HK_ERR_ARG);
    hk_error_clear();
    gpu()->dealloc(dagg), gpu()->dealloc(dB), gpu()->dealloc(dBc);
    free(Bs), free(B), free(xyz), free(agg);
    hk_graph_free(&S);
    hk_bcsr_free(&K);
}

HK_DEVICE_SUITE(cuda_aggregate, {"strength graph identical to the CPU's", test_cuda_strength},
                {"aggregates identical to the CPU's", test_cuda_aggregate},
                {"tentative prolongator equal to the CPU's", test_cuda_tentative})
