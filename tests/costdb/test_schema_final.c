/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A new file is made at the latest schema from one script generated at
 * build time from the migrations (schema_final.h, costdb/schema_final_gen.c),
 * and an up-to-date file is checked against the schema table's rows made the
 * same way. These tests hold both to the migration chain: a new file and a
 * schema-1 file that costdb migrates through every migration (its C steps
 * included) end up with the same schema table rows (type, name, tbl_name,
 * sql), the same user_version, application_id and pragmas, and no rows; the
 * generated list of every schema is that chain's schema table up to it; and
 * a file of the latest or an older schema with one object more or one
 * altered is still refused unchanged.
 */
#include <CUnit/Basic.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema_final.h"
#include "schema_sql.h"
#include "testutil.h"

/* Appends to t every row of sql on the file at path (raw, read-only), its
 * columns joined by '|'. */
static void rows_text(const char *path, const char *sql, TuText *t)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    int rc;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        TuText line = {0};
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char *v = (const char *)sqlite3_column_text(st, i);
            if (i)
                tu_text_add(&line, "|");
            tu_text_add(&line, v ? v : "NULL");
        }
        tu_text_add(t, line.s ? line.s : "");
        tu_text_add(t, "\n");
        free(line.s);
    }
    CU_ASSERT_EQUAL(rc, SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* What a file is, for comparing two: its schema table (SQLite's own tables
 * included), the pragmas costdb or SQLite sets, and the rows of every
 * table. */
static char *describe(const char *path)
{
    static const char *const pragmas[] = {
        "PRAGMA user_version", "PRAGMA application_id", "PRAGMA journal_mode",
        "PRAGMA page_size", "PRAGMA auto_vacuum", "PRAGMA encoding"};
    TuText t = {0}, tables = {0};
    rows_text(path, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name", &t);
    for (size_t k = 0; k < sizeof pragmas / sizeof pragmas[0]; k++)
        rows_text(path, pragmas[k], &t);
    rows_text(path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", &tables);
    for (char *name = tables.s, *end; name && *name; name = end + 1) {
        char sql[256];
        end = strchr(name, '\n');
        *end = '\0';
        snprintf(sql, sizeof sql, "SELECT '%s', count(*) FROM \"%s\"", name, name);
        rows_text(path, sql, &t);
    }
    free(tables.s);
    return t.s;
}

static void open_close(const char *path)
{
    Costdb *db = NULL;
    char err[512] = "";
    int rc = costdb_open(path, 0, &db, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "%s\n", err);
    costdb_close(&db);
}

/* A new file equals a schema-1 file migrated by costdb, and the chain run
 * raw (tu_old_schema) to the latest schema. */
static void test_new_equals_chain(void)
{
    const char *made = tu_path("made.db"), *migrated = tu_path("migrated.db");
    const char *raw = tu_path("raw.db");
    char *a, *b, *c;
    Costdb *db = tu_open_new("made.db");
    int version = 0;
    CU_ASSERT_EQUAL(costdb_file_version(db, &version), 0);
    CU_ASSERT_EQUAL(version, costdb_schema_version());
    costdb_close(&db);
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(migrated, 1), 0);
    open_close(migrated);
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(raw, COSTDB_SCHEMA_VERSION), 0);
    open_close(raw);
    a = describe(made);
    b = describe(migrated);
    c = describe(raw);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL(strstr(a, "stage_cost|stage_cost|CREATE TABLE"));
    CU_ASSERT_STRING_EQUAL(a, b);
    CU_ASSERT_STRING_EQUAL(a, c);
    if (strcmp(a, b))
        fprintf(stderr, "made:\n%s\nmigrated:\n%s\n", a, b);
    /* opened again: the check of an up-to-date file accepts it unchanged */
    open_close(made);
    b = (free(b), describe(made));
    CU_ASSERT_STRING_EQUAL(a, b);
    free(a);
    free(b);
    free(c);
}

/* The generated reference list is the migration chain's schema table as
 * costdb's schema check lists it. */
static void test_reference_list(void)
{
    const char *raw = tu_path("list.db");
    TuText want = {0}, have = {0};
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(raw, COSTDB_SCHEMA_VERSION), 0);
    rows_text(raw,
              "SELECT type || char(31) || name || char(31) || tbl_name || char(31) ||"
              " coalesce(sql, '') FROM sqlite_master WHERE NOT (type = 'table' AND name IN"
              " ('sqlite_sequence', 'sqlite_stat1', 'sqlite_stat2', 'sqlite_stat3',"
              " 'sqlite_stat4')) ORDER BY type, name",
              &want);
    for (int k = 0; k < COSTDB_SCHEMA_FINAL_OBJECTS; k++) {
        tu_text_add(&have, costdb_schema_final_objects[k]);
        tu_text_add(&have, "\n");
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(want.s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(have.s);
    CU_ASSERT_STRING_EQUAL(want.s, have.s);
    free(want.s);
    free(have.s);
}

/* The generated list of every schema v is the schema table that migrations
 * 1..v make, run one after another by the SQLite the tests link into one
 * in-memory database (as costdb's schema check replays them): what a file
 * of schema v is compared with on open before any migration is replayed. */
static void test_reference_every_version(void)
{
    sqlite3 *h = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(":memory:", &h), SQLITE_OK);
    for (int v = 1; v <= COSTDB_SCHEMA_VERSION; v++) {
        sqlite3_stmt *st = NULL;
        int k = 0, rc;
        CU_ASSERT_EQUAL_FATAL(sqlite3_exec(h, costdb_migrations[v - 1], NULL, NULL, NULL),
                              SQLITE_OK);
        CU_ASSERT_EQUAL_FATAL(
            sqlite3_prepare_v2(h,
                               "SELECT type || char(31) || name || char(31) || tbl_name ||"
                               " char(31) || coalesce(sql, '') FROM sqlite_master WHERE NOT"
                               " (type = 'table' AND name IN ('sqlite_sequence', 'sqlite_stat1',"
                               " 'sqlite_stat2', 'sqlite_stat3', 'sqlite_stat4'))"
                               " ORDER BY type, name",
                               -1, &st, NULL),
            SQLITE_OK);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *row = (const char *)sqlite3_column_text(st, 0);
            CU_ASSERT_TRUE(k < costdb_schema_objects_n[v] &&
                           !strcmp(row, costdb_schema_objects[v][k]));
            if (!(k < costdb_schema_objects_n[v] && !strcmp(row, costdb_schema_objects[v][k])))
                fprintf(stderr, "schema %d, row %d differs: %s\n", v, k, row);
            k++;
        }
        CU_ASSERT_EQUAL(rc, SQLITE_DONE);
        CU_ASSERT_EQUAL(k, costdb_schema_objects_n[v]);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
}

/* A file of an older schema, opened read-only as apsolve opens it, is
 * accepted as the migrations made it, and refused with the object named
 * when a trigger was planted or a table's definition altered, the file left
 * as it was; a read-write open refuses it too, before migrating. */
static void test_older_refused(void)
{
    static const char *const edits[] = {
        "CREATE TRIGGER planted AFTER INSERT ON sweep BEGIN SELECT 1; END;",
        "PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql = replace(sql,"
        " 'CREATE TABLE sweep (', 'CREATE TABLE sweep ( ') WHERE name = 'sweep';"
        " PRAGMA writable_schema=OFF;"};
    const char *p = tu_path("older.db");
    /* 15: the 126-layer database's schema (docs/performance.md); 3: the
     * oldest a read-only open takes */
    static const int versions[] = {3, 15, COSTDB_SCHEMA_VERSION - 1};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        int v = versions[i];
        Costdb *db = NULL;
        char err[512] = "";
        CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, v), 0);
        CU_ASSERT_EQUAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, err, sizeof err), 0);
        if (!db)
            fprintf(stderr, "schema %d: %s\n", v, err);
        costdb_close(&db);
        for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
            char *before, *after;
            CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, v), 0);
            CU_ASSERT_EQUAL_FATAL(tu_exec(p, edits[k]), 0);
            before = describe(p);
            for (int rw = 0; rw < 2; rw++) {
                err[0] = '\0';
                CU_ASSERT_EQUAL(costdb_open(p, rw ? 0 : COSTDB_OPEN_READONLY, &db, err,
                                            sizeof err),
                                COSTDB_EUNTRUSTED);
                CU_ASSERT_PTR_NULL(db);
                costdb_close(&db);
                CU_ASSERT_PTR_NOT_NULL(strstr(err, k ? "table 'sweep'" : "planted"));
                if (!strstr(err, k ? "table 'sweep'" : "planted"))
                    fprintf(stderr, "schema %d, edit %zu: %s\n", v, k, err);
            }
            after = describe(p);
            CU_ASSERT_STRING_EQUAL(before, after);
            free(before);
            free(after);
        }
    }
}

