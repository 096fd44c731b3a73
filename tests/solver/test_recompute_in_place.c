/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Partial recomputation composed in the problem itself and put back
 * (solver/recompute_layers.h, apsolve_recompute_layers_save), against the
 * clone of the whole table the auto search's step composed before
 * (session_autorl.c): on random tables (several submeshes, `full` configs
 * with and without a `none` sibling, out-of-memory entries with and
 * without their figures, NaN costs), for every chunk count and k in turn,
 * composed in place the problem holds every table of a fresh clone
 * composed from the stored entries, bit for bit, and put back, its own.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "apsolve.h"
#include "oracle.h"
#include "cunit_run.h"
#include "recompute_layers.h"

static unsigned next(unsigned *r)
{
    *r = *r * 1103515245u + 12345u;
    return *r >> 8;
}

/* L layers, 3 submeshes, 6 configs a submesh: logical meshes (1, 2) and
 * (2, 1) in none and full, a full of another memory level without a none
 * sibling, and an invalid one. */
static ApsolveProblem *made_up(int L, unsigned seed)
{
    ApsolveProblem *p = NULL;
    unsigned r = seed;
    size_t n;
    if (apsolve_problem_new(L, 1, 4, 3, 6, 1, &p))
        return NULL;
    n = apsolve_problem_cells(p);
    if (apsolve_unfit_table_new(p)) {
        apsolve_problem_free(&p);
        return NULL;
    }
    for (int s = 0; s < 3; s++) {
        p->submeshes[s] = (ApsolveSubmesh){1, 1 << s};
        for (int c = 0; c < 6; c++) {
            ApsolveConfig *cf = &p->configs[s * 6 + c];
            cf->valid = c < 5;
            cf->logical_a = c % 2 ? 2 : 1;
            cf->logical_b = c % 2 ? 1 : 2;
            cf->force_batch_dim = 0;
            cf->variant = (CostdbVariant){c == 4, c >= 2 ? COSTDB_RECOMPUTE_FULL
                                                         : COSTDB_RECOMPUTE_NONE, 0};
        }
    }
    for (size_t k = 0; k < n; k++) {
        double f = 0.25 * (double)(next(&r) % 8 + 1);
        *apsolve_memory_own(p, k) = (ApsolveMemory){(int64_t)(next(&r) % 7) * 1000 + 700,
                                                    (int64_t)(next(&r) % 5) * 100, 100, 8000};
        p->max_n_succ_stages[k] = apsolve_memory_mnss(apsolve_memory_at(p, k));
        p->apply_cost[k] = next(&r) % 6 ? 0.01 * (double)(next(&r) % 5) : -1.0;
        switch (next(&r) % 6) {
        default: /* fits */
            apsolve_times_own(p, k)->fwd = f;
            apsolve_times_own(p, k)->bwd = 2.5 * f;
            p->cost[k] = apsolve_times_at(p, k)->fwd + apsolve_times_at(p, k)->bwd;
            apsolve_times_own(p, k)->wgrad = next(&r) % 4 ? f : -1.0;
            break;
        case 1: /* out of memory, its time kept */
            p->cost[k] = next(&r) % 5 ? INFINITY : NAN;
            p->max_n_succ_stages[k] = -1;
            if (apsolve_unfit_put(p, k, &(ApsolveUnfit){f, 2 * f, 0.02,
                                         {(int64_t)(next(&r) % 9) * 3000, 400, 200, 8000}})) {
                apsolve_problem_free(&p);
                return NULL;
            }
            break;
        case 2: /* out of memory, no time */
            break;
        }
    }
    return p;
}

/* Whether the slot tables of x and y are the same byte for byte (the
 * cells' slots, the figures held). */
