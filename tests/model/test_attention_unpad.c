/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --attention-unpad (docs/models.md, "Unpadded flash attention"): the fused
 * attention called as llm-foundry's flash_attn_fn calls it
 * (llmfoundry/models/layers/attention.py at 5e85bd62d): flash-attn 2.4.2's
 * unpad_input gathers q, k and v (IndexFirstAxis) and pad_input zero-fills
 * the padded output and index-puts the packed one into it
 * (IndexPutFirstAxis, flash_attn/bert_padding.py at v2.4.2); the backward
 * gathers the output's gradient and zero-fills and scatters dq, dk, dv.
 * Counted by hand on a one-block gpt in bf16 (2 bytes an element), batch 2,
 * seq 16, hidden 64: T = 32 tokens, each of q, k, v, o T x 64 = 2048
 * elements, the mask all ones (every token kept), one int64 index a row.
 *   forward:  gathers 3 x (read + write) 2048 x 2 B  = 24576
 *             zero-fill + index-put 3 x 2048 x 2 B   = 12288
 *             indices (q, k, v, o) 4 x 32 x 8 B      =  1024   -> 37888
 *   backward: gather of dO 2 x 2048 x 2 B            =  8192
 *             3 x (zero-fill + scatter) 3 x 2048 x 2 B = 36864
 *             indices 4 x 32 x 8 B                   =  1024   -> 46080
 * (18 and 22 bytes a token per hidden unit, plus the indices.) Without the
 * flag the attention lowers to its GEMMs alone.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "graph.h"
#include "model/modelfile.h"
#include "model/zoo.h"

static ApprofGraph *build_gpt(const char *attention, int unpad, int *rc_out)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256] = "";
    memset(&o, 0, sizeof o);
    o.num_layers = 1;
    o.hidden = 64;
    o.heads = 4;
    o.seq_len = 16;
    o.vocab = 128;
    o.batch = 2;
    o.dtype = "bf16";
    o.attention = attention;
    o.attention_unpad = unpad;
    int rc = approf_zoo_build("gpt", &o, &g, err, sizeof err);
    if (rc_out)
        *rc_out = rc;
    else if (rc)
        fprintf(stderr, "gpt: %s\n", err);
    return g;
}

static int attention_op(const ApprofGraph *g)
{
    for (size_t o = 0; o < g->n_ops; o++)
        if (g->ops[o].kind == APPROF_OP_ATTENTION)
            return (int)o;
    return -1;
}

/* The bytes of the op's copy kernels in phase, and their number in *n. */
static double copy_bytes(const ApprofGraph *g, int op, int phase, int *n)
{
    ApprofKernel ks[APPROF_MAX_KERNELS];
    int nk = approf_op_kernels(g, op, NULL, phase, ks, APPROF_MAX_KERNELS);
    double b = 0;
    CU_ASSERT_FATAL(nk > 0);
    *n = 0;
    for (int i = 0; i < nk; i++)
        if (ks[i].kind == APPROF_K_COPY) {
            b += ks[i].bytes;
            (*n)++;
            CU_ASSERT(!ks[i].attention);
            CU_ASSERT(ks[i].flops == 0);
        }
    return b;
}

