/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The decoders that vary the Llama layout (hfconfig_int.h): qwen3,
 * qwen3_moe, gemma, gemma2, gemma3, phi3, olmo2, starcoder2 (one reader),
 * gpt_neox, falcon, deepseek_v2 / deepseek_v3 (Multi-head Latent
 * Attention) and llama4. Each reader names the fields its transformers
 * config class defines, with that class's defaults, and sets the variants
 * of ApprofHfConfig that zoo_llama.c builds.
 */
#include <stdio.h>
#include <string.h>

#include "hfconfig_int.h"

#define MAX_SIZE HF_MAX_SIZE

#if HAVE_JANSSON

/* The decoders that vary the Llama layout. Each branch follows the
 * transformers files named beside it (huggingface/transformers,
 * src/transformers/models/<model>/configuration_<model>.py for the fields
 * and their class defaults, modeling_<model>.py for the layers). The core
 * sizes are required as for the Llama family; dropout rates, epsilons,
 * softcapping and token ids do not change the parameters and are ignored. */
/* The attention shape the rotary decoders share: an even head_dim (the
 * rotary embedding rotates pairs), kv heads dividing the heads, and the
 * heads' width within the size limit. APPROF_EPARSE (hf_err said why). */
static int check_heads(HfRd *r, const ApprofHfConfig *c)
{
    if (c->head_dim % 2)
        return hf_err(r, "field head_dim: %d is odd; rotary position embeddings rotate pairs of "
                      "dimensions", c->head_dim);
    if (c->heads % c->kv_heads)
        return hf_err(r, "field num_key_value_heads: %d does not divide num_attention_heads %d",
                      c->kv_heads, c->heads);
    if ((int64_t)c->heads * c->head_dim > MAX_SIZE)
        return hf_err(r, "field head_dim: %d heads of %d are above %lld", c->heads, c->head_dim,
                      (long long)MAX_SIZE);
    return 0;
}

