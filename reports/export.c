/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The launch files of a stored plan (docs/reports.md "Launch the plan",
 * docs/export-megatron.md, docs/export-deepspeed.md,
 * docs/export-torchtitan.md): Megatron-LM / NeMo arguments
 * (<name>_megatron.args, one argument per line, shell-quoted, '#'
 * comments), a DeepSpeed JSON config (<name>_deepspeed.json) and a
 * torchtitan TOML job config (<name>_torchtitan.toml), each written from
 * the one launch derivation (reports/launch.c: layout, batch, variant,
 * what the runtime cannot express and the closest plan) and the model's
 * shape (reports/launch_model.c), and each naming the framework version
 * its keys and rules were checked against (reports/manifests/). A value
 * the database cannot give is a '# UNKNOWN <flag>: <why>' line the
 * manifest checker (tests/reports/check_launch.py) reports. Every string
 * goes through its format's writer: shell words (rep_sh_word), JSON
 * strings (rep_json_string), TOML strings (rep_toml_string); comments
 * quote database text with rep_py_text, which never lets a newline end a
 * comment.
 */
#include <stdarg.h>
#include <string.h>

#include "collective.h"
#include "costdb_text.h"
#include "export_fp8.h"
#include "export_nemo.h"
#include "launch.h"
#include "launch_megatron_fsdp.h"

static void comment_header(const RepLaunch *L, FILE *f)
{
    for (int i = 0; i < L->n_lines; i++) {
        fputs("# ", f);
        rep_py_text(f, L->lines[i]);
        fputc('\n', f);
    }
}

static int refuse(const ApreportReport *r)
{
    return !r || !r->n_stages || (!r->plan.feasible && !r->allow_infeasible);
}

/* One argument line: the flag and, when given, its value as a shell word. */
static void arg(FILE *f, const char *flag, const char *value)
{
    rep_sh_word(f, flag);
    if (value) {
        fputc(' ', f);
        rep_sh_word(f, value);
    }
    fputc('\n', f);
}

static void arg_int(FILE *f, const char *flag, long long v)
{
    char b[32];
    snprintf(b, sizeof(b), "%lld", v);
    arg(f, flag, b);
}

/* A value the database cannot give: a marked comment instead of the
 * argument (the checker reports it). */
static void unknown(FILE *f, const char *what, const char *why)
{
    fprintf(f, "# UNKNOWN %s: ", what);
    rep_py_text(f, why);
    fputc('\n', f);
}

/* Activation offload as priced (solver/activation_offload.h): Megatron-Core
 * core_v0.19.0 turns cpu_offloading on when --cpu-offloading-num-layers is
 * above 0 (megatron/training/arguments.py; --cpu-offloading itself is not
 * a flag: _add_network_size_args excludes it) and counts transformer
 * layers, which an approf layer may hold several of. */
int rep_megatron_offload_layers(const RepLaunch *L)
{
    if (L->offload <= 0)
        return 0;
    if (L->blocks_known && L->blocks_equal && L->offload_layers > 0 &&
        L->blocks0 % L->offload_layers == 0)
        return L->offload * (L->blocks0 / L->offload_layers);
    return -1;
}

static void megatron_offload(const RepLaunch *L, FILE *f)
{
    int n = rep_megatron_offload_layers(L);
    if (n > 0)
        arg_int(f, "--cpu-offloading-num-layers", n);
    else if (n < 0)
        unknown(f, "--cpu-offloading-num-layers", "the transformer blocks of the offloaded "
                "approf layers are not known evenly for this plan");
}

/* The facts a file's checker needs and the file cannot hold (the world
 * size, the model's blocks), as one comment line. */
/* An ep plan priced through Megatron-Core's all-to-all token dispatcher
 * (its stored options' ep, solver/expert_parallel.c); a plan whose ep is
 * read from the placements was priced by the sharding ILP's own
 * resharding, which either of Megatron's dispatchers can stand for. */
static int ep_dispatcher_priced(const ApreportReport *r, const RepLaunch *L)
{
    return r->opts.has_layout && r->opts.layout.ep > 1 && L->ep > 1;
}

static void context_text(const ApreportReport *r, const RepLaunch *L, char *out, size_t len)
{
    int fp8 = rep_fp8_of(r);
    int at = snprintf(out, len, "launch context: nodes=%d gpus_per_node=%d world_size=%d tp=%d "
                                "pp=%d layers=%d", L->hosts, L->gpus, L->hosts * L->gpus, L->tp,
                      L->pp, L->blocks_known ? L->blocks_total : 0);
    /* a mixture of experts: what DeepSpeed's MoE layer is built with, which
     * its config cannot hold (the manifest's MoE rules) */
    if (L->experts > 0 && at > 0 && (size_t)at < len)
        at += snprintf(out + at, len - (size_t)at, " experts=%d ep=%d etp=%d%s", L->experts,
                       L->ep > 0 ? L->ep : 1, L->etp > 0 ? L->etp : 1,
                       ep_dispatcher_priced(r, L) ? " dispatcher=alltoall" : "");
    /* FP8 training (docs/fp8.md): the manifests' FP8 rules */
    if (fp8 && at > 0 && (size_t)at < len)
        snprintf(out + at, len - (size_t)at, "%s", rep_fp8_context(fp8));
}

