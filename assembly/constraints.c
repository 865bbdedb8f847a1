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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "constraints.h"
#include "elimination.h"

static const char comp_name[3] = {'x', 'y', 'z'};

/* The first support before support s (not a spring) that prescribes component c of node v:
 * the one whose value a later conflicting support is compared with. */
static int support_owner(const hk_problem *p, int s, int32_t v, int c, int *owner)
{
    const hk_mesh *m = p->mesh;
    *owner = -1;
    for (int k = 0; k < s && *owner < 0; k++) {
        const hk_support *sp = &p->supports[k];
        if (sp->kind == HK_SUPPORT_SPRING || !(sp->mask >> c & 1)) continue;
        int64_t nn;
        int32_t *nodes;
        HK_CALL(hk_group_nodes(m, sp->boundary, &nn, &nodes));
        for (int64_t j = 0; j < nn && *owner < 0; j++)
            if (nodes[j] == v) *owner = k;
        free(nodes);
    }
    return 0;
}

/* A dof that a support of this call prescribes is marked 2 in fixed[] until the end (then 1):
 * a later support on it is compared with its value, without a table of owners as long as the
 * dofs; the owner is looked up only for the message of a conflict. */
#define HK_FIXED_HERE 2

int hk_supports_apply(const hk_problem *p, uint8_t *fixed, double *u_fixed, int64_t *nfixed)
{
    int ierr = 0;
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    const int64_t ndof = (int64_t)d * m->nnodes;
    int32_t *nodes = NULL;
    HK_CHECK(p->nsupports == 0 || p->supports, HK_ERR_ARG,
             "hk_assemble: nsupports > 0 but supports is NULL");
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
        /* the first dof (in the group's order) that an earlier support prescribes otherwise,
         * then this support's values where no earlier one put its own */
        int64_t clash = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : clash) if (nn > 512)
        for (int64_t k = 0; k < nn; k++)
            for (int c = 0; c < d && k * d < clash; c++) {
                const int64_t dof = (int64_t)nodes[k] * d + c;
                if (!(sp->mask >> c & 1) || fixed[dof] != HK_FIXED_HERE) continue;
                const double a = u_fixed[dof], v = sp->value[c];
                if (fabs(a - v) > 1e-12 * fmax(fabs(a), fabs(v)) && k * d + c < clash)
                    clash = k * d + c;
            }
        if (clash != INT64_MAX) {
            const int64_t k = clash / d;
            const int c = (int)(clash % d);
            const double a = u_fixed[(int64_t)nodes[k] * d + c];
            int owner;
            HK_TRY(support_owner(p, s, nodes[k], c, &owner));
            HK_TRY_CHECK(0, HK_ERR_MODEL,
                         "node %d at (%g, %g, %g) gets %c displacement %g from the support on "
                         "'%s' and %g from the support on '%s'; make the prescribed values agree",
                         nodes[k], m->coords[3 * (int64_t)nodes[k]],
                         m->coords[3 * (int64_t)nodes[k] + 1], m->coords[3 * (int64_t)nodes[k] + 2],
                         comp_name[c], a, hk_asm_boundary_name(m, p->supports[owner].boundary),
                         sp->value[c], bn);
        }
        /* a node twice in the group: two threads may write its values, the same ones */
#pragma omp parallel for schedule(static) if (nn > 512)
        for (int64_t k = 0; k < nn; k++)
            for (int c = 0; c < d; c++) {
                const int64_t dof = (int64_t)nodes[k] * d + c;
                uint8_t mark;
#pragma omp atomic read
                mark = fixed[dof];
                if (!(sp->mask >> c & 1) || mark == HK_FIXED_HERE) continue;
#pragma omp atomic write
                fixed[dof] = HK_FIXED_HERE;
#pragma omp atomic write
                u_fixed[dof] = sp->value[c];
            }
        free(nodes);
        nodes = NULL;
    }
    int64_t count = 0;
#pragma omp parallel for schedule(static) reduction(+ : count)
    for (int64_t k = 0; k < ndof; k++)
        if (fixed[k]) fixed[k] = 1, count++; /* untouched pages stay unwritten */
    *nfixed = count;
fail:
    free(nodes);
    if (ierr) /* the marks back to the flags they stand for */
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < ndof; k++)
            if (fixed[k]) fixed[k] = 1;
    return ierr;
}

/* ---- rigid-body check -------------------------------------------------------------------- */

