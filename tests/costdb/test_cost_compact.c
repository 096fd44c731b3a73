/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compact cost rows (schema 15, schemas/README.md "stage_profile"): error
 * texts once in stage_error, a sweep's available_memory once in
 * stage_cost_sweep. A schema-14 file migrates and reads the same, through
 * the view and through every reader; approf's writer stores each text once
 * and NULL for the sweep's available_memory; a cost row whose error_id or
 * NULL available_memory names nothing is refused with its table, row and
 * column named, and the file stays as it was. Schema 16: a schema-15 file
 * migrates to a STRICT stage_cost with every row the same; a value of
 * another type or an unknown status is still refused; a file holding such a
 * value is refused before it migrates, naming the row.
 */
#include <CUnit/Basic.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_rows.h"
#include "testutil.h"

/* Every row of the query sql on the file p, a line each, its columns'
 * text separated by spaces; the caller frees it. */
static char *rows_text(const char *p, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    TuText t = {0};
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    tu_text_add(&t, "");
    while (sqlite3_step(st) == SQLITE_ROW)
        for (int k = 0; k < sqlite3_column_count(st); k++) {
            tu_text_add(&t, (const char *)sqlite3_column_text(st, k));
            tu_text_add(&t, k + 1 < sqlite3_column_count(st) ? " " : "\n");
        }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return t.s;
}

/* Every row of the view stage_profile, each value quoted (type and all),
 * in key order. */
static char *view_rows(const char *p)
{
    static const char sql[] =
        "SELECT quote(sweep_id), quote(start_layer), quote(end_layer), quote(submesh_index),"
        " quote(config_index), quote(phase), quote(compute_cost), quote(peak_memory),"
        " quote(invar_size), quote(outvar_size), quote(temp_buffer_size),"
        " quote(available_memory), quote(intermediate_size), quote(initial_size),"
        " quote(repeats), quote(spread), quote(reused), quote(status), quote(error),"
        " quote(apply_cost), quote(wgrad_cost) FROM stage_profile"
        " ORDER BY sweep_id, submesh_index, start_layer, end_layer, config_index, phase";
    return rows_text(p, sql);
}

/* What the readers read of a sweep: costdb_entries_get, then
 * costdb_stage_rows. */
static char *read_all(const char *p, int64_t sweep)
{
    Costdb *db = NULL;
    CostdbEntry *e = NULL;
    size_t n = 0;
    TuText t = {0};
    char line[COSTDB_TEXT_MAX + 256];
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_entries_get(db, sweep, &e, &n), 0);
    tu_text_add(&t, "");
    for (size_t i = 0; i < n; i++) {
        snprintf(line, sizeof line, "%d %d %d %d %d %.17g %.17g %lld %lld %d %d [%s]\n",
                 e[i].start_layer, e[i].end_layer, e[i].submesh_index, e[i].config_index,
                 (int)e[i].phase, e[i].compute_cost, e[i].unfit_cost,
                 (long long)e[i].peak_memory, (long long)e[i].available_memory, e[i].reused,
                 (int)e[i].status, e[i].error);
        tu_text_add(&t, line);
    }
    free(e);
    CU_ASSERT_EQUAL(costdb_stage_rows(db, sweep, tu_stage_row_text, &t), 0);
    costdb_close(&db);
    return t.s;
}

/* Sweep 3 of 2 layers, 2 configs, six cost rows as schema 14 stored them:
 * three error texts (one shared by two rows), available_memory 1000 but
 * in one row 900; its entries in blocks (slot 2 * config + phase, 3 bytes
 * each, cost_id * 2 + reused) and one entry written through the view. */
