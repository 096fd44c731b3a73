/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of a sweep's stored micro-batch size (schema 10) and of "the
 * same setup" (costdb_setup_diff): the size derived on create, refused
 * when it does not divide the batch, refused on read when a careless
 * writer stored a wrong one; a schema-9 file read-only (derived by the
 * reader) and read-write (migrated, derived once); and the comparison's
 * fields, order, ignore masks, names, and model and hardware rows within
 * one file and across two.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "testutil.h"

static void sweep_row(CostdbSweep *s, int64_t model, int64_t hw, int64_t gb, int b)
{
    tu_sweep(s, "", 1, 2, gb, b, 2);
    s->model_id = model;
    s->hardware_id = hw;
    snprintf(s->layer_option, sizeof s->layer_option, "manual");
    snprintf(s->submesh_space, sizeof s->submesh_space, "power_of_two");
    snprintf(s->logical_space, sizeof s->logical_space, "all");
    s->status = COSTDB_SWEEP_COMPLETE;
}

/* A hardware row of kind analytic, GPU "Fake GPU". */
static int64_t hardware_row(Costdb *db, const char *fingerprint)
{
    return tu_hardware_row(db, fingerprint, "analytic", "Fake GPU");
}

/* A model "toy" built for micro-batch `micro`, split after operator `cut`. */
static int64_t model_row(Costdb *db, const char *signature, int64_t micro, int cut)
{
    CostdbModel m;
    CostdbLayer layers[2] = {{0, 0, cut, 1e9, 2e9, 4000, 100, 100},
                             {1, cut, 8, 1e9, 2e9, 4000, 100, 100}};
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "toy");
    snprintf(m.signature, sizeof m.signature, "%s", signature);
    snprintf(m.graph_hash, sizeof m.graph_hash, "%s", signature);
    snprintf(m.dtype, sizeof m.dtype, "f32");
    snprintf(m.layer_option, sizeof m.layer_option, "manual");
    m.num_layers = 2;
    m.batch_size = micro;
    CU_ASSERT_EQUAL_FATAL(costdb_model_upsert(db, &m, layers, 2), 0);
    return m.id;
}

static void test_stored_size(void)
{
    Costdb *db = tu_open_new("mbs.db");
    const char *p = tu_path("mbs.db");
    CostdbSweep s, got;
    sweep_row(&s, 0, 0, 32, 4);
    CU_ASSERT_EQUAL(costdb_sweep_create(db, &s, NULL, 0, NULL, 0), 0);
    CU_ASSERT_EQUAL(s.micro_batch_size, 8); /* derived */
    CU_ASSERT_EQUAL(costdb_sweep_get(db, s.id, &got), 0);
    CU_ASSERT_EQUAL(got.micro_batch_size, 8);
    sweep_row(&s, 0, 0, 32, 4);
    s.micro_batch_size = 4; /* 4 x 4 is not 32 */
    CU_ASSERT_EQUAL(costdb_sweep_create(db, &s, NULL, 0, NULL, 0), COSTDB_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "micro_batch_size 4"));
    sweep_row(&s, 0, 0, 10, 4); /* a CSV import's batch the count does not divide */
    CU_ASSERT_EQUAL(costdb_sweep_create(db, &s, NULL, 0, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_sweep_get(db, s.id, &got), 0);
    CU_ASSERT_EQUAL(got.micro_batch_size, 0);
    costdb_close(&db);

    /* the schema refuses a size that does not make the batch, or text */
    CU_ASSERT_EQUAL(tu_exec(p, "UPDATE sweep SET micro_batch_size = 3 WHERE id = 1"), -1);
    CU_ASSERT_EQUAL(tu_exec(p, "UPDATE sweep SET micro_batch_size = 'eight' WHERE id = 1"), -1);
    /* and the reader refuses one written anyway */
    CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p, "UPDATE sweep SET micro_batch_size = 3 WHERE id = 1"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_sweep_get(db, 1, &got), COSTDB_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "table sweep, row (id=1): column "
                                                     "micro_batch_size = 3"));
    costdb_close(&db);
    CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p, "UPDATE sweep SET micro_batch_size = 0 WHERE id = 1"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_sweep_get(db, 1, &got), COSTDB_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "column micro_batch_size = 0 is outside"));
    costdb_close(&db);
}

/* The two sweeps test_schema9 stores, as db lists them: 32 samples in 4
 * micro-batches (8 each), and 10 in 4 (no whole size: 0). */
static void expect_schema9_sizes(Costdb *db)
{
    CostdbSweep *all = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(costdb_sweep_list(db, &all, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_EQUAL(all[0].micro_batch_size, 8);
    CU_ASSERT_EQUAL(all[1].micro_batch_size, 0);
    free(all);
}

/* A file of schema 9 (migrations 001-009 run by hand) with two sweeps:
 * read-only the reader derives the size; read-write the file migrates to
 * 10 and the column holds it. */
static void test_schema9(void)
{
    const char *p = tu_path("schema9.db");
    Costdb *db = NULL;
    int v = 0;
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, 9), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p,
        "INSERT INTO sweep (id, cluster_hosts, cluster_gpus, global_batch, micro_batches,"
        " num_layers, layer_option, submesh_space, logical_space, profile_mode, dtype,"
        " backend, tool_version, started_at, status) VALUES"
        " (1, 1, 2, 32, 4, 2, 'manual', 'all', 'all', 'composition', 'f32', 'model', '0.1',"
        "  '2025-01-01T00:00:00Z', 'complete'),"
        " (2, 1, 2, 10, 4, 2, 'manual', 'all', 'all', 'composition', 'f32', 'import', '0.1',"
        "  '2025-01-01T00:00:00Z', 'imported');"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, 9);
    expect_schema9_sizes(db);
    costdb_close(&db);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version());
    expect_schema9_sizes(db);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(p, "sweep WHERE micro_batch_size = 8"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "sweep WHERE micro_batch_size IS NULL"), 1);
}

