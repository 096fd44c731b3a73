/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Databases as untrusted input (issue 14): a file holding a trigger, view,
 * table or index approf's migrations did not create is refused at open,
 * naming it, before anything in it runs; schema 4's typeof triggers keep
 * text out of numeric columns, and a row that has one anyway (written with
 * triggers off) is refused on read naming table, row and column; counts,
 * indices and sizes past the COSTDB_MAX_* limits are refused on read; costs
 * past COSTDB_MAX_SECONDS are refused on write and on read; a schema-2 file
 * migrates; a read-only open leaves no -wal/-shm files behind.
 */
#include <CUnit/Basic.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "costdb.h"
#include "costdb_rows.h"
#include "testutil.h"

#ifndef COSTDB_SCHEMA_DIR
#error "COSTDB_SCHEMA_DIR must name the schemas/ folder"
#endif

/* Runs SQL on a raw connection with CHECK constraints, foreign keys and
 * triggers off: what a hostile author can write with the sqlite3 shell. */
static int raw(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    int rc = sqlite3_open(path, &h);
    if (rc == SQLITE_OK)
        sqlite3_db_config(h, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(h, "PRAGMA ignore_check_constraints=ON; PRAGMA foreign_keys=OFF;", NULL,
                          NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(h, sql, NULL, NULL, NULL);
    sqlite3_close(h);
    return rc == SQLITE_OK ? 0 : -1;
}

/* A fresh database with one sweep (1x2, 2 layers, one config) and two
 * entries; returns the path. */
static const char *make_db(const char *name)
{
    static const CostdbSubmesh sm[] = {{0, 1, 2}};
    static const CostdbConfig cf[] = {{0, 0, 2, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 0}}};
    const char *p = tu_path(name);
    Costdb *db = NULL;
    CostdbSweep s;
    CostdbEntry e[2];
    tu_unlink_db(p);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "hostile");
    s.cluster_hosts = 1;
    s.cluster_gpus = 2;
    s.global_batch = 8;
    s.micro_batches = 2;
    s.num_layers = 2;
    snprintf(s.backend, sizeof s.backend, "model");
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 1, cf, 1), 0);
    memset(e, 0, sizeof e);
    for (int m = 0; m < 2; m++) {
        e[m].end_layer = 1;
        e[m].phase = (CostdbPhase)m;
        e[m].compute_cost = 0.5;
        e[m].peak_memory = 1000;
        e[m].repeats = 1;
        e[m].apply_cost = -1.0;
    }
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, s.id, e, 2, 0), 0);
    costdb_close(&db);
    return p;
}

static int open_err(const char *p, int flags, char *err, size_t len)
{
    Costdb *db = NULL;
    int rc = costdb_open(p, flags, &db, err, len);
    costdb_close(&db);
    return rc;
}

static void test_planted_objects(void)
{
    static const struct {
        const char *sql, *name;
    } planted[] = {
        {"CREATE TRIGGER x1000 AFTER INSERT ON stage_cost BEGIN UPDATE stage_cost SET"
         " compute_cost = compute_cost * 1000; END;", "trigger 'x1000' on stage_cost"},
        {"CREATE TRIGGER halve INSTEAD OF INSERT ON stage_profile BEGIN SELECT 1; END;",
         "trigger 'halve' on stage_profile"},
        {"CREATE TRIGGER wipe BEFORE INSERT ON plan BEGIN DELETE FROM plan_stage; END;",
         "trigger 'wipe' on plan"},
        {"CREATE VIEW v AS SELECT 1;", "view 'v'"},
        {"CREATE TABLE extra (x);", "table 'extra'"},
        {"CREATE INDEX by_cost ON stage_cost(compute_cost);", "index 'by_cost' on stage_cost"},
        {"DROP TRIGGER stage_profile_update;", "missing or altered trigger 'stage_profile_update'"},
        {"DROP TRIGGER strict_plan_insert;", "missing or altered trigger 'strict_plan_insert'"},
    };
    for (size_t k = 0; k < sizeof planted / sizeof planted[0]; k++) {
        char err[2048] = "";
        const char *p = make_db("planted.db");
        CU_ASSERT_EQUAL_FATAL(raw(p, planted[k].sql), 0);
        CU_ASSERT_EQUAL(open_err(p, 0, err, sizeof err), COSTDB_EUNTRUSTED);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, planted[k].name));
        CU_ASSERT_EQUAL(open_err(p, COSTDB_OPEN_READONLY, err, sizeof err), COSTDB_EUNTRUSTED);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "did not create"));
    }
    /* ANALYZE's statistics are SQLite's own: still an approf database. */
    {
        const char *p = make_db("analyzed.db");
        CU_ASSERT_EQUAL_FATAL(raw(p, "ANALYZE;"), 0);
        CU_ASSERT_EQUAL(open_err(p, 0, NULL, 0), 0);
    }
}

