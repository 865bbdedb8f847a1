/* This process's OpenMP thread count, for every thread it makes (common/threads.h). */
#define _GNU_SOURCE
#include "threads.h"

#include <omp.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

static int process_threads; /* 0: OpenMP's default */

void hk_threads_set(int n)
{
    if (n <= 0) return;
    __atomic_store_n(&process_threads, n, __ATOMIC_RELEASE);
    omp_set_num_threads(n);
}

typedef struct start {
    void *(*fn)(void *);
    void *arg;
    int threads;
} start;

static void *start_main(void *p)
{
    start s = *(start *)p;
    free(p);
    if (s.threads > 0) omp_set_num_threads(s.threads);
    return s.fn(s.arg);
}

int hk_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg)
{
    start *s = malloc(sizeof *s);
    if (!s) return pthread_create(thread, NULL, fn, arg); /* the default count, as before */
    s->fn = fn, s->arg = arg, s->threads = __atomic_load_n(&process_threads, __ATOMIC_ACQUIRE);
    const int rc = pthread_create(thread, NULL, start_main, s);
    if (rc) free(s);
    return rc;
}

int hk_threads_share(int local, int *mask_cores, int *online_cores)
{
    cpu_set_t set;
    int mask = 0;
    CPU_ZERO(&set);
    if (!sched_getaffinity(0, sizeof set, &set)) mask = CPU_COUNT(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online < 1) online = mask > 0 ? mask : 1;
    if (local < 1) local = 1;
    int share = (int)(online / local);
    if (share < 1) share = 1;
    if (mask > 0 && mask < share) share = mask;
    if (mask_cores) *mask_cores = mask;
    if (online_cores) *online_cores = (int)online;
    return share;
}
