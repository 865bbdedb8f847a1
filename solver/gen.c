/* Generated test matrices: exact finite-element elasticity stiffness on structured grids of
 * the unit square / cube (quads, triangles, hexes, tets), Poisson (2D, 3D), convection-diffusion
 * (2D, 3D, a recirculating flow), heterogeneous diffusion, a resistor network, a row shuffle,
 * and random block matrices.
 *
 * Elasticity: E = 1, nu = 0.3 (plane stress in 2D), uniform cells of size 1/nx x 1/ny (x 1/nz).
 * The nodes on x = 0 are clamped by symmetric elimination: their block row holds only an
 * identity diagonal block and their block column is removed from every other row, so the
 * matrix is SPD. Node numbering is lexicographic, n = i + (nx+1)*(j + (ny+1)*k), one bs x bs
 * block per node pair that shares an element.
 *
 * Assembly is row-wise (each block row gathers from the cells around its node), so it runs in
 * parallel without atomics and gives the same digits for any thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hk_impl.h"

#define GEN_E 1.0
#define GEN_NU 0.3

/* One element type on a structured cell: up to 6 elements per cell, each listing its cell
 * corners (corner c has offsets dx = c&1, dy = (c>>1)&1, dz = (c>>2)&1) and its stiffness. */
#define GEN_MAXEL 6
#define GEN_MAXLOC 8
typedef struct gen_cell {
    int dim, bs, nel, nloc;
    int corner[GEN_MAXEL][GEN_MAXLOC];
    /* Ke[e][(p*bs + r)*nloc*bs + q*bs + c]: row dof (p, r), column dof (q, c) */
    double Ke[GEN_MAXEL][GEN_MAXLOC * 3 * GEN_MAXLOC * 3];
} gen_cell;

/* Isotropic elasticity matrix D in Voigt notation: 3x3 plane stress or 6x6 3D. */
static void gen_dmat(int dim, double *D)
{
    const double E = GEN_E, nu = GEN_NU;
    if (dim == 2) {
        double f = E / (1 - nu * nu);
        double d[9] = {f, f * nu, 0, f * nu, f, 0, 0, 0, f * (1 - nu) / 2};
        memcpy(D, d, sizeof d);
    } else {
        double lam = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));
        memset(D, 0, 36 * sizeof *D);
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++)
                D[i * 6 + j] = lam;
            D[i * 6 + i] = lam + 2 * mu;
            D[(i + 3) * 6 + i + 3] = mu;
        }
    }
}

/* Ke += w * B^T D B for shape-function gradients g[a][d] (nloc nodes, dim dims).
 * Voigt order: 2D (xx, yy, xy); 3D (xx, yy, zz, yz, xz, xy), engineering shear strains. */
static void gen_add_btdb(int dim, int nloc, double g[][3], const double *D, double w, double *Ke)
{
    const int nv = dim == 2 ? 3 : 6, nd = nloc * dim;
    double B[6][GEN_MAXLOC * 3];
    memset(B, 0, sizeof B);
    for (int a = 0; a < nloc; a++) {
        const double *ga = g[a];
        if (dim == 2) {
            B[0][a * 2] = ga[0];
            B[1][a * 2 + 1] = ga[1];
            B[2][a * 2] = ga[1];
            B[2][a * 2 + 1] = ga[0];
        } else {
            B[0][a * 3] = ga[0];
            B[1][a * 3 + 1] = ga[1];
            B[2][a * 3 + 2] = ga[2];
            B[3][a * 3 + 1] = ga[2];
            B[3][a * 3 + 2] = ga[1];
            B[4][a * 3] = ga[2];
            B[4][a * 3 + 2] = ga[0];
            B[5][a * 3] = ga[1];
            B[5][a * 3 + 1] = ga[0];
        }
    }
    double DB[6][GEN_MAXLOC * 3];
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < nd; j++) {
            double s = 0;
            for (int k = 0; k < nv; k++)
                s += D[i * nv + k] * B[k][j];
            DB[i][j] = s;
        }
    for (int i = 0; i < nd; i++)
        for (int j = 0; j < nd; j++) {
            double s = 0;
            for (int k = 0; k < nv; k++)
                s += B[k][i] * DB[k][j];
            Ke[i * nd + j] += w * s;
        }
}

/* Bilinear quad / trilinear hex on an h[0] x h[1] (x h[2]) box, 2x2(x2) Gauss points. */
static void gen_cell_box(int dim, const double *h, gen_cell *C)
{
    double D[36];
    gen_dmat(dim, D);
    const int nloc = 1 << dim;
    C->dim = dim;
    C->bs = dim;
    C->nel = 1;
    C->nloc = nloc;
    memset(C->Ke, 0, sizeof C->Ke);
    for (int a = 0; a < nloc; a++)
        C->corner[0][a] = a;
    const double gp = 1.0 / sqrt(3.0);
    double detJ = 1;
    for (int d = 0; d < dim; d++)
        detJ *= h[d] / 2;
    for (int q = 0; q < nloc; q++) {
        double xi[3] = {0, 0, 0};
        for (int d = 0; d < dim; d++)
            xi[d] = ((q >> d) & 1) ? gp : -gp;
        double g[GEN_MAXLOC][3];
        for (int a = 0; a < nloc; a++) {
            for (int d = 0; d < dim; d++) {
                /* dN_a/dx_d = (s_d / 2) prod_{e != d} (1 + s_e xi_e)/2 * (2 / h_d) */
                double v = 1;
                for (int e = 0; e < dim; e++) {
                    double s = ((a >> e) & 1) ? 1.0 : -1.0;
                    v *= e == d ? s / 2 : (1 + s * xi[e]) / 2;
                }
                g[a][d] = v * 2 / h[d];
            }
            g[a][2] = dim == 2 ? 0 : g[a][2];
        }
        gen_add_btdb(dim, nloc, g, D, detJ, C->Ke[0]);
    }
}

