/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The layout a --parallel plan is priced with. Megatron-LM's tensor
 * parallelism holds every weight matrix of a layer split over the tp ranks
 * (megatron/core/tensor_parallel/layers.py: ColumnParallelLinear splits the
 * output dimension, RowParallelLinear the input one, VocabParallelEmbedding
 * the vocabulary), and so does torchtitan's and DeepSpeed's Megatron path.
 * The sweep profiles, per logical mesh, the memory levels of the sharding
 * ILP's time/memory Pareto set (docs/variants.md); the fastest level keeps
 * weights whole where replicating them is cheaper, the memory-saving ones
 * split them. A plan that says "tp = 4" is priced with the level that splits
 * them as the framework does: per stage, among the configs of its mesh,
 * recompute and ZeRO, the levels whose stored placements keep the fewest
 * weight matrices whole on the tp axis (costdb_weight_whole_on_axis1, the
 * rule apreport warns by), the lowest of them that fits in memory at the
 * stage's position (the next one is tried while a stage does not fit; where
 * every level splits as much, the evaluation's own choice stands). "Fits"
 * is the evaluation's budget: the raw capacity, or less the memory headroom
 * where the plan is made keeping it (apsolve_evaluate_as_run_keep).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_text.h"
#include "session_int.h"
#include "solver_int.h"

int apsolve_placements_whole(const CostdbPlacement *ps, size_t n, int a, int b,
                             size_t *weights)
{
    size_t whole = 0;
    *weights = 0;
    for (size_t i = 0; i < n; i++) {
        int w = costdb_weight_whole_on_axis1(&ps[i], a, b);
        *weights += w >= 0;
        whole += w == 1;
    }
    return (int)whole;
}

int apsolve_whole_weights(struct Costdb *db, int64_t sweep, int start, int end, int submesh,
                          int config, int a, int b, size_t *weights)
{
    CostdbPlacement *ps = NULL;
    size_t n = 0;
    int whole;
    *weights = 0;
    if (costdb_placements_get(db, sweep, start, end, submesh, config, &ps, &n) < 0)
        return -1;
    whole = apsolve_placements_whole(ps, n, a, b, weights);
    free(ps);
    return whole;
}

void apsolve_3d_tp_levels(Costdb *db, int64_t sweep, const ApsolveProblem *p,
                          ApsolveStageSpec *sp, size_t n, ApsolveTpLevels *lv)
{
    for (size_t k = 0; k < n; k++) {
        int s, best = -1, seen = 0, whole[APSOLVE_TP_MAX_LEVELS], level[APSOLVE_TP_MAX_LEVELS];
        size_t weights;
        CostdbVariant want = sp[k].variant;
        want.memory_level = -1; /* the level is what this picks */
        memset(&lv[k], 0, sizeof lv[k]);
        if (sp[k].logical_b <= 1)
            continue;
        s = apsolve_find_submesh(p, sp[k].hosts, sp[k].gpus);
        if (s < 0)
            continue;
        for (int c = 0; c < p->num_configs && seen < APSOLVE_TP_MAX_LEVELS; c++) {
            const ApsolveConfig *cf = &p->configs[s * p->num_configs + c];
            int w;
            if (!cf->valid || cf->logical_a != sp[k].logical_a ||
                cf->logical_b != sp[k].logical_b ||
                (sp[k].force_batch_dim >= -1 && cf->force_batch_dim != sp[k].force_batch_dim) ||
                !costdb_variant_matches(want, cf->variant) ||
                !isfinite(p->cost[apsolve_index(p, sp[k].start_layer, sp[k].end_layer, s, c)]))
                continue; /* no entry (or none the plan's expert layout can run) */
            w = apsolve_whole_weights(db, sweep, sp[k].start_layer, sp[k].end_layer, s, c,
                                      cf->logical_a, cf->logical_b, &weights);
            if (w < 0 || weights == 0)
                continue;
            whole[seen] = w;
            level[seen++] = cf->variant.memory_level;
            if (best < 0 || w < best)
                best = w;
        }
        /* The levels that split the most, lowest first. */
        for (int i = 0; i < seen; i++)
            if (whole[i] == best) {
                int j = lv[k].n++;
                while (j > 0 && lv[k].level[j - 1] > level[i]) {
                    lv[k].level[j] = lv[k].level[j - 1];
                    j--;
                }
                lv[k].level[j] = level[i];
            }
        if (lv[k].n == seen) {
            /* every level splits as much: the evaluation's own choice
             * (the cheapest that fits) stands */
            lv[k].n = 0;
            continue;
        }
        sp[k].variant.memory_level = lv[k].level[0];
    }
}

size_t apsolve_3d_tp_bump(const ApsolvePlan *pl, const ApsolveOptions *opt, ApsolveStageSpec *sp,
                          ApsolveTpLevels *lv, size_t n)
{
    size_t bumped = 0;
    for (size_t k = 0; k < n && pl && k < pl->n_stages; k++) {
        const ApsolveStage *st = &pl->stages[k];
        /* the budget the evaluation judged by: less the headroom when it
         * keeps one (apsolve_keep_headroom) */
        int64_t budget = st->available_memory - (opt->search_headroom ? st->memory_reserve : 0);
        int over = st->memory_needed > 0 && st->available_memory > 0 &&
                   st->memory_needed > budget;
        if (!over || lv[k].next + 1 >= lv[k].n)
            continue;
        sp[k].variant.memory_level = lv[k].level[++lv[k].next];
        bumped++;
    }
    return bumped;
}
