/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the compact placement store (schemas 3 and 6,
 * costdb/placement_write.c and placement_read.c):
 * a stage's set is replaced as a whole, the last row for a tensor wins,
 * texts and tensors are interned once, the writer's cached ids survive no
 * rollback, the reader's kept dictionary follows writes of this connection
 * and of another, and a damaged set is refused with a message, not read as
 * zero;
 * schema 13: a block of items repeated back to back is stored once with a
 * repeat pair, read alike through the API and the view, and a schema-12
 * file's lists take repeats as it migrates.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "testutil.h"

static int64_t make_sweep(Costdb *db)
{
    static const CostdbSubmesh sm[] = {{0, 1, 2}};
    static const CostdbConfig cf[] = {{0, 0, 2, 1, 0}, {0, 1, 1, 2, 0}};
    CostdbSweep s;
    tu_sweep(&s, "p", 1, 2, 8, 2, 2);
    snprintf(s.layer_option, sizeof s.layer_option, "manual");
    snprintf(s.submesh_space, sizeof s.submesh_space, "all");
    snprintf(s.logical_space, sizeof s.logical_space, "all");
    s.status = COSTDB_SWEEP_RUNNING;
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 1, cf, 2), 0);
    return s.id;
}

static CostdbPlacement row(int end, int config, const char *role, int tensor, const char *spec)
{
    CostdbPlacement p;
    memset(&p, 0, sizeof p);
    p.start_layer = 0;
    p.end_layer = end;
    p.submesh_index = 0;
    p.config_index = config;
    p.tensor_index = tensor;
    snprintf(p.tensor_name, sizeof p.tensor_name, "t%d", tensor);
    snprintf(p.role, sizeof p.role, "%s", role);
    snprintf(p.shape, sizeof p.shape, "%d,8", tensor + 1);
    snprintf(p.dtype, sizeof p.dtype, "f16");
    snprintf(p.sharding_spec, sizeof p.sharding_spec, "%s", spec);
    return p;
}

