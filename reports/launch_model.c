/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The model's shape for the launch files (docs/export-megatron.md, "Model
 * shape"), derived in this one place. The database does not store the
 * model's configuration, only what the sweep recorded (the model name and
 * its options.preset) and the placements of every parameter and graph
 * input with their shapes. From the placements: the blocks (as
 * rep_total_blocks counts them), the hidden size and vocabulary (the token
 * embedding [V, H]), the sequence length (input_ids [B, S]), the FFN width
 * (fc1 / up_proj [H, F], experts [.., E, H, F]), the key/value width (key /
 * k_proj [H, kv]) and learned positions ([P, H]). What no placement shows
 * (attention heads, router top-k, rotary position range) comes from the zoo
 * preset the sweep named, taken only when the preset's hidden size equals
 * the placements' (a sweep with --hidden or a model file has no preset that
 * fits: the heads are then unknown and the files say so); a sweep of a
 * Hugging Face config.json stored the config's own (hf_facts). The preset rows
 * restate profiler/model/zoo_llama.c, zoo_tf.c and zoo_presets.c (the
 * Hugging Face configs of those models: heads, top-k, positions,
 * rope_theta); tests/reports/launch_manifests.sh and launch_families.sh
 * compare the heads, head width and query groups the files take from them
 * with the zoo's graphs. The placements also show the architecture's
 * parts (biases, a tied head, q/k widths, shared experts, latent-attention
 * widths, the blocks with experts) that reports/launch_arch.c turns into
 * Megatron-LM flags.
 */
#include <stdlib.h>
#include <string.h>

#include "costdb_text.h"
#include "launch.h"

typedef struct ShapePreset {
    const char *model, *preset;       /* preset "" : the model's default */
    int hidden, heads, topk, positions;
    const char *titan_name, *titan_flavor; /* torchtitan v0.2.2 llama3 flavours */
    int titan_layers;
    const char *titan_config;         /* torchtitan main's registry function of it */
    double rope_theta;                /* rope_theta of the preset's config.json (0: none) */
    const char *flags;                /* router / rotary facts no placement shows, as flags */
} ShapePreset;

/* A preset of profiler/model/zoo_presets.c (a Hugging Face family): its
 * hidden size, heads, router top-k, max_position_embeddings, rope_theta
 * and the Megatron-LM flags of what its config.json sets beyond sizes
 * (docs/export-megatron.md, "Model architecture"). */
#define HF(model, preset, hidden, heads, topk, positions, theta, flags) \
    {model, preset, hidden, heads, topk, positions, NULL, NULL, 0, NULL, theta, flags}
/* DeepSeek-V3's router (config.json: scoring_func sigmoid, n_group 8,
 * topk_group 4, routed_scaling_factor 2.5; Megatron-LM's own DeepSeek-R1
 * recipe, examples/post_training/modelopt/conf/deepseek-ai/DeepSeek-R1.sh) */
#define DSV3_ROUTER "--moe-router-score-function sigmoid --moe-router-num-groups 8 " \
                    "--moe-router-group-topk 4 --moe-router-topk-scaling-factor 2.5"
/* DeepSeek-V2-Lite's (softmax over every expert, top-k without
 * renormalising: topk_method greedy, norm_topk_prob false; the recipe
 * DeepSeek-V2-Lite.sh) */
#define DSV2_ROUTER "--moe-router-score-function softmax --moe-router-pre-softmax"

