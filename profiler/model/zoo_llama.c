/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Zoo decoders of the Llama family, as Hugging Face transformers builds
 * them (LlamaForCausalLM and its relatives): token embedding, blocks of
 * RMSNorm -> attention -> residual -> RMSNorm -> MLP -> residual, a final
 * RMSNorm and an LM head (untied unless the config ties it). Attention:
 * q, k, v projections (grouped-query: Hkv <= H key/value heads, q laid out
 * [B, S, Hkv, G, D] so that a head split covers both), rotary embedding of
 * q and k, then either the fused attention op (flash, default) or the eager
 * form (batched matmuls broadcasting K/V over the G query heads of a group,
 * softmax, the S x S scores kept), and the output projection. The MLP is
 * SwiGLU (silu(gate) * up, down); a mixture of experts replaces it with a
 * router (gate matmul + top-k), dispatch into [B, E, C, H] slots, the
 * experts as batched GEMMs over [1, E, ...] weights, combine, plus the
 * shared experts as a dense SwiGLU (DeepSeekMoE). Presets and Hugging Face
 * configs go through the same ApprofHfConfig, so equal sizes give equal
 * graphs. The variants of the Hugging Face families that change this
 * layout (hfconfig.h: qk_norm, norms, layer_norm, attn_bias, mlp, mlp_bias,
 * sparse_step, mlp_only) follow their transformers modeling_<model>.py:
 * q/k RMSNorms (qwen3 per head, olmo2 over the projection), gemma2's
 * sandwich norms, olmo2's post-norms, starcoder2's LayerNorms and biased
 * GELU MLP, gemma's GeGLU, qwen3_moe's dense layers between sparse ones.
 * phi3's fused qkv_proj and gate_up_proj are one GEMM each whose output a
 * split op cuts into q, k, v and gate, up (the same parameters as separate
 * projections). gpt_neox and falcon (hfconfig.h: fused with mlp 2) have
 * query_key_value split the same way, LayerNorms, a biased GELU MLP
 * (dense_h_to_4h, dense_4h_to_h) and, with parallel, attention and MLP
 * added to the residual together.
 */
#include <stdio.h>
#include <string.h>

#include "hfconfig.h"
#include "zoo_build.h"

/* The training sequence is not in a config.json: 4096 tokens, or the
 * model's context when shorter, unless --seq-len says otherwise. */
#define DEFAULT_SEQ 4096

typedef struct {
    const char *name;
    ApprofHfConfig c;
} DecoderPreset;

/* Each row is the model's config.json on the Hugging Face hub (the repo in
 * the comment); tests/model/test_zoo.c checks the parameter counts. */
static const DecoderPreset presets[] = {
    /* meta-llama/Llama-2-7b-hf */
    {"llama-2-7b", {"llama", "llama", 32, 4096, 32, 32, 128, 11008, 32000, 4096, 0, 0, 0,
                    0, 0, 0, 0, 0, 10000.0, 0}},
    /* meta-llama/Meta-Llama-3-8B */
    {"llama-3-8b", {"llama", "llama", 32, 4096, 32, 8, 128, 14336, 128256, 8192, 0, 0, 0,
                    0, 0, 0, 0, 0, 500000.0, 0}},
    /* meta-llama/Meta-Llama-3-70B */
    {"llama-3-70b", {"llama", "llama", 80, 8192, 64, 8, 128, 28672, 128256, 8192, 0, 0, 0,
                     0, 0, 0, 0, 0, 500000.0, 0}},
    /* meta-llama/Llama-3.1-405B (rope_scaling "llama3") */
    {"llama-3.1-405b", {"llama", "llama", 126, 16384, 128, 8, 128, 53248, 128256, 131072, 0, 0, 0,
                        0, 0, 0, 0, 0, 500000.0, 0}},
    /* mistralai/Mistral-7B-v0.1 */
    {"mistral-7b", {"mistral", "mistral", 32, 4096, 32, 8, 128, 14336, 32000, 32768, 0, 0, 0,
                    0, 0, 0, 0, 0, 10000.0, 4096}},
    /* mistralai/Mixtral-8x7B-v0.1 */
    {"mixtral-8x7b", {"mixtral", "mixtral", 32, 4096, 32, 8, 128, 14336, 32000, 32768, 0, 0, 0,
                      8, 2, 14336, 0, 0, 1000000.0, 0}},
    /* Qwen/Qwen2.5-7B */
    {"qwen2.5-7b", {"qwen2", "qwen2", 28, 3584, 28, 4, 128, 18944, 152064, 131072, 0, 0, 1,
                    0, 0, 0, 0, 0, 1000000.0, 0}},
    /* deepseek-ai/deepseek-moe-16b-base: 64 routed experts (top 6) of 1408,
     * 2 shared, the first layer dense (10944) */
    {"deepseek-moe-16b", {"deepseek", "deepseek_moe", 28, 2048, 16, 16, 128, 10944, 102400, 4096,
                          0, 0, 0, 64, 6, 1408, 2 * 1408, 1, 10000.0, 0}},
};