static void test_replace_and_order(void)
{
    Costdb *db = tu_open_new("pl1.db");
    int64_t id = make_sweep(db);
    CostdbPlacement in[5] = {
        row(1, 0, "output", 7, "S1"), row(1, 0, "param", 3, "S2"), row(1, 0, "input", 5, "S1"),
        row(1, 0, "param", 3, "S3"), /* the same tensor again: this one wins */
        row(0, 1, "param", 3, "S2"), /* another stage, in the same call */
    }, *out = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(costdb_placements_put(db, id, in, 5), 0);
    CU_ASSERT_EQUAL(costdb_placements_get(db, id, 0, 1, 0, 0, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_STRING_EQUAL(out[0].role, "param");
    CU_ASSERT_STRING_EQUAL(out[0].sharding_spec, "S3");
    CU_ASSERT_STRING_EQUAL(out[0].shape, "4,8");
    CU_ASSERT_STRING_EQUAL(out[1].role, "input");
    CU_ASSERT_EQUAL(out[1].tensor_index, 5);
    CU_ASSERT_STRING_EQUAL(out[2].tensor_name, "t7");
    free(out);
    /* a second put of the stage replaces its whole set */
    CostdbPlacement again = row(1, 0, "input", 9, "S4");
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, &again, 1), 0);
    CU_ASSERT_EQUAL(costdb_placements_get(db, id, 0, 1, 0, 0, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_STRING_EQUAL(out[0].sharding_spec, "S4");
    free(out);
    CU_ASSERT_EQUAL(costdb_placements_list(db, id, &out, &n), 0);
    CU_ASSERT_EQUAL(n, 2);
    free(out);
    costdb_close(&db);
    /* every text once; tensor 3 once although two stages and two specs use it */
    CU_ASSERT_EQUAL(tu_count(tu_path("pl1.db"), "placement_text WHERE text = 'S2'"), 1);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl1.db"), "placement_tensor WHERE tensor_index = 3"), 1);
    /* the view shows the schema-1 columns */
    CU_ASSERT_EQUAL(tu_count(tu_path("pl1.db"),
                             "placement WHERE role='param' AND sharding_spec='S2' AND tensor_name='t3'"), 1);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl1.db"), "placement WHERE shape='4,8' AND dtype='f16'"), 1);
}

/* A text first interned inside a transaction that rolls back is gone from
 * the file; the writer must not reuse its cached id afterwards. */
static void test_rollback_drops_cached_ids(void)
{
    Costdb *db = tu_open_new("pl2.db");
    int64_t id = make_sweep(db);
    CostdbPlacement p = row(1, 0, "param", 2, "ShardingSpec(new)"), *out = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL_FATAL(costdb_begin(db), 0);
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, &p, 1), 0);
    CU_ASSERT_EQUAL(costdb_rollback(db), 0);
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, &p, 1), 0);
    CU_ASSERT_EQUAL(costdb_placements_get(db, id, 0, 1, 0, 0, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_STRING_EQUAL(out[0].sharding_spec, "ShardingSpec(new)");
    CU_ASSERT_STRING_EQUAL(out[0].tensor_name, "t2");
    free(out);
    costdb_close(&db);
}

/* The reader keeps a sweep's tensors and texts between calls
 * (placement_read.c's dictionary): a set another connection writes after
 * the first read, with a tensor and a text new to the file, reads with
 * them; so does one this connection writes itself. */
static void test_dictionary_follows_writes(void)
{
    Costdb *db = tu_open_new("pl4.db"), *other = NULL;
    int64_t id = make_sweep(db);
    CostdbPlacement a = row(1, 0, "param", 2, "S1"), b = row(0, 1, "input", 11, "Snew"),
                    c = row(0, 0, "output", 12, "Sown"), *out = NULL;
    size_t n = 0;
    char err[512];
    CU_ASSERT_EQUAL_FATAL(costdb_placements_put(db, id, &a, 1), 0);
    for (int k = 0; k < 2; k++) { /* read, then read from the kept dictionary */
        CU_ASSERT_EQUAL(costdb_placements_get(db, id, 0, 1, 0, 0, &out, &n), 0);
        CU_ASSERT_EQUAL_FATAL(n, 1);
        CU_ASSERT_STRING_EQUAL(out[0].sharding_spec, "S1");
        CU_ASSERT_STRING_EQUAL(out[0].tensor_name, "t2");
        free(out);
        out = NULL;
    }
    CU_ASSERT_EQUAL_FATAL(costdb_open(tu_path("pl4.db"), COSTDB_OPEN_NOCREATE, &other, err,
                                      sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_placements_put(other, id, &b, 1), 0);
    costdb_close(&other);
    CU_ASSERT_EQUAL(costdb_placements_get(db, id, 0, 0, 0, 1, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_STRING_EQUAL(out[0].sharding_spec, "Snew");
    CU_ASSERT_STRING_EQUAL(out[0].tensor_name, "t11");
    CU_ASSERT_STRING_EQUAL(out[0].shape, "12,8");
    free(out);
    out = NULL;
    CU_ASSERT_EQUAL_FATAL(costdb_placements_put(db, id, &c, 1), 0);
    CU_ASSERT_EQUAL(costdb_placements_get(db, id, 0, 0, 0, 0, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_STRING_EQUAL(out[0].sharding_spec, "Sown");
    CU_ASSERT_STRING_EQUAL(out[0].tensor_name, "t12");
    free(out);
    CU_ASSERT_EQUAL(costdb_placements_list(db, id, &out, &n), 0);
    CU_ASSERT_EQUAL(n, 3);
    free(out);
    costdb_close(&db);
}

/* After sql damages pl3.db, reading the set of layers 0-1 (submesh 0,
 * config 0) of sweep id fails: with want (any error when want is 0), and
 * naming msg when given. */
static void expect_damaged(int64_t id, const char *sql, int want, const char *msg)
{
    Costdb *db = NULL;
    CostdbPlacement *out = NULL;
    size_t n = 0;
    char err[512];
    CU_ASSERT_EQUAL_FATAL(tu_exec(tu_path("pl3.db"), sql), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(tu_path("pl3.db"), COSTDB_OPEN_NOCREATE, &db, err, sizeof err), 0);
    int rc = costdb_placements_get(db, id, 0, 1, 0, 0, &out, &n);
    if (want) {
        CU_ASSERT_EQUAL(rc, want);
    } else {
        CU_ASSERT(rc < 0);
    }
    if (msg) {
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), msg));
    }
    free(out);
    costdb_close(&db);
}

static void test_bad_rows_and_damaged_sets(void)
{
    Costdb *db = tu_open_new("pl3.db");
    int64_t id = make_sweep(db);
    CostdbPlacement p = row(1, 0, "grad", 2, "S");
    char err[512];
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, &p, 1), COSTDB_ECONSTRAINT);
    p = row(1, 0, "param", -1, "S");
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, &p, 1), COSTDB_ECONSTRAINT);
    /* texts not NUL-terminated in their fields: a spec always, and the
     * name, shape or dtype of a tensor the sweep does not hold yet (those
     * of a tensor it holds are not read: it keeps what it was first stored
     * with) */
    p = row(1, 0, "param", 2, "S");
    memset(p.sharding_spec, 'S', sizeof p.sharding_spec);
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, &p, 1), COSTDB_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "sharding_spec"));
    /* a role not NUL-terminated is refused as such (a bad name before
     * it); one with bytes after its NUL is the name */
    p = row(1, 0, "param", 2, "S");
    memset(p.role, 'p', sizeof p.role);
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, &p, 1), COSTDB_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "'role' is not NUL-terminated"));
    memset(p.sharding_spec, 'S', sizeof p.sharding_spec);
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, &p, 1), COSTDB_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "'role'"));
    p = row(1, 0, "param", 7, "S");
    memcpy(p.role, "input\0zz", 8);
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, &p, 1), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl3.db"), "placement WHERE role = 'input' AND "
                             "tensor_index = 7 AND sharding_spec = 'S'"), 1);
    p = row(1, 0, "param", 2, "S");
    memset(p.shape, '9', sizeof p.shape);
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, &p, 1), COSTDB_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "shape"));
    p = row(1, 0, "param", 2, "S");
    CU_ASSERT_EQUAL_FATAL(costdb_placements_put(db, id, &p, 1), 0);
    memset(p.tensor_name, 'n', sizeof p.tensor_name);
    CU_ASSERT_EQUAL(costdb_placements_put(db, id, &p, 1), 0);
    p = row(1, 0, "param", 2, "S");
    CU_ASSERT_EQUAL_FATAL(costdb_placements_put(db, id, &p, 1), 0);
    costdb_close(&db);
    /* a spec id that names no text */
    expect_damaged(id, "UPDATE placement_set SET items = '[[0,2,99999]]', first_tensor = NULL, "
                   "tail_id = NULL", COSTDB_ECORRUPT, "sharding_spec");
    /* not JSON at all */
    expect_damaged(id, "UPDATE placement_set SET items = '[[0,'", 0, NULL);
    /* a reference to a shared list that is not there, and a damaged list
     * (schema 7); the shell's sqlite3 does not enforce foreign keys */
    CU_ASSERT_EQUAL_FATAL(costdb_open(tu_path("pl3.db"), COSTDB_OPEN_NOCREATE, &db, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_placements_put(db, id, &p, 1), 0);
    costdb_close(&db);
    expect_damaged(id, "UPDATE placement_set SET tail_id = 99999", COSTDB_ECORRUPT,
                   "missing placement_tail");
    expect_damaged(id, "UPDATE placement_set SET tail_id = (SELECT max(id) FROM placement_tail); "
                   "UPDATE placement_tail SET items = '[1,0,0,-7,1]'", COSTDB_ECORRUPT,
                   "not a placement list");
    /* first_tensor near INT64_MAX plus a delta overflowed in the decoder
     * (UBSan; refused only by luck): the base is a tensor index or refused */
    expect_damaged(id, "UPDATE placement_set SET first_tensor = 9223372036854775800 WHERE "
                   "tail_id IS NOT NULL; UPDATE placement_tail SET items = '[1,0,0,100,1]'",
                   COSTDB_ECORRUPT, "first_tensor");
    expect_damaged(id, "UPDATE placement_set SET first_tensor = 2147483648 WHERE "
                   "tail_id IS NOT NULL; UPDATE placement_tail SET items = '[1,0,0,-1,1]'",
                   COSTDB_ECORRUPT, "first_tensor");
    /* a shared list in schema 3's form, which would ignore first_tensor */
    expect_damaged(id, "UPDATE placement_tail SET items = '[[0,2,1]]'", COSTDB_ECORRUPT, NULL);
    /* schema 13's repeats (r, -p): a block longer than the literal pairs
     * just before it, no repetition, more items than the counts, a repeat
     * of a repeat */
    expect_damaged(id, "UPDATE placement_set SET first_tensor = 2; UPDATE placement_tail SET "
                   "items = '[3,0,0,0,1,1,-2]'", COSTDB_ECORRUPT, "not a placement list");
    expect_damaged(id, "UPDATE placement_tail SET items = '[2,0,0,0,1,0,-1]'", COSTDB_ECORRUPT,
                   "not a placement list");
    expect_damaged(id, "UPDATE placement_tail SET items = '[3,0,0,0,1,3,-1]'", COSTDB_ECORRUPT,
                   "not a placement list");
    expect_damaged(id, "UPDATE placement_tail SET items = '[3,0,0,0,1,1,-1,1,-1]'",
                   COSTDB_ECORRUPT, "not a placement list");
    /* a repeat that would make far more items than the sweep has tensors */
    expect_damaged(id, "UPDATE placement_tail SET items = '[100000,0,0,0,1,99999,-1]'",
                   COSTDB_ECORRUPT, "not a placement list");
    /* and a good one decodes: tensors 2, 3 and (the pair of delta 1
     * repeated) 4, of spec 1, of which the sweep holds only 2 */
    expect_damaged(id, "UPDATE placement_tail SET items = '[3,0,0,0,1,1,1,1,-1]'",
                   COSTDB_ECORRUPT, "placement of tensor 3");
}

