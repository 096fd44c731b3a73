/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NaN and infinite costs never crash the solver nor reach a plan (the case
 * of Alpa issue #810, where a failed profile's NaN crashed stage planning).
 * Checked end to end: a CSV cost of NaN is refused; infinite (failed, OOM)
 * entries load as "no such stage"; entries a crafted database makes
 * negative or infinite are ignored by apsolve_problem_from_db; the optimum
 * around them is the one computed by hand; and pricing a plan with an
 * infinite stage at B = 1 (where Alpa's formula has 0 x inf) gives +inf,
 * not NaN, in apsolve_evaluate, apsolve_rebatch and the text output.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "apsolve.h"
#include "costdb.h"
#include "cunit_run.h"

static char dir[256];

static const char *header =
    "start,end,submesh,logical_mesh,force_batch_dim,phase,compute_cost,peak_memory,"
    "invar_size,outvar_size,temp_buffer_size,available_memory,intermediate_size,"
    "initial_size,status\n";

static void write_file(const char *path, const char *a, const char *b)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(a, f);
    fputs(b, f);
    fclose(f);
}

static void path_of(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

static Costdb *open_fresh(const char *name)
{
    char p[512], w[600];
    Costdb *db = NULL;
    path_of(p, sizeof p, name);
    unlink(p);
    snprintf(w, sizeof w, "%s-wal", p);
    unlink(w);
    snprintf(w, sizeof w, "%s-shm", p);
    unlink(w);
    CU_ASSERT_FATAL(costdb_open(p, 0, &db, NULL, 0) == 0);
    return db;
}

static void test_csv_nan_refused(void)
{
    char p[512];
    CostdbImportOptions opt = {0};
    CostdbSweep *list = NULL;
    size_t n = 99;
    int64_t id = 0;
    Costdb *db = open_fresh("nan.db");
    path_of(p, sizeof p, "nan.csv");
    write_file(p, header, "0,0,1x1,1x1,,fwd,1,0,0,0,0,0,0,0,ok\n"
                          "0,0,1x1,1x1,,bwd,nan,0,0,0,0,0,0,0,ok\n");
    CU_ASSERT(costdb_csv_import(db, p, &opt, &id) == COSTDB_EPARSE);
    CU_ASSERT(strstr(costdb_errmsg(db), "NaN") != NULL);
    CU_ASSERT(strstr(costdb_errmsg(db), ":3:7:") != NULL);
    CU_ASSERT(costdb_sweep_list(db, &list, &n) == 0);
    CU_ASSERT(n == 0);
    free(list);
    costdb_close(&db);
}

/* 2 layers on 1x2; B = 4. (1,1) on 1x1 failed (inf): the only feasible plan
 * is the single stage (0,1) on 1x2, cost 8: T = 8 + 3 * 8 = 32. */
static const char *rows =
    "0,0,1x1,1x1,,fwd,1,0,0,0,0,0,0,0,ok\n"
    "0,0,1x1,1x1,,bwd,2,0,0,0,0,0,0,0,ok\n"
    "1,1,1x1,1x1,,fwd,inf,0,0,0,0,0,0,0,oom\n"
    "1,1,1x1,1x1,,bwd,inf,0,0,0,0,0,0,0,oom\n"
    "0,1,1x1,1x1,,fwd,1,0,0,0,0,0,0,0,ok\n"
    "0,1,1x1,1x1,,bwd,1,0,0,0,0,0,0,0,ok\n"
    "0,0,1x2,2x1,0,fwd,0.5,0,0,0,0,0,0,0,ok\n"
    "0,0,1x2,2x1,0,bwd,0.5,0,0,0,0,0,0,0,ok\n"
    "1,1,1x2,2x1,0,fwd,0.5,0,0,0,0,0,0,0,ok\n"
    "1,1,1x2,2x1,0,bwd,0.5,0,0,0,0,0,0,0,ok\n"
    "0,1,1x2,2x1,0,fwd,4,0,0,0,0,0,0,0,ok\n"
    "0,1,1x2,2x1,0,bwd,4,0,0,0,0,0,0,0,ok\n";

static Costdb *import_table(int64_t *id)
{
    char p[512];
    CostdbImportOptions opt = {.cluster_hosts = 1, .cluster_gpus = 2, .micro_batches = 4};
    Costdb *db = open_fresh("inf.db");
    path_of(p, sizeof p, "inf.csv");
    write_file(p, header, rows);
    CU_ASSERT_FATAL(costdb_csv_import(db, p, &opt, id) == 0);
    return db;
}

static double solve_cost(Costdb *db, int64_t id, int *n_stages)
{
    ApsolveOptions o = {.micro_batches = 4};
    ApsolveProblem *p = NULL;
    ApsolvePlan *plan = NULL;
    double cost = -1;
    CU_ASSERT_FATAL(apsolve_problem_from_db(db, id, &o, &p) == 0);
    for (size_t k = 0; k < apsolve_problem_cells(p); k++)
        CU_ASSERT(!isnan(p->cost[k]) && p->cost[k] >= 0);
    if (apsolve_solve(p, &o, &plan) == 0) {
        CU_ASSERT(plan->feasible);
        CU_ASSERT(isfinite(plan->cost));
        cost = plan->cost;
        *n_stages = (int)plan->n_stages;
    }
    apsolve_plan_free(&plan);
    apsolve_problem_free(&p);
    return cost;
}

/* Runs SQL on the database file with CHECK constraints off, as a tool that
 * does not know the schema's rules (or a damaged file) might have left it. */
static void craft(const char *sql)
{
    char p[512];
    sqlite3 *h = NULL;
    path_of(p, sizeof p, "inf.db");
    CU_ASSERT_FATAL(sqlite3_open(p, &h) == SQLITE_OK);
    CU_ASSERT(sqlite3_exec(h, "PRAGMA ignore_check_constraints=ON;", NULL, NULL, NULL) == 0);
    CU_ASSERT(sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
}

static void test_inf_and_crafted(void)
{
    int64_t id = 0;
    int n = 0;
    Costdb *db = import_table(&id);
    CU_ASSERT(solve_cost(db, id, &n) == 32.0);
    CU_ASSERT(n == 1);
    costdb_close(&db);

    /* (1,1) on 1x1 "ok" but with a cost of -inf, then +inf + -inf (NaN if
     * summed), then negative: each is still no stage, the optimum stays 32. */
    {
        static const char *bad[] = {
            "UPDATE stage_profile SET status='ok', compute_cost=1 WHERE start_layer=1 AND "
            "end_layer=1 AND submesh_index=0 AND phase=0; UPDATE stage_profile SET "
            "status='ok', compute_cost=-9e999 WHERE start_layer=1 AND end_layer=1 AND "
            "submesh_index=0 AND phase=1;",
            "UPDATE stage_profile SET compute_cost=9e999 WHERE start_layer=1 AND "
            "end_layer=1 AND submesh_index=0 AND phase=0;",
            "UPDATE stage_profile SET compute_cost=-2 WHERE start_layer=1 AND "
            "end_layer=1 AND submesh_index=0;",
        };
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            char p[512];
            craft(bad[k]);
            path_of(p, sizeof p, "inf.db");
            CU_ASSERT_FATAL(costdb_open(p, 0, &db, NULL, 0) == 0);
            CU_ASSERT(solve_cost(db, id, &n) == 32.0);
            costdb_close(&db);
        }
    }
    /* A valid (1,1) on 1x1 of cost 2: two stages, 3 + 2 + 3 * 3 = 14. */
    {
        char p[512];
        craft("UPDATE stage_profile SET compute_cost=1, status='ok' WHERE start_layer=1 AND "
              "end_layer=1 AND submesh_index=0;");
        path_of(p, sizeof p, "inf.db");
        CU_ASSERT_FATAL(costdb_open(p, 0, &db, NULL, 0) == 0);
        CU_ASSERT(solve_cost(db, id, &n) == 14.0);
        CU_ASSERT(n == 2);
        costdb_close(&db);
    }
}

/* B = 1 and an infinite stage: Alpa's sum + (B - 1) * max is inf + 0 * inf. */
static void test_b1_infinite_stage(void)
{
    int64_t id = 0;
    ApsolveOptions o = {.micro_batches = 1};
    ApsolveProblem *p = NULL;
    ApsolvePlan *plan = NULL;
    ApsolveStageSpec specs[2];
    ApsolveRebatch rb;
    char err[256], *text = NULL;
    size_t len = 0;
    FILE *f;
    Costdb *db = import_table(&id);

    CU_ASSERT_FATAL(apsolve_problem_from_db(db, id, &o, &p) == 0);
    CU_ASSERT_FATAL(apsolve_uniform_specs(2, 2, 1, 1, 0, 0, -2, specs) == 0);
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, specs, 2, &plan, err, sizeof err) == 0);
    CU_ASSERT(!plan->feasible);
    CU_ASSERT(isinf(plan->cost) && plan->cost > 0);
    CU_ASSERT(isinf(plan->max_stage_cost));
    CU_ASSERT(apsolve_rebatch(p, plan, 4, 2, &rb) == 0);
    CU_ASSERT(!isnan(rb.cost));
    f = open_memstream(&text, &len);
    CU_ASSERT_FATAL(f != NULL);
    apsolve_print_alpa(plan, f);
    CU_ASSERT(apsolve_write(f, "text", &(ApsolveOutput){.label = "uniform", .kind = "uniform",
                                                        .plan = plan}, 1) == 0);
    CU_ASSERT(apsolve_write(f, "json", &(ApsolveOutput){.label = "uniform", .kind = "uniform",
                                                        .plan = plan}, 1) == 0);
    fclose(f);
    CU_ASSERT(strstr(text, "nan") == NULL && strstr(text, "NaN") == NULL);
    free(text);
    apsolve_plan_free(&plan);
    apsolve_problem_free(&p);
    costdb_close(&db);
}

