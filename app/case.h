/* Case files: the YAML description of one analysis (docs/case-format.md), read by app/case/,
 * and the pipeline that runs it (mesh -> assemble -> solve -> postproc -> .vtu).
 *
 *   hk_case c;   hk_case_load("cases/cook/cook.yaml", nset, sets, &c);
 *   hk_run r;    hk_run_case(&c, &opts, &r);   hk_run_write(&c, &r, NULL);
 *   hk_run_free(&r);  hk_case_free(&c);
 *
 * Every error in a case file is one sentence "case.yaml:LINE:COL: what; hint" (HK_ERR_CASE).
 * The parser is libfyaml's document tree; --set overrides are applied to that tree before it
 * is read, so they are checked exactly like the file's own keys. */
#ifndef HOOKE_APP_CASE_H
#define HOOKE_APP_CASE_H

#include <stdarg.h>
#include <stdio.h>

#include "hooke/fem.h"
#include "hooke/solver.h"

#define HK_CASE_PATH 4096
#define HK_CASE_NAME 128

/* Where a value came from: line/col 1-based in the case file, or an index into the --set
 * list (set >= 0), so that errors found after parsing (a boundary the mesh lacks) still point
 * at their source. */
typedef struct hk_case_loc {
    int line, col;
    int set; /* -1: from the file */
} hk_case_loc;

typedef struct hk_case_material {
    hk_material m;
    int nregions; /* 0: every region that no other material names */
    char (*regions)[HK_CASE_NAME];
    hk_case_loc *region_loc;
    hk_case_loc loc;
    int has_alpha; /* alpha given (a temperature change needs it) */
} hk_case_material;

typedef struct hk_case_support {
    char boundary[HK_CASE_NAME];
    unsigned mask; /* bit c: component c prescribed */
    double value[3];
    hk_case_loc loc; /* of the boundary name */
    hk_support_kind kind;                     /* type: fixed (default) or spring */
    double k_normal, k_tangential, k_node[3]; /* spring: normal/tangential, stiffness */
    double moment_point[3];                   /* moment_about (default: the origin) */
} hk_case_support;

typedef struct hk_case_load_item {
    hk_load_kind kind;
    char boundary[HK_CASE_NAME]; /* temperature: the region ("": every region) */
    char file[HK_CASE_PATH];     /* temperature: a CSV of nodal values ("": none) */
    double value[3];
    hk_case_loc loc; /* of the boundary (region) name */
    double moment[3], point[3]; /* remote_force: moment, point (value: force) */
    int coupling;               /* remote_force: HK_COUPLING_* */
} hk_case_load_item;

/* One load case of `load_cases:`: its own loads over the shared mesh, materials and supports. */
typedef struct hk_case_loadcase {
    char name[HK_CASE_NAME]; /* a file-name word: <output stem>-<name>.vtu */
    hk_case_loc loc;         /* of the name */
    int nloads;
    hk_case_load_item *loads;
    double body_force[3], gravity[3];
} hk_case_loadcase;

/* Output field selection bits (output.fields). */
enum {
    HK_FIELD_DISPLACEMENT = 1u << 0,
    HK_FIELD_STRAIN = 1u << 1,
    HK_FIELD_STRESS = 1u << 2,
    HK_FIELD_VON_MISES = 1u << 3,
    HK_FIELD_PRINCIPAL = 1u << 4,
    HK_FIELD_REACTION = 1u << 5,
    HK_FIELD_CELL_STRESS = 1u << 6,
    HK_FIELD_ALL = (1u << 7) - 1
};

