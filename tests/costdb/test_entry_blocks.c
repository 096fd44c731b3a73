/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage entries in blocks (schema 14, schemas/README.md "stage_profile"):
 * a schema-13 file migrates, its entries packed into blocks (an entry whose
 * cost_id no slot holds stays a row), and reads the same through every
 * reader; a damaged block is refused with its table, row and column named,
 * and the file stays as it was.
 */
#include <CUnit/Basic.h>
#include <sqlite3.h>
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

/* A sweep of `layers` layers and `configs` configs on one submesh, its
 * entries not written yet. */
static Costdb *many_blocks_sweep(const char *p, int layers, int configs, int64_t *id)
{
    static const CostdbSubmesh sm[] = {{0, 1, 2}};
    CostdbConfig *cf = calloc((size_t)configs, sizeof *cf);
    CostdbSweep s;
    Costdb *db = NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(cf);
    for (int c = 0; c < configs; c++)
        cf[c] = (CostdbConfig){0, c, c % 2 ? 1 : 2, c % 2 ? 2 : 1, -1,
                               {c / 2 % 3, COSTDB_RECOMPUTE_NONE, 0}};
    tu_unlink_db(p);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    tu_sweep(&s, "many", 1, 2, 8, 2, layers);
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 1, cf, (size_t)configs), 0);
    free(cf);
    *id = s.id;
    return db;
}

/* Every row of the entry and cost tables, sorted. */
static char *entry_tables(const char *p)
{
    static const char *const sql[] = {
        "SELECT quote(sweep_id), submesh_index, start_layer, end_layer, config_block,"
        " hex(costs) FROM stage_entry_block ORDER BY 1, 2, 3, 4, 5",
        "SELECT * FROM stage_entry_row ORDER BY 1, 2, 3, 4, 5, 6",
        "SELECT sweep_id, cost_id, printf('%!.17g', compute_cost), peak_memory, invar_size,"
        " outvar_size, temp_buffer_size, available_memory, intermediate_size, initial_size,"
        " repeats, printf('%!.17g', spread), status, error_id, printf('%!.17g', apply_cost),"
        " printf('%!.17g', wgrad_cost) FROM stage_cost ORDER BY 1, 2",
        "SELECT * FROM stage_error ORDER BY 1",
    };
    TuText t = {0};
    sqlite3 *sq = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(p, &sq, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    for (size_t q = 0; q < sizeof sql / sizeof sql[0]; q++) {
        sqlite3_stmt *st = NULL;
        CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(sq, sql[q], -1, &st, NULL), SQLITE_OK);
        tu_text_add(&t, "--\n");
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const unsigned char *v = sqlite3_column_text(st, c);
                tu_text_add(&t, v ? (const char *)v : "NULL");
                tu_text_add(&t, c + 1 < sqlite3_column_count(st) ? "|" : "\n");
            }
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(sq);
    return t.s;
}

/* Entries of many blocks in an order that leaves a block and comes back
 * (layers fastest, then configs: each block visited again and again), some
 * of them sharing costs, one with an error. */
static CostdbEntry *scattered_entries(int layers, int configs, size_t *n)
{
    CostdbEntry *e = calloc((size_t)layers * (size_t)configs * 2, sizeof *e);
    size_t k = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    for (int c = 0; c < configs; c++)
        for (int i = 0; i < layers; i++)
            for (int ph = 0; ph < 2; ph++, k++) {
                e[k].start_layer = i;
                e[k].end_layer = i + (c % 3 == 1 && i + 1 < layers);
                e[k].config_index = (c * 37) % configs;
                e[k].phase = (CostdbPhase)ph;
                e[k].compute_cost = 0.25 * (1 + (c + i) % 5) + ph;
                e[k].peak_memory = 1000 + 8 * (c % 4);
                e[k].available_memory = 4000;
                e[k].repeats = 1;
                e[k].reused = (c + i) % 2;
                e[k].apply_cost = ph ? 0.125 : -1;
                e[k].wgrad_cost = -1;
                if (c == 5 && i == 1) {
                    e[k].status = COSTDB_STATUS_OOM;
                    snprintf(e[k].error, sizeof e[k].error, "needs %d B", 5000 + ph);
                }
            }
    *n = k;
    return e;
}

/* One call writes each block once (entry_blocks.c, "The blocks of one
 * call"): the rows are those of the entries written one call each, in the
 * same order; a key given twice in one call, or a config the sweep does not
 * have, is refused with nothing written; a call of more blocks than its
 * table holds writes them as it goes and still gives the same rows. */
