/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apsolve's load of a sweep, alone: open the database read-only (as
 * `apsolve --no-store` does), build the ApsolveProblem of its newest sweep
 * (apsolve_problem_from_db_msg) and close it, several times; prints the
 * median and the spread of the wall times, and the median of the open alone
 * (costdb_open and costdb_sweep_latest). Prints figures only; never fails
 * on time. Usage: bench_load DB [repeats]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "apsolve.h"
#include "costdb.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int reps = argc > 2 ? atoi(argv[2]) : 9;
    double *t, *topen;
    if (argc < 2 || reps < 1) {
        fprintf(stderr, "usage: bench_load DB [repeats]\n");
        return 2;
    }
    t = calloc((size_t)reps, sizeof *t);
    topen = calloc((size_t)reps, sizeof *topen);
    if (!t || !topen)
        return 1;
    for (int r = 0; r < reps; r++) {
        Costdb *db = NULL;
        ApsolveProblem *p = NULL;
        ApsolveOptions o = {0};
        int64_t id = 0;
        char err[512] = "";
        double t0 = now();
        int bad = costdb_open(argv[1], COSTDB_OPEN_READONLY, &db, err, sizeof err) ||
                  costdb_sweep_latest(db, &id);
        topen[r] = now() - t0;
        if (bad || apsolve_problem_from_db_msg(db, id, &o, &p, err, sizeof err)) {
            fprintf(stderr, "bench_load: %s: cannot load: %s\n", argv[1],
                    err[0] ? err : (db ? costdb_errmsg(db) : "open failed"));
            costdb_close(&db);
            free(t);
            free(topen);
            return 1;
        }
        t[r] = now() - t0;
        apsolve_problem_free(&p);
        costdb_close(&db);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    qsort(topen, (size_t)reps, sizeof *topen, cmp_double);
    printf("%.1f ms median of %d (%.1f .. %.1f ms); the open alone %.1f ms\n", t[reps / 2] * 1e3,
           reps, t[0] * 1e3, t[reps - 1] * 1e3, topen[reps / 2] * 1e3);
    free(t);
    free(topen);
    return 0;
}
