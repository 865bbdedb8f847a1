/* The memory guard of hooke run (docs/case-format.md, "Memory"): before meshing, from the
 * geometry's volume and geometry.size, and before assembly, from the mesh's counts, estimate
 * the host (and, on the cuda backend, device) memory of the run and refuse, in one sentence,
 * a run that cannot fit instead of running out of memory minutes later.
 *
 * The model (measured with hooke bench app on the bracket, tet10, Gmsh 4.8 and 4.9): the peak
 * resident size is the process's size after meshing plus a number of bytes per scalar nonzero
 * of K: about 9 for K and the assembly's work arrays, and on the CPU backend about 33 more for
 * the solver's copy in its format and the preconditioner (cg + amg, bsr: 40.6 to 42.6 bytes in
 * all at 2.6M, 12.6M and 50M nonzeros; 46 assumed); with the solve on the GPU the host keeps
 * only K and the fields (10.1 to 11.2 bytes measured at 160M nonzeros; 13 assumed). K has
 * about nnz_per_node scalar nonzeros per node for each element kind. When the device also
 * assembles K and recovers the fields (hooke run --assembly auto or device on cuda), K never
 * lives on the host: the host adds only the system's vectors and the recovered fields, 347 and
 * 360 bytes per node measured at 0.78M and 6.4M tet10 nodes (bracket, H100 host; 420 assumed
 * in 3D, 240 in 2D). If the device then leaves the assembly to the host after all (a model it
 * lacks, a direct solve), the guard checks again with K on the host before assembling
 * (hk_run_memory_check_host_assembly). Before meshing, the
 * element count is a lower bound from the volume and the
 * largest element size, so the guard never refuses a mesh that would fit. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "threads.h"
#include "case.h"
#include "hk_impl.h"

enum { BYTES_PER_NNZ_HOST_SOLVE = 46, BYTES_PER_NNZ_DEVICE_SOLVE = 13 };
enum { BYTES_PER_NODE_DEVICE_FEM_3D = 420, BYTES_PER_NODE_DEVICE_FEM_2D = 240 };

/* Scalar nonzeros of K per node (bracket tet10: 216 to 226), nodes per cell in large meshes. */
static void kind_factors(hk_eltype t, double *nnz_per_node, double *nodes_per_cell)
{
    static const struct {
        hk_eltype t;
        double nnz, npc;
    } f[] = {{HK_EL_TRI3, 28, 0.5},    {HK_EL_TRI6, 56, 2.0},    {HK_EL_QUAD4, 36, 1.0},
             {HK_EL_QUAD8, 64, 3.0},   {HK_EL_QUAD9, 80, 4.0},   {HK_EL_TET4, 126, 0.18},
             {HK_EL_TET10, 216, 1.4},  {HK_EL_HEX8, 243, 1.0},   {HK_EL_HEX20, 450, 4.0},
             {HK_EL_HEX27, 540, 8.0}};
    *nnz_per_node = 216, *nodes_per_cell = 1.4;
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        if (f[i].t == t) *nnz_per_node = f[i].nnz, *nodes_per_cell = f[i].npc;
}

/* Resident bytes of this process now (Linux), 0 when unknown. */
static double resident_bytes(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    fclose(f);
    return (double)rss * (double)sysconf(_SC_PAGESIZE);
}

double hk_run_peak_host_bytes(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return 0;
    return (double)ru.ru_maxrss * 1024; /* kilobytes on Linux */
}

/* The backend the solve will run on: cuda when asked for, or auto with a device. */
static const hk_backend *solve_backend(const hk_case *c, const char *backend)
{
    (void)c;
    const hk_backend *be = NULL;
    if (backend && strcmp(backend, "auto") && strcmp(backend, "cuda")) return NULL;
    if (hk_backend_get("cuda", &be)) return NULL;
    return be;
}

