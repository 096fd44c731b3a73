/* SPDX-License-Identifier: Apache-2.0 */
/*
 * costdb_placements_put_keyed (costdb.h; issue 38, wrmemo): one database
 * written with costdb_placements_put and another with the keyed put, the
 * same stages in the same order, hold the same rows with the same ids in
 * every placement table; the rows are made only when needed: a key seen
 * before over the same tensors, or over other tensors the sweep holds, is
 * stored without them; a key over tensors the sweep does not hold, a
 * rollback, costdb_forget_written and another sweep make them again; a
 * row of another stage is refused and a failure of the rows' maker is
 * returned as it is.
 */
#include <CUnit/Basic.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "testutil.h"

static int64_t make_sweep(Costdb *db, const char *name)
{
    static const CostdbSubmesh sm[] = {{0, 1, 2}};
    static const CostdbConfig cf[] = {{0, 0, 2, 1, 0}, {0, 1, 1, 2, 0}};
    CostdbSweep s;
    tu_sweep(&s, name, 1, 2, 8, 2, 2);
    snprintf(s.layer_option, sizeof s.layer_option, "manual");
    snprintf(s.submesh_space, sizeof s.submesh_space, "all");
    snprintf(s.logical_space, sizeof s.logical_space, "all");
    s.status = COSTDB_SWEEP_RUNNING;
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 1, cf, 2), 0);
    return s.id;
}

/* A stage's rows: n tensors base + off[k], roles and specs by k. */
typedef struct Stage {
    int start, end, config, base;
    const int *off;
    int n;
    const char *const *spec;
} Stage;

static size_t stage_rows(const Stage *st, CostdbPlacement *p)
{
    static const char *const role[3] = {"param", "input", "output"};
    for (int k = 0; k < st->n; k++) {
        int t = st->base + st->off[k];
        memset(&p[k], 0, sizeof p[k]);
        p[k].start_layer = st->start;
        p[k].end_layer = st->end;
        p[k].submesh_index = 0;
        p[k].config_index = st->config;
        p[k].tensor_index = t;
        snprintf(p[k].tensor_name, sizeof p[k].tensor_name, "t%d", t);
        snprintf(p[k].role, sizeof p[k].role, "%s", role[k % 3]);
        snprintf(p[k].shape, sizeof p[k].shape, "%d,8", t + 1);
        snprintf(p[k].dtype, sizeof p[k].dtype, "f16");
        snprintf(p[k].sharding_spec, sizeof p[k].sharding_spec, "%s", st->spec[k]);
    }
    return (size_t)st->n;
}

/* The rows' maker: counts its calls; fail: its code, else the rows. */
typedef struct Maker {
    const Stage *st;
    CostdbPlacement rows[16];
    int calls, fail, wrong_stage;
} Maker;

static int make_rows(void *ctx, const CostdbPlacement **rows, size_t *n)
{
    Maker *m = ctx;
    m->calls++;
    if (m->fail)
        return m->fail;
    *n = stage_rows(m->st, m->rows);
    if (m->wrong_stage)
        m->rows[*n - 1].config_index ^= 1;
    *rows = m->rows;
    return 0;
}

/* The key: the rows' offsets, roles and specs as text. */
static void key_of(const Stage *st, char *buf, size_t cap, CostdbPlacementKey *key)
{
    size_t len = 0;
    for (int k = 0; k < st->n; k++)
        len += (size_t)snprintf(buf + len, cap - len, "%d/%d/%s;", st->off[k], k % 3, st->spec[k]);
    memset(key, 0, sizeof *key);
    key->start_layer = st->start;
    key->end_layer = st->end;
    key->submesh_index = 0;
    key->config_index = st->config;
    key->base = st->base;
    key->bytes = buf;
    key->len = len;
}

/* Puts stage st into a (plain) and b (keyed); returns the maker's calls. */
static int put_both(Costdb *a, int64_t ida, Costdb *b, int64_t idb, const Stage *st)
{
    CostdbPlacement p[16];
    CostdbPlacementKey key;
    Maker m;
    char buf[512];
    size_t n = stage_rows(st, p);
    memset(&m, 0, sizeof m);
    m.st = st;
    key_of(st, buf, sizeof buf, &key);
    CU_ASSERT_EQUAL(costdb_placements_put(a, ida, p, n), 0);
    CU_ASSERT_EQUAL(costdb_placements_put_keyed(b, idb, &key, make_rows, &m), 0);
    return m.calls;
}

