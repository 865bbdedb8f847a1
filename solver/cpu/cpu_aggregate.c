/* The aggregation ops of smoothed-aggregation AMG on the CPU: strength graph of the node blocks,
 * distance-2 maximal-independent-set aggregation, tentative prolongator by a QR per aggregate.
 * The rules are in docs/amg-aggregation.md. cuda/cuda_aggregate.cu performs the same arithmetic
 * in the same order (this file is compiled without fused multiply-add contraction), and every
 * parallel step reads only the previous step's arrays, so both backends and every thread count
 * give the same graph, the same aggregates and the same digits. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_impl.h"

/* ---- strength -------------------------------------------------------------------------- */

/* Frobenius norm of a b x b block in an order that a transposed block repeats exactly: the
 * diagonal entries, then the pairs (r, c) and (c, r) for r < c added together. */
static double block_norm(const double *a, int b)
{
    double s = 0;
    for (int r = 0; r < b; r++)
        s = s + a[r * b + r] * a[r * b + r];
    for (int r = 0; r < b; r++)
        for (int c = r + 1; c < b; c++) {
            const double x = a[r * b + c] * a[r * b + c], y = a[c * b + r] * a[c * b + r];
            s = s + (x + y);
        }
    return sqrt(s);
}

/* Whether the entry at position p of block row i (column j != i) is strong. */
static int strong_entry(const hk_bmat *A, const double *dnorm, const char *isolated, double theta,
                        int64_t i, int64_t p)
{
    const int b = A->br;
    const int64_t j = A->colind[p];
    if (j == i || j >= A->nbrows || isolated[i] || isolated[j]) return 0;
    double nij = block_norm(A->val + (size_t)p * b * b, b);
    const int64_t q = hk_find_block(A->rowptr, A->colind, j, i);
    if (q >= 0) {
        const double nji = block_norm(A->val + (size_t)q * b * b, b);
        if (nji > nij) nij = nji;
    }
    return nij > theta * sqrt(dnorm[i] * dnorm[j]);
}

int hk_cpu_amg_strength(const hk_bmat *A, double theta, hk_graph *S)
{
    int ierr;
    memset(S, 0, sizeof *S);
    HK_CHECK(A->br == A->bc && A->br >= 1 && A->nbcols >= A->nbrows, HK_ERR_ARG,
             "amg_strength: the matrix must have square blocks and at least as many block "
             "columns as rows (got %lld x %lld block rows and columns of %d x %d blocks)",
             (long long)A->nbrows, (long long)A->nbcols, A->br, A->bc);
    HK_CHECK(theta >= 0 && isfinite(theta), HK_ERR_ARG,
             "amg_strength: threshold %g must be a finite number >= 0 (pc.amg.threshold)", theta);
    const int b = A->br;
    const int64_t n = A->nbrows;
    double *dnorm = NULL;
    char *isolated = NULL;
    int64_t *cnt = NULL;
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *dnorm, &dnorm));
    HK_TRY(hk_malloc((size_t)(n ? n : 1) * sizeof *isolated, &isolated));
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof *cnt, &cnt));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double d = 0;
        int iso = 1;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
            const double *v = A->val + (size_t)p * b * b;
            if (A->colind[p] == i)
                d = block_norm(v, b);
            else if (A->colind[p] < n) /* columns from nbrows on are not the graph's */
                for (int e = 0; e < b * b && iso; e++)
                    if (v[e] != 0) iso = 0;
        }
        dnorm[i] = d;
        isolated[i] = (char)iso;
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        int64_t c = 0;
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            c += strong_entry(A, dnorm, isolated, theta, i, p);
        cnt[i + 1] = c;
    }
    cnt[0] = 0;
    for (int64_t i = 0; i < n; i++)
        cnt[i + 1] += cnt[i];
    HK_TRY(hk_graph_alloc(&hk_backend_cpu, n, n, cnt[n], S));
    memcpy(S->rowptr, cnt, (size_t)(n + 1) * sizeof *cnt);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        int64_t k = S->rowptr[i];
        for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
            if (strong_entry(A, dnorm, isolated, theta, i, p)) S->colind[k++] = A->colind[p];
    }
    free(dnorm), free(isolated), free(cnt);
    return 0;