/* Linear simplex (triangle / tet) with corners pts: constant strain, Ke = |V| B^T D B. */
static void gen_simplex(int dim, double pts[][3], const double *D, double *Ke)
{
    /* Jacobian rows: edges from vertex 0; gradients of barycentrics 1..dim are rows of J^-1^T. */
    double J[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int r = 0; r < dim; r++)
        for (int c = 0; c < dim; c++)
            J[r][c] = pts[r + 1][c] - pts[0][c];
    double det = J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
                 J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
                 J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
    double inv[3][3]; /* inverse of J (columns are the barycentric gradients 1..dim) */
    inv[0][0] = (J[1][1] * J[2][2] - J[1][2] * J[2][1]) / det;
    inv[0][1] = (J[0][2] * J[2][1] - J[0][1] * J[2][2]) / det;
    inv[0][2] = (J[0][1] * J[1][2] - J[0][2] * J[1][1]) / det;
    inv[1][0] = (J[1][2] * J[2][0] - J[1][0] * J[2][2]) / det;
    inv[1][1] = (J[0][0] * J[2][2] - J[0][2] * J[2][0]) / det;
    inv[1][2] = (J[0][2] * J[1][0] - J[0][0] * J[1][2]) / det;
    inv[2][0] = (J[1][0] * J[2][1] - J[1][1] * J[2][0]) / det;
    inv[2][1] = (J[0][1] * J[2][0] - J[0][0] * J[2][1]) / det;
    inv[2][2] = (J[0][0] * J[1][1] - J[0][1] * J[1][0]) / det;
    double g[4][3] = {{0}};
    for (int a = 1; a <= dim; a++)
        for (int d = 0; d < dim; d++)
            g[a][d] = inv[d][a - 1];
    for (int d = 0; d < dim; d++)
        g[0][d] = -(g[1][d] + g[2][d] + (dim == 3 ? g[3][d] : 0));
    double vol = fabs(det) / (dim == 2 ? 2.0 : 6.0);
    gen_add_btdb(dim, dim + 1, g, D, vol, Ke);
}

/* Triangles (2 per cell, diagonal corner 0 - corner 3) or Kuhn tets (6 per cell around the
 * diagonal corner 0 - corner 7; conforming across cells because every cell is cut alike). */
static void gen_cell_simplex(int dim, const double *h, int flip, gen_cell *C)
{
    double D[36];
    gen_dmat(dim, D);
    C->dim = dim;
    C->bs = dim;
    C->nloc = dim + 1;
    memset(C->Ke, 0, sizeof C->Ke);
    if (dim == 2) {
        /* diagonal corner 0 - corner 3, or (flip) corner 1 - corner 2 */
        static const int tri[2][2][3] = {{{0, 1, 3}, {0, 3, 2}}, {{0, 1, 2}, {1, 3, 2}}};
        C->nel = 2;
        for (int e = 0; e < 2; e++)
            memcpy(C->corner[e], tri[flip][e], sizeof tri[flip][e]);
    } else {
        static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                        {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
        C->nel = 6;
        for (int e = 0; e < 6; e++) {
            int c = 0;
            C->corner[e][0] = 0;
            for (int v = 0; v < 2; v++) {
                c |= 1 << perms[e][v];
                C->corner[e][v + 1] = c;
            }
            C->corner[e][3] = 7;
        }
    }
    for (int e = 0; e < C->nel; e++) {
        double pts[4][3] = {{0}};
        for (int a = 0; a < C->nloc; a++)
            for (int d = 0; d < dim; d++)
                pts[a][d] = ((C->corner[e][a] >> d) & 1) * h[d];
        gen_simplex(dim, pts, D, C->Ke[e]);
    }
}

/* Which of nvar cell variants cell (ci, cj, ck) uses: a hash of the cell and the seed, so the
 * choice is the same whichever row asks (the mesh is conforming) and whatever the threads. */
static int gen_variant(int64_t ci, int64_t cj, int64_t ck, int nvar, unsigned seed)
{
    if (nvar <= 1) return 0;
    uint64_t h = (uint64_t)ci * 0x9E3779B97F4A7C15ull ^ (uint64_t)cj * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)ck * 0x165667B19E3779F9ull ^ (uint64_t)seed * 0x27D4EB2F165667C5ull;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    return (int)(h % (uint64_t)nvar);
}

/* The cell whose corner cc (bit 0: x, 1: y, 2: z) is node (i, j, k), as its variant in Cv;
 * NULL when that cell lies outside the nx x ny x nzc grid. */