/* Schema 4's triggers refuse text in numeric columns on write. */
static void test_typeof_triggers(void)
{
    const char *p = make_db("typeof.db");
    sqlite3 *h = NULL;
    char *msg = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(p, &h), SQLITE_OK);
    CU_ASSERT_NOT_EQUAL(sqlite3_exec(h, "UPDATE stage_profile SET peak_memory = 'lots'", NULL,
                                     NULL, &msg), SQLITE_OK);
    CU_ASSERT_PTR_NOT_NULL(msg && strstr(msg, "stage_cost.peak_memory"));
    sqlite3_free(msg);
    msg = NULL;
    CU_ASSERT_NOT_EQUAL(sqlite3_exec(h, "UPDATE sweep SET cluster_hosts = x'01'", NULL, NULL,
                                     &msg), SQLITE_OK);
    CU_ASSERT_PTR_NOT_NULL(msg && strstr(msg, "sweep.cluster_hosts"));
    sqlite3_free(msg);
    /* what affinity converts is fine */
    CU_ASSERT_EQUAL(sqlite3_exec(h, "UPDATE stage_profile SET peak_memory = '2000'", NULL, NULL,
                                 NULL), SQLITE_OK);
    sqlite3_close(h);
}

/* Rows with a wrong type, written with triggers off, are refused on read. */
static void test_wrong_types_on_read(void)
{
    Costdb *db = NULL;
    CostdbEntry *e = NULL;
    CostdbSweep s;
    size_t n = 0;
    const char *p = make_db("types.db");
    CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p, "UPDATE stage_profile SET peak_memory = 'lots'"
                                          " WHERE phase = 1"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_entries_get(db, 1, &e, &n), COSTDB_ECORRUPT);
    CU_ASSERT_PTR_NULL(e);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "table stage_entry, row (start_layer=0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "its row in table stage_cost"));
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "peak_memory"));
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "phase=1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "'lots'"));
    costdb_close(&db);

    p = make_db("types2.db");
    CU_ASSERT_EQUAL_FATAL(raw(p, "UPDATE sweep SET micro_batches = 'four'"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_sweep_get(db, 1, &s), COSTDB_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "micro_batches"));
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "id=1"));
    costdb_close(&db);

    /* text with a NUL byte in a TEXT column ('ok\0garbage') */
    p = make_db("types3.db");
    CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p, "UPDATE stage_profile SET status ="
                                             " CAST(x'6f6b0067617262616765' AS TEXT)"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_entries_get(db, 1, &e, &n), COSTDB_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "NUL"));
    costdb_close(&db);
}

/* Counts, indices and sizes past the documented limits. */
static int count_row(void *ctx, const CostdbStageRow *r)
{
    (void)r;
    ++*(size_t *)ctx;
    return 0;
}

