/* STUB (owner: formats) */
#include "hk_impl.h"
int hk_mm_read_matrix(const char *path, hk_bcsr *A) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_mm_write_matrix(const char *path, const hk_bcsr *A) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_mm_read_vector(const char *path, int64_t *n, double **x) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_mm_write_vector(const char *path, int64_t n, const double *x) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_bcsr_to_blocks(const hk_bcsr *A, int bs, hk_bcsr *B) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
