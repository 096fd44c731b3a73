/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test program solver-chunk-floor's three parts: the floors
 * (test_chunk_floor.c, with main and the helpers below), the preps,
 * shared table and bar (test_chunk_prep.c) and the stage counts searched
 * one at a time (test_chunk_counts.c).
 */
#ifndef APSOLVE_CHUNK_FLOOR_TEST_H
#define APSOLVE_CHUNK_FLOOR_TEST_H

#include <stdint.h>

#include "apsolve.h"

/* The chunked schedules the random cases alternate. */
extern const int k_kinds[2];
/* Random case t: an oracle problem with passes, every other with memory. */
ApsolveProblem *random_problem(uint64_t *rng, int t);
/* Whether a and b are the same plan (stages, costs, counts). */
int same_plan(const ApsolvePlan *a, const ApsolvePlan *b);

/* test_chunk_prep.c */
void test_family_bounds(void);
void test_dominated_items(void);
void test_shared_table(void);
void test_budget_per_avail(void);
void test_chunk_bar(void);

/* test_chunk_counts.c */
void test_chunk_counts(void);
void test_chunk_counts_prep(void);

#endif
