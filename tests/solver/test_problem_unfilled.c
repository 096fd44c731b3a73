/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The load's unfilled problem (solver/problem_unfilled.h): made with
 * apsolve_problem_new_unfilled, its cells filled stretch by stretch before
 * the entries after them are written (as dbload.c's fill_to does, in any
 * order of the entries) and the rest filled at the end, it holds what
 * apsolve_problem_new holds after the same writes, byte for byte; and so
 * does one made with apsolve_problem_new_unpopulated and populated on
 * another thread (the load's two threads: dbload.c, load_start).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "apsolve.h"
#include "cunit_run.h"
#include "problem_unfilled.h"
#include "solver_int.h"

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *populate(void *p)
{
    apsolve_problem_populate_unfilled(p);
    return NULL;
}

/* Both problems of the shape written at the same random cells (ascending
 * when sorted, else in any order), the unfilled one filled as the load
 * fills it (made unpopulated and populated on a thread of its own when
 * apart); then every table compared. */
static void check_shape_as(int L, int S, int C, int sorted, uint64_t seed, int apart)
{
    ApsolveProblem *a = NULL, *b = NULL;
    size_t n, filled = 0, writes;
    CU_ASSERT_FATAL(apsolve_problem_new(L, 2, 8, S, C, 1, &a) == APSOLVE_OK);
    if (apart) {
        pthread_t t;
        CU_ASSERT_FATAL(apsolve_problem_new_unpopulated(L, 2, 8, S, C, &b) == APSOLVE_OK);
        CU_ASSERT_FATAL(pthread_create(&t, NULL, populate, b) == 0);
        CU_ASSERT_FATAL(pthread_join(t, NULL) == 0);
    } else {
        CU_ASSERT_FATAL(apsolve_problem_new_unfilled(L, 2, 8, S, C, &b) == APSOLVE_OK);
    }
    n = apsolve_problem_cells(a);
    CU_ASSERT_FATAL(n == apsolve_problem_cells(b));
    writes = n / 3;
    for (size_t w = 0, k = 0; w < writes; w++) {
        size_t idx;
        if (sorted) {
            k += 1 + next(&seed) % 5;
            if (k >= n)
                break;
            idx = k;
        } else {
            idx = next(&seed) % n;
        }
        /* dbload.c's fill_to */
        if (idx > filled)
            apsolve_problem_fill_cells(b, filled, idx);
        if (idx >= filled)
            filled = idx + 1;
        a->cost[idx] = b->cost[idx] = (double)w * 0.5;
        a->max_n_succ_stages[idx] = b->max_n_succ_stages[idx] = (int)(w % 7) - 1;
    }
    apsolve_problem_fill_cells(b, filled, n);
    CU_ASSERT(!memcmp(a->cost, b->cost, n * sizeof *a->cost));
    CU_ASSERT(!memcmp(a->max_n_succ_stages, b->max_n_succ_stages,
                      n * sizeof *a->max_n_succ_stages));
    CU_ASSERT(!memcmp(a->apply_cost, b->apply_cost, n * sizeof *a->apply_cost));
    CU_ASSERT(!memcmp(a->configs, b->configs, (size_t)S * (size_t)C * sizeof *a->configs));
    CU_ASSERT_FATAL(b->memory && b->times);
    for (size_t k = 0; k < n; k++) {
        CU_ASSERT(!memcmp(apsolve_memory_at(a, k), apsolve_memory_at(b, k),
                          sizeof(ApsolveMemory)));
        CU_ASSERT(!memcmp(apsolve_times_at(a, k), apsolve_times_at(b, k),
                          sizeof(ApsolveTimes)));
    }
    apsolve_problem_free(&a);
    apsolve_problem_free(&b);
}

static void check_shape(int L, int S, int C, int sorted, uint64_t seed)
{
    check_shape_as(L, S, C, sorted, seed, 0);
    check_shape_as(L, S, C, sorted, seed, 1);
}

static void test_sorted_writes(void)
{
    check_shape(1, 1, 1, 1, 1);
    check_shape(6, 3, 5, 1, 2);
    check_shape(17, 4, 9, 1, 3);
}

static void test_any_order(void)
{
    check_shape(6, 3, 5, 0, 4);
    check_shape(17, 4, 9, 0, 5);
}

static void test_no_writes(void)
{
    ApsolveProblem *a = NULL, *b = NULL;
    size_t n;
    CU_ASSERT_FATAL(apsolve_problem_new(5, 1, 4, 3, 2, 1, &a) == APSOLVE_OK);
    CU_ASSERT_FATAL(apsolve_problem_new_unfilled(5, 1, 4, 3, 2, &b) == APSOLVE_OK);
    n = apsolve_problem_cells(a);
    apsolve_problem_fill_cells(b, 0, n);
    CU_ASSERT(!memcmp(a->cost, b->cost, n * sizeof *a->cost));
    CU_ASSERT(!memcmp(a->max_n_succ_stages, b->max_n_succ_stages,
                      n * sizeof *a->max_n_succ_stages));
    CU_ASSERT(isinf(b->cost[n - 1]) && b->max_n_succ_stages[0] == APSOLVE_UNBOUNDED);
    apsolve_problem_free(&a);
    apsolve_problem_free(&b);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"ascending writes, gaps filled before them", test_sorted_writes},
        {"writes in any order", test_any_order},
        {"no writes: the end's fill alone", test_no_writes},
    };
    return CUNIT_RUN("unfilled problem", tests);
}