static unsigned diff(Costdb *a, const CostdbSweep *x, Costdb *b, const CostdbSweep *y,
                     unsigned ignore)
{
    unsigned d = 99;
    CU_ASSERT_EQUAL(costdb_setup_diff(a, x, b, y, ignore, &d), 0);
    return d;
}

static void test_setup_diff(void)
{
    Costdb *db = tu_open_new("setup.db"), *other = tu_open_new("setup2.db");
    int64_t hw = hardware_row(db, "analytic:a"), hw2 = hardware_row(db, "analytic:b");
    int64_t m8 = model_row(db, "toy@8", 8, 4), m4 = model_row(db, "toy@4", 4, 4);
    int64_t m4cut = model_row(db, "toy@4/3", 4, 3);
    int64_t ohw, om8;
    CostdbSweep a, b;
    unsigned d = 0;

    sweep_row(&a, m8, hw, 32, 4);
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &a, NULL, 0, NULL, 0), 0);
    b = a;
    b.id = 0;
    snprintf(b.name, sizeof b.name, "another run");
    snprintf(b.tool_version, sizeof b.tool_version, "9.9");
    b.status = COSTDB_SWEEP_INTERRUPTED;
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_IGNORE_RESUME), 0); /* the run's record */

    /* every field, in order; the first that differs outside the mask */
    b.cluster_gpus = 1;
    b.global_batch = 16;
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, 0), COSTDB_SETUP_CLUSTER);
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_CLUSTER), COSTDB_SETUP_GLOBAL_BATCH);
    CU_ASSERT_STRING_EQUAL(costdb_setup_field_name(COSTDB_SETUP_GLOBAL_BATCH), "global batch");
    CU_ASSERT_STRING_EQUAL(costdb_setup_field_name(COSTDB_SETUP_BATCH), "");
    b = a;
    b.micro_batch_size = 4;
    b.micro_batches = 8;
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, 0), COSTDB_SETUP_MICRO_BATCHES);
    b = a;
    snprintf(b.logical_space, sizeof b.logical_space, "single_node_model_parallel");
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_IGNORE_FAMILY), COSTDB_SETUP_LOGICAL_SPACE);
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_IGNORE_MERGE), COSTDB_SETUP_LOGICAL_SPACE);
    b = a;
    snprintf(b.options, sizeof b.options, "{\"sharding_solver\":\"cbc\"}");
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_IGNORE_FAMILY), COSTDB_SETUP_OPTIONS);
    b = a;
    snprintf(b.profile_mode, sizeof b.profile_mode, "individual");
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_IGNORE_FAMILY), COSTDB_SETUP_PROFILE_MODE);
    b = a;
    snprintf(b.shard, sizeof b.shard, "1/2");
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_IGNORE_RESUME), COSTDB_SETUP_SHARD);
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_IGNORE_MERGE), 0);
    b = a;
    b.hardware_id = hw2;
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, 0), COSTDB_SETUP_HARDWARE);
    CU_ASSERT_STRING_EQUAL(costdb_setup_field_name(COSTDB_SETUP_HARDWARE),
                           "hardware (fingerprint)");

    /* the family: another batch and the model built for it, same split */
    b = a;
    b.global_batch = 16;
    b.micro_batch_size = 4;
    b.model_id = m4;
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_IGNORE_FAMILY), 0);
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_IGNORE_MERGE), COSTDB_SETUP_GLOBAL_BATCH);
    b.model_id = m4cut; /* another layer split */
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_IGNORE_FAMILY), COSTDB_SETUP_MODEL);
    /* the same batch: the model by signature */
    b = a;
    b.model_id = m4;
    CU_ASSERT_EQUAL(diff(db, &a, db, &b, COSTDB_SETUP_IGNORE_RESUME), COSTDB_SETUP_MODEL);

    /* across files: by fingerprint and signature, not by id */
    ohw = hardware_row(other, "analytic:b");
    ohw = hardware_row(other, "analytic:a");
    om8 = model_row(other, "toy@8", 8, 4);
    CU_ASSERT_NOT_EQUAL(ohw, hw);
    b = a;
    b.hardware_id = ohw;
    b.model_id = om8;
    CU_ASSERT_EQUAL(diff(db, &a, other, &b, COSTDB_SETUP_IGNORE_MERGE), 0);
    b.hardware_id = hw; /* id 1 of the other file is analytic:b */
    CU_ASSERT_EQUAL(diff(db, &a, other, &b, COSTDB_SETUP_IGNORE_MERGE), COSTDB_SETUP_HARDWARE);
    /* a row that is not there is the error of reading it */
    b = a;
    b.hardware_id = 77;
    CU_ASSERT_EQUAL(costdb_setup_diff(db, &a, db, &b, 0, &d), COSTDB_ENOTFOUND);
    CU_ASSERT_EQUAL(costdb_setup_diff(NULL, &a, db, &b, 0, &d), COSTDB_EINVAL);
    costdb_close(&db);
    costdb_close(&other);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"stored micro-batch size", test_stored_size},
        {"schema 9 file", test_schema9},
        {"the same setup", test_setup_diff},
    };
    return TU_RUN("sweep_setup", tests);
}
