/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apsolve_problem_from_db on two threads (ApsolveOptions.load_threads;
 * solver/dbload.c, LoadJob): the tables made on the second thread while
 * the cost rows are read, the entries that fit written there from batches
 * in the walk's order, the out-of-memory ones by the walk. The problem is
 * the one thread's, byte for byte: every per-cell table (cost,
 * max_n_succ_stages, apply_cost, times, memory),
 * the unfit table (each cell's slot and the figures, in order), the
 * submeshes and configs, at load_threads 2, 3 and 8, under the training
 * objective, inference and a memory budget (each changes what the entries
 * write). The sweep must hold more entries that fit than the batches of
 * the ring (so that they wrap) and out-of-memory entries with figures.
 *
 * Usage: test_load_threads DB (sweep 1 of DB, made by load_threads.sh).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "apsolve.h"
#include "costdb.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL: " __VA_ARGS__);                                                          \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Whether the n-element tables a and b (either may be NULL) hold the same
 * bytes. */
static int same(const void *a, const void *b, size_t bytes)
{
    if (!a || !b)
        return a == b;
    return memcmp(a, b, bytes) == 0;
}

static void compare(const ApsolveProblem *p, const ApsolveProblem *q, const char *what)
{
    size_t n = apsolve_problem_cells(p), sc;
    CHECK(p->num_layers == q->num_layers && p->num_submeshes == q->num_submeshes &&
              p->num_configs == q->num_configs && p->num_devices == q->num_devices &&
              p->sweep_id == q->sweep_id,
          "%s: sizes differ", what);
    if (failures)
        return;
    sc = (size_t)p->num_submeshes * (size_t)p->num_configs;
    CHECK(same(p->submeshes, q->submeshes, (size_t)p->num_submeshes * sizeof *p->submeshes),
          "%s: submeshes", what);
    CHECK(same(p->configs, q->configs, sc * sizeof *p->configs), "%s: configs", what);
    CHECK(same(p->cost, q->cost, n * sizeof *p->cost), "%s: cost", what);
    CHECK(same(p->max_n_succ_stages, q->max_n_succ_stages, n * sizeof *p->max_n_succ_stages),
          "%s: max_n_succ_stages", what);
    CHECK(same(p->apply_cost, q->apply_cost, n * sizeof *p->apply_cost), "%s: apply_cost", what);
    CHECK(!p->times == !q->times, "%s: times table", what);
    if (p->times && q->times) { /* the same times, in the same slots */
        CHECK(p->times->n == q->times->n, "%s: times %zu against %zu", what, p->times->n,
              q->times->n);
        CHECK(same(p->times->slot, q->times->slot, n * sizeof *p->times->slot),
              "%s: times slots", what);
        if (p->times->n == q->times->n)
            CHECK(same(p->times->figs, q->times->figs, p->times->n * sizeof *p->times->figs),
                  "%s: times", what);
    }
    CHECK(!p->memory == !q->memory, "%s: memory table", what);
    if (p->memory && q->memory) { /* the same figures, in the same slots */
        CHECK(p->memory->n == q->memory->n, "%s: memory figures %zu against %zu", what,
              p->memory->n, q->memory->n);
        CHECK(same(p->memory->slot, q->memory->slot, n * sizeof *p->memory->slot),
              "%s: memory slots", what);
        if (p->memory->n == q->memory->n)
            CHECK(same(p->memory->figs, q->memory->figs, p->memory->n * sizeof *p->memory->figs),
                  "%s: memory figures", what);
    }
    CHECK(!p->unfit_table == !q->unfit_table, "%s: unfit table", what);
    if (p->unfit_table && q->unfit_table) {
        CHECK(p->unfit_table->n == q->unfit_table->n, "%s: unfit figures %zu against %zu", what,
              p->unfit_table->n, q->unfit_table->n);
        CHECK(same(p->unfit_table->slot, q->unfit_table->slot, n * sizeof *p->unfit_table->slot),
              "%s: unfit slots", what);
        if (p->unfit_table->n == q->unfit_table->n)
            CHECK(same(p->unfit_table->figs, q->unfit_table->figs,
                       p->unfit_table->n * sizeof *p->unfit_table->figs),
                  "%s: unfit figures", what);
    }
}

int main(int argc, char **argv)
{
    static const int threads[] = {2, 3, 8};
    Costdb *db = NULL;
    char err[256];
    size_t fit_total = 0, unfit_total = 0;
    /* none: a sweep without out-of-memory entries, whose problem has no
     * unfit table at any count (the one the load makes ahead at two
     * threads is dropped: dbload.c, load_unfit_end) */
    int none = argc == 3 && strcmp(argv[2], "none") == 0;
    if (argc != 2 && !none) {
        fprintf(stderr, "usage: test_load_threads DB [none]\n");
        return 2;
    }
    if (costdb_open(argv[1], COSTDB_OPEN_READONLY, &db, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return 1;
    }
    for (int v = 0; v < 3; v++) {
        ApsolveOptions o;
        ApsolveProblem *one = NULL;
        size_t fit = 0, n;
        const char *name = v == 0 ? "training" : v == 1 ? "inference" : "memory budget";
        memset(&o, 0, sizeof o);
        o.micro_batches = 2;
        o.inference = v == 1;
        o.memory_budget = v == 2 ? (int64_t)30 << 30 : 0;
        o.load_threads = 1;
        if (apsolve_problem_from_db(db, 1, &o, &one) != APSOLVE_OK) {
            printf("FAIL: %s: cannot load sweep 1 on one thread\n", name);
            costdb_close(&db);
            return 1;
        }
        n = apsolve_problem_cells(one);
        for (size_t k = 0; k < n; k++)
            fit += isfinite(one->cost[k]) != 0;
        fit_total += fit;
        unfit_total += one->unfit_table ? one->unfit_table->n : 0;
        for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
            ApsolveProblem *q = NULL;
            char what[64];
            snprintf(what, sizeof what, "%s, %d threads", name, threads[t]);
            o.load_threads = threads[t];
            CHECK(apsolve_problem_from_db(db, 1, &o, &q) == APSOLVE_OK, "%s: load", what);
            if (q)
                compare(one, q, what);
            apsolve_problem_free(&q);
        }
        printf("%s: %zu cells, %zu fit, %zu unfit figures: the same at 2, 3 and 8 threads\n",
               name, n, fit, one->unfit_table ? one->unfit_table->n : (size_t)0);
        apsolve_problem_free(&one);
    }
    /* the ring's 4 batches of 4096 entries wrap (solver/dbload.c) */
    CHECK(none || fit_total / 3 > 4 * 4096, "only %zu entries fit a load: the batches do not wrap",
          fit_total / 3);
    CHECK(none ? unfit_total == 0 : unfit_total > 0, "%zu out-of-memory figures", unfit_total);
    costdb_close(&db);
    if (failures)
        return 1;
    printf("ok\n");
    return 0;
}
