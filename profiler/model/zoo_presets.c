/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The presets of the Hugging Face families that have a zoo name of their
 * own (qwen3, qwen3_moe, gemma, gemma2, gemma3, phi3, olmo2, starcoder2,
 * gpt_neox, falcon, deepseek, llama4): each is the model's config.json,
 * cut to the fields that set a size or change a default, and read by the
 * same reader as --hf-config (hfconfig.c), so a preset and its hub file
 * build the identical graph. The first preset of a family is its default.
 * The source of each (the hub repository; the copy the values were checked
 * against, and the exact count) is in docs/models.md, "Presets of the
 * Hugging Face families"; tests/model/test_zoo.c checks every count.
 */
#include <stdio.h>
#include <string.h>

#include "zoo_build.h"

typedef struct {
    const char *family, *name, *json;
} HfPreset;

#define QWEN3(L, H, NH, F, TIED) \
    "{\"model_type\": \"qwen3\", \"num_hidden_layers\": " #L ", \"hidden_size\": " #H ", " \
    "\"num_attention_heads\": " #NH ", \"num_key_value_heads\": 8, \"head_dim\": 128, " \
    "\"intermediate_size\": " #F ", \"vocab_size\": 151936, \"max_position_embeddings\": 40960, " \
    "\"tie_word_embeddings\": " #TIED ", \"rope_theta\": 1000000}"

