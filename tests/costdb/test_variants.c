/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of schema 2, stage variants (docs/variants.md): the variant
 * fields of sweep_config and stage_profile.apply_cost round-trip through
 * costdb (unknown apply cost as SQL NULL), bad variants are refused, the
 * placements of a variant are those of its owner config, and a database
 * of schema 1 (built here from schemas/001_initial.sql through a raw
 * connection) opens, migrates and reads with the defaults, while a newer
 * one is still refused.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "testutil.h"

#ifndef COSTDB_SCHEMA_DIR
#error "COSTDB_SCHEMA_DIR must name the schemas/ folder"
#endif

/* One submesh (1,2) with two Alpa configs and variants of the first:
 * c0 2x1 f0 (owner, level 0), c1 1x2 f0 (owner), c2 2x1 f0 level 1 (owner),
 * c3 2x1 f0 full recompute, c4 2x1 f0 level 1 selective zero 2,
 * c5 2x1 {} zero 1 (no owner row: {} has none). */
static const CostdbConfig variant_configs[] = {
    {0, 0, 2, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 0}},
    {0, 1, 1, 2, 0, {0, COSTDB_RECOMPUTE_NONE, 0}},
    {0, 2, 2, 1, 0, {1, COSTDB_RECOMPUTE_NONE, 0}},
    {0, 3, 2, 1, 0, {0, COSTDB_RECOMPUTE_FULL, 0}},
    {0, 4, 2, 1, 0, {1, COSTDB_RECOMPUTE_SELECTIVE, 2}},
    {0, 5, 2, 1, -1, {0, COSTDB_RECOMPUTE_NONE, 1}},
};
#define N_VARIANT_CONFIGS (sizeof variant_configs / sizeof variant_configs[0])

static int64_t make_variant_sweep(Costdb *db)
{
    static const CostdbSubmesh sm[] = {{0, 1, 2}};
    CostdbSweep s;
    tu_sweep(&s, "variants", 1, 2, 8, 2, 2);
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 1, variant_configs, N_VARIANT_CONFIGS),
                          0);
    return s.id;
}

static CostdbEntry entry(int c, CostdbPhase m, double cost, double apply)
{
    CostdbEntry e;
    memset(&e, 0, sizeof e);
    e.start_layer = 0;
    e.end_layer = 1;
    e.submesh_index = 0;
    e.config_index = c;
    e.phase = m;
    e.compute_cost = cost;
    e.peak_memory = 1000;
    e.repeats = 1;
    e.apply_cost = apply;
    return e;
}

static void test_recompute_names(void)
{
    CU_ASSERT_STRING_EQUAL(costdb_recompute_name(COSTDB_RECOMPUTE_NONE), "none");
    CU_ASSERT_STRING_EQUAL(costdb_recompute_name(COSTDB_RECOMPUTE_SELECTIVE), "selective");
    CU_ASSERT_STRING_EQUAL(costdb_recompute_name(COSTDB_RECOMPUTE_FULL), "full");
    CU_ASSERT_PTR_NULL(costdb_recompute_name(COSTDB_RECOMPUTE_COUNT));
    CU_ASSERT_PTR_NULL(costdb_recompute_name(-1));
    CU_ASSERT_EQUAL(costdb_recompute_parse("none"), COSTDB_RECOMPUTE_NONE);
    CU_ASSERT_EQUAL(costdb_recompute_parse("selective"), COSTDB_RECOMPUTE_SELECTIVE);
    CU_ASSERT_EQUAL(costdb_recompute_parse("full"), COSTDB_RECOMPUTE_FULL);
    CU_ASSERT_STRING_EQUAL(costdb_recompute_name(COSTDB_RECOMPUTE_OP), "op");
    CU_ASSERT_EQUAL(costdb_recompute_parse("op"), COSTDB_RECOMPUTE_OP);
    CU_ASSERT_EQUAL(costdb_recompute_parse("Full"), -1);
    CU_ASSERT_EQUAL(costdb_recompute_parse(""), -1);
    CU_ASSERT_EQUAL(costdb_recompute_parse(NULL), -1);
}

