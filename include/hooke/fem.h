/* Hooke finite elements: the plain data passed between mesh/, assembly/ and postproc/.
 *
 * mesh/      file or generator      -> hk_mesh
 * assembly/  hk_mesh + hk_problem   -> hk_system (block CSR K, loads, constraints)
 * postproc/  hk_mesh + hk_problem + u -> hk_fields -> .vtu/.pvd
 * Only app/ knows the whole chain. Node ordering inside elements is Gmsh's (docs/elements.md),
 * everywhere in Hooke; postproc maps it to VTK's when writing. */
#ifndef HOOKE_FEM_H
#define HOOKE_FEM_H

#include <stdint.h>

#include "hooke/error.h"
#include "hooke/solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- elements -------------------------------------------------------------------------- */

typedef enum {
    HK_EL_POINT1 = 0,
    HK_EL_LINE2,
    HK_EL_LINE3,
    HK_EL_TRI3,
    HK_EL_TRI6,
    HK_EL_QUAD4,
    HK_EL_QUAD8,
    HK_EL_QUAD9,
    HK_EL_TET4,
    HK_EL_TET10,
    HK_EL_HEX8,
    HK_EL_HEX20,
    HK_EL_HEX27,
    HK_EL_WEDGE6, /* prisms (Gmsh's "prism"): triangle x line */
    HK_EL_PYR5,
    HK_EL_WEDGE15,
    HK_EL_WEDGE18,
    HK_EL_PYR13,
    HK_EL_PYR14,
    HK_EL_COUNT
} hk_eltype;

typedef struct hk_eltype_info {
    const char *name; /* "tet10" */
    int dim;          /* 0..3 */
    int nnodes;
    int order;
    int gmsh_type;    /* Gmsh element type number */
    int vtk_type;     /* VTK cell type number */
} hk_eltype_info;

const hk_eltype_info *hk_eltype_get(hk_eltype t);
/* The corners of type t (the first nodes of its Gmsh ordering; 0 for an invalid type). */
int hk_eltype_ncorners(hk_eltype t);
/* -1 when Gmsh type number g has no Hooke element. */
int hk_eltype_from_gmsh(int g);
/* Gmsh -> VTK node order (docs/elements.md): vtk_nodes[i] = gmsh_nodes[order[i]],
 * hk_eltype_vtk_nnodes(t) entries. NULL for an invalid type. */
const int *hk_eltype_vtk_order(hk_eltype t);
/* Nodes of the VTK cell written for t: nnodes, except pyr14 (VTK has no 14-node pyramid: it
 * is written as a 13-node quadratic pyramid without its base centre). 0 for an invalid type. */
int hk_eltype_vtk_nnodes(hk_eltype t);
/* Gmsh reference-element node coordinates, 3 per node (xi, eta, zeta): simplices on
 * [0,1], quads/hexes on [-1,1]^d, wedges (xi,eta) simplex x zeta in [-1,1], pyramids base
 * [-1,1]^2 at zeta 0 with apex (0,0,1). NULL for an invalid type. */
const double *hk_eltype_ref_coords(hk_eltype t);
/* 1 if Hooke has an element kernel for cells of this type (tri3/6, quad4/8/9, tet4/10,
 * hex8/20/27, wedge6/15/18, pyr5/13/14). */
int hk_eltype_has_kernel(hk_eltype t);
/* The boundary facet type of a cell type with an element kernel (hex27 -> quad9, tet10 ->
 * tri6, quad8 -> line3, ...); HK_EL_COUNT for types without one and for wedges and pyramids,
 * whose faces are triangles and quadrilaterals. */
hk_eltype hk_eltype_facet(hk_eltype t);

/* ---- mesh ------------------------------------------------------------------------------ */

/* A set of elements of one dimension (cells or facets), mixed types allowed. */
typedef struct hk_elems {
    int64_t n;
    uint8_t *type;     /* hk_eltype per element */
    int64_t *ptr;      /* n + 1, into nodes */
    int32_t *nodes;    /* 0-based node indices, Gmsh ordering */
    int64_t *tag;      /* Gmsh element tag (or 1-based id for generated meshes), for messages */
} hk_elems;

/* A named physical group. Regions are of the mesh dimension; boundaries of lower dimension
 * (curves and points in 2D; surfaces, curves and points in 3D). */
typedef struct hk_group {
    char name[128];
    int dim;
    int tag;          /* Gmsh physical tag */
    hk_elems elems;   /* boundaries: its facets; regions: unused (cells carry the region) */
    int64_t nnodes;   /* boundaries: the unique nodes of its elements */
    int32_t *nodes;
} hk_group;

typedef struct hk_mesh {
    int dim;            /* 2 or 3 */
    int64_t nnodes;
    double *coords;     /* 3 * nnodes (z = 0 in 2D) */
    hk_elems cells;     /* elements of dimension dim */
    int32_t *cell_region; /* cells.n, index into regions */
    int nregions;
    hk_group *regions;
    int nboundaries;
    hk_group *boundaries;
    /* Set by refinement (hk_mesh_refine, geometry.refine), empty (n 0, NULL) without it: the
     * cells before the first refinement, their corners in this mesh's node numbering (a
     * coarse corner stays a node of the fine mesh), and each cell's coarse ancestor (cells.n
     * indices into coarse), for cutting a model on its coarse mesh (app/run_part.c). */
    hk_elems coarse;
    int32_t *cell_coarse;
} hk_mesh;

