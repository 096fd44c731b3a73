/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the one launch derivation of a stored plan (reports/launch.c)
 * and the model's shape as the database shows it (reports/launch_model.c).
 * The plan as code (reports/code.c) and the launch files (reports/export.c)
 * read their parallel sizes, batch sizes, precision, recomputation and
 * ZeRO from here, never computing them a second time. Not installed.
 */
#ifndef APREPORT_LAUNCH_H
#define APREPORT_LAUNCH_H

#include "report_int.h"

/* What every framework output of a plan starts from: the uniform layout
 * (stage 0's logical mesh, the stages), the batch split, the precision and
 * the most conservative variant over the stages. */
typedef struct RepLaunchBasics {
    int dp, tp, pp;                   /* stage 0's logical (dp, tp), the stages */
    int v;                            /* interleaved chunks per stage (1 otherwise) */
    int B;                            /* micro-batches (accumulation steps) */
    int64_t global, mbs;              /* global batch, per-replica micro-batch */
    int batch_exact;                  /* global is a multiple of B x dp */
    const char *prec;                 /* "bf16" | "fp16" | NULL (fp32) */
    CostdbVariant variant;            /* the most conservative over the stages whose variant
                                       * is known (costdb_variant_max); plain without one */
    int variants_differ;              /* the stages differ in recompute or ZeRO */
    int variants_known;               /* every stage's variant is known */
    int sp_knob;                      /* the plan records sp=1 (apsolve --parallel) */
    int cp, cp_a2a;                   /* context parallelism (1: none), a2a+p2p's a2a group */
    const char *cp_comm;              /* p2p | a2a | a2a+p2p */
    int seq_split;                    /* a stage's activations are split on the sequence */
    int blocks_known, blocks_total, blocks_equal;
    int *blocks;                      /* [n_stages] blocks per stage (owned; NULL when unknown) */
    char blocks_why[200];             /* why the per-stage blocks are unknown */
} RepLaunchBasics;

/* Fills b from r (any plan; the layout is stage 0's). Owns b->blocks:
 * release with rep_launch_basics_free. Never fails: what cannot be known
 * is said in the fields. */
void rep_launch_basics(const ApreportReport *r, RepLaunchBasics *b);
void rep_launch_basics_free(RepLaunchBasics *b);

/* The model's shape for a launch file: read from the stored placements
 * (the block count, hidden size, vocabulary, sequence length, FFN width,
 * key/value width, learned positions, experts) and, for what placements
 * cannot show (attention heads, router top-k, the architecture), from the
 * zoo preset the sweep recorded (model name and options.preset), accepted
 * only when the preset's hidden size is the placements'. 0 / NULL: unknown,
 * with the reason in the matching why text. */
#define REP_MAX_BLOCKS 256

typedef struct RepModelShape {
    const char *family;               /* "gpt" | "bert" | "llama" (the llama family) | NULL */
    const char *preset;               /* the zoo preset used (NULL: none matched) */
    int layers, hidden, ffn, moe_ffn, heads, query_groups, seq, vocab, positions;
    int experts, topk;
    int qkv_bias;                     /* q/k/v biases (qwen2, starcoder2, gpt_neox) */
    const char *model;                /* the graph's zoo name ("" when none is stored) */
    /* what the placements show of the architecture (0: not seen) */
    int q_width, kv_width, fused_qkv; /* q / k projection widths, a fused q,k,v width */
    int kv_channels;                  /* the head width: q width / heads */
    int lm_head;                      /* an untied output layer (lm_head/kernel) */
    int out_bias, mlp_bias;           /* biases on the attention output / the MLP */
    int shared_ffn;                   /* the shared experts' width (deepseek, llama4) */
    int expert_bias;                  /* a router score correction bias (deepseek_v3) */
    int q_lora, kv_lora, kv_a_width, kv_b_width, o_in; /* MLA projections' widths */
    int moe_blocks_known;             /* every block's index was read */
    char moe_block[REP_MAX_BLOCKS];   /* 1: block i has routed experts */
    double rope_theta;                /* the preset's rotary base (0: unknown) */
    const char *preset_flags;         /* the preset's router / rotary facts as flags */
    int hf;                           /* heads, rotary base, context and top-k from the
                                       * Hugging Face config the sweep stored (no preset) */
    char hf_flags[48];                /* its preset_flags */
    const char *titan_name, *titan_flavor; /* torchtitan's model and flavor (NULL: none) */
    const char *titan_config;         /* torchtitan main's config registry function */
    char heads_why[200];              /* why heads is unknown */
    char titan_why[200];              /* why no torchtitan flavor */
} RepModelShape;

void rep_model_shape(const ApreportReport *r, RepModelShape *m);