static int same_slots(const ApsolveProblem *x, const ApsolveProblem *y)
{
    size_t n = apsolve_problem_cells(x);
    return x->times->n == y->times->n && x->memory->n == y->memory->n &&
           !memcmp(x->times->slot, y->times->slot, n * sizeof *x->times->slot) &&
           !memcmp(x->memory->slot, y->memory->slot, n * sizeof *x->memory->slot) &&
           !memcmp(x->times->figs, y->times->figs, x->times->n * sizeof *x->times->figs) &&
           !memcmp(x->memory->figs, y->memory->figs, x->memory->n * sizeof *x->memory->figs);
}

/* compose_all in place on 2 and 3 threads (compose_all_threads): p
 * composed on one (in place, at k) exactly, and a clone of before composed
 * in place on one thread too, its slot tables byte for byte (the appends
 * of the two parts in the serial order). */
static void check_threads(const ApsolveProblem *before, const ApsolveProblem *p, int k,
                          int chunks)
{
    ApsolveProblem *one = NULL;
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(before, &one), APSOLVE_OK);
    CU_ASSERT_EQUAL(apsolve_recompute_layers_compose_all(one, one, k, chunks), APSOLVE_OK);
    for (int threads = 2; threads <= 3; threads++) {
        ApsolveProblem *w = NULL;
        CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(before, &w), APSOLVE_OK);
        CU_ASSERT_EQUAL(apsolve_recompute_layers_compose_all_threads(w, k, chunks, threads),
                        APSOLVE_OK);
        CU_ASSERT(oracle_same_problem(w, p));
        CU_ASSERT(same_slots(w, one));
        apsolve_problem_free(&w);
    }
    apsolve_problem_free(&one);
}

/* For every chunk count and k of p, in the order of the auto search:
 * composed in place is a fresh clone composed; put back is p as it was. */
static void check_in_place(ApsolveProblem *p)
{
    ApsolveProblem *before = NULL;
    ApsolveRecomputeSaved *saved = NULL;
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(p, &before), APSOLVE_OK);
    for (int chunks = 1; chunks <= 3; chunks++) {
        CU_ASSERT_EQUAL_FATAL(apsolve_recompute_layers_save(p, chunks, &saved), APSOLVE_OK);
        for (int k = 1; k < p->num_layers / chunks; k++) {
            ApsolveProblem *q = NULL;
            CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(before, &q), APSOLVE_OK);
            CU_ASSERT_EQUAL(apsolve_recompute_layers_compose_all(before, q, k, chunks),
                            APSOLVE_OK);
            CU_ASSERT_EQUAL(apsolve_recompute_layers_compose_all(p, p, k, chunks), APSOLVE_OK);
            CU_ASSERT(oracle_same_problem(p, q));
            check_threads(before, p, k, chunks);
            /* the step changed something: the test reads composed entries */
            CU_ASSERT(!oracle_same_problem(p, before));
            apsolve_recompute_layers_put_back(p, saved, k);
            CU_ASSERT(oracle_same_problem(p, before));
            apsolve_problem_free(&q);
        }
        apsolve_recompute_layers_saved_free(&saved);
        CU_ASSERT_PTR_NULL(saved);
    }
    apsolve_problem_free(&before);
}

/* The auto search's winning K kept rather than composed again
 * (session_autorl.c): a save of p composed at k, put back after every
 * other k was composed and put back, is the clone composed at k; the
 * stored entries put back then, p as it was. */
