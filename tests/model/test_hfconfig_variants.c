/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Hugging Face families built as variants of the decoder (qwen3,
 * qwen3_moe, gemma, gemma2, gemma3, phi3, olmo2, starcoder2, gpt_neox,
 * falcon, deepseek_v2, deepseek_v3, llama4; docs/models.md): on
 * small configs written here, the parameters transformers' modeling files
 * create are in the graph with their shapes (q/k norms per head or per
 * projection, sandwich and post norms, LayerNorm biases, the MLP's biases,
 * which layers have experts), the class defaults apply to absent fields,
 * and bad fields are refused naming the file and the field. The published
 * models' counts are tests/model/hf_params.py's (test model_hf_params).
 */
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "config.h"
#include "cunit_run.h"
#include "graph.h"
#include "model/hfconfig.h"
#include "model/zoo.h"

static const char *const FILE_NAME = "test_hfconfig_variants.json";

/* 2 layers of 64, 4 heads unless HEADS(n) follows */
#define BASE(MT) \
    "{\"model_type\": \"" MT "\", \"hidden_size\": 64, " \
    "\"num_hidden_layers\": 2, \"intermediate_size\": 128, \"vocab_size\": 100, " \
    "\"max_position_embeddings\": 32"
#define SIZES(MT) BASE(MT) ", \"num_attention_heads\": 4"
#define HEADS(MT, N) BASE(MT) ", \"num_attention_heads\": " #N

static void write_text(const char *text)
{
    FILE *f = fopen(FILE_NAME, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

/* Builds the config text; NULL on failure (reported). */
static ApprofGraph *build(const char *text)
{
    ApprofGraph *g = NULL;
    ApprofZooOptions o;
    char err[512] = "";
    write_text(text);
    memset(&o, 0, sizeof o);
    o.batch = 1;
    if (approf_zoo_build_hf(FILE_NAME, &o, &g, err, sizeof err) < 0)
        fprintf(stderr, "\n  %s\n", err);
    CU_ASSERT_PTR_NOT_NULL(g);
    return g;
}

/* The number of elements of parameter name, 0 when absent. */
static int64_t param(const ApprofGraph *g, const char *name)
{
    for (size_t i = 0; g && i < g->n_tensors; i++)
        if (g->tensors[i].role == APPROF_TENSOR_PARAM && !strcmp(g->tensors[i].name, name)) {
            int64_t n = 1;
            for (int d = 0; d < g->tensors[i].ndim; d++)
                n *= g->tensors[i].dims[d];
            return n;
        }
    return 0;
}

static int count_ops(const ApprofGraph *g, ApprofOpKind kind)
{
    int n = 0;
    for (size_t i = 0; g && i < g->n_ops; i++)
        n += g->ops[i].kind == kind;
    return n;
}

static void test_qwen3(void)
{
    /* head_dim 32 while hidden / heads is 16; kv heads 2 */
    ApprofGraph *g = build(SIZES("qwen3") ", \"num_key_value_heads\": 2, \"head_dim\": 32, "
                           "\"architectures\": [\"Qwen3ForCausalLM\"]}");
    int64_t attn = 64 * 128 + 2 * 64 * 64 + 128 * 64 + 2 * 32;
    CU_ASSERT_STRING_EQUAL(g->name, "qwen3");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_norm/scale"), 32);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/self_attn/k_norm/scale"), 32);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_proj/kernel"), 64 * 128);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_proj/bias"), 0);
    CU_ASSERT_EQUAL(param(g, "lm_head/kernel"), 100 * 64);   /* tie_word_embeddings false */
    CU_ASSERT_EQUAL(approf_graph_num_params(g),
                    2 * (attn + 3 * 64 * 128 + 2 * 64) + 2 * 100 * 64 + 64);
    approf_graph_free(&g);
    /* attention_bias: q, k, v and o */
    g = build(SIZES("qwen3") ", \"num_key_value_heads\": 4, \"head_dim\": 16, \"attention_bias\": true}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_proj/bias"), 64);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/o_proj/bias"), 64);
    approf_graph_free(&g);
}