static const ShapePreset presets[] = {
    {"gpt", "gpt2-small", 768, 12, 0, 1024, NULL, NULL, 0, NULL},
    {"gpt", "gpt3-1.3b", 2048, 16, 0, 2048, NULL, NULL, 0, NULL},
    {"gpt", "gpt3-2.7b", 2560, 32, 0, 2048, NULL, NULL, 0, NULL},
    {"gpt", "gpt3-6.7b", 4096, 32, 0, 2048, NULL, NULL, 0, NULL},
    {"gpt", "gpt3-39b", 8192, 64, 0, 1024, NULL, NULL, 0, NULL},
    {"bert", "base", 768, 12, 0, 512, NULL, NULL, 0, NULL},
    {"bert", "large", 1024, 16, 0, 512, NULL, NULL, 0, NULL},
    {"llama", "llama-2-7b", 4096, 32, 0, 4096, NULL, NULL, 0, NULL, 10000, NULL},
    {"llama", "llama-3-8b", 4096, 32, 0, 8192, "llama3", "8B", 32, "llama3_8b", 500000, NULL},
    {"llama", "llama-3-70b", 8192, 64, 0, 8192, "llama3", "70B", 80, "llama3_70b", 500000, NULL},
    {"llama", "llama-3.1-405b", 16384, 128, 0, 131072, "llama3", "405B", 126, "llama3_405b", 500000, NULL},
    {"mistral", "mistral-7b", 4096, 32, 0, 32768, NULL, NULL, 0, NULL, 10000, NULL},
    {"mixtral", "mixtral-8x7b", 4096, 32, 2, 32768, NULL, NULL, 0, NULL, 1000000, NULL},
    {"qwen2", "qwen2.5-7b", 3584, 28, 0, 131072, NULL, NULL, 0, NULL, 1000000, NULL},
    {"deepseek_moe", "deepseek-moe-16b", 2048, 16, 6, 4096, NULL, NULL, 0, NULL, 10000, NULL},
    HF("qwen3", "qwen3-8b", 4096, 32, 0, 40960, 1000000, NULL),
    HF("qwen3", "qwen3-0.6b", 1024, 16, 0, 40960, 1000000, NULL),
    HF("qwen3", "qwen3-1.7b", 2048, 16, 0, 40960, 1000000, NULL),
    HF("qwen3", "qwen3-4b", 2560, 32, 0, 40960, 1000000, NULL),
    HF("qwen3", "qwen3-14b", 5120, 40, 0, 40960, 1000000, NULL),
    HF("qwen3", "qwen3-32b", 5120, 64, 0, 40960, 1000000, NULL),
    HF("qwen3_moe", "qwen3-30b-a3b", 2048, 32, 8, 40960, 1000000, NULL),
    HF("qwen3_moe", "qwen3-235b-a22b", 4096, 64, 8, 40960, 1000000, NULL),
    HF("gemma", "gemma-7b", 3072, 16, 0, 8192, 10000, NULL),
    HF("gemma", "gemma-2b", 2048, 8, 0, 8192, 10000, NULL),
    HF("gemma2", "gemma-2-9b", 3584, 16, 0, 8192, 10000, NULL),
    HF("gemma2", "gemma-2-2b", 2304, 8, 0, 8192, 10000, NULL),
    HF("gemma2", "gemma-2-27b", 4608, 32, 0, 8192, 10000, NULL),
    HF("gemma3", "gemma-3-1b", 1152, 4, 0, 32768, 1000000, NULL),
    HF("gemma3", "gemma-3-4b", 2560, 8, 0, 131072, 1000000, NULL),
    HF("gemma3", "gemma-3-12b", 3840, 16, 0, 131072, 1000000, NULL),
    HF("gemma3", "gemma-3-27b", 5376, 32, 0, 131072, 1000000, NULL),
    HF("phi3", "phi-3-mini", 3072, 32, 0, 4096, 10000, NULL),
    HF("olmo2", "olmo-2-7b", 4096, 32, 0, 4096, 500000, NULL),
    HF("olmo2", "olmo-2-13b", 5120, 40, 0, 4096, 500000, NULL),
    HF("starcoder2", "starcoder2-7b", 4608, 36, 0, 16384, 1000000, NULL),
    HF("starcoder2", "starcoder2-3b", 3072, 24, 0, 16384, 999999.4420358813, NULL),
    HF("gpt_neox", "gpt-neox-20b", 6144, 64, 0, 2048, 10000, "--rotary-percent 0.25"),
    HF("gpt_neox", "pythia-1.4b", 2048, 16, 0, 2048, 10000, "--rotary-percent 0.25"),
    HF("gpt_neox", "pythia-6.9b", 4096, 32, 0, 2048, 10000, "--rotary-percent 0.25"),
    HF("gpt_neox", "pythia-12b", 5120, 40, 0, 2048, 10000, "--rotary-percent 0.25"),
    HF("falcon", "falcon-7b", 4544, 71, 0, 2048, 10000, NULL),
    HF("deepseek", "deepseek-v3", 7168, 128, 8, 163840, 10000, DSV3_ROUTER),
    HF("deepseek", "deepseek-v2-lite", 2048, 16, 6, 163840, 10000, DSV2_ROUTER),
    /* Scout: use_qk_norm true (Llama4TextConfig's default); Maverick false */
    HF("llama4", "llama-4-scout", 5120, 40, 1, 262144, 500000, "--qk-l2-norm"),
    HF("llama4", "llama-4-maverick", 5120, 40, 1, 1048576, 500000, NULL),
};

