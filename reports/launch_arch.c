/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Megatron-LM flags that build a model's architecture
 * (docs/export-megatron.md, "Model architecture"), checked against
 * Megatron-LM core_v0.19.0 (5be9626709af): megatron/training/arguments.py,
 * the TransformerConfig fields that argument_utils.py turns into flags,
 * and Megatron-LM's own recipes for the Hugging Face models it has them for
 * (examples/post_training/modelopt/conf/: Qwen3-8B.sh, Qwen3-30B-A3B.sh,
 * DeepSeek-V2-Lite.sh, DeepSeek-R1.sh, Llama-4-Scout-17B-16E-Instruct.sh,
 * Llama-4-Maverick-17B-128E-Instruct.sh). The family table says what a
 * zoo name's layout is (from transformers' modeling_<model>.py, as
 * profiler/model/hfconfig_variants.c builds it); the sizes, biases, tied
 * or untied head, shared experts, latent-attention widths and which
 * blocks hold experts come from the placements (reports/launch_model.c),
 * the rotary base and router facts from the zoo preset. What the family
 * has and core_v0.19.0 has no flag for is a text the file prints, never a
 * flag that builds something else.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "launch.h"

typedef struct Family {
    const char *model;
    const char *norm;                 /* --normalization */
    int swiglu;                       /* SiLU-gated MLP (--swiglu) */
    int zero_centered;                /* Gemma's RMSNorm x * (1 + w): --apply-layernorm-1p */
    int qk_layernorm;                 /* a norm over each head's q and k (--qk-layernorm) */
    int llama4;                       /* Llama 4's router, rotary layout and NoPE layers */
    const char *missing[6];           /* what core_v0.19.0 has no flag for */
    const char *unwritten[3];         /* what it has flags for that the file leaves out */
} Family;

#define GEGLU "the GeGLU MLP (gelu_pytorch_tanh(gate_proj x) * up_proj x): no flag builds it " \
              "(--swiglu gates with SiLU, --quick-geglu with x * sigmoid(1.702 x)); without " \
              "one Megatron builds a plain GELU MLP of --ffn-hidden-size, a third fewer MLP weights"
#define EMBED_SCALE "the embedding scaled by sqrt(hidden size) (GemmaModel.forward): no flag"
#define SANDWICH "the norms after attention and after the MLP (4 RMSNorms a layer: " \
                 "post_attention_layernorm, pre_ and post_feedforward_layernorm): Megatron's " \
                 "layer has the 2 before attention and MLP"
#define WINDOW "sliding-window attention (the config's sliding_window; --window-size, " \
               "--window-attn-skip-freq): the plan was priced with full causal attention, " \
               "which is the model's while the sequence is at most the window"
#define TANH_GELU "gelu_pytorch_tanh: Megatron's MLP uses the exact GELU (F.gelu); " \
                  "--openai-gelu is accepted but read nowhere at this version"

static const Family families[] = {
    {"llama", "RMSNorm", 1, 0, 0, 0, {NULL}},
    {"mistral", "RMSNorm", 1, 0, 0, 0, {NULL}},
    {"mixtral", "RMSNorm", 1, 0, 0, 0, {NULL}},
    {"qwen2", "RMSNorm", 1, 0, 0, 0, {NULL}},
    {"deepseek_moe", "RMSNorm", 1, 0, 0, 0, {NULL}},
    /* Qwen3-8B.sh, Qwen3-30B-A3B.sh: --qk-layernorm (q_norm, k_norm per head) */
    {"qwen3", "RMSNorm", 1, 0, 1, 0, {NULL}},
    {"qwen3_moe", "RMSNorm", 1, 0, 1, 0, {NULL}},
    {"gemma", "RMSNorm", 0, 1, 0, 0, {GEGLU, EMBED_SCALE}},
    {"gemma2", "RMSNorm", 0, 1, 0, 0,
     {GEGLU, EMBED_SCALE, SANDWICH,
      "attention and final logit soft-capping (attn_logit_softcapping, "
      "final_logit_softcapping): no flag",
      "query_pre_attn_scalar as the softmax scale: softmax_scale is no flag (the default "
      "1/sqrt(kv channels) is the model's where the two are equal)"},
     {WINDOW ", on every other layer"}},
    {"gemma3", "RMSNorm", 0, 1, 1, 0,
     {GEGLU, EMBED_SCALE, SANDWICH,
      "rope_local_base_freq on the sliding-window layers: one --rotary-base serves every "
      "layer (the global layers' rope_theta is written)"},
     {WINDOW ", on five layers in six"}},
    {"phi3", "RMSNorm", 1, 0, 0, 0, {NULL}, {WINDOW}},
    {"olmo2", "RMSNorm", 1, 0, 0, 0,
     {"the post-norm layer (x + norm(attn(x)), x + norm(mlp(x))): Megatron's layer "
      "normalises the sublayer's input; --apply-residual-connection-post-layernorm is "
      "BERT's order, not this",
      "q_norm and k_norm over the whole q and k projections (heads x head dim): "
      "--qk-layernorm normalises each head, so it is not written"}},
    {"starcoder2", "LayerNorm", 0, 0, 0, 0, {TANH_GELU}, {WINDOW}},
    {"gpt_neox", "LayerNorm", 0, 0, 0, 0,
     {"the parallel residual (x + attn(ln1(x)) + mlp(ln2(x)), use_parallel_residual): "
      "Megatron's layer is sequential"}},
    {"falcon", "LayerNorm", 0, 0, 0, 0,
     {"the parallel attention and MLP sharing one LayerNorm (parallel_attn): Megatron's "
      "layer is sequential, with a norm before each"}},
    /* DeepSeek-V2-Lite.sh, DeepSeek-R1.sh: --qk-layernorm is MLA's norms of
     * the q and kv latents (q_a_layernorm, kv_a_layernorm) */
    {"deepseek", "RMSNorm", 1, 0, 1, 0,
     {NULL},
     {"the YaRN rope scaling of rope_scaling (it changes no cost): --rotary-scaling-factor, "
      "--mscale and --mscale-all-dim from the config",
      "the multi-token prediction layers (num_nextn_predict_layers), which approf does not "
      "build: --mtp-num-layers"}},
    {"llama4", "RMSNorm", 1, 0, 0, 1,
     {"chunked local attention on the RoPE layers (attention_chunk_size) and the attention "
      "temperature tuning of the NoPE layers: no flag"},
     {"the llama3 rope scaling of rope_scaling where the config sets one (Scout's; "
      "Maverick's is null), as it changes no cost: --use-rope-scaling --rope-scaling-factor"}},
};