/* The capacity factor the sweep's graph was built with
 * (docs/expert-parallel.md, "Capacity and the launch files"): its dispatch
 * holds moe_capacity slots per expert and sample (the model's options,
 * profiler/sweep/sweep_db.c), C = ceil(cf S top_k / E). 0 when dropless
 * (C is the balanced ceil(S top_k / E): Megatron-Core's default, no
 * capacity factor) or unknown. */
static double moe_capacity_factor(const ApreportReport *r, const RepLaunch *L)
{
    long long k = 0, c = 0;
    long long s = L->model.seq, e = L->experts;
    if (!r->has_model || s <= 0 || e <= 0 ||
        costdb_json_member_int(r->model.options, "moe_top_k", &k) ||
        costdb_json_member_int(r->model.options, "moe_capacity", &c) || k <= 0 || c <= 0 ||
        c == (s * k + e - 1) / e)
        return 0;
    return (double)c * (double)e / ((double)s * (double)k);
}

/* The Megatron-LM model shape arguments (docs/export-megatron.md). */
static void megatron_shape(const RepLaunch *L, FILE *f)
{
    const RepModelShape *m = &L->model;
    if (L->blocks_known)
        arg_int(f, "--num-layers", L->blocks_total);
    else
        unknown(f, "--num-layers", "the parameter names show no transformer blocks");
    if (m->hidden)
        arg_int(f, "--hidden-size", m->hidden);
    else
        unknown(f, "--hidden-size", "no token embedding among the placements");
    if (m->ffn)
        arg_int(f, "--ffn-hidden-size", m->ffn);
    else
        unknown(f, "--ffn-hidden-size", "no MLP weight among the placements");
    if (m->heads)
        arg_int(f, "--num-attention-heads", m->heads);
    else
        unknown(f, "--num-attention-heads", m->heads_why);
    if (m->query_groups && m->heads && m->query_groups != m->heads) {
        arg(f, "--group-query-attention", NULL);
        arg_int(f, "--num-query-groups", m->query_groups);
    }
    if (m->seq)
        arg_int(f, "--seq-length", m->seq);
    else
        unknown(f, "--seq-length", "no input_ids among the placements");
    if (m->positions)
        arg_int(f, "--max-position-embeddings", m->positions);
    else
        unknown(f, "--max-position-embeddings", "no sequence length or position table known");
    if (m->vocab)
        arg_int(f, "--vocab-size", m->vocab);
    {
        /* the architecture (reports/launch_arch.c), and what Megatron
         * cannot express of it */
        RepArch a;
        rep_megatron_arch(m, &a);
        for (int i = 0; i < a.n_missing; i++) {
            fputs("# Megatron-LM core_v0.19.0 cannot express ", f);
            rep_py_text(f, a.missing[i]);
            fputc('\n', f);
        }
        for (int i = 0; i < a.n_unwritten; i++) {
            fputs("# not written: ", f);
            rep_py_text(f, a.unwritten[i]);
            fputc('\n', f);
        }
        for (int i = 0; i < a.n_args; i++)
            arg(f, a.args[i].flag, a.args[i].value[0] ? a.args[i].value : NULL);
    }
}

/* Megatron-Core's name of a state dtype of w bytes (the choices of
 * --exp-avg-dtype and --exp-avg-sq-dtype at core_v0.19.0: fp32, fp16,
 * bf16, fp8): 2 bytes as bf16, the width NeMo keeps Adam's state in; NULL
 * for a width it has no dtype of. */
static const char *megatron_state_dtype(double w)
{
    return w <= 0 || w == 4 ? "fp32" : w == 2 ? "bf16" : w == 1 ? "fp8" : NULL;
}

/* Adam's state widths of the hardware row (the spec's optimizer_*
 * fields, costdb_adam_state_bytes) as Megatron-Core's precision-aware
 * optimizer (--use-precision-aware-optimizer, --main-params-dtype,
 * --exp-avg-dtype, --exp-avg-sq-dtype; megatron/training/arguments.py and
 * megatron/core/optimizer/optimizer_config.py at core_v0.19.0, which
 * allow it only with the distributed optimizer): nothing when all are
 * f32, Megatron's default. A main copy as wide as the weights (the
 * weight its own main copy, Apex's store_params off under NeMo) has no
 * flag: --main-params-dtype takes fp32 or fp16, both a separate copy. */
