/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hugging Face config.json tests: the hub's config of every preset builds
 * the preset's graph (same approf_graph_hash and parameter count), the
 * family's fields are honoured (kv heads, intermediate size, tied head,
 * experts), and a bad config is refused naming the file and the field.
 * The configs are under tests/model/data (MODEL_DATA_DIR), those of the
 * Hugging Face families with zoo names of their own under tests/model/hf.
 */
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "config.h"
#include "cunit_run.h"
#include "graph.h"
#include "model/hfconfig.h"
#include "model/zoo.h"

static void path(char *buf, size_t len, const char *file)
{
    snprintf(buf, len, "%s/%s", MODEL_DATA_DIR, file);
}

static void test_presets(void)
{
    static const char *cases[][3] = {
        {"llama-2-7b.json", "llama", "llama-2-7b"},
        {"llama-3-8b.json", "llama", "llama-3-8b"},
        {"llama-3-70b.json", "llama", "llama-3-70b"},
        {"llama-3.1-405b.json", "llama", "llama-3.1-405b"},
        {"mistral-7b.json", "mistral", "mistral-7b"},
        {"mixtral-8x7b.json", "mixtral", "mixtral-8x7b"},
        {"qwen2.5-7b.json", "qwen2", "qwen2.5-7b"},
        {"deepseek-moe-16b.json", "deepseek_moe", "deepseek-moe-16b"},
        {"gpt2.json", "gpt", "gpt2-small"},
        {"bert-base-uncased.json", "bert", "base"},
        /* the Hugging Face families' presets and their hub files (../hf) */
        {"../hf/qwen3-8b.json", "qwen3", "qwen3-8b"},
        {"../hf/qwen3-30b-a3b.json", "qwen3_moe", "qwen3-30b-a3b"},
        {"../hf/gemma-7b.json", "gemma", "gemma-7b"},
        {"../hf/gemma-2-9b.json", "gemma2", "gemma-2-9b"},
        {"../hf/gemma-3-1b-pt.json", "gemma3", "gemma-3-1b"},
        {"../hf/phi-3-mini-4k-instruct.json", "phi3", "phi-3-mini"},
        {"../hf/olmo-2-1124-7b.json", "olmo2", "olmo-2-7b"},
        {"../hf/starcoder2-7b.json", "starcoder2", "starcoder2-7b"},
        {"../hf/pythia-1.4b.json", "gpt_neox", "pythia-1.4b"},
        {"../hf/gpt-neox-20b.json", "gpt_neox", "gpt-neox-20b"},
        {"../hf/falcon-7b.json", "falcon", "falcon-7b"},
        {"../hf/deepseek-v3.json", "deepseek", "deepseek-v3"},
        {"../hf/deepseek-v2-lite.json", "deepseek", "deepseek-v2-lite"},
        {"../hf/llama-4-scout-17b-16e.json", "llama4", "llama-4-scout"},
        {"../hf/gemma-3-12b.json", "gemma3", "gemma-3-12b"},
        {"../hf/llama-4-maverick-17b-128e.json", "llama4", "llama-4-maverick"},
        {"../hf/starcoder2-15b.json", "starcoder2", "starcoder2-15b"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ApprofZooOptions o;
        ApprofGraph *a = NULL, *b = NULL, *c = NULL;
        char p[512], err[512], ha[40], hb[40], hc[40], pre[600];
        path(p, sizeof p, cases[i][0]);
        memset(&o, 0, sizeof o);
        o.batch = 2;
        o.manual_boundaries = 1;
        CU_ASSERT_EQUAL_FATAL(approf_zoo_build_hf(p, &o, &a, err, sizeof err), 0);
        CU_ASSERT_STRING_EQUAL(a->name, cases[i][1]);
        o.preset = cases[i][2];
        CU_ASSERT_EQUAL_FATAL(approf_zoo_build(cases[i][1], &o, &b, err, sizeof err), 0);
        /* the sweep's way in: the family's name with preset "hf:PATH" */
        snprintf(pre, sizeof pre, "hf:%s", p);
        o.preset = pre;
        CU_ASSERT_EQUAL_FATAL(approf_zoo_build(cases[i][1], &o, &c, err, sizeof err), 0);
        approf_graph_hash(a, ha, sizeof ha);
        approf_graph_hash(b, hb, sizeof hb);
        approf_graph_hash(c, hc, sizeof hc);
        CU_ASSERT_STRING_EQUAL(ha, hb);
        CU_ASSERT_STRING_EQUAL(hc, hb);
        CU_ASSERT_EQUAL(approf_graph_num_params(a), approf_graph_num_params(b));
        if (strcmp(ha, hb))
            fprintf(stderr, "\n  %s differs from preset %s\n", cases[i][0], cases[i][2]);
        approf_graph_free(&a);
        approf_graph_free(&b);
        approf_graph_free(&c);
    }
}

static void test_fields(void)
{
    ApprofHfConfig c;
    char p[512], err[512];
    path(p, sizeof p, "mixtral-8x7b.json");
    CU_ASSERT_EQUAL_FATAL(approf_hf_config_load(p, &c, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(c.model_type, "mixtral");
    CU_ASSERT_EQUAL(c.kv_heads, 8);
    CU_ASSERT_EQUAL(c.experts, 8);
    CU_ASSERT_EQUAL(c.top_k, 2);
    CU_ASSERT_EQUAL(c.moe_ffn, 14336);
    CU_ASSERT_EQUAL(c.tied, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.rope_theta, 1e6, 1e-6);
    path(p, sizeof p, "llama-3.1-405b.json");
    CU_ASSERT_EQUAL_FATAL(approf_hf_config_load(p, &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.positions, 131072);
    CU_ASSERT_EQUAL(c.ffn, 53248);
    path(p, sizeof p, "deepseek-moe-16b.json");
    CU_ASSERT_EQUAL_FATAL(approf_hf_config_load(p, &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.shared_ffn, 2 * 1408);
    CU_ASSERT_EQUAL(c.first_dense, 1);
    path(p, sizeof p, "gpt2.json");
    CU_ASSERT_EQUAL_FATAL(approf_hf_config_load(p, &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.tied, 1);
    CU_ASSERT_EQUAL(c.ffn, 4 * 768);   /* n_inner absent: 4 x n_embd */
}

static void expect(const char *file, int rc, const char *want)
{
    ApprofHfConfig c;
    ApprofGraph *g = NULL;
    char p[512], err[512];
    path(p, sizeof p, file);
    CU_ASSERT_EQUAL(approf_hf_config_load(p, &c, err, sizeof err), rc);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, file));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    if (!strstr(err, want))
        fprintf(stderr, "\n  got: %s\n", err);
    CU_ASSERT_EQUAL(approf_zoo_build_hf(p, NULL, &g, err, sizeof err), rc);
    CU_ASSERT_PTR_NULL(g);
}

static void test_errors(void)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char p[512], err[512], pre[600];
    expect("bad-model-type.json", APPROF_EPARSE, "field model_type: unsupported 'mamba'");
    expect("bad-missing.json", APPROF_EPARSE, "field intermediate_size: missing");
    expect("bad-type.json", APPROF_EPARSE, "field num_key_value_heads");
    expect("no-such-config.json", APPROF_EIO, "no-such-config.json");
    /* A config of another family than the zoo name asked for. */
    path(p, sizeof p, "gpt2.json");
    snprintf(pre, sizeof pre, "hf:%s", p);
    memset(&o, 0, sizeof o);
    o.preset = pre;
    CU_ASSERT_EQUAL(approf_zoo_build("llama", &o, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "field model_type"));
    CU_ASSERT_EQUAL(approf_zoo_build("resnet50", &o, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NULL(g);
}

/* A config written from text: refused naming the file and want, by the
 * reader and by the builder. */
static void expect_text(const char *text, const char *want)
{
    const char *file = "test_hfconfig_hostile.json";
    FILE *f = fopen(file, "w");
    ApprofHfConfig c;
    ApprofGraph *g = NULL;
    char err[512] = "";
    int rc;
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
    rc = approf_hf_config_load(file, &c, err, sizeof err);
    CU_ASSERT_EQUAL(rc, APPROF_EPARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, file));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    if (rc != APPROF_EPARSE || !strstr(err, want))
        fprintf(stderr, "\n  rc %d, got: %s\n", rc, err);
    CU_ASSERT_EQUAL(approf_zoo_build_hf(file, NULL, &g, err, sizeof err), APPROF_EPARSE);
    CU_ASSERT_PTR_NULL(g);
    approf_graph_free(&g);
    remove(file);
}

#define DEEPSEEK(SHARED, MOE_FFN) \
    "{\"model_type\": \"deepseek\", \"hidden_size\": 64, \"num_attention_heads\": 4, " \
    "\"num_hidden_layers\": 2, \"intermediate_size\": 128, \"vocab_size\": 100, " \
    "\"max_position_embeddings\": 32, \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, " \
    "\"moe_intermediate_size\": " #MOE_FFN ", \"n_shared_experts\": " #SHARED "}"
#define LLAMA(EXTRA) \
    "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4, " \
    "\"intermediate_size\": 128, \"vocab_size\": 100, \"max_position_embeddings\": 32" EXTRA "}"

/* Sizes that overflow an int or that no builder can use are refused as
 * fields of the file, never built into another model. */
static void test_hostile_sizes(void)
{
    /* 257 x 2^24 wrapped to the FFN of one expert, 65536 x 2^24 to none, 128 x 2^24 to INT_MIN */
    expect_text(DEEPSEEK(257, 16777216), "field n_shared_experts");
    expect_text(DEEPSEEK(65536, 16777216), "field n_shared_experts");
    expect_text(DEEPSEEK(128, 16777216), "field n_shared_experts");
    /* rotary embeddings rotate pairs */
    expect_text(LLAMA(", \"num_hidden_layers\": 2, \"head_dim\": 3"), "field head_dim: 3");
    /* layers: a documented maximum */
    expect_text(LLAMA(", \"num_hidden_layers\": 100000"), "field num_hidden_layers");
}

int main(void)
{
    static const CunitTest tests[] = {
        {"config.json of every preset", test_presets},
        {"fields", test_fields},
        {"bad configs", test_errors},
        {"hostile sizes", test_hostile_sizes},
    };
    return CUNIT_RUN("hfconfig", tests);
}
