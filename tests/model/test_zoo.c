/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Zoo and operator-semantics tests: exact parameter counts against the
 * reference implementations, FLOPs per sample against published figures,
 * backward = data-gradient + weight-gradient GEMMs, iteration spaces and
 * kernel lowering, shape checking in approf_graph_add_op.
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "graph.h"
#include "model/zoo.h"

static ApprofGraph *build(const char *name, const char *preset, const char *dataset, int64_t batch)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256];
    memset(&o, 0, sizeof o);
    o.preset = preset;
    o.dataset = dataset;
    o.batch = batch;
    CU_ASSERT_EQUAL_FATAL(approf_zoo_build(name, &o, &g, err, sizeof err), 0);
    CU_ASSERT_EQUAL(approf_graph_validate(g, err, sizeof err), 0);
    return g;
}

static int64_t params(const char *name, const char *preset, const char *dataset)
{
    ApprofGraph *g = build(name, preset, dataset, 1);
    int64_t n = approf_graph_num_params(g);
    approf_graph_free(&g);
    return n;
}

/* GPT-2 layout: wte V·H + wpe P·H + L·(12H² + 13H) + final LN 2H. */
static int64_t gpt_formula(int64_t L, int64_t H, int64_t V, int64_t P)
{
    return V * H + P * H + L * (12 * H * H + 13 * H) + 2 * H;
}

static void test_param_counts(void)
{
    /* torchvision.models.resnet50(): 25,557,032 (torchvision model docs,
     * "Params 25.6M"; sum(p.numel()) = 25557032). num_classes=10:
     * 25557032 - 990·2048 - 990 = 23,528,522. */
    CU_ASSERT_EQUAL(params("resnet50", NULL, NULL), 25557032);
    CU_ASSERT_EQUAL(params("resnet50", NULL, "cifar10"), 23528522);
    /* HF GPT2LMHeadModel "gpt2": 124,439,808 with the LM head tied to wte
     * (the head reads the same parameter tensor; counted once). */
    CU_ASSERT_EQUAL(params("gpt", "gpt2-small", NULL), 124439808);
    /* GPT-3 paper (Brown et al. 2020, table 2.1): 1.3B (24, 2048), 2.7B
     * (32, 2560), 6.7B (32, 4096), context 2048, vocab 50257. */
    CU_ASSERT_EQUAL(params("gpt", "gpt3-1.3b", NULL), gpt_formula(24, 2048, 50257, 2048));
    CU_ASSERT_EQUAL(params("gpt", "gpt3-1.3b", NULL), 1315723264);
    CU_ASSERT_EQUAL(params("gpt", "gpt3-2.7b", NULL), 2651553280);
    CU_ASSERT_EQUAL(params("gpt", "gpt3-6.7b", NULL), 6658404352);
    /* Alpa benchmark GPT-39B (48 layers, 8192, 64 heads, seq 1024, vocab 51200). */
    CU_ASSERT_EQUAL(params("gpt", "gpt3-39b", NULL), gpt_formula(48, 8192, 51200, 1024));
    CU_ASSERT_EQUAL(params("gpt", "gpt3-39b", NULL), 39087652864);
    /* HF BertForMaskedLM bert-base-uncased 109,514,298 and bert-large-uncased
     * 335,174,458 (BertModel without pooler + MLM transform + decoder bias;
     * BertModel with pooler is 109,482,240 = 109,514,298 - 768·768 - 768
     * - 2·768 - 30522 + 768·768 + 768, i.e. ours minus the MLM head plus the pooler). */
    CU_ASSERT_EQUAL(params("bert", "base", NULL), 109514298);
    CU_ASSERT_EQUAL(params("bert", "large", NULL), 335174458);
    CU_ASSERT_EQUAL(params("bert", "base", NULL) - 768 * 768 - 768 - 2 * 768 - 30522 + 768 * 768 + 768,
                    109482240);
    /* timm swin_tiny_patch4_window7_224: 28,288,354 (includes the
     * 169 x heads relative position bias tables; not the index buffers).
     * num_classes=100 (LiBai swin_cifar100): minus 900·768 + 900. */
    CU_ASSERT_EQUAL(params("swin", NULL, NULL), 28288354);
    CU_ASSERT_EQUAL(params("swin", NULL, "cifar100"), 28288354 - 900 * 768 - 900);
    /* Alpa tutorial MLP: 2·(2048·8192 + 8192) + 2·(8192·2048 + 2048). */
    CU_ASSERT_EQUAL(params("mlp", NULL, NULL), 67129344);
    /* Alpa wide_resnet benchmark "250M" config (depth 50, 160 filters,
     * width 2); the label is rounded: within 1 %. */
    CU_ASSERT(fabs((double)params("wide_resnet", NULL, NULL) / 250e6 - 1) < 0.01);
}

/* Multiply-accumulates of GEMMs and convolutions per sample. */
static double macs_per_sample(const ApprofGraph *g)
{
    double f = 0;
    for (size_t i = 0; i < g->n_ops; i++) {
        ApprofKernel ks[APPROF_MAX_KERNELS];
        int n = approf_op_kernels(g, (int)i, NULL, 0, ks, APPROF_MAX_KERNELS);
        CU_ASSERT(n >= 0);
        for (int k = 0; k < n; k++)
            if (ks[k].kind == APPROF_K_GEMM || ks[k].kind == APPROF_K_CONV_FWD)
                f += ks[k].flops / 2;
    }
    return f / (double)g->batch_size;
}

/* Llama-family count from config.json values: embedding V·H, per layer
 * attention H·(heads·d) + 2·H·(kv·d) + (heads·d)·H (+ q/k/v biases), two
 * RMSNorm scales 2H, SwiGLU 3·H·F or, in a MoE layer, the router H·E, E
 * experts of 3·H·Fe and the shared experts 3·H·Fs; final norm H; the LM head
 * V·H unless tied. */
static int64_t decoder_formula(int64_t L, int64_t H, int64_t heads, int64_t kv, int64_t F, int64_t V,
                               int tied, int qkv_bias, int64_t E, int64_t Fe, int64_t Fs, int64_t dense)
{
    int64_t d = H / heads, n = V * H * (tied ? 1 : 2) + H;
    for (int64_t l = 0; l < L; l++) {
        n += 2 * H * heads * d + 2 * H * kv * d + 2 * H + (qkv_bias ? heads * d + 2 * kv * d : 0);
        n += E && l >= dense ? H * E + E * 3 * H * Fe + 3 * H * Fs : 3 * H * F;
    }
    return n;
}