/* A latest-schema file with a planted trigger, or with a table's definition
 * altered, is refused and left as it was. */
static void test_latest_refused(void)
{
    static const char *const edits[] = {
        "CREATE TRIGGER planted AFTER INSERT ON sweep BEGIN SELECT 1; END;",
        "PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql = replace(sql,"
        " 'CREATE TABLE sweep_owner (', 'CREATE TABLE sweep_owner ( ')"
        " WHERE name = 'sweep_owner'; PRAGMA writable_schema=OFF;"};
    for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
        const char *p = tu_path("hostile.db");
        Costdb *db = tu_open_new("hostile.db");
        char err[512] = "", *before, *after;
        costdb_close(&db);
        CU_ASSERT_EQUAL_FATAL(tu_exec(p, edits[k]), 0);
        before = describe(p);
        CU_ASSERT_EQUAL(costdb_open(p, 0, &db, err, sizeof err), COSTDB_EUNTRUSTED);
        CU_ASSERT_PTR_NULL(db);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, k ? "sweep_owner" : "planted"));
        after = describe(p);
        CU_ASSERT_STRING_EQUAL(before, after);
        free(before);
        free(after);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"new file equals the migration chain", test_new_equals_chain},
        {"reference list equals the migration chain", test_reference_list},
        {"latest-schema file with other objects refused", test_latest_refused},
        {"reference list of every schema equals the chain", test_reference_every_version},
        {"older-schema file with other objects refused", test_older_refused},
    };
    return TU_RUN("schema_final", tests);
}
