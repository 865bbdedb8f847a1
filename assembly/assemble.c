/* STUB (owner: assembly) */
#include "hooke/fem.h"
void hk_system_free(hk_system *s) { (void)s; }
int hk_assemble(const hk_problem *p, hk_system *s) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
int hk_assemble_stiffness(const hk_problem *p, hk_bcsr *K) { return hk_error_set(HK_ERR_UNSUPPORTED, __FILE__, __LINE__, "not implemented yet"); }
