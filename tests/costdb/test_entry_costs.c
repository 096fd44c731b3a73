/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage costs stored once (schema 8, costdb/entry_costs.c): entries with
 * the same costs share one stage_cost row and read back field for field;
 * a cost the writer saw in a transaction that was rolled back, or in a
 * sweep that was deleted, is written again rather than referenced; the
 * stage_profile view takes INSERT, UPDATE and DELETE as schema 7's table
 * did, an UPDATE touching one entry only; a schema-7 file migrates with
 * every entry intact. Schema 12's weight-gradient seconds of a backward
 * (wgrad_cost): stored and read back on both read paths, NULL for a
 * forward or a value outside 0..compute_cost; a schema-11 file migrates
 * with its entries' split unknown (NULL), and read without migrating it
 * reads unknown too. The next cost_id the writer keeps within a transaction
 * is read again after a commit (another connection may have numbered a row
 * in between) and after a rollback.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_rows.h"
#include "testutil.h"

static int64_t make_sweep(Costdb *db, int layers)
{
    static const CostdbSubmesh sm[] = {{0, 1, 2}};
    static const CostdbConfig cf[] = {{0, 0, 2, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 0}},
                                      {0, 1, 1, 2, -1, {0, COSTDB_RECOMPUTE_NONE, 0}}};
    CostdbSweep s;
    tu_sweep(&s, "costs", 1, 2, 8, 2, layers);
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 1, cf, 2), 0);
    return s.id;
}

/* A fresh database at tu_path(name) with one sweep of `layers` layers. */
static Costdb *new_db(const char *name, int layers, const char **path, int64_t *sweep)
{
    Costdb *db = NULL;
    *path = tu_path(name);
    tu_unlink_db(*path);
    CU_ASSERT_EQUAL_FATAL(costdb_open(*path, 0, &db, NULL, 0), 0);
    *sweep = make_sweep(db, layers);
    return db;
}

static CostdbEntry entry(int i, int j, int c, int phase, double cost)
{
    CostdbEntry e;
    memset(&e, 0, sizeof e);
    e.start_layer = i;
    e.end_layer = j;
    e.config_index = c;
    e.phase = (CostdbPhase)phase;
    e.compute_cost = cost;
    e.peak_memory = 1000;
    e.invar_size = 10;
    e.outvar_size = 20;
    e.temp_buffer_size = 30;
    e.available_memory = 5000;
    e.intermediate_size = 40;
    e.initial_size = 50;
    e.repeats = 1;
    e.apply_cost = 0.25;
    return e;
}

static int same_entry(const CostdbEntry *a, const CostdbEntry *b)
{
    return a->start_layer == b->start_layer && a->end_layer == b->end_layer &&
           a->submesh_index == b->submesh_index && a->config_index == b->config_index &&
           a->phase == b->phase && !memcmp(&a->compute_cost, &b->compute_cost, sizeof(double)) &&
           a->peak_memory == b->peak_memory && a->invar_size == b->invar_size &&
           a->outvar_size == b->outvar_size && a->temp_buffer_size == b->temp_buffer_size &&
           a->available_memory == b->available_memory &&
           a->intermediate_size == b->intermediate_size && a->initial_size == b->initial_size &&
           a->repeats == b->repeats && a->spread == b->spread && a->reused == b->reused &&
           a->status == b->status && !strcmp(a->error, b->error) &&
           (a->apply_cost < 0 ? b->apply_cost < 0 : a->apply_cost == b->apply_cost);
}

/* Every entry of in[] (any order) is read back by costdb_entries_get. */
static void expect_entries(Costdb *db, int64_t sweep, const CostdbEntry *in, size_t n)
{
    CostdbEntry *out = NULL;
    size_t m = 0;
    CU_ASSERT_EQUAL_FATAL(costdb_entries_get(db, sweep, &out, &m), 0);
    CU_ASSERT_EQUAL(m, n);
    for (size_t i = 0; i < n; i++) {
        int found = 0;
        for (size_t k = 0; k < m && !found; k++)
            found = same_entry(&in[i], &out[k]);
        if (!found)
            fprintf(stderr, "\nentry %zu (%d, %d, c%d, ph%d) not read back\n", i,
                    in[i].start_layer, in[i].end_layer, in[i].config_index, (int)in[i].phase);
        CU_ASSERT(found);
    }
    free(out);
}