static void test_qwen3_moe(void)
{
    /* 4 layers, experts where (l + 1) % 2 == 0 and l not in [3]: layer 1 only */
    ApprofGraph *g = build(
        "{\"model_type\": \"qwen3_moe\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
        "\"num_hidden_layers\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
        "\"max_position_embeddings\": 32, \"num_experts\": 8, \"num_experts_per_tok\": 2, "
        "\"moe_intermediate_size\": 24, \"decoder_sparse_step\": 2, \"mlp_only_layers\": [3], "
        "\"num_key_value_heads\": 2}");
    CU_ASSERT_STRING_EQUAL(g->name, "qwen3_moe");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/mlp/gate_proj/kernel"), 64 * 128);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/mlp/gate/kernel"), 64 * 8);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/mlp/experts/gate_proj/kernel"), 8 * 64 * 24);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/mlp/gate_proj/kernel"), 0);
    CU_ASSERT_EQUAL(param(g, "model.layers.2/mlp/gate_proj/kernel"), 64 * 128);
    CU_ASSERT_EQUAL(param(g, "model.layers.3/mlp/experts/gate_proj/kernel"), 0);
    CU_ASSERT_EQUAL(param(g, "model.layers.3/mlp/gate_proj/kernel"), 64 * 128);
    CU_ASSERT_EQUAL(param(g, "model.layers.3/self_attn/q_norm/scale"), 16);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_TOPK_ROUTER), 1);
    approf_graph_free(&g);
}

static void test_gemma(void)
{
    /* defaults: head_dim 256, 16 kv heads (gemma) / 4 (gemma2), tied */
    ApprofGraph *g = build(HEADS("gemma", 16) "}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/k_proj/kernel"), 64 * 16 * 256);
    CU_ASSERT_EQUAL(param(g, "lm_head/kernel"), 0);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_GELU), 2);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_SILU), 0);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_RMS_NORM), 2 * 2 + 1);
    approf_graph_free(&g);
    g = build(HEADS("gemma2", 8) "}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/k_proj/kernel"), 64 * 4 * 256);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/pre_feedforward_layernorm/scale"), 64);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/post_feedforward_layernorm/scale"), 64);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_RMS_NORM), 2 * 4 + 1);
    CU_ASSERT_EQUAL(param(g, "lm_head/kernel"), 0);
    approf_graph_free(&g);
    /* an explicit untied head */
    g = build(SIZES("gemma") ", \"num_key_value_heads\": 4, \"head_dim\": 16, \"tie_word_embeddings\": false}");
    CU_ASSERT_EQUAL(param(g, "lm_head/kernel"), 100 * 64);
    approf_graph_free(&g);
}

/* gemma3_text (Gemma3TextConfig's defaults: head_dim 256, 4 kv heads, tied)
 * is gemma2's layer with q/k RMSNorms over the head dim; a gemma3 file
 * (Gemma3ForConditionalGeneration) builds its text_config's model */
static void test_gemma3(void)
{
    ApprofHfConfig c;
    char err[512] = "";
    ApprofGraph *g = build(HEADS("gemma3_text", 8) "}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/k_proj/kernel"), 64 * 4 * 256);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/self_attn/q_norm/scale"), 256);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/self_attn/k_norm/scale"), 256);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/pre_feedforward_layernorm/scale"), 64);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_RMS_NORM), 2 * (4 + 2) + 1);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_GELU), 2);
    CU_ASSERT_EQUAL(param(g, "lm_head/kernel"), 0);
    approf_graph_free(&g);
    /* max_position_embeddings is optional (131072) */
    g = build("{\"model_type\": \"gemma3_text\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
              "\"intermediate_size\": 128, \"vocab_size\": 100, \"num_attention_heads\": 8}");
    CU_ASSERT_PTR_NOT_NULL(g);
    approf_graph_free(&g);
    write_text("{\"model_type\": \"gemma3\", \"architectures\": [\"Gemma3ForConditionalGeneration\"], "
               "\"text_config\": " HEADS("gemma3_text", 8) "}, \"vision_config\": {\"hidden_size\": 1152}}");
    CU_ASSERT_EQUAL(approf_hf_config_load(FILE_NAME, &c, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(c.model_type, "gemma3_text");
    CU_ASSERT_EQUAL(c.qk_norm, 1);
    CU_ASSERT_EQUAL(c.norms, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.note, "vision encoder"));
}

