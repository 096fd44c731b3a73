/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one launch derivation of a stored plan (docs/reports.md "Launch the
 * plan"): the layout, batch split, precision and variant every framework
 * output starts from (rep_launch_basics, read by the plan as code in
 * reports/code.c and by the launch files in reports/export.c), and per
 * runtime what its file states (rep_launch_of): where the runtime cannot
 * express the plan (stages on different submeshes or logical meshes or of
 * unequal size, a ZeRO stage, recomputation or schedule the runtime lacks,
 * per-stage variants) the closest plan it can run, uniform stages with the
 * layout most of the plan's stages have among those whose pipeline size
 * divides the model's transformer blocks, priced when the report was loaded
 * with the solver's own evaluation (rep_closest_price in launch_closest.c:
 * apsolve_evaluate over the plan's sweep); the settings a runtime needs beyond the plan
 * (Megatron's expert tensor parallel size, sequence parallelism for MoE
 * with tensor parallelism, torchtitan's FSDP where DDP cannot combine with
 * TP/PP) with a note for each.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "context_parallel.h"
#include "costdb_text.h"
#include "hsdp.h"
#include "launch.h"
#include "launch_megatron_fsdp.h"
#include "plural.h"
#include "schedule.h"

static const char *const rt_names[] = {"Megatron-LM", "DeepSpeed", "torchtitan"};

void rep_launch_line(RepLaunch *L, const char *fmt, ...)
{
    va_list ap;
    if (L->n_lines >= REP_LAUNCH_LINES)
        return;
    va_start(ap, fmt);
    vsnprintf(L->lines[L->n_lines++], REP_LAUNCH_LINE_LEN, fmt, ap);
    va_end(ap);
}

/* "(1, 2), (1, 2), (1, 4)" of the stages' submeshes (logical 0) or logical
 * meshes (1), or their layer counts (2). */
static void stage_list(const ApreportReport *r, int what, char *out, size_t len)
{
    size_t pos = 0;
    out[0] = '\0';
    for (size_t k = 0; k < r->n_stages && pos < len; k++) {
        const CostdbPlanStage *s = &r->stages[k].st;
        if (what == 2)
            pos += (size_t)snprintf(out + pos, len - pos, "%s%d", k ? ", " : "",
                                    s->end_layer - s->start_layer + 1);
        else
            pos += (size_t)snprintf(out + pos, len - pos, "%s(%d, %d)", k ? ", " : "",
                                    what ? s->logical_a : s->submesh_hosts,
                                    what ? s->logical_b : s->submesh_gpus);
    }
}

/* Expert parallelism: as the plan gives it (apsolve --parallel ...,ep=E,etp=T,
 * priced so: solver/expert_parallel.h), else from the expert weights'
 * placements (costdb_expert_split): *ep the pieces their expert dimension
 * is split into (0 when the model has no experts), *etp the pieces of their
 * largest in/out split (Megatron's expert tensor parallel size); *experts
 * E either way. */
static void expert_parallel(const ApreportReport *r, int *ep, int *etp, int *experts)
{
    *ep = 0;
    *etp = 1;
    *experts = 0;
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        for (size_t i = 0; i < s->n_tensors; i++) {
            const RepTensor *t = &s->tensors[i];
            int pe, pt;
            int64_t e;
            if (costdb_expert_split(&t->pl, s->st.logical_a, s->st.logical_b, &pe, &pt, &e) < 0)
                continue;
            *ep = pe > *ep ? pe : *ep;
            *etp = pt > *etp ? pt : *etp;
            if (e > *experts && e < 1 << 20)
                *experts = (int)e;
        }
    }
    if (*experts && r->opts.has_layout && r->opts.layout.ep > 0 && r->opts.layout.etp > 0) {
        *ep = r->opts.layout.ep;
        *etp = r->opts.layout.etp;
    }
}

/* Whether a stage with tensor parallelism keeps an activation ([B, S, H],
 * a stage input or output) split on the sequence over the tensor-parallel
 * axis: the sharding ILP chose Megatron's sequence parallelism. */
static int seq_split(const ApreportReport *r)
{
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        if (s->st.logical_b <= 1)
            continue;
        for (size_t i = 0; i < s->n_tensors; i++)
            if (costdb_activation_seq_split(&s->tensors[i].pl, s->st.logical_a,
                                            s->st.logical_b) == 1)
                return 1;
    }
    return 0;
}

static const char *sched_label(ApreportScheduleKind k)
{
    return k == APREPORT_SCHED_GPIPE            ? "GPipe"
           : k == APREPORT_SCHED_INTERLEAVED    ? "interleaved 1F1B"
           : k == APREPORT_SCHED_ZB_H1          ? "zero-bubble ZB-H1"
           : k == APREPORT_SCHED_INTERLEAVED_ZB ? "interleaved zero-bubble"
           : k == APREPORT_SCHED_ZBV            ? "zero-bubble ZB-V"
                                                : "1F1B";
}