fail:
    free(dnorm), free(isolated), free(cnt);
    hk_graph_free(S);
    return ierr;
}

/* ---- aggregation ----------------------------------------------------------------------- */

/* Node states packed with the priority into one ordered 64-bit tuple (docs/amg-aggregation.md):
 * state in bits 62-63, hk_hash32(i) >> 2 in bits 32-61, the index i in bits 0-31. */
enum { AGG_OUT = 0, AGG_UNDECIDED = 1, AGG_ROOT = 2 };
static inline uint64_t agg_tuple(int state, int64_t i)
{
    return (uint64_t)state << 62 | (uint64_t)(hk_hash32((uint32_t)i) >> 2) << 32 | (uint64_t)i;
}

/* The aggregate an unaggregated node joins: among its neighbours' aggregates (cur >= 0) the one
 * with the most neighbours in it, ties to the smallest id; -1 when none. */
static int32_t agg_join(const hk_graph *S, const int32_t *cur, int64_t i)
{
    int32_t best = -1;
    int64_t bestc = 0;
    for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++) {
        const int32_t a = cur[S->colind[p]];
        if (a < 0) continue;
        int64_t c = 0;
        for (int64_t q = S->rowptr[i]; q < S->rowptr[i + 1]; q++)
            c += cur[S->colind[q]] == a;
        if (c > bestc || (c == bestc && a < best)) {
            best = a;
            bestc = c;
        }
    }
    return best;
}

int hk_cpu_amg_aggregate(const hk_graph *S, int32_t *agg, int64_t *nagg)
{
    int ierr;
    *nagg = 0;
    const int64_t n = S->n;
    HK_CHECK(S->n == S->m && n < INT32_MAX, HK_ERR_ARG,
             "amg_aggregate: the strength graph must be square with fewer than 2^31 nodes "
             "(got %lld x %lld)",
             (long long)S->n, (long long)S->m);
    uint64_t *t0 = NULL, *t1 = NULL, *t2 = NULL;
    int32_t *next = NULL;
    const size_t sz = (size_t)(n ? n : 1);
    HK_TRY(hk_malloc(sz * sizeof *t0, &t0));
    HK_TRY(hk_malloc(sz * sizeof *t1, &t1));
    HK_TRY(hk_malloc(sz * sizeof *t2, &t2));
    HK_TRY(hk_malloc(sz * sizeof *next, &next));

    /* distance-2 maximal independent set by rounds of two max-propagations */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        t0[i] = agg_tuple(S->rowptr[i + 1] > S->rowptr[i] ? AGG_UNDECIDED : AGG_OUT, i);
    for (;;) {
        int64_t undecided = 0;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) {
            uint64_t m = t0[i];
            for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++)
                if (t0[S->colind[p]] > m) m = t0[S->colind[p]];
            t1[i] = m;
        }
