/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which frameworks run a plan as priced (frameworks.h): the one rule. Its
 * limits, read at the versions the launch files are checked against
 * (reports/manifests/, docs/export-*.md):
 *
 * - every framework runs one layout on equal stages: the same submesh,
 *   logical mesh (dp, tp) and batch option on every stage, layer counts
 *   differing by at most one (Megatron-LM's --pipeline-model-parallel-size
 *   with --decoder-first/last-pipeline-num-layers; DeepSpeed's
 *   PipelineModule partition; torchtitan's pipeline_parallel_degree), and
 *   one recomputation and ZeRO setting for all stages;
 * - tensor parallelism splits every weight matrix over the tp ranks
 *   (Megatron's ColumnParallelLinear / RowParallelLinear, torchtitan's
 *   ColwiseParallel / RowwiseParallel, DeepSpeed through Megatron-DeepSpeed):
 *   a stage priced with weights whole on the tp axis is not what they run;
 * - Megatron-LM: its distributed optimizer shards optimizer states only
 *   (ZeRO-1; no ZeRO-2/3); no GPipe schedule with a pipeline;
 * - DeepSpeed: its PipelineEngine asserts zero_optimization_stage() < 2
 *   (deepspeed/runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are incompatible
 *   with pipeline parallelism") and runs its own 1F1B only; activation
 *   checkpointing takes whole layers (no selective recomputation); stages
 *   of unequal layers are split evenly by PipelineModule's 'uniform';
 * - torchtitan: FSDP shards gradients with the parameters (no ZeRO-1); its
 *   DDP refuses a second parallel dimension ("DDP has not supported > 1D
 *   parallelism"), so ZeRO-0 with dp > 1 and TP or PP does not run;
 *   mixed_precision_param takes bfloat16 or float32 (no float16); stages of
 *   unequal layers are split evenly;
 * - the zero-bubble ZB-H1 schedule on one stage per device runs in none of
 *   them (docs/solver.md, "Schedules"): Megatron-LM core_v0.19.0 has no
 *   zero-bubble pipeline schedule (delay_wgrad_compute defers weight
 *   gradients only to overlap the MoE all-to-all); DeepSpeed runs its own
 *   1F1B; torchtitan's zero-bubble schedules are PyTorch's multi-stage
 *   ScheduleInterleavedZeroBubble and ScheduleZBVZeroBubble, which its
 *   pipeline_llm refuses with fewer than 2 stages per rank. Those two
 *   (apsolve's interleaved-zb with 2 or more chunks, and zbv) torchtitan
 *   runs (pipeline_parallel_schedule InterleavedZeroBubble, ZBVZeroBubble;
 *   pipeline_llm places ZBV's two stages per rank in a V, v0.2.2), and
 *   neither Megatron-LM nor DeepSpeed does.
 *
 * The knobs of a --parallel layout add their own limits after this rule:
 * context parallelism (apsolve_cp_frameworks, context_parallel.c), HSDP
 * and FSDP2's reshard_after_forward (apsolve_hsdp_frameworks, hsdp.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "frameworks.h"
#include "schedule.h"
#include "session_int.h"

static const char *const fw_names[] = {"Megatron-LM", "DeepSpeed", "torchtitan"};

const char *apsolve_framework_name(int f)
{
    return f >= 0 && f < APSOLVE_FW_COUNT ? fw_names[f] : NULL;
}

const char *apsolve_framework_key(int f)
{
    return f >= 0 && f < APSOLVE_FW_COUNT ? costdb_framework_keys[f] : NULL;
}

int apsolve_framework_parse(const char *s)
{
    for (int f = 0; s && f < APSOLVE_FW_COUNT; f++)
        if (!strcmp(s, costdb_framework_keys[f]))
            return f;
    return -1;
}

/* Framework f cannot: the first reason is kept. */
static void cannot(ApsolveFwVerdict *v, int f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cannot(ApsolveFwVerdict *v, int f, const char *fmt, ...)
{
    va_list ap;
    if (!(v->runs & (1u << f)))
        return;
    v->runs &= ~(1u << f);
    va_start(ap, fmt);
    vsnprintf(v->why[f], sizeof v->why[f], fmt, ap);
    va_end(ap);
}

static void all_cannot(ApsolveFwVerdict *v, const char *why)
{
    for (int f = 0; f < APSOLVE_FW_COUNT; f++)
        cannot(v, f, "%s", why);
}

void apsolve_frameworks(const ApsolveFwPlan *p, ApsolveFwVerdict *v)
{
    const ApsolveFwStage *s0;
    int lo = 1 << 30, hi = 0, pp, dp, tp, rec, zero, known = 1, differ = 0, pipe_sched;
    char why[APSOLVE_FW_WHY];
    memset(v, 0, sizeof *v);
    v->runs = (1u << APSOLVE_FW_COUNT) - 1;
    if (!p || !p->n || !p->stages) {
        all_cannot(v, "the plan has no stages");
        return;
    }
    s0 = &p->stages[0];
    pp = (int)p->n;
    dp = s0->logical_a;
    tp = s0->logical_b;
    rec = s0->recompute;
    zero = s0->zero;
    for (size_t k = 0; k < p->n; k++) {
        const ApsolveFwStage *s = &p->stages[k];
        if (s->hosts != s0->hosts || s->gpus != s0->gpus || s->logical_a != dp ||
            s->logical_b != tp || (s->force_batch_dim >= 0) != (s0->force_batch_dim >= 0)) {
            snprintf(why, sizeof why, "its stages are not uniform (stage %zu on (%d, %d) with "
                     "logical mesh (%d, %d)%s, stage 0 on (%d, %d) with (%d, %d)%s): every "
                     "framework runs one layout on equal stages", k, s->hosts, s->gpus,
                     s->logical_a, s->logical_b, s->force_batch_dim >= 0 ? ", batch forced" : "",
                     s0->hosts, s0->gpus, dp, tp, s0->force_batch_dim >= 0 ? ", batch forced" : "");
            all_cannot(v, why);
            return;
        }
        lo = s->layers < lo ? s->layers : lo;
        hi = s->layers > hi ? s->layers : hi;
        if (s->recompute < 0 || s->zero < 0)
            known = 0;
        else if (s->recompute != rec || s->zero != zero)
            differ = 1;
        rec = costdb_recompute_max(rec, s->recompute);
        zero = s->zero > zero ? s->zero : zero;
        if (s->logical_b > 1 && s->tp_whole != 0) {
            if (s->tp_whole < 0)
                snprintf(why, sizeof why, "stage %zu's placements are unknown, so whether tensor "
                         "parallelism splits its weights as priced is unknown", k);
            else
                snprintf(why, sizeof why, "stage %zu is priced with %d weight matrices whole on "
                         "every device of the tp axis; tensor parallelism splits them %d ways",
                         k, s->tp_whole, s->logical_b);
            all_cannot(v, why);
        }
    }
    if (hi - lo > 1) {
        snprintf(why, sizeof why, "its stages hold %d to %d layers: every framework splits "
                 "the layers (nearly) evenly", lo, hi);
        all_cannot(v, why);
    }
    if (!known)
        all_cannot(v, "the recomputation or ZeRO stage of some stages is unknown");
    if (differ)
        all_cannot(v, "its stages differ in recomputation or ZeRO, which every framework sets "
                      "once for all stages");
    if (hi != lo) {
        /* Megatron states the first and last stage's layers when the
         * stages between agree and there is no interleaving; the others
         * split evenly */
        int mid_equal = 1;
        for (size_t k = 2; k + 1 < p->n; k++)
            mid_equal &= p->stages[k].layers == p->stages[1].layers;
        if (!mid_equal || (p->schedule == APSOLVE_SCHEDULE_INTERLEAVED && p->virtual_stages > 1))
            cannot(v, APSOLVE_FW_MEGATRON, "its stages hold %d and %d layers: it states the "
                   "first and last stage's layers only, with the stages between equal and no "
                   "interleaving", lo, hi);
        cannot(v, APSOLVE_FW_DEEPSPEED, "its stages hold %d and %d layers and PipelineModule's "
               "uniform partition splits them evenly", lo, hi);
        cannot(v, APSOLVE_FW_TORCHTITAN, "its stages hold %d and %d layers and torchtitan "
               "splits them evenly", lo, hi);
    }
    pipe_sched = pp > 1 ? p->schedule : APSOLVE_SCHEDULE_1F1B;
    if (pipe_sched == APSOLVE_SCHEDULE_INTERLEAVED && p->virtual_stages < 2)
        pipe_sched = APSOLVE_SCHEDULE_1F1B;
    /* Megatron-LM */
    if (zero >= 2)
        cannot(v, APSOLVE_FW_MEGATRON, "ZeRO-%d: its distributed optimizer shards the "
               "optimizer states only (ZeRO-1)", zero);
    if (pipe_sched == APSOLVE_SCHEDULE_GPIPE)
        cannot(v, APSOLVE_FW_MEGATRON, "the GPipe schedule: it runs 1F1B or interleaved 1F1B");
    if (apsolve_schedule_zero_bubble(pipe_sched))
        cannot(v, APSOLVE_FW_MEGATRON, "the zero-bubble %s schedule: it has no zero-bubble "
               "pipeline schedule (delay_wgrad_compute defers weight gradients only to overlap "
               "the MoE all-to-all)", pipe_sched == APSOLVE_SCHEDULE_ZB_H1 ? "ZB-H1"
                                      : pipe_sched == APSOLVE_SCHEDULE_ZBV ? "ZB-V" : "interleaved");
    if (rec == COSTDB_RECOMPUTE_OP)
        cannot(v, APSOLVE_FW_MEGATRON, "torchtitan's per-op recomputation: its selective "
               "granularity recomputes whole modules (--recompute-modules)");
    /* DeepSpeed */
    if (pp > 1 && zero >= 2)
        cannot(v, APSOLVE_FW_DEEPSPEED, "ZeRO-%d with pipeline parallelism: its PipelineEngine "
               "takes ZeRO stage 0 or 1", zero);
    if (pipe_sched != APSOLVE_SCHEDULE_1F1B)
        cannot(v, APSOLVE_FW_DEEPSPEED, "the %s schedule: its pipeline engine runs its own 1F1B",
               pipe_sched == APSOLVE_SCHEDULE_GPIPE ? "GPipe"
               : pipe_sched == APSOLVE_SCHEDULE_ZB_H1 ? "zero-bubble ZB-H1"
               : pipe_sched == APSOLVE_SCHEDULE_INTERLEAVED_ZB ? "interleaved zero-bubble"
               : pipe_sched == APSOLVE_SCHEDULE_ZBV ? "zero-bubble ZB-V" : "interleaved");
    if (rec == COSTDB_RECOMPUTE_SELECTIVE || rec == COSTDB_RECOMPUTE_OP)
        cannot(v, APSOLVE_FW_DEEPSPEED, "%s recomputation: its activation checkpointing "
               "takes whole layers", costdb_recompute_name(rec));
    /* torchtitan */
    if (zero == 1)
        cannot(v, APSOLVE_FW_TORCHTITAN, "ZeRO-1: FSDP shards the gradients too (ZeRO-2/3)");
    if (rec == COSTDB_RECOMPUTE_SELECTIVE)
        cannot(v, APSOLVE_FW_TORCHTITAN, "selective recomputation of the attention core: its "
               "selective modes are per-op (recompute op) or every n-th layer");
    if (zero == 0 && dp > 1 && (tp > 1 || pp > 1))
        cannot(v, APSOLVE_FW_TORCHTITAN, "plain data parallelism with tensor or pipeline "
               "parallelism: its DDP refuses more than one parallel dimension");
    if (p->fp16)
        cannot(v, APSOLVE_FW_TORCHTITAN, "float16: mixed_precision_param takes bfloat16 or "
               "float32");
    if (pipe_sched == APSOLVE_SCHEDULE_ZB_H1 ||
        (pipe_sched == APSOLVE_SCHEDULE_INTERLEAVED_ZB && p->virtual_stages < 2))
        cannot(v, APSOLVE_FW_TORCHTITAN, "ZB-H1 on one stage per rank: its zero-bubble "
               "schedules (InterleavedZeroBubble, ZBVZeroBubble) take 2 or more stages per rank "
               "(pipeline_llm)");
}

int apsolve_plan_frameworks(struct Costdb *db, int64_t sweep, const char *dtype,
                            const ApsolvePlan *pl, ApsolveFwVerdict *v)
{
    ApsolveFwStage *st = calloc(pl->n_stages ? pl->n_stages : 1, sizeof *st);
    ApsolveFwPlan p;
    if (!st) {
        memset(v, 0, sizeof *v);
        all_cannot(v, "out of memory");
        return -1;
    }
    for (size_t k = 0; k < pl->n_stages; k++) {
        const ApsolveStage *s = &pl->stages[k];
        size_t weights = 0;
        st[k] = (ApsolveFwStage){s->end_layer - s->start_layer + 1, s->hosts, s->gpus,
                                 s->logical_a, s->logical_b, s->force_batch_dim,
                                 s->config >= 0 ? s->recompute : -1,
                                 s->config >= 0 ? s->zero : -1, 0};
        if (s->logical_b > 1)
            st[k].tp_whole = s->submesh < 0 || s->config < 0 || !db
                                 ? -1
                                 : apsolve_whole_weights(db, sweep, s->start_layer, s->end_layer,
                                                         s->submesh, s->config, s->logical_a,
                                                         s->logical_b, &weights);
    }
    p = (ApsolveFwPlan){st, pl->n_stages, pl->schedule, pl->virtual_stages,
                        apsolve_fw_dtype_fp16(dtype)};
    apsolve_frameworks(&p, v);
    free(st);
    return 0;
}

int apsolve_evaluate_as_run(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            const ApsolveOptions *opt, ApsolveStageSpec *specs, size_t n,
                            ApsolvePlan **out, char *err, size_t errlen)
{
    ApsolveTpLevels *lv = NULL;
    int tp = 0, e;
    for (size_t k = 0; k < n; k++)
        tp |= specs[k].logical_b > 1;
    if (tp && db) {
        if (!(lv = calloc(n, sizeof *lv)))
            return APSOLVE_ENOMEM;
        apsolve_3d_tp_levels(db, sweep, p, specs, n, lv);
    }
    e = apsolve_evaluate(p, opt, specs, n, out, err, errlen);
    while (lv && e == 0 && apsolve_3d_tp_bump(*out, specs, lv, n)) {
        apsolve_plan_free(out);
        e = apsolve_evaluate(p, opt, specs, n, out, err, errlen);
    }
    free(lv);
    return e;
}

int apsolve_fw_dtype_fp16(const char *dtype)
{
    return dtype && (!strcmp(dtype, "f16") || !strcmp(dtype, "fp16") || !strcmp(dtype, "float16"));
}

void apsolve_frameworks_list(unsigned runs, char *out, size_t len)
{
    size_t at = 0;
    if (!len)
        return;
    out[0] = '\0';
    for (int f = 0; f < APSOLVE_FW_COUNT; f++)
        if (runs & (1u << f)) {
            int w = snprintf(out + at, len - at, "%s%s", at ? ", " : "", fw_names[f]);
            at += w > 0 ? (size_t)w : 0;
            if (at >= len)
                return;
        }
    if (!at)
        snprintf(out, len, "none");
}
