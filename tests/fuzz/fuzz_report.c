/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz harness for apreport over crafted databases. The base database is
 * fuzz_base_db's (the mlp model, 2 layers, 1x2, with placements) plus a
 * uniform plan of two stages (1, 1) whose resharding tasks apreport
 * derived and stored, so every table apreport reads (plan, plan_stage,
 * resharding_task, placements, entries, configs, model, hardware) has
 * rows. Each input is SQL run against a fresh copy with CHECK and
 * foreign-key enforcement off (as fuzz_db.c does): indices past the
 * stages, missing stage rows, absurd micro-batch counts and clusters, NaN
 * costs, broken specs. Then apreport_load on the newest plan (storing
 * derived tasks) and apreport_write_all into a scratch directory.
 * Properties: nothing crashes or reads out of bounds (ASan), a refusal
 * carries a message, a loaded report writes every output, and trace.json
 * and report.html stay within the documented bounds (docs/reports.md
 * "Bounded outputs") whatever the numbers in the database say.
 */
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apreport.h"
#include "apsolve.h"
#include "costdb.h"
#include "fuzz.h"
#include "fuzz_base.h"

/* trace.json and report.html of any crafted database: a few MB at most
 * (a 64 KiB input makes at most tens of thousands of rows). */
#define OUTPUT_MAX (8L << 20)
/* Passes simulated per input: larger plans are correct but slow to fuzz
 * (the bound apreport itself enforces is 2^22). */
#define FUZZ_MAX_PASSES (1 << 16)

static uint8_t *base;
static size_t base_len;
static char work_path[1024], out_dir[1024];

static void free_base(void)
{
    free(base);
    base = NULL;
}

/* The base plan: two uniform stages on (1, 1), stored, with the resharding
 * tasks apreport derives for it. */
static void add_plan(const char *path)
{
    Costdb *db = NULL;
    ApsolveOptions opt = {.micro_batches = 4};
    ApsolveProblem *p = NULL;
    ApsolvePlan *plan = NULL;
    ApsolveStageSpec specs[2];
    ApreportOptions ro = {0, NULL, 1, APREPORT_SCHED_1F1B, 0, 0, 0, 0};
    ApreportReport *r = NULL;
    int64_t sweep_id = 0, plan_id = 0;
    char err[512];
    FUZZ_CHECK(costdb_open(path, 0, &db, err, sizeof err) == 0);
    FUZZ_CHECK(costdb_sweep_latest(db, &sweep_id) == 0);
    FUZZ_CHECK(apsolve_problem_from_db(db, sweep_id, &opt, &p) == 0);
    FUZZ_CHECK(apsolve_uniform_specs(p->num_layers, 2, 1, 1, 0, 0, -2, specs) == 0);
    FUZZ_CHECK(apsolve_evaluate(p, &opt, specs, 2, &plan, err, sizeof err) == 0);
    FUZZ_CHECK(apsolve_plan_store(db, p, &opt, plan, "uniform", NULL, &plan_id) == 0);
    FUZZ_CHECK(apreport_load(db, &ro, &r, err, sizeof err) == 0);
    apreport_free(&r);
    apsolve_plan_free(&plan);
    apsolve_problem_free(&p);
    costdb_close(&db);
}

static void make_base(void)
{
    char path[1024];
    if (base)
        return;
    snprintf(path, sizeof path, "%s/report_base.db", fuzz_tmpdir());
    snprintf(work_path, sizeof work_path, "%s/report_work.db", fuzz_tmpdir());
    snprintf(out_dir, sizeof out_dir, "%s/report_out", fuzz_tmpdir());
    free(fuzz_base_db(path, &base_len));
    add_plan(path);
    base = fuzz_read_file(path, &base_len);
    atexit(free_base);
}

static void remove_work(void)
{
    static const char *const tails[] = {"", "-wal", "-shm", "-journal"};
    char p[1400];
    DIR *d;
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        snprintf(p, sizeof p, "%s%s", work_path, tails[i]);
        unlink(p);
    }
    if ((d = opendir(out_dir))) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", out_dir, e->d_name);
                unlink(p);
            }
        closedir(d);
        rmdir(out_dir);
    }
}

static long file_size(const char *name)
{
    char p[1100];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", out_dir, name);
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

/* Too slow to fuzz, not wrong: a plan whose simulation would exceed
 * FUZZ_MAX_PASSES (apreport itself refuses past 2^22). */
static int too_slow(Costdb *db)
{
    CostdbPlan plan;
    CostdbPlanStage *st = NULL;
    size_t n = 0;
    int64_t id = 0;
    int slow = 0;
    if (costdb_plan_latest(db, 0, &id) == 0 && costdb_plan_get(db, id, &plan, &st, &n) == 0)
        slow = (double)n * plan.micro_batches > FUZZ_MAX_PASSES;
    free(st);
    return slow;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Costdb *db = NULL;
    ApreportOptions opt = {0, NULL, 1, APREPORT_SCHED_1F1B, 0, 1, 0, 0};
    ApreportReport *r = NULL;
    char err[1024] = "";
    int rc;

    if (size > 1 << 16)
        return 0;
    make_base();
    remove_work();
    fuzz_craft_db(work_path, base, base_len, data, size, 1);
    rc = costdb_open(work_path, COSTDB_OPEN_NOCREATE, &db, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc < 0 && db == NULL && err[0] != '\0');
        remove_work();
        return 0;
    }
    if (!too_slow(db)) {
        rc = apreport_load(db, &opt, &r, err, sizeof err);
        if (getenv("FUZZ_REPORT_VERBOSE")) /* what each input reached */
            fprintf(stderr, "fuzz report: %s\n", rc ? err : "loaded");
        if (rc != 0) {
            FUZZ_CHECK(rc < 0 && r == NULL);
            FUZZ_CHECK(err[0] != '\0' || rc == APREPORT_ENOMEM);
        } else {
            err[0] = '\0';
            rc = apreport_write_all(r, out_dir, err, sizeof err);
            if (rc != 0)
                fprintf(stderr, "fuzz report: write_all: %s\n", err);
            FUZZ_CHECK(rc == 0);
            FUZZ_CHECK(file_size("trace.json") > 0 && file_size("trace.json") <= OUTPUT_MAX);
            FUZZ_CHECK(file_size("report.html") > 0 && file_size("report.html") <= OUTPUT_MAX);
            FUZZ_CHECK(file_size("report.json") > 0);
            apreport_free(&r);
        }
    }
    costdb_close(&db);
    remove_work();
    return 0;
}