static void test_bounds(void)
{
    static const struct {
        const char *sql, *field;
        int which; /* 0 sweep_get, 1 entries, 2 submeshes, 3 configs, 4 stage rows */
    } cases[] = {
        {"UPDATE sweep SET cluster_hosts = 3, cluster_gpus = 1073741824", "cluster_gpus", 0},
        {"UPDATE sweep SET cluster_hosts = 100000, cluster_gpus = 100000", "COSTDB_MAX_DEVICES", 0},
        {"UPDATE sweep SET cluster_hosts = 4294967297", "cluster_hosts", 0},
        {"UPDATE sweep SET num_layers = 2147483647", "num_layers", 0},
        {"UPDATE stage_profile SET end_layer = 2147483647 WHERE phase = 0", "end_layer", 1},
        {"UPDATE stage_profile SET start_layer = -1 WHERE phase = 0", "start_layer", 1},
        {"UPDATE stage_profile SET peak_memory = 4611686018427387904", "peak_memory", 1},
        {"UPDATE stage_profile SET compute_cost = 5e307", "COSTDB_MAX_SECONDS", 1},
        {"UPDATE stage_profile SET submesh_index = 70000", "submesh_index", 1},
        {"UPDATE sweep_submesh SET gpus_per_host = 1073741824", "gpus_per_host", 2},
        {"UPDATE sweep_config SET logical_a = -2", "logical_a", 3},
        {"UPDATE sweep_config SET zero = 7", "zero", 3},
        /* shard text as approf writes it, K/N; ' +0/2' passed merge's strtol */
        {"UPDATE sweep SET shard = ' +0/2'", "column shard = ' +0/2' is not K/N", 0},
        {"UPDATE sweep SET shard = '2/2'", "column shard = '2/2'", 0},
        {"UPDATE sweep SET shard = '0/2x'", "column shard", 0},
        /* layer indices against the sweep's layers (merge accepted them) */
        {"UPDATE stage_entry SET end_layer = 5 WHERE phase = 0",
         "column end_layer = 5 is past the sweep's 2 layers", 1},
        {"UPDATE stage_entry SET start_layer = 3, end_layer = 3 WHERE phase = 1",
         "column end_layer = 3 is past the sweep's 2 layers", 4},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *p = make_db("bounds.db");
        Costdb *db = NULL;
        CostdbSweep s;
        void *arr = NULL;
        size_t n = 0;
        int rc = 0;
        CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p, cases[k].sql), 0);
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
        switch (cases[k].which) {
        case 0: rc = costdb_sweep_get(db, 1, &s); break;
        case 1: rc = costdb_entries_get(db, 1, (CostdbEntry **)&arr, &n); break;
        case 2: rc = costdb_sweep_submeshes(db, 1, (CostdbSubmesh **)&arr, &n); break;
        case 4: rc = costdb_stage_rows(db, 1, count_row, &n); break;
        default: rc = costdb_sweep_configs(db, 1, (CostdbConfig **)&arr, &n); break;
        }
        CU_ASSERT_EQUAL(rc, COSTDB_ECORRUPT);
        CU_ASSERT_PTR_NULL(arr);
        if (!strstr(costdb_errmsg(db), cases[k].field))
            fprintf(stderr, "case %zu: %s\n", k, costdb_errmsg(db));
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), cases[k].field));
        free(arr);
        costdb_close(&db);
    }
}

/* A plan stage on a mesh of 2^30 GPUs (apreport's crash, exit 139). */
static void test_plan_bounds(void)
{
    const char *p = make_db("plan.db");
    Costdb *db = NULL;
    CostdbPlan plan;
    CostdbPlanStage st, *got = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    memset(&plan, 0, sizeof plan);
    memset(&st, 0, sizeof st);
    plan.sweep_id = 1;
    snprintf(plan.kind, sizeof plan.kind, "auto");
    snprintf(plan.objective, sizeof plan.objective, "training");
    plan.micro_batches = 2;
    plan.cost = 1.0;
    plan.feasible = 1;
    st.end_layer = 1;
    st.submesh_hosts = 1;
    st.submesh_gpus = 2;
    st.logical_a = 2;
    st.logical_b = 1;
    st.submesh_index = st.config_index = st.force_batch_dim = -1;
    CU_ASSERT_EQUAL_FATAL(costdb_plan_put(db, &plan, &st, 1), 0);
    costdb_close(&db);
    CU_ASSERT_EQUAL_FATAL(raw(p, "UPDATE plan_stage SET submesh_gpus = 1073741824"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_plan_get(db, plan.id, &plan, &got, &n), COSTDB_ECORRUPT);
    CU_ASSERT_PTR_NULL(got);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "submesh_gpus"));
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "plan_stage"));
    costdb_close(&db);
}

/* A plan's stages are numbered 0..n-1, and a resharding task names two of
 * them: a gap, a duplicate or a task past the last stage is refused on
 * read, naming table, row and column (apreport read past its stage array:
 * exit 139, ASan in find_tensor). The same rules hold on write. */
