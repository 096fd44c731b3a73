/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Schema 17's activation-sized transient (stage_cost.temp_activation_size,
 * costdb/entry_costs.c and costdb/entry_transient.c): stored and read back
 * by costdb_entry_transient, NULL (0) when unknown or above
 * temp_buffer_size; two entries that differ only in it keep two cost rows;
 * the CHECK refuses 0 and a value above temp_buffer_size; a schema-16 file
 * migrates with every row as it was and the column NULL, and read without
 * migrating reads 0 (no activation-sized part known); costdb_entries_get
 * reads it back.
 */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_rows.h"
#include "testutil.h"

static int64_t make_sweep(Costdb *db)
{
    static const CostdbSubmesh sm[] = {{0, 1, 2}};
    static const CostdbConfig cf[] = {{0, 0, 2, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 0}}};
    CostdbSweep s;
    tu_sweep(&s, "transient", 1, 2, 8, 2, 2);
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 1, cf, 1), 0);
    return s.id;
}

static CostdbEntry entry(int layer, int phase, int64_t temp, int64_t act)
{
    CostdbEntry e;
    memset(&e, 0, sizeof e);
    e.start_layer = e.end_layer = layer;
    e.phase = (CostdbPhase)phase;
    e.compute_cost = 0.5;
    e.peak_memory = 1000 + temp;
    e.invar_size = 10;
    e.outvar_size = 20;
    e.temp_buffer_size = temp;
    e.available_memory = 5000;
    e.intermediate_size = 40;
    e.initial_size = 50;
    e.repeats = 1;
    e.apply_cost = 0.25;
    e.wgrad_cost = -1;
    e.temp_activation_size = act;
    return e;
}

typedef struct Seen {
    int n;
    int64_t act[2][2]; /* [layer][phase] */
} Seen;

static int seen_row(void *ctx, int start, int end, int submesh, int config, int phase,
                    const CostdbPhaseTransient *t)
{
    Seen *w = ctx;
    CU_ASSERT(start == end && start >= 0 && start < 2 && submesh == 0 && config == 0);
    w->act[start][phase] = t->temp_activation;
    w->n++;
    return 0;
}

static void test_stored(void)
{
    const char *p = tu_path("act.db");
    Costdb *db = NULL;
    CostdbPhaseTransient t[2];
    CostdbEntry e[4];
    tu_unlink_db(p);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    int64_t sw = make_sweep(db);
    e[0] = entry(0, 0, 300, 300);
    e[1] = entry(0, 1, 500, 420);
    e[2] = entry(1, 0, 300, 0);   /* unknown: NULL */
    e[3] = entry(1, 1, 500, 600); /* above temp_buffer_size: NULL */
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, sw, e, 4, 0), 0);
    CU_ASSERT_EQUAL(costdb_entry_transient(db, sw, 0, 0, 0, 0, t), 0);
    CU_ASSERT(t[0].peak == 1300 && t[0].temp == 300 && t[0].temp_activation == 300);
    CU_ASSERT(t[1].peak == 1500 && t[1].temp == 500 && t[1].temp_activation == 420);
    CU_ASSERT_EQUAL(costdb_entry_transient(db, sw, 1, 1, 0, 0, t), 0);
    CU_ASSERT(t[0].temp == 300 && t[0].temp_activation == 0);
    CU_ASSERT(t[1].temp == 500 && t[1].temp_activation == 0);
    /* no such entry */
    CU_ASSERT_EQUAL(costdb_entry_transient(db, sw, 0, 1, 0, 0, t), 1);
    CU_ASSERT(t[0].peak == 0 && t[1].peak == 0);
    /* costdb_entries_get reads it back (what approf merge copies) */
    CostdbEntry *got = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(costdb_entries_get(db, sw, &got, &n), 0);
    CU_ASSERT_EQUAL(n, 4);
    for (size_t k = 0; k < n; k++) {
        int64_t want = got[k].start_layer == 0 ? (got[k].phase ? 420 : 300) : 0;
        CU_ASSERT_EQUAL(got[k].temp_activation_size, want);
    }
    free(got);
    /* the whole sweep in one pass */
    Seen w = {0, {{-1, -1}, {-1, -1}}};
    CU_ASSERT_EQUAL(costdb_entry_transients(db, sw, seen_row, &w), 0);
    CU_ASSERT(w.n == 4 && w.act[0][0] == 300 && w.act[0][1] == 420 && w.act[1][0] == 0 &&
              w.act[1][1] == 0);
    costdb_close(&db);
    /* e[0] and e[2] differ in it alone: two rows; four in all */
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost"), 4);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE temp_activation_size IS NULL"), 2);
    /* the CHECK */
    CU_ASSERT_NOT_EQUAL(tu_exec(p, "UPDATE stage_cost SET temp_activation_size = 0"), 0);
    CU_ASSERT_NOT_EQUAL(tu_exec(p, "UPDATE stage_cost SET temp_activation_size ="
                                   " temp_buffer_size + 1"), 0);
    CU_ASSERT_NOT_EQUAL(tu_exec(p, "UPDATE stage_cost SET temp_activation_size = 'x'"), 0);
    CU_ASSERT_EQUAL(tu_exec(p, "UPDATE stage_cost SET temp_activation_size ="
                               " temp_buffer_size"), 0);
}