void hk_mesh_free(hk_mesh *m);
/* Index of a group by name, -1 if absent. */
int hk_mesh_find_region(const hk_mesh *m, const char *name);
int hk_mesh_find_boundary(const hk_mesh *m, const char *name);

typedef struct hk_mesh_options {
    double size;        /* target element size (0 = Gmsh's default) */
    int order;          /* 1 or 2 */
    int quad;           /* recombine into quads/hexes where possible (transfinite/recombine) */
    int incomplete;     /* 2nd order serendipity (quad8/hex20) instead of quad9/hex27 */
    int renumber;       /* reverse Cuthill-McKee node renumbering */
    int verbose;        /* let Gmsh print */
    int threads;        /* Gmsh's threads (General.NumThreads, Mesh.MaxNumThreads1D/2D/3D);
                         * 0: every core (omp_get_num_procs) */
    int algorithm2d;    /* Gmsh's Mesh.Algorithm (1 MeshAdapt, 5 Delaunay, 6 Frontal-Delaunay,
                         * ...); 0: the file's own or Gmsh's default (6) */
    int algorithm3d;    /* Gmsh's Mesh.Algorithm3D (1 Delaunay, 4 Frontal, 10 HXT, ...); 0: 10 */
    int order_by;       /* who makes the second-order nodes of a meshed geometry:
                         * HK_ORDER_BY_HOOKE (0, in parallel, curved onto the geometry) or
                         * HK_ORDER_BY_GMSH (gmshModelMeshSetOrder, one thread) */
    int refine;         /* uniform refinements by Hooke after meshing (0..HK_REFINE_MAX): Gmsh
                         * meshes with every size 2^refine times larger, Hooke splits each cell
                         * refine times (new boundary nodes onto the geometry), then raises the
                         * order; HK_REFINE_AUTO: chosen from the size (docs/geometry.md) */
} hk_mesh_options;

enum { HK_ORDER_BY_HOOKE = 0, HK_ORDER_BY_GMSH };
/* hk_mesh_options.threads: every core (Gmsh's meshing then varies from run to run) */
enum { HK_MESH_THREADS_ALL = -1 };
enum { HK_REFINE_AUTO = -1, HK_REFINE_MAX = 6 };

/* Load a .msh (2.2 / 4.1) or mesh a .geo/.step/.stp/.brep with the options, through Gmsh.
 * Errors name the file and what is wrong. */
int hk_mesh_load(const char *path, const hk_mesh_options *opt, hk_mesh *m);
/* What the last hk_mesh_load changed from the options to mesh at all ("" when nothing): an
 * option the installed Gmsh lacks and what it used instead. */
const char *hk_mesh_load_notes(void);
/* Seconds of the last hk_mesh_load's phases: Gmsh's start, reading the file (a .geo's
 * OpenCASCADE operations, a .msh's elements) and its end; curves and surfaces, the volume
 * (3D); reading the mesh out of Gmsh into Hooke's arrays (nodes, elements, groups,
 * orientation, the model's curve and surface meshes); Hooke's refinement, second-order nodes
 * and renumbering (0 for phases that did not run). Together they make the whole call. */
typedef struct hk_mesh_load_times {
    double surfaces, volume, order, read, refine;
    double open, renumber;
} hk_mesh_load_times;
hk_mesh_load_times hk_mesh_load_phase_times(void);

/* Element shape: per cell the smallest scaled Jacobian of its corners (the determinant of the
 * corner's edge vectors over their lengths' product), relative to the ideal shape's (1:
 * equilateral triangle, square, regular tetrahedron, cube, right prism on an equilateral
 * triangle, pyramid with equilateral sides; 0 or less: flat or inverted). Corners only. */
typedef struct hk_mesh_quality {
    double min, mean;
    int64_t cells; /* cells measured */
} hk_mesh_quality;
int hk_mesh_measure_quality(const hk_mesh *m, hk_mesh_quality *q);
/* The same over the n cells cells[0 .. n) of m, in that order (NULL: the first n): the figures
 * a mesh of just those cells would give, without making it. */
int hk_mesh_measure_quality_of(const hk_mesh *m, const int64_t *cells, int64_t n,
                               hk_mesh_quality *q);

typedef struct hk_mesh_refine_stats {
    int levels;
    int64_t cells_before, nodes_before;
    hk_mesh_quality before, after;
    int64_t projected;     /* new nodes moved onto the geometry's curves and surfaces */
    int64_t straight;      /* new nodes on them left straight (they would invert a cell) */
    double seconds, bytes; /* time, and the bytes of the refined mesh written */
} hk_mesh_refine_stats;
/* Uniform refinement of a linear mesh, levels times (0..HK_REFINE_MAX), in parallel, the same
 * nodes and cells on any number of threads: tri3 and quad4 into 4, tet4 into 8 (the inner
 * octahedron cut along its shortest diagonal), hex8 and wedge6 into 8, pyr5 into 6 pyramids
 * and 4 tetrahedra; boundary groups (points, lines, triangles, quadrilaterals) follow. New
 * nodes lie on the straight edges and faces (hk_mesh_load projects them onto a geometry's
 * curves and surfaces). st may be NULL. */