/* The variant value and the variant space (costdb/variant.h). */
static void test_variant_value(void)
{
    CostdbVariant plain = {0, COSTDB_RECOMPUTE_NONE, 0}, v = {1, COSTDB_RECOMPUTE_FULL, 3};
    CostdbVariantSpace none = {0, 0u, 0u}, whole = {3, 7u, 15u}, r = costdb_variant_space_resolve(none);
    CU_ASSERT(costdb_variant_is_plain(plain));
    CU_ASSERT(!costdb_variant_is_plain(v));
    CU_ASSERT(!costdb_variant_is_plain((CostdbVariant){0, COSTDB_RECOMPUTE_NONE, 1}));
    CU_ASSERT(costdb_variant_equal(v, (CostdbVariant){1, COSTDB_RECOMPUTE_FULL, 3}));
    CU_ASSERT(!costdb_variant_equal(v, (CostdbVariant){1, COSTDB_RECOMPUTE_FULL, 2}));
    CU_ASSERT(!costdb_variant_equal(v, (CostdbVariant){1, COSTDB_RECOMPUTE_OP, 3}));
    CU_ASSERT(!costdb_variant_equal(v, (CostdbVariant){0, COSTDB_RECOMPUTE_FULL, 3}));
    CU_ASSERT(costdb_variant_same_settings(v, (CostdbVariant){0, COSTDB_RECOMPUTE_FULL, 3}));
    CU_ASSERT(!costdb_variant_same_settings(v, (CostdbVariant){1, COSTDB_RECOMPUTE_OP, 3}));
    CU_ASSERT(!costdb_variant_same_settings(v, (CostdbVariant){1, COSTDB_RECOMPUTE_FULL, 2}));
    CU_ASSERT(costdb_variant_matches((CostdbVariant){-1, -1, -1}, v));
    CU_ASSERT(costdb_variant_matches((CostdbVariant){-1, COSTDB_RECOMPUTE_FULL, 3}, v));
    CU_ASSERT(costdb_variant_matches(v, v));
    CU_ASSERT(!costdb_variant_matches((CostdbVariant){-1, COSTDB_RECOMPUTE_NONE, -1}, v));
    CU_ASSERT(!costdb_variant_matches((CostdbVariant){0, -1, -1}, v));
    CU_ASSERT(!costdb_variant_matches((CostdbVariant){-1, -1, 2}, v));
    CU_ASSERT(!costdb_variant_matches(plain, v));
    CU_ASSERT(costdb_variant_equal(costdb_variant_max(plain, v), v));
    CU_ASSERT(costdb_variant_equal(costdb_variant_max((CostdbVariant){2, COSTDB_RECOMPUTE_OP, 0}, v),
                                   (CostdbVariant){2, COSTDB_RECOMPUTE_FULL, 3}));
    CU_ASSERT(costdb_variant_equal(costdb_variant_max((CostdbVariant){0, COSTDB_RECOMPUTE_OP, 1},
                                                      (CostdbVariant){0, COSTDB_RECOMPUTE_SELECTIVE, 0}),
                                   (CostdbVariant){0, COSTDB_RECOMPUTE_OP, 1}));
    CU_ASSERT(costdb_variant_valid(plain) && costdb_variant_valid(v));
    CU_ASSERT(!costdb_variant_valid((CostdbVariant){-1, COSTDB_RECOMPUTE_NONE, 0}));
    CU_ASSERT(!costdb_variant_valid((CostdbVariant){0, COSTDB_RECOMPUTE_COUNT, 0}));
    CU_ASSERT(!costdb_variant_valid((CostdbVariant){0, -1, 0}));
    CU_ASSERT(!costdb_variant_valid((CostdbVariant){0, COSTDB_RECOMPUTE_NONE, COSTDB_ZERO_MAX + 1}));
    CU_ASSERT(!costdb_variant_valid((CostdbVariant){0, COSTDB_RECOMPUTE_NONE, -1}));
    CU_ASSERT(r.memory_levels == 1 && r.recompute_mask == 1u && r.zero_mask == 1u);
    r = costdb_variant_space_resolve(whole);
    CU_ASSERT(r.memory_levels == 3 && r.recompute_mask == 7u && r.zero_mask == 15u);
    CU_ASSERT(costdb_variant_space_is_plain(none));
    CU_ASSERT(costdb_variant_space_is_plain((CostdbVariantSpace){1, 1u, 1u}));
    CU_ASSERT(!costdb_variant_space_is_plain(whole));
    CU_ASSERT(!costdb_variant_space_is_plain((CostdbVariantSpace){2, 0u, 0u}));
    CU_ASSERT(!costdb_variant_space_is_plain((CostdbVariantSpace){1, 3u, 1u}));
    CU_ASSERT(!costdb_variant_space_is_plain((CostdbVariantSpace){0, 0u, 2u}));
}

