/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Model file tests: every zoo model survives export + load with the same
 * graph (hash, tensors, operators), and each kind of bad file is refused
 * with a message naming the file, the op and the field.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "config.h"
#include "cunit_run.h"
#include "graph.h"
#include "model/modelfile.h"
#include "model/zoo.h"

static void test_round_trip(void)
{
    /* The decoders are cut to 2 layers and 256 tokens; the eager llama
     * covers broadcasting batch_matmul, the others the fused attention and
     * the MoE ops; the last mixtral is --activation-fusion's (rerun silus,
     * combines marked probs_in_experts). */
    static const char *models[][3] = {{"mlp", NULL, NULL}, {"resnet50", NULL, "cifar10"},
                                      {"wide_resnet", NULL, NULL}, {"gpt", "gpt2-small", NULL},
                                      {"bert", "large", NULL}, {"swin", NULL, "cifar100"},
                                      {"llama", "llama-3-8b", "eager"}, {"mixtral", NULL, NULL},
                                      {"deepseek_moe", NULL, NULL}, {"qwen2", NULL, NULL},
                                      {"mixtral", NULL, NULL}};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        ApprofZooOptions o;
        ApprofGraph *g = NULL, *h = NULL;
        char err[512], h1[40], h2[40], *text = NULL;
        const char *path = "test_modelfile_rt.json";
        FILE *f;
        memset(&o, 0, sizeof o);
        o.preset = models[m][1];
        o.dataset = m < 6 ? models[m][2] : NULL;
        if (m >= 6) {
            o.attention = models[m][2];
            o.num_layers = 2;
            o.seq_len = 256;
            o.batch = 2;
        }
        o.manual_boundaries = m == 0;
        o.activation_fusion = m == 10;
        o.dtype = m == 3 ? "f16" : NULL;
        CU_ASSERT_EQUAL_FATAL(approf_zoo_build(models[m][0], &o, &g, err, sizeof err), 0);
        CU_ASSERT_EQUAL_FATAL(approf_model_to_json(g, &text), 0);
        f = fopen(path, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fputs(text, f);
        fclose(f);
        CU_ASSERT_EQUAL_FATAL(approf_model_load(path, &h, err, sizeof err), 0);
        remove(path);
        approf_graph_hash(g, h1, sizeof h1);
        approf_graph_hash(h, h2, sizeof h2);
        CU_ASSERT_STRING_EQUAL(h1, h2);
        CU_ASSERT_STRING_EQUAL(g->name, h->name);
        CU_ASSERT_EQUAL(g->dtype, h->dtype);
        CU_ASSERT_EQUAL(g->batch_size, h->batch_size);
        CU_ASSERT_EQUAL_FATAL(g->n_tensors, h->n_tensors);
        CU_ASSERT_EQUAL_FATAL(g->n_ops, h->n_ops);
        CU_ASSERT_EQUAL(memcmp(g->tensors, h->tensors, g->n_tensors * sizeof *g->tensors), 0);
        CU_ASSERT_EQUAL(memcmp(g->ops, h->ops, g->n_ops * sizeof *g->ops), 0);
        CU_ASSERT_EQUAL(approf_graph_num_params(g), approf_graph_num_params(h));
        if (m == 10)
            CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"probs_in_experts\": true"));
        free(text);
        approf_graph_free(&g);
        approf_graph_free(&h);
    }
}

/* A valid two-op model; the bad cases below each change one thing. */
#define HEAD "{\"format\": \"approf-model\", \"version\": 1, \"name\": \"t\", \"dtype\": \"f32\", \"batch_size\": 2,\n"
#define TENSORS "\"tensors\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [2, 8], \"batch_dim\": 0},\n" \
                "  {\"name\": \"w\", \"role\": \"param\", \"shape\": [8, 4]}],\n"

static void expect_error(const char *text, int rc, const char *want1, const char *want2)
{
    ApprofGraph *g = NULL;
    char err[512];
    int r = approf_model_parse(text, "bad.json", &g, err, sizeof err);
    CU_ASSERT_EQUAL(r, rc);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "bad.json: "));
    if (want1)
        CU_ASSERT_PTR_NOT_NULL(strstr(err, want1));
    if (want2)
        CU_ASSERT_PTR_NOT_NULL(strstr(err, want2));
    if (r != rc || (want1 && !strstr(err, want1)) || (want2 && !strstr(err, want2)))
        fprintf(stderr, "\n  got: %s\n", err);
    approf_graph_free(&g);
}