static const char schema14_costs[] =
    "INSERT INTO sweep_config (sweep_id, submesh_index, config_index, logical_a, logical_b,"
    " force_batch_dim) VALUES (3, 0, 1, 1, 2, NULL);"
    "INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size,"
    " outvar_size, temp_buffer_size, available_memory, intermediate_size, initial_size,"
    " status, error, apply_cost, wgrad_cost) VALUES"
    " (3, 1, 0.5, 100, 1, 2, 3, 1000, 4, 5, 'ok', NULL, 0.25, NULL),"
    " (3, 2, 0.75, 200, 1, 2, 3, 1000, 4, 5, 'ok', NULL, NULL, 0.5),"
    " (3, 3, 0.125, 5000, 1, 2, 3, 1000, 4, 5, 'oom', 'needs 5000 B', NULL, NULL),"
    " (3, 4, 0.25, 6000, 1, 2, 3, 1000, 4, 5, 'oom', 'needs 6000 B', NULL, NULL),"
    " (3, 5, 0.125, 5000, 1, 2, 3, 900, 4, 5, 'oom', 'needs 5000 B', NULL, NULL),"
    " (3, 6, 2.0, 300, 1, 2, 3, 1000, 4, 5, 'failed', 'cuda: boom', NULL, NULL);"
    "INSERT INTO stage_entry_block (sweep_id, submesh_index, start_layer, end_layer,"
    " config_block, costs) VALUES"
    " (3, 0, 0, 0, 0, x'000002000004000007000008'),"
    " (3, 0, 0, 1, 0, x'000006000008'),"
    " (3, 0, 1, 1, 0, x'00000a00000000000000000c');";

static void test_migrate_schema14(void)
{
    const char *p = tu_path("schema14.db");
    Costdb *db = NULL;
    char *view0, *read0, *view1, *read1, *view2;
    int v = 0;
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, 14), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, TU_SWEEP3_SQL), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, schema14_costs), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile"), 8);
    view0 = view_rows(p);
    read0 = read_all(p, 3); /* read-only: as it is */
    CU_ASSERT_PTR_NOT_NULL(strstr(read0, "[needs 5000 B]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(read0, " 900 "));
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0); /* migrates */
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version());
    costdb_close(&db);
    CU_ASSERT(v >= 15);
    CU_ASSERT_EQUAL(tu_count(p, "stage_error"), 3);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost_sweep WHERE sweep_id = 3"
                                " AND available_memory = 1000"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE available_memory IS NULL"), 5);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE available_memory = 900"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE error_id IS NOT NULL"), 4);
    view1 = view_rows(p);
    read1 = read_all(p, 3);
    CU_ASSERT_STRING_EQUAL(view1, view0);
    CU_ASSERT_STRING_EQUAL(read1, read0);
    /* writes through the view: a text stored once, read back in place */
    CU_ASSERT_EQUAL(tu_exec(p, "INSERT INTO stage_profile (sweep_id, start_layer, end_layer,"
                               " submesh_index, config_index, phase, compute_cost,"
                               " peak_memory, invar_size, outvar_size, temp_buffer_size,"
                               " available_memory, intermediate_size, initial_size, status,"
                               " error) VALUES (3, 1, 1, 0, 0, 1, 0.5, 7000, 1, 2, 3, 1000,"
                               " 4, 5, 'oom', 'needs 5000 B'),"
                               " (3, 0, 1, 0, 1, 0, 0.5, 7000, 1, 2, 3, 800, 4, 5, 'oom',"
                               " 'new text')"), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_error"), 4);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile WHERE error = 'needs 5000 B'"
                                " AND peak_memory = 7000 AND available_memory = 1000"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile WHERE error = 'new text'"
                                " AND available_memory = 800"), 1);
    /* a text or an available_memory that is not one is refused, as before */
    CU_ASSERT_NOT_EQUAL(tu_exec(p, "INSERT INTO stage_profile (sweep_id, start_layer,"
                                   " end_layer, submesh_index, config_index, phase,"
                                   " compute_cost, peak_memory, invar_size, outvar_size,"
                                   " temp_buffer_size, available_memory, intermediate_size,"
                                   " initial_size, error) VALUES (3, 1, 1, 0, 1, 0, 0.5, 1,"
                                   " 1, 2, 3, NULL, 4, 5, 'x')"), 0);
    view2 = view_rows(p);
    CU_ASSERT_PTR_NOT_NULL(strstr(view2, "'new text'"));
    free(view0);
    free(view1);
    free(view2);
    free(read0);
    free(read1);
}