static void test_config_round_trip(void)
{
    Costdb *db = tu_open_new("configs.db");
    int64_t id = make_variant_sweep(db);
    CostdbConfig *cf = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(costdb_sweep_configs(db, id, &cf, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, N_VARIANT_CONFIGS);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(cf[i].config_index, variant_configs[i].config_index);
        CU_ASSERT_EQUAL(cf[i].logical_a, variant_configs[i].logical_a);
        CU_ASSERT_EQUAL(cf[i].force_batch_dim, variant_configs[i].force_batch_dim);
        CU_ASSERT_EQUAL(cf[i].variant.memory_level, variant_configs[i].variant.memory_level);
        CU_ASSERT_EQUAL(cf[i].variant.recompute, variant_configs[i].variant.recompute);
        CU_ASSERT_EQUAL(cf[i].variant.zero, variant_configs[i].variant.zero);
    }
    free(cf);
    /* Stored as the documented SQL values. */
    CU_ASSERT_EQUAL(tu_count(tu_path("configs.db"), "sweep_config WHERE recompute = 'selective'"
                                                    " AND zero = 2 AND memory_level = 1"), 1);
    CU_ASSERT_EQUAL(tu_count(tu_path("configs.db"), "sweep_config WHERE recompute = 'none'"), 4);

    /* A bad variant is refused before anything is written. */
    {
        static const CostdbSubmesh sm[] = {{0, 1, 1}};
        CostdbConfig bad[3] = {{0, 0, 1, 1, 0, {-1, 0, 0}},
                               {0, 0, 1, 1, 0, {0, COSTDB_RECOMPUTE_COUNT, 0}},
                               {0, 0, 1, 1, 0, {0, 0, 4}}};
        for (int k = 0; k < 3; k++) {
            CostdbSweep s;
            tu_sweep(&s, "", 1, 1, 1, 1, 1);
            CU_ASSERT_EQUAL(costdb_sweep_create(db, &s, sm, 1, &bad[k], 1), COSTDB_EINVAL);
            CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "bad variant"));
        }
        CU_ASSERT_EQUAL(tu_count(tu_path("configs.db"), "sweep"), 1);
    }
    /* The SQL CHECKs hold for writers that bypass the library. */
    CU_ASSERT_EQUAL(tu_exec(tu_path("configs.db"),
                            "UPDATE sweep_config SET recompute = 'some' WHERE config_index = 0"),
                    -1);
    CU_ASSERT_EQUAL(tu_exec(tu_path("configs.db"),
                            "UPDATE sweep_config SET zero = 4 WHERE config_index = 0"), -1);
    costdb_close(&db);
}

static void test_apply_cost(void)
{
    Costdb *db = tu_open_new("apply.db");
    int64_t id = make_variant_sweep(db);
    CostdbEntry in[5], *out = NULL;
    size_t n = 0;
    in[0] = entry(0, COSTDB_FWD, 0.5, 0.125);
    in[1] = entry(1, COSTDB_FWD, 0.5, -1.0);     /* unknown */
    in[2] = entry(2, COSTDB_FWD, 0.5, 0.0);      /* known zero */
    in[3] = entry(3, COSTDB_FWD, 0.5, INFINITY); /* not finite: unknown */
    in[4] = entry(4, COSTDB_FWD, INFINITY, NAN);
    in[4].status = COSTDB_STATUS_SKIPPED;
    snprintf(in[4].error, sizeof in[4].error, "no data-parallel replicas");
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, in, 5, 0), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("apply.db"), "stage_profile WHERE apply_cost IS NULL"), 3);
    CU_ASSERT_EQUAL(costdb_entries_get(db, id, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 5);
    CU_ASSERT_EQUAL(out[0].apply_cost, 0.125);
    CU_ASSERT(out[1].apply_cost < 0);
    CU_ASSERT_EQUAL(out[2].apply_cost, 0.0);
    CU_ASSERT(out[3].apply_cost < 0);
    CU_ASSERT(out[4].apply_cost < 0);
    CU_ASSERT_EQUAL(out[4].status, COSTDB_STATUS_SKIPPED);
    free(out);
    /* Replacing an entry replaces its apply cost too. */
    in[1].apply_cost = 2.5;
    CU_ASSERT_EQUAL(costdb_entries_put(db, id, &in[1], 1, 1), 0);
    CU_ASSERT_EQUAL(costdb_entries_get(db, id, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 5);
    CU_ASSERT_EQUAL(out[1].apply_cost, 2.5);
    free(out);
    /* A negative apply cost written behind the library's back is refused. */
    CU_ASSERT_EQUAL(tu_exec(tu_path("apply.db"), "UPDATE stage_profile SET apply_cost = -1"), -1);
    costdb_close(&db);
}

static void put_placement(Costdb *db, int64_t id, int c, const char *spec)
{
    CostdbPlacement p[2];
    memset(p, 0, sizeof p);
    for (int k = 0; k < 2; k++) {
        p[k].start_layer = 0;
        p[k].end_layer = 1;
        p[k].submesh_index = 0;
        p[k].config_index = c;
        p[k].tensor_index = k;
        snprintf(p[k].tensor_name, sizeof p[k].tensor_name, "w%d", k);
        snprintf(p[k].role, sizeof p[k].role, "%s", k ? "output" : "param");
        snprintf(p[k].shape, sizeof p[k].shape, "64,64");
        snprintf(p[k].dtype, sizeof p[k].dtype, "f32");
        snprintf(p[k].sharding_spec, sizeof p[k].sharding_spec, "%s", spec);
    }
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, p, 2), 0);
}

