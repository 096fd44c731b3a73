/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker threads of one sweep process (approf sweep --workers N): the tuples
 * of this process's share are profiled by N threads, each with its own
 * backend instance, sharding context (ILP cache), reuse table and partial
 * summary, on the graph, layers, hardware spec, tuples and submesh/config
 * tables of the Sweep, which nobody writes while they run. Workers take the
 * next tuple from a shared counter and hand results to the calling (main)
 * thread through a bounded window; the main thread alone hands them on
 * (to the writer thread, sweep_writer.h; MPI sends), calls the callbacks
 * and polls MPI and the stop flag. Results are handed on in tuple order, so the database, the
 * entry lines and the progress are those of one thread; only the 'reused'
 * flag may differ (each worker has its own reuse table).
 */
#ifndef APPROF_SWEEP_WORKERS_H
#define APPROF_SWEEP_WORKERS_H

#include <stddef.h>

#include "backend.h"
#include "sweep_int.h"

/* What the main thread does with the workers' results. */
typedef struct ApprofSweepWorkHooks {
    void *ctx;
    /* Before each result is handed on and every few milliseconds while
     * waiting for one: 0 to go on; APPROF_EINTR to stop (the workers finish
     * the tuples they hold, which are still handed on); another negative
     * code to stop and hand on nothing more. */
    int (*poll)(void *ctx);
    /* One tuple's result: k indexes sw->tuples; called in the order of
     * todo[]; the placements as the worker made them (their specs live
     * until the run returns). A negative return stops the run with that
     * code. */
    int (*put)(void *ctx, size_t k, const CostdbEntry e[2], const ApprofSlotPlacement *pl,
               size_t n_pl);
} ApprofSweepWorkHooks;

/* The worker count when --workers is not given (cfg->workers == 0): 1 for
 * the analytic backend ("model"); for the CUDA backend one per device this
 * process measures on (sw->n_devices; worker j's backend is opened on
 * sw->devices[j % n_devices]). */
int approf_sweep_default_workers(const Sweep *sw);

/* The tuple index todo[i]; todo NULL stands for the identity (every tuple
 * of the sweep in order: no list of millions of indices to hold). */
static inline size_t approf_todo_at(const size_t *todo, size_t i)
{
    return todo ? todo[i] : i;
}

/* Profiles sw->tuples[todo[i]] (approf_todo_at) for i < n_todo with `workers` threads (>= 2;
 * fewer are started when there are fewer tuples) and hands every result to
 * hooks->put in order. The first worker uses sw's own backend, sharding
 * context and reuse table; the others open their own (cfg->backend as
 * sw's backend resolved it). Per-worker sharding and costing times, reuses
 * and sharding ILP counts are added to sum. Returns 0, APPROF_EINTR, or the
 * first error (a tuple's, with err naming it; a hook's; a worker's setup). */
int approf_sweep_workers_run(Sweep *sw, const ApprofSweepConfig *cfg,
                             const ApprofSweepCallbacks *cb, const size_t *todo, size_t n_todo,
                             int workers, const ApprofSweepWorkHooks *hooks,
                             ApprofSweepSummary *sum, char *err, size_t errlen);

#endif
