/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A plan priced with recompute_layers (apsolve --parallel
 * ...,recompute=full,recompute_layers=K; docs/variants.md, "Partial
 * recomputation"): each full stage's saved activations, optimizer state
 * and weight-gradient seconds as apsolve composed them
 * (solver/recompute_layers.h, the one owner of the composition), not the
 * stored full entry's, so that apreport's memory and schedule say what
 * apsolve priced. The stored stage row already holds the composed phases
 * and peak.
 */
#include <string.h>

#include "recompute_layers.h"
#include "report_int.h"

int rep_recompute_layers_stages(Costdb *db, ApreportReport *r)
{
    const CostdbPlanLayout *l = &r->opts.layout;
    int chunks = l->vpp > 1 ? l->vpp : 1;
    ApsolveOptions o;
    ApsolveProblem *p = NULL;
    if (!r->opts.has_layout || l->recompute_layers <= 0)
        return 0;
    memset(&o, 0, sizeof o);
    o.micro_batches = r->plan.micro_batches > 0 ? r->plan.micro_batches : 1;
    o.memory_budget = r->plan.memory_budget;
    o.objective = APSOLVE_OBJECTIVE_FULL;
    if (apsolve_problem_from_db(db, r->sweep.id, &o, &p) < 0)
        return APREPORT_EDB;
    for (size_t k = 0; k < r->n_stages; k++) {
        RepStage *s = &r->stages[k];
        ApsolveRecomputeLayers x;
        char why[200];
        int n = s->st.end_layer - s->st.start_layer + 1;
        if (!s->variant_known || s->variant.recompute != COSTDB_RECOMPUTE_FULL ||
            s->st.submesh_index < 0 || s->st.config_index < 0 || n % chunks ||
            l->recompute_layers >= n / chunks ||
            apsolve_recompute_layers_entry(p, s->st.start_layer, s->st.end_layer,
                                           s->st.submesh_index, s->st.config_index,
                                           l->recompute_layers, chunks, &x, why, sizeof why))
            continue; /* every layer recomputed, or not composed: the stored entry */
        s->rl_k = x.k;
        s->rl_chunks = x.chunks;
        s->rl_chunk_layers = x.chunk_layers;
        s->intermediate = x.memory.intermediate;
        s->initial = x.memory.initial;
        s->wgrad = x.wgrad;
    }
    apsolve_problem_free(&p);
    return 0;
}

int rep_recomputed_ranges(const RepStage *s, int *first, int *last, int max)
{
    int n = 0;
    if (!s->variant_known || s->variant.recompute != COSTDB_RECOMPUTE_FULL)
        return 0;
    if (s->rl_chunks <= 0) { /* the stored full entry: every layer */
        if (max > 0) {
            first[0] = s->st.start_layer;
            last[0] = s->st.end_layer;
        }
        return 1;
    }
    /* chunk q holds layers start + q m .. start + (q + 1) m - 1, its
     * first k recomputed (apsolve_recompute_layers_entry) */
    for (int q = 0; q < s->rl_chunks && n < max; q++, n++) {
        first[n] = s->st.start_layer + q * s->rl_chunk_layers;
        last[n] = first[n] + s->rl_k - 1;
    }
    return n;
}