int hk_mesh_refine(hk_mesh *m, int levels, hk_mesh_refine_stats *st);
/* The refinement of the last hk_mesh_load (levels 0 when none). */
hk_mesh_refine_stats hk_mesh_load_refine_stats(void);

/* ---- a region of a refined mesh (distributed runs, docs/parallel.md) -------------------- */

/* A node's identity wherever the mesh around it is made: a coarse node's from its index in the
 * coarse mesh, a refined or second-order node's from its corners' keys (those of the edge, the
 * quadrilateral face or the hexahedron it was made on), 128 bits of a hash. */
typedef struct hk_node_key {
    uint64_t a, b;
} hk_node_key;

/* What hk_mesh_load_region refines. select is called once, with the coarse mesh (Gmsh's,
 * after its RCM order: the same on every process that loads the same file with the same
 * options) and the levels of refinement to come; it sets keep[coarse cell] to 1 for the cells
 * to refine here (the others are zero). */
typedef struct hk_mesh_region {
    int (*select)(void *ctx, const hk_mesh *coarse, int levels, uint8_t *keep);
    void *ctx;
    /* out: */
    int refined;       /* 1: the region was made; 0: no refinement asked (m is the whole mesh,
                        * as hk_mesh_load makes it; select was not called) */
    hk_node_key *keys; /* refined: one per node of m (free it) */
} hk_mesh_region;

/* hk_mesh_load of the kept coarse cells only: they are refined (their new nodes onto the
 * geometry as the whole mesh's), raised to the asked order and renumbered (RCM) as one
 * mesh; m->cell_coarse gives each cell's coarse ancestor (an index into the whole coarse
 * mesh), m->coarse stays empty. A boundary group without a facet among them stays, empty. Each
 * node's coordinates are the whole mesh's where the cells around it are all kept. */
int hk_mesh_load_region(const char *path, const hk_mesh_options *opt, hk_mesh_region *reg,
                        hk_mesh *m);
/* The volume (3D) or area (2D) of a geometry file's model entities, without meshing, and the
 * model dimension (both 0 for a .msh file, or a build without Gmsh): for estimates of the
 * mesh a size will give. */
int hk_mesh_geometry_measure(const char *path, int *dim, double *measure);
/* Write m as a Gmsh .msh 4.1 (ASCII) file: nodes, cells and boundary facets, regions and
 * boundaries as named physical groups, one entity per group; hk_mesh_load reads it back
 * to the same nodes, cells and groups. */
int hk_mesh_write_msh(const char *path, const hk_mesh *m);

/* Built-in generators: a lx x ly rectangle of nx x ny cells (tri3, tri6, quad4, quad8,
 * quad9) or a box (tet4, tet10, hex8, hex20, hex27). Regions: "domain". Boundaries: 2D
 * "left" "right" "bottom" "top"; 3D "xmin" "xmax" "ymin" "ymax" "zmin" "zmax"; plus point
 * group "origin". */
int hk_mesh_rectangle(double lx, double ly, int nx, int ny, hk_eltype t, hk_mesh *m);
int hk_mesh_box(double lx, double ly, double lz, int nx, int ny, int nz, hk_eltype t,
                hk_mesh *m);
/* The cells of hk_mesh_rectangle's (dim 2) or hk_mesh_box's grid whose index along axis (0 x,
 * 1 y, 2 z) lies in lo .. hi - 1, with the whole grid's coordinates (bit for bit), in its
 * relative order, and the facets of its groups among them ("origin" where it is made). */
int hk_mesh_grid_slab(int dim, const double *size, const int *cells, hk_eltype t, int axis, int lo,
                      int hi, hk_mesh *m);
/* The quality (hk_mesh_measure_quality) of hk_mesh_rectangle's or hk_mesh_box's grid from one
 * cell of its size: every cell of the grid holds the same elements, translated, so the figures
 * are the whole grid's (to the last bit of the nodes' coordinates) at no cost; q->cells counts
 * the one cell's elements. */
int hk_mesh_grid_quality(int dim, const double *size, const int *cells, hk_eltype t,
                         hk_mesh_quality *q);
/* hk_mesh_grid_slab's mesh with its nodes renumbered as hk_mesh_renumber_rcm renumbers them
 * (the same numbers, its graph made from the grid's structure rather than from the cells);
 * *t_rcm (when not NULL): the renumbering's seconds. */
int hk_mesh_grid_slab_rcm(int dim, const double *size, const int *cells, hk_eltype t, int axis,
                          int lo, int hi, hk_mesh *m, double *t_rcm);
/* Reverse Cuthill-McKee renumbering of the nodes, in place. */
int hk_mesh_renumber_rcm(hk_mesh *m);

/* ---- the problem ----------------------------------------------------------------------- */

/* HK_AXISYMMETRIC: a 2D mesh of the r-z half-plane (x = r >= 0, y = z the axis of symmetry),
 * the hoop direction theta taking the place of z; stiffness, loads and reactions per radian
 * (integrated with the weight r, docs/assembly.md "Axisymmetric analysis"). */
typedef enum { HK_PLANE_STRESS = 0, HK_PLANE_STRAIN, HK_SOLID, HK_AXISYMMETRIC } hk_analysis;