/* llama4_text: routed experts (intermediate_size) and a shared expert of
 * the same size in the layers of moe_layers, or every
 * interleave_moe_layer_step-th (from step - 1); the others a dense MLP of
 * intermediate_size_mlp; no q/k norm weights (an L2 norm) */
static void test_llama4(void)
{
#define L4 "{\"model_type\": \"llama4_text\", \"hidden_size\": 64, \"num_hidden_layers\": 4, " \
    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, " \
    "\"intermediate_size\": 24, \"intermediate_size_mlp\": 128, \"vocab_size\": 100, " \
    "\"num_local_experts\": 8, \"num_experts_per_tok\": 1"
    ApprofHfConfig c;
    char err[512] = "";
    ApprofGraph *g = build(L4 ", \"interleave_moe_layer_step\": 2}");
    for (int l = 0; l < 4; l++) {
        char name[96];
        int moe = l % 2 == 1;
        snprintf(name, sizeof name, "model.layers.%d/mlp/gate_proj/kernel", l);
        CU_ASSERT_EQUAL(param(g, name), moe ? 0 : 64 * 128);
        snprintf(name, sizeof name, "model.layers.%d/mlp/experts/gate_proj/kernel", l);
        CU_ASSERT_EQUAL(param(g, name), moe ? 8 * 64 * 24 : 0);
        snprintf(name, sizeof name, "model.layers.%d/mlp/shared_experts/up_proj/kernel", l);
        CU_ASSERT_EQUAL(param(g, name), moe ? 64 * 24 : 0);
        snprintf(name, sizeof name, "model.layers.%d/mlp/gate/kernel", l);
        CU_ASSERT_EQUAL(param(g, name), moe ? 64 * 8 : 0);
    }
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_norm/scale"), 0);
    CU_ASSERT_EQUAL(param(g, "lm_head/kernel"), 100 * 64);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_TOPK_ROUTER), 2);
    approf_graph_free(&g);
    /* moe_layers overrides the step */
    g = build(L4 ", \"interleave_moe_layer_step\": 2, \"moe_layers\": [0]}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/mlp/experts/down_proj/kernel"), 8 * 24 * 64);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/mlp/experts/down_proj/kernel"), 0);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_TOPK_ROUTER), 1);
    approf_graph_free(&g);
    /* Llama4TextConfig's defaults are Llama 4 Scout's sizes */
    write_text("{\"model_type\": \"llama4\", \"text_config\": {}}");
    CU_ASSERT_EQUAL(approf_hf_config_load(FILE_NAME, &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.layers, 48);
    CU_ASSERT_EQUAL(c.hidden, 5120);
    CU_ASSERT_EQUAL(c.experts, 16);
    CU_ASSERT_EQUAL(c.moe_ffn, 8192);
    CU_ASSERT_EQUAL(c.shared_ffn, 8192);
    CU_ASSERT_EQUAL(c.ffn, 16384);
    CU_ASSERT_EQUAL(c.vocab, 202048);
#undef L4
}