/* A sweep of 2 layers written by approf: one oom text in three entries,
 * available_memory 4000 but 3000 in one entry. */
static const char *make_db(const char *name)
{
    const char *p = tu_path(name);
    CostdbSweep s;
    CostdbEntry e[8];
    size_t n = 8;
    Costdb *db = tu_two_layer_sweep(p, "compact", &s, e);
    for (size_t k = 0; k < n; k++) {
        int i = e[k].start_layer, c = e[k].config_index, ph = (int)e[k].phase;
        e[k].compute_cost += i;
        if (k == 5)
            e[k].available_memory = 3000;
        if (c == 1 && (i == 1 || ph == 1)) {
            e[k].status = COSTDB_STATUS_OOM;
            e[k].unfit_cost = e[k].compute_cost;
            e[k].peak_memory = 9000;
            snprintf(e[k].error, sizeof e[k].error, "needs 9000 B");
        }
    }
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, s.id, e, n, 0), 0);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(p, "stage_error"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost_sweep WHERE available_memory = 4000"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE available_memory IS NOT NULL"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE error_id IS NOT NULL"), 2); /* two share a row */
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile WHERE error = 'needs 9000 B'"
                                " AND available_memory = 4000"), 3);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile WHERE available_memory = 3000"), 1);
    return p;
}

static void test_writer(void)
{
    const char *p = make_db("writer.db");
    char *r = read_all(p, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r, " 9000 4000 0 1 [needs 9000 B]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r, " 3000 0 0 []"));
    free(r);
}

static void test_damaged_refs(void)
{
    static const struct {
        const char *sql, *msg;
        int rows; /* costdb_stage_rows refuses it too */
    } cases[] = {
        {"DELETE FROM stage_error", "table stage_cost, row (sweep_id=1, cost_id=", 0},
        {"UPDATE stage_cost SET error_id = 77 WHERE error_id IS NOT NULL",
         "its error_id 77 names no row of table stage_error", 0},
        {"DELETE FROM stage_cost_sweep",
         "column available_memory is NULL (the sweep's) and table stage_cost_sweep has no row",
         1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *p = make_db("damaged.db");
        Costdb *db = NULL;
        CostdbEntry *out = NULL;
        size_t len0 = 0, len1 = 0, n = 0;
        char *file0, *file1;
        int rc;
        CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p, cases[k].sql), 0);
        file0 = tu_read(p, &len0);
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
        rc = costdb_entries_get(db, 1, &out, &n);
        CU_ASSERT_EQUAL(rc, COSTDB_ECORRUPT);
        CU_ASSERT_PTR_NULL(out);
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), p));
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), cases[k].msg));
        if (rc != COSTDB_ECORRUPT || !strstr(costdb_errmsg(db), cases[k].msg))
            fprintf(stderr, "case %zu: rc %d, '%s'\n", k, rc, costdb_errmsg(db));
        if (cases[k].rows) {
            TuText t = {0};
            rc = costdb_stage_rows(db, 1, tu_stage_row_text, &t);
            free(t.s);
            CU_ASSERT_EQUAL(rc, COSTDB_ECORRUPT);
            CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "table stage_cost_sweep"));
            if (rc != COSTDB_ECORRUPT)
                fprintf(stderr, "case %zu rows: rc %d, '%s'\n", k, rc, costdb_errmsg(db));
        }
        costdb_close(&db);
        file1 = tu_read(p, &len1);
        CU_ASSERT(file0 && file1 && len0 == len1 && !memcmp(file0, file1, len0));
        free(file0);
        free(file1);
    }
}

/* Schema 16 (schemas/016_stage_cost_strict.sql): stage_cost is a STRICT
 * table and its status CHECK a chain of comparisons. */

/* Every row of stage_cost, each value with its type, reals as %!.17g (SQLite's %.17g stops at 16 digits), in key
 * order. */
