/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The model zoo's entry points (list and build by name) and the builder
 * helpers the model files zoo_cnn.c and zoo_tf.c compose: parameters are
 * named by their module path ("layer1.0/conv1/kernel"), operators likewise.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph_int.h"
#include "zoo_build.h"

typedef int (*ZooFn)(Zb *b, const ApprofZooOptions *o);

enum {
    ZOO_PRESETS = 1, ZOO_DATASETS = 2, ZOO_ATTENTION = 4, ZOO_MIXED = 8, ZOO_PRETRAIN = 16,
    ZOO_DROPOUT = 32
};

typedef struct {
    ApprofZooEntry e;
    ZooFn fn;
    int64_t batch;
    unsigned takes;          /* ZOO_PRESETS, ZOO_DATASETS, ZOO_ATTENTION, ZOO_PRETRAIN (bert's
                              * masked-LM head), ZOO_DROPOUT (bert's and gpt's
                              * dropouts): which choice options apply;
                              * ZOO_MIXED: trained in mixed precision by default */
} ZooModel;

static const ZooModel zoo[] = {
    {{"mlp", "Alpa tutorial MLP: dense 2048->8192->2048->8192->2048, relu, MSE loss",
      "batch 2048, hidden 2048, 4 dense layers, f32; --manual-boundaries: a boundary after layer 2"},
     zoo_mlp, 2048, 0},
    {{"resnet50", "torchvision ResNet-50 (v1.5), cross-entropy loss",
      "batch 256, imagenet 224x224 1000 classes (--dataset cifar10: 32x32, 10 classes), f32"},
     zoo_resnet50, 256, ZOO_DATASETS},
    {{"wide_resnet", "Alpa benchmark Wide-ResNet (Flax ResNetV1, bottleneck width factor)",
      "batch 256, cifar10 32x32 10 classes, depth 50, num_filters 160, width factor 2, f32"},
     zoo_wide_resnet, 256, ZOO_DATASETS},
    {{"gpt", "GPT decoder (pre-LN, learned positions, tied LM head)",
      "batch 32, --preset gpt2-small (12 layers, 768, 12 heads, seq 1024, vocab 50257); "
      "gpt3-1.3b|gpt3-2.7b|gpt3-6.7b (seq 2048, vocab 50257); gpt3-39b (48, 8192, 64, 1024, 51200), mixed precision (bf16; f16 on V100)"},
     zoo_gpt, 32, ZOO_PRESETS | ZOO_ATTENTION | ZOO_MIXED | ZOO_DROPOUT},
    {{"bert", "BERT for masked LM (post-LN, tied decoder, no pooler)",
      "batch 32, --preset base (12 layers, 768, 12 heads) | large (24, 1024, 16), seq 512, vocab 30522, mixed precision (bf16; f16 on V100); "
      "head on every position and no dropout unless --mlm-positions P / --dropout R (pre-training); "
      "--attention flash: one fused bidirectional attention op per layer"},
     zoo_bert, 32, ZOO_PRESETS | ZOO_ATTENTION | ZOO_MIXED | ZOO_PRETRAIN | ZOO_DROPOUT},
    {{"swin", "Swin Transformer Tiny (patch 4, window 7, depths 2-2-6-2, heads 3-6-12-24)",
      "batch 128, imagenet 224x224 1000 classes (--dataset cifar100: 100 classes, LiBai config), f32"},
     zoo_swin, 128, ZOO_DATASETS},
    {{"llama", "Llama decoder (RMSNorm, rotary, grouped-query attention, SwiGLU, untied head)",
      "batch 32, seq 4096, --preset llama-3-8b (32 layers, 4096, 32 heads, 8 kv, ffn 14336, vocab 128256) | "
      "llama-2-7b | llama-3-70b | llama-3.1-405b; flash attention, mixed precision (bf16; f16 on V100)"},
     zoo_decoder, 32, ZOO_PRESETS | ZOO_ATTENTION | ZOO_MIXED},
    {{"mistral", "Mistral decoder (Llama layout, grouped-query attention, sliding window recorded)",
      "batch 32, seq 4096, --preset mistral-7b (32 layers, 4096, 32 heads, 8 kv, ffn 14336, vocab 32000), mixed precision (bf16; f16 on V100)"},
     zoo_decoder, 32, ZOO_PRESETS | ZOO_ATTENTION | ZOO_MIXED},
    {{"mixtral", "Mixtral sparse mixture of experts (top-k router, experts as batched GEMMs)",
      "batch 32, seq 4096, --preset mixtral-8x7b (32 layers, 4096, 8 experts top 2, ffn 14336), "
      "capacity factor 1, mixed precision (bf16; f16 on V100)"},
     zoo_decoder, 32, ZOO_PRESETS | ZOO_ATTENTION | ZOO_MIXED},
    {{"qwen2", "Qwen2 decoder (Llama layout with q/k/v biases)",
      "batch 32, seq 4096, --preset qwen2.5-7b (28 layers, 3584, 28 heads, 4 kv, ffn 18944, vocab 152064), mixed precision (bf16; f16 on V100)"},
     zoo_decoder, 32, ZOO_PRESETS | ZOO_ATTENTION | ZOO_MIXED},
    {{"deepseek_moe", "DeepSeekMoE fine-grained experts with shared experts",
      "batch 32, seq 4096, --preset deepseek-moe-16b (28 layers, 2048, 64 experts of 1408 top 6, "
      "2 shared, first layer dense), capacity factor 1, mixed precision (bf16; f16 on V100)"},
     zoo_decoder, 32, ZOO_PRESETS | ZOO_ATTENTION | ZOO_MIXED},
    /* The Hugging Face families (hfconfig_variants.c), presets in zoo_presets.c */
#define HF_FAMILY(NAME, DESC, PRESETS) \
    {{NAME, DESC, "batch 32, seq 4096 (or the context), --preset " PRESETS "; flash attention, " \
      "mixed precision (bf16; f16 on V100)"}, zoo_decoder, 32, ZOO_PRESETS | ZOO_ATTENTION | ZOO_MIXED}
    HF_FAMILY("qwen3", "Qwen3 decoder (Llama layout, q/k RMSNorm per head)",
              "qwen3-8b (36 layers, 4096, 32 heads, 8 kv, ffn 12288) | qwen3-0.6b | qwen3-1.7b | "
              "qwen3-4b | qwen3-14b | qwen3-32b"),
    HF_FAMILY("qwen3_moe", "Qwen3-MoE (qwen3 attention, 128 experts, no shared expert)",
              "qwen3-30b-a3b (48 layers, 2048, 128 experts of 768 top 8) | qwen3-235b-a22b"),
    HF_FAMILY("gemma", "Gemma decoder (GeGLU, head_dim 256, tied head)",
              "gemma-7b (28 layers, 3072, 16 heads, ffn 24576) | gemma-2b"),
    HF_FAMILY("gemma2", "Gemma 2 decoder (gemma with pre- and post-norms, sliding window recorded)",
              "gemma-2-9b (42 layers, 3584, 16 heads, 8 kv, ffn 14336) | gemma-2-2b | gemma-2-27b"),
    HF_FAMILY("gemma3", "Gemma 3 text decoder (gemma2 with q/k RMSNorm per head)",
              "gemma-3-1b (26 layers, 1152, 4 heads, 1 kv, ffn 6912, vocab 262144)"),
    HF_FAMILY("phi3", "Phi-3 decoder (fused qkv_proj and gate_up_proj)",
              "phi-3-mini (32 layers, 3072, 32 heads, ffn 8192, vocab 32064)"),
    HF_FAMILY("olmo2", "OLMo 2 decoder (post-norms, q/k RMSNorm over the projections)",
              "olmo-2-7b (32 layers, 4096, 32 heads, ffn 11008) | olmo-2-13b"),
    HF_FAMILY("starcoder2", "StarCoder2 decoder (LayerNorm, biased GELU MLP, tied head)",
              "starcoder2-7b (32 layers, 4608, 36 heads, 4 kv, ffn 18432) | starcoder2-3b"),
    HF_FAMILY("gpt_neox", "GPT-NeoX decoder (fused query_key_value, parallel residual, LayerNorm)",
              "gpt-neox-20b (44 layers, 6144, 64 heads, ffn 24576) | pythia-1.4b | pythia-6.9b | "
              "pythia-12b"),
    HF_FAMILY("falcon", "Falcon decoder (multi-query attention, parallel attention and MLP)",
              "falcon-7b (32 layers, 4544, 71 heads, 1 kv)"),
    HF_FAMILY("deepseek", "DeepSeek-V2/V3 (Multi-head Latent Attention, routed and shared experts)",
              "deepseek-v3 (61 layers, 7168, 128 heads, 256 experts of 2048 top 8, 3 dense) | "
              "deepseek-v2-lite"),
    HF_FAMILY("llama4", "Llama 4 text decoder (routed and shared experts, interleaved MoE layers)",
              "llama-4-scout (48 layers, 5120, 40 heads, 8 kv, 16 experts of 8192 top 1)"),
#undef HF_FAMILY
};

