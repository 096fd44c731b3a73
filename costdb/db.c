/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Opening and closing the cost database: the file is checked to be a
 * readable approf database (or an empty file) before anything is written,
 * migrations embedded from the schemas/ folder are applied one per BEGIN IMMEDIATE
 * transaction with their PRAGMA user_version bump (a new, empty file is made
 * at the latest schema in one transaction from the script generated from
 * them at build time, schema_final.h), and the connection gets
 * busy_timeout, WAL, synchronous=NORMAL and foreign_keys=ON. A file that
 * holds objects the migrations did not create is refused (untrusted files).
 * The shared internals live beside it: errors, the statement cache and
 * transactions in db_stmt.c, checked binding and reading in db_row.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "costdb_int.h"
#include "entry_blocks.h"
#include "db_txn_sql.h"
#include "grow.h"
#include "schema_final.h"
#include "schema_sql.h"

#define COSTDB_BUSY_TIMEOUT_MS 10000

void costdb_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    if (!buf || !len)
        return;
    if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        buf[0] = '\0';
}

/* ---- open --------------------------------------------------------------- */

int costdb_schema_version(void)
{
    return COSTDB_SCHEMA_VERSION;
}

static const char sql_user_version[] = "PRAGMA user_version";

int costdb_file_version(Costdb *db, int *version)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !version)
        return COSTDB_EINVAL;
    rc = cdb_prepare(db, sql_user_version, &st);
    if (rc < 0)
        return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *version = sqlite3_column_int(st, 0);
        rc = 0;
    } else {
        rc = cdb_fail(db, rc, sql_user_version);
    }
    cdb_release(st);
    return rc;
}

/* Reads the schema and the version without writing anything: this is what
 * tells a non-database or corrupt file apart before we touch it. */
static int probe_file(Costdb *db, int *version, int *n_objects)
{
    static const char sql_count[] = "SELECT count(*) FROM sqlite_master";
    sqlite3_stmt *st = NULL;
    int rc = cdb_prepare(db, sql_count, &st);
    if (rc < 0)
        goto cleanup;
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        rc = cdb_fail(db, rc, sql_count);
        goto cleanup;
    }
    *n_objects = sqlite3_column_int(st, 0);
    rc = costdb_file_version(db, version);
cleanup:
    cdb_release(st);
    return rc;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int set_wal(Costdb *db)
{
    static const char sql_get[] = "PRAGMA journal_mode";
    static const char sql_set[] = "PRAGMA journal_mode=WAL";
    const char *sqls[2] = {sql_get, sql_set};
    for (int k = 0; k < 2; k++) {
        for (int attempt = 0;; attempt++) {
            sqlite3_stmt *st = NULL;
            int rc = cdb_prepare(db, sqls[k], &st);
            if (rc < 0)
                return rc;
            rc = sqlite3_step(st);
            if (rc == SQLITE_ROW) {
                const char *mode = (const char *)sqlite3_column_text(st, 0);
                int done = mode && (!strcmp(mode, "wal") || !strcmp(mode, "memory"));
                cdb_release(st);
                if (done || k == 1)
                    return 0;
                break;
            }
            rc = cdb_fail(db, rc, sqls[k]);
            cdb_release(st);
            /* Switching to WAL takes an exclusive lock; another process
             * opening the same new file may hold it for a moment. */
            if (rc != COSTDB_EBUSY || attempt >= 100)
                return rc;
            sleep_ms(50);
        }
    }
    return 0;
}

/* Migrations that rebuild a table other tables reference (the 12-step
 * procedure of SQLite's ALTER TABLE documentation): run with foreign keys
 * off, so that dropping the old table does not cascade into its children,
 * and checked with foreign_key_check before they commit. The number is the
 * schema the migration makes. */
static int rebuilds_parent(int to)
{
    return to == 11; /* 011_recompute_op.sql: sweep_config */
}

/* 016_stage_cost_strict.sql makes stage_cost a STRICT table, and SQLite
 * refuses to copy a value of another type into it (text in an INTEGER
 * column, say, written with approf's triggers off). Such a row is looked
 * for before any migration runs, in the table that holds the cost rows at
 * the file's schema (stage_cost from schema 8, stage_profile before), so
 * that the refusal names it the way the readers would and the file is left
 * as it was. Only the columns schema 16 types strictly count; the row is
 * then described by cdb_row_check. */
