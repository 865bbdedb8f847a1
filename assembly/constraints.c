/* Supports (prescribed displacement components on groups), the rigid-body check, and the
 * symmetric elimination of the prescribed dofs.
 *
 * Rigid-body check: for every connected part of the mesh (cells sharing nodes), the rigid-body
 * modes (3 in 2D, 6 in 3D) are evaluated at its constrained dofs, with coordinates centred on
 * the part and scaled by its size; the Gram matrix of those rows is singular exactly when some
 * combination of modes moves no constrained dof. Its null space names the free motions.
 * Axisymmetric: the only rigid-body mode is the translation along the axis (y); a radial
 * translation or a turn in the r-z plane strains the rings.
 *
 * Elimination: f = f_ext - K[:, fixed] u_fixed on the free rows; fixed rows and columns are
 * zeroed and the diagonal keeps its assembled value d (a scale of the matrix itself, not 1)
 * with f = d u_fixed, so K stays SPD and the solution takes the prescribed value. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"
#include "elimination.h"

static const char comp_name[3] = {'x', 'y', 'z'};

int hk_supports_apply(const hk_problem *p, uint8_t *fixed, double *u_fixed, int64_t *nfixed)
{
    int ierr = 0;
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    const int64_t ndof = (int64_t)d * m->nnodes;
    int32_t *owner = NULL, *nodes = NULL;
    HK_CHECK(p->nsupports == 0 || p->supports, HK_ERR_ARG,
             "hk_assemble: nsupports > 0 but supports is NULL");
    HK_TRY(hk_malloc((size_t)ndof * sizeof *owner + 1, &owner));
    for (int64_t k = 0; k < ndof; k++)
        owner[k] = -1;
    for (int s = 0; s < p->nsupports; s++) {
        const hk_support *sp = &p->supports[s];
        HK_TRY_CHECK(sp->boundary >= 0 && sp->boundary < m->nboundaries, HK_ERR_MODEL,
                     "support %d refers to boundary %d, but the mesh has %d boundary groups", s,
                     sp->boundary, m->nboundaries);
        if (sp->kind == HK_SUPPORT_SPRING) continue; /* springs.c */
        const char *bn = hk_asm_boundary_name(m, sp->boundary);
        HK_TRY_CHECK((sp->mask & ((1u << d) - 1)) != 0, HK_ERR_MODEL,
                     "the support on boundary '%s' fixes no component; fix at least one of %s", bn,
                     d == 2 ? "x, y" : "x, y, z");
        for (int c = 0; c < d; c++)
            HK_TRY_CHECK(!(sp->mask >> c & 1) || isfinite(sp->value[c]), HK_ERR_MODEL,
                         "the support on boundary '%s' prescribes a non-finite %c displacement; "
                         "give a finite value",
                         bn, comp_name[c]);
        int64_t nn;
        HK_TRY(hk_group_nodes(m, sp->boundary, &nn, &nodes));
        HK_TRY_CHECK(nn > 0, HK_ERR_MODEL,
                     "the support on boundary '%s' has no node; the group is empty", bn);
        for (int64_t k = 0; k < nn; k++) {
            for (int c = 0; c < d; c++) {
                if (!(sp->mask >> c & 1)) continue;
                int64_t dof = (int64_t)nodes[k] * d + c;
                if (owner[dof] >= 0) {
                    double a = u_fixed[dof], v = sp->value[c];
                    double tol = 1e-12 * fmax(fabs(a), fabs(v));
                    HK_TRY_CHECK(fabs(a - v) <= tol, HK_ERR_MODEL,
                                 "node %d at (%g, %g, %g) gets %c displacement %g from the "
                                 "support on '%s' and %g from the support on '%s'; make the "
                                 "prescribed values agree",
                                 nodes[k], m->coords[3 * (int64_t)nodes[k]],
                                 m->coords[3 * (int64_t)nodes[k] + 1],
                                 m->coords[3 * (int64_t)nodes[k] + 2], comp_name[c], a,
                                 hk_asm_boundary_name(m, p->supports[owner[dof]].boundary), v, bn);
                    continue;
                }
                owner[dof] = s;
                fixed[dof] = 1;
                u_fixed[dof] = sp->value[c];
            }
        }
        free(nodes);
        nodes = NULL;
    }
    *nfixed = 0;
    for (int64_t k = 0; k < ndof; k++)
        *nfixed += fixed[k];
fail:
    free(nodes);
    free(owner);
    return ierr;
}

/* ---- rigid-body check -------------------------------------------------------------------- */

static int64_t uf_find(int64_t *par, int64_t i)
{
    while (par[i] != i) {
        par[i] = par[par[i]];
        i = par[i];
    }
    return i;
}

