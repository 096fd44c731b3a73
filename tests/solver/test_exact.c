/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exactness of apsolve_solve(): its objective must equal (a) a brute-force
 * enumeration of every split and assignment on small random instances with
 * infinities, memory limits and stage caps, and (b) the plain DP of
 * docs/alpa-semantics.md (tests/solver/oracle.c) on random instances up to L = 16, for
 * the training and the inference objective. Every returned plan is also
 * re-priced independently and checked for validity, and solving twice must
 * give the same plan (deterministic tie-breaking).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "oracle.h"
#include "solver_int.h"

/* Checks that plan is a valid plan of p under the options and that its
 * cost is what an independent re-pricing gives. */
static void check_plan(const ApsolveProblem *p, const ApsolveOptions *o, const ApsolvePlan *pl)
{
    double sum = 0, mx = 0, obj;
    int dev = 0, next = 0, n = (int)pl->n_stages;
    CU_ASSERT_FATAL(n >= 1);
    CU_ASSERT(pl->feasible);
    if (o->max_stages > 0)
        CU_ASSERT(n <= o->max_stages);
    for (int k = n - 1; k >= 0; k--) {
        const ApsolveStage *st = &pl->stages[k];
        size_t idx = apsolve_index(p, st->start_layer, st->end_layer, st->submesh, st->config);
        double c = p->cost[idx];
        CU_ASSERT(p->configs[st->submesh * p->num_configs + st->config].valid);
        CU_ASSERT(!isinf(c) && !isnan(c));
        CU_ASSERT(st->cost == c);
        if (!o->inference)
            CU_ASSERT((long)(n - k) - 1 <= (long)p->max_n_succ_stages[idx]);
        sum += c;
        if (c > mx)
            mx = c;
        dev += p->submeshes[st->submesh].hosts * p->submeshes[st->submesh].gpus;
    }
    for (int k = 0; k < n; k++) {
        CU_ASSERT(pl->stages[k].start_layer == next);
        next = pl->stages[k].end_layer + 1;
    }
    CU_ASSERT(next == p->num_layers);
    CU_ASSERT(dev == p->num_devices);
    obj = o->inference ? n * mx : sum + (o->micro_batches - 1) * mx;
    CU_ASSERT(obj == pl->cost);
}

/* Solves and compares with the expected optimum (+inf: infeasible). */
static int solve_and_compare(const ApsolveProblem *p, const ApsolveOptions *o, double expect)
{
    ApsolvePlan *pl = NULL, *again = NULL;
    int rc = apsolve_solve(p, o, &pl), ok = 1;
    if (isinf(expect)) {
        CU_ASSERT(rc == APSOLVE_EINFEASIBLE);
        ok = rc == APSOLVE_EINFEASIBLE;
    } else {
        CU_ASSERT_FATAL(rc == APSOLVE_OK);
        CU_ASSERT(pl->cost == expect);
        ok = pl->cost == expect;
        if (!ok)
            fprintf(stderr, "\nL=%d D=%d B=%d inf=%d K=%d: apsolve %.17g expected %.17g\n",
                    p->num_layers, p->num_devices, o->micro_batches, o->inference,
                    o->max_stages, pl->cost, expect);
        check_plan(p, o, pl);
        CU_ASSERT_FATAL(apsolve_solve(p, o, &again) == APSOLVE_OK);
        CU_ASSERT(again->n_stages == pl->n_stages);
        for (size_t k = 0; k < pl->n_stages && k < again->n_stages; k++) {
            CU_ASSERT(again->stages[k].end_layer == pl->stages[k].end_layer);
            CU_ASSERT(again->stages[k].submesh == pl->stages[k].submesh);
            CU_ASSERT(again->stages[k].config == pl->stages[k].config);
        }
    }
    apsolve_plan_free(&pl);
    apsolve_plan_free(&again);
    return ok;
}

static const int k_b[] = {1, 2, 3, 4, 8, 16, 64};

