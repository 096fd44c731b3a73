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
 * - Megatron-LM: ZeRO-1 is its distributed optimizer, ZeRO-2 and ZeRO-3
 *   Megatron-FSDP (--use-megatron-fsdp, --data-parallel-sharding-strategy
 *   optim_grads / optim_grads_params, core_v0.19.0), whose ZeRO-3
 *   overlap is FSDP2's with the unit size the launch file writes
 *   (docs/variants.md, "Megatron-FSDP"); no GPipe schedule with a pipeline;
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
 * - ZeRO-3 runs as priced only in the framework whose schedule the sweep
 *   priced it with (approf sweep --zero3-schedule): torchtitan with fsdp2
 *   (FSDP2's per-block gathers and reduce-scatters overlapping compute),
 *   DeepSpeed with deepspeed (stage 3 with overlap_comm, on by default for
 *   stage 3 at v0.16.4, and the coordinator's prefetching); the serial
 *   schedule (the default) is neither's, so a plan priced with it runs as
 *   priced in none, and its launch files say so (docs/variants.md).
 *
 * The knobs of a --parallel layout add their own limits after this rule:
 * context parallelism (apsolve_cp_frameworks, context_parallel.c), HSDP
 * and FSDP2's reshard_after_forward (apsolve_hsdp_frameworks, hsdp.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context_parallel.h"
#include "costdb.h"
#include "costdb_text.h"
#include "expert_parallel.h"
#include "frameworks.h"
#include "hsdp.h"
#include "activation_offload.h"
#include "schedule.h"
#include "session.h"
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

static const char *const zero3_names[] = {"serial", "fsdp2", "deepspeed"};

const char *apsolve_zero3_schedule_name(int schedule)
{
    return schedule >= 0 && schedule < 3 ? zero3_names[schedule] : NULL;
}

int apsolve_zero3_schedule_of(const char *sweep_options)
{
    char name[32];
    if (!sweep_options ||
        costdb_json_member_text(sweep_options, "zero3_schedule", name, sizeof name) != 0)
        return APSOLVE_ZERO3_SERIAL;
    for (int k = 0; k < 3; k++)
        if (!strcmp(name, zero3_names[k]))
            return k;
    return APSOLVE_ZERO3_SERIAL;
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
    CostdbVariant most;
    int judge = 1, use_blocks = 1, moe = 0, seq_split = 0;
    const char *unit;
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
    most = s0->variant;
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
        if (s->blocks == APSOLVE_FW_BLOCKS_LATER)
            judge = 0;
        if (s->blocks <= 0)
            use_blocks = 0;
        moe |= s->moe;
        seq_split |= s->logical_b > 1 && s->seq_split;
        if (s->variant.recompute < 0 || s->variant.zero < 0)
            known = 0;
        else if (!costdb_variant_same_settings(s->variant, most))
            differ = 1;
        most = costdb_variant_max(most, s->variant);
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
    rec = most.recompute;
    zero = most.zero;
    /* the stages' sizes: transformer blocks where every stage's are known
     * (what the launch files set: Megatron's --num-layers and its first
     * and last stage's), else the sweep's layers */
    for (size_t k = 0; k < p->n; k++) {
        int c = use_blocks ? p->stages[k].blocks : p->stages[k].layers;
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
    }
    unit = use_blocks ? "transformer blocks" : "layers";
    if (judge && !use_blocks && hi - lo > 1) {
        snprintf(why, sizeof why, "its stages hold %d to %d layers: every framework splits "
                 "the layers (nearly) evenly", lo, hi);
        all_cannot(v, why);
    }
    if (!known)
        all_cannot(v, "the recomputation or ZeRO stage of some stages is unknown");
    if (differ)
        all_cannot(v, "its stages differ in recomputation or ZeRO, which every framework sets "
                      "once for all stages");
    if (judge && hi != lo) {
        /* Megatron states the first and last stage's blocks
         * (--decoder-first/last-pipeline-num-layers) when the stages
         * between agree and there is no interleaving (validate_args'
         * uneven split; the manifest's layers-uneven); the others split
         * evenly */
        int mid_equal = 1;
        for (size_t k = 2; k + 1 < p->n; k++) {
            const ApsolveFwStage *a = &p->stages[k], *b = &p->stages[1];
            mid_equal &= (use_blocks ? a->blocks == b->blocks : a->layers == b->layers);
        }
        if (!mid_equal || (p->schedule == APSOLVE_SCHEDULE_INTERLEAVED && p->virtual_stages > 1))
            cannot(v, APSOLVE_FW_MEGATRON, "its stages hold %d and %d %s: it states the first "
                   "and last stage's only, with the stages between equal and no interleaving",
                   lo, hi, unit);
        cannot(v, APSOLVE_FW_DEEPSPEED, "its stages hold %d and %d %s and PipelineModule's "
               "uniform partition splits them evenly", lo, hi, unit);
        cannot(v, APSOLVE_FW_TORCHTITAN, "its stages hold %d and %d %s and torchtitan "
               "splits them evenly", lo, hi, unit);
    }
    /* Megatron-LM core_v0.19.0's MoE layer refuses tensor parallelism
     * without sequence parallelism in training (MoELayer.forward; the
     * manifest's moe-sp rule): its launch file sets --sequence-parallel,
     * which changes the activations and collectives priced */
    if (moe && tp > 1 && !seq_split)
        cannot(v, APSOLVE_FW_MEGATRON, "a mixture-of-experts plan with tensor parallelism "
               "priced without sequence parallelism: its MoE layer trains with tp > 1 only "
               "with --sequence-parallel");
    pipe_sched = pp > 1 ? p->schedule : APSOLVE_SCHEDULE_1F1B;
    if (pipe_sched == APSOLVE_SCHEDULE_INTERLEAVED && p->virtual_stages < 2)
        pipe_sched = APSOLVE_SCHEDULE_1F1B;
    /* Megatron-LM (ZeRO-2/3: Megatron-FSDP, its ZeRO-3 schedule below) */
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
    /* ZeRO-3's schedule, after the structural reasons: each framework
     * overlaps its collectives its own way and the sweep prices one way
     * (docs/variants.md, "ZeRO-3 overlap") */
    if (zero == 3 && p->zero3_schedule != APSOLVE_ZERO3_FSDP2)
        cannot(v, APSOLVE_FW_TORCHTITAN, "ZeRO-3 priced with the %s schedule: FSDP2 gathers "
               "and reduce-scatters each transformer block under the compute of its "
               "neighbours (approf sweep --zero3-schedule fsdp2 prices it as torchtitan runs "
               "it)", apsolve_zero3_schedule_name(p->zero3_schedule));
    if (zero == 3 && p->zero3_schedule != APSOLVE_ZERO3_FSDP2)
        cannot(v, APSOLVE_FW_MEGATRON, "ZeRO-3 priced with the %s schedule: Megatron-FSDP "
               "gathers each transformer layer one ahead and reduce-scatters it under the next "
               "layers' backward (FSDP2's overlap, with the file's --suggested-communication-"
               "unit-size; approf sweep --zero3-schedule fsdp2 prices it as Megatron-LM runs it)", apsolve_zero3_schedule_name(p->zero3_schedule));
    if (zero == 3 && p->zero3_schedule != APSOLVE_ZERO3_DEEPSPEED)
        cannot(v, APSOLVE_FW_DEEPSPEED, "ZeRO-3 priced with the %s schedule: its stage 3 "
               "prefetches module parameters and reduces gradient buckets on their own "
               "streams (overlap_comm; approf sweep --zero3-schedule deepspeed prices it as "
               "DeepSpeed runs it)", apsolve_zero3_schedule_name(p->zero3_schedule));
}

/* Each stage's placements, for costdb_stage_blocks. */
typedef struct StagePls {
    CostdbPlacement **ps;
    size_t *n;
} StagePls;

static const CostdbPlacement *stage_pl(const void *ctx, size_t k, size_t i)
{
    const StagePls *x = ctx;
    return i < x->n[k] ? &x->ps[k][i] : NULL;
}

/* The first k layers of each chunk recomputed (recompute_layers.h; a
 * --parallel layout's or an auto plan's, session_autorl.c): Megatron-LM's
 * --recompute-method block; torchtitan's every-N-th layer and DeepSpeed's
 * checkpointing are not that set of layers. k 0: nothing. */
static void recompute_layers_limits(int k, ApsolveFwVerdict *v)
{
    for (int f = APSOLVE_FW_DEEPSPEED; k > 0 && f <= APSOLVE_FW_TORCHTITAN; f++)
        if (v->runs & (1u << f)) {
            v->runs &= ~(1u << f);
            snprintf(v->why[f], sizeof v->why[f], "recompute_layers: it cannot recompute only "
                     "the first layers of each model chunk");
        }
}

int apsolve_plan_frameworks(struct Costdb *db, int64_t sweep, const char *dtype,
                            const ApsolvePlan *pl, ApsolveFwVerdict *v)
{
    size_t n = pl->n_stages ? pl->n_stages : 1;
    ApsolveFwStage *st = calloc(n, sizeof *st);
    StagePls x = {calloc(n, sizeof *x.ps), calloc(n, sizeof *x.n)};
    int *blocks = calloc(n, sizeof *blocks), read = db != NULL, rc = 0;
    ApsolveFwPlan p;
    char why[200];
    if (!st || !x.ps || !x.n || !blocks) {
        memset(v, 0, sizeof *v);
        all_cannot(v, "out of memory");
        rc = -1;
        goto done;
    }
    for (size_t k = 0; k < pl->n_stages; k++) {
        const ApsolveStage *s = &pl->stages[k];
        size_t weights = 0;
        st[k] = (ApsolveFwStage){s->end_layer - s->start_layer + 1, s->hosts, s->gpus,
                                 s->logical_a, s->logical_b, s->force_batch_dim,
                                 s->config >= 0 ? s->variant : (CostdbVariant){-1, -1, -1},
                                 0, 0, 0, 0};
        if (s->submesh < 0 || s->config < 0 || !db ||
            costdb_placements_get(db, sweep, s->start_layer, s->end_layer, s->submesh,
                                  s->config, &x.ps[k], &x.n[k]) < 0) {
            read = 0;
            if (s->logical_b > 1)
                st[k].tp_whole = -1;
            continue;
        }
        if (s->logical_b > 1)
            st[k].tp_whole = apsolve_placements_whole(x.ps[k], x.n[k], s->logical_a,
                                                      s->logical_b, &weights);
        for (size_t i = 0; i < x.n[k]; i++) {
            int e, t;
            int64_t experts;
            st[k].moe |= costdb_expert_split(&x.ps[k][i], s->logical_a, s->logical_b, &e, &t,
                                             &experts) == 0;
            st[k].seq_split |= costdb_activation_seq_split(&x.ps[k][i], s->logical_a,
                                                           s->logical_b) == 1;
        }
    }
    /* transformer blocks per stage, as the launch files count them */
    if (read && pl->n_stages) {
        int b = costdb_stage_blocks(stage_pl, &x, pl->n_stages, blocks, why, sizeof why);
        /* a block cut between two stages (the sweep's layers need not end
         * where a block does): the layers are judged, as the launch files
         * say (docs/solver.md, "Which frameworks run a plan") */
        for (size_t k = 0; k < pl->n_stages; k++)
            st[k].blocks = b == 0 ? blocks[k] : 0;
    }
    p = (ApsolveFwPlan){st, pl->n_stages, pl->schedule, pl->virtual_stages,
                        apsolve_fw_dtype_fp16(dtype), APSOLVE_ZERO3_SERIAL};
    /* the ZeRO-3 schedule the sweep priced, where a ZeRO-3 stage asks */
    for (size_t k = 0; db && k < pl->n_stages; k++)
        if (st[k].variant.zero == 3) {
            CostdbSweep sw;
            if (costdb_sweep_get(db, sweep, &sw) == 0)
                p.zero3_schedule = apsolve_zero3_schedule_of(sw.options);
            break;
        }
    apsolve_frameworks(&p, v);
    recompute_layers_limits(pl->recompute_layers, v);
    apsolve_offload_frameworks(pl->offload, v); /* an auto plan's (session_autooffload.c) */
done:
    for (size_t k = 0; x.ps && k < pl->n_stages; k++)
        free(x.ps[k]);
    free(x.ps);
    free(x.n);
    free(blocks);
    free(st);
    return rc;
}

void apsolve_parallel_frameworks(const struct ApsolveParallel *par, ApsolveFwVerdict *v)
{
    int cp = par->cp > 1 ? par->cp : 1;
    apsolve_cp_frameworks(cp, par->cp_comm, v);
    /* the experts fold over the entries' (dp x cp, tp) (session_ep.c) */
    apsolve_ep_frameworks(par->dp * cp, par->tp, par->ep, par->etp > 0 ? par->etp : par->tp,
                          par->zero, v);
    if (par->zero == 3) /* HSDP, raf=0 (hsdp.h) */
        apsolve_hsdp_frameworks(par->dp_shard, par->tp, !par->raf_off, v);
    recompute_layers_limits(par->recompute_layers, v);
    apsolve_offload_frameworks(par->offload, v); /* activation_offload.h */
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
    while (lv && e == 0 && apsolve_3d_tp_bump(*out, opt, specs, lv, n)) {
        apsolve_plan_free(out);
        e = apsolve_evaluate(p, opt, specs, n, out, err, errlen);
    }
    free(lv);
    return e;
}

/* apsolve_evaluate_as_run as a plan maker: each try from the specs as
 * given (the pricing pins their memory levels). */
typedef struct AsRun {
    struct Costdb *db;
    int64_t sweep;
    const ApsolveProblem *p;
    ApsolveStageSpec *specs, *given;
    size_t n;
    char *err;
    size_t errlen;
} AsRun;

static int as_run_maker(void *ctx, const ApsolveOptions *opt, ApsolvePlan **out)
{
    AsRun *x = ctx;
    memcpy(x->specs, x->given, x->n * sizeof *x->specs);
    return apsolve_evaluate_as_run(x->db, x->sweep, x->p, opt, x->specs, x->n, out, x->err,
                                   x->errlen);
}

int apsolve_evaluate_as_run_keep(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                                 ApsolveOptions *opt, ApsolveStageSpec *specs, size_t n,
                                 ApsolvePlan **out, char *err, size_t errlen)
{
    AsRun x = {db, sweep, p, specs, malloc((n ? n : 1) * sizeof *specs), n, err, errlen};
    int e;
    if (!x.given)
        return APSOLVE_ENOMEM;
    memcpy(x.given, specs, n * sizeof *specs);
    e = apsolve_keep_headroom(opt, as_run_maker, &x, out);
    free(x.given);
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