/* Eigenvalues (w) and eigenvectors (columns of V) of the symmetric n x n matrix A (cyclic
 * Jacobi; n <= 6). A is destroyed. */
static void jacobi_eig(int n, double A[6][6], double w[6], double V[6][6])
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            V[i][j] = i == j;
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0, tot = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                tot += A[i][j] * A[i][j];
                if (i != j) off += A[i][j] * A[i][j];
            }
        if (off <= 1e-30 * tot || off == 0) break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                if (A[p][q] == 0) continue;
                double th = (A[q][q] - A[p][p]) / (2 * A[p][q]);
                double t = (th >= 0 ? 1 : -1) / (fabs(th) + sqrt(th * th + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < n; k++) { /* A = A G */
                    double akp = A[k][p], akq = A[k][q];
                    A[k][p] = c * akp - s * akq;
                    A[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; k++) { /* A = G^T A */
                    double apk = A[p][k], aqk = A[q][k];
                    A[p][k] = c * apk - s * aqk;
                    A[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < n; k++) {
                    double vkp = V[k][p], vkq = V[k][q];
                    V[k][p] = c * vkp - s * vkq;
                    V[k][q] = s * vkp + c * vkq;
                }
            }
    }
    for (int i = 0; i < n; i++)
        w[i] = A[i][i];
}

/* Value of rigid mode k (2D: tx ty rz; 3D: tx ty tz rx ry rz) in component c at position x. */
static double mode_value(int d, int k, int c, const double x[3])
{
    if (d == 2) {
        if (k < 2) return c == k;
        return c == 0 ? -x[1] : x[0];
    }
    if (k < 3) return c == k;
    /* (e_a x x)_c */
    int a = k - 3;
    double e[3] = {a == 0, a == 1, a == 2};
    double r[3] = {e[1] * x[2] - e[2] * x[1], e[2] * x[0] - e[0] * x[2], e[0] * x[1] - e[1] * x[0]};
    return r[c];
}

/* Describe the null space Z (nz rows of nm mode coefficients) as "translation y, rotation
 * about z": reduced row echelon form with rotations pivoted first, each row named by its
 * pivot. */
static void describe_free(int d, int nz, double Z[6][6], char *buf, size_t len)
{
    const int nm = d == 2 ? 3 : 6, nt = d;
    int order[6], no = 0;
    for (int k = nt; k < nm; k++)
        order[no++] = k; /* rotations first */
    for (int k = 0; k < nt; k++)
        order[no++] = k;
    int row = 0;
    buf[0] = 0;
    for (int oc = 0; oc < nm && row < nz; oc++) {
        int col = order[oc], piv = -1;
        double best = 1e-8;
        for (int r = row; r < nz; r++)
            if (fabs(Z[r][col]) > best) best = fabs(Z[r][col]), piv = r;
        if (piv < 0) continue;
        for (int k = 0; k < nm; k++) {
            double t = Z[row][k];
            Z[row][k] = Z[piv][k];
            Z[piv][k] = t;
        }
        double s = Z[row][col];
        for (int k = 0; k < nm; k++)
            Z[row][k] /= s;
        for (int r = 0; r < nz; r++) {
            if (r == row) continue;
            double f = Z[r][col];
            for (int k = 0; k < nm; k++)
                Z[r][k] -= f * Z[row][k];
        }
        /* name this row */
        char item[96];
        int isrot = col >= nt;
        int b0 = isrot ? nt : 0, b1 = isrot ? nm : nt, nnz = 0;
        for (int k = b0; k < b1; k++)
            nnz += fabs(Z[row][k]) > 1e-6;
        if (d == 2 && isrot)
            snprintf(item, sizeof item, "rotation about z");
        else if (nnz == 1)
            snprintf(item, sizeof item, "%s %c", isrot ? "rotation about" : "translation",
                     comp_name[col - b0]);
        else {
            double v[3] = {0, 0, 0}, nv = 0;
            for (int k = b0; k < b1; k++)
                v[k - b0] = Z[row][k], nv += Z[row][k] * Z[row][k];
            nv = sqrt(nv);
            if (d == 2)
                snprintf(item, sizeof item, "translation along (%.2f, %.2f)", v[0] / nv, v[1] / nv);
            else
                snprintf(item, sizeof item, "%s (%.2f, %.2f, %.2f)",
                         isrot ? "rotation about" : "translation along", v[0] / nv, v[1] / nv,
                         v[2] / nv);
        }
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s%s", row ? ", " : "", item);
        row++;
    }
}

typedef struct rigid_ctx {
    const hk_mesh *m;
    const int64_t *pc; /* the part of each node, -1 for nodes on no cell */
    double *acc;
    const double *ext;
    size_t stride;
    int axi; /* axisymmetric: the one mode is the translation along the axis (y) */
} rigid_ctx;