static void megatron_optimizer_state(const ApreportReport *r, const RepLaunch *L, FILE *f)
{
    CostdbFabric fab;
    const char *m1, *m2;
    double model = L->prec ? 2.0 : 4.0;
    if (!r->has_hw)
        return;
    costdb_fabric_from_hardware(&r->hw, &fab);
    if (costdb_adam_state_bytes(&fab.adam, model) == costdb_adam_state_bytes(NULL, model) &&
        (fab.adam.main_param <= 0 || fab.adam.main_param == 4))
        return;
    m1 = megatron_state_dtype(fab.adam.exp_avg);
    m2 = megatron_state_dtype(fab.adam.exp_avg_sq);
    if (!L->variant.zero) {
        fputs("# Megatron-LM core_v0.19.0 cannot express Adam's state narrower than f32 "
              "without the distributed optimizer (--use-precision-aware-optimizer requires "
              "--use-distributed-optimizer); the plan was priced with it\n",
              f);
        return;
    }
    if (!m1 || !m2) {
        fputs("# Megatron-LM core_v0.19.0 cannot express Adam's moments of this width "
              "(--exp-avg-dtype, --exp-avg-sq-dtype: fp32, fp16, bf16, fp8)\n",
              f);
        return;
    }
    if (fab.adam.main_param > 0 && fab.adam.main_param != 4 && model < 4) {
        if (fab.adam.main_param == model) {
            fputs("# Megatron-LM core_v0.19.0 cannot express Adam without a main copy of "
                  "the 16-bit weights (priced so: Apex distributed_fused_adam with "
                  "store_params off, as NeMo runs a bf16 optimizer); --main-params-dtype "
                  "fp32 instead\n",
                  f);
        } else {
            fputs("# Megatron-LM core_v0.19.0 cannot express a main copy of this width "
                  "(--main-params-dtype: fp32, fp16)\n",
                  f);
        }
    }
    arg(f, "--use-precision-aware-optimizer", NULL);
    arg(f, "--main-params-dtype", "fp32");
    arg(f, "--exp-avg-dtype", m1);
    arg(f, "--exp-avg-sq-dtype", m2);
}