static void check_kept(ApsolveProblem *p)
{
    ApsolveProblem *before = NULL;
    ApsolveRecomputeSaved *saved = NULL, *snap = NULL;
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(p, &before), APSOLVE_OK);
    for (int chunks = 1; chunks <= 3; chunks++) {
        int kmax = p->num_layers / chunks - 1;
        CU_ASSERT_EQUAL_FATAL(apsolve_recompute_layers_save(p, chunks, &saved), APSOLVE_OK);
        for (int k = 1; k <= kmax; k++) {
            ApsolveProblem *q = NULL;
            CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(before, &q), APSOLVE_OK);
            CU_ASSERT_EQUAL(apsolve_recompute_layers_compose_all(before, q, k, chunks),
                            APSOLVE_OK);
            CU_ASSERT_EQUAL(apsolve_recompute_layers_compose_all(p, p, k, chunks), APSOLVE_OK);
            CU_ASSERT_EQUAL_FATAL(apsolve_recompute_layers_save(p, chunks, &snap), APSOLVE_OK);
            apsolve_recompute_layers_put_back(p, saved, k);
            for (int o = 1; o <= kmax; o++)
                if (o != k) {
                    CU_ASSERT_EQUAL(apsolve_recompute_layers_compose_all(p, p, o, chunks),
                                    APSOLVE_OK);
                    apsolve_recompute_layers_put_back(p, saved, o);
                }
            CU_ASSERT(oracle_same_problem(p, before));
            apsolve_recompute_layers_put_back(p, snap, k);
            CU_ASSERT(oracle_same_problem(p, q));
            apsolve_recompute_layers_saved_free(&snap);
            apsolve_recompute_layers_put_back(p, saved, k);
            CU_ASSERT(oracle_same_problem(p, before));
            apsolve_problem_free(&q);
        }
        apsolve_recompute_layers_saved_free(&saved);
    }
    apsolve_problem_free(&before);
}

static void test_kept(void)
{
    for (unsigned seed = 1; seed <= 30; seed++) {
        ApsolveProblem *p = made_up(4 + (int)(seed % 6), seed);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        check_kept(p);
        apsolve_problem_free(&p);
    }
}

/* apsolve_recompute_layers_floors: at each k, no entry compose_all writes
 * costs less than the floor (the auto search leaves a K out on it:
 * session_autorl.c), and the floor is the least of them where each range
 * of a config has the same figures (so a tighter one fails); a negative
 * time: no floor. */
/* apsolve_recompute_layers_floors_threads at 2 and 3 threads: fl (one
 * thread's floors) byte for byte. */
static void check_floors_threads(const ApsolveProblem *p, int chunks, const double *fl)
{
    for (int threads = 2; threads <= 3; threads++) {
        double ft[16];
        CU_ASSERT_EQUAL_FATAL(apsolve_recompute_layers_floors_threads(p, chunks, ft, threads),
                              APSOLVE_OK);
        CU_ASSERT_EQUAL(memcmp(ft + 1, fl + 1, (size_t)(p->num_layers / chunks - 1) * sizeof *fl),
                        0);
    }
}

static void check_floors(const ApsolveProblem *p)
{
    int L = p->num_layers, S = p->num_submeshes, C = p->num_configs;
    double fl[16];
    for (int chunks = 1; chunks <= 3 && L / chunks >= 2; chunks++) {
        CU_ASSERT_EQUAL_FATAL(apsolve_recompute_layers_floors(p, chunks, fl), APSOLVE_OK);
        check_floors_threads(p, chunks, fl);
        for (int k = 1; k < L / chunks; k++) {
            ApsolveProblem *q = NULL;
            CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(p, &q), APSOLVE_OK);
            CU_ASSERT_EQUAL(apsolve_recompute_layers_compose_all(p, q, k, chunks), APSOLVE_OK);
            CU_ASSERT(fl[k] > 0);
            for (int i = 0; i < L; i++)
                for (int j = i; j < L; j++)
                    for (int s = 0; s < S; s++)
                        for (int c = 0; c < C; c++) {
                            size_t x = apsolve_index(p, i, j, s, c);
                            const ApsolveConfig *cf = &p->configs[s * C + c];
                            int n = j - i + 1;
                            if (cf->valid && cf->variant.recompute == COSTDB_RECOMPUTE_FULL &&
                                n % chunks == 0 && k < n / chunks && isfinite(q->cost[x]))
                                CU_ASSERT(q->cost[x] >= fl[k] * (1 - 1e-12));
                        }
            apsolve_problem_free(&q);
        }
    }
}

