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
 * fits: the heads are then unknown and the files say so). The preset rows
 * restate profiler/model/zoo_llama.c and zoo_tf.c (the Hugging Face configs
 * of those models); tests/reports/launch_manifests.sh compares the heads
 * the files take from them with the zoo's graphs.
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
} ShapePreset;

static const ShapePreset presets[] = {
    {"gpt", "gpt2-small", 768, 12, 0, 1024, NULL, NULL, 0, NULL},
    {"gpt", "gpt3-1.3b", 2048, 16, 0, 2048, NULL, NULL, 0, NULL},
    {"gpt", "gpt3-2.7b", 2560, 32, 0, 2048, NULL, NULL, 0, NULL},
    {"gpt", "gpt3-6.7b", 4096, 32, 0, 2048, NULL, NULL, 0, NULL},
    {"gpt", "gpt3-39b", 8192, 64, 0, 1024, NULL, NULL, 0, NULL},
    {"bert", "base", 768, 12, 0, 512, NULL, NULL, 0, NULL},
    {"bert", "large", 1024, 16, 0, 512, NULL, NULL, 0, NULL},
    {"llama", "llama-2-7b", 4096, 32, 0, 4096, NULL, NULL, 0, NULL},
    {"llama", "llama-3-8b", 4096, 32, 0, 8192, "llama3", "8B", 32, "llama3_8b"},
    {"llama", "llama-3-70b", 8192, 64, 0, 8192, "llama3", "70B", 80, "llama3_70b"},
    {"llama", "llama-3.1-405b", 16384, 128, 0, 131072, "llama3", "405B", 126, "llama3_405b"},
    {"mistral", "mistral-7b", 4096, 32, 0, 32768, NULL, NULL, 0, NULL},
    {"mixtral", "mixtral-8x7b", 4096, 32, 2, 32768, NULL, NULL, 0, NULL},
    {"qwen2", "qwen2.5-7b", 3584, 28, 0, 131072, NULL, NULL, 0, NULL},
    {"deepseek_moe", "deepseek-moe-16b", 2048, 16, 6, 4096, NULL, NULL, 0, NULL},
};

/* The zoo's default preset of each model (approf models). */
static const char *default_preset(const char *model)
{
    static const struct { const char *model, *preset; } d[] = {
        {"gpt", "gpt2-small"}, {"bert", "base"}, {"llama", "llama-3-8b"},
        {"mistral", "mistral-7b"}, {"mixtral", "mixtral-8x7b"}, {"qwen2", "qwen2.5-7b"},
        {"deepseek_moe", "deepseek-moe-16b"},
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

/* Reads what the placements show into m. */
static void from_placements(const ApreportReport *r, RepModelShape *m, int *kv_width)
{
    *kv_width = 0;
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
            if (nd == 2 && (has(n, "embed_tokens/") || has(n, "embeddings/word/"))) {
                m->vocab = (int)d[0];
                m->hidden = (int)d[1];
            } else if (nd == 2 && has(n, "embeddings/position/")) {
                m->positions = (int)d[0];
            } else if (has(n, "/experts/") && nd >= 3 && ends(n, "up_proj/kernel")) {
                m->moe_ffn = (int)d[nd - 1];
                m->experts = (int)d[nd - 3];
            } else if (nd == 2 && !has(n, "experts") &&
                       (ends(n, "/fc1/kernel") || ends(n, "mlp/up_proj/kernel"))) {
                m->ffn = (int)d[1];
            } else if (nd == 2 && (ends(n, "/key/kernel") || ends(n, "/k_proj/kernel"))) {
                *kv_width = (int)d[1];
            } else if (ends(n, "/k_proj/bias") || ends(n, "/q_proj/bias")) {
                m->qkv_bias = 1;
            }
        }
}

void rep_model_shape(const ApreportReport *r, RepModelShape *m)
{
    const char *model = r->has_model ? r->model.name : "";
    char preset[64];
    const ShapePreset *p = NULL;
    int kv_width;
    memset(m, 0, sizeof(*m));
    if (!strcmp(model, "gpt"))
        m->family = "gpt";
    else if (!strcmp(model, "bert"))
        m->family = "bert";
    else if (!strcmp(model, "llama") || !strcmp(model, "mistral") || !strcmp(model, "mixtral") ||
             !strcmp(model, "qwen2") || !strcmp(model, "deepseek_moe"))
        m->family = "llama";
    from_placements(r, m, &kv_width);
    m->layers = rep_total_blocks(r);
    if (m->layers < 0)
        m->layers = 0;
    if (!m->ffn && m->moe_ffn)
        m->ffn = m->moe_ffn;
    costdb_json_member_text(r->has_model ? r->model.options : "", "preset", preset,
                            sizeof(preset));
    if (!preset[0] && default_preset(model))
        snprintf(preset, sizeof(preset), "%s", default_preset(model));
    for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
        if (!strcmp(presets[i].model, model) && !strcmp(presets[i].preset, preset))
            p = &presets[i];
    if (!m->family)
        snprintf(m->heads_why, sizeof(m->heads_why), "model '%.40s' is not a zoo transformer: "
                 "the database stores no attention heads", model[0] ? model : "unknown");
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
    }
    if (m->heads && m->hidden % m->heads == 0 && kv_width > 0 &&
        kv_width % (m->hidden / m->heads) == 0)
        m->query_groups = kv_width / (m->hidden / m->heads);
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