const char *zoo_decoder_presets(const char *family, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].c.zoo_name, family) && off < len)
            off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "|" : "", presets[i].name);
    return buf;
}

static int resolve(Zb *b, const ApprofZooOptions *o, ApprofHfConfig *c)
{
    const char *fam = b->g->name;
    if (o->hf_config) {
        int rc = approf_hf_config_load(o->hf_config, c, b->err, b->errlen);
        if (rc < 0)
            return b->rc = rc;
        if (strcmp(c->zoo_name, fam))
            return zb_fail(b, APPROF_EINVAL, "%s: field model_type: '%s' builds model '%s', not '%s'",
                           o->hf_config, c->model_type, c->zoo_name, fam);
    } else if (zoo_hf_preset(fam, NULL)) {
        /* a Hugging Face family's preset: its config.json, read as one */
        const char *json = zoo_hf_preset(fam, o->preset);
        char name[128];
        int rc;
        if (!json) {
            char list[512];
            return zb_fail(b, APPROF_EINVAL, "%s: unknown preset '%s' (%s)", fam, o->preset,
                           zoo_hf_presets(fam, list, sizeof list));
        }
        snprintf(name, sizeof name, "%.40s preset %.60s", fam, o->preset ? o->preset : "(default)");
        if ((rc = approf_hf_config_parse(name, json, c, b->err, b->errlen)) < 0)
            return b->rc = rc;
    } else {
        const DecoderPreset *p = NULL;
        /* Each family's default is its first preset, llama's is llama-3-8b. */
        const char *want = o->preset ? o->preset : !strcmp(fam, "llama") ? "llama-3-8b" : NULL;
        for (size_t i = 0; !p && i < sizeof presets / sizeof presets[0]; i++)
            if (!strcmp(presets[i].c.zoo_name, fam) && (!want || !strcmp(presets[i].name, want)))
                p = &presets[i];
        if (!p) {
            char list[256];
            return zb_fail(b, APPROF_EINVAL, "%s: unknown preset '%s' (%s)", fam, want ? want : "",
                           zoo_decoder_presets(fam, list, sizeof list));
        }
        *c = p->c;
    }
    if (o->num_layers) c->layers = o->num_layers;
    if (o->vocab) c->vocab = o->vocab;
    if (o->hidden || o->heads) {
        if (o->hidden) c->hidden = o->hidden;
        if (o->heads) c->heads = o->heads;
        if (c->hidden % c->heads)
            return zb_fail(b, APPROF_EINVAL, "%s: hidden %d not divisible by %d heads", fam, c->hidden, c->heads);
        c->head_dim = c->hidden / c->heads;
        if (c->head_dim % 2)
            return zb_fail(b, APPROF_EINVAL, "%s: hidden %d in %d heads is a head_dim of %d; rotary "
                           "position embeddings need an even one", fam, c->hidden, c->heads, c->head_dim);
        if (c->kv_heads > c->heads || c->heads % c->kv_heads)
            c->kv_heads = c->heads;
    }
    if (c->first_dense > c->layers)
        c->first_dense = c->layers;
    return 0;
}

static int rms(Zb *b, const char *prefix, int x)
{
    int in[2];
    int64_t h;
    if (b->rc < 0 || x < 0)
        return -1;
    h = b->g->tensors[x].dims[b->g->tensors[x].ndim - 1];
    in[0] = x;
    in[1] = zb_param(b, prefix, "scale", 1, &h);
    return zb_op(b, APPROF_OP_RMS_NORM, prefix, in, 2, &(ApprofOpAttrs){.eager = b->eager});
}

/* prefix/rope: the rotary embedding, eager as torchtitan's apply_rotary_emb
 * when the builder asks (Zb.eager) */
static int rope(Zb *b, const char *prefix, int x)
{
    char p[APPROF_NAME_MAX];
    if (snprintf(p, sizeof p, "%s/rope", prefix) >= (int)sizeof p)
        return zb_fail(b, APPROF_EINVAL, "operator name '%s/rope' is too long", prefix);
    return zb_op(b, APPROF_OP_ROPE, p, &x, 1, &(ApprofOpAttrs){.eager = b->eager});
}