/* Adds the row dir . (rigid modes at node i) to the Gram matrix of i's part, with coordinates
 * centred on the part and scaled by its size. */
static void held_direction(void *vctx, int32_t i, const double dir[3])
{
    const rigid_ctx *r = vctx;
    const hk_mesh *m = r->m;
    const int d = m->dim, nm = r->axi ? 1 : d == 2 ? 3 : 6;
    const int64_t q = r->pc[i];
    if (q < 0) return;
    double *a = r->acc + (size_t)q * r->stride;
    double L = 0;
    for (int k = 0; k < 3; k++)
        L = fmax(L, r->ext[6 * q + 3 + k] - r->ext[6 * q + k]);
    if (L <= 0) L = 1;
    double x[3];
    for (int k = 0; k < 3; k++)
        x[k] = (m->coords[3 * (size_t)i + k] - a[k] / a[3]) / L;
    double row[6] = {0};
    if (r->axi)
        row[0] = dir[1];
    else
        for (int k = 0; k < nm; k++)
            for (int c = 0; c < d; c++)
                row[k] += dir[c] * mode_value(d, k, c, x);
    double *G = a + 7;
    for (int k = 0; k < nm; k++)
        for (int l = 0; l < nm; l++)
            G[k * 6 + l] += row[k] * row[l];
}

int hk_mesh_part_labels(const hk_mesh *m, const hk_adj *n2c, int32_t *label)
{
    int ierr = 0;
    const int64_t nn = m->nnodes;
    int64_t *par = NULL;
    HK_TRY(hk_malloc((size_t)nn * sizeof *par + 1, &par));
    for (int64_t i = 0; i < nn; i++)
        par[i] = i;
    for (int64_t e = 0; e < m->cells.n; e++) {
        int64_t r0 = uf_find(par, m->cells.nodes[m->cells.ptr[e]]);
        for (int64_t k = m->cells.ptr[e] + 1; k < m->cells.ptr[e + 1]; k++) {
            int64_t r = uf_find(par, m->cells.nodes[k]);
            if (r != r0) par[r] = r0;
        }
    }
    for (int64_t i = 0; i < nn; i++)
        par[i] = uf_find(par, i); /* every node points at its root */
    /* the first node met of each part is its smallest and labels the part: the root's slot
     * keeps it as -1 - node once met */
    for (int64_t i = 0; i < nn; i++) {
        label[i] = -1;
        if (n2c->ptr[i + 1] == n2c->ptr[i]) continue;
        const int64_t r = par[i] < 0 ? i : par[i]; /* i itself a root already marked */
        if (par[r] >= 0) par[r] = -1 - i;
        label[i] = (int32_t)(-1 - par[r]);
    }
fail:
    free(par);
    return ierr;
}

/* The rigid-body check of the parts given as labels; nfree NULL: an error naming the first
 * part's free motions, else their number summed over the parts. */