static const Family *family_of(const char *model)
{
    for (size_t i = 0; model && i < sizeof(families) / sizeof(families[0]); i++)
        if (!strcmp(families[i].model, model))
            return &families[i];
    return NULL;
}

int rep_megatron_rotary_family(const char *model)
{
    return family_of(model) != NULL;
}

static void add(RepArch *a, const char *flag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add(RepArch *a, const char *flag, const char *fmt, ...)
{
    va_list ap;
    if (a->n_args >= REP_ARCH_MAX)
        return;
    snprintf(a->args[a->n_args].flag, sizeof(a->args[0].flag), "%s", flag);
    a->args[a->n_args].value[0] = '\0';
    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(a->args[a->n_args].value, sizeof(a->args[0].value), fmt, ap);
        va_end(ap);
    }
    a->n_args++;
}

static void missing(RepArch *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void missing(RepArch *a, const char *fmt, ...)
{
    va_list ap;
    if (a->n_missing >= (int)(sizeof(a->missing) / sizeof(a->missing[0])))
        return;
    va_start(ap, fmt);
    vsnprintf(a->missing[a->n_missing++], sizeof(a->missing[0]), fmt, ap);
    va_end(ap);
}

/* The preset's flags ("--flag [value] ..."): each word starting with --
 * is a flag, the word after it (when not a flag) its value. */
static void preset_flags(RepArch *a, const char *text)
{
    char words[16][48];
    int n = 0;
    const char *p = text;
    while (p && *p && n < 16) {
        size_t len;
        while (*p == ' ')
            p++;
        len = strcspn(p, " ");
        if (!len)
            break;
        snprintf(words[n++], sizeof(words[0]), "%.*s", (int)len, p);
        p += len;
    }
    for (int i = 0; i < n; i++) {
        const char *flag = words[i];
        if (strncmp(flag, "--", 2))
            continue;
        if (i + 1 < n && strncmp(words[i + 1], "--", 2))
            add(a, flag, "%s", words[++i]);
        else
            add(a, flag, NULL);
    }
}

/* A per-block pattern as Megatron's list expression ("[0,1,1]"). */
static void pattern(RepArch *a, const char *flag, const char *bits, int n)
{
    char b[REP_MAX_BLOCKS * 2 + 8];
    size_t at = 0;
    b[at++] = '[';
    for (int i = 0; i < n && at + 3 < sizeof(b); i++)
        at += (size_t)snprintf(b + at, sizeof(b) - at, "%s%d", i ? "," : "", bits[i] ? 1 : 0);
    snprintf(b + at, sizeof(b) - at, "]");
    add(a, flag, "%s", b);
}

static void mla_args(const RepModelShape *m, RepArch *a)
{
    int qk = m->heads ? m->q_width / m->heads : 0, rope = m->kv_a_width - m->kv_lora;
    int v = m->heads ? m->o_in / m->heads : 0;
    add(a, "--multi-latent-attention", NULL);
    if (!m->heads || rope <= 0 || qk <= rope || v <= 0 || m->kv_lora <= 0) {
        missing(a, "the latent attention's head widths: the heads are unknown (%s)",
                m->heads_why[0] ? m->heads_why : "no preset");
        return;
    }
    if (m->q_lora)
        add(a, "--q-lora-rank", "%d", m->q_lora);
    add(a, "--kv-lora-rank", "%d", m->kv_lora);
    add(a, "--qk-head-dim", "%d", qk - rope);
    add(a, "--qk-pos-emb-head-dim", "%d", rope);
    add(a, "--v-head-dim", "%d", v);
}

static void moe_args(const Family *F, const RepModelShape *m, RepArch *a)
{
    int dense = 0;
    if (m->shared_ffn)
        add(a, "--moe-shared-expert-intermediate-size", "%d", m->shared_ffn);
    for (int i = 0; m->moe_blocks_known && i < m->layers && i < REP_MAX_BLOCKS; i++)
        dense += !m->moe_block[i];
    if (dense && m->layers <= REP_MAX_BLOCKS)
        pattern(a, "--moe-layer-freq", m->moe_block, m->layers);
    if (F->llama4) {
        /* Llama4TextMoe: sigmoid of the router logits, the routed tokens
         * scaled by it before the experts (the recipes'
         * --moe-router-score-function sigmoid, --export-moe-apply-probs-on-input) */
        add(a, "--moe-router-score-function", "sigmoid");
        add(a, "--moe-apply-probs-on-input", NULL);
    }
    if (m->expert_bias)
        add(a, "--moe-router-enable-expert-bias", NULL);
}

void rep_megatron_arch(const RepModelShape *m, RepArch *a)
{
    const Family *F = family_of(m->model);
    memset(a, 0, sizeof(*a));
    if (!F) {
        if (m->family) /* gpt, bert: Megatron's defaults and learned positions */
            add(a, "--position-embedding-type", "learned_absolute");
        return;
    }
    add(a, "--normalization", "%s", F->norm);
    if (F->zero_centered)
        add(a, "--apply-layernorm-1p", NULL);
    if (F->swiglu)
        add(a, "--swiglu", NULL);
    add(a, "--position-embedding-type", "rope");
    if (m->rope_theta > 0 && m->rope_theta != 10000) {
        /* --rotary-base is an int (arguments.py) */
        add(a, "--rotary-base", "%.0f", m->rope_theta);
        if (m->rope_theta != floor(m->rope_theta))
            missing(a, "rope_theta %.10g: --rotary-base takes an integer, %.0f is written",
                    m->rope_theta, m->rope_theta);
    } else if (m->rope_theta <= 0) {
        missing(a, "the rotary base: no zoo preset names it (--rotary-base: the config's "
                "rope_theta; Megatron's default is 10000)");
    }
    if (F->llama4) {
        /* Llama 4 rotates pairs of adjacent dimensions (complex products in
         * apply_rotary_emb), RoPE skipped on every 4th layer
         * (no_rope_layer_interval 4; both recipes) */
        char nope[REP_MAX_BLOCKS];
        int any = 0;
        add(a, "--rotary-interleaved", NULL);
        for (int i = 0; i < m->layers && i < REP_MAX_BLOCKS; i++)
            any |= nope[i] = (i + 1) % 4 == 0;
        if (any && m->layers <= REP_MAX_BLOCKS)
            pattern(a, "--no-rope-freq", nope, m->layers);
    }
    if (m->kv_a_width)
        mla_args(m, a);
    else if (m->kv_channels && m->heads && m->kv_channels * m->heads != m->hidden)
        add(a, "--kv-channels", "%d", m->kv_channels);
    if (F->qk_layernorm)
        add(a, "--qk-layernorm", NULL);
    if (m->lm_head)
        add(a, "--untie-embeddings-and-output-weights", NULL);
    /* add_bias_linear (default true) puts biases on q,k,v, the attention
     * output and both MLP projections; --add-qkv-bias on q,k,v alone */
    if (!m->out_bias && !m->mlp_bias) {
        add(a, "--disable-bias-linear", NULL);
        if (m->qkv_bias)
            add(a, "--add-qkv-bias", NULL);
    } else if (!m->out_bias || !m->mlp_bias || !m->qkv_bias) {
        missing(a, "linear biases on%s%s%s only: Megatron has them on every projection or on "
                "q, k and v alone; written with them on every projection",
                m->qkv_bias ? " q, k, v," : "", m->out_bias ? " the attention output" : "",
                m->mlp_bias ? " the MLP" : "");
    }
    if (m->experts)
        moe_args(F, m, a);
    if (m->preset || m->hf)
        preset_flags(a, m->preset_flags);
    for (int i = 0; i < 6 && F->missing[i]; i++)
        missing(a, "%s", F->missing[i]);
    for (int i = 0; i < 3 && F->unwritten[i] && a->n_unwritten < 3; i++)
        a->unwritten[a->n_unwritten++] = F->unwritten[i];
}
