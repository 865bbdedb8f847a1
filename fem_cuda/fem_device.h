/* Private interface of fem_cuda/: the device steps of the assembly and the recovery (a
 * driver), written once in fem_driver.inc and compiled twice, by nvcc with CUDA kernels
 * (fem_cuda.cu, hk_fem_cuda_driver, CUDA builds only) and as host C running the same kernel
 * bodies in serial loops (fem_emul.c, hk_fem_emul_driver, always: the CPU tests check the
 * device decomposition with it); and the host orchestration around them (fem_device.c):
 * checks, supports, the rigid-body check, boundary loads. */
#ifndef HOOKE_FEM_DEVICE_H
#define HOOKE_FEM_DEVICE_H

#include "fem_kernels.h"
#include "hooke/fem.h"
#include "pattern.h" /* assembly/: hk_adj */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hk_fem_session hk_fem_session; /* the mesh and its adjacency on the device */

/* The assembly's inputs beyond the mesh: one hk_fem_region per mesh region. */
typedef struct hk_fem_asm_job {
    const hk_fem_region *regions;
    int nregions;
    int axi, with_f;
    int f_later; /* f_ext with the body loads left on the device (the driver's loads op brings
                  * it down), not downloaded by numeric */
    /* a fresh host array whose pages numeric faults in while its last kernels run
     * (hk_fem_touch_pages; NULL: none) */
    void *touch;
    size_t touch_bytes;
    double fac;
    size_t chunk_bytes; /* hk_fem_chunk_bytes */
} hk_fem_asm_job;

/* The recovery's: laws and temperature changes per region, the displacements (3 per node). */
typedef struct hk_fem_rec_job {
    const hk_law *laws;
    const double *dTr;
    int nlaws;
    hk_analysis an;
    double thick;
    const double *u3;
    size_t chunk_bytes; /* hk_fem_chunk_bytes */
} hk_fem_rec_job;

/* One download of a list (the drivers' dv_down_list: one pipeline through the staging). */
typedef struct hk_fem_down {
    void *host;
    const void *dev;
    size_t bytes;
} hk_fem_down;

typedef struct hk_fem_driver {
    const char *name;
    /* The backend whose memory holds K (cuda; cpu for the emulation). */
    const hk_backend *(*backend)(void);
    /* Upload the mesh, the nodal temperature field (may be NULL) and the reference elements
     * (HK_EL_COUNT, host; kept in use until close), build the node-to-cell adjacency there. */
    int (*open)(const hk_mesh *m, const double *node_dT, const hk_elref *refs, hk_fem_session **s);
    void (*close)(hk_fem_session *s);
    /* The mesh's connected parts: label[i] = the smallest node of node i's part, -1 for a node
     * on no cell (host array of nnodes). */
    int (*parts)(hk_fem_session *s, int32_t *label);
    /* A host copy of the adjacency (the boundary loads need it): every node's cells, or with
     * mask (nnodes bytes, host) only those of the nodes marked nonzero, the others' lists
     * empty. */
    int (*adjacency)(hk_fem_session *s, const uint8_t *mask, hk_adj *n2c);
    /* The pattern's row lengths, started on the device (pattern waits for them; it starts
     * them itself when this was not called). */
    int (*pattern_count)(hk_fem_session *s);
    /* The block CSR pattern of K in be's memory, values zeroed. Refuses, naming the bytes, a
     * K the device's free memory cannot hold. */
    int (*pattern)(hk_fem_session *s, hk_resident_bcsr *K);
    /* Add the element matrices to K and, when job->with_f, the body and thermal loads to
     * f_ext (host, dim per node, in and out, or only in with job->f_later; kept on the device
     * for eliminate and loads). *bad: the
     * first cell with det J <= 0 (or r <= 0) at a point, -1 when none (K is then incomplete). */
    int (*numeric)(hk_fem_session *s, const hk_fem_asm_job *job, hk_resident_bcsr *K, double *f_ext,
                   int64_t *bad);
    /* The symmetric elimination of the fixed dofs (hk_eliminate), f on the host. */
    int (*eliminate)(hk_fem_session *s, hk_resident_bcsr *K, const uint8_t *fixed,
                     const double *u_fixed, double *f);
    /* Strains, stresses, invariants at the nodes and per cell, internal forces (fint, 3 per
     * node) into out's arrays (allocated by hk_pp_prepare). *bad as for numeric. */
    int (*recover)(hk_fem_session *s, const hk_fem_rec_job *job, hk_fields *out, double *fint,
                   int64_t *bad);
    /* Downloads of n arrays (at most 16) of the device's memory (K's too) after its kernels,
     * in one pipeline through pinned staging. */
    int (*download)(const hk_fem_down *list, int n);
    /* The node coordinates, dim per node, into out (nnodes * dim doubles in the memory of
     * backend()), for the solver's near-null space; complete on return. */
    int (*coords)(hk_fem_session *s, double *out);
    /* numeric's f_ext (the loads given it with the body and thermal loads added) into f_ext
     * (host, dim per node): after a numeric with job->f_later, so that the caller's loads stay
     * as they came until every step that may fail for memory has passed. */
    int (*loads)(hk_fem_session *s, double *f_ext);
} hk_fem_driver;

