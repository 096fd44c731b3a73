/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of costdb: creating and migrating a file, refusing newer,
 * foreign, non-database and corrupt files without touching them, every
 * table's insert and query (checked against hand-written values and a raw
 * SQLite connection), inf and NaN costs, transactions and error mapping.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "testutil.h"

/* A sweep on a 1x4 cluster: submeshes (1,1), (1,2), (1,4) with Alpa's configs
 * for a divisible micro-batch. */
static int64_t make_sweep(Costdb *db, const char *name)
{
    static const CostdbSubmesh sm[] = {{0, 1, 1}, {1, 1, 2}, {2, 1, 4}};
    static const CostdbConfig cf[] = {
        {0, 0, 1, 1, 0}, {0, 1, 1, 1, -1},
        {1, 0, 2, 1, 0}, {1, 1, 1, 2, 0}, {1, 2, 2, 1, -1},
        {2, 0, 4, 1, 0}, {2, 1, 2, 2, 0}, {2, 2, 1, 4, 0}, {2, 3, 4, 1, -1},
    };
    CostdbSweep s;
    tu_sweep(&s, name, 1, 4, 64, 8, 4);
    snprintf(s.layer_option, sizeof s.layer_option, "auto:eps=0.5");
    snprintf(s.submesh_space, sizeof s.submesh_space, "power_of_two");
    snprintf(s.logical_space, sizeof s.logical_space, "single_node_model_parallel");
    s.status = COSTDB_SWEEP_RUNNING;
    CU_ASSERT_EQUAL(costdb_sweep_create(db, &s, sm, 3, cf, sizeof cf / sizeof cf[0]), 0);
    CU_ASSERT(s.id > 0);
    CU_ASSERT(s.started_at[0] != '\0');
    return s.id;
}

static CostdbEntry entry(int i, int j, int s, int c, CostdbPhase m, double cost)
{
    CostdbEntry e;
    memset(&e, 0, sizeof e);
    e.start_layer = i;
    e.end_layer = j;
    e.submesh_index = s;
    e.config_index = c;
    e.phase = m;
    e.compute_cost = cost;
    e.peak_memory = 741881856;
    e.invar_size = 473513984;
    e.outvar_size = 268435456;
    e.temp_buffer_size = 268435456;
    e.available_memory = 14671519744LL;
    e.intermediate_size = 1000 + i;
    e.initial_size = 2000 + j;
    e.repeats = 3;
    e.spread = 0.015;
    return e;
}

static void test_create(void)
{
    Costdb *db = tu_open_new("create.db");
    int v = -1;
    CU_ASSERT_EQUAL(costdb_schema_version(), 17);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version());
    CU_ASSERT_STRING_EQUAL(costdb_path(db), tu_path("create.db"));
    costdb_close(&db);
    CU_ASSERT_PTR_NULL(db);
    costdb_close(&db);
    /* Every table of schema 1 exists, and the file is in WAL mode. */
    CU_ASSERT_EQUAL(tu_count(tu_path("create.db"), "stage_profile"), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("create.db"), "resharding_task"), 0);
    {
        char *bytes = tu_read(tu_path("create.db"), NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
        CU_ASSERT_EQUAL(bytes[18], 2); /* file format write version 2 = WAL */
        free(bytes);
    }
    /* Reopening does not migrate twice. */
    CU_ASSERT_EQUAL(costdb_open(tu_path("create.db"), COSTDB_OPEN_NOCREATE, &db, NULL, 0), 0);
    costdb_close(&db);
}

static void test_migrate_empty_file(void)
{
    Costdb *db = NULL;
    CostdbSweep *list = NULL;
    size_t n = 99;
    int v = 0;
    tu_unlink_db(tu_path("empty.db"));
    CU_ASSERT_EQUAL_FATAL(tu_write(tu_path("empty.db"), ""), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(tu_path("empty.db"), COSTDB_OPEN_NOCREATE, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version());
    CU_ASSERT_EQUAL(costdb_sweep_list(db, &list, &n), 0);
    CU_ASSERT_EQUAL(n, 0);
    free(list);
    costdb_close(&db);
}

static void test_missing_file(void)
{
    Costdb *db = NULL;
    char err[512];
    CU_ASSERT_EQUAL(costdb_open(tu_path("missing.db"), COSTDB_OPEN_READONLY, &db, err, sizeof err),
                    COSTDB_EIO);
    CU_ASSERT_PTR_NULL(db);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "missing.db"));
    CU_ASSERT_EQUAL(costdb_open(tu_path("missing.db"), COSTDB_OPEN_NOCREATE, &db, NULL, 0),
                    COSTDB_EIO);
    CU_ASSERT_FALSE(tu_exists(tu_path("missing.db")));
}