static void test_decoder_params(void)
{
    /* Each figure is the model's parameter count as published on its
     * Hugging Face model page (safetensors "Model size", total of the
     * checkpoint's tensors), and equals the formula over its config.json
     * (tests/model/data/<preset>.json, the hub's file). */
    /* meta-llama/Llama-2-7b-hf: 6,738,415,616 (L 32, H 4096, 32 heads, MHA, F 11008, V 32000). */
    CU_ASSERT_EQUAL(params("llama", "llama-2-7b", NULL), 6738415616LL);
    CU_ASSERT_EQUAL(decoder_formula(32, 4096, 32, 32, 11008, 32000, 0, 0, 0, 0, 0, 0), 6738415616LL);
    /* meta-llama/Meta-Llama-3-8B: 8,030,261,248 (8 kv heads, F 14336, V 128256). */
    CU_ASSERT_EQUAL(params("llama", "llama-3-8b", NULL), 8030261248LL);
    CU_ASSERT_EQUAL(decoder_formula(32, 4096, 32, 8, 14336, 128256, 0, 0, 0, 0, 0, 0), 8030261248LL);
    /* meta-llama/Meta-Llama-3-70B: 70,553,706,496 (L 80, H 8192, 64 heads, 8 kv, F 28672). */
    CU_ASSERT_EQUAL(params("llama", "llama-3-70b", NULL), 70553706496LL);
    CU_ASSERT_EQUAL(decoder_formula(80, 8192, 64, 8, 28672, 128256, 0, 0, 0, 0, 0, 0), 70553706496LL);
    /* meta-llama/Llama-3.1-405B: 405,853,388,800 (L 126, H 16384, 128 heads, 8 kv, F 53248). */
    CU_ASSERT_EQUAL(params("llama", "llama-3.1-405b", NULL), 405853388800LL);
    CU_ASSERT_EQUAL(decoder_formula(126, 16384, 128, 8, 53248, 128256, 0, 0, 0, 0, 0, 0), 405853388800LL);
    /* mistralai/Mistral-7B-v0.1: 7,241,732,096 (8 kv, F 14336, V 32000). */
    CU_ASSERT_EQUAL(params("mistral", "mistral-7b", NULL), 7241732096LL);
    CU_ASSERT_EQUAL(decoder_formula(32, 4096, 32, 8, 14336, 32000, 0, 0, 0, 0, 0, 0), 7241732096LL);
    /* mistralai/Mixtral-8x7B-v0.1: 46,702,792,704 (8 experts of F 14336, top 2). */
    CU_ASSERT_EQUAL(params("mixtral", "mixtral-8x7b", NULL), 46702792704LL);
    CU_ASSERT_EQUAL(decoder_formula(32, 4096, 32, 8, 0, 32000, 0, 0, 8, 14336, 0, 0), 46702792704LL);
    /* Qwen/Qwen2.5-7B: 7,615,616,512 (L 28, H 3584, 28 heads, 4 kv, F 18944,
     * V 152064, biases on q, k, v). */
    CU_ASSERT_EQUAL(params("qwen2", "qwen2.5-7b", NULL), 7615616512LL);
    CU_ASSERT_EQUAL(decoder_formula(28, 3584, 28, 4, 18944, 152064, 0, 1, 0, 0, 0, 0), 7615616512LL);
    /* deepseek-ai/deepseek-moe-16b-base: 16,375,728,128 ("16.4B"; L 28,
     * H 2048, 16 heads, MHA, V 102400, first layer dense F 10944, then 64
     * routed experts of 1408 (top 6) + 2 shared of 1408). */
    CU_ASSERT_EQUAL(params("deepseek_moe", "deepseek-moe-16b", NULL), 16375728128LL);
    CU_ASSERT_EQUAL(decoder_formula(28, 2048, 16, 16, 10944, 102400, 0, 0, 64, 1408, 2 * 1408, 1),
                    16375728128LL);
}

/* The presets of the Hugging Face families (zoo_presets.c), each under
 * its own zoo name: the count of the published checkpoint where one is
 * published exactly (keras-team/keras-hub's preset tables, "params"; the
 * Pythia and GPT-NeoX-20B papers; OLMo-2-1124-13B's
 * model.safetensors.index.json total_size / 4), else the formula of
 * tests/model/hf_params.py over the hub's config (docs/models.md, "Presets
 * of the Hugging Face families"). */
static void test_hf_family_presets(void)
{
    static const struct {
        const char *family, *preset;
        int64_t params;
    } cases[] = {
        {"qwen3", NULL, 8190735360LL},            /* qwen3-8b, keras-hub qwen3_8b_en */
        {"qwen3", "qwen3-0.6b", 596049920LL},     /* keras-hub qwen3_0.6b_en */
        {"qwen3", "qwen3-1.7b", 1720574976LL},    /* keras-hub qwen3_1.7b_en */
        {"qwen3", "qwen3-4b", 4022468096LL},      /* keras-hub qwen3_4b_en */
        {"qwen3", "qwen3-14b", 14768307200LL},    /* keras-hub qwen3_14b_en */
        {"qwen3", "qwen3-32b", 32762123264LL},    /* keras-hub qwen3_32b_en */
        {"qwen3_moe", NULL, 30532122624LL},       /* keras-hub qwen3_moe_30b_a3b_en */
        {"qwen3_moe", "qwen3-235b-a22b", 235093634560LL}, /* keras-hub qwen3_moe_235b_a22b_en */
        {"gemma", NULL, 8537680896LL},            /* gemma-7b, keras-hub gemma_7b_en */
        {"gemma", "gemma-2b", 2506172416LL},      /* keras-hub gemma_2b_en */
        {"gemma2", NULL, 9241705984LL},           /* gemma-2-9b, keras-hub gemma2_9b_en */
        {"gemma2", "gemma-2-2b", 2614341888LL},   /* keras-hub gemma2_2b_en */
        {"gemma2", "gemma-2-27b", 27227128320LL}, /* keras-hub gemma2_27b_en */
        {"gemma3", NULL, 999885952LL},            /* gemma-3-1b, keras-hub gemma3_1b */
        /* keras-hub gemma3_{4b,12b,27b}_text (Google's checkpoints: a 262144-row
         * embedding) and the hub config's 64 rows more (vocab_size 262208) */
        {"gemma3", "gemma-3-4b", 3880099328LL + 64LL * 2560},
        {"gemma3", "gemma-3-12b", 11765788416LL + 64LL * 3840},
        {"gemma3", "gemma-3-27b", 27009002240LL + 64LL * 5376},
        {"phi3", NULL, 3821079552LL},             /* keras-hub phi3_mini_4k_instruct_en */
        {"olmo2", NULL, 7298617344LL},            /* hf_params.py; the hub's 7.3B */
        {"olmo2", "olmo-2-13b", 13716198400LL},   /* checkpoint index 54864793600 B / 4 */
        {"starcoder2", NULL, 7173923840LL},       /* hf_params.py; the hub's 7.17B */
        {"starcoder2", "starcoder2-3b", 3030371328LL}, /* the formula; the hub's 3.03B */
        {"starcoder2", "starcoder2-15b", 15655899136LL}, /* the formula, tied; no exact figure */
        {"gpt_neox", NULL, 20554567680LL},        /* gpt-neox-20b, its paper */
        {"gpt_neox", "pythia-1.4b", 1414647808LL},   /* the Pythia paper */
        {"gpt_neox", "pythia-6.9b", 6857302016LL},   /* the Pythia paper */
        {"gpt_neox", "pythia-12b", 11846072320LL},   /* the Pythia paper */
        {"falcon", NULL, 6921720704LL},           /* hf_params.py; the hub's 6.92B */
        {"deepseek", NULL, 671026419200LL},       /* deepseek-v3, hf_params.py; 671B */
        {"deepseek", "deepseek-v2-lite", 15706484224LL}, /* hf_params.py; 15.7B */
        {"llama4", NULL, 107769861120LL},         /* llama-4-scout's language model */
        {"llama4", "llama-4-maverick", 400711848960LL}, /* the formula; the card's 400B */
    };
    char err[512];
    ApprofGraph *g = NULL;
    ApprofZooOptions o;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(&o, 0, sizeof o);
        o.batch = 1;
        o.seq_len = 64;
        o.preset = cases[i].preset;
        err[0] = '\0';
        CU_ASSERT_EQUAL(approf_zoo_build(cases[i].family, &o, &g, err, sizeof err), 0);
        if (!g) {
            fprintf(stderr, "\n  %s %s: %s\n", cases[i].family, cases[i].preset ? cases[i].preset : "", err);
            continue;
        }
        CU_ASSERT_STRING_EQUAL(g->name, cases[i].family);
        CU_ASSERT_EQUAL(approf_graph_num_params(g), cases[i].params);
        if (approf_graph_num_params(g) != cases[i].params)
            fprintf(stderr, "\n  %s %s: %lld\n", cases[i].family, cases[i].preset ? cases[i].preset : "",
                    (long long)approf_graph_num_params(g));
        approf_graph_free(&g);
    }
    /* an unknown preset names the family's */
    memset(&o, 0, sizeof o);
    o.preset = "qwen3-9b";
    CU_ASSERT_EQUAL(approf_zoo_build("qwen3", &o, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "qwen3-8b|qwen3-0.6b"));
    /* and so does one of gpt or bert (bert's are base and large) */
    o.preset = "bert-large";
    CU_ASSERT_EQUAL(approf_zoo_build("bert", &o, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "bert: unknown preset 'bert-large' (base|large)"));
    o.preset = "gpt3-6b";
    CU_ASSERT_EQUAL(approf_zoo_build("gpt", &o, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "gpt3-6.7b"));
    /* a preset given as the model's name says whose it is */
    CU_ASSERT_EQUAL(approf_zoo_build("deepseek-v3", NULL, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--model deepseek --preset deepseek-v3"));
}

/* Forward or backward FLOPs of the GEMM kernels of ops of kind k (all
 * kinds when k < 0). */
static double gemm_flops(const ApprofGraph *g, int kind, int phase)
{
    double f = 0;
    for (size_t i = 0; i < g->n_ops; i++) {
        ApprofKernel ks[APPROF_MAX_KERNELS];
        int n;
        if (kind >= 0 && (int)g->ops[i].kind != kind)
            continue;
        n = approf_op_kernels(g, (int)i, NULL, phase, ks, APPROF_MAX_KERNELS);
        for (int j = 0; j < n; j++)
            if (ks[j].kind == APPROF_K_GEMM)
                f += ks[j].flops;
    }
    return f;
}

static ApprofGraph *decoder(const char *name, const char *preset, int layers, int seq, const char *attn,
                            int64_t batch)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256];
    memset(&o, 0, sizeof o);
    o.preset = preset;
    o.num_layers = layers;
    o.seq_len = seq;
    o.batch = batch;
    o.attention = attn;
    CU_ASSERT_EQUAL_FATAL(approf_zoo_build(name, &o, &g, err, sizeof err), 0);
    CU_ASSERT_EQUAL(approf_graph_validate(g, err, sizeof err), 0);
    return g;
}

