/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sweep owners (schema 5): which process holds a running sweep, so that a
 * second `approf sweep` on the same database waits, resumes a stale one or
 * refuses (docs/reliability.md). Split from sweep.c.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "costdb_int.h"
#include "costdb_text.h"

/* ---- sweep owners (schema 5) ---------------------------------------------- */

static const char sql_owner_get[] = "SELECT pid, host, since FROM sweep_owner WHERE sweep_id = ?1";
static const char sql_owner_put[] =
    "INSERT OR REPLACE INTO sweep_owner (sweep_id, pid, host, since) VALUES (?1, ?2, ?3, ?4)";
static const char sql_owner_del[] =
    "DELETE FROM sweep_owner WHERE sweep_id = ?1 AND pid = ?2 AND host = ?3";

static int owner_get(Costdb *db, int64_t id, CostdbSweepOwner *o, int *found)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *found = 0;
    if ((rc = cdb_prepare(db, sql_owner_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *found = 1;
        o->pid = sqlite3_column_int64(st, 0);
        if ((rc = cdb_column_text(db, st, 1, o->host, sizeof o->host, "sweep_owner.host")) < 0 ||
            (rc = cdb_column_text(db, st, 2, o->since, sizeof o->since, "sweep_owner.since")) < 0) {
            cdb_release(st);
            return rc;
        }
        rc = 0;
    } else {
        rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_owner_get);
    }
    cdb_release(st);
    return rc;
}

int costdb_sweep_claim(Costdb *db, int64_t id, CostdbSweepOwner *me, CostdbOwnerStale stale,
                       void *ctx, CostdbSweepOwner *holder, int *taken_over)
{
    CostdbSweepOwner cur;
    sqlite3_stmt *st = NULL;
    int rc, found = 0;
    if (taken_over)
        *taken_over = 0;
    if (!db || !me || me->pid <= 0)
        return COSTDB_EINVAL;
    if (db->readonly)
        return cdb_err(db, COSTDB_EREADONLY, "%s: opened read-only", db->path);
    if ((rc = cdb_check_text(db, me->host, sizeof me->host, "host")) < 0)
        return rc;
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    memset(&cur, 0, sizeof cur);
    rc = owner_get(db, id, &cur, &found);
    if (rc == 0 && found && !(cur.pid == me->pid && !strcmp(cur.host, me->host))) {
        if (holder)
            *holder = cur;
        if (!stale || !stale(ctx, &cur))
            rc = cdb_err(db, COSTDB_EBUSY, "%s: sweep %lld is being written by process %lld "
                         "on %s since %s", db->path, (long long)id, (long long)cur.pid,
                         cur.host, cur.since);
        else if (taken_over)
            *taken_over = 1;
    }
    if (rc == 0) {
        costdb_now(me->since, sizeof me->since);
        if ((rc = cdb_prepare(db, sql_owner_put, &st)) == 0) {
            sqlite3_bind_int64(st, 1, id);
            sqlite3_bind_int64(st, 2, me->pid);
            cdb_bind_text(st, 3, me->host, 0);
            cdb_bind_text(st, 4, me->since, 0);
            rc = cdb_exec_stmt(db, st, sql_owner_put);
            cdb_release(st);
        }
    }
    return cdb_txn_leave(db, rc);
}

int costdb_sweep_release(Costdb *db, int64_t id, const CostdbSweepOwner *me)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !me)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_owner_del, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, me->pid);
    cdb_bind_text(st, 3, me->host, 0);
    rc = cdb_exec_stmt(db, st, sql_owner_del);
    cdb_release(st);
    return rc;
}

static const char sql_owner_list[] =
    "SELECT sweep_id, pid, host, since FROM sweep_owner ORDER BY sweep_id";

static int owner_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    CostdbSweepOwner *o = row;
    int rc;
    o->sweep_id = sqlite3_column_int64(st, 0);
    o->pid = sqlite3_column_int64(st, 1);
    if ((rc = cdb_column_text(db, st, 2, o->host, sizeof o->host, "sweep_owner.host")) < 0 ||
        (rc = cdb_column_text(db, st, 3, o->since, sizeof o->since, "sweep_owner.since")) < 0)
        return rc;
    return 0;
}

int costdb_sweep_owners(Costdb *db, CostdbSweepOwner **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_owner_list, &st)) < 0)
        return rc;
    return cdb_collect(db, st, sql_owner_list, sizeof **out, owner_row, (void **)out, n);
}
