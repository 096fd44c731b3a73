/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Taking entries out of a sweep (the sweep's dominated variants,
 * profiler/sweep/sweep_dominated.c; docs/variants.md, "Dominated variants").
 */
#ifndef COSTDB_ENTRY_DELETE_H
#define COSTDB_ENTRY_DELETE_H

#include <stddef.h>
#include <stdint.h>

#include "costdb.h"

/* One (i, j, s, c) of a sweep: both phases of its entry. */
typedef struct CostdbEntryKey {
    int start_layer, end_layer, submesh_index, config_index;
} CostdbEntryKey;

/* Deletes both phases of the entries keys[0..n) of the sweep (a key
 * without entries is no error) and the cost rows no entry of the sweep
 * names any more, in one transaction. Placements and configs stay.
 * 0 or a negative COSTDB_E* code (nothing deleted). */
int costdb_entries_delete(Costdb *db, int64_t sweep_id, const CostdbEntryKey *keys, size_t n);

#endif
