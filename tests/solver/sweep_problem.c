/* SPDX-License-Identifier: Apache-2.0 */
#include "sweep_problem.h"

#include <stdio.h>
#include <string.h>

int sweep_problem_open(const char *prog, const char *path, Costdb **db, ApsolveOptions *o,
                       ApsolveProblem **p)
{
    char err[256];
    *db = NULL;
    *p = NULL;
    if (costdb_open(path, COSTDB_OPEN_NOCREATE, db, err, sizeof err)) {
        fprintf(stderr, "%s: %s: %s\n", prog, path, err);
        return 1;
    }
    memset(o, 0, sizeof *o);
    o->micro_batches = 2;
    o->objective = APSOLVE_OBJECTIVE_FULL;
    o->headroom_percent = APSOLVE_DEFAULT_HEADROOM_PERCENT;
    o->search_headroom = 1;
    if (apsolve_problem_from_db(*db, 1, o, p) != APSOLVE_OK) {
        fprintf(stderr, "%s: cannot load sweep 1 of %s\n", prog, path);
        costdb_close(db);
        return 1;
    }
    return 0;
}
