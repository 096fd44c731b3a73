/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one clock for elapsed times (sweep phases, deadlines, solve times,
 * probe timings): CLOCK_MONOTONIC in seconds. Header-only, like fnv.h, so
 * that the CUDA module, which does not link costdb, uses it too.
 */
#ifndef COSTDB_CLOCK_H
#define COSTDB_CLOCK_H

#include <time.h>

/* Seconds on the monotonic clock (an arbitrary origin: differences only). */
static inline double costdb_monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