/* RMSNorm, or LayerNorm with a bias (starcoder2) */
static int norm(Zb *b, const ApprofHfConfig *c, const char *prefix, int x)
{
    return c->layer_norm ? zb_norm(b, APPROF_OP_LAYER_NORM, prefix, x) : rms(b, prefix, x);
}

/* prefix/split: x cut along its last dim into n parts of sizes, out[i]. */
static void split_last(Zb *b, const char *prefix, int x, int n, const int64_t *sizes, int *out)
{
    char p[160];
    ApprofOpAttrs a;
    int y;
    memset(&a, 0, sizeof a);
    a.axis = x >= 0 ? b->g->tensors[x].ndim - 1 : 0;
    for (int i = 0; i < n; i++)
        a.sizes[i] = sizes[i];
    snprintf(p, sizeof p, "%s/split", prefix);
    y = zb_op(b, APPROF_OP_SPLIT, p, &x, 1, &a);
    for (int i = 0; i < n; i++)
        out[i] = y < 0 ? -1 : b->g->ops[b->g->n_ops - 1].outputs[i];
}

/* SwiGLU, or GeGLU with gelu (gemma's gelu_pytorch_tanh) when gelu is set;
 * fused: one gate_up_proj GEMM split in two (Phi3MLP's chunk(2): gate first);
 * rerun: the activation fused as Megatron-Core runs it (--activation-fusion,
 * docs/models.md "Activation fusion"): SwiGLUFunction and GeGLUFunction
 * (megatron/core/fusions/fused_bias_swiglu.py, fused_bias_geglu.py at
 * 92c8482e6d) save only gate and up and recompute the activation in their
 * backward, so the activation's output is not kept */
static int glu(Zb *b, const char *pre, int x, int64_t ffn, int gelu, int fused, int rerun)
{
    char p[128];
    int g, u;
    int64_t h = x >= 0 ? b->g->tensors[x].dims[2] : 0;
    if (fused) {
        int64_t sz[2] = {ffn, ffn};
        int parts[2];
        snprintf(p, sizeof p, "%s/gate_up_proj", pre);
        split_last(b, p, zb_dense(b, p, x, 2 * ffn, 0), 2, sz, parts);
        g = parts[0];
        u = parts[1];
    } else {
        snprintf(p, sizeof p, "%s/gate_proj", pre);
        g = zb_dense(b, p, x, ffn, 0);
    }
    g = zb_activation(b, gelu ? APPROF_OP_GELU : APPROF_OP_SILU, p, gelu ? "gelu" : "silu", g, rerun);
    if (!fused) {
        snprintf(p, sizeof p, "%s/up_proj", pre);
        u = zb_dense(b, p, x, ffn, 0);
    }
    snprintf(p, sizeof p, "%s/mul", pre);
    x = zb_binary(b, APPROF_OP_MUL, p, NULL, g, u);
    snprintf(p, sizeof p, "%s/down_proj", pre);
    return zb_dense(b, p, x, h, 0);
}

static int swiglu(Zb *b, const char *pre, int x, int64_t ffn, int rerun)
{
    return glu(b, pre, x, ffn, 0, 0, rerun);
}

/* The dense MLP of the config: SwiGLU, GeGLU, or starcoder2's c_fc -> GELU
 * -> c_proj (Starcoder2MLP, biases per use_bias). */
static int mlp(Zb *b, const char *pre, int x, const ApprofHfConfig *c, int rerun)
{
    char p[128];
    int neox = c->fused;   /* GPTNeoXMLP, FalconMLP */
    if (c->mlp != 2)
        return glu(b, pre, x, c->ffn, c->mlp == 1, c->fused, rerun);
    snprintf(p, sizeof p, "%s/%s", pre, neox ? "dense_h_to_4h" : "c_fc");
    x = zb_unary(b, APPROF_OP_GELU, p, "gelu", zb_dense(b, p, x, c->ffn, c->mlp_bias));
    snprintf(p, sizeof p, "%s/%s", pre, neox ? "dense_4h_to_h" : "c_proj");
    return zb_dense(b, p, x, c->hidden, c->mlp_bias);
}

/* Layer l has routed experts (DeepSeekMoE's first_k_dense_replace,
 * Qwen3-MoE's decoder_sparse_step and mlp_only_layers). */