/* The zoo's default preset of each model (approf models). */
static const char *default_preset(const char *model)
{
    static const struct { const char *model, *preset; } d[] = {
        {"gpt", "gpt2-small"}, {"bert", "base"}, {"llama", "llama-3-8b"},
        {"mistral", "mistral-7b"}, {"mixtral", "mixtral-8x7b"}, {"qwen2", "qwen2.5-7b"},
        {"deepseek_moe", "deepseek-moe-16b"}, {"qwen3", "qwen3-8b"},
        {"qwen3_moe", "qwen3-30b-a3b"}, {"gemma", "gemma-7b"}, {"gemma2", "gemma-2-9b"},
        {"gemma3", "gemma-3-1b"}, {"phi3", "phi-3-mini"}, {"olmo2", "olmo-2-7b"},
        {"starcoder2", "starcoder2-7b"}, {"gpt_neox", "gpt-neox-20b"}, {"falcon", "falcon-7b"},
        {"deepseek", "deepseek-v3"}, {"llama4", "llama-4-scout"},
    };
    for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++)
        if (!strcmp(d[i].model, model))
            return d[i].preset;
    return NULL;
}

static int has(const char *name, const char *part)
{
    return strstr(name, part) != NULL;
}

static int ends(const char *name, const char *tail)
{
    size_t n = strlen(name), t = strlen(tail);
    return n >= t && !strcmp(name + n - t, tail);
}

/* The block index of a parameter named model.layers.N/... (-1: none). */
static int block_of(const char *n)
{
    const char *p = strstr(n, "layers.");
    char *end;
    long v;
    if (!p)
        return -1;
    v = strtol(p + 7, &end, 10);
    return end != p + 7 && *end == '/' && v >= 0 && v < REP_MAX_BLOCKS ? (int)v : -1;
}

/* Reads what the placements show into m. Names are the zoo's
 * (profiler/model/zoo_llama.c, the Hugging Face module paths). */
static void from_placements(const ApreportReport *r, RepModelShape *m)
{
    int blocks_seen = 0;
    for (size_t k = 0; k < r->n_stages; k++)
        for (size_t i = 0; i < r->stages[k].n_tensors; i++) {
            const CostdbPlacement *pl = &r->stages[k].tensors[i].pl;
            const char *n = pl->tensor_name;
            int64_t d[APREPORT_MAX_DIMS];
            int nd = costdb_shape_parse(pl->shape, d, APREPORT_MAX_DIMS);
            if (nd < 1)
                continue;
            for (int j = 0; j < nd; j++)
                if (d[j] <= 0 || d[j] > 1 << 30)
                    nd = -1;
            if (nd < 1)
                continue;
            if (!strcmp(pl->role, "input")) {
                if (!strcmp(n, "input_ids") && nd == 2)
                    m->seq = (int)d[1];
                continue;
            }
            if (strcmp(pl->role, "param"))
                continue;
            if (block_of(n) >= 0) {
                blocks_seen = 1;
                if (has(n, "/experts/") && !has(n, "shared_experts"))
                    m->moe_block[block_of(n)] = 1;
            }
            if (nd == 2 && (has(n, "embed_tokens/") || has(n, "embeddings/word/"))) {
                m->vocab = (int)d[0];
                m->hidden = (int)d[1];
            } else if (nd == 2 && has(n, "embeddings/position/")) {
                m->positions = (int)d[0];
            } else if (!strcmp(n, "lm_head/kernel")) {
                m->lm_head = 1;
            } else if (has(n, "/experts/") && !has(n, "shared_experts") && nd >= 3 &&
                       ends(n, "up_proj/kernel")) {
                m->moe_ffn = (int)d[nd - 1];
                m->experts = (int)d[nd - 3];
            } else if (nd == 2 && has(n, "shared_experts/") && ends(n, "up_proj/kernel")) {
                m->shared_ffn = (int)d[1];
            } else if (ends(n, "e_score_correction_bias")) {
                m->expert_bias = 1;
            } else if (nd == 2 && !has(n, "experts") &&
                       (ends(n, "/fc1/kernel") || ends(n, "mlp/up_proj/kernel") ||
                        ends(n, "mlp/c_fc/kernel") || ends(n, "mlp/dense_h_to_4h/kernel"))) {
                m->ffn = (int)d[1];
            } else if (nd == 2 && ends(n, "mlp/gate_up_proj/kernel")) {
                m->ffn = (int)d[1] / 2; /* phi3: gate and up in one GEMM */
            } else if (nd == 2 && (ends(n, "/key/kernel") || ends(n, "/k_proj/kernel"))) {
                m->kv_width = (int)d[1];
            } else if (nd == 2 && (ends(n, "/q_proj/kernel") || ends(n, "/q_b_proj/kernel"))) {
                m->q_width = (int)d[1];
            } else if (nd == 2 && (ends(n, "/qkv_proj/kernel") ||
                                   ends(n, "/query_key_value/kernel"))) {
                m->fused_qkv = (int)d[1];
            } else if (nd == 2 && ends(n, "/q_a_proj/kernel")) {
                m->q_lora = (int)d[1];
            } else if (nd == 2 && ends(n, "/kv_a_proj_with_mqa/kernel")) {
                m->kv_a_width = (int)d[1];
            } else if (nd == 1 && ends(n, "/kv_a_layernorm/scale")) {
                m->kv_lora = (int)d[0];
            } else if (nd == 2 && ends(n, "/kv_b_proj/kernel")) {
                m->kv_b_width = (int)d[1];
            } else if (nd == 2 && ends(n, "self_attn/o_proj/kernel")) {
                m->o_in = (int)d[0];
            } else if (ends(n, "/k_proj/bias") || ends(n, "/q_proj/bias") ||
                       ends(n, "/query_key_value/bias") || ends(n, "/qkv_proj/bias")) {
                m->qkv_bias = 1;
            } else if (ends(n, "self_attn/o_proj/bias") || ends(n, "self_attn/dense/bias")) {
                m->out_bias = 1;
            } else if (has(n, "/mlp/") && ends(n, "/bias") && !has(n, "gate/")) {
                m->mlp_bias = 1;
            }
        }
    m->moe_blocks_known = blocks_seen;
}

