/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plans a request gives rather than searches (session_int.h): a
 * manual or uniform plan from its option text, a stored plan to
 * re-evaluate, the variants a stored plan's configs name, and storing a
 * plan with the options that made it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "config.h"
#include "context_parallel.h"
#include "costdb.h"
#include "plan_options.h"
#include "schedule.h"
#include "session.h"
#include "session_int.h"
#include "solver_int.h"

int apsolve_request_specs(const ApsolveRequest *a, const ApsolveProblem *p,
                          ApsolveStageSpec **out, size_t *n_out)
{
    char err[256] = "";
    int *st = NULL, *en = NULL, *sa = NULL, *sb = NULL, *la = NULL, *lb = NULL, *fb = NULL;
    size_t n = 0, ns = 0, nl = 0, nf = 0;
    ApsolveStageSpec *specs = NULL;
    int rc = APPROF_EXIT_USAGE;

    if (!strcmp(a->stage_option, "uniform")) {
        int h, g, la1 = 0, lb1 = 0, f = -2;
        if (a->num_stages < 1 || a->submesh_hosts < 1 || a->submesh_gpus < 1)
            return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--stage-option uniform needs "
                                "--num-stages and --submesh");
        h = a->submesh_hosts;
        g = a->submesh_gpus;
        if (a->logical_a > 0 && a->logical_b > 0) {
            la1 = a->logical_a;
            lb1 = a->logical_b;
        }
        if (a->num_stages > p->num_layers)
            return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--num-stages is larger than the "
                                "number of layers");
        if (a->dicts) {
            if (apsolve_parse_option_dicts(a->dicts, &fb, &nf, err, sizeof err) || nf != 1) {
                free(fb);
                return apsolve_fail(a, APSOLVE_ERROR_INPUT, "--option-dicts: %s",
                                    nf != 1 && !err[0] ? "give exactly one dict for a uniform "
                                                         "plan" : err);
            }
            f = fb[0];
            free(fb);
        }
        specs = calloc((size_t)a->num_stages, sizeof *specs);
        if (!specs)
            return 1;
        apsolve_uniform_specs(p->num_layers, a->num_stages, h, g, la1, lb1, f, specs);
        *out = specs;
        *n_out = (size_t)a->num_stages;
        return 0;
    }
    if (!a->layer_ids || !a->submeshes)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--stage-option manual needs "
                            "--forward-stage-layer-ids and --submesh-shapes");
    if (apsolve_parse_layer_ids(a->layer_ids, &st, &en, &n, err, sizeof err)) {
        rc = apsolve_fail(a, APSOLVE_ERROR_INPUT, "--forward-stage-layer-ids: %s", err);
        goto cleanup;
    }
    if (apsolve_parse_shapes(a->submeshes, &sa, &sb, &ns, err, sizeof err)) {
        rc = apsolve_fail(a, APSOLVE_ERROR_INPUT, "--submesh-shapes: %s", err);
        goto cleanup;
    }
    if (a->logicals && apsolve_parse_shapes(a->logicals, &la, &lb, &nl, err, sizeof err)) {
        rc = apsolve_fail(a, APSOLVE_ERROR_INPUT, "--logical-shapes: %s", err);
        goto cleanup;
    }
    if (a->dicts && apsolve_parse_option_dicts(a->dicts, &fb, &nf, err, sizeof err)) {
        rc = apsolve_fail(a, APSOLVE_ERROR_INPUT, "--option-dicts: %s", err);
        goto cleanup;
    }
    if (n == 0 || ns != n || (a->logicals && nl != n) || (a->dicts && nf != n)) {
        rc = apsolve_fail(a, APSOLVE_ERROR_USAGE, "the manual plan lists must all have one "
                          "entry per stage (%zu stages)", n);
        goto cleanup;
    }
    specs = calloc(n, sizeof *specs);
    if (!specs) {
        rc = 1;
        goto cleanup;
    }
    for (size_t k = 0; k < n; k++) {
        specs[k].start_layer = st[k];
        specs[k].end_layer = en[k];
        specs[k].hosts = sa[k];
        specs[k].gpus = sb[k];
        specs[k].logical_a = la ? la[k] : 0;
        specs[k].logical_b = lb ? lb[k] : 0;
        specs[k].force_batch_dim = fb ? fb[k] : -2;
    }
    *out = specs;
    *n_out = n;
    rc = 0;