#define CDB_STRICT_COSTS 16

static int strict_cost_column(const char *name)
{
    static const char *const cols[] = {
        "sweep_id", "cost_id", "compute_cost", "peak_memory", "invar_size", "outvar_size",
        "temp_buffer_size", "available_memory", "intermediate_size", "initial_size", "repeats",
        "spread", "status", "error_id", "apply_cost", "wgrad_cost"};
    for (size_t k = 0; name && k < sizeof cols / sizeof cols[0]; k++)
        if (!strcmp(name, cols[k]))
            return 1;
    return 0;
}

/* 1 when a STRICT column of type decl would refuse a value of type t that
 * its affinity column holds. */
static int strict_refuses(const char *decl, int t)
{
    if (!decl || t == SQLITE_NULL)
        return 0;
    if (t == SQLITE_BLOB)
        return 1;
    if (!strcmp(decl, "INTEGER"))
        return t != SQLITE_INTEGER;
    if (!strcmp(decl, "REAL"))
        return t != SQLITE_INTEGER && t != SQLITE_FLOAT;
    if (!strcmp(decl, "TEXT"))
        return t != SQLITE_TEXT;
    return 0;
}

static int strict_costs_check(Costdb *db, int from)
{
    const char *sql = from >= 8 ? "SELECT * FROM stage_cost" : "SELECT * FROM stage_profile";
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL), bad = -1;
    while (rc == SQLITE_OK && bad < 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        for (int i = 0; i < sqlite3_column_count(st) && bad < 0; i++)
            if (strict_cost_column(sqlite3_column_name(st, i)) &&
                strict_refuses(sqlite3_column_decltype(st, i), sqlite3_column_type(st, i)))
                bad = i;
    }
    if (bad >= 0) {
        char what[sizeof db->errmsg];
        if (cdb_row_check(db, st) < 0)
            snprintf(what, sizeof what, "%s", db->errmsg);
        else
            snprintf(what, sizeof what, "%s: a row of %s: column %s holds a value of another"
                     " type than its %s", db->path, from >= 8 ? "stage_cost" : "stage_profile",
                     sqlite3_column_name(st, bad), sqlite3_column_decltype(st, bad));
        sqlite3_finalize(st);
        return cdb_err(db, COSTDB_ECORRUPT,
                       "%s; schema %d stores cost rows in a STRICT table, which cannot hold it:"
                       " correct or delete the row (the file is left at schema %d)",
                       what, CDB_STRICT_COSTS, from);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql);
}

/* Sets the file's PRAGMA user_version to v inside the caller's
 * transaction (PRAGMA takes no parameters; the number is ours, not user
 * text). 0 or the error, named with the statement. */
static int set_user_version(Costdb *db, int v)
{
    char bump[64];
    int rc;
    snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v);
    rc = sqlite3_exec(db->sql, bump, NULL, NULL, NULL);
    return rc != SQLITE_OK ? cdb_fail(db, rc, bump) : 0;
}

/* A new (empty) file is made at the latest schema in one BEGIN IMMEDIATE
 * transaction from costdb_schema_final, the CREATE statements the migrations
 * leave, generated from them at build time (costdb/schema_final_gen.c): the
 * same schema table and user_version as migrating from schema 1
 * (tests/costdb/test_schema_final.c), without the migrations' ALTER TABLE
 * and copy steps, which find nothing to copy in a new file and make SQLite
 * parse the whole schema again after each (docs/performance.md, "Opening a
 * database"). The version and the schema are read again inside the
 * transaction: when another process wrote to the file meanwhile, this
 * returns 0 and the migrations go on from what it holds, each checking its
 * version, so concurrent openers make the schema once. 1 when made. */