static const char schema16_costs[] =
    "INSERT INTO stage_cost_sweep (sweep_id, available_memory) VALUES (3, 1000);"
    "INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size,"
    " outvar_size, temp_buffer_size, available_memory, intermediate_size, initial_size,"
    " repeats, spread, status, error_id, apply_cost, wgrad_cost) VALUES"
    " (3, 1, 0.1, 100, 1, 2, 3, NULL, 4, 5, 1, 0.0, 'ok', NULL, 0.25, NULL),"
    " (3, 2, 0.75, 200, 1, 2, 30, NULL, 4, 5, 1, 0.0, 'ok', NULL, NULL, 0.5);"
    "INSERT INTO stage_entry_block (sweep_id, submesh_index, start_layer, end_layer,"
    " config_block, costs) VALUES (3, 0, 0, 0, 0, x'000002000004');";

static void test_schema16(void)
{
    const char *p = tu_path("schema16.db");
    Costdb *db = NULL;
    CostdbPhaseTransient t[2];
    int v = 0;
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, 16), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, TU_SWEEP3_SQL), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, schema16_costs), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile"), 2);
    /* read without migrating: no activation-sized part known */
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, 16);
    CU_ASSERT_EQUAL(costdb_entry_transient(db, 3, 0, 0, 0, 0, t), 0);
    CU_ASSERT(t[0].peak == 100 && t[0].temp == 3 && t[0].temp_activation == 0);
    CU_ASSERT(t[1].peak == 200 && t[1].temp == 30 && t[1].temp_activation == 0);
    costdb_close(&db);
    int64_t same0 = tu_count(p, "stage_cost WHERE sweep_id = 3 AND cost_id = 2 AND"
                                " compute_cost = 0.75 AND peak_memory = 200 AND"
                                " temp_buffer_size = 30 AND wgrad_cost = 0.5");
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0); /* migrates */
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, 17);
    CU_ASSERT_EQUAL(costdb_entry_transient(db, 3, 0, 0, 0, 0, t), 0);
    CU_ASSERT(t[0].temp == 3 && t[0].temp_activation == 0);
    CU_ASSERT(t[1].temp == 30 && t[1].temp_activation == 0);
    costdb_close(&db);
    CU_ASSERT_EQUAL(same0, 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE sweep_id = 3 AND cost_id = 2 AND"
                                " compute_cost = 0.75 AND peak_memory = 200 AND"
                                " temp_buffer_size = 30 AND wgrad_cost = 0.5"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE temp_activation_size IS NULL"), 2);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile"), 2);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"stored and read back", test_stored},
        {"a schema-16 file migrates, its split unknown", test_schema16},
    };
    return TU_RUN("costdb temp activation", tests);
}
