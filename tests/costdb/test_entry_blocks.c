/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage entries in blocks (schema 14, schemas/README.md "stage_profile"):
 * a schema-13 file migrates, its entries packed into blocks (an entry whose
 * cost_id no slot holds stays a row), and reads the same through every
 * reader; a damaged block is refused with its table, row and column named,
 * and the file stays as it was.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_rows.h"
#include "testutil.h"

/* What the readers read of sweep 3: costdb_entries_get, then
 * costdb_stage_rows; NULL when one refuses. */
static char *read_all(const char *p, int flags)
{
    Costdb *db = NULL;
    CostdbEntry *e = NULL;
    size_t n = 0;
    TuText t = {0};
    char line[COSTDB_TEXT_MAX + 256];
    int rc;
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, flags, &db, NULL, 0), 0);
    rc = costdb_entries_get(db, 3, &e, &n);
    CU_ASSERT_EQUAL(rc, 0);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        snprintf(line, sizeof line, "%d %d %d %d %d %.17g %lld %d %d %s %.17g\n",
                 e[i].start_layer, e[i].end_layer, e[i].submesh_index, e[i].config_index,
                 (int)e[i].phase, e[i].compute_cost, (long long)e[i].peak_memory, e[i].reused,
                 (int)e[i].status, e[i].error, e[i].apply_cost);
        tu_text_add(&t, line);
    }
    free(e);
    if (rc == 0)
        CU_ASSERT_EQUAL(costdb_stage_rows(db, 3, tu_stage_row_text, &t), 0);
    costdb_close(&db);
    return t.s;
}

/* Sweep 3 of 4 layers with 70 configs on its submesh (two blocks of
 * configs), three cost rows (one with an id past what a slot holds) and
 * entries that use them, written as schema 13 stored them. */
static const char schema13_entries[] =
    "UPDATE sweep SET num_layers = 4 WHERE id = 3;"
    "INSERT INTO sweep_config (sweep_id, submesh_index, config_index, logical_a, logical_b,"
    " force_batch_dim) WITH RECURSIVE c(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM c"
    " WHERE k < 69) SELECT 3, 0, k, 2, 1, NULL FROM c;"
    "INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size,"
    " outvar_size, temp_buffer_size, available_memory, intermediate_size, initial_size,"
    " status, error, apply_cost, wgrad_cost) VALUES"
    " (3, 1, 0.5, 100, 1, 2, 3, 1000, 4, 5, 'ok', NULL, 0.25, NULL),"
    " (3, 2, 0.75, 200, 1, 2, 3, 1000, 4, 5, 'ok', NULL, NULL, 0.5),"
    " (3, 3, 0.125, 5000, 1, 2, 3, 1000, 4, 5, 'oom', 'needs 5000 B', NULL, NULL),"
    " (3, 9000000, 2.0, 300, 1, 2, 3, 1000, 4, 5, 'ok', NULL, 0.125, NULL);"
    "INSERT INTO stage_entry (sweep_id, start_layer, end_layer, submesh_index, config_index,"
    " phase, cost_id, reused) VALUES"
    " (3, 0, 0, 0, 0, 0, 1, 0), (3, 0, 0, 0, 0, 1, 2, 0),"
    " (3, 0, 0, 0, 63, 0, 1, 1), (3, 0, 0, 0, 64, 1, 3, 0), (3, 0, 0, 0, 69, 0, 2, 1),"
    " (3, 1, 3, 0, 5, 1, 9000000, 0), (3, 1, 3, 0, 6, 0, 1, 1), (3, 3, 3, 0, 1, 0, 3, 0);";

static void test_migrate_schema13(void)
{
    const char *p = tu_path("schema13.db");
    Costdb *db = NULL;
    char *before, *after;
    int v = 0;
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, 13), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, TU_SWEEP3_SQL), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, schema13_entries), 0);
    before = read_all(p, COSTDB_OPEN_READONLY); /* read as it is */
    CU_ASSERT_PTR_NOT_NULL_FATAL(before);
    CU_ASSERT_PTR_NOT_NULL(strstr(before, "1 3 0 5 1 2 ")); /* the row past a slot's ids */
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0); /* migrates */
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version());
    costdb_close(&db);
    CU_ASSERT(v >= 14);
    /* blocks of (range, 64 configs): (0,0) configs 0-63 and 64-127, (1,3), (3,3) */
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry_block"), 4);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry_block WHERE start_layer = 0 AND config_block = 1"
                                " AND length(costs) = 3 * (2 * 5 + 1)"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry_row WHERE cost_id = 9000000"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry_row"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry"), 8);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry WHERE config_index = 69 AND phase = 0"
                                " AND cost_id = 2 AND reused = 1"), 1);
    after = read_all(p, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(after);
    CU_ASSERT_STRING_EQUAL(after, before);
    /* writes through the views reach the blocks: a replaced entry moves
     * to a row, a deleted one leaves its slot empty */
    CU_ASSERT_EQUAL(tu_exec(p, "INSERT OR REPLACE INTO stage_entry (sweep_id, start_layer,"
                               " end_layer, submesh_index, config_index, phase, cost_id)"
                               " VALUES (3, 0, 0, 0, 63, 0, 2)"), 0);
    CU_ASSERT_NOT_EQUAL(tu_exec(p, "INSERT INTO stage_entry (sweep_id, start_layer, end_layer,"
                                   " submesh_index, config_index, phase, cost_id)"
                                   " VALUES (3, 0, 0, 0, 0, 1, 2)"), 0);
    CU_ASSERT_EQUAL(tu_exec(p, "DELETE FROM stage_profile WHERE config_index = 64"), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry"), 7);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry_row"), 2);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile WHERE config_index = 63 AND compute_cost = 0.75"
                                " AND reused = 0"), 1);
    free(before);
    free(after);
}