static const gen_cell *gen_node_cell(const gen_cell *Cv, int nvar, unsigned seed, int nx, int ny,
                                     int nzc, int64_t i, int64_t j, int64_t k, int cc)
{
    const int64_t ci = i - (cc & 1), cj = j - ((cc >> 1) & 1), ck = k - ((cc >> 2) & 1);
    if (ci < 0 || ci >= nx || cj < 0 || cj >= ny || ck < 0 || ck >= nzc) return NULL;
    return Cv + gen_variant(ci, cj, ck, nvar, seed);
}

/* The local node of element e of C at cell corner cc, or -1 when e does not touch it. */
static int gen_local(const gen_cell *C, int e, int cc)
{
    int p = -1;
    for (int q = 0; q < C->nloc; q++)
        if (C->corner[e][q] == cc) p = q;
    return p;
}

/* Seen from the node at corner cc of a cell, the offset slot (dx+1) + 3(dy+1) + 9(dz+1) of the
 * node at corner cq of the same cell. */
static int gen_slot(int cc, int cq)
{
    const int dx = (cq & 1) - (cc & 1), dy = ((cq >> 1) & 1) - ((cc >> 1) & 1),
              dz = ((cq >> 2) & 1) - ((cc >> 2) & 1);
    return (dx + 1) + 3 * (dy + 1) + 9 * (dz + 1);
}

/* Whether the node at corner cq of the cell whose corner cc is a node with x index i is on the
 * clamped face x = 0 (its column is dropped). */
static int gen_clamped(int64_t i, int cc, int cq)
{
    return i - (cc & 1) + (cq & 1) == 0;
}

/* Assemble the cell's elements over an nx x ny x nz grid (nz = 1 and dim = 2 for 2D) into
 * block CSR, clamping the nodes with i = 0. */
static int gen_assemble(const gen_cell *Cv, int nvar, unsigned seed, int nx, int ny, int nz,
                        hk_bcsr *A)
{
    int ierr = 0;
    const int dim = Cv->dim, bs = Cv->bs, b2 = bs * bs;
    const int64_t NX = nx + 1, NY = ny + 1, NZ = dim == 3 ? nz + 1 : 1;
    const int64_t nn = NX * NY * NZ;
    const int nzc = dim == 3 ? nz : 1; /* cells along z */
    memset(A, 0, sizeof *A);
    HK_CHECK(nn < INT32_MAX, HK_ERR_ARG, "generated grid too large (%lld nodes, at most 2^31-1); use fewer cells", (long long)nn);
    uint32_t *mask = NULL; /* per node: bit s set when offset slot s couples */
    HK_TRY(hk_calloc((size_t)nn, sizeof *mask, &mask));
    HK_TRY(hk_malloc((size_t)(nn + 1) * sizeof *A->rowptr, &A->rowptr));
    A->bs = bs;
    A->nbrows = A->nbcols = nn;

    /* Pass 1: the coupling pattern of each node (slot s = (dx+1) + 3(dy+1) + 9(dz+1) increases
     * with the column index, so slots in order give sorted columns). */
#pragma omp parallel for schedule(dynamic, 512)
    for (int64_t n = 0; n < nn; n++) {
        const int64_t i = n % NX, j = (n / NX) % NY, k = n / (NX * NY);
        uint32_t m = 0;
        if (i == 0) {
            m = 1u << 13; /* clamped: the diagonal only */
        } else {
            for (int cc = 0; cc < (1 << dim); cc++) {
                const gen_cell *C = gen_node_cell(Cv, nvar, seed, nx, ny, nzc, i, j, k, cc);
                if (!C) continue;
                for (int e = 0; e < C->nel; e++) {
                    if (gen_local(C, e, cc) < 0) continue;
                    for (int q = 0; q < C->nloc; q++)
                        if (!gen_clamped(i, cc, C->corner[e][q]))
                            m |= 1u << gen_slot(cc, C->corner[e][q]);
                }
            }
        }
        mask[n] = m;
    }
    A->rowptr[0] = 0;
    for (int64_t n = 0; n < nn; n++)
        A->rowptr[n + 1] = A->rowptr[n] + __builtin_popcount(mask[n]);
    const int64_t nnzb = A->rowptr[nn];
    HK_TRY(hk_malloc((size_t)nnzb * sizeof *A->colind, &A->colind));
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * b2 * sizeof *A->val, &A->val));
    /* Pass 2: values, gathered per row from the cells around the node into a local buffer
     * and written once (each page of the value array is touched once, by the thread that owns
     * it: faulting gigabytes in from interleaved chunks is slow on some machines). */
    const int nd = Cv->nloc * bs; /* the same for every variant */
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < nn; n++) {
        const int64_t i = n % NX, j = (n / NX) % NY, k = n / (NX * NY);
        int pos[27];
        double buf[27 * 9];
        int cnt = 0;
        for (int s = 0; s < 27; s++) {
            pos[s] = -1;
            if (mask[n] & (1u << s)) {
                const int dx = s % 3 - 1, dy = (s / 3) % 3 - 1, dz = s / 9 - 1;
                A->colind[A->rowptr[n] + cnt] = (int32_t)(n + dx + NX * (dy + NY * dz));
                pos[s] = cnt++;
            }
        }
        memset(buf, 0, (size_t)cnt * b2 * sizeof *buf);
        if (i == 0) {
            for (int r = 0; r < bs; r++)
                buf[pos[13] * b2 + r * bs + r] = 1.0;
        } else {
            for (int cc = 0; cc < (1 << dim); cc++) {
                const gen_cell *C = gen_node_cell(Cv, nvar, seed, nx, ny, nzc, i, j, k, cc);
                if (!C) continue;
                for (int e = 0; e < C->nel; e++) {
                    const int p = gen_local(C, e, cc);
                    if (p < 0) continue;
                    const double *ke = C->Ke[e];
                    for (int q = 0; q < C->nloc; q++) {
                        const int cq = C->corner[e][q];
                        if (gen_clamped(i, cc, cq)) continue;
                        double *blk = buf + pos[gen_slot(cc, cq)] * b2;
                        for (int r = 0; r < bs; r++)
                            for (int cl = 0; cl < bs; cl++)
                                blk[r * bs + cl] += ke[(p * bs + r) * nd + q * bs + cl];
                    }
                }
            }
        }
        memcpy(A->val + (size_t)A->rowptr[n] * b2, buf, (size_t)cnt * b2 * sizeof *buf);
    }
    free(mask);
    return 0;