static void test_good_file(void)
{
    ApprofGraph *g = NULL;
    char err[512];
    const char *text = HEAD TENSORS
        "\"ops\": [{\"name\": \"dense\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"], \"outputs\": [{\"name\": \"h\", \"shape\": [2, 4]}]},\n"
        "  {\"name\": \"act\", \"op\": \"relu\", \"inputs\": [\"h\"]}]}";
    CU_ASSERT_EQUAL_FATAL(approf_model_parse(text, "good.json", &g, err, sizeof err), 0);
    CU_ASSERT_EQUAL(g->n_ops, 2);
    CU_ASSERT_EQUAL(approf_graph_num_params(g), 32);
    CU_ASSERT_STRING_EQUAL(g->tensors[g->ops[0].outputs[0]].name, "h");
    CU_ASSERT_EQUAL(g->tensors[g->ops[1].outputs[0]].batch_dim, 0);
    approf_graph_free(&g);
}

/* slice, split (three outputs), dropout, rms_norm, silu, rope in one file:
 * shapes, the outputs of split by name, and the same graph on reload. */
static void test_new_ops_file(void)
{
    ApprofGraph *g = NULL, *h = NULL;
    char err[512], h1[40], h2[40], *text = NULL;
    const char *src = HEAD
        "\"tensors\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [2, 4, 24], \"batch_dim\": 0},\n"
        "  {\"name\": \"norm/scale\", \"role\": \"param\", \"shape\": [24]}],\n"
        "\"ops\": [{\"name\": \"norm\", \"op\": \"rms_norm\", \"inputs\": [\"x\", \"norm/scale\"]},\n"
        "  {\"name\": \"qkv\", \"op\": \"split\", \"inputs\": [\"norm:out0\"], \"axis\": 2, \"sizes\": [8, 8, 8],\n"
        "   \"outputs\": [{\"name\": \"q\"}, {\"name\": \"k\"}, {\"name\": \"v\", \"shape\": [2, 4, 8]}]},\n"
        "  {\"name\": \"rot\", \"op\": \"rope\", \"inputs\": [\"q\"]},\n"
        "  {\"name\": \"act\", \"op\": \"silu\", \"inputs\": [\"k\"]},\n"
        "  {\"name\": \"drop\", \"op\": \"dropout\", \"inputs\": [\"v\"], \"rate\": 0.1},\n"
        "  {\"name\": \"half\", \"op\": \"slice\", \"inputs\": [\"drop:out0\"], \"axis\": 1, \"start\": 2, \"length\": 2}]}";
    CU_ASSERT_EQUAL_FATAL(approf_model_parse(src, "ops.json", &g, err, sizeof err), 0);
    CU_ASSERT_EQUAL(g->ops[1].n_outputs, 3);
    CU_ASSERT_STRING_EQUAL(g->tensors[g->ops[1].outputs[2]].name, "v");
    CU_ASSERT_EQUAL(g->tensors[g->ops[5].outputs[0]].dims[1], 2);
    CU_ASSERT_EQUAL(g->tensors[g->ops[5].outputs[0]].batch_dim, 0);
    CU_ASSERT_EQUAL(g->ops[4].attrs.rate, 0.1);
    CU_ASSERT_EQUAL_FATAL(approf_model_to_json(g, &text), 0);
    CU_ASSERT_EQUAL_FATAL(approf_model_parse(text, "ops2.json", &h, err, sizeof err), 0);
    approf_graph_hash(g, h1, sizeof h1);
    approf_graph_hash(h, h2, sizeof h2);
    CU_ASSERT_STRING_EQUAL(h1, h2);
    /* The dropout rate is part of the structure. */
    h->ops[4].attrs.rate = 0.2;
    approf_graph_hash(h, h2, sizeof h2);
    CU_ASSERT_STRING_NOT_EQUAL(h1, h2);
    free(text);
    approf_graph_free(&g);
    approf_graph_free(&h);
}

