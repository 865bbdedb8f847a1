/* STUB (owner: mesh) */
#include "hooke/fem.h"
const hk_eltype_info *hk_eltype_get(hk_eltype t) { return 0; }
int hk_eltype_from_gmsh(int g) { return -1; }
void hk_mesh_free(hk_mesh *m) { (void)m; }
int hk_mesh_find_region(const hk_mesh *m, const char *name) { return -1; }
int hk_mesh_find_boundary(const hk_mesh *m, const char *name) { return -1; }
int hk_mesh_load(const char *path, const hk_mesh_options *opt, hk_mesh *m) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_mesh_rectangle(double lx, double ly, int nx, int ny, hk_eltype t, hk_mesh *m) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_mesh_box(double lx, double ly, double lz, int nx, int ny, int nz, hk_eltype t, hk_mesh *m) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_mesh_renumber_rcm(hk_mesh *m) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
