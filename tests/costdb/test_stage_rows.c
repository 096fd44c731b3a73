/* SPDX-License-Identifier: Apache-2.0 */
/*
 * costdb_stage_rows (costdb_rows.h), the solver's streamed read of a sweep:
 * on a sweep with every status, infinite, zero and unknown costs, it
 * hands over exactly the 'ok' rows of costdb_entries_get, field for field,
 * in primary-key order; a row it reads with a wrong type, an unknown status
 * or text with a NUL byte is refused as costdb_entries_get refuses it; a
 * callback's non-zero return stops the scan. costdb_stage_pairs hands over
 * the same rows paired (blocks, rows of stage_entry_row, the checked path)
 * and refuses what costdb_stage_rows refuses, with the same message.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_rows.h"
#include "testutil.h"

enum { L = 4, NS = 2, NC = 2, MAXR = L * (L + 1) / 2 * NS * NC * 2 };

typedef struct Got {
    CostdbStageRow r[MAXR];
    size_t n;
    size_t stop_after; /* 0: never */
} Got;

static int collect(void *ctx, const CostdbStageRow *r)
{
    Got *g = ctx;
    if (g->n >= MAXR)
        return -100;
    g->r[g->n++] = *r;
    return g->stop_after && g->n == g->stop_after ? 7 : 0;
}

typedef struct Pair {
    CostdbStageKey key;
    CostdbStageCost f[2];
} Pair;

typedef struct Pairs {
    Pair p[MAXR / 2];
    size_t n;
} Pairs;

static int collect_pair(void *ctx, const CostdbStageKey *key, const CostdbStageCost *fwd,
                        const CostdbStageCost *bwd)
{
    Pairs *g = ctx;
    if (g->n >= MAXR / 2)
        return -100;
    g->p[g->n].key = *key;
    g->p[g->n].f[0] = *fwd;
    g->p[g->n].f[1] = *bwd;
    g->n++;
    return 0;
}

/* A sweep of L layers on NS submeshes x NC configs with both phases of
 * every range, statuses and costs varied by a fixed pseudo-random walk. */
static const char *make_db(const char *name)
{
    static const CostdbSubmesh sm[] = {{0, 1, 1}, {1, 1, 2}};
    static const CostdbConfig cf[] = {
        {0, 0, 1, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 0}}, {0, 1, 1, 1, -1, {0, COSTDB_RECOMPUTE_NONE, 0}},
        {1, 0, 2, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 0}}, {1, 1, 1, 2, -1, {0, COSTDB_RECOMPUTE_NONE, 0}}};
    const char *p = tu_path(name);
    Costdb *db = NULL;
    CostdbSweep s;
    CostdbEntry *e = calloc(MAXR, sizeof *e);
    size_t n = 0;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    tu_unlink_db(p);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "stage rows");
    s.cluster_hosts = 1;
    s.cluster_gpus = 2;
    s.global_batch = 8;
    s.micro_batches = 2;
    s.num_layers = L;
    snprintf(s.backend, sizeof s.backend, "model");
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 2, cf, 4), 0);
    for (int i = 0; i < L; i++)
        for (int j = i; j < L; j++)
            for (int sb = 0; sb < NS; sb++)
                for (int c = 0; c < NC; c++)
                    for (int ph = 0; ph < 2; ph++) {
                        CostdbEntry *y = &e[n++];
                        x = x * 6364136223846793005ull + 1442695040888963407ull;
                        y->start_layer = i;
                        y->end_layer = j;
                        y->submesh_index = sb;
                        y->config_index = c;
                        y->phase = (CostdbPhase)ph;
                        y->status = (CostdbStatus)((x >> 60) % 8 < 4 ? COSTDB_STATUS_OK
                                                                      : (x >> 60) % 5);
                        y->compute_cost = (x >> 40) % 7 == 0 ? INFINITY
                                          : (x >> 40) % 7 == 1 ? 0.0
                                                               : (double)((x >> 20) % 1000) / 7;
                        y->peak_memory = (int64_t)((x >> 8) % 100000);
                        y->available_memory = (int64_t)((x >> 12) % 3) * 50000;
                        y->intermediate_size = (int64_t)((x >> 16) % 777);
                        y->initial_size = (int64_t)((x >> 24) % 999);
                        y->invar_size = 11;
                        y->repeats = 1;
                        y->apply_cost = (x >> 30) % 3 == 0 ? -1.0 : (double)((x >> 33) % 50) / 3;
                        /* half the oom rows with the time computed for them */
                        if (y->status == COSTDB_STATUS_OOM && (x >> 50) % 2)
                            y->unfit_cost = (double)((x >> 36) % 1000 + 1) / 9;
                        if (y->status != COSTDB_STATUS_OK)
                            snprintf(y->error, sizeof y->error, "failed %d", (int)(x % 97));
                    }
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, s.id, e, n, 0), 0);
    costdb_close(&db);
    free(e);
    return p;
}

