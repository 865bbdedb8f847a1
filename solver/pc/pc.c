/* STUB (owner: preconditioners) */
#include "hk_impl.h"