/* A sweep of a Hugging Face config.json (preset "hf:PATH") stored what
 * the config says that no placement shows (profiler/cli/cmd_sweep.c,
 * check_model: hf_hidden, hf_heads, hf_kv_heads, hf_positions, hf_top_k,
 * hf_rope_theta, hf_rotary_pct): taken as a preset's facts are, when its
 * hidden size is the placements'. */
static void hf_facts(const char *options, const char *preset, RepModelShape *m)
{
    long long hidden = 0, heads = 0, kv = 0, pos = 0, topk = 0;
    char theta[40] = "", pct[40] = "";
    if (costdb_json_member_int(options, "hf_hidden", &hidden) < 0 ||
        costdb_json_member_int(options, "hf_heads", &heads) < 0 || heads < 1 ||
        costdb_json_member_int(options, "hf_kv_heads", &kv) < 0) {
        snprintf(m->heads_why, sizeof(m->heads_why), "the sweep of %.60s stored no heads (a "
                 "database written before approf recorded them, or --hidden / --heads changed "
                 "the config's)", preset);
        return;
    }
    if (hidden != m->hidden) {
        snprintf(m->heads_why, sizeof(m->heads_why), "the placements' hidden size %d is not "
                 "the config's %lld: the database stores no attention heads", m->hidden, hidden);
        return;
    }
    costdb_json_member_int(options, "hf_positions", &pos);
    costdb_json_member_int(options, "hf_top_k", &topk);
    costdb_json_member_text(options, "hf_rope_theta", theta, sizeof(theta));
    costdb_json_member_text(options, "hf_rotary_pct", pct, sizeof(pct));
    m->hf = 1;
    m->heads = (int)heads;
    m->query_groups = (int)kv; /* the placements' k width / head width, below, when they show it */
    m->topk = m->experts ? (int)topk : 0;
    if (!m->positions)
        m->positions = (int)pos;
    m->rope_theta = theta[0] ? strtod(theta, NULL) : 0;
    m->preset_flags = NULL;
    /* gpt_neox's partial rotary (rotary_pct; 0: not a field of the family) */
    if (pct[0] && strtod(pct, NULL) > 0 && strtod(pct, NULL) < 1) {
        snprintf(m->hf_flags, sizeof(m->hf_flags), "--rotary-percent %.6g", strtod(pct, NULL));
        m->preset_flags = m->hf_flags;
    }
}

