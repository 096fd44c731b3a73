/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shortcuts of the exact search that must leave its answers untouched
 * (docs/performance.md, "apsolve: one-stage searches and apply limits"):
 *
 * - a search of one stage at most (NS = 2: --max-stages 1, the auto
 *   search's offload plans) runs row 0 of each threshold DP alone
 *   (solver/dp_rows.c); on random problems with memory figures and apply
 *   costs, under both objectives, 1F1B and interleaved exact counts, with
 *   and without headroom, it returns the dense formulation's plan, cost,
 *   threshold DP count and candidate count (and so does --max-stages 2,
 *   which needs the other rows: a shortcut taken there fails);
 * - the FULL objective's apply limits gathered from the shared table and
 *   a set of distinct keys (solver/dp_prep.c) are the sorted distinct apply
 *   keys of every usable entry of a range i <= j, as the problem's whole
 *   table gives them (it holds no range j < i): problems with finite
 *   entries outside the DP's table (a submesh larger than the cluster),
 *   and unknown, negative, zero, repeated and infinite apply costs;
 * - the shared table's items of every (i, j, submesh) are its usable
 *   configs, each once, in (cost, config) order (solver/dp_prep.c sorts
 *   them itself), on problems of up to 200 configs with many equal costs
 *   (+0 and -0 among them);
 * - the memory tests' integer paths (apsolve_stage_memory_need in
 *   solver/schedule.c, apsolve_max_n_succ_stages in solver/problem.c) give
 *   the long double formulas' answers on byte counts of every size up to
 *   2^62, quotients just below and at whole numbers, negative figures and
 *   fractional in-flight counts.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "dp_int.h"
#include "oracle.h"
#include "schedule.h"
#include "solver_int.h"

static ApsolveProblem *random_problem(uint64_t *rng, int t)
{
    static const int shapes[][2] = {{1, 4}, {2, 4}, {1, 8}, {2, 2}, {4, 2}};
    OracleGen g;
    ApsolveProblem *p = NULL;
    size_t n;
    memset(&g, 0, sizeof g);
    g.layers = 2 + (int)(oracle_rand(rng) % 8);
    g.hosts = shapes[t % 5][0];
    g.gpus = shapes[t % 5][1];
    g.inf_prob = 0.1 + 0.3 * oracle_uniform(rng);
    g.mem_prob = 0.5;
    g.max_limit = 5;
    g.integer_costs = t % 3 == 1;
    g.noise = 0.3;
    CU_ASSERT_FATAL(oracle_make_problem(&g, rng, &p) == APSOLVE_OK);
    n = apsolve_problem_cells(p);
    CU_ASSERT_FATAL(apsolve_memory_table_add(p) == APSOLVE_OK);
    for (size_t k = 0; k < n; k++) {
        ApsolveMemory *m = apsolve_memory_own(p, k);
        m->avail = oracle_rand(rng) % 10 == 0 ? 0 : 1000;
        m->peak = (int64_t)(oracle_rand(rng) % 700);
        m->initial = (int64_t)(oracle_rand(rng) % 200);
        m->intermediate = (int64_t)(oracle_rand(rng) % 120);
        p->max_n_succ_stages[k] = apsolve_memory_mnss(m);
        /* unknown, negative, zero, repeated apply costs; a few +inf */
        p->apply_cost[k] = oracle_rand(rng) % 7 == 0   ? NAN
                           : oracle_rand(rng) % 6 == 0 ? -1
                           : oracle_rand(rng) % 50 == 0 ? INFINITY
                                                       : (double)(oracle_rand(rng) % 9) / 4;
    }
    return p;
}

