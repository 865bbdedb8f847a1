/* hooke solve on several processes (mpirun -np N hooke solve A.mtx ..., docs/parallel.md).
 *
 * Rank 0 reads (or generates) the system, partitions its block rows (METIS, or contiguous
 * blocks), renumbers them part after part and sends each process its rows with global column
 * indices and its entries of b; every process sets up the distributed solver on its rows and
 * solves; rank 0 gathers x in the input's numbering, prints and writes what one process does.
 * Only rank 0 prints; every stage's status is agreed by all processes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "hooke/solver.h"

enum { TAG_ROWS = 7201, TAG_X = 7202 };

/* The system on rank 0: K and b (A * ones without --rhs, then *one = 1). Messages on stderr. */
static int read_system(const char *mtx, const char *gen, const char *rhs, int bs, hk_bcsr *K,
                       double **b, int *ones)
{
    hk_bcsr A = {0};
    double *coords = NULL;
    int dim = 0;
    *ones = 0;
    if (gen) {
        if (hk_app_generate(gen, "hooke solve", K, &coords, &dim)) return HK_ERR_ARG;
        free(coords);
    } else {
        if (hk_mm_read_matrix(mtx, &A)) goto say;
        if (bs > 1) {
            int e = hk_bcsr_to_blocks(&A, bs, K);
            hk_bcsr_free(&A);
            if (e) goto say;
        } else {
            *K = A;
        }
    }
    const int64_t n = K->nbrows * K->bs;
    if (K->nbrows != K->nbcols) {
        fprintf(stderr, "hooke solve: %s is %lld x %lld; a linear system needs a square matrix\n",
                gen ? gen : mtx, (long long)n, (long long)(K->nbcols * K->bs));
        return HK_ERR_ARG;
    }
    if (rhs) {
        int64_t nb = 0;
        if (hk_mm_read_vector(rhs, &nb, b)) goto say;
        if (nb != n) {
            fprintf(stderr,
                    "hooke solve: the right-hand side %s has %lld entries but the matrix has "
                    "%lld rows\n",
                    rhs, (long long)nb, (long long)n);
            return HK_ERR_ARG;
        }
        return 0;
    }
    double *one = NULL;
    if (hk_malloc((size_t)(n + 1) * sizeof *one, &one) ||
        hk_malloc((size_t)(n + 1) * sizeof **b, b)) {
        free(one);
        goto say;
    }
    for (int64_t i = 0; i < n; i++)
        one[i] = 1.0;
    hk_bcsr_spmv(K, one, *b);
    free(one);
    *ones = 1;
    return 0;
say:
    fprintf(stderr, "hooke solve: %s\n", hk_error_message());
    return HK_ERR_ARG;
}

/* Process q's rows (the old rows rows[0..m), renumbered by new_of) as a block CSR with global
 * column indices, and their entries of b. */
static int rows_of(const hk_bcsr *K, const double *b, const int32_t *rows, int64_t m,
                   const int32_t *new_of, hk_bcsr *L, double **bl)
{
    const int bs = K->bs, bb = bs * bs;
    int64_t nnz = 0;
    for (int64_t k = 0; k < m; k++)
        nnz += K->rowptr[rows[k] + 1] - K->rowptr[rows[k]];
    memset(L, 0, sizeof *L);
    L->bs = bs;
    L->nbrows = m;
    L->nbcols = K->nbcols;
    HK_CALL(hk_malloc((size_t)(m + 1) * sizeof *L->rowptr, &L->rowptr));
    HK_CALL(hk_malloc((size_t)(nnz + 1) * sizeof *L->colind, &L->colind));
    HK_CALL(hk_malloc((size_t)(nnz + 1) * bb * sizeof *L->val, &L->val));
    HK_CALL(hk_malloc((size_t)(m * bs + 1) * sizeof **bl, bl));
    int64_t q = 0;
    L->rowptr[0] = 0;
    for (int64_t k = 0; k < m; k++) {
        const int64_t i = rows[k];
        for (int64_t p = K->rowptr[i]; p < K->rowptr[i + 1]; p++, q++)
            L->colind[q] = new_of[K->colind[p]];
        memcpy(L->val + (size_t)L->rowptr[k] * bb, K->val + (size_t)K->rowptr[i] * bb,
               (size_t)(K->rowptr[i + 1] - K->rowptr[i]) * bb * sizeof *L->val);
        L->rowptr[k + 1] = q;
        memcpy(*bl + k * bs, b + i * bs, (size_t)bs * sizeof **bl);
    }
    return 0;
}

