/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --eager-elementwise (ApprofOpAttrs.eager; docs/validation.md,
 * "torchtitan's eager element-wise ops"): the forward bytes of torchtitan
 * 9dec370's eager RMSNorm, apply_rotary_emb and repeat_kv, counted by hand
 * on a one-block Llama in bf16 (2 bytes an element): B 2, S 16, hidden
 * 1024 in 32 query heads of 32 over the preset's 8 key/value heads (4
 * query heads a key/value head); T = B S = 32 tokens.
 *
 * RMSNorm, T x 1024 elements: upcast 2 + 4, pow 4 + 4, mean 4 (one f32 a
 * row, and + eps, rsqrt a row each: 4 + 4 + 4 + 4 more a row), multiply
 * 4 + 4 (the row's scale 4 a row), cast back 4 + 2, the weight's multiply
 * 2 + 2 (and the weight, 1024 x 2): 36 bytes an element, 24 a row.
 * Rotary, q (T x 1024) and k (T x 256): upcast 6, complex multiply 8,
 * cast back 6, 20 bytes an element, and freqs_cis (S x 32 f32) read once.
 * repeat_kv: k and v (T x 256 each) read once, written 4 times; the
 * attention then reads them at the 32 heads (3 more copies of each).
 * Without the option each is one fused kernel: the norm 4 bytes an element
 * (and the weight), the rotary 4, no repeat. The backward is unchanged.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "graph.h"
#include "model/modelfile.h"
#include "model/zoo.h"

#define B 2
#define S 16
#define H 1024
#define D 32
#define KV 8
#define G 4

static ApprofGraph *build(const char *model, int eager, int *rc_out)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256] = "";
    memset(&o, 0, sizeof o);
    o.num_layers = 1;
    o.hidden = H;
    o.heads = H / D;
    o.seq_len = S;
    o.vocab = 128;
    o.batch = B;
    o.dtype = "bf16";
    o.eager_elementwise = eager;
    int rc = approf_zoo_build(model, &o, &g, err, sizeof err);
    if (rc_out)
        *rc_out = rc;
    else if (rc)
        fprintf(stderr, "%s: %s\n", model, err);
    return g;
}

static int op_named(const ApprofGraph *g, const char *name)
{
    for (size_t o = 0; o < g->n_ops; o++)
        if (!strcmp(g->ops[o].name, name))
            return (int)o;
    return -1;
}

static void test_hand_counted_bytes(void)
{
    ApprofGraph *e = build("llama", 1, NULL), *f = build("llama", 0, NULL);
    const double T = B * S, kvel = T * KV * D;
    const char *names[] = {"model.layers.0/input_layernorm", "model.layers.0/self_attn/q_proj/rope",
                           "model.layers.0/self_attn/k_proj/rope", "model.layers.0/self_attn/attention"};
    int ops[4];
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL_FATAL(e->n_ops, f->n_ops);
    for (int i = 0; i < 4; i++) {
        ops[i] = op_named(e, names[i]);
        CU_ASSERT_FATAL(ops[i] >= 0 && ops[i] == op_named(f, names[i]));
        CU_ASSERT_TRUE(e->ops[ops[i]].attrs.eager);
        CU_ASSERT_FALSE(f->ops[ops[i]].attrs.eager);
        /* forward only: the backward is the fused kernel's */
        CU_ASSERT_DOUBLE_EQUAL(approf_op_bytes(e, ops[i], 1), approf_op_bytes(f, ops[i], 1), 1e-6);
    }
    CU_ASSERT_EQUAL(e->tensors[e->ops[ops[3]].inputs[0]].dims[3], G);
    /* RMSNorm: 36 bytes an element, 24 a row, the weight */
    CU_ASSERT_DOUBLE_EQUAL(approf_op_bytes(e, ops[0], 0), 36.0 * T * H + 24.0 * T + 2.0 * H, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(approf_op_bytes(f, ops[0], 0), 4.0 * T * H + 2.0 * H, 1e-6);
    /* rotary: 20 bytes an element and freqs_cis, against 4 */
    CU_ASSERT_DOUBLE_EQUAL(approf_op_bytes(e, ops[1], 0), 20.0 * T * H + 4.0 * S * D, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(approf_op_bytes(f, ops[1], 0), 4.0 * T * H, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(approf_op_bytes(e, ops[2], 0), 20.0 * T * KV * D + 4.0 * S * D, 1e-6);
    /* repeat_kv: two copies (read 1, write G) and G - 1 more reads of k, v */
    CU_ASSERT_DOUBLE_EQUAL(approf_op_bytes(e, ops[3], 0) - approf_op_bytes(f, ops[3], 0),
                           2.0 * 2 * kvel * (1 + G) + 2.0 * 2 * kvel * (G - 1), 1e-6);
    /* the graphs hash apart (a sweep's resume and merge compare them) */
    {
        char h1[40], h2[40];
        approf_graph_hash(e, h1, sizeof h1);
        approf_graph_hash(f, h2, sizeof h2);
        CU_ASSERT_STRING_NOT_EQUAL(h1, h2);
    }
    approf_graph_free(&e);
    approf_graph_free(&f);
}

static void test_model_file_keeps_it(void)
{
    ApprofGraph *g = build("llama", 1, NULL), *h = NULL;
    char *text = NULL, err[256], h1[40], h2[40];
    const char *path = "test_eager_elementwise_rt.json";
    FILE *fp;
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL_FATAL(approf_model_to_json(g, &text), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"eager\": true"));
    fp = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs(text, fp);
    fclose(fp);
    CU_ASSERT_EQUAL_FATAL(approf_model_load(path, &h, err, sizeof err), 0);
    remove(path);
    approf_graph_hash(g, h1, sizeof h1);
    approf_graph_hash(h, h2, sizeof h2);
    CU_ASSERT_STRING_EQUAL(h1, h2);
    free(text);
    approf_graph_free(&g);
    approf_graph_free(&h);
}

static void test_llama_family_only(void)
{
    int rc = 0;
    ApprofGraph *g = build("gpt", 1, &rc);
    CU_ASSERT_EQUAL(rc, APPROF_EINVAL);
    CU_ASSERT_PTR_NULL(g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"hand-counted eager forward bytes", test_hand_counted_bytes},
        {"model file keeps eager", test_model_file_keeps_it},
        {"llama family only", test_llama_family_only},
    };
    return CUNIT_RUN("eager_elementwise", tests);
}
