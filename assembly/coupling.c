/* Rigid couplings (RBE2-like) of remote loads, by elimination.
 *
 * The reference point of coupling c gets d translations t and 3 rotations theta (2D: theta_z)
 * as two extra block rows of K after the mesh's nodes. Every node s of the coupled boundary
 * follows it rigidly: u_s = t + theta x (x_s - x_ref) = t + R_s theta. With T the map from
 * (free dofs, reference dofs) to all dofs, K <- T^T K T and f <- T^T f: rows and columns of
 * free nodes next to the boundary move to the reference point's columns, the boundary's own
 * rows keep only their diagonal (and solve to 0; hk_postproc recovers u_s). T has full column
 * rank when the boundary's nodes are not on one line, so K stays symmetric positive definite
 * and cg, amg and cholesky apply unchanged (Lagrange multipliers would make it indefinite,
 * penalties ill-conditioned). Applied after the elimination of the supports: a coupled node
 * must not be held by a support. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coupling.h"
#include "groups.h"

int hk_rigid_count(const hk_problem *p)
{
    int n = 0;
    for (int l = 0; l < p->nloads; l++)
        n += p->loads && p->loads[l].kind == HK_LOAD_REMOTE &&
             p->loads[l].coupling == HK_COUPLING_RIGID;
    return n;
}

/* R with u = R theta for the rotation part at offset r = x - x_ref: 3D theta x r = -[r]x theta;
 * 2D (theta_z, unused): theta (-r_y, r_x). */
static void rot_block(int d, const double r[3], double R[3][3])
{
    memset(R, 0, sizeof(double) * 9);
    if (d == 2) {
        R[0][0] = -r[1];
        R[1][0] = r[0];
        return;
    }
    R[0][1] = r[2], R[0][2] = -r[1];
    R[1][0] = -r[2], R[1][2] = r[0];
    R[2][0] = r[1], R[2][1] = -r[0];
}

static int cmp_i32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* C (d x d, row-major) += A B with A, B d x d; ta: use A^T. */
static void gemm_add(int d, const double *A, int ta, const double *B, double *C)
{
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            double s = 0;
            for (int k = 0; k < d; k++)
                s += (ta ? A[k * d + i] : A[i * d + k]) * B[k * d + j];
            C[i * d + j] += s;
        }
}

static double *block_at(hk_bcsr *K, int64_t i, int64_t j)
{
    int64_t pos = hk_asm_find_block(K, i, (int32_t)j);
    return pos < 0 ? NULL : K->val + (size_t)pos * (size_t)(K->bs * K->bs);
}

static void add_block(hk_bcsr *K, int64_t i, int64_t j, const double *B)
{
    double *dst = block_at(K, i, j);
    for (int k = 0; k < K->bs * K->bs; k++)
        dst[k] += B[k];
}

