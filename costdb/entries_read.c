/* SPDX-License-Identifier: Apache-2.0 */
/*
 * costdb_entries_get for a sweep whose entries are all in blocks (schema
 * 15, approf's writer; schemas/README.md "stage_profile"): the sweep's cost
 * rows are read once, each through the entry reader's checks
 * (cdb_entry_row), into an array by cost_id; then its blocks in key order,
 * their slots decoded here rather than by the SQL view stage_entry_slot.
 * Whatever this path does not clear (a cost row the checks refuse, ids too
 * sparse for an array, a slot whose cost_id names no row) sends the caller
 * back to reading through SQL, which refuses it with its message.
 */
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"
#include "entry_blocks.h"
#include "grow.h"

/* Columns as costdb_entries_get's SQL for blocks (sweep.c), the key 0. */
static const char sql_costs[] =
    "SELECT 0, 0, 0, 0, 0,"
    " c.compute_cost, c.peak_memory, c.invar_size, c.outvar_size, c.temp_buffer_size,"
    " coalesce(c.available_memory, m.available_memory), c.intermediate_size, c.initial_size,"
    " c.repeats, c.spread, 0, c.status, x.text, c.apply_cost, c.wgrad_cost,"
    " c.sweep_id, c.cost_id, c.error_id, c.available_memory"
    " FROM stage_cost c LEFT JOIN stage_cost_sweep m ON m.sweep_id = ?1"
    " LEFT JOIN stage_error x ON x.id = c.error_id WHERE c.sweep_id = ?1";
static const char sql_blocks[] =
    "SELECT sweep_id, submesh_index, start_layer, end_layer, config_block, costs"
    " FROM stage_entry_block WHERE sweep_id = ?1"
    " ORDER BY submesh_index DESC, start_layer, end_layer, config_block";

typedef struct Cost {
    int ok; /* read and cleared */
    CostdbEntry e;
} Cost;

/* 0 with the table, 1: take the SQL path, or a database error. */
static int read_costs(Costdb *db, int64_t sweep_id, Cost **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    size_t read = 0;
    int rc;
    *out = NULL;
    *n = 0;
    if ((rc = cdb_prepare(db, sql_costs, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_value *x = sqlite3_column_value(st, 21);
        int64_t id = sqlite3_value_int64(x);
        CostdbEntry e;
        read++;
        memset(&e, 0, sizeof e);
        if (sqlite3_value_type(x) != SQLITE_INTEGER || id < 1 || id > CDB_BLOCK_MAX_COST_ID ||
            (size_t)id > 16 * read + 1024 || cdb_row_check(db, st) < 0 ||
            cdb_entry_row(db, st, &e) < 0) {
            rc = 1;
            goto out;
        }
        if (util_grow_zero((void **)out, n, (size_t)id + 1, sizeof **out) < 0) {
            rc = cdb_err(db, COSTDB_ENOMEM, "%s: out of memory reading stage costs", db->path);
            goto out;
        }
        (*out)[id].ok = 1;
        (*out)[id].e = e;
    }
    rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_costs);
out:
    cdb_release(st);
    if (rc != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

int cdb_entries_get_blocks(Costdb *db, int64_t sweep_id, CostdbEntry **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    Cost *cost = NULL;
    CostdbEntry *e = NULL;
    size_t ncost = 0, ne = 0, cap = 0;
    CdbBlock b;
    int rc;
    *out = NULL;
    *n = 0;
    if ((rc = read_costs(db, sweep_id, &cost, &ncost)) != 0)
        return rc;
    if ((rc = cdb_prepare(db, sql_blocks, &st)) < 0)
        goto out;
    sqlite3_bind_int64(st, 1, sweep_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rc = cdb_block_row(db, st, 0, &b)) < 0)
            goto out;
        for (int k = 0; k < b.nslots; k++) {
            uint32_t v = cdb_block_slot(&b, k);
            uint32_t id = v >> 1;
            if (!v)
                continue;
            if (id >= ncost || !cost[id].ok) {
                rc = 1; /* names no cost row: the SQL path says so */
                goto out;
            }
            if (ne == cap) {
                size_t ncap = cap ? cap * 2 : 1024;
                CostdbEntry *ng = realloc(e, ncap * sizeof *e);
                if (!ng) {
                    rc = cdb_err(db, COSTDB_ENOMEM, "%s: out of memory reading entries",
                                 db->path);
                    goto out;
                }
                e = ng;
                cap = ncap;
            }
            e[ne] = cost[id].e;
            e[ne].start_layer = b.start_layer;
            e[ne].end_layer = b.end_layer;
            e[ne].submesh_index = b.submesh_index;
            e[ne].config_index = b.config_block * CDB_BLOCK_CONFIGS + k / 2;
            e[ne].phase = k % 2 ? COSTDB_BWD : COSTDB_FWD;
            e[ne].reused = (int)(v & 1);
            ne++;
        }
    }
    rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_blocks);
out:
    cdb_release(st);
    free(cost);
    if (rc != 0) {
        free(e);
        return rc;
    }
    *out = e;
    *n = ne;
    return 0;
}
