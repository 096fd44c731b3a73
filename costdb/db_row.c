/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cost database's shared internals, part two: checked binding (text
 * fields NUL-terminated within their buffers, no NaN, seconds within
 * COSTDB_MAX_SECONDS) and checked reading (every selected column against its
 * declared type, ranges), whose refusals name the table, row key and column.
 */
#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"

/* ---- entries ------------------------------------------------------------ */

void costdb_entry_copy(CostdbEntry *dst, const CostdbEntry *e)
{
    const size_t head = offsetof(CostdbEntry, error), tail = head + sizeof e->error;
    size_t len = strnlen(e->error, sizeof e->error);
    memcpy(dst, e, head);
    memcpy(dst->error, e->error, len < sizeof e->error ? len + 1 : len);
    memcpy((char *)dst + tail, (const char *)e + tail, sizeof *e - tail);
}

/* ---- checked binding ---------------------------------------------------- */

int cdb_check_text(Costdb *db, const char *s, size_t cap, const char *field)
{
    assert(db && cap > 0 && field);
    if (!s)
        return cdb_err(db, COSTDB_EINVAL, "%s: field '%s' is NULL", db->path, field);
    if (strnlen(s, cap) >= cap)
        return cdb_err(db, COSTDB_EINVAL, "%s: field '%s' is not NUL-terminated within %zu bytes",
                       db->path, field, cap);
    return 0;
}

int cdb_check_double(Costdb *db, double v, const char *field)
{
    if (isnan(v))
        return cdb_err(db, COSTDB_EINVAL, "%s: field '%s' is NaN", db->path, field);
    return 0;
}

int cdb_check_seconds(Costdb *db, double v, const char *field)
{
    if (isfinite(v) && fabs(v) > COSTDB_MAX_SECONDS)
        return cdb_err(db, COSTDB_EINVAL,
                       "%s: field '%s' = %g s is past %g s (COSTDB_MAX_SECONDS): a sum of such"
                       " costs is not exact", db->path, field, v, COSTDB_MAX_SECONDS);
    return 0;
}

void cdb_bind_text(sqlite3_stmt *st, int idx, const char *s, int null_if_empty)
{
    assert(st && idx >= 1 && idx <= sqlite3_bind_parameter_count(st));
    if (!s || (null_if_empty && !*s))
        sqlite3_bind_null(st, idx);
    else
        sqlite3_bind_text(st, idx, s, -1, SQLITE_STATIC);
}

void cdb_bind_int_or_null(sqlite3_stmt *st, int idx, int64_t v, int64_t null_value)
{
    assert(st && idx >= 1 && idx <= sqlite3_bind_parameter_count(st));
    if (v == null_value)
        sqlite3_bind_null(st, idx);
    else
        sqlite3_bind_int64(st, idx, (sqlite3_int64)v);
}

int cdb_column_text(Costdb *db, sqlite3_stmt *st, int col, char *dst, size_t cap,
                    const char *field)
{
    const unsigned char *t;
    size_t n;
    /* the column is one the reader's own SELECT names */
    assert(db && st && dst && cap > 0 && field && col >= 0 && col < sqlite3_column_count(st));
    t = sqlite3_column_text(st, col);
    n = t ? (size_t)sqlite3_column_bytes(st, col) : 0;
    if (n >= cap) {
        dst[0] = '\0';
        return cdb_err(db, COSTDB_EINVAL, "%s: stored '%s' is %zu bytes, longer than %zu",
                       db->path, field, n, cap - 1);
    }
    if (n)
        memcpy(dst, t, n);
    dst[n] = '\0';
    return 0;
}

int64_t cdb_column_int_or(sqlite3_stmt *st, int col, int64_t null_value)
{
    assert(st && col >= 0 && col < sqlite3_column_count(st));
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return null_value;
    return (int64_t)sqlite3_column_int64(st, col);
}

double cdb_column_double(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return 0.0;
    return sqlite3_column_double(st, col);
}


/* ---- checked reading ---------------------------------------------------- */

#if COSTDB_COLUMN_METADATA
/* Appends "k1=v1, k2=v2" to buf: the primary-key columns of table that the
 * statement selected; the number appended. */
