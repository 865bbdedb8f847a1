/* STUB (owner: formats) */
#include "cpu_impl.h"
int hk_cpu_mat_upload(hk_mat *A) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
void hk_cpu_mat_release(hk_mat *A) { (void)A; }
int hk_cpu_mat_spmv(hk_mat *A, const hk_vec *x, hk_vec *y) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