static char *cost_rows(const char *p)
{
    static const char cols[][20] = {"sweep_id", "cost_id", "compute_cost", "peak_memory",
                                    "invar_size", "outvar_size", "temp_buffer_size",
                                    "available_memory", "intermediate_size", "initial_size",
                                    "repeats", "spread", "status", "error_id", "apply_cost",
                                    "wgrad_cost"};
    char sql[4096] = "SELECT ";
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) {
        size_t len = strlen(sql);
        snprintf(sql + len, sizeof sql - len,
                 "%stypeof(%s) || ':' || CASE typeof(%s) WHEN 'real' THEN printf('%%!.17g', %s)"
                 " ELSE quote(%s) END", k ? ", " : "", cols[k], cols[k], cols[k], cols[k]);
    }
    size_t len = strlen(sql);
    snprintf(sql + len, sizeof sql - len, " FROM stage_cost ORDER BY sweep_id, cost_id");
    return rows_text(p, sql);
}

/* The opcodes of approf's cost-row INSERT (costdb/entry_costs.c) named op. */
static int insert_opcodes(const char *p, const char *op)
{
    static const char sql[] =
        "EXPLAIN INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory,"
        " invar_size, outvar_size, temp_buffer_size, available_memory, intermediate_size,"
        " initial_size, repeats, spread, status, error_id, apply_cost, wgrad_cost) VALUES (?1,"
        " ?16, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int n = 0;
    /* read-write: a read-only connection leaves the CHECKs out */
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(p, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        n += !strcmp((const char *)sqlite3_column_text(st, 1), op);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* Sweep 3 of 2 layers, 2 configs, six cost rows as schema 15 stored them:
 * every status, an infinite cost, reals that are integers, the sweep's
 * available_memory NULL but 900 in one row, two error texts. */
static const char schema15_costs[] =
    "INSERT INTO sweep_config (sweep_id, submesh_index, config_index, logical_a, logical_b,"
    " force_batch_dim) VALUES (3, 0, 1, 1, 2, NULL);"
    "INSERT INTO stage_error (id, text) VALUES (1, 'needs 5000 B'), (2, 'cuda: boom');"
    "INSERT INTO stage_cost_sweep (sweep_id, available_memory) VALUES (3, 1000);"
    "INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size,"
    " outvar_size, temp_buffer_size, available_memory, intermediate_size, initial_size,"
    " repeats, spread, status, error_id, apply_cost, wgrad_cost) VALUES"
    " (3, 1, 0.1, 100, 1, 2, 3, NULL, 4, 5, 1, 0.0, 'ok', NULL, 0.25, NULL),"
    " (3, 2, 0.75, 200, 1, 2, 3, NULL, 4, 5, 2, 0.125, 'ok', NULL, NULL, 0.5),"
    " (3, 3, 9e999, 5000, 1, 2, 3, NULL, 4, 5, 1, 0.0, 'oom', 1, NULL, NULL),"
    " (3, 4, 1e-300, 6000, 1, 2, 3, 900, 4, 5, 1, 0.0, 'failed', 2, NULL, NULL),"
    " (3, 5, 2.0, 0, 0, 0, 0, NULL, 0, 0, 1, 0.0, 'timeout', NULL, 0.0, 0.0),"
    " (3, 6, 0.0, 0, 0, 0, 0, NULL, 0, 0, 1, 0.0, 'skipped', 2, NULL, NULL);"
    "INSERT INTO stage_entry_block (sweep_id, submesh_index, start_layer, end_layer,"
    " config_block, costs) VALUES"
    " (3, 0, 0, 0, 0, x'000002000004000007000008'),"
    " (3, 0, 1, 1, 0, x'00000a00000c');";

static const char *schema15_file(const char *name)
{
    const char *p = tu_path(name);
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, 15), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, TU_SWEEP3_SQL), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, schema15_costs), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile"), 6);
    return p;
}

/* A schema-15 file migrates to 16 with every row as it was, read the same;
 * the cost row's INSERT then runs no trigger and builds no ephemeral table
 * (schema 15's: one Program, one OpenEphemeral). */
