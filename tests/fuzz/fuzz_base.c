/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small real cost database for the harnesses that need one: the mlp zoo
 * model in 2 layers swept on a 1x2 cluster with the analytic backend, plus
 * the auto plan apsolve finds for it, so every table (hardware, model,
 * layers, sweep, submeshes, configs, entries, placements, plan, stages)
 * has rows.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "costdb.h"
#include "fuzz.h"
#include "fuzz_base.h"
#include "sweep/sweep.h"

static void store_plan(const char *path)
{
    Costdb *db = NULL;
    ApsolveOptions opt = {.micro_batches = 2};
    ApsolveProblem *p = NULL;
    ApsolvePlan *plan = NULL;
    int64_t sweep_id = 0, plan_id = 0;
    char err[512];
    FUZZ_CHECK(costdb_open(path, 0, &db, err, sizeof err) == 0);
    FUZZ_CHECK(costdb_sweep_latest(db, &sweep_id) == 0);
    FUZZ_CHECK(apsolve_problem_from_db(db, sweep_id, &opt, &p) == 0);
    FUZZ_CHECK(apsolve_solve(p, &opt, &plan) == 0);
    FUZZ_CHECK(apsolve_plan_store(db, p, &opt, plan, "auto", NULL, &plan_id) == 0);
    apsolve_plan_free(&plan);
    apsolve_problem_free(&p);
    costdb_close(&db);
}

uint8_t *fuzz_base_db(const char *path, size_t *len)
{
    ApprofSweepConfig cfg;
    ApprofSweepCallbacks cb;
    ApprofSweepSummary sum;
    char err[1024];

    remove(path);
    memset(&cfg, 0, sizeof cfg);
    memset(&cb, 0, sizeof cb);
    cfg.sharding_method = APPROF_ILP_SERIES_PARALLEL;
    cfg.db_path = path;
    cfg.model_name = "mlp";
    cfg.layers = 2;
    cfg.eps = 0.5;
    cfg.cluster_hosts = 1;
    cfg.cluster_gpus = 2;
    cfg.micro_batches = 2;
    cfg.dtype = APPROF_F32;
    cfg.hardware = "a100-40g";
    cfg.backend = "model";
    cfg.imbalance_tol = -1;
    cfg.shard_n = 1;
    cfg.tool_version = "fuzz";
    if (approf_sweep_run(&cfg, &cb, &sum, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz: base sweep: %s\n", err);
        abort();
    }
    store_plan(path); /* closing the last connection checkpoints the WAL */
    return fuzz_read_file(path, len);
}

uint8_t *fuzz_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(fseek(f, 0, SEEK_END) == 0);
    n = ftell(f);
    FUZZ_CHECK(n > 0);
    rewind(f);
    buf = malloc((size_t)n);
    FUZZ_CHECK(buf != NULL);
    FUZZ_CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int progress_stop(void *ctx)
{
    long *steps = ctx;
    return ++*steps > 5000; /* x 100 VM instructions: keeps each input fast */
}

/* Only the working database: no ATTACH (nor VACUUM INTO, which attaches). */
static int authorize(void *ctx, int action, const char *a, const char *b, const char *c,
                     const char *d)
{
    (void)ctx, (void)a, (void)b, (void)c, (void)d;
    return action == SQLITE_ATTACH || action == SQLITE_DETACH ? SQLITE_DENY : SQLITE_OK;
}

void fuzz_craft_db(const char *work_path, const uint8_t *base, size_t base_len,
                   const uint8_t *data, size_t size, int no_triggers)
{
    sqlite3 *h = NULL;
    char *sql;
    long steps = 0;
    FILE *f = fopen(work_path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(fwrite(base, 1, base_len, f) == base_len);
    FUZZ_CHECK(fclose(f) == 0);
    FUZZ_CHECK(sqlite3_open_v2(work_path, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    sqlite3_limit(h, SQLITE_LIMIT_LENGTH, 1 << 20);
    sqlite3_limit(h, SQLITE_LIMIT_ATTACHED, 0);
    sqlite3_progress_handler(h, 100, progress_stop, &steps);
    sqlite3_set_authorizer(h, authorize, NULL);
    if (no_triggers)
        sqlite3_db_config(h, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
    sqlite3_exec(h, "PRAGMA foreign_keys=OFF; PRAGMA ignore_check_constraints=ON;", NULL, NULL,
                 NULL);
    sql = fuzz_strndup(data, size);
    sqlite3_exec(h, sql, NULL, NULL, NULL); /* errors are part of the game */
    free(sql);
    sqlite3_exec(h, "COMMIT", NULL, NULL, NULL); /* an open BEGIN of the input */
    sqlite3_close_v2(h);
}