int approf_zoo_trains_mixed(const char *name)
{
    for (size_t i = 0; name && i < sizeof zoo / sizeof zoo[0]; i++)
        if (!strcmp(zoo[i].e.name, name))
            return (zoo[i].takes & ZOO_MIXED) != 0;
    return 0;
}

const ApprofZooEntry *approf_zoo_list(size_t *n)
{
    static ApprofZooEntry entries[sizeof zoo / sizeof zoo[0]];
    for (size_t i = 0; i < sizeof zoo / sizeof zoo[0]; i++)
        entries[i] = zoo[i].e;
    if (n)
        *n = sizeof zoo / sizeof zoo[0];
    return entries;
}

int approf_zoo_build(const char *name, const ApprofZooOptions *opt, ApprofGraph **out,
                     char *err, size_t errlen)
{
    ApprofZooOptions o;
    Zb b;
    const ZooModel *m = NULL;
    int rc;

    if (err && errlen)
        err[0] = '\0';
    if (!name || !out)
        return APPROF_EINVAL;
    *out = NULL;
    for (size_t i = 0; i < sizeof zoo / sizeof zoo[0]; i++)
        if (!strcmp(zoo[i].e.name, name))
            m = &zoo[i];
    if (!m) {
        /* a preset's name given as the model's: name the model it belongs to */
        const char *family = NULL;
        for (size_t i = 0; !family && i < sizeof zoo / sizeof zoo[0]; i++) {
            ApprofZooOptions po;
            ApprofGraph *g = NULL;
            memset(&po, 0, sizeof po);
            po.preset = name;
            if (approf_zoo_build(zoo[i].e.name, &po, &g, NULL, 0) == 0)
                family = zoo[i].e.name;
            approf_graph_free(&g);
        }
        if (err && errlen && family)
            snprintf(err, errlen, "unknown model '%s': it is a preset of %s (--model %s "
                     "--preset %s; 'approf model show %s --preset %s')", name, family, family,
                     name, family, name);
        else if (err && errlen)
            snprintf(err, errlen, "unknown model '%s' (see 'approf models')", name);
        return APPROF_EINVAL;
    }
    if (opt)
        o = *opt;
    else
        memset(&o, 0, sizeof o);
    if (o.preset && !strncmp(o.preset, "hf:", 3)) {
        o.hf_config = o.preset + 3;
        o.preset = NULL;
    }
    memset(&b, 0, sizeof b);
    b.err = err;
    b.errlen = errlen;
    b.dt = APPROF_F32;
    b.eager = o.eager_elementwise != 0;
    if (o.dtype && approf_dtype_parse(o.dtype, &b.dt) < 0)
        return zb_fail(&b, APPROF_EINVAL, "unknown dtype '%s' (f32, f16, bf16)", o.dtype);
    if (o.batch < 0 || o.batch > (1 << 24) || o.num_layers < 0 || o.hidden < 0 || o.heads < 0 ||
        o.seq_len < 0 || o.vocab < 0 || o.width_factor < 0 || o.depth < 0 || o.num_filters < 0 ||
        o.image_size < 0 || o.num_classes < 0 || o.capacity_factor < 0 || o.mlm_positions < 0)
        return zb_fail(&b, APPROF_EINVAL, "negative or absurd model option");
    if (o.num_layers > APPROF_ZOO_MAX_LAYERS)
        return zb_fail(&b, APPROF_EINVAL, "%s: %d layers, above the limit of %d", name, o.num_layers,
                       APPROF_ZOO_MAX_LAYERS);
    if (o.preset && !(m->takes & ZOO_PRESETS))
        return zb_fail(&b, APPROF_EINVAL, "model '%s' has no presets: --preset %s does not apply "
                       "(see 'approf models')", name, o.preset);
    if (o.attention && !(m->takes & ZOO_ATTENTION))
        return zb_fail(&b, APPROF_EINVAL, "model '%s' has no attention choice: --attention %s "
                       "does not apply (gpt, bert and the llama family have it)", name, o.attention);
    if (o.activation_fusion && m->fn != zoo_decoder)
        return zb_fail(&b, APPROF_EINVAL, "model '%s' has no gated MLP: --activation-fusion "
                       "does not apply (the llama family has it)", name);
    if (o.eager_elementwise && m->fn != zoo_decoder)
        return zb_fail(&b, APPROF_EINVAL, "model '%s' has no RMSNorm and rotary embedding: "
                       "--eager-elementwise does not apply (the llama family has them)", name);
    if (o.attention_unpad && m->fn != zoo_gpt && m->fn != zoo_bert)
        return zb_fail(&b, APPROF_EINVAL, "model '%s': --attention-unpad does not apply "
                       "(gpt and bert have it)", name);
    if (o.attention_unpad && (!o.attention || strcmp(o.attention, "flash")))
        return zb_fail(&b, APPROF_EINVAL, "%s: --attention-unpad needs --attention flash "
                       "(it wraps the fused kernel)", name);
    if (o.mlm_positions && !(m->takes & ZOO_PRETRAIN))
        return zb_fail(&b, APPROF_EINVAL, "model '%s' has no masked-LM head: --mlm-positions %d "
                       "does not apply (bert has it)", name, o.mlm_positions);
    if (o.dropout != 0 && !(m->takes & ZOO_DROPOUT))
        return zb_fail(&b, APPROF_EINVAL, "model '%s' has no dropout option: --dropout %g "
                       "does not apply (bert and gpt have it)", name, o.dropout);
    if (!(o.dropout >= 0 && o.dropout < 1))
        return zb_fail(&b, APPROF_EINVAL, "%s: --dropout %g is not a probability in [0, 1)", name,
                       o.dropout);
    if (o.dataset && !(m->takes & ZOO_DATASETS))
        return zb_fail(&b, APPROF_EINVAL, "model '%s' has no datasets: --dataset %s does not apply "
                       "(see 'approf models')", name, o.dataset);
    if (o.hf_config && m->fn != zoo_decoder && m->fn != zoo_gpt && m->fn != zoo_bert)
        return zb_fail(&b, APPROF_EINVAL, "%s: Hugging Face configs build llama, mistral, mixtral, "
                       "qwen2, deepseek_moe, gpt and bert, not %s", o.hf_config, name);
    if (o.batch == 0)
        o.batch = m->batch;
    rc = approf_graph_new(name, b.dt, o.batch, &b.g);
    if (rc < 0)
        return rc;
    rc = m->fn(&b, &o);
    if (rc == 0 && b.rc < 0)
        rc = b.rc;
    if (rc == 0)
        rc = approf_graph_canonicalize(b.g);
    if (rc < 0) {
        approf_graph_free(&b.g);
        return rc;
    }
    *out = b.g;
    return 0;
}

