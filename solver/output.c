/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Plan writers: Alpa's four "Result ..." lines, the text report (those
 * lines, the estimated iteration latency and a per-stage table) and JSON,
 * each a function behind one table keyed by the format name. Several plans
 * (a manual or 3-D plan next to the auto plan) are written side by side.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "apsolve.h"
#include "context_parallel.h"
#include "costdb.h"
#include "frameworks.h"
#include "json_write.h"
#include "plural.h"
#include "schedule.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

void apsolve_print_alpa(const ApsolvePlan *plan, FILE *out)
{
    size_t k;
    fputs("Result forward_stage_layer_ids: [", out);
    for (k = 0; k < plan->n_stages; k++) {
        fputs(k ? ", [" : "[", out);
        for (int l = plan->stages[k].start_layer; l <= plan->stages[k].end_layer; l++)
            fprintf(out, l > plan->stages[k].start_layer ? ", %d" : "%d", l);
        fputc(']', out);
    }
    fputs("]\nResult mesh_shapes: [", out);
    for (k = 0; k < plan->n_stages; k++)
        fprintf(out, "%s(%d, %d)", k ? ", " : "", plan->stages[k].hosts, plan->stages[k].gpus);
    fputs("]\nResult logical_mesh_shapes: [", out);
    for (k = 0; k < plan->n_stages; k++)
        fprintf(out, "%s(%d, %d)", k ? ", " : "", plan->stages[k].logical_a,
                plan->stages[k].logical_b);
    fputs("]\nResult autosharding_option_dicts: [", out);
    for (k = 0; k < plan->n_stages; k++) {
        if (plan->stages[k].force_batch_dim >= 0)
            fprintf(out, "%s{'force_batch_dim_to_mesh_dim': %d}", k ? ", " : "",
                    plan->stages[k].force_batch_dim);
        else
            fprintf(out, "%s{}", k ? ", " : "");
    }
    fputs("]\n", out);
}

/* "m0 none z0": the variant of a stage's config. */
static void variant_text(const ApsolveStage *st, char *buf, size_t len)
{
    const char *rc = costdb_recompute_name(st->variant.recompute);
    if (st->config < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "m%d %s z%d", st->variant.memory_level, rc ? rc : "?",
                 st->variant.zero);
}

static const char *objective_name(int objective)
{
    return objective == APSOLVE_OBJECTIVE_FULL ? "full" : "alpa";
}

/* Which frameworks run the plan as priced, and why the others do not. */
static void text_frameworks(FILE *out, const ApsolveFwVerdict *v)
{
    char runs[96];
    apsolve_frameworks_list(v->runs, runs, sizeof runs);
    fprintf(out, "Frameworks that run this plan as priced: %s\n", runs);
    for (int f = 0; f < APSOLVE_FW_COUNT; f++)
        if (!(v->runs & (1u << f)))
            fprintf(out, "  not %s: %s\n", apsolve_framework_name(f), v->why[f]);
}

static void json_frameworks(FILE *out, const ApsolveFwVerdict *v)
{
    int n = 0;
    fputs(", \"frameworks\": {\"runs\": [", out);
    for (int f = 0; f < APSOLVE_FW_COUNT; f++)
        if (v->runs & (1u << f))
            fprintf(out, "%s\"%s\"", n++ ? ", " : "", apsolve_framework_key(f));
    fputs("], \"why_not\": {", out);
    n = 0;
    for (int f = 0; f < APSOLVE_FW_COUNT; f++)
        if (!(v->runs & (1u << f))) {
            fprintf(out, "%s\"%s\": ", n++ ? ", " : "", apsolve_framework_key(f));
            costdb_json_string(out, v->why[f]);
        }
    fputs("}}", out);
}

/* --framework: the search that chose the plan (session_framework.c). */
static void text_fw_search(FILE *out, const ApsolveFwSearch *f)
{
    fprintf(out, "Best plan %s runs as priced: --parallel %s, full estimate %.6g s%s\n"
            "  %ld uniform layouts: %ld refused by %s's rules, %ld over memory at every level, "
            "%ld without an entry, %ld slower than the best by T alone, %ld priced as run; "
            "%ld of those run as priced, %ld fit (%ld with the headroom); searched in %.3f s\n",
            apsolve_framework_name(f->framework), f->layout, f->price,
            f->headroom_kept ? "" : " (no such plan keeps the headroom)", f->layouts,
            f->pruned_rule, apsolve_framework_name(f->framework), f->pruned_memory, f->missing,
            f->pruned_bound, f->priced, f->runs, f->fit, f->headroom, f->seconds);
}