static void test_plan_indices(void)
{
    static const struct {
        const char *sql, *want[3];
        int tasks; /* 0: costdb_plan_get refuses, 1: costdb_resharding_get */
    } cases[] = {
        {"DELETE FROM plan_stage WHERE stage_index = 0", {"plan_stage", "stage_index = 1", "0"}, 0},
        {"UPDATE plan_stage SET stage_index = 5 WHERE stage_index = 1",
         {"plan_stage", "stage_index = 5", "1"}, 0},
        {"UPDATE resharding_task SET dst_stage = 60000", {"resharding_task", "task_index=0",
         "dst_stage = 60000"}, 1},
        {"UPDATE resharding_task SET dst_stage = 2", {"resharding_task", "dst_stage = 2",
         "2 stages"}, 1},
        {"UPDATE resharding_task SET src_stage = 7", {"resharding_task", "src_stage = 7",
         "2 stages"}, 1},
        {"DELETE FROM plan_stage WHERE stage_index = 1", {"resharding_task", "dst_stage = 1",
         "1 stage"}, 1},
        /* layers: within the sweep's and consecutive (dp_result.txt printed
         * every layer of every stage: 65536 per row) */
        {"UPDATE plan_stage SET end_layer = 65535 WHERE stage_index = 1",
         {"plan_stage", "column end_layer = 65535", "past the sweep's 2 layers"}, 0},
        {"UPDATE plan_stage SET start_layer = 0 WHERE stage_index = 1",
         {"plan_stage", "column start_layer = 0", "1 was expected"}, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *p = make_db("indices.db");
        Costdb *db = NULL;
        CostdbPlan plan;
        CostdbPlanStage st[2], *got = NULL;
        CostdbReshardingTask t, *tasks = NULL;
        size_t n = 0;
        int rc;
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
        memset(&plan, 0, sizeof plan);
        memset(st, 0, sizeof st);
        memset(&t, 0, sizeof t);
        plan.sweep_id = 1;
        snprintf(plan.kind, sizeof plan.kind, "auto");
        snprintf(plan.objective, sizeof plan.objective, "training");
        plan.micro_batches = 2;
        plan.cost = 1.0;
        plan.feasible = 1;
        for (int i = 0; i < 2; i++) {
            st[i].stage_index = i;
            st[i].start_layer = st[i].end_layer = i;
            st[i].submesh_hosts = st[i].submesh_gpus = 1;
            st[i].logical_a = st[i].logical_b = 1;
            st[i].submesh_index = st[i].config_index = st[i].force_batch_dim = -1;
        }
        CU_ASSERT_EQUAL_FATAL(costdb_plan_put(db, &plan, st, 2), 0);
        t.dst_stage = 1;
        snprintf(t.tensor_name, sizeof t.tensor_name, "x");
        snprintf(t.strategy, sizeof t.strategy, "send-recv");
        CU_ASSERT_EQUAL_FATAL(costdb_resharding_put(db, plan.id, &t, 1), 0);
        costdb_close(&db);
        CU_ASSERT_EQUAL_FATAL(raw(p, cases[k].sql), 0);
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
        rc = costdb_plan_get(db, plan.id, &plan, &got, &n);
        if (cases[k].tasks) {
            CU_ASSERT_EQUAL(rc, 0);
            free(got);
            got = NULL;
            rc = costdb_resharding_get(db, plan.id, &tasks, &n);
        }
        CU_ASSERT_EQUAL(rc, COSTDB_ECORRUPT);
        CU_ASSERT_PTR_NULL(got);
        CU_ASSERT_PTR_NULL(tasks);
        for (int w = 0; w < 3; w++) {
            if (!strstr(costdb_errmsg(db), cases[k].want[w]))
                fprintf(stderr, "case %zu: '%s' not in: %s\n", k, cases[k].want[w],
                        costdb_errmsg(db));
            CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), cases[k].want[w]));
        }
        free(got);
        free(tasks);
        costdb_close(&db);
    }
    /* on write: stages out of order, a task past the plan's stages */
    {
        const char *p = make_db("indices_put.db");
        Costdb *db = NULL;
        CostdbPlan plan;
        CostdbPlanStage st;
        CostdbReshardingTask t;
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
        memset(&plan, 0, sizeof plan);
        memset(&st, 0, sizeof st);
        memset(&t, 0, sizeof t);
        plan.sweep_id = 1;
        snprintf(plan.kind, sizeof plan.kind, "auto");
        snprintf(plan.objective, sizeof plan.objective, "training");
        plan.micro_batches = 2;
        plan.cost = 1.0;
        st.stage_index = 1;
        st.submesh_hosts = st.submesh_gpus = st.logical_a = st.logical_b = 1;
        st.submesh_index = st.config_index = st.force_batch_dim = -1;
        CU_ASSERT_EQUAL(costdb_plan_put(db, &plan, &st, 1), COSTDB_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "stage_index"));
        st.stage_index = 0;
        st.end_layer = 2; /* the sweep has 2 layers */
        CU_ASSERT_EQUAL(costdb_plan_put(db, &plan, &st, 1), COSTDB_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "end_layer"));
        st.end_layer = 1;
        CU_ASSERT_EQUAL_FATAL(costdb_plan_put(db, &plan, &st, 1), 0);
        t.dst_stage = 1;
        CU_ASSERT_EQUAL(costdb_resharding_put(db, plan.id, &t, 1), COSTDB_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "dst_stage"));
        costdb_close(&db);
    }
}