/* The spec of the placements costdb_placements_get returns for config c
 * ("" when none), checking every row carries c. */
static void expect_placements(Costdb *db, int64_t id, int c, const char *spec)
{
    CostdbPlacement *p = NULL;
    size_t n = 99;
    CU_ASSERT_EQUAL_FATAL(costdb_placements_get(db, id, 0, 1, 0, c, &p, &n), 0);
    if (!spec) {
        CU_ASSERT_EQUAL(n, 0);
    } else {
        CU_ASSERT_EQUAL_FATAL(n, 2);
        for (size_t k = 0; k < n; k++) {
            CU_ASSERT_EQUAL(p[k].config_index, c);
            CU_ASSERT_EQUAL(p[k].submesh_index, 0);
            CU_ASSERT_STRING_EQUAL(p[k].sharding_spec, spec);
        }
        CU_ASSERT_STRING_EQUAL(p[0].role, "param");
        CU_ASSERT_STRING_EQUAL(p[1].tensor_name, "w1");
    }
    free(p);
}

static void test_placement_owner(void)
{
    Costdb *db = tu_open_new("owner.db");
    int64_t id = make_variant_sweep(db);
    CostdbPlacement *all = NULL;
    size_t n = 0;
    /* Placements are written for owners only. */
    put_placement(db, id, 0, "S0");
    put_placement(db, id, 1, "S1");
    put_placement(db, id, 2, "S2");
    expect_placements(db, id, 0, "S0");
    expect_placements(db, id, 1, "S1");
    expect_placements(db, id, 2, "S2");
    /* full recompute of 2x1 f0 level 0 -> c0; level 1 selective zero 2 -> c2. */
    expect_placements(db, id, 3, "S0");
    expect_placements(db, id, 4, "S2");
    /* 2x1 {} zero 1: force flag differs (NULL vs 0) and there is no owner
     * row for it, so it has its own placements, none here. */
    expect_placements(db, id, 5, NULL);
    /* Another range or a config the sweep lacks: nothing. */
    {
        CostdbPlacement *p = NULL;
        size_t k = 9;
        CU_ASSERT_EQUAL(costdb_placements_get(db, id, 1, 1, 0, 3, &p, &k), 0);
        CU_ASSERT_EQUAL(k, 0);
        free(p);
        CU_ASSERT_EQUAL(costdb_placements_get(db, id, 0, 1, 0, 42, &p, &k), 0);
        CU_ASSERT_EQUAL(k, 0);
        free(p);
    }
    /* costdb_placements_owner names the config whose set those are (the
     * auto search's ep step reads a set once per owner) */
    {
        const int want[] = {0, 1, 2, 0, 2, 5, 42};
        const int cfg[] = {0, 1, 2, 3, 4, 5, 42};
        for (size_t k = 0; k < sizeof cfg / sizeof *cfg; k++) {
            int o = -1;
            CU_ASSERT_EQUAL(costdb_placements_owner(db, id, 0, cfg[k], &o), 0);
            CU_ASSERT_EQUAL(o, want[k]);
        }
    }
    /* The list is what is stored: owners only. */
    CU_ASSERT_EQUAL(costdb_placements_list(db, id, &all, &n), 0);
    CU_ASSERT_EQUAL(n, 6);
    for (size_t k = 0; k < n; k++)
        CU_ASSERT(all[k].config_index <= 2);
    free(all);
    costdb_close(&db);
}