static int table_key(sqlite3_stmt *pk, sqlite3_stmt *st, const char *table, char *buf,
                     size_t cap)
{
    int nkey = 0;
    for (int i = 0; i < sqlite3_column_count(st); i++) {
        const char *t = sqlite3_column_table_name(st, i);
        const char *name = sqlite3_column_origin_name(st, i);
        const unsigned char *val;
        size_t len;
        if (!t || !name || strcmp(t, table))
            continue;
        sqlite3_reset(pk);
        sqlite3_bind_text(pk, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(pk, 2, name, -1, SQLITE_STATIC);
        if (sqlite3_step(pk) != SQLITE_ROW || sqlite3_column_int(pk, 0) == 0)
            continue;
        val = sqlite3_column_text(st, i);
        len = strlen(buf);
        snprintf(buf + len, cap - len, "%s%s=%.40s", nkey++ ? ", " : "", name,
                 val ? (const char *)val : "NULL");
    }
    return nkey;
}
#endif

#if COSTDB_COLUMN_METADATA
/* Schema 14: the view stage_entry holds an entry as a row of
 * stage_entry_row or a slot of a block in stage_entry_block; SQLite names
 * either as the origin of its columns. A message names the view and the
 * entry's key columns by name. */
static int is_entry_table(const char *table)
{
    return !strcmp(table, "stage_entry_row") || !strcmp(table, "stage_entry_block");
}

static void entry_key(sqlite3_stmt *st, char *buf, size_t cap)
{
    static const char *const key[] = {"sweep_id", "start_layer", "end_layer",
                                      "submesh_index", "config_index", "phase"};
    int nkey = 0;
    for (size_t k = 0; k < sizeof key / sizeof key[0]; k++)
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char *name = sqlite3_column_name(st, i);
            const unsigned char *val;
            size_t len;
            if (!name || strcmp(name, key[k]))
                continue;
            val = sqlite3_column_text(st, i);
            len = strlen(buf);
            snprintf(buf + len, cap - len, "%s%s=%.40s", nkey++ ? ", " : "", name,
                     val ? (const char *)val : "NULL");
            break;
        }
}
#endif

/* "table T, row (k1=v1, k2=v2)": the primary-key columns of col's table that
 * the statement selected, so a refusal names the row. A column read through
 * a join (schema 8's stage_profile view: an entry's key in stage_entry, its
 * costs in stage_cost) is named by the row of the statement's first table:
 * "table stage_entry, row (...), its row in table stage_cost". Error path
 * only. */
static void row_key(Costdb *db, sqlite3_stmt *st, int col, char *buf, size_t cap)
{
#if COSTDB_COLUMN_METADATA
    static const char sql_pk[] = "SELECT pk FROM pragma_table_info(?1) WHERE name = ?2";
    const char *table = sqlite3_column_table_name(st, col);
    const char *first = sqlite3_column_table_name(st, 0);
    sqlite3_stmt *pk = NULL;
    size_t len;
    if (!table || sqlite3_prepare_v2(db->sql, sql_pk, -1, &pk, NULL) != SQLITE_OK) {
        snprintf(buf, cap, "a row");
        return;
    }
    if (first && is_entry_table(first)) {
        snprintf(buf, cap, "table stage_entry, row (");
        entry_key(st, buf, cap);
        len = strlen(buf);
        if (is_entry_table(table))
            snprintf(buf + len, cap - len, ")");
        else
            snprintf(buf + len, cap - len, "), its row in table %s", table);
    } else if (first && strcmp(first, table)) {
        snprintf(buf, cap, "table %s, row (", first);
        table_key(pk, st, first, buf, cap);
        len = strlen(buf);
        snprintf(buf + len, cap - len, "), its row in table %s", table);
    } else {
        snprintf(buf, cap, "table %s, row (", table);
        table_key(pk, st, table, buf, cap);
        len = strlen(buf);
        snprintf(buf + len, cap - len, ")");
    }
    sqlite3_finalize(pk);
#else
    (void)db;
    (void)st;
    (void)col;
    snprintf(buf, cap, "a row");
#endif
}

static const char *col_name(sqlite3_stmt *st, int col)
{
#if COSTDB_COLUMN_METADATA
    const char *n = sqlite3_column_origin_name(st, col);
    if (n)
        return n;
#endif
    return sqlite3_column_name(st, col);
}