static void test_shared(void)
{
    const char *p;
    int64_t id;
    Costdb *db = new_db("shared.db", 4, &p, &id);
    CostdbEntry e[8];
    /* 8 entries, 5 distinct cost rows: equal cost columns share a row
     * (reused belongs to the entry; an infinite apply cost is stored as
     * NULL like an unknown one); a different error text or size does not */
    e[0] = entry(0, 0, 0, 0, 0.5);
    e[1] = entry(1, 1, 0, 0, 0.5);        /* shares e[0]'s */
    e[2] = entry(2, 2, 0, 0, 0.5);
    e[2].reused = 1;                      /* reused is the entry's: shares too */
    e[3] = entry(0, 0, 0, 1, 0.5);
    e[3].apply_cost = -1;                 /* NULL: its own */
    e[4] = entry(1, 1, 0, 1, 0.5);
    e[4].apply_cost = INFINITY;           /* stored as NULL: shares e[3]'s */
    e[5] = entry(0, 1, 0, 0, INFINITY);
    e[5].status = COSTDB_STATUS_OOM;
    snprintf(e[5].error, sizeof e[5].error, "needs 2 GiB");
    e[6] = e[5];
    e[6].start_layer = 1;
    e[6].end_layer = 2;
    snprintf(e[6].error, sizeof e[6].error, "needs 3 GiB"); /* its own */
    e[7] = entry(0, 0, 1, 0, 0.5);
    e[7].peak_memory = 1001;              /* its own */
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, id, e, 8, 0), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry"), 8);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost"), 5);
    e[4].apply_cost = -1; /* read back as unknown */
    expect_entries(db, id, e, 8);
    /* replacing entry (1, 1) with e[5]'s costs adds no cost row */
    e[1] = e[5];
    e[1].start_layer = e[1].end_layer = 1;
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, &e[1], 1, 1), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost"), 5);
    expect_entries(db, id, e, 8);
    costdb_close(&db);
}

/* A rolled-back cost row is written again, not referenced; so is one of a
 * deleted sweep whose id the next sweep takes. */
static void test_rollback_and_delete(void)
{
    const char *p;
    int64_t id, id2;
    Costdb *db = new_db("rollback.db", 2, &p, &id);
    CostdbEntry a = entry(0, 0, 0, 0, 0.75), b = entry(1, 1, 0, 0, 0.75);
    CU_ASSERT_EQUAL_FATAL(costdb_begin(db), 0);
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, &a, 1, 0), 0);
    CU_ASSERT_EQUAL(costdb_rollback(db), 0);
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, &b, 1, 0), 0);
    expect_entries(db, id, &b, 1);
    /* a batch that fails half way (a duplicate key) leaves nothing */
    {
        CostdbEntry two[2] = {entry(0, 0, 0, 0, 0.125), b};
        CU_ASSERT_EQUAL(costdb_entries_put(db, id, two, 2, 0), COSTDB_ECONSTRAINT);
        CU_ASSERT_EQUAL(costdb_entries_put(db, id, two, 1, 0), 0);
        expect_entries(db, id, two, 2);
    }
    /* the connection now knows b's costs (the rollback above made it forget
     * them, and this puts them back) */
    {
        CostdbEntry c = entry(1, 1, 1, 0, 0.75);
        CU_ASSERT_EQUAL(costdb_entries_put(db, id, &c, 1, 0), 0);
    }
    CU_ASSERT_EQUAL(costdb_sweep_delete(db, id), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost"), 0);
    id2 = make_sweep(db, 2);
    CU_ASSERT_EQUAL(id2, id); /* the id is given again */
    CU_ASSERT_EQUAL(costdb_entries_put(db, id2, &b, 1, 0), 0);
    expect_entries(db, id2, &b, 1);
    costdb_close(&db);
}

/* The next cost_id is kept while the writer's transaction is open: rows
 * of one transaction are numbered one after another; after a commit a cost
 * row another connection wrote in between is not numbered over, nor after a
 * rollback the rows it undid left out. */