/* ---- builder helpers ------------------------------------------------------ */

int zb_fail(Zb *b, int rc, const char *fmt, ...)
{
    if (b->rc == 0) {
        b->rc = rc;
        if (b->err && b->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(b->err, b->errlen, fmt, ap);
            va_end(ap);
        }
    }
    return b->rc;
}

static void path(char *buf, size_t len, const char *prefix, const char *leaf)
{
    if (prefix && *prefix && leaf && *leaf)
        snprintf(buf, len, "%s/%s", prefix, leaf);
    else
        snprintf(buf, len, "%s", prefix && *prefix ? prefix : (leaf ? leaf : ""));
}

static int check(Zb *b, int t, const char *what)
{
    if (b->rc < 0)
        return -1;
    if (t < 0) {
        zb_fail(b, t, "%s: %s", what, approf_strerror(t));
        return -1;
    }
    return t;
}

int zb_input(Zb *b, const char *name, int ndim, const int64_t *dims, int batch_dim, ApprofDtype dt)
{
    if (b->rc < 0)
        return -1;
    return check(b, approf_graph_add_tensor(b->g, name, APPROF_TENSOR_INPUT, dt, ndim, dims, batch_dim), name);
}

int zb_param(Zb *b, const char *prefix, const char *leaf, int ndim, const int64_t *dims)
{
    char nm[APPROF_NAME_MAX];
    if (b->rc < 0)
        return -1;
    path(nm, sizeof nm, prefix, leaf);
    return check(b, approf_graph_add_tensor(b->g, nm, APPROF_TENSOR_PARAM, b->dt, ndim, dims, -1), nm);
}