cleanup:
    free(st);
    free(en);
    free(sa);
    free(sb);
    free(la);
    free(lb);
    free(fb);
    return rc;
}

int apsolve_request_store(Costdb *db, const ApsolveRequest *a, const ApsolveProblem *p,
                          const ApsolveOptions *o, const ApsolvePlan *pl, const char *kind,
                          int64_t *id)
{
    char js[COSTDB_TEXT_MAX];
    CostdbPlanOptions po = {.micro_batches = o->micro_batches,
                            .global_batch = pl->global_batch,
                            .micro_batch_size = pl->micro_batch_size,
                            .memory_budget = o->memory_budget,
                            .max_stages = o->max_stages,
                            .inference = o->inference,
                            .objective = o->objective == APSOLVE_OBJECTIVE_FULL
                                             ? COSTDB_OBJECTIVE_FULL : COSTDB_OBJECTIVE_ALPA,
                            .virtual_stages = o->virtual_stages > 1 ? o->virtual_stages : 1};
    snprintf(po.tool, sizeof po.tool, "apsolve %s", APPROF_VERSION);
    snprintf(po.stage_option, sizeof po.stage_option, "%s", kind);
    snprintf(po.schedule, sizeof po.schedule, "%s",
             apsolve_schedule_name((ApsolveSchedule)o->schedule));
    if (a->parallel && !strcmp(kind, "3d")) {
        po.has_layout = 1;
        po.layout = (CostdbPlanLayout){a->par.dp, a->par.tp, a->par.pp, a->par.sp, a->par.zero,
                                       a->par.vpp ? a->par.vpp : 1, a->par.mbs, ""};
        snprintf(po.layout.recompute, sizeof po.layout.recompute, "%s",
                 costdb_recompute_name(a->par.recompute));
        po.layout.cp = a->par.cp > 1 ? a->par.cp : 1;
        snprintf(po.layout.cp_comm, sizeof po.layout.cp_comm, "%s",
                 apsolve_cp_comm_name(a->par.cp_comm));
        if (po.layout.cp > 1 && a->par.cp_comm == APSOLVE_CP_A2A_P2P)
            po.layout.cp_a2a = apsolve_cp_a2a_size(
                a->par.cp, a->par.tp, apsolve_cp_fast_gpus(db, p->sweep_id, p->cluster_gpus));
        if (a->par.ep > 1 || a->par.etp > 0) {
            /* as priced (session_ep.c): etp defaults to tp, Megatron's default */
            po.layout.ep = a->par.ep > 1 ? a->par.ep : 1;
            po.layout.etp = a->par.etp > 0 ? a->par.etp : a->par.tp;
        }
        po.layout.dp_shard = a->par.dp_shard; /* HSDP (hsdp.h) */
        po.layout.raf_off = a->par.raf_off;
        po.layout.recompute_layers = pl->recompute_layers; /* as priced (session_rlayers.c) */
        po.layout.offload = a->par.offload; /* activation_offload.h */
        po.layout.moe_a2a_overlap = a->par.moe_a2a_overlap; /* expert_parallel.h */
    }
    if (!po.has_layout &&
        (pl->cp > 1 || pl->ep > 1 || pl->recompute_layers > 0 || pl->offload > 0) &&
        pl->n_stages > 0) {
        /* an auto plan the search priced with cp, ep, recompute_layers or
         * offload (session_autocp.c, session_autoep.c, session_autorl.c,
         * session_autooffload.c): the layout of its first stage, whose
         * entries are those of logical (dp cp, tp), and the cp, ep, etp,
         * recompute_layers and offload apreport's launch files read and
         * --plan re-prices */
        int cp = pl->cp > 1 ? pl->cp : 1;
        po.has_layout = 1;
        po.layout = (CostdbPlanLayout){pl->stages[0].logical_a / cp,
                                       pl->stages[0].logical_b, (int)pl->n_stages, 0,
                                       pl->stages[0].variant.zero,
                                       o->virtual_stages > 1 ? o->virtual_stages : 1, 0, ""};
        snprintf(po.layout.recompute, sizeof po.layout.recompute, "%s",
                 costdb_recompute_name(pl->stages[0].variant.recompute));
        po.layout.cp = cp;
        snprintf(po.layout.cp_comm, sizeof po.layout.cp_comm, "%s",
                 apsolve_cp_comm_name(pl->cp_comm));
        if (cp > 1 && pl->cp_comm == APSOLVE_CP_A2A_P2P)
            po.layout.cp_a2a = apsolve_cp_a2a_size(
                cp, po.layout.tp, apsolve_cp_fast_gpus(db, p->sweep_id, p->cluster_gpus));
        if (pl->ep > 1) {
            po.layout.ep = pl->ep;
            po.layout.etp = pl->etp;
            /* the MoE all-to-all overlap it was priced with (expert_parallel.h) */
            po.layout.moe_a2a_overlap = pl->moe_a2a_overlap;
        }
        /* K counts the layers of each of the schedule's chunks */
        po.layout.recompute_layers = pl->recompute_layers;
        po.layout.offload = pl->offload; /* one stage: N of its layers */
    }
    po.headroom_percent = o->headroom_percent;
    po.headroom_bytes = o->headroom_bytes;
    po.headroom_kept = !strcmp(kind, "auto") && o->search_headroom;
    po.has_frameworks = pl->has_frameworks;
    po.frameworks = pl->frameworks;
    if (costdb_plan_options_format(&po, js, sizeof js)) {
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "cannot store the plan: its options do "
                            "not fit %zu bytes", sizeof js);
    }
    if (apsolve_plan_store(db, p, o, pl, kind, js, id)) {
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "cannot store the plan: %s",
                            costdb_errmsg(db));
    }
    return 0;
}