static void test_phi3_olmo2_starcoder2(void)
{
    ApprofGraph *g = build(SIZES("phi3") ", \"num_key_value_heads\": 2}");
    /* one qkv_proj GEMM, one gate_up_proj, each split: the parameters of
     * the separate projections */
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/qkv_proj/kernel"), 64 * (64 + 2 * 32));
    CU_ASSERT_EQUAL(param(g, "model.layers.1/mlp/gate_up_proj/kernel"), 64 * 2 * 128);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_proj/kernel"), 0);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_SPLIT), 2 * 2);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_SILU), 2);
    CU_ASSERT_EQUAL(approf_graph_num_params(g),
                    2 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128 + 2 * 64) + 2 * 100 * 64 + 64);
    approf_graph_free(&g);
    g = build(SIZES("olmo2") ", \"num_key_value_heads\": 2}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_norm/scale"), 64);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/k_norm/scale"), 32);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/input_layernorm/scale"), 0);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/post_feedforward_layernorm/scale"), 64);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_RMS_NORM), 2 * 4 + 1);
    approf_graph_free(&g);
    /* use_bias true by default, 2 kv heads by default, tied */
    g = build(SIZES("starcoder2") "}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/k_proj/kernel"), 64 * 32);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/o_proj/bias"), 64);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/mlp/c_fc/bias"), 128);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/mlp/c_proj/bias"), 64);
    CU_ASSERT_EQUAL(param(g, "model.norm/bias"), 64);
    CU_ASSERT_EQUAL(param(g, "lm_head/kernel"), 0);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_LAYER_NORM), 2 * 2 + 1);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_RMS_NORM), 0);
    approf_graph_free(&g);
    g = build(SIZES("starcoder2") ", \"use_bias\": false}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/o_proj/bias"), 0);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/mlp/c_fc/bias"), 0);
    CU_ASSERT_EQUAL(param(g, "model.norm/bias"), 64);   /* nn.LayerNorm keeps its bias */
    approf_graph_free(&g);
}

/* gpt_neox: query_key_value and dense with biases, LayerNorms, biased GELU
 * MLP, the parallel residual (two adds per layer, both from x), untied
 * embed_out; falcon: multi_query's one k/v head, no biases, one shared
 * norm (parallel_attn), the new decoder's kv heads and two norms, tied */
static void test_neox_falcon(void)
{
    int64_t h = 64, f = 128, v = 100;
    ApprofGraph *g = build(SIZES("gpt_neox") ", \"architectures\": [\"GPTNeoXForCausalLM\"]}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/query_key_value/kernel"), h * 3 * h);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/query_key_value/bias"), 3 * h);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/dense/bias"), h);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/mlp/dense_h_to_4h/bias"), f);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/mlp/dense_4h_to_h/bias"), h);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/post_attention_layernorm/bias"), h);
    CU_ASSERT_EQUAL(param(g, "lm_head/kernel"), h * v);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_LAYER_NORM), 2 * 2 + 1);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_SPLIT), 2);
    CU_ASSERT_EQUAL(approf_graph_num_params(g),
                    2 * (4 * h + 3 * h * h + 3 * h + h * h + h + 2 * h * f + f + h) + 2 * v * h + 2 * h);
    /* the parallel residual: the MLP's norm reads the layer's input */
    {
        int in1 = -1, in2 = -2;
        for (size_t i = 0; g && i < g->n_ops; i++) {
            if (!strcmp(g->ops[i].name, "model.layers.1/input_layernorm"))
                in1 = g->ops[i].inputs[0];
            if (!strcmp(g->ops[i].name, "model.layers.1/post_attention_layernorm"))
                in2 = g->ops[i].inputs[0];
        }
        CU_ASSERT_EQUAL(in1, in2);
    }
    approf_graph_free(&g);
    g = build(SIZES("gpt_neox") ", \"use_parallel_residual\": false, \"attention_bias\": false, "
              "\"tie_word_embeddings\": true}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/query_key_value/bias"), 0);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/mlp/dense_h_to_4h/bias"), f);
    CU_ASSERT_EQUAL(param(g, "lm_head/kernel"), 0);
    approf_graph_free(&g);
    /* falcon: multi_query (true by default), parallel_attn, no bias, tied,
     * ffn 4 h */
    g = build("{\"model_type\": \"falcon\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
              "\"num_attention_heads\": 4, \"vocab_size\": 100}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/query_key_value/kernel"), h * (h + 2 * 16));
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/query_key_value/bias"), 0);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/mlp/dense_h_to_4h/kernel"), h * 4 * h);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/post_attention_layernorm/scale"), 0);
    CU_ASSERT_EQUAL(param(g, "lm_head/kernel"), 0);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_LAYER_NORM), 2 + 1);
    CU_ASSERT_EQUAL(approf_graph_num_params(g),
                    2 * (2 * h + h * (h + 32) + h * h + 8 * h * h) + v * h + 2 * h);
    approf_graph_free(&g);
    /* the new decoder: num_kv_heads 2, ln_attn and ln_mlp, biases */
    g = build("{\"model_type\": \"falcon\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
              "\"num_attention_heads\": 4, \"vocab_size\": 100, \"new_decoder_architecture\": true, "
              "\"num_kv_heads\": 2, \"bias\": true, \"ffn_hidden_size\": 128}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/query_key_value/kernel"), h * (h + 2 * 32));
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/dense/bias"), h);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/mlp/dense_4h_to_h/bias"), h);
    CU_ASSERT_EQUAL(count_ops(g, APPROF_OP_LAYER_NORM), 2 * 2 + 1);
    approf_graph_free(&g);
    /* sequential (parallel_attn false): post_attention_layernorm */
    g = build("{\"model_type\": \"falcon\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
              "\"num_attention_heads\": 4, \"vocab_size\": 100, \"parallel_attn\": false, "
              "\"multi_query\": false}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/post_attention_layernorm/scale"), h);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/query_key_value/kernel"), h * 3 * h);
    approf_graph_free(&g);
}