static void test_floors(void)
{
    ApsolveProblem *p;
    double fl[16];
    for (unsigned seed = 1; seed <= 30; seed++) {
        p = made_up(4 + (int)(seed % 8), seed);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        check_floors(p);
        apsolve_problem_free(&p);
    }
    /* every range of a config the same figures: the floor is the least
     * composed entry's cost, on the cheapest submesh and config */
    p = made_up(9, 7);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int i = 0; i < 9; i++)
        for (int j = i; j < 9; j++)
            for (int s = 0; s < 3; s++)
                for (int c = 0; c < 6; c++) {
                    size_t x = apsolve_index(p, i, j, s, c);
                    double f = 0.5 * (j - i + 1) * (1 + (c >= 2)) / (1 << s);
                    apsolve_times_own(p, x)->fwd = f;
                    apsolve_times_own(p, x)->bwd = 2 * f;
                    p->cost[x] = 3 * f;
                    apsolve_times_own(p, x)->wgrad = f;
                    p->max_n_succ_stages[x] = apsolve_memory_mnss(apsolve_memory_at(p, x));
                }
    for (int chunks = 1; chunks <= 3; chunks++) {
        CU_ASSERT_EQUAL_FATAL(apsolve_recompute_layers_floors(p, chunks, fl), APSOLVE_OK);
        check_floors_threads(p, chunks, fl); /* the least on the last submesh: a second part's */
        for (int k = 1; k < 9 / chunks; k++) {
            ApsolveProblem *q = NULL;
            double least = INFINITY;
            CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(p, &q), APSOLVE_OK);
            CU_ASSERT_EQUAL(apsolve_recompute_layers_compose_all(p, q, k, chunks), APSOLVE_OK);
            for (int i = 0; i < 9; i++)
                for (int s = 0; s < 3; s++)
                    for (int c = 2; c < 4; c++) {
                        int j = i + (k + 1) * chunks - 1;
                        size_t x = j < 9 ? apsolve_index(p, i, j, s, c) : 0;
                        if (j < 9 && q->cost[x] < least)
                            least = q->cost[x];
                    }
            CU_ASSERT(fabs(fl[k] - least) <= 1e-12 * least);
            apsolve_problem_free(&q);
        }
    }
    /* a negative time on the last submesh (the second of two parts): no floor there either */
    apsolve_times_own(p, apsolve_index(p, 2, 2, 2, 1))->bwd = -1.0;
    CU_ASSERT_EQUAL(apsolve_recompute_layers_floors_threads(p, 1, fl, 2), APSOLVE_OK);
    for (int k = 1; k < 9; k++)
        CU_ASSERT_EQUAL(fl[k], 0);
    apsolve_times_own(p, apsolve_index(p, 2, 2, 1, 1))->bwd = -1.0; /* a `none` range */
    CU_ASSERT_EQUAL(apsolve_recompute_layers_floors(p, 1, fl), APSOLVE_OK);
    for (int k = 1; k < 9; k++)
        CU_ASSERT_EQUAL(fl[k], 0);
    CU_ASSERT_EQUAL(apsolve_recompute_layers_floors(p, 5, fl), APSOLVE_EINVAL);
    apsolve_problem_free(&p);
}

static void test_in_place_is_the_clone(void)
{
    for (unsigned seed = 1; seed <= 40; seed++) {
        ApsolveProblem *p = made_up(4 + (int)(seed % 6), seed);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        check_in_place(p);
        apsolve_problem_free(&p);
    }
}

static void test_no_memory_figures(void)
{
    ApsolveProblem *p = NULL;
    ApsolveRecomputeSaved *saved = NULL;
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_new(3, 1, 2, 1, 1, 0, &p), APSOLVE_OK);
    CU_ASSERT_EQUAL(apsolve_recompute_layers_save(p, 1, &saved), APSOLVE_EINVAL);
    CU_ASSERT_PTR_NULL(saved);
    apsolve_problem_free(&p);
}

