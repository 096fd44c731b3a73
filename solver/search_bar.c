/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bars of the auto search's cut searches (apsolve_solve_below, dp.c) from a
 * plan to beat whose full estimate is known (session_search.c; docs/
 * performance.md, "The plain search's 1F1B solve cut at the chunked plan"
 * and "Every chunked search cut at the plan to beat"). A plan whose full
 * estimate is below C has its T (the objective less the apply step) below
 * C and each stage's cost at most C / B, so its total_cost is at most C
 * plus the largest apply_cost of the entries that cheap that it can hold:
 * a search whose objective is above that bar holds no such plan. Where no
 * full estimate of the sweep has a straddle term (straddle_free,
 * full_estimate.c apsolve_sweep_straddle_free) and every such entry has a
 * known apply_cost, the full estimate is at least the total_cost itself,
 * and the bar is C (docs/performance.md, "The chunked searches' bar without
 * the apply term").
 */
#include <math.h>

#include "apsolve.h"
#include "session_int.h"
#include "solver_int.h"

/* Whether entry idx can be a stage of a feasible plan of one of the stage
 * counts ns[0 .. count) under o: its config allowed, its cost usable and,
 * the memory rule applying, a stage count bound of 0 or more at one of
 * those counts (evaluate.c apsolve_plan_price's memory_ok; dp_prep.c drops
 * the rest; a check that drops fewer only raises the bar). */
static int usable(const ApsolveProblem *p, const ApsolveOptions *o, size_t idx, const int *ns,
                  int count)
{
    size_t SK = (size_t)p->num_submeshes * (size_t)p->num_configs, sk = idx % SK;
    int s = (int)(sk / (size_t)p->num_configs), k = (int)(sk % (size_t)p->num_configs);
    if (!apsolve_config_allowed(p, o, s, k) || !(apsolve_cell_cost(p, idx, sk) < INFINITY))
        return 0;
    if (o->ignore_memory)
        return 1;
    for (int q = 0; q < count; q++)
        if (apsolve_entry_mnss(p, o, idx, ns[q]) >= 0)
            return 1;
    return 0;
}

/* C plus the largest apply_cost a of the entries usable at one of the
 * counts ns that cost at most C / B (1 + 1e-9); C alone where the
 * objective has no apply step, or where straddle_free and each of those
 * entries has a known apply_cost (>= 0 and finite, full_estimate.c's
 * apply_from_entries test): a plan of them priced below C has, every
 * stage's straddle being 0, the full estimate pipeline + max apply_cost,
 * at least T + max apply_cost = its total_cost. */
static double bar_of(const ApsolveProblem *p, const ApsolveOptions *o, double C, const int *ns,
                     int count, int straddle_free, const double *least)
{
    double a = 0, cap = C / o->micro_batches * (1 + 1e-9);
    int L = p->num_layers, SK = p->num_submeshes * p->num_configs, unknown = 0;
    if (o->objective != APSOLVE_OBJECTIVE_FULL || o->inference)
        return C;
    /* each range's entries in turn, as laid out (j, then submesh and
     * config); a range whose least entry cost (least) is above cap has no
     * entry at or below it (a NaN cost is at or below nothing) */
    for (int i = 0; i < L; i++)
        for (int j = i; j < L; j++) {
            if (least && !(least[(size_t)i * L + j] <= cap))
                continue;
            for (size_t idx = apsolve_index(p, i, j, 0, 0), end = idx + (size_t)SK; idx < end;
                 idx++) {
                double x;
                int known;
                /* the cost first: most entries of a range that has one
                 * under cap are above it, and need nothing else read */
                if (!(p->cost[idx] <= cap))
                    continue;
                x = p->apply_cost[idx];
                known = x >= 0 && isfinite(x);
                /* an entry that neither raises a nor, unknown, matters */
                if ((!(x > a) && (known || unknown || !straddle_free)) ||
                    !usable(p, o, idx, ns, count))
                    continue;
                if (x > a)
                    a = x;
                unknown |= !known;
            }
        }
    return straddle_free && !unknown ? C : C + a;
}

/* 1F1B: a plan's full estimate is at least its T (it adds transfers, a
 * period of at least the largest stage and the apply step, as
 * session_search.c's chunk_bound takes), so it beats C only with T <= C;
 * its stages then cost at most C / B each (T = sum + (B - 1) max >= B
 * max). Its stage count bound does not depend on the count (evaluate.c,
 * apsolve_entry_mnss_within): read at the table's. */
double apsolve_plain_bar(const ApsolveProblem *p, const ApsolveOptions *o, double C,
                         int straddle_free)
{
    int L = p->num_layers;
    return bar_of(p, o, C, &L, 1, straddle_free, NULL);
}

/* The chunked schedules (interleaved 1F1B, interleaved ZB, ZB-V; options o
 * with the schedule and v): the full estimate (full_estimate.c) is the
 * objective's T (evaluate.c apsolve_plan_price: base_time(v, B, sum, max
 * cost) less the zero-bubble saving) with the largest period (at least
 * the largest cost, base_time rising in it) in place of the largest cost,
 * plus the exchanges (p2p_exposed, or v times the transfers) and the
 * apply step, none negative, with the same saving taken off; where the
 * estimate is not available its price is total_cost itself. So a plan
 * priced below best has T below best, and B x its largest stage at most
 * its price (chunk_floor.c's first claim): each stage costs below best /
 * B. Its entries fit at its own stage count, one of ns. */
double apsolve_chunk_bar(const ApsolveProblem *p, const ApsolveOptions *o, double best,
                         const int *ns, int count, int straddle_free)
{
    return bar_of(p, o, best, ns, count, straddle_free, NULL);
}

/* The same bar, the ranges whose least cost (f->cost, chunk_floor.c
 * apsolve_stage_floor_init_plain: the least p->cost over the range's
 * submeshes and configs) is above best / B (1 + 1e-9) not read: none of
 * their entries is cheap enough to count. */
double apsolve_chunk_bar_floor(const ApsolveProblem *p, const ApsolveOptions *o, double best,
                               const int *ns, int count, int straddle_free,
                               const ApsolveStageFloor *f)
{
    return bar_of(p, o, best, ns, count, straddle_free, f && f->p == p ? f->cost : NULL);
}