static void test_decoder_flops(void)
{
    /* Forward FLOPs per token of Llama-3-8B (2 layers, seq 4096): 2 x the
     * matmul parameters (embedding excluded, LM head included, Kaplan et al.
     * 2020 table 1) plus causal attention 2·2·s·h·d·(1/2) per layer (the
     * fused kernel skips the masked half). */
    const double S = 4096, H = 4096, kvd = 1024, F = 14336, V = 128256, L = 2;
    ApprofGraph *g = decoder("llama", "llama-3-8b", 2, 4096, NULL, 1), *e;
    double mm = L * (H * (H + 2 * kvd) + H * H + 3 * H * F) + H * V;
    double attn = L * 2 * 2 * S * H * 0.5;
    CU_ASSERT(fabs(gemm_flops(g, -1, 0) / S / (2 * mm + attn) - 1) < 1e-12);
    /* Backward: data + weight gradients of every matmul (4 per parameter),
     * flash attention recomputes the scores: 5 GEMMs for 2. */
    CU_ASSERT(fabs(gemm_flops(g, -1, 1) / S / (4 * mm + 2.5 * attn) - 1) < 1e-12);
    CU_ASSERT(fabs(gemm_flops(g, APPROF_OP_ATTENTION, 0) / S / attn - 1) < 1e-12);
    /* Eager attention: full S x S scores (mask applied in the softmax),
     * twice the fused causal work; same matmul FLOPs otherwise. */
    e = decoder("llama", "llama-3-8b", 2, 4096, "eager", 1);
    CU_ASSERT(fabs(gemm_flops(e, APPROF_OP_BATCH_MATMUL, 0) / (2 * gemm_flops(g, APPROF_OP_ATTENTION, 0)) - 1) < 1e-12);
    CU_ASSERT(fabs(gemm_flops(e, APPROF_OP_MATMUL, 0) / gemm_flops(g, APPROF_OP_MATMUL, 0) - 1) < 1e-12);
    approf_graph_free(&e);
    approf_graph_free(&g);
    /* Mixtral-8x7B, capacity factor 1: each token runs top_k = 2 experts,
     * 2 x 3·H·F forward FLOPs each, plus the router H·E. */
    g = decoder("mixtral", NULL, 1, 1024, NULL, 1);
    {
        double tok = 1024, experts = gemm_flops(g, APPROF_OP_BATCH_MATMUL, 0) / tok;
        CU_ASSERT(fabs(experts / (2 * 2 * 3 * 4096.0 * 14336) - 1) < 1e-12);
        CU_ASSERT(fabs(gemm_flops(g, APPROF_OP_MATMUL, 0) / tok /
                       (2 * (4096.0 * (4096 + 2048) + 4096.0 * 4096 + 4096.0 * 8 + 4096.0 * 32000)) - 1) < 1e-12);
    }
    approf_graph_free(&g);
    /* DeepSeekMoE-16B, one MoE layer (the first is dense): 6 routed experts
     * of 1408 and the 2 shared (2816 wide) per token. */
    g = decoder("deepseek_moe", NULL, 2, 1024, NULL, 1);
    CU_ASSERT(fabs(gemm_flops(g, APPROF_OP_BATCH_MATMUL, 0) / 1024 / (2 * 6 * 3 * 2048.0 * 1408) - 1) < 1e-12);
    approf_graph_free(&g);
}