typedef struct hk_case {
    char path[HK_CASE_PATH]; /* as given (used in messages) */
    char dir[HK_CASE_PATH];  /* directory of the case file, for relative paths */
    char name[HK_CASE_NAME]; /* file name without directory and extension */
    char title[256];

    /* geometry: a file, or a generated rectangle/box */
    char geo_file[HK_CASE_PATH]; /* resolved path ("" when generated) */
    hk_case_loc geo_loc;
    int generate; /* 1: built-in generator */
    int gen_dim;  /* 2 rectangle, 3 box */
    double gen_size[3];
    int gen_cells[3];
    hk_eltype gen_element;
    hk_mesh_options mesh; /* size, order, quad, incomplete, renumber */

    hk_analysis analysis;
    int dim; /* 2 or 3, from analysis */
    double thickness;
    hk_case_loc analysis_loc;

    int nmaterials;
    hk_case_material *materials;
    int nsupports;
    hk_case_support *supports;
    int nloads;
    hk_case_load_item *loads;
    double body_force[3], gravity[3];
    /* load_cases: (exclusive with loads:). 0: the single case above. With load cases the
     * top-level loads are empty and each case carries its own. */
    int nloadcases;
    hk_case_loadcase *loadcases;

    /* modal: (a modal analysis when modal = 1; docs/modal.md): the number of modes, the
     * frequency (Hz) they are sought above (0: from the lowest), the mass matrix, the
     * eigensolver's tolerance and iteration limit (0: its defaults) */
    int modal;
    int modes;
    double modal_shift;
    hk_mass_kind mass;
    double modal_tol;
    int modal_maxit;
    hk_case_loc modal_loc, modes_loc;

    hk_options *solver; /* solver options by name, backend included */
    int nsolver_keys;
    char (*solver_keys)[HK_CASE_NAME];
    hk_case_loc *solver_loc;
    /* solver.dist.partition (docs/parallel.md): which mesh a distributed run cuts, an
     * hk_part_cut of app/run_part.h; kept out of the solver's options (it is the run's) */
    int dist_partition;
    /* solver.dist.mesh: who meshes a distributed run's parts, an hk_part_mesh */
    int dist_mesh;

    char output[HK_CASE_PATH]; /* resolved .vtu path */
    unsigned fields;           /* HK_FIELD_* bits */
    int compress, ascii; /* output.compress as read (1 when absent), output.ascii */
    /* output.compression (hk_vtu_compression; the older compress: true means zlib, false
     * none), output.level (zlib's), output.precision: float32 */
    int compression, zlevel, float32;
    /* the assembled system in Matrix Market ("" when not asked for): K, its right-hand side
     * and the node coordinates (output.matrix, output.rhs, output.coordinates) */
    char matrix_file[HK_CASE_PATH], rhs_file[HK_CASE_PATH], coords_file[HK_CASE_PATH];
    char mass_file[HK_CASE_PATH]; /* output.mass: M of a modal analysis */

    int nsets; /* the --set words, kept for messages */
    char (*sets)[512];
} hk_case;

/* Read and check a case file. sets are "dotted.key=value" overrides (may be NULL/0). */
int hk_case_load(const char *path, int nsets, const char *const *sets, hk_case *c);
void hk_case_free(hk_case *c);