/* Four layers of three parameters each, the same deltas and specs, and an
 * input and an output: the parameters' block is stored once and repeated
 * (schema 13), and the set reads back item for item, through the API and
 * the view. */
static CostdbPlacement layered[14];

static void make_layered(void)
{
    static const char *const spec[3] = {"S1", "S2", "S1"};
    static const int off[3] = {0, 1, 3};
    for (int l = 0; l < 4; l++)
        for (int k = 0; k < 3; k++)
            layered[3 * l + k] = row(1, 0, "param", 10 + 5 * l + off[k], spec[k]);
    layered[12] = row(1, 0, "input", 2, "S3");
    layered[13] = row(1, 0, "output", 40, "S3");
}

static void expect_layered(const CostdbPlacement *out, size_t n)
{
    CU_ASSERT_EQUAL_FATAL(n, 14);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(out[i].tensor_index, layered[i].tensor_index);
        CU_ASSERT_STRING_EQUAL(out[i].role, layered[i].role);
        CU_ASSERT_STRING_EQUAL(out[i].sharding_spec, layered[i].sharding_spec);
        CU_ASSERT_STRING_EQUAL(out[i].tensor_name, layered[i].tensor_name);
    }
}

static void test_repeats(void)
{
    Costdb *db = tu_open_new("pl6.db");
    int64_t id = make_sweep(db);
    CostdbPlacement *out = NULL;
    size_t n = 0;
    make_layered();
    CU_ASSERT_EQUAL_FATAL(costdb_placements_put(db, id, layered, 14), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_placements_get(db, id, 0, 1, 0, 0, &out, &n), 0);
    expect_layered(out, n);
    free(out);
    costdb_close(&db);
    /* deltas 0, 1, 2, then (2, 1, 2) three times: the block of deltas
     * (1, 2, 2) at the second pair, twice more, then 1, 2 and the input
     * and output */
    CU_ASSERT_EQUAL(tu_count(tu_path("pl6.db"), "placement_tail WHERE items GLOB "
                             "'[[]12,1,1,0,*,1,*,2,*,2,*,2,-3,1,*,2,*,-26,*,38,*]'"), 1);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl6.db"), "placement"), 14);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl6.db"), "placement WHERE role = 'param' AND "
                             "sharding_spec = 'S2' AND tensor_index IN (11, 16, 21, 26)"), 4);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl6.db"), "placement WHERE role = 'param' AND "
                             "sharding_spec = 'S1' AND tensor_index IN (10, 13, 15, 18, 20, 23,"
                             " 25, 28)"), 8);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl6.db"), "placement WHERE (role = 'input' AND "
                             "tensor_index = 2) OR (role = 'output' AND tensor_index = 40)"), 2);
}

