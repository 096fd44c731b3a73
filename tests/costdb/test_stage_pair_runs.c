/* SPDX-License-Identifier: Apache-2.0 */
/*
 * costdb_stage_pair_runs (costdb_rows.h), apsolve's load's reader: an
 * entry block's configs in one call (a sweep of 70 configs: runs of 64 and
 * 6 per range), the same entries, figures and order as costdb_stage_pairs;
 * a sweep with entries in stage_entry_row: runs of one; a callback's
 * non-zero return stops the scan with it.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_rows.h"
#include "testutil.h"

enum { L = 3, NC = 70, RANGES = L * (L + 1) / 2, MAXP = RANGES * NC };

typedef struct Pair {
    CostdbStageKey key;
    CostdbStageCost f[2];
} Pair;

typedef struct Got {
    Pair p[MAXP];
    size_t n;
    int runs, run_n[4 * MAXP], run_first[4 * MAXP];
    int stop_at_run; /* 0: never */
} Got;

static int collect_pair(void *ctx, const CostdbStageKey *key, const CostdbStageCost *fwd,
                        const CostdbStageCost *bwd)
{
    Got *g = ctx;
    if (g->n >= MAXP)
        return -100;
    g->p[g->n++] = (Pair){*key, {*fwd, *bwd}};
    return 0;
}

static int collect_run(void *ctx, const CostdbStageKey *first, int n,
                       const CostdbStageCost *const *fwd, const CostdbStageCost *const *bwd)
{
    Got *g = ctx;
    if (g->runs >= 4 * MAXP || n < 1)
        return -100;
    g->run_n[g->runs] = n;
    g->run_first[g->runs] = first->config_index;
    g->runs++;
    for (int k = 0; k < n; k++) {
        CostdbStageKey key = *first;
        int rc;
        CU_ASSERT((fwd[k] == NULL) == (bwd[k] == NULL));
        if (!fwd[k])
            continue;
        key.config_index += k;
        if ((rc = collect_pair(ctx, &key, fwd[k], bwd[k])) != 0)
            return rc;
    }
    return g->stop_at_run && g->runs == g->stop_at_run ? 9 : 0;
}

/* L layers, one submesh, NC configs, both phases of every entry: most
 * 'ok', some 'oom', a backward 'failed' now and then (no pair). */
static const char *make_db(const char *name)
{
    static const CostdbSubmesh sm[] = {{0, 1, 1}};
    CostdbConfig cf[NC];
    const char *p = tu_path(name);
    Costdb *db = NULL;
    CostdbSweep s;
    CostdbEntry *e = calloc(2 * MAXP, sizeof *e);
    size_t n = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    for (int c = 0; c < NC; c++)
        cf[c] = (CostdbConfig){0, c, 1, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 0}};
    tu_unlink_db(p);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "pair runs");
    s.cluster_hosts = 1;
    s.cluster_gpus = 1;
    s.global_batch = 8;
    s.micro_batches = 2;
    s.num_layers = L;
    snprintf(s.backend, sizeof s.backend, "model");
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 1, cf, NC), 0);
    for (int i = 0; i < L; i++)
        for (int j = i; j < L; j++)
            for (int c = 0; c < NC; c++)
                for (int ph = 0; ph < 2; ph++) {
                    CostdbEntry *y = &e[n++];
                    int h = (i * 7 + j * 5 + c * 3 + ph) % 11;
                    y->start_layer = i;
                    y->end_layer = j;
                    y->submesh_index = 0;
                    y->config_index = c;
                    y->phase = (CostdbPhase)ph;
                    y->status = h == 3 ? COSTDB_STATUS_OOM
                                : ph && h == 6 ? COSTDB_STATUS_FAILED : COSTDB_STATUS_OK;
                    y->compute_cost = (double)(1 + (c * 13 + j - i) % 17) / 8;
                    y->peak_memory = 1000 + 10 * c + j - i;
                    y->available_memory = 50000;
                    y->intermediate_size = 7 * (j - i + 1);
                    y->initial_size = c % 5;
                    y->invar_size = 11;
                    y->repeats = 1;
                    y->apply_cost = c % 4 == 0 ? -1.0 : (double)(c % 9) / 3;
                    if (y->status != COSTDB_STATUS_OK)
                        snprintf(y->error, sizeof y->error, "failed %d", h);
                }
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, s.id, e, n, 0), 0);
    costdb_close(&db);
    free(e);
    return p;
}

static int same_pairs(const Got *a, const Got *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (memcmp(&a->p[i].key, &b->p[i].key, sizeof a->p[i].key) ||
            memcmp(a->p[i].f, b->p[i].f, sizeof a->p[i].f))
            return 0;
    return 1;
}

/* entries in blocks (edit NULL), and in stage_entry_row */
static void check_runs(const char *edit)
{
    const char *p = make_db("runs.db");
    Costdb *db = NULL;
    Got *want = calloc(1, sizeof *want), *got = calloc(1, sizeof *got);
    CU_ASSERT_PTR_NOT_NULL_FATAL(want);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    if (edit)
        CU_ASSERT_EQUAL_FATAL(tu_exec(p, edit), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_stage_pairs(db, 1, collect_pair, want), 0);
    CU_ASSERT_EQUAL(costdb_stage_pair_runs(db, 1, collect_run, got), 0);
    CU_ASSERT(want->n > RANGES * NC / 2 && want->n < RANGES * NC); /* some configs unpaired */
    CU_ASSERT(same_pairs(got, want));
    if (!edit) { /* per range: configs 0..63, then 64..69 */
        CU_ASSERT_EQUAL(got->runs, 2 * RANGES);
        for (int r = 0; r < got->runs && r < 2 * RANGES; r++) {
            CU_ASSERT_EQUAL(got->run_first[r], r % 2 ? 64 : 0);
            CU_ASSERT_EQUAL(got->run_n[r], r % 2 ? NC - 64 : 64);
        }
    } else { /* the rows' path: one pair a run */
        CU_ASSERT_EQUAL((size_t)got->runs, got->n);
        for (int r = 0; r < got->runs; r++)
            CU_ASSERT_EQUAL(got->run_n[r], 1);
    }
    /* a non-zero return ends the scan with it */
    memset(got, 0, sizeof *got);
    got->stop_at_run = 2;
    CU_ASSERT_EQUAL(costdb_stage_pair_runs(db, 1, collect_run, got), 9);
    CU_ASSERT_EQUAL(got->runs, 2);
    CU_ASSERT_EQUAL(costdb_stage_pair_runs(db, 1, NULL, got), COSTDB_EINVAL);
    costdb_close(&db);
    free(want);
    free(got);
}

static void test_blocks(void)
{
    check_runs(NULL);
}

static void test_rows(void)
{
    check_runs("UPDATE stage_entry SET reused = reused WHERE start_layer = 1");
}

int main(void)
{
    static const CunitTest tests[] = {
        {"a block's configs in one run", test_blocks},
        {"rows of stage_entry_row in runs of one", test_rows},
    };
    return TU_RUN("costdb stage pair runs", tests);
}