int hk_rigid_apply(const hk_problem *p, const hk_adj *n2c, hk_system *s)
{
    int ierr = 0;
    const hk_mesh *m = p->mesh;
    const int d = m->dim, bb = d * d;
    const int64_t nn = m->nnodes;
    const int nc = hk_rigid_count(p);
    const int64_t nb2 = nn + 2 * (int64_t)nc;
    hk_bcsr *K = &s->K, K2 = {0};
    int32_t *nodes = NULL, *cols = NULL, *load_of = NULL;
    int64_t *sptr = NULL, *slaves = NULL, *mark = NULL;
    double(*Rn)[3][3] = NULL;
    HK_CHECK(s->ndof == (int64_t)d * nb2 && K->nbrows == nn, HK_ERR_ARG,
             "hk_rigid_apply: the system is not sized for %d rigid couplings", nc);
    HK_TRY(hk_malloc((size_t)nc * sizeof *s->rigid_point + 1, &s->rigid_point));
    HK_TRY(hk_malloc((size_t)nn * sizeof *s->rigid_of + 1, &s->rigid_of));
    HK_TRY(hk_malloc((size_t)nc * sizeof *load_of + 1, &load_of));
    HK_TRY(hk_calloc((size_t)nn + 1, sizeof *Rn, &Rn));
    s->nrigid = nc;
    for (int64_t i = 0; i < nn; i++)
        s->rigid_of[i] = -1;
    for (int l = 0, c = 0; l < p->nloads; l++)
        if (p->loads[l].kind == HK_LOAD_REMOTE && p->loads[l].coupling == HK_COUPLING_RIGID)
            load_of[c++] = l;

    /* the coupled nodes: on cells, not held, in one coupling, not on one line */
    for (int c = 0; c < nc; c++) {
        const hk_load *ld = &p->loads[load_of[c]];
        const char *bn = hk_asm_boundary_name(m, ld->boundary);
        memcpy(s->rigid_point[c], ld->point, sizeof s->rigid_point[c]);
        int64_t n;
        HK_TRY(hk_group_nodes(m, ld->boundary, &n, &nodes));
        HK_TRY_CHECK(n > 0, HK_ERR_MODEL,
                     "the rigid coupling of the remote force on '%s' has no node; the group is "
                     "empty",
                     bn);
        double cen[3] = {0, 0, 0};
        for (int64_t k = 0; k < n; k++) {
            const int32_t v = nodes[k];
            const double *x = m->coords + 3 * (size_t)v;
            HK_TRY_CHECK(n2c->ptr[v + 1] > n2c->ptr[v], HK_ERR_MODEL,
                         "the rigid coupling on '%s' holds node %d, which belongs to no %dD "
                         "element; couple nodes of the meshed domain",
                         bn, v, d);
            for (int q = 0; q < d; q++)
                HK_TRY_CHECK(!s->fixed[(size_t)v * d + q], HK_ERR_MODEL,
                             "node %d at (%g, %g, %g) of '%s' is held by a support and coupled "
                             "rigidly to the remote force's reference point; use a distributing "
                             "coupling, or support the body elsewhere",
                             v, x[0], x[1], x[2], bn);
            HK_TRY_CHECK(s->rigid_of[v] < 0, HK_ERR_MODEL,
                         "node %d at (%g, %g, %g) is coupled rigidly by two remote forces (on "
                         "'%s' and '%s'); couple each node once, or use one remote force",
                         v, x[0], x[1], x[2],
                         hk_asm_boundary_name(m, p->loads[load_of[s->rigid_of[v]]].boundary), bn);
            s->rigid_of[v] = c;
            double r[3];
            for (int q = 0; q < 3; q++)
                r[q] = x[q] - ld->point[q], cen[q] += x[q] / (double)n;
            rot_block(d, r, Rn[v]);
        }
        /* J = sum (|r|^2 I - r r^T) about the nodes' centroid: singular when they are on one
         * line (3D) or one point, where a rotation would move no node */
        double J[3][3] = {{0}};
        for (int64_t k = 0; k < n; k++) {
            double r[3], rr = 0;
            for (int q = 0; q < 3; q++)
                r[q] = m->coords[3 * (size_t)nodes[k] + q] - cen[q], rr += r[q] * r[q];
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++)
                    J[a][b] += (a == b ? rr : 0) - r[a] * r[b];
        }
        double tr = J[0][0] + J[1][1] + J[2][2];
        double det = J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
                     J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
                     J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
        HK_TRY_CHECK(d == 2 ? J[2][2] > 0 : tr > 0 && det > 1e-12 * tr * tr * tr, HK_ERR_MODEL,
                     "the nodes of '%s' lie %s, so a rigid coupling leaves the reference "
                     "point's rotation free; couple a %s",
                     bn, d == 2 ? "at one point" : "on one line", d == 2 ? "curve" : "surface");
        free(nodes);
        nodes = NULL;
    }
    /* the coupled nodes of each coupling */
    HK_TRY(hk_calloc((size_t)nc + 1, sizeof *sptr, &sptr));
    for (int64_t i = 0; i < nn; i++)
        if (s->rigid_of[i] >= 0) sptr[s->rigid_of[i] + 1]++;
    for (int c = 0; c < nc; c++)
        sptr[c + 1] += sptr[c];
    HK_TRY(hk_malloc((size_t)sptr[nc] * sizeof *slaves + 1, &slaves));
    {
        int64_t *fill = NULL; /* a cursor per coupling */
        HK_TRY(hk_malloc((size_t)nc * sizeof *fill + 1, &fill));
        memcpy(fill, sptr, (size_t)nc * sizeof *fill);
        for (int64_t i = 0; i < nn; i++)
            if (s->rigid_of[i] >= 0) slaves[fill[s->rigid_of[i]]++] = i;
        free(fill);
    }

    /* the pattern of T^T K T: twice, counting then filling */
    K2.bs = d;
    K2.nbrows = K2.nbcols = nb2;
    HK_TRY(hk_calloc((size_t)nb2 + 1, sizeof *K2.rowptr, &K2.rowptr));
    HK_TRY(hk_malloc((size_t)nb2 * sizeof *mark + 1, &mark));
    HK_TRY(hk_malloc((size_t)nb2 * sizeof *cols + 1, &cols));
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < nb2; i++)
            mark[i] = -1;
        for (int64_t i = 0; i < nb2; i++) {
            int64_t cnt = 0;
#define PUT(j)                                                                                     \
    do {                                                                                           \
        int64_t j_ = (j);                                                                          \
        if (mark[j_] != i) mark[j_] = i, cols[cnt++] = (int32_t)j_;                                \
    } while (0)
            if (i < nn) {
                for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++) {
                    const int32_t j = K->colind[k];
                    PUT(j);
                    if (s->rigid_of[i] < 0 && s->rigid_of[j] >= 0) {
                        PUT(nn + 2 * s->rigid_of[j]);
                        PUT(nn + 2 * s->rigid_of[j] + 1);
                    }
                }
            } else {
                const int c = (int)((i - nn) / 2);
                PUT(nn + 2 * c);
                PUT(nn + 2 * c + 1);
                for (int64_t q = sptr[c]; q < sptr[c + 1]; q++)
                    for (int64_t k = K->rowptr[slaves[q]]; k < K->rowptr[slaves[q] + 1]; k++) {
                        const int32_t j = K->colind[k];
                        if (s->rigid_of[j] < 0) {
                            PUT(j);
                        } else {
                            PUT(nn + 2 * s->rigid_of[j]);
                            PUT(nn + 2 * s->rigid_of[j] + 1);
                        }
                    }
            }