/* The Megatron-LM flags that build the model's architecture
 * (reports/launch_arch.c, docs/export-megatron.md "Model architecture"):
 * the flags with their values, what Megatron-LM core_v0.19.0 cannot
 * express of the family, and what it could that the file leaves out, one
 * text each. */
#define REP_ARCH_MAX 32
typedef struct RepArchArg {
    char flag[48];
    char value[REP_MAX_BLOCKS * 2 + 8]; /* "" : a flag without value */
} RepArchArg;
typedef struct RepArch {
    RepArchArg args[REP_ARCH_MAX];
    int n_args;
    char missing[10][260];
    int n_missing;
    const char *unwritten[3];         /* flags it has, left out: the text says why */
    int n_unwritten;
} RepArch;

void rep_megatron_arch(const RepModelShape *m, RepArch *a);
/* Whether model names a decoder of the Llama layout's kind (rotary
 * positions; the llama family and the Hugging Face families with zoo
 * names of their own). */
int rep_megatron_rotary_family(const char *model);

#define REP_LAUNCH_LINES 28
#define REP_LAUNCH_LINE_LEN 480

enum { REP_RT_MEGATRON = 0, REP_RT_DEEPSPEED, REP_RT_TORCHTITAN };

/* What one runtime file states: the layout it runs, its settings, and
 * the header lines (notes, cost) that say how it relates to the plan. */
typedef struct RepLaunch {
    int rt;
    int hosts, gpus;                  /* the cluster */
    int dp, tp, pp, v;                /* v: interleaved chunks per stage (1 otherwise) */
    ApreportScheduleKind sched;
    CostdbVariant variant;            /* the recomputation and ZeRO stage it sets (the memory
                                       * level is the plan's stages', not a setting) */
    int sp, ep, etp, experts;
    int cp, cp_a2a;                   /* context parallelism (1: none), a2a+p2p's a2a group */
    const char *cp_comm;              /* Megatron's --cp-comm-type */
    int dp_shard, raf_off;            /* HSDP's shard group (0: none), FSDP2's
                                       * reshard_after_forward off (docs/hsdp.md) */
    int64_t fsdp_unit;                /* Megatron-FSDP's ZeRO-3: the smallest layer's elements
                                       * per tp rank (launch_megatron_fsdp.h; 0: not known) */
    int recompute_layers;             /* recompute full: the transformer layers of each model
                                       * chunk checkpointed from its start (Megatron's
                                       * --recompute-method block); 0: every layer */
    int offload, offload_layers;      /* activation offload: the first offload of the stage's
                                       * offload_layers approf layers (0: none;
                                       * solver/activation_offload.h) */
    int B;
    int64_t global, mbs, local;       /* mbs: per replica micro-batch; local: per replica step */
    const char *prec;                 /* "bf16" | "fp16" | NULL (fp32) */
    int blocks_known, blocks_total, blocks_equal, blocks0;
    /* the plan's own stages hold unequal blocks (uniform plan): the first
     * and last stage's and, when the stages between agree, theirs (-1:
     * they differ or there are none) */
    int blocks_uneven, blocks_first, blocks_last, blocks_mid;
    char blocks_list[160];            /* "3, 1" */
    int changed;                      /* the closest plan, not the plan as priced */
    int repriced;                     /* the plan under another schedule than it was priced */
    RepModelShape model;
    char lines[REP_LAUNCH_LINES][REP_LAUNCH_LINE_LEN];
    int n_lines;
} RepLaunch;

/* Fills L for runtime rt (REP_RT_*): the layout and settings the file
 * states, and its header lines (what the runtime cannot express and the
 * closest plan, the layout, the estimated time). */
void rep_launch_of(const ApreportReport *r, int rt, RepLaunch *L);
/* Megatron-LM's --cpu-offloading-num-layers for L (reports/export.c):
 * the transformer layers of L's offloaded approf layers; 0 no offload, -1
 * not known evenly. */
int rep_megatron_offload_layers(const RepLaunch *L);
/* Appends one header line to L (dropped when L is full). */
void rep_launch_line(RepLaunch *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The framework versions the launch files were checked against
 * (reports/manifests/, docs/export-*.md). */
#define REP_MEGATRON_VERSION "Megatron-LM core_v0.19.0 (5be9626709af)"
#define REP_DEEPSPEED_VERSION "DeepSpeed v0.16.4 (e2dc3eeb1923)"
#define REP_TORCHTITAN_VERSION "torchtitan v0.2.2 (73a0e6979dd1), the last release that reads TOML"
#define REP_TORCHTITAN_MAIN "torchtitan main b5bcd76c66d0 (2026-08-21)"

#endif
