/* STUB (owner: formats) — replaced by the real conversions. */
#include "hk_impl.h"
int hk_fmt_from_bcsr(const hk_bcsr *K, hk_format fmt, int slice, int sigma, hk_fmt *F) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
void hk_fmt_free(hk_fmt *F) { (void)F; }
void hk_fmt_spmv_host(const hk_fmt *F, const double *x, double *y) { (void)F; (void)x; (void)y; }
size_t hk_fmt_bytes(const hk_fmt *F, hk_precision p) { return 0; }
