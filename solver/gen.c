/* STUB (owner: formats) */
#include "hk_impl.h"
int hk_gen_elasticity2d(int nx, int ny, hk_bcsr *A) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_gen_elasticity2d_tri(int nx, int ny, hk_bcsr *A) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_gen_elasticity3d(int nx, int ny, int nz, hk_bcsr *A) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_gen_elasticity3d_tet(int nx, int ny, int nz, hk_bcsr *A) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_gen_poisson2d(int n, hk_bcsr *A) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_gen_convdiff2d(int n, double beta, hk_bcsr *A) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_gen_random(int64_t nbrows, int64_t nbcols, int bs, double bpr, int empty_rows, unsigned seed, hk_bcsr *A) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
