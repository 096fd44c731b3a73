/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hugging Face config.json files as zoo models: the reader maps a
 * transformers config (model_type llama, mistral, mixtral, qwen2, deepseek,
 * gpt2, bert) onto the sizes of the zoo builder of that family, so that a
 * config equal to a preset builds the identical graph (docs/models.md).
 */
#ifndef APPROF_HFCONFIG_H
#define APPROF_HFCONFIG_H

#include <stddef.h>

#include "zoo.h"

/* The sizes of a decoder (llama family) or of a GPT-2 / BERT model, as the
 * zoo builders take them from a preset or from a config.json. */
typedef struct ApprofHfConfig {
    char model_type[32];     /* as in the file */
    const char *zoo_name;    /* the zoo builder: llama, mistral, mixtral, qwen2,
                              * deepseek_moe, gpt, bert (static storage) */
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
} ApprofHfConfig;

/* Reads the config.json at path. Returns 0; APPROF_EIO when the file
 * cannot be read; APPROF_EPARSE for malformed JSON, an unsupported
 * model_type or a missing or ill-typed field, with "PATH: field F: ..." in
 * err; APPROF_EUNSUPPORTED without jansson. */
int approf_hf_config_load(const char *path, ApprofHfConfig *out, char *err, size_t errlen);

/* Builds the model of the config.json at path with the size overrides and
 * batch of opt (its preset ignored). The zoo name of the family is the
 * graph's name. Errors as approf_hf_config_load and approf_zoo_build; the
 * caller owns *out. */
int approf_zoo_build_hf(const char *path, const ApprofZooOptions *opt, ApprofGraph **out,
                        char *err, size_t errlen);

#endif
