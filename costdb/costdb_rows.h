/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sweep's stage costs for the solver, streamed: only the rows and fields
 * the stage DP reads (the entries whose status is 'ok', and those judged
 * out of memory, 'oom', which the cp and ep steps read: a failed,
 * timed-out or skipped phase is no stage), one row at a time, with no copy
 * of the entries' texts and no array of CostdbEntry. Every value it reads is
 * checked as costdb_entries_get checks it (the same refusals and messages),
 * an unknown status included; the other columns (repeats, spread, reused,
 * error, invar/outvar/temp sizes) and the other fields of rows with another
 * known status are left to the readers that use them.
 */
#ifndef COSTDB_ROWS_H
#define COSTDB_ROWS_H

#include <stdint.h>

#include "costdb.h"

typedef struct CostdbStageRow {
    int start_layer, end_layer;       /* inclusive layer range i..j */
    int submesh_index, config_index;
    CostdbPhase phase;
    double compute_cost;              /* seconds, as stored (may be inf or < 0) */
    double apply_cost;                /* < 0: unknown (NULL) */
    double wgrad_cost;                /* the backward's W seconds (schema 12); < 0: unknown */
    /* a row with status 'oom': compute_cost +inf, and here the seconds the
     * sweep computed for it (CostdbEntry.unfit_cost; <= 0 unknown); 0 for
     * 'ok' rows */
    double unfit_cost;
    int64_t peak_memory, available_memory, intermediate_size, initial_size;
} CostdbStageRow;

/* Called for each row; a non-zero return stops the scan and is returned. */
typedef int (*CostdbStageRowFn)(void *ctx, const CostdbStageRow *row);

/* Calls fn for every stage_profile row of the sweep whose status is 'ok'
 * or 'oom' (an oom row's cost +inf, its computed time in unfit_cost),
 * in stage_entry's primary-key order (schema 8: submesh_index descending,
 * start_layer, end_layer, config_index, phase): the two phases of one
 * (i, j, s, c) come one after the other.
 * Returns 0, fn's non-zero return, or a negative COSTDB_E* code: a row it
 * reads that costdb_entries_get would refuse, with the same message, a
 * status that is not a known name included. */
int costdb_stage_rows(Costdb *db, int64_t sweep_id, CostdbStageRowFn fn, void *ctx);

/* One phase's figures (a CostdbStageRow's, without its key). cost_id:
 * costdb_stage_pairs's figures of the sweep's stage_cost row with that id,
 * as read once per walk (every entry that names the row gets the same
 * figures, with the same cost_id); 0 for figures read otherwise. */
typedef struct CostdbStageCost {
    double compute_cost, apply_cost, wgrad_cost, unfit_cost;
    int64_t peak_memory, available_memory, intermediate_size, initial_size;
    uint32_t cost_id;
} CostdbStageCost;

/* An entry's key: layers start..end, submesh, config. */
typedef struct CostdbStageKey {
    int start_layer, end_layer, submesh_index, config_index;
} CostdbStageKey;

/* Called for each entry with both phases: fwd the forward's figures, bwd
 * the backward's; non-zero stops the scan. */
typedef int (*CostdbStagePairFn)(void *ctx, const CostdbStageKey *key, const CostdbStageCost *fwd,
                                 const CostdbStageCost *bwd);

/* costdb_stage_rows's rows two at a time: fn for every (i, j, s, c) whose
 * forward and backward rows it hands over, in its order; a phase handed
 * over without the other (missing, or another status) is dropped. The
 * same rows read and checked, the same refusals, in the same order (an
 * entry of stage_entry_block goes from its block's two slots to fn, the
 * figures of its cost rows as read once per sweep, with no row built). */
int costdb_stage_pairs(Costdb *db, int64_t sweep_id, CostdbStagePairFn fn, void *ctx);

/* Called for a run of entries of one range and submesh: configs
 * first->config_index .. + n - 1 in order (n >= 1), fwd[k] and bwd[k] the
 * two phases' figures of config first->config_index + k where it has both,
 * both NULL where it has not (the pointers good during the call only);
 * non-zero stops the scan. */
typedef int (*CostdbStageRunFn)(void *ctx, const CostdbStageKey *first, int n,
                                const CostdbStageCost *const *fwd,
                                const CostdbStageCost *const *bwd);

/* costdb_stage_pairs's entries, the same read, checks and refusals, handed
 * over in runs: an entry block's configs in one call (the 126-layer 405B
 * file: 96,013 calls for 2,976,380 entries; docs/performance.md "apsolve's
 * load by runs of a block's configs"), a row of stage_entry_row (or of a
 * file before schema 14) in a run of one. A block with a slot refused hands
 * over the run of the configs before it, then the refusal. */
int costdb_stage_pair_runs(Costdb *db, int64_t sweep_id, CostdbStageRunFn fn, void *ctx);

/* One phase's transient memory (costdb_entry_transient): its peak and
 * temp_buffer_size, and the part of the latter that scales with the
 * tokens the GPU holds (schema 17's temp_activation_size; 0: NULL, none
 * known, as in every file before schema 17). */
typedef struct CostdbPhaseTransient {
    int64_t peak, temp, temp_activation;
} CostdbPhaseTransient;

/* The two phases (out[0] forward, out[1] backward) of entry (start..end,
 * submesh, config) of the sweep, whatever their status. 0; 1 when the
 * entry lacks a phase (out zeroed); a negative COSTDB_E* code, with a
 * message naming the row, for a value that is not a size. */
int costdb_entry_transient(Costdb *db, int64_t sweep_id, int start, int end, int submesh,
                           int config, CostdbPhaseTransient out[2]);

/* Calls fn for every phase of every entry of the sweep (any order) with
 * its transient figures; nothing for a file before schema 17 (no
 * activation-sized part known). 0, fn's non-zero return, or a negative
 * COSTDB_E* code (a value that is not a size, naming the row). */
typedef int (*CostdbTransientFn)(void *ctx, int start, int end, int submesh, int config,
                                 int phase, const CostdbPhaseTransient *t);
int costdb_entry_transients(Costdb *db, int64_t sweep_id, CostdbTransientFn fn, void *ctx);

#endif