static int create_latest(Costdb *db)
{
    char *err = NULL;
    int now = 0, n_objects = 0, rc = cdb_exec(db, cdb_sql_begin);
    db->txn_serial++;
    if (rc < 0)
        return rc;
    rc = probe_file(db, &now, &n_objects);
    if (rc < 0)
        goto fail;
    if (now != 0 || n_objects != 0) {
        rc = cdb_exec(db, cdb_sql_commit);
        return rc < 0 ? rc : 0;
    }
    rc = sqlite3_exec(db->sql, costdb_schema_final, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        rc = cdb_err(db, cdb_map_rc(rc) ? cdb_map_rc(rc) : COSTDB_ESQL,
                     "%s: making schema %d failed: %s", db->path, COSTDB_SCHEMA_VERSION,
                     err ? err : sqlite3_errmsg(db->sql));
        sqlite3_free(err);
        goto fail;
    }
    if ((rc = set_user_version(db, COSTDB_SCHEMA_VERSION)) < 0)
        goto fail;
    rc = cdb_exec(db, cdb_sql_commit);
    if (rc < 0)
        goto fail;
    return 1;
fail:
    if (!sqlite3_get_autocommit(db->sql))
        sqlite3_exec(db->sql, cdb_sql_rollback, NULL, NULL, NULL);
    return rc;
}

static int migrate(Costdb *db, int from)
{
    int rc0;
    if (from > 0 && from < CDB_STRICT_COSTS && (rc0 = strict_costs_check(db, from)) < 0)
        return rc0;
    if (from == 0 && (rc0 = create_latest(db)) != 0)
        return rc0 < 0 ? rc0 : 0;
    for (int v = from; v < COSTDB_SCHEMA_VERSION; v++) {
        char *err = NULL;
        int now = 0, rc, fk_off = rebuilds_parent(v + 1);
        /* foreign_keys is a no-op inside a transaction: set it before */
        if (fk_off && (rc = cdb_exec(db, "PRAGMA foreign_keys=OFF")) < 0)
            return rc;
        rc = cdb_exec(db, cdb_sql_begin);
        db->txn_serial++;
        if (rc < 0)
            return rc;
        /* Another process's migration changes the schema under this
         * connection's copy of it, and SQLite parses a migration's DDL
         * against that copy: a DROP VIEW of what the copy still holds as a
         * table is refused at parse time, before any schema check. Reading
         * sqlite_master checks the schema cookie and reloads the copy when
         * it changed. */
        rc = cdb_exec(db, "SELECT count(*) FROM sqlite_master");
        if (rc < 0)
            goto fail;
        /* Another process may have migrated while we waited for the lock. */
        rc = costdb_file_version(db, &now);
        if (rc < 0)
            goto fail;
        if (now > v) {
            rc = cdb_exec(db, cdb_sql_commit);
            if (rc < 0)
                goto fail;
            if (fk_off && (rc = cdb_exec(db, "PRAGMA foreign_keys=ON")) < 0)
                return rc;
            continue;
        }
        rc = sqlite3_exec(db->sql, costdb_migrations[v], NULL, NULL, &err);
        if (rc != SQLITE_OK) {
            rc = cdb_err(db, cdb_map_rc(rc) ? cdb_map_rc(rc) : COSTDB_ESQL,
                         "%s: migration to schema %d failed: %s", db->path, v + 1,
                         err ? err : sqlite3_errmsg(db->sql));
            sqlite3_free(err);
            goto fail;
        }
        /* 013_placement_repeats.sql: the lists already there take repeats */
        if (v + 1 == 13 && (rc = cdb_placement_tails_recode(db)) < 0)
            goto fail;
        /* 014_stage_entry_blocks.sql: the entries already there go to blocks */
        if (v + 1 == 14 && (rc = cdb_entry_blocks_pack(db)) < 0)
            goto fail;
        if (fk_off) {
            sqlite3_stmt *fk = NULL;
            rc = sqlite3_prepare_v2(db->sql, "PRAGMA foreign_key_check", -1, &fk, NULL);
            if (rc == SQLITE_OK)
                rc = sqlite3_step(fk);
            sqlite3_finalize(fk);
            if (rc != SQLITE_DONE) {
                rc = rc == SQLITE_ROW ? cdb_err(db, COSTDB_ECORRUPT,
                                                "%s: migration to schema %d: a foreign key "
                                                "does not hold", db->path, v + 1)
                                      : cdb_fail(db, rc, "PRAGMA foreign_key_check");
                goto fail;
            }
        }
        if ((rc = set_user_version(db, v + 1)) < 0)
            goto fail;
        rc = cdb_exec(db, cdb_sql_commit);
        if (rc < 0)
            goto fail;
        if (fk_off && (rc = cdb_exec(db, "PRAGMA foreign_keys=ON")) < 0)
            return rc;
        continue;
fail:
        if (!sqlite3_get_autocommit(db->sql))
            sqlite3_exec(db->sql, cdb_sql_rollback, NULL, NULL, NULL);
        if (fk_off)
            sqlite3_exec(db->sql, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
        return rc;
    }
    return 0;
}


/* ---- untrusted files ---------------------------------------------------- */

/* One schema object as "type name tbl_name sql" joined by \x1f, so that two
 * lists compare as sorted strings. */
static int schema_list(sqlite3 *h, char ***out, size_t *n)
{
    /* sqlite_sequence and the ANALYZE statistics are SQLite's own tables:
     * they hold no code and a user may create them without harm. */
    static const char sql[] =
        "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master"
        " WHERE NOT (type = 'table' AND name IN ('sqlite_sequence', 'sqlite_stat1',"
        " 'sqlite_stat2', 'sqlite_stat3', 'sqlite_stat4'))"
        " ORDER BY type, name";
    sqlite3_stmt *st = NULL;
    char **v = NULL;
    size_t cnt = 0, cap = 0;
    int rc = sqlite3_prepare_v2(h, sql, -1, &st, NULL);
    *out = NULL;
    *n = 0;
    if (rc != SQLITE_OK)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char *row;
        if (UTIL_GROW(v, cap, cnt + 1) < 0) {
            rc = SQLITE_NOMEM;
            break;
        }
        row = sqlite3_mprintf("%s\x1f%s\x1f%s\x1f%s", sqlite3_column_text(st, 0),
                              sqlite3_column_text(st, 1), sqlite3_column_text(st, 2),
                              sqlite3_column_text(st, 3));
        if (!row) {
            rc = SQLITE_NOMEM;
            break;
        }
        v[cnt++] = row;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        for (size_t i = 0; i < cnt; i++)
            sqlite3_free(v[i]);
        free(v);
        return rc;
    }
    *out = v;
    *n = cnt;
    return SQLITE_OK;
}