typedef enum {
    HK_MAT_ISOTROPIC = 0, /* E, nu */
    HK_MAT_ORTHOTROPIC,   /* ortho[]: E1 E2 E3 nu12 nu13 nu23 G12 G13 G23 in material axes */
    HK_MAT_ANISOTROPIC    /* D[][]: the stiffness matrix in material axes */
} hk_material_kind;

/* A linear elastic material. A zeroed struct with E, nu (and rho) set is the isotropic
 * material of earlier versions. Voigt order everywhere: xx yy zz xy yz xz with engineering
 * shear strains (gamma = 2 eps); in 2D the anisotropic D is the 3 x 3 in-plane matrix of the
 * analysis (rows/columns xx yy xy in D[0..2][0..2]), in an axisymmetric analysis the 4 x 4
 * matrix of rr zz tt rz (= xx yy zz xy, the hoop direction theta as z) in D[0..3][0..3]. */
typedef struct hk_material {
    char name[64];
    double E, nu, rho;
    hk_material_kind kind;
    double ortho[9];
    double D[6][6];
    /* material axes: rows 1, 2, 3 in global coordinates (orthonormal, right-handed); used
     * when has_axes, else the material axes are the global ones */
    int has_axes;
    double axes[3][3];
    /* thermal expansion per unit temperature along the material axes (isotropic: all three
     * equal) */
    double alpha[3];
    /* integration of the volumetric part of isotropic materials: HK_INTEGRATION_AUTO
     * (selective when nu >= HK_SELECTIVE_NU in 3D and plane strain), _FULL or _SELECTIVE */
    int integration;
} hk_material;

enum { HK_INTEGRATION_AUTO = 0, HK_INTEGRATION_FULL, HK_INTEGRATION_SELECTIVE };
/* Poisson's ratio from which HK_INTEGRATION_AUTO integrates the volumetric part reduced (the
 * full rule locks as nu -> 0.5) */
#define HK_SELECTIVE_NU 0.49

/* The constitutive law of a material under an analysis, in global axes (hk_material_law):
 * stress = D (strain - dT alpha), nv = 3 in 2D (xx yy xy), 4 axisymmetric (rr zz tt rz, the
 * first four of the 3D order) or 6 in 3D. The full 3D law
 * D6/alpha6 (global) gives the out-of-plane stress of plane strain and the out-of-plane
 * strain of plane stress; has3d is 0 for a 2D anisotropic material given as 3 x 3. */
typedef struct hk_law {
    int nv;
    double D[6][6];
    double alpha[6]; /* thermal strain per unit temperature change (engineering shears) */
    double sig0[6];  /* D alpha: the stress per unit temperature change of a held body */
    int has3d;
    double D6[6][6], S6[6][6], alpha6[6];
    int isotropic;
    double lambda, mu; /* isotropic: the Lame constants of the analysis */
    /* selective integration: the volumetric part kappa (tr eps - 3 alpha dT) on the reduced
     * rule (isotropic in 3D, plane strain and axisymmetric only, where tr eps includes the hoop
     * strain; kappa = lambda + 2 mu / 3) */
    int selective;
    double kappa;
} hk_law;

/* Check a material (kind, positive-definite stiffness, axes) and build its law for the
 * analysis (dim 2 or 3). Errors name the material: one sentence. */
int hk_material_law(const hk_material *mt, hk_analysis a, int dim, hk_law *law);

typedef enum {
    HK_LOAD_TRACTION = 0, /* force per area (per length x thickness in 2D) on a boundary */
    HK_LOAD_PRESSURE,     /* normal pressure on a boundary, positive pushes into the body */
    HK_LOAD_FORCE,        /* total force vector spread over the group's nodes equally */
    HK_LOAD_NODAL,        /* force vector applied at every node of the group */
    HK_LOAD_FORCE_SPLIT,  /* total force vector shared equally by the group's nodes */
    HK_LOAD_TEMPERATURE,  /* uniform temperature change value[0] of region `boundary` (a
                           * region index; -1: every region) */
    HK_LOAD_REMOTE        /* force value[] and moment[] at point[], carried to a boundary by a
                           * coupling (HK_COUPLING_*) */
} hk_load_kind;

/* How a remote load reaches its boundary: distributing (RBE3-like: the consistent nodal forces
 * of the linear traction F/A + w x (x - x_c) with the load's resultant force and moment) or
 * rigid (RBE2-like: the boundary moves as a rigid body with the reference point, whose 6 (2D:
 * 3) dofs are extra unknowns of K; the boundary's dofs are eliminated). */
enum { HK_COUPLING_DISTRIBUTING = 0, HK_COUPLING_RIGID };

/* HK_LOAD_FORCE on a boundary of facets (curves in 2D, surfaces in 3D) is the uniform
 * traction value / (area of the boundary) integrated consistently; on a lower-dimensional
 * group (points, curves in 3D) it is shared equally by the nodes, like HK_LOAD_FORCE_SPLIT. */
typedef struct hk_load {
    hk_load_kind kind;
    int boundary;    /* index into mesh->boundaries (temperature: into mesh->regions) */
    double value[3]; /* vector (traction, force) or value[0] = pressure, temperature change */
    /* HK_LOAD_REMOTE: the moment (2D: moment[2], about z), the reference point, the coupling */
    double moment[3], point[3];
    int coupling;
} hk_load;