void rep_launch_basics(const ApreportReport *r, RepLaunchBasics *b)
{
    const char *dt = r->sweep.dtype;
    int d;
    memset(b, 0, sizeof(*b));
    b->dp = b->tp = b->pp = b->v = b->B = 1;
    b->variants_known = 1;
    snprintf(b->blocks_why, sizeof(b->blocks_why), "the plan has no stages");
    if (!r->n_stages)
        return;
    b->dp = r->stages[0].st.logical_a > 0 ? r->stages[0].st.logical_a : 1;
    b->tp = r->stages[0].st.logical_b > 0 ? r->stages[0].st.logical_b : 1;
    /* a cp plan's stages are priced on the entries of (dp x cp, tp)
     * (solver/context_parallel.h): the replicas are dp, each cp GPUs wide */
    b->cp = 1;
    b->cp_comm = "p2p";
    if (r->opts.has_layout && r->opts.layout.cp > 1 && b->dp % r->opts.layout.cp == 0) {
        b->cp = r->opts.layout.cp;
        b->dp /= b->cp;
        b->cp_comm = r->opts.layout.cp_comm;
        b->cp_a2a = r->opts.layout.cp_a2a;
    }
    b->pp = (int)r->n_stages;
    b->v = (int)apsolve_schedule_transfer_factor((ApsolveSchedule)r->schedule, r->virtual_stages);
    b->B = r->plan.micro_batches > 0 ? r->plan.micro_batches : 1;
    b->global = r->global_batch;
    d = b->dp;
    b->mbs = b->global / b->B / d;
    b->batch_exact = b->global % ((int64_t)b->B * d) == 0;
    b->prec = !strcmp(dt, "bf16") || !strcmp(dt, "bfloat16") ? "bf16"
              : !strcmp(dt, "f16") || !strcmp(dt, "fp16") || !strcmp(dt, "float16") ? "fp16"
                                                                                  : NULL;
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        if (!s->variant_known) {
            b->variants_known = 0;
            continue;
        }
        b->variants_differ |= !costdb_variant_same_settings(s->variant, r->stages[0].variant);
        b->variant = costdb_variant_max(b->variant, s->variant);
    }
    b->sp_knob = r->opts.has_layout && r->opts.layout.sp;
    b->seq_split = seq_split(r);
    b->blocks = calloc(r->n_stages, sizeof(int));
    snprintf(b->blocks_why, sizeof(b->blocks_why), "out of memory");
    if (b->blocks && rep_stage_blocks(r, b->blocks, b->blocks_why, sizeof(b->blocks_why)) == 0) {
        b->blocks_known = 1;
        b->blocks_equal = 1;
        for (size_t k = 0; k < r->n_stages; k++) {
            b->blocks_total += b->blocks[k];
            b->blocks_equal &= b->blocks[k] == b->blocks[0];
        }
    } else {
        free(b->blocks);
        b->blocks = NULL;
    }
}

void rep_launch_basics_free(RepLaunchBasics *b)
{
    free(b->blocks);
    b->blocks = NULL;
}

/* The notes of one file: what the runtime cannot express or needs beyond
 * the plan, each a "- ..." header line. */
typedef struct Notes {
    char text[10][REP_LAUNCH_LINE_LEN];
    int n;
} Notes;