static void schema_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sqlite3_free(v[i]);
    free(v);
}

/* Appends "type 'name'" (and " on tbl" for triggers and indexes) of a
 * schema_list row to buf. */
static void describe_object(char *buf, size_t cap, const char *row, const char *prefix)
{
    char type[32] = "", name[128] = "", tbl[128] = "";
    const char *a = strchr(row, '\x1f'), *b = a ? strchr(a + 1, '\x1f') : NULL;
    const char *c = b ? strchr(b + 1, '\x1f') : NULL;
    size_t len = strlen(buf);
    if (!a || !b || !c || len + 1 >= cap)
        return;
    snprintf(type, sizeof type, "%.*s", (int)(a - row), row);
    snprintf(name, sizeof name, "%.*s", (int)(b - a - 1), a + 1);
    snprintf(tbl, sizeof tbl, "%.*s", (int)(c - b - 1), b + 1);
    snprintf(buf + len, cap - len, "%s%s%s%s '%s'%s%s", len ? "; " : "", prefix,
             *prefix ? " " : "", type, name,
             strcmp(name, tbl) ? " on " : "", strcmp(name, tbl) ? tbl : "");
}

/* The number of objects in which two sorted schema lists differ, each
 * described in what (those only in have, those of want missing or altered). */
static int schema_diff(const char *const *want, size_t n_want, char *const *have,
                       size_t n_have, char *what, size_t cap)
{
    size_t i = 0, j = 0;
    int bad = 0;
    what[0] = '\0';
    while (i < n_want || j < n_have) {
        int c = i == n_want ? 1 : j == n_have ? -1 : strcmp(want[i], have[j]);
        if (c == 0) {
            i++;
            j++;
            continue;
        }
        bad++;
        if (c > 0)
            describe_object(what, cap, have[j++], "");
        else
            describe_object(what, cap, want[i++], "missing or altered");
    }
    return bad;
}