static void json_fw_search(FILE *out, const ApsolveFwSearch *f)
{
    fprintf(out, ", \"framework_search\": {\"framework\": \"%s\", \"parallel\": ",
            apsolve_framework_key(f->framework));
    costdb_json_string(out, f->layout);
    fprintf(out, ", \"layouts\": %ld, \"pruned_rule\": %ld, \"pruned_memory\": %ld, "
            "\"missing\": %ld, \"pruned_bound\": %ld, \"priced\": %ld, \"runs\": %ld, "
            "\"fit\": %ld, \"headroom\": %ld, \"headroom_kept\": %s, \"price\": ", f->layouts,
            f->pruned_rule, f->pruned_memory, f->missing, f->pruned_bound, f->priced, f->runs,
            f->fit, f->headroom, f->headroom_kept ? "true" : "false");
    costdb_json_number(out, f->price);
    fputs(", \"seconds\": ", out);
    costdb_json_number(out, f->seconds);
    fputc('}', out);
}

static void text_plan(FILE *out, const ApsolveOutput *o)
{
    const ApsolvePlan *pl = o->plan;
    apsolve_print_alpa(pl, out);
    if (pl->global_batch > 0)
        fprintf(out, "Batch: global batch %lld = %d %s x micro-batch size %lld\n",
                (long long)pl->global_batch, pl->micro_batches,
                costdb_plural(pl->micro_batches, "micro-batch", "micro-batches"),
                (long long)pl->micro_batch_size);
    if (pl->cp > 1)
        /* the auto search's context parallelism (session_autocp.c), as
         * apreport's headline and the launch files state it */
        fprintf(out, "Context parallelism: cp %d (%s) on every stage: a logical mesh "
                "(a, b) runs dp a/%d x cp %d x tp b\n", pl->cp,
                pl->cp_comm == APSOLVE_CP_A2A       ? "all-to-all, a2a"
                : pl->cp_comm == APSOLVE_CP_A2A_P2P ? "all-to-all in a host or NVLink domain, "
                                                      "the ring across, a2a+p2p"
                                                    : "the ring, p2p",
                pl->cp, pl->cp);
    if (pl->ep > 1)
        /* the auto search's expert parallelism (session_autoep.c), likewise */
        fprintf(out, "Expert parallelism: ep %d etp %d on every stage: the experts of a logical "
                "mesh (a, b) on etp %d x ep %d of its a x b GPUs, 1/%d of every expert weight "
                "on each (Megatron-Core's MoE parallel folding)\n", pl->ep, pl->etp, pl->etp,
                pl->ep, pl->ep * pl->etp);
    if (pl->ep > 1 && pl->moe_a2a_overlap)
        /* expert_parallel.h: apsolve_ep_a2a_hidden, apsolve_stage_in_flight_a2a */
        fprintf(out, "MoE all-to-all overlap (moe_a2a_overlap=1, Megatron-Core's "
                "overlap_moe_expert_parallel_comm): each micro-batch's all-to-alls under "
                "another's compute, one more micro-batch in flight\n");
    if (pl->recompute_layers > 0)
        /* --parallel recompute_layers or the auto search's
         * (recompute_layers.h, session_autorl.c): the stages of variant
         * full; a stage of recompute none keeps every activation */
        fprintf(out, "Recomputation: the first %d %s of each model chunk fully recomputed, the "
                "rest keep their activations (Megatron-LM's --recompute-method block), in "
                "the stages of variant full\n", pl->recompute_layers,
                costdb_plural(pl->recompute_layers, "layer", "layers"));
    if (pl->offload > 0)
        /* activation offload (activation_offload.h): Megatron-Core's
         * --cpu-offloading-num-layers through Transformer Engine */
        fprintf(out, "Activation offload: the first %d layers' saved activations of each "
                "stage in host memory: %.0f bytes a micro-batch copied each way at %.6g GB/s, "
                "peak %lld bytes less, %.6g s of copies exposed a micro-batch\n", pl->offload,
                pl->offload_saved, pl->offload_bandwidth / 1e9, (long long)pl->offload_freed,
                pl->offload_exposed);
    if (pl->inference)
        fprintf(out, "Estimated inference latency: %.6g s (%zu %s x max stage cost %.6g s)\n",
                pl->cost, pl->n_stages, costdb_plural((long long)pl->n_stages, "stage", "stages"),
                pl->max_stage_cost);
    else if (pl->schedule == APSOLVE_SCHEDULE_INTERLEAVED_ZB ||
             pl->schedule == APSOLVE_SCHEDULE_ZBV) {
        int v = pl->virtual_stages > 1 ? pl->virtual_stages : 1;
        double base = apsolve_schedule_base_time(v, pl->micro_batches, pl->sum_cost,
                                                 pl->max_stage_cost);
        fprintf(out, "Estimated iteration latency: %.6g s (%s, v = %d: (sum of stage costs %.6g s "
                "+ (vB - 1 = %d) x max stage cost %.6g s) / v, less %.6g s of the bubble the "
                "deferred weight-gradient passes fill%s)\n", pl->cost,
                pl->schedule == APSOLVE_SCHEDULE_ZBV ? "ZB-V" : "interleaved zero bubble", v,
                pl->sum_cost, v * pl->micro_batches - 1, pl->max_stage_cost, base - pl->cost,
                pl->schedule == APSOLVE_SCHEDULE_ZBV ? "; the makespan of its order" : "");
    } else if (pl->virtual_stages > 1)
        fprintf(out, "Estimated iteration latency: %.6g s (interleaved 1F1B, v = %d: (sum of stage "
                "costs %.6g s + (vB - 1 = %d) x max stage cost %.6g s) / v)\n", pl->cost,
                pl->virtual_stages, pl->sum_cost, pl->virtual_stages * pl->micro_batches - 1,
                pl->max_stage_cost);
    else if (pl->schedule == APSOLVE_SCHEDULE_ZB_H1)
        fprintf(out, "Estimated iteration latency: %.6g s (ZB-H1: sum of stage costs %.6g s + "
                "(B - 1 = %d) x max stage cost %.6g s, less %.6g s of the bubble the deferred "
                "weight-gradient passes fill)\n", pl->cost, pl->sum_cost, pl->micro_batches - 1,
                pl->max_stage_cost,
                apsolve_schedule_base_time(1, pl->micro_batches, pl->sum_cost,
                                           pl->max_stage_cost) - pl->cost);
    else
        fprintf(out, "Estimated iteration latency: %.6g s (%ssum of stage costs %.6g s + "
                "(B - 1 = %d) x max stage cost %.6g s)\n", pl->cost,
                pl->schedule == APSOLVE_SCHEDULE_GPIPE ? "GPipe: " : "", pl->sum_cost,
                pl->micro_batches - 1, pl->max_stage_cost);
    if (!pl->inference && pl->objective == APSOLVE_OBJECTIVE_FULL)
        fprintf(out, "Objective (full): %.6g s = iteration latency %.6g s + largest stage "
                "apply-grad (gradient sync + optimizer) %.6g s\n", pl->total_cost, pl->cost,
                pl->apply_cost);
    if (!pl->feasible)
        fprintf(out, "Plan is NOT feasible (%d %s used; see the stage table)\n",
                pl->devices_used, costdb_plural(pl->devices_used, "device", "devices"));
    /* "free": the memory a stage leaves free; "reserve": the part of it
     * kept for fragmentation (--memory-headroom; docs/solver.md, "Memory
     * headroom"), a column when any stage has one */
    int reserve = 0;
    for (size_t k = 0; k < pl->n_stages; k++)
        reserve |= pl->stages[k].memory_reserve > 0;
    fprintf(out, "%-5s %-9s %-8s %-8s %-34s %-16s %12s %22s %10s%s\n", "stage", "layers",
            "submesh", "logical", "options", "variant", "cost (s)", "memory need/avail GiB",
            "free GiB", reserve ? "    reserve" : "");
    for (size_t k = 0; k < pl->n_stages; k++) {
        const ApsolveStage *st = &pl->stages[k];
        char layers[32], sub[24], logical[24], mem[48], head[24], var[48];
        const char *opts = st->force_batch_dim >= 0 ? "{'force_batch_dim_to_mesh_dim': 0}" : "{}";
        snprintf(layers, sizeof layers, "%d-%d", st->start_layer, st->end_layer);
        snprintf(sub, sizeof sub, "(%d, %d)", st->hosts, st->gpus);
        snprintf(logical, sizeof logical, "(%d, %d)", st->logical_a, st->logical_b);
        variant_text(st, var, sizeof var);
        if (isinf(st->cost)) {
            snprintf(mem, sizeof mem, "-");
            snprintf(head, sizeof head, "-");
        } else if (st->available_memory > 0) {
            snprintf(mem, sizeof mem, "%.3f / %.3f", st->memory_needed / GIB,
                     st->available_memory / GIB);
            snprintf(head, sizeof head, "%.3f", (st->available_memory - st->memory_needed) / GIB);
        } else if (st->max_n_succ_stages == APSOLVE_UNBOUNDED) {
            snprintf(mem, sizeof mem, "unlimited");
            snprintf(head, sizeof head, "-");
        } else {
            int fit = st->max_n_succ_stages + 1, left = fit - st->succ_stages;
            snprintf(mem, sizeof mem, "fits %d %s", fit, costdb_plural(fit, "stage", "stages"));
            snprintf(head, sizeof head, "%d %s", left, costdb_plural(left, "stage", "stages"));
        }
        char res[32] = "";
        if (reserve)
            snprintf(res, sizeof res, " %10.3f%s", st->memory_reserve / GIB,
                     !isinf(st->cost) && st->memory_reserve > 0 && st->memory_needed > 0 &&
                             st->available_memory - st->memory_needed < st->memory_reserve
                         ? "!" : "");
        fprintf(out, "%-5zu %-9s %-8s %-8s %-34s %-16s %12.6g %22s %10s%s%s\n", k, layers, sub,
                logical, opts, var, st->cost, mem, head, res,
                st->submesh < 0 ? "  (submesh not in sweep)"
                : st->config < 0 ? "  (config not in sweep)"
                : isinf(st->cost) ? "  (no finite entry)"
                : !st->memory_ok ? "  (OUT OF MEMORY)" : "");
    }
    if (o->frameworks && !pl->inference)
        text_frameworks(out, o->frameworks);
    if (o->fw_search)
        text_fw_search(out, o->fw_search);
}