static void test_migrate_schema15(void)
{
    const char *p = schema15_file("schema15.db");
    Costdb *db = NULL;
    char *rows0, *view0, *read0, *rows1, *view1, *read1;
    int v = 0;
    CU_ASSERT_EQUAL(insert_opcodes(p, "Program"), 1);
    CU_ASSERT_EQUAL(insert_opcodes(p, "OpenEphemeral"), 1);
    rows0 = cost_rows(p);
    view0 = view_rows(p);
    read0 = read_all(p, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(rows0, "real:Inf"));
    CU_ASSERT_PTR_NOT_NULL(strstr(rows0, "real:0.10000000000000001"));
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0); /* migrates */
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version());
    costdb_close(&db);
    CU_ASSERT(v >= 16);
    rows1 = cost_rows(p);
    view1 = view_rows(p);
    read1 = read_all(p, 3);
    CU_ASSERT_STRING_EQUAL(rows1, rows0);
    CU_ASSERT_STRING_EQUAL(view1, view0);
    CU_ASSERT_STRING_EQUAL(read1, read0);
    CU_ASSERT_EQUAL(tu_count(p, "sqlite_master WHERE name = 'stage_cost'"
                                " AND sql LIKE '%) STRICT, WITHOUT ROWID'"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "sqlite_master WHERE type = 'trigger'"
                                " AND tbl_name = 'stage_cost'"), 0);
    CU_ASSERT_EQUAL(tu_count(p, "sqlite_master WHERE type = 'trigger'"
                                " AND tbl_name = 'stage_profile'"), 3);
    CU_ASSERT_EQUAL(tu_count(p, "sqlite_master WHERE name LIKE 'stage_cost_v%'"), 0);
    CU_ASSERT_EQUAL(insert_opcodes(p, "Program"), 0);
    CU_ASSERT_EQUAL(insert_opcodes(p, "OpenEphemeral"), 0);
    free(rows0);
    free(view0);
    free(read0);
    free(rows1);
    free(view1);
    free(read1);
}

/* A value of another type, or a status that is not one, is still refused on
 * INSERT and UPDATE, naming table and column, directly and through the
 * view; what the typeof triggers let through (a number in text SQLite
 * converts, every known status) still goes in. */
static void test_strict_refusals(void)
{
#define COST_INSERT(values)                                                                  \
    "INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size,"     \
    " outvar_size, temp_buffer_size, intermediate_size, initial_size, status) VALUES " values
    static const struct {
        const char *sql, *msg;
    } bad[] = {
        {COST_INSERT("(1, 99, 0.5, 'lots', 1, 2, 3, 4, 5, 'ok')"), "stage_cost.peak_memory"},
        {COST_INSERT("(1, 99, x'01', 1, 1, 2, 3, 4, 5, 'ok')"), "stage_cost.compute_cost"},
        {COST_INSERT("(1, 99, 0.5, 1.5, 1, 2, 3, 4, 5, 'ok')"), "stage_cost.peak_memory"},
        {COST_INSERT("(1, 99, 0.5, 1, 1, 2, 3, 4, 5, x'6f6b')"), "stage_cost.status"},
        {COST_INSERT("(1, 99, 0.5, 1, 1, 2, 3, 4, 5, 'OK')"), "CHECK constraint failed"},
        {COST_INSERT("(1, 99, 0.5, 1, 1, 2, 3, 4, 5, 5)"), "CHECK constraint failed"},
        {"UPDATE stage_cost SET repeats = 1.5", "stage_cost.repeats"},
        {"UPDATE stage_cost SET error_id = 'x'", "stage_cost.error_id"},
        {"UPDATE stage_cost SET wgrad_cost = 'w'", "stage_cost.wgrad_cost"},
        {"UPDATE stage_cost SET status = 'unknown'", "CHECK constraint failed"},
        {"UPDATE stage_profile SET peak_memory = 'lots'", "stage_cost.peak_memory"},
        {"UPDATE stage_profile SET status = 'bogus'", "CHECK constraint failed"},
    };
    static const char *const good[] = {
        COST_INSERT("(1, 99, '0.5', '2000', 1, 2, 3, 4, 5, 'ok')"),
        "UPDATE stage_cost SET status = 'oom' WHERE cost_id = 99",
        "UPDATE stage_cost SET status = 'failed' WHERE cost_id = 99",
        "UPDATE stage_cost SET status = 'timeout' WHERE cost_id = 99",
        "UPDATE stage_cost SET status = 'skipped', compute_cost = 3 WHERE cost_id = 99",
    };
    const char *p = make_db("strict.db");
    char *rows0 = cost_rows(p), *rows1;
    sqlite3 *h = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(p, &h), SQLITE_OK);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char *msg = NULL;
        CU_ASSERT_NOT_EQUAL(sqlite3_exec(h, bad[k].sql, NULL, NULL, &msg), SQLITE_OK);
        CU_ASSERT_PTR_NOT_NULL(msg && strstr(msg, bad[k].msg));
        if (!msg || !strstr(msg, bad[k].msg))
            fprintf(stderr, "case %zu: '%s'\n", k, msg ? msg : "(accepted)");
        sqlite3_free(msg);
    }
    sqlite3_close(h);
    rows1 = cost_rows(p);
    CU_ASSERT_STRING_EQUAL(rows1, rows0);
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++)
        CU_ASSERT_EQUAL(tu_exec(p, good[k]), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE cost_id = 99 AND status = 'skipped'"
                                " AND typeof(peak_memory) = 'integer' AND peak_memory = 2000"
                                " AND typeof(compute_cost) = 'real' AND compute_cost = 3"), 1);
    free(rows0);
    free(rows1);