static int op_out(Zb *b, ApprofOpKind kind, const char *name, const int *in, int n_in,
                  const ApprofOpAttrs *a, const int64_t *rdims, int rndim)
{
    int r;
    if (b->rc < 0)
        return -1;
    for (int i = 0; i < n_in; i++)
        if (in[i] < 0)
            return zb_fail(b, APPROF_EINVAL, "op '%s': missing input %d", name, i), -1;
    r = approf_graph_add_op(b->g, name, kind, in, n_in, a, rdims, rndim, b->err, b->errlen);
    if (r < 0) {
        b->rc = r;
        return -1;
    }
    return b->g->ops[r].outputs[0];
}

int zb_op(Zb *b, ApprofOpKind kind, const char *name, const int *in, int n_in, const ApprofOpAttrs *a)
{
    return op_out(b, kind, name, in, n_in, a, NULL, 0);
}

int zb_unary(Zb *b, ApprofOpKind kind, const char *prefix, const char *leaf, int x)
{
    char nm[APPROF_NAME_MAX];
    path(nm, sizeof nm, prefix, leaf);
    return op_out(b, kind, nm, &x, 1, NULL, NULL, 0);
}

int zb_activation(Zb *b, ApprofOpKind kind, const char *prefix, const char *leaf, int x, int rerun)
{
    char nm[APPROF_NAME_MAX];
    ApprofOpAttrs a = {.rerun = rerun ? 1 : 0};
    path(nm, sizeof nm, prefix, leaf);
    return op_out(b, kind, nm, &x, 1, &a, NULL, 0);
}

