/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which frameworks run a loaded plan (rep_frameworks: the solver's one
 * rule, solver/frameworks.h, with the verdict apsolve stored deciding) and
 * the closest plan a runtime can run where it cannot run the plan itself
 * (rep_closest_price): uniform stages of the layout most of the plan's
 * stages have, among those whose pipeline size divides the model's
 * transformer blocks, priced with the solver's own evaluation
 * (apsolve_evaluate_as_run over the plan's sweep) for each schedule,
 * recomputation and ZeRO stage. reports/launch.c states them in the
 * launch files (docs/reports.md, "Launch the plan").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "context_parallel.h"
#include "costdb_text.h"
#include "hsdp.h"
#include "launch.h"
#include "schedule.h"
#include "session.h"

static int same_layout(const CostdbPlanStage *a, const CostdbPlanStage *b)
{
    return a->submesh_hosts == b->submesh_hosts && a->submesh_gpus == b->submesh_gpus &&
           a->logical_a == b->logical_a && a->logical_b == b->logical_b &&
           (a->force_batch_dim >= 0) == (b->force_batch_dim >= 0);
}

/* Can uniform stages of stage s's submesh cover the D devices with a
 * pipeline size that divides the model's blocks (blocks <= 0: unknown)?
 * Megatron-LM (validate_args) and the other runtimes give each pipeline
 * stage the same number of transformer blocks. */
static int layout_runs(const CostdbPlanStage *s, int D, int blocks)
{
    int dev = s->submesh_hosts * s->submesh_gpus;
    return dev > 0 && D > 0 && D % dev == 0 && (blocks <= 0 || blocks % (D / dev) == 0);
}

/* The stage whose layout most stages share (ties: the first), among the
 * layouts layout_runs accepts when one does. */
static size_t majority_stage(const ApreportReport *r, int D, int blocks, int *count)
{
    size_t best = 0;
    int bestn = 0, best_runs = 0;
    for (size_t k = 0; k < r->n_stages; k++) {
        int n = 0, runs = layout_runs(&r->stages[k].st, D, blocks);
        for (size_t j = 0; j < r->n_stages; j++)
            n += same_layout(&r->stages[k].st, &r->stages[j].st);
        if ((runs && !best_runs) || (runs == best_runs && n > bestn)) {
            bestn = n;
            best = k;
            best_runs = runs;
        }
    }
    *count = bestn;
    return best;
}

void rep_closest_price(Costdb *db, ApreportReport *r)
{
    RepClosest *c = &r->closest;
    ApsolveProblem *p = NULL;
    ApsolveStageSpec *specs = NULL;
    ApsolveOptions o;
    char msg[200] = "";
    int count, dev, D = r->sweep.cluster_hosts * r->sweep.cluster_gpus, rc;
    memset(c, 0, sizeof(*c));
    if (!r->n_stages)
        return;
    int blocks = rep_total_blocks(r);
    const CostdbPlanStage *s = &r->stages[majority_stage(r, D, blocks, &count)].st;
    c->hosts = s->submesh_hosts;
    c->gpus = s->submesh_gpus;
    c->logical_a = s->logical_a;
    c->logical_b = s->logical_b;
    c->force_batch_dim = s->force_batch_dim;
    dev = c->hosts * c->gpus;
    if (dev <= 0 || D <= 0 || D % dev) {
        snprintf(c->why, sizeof(c->why), "the submesh (%d, %d) of most stages does not divide "
                 "the %d devices", c->hosts, c->gpus, D);
        return;
    }
    c->pp = D / dev;
    if (blocks > 0 && blocks % c->pp) {
        snprintf(c->why, sizeof(c->why), "no layout of the plan's stages gives a pipeline size "
                 "that divides the %d transformer blocks", blocks);
        return;
    }
    if (c->pp > r->num_layers) {
        snprintf(c->why, sizeof(c->why), "%d stages of (%d, %d) would need more than the %d "
                 "layers", c->pp, c->hosts, c->gpus, r->num_layers);
        return;
    }
    c->have = 1;
    memset(&o, 0, sizeof(o));
    o.micro_batches = r->plan.micro_batches > 0 ? r->plan.micro_batches : 1;
    o.memory_budget = r->plan.memory_budget;
    o.inference = !strcmp(r->plan.objective, "inference");
    o.objective = r->opts.objective == COSTDB_OBJECTIVE_FULL ? APSOLVE_OBJECTIVE_FULL
                                                             : APSOLVE_OBJECTIVE_ALPA;
    if (!db || (rc = apsolve_problem_from_db_msg(db, r->sweep.id, &o, &p, msg, sizeof(msg))) < 0) {
        snprintf(c->why, sizeof(c->why), "not priced: %s",
                 !db ? "no database" : msg[0] ? msg : "the sweep cannot be loaded");
        return;
    }
    specs = calloc((size_t)c->pp, sizeof(*specs));
    if (!specs) {
        snprintf(c->why, sizeof(c->why), "not priced: out of memory");
        goto cleanup;
    }
    for (int si = 0; si < 2; si++) {
        o.schedule = si == 0 ? (int)r->schedule : APSOLVE_SCHEDULE_1F1B;
        o.virtual_stages = o.schedule == APSOLVE_SCHEDULE_INTERLEAVED ||
                                   o.schedule == APSOLVE_SCHEDULE_INTERLEAVED_ZB ||
                                   o.schedule == APSOLVE_SCHEDULE_ZBV
                               ? r->virtual_stages : 1;
        for (int rec = 0; rec < COSTDB_RECOMPUTE_COUNT; rec++)
            for (int z = 0; z < 4; z++) {
                ApsolvePlan *plan = NULL;
                char eb[200] = "";
                if (apsolve_uniform_specs(r->num_layers, c->pp, c->hosts, c->gpus, c->logical_a,
                                          c->logical_b, c->force_batch_dim, specs) < 0)
                    goto cleanup;
                for (int k = 0; k < c->pp; k++) {
                    specs[k].variant.recompute = rec;
                    specs[k].variant.zero = z;
                }
                /* as the frameworks run it: tp stages at the memory level
                 * that splits the weights (solver/frameworks.h) */
                if (apsolve_evaluate_as_run(db, r->sweep.id, p, &o, specs, (size_t)c->pp, &plan,
                                            eb, sizeof(eb)) == 0) {
                    apsolve_plan_frameworks(db, r->sweep.id, r->sweep.dtype, plan,
                                            &c->fw[si][rec][z]);
                    c->priced[si][rec][z] = 1;
                    c->cost[si][rec][z] = plan->cost;
                    c->total[si][rec][z] = plan->total_cost;
                    c->feasible[si][rec][z] = plan->feasible;
                } else if (!c->why[0]) {
                    snprintf(c->why, sizeof(c->why), "not priced: %s", eb[0] ? eb : "evaluation failed");
                }
                apsolve_plan_free(&plan);
            }
    }
cleanup:
    free(specs);
    apsolve_problem_free(&p);
}

void rep_frameworks(const ApreportReport *r, ApsolveFwVerdict *v)
{
    ApsolveFwStage *st = calloc(r->n_stages ? r->n_stages : 1, sizeof(*st));
    int stored = apsolve_schedule_parse(r->opts.schedule);
    ApsolveFwPlan p;
    memset(v, 0, sizeof(*v));
    if (!st) {
        for (int f = 0; f < APSOLVE_FW_COUNT; f++)
            snprintf(v->why[f], sizeof(v->why[f]), "out of memory");
        return;
    }
    int *blocks = calloc(r->n_stages ? r->n_stages : 1, sizeof(*blocks)), b = -1;
    char why[200];
    if (blocks && r->n_stages)
        b = rep_stage_blocks(r, blocks, why, sizeof(why));
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        st[k] = (ApsolveFwStage){s->st.end_layer - s->st.start_layer + 1, s->st.submesh_hosts,
                                 s->st.submesh_gpus, s->st.logical_a, s->st.logical_b,
                                 s->st.force_batch_dim,
                                 s->variant_known ? s->variant : (CostdbVariant){-1, -1, -1},
                                 (int)s->tp_whole, 0, 0,
                                 b == 0 ? blocks[k] : 0};
        /* what the priced placements hold, as apsolve_plan_frameworks reads them */
        for (size_t i = 0; i < s->n_tensors; i++) {
            int e, t;
            int64_t experts;
            st[k].moe |= costdb_expert_split(&s->tensors[i].pl, s->st.logical_a,
                                             s->st.logical_b, &e, &t, &experts) == 0;
            st[k].seq_split |= costdb_activation_seq_split(&s->tensors[i].pl, s->st.logical_a,
                                                           s->st.logical_b) == 1;
        }
    }
    free(blocks);
    p = (ApsolveFwPlan){st, r->n_stages, stored < 0 ? APSOLVE_SCHEDULE_1F1B : stored,
                        r->opts.virtual_stages, apsolve_fw_dtype_fp16(r->sweep.dtype),
                        apsolve_zero3_schedule_of(r->sweep.options)};
    apsolve_frameworks(&p, v);
    if (r->opts.has_layout) { /* the knobs of a --parallel layout, as apsolve judged them */
        const CostdbPlanLayout *l = &r->opts.layout;
        ApsolveParallel par = {.dp = l->dp, .tp = l->tp, .pp = l->pp, .zero = l->zero,
                               .cp = l->cp, .cp_comm = apsolve_cp_comm_parse(l->cp_comm),
                               .ep = l->ep, .etp = l->etp, .dp_shard = l->dp_shard,
                               .raf_off = l->raf_off};
        apsolve_parallel_frameworks(&par, v);
    }
    free(st);
    if (!r->opts.has_frameworks)
        return;
    /* apsolve's stored verdict decides; the rule gives the reasons */
    for (int f = 0; f < APSOLVE_FW_COUNT; f++) {
        unsigned bit = 1u << f;
        if ((r->opts.frameworks & bit) && !(v->runs & bit))
            v->why[f][0] = '\0';
        else if (!(r->opts.frameworks & bit) && (v->runs & bit))
            snprintf(v->why[f], sizeof(v->why[f]), "apsolve judged so when it stored the plan");
    }
    v->runs = r->opts.frameworks;
}