static void test_bad_files(void)
{
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"dense\", \"op\": \"frobnicate\", \"inputs\": [\"x\", \"w\"]}]}",
                 APPROF_EPARSE, "op 'dense'", "field op: unknown operator 'frobnicate'");
    /* Shape mismatch between producer and consumer. */
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"dense\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"]},\n"
                 "{\"name\": \"dense2\", \"op\": \"matmul\", \"inputs\": [\"dense:out0\", \"w\"]}]}",
                 APPROF_EINVAL, "op 'dense2'", "field inputs[1]");
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"dense\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"], \"outputs\": [{\"shape\": [2, 5]}]}]}",
                 APPROF_EINVAL, "op 'dense'", "field outputs[0].shape");
    /* Cycle / use before definition. */
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"b:out0\"]},\n"
                 "{\"name\": \"b\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"]}]}",
                 APPROF_EINVAL, "op 'a'", "before its definition");
    /* Missing parameter. */
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"dense\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w2\"]}]}",
                 APPROF_EINVAL, "op 'dense'", "unknown tensor 'w2'");
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"dense\", \"op\": \"matmul\", \"bias\": true, \"inputs\": [\"x\", \"w\"]}]}",
                 APPROF_EINVAL, "op 'dense'", "field inputs");
    /* Absurd sizes. */
    expect_error(HEAD "\"tensors\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [2, 100000000000]}],\n"
                 "\"ops\": [{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"]}]}",
                 APPROF_EINVAL, "tensor 'x'", "field shape");
    expect_error(HEAD "\"tensors\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [2, 0]}],\n"
                 "\"ops\": [{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"]}]}",
                 APPROF_EINVAL, "tensor 'x'", "absurd");
    expect_error("{\"format\": \"approf-model\", \"version\": 1, \"batch_size\": 1000000000000, " TENSORS
                 "\"ops\": []}", APPROF_EPARSE, "field batch_size", NULL);
    /* Wrong JSON types. */
    expect_error(HEAD "\"tensors\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": \"big\"}],\n"
                 "\"ops\": [{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"]}]}",
                 APPROF_EPARSE, "tensor 'x'", "field shape");
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"dense\", \"op\": \"matmul\", \"inputs\": \"x\"}]}",
                 APPROF_EPARSE, "op 'dense'", "field inputs");
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"dense\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"], \"bias\": \"yes\"}]}",
                 APPROF_EPARSE, "op 'dense'", "field bias");
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"dense\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"], \"strde\": [1, 1]}]}",
                 APPROF_EPARSE, "op 'dense'", "field strde");
    /* Unused parameter, duplicate names, malformed JSON, wrong format tag. */
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"]}]}",
                 APPROF_EINVAL, "'w'", "never used");
    expect_error(HEAD "\"tensors\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [2]}, {\"name\": \"x\", \"role\": \"input\", \"shape\": [2]}],\n"
                 "\"ops\": [{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"]}]}",
                 APPROF_EINVAL, "tensor 'x'", "defined twice");
    expect_error(HEAD TENSORS "\"ops\": [", APPROF_EPARSE, "line", NULL);
    expect_error("{\"format\": \"onnx\"}", APPROF_EPARSE, "field format", NULL);
    /* Unknown keys anywhere, duplicate keys: a typo never changes the model
     * silently ("dtpye": "f16" used to run as f32). */
    expect_error(HEAD "\"tensors\": [{\"name\": \"x\", \"role\": \"input\", \"dtpye\": \"f16\", \"shape\": [2]}],\n"
                 "\"ops\": [{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"]}]}",
                 APPROF_EPARSE, "tensor 'x'", "field dtpye: unknown field");
    expect_error(HEAD "\"batchsize\": 4, " TENSORS "\"ops\": [{\"name\": \"dense\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"]}]}",
                 APPROF_EPARSE, "field batchsize: unknown field", NULL);
    expect_error(HEAD "\"dtype\": \"f16\", " TENSORS "\"ops\": [{\"name\": \"dense\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"]}]}",
                 APPROF_EPARSE, "duplicate object key", "dtype");
    expect_error(HEAD "\"tensors\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [2], \"shape\": [3]}],\n"
                 "\"ops\": [{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"]}]}",
                 APPROF_EPARSE, "duplicate object key", "shape");
    /* The new operators' attributes are checked like the old ones. */
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"s\", \"op\": \"slice\", \"inputs\": [\"x\"], \"axis\": 1, \"start\": 6, \"length\": 4}]}",
                 APPROF_EINVAL, "op 's'", "field length");
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"s\", \"op\": \"split\", \"inputs\": [\"x\"], \"axis\": 1, \"sizes\": [3, 4]}]}",
                 APPROF_EINVAL, "op 's'", "field sizes");
    /* a model name is kept whole or refused, never cut to 127 bytes */
    {
        char *text = malloc(6000);
        char name[5001];
        memset(name, 'n', 5000);
        name[5000] = '\0';
        snprintf(text, 6000, "{\"format\": \"approf-model\", \"version\": 1, \"name\": \"%s\", \"batch_size\": 2,\n"
                 TENSORS "\"ops\": [{\"name\": \"dense\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"]}]}", name);
        expect_error(text, APPROF_EPARSE, "field name: 5000 bytes, at most 127", NULL);
        free(text);
    }
    /* start + length and the sum of sizes never overflow into a fit */
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"s\", \"op\": \"slice\", \"inputs\": [\"x\"], \"axis\": 1, "
                 "\"start\": 9223372036854775807, \"length\": 1}]}",
                 APPROF_EINVAL, "op 's'", "field length");
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"s\", \"op\": \"split\", \"inputs\": [\"x\"], \"axis\": 1, "
                 "\"sizes\": [9223372036854775807, 9223372036854775807, 10]}]}",
                 APPROF_EINVAL, "op 's'", "field sizes");
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"d\", \"op\": \"dropout\", \"inputs\": [\"x\"], \"rate\": 1.5}]}",
                 APPROF_EINVAL, "op 'd'", "field rate");
    expect_error(HEAD TENSORS "\"ops\": [{\"name\": \"d\", \"op\": \"dropout\", \"inputs\": [\"x\"], \"rate\": \"high\"}]}",
                 APPROF_EPARSE, "op 'd'", "field rate");
    /* In-place relu: only relu, only over an operator output that nothing
     * else reads and that its producer does not save. */
