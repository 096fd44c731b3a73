/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Hugging Face config.json reader (hfconfig.h): jansson reads the file,
 * each supported model_type names the fields its transformers config class
 * defines (with that class's defaults for the optional ones), and every
 * field is type-checked, so a wrong or missing one is reported by name
 * instead of building a different model. Fields that do not change the cost
 * (token ids, initializer range, epsilons, dropout rates) are ignored.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "hfconfig.h"

#define MAX_SIZE ((int64_t)1 << 24)

#if HAVE_JANSSON
#include <jansson.h>

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
} Rd;

static int rerr(Rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int rerr(Rd *r, const char *fmt, ...)
{
    if (r->err && r->errlen) {
        va_list ap;
        int n = snprintf(r->err, r->errlen, "%s: ", r->path);
        if (n >= 0 && (size_t)n < r->errlen) {
            va_start(ap, fmt);
            vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return APPROF_EPARSE;
}

/* An integer field in lo..hi; def < 0 makes it required. A JSON null
 * counts as absent (transformers writes "head_dim": null). */
static int get_int(Rd *r, json_t *root, const char *key, int64_t lo, int64_t hi, int64_t def, int *out)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        if (def < 0)
            return rerr(r, "field %s: missing", key);
        *out = (int)def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return rerr(r, "field %s: expected an integer in %lld..%lld", key, (long long)lo, (long long)hi);
    *out = (int)json_integer_value(v);
    return 0;
}

static int get_bool(Rd *r, json_t *root, const char *key, int def, int *out)
{
    json_t *v = json_object_get(root, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return rerr(r, "field %s: expected true or false", key);
    *out = json_is_true(v);
    return 0;
}

static int get_num(Rd *r, json_t *root, const char *key, double def, double *out)
{
    json_t *v = json_object_get(root, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_number(v) || json_number_value(v) <= 0)
        return rerr(r, "field %s: expected a positive number", key);
    *out = json_number_value(v);
    return 0;
}

/* A string field that, when present, must be one of the accepted values. */
static int check_str(Rd *r, json_t *root, const char *key, const char *const *ok)
{
    json_t *v = json_object_get(root, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return rerr(r, "field %s: expected a string", key);
    for (int i = 0; ok[i]; i++)
        if (!strcmp(json_string_value(v), ok[i]))
            return 0;
    return rerr(r, "field %s: '%s' is not supported (%s%s%s)", key, json_string_value(v), ok[0],
                ok[1] ? ", " : "", ok[1] ? ok[1] : "");
}

/* llama, mistral, mixtral, qwen2, deepseek: the decoder family. */
static int read_decoder(Rd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const silu[] = {"silu", "swish", NULL};
    const char *mt = c->model_type;
    int bias = 0, window = 0;
    if (get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        get_int(r, root, "num_key_value_heads", 1, 65536, c->heads, &c->kv_heads) ||
        get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, -1, &c->positions) ||
        get_bool(r, root, "tie_word_embeddings", 0, &c->tied) ||
        get_num(r, root, "rope_theta", 10000.0, &c->rope_theta) ||
        check_str(r, root, "hidden_act", silu))
        return APPROF_EPARSE;
    if (c->hidden % c->heads)
        return rerr(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    if (get_int(r, root, "head_dim", 1, 65536, c->hidden / c->heads, &c->head_dim))
        return APPROF_EPARSE;
    if (c->head_dim % 2)
        return rerr(r, "field head_dim: %d is odd; rotary position embeddings rotate pairs of "
                    "dimensions%s", c->head_dim, json_object_get(root, "head_dim") ? "" :
                    " (hidden_size / num_attention_heads when head_dim is absent)");
    if (c->heads % c->kv_heads)
        return rerr(r, "field num_key_value_heads: %d does not divide num_attention_heads %d",
                    c->kv_heads, c->heads);
    {
        json_t *rs = json_object_get(root, "rope_scaling");
        if (rs && !json_is_null(rs) && !json_is_object(rs))
            return rerr(r, "field rope_scaling: expected an object or null");
    }
    if (strcmp(mt, "qwen2")) {
        if (get_bool(r, root, "attention_bias", 0, &bias))
            return APPROF_EPARSE;
        if (bias)
            return rerr(r, "field attention_bias: true is not supported (biases on q, k, v and o)");
    }
    if (get_bool(r, root, "mlp_bias", 0, &bias))
        return APPROF_EPARSE;
    if (bias)
        return rerr(r, "field mlp_bias: true is not supported");
    c->qkv_bias = !strcmp(mt, "qwen2");
    if (!strcmp(mt, "mistral") || !strcmp(mt, "mixtral") || !strcmp(mt, "qwen2")) {
        int use = 1;
        if (!strcmp(mt, "qwen2") && get_bool(r, root, "use_sliding_window", 0, &use))
            return APPROF_EPARSE;
        if (get_int(r, root, "sliding_window", 1, MAX_SIZE, 0, &window))
            return APPROF_EPARSE;
        c->sliding_window = use ? window : 0;
    }
    if (!strcmp(mt, "mixtral")) {
        if (get_int(r, root, "num_local_experts", 1, 65536, -1, &c->experts) ||
            get_int(r, root, "num_experts_per_tok", 1, 65536, -1, &c->top_k))
            return APPROF_EPARSE;
        c->moe_ffn = c->ffn;
    } else if (!strcmp(mt, "deepseek")) {
        int shared = 0, freq = 1;
        if (get_int(r, root, "n_routed_experts", 1, 65536, -1, &c->experts) ||
            get_int(r, root, "num_experts_per_tok", 1, 65536, -1, &c->top_k) ||
            get_int(r, root, "moe_intermediate_size", 1, MAX_SIZE, -1, &c->moe_ffn) ||
            get_int(r, root, "n_shared_experts", 0, 65536, 0, &shared) ||
            get_int(r, root, "first_k_dense_replace", 0, 100000, 0, &c->first_dense) ||
            get_int(r, root, "moe_layer_freq", 1, 1, 1, &freq))
            return APPROF_EPARSE;
        /* in 64 bits: 257 x 2^24 wrapped to the FFN of one expert in an int */
        if ((int64_t)shared * c->moe_ffn > MAX_SIZE)
            return rerr(r, "field n_shared_experts: %d shared experts of moe_intermediate_size %d make "
                        "an intermediate size of %lld, above %lld", shared, c->moe_ffn,
                        (long long)shared * c->moe_ffn, (long long)MAX_SIZE);
        c->shared_ffn = shared * c->moe_ffn;
        if (c->first_dense > c->layers)
            return rerr(r, "field first_k_dense_replace: %d exceeds num_hidden_layers %d",
                        c->first_dense, c->layers);
    }
    if (c->experts && c->top_k > c->experts)
        return rerr(r, "field num_experts_per_tok: %d exceeds the %d experts", c->top_k, c->experts);
    return 0;
}

/* The names an architectures list may hold for model_type mt: approf builds
 * the causal LM head, so "<Class>ForCausalLM" of that family. */
static int check_archs(Rd *r, json_t *root, const char *cls)
{
    json_t *v = json_object_get(root, "architectures"), *a;
    size_t i;
    char want[48];
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return rerr(r, "field architectures: expected a list of strings");
    snprintf(want, sizeof want, "%sForCausalLM", cls);
    json_array_foreach(v, i, a) {
        if (!json_is_string(a))
            return rerr(r, "field architectures: expected a list of strings");
        if (strcmp(json_string_value(a), want))
            return rerr(r, "field architectures: '%s' is not supported (%s: approf builds the "
                        "causal LM head)", json_string_value(a), want);
    }
    return 0;
}

/* rope_theta at the top level (older files) or in rope_parameters (newer
 * transformers); recorded only. */
static int get_rope(Rd *r, json_t *root, double def, double *out)
{
    json_t *rp = json_object_get(root, "rope_parameters");
    if (get_num(r, root, "rope_theta", def, out))
        return APPROF_EPARSE;
    if (rp && !json_is_null(rp)) {
        if (!json_is_object(rp))
            return rerr(r, "field rope_parameters: expected an object or null");
        if (json_object_get(rp, "rope_theta") && get_num(r, rp, "rope_theta", def, out))
            return rerr(r, "field rope_parameters.rope_theta: expected a positive number");
    }
    rp = json_object_get(root, "rope_scaling");
    if (rp && !json_is_null(rp) && !json_is_object(rp))
        return rerr(r, "field rope_scaling: expected an object or null");
    return 0;
}

/* The decoders that vary the Llama layout. Each branch follows the
 * transformers files named beside it (huggingface/transformers,
 * src/transformers/models/<model>/configuration_<model>.py for the fields
 * and their class defaults, modeling_<model>.py for the layers). The core
 * sizes are required as for the Llama family; dropout rates, epsilons,
 * softcapping and token ids do not change the parameters and are ignored. */
static int read_variant(Rd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const silu[] = {"silu", "swish", NULL};
    static const char *const gelu[] = {"gelu_pytorch_tanh", "gelu", "gelu_new", "gelu_fast", NULL};
    const char *mt = c->model_type, *cls;
    int moe = !strcmp(mt, "qwen3_moe"), gemma2 = !strcmp(mt, "gemma2");
    int gemma = gemma2 || !strcmp(mt, "gemma"), qwen3 = moe || !strcmp(mt, "qwen3");
    int olmo2 = !strcmp(mt, "olmo2"), sc2 = !strcmp(mt, "starcoder2");
    int kv_def, hd_def = 0, tied_def = gemma || sc2, bias = 0, use = 1, window = 0;

    if (get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, -1, &c->positions) ||
        get_rope(r, root, 10000.0, &c->rope_theta))
        return APPROF_EPARSE;
    /* num_key_value_heads: Qwen3Config 32, Qwen3MoeConfig 4, GemmaConfig 16,
     * Gemma2Config 4, Starcoder2Config 2; Phi3Config and Olmo2Config None,
     * then num_attention_heads. head_dim: Qwen3Config 128, Gemma(2)Config
     * 256; the others have none and the attention takes
     * getattr(config, "head_dim", hidden_size // num_attention_heads). */
    kv_def = !strcmp(mt, "qwen3") ? 32 : moe ? 4 : !strcmp(mt, "gemma") ? 16 : gemma2 ? 4 : sc2 ? 2 : c->heads;
    if (!strcmp(mt, "qwen3"))
        hd_def = 128;
    else if (gemma)
        hd_def = 256;
    if (get_int(r, root, "num_key_value_heads", 1, 65536, kv_def, &c->kv_heads) ||
        get_bool(r, root, "tie_word_embeddings", tied_def, &c->tied))
        return APPROF_EPARSE;
    if (!hd_def && (!json_object_get(root, "head_dim") || json_is_null(json_object_get(root, "head_dim"))) &&
        c->hidden % c->heads)
        return rerr(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    if (get_int(r, root, "head_dim", 1, 65536, hd_def ? hd_def : c->hidden / c->heads, &c->head_dim))
        return APPROF_EPARSE;
    if (c->head_dim % 2)
        return rerr(r, "field head_dim: %d is odd; rotary position embeddings rotate pairs of "
                    "dimensions", c->head_dim);
    if (c->heads % c->kv_heads)
        return rerr(r, "field num_key_value_heads: %d does not divide num_attention_heads %d",
                    c->kv_heads, c->heads);
    if ((int64_t)c->heads * c->head_dim > MAX_SIZE)
        return rerr(r, "field head_dim: %d heads of %d are above %lld", c->heads, c->head_dim,
                    (long long)MAX_SIZE);
    if (sc2) {
        /* starcoder2: use_bias (default true) on q, k, v, o, c_fc and c_proj;
         * nn.LayerNorm (weight and bias) everywhere; c_fc -> act -> c_proj */
        if (get_bool(r, root, "use_bias", 1, &bias) || check_str(r, root, "hidden_act", gelu))
            return APPROF_EPARSE;
        c->attn_bias = c->mlp_bias = bias;
        c->layer_norm = 1;
        c->mlp = 2;
    } else {
        /* attention_bias: q, k, v and o (Qwen3Attention, GemmaAttention,
         * Olmo2Attention); Phi3 has no such field (qkv_proj bias=False) */
        if (strcmp(mt, "phi3") && get_bool(r, root, "attention_bias", 0, &c->attn_bias))
            return APPROF_EPARSE;
        if (gemma) {
            /* GemmaMLP: ACT2FN[config.hidden_act]; Gemma2MLP:
             * ACT2FN[config.hidden_activation] (gelu_pytorch_tanh) */
            if (check_str(r, root, "hidden_act", gelu) || check_str(r, root, "hidden_activation", gelu))
                return APPROF_EPARSE;
            c->mlp = 1;
        } else if (check_str(r, root, "hidden_act", silu)) {
            return APPROF_EPARSE;
        }
        /* Phi3Attention: qkv_proj = Linear(h, (heads + 2 kv) head_dim) sliced
         * into q, k, v; Phi3MLP: gate_up_proj = Linear(h, 2 ffn), chunk(2) */
        c->fused = !strcmp(mt, "phi3");
    }
    if (qwen3) {
        /* Qwen3Attention: q_norm, k_norm = RMSNorm(head_dim) */
        c->qk_norm = 1;
        if (get_bool(r, root, "use_sliding_window", 0, &use))
            return APPROF_EPARSE;
    }
    if (olmo2) {
        /* Olmo2Attention: q_norm = RMSNorm(heads * head_dim), k_norm =
         * RMSNorm(kv_heads * head_dim); Olmo2DecoderLayer: post_attention_
         * and post_feedforward_layernorm on the outputs, no input norm */
        c->qk_norm = 2;
        c->norms = 2;
    }
    if (gemma2)
        c->norms = 1;   /* Gemma2DecoderLayer: input, post_attention, pre_ and post_feedforward */
    if (!olmo2 && strcmp(mt, "gemma")) {
        /* sliding_window: Qwen3 and Qwen3Moe 4096 when use_sliding_window,
         * Gemma2 4096 (every other layer), Phi3 and Starcoder2 None */
        if (get_int(r, root, "sliding_window", 1, MAX_SIZE, qwen3 || gemma2 ? 4096 : 0, &window))
            return APPROF_EPARSE;
        c->sliding_window = use ? window : 0;
    }
    if (moe) {
        /* Qwen2MoeDecoderLayer (Qwen3MoeDecoderLayer): experts in layer l
         * when l not in mlp_only_layers and num_experts > 0 and (l + 1) %
         * decoder_sparse_step == 0, else Qwen3MoeMLP(intermediate_size); the
         * router is a Linear(hidden, num_experts), no shared expert */
        json_t *only = json_object_get(root, "mlp_only_layers"), *v;
        size_t i;
        if (get_int(r, root, "num_experts", 0, 65536, -1, &c->experts) ||
            get_int(r, root, "num_experts_per_tok", 1, 65536, -1, &c->top_k) ||
            get_int(r, root, "moe_intermediate_size", 1, MAX_SIZE, -1, &c->moe_ffn) ||
            get_int(r, root, "decoder_sparse_step", 1, APPROF_ZOO_MAX_LAYERS, 1, &c->sparse_step))
            return APPROF_EPARSE;
        if (only && !json_is_null(only)) {
            if (!json_is_array(only))
                return rerr(r, "field mlp_only_layers: expected a list of layer indices");
            json_array_foreach(only, i, v) {
                if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= c->layers)
                    return rerr(r, "field mlp_only_layers: expected layer indices in 0..%d", c->layers - 1);
                c->mlp_only[json_integer_value(v) / 8] |= (unsigned char)(1u << (json_integer_value(v) % 8));
            }
        }
        if (c->experts && c->top_k > c->experts)
            return rerr(r, "field num_experts_per_tok: %d exceeds the %d experts", c->top_k, c->experts);
    } else if (qwen3 && json_object_get(root, "num_experts")) {
        return rerr(r, "field num_experts: model_type qwen3 is dense (qwen3_moe has experts)");
    }
    cls = moe ? "Qwen3Moe" : qwen3 ? "Qwen3" : gemma2 ? "Gemma2" : gemma ? "Gemma" : olmo2 ? "Olmo2" :
          sc2 ? "Starcoder2" : "Phi3";
    return check_archs(r, root, cls);
}

/* gpt_neox (Pythia, GPT-NeoX-20B): transformers' models/gpt_neox/
 * configuration_gpt_neox.py and modeling_gpt_neox.py. GPTNeoXAttention:
 * query_key_value = Linear(h, 3 h, bias=attention_bias (true)), laid out
 * [heads, 3, head_dim] and sliced into q, k, v; dense = Linear(h, h, bias);
 * rotary over rotary_pct of each head (no parameters). GPTNeoXMLP:
 * dense_h_to_4h = Linear(h, intermediate_size) and dense_4h_to_h, both
 * biased, GELU between. GPTNeoXLayer: input_layernorm and post_attention_
 * layernorm (nn.LayerNorm), x + attn(ln1(x)) + mlp(ln2(x)) when
 * use_parallel_residual (true), else sequential; final_layer_norm; embed_out
 * = Linear(h, vocab, bias=False), untied (tie_word_embeddings false). */
static int read_neox(Rd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const gelu[] = {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", NULL};
    int par = 1;
    if (get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, 2048, &c->positions) ||
        get_bool(r, root, "tie_word_embeddings", 0, &c->tied) ||
        get_bool(r, root, "use_parallel_residual", 1, &par) ||
        get_bool(r, root, "attention_bias", 1, &c->attn_bias) ||
        get_num(r, root, "rotary_emb_base", 10000.0, &c->rope_theta) ||
        get_num(r, root, "rotary_pct", 0.25, &c->rotary_pct) ||
        check_str(r, root, "hidden_act", gelu))
        return APPROF_EPARSE;
    if (c->rotary_pct > 1)
        return rerr(r, "field rotary_pct: %g is above 1", c->rotary_pct);
    if (c->hidden % c->heads)
        return rerr(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    c->kv_heads = c->heads;
    c->head_dim = c->hidden / c->heads;
    c->layer_norm = 1;
    c->fused = 1;
    c->mlp = 2;
    c->mlp_bias = 1;
    c->parallel = par ? 2 : 0;
    return check_archs(r, root, "GPTNeoX");
}

/* An integer under its name or under the older alias transformers still
 * reads (FalconConfig's n_layer, n_head, n_embed). */
static int get_int2(Rd *r, json_t *root, const char *key, const char *alias, int64_t lo, int64_t hi,
                    int64_t def, int *out)
{
    json_t *v = json_object_get(root, key);
    return get_int(r, root, (!v || json_is_null(v)) && json_object_get(root, alias) ? alias : key, lo, hi,
                   def, out);
}

/* falcon: models/falcon/configuration_falcon.py (every field has a class
 * default: Falcon-7B's sizes) and modeling_falcon.py. FalconAttention:
 * query_key_value = Linear(h, qkv, bias=config.bias (false)), qkv = (2
 * num_kv_heads + heads) head_dim with new_decoder_architecture, h + 2
 * head_dim with multi_query (true: one k and v head), else 3 h; dense =
 * Linear(h, h, bias); rotary unless alibi. FalconMLP: dense_h_to_4h =
 * Linear(h, ffn_hidden_size (4 h)), GELU, dense_4h_to_h, bias=config.bias.
 * FalconDecoderLayer: ln_attn and ln_mlp (new decoder with
 * num_ln_in_parallel_attn 2, its default there) or input_layernorm, plus
 * post_attention_layernorm when not parallel_attn; the new decoder and
 * parallel_attn add attention and MLP to the residual together. ln_f;
 * FalconForCausalLM's lm_head is tied (tie_word_embeddings true). */
static int read_falcon(Rd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const gelu[] = {"gelu", NULL};
    int alibi = 0, newdec = 0, mq = 1, par = 1, bias = 0, nln = 0;
    if (get_int2(r, root, "num_hidden_layers", "n_layer", 1, APPROF_ZOO_MAX_LAYERS, 32, &c->layers) ||
        get_int2(r, root, "hidden_size", "n_embed", 1, MAX_SIZE, 4544, &c->hidden) ||
        get_int2(r, root, "num_attention_heads", "n_head", 1, 65536, 71, &c->heads) ||
        get_int(r, root, "vocab_size", 1, MAX_SIZE, 65024, &c->vocab) ||
        get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, 2048, &c->positions) ||
        get_bool(r, root, "tie_word_embeddings", 1, &c->tied) ||
        get_bool(r, root, "alibi", 0, &alibi) ||
        get_bool(r, root, "new_decoder_architecture", 0, &newdec) ||
        get_bool(r, root, "multi_query", 1, &mq) ||
        get_bool(r, root, "parallel_attn", 1, &par) ||
        get_bool(r, root, "bias", 0, &bias) ||
        get_rope(r, root, 10000.0, &c->rope_theta) ||
        check_str(r, root, "activation", gelu))
        return APPROF_EPARSE;
    if (alibi)
        return rerr(r, "field alibi: true is not supported (ALiBi position biases; rotary is)");
    if (c->hidden % c->heads)
        return rerr(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    c->head_dim = c->hidden / c->heads;
    if (get_int(r, root, "num_kv_heads", 1, 65536, c->heads, &c->kv_heads) ||
        get_int(r, root, "ffn_hidden_size", 1, MAX_SIZE, 4 * (int64_t)c->hidden, &c->ffn) ||
        get_int(r, root, "num_ln_in_parallel_attn", 1, 2, newdec ? 2 : 1, &nln))
        return APPROF_EPARSE;
    if (!newdec && mq)
        c->kv_heads = 1;
    if (c->heads % c->kv_heads)
        return rerr(r, "field num_kv_heads: %d does not divide num_attention_heads %d", c->kv_heads, c->heads);
    if (c->head_dim % 2)
        return rerr(r, "field num_attention_heads: a head_dim of %d is odd; rotary position "
                    "embeddings rotate pairs of dimensions", c->head_dim);
    if (newdec && nln == 2)
        c->parallel = 2;
    else if (newdec && !par)
        return rerr(r, "field parallel_attn: false with new_decoder_architecture and one layer norm "
                    "(num_ln_in_parallel_attn 1) leaves FalconDecoderLayer without an MLP input");
    else
        c->parallel = par || newdec;
    c->layer_norm = 1;
    c->fused = 1;
    c->mlp = 2;
    c->attn_bias = c->mlp_bias = bias;
    return check_archs(r, root, "Falcon");
}

/* deepseek_v2, deepseek_v3: transformers' models/deepseek_v3/
 * configuration_deepseek_v3.py and modeling_deepseek_v3.py (deepseek_v2:
 * modular_deepseek_v2.py, the same layers). DeepseekV3Attention (Multi-head
 * Latent Attention): q_proj = Linear(h, heads (qk_nope + qk_rope)) when
 * q_lora_rank is null, else q_a_proj = Linear(h, q_lora_rank, bias=
 * attention_bias), q_a_layernorm = RMSNorm(q_lora_rank), q_b_proj =
 * Linear(q_lora_rank, heads (qk_nope + qk_rope)); kv_a_proj_with_mqa =
 * Linear(h, kv_lora_rank + qk_rope, bias=attention_bias), kv_a_layernorm =
 * RMSNorm(kv_lora_rank), kv_b_proj = Linear(kv_lora_rank, heads (qk_nope +
 * v_head_dim)); o_proj = Linear(heads v_head_dim, h, bias=attention_bias).
 * DeepseekV3DecoderLayer: experts when layer_idx >= first_k_dense_replace
 * (moe_layer_freq, in DeepSeek's own configs, must then be 1), else an MLP
 * of intermediate_size; DeepseekV3MoE: the router's weight [E, h] and
 * e_score_correction_bias [E] (v3: a buffer there, held by the checkpoint and
 * counted here as a parameter; v2's gate is a bias-free Linear), routed
 * experts of moe_intermediate_size, shared experts of n_shared_experts x
 * moe_intermediate_size. The multi-token prediction layers of the
 * checkpoint (num_nextn_predict_layers; DeepseekV3Model ignores
 * model.layers.61.*) are not part of the model. */
static int read_mla(Rd *r, json_t *root, ApprofHfConfig *c)
{
    int v3 = !strcmp(c->model_type, "deepseek_v3"), shared = 0, freq = 1, bias = 0;
    json_t *ql = json_object_get(root, "q_lora_rank");
    if (get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, v3 ? 4096 : 2048, &c->positions) ||
        get_bool(r, root, "tie_word_embeddings", 0, &c->tied) ||
        get_bool(r, root, "attention_bias", 0, &c->attn_bias) ||
        get_bool(r, root, "mlp_bias", 0, &bias) ||
        get_rope(r, root, 10000.0, &c->rope_theta) ||
        get_int(r, root, "kv_lora_rank", 1, MAX_SIZE, 512, &c->kv_lora) ||
        get_int(r, root, "qk_nope_head_dim", 0, 65536, 128, &c->qk_nope) ||
        get_int(r, root, "qk_rope_head_dim", 2, 65536, 64, &c->qk_rope) ||
        get_int(r, root, "v_head_dim", 1, 65536, 128, &c->v_dim) ||
        get_int(r, root, "n_routed_experts", 0, 65536, v3 ? 256 : 64, &c->experts) ||
        get_int(r, root, "num_experts_per_tok", 1, 65536, v3 ? 8 : 1, &c->top_k) ||
        get_int(r, root, "moe_intermediate_size", 1, MAX_SIZE, v3 ? 2048 : 1407, &c->moe_ffn) ||
        get_int(r, root, "n_shared_experts", 0, 65536, v3 ? 1 : 2, &shared) ||
        get_int(r, root, "first_k_dense_replace", 0, APPROF_ZOO_MAX_LAYERS, v3 ? 3 : 0, &c->first_dense) ||
        get_int(r, root, "moe_layer_freq", 1, 1, 1, &freq))
        return APPROF_EPARSE;
    if (bias)
        return rerr(r, "field mlp_bias: true is not supported");
    /* q_lora_rank: null is a plain q_proj; absent, the class default 1536 */
    if (!ql)
        c->q_lora = 1536;
    else if (!json_is_null(ql) && get_int(r, root, "q_lora_rank", 1, MAX_SIZE, 0, &c->q_lora))
        return APPROF_EPARSE;
    {
        static const char *const silu[] = {"silu", "swish", NULL};
        if (check_str(r, root, "hidden_act", silu))
            return APPROF_EPARSE;
    }
    if (c->qk_rope % 2)
        return rerr(r, "field qk_rope_head_dim: %d is odd; rotary position embeddings rotate pairs "
                    "of dimensions", c->qk_rope);
    if ((int64_t)c->heads * (c->qk_nope + c->qk_rope + c->v_dim) > MAX_SIZE)
        return rerr(r, "field num_attention_heads: %d heads of %d + %d + %d are above %lld", c->heads,
                    c->qk_nope, c->qk_rope, c->v_dim, (long long)MAX_SIZE);
    if ((int64_t)shared * c->moe_ffn > MAX_SIZE)
        return rerr(r, "field n_shared_experts: %d shared experts of moe_intermediate_size %d are above "
                    "%lld", shared, c->moe_ffn, (long long)MAX_SIZE);
    if (c->first_dense > c->layers)
        return rerr(r, "field first_k_dense_replace: %d exceeds num_hidden_layers %d", c->first_dense,
                    c->layers);
    if (c->experts && c->top_k > c->experts)
        return rerr(r, "field num_experts_per_tok: %d exceeds the %d experts", c->top_k, c->experts);
    c->shared_ffn = shared * c->moe_ffn;
    c->kv_heads = c->heads;
    c->head_dim = c->qk_nope + c->qk_rope;
    c->score_bias = v3;
    c->moe_freq = freq;
    return check_archs(r, root, v3 ? "DeepseekV3" : "DeepseekV2");
}

static int read_gpt2(Rd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const gelu[] = {"gelu_new", "gelu", NULL};
    if (get_int(r, root, "n_layer", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        get_int(r, root, "n_embd", 1, MAX_SIZE, -1, &c->hidden) ||
        get_int(r, root, "n_head", 1, 65536, -1, &c->heads) ||
        get_int(r, root, "n_positions", 1, MAX_SIZE, -1, &c->positions) ||
        get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        get_bool(r, root, "tie_word_embeddings", 1, &c->tied) ||
        check_str(r, root, "activation_function", gelu))
        return APPROF_EPARSE;
    if (c->hidden % c->heads)
        return rerr(r, "field n_head: %d does not divide n_embd %d", c->heads, c->hidden);
    if (get_int(r, root, "n_inner", 1, MAX_SIZE, 4 * (int64_t)c->hidden, &c->ffn))
        return APPROF_EPARSE;
    c->kv_heads = c->heads;
    c->head_dim = c->hidden / c->heads;
    return 0;
}

static int read_bert(Rd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const gelu[] = {"gelu", "gelu_new", NULL};
    static const char *const abs[] = {"absolute", NULL};
    if (get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, -1, &c->positions) ||
        get_int(r, root, "type_vocab_size", 1, MAX_SIZE, 2, &c->type_vocab) ||
        get_bool(r, root, "tie_word_embeddings", 1, &c->tied) ||
        check_str(r, root, "hidden_act", gelu) ||
        check_str(r, root, "position_embedding_type", abs))
        return APPROF_EPARSE;
    if (c->hidden % c->heads)
        return rerr(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    c->kv_heads = c->heads;
    c->head_dim = c->hidden / c->heads;
    return 0;
}

static const struct {
    const char *model_type, *zoo;
    int (*read)(Rd *r, json_t *root, ApprofHfConfig *c);
} families[] = {
    {"llama", "llama", read_decoder},
    {"mistral", "mistral", read_decoder},
    {"mixtral", "mixtral", read_decoder},
    {"qwen2", "qwen2", read_decoder},
    {"deepseek", "deepseek_moe", read_decoder},
    {"deepseek_v2", "deepseek_moe", read_mla},
    {"deepseek_v3", "deepseek_moe", read_mla},
    {"qwen3", "qwen2", read_variant},
    {"qwen3_moe", "mixtral", read_variant},
    {"gemma", "llama", read_variant},
    {"gemma2", "llama", read_variant},
    {"phi3", "llama", read_variant},
    {"olmo2", "llama", read_variant},
    {"starcoder2", "llama", read_variant},
    {"gpt_neox", "llama", read_neox},
    {"falcon", "llama", read_falcon},
    {"gpt2", "gpt", read_gpt2},
    {"bert", "bert", read_bert},
};

/* A snapshot's checkpoint index: metadata.total_size (bytes of every
 * tensor in the checkpoint's dtype), 0 when the file is absent or has
 * none; a malformed one is an error naming it. */
static int read_index(const char *dir, ApprofHfConfig *out, char *err, size_t errlen)
{
    char p[4096];
    json_error_t je;
    json_t *root, *ts;
    FILE *f;
    if (snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir) >= (int)sizeof p)
        return 0;
    if (!(f = fopen(p, "rb")))
        return 0;
    root = json_loadf(f, 0, &je);
    fclose(f);
    if (!root) {
        snprintf(err, errlen, "%s: line %d, column %d: %s", p, je.line, je.column, je.text);
        return APPROF_EPARSE;
    }
    ts = json_object_get(json_object_get(root, "metadata"), "total_size");
    if (ts && (!json_is_integer(ts) || json_integer_value(ts) <= 0)) {
        snprintf(err, errlen, "%s: field metadata.total_size: expected a positive integer", p);
        json_decref(root);
        return APPROF_EPARSE;
    }
    out->checkpoint_bytes = ts ? (int64_t)json_integer_value(ts) : 0;
    json_decref(root);
    return 0;
}

int approf_hf_config_load(const char *path, ApprofHfConfig *out, char *err, size_t errlen)
{
    char cfgpath[4096];
    Rd r = {path ? path : "config.json", err, errlen};
    json_error_t je;
    json_t *root, *mt, *td;
    int rc = APPROF_EPARSE;
    struct stat sb;
    FILE *f;

    if (err && errlen)
        err[0] = '\0';
    if (!path || !out)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    /* A snapshot directory (what huggingface_hub downloads): its
     * config.json, and the checkpoint index beside it. */
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (snprintf(cfgpath, sizeof cfgpath, "%s/config.json", path) >= (int)sizeof cfgpath) {
            if (err && errlen)
                snprintf(err, errlen, "%s: path too long", path);
            return APPROF_EINVAL;
        }
        if ((rc = read_index(path, out, err, errlen)) < 0)
            return rc;
        rc = APPROF_EPARSE;
        path = cfgpath;
        r.path = cfgpath;
    }
    f = fopen(path, "rb");
    if (!f) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return APPROF_EIO;
    }
    root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    if (!root && strstr(je.text, "duplicate")) {
        /* transformers reads config.json with Python's json: the last of
         * a duplicated key wins; so does jansson without the flag */
        snprintf(out->note, sizeof out->note, "%.120s: line %d: %.100s; its last value is used, "
                 "as transformers does", path, je.line, je.text);
        rewind(f);
        root = json_loadf(f, 0, &je);
    }
    fclose(f);
    if (!root)
        return rerr(&r, "line %d, column %d: %s", je.line, je.column, je.text);
    td = json_object_get(root, "torch_dtype");
    if (json_is_string(td)) {
        const char *t = json_string_value(td);
        out->checkpoint_elem_size = !strcmp(t, "float32") ? 4
                                    : !strcmp(t, "bfloat16") || !strcmp(t, "float16") ? 2 : 0;
    }
    if (!json_is_object(root)) {
        rerr(&r, "expected a JSON object");
        goto cleanup;
    }
    mt = json_object_get(root, "model_type");
    if (!mt) {
        rerr(&r, "field model_type: missing");
        goto cleanup;
    }
    if (!json_is_string(mt)) {
        rerr(&r, "field model_type: expected a string");
        goto cleanup;
    }
    snprintf(out->model_type, sizeof out->model_type, "%s", json_string_value(mt));
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (!strcmp(families[i].model_type, json_string_value(mt))) {
            out->zoo_name = families[i].zoo;
            out->type_vocab = 2;
            rc = families[i].read(&r, root, out);
            goto cleanup;
        }
    rerr(&r, "field model_type: unsupported '%s' (llama, mistral, mixtral, qwen2, "
         "qwen3, qwen3_moe, gemma, gemma2, phi3, olmo2, starcoder2, gpt_neox, falcon, deepseek, "
         "deepseek_v2, deepseek_v3, gpt2, bert)",
         json_string_value(mt));
cleanup:
    json_decref(root);
    return rc;
}

#else /* !HAVE_JANSSON */

int approf_hf_config_load(const char *path, ApprofHfConfig *out, char *err, size_t errlen)
{
    (void)out;
    if (err && errlen)
        snprintf(err, errlen, "%s: Hugging Face configs need jansson, which this build lacks",
                 path ? path : "config.json");
    return APPROF_EUNSUPPORTED;
}

#endif

int approf_zoo_build_hf(const char *path, const ApprofZooOptions *opt, ApprofGraph **out,
                        char *err, size_t errlen)
{
    ApprofHfConfig c;
    ApprofZooOptions o;
    int rc = approf_hf_config_load(path, &c, err, errlen);
    if (rc < 0)
        return rc;
    if (opt)
        o = *opt;
    else
        memset(&o, 0, sizeof o);
    o.preset = NULL;
    o.hf_config = path;
    return approf_zoo_build(c.zoo_name, &o, out, err, errlen);
}