static void note(Notes *N, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(Notes *N, const char *fmt, ...)
{
    va_list ap;
    if (N->n >= 10)
        return;
    va_start(ap, fmt);
    if (vsnprintf(N->text[N->n++], REP_LAUNCH_LINE_LEN, fmt, ap) >= REP_LAUNCH_LINE_LEN)
        N->text[N->n - 1][REP_LAUNCH_LINE_LEN - 2] = '.'; /* cut: the list is too long */
    va_end(ap);
}

/* The layout: the plan's when uniform, else the closest plan's. */
static void layout_of(const ApreportReport *r, const RepLaunchBasics *b, RepLaunch *L, Notes *N)
{
    const RepClosest *c = &r->closest;
    const char *name = rt_names[L->rt];
    char sub[160], lg[160], ly[160];
    L->dp = b->dp;
    L->tp = b->tp;
    L->pp = b->pp;
    L->cp = b->cp;
    L->cp_comm = b->cp_comm;
    L->cp_a2a = b->cp_a2a;
    if (rep_plan_uniform(r))
        return;
    stage_list(r, 0, sub, sizeof(sub));
    stage_list(r, 1, lg, sizeof(lg));
    stage_list(r, 2, ly, sizeof(ly));
    L->changed = 1;
    note(N, "%s cannot express this plan: its stages are not uniform (submeshes %s; logical "
            "meshes %s; layers %s) and %s runs one layout on equal stages", name, sub, lg, ly,
         name);
    if (c->have) {
        L->dp = c->logical_a;
        L->tp = c->logical_b;
        L->pp = c->pp;
        note(N, "closest expressible plan: %d uniform stages on (%d, %d) submeshes with logical "
                "mesh (%d, %d), the layout most of the plan's stages have among those whose "
                "pipeline size divides the model's blocks", c->pp, c->hosts, c->gpus,
             c->logical_a, c->logical_b);
    } else {
        note(N, "no uniform plan with the plan's layouts uses every device (%s): the layout "
                "below is stage 0's on every stage, not priced", c->why);
    }
}

/* Weight matrices the priced sharding keeps whole on the tp axis, over the
 * stages with tp > 1 (counted at load: RepStage.tp_whole); *weights counts
 * the weight matrices of those stages. */
static size_t tp_whole_weights(const ApreportReport *r, size_t *weights)
{
    size_t whole = 0;
    *weights = 0;
    for (size_t k = 0; k < r->n_stages; k++) {
        *weights += r->stages[k].tp_weights;
        whole += r->stages[k].tp_whole;
    }
    return whole;
}

/* What each runtime cannot run as the plan has it: the closest it can. */
/* HSDP and raf=0 (docs/hsdp.md): torchtitan runs both; DeepSpeed shards
 * within groups with MiCS (zero_optimization.mics_shard_size, v0.16.4's
 * deepspeed/runtime/zero/mics.py), whose groups are consecutive global
 * ranks (pure data parallelism only), and has no reshard_after_forward;
 * Megatron-LM runs HSDP through Megatron-FSDP
 * (--num-distributed-optimizer-instances) and always reshards after the
 * forward (launch_megatron_fsdp.h, apsolve_hsdp_frameworks). */
static void hsdp_limits(RepLaunch *L, Notes *N)
{
    if (L->rt == REP_RT_DEEPSPEED && L->raf_off) {
        L->changed = 1;
        note(N, "DeepSpeed's stage 3 has no reshard_after_forward (raf=0): it gathers each "
                "module again for the backward");
        L->raf_off = 0;
    }
    if (L->rt == REP_RT_DEEPSPEED && L->dp_shard > 0 && L->tp > 1) {
        L->changed = 1;
        note(N, "DeepSpeed's HSDP (MiCS, mics_shard_size) shards over consecutive global ranks, "
                "which tp %d interleaves: ZeRO-3 over all %d data-parallel ranks instead", L->tp,
             L->dp);
        L->dp_shard = 0;
    }
    if (L->rt == REP_RT_MEGATRON && L->raf_off) {
        L->changed = 1;
        note(N, "Megatron-FSDP has no reshard_after_forward (raf=0): it releases each "
                "transformer layer's gathered parameters after its forward and gathers them "
                "again for the backward");
        L->raf_off = 0;
    }
}

/* The plan's recompute_layers (apsolve --parallel, docs/variants.md,
 * "Partial recomputation") in transformer layers: apsolve counts approf
 * layers of each model chunk, Megatron-LM the layers of its
 * TransformerBlock, one chunk (megatron/core/recompute.py, 'block').
 * 0 with a note when the approf layers do not hold whole blocks alike. */
static int recompute_layers(const ApreportReport *r, const RepLaunchBasics *b, Notes *N)
{
    int k = r->opts.layout.recompute_layers, layers, v = b->v > 1 ? b->v : 1;
    if (!r->opts.has_layout || k <= 0 || b->variant.recompute != COSTDB_RECOMPUTE_FULL ||
        r->n_stages == 0)
        return 0;
    layers = r->stages[0].st.end_layer - r->stages[0].st.start_layer + 1;
    if (!b->blocks_known || !b->blocks_equal || layers % v || b->blocks[0] % layers) {
        note(N, "the plan recomputes the first %d layers of each chunk, whose transformer "
                "layers are not known alike (%s): every layer recomputed instead", k,
             b->blocks_known ? "the stages' layers hold unequal blocks" : b->blocks_why);
        return 0;
    }
    return k * (b->blocks[0] / layers);
}

/* Activation offload as the plan gives it (solver/activation_offload.h):
 * Megatron-LM writes it (--cpu-offloading-num-layers, export.c); DeepSpeed
 * v0.16.4's activation_checkpointing.cpu_checkpointing moves the inputs
 * of checkpointed layers to the CPU under recomputation, not a layer's
 * saved activations, and torchtitan v0.2.2 has no activation offload: the
 * closest plan keeps them on the device. */
static void offload_limits(const ApreportReport *r, RepLaunch *L, Notes *N)
{
    if (!r->opts.has_layout || r->opts.layout.offload <= 0 || r->n_stages < 1)
        return;
    L->offload = r->opts.layout.offload;
    L->offload_layers = r->stages[0].st.end_layer - r->stages[0].st.start_layer + 1;
    if (L->rt == REP_RT_MEGATRON)
        return;
    L->changed = 1;
    note(N, "%s", L->rt == REP_RT_DEEPSPEED
                      ? "DeepSpeed cannot offload saved activations to host memory (offload=N): "
                        "its cpu_checkpointing moves the inputs of checkpointed layers under "
                        "activation checkpointing, another mechanism; they stay on the device"
                      : "torchtitan has no activation offload to host memory (offload=N; its "
                        "enable_cpu_offload is FSDP2's of parameters, gradients and optimizer "
                        "state): they stay on the device");
    L->offload = 0;
}

/* A sweep priced with Megatron-Core's fused gated activation
 * (--activation-fusion: fused_bias_swiglu.py's SwiGLUFunction keeps only
 * the fc1 output, docs/models.md): torchtitan's and the Hugging Face
 * models DeepSpeed trains run `w2(silu(w1(x)) * w3(x))` eagerly and keep
 * the activation's output too, a third more of the MLP's saved
 * activations than priced. Megatron fuses by default (no
 * --no-bias-swiglu-fusion written). */
static void activation_fusion_limits(const ApreportReport *r, const RepLaunch *L, Notes *N)
{
    if (L->rt == REP_RT_MEGATRON || !strstr(r->sweep.options, "\"activation_fusion\":1"))
        return;
    note(N, "priced with Megatron-Core's fused SwiGLU (approf sweep --activation-fusion: the MLP "
            "keeps gate and up only); %s's MLP also keeps the activation's output (1.5x the "
            "MLP's saved activations): sweep without --activation-fusion to price this "
            "framework's memory",
         rt_names[L->rt]);
}

static void runtime_limits(RepLaunch *L, Notes *N)
{
    int rt = L->rt;
    /* torchtitan's every-N-th layer (selective_ac_option = "N") wraps the
     * blocks whose count on the rank is a multiple of N
     * (torchtitan/distributed/activation_checkpoint.py `_apply_layer_sac`
     * at v0.2.2, a counter over every model part of the rank), never the
     * first K; DeepSpeed's activation checkpointing has no such number */
    if (rt != REP_RT_MEGATRON && L->recompute_layers > 0) {
        L->changed = 1;
        note(N, "%s cannot express recomputing only the first %d transformer %s of each "
                "model chunk%s: every layer recomputed (full) instead", rt_names[rt],
             L->recompute_layers, L->recompute_layers == 1 ? "layer" : "layers",
             rt == REP_RT_TORCHTITAN
                 ? " (its selective_ac_option = \"N\" checkpoints every N-th block of a rank, "
                   "counted across its model chunks)" : "");
        L->recompute_layers = 0;
    }
    /* DeepSpeed's config has no context parallelism (its Ulysses sequence
     * parallelism is Megatron-DeepSpeed's, outside the config); the closest
     * plan is the layout the cp plan was priced from, data parallelism over
     * dp x cp with 1/cp of the accumulation steps (docs/context-parallel.md) */
    /* torchtitan all-gathers the K/V shards (its default
     * context_parallel_rotate_method) or passes them on: the ring and
     * all_gather, not the all-to-alls (apsolve_cp_frameworks) */
    if (rt == REP_RT_TORCHTITAN && L->cp > 1 && strcmp(L->cp_comm, "p2p") &&
        strcmp(L->cp_comm, "all_gather")) {
        L->changed = 1;
        note(N, "torchtitan's context parallelism is ring attention (K/V shards all-gathered or "
                "passed on), not the all-to-alls of %s: its ring instead", L->cp_comm);
        L->cp_comm = "p2p";
    }
    if (rt == REP_RT_DEEPSPEED && L->cp > 1 && L->B % L->cp == 0) {
        L->changed = 1;
        note(N, "DeepSpeed cannot express context parallelism (cp %d, %s): data parallelism "
                "over dp x cp = %d with %d accumulation steps instead, the layout whose entries "
                "the plan was priced from", L->cp, L->cp_comm, L->dp * L->cp, L->B / L->cp);
        L->dp *= L->cp;
        L->B /= L->cp;
        L->cp = 1;
    } else if (rt == REP_RT_DEEPSPEED && L->cp > 1 && L->B > 0) {
        /* micro-batches cp does not divide (a global batch of fewer
         * sequences than dp x cp x mbs: docs/context-parallel.md): no data
         * parallelism over dp x cp runs the plan's batch; the closest runs
         * whole micro-batches of that layout, the batch raised to them */
        int b = (L->B + L->cp - 1) / L->cp;
        int64_t g = L->global / L->B * L->cp * b;
        L->changed = 1;
        note(N, "DeepSpeed cannot express context parallelism (cp %d, %s), and the plan's %d "
                "micro-%s (%lld %s each) do not split into data parallelism over dp x cp = %d "
                "replicas: %d accumulation %s of that layout, the one the plan was priced "
                "from, instead, at a global batch of %lld, not %lld", L->cp, L->cp_comm, L->B,
             L->B == 1 ? "batch" : "batches", (long long)(L->global / L->B),
             L->global / L->B == 1 ? "sequence" : "sequences", L->dp * L->cp, b,
             b == 1 ? "step" : "steps", (long long)g, (long long)L->global);
        L->dp *= L->cp;
        L->B = b;
        L->cp = 1;
        L->global = g;
    }
    /* DeepSpeed's MoE layer (v0.16.4: deepspeed/moe/layer.py, utils/groups.py
     * _create_expert_data_and_model_parallel) takes its ep_size ranks from
     * the data-parallel group (ep_size divides dp under Megatron-DeepSpeed's
     * mpu) and splits the experts over the tp ranks as the dense layers
     * (enable_expert_tensor_parallelism) or not at all: experts folded over
     * tp ranks (Megatron-Core's etp < tp) are not expressible */
    if (rt == REP_RT_DEEPSPEED && L->ep > 1 &&
        (L->dp % L->ep || (L->tp > 1 && L->etp != L->tp))) {
        L->changed = 1;
        note(N, "DeepSpeed's MoE layer takes ep_size ranks of the %d data-parallel ones and "
                "splits the experts over all tp %d ranks or none: it cannot run experts on ep %d "
                "x etp %d as priced; ep_size 1 (experts data parallel) instead", L->dp, L->tp,
             L->ep, L->etp);
        L->ep = 1;
        L->etp = L->tp;
    }
    hsdp_limits(L, N);
    if (rt == REP_RT_MEGATRON && L->sched == APREPORT_SCHED_GPIPE) {
        L->changed = 1;
        note(N, "Megatron-LM cannot express the GPipe schedule: 1F1B instead");
        L->sched = APREPORT_SCHED_1F1B;
    }
    /* docs/solver.md, "Which frameworks run a plan" */
    if (rt == REP_RT_MEGATRON && L->pp > 1 && apsolve_schedule_zero_bubble((int)L->sched)) {
        L->changed = 1;
        note(N, "Megatron-LM cannot express the %s schedule (it has no zero-bubble pipeline "
                "schedule): 1F1B instead", sched_label(L->sched));
        L->sched = APREPORT_SCHED_1F1B;
    }
    if (rt == REP_RT_TORCHTITAN && L->pp > 1 &&
        (L->sched == APREPORT_SCHED_ZB_H1 ||
         (L->sched == APREPORT_SCHED_INTERLEAVED_ZB && L->v < 2))) {
        L->changed = 1;
        note(N, "torchtitan cannot express the zero-bubble ZB-H1 schedule on one stage per "
                "rank (InterleavedZeroBubble and ZBVZeroBubble take 2 or more): 1F1B instead");
        L->sched = APREPORT_SCHED_1F1B;
    }
    if (rt == REP_RT_DEEPSPEED && L->pp > 1 && L->variant.zero >= 2) {
        L->changed = 1;
        note(N, "DeepSpeed's pipeline engine cannot express ZeRO-%d with pipeline parallelism "
                "(stage 0 or 1 only): ZeRO-1 instead", L->variant.zero);
        L->variant.zero = 1;
    }
    if (rt == REP_RT_DEEPSPEED && L->pp > 1 && L->sched != APREPORT_SCHED_1F1B) {
        L->changed = 1;
        note(N, "DeepSpeed's pipeline engine cannot express the %s schedule (it runs its own "
                "1F1B): 1F1B instead", sched_label(L->sched));
        L->sched = APREPORT_SCHED_1F1B;
    }
    if (rt == REP_RT_DEEPSPEED && L->variant.recompute == COSTDB_RECOMPUTE_SELECTIVE) {
        L->changed = 1;
        note(N, "DeepSpeed's activation checkpointing cannot express selective recomputation "
                "(it checkpoints whole layers): full instead");
        L->variant.recompute = COSTDB_RECOMPUTE_FULL;
    }
    /* torchtitan's per-op policy (recompute op, docs/variants.md): the
     * others recompute whole layers or whole modules */
    if ((rt == REP_RT_DEEPSPEED || rt == REP_RT_MEGATRON) &&
        L->variant.recompute == COSTDB_RECOMPUTE_OP) {
        L->changed = 1;
        note(N, "%s cannot express torchtitan's per-op recomputation (it recomputes whole %s): "
                "full instead", rt_names[rt], rt == REP_RT_DEEPSPEED ? "layers" : "modules");
        L->variant.recompute = COSTDB_RECOMPUTE_FULL;
    }
    /* torchtitan's selective modes are per-op or every n-th layer
     * (activation_checkpoint.selective_ac_option): Megatron's attention
     * core alone is none of them; the per-op policy keeps less */
    if (rt == REP_RT_TORCHTITAN && L->variant.recompute == COSTDB_RECOMPUTE_SELECTIVE) {
        L->changed = 1;
        note(N, "torchtitan cannot express selective recomputation of the attention core (its "
                "selective modes are per-op or every n-th layer): its per-op policy (recompute "
                "op) instead");
        L->variant.recompute = COSTDB_RECOMPUTE_OP;
    }
    if (rt == REP_RT_TORCHTITAN && L->variant.zero == 1) {
        L->changed = 1;
        note(N, "torchtitan cannot express ZeRO-1 (FSDP shards gradients too): ZeRO-2, FSDP "
                "without resharding after the forward, instead");
        L->variant.zero = 2;
    }
    if (rt == REP_RT_TORCHTITAN && L->variant.zero == 0 && L->dp > 1 && (L->tp > 1 || L->pp > 1)) {
        L->changed = 1;
        note(N, "torchtitan refuses plain data parallelism (DDP) with tensor or pipeline "
                "parallelism (\"DDP has not supported > 1D parallelism\"): ZeRO-2, FSDP "
                "without resharding after the forward, instead of ZeRO-0");
        L->variant.zero = 2;
    }
    if (rt == REP_RT_TORCHTITAN && L->variant.zero == 0 && L->ep > 1) {
        L->changed = 1;
        note(N, "torchtitan builds expert parallelism inside FSDP's data-parallel shards: "
                "ZeRO-2, FSDP without resharding after the forward, instead of ZeRO-0");
        L->variant.zero = 2;
    }
    if (rt == REP_RT_TORCHTITAN && L->prec && L->prec[0] == 'f') {
        L->changed = 1;
        note(N, "torchtitan's mixed_precision_param takes bfloat16 or float32 only: bfloat16 "
                "instead of float16 (the GPUs must support bfloat16; V100 does not)");
        L->prec = "bf16";
    }
    if (rt == REP_RT_TORCHTITAN && L->prec && L->dp == 1 && (L->tp > 1 || L->pp > 1))
        note(N, "torchtitan applies mixed precision through FSDP or under DDP or one device "
                "only: with tensor or pipeline parallelism and no data parallelism it trains "
                "in float32 and mixed_precision_param has no effect");
}

/* A uniform plan whose stages hold unequal blocks: Megatron-LM states the
 * first and last stage's blocks (--decoder-first/last-pipeline-num-layers)
 * when the stages between agree and there is no interleaving; the others
 * split the blocks evenly, which the file says. */
static void uneven_blocks(const ApreportReport *r, const RepLaunchBasics *b, RepLaunch *L,
                          Notes *N)
{
    size_t pos = 0, n = r->n_stages;
    L->blocks_uneven = 1;
    L->blocks_first = b->blocks[0];
    L->blocks_last = b->blocks[n - 1];
    L->blocks_mid = n > 2 ? b->blocks[1] : -1;
    for (size_t k = 0; k < n; k++) {
        if (k > 0 && k + 1 < n && b->blocks[k] != L->blocks_mid)
            L->blocks_mid = -1;
        if (pos < sizeof(L->blocks_list))
            pos += (size_t)snprintf(L->blocks_list + pos, sizeof(L->blocks_list) - pos, "%s%d",
                                    k ? ", " : "", b->blocks[k]);
    }
    if (L->rt == REP_RT_MEGATRON && L->v == 1 && (n == 2 || L->blocks_mid > 0))
        return;
    L->changed = 1;
    note(N, "%s splits the %d blocks evenly over the stages; this plan's stages hold %s",
         rt_names[L->rt], L->blocks_total, L->blocks_list);
}

/* The file's price line: the plan's own T (and full estimate) when the
 * runtime runs it as priced, else the closest plan's, priced when the
 * report was loaded (rep_closest_price); *t2 that T (NaN when unknown). */
static void price_text(const ApreportReport *r, const RepLaunch *L, int uni, char *out,
                       size_t len, double *t2)
{
    const RepClosest *c = &r->closest;
    *t2 = NAN;
    if (!L->changed && !L->repriced) {
        *t2 = r->plan.cost;
        if (isfinite(r->plan.full_cost) && r->plan.full_cost > 0)
            snprintf(out, len, "estimated iteration time (the plan's): T = %.6f s, full estimate "
                               "%.6f s", r->plan.cost, r->plan.full_cost);
        else
            snprintf(out, len, "estimated iteration time (the plan's): T = %.6f s", r->plan.cost);
        return;
    }
    int si = L->sched == r->schedule ? 0 : 1;
    if (c->have && c->priced[si][L->variant.recompute][L->variant.zero] &&
        (uni || (L->dp == c->logical_a && L->tp == c->logical_b && L->pp == c->pp))) {
        double t = c->cost[si][L->variant.recompute][L->variant.zero];
        if (isfinite(t)) {
            const ApsolveFwVerdict *v = &c->fw[si][L->variant.recompute][L->variant.zero];
            *t2 = t;
            snprintf(out, len, "estimated iteration time of this %s: T = %.6f s, objective "
                               "%.6f s%s (the plan: T = %.6f s)%s%s",
                     L->changed ? "closest plan" : "plan", t,
                     c->total[si][L->variant.recompute][L->variant.zero],
                     c->feasible[si][L->variant.recompute][L->variant.zero] ? ""
                                                                            : ", INFEASIBLE (memory)",
                     r->plan.cost, (v->runs >> L->rt) & 1u ? "" : "; not exact either: ",
                     (v->runs >> L->rt) & 1u ? "" : v->why[L->rt]);
        } else {
            snprintf(out, len, "estimated iteration time of this %s: unknown, the sweep has "
                               "no entry for its layout or variant (the plan: T = %.6f s)",
                     L->changed ? "closest plan" : "plan", r->plan.cost);
        }
    } else {
        snprintf(out, len, "estimated iteration time of this %s: unknown (%s) (the plan: "
                           "T = %.6f s)", L->changed ? "closest plan" : "plan",
                 c->why[0] ? c->why : "not priced", r->plan.cost);
    }
}

void rep_launch_of(const ApreportReport *r, int rt, RepLaunch *L)
{
    const char *name = rt_names[rt];
    int uni = rep_plan_uniform(r);
    RepLaunchBasics b;
    Notes N;
    memset(L, 0, sizeof(*L));
    memset(&N, 0, sizeof(N));
    rep_launch_basics(r, &b);
    L->rt = rt;
    L->hosts = r->sweep.cluster_hosts;
    L->gpus = r->sweep.cluster_gpus;
    L->sched = r->schedule;
    L->v = b.v;
    layout_of(r, &b, L, &N);
    L->variant = b.variant;
    L->prec = b.prec;
    if (b.variants_differ) {
        L->changed = 1;
        note(&N, "%s cannot set recomputation or ZeRO per stage and the stages differ: the most "
                 "conservative (recompute %s, ZeRO %d) on every stage", name,
             costdb_recompute_name(b.variant.recompute), b.variant.zero);
    }
    expert_parallel(r, &L->ep, &L->etp, &L->experts);
    if (r->opts.has_layout && b.variant.zero == 3) { /* HSDP, raf=0 as the plan gives them */
        L->dp_shard = r->opts.layout.dp_shard;
        L->raf_off = r->opts.layout.raf_off;
    }
    if (rt == REP_RT_MEGATRON && L->variant.zero == 3) {
        char why[160];
        if ((L->fsdp_unit = rep_megatron_fsdp_unit(r, why, sizeof why)) == 0) {
            L->changed = 1;
            note(&N, "Megatron-FSDP's unit size is not known (%s): its default windows "
                     "(5e8 elements gathered ahead) instead of FSDP2's one layer", why);
        }
    }
    L->recompute_layers = recompute_layers(r, &b, &N);
    offload_limits(r, L, &N);
    activation_fusion_limits(r, L, &N);
    L->B = b.B; /* before runtime_limits: DeepSpeed's closest plan to cp changes it */
    L->global = b.global; /* and the batch, when cp does not divide B */
    runtime_limits(L, &N);
    if (L->sched != APREPORT_SCHED_INTERLEAVED && L->sched != APREPORT_SCHED_INTERLEAVED_ZB &&
        L->sched != APREPORT_SCHED_ZBV)
        L->v = 1;
    if (L->pp == 1 && L->sched != APREPORT_SCHED_1F1B) {
        L->sched = APREPORT_SCHED_1F1B;
        L->v = 1;
    }
    if (!b.variants_known)
        note(&N, "the sweep's configs of some stages are unknown: no recomputation or ZeRO "
                 "assumed for them");
    if (L->tp > 1) {
        /* A framework's tensor parallelism splits every weight matrix over
         * the tp ranks: a plan priced with some whole is not run as priced. */
        size_t weights, whole = tp_whole_weights(r, &weights);
        if (whole) {
            L->changed = 1;
            note(&N, "the plan was priced with %zu of its %zu weight matrices whole on every "
                     "device of the tp axis (the sharding ILP's layout); %s's tensor parallelism "
                     "splits them %d ways, so the run holds less memory and pays other "
                     "collectives than priced: the plan below is priced at the memory level "
                     "that splits them, where the sweep has one (approf sweep --memory-levels 3 "
                     "or --variants all profiles them)", whole, weights, name, L->tp);
        }
    }
    L->sp = (b.sp_knob || b.seq_split) && L->tp > 1;
    /* the verdict's rule (apsolve_frameworks): priced without the sequence
     * split, whether or not the plan records sp=1 */
    if (rt == REP_RT_MEGATRON && L->ep > 0 && L->tp > 1 && !b.seq_split) {
        L->sp = 1;
        L->changed = 1;
        note(&N, "Megatron-LM's MoE layer refuses tensor parallelism without sequence "
                 "parallelism in training: --sequence-parallel is set, the plan was priced "
                 "without it");
    }
    rep_model_shape(r, &L->model);
    L->mbs = L->global / L->B / (L->dp > 0 ? L->dp : 1);
    /* torchtitan: one step of a replica; without a pipeline it accumulates
     * global / (local x dp) steps, with one its micro-batches are local / mbs */
    L->local = L->pp > 1 ? L->mbs * L->B : L->mbs;
    if (L->global % ((int64_t)L->B * (L->dp > 0 ? L->dp : 1)))
        note(&N, "the global batch %lld is not a multiple of micro-batches x data parallel size "
                 "(%d x %d): the micro-batch size is rounded down", (long long)L->global, L->B,
             L->dp);
    if (b.blocks_known) {
        L->blocks_known = 1;
        L->blocks_total = b.blocks_total;
        L->blocks_equal = b.blocks_equal;
        L->blocks0 = b.blocks[0];
        if (!uni) {
            L->blocks_equal = L->pp > 0 && L->blocks_total % L->pp == 0;
            L->blocks0 = L->pp > 0 ? L->blocks_total / L->pp : 0;
        } else if (!b.blocks_equal) {
            uneven_blocks(r, &b, L, &N);
        }
    } else if ((L->blocks_total = rep_total_blocks(r)) > 0) {
        /* a block split between the plan's stages: the runtime splits the
         * model's blocks evenly over its stages */
        L->blocks_known = 1;
        L->blocks_equal = L->pp > 0 && L->blocks_total % L->pp == 0;
        L->blocks0 = L->pp > 0 ? L->blocks_total / L->pp : 0;
        if (!L->changed)
            note(&N, "%s; %s splits the model's %d transformer blocks evenly", b.blocks_why, name,
                 L->blocks_total);
    } else {
        L->blocks_total = 0;
        note(&N, "transformer blocks unknown (%s): set the layer counts to the model's",
             b.blocks_why);
    }
    rep_launch_basics_free(&b);

    {
        /* the schedule the plan was priced with (apsolve stores it; 1F1B
         * before it did): reported under another, it is priced anew */
        int stored = APREPORT_SCHED_1F1B, stored_v = r->opts.virtual_stages;
        if (apsolve_schedule_parse(r->opts.schedule) >= 0)
            stored = apsolve_schedule_parse(r->opts.schedule);
        if (!L->changed && uni &&
            (stored != (int)r->schedule ||
             ((r->schedule == APREPORT_SCHED_INTERLEAVED ||
               r->schedule == APREPORT_SCHED_INTERLEAVED_ZB) &&
              stored_v != r->virtual_stages))) {
            L->repriced = 1;
            note(&N, "the plan was priced under %s; reported under %s, it is priced anew",
                 sched_label((ApreportScheduleKind)stored), sched_label(r->schedule));
        }
    }
    /* the header */
    char price[REP_LAUNCH_LINE_LEN];
    double t2;
    ApsolveFwVerdict fw;
    if (!r->plan.feasible)
        rep_launch_line(L, "%s", rep_infeasible_text(r));
    rep_launch_line(L, "%s launch configuration of plan %lld of %s (sweep %lld), written by "
                       "apreport.", name, (long long)r->plan.id, r->db_label,
                    (long long)r->sweep.id);
    rep_launch_line(L, "checked against %s", rt == REP_RT_MEGATRON ? REP_MEGATRON_VERSION
                                             : rt == REP_RT_DEEPSPEED ? REP_DEEPSPEED_VERSION
                                                                      : REP_TORCHTITAN_VERSION);
    /* the plan's verdict (rep_frameworks: the one rule apsolve stores) */
    rep_frameworks(r, &fw);
    if (!((fw.runs >> rt) & 1u))
        L->changed = 1;
    price_text(r, L, uni, price, sizeof(price), &t2);
    if (!((fw.runs >> rt) & 1u)) {
        rep_launch_line(L, "NOTE: %s cannot express this plan as priced: the %s plan %lld "
                           "(T = %.6f s) is not expressible in %s because %s", name,
                        r->plan.kind, (long long)r->plan.id, r->plan.cost, name,
                        fw.why[rt][0] ? fw.why[rt] : "of the notes below");
        if (isfinite(t2))
            rep_launch_line(L, "this file runs the closest plan %s can run, priced by apsolve's "
                               "evaluation at T = %.6f s:", name, t2);
        else
            rep_launch_line(L, "this file runs the closest plan %s can run (its price: see "
                               "below):", name);
    } else if (L->changed) {
        rep_launch_line(L, "NOTE: %s cannot express this plan as priced; below is the closest "
                           "plan it can run:", name);
    } else {
        rep_launch_line(L, "%s runs this plan%s:", name, L->repriced ? "" : " as priced");
    }
    for (int i = 0; i < N.n; i++)
        rep_launch_line(L, "- %s", N.text[i]);
    {
        char sl[48], rec[96], off[80] = "";
        int offl = rep_megatron_offload_layers(L);
        if (L->v > 1)
            snprintf(sl, sizeof(sl), "interleaved 1F1B (%d chunks per stage)", L->v);
        else
            snprintf(sl, sizeof(sl), "%s", sched_label(L->sched));
        if (L->recompute_layers > 0) /* Megatron's block method (launch.h) */
            snprintf(rec, sizeof rec, "full on the first %d transformer %s of each chunk",
                     L->recompute_layers, costdb_plural(L->recompute_layers, "layer", "layers"));
        else
            snprintf(rec, sizeof rec, "%s", costdb_recompute_name(L->variant.recompute));
        if (offl > 0)
            snprintf(off, sizeof off, ", activation offload of the first %d transformer %s", offl,
                     costdb_plural(offl, "layer", "layers"));
        rep_launch_line(L, "layout: dp %d x tp %d x pp %d on %d x %d GPUs, %s, micro-batch %lld "
                           "per replica x %d %s = global batch %lld, recompute %s%s, "
                           "ZeRO %d, %s", L->dp, L->tp, L->pp, L->hosts, L->gpus, sl,
                        (long long)L->mbs, L->B,
                        costdb_plural(L->B, "micro-batch", "micro-batches"), (long long)L->global,
                        rec, off, L->variant.zero, L->prec ? L->prec : "fp32");
    }
    rep_launch_line(L, "%s", price);
}