/* The device backend's start (its context, library handles and first buffers: about half a
 * second on the GPU hosts) runs on a thread of its own while the model is meshed
 * (hk_run_device_start); nothing else touches the backend until hk_run_device_wait, which the
 * check after meshing calls first. On several processes every process starts its device so
 * from the beginning of the run (app/run_mpi.c), while rank 0 meshes. With dist.comm=nccl the
 * thread then makes the run's device communicator (hk_dist_comm_start: NCCL's start and its
 * links, about 2 s on four H200s), which nothing needs before the solver's layout takes it
 * (and waits for it there): hk_run_device_wait waits only for the device, hk_run_device_end
 * for the thread. */
static struct {
    pthread_t thread;
    int running; /* started and not yet joined */
    int ready;   /* the device started (the thread may still make the communicator) */
    pthread_mutex_t lock;
    pthread_cond_t started;
} device_start = {.lock = PTHREAD_MUTEX_INITIALIZER, .started = PTHREAD_COND_INITIALIZER};

static void device_ready(void)
{
    pthread_mutex_lock(&device_start.lock);
    device_start.ready = 1;
    pthread_cond_broadcast(&device_start.started);
    pthread_mutex_unlock(&device_start.lock);
}

static void *device_start_main(void *arg)
{
    (void)arg;
    const hk_backend *be = NULL;
    size_t dfree = 0, dtotal = 0;
    const int started = !hk_backend_get("cuda", &be);
    if (started && be->mem_info) be->mem_info(&dfree, &dtotal);
    /* the device ready for the other threads; a device that failed to start is announced only
     * after the communicator's attempt below, so that nobody starts it again meanwhile */
    if (started) device_ready();
    /* then the run's device communicator where app/run_mpi.c prepared one (dist.comm=nccl):
     * NCCL's start and its links between the processes, here rather than in the solver's
     * set-up; its failure is reported by the solver that takes it */
    hk_dist_comm_start();
    if (!started) device_ready();
    return NULL; /* a failure (no device) is found again, and reported, by the check */
}

void hk_run_device_start(const char *backend)
{
    if (device_start.running) return;
    if (backend && strcmp(backend, "auto") && strcmp(backend, "cuda")) return;
    device_start.ready = 0;
    device_start.running = hk_thread_create(&device_start.thread, device_start_main, NULL) == 0;
}

double hk_run_device_free(const hk_backend *be)
{
    size_t dfree = 0, dtotal = 0;
    if (!be || !be->mem_info) return 0;
    if (be->mem_info(&dfree, &dtotal)) {
        hk_error_clear();
        return 0;
    }
    return (double)dfree;
}

void hk_run_device_wait(void)
{
    if (!device_start.running) return;
    pthread_mutex_lock(&device_start.lock);
    while (!device_start.ready)
        pthread_cond_wait(&device_start.started, &device_start.lock);
    pthread_mutex_unlock(&device_start.lock);
}

void hk_run_device_end(void)
{
    if (!device_start.running) return;
    pthread_join(device_start.thread, NULL);
    device_start.running = 0;
}

/* Host and device estimates for nnodes nodes of kind t (and, once meshed, the mesh m: the
 * device assembly's own peak); refuse when either cannot fit. device_fem: the device assembles
 * and recovers (where the solve runs on one), so K stays off the host. */