int zb_relu_inplace(Zb *b, const char *prefix, int x)
{
    char nm[APPROF_NAME_MAX];
    ApprofOpAttrs a = {.inplace = 1};
    path(nm, sizeof nm, prefix, "relu");
    return op_out(b, APPROF_OP_RELU, nm, &x, 1, &a, NULL, 0);
}

int zb_binary(Zb *b, ApprofOpKind kind, const char *prefix, const char *leaf, int x, int y)
{
    char nm[APPROF_NAME_MAX];
    int in[2] = {x, y};
    path(nm, sizeof nm, prefix, leaf);
    return op_out(b, kind, nm, in, 2, NULL, NULL, 0);
}

int zb_dense(Zb *b, const char *prefix, int x, int64_t n_out, int bias)
{
    ApprofOpAttrs a = {.has_bias = bias};
    int in[3];
    int64_t wd[2];
    if (b->rc < 0 || x < 0)
        return -1;
    {
        const ApprofTensor *t = &b->g->tensors[x];
        wd[0] = t->dims[t->ndim - 1];
    }
    wd[1] = n_out;
    in[0] = x;
    in[1] = zb_param(b, prefix, "kernel", 2, wd);
    if (bias)
        in[2] = zb_param(b, prefix, "bias", 1, &n_out);
    return op_out(b, APPROF_OP_MATMUL, prefix, in, bias ? 3 : 2, &a, NULL, 0);
}