/* Union-find of the mesh's parts on every thread: every link points to a smaller node (a root
 * is hooked under the smaller of two roots by a compare-and-swap), so each part's root is its
 * smallest node whatever order the cells are joined in, and a thread that halves a path (a
 * link moved to an ancestor, a smaller node still) cannot make a cycle. */
static int32_t uf_root(_Atomic int32_t *par, int32_t i)
{
    for (;;) {
        const int32_t p = atomic_load_explicit(&par[i], memory_order_relaxed);
        if (p == i) return i;
        const int32_t g = atomic_load_explicit(&par[p], memory_order_relaxed);
        if (g != p) atomic_store_explicit(&par[i], g, memory_order_relaxed);
        i = g;
    }
}

/* Joins the parts of nodes a and b; returns the joint part's root. shared: other threads join
 * too (a root is hooked by a compare-and-swap, else by a store). */
static int32_t uf_join(_Atomic int32_t *par, int32_t a, int32_t b, int shared)
{
    for (;;) {
        a = uf_root(par, a), b = uf_root(par, b);
        if (a == b) return a;
        if (a > b) {
            const int32_t t = a;
            a = b, b = t;
        }
        int32_t root = b;
        if (!shared) {
            atomic_store_explicit(&par[b], a, memory_order_relaxed);
            return a;
        }
        if (atomic_compare_exchange_strong_explicit(&par[b], &root, a, memory_order_relaxed,
                                                    memory_order_relaxed))
            return a;
    }
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
    const int32_t *pc; /* the part of each node, -1 for nodes on no cell */
    const double *box; /* per part: its centre (3) and size (1) */
    double *G;         /* per part: the Gram matrix, 6 x 6 */
    int axi;           /* axisymmetric: the one mode is the translation along the axis (y) */
} rigid_ctx;

/* Adds the row dir . (rigid modes at node i) to G, with coordinates centred on i's part and
 * scaled by its size. */
static void held_row(const rigid_ctx *r, int32_t i, const double dir[3], double *G)
{
    const hk_mesh *m = r->m;
    const int d = m->dim, nm = r->axi ? 1 : d == 2 ? 3 : 6;
    const double *b = r->box + 4 * (size_t)r->pc[i];
    double x[3];
    for (int k = 0; k < 3; k++)
        x[k] = (m->coords[3 * (size_t)i + k] - b[k]) / b[3];
    double row[6] = {0};
    if (r->axi)
        row[0] = dir[1];
    else
        for (int k = 0; k < nm; k++)
            for (int c = 0; c < d; c++)
                row[k] += dir[c] * mode_value(d, k, c, x);
    for (int k = 0; k < nm; k++)
        for (int l = 0; l < nm; l++)
            G[k * 6 + l] += row[k] * row[l];
}

/* Adds the row dir . (rigid modes at node i) to the Gram matrix of i's part. */
static void held_direction(void *vctx, int32_t i, const double dir[3])
{
    const rigid_ctx *r = vctx;
    if (r->pc[i] >= 0) held_row(r, i, dir, r->G + 36 * (size_t)r->pc[i]);
}

int hk_mesh_part_labels(const hk_mesh *m, const hk_adj *n2c, int32_t *label)
{
    const int64_t nn = m->nnodes;
    _Atomic int32_t *par;
    HK_CALL(hk_malloc((size_t)nn * sizeof *par + 1, &par));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++)
        atomic_init(&par[i], (int32_t)i);
#pragma omp parallel
    {
        const int shared = omp_get_num_threads() > 1;
#pragma omp for schedule(static)
        for (int64_t e = 0; e < m->cells.n; e++) {
            int32_t r = m->cells.ptr[e + 1] > m->cells.ptr[e] ? m->cells.nodes[m->cells.ptr[e]] : 0;
            for (int64_t k = m->cells.ptr[e] + 1; k < m->cells.ptr[e + 1]; k++)
                r = uf_join(par, r, m->cells.nodes[k], shared);
        }
    }
    /* a part's label: its root, the smallest node */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++)
        label[i] = n2c->ptr[i + 1] == n2c->ptr[i] ? -1 : uf_root(par, (int32_t)i);
    free((void *)par);
    return 0;
}

/* Nodes per block of the parallel sums below: blocks of a size fixed whatever the thread
 * count, each summed in node order, their sums added in block order, make the same digits
 * on any number of threads. */