#pragma omp parallel for schedule(static) reduction(+ : undecided)
        for (int64_t i = 0; i < n; i++) {
            uint64_t m = t1[i];
            for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++)
                if (t1[S->colind[p]] > m) m = t1[S->colind[p]];
            uint64_t t = t0[i];
            if (t >> 62 == AGG_UNDECIDED) {
                if (m >> 62 == AGG_ROOT)
                    t = agg_tuple(AGG_OUT, i);
                else if (m == t)
                    t = agg_tuple(AGG_ROOT, i);
                else
                    undecided++;
            }
            t2[i] = t;
        }
        uint64_t *sw = t0;
        t0 = t2;
        t2 = sw;
        if (!undecided) break;
    }

    /* roots numbered in index order; each root with its neighbours (the smallest root id
     * where a node sees several roots, which a symmetric graph never has) */
    int64_t nroot = 0;
    for (int64_t i = 0; i < n; i++)
        next[i] = t0[i] >> 62 == AGG_ROOT ? (int32_t)nroot++ : -1;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        int32_t a = next[i];
        if (a < 0)
            for (int64_t p = S->rowptr[i]; p < S->rowptr[i + 1]; p++) {
                const int32_t j = S->colind[p];
                if (t0[j] >> 62 == AGG_ROOT && (a < 0 || next[j] < a)) a = next[j];
            }
        agg[i] = a;
    }
    /* the rest join a neighbour's aggregate, in rounds until nothing changes */
    for (;;) {
        int64_t changed = 0;
#pragma omp parallel for schedule(static) reduction(+ : changed)
        for (int64_t i = 0; i < n; i++) {
            int32_t a = agg[i];
            if (a < 0) {
                a = agg_join(S, agg, i);
                changed += a >= 0;
            }
            next[i] = a;
        }
        if (!changed) break;
        memcpy(agg, next, (size_t)n * sizeof *agg);
    }
    *nagg = nroot;
    free(t0), free(t1), free(t2), free(next);
    return 0;
fail:
    free(t0), free(t1), free(t2), free(next);
    return ierr;
}

/* ---- tentative prolongator ------------------------------------------------------------- */

/* Column x . column y of an m-row column-major matrix W, summed in the order of a warp's
 * reduction (docs/amg-aggregation.md): lane l sums rows l, l+32, l+64, ... in order, then the
 * 32 lane sums are added pairwise by a butterfly tree (lanes l and l + h for h = 16, 8, 4, 2,
 * 1). The CUDA kernel computes exactly this with one lane per partial sum and xor shuffles. */
static double qr_dot(const double *W, int64_t m, int x, int y)
{
    const double *u = W + (size_t)x * m, *v = W + (size_t)y * m;
    double part[32];
    for (int l = 0; l < 32; l++) {
        double s = 0;
        for (int64_t e = l; e < m; e += 32)
            s = s + u[e] * v[e];
        part[l] = s;
    }
    for (int h = 16; h >= 1; h /= 2)
        for (int l = 0; l < h; l++)
            part[l] = part[l] + part[l + h];
    return part[0];
}

