/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An ApsolveProblem made without filling its cost and max_n_succ_stages
 * tables, for the load (dbload.c), which fills each stretch of cells just
 * before it writes the entry after it: the fill and the entries in one
 * pass over the tables rather than two (problem.c).
 */
#ifndef APSOLVE_PROBLEM_UNFILLED_H
#define APSOLVE_PROBLEM_UNFILLED_H

#include <stddef.h>

#include "apsolve.h"

/* apsolve_problem_new (with its details) leaving cost and
 * max_n_succ_stages uninitialized (their pages faulted in), for a caller
 * that writes its entries in place and gives every other cell its
 * apsolve_problem_new value with apsolve_problem_fill_cells before any
 * read. */
int apsolve_problem_new_unfilled(int num_layers, int hosts, int gpus, int num_submeshes,
                                 int num_configs, ApsolveProblem **out);
/* apsolve_problem_new_unfilled with no page of cost and
 * max_n_succ_stages populated: apsolve_problem_populate_unfilled does that
 * later, maybe on another thread (the load's second thread, dbload.c: the
 * tables are allocated on the calling thread, whose main heap hands out
 * fresh memory that calloc need not clear, and populated beside the walk;
 * a second thread's own heap cleared calloc's blocks with a page fault
 * each). */
int apsolve_problem_new_unpopulated(int num_layers, int hosts, int gpus, int num_submeshes,
                                    int num_configs, ApsolveProblem **out);
/* The pages of p's cost and max_n_succ_stages faulted in (cdb_populate). */
void apsolve_problem_populate_unfilled(ApsolveProblem *p);
/* Cells lo .. hi - 1 of p's cost and max_n_succ_stages as
 * apsolve_problem_new leaves them: +inf, APSOLVE_UNBOUNDED. */
void apsolve_problem_fill_cells(ApsolveProblem *p, size_t lo, size_t hi);

#endif