static int check(const hk_case *c, const char *backend, double nodes, hk_eltype t,
                 const char *basis, const hk_mesh *m, int device_fem, int part,
                 hk_run_memory *mem)
{
    double nnz_node, npc;
    kind_factors(t, &nnz_node, &npc);
    double nnz = nodes * nnz_node, ndof = nodes * c->dim;
    /* before meshing, while the device starts: the host's share with the solve presumed on
     * the device (the backend asked for is cuda or auto), the device's after meshing */
    const int starting = device_start.running && !m;
    if (!starting) hk_run_device_wait();
    const hk_backend *be = starting ? NULL : solve_backend(c, backend);
    const int on_device = be || starting;
    mem->host_resident_mesh = resident_bytes();
    if (on_device && device_fem)
        mem->host_estimate = mem->host_resident_mesh +
                             nodes * (c->dim == 3 ? BYTES_PER_NODE_DEVICE_FEM_3D
                                                  : BYTES_PER_NODE_DEVICE_FEM_2D);
    else
        mem->host_estimate = mem->host_resident_mesh +
                             (on_device ? BYTES_PER_NNZ_DEVICE_SOLVE : BYTES_PER_NNZ_HOST_SOLVE) *
                                 nnz;
    mem->host_available = hk_host_memory_available();
    char fix[96], e[32], a[32], who[48] = "this run";
    if (part >= 0) snprintf(who, sizeof who, "process %d of this run", part);
    if (c->generate)
        snprintf(fix, sizeof fix, "lower geometry.generate.cells");
    else
        snprintf(fix, sizeof fix, "raise geometry.size (memory grows as 1/size^%d)", c->dim);
    if (mem->host_available > 0 && mem->host_estimate > mem->host_available) {
        hk_format_bytes(e, sizeof e, mem->host_estimate);
        hk_format_bytes(a, sizeof a, mem->host_available);
        return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                            "%s: %s needs about %s of host memory (%s, %.3g nodes) but %s "
                            "is available; %s",
                            c->path, who, e, basis, nodes, a, fix);
    }
    size_t dfree = 0, dtotal = 0;
    if (be && be->mem_info && !be->mem_info(&dfree, &dtotal)) {
        /* K in the solver's format (8 bytes a value, a column index a block), its set-up
         * copies, the Krylov and preconditioner vectors; on several processes each GPU holds
         * its part (docs/parallel.md) */
        const int nproc = part >= 0 ? 1 : hk_comm_size(hk_comm_world()); /* nodes: the part's */
        mem->device_estimate = (1.5 * (8.5 * nnz) + 12 * 8 * ndof) / nproc;
        /* the device assembly (docs/assembly.md "On the device", one process only): K, the
         * mesh and its adjacency, a chunk of element records; before the solver's set-up, not
         * beside it */
        if (part < 0 && nproc == 1 && m && hk_assemble_on_bytes(m, nnz) > mem->device_estimate)
            mem->device_estimate = hk_assemble_on_bytes(m, nnz);
        mem->device_available = (double)dfree;
        if (mem->device_estimate > mem->device_available) {
            hk_format_bytes(e, sizeof e, mem->device_estimate);
            hk_format_bytes(a, sizeof a, mem->device_available);
            return hk_error_set(HK_ERR_MEMORY, __FILE__, __LINE__,
                                "%s: %s needs about %s of device memory (%s, %.3g nodes) "
                                "but %s is free on the device; %s, or solve on the CPU "
                                "(--backend cpu)",
                                c->path, who, e, basis, nodes, a, fix);
        }
    }
    return 0;
}

/* The element kind the case's mesh options give. */
static hk_eltype case_kind(const hk_case *c)
{
    if (c->generate) return c->gen_element;
    int o2 = c->mesh.order == 2, q = c->mesh.quad, inc = c->mesh.incomplete;
    if (c->dim == 2)
        return q ? (o2 ? (inc ? HK_EL_QUAD8 : HK_EL_QUAD9) : HK_EL_QUAD4)
                 : (o2 ? HK_EL_TRI6 : HK_EL_TRI3);
    return q ? (o2 ? (inc ? HK_EL_HEX20 : HK_EL_HEX27) : HK_EL_HEX8)
             : (o2 ? HK_EL_TET10 : HK_EL_TET4);
}