typedef enum {
    HK_SUPPORT_FIXED = 0, /* prescribed displacement components (mask, value) */
    HK_SUPPORT_SPRING     /* elastic support: k_normal, k_tangential, k_node */
} hk_support_kind;

typedef struct hk_support {
    int boundary;     /* index into mesh->boundaries */
    unsigned mask;    /* bit c set: component c is prescribed */
    double value[3];  /* prescribed displacement per component */
    hk_support_kind kind;
    /* HK_SUPPORT_SPRING: stiffness per area (N/m^3) along the facets' normal and in their
     * plane, traction = -k u integrated consistently over the facets (a boundary of facets);
     * and per node (N/m) along global x, y, z at every node of the group */
    double k_normal, k_tangential, k_node[3];
    double moment_point[3]; /* the reaction moment is taken about this point */
} hk_support;

typedef struct hk_problem {
    const hk_mesh *mesh;
    hk_analysis analysis;
    double thickness;              /* plane stress/strain only (axisymmetric: per radian) */
    const hk_material *materials;  /* one per mesh region: materials[cell_region[e]] */
    double body_force[3];          /* force per volume */
    double gravity[3];             /* acceleration; adds rho * g per volume */
    int nloads;
    const hk_load *loads;
    int nsupports;
    const hk_support *supports;
    /* nodal temperature change (nnodes, interpolated by the shape functions), added to the
     * regions' uniform ones from HK_LOAD_TEMPERATURE; NULL: none */
    const double *node_dT;
} hk_problem;

/* The uniform temperature change of region r: the sum of the problem's HK_LOAD_TEMPERATURE
 * loads that apply to it. */
double hk_problem_region_dT(const hk_problem *p, int r);

/* ---- assembly -------------------------------------------------------------------------- */

typedef struct hk_system {
    int dim;             /* = block size */
    int64_t ndof;        /* dim * nnodes */
    hk_bcsr K;           /* SPD after symmetric elimination of the prescribed dofs */
    double *f;           /* right-hand side, prescribed dofs eliminated */
    double *f_ext;       /* external loads before elimination (for reactions), the thermal
                          * loads int B^T D alpha dT included */
    uint8_t *fixed;      /* ndof: 1 where prescribed */
    double *u_fixed;     /* ndof: prescribed values (0 elsewhere) */
    int64_t nfixed;
    /* Rigid couplings (remote loads with HK_COUPLING_RIGID): ndof = dim * (nnodes + 2 nrigid);
     * coupling k's reference point has block rows nnodes + 2k (translations) and nnodes + 2k + 1
     * (rotations; 2D: theta_z and an unused dof). The coupled nodes' dofs are eliminated
     * (K <- T^T K T, their rows keep only the diagonal and solve to 0); hk_postproc recovers
     * them as u = u_ref + theta x (x - x_ref). */
    int64_t nnodes;
    int nrigid;
    double (*rigid_point)[3];
    int32_t *rigid_of; /* nnodes: the coupling of a coupled node, -1 elsewhere; NULL: none */
    /* Modal analysis (hk_assemble_modal; empty otherwise). M: the mass matrix, in K's block
     * pattern (lumped: block-diagonal), its prescribed dofs (and those of nodes without a
     * cell) eliminated as K's are, with the diagonal K_ii / lambda_fixed: each such dof is an
     * eigenpair (lambda_fixed, e_i) apart from the others, lambda_fixed at the top of the
     * spectrum (docs/modal.md), so K x = lambda M x has the free dofs' eigenpairs below it.
     * mass_r: dim vectors of ndof, M r_c before the elimination (r_c = 1 on component c of
     * every node: a unit translation), for the effective modal masses; total_mass[c] =
     * r_c^T M r_c. free_rigid: the rigid-body motions the supports leave free (6 in 3D, 3 in
     * 2D, 1 axisymmetric per free-floating part; 0 for a held model): the modes at zero
     * frequency. */
    hk_bcsr M;
    double lambda_fixed;
    double *mass_r;
    double total_mass[3];
    int free_rigid;
    /* K assembled on a device (hk_assemble_on): its arrays in that backend's memory, K above
     * empty; hk_solver_create_resident takes them over. Empty otherwise. */
    hk_resident_bcsr Kd;
    /* With Kd: the node coordinates, dim per node, in coords_be's memory (Kd's backend), for
     * the solver's near-null space (hk_nearnull.coords_be); NULL otherwise. */
    double *coords_d;
    const hk_backend *coords_be;
} hk_system;

void hk_system_free(hk_system *s);
/* Check the model and assemble. Errors: element with non-positive Jacobian (its id), region
 * without material, model not held against rigid-body motion. */
int hk_assemble(const hk_problem *p, hk_system *s);
/* The first node of an element lying at r = x < 0 (beyond 1e-9 of the mesh's size), which an
 * axisymmetric analysis refuses; -1 when there is none. */
int64_t hk_axisym_bad_node(const hk_mesh *m);
/* Mass matrices of a modal analysis: consistent (int rho N^T N on a rule exact for it) or
 * lumped (the consistent one's diagonal scaled to the element's mass: HRZ). */