static void random_brute(int inference)
{
    uint64_t rng = inference ? 0xC0FFEEull : 0xDEC0DEull;
    int tested = 0, feasible = 0, mismatches = 0;
    for (int t = 0; t < 240; t++) {
        OracleGen g;
        ApsolveProblem *p = NULL;
        ApsolveOptions o;
        double expect;
        memset(&g, 0, sizeof g);
        memset(&o, 0, sizeof o);
        g.layers = 1 + (int)(oracle_rand(&rng) % 6);
        g.hosts = t % 2 ? 2 : 1;
        g.gpus = 4;
        g.inf_prob = 0.1 + (inference ? 0.5 : 0.3) * oracle_uniform(&rng);
        g.mem_prob = t % 3 ? 0.6 : 0.0;
        g.max_limit = 4;
        g.integer_costs = t % 4 == 0;
        g.noise = 0.3;
        g.device_exponent = t % 3 == 1 ? 0.5 : 1.0;
        CU_ASSERT_FATAL(oracle_make_problem(&g, &rng, &p) == APSOLVE_OK);
        o.micro_batches = k_b[oracle_rand(&rng) % 7];
        o.max_stages = t % 5 == 0 ? 1 + (int)(oracle_rand(&rng) % 3) : 0;
        o.inference = inference;
        expect = brute_force(p, o.micro_batches, o.max_stages, inference);
        mismatches += !solve_and_compare(p, &o, expect);
        feasible += !isinf(expect);
        tested++;
        apsolve_problem_free(&p);
    }
    CU_ASSERT(tested >= 200);
    CU_ASSERT(mismatches == 0);
    /* The instances must exercise both outcomes. */
    CU_ASSERT(feasible > 100);
    if (!inference)
        CU_ASSERT(feasible < tested);
}

static void test_brute_training(void)
{
    random_brute(0);
}

static void test_brute_inference(void)
{
    random_brute(1);
}

static void random_oracle(int inference)
{
    uint64_t rng = inference ? 0xABCDEFull : 0x123457ull;
    static const int shapes[][2] = {{1, 4}, {2, 4}, {1, 8}, {2, 2}, {4, 2}};
    int mismatches = 0, feasible = 0;
    for (int t = 0; t < 60; t++) {
        OracleGen g;
        ApsolveProblem *p = NULL;
        ApsolveOptions o;
        double expect;
        memset(&g, 0, sizeof g);
        memset(&o, 0, sizeof o);
        g.layers = 4 + (int)(oracle_rand(&rng) % 13);
        g.hosts = shapes[t % 5][0];
        g.gpus = shapes[t % 5][1];
        g.inf_prob = 0.05 + 0.2 * oracle_uniform(&rng);
        g.mem_prob = t % 3 ? 0.5 : 0.0;
        g.max_limit = 8;
        g.integer_costs = t % 4 == 1;
        g.noise = 0.3;
        g.device_exponent = t % 2 ? 0.5 : 1.0; /* 0.5: many-stage optima */
        CU_ASSERT_FATAL(oracle_make_problem(&g, &rng, &p) == APSOLVE_OK);
        o.micro_batches = k_b[1 + oracle_rand(&rng) % 6];
        o.max_stages = t % 7 == 3 ? 2 + (int)(oracle_rand(&rng) % 4) : 0;
        o.inference = inference;
        expect = inference ? oracle_inference(p, o.max_stages)
                           : oracle_training(p, o.micro_batches, o.max_stages, 0, NULL);
        CU_ASSERT_FATAL(!isnan(expect));
        mismatches += !solve_and_compare(p, &o, expect);
        feasible += !isinf(expect);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(mismatches == 0);
    CU_ASSERT(feasible > 30);
}

static void test_oracle_training(void)
{
    random_oracle(0);
}

static void test_oracle_inference(void)
{
    random_oracle(1);
}

/* One 16-layer instance on 2x8 (5 submeshes x 5 configs), the bench case. */
static void test_oracle_2x8(void)
{
    uint64_t rng = 42;
    OracleGen g = {16, 2, 8, 0.05, 0.3, 12, 0, 0.2};
    ApsolveProblem *p = NULL;
    ApsolveOptions o = {8, 0, 0, 0, 0};
    CU_ASSERT_FATAL(oracle_make_problem(&g, &rng, &p) == APSOLVE_OK);
    CU_ASSERT(p->num_submeshes == 5 && p->num_configs == 5);
    CU_ASSERT(solve_and_compare(p, &o, oracle_training(p, 8, 0, 0, NULL)));
    apsolve_problem_free(&p);
}

/* A case small enough to solve by hand: 2 layers on 1x2; submeshes (1,1)
 * and (1,2); one config each. Costs: layer 0 alone on (1,1) = 3, layer 1
 * alone on (1,1) = 2, both on (1,2) = 4.5, both on (1,1) = 4 (uses 1 device
 * only: not allowed alone). B = 4:
 *   two stages (1,1)+(1,1): 3 + 2 + 3 * 3 = 14;  one stage (1,2): 4.5 + 3 * 4.5 = 18.
 * With B = 1: 5 vs 4.5, one stage wins. With memory forbidding layer 0 to be
 * followed by another stage (limit 0), only the single stage remains. */
static void test_hand(void)
{
    ApsolveProblem *p = NULL;
    ApsolveOptions o = {4, 0, 0, 0, 0};
    ApsolvePlan *pl = NULL;
    CU_ASSERT_FATAL(apsolve_problem_new(2, 1, 2, 2, 1, 0, &p) == APSOLVE_OK);
    p->submeshes[0] = (ApsolveSubmesh){1, 1};
    p->submeshes[1] = (ApsolveSubmesh){1, 2};
    p->configs[0] = (ApsolveConfig){1, 1, 1, 0};
    p->configs[1] = (ApsolveConfig){1, 2, 1, -1};
    p->cost[apsolve_index(p, 0, 0, 0, 0)] = 3;
    p->cost[apsolve_index(p, 1, 1, 0, 0)] = 2;
    p->cost[apsolve_index(p, 0, 1, 0, 0)] = 4;
    p->cost[apsolve_index(p, 0, 1, 1, 0)] = 4.5;
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
    CU_ASSERT(pl->cost == 14.0);
    CU_ASSERT(pl->n_stages == 2);
    CU_ASSERT(pl->stages[0].end_layer == 0 && pl->stages[1].end_layer == 1);
    apsolve_plan_free(&pl);
    o.micro_batches = 1;
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
    CU_ASSERT(pl->cost == 4.5);
    CU_ASSERT(pl->n_stages == 1 && pl->stages[0].submesh == 1);
    apsolve_plan_free(&pl);
    o.micro_batches = 4;
    p->max_n_succ_stages[apsolve_index(p, 0, 0, 0, 0)] = 0;
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
    CU_ASSERT(pl->cost == 18.0);
    apsolve_plan_free(&pl);
    /* Inference: 2 stages * 3 = 6 vs 1 * 4.5: the single stage. */
    o.inference = 1;
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
    CU_ASSERT(pl->cost == 4.5);
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);
}