/* A schema-12 file (migrations 001-012 run by hand) with the layered set as
 * approf wrote it then, literal pairs only: read-only it reads as it is;
 * migrated, its list takes the repeat in place (same id, new hash: the
 * writer finds it again instead of storing a second copy) and reads the
 * same through the API and the view. */
static void test_migrate_schema12(void)
{
    const char *p = tu_path("schema12.db");
    Costdb *db = NULL;
    CostdbPlacement *out = NULL;
    size_t n = 0;
    int v = 0;
    make_layered();
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, 12), 0);
    /* texts 1-3 the specs, 4 the dtype, then the tensors' names and shapes
     * as row() makes them */
    CU_ASSERT_EQUAL_FATAL(tu_exec(p,
        TU_SWEEP3_SQL
        "INSERT INTO placement_text (id, text) VALUES (1, 'S1'), (2, 'S2'), (3, 'S3'),"
        " (4, 'f16');"
        "WITH RECURSIVE k(t) AS (SELECT 2 UNION ALL SELECT t + 1 FROM k WHERE t < 40)"
        " INSERT INTO placement_text (text) SELECT 't' || t FROM k UNION ALL"
        " SELECT (t + 1) || ',8' FROM k;"
        "WITH RECURSIVE k(t) AS (SELECT 2 UNION ALL SELECT t + 1 FROM k WHERE t < 40)"
        " INSERT INTO placement_tensor SELECT 3, t,"
        " (SELECT id FROM placement_text WHERE text = 't' || t),"
        " (SELECT id FROM placement_text WHERE text = (t + 1) || ',8'), 4 FROM k;"
        "INSERT INTO placement_tail (id, hash, items) VALUES (7, 0,"
        " '[12,1,1,0,1,1,2,2,1,2,1,1,2,2,1,2,1,1,2,2,1,2,1,1,2,2,1,-26,3,38,3]');"
        "INSERT INTO placement_set (sweep_id, start_layer, end_layer, submesh_index,"
        " config_index, items, first_tensor, tail_id) VALUES (3, 0, 1, 0, 0, '', 10, 7);"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, 12);
    CU_ASSERT_EQUAL_FATAL(costdb_placements_get(db, 3, 0, 1, 0, 0, &out, &n), 0);
    expect_layered(out, n);
    free(out);
    costdb_close(&db);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_NOCREATE, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version());
    CU_ASSERT_EQUAL_FATAL(costdb_placements_get(db, 3, 0, 1, 0, 0, &out, &n), 0);
    expect_layered(out, n);
    free(out);
    /* written again, the same set finds the migrated list by hash and text */
    CU_ASSERT_EQUAL(costdb_placements_put(db, 3, layered, 14), 0);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(p, "placement_tail WHERE id = 7 AND items = "
                             "'[12,1,1,0,1,1,2,2,1,2,1,2,-3,1,2,2,1,-26,3,38,3]'"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "placement_tail"), 1);
    CU_ASSERT_EQUAL(tu_count(p, "placement"), 14);
    CU_ASSERT_EQUAL(tu_count(p, "placement WHERE role = 'param' AND sharding_spec = 'S2' AND "
                             "tensor_index IN (11, 16, 21, 26)"), 4);
}