#define DENSE "{\"name\": \"dense\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"]}"
    expect_error(HEAD TENSORS "\"ops\": [" DENSE ", {\"name\": \"g\", \"op\": \"gelu\", \"inputs\": [\"dense:out0\"], \"inplace\": true}]}",
                 APPROF_EINVAL, "op 'g'", "field inplace: only relu");
    expect_error(HEAD TENSORS "\"ops\": [" DENSE ", {\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"dense:out0\"], \"inplace\": \"yes\"}]}",
                 APPROF_EPARSE, "op 'r'", "field inplace: expected a boolean");
    expect_error(HEAD TENSORS "\"ops\": [" DENSE ", {\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"], \"inplace\": true}]}",
                 APPROF_EINVAL, "op 'r'", "field inplace: input 'x' is a model input");
    expect_error(HEAD TENSORS "\"ops\": [" DENSE ", {\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"dense:out0\"], \"inplace\": true},\n"
                 "{\"name\": \"s\", \"op\": \"add\", \"inputs\": [\"r:out0\", \"dense:out0\"]}]}",
                 APPROF_EINVAL, "op 'r'", "is read by 2 operators");
    expect_error(HEAD TENSORS "\"ops\": [" DENSE ", {\"name\": \"sm\", \"op\": \"softmax\", \"inputs\": [\"dense:out0\"], \"axis\": 1},\n"
                 "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"sm:out0\"], \"inplace\": true}]}",
                 APPROF_EINVAL, "op 'r'", "saved for the backward by 'sm'");
    expect_error(HEAD TENSORS "\"ops\": [" DENSE ", {\"name\": \"g\", \"op\": \"gelu\", \"inputs\": [\"dense:out0\"], \"probs_in_experts\": true}]}",
                 APPROF_EINVAL, "op 'g'", "field probs_in_experts: only moe_combine");
#undef DENSE
    {
        ApprofGraph *g = NULL;
        char err[256];
        CU_ASSERT_EQUAL(approf_model_load("/nonexistent/m.json", &g, err, sizeof err), APPROF_EIO);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/m.json"));
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"zoo round trip", test_round_trip},
        {"good file", test_good_file},
        {"new operators in a file", test_new_ops_file},
        {"bad files", test_bad_files},
    };
    return CUNIT_RUN("modelfile", tests);
}