/* Builds a schema-1 file through a raw connection with one sweep, one
 * config, one entry and one placement. */
static int make_schema1(const char *path)
{
    char *sql = tu_read(COSTDB_SCHEMA_DIR "/001_initial.sql", NULL);
    int rc;
    if (!sql)
        return -1;
    tu_unlink_db(path);
    rc = tu_exec(path, sql);
    free(sql);
    if (rc == 0)
        rc = tu_exec(path,
            "PRAGMA user_version = 1;"
            "INSERT INTO sweep (id, cluster_hosts, cluster_gpus, global_batch, micro_batches,"
            " num_layers, layer_option, submesh_space, logical_space, profile_mode, dtype,"
            " backend, tool_version, started_at, status) VALUES (1, 1, 2, 8, 2, 2, 'manual',"
            " 'all', 'all', 'composition', 'f32', 'model', '0.1', '2025-01-01T00:00:00Z',"
            " 'complete');"
            "INSERT INTO sweep_submesh VALUES (1, 0, 1, 2);"
            "INSERT INTO sweep_config VALUES (1, 0, 0, 2, 1, 0), (1, 0, 1, 1, 2, NULL);"
            "INSERT INTO stage_profile (sweep_id, start_layer, end_layer, submesh_index,"
            " config_index, phase, compute_cost, peak_memory, invar_size, outvar_size,"
            " temp_buffer_size, available_memory, intermediate_size, initial_size)"
            " VALUES (1, 0, 1, 0, 1, 0, 0.25, 10, 1, 2, 3, 4, 5, 6);"
            "INSERT INTO placement VALUES (1, 0, 1, 0, 1, 0, 'w', 'param', '4,4', 'f32', 'S');");
    return rc;
}