/* stage_entry's key order: submesh_index descending, then start, end,
 * config, phase */
static int key_less(const CostdbEntry *a, const CostdbEntry *b)
{
    int ka[5] = {-a->submesh_index, a->start_layer, a->end_layer, a->config_index, a->phase};
    int kb[5] = {-b->submesh_index, b->start_layer, b->end_layer, b->config_index, b->phase};
    for (int k = 0; k < 5; k++)
        if (ka[k] != kb[k])
            return ka[k] < kb[k];
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    return key_less(a, b) ? -1 : key_less(b, a) ? 1 : 0;
}

static void test_equals_entries_get(void)
{
    const char *p = make_db("rows.db");
    Costdb *db = NULL;
    CostdbEntry *e = NULL;
    size_t ne = 0, k = 0, ok = 0, oom = 0, timed = 0;
    Got *g = calloc(1, sizeof *g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_entries_get(db, 1, &e, &ne), 0);
    CU_ASSERT_EQUAL_FATAL(ne, (size_t)MAXR);
    CU_ASSERT_EQUAL_FATAL(costdb_stage_rows(db, 1, collect, g), 0);
    qsort(e, ne, sizeof *e, cmp_entry);
    for (size_t i = 0; i < ne; i++) {
        const CostdbStageRow *r;
        if (e[i].status != COSTDB_STATUS_OK && e[i].status != COSTDB_STATUS_OOM)
            continue;
        ok++;
        /* an oom row: its cost +inf both ways, the time computed apart */
        if (e[i].status == COSTDB_STATUS_OOM) {
            oom++;
            timed += e[i].unfit_cost > 0;
            CU_ASSERT(isinf(e[i].compute_cost) && e[i].compute_cost > 0);
        }
        CU_ASSERT_FATAL(k < g->n);
        r = &g->r[k++];
        CU_ASSERT_EQUAL(r->start_layer, e[i].start_layer);
        CU_ASSERT_EQUAL(r->end_layer, e[i].end_layer);
        CU_ASSERT_EQUAL(r->submesh_index, e[i].submesh_index);
        CU_ASSERT_EQUAL(r->config_index, e[i].config_index);
        CU_ASSERT_EQUAL(r->phase, e[i].phase);
        CU_ASSERT(memcmp(&r->compute_cost, &e[i].compute_cost, sizeof(double)) == 0);
        CU_ASSERT(memcmp(&r->apply_cost, &e[i].apply_cost, sizeof(double)) == 0);
        CU_ASSERT_EQUAL(r->peak_memory, e[i].peak_memory);
        CU_ASSERT_EQUAL(r->available_memory, e[i].available_memory);
        CU_ASSERT_EQUAL(r->intermediate_size, e[i].intermediate_size);
        CU_ASSERT_EQUAL(r->initial_size, e[i].initial_size);
        CU_ASSERT(memcmp(&r->unfit_cost, &e[i].unfit_cost, sizeof(double)) == 0);
    }
    CU_ASSERT_EQUAL(g->n, ok);
    CU_ASSERT(timed > 0 && timed < oom);
    /* the walk gives every kind of row */
    CU_ASSERT(ok > 0 && ok < ne);
    /* a callback's non-zero return stops the scan and is returned */
    g->n = 0;
    g->stop_after = 3;
    CU_ASSERT_EQUAL(costdb_stage_rows(db, 1, collect, g), 7);
    CU_ASSERT_EQUAL(g->n, 3);
    CU_ASSERT_EQUAL(costdb_stage_rows(db, 1, NULL, g), COSTDB_EINVAL);
    free(e);
    free(g);
    costdb_close(&db);
}