int apreport_write_megatron(const ApreportReport *r, FILE *f)
{
    RepLaunch L;
    char ctx[240];
    const char *script;
    int fp8 = rep_fp8_of(r);
    if (refuse(r))
        return r && r->n_stages ? APREPORT_EINFEASIBLE : APREPORT_EINVAL;
    rep_launch_of(r, REP_RT_MEGATRON, &L);
    comment_header(&L, f);
    fputs("# One argument per line, shell-quoted; lines starting with # are comments. Use:\n"
          "#   eval \"set -- $(sed '/^#/d' ", f);
    {
        char file[sizeof(r->name) + 16];
        snprintf(file, sizeof(file), "%s_megatron.args", r->name);
        rep_sh_word(f, file);
    }
    fputs(" | tr '\\n' ' ')\"\n", f);
    script = L.model.family && !strcmp(L.model.family, "bert") ? "pretrain_bert.py"
                                                                : "pretrain_gpt.py";
    if (L.hosts > 1)
        fprintf(f, "#   on each host i of %d: torchrun --nnodes %d --nproc-per-node %d --node-rank i "
                   "--rdzv-backend c10d --rdzv-endpoint HOST0:29500 %s \"$@\" "
                   "<data, tokenizer and optimizer arguments>\n", L.hosts, L.hosts, L.gpus,
                script);
    else
        fprintf(f, "#   torchrun --standalone --nnodes 1 --nproc-per-node %d %s \"$@\" "
                   "<data, tokenizer and optimizer arguments>\n", L.gpus, script);
    fputs("#   (--vocab-size is the model's; with --tokenizer-type NullTokenizer --mock-data it "
          "runs on synthetic data)\n", f);
    context_text(r, &L, ctx, sizeof(ctx));
    fprintf(f, "# %s\n", ctx);
    if (L.model.model && L.model.model[0]) {
        /* the manifest's per-model rules read it (docs/export-megatron.md) */
        fputs("# launch context: model=", f);
        rep_py_text(f, L.model.model);
        fputc('\n', f);
    }
    rep_megatron_fsdp_comments(&L, f);
    rep_nemo_comment(&L, fp8, f);
    if (L.model.preset)
        fprintf(f, "# model shape: the placements' sizes, the heads of zoo preset %s\n",
                L.model.preset);
    else if (L.model.hf)
        fputs("# model shape: the placements' sizes, the heads, key/value heads, rotary base and "
              "context of the sweep's Hugging Face config\n", f);
    if (L.v > 1 && !(L.blocks_known && L.blocks_equal && L.blocks0 % L.v == 0))
        fprintf(f, "# --num-layers-per-virtual-pipeline-stage: the blocks of a stage / %d, "
                   "not a whole number known for this plan\n", L.v);
    arg_int(f, "--tensor-model-parallel-size", L.tp);
    arg_int(f, "--pipeline-model-parallel-size", L.pp);
    if (L.cp > 1) {
        /* docs/context-parallel.md: the plan was priced with this comm type */
        arg_int(f, "--context-parallel-size", L.cp);
        arg(f, "--cp-comm-type", L.cp_comm);
        if (!strcmp(L.cp_comm, "a2a+p2p")) {
            char sizes[32];
            int a = L.cp_a2a > 0 ? L.cp_a2a : 1;
            snprintf(sizes, sizeof sizes, "%d %d", a, L.cp / a);
            fprintf(f, "--hierarchical-context-parallel-sizes %s\n", sizes);
        }
    }
    if (L.v > 1 && L.blocks_known && L.blocks_equal && L.blocks0 % L.v == 0)
        arg_int(f, "--num-layers-per-virtual-pipeline-stage", L.blocks0 / L.v);
    if (L.blocks_uneven && L.v == 1 && (L.pp == 2 || L.blocks_mid > 0)) {
        /* the plan's own split: first and last stage, the rest evenly */
        int mid = L.pp == 2 ? -1 : L.blocks_mid;
        if (L.blocks_first != mid)
            arg_int(f, "--decoder-first-pipeline-num-layers", L.blocks_first);
        if (L.blocks_last != mid)
            arg_int(f, "--decoder-last-pipeline-num-layers", L.blocks_last);
    }
    megatron_shape(&L, f);
    arg_int(f, "--micro-batch-size", L.mbs);
    arg_int(f, "--global-batch-size", L.global);
    if (L.sp)
        arg(f, "--sequence-parallel", NULL);
    if (L.variant.recompute == COSTDB_RECOMPUTE_SELECTIVE) {
        arg(f, "--recompute-granularity", "selective");
    } else if (L.variant.recompute == COSTDB_RECOMPUTE_FULL) {
        /* block: the first N layers of each TransformerBlock (one model
         * chunk) checkpointed, the rest not (megatron/core/recompute.py at
         * core_v0.19.0); uniform 1: every layer its own checkpoint */
        arg(f, "--recompute-granularity", "full");
        arg(f, "--recompute-method", L.recompute_layers > 0 ? "block" : "uniform");
        arg_int(f, "--recompute-num-layers", L.recompute_layers > 0 ? L.recompute_layers : 1);
    }
    if (L.variant.zero)
        arg(f, "--use-distributed-optimizer", NULL);
    rep_megatron_fsdp_args(&L, f, 0); /* ZeRO-2/3, HSDP */
    megatron_offload(&L, f);
    megatron_optimizer_state(r, &L, f);
    if (L.ep > 0) {
        if (L.experts > 0)
            arg_int(f, "--num-experts", L.experts);
        arg_int(f, "--expert-model-parallel-size", L.ep);
        arg_int(f, "--expert-tensor-parallel-size", L.etp);
        if (L.model.topk > 0)
            arg_int(f, "--moe-router-topk", L.model.topk);
        if (L.model.moe_ffn > 0)
            arg_int(f, "--moe-ffn-hidden-size", L.model.moe_ffn);
        /* the dispatcher an ep plan is priced with
         * (solver/expert_parallel.c); Megatron-Core's default is
         * allgather */
        if (ep_dispatcher_priced(r, &L))
            arg(f, "--moe-token-dispatcher-type", "alltoall");
        /* the MoE all-to-all overlap the plan is priced with
         * (solver/expert_parallel.c, apsolve_ep_a2a_hidden): Megatron-LM's
         * flag for TransformerConfig.overlap_moe_expert_parallel_comm */
        if (r->opts.has_layout && r->opts.layout.moe_a2a_overlap)
            arg(f, "--overlap-moe-expert-parallel-comm", NULL);
    }
    if (L.experts > 0) {
        /* a graph built with a capacity factor runs every expert on its
         * padded capacity: Megatron's drop-and-pad (token_dispatcher.py,
         * get_capacity) */
        double cf = moe_capacity_factor(r, &L);
        if (cf > 0) {
            char b[32];
            snprintf(b, sizeof b, "%.6g", cf);
            arg(f, "--moe-expert-capacity-factor", b);
            arg(f, "--moe-pad-expert-input-to-capacity", NULL);
        }
    }
    if (L.prec)
        arg(f, L.prec[0] == 'b' ? "--bf16" : "--fp16", NULL);
    rep_fp8_megatron(&L, fp8, f);
    return ferror(f) ? APREPORT_EIO : 0;
}

