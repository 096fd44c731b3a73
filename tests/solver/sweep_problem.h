/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The database drivers' common start (test_cp_hostile, test_cp_view):
 * open DB as it is, and load its sweep 1 as apsolve's default search
 * reads it (the full objective, 2 micro-batches, the default headroom
 * searched).
 */
#ifndef APSOLVE_TEST_SWEEP_PROBLEM_H
#define APSOLVE_TEST_SWEEP_PROBLEM_H

#include "apsolve.h"
#include "costdb.h"

/* Opens path (never creating it) into *db, fills *o and loads sweep 1
 * into *p. Returns 0, or 1 after a line on stderr naming prog and path
 * (*db is then closed). */
int sweep_problem_open(const char *prog, const char *path, Costdb **db, ApsolveOptions *o,
                       ApsolveProblem **p);

#endif