/* Iteration spaces and lowering of the Llama-era operators. */
static void test_new_op_semantics(void)
{
    ApprofGraph *g = decoder("mixtral", NULL, 1, 256, NULL, 2);
    int seen = 0;
    for (size_t i = 0; i < g->n_ops; i++) {
        const ApprofOp *op = &g->ops[i];
        ApprofIterSpace sp;
        ApprofKernel ks[APPROF_MAX_KERNELS];
        CU_ASSERT_EQUAL_FATAL(approf_op_iter_space(g, (int)i, &sp), 0);
        switch (op->kind) {
        case APPROF_OP_ATTENTION:
            /* {B, S, Hkv, G, S', D}: heads and queries split, keys never;
             * q, k, v and the output saved, no S x S tensor exists. */
            CU_ASSERT_EQUAL(sp.n_iter, 6);
            CU_ASSERT_EQUAL(sp.size[2], 8);
            CU_ASSERT_EQUAL(sp.size[3], 4);
            CU_ASSERT_EQUAL(sp.kind[4], APPROF_ITER_FIXED);
            CU_ASSERT_EQUAL(sp.in_map[1][2], 2);          /* k's kv head follows Hkv */
            CU_ASSERT_EQUAL(sp.in_map[0][3], 3);          /* q's group dim */
            CU_ASSERT(sp.is_batch[0]);
            CU_ASSERT_EQUAL(approf_op_saved_mask(g, (int)i),
                            APPROF_SAVED_INPUT(0) | APPROF_SAVED_INPUT(1) | APPROF_SAVED_INPUT(2) |
                            APPROF_SAVED_OUTPUT(0));
            CU_ASSERT_EQUAL(approf_op_kernels(g, (int)i, NULL, 0, ks, APPROF_MAX_KERNELS), 2);
            CU_ASSERT_EQUAL(ks[0].n, 128);                /* causal: half the 256 keys */
            /* the scores stay on chip: no GEMM of the fused kernel stores C */
            CU_ASSERT_EQUAL(ks[0].store_bytes, 0);
            CU_ASSERT_EQUAL(ks[1].store_bytes, 0);
            /* ... and every one is the fused attention's (attention_efficiency) */
            CU_ASSERT(ks[0].attention == 1 && ks[1].attention == 1);
            CU_ASSERT_EQUAL(approf_op_kernels(g, (int)i, NULL, 1, ks, APPROF_MAX_KERNELS), 5);
            for (int j = 0; j < 5; j++) {
                CU_ASSERT_EQUAL(ks[j].store_bytes, 0);
                CU_ASSERT_EQUAL(ks[j].attention, 1);
            }
            seen |= 1;
            break;
        case APPROF_OP_MOE_DISPATCH:
            /* [B, E, C, H]: E a parallel loop (expert parallelism), x not
             * indexed by it (a split E takes the tokens replicated). */
            CU_ASSERT_EQUAL(sp.size[1], 8);
            CU_ASSERT_EQUAL(sp.kind[1], APPROF_ITER_PARALLEL);
            CU_ASSERT_EQUAL(sp.size[2], 256 * 2 / 8);     /* capacity factor 1 */
            CU_ASSERT_EQUAL(sp.in_map[0][1], -1);
            CU_ASSERT_EQUAL(sp.out_map[0][1], 1);
            seen |= 2;
            break;
        case APPROF_OP_MOE_COMBINE:
            CU_ASSERT_EQUAL(sp.kind[3], APPROF_ITER_REDUCE); /* a split E leaves partial sums */
            CU_ASSERT_EQUAL(sp.in_map[0][1], 3);
            seen |= 4;
            break;
        case APPROF_OP_BATCH_MATMUL: {
            /* Expert weights [1, E, k, n]: the B loop broadcasts, E splits
             * them; their gradient joins B into the contraction. */
            const ApprofTensor *w = &g->tensors[op->inputs[1]];
            int64_t m = sp.size[2], n = sp.size[3], k = sp.size[4];
            CU_ASSERT_EQUAL(w->dims[0], 1);
            CU_ASSERT_EQUAL(sp.in_map[1][0], -1);
            CU_ASSERT_EQUAL(sp.in_map[1][1], 1);
            CU_ASSERT_EQUAL(approf_op_kernels(g, (int)i, NULL, 1, ks, APPROF_MAX_KERNELS), 2);
            CU_ASSERT_EQUAL(ks[1].batch, 8);
            CU_ASSERT_EQUAL(ks[1].k, m * 2);
            CU_ASSERT_DOUBLE_EQUAL(ks[1].flops, 2.0 * 2 * 8 * m * n * k, 1);
            /* a plain GEMM's epilogue stores its C: batch x m x n elements;
             * it is no attention kernel */
            for (int j = 0; j < 2; j++)
                CU_ASSERT_EQUAL(ks[j].attention, 0);
            for (int j = 0; j < 2; j++)
                CU_ASSERT_DOUBLE_EQUAL(ks[j].store_bytes,
                                       (double)approf_dtype_size(g->tensors[op->outputs[0]].dtype) *
                                           (double)ks[j].batch * (double)ks[j].m * (double)ks[j].n,
                                       1e-6);
            seen |= 8;
            break;
        }
        case APPROF_OP_RMS_NORM:
            CU_ASSERT_EQUAL(sp.kind[sp.n_iter - 1], APPROF_ITER_FIXED);
            CU_ASSERT_EQUAL(sp.in_map[1][0], sp.n_iter - 1);
            seen |= 16;
            break;
        case APPROF_OP_ROPE:
            CU_ASSERT_EQUAL(sp.kind[sp.n_iter - 1], APPROF_ITER_FIXED);
            CU_ASSERT_EQUAL(approf_op_saved_mask(g, (int)i), 0);
            seen |= 32;
            break;
        case APPROF_OP_TOPK_ROUTER:
            CU_ASSERT_EQUAL(op->attrs.top_k, 2);
            seen |= 64;
            break;
        default:
            break;
        }
    }
    CU_ASSERT_EQUAL(seen, 127);
    approf_graph_free(&g);
    /* Eager grouped-query attention: k [B, Hkv, 1, S, D] broadcast over the
     * G query heads of its group, never repeated; dk sums over G. */
    g = decoder("llama", "llama-3-8b", 1, 256, "eager", 1);
    for (size_t i = 0; i < g->n_ops; i++) {
        ApprofIterSpace sp;
        ApprofKernel ks[APPROF_MAX_KERNELS];
        if (strcmp(g->ops[i].name, "model.layers.0/self_attn/scores"))
            continue;
        CU_ASSERT_EQUAL(g->tensors[g->ops[i].inputs[1]].dims[2], 1);
        CU_ASSERT_EQUAL(g->tensors[g->ops[i].outputs[0]].dims[2], 4);
        CU_ASSERT_EQUAL_FATAL(approf_op_iter_space(g, (int)i, &sp), 0);
        CU_ASSERT_EQUAL(sp.in_map[1][2], -1);
        CU_ASSERT_EQUAL(sp.in_map[0][2], 2);
        CU_ASSERT_EQUAL(approf_op_kernels(g, (int)i, NULL, 1, ks, APPROF_MAX_KERNELS), 2);
        CU_ASSERT_EQUAL(ks[1].batch, 8);          /* dk: B x Hkv */
        CU_ASSERT_EQUAL(ks[1].k, 4 * 256);        /* G x S contracted */
        seen = -1;
    }
    CU_ASSERT_EQUAL(seen, -1);
    approf_graph_free(&g);
}

