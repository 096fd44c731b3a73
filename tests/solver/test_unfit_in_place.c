/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Out-of-memory entries restored in the problem itself and put back
 * (solver/unfit_in_place.h), against apsolve_unfit_open's clone, which the
 * auto search's cp step read before: restored, the problem holds the
 * clone's every table bit for bit; put back, its own, on a made-up table
 * with out-of-memory entries that kept their time, some that did not, and
 * a NaN cost.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "apsolve.h"
#include "oracle.h"
#include "cunit_run.h"
#include "session_int.h"
#include "unfit_in_place.h"

/* A made-up table; loader_like: its out-of-memory cells hold what
 * apsolve_problem_new made (the loader writes their figures to the unfit
 * table only), else figures of their own and some NaN costs. */
static ApsolveProblem *made_up_as(int loader_like)
{
    ApsolveProblem *p = NULL;
    unsigned r = 12345;
    size_t n;
    if (apsolve_problem_new(5, 1, 4, 3, 4, 1, &p))
        return NULL;
    n = apsolve_problem_cells(p);
    if (apsolve_unfit_table_new(p)) {
        apsolve_problem_free(&p);
        return NULL;
    }
    for (size_t k = 0; k < n; k++) {
        r = r * 1103515245u + 12345u;
        if (loader_like && (r >> 8) % 4 != 0) {
            if ((r >> 8) % 4 != 3 &&
                apsolve_unfit_put(p, k, &(ApsolveUnfit){0.5 * (double)(r % 4 + 1), 1.5, 0.02,
                                         {(int64_t)(r % 9) * 3000, 4000, 200, 8000}})) {
                apsolve_problem_free(&p);
                return NULL;
            }
            continue;
        }
        *apsolve_memory_own(p, k) = (ApsolveMemory){(int64_t)(r % 7) * 1000, 500, 100, 8000};
        p->max_n_succ_stages[k] = apsolve_memory_mnss(apsolve_memory_at(p, k));
        p->apply_cost[k] = 0.01 * (double)(r % 5);
        switch ((r >> 8) % 4) {
        case 0: /* fits */
            apsolve_times_own(p, k)->fwd = 1.0 + (double)(r % 3);
            apsolve_times_own(p, k)->bwd = 2 * apsolve_times_at(p, k)->fwd;
            p->cost[k] = 3 * apsolve_times_at(p, k)->fwd;
            apsolve_times_own(p, k)->wgrad = apsolve_times_at(p, k)->fwd;
            break;
        case 1: /* out of memory, its time kept */
        case 2:
            p->cost[k] = (r >> 12) % 5 ? INFINITY : NAN;
            p->max_n_succ_stages[k] = -1;
            if (apsolve_unfit_put(p, k, &(ApsolveUnfit){0.5 * (double)(r % 4 + 1), 1.5, 0.02,
                                         {(int64_t)(r % 9) * 3000, 4000, 200, 8000}})) {
                apsolve_problem_free(&p);
                return NULL;
            }
            break;
        default: /* out of memory, no time: stays */
            break;
        }
    }
    return p;
}

static ApsolveProblem *made_up(void)
{
    return made_up_as(0);
}

/* Restores p's unfit entries in place and checks the result against the
 * clone apsolve_unfit_open makes, then undoes it and checks p is as it was:
 * nsaved_whole (-1: some but not all; else exactly that many) entries are
 * saved whole. */
static void check_in_place(ApsolveProblem *p, int nsaved_whole)
{
    ApsolveProblem *before = NULL, *clone = NULL;
    ApsolveUnfitUndo u;
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(p, &before), APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_open(p, &clone), APSOLVE_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(clone);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_open_in_place(p, &u), APSOLVE_OK);
    CU_ASSERT(u.n > 10);
    if (nsaved_whole < 0) {
        CU_ASSERT(u.nsaved > 0 && u.nsaved < u.n);
    } else {
        CU_ASSERT_EQUAL(u.nsaved, (size_t)nsaved_whole);
    }
    CU_ASSERT(oracle_same_problem(p, clone));
    apsolve_unfit_close_in_place(p, &u);
    CU_ASSERT(u.n == 0 && u.saved == NULL && u.restored == NULL);
    CU_ASSERT(oracle_same_problem(p, before));
    apsolve_problem_free(&clone);
    apsolve_problem_free(&before);
}

/* Figures of their own: most entries saved whole. */
static void test_in_place_is_the_clone(void)
{
    ApsolveProblem *p = made_up();
    check_in_place(p, -1);
    apsolve_problem_free(&p);
}

/* Cells as the loader leaves them: all restored entries share the first's
 * former figures, none is saved whole, and all are put back. */
static void test_loader_like_saves_none(void)
{
    ApsolveProblem *p = made_up_as(1);
    check_in_place(p, 0);
    apsolve_problem_free(&p);
}

static void test_nothing_to_restore(void)
{
    ApsolveProblem *p = made_up(), *before = NULL, *clone = NULL;
    ApsolveUnfitUndo u;
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    free(p->unfit_table->slot);
    free(p->unfit_table->figs);
    free(p->unfit_table);
    p->unfit_table = NULL;
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(p, &before), APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_open(p, &clone), APSOLVE_OK);
    CU_ASSERT_PTR_NULL(clone);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_open_in_place(p, &u), APSOLVE_OK);
    CU_ASSERT_EQUAL(u.n, 0);
    CU_ASSERT(oracle_same_problem(p, before));
    apsolve_unfit_close_in_place(p, &u);
    CU_ASSERT(oracle_same_problem(p, before));
    apsolve_problem_free(&before);
    apsolve_problem_free(&p);
}