static int sparse_layer(const ApprofHfConfig *c, int l)
{
    if (!c->experts || l < c->first_dense)
        return 0;
    if (l < APPROF_ZOO_MAX_LAYERS && (c->mlp_only[l / 8] >> (l % 8)) & 1)
        return 0;
    if (c->moe_freq > 1 && l % c->moe_freq)
        return 0;
    return c->sparse_step <= 1 || (l + 1) % c->sparse_step == 0;
}

/* One expert GEMM: x[B, E, C, k] @ w[1, E, k, n]. */
static int experts_gemm(Zb *b, const char *pre, const char *leaf, int x, int64_t e, int64_t k, int64_t n)
{
    char p[128];
    int64_t wd[4] = {1, e, k, n};
    int in[2];
    if (snprintf(p, sizeof p, "%s/%s", pre, leaf) >= (int)sizeof p)
        return zb_fail(b, APPROF_EINVAL, "operator name '%s/%s' is too long", pre, leaf);
    in[0] = x;
    in[1] = zb_param(b, p, "kernel", 4, wd);
    return zb_op(b, APPROF_OP_BATCH_MATMUL, p, in, 2, NULL);
}

/* rerun: as glu's; Megatron-Core's experts (megatron/core/transformer/moe/
 * experts.py at 92c8482e6d, TEGroupedMLP.forward) apply the fused
 * weighted_bias_swiglu_impl with bias_activation_fusion, which multiplies
 * the routing probabilities in (the dispatcher permutes them with the
 * tokens: token_dispatcher.py's dispatch_preprocess calls permute(...,
 * probs=probs), and token_combine's unpermute takes none), so the combine
 * of such a graph is marked probs_in_experts: it keeps no expert output
 * (WeightedSwiGLUFunction saves its input and the probabilities, and
 * weighted_swiglu_back takes their gradient from them; fused_bias_swiglu.py
 * at 92c8482e6d) */
static int moe(Zb *b, const char *pre, int x, const ApprofHfConfig *c, double cf, int rerun)
{
    char p[128];
    int w, xe, g, u, y;
    int64_t s = x >= 0 ? b->g->tensors[x].dims[1] : 0, h = c->hidden, e = c->experts;
    double slots = cf * (double)s * c->top_k / (double)e;
    int64_t cap = (int64_t)slots;
    if ((double)cap < slots)
        cap++;
    if (cap < 1)
        cap = 1;
    snprintf(p, sizeof p, "%s/gate", pre);
    w = zb_dense(b, p, x, e, 0);
    if (c->score_bias) {
        /* DeepseekV3TopkRouter: sigmoid(logits) + e_score_correction_bias
         * choose the experts */
        int64_t ed = e;
        w = zb_binary(b, APPROF_OP_ADD, p, "add_bias", w, zb_param(b, p, "e_score_correction_bias", 1, &ed));
    }
    {
        ApprofOpAttrs a = {.top_k = c->top_k};
        snprintf(p, sizeof p, "%s/router", pre);
        w = zb_op(b, APPROF_OP_TOPK_ROUTER, p, &w, 1, &a);
    }
    {
        ApprofOpAttrs a = {.capacity = cap};
        int in[2] = {x, w};
        snprintf(p, sizeof p, "%s/dispatch", pre);
        xe = zb_op(b, APPROF_OP_MOE_DISPATCH, p, in, 2, &a);
    }
    snprintf(p, sizeof p, "%s/experts", pre);
    g = experts_gemm(b, p, "gate_proj", xe, e, h, c->moe_ffn);
    g = zb_activation(b, APPROF_OP_SILU, p, "gate_proj/silu", g, rerun);
    u = experts_gemm(b, p, "up_proj", xe, e, h, c->moe_ffn);
    g = zb_binary(b, APPROF_OP_MUL, p, "mul", g, u);
    y = experts_gemm(b, p, "down_proj", g, e, c->moe_ffn, h);
    {
        int in[2] = {y, w};
        ApprofOpAttrs a = {.probs_in_experts = rerun ? 1 : 0};
        snprintf(p, sizeof p, "%s/combine", pre);
        y = zb_op(b, APPROF_OP_MOE_COMBINE, p, in, 2, &a);
    }
    if (c->shared_ffn) {
        snprintf(p, sizeof p, "%s/shared_experts", pre);
        y = zb_binary(b, APPROF_OP_ADD, pre, "add_shared", y, swiglu(b, p, x, c->shared_ffn, rerun));
    }
    return y;
}

/* x copied n times along axis (torch's expand, materialized by the cat
 * that reads it) as concats of doubling copies. */