/* Costs past COSTDB_MAX_SECONDS are refused on write; inf stays a failed entry. */
static void test_cost_limits_on_write(void)
{
    const char *p = make_db("costs.db");
    Costdb *db = NULL;
    CostdbEntry e;
    memset(&e, 0, sizeof e);
    e.end_layer = 1;
    e.phase = COSTDB_FWD;
    e.apply_cost = -1.0;
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    e.compute_cost = 5e307;
    CU_ASSERT_EQUAL(costdb_entries_put(db, 1, &e, 1, 1), COSTDB_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "COSTDB_MAX_SECONDS"));
    e.compute_cost = 0.5;
    e.peak_memory = INT64_MAX / 2;
    CU_ASSERT_EQUAL(costdb_entries_put(db, 1, &e, 1, 1), COSTDB_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "COSTDB_MAX_BYTES"));
    e.peak_memory = 0;
    e.end_layer = COSTDB_MAX_LAYERS;
    CU_ASSERT_EQUAL(costdb_entries_put(db, 1, &e, 1, 1), COSTDB_EINVAL);
    e.end_layer = 1;
    e.compute_cost = 1.0 / 0.0;
    e.status = COSTDB_STATUS_OOM;
    CU_ASSERT_EQUAL(costdb_entries_put(db, 1, &e, 1, 1), 0);
    costdb_close(&db);
}

/* A schema-2 file (001 + 002 only) migrates to the current schema and
 * keeps its rows; a read-only open of it is refused with a hint. */