static const char *type_name(int t)
{
    switch (t) {
    case SQLITE_INTEGER: return "an integer";
    case SQLITE_FLOAT: return "a real";
    case SQLITE_TEXT: return "text";
    case SQLITE_BLOB: return "a blob";
    default: return "NULL";
    }
}

int cdb_row_check(Costdb *db, sqlite3_stmt *st)
{
    assert(db && st);
    for (int i = 0; i < sqlite3_column_count(st); i++) {
        const char *decl = sqlite3_column_decltype(st, i);
        int t = sqlite3_column_type(st, i), ok;
        char key[512];
        if (!decl || t == SQLITE_NULL)
            continue;  /* an expression, or NULL: the reader decides */
        if (!strcmp(decl, "INTEGER"))
            ok = t == SQLITE_INTEGER;
        else if (!strcmp(decl, "REAL"))
            ok = t == SQLITE_FLOAT || t == SQLITE_INTEGER;
        else if (!strcmp(decl, "TEXT"))
            ok = t == SQLITE_TEXT &&
                 strlen((const char *)sqlite3_column_text(st, i)) ==
                     (size_t)sqlite3_column_bytes(st, i);
        else
            continue;
        if (ok)
            continue;
        row_key(db, st, i, key, sizeof key);
        if (t == SQLITE_TEXT)
            return cdb_err(db, COSTDB_ECORRUPT,
                           "%s: %s: column %s holds text '%.40s'%s, not %s %s value", db->path, key,
                           col_name(st, i), (const char *)sqlite3_column_text(st, i),
                           !strcmp(decl, "TEXT") ? " with a NUL byte" : "",
                           !strcmp(decl, "INTEGER") ? "an" : "a", decl);
        return cdb_err(db, COSTDB_ECORRUPT, "%s: %s: column %s holds %s, not %s %s value",
                       db->path, key, col_name(st, i), type_name(t),
                       !strcmp(decl, "INTEGER") ? "an" : "a", decl);
    }
    return 0;
}

int cdb_col_range(Costdb *db, sqlite3_stmt *st, int col, int64_t lo, int64_t hi,
                  const char *limit, int64_t *out)
{
    int64_t v;
    char key[512];
    assert(db && st && out && lo <= hi && col >= 0 && col < sqlite3_column_count(st));
    v = (int64_t)sqlite3_column_int64(st, col);
    if (sqlite3_column_type(st, col) == SQLITE_INTEGER && v >= lo && v <= hi) {
        *out = v;
        return 0;
    }
    *out = 0;
    row_key(db, st, col, key, sizeof key);
    if (sqlite3_column_type(st, col) != SQLITE_INTEGER)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: %s: column %s holds %s, not an integer",
                       db->path, key, col_name(st, col),
                       type_name(sqlite3_column_type(st, col)));
    return cdb_err(db, COSTDB_ECORRUPT, "%s: %s: column %s = %lld is outside %lld..%lld%s%s",
                   db->path, key, col_name(st, col), (long long)v, (long long)lo, (long long)hi,
                   limit ? " " : "", limit ? limit : "");
}

int cdb_col_int(Costdb *db, sqlite3_stmt *st, int col, int lo, int hi, const char *limit, int *out)
{
    int64_t v = 0;
    int rc = cdb_col_range(db, st, col, lo, hi, limit, &v);
    *out = (int)v;
    return rc;
}

int cdb_col_cost(Costdb *db, sqlite3_stmt *st, int col, double *out)
{
    int t = sqlite3_column_type(st, col);
    double v = sqlite3_column_double(st, col);
    char key[512];
    *out = 0.0;
    if ((t == SQLITE_FLOAT || t == SQLITE_INTEGER) && !isnan(v) &&
        !(isfinite(v) && fabs(v) > COSTDB_MAX_SECONDS)) {
        *out = v;
        return 0;
    }
    row_key(db, st, col, key, sizeof key);
    if (t != SQLITE_FLOAT && t != SQLITE_INTEGER)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: %s: column %s holds %s, not a number of seconds",
                       db->path, key, col_name(st, col), type_name(t));
    return cdb_err(db, COSTDB_ECORRUPT,
                   "%s: %s: column %s = %g s is past %g s (COSTDB_MAX_SECONDS)", db->path, key,
                   col_name(st, col), v, COSTDB_MAX_SECONDS);
}

