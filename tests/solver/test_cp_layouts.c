/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The submeshes whose layouts the auto search's cp and ep steps leave
 * unsolved (solver/session_autocp.c, apsolve_layout_stages_open;
 * docs/performance.md, "The cp step's layouts that cannot hold equal
 * stages"): a plan of one layout puts every stage on one submesh s, and its
 * plans are those of equal stages (solve_equal there: the DP's best where
 * its stages are equal, else the best over each stage length k dividing the
 * layers of the DP with every range of another length +inf). On random
 * problems (1F1B, GPipe and interleaved; Alpa's and the full objective;
 * with and without --max-stages; layer counts 1 to 13 on clusters of 2 to 8
 * GPUs), for every submesh s the DP is run as solve_equal's loop runs it,
 * on the table with every other submesh's entries +inf, at every k:
 *
 * - wherever one of them finds a feasible plan, apsolve_layout_stages_open
 *   says s is open (the search without the check would find that plan, so
 *   leaving s out would change the step): the check is never too tight;
 * - the check closes some submeshes, and the plans found include one of
 *   n = L stages and one of n = max_stages stages (the edges of its
 *   bounds), so a check one step tighter at either edge fails here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "oracle.h"
#include "session_cpspec.h"
#include "solver_int.h"

/* Entries of x that are not on submesh s, or whose range's length is not
 * k (k 0: any), made +inf as solve_equal makes them. */
static void leave_out(ApsolveProblem *x, int s, int k)
{
    for (int i = 0; i < x->num_layers; i++)
        for (int j = i; j < x->num_layers; j++)
            for (int u = 0; u < x->num_submeshes; u++)
                for (int c = 0; c < x->num_configs; c++) {
                    size_t idx = apsolve_index(x, i, j, u, c);
                    if (u == s && (k == 0 || j - i + 1 == k))
                        continue;
                    x->cost[idx] = INFINITY;
                    apsolve_times_drop(x, idx);
                }
}

static void random_options(uint64_t *rng, int t, ApsolveOptions *o)
{
    static const int maxs[] = {0, 0, 1, 2, 3, 4, 8};
    memset(o, 0, sizeof *o);
    o->micro_batches = 1 + (int)(oracle_rand(rng) % 8);
    o->objective = t % 3 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
    o->schedule = t % 5 == 4 ? APSOLVE_SCHEDULE_GPIPE : APSOLVE_SCHEDULE_1F1B;
    if (t % 7 == 6) {
        o->schedule = APSOLVE_SCHEDULE_INTERLEAVED;
        o->virtual_stages = 2;
        o->micro_batches = 2 * (1 + (int)(oracle_rand(rng) % 4));
    }
    o->max_stages = maxs[oracle_rand(rng) % (sizeof maxs / sizeof *maxs)];
}

static void test_layouts(void)
{
    static const int shapes[][2] = {{1, 2}, {1, 4}, {2, 2}, {1, 8}, {2, 4}};
    uint64_t rng = 0xC9A70u;
    int wrong = 0, closed = 0, found = 0, at_layers = 0, at_max = 0;
    for (int t = 0; t < 300; t++) {
        OracleGen g;
        ApsolveOptions o;
        ApsolveProblem *p = NULL;
        memset(&g, 0, sizeof g);
        g.layers = 1 + (int)(oracle_rand(&rng) % 13);
        g.hosts = shapes[t % 5][0];
        g.gpus = shapes[t % 5][1];
        g.inf_prob = 0.3 * oracle_uniform(&rng);
        g.integer_costs = t % 4 == 1;
        g.noise = 0.3;
        CU_ASSERT_FATAL(oracle_make_problem(&g, &rng, &p) == APSOLVE_OK);
        random_options(&rng, t, &o);
        for (int s = 0; s < p->num_submeshes; s++) {
            int open = apsolve_layout_stages_open(p, s, o.max_stages), has = 0;
            closed += !open;
            for (int k = 1; k <= p->num_layers; k++) {
                ApsolveProblem *x = NULL;
                ApsolvePlan *pl = NULL;
                ApsolveOptions ok = o;
                if (p->num_layers % k)
                    continue;
                CU_ASSERT_FATAL(apsolve_problem_clone(p, &x) == APSOLVE_OK);
                leave_out(x, s, k);
                if (apsolve_solve_keep_headroom(x, &ok, &pl) == APSOLVE_OK && pl->feasible) {
                    int n = (int)pl->n_stages;
                    has = 1;
                    at_layers += n == p->num_layers;
                    at_max += o.max_stages > 0 && n == o.max_stages;
                }
                apsolve_plan_free(&pl);
                apsolve_problem_free(&x);
            }
            found += has;
            wrong += has && !open;
        }
        apsolve_problem_free(&p);
    }
    CU_ASSERT(wrong == 0);   /* never too tight */
    CU_ASSERT(closed > 100); /* and it closes submeshes */
    CU_ASSERT(found > 100);
    CU_ASSERT(at_layers > 10); /* n = L stages found: n <= L, not n < L */
    CU_ASSERT(at_max > 10);    /* n = max_stages found */
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the layouts left out have no plan of equal stages", test_layouts},
    };
    return CUNIT_RUN("solver_cp_layouts", tests);
}