/* Record HK_ERR_CASE with "path:line:col: message" (or "--set K=V: message"). */
int hk_case_error(const hk_case *c, hk_case_loc loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The model of a case on its mesh: materials per region, loads and supports bound to the
 * mesh's boundary indices. Errors name the case-file line and list the names the mesh has. */
typedef struct hk_case_model {
    hk_problem problem;
    hk_material *materials; /* one per mesh region */
    hk_load *loads;
    hk_support *supports;
    double *node_dT; /* nnodes: the temperature files' field (NULL: none) */
} hk_case_model;

/* With load cases, hk_case_bind checks every case's boundaries and binds case 0;
 * hk_case_bind_loadcase rebinds the loads (and gravity, body force) of case k. */
int hk_case_bind(const hk_case *c, const hk_mesh *m, hk_case_model *model);
int hk_case_bind_loadcase(const hk_case *c, const hk_mesh *m, int k, hk_case_model *model);
void hk_case_model_free(hk_case_model *model);

/* ---- the pipeline (app/cmd_run.c) ------------------------------------------------------ */

typedef struct hk_run_opts {
    const char *backend; /* overrides solver.backend when non-NULL */
    const char *assembly; /* where K is assembled and the stresses recovered: "auto" (NULL: on
                           * the solve's device when it has one), "host" or "device" */
    int verbose;         /* every monitor call, Gmsh's own output */
    int quiet;           /* no progress on log */
    FILE *log;           /* progress (stderr when NULL) */
    const char *output;  /* the .vtu hk_run_write will write: its mesh part is written while
                          * the case is solved (hk_vtu_early_start); NULL: all at the end */
} hk_run_opts;

/* The result of one load case (hk_run.lc). */
typedef struct hk_run_loadcase {
    char name[HK_CASE_NAME];
    double *u; /* dim * nnodes */
    hk_fields fields;
    hk_result res;
    int converged;
    double t_assembly, t_solve, t_post, t_output;
    char output[HK_CASE_PATH]; /* the .vtu hk_run_write wrote */
} hk_run_loadcase;

/* The memory guard's estimates (app/run_memory.c), bytes; 0 where not estimated. */
typedef struct hk_run_memory {
    double estimated_cells; /* before meshing: the lower bound from volume and size */
    double host_estimate, host_available, device_estimate, device_available;
    double host_resident_mesh; /* resident bytes when the estimate was made (after meshing) */
    /* the process's peak resident bytes at the end of each stage (getrusage) */
    double host_peak_mesh, host_peak_assembly, host_peak_solve, host_peak_post;
} hk_run_memory;

/* A modal analysis's result (hk_run.modal, app/run_modal.c; docs/modal.md). Mode j's shape is
 * column j of X (ndof x nmodes, column-major), mass-normalised (x^T M x = 1) and zero at the
 * prescribed dofs; its participation factor along direction c is gamma = x^T M r_c (r_c a unit
 * translation), its effective mass gamma^2, as a fraction of total_mass[c]. Directions: x, y
 * (, z); axisymmetric: the axis y only (per radian, as the masses). */
typedef struct hk_run_modal {
    int nmodes;          /* modes reported: the case's modes, above modal.shift */
    int skipped;         /* the lowest modes found below modal.shift and left out */
    int free_rigid;      /* rigid-body motions the supports leave free (zero-frequency modes) */
    double *lambda;      /* nmodes eigenvalues omega^2, (rad/s)^2 */
    double *freq;        /* nmodes frequencies sqrt(lambda) / (2 pi), Hz (0 for lambda <= 0) */
    double *residual;    /* nmodes relative residuals ||K x - lambda M x|| / (|lambda| ||M x||) */
    double max_residual; /* the largest of the flexible modes' (a rigid-body mode has none:
                          * lambda = 0, converged at the rounding floor) */
    int *rigid;          /* nmodes: 1 for a rigid-body mode (zero frequency) */
    double *X;
    double (*gamma)[3], (*eff_mass)[3];
    double total_mass[3];
    hk_eigen_result res;
    char notes[768]; /* what the analysis left out ("loads ignored, ..."), "" when nothing */
    char (*output)[HK_CASE_PATH]; /* nmodes .vtu files hk_run_write wrote */
} hk_run_modal;

typedef struct hk_run {
    hk_mesh mesh;
    hk_case_model model;
    hk_system sys;
    double *u; /* dim * nnodes */
    hk_fields fields;
    hk_result res;
    char solver_desc[256];
    char backend[32];
    char assembled_on[16], recovered_on[16]; /* "host", or the device backend's name */
    char assembly_note[160]; /* why the host assembled a run that could use the device */
    int device_auto;         /* --assembly auto: a device out of memory leaves it to the host */
    int converged;
    double t_mesh, t_assembly, t_setup, t_solve, t_post, t_output, t_total;
    double t_export; /* writing output.matrix / rhs / coordinates (part of t_output) */
    hk_run_memory mem;
    char output[HK_CASE_PATH]; /* what hk_run_write wrote (the .pvd with load cases) */
    hk_vtu_early *vtu_early;   /* the output's mesh part being written (hk_run_opts.output) */
    /* With load cases (c->nloadcases > 0): one result per case, in the case file's order;
     * u, fields and res above stay empty, sys holds K and the first case's right-hand side. */
    int nlc;
    hk_run_loadcase *lc;
    /* With a modal: section: the modes; u, fields and res above stay empty, sys holds K and M */
    hk_run_modal modal;
} hk_run;

/* Mesh, assemble, solve, post-process. A solve that does not converge returns HK_ERR_NUMERIC
 * with the reason, leaving r filled (fields too) so the caller can still write the result. */
int hk_run_case(const hk_case *c, const hk_run_opts *o, hk_run *r);
/* Only the mesh and assembly stages of hk_run_case (r->mesh, r->model, r->sys, times), for
 * benchmarks that solve K themselves. */
int hk_run_assemble(const hk_case *c, const hk_run_opts *o, hk_run *r);
/* Only the mesh stage (r->mesh, r->model bound to it, t_mesh): rank 0 of a distributed run. */
int hk_run_mesh(const hk_case *c, const hk_run_opts *o, hk_run *r);
/* Where the stiffness is assembled and the stresses recovered (o->assembly: auto, host or
 * device), into r->assembled_on, recovered_on, assembly_note and device_auto (assembled_on and
 * recovered_on "host" on entry): on the solve's backend when it is a device, the assembly
 * unless K is wanted on the host (a direct solve, output.matrix) or the model p has what the
 * device assembly lacks (springs, rigid couplings: the note says which). --assembly device
 * where the device cannot: one sentence. Call after the solver options have their backend and
 * method; under mpirun every process calls it with its part's problem. */
int hk_run_fem_backends(const hk_case *c, const hk_run_opts *o, const hk_problem *p, hk_run *r);
/* An HK_ERR_MODEL of assembly pointed at the case file (the supports for rigid-body motion);
 * other codes pass through. An HK_ERR_OPTION of the solver pointed at the key's line. */
int hk_run_model_error(const hk_case *c, int ierr);
int hk_run_solver_option_error(const hk_case *c, int err);
/* hooke run's command line (app/cmd_run.c): go = 1 when the case is to be run, else the
 * return value is the exit status (help printed: 0, a usage error: 2, said on stderr). sets is
 * malloc'ed (the caller frees it) and points into argv. */
typedef struct hk_run_args {
    const char *case_path, *out, *backend, *assembly;
    int json, verbose, quiet, nsets, go;
    const char **sets;
} hk_run_args;
int hk_run_args_parse(int argc, char **argv, hk_run_args *a);
/* A loaded case on the processes of mpirun (app/run_mpi.c; hk_cmd_run_mpi is the command):
 * out the .vtu path asked for (NULL: the case's), the summary from rank 0 as text, JSON or none
 * (benchmarks). The exit status, the same on every process. */
enum { HK_RUN_REPORT_TEXT = 0, HK_RUN_REPORT_JSON, HK_RUN_REPORT_NONE };
int hk_run_mpi_case(const hk_case *c, const hk_run_opts *o, const char *out, int report);
/* The near-null space of r->sys.K from the mesh: node coordinates, mesh.dim per node in K's
 * block-row order (K numbers its block rows by the mesh's nodes), for pc=amg's rigid-body
 * modes; with rigid couplings (extra block rows) the rigid-body modes as explicit vectors.
 * *coords is a new array the caller frees (nn->coords or nn->vectors points into it); both
 * are left empty (NULL, dim 0) when K's blocks do not match the mesh's nodes. With K
 * assembled on a device (r->sys.Kd), nn->coords are the assembly's coordinates in that
 * device's memory (nn->coords_be set, *coords NULL): for hk_solver_create_resident. */
int hk_run_nearnull(const hk_run *r, hk_nearnull *nn, double **coords);
/* Write the .vtu (path NULL: the case's output). With load cases: <stem>-<case>.vtu for each
 * case next to path and <stem>.pvd listing them, one timestep per case. */
int hk_run_write(const hk_case *c, hk_run *r, const char *path, const hk_run_opts *o);
void hk_run_free(hk_run *r);
/* Write the assembled system the case asks for (output.matrix, output.rhs,
 * output.coordinates, output.mass; app/run_export.c): K and f as hk_system holds them
 * (prescribed dofs eliminated symmetrically, so that K u = f gives the run's displacements),
 * the coordinates as an nnodes x 3 array, M of a modal analysis (eliminated as K, so that
 * K x = lambda M x gives its modes). Sets r->t_export. Nothing to do: returns 0. */
int hk_run_export_system(const hk_case *c, hk_run *r);
/* The memory guard: before meshing (from the geometry's volume and geometry.size; nothing
 * to do without a size or for a .msh) and before assembly (from the mesh's counts). backend:
 * the run's --backend (NULL: the device is checked when there is one); device_fem: the device
 * may assemble and recover (--assembly is not host), so the host holds no K. Refuses with
 * HK_ERR_MEMORY and one sentence naming the estimate, what is available and the key. */
/* Start the device backend (cuda or auto asked for) on a thread of its own, to overlap meshing
 * (on several processes: every process at the start of the run); hk_run_device_wait waits for
 * the device (the mesh check calls it first), not for the run's device communicator the thread
 * makes afterwards (dist.comm=nccl: its solver's layout waits for that); hk_run_device_end
 * joins the thread (at the end of the run, or where a failure ends it). */
void hk_run_device_start(const char *backend);
void hk_run_device_wait(void);
void hk_run_device_end(void);
/* The device memory free now on be, bytes (0 where be is none or has no such count). */
double hk_run_device_free(const hk_backend *be);
int hk_run_memory_check_geometry(const hk_case *c, const char *backend, int device_fem,
                                 hk_run_memory *mem);
int hk_run_memory_check_mesh(const hk_case *c, const hk_mesh *m, const char *backend,
                             int device_fem, hk_run_memory *mem);
/* The same for process `part` of `parts` making its own part (solver.dist.mesh=parts): before
 * meshing its share of the geometry's or grid's estimate, after it its part's nodes (owned and
 * ghosts); a refusal names the process. */
int hk_run_memory_check_part_geometry(const hk_case *c, const char *backend, int part, int parts,
                                      hk_run_memory *mem);
int hk_run_memory_check_part(const hk_case *c, const hk_mesh *part_mesh, const char *backend,
                             int part, hk_run_memory *mem);
/* Peak resident size of this process so far (getrusage), bytes. */
double hk_run_peak_host_bytes(void);
/* The summary's memory line, and its JSON member (",\n  \"memory\": {...}"). */
void hk_run_print_memory(const hk_run *r, FILE *f);
void hk_run_print_memory_json(const hk_run *r, FILE *f);

/* The summary: a readable table, or JSON. */
void hk_run_print_summary(const hk_case *c, const hk_run *r, FILE *f);
void hk_run_print_json(const hk_case *c, const hk_run *r, int ok, FILE *f);
/* r->solver_desc from a solver's describe text (trailing blanks cut), r->backend from it. */
void hk_run_set_description(hk_run *r, const char *text);
/* The same from the solver's own describe text. */
void hk_run_describe_solver(hk_run *r, const hk_solver *s);
/* The writer's options of the case's output section (compression, level, precision, ascii). */
hk_vtu_options hk_run_vtu_options(const hk_case *c);
/* The case's field selection of all: a shallow copy without the fields not asked for. */
hk_fields hk_run_select_fields(const hk_case *c, const hk_fields *all);
/* The case's fields as a writer's layout (non-NULL markers: only whether they are there). */
hk_fields hk_run_field_layout(const hk_case *c, int axisymmetric);
/* A JSON string (escaped) and number (null when not finite). */
void hk_run_json_string(FILE *f, const char *s);
void hk_run_json_number(FILE *f, double v);
/* app/run_common.c: a progress line "[   t s] ..." on f, t0 the run's start (hk_time); the
 * same on o's log (stderr when NULL) unless o->quiet. */
void hk_run_vprogress(FILE *f, double t0, const char *fmt, va_list ap);
void hk_run_progress(const hk_run_opts *o, double t0, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* A distributed run's progress lines: printed where on is set (rank 0, not quiet), on stderr,
 * t0 the run's start. */
typedef struct hk_run_log {
    int on;
    double t0;
} hk_run_log;
void hk_run_say(const hk_run_log *L, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The seconds of the last hk_mesh_load's phases, as "Gmsh start and file 0.05, curves and
 * surfaces 0.10, ..." (hooke run, hooke mesh, hooke bench app). */
void hk_run_mesh_phases(char *buf, size_t n);

/* ---- modal analysis (app/run_modal.c) -------------------------------------------------- */

/* The eigensolver's stage of hk_run_case for a case with a modal: section, after meshing and
 * hk_assemble_modal: the modes (r->modal), their frequencies, effective masses and shapes;
 * HK_ERR_NUMERIC, with r->modal filled, when a mode did not converge. t0: the run's start. */
int hk_run_modal_solve(const hk_case *c, const hk_run_opts *o, double t0, hk_run *r);
/* <stem>-mode<k>.vtu per mode next to path (the mode shape as the point vector field
 * "mode_shape", the frequency in the field data) and <stem>.pvd listing them. */
int hk_run_modal_write(const hk_case *c, hk_run *r, const char *path, const hk_run_opts *o);
void hk_run_modal_free(hk_run_modal *m);
/* The modal lines of the summary, and the members of the JSON object. */
void hk_run_modal_print(const hk_case *c, const hk_run *r, FILE *f);
void hk_run_modal_print_json(const hk_case *c, const hk_run *r, FILE *f);

#endif