/* A sweep of 2 layers written by approf: its entries in blocks. */
static const char *make_db(const char *name)
{
    const char *p = tu_path(name);
    CostdbSweep s;
    CostdbEntry e[8];
    size_t n = 8;
    Costdb *db = tu_two_layer_sweep(p, "blocks", &s, e);
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, s.id, e, n, 0), 0);
    /* a key that is there already is refused, as a table's key was */
    CU_ASSERT_EQUAL(costdb_entries_put(db, s.id, e + 3, 1, 0), COSTDB_ECONSTRAINT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "UNIQUE constraint failed"));
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry_block"), 2);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry_row"), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile"), 8);
    return p;
}

static void test_damaged_blocks(void)
{
    static const struct {
        const char *sql, *msg;
    } cases[] = {
        /* not whole slots */
        {"UPDATE stage_entry_block SET costs = x'00000200' WHERE start_layer = 1",
         "column costs is not a blob of whole 3-byte slots"},
        /* longer than a block */
        {"UPDATE stage_entry_block SET costs = zeroblob(387) WHERE start_layer = 1",
         "column costs is not a blob"},
        /* text */
        {"UPDATE stage_entry_block SET costs = 'abc' WHERE start_layer = 1", "column costs"},
        /* a config block past COSTDB_MAX_INDEX */
        {"UPDATE stage_entry_block SET config_block = 5000 WHERE start_layer = 1",
         "column config_block = 5000 is outside"},
        /* a slot's cost_id that names no cost row (cost_id 77: 0x00009a) */
        {"UPDATE stage_entry_block SET costs = x'00009a' WHERE start_layer = 1",
         "its cost_id 77 names no row of table stage_cost"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *p = make_db("damaged.db");
        Costdb *db = NULL;
        CostdbEntry e, *out = NULL;
        size_t len0 = 0, len1 = 0, n = 0;
        char *file0, *file1;
        int rc;
        CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p, cases[k].sql), 0);
        file0 = tu_read(p, &len0);
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
        TuText t = {0};
        rc = costdb_stage_rows(db, 1, tu_stage_row_text, &t); /* rows before the damaged one */
        free(t.s);
        CU_ASSERT_EQUAL(rc, COSTDB_ECORRUPT);
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), p));
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), cases[k].msg));
        if (rc != COSTDB_ECORRUPT || !strstr(costdb_errmsg(db), cases[k].msg))
            fprintf(stderr, "case %zu: rc %d, '%s'\n", k, rc, costdb_errmsg(db));
        /* costdb_entries_get refuses it too (the last case through the view) */
        CU_ASSERT_EQUAL(costdb_entries_get(db, 1, &out, &n), COSTDB_ECORRUPT);
        CU_ASSERT_PTR_NULL(out);
        costdb_close(&db);
        /* a write into the damaged block (cases 0-2) is refused, and writes
         * nothing */
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
        memset(&e, 0, sizeof e);
        e.start_layer = e.end_layer = 1;
        e.config_index = 1;
        e.phase = COSTDB_FWD;
        e.compute_cost = 9.0;
        e.repeats = 1;
        e.apply_cost = e.wgrad_cost = -1;
        if (k < 3)
            CU_ASSERT_EQUAL(costdb_entries_put(db, 1, &e, 1, 1), COSTDB_ECORRUPT);
        costdb_close(&db);
        file1 = tu_read(p, &len1);
        CU_ASSERT_PTR_NOT_NULL(file0);
        CU_ASSERT_PTR_NOT_NULL(file1);
        if (k < 3)
            CU_ASSERT(file0 && file1 && len0 == len1 && !memcmp(file0, file1, len0));
        free(file0);
        free(file1);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"a schema-13 file migrates to blocks and reads the same", test_migrate_schema13},
        {"a damaged block is refused, the file untouched", test_damaged_blocks},
    };
    return TU_RUN("costdb entry blocks", tests);
}