/* NaN, negative and infinite costs never crash and count as missing. */
static void test_nan(void)
{
    uint64_t rng = 7;
    OracleGen g = {6, 2, 4, 0.1, 0.0, 0, 0, 0.3};
    ApsolveProblem *p = NULL;
    ApsolveOptions o = {4, 0, 0, 0, 0};
    ApsolvePlan *pl = NULL;
    size_t n;
    CU_ASSERT_FATAL(oracle_make_problem(&g, &rng, &p) == APSOLVE_OK);
    n = apsolve_problem_cells(p);
    for (size_t k = 0; k < n; k += 3)
        p->cost[k] = k % 2 ? NAN : -1.0;
    CU_ASSERT(solve_and_compare(p, &o, brute_force(p, 4, 0, 0)));
    for (size_t k = 0; k < n; k++)
        p->cost[k] = NAN;
    CU_ASSERT(apsolve_solve(p, &o, &pl) == APSOLVE_EINFEASIBLE);
    CU_ASSERT(pl == NULL);
    o.inference = 1;
    CU_ASSERT(apsolve_solve(p, &o, &pl) == APSOLVE_EINFEASIBLE);
    apsolve_problem_free(&p);
}

static void test_mnss_formula(void)
{
    /* floor((100 - 40 - 10) / 20) - 1 = 1: room for 2 micro-batches in flight. */
    CU_ASSERT(apsolve_max_n_succ_stages(100, 40, 10, 20) == 1);
    CU_ASSERT(apsolve_max_n_succ_stages(100, 40, 10, 25) == 1);
    CU_ASSERT(apsolve_max_n_succ_stages(100, 40, 10, 26) == 0);
    CU_ASSERT(apsolve_max_n_succ_stages(100, 40, 10, 51) == -1);
    CU_ASSERT(apsolve_max_n_succ_stages(100, 95, 10, 20) == -1);
    CU_ASSERT(apsolve_max_n_succ_stages(100, 40, 10, 0) == APSOLVE_UNBOUNDED);
    CU_ASSERT(apsolve_max_n_succ_stages(100, 95, 10, 0) == -1);
    CU_ASSERT(apsolve_max_n_succ_stages(INT64_MAX, 0, 0, 1) == APSOLVE_UNBOUNDED);
}

/* The live states of dp_rows.c against the dense formulation (every device
 * count a state, each pulling from its children) and the plain DP, on
 * random problems where whole submeshes have no finite entry, so that most
 * device counts cannot be reached or cannot end: the same plan, cost and
 * number of threshold DPs, and the plain DP's optimum bit for bit. A state
 * pruned wrongly loses plans (or finds a different one) and fails here. */
