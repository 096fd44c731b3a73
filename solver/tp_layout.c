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
 * recompute and ZeRO, the level whose stored placements keep the fewest
 * weight matrices whole on the tp axis (costdb_weight_whole_on_axis1, the
 * rule apreport warns by), the lowest such level on a tie.
 */
#include <stdlib.h>

#include "costdb.h"
#include "costdb_text.h"
#include "session_int.h"

/* Weight matrices of (start..end, submesh s, config c) kept whole on the tp
 * axis; -1 when the placements cannot be read or hold no weight matrix. */
static int whole_weights(Costdb *db, int64_t sweep, const ApsolveStageSpec *sp, int s, int c,
                         const ApsolveConfig *cf)
{
    CostdbPlacement *ps = NULL;
    size_t n = 0, weights = 0, whole = 0;
    if (costdb_placements_get(db, sweep, sp->start_layer, sp->end_layer, s, c, &ps, &n) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int w = costdb_weight_whole_on_axis1(&ps[i], cf->logical_a, cf->logical_b);
        weights += w >= 0;
        whole += w == 1;
    }
    free(ps);
    return weights ? (int)whole : -1;
}

size_t apsolve_3d_tp_levels(Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            ApsolveStageSpec *sp, size_t n)
{
    size_t split = 0;
    for (size_t k = 0; k < n; k++) {
        int s = -1, best = -1, best_level = -1;
        if (sp[k].logical_b <= 1)
            continue;
        for (int q = 0; q < p->num_submeshes; q++)
            if (p->submeshes[q].hosts == sp[k].hosts && p->submeshes[q].gpus == sp[k].gpus)
                s = q;
        if (s < 0)
            continue;
        for (int c = 0; c < p->num_configs; c++) {
            const ApsolveConfig *cf = &p->configs[s * p->num_configs + c];
            int w;
            if (!cf->valid || cf->logical_a != sp[k].logical_a ||
                cf->logical_b != sp[k].logical_b ||
                (sp[k].force_batch_dim >= -1 && cf->force_batch_dim != sp[k].force_batch_dim) ||
                (sp[k].recompute >= 0 && cf->recompute != sp[k].recompute) ||
                (sp[k].zero >= 0 && cf->zero != sp[k].zero))
                continue;
            w = whole_weights(db, sweep, &sp[k], s, c, cf);
            if (w < 0)
                continue;
            if (best < 0 || w < best || (w == best && cf->memory_level < best_level)) {
                best = w;
                best_level = cf->memory_level;
            }
        }
        if (best_level >= 0) {
            sp[k].memory_level = best_level;
            split += best == 0;
        }
    }
    return split;
}