static int send_rows(const hk_comm *c, int to, const hk_bcsr *L, const double *bl, int64_t row0)
{
    const int64_t head[4] = {L->bs, L->nbrows, L->nbcols, row0};
    const int64_t nnz = L->rowptr[L->nbrows];
    HK_CALL(hk_comm_send(c, head, sizeof head, to, TAG_ROWS));
    HK_CALL(hk_comm_send(c, L->rowptr, (size_t)(L->nbrows + 1) * sizeof *L->rowptr, to, TAG_ROWS));
    HK_CALL(hk_comm_send(c, L->colind, (size_t)nnz * sizeof *L->colind, to, TAG_ROWS));
    HK_CALL(hk_comm_send(c, L->val, (size_t)nnz * L->bs * L->bs * sizeof *L->val, to, TAG_ROWS));
    return hk_comm_send(c, bl, (size_t)(L->nbrows * L->bs) * sizeof *bl, to, TAG_ROWS);
}

static int recv_rows(const hk_comm *c, hk_bcsr *L, double **bl, int64_t *row0)
{
    int64_t head[4];
    memset(L, 0, sizeof *L);
    HK_CALL(hk_comm_recv(c, head, sizeof head, 0, TAG_ROWS));
    L->bs = (int)head[0];
    L->nbrows = head[1];
    L->nbcols = head[2];
    *row0 = head[3];
    HK_CALL(hk_malloc((size_t)(L->nbrows + 1) * sizeof *L->rowptr, &L->rowptr));
    HK_CALL(hk_comm_recv(c, L->rowptr, (size_t)(L->nbrows + 1) * sizeof *L->rowptr, 0, TAG_ROWS));
    const int64_t nnz = L->rowptr[L->nbrows];
    HK_CALL(hk_malloc((size_t)(nnz + 1) * sizeof *L->colind, &L->colind));
    HK_CALL(hk_malloc((size_t)(nnz + 1) * L->bs * L->bs * sizeof *L->val, &L->val));
    HK_CALL(hk_malloc((size_t)(L->nbrows * L->bs + 1) * sizeof **bl, bl));
    HK_CALL(hk_comm_recv(c, L->colind, (size_t)nnz * sizeof *L->colind, 0, TAG_ROWS));
    HK_CALL(hk_comm_recv(c, L->val, (size_t)nnz * L->bs * L->bs * sizeof *L->val, 0, TAG_ROWS));
    return hk_comm_recv(c, *bl, (size_t)(L->nbrows * L->bs) * sizeof **bl, 0, TAG_ROWS);
}

/* Rank 0: partition, renumber part after part, keep its own rows and send the others'. The
 * old row of new row r is rows_new[r] (for gathering x). */
static int distribute(const hk_comm *c, const hk_bcsr *K, const double *b, hk_bcsr *L, double **bl,
                      int64_t *row0, int32_t **old_of, int64_t **starts)
{
    const int P = hk_comm_size(c);
    const int64_t n = K->nbrows;
    int ierr = 0;
    int32_t *part = NULL, *new_of = NULL;
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof *part, &part));
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof *new_of, &new_of));
    HK_TRY(hk_malloc((size_t)(n + 1) * sizeof **old_of, old_of));
    HK_TRY(hk_calloc((size_t)P + 1, sizeof **starts, starts));
    HK_TRY(hk_partition_graph(n, K->rowptr, K->colind, P, part));
    for (int64_t i = 0; i < n; i++)
        (*starts)[part[i] + 1]++;
    for (int q = 0; q < P; q++)
        (*starts)[q + 1] += (*starts)[q];
    {
        int64_t *next = NULL;
        HK_TRY(hk_malloc((size_t)(P + 1) * sizeof *next, &next));
        memcpy(next, *starts, (size_t)P * sizeof *next);
        for (int64_t i = 0; i < n; i++) {
            new_of[i] = (int32_t)next[part[i]]++;
            (*old_of)[new_of[i]] = (int32_t)i;
        }
        free(next);
    }
    for (int q = P - 1; q >= 0 && !ierr; q--) { /* rank 0's own last: it keeps them */
        hk_bcsr Lq;
        double *bq = NULL;
        const int64_t r0 = (*starts)[q], m = (*starts)[q + 1] - r0;
        ierr = rows_of(K, b, *old_of + r0, m, new_of, &Lq, &bq);
        if (!ierr && q > 0) ierr = send_rows(c, q, &Lq, bq, r0);
        if (q > 0 || ierr) {
            hk_bcsr_free(&Lq);
            free(bq);
        } else {
            *L = Lq;
            *bl = bq;
            *row0 = r0;
        }
    }
fail:
    free(part);
    free(new_of);
    return ierr;
}