fail:
    free(mask);
    hk_bcsr_free(A);
    return ierr;
}

static int gen_check_grid(const char *fn, int nx, int ny, int nz)
{
    HK_CHECK(nx >= 1 && ny >= 1 && nz >= 1, HK_ERR_ARG,
             "%s: grid %d x %d x %d is empty; every cell count must be at least 1", fn, nx, ny, nz);
    return 0;
}

/* The elasticity generators: nvar variants of box (simplex = 0) or simplex cells, variant v
 * cutting its simplices along the other diagonal when v = 1, over an nx x ny x nz grid
 * (nz = 1 in 2D). */
static int gen_elasticity(const char *fn, int dim, int simplex, int nvar, unsigned seed, int nx,
                          int ny, int nz, hk_bcsr *A)
{
    HK_CALL(gen_check_grid(fn, nx, ny, nz));
    gen_cell *Cv = malloc((size_t)nvar * sizeof *Cv);
    HK_CHECK(Cv, HK_ERR_MEMORY, "out of memory building the element %s",
             nvar > 1 ? "matrices" : "matrix");
    const double h[3] = {1.0 / nx, 1.0 / ny, 1.0 / nz};
    for (int v = 0; v < nvar; v++) {
        if (simplex)
            gen_cell_simplex(dim, h, v, &Cv[v]);
        else
            gen_cell_box(dim, h, &Cv[v]);
    }
    int ierr = gen_assemble(Cv, nvar, seed, nx, ny, nz, A);
    free(Cv);
    return ierr;
}

int hk_gen_elasticity2d(int nx, int ny, hk_bcsr *A)
{
    return gen_elasticity("hk_gen_elasticity2d", 2, 0, 1, 0, nx, ny, 1, A);
}

int hk_gen_elasticity2d_tri(int nx, int ny, hk_bcsr *A)
{
    return gen_elasticity("hk_gen_elasticity2d_tri", 2, 1, 1, 0, nx, ny, 1, A);
}

int hk_gen_elasticity2d_tri_random(int nx, int ny, unsigned seed, hk_bcsr *A)
{
    return gen_elasticity("hk_gen_elasticity2d_tri_random", 2, 1, 2, seed, nx, ny, 1, A);
}

int hk_gen_elasticity3d(int nx, int ny, int nz, hk_bcsr *A)
{
    return gen_elasticity("hk_gen_elasticity3d", 3, 0, 1, 0, nx, ny, nz, A);
}

int hk_gen_elasticity3d_tet(int nx, int ny, int nz, hk_bcsr *A)
{
    return gen_elasticity("hk_gen_elasticity3d_tet", 3, 1, 1, 0, nx, ny, nz, A);
}

/* Node coordinates of the lexicographic grid numbering (gen_assemble). */
static int gen_coords(const char *fn, int dim, int nx, int ny, int nz, double **coords)
{
    *coords = NULL;
    HK_CALL(gen_check_grid(fn, nx, ny, nz));
    const int64_t NX = nx + 1, NY = ny + 1, NZ = dim == 3 ? nz + 1 : 1;
    HK_CALL(hk_malloc((size_t)(NX * NY * NZ * dim) * sizeof **coords, coords));
    for (int64_t k = 0; k < NZ; k++)
        for (int64_t j = 0; j < NY; j++)
            for (int64_t i = 0; i < NX; i++) {
                double *c = *coords + (i + NX * (j + NY * k)) * dim;
                c[0] = (double)i / nx;
                c[1] = (double)j / ny;
                if (dim == 3) c[2] = (double)k / nz;
            }
    return 0;
}

int hk_gen_elasticity2d_coords(int nx, int ny, double **coords)
{
    return gen_coords("hk_gen_elasticity2d_coords", 2, nx, ny, 1, coords);
}

int hk_gen_elasticity3d_coords(int nx, int ny, int nz, double **coords)
{
    return gen_coords("hk_gen_elasticity3d_coords", 3, nx, ny, nz, coords);
}