static const HfPreset presets[] = {
    /* Qwen/Qwen3-8B and its siblings */
    {"qwen3", "qwen3-8b", QWEN3(36, 4096, 32, 12288, false)},
    {"qwen3", "qwen3-0.6b", QWEN3(28, 1024, 16, 3072, true)},
    {"qwen3", "qwen3-1.7b", QWEN3(28, 2048, 16, 6144, true)},
    {"qwen3", "qwen3-4b", QWEN3(36, 2560, 32, 9728, true)},
    {"qwen3", "qwen3-14b", QWEN3(40, 5120, 40, 17408, false)},
    {"qwen3", "qwen3-32b", QWEN3(64, 5120, 64, 25600, false)},
    /* Qwen/Qwen3-30B-A3B, Qwen/Qwen3-235B-A22B */
    {"qwen3_moe", "qwen3-30b-a3b",
     "{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 48, \"hidden_size\": 2048, "
     "\"num_attention_heads\": 32, \"num_key_value_heads\": 4, \"head_dim\": 128, "
     "\"intermediate_size\": 6144, \"moe_intermediate_size\": 768, \"num_experts\": 128, "
     "\"num_experts_per_tok\": 8, \"vocab_size\": 151936, \"max_position_embeddings\": 40960, "
     "\"tie_word_embeddings\": false, \"rope_theta\": 1000000}"},
    {"qwen3_moe", "qwen3-235b-a22b",
     "{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 94, \"hidden_size\": 4096, "
     "\"num_attention_heads\": 64, \"num_key_value_heads\": 4, \"head_dim\": 128, "
     "\"intermediate_size\": 12288, \"moe_intermediate_size\": 1536, \"num_experts\": 128, "
     "\"num_experts_per_tok\": 8, \"vocab_size\": 151936, \"max_position_embeddings\": 40960, "
     "\"tie_word_embeddings\": false, \"rope_theta\": 1000000}"},
    /* google/gemma-7b, google/gemma-2b */
    {"gemma", "gemma-7b",
     "{\"model_type\": \"gemma\", \"num_hidden_layers\": 28, \"hidden_size\": 3072, "
     "\"num_attention_heads\": 16, \"num_key_value_heads\": 16, \"head_dim\": 256, "
     "\"intermediate_size\": 24576, \"vocab_size\": 256000, \"max_position_embeddings\": 8192}"},
    {"gemma", "gemma-2b",
     "{\"model_type\": \"gemma\", \"num_hidden_layers\": 18, \"hidden_size\": 2048, "
     "\"num_attention_heads\": 8, \"num_key_value_heads\": 1, \"head_dim\": 256, "
     "\"intermediate_size\": 16384, \"vocab_size\": 256000, \"max_position_embeddings\": 8192}"},
    /* google/gemma-2-9b, -2b, -27b */
    {"gemma2", "gemma-2-9b",
     "{\"model_type\": \"gemma2\", \"num_hidden_layers\": 42, \"hidden_size\": 3584, "
     "\"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"head_dim\": 256, "
     "\"intermediate_size\": 14336, \"vocab_size\": 256000, \"max_position_embeddings\": 8192, "
     "\"sliding_window\": 4096}"},
    {"gemma2", "gemma-2-2b",
     "{\"model_type\": \"gemma2\", \"num_hidden_layers\": 26, \"hidden_size\": 2304, "
     "\"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"head_dim\": 256, "
     "\"intermediate_size\": 9216, \"vocab_size\": 256000, \"max_position_embeddings\": 8192, "
     "\"sliding_window\": 4096}"},
    {"gemma2", "gemma-2-27b",
     "{\"model_type\": \"gemma2\", \"num_hidden_layers\": 46, \"hidden_size\": 4608, "
     "\"num_attention_heads\": 32, \"num_key_value_heads\": 16, \"head_dim\": 128, "
     "\"intermediate_size\": 36864, \"vocab_size\": 256000, \"max_position_embeddings\": 8192, "
     "\"sliding_window\": 4096}"},
    /* google/gemma-3-1b-pt */
    {"gemma3", "gemma-3-1b",
     "{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 26, \"hidden_size\": 1152, "
     "\"num_attention_heads\": 4, \"num_key_value_heads\": 1, \"head_dim\": 256, "
     "\"intermediate_size\": 6912, \"vocab_size\": 262144, \"max_position_embeddings\": 32768, "
     "\"sliding_window\": 512}"},
    /* google/gemma-3-4b-pt, -12b-pt, -27b-pt: text_config (a 262208-row
     * embedding: the tokenizer's 262144 and 64 more) */
    {"gemma3", "gemma-3-4b",
     "{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 34, \"hidden_size\": 2560, "
     "\"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"head_dim\": 256, "
     "\"intermediate_size\": 10240, \"vocab_size\": 262208, \"max_position_embeddings\": 131072, "
     "\"sliding_window\": 1024, \"rope_theta\": 1000000}"},
    {"gemma3", "gemma-3-12b",
     "{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 48, \"hidden_size\": 3840, "
     "\"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"head_dim\": 256, "
     "\"intermediate_size\": 15360, \"vocab_size\": 262208, \"max_position_embeddings\": 131072, "
     "\"sliding_window\": 1024, \"rope_theta\": 1000000}"},
    {"gemma3", "gemma-3-27b",
     "{\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 62, \"hidden_size\": 5376, "
     "\"num_attention_heads\": 32, \"num_key_value_heads\": 16, \"head_dim\": 128, "
     "\"intermediate_size\": 21504, \"vocab_size\": 262208, \"max_position_embeddings\": 131072, "
     "\"sliding_window\": 1024, \"rope_theta\": 1000000}"},
    /* microsoft/Phi-3-mini-4k-instruct */
    {"phi3", "phi-3-mini",
     "{\"model_type\": \"phi3\", \"num_hidden_layers\": 32, \"hidden_size\": 3072, "
     "\"num_attention_heads\": 32, \"num_key_value_heads\": 32, \"intermediate_size\": 8192, "
     "\"vocab_size\": 32064, \"max_position_embeddings\": 4096, \"sliding_window\": 2047, "
     "\"tie_word_embeddings\": false}"},
    /* allenai/OLMo-2-1124-7B, allenai/OLMo-2-1124-13B */
    {"olmo2", "olmo-2-7b",
     "{\"model_type\": \"olmo2\", \"num_hidden_layers\": 32, \"hidden_size\": 4096, "
     "\"num_attention_heads\": 32, \"num_key_value_heads\": 32, \"intermediate_size\": 11008, "
     "\"vocab_size\": 100352, \"max_position_embeddings\": 4096, \"tie_word_embeddings\": false, "
     "\"rope_theta\": 500000}"},
    {"olmo2", "olmo-2-13b",
     "{\"model_type\": \"olmo2\", \"num_hidden_layers\": 40, \"hidden_size\": 5120, "
     "\"num_attention_heads\": 40, \"num_key_value_heads\": 40, \"intermediate_size\": 13824, "
     "\"vocab_size\": 100352, \"max_position_embeddings\": 4096, \"tie_word_embeddings\": false, "
     "\"rope_theta\": 500000}"},
    /* bigcode/starcoder2-7b, -3b */
    {"starcoder2", "starcoder2-7b",
     "{\"model_type\": \"starcoder2\", \"num_hidden_layers\": 32, \"hidden_size\": 4608, "
     "\"num_attention_heads\": 36, \"num_key_value_heads\": 4, \"intermediate_size\": 18432, "
     "\"vocab_size\": 49152, \"max_position_embeddings\": 16384, \"sliding_window\": 4096, "
     "\"use_bias\": true, \"rope_theta\": 1000000}"},
    {"starcoder2", "starcoder2-3b",
     "{\"model_type\": \"starcoder2\", \"num_hidden_layers\": 30, \"hidden_size\": 3072, "
     "\"num_attention_heads\": 24, \"num_key_value_heads\": 2, \"intermediate_size\": 12288, "
     "\"vocab_size\": 49152, \"max_position_embeddings\": 16384, \"sliding_window\": 4096, "
     "\"use_bias\": true, \"rope_theta\": 999999.4420358813}"},
    /* bigcode/starcoder2-15b (no tie_word_embeddings: Starcoder2Config's true) */
    {"starcoder2", "starcoder2-15b",
     "{\"model_type\": \"starcoder2\", \"num_hidden_layers\": 40, \"hidden_size\": 6144, "
     "\"num_attention_heads\": 48, \"num_key_value_heads\": 4, \"intermediate_size\": 24576, "
     "\"vocab_size\": 49152, \"max_position_embeddings\": 16384, \"sliding_window\": 4096, "
     "\"use_bias\": true, \"rope_theta\": 100000}"},
    /* EleutherAI/gpt-neox-20b, EleutherAI/pythia-* */
    {"gpt_neox", "gpt-neox-20b",
     "{\"model_type\": \"gpt_neox\", \"num_hidden_layers\": 44, \"hidden_size\": 6144, "
     "\"num_attention_heads\": 64, \"intermediate_size\": 24576, \"vocab_size\": 50432, "
     "\"max_position_embeddings\": 2048, \"hidden_act\": \"gelu_fast\", \"rotary_pct\": 0.25, "
     "\"use_parallel_residual\": true, \"tie_word_embeddings\": false}"},
    {"gpt_neox", "pythia-1.4b",
     "{\"model_type\": \"gpt_neox\", \"num_hidden_layers\": 24, \"hidden_size\": 2048, "
     "\"num_attention_heads\": 16, \"intermediate_size\": 8192, \"vocab_size\": 50304, "
     "\"max_position_embeddings\": 2048, \"rotary_pct\": 0.25, \"use_parallel_residual\": true, "
     "\"tie_word_embeddings\": false}"},
    {"gpt_neox", "pythia-6.9b",
     "{\"model_type\": \"gpt_neox\", \"num_hidden_layers\": 32, \"hidden_size\": 4096, "
     "\"num_attention_heads\": 32, \"intermediate_size\": 16384, \"vocab_size\": 50432, "
     "\"max_position_embeddings\": 2048, \"rotary_pct\": 0.25, \"use_parallel_residual\": true, "
     "\"tie_word_embeddings\": false}"},
    {"gpt_neox", "pythia-12b",
     "{\"model_type\": \"gpt_neox\", \"num_hidden_layers\": 36, \"hidden_size\": 5120, "
     "\"num_attention_heads\": 40, \"intermediate_size\": 20480, \"vocab_size\": 50688, "
     "\"max_position_embeddings\": 2048, \"rotary_pct\": 0.25, \"use_parallel_residual\": true, "
     "\"tie_word_embeddings\": false}"},
    /* tiiuae/falcon-7b */
    {"falcon", "falcon-7b",
     "{\"model_type\": \"falcon\", \"num_hidden_layers\": 32, \"hidden_size\": 4544, "
     "\"num_attention_heads\": 71, \"vocab_size\": 65024, \"multi_query\": true, "
     "\"parallel_attn\": true, \"new_decoder_architecture\": false, \"bias\": false, "
     "\"alibi\": false}"},
    /* deepseek-ai/DeepSeek-V3, deepseek-ai/DeepSeek-V2-Lite */
    {"deepseek", "deepseek-v3",
     "{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 61, \"hidden_size\": 7168, "
     "\"num_attention_heads\": 128, \"intermediate_size\": 18432, \"vocab_size\": 129280, "
     "\"max_position_embeddings\": 163840, \"q_lora_rank\": 1536, \"kv_lora_rank\": 512, "
     "\"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64, \"v_head_dim\": 128, "
     "\"n_routed_experts\": 256, \"num_experts_per_tok\": 8, \"moe_intermediate_size\": 2048, "
     "\"n_shared_experts\": 1, \"first_k_dense_replace\": 3, \"moe_layer_freq\": 1, "
     "\"tie_word_embeddings\": false}"},
    {"deepseek", "deepseek-v2-lite",
     "{\"model_type\": \"deepseek_v2\", \"num_hidden_layers\": 27, \"hidden_size\": 2048, "
     "\"num_attention_heads\": 16, \"intermediate_size\": 10944, \"vocab_size\": 102400, "
     "\"max_position_embeddings\": 163840, \"q_lora_rank\": null, \"kv_lora_rank\": 512, "
     "\"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64, \"v_head_dim\": 128, "
     "\"n_routed_experts\": 64, \"num_experts_per_tok\": 6, \"moe_intermediate_size\": 1408, "
     "\"n_shared_experts\": 2, \"first_k_dense_replace\": 1, \"moe_layer_freq\": 1, "
     "\"tie_word_embeddings\": false}"},
    /* meta-llama/Llama-4-Scout-17B-16E (its text_config) */
    {"llama4", "llama-4-scout",
     "{\"model_type\": \"llama4_text\", \"num_hidden_layers\": 48, \"hidden_size\": 5120, "
     "\"num_attention_heads\": 40, \"num_key_value_heads\": 8, \"head_dim\": 128, "
     "\"intermediate_size\": 8192, \"intermediate_size_mlp\": 16384, \"vocab_size\": 202048, "
     "\"max_position_embeddings\": 262144, \"num_local_experts\": 16, \"num_experts_per_tok\": 1, "
     "\"interleave_moe_layer_step\": 1, \"tie_word_embeddings\": false}"},
    /* meta-llama/Llama-4-Maverick-17B-128E (its text_config): experts on
     * every other layer, the dense layers' MLP intermediate_size_mlp */
    {"llama4", "llama-4-maverick",
     "{\"model_type\": \"llama4_text\", \"num_hidden_layers\": 48, \"hidden_size\": 5120, "
     "\"num_attention_heads\": 40, \"num_key_value_heads\": 8, \"head_dim\": 128, "
     "\"intermediate_size\": 8192, \"intermediate_size_mlp\": 16384, \"vocab_size\": 202048, "
     "\"max_position_embeddings\": 1048576, \"num_local_experts\": 128, "
     "\"num_experts_per_tok\": 1, \"interleave_moe_layer_step\": 2, \"use_qk_norm\": false, "
     "\"rope_theta\": 500000, \"tie_word_embeddings\": false}"},
};

const char *zoo_hf_preset(const char *family, const char *name)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].family, family) && (!name || !strcmp(presets[i].name, name)))
            return presets[i].json;
    return NULL;
}

const char *zoo_hf_presets(const char *family, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].family, family) && off < len)
            off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "|" : "", presets[i].name);
    return buf;
}