static void text_full(FILE *out, const ApsolveFullEstimate *f, const ApsolveStageEstimate *se,
                      const ApsolvePlan *pl)
{
    if (!f->available) {
        fprintf(out, "Full estimate: unavailable (%s)\n", f->why);
        return;
    }
    fprintf(out, "Full estimate (transfers, grad sync, optimizer): %.6g s (+%.1f%% over "
            "Alpa's T)\n", f->total,
            pl->cost > 0 ? 100.0 * (f->total - pl->cost) / pl->cost : 0.0);
    fprintf(out, "  pipeline with transfers %.6g s (cross-stage transfers %.6g s per micro-batch, "
            "fwd + bwd", f->pipeline, f->transfers);
    if (pl->schedule == APSOLVE_SCHEDULE_INTERLEAVED && pl->virtual_stages > 1)
        fprintf(out, "; exposed by the interleaved schedule's warm-up, cool-down and steady "
                "state: %.6g s", f->p2p_exposed);
    fputc(')', out);
    if (f->apply_stage >= 0 && f->apply_from_entries)
        fprintf(out, "; apply-grad of stage %d: %.6g s (the entry's profiled apply_cost)",
                f->apply_stage, f->apply);
    else if (f->apply_stage >= 0)
        fprintf(out, "; apply-grad of stage %d: gradient all-reduce %.6g s + optimizer %.6g s",
                f->apply_stage, f->grad_sync, f->optimizer);
    fputc('\n', out);
    if (!se)
        return;
    fprintf(out, "  %-5s %12s %12s %12s %12s %16s %12s\n", "stage", "compute (s)", "send fwd (s)",
            "send bwd (s)", "period (s)", "all-reduce (s)", "optimizer (s)");
    for (size_t k = 0; k < pl->n_stages; k++) {
        fprintf(out, "  %-5zu %12.6g %12.6g %12.6g %12.6g %16.6g %12.6g%s", k, se[k].compute,
                se[k].send_fwd, se[k].send_bwd, se[k].period, se[k].grad_sync, se[k].optimizer,
                se[k].replicas > 1 ? (se[k].grad_inter ? "  (all-reduce across hosts)" : "")
                                   : "  (no replicated parameter)");
        if (se[k].domains > se[k].priced_domains)
            fprintf(out, "  (straddles %d NVLink domains from device %d, profiled in %d: "
                    "+%.6g s on the network)", se[k].domains, se[k].first_device,
                    se[k].priced_domains, se[k].straddle);
        fputc('\n', out);
    }
}