static void test_next_id(void)
{
    const char *p;
    int64_t id;
    Costdb *db = new_db("next_id.db", 4, &p, &id);
    CostdbEntry e[4] = {entry(0, 0, 0, 0, 0.5), entry(1, 1, 0, 0, 0.625),
                        entry(2, 2, 0, 0, 0.75), entry(3, 3, 0, 0, 0.875)};
    CU_ASSERT_EQUAL_FATAL(costdb_begin(db), 0);
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, e, 2, 0), 0);
    CU_ASSERT_EQUAL(costdb_commit(db), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost"), 2);
    /* another connection's cost row, id 3 */
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, "INSERT INTO stage_profile (sweep_id, start_layer, end_layer,"
                                     " submesh_index, config_index, phase, compute_cost,"
                                     " peak_memory, invar_size, outvar_size, temp_buffer_size,"
                                     " available_memory, intermediate_size, initial_size)"
                                     " VALUES (1, 0, 1, 0, 1, 0, 9.0, 1, 2, 3, 4, 5, 6, 7)"), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost"), 3);
    CU_ASSERT_EQUAL_FATAL(costdb_begin(db), 0);
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, &e[2], 1, 0), 0); /* id 4, not 3 */
    CU_ASSERT_EQUAL(costdb_rollback(db), 0);
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, &e[2], 2, 0), 0); /* 4 and 5 again */
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost"), 5);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE cost_id BETWEEN 1 AND 5"), 5);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry"), 5);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry e JOIN stage_cost c USING (sweep_id, cost_id)"), 5);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry e JOIN stage_cost c USING (sweep_id, cost_id)"
                                " WHERE c.cost_id = 3 AND c.compute_cost = 9.0"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry e JOIN stage_cost c USING (sweep_id, cost_id)"
                                " WHERE c.cost_id = 5 AND c.compute_cost = 0.875"), 1);
    costdb_close(&db);
}

/* Writes through the view, as a user with the sqlite3 shell makes them. */
static void test_view_writes(void)
{
    const char *p;
    int64_t id;
    Costdb *db = new_db("view.db", 2, &p, &id);
    CostdbEntry e[3];
    e[0] = entry(0, 0, 0, 0, 0.5);
    e[1] = entry(1, 1, 0, 0, 0.5); /* shares e[0]'s cost row */
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, id, e, 2, 0), 0);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost"), 1);
    /* an UPDATE of one entry leaves the other sharing the row alone */
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, "UPDATE stage_profile SET compute_cost = 2.0,"
                                     " peak_memory = 7 WHERE start_layer = 1"), 0);
    e[1].compute_cost = 2.0;
    e[1].peak_memory = 7;
    /* an INSERT that leaves columns out takes schema 7's defaults */
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, "INSERT INTO stage_profile (sweep_id, start_layer, end_layer,"
                                     " submesh_index, config_index, phase, compute_cost,"
                                     " peak_memory, invar_size, outvar_size, temp_buffer_size,"
                                     " available_memory, intermediate_size, initial_size)"
                                     " VALUES (1, 0, 1, 0, 1, 1, 0.5, 1, 2, 3, 4, 5, 6, 7)"), 0);
    memset(&e[2], 0, sizeof e[2]);
    e[2].end_layer = 1;
    e[2].config_index = 1;
    e[2].phase = COSTDB_BWD;
    e[2].compute_cost = 0.5;
    e[2].peak_memory = 1;
    e[2].invar_size = 2;
    e[2].outvar_size = 3;
    e[2].temp_buffer_size = 4;
    e[2].available_memory = 5;
    e[2].intermediate_size = 6;
    e[2].initial_size = 7;
    e[2].repeats = 1;
    e[2].apply_cost = -1;
    /* still typed: text in a number column is refused through the view */
    CU_ASSERT_NOT_EQUAL(tu_exec(p, "UPDATE stage_profile SET peak_memory = 'lots'"), 0);
    /* a key that exists is refused, or replaced with OR REPLACE */
    CU_ASSERT_NOT_EQUAL(tu_exec(p, "INSERT INTO stage_profile SELECT * FROM stage_profile"
                                   " WHERE start_layer = 0 AND end_layer = 0"), 0);
    CU_ASSERT_EQUAL(tu_exec(p, "INSERT OR REPLACE INTO stage_profile SELECT * FROM stage_profile"
                               " WHERE start_layer = 0 AND end_layer = 0"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    expect_entries(db, id, e, 3);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_exec(p, "DELETE FROM stage_profile WHERE config_index = 1"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    expect_entries(db, id, e, 2);
    costdb_close(&db);
}

/* A schema-7 file (migrations 001-007 run by hand) with sweep 3, its
 * submesh and config, and no entries. */
static const char *schema7_file(const char *name)
{
    const char *p = tu_path(name);
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, 7), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, TU_SWEEP3_SQL), 0);
    return p;
}

