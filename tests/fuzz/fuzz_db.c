/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz harness for databases crafted to break the readers' assumptions.
 * A base database holds one real sweep (the mlp model, 2 layers, 1x2, with
 * placements, hardware, model layers and a stored plan). Each input is
 * either SQL, run against a fresh copy of it with CHECK and foreign-key
 * enforcement off (wrong types, missing rows, absurd shapes, NaN and
 * infinite costs, dropped tables, a newer user_version ...), or, when it
 * starts with the SQLite header, a database file of its own. The result is
 * opened with costdb_open and every reader runs over every sweep: listing,
 * entries, Alpa printing, CSV export, placements, plans, and apsolve
 * (problem from the database, auto plan, uniform plan, full estimate,
 * re-batching). Properties: nothing crashes, a refusal carries a message,
 * and a plan called feasible has a finite, non-negative cost — NaN never
 * reaches a plan (Alpa issue #810).
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apsolve.h"
#include "costdb.h"
#include "fuzz.h"
#include "fuzz_base.h"

static uint8_t *base;
static size_t base_len;
static char work_path[1024];
static FILE *devnull;

static void free_base(void)
{
    free(base);
    base = NULL;
    if (devnull)
        fclose(devnull);
    devnull = NULL;
}

/* Builds the base database once per process and keeps its bytes. */
static void make_base(void)
{
    char path[1024];
    if (base)
        return;
    snprintf(path, sizeof path, "%s/base.db", fuzz_tmpdir());
    snprintf(work_path, sizeof work_path, "%s/work.db", fuzz_tmpdir());
    base = fuzz_base_db(path, &base_len);
    devnull = fopen("/dev/null", "w");
    FUZZ_CHECK(devnull != NULL);
    atexit(free_base);
}

static void remove_work(void)
{
    char p[1100];
    unlink(work_path);
    snprintf(p, sizeof p, "%s-wal", work_path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", work_path);
    unlink(p);
    snprintf(p, sizeof p, "%s-journal", work_path);
    unlink(p);
}

static void check_plan(const ApsolvePlan *plan)
{
    FUZZ_CHECK(!isnan(plan->cost));
    if (plan->feasible)
        FUZZ_CHECK(isfinite(plan->cost) && plan->cost >= 0);
    for (size_t k = 0; k < plan->n_stages; k++)
        FUZZ_CHECK(!isnan(plan->stages[k].cost));
}

static void solve(Costdb *db, int64_t id, const CostdbSweep *sw)
{
    ApsolveOptions opt = {.micro_batches = sw->micro_batches > 0 ? sw->micro_batches : 1};
    ApsolveProblem *p = NULL;
    ApsolvePlan *plan = NULL, *uplan = NULL;
    ApsolveStageSpec specs[2];
    ApsolveFullEstimate full;
    ApsolveRebatch rb;
    CostdbSubmesh *subs = NULL;
    CostdbConfig *cfgs = NULL;
    size_t ns = 0, nc = 0;
    int maxs = 0, maxc = 0;
    char err[256];
    double cells;

    if (costdb_sweep_submeshes(db, id, &subs, &ns) != 0 ||
        costdb_sweep_configs(db, id, &cfgs, &nc) != 0)
        goto cleanup;
    for (size_t k = 0; k < ns; k++)
        maxs = subs[k].index > maxs ? subs[k].index : maxs;
    for (size_t k = 0; k < nc; k++)
        maxc = cfgs[k].config_index > maxc ? cfgs[k].config_index : maxc;
    /* The solver's table is dense: L (L + 1) / 2 * S * C cells, bounded by
     * L^2 * S * C here. A crafted sweep can ask
     * for terabytes; that is a documented limit (docs/reliability.md), not
     * something to allocate per fuzz input. */
    cells = (double)sw->num_layers * sw->num_layers * (maxs + 1.0) * (maxc + 1.0);
    if (opt.micro_batches > 1 << 20 || cells > 1 << 16)
        goto cleanup;
    if (apsolve_problem_from_db(db, id, &opt, &p) != 0)
        goto cleanup;
    if (apsolve_solve(p, &opt, &plan) == 0) {
        FUZZ_CHECK(plan->feasible);
        check_plan(plan);
        memset(&full, 0, sizeof full);
        if (apsolve_full_estimate(db, id, plan, &full) == 0 && full.available)
            FUZZ_CHECK(!isnan(full.total));
        if (apsolve_rebatch(p, plan, 2, 1, &rb) == 0)
            FUZZ_CHECK(!isnan(rb.cost));
        FUZZ_CHECK(apsolve_write(devnull, "json", &(ApsolveOutput){.label = "auto",
                   .kind = "auto", .plan = plan}, 1) == 0);
    } else {
        apsolve_explain(p, &opt, err, sizeof err);
    }
    if (p->num_layers >= 2 &&
        apsolve_uniform_specs(p->num_layers, 2, 1, p->cluster_gpus, 0, 0, -2, specs) == 0 &&
        apsolve_evaluate(p, &opt, specs, 2, &uplan, err, sizeof err) == 0)
        check_plan(uplan);
cleanup:
    apsolve_plan_free(&plan);
    apsolve_plan_free(&uplan);
    apsolve_problem_free(&p);
    free(subs);
    free(cfgs);
}

static void read_all(Costdb *db)
{
    CostdbSweep *list = NULL;
    size_t n = 0;
    int64_t plan_id = 0;

    if (costdb_sweep_list(db, &list, &n) != 0) {
        FUZZ_CHECK(costdb_errmsg(db)[0] != '\0');
        return;
    }
    for (size_t k = 0; k < n && k < 4; k++) {
        CostdbEntry *e = NULL;
        CostdbPlacement *pl = NULL;
        CostdbModel m;
        CostdbLayer *layers = NULL;
        CostdbHardware hw;
        size_t ne = 0, np = 0, nl = 0;
        int64_t id = list[k].id;
        if (costdb_entries_get(db, id, &e, &ne) == 0 && ne > 0) {
            char line[1024];
            costdb_format_entry(&e[0], line, sizeof line);
            if (costdb_placements_get(db, id, e[0].start_layer, e[0].end_layer,
                                      e[0].submesh_index, e[0].config_index, &pl, &np) == 0)
                free(pl);
        }
        free(e);
        (void)costdb_print_alpa(db, id, devnull);
        (void)costdb_csv_export(db, id, devnull);
        if (costdb_model_get(db, list[k].model_id, &m) == 0 &&
            costdb_model_layers(db, m.id, &layers, &nl) == 0)
            free(layers);
        (void)costdb_hardware_get(db, list[k].hardware_id, &hw);
        solve(db, id, &list[k]);
    }
    free(list);
    if (costdb_plan_latest(db, 0, &plan_id) == 0) {
        CostdbPlan plan;
        CostdbPlanStage *st = NULL;
        CostdbReshardingTask *t = NULL;
        size_t ns = 0, nt = 0;
        if (costdb_plan_get(db, plan_id, &plan, &st, &ns) == 0)
            free(st);
        if (costdb_resharding_get(db, plan_id, &t, &nt) == 0)
            free(t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Costdb *db = NULL;
    char err[1024] = "";
    int rc;

    if (size > 1 << 16)
        return 0;
    make_base();
    remove_work();
    if (size >= 16 && memcmp(data, "SQLite format 3", 16) == 0) {
        FILE *f = fopen(work_path, "wb");
        FUZZ_CHECK(f != NULL);
        FUZZ_CHECK(fwrite(data, 1, size, f) == size);
        FUZZ_CHECK(fclose(f) == 0);
    } else {
        fuzz_craft_db(work_path, base, base_len, data, size, 0);
    }
    rc = costdb_open(work_path, COSTDB_OPEN_NOCREATE, &db, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc < 0 && db == NULL);
        FUZZ_CHECK(err[0] != '\0');
    } else {
        read_all(db);
        costdb_close(&db);
    }
    remove_work();
    return 0;
}