/* Shape checks of the new operators through approf_graph_add_op. */
static void test_new_op_shapes(void)
{
    ApprofGraph *g = NULL;
    char err[256];
    int64_t qd[5] = {2, 16, 2, 3, 8}, kd[4] = {2, 16, 2, 8}, bad[4] = {2, 16, 3, 8};
    int q, k, v, kb, in[3];
    ApprofOpAttrs a;
    CU_ASSERT_EQUAL_FATAL(approf_graph_new("t", APPROF_F32, 2, &g), 0);
    q = approf_graph_add_tensor(g, "q", APPROF_TENSOR_INPUT, APPROF_F32, 5, qd, 0);
    k = approf_graph_add_tensor(g, "k", APPROF_TENSOR_INPUT, APPROF_F32, 4, kd, 0);
    v = approf_graph_add_tensor(g, "v", APPROF_TENSOR_INPUT, APPROF_F32, 4, kd, 0);
    kb = approf_graph_add_tensor(g, "kb", APPROF_TENSOR_INPUT, APPROF_F32, 4, bad, 0);
    memset(&a, 0, sizeof a);
    in[0] = q; in[1] = k; in[2] = v;
    CU_ASSERT(approf_graph_add_op(g, "attn", APPROF_OP_ATTENTION, in, 3, &a, NULL, 0, err, sizeof err) >= 0);
    {
        /* non-causal: every key, twice the causal kernel's FLOPs */
        double full = approf_op_flops(g, 0, 0);
        a.causal = 1;
        CU_ASSERT(approf_graph_add_op(g, "attn_c", APPROF_OP_ATTENTION, in, 3, &a, NULL, 0, err, sizeof err) >= 0);
        CU_ASSERT_DOUBLE_EQUAL(approf_op_flops(g, 1, 0) * 2, full, 1e-6);
    }
    in[1] = kb;
    CU_ASSERT_EQUAL(approf_graph_add_op(g, "attn_bad", APPROF_OP_ATTENTION, in, 3, &a, NULL, 0, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "field inputs[1]"));
    memset(&a, 0, sizeof a);
    a.axis = 3;
    a.sizes[0] = 4;
    a.sizes[1] = 4;
    CU_ASSERT(approf_graph_add_op(g, "split", APPROF_OP_SPLIT, &k, 1, &a, NULL, 0, err, sizeof err) >= 0);
    CU_ASSERT_EQUAL(g->ops[g->n_ops - 1].n_outputs, 2);
    a.sizes[1] = 5;
    CU_ASSERT_EQUAL(approf_graph_add_op(g, "split2", APPROF_OP_SPLIT, &k, 1, &a, NULL, 0, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "field sizes"));
    memset(&a, 0, sizeof a);
    a.top_k = 9;
    CU_ASSERT_EQUAL(approf_graph_add_op(g, "router", APPROF_OP_TOPK_ROUTER, &k, 1, &a, NULL, 0, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "field top_k"));
    approf_graph_free(&g);
}

static void test_flops(void)
{
    ApprofGraph *g;
    double f;
    /* torchvision docs: ResNet50_Weights.IMAGENET1K_V1 "GFLOPS 4.09" (MACs). */
    g = build("resnet50", NULL, NULL, 2);
    f = macs_per_sample(g);
    CU_ASSERT(fabs(f / 4.09e9 - 1) < 0.02);
    approf_graph_free(&g);
    /* Swin paper table 1: Swin-T 4.5G FLOPs (MACs, fvcore 4.49G). */
    g = build("swin", NULL, NULL, 2);
    f = macs_per_sample(g);
    CU_ASSERT(fabs(f / 4.5e9 - 1) < 0.03);
    approf_graph_free(&g);
    /* Megatron-LM (Narayanan et al. 2021, eq. 3) forward FLOPs per sample:
     * 24·s·l·h²·(1 + s/(6h) + V/(12·h·l)); exact for our GEMMs. */
    g = build("gpt", "gpt2-small", NULL, 1);
    {
        double s = 1024, l = 12, h = 768, V = 50257;
        double ref = 24 * s * l * h * h * (1 + s / (6 * h) + V / (12 * h * l));
        CU_ASSERT(fabs(2 * macs_per_sample(g) / ref - 1) < 1e-9);
    }
    approf_graph_free(&g);
}

static void test_backward(void)
{
    ApprofGraph *g = build("gpt", "gpt2-small", NULL, 2);
    int checked = 0;
    for (size_t i = 0; i < g->n_ops; i++) {
        const ApprofOp *op = &g->ops[i];
        if (op->kind == APPROF_OP_BATCH_MATMUL || (op->kind == APPROF_OP_MATMUL && !op->attrs.has_bias)) {
            ApprofKernel ks[APPROF_MAX_KERNELS];
            int n = approf_op_kernels(g, (int)i, NULL, 1, ks, APPROF_MAX_KERNELS);
            CU_ASSERT_EQUAL(n, 2);  /* data gradient + weight gradient */
            CU_ASSERT_DOUBLE_EQUAL(approf_op_flops(g, (int)i, 1), 2 * approf_op_flops(g, (int)i, 0), 1);
            CU_ASSERT_EQUAL(approf_op_saved_mask(g, (int)i), APPROF_SAVED_INPUT(0) | APPROF_SAVED_INPUT(1));
            checked++;
        }
    }
    CU_ASSERT_EQUAL(checked, 12 * 2 + 1);
    approf_graph_free(&g);
    /* The first conv of ResNet reads the images: no data gradient. */
    g = build("resnet50", NULL, NULL, 2);
    {
        ApprofKernel ks[APPROF_MAX_KERNELS];
        CU_ASSERT_EQUAL(approf_op_kernels(g, 0, NULL, 1, ks, APPROF_MAX_KERNELS), 1);
        CU_ASSERT_EQUAL(ks[0].kind, APPROF_K_CONV_BWD_FILTER);
        CU_ASSERT_EQUAL(approf_op_kernels(g, 0, NULL, 0, ks, APPROF_MAX_KERNELS), 1);
        CU_ASSERT_EQUAL(ks[0].kind, APPROF_K_CONV_FWD);
        CU_ASSERT_EQUAL(ks[0].conv_n, 2);
        CU_ASSERT_EQUAL(ks[0].conv_c, 3);
        CU_ASSERT_EQUAL(ks[0].conv_h, 224);
        CU_ASSERT_EQUAL(ks[0].conv_k, 64);
        CU_ASSERT_EQUAL(ks[0].conv_r, 7);
        CU_ASSERT_EQUAL(ks[0].conv_stride[0], 2);
        CU_ASSERT_EQUAL(ks[0].conv_pad[0], 3);
        /* 2·N·K·Ho·Wo·C·R·S = 2·2·64·112·112·3·49 */
        CU_ASSERT_DOUBLE_EQUAL(ks[0].flops, 2.0 * 2 * 64 * 112 * 112 * 3 * 49, 0.5);
    }
    approf_graph_free(&g);
}

/* Forward kernels with the full sizes reproduce approf_op_flops; a split
 * parallel loop divides GEMM work; every map points at a loop of the right
 * size (or -1). */