int cdb_col_cost_or_null(Costdb *db, sqlite3_stmt *st, int col, double *out)
{
    switch (sqlite3_column_type(st, col)) {
    case SQLITE_NULL: *out = -1.0; return 0;
    case SQLITE_FLOAT:
    case SQLITE_INTEGER: return cdb_col_cost(db, st, col, out);
    default:
        *out = -1.0;
        return cdb_err(db, COSTDB_ECORRUPT, "%s: entry (%d, %d, %d, %d) has a non-numeric %s",
                       db->path, sqlite3_column_int(st, 0), sqlite3_column_int(st, 1),
                       sqlite3_column_int(st, 2), sqlite3_column_int(st, 3), col_name(st, col));
    }
}

int cdb_col_seconds(Costdb *db, sqlite3_stmt *st, int col, int allow_inf, double *out)
{
    int t = sqlite3_column_type(st, col);
    double v = sqlite3_column_double(st, col);
    char key[512];
    *out = 0.0;
    if ((t == SQLITE_FLOAT || t == SQLITE_INTEGER) &&
        ((v >= 0 && v <= COSTDB_MAX_SECONDS) || (allow_inf && isinf(v) && v > 0))) {
        *out = v;
        return 0;
    }
    row_key(db, st, col, key, sizeof key);
    if (t != SQLITE_FLOAT && t != SQLITE_INTEGER)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: %s: column %s holds %s, not a number of seconds",
                       db->path, key, col_name(st, col), type_name(t));
    return cdb_err(db, COSTDB_ECORRUPT,
                   "%s: %s: column %s = %g s is outside 0..%g%s (COSTDB_MAX_SECONDS)", db->path,
                   key, col_name(st, col), v, COSTDB_MAX_SECONDS, allow_inf ? " or +inf" : "");
}

int cdb_col_rate(Costdb *db, sqlite3_stmt *st, int col, double *out)
{
    int t = sqlite3_column_type(st, col);
    double v = sqlite3_column_double(st, col);
    char key[512];
    *out = 0.0;
    if ((t == SQLITE_FLOAT || t == SQLITE_INTEGER) && isfinite(v) && v > 0) {
        *out = v;
        return 0;
    }
    row_key(db, st, col, key, sizeof key);
    if (t != SQLITE_FLOAT && t != SQLITE_INTEGER)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: %s: column %s holds %s, not a rate",
                       db->path, key, col_name(st, col), type_name(t));
    return cdb_err(db, COSTDB_ECORRUPT, "%s: %s: column %s = %g is not a finite rate > 0",
                   db->path, key, col_name(st, col), v);
}

static const char sql_sweep_layers[] = "SELECT num_layers FROM sweep WHERE id = ?1";

int cdb_sweep_layers(Costdb *db, int64_t sweep_id, int *layers)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *layers = COSTDB_MAX_LAYERS;
    if ((rc = cdb_prepare(db, sql_sweep_layers, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int64_t v = sqlite3_column_int64(st, 0);
        if (sqlite3_column_type(st, 0) == SQLITE_INTEGER && v >= 1 && v <= COSTDB_MAX_LAYERS)
            *layers = (int)v;
        rc = 0;
    } else {
        rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_sweep_layers);
    }
    cdb_release(st);
    return rc;
}

int cdb_entry_layers_check(Costdb *db, int code, int64_t sweep_id, int layers, int start,
                           int end, int submesh, int config, int phase)
{
    if (end < layers)
        return 0;
    return cdb_err(db, code, "%s: table stage_entry, row (sweep_id=%lld, start_layer=%d, "
                   "end_layer=%d, submesh_index=%d, config_index=%d, phase=%d): column end_layer"
                   " = %d is past the sweep's %d layers (0..%d)", db->path, (long long)sweep_id,
                   start, end, submesh, config, phase, end, layers, layers - 1);
}

int cdb_entries_layers_check(Costdb *db, int64_t sweep_id, CostdbEntry **out, size_t *n)
{
    int layers = COSTDB_MAX_LAYERS, rc;
    if (*n == 0)
        return 0;
    if ((rc = cdb_sweep_layers(db, sweep_id, &layers)) == 0)
        for (const CostdbEntry *x = *out; x < *out + *n && rc == 0; x++)
            rc = cdb_entry_layers_check(db, COSTDB_ECORRUPT, sweep_id, layers, x->start_layer,
                                        x->end_layer, x->submesh_index, x->config_index,
                                        (int)x->phase);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