int zb_conv(Zb *b, const char *prefix, int x, int64_t k, int r, int stride, int pad, int bias)
{
    ApprofOpAttrs a = {.kernel = {r, r}, .stride = {stride, stride}, .padding = {pad, pad},
                       .groups = 1, .has_bias = bias};
    int in[3];
    int64_t wd[4];
    if (b->rc < 0 || x < 0)
        return -1;
    wd[0] = k;
    wd[1] = b->g->tensors[x].dims[1];
    wd[2] = wd[3] = r;
    in[0] = x;
    in[1] = zb_param(b, prefix, "kernel", 4, wd);
    if (bias)
        in[2] = zb_param(b, prefix, "bias", 1, &k);
    return op_out(b, APPROF_OP_CONV2D, prefix, in, bias ? 3 : 2, &a, NULL, 0);
}

int zb_norm(Zb *b, ApprofOpKind kind, const char *prefix, int x)
{
    int in[3];
    int64_t c;
    if (b->rc < 0 || x < 0)
        return -1;
    {
        const ApprofTensor *t = &b->g->tensors[x];
        c = kind == APPROF_OP_BATCH_NORM ? t->dims[1] : t->dims[t->ndim - 1];
    }
    in[0] = x;
    in[1] = zb_param(b, prefix, "scale", 1, &c);
    in[2] = zb_param(b, prefix, "bias", 1, &c);
    return op_out(b, kind, prefix, in, 3, NULL, NULL, 0);
}

int zb_reshape(Zb *b, const char *prefix, const char *leaf, int x, int ndim, const int64_t *dims)
{
    char nm[APPROF_NAME_MAX];
    path(nm, sizeof nm, prefix, leaf);
    return op_out(b, APPROF_OP_RESHAPE, nm, &x, 1, NULL, dims, ndim);
}

int zb_transpose(Zb *b, const char *prefix, const char *leaf, int x, int ndim, const int *perm)
{
    char nm[APPROF_NAME_MAX];
    ApprofOpAttrs a;
    memset(&a, 0, sizeof a);
    for (int d = 0; d < ndim && d < APPROF_MAX_DIMS; d++)
        a.perm[d] = perm[d];
    path(nm, sizeof nm, prefix, leaf);
    return op_out(b, APPROF_OP_TRANSPOSE, nm, &x, 1, &a, NULL, 0);
}

int zb_pool(Zb *b, ApprofOpKind kind, const char *prefix, int x, int k, int stride, int pad)
{
    ApprofOpAttrs a = {.kernel = {k, k}, .stride = {stride, stride}, .padding = {pad, pad}};
    return op_out(b, kind, prefix, &x, 1, &a, NULL, 0);
}

int zb_softmax(Zb *b, const char *prefix, int x, int axis)
{
    ApprofOpAttrs a = {.axis = axis};
    char nm[APPROF_NAME_MAX];
    path(nm, sizeof nm, prefix, "softmax");
    return op_out(b, APPROF_OP_SOFTMAX, nm, &x, 1, &a, NULL, 0);
}

int zb_boundary(Zb *b, const char *name, int x)
{
    return op_out(b, APPROF_OP_BOUNDARY, name, &x, 1, NULL, NULL, 0);
}