/* The forward FLOPs of the ops whose name holds part and are of kind. */
static double flops_of(const ApprofGraph *g, ApprofOpKind kind, const char *part)
{
    double f = 0;
    for (size_t i = 0; g && i < g->n_ops; i++)
        if (g->ops[i].kind == kind && strstr(g->ops[i].name, part))
            f += approf_op_flops(g, (int)i, 0);
    return f;
}

/* deepseek_v3 / deepseek_v2: Multi-head Latent Attention's parameters with
 * their shapes (q_lora_rank or a plain q_proj, the kv latent and its norm,
 * kv_b_proj, o_proj over heads x v_head_dim), the router's correction bias
 * (v3 only), dense layers before first_k_dense_replace, and the attention's
 * FLOPs: eager exactly q_nope k_nope^T + q_rope k_rope^T and P v; flash
 * over q/k heads of qk_nope + qk_rope with v padded to that width. */
static void test_mla(void)
{
    int64_t h = 64, H = 4, dn = 8, dr = 4, dv = 6, ql = 24, lat = 16, S = 16, e = 4, mf = 16;
    const char *cfg = "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 64, \"num_hidden_layers\": 3, "
        "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
        "\"max_position_embeddings\": 16, \"q_lora_rank\": 24, \"kv_lora_rank\": 16, "
        "\"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 4, \"v_head_dim\": 6, \"first_k_dense_replace\": 1, "
        "\"n_routed_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 16, "
        "\"n_shared_experts\": 1, \"architectures\": [\"DeepseekV3ForCausalLM\"]}";
    int64_t attn = h * ql + ql + ql * H * (dn + dr) + h * (lat + dr) + lat + lat * H * (dn + dv) + H * dv * h;
    int64_t dense = 3 * h * 128, sparse = h * e + e + e * 3 * h * mf + 3 * h * mf;
    ApprofGraph *g = build(cfg);
    double d = (double)dn + dr;
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_a_proj/kernel"), h * ql);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_a_layernorm/scale"), ql);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_b_proj/kernel"), ql * H * (dn + dr));
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/kv_a_proj_with_mqa/kernel"), h * (lat + dr));
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/kv_a_layernorm/scale"), lat);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/kv_b_proj/kernel"), lat * H * (dn + dv));
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/o_proj/kernel"), H * dv * h);
    CU_ASSERT_EQUAL(param(g, "model.layers.0/mlp/gate_proj/kernel"), h * 128);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/mlp/gate/e_score_correction_bias"), e);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/mlp/experts/gate_proj/kernel"), e * h * mf);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/mlp/shared_experts/up_proj/kernel"), h * mf);
    CU_ASSERT_EQUAL(approf_graph_num_params(g),
                    3 * (attn + 2 * h) + dense + 2 * sparse + 2 * 100 * h + h);
    /* flash: S = Q K^T and O = P V over qk_nope + qk_rope, causal (half the
     * keys: (S + 1) / 2) */
    CU_ASSERT_DOUBLE_EQUAL(flops_of(g, APPROF_OP_ATTENTION, "layers.0/"),
                           2.0 * 2 * H * S * ((S + 1) / 2) * d, 1e-6);
    approf_graph_free(&g);
    {
        ApprofZooOptions o;
        char err[512] = "";
        memset(&o, 0, sizeof o);
        o.batch = 1;
        o.attention = "eager";
        write_text(cfg);
        CU_ASSERT_EQUAL(approf_zoo_build_hf(FILE_NAME, &o, &g, err, sizeof err), 0);
        CU_ASSERT_EQUAL(approf_graph_num_params(g), 3 * (attn + 2 * h) + dense + 2 * sparse + 2 * 100 * h + h);
        /* q_nope k_nope^T, q_rope k_rope^T (k_rope one head, broadcast), P v */
        CU_ASSERT_DOUBLE_EQUAL(flops_of(g, APPROF_OP_BATCH_MATMUL, "layers.0/self_attn"),
                               2.0 * H * S * S * (dn + dr + dv), 1e-6);
        approf_graph_free(&g);
    }
    /* deepseek_v2: q_lora_rank null is a plain q_proj; no correction bias */
    g = build("{\"model_type\": \"deepseek_v2\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
              "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
              "\"q_lora_rank\": null, \"kv_lora_rank\": 16, \"n_routed_experts\": 4, "
              "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 16, \"first_k_dense_replace\": 1}");
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_proj/kernel"), h * H * (128 + 64));
    CU_ASSERT_EQUAL(param(g, "model.layers.0/self_attn/q_a_proj/kernel"), 0);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/mlp/gate/e_score_correction_bias"), 0);
    CU_ASSERT_EQUAL(param(g, "model.layers.1/mlp/shared_experts/up_proj/kernel"), h * 2 * 16);
    approf_graph_free(&g);
}