/* Compares the file's schema with the one approf's migrations 1..version
 * create: any trigger, view, table or index they did not create, or one
 * whose definition differs, makes the file untrusted. Runs before anything
 * is written or migrated, so a planted trigger never fires inside approf.
 * Each schema's list was made at build time from the migrations
 * (schema_final.h: the rows after migrations 1..v, for every v), so a file
 * equal to its version's list is accepted without replaying anything; a
 * file that differs from it is compared with the migrations replayed into a
 * private in-memory database by the SQLite this process runs (which may word
 * an ALTER TABLE's result otherwise than the one approf was built with), and
 * refused unless it equals that. */
static int schema_check(Costdb *db, int version)
{
    sqlite3 *ref = NULL;
    char **want = NULL, **have = NULL;
    size_t n_want = 0, n_have = 0;
    char what[1024] = "";
    int rc, bad = 0;

    rc = schema_list(db->sql, &have, &n_have);
    if (rc != SQLITE_OK) {
        rc = cdb_fail(db, rc, "SELECT ... FROM sqlite_master");
        goto cleanup;
    }
    /* check_file passes 1..COSTDB_SCHEMA_VERSION only */
    if (version >= 1 && version <= COSTDB_SCHEMA_VERSION &&
        !schema_diff(costdb_schema_objects[version], (size_t)costdb_schema_objects_n[version],
                     have, n_have, what, sizeof what))
        goto cleanup;
    rc = sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    for (int v = 0; rc == SQLITE_OK && v < version; v++)
        rc = sqlite3_exec(ref, costdb_migrations[v], NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = schema_list(ref, &want, &n_want);
    if (rc != SQLITE_OK) {
        rc = cdb_err(db, cdb_map_rc(rc) ? cdb_map_rc(rc) : COSTDB_ESQL,
                     "%s: cannot build the reference schema %d: %s", db->path, version,
                     ref ? sqlite3_errmsg(ref) : sqlite3_errstr(rc));
        goto cleanup;
    }
    bad = schema_diff((const char *const *)want, n_want, have, n_have, what, sizeof what);
    rc = 0;
    if (bad)
        rc = cdb_err(db, COSTDB_EUNTRUSTED,
                     "%s: refusing a database whose schema approf did not create (schema %d): %s"
                     " (see 'Opening a database you did not write' in docs/reliability.md)",
                     db->path, version, what);
cleanup:
    schema_free(want, n_want);
    schema_free(have, n_have);
    sqlite3_close(ref);
    return rc;
}

/* Settings that hold before the file's schema is even read: no writes to
 * the schema or to raw pages (DEFENSIVE), no functions with side effects
 * from views or triggers (trusted_schema off), no extensions. */
static int harden(Costdb *db)
{
    int on = 0;
    if (sqlite3_db_config(db->sql, SQLITE_DBCONFIG_DEFENSIVE, 1, &on) != SQLITE_OK || !on)
        return cdb_err(db, COSTDB_ESQL, "%s: SQLite refused SQLITE_DBCONFIG_DEFENSIVE", db->path);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
    if (sqlite3_db_config(db->sql, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &on) != SQLITE_OK || on)
        return cdb_err(db, COSTDB_ESQL, "%s: SQLite refused trusted_schema=OFF", db->path);
#endif
    sqlite3_db_config(db->sql, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
    return cdb_exec(db, "PRAGMA trusted_schema=OFF");
}

/* A reader of a file in a directory it cannot write cannot create the
 * -shm/-wal files SQLite's WAL mode needs: such a file is opened as
 * immutable (no locks, no side files). A non-empty -wal file there means a
 * writer's last transactions live only in it; then the plain read-only open
 * is kept so SQLite reads them (or says why it cannot). */
static int wants_immutable(const char *path)
{
    char dir[PATH_MAX], wal[PATH_MAX + 8];
    const char *slash = strrchr(path, '/');
    struct stat sb;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (access(dir, W_OK) == 0)
        return 0;
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (stat(wal, &sb) == 0 && sb.st_size > 0)
        return 0;
    return 1;
}

/* "file:" URI of path with immutable=1; every byte outside [A-Za-z0-9/._-]
 * percent-encoded. sqlite3_free()s the result; NULL when out of memory. */
static char *immutable_uri(const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(path);
    char *u = sqlite3_malloc64(n * 3 + 32), *q;
    if (!u)
        return NULL;
    q = u;
    memcpy(q, "file:", 5);
    q += 5;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '/' || *p == '.' || *p == '_' || *p == '-') {
            *q++ = (char)*p;
        } else {
            *q++ = '%';
            *q++ = hex[*p >> 4];
            *q++ = hex[*p & 15];
        }
    }
    memcpy(q, "?mode=ro&immutable=1", 21);
    return u;
}

