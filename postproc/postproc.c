/* STUB (owner: postproc) */
#include "hooke/fem.h"
void hk_fields_free(hk_fields *f) { (void)f; }
int hk_postproc(const hk_problem *p, const hk_system *s, const double *u, hk_fields *out) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_vtu_write(const char *path, const hk_mesh *m, const hk_fields *f, const hk_vtu_options *opt) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_pvd_write(const char *path, int nfiles, const char *const *vtu_files, const char *const *names) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
