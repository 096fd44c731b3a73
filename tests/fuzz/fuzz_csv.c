/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz harness for the CSV importer (costdb_csv_import). Each input is
 * written to a file and imported into one scratch database. Properties
 * checked: a refused file imports nothing and leaves a message; an accepted
 * one holds no NaN or negative cost and no range with end < start, exports
 * to CSV that imports again and exports byte-identically, prints in Alpa's
 * format, and can be loaded and solved by apsolve without a crash (small
 * problems only: the solver's table is dense in L^2 * S * C). Both sweeps
 * are deleted afterwards so the database stays small.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "costdb.h"
#include "fuzz.h"

static Costdb *db;

static void close_db(void)
{
    costdb_close(&db);
}

static void open_db(void)
{
    char path[1024], err[512];
    if (db)
        return;
    snprintf(path, sizeof path, "%s/csv.db", fuzz_tmpdir());
    if (costdb_open(path, 0, &db, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_csv: %s\n", err);
        abort();
    }
    atexit(close_db);
}

static size_t sweep_count(void)
{
    CostdbSweep *list = NULL;
    size_t n = 0;
    FUZZ_CHECK(costdb_sweep_list(db, &list, &n) == 0);
    free(list);
    return n;
}

static char *export_text(int64_t id, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(costdb_csv_export(db, id, f) == 0);
    FUZZ_CHECK(fclose(f) == 0);
    return buf;
}

static void solve(int64_t id)
{
    ApsolveOptions opt = {.micro_batches = 4};
    ApsolveProblem *p = NULL;
    ApsolvePlan *plan = NULL;
    CostdbSweep sw;
    CostdbSubmesh *subs = NULL;
    CostdbConfig *cfgs = NULL;
    size_t ns = 0, nc = 0;
    double cells;

    FUZZ_CHECK(costdb_sweep_get(db, id, &sw) == 0);
    FUZZ_CHECK(costdb_sweep_submeshes(db, id, &subs, &ns) == 0);
    FUZZ_CHECK(costdb_sweep_configs(db, id, &cfgs, &nc) == 0);
    cells = (double)sw.num_layers * sw.num_layers * (double)(ns ? ns : 1) * (double)(nc ? nc : 1);
    free(subs);
    free(cfgs);
    if (cells > 1 << 16)
        return; /* legal but too big to solve per input */
    if (apsolve_problem_from_db(db, id, &opt, &p) != 0)
        return; /* e.g. a cluster beyond APSOLVE_MAX_DEVICES: refused, fine */
    if (apsolve_solve(p, &opt, &plan) == 0) {
        FUZZ_CHECK(plan->feasible);
        FUZZ_CHECK(isfinite(plan->cost) && plan->cost >= 0);
        FUZZ_CHECK(plan->devices_used == p->num_devices);
    }
    apsolve_plan_free(&plan);
    apsolve_problem_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    CostdbImportOptions opt;
    CostdbEntry *e = NULL;
    size_t n = 0, len1 = 0, len2 = 0;
    int64_t id = 0, id2 = 0;
    char *text1 = NULL, *text2 = NULL;
    FILE *devnull;
    const char *path;
    int rc;

    if (size > 1 << 16)
        return 0;
    open_db();
    memset(&opt, 0, sizeof opt);
    opt.name = "fuzz";
    path = fuzz_write_file("in.csv", data, size);
    rc = costdb_csv_import(db, path, &opt, &id);
    if (rc != 0) {
        FUZZ_CHECK(rc < 0);
        FUZZ_CHECK(costdb_errmsg(db)[0] != '\0');
        FUZZ_CHECK(sweep_count() == 0); /* one transaction: nothing imported */
        return 0;
    }
    FUZZ_CHECK(costdb_entries_get(db, id, &e, &n) == 0);
    FUZZ_CHECK(n > 0);
    for (size_t k = 0; k < n; k++) {
        FUZZ_CHECK(!isnan(e[k].compute_cost) && e[k].compute_cost >= 0);
        FUZZ_CHECK(e[k].end_layer >= e[k].start_layer && e[k].start_layer >= 0);
        FUZZ_CHECK(e[k].peak_memory >= 0 && e[k].available_memory >= 0);
    }
    free(e);

    text1 = export_text(id, &len1);
    path = fuzz_write_file("rt.csv", (const uint8_t *)text1, len1);
    rc = costdb_csv_import(db, path, &opt, &id2);
    if (rc != 0)
        fprintf(stderr, "fuzz_csv: re-import failed: %s\n", costdb_errmsg(db));
    FUZZ_CHECK(rc == 0);
    text2 = export_text(id2, &len2);
    FUZZ_CHECK(len1 == len2 && memcmp(text1, text2, len1) == 0);

    devnull = fopen("/dev/null", "w");
    FUZZ_CHECK(devnull != NULL);
    FUZZ_CHECK(costdb_print_alpa(db, id, devnull) == 0);
    fclose(devnull);
    solve(id);

    FUZZ_CHECK(costdb_sweep_delete(db, id) == 0);
    FUZZ_CHECK(costdb_sweep_delete(db, id2) == 0);
    free(text1);
    free(text2);
    return 0;
}