static void test_migrate_schema2(void)
{
    const char *p = tu_path("schema2.db");
    char *a = tu_read(COSTDB_SCHEMA_DIR "/001_initial.sql", NULL);
    char *b = tu_read(COSTDB_SCHEMA_DIR "/002_variants.sql", NULL);
    Costdb *db = NULL;
    CostdbEntry *e = NULL;
    char err[1024];
    size_t n = 0;
    int v = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    tu_unlink_db(p);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, a), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, b), 0);
    free(a);
    free(b);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p,
        "PRAGMA user_version = 2;"
        "INSERT INTO sweep (id, cluster_hosts, cluster_gpus, global_batch, micro_batches,"
        " num_layers, layer_option, submesh_space, logical_space, profile_mode, dtype,"
        " backend, tool_version, started_at, status) VALUES (1, 1, 2, 8, 2, 2, 'manual',"
        " 'all', 'all', 'composition', 'f32', 'model', '0.1', '2025-01-01T00:00:00Z',"
        " 'complete');"
        "INSERT INTO sweep_submesh VALUES (1, 0, 1, 2);"
        "INSERT INTO sweep_config (sweep_id, submesh_index, config_index, logical_a, logical_b,"
        " force_batch_dim) VALUES (1, 0, 0, 2, 1, 0);"
        "INSERT INTO stage_profile (sweep_id, start_layer, end_layer, submesh_index,"
        " config_index, phase, compute_cost, peak_memory, invar_size, outvar_size,"
        " temp_buffer_size, available_memory, intermediate_size, initial_size, apply_cost)"
        " VALUES (1, 0, 1, 0, 0, 0, 0.25, 10, 1, 2, 3, 4, 5, 6, 0.125);"), 0);
    CU_ASSERT_EQUAL(open_err(p, COSTDB_OPEN_READONLY, err, sizeof err), COSTDB_EREADONLY);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "schema 2 needs an upgrade"));
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_NOCREATE, &db, err, sizeof err), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version());
    CU_ASSERT_EQUAL(costdb_entries_get(db, 1, &e, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(e[0].peak_memory, 10);
    CU_ASSERT_EQUAL(e[0].apply_cost, 0.125);
    free(e);
    costdb_close(&db);
    /* 15 tables of schema 4 (less stage_profile, a view since schema 8),
     * sweep_owner of schema 5, placement_tail of schema 7, stage_entry of
     * schema 8, gemm_profile of schema 9, stage_error and stage_cost_sweep
     * of schema 15, insert and update each, and placement_set's references
     * of schema 7; stage_cost is a STRICT table since schema 16, without
     * its triggers */
    CU_ASSERT_EQUAL(tu_count(p, "sqlite_master WHERE type = 'trigger' AND name LIKE 'strict_%'"),
                    2 * 20 + 2);
    CU_ASSERT_EQUAL(tu_count(p, "sqlite_master WHERE name = 'stage_cost'"
                                " AND sql LIKE '%) STRICT, WITHOUT ROWID'"), 1);
    /* and the migrated file refuses text in a number column */
    CU_ASSERT_NOT_EQUAL(tu_exec(p, "UPDATE stage_profile SET peak_memory = 'lots'"), 0);
    /* a schema-2 file with a planted trigger is refused before migrating */
    CU_ASSERT_EQUAL_FATAL(raw(p, "PRAGMA user_version = 2; DROP TRIGGER strict_plan_insert;"), 0);
    CU_ASSERT_EQUAL(open_err(p, 0, err, sizeof err), COSTDB_EUNTRUSTED);
}

/* A reader's open leaves no -wal/-shm files behind and never writes. */
static void test_readonly_leaves_nothing(void)
{
    const char *p = make_db("ro.db");
    char side[1024];
    Costdb *db = NULL;
    CostdbEntry *e = NULL;
    size_t n = 0;
    struct stat before, after;
    CU_ASSERT_EQUAL_FATAL(stat(p, &before), 0);
    for (int flags = COSTDB_OPEN_READONLY; flags <= (COSTDB_OPEN_READONLY | COSTDB_OPEN_IMMUTABLE);
         flags |= COSTDB_OPEN_IMMUTABLE) {
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, flags, &db, NULL, 0), 0);
        CU_ASSERT_EQUAL(costdb_entries_get(db, 1, &e, &n), 0);
        CU_ASSERT_EQUAL(n, 2);
        free(e);
        e = NULL;
        costdb_close(&db);
        /* A plain read-only open in a writable directory may leave the
         * (empty) -wal/-shm a WAL reader needs; an immutable one none. */
        snprintf(side, sizeof side, "%s-wal", p);
        CU_ASSERT(!tu_exists(side) || flags == COSTDB_OPEN_READONLY);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", p);
        CU_ASSERT(!tu_exists(side) || flags == COSTDB_OPEN_READONLY);
        unlink(side);
        if (flags & COSTDB_OPEN_IMMUTABLE)
            break;
    }
    /* immutable: a read-only file with no side files at all */
    tu_unlink_db(p);
    p = make_db("ro2.db");
    CU_ASSERT_EQUAL(chmod(p, 0444), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY | COSTDB_OPEN_IMMUTABLE, &db, NULL,
                                      0), 0);
    CU_ASSERT_EQUAL(costdb_entries_get(db, 1, &e, &n), 0);
    free(e);
    costdb_close(&db);
    snprintf(side, sizeof side, "%s-shm", p);
    CU_ASSERT(!tu_exists(side));
    snprintf(side, sizeof side, "%s-wal", p);
    CU_ASSERT(!tu_exists(side));
    CU_ASSERT_EQUAL(stat(p, &after), 0);
    chmod(p, 0644);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"planted triggers, views, tables, indexes refused", test_planted_objects},
        {"typeof triggers (schema 4)", test_typeof_triggers},
        {"wrong types refused on read", test_wrong_types_on_read},
        {"bounds on read", test_bounds},
        {"plan stage bounds on read", test_plan_bounds},
        {"plan stage and resharding task indices", test_plan_indices},
        {"cost and size limits on write", test_cost_limits_on_write},
        {"schema 2 migrates", test_migrate_schema2},
        {"read-only opens leave nothing", test_readonly_leaves_nothing},
    };
    return TU_RUN("costdb hostile databases", tests);
}