/* Scalar n x n grid operator with 5-point stencil weights (centre, west, east, south, north);
 * Dirichlet boundary eliminated (neighbours outside the grid are dropped). */
static int gen_stencil5(int n, const double w[5], hk_bcsr *A)
{
    int ierr;
    memset(A, 0, sizeof *A);
    HK_CHECK(n >= 1 && (int64_t)n * n < INT32_MAX, HK_ERR_ARG,
             "grid size n = %d out of range; use 1 <= n <= 46340", n);
    const int64_t N = (int64_t)n * n;
    A->bs = 1;
    A->nbrows = A->nbcols = N;
    HK_TRY(hk_malloc((size_t)(N + 1) * sizeof *A->rowptr, &A->rowptr));
    HK_TRY(hk_malloc((size_t)N * 5 * sizeof *A->colind, &A->colind));
    HK_TRY(hk_malloc((size_t)N * 5 * sizeof *A->val, &A->val));
    int64_t k = 0;
    for (int64_t r = 0; r < N; r++) {
        const int64_t i = r % n, j = r / n;
        A->rowptr[r] = k;
        /* in column order: south, west, centre, east, north */
        const int64_t cols[5] = {r - n, r - 1, r, r + 1, r + n};
        const int ok[5] = {j > 0, i > 0, 1, i < n - 1, j < n - 1};
        const double ws[5] = {w[3], w[1], w[0], w[2], w[4]};
        for (int s = 0; s < 5; s++)
            if (ok[s]) {
                A->colind[k] = (int32_t)cols[s];
                A->val[k++] = ws[s];
            }
    }
    A->rowptr[N] = k;
    return 0;
fail:
    hk_bcsr_free(A);
    return ierr;
}

int hk_gen_poisson2d(int n, hk_bcsr *A)
{
    const double w[5] = {4, -1, -1, -1, -1};
    return gen_stencil5(n, w, A);
}

int hk_gen_convdiff2d(int n, double beta, hk_bcsr *A)
{
    /* -lap u + beta (u_x + u_y), h = 1/(n+1), scaled by h^2, first-order upwind (beta >= 0
     * upwinds from west/south, beta < 0 from east/north): an M-matrix, nonsymmetric. */
    const double bh = beta / (n + 1);
    double w[5] = {4 + 2 * fabs(bh), -1, -1, -1, -1};
    if (bh >= 0) {
        w[1] -= bh;
        w[3] -= bh;
    } else {
        w[2] += bh;
        w[4] += bh;
    }
    return gen_stencil5(n, w, A);
}

/* xorshift32: small, deterministic, good enough for test matrices */
static uint32_t gen_rand(uint32_t *s);

/* Weights of a 7-point stencil at node (i, j, k) of an nx x ny x nz grid: centre, then the
 * neighbours at -x, +x, -y, +y, -z, +z. Neighbours outside the grid are dropped (Dirichlet
 * boundary eliminated). */
typedef void (*gen_weights7)(const void *ctx, int64_t i, int64_t j, int64_t k, double w[7]);

/* Scalar matrix of a 7-point stencil (nz = 1: a 5-point one), rows in lexicographic order
 * r = i + nx (j + ny k), columns sorted. */
static int gen_stencil7(const char *fn, int nx, int ny, int nz, gen_weights7 weights,
                        const void *ctx, hk_bcsr *A)
{
    int ierr;
    memset(A, 0, sizeof *A);
    HK_CHECK(nx >= 1 && ny >= 1 && nz >= 1 && (int64_t)nx * ny * nz < INT32_MAX, HK_ERR_ARG,
             "%s: grid %d x %d x %d out of range; use at least 1 and fewer than 2^31 nodes", fn, nx,
             ny, nz);
    const int64_t N = (int64_t)nx * ny * nz, sx = 1, sy = nx, sz = (int64_t)nx * ny;
    A->bs = 1;
    A->nbrows = A->nbcols = N;
    HK_TRY(hk_malloc((size_t)(N + 1) * sizeof *A->rowptr, &A->rowptr));
    HK_TRY(hk_malloc((size_t)N * 7 * sizeof *A->colind, &A->colind));
    HK_TRY(hk_malloc((size_t)N * 7 * sizeof *A->val, &A->val));
    int64_t q = 0;
    for (int64_t r = 0; r < N; r++) {
        const int64_t i = r % nx, j = (r / nx) % ny, k = r / sz;
        double w[7];
        weights(ctx, i, j, k, w);
        /* in column order: -z, -y, -x, centre, +x, +y, +z */
        const int64_t off[7] = {-sz, -sy, -sx, 0, sx, sy, sz};
        const int ok[7] = {k > 0, j > 0, i > 0, 1, i < nx - 1, j < ny - 1, k < nz - 1};
        const double ws[7] = {w[5], w[3], w[1], w[0], w[2], w[4], w[6]};
        A->rowptr[r] = q;
        for (int s = 0; s < 7; s++)
            if (ok[s]) {
                A->colind[q] = (int32_t)(r + off[s]);
                A->val[q++] = ws[s];
            }
    }
    A->rowptr[N] = q;
    return 0;
fail:
    hk_bcsr_free(A);
    return ierr;
}

