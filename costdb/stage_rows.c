/* SPDX-License-Identifier: Apache-2.0 */
/*
 * costdb_stage_rows (costdb_rows.h): a sweep's stage costs streamed to the
 * solver in primary-key order (no sort), with no per-row allocation and no
 * copy of texts. The SELECT reads only the rows (status 'ok') and columns
 * the stage DP uses; a fast path clears each value with the checks
 * costdb_entries_get's reader applies to it (type, range, status), and a
 * row it does not clear is read again with cdb_row_check and the cdb_col_*
 * readers, whose refusal names the table, the row key and the column, as
 * costdb_entries_get's does.
 */
#include <math.h>
#include <string.h>

#include "costdb_int.h"
#include "costdb_rows.h"

/* Columns: 0-4 the key, 5 compute_cost, 6-9 the sizes, 10 apply_cost,
 * 11 status. The rows whose status is one of the other names, byte for
 * byte, are left out unread (the solver uses none of them); any other
 * status (a name not known, a blob, text with a NUL byte) is read, and
 * refused by the checked path; the names are costdb_status_parse's
 * (sweep.c), and one added there is read and skipped here, only slower.
 * (Comparisons in a chain: a NOT IN list costs a lookup per row.) */
static const char sql_stage_rows[] =
    "SELECT start_layer, end_layer, submesh_index, config_index, phase, compute_cost,"
    " peak_memory, available_memory, intermediate_size, initial_size, apply_cost, status"
    " FROM stage_profile WHERE sweep_id = ?1"
    " AND (status = 'ok' OR status <> 'oom' AND status <> 'failed'"
    " AND status <> 'timeout' AND status <> 'skipped')"
    " ORDER BY start_layer, end_layer, submesh_index, config_index, phase";

/* The fast path reads each value once through sqlite3_column_value (the
 * statement is this thread's alone, as is the handle) and clears it with
 * the rules of cdb_row_check and the cdb_col_* readers, for the declared
 * types of approf's schema (checked once per scan in decls_match). */
static const char *const decl_types[] = {
    "INTEGER", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "REAL",
    "INTEGER", "INTEGER", "INTEGER", "INTEGER", "REAL",    "TEXT",
};
#define N_COLS (int)(sizeof decl_types / sizeof decl_types[0])

static int decls_match(sqlite3_stmt *st)
{
    if (sqlite3_column_count(st) != N_COLS)
        return 0;
    for (int i = 0; i < N_COLS; i++) {
        const char *d = sqlite3_column_decltype(st, i);
        if (!d || strcmp(d, decl_types[i]))
            return 0;
    }
    return 1;
}

static int int_in(sqlite3_stmt *st, int col, int64_t lo, int64_t hi, int64_t *v)
{
    sqlite3_value *x = sqlite3_column_value(st, col);
    if (sqlite3_value_type(x) != SQLITE_INTEGER)
        return 0;
    *v = (int64_t)sqlite3_value_int64(x);
    return *v >= lo && *v <= hi;
}

/* A number of seconds as cdb_col_cost takes it; NULL as -1 when null_ok. */
static int cost_ok(sqlite3_stmt *st, int col, int null_ok, double *v)
{
    sqlite3_value *x = sqlite3_column_value(st, col);
    int t = sqlite3_value_type(x);
    if (t == SQLITE_NULL && null_ok) {
        *v = -1.0;
        return 1;
    }
    if (t != SQLITE_FLOAT && t != SQLITE_INTEGER)
        return 0;
    *v = sqlite3_value_double(x);
    return !isnan(*v) && !(isfinite(*v) && fabs(*v) > COSTDB_MAX_SECONDS);
}

