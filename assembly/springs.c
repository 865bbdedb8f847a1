/* Spring supports: an elastic foundation on a boundary of facets (the traction -k u with
 * stiffness per area k_normal along the facet's normal and k_tangential in its plane, integrated
 * consistently: K_ab += int N_a N_b (k_n n n^T + k_t (I - n n^T)) dA, symmetric and positive
 * semi-definite) and grounded springs at the nodes of any group (k_node[c] on the diagonal of
 * component c of every node). Both are added to K before the elimination, so a spring on a
 * held dof changes nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "springs.h"

static int is_spring(const hk_support *sp)
{
    return sp->kind == HK_SUPPORT_SPRING;
}

static int has_area_springs(const hk_support *sp)
{
    return sp->k_normal > 0 || sp->k_tangential > 0;
}

/* The spring stiffness per area at a point of unit normal n: k_n n n^T + k_t (I - n n^T). */
static void point_stiffness(const hk_support *sp, const double n[3], double S[3][3])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            S[i][j] = sp->k_normal * n[i] * n[j] + sp->k_tangential * ((i == j) - n[i] * n[j]);
}

int hk_springs_check(const hk_problem *p, const hk_adj *n2c)
{
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    for (int k = 0; k < p->nsupports; k++) {
        const hk_support *sp = &p->supports[k];
        HK_CHECK(sp->kind == HK_SUPPORT_FIXED || sp->kind == HK_SUPPORT_SPRING, HK_ERR_ARG,
                 "support %d has an unknown kind %d", k, (int)sp->kind);
        if (!is_spring(sp)) continue;
        const char *bn = hk_asm_boundary_name(m, sp->boundary);
        const double ks[5] = {sp->k_normal, sp->k_tangential, sp->k_node[0], sp->k_node[1],
                              sp->k_node[2]};
        static const char *const names[5] = {"normal", "tangential", "x", "y", "z"};
        int any = 0;
        for (int i = 0; i < 5; i++) {
            HK_CHECK(isfinite(ks[i]) && ks[i] >= 0, HK_ERR_MODEL,
                     "the %s stiffness %g of the spring support on '%s' is %s; give a "
                     "stiffness >= 0",
                     names[i], ks[i], bn, isfinite(ks[i]) ? "negative" : "not a finite number");
            any |= ks[i] > 0 && (i < 4 || d == 3);
        }
        HK_CHECK(any, HK_ERR_MODEL,
                 "the spring support on '%s' has no positive stiffness; give normal/tangential "
                 "(per area) or a stiffness per node",
                 bn);
        const hk_group *g = &m->boundaries[sp->boundary];
        if (has_area_springs(sp))
            HK_CHECK(g->dim == d - 1 && g->elems.n > 0, HK_ERR_MODEL,
                     "the spring support on '%s' has a stiffness per area, which needs a "
                     "boundary of dimension %d, but '%s' has dimension %d; use a %s, or a "
                     "stiffness per node",
                     bn, d - 1, bn, g->dim, d == 2 ? "curve" : "surface");
        if (sp->k_node[0] > 0 || sp->k_node[1] > 0 || (d == 3 && sp->k_node[2] > 0)) {
            int64_t nn;
            int32_t *nodes;
            HK_CALL(hk_group_nodes(m, sp->boundary, &nn, &nodes));
            int64_t bad = -1;
            for (int64_t i = 0; i < nn && bad < 0; i++)
                if (n2c->ptr[nodes[i] + 1] == n2c->ptr[nodes[i]]) bad = nodes[i];
            free(nodes);
            HK_CHECK(nn > 0, HK_ERR_MODEL,
                     "the spring support on '%s' has no node; the group is "
                     "empty",
                     bn);
            HK_CHECK(bad < 0, HK_ERR_MODEL,
                     "the spring support on '%s' acts on node %lld, which belongs to no %dD "
                     "element; put the springs on nodes of the meshed domain",
                     bn, (long long)bad, d);
        }
    }
    return 0;
}

/* ---- the facet springs, visited per quadrature point ------------------------------------ */

typedef struct spring_ctx {
    const hk_support *sp;
    int d;
    hk_bcsr *K;      /* add to K, or */
    const double *u; /* y += K_s u */
    double *y;
    int64_t missing; /* a node pair without a block of K (-1: none) */
} spring_ctx;

static void spring_point(void *vctx, const int32_t *fn, int nf, const double *N, const double x[3],
                         double w, const double nrm[3])
{
    spring_ctx *c = vctx;
    const int d = c->d;
    double S[3][3];
    (void)x;
    point_stiffness(c->sp, nrm, S);
    for (int a = 0; a < nf; a++)
        for (int b = 0; b < nf; b++) {
            const double s = w * (N[a] * N[b]); /* K_ab = K_ba^T to the last bit */
            if (c->K) {
                int64_t pos = hk_asm_find_block(c->K, fn[a], fn[b]);
                if (pos < 0) {
                    c->missing = fn[a];
                    continue;
                }
                double *blk = c->K->val + (size_t)pos * (size_t)(d * d);
                for (int i = 0; i < d; i++)
                    for (int j = 0; j < d; j++)
                        blk[i * d + j] += s * S[i][j];
            } else {
                for (int i = 0; i < d; i++)
                    for (int j = 0; j < d; j++)
                        c->y[(size_t)fn[a] * d + i] += s * S[i][j] * c->u[(size_t)fn[b] * d + j];
            }
        }
}