/* Schema 7: sets whose items differ only by where their tensors start
 * (ranges [i, j] and [i+1, j+1] of a transformer) share one stored list;
 * a set with other specs gets its own. */
static void test_shared_lists(void)
{
    Costdb *db = tu_open_new("pl5.db");
    int64_t id = make_sweep(db);
    CostdbPlacement in[6] = {row(0, 0, "param", 3, "S1"), row(0, 0, "param", 10, "S2"),
                             row(0, 0, "output", 12, "S1"), row(1, 0, "param", 13, "S1"),
                             row(1, 0, "param", 20, "S2"), row(1, 0, "output", 22, "S1")};
    CostdbPlacement other[2] = {row(1, 1, "param", 3, "S2"), row(1, 1, "param", 10, "S2")};
    CostdbPlacement *out = NULL;
    size_t n = 0;
    in[3].start_layer = in[4].start_layer = in[5].start_layer = 1;
    CU_ASSERT_EQUAL_FATAL(costdb_placements_put(db, id, in, 6), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_placements_put(db, id, other, 2), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_placements_get(db, id, 1, 1, 0, 0, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT(out[0].tensor_index == 13 && out[1].tensor_index == 20 && out[2].tensor_index == 22);
    CU_ASSERT_STRING_EQUAL(out[1].sharding_spec, "S2");
    CU_ASSERT_STRING_EQUAL(out[2].role, "output");
    free(out);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl5.db"), "placement_set"), 3);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl5.db"), "placement_tail"), 2);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl5.db"), "placement WHERE start_layer = 1 AND "
                             "tensor_index = 22 AND role = 'output' AND sharding_spec = 'S1'"), 1);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl5.db"), "placement"), 8);
}