static int repeat_axis(Zb *b, const char *pre, int x, int axis, int64_t n)
{
    char leaf[32];
    int acc = -1, i = 0;
    ApprofOpAttrs a;
    memset(&a, 0, sizeof a);
    a.axis = axis;
    while (n > 0 && b->rc >= 0) {
        if (n & 1) {
            int in[2] = {acc, x};
            snprintf(leaf, sizeof leaf, "%s/expand_%d", pre, i++);
            acc = acc < 0 ? x : zb_op(b, APPROF_OP_CONCAT, leaf, in, 2, &a);
        }
        n >>= 1;
        if (n) {
            int in[2] = {x, x};
            snprintf(leaf, sizeof leaf, "%s/expand_%d", pre, i++);
            x = zb_op(b, APPROF_OP_CONCAT, leaf, in, 2, &a);
        }
    }
    return acc;
}

/* Multi-head Latent Attention (DeepseekV3Attention in transformers'
 * models/deepseek_v3/modeling_deepseek_v3.py; hfconfig.c read_mla): q
 * through q_a_proj, q_a_layernorm, q_b_proj (or q_proj), split into the
 * qk_nope and the rotated qk_rope parts; kv_a_proj_with_mqa split into the
 * kv_lora latent (kv_a_layernorm, kv_b_proj: k_nope and v per head) and one
 * rotated k_rope shared by the heads. flash: q and k concatenated to qk_nope
 * + qk_rope per head (k_rope expanded over the heads), v padded to that
 * width for the fused op and the output cut back to v_head_dim, as
 * transformers' flash_attention_2 path does (F.pad of v, then [..., :v]);
 * its P V GEMM runs over the padded width. eager: the scores as q_nope
 * k_nope^T + q_rope k_rope^T (the shared k_rope broadcast over the heads),
 * softmax, times v: exactly the eager FLOPs. */