/* The --batch re-evaluation: one summary line and, with the re-priced plan,
 * a table of stage costs and memory at the new batch. */
static void text_rebatch(FILE *out, const ApsolveOutput *o)
{
    const ApsolveRebatch *r = o->rebatch;
    const ApsolvePlan *np = o->rebatch_plan;
    fprintf(out, "At global batch %lld (micro-batch %lld -> %lld, ", (long long)r->global_batch,
            (long long)r->old_micro, (long long)r->new_micro);
    if (r->exact_sweep > 0)
        fprintf(out, "exact, from the entries of sweep %lld", (long long)r->exact_sweep);
    else
        fprintf(out, "costs and activations scaled x%.6g: an estimate", r->ratio);
    fprintf(out, "): estimated latency %.6g s", r->cost);
    if (o->rebatch_full && o->rebatch_full->available)
        fprintf(out, ", full estimate %.6g s", o->rebatch_full->total);
    fputs("; ", out);
    if (!r->valid && r->invalid_dp > 0)
        fprintf(out, "INVALID: stage %d forces the batch over a data-parallel axis of %d that "
                "does not divide the micro-batch of %lld", r->first_invalid_stage - 1,
                r->invalid_dp, (long long)r->new_micro);
    else if (!r->valid)
        fprintf(out, "INVALID: stage %d has no such config in the sweep at this batch",
                r->first_invalid_stage - 1);
    else if (r->missing_stage)
        fprintf(out, "NO ENTRY: stage %d has no finite entry at this batch",
                r->missing_stage - 1);
    else if (!r->fits)
        fprintf(out, "DOES NOT FIT: stage %d needs %.3f GiB, %.3f GiB available",
                r->worst_stage, r->worst_need / GIB, r->worst_avail / GIB);
    else if (r->worst_stage >= 0)
        fprintf(out, "fits in memory (tightest: stage %d, %.3f of %.3f GiB)", r->worst_stage,
                r->worst_need / GIB, r->worst_avail / GIB);
    else
        fputs("memory unknown", out);
    fputc('\n', out);
    if (!np)
        return;
    fprintf(out, "  %-5s %12s %22s %10s  %s\n", "stage", "cost (s)", "memory need/avail GiB",
            "free GiB", "status");
    for (size_t k = 0; k < np->n_stages; k++) {
        const ApsolveStage *st = &np->stages[k];
        char mem[48] = "-", head[24] = "-";
        const char *status = "ok";
        if (st->force_batch_dim == 0 && st->logical_a > 0 && r->new_micro % st->logical_a)
            status = "INVALID (dp does not divide the micro-batch)";
        else if (st->config < 0)
            status = "INVALID (config not in the sweep)";
        else if (isinf(st->cost))
            status = "no finite entry";
        else if (st->available_memory > 0 && st->memory_needed > st->available_memory)
            status = "OUT OF MEMORY";
        if (!isinf(st->cost) && st->available_memory > 0) {
            snprintf(mem, sizeof mem, "%.3f / %.3f", st->memory_needed / GIB,
                     st->available_memory / GIB);
            snprintf(head, sizeof head, "%.3f", (st->available_memory - st->memory_needed) / GIB);
        }
        fprintf(out, "  %-5zu %12.6g %22s %10s  %s\n", k, st->cost, mem, head, status);
    }
}