/* Schema 6 writes [n_param, n_input, n_output, d1, spec1, ...]; sets in
 * schema 3's [[role, tensor, spec], ...] still read the same, through the
 * API and through the view. */
static void test_two_encodings(void)
{
    Costdb *db = tu_open_new("pl4.db");
    int64_t id = make_sweep(db);
    CostdbPlacement in[4] = {row(1, 0, "param", 3, "S2"), row(1, 0, "param", 10, "S1"),
                             row(1, 0, "input", 5, "S1"), row(1, 0, "output", 2, "S3")};
    CostdbPlacement *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    char err[512], items[256];
    CU_ASSERT_EQUAL_FATAL(costdb_placements_put(db, id, in, 4), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_placements_get(db, id, 0, 1, 0, 0, &a, &na), 0);
    CU_ASSERT_EQUAL_FATAL(na, 4);
    CU_ASSERT(a[0].tensor_index == 3 && a[1].tensor_index == 10 && a[2].tensor_index == 5 &&
              a[3].tensor_index == 2);
    CU_ASSERT_STRING_EQUAL(a[1].sharding_spec, "S1");
    CU_ASSERT_STRING_EQUAL(a[3].role, "output");
    costdb_close(&db);
    /* the stored text (schema 7): a shared list with counts 2, 1, 1 and
     * deltas 0, 7, -5, -3, referenced from tensor 3 */
    CU_ASSERT_EQUAL(tu_count(tu_path("pl4.db"),
                             "placement_tail WHERE items GLOB '[[]2,1,1,0,*,7,*,-5,*,-3,*]'"), 1);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl4.db"), "placement_set WHERE items = '' AND "
                             "first_tensor = 3 AND tail_id IS NOT NULL"), 1);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl4.db"), "placement WHERE tensor_index = 10 AND "
                             "role = 'param' AND sharding_spec = 'S1'"), 1);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl4.db"), "placement WHERE tensor_index = 2 AND "
                             "role = 'output' AND sharding_spec = 'S3'"), 1);
    /* the same set in schema 6's encoding (its own items, first delta 3) */
    CU_ASSERT_EQUAL_FATAL(tu_exec(tu_path("pl4.db"), "UPDATE placement_set SET items = "
                                  "replace((SELECT items FROM placement_tail), '[2,1,1,0,', "
                                  "'[2,1,1,3,'), first_tensor = NULL, tail_id = NULL"), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl4.db"),
                             "placement_set WHERE items GLOB '[[]2,1,1,3,*,7,*,-5,*,-3,*]'"), 1);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl4.db"), "placement WHERE tensor_index = 10 AND "
                             "role = 'param' AND sharding_spec = 'S1'"), 1);
    CU_ASSERT_EQUAL_FATAL(costdb_open(tu_path("pl4.db"), COSTDB_OPEN_READONLY, &db, err,
                                      sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_placements_get(db, id, 0, 1, 0, 0, &b, &nb), 0);
    CU_ASSERT_EQUAL_FATAL(nb, na);
    for (size_t i = 0; i < na; i++) {
        CU_ASSERT_EQUAL(a[i].tensor_index, b[i].tensor_index);
        CU_ASSERT_STRING_EQUAL(a[i].sharding_spec, b[i].sharding_spec);
    }
    free(b);
    b = NULL;
    costdb_close(&db);
    /* the same set in schema 3's encoding */
    snprintf(items, sizeof items,
             "UPDATE placement_set SET items = (SELECT json_group_array(json_array("
             "CASE role WHEN 'param' THEN 0 WHEN 'input' THEN 1 ELSE 2 END, tensor_index,"
             " (SELECT id FROM placement_text WHERE text = sharding_spec))) FROM placement)");
    CU_ASSERT_EQUAL_FATAL(tu_exec(tu_path("pl4.db"), items), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl4.db"), "placement_set WHERE items LIKE '[[%'"), 1);
    CU_ASSERT_EQUAL_FATAL(costdb_open(tu_path("pl4.db"), COSTDB_OPEN_NOCREATE, &db, err,
                                      sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_placements_get(db, id, 0, 1, 0, 0, &b, &nb), 0);
    CU_ASSERT_EQUAL_FATAL(nb, na);
    for (size_t i = 0; i < na; i++) {
        CU_ASSERT_EQUAL(a[i].tensor_index, b[i].tensor_index);
        CU_ASSERT_STRING_EQUAL(a[i].role, b[i].role);
        CU_ASSERT_STRING_EQUAL(a[i].sharding_spec, b[i].sharding_spec);
        CU_ASSERT_STRING_EQUAL(a[i].tensor_name, b[i].tensor_name);
    }
    free(a);
    free(b);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(tu_path("pl4.db"), "placement WHERE tensor_index = 10 AND "
                             "role = 'param' AND sharding_spec = 'S1'"), 1);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"a stage's set is replaced whole; last row wins", test_replace_and_order},
        {"a rollback drops the writer's cached ids", test_rollback_drops_cached_ids},
        {"the reader's kept dictionary follows writes", test_dictionary_follows_writes},
        {"bad rows refused; damaged sets are errors", test_bad_rows_and_damaged_sets},
        {"schema 7, 6 and 3 encodings read alike", test_two_encodings},
        {"shifted sets share one stored list", test_shared_lists},
        {"a repeated block is stored once (schema 13)", test_repeats},
        {"a schema-12 file's lists take repeats", test_migrate_schema12},
    };
    return TU_RUN("costdb placements", tests);
}