typedef enum { HK_MASS_CONSISTENT = 0, HK_MASS_LUMPED } hk_mass_kind;
/* Check the model and assemble K and M for K x = lambda M x (docs/modal.md): K as hk_assemble
 * assembles it (supports and springs; the problem's loads, gravity, body force and
 * temperatures are not used, and so no rigid couplings), prescribed dofs held at zero
 * whatever value the supports give; a model free to move is allowed (s->free_rigid counts
 * its rigid-body motions). Every region's material needs a positive density. */
int hk_assemble_modal(const hk_problem *p, hk_mass_kind mass, hk_system *s);
/* hk_assemble in two halves, for a mesh cut into parts (distributed runs, docs/parallel.md).
 * hk_assemble_prepare runs, on the whole model, the checks and the steps that need it whole:
 * supports (s->fixed, u_fixed, nfixed), the springs' and rigid-body checks, the surface and
 * nodal loads (s->f_ext); s gets no K and no f. hk_assemble_rows assembles the model of one
 * part, whose mesh holds every cell touching the nodes it assembles: given s->fixed, u_fixed
 * and f_ext of the part's nodes (from the prepared whole), it adds the body loads to f_ext and
 * makes K, f and the elimination; a row whose node has all its cells in the part is bit for bit
 * hk_assemble's row (cells are visited in the mesh's order). Rigid couplings are refused. */
int hk_assemble_prepare(const hk_problem *p, hk_system *s);
int hk_assemble_rows(const hk_problem *p, hk_system *s);
/* Sums over the regions of a model that processes hold (a distributed run's parts made on
 * their processes): counts says whether this process counts a facet of its region (fn, its nf
 * nodes; each facet counted by one process), sum adds n values over the processes (collective:
 * every process calls it alike, in the same order). */
typedef struct hk_region_sums {
    int (*counts)(void *ctx, const int32_t *fn, int nf);
    int (*sum)(void *ctx, double *v, int n);
    void *ctx;
} hk_region_sums;
/* hk_assemble_prepare's supports and loads on a region of a model (a distributed run's part
 * made on its process, docs/parallel.md), without its rigid-body check (the whole model's):
 * every support and load of p acts on the region's groups as given, a remote force
 * (distributing) with its boundary's area, centroid and moments of inertia summed over the
 * regions by rs (every process passes its remote forces, its boundary's facets here or not; a
 * force spread by area and an equally split force need the whole boundary too: give them as
 * the traction and nodal forces they make). */
int hk_assemble_prepare_region(const hk_problem *p, const hk_region_sums *rs, hk_system *s);
/* Elements assembled per second benchmark helper: assemble only K, no checks. */
int hk_assemble_stiffness(const hk_problem *p, hk_bcsr *K);
/* Scalar nonzeros of the system's K, wherever it lives. */
int64_t hk_system_nnz(const hk_system *s);

/* ---- assembly and recovery on a device (fem_cuda/, docs/assembly.md "On the device") ---- */

/* hk_assemble with K assembled, its loads integrated and its supports eliminated in the
 * memory of backend be (s->Kd; s->K stays empty) when be is a device (cuda): the checks,
 * supports, rigid-body check and boundary loads run on the host as in hk_assemble, the
 * pattern, the element matrices, the body and thermal loads and the elimination on the device,
 * with the host's digits to rounding and the same digits on every run. be NULL or the cpu
 * backend: hk_assemble. A model with what hk_assemble_on_limit names is refused
 * (HK_ERR_UNSUPPORTED); assemble it with hk_assemble. */
int hk_assemble_on(const hk_backend *be, const hk_problem *p, hk_system *s);
/* 1 when hk_assemble_on and hk_postproc_on run on be's device (cuda in a CUDA build). */
int hk_fem_on_device(const hk_backend *be);
/* Why p cannot be assembled on a device (spring supports, rigid couplings: their stiffness is
 * added on the host), NULL when it can. */
const char *hk_assemble_on_limit(const hk_problem *p);
/* hk_assemble_rows with the part's K assembled and its supports eliminated on backend be's
 * device (cuda; be NULL or cpu: hk_assemble_rows): the pattern, the element matrices, the body
 * and thermal loads (added to s->f_ext) and the elimination run there, then the first nrows
 * block rows (a part's owned nodes, which come first) are downloaded once into s->K (nrows
 * rows, the part's columns; the host's hk_assemble_rows gives every row) and the rest stays on
 * the device and is freed. Those rows are hk_assemble_rows's to rounding. What
 * hk_assemble_on_limit names is refused (HK_ERR_UNSUPPORTED), a device too small fails with
 * HK_ERR_MEMORY; after a failure s is as it came, for hk_assemble_rows. */
int hk_assemble_rows_on(const hk_backend *be, const hk_problem *p, int64_t nrows, hk_system *s);
/* hk_assemble_rows_on with the rows' values left on the device (a distributed solver takes
 * them there, hk_solver_create_dist_resident): s->K gets the first nrows rows' pattern only
 * (rowptr, the part's columns; val NULL), s->Kd the device's K (every row of the part, the
 * first nrows complete; free it once the solver is made). On the host (be NULL or cpu, no
 * device assembly): hk_assemble_rows, s->Kd empty. */
