/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pool of POSIX threads for the auto search (search_pool.h): the tasks
 * are numbered, each thread takes the next number (one atomic counter)
 * until none is left; nothing else is shared through the pool.
 */
#include <pthread.h>
#include <unistd.h>

#include "search_pool.h"

int apsolve_threads_default(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > APSOLVE_THREADS_DEFAULT_MAX ? APSOLVE_THREADS_DEFAULT_MAX : (int)n;
}

typedef struct Pool {
    void (*fn)(void *ctx, int i);
    void *ctx;
    int n;
    int next; /* the next task, taken with __atomic_fetch_add */
} Pool;

static void *pool_work(void *arg)
{
    Pool *pool = arg;
    for (;;) {
        int i = __atomic_fetch_add(&pool->next, 1, __ATOMIC_RELAXED);
        if (i >= pool->n)
            return NULL;
        pool->fn(pool->ctx, i);
    }
}

void apsolve_pool_run(int threads, int n, void (*fn)(void *ctx, int i), void *ctx)
{
    enum { MAX_THREADS = 64 };
    pthread_t tid[MAX_THREADS];
    Pool pool = {fn, ctx, n, 0};
    int started = 0;
    if (threads > n)
        threads = n;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    /* the calling thread is one of them; one that cannot start leaves its
     * tasks to the others */
    for (int t = 1; t < threads; t++)
        if (pthread_create(&tid[started], NULL, pool_work, &pool) == 0)
            started++;
    pool_work(&pool);
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
}
