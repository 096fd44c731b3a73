/* SPDX-License-Identifier: Apache-2.0 */
/*
 * costdb_entries_delete (entry_delete.h): the entry rows by key, then the
 * cost rows left without an entry (schema 8 stores each distinct cost once
 * and entries name it by id); the connection's cache of written cost rows
 * forgets the sweep, since some of the ids it holds are gone.
 */
#include <sqlite3.h>

#include "costdb_int.h"
#include "entry_delete.h"

static const char sql_entry_delete[] =
    "DELETE FROM stage_entry WHERE sweep_id = ?1 AND start_layer = ?2 AND end_layer = ?3"
    " AND submesh_index = ?4 AND config_index = ?5";
static const char sql_cost_orphans[] =
    "DELETE FROM stage_cost WHERE sweep_id = ?1 AND cost_id NOT IN"
    " (SELECT cost_id FROM stage_entry WHERE sweep_id = ?1)";

int costdb_entries_delete(Costdb *db, int64_t sweep_id, const CostdbEntryKey *keys, size_t n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || (n && !keys))
        return COSTDB_EINVAL;
    if (n == 0)
        return 0;
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    if ((rc = cdb_prepare(db, sql_entry_delete, &st)) == 0) {
        for (size_t k = 0; k < n && rc == 0; k++) {
            sqlite3_bind_int64(st, 1, sweep_id);
            sqlite3_bind_int(st, 2, keys[k].start_layer);
            sqlite3_bind_int(st, 3, keys[k].end_layer);
            sqlite3_bind_int(st, 4, keys[k].submesh_index);
            sqlite3_bind_int(st, 5, keys[k].config_index);
            rc = cdb_exec_stmt(db, st, sql_entry_delete);
            sqlite3_reset(st);
        }
        cdb_release(st);
    }
    if (rc == 0 && (rc = cdb_prepare(db, sql_cost_orphans, &st)) == 0) {
        sqlite3_bind_int64(st, 1, sweep_id);
        rc = cdb_exec_stmt(db, st, sql_cost_orphans);
        cdb_release(st);
    }
    cdb_cost_cache_clear(db);
    return cdb_txn_leave(db, rc);
}