/* The full estimate and the --batch re-evaluation, when computed. */
static void text_beyond(FILE *out, const ApsolveOutput *o)
{
    if (o->full)
        text_full(out, o->full, o->full_stages, o->plan);
    if (o->rebatch)
        text_rebatch(out, o);
}

static int write_text(FILE *out, const ApsolveOutput *plans, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (n > 1)
            fprintf(out, "%s== %s plan ==\n", k ? "\n" : "", plans[k].label);
        text_plan(out, &plans[k]);
        text_beyond(out, &plans[k]);
        if (plans[k].plan_id > 0)
            fprintf(out, "Stored as plan %lld\n", (long long)plans[k].plan_id);
    }
    if (n > 1 && plans[0].plan->feasible && plans[n - 1].plan->feasible &&
        plans[n - 1].plan->cost > 0)
        fprintf(out, "\n%s plan / %s plan estimated latency: %.3fx\n", plans[0].label,
                plans[n - 1].label, plans[0].plan->cost / plans[n - 1].plan->cost);
    return ferror(out) ? APSOLVE_EINVAL : APSOLVE_OK;
}

static void json_num(FILE *out, double v)
{
    costdb_json_number(out, v);
}

static void json_field(FILE *out, const char *name, double v)
{
    fprintf(out, ", \"%s\": ", name);
    json_num(out, v);
}