#define RIGID_BLOCK 8192
/* The most parts whose Gram matrices are summed by blocks (each block keeps one per part);
 * more parts, each small, are summed in node order on one thread. */
#define RIGID_BLOCK_PARTS 16

/* Number the parts in the order of their smallest node (the label of each part): pc[i] = the
 * part of node i, -1 for a node on no cell; *np the number of parts. */
static int number_parts(const int32_t *label, int64_t nn, int32_t *pc, int64_t *np)
{
    int64_t *first = NULL;
    const int64_t nblk = (nn + RIGID_BLOCK - 1) / RIGID_BLOCK;
    HK_CALL(hk_malloc((size_t)(nblk + 1) * sizeof *first, &first));
    /* each block's roots (label[i] == i), their running sum, then the numbers */
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nblk; b++) {
        int64_t c = 0;
        for (int64_t i = b * RIGID_BLOCK; i < nn && i < (b + 1) * RIGID_BLOCK; i++)
            c += label[i] == i;
        first[b + 1] = c;
    }
    first[0] = 0;
    for (int64_t b = 0; b < nblk; b++)
        first[b + 1] += first[b];
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nblk; b++) {
        int64_t q = first[b];
        for (int64_t i = b * RIGID_BLOCK; i < nn && i < (b + 1) * RIGID_BLOCK; i++)
            pc[i] = label[i] == i ? (int32_t)q++ : -1;
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++)
        if (label[i] >= 0 && label[i] != i) pc[i] = pc[label[i]];
    *np = first[nblk];
    free(first);
    return 0;
}

/* Per part: the centre of its bounding box (3) and its largest extent (1; 1 when 0). Minima
 * and maxima do not depend on the order they are taken in. */
static int part_boxes(const hk_mesh *m, const int32_t *pc, int64_t np, double *box)
{
    const int64_t nn = m->nnodes;
    double *ext; /* per part: lo (3), hi (3) */
    HK_CALL(hk_malloc((size_t)np * 6 * sizeof *ext + 1, &ext));
    for (int64_t q = 0; q < np; q++)
        for (int k = 0; k < 3; k++)
            ext[6 * q + k] = INFINITY, ext[6 * q + 3 + k] = -INFINITY;
    int ierr = 0;
#pragma omp parallel if (np <= 4096)
    {
        /* a few parts: each thread its own extents, merged; many: one thread */
        double *mine = omp_get_num_threads() > 1 ? malloc((size_t)np * 6 * sizeof *mine) : ext;
        if (!mine) {
#pragma omp atomic write
            ierr = 1;
        } else if (mine != ext)
            for (int64_t q = 0; q < np; q++)
                for (int k = 0; k < 3; k++)
                    mine[6 * q + k] = INFINITY, mine[6 * q + 3 + k] = -INFINITY;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < nn; i++) {
            if (pc[i] < 0 || !mine) continue;
            double *e = mine + 6 * (size_t)pc[i];
            const double *x = m->coords + 3 * (size_t)i;
            for (int k = 0; k < 3; k++) { /* finite coordinates: fmin and fmax, inlined */
                e[k] = x[k] < e[k] ? x[k] : e[k];
                e[3 + k] = x[k] > e[3 + k] ? x[k] : e[3 + k];
            }
        }
        if (mine && mine != ext) {
#pragma omp critical(hk_part_boxes)
            for (int64_t q = 0; q < 6 * np; q++)
                ext[q] = q % 6 < 3 ? fmin(ext[q], mine[q]) : fmax(ext[q], mine[q]);
            free(mine);
        }
    }
    if (ierr) {
        free(ext);
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                            "out of host memory for the extents of %lld parts", (long long)np);
    }
    for (int64_t q = 0; q < np; q++) {
        double L = 0;
        for (int k = 0; k < 3; k++) {
            box[4 * q + k] = 0.5 * (ext[6 * q + k] + ext[6 * q + 3 + k]);
            L = fmax(L, ext[6 * q + 3 + k] - ext[6 * q + k]);
        }
        box[4 * q + 3] = L > 0 ? L : 1;
    }
    free(ext);
    return 0;
}

/* The rows of the prescribed dofs of nodes [i0, i1) added to the Gram matrices of G (36 per
 * part), in node order. */