/* One stage at most: row 0 alone against the dense DP (every row). */
static void test_one_stage(void)
{
    uint64_t rng = 0x0E57A6Eull;
    int mismatches = 0, feasible = 0;
    for (int t = 0; t < 200; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveOptions o;
        ApsolvePlan *live = NULL, *dense = NULL;
        int rl, rd;
        memset(&o, 0, sizeof o);
        o.micro_batches = 1 + (int)(oracle_rand(&rng) % 8);
        o.max_stages = t % 4 == 2 ? 2 : 1; /* 2: rows past 0 matter */
        o.objective = t % 3 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        o.inference = t % 11 == 5;
        if (t % 4 == 3 && !o.inference) { /* exact stage counts per n */
            o.schedule = APSOLVE_SCHEDULE_INTERLEAVED;
            o.virtual_stages = 2;
        }
        o.headroom_percent = t % 5 == 1 ? 10 : 0;
        o.search_headroom = o.headroom_percent > 0;
        rl = apsolve_solve(p, &o, &live);
        rd = apsolve_solve_dense(p, &o, &dense);
        CU_ASSERT(rl == rd);
        if (rl == APSOLVE_OK && rd == APSOLVE_OK) {
            int same = live->n_stages == dense->n_stages && live->cost == dense->cost &&
                       live->total_cost == dense->total_cost &&
                       live->dp_evaluations == dense->dp_evaluations &&
                       live->candidates == dense->candidates;
            for (size_t k = 0; same && k < live->n_stages; k++)
                same = live->stages[k].end_layer == dense->stages[k].end_layer &&
                       live->stages[k].submesh == dense->stages[k].submesh &&
                       live->stages[k].config == dense->stages[k].config;
            mismatches += !same;
            feasible++;
        }
        apsolve_plan_free(&live);
        apsolve_plan_free(&dense);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(mismatches == 0);
    CU_ASSERT(feasible > 60);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The apply limits against every usable entry of the problem's whole grid
 * (the former reading): distinct keys, ascending, the last +inf. */
static void test_apply_limits(void)
{
    uint64_t rng = 0xA9911ull;
    int differ = 0;
    for (int t = 0; t < 120; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        ApsolveOptions o;
        const double *vals;
        size_t n_vals, nv = 0, m = 0, n = apsolve_problem_cells(p);
        double *ref = malloc((n ? n : 1) * sizeof *ref);
        CU_ASSERT_FATAL(sh && ref);
        /* on odd t a submesh made larger than the cluster (finite entries
         * the table leaves out); the ranges j < i have no cells
         * (apsolve_index) */
        if (t % 2)
            p->submeshes[p->num_submeshes - 1].hosts = p->cluster_hosts + 1;
        memset(&o, 0, sizeof o);
        o.micro_batches = 4;
        o.objective = APSOLVE_OBJECTIVE_FULL;
        for (size_t k = 0; k < n; k++) {
            int s = (int)(k / (size_t)p->num_configs % (size_t)p->num_submeshes);
            int c = (int)(k % (size_t)p->num_configs);
            if (!isinf(apsolve_entry_cost(p, k)) && apsolve_config_allowed(p, &o, s, c))
                ref[nv++] = p->apply_cost[k] > 0 ? p->apply_cost[k] : 0;
        }
        qsort(ref, nv, sizeof *ref, cmp_double);
        for (size_t k = 0; k < nv; k++)
            if (m == 0 || ref[k] != ref[m - 1])
                ref[m++] = ref[k];
        if (m)
            ref[m - 1] = INFINITY;
        CU_ASSERT_FATAL(apsolve_dp_shared_ready(sh, p, &o) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_dp_apply_limits(sh, p, &o, &vals, &n_vals) == APSOLVE_OK);
        differ += n_vals != m || (m && memcmp(vals, ref, m * sizeof *ref) != 0);
        free(ref);
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(differ == 0);
}

/* The table's options against the problem: every usable config of each
 * (i, j, submesh) once, ascending by (cost, config). */
static void test_table_order(void)
{
    uint64_t rng = 0x50F7ull;
    int bad = 0, items = 0;
    for (int t = 0; t < 60; t++) {
        ApsolveProblem *p = NULL;
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        ApsolveOptions o;
        int C = 1 + (int)(oracle_rand(&rng) % 200), L = 3;
        size_t n = apsolve_table_cells(L, 3, C);
        CU_ASSERT_FATAL(apsolve_problem_new(L, 1, 4, 3, C, 0, &p) == APSOLVE_OK);
        for (int sm = 0; sm < 3; sm++) {
            p->submeshes[sm].hosts = 1;
            p->submeshes[sm].gpus = 1 << sm;
            for (int c = 0; c < C; c++)
                p->configs[sm * C + c].valid = oracle_rand(&rng) % 8 != 0;
        }
        for (size_t k = 0; k < n; k++) { /* many ties; +inf, NaN, < 0 and -0 too */
            uint64_t r = oracle_rand(&rng) % 16;
            p->cost[k] = r == 0 ? INFINITY : r == 1 ? NAN : r == 2 ? -1 : r == 3 ? -0.0
                                                           : (double)(oracle_rand(&rng) % 10);
        }
        memset(&o, 0, sizeof o);
        o.micro_batches = 4;
        o.objective = t % 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        CU_ASSERT_FATAL(sh && apsolve_dp_shared_ready(sh, p, &o) == APSOLVE_OK);
        for (int i = 0; i < p->num_layers; i++)
            for (int q = sh->opt_off[i]; q < sh->opt_off[i + 1]; q++) {
                const DpOpt *op = &sh->opts[q];
                const DpSharedItem *it = &sh->items[op->item_off];
                int usable = 0;
                for (int c = 0; c < p->num_configs; c++)
                    usable += !isinf(apsolve_entry_cost(
                                  p, apsolve_index(p, i, op->end, op->submesh, c))) &&
                              apsolve_config_allowed(p, &o, op->submesh, c);
                bad += usable != op->item_n;
                for (int k = 0; k < op->item_n; k++) {
                    size_t idx = apsolve_index(p, i, op->end, op->submesh, it[k].config);
                    bad += (size_t)it[k].entry != idx || it[k].cost != apsolve_entry_cost(p, idx);
                    /* its entry's apply cost beside it, bit for bit */
                    bad += memcmp(&it[k].apply, &p->apply_cost[idx], sizeof it[k].apply) != 0;
                    if (k)
                        bad += !(it[k - 1].cost < it[k].cost ||
                                 (it[k - 1].cost == it[k].cost && it[k - 1].config < it[k].config));
                }
                items += op->item_n;
            }
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(bad == 0);
    CU_ASSERT(items > 10000);
}

/* The table built in two parts on two threads (dp_shared.c, a table of
 * 2^16 cells or more with load_threads >= 2) is the one-thread table,
 * byte for byte: its options, rows and items, whole-chunk tables too. */
static void test_table_two_parts(void)
{
    uint64_t rng = 0x7A81ull;
    int differ = 0, split = 0;
    for (int t = 0; t < 24; t++) {
        ApsolveProblem *p = NULL;
        ApsolveDpShared *one = apsolve_dp_shared_new(), *two = apsolve_dp_shared_new();
        ApsolveOptions o;
        int L = 7 + (int)(oracle_rand(&rng) % 30), S = 3, C;
        size_t n;
        /* the fewest configs for 2^16 cells, and sometimes fewer (one part) */
        C = (int)((65536 + (size_t)L * (size_t)(L + 1) / 2 * (size_t)S - 1) /
                  ((size_t)L * (size_t)(L + 1) / 2 * (size_t)S));
        C = t % 6 == 5 ? C / 2 : C + (int)(oracle_rand(&rng) % 40);
        C = C < 1 ? 1 : C > APSOLVE_MAX_CONFIGS ? APSOLVE_MAX_CONFIGS : C;
        n = apsolve_table_cells(L, S, C);
        split += n >= 65536;
        CU_ASSERT_FATAL(one && two && apsolve_problem_new(L, 1, 4, S, C, 0, &p) == APSOLVE_OK);
        for (int sm = 0; sm < S; sm++) {
            p->submeshes[sm].hosts = 1;
            p->submeshes[sm].gpus = 1 << sm;
            for (int c = 0; c < C; c++)
                p->configs[sm * C + c].valid = oracle_rand(&rng) % 8 != 0;
        }
        for (size_t k = 0; k < n; k++) { /* most +inf, as a sweep's; ties, NaN, < 0 */
            uint64_t r = oracle_rand(&rng) % 16;
            p->cost[k] = r < 9 ? INFINITY : r == 9 ? NAN : r == 10 ? -1
                                                     : (double)(oracle_rand(&rng) % 10);
            p->apply_cost[k] = (double)(oracle_rand(&rng) % 4) - 1;
        }
        memset(&o, 0, sizeof o);
        o.micro_batches = 4;
        o.objective = t % 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        if (t % 3 == 2) { /* a table of whole chunks only */
            o.schedule = APSOLVE_SCHEDULE_INTERLEAVED;
            o.virtual_stages = 2;
            o.whole_chunks = 1;
            one->whole_only = two->whole_only = 1;
        }
        o.load_threads = 1;
        CU_ASSERT_FATAL(apsolve_dp_shared_ready(one, p, &o) == APSOLVE_OK);
        o.load_threads = 2;
        CU_ASSERT_FATAL(apsolve_dp_shared_ready(two, p, &o) == APSOLVE_OK);
        differ += one->n_opts != two->n_opts || one->n_items != two->n_items ||
                  memcmp(one->opt_off, two->opt_off, (size_t)(L + 1) * sizeof *one->opt_off) ||
                  memcmp(one->opts, two->opts, one->n_opts * sizeof *one->opts) ||
                  memcmp(one->items, two->items, one->n_items * sizeof *one->items);
        apsolve_dp_shared_free(one);
        apsolve_dp_shared_free(two);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(split >= 12);
    CU_ASSERT(differ == 0);
}

/* The former formulas, in long double throughout. */
static long long need_ref(ApsolveMemoryRule rule, long long peak, long long initial,
                          long long intermediate, double f)
{
    long double need;
    if (peak <= 0 && initial <= 0 && intermediate <= 0)
        return 0;
    need = (long double)peak + (long double)initial +
           (long double)apsolve_stage_extra_copies(rule, f) * (long double)intermediate;
    if (!(need > 0))
        return 0;
    if (need >= (long double)LLONG_MAX)
        return LLONG_MAX;
    return llroundl(need);
}

static int mnss_ref(int64_t avail, int64_t peak, int64_t initial, int64_t intermediate)
{
    long double room = (long double)avail - (long double)peak - (long double)initial, q;
    if (room < 0)
        return -1;
    if (intermediate <= 0)
        return APSOLVE_UNBOUNDED;
    q = floorl(room / (long double)intermediate) - 1;
    if (q >= (long double)(APSOLVE_UNBOUNDED - 1))
        return APSOLVE_UNBOUNDED;
    return q < -1 ? -1 : (int)q;
}

/* A byte count of a random size up to 2^62, sometimes negative. */
static int64_t any_bytes(uint64_t *rng)
{
    int bits = (int)(oracle_rand(rng) % 63);
    int64_t x = (int64_t)(oracle_rand(rng) >> (64 - (bits ? bits : 1)));
    return oracle_rand(rng) % 9 == 0 ? -x : x;
}

static void test_memory_integers(void)
{
    static const double fs[] = {0, 0.5, 1, 2, 3, 4.5, 7, 8, 17, 1e6, 1e17, NAN};
    uint64_t rng = 0x11E6ull;
    int differ = 0;
    for (int t = 0; t < 200000; t++) {
        int64_t avail = any_bytes(&rng), peak = any_bytes(&rng), initial = any_bytes(&rng),
                inter = any_bytes(&rng);
        double f = fs[oracle_rand(&rng) % 12];
        ApsolveMemoryRule rule = t % 2 ? APSOLVE_MEMORY_EXACT : APSOLVE_MEMORY_ALPA;
        /* a quotient at or just below a whole number */
        if (t % 3 == 0 && inter > 0 && inter < (INT64_C(1) << 40) &&
            llabs(peak) < (INT64_C(1) << 50) && llabs(initial) < (INT64_C(1) << 50)) {
            int64_t k = 1 + (int64_t)(oracle_rand(&rng) % 100000);
            avail = peak + initial + k * inter - (int64_t)(oracle_rand(&rng) % 2);
        }
        differ += apsolve_stage_memory_need(rule, peak, initial, inter, f) !=
                  need_ref(rule, peak, initial, inter, f);
        differ += apsolve_max_n_succ_stages(avail, peak, initial, inter) !=
                  mnss_ref(avail, peak, initial, inter);
    }
    CU_ASSERT(differ == 0);
}

/* apsolve_stage_memory_fits (the searches' memory test) is need <= budget,
 * the need rounded in long double: on byte counts up to 2^51 with
 * fractional in-flight counts (k / 9, k + 1/3, halves), whose double sums
 * are inexact, and budgets at the need and a byte either side (the
 * answers next to the threshold; the test fails with the margin taken
 * below 0); and on any byte counts, negative and past 2^52 included. */
static void test_memory_fits(void)
{
    static const double fs[] = {0, 0.5, 1, 1.5, 2, 7, 17, NAN, 1e17};
    uint64_t rng = 0xF175ull;
    int differ = 0, near = 0;
    for (int t = 0; t < 400000; t++) {
        ApsolveMemoryRule rule = t % 2 ? APSOLVE_MEMORY_EXACT : APSOLVE_MEMORY_ALPA;
        int64_t peak, initial, inter, budget;
        double f;
        long long need;
        if (t % 4) {
            peak = (int64_t)(oracle_rand(&rng) >> 13);     /* below 2^51 */
            initial = (int64_t)(oracle_rand(&rng) >> 13);
            inter = (int64_t)(oracle_rand(&rng) >> (13 + oracle_rand(&rng) % 30));
            f = t % 3 ? (double)(oracle_rand(&rng) % 200) / 9.0
                      : (double)(oracle_rand(&rng) % 50) + (t % 5 ? 1.0 / 3.0 : 0.5);
            need = apsolve_stage_memory_need(rule, peak, initial, inter, f);
            budget = need + (int64_t)(oracle_rand(&rng) % 3) - 1;
            near++;
        } else {
            peak = any_bytes(&rng);
            initial = any_bytes(&rng);
            inter = any_bytes(&rng);
            budget = any_bytes(&rng);
            f = fs[oracle_rand(&rng) % 9];
            need = apsolve_stage_memory_need(rule, peak, initial, inter, f);
        }
        differ += apsolve_stage_memory_fits(rule, peak, initial, inter, f, budget) !=
                  (need <= budget);
    }
    CU_ASSERT(near > 0);
    CU_ASSERT_EQUAL(differ, 0);
}

/* apsolve_stage_memory_fit_prefix (one entry's bisection over a family's
 * ascending counts) is the bisection of need <= budget, the need rounded
 * in long double, count by count: budgets at a count's need and a byte
 * either side (the near answers), and any byte counts. */
static void test_memory_fit_prefix(void)
{
    uint64_t rng = 0xF17Full;
    int differ = 0, inner = 0;
    for (int t = 0; t < 100000; t++) {
        ApsolveMemoryRule rule = t % 2 ? APSOLVE_MEMORY_EXACT : APSOLVE_MEMORY_ALPA;
        double f[24];
        int nf = 1 + (int)(oracle_rand(&rng) % 24), a = 0, b;
        int64_t peak, initial, inter, budget;
        f[0] = (double)(oracle_rand(&rng) % 4) / 3.0;
        for (int k = 1; k < nf; k++) /* ascending, some repeated, some fractional */
            f[k] = f[k - 1] + (double)(oracle_rand(&rng) % 4) / (t % 3 ? 1.0 : 9.0);
        if (t % 4) {
            peak = (int64_t)(oracle_rand(&rng) >> 13);
            initial = (int64_t)(oracle_rand(&rng) >> 13);
            inter = (int64_t)(oracle_rand(&rng) >> (13 + oracle_rand(&rng) % 30));
            budget = apsolve_stage_memory_need(rule, peak, initial, inter,
                                               f[oracle_rand(&rng) % (uint64_t)nf]) +
                     (int64_t)(oracle_rand(&rng) % 3) - 1;
        } else {
            peak = any_bytes(&rng);
            initial = any_bytes(&rng);
            inter = any_bytes(&rng);
            budget = any_bytes(&rng);
        }
        b = nf;
        while (a < b) {
            int mid = a + (b - a) / 2;
            if (apsolve_stage_memory_need(rule, peak, initial, inter, f[mid]) <= budget)
                a = mid + 1;
            else
                b = mid;
        }
        inner += a > 0 && a < nf;
        differ += apsolve_stage_memory_fit_prefix(rule, peak, initial, inter, budget, f, nf) != a;
    }
    CU_ASSERT(inner > 1000);
    CU_ASSERT_EQUAL(differ, 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"one stage: row 0 alone against the dense DP", test_one_stage},
        {"apply limits from the table and a key set", test_apply_limits},
        {"table items in (cost, config) order", test_table_order},
        {"a table built in two parts: the one-thread table", test_table_two_parts},
        {"memory tests on integers", test_memory_integers},
        {"memory fits: the rounded need's answer", test_memory_fits},
        {"memory fit prefix: the bisection of the rounded need", test_memory_fit_prefix},
    };
    return CUNIT_RUN("solver_dp_shortcuts", tests);
}