int hk_cpu_amg_tentative(const int32_t *agg, int64_t nagg, int64_t nnodes, int b, int nns,
                         const double *B, hk_bmat *T, double *Bc)
{
    int ierr;
    memset(T, 0, sizeof *T);
    HK_CHECK(b >= 1 && nns >= 1 && nns <= 64 && nnodes >= 0 && nagg >= 0 && nagg < INT32_MAX,
             HK_ERR_ARG,
             "amg_tentative: bad sizes (%lld nodes of %d dofs, %lld aggregates, %d near-null "
             "vectors; need at least one dof per node and 1..64 vectors)",
             (long long)nnodes, b, (long long)nagg, nns);
    int64_t bad = -1;
    for (int64_t i = 0; i < nnodes && bad < 0; i++)
        if (agg[i] < -1 || agg[i] >= nagg) bad = i;
    HK_CHECK(bad < 0, HK_ERR_ARG,
             "amg_tentative: node %lld has aggregate %d outside -1..%lld; pass the output of "
             "amg_aggregate with its count",
             (long long)bad, bad >= 0 ? agg[bad] : 0, (long long)nagg - 1);
    int64_t *start = NULL, *list = NULL;
    double *work = NULL;
    HK_TRY(hk_malloc((size_t)(nagg + 1) * sizeof *start, &start));
    HK_TRY(hk_malloc((size_t)(nnodes ? nnodes : 1) * sizeof *list, &list));

    /* T's pattern: one block per aggregated node, in node order */
    int64_t nnzb = 0;
    for (int64_t i = 0; i < nnodes; i++)
        nnzb += agg[i] >= 0;
    HK_TRY(hk_bmat_alloc(&hk_backend_cpu, b, nns, nnodes, nagg, nnzb, T));
    T->rowptr[0] = 0;
    for (int64_t i = 0; i < nnodes; i++)
        T->rowptr[i + 1] = T->rowptr[i] + (agg[i] >= 0);
    /* the nodes of each aggregate in increasing order (counting sort) */
    memset(start, 0, (size_t)(nagg + 1) * sizeof *start);
    for (int64_t i = 0; i < nnodes; i++)
        if (agg[i] >= 0) start[agg[i] + 1]++;
    for (int64_t a = 0; a < nagg; a++)
        start[a + 1] += start[a];
    for (int64_t i = 0; i < nnodes; i++)
        if (agg[i] >= 0) list[start[agg[i]]++] = i;
    for (int64_t a = nagg; a > 0; a--)
        start[a] = start[a - 1];
    start[0] = 0;

    const int64_t n = nnodes * b, ld = nagg * nns;
    double *V = T->val;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nnodes; i++) {
        if (agg[i] < 0) continue;
        const int64_t p = T->rowptr[i];
        T->colind[p] = agg[i];
        for (int r = 0; r < b; r++)
            for (int c = 0; c < nns; c++)
                V[((size_t)p * b + r) * nns + c] = B[(size_t)(i * b + r) + (size_t)n * c];
    }
    /* left-looking modified Gram-Schmidt on each aggregate's rows: gathered into a thread's
     * column-major copy W (local row e = k*b + r for node k of the aggregate), then back */
    int64_t maxs = 0;
    for (int64_t a = 0; a < nagg; a++)
        if (start[a + 1] - start[a] > maxs) maxs = start[a + 1] - start[a];
    const int nt = omp_get_max_threads();
    const size_t wlen = (size_t)(maxs ? maxs : 1) * b * nns;
    HK_TRY(hk_malloc((size_t)nt * wlen * sizeof *work, &work));
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t a = 0; a < nagg; a++) {
        const int64_t *nodes = list + start[a], s = start[a + 1] - start[a], m = s * b;
        double *W = work + (size_t)omp_get_thread_num() * wlen;
        double *R = Bc + (size_t)a * nns; /* R[r + ld*c] */
        for (int64_t k = 0; k < s; k++)
            for (int r = 0; r < b; r++)
                for (int c = 0; c < nns; c++)
                    W[(size_t)c * m + k * b + r] =
                        V[((size_t)T->rowptr[nodes[k]] * b + r) * nns + c];
        uint64_t kept = 0;
        for (int j = 0; j < nns; j++) {
            double *vj = W + (size_t)j * m;
            const double orig = sqrt(qr_dot(W, m, j, j));
            for (int q = 0; q < nns; q++)
                if (q > j) R[q + ld * j] = 0;
            for (int q = 0; q < j; q++) {
                double d = 0;
                if (kept >> q & 1) {
                    const double *vq = W + (size_t)q * m;
                    d = qr_dot(W, m, q, j);
                    for (int64_t e = 0; e < m; e++)
                        vj[e] = vj[e] - d * vq[e];
                }
                R[q + ld * j] = d;
            }
            const double nrm = sqrt(qr_dot(W, m, j, j));
            if (nrm > 1e-10 * orig) {
                kept |= (uint64_t)1 << j;
                for (int64_t e = 0; e < m; e++)
                    vj[e] = vj[e] / nrm;
                R[j + ld * j] = nrm;
            } else {
                for (int64_t e = 0; e < m; e++)
                    vj[e] = 0;
                R[j + ld * j] = 0;
            }
        }
        for (int64_t k = 0; k < s; k++)
            for (int r = 0; r < b; r++)
                for (int c = 0; c < nns; c++)
                    V[((size_t)T->rowptr[nodes[k]] * b + r) * nns + c] =
                        W[(size_t)c * m + k * b + r];
    }
    free(start), free(list), free(work);
    return 0;
fail:
    free(start), free(list), free(work);
    hk_bmat_free(T);
    return ierr;
}