/* Element records of one chunk of cells at most, bytes. */
#define HK_FEM_CHUNK_MAX ((size_t)2 << 30)

extern const hk_fem_driver hk_fem_emul_driver;
#ifdef HOOKE_HAVE_CUDA
extern const hk_fem_driver hk_fem_cuda_driver;
#endif

/* Bytes of work memory a chunk of element records (or recovered elements) may use, for the
 * tests to cut the cells into many chunks; 0 (the default): the driver's own choice. */
extern size_t hk_fem_chunk_bytes;

/* The driver hk_assemble_on and hk_postproc_on use for the cpu backend: NULL (the host's own
 * assembly and recovery), or a test's &hk_fem_emul_driver, which then runs hooke run's device
 * path (K handed to the solver in the cpu backend's memory) on the CPU. */
extern const hk_fem_driver *hk_fem_cpu_driver;

/* Bytes of pinned host memory a large copy between the host and the device goes through at
 * a time (fem_cuda.cu stages them, two buffers in turn), for the tests to cut copies into
 * many pieces; 0 (the default): HK_FEM_STAGE_MAX. */
extern size_t hk_fem_stage_bytes;
#define HK_FEM_STAGE_MAX ((size_t)16 << 20)

/* Nonzero: the free memory the emulation reports (tests of a device too small). */
extern size_t hk_fem_emul_free_bytes;

/* Nonzero: the emulation runs every kernel's threads from the last to the first (tests: the
 * results must not depend on the threads' order). */
extern int hk_fem_emul_reverse;

/* With HOOKE_ASSEMBLY_PROFILE set: the wall time since *t of a part of a stage on stderr
 * (what: "device assembly (numeric)", say, apart from the stages' own lines; part NULL: none
 * printed), *t := now. */
void hk_fem_part_time(const char *what, const char *part, double *t);

/* hk_assemble_on / hk_assemble_stiffness_on / hk_postproc_on with a given driver (tests). */
int hk_fem_assemble_with(const hk_fem_driver *drv, const hk_problem *p, hk_system *s);
int hk_fem_stiffness_with(const hk_fem_driver *drv, const hk_problem *p, hk_resident_bcsr *K);
int hk_fem_postproc_with(const hk_fem_driver *drv, const hk_problem *p, const hk_system *s,
                         const double *u, hk_fields *out);
/* hk_assemble_rows_on / hk_postproc_part_on with a given driver (tests). */
int hk_fem_assemble_rows_with(const hk_fem_driver *drv, const hk_problem *p, int64_t nrows,
                              hk_system *s);
int hk_fem_assemble_rows_resident_with(const hk_fem_driver *drv, const hk_problem *p, int64_t nrows,
                                       hk_system *s);
int hk_fem_assemble_rows_device_with(const hk_fem_driver *drv, const hk_problem *p, int64_t nrows,
                                     hk_system *s);
int hk_fem_postproc_part_with(const hk_fem_driver *drv, const hk_problem *p, const hk_system *s,
                              const double *u, int64_t nowned, hk_fields *out);

#ifdef __cplusplus
}
#endif
#endif