static void test_iter_spaces(void)
{
    static const char *models[][2] = {{"mlp", NULL}, {"resnet50", NULL}, {"gpt", "gpt2-small"},
                                      {"swin", NULL}, {"bert", "base"}};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        ApprofGraph *g = build(models[m][0], models[m][1], NULL, 4);
        for (size_t i = 0; i < g->n_ops; i++) {
            ApprofIterSpace sp;
            ApprofKernel ks[APPROF_MAX_KERNELS];
            const ApprofOp *op = &g->ops[i];
            double f = 0;
            int n, nb = 0;
            CU_ASSERT_EQUAL_FATAL(approf_op_iter_space(g, (int)i, &sp), 0);
            n = approf_op_kernels(g, (int)i, sp.size, 0, ks, APPROF_MAX_KERNELS);
            CU_ASSERT(n >= 0);
            for (int k = 0; k < n; k++)
                f += ks[k].flops;
            CU_ASSERT_DOUBLE_EQUAL(f, approf_op_flops(g, (int)i, 0), 1e-6 * f + 1e-9);
            for (int d = 0; d < sp.n_iter; d++)
                nb += sp.is_batch[d];
            CU_ASSERT(nb <= 1);
            for (int k = 0; k < op->n_outputs; k++) {
                const ApprofTensor *t = &g->tensors[op->outputs[k]];
                for (int d = 0; d < t->ndim; d++) {
                    int l = sp.out_map[k][d];
                    CU_ASSERT(l >= -1 && l < sp.n_iter);
                    if (l >= 0 && op->kind != APPROF_OP_RESHAPE)
                        CU_ASSERT_EQUAL(sp.size[l], t->dims[d]);
                }
                if (t->batch_dim >= 0 && sp.out_map[k][t->batch_dim] >= 0)
                    CU_ASSERT(sp.is_batch[sp.out_map[k][t->batch_dim]]);
            }
            if (op->kind == APPROF_OP_MATMUL || op->kind == APPROF_OP_BATCH_MATMUL || op->kind == APPROF_OP_CONV2D) {
                int64_t loc[APPROF_MAX_ITER];
                double full = 0, half = 0;
                int bl = -1;
                for (int k = 0; k < n; k++)
                    if (ks[k].kind == APPROF_K_GEMM || ks[k].kind == APPROF_K_CONV_FWD)
                        full += ks[k].flops;
                memcpy(loc, sp.size, sizeof loc);
                for (int d = 0; d < sp.n_iter; d++)
                    if (sp.is_batch[d])
                        bl = d;
                CU_ASSERT_FATAL(bl >= 0);
                loc[bl] = sp.size[bl] / 2;
                n = approf_op_kernels(g, (int)i, loc, 0, ks, APPROF_MAX_KERNELS);
                for (int k = 0; k < n; k++)
                    if (ks[k].kind == APPROF_K_GEMM || ks[k].kind == APPROF_K_CONV_FWD)
                        half += ks[k].flops;
                CU_ASSERT(full > 0);
                CU_ASSERT_DOUBLE_EQUAL(2 * half, full, 1e-9 * full);
            }
        }
        approf_graph_free(&g);
    }
}

static void test_matmul_space(void)
{
    ApprofGraph *g = NULL;
    ApprofIterSpace sp;
    ApprofKernel ks[APPROF_MAX_KERNELS];
    int64_t xd[3] = {8, 16, 32}, wd[2] = {32, 64}, bd[1] = {64}, loc[APPROF_MAX_ITER];
    int in[3], op;
    ApprofOpAttrs a = {.has_bias = 1};
    char err[256];
    CU_ASSERT_EQUAL_FATAL(approf_graph_new("t", APPROF_F32, 8, &g), 0);
    in[0] = approf_graph_add_tensor(g, "x", APPROF_TENSOR_ACT, APPROF_F32, 3, xd, 0);
    in[1] = approf_graph_add_tensor(g, "w", APPROF_TENSOR_PARAM, APPROF_F32, 2, wd, -1);
    in[2] = approf_graph_add_tensor(g, "b", APPROF_TENSOR_PARAM, APPROF_F32, 1, bd, -1);
    op = approf_graph_add_op(g, "dense", APPROF_OP_MATMUL, in, 3, &a, NULL, 0, err, sizeof err);
    CU_ASSERT_EQUAL_FATAL(op, 0);
    CU_ASSERT_EQUAL(approf_op_iter_space(g, op, &sp), 0);
    /* loops {b=8, s=16, n=64, k=32 (reduce)} */
    CU_ASSERT_EQUAL(sp.n_iter, 4);
    CU_ASSERT_EQUAL(sp.size[2], 64);
    CU_ASSERT_EQUAL(sp.kind[3], APPROF_ITER_REDUCE);
    CU_ASSERT(sp.is_batch[0] && !sp.is_batch[1]);
    CU_ASSERT_EQUAL(sp.in_map[1][0], 3);
    CU_ASSERT_EQUAL(sp.in_map[1][1], 2);
    CU_ASSERT_EQUAL(sp.in_map[2][0], 2);
    CU_ASSERT_EQUAL(sp.out_map[0][2], 2);
    loc[0] = 4; loc[1] = 16; loc[2] = 32; loc[3] = 32;
    CU_ASSERT_EQUAL(approf_op_kernels(g, op, loc, 0, ks, APPROF_MAX_KERNELS), 2);
    CU_ASSERT_EQUAL(ks[0].m, 64);
    CU_ASSERT_EQUAL(ks[0].n, 32);
    CU_ASSERT_EQUAL(ks[0].k, 32);
    CU_ASSERT_DOUBLE_EQUAL(ks[0].flops, 2.0 * 64 * 32 * 32, 0);
    CU_ASSERT_EQUAL(approf_op_kernels(g, op, loc, 1, ks, APPROF_MAX_KERNELS), 3);
    CU_ASSERT_EQUAL(ks[1].m, 32);   /* dw[k, n] = x^T @ dy: m = k */
    CU_ASSERT_EQUAL(ks[1].k, 64);   /* contracted over the 4·16 rows */
    /* Shape checks name the op and the field. */
    {
        int64_t bad[2] = {31, 64};
        int w2 = approf_graph_add_tensor(g, "w2", APPROF_TENSOR_PARAM, APPROF_F32, 2, bad, -1);
        int in2[2] = {in[0], w2};
        CU_ASSERT_EQUAL(approf_graph_add_op(g, "oops", APPROF_OP_MATMUL, in2, 2, NULL, NULL, 0, err, sizeof err),
                        APPROF_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "op 'oops'"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "field inputs[1]"));
        CU_ASSERT_EQUAL(approf_graph_add_op(g, "nobias", APPROF_OP_MATMUL, in, 2, &a, NULL, 0, err, sizeof err),
                        APPROF_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "field inputs"));
    }
    approf_graph_free(&g);
    CU_ASSERT_PTR_NULL(g);
}

