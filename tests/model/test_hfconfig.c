/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hugging Face config.json tests: the hub's config of every preset builds
 * the preset's graph (same approf_graph_hash and parameter count), the
 * family's fields are honoured (kv heads, intermediate size, tied head,
 * experts), and a bad config is refused naming the file and the field.
 * The configs are under tests/model/data (MODEL_DATA_DIR).
 */
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "config.h"
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
    expect("bad-model-type.json", APPROF_EPARSE, "field model_type: unsupported 'falcon'");
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

int main(void)
{
    CU_pSuite s;
    unsigned fails;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("hfconfig", NULL, NULL);
    CU_add_test(s, "config.json of every preset", test_presets);
    CU_add_test(s, "fields", test_fields);
    CU_add_test(s, "bad configs", test_errors);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