static int mla_attention(Zb *b, const char *pre, int x, const ApprofHfConfig *c, int eager)
{
    char p[128];
    int64_t bs = b->g->batch_size, s = x >= 0 ? b->g->tensors[x].dims[1] : 0, H = c->heads;
    int64_t dn = c->qk_nope, dr = c->qk_rope, dv = c->v_dim, dq = dn + dr, lat = c->kv_lora;
    int64_t q5[5] = {bs, s, H, 1, dq}, kv4[4] = {bs, s, H, dn + dv}, kr4[4] = {bs, s, 1, dr};
    int64_t qsz[2] = {dn, dr}, kvsz[2] = {lat, dr}, ksz[2] = {dn, dv}, merged[3] = {bs, s, H * dv};
    int q, kv, qp[2], kvp[2], kp[2], kr, o;
    if (c->q_lora) {
        snprintf(p, sizeof p, "%s/q_a_proj", pre);
        q = zb_dense(b, p, x, c->q_lora, c->attn_bias);
        snprintf(p, sizeof p, "%s/q_a_layernorm", pre);
        q = rms(b, p, q);
        snprintf(p, sizeof p, "%s/q_b_proj", pre);
        q = zb_dense(b, p, q, H * dq, 0);
    } else {
        snprintf(p, sizeof p, "%s/q_proj", pre);
        q = zb_dense(b, p, x, H * dq, 0);
    }
    q = zb_reshape(b, p, "split_heads", q, 5, q5);
    if (dn)
        split_last(b, p, q, 2, qsz, qp);
    else
        qp[0] = -1, qp[1] = q;
    qp[1] = rope(b, p, qp[1]);
    snprintf(p, sizeof p, "%s/kv_a_proj_with_mqa", pre);
    kv = zb_dense(b, p, x, lat + dr, c->attn_bias);
    split_last(b, p, kv, 2, kvsz, kvp);
    kr = rope(b, p, zb_reshape(b, p, "k_rope", kvp[1], 4, kr4));
    snprintf(p, sizeof p, "%s/kv_a_layernorm", pre);
    kv = rms(b, p, kvp[0]);
    snprintf(p, sizeof p, "%s/kv_b_proj", pre);
    kv = zb_reshape(b, p, "split_heads", zb_dense(b, p, kv, H * (dn + dv), 0), 4, kv4);
    split_last(b, p, kv, 2, ksz, kp);
    if (!eager) {
        ApprofOpAttrs a;
        int in[3], k, v = kp[1];
        if (dv > dq)
            return zb_fail(b, APPROF_EINVAL, "%s: v_head_dim %lld is wider than the %lld of q and k; the "
                           "fused attention op takes v as wide as k (--attention eager builds it)",
                           b->g->name, (long long)dv, (long long)dq);
        memset(&a, 0, sizeof a);
        kr = repeat_axis(b, pre, kr, 2, H);
        a.axis = 4;
        in[0] = qp[0];
        in[1] = qp[1];
        snprintf(p, sizeof p, "%s/q_cat", pre);
        q = dn ? zb_op(b, APPROF_OP_CONCAT, p, in, 2, &a) : qp[1];
        a.axis = 3;
        in[0] = kp[0];
        in[1] = kr;
        snprintf(p, sizeof p, "%s/k_cat", pre);
        k = dn ? zb_op(b, APPROF_OP_CONCAT, p, in, 2, &a) : kr;
        /* F.pad(v, [0, dq - dv]): any columns do, the output's are cut */
        for (int64_t have = dv; have < dq && b->rc >= 0;) {
            ApprofOpAttrs sl;
            int cat[2];
            memset(&sl, 0, sizeof sl);
            sl.axis = 3;
            sl.length = dq - have < dv ? dq - have : dv;
            snprintf(p, sizeof p, "%s/v_pad_%lld", pre, (long long)have);
            cat[0] = v;
            cat[1] = zb_op(b, APPROF_OP_SLICE, p, &kp[1], 1, &sl);
            v = zb_op(b, APPROF_OP_CONCAT, p, cat, 2, &a);
            have += sl.length;
        }
        memset(&a, 0, sizeof a);
        a.causal = 1;
        in[0] = q;
        in[1] = k;
        in[2] = v;
        snprintf(p, sizeof p, "%s/attention", pre);
        o = zb_op(b, APPROF_OP_ATTENTION, p, in, 3, &a);
        if (dv < dq) {
            memset(&a, 0, sizeof a);
            a.axis = 4;
            a.length = dv;
            snprintf(p, sizeof p, "%s/attention_unpad", pre);
            o = zb_op(b, APPROF_OP_SLICE, p, &o, 1, &a);
        }
    } else {
        static const int to_heads[4] = {0, 2, 1, 3};
        int64_t q4[4] = {bs, s, H, dn}, qr4[4] = {bs, s, H, dr};
        ApprofOpAttrs t = {.transpose_b = 1};
        int in[2], sc, rot;
        in[0] = zb_transpose(b, pre, "qr_heads", zb_reshape(b, pre, "q_rope_4d", qp[1], 4, qr4), 4, to_heads);
        in[1] = zb_transpose(b, pre, "kr_heads", kr, 4, to_heads);
        snprintf(p, sizeof p, "%s/scores_rope", pre);
        sc = rot = zb_op(b, APPROF_OP_BATCH_MATMUL, p, in, 2, &t);
        if (dn) {
            in[0] = zb_transpose(b, pre, "q_heads", zb_reshape(b, pre, "q_nope_4d", qp[0], 4, q4), 4, to_heads);
            in[1] = zb_transpose(b, pre, "k_heads", kp[0], 4, to_heads);
            snprintf(p, sizeof p, "%s/scores", pre);
            sc = zb_op(b, APPROF_OP_BATCH_MATMUL, p, in, 2, &t);
            sc = zb_binary(b, APPROF_OP_ADD, pre, "scores_add", sc, rot);
        }
        sc = zb_softmax(b, pre, sc, 3);
        in[0] = sc;
        in[1] = zb_transpose(b, pre, "v_heads", kp[1], 4, to_heads);
        snprintf(p, sizeof p, "%s/context", pre);
        o = zb_op(b, APPROF_OP_BATCH_MATMUL, p, in, 2, NULL);
        o = zb_transpose(b, pre, "context_back", o, 4, to_heads);
    }
    o = zb_reshape(b, pre, "merge_heads", o, 3, merged);
    snprintf(p, sizeof p, "%s/o_proj", pre);
    return zb_dense(b, p, o, c->hidden, c->attn_bias);
}