int hk_cmd_solve_mpi(const char *mtx, const char *gen, const char *rhs, const char *out, int bs,
                     hk_options *o)
{
    const hk_comm *c = hk_comm_world();
    const int me = hk_comm_rank(c), P = hk_comm_size(c);
    hk_bcsr K = {0}, L = {0};
    double *b = NULL, *bl = NULL, *xl = NULL, *x = NULL;
    int32_t *old_of = NULL;
    int64_t *starts = NULL, row0 = 0;
    hk_solver *s = NULL;
    int ones = 0, rc = 2, ierr;
    /* rank 0 reads and distributes; a failure there stops everyone (its message is printed) */
    ierr = me == 0 ? read_system(mtx, gen, rhs, bs, &K, &b, &ones) : 0;
    if (hk_comm_agree(c, ierr)) goto done;
    if (me == 0) {
        ierr = distribute(c, &K, b, &L, &bl, &row0, &old_of, &starts);
        if (ierr) fprintf(stderr, "hooke solve: %s\n", hk_error_message());
    } else {
        ierr = recv_rows(c, &L, &bl, &row0);
    }
    if (hk_comm_agree(c, ierr)) goto done;
    rc = 1;
    /* every process: the distributed solver on its rows */
    ierr = hk_solver_create_dist(c, row0, &L, NULL, o, &s);
    if (ierr) {
        if (me == 0) fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        rc = 2;
        goto done;
    }
    const int64_t nl = L.nbrows * L.bs;
    if (hk_calloc((size_t)nl + 1, sizeof *xl, &xl)) goto fail_local;
    if (me == 0) {
        const int64_t n = K.nbrows * K.bs;
        printf("matrix: %s, %lld unknowns, %lld nonzeros, blocks of %d\n", gen ? gen : mtx,
               (long long)n, (long long)(K.rowptr[K.nbrows] * K.bs * K.bs), K.bs);
        printf("processes: %d, rows partitioned by %s (%lld .. %lld block rows each)\n", P,
               hk_partitioner_name(), (long long)(starts[1] - starts[0]),
               (long long)(starts[P] - starts[P - 1]));
        printf("solver: ");
        hk_solver_describe(s, stdout);
        fflush(stdout);
    }
    hk_result res;
    ierr = hk_solver_solve(s, bl, xl, &res);
    if (ierr) { /* agreed inside (bad input, or the same numerical failure everywhere) */
        if (me == 0) fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        goto done;
    }
    /* x in the input's numbering on rank 0 */
    if (me == 0) {
        const int64_t n = K.nbrows * K.bs;
        double *xn = NULL;
        ierr = hk_malloc((size_t)(n + 1) * sizeof *xn, &xn);
        if (!ierr) ierr = hk_malloc((size_t)(n + 1) * sizeof *x, &x);
        if (!ierr) memcpy(xn, xl, (size_t)nl * sizeof *xn);
        for (int q = 1; q < P && !ierr; q++)
            ierr = hk_comm_recv(c, xn + starts[q] * K.bs,
                                (size_t)(starts[q + 1] - starts[q]) * K.bs * sizeof *xn, q, TAG_X);
        for (int64_t r = 0; !ierr && r < K.nbrows; r++)
            memcpy(x + (int64_t)old_of[r] * K.bs, xn + r * K.bs, (size_t)K.bs * sizeof *x);
        free(xn);
    } else {
        ierr = hk_comm_send(c, xl, (size_t)nl * sizeof *xl, 0, TAG_X);
    }
    if (hk_comm_agree(c, ierr)) goto done;
    rc = hk_reason_converged(res.reason) ? 0 : 1;
    if (me == 0) {
        const int64_t n = K.nbrows * K.bs;
        printf("reason: %s\n", hk_reason_name(res.reason));
        printf("iterations: %d\n", res.iterations);
        printf("true residual: %.3e (||b - A x|| / ||b||, fp64)\n", res.true_residual);
        if (ones) {
            double e = 0;
            for (int64_t i = 0; i < n; i++) {
                double dv = x[i] - 1.0;
                dv = dv < 0 ? -dv : dv;
                if (!(dv <= e)) e = dv;
            }
            printf("max error vs ones: %.3e\n", e);
        }
        printf("setup: %.4f s (backend start %.4f, upload %.4f, check %.4f, format %.4f, "
               "preconditioner %.4f), solve: %.4f s (%.4f ms per iteration)\n",
               res.setup_seconds, res.setup_start_seconds, res.setup_upload_seconds,
               res.setup_check_seconds, res.setup_format_seconds, res.setup_pc_seconds,
               res.solve_seconds, res.iterations ? 1e3 * res.solve_seconds / res.iterations : 0.0);
        if (out && hk_mm_write_vector(out, n, x)) {
            fprintf(stderr, "hooke solve: %s\n", hk_error_message());
            rc = 1;
        }
        fflush(stdout);
        if (rc == 1 && hk_reason_converged(res.reason) == 0)
            fprintf(stderr, "hooke solve: not converged (%s) after %d iterations\n",
                    hk_reason_name(res.reason), res.iterations);
    }
    /* one exit status for every process (the output written by rank 0 included) */
    if (hk_comm_agree(c, rc ? HK_ERR_NUMERIC : 0)) rc = rc ? rc : 1;
    goto done;
fail_local:
    fprintf(stderr, "hooke solve: process %d: %s\n", me, hk_error_message());
    rc = 1;
done:
    hk_solver_destroy(s);
    hk_bcsr_free(&K);
    hk_bcsr_free(&L);
    free(b);
    free(bl);
    free(xl);
    free(x);
    free(old_of);
    free(starts);
    return rc;
}