/* Whether the costs of q and r agree bit for bit at every cell (a NaN the
 * same NaN). */
static int same_costs(const double *x, const double *y, size_t n)
{
    return !memcmp(x, y, n * sizeof *x);
}

/* apsolve_unfit_restored_cost read before the restore is the cost the
 * restore leaves at every cell, and reads the same on the restored
 * problem (the cp step's facts read it before restoring, if at all:
 * apsolve_cp_auto_open_as_restored); with an entry whose kept time sums
 * to +inf or NaN, restored to that sum. */
static void test_restored_cost_before(void)
{
    ApsolveProblem *p = made_up();
    ApsolveUnfitUndo u;
    size_t n, odd = 0;
    double *before, *after;
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    n = apsolve_problem_cells(p);
    /* a few restorable entries whose kept backward is +inf or NaN */
    for (size_t k = 0; k < n && odd < 4; k++)
        if (!isfinite(p->cost[k]) && apsolve_unfit_at(p, k) && k % 3 == 0) {
            ApsolveUnfit x = *apsolve_unfit_at(p, k);
            x.bwd = odd % 2 ? NAN : INFINITY;
            CU_ASSERT_EQUAL_FATAL(apsolve_unfit_put(p, k, &x), APSOLVE_OK);
            odd++;
        }
    CU_ASSERT_EQUAL(odd, 4);
    before = malloc(n * sizeof *before);
    after = malloc(n * sizeof *after);
    CU_ASSERT_FATAL(before && after);
    for (size_t k = 0; k < n; k++)
        before[k] = apsolve_unfit_restored_cost(p, k);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_open_in_place(p, &u), APSOLVE_OK);
    CU_ASSERT(u.n > 10);
    CU_ASSERT(same_costs(before, p->cost, n));
    for (size_t k = 0; k < n; k++)
        after[k] = apsolve_unfit_restored_cost(p, k);
    CU_ASSERT(same_costs(after, p->cost, n));
    apsolve_unfit_close_in_place(p, &u);
    /* put back, the costs differ where entries were restored */
    CU_ASSERT(!same_costs(before, p->cost, n));
    free(before);
    free(after);
    apsolve_problem_free(&p);
}

/* apsolve_unfit_apply_known on two halves of a large table (threads 2)
 * gives the one walk's answer: an entry without its apply cost (one that
 * fits, or out of memory) in either half, none usable, or every one known. */
static void test_apply_known_halves(void)
{
    int L = 40, S = 4, C = 330, bad = 0; /* 1,082,400 cells: split in two */
    uint64_t rng = 0xA991ull;
    for (int t = 0; t < 5; t++) {
        ApsolveProblem *p = NULL;
        size_t n, half, k;
        int want;
        CU_ASSERT_FATAL(apsolve_problem_new(L, 1, 8, S, C, 1, &p) == APSOLVE_OK);
        n = apsolve_problem_cells(p);
        half = n / ((size_t)S * C) / 2 * ((size_t)S * C);
        CU_ASSERT_FATAL(n >= ((size_t)1 << 20) && apsolve_unfit_table_new(p) == APSOLVE_OK);
        for (int c = 0; c < S * C; c++)
            p->configs[c].valid = c % 7 != 3;
        for (k = 0; t != 3 && k < n; k += 1 + oracle_rand(&rng) % 97) {
            ApsolveUnfit u = {1.0, 2.0, (double)(oracle_rand(&rng) % 3), {1, 1, 1, 1}};
            if (k % 2) {
                p->cost[k] = 3.0;
                p->apply_cost[k] = u.apply;
            } else {
                CU_ASSERT_FATAL(apsolve_unfit_put(p, k, &u) == APSOLVE_OK);
            }
        }
        /* 1: a fitting entry without its apply cost in the second half; 2:
         * one out of memory in the first; 4: one of an invalid config */
        k = t == 1 ? n - 1 - (n - 1) % ((size_t)S * C) + 1 : t == 2 ? 2 : 3 + 2 * 7;
        if (t == 1) {
            p->cost[k] = 1.0;
            p->apply_cost[k] = -1;
        } else if (t == 2) {
            ApsolveUnfit u = {1.0, 2.0, -1.0, {1, 1, 1, 1}};
            CU_ASSERT_FATAL(apsolve_unfit_put(p, k, &u) == APSOLVE_OK);
        } else if (t == 4) {
            p->cost[k] = 1.0; /* config 17 % 7 == 3: invalid */
            p->apply_cost[k] = -1;
        }
        CU_ASSERT_FATAL(t != 1 || k >= half);
        want = t == 0 || t == 4;
        bad += apsolve_unfit_apply_known(p, 1) != want || apsolve_unfit_apply_known(p, 2) != want;
        apsolve_problem_free(&p);
    }
    CU_ASSERT(bad == 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"restored in place: the clone's tables, then its own", test_in_place_is_the_clone},
        {"cells as the loader leaves them: none saved whole", test_loader_like_saves_none},
        {"no out-of-memory figures: unchanged", test_nothing_to_restore},
        {"the restored costs read before the restore", test_restored_cost_before},
        {"apply costs known: two halves, the one walk's answer", test_apply_known_halves},
    };
    return CUNIT_RUN("unfit entries in place", tests);
}