static void test_live_states(void)
{
    static const int shapes[][2] = {{2, 4}, {4, 4}, {2, 8}, {4, 8}, {8, 2}, {1, 8}};
    uint64_t rng = 0x5EEDull;
    int mismatches = 0, feasible = 0, pruned = 0;
    for (int t = 0; t < 150; t++) {
        OracleGen g;
        ApsolveProblem *p = NULL;
        ApsolveOptions o;
        ApsolvePlan *live = NULL, *dense = NULL;
        int rl, rd, keep, kept = 0;
        double expect = NAN;
        memset(&g, 0, sizeof g);
        memset(&o, 0, sizeof o);
        g.layers = 3 + (int)(oracle_rand(&rng) % 8);
        g.hosts = shapes[t % 6][0];
        g.gpus = shapes[t % 6][1];
        g.inf_prob = 0.05 + 0.3 * oracle_uniform(&rng);
        g.mem_prob = t % 3 ? 0.5 : 0.0;
        g.max_limit = 6;
        g.integer_costs = t % 4 == 1;
        g.noise = 0.3;
        g.device_exponent = t % 2 ? 0.5 : 1.0;
        CU_ASSERT_FATAL(oracle_make_problem(&g, &rng, &p) == APSOLVE_OK);
        /* Whole submeshes without entries: the small ones below a random
         * size, or each with probability 1/2; one random submesh stays. */
        keep = (int)(oracle_rand(&rng) % (uint64_t)p->num_submeshes);
        for (int sm = 0; sm < p->num_submeshes; sm++) {
            int cut = t % 2 ? oracle_rand(&rng) % 2 == 0 : sm < keep;
            if (sm == keep || !cut) {
                kept++;
                continue;
            }
            for (int i = 0; i < p->num_layers; i++)
                for (int j = i; j < p->num_layers; j++)
                    for (int c = 0; c < p->num_configs; c++)
                        p->cost[apsolve_index(p, i, j, sm, c)] = INFINITY;
        }
        pruned += kept < p->num_submeshes;
        o.micro_batches = k_b[oracle_rand(&rng) % 7];
        o.max_stages = t % 5 == 2 ? 1 + (int)(oracle_rand(&rng) % 4) : 0;
        o.inference = t % 7 == 3;
        if (t % 5 == 4 && !o.inference) { /* exact stage counts per n */
            o.schedule = APSOLVE_SCHEDULE_INTERLEAVED;
            o.virtual_stages = 2;
        } else {
            expect = o.inference ? oracle_inference(p, o.max_stages)
                                 : oracle_training(p, o.micro_batches, o.max_stages, 0, NULL);
        }
        rl = apsolve_solve(p, &o, &live);
        rd = apsolve_solve_dense(p, &o, &dense);
        CU_ASSERT(rl == rd);
        if (rl == APSOLVE_OK && rd == APSOLVE_OK) {
            int same = live->n_stages == dense->n_stages && live->cost == dense->cost &&
                       live->total_cost == dense->total_cost &&
                       live->dp_evaluations == dense->dp_evaluations;
            for (size_t k = 0; same && k < live->n_stages; k++)
                same = live->stages[k].end_layer == dense->stages[k].end_layer &&
                       live->stages[k].submesh == dense->stages[k].submesh &&
                       live->stages[k].config == dense->stages[k].config;
            if (!isnan(expect))
                same = same && live->cost == expect;
            mismatches += !same;
            feasible++;
            if (!isnan(expect))
                check_plan(p, &o, live);
        } else if (rl == APSOLVE_EINFEASIBLE && !isnan(expect)) {
            mismatches += !isinf(expect);
        }
        apsolve_plan_free(&live);
        apsolve_plan_free(&dense);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(mismatches == 0);
    CU_ASSERT(feasible > 50);
    CU_ASSERT(pruned > 100);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"hand example", test_hand},
        {"max_n_succ_stages formula", test_mnss_formula},
        {"NaN and negative costs", test_nan},
        {"brute force, training", test_brute_training},
        {"brute force, inference", test_brute_inference},
        {"plain DP, training", test_oracle_training},
        {"plain DP, inference", test_oracle_inference},
        {"plain DP, L=16 on 2x8", test_oracle_2x8},
        {"live states against the dense DP", test_live_states},
    };
    return CUNIT_RUN("solver_exact", tests);
}
