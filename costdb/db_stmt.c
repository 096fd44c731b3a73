/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cost database's shared internals, part one: error codes and messages,
 * the prepared-statement cache (keyed by the address of each static SQL
 * text), and transactions that nest through savepoints (costdb_begin/commit/
 * rollback for callers, cdb_txn_enter/leave inside the library).
 */
#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"
#include "db_txn_sql.h"
#include "grow.h"

/* ---- errors ------------------------------------------------------------- */

int cdb_map_rc(int sqlite_rc)
{
    switch (sqlite_rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW: return COSTDB_OK;
    case SQLITE_FULL: return COSTDB_EFULL;
    case SQLITE_READONLY: return COSTDB_EREADONLY;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return COSTDB_EBUSY;
    case SQLITE_CONSTRAINT: return COSTDB_ECONSTRAINT;
    case SQLITE_NOTADB: return COSTDB_ENOTDB;
    case SQLITE_CORRUPT: return COSTDB_ECORRUPT;
    case SQLITE_NOMEM: return COSTDB_ENOMEM;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM: return COSTDB_EIO;
    default: return COSTDB_ESQL;
    }
}

int cdb_err(Costdb *db, int code, const char *fmt, ...)
{
    va_list ap;
    assert(db && fmt && code < 0);  /* a failure, said on a handle */
    va_start(ap, fmt);
    vsnprintf(db->errmsg, sizeof db->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

int cdb_fail(Costdb *db, int sqlite_rc, const char *sql)
{
    int code = cdb_map_rc(sqlite_rc);
    assert(db && db->sql);
    if (code == COSTDB_OK)
        code = COSTDB_ESQL;
    if (sql)
        cdb_err(db, code, "%s: %s (in: %.600s)", db->path, sqlite3_errmsg(db->sql), sql);
    else
        cdb_err(db, code, "%s: %s", db->path, sqlite3_errmsg(db->sql));
    return code;
}

const char *costdb_strerror(int err)
{
    switch (err) {
    case COSTDB_OK: return "success";
    case COSTDB_EIO: return "cannot open, read or write the file";
    case COSTDB_ENOTDB: return "not an approf database";
    case COSTDB_ECORRUPT: return "the database is malformed";
    case COSTDB_ETOONEW: return "written by a newer approf";
    case COSTDB_ENOMEM: return "out of memory";
    case COSTDB_EINVAL: return "invalid argument or input";
    case COSTDB_ENOTFOUND: return "no such row";
    case COSTDB_EBUSY: return "the database is locked";
    case COSTDB_ESQL: return "database error";
    case COSTDB_EPARSE: return "malformed input file";
    case COSTDB_EFULL: return "disk or quota full";
    case COSTDB_EREADONLY: return "read-only database";
    case COSTDB_ECONSTRAINT: return "duplicate key or failed check";
    case COSTDB_EUNTRUSTED: return "the database holds objects approf did not create";
    default: return "unknown error";
    }
}

const char *costdb_errmsg(const Costdb *db)
{
    if (!db)
        return "no database";
    return db->errmsg[0] ? db->errmsg : "no error";
}

const char *costdb_path(const Costdb *db)
{
    return db && db->path ? db->path : "";
}

/* ---- statements --------------------------------------------------------- */

int cdb_grow(Costdb *db, void **arr, size_t *cap, size_t need, size_t elem)
{
    if (util_grow(arr, cap, need, elem) < 0)
        return db ? cdb_err(db, COSTDB_ENOMEM, "out of memory") : COSTDB_ENOMEM;
    return 0;
}

int cdb_collect(Costdb *db, sqlite3_stmt *st, const char *sql, size_t elem, CdbRowReader read,
                void **out, size_t *n)
{
    unsigned char *arr = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    assert(db && st && sql && elem > 0 && read && out && n);
    *out = NULL;
    *n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rc = cdb_grow(db, (void **)&arr, &cap, cnt + 1, elem)) < 0)
            goto cleanup;
        memset(arr + cnt * elem, 0, elem);
        if ((rc = cdb_row_check(db, st)) < 0 || (rc = read(db, st, arr + cnt * elem)) < 0)
            goto cleanup;
        cnt++;
    }
    rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql);
cleanup:
    cdb_release(st);
    if (rc < 0) {
        free(arr);
        return rc;
    }
    *out = arr;
    *n = cnt;
    return 0;
}