/* parts > 1: process part's share of the whole (solver.dist.mesh=parts), 1/parts of it */
static int check_geometry(const hk_case *c, const char *backend, int device_fem, int part,
                          int parts, hk_run_memory *mem)
{
    const char *share = parts > 1 ? "its share of " : "";
    if (c->generate) {
        /* the grid's nodes (quadratic elements: twice as many per direction), exactly */
        hk_eltype t = c->gen_element;
        int p = hk_eltype_get(t) && hk_eltype_get(t)->order == 2 ? 2 : 1;
        double nodes = 1;
        for (int d = 0; d < c->gen_dim; d++)
            nodes *= (double)c->gen_cells[d] * p + 1;
        char basis[128];
        snprintf(basis, sizeof basis, "%sa %d x %d%s%.0d grid", share, c->gen_cells[0],
                 c->gen_cells[1], c->gen_dim == 3 ? " x " : "",
                 c->gen_dim == 3 ? c->gen_cells[2] : 0);
        return check(c, backend, nodes / parts, t, basis, NULL, device_fem, part, mem);
    }
    if (!(c->mesh.size > 0)) return 0; /* sizes from the file: after meshing */
    int dim = 0;
    double measure = 0;
    HK_CALL(hk_mesh_geometry_measure(c->geo_file, &dim, &measure));
    if (!(measure > 0) || (dim != 2 && dim != 3)) return 0;
    /* Gmsh puts at least ~3.5 tetrahedra in a cube of the largest size (about 5 measured with
     * the bracket's finer zones), ~1.6 triangles in a square */
    double h = c->mesh.size, cells = dim == 3 ? 3.5 * measure / (h * h * h) : 1.6 * measure / (h * h);
    hk_eltype t = case_kind(c);
    if (c->mesh.quad) cells *= dim == 3 ? 4 : 0.5; /* 4 hexahedra a tetrahedron; 2 triangles a quad */
    double npn, npc;
    kind_factors(t, &npn, &npc);
    char basis[160];
    cells /= parts;
    snprintf(basis, sizeof basis, "at least %.3g elements from %sthe %s %.3g and size %g", cells,
             share, dim == 3 ? "volume" : "area", measure, h);
    mem->estimated_cells = cells;
    return check(c, backend, cells * npc, t, basis, NULL, device_fem, part, mem);
}

int hk_run_memory_check_geometry(const hk_case *c, const char *backend, int device_fem,
                                 hk_run_memory *mem)
{
    return check_geometry(c, backend, device_fem, -1, 1, mem);
}

int hk_run_memory_check_part_geometry(const hk_case *c, const char *backend, int part, int parts,
                                      hk_run_memory *mem)
{
    return check_geometry(c, backend, 0, part, parts, mem);
}


int hk_run_memory_check_mesh(const hk_case *c, const hk_mesh *m, const char *backend,
                             int device_fem, hk_run_memory *mem)
{
    hk_eltype t = m->cells.n ? (hk_eltype)m->cells.type[0] : case_kind(c);
    char basis[128];
    snprintf(basis, sizeof basis, "%lld elements", (long long)m->cells.n);
    return check(c, backend, (double)m->nnodes, t, basis, m, device_fem, -1, mem);
}

int hk_run_memory_check_part(const hk_case *c, const hk_mesh *part_mesh, const char *backend,
                             int part, hk_run_memory *mem)
{
    const hk_mesh *m = part_mesh;
    hk_eltype t = m->cells.n ? (hk_eltype)m->cells.type[0] : case_kind(c);
    char basis[128];
    snprintf(basis, sizeof basis, "its part: %lld elements", (long long)m->cells.n);
    return check(c, backend, (double)m->nnodes, t, basis, m, 0, part, mem);
}

void hk_run_print_memory(const hk_run *r, FILE *f)
{
    fprintf(f, "  memory         host peak %.0f MB (estimate %.0f MB, %.0f MB available)",
            hk_run_peak_host_bytes() / 1e6, r->mem.host_estimate / 1e6,
            r->mem.host_available / 1e6);
    if (r->mem.device_estimate > 0)
        fprintf(f, ", device estimate %.0f MB (%.0f MB free before the run)",
                r->mem.device_estimate / 1e6, r->mem.device_available / 1e6);
    fputc('\n', f);
}

/* ",\n  \"memory\": {...}" in bytes, for the JSON summary. */
void hk_run_print_memory_json(const hk_run *r, FILE *f)
{
    fprintf(f,
            ",\n  \"memory\": {\"host_peak\": %.0f, \"host_estimate\": %.0f, "
            "\"host_available\": %.0f, \"device_estimate\": %.0f, \"device_available\": %.0f}",
            hk_run_peak_host_bytes(), r->mem.host_estimate, r->mem.host_available,
            r->mem.device_estimate, r->mem.device_available);
}