void rep_model_shape(const ApreportReport *r, RepModelShape *m)
{
    const char *model = r->has_model ? r->model.name : "";
    const char *options = r->has_model ? r->model.options : "";
    char preset[COSTDB_TEXT_MAX];
    const ShapePreset *p = NULL;
    memset(m, 0, sizeof(*m));
    m->model = model;
    if (!strcmp(model, "gpt"))
        m->family = "gpt";
    else if (!strcmp(model, "bert"))
        m->family = "bert";
    else if (rep_megatron_rotary_family(model))
        m->family = "llama";
    from_placements(r, m);
    m->layers = rep_total_blocks(r);
    if (m->layers < 0)
        m->layers = 0;
    if (!m->ffn && m->moe_ffn)
        m->ffn = m->moe_ffn;
    costdb_json_member_text(options, "preset", preset, sizeof(preset));
    if (!preset[0] && default_preset(model))
        snprintf(preset, sizeof(preset), "%s", default_preset(model));
    for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
        if (!strcmp(presets[i].model, model) && !strcmp(presets[i].preset, preset))
            p = &presets[i];
    if (!m->family)
        snprintf(m->heads_why, sizeof(m->heads_why), "model '%.40s' is not a zoo transformer: "
                 "the database stores no attention heads", model[0] ? model : "unknown");
    else if (!p && !strncmp(preset, "hf:", 3))
        hf_facts(options, preset, m);
    else if (!p)
        snprintf(m->heads_why, sizeof(m->heads_why), "preset '%.40s' of %.40s is not a zoo preset "
                 "(a model file or Hugging Face config): the database stores no attention heads",
                 preset, model);
    else if (p->hidden != m->hidden)
        snprintf(m->heads_why, sizeof(m->heads_why), "the placements' hidden size %d is not "
                 "preset %s's %d (a sweep with --hidden): the database stores no attention heads",
                 m->hidden, p->preset, p->hidden);
    else {
        m->preset = p->preset;
        m->heads = p->heads;
        m->topk = m->experts ? p->topk : 0;
        if (!m->positions)
            m->positions = p->positions;
        m->rope_theta = p->rope_theta;
        m->preset_flags = p->flags;
    }
    /* the head width: the query projection's over the heads (qwen3, gemma:
     * head_dim is not hidden / heads), hidden / heads for the fused
     * q,k,v projections (phi3, gpt_neox, falcon) and the others */
    if (m->heads && m->q_width > 0 && m->q_width % m->heads == 0 && !m->kv_a_width)
        m->kv_channels = m->q_width / m->heads;
    else if (m->heads && m->hidden % m->heads == 0)
        m->kv_channels = m->hidden / m->heads;
    if (m->fused_qkv && m->kv_channels && m->fused_qkv % m->kv_channels == 0 &&
        m->fused_qkv / m->kv_channels > m->heads &&
        (m->fused_qkv / m->kv_channels - m->heads) % 2 == 0)
        m->kv_width = (m->fused_qkv / m->kv_channels - m->heads) / 2 * m->kv_channels;
    if (m->kv_channels && m->kv_width > 0 && m->kv_width % m->kv_channels == 0 && !m->kv_a_width)
        m->query_groups = m->kv_width / m->kv_channels;
    if (m->seq && m->positions < m->seq)
        m->positions = m->seq; /* rotary: any range; learned: the table's */
    if (p && m->preset && p->titan_name && m->layers == p->titan_layers && !m->experts) {
        m->titan_name = p->titan_name;
        m->titan_flavor = p->titan_flavor;
        m->titan_config = p->titan_config;
    } else if (p && m->preset && p->titan_name) {
        snprintf(m->titan_why, sizeof(m->titan_why), "the model has %d blocks, torchtitan's "
                 "%s flavour %s has %d: register a flavour of this size", m->layers,
                 p->titan_name, p->titan_flavor, p->titan_layers);
    } else {
        snprintf(m->titan_why, sizeof(m->titan_why), "torchtitan v0.2.2 has no flavour of %.40s%s%.40s "
                 "(its models: llama3 8B/70B/405B, llama4, deepseek_v3, qwen3): register one",
                 model[0] ? model : "this model", preset[0] ? " " : "", preset);
    }
}
