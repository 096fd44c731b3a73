/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The expert-parallel step of a --parallel plan (session_int.h): the
 * candidate whose entries are ep stages (expert_parallel.h), the figures
 * it adds per stage as messages, and the refusals of a layout the model or
 * the request cannot take (docs/expert-parallel.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "costdb.h"
#include "costdb_text.h"
#include "expert_parallel.h"
#include "schedule.h"
#include "session.h"
#include "session_int.h"
#include "solver_int.h"

void apsolve_ep_routing(struct Costdb *db, int64_t model_id, int *top_k, int64_t *capacity)
{
    CostdbModel m;
    long long topk = 0, cap = 0;
    *top_k = 0;
    *capacity = 0;
    if (model_id > 0 && costdb_model_get(db, model_id, &m) == 0 &&
        costdb_json_member_int(m.options, "moe_top_k", &topk) == 0 &&
        costdb_json_member_int(m.options, "moe_capacity", &cap) == 0 && topk > 0 && cap > 0) {
        *top_k = (int)topk;
        *capacity = cap;
    }
}

/* The request's expert layout, with the routing the sweep's model
 * records (capacity 0 when it records none). */
static void layout_of(ApsolveRun *r, int64_t model_id, ApsolveEpLayout *l)
{
    const ApsolveParallel *pr = &r->a->par;
    int cp = pr->cp > 1 ? pr->cp : 1;
    /* under cp the stages' entries are those of logical (dp x cp, tp)
     * (context_parallel.h), and the experts fold over dp x cp x tp */
    *l = (ApsolveEpLayout){pr->dp * cp, pr->tp, pr->ep > 1 ? pr->ep : 1,
                           pr->etp > 0 ? pr->etp : pr->tp, pr->zero, cp, 0, 0};
    apsolve_ep_routing(r->db, model_id, &l->top_k, &l->capacity);
    l->a2a_overlap = pr->moe_a2a_overlap;
}

/* What the levels of stage sp's mesh (batch forced on axis 0) can price,
 * for a refusal: each distinct stored split of the expert weights, "etp=T
 * (any ep)" for one that keeps the experts whole, "ep=E,etp=T" for one
 * that splits them. */
static void stored_splits(ApsolveRun *r, const ApsolveCand *eq, const ApsolveStageSpec *sp,
                          const ApsolveEpLayout *l, char *out, size_t len)
{
    const ApsolveProblem *p = eq->p;
    int seen[16][2], n = 0, s = apsolve_find_submesh(p, sp->hosts, sp->gpus);
    size_t at = 0;
    char list[160] = "";
    for (int c = 0; s >= 0 && c < p->num_configs && n < 16; c++) {
        const ApsolveConfig *cf = &p->configs[(size_t)s * p->num_configs + c];
        ApsolveEpStage x;
        char why[200];
        int dup = 0, w;
        if (!cf->valid || cf->logical_a != l->dp || cf->logical_b != l->tp ||
            cf->force_batch_dim != 0 ||
            apsolve_ep_stage(r->db, eq->sweep, p->cluster_gpus, sp->start_layer, sp->end_layer,
                             s, c, l, &x, why, sizeof why) || !x.moe_layers)
            continue;
        for (int i = 0; i < n; i++)
            dup |= seen[i][0] == x.stored_ep && seen[i][1] == x.stored_etp;
        if (dup)
            continue;
        seen[n][0] = x.stored_ep;
        seen[n++][1] = x.stored_etp;
        w = x.stored_ep == 1
                ? snprintf(list + at, sizeof list - at, "%s etp=%d (any ep)",
                           n > 1 ? ";" : "", x.stored_etp)
                : snprintf(list + at, sizeof list - at, "%s ep=%d,etp=%d", n > 1 ? ";" : "",
                           x.stored_ep, x.stored_etp);
        if (w < 0 || (size_t)w >= sizeof list - at)
            break;
        at += (size_t)w;
    }
    snprintf(out, len, n ? "can price:%s" : "hold no expert weights with an entry", list);
}

void apsolve_ep_say(ApsolveRun *r, const ApsolvePlan *g)
{
    const ApsolveCand *c = &r->ep_c;
    ApsolveEpLayout l;
    if (!r->have_ep_c || !g || r->a->quiet)
        return;
    layout_of(r, c->sw.model_id, &l);
    for (size_t k = 0; k < g->n_stages; k++) {
        const ApsolveStage *st = &g->stages[k];
        ApsolveEpStage x;
        char why[200];
        if (st->submesh < 0 || st->config < 0)
            continue;
        /* the stage's variant: full recomputation reruns the dispatcher */
        l.recompute = c->p->configs[(size_t)st->submesh * c->p->num_configs + st->config]
                          .variant.recompute;
        if (apsolve_ep_stage(r->db, c->sweep, c->p->cluster_gpus, st->start_layer,
                             st->end_layer, st->submesh, st->config, &l, &x, why,
                             sizeof why) || !x.moe_layers)
            continue;
        if (x.usable == 1)
            apsolve_say(r->a, "expert parallelism ep=%d etp=%d, stage %zu (layers %d-%d): %d MoE "
                        "layers of %d experts, %.0f of their %.0f weight elements per GPU: the "
                        "level priced splits them so, its collectives as profiled", l.ep, l.etp,
                        k, st->start_layer, st->end_layer, x.moe_layers, x.experts,
                        x.local_after, x.elements);
        else if (x.usable == 2) {
            char how[96] = "keeps the experts whole", fp8[96] = "";
            if (x.fp8_weight_bytes != 0)
                snprintf(fp8, sizeof fp8, " (with Transformer Engine's FP8 copies: %+g bytes an "
                         "expert element)", x.fp8_weight_bytes);
            if (x.from_split)
                snprintf(how, sizeof how, "splits them %d ways on E over its tp axis",
                         x.stored_ep);
            apsolve_say(r->a, "expert parallelism ep=%d etp=%d, stage %zu (layers %d-%d): %d MoE "
                        "layers of %d experts, %.0f of their %.0f weight elements per GPU (the "
                        "level priced %s: transformed); +%.6g s forward, "
                        "+%.6g s backward per micro-batch in %d costs (below); once per "
                        "iteration %+.6g s (the expert gradients reduced over %d GPUs, Adam "
                        "over their shard); memory %+lld bytes on the peak%s, %+lld in the "
                        "initial state", l.ep, l.etp, k, st->start_layer, st->end_layer,
                        x.moe_layers, x.experts, x.local_after, x.elements, how,
                        x.comm_fwd + x.perm_fwd, x.comm_bwd + x.perm_bwd, x.n_costs,
                        x.apply_delta, l.dp * l.tp / (l.ep * l.etp),
                        (long long)x.peak_delta, fp8, (long long)x.initial_delta);
            /* every cost the stage adds, from the one list ep_price sums */
            for (int i = 0; i < x.n_costs; i++) {
                const ApsolveEpCost *e = &x.costs[i];
                char rr[64] = "", grp[32] = "";
                if (e->n_rerun)
                    snprintf(rr, sizeof rr, " (%d of them full recomputation's rerun)",
                             e->n_rerun);
                if (e->group > 1)
                    snprintf(grp, sizeof grp, " over %d GPUs", e->group);
                apsolve_say(r->a, "expert parallelism, stage %zu: %s of %.0f bytes per GPU%s, %d "
                            "forward and %d backward%s per micro-batch%s (%+.6g s forward, "
                            "%+.6g s backward)", k, e->what, e->bytes,
                            e->group > 1 ? "" : e->bytes > 0 ? " (memory copies)" : " (kernels)",
                            e->n_fwd, e->n_bwd, rr, grp,
                            e->fwd, e->bwd);
            }
            if (l.a2a_overlap)
                apsolve_say(r->a, "expert parallelism, stage %zu: moe_a2a_overlap: the "
                            "all-to-alls above run beside the other micro-batch's compute, the "
                            "forward's under its backward, the backward's under its forward; "
                            "only what that compute does not cover is added (Megatron-Core's "
                            "combined 1F1B, docs/expert-parallel.md)", k);
        }
    }
}

int apsolve_run_ep(ApsolveRun *r, ApsolveCand **pc)
{
    const ApsolveRequest *a = r->a;
    const ApsolveParallel *pr = &a->par;
    const ApsolveCand *eq = *pc;
    ApsolveEpLayout l;
    ApsolveEpStage *st;
    /* a --parallel layout, or that of a stored plan (--plan) */
    const char *what = a->parallel ? a->parallel : "of the stored plan";
    char why[400] = "";
    int moe = 0, rc;
    layout_of(r, eq->sw.model_id, &l);
    if (l.ep == 1 && l.etp == pr->tp)
        return 0;
    if (a->opt.inference)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: ep/etp price training (the "
                            "token all-to-alls of the backward pass, the expert gradients); not "
                            "with --inference", what);
    if (pr->zero >= 2)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: ep/etp price Megatron-Core's "
                            "expert layout, whose distributed optimizer shards optimizer state "
                            "only (ZeRO-1); zero=%d with experts is not priced", what,
                            pr->zero);
    if (a->batch > 0)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: --batch does not re-price an "
                            "ep plan (give the new batch with --global-batch)", what);
    /* Megatron-Core runs the MoE all-to-all overlap on its interleaved
     * schedule or without pipelining (combined_1f1b.py; the in-flight rule,
     * apsolve_schedule_in_flight_a2a, is NaN elsewhere), on the schedule
     * the plan will run: vpp= makes it interleaved, as
     * apsolve_parallel_apply does after this step */
    if (pr->moe_a2a_overlap) {
        ApsolveOptions run = eq->opt;
        apsolve_parallel_apply(pr, &run, NULL, 0);
        if (isnan(apsolve_schedule_in_flight_a2a((ApsolveSchedule)run.schedule,
                                                 run.virtual_stages, run.micro_batches,
                                                 pr->pp > 1 ? pr->pp : 1, 0, 1)))
            return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: moe_a2a_overlap runs "
                                "on Megatron-Core's interleaved schedule (vpp >= 2) or its 1F1B "
                                "without pipelining, not on --schedule %s", what,
                                apsolve_schedule_name((ApsolveSchedule)run.schedule));
    }
    {
        char knob[48];
        snprintf(knob, sizeof knob, l.ep > 1 ? "ep=%d" : "etp=%d", l.ep > 1 ? l.ep : l.etp);
        if ((rc = apsolve_twin_check(r, eq, l.dp, l.tp, what, knob)) != 0)
            return rc;
    }
    if (!(st = calloc(r->nspec ? r->nspec : 1, sizeof *st)))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
    rc = apsolve_ep_problem(r->db, eq->sweep, eq->p, r->specs, r->nspec, &l, &r->ep_c.p, st, why,
                            sizeof why);
    if (rc) {
        free(st);
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, rc == APSOLVE_ENOMEM ? "out of memory"
                            : "--parallel %s: %s", what, why);
    }
    r->have_ep_c = 1;
    for (size_t k = 0; k < r->nspec; k++) {
        const ApsolveEpStage *x = &st[k];
        if (!x->moe_layers)
            continue;
        moe = 1;
        if (!l.capacity) {
            rc = apsolve_fail(a, APSOLVE_ERROR_INPUT, "--parallel %s: the sweep's model records "
                              "no routing (moe_top_k and moe_capacity in its options: a sweep "
                              "made before approf recorded them); sweep the model again",
                              what);
            break;
        }
        if (x->experts % l.ep) {
            rc = apsolve_fail(a, APSOLVE_ERROR_INPUT, "--parallel %s: ep=%d does not divide the "
                              "%d experts (Megatron's validate_args: num_experts %% "
                              "expert_model_parallel_size == 0)", what, l.ep, x->experts);
            break;
        }
        if (!x->usable) {
            char can[200];
            stored_splits(r, eq, &r->specs[k], &l, can, sizeof can);
            rc = apsolve_fail(a, APSOLVE_ERROR_INPUT, "--parallel %s: 3-D stage %zu (layers "
                              "%d-%d): no stored level of logical (%d, %d) splits the expert "
                              "weights as ep=%d, etp=%d, nor keeps their expert dimension whole "
                              "with their in/out dimensions in %d pieces, nor (etp 1) splits it "
                              "over its tp axis alone into a divisor of ep; its levels %s",
                              what, k, r->specs[k].start_layer, r->specs[k].end_layer, l.dp,
                              l.tp, l.ep, l.etp, l.etp, can);
            break;
        }
    }
    free(st);
    if (rc)
        return rc;
    if (!moe)
        return apsolve_fail(a, APSOLVE_ERROR_INPUT, "--parallel %s: ep/etp split the expert "
                            "weights, and the model has none (no parameter of the plan's stages "
                            "under a path holding /experts/)", what);
    r->ep_c.sweep = eq->sweep;
    r->ep_c.sw = eq->sw;
    r->ep_c.opt = eq->opt;
    r->ep_c.global_batch = eq->global_batch;
    r->ep_c.micro = eq->micro;
    *pc = &r->ep_c;
    return 0;
}
