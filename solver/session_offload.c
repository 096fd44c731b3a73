/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The activation-offload step of a --parallel plan (session_int.h): the
 * candidate whose stage entries offload the first N layers' saved
 * activations to host memory (activation_offload.h), the refusals
 * Megatron-Core core_v0.19.0's TransformerConfig.__post_init__ makes
 * (megatron/core/transformer/transformer_config.py: "Currently there is
 * no support for Pipeline parallelism with CPU offloading", "CPU
 * offloading does not work when activation recomputation is enabled"),
 * and what it priced per stage as messages (docs/variants.md,
 * "Activation offload").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activation_offload.h"
#include "apsolve.h"
#include "collective.h"
#include "costdb.h"
#include "session.h"
#include "session_int.h"

void apsolve_offload_stages_say(const ApsolveRequest *a, struct Costdb *db,
                                const CostdbSweep *sw, const ApsolveProblem *src, int n,
                                ApsolvePlan *g)
{
    CostdbHardware hw;
    CostdbFabric f;
    CostdbLayer *layers = NULL;
    size_t nl = 0;
    if (!g || costdb_hardware_get(db, sw->hardware_id, &hw) < 0 ||
        costdb_model_layers(db, sw->model_id, &layers, &nl) < 0)
        return;
    costdb_fabric_from_hardware(&hw, &f);
    g->offload = n;
    for (size_t k = 0; k < g->n_stages; k++) {
        const ApsolveStage *st = &g->stages[k];
        ApsolveOffloadStage x;
        char why[256];
        /* the figures of the entry as profiled, before the transformation */
        if (st->submesh < 0 || st->config < 0 ||
            apsolve_offload_stage(src, layers, nl, f.host_bandwidth, st->start_layer,
                                  st->end_layer, st->submesh, st->config, n, &x, why,
                                  sizeof why))
            continue;
        if (k == 0) {
            g->offload_freed = x.freed;
            g->offload_saved = x.saved_bytes;
            g->offload_exposed = x.exposed_fwd + x.exposed_bwd;
            g->offload_bandwidth = x.host_bandwidth;
        }
        if (!a->quiet)
            apsolve_say(a, "activation offload, stage %zu (layers %d-%d): the first %d of %d "
                        "layers' saved activations, %.0f bytes a micro-batch, to host memory "
                        "and back at %.6g GB/s (%.6g s each way); at most %d layers on the "
                        "device at once (%.0f bytes): peak and intermediate %lld bytes less; "
                        "copies exposed %.6g s in the forward, %.6g s in the backward",
                        k, st->start_layer, st->end_layer, x.offloaded, x.layers, x.saved_bytes,
                        x.host_bandwidth / 1e9, x.d2h, x.layers - x.offloaded, x.window_bytes,
                        (long long)x.freed, x.exposed_fwd, x.exposed_bwd);
    }
    free(layers);
}

void apsolve_offload_say(ApsolveRun *r, ApsolvePlan *g)
{
    if (r->have_offload_c)
        apsolve_offload_stages_say(r->a, r->db, &r->offload_c.sw, r->offload_src,
                                   r->a->par.offload, g);
}

int apsolve_run_offload(ApsolveRun *r, ApsolveCand **pc)
{
    const ApsolveRequest *a = r->a;
    const ApsolveParallel *pr = &a->par;
    const ApsolveCand *eq = *pc;
    const char *what = a->parallel ? a->parallel : "of the stored plan";
    char why[400] = "";
    int rc;
    if (pr->offload <= 0)
        return 0;
    if (pr->pp > 1)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: offload needs pp=1 "
                            "(Megatron-Core's TransformerConfig: \"Currently there is no support "
                            "for Pipeline parallelism with CPU offloading\")", what);
    if (pr->recompute != COSTDB_RECOMPUTE_NONE)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: offload needs recompute=none "
                            "(Megatron-Core's TransformerConfig: \"CPU offloading does not work "
                            "when activation recomputation is enabled\")", what);
    if (a->opt.inference || a->batch > 0)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: offload prices training's "
                            "saved activations; not with --inference or --batch", what);
    rc = apsolve_offload_problem(r->db, eq->sweep, eq->p, r->specs, r->nspec, pr->offload,
                                 &r->offload_c.p, why, sizeof why);
    if (rc)
        return apsolve_fail(a, rc == APSOLVE_ENOMEM ? APSOLVE_ERROR_FAILED : APSOLVE_ERROR_INPUT,
                            rc == APSOLVE_ENOMEM ? "out of memory" : "--parallel %s: %s", what,
                            why);
    r->have_offload_c = 1;
    r->offload_src = eq->p;
    r->offload_c.sweep = eq->sweep;
    r->offload_c.sw = eq->sw;
    r->offload_c.opt = eq->opt;
    r->offload_c.global_batch = eq->global_batch;
    r->offload_c.micro = eq->micro;
    *pc = &r->offload_c;
    return 0;
}