/* Corruptions of the row (0, 0, 0, 0, fwd) after it is set 'ok'. */
static void test_refusals(void)
{
    static const struct {
        const char *sql, *msg; /* msg NULL: read, not refused */
    } cases[] = {
        {"UPDATE stage_profile SET peak_memory = 'lots'", "peak_memory"},
        {"UPDATE stage_profile SET compute_cost = 5e307", "COSTDB_MAX_SECONDS"},
        {"UPDATE stage_profile SET compute_cost = 'cheap'", "compute_cost"},
        {"UPDATE stage_profile SET available_memory = -1", "available_memory"},
        {"UPDATE stage_profile SET apply_cost = 'x'", "apply_cost"},
        {"UPDATE stage_profile SET status = 'bogus'", "unknown status 'bogus'"},
        {"UPDATE stage_profile SET status = CAST(x'6f6b0067617262616765' AS TEXT)", "NUL"},
        {"UPDATE stage_profile SET status = CAST('ok' AS BLOB)", "blob"},
        {"UPDATE stage_profile SET end_layer = 70000", "end_layer"},
        /* an oom row is read (apsolve's cp and ep steps price from it) */
        {"UPDATE stage_profile SET status = 'oom', peak_memory = 'lots'", "peak_memory"},
        /* a row with another known status is not read at all */
        {"UPDATE stage_profile SET status = 'failed', peak_memory = 'lots'", NULL},
        /* nor are the columns the solver does not use */
        {"UPDATE stage_profile SET spread = -1, error = hex(randomblob(600))", NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *p = make_db("bad.db");
        char sql[512], msg[512];
        Costdb *db = NULL;
        Got *g = calloc(1, sizeof *g);
        Pairs *pg = calloc(1, sizeof *pg);
        int rc;
        CU_ASSERT_PTR_NOT_NULL_FATAL(pg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p, "UPDATE stage_profile SET status = 'ok' WHERE start_layer = 0"
                                     " AND end_layer = 0 AND submesh_index = 0 AND"
                                     " config_index = 0 AND phase = 0"), 0);
        snprintf(sql, sizeof sql, "%s WHERE start_layer = 0 AND end_layer = 0 AND"
                 " submesh_index = 0 AND config_index = 0 AND phase = 0", cases[k].sql);
        CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p, sql), 0);
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
        rc = costdb_stage_rows(db, 1, collect, g);
        snprintf(msg, sizeof msg, "%s", costdb_errmsg(db));
        /* the pairs' reader refuses the same, with the same message */
        CU_ASSERT_EQUAL(costdb_stage_pairs(db, 1, collect_pair, pg), rc);
        if (rc)
            CU_ASSERT_STRING_EQUAL(costdb_errmsg(db), msg);
        free(pg);
        if (cases[k].msg) {
            CU_ASSERT_EQUAL(rc, COSTDB_ECORRUPT);
            CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), cases[k].msg));
            if (rc != COSTDB_ECORRUPT || !strstr(costdb_errmsg(db), cases[k].msg))
                fprintf(stderr, "case %zu: rc %d, '%s'\n", k, rc, costdb_errmsg(db));
        } else {
            CU_ASSERT_EQUAL(rc, 0);
            CU_ASSERT(g->n > 0);
        }
        free(g);
        costdb_close(&db);
    }
}

