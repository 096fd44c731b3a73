/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The model zoo: parametric builders for the models approf knows by name
 * (Alpa's tutorial MLP, ResNet-50, Alpa's Wide-ResNet, GPT-2/GPT-3, BERT,
 * Swin-T, and the Llama-style decoders: Llama 2/3, Mistral, Mixtral,
 * Qwen2.5, DeepSeekMoE), each a graph in the operator IR of graph.h.
 * Options left 0/NULL take the documented per-model defaults (see
 * approf_zoo_list, docs/models.md and schemas/model-format.md).
 */
#ifndef APPROF_ZOO_H
#define APPROF_ZOO_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/* The most transformer blocks (or mlp layers) a zoo model or a Hugging Face
 * config may ask for: eight times the deepest model trained so far (126
 * blocks), and what layer construction, quadratic in the operators, does in
 * about a second (docs/reliability.md). */
#define APPROF_ZOO_MAX_LAYERS 1024

typedef struct ApprofZooOptions {
    const char *preset;      /* gpt: gpt2-small (default) | gpt3-1.3b | gpt3-2.7b | gpt3-6.7b |
                              * gpt3-39b; bert: base (default) | large; llama: llama-3-8b
                              * (default) | llama-2-7b | llama-3-70b | llama-3.1-405b; mistral:
                              * mistral-7b; mixtral: mixtral-8x7b; qwen2: qwen2.5-7b;
                              * deepseek_moe: deepseek-moe-16b. "hf:PATH" is the same as
                              * hf_config = PATH (a sweep passes configs this way) */
    const char *hf_config;   /* llama family, gpt, bert: sizes from a Hugging Face
                              * config.json of that family instead of a preset */
    const char *attention;   /* llama family: flash (default, fused attention op) | eager
                              * (batched matmuls and a softmax, the S x S scores kept) */
    int activation_fusion;   /* llama family: 1 runs the gated MLP's activation as
                              * Megatron-Core's fused SwiGLU/GeGLU (bias_activation_fusion):
                              * its output not kept, rerun in the backward; 0: eager
                              * PyTorch's silu then mul, all three tensors kept */
    int eager_elementwise;   /* llama family: 1 runs RMSNorm, the rotary embedding and the
                              * grouped K/V repeat as torchtitan's eager modules do (f32
                              * upcasts, one kernel an operation, k and v copied to the
                              * query heads; ApprofOpAttrs.eager), forward only; 0: each
                              * a fused kernel (Megatron-Core, torch.compile) */
    int attention_unpad;     /* gpt, bert with attention flash: 1 calls the fused
                              * attention through flash-attn's unpad_input/pad_input
                              * copies, as llm-foundry's flash_attn_fn does
                              * (ApprofOpAttrs.unpad); 0: the kernel on the padded
                              * tensors (PyTorch's SDPA, Megatron-Core) */
    double capacity_factor;  /* MoE: expert slots per sample = ceil(cf * seq * top_k /
                              * experts); 0: 1.0 */
    const char *dataset;     /* resnet50: imagenet (default) | cifar10; swin: imagenet (default) |
                              * cifar100; wide_resnet: cifar10 (default) | imagenet */
    const char *dtype;       /* f32 (default) | f16 | bf16 */
    int64_t batch;           /* samples the graph is built for; 0: the model's default */
    int num_layers;          /* transformer blocks; mlp: dense layers (default 4) */
    int hidden;              /* transformer / mlp width */
    int heads;
    int seq_len;
    int vocab;
    int width_factor;        /* wide_resnet (default 2) */
    int depth;               /* wide_resnet: 18, 34, 50 (default), 101, 152, 200 */
    int num_filters;         /* wide_resnet base channels (default 160) */
    int image_size;          /* overrides the dataset's image size */
    int num_classes;         /* overrides the dataset's classes */
    int mlm_positions;       /* bert: the masked-LM head scores this many positions per
                              * sequence (the masked ones, gathered first), not all of
                              * them; 0: every position (Hugging Face's BertForMaskedLM) */
    double dropout;          /* bert, gpt: rate of their dropouts (0: none; zoo_tf.c) */
    int manual_boundaries;   /* mlp: a pipeline boundary after the middle layer;
                              * gpt/bert/swin: one after every block */
} ApprofZooOptions;

typedef struct ApprofZooEntry {
    const char *name;
    const char *description;
    const char *defaults;    /* one line of defaults for 'approf models' */
} ApprofZooEntry;

/* 1 when model `name` is a language transformer (gpt, bert, the llama
 * family, the MoE models): these are trained in mixed precision today
 * (16-bit compute, f32 master weights and Adam state), so the sweep's
 * default dtype for them is approf_mixed_precision_dtype of the hardware;
 * 0 for the others (convolutional networks, swin, mlp: f32) and unknown
 * names. */
int approf_zoo_trains_mixed(const char *name);

/* The zoo's entries; *n receives their number. Static storage. */
const ApprofZooEntry *approf_zoo_list(size_t *n);

/* Builds model `name` with options opt (NULL: all defaults). On success the
 * caller owns *out (approf_graph_free). On failure returns APPROF_EINVAL
 * (unknown name, preset or dataset, bad sizes) or APPROF_ENOMEM with a
 * message in err. */
int approf_zoo_build(const char *name, const ApprofZooOptions *opt, ApprofGraph **out,
                     char *err, size_t errlen);

#endif
