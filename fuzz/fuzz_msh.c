/* libFuzzer target: a .msh before Gmsh reads it (mesh/msh_check.c: the format version and the
 * declared counts against the file). With HOOKE_FUZZ_GMSH=1 the whole hk_mesh_load runs too,
 * Gmsh included: Gmsh is not instrumented and some malformed files crash it (ending the
 * process with Hooke's one sentence), so that mode is for long runs with -fork
 * (fuzz/README.md). */
#include "fuzz_util.h"
#include "mesh_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int gmsh = -1;
    if (gmsh < 0) gmsh = getenv("HOOKE_FUZZ_GMSH") && getenv("HOOKE_FUZZ_GMSH")[0] == '1';
    const char *path = fuzz_file(data, size, ".msh");
    if (!path) return 0;
    if (!hk_msh_check(path) && gmsh) {
        hk_mesh m;
        hk_mesh_options o = {0};
        if (!hk_mesh_load(path, &o, &m)) hk_mesh_free(&m);
    }
    hk_error_clear();
    return 0;
}
