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

enum { TAG_X = 7202, TAG_COORDS = 7203 };

/* The system on rank 0: K and b (A * ones without --rhs, then *one = 1), the node coordinates
 * of a generated matrix or of --coords (*coords, *dim; else NULL, 0). Messages on stderr. */
static int read_system(const char *mtx, const char *gen, const char *rhs, const char *coords_file,
                       int bs, hk_bcsr *K, double **b, int *ones, double **coords, int *dim)
{
    hk_bcsr A = {0};
    *ones = 0;
    if (gen) {
        if (hk_app_generate(gen, "hooke solve", K, coords, dim)) return HK_ERR_ARG;
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
    if (coords_file) { /* the file's replace the generator's */
        free(*coords);
        if (hk_solve_read_coords(coords_file, K, coords, dim)) return HK_ERR_ARG;
    }
    if (rhs) return hk_solve_read_rhs(rhs, n, b) ? HK_ERR_ARG : 0;
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

/* Every process's node coordinates (its rows', in its order) from rank 0's (the input's order;
 * dim 0: none): old_of gives each renumbered row's input row, starts each process's first. */
static int scatter_coords(const hk_comm *c, const double *coords, int dim, const int32_t *old_of,
                          const int64_t *starts, int64_t nrows, double **mine, int *dim_out)
{
    const int me = hk_comm_rank(c), P = hk_comm_size(c);
    double *buf = NULL;
    int ierr = 0;
    *mine = NULL;
    HK_CALL(hk_comm_bcast(c, &dim, sizeof dim, 0));
    *dim_out = dim;
    if (!dim) return 0;
    ierr = hk_malloc((size_t)(dim * nrows + 1) * sizeof **mine, mine);
    if (me == 0) {
        int64_t most = 0;
        for (int q = 0; q < P; q++)
            if (starts[q + 1] - starts[q] > most) most = starts[q + 1] - starts[q];
        if (!ierr) ierr = hk_malloc((size_t)(dim * most + 1) * sizeof *buf, &buf);
    }
    HK_TRY(hk_comm_agree(c, ierr)); /* every process in the messages below, or none */
    if (me == 0) {
        for (int q = P - 1; q >= 0; q--) { /* rank 0's own last, into *mine */
            double *to = q ? buf : *mine;
            for (int64_t r = starts[q]; r < starts[q + 1]; r++)
                memcpy(to + (r - starts[q]) * dim, coords + (int64_t)old_of[r] * dim,
                       (size_t)dim * sizeof *to);
            if (q)
                HK_TRY(hk_comm_send(c, buf, (size_t)(starts[q + 1] - starts[q]) * dim * sizeof *buf,
                                    q, TAG_COORDS));
        }
    } else {
        HK_TRY(hk_comm_recv(c, *mine, (size_t)nrows * dim * sizeof **mine, 0, TAG_COORDS));
    }
fail:
    free(buf);
    return ierr;
}

int hk_cmd_solve_mpi(const char *mtx, const char *gen, const char *rhs, const char *coords_file,
                     const char *out, int bs, hk_options *o)
{
    const hk_comm *c = hk_comm_world();
    const int me = hk_comm_rank(c), P = hk_comm_size(c);
    hk_bcsr K = {0}, L = {0};
    double *b = NULL, *bl = NULL, *xl = NULL, *x = NULL;
    int32_t *old_of = NULL;
    int64_t *starts = NULL, row0 = 0;
    hk_solver *s = NULL;
    double *coords = NULL, *xyz = NULL;
    int ones = 0, rc = 2, ierr, dim = 0;
    /* rank 0 reads and distributes; a failure there stops everyone (its message is printed) */
    ierr = me == 0 ? read_system(mtx, gen, rhs, coords_file, bs, &K, &b, &ones, &coords, &dim) : 0;
    if (hk_comm_agree(c, ierr)) goto done;
    /* rank 0 partitions the rows; every process gets its own */
    int32_t *part = NULL;
    if (me == 0) {
        ierr = hk_malloc((size_t)(K.nbrows + 1) * sizeof *part, &part);
        if (!ierr) ierr = hk_partition_graph(K.nbrows, K.rowptr, K.colind, P, part);
    }
    ierr = hk_comm_agree(c, ierr);
    if (!ierr) ierr = hk_dist_scatter(c, &K, b, part, &L, &bl, &row0, &old_of);
    free(part);
    if (ierr) {
        if (me == 0) fprintf(stderr, "hooke solve: %s\n", hk_error_message());
        goto done;
    }
    /* the first row of every process, for gathering x */
    if (hk_calloc((size_t)P + 1, sizeof *starts, &starts) ||
        hk_comm_allgather(c, &row0, sizeof row0, starts))
        goto fail_local;
    starts[P] = me == 0 ? K.nbrows : 0;
    rc = 1;
    /* every process: its nodes' coordinates (pc=amg's rigid-body modes), the distributed
     * solver on its rows */
    if (scatter_coords(c, coords, dim, old_of, starts, L.nbrows, &xyz, &dim)) goto fail_local;
    const hk_nearnull nn = {.dim = xyz ? dim : 0, .coords = xyz};
    ierr = hk_solver_create_dist(c, row0, &L, xyz ? &nn : NULL, o, &s);
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
        hk_solve_print_result(&res, x, n, ones);
        if (out && (hk_app_make_parent_dirs(out) || hk_mm_write_vector(out, n, x))) {
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
    free(coords);
    free(xyz);
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