static void test_migrate_schema1(void)
{
    const char *p = tu_path("v1.db");
    Costdb *db = NULL;
    CostdbConfig *cf = NULL;
    CostdbEntry *e = NULL;
    CostdbPlacement *pl = NULL;
    char err[512];
    size_t n = 0;
    int v = 0;
    CU_ASSERT_EQUAL_FATAL(make_schema1(p), 0);
    /* A read-only open never migrates: refused with a hint. */
    CU_ASSERT_EQUAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, err, sizeof err),
                    COSTDB_EREADONLY);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "schema 1 needs an upgrade to 3"));
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_NOCREATE, &db, err, sizeof err), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version());
    CU_ASSERT_EQUAL(costdb_sweep_configs(db, 1, &cf, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(cf[i].variant.memory_level, 0);
        CU_ASSERT_EQUAL(cf[i].variant.recompute, COSTDB_RECOMPUTE_NONE);
        CU_ASSERT_EQUAL(cf[i].variant.zero, 0);
    }
    CU_ASSERT_EQUAL(cf[1].force_batch_dim, -1);
    free(cf);
    CU_ASSERT_EQUAL(costdb_entries_get(db, 1, &e, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(e[0].compute_cost, 0.25);
    CU_ASSERT(e[0].apply_cost < 0);
    CU_ASSERT_EQUAL(e[0].initial_size, 6);
    free(e);
    CU_ASSERT_EQUAL(costdb_placements_get(db, 1, 0, 1, 0, 1, &pl, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    /* schema 3 converted the row: the same fields come back */
    CU_ASSERT_STRING_EQUAL(pl[0].sharding_spec, "S");
    CU_ASSERT_STRING_EQUAL(pl[0].tensor_name, "w");
    CU_ASSERT_STRING_EQUAL(pl[0].role, "param");
    CU_ASSERT_STRING_EQUAL(pl[0].shape, "4,4");
    CU_ASSERT_STRING_EQUAL(pl[0].dtype, "f32");
    CU_ASSERT_EQUAL(pl[0].tensor_index, 0);
    free(pl);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(p, "sweep_config WHERE recompute = 'none' AND zero = 0"), 2);
    /* Migrated once: a read-only open now works. */
    CU_ASSERT_EQUAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, err, sizeof err), 0);
    costdb_close(&db);
}

/* A file of schema 10 (migrations 001-010 run by hand) with configs,
 * entries and costs: the migration to 11 rebuilds sweep_config without
 * cascading into the rows that reference it, and 'op' is then stored. */
static void test_migrate_schema10(void)
{
    const char *p = tu_path("schema10.db");
    Costdb *db = NULL;
    int v = 0;
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, 10), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p,
        "INSERT INTO sweep (id, cluster_hosts, cluster_gpus, global_batch, micro_batches,"
        " num_layers, layer_option, submesh_space, logical_space, profile_mode, dtype,"
        " backend, tool_version, started_at, status) VALUES"
        " (1, 1, 2, 32, 4, 2, 'manual', 'all', 'all', 'composition', 'f32', 'model', '0.1',"
        "  '2025-01-01T00:00:00Z', 'complete');"
        "INSERT INTO sweep_submesh VALUES (1, 0, 1, 2);"
        "INSERT INTO sweep_config (sweep_id, submesh_index, config_index, logical_a, logical_b,"
        " force_batch_dim, memory_level, recompute, zero) VALUES"
        " (1, 0, 0, 2, 1, 0, 0, 'none', 0), (1, 0, 1, 2, 1, 0, 0, 'full', 2);"
        "INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size,"
        " outvar_size, temp_buffer_size, available_memory, intermediate_size, initial_size)"
        " VALUES (1, 1, 0.5, 10, 1, 2, 3, 100, 4, 5);"
        "INSERT INTO stage_entry (sweep_id, start_layer, end_layer, submesh_index,"
        " config_index, phase, cost_id) VALUES (1, 0, 1, 0, 0, 0, 1), (1, 0, 1, 0, 1, 1, 1);"),
        0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version()); /* 11, and 12 (wgrad_cost) after it */
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(p, "sweep_config"), 2);
    CU_ASSERT_EQUAL(tu_count(p, "sweep_config WHERE recompute = 'full' AND zero = 2"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry"), 2);
    CU_ASSERT_EQUAL(tu_count(p, "stage_profile"), 2);
    CU_ASSERT_EQUAL(tu_exec(p, "UPDATE sweep_config SET recompute = 'op' WHERE config_index = 1"),
                    0);
    CU_ASSERT_EQUAL(tu_exec(p, "UPDATE sweep_config SET recompute = 'some' WHERE config_index = 1"),
                    -1);
    CU_ASSERT_EQUAL(tu_exec(p, "UPDATE sweep_config SET recompute = 1 WHERE config_index = 1"),
                    -1);
    /* the file opens again: its schema is what the migrations make */
    CU_ASSERT_EQUAL(costdb_open(p, 0, &db, NULL, 0), 0);
    costdb_close(&db);
    /* and deleting a config still cascades */
    CU_ASSERT_EQUAL(tu_exec(p, "PRAGMA foreign_keys=ON; DELETE FROM sweep_config WHERE config_index = 1"), 0);
    CU_ASSERT_EQUAL(tu_count(p, "stage_entry"), 1);
}

static void test_refuse_next_schema(void)
{
    const char *p = tu_path("v3.db");
    Costdb *db = NULL;
    char sql[64], err[512], want[600];
    CU_ASSERT_EQUAL_FATAL(make_schema1(p), 0);
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d;", costdb_schema_version() + 1);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, sql), 0);
    snprintf(want, sizeof want, "%s: written by a newer approf (schema %d, this build knows %d)",
             p, costdb_schema_version() + 1, costdb_schema_version());
    CU_ASSERT_EQUAL(costdb_open(p, 0, &db, err, sizeof err), COSTDB_ETOONEW);
    CU_ASSERT_PTR_NULL(db);
    CU_ASSERT_STRING_EQUAL(err, want);
    /* Untouched: still no schema-2 columns. */
    CU_ASSERT_EQUAL(tu_count(p, "sweep_config"), 2);
    CU_ASSERT_EQUAL(tu_count(p, "sweep_config WHERE zero = 0"), -1);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"recompute names", test_recompute_names},
        {"variant value and space", test_variant_value},
        {"variant configs round trip", test_config_round_trip},
        {"apply_cost round trip, unknown as NULL", test_apply_cost},
        {"placements of a variant are its owner's", test_placement_owner},
        {"schema 1 opens and migrates", test_migrate_schema1},
        {"schema 10 migrates to 11 (recompute op)", test_migrate_schema10},
        {"schema 3 is refused", test_refuse_next_schema},
    };
    return TU_RUN("costdb variants", tests);
}