static void w_poisson3d(const void *ctx, int64_t i, int64_t j, int64_t k, double w[7])
{
    (void)ctx, (void)i, (void)j, (void)k;
    w[0] = 6;
    for (int s = 1; s < 7; s++)
        w[s] = -1;
}

int hk_gen_poisson3d(int n, hk_bcsr *A)
{
    return gen_stencil7("hk_gen_poisson3d", n, n, n, w_poisson3d, NULL, A);
}

/* -lap u + beta (u_x + u_y + u_z) on the unit cube, h = 1/(n+1), scaled by h^2, first-order
 * upwind: an M-matrix, nonsymmetric (the 3D analogue of hk_gen_convdiff2d). */
static void w_convdiff3d(const void *ctx, int64_t i, int64_t j, int64_t k, double w[7])
{
    (void)i, (void)j, (void)k;
    const double bh = *(const double *)ctx, a = fabs(bh);
    w[0] = 6 + 3 * a;
    for (int s = 1; s < 7; s++) /* upwind: the side the flow comes from gets -1 - |bh| */
        w[s] = -1 - (((s & 1) == (bh >= 0)) ? a : 0);
}

int hk_gen_convdiff3d(int n, double beta, hk_bcsr *A)
{
    const double bh = beta / (n + 1);
    return gen_stencil7("hk_gen_convdiff3d", n, n, n, w_convdiff3d, &bh, A);
}

/* -eps lap u + w . grad u on [-1, 1]^2 with the recirculating wind w = (2y(1-x^2),
 * -2x(1-y^2)), eps = 1/peclet, centred differences on an n x n grid of interior nodes
 * (h = 2/(n+1)), scaled by h^2/eps: no M-matrix once the cell Peclet number h|w|/(2 eps)
 * passes 1. */
typedef struct gen_recirc {
    int n;
    double peclet;
} gen_recirc;

static void w_recirc(const void *ctx, int64_t i, int64_t j, int64_t k, double w[7])
{
    (void)k;
    const gen_recirc *c = ctx;
    const double h = 2.0 / (c->n + 1), x = -1 + (i + 1) * h, y = -1 + (j + 1) * h;
    const double wx = 2 * y * (1 - x * x), wy = -2 * x * (1 - y * y);
    const double gx = 0.5 * h * c->peclet * wx, gy = 0.5 * h * c->peclet * wy;
    w[0] = 4;
    w[1] = -1 - gx, w[2] = -1 + gx, w[3] = -1 - gy, w[4] = -1 + gy;
    w[5] = w[6] = 0;
}

int hk_gen_recirc2d(int n, double peclet, hk_bcsr *A)
{
    const gen_recirc c = {n, peclet};
    return gen_stencil7("hk_gen_recirc2d", n, n, 1, w_recirc, &c, A);
}

/* Diffusion -div(kappa grad u) on n^3 nodes with kappa log-uniform over `decades` decades,
 * drawn per node (deterministic in seed); each face's coefficient is the harmonic mean of its
 * two nodes', a face to the boundary takes the node's own. SPD, heterogeneous. */
typedef struct gen_porous {
    int n;
    const double *kappa;
} gen_porous;

static void w_porous(const void *ctx, int64_t i, int64_t j, int64_t k, double w[7])
{
    const gen_porous *c = ctx;
    const int64_t n = c->n, r = i + n * (j + n * k);
    const int64_t idx[3] = {i, j, k}, str[3] = {1, n, n * n};
    const double ka = c->kappa[r];
    w[0] = 0;
    for (int d = 0; d < 3; d++)
        for (int side = 0; side < 2; side++) {
            const int inside = side ? idx[d] < n - 1 : idx[d] > 0;
            double f = ka;
            if (inside) {
                const double kb = c->kappa[r + (side ? str[d] : -str[d])];
                f = 2 * ka * kb / (ka + kb);
            }
            w[1 + 2 * d + side] = -f;
            w[0] += f;
        }
}

int hk_gen_porous3d(int n, double decades, unsigned seed, hk_bcsr *A)
{
    int ierr;
    double *kappa = NULL;
    memset(A, 0, sizeof *A);
    HK_CHECK(n >= 1 && n <= 1290 && decades >= 0 && decades <= 12, HK_ERR_ARG,
             "hk_gen_porous3d: n = %d or decades = %g out of range; use 1 <= n <= 1290, "
             "0..12 decades",
             n, decades);
    const int64_t N = (int64_t)n * n * n;
    HK_CALL(hk_malloc((size_t)N * sizeof *kappa, &kappa));
    uint32_t s = seed * 2654435761u + 77u;
    if (!s) s = 1;
    for (int64_t r = 0; r < N; r++)
        kappa[r] = pow(10.0, decades * ((double)gen_rand(&s) / 4294967296.0 - 0.5));
    const gen_porous c = {n, kappa};
    ierr = gen_stencil7("hk_gen_porous3d", n, n, n, w_porous, &c, A);
    free(kappa);
    return ierr;
}

/* A resistor network: the graph Laplacian of an n x n grid whose edges have conductances
 * log-uniform over two decades, plus one long edge from every 16th node on average to a node
 * chosen at random, and the grid's boundary tied to ground through its missing edges (kept
 * on the diagonal), so the matrix is SPD (the analogue of circuit-simulation matrices). */
