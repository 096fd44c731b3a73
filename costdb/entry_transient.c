/* SPDX-License-Identifier: Apache-2.0 */
/*
 * costdb_entry_transient (costdb_rows.h): the memory figures of one
 * entry's two phases that apsolve's cp step divides by cp, read from
 * stage_cost by the entry's cost_id (schema 8 and later; the view
 * stage_profile does not carry schema 17's temp_activation_size), and
 * those of every entry of a sweep in one pass (costdb_entry_transients).
 */
#include <stdint.h>
#include <string.h>

#include "cost_table.h"
#include "costdb_int.h"
#include "costdb_rows.h"

#define SQL_TRANSIENT(act)                                                                   \
    "SELECT e.phase, c.peak_memory, c.temp_buffer_size, " act ", c.cost_id"                 \
    " FROM stage_entry e JOIN stage_cost c ON c.sweep_id = e.sweep_id AND c.cost_id ="     \
    " e.cost_id WHERE e.sweep_id = ?1 AND e.submesh_index = ?2 AND e.start_layer = ?3"     \
    " AND e.end_layer = ?4 AND e.config_index = ?5"
static const char sql_transient[] = SQL_TRANSIENT("c.temp_activation_size");
/* a file opened read-only before schema 17: no activation-sized part known */
static const char sql_transient_v16[] = SQL_TRANSIENT("NULL");

static int int_col(sqlite3_stmt *st, int col, int null_ok, int64_t *v)
{
    int t = sqlite3_column_type(st, col);
    if (t == SQLITE_NULL && null_ok) {
        *v = 0;
        return 1;
    }
    *v = sqlite3_column_int64(st, col);
    return t == SQLITE_INTEGER && *v >= 0;
}

int costdb_entry_transient(Costdb *db, int64_t sweep_id, int start, int end, int submesh,
                           int config, CostdbPhaseTransient out[2])
{
    sqlite3_stmt *st = NULL;
    const char *sql = db->version >= 17 ? sql_transient : sql_transient_v16;
    int rc, seen = 0;
    memset(out, 0, 2 * sizeof *out);
    if (db->version < 8)
        return 1; /* no stage_cost: nothing known */
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 2, submesh);
    sqlite3_bind_int(st, 3, start);
    sqlite3_bind_int(st, 4, end);
    sqlite3_bind_int(st, 5, config);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t ph = sqlite3_column_int64(st, 0), f[3];
        if (sqlite3_column_type(st, 0) != SQLITE_INTEGER || ph < 0 || ph > 1)
            continue; /* no phase of this reader's */
        if (!int_col(st, 1, 0, &f[0]) || !int_col(st, 2, 0, &f[1]) ||
            !int_col(st, 3, 1, &f[2]) || f[2] > f[1]) {
            rc = cdb_err(db, COSTDB_ECORRUPT, "%s: table stage_cost, row (sweep_id=%lld, "
                         "cost_id=%lld): peak_memory, temp_buffer_size and "
                         "temp_activation_size are not sizes of one phase (integers >= 0, "
                         "temp_activation_size NULL or at most temp_buffer_size)",
                         db->path, (long long)sweep_id, (long long)sqlite3_column_int64(st, 4));
            cdb_release(st);
            return rc;
        }
        out[ph] = (CostdbPhaseTransient){f[0], f[1], f[2]};
        seen |= 1 << ph;
    }
    rc = rc == SQLITE_DONE ? (seen == 3 ? 0 : 1) : cdb_fail(db, rc, sql);
    cdb_release(st);
    if (rc)
        memset(out, 0, 2 * sizeof *out);
    return rc;
}

#define SQL_TRANSIENTS                                                                       \
    "SELECT e.start_layer, e.end_layer, e.submesh_index, e.config_index, e.phase,"          \
    " c.peak_memory, c.temp_buffer_size, c.temp_activation_size, c.cost_id"                 \
    " FROM stage_entry e JOIN stage_cost c ON c.sweep_id = e.sweep_id AND c.cost_id ="     \
    " e.cost_id WHERE e.sweep_id = ?1"