/* "<key>": total and "breakdown" (with per-stage parts when se is given),
 * or "<key>": null and the reason. */
static void json_full(FILE *out, const ApsolveFullEstimate *f, const ApsolveStageEstimate *se,
                      size_t n, const char *key)
{
    fprintf(out, ", \"%s\": ", key);
    if (!f->available) {
        fprintf(out, "null, \"%s_unavailable\": ", key);
        costdb_json_string(out, f->why);
        return;
    }
    json_num(out, f->total);
    fputs(", \"breakdown\": {\"pipeline\": ", out);
    json_num(out, f->pipeline);
    json_field(out, "transfers", f->transfers);
    json_field(out, "transfer_bytes", f->transfer_bytes);
    json_field(out, "p2p_exposed", f->p2p_exposed);
    json_field(out, "grad_sync", f->grad_sync);
    json_field(out, "optimizer", f->optimizer);
    json_field(out, "apply", f->apply);
    fprintf(out, ", \"apply_source\": \"%s\", \"apply_stage\": %d",
            f->apply_from_entries ? "entries" : "placements", f->apply_stage);
    if (se) {
        fputs(", \"stages\": [", out);
        for (size_t k = 0; k < n; k++) {
            fprintf(out, "%s{\"compute\": ", k ? ", " : "");
            json_num(out, se[k].compute);
            json_field(out, "send_fwd", se[k].send_fwd);
            json_field(out, "send_fwd_bytes", se[k].send_fwd_bytes);
            json_field(out, "send_bwd", se[k].send_bwd);
            json_field(out, "send_bwd_bytes", se[k].send_bwd_bytes);
            json_field(out, "period", se[k].period);
            json_field(out, "param_bytes", se[k].param_bytes);
            json_field(out, "grad_bytes", se[k].grad_bytes);
            fprintf(out, ", \"replicas\": %d, \"grad_across_hosts\": %s", se[k].replicas,
                    se[k].grad_inter ? "true" : "false");
            json_field(out, "grad_sync", se[k].grad_sync);
            json_field(out, "optimizer", se[k].optimizer);
            json_field(out, "apply", se[k].apply);
            fprintf(out, ", \"first_device\": %d, \"domains\": %d, \"priced_domains\": %d",
                    se[k].first_device, se[k].domains, se[k].priced_domains);
            json_field(out, "straddle", se[k].straddle);
            fputc('}', out);
        }
        fputc(']', out);
    }
    fputc('}', out);
}