/* A schema-7 file with entries migrates to schema 8 with each entry as it
 * was and equal costs shared; one with a value of a wrong type (written
 * with the typeof triggers off) is refused naming the row before it
 * migrates (schema 16's STRICT stage_cost cannot hold the value), and a
 * reader refuses the value as before. */
static void test_migrate_schema7(void)
{
    const char *p = schema7_file("schema7.db");
    Costdb *db = NULL;
    CostdbEntry e[4];
    int v = 0;
    CU_ASSERT_EQUAL_FATAL(tu_exec(p,
        "INSERT INTO stage_profile (sweep_id, start_layer, end_layer, submesh_index,"
        " config_index, phase, compute_cost, peak_memory, invar_size, outvar_size,"
        " temp_buffer_size, available_memory, intermediate_size, initial_size, repeats,"
        " spread, reused, status, error, apply_cost) VALUES"
        " (3, 0, 0, 0, 0, 0, 0.25, 10, 1, 2, 3, 4, 5, 6, 3, 0.5, 0, 'ok', NULL, 0.125),"
        " (3, 0, 0, 0, 0, 1, 0.25, 10, 1, 2, 3, 4, 5, 6, 3, 0.5, 1, 'ok', NULL, 0.125),"
        " (3, 0, 1, 0, 0, 0, 9e999, 99, 1, 2, 3, 4, 5, 6, 1, 0.0, 0, 'oom', 'too big', NULL),"
        " (3, 1, 1, 0, 0, 1, 0.0, 0, 0, 0, 0, 0, 0, 0, 1, 0.0, 0, 'skipped', 'n/a', 0.0);"), 0);
    memset(e, 0, sizeof e);
    for (int k = 0; k < 2; k++) {
        e[k] = entry(0, 0, 0, k, 0.25);
        e[k].peak_memory = 10;
        e[k].invar_size = 1;
        e[k].outvar_size = 2;
        e[k].temp_buffer_size = 3;
        e[k].available_memory = 4;
        e[k].intermediate_size = 5;
        e[k].initial_size = 6;
        e[k].repeats = 3;
        e[k].spread = 0.5;
        e[k].reused = k;
        e[k].apply_cost = 0.125;
    }
    e[2] = e[0];
    e[2].end_layer = 1;
    e[2].compute_cost = INFINITY;
    e[2].peak_memory = 99;
    e[2].repeats = 1;
    e[2].spread = 0;
    e[2].status = COSTDB_STATUS_OOM;
    snprintf(e[2].error, sizeof e[2].error, "too big");
    e[2].apply_cost = -1;
    memset(&e[3], 0, sizeof e[3]);
    e[3].start_layer = e[3].end_layer = 1;
    e[3].phase = COSTDB_BWD;
    e[3].repeats = 1;
    e[3].status = COSTDB_STATUS_SKIPPED;
    snprintf(e[3].error, sizeof e[3].error, "n/a");
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_NOCREATE, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version()); /* 8, and 9 (gemm_profile) after it */
    expect_entries(db, 3, e, 4);
    costdb_close(&db);
    /* the two phases of (0, 0) have equal costs (reused is the entry's):
     * three cost rows, numbered by their columns (compute_cost first) */
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE sweep_id = 3"), 3);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry e JOIN stage_cost c USING (sweep_id, cost_id)"), 4);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry WHERE start_layer = 0 AND end_layer = 0"
                               " AND cost_id = 2"), 2);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry WHERE start_layer = 0 AND end_layer = 1"
                               " AND cost_id = 3"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "sqlite_master WHERE name = 'stage_profile' AND type = 'view'"),
                    1);
    CU_ASSERT_EQUAL(tu_count(p, "sqlite_master WHERE name = 'stage_cost_copy'"), 0);

    p = schema7_file("schema7-lots.db");
    CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p,
        "INSERT INTO stage_profile (sweep_id, start_layer, end_layer, submesh_index,"
        " config_index, phase, compute_cost, peak_memory, invar_size, outvar_size,"
        " temp_buffer_size, available_memory, intermediate_size, initial_size) VALUES"
        " (3, 0, 0, 0, 0, 0, 0.5, 'lots', 1, 2, 3, 4, 5, 6),"
        " (3, 0, 0, 0, 0, 1, 0.5, 'lots', 1, 2, 3, 4, 5, 6)"), 0);
    /* Schema 16's STRICT stage_cost cannot hold the text: the file is
     * refused before any migration runs, naming the row, and stays at
     * schema 7; a reader still reads it and refuses the value as before. */
    {
        char err[1024];
        CostdbEntry *out = NULL;
        size_t n = 0;
        CU_ASSERT_EQUAL(costdb_open(p, COSTDB_OPEN_NOCREATE, &db, err, sizeof err),
                        COSTDB_ECORRUPT);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "table stage_profile, row (sweep_id=3,"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "peak_memory holds text 'lots'"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "the file is left at schema 7"));
        CU_ASSERT_EQUAL(tu_count(p, "pragma_user_version WHERE user_version = 7"), 1);
        CU_ASSERT_EQUAL(tu_count(p, "sqlite_master WHERE name = 'stage_cost'"), 0);
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
        CU_ASSERT_EQUAL(costdb_entries_get(db, 3, &out, &n), COSTDB_ECORRUPT);
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "peak_memory holds text 'lots'"));
        free(out);
    }
    costdb_close(&db);
}