int hk_assemble_rows_resident_on(const hk_backend *be, const hk_problem *p, int64_t nrows,
                                 hk_system *s);
/* hk_assemble_rows_resident_on with the rows' pattern left on the device too (for
 * hk_solver_create_dist_device; nothing of K comes down): s->K stays empty, s->Kd holds the
 * part's K with nbrows = nrows and nnzb the blocks of those rows (its arrays hold every row's;
 * the rows after nrows are incomplete, never read; free it once the solver is made). On the
 * host: hk_assemble_rows, s->Kd empty. */
int hk_assemble_rows_device_on(const hk_backend *be, const hk_problem *p, int64_t nrows,
                               hk_system *s);
/* hk_assemble_stiffness on be: K only, in be's memory (benchmarks). */
int hk_assemble_stiffness_on(const hk_backend *be, const hk_problem *p, hk_resident_bcsr *K);
/* Device memory the device assembly of m needs at its peak (the mesh, its adjacency, K with
 * nnz scalar nonzeros, the element records and the vectors), bytes. */
double hk_assemble_on_bytes(const hk_mesh *m, double nnz);
/* Device memory the device recovery of m may take (the mesh, u, the fields, a chunk of element
 * results), bytes: with at least this much free, its chunks are at their largest, as on an
 * otherwise empty device (the same chunks, the same bytes). */
double hk_postproc_on_bytes(const hk_mesh *m);

/* ---- post-processing ------------------------------------------------------------------- */

typedef struct hk_fields {
    int64_t nnodes, ncells;
    double *u;             /* 3 * nnodes, z = 0 in 2D */
    double *strain;        /* 6 * nnodes nodal averages: xx yy zz xy yz xz (engineering off-diag halved: tensor) */
    double *stress;        /* 6 * nnodes nodal averages: xx yy zz xy yz xz */
    double *von_mises;     /* nnodes */
    double *principal;     /* 3 * nnodes, descending */
    double *cell_stress;   /* 6 * ncells element averages */
    double *cell_von_mises;/* ncells */
    double *reaction;      /* 3 * nnodes nodal reactions (nonzero at supported nodes; spring
                            * supports: the springs' forces on the body) */
    int nsupports;
    double (*support_reaction)[3]; /* sum of reactions per support (same order) */
    double (*support_moment)[3];   /* their moment about the support's moment_point (2D: [2]) */
    double max_u, max_von_mises;
    int axisymmetric; /* tensors are rr zz tt rz zt rt (x = r, y = z, z = theta), reactions
                       * per radian */
    /* a mode of a modal analysis: its shape (3 * nnodes, z = 0 in 2D; written as the point
     * vector field "mode_shape"), and scalars of the whole grid (written as its FieldData:
     * "frequency_hz", "mode", ...); not filled by hk_postproc */
    double *mode_shape;
    int nfield_data;
    const char *field_data_name[4];
    double field_data[4];
} hk_fields;

void hk_fields_free(hk_fields *f);
/* u is the solution with dim components per node (ndof = dim * nnodes). */
int hk_postproc(const hk_problem *p, const hk_system *s, const double *u, hk_fields *out);
/* hk_postproc with the strains, stresses, invariants and internal forces computed on backend
 * be's device (cuda; be NULL or cpu: hk_postproc): the same fields to rounding, the same digits
 * on every run. The reactions' sums over the supports' nodes stay on the host. */
int hk_postproc_on(const hk_backend *be, const hk_problem *p, const hk_system *s,
                   const double *u, hk_fields *out);
/* The same for one part of a partitioned mesh whose nodes [0, nowned) are the part's own (all
 * their cells in the mesh): the maxima and the supports' reaction sums are taken over those
 * nodes only; the other nodes' fields are incomplete (their owners have them). */
int hk_postproc_part(const hk_problem *p, const hk_system *s, const double *u, int64_t nowned,
                     hk_fields *out);
/* hk_postproc_part with the strains, stresses, invariants and internal forces computed on
 * backend be's device, as hk_postproc_on (be NULL or cpu: hk_postproc_part). */
int hk_postproc_part_on(const hk_backend *be, const hk_problem *p, const hk_system *s,
                        const double *u, int64_t nowned, hk_fields *out);
/* The arrays of the fields (and the recovery's internal forces) of a mesh of nnodes nodes and
 * ncells cells allocated now, zeroed, and their pages taken on a thread of `threads` OpenMP
 * threads while the caller goes on (a distributed run's solve on its device), for the next
 * hk_postproc* of a mesh of these sizes in this process: it stops the thread, takes the arrays
 * (their pages taken so far are not faulted in again) and fills them, the same bytes as
 * without. hk_fields_reserve_bytes: the bytes they take; hk_fields_reserve_stats: the thread's
 * seconds and the bytes whose pages it took; hk_fields_reserve_cancel frees what was not
 * taken (a run stopped before its recovery). */
int hk_fields_reserve(int64_t nnodes, int64_t ncells, int threads);
double hk_fields_reserve_bytes(int64_t nnodes, int64_t ncells);
void hk_fields_reserve_stats(double *seconds, double *touched);
void hk_fields_reserve_cancel(void);
/* The stages of this process's last assembly or recovery on a device (hk_assemble_on,
 * hk_assemble_rows_on, hk_postproc_on, their _part and _resident forms), each with its wall
 * time in ms, "open 3.1, pattern 20.4, ..." (the lines HOOKE_ASSEMBLY_PROFILE prints); "" when
 * none ran. For a distributed run's per-process profile (docs/parallel.md). */