/* Every row of the placement tables with its rowid, in rowid order. */
static char *dump(const char *path)
{
    static const char *const table[] = {"placement_text", "placement_tensor", "placement_tail",
                                        "placement_set"};
    sqlite3 *sql = NULL;
    TuText out = {NULL, 0, 0};
    CU_ASSERT_FATAL(sqlite3_open_v2(path, &sql, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    for (size_t t = 0; t < sizeof table / sizeof *table; t++) {
        sqlite3_stmt *st = NULL;
        char q[128];
        /* rowid order, or a WITHOUT ROWID table's key order */
        snprintf(q, sizeof q, "SELECT rowid, * FROM %s ORDER BY rowid", table[t]);
        if (sqlite3_prepare_v2(sql, q, -1, &st, NULL) != SQLITE_OK) {
            snprintf(q, sizeof q, "SELECT * FROM %s", table[t]);
            CU_ASSERT_FATAL(sqlite3_prepare_v2(sql, q, -1, &st, NULL) == SQLITE_OK);
        }
        tu_text_add(&out, table[t]);
        tu_text_add(&out, "\n");
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const unsigned char *v = sqlite3_column_text(st, c);
                tu_text_add(&out, v ? (const char *)v : "NULL");
                tu_text_add(&out, "|");
            }
            tu_text_add(&out, "\n");
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(sql);
    return out.s;
}

static void test_same_rows_made_only_when_needed(void)
{
    static const int off3[] = {4, 0, 2}, off6[] = {0, 2, 4, 10, 12, 14};
    static const char *const s3[] = {"S1", "S2", "S1"};
    static const char *const s6[] = {"S1", "S2", "S1", "S3", "S3", "S4"};
    const char *pa = tu_path("keyed_a.db"), *pb = tu_path("keyed_b.db");
    Costdb *a = tu_open_new("keyed_a.db"), *b = tu_open_new("keyed_b.db");
    int64_t ida = make_sweep(a, "p"), idb = make_sweep(b, "p");
    char *da, *db_;
    /* tensors 3, 5, 7, 13, 15, 17 stored by a stage of six rows */
    Stage six = {0, 1, 0, 3, off6, 6, s6};
    Stage st = {0, 0, 0, 3, off3, 3, s3};
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &six), 1);
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &six), 0); /* the same stage again: replaced */
    /* a new key over held tensors: made once, then not */
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &st), 1);
    st.config = 1;
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &st), 0);
    /* the same key over other tensors the sweep holds (13, 15, 17) */
    st.start = 1, st.end = 1, st.config = 0, st.base = 13;
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &st), 0);
    /* over tensors it does not hold (21, 23, 25): made, and then held */
    st.config = 1, st.base = 21;
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &st), 1);
    st.start = 0, st.end = 1, st.config = 1;
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &st), 0);
    /* over 5, 7, 9: 9 not held */
    st.config = 0, st.base = 5, st.start = 1, st.end = 1;
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &st), 1);
    /* a rollback drops what the connection remembers */
    CU_ASSERT_EQUAL(costdb_begin(a), 0);
    CU_ASSERT_EQUAL(costdb_begin(b), 0);
    st.base = 3, st.start = 0, st.end = 0, st.config = 0;
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &st), 0);
    CU_ASSERT_EQUAL(costdb_rollback(a), 0);
    CU_ASSERT_EQUAL(costdb_rollback(b), 0);
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &st), 1);
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &st), 0);
    /* and so does costdb_forget_written */
    costdb_forget_written(a);
    costdb_forget_written(b);
    CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &st), 1);
    /* another sweep holds none of the tensors: made, then remembered */
    {
        int64_t ida2 = make_sweep(a, "q"), idb2 = make_sweep(b, "q");
        CU_ASSERT_EQUAL(put_both(a, ida2, b, idb2, &st), 1);
        CU_ASSERT_EQUAL(put_both(a, ida2, b, idb2, &st), 0);
        /* the cache knows one sweep's tensors: back to the first, made */
        CU_ASSERT_EQUAL(put_both(a, ida, b, idb, &st), 1);
    }
    costdb_close(&a);
    costdb_close(&b);
    da = dump(pa);
    db_ = dump(pb);
    CU_ASSERT_PTR_NOT_NULL_FATAL(da);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db_);
    CU_ASSERT_STRING_EQUAL(da, db_);
    CU_ASSERT(strstr(da, "placement_set\n") && strlen(strstr(da, "placement_set\n")) > 40);
    free(da);
    free(db_);
}

static void test_refusals(void)
{
    static const int off3[] = {0, 2, 4};
    static const char *const s3[] = {"S1", "S2", "S1"};
    Costdb *db = tu_open_new("keyed_c.db");
    int64_t id = make_sweep(db, "p");
    Stage st = {0, 0, 0, 3, off3, 3, s3};
    CostdbPlacementKey key;
    Maker m;
    char buf[512];
    memset(&m, 0, sizeof m);
    m.st = &st;
    key_of(&st, buf, sizeof buf, &key);
    m.fail = COSTDB_ENOMEM;
    CU_ASSERT_EQUAL(costdb_placements_put_keyed(db, id, &key, make_rows, &m), COSTDB_ENOMEM);
    m.fail = 0;
    m.wrong_stage = 1;
    CU_ASSERT_EQUAL(costdb_placements_put_keyed(db, id, &key, make_rows, &m), COSTDB_EINVAL);
    CU_ASSERT_EQUAL(tu_count(tu_path("keyed_c.db"), "placement_set"), 0);
    /* refused: not remembered */
    m.wrong_stage = 0;
    m.calls = 0;
    CU_ASSERT_EQUAL(costdb_placements_put_keyed(db, id, &key, make_rows, &m), 0);
    CU_ASSERT_EQUAL(m.calls, 1);
    CU_ASSERT_EQUAL(costdb_placements_put_keyed(NULL, id, &key, make_rows, &m), COSTDB_EINVAL);
    CU_ASSERT_EQUAL(costdb_placements_put_keyed(db, id, NULL, make_rows, &m), COSTDB_EINVAL);
    CU_ASSERT_EQUAL(costdb_placements_put_keyed(db, id, &key, NULL, &m), COSTDB_EINVAL);
    costdb_close(&db);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"same rows, made only when needed", test_same_rows_made_only_when_needed},
        {"refusals", test_refusals},
    };
    return TU_RUN("costdb_placements_keyed", tests);
}
