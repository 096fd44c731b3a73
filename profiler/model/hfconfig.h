/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hugging Face config.json files as zoo models: the reader maps a
 * transformers config (model_type llama, mistral, mixtral, qwen2, deepseek,
 * gpt2, bert; and as variants of the decoder layout qwen3, qwen3_moe, gemma,
 * gemma2, gemma3_text, phi3, olmo2, starcoder2, gpt_neox, falcon, llama4_text;
 * deepseek_v2 and deepseek_v3 with Multi-head Latent Attention; the language
 * model of the multimodal gemma3 and llama4) onto the sizes of the zoo
 * builder of that family, so that a config equal to a preset builds the
 * identical graph (docs/models.md).
 */
#ifndef APPROF_HFCONFIG_H
#define APPROF_HFCONFIG_H

#include <stddef.h>

#include "zoo.h"

/* The sizes of a decoder (llama family) or of a GPT-2 / BERT model, as the
 * zoo builders take them from a preset or from a config.json. */
typedef struct ApprofHfConfig {
    char model_type[32];     /* as in the file */
    const char *zoo_name;    /* the zoo model, the graph's name (static storage):
                              * llama, mistral, mixtral, qwen2, deepseek_moe, gpt, bert;
                              * the variants below build qwen3, qwen3_moe, gemma, gemma2,
                              * gemma3, phi3, olmo2, starcoder2, gpt_neox, falcon,
                              * deepseek (deepseek_v2/v3) and llama4 */
    int layers, hidden, heads, kv_heads, head_dim, ffn, vocab, positions;
    int type_vocab;          /* bert: token type embeddings */
    int tied;                /* the LM head reads the token embedding */
    int qkv_bias;            /* q, k and v projections have a bias (qwen2) */
    int experts, top_k;      /* routed experts and experts per token (0: dense) */
    int moe_ffn;             /* intermediate size of one routed expert */
    int shared_ffn;          /* intermediate size of the shared experts together (0: none) */
    int first_dense;         /* the first layers keep a dense MLP (deepseek) */
    double rope_theta;       /* recorded; the cost does not depend on it */
    int sliding_window;      /* 0: full attention */
    /* Variants of the decoder layout, 0 for Llama's (zoo_llama.c): */
    int qk_norm;             /* RMSNorm of q and k: 1 over the head dim (qwen3), 2 over
                              * the whole projection (olmo2) */
    int norms;               /* 0: pre-norms; 1: pre- and post-norms around attention and
                              * MLP (gemma2); 2: post-norms only (olmo2) */
    int layer_norm;          /* LayerNorm with a bias instead of RMSNorm (starcoder2) */
    int attn_bias;           /* q, k, v and o projections have a bias */
    int mlp;                 /* 0: SwiGLU; 1: GeGLU (gelu(gate) * up, gemma); 2: up, GELU,
                              * down (starcoder2's c_fc, c_proj) */
    int mlp_bias;            /* the MLP projections have a bias */
    int fused;               /* phi3: qkv_proj and gate_up_proj are one GEMM each, split;
                              * gpt_neox, falcon: query_key_value (the MLP is mlp 2) */
    int sparse_step;         /* qwen3_moe: layer l has experts when (l + 1) % step == 0
                              * (0 or 1: every layer) and l is not in mlp_only */
    unsigned char mlp_only[APPROF_ZOO_MAX_LAYERS / 8]; /* bit l: layer l keeps a dense MLP */
    int parallel;            /* 0: attention then MLP; 1: x + attn(n(x)) + mlp(n(x)), one
                              * norm (falcon's parallel_attn); 2: the same with a norm each
                              * (gpt_neox's use_parallel_residual, falcon's new decoder) */
    /* Multi-head Latent Attention (deepseek_v2, deepseek_v3; kv_lora 0: none):
     * q_lora 0 is a plain q_proj; q/k heads of qk_nope + qk_rope, v heads of v_dim */
    int q_lora, kv_lora, qk_nope, qk_rope, v_dim;
    int score_bias;          /* deepseek_v3: the router's e_score_correction_bias[E] */
    int moe_freq;            /* layer l >= first_dense has experts when l % moe_freq == 0 */
    double rotary_pct;       /* gpt_neox: the rotated share of a head (recorded; the rope op
                              * is costed over the whole head) */
    /* A snapshot directory's checkpoint (model.safetensors.index.json beside
     * config.json): metadata.total_size in bytes, 0 when there is none, and
     * torch_dtype's element size (0 when the config names none). */
    int64_t checkpoint_bytes;
    int checkpoint_elem_size;
    char note[320];          /* what the user should hear (a duplicate key's last value
                              * taken), "" when nothing */
} ApprofHfConfig;

/* Reads the config.json at path, or in the snapshot directory path (then
 * its model.safetensors.index.json's total_size too). A key given twice
 * takes its last value, as Python's json (and so transformers) does, and
 * out->note says so. Returns 0; APPROF_EIO when the file cannot be read;
 * APPROF_EPARSE for malformed JSON, an unsupported model_type or a missing
 * or ill-typed field, with "PATH: field F: ..." in err;
 * APPROF_EUNSUPPORTED without jansson. */
int approf_hf_config_load(const char *path, ApprofHfConfig *out, char *err, size_t errlen);

/* The same from the text of a config.json (a zoo preset's), errors named
 * "name: field F: ...". */
int approf_hf_config_parse(const char *name, const char *text, ApprofHfConfig *out, char *err,
                           size_t errlen);

/* Builds the model of the config.json at path with the size overrides and
 * batch of opt (its preset ignored). The zoo name of the family is the
 * graph's name. Errors as approf_hf_config_load and approf_zoo_build; the
 * caller owns *out. */
int approf_zoo_build_hf(const char *path, const ApprofZooOptions *opt, ApprofGraph **out,
                        char *err, size_t errlen);

#endif
