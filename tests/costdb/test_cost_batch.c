/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cost rows written several to an INSERT (costdb/entry_costs.c,
 * cdb_entry_costs_flush; issue 38, wrins): 100 entries of distinct costs
 * put at once run 4 INSERTs into stage_cost (32 + 32 + 32 + 4 rows; one a
 * row before), and the file holds the same rows, ids included, as the same
 * entries put one at a time (costs repeated, error texts, the sweep's
 * available_memory and another one, unknown apply and wgrad costs). A
 * batch that SQLite refuses leaves nothing, its error names the row's
 * single-row statement, and the next put numbers from the table again.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"
#include "testutil.h"

#define N_ENTRIES 100

static int64_t make_sweep(Costdb *db)
{
    static const CostdbSubmesh sm[] = {{0, 1, 2}};
    static const CostdbConfig cf[] = {{0, 0, 2, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 0}}};
    CostdbSweep s;
    tu_sweep(&s, "batch", 1, 2, 8, 2, 64);
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 1, cf, 1), 0);
    return s.id;
}

/* Entry i: layers (i / 2 .. 63), phase i % 2; every seventh repeats the
 * costs of the one two before it (86 distinct rows), every eleventh is oom
 * with one of two error texts. */
static void make_entries(CostdbEntry *e)
{
    memset(e, 0, N_ENTRIES * sizeof *e);
    for (int i = 0; i < N_ENTRIES; i++) {
        CostdbEntry *x = &e[i];
        int v = i % 7 == 6 ? i - 2 : i; /* the same phase */
        x->start_layer = i / 2;
        x->end_layer = 63;
        x->phase = i % 2 ? COSTDB_BWD : COSTDB_FWD;
        x->compute_cost = 0.001 * (v + 1);
        x->peak_memory = 1000 + v;
        x->invar_size = 10 + v;
        x->outvar_size = 20;
        x->temp_buffer_size = 30 + v;
        x->available_memory = v % 5 == 4 ? 7000 : 5000;
        x->intermediate_size = 40;
        x->initial_size = 50;
        x->repeats = 1;
        x->apply_cost = v % 3 ? 0.25 : -1;
        x->wgrad_cost = x->phase == COSTDB_BWD ? 0.0005 : -1;
        x->temp_activation_size = v % 4 ? 3 : 0;
        if (v % 11 == 10) {
            x->status = COSTDB_STATUS_OOM;
            snprintf(x->error, sizeof x->error, "out of memory %d", v % 2);
        }
    }
}

static int inserts; /* stage_cost INSERT statements run */

static int count_insert(unsigned type, void *ctx, void *p, void *x)
{
    const char *sql = sqlite3_sql((sqlite3_stmt *)p);
    (void)type, (void)ctx, (void)x;
    inserts += sql && !strncmp(sql, "INSERT INTO stage_cost ", 23);
    return 0;
}

/* Every row of stage_cost, stage_error and stage_entry as text, in key order. */
static char *dump(const char *path)
{
    static const char *const sql[] = {
        "SELECT * FROM stage_cost ORDER BY sweep_id, cost_id",
        "SELECT * FROM stage_error ORDER BY id",
        "SELECT * FROM stage_entry ORDER BY 1, 2, 3, 4, 5, 6",
        "SELECT * FROM stage_cost_sweep ORDER BY 1",
    };
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(cap, 1);
    sqlite3 *h = NULL;
    CU_ASSERT_FATAL(out != NULL);
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    for (size_t q = 0; q < sizeof sql / sizeof *sql; q++) {
        sqlite3_stmt *st = NULL;
        CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(h, sql[q], -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int k = 0; k < sqlite3_column_count(st); k++) {
                const char *t = (const char *)sqlite3_column_text(st, k);
                if (len + 64 + (t ? strlen(t) : 0) > cap)
                    CU_ASSERT_FATAL((out = realloc(out, cap *= 2)) != NULL);
                len += (size_t)snprintf(out + len, cap - len, "%d:%s|", sqlite3_column_type(st, k),
                                        t ? t : "");
            }
            out[len++] = '\n';
            out[len] = 0;
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return out;
}

/* A fresh file with the sweep and the entries put `step` at a time; its dump. */
static char *write_entries(const char *name, size_t step, int *statements)
{
    const char *path = tu_path(name);
    CostdbEntry e[N_ENTRIES];
    Costdb *db = NULL;
    int64_t id;
    char *text;
    make_entries(e);
    tu_unlink_db(path);
    CU_ASSERT_EQUAL_FATAL(costdb_open(path, 0, &db, NULL, 0), 0);
    id = make_sweep(db);
    inserts = 0;
    sqlite3_trace_v2(db->sql, SQLITE_TRACE_STMT, count_insert, NULL);
    CU_ASSERT_EQUAL_FATAL(costdb_begin(db), 0);
    for (size_t i = 0; i < N_ENTRIES; i += step)
        CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, id, &e[i], step, 0), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_commit(db), 0);
    *statements = inserts;
    costdb_close(&db);
    text = dump(path);
    tu_unlink_db(path);
    return text;
}

static void test_same_rows_fewer_statements(void)
{
    int batched = 0, single = 0;
    char *a = write_entries("batch_all.db", N_ENTRIES, &batched);
    char *b = write_entries("batch_one.db", 1, &single);
    /* 100 entries, 86 distinct costs: 32 + 32 + 16 + 4 + 2 rows */
    CU_ASSERT_EQUAL(batched, 5);
    CU_ASSERT_EQUAL(single, 86);
    CU_ASSERT_STRING_EQUAL(a, b);
    CU_ASSERT(strstr(a, "out of memory 1") != NULL);
    free(a);
    free(b);
}

static void test_refused_batch(void)
{
    const char *path = tu_path("batch_refused.db");
    CostdbEntry e[N_ENTRIES];
    Costdb *db = NULL;
    int64_t id;
    make_entries(e);
    tu_unlink_db(path);
    CU_ASSERT_EQUAL_FATAL(costdb_open(path, 0, &db, NULL, 0), 0);
    id = make_sweep(db);
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, id, e, 10, 0), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(path, "CREATE TRIGGER refuse_40 BEFORE INSERT ON stage_cost"
                                        " WHEN NEW.cost_id = 40"
                                        " BEGIN SELECT RAISE(ABORT, 'cost row 40 refused'); END"),
                          0);
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, &e[10], N_ENTRIES - 10, 0), COSTDB_ECONSTRAINT);
    CU_ASSERT(strstr(costdb_errmsg(db), "cost row 40 refused") != NULL);
    /* the statement of the refused row alone */
    CU_ASSERT(strstr(costdb_errmsg(db), "?, ?, ?, ?, ?, ?, ?)") != NULL);
    CU_ASSERT(strstr(costdb_errmsg(db), "), (?1") == NULL);
    CU_ASSERT_EQUAL(tu_count(path, "stage_cost"), 9); /* entry 6 repeats entry 4 */
    CU_ASSERT_EQUAL(tu_exec(path, "DROP TRIGGER refuse_40"), 0);
    /* numbered again from the table: 10, 11, ... */
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, id, &e[10], N_ENTRIES - 10, 0), 0);
    costdb_close(&db);
    {
        int n = 0;
        char *a = write_entries("batch_ref_one.db", 1, &n), *b = dump(path);
        CU_ASSERT_STRING_EQUAL(a, b);
        free(a);
        free(b);
    }
    tu_unlink_db(path);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"same rows, fewer statements", test_same_rows_fewer_statements},
        {"a refused batch", test_refused_batch},
    };
    return CUNIT_RUN("costdb_cost_batch", tests);
}