static int count_row(void *ctx, const CostdbStageRow *r)
{
    (void)r;
    ++*(int *)ctx;
    return 0;
}

/* The solver's rows' wgrad_cost by start layer (0 or 1) and phase:
 * [2 start + phase]. */
static int wgrad_row(void *ctx, const CostdbStageRow *r)
{
    if (r->start_layer >= 0 && r->start_layer < 2)
        ((double *)ctx)[2 * r->start_layer + (r->phase == COSTDB_BWD)] = r->wgrad_cost;
    return 0;
}

/* wgrad_cost written, shared, and read back by both readers. */
static void test_wgrad(void)
{
    const char *p;
    int64_t sw;
    Costdb *db = new_db("wgrad.db", 2, &p, &sw);
    CostdbEntry e[4], *out = NULL;
    size_t n = 0;
    double w[4] = {0, 0, 0, 0};
    e[0] = entry(0, 0, 0, 0, 0.5);
    e[0].wgrad_cost = 0.2;          /* a forward has none: stored as NULL */
    e[1] = entry(0, 0, 0, 1, 0.5);
    e[1].wgrad_cost = 0.2;
    e[2] = entry(1, 1, 0, 1, 0.5);
    e[2].wgrad_cost = 0.75;         /* more than its backward: unknown */
    e[3] = entry(1, 1, 0, 0, 0.5);
    e[3].wgrad_cost = -1;
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, sw, e, 4, 0), 0);
    CU_ASSERT_EQUAL(costdb_entries_get(db, sw, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 4);
    for (size_t k = 0; k < n; k++) {
        int want = out[k].phase == COSTDB_BWD && out[k].start_layer == 0;
        CU_ASSERT_DOUBLE_EQUAL(out[k].wgrad_cost, want ? 0.2 : -1.0, 0);
    }
    free(out);
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost WHERE wgrad_cost IS NOT NULL"), 1);
    /* equal costs with and without the split are two rows */
    CU_ASSERT_EQUAL(tu_count(p, "stage_cost"), 2);
    CU_ASSERT_EQUAL(costdb_stage_rows(db, sw, wgrad_row, w), 0);
    CU_ASSERT_DOUBLE_EQUAL(w[0], -1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(w[1], 0.2, 0);
    CU_ASSERT_DOUBLE_EQUAL(w[2], -1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(w[3], -1.0, 0);
    costdb_close(&db);
    /* the schema's CHECK and typeof trigger */
    CU_ASSERT_NOT_EQUAL(tu_exec(p, "UPDATE stage_cost SET wgrad_cost = 'half'"), 0);
    CU_ASSERT_NOT_EQUAL(tu_exec(p, "UPDATE stage_cost SET wgrad_cost = 9.0"), 0);
    CU_ASSERT_NOT_EQUAL(tu_exec(p, "UPDATE stage_cost SET wgrad_cost = -0.5"), 0);
    CU_ASSERT_EQUAL(tu_exec(p, "UPDATE stage_cost SET wgrad_cost = 0.125"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_stage_rows(db, sw, wgrad_row, w), 0);
    CU_ASSERT_DOUBLE_EQUAL(w[1], 0.125, 0);
    CU_ASSERT_DOUBLE_EQUAL(w[3], 0.125, 0);
    costdb_close(&db);
}

/* A schema-11 file (migrations 001-011 run by hand) with one entry of
 * each phase: read without migrating, and migrated, its backward's split
 * is unknown; the migrated view takes writes with the column. */
static void test_migrate_schema11(void)
{
    const char *p = tu_path("schema11.db");
    Costdb *db = NULL;
    CostdbEntry *out = NULL;
    size_t n = 0;
    double w[4] = {0, 0, 0, 0};
    int v = 0, rows = 0;
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, 11), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p,
        TU_SWEEP3_SQL
        "INSERT INTO stage_profile (sweep_id, start_layer, end_layer, submesh_index,"
        " config_index, phase, compute_cost, peak_memory, invar_size, outvar_size,"
        " temp_buffer_size, available_memory, intermediate_size, initial_size, apply_cost)"
        " VALUES (3, 0, 1, 0, 0, 0, 0.25, 10, 1, 2, 3, 4, 5, 6, 0.125),"
        " (3, 0, 1, 0, 0, 1, 0.5, 10, 1, 2, 3, 4, 5, 6, 0.125);"), 0);
    /* read-only: not migrated, the split reads as unknown on both paths */
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, 11);
    CU_ASSERT_EQUAL(costdb_stage_rows(db, 3, count_row, &rows), 0);
    CU_ASSERT_EQUAL(rows, 2);
    CU_ASSERT_EQUAL(costdb_stage_rows(db, 3, wgrad_row, w), 0);
    CU_ASSERT_DOUBLE_EQUAL(w[0], -1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(w[1], -1.0, 0);
    CU_ASSERT_EQUAL(costdb_entries_get(db, 3, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_DOUBLE_EQUAL(out[1].wgrad_cost, -1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(out[1].compute_cost, 0.5, 0);
    free(out);
    costdb_close(&db);
    /* migrated: the latest version, every entry kept, the split NULL */
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_NOCREATE, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version());
    CU_ASSERT_EQUAL(costdb_entries_get(db, 3, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_DOUBLE_EQUAL(out[0].apply_cost, 0.125, 0);
    CU_ASSERT_DOUBLE_EQUAL(out[1].wgrad_cost, -1.0, 0);
    free(out);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile WHERE wgrad_cost IS NULL"), 2);
    /* the view made again takes writes with the new column */
    CU_ASSERT_EQUAL(tu_exec(p, "UPDATE stage_profile SET wgrad_cost = 0.25 WHERE phase = 1"), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile WHERE wgrad_cost = 0.25 AND phase = 1"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile"), 2);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_stage_rows(db, 3, wgrad_row, w), 0);
    CU_ASSERT_DOUBLE_EQUAL(w[1], 0.25, 0);
    costdb_close(&db);
}

/* A read-only open does not migrate: the solver's read of a schema-7 file
 * goes to its stage_profile table. */
static void test_read_schema7(void)
{
    const char *p = schema7_file("schema7-ro.db");
    Costdb *db = NULL;
    CostdbEntry *out = NULL;
    size_t n = 0;
    int rows = 0, v = 0;
    CU_ASSERT_EQUAL_FATAL(tu_exec(p,
        "INSERT INTO stage_profile (sweep_id, start_layer, end_layer, submesh_index,"
        " config_index, phase, compute_cost, peak_memory, invar_size, outvar_size,"
        " temp_buffer_size, available_memory, intermediate_size, initial_size, status) VALUES"
        " (3, 0, 0, 0, 0, 0, 0.5, 1, 1, 2, 3, 4, 5, 6, 'ok'),"
        " (3, 0, 0, 0, 0, 1, 0.5, 1, 1, 2, 3, 4, 5, 6, 'ok'),"
        " (3, 0, 1, 0, 0, 0, 9e999, 1, 1, 2, 3, 4, 5, 6, 'oom')"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, 7);
    CU_ASSERT_EQUAL(costdb_stage_rows(db, 3, count_row, &rows), 0);
    CU_ASSERT_EQUAL(rows, 2);
    CU_ASSERT_EQUAL(costdb_entries_get(db, 3, &out, &n), 0);
    CU_ASSERT_EQUAL(n, 3);
    free(out);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(p, "sqlite_master WHERE name = 'stage_cost'"), 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"equal costs share a row", test_shared},
        {"after a rollback or a deleted sweep", test_rollback_and_delete},
        {"the next cost id across transactions", test_next_id},
        {"writes through the stage_profile view", test_view_writes},
        {"a schema-7 file migrates", test_migrate_schema7},
        {"a schema-7 file read without migrating", test_read_schema7},
        {"a backward's weight-gradient seconds", test_wgrad},
        {"a schema-11 file migrates, its split unknown", test_migrate_schema11},
    };
    return TU_RUN("costdb entry costs", tests);
}