static void json_rebatch(FILE *out, const ApsolveOutput *o)
{
    const ApsolveRebatch *r = o->rebatch;
    fprintf(out, ", \"rebatch\": {\"global_batch\": %lld, \"old_micro_batch\": %lld, "
            "\"micro_batch\": %lld, \"source\": \"%s\", \"sweep_id\": %lld, \"ratio\": ",
            (long long)r->global_batch, (long long)r->old_micro, (long long)r->new_micro,
            r->exact_sweep > 0 ? "sweep" : "scaled", (long long)r->exact_sweep);
    json_num(out, r->ratio);
    json_field(out, "cost", r->cost);
    json_field(out, "sum_cost", r->sum_cost);
    json_field(out, "max_stage_cost", r->max_stage_cost);
    if (o->rebatch_full && o->rebatch_full->available)
        json_field(out, "full_cost", o->rebatch_full->total);
    fprintf(out, ", \"fits\": %s, \"valid\": %s, \"first_invalid_stage\": %d, "
            "\"invalid_dp\": %d, \"missing_stage\": %d", r->fits ? "true" : "false",
            r->valid ? "true" : "false", r->first_invalid_stage - 1, r->invalid_dp,
            r->missing_stage - 1);
    if (o->rebatch_plan) {
        const ApsolvePlan *np = o->rebatch_plan;
        fputs(", \"stages\": [", out);
        for (size_t k = 0; k < np->n_stages; k++) {
            const ApsolveStage *st = &np->stages[k];
            fprintf(out, "%s{\"cost\": ", k ? ", " : "");
            json_num(out, st->cost);
            fprintf(out, ", \"memory_needed\": %lld, \"available_memory\": %lld, "
                    "\"memory_ok\": %s}", (long long)st->memory_needed,
                    (long long)st->available_memory,
                    st->available_memory <= 0 || st->memory_needed <= st->available_memory
                        ? "true" : "false");
        }
        fputc(']', out);
    }
    fputc('}', out);
}

