/* Test harness: suites register themselves at load time (no central list to edit).
 *
 *   static void test_x(void) { CU_ASSERT(...); }
 *   HK_SUITE(formats, {"spmv of every format equals csr", test_x}, ...)
 *
 * Device suites use HK_DEVICE_SUITE: registered only when a usable CUDA backend exists,
 * otherwise reported as skipped. hk_test_backends() gives the usable backends so one table of
 * cases runs on each. */
#ifndef HOOKE_TEST_UTIL_H
#define HOOKE_TEST_UTIL_H

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>

#include "hooke/fem.h"
#include "hooke/solver.h"

typedef struct hk_test_case {
    const char *name;
    void (*fn)(void);
} hk_test_case;

void hk_test_register_suite(const char *name, int device, const hk_test_case *cases, int n);

#define HK_SUITE_IMPL_(sname, device, ...)                                                         \
    static const hk_test_case hk_suite_cases_##sname[] = {__VA_ARGS__};                            \
    __attribute__((constructor)) static void hk_suite_register_##sname(void)                       \
    {                                                                                              \
        hk_test_register_suite(                                                                    \
            #sname, device, hk_suite_cases_##sname,                                                \
            (int)(sizeof hk_suite_cases_##sname / sizeof hk_suite_cases_##sname[0]));              \
    }
#define HK_SUITE(sname, ...) HK_SUITE_IMPL_(sname, 0, __VA_ARGS__)
#define HK_DEVICE_SUITE(sname, ...) HK_SUITE_IMPL_(sname, 1, __VA_ARGS__)

/* Usable backends (cpu always, cuda when a device is present); NULL-terminated. */
const hk_backend *const *hk_test_backends(void);
/* Solve K x = K * ones from x = 0 with "backend=<be> <opts>": returns the create/solve code;
 * x (n entries, may be NULL) receives the solution, *maxerr (may be NULL) = max |x_i - 1|. */
int hk_test_solve_ones(const hk_backend *be, const hk_bcsr *K, const char *opts, double *x,
                       hk_result *res, double *maxerr);
/* Write text to the file name in the temporary directory; returns its path (one of 8 static
 * buffers, so a few paths stay valid together). */
const char *hk_test_write_case(const char *name, const char *text);
/* Dense references for small systems: K as an n x n row-major matrix (calloc'd), its
 * in-place Cholesky factor L (lower; -1 when not positive definite) and x := (L L^T)^-1 x. */
double *hk_test_dense_of(const hk_bcsr *K);
int hk_test_cholesky(int64_t n, double *A);
void hk_test_cholesky_solve(int64_t n, const double *L, double *x);
/* The cuda backend, or NULL when no device is usable. */
const hk_backend *hk_test_cuda_backend(void);
/* A copy on be of the host (cpu backend) block matrix H, fatal on failure; free with
 * hk_bmat_free. */
struct hk_bmat;
void hk_test_bmat_to(const hk_backend *be, const struct hk_bmat *H, struct hk_bmat *D);
/* n pseudo-random values in [-1, 1), the same for the same seed (malloc'd; free it). */
double *hk_test_rand_vec(int64_t n, unsigned seed);
/* nv vectors on be in prec for one smoother or bound step: v[j] of n random entries (seed +
 * j step), except v[dblk]: n * bs entries, node blocks of bs near 0.5 I (about an inverse
 * diagonal's size); fatal on failure. hk_test_free_vecs destroys them. */
void hk_test_step_vecs(const hk_backend *be, int64_t n, int bs, hk_precision prec, int nv,
                       int dblk, unsigned seed, unsigned step, hk_vec **v);
void hk_test_free_vecs(hk_vec **v, int nv);
int hk_test_have_cuda(void);

/* For the matrix-powers suites: n entries in [0.5, 1.5), the same for the same seed; K =
 * tridiag(-1, 2, -1) of order n (bs 1); a nonsymmetric band of order n with blocks of bs (row i
 * has the columns i - 3, i - 1, i and i + 2, values hashed from seed, a dominant diagonal),
 * where hub >= 0 adds to row hub every third column and to every third row the column hub, so
 * the hub's partition has the largest ghost zone; coefficients of k levels of basis b
 * (monomial, newton, chebyshev on [0.2, 8], about the spectra here) or of a generic
 * three-term recurrence (b = 3). K's arrays are malloc'd (hk_bcsr_free). */
void hk_test_fill(double *h, int64_t n, unsigned seed);
void hk_test_tridiag(int64_t n, hk_bcsr *K);
void hk_test_band(int64_t n, int bs, int64_t hub, unsigned seed, hk_bcsr *K);
void hk_test_mpk_coefs(int b, int k, double *coef);

/* Relative difference max|a-b| / max(max|b|, tiny). */
double hk_test_reldiff(const double *a, const double *b, long n);
/* The true relative residual ||b - K x|| / ||b||, computed on the host. */
double hk_test_relres(const hk_bcsr *K, const double *b, const double *x);

/* Assert that an hk_ call succeeded, printing the library's message if not. */
#define HK_ASSERT_OK(expr)                                                                         \
    do {                                                                                           \
        int hk_t_err_ = (expr);                                                                    \
        if (hk_t_err_) fprintf(stderr, "\n  %s failed: %s\n", #expr, hk_error_message());          \
        CU_ASSERT_EQUAL_FATAL(hk_t_err_, 0);                                                       \
    } while (0)

/* Path of a file in the source tree (tests/data/..., cases/...). Static buffer per call slot. */
const char *hk_test_path(const char *rel);
/* A fresh temporary directory for this test run ("/tmp/hooke-test-XXXXXX"). */
const char *hk_test_tmpdir(void);

/* Load the case file cases/<rel> (or an absolute path) with --set style overrides and run it
 * quietly on the CPU (test_util.c). On error the message is printed and nothing is left to
 * free. */
struct hk_case;
struct hk_run;
struct hk_pc;
int hk_test_run_case(const char *rel, int nsets, const char *const *sets, struct hk_case *c,
                     struct hk_run *r);

/* A solver of K with the near-null space nn (NULL: none) and the options text opts; fails
 * the test (fatally) when it cannot be created (test_util.c). */
hk_solver *hk_test_solver(const hk_bcsr *K, const hk_nearnull *nn, const char *opts);
/* S = D K D with D = diag(d_i) per node, d_i = 2^round(2 sin(0.05 i)) (1/4 .. 4): the values
 * change non-uniformly, while AMG's strength ratios on the finest level stay the same to the
 * last bit (powers of two), so a fresh set-up aggregates that level as K's did. */
void hk_test_node_scaled(const hk_bcsr *K, hk_bcsr *S);

/* z = M^-1 r of the preconditioner `name` with options text `opts` (NULL: none) set up on K
 * (uploaded to be, operator in csr fp64) in precision p, every option checked as used.
 * keep: the preconditioner is handed over there on success (the caller destroys it), else
 * destroyed. Returns the first error code (test_util.c). */
int hk_test_apply_pc(const hk_backend *be, hk_precision p, const hk_bcsr *K, const char *name,
                     const char *opts, const double *r, double *z, struct hk_pc **keep);
/* Iterations of the solver options `text` on K to 1e-8 (maxit 3000), b from rhs (NULL:
 * b_i = 1 + 0.1 (i mod 7)); asserts a converged solve with true residual < 1e-7 and returns -1
 * when it is not. */
int hk_test_solve_iterations(const hk_bcsr *K, const char *backend, const char *text,
                             void (*rhs)(long n, double *b));

/* Solve K x = K 1 from x = 0 with the method settings of *k (type, tolerances, check_every,
 * ...; be, A and pc are filled here, K in format fmt fp64, preconditioner pc without options)
 * on the CPU backend with every read of a value by the host counted (scal_get, vec_dot,
 * vec_mdot, vec_gram, spmv_cgcg). Asserts that it converged in 20 iterations or more, leaves the result
 * in k->res and returns the number of reads (test_util.c). */
struct hk_ksp;
int hk_test_host_reads(const hk_bcsr *K, hk_format fmt, const char *pc, struct hk_ksp *k);

/* Run `hooke solve ARGS` (the built binary) in the temporary directory with one thread, stderr
 * merged: returns the exit status (-1 when it did not run), the output in out (test_util.c). */
int hk_test_solve_cmd(const char *args, char *out, size_t cap);
/* The same for `hooke ARGS` (any subcommand). */
int hk_test_hooke_cmd(const char *args, char *out, size_t cap);
/* Run the shell command cmd in folder dir, its stdout and stderr into out (cap bytes, cut
 * there): returns its exit status, -1 when it did not exit normally. */
int hk_test_shell(const char *dir, const char *cmd, char *out, size_t cap);

/* Same input, same output: run `hooke ARGS -o FILE` (the built binary, in the temporary
 * directory, output discarded) three times, on 1, 2 and 2 OpenMP threads, FILE ending in ext
 * (".vtu", ".mtx"). Returns 1 when every run exited 0 and the three files have the same bytes,
 * else 0 with what differed in why (test_util.c). */
int hk_test_same_bytes(const char *args, const char *ext, char *why, size_t cap);
/* 1 when the files at paths a and b exist, are not empty and have the same bytes. */
int hk_test_same_file(const char *a, const char *b);

/* Meshes of cubes built in code (tests/test_meshes.c). A grid of nx x ny x nz cubes on
 * [0,1] x [0,0.8] x [0,0.6], kind[i] per x column: a hexahedron, 6 pyramids on the faces
 * around the cube's centre (with tets_on_z, those on z = 0 and z = 0.6 split into two
 * tetrahedra each) or two wedges split along the diagonal (0,0)-(1,1) in xy; interior
 * vertices moved at random by up to amp of a cell. hk_test_raise_cells makes every cell
 * quadratic with straight sides (family 0: linear, 1: serendipity, 2: Lagrange);
 * hk_test_builder_mesh gives the mesh with one region "body" and a point group per surface
 * node. */
enum { HK_TEST_CUBE_HEX, HK_TEST_CUBE_PYR, HK_TEST_CUBE_WEDGE };
typedef struct hk_test_builder {
    int nv, cap;
    double *x;
    int nc, ccap;
    uint8_t *type;
    int32_t (*conn)[27];
    /* higher-order node keys: sorted corner ids (up to 8) and the node */
    int nk, kcap;
    int32_t (*key)[9];
} hk_test_builder;
void hk_test_build_grid(hk_test_builder *b, int nx, int ny, int nz, const int *kind,
                        int tets_on_z, double amp, unsigned seed);
hk_eltype hk_test_raise(hk_eltype t, int family);
void hk_test_raise_cells(hk_test_builder *b, int family);
void hk_test_builder_mesh(const hk_test_builder *b, hk_mesh *m);
void hk_test_builder_free(hk_test_builder *b);

/* Small problems of every element kind x analysis x material (tests/test_meshes.c): case k
 * (0, 1, ... until it returns 0): distorted 2D rectangles (tri3 ... quad9) in plane stress,
 * plane strain and axisymmetry, 3D boxes (tet4 ... hex27) and hybrid hex/pyramid/tet/wedge
 * grids (linear, serendipity, Lagrange), two regions with two of the materials isotropic,
 * nearly incompressible (selective by default), orthotropic in turned axes, anisotropic,
 * isotropic with selective integration forced; gravity, a body force, a traction or nodal
 * forces, region and nodal temperature changes, a node on no cell, on some of the cases. */
typedef struct hk_test_fem {
    char name[256];
    hk_mesh mesh;
    hk_material mats[2];
    hk_load loads[4];
    int nloads, nsups;
    hk_support *sups;
    double *node_dT;
    hk_problem p;
} hk_test_fem;
int hk_test_fem_case(int k, hk_test_fem *tc);
void hk_test_fem_free(hk_test_fem *tc);

#endif