static void test_zoo_errors(void)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256];
    memset(&o, 0, sizeof o);
    CU_ASSERT_EQUAL(approf_zoo_build("nosuch", NULL, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "nosuch"));
    o.preset = "gpt4";
    CU_ASSERT_EQUAL(approf_zoo_build("gpt", &o, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "gpt4"));
    o.preset = NULL;
    o.hidden = 100;
    o.heads = 7;
    CU_ASSERT_EQUAL(approf_zoo_build("gpt", &o, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NULL(g);
    /* A preset or dataset a model does not have is an error, not ignored. */
    memset(&o, 0, sizeof o);
    o.preset = "gpt3-39b";
    CU_ASSERT_EQUAL(approf_zoo_build("resnet50", &o, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "gpt3-39b"));
    o.preset = "mixtral-8x7b";
    CU_ASSERT_EQUAL(approf_zoo_build("llama", &o, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "llama-3-8b"));   /* the presets it has are listed */
    memset(&o, 0, sizeof o);
    o.dataset = "cifar10";
    CU_ASSERT_EQUAL(approf_zoo_build("gpt", &o, &g, err, sizeof err), APPROF_EINVAL);
    memset(&o, 0, sizeof o);
    o.attention = "sdpa";
    CU_ASSERT_EQUAL(approf_zoo_build("llama", &o, &g, err, sizeof err), APPROF_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "sdpa"));
    CU_ASSERT_PTR_NULL(g);
}

/* GPT with --attention flash: the same parameters, no softmax and no S x S
 * tensor, one fused causal attention op per layer with the masked half of
 * the eager scores and context matmuls; every other matmul unchanged. */
static void test_gpt_flash(void)
{
    ApprofGraph *e = decoder("gpt", "gpt2-small", 2, 1024, NULL, 1);
    ApprofGraph *f = decoder("gpt", "gpt2-small", 2, 1024, "flash", 1);
    const double S = 1024, H = 768, L = 2;
    int attention = 0;
    CU_ASSERT_EQUAL(approf_graph_num_params(e), approf_graph_num_params(f));
    for (size_t i = 0; i < f->n_ops; i++) {
        CU_ASSERT(f->ops[i].kind != APPROF_OP_SOFTMAX);
        attention += f->ops[i].kind == APPROF_OP_ATTENTION;
        for (int j = 0; j < f->ops[i].n_outputs; j++) {
            const ApprofTensor *t = &f->tensors[f->ops[i].outputs[j]];
            CU_ASSERT(!(t->ndim >= 3 && t->dims[t->ndim - 1] == S && t->dims[t->ndim - 2] == S));
        }
    }
    CU_ASSERT_EQUAL(attention, 2);
    /* the loss's kernels say which pass they are (the spec's loss_f32
     * prices them as an f32 copy's kernels); no other kernel does */
    int losses = 0;
    for (size_t i = 0; i < f->n_ops; i++)
        for (int ph = 0; ph < 2; ph++) {
            ApprofKernel ks[APPROF_MAX_KERNELS];
            int n = approf_op_kernels(f, (int)i, NULL, ph, ks, APPROF_MAX_KERNELS);
            for (int j = 0; j < n; j++) {
                CU_ASSERT_EQUAL(ks[j].loss,
                                f->ops[i].kind == APPROF_OP_CROSS_ENTROPY ? ph + 1 : 0);
                losses += ks[j].loss > 0;
            }
        }
    CU_ASSERT_EQUAL(losses, 2);
    /* eager scores + context: 2 x 2 S^2 H per layer; fused: half of it */
    double eager_attn = gemm_flops(e, APPROF_OP_BATCH_MATMUL, 0);
    CU_ASSERT(fabs(eager_attn / (L * 2 * 2 * S * S * H) - 1) < 1e-12);
    CU_ASSERT(fabs(gemm_flops(f, APPROF_OP_ATTENTION, 0) / (eager_attn / 2) - 1) < 1e-12);
    CU_ASSERT(fabs((gemm_flops(f, -1, 0) - gemm_flops(f, APPROF_OP_ATTENTION, 0)) /
                   (gemm_flops(e, -1, 0) - eager_attn) - 1) < 1e-12);
    approf_graph_free(&e);
    approf_graph_free(&f);
    /* an unknown attention is an error naming it */
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256] = "";
    memset(&o, 0, sizeof o);
    o.attention = "fast";
    CU_ASSERT(approf_zoo_build("gpt", &o, &g, err, sizeof err) < 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "fast"));
}

/* The zoo model name built with o, validated; NULL (err says why) when
 * the build refuses it. */
static ApprofGraph *built_or_null(const char *name, const ApprofZooOptions *o, char *err,
                                  size_t errlen)
{
    ApprofGraph *g = NULL;
    if (approf_zoo_build(name, o, &g, err, errlen) < 0)
        return NULL;
    CU_ASSERT_EQUAL(approf_graph_validate(g, err, errlen), 0);
    return g;
}

static ApprofGraph *bert_attention(int mlm, double drop, const char *attn, char *err,
                                   size_t errlen)
{
    ApprofZooOptions o;
    memset(&o, 0, sizeof o);
    o.attention = attn;
    o.preset = "base";
    o.num_layers = 2;
    o.seq_len = 128;
    o.batch = 1;
    o.mlm_positions = mlm;
    o.dropout = drop;
    return built_or_null("bert", &o, err, errlen);
}

static ApprofGraph *bert_pretrain(int mlm, double drop, char *err, size_t errlen)
{
    return bert_attention(mlm, drop, NULL, err, errlen);
}

/* BERT with --attention flash: the same parameters, no softmax and no
 * S x S tensor, one fused bidirectional (not causal) attention op per
 * layer with all of the eager scores and context matmuls; the
 * probabilities' dropout runs inside it, so two dropouts per layer are
 * left; every other matmul unchanged. */
static void test_bert_flash(void)
{
    char err[256] = "";
    ApprofGraph *e = bert_attention(20, 0.1, NULL, err, sizeof err);
    ApprofGraph *f = bert_attention(20, 0.1, "flash", err, sizeof err);
    const double S = 128, H = 768, L = 2;
    int attention = 0, n_drop = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(approf_graph_num_params(e), approf_graph_num_params(f));
    for (size_t i = 0; i < f->n_ops; i++) {
        CU_ASSERT(f->ops[i].kind != APPROF_OP_SOFTMAX);
        if (f->ops[i].kind == APPROF_OP_ATTENTION) {
            attention++;
            CU_ASSERT_EQUAL(f->ops[i].attrs.causal, 0);
        }
        n_drop += f->ops[i].kind == APPROF_OP_DROPOUT;
        for (int j = 0; j < f->ops[i].n_outputs; j++) {
            const ApprofTensor *t = &f->tensors[f->ops[i].outputs[j]];
            CU_ASSERT(!(t->ndim >= 3 && t->dims[t->ndim - 1] == S && t->dims[t->ndim - 2] == S));
        }
    }
    CU_ASSERT_EQUAL(attention, 2);
    CU_ASSERT_EQUAL(n_drop, 1 + 2 * 2);
    /* eager scores + context: 2 x 2 S^2 H per layer; fused and not
     * causal: all of it */
    double eager_attn = gemm_flops(e, APPROF_OP_BATCH_MATMUL, 0);
    CU_ASSERT(fabs(eager_attn / (L * 2 * 2 * S * S * H) - 1) < 1e-12);
    CU_ASSERT(fabs(gemm_flops(f, APPROF_OP_ATTENTION, 0) / eager_attn - 1) < 1e-12);
    CU_ASSERT(fabs((gemm_flops(f, -1, 0) - gemm_flops(f, APPROF_OP_ATTENTION, 0)) /
                   (gemm_flops(e, -1, 0) - eager_attn) - 1) < 1e-12);
    approf_graph_free(&e);
    approf_graph_free(&f);
    /* an unknown attention is an error naming it */
    CU_ASSERT_PTR_NULL(bert_attention(0, 0, "sdpa", err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "sdpa"));
}