/* Field by field (the struct's padding is not part of a row). */
static int same_rows(const CostdbStageRow *a, const CostdbStageRow *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].start_layer != b[i].start_layer || a[i].end_layer != b[i].end_layer ||
            a[i].submesh_index != b[i].submesh_index || a[i].config_index != b[i].config_index ||
            a[i].phase != b[i].phase ||
            memcmp(&a[i].compute_cost, &b[i].compute_cost, sizeof(double)) ||
            memcmp(&a[i].apply_cost, &b[i].apply_cost, sizeof(double)) ||
            a[i].peak_memory != b[i].peak_memory ||
            a[i].available_memory != b[i].available_memory ||
            a[i].intermediate_size != b[i].intermediate_size ||
            a[i].initial_size != b[i].initial_size)
            return 0;
    return 1;
}

/* Cost ids approf would not write (far apart) send every entry through
 * the checked path, which reads the same rows; a cost_id that names no
 * cost row is refused by both readers. */
static void test_odd_cost_ids(void)
{
    const char *p = make_db("sparse.db");
    Got *want = calloc(1, sizeof *want), *got = calloc(1, sizeof *got);
    Costdb *db = NULL;
    CostdbEntry *e = NULL;
    size_t n = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(want);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_stage_rows(db, 1, collect, want), 0);
    costdb_close(&db);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, "UPDATE stage_cost SET cost_id = cost_id * 1000003;"
                                     " UPDATE stage_entry SET cost_id = cost_id * 1000003"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_stage_rows(db, 1, collect, got), 0);
    CU_ASSERT_EQUAL(got->n, want->n);
    CU_ASSERT(want->n > 0 && same_rows(got->r, want->r, want->n));
    costdb_close(&db);

    CU_ASSERT_EQUAL_FATAL(tu_exec(p, "UPDATE stage_entry SET cost_id = 7 WHERE start_layer = 1"
                                     " AND end_layer = 2 AND submesh_index = 1"
                                     " AND config_index = 0 AND phase = 1"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    got->n = 0;
    CU_ASSERT_EQUAL(costdb_stage_rows(db, 1, collect, got), COSTDB_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "table stage_entry, row (start_layer=1,"
                                  " end_layer=2, submesh_index=1, config_index=0, phase=1):"
                                  " its cost_id 7 names no row of table stage_cost"));
    CU_ASSERT_EQUAL(costdb_entries_get(db, 1, &e, &n), COSTDB_ECORRUPT);
    CU_ASSERT_PTR_NULL(e);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "phase=1): its cost_id names no row of"
                                  " table stage_cost"));
    costdb_close(&db);
    /* the same on the fast path: an id inside the array that no row has */
    p = make_db("dangling.db");
    CU_ASSERT_EQUAL_FATAL(tu_exec(p, "UPDATE stage_entry SET cost_id = (SELECT max(cost_id) + 1"
                                     " FROM stage_cost) WHERE start_layer = 1 AND end_layer = 2"
                                     " AND submesh_index = 1 AND config_index = 0"
                                     " AND phase = 1"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    got->n = 0;
    CU_ASSERT_EQUAL(costdb_stage_rows(db, 1, collect, got), COSTDB_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "names no row of table stage_cost"));
    costdb_close(&db);
    free(want);
    free(got);
}

/* The rows of costdb_stage_rows paired as apsolve's load paired them
 * before costdb_stage_pairs: the previous row with the next one of the
 * same key. */
static void pair_rows(const Got *g, Pairs *out)
{
    size_t prev = 0;
    int have = 0;
    out->n = 0;
    for (size_t i = 0; i < g->n; i++) {
        const CostdbStageRow *a = &g->r[prev], *b = &g->r[i];
        if (have && a->start_layer == b->start_layer && a->end_layer == b->end_layer &&
            a->submesh_index == b->submesh_index && a->config_index == b->config_index) {
            const CostdbStageRow *ph[2] = {a, b};
            Pair *x = &out->p[out->n++];
            x->key = (CostdbStageKey){a->start_layer, a->end_layer, a->submesh_index,
                                      a->config_index};
            for (int h = 0; h < 2; h++)
                x->f[h] = (CostdbStageCost){ph[h]->compute_cost, ph[h]->apply_cost,
                                            ph[h]->wgrad_cost, ph[h]->unfit_cost,
                                            ph[h]->peak_memory, ph[h]->available_memory,
                                            ph[h]->intermediate_size, ph[h]->initial_size};
            have = 0;
            continue;
        }
        prev = i;
        have = 1;
    }
}