/* Refuses, before anything is written: a file that is not SQLite, a
 * corrupt one, one from a newer approf, somebody else's database, and one
 * whose schema approf did not create. */
static int check_file(Costdb *db, int version, int n_objects)
{
    int rc = 0;
    if (version > COSTDB_SCHEMA_VERSION)
        return cdb_err(db, COSTDB_ETOONEW,
                       "%s: written by a newer approf (schema %d, this build knows %d)",
                       db->path, version, COSTDB_SCHEMA_VERSION);
    /* user_version is a signed 32-bit field: a negative one was never
     * written by approf, and would index before the migration table. */
    if (version < 0)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: the database is corrupt (schema version %d)",
                       db->path, version);
    if (version == 0 && n_objects > 0)
        return cdb_err(db, COSTDB_ENOTDB,
                       "%s: not an approf database (a SQLite file with other tables)", db->path);

    if (version > 0)
        rc = schema_check(db, version);
    return rc;
}

static int setup(Costdb *db, int flags)
{
    int version = 0, n_objects = 0, rc;
    int oflags = (flags & COSTDB_OPEN_READONLY) ? SQLITE_OPEN_READONLY
               : (flags & COSTDB_OPEN_NOCREATE) ? SQLITE_OPEN_READWRITE
               : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    struct stat sb;

    /* What SQLite would only call "disk I/O error", "unable to open
     * database file" or an old schema. */
    if (stat(db->path, &sb) != 0) {
        if (errno == ENOENT && (flags & (COSTDB_OPEN_READONLY | COSTDB_OPEN_NOCREATE)))
            return cdb_err(db, COSTDB_EIO, "%s: no such file", db->path);
    } else {
        if (S_ISDIR(sb.st_mode))
            return cdb_err(db, COSTDB_EIO, "%s: is a directory, not a database file", db->path);
        if (!S_ISREG(sb.st_mode))
            return cdb_err(db, COSTDB_ENOTDB,
                           "%s: not an approf database (not a regular file)", db->path);
    }

    if ((flags & COSTDB_OPEN_READONLY) &&
        ((flags & COSTDB_OPEN_IMMUTABLE) || wants_immutable(db->path))) {
        char *uri = immutable_uri(db->path);
        if (!uri)
            return cdb_err(db, COSTDB_ENOMEM, "out of memory");
        rc = sqlite3_open_v2(uri, &db->sql, oflags | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
        sqlite3_free(uri);
        db->immutable = 1;
    } else {
        rc = sqlite3_open_v2(db->path, &db->sql, oflags | SQLITE_OPEN_NOMUTEX, NULL);
    }
    if (rc != SQLITE_OK) {
        return cdb_err(db, COSTDB_EIO, "%s: cannot open: %s", db->path,
                       db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(rc));
    }
    sqlite3_extended_result_codes(db->sql, 1);
    sqlite3_busy_timeout(db->sql, COSTDB_BUSY_TIMEOUT_MS);
    if ((rc = harden(db)) < 0)
        return rc;

    /* The version and the schema are read in one snapshot: another process
     * may be migrating the file at this moment. */
    db->txn_serial++;
    if ((rc = cdb_exec(db, "BEGIN")) < 0)
        return rc;
    rc = probe_file(db, &version, &n_objects);
    if (rc == COSTDB_ENOTDB)
        rc = cdb_err(db, rc, "%s: not an approf database (not a SQLite file)", db->path);
    else if (rc == COSTDB_ECORRUPT)
        rc = cdb_err(db, rc, "%s: the database is corrupt (%s)", db->path,
                     sqlite3_errmsg(db->sql));
    else if (rc == 0)
        rc = check_file(db, version, n_objects);
    if (!sqlite3_get_autocommit(db->sql))
        sqlite3_exec(db->sql, cdb_sql_rollback, NULL, NULL, NULL);
    if (rc < 0)
        return rc;
    db->version = version;
    if (db->readonly) {
        if (version == 0)
            return cdb_err(db, COSTDB_ENOTDB,
                           "%s: not an approf database yet (an empty file: no sweep was written to it)",
                           db->path);
        /* Migrations from CDB_READABLE_FROM on add only checks on writes:
         * such a file reads the same without them. */
        if (version < CDB_READABLE_FROM)
            return cdb_err(db, COSTDB_EREADONLY,
                           "%s: schema %d needs an upgrade to %d or later; open it read-write once",
                           db->path, version, CDB_READABLE_FROM);
        return cdb_exec(db, "PRAGMA foreign_keys=ON");
    }

    rc = set_wal(db);
    if (rc < 0)
        return rc;
    rc = cdb_exec(db, "PRAGMA synchronous=NORMAL");
    if (rc < 0)
        return rc;
    rc = cdb_exec(db, "PRAGMA foreign_keys=ON");
    if (rc < 0)
        return rc;
    rc = migrate(db, version);
    if (rc == 0)
        db->version = COSTDB_SCHEMA_VERSION;
    return rc;
}

int costdb_open(const char *path, int flags, Costdb **out, char *errbuf, size_t errlen)
{
    Costdb *db = NULL;
    int rc;
    if (errbuf && errlen)
        errbuf[0] = '\0';
    if (!out)
        return COSTDB_EINVAL;
    *out = NULL;
    if (!path || !*path) {
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "no database path given");
        return COSTDB_EINVAL;
    }
    db = calloc(1, sizeof *db);
    if (!db)
        return COSTDB_ENOMEM;
    db->path = strdup(path);
    if (!db->path) {
        rc = COSTDB_ENOMEM;
        snprintf(db->errmsg, sizeof db->errmsg, "out of memory");
        goto cleanup;
    }
    db->readonly = (flags & COSTDB_OPEN_READONLY) != 0;
    rc = setup(db, flags);
cleanup:
    if (rc < 0) {
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "%s", db->errmsg[0] ? db->errmsg : costdb_strerror(rc));
        costdb_close(&db);
        return rc;
    }
    db->errmsg[0] = '\0';
    *out = db;
    return 0;
}