static int rigid_motions(const hk_problem *p, const int32_t *label, const hk_adj *n2c,
                         const uint8_t *fixed, hk_held_fn held, int *nfree)
{
    int ierr = 0;
    const hk_mesh *m = p->mesh;
    const int d = m->dim, axi = p->analysis == HK_AXISYMMETRIC, nm = axi ? 1 : d == 2 ? 3 : 6;
    const int64_t nn = m->nnodes;
    int64_t *pc = NULL;
    double *acc = NULL, *ext = NULL;
    /* number the parts in the order of their smallest node, the part of every node on a cell
     * (-1 for nodes without a cell) */
    HK_TRY(hk_malloc((size_t)nn * sizeof *pc + 1, &pc));
    int64_t np = 0;
    for (int64_t i = 0; i < nn; i++)
        pc[i] = label[i] < 0 ? -1 : label[i] == i ? np++ : pc[label[i]];
    /* per part: sum of coordinates and count (4), unused (3), Gram matrix 6 x 6 (36) */
    const size_t stride = 4 + 3 + 36;
    HK_TRY(hk_calloc((size_t)np * stride + 1, sizeof *acc, &acc));
    HK_TRY(hk_malloc((size_t)np * 6 * sizeof *ext + 1, &ext));
    for (int64_t q = 0; q < np; q++)
        for (int i = 0; i < 3; i++)
            ext[6 * q + i] = INFINITY, ext[6 * q + 3 + i] = -INFINITY;
    for (int64_t i = 0; i < nn; i++) {
        if (pc[i] < 0) continue;
        double *a = acc + (size_t)pc[i] * stride;
        const double *x = m->coords + 3 * (size_t)i;
        for (int k = 0; k < 3; k++) {
            a[k] += x[k];
            ext[6 * pc[i] + k] = fmin(ext[6 * pc[i] + k], x[k]);
            ext[6 * pc[i] + 3 + k] = fmax(ext[6 * pc[i] + 3 + k], x[k]);
        }
        a[3] += 1;
    }
    rigid_ctx rc = {m, pc, acc, ext, stride, axi};
    for (int64_t i = 0; i < nn; i++)
        for (int c = 0; c < d; c++) {
            if (!fixed[(size_t)i * d + c]) continue;
            double e[3] = {c == 0, c == 1, c == 2};
            held_direction(&rc, (int32_t)i, e);
        }
    /* spring supports hold the body too, along the directions they are stiff in (held:
     * hk_springs_directions, from assemble.c) */
    if (held) HK_TRY(held(p, n2c, held_direction, &rc));
    for (int64_t q = 0; q < np; q++) {
        double A[6][6], w[6], V[6][6], Z[6][6];
        const double *G = acc + (size_t)q * stride + 7;
        for (int k = 0; k < nm; k++)
            for (int l = 0; l < nm; l++)
                A[k][l] = G[k * 6 + l];
        jacobi_eig(nm, A, w, V);
        double wmax = 0;
        for (int k = 0; k < nm; k++)
            wmax = fmax(wmax, w[k]);
        int nz = 0;
        for (int k = 0; k < nm; k++)
            if (w[k] <= 1e-10 * wmax || wmax == 0) {
                for (int l = 0; l < nm; l++)
                    Z[nz][l] = V[l][k];
                nz++;
            }
        if (nz == 0) continue;
        if (nfree) {
            *nfree += nz;
            continue;
        }
        char desc[512];
        if (axi)
            snprintf(desc, sizeof desc, "translation along the axis y");
        else
            describe_free(d, nz, Z, desc, sizeof desc);
        int64_t node = -1;
        for (int64_t i = 0; i < nn && node < 0; i++)
            if (pc[i] == q) node = i;
        char part[96] = "";
        if (np > 1)
            snprintf(part, sizeof part, " of the part containing node %lld (%lld parts)",
                     (long long)node, (long long)np);
        HK_TRY_CHECK(0, HK_ERR_MODEL,
                     "the supports do not prevent rigid-body motion%s (free: %s); add a support "
                     "that fixes %s",
                     part, desc,
                     nz == 1 ? "this motion" : "these motions (fix components on more groups)");
    }
fail:
    free(ext);
    free(pc);
    free(acc);
    return ierr;
}

/* rigid_motions of the parts found on the host */
static int rigid_motions_host(const hk_problem *p, const hk_adj *n2c, const uint8_t *fixed,
                              hk_held_fn held, int *nfree)
{
    int32_t *label = NULL;
    HK_CALL(hk_malloc((size_t)p->mesh->nnodes * sizeof *label + 1, &label));
    int ierr = hk_mesh_part_labels(p->mesh, n2c, label);
    if (!ierr) ierr = rigid_motions(p, label, n2c, fixed, held, nfree);
    free(label);
    return ierr;
}

int hk_check_rigid(const hk_problem *p, const hk_adj *n2c, const uint8_t *fixed, hk_held_fn held)
{
    return rigid_motions_host(p, n2c, fixed, held, NULL);
}

int hk_check_rigid_labels(const hk_problem *p, const int32_t *label, const hk_adj *n2c,
                          const uint8_t *fixed, hk_held_fn held)
{
    return rigid_motions(p, label, n2c, fixed, held, NULL);
}

int hk_count_rigid(const hk_problem *p, const hk_adj *n2c, const uint8_t *fixed, hk_held_fn held,
                   int *nfree)
{
    *nfree = 0;
    return rigid_motions_host(p, n2c, fixed, held, nfree);
}

/* ---- elimination ------------------------------------------------------------------------- */

int hk_eliminate(hk_system *s, const hk_adj *n2c)
{
    hk_bcsr *K = &s->K;
    const int bs = K->bs;
    const int64_t nb = K->nbrows;
    /* mean assembled diagonal: the scale of rows of nodes without a cell */
    double sum = 0;
    int64_t cnt = 0;
    for (int64_t i = 0; i < nb; i++) {
        if (n2c->ptr[i + 1] == n2c->ptr[i]) continue;
        for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++)
            if (K->colind[k] == i)
                for (int r = 0; r < bs; r++)
                    sum += K->val[(size_t)k * bs * bs + r * bs + r], cnt++;
    }
    const double mean = cnt ? sum / (double)cnt : 1;
#pragma omp parallel for schedule(static) if (nb >= 20000)
    for (int64_t i = 0; i < nb; i++) {
        const int orphan = n2c->ptr[i + 1] == n2c->ptr[i];
        for (int r = 0; r < bs; r++)
            s->f[i * bs + r] = hk_eliminate_row(bs, i, r, orphan, mean, K->rowptr, K->colind,
                                                K->val, s->fixed, s->u_fixed, s->f_ext);
    }
    return 0;
}