const char *hk_fem_stage_times(void);

/* Compression of the .vtu's appended arrays (docs/output.md). */
typedef enum hk_vtu_compression {
    HK_VTU_NONE = 0, /* raw values */
    HK_VTU_ZLIB,     /* vtkZLibDataCompressor: zlib blocks */
    HK_VTU_LZ4       /* vtkLZ4DataCompressor: LZ4 blocks; only where hk_vtu_have_lz4() */
} hk_vtu_compression;

typedef struct hk_vtu_options {
    hk_vtu_compression compression;
    int level;   /* zlib level 1..9 (0: 1, the fastest) */
    int float32; /* point and cell fields as Float32; coordinates stay Float64 */
    int ascii;   /* values inline as text instead of appended binary (for debugging) */
} hk_vtu_options;

/* Write m and the non-NULL fields of f (f may be NULL) as a VTK XML UnstructuredGrid; opt NULL
 * means all zero (raw binary, Float64). The bytes do not depend on the thread count. */
int hk_vtu_write(const char *path, const hk_mesh *m, const hk_fields *f,
                 const hk_vtu_options *opt);
/* Write the cells e of m with keep[e] non-zero and the nodes they use, with the non-NULL fields
 * of f (the fields of m: f->nnodes and f->ncells are m's): the same bytes as hk_vtu_write of
 * the mesh of those cells (in m's order) and their nodes (in m's order, numbered from 0) with
 * the same fields gathered, without making that mesh or copying the fields (the values are
 * gathered on every thread as they are written). For one process's piece of a distributed
 * run (docs/parallel.md). */
int hk_vtu_write_cells(const char *path, const hk_mesh *m, const hk_fields *f,
                       const hk_vtu_options *opt, const uint8_t *keep);
/* The .vtu in two parts, for a run whose mesh is known before its fields (docs/output.md,
 * "The mesh written during the solve"): hk_vtu_early_start writes the head and the mesh's
 * arrays (points, cells, regions) on a thread of its own, under a temporary name beside path,
 * for the non-NULL fields of layout (which fields and whether axisymmetric; values unused),
 * then fills up to fill_ahead bytes of the fields' part with zeros (their pages in the page
 * cache before the fields come; 0: none) until finish; hk_vtu_early_finish writes f's arrays
 * at their places and renames the file to path: the same bytes as hk_vtu_write(path, m, f,
 * opt). Only uncompressed binary output; start returns NULL (write with hk_vtu_write) for
 * other options, with HOOKE_OUTPUT_EARLY=0 (=mesh: no filling ahead), when path is a link or
 * not a plain file, or when the file or thread cannot be made. m must stay unchanged until
 * finish or cancel. Finish writes the whole file with hk_vtu_write when f's arrays or path
 * differ from the announced ones, and frees e in every case; cancel removes the temporary
 * file and frees e; wait waits for the thread, filling included (benchmarks). */
typedef struct hk_vtu_early hk_vtu_early;
hk_vtu_early *hk_vtu_early_start(const char *path, const hk_mesh *m, const hk_fields *layout,
                                 const hk_vtu_options *opt, int64_t fill_ahead);
/* The same for the piece of m that hk_vtu_write_cells(path, m, f, opt, keep) writes (keep
 * must stay unchanged until finish or cancel). */
hk_vtu_early *hk_vtu_early_start_cells(const char *path, const hk_mesh *m,
                                       const hk_fields *layout, const hk_vtu_options *opt,
                                       int64_t fill_ahead, const uint8_t *keep);
int hk_vtu_early_finish(hk_vtu_early *e, const char *path, const hk_fields *f);
void hk_vtu_early_cancel(hk_vtu_early *e);
void hk_vtu_early_wait(hk_vtu_early *e);
/* 1 when the build has LZ4 (HK_VTU_LZ4), else 0. */
int hk_vtu_have_lz4(void);
/* The former writer through libxml2 (base64 appended data; zlib level 1 blocks of 32 KiB when
 * zlib is set), kept as the baseline of `hooke bench output`. */
int hk_vtu_write_libxml2(const char *path, const hk_mesh *m, const hk_fields *f, int zlib);
/* The .pvtu of a distributed run: the npieces .vtu files (paths relative to the .pvtu), each
 * written by hk_vtu_write with the non-NULL fields of f (f gives only which fields and whether
 * axisymmetric) and the region array when has_region, with the options opt (Float32 fields). */
int hk_pvtu_write(const char *path, int npieces, const char *const *pieces, const hk_fields *f,
                  int has_region, const hk_vtu_options *opt);
/* A .pvd collection of nfiles .vtu files (paths relative to the .pvd) with names. */
int hk_pvd_write(const char *path, int nfiles, const char *const *vtu_files,
                 const char *const *names);
/* The same with the timestep of each file (NULL: 0, 1, 2, ...), ParaView's time value. */
int hk_pvd_write_times(const char *path, int nfiles, const char *const *vtu_files,
                       const char *const *names, const double *times);

#ifdef __cplusplus
}
#endif
#endif