int hk_gen_circuit(int n, unsigned seed, hk_bcsr *A)
{
    int ierr;
    int64_t *eu = NULL, *ev = NULL, *cnt = NULL;
    double *eg = NULL, *dg = NULL;
    memset(A, 0, sizeof *A);
    HK_CHECK(n >= 2 && (int64_t)n * n < INT32_MAX / 8, HK_ERR_ARG,
             "hk_gen_circuit: n = %d out of range; use 2 <= n <= 16383", n);
    const int64_t N = (int64_t)n * n, cap = 2 * N + N / 8 + 16;
    uint32_t s = seed * 2654435761u + 991u;
    if (!s) s = 1;
    HK_TRY(hk_malloc((size_t)cap * sizeof *eu, &eu));
    HK_TRY(hk_malloc((size_t)cap * sizeof *ev, &ev));
    HK_TRY(hk_malloc((size_t)cap * sizeof *eg, &eg));
    HK_TRY(hk_calloc((size_t)N, sizeof *dg, &dg));
    HK_TRY(hk_calloc((size_t)N + 1, sizeof *cnt, &cnt));
    int64_t ne = 0;
    for (int64_t r = 0; r < N; r++) {
        const int64_t i = r % n, j = r / n;
        for (int d = 0; d < 4; d++) { /* right, up inside; every missing edge to ground */
            const double g = pow(10.0, 2.0 * ((double)gen_rand(&s) / 4294967296.0) - 1.0);
            const int64_t ni = i + (d == 0) - (d == 2), nj = j + (d == 1) - (d == 3);
            const int inside = ni >= 0 && ni < n && nj >= 0 && nj < n;
            if (!inside)
                dg[r] += g;
            else if (d < 2) {
                eu[ne] = r, ev[ne] = ni + (int64_t)n * nj, eg[ne++] = g;
            }
        }
        if (gen_rand(&s) % 16 == 0) {
            const int64_t t = gen_rand(&s) % (uint32_t)N;
            if (t != r && ne < cap)
                eu[ne] = r, ev[ne] = t, eg[ne++] = 0.1 + (double)(gen_rand(&s) % 10);
        }
    }
    /* CSR by counting; duplicate long edges are summed */
    for (int64_t e = 0; e < ne; e++)
        cnt[eu[e] + 1]++, cnt[ev[e] + 1]++;
    for (int64_t r = 0; r < N; r++)
        cnt[r + 1] += cnt[r] + 1; /* + the diagonal */
    A->bs = 1;
    A->nbrows = A->nbcols = N;
    HK_TRY(hk_malloc((size_t)(N + 1) * sizeof *A->rowptr, &A->rowptr));
    HK_TRY(hk_malloc((size_t)cnt[N] * sizeof *A->colind, &A->colind));
    HK_TRY(hk_malloc((size_t)cnt[N] * sizeof *A->val, &A->val));
    int64_t *pos = A->rowptr; /* fill positions, turned into the row pointers below */
    for (int64_t r = 0; r <= N; r++)
        pos[r] = cnt[r];
    for (int64_t r = 0; r < N; r++) {
        A->colind[pos[r]] = (int32_t)r;
        A->val[pos[r]++] = dg[r];
    }
    for (int64_t e = 0; e < ne; e++) {
        const int64_t u = eu[e], v = ev[e];
        A->val[cnt[u]] += eg[e], A->val[cnt[v]] += eg[e]; /* the diagonals */
        A->colind[pos[u]] = (int32_t)v, A->val[pos[u]++] = -eg[e];
        A->colind[pos[v]] = (int32_t)u, A->val[pos[v]++] = -eg[e];
    }
    /* sort each row by column and merge duplicates */
    int64_t q = 0;
    for (int64_t r = 0; r < N; r++) {
        const int64_t a = cnt[r], b = cnt[r + 1];
        for (int64_t x = a + 1; x < b; x++) {
            const int32_t c = A->colind[x];
            const double v = A->val[x];
            int64_t y = x;
            for (; y > a && A->colind[y - 1] > c; y--)
                A->colind[y] = A->colind[y - 1], A->val[y] = A->val[y - 1];
            A->colind[y] = c, A->val[y] = v;
        }
        const int64_t start = q;
        for (int64_t x = a; x < b; x++) {
            if (q > start && A->colind[q - 1] == A->colind[x]) {
                A->val[q - 1] += A->val[x];
                continue;
            }
            A->colind[q] = A->colind[x];
            A->val[q++] = A->val[x];
        }
        cnt[r] = start;
    }
    cnt[N] = q;
    memcpy(A->rowptr, cnt, (size_t)(N + 1) * sizeof *cnt);
    free(eu), free(ev), free(eg), free(dg), free(cnt);
    return 0;
fail:
    free(eu), free(ev), free(eg), free(dg), free(cnt);
    hk_bcsr_free(A);
    return ierr;
}

/* Rows of the scalar A in a random order (deterministic in seed): the same system with the
 * diagonal scattered off it, as in matrices whose equations come in no particular order. */