static int same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* compose_all, which walks the ranges submesh by submesh and by chunk
 * length (solver/recompute_layers.c), writes each `full` entry as
 * apsolve_recompute_layers_entry prices it alone (or +inf where it cannot,
 * or the stored entry where every layer of a chunk is recomputed), and
 * leaves every other entry as it was: bit for bit, into a clone and in
 * place. */
static void check_entries(const ApsolveProblem *p)
{
    int L = p->num_layers, S = p->num_submeshes, C = p->num_configs;
    for (int chunks = 1; chunks <= 3; chunks++)
        for (int k = 1; k < L / chunks; k++) {
            ApsolveProblem *q = NULL, *w = NULL;
            CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(p, &q), APSOLVE_OK);
            CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(p, &w), APSOLVE_OK);
            CU_ASSERT_EQUAL(apsolve_recompute_layers_compose_all(p, q, k, chunks), APSOLVE_OK);
            CU_ASSERT_EQUAL(apsolve_recompute_layers_compose_all(w, w, k, chunks), APSOLVE_OK);
            CU_ASSERT(oracle_same_problem(q, w));
            for (int i = 0; i < L; i++)
                for (int j = i; j < L; j++)
                    for (int s = 0; s < S; s++)
                        for (int c = 0; c < C; c++) {
                            size_t x = apsolve_index(p, i, j, s, c);
                            const ApsolveConfig *cf = &p->configs[s * C + c];
                            int n = j - i + 1;
                            ApsolveRecomputeLayers r;
                            char why[200];
                            if (!cf->valid || cf->variant.recompute != COSTDB_RECOMPUTE_FULL ||
                                n % chunks || k >= n / chunks) {
                                CU_ASSERT(same_double(q->cost[x], p->cost[x]));
                                CU_ASSERT(same_double(apsolve_times_at(q, x)->fwd, apsolve_times_at(p, x)->fwd));
                                CU_ASSERT(!memcmp(apsolve_memory_at(q, x),
                                                  apsolve_memory_at(p, x), sizeof r.memory));
                            } else if (apsolve_recompute_layers_entry(p, i, j, s, c, k, chunks,
                                                                      &r, why, sizeof why)) {
                                CU_ASSERT(isinf(q->cost[x]));
                            } else {
                                CU_ASSERT(same_double(apsolve_times_at(q, x)->fwd, r.fwd));
                                CU_ASSERT(same_double(apsolve_times_at(q, x)->bwd, r.bwd));
                                CU_ASSERT(same_double(q->cost[x], r.fwd + r.bwd));
                                CU_ASSERT(same_double(apsolve_times_at(q, x)->wgrad, r.wgrad));
                                CU_ASSERT(same_double(q->apply_cost[x], r.apply));
                                CU_ASSERT(!memcmp(apsolve_memory_at(q, x), &r.memory,
                                                  sizeof r.memory));
                                CU_ASSERT_EQUAL(q->max_n_succ_stages[x],
                                                apsolve_memory_mnss(&r.memory));
                            }
                        }
            apsolve_problem_free(&q);
            apsolve_problem_free(&w);
        }
}

static void test_compose_all_is_each_entry(void)
{
    for (unsigned seed = 1; seed <= 20; seed++) {
        ApsolveProblem *p = made_up(4 + (int)(seed % 8), seed);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        check_entries(p);
        apsolve_problem_free(&p);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"composed in place: a fresh clone's tables, then its own", test_in_place_is_the_clone},
        {"no memory figures: nothing to save", test_no_memory_figures},
        {"compose_all: each entry as priced alone", test_compose_all_is_each_entry},
        {"the winning k kept: saved, then put back", test_kept},
        {"the floors of each k's composed entries", test_floors},
    };
    return CUNIT_RUN("partial recomputation in place", tests);
}