static const char sql_transients[] = SQL_TRANSIENTS;
/* The blocks' path: the cost rows by id (cost_table.c), columns as above
 * from 5, the id 8 */
static const char sql_transient_costs[] =
    "SELECT 0, 0, 0, 0, 0, peak_memory, temp_buffer_size, temp_activation_size, cost_id"
    " FROM stage_cost WHERE sweep_id = ?1";

/* A row's sizes (columns 5-7): 0, or the refusal naming it. */
static int sizes_of(Costdb *db, int64_t sweep_id, sqlite3_stmt *st, CostdbPhaseTransient *t)
{
    int64_t f[3];
    if (!int_col(st, 5, 0, &f[0]) || !int_col(st, 6, 0, &f[1]) || !int_col(st, 7, 1, &f[2]) ||
        f[2] > f[1])
        return cdb_err(db, COSTDB_ECORRUPT, "%s: table stage_cost, row (sweep_id=%lld, "
                       "cost_id=%lld): peak_memory, temp_buffer_size and "
                       "temp_activation_size are not sizes of one phase (integers >= 0, "
                       "temp_activation_size NULL or at most temp_buffer_size)",
                       db->path, (long long)sweep_id, (long long)sqlite3_column_int64(st, 8));
    *t = (CostdbPhaseTransient){f[0], f[1], f[2]};
    return 0;
}

typedef struct Cost {
    int ok;
    CostdbPhaseTransient t;
} Cost;

static int cost_row(void *ctx, Costdb *db, sqlite3_stmt *st, void *slot)
{
    Cost *c = slot;
    int rc = sizes_of(db, *(const int64_t *)ctx, st, &c->t);
    c->ok = rc == 0;
    return rc;
}

typedef struct Walk {
    const CdbCostTable *costs;
    CostdbTransientFn fn;
    void *ctx;
} Walk;

static int slot_row(void *ctx, const CdbBlock *b, int k, uint32_t v)
{
    Walk *w = ctx;
    const Cost *c = cdb_cost_table_at(w->costs, v >> 1);
    if (!c || !c->ok)
        return 0; /* names no cost row: no entry of the solver's (its load refuses it) */
    return w->fn(w->ctx, b->start_layer, b->end_layer, b->submesh_index,
                 b->config_block * CDB_BLOCK_CONFIGS + k / 2, k % 2, &c->t);
}

int costdb_entry_transients(Costdb *db, int64_t sweep_id, CostdbTransientFn fn, void *ctx)
{
    sqlite3_stmt *st = NULL;
    int rc, stop = 0;
    if (!db || !fn)
        return COSTDB_EINVAL;
    if (db->version < 17)
        return 0; /* no activation-sized part known */
    /* entries all in blocks (approf's writer): the cost rows once, then
     * the blocks decoded in C, as costdb_stage_rows reads them */
    if ((rc = cdb_entry_rows_any(db, sweep_id)) == 0) {
        CdbCostTable costs;
        rc = cdb_cost_table_read(db, sweep_id, sql_transient_costs, 8, CDB_BLOCK_MAX_COST_ID,
                                 sizeof(Cost), cost_row, &sweep_id, &costs);
        if (rc == 0) {
            Walk w = {&costs, fn, ctx};
            rc = cdb_entry_blocks_walk(db, sweep_id, slot_row, &w);
            cdb_cost_table_free(&costs);
            return rc;
        }
        if (rc < 0)
            return rc;
    } else if (rc < 0) {
        return rc;
    }
    if ((rc = cdb_prepare(db, sql_transients, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t key[5];
        CostdbPhaseTransient t;
        int ok = 1;
        for (int k = 0; k < 5; k++)
            ok &= int_col(st, k, 0, &key[k]) && key[k] <= INT32_MAX;
        if (!ok || key[4] > 1)
            continue; /* no entry of the solver's (its readers refuse it) */
        if ((rc = sizes_of(db, sweep_id, st, &t)) < 0 ||
            (rc = fn(ctx, (int)key[0], (int)key[1], (int)key[2], (int)key[3], (int)key[4], &t))) {
            stop = 1;
            break;
        }
    }
    if (!stop)
        rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_transients);
    cdb_release(st);
    return rc;
}