int hk_gen_shuffle_rows(hk_bcsr *A, unsigned seed)
{
    int ierr;
    int64_t *perm = NULL, *rp = NULL;
    int32_t *ci = NULL;
    double *v = NULL;
    HK_CHECK(A->bs == 1, HK_ERR_ARG,
             "hk_gen_shuffle_rows: the matrix has blocks of %d; use a "
             "scalar matrix",
             A->bs);
    const int64_t N = A->nbrows, nnz = A->rowptr[N];
    HK_TRY(hk_malloc((size_t)(N ? N : 1) * sizeof *perm, &perm));
    HK_TRY(hk_malloc((size_t)(N + 1) * sizeof *rp, &rp));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *ci, &ci));
    HK_TRY(hk_malloc((size_t)(nnz ? nnz : 1) * sizeof *v, &v));
    uint32_t s = seed * 2654435761u + 5u;
    if (!s) s = 1;
    for (int64_t r = 0; r < N; r++)
        perm[r] = r;
    for (int64_t r = N - 1; r > 0; r--) { /* Fisher-Yates */
        const int64_t t = gen_rand(&s) % (uint32_t)(r + 1), x = perm[r];
        perm[r] = perm[t], perm[t] = x;
    }
    rp[0] = 0;
    for (int64_t r = 0; r < N; r++) { /* new row r is old row perm[r] */
        const int64_t a = A->rowptr[perm[r]], len = A->rowptr[perm[r] + 1] - a;
        memcpy(ci + rp[r], A->colind + a, (size_t)len * sizeof *ci);
        memcpy(v + rp[r], A->val + a, (size_t)len * sizeof *v);
        rp[r + 1] = rp[r] + len;
    }
    free(A->rowptr), free(A->colind), free(A->val), free(perm);
    A->rowptr = rp, A->colind = ci, A->val = v;
    return 0;
fail:
    free(perm), free(rp), free(ci), free(v);
    return ierr;
}

/* xorshift32: small, deterministic, good enough for test matrices */
static uint32_t gen_rand(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

int hk_gen_random(int64_t nbrows, int64_t nbcols, int bs, double bpr, int empty_rows, unsigned seed,
                  hk_bcsr *A)
{
    int ierr;
    char *used = NULL;
    memset(A, 0, sizeof *A);
    HK_CHECK(nbrows >= 0 && nbcols >= 0 && nbcols < INT32_MAX && bs >= 1 && bs <= 6 && bpr >= 0,
             HK_ERR_ARG,
             "hk_gen_random: invalid size %lld x %lld, block size %d or density %g (need sizes >= "
             "0, bs 1..6, density >= 0)",
             (long long)nbrows, (long long)nbcols, bs, bpr);
    uint32_t s = seed * 2654435761u + 12345u;
    if (!s) s = 1;
    const size_t b2 = (size_t)bs * bs;
    /* row lengths: uniform in [0, 2 bpr], capped by nbcols; every 5th row empty if asked */
    HK_TRY(hk_malloc((size_t)(nbrows + 1) * sizeof *A->rowptr, &A->rowptr));
    A->bs = bs;
    A->nbrows = nbrows;
    A->nbcols = nbcols;
    A->rowptr[0] = 0;
    const int64_t maxlen = (int64_t)(2 * bpr + 1);
    for (int64_t i = 0; i < nbrows; i++) {
        int64_t len = nbcols ? (int64_t)(gen_rand(&s) % (uint32_t)(maxlen)) : 0;
        if (len > nbcols) len = nbcols;
        if (empty_rows && gen_rand(&s) % 5 == 0) len = 0;
        A->rowptr[i + 1] = A->rowptr[i] + len;
    }
    const int64_t nnzb = A->rowptr[nbrows];
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * sizeof *A->colind, &A->colind));
    HK_TRY(hk_malloc((size_t)(nnzb ? nnzb : 1) * b2 * sizeof *A->val, &A->val));
    HK_TRY(hk_calloc((size_t)(nbcols ? nbcols : 1), 1, &used));
    for (int64_t i = 0; i < nbrows; i++) {
        const int64_t b = A->rowptr[i], len = A->rowptr[i + 1] - b;
        /* distinct columns: rejection sampling, or a scan when the row is dense */
        int64_t got = 0;
        if (len * 2 < nbcols) {
            while (got < len) {
                int64_t c = gen_rand(&s) % (uint32_t)nbcols;
                if (!used[c]) used[c] = 1, A->colind[b + got++] = (int32_t)c;
            }
        } else {
            for (int64_t c = 0; c < nbcols && got < len; c++)
                if ((int64_t)(gen_rand(&s) % (uint32_t)(nbcols - c)) < len - got)
                    used[c] = 1, A->colind[b + got++] = (int32_t)c;
        }
        /* sort (rows are short) and clear the marks */
        hk_isort_i32(A->colind + b, len);
        for (int64_t p = b; p < b + len; p++)
            used[A->colind[p]] = 0;
    }
    for (int64_t k = 0; k < nnzb * (int64_t)b2; k++)
        A->val[k] = (double)(gen_rand(&s) % 2000001u) / 1e6 - 1.0;
    free(used);
    return 0;
fail:
    free(used);
    hk_bcsr_free(A);
    return ierr;
}