static void test_hand_counted_bytes(void)
{
    ApprofGraph *g = build_gpt("flash", 1, NULL), *plain = build_gpt("flash", 0, NULL);
    CU_ASSERT_FATAL(g && plain);
    int a = attention_op(g), n;
    CU_ASSERT_FATAL(a >= 0 && attention_op(plain) == a);
    CU_ASSERT(g->ops[a].attrs.unpad == 1);
    CU_ASSERT_DOUBLE_EQUAL(copy_bytes(g, a, 0, &n), 37888.0, 0.5);
    CU_ASSERT(n == 1);
    CU_ASSERT_DOUBLE_EQUAL(copy_bytes(g, a, 1, &n), 46080.0, 0.5);
    CU_ASSERT(n == 1);
    /* the padded kernel: no copies, and the same GEMMs */
    CU_ASSERT_DOUBLE_EQUAL(copy_bytes(plain, a, 0, &n), 0.0, 0.5);
    CU_ASSERT(n == 0);
    CU_ASSERT_DOUBLE_EQUAL(approf_op_flops(g, a, 1), approf_op_flops(plain, a, 1), 0.5);
    /* a tensor-parallel half of the heads copies half the elements; the
     * indices stay one a row */
    {
        ApprofIterSpace sp;
        ApprofKernel ks[APPROF_MAX_KERNELS];
        int64_t loc[APPROF_MAX_ITER];
        CU_ASSERT_FATAL(approf_op_iter_space(g, a, &sp) == 0);
        for (int i = 0; i < sp.n_iter; i++)
            loc[i] = sp.size[i];
        loc[2] /= 2;
        int nk = approf_op_kernels(g, a, loc, 0, ks, APPROF_MAX_KERNELS);
        CU_ASSERT_FATAL(nk > 0);
        CU_ASSERT(ks[nk - 1].kind == APPROF_K_COPY);
        CU_ASSERT_DOUBLE_EQUAL(ks[nk - 1].bytes, (37888.0 - 1024.0) / 2 + 1024.0, 0.5);
    }
    /* the flag is part of the graph: another hash */
    char h1[40], h2[40];
    approf_graph_hash(g, h1, sizeof h1);
    approf_graph_hash(plain, h2, sizeof h2);
    CU_ASSERT(strcmp(h1, h2) != 0);
    approf_graph_free(&g);
    approf_graph_free(&plain);
}

static void test_model_file_keeps_it(void)
{
    ApprofGraph *g = build_gpt("flash", 1, NULL), *back = NULL;
    char *text = NULL, err[256] = "", h1[40], h2[40];
    CU_ASSERT_FATAL(g != NULL);
    int rc = approf_model_to_json(g, &text);
    if (rc == APPROF_EUNSUPPORTED) {  /* built without jansson */
        approf_graph_free(&g);
        return;
    }
    CU_ASSERT_FATAL(rc == 0 && text);
    CU_ASSERT(strstr(text, "\"unpad\": true") != NULL);
    CU_ASSERT_FATAL(approf_model_parse(text, "rt", &back, err, sizeof err) == 0);
    approf_graph_hash(g, h1, sizeof h1);
    approf_graph_hash(back, h2, sizeof h2);
    CU_ASSERT_STRING_EQUAL(h1, h2);
    free(text);
    approf_graph_free(&back);
    /* only an attention unpads */
    CU_ASSERT(approf_model_parse("{\"format\": \"approf-model\", \"version\": 1, \"name\": \"t\", "
                                 "\"dtype\": \"f32\", \"batch_size\": 2, \"tensors\": [{\"name\": "
                                 "\"x\", \"role\": \"input\", \"shape\": [2, 8], \"batch_dim\": 0}], "
                                 "\"ops\": [{\"name\": \"act\", \"op\": \"relu\", \"inputs\": "
                                 "[\"x\"], \"unpad\": true}]}",
                                 "bad", &back, err, sizeof err) == APPROF_EINVAL);
    CU_ASSERT(strstr(err, "unpad") != NULL);
    approf_graph_free(&g);
}

static void test_needs_flash(void)
{
    int rc = 0;
    ApprofGraph *g = build_gpt("eager", 1, &rc);
    CU_ASSERT(rc == APPROF_EINVAL && g == NULL);
    g = build_gpt(NULL, 1, &rc);
    CU_ASSERT(rc == APPROF_EINVAL && g == NULL);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"hand-counted unpad/pad bytes", test_hand_counted_bytes},
        {"model file keeps unpad", test_model_file_keeps_it},
        {"unpad needs flash", test_needs_flash},
    };
    return CUNIT_RUN("attention_unpad", tests);
}
