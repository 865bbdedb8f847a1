/* The shape a sparse product's plan (bmat_spgemm_plan, solver/hk_impl.h) was made for, shared
 * by the backends' plans (solver/cpu/cpu_sparse.c, cuda/cuda_sparse.cu). */
#ifndef HOOKE_SPGEMM_PLAN_H
#define HOOKE_SPGEMM_PLAN_H

#include "hk_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a product's plan (bmat_spgemm_plan) was made for: C = A B's block shapes and counts
 * (upper: C's blocks on and above the diagonal). _of fills it from A, B, C; _check: HK_ERR_ARG
 * (a plan for other patterns) unless A, B, C have them. */
typedef struct hk_spgemm_plan_shape {
    int upper, br, bk, bc;
    int64_t nbr, annzb, bnnzb, cnnzb;
} hk_spgemm_plan_shape;
void hk_spgemm_plan_shape_of(const hk_bmat *A, const hk_bmat *B, const hk_bmat *C, int upper,
                             hk_spgemm_plan_shape *s);
int hk_spgemm_plan_check(const hk_spgemm_plan_shape *s, const hk_bmat *A, const hk_bmat *B,
                         const hk_bmat *C);

#ifdef __cplusplus
}
#endif

#endif