#undef PUT
            if (pass == 0) {
                K2.rowptr[i + 1] = K2.rowptr[i] + cnt;
            } else {
                qsort(cols, (size_t)cnt, sizeof *cols, cmp_i32);
                memcpy(K2.colind + K2.rowptr[i], cols, (size_t)cnt * sizeof *cols);
            }
        }
        if (pass == 0) {
            HK_TRY(hk_malloc((size_t)K2.rowptr[nb2] * sizeof *K2.colind + 1, &K2.colind));
            HK_TRY(hk_calloc((size_t)K2.rowptr[nb2] * bb + 1, sizeof *K2.val, &K2.val));
        }
    }

    /* the values: block (i, j) of K moved by T_i^T . T_j */
    for (int64_t i = 0; i < nn; i++) {
        const int ci = s->rigid_of[i];
        for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++) {
            const int32_t j = K->colind[k];
            const int cj = s->rigid_of[j];
            const double *B = K->val + (size_t)k * bb;
            double BR[9] = {0}, RB[9] = {0}, RBR[9] = {0}, Rj[9], Ri[9];
            if (cj >= 0) {
                for (int a = 0; a < d; a++)
                    for (int b = 0; b < d; b++)
                        Rj[a * d + b] = Rn[j][a][b];
                gemm_add(d, B, 0, Rj, BR);
            }
            if (ci >= 0) {
                for (int a = 0; a < d; a++)
                    for (int b = 0; b < d; b++)
                        Ri[a * d + b] = Rn[i][a][b];
                gemm_add(d, Ri, 1, B, RB);
            }
            if (ci < 0 && cj < 0) {
                add_block(&K2, i, j, B);
            } else if (ci < 0) {
                add_block(&K2, i, nn + 2 * cj, B);
                add_block(&K2, i, nn + 2 * cj + 1, BR);
            } else if (cj < 0) {
                add_block(&K2, nn + 2 * ci, j, B);
                add_block(&K2, nn + 2 * ci + 1, j, RB);
            } else {
                gemm_add(d, Ri, 1, BR, RBR);
                add_block(&K2, nn + 2 * ci, nn + 2 * cj, B);
                add_block(&K2, nn + 2 * ci, nn + 2 * cj + 1, BR);
                add_block(&K2, nn + 2 * ci + 1, nn + 2 * cj, RB);
                add_block(&K2, nn + 2 * ci + 1, nn + 2 * cj + 1, RBR);
            }
            if (ci >= 0 && j == i) { /* the eliminated row keeps its diagonal */
                double *dst = block_at(&K2, i, i);
                for (int a = 0; a < d; a++)
                    dst[a * d + a] = B[a * d + a] > 0 ? B[a * d + a] : 1;
            }
        }
    }
    /* symmetric to the last bit: the reference rows are the transposes of the columns formed
     * above (sums in another order would differ by rounding) */
    for (int64_t i = nn; i < nb2; i++)
        for (int64_t k = K2.rowptr[i]; k < K2.rowptr[i + 1]; k++) {
            const int64_t j = K2.colind[k];
            double *dst = K2.val + (size_t)k * bb;
            if (j < i) {
                const double *src = block_at(&K2, j, i);
                for (int a = 0; a < d; a++)
                    for (int b = 0; b < d; b++)
                        dst[a * d + b] = src[b * d + a];
            } else if (j == i) {
                for (int a = 0; a < d; a++)
                    for (int b = a + 1; b < d; b++)
                        dst[a * d + b] = dst[b * d + a] = 0.5 * (dst[a * d + b] + dst[b * d + a]);
            }
        }
    /* f <- T^T f, and the remote loads at the reference points */
    for (int64_t i = 0; i < nn; i++) {
        const int c = s->rigid_of[i];
        if (c < 0) continue;
        double *ft = s->f + (size_t)(nn + 2 * c) * d, *fr = ft + d, *fi = s->f + (size_t)i * d;
        for (int a = 0; a < d; a++) {
            ft[a] += fi[a];
            for (int b = 0; b < d; b++)
                fr[b] += Rn[i][a][b] * fi[a];
        }
        for (int a = 0; a < d; a++)
            fi[a] = 0;
    }
    for (int c = 0; c < nc; c++) {
        const hk_load *ld = &p->loads[load_of[c]];
        double *ft = s->f + (size_t)(nn + 2 * c) * d, *fr = ft + d;
        for (int a = 0; a < d; a++)
            ft[a] += ld->value[a];
        if (d == 3)
            for (int a = 0; a < 3; a++)
                fr[a] += ld->moment[a];
        else
            fr[0] += ld->moment[2];
        if (d == 2) { /* the unused dof: a decoupled row that solves to 0 */
            double *blk = block_at(&K2, nn + 2 * c + 1, nn + 2 * c + 1);
            blk[3] = blk[0] > 0 ? blk[0] : 1;
            fr[1] = 0;
        }
    }
    hk_bcsr_free(K);
    *K = K2;
    memset(&K2, 0, sizeof K2);
fail:
    hk_bcsr_free(&K2);
    free(nodes);
    free(cols);
    free(load_of);
    free(sptr);
    free(slaves);
    free(mark);
    free(Rn);
    return ierr;
}