/* Opens path expecting failure want, and checks that the bytes are unchanged
 * and that no WAL or journal file appeared. */
static void expect_refused(const char *path, int flags, int want, const char *msg)
{
    Costdb *db = NULL;
    char err[512], side[600];
    size_t n0 = 0, n1 = 0;
    char *before = tu_read(path, &n0), *after;
    CU_ASSERT_PTR_NOT_NULL_FATAL(before);
    CU_ASSERT_EQUAL(costdb_open(path, flags, &db, err, sizeof err), want);
    CU_ASSERT_PTR_NULL(db);
    if (msg && !strstr(err, msg))
        fprintf(stderr, "\nmessage '%s' lacks '%s'\n", err, msg);
    CU_ASSERT(msg == NULL || strstr(err, msg) != NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
    after = tu_read(path, &n1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(after);
    CU_ASSERT_EQUAL(n0, n1);
    CU_ASSERT(n0 == n1 && memcmp(before, after, n0) == 0);
    snprintf(side, sizeof side, "%s-wal", path);
    CU_ASSERT_FALSE(tu_exists(side));
    snprintf(side, sizeof side, "%s-journal", path);
    CU_ASSERT_FALSE(tu_exists(side));
    free(before);
    free(after);
}

static void test_refuse_newer(void)
{
    const char *p = tu_path("newer.db");
    char msg[128], sql[96];
    tu_unlink_db(p);
    snprintf(sql, sizeof sql, "CREATE TABLE future (x); PRAGMA user_version = %d;",
             costdb_schema_version() + 1);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, sql), 0);
    snprintf(msg, sizeof msg, "%s: written by a newer approf (schema %d, this build knows %d)", p,
             costdb_schema_version() + 1, costdb_schema_version());
    expect_refused(p, 0, COSTDB_ETOONEW, msg);
    expect_refused(p, COSTDB_OPEN_READONLY, COSTDB_ETOONEW, msg);
}

static void test_refuse_not_db(void)
{
    const char *p = tu_path("text.db");
    char big[8192];
    for (size_t i = 0; i < sizeof big - 1; i++)
        big[i] = (char)('a' + i % 26);
    big[sizeof big - 1] = '\0';
    CU_ASSERT_EQUAL_FATAL(tu_write(p, big), 0);
    expect_refused(p, 0, COSTDB_ENOTDB, "not an approf database");
    expect_refused(p, COSTDB_OPEN_READONLY, COSTDB_ENOTDB, "not an approf database");
    /* A short text file (less than a SQLite header). */
    CU_ASSERT_EQUAL_FATAL(tu_write(p, "start,end\n"), 0);
    expect_refused(p, 0, COSTDB_ENOTDB, "not an approf database");
    /* Somebody else's SQLite database (no user_version, other tables). */
    p = tu_path("foreign.db");
    tu_unlink_db(p);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, "CREATE TABLE t (a); INSERT INTO t VALUES (1);"), 0);
    expect_refused(p, 0, COSTDB_ENOTDB, "a SQLite file with other tables");
}

