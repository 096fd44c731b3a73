/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The auto search's independent searches on several threads (apsolve
 * --threads; docs/performance.md, "apsolve's independent searches on
 * several cores"): a pool that runs tasks 0 .. n - 1, each taken in that
 * order by the next free thread, the calling thread among them. The
 * callers make each task's result its own and combine them in the serial
 * order afterwards, so the outcome does not depend on the thread count.
 */
#ifndef APSOLVE_SEARCH_POOL_H
#define APSOLVE_SEARCH_POOL_H

/* The default thread count: the online CPUs, at most
 * APSOLVE_THREADS_DEFAULT_MAX (no search of the auto search has more
 * independent parts worth a thread), at least 1. */
#define APSOLVE_THREADS_DEFAULT_MAX 16
int apsolve_threads_default(void);

/* Runs fn(ctx, i) for every i in 0 .. n - 1 on up to threads threads (the
 * caller's included) and returns when all have returned. threads <= 1, n
 * <= 1 or no thread started: every task in order on the calling thread,
 * as a loop would. */
void apsolve_pool_run(int threads, int n, void (*fn)(void *ctx, int i), void *ctx);

#endif