static void json_plan(FILE *out, const ApsolveOutput *o)
{
    const ApsolvePlan *pl = o->plan;
    fputs("{\"kind\": ", out);
    costdb_json_string(out, o->kind);
    fputs(", \"label\": ", out);
    costdb_json_string(out, o->label);
    fprintf(out, ", \"objective\": \"%s\", \"cost_objective\": \"%s\", \"schedule\": \"%s\", "
            "\"virtual_stages\": %d, \"micro_batches\": %d, \"global_batch\": %lld, "
            "\"micro_batch_size\": %lld, \"feasible\": %s, \"cost\": ",
            pl->inference ? "inference" : "training", objective_name(pl->objective),
            apsolve_schedule_name((ApsolveSchedule)pl->schedule)
                ? apsolve_schedule_name((ApsolveSchedule)pl->schedule) : "1f1b",
            pl->virtual_stages > 1 ? pl->virtual_stages : 1, pl->micro_batches,
            (long long)pl->global_batch, (long long)pl->micro_batch_size,
            pl->feasible ? "true" : "false");
    json_num(out, pl->cost);
    json_field(out, "apply_cost", pl->apply_cost);
    json_field(out, "total_cost", pl->total_cost);
    if (pl->cp > 1) /* only then: other plans keep their text */
        fprintf(out, ", \"cp\": %d, \"cp_comm\": \"%s\"", pl->cp,
                apsolve_cp_comm_name(pl->cp_comm));
    if (pl->ep > 1)
        fprintf(out, ", \"ep\": %d, \"etp\": %d", pl->ep, pl->etp);
    if (pl->ep > 1 && pl->moe_a2a_overlap)
        fprintf(out, ", \"moe_a2a_overlap\": 1");
    if (pl->recompute_layers > 0)
        fprintf(out, ", \"recompute_layers\": %d", pl->recompute_layers);
    if (pl->offload > 0) {
        fprintf(out, ", \"offload\": {\"layers\": %d, \"freed_bytes\": %lld, \"saved_bytes\": ",
                pl->offload, (long long)pl->offload_freed);
        json_num(out, pl->offload_saved);
        json_field(out, "host_bandwidth", pl->offload_bandwidth);
        json_field(out, "exposed_seconds", pl->offload_exposed);
        fputc('}', out);
    }
    fputs(", \"sum_cost\": ", out);
    json_num(out, pl->sum_cost);
    fputs(", \"max_stage_cost\": ", out);
    json_num(out, pl->max_stage_cost);
    fprintf(out, ", \"devices_used\": %d, \"stages\": [", pl->devices_used);
    for (size_t k = 0; k < pl->n_stages; k++) {
        const ApsolveStage *st = &pl->stages[k];
        fprintf(out, "%s{\"layers\": [", k ? ", " : "");
        for (int l = st->start_layer; l <= st->end_layer; l++)
            fprintf(out, l > st->start_layer ? ", %d" : "%d", l);
        fprintf(out, "], \"submesh\": [%d, %d], \"logical_mesh\": [%d, %d], \"options\": ",
                st->hosts, st->gpus, st->logical_a, st->logical_b);
        if (st->force_batch_dim >= 0)
            fprintf(out, "{\"force_batch_dim_to_mesh_dim\": %d}", st->force_batch_dim);
        else
            fputs("{}", out);
        fputs(", \"cost\": ", out);
        json_num(out, st->cost);
        fputs(", \"fwd_cost\": ", out);
        json_num(out, st->fwd_cost);
        fputs(", \"bwd_cost\": ", out);
        json_num(out, st->bwd_cost);
        fprintf(out, ", \"memory_level\": %d, \"recompute\": \"%s\", \"zero\": %d",
                st->variant.memory_level, costdb_recompute_name(st->variant.recompute)
                    ? costdb_recompute_name(st->variant.recompute) : "none", st->variant.zero);
        fputs(", \"apply_cost\": ", out);
        if (st->apply_cost >= 0)
            json_num(out, st->apply_cost);
        else
            fputs("null", out);
        fputs(", \"in_flight\": ", out);
        json_num(out, st->in_flight);
        fprintf(out, ", \"submesh_index\": %d, \"config_index\": %d, \"succ_stages\": %d, "
                "\"max_n_succ_stages\": ", st->submesh, st->config, st->succ_stages);
        if (st->max_n_succ_stages == APSOLVE_UNBOUNDED)
            fputs("null", out);
        else
            fprintf(out, "%d", st->max_n_succ_stages);
        fprintf(out, ", \"memory_ok\": %s, \"memory_needed\": %lld, \"available_memory\": %lld, "
                "\"memory_reserve\": %lld}",
                st->memory_ok ? "true" : "false", (long long)st->memory_needed,
                (long long)st->available_memory, (long long)st->memory_reserve);
    }
    fputs("], \"solve_seconds\": ", out);
    json_num(out, pl->solve_seconds);
    fprintf(out, ", \"dp_evaluations\": %ld, \"candidates\": %ld", pl->dp_evaluations,
            pl->candidates);
    if (o->plan_id > 0)
        fprintf(out, ", \"plan_id\": %lld", (long long)o->plan_id);
    if (o->frameworks && !pl->inference)
        json_frameworks(out, o->frameworks);
    if (o->fw_search)
        json_fw_search(out, o->fw_search);
    if (o->full)
        json_full(out, o->full, o->full_stages, pl->n_stages, "full_cost");
    if (o->rebatch)
        json_rebatch(out, o);
    fputc('}', out);
}

static int write_json(FILE *out, const ApsolveOutput *plans, size_t n)
{
    if (n == 1) {
        json_plan(out, &plans[0]);
    } else {
        fputs("{\"plans\": [", out);
        for (size_t k = 0; k < n; k++) {
            if (k)
                fputs(", ", out);
            json_plan(out, &plans[k]);
        }
        fputs("]}", out);
    }
    fputc('\n', out);
    return ferror(out) ? APSOLVE_EINVAL : APSOLVE_OK;
}

typedef struct Writer {
    const char *name;
    int (*write)(FILE *out, const ApsolveOutput *plans, size_t n);
} Writer;

static const Writer k_writers[] = {
    {"text", write_text},
    {"json", write_json},
};

int apsolve_write(FILE *out, const char *format, const ApsolveOutput *plans, size_t n)
{
    if (!out || !format || !plans || !n)
        return APSOLVE_EINVAL;
    for (size_t k = 0; k < sizeof k_writers / sizeof k_writers[0]; k++)
        if (strcmp(format, k_writers[k].name) == 0)
            return k_writers[k].write(out, plans, n);
    return APSOLVE_EINVAL;
}