int hf_read_variant(HfRd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const silu[] = {"silu", "swish", NULL};
    static const char *const gelu[] = {"gelu_pytorch_tanh", "gelu", "gelu_new", "gelu_fast", NULL};
    const char *mt = c->model_type, *cls;
    int moe = !strcmp(mt, "qwen3_moe"), gemma3 = !strcmp(mt, "gemma3_text");
    int gemma2 = gemma3 || !strcmp(mt, "gemma2");   /* gemma3: gemma2's layer and q/k norms */
    int gemma = gemma2 || !strcmp(mt, "gemma"), qwen3 = moe || !strcmp(mt, "qwen3");
    int olmo2 = !strcmp(mt, "olmo2"), sc2 = !strcmp(mt, "starcoder2");
    int kv_def, hd_def = 0, tied_def = gemma || sc2, bias = 0, use = 1, window = 0;

    if (hf_get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        hf_get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        hf_get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        hf_get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        hf_get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        /* Gemma3TextConfig: max_position_embeddings 131072 */
        hf_get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, gemma3 ? 131072 : -1, &c->positions) ||
        hf_get_rope(r, root, gemma3 ? 1000000.0 : 10000.0, &c->rope_theta))
        return APPROF_EPARSE;
    /* num_key_value_heads: Qwen3Config 32, Qwen3MoeConfig 4, GemmaConfig 16,
     * Gemma2Config and Gemma3TextConfig 4, Starcoder2Config 2; Phi3Config and Olmo2Config None,
     * then num_attention_heads. head_dim: Qwen3Config 128, GemmaConfig,
     * Gemma2Config and Gemma3TextConfig 256; the others have none and the attention takes
     * getattr(config, "head_dim", hidden_size // num_attention_heads). */
    kv_def = !strcmp(mt, "qwen3") ? 32 : moe ? 4 : !strcmp(mt, "gemma") ? 16 : gemma2 ? 4 : sc2 ? 2 : c->heads;
    if (!strcmp(mt, "qwen3"))
        hd_def = 128;
    else if (gemma)
        hd_def = 256;
    if (hf_get_int(r, root, "num_key_value_heads", 1, 65536, kv_def, &c->kv_heads) ||
        hf_get_bool(r, root, "tie_word_embeddings", tied_def, &c->tied))
        return APPROF_EPARSE;
    if (!hd_def && (!json_object_get(root, "head_dim") || json_is_null(json_object_get(root, "head_dim"))) &&
        c->hidden % c->heads)
        return hf_err(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    if (hf_get_int(r, root, "head_dim", 1, 65536, hd_def ? hd_def : c->hidden / c->heads, &c->head_dim))
        return APPROF_EPARSE;
    if (check_heads(r, c))
        return APPROF_EPARSE;
    if (sc2) {
        /* starcoder2: use_bias (default true) on q, k, v, o, c_fc and c_proj;
         * nn.LayerNorm (weight and bias) everywhere; c_fc -> act -> c_proj */
        if (hf_get_bool(r, root, "use_bias", 1, &bias) || hf_check_str(r, root, "hidden_act", gelu))
            return APPROF_EPARSE;
        c->attn_bias = c->mlp_bias = bias;
        c->layer_norm = 1;
        c->mlp = 2;
    } else {
        /* attention_bias: q, k, v and o (Qwen3Attention, GemmaAttention,
         * Olmo2Attention); Phi3 has no such field (qkv_proj bias=False) */
        if (strcmp(mt, "phi3") && hf_get_bool(r, root, "attention_bias", 0, &c->attn_bias))
            return APPROF_EPARSE;
        if (gemma) {
            /* GemmaMLP: ACT2FN[config.hidden_act]; Gemma2MLP:
             * ACT2FN[config.hidden_activation] (gelu_pytorch_tanh) */
            if (hf_check_str(r, root, "hidden_act", gelu) || hf_check_str(r, root, "hidden_activation", gelu))
                return APPROF_EPARSE;
            c->mlp = 1;
        } else if (hf_check_str(r, root, "hidden_act", silu)) {
            return APPROF_EPARSE;
        }
        /* Phi3Attention: qkv_proj = Linear(h, (heads + 2 kv) head_dim) sliced
         * into q, k, v; Phi3MLP: gate_up_proj = Linear(h, 2 ffn), chunk(2) */
        c->fused = !strcmp(mt, "phi3");
    }
    if (gemma3)
        c->qk_norm = 1;   /* Gemma3Attention: q_norm, k_norm = Gemma3RMSNorm(head_dim) */
    if (qwen3) {
        /* Qwen3Attention: q_norm, k_norm = RMSNorm(head_dim) */
        c->qk_norm = 1;
        if (hf_get_bool(r, root, "use_sliding_window", 0, &use))
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
        c->norms = 1;   /* Gemma2DecoderLayer (Gemma3DecoderLayer): input, post_attention,
                         * pre_ and post_feedforward */
    if (!olmo2 && strcmp(mt, "gemma")) {
        /* sliding_window: Qwen3 and Qwen3Moe 4096 when use_sliding_window,
         * Gemma2 4096 (every other layer), Gemma3Text 4096 (five layers of
         * six: sliding_window_pattern 6), Phi3 and Starcoder2 None */
        if (hf_get_int(r, root, "sliding_window", 1, MAX_SIZE, qwen3 || gemma2 ? 4096 : 0, &window))
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
        if (hf_get_int(r, root, "num_experts", 0, 65536, -1, &c->experts) ||
            hf_get_int(r, root, "num_experts_per_tok", 1, 65536, -1, &c->top_k) ||
            hf_get_int(r, root, "moe_intermediate_size", 1, MAX_SIZE, -1, &c->moe_ffn) ||
            hf_get_int(r, root, "decoder_sparse_step", 1, APPROF_ZOO_MAX_LAYERS, 1, &c->sparse_step))
            return APPROF_EPARSE;
        if (only && !json_is_null(only)) {
            if (!json_is_array(only))
                return hf_err(r, "field mlp_only_layers: expected a list of layer indices");
            json_array_foreach(only, i, v) {
                if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= c->layers)
                    return hf_err(r, "field mlp_only_layers: expected layer indices in 0..%d", c->layers - 1);
                c->mlp_only[json_integer_value(v) / 8] |= (unsigned char)(1u << (json_integer_value(v) % 8));
            }
        }
        if (c->experts && c->top_k > c->experts)
            return hf_err(r, "field num_experts_per_tok: %d exceeds the %d experts", c->top_k, c->experts);
    } else if (qwen3 && json_object_get(root, "num_experts")) {
        return hf_err(r, "field num_experts: model_type qwen3 is dense (qwen3_moe has experts)");
    }
    cls = moe ? "Qwen3Moe" : qwen3 ? "Qwen3" : gemma3 ? "Gemma3" : gemma2 ? "Gemma2" : gemma ? "Gemma" : olmo2 ? "Olmo2" :
          sc2 ? "Starcoder2" : "Phi3";
    return hf_check_archs(r, root, cls);
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
int hf_read_neox(HfRd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const gelu[] = {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", NULL};
    int par = 1;
    if (hf_get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        hf_get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        hf_get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        hf_get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        hf_get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        hf_get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, 2048, &c->positions) ||
        hf_get_bool(r, root, "tie_word_embeddings", 0, &c->tied) ||
        hf_get_bool(r, root, "use_parallel_residual", 1, &par) ||
        hf_get_bool(r, root, "attention_bias", 1, &c->attn_bias) ||
        hf_get_num(r, root, "rotary_emb_base", 10000.0, &c->rope_theta) ||
        hf_get_num(r, root, "rotary_pct", 0.25, &c->rotary_pct) ||
        hf_check_str(r, root, "hidden_act", gelu))
        return APPROF_EPARSE;
    if (c->rotary_pct > 1)
        return hf_err(r, "field rotary_pct: %g is above 1", c->rotary_pct);
    if (c->hidden % c->heads)
        return hf_err(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    c->kv_heads = c->heads;
    c->head_dim = c->hidden / c->heads;
    c->layer_norm = 1;
    c->fused = 1;
    c->mlp = 2;
    c->mlp_bias = 1;
    c->parallel = par ? 2 : 0;
    return hf_check_archs(r, root, "GPTNeoX");
}

/* An integer under its name or under the older alias transformers still
 * reads (FalconConfig's n_layer, n_head, n_embed). */
static int get_int2(HfRd *r, json_t *root, const char *key, const char *alias, int64_t lo, int64_t hi,
                    int64_t def, int *out)
{
    json_t *v = json_object_get(root, key);
    return hf_get_int(r, root, (!v || json_is_null(v)) && json_object_get(root, alias) ? alias : key, lo, hi,
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
int hf_read_falcon(HfRd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const gelu[] = {"gelu", NULL};
    int alibi = 0, newdec = 0, mq = 1, par = 1, bias = 0, nln = 0;
    if (get_int2(r, root, "num_hidden_layers", "n_layer", 1, APPROF_ZOO_MAX_LAYERS, 32, &c->layers) ||
        get_int2(r, root, "hidden_size", "n_embed", 1, MAX_SIZE, 4544, &c->hidden) ||
        get_int2(r, root, "num_attention_heads", "n_head", 1, 65536, 71, &c->heads) ||
        hf_get_int(r, root, "vocab_size", 1, MAX_SIZE, 65024, &c->vocab) ||
        hf_get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, 2048, &c->positions) ||
        hf_get_bool(r, root, "tie_word_embeddings", 1, &c->tied) ||
        hf_get_bool(r, root, "alibi", 0, &alibi) ||
        hf_get_bool(r, root, "new_decoder_architecture", 0, &newdec) ||
        hf_get_bool(r, root, "multi_query", 1, &mq) ||
        hf_get_bool(r, root, "parallel_attn", 1, &par) ||
        hf_get_bool(r, root, "bias", 0, &bias) ||
        hf_get_rope(r, root, 10000.0, &c->rope_theta) ||
        hf_check_str(r, root, "activation", gelu))
        return APPROF_EPARSE;
    if (alibi)
        return hf_err(r, "field alibi: true is not supported (ALiBi position biases; rotary is)");
    if (c->hidden % c->heads)
        return hf_err(r, "field num_attention_heads: %d does not divide hidden_size %d", c->heads, c->hidden);
    c->head_dim = c->hidden / c->heads;
    if (hf_get_int(r, root, "num_kv_heads", 1, 65536, c->heads, &c->kv_heads) ||
        hf_get_int(r, root, "ffn_hidden_size", 1, MAX_SIZE, 4 * (int64_t)c->hidden, &c->ffn) ||
        hf_get_int(r, root, "num_ln_in_parallel_attn", 1, 2, newdec ? 2 : 1, &nln))
        return APPROF_EPARSE;
    if (!newdec && mq)
        c->kv_heads = 1;
    if (c->heads % c->kv_heads)
        return hf_err(r, "field num_kv_heads: %d does not divide num_attention_heads %d", c->kv_heads, c->heads);
    if (c->head_dim % 2)
        return hf_err(r, "field num_attention_heads: a head_dim of %d is odd; rotary position "
                    "embeddings rotate pairs of dimensions", c->head_dim);
    if (newdec && nln == 2)
        c->parallel = 2;
    else if (newdec && !par)
        return hf_err(r, "field parallel_attn: false with new_decoder_architecture and one layer norm "
                    "(num_ln_in_parallel_attn 1) leaves FalconDecoderLayer without an MLP input");
    else
        c->parallel = par || newdec;
    c->layer_norm = 1;
    c->fused = 1;
    c->mlp = 2;
    c->attn_bias = c->mlp_bias = bias;
    return hf_check_archs(r, root, "Falcon");
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
int hf_read_mla(HfRd *r, json_t *root, ApprofHfConfig *c)
{
    int v3 = !strcmp(c->model_type, "deepseek_v3"), shared = 0, freq = 1, bias = 0;
    json_t *ql = json_object_get(root, "q_lora_rank");
    if (hf_get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, -1, &c->layers) ||
        hf_get_int(r, root, "hidden_size", 1, MAX_SIZE, -1, &c->hidden) ||
        hf_get_int(r, root, "num_attention_heads", 1, 65536, -1, &c->heads) ||
        hf_get_int(r, root, "intermediate_size", 1, MAX_SIZE, -1, &c->ffn) ||
        hf_get_int(r, root, "vocab_size", 1, MAX_SIZE, -1, &c->vocab) ||
        hf_get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, v3 ? 4096 : 2048, &c->positions) ||
        hf_get_bool(r, root, "tie_word_embeddings", 0, &c->tied) ||
        hf_get_bool(r, root, "attention_bias", 0, &c->attn_bias) ||
        hf_get_bool(r, root, "mlp_bias", 0, &bias) ||
        hf_get_rope(r, root, 10000.0, &c->rope_theta) ||
        hf_get_int(r, root, "kv_lora_rank", 1, MAX_SIZE, 512, &c->kv_lora) ||
        hf_get_int(r, root, "qk_nope_head_dim", 0, 65536, 128, &c->qk_nope) ||
        hf_get_int(r, root, "qk_rope_head_dim", 2, 65536, 64, &c->qk_rope) ||
        hf_get_int(r, root, "v_head_dim", 1, 65536, 128, &c->v_dim) ||
        hf_get_int(r, root, "n_routed_experts", 0, 65536, v3 ? 256 : 64, &c->experts) ||
        hf_get_int(r, root, "num_experts_per_tok", 1, 65536, v3 ? 8 : 1, &c->top_k) ||
        hf_get_int(r, root, "moe_intermediate_size", 1, MAX_SIZE, v3 ? 2048 : 1407, &c->moe_ffn) ||
        hf_get_int(r, root, "n_shared_experts", 0, 65536, v3 ? 1 : 2, &shared) ||
        hf_get_int(r, root, "first_k_dense_replace", 0, APPROF_ZOO_MAX_LAYERS, v3 ? 3 : 0, &c->first_dense) ||
        hf_get_int(r, root, "moe_layer_freq", 1, 1, 1, &freq))
        return APPROF_EPARSE;
    if (bias)
        return hf_err(r, "field mlp_bias: true is not supported");
    /* q_lora_rank: null is a plain q_proj; absent, the class default 1536 */
    if (!ql)
        c->q_lora = 1536;
    else if (!json_is_null(ql) && hf_get_int(r, root, "q_lora_rank", 1, MAX_SIZE, 0, &c->q_lora))
        return APPROF_EPARSE;
    {
        static const char *const silu[] = {"silu", "swish", NULL};
        if (hf_check_str(r, root, "hidden_act", silu))
            return APPROF_EPARSE;
    }
    if (c->qk_rope % 2)
        return hf_err(r, "field qk_rope_head_dim: %d is odd; rotary position embeddings rotate pairs "
                    "of dimensions", c->qk_rope);
    if ((int64_t)c->heads * (c->qk_nope + c->qk_rope + c->v_dim) > MAX_SIZE)
        return hf_err(r, "field num_attention_heads: %d heads of %d + %d + %d are above %lld", c->heads,
                    c->qk_nope, c->qk_rope, c->v_dim, (long long)MAX_SIZE);
    if ((int64_t)shared * c->moe_ffn > MAX_SIZE)
        return hf_err(r, "field n_shared_experts: %d shared experts of moe_intermediate_size %d are above "
                    "%lld", shared, c->moe_ffn, (long long)MAX_SIZE);
    if (c->first_dense > c->layers)
        return hf_err(r, "field first_k_dense_replace: %d exceeds num_hidden_layers %d", c->first_dense,
                    c->layers);
    if (c->experts && c->top_k > c->experts)
        return hf_err(r, "field num_experts_per_tok: %d exceeds the %d experts", c->top_k, c->experts);
    c->shared_ffn = shared * c->moe_ffn;
    c->kv_heads = c->heads;
    c->head_dim = c->qk_nope + c->qk_rope;
    c->score_bias = v3;
    c->moe_freq = freq;
    return hf_check_archs(r, root, v3 ? "DeepseekV3" : "DeepseekV2");
}

/* llama4_text: transformers' models/llama4/configuration_llama4.py
 * (Llama4TextConfig, every field with a class default: Llama 4 Scout's
 * sizes) and modeling_llama4.py. Llama4TextAttention: q_proj, k_proj,
 * v_proj, o_proj (bias=attention_bias, false), heads of head_dim (128); its
 * qk_norm (use_qk_norm) is an L2 norm without weights, and the NoPE layers
 * (no_rope_layers, no_rope_layer_interval) and chunked attention
 * (attention_chunk_size) change no parameter. Llama4TextDecoderLayer:
 * input_layernorm and post_attention_layernorm (RMSNorm); feed_forward is
 * Llama4TextMoe in the layers of moe_layers (default: range(step - 1,
 * layers, interleave_moe_layer_step)), else Llama4TextMLP of
 * intermediate_size_mlp (16384). Llama4TextMoe: router = Linear(h,
 * num_local_experts (16), bias=False), experts' gate_up_proj [E, h, 2 f]
 * and down_proj [E, f, h] with f = intermediate_size (8192), and
 * shared_expert = Llama4TextMLP(config), also of intermediate_size; top
 * num_experts_per_tok (1). Llama4ForCausalLM: model.norm, an untied lm_head
 * (tie_word_embeddings false). */
int hf_read_llama4(HfRd *r, json_t *root, ApprofHfConfig *c)
{
    static const char *const silu[] = {"silu", "swish", NULL};
    json_t *ml = json_object_get(root, "moe_layers"), *v;
    int step = 1, dense = 0, qk = 1;
    size_t i;
    unsigned char moe[APPROF_ZOO_MAX_LAYERS / 8];
    if (hf_get_int(r, root, "num_hidden_layers", 1, APPROF_ZOO_MAX_LAYERS, 48, &c->layers) ||
        hf_get_int(r, root, "hidden_size", 1, MAX_SIZE, 5120, &c->hidden) ||
        hf_get_int(r, root, "num_attention_heads", 1, 65536, 40, &c->heads) ||
        hf_get_int(r, root, "num_key_value_heads", 1, 65536, 8, &c->kv_heads) ||
        hf_get_int(r, root, "head_dim", 2, 65536, 128, &c->head_dim) ||
        hf_get_int(r, root, "intermediate_size", 1, MAX_SIZE, 8192, &c->moe_ffn) ||
        hf_get_int(r, root, "intermediate_size_mlp", 1, MAX_SIZE, 16384, &dense) ||
        hf_get_int(r, root, "vocab_size", 1, MAX_SIZE, 202048, &c->vocab) ||
        hf_get_int(r, root, "max_position_embeddings", 1, MAX_SIZE, 131072, &c->positions) ||
        hf_get_int(r, root, "num_local_experts", 1, 65536, 16, &c->experts) ||
        hf_get_int(r, root, "num_experts_per_tok", 1, 65536, 1, &c->top_k) ||
        hf_get_int(r, root, "interleave_moe_layer_step", 1, APPROF_ZOO_MAX_LAYERS, 1, &step) ||
        hf_get_bool(r, root, "tie_word_embeddings", 0, &c->tied) ||
        hf_get_bool(r, root, "attention_bias", 0, &c->attn_bias) ||
        hf_get_bool(r, root, "use_qk_norm", 1, &qk) ||
        hf_get_rope(r, root, 500000.0, &c->rope_theta) ||
        hf_check_str(r, root, "hidden_act", silu))
        return APPROF_EPARSE;
    if (check_heads(r, c))
        return APPROF_EPARSE;
    if (c->top_k > c->experts)
        return hf_err(r, "field num_experts_per_tok: %d exceeds the %d experts", c->top_k, c->experts);
    memset(moe, 0, sizeof moe);
    if (ml && !json_is_null(ml)) {
        if (!json_is_array(ml))
            return hf_err(r, "field moe_layers: expected a list of layer indices");
        json_array_foreach(ml, i, v) {
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= c->layers)
                return hf_err(r, "field moe_layers: expected layer indices in 0..%d", c->layers - 1);
            moe[json_integer_value(v) / 8] |= (unsigned char)(1u << (json_integer_value(v) % 8));
        }
    } else {
        for (int l = step - 1; l < c->layers; l += step)
            moe[l / 8] |= (unsigned char)(1u << (l % 8));
    }
    /* the builder marks the dense layers (mlp_only) */
    for (int l = 0; l < c->layers; l++)
        if (!((moe[l / 8] >> (l % 8)) & 1))
            c->mlp_only[l / 8] |= (unsigned char)(1u << (l % 8));
    c->ffn = dense;
    c->shared_ffn = c->moe_ffn;
    return hf_check_archs(r, root, "Llama4");
}

#endif