static void test_refuse_corrupt(void)
{
    const char *p = tu_path("corrupt.db");
    Costdb *db = tu_open_new("corrupt.db");
    char *bytes;
    size_t n = 0;
    FILE *f;
    make_sweep(db, "x");
    costdb_close(&db);
    bytes = tu_read(p, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
    CU_ASSERT_FATAL(n >= 4096);
    memset(bytes + 100, 0xff, 4096 - 100); /* the schema page's b-tree */
    f = fopen(p, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(bytes, 1, n, f), n);
    fclose(f);
    free(bytes);
    expect_refused(p, 0, COSTDB_ECORRUPT, "corrupt");
}

static void test_readonly(void)
{
    Costdb *db = tu_open_new("ro.db");
    CostdbEntry e = entry(0, 0, 0, 0, COSTDB_FWD, 0.5);
    int64_t id = make_sweep(db, "ro");
    costdb_close(&db);
    CU_ASSERT_EQUAL_FATAL(costdb_open(tu_path("ro.db"), COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, &e, 1, 0), COSTDB_EREADONLY);
    CU_ASSERT_EQUAL(costdb_sweep_set_status(db, id, COSTDB_SWEEP_COMPLETE, 1), COSTDB_EREADONLY);
    CU_ASSERT_EQUAL(costdb_begin(db), COSTDB_EREADONLY);
    costdb_close(&db);
}

static void test_hardware(void)
{
    Costdb *db = tu_open_new("hw.db");
    CostdbHardware hw, got;
    CostdbCommPoint pts[3], *out = NULL;
    CostdbComputePoint cp[2], *cout = NULL;
    size_t n = 0;
    int64_t first;
    memset(&hw, 0, sizeof hw);
    snprintf(hw.fingerprint, sizeof hw.fingerprint, "A100-SXM4-40GB x8 nvlink");
    snprintf(hw.kind, sizeof hw.kind, "analytic");
    snprintf(hw.spec_name, sizeof hw.spec_name, "a100-40g");
    snprintf(hw.gpu_model, sizeof hw.gpu_model, "A100-SXM4-40GB");
    hw.gpus_per_host = 8;
    hw.device_memory = 42949672960LL;
    hw.peak_flops_f16 = 312e12;
    hw.intra_host_bandwidth = 300e9;
    hw.inter_host_latency = 5e-6;
    snprintf(hw.capabilities, sizeof hw.capabilities, "{\"tf32\": true}");
    CU_ASSERT_EQUAL(costdb_hardware_upsert(db, &hw), 0);
    first = hw.id;
    CU_ASSERT(first > 0);
    hw.id = 0;
    CU_ASSERT_EQUAL(costdb_hardware_upsert(db, &hw), 0);
    CU_ASSERT_EQUAL(hw.id, first);
    CU_ASSERT_EQUAL(costdb_hardware_get(db, first, &got), 0);
    CU_ASSERT_STRING_EQUAL(got.fingerprint, hw.fingerprint);
    CU_ASSERT_STRING_EQUAL(got.kind, "analytic");
    CU_ASSERT_STRING_EQUAL(got.driver_version, "");
    CU_ASSERT_EQUAL(got.gpus_per_host, 8);
    CU_ASSERT_EQUAL(got.device_memory, 42949672960LL);
    CU_ASSERT_EQUAL(got.peak_flops_f16, 312e12);
    CU_ASSERT_EQUAL(got.inter_host_latency, 5e-6);
    CU_ASSERT_STRING_EQUAL(got.capabilities, "{\"tf32\": true}");
    CU_ASSERT_EQUAL(costdb_hardware_find(db, hw.fingerprint, &got), 0);
    CU_ASSERT_EQUAL(got.id, first);
    CU_ASSERT_EQUAL(costdb_hardware_find(db, "nope", &got), COSTDB_ENOTFOUND);
    CU_ASSERT_EQUAL(costdb_hardware_get(db, first + 1, &got), COSTDB_ENOTFOUND);
    /* A NaN capability is refused; a bad kind violates the CHECK. */
    hw.memory_bandwidth = NAN;
    snprintf(hw.fingerprint, sizeof hw.fingerprint, "other");
    CU_ASSERT_EQUAL(costdb_hardware_upsert(db, &hw), COSTDB_EINVAL);
    hw.memory_bandwidth = 0;
    snprintf(hw.kind, sizeof hw.kind, "guessed");
    CU_ASSERT_EQUAL(costdb_hardware_upsert(db, &hw), COSTDB_ECONSTRAINT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "CHECK constraint failed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "INSERT INTO hardware"));

    /* Curves come back sorted by size; a second put replaces the curve. */
    memset(pts, 0, sizeof pts);
    for (int i = 0; i < 3; i++) {
        snprintf(pts[i].collective, sizeof pts[i].collective, "all-reduce");
        snprintf(pts[i].group_desc, sizeof pts[i].group_desc, "1x8");
        snprintf(pts[i].dtype, sizeof pts[i].dtype, "f16");
        pts[i].bytes = (int64_t)1 << (20 + 2 * (2 - i));
        pts[i].seconds = 1e-4 * (3 - i);
    }
    CU_ASSERT_EQUAL(costdb_comm_put(db, first, pts, 3), 0);
    CU_ASSERT_EQUAL(costdb_comm_get(db, first, "all-reduce", "1x8", "f16", &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_EQUAL(out[0].bytes, 1 << 20);
    CU_ASSERT_EQUAL(out[2].bytes, 1 << 24);
    CU_ASSERT_EQUAL(out[2].seconds, pts[0].seconds);
    free(out);
    CU_ASSERT_EQUAL(costdb_comm_put(db, first, pts + 1, 1), 0);
    CU_ASSERT_EQUAL(costdb_comm_get(db, first, "all-reduce", "1x8", "f16", &out, &n), 0);
    CU_ASSERT_EQUAL(n, 1);
    free(out);
    CU_ASSERT_EQUAL(costdb_comm_get(db, first, "all-gather", "1x8", "f16", &out, &n), 0);
    CU_ASSERT_EQUAL(n, 0);
    free(out);
    memset(cp, 0, sizeof cp);
    snprintf(cp[0].op, sizeof cp[0].op, "gemm");
    snprintf(cp[1].op, sizeof cp[1].op, "gemm");
    snprintf(cp[0].dtype, sizeof cp[0].dtype, "f16");
    snprintf(cp[1].dtype, sizeof cp[1].dtype, "f16");
    cp[0].size = 4096;
    cp[0].rate = 250e12;
    cp[1].size = 1024;
    cp[1].rate = 90e12;
    CU_ASSERT_EQUAL(costdb_compute_put(db, first, cp, 2), 0);
    CU_ASSERT_EQUAL(costdb_compute_get(db, first, "gemm", "f16", &cout, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_EQUAL(cout[0].size, 1024);
    CU_ASSERT_EQUAL(cout[1].rate, 250e12);
    free(cout);
    costdb_close(&db);
}

static void test_model(void)
{
    Costdb *db = tu_open_new("model.db");
    CostdbModel m, got;
    CostdbLayer layers[3], *out = NULL;
    size_t n = 0;
    int64_t first;
    memset(&m, 0, sizeof m);
    memset(layers, 0, sizeof layers);
    snprintf(m.name, sizeof m.name, "gpt-1.3b");
    snprintf(m.signature, sizeof m.signature, "sig-1");
    snprintf(m.graph_hash, sizeof m.graph_hash, "g-1");
    snprintf(m.dtype, sizeof m.dtype, "f16");
    snprintf(m.layer_option, sizeof m.layer_option, "auto:eps=0.5");
    m.batch_size = 16;
    m.num_params = 1300000000;
    m.num_layers = 3;
    for (int i = 0; i < 3; i++) {
        layers[i].layer_index = 2 - i; /* stored out of order on purpose */
        layers[i].op_begin = 10 * (2 - i);
        layers[i].op_end = 10 * (3 - i);
        layers[i].fwd_flops = 1e12 * (i + 1);
        layers[i].bwd_flops = 2e12 * (i + 1);
        layers[i].param_bytes = 100 + i;
    }
    CU_ASSERT_EQUAL(costdb_model_upsert(db, &m, layers, 3), 0);
    first = m.id;
    CU_ASSERT(first > 0);
    CU_ASSERT_EQUAL(costdb_model_upsert(db, &m, layers, 3), 0);
    CU_ASSERT_EQUAL(m.id, first);
    CU_ASSERT_EQUAL(tu_count(tu_path("model.db"), "model_layer"), 3);
    CU_ASSERT_EQUAL(costdb_model_get(db, first, &got), 0);
    CU_ASSERT_STRING_EQUAL(got.name, "gpt-1.3b");
    CU_ASSERT_EQUAL(got.num_params, 1300000000);
    CU_ASSERT_STRING_EQUAL(got.options, "");
    CU_ASSERT_EQUAL(costdb_model_layers(db, first, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_EQUAL(out[0].layer_index, 0);
    CU_ASSERT_EQUAL(out[0].fwd_flops, 3e12);
    CU_ASSERT_EQUAL(out[2].op_end, 30);
    CU_ASSERT_EQUAL(out[2].param_bytes, 100);
    free(out);
    CU_ASSERT_EQUAL(costdb_model_get(db, first + 5, &got), COSTDB_ENOTFOUND);
    costdb_close(&db);
}

static void test_sweep(void)
{
    Costdb *db = tu_open_new("sweep.db");
    CostdbSweep s, *list = NULL;
    CostdbSubmesh *sm = NULL;
    CostdbConfig *cf = NULL;
    size_t n = 0;
    int64_t id = make_sweep(db, "first"), id2, latest = 0;
    CU_ASSERT_EQUAL(costdb_sweep_get(db, id, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.name, "first");
    CU_ASSERT_EQUAL(s.model_id, 0);
    CU_ASSERT_EQUAL(s.cluster_gpus, 4);
    CU_ASSERT_EQUAL(s.global_batch, 64);
    CU_ASSERT_STRING_EQUAL(s.profile_mode, "composition");
    CU_ASSERT_STRING_EQUAL(s.dtype, "f32");
    CU_ASSERT_STRING_EQUAL(s.finished_at, "");
    CU_ASSERT(s.tool_version[0] != '\0');
    CU_ASSERT_EQUAL(s.status, COSTDB_SWEEP_RUNNING);
    CU_ASSERT_EQUAL(costdb_sweep_submeshes(db, id, &sm, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_EQUAL(sm[2].index, 2);
    CU_ASSERT_EQUAL(sm[2].gpus_per_host, 4);
    free(sm);
    CU_ASSERT_EQUAL(costdb_sweep_configs(db, id, &cf, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 9);
    CU_ASSERT_EQUAL(cf[1].force_batch_dim, -1);
    CU_ASSERT_EQUAL(cf[6].submesh_index, 2);
    CU_ASSERT_EQUAL(cf[6].config_index, 1);
    CU_ASSERT_EQUAL(cf[6].logical_a, 2);
    CU_ASSERT_EQUAL(cf[6].force_batch_dim, 0);
    free(cf);
    /* -1 is stored as SQL NULL. */
    CU_ASSERT_EQUAL(tu_count(tu_path("sweep.db"), "sweep_config WHERE force_batch_dim IS NULL"), 3);
    CU_ASSERT_EQUAL(costdb_sweep_set_status(db, id, COSTDB_SWEEP_COMPLETE, 1), 0);
    CU_ASSERT_EQUAL(costdb_sweep_get(db, id, &s), 0);
    CU_ASSERT_EQUAL(s.status, COSTDB_SWEEP_COMPLETE);
    CU_ASSERT(s.finished_at[0] != '\0');
    CU_ASSERT_EQUAL(costdb_sweep_set_status(db, id + 100, COSTDB_SWEEP_FAILED, 0), COSTDB_ENOTFOUND);
    id2 = make_sweep(db, "second");
    CU_ASSERT_EQUAL(costdb_sweep_latest(db, &latest), 0);
    CU_ASSERT_EQUAL(latest, id2);
    CU_ASSERT_EQUAL(costdb_sweep_list(db, &list, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_STRING_EQUAL(list[1].name, "second");
    free(list);
    {
        CostdbEntry e = entry(0, 1, 1, 2, COSTDB_BWD, 0.25);
        CU_ASSERT_EQUAL(costdb_entries_put(db, id2, &e, 1, 0), 0);
    }
    CU_ASSERT_EQUAL(costdb_sweep_delete(db, id2), 0);
    CU_ASSERT_EQUAL(costdb_sweep_get(db, id2, &s), COSTDB_ENOTFOUND);
    CU_ASSERT_EQUAL(costdb_sweep_delete(db, id2), COSTDB_ENOTFOUND);
    CU_ASSERT_EQUAL(tu_count(tu_path("sweep.db"), "stage_profile"), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("sweep.db"), "sweep_config"), 9);
    CU_ASSERT_EQUAL(tu_count(tu_path("sweep.db"), "sweep_submesh"), 3);
    {
        CostdbSweepStatus st;
        CU_ASSERT_STRING_EQUAL(costdb_sweep_status_name(COSTDB_SWEEP_INTERRUPTED), "interrupted");
        CU_ASSERT_EQUAL(costdb_sweep_status_parse("imported", &st), 0);
        CU_ASSERT_EQUAL(st, COSTDB_SWEEP_IMPORTED);
        CU_ASSERT_EQUAL(costdb_sweep_status_parse("done", &st), COSTDB_EINVAL);
    }
    costdb_close(&db);
}

static void test_entries(void)
{
    Costdb *db = tu_open_new("entries.db");
    int64_t id = make_sweep(db, "e"), count = -1;
    CostdbEntry in[6], *out = NULL;
    size_t n = 0;
    int exists = -1;
    /* Given out of order; expected back by submesh desc, start, end, config, phase. */
    in[0] = entry(0, 0, 0, 1, COSTDB_BWD, 0.1);
    in[1] = entry(0, 3, 2, 3, COSTDB_FWD, INFINITY);
    in[1].status = COSTDB_STATUS_OOM;
    snprintf(in[1].error, sizeof in[1].error, "out of memory: 45 GB > 40 GB");
    in[2] = entry(1, 1, 0, 0, COSTDB_FWD, 0.3);
    in[3] = entry(0, 0, 0, 1, COSTDB_FWD, 0.4);
    in[4] = entry(0, 1, 1, 2, COSTDB_FWD, 0.5);
    in[5] = entry(0, 0, 1, 0, COSTDB_FWD, 0.6);
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, in, 6, 0), 0);
    CU_ASSERT_EQUAL(costdb_entries_count(db, id, &count), 0);
    CU_ASSERT_EQUAL(count, 6);
    CU_ASSERT_EQUAL(costdb_entries_get(db, id, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 6);
    CU_ASSERT_EQUAL(out[0].submesh_index, 2);
    CU_ASSERT(isinf(out[0].compute_cost) && out[0].compute_cost > 0);
    CU_ASSERT_EQUAL(out[0].status, COSTDB_STATUS_OOM);
    CU_ASSERT_STRING_EQUAL(out[0].error, "out of memory: 45 GB > 40 GB");
    CU_ASSERT_EQUAL(out[1].compute_cost, 0.6);  /* (0,0,1,0) */
    CU_ASSERT_EQUAL(out[2].compute_cost, 0.5);  /* (0,1,1,2) */
    CU_ASSERT_EQUAL(out[3].compute_cost, 0.4);  /* (0,0,0,1) fwd */
    CU_ASSERT_EQUAL(out[4].compute_cost, 0.1);  /* (0,0,0,1) bwd */
    CU_ASSERT_EQUAL(out[5].compute_cost, 0.3);  /* (1,1,0,0) */
    CU_ASSERT_EQUAL(out[5].available_memory, 14671519744LL);
    CU_ASSERT_EQUAL(out[5].intermediate_size, 1001);
    CU_ASSERT_EQUAL(out[5].initial_size, 2001);
    CU_ASSERT_EQUAL(out[5].repeats, 3);
    CU_ASSERT_EQUAL(out[5].spread, 0.015);
    CU_ASSERT_EQUAL(out[5].status, COSTDB_STATUS_OK);
    free(out);
    CU_ASSERT_EQUAL(costdb_entry_exists(db, id, 0, 3, 2, 3, COSTDB_FWD, &exists), 0);
    CU_ASSERT_EQUAL(exists, 1);
    CU_ASSERT_EQUAL(costdb_entry_exists(db, id, 0, 3, 2, 3, COSTDB_BWD, &exists), 0);
    CU_ASSERT_EQUAL(exists, 0);

    /* Duplicate key: refused as a whole batch unless replace is set. */
    in[2].compute_cost = 0.35;
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, in + 2, 1, 0), COSTDB_ECONSTRAINT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "INSERT INTO stage_entry"));
    {
        CostdbEntry two[2] = {entry(3, 3, 0, 0, COSTDB_FWD, 1.0), in[2]};
        CU_ASSERT_EQUAL(costdb_entries_put(db, id, two, 2, 0), COSTDB_ECONSTRAINT);
        CU_ASSERT_EQUAL(tu_count(tu_path("entries.db"), "stage_profile"), 6);
        CU_ASSERT_EQUAL(costdb_entries_put(db, id, two, 2, 1), 0);
        CU_ASSERT_EQUAL(tu_count(tu_path("entries.db"), "stage_profile"), 7);
    }
    /* A config the sweep does not have violates the foreign key. */
    {
        CostdbEntry bad = entry(0, 0, 0, 7, COSTDB_FWD, 1.0);
        CU_ASSERT_EQUAL(costdb_entries_put(db, id, &bad, 1, 0), COSTDB_ECONSTRAINT);
    }
    /* NaN is refused before anything is written; inf is stored as REAL inf. */
    {
        CostdbEntry nan_e = entry(2, 2, 0, 0, COSTDB_FWD, NAN);
        CU_ASSERT_EQUAL(costdb_entries_put(db, id, &nan_e, 1, 0), COSTDB_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "NaN"));
        CU_ASSERT_EQUAL(tu_count(tu_path("entries.db"), "stage_profile"), 7);
        CU_ASSERT_EQUAL(tu_count(tu_path("entries.db"),
                                 "stage_profile WHERE compute_cost > 1e308 AND typeof(compute_cost) = 'real'"),
                        1);
    }
    /* An unterminated text field is refused, never cut. */
    {
        CostdbEntry e = entry(2, 2, 0, 0, COSTDB_FWD, 1.0);
        memset(e.error, 'x', sizeof e.error);
        CU_ASSERT_EQUAL(costdb_entries_put(db, id, &e, 1, 0), COSTDB_EINVAL);
    }
    /* Explicit transactions: rollback discards, no nesting. */
    {
        CostdbEntry e = entry(2, 3, 0, 0, COSTDB_FWD, 1.0);
        CU_ASSERT_EQUAL(costdb_begin(db), 0);
        CU_ASSERT_EQUAL(costdb_begin(db), COSTDB_EINVAL);
        CU_ASSERT_EQUAL(costdb_entries_put(db, id, &e, 1, 0), 0);
        CU_ASSERT_EQUAL(costdb_entries_count(db, id, &count), 0);
        CU_ASSERT_EQUAL(count, 8);
        /* A failing call inside the transaction undoes only itself. */
        CU_ASSERT_EQUAL(costdb_entries_put(db, id, &e, 1, 0), COSTDB_ECONSTRAINT);
        CU_ASSERT_EQUAL(costdb_entries_count(db, id, &count), 0);
        CU_ASSERT_EQUAL(count, 8);
        CU_ASSERT_EQUAL(costdb_rollback(db), 0);
        CU_ASSERT_EQUAL(costdb_entries_count(db, id, &count), 0);
        CU_ASSERT_EQUAL(count, 7);
        CU_ASSERT_EQUAL(costdb_begin(db), 0);
        CU_ASSERT_EQUAL(costdb_entries_put(db, id, &e, 1, 0), 0);
        CU_ASSERT_EQUAL(costdb_commit(db), 0);
        CU_ASSERT_EQUAL(costdb_commit(db), COSTDB_EINVAL);
        CU_ASSERT_EQUAL(tu_count(tu_path("entries.db"), "stage_profile"), 8);
    }
    {
        CostdbStatus st;
        CU_ASSERT_STRING_EQUAL(costdb_status_name(COSTDB_STATUS_TIMEOUT), "timeout");
        CU_ASSERT_EQUAL(costdb_status_parse("skipped", &st), 0);
        CU_ASSERT_EQUAL(st, COSTDB_STATUS_SKIPPED);
        CU_ASSERT_EQUAL(costdb_status_parse("OK", &st), COSTDB_EINVAL);
    }
    costdb_close(&db);
}

static void test_placements_plans(void)
{
    Costdb *db = tu_open_new("plan.db");
    int64_t id = make_sweep(db, "p"), latest = 0;
    CostdbPlacement pl[3], *pout = NULL;
    CostdbPlan plan, got;
    CostdbPlanStage st[2], *sout = NULL;
    CostdbReshardingTask task, *tout = NULL;
    size_t n = 0;
    static const char *const roles[3] = {"output", "param", "input"};
    memset(pl, 0, sizeof pl);
    for (int i = 0; i < 3; i++) {
        pl[i].start_layer = 0;
        pl[i].end_layer = 1;
        pl[i].submesh_index = 2;
        pl[i].config_index = 1;
        pl[i].tensor_index = i;
        snprintf(pl[i].tensor_name, sizeof pl[i].tensor_name, "t%d", i);
        snprintf(pl[i].role, sizeof pl[i].role, "%s", roles[i]);
        snprintf(pl[i].shape, sizeof pl[i].shape, "2048,8192");
        snprintf(pl[i].dtype, sizeof pl[i].dtype, "f16");
        snprintf(pl[i].sharding_spec, sizeof pl[i].sharding_spec,
                 "ShardingSpec((NoSharding(), Chunked(2)), (ShardedAxis(axis=0),))");
    }
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, pl, 3), 0);
    CU_ASSERT_EQUAL(costdb_placements_get(db, id, 0, 1, 2, 1, &pout, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_STRING_EQUAL(pout[0].role, "param");
    CU_ASSERT_STRING_EQUAL(pout[1].role, "input");
    CU_ASSERT_STRING_EQUAL(pout[2].tensor_name, "t0");
    CU_ASSERT_STRING_EQUAL(pout[0].sharding_spec, pl[0].sharding_spec);
    free(pout);
    snprintf(pl[0].role, sizeof pl[0].role, "grad");
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, pl, 1), COSTDB_ECONSTRAINT);

    memset(&plan, 0, sizeof plan);
    plan.sweep_id = id;
    snprintf(plan.kind, sizeof plan.kind, "auto");
    snprintf(plan.objective, sizeof plan.objective, "training");
    plan.micro_batches = 8;
    plan.cost = 1.25;
    plan.full_cost = 1.5;
    plan.feasible = 1;
    plan.solve_seconds = 0.01;
    memset(st, 0, sizeof st);
    st[0] = (CostdbPlanStage){0, 0, 1, 1, 1, 2, 2, 2, 1, 0, 0.1, 0.2, 100, 200, 300};
    st[1] = (CostdbPlanStage){1, 2, 3, -1, 1, 2, -1, 1, 2, -1, 0.3, 0.4, 400, 500, 600};
    CU_ASSERT_EQUAL(costdb_plan_put(db, &plan, st, 2), 0);
    CU_ASSERT(plan.id > 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("plan.db"),
                             "plan_stage WHERE submesh_index IS NULL AND config_index IS NULL"
                             " AND force_batch_dim IS NULL"), 1);
    CU_ASSERT_EQUAL(costdb_plan_get(db, plan.id, &got, &sout, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_EQUAL(got.sweep_id, id);
    CU_ASSERT_EQUAL(got.global_batch, 0);
    CU_ASSERT_EQUAL(got.cost, 1.25);
    CU_ASSERT_STRING_EQUAL(got.kind, "auto");
    CU_ASSERT(got.created_at[0] != '\0');
    CU_ASSERT_EQUAL(sout[0].submesh_index, 1);
    CU_ASSERT_EQUAL(sout[0].force_batch_dim, 0);
    CU_ASSERT_EQUAL(sout[1].submesh_index, -1);
    CU_ASSERT_EQUAL(sout[1].config_index, -1);
    CU_ASSERT_EQUAL(sout[1].force_batch_dim, -1);
    CU_ASSERT_EQUAL(sout[1].available_memory, 600);
    free(sout);
    CU_ASSERT_EQUAL(costdb_plan_latest(db, id, &latest), 0);
    CU_ASSERT_EQUAL(latest, plan.id);
    CU_ASSERT_EQUAL(costdb_plan_latest(db, 0, &latest), 0);
    CU_ASSERT_EQUAL(costdb_plan_latest(db, id + 1, &latest), COSTDB_ENOTFOUND);
    CU_ASSERT_EQUAL(costdb_plan_get(db, plan.id + 1, &got, NULL, NULL), COSTDB_ENOTFOUND);
    plan.cost = NAN;
    CU_ASSERT_EQUAL(costdb_plan_put(db, &plan, NULL, 0), COSTDB_EINVAL);

    memset(&task, 0, sizeof task);
    task.src_stage = 0;
    task.dst_stage = 1;
    snprintf(task.tensor_name, sizeof task.tensor_name, "layer1/out");
    snprintf(task.shape, sizeof task.shape, "128,128");
    snprintf(task.dtype, sizeof task.dtype, "f32");
    snprintf(task.src_spec, sizeof task.src_spec, "a");
    snprintf(task.dst_spec, sizeof task.dst_spec, "b");
    snprintf(task.strategy, sizeof task.strategy, "send-recv");
    task.bytes = 65536;
    task.seconds = 2e-5;
    CU_ASSERT_EQUAL(costdb_resharding_put(db, plan.id, &task, 1), 0);
    CU_ASSERT_EQUAL(costdb_resharding_get(db, plan.id, &tout, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_STRING_EQUAL(tout[0].tensor_name, "layer1/out");
    CU_ASSERT_STRING_EQUAL(tout[0].strategy, "send-recv");
    CU_ASSERT_EQUAL(tout[0].bytes, 65536);
    CU_ASSERT_EQUAL(tout[0].seconds, 2e-5);
    free(tout);
    /* Deleting the sweep removes its plans, stages, tasks and placements. */
    CU_ASSERT_EQUAL(costdb_sweep_delete(db, id), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("plan.db"), "plan"), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("plan.db"), "plan_stage"), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("plan.db"), "resharding_task"), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("plan.db"), "placement"), 0);
    costdb_close(&db);
}

static void test_format_entry(void)
{
    CostdbEntry e = entry(0, 1, 2, 3, COSTDB_BWD, 0.0041);
    char buf[512];
    costdb_format_entry(&e, buf, sizeof buf);
    /* 741881856 / 2^30 = 0.6909..., 473513984 / 2^30 = 0.4409...,
     * 14671519744 / 2^30 = 13.6640625 */
    CU_ASSERT_STRING_EQUAL(buf,
        "result[(0, 1, 2, 3), 1] = ModuleProfileResult(compute_cost=0.004, peak_memory=0.691 GB, "
        "invar_size=0.441 GB, outvar_size=0.250 GB, temp_buffer_size=0.250 GB, "
        "available_memory=13.664 GB)");
    e.compute_cost = INFINITY;
    e.phase = COSTDB_FWD;
    costdb_format_entry(&e, buf, sizeof buf);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "result[(0, 1, 2, 3), 0] = ModuleProfileResult(compute_cost=inf, "));
}

static void test_strerror(void)
{
    CU_ASSERT_STRING_EQUAL(costdb_strerror(COSTDB_ETOONEW), "written by a newer approf");
    CU_ASSERT_STRING_EQUAL(costdb_strerror(12345), "unknown error");
    CU_ASSERT_STRING_EQUAL(costdb_errmsg(NULL), "no database");
}

int main(void)
{
    static const CunitTest tests[] = {
        {"create", test_create},
        {"migrate an empty file", test_migrate_empty_file},
        {"missing file", test_missing_file},
        {"refuse newer user_version", test_refuse_newer},
        {"refuse a non-database", test_refuse_not_db},
        {"refuse a corrupt database", test_refuse_corrupt},
        {"read-only", test_readonly},
        {"hardware, comm and compute", test_hardware},
        {"models and layers", test_model},
        {"sweeps", test_sweep},
        {"entries", test_entries},
        {"placements, plans, resharding", test_placements_plans},
        {"Alpa entry format", test_format_entry},
        {"error strings", test_strerror},
    };
    return TU_RUN("costdb", tests);
}
