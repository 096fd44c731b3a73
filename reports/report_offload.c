/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A plan priced with activation offload (apsolve --parallel ...,offload=N;
 * docs/variants.md, "Activation offload"): each stage's figures as apsolve
 * priced them, from the one owner of the pricing
 * (solver/activation_offload.h, apsolve_offload_stage: Transformer
 * Engine v2.18's DefaultOffloadSynchronizer under Megatron-Core
 * core_v0.19.0's --cpu-offloading-num-layers), over the same inputs
 * apsolve gives it: the sweep's profiled entry, its hardware row's host
 * link and the model's per-layer record. The stored stage row already
 * holds the offloaded phases and peak; the stage's saved activations
 * lose the bytes freed, as apsolve's composed entry does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "report_int.h"

int rep_offload_stages(Costdb *db, ApreportReport *r)
{
    int n = r->opts.has_layout ? r->opts.layout.offload : 0;
    CostdbFabric fab;
    CostdbLayer *layers = NULL;
    size_t nl = 0;
    ApsolveOptions o;
    ApsolveProblem *p = NULL;
    if (n <= 0)
        return 0;
    memset(&fab, 0, sizeof fab);
    if (r->has_hw)
        costdb_fabric_from_hardware(&r->hw, &fab);
    /* no model record: apsolve_offload_stage says so per stage */
    if (r->sweep.model_id > 0 && costdb_model_layers(db, r->sweep.model_id, &layers, &nl) < 0) {
        layers = NULL;
        nl = 0;
    }
    memset(&o, 0, sizeof o);
    o.micro_batches = r->plan.micro_batches > 0 ? r->plan.micro_batches : 1;
    o.memory_budget = r->plan.memory_budget;
    o.objective = APSOLVE_OBJECTIVE_FULL;
    if (apsolve_problem_from_db(db, r->sweep.id, &o, &p) < 0) {
        free(layers);
        return APREPORT_EDB;
    }
    for (size_t k = 0; k < r->n_stages; k++) {
        RepStage *s = &r->stages[k];
        if (s->st.submesh_index < 0 || s->st.config_index < 0) {
            snprintf(s->offload_why, sizeof s->offload_why, "the stage has no profiled entry");
            continue;
        }
        if (apsolve_offload_stage(p, layers, nl, fab.host_bandwidth, s->st.start_layer,
                                  s->st.end_layer, s->st.submesh_index, s->st.config_index, n,
                                  &s->offload, s->offload_why, sizeof s->offload_why))
            continue;
        s->have_offload = 1;
        s->intermediate -= s->offload.freed < s->intermediate ? s->offload.freed : s->intermediate;
    }
    apsolve_problem_free(&p);
    free(layers);
    return 0;
}