static int attention(Zb *b, const char *pre, int x, const ApprofHfConfig *c, int eager)
{
    if (c->kv_lora)
        return mla_attention(b, pre, x, c, eager);
    char p[128];
    int64_t bs = b->g->batch_size, s = x >= 0 ? b->g->tensors[x].dims[1] : 0;
    int64_t kv = c->kv_heads, grp = c->heads / c->kv_heads, d = c->head_dim;
    int64_t q5[5] = {bs, s, kv, grp, d}, k4[4] = {bs, s, kv, d}, merged[3] = {bs, s, c->heads * d};
    int q = -1, k = -1, v = -1, o, bias = c->qkv_bias || c->attn_bias;
    char qn[128], kn[128];
    snprintf(qn, sizeof qn, "%s/q_norm", pre);
    snprintf(kn, sizeof kn, "%s/k_norm", pre);
    if (c->fused) {
        /* Phi3Attention: qkv[..., :H D], then the k and the v columns;
         * GPTNeoX and Falcon's query_key_value interleave them per head (or
         * per kv group), the same GEMM and split sizes */
        int64_t sz[3] = {c->heads * d, kv * d, kv * d};
        int parts[3];
        snprintf(p, sizeof p, "%s/%s", pre, c->mlp == 2 ? "query_key_value" : "qkv_proj");
        split_last(b, p, zb_dense(b, p, x, sz[0] + 2 * sz[1], bias), 3, sz, parts);
        q = parts[0];
        k = parts[1];
        v = parts[2];
    }
    snprintf(p, sizeof p, "%s/q_proj", pre);
    if (!c->fused)
        q = zb_dense(b, p, x, c->heads * d, bias);
    if (c->qk_norm == 2)
        q = rms(b, qn, q);
    q = zb_reshape(b, p, "split_heads", q, 5, q5);
    if (c->qk_norm == 1)
        q = rms(b, qn, q);
    q = rope(b, p, q);
    snprintf(p, sizeof p, "%s/k_proj", pre);
    if (!c->fused)
        k = zb_dense(b, p, x, kv * d, bias);
    if (c->qk_norm == 2)
        k = rms(b, kn, k);
    k = zb_reshape(b, p, "split_heads", k, 4, k4);
    if (c->qk_norm == 1)
        k = rms(b, kn, k);
    k = rope(b, p, k);
    snprintf(p, sizeof p, "%s/v_proj", pre);
    if (!c->fused)
        v = zb_dense(b, p, x, kv * d, bias);
    v = zb_reshape(b, p, "split_heads", v, 4, k4);
    if (!eager) {
        /* torchtitan's Attention.forward (models/llama/model.py at 9dec370)
         * repeat_kv's k and v to the query heads before SDPA */
        ApprofOpAttrs a = {.causal = 1, .eager = b->eager && grp > 1};
        int in[3] = {q, k, v};
        snprintf(p, sizeof p, "%s/attention", pre);
        o = zb_op(b, APPROF_OP_ATTENTION, p, in, 3, &a);
    } else {
        /* [B, Hkv, G, S, D] queries against [B, Hkv, 1, S, D] keys and
         * values: the batched matmuls broadcast over G, no K/V repeat. */
        static const int to_heads[5] = {0, 2, 3, 1, 4}, back[5] = {0, 3, 1, 2, 4};
        int64_t k5[5] = {bs, s, kv, 1, d};
        int sc;
        q = zb_transpose(b, pre, "q_heads", q, 5, to_heads);
        k = zb_transpose(b, pre, "k_heads", zb_reshape(b, pre, "k_group", k, 5, k5), 5, to_heads);
        v = zb_transpose(b, pre, "v_heads", zb_reshape(b, pre, "v_group", v, 5, k5), 5, to_heads);
        {
            ApprofOpAttrs a = {.transpose_b = 1};
            int in[2] = {q, k};
            snprintf(p, sizeof p, "%s/scores", pre);
            sc = zb_op(b, APPROF_OP_BATCH_MATMUL, p, in, 2, &a);
        }
        sc = zb_softmax(b, pre, sc, 4);
        {
            int in[2] = {sc, v};
            snprintf(p, sizeof p, "%s/context", pre);
            o = zb_op(b, APPROF_OP_BATCH_MATMUL, p, in, 2, NULL);
        }
        o = zb_transpose(b, pre, "context_back", o, 5, back);
    }
    o = zb_reshape(b, pre, "merge_heads", o, 3, merged);
    snprintf(p, sizeof p, "%s/%s", pre, c->fused && c->mlp == 2 ? "dense" : "o_proj");
    return zb_dense(b, p, o, c->hidden, c->attn_bias);
}