int costdb_sync(Costdb *db)
{
    int log = 0, done = 0, rc;
    if (!db || !db->sql)
        return COSTDB_EINVAL;
    rc = sqlite3_wal_checkpoint_v2(db->sql, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    /* busy: another connection reads or checkpoints; it syncs what it
     * copies, and the next checkpoint of this file syncs the rest */
    if (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
        return COSTDB_OK;
    return cdb_err(db, cdb_map_rc(rc) != COSTDB_OK ? cdb_map_rc(rc) : COSTDB_EIO,
                   "%s: cannot flush the database to disk: %s; what was written may not "
                   "survive a crash", db->path, sqlite3_errmsg(db->sql));
}

int costdb_wal_autocheckpoint(Costdb *db, int pages)
{
    if (!db || !db->sql || pages <= 0)
        return COSTDB_EINVAL;
    if (sqlite3_wal_autocheckpoint(db->sql, pages) != SQLITE_OK)
        return cdb_err(db, COSTDB_EIO, "%s: cannot set the checkpoint interval: %s", db->path,
                       sqlite3_errmsg(db->sql));
    return COSTDB_OK;
}

void costdb_forget_written(Costdb *db)
{
    if (db)
        cdb_caches_clear(db);
}

void costdb_close(Costdb **pdb)
{
    Costdb *db;
    if (!pdb || !*pdb)
        return;
    db = *pdb;
    for (size_t i = 0; i < db->n_cache; i++)
        sqlite3_finalize(db->cache[i].st);
    free(db->cache);
    cdb_caches_clear(db);
    if (db->sql) {
        if (!sqlite3_get_autocommit(db->sql))
            sqlite3_exec(db->sql, cdb_sql_rollback, NULL, NULL, NULL);
        sqlite3_close_v2(db->sql);
    }
    free(db->path);
    free(db);
    *pdb = NULL;
}