static void test_one_call_many_blocks(void)
{
    const int layers = 4, configs = 140; /* configs in three blocks */
    const char *pa = tu_path("blocks_one_each.db"), *pb = tu_path("blocks_one_call.db");
    char pa_copy[512], *ra, *rb, *file0, *file1;
    size_t n = 0, len0 = 0, len1 = 0;
    int64_t ida, idb;
    CostdbEntry *e = scattered_entries(layers, configs, &n), bad;
    Costdb *a = many_blocks_sweep(pa, layers, configs, &ida);
    snprintf(pa_copy, sizeof pa_copy, "%s", pa);
    CU_ASSERT_EQUAL(costdb_begin(a), 0);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_EQUAL(costdb_entries_put(a, ida, e + i, 1, 0), 0);
    CU_ASSERT_EQUAL(costdb_commit(a), 0);
    costdb_close(&a);
    Costdb *b = many_blocks_sweep(pb, layers, configs, &idb);
    CU_ASSERT_EQUAL(ida, idb);
    CU_ASSERT_EQUAL(costdb_entries_put(b, idb, e, n, 0), 0);
    /* the same key twice in one call, and a config the sweep lacks */
    bad = e[0];
    bad.start_layer = bad.end_layer = 0;
    bad.config_index = configs - 1;
    CostdbEntry twice[3] = {bad, bad, bad};
    twice[0].config_index = 0;
    twice[0].end_layer = 3;
    twice[1].end_layer = twice[2].end_layer = 2;
    costdb_close(&b);
    file0 = tu_read(pb, &len0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(pb, 0, &b, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_entries_put(b, idb, twice, 3, 0), COSTDB_ECONSTRAINT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(b), "UNIQUE constraint failed"));
    twice[2].config_index = configs; /* no such config */
    twice[2].end_layer = 1;
    CU_ASSERT_EQUAL(costdb_entries_put(b, idb, twice + 1, 2, 0), COSTDB_ECONSTRAINT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(b), "FOREIGN KEY constraint failed"));
    costdb_close(&b);
    file1 = tu_read(pb, &len1);
    CU_ASSERT(file0 && file1 && len0 == len1 && !memcmp(file0, file1, len0));
    free(file0);
    free(file1);
    ra = entry_tables(pa_copy);
    rb = entry_tables(pb);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ra);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rb);
    CU_ASSERT_STRING_EQUAL(ra, rb);
    CU_ASSERT_EQUAL(tu_count(pb, "stage_entry"), (int64_t)n);
    CU_ASSERT_EQUAL(tu_count(pb, "stage_entry_row"), 0);
    free(ra);
    free(rb);
    free(e);

    /* more blocks than one call's table (4096): 100 layers, every range,
     * configs 0 and 1 of one block, config 1 after every config 0 */
    {
        const int L = 100;
        size_t m = 0;
        CostdbEntry *f = calloc((size_t)L * (L + 1), sizeof *f);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        for (int c = 0; c < 2; c++)
            for (int i = 0; i < L; i++)
                for (int j = i; j < L; j++, m++) {
                    f[m].start_layer = i;
                    f[m].end_layer = j;
                    f[m].config_index = c;
                    f[m].phase = (CostdbPhase)((i + j) % 2);
                    f[m].compute_cost = 0.5 * (1 + (j - i) % 7);
                    f[m].peak_memory = 1000;
                    f[m].available_memory = 4000;
                    f[m].repeats = 1;
                    f[m].apply_cost = f[m].wgrad_cost = -1;
                }
        a = many_blocks_sweep(pa, L, 2, &ida);
        CU_ASSERT_EQUAL(costdb_begin(a), 0);
        for (size_t i = 0; i < m; i++)
            CU_ASSERT_EQUAL(costdb_entries_put(a, ida, f + i, 1, 0), 0);
        CU_ASSERT_EQUAL(costdb_commit(a), 0);
        costdb_close(&a);
        b = many_blocks_sweep(pb, L, 2, &idb);
        CU_ASSERT_EQUAL(costdb_entries_put(b, idb, f, m, 0), 0);
        costdb_close(&b);
        ra = entry_tables(pa_copy);
        rb = entry_tables(pb);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ra);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rb);
        CU_ASSERT_STRING_EQUAL(ra, rb);
        CU_ASSERT_EQUAL(tu_count(pb, "stage_entry_block"), L * (L + 1) / 2);
        CU_ASSERT_EQUAL(tu_count(pb, "stage_entry"), (int64_t)m);
        free(ra);
        free(rb);
        free(f);
    }
}

/* The configs a connection found stay known (entry_blocks.c, "The configs
 * of one sweep") until something deletes one: another connection's commit
 * (PRAGMA data_version), a rollback, the sweep deleted. */
static void test_config_cache(void)
{
    const char *p = tu_path("config_cache.db");
    CostdbSweep s;
    CostdbEntry e[8], x;
    Costdb *db = tu_two_layer_sweep(p, "configs", &s, e);
    char del[160];
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, s.id, e, 4, 0), 0); /* layer 0, configs 0 1 */
    /* another connection deletes config 1: layer 1's entry of it is refused */
    snprintf(del, sizeof del, "DELETE FROM sweep_config WHERE sweep_id = %lld AND config_index = 1",
             (long long)s.id);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, del), 0);
    x = e[6]; /* layer 1, config 1 */
    CU_ASSERT_EQUAL(costdb_entries_put(db, s.id, &x, 1, 0), COSTDB_ECONSTRAINT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "FOREIGN KEY constraint failed"));
    /* in one transaction of this connection, as the sweep's writer runs */
    CU_ASSERT_EQUAL(costdb_begin(db), 0);
    CU_ASSERT_EQUAL(costdb_entries_put(db, s.id, e + 4, 2, 0), 0); /* layer 1, config 0 */
    CU_ASSERT_EQUAL(costdb_entries_put(db, s.id, &x, 1, 0), COSTDB_ECONSTRAINT);
    CU_ASSERT_EQUAL(costdb_rollback(db), 0);
    CU_ASSERT_EQUAL(costdb_entries_put(db, s.id, e + 4, 2, 0), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry"), 4); /* config 1's slots cleared by the delete */
    costdb_close(&db);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"a schema-13 file migrates to blocks and reads the same", test_migrate_schema13},
        {"a damaged block is refused, the file untouched", test_damaged_blocks},
        {"one call's entries of many blocks: the rows of one call each",
         test_one_call_many_blocks},
        {"a config deleted by another connection is refused again", test_config_cache},
    };
    return TU_RUN("costdb entry blocks", tests);
}