static void expect(const char *text, const char *want)
{
    ApprofHfConfig c;
    ApprofGraph *g = NULL;
    char err[512] = "";
    int rc;
    write_text(text);
    rc = approf_hf_config_load(FILE_NAME, &c, err, sizeof err);
    CU_ASSERT_EQUAL(rc, APPROF_EPARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, FILE_NAME));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    if (rc != APPROF_EPARSE || !strstr(err, want))
        fprintf(stderr, "\n  rc %d, got: %s (want %s)\n", rc, err, want);
    CU_ASSERT_EQUAL(approf_zoo_build_hf(FILE_NAME, NULL, &g, err, sizeof err), APPROF_EPARSE);
    CU_ASSERT_PTR_NULL(g);
}

static void test_errors(void)
{
    expect(SIZES("qwen3") ", \"num_key_value_heads\": 4, \"architectures\": [\"Qwen3Model\"]}", "field architectures: 'Qwen3Model'");
    expect(HEADS("gemma2", 8) ", \"architectures\": \"Gemma2ForCausalLM\"}", "field architectures");
    expect(SIZES("qwen3") ", \"num_key_value_heads\": 4, \"num_experts\": 8}", "field num_experts");
    expect(SIZES("qwen3_moe") ", \"num_experts\": 8, \"num_experts_per_tok\": 2, "
           "\"moe_intermediate_size\": 16, \"mlp_only_layers\": [2]}", "field mlp_only_layers");
    expect(SIZES("qwen3_moe") ", \"num_experts\": 8, \"num_experts_per_tok\": 2, "
           "\"moe_intermediate_size\": 16, \"decoder_sparse_step\": 0}", "field decoder_sparse_step");
    expect(SIZES("qwen3_moe") ", \"num_experts\": 2, \"num_experts_per_tok\": 4, "
           "\"moe_intermediate_size\": 16}", "field num_experts_per_tok");
    expect(SIZES("qwen3_moe") ", \"num_experts\": 8}", "field num_experts_per_tok: missing");
    expect(HEADS("gemma", 16) ", \"hidden_act\": \"relu\"}", "field hidden_act: 'relu'");
    expect(SIZES("starcoder2") ", \"hidden_act\": \"silu\"}", "field hidden_act");
    expect(SIZES("phi3") ", \"head_dim\": 15}", "field head_dim: 15");
    expect(SIZES("olmo2") ", \"num_key_value_heads\": 3}", "field num_key_value_heads");
    /* Qwen3Config's num_key_value_heads is 32 when absent, as transformers has it */
    expect(SIZES("qwen3") "}", "field num_key_value_heads: 32 does not divide");
    expect(SIZES("olmo2") ", \"rope_parameters\": 5}", "field rope_parameters");
    expect(SIZES("qwen3") ", \"num_key_value_heads\": 4, \"head_dim\": 16777216}", "field head_dim");
    /* hidden / heads is the head_dim only when head_dim is absent */
    expect("{\"model_type\": \"phi3\", \"hidden_size\": 66, \"num_attention_heads\": 4, "
           "\"num_hidden_layers\": 2, \"intermediate_size\": 128, \"vocab_size\": 100, "
           "\"max_position_embeddings\": 32}", "field num_attention_heads");
    expect(SIZES("gpt_neox") ", \"rotary_pct\": 2}", "field rotary_pct");
    expect(SIZES("gpt_neox") ", \"architectures\": [\"GPTNeoXModel\"]}", "field architectures");
    expect("{\"model_type\": \"falcon\", \"alibi\": true}", "field alibi");
    expect("{\"model_type\": \"falcon\", \"new_decoder_architecture\": true, \"num_kv_heads\": 3}",
           "field num_kv_heads");
    expect("{\"model_type\": \"falcon\", \"new_decoder_architecture\": true, \"parallel_attn\": false, "
           "\"num_ln_in_parallel_attn\": 1}", "field parallel_attn");
    expect("{\"model_type\": \"deepseek_v3\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
           "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
           "\"moe_layer_freq\": 2}", "field moe_layer_freq");
    expect("{\"model_type\": \"deepseek_v2\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
           "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
           "\"qk_rope_head_dim\": 5}", "field qk_rope_head_dim");
    expect("{\"model_type\": \"deepseek_v3\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
           "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
           "\"first_k_dense_replace\": 0, \"architectures\": [\"DeepseekV2ForCausalLM\"]}",
           "field architectures");
    /* DeepseekV3Config's first_k_dense_replace is 3 when absent */
    expect("{\"model_type\": \"deepseek_v3\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
           "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100}",
           "field first_k_dense_replace: 3 exceeds");
    expect(HEADS("gemma3_text", 8) ", \"architectures\": [\"Gemma3ForConditionalGeneration\"]}",
           "field architectures");
    expect("{\"model_type\": \"gemma3\", \"architectures\": [\"Gemma3ForCausalLM\"], "
           "\"text_config\": {}}", "field architectures: 'Gemma3ForCausalLM'");
    expect("{\"model_type\": \"gemma3\"}", "field text_config");
    expect("{\"model_type\": \"llama4\", \"text_config\": {\"model_type\": \"llama\"}}",
           "field text_config.model_type");
    expect("{\"model_type\": \"llama4\", \"text_config\": {\"hidden_size\": 0}}",
           "text_config: field hidden_size");
    expect("{\"model_type\": \"llama4_text\", \"num_hidden_layers\": 4, \"moe_layers\": [4]}",
           "field moe_layers");
    expect("{\"model_type\": \"llama4_text\", \"num_local_experts\": 2, \"num_experts_per_tok\": 3}",
           "field num_experts_per_tok");
    remove(FILE_NAME);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"qwen3", test_qwen3},
        {"qwen3_moe", test_qwen3_moe},
        {"gemma, gemma2", test_gemma},
        {"gemma3", test_gemma3},
        {"llama4", test_llama4},
        {"phi3, olmo2, starcoder2", test_phi3_olmo2_starcoder2},
        {"gpt_neox, falcon", test_neox_falcon},
        {"deepseek_v2, deepseek_v3 (MLA)", test_mla},
        {"bad fields", test_errors},
    };
    return CUNIT_RUN("hfconfig variants", tests);
}
