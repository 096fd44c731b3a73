/* SPDX-License-Identifier: Apache-2.0 */
/*
 * costdb_entries_get for a sweep whose entries are all in blocks (schema
 * 15, approf's writer; schemas/README.md "stage_profile"): the sweep's cost
 * rows are read once, each through the entry reader's checks
 * (cdb_entry_row), into a table by cost_id; then its blocks in key order,
 * their slots decoded in C rather than by the SQL view stage_entry_slot
 * (both through cost_table.c, the reader costdb_stage_rows shares).
 * Whatever this path does not clear (a cost row the checks refuse, ids too
 * sparse for an array, a slot whose cost_id names no row) sends the caller
 * back to reading through SQL, which refuses it with its message.
 */
#include <stdlib.h>
#include <string.h>

#include "cost_table.h"
#include "costdb_int.h"

/* Columns as costdb_entries_get's SQL for blocks (sweep.c), the key 0;
 * column 24 schema 17's temp_activation_size (NULL before). */
#define SQL_COSTS(act)                                                                     \
    "SELECT 0, 0, 0, 0, 0,"                                                              \
    " c.compute_cost, c.peak_memory, c.invar_size, c.outvar_size, c.temp_buffer_size,"   \
    " coalesce(c.available_memory, m.available_memory), c.intermediate_size,"            \
    " c.initial_size, c.repeats, c.spread, 0, c.status, x.text, c.apply_cost,"           \
    " c.wgrad_cost, c.sweep_id, c.cost_id, c.error_id, c.available_memory, " act         \
    " FROM stage_cost c LEFT JOIN stage_cost_sweep m ON m.sweep_id = ?1"                 \
    " LEFT JOIN stage_error x ON x.id = c.error_id WHERE c.sweep_id = ?1"
static const char sql_costs[] = SQL_COSTS("c.temp_activation_size");
static const char sql_costs_v16[] = SQL_COSTS("NULL");

typedef struct Cost {
    int ok; /* read and cleared */
    CostdbEntry e;
} Cost;

/* A cost row through the entry reader's checks; 1 (the SQL path) when they
 * refuse it. */
static int cost_row(void *ctx, Costdb *db, sqlite3_stmt *st, void *slot)
{
    Cost *c = slot;
    (void)ctx;
    if (cdb_row_check(db, st) < 0 || cdb_entry_row(db, st, &c->e) < 0)
        return 1;
    c->ok = 1;
    return 0;
}

typedef struct Walk {
    Costdb *db;
    const CdbCostTable *costs;
    CostdbEntry *e;
    size_t n, cap;
} Walk;

static int slot_entry(void *ctx, const CdbBlock *b, int k, uint32_t v)
{
    Walk *w = ctx;
    const Cost *c = cdb_cost_table_at(w->costs, v >> 1);
    if (!c || !c->ok)
        return 1; /* names no cost row: the SQL path says so */
    if (w->n == w->cap) {
        size_t ncap = w->cap ? w->cap * 2 : 1024;
        CostdbEntry *ng = realloc(w->e, ncap * sizeof *w->e);
        if (!ng)
            return cdb_err(w->db, COSTDB_ENOMEM, "%s: out of memory reading entries",
                           w->db->path);
        w->e = ng;
        w->cap = ncap;
    }
    CostdbEntry *e = &w->e[w->n++];
    *e = c->e;
    e->start_layer = b->start_layer;
    e->end_layer = b->end_layer;
    e->submesh_index = b->submesh_index;
    e->config_index = b->config_block * CDB_BLOCK_CONFIGS + k / 2;
    e->phase = k % 2 ? COSTDB_BWD : COSTDB_FWD;
    e->reused = (int)(v & 1);
    return 0;
}

int cdb_entries_get_blocks(Costdb *db, int64_t sweep_id, CostdbEntry **out, size_t *n)
{
    CdbCostTable costs;
    Walk w = {db, &costs, NULL, 0, 0};
    int rc;
    *out = NULL;
    *n = 0;
    if ((rc = cdb_cost_table_read(db, sweep_id, db->version >= 17 ? sql_costs : sql_costs_v16,
                                  21, CDB_BLOCK_MAX_COST_ID,
                                  sizeof(Cost), cost_row, NULL, &costs)) != 0)
        return rc;
    rc = cdb_entry_blocks_walk(db, sweep_id, slot_entry, &w);
    cdb_cost_table_free(&costs);
    if (rc != 0) {
        free(w.e);
        return rc;
    }
    *out = w.e;
    *n = w.n;
    return 0;
}