static int fast_row(sqlite3_stmt *st, CostdbStageRow *r)
{
    int64_t v[10];
    sqlite3_value *x;
    const unsigned char *s;
    if (!int_in(st, 0, 0, COSTDB_MAX_LAYERS - 1, &v[0]) ||
        !int_in(st, 1, v[0], COSTDB_MAX_LAYERS - 1, &v[1]) ||
        !int_in(st, 2, 0, COSTDB_MAX_INDEX - 1, &v[2]) ||
        !int_in(st, 3, 0, COSTDB_MAX_INDEX - 1, &v[3]) || !int_in(st, 4, 0, 1, &v[4]) ||
        !cost_ok(st, 5, 0, &r->compute_cost) || !int_in(st, 6, 0, COSTDB_MAX_BYTES, &v[6]) ||
        !int_in(st, 7, 0, COSTDB_MAX_BYTES, &v[7]) || !int_in(st, 8, 0, COSTDB_MAX_BYTES, &v[8]) ||
        !int_in(st, 9, 0, COSTDB_MAX_BYTES, &v[9]) || !cost_ok(st, 10, 1, &r->apply_cost))
        return 0;
    /* status: exactly the text "ok" (two bytes, no NUL) */
    x = sqlite3_column_value(st, 11);
    if (sqlite3_value_type(x) != SQLITE_TEXT || sqlite3_value_bytes(x) != 2 ||
        !(s = sqlite3_value_text(x)) || memcmp(s, "ok", 2))
        return 0;
    r->start_layer = (int)v[0];
    r->end_layer = (int)v[1];
    r->submesh_index = (int)v[2];
    r->config_index = (int)v[3];
    r->phase = v[4] ? COSTDB_BWD : COSTDB_FWD;
    r->peak_memory = v[6];
    r->available_memory = v[7];
    r->intermediate_size = v[8];
    r->initial_size = v[9];
    return 1;
}

/* A row the fast path does not clear: costdb_entries_get's own checks on
 * these columns, which refuse it with their message (or, should the fast
 * path be stricter than they are, read it: 0, or 1 for a row with a known
 * status other than ok, which the solver does not use). */
static int checked_row(Costdb *db, sqlite3_stmt *st, CostdbStageRow *r)
{
    int64_t *sizes[] = {&r->peak_memory, &r->available_memory, &r->intermediate_size,
                        &r->initial_size};
    char status[32];
    CostdbStatus stat;
    int rc, phase = 0;
    if ((rc = cdb_row_check(db, st)) < 0 ||
        (rc = cdb_col_int(db, st, 0, 0, COSTDB_MAX_LAYERS - 1, "(COSTDB_MAX_LAYERS)",
                          &r->start_layer)) < 0 ||
        (rc = cdb_col_int(db, st, 1, r->start_layer, COSTDB_MAX_LAYERS - 1,
                          "(start_layer..COSTDB_MAX_LAYERS)", &r->end_layer)) < 0 ||
        (rc = cdb_col_int(db, st, 2, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &r->submesh_index)) < 0 ||
        (rc = cdb_col_int(db, st, 3, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &r->config_index)) < 0 ||
        (rc = cdb_col_int(db, st, 4, 0, 1, NULL, &phase)) < 0)
        return rc;
    r->phase = phase ? COSTDB_BWD : COSTDB_FWD;
    if ((rc = cdb_column_text(db, st, 11, status, sizeof status, "status")) < 0)
        return rc;
    if (costdb_status_parse(status, &stat) < 0)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: entry with unknown status '%s'", db->path, status);
    if ((rc = cdb_col_cost(db, st, 5, &r->compute_cost)) < 0)
        return rc;
    for (int k = 0; k < 4; k++)
        if ((rc = cdb_col_range(db, st, 6 + k, 0, COSTDB_MAX_BYTES, "(COSTDB_MAX_BYTES)",
                                sizes[k])) < 0)
            return rc;
    switch (sqlite3_column_type(st, 10)) {
    case SQLITE_NULL: r->apply_cost = -1.0; break;
    case SQLITE_FLOAT:
    case SQLITE_INTEGER:
        if ((rc = cdb_col_cost(db, st, 10, &r->apply_cost)) < 0)
            return rc;
        break;
    default:
        return cdb_err(db, COSTDB_ECORRUPT,
                       "%s: entry (%d, %d, %d, %d) has a non-numeric apply_cost", db->path,
                       r->start_layer, r->end_layer, r->submesh_index, r->config_index);
    }
    return stat != COSTDB_STATUS_OK;
}

int costdb_stage_rows(Costdb *db, int64_t sweep_id, CostdbStageRowFn fn, void *ctx)
{
    sqlite3_stmt *st = NULL;
    CostdbStageRow r;
    int rc, fast;
    if (!db || !fn)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_stage_rows, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    fast = decls_match(st);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!(fast && fast_row(st, &r))) {
            memset(&r, 0, sizeof r);
            if ((rc = checked_row(db, st, &r)) < 0)
                goto out;
            if (rc > 0)
                continue; /* a known status other than ok */
        }
        if ((rc = fn(ctx, &r)) != 0)
            goto out;
    }
    rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_stage_rows);
out:
    cdb_release(st);
    return rc;
}