/* K += K_s (K != NULL) or y += K_s u of support k. */
static int spring_support(const hk_problem *p, const hk_adj *n2c, int k, hk_bcsr *K,
                          const double *u, double *y)
{
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    const hk_support *sp = &p->supports[k];
    const char *bn = hk_asm_boundary_name(m, sp->boundary);
    if (has_area_springs(sp)) {
        spring_ctx c = {.sp = sp, .d = d, .K = K, .u = u, .y = y, .missing = -1};
        HK_CALL(hk_facet_points(p, n2c, sp->boundary, "a spring support", 0, spring_point, &c));
        HK_CHECK(c.missing < 0, HK_ERR_MODEL,
                 "a facet of the spring support on '%s' at node %lld is not the face of one "
                 "element; put the springs on the boundary of the meshed domain",
                 bn, (long long)c.missing);
    }
    if (!(sp->k_node[0] > 0 || sp->k_node[1] > 0 || (d == 3 && sp->k_node[2] > 0))) return 0;
    int64_t nn;
    int32_t *nodes;
    HK_CALL(hk_group_nodes(m, sp->boundary, &nn, &nodes));
    for (int64_t i = 0; i < nn; i++) {
        const int32_t v = nodes[i];
        if (K) {
            double *blk = K->val + (size_t)hk_asm_find_block(K, v, v) * (size_t)(d * d);
            for (int c = 0; c < d; c++)
                blk[c * d + c] += sp->k_node[c];
        } else {
            for (int c = 0; c < d; c++)
                y[(size_t)v * d + c] += sp->k_node[c] * u[(size_t)v * d + c];
        }
    }
    free(nodes);
    return 0;
}

int hk_springs_add(const hk_problem *p, const hk_adj *n2c, hk_bcsr *K)
{
    for (int k = 0; k < p->nsupports; k++)
        if (is_spring(&p->supports[k])) HK_CALL(spring_support(p, n2c, k, K, NULL, NULL));
    return 0;
}

int hk_springs_apply(const hk_problem *p, int k, const double *u, double *y)
{
    int ierr = 0;
    hk_adj n2c = {0};
    int any = 0;
    for (int j = 0; j < p->nsupports; j++)
        any |= (k < 0 || j == k) && is_spring(&p->supports[j]);
    if (!any) return 0;
    /* the facets' checks need the node-to-cell adjacency */
    n2c.n = p->mesh->nnodes;
    HK_TRY(hk_asm_node_cells(p->mesh, &n2c));
    for (int j = 0; j < p->nsupports; j++)
        if ((k < 0 || j == k) && is_spring(&p->supports[j]))
            HK_TRY(spring_support(p, &n2c, j, NULL, u, y));
fail:
    hk_adj_free(&n2c);
    return ierr;
}

/* ---- directions held, for the rigid-body check -------------------------------------------- */

typedef struct dir_ctx {
    const hk_support *sp;
    int d;
    hk_dir_fn fn;
    void *ctx;
} dir_ctx;

static void dir_point(void *vctx, const int32_t *fn, int nf, const double *N, const double x[3],
                      double w, const double n[3])
{
    dir_ctx *c = vctx;
    (void)N, (void)x, (void)w;
    double dirs[3][3];
    int nd = 0;
    if (c->sp->k_normal > 0 && c->sp->k_tangential > 0) {
        for (int i = 0; i < c->d; i++)
            for (int j = 0; j < 3; j++)
                dirs[i][j] = i == j;
        nd = c->d;
    } else if (c->sp->k_normal > 0) {
        memcpy(dirs[nd++], n, sizeof dirs[0]);
    } else if (c->d == 2) {
        dirs[0][0] = -n[1], dirs[0][1] = n[0], dirs[0][2] = 0, nd = 1;
    } else { /* two tangents: n x e, with e the axis least aligned with n, and n x t1 */
        int a = fabs(n[0]) <= fabs(n[1]) && fabs(n[0]) <= fabs(n[2]) ? 0
                : fabs(n[1]) <= fabs(n[2])                           ? 1
                                                                     : 2;
        double e[3] = {a == 0, a == 1, a == 2};
        double *t1 = dirs[0], *t2 = dirs[1];
        t1[0] = n[1] * e[2] - n[2] * e[1];
        t1[1] = n[2] * e[0] - n[0] * e[2];
        t1[2] = n[0] * e[1] - n[1] * e[0];
        t2[0] = n[1] * t1[2] - n[2] * t1[1];
        t2[1] = n[2] * t1[0] - n[0] * t1[2];
        t2[2] = n[0] * t1[1] - n[1] * t1[0];
        nd = 2;
    }
    for (int a = 0; a < nf; a++)
        for (int k = 0; k < nd; k++)
            c->fn(c->ctx, fn[a], dirs[k]);
}

int hk_springs_directions(const hk_problem *p, const hk_adj *n2c, hk_dir_fn fn, void *ctx)
{
    const hk_mesh *m = p->mesh;
    const int d = m->dim;
    for (int k = 0; k < p->nsupports; k++) {
        const hk_support *sp = &p->supports[k];
        if (!is_spring(sp)) continue;
        if (has_area_springs(sp)) {
            dir_ctx c = {.sp = sp, .d = d, .fn = fn, .ctx = ctx};
            HK_CALL(hk_facet_points(p, n2c, sp->boundary, "a spring support", 0, dir_point, &c));
        }
        int64_t nn;
        int32_t *nodes;
        HK_CALL(hk_group_nodes(m, sp->boundary, &nn, &nodes));
        for (int c = 0; c < d; c++) {
            if (!(sp->k_node[c] > 0)) continue;
            double e[3] = {c == 0, c == 1, c == 2};
            for (int64_t i = 0; i < nn; i++)
                fn(ctx, nodes[i], e);
        }
        free(nodes);
    }
    return 0;
}