static void json_line(FILE *f, int indent, const char *key, int last, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void json_line(FILE *f, int indent, const char *key, int last, const char *fmt, ...)
{
    va_list ap;
    fprintf(f, "%*s", indent, "");
    rep_json_string(f, key);
    fputs(": ", f);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputs(last ? "\n" : ",\n", f);
}

/* The DeepSpeed comment lines beyond the header: where the model
 * parallelism is set, the launcher and its hostfile, the context. */
static void deepspeed_notes(const ApreportReport *r, RepLaunch *L)
{
    char ctx[240];
    int fp8 = rep_fp8_of(r);
    if (L->tp > 1 || L->pp > 1 || L->ep > 0) {
        char b[REP_LAUNCH_LINE_LEN];
        size_t pos = (size_t)snprintf(b, sizeof(b), "the JSON holds no model parallelism:");
        if (L->tp > 1)
            pos += (size_t)snprintf(b + pos, sizeof(b) - pos, " tensor parallel size %d comes "
                                    "from Megatron-DeepSpeed (--tensor-model-parallel-size %d);",
                                    L->tp, L->tp);
        if (L->pp > 1 && pos < sizeof(b))
            pos += (size_t)snprintf(b + pos, sizeof(b) - pos, " pipeline: "
                                    "deepspeed.pipe.PipelineModule(num_stages=%d, "
                                    "partition_method='uniform');", L->pp);
        if (L->ep > 0 && pos < sizeof(b))
            pos += (size_t)snprintf(b + pos, sizeof(b) - pos, " experts: "
                                    "deepspeed.moe.layer.MoE(ep_size=%d%s);", L->ep,
                                    L->tp > 1 && L->etp == L->tp
                                        ? ", enable_expert_tensor_parallelism=True"
                                        : "");
        if (pos < sizeof(b))
            b[pos - 1] = '.';
        rep_launch_line(L, "%s", b);
    }
    if (L->variant.recompute && L->pp == 1)
        rep_launch_line(L, "recomputation: wrap each transformer block's forward in "
                           "deepspeed.checkpointing.checkpoint (the section below configures it)");
    if (L->hosts > 1) {
        rep_launch_line(L, "launch: deepspeed --hostfile hostfile --num_nodes %d --num_gpus %d "
                           "train.py --deepspeed --deepspeed_config %s_deepspeed.json",
                        L->hosts, L->gpus, r->name);
        rep_launch_line(L, "hostfile: one line per host, 'NAME slots=%d' (HOST0 slots=%d ... "
                           "HOST%d slots=%d), reachable by passwordless ssh; without it "
                           "DeepSpeed refuses --num_nodes %d", L->gpus, L->gpus, L->hosts - 1,
                        L->gpus, L->hosts);
    } else {
        rep_launch_line(L, "launch: deepspeed --num_gpus %d train.py --deepspeed "
                           "--deepspeed_config %s_deepspeed.json", L->gpus, r->name);
    }
    rep_fp8_deepspeed_notes(L, fp8);
    context_text(r, L, ctx, sizeof(ctx));
    rep_launch_line(L, "%s", ctx);
}

int apreport_write_deepspeed(const ApreportReport *r, FILE *f)
{
    RepLaunch L;
    int dp;
    if (refuse(r))
        return r && r->n_stages ? APREPORT_EINFEASIBLE : APREPORT_EINVAL;
    rep_launch_of(r, REP_RT_DEEPSPEED, &L);
    dp = L.dp > 0 ? L.dp : 1;
    deepspeed_notes(r, &L);
    fputs("{\n  ", f);
    rep_json_string(f, "_comment");
    fputs(": [\n", f);
    for (int i = 0; i < L.n_lines; i++) {
        fputs("    ", f);
        rep_json_string(f, L.lines[i]);
        fputs(i + 1 < L.n_lines ? ",\n" : "\n", f);
    }
    fputs("  ],\n", f);
    json_line(f, 2, "train_batch_size", 0, "%lld", (long long)(L.mbs * L.B * dp));
    json_line(f, 2, "train_micro_batch_size_per_gpu", 0, "%lld", (long long)L.mbs);
    json_line(f, 2, "gradient_accumulation_steps", 0, "%d", L.B);
    json_line(f, 2, "bf16", 0, "{\"enabled\": %s}", L.prec && L.prec[0] == 'b' ? "true" : "false");
    if (L.prec && L.prec[0] == 'f')
        json_line(f, 2, "fp16", 0, "{\"enabled\": true, \"loss_scale\": 0, "
                                   "\"initial_scale_power\": 16}");
    else
        json_line(f, 2, "fp16", 0, "{\"enabled\": false}");
    /* the reuse distance the plan was priced with (costdb.h) */
    if (L.variant.zero == 3 && L.dp_shard > 0)
        /* HSDP as MiCS: ZeRO-3 within groups of mics_shard_size ranks, the
         * groups replicated (deepspeed/runtime/zero/mics.py, docs/hsdp.md) */
        json_line(f, 2, "zero_optimization", 0,
                  "{\"stage\": 3, \"stage3_max_reuse_distance\": %lld, \"mics_shard_size\": %d}",
                  (long long)COSTDB_ZERO3_MAX_REUSE_DISTANCE, L.dp_shard);
    else if (L.variant.zero == 3)
        json_line(f, 2, "zero_optimization", 0,
                  "{\"stage\": 3, \"stage3_max_reuse_distance\": %lld}",
                  (long long)COSTDB_ZERO3_MAX_REUSE_DISTANCE);
    else
        json_line(f, 2, "zero_optimization", 0, "{\"stage\": %d}", L.variant.zero);
    if (L.pp > 1)
        /* the pipeline engine reads activation_checkpoint_interval (and
         * the partitioning switches); its stages come from PipelineModule */
        json_line(f, 2, "pipeline", 0, "{\"activation_checkpoint_interval\": %d}",
                  L.variant.recompute == COSTDB_RECOMPUTE_FULL ? 1 : 0);
    if (L.variant.recompute)
        json_line(f, 2, "activation_checkpointing", 0,
                  "{\"partition_activations\": %s, \"contiguous_memory_optimization\": false, "
                  "\"cpu_checkpointing\": false, \"number_checkpoints\": null, "
                  "\"synchronize_checkpoint_boundary\": false, \"profile\": false}",
                  L.tp > 1 ? "true" : "false");
    json_line(f, 2, "steps_per_print", 1, "%d", 10);
    fputs("}\n", f);
    return ferror(f) ? APREPORT_EIO : 0;
}

/* torchtitan's launcher lines and the note on its current main. */
static void torchtitan_notes(const ApreportReport *r, RepLaunch *L)
{
    char ctx[240];
    int fp8 = rep_fp8_of(r);
    if (L->sp == 0 && L->tp > 1)
        rep_launch_line(L, "torchtitan's tensor parallelism always shards the norms' activations "
                           "over the sequence (sequence parallelism); the plan was priced "
                           "without it");
    if (L->hosts > 1)
        rep_launch_line(L, "launch: on each host i of %d: torchrun --nnodes %d --nproc_per_node %d "
                           "--node_rank i --rdzv_backend c10d --rdzv_endpoint HOST0:29500 -m "
                           "torchtitan.train --job.config_file %s_torchtitan.toml",
                        L->hosts, L->hosts, L->gpus, r->name);
    else
        rep_launch_line(L, "launch: NGPU=%d CONFIG_FILE=%s_torchtitan.toml ./run_train.sh",
                        L->gpus, r->name);
    rep_launch_line(L, "%s reads Python configs (--module NAME --config FUNCTION), not TOML: "
                       "the same layout as its overrides is the 'main:' block at the end "
                       "(docs/export-torchtitan.md)", REP_TORCHTITAN_MAIN);
    rep_fp8_torchtitan_notes(L, fp8);
    context_text(r, L, ctx, sizeof(ctx));
    rep_launch_line(L, "%s", ctx);
}

static void toml_kv(FILE *f, const char *key, const char *value)
{
    fprintf(f, "%s = ", key);
    rep_toml_string(f, value);
    fputc('\n', f);
}

/* torchtitan's data-parallel degrees: DDP's replicas without ZeRO, FSDP's
 * shards with it, HSDP's dp / dp_shard replicas of dp_shard shards
 * (ParallelDims: dp_replicate x dp_shard; docs/hsdp.md). */
static int titan_shard(const RepLaunch *L)
{
    return !L->variant.zero ? 1 : L->dp_shard > 0 ? L->dp_shard : L->dp;
}

static int titan_replicate(const RepLaunch *L)
{
    return L->dp / titan_shard(L);
}

/* pipeline_parallel_schedule: PyTorch's schedule class names
 * (get_schedule_class), the zero-bubble ones included
 * (docs/export-torchtitan.md). */
static const char *titan_schedule(const RepLaunch *L)
{
    return L->sched == APREPORT_SCHED_GPIPE            ? "GPipe"
           : L->sched == APREPORT_SCHED_INTERLEAVED    ? "Interleaved1F1B"
           : L->sched == APREPORT_SCHED_INTERLEAVED_ZB ? "InterleavedZeroBubble"
           : L->sched == APREPORT_SCHED_ZBV            ? "ZBVZeroBubble"
                                                       : "1F1B";
}

/* [parallelism] of the TOML. */
static void torchtitan_parallelism(FILE *f, const RepLaunch *L)
{
    const char *sched;
    fputs("\n[parallelism]\n", f);
    fprintf(f, "data_parallel_replicate_degree = %d\n"
               "data_parallel_shard_degree = %d\n", titan_replicate(L), titan_shard(L));
    if (L->variant.zero)
        toml_kv(f, "fsdp_reshard_after_forward",
                L->variant.zero == 3 && !L->raf_off ? "always" : "never");
    fprintf(f, "tensor_parallel_degree = %d\n", L->tp);
    fprintf(f, "context_parallel_degree = %d\n", L->cp > 1 ? L->cp : 1);
    /* Megatron's all_gather: K/V shards all-gathered, torchtitan's
     * default rotate method, written as priced */
    if (L->cp > 1 && !strcmp(L->cp_comm, "all_gather"))
        toml_kv(f, "context_parallel_rotate_method", "allgather");
    fprintf(f, "pipeline_parallel_degree = %d\n", L->pp);
    sched = titan_schedule(L);
    if (L->pp > 1) {
        toml_kv(f, "pipeline_parallel_schedule", sched);
        fprintf(f, "pipeline_parallel_microbatch_size = %lld\n", (long long)L->mbs);
        /* the plan's even split of the blocks, embedding and head not
         * counted as layers: (blocks + 0 + 0) / per stage = pp x v stages */
        if (L->blocks_known && L->blocks_total % (L->pp * L->v) == 0) {
            fprintf(f, "pipeline_parallel_layers_per_stage = %d\n",
                    L->blocks_total / (L->pp * L->v));
            fputs("pipeline_parallel_first_stage_less_layers = 0\n"
                  "pipeline_parallel_last_stage_less_layers = 0\n", f);
        } else {
            fprintf(f, "# the blocks (%d) do not split into %d x %d equal stages: torchtitan "
                       "splits them itself\n", L->blocks_total, L->pp, L->v);
        }
    }
    if (L->ep > 0) {
        fprintf(f, "expert_parallel_degree = %d\n", L->ep);
        fprintf(f, "expert_tensor_parallel_degree = %d\n", L->etp == L->tp ? L->tp : 1);
    }
}

/* The layout of the file for torchtitan main, which reads Python config
 * registries: one command-line override per '# main: ' comment line (the
 * manifest torchtitan-main-*.json checks them). main reads the token
 * counts of a micro-batch and of a step where v0.2.2 reads batch sizes. */
static void torchtitan_main(FILE *f, const RepLaunch *L)
{
    const RepModelShape *m = &L->model;
    char cfg[96];
    if (m->titan_config)
        snprintf(cfg, sizeof(cfg), "--module %s --config %s", m->titan_name, m->titan_config);
    else
        snprintf(cfg, sizeof(cfg), "--module NAME --config FUNCTION");
    fprintf(f, "\n# %s: torchrun ... -m torchtitan.train %s (a config registry function of "
               "this model) with the overrides below, one per 'main:' line; recomputation is "
               "the function's activation_checkpoint (FullAC or SelectiveAC config, or None)\n",
            REP_TORCHTITAN_MAIN, cfg);
    fprintf(f, "# main: --parallelism.data_parallel_replicate_degree %d\n"
               "# main: --parallelism.data_parallel_shard_degree %d\n",
            titan_replicate(L), titan_shard(L));
    if (L->variant.zero)
        fprintf(f, "# main: --parallelism.fsdp_reshard_after_forward %s\n",
                L->variant.zero == 3 && !L->raf_off ? "always" : "never");
    if (L->cp > 1)
        fprintf(f, "# main: --parallelism.context_parallel_degree %d\n", L->cp);
    fprintf(f, "# main: --parallelism.tensor_parallel_degree %d\n"
               "# main: --parallelism.pipeline_parallel_degree %d\n", L->tp, L->pp);
    if (L->pp > 1) {
        fprintf(f, "# main: --parallelism.pipeline_parallel_schedule %s\n"
                   "# main: --parallelism.num_pp_microbatches %d\n",
                titan_schedule(L), L->B);
        if (L->blocks_known && L->blocks_total % (L->pp * L->v) == 0)
            fprintf(f, "# main: --parallelism.pipeline_parallel_layers_per_stage %d\n"
                       "# main: --parallelism.pipeline_parallel_first_stage_less_layers 0\n"
                       "# main: --parallelism.pipeline_parallel_last_stage_less_layers 0\n",
                    L->blocks_total / (L->pp * L->v));
    }
    if (L->ep > 0)
        fprintf(f, "# main: --parallelism.expert_parallel_degree %d\n", L->ep);
    if (m->seq) {
        fprintf(f, "# main: --training.num_tokens_per_microbatch_per_dp_rank %lld\n"
                   "# main: --training.num_tokens_per_train_step %lld\n"
                   "# main: --training.max_context_length %d\n",
                (long long)L->mbs * m->seq, (long long)L->global * m->seq, m->seq);
    } else {
        unknown(f, "--training.num_tokens_per_microbatch_per_dp_rank",
                "no input_ids among the placements");
        unknown(f, "--training.max_context_length", "no input_ids among the placements");
    }
    fprintf(f, "# main: --training.mixed_precision_param %s\n", L->prec ? "bfloat16" : "float32");
}

int apreport_write_torchtitan(const ApreportReport *r, FILE *f)
{
    RepLaunch L;
    char desc[REP_LAUNCH_LINE_LEN];
    int fp8 = rep_fp8_of(r);
    if (refuse(r))
        return r && r->n_stages ? APREPORT_EINFEASIBLE : APREPORT_EINVAL;
    rep_launch_of(r, REP_RT_TORCHTITAN, &L);
    if (L.ep > 0 && L.etp != 1 && L.etp != L.tp)
        rep_launch_line(&L, "torchtitan takes expert tensor parallelism 1 or the tensor "
                            "parallel size: 1 instead of %d", L.etp);
    torchtitan_notes(r, &L);
    comment_header(&L, f);
    if (snprintf(desc, sizeof(desc), "approf plan %lld of %s (sweep %lld)",
                 (long long)r->plan.id, r->db_label, (long long)r->sweep.id) >= (int)sizeof(desc))
        desc[sizeof(desc) - 2] = '.'; /* a long database name, cut */
    fputs("\n[job]\n", f);
    toml_kv(f, "description", desc);
    if (L.model.titan_name) {
        fputs("\n[model]\n", f);
        toml_kv(f, "name", L.model.titan_name);
        toml_kv(f, "flavor", L.model.titan_flavor);
        rep_fp8_torchtitan_converters(fp8, f);
    } else {
        fputc('\n', f);
        unknown(f, "[model] name/flavor", L.model.titan_why);
        if (fp8) {
            fputs("[model]\n", f);
            rep_fp8_torchtitan_converters(fp8, f);
        }
    }
    torchtitan_parallelism(f, &L);
    fputs("\n[training]\n", f);
    fprintf(f, "local_batch_size = %lld\nglobal_batch_size = %lld\n", (long long)L.local,
            (long long)L.global);
    if (L.model.seq)
        fprintf(f, "seq_len = %d\n", L.model.seq);
    else
        unknown(f, "[training] seq_len", "no input_ids among the placements");
    toml_kv(f, "mixed_precision_param", L.prec ? "bfloat16" : "float32");
    toml_kv(f, "mixed_precision_reduce", "float32");
    fputs("\n[activation_checkpoint]\n", f);
    toml_kv(f, "mode", L.variant.recompute == COSTDB_RECOMPUTE_FULL ? "full"
                       : L.variant.recompute == COSTDB_RECOMPUTE_OP ? "selective" : "none");
    if (L.variant.recompute == COSTDB_RECOMPUTE_OP)
        toml_kv(f, "selective_ac_option", "op");
    rep_fp8_torchtitan_tables(&L, fp8, titan_shard(&L), f);
    torchtitan_main(f, &L);
    rep_fp8_torchtitan_main(fp8, f);
    return ferror(f) ? APREPORT_EIO : 0;
}

int apreport_export_parse(const char *list, unsigned *out, char *err, size_t errlen)
{
    static const struct { const char *name; unsigned bit; } names[] = {
        {"megatron", APREPORT_EXPORT_MEGATRON}, {"deepspeed", APREPORT_EXPORT_DEEPSPEED},
        {"torchtitan", APREPORT_EXPORT_TORCHTITAN}, {"all", APREPORT_EXPORT_ALL},
        {"none", APREPORT_EXPORT_NONE},
    };
    unsigned bits = 0;
    const char *p = list;
    if (!list || !out)
        return APREPORT_EINVAL;
    for (;;) {
        size_t n = strcspn(p, ","), i;
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (strlen(names[i].name) == n && !strncmp(p, names[i].name, n))
                break;
        if (i == sizeof(names) / sizeof(names[0])) {
            snprintf(err, errlen, "unknown export '%.*s' (megatron, deepspeed, torchtitan, all, "
                     "none)", (int)(n < 40 ? n : 40), p);
            return APREPORT_EINVAL;
        }
        bits |= names[i].bit;
        if (!p[n])
            break;
        p += n + 1;
    }
    if ((bits & APREPORT_EXPORT_NONE) && (bits & APREPORT_EXPORT_ALL)) {
        snprintf(err, errlen, "'none' cannot be combined with a runtime");
        return APREPORT_EINVAL;
    }
    *out = bits;
    return 0;
}