/* gpt with --dropout (Megatron-LM's --hidden-dropout and
 * --attention-dropout): one after the embeddings and, per layer, on the
 * attention probabilities (eager only: inside the fused kernel with
 * --attention flash), the attention output and the MLP output; the same
 * parameters and FLOPs; a model without dropouts refuses the option,
 * naming the models that have it. */
static ApprofGraph *gpt_dropout(double drop, const char *attn, const char *model, char *err,
                                size_t errlen)
{
    ApprofZooOptions o;
    memset(&o, 0, sizeof o);
    o.attention = attn;
    o.num_layers = 2;
    o.hidden = 256;
    o.heads = 4;
    o.seq_len = 64;
    o.vocab = 512;
    o.batch = 2;
    o.dropout = drop;
    return built_or_null(model, &o, err, errlen);
}

static void test_gpt_dropout(void)
{
    char err[256] = "";
    ApprofGraph *plain = gpt_dropout(0, NULL, "gpt", err, sizeof err);
    ApprofGraph *eager = gpt_dropout(0.1, NULL, "gpt", err, sizeof err);
    ApprofGraph *flash = gpt_dropout(0.1, "flash", "gpt", err, sizeof err);
    int n[3] = {0, 0, 0}, probs = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
    CU_ASSERT_PTR_NOT_NULL_FATAL(eager);
    CU_ASSERT_PTR_NOT_NULL_FATAL(flash);
    ApprofGraph *gs[3] = {plain, eager, flash};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < gs[k]->n_ops; i++)
            if (gs[k]->ops[i].kind == APPROF_OP_DROPOUT) {
                n[k]++;
                CU_ASSERT(fabs(gs[k]->ops[i].attrs.rate - 0.1) < 1e-12);
                /* the probabilities' dropout reads the softmax */
                int x = gs[k]->ops[i].inputs[0];
                probs += gs[k]->tensors[x].producer >= 0 &&
                         gs[k]->ops[gs[k]->tensors[x].producer].kind == APPROF_OP_SOFTMAX;
            }
    CU_ASSERT_EQUAL(n[0], 0);
    CU_ASSERT_EQUAL(n[1], 1 + 3 * 2);
    CU_ASSERT_EQUAL(n[2], 1 + 2 * 2);
    CU_ASSERT_EQUAL(probs, 2);
    CU_ASSERT_EQUAL(approf_graph_num_params(eager), approf_graph_num_params(plain));
    CU_ASSERT(fabs(gemm_flops(eager, -1, 0) / gemm_flops(plain, -1, 0) - 1) < 1e-12);
    approf_graph_free(&plain);
    approf_graph_free(&eager);
    approf_graph_free(&flash);
    CU_ASSERT_PTR_NULL(gpt_dropout(1.0, NULL, "gpt", err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--dropout"));
    CU_ASSERT_PTR_NULL(gpt_dropout(0.1, NULL, "llama", err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "bert and gpt have it"));
}

/* NVIDIA's BERT pre-training: the masked-LM head on the masked positions
 * only, and BERT's four dropouts. */
static void test_bert_pretraining(void)
{
    char err[256] = "";
    ApprofGraph *all = bert_pretrain(0, 0, err, sizeof err);
    ApprofGraph *dense = bert_pretrain(20, 0, err, sizeof err);
    ApprofGraph *drop = bert_pretrain(20, 0.1, err, sizeof err);
    const double H = 768, V = 30522, S = 128, P = 20;
    int n_drop = 0, n_slice = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(all);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dense);
    CU_ASSERT_PTR_NOT_NULL_FATAL(drop);
    /* the same parameters; the head (transform H x H, decoder H x V) on P
     * of the S positions: 2 (H^2 + H V) (S - P) forward FLOPs fewer */
    CU_ASSERT_EQUAL(approf_graph_num_params(all), approf_graph_num_params(dense));
    CU_ASSERT(fabs((gemm_flops(all, -1, 0) - gemm_flops(dense, -1, 0)) /
                   (2 * (H * H + H * V) * (S - P)) - 1) < 1e-12);
    /* dropout adds no GEMM and no parameter: one after the embeddings, and
     * the attention probabilities, attention output and MLP output of each
     * of the 2 layers */
    CU_ASSERT_EQUAL(gemm_flops(drop, -1, 0), gemm_flops(dense, -1, 0));
    CU_ASSERT_EQUAL(approf_graph_num_params(drop), approf_graph_num_params(dense));
    for (size_t i = 0; i < drop->n_ops; i++) {
        n_drop += drop->ops[i].kind == APPROF_OP_DROPOUT;
        n_slice += drop->ops[i].kind == APPROF_OP_SLICE;
        if (drop->ops[i].kind == APPROF_OP_DROPOUT)
            CU_ASSERT_DOUBLE_EQUAL(drop->ops[i].attrs.rate, 0.1, 1e-15);
    }
    CU_ASSERT_EQUAL(n_drop, 1 + 3 * 2);
    CU_ASSERT_EQUAL(n_slice, 1);
    /* different programs hash differently */
    {
        char h1[64], h2[64], h3[64];
        approf_graph_hash(all, h1, sizeof h1);
        approf_graph_hash(dense, h2, sizeof h2);
        approf_graph_hash(drop, h3, sizeof h3);
        CU_ASSERT(strcmp(h1, h2) != 0 && strcmp(h2, h3) != 0);
    }
    approf_graph_free(&all);
    approf_graph_free(&dense);
    approf_graph_free(&drop);
    /* refusals name the option */
    CU_ASSERT_PTR_NULL(bert_pretrain(129, 0, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--mlm-positions 129"));
    CU_ASSERT_PTR_NULL(bert_pretrain(0, 1.0, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--dropout"));
    {
        ApprofZooOptions o;
        ApprofGraph *g = NULL;
        memset(&o, 0, sizeof o);
        o.mlm_positions = 20;
        CU_ASSERT(approf_zoo_build("gpt", &o, &g, err, sizeof err) < 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "--mlm-positions"));
        o.mlm_positions = 0;
        o.dropout = 0.1;
        CU_ASSERT(approf_zoo_build("resnet50", &o, &g, err, sizeof err) < 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "--dropout"));
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"parameter counts", test_param_counts},
        {"flops per sample", test_flops},
        {"backward kernels", test_backward},
        {"iteration spaces", test_iter_spaces},
        {"matmul space and shape errors", test_matmul_space},
        {"zoo errors", test_zoo_errors},
        {"decoder parameter counts", test_decoder_params},
        {"Hugging Face family presets", test_hf_family_presets},
        {"decoder flops per token", test_decoder_flops},
        {"gpt with fused attention", test_gpt_flash},
        {"bert with fused (bidirectional) attention", test_bert_flash},
        {"bert pre-training head and dropout", test_bert_pretraining},
        {"gpt with dropout", test_gpt_dropout},
        {"llama-era operator semantics", test_new_op_semantics},
        {"llama-era operator shapes", test_new_op_shapes},
    };
    return CUNIT_RUN("zoo", tests);
}
