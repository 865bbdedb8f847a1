/* STUB (owner: krylov) */
#include "hk_impl.h"
const char *hk_reason_name(hk_reason r) { return "?"; }
int hk_reason_converged(hk_reason r) { return 0; }
int hk_solver_create(const hk_bcsr *K, hk_options *o, hk_solver **s) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
void hk_solver_destroy(hk_solver *s) { (void)s; }
int hk_solver_solve(hk_solver *s, const double *b, double *x, hk_result *res) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
void hk_solver_describe(const hk_solver *s, FILE *f) { (void)s; (void)f; }
void hk_solver_set_monitor(hk_solver *s, hk_monitor_fn fn, void *ctx) { (void)s; }
void hk_solver_print_help(FILE *f) { (void)f; }