/* The dp x tp x pp layout and ZeRO stage of a stored plan, for the step
 * that re-prices its cp, ep or HSDP knobs as stored. */
static void stored_3d(ApsolveParallel *par, const CostdbPlanLayout *l)
{
    par->dp = l->dp;
    par->tp = l->tp;
    par->pp = l->pp;
    par->zero = l->zero;
}

int apsolve_request_load_plan(Costdb *db, ApsolveRequest *a, int64_t *sweep,
                              ApsolveStageSpec **specs, int **configs, size_t *n, char *kind,
                              size_t kindlen)
{
    CostdbPlan cp;
    CostdbPlanStage *ps = NULL;
    size_t np = 0;
    if (costdb_plan_get(db, a->plan, &cp, &ps, &np)) {
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "plan %lld: %s", (long long)a->plan,
                            costdb_errmsg(db));
    }
    if (a->sweep > 0 && a->sweep != cp.sweep_id) {
        free(ps);
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "plan %lld belongs to sweep %lld, not %lld",
                            (long long)a->plan, (long long)cp.sweep_id, (long long)a->sweep);
    }
    if (np == 0 || !(*specs = calloc(np, sizeof **specs)) ||
        !(*configs = calloc(np, sizeof **configs))) {
        free(ps);
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "plan %lld has no stages",
                            (long long)a->plan);
    }
    for (size_t k = 0; k < np; k++) {
        (*specs)[k] = (ApsolveStageSpec){ps[k].start_layer, ps[k].end_layer, ps[k].submesh_hosts,
                                         ps[k].submesh_gpus, ps[k].logical_a, ps[k].logical_b,
                                         ps[k].force_batch_dim, {0, 0, 0}};
        (*configs)[k] = ps[k].config_index;
    }
    *n = np;
    *sweep = cp.sweep_id;
    if (a->micro_batches <= 0)
        a->micro_batches = cp.micro_batches;
    if (a->opt.memory_budget <= 0)
        a->opt.memory_budget = cp.memory_budget;
    if (a->opt.max_stages <= 0)
        a->opt.max_stages = cp.max_stages;
    if (!strcmp(cp.objective, "inference"))
        a->opt.inference = 1;
    /* The stored options name the objective and schedule the plan was made
     * with; the command line wins. */
    {
        CostdbPlanOptions po;
        char why[200];
        if (costdb_plan_options_parse(cp.options, &po, why, sizeof why)) {
            free(ps);
            return apsolve_fail(a, APSOLVE_ERROR_FAILED, "plan %lld: %s", (long long)a->plan,
                                why);
        }
        /* a cp plan's stored stages are the entries of the equivalent
         * layout (dp x cp, tp) on the sweep at cp times its micro-batch:
         * re-priced through the cp step as --parallel prices them
         * (session_cp.c), from that sweep's B = the stored count / cp
         * (docs/context-parallel.md) */
        if (po.has_layout && po.layout.cp > 1) {
            int comm = apsolve_cp_comm_parse(po.layout.cp_comm[0] ? po.layout.cp_comm : "p2p");
            if (comm < 0) {
                free(ps);
                return apsolve_fail(a, APSOLVE_ERROR_INPUT, "plan %lld: its cp %d names no "
                                    "cp_comm apsolve prices ('%s')", (long long)a->plan,
                                    po.layout.cp, po.layout.cp_comm);
            }
            /* a count cp does not divide (a global batch of fewer
             * sequences than the twin's micro-batch, session_cp.c): the
             * twin's sweep at one micro-batch, the figures it carries, and
             * the stored count */
            if (a->micro_batches == cp.micro_batches && cp.micro_batches % po.layout.cp) {
                a->par.cp_micro_batches = cp.micro_batches;
                a->micro_batches = 1;
            } else if (a->micro_batches == cp.micro_batches)
                a->micro_batches = cp.micro_batches / po.layout.cp;
            stored_3d(&a->par, &po.layout);
            a->par.cp = po.layout.cp;
            a->par.cp_comm = comm;
        }
        if (a->objective < 0 && po.objective == COSTDB_OBJECTIVE_FULL)
            a->objective = APSOLVE_OBJECTIVE_FULL;
        else if (a->objective < 0 && po.objective == COSTDB_OBJECTIVE_ALPA)
            a->objective = APSOLVE_OBJECTIVE_ALPA;
        if (!a->schedule_set && apsolve_schedule_parse(po.schedule) >= 0) {
            a->schedule = apsolve_schedule_parse(po.schedule);
            if ((a->schedule == APSOLVE_SCHEDULE_INTERLEAVED ||
                 a->schedule == APSOLVE_SCHEDULE_INTERLEAVED_ZB) && a->virtual_stages < 2)
                a->virtual_stages = po.virtual_stages >= 2 ? po.virtual_stages : 2;
        }
        /* experts on ep x etp: re-priced as stored (session_ep.c) */
        if (po.has_layout && po.layout.ep > 0 && po.layout.etp > 0) {
            stored_3d(&a->par, &po.layout);
            a->par.ep = po.layout.ep;
            a->par.etp = po.layout.etp;
        }
        /* HSDP or raf=0: re-priced as stored (session_hsdp.c) */
        if (po.has_layout && po.layout.zero == 3 && (po.layout.dp_shard > 0 || po.layout.raf_off)) {
            stored_3d(&a->par, &po.layout);
            a->par.dp_shard = po.layout.dp_shard;
            a->par.raf_off = po.layout.raf_off;
        }
        /* recompute_layers: re-priced as stored (session_rlayers.c), with the
         * chunks of the stored schedule */
        if (po.has_layout && po.layout.recompute_layers > 0) {
            stored_3d(&a->par, &po.layout);
            a->par.recompute = COSTDB_RECOMPUTE_FULL;
            a->par.recompute_layers = po.layout.recompute_layers;
            a->par.vpp = po.layout.vpp;
        }
        if (po.has_layout && po.layout.offload > 0) { /* re-priced as stored (session_offload.c) */
            stored_3d(&a->par, &po.layout);
            a->par.offload = po.layout.offload;
        }
        if (po.has_layout && po.layout.moe_a2a_overlap) { /* re-priced as stored */
            stored_3d(&a->par, &po.layout);
            a->par.moe_a2a_overlap = 1;
        }
    }
    snprintf(kind, kindlen, "%s", cp.kind);
    free(ps);
    return 0;
}

void apsolve_specs_variants(const ApsolveProblem *p, ApsolveStageSpec *sp, const int *configs,
                            size_t n)
{
    for (size_t k = 0; k < n; k++) {
        int s = apsolve_find_submesh(p, sp[k].hosts, sp[k].gpus), c = configs[k];
        if (s >= 0 && c >= 0 && c < p->num_configs) {
            const ApsolveConfig *cf = &p->configs[s * p->num_configs + c];
            if (cf->valid && cf->logical_a == sp[k].logical_a &&
                cf->logical_b == sp[k].logical_b && cf->force_batch_dim == sp[k].force_batch_dim) {
                sp[k].variant = cf->variant;
            }
        }
    }
}

void apsolve_knobs_say(ApsolveRun *r, ApsolvePlan *g)
{
    apsolve_ep_say(r, g);
    apsolve_hsdp_say(r, g);
    apsolve_recompute_layers_say(r, g);
    apsolve_offload_say(r, g);
}