#undef COST_INSERT
}

/* A schema-15 file with a cost row holding a value of another type
 * (written with the typeof triggers off) cannot migrate: the open is
 * refused naming the row, before anything is written, and the file stays
 * at schema 15 with its rows; a reader refuses the value as before. */
static void test_migrate_bad_row(void)
{
    static const struct {
        const char *sql, *msg;
    } cases[] = {
        {"UPDATE stage_cost SET peak_memory = 'lots' WHERE cost_id = 2",
         "table stage_cost, row (sweep_id=3, cost_id=2): column peak_memory holds text 'lots'"},
        {"UPDATE stage_cost SET compute_cost = x'01' WHERE cost_id = 5",
         "table stage_cost, row (sweep_id=3, cost_id=5): column compute_cost holds a blob"},
        {"UPDATE stage_cost SET available_memory = 2.5 WHERE cost_id = 4",
         "table stage_cost, row (sweep_id=3, cost_id=4): column available_memory holds a real"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *p = schema15_file("bad15.db");
        char err[1024];
        char *rows0, *rows1;
        Costdb *db = NULL;
        CostdbEntry *out = NULL;
        size_t n = 0;
        CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p, cases[k].sql), 0);
        rows0 = cost_rows(p);
        CU_ASSERT_EQUAL(costdb_open(p, 0, &db, err, sizeof err), COSTDB_ECORRUPT);
        CU_ASSERT_PTR_NULL(db);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, p));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[k].msg));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "STRICT"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "the file is left at schema 15"));
        if (!strstr(err, cases[k].msg))
            fprintf(stderr, "case %zu: '%s'\n", k, err);
        CU_ASSERT_EQUAL(tu_count(p, "pragma_user_version WHERE user_version = 15"), 1);
        CU_ASSERT_EQUAL(tu_count(p, "sqlite_master WHERE sql GLOB '*) STRICT*'"), 0);
        rows1 = cost_rows(p);
        CU_ASSERT_STRING_EQUAL(rows1, rows0);
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
        CU_ASSERT_EQUAL(costdb_entries_get(db, 3, &out, &n), COSTDB_ECORRUPT);
        CU_ASSERT_PTR_NULL(out);
        costdb_close(&db);
        free(rows0);
        free(rows1);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"a schema-14 file migrates and reads the same", test_migrate_schema14},
        {"approf's writer stores a text and the sweep's memory once", test_writer},
        {"a cost row naming no text or memory is refused, the file untouched",
         test_damaged_refs},
        {"a schema-15 file migrates to STRICT cost rows, every row the same",
         test_migrate_schema15},
        {"a value of another type or an unknown status is still refused",
         test_strict_refusals},
        {"a schema-15 file with a cost row of another type is refused, left as it was",
         test_migrate_bad_row},
    };
    return TU_RUN("costdb compact cost rows", tests);
}