static void fixed_rows(const rigid_ctx *r, const uint8_t *fixed, int64_t i0, int64_t i1, double *G)
{
    const int d = r->m->dim;
    for (int64_t k = i0 * d; k < i1 * d; k++) {
        if (k % 8 == 0 && k + 8 <= i1 * d) { /* 8 free dofs at a time */
            uint64_t w;
            memcpy(&w, fixed + k, 8);
            if (!w) {
                k += 7;
                continue;
            }
        }
        if (!fixed[k]) continue;
        const int32_t i = (int32_t)(k / d);
        if (r->pc[i] < 0) continue;
        const int c = (int)(k % d);
        const double e[3] = {c == 0, c == 1, c == 2};
        held_row(r, i, e, G + 36 * (size_t)r->pc[i]);
    }
}

/* The Gram matrices of every part from the prescribed dofs (fixed), the same digits on any
 * number of threads. */
static int fixed_gram(const rigid_ctx *r, const uint8_t *fixed, int64_t np)
{
    const int64_t nn = r->m->nnodes, nblk = (nn + RIGID_BLOCK - 1) / RIGID_BLOCK;
    if (np > RIGID_BLOCK_PARTS || nblk < 2) {
        fixed_rows(r, fixed, 0, nn, r->G);
        return 0;
    }
    double *part; /* each block's Gram matrices */
    HK_CALL(hk_calloc((size_t)(nblk * np * 36), sizeof *part, &part));
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t b = 0; b < nblk; b++)
        fixed_rows(r, fixed, b * RIGID_BLOCK, b + 1 < nblk ? (b + 1) * RIGID_BLOCK : nn,
                   part + (size_t)(b * np * 36));
    for (int64_t b = 0; b < nblk; b++)
        for (int64_t j = 0; j < np * 36; j++)
            r->G[j] += part[b * np * 36 + j];
    free(part);
    return 0;
}

/* The free motions of part q from its Gram matrix G (nm x nm of 6 x 6): their number, and
 * their coefficients in Z's rows. */
static int part_free(int nm, const double *G, double Z[6][6])
{
    double A[6][6], w[6], V[6][6];
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
    return nz;
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
    int32_t *pc = NULL;
    double *box = NULL, *G = NULL;
    int64_t np = 0;
    HK_TRY(hk_malloc((size_t)nn * sizeof *pc + 1, &pc));
    HK_TRY(number_parts(label, nn, pc, &np));
    HK_TRY(hk_malloc((size_t)np * 4 * sizeof *box + 1, &box));
    HK_TRY(hk_calloc((size_t)np * 36 + 1, sizeof *G, &G));
    HK_TRY(part_boxes(m, pc, np, box));
    rigid_ctx rc = {m, pc, box, G, axi};
    HK_TRY(fixed_gram(&rc, fixed, np));
    /* spring supports hold the body too, along the directions they are stiff in (held:
     * hk_springs_directions, from assemble.c) */
    if (held) HK_TRY(held(p, n2c, held_direction, &rc));
    /* every part on every thread: the first free one in order is named, the count summed */
    int64_t first = INT64_MAX;
    int count = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(min : first) reduction(+ : count)
    for (int64_t q = 0; q < np; q++) {
        double Z[6][6];
        const int nz = part_free(nm, G + 36 * (size_t)q, Z);
        count += nz;
        if (nz && q < first) first = q;
    }
    if (nfree) {
        *nfree += count;
        goto fail;
    }
    if (first != INT64_MAX) {
        const int64_t q = first;
        double Z[6][6];
        const int nz = part_free(nm, G + 36 * (size_t)q, Z);
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
    free(G);
    free(box);
    free(pc);
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
    /* mean assembled diagonal: the scale of rows of nodes without a cell and of a diagonal
     * that is not positive; summed (in row order) only when a row needs it */
    int need = 0;
#pragma omp parallel for schedule(static) reduction(|| : need) if (nb >= 20000)
    for (int64_t i = 0; i < nb; i++) {
        int found = 0;
        if (n2c->ptr[i + 1] > n2c->ptr[i])
            for (int64_t k = K->rowptr[i]; k < K->rowptr[i + 1]; k++)
                if (K->colind[k] == i) {
                    found = 1;
                    for (int r = 0; r < bs; r++)
                        found &= K->val[(size_t)k * bs * bs + r * bs + r] > 0;
                }
        need = need || !found;
    }
    double sum = 0;
    int64_t cnt = 0;
    for (int64_t i = 0; i < nb && need; i++) {
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