int cdb_prepare(Costdb *db, const char *sql, sqlite3_stmt **out)
{
    sqlite3_stmt *st = NULL;
    int rc;
    uint32_t *hint;
    assert(db && db->sql && sql && out);
    /* the texts are static and few: a slot by address holds where the
     * text was found last (a writer asks for a few statements per row,
     * alternating; the scan took ~290 instructions a call on the
     * llama-3-8b full sweep; issue 38, wrrows) */
    hint = &db->stmt_hint[((uintptr_t)sql >> 3) % (sizeof db->stmt_hint / sizeof *db->stmt_hint)];
    if (*hint && *hint <= db->n_cache && db->cache[*hint - 1].sql == sql) {
        assert(strcmp(sqlite3_sql(db->cache[*hint - 1].st), sql) == 0);
        *out = db->cache[*hint - 1].st;
        return 0;
    }
    for (size_t i = 0; i < db->n_cache; i++) {
        if (db->cache[i].sql == sql) {
            /* The key is the address of a static text: the same address
             * must still hold the text the statement was prepared from. */
            assert(strcmp(sqlite3_sql(db->cache[i].st), sql) == 0);
            *hint = (uint32_t)(i + 1);
            *out = db->cache[i].st;
            return 0;
        }
    }
    rc = cdb_grow(db, (void **)&db->cache, &db->cap_cache, db->n_cache + 1, sizeof *db->cache);
    if (rc < 0)
        return rc;
    rc = sqlite3_prepare_v3(db->sql, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK)
        return cdb_fail(db, rc, sql);
    db->cache[db->n_cache].sql = sql;
    db->cache[db->n_cache].st = st;
    db->n_cache++;
    *out = st;
    return 0;
}

void cdb_release(sqlite3_stmt *st)
{
    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
}

int cdb_exec_stmt(Costdb *db, sqlite3_stmt *st, const char *sql)
{
    int rc;
    assert(db && st);
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW)
        return 0;
    rc = cdb_fail(db, rc, sql);
    sqlite3_reset(st);
    return rc;
}

int cdb_exec(Costdb *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int rc = cdb_prepare(db, sql, &st);
    if (rc < 0)
        return rc;
    rc = cdb_exec_stmt(db, st, sql);
    cdb_release(st);
    return rc;
}

/* ---- transactions ------------------------------------------------------- */

const char cdb_sql_begin[] = "BEGIN IMMEDIATE";
const char cdb_sql_commit[] = "COMMIT";
const char cdb_sql_rollback[] = "ROLLBACK";
static const char sql_savepoint[] = "SAVEPOINT costdb_unit";
static const char sql_release[] = "RELEASE costdb_unit";
static const char sql_rollback_to[] = "ROLLBACK TO costdb_unit";

int cdb_txn_enter(Costdb *db)
{
    int rc;
    assert(db && db->savepoints >= 0);
    if (db->readonly)
        return cdb_err(db, COSTDB_EREADONLY, "%s: opened read-only", db->path);
    if (db->in_txn || db->savepoints > 0 || !sqlite3_get_autocommit(db->sql)) {
        rc = cdb_exec(db, sql_savepoint);
        if (rc == 0)
            db->savepoints++;
        return rc;
    }
    rc = cdb_exec(db, cdb_sql_begin);
    db->txn_serial++;
    if (rc == 0) {
        db->savepoints++;
        db->own_txn = 1;
    }
    return rc;
}

void cdb_caches_clear(Costdb *db)
{
    cdb_placement_cache_clear(db);
    cdb_cost_cache_clear(db);
    cdb_config_cache_clear(db);
    cdb_placement_dict_clear(db);
}

int cdb_txn_leave(Costdb *db, int rc)
{
    int outer = (db->savepoints == 1 && db->own_txn);
    char keep[sizeof db->errmsg];
    assert(db->savepoints > 0);  /* each leave closes one cdb_txn_enter */
    db->savepoints--;
    if (outer)
        db->own_txn = 0;
    if (rc >= 0) {
        int c = cdb_exec(db, outer ? cdb_sql_commit : sql_release);
        if (c == 0)
            return rc;
        rc = c;
    }
    /* Keep the message of the failure, not of the rollback. */
    memcpy(keep, db->errmsg, sizeof keep);
    cdb_caches_clear(db);
    if (outer) {
        if (!sqlite3_get_autocommit(db->sql))
            cdb_exec(db, cdb_sql_rollback);
    } else if (cdb_exec(db, sql_rollback_to) == 0) {
        cdb_exec(db, sql_release);
    }
    memcpy(db->errmsg, keep, sizeof keep);
    return rc;
}

int costdb_begin(Costdb *db)
{
    int rc;
    if (!db)
        return COSTDB_EINVAL;
    if (db->in_txn || db->savepoints)
        return cdb_err(db, COSTDB_EINVAL, "%s: a transaction is already open", db->path);
    if (db->readonly)
        return cdb_err(db, COSTDB_EREADONLY, "%s: opened read-only", db->path);
    rc = cdb_exec(db, cdb_sql_begin);
    db->txn_serial++;
    if (rc == 0)
        db->in_txn = 1;
    return rc;
}

int costdb_commit(Costdb *db)
{
    int rc;
    if (!db)
        return COSTDB_EINVAL;
    if (!db->in_txn)
        return cdb_err(db, COSTDB_EINVAL, "%s: no transaction is open", db->path);
    rc = cdb_exec(db, cdb_sql_commit);
    if (rc == 0 || sqlite3_get_autocommit(db->sql))
        db->in_txn = 0;
    if (rc != 0)
        cdb_caches_clear(db);
    return rc;
}

int costdb_rollback(Costdb *db)
{
    int rc = 0;
    if (!db)
        return COSTDB_EINVAL;
    if (!sqlite3_get_autocommit(db->sql))
        rc = cdb_exec(db, cdb_sql_rollback);
    db->in_txn = 0;
    cdb_caches_clear(db);
    return rc;
}
