/* common/threads.c: a process's share of the cores, and its thread count in the threads it
 * starts (hk_thread_create), which OpenMP would otherwise start at its default. */
#include <omp.h>
#include <pthread.h>

#include "test_util.h"
#include "threads.h"

static void *max_threads_main(void *arg)
{
    *(int *)arg = omp_get_max_threads();
    return NULL;
}

static int in_new_thread(int via_hooke)
{
    pthread_t t;
    int n = -1;
    const int rc = via_hooke ? hk_thread_create(&t, max_threads_main, &n)
                             : pthread_create(&t, NULL, max_threads_main, &n);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    pthread_join(t, NULL);
    return n;
}

static void test_thread_count(void)
{
    const int before = omp_get_max_threads(), plain = in_new_thread(0);
    /* a count other than the default: a new pthread's count shows whose it is */
    const int want = plain == 1 ? 2 : 1;
    hk_threads_set(want);
    CU_ASSERT_EQUAL(omp_get_max_threads(), want);
    CU_ASSERT_EQUAL(in_new_thread(1), want);  /* hk_thread_create: the process's */
    CU_ASSERT_EQUAL(in_new_thread(0), plain); /* pthread_create: OpenMP's default again */
    hk_threads_set(before);
    CU_ASSERT_EQUAL(in_new_thread(1), before);
    hk_threads_set(0); /* no count: nothing changes */
    CU_ASSERT_EQUAL(omp_get_max_threads(), before);
}

static void test_share(void)
{
    int mask = 0, online = 0;
    const int alone = hk_threads_share(1, &mask, &online);
    CU_ASSERT(online >= 1);
    CU_ASSERT(mask >= 1 && mask <= online);
    CU_ASSERT_EQUAL(alone, mask < online ? mask : online);
    /* more processes than cores: one thread each */
    CU_ASSERT_EQUAL(hk_threads_share(2 * online, NULL, NULL), 1);
    const int half = hk_threads_share(2, NULL, NULL);
    CU_ASSERT(half >= 1 && half <= (online / 2 > 1 ? online / 2 : 1) && half <= mask);
    CU_ASSERT_EQUAL(hk_threads_share(0, NULL, NULL), alone); /* 0 or less: one process */
}

HK_SUITE(threads, {"hk_thread_create: the process's OpenMP thread count in new threads",
                   test_thread_count},
         {"hk_threads_share: a process's share of the online cores and its mask", test_share})