int zoo_decoder(Zb *b, const ApprofZooOptions *o)
{
    ApprofHfConfig c;
    int64_t bs = b->g->batch_size, seq, ids_d[2], t[2];
    int x, wte, eager = 0, rerun = o->activation_fusion;
    double cf = o->capacity_factor > 0 ? o->capacity_factor : 1.0;

    if (resolve(b, o, &c) < 0)
        return b->rc;
    if (o->attention && !strcmp(o->attention, "eager"))
        eager = 1;
    else if (o->attention && strcmp(o->attention, "flash"))
        return zb_fail(b, APPROF_EINVAL, "%s: unknown attention '%s' (flash, eager)", b->g->name, o->attention);
    if (o->capacity_factor < 0 || o->capacity_factor > 64)
        return zb_fail(b, APPROF_EINVAL, "%s: capacity factor %g outside 0..64", b->g->name, o->capacity_factor);
    seq = o->seq_len ? o->seq_len : (c.positions < DEFAULT_SEQ ? c.positions : DEFAULT_SEQ);
    ids_d[0] = bs;
    ids_d[1] = seq;
    x = zb_input(b, "input_ids", 2, ids_d, 0, APPROF_F32);
    t[0] = c.vocab;
    t[1] = c.hidden;
    wte = zb_param(b, "model.embed_tokens", "embedding", 2, t);
    {
        int in[2] = {x, wte};
        x = zb_op(b, APPROF_OP_EMBEDDING, "model.embed_tokens", in, 2, NULL);
    }
    for (int l = 0; l < c.layers; l++) {
        char pre[48], p[80];
        int y;
        snprintf(pre, sizeof pre, "model.layers.%d", l);
        /* norms 0: x + attn(norm(x)), x + mlp(norm(x)); 1 (gemma2): x +
         * norm(attn(norm(x))), x + norm(mlp(norm(x))); 2 (olmo2): x +
         * norm(attn(x)), x + norm(mlp(x)) */
        snprintf(p, sizeof p, "%s/input_layernorm", pre);
        y = c.norms == 2 ? x : norm(b, &c, p, x);
        if (c.parallel) {
            /* GPTNeoXLayer (use_parallel_residual), FalconDecoderLayer
             * (parallel_attn, new decoder): x + attn(n1(x)) + mlp(n2(x)),
             * n2 = n1 with one norm */
            int m = y, a;
            snprintf(p, sizeof p, "%s/self_attn", pre);
            a = attention(b, p, y, &c, eager);
            if (c.parallel == 2) {
                snprintf(p, sizeof p, "%s/post_attention_layernorm", pre);
                m = norm(b, &c, p, x);
            }
            snprintf(p, sizeof p, "%s/mlp", pre);
            m = mlp(b, p, m, &c, rerun);
            x = zb_binary(b, APPROF_OP_ADD, pre, "residual_1", x, a);
            x = zb_binary(b, APPROF_OP_ADD, pre, "residual_2", x, m);
            if (o->manual_boundaries && l + 1 < c.layers)
                x = zb_boundary(b, pre, x);
            continue;
        }
        snprintf(p, sizeof p, "%s/self_attn", pre);
        y = attention(b, p, y, &c, eager);
        if (c.norms) {
            snprintf(p, sizeof p, "%s/post_attention_layernorm", pre);
            y = norm(b, &c, p, y);
        }
        x = zb_binary(b, APPROF_OP_ADD, pre, "residual_1", x, y);
        snprintf(p, sizeof p, "%s/%s", pre, c.norms == 1 ? "pre_feedforward_layernorm" : "post_attention_layernorm");
        y = c.norms == 2 ? x : norm(b, &c, p, x);
        snprintf(p, sizeof p, "%s/mlp", pre);
        if (sparse_layer(&c, l))
            y = moe(b, p, y, &c, cf, rerun);
        else
            y = mlp(b, p, y, &c, rerun);
        if (c.norms) {
            snprintf(p, sizeof p, "%s/post_feedforward_layernorm", pre);
            y = norm(b, &c, p, y);
        }
        x = zb_binary(b, APPROF_OP_ADD, pre, "residual_2", x, y);
        if (o->manual_boundaries && l + 1 < c.layers)
            x = zb_boundary(b, pre, x);
    }
    x = norm(b, &c, "model.norm", x);
    {
        int logits, labels;
        if (c.tied) {
            ApprofOpAttrs a = {.transpose_b = 1};
            int in[2] = {x, wte};
            logits = zb_op(b, APPROF_OP_MATMUL, "lm_head", in, 2, &a);
        } else {
            logits = zb_dense(b, "lm_head", x, c.vocab, 0);
        }
        labels = zb_input(b, "labels", 2, ids_d, 0, APPROF_F32);
        zb_binary(b, APPROF_OP_CROSS_ENTROPY, "loss", NULL, logits, labels);
    }
    return b->rc;
}
