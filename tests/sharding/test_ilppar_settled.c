/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bisection's ending solves settled by the elimination's value
 * (ilp_pareto.c, pareto_settled; docs/performance.md "The bisection's
 * ending solves settled by the elimination's value"): a replay whose
 * optimum, as its steps computed it, is shown to be no better than the
 * segment's threshold skips the core, the back-substitution and the
 * point's sums. The points must stay those of fresh solves at every weight
 * (ILP_PARETO_FRESH), bit for bit; the bound must be used (some replays
 * settled) and must not be used where it does not hold: a negative cost,
 * memory or edge entry, or a core left to the solver.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "graph.h"
#include "sharding/ilp_int.h"

#define MAXN 28
#define MAXK 5
#define MAXP 5

/* Where random_problem puts its one negative entry (NEG_NONE: none). */
enum { NEG_NONE, NEG_COST, NEG_MEM, NEG_EDGE };

/* A scale for a node's or an edge's entries: 1, or with spread a power
 * of ten from 1e-6 to 1e6, so that the sums mix magnitudes. */
static double draw_scale(unsigned *seed, int spread)
{
    return spread ? pow(10.0, (double)(rand_r(seed) % 13) - 6.0) : 1.0;
}

/* A chain of n nodes with skip connections (v-2, v) now and then (a
 * partial 2-tree: the series-parallel elimination leaves no core), and
 * with extra > 0 that many random edges (a core now and then). Costs and
 * memory on coarse grids, so ties abound; forbidden strategies and pairs,
 * single-strategy nodes and nodes without memory; neg puts one negative
 * entry somewhere. */
static ApprofIlp *random_problem(unsigned *seed, int n, int spread, int neg, int extra)
{
    ApprofIlp *p = NULL;
    int k[MAXN];
    CU_ASSERT_FATAL(approf_ilp_new(&p) == 0);
    int neg_at = rand_r(seed) % n;
    for (int v = 0; v < n; v++) {
        double c[MAXK], m[MAXK], sc = draw_scale(seed, spread), sm = draw_scale(seed, spread);
        k[v] = rand_r(seed) % 7 == 0 ? 1 : 2 + rand_r(seed) % (MAXK - 1);
        for (int i = 0; i < k[v]; i++) {
            c[i] = (rand_r(seed) % 8) / 4.0 * sc;
            m[i] = (double)(rand_r(seed) % 5) * 1024.0 * sm;
        }
        if (k[v] > 1 && rand_r(seed) % 8 == 0)
            c[1 + rand_r(seed) % (k[v] - 1)] = INFINITY;
        if (v == neg_at && neg == NEG_COST)
            c[0] = -0.125 * sc;
        int with_mem = rand_r(seed) % 7 != 0 || (v == neg_at && neg == NEG_MEM);
        if (v == neg_at && neg == NEG_MEM)
            m[k[v] - 1] = -1024.0;
        CU_ASSERT_FATAL(approf_ilp_add_node(p, k[v], c, with_mem ? m : NULL) == v);
    }
    double r[MAXK * MAXK];
    for (int v = 1; v < n; v++) {
        for (int q = 0; q < 2; q++) {
            int a = q == 0 ? v - 1 : v - 2;
            if (q == 1 && (v < 2 || rand_r(seed) % 2))
                continue;
            double s = draw_scale(seed, spread);
            for (int i = 0; i < k[a] * k[v]; i++)
                r[i] = rand_r(seed) % 10 == 0 ? INFINITY : (rand_r(seed) % 6) / 8.0 * s;
            r[0] = 0.0;  /* one pair stays allowed */
            if (q == 0 && v == (neg_at > 0 ? neg_at : 1) && neg == NEG_EDGE)
                r[k[a] * k[v] - 1] = -0.0625;
            CU_ASSERT_FATAL(approf_ilp_add_edge(p, a, v, r) >= 0);
        }
    }
    for (int q = 0; q < extra; q++) {
        int a = rand_r(seed) % n, b = rand_r(seed) % n;
        if (a == b)
            continue;
        for (int i = 0; i < k[a] * k[b]; i++)
            r[i] = (rand_r(seed) % 6) / 8.0;
        CU_ASSERT_FATAL(approf_ilp_add_edge(p, a, b, r) >= 0);
    }
    return p;
}

typedef struct Points {
    int rc, n;
    int choices[MAXP * MAXN];
    double t[MAXP], m[MAXP];
    ApprofIlpStats st;
} Points;

static Points points(ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                     IlpParetoMode mode, int max_points)
{
    Points s;
    memset(&s, 0, sizeof s);
    s.rc = ilp_pareto_run(p, method, cache, mode, max_points, s.choices, s.t, s.m, &s.n, &s.st);
    return s;
}

static int same_points(const Points *a, const Points *b, int n_nodes)
{
    return a->rc == b->rc && a->n == b->n &&
           !memcmp(a->choices, b->choices, (size_t)a->n * (size_t)n_nodes * sizeof(int)) &&
           !memcmp(a->t, b->t, (size_t)a->n * sizeof(double)) &&
           !memcmp(a->m, b->m, (size_t)a->n * sizeof(double));
}

/* Runs trials random problems of one kind both ways; returns the
 * replays and the settled ones of the REPLAY runs, counts the problems
 * whose points differ from the fresh solves' into *differ and those with
 * more than one point into *several; with core_seen, counts those whose
 * first solve left a core. */
static void run_kind(unsigned seed, int trials, int spread, int neg, int extra, size_t *replays,
                     size_t *settled, int *differ, int *several, int *core_seen)
{
    *replays = *settled = 0;
    *differ = *several = 0;
    if (core_seen)
        *core_seen = 0;
    for (int trial = 0; trial < trials; trial++) {
        int n = 3 + rand_r(&seed) % (MAXN - 3);
        ApprofIlp *p = random_problem(&seed, n, spread, neg, extra);
        int max_points = 2 + trial % (MAXP - 1);
        ApprofIlpCache *cache = NULL;
        CU_ASSERT_FATAL(approf_ilp_cache_new(&cache) == 0);
        Points ref = points(p, APPROF_ILP_SERIES_PARALLEL, NULL, ILP_PARETO_FRESH, max_points);
        Points fast = points(p, APPROF_ILP_SERIES_PARALLEL, cache, ILP_PARETO_REPLAY, max_points);
        if (ref.rc == APPROF_EUNSUPPORTED) {
            approf_ilp_cache_free(&cache);
            approf_ilp_free(&p);
            continue;
        }
        size_t rp, st;
        ilp_cache_pareto_replays(cache, &rp, &st);
        *replays += rp;
        *settled += st;
        *differ += !same_points(&ref, &fast, n);
        *several += ref.rc == 0 && ref.n > 1;
        if (core_seen && fast.st.core_nodes > 0) {
            ++*core_seen;
            /* a core's solver is never skipped */
            CU_ASSERT_EQUAL(st, 0);
        }
        approf_ilp_cache_free(&cache);
        approf_ilp_free(&p);
    }
}

static void test_settled_same_points(void)
{
    size_t replays, settled;
    int differ, several;
    run_kind(38, 400, 0, NEG_NONE, 0, &replays, &settled, &differ, &several, NULL);
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT(several > 200);
    /* the ending solves are settled: some, not all replays */
    CU_ASSERT(settled > 100);
    CU_ASSERT(settled < replays);
}

static void test_settled_mixed_magnitudes(void)
{
    size_t replays, settled;
    int differ, several;
    run_kind(3838, 400, 1, NEG_NONE, 0, &replays, &settled, &differ, &several, NULL);
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT(several > 100);
    CU_ASSERT(settled > 50);
    CU_ASSERT(settled < replays);
}

static void test_negative_entries_not_settled(void)
{
    static const int where[] = {NEG_COST, NEG_MEM, NEG_EDGE};
    for (int q = 0; q < 3; q++) {
        size_t replays, settled;
        int differ, several;
        run_kind(380 + (unsigned)q, 200, 0, where[q], 0, &replays, &settled, &differ, &several,
                 NULL);
        CU_ASSERT_EQUAL(differ, 0);
        CU_ASSERT(replays > 100);
        CU_ASSERT_EQUAL(settled, 0);
    }
}

static void test_core_not_settled(void)
{
    size_t replays, settled;
    int differ, several, core_seen;
    run_kind(83, 200, 0, NEG_NONE, 3, &replays, &settled, &differ, &several, &core_seen);
    CU_ASSERT_EQUAL(differ, 0);
    if (approf_ilp_have_cbc())
        CU_ASSERT(core_seen > 20);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"settled ending solves: the fresh solves' points", test_settled_same_points},
        {"settled ending solves: magnitudes from 1e-6 to 1e6", test_settled_mixed_magnitudes},
        {"a negative entry: nothing settled", test_negative_entries_not_settled},
        {"a core: nothing settled", test_core_not_settled},
    };
    return CUNIT_RUN("pareto settled", tests);
}