static int same_pairs(const Pairs *a, const Pairs *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const Pair *x = &a->p[i], *y = &b->p[i];
        if (memcmp(&x->key, &y->key, sizeof x->key))
            return 0;
        for (int h = 0; h < 2; h++)
            if (memcmp(&x->f[h].compute_cost, &y->f[h].compute_cost, sizeof(double)) ||
                memcmp(&x->f[h].apply_cost, &y->f[h].apply_cost, sizeof(double)) ||
                memcmp(&x->f[h].wgrad_cost, &y->f[h].wgrad_cost, sizeof(double)) ||
                memcmp(&x->f[h].unfit_cost, &y->f[h].unfit_cost, sizeof(double)) ||
                x->f[h].peak_memory != y->f[h].peak_memory ||
                x->f[h].available_memory != y->f[h].available_memory ||
                x->f[h].intermediate_size != y->f[h].intermediate_size ||
                x->f[h].initial_size != y->f[h].initial_size)
                return 0;
    }
    return 1;
}

/* costdb_stage_pairs against costdb_stage_rows paired, on entries in
 * blocks, on a sweep with some in stage_entry_row (the view's path), and
 * with cost ids that send every entry through the checked path; a
 * callback's non-zero return stops it. */
static void test_pairs(void)
{
    static const char *const edits[] = {
        NULL,
        "UPDATE stage_entry SET reused = reused WHERE start_layer = 1",
        "UPDATE stage_cost SET cost_id = cost_id * 1000003;"
        " UPDATE stage_entry SET cost_id = cost_id * 1000003",
    };
    Got *g = calloc(1, sizeof *g);
    Pairs *want = calloc(1, sizeof *want), *got = calloc(1, sizeof *got);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(want);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
        const char *p = make_db("pairs.db");
        Costdb *db = NULL;
        if (edits[k])
            CU_ASSERT_EQUAL_FATAL(tu_exec(p, edits[k]), 0);
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
        g->n = 0;
        got->n = 0;
        CU_ASSERT_EQUAL(costdb_stage_rows(db, 1, collect, g), 0);
        CU_ASSERT_EQUAL(costdb_stage_pairs(db, 1, collect_pair, got), 0);
        pair_rows(g, want);
        CU_ASSERT(want->n > 0 && g->n > 2 * want->n); /* lone phases too */
        CU_ASSERT(same_pairs(got, want));
        if (!same_pairs(got, want))
            fprintf(stderr, "case %zu: %zu pairs, %zu wanted\n", k, got->n, want->n);
        /* cost_id: the blocks' figures name their row (edit 0: every
         * entry in blocks); those read through the checked path, none */
        for (size_t i = 0; i < got->n; i++)
            for (int h = 0; h < 2; h++) {
                if (k == 0)
                    CU_ASSERT(got->p[i].f[h].cost_id > 0);
                if (k == 2)
                    CU_ASSERT_EQUAL(got->p[i].f[h].cost_id, 0);
            }
        CU_ASSERT_EQUAL(costdb_stage_pairs(db, 1, NULL, got), COSTDB_EINVAL);
        costdb_close(&db);
    }
    free(g);
    free(want);
    free(got);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the 'ok' rows of costdb_entries_get", test_equals_entries_get},
        {"refusals of the rows it reads", test_refusals},
        {"odd cost ids", test_odd_cost_ids},
        {"pairs of phases", test_pairs},
    };
    return TU_RUN("costdb stage rows", tests);
}
