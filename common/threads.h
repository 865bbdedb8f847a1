/* This process's OpenMP thread count, for every thread it makes. */
#ifndef HOOKE_COMMON_THREADS_H
#define HOOKE_COMMON_THREADS_H
#include <pthread.h>
#ifdef __cplusplus
extern "C" {
#endif
/* n > 0: the OpenMP threads of the calling thread's parallel regions and of every thread
 * hk_thread_create starts from now on. (omp_set_num_threads sets the calling thread's count
 * only: a thread made by pthread_create starts from OpenMP's default again.) */
void hk_threads_set(int n);
/* pthread_create, the new thread's OpenMP thread count first set to hk_threads_set's (when it
 * was called). Returns pthread_create's status. */
int hk_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg);
/* The threads one of `local` processes on this machine should use where OMP_NUM_THREADS does
 * not say: its share of the online cores, at most the cores of its affinity mask, at least 1.
 * *mask_cores (0 where unknown) and *online_cores are what it read. */
int hk_threads_share(int local, int *mask_cores, int *online_cores);
#ifdef __cplusplus
}
#endif
#endif
