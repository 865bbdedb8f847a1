/* Invariants of symmetric 3x3 tensors stored as xx yy zz xy yz xz (recover_kernels.h). */
#include "pp_impl.h"
#include "recover_kernels.h"

double hk_pp_von_mises(const double s[6])
{
    return hk_rec_von_mises(s);
}

void hk_pp_principal(const double s[6], double ev[3])
{
    hk_rec_principal(s, ev);
}