/* In memory: every kind of non-finite or negative cost on every stage but
 * the single-stage plan; the solver must pick that plan, never crash. */
static void test_in_memory(void)
{
    static const double bad[] = {NAN, -NAN, INFINITY, -INFINITY, -1.0, -0.5e-300};
    ApsolveProblem *p = NULL;
    ApsolveOptions o = {.micro_batches = 3};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        ApsolvePlan *plan = NULL;
        CU_ASSERT_FATAL(apsolve_problem_new(3, 1, 2, 2, 1, 0, &p) == 0);
        p->submeshes[0] = (ApsolveSubmesh){1, 1};
        p->submeshes[1] = (ApsolveSubmesh){1, 2};
        p->configs[0] = (ApsolveConfig){1, 1, 1, -1};
        p->configs[1] = (ApsolveConfig){1, 2, 1, 0};
        for (int i = 0; i < 3; i++)
            for (int j = i; j < 3; j++)
                for (int s = 0; s < 2; s++)
                    p->cost[apsolve_index(p, i, j, s, 0)] = bad[b];
        p->cost[apsolve_index(p, 0, 2, 1, 0)] = 2.5; /* T = 2.5 + 2 * 2.5 */
        CU_ASSERT(apsolve_solve(p, &o, &plan) == 0);
        if (plan) {
            CU_ASSERT(plan->cost == 7.5);
            CU_ASSERT(plan->n_stages == 1);
        }
        apsolve_plan_free(&plan);
        /* and with nothing finite at all: infeasible, with a reason */
        p->cost[apsolve_index(p, 0, 2, 1, 0)] = bad[b];
        CU_ASSERT(apsolve_solve(p, &o, &plan) == APSOLVE_EINFEASIBLE);
        CU_ASSERT(plan == NULL);
        {
            char why[256] = "";
            apsolve_explain(p, &o, why, sizeof why);
            CU_ASSERT(why[0] != '\0');
        }
        apsolve_problem_free(&p);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"CSV NaN refused", test_csv_nan_refused},
        {"inf and crafted entries", test_inf_and_crafted},
        {"B = 1 with an infinite stage", test_b1_infinite_stage},
        {"non-finite costs in memory", test_in_memory},
    };
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/approf-nan-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    int rc = CUNIT_RUN("nan", tests);
    {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    return rc;
}
