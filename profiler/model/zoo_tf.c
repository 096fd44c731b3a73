/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Zoo transformers. Attention is spelled out as its matmuls: q, k and v
 * projections (one [C, C] matrix each; the same parameters as a fused
 * [C, 3C] one), a head split (reshape + transpose), scores = q @ k^T
 * (batch_matmul), softmax (the 1/sqrt(d) scale and the causal mask are
 * folded into it), context = p @ v, a head merge and the output
 * projection. Swin adds its relative position bias: an embedding lookup of
 * the bias table by the (constant) relative position index, transposed to
 * [heads, N, N] and added to the scores. Dropout is represented in bert
 * and gpt (their dropout option); swin has none.
 *  - gpt: GPT-2 layout (pre-LN, learned positions, final LN); the LM head
 *    reuses the token embedding (tied, one parameter tensor read twice).
 *    With dropout > 0, the dropouts GPT-2 and Megatron-LM train with
 *    (--hidden-dropout, --attention-dropout, 0.1 by default): after the
 *    embeddings, on the attention probabilities (inside the kernel with
 *    --attention flash), on the attention output and on the MLP output
 *    (each before its residual add).
 *  - bert: HF BertForMaskedLM (post-LN, token type embeddings, MLM head:
 *    dense + gelu + LN, tied decoder with its own bias, no pooler). With
 *    mlm_positions P the head scores P positions per sequence, gathered
 *    from the encoder output first, as NVIDIA's BERT pre-training does
 *    ("dense sequence output"); the gather is priced as a slice of P of
 *    the S positions (the same bytes moved, forward and backward). With
 *    dropout > 0, BERT's four dropouts: after the embedding LayerNorm, on
 *    the attention probabilities, on the attention output and on the MLP
 *    output (each before its residual add), as BertForMaskedLM trains.
 *  - swin: timm swin_tiny_patch4_window7_224; the cyclic shift and the
 *    shifted-window attention mask are omitted (copies and one add).
 */
#include <stdio.h>
#include <string.h>

#include "hfconfig.h"
#include "zoo_build.h"

/* Dropout of x at `rate` named pre/leaf; x itself when rate is 0. */
static int dropout(Zb *b, const char *pre, const char *leaf, int x, double rate)
{
    ApprofOpAttrs a = {.rate = rate};
    char p[128];
    if (rate <= 0)
        return x;
    snprintf(p, sizeof p, "%s/%s", pre, leaf);
    return zb_op(b, APPROF_OP_DROPOUT, p, &x, 1, &a);
}

/* Multi-head attention over x[Bt, N, C]; rel_idx/rel_table optional;
 * drop: dropout rate of the attention probabilities (0: none). */
static int attention(Zb *b, const char *pre, int x, int64_t heads, int rel_idx, int rel_table,
                     double drop)
{
    char p[128];
    int q, k, v, s, ctx;
    int64_t bt, n, c, d, split[4], merged[3];
    static const int perm[4] = {0, 2, 1, 3};
    if (b->rc < 0 || x < 0)
        return -1;
    bt = b->g->tensors[x].dims[0];
    n = b->g->tensors[x].dims[1];
    c = b->g->tensors[x].dims[2];
    if (heads <= 0 || c % heads)
        return zb_fail(b, APPROF_EINVAL, "%s: hidden %lld not divisible by %lld heads", pre, (long long)c, (long long)heads), -1;
    d = c / heads;
    split[0] = bt; split[1] = n; split[2] = heads; split[3] = d;
    merged[0] = bt; merged[1] = n; merged[2] = c;
    {
        int *outs[3] = {&q, &k, &v};
        const char *nm[3] = {"query", "key", "value"};
        for (int i = 0; i < 3; i++) {
            snprintf(p, sizeof p, "%s/%s", pre, nm[i]);
            *outs[i] = zb_dense(b, p, x, c, 1);
            *outs[i] = zb_reshape(b, p, "split_heads", *outs[i], 4, split);
            *outs[i] = zb_transpose(b, p, "transpose", *outs[i], 4, perm);
        }
    }
    {
        ApprofOpAttrs a = {.transpose_b = 1};
        int in[2] = {q, k};
        snprintf(p, sizeof p, "%s/scores", pre);
        s = zb_op(b, APPROF_OP_BATCH_MATMUL, p, in, 2, &a);
    }
    if (rel_table >= 0) {
        static const int bperm[3] = {2, 0, 1};
        int in[2] = {rel_idx, rel_table}, bias;
        snprintf(p, sizeof p, "%s/relative_position_bias", pre);
        bias = zb_op(b, APPROF_OP_EMBEDDING, p, in, 2, NULL);
        bias = zb_transpose(b, p, "transpose", bias, 3, bperm);
        s = zb_binary(b, APPROF_OP_ADD, p, "add", s, bias);
    }
    s = dropout(b, pre, "attention_dropout", zb_softmax(b, pre, s, 3), drop);
    {
        int in[2] = {s, v};
        snprintf(p, sizeof p, "%s/context", pre);
        ctx = zb_op(b, APPROF_OP_BATCH_MATMUL, p, in, 2, NULL);
        ctx = zb_transpose(b, p, "transpose", ctx, 4, perm);
        ctx = zb_reshape(b, p, "merge_heads", ctx, 3, merged);
    }
    snprintf(p, sizeof p, "%s/proj", pre);
    return zb_dense(b, p, ctx, c, 1);
}

static int mlp_block(Zb *b, const char *pre, int x, int64_t inner)
{
    char p[128];
    int64_t c = x >= 0 ? b->g->tensors[x].dims[b->g->tensors[x].ndim - 1] : 0;
    snprintf(p, sizeof p, "%s/fc1", pre);
    x = zb_unary(b, APPROF_OP_GELU, p, "gelu", zb_dense(b, p, x, inner, 1));
    snprintf(p, sizeof p, "%s/fc2", pre);
    return zb_dense(b, p, x, c, 1);
}

typedef struct {
    const char *name;
    int layers, hidden, heads, seq, vocab, positions;
    int ffn;       /* 0: 4 x hidden */
    int types;     /* bert token types, 0: 2 */
    int untied;    /* the LM head has its own weight */
} TfPreset;

static int resolve(Zb *b, const ApprofZooOptions *o, const TfPreset *ps, size_t n, const char *def,
                   TfPreset *out)
{
    const char *want = o->preset ? o->preset : def;
    const TfPreset *p = NULL;
    if (o->hf_config) {
        /* The training sequence of GPT-2 and BERT is their context. */
        ApprofHfConfig c;
        int rc = approf_hf_config_load(o->hf_config, &c, b->err, b->errlen);
        if (rc < 0)
            return b->rc = rc;
        if (strcmp(c.zoo_name, b->g->name))
            return zb_fail(b, APPROF_EINVAL, "%s: field model_type: '%s' builds model '%s', not '%s'",
                           o->hf_config, c.model_type, c.zoo_name, b->g->name);
        memset(out, 0, sizeof *out);
        out->name = "hf";
        out->layers = c.layers;
        out->hidden = c.hidden;
        out->heads = c.heads;
        out->seq = out->positions = c.positions;
        out->vocab = c.vocab;
        out->ffn = c.ffn;
        out->types = c.type_vocab;
        out->untied = !c.tied;
    } else {
        for (size_t i = 0; i < n; i++)
            if (!strcmp(ps[i].name, want))
                p = &ps[i];
        if (!p) {
            /* name the family's presets, as the decoder families do */
            char list[256] = "";
            size_t off = 0;
            for (size_t i = 0; i < n && off < sizeof list; i++) {
                int w = snprintf(list + off, sizeof list - off, "%s%s", off ? "|" : "",
                                 ps[i].name);
                off += w > 0 ? (size_t)w : 0;
            }
            return zb_fail(b, APPROF_EINVAL, "%s: unknown preset '%s' (%s)", b->g->name, want,
                           list);
        }
        *out = *p;
    }
    if (!out->types)
        out->types = 2;
    if (o->num_layers) out->layers = o->num_layers;
    if (o->hidden) out->hidden = o->hidden;
    /* after the override: --hidden H gives the 4H MLP of the family */
    if (!out->ffn || (o->hidden && !o->hf_config))
        out->ffn = 4 * out->hidden;
    if (o->heads) out->heads = o->heads;
    if (o->seq_len) out->seq = o->seq_len;
    if (o->vocab) out->vocab = o->vocab;
    if (out->positions < out->seq)
        out->positions = out->seq;
    if (out->hidden % out->heads)
        return zb_fail(b, APPROF_EINVAL, "%s: hidden %d not divisible by %d heads", b->g->name, out->hidden, out->heads);
    return 0;
}

/* Token (+ position, + token type) embeddings of ids[B, S]. */
static int embeddings(Zb *b, const TfPreset *c, int with_types, int *wte)
{
    int64_t bs = b->g->batch_size, S = c->seq, ids_d[2] = {bs, S}, t[2];
    int ids, pos_ids, x, in[2];
    ids = zb_input(b, "input_ids", 2, ids_d, 0, APPROF_F32);
    pos_ids = zb_input(b, "position_ids", 1, &ids_d[1], -1, APPROF_F32);
    t[0] = c->vocab; t[1] = c->hidden;
    *wte = zb_param(b, "embeddings/word", "embedding", 2, t);
    t[0] = c->positions;
    in[0] = ids; in[1] = *wte;
    x = zb_op(b, APPROF_OP_EMBEDDING, "embeddings/word", in, 2, NULL);
    in[0] = pos_ids; in[1] = zb_param(b, "embeddings/position", "embedding", 2, t);
    x = zb_binary(b, APPROF_OP_ADD, "embeddings", "add_position", x,
                  zb_op(b, APPROF_OP_EMBEDDING, "embeddings/position", in, 2, NULL));
    if (with_types) {
        int types = zb_input(b, "token_type_ids", 2, ids_d, 0, APPROF_F32);
        t[0] = c->types;
        in[0] = types; in[1] = zb_param(b, "embeddings/token_type", "embedding", 2, t);
        x = zb_binary(b, APPROF_OP_ADD, "embeddings", "add_token_type", x,
                      zb_op(b, APPROF_OP_EMBEDDING, "embeddings/token_type", in, 2, NULL));
    }
    return x;
}

/* The LM head and loss; untied: a head of its own (named name, with a
 * bias when bias_n > 0) instead of reading wte. */
static int lm_loss(Zb *b, int x, int wte, int bias, int untied, const char *name, int64_t vocab)
{
    ApprofOpAttrs a = {.transpose_b = 1, .has_bias = bias >= 0};
    int64_t ld[2] = {b->g->batch_size, b->g->tensors[x < 0 ? 0 : x].dims[1]};
    int in[3] = {x, wte, bias}, logits, labels;
    if (untied)
        logits = zb_dense(b, name, x, vocab, bias >= 0);
    else
        logits = zb_op(b, APPROF_OP_MATMUL, "lm_head", in, bias >= 0 ? 3 : 2, &a);
    labels = zb_input(b, "labels", 2, ld, 0, APPROF_F32);
    zb_binary(b, APPROF_OP_CROSS_ENTROPY, "loss", NULL, logits, labels);
    return b->rc;
}

/* Multi-head attention as one fused (flash) operator, causal (a decoder)
 * or not (an encoder): the query as [B, S, H, 1, D] (one query head per
 * key/value head), no S x S tensor kept (Megatron-Core's and PyTorch's
 * fused attention; a dropout on the probabilities runs inside the kernel,
 * from its random seed, and is not an operator of its own). unpad: the
 * kernel called through flash-attn's unpad_input/pad_input copies
 * (--attention-unpad, ApprofOpAttrs.unpad). */
static int flash_attention(Zb *b, const char *pre, int x, int64_t heads, int causal, int unpad)
{
    char p[128];
    int q, k, v, o;
    if (b->rc < 0 || x < 0)
        return -1;
    int64_t bt = b->g->tensors[x].dims[0], n = b->g->tensors[x].dims[1];
    int64_t c = b->g->tensors[x].dims[2];
    if (heads <= 0 || c % heads)
        return zb_fail(b, APPROF_EINVAL, "%s: hidden %lld not divisible by %lld heads", pre,
                       (long long)c, (long long)heads), -1;
    int64_t d = c / heads, q5[5] = {bt, n, heads, 1, d}, k4[4] = {bt, n, heads, d};
    int64_t merged[3] = {bt, n, c};
    snprintf(p, sizeof p, "%s/query", pre);
    q = zb_reshape(b, p, "split_heads", zb_dense(b, p, x, c, 1), 5, q5);
    snprintf(p, sizeof p, "%s/key", pre);
    k = zb_reshape(b, p, "split_heads", zb_dense(b, p, x, c, 1), 4, k4);
    snprintf(p, sizeof p, "%s/value", pre);
    v = zb_reshape(b, p, "split_heads", zb_dense(b, p, x, c, 1), 4, k4);
    {
        ApprofOpAttrs a = {.causal = causal, .unpad = unpad};
        int in[3] = {q, k, v};
        snprintf(p, sizeof p, "%s/attention", pre);
        o = zb_op(b, APPROF_OP_ATTENTION, p, in, 3, &a);
    }
    o = zb_reshape(b, pre, "merge_heads", o, 3, merged);
    snprintf(p, sizeof p, "%s/proj", pre);
    return zb_dense(b, p, o, c, 1);
}

/* --attention of gpt and bert: 1 flash, 0 eager (the default), -1 after
 * failing b on any other name. */
static int attention_is_flash(Zb *b, const ApprofZooOptions *o)
{
    if (!o->attention || !strcmp(o->attention, "eager"))
        return 0;
    if (!strcmp(o->attention, "flash"))
        return 1;
    zb_fail(b, APPROF_EINVAL, "%s: unknown attention '%s' (eager, flash)", b->g->name,
            o->attention);
    return -1;
}

int zoo_gpt(Zb *b, const ApprofZooOptions *o)
{
    static const TfPreset ps[] = {
        {"gpt2-small", 12, 768, 12, 1024, 50257, 1024},
        {"gpt3-1.3b", 24, 2048, 16, 2048, 50257, 2048},
        {"gpt3-2.7b", 32, 2560, 32, 2048, 50257, 2048},
        {"gpt3-6.7b", 32, 4096, 32, 2048, 50257, 2048},
        {"gpt3-39b", 48, 8192, 64, 1024, 51200, 1024},
    };
    TfPreset c;
    int x, wte;
    int flash = attention_is_flash(b, o);
    if (flash < 0)
        return b->rc;
    if (resolve(b, o, ps, sizeof ps / sizeof ps[0], "gpt2-small", &c) < 0)
        return b->rc;
    x = embeddings(b, &c, 0, &wte);
    x = dropout(b, "embeddings", "dropout", x, o->dropout);
    for (int l = 0; l < c.layers; l++) {
        char pre[32], p[48];
        int y;
        snprintf(pre, sizeof pre, "h.%d", l);
        snprintf(p, sizeof p, "%s/ln_1", pre);
        y = flash ? flash_attention(b, pre, zb_norm(b, APPROF_OP_LAYER_NORM, p, x), c.heads, 1,
                                  o->attention_unpad)
                  : attention(b, pre, zb_norm(b, APPROF_OP_LAYER_NORM, p, x), c.heads, -1, -1,
                              o->dropout);
        y = dropout(b, pre, "attention_output_dropout", y, o->dropout);
        x = zb_binary(b, APPROF_OP_ADD, pre, "residual_1", x, y);
        snprintf(p, sizeof p, "%s/ln_2", pre);
        y = dropout(b, pre, "output_dropout", mlp_block(b, pre, zb_norm(b, APPROF_OP_LAYER_NORM, p, x), c.ffn),
                    o->dropout);
        x = zb_binary(b, APPROF_OP_ADD, pre, "residual_2", x, y);
        if (o->manual_boundaries && l + 1 < c.layers)
            x = zb_boundary(b, pre, x);
    }
    x = zb_norm(b, APPROF_OP_LAYER_NORM, "ln_f", x);
    return lm_loss(b, x, wte, -1, c.untied, "lm_head", c.vocab);
}

int zoo_bert(Zb *b, const ApprofZooOptions *o)
{
    static const TfPreset ps[] = {
        {"base", 12, 768, 12, 512, 30522, 512},
        {"large", 24, 1024, 16, 512, 30522, 512},
    };
    TfPreset c;
    int x, wte, bias;
    int64_t v;
    int flash = attention_is_flash(b, o);
    if (flash < 0)
        return b->rc;
    if (resolve(b, o, ps, sizeof ps / sizeof ps[0], "base", &c) < 0)
        return b->rc;
    x = embeddings(b, &c, 1, &wte);
    x = zb_norm(b, APPROF_OP_LAYER_NORM, "embeddings/LayerNorm", x);
    x = dropout(b, "embeddings", "dropout", x, o->dropout);
    for (int l = 0; l < c.layers; l++) {
        char pre[32], p[64];
        int y;
        snprintf(pre, sizeof pre, "encoder.layer.%d", l);
        y = flash ? flash_attention(b, pre, x, c.heads, 0, o->attention_unpad)
                  : attention(b, pre, x, c.heads, -1, -1, o->dropout);
        y = dropout(b, pre, "attention_output_dropout", y, o->dropout);
        snprintf(p, sizeof p, "%s/attention_LayerNorm", pre);
        x = zb_norm(b, APPROF_OP_LAYER_NORM, p, zb_binary(b, APPROF_OP_ADD, pre, "residual_1", x, y));
        y = dropout(b, pre, "output_dropout", mlp_block(b, pre, x, c.ffn), o->dropout);
        snprintf(p, sizeof p, "%s/output_LayerNorm", pre);
        x = zb_norm(b, APPROF_OP_LAYER_NORM, p, zb_binary(b, APPROF_OP_ADD, pre, "residual_2", x, y));
        if (o->manual_boundaries && l + 1 < c.layers)
            x = zb_boundary(b, pre, x);
    }
    if (o->mlm_positions) {
        ApprofOpAttrs a = {.axis = 1, .start = 0, .length = o->mlm_positions};
        if (o->mlm_positions > c.seq)
            return zb_fail(b, APPROF_EINVAL, "bert: --mlm-positions %d is more than the %d positions "
                           "of a sequence", o->mlm_positions, c.seq);
        x = zb_op(b, APPROF_OP_SLICE, "cls/masked_positions", &x, 1, &a);
    }
    x = zb_unary(b, APPROF_OP_GELU, "cls/transform", "gelu", zb_dense(b, "cls/transform", x, c.hidden, 1));
    x = zb_norm(b, APPROF_OP_LAYER_NORM, "cls/transform/LayerNorm", x);
    v = c.vocab;
    if (c.untied)
        return lm_loss(b, x, wte, 0, 1, "cls/decoder", v);
    bias = zb_param(b, "cls/decoder", "bias", 1, &v);
    return lm_loss(b, x, wte, bias, 0, NULL, v);
}

/* x[B, R*R, C] <-> windows[B*nW, w*w, C]. */
static int windows(Zb *b, const char *pre, int x, int64_t res, int64_t w, int reverse)
{
    static const int perm[6] = {0, 1, 3, 2, 4, 5};
    int64_t bs = b->g->batch_size, c = x >= 0 ? b->g->tensors[x].dims[2] : 0, nw = res / w;
    int64_t six[6] = {bs, nw, w, nw, w, c}, rsix[6] = {bs, nw, nw, w, w, c};
    int64_t win[3] = {bs * nw * nw, w * w, c}, tok[3] = {bs, res * res, c};
    if (!reverse) {
        x = zb_reshape(b, pre, "window_partition", x, 6, six);
        x = zb_transpose(b, pre, "window_transpose", x, 6, perm);
        return zb_reshape(b, pre, "window_merge", x, 3, win);
    }
    x = zb_reshape(b, pre, "window_split", x, 6, rsix);
    x = zb_transpose(b, pre, "window_untranspose", x, 6, perm);
    return zb_reshape(b, pre, "window_reverse", x, 3, tok);
}

int zoo_swin(Zb *b, const ApprofZooOptions *o)
{
    static const int depths[4] = {2, 2, 6, 2}, heads[4] = {3, 6, 12, 24};
    const char *ds = o->dataset ? o->dataset : "imagenet";
    int64_t img = 224, classes = 1000, patch = 4, win = 7, c = 96, bs = b->g->batch_size, res;
    int x, labels, blk = 0;
    int rel_idx[4];

    if (!strcmp(ds, "cifar100"))
        classes = 100;  /* LiBai configs/swin_cifar100.py: Swin-T, images resized to 224 */
    else if (strcmp(ds, "imagenet"))
        return zb_fail(b, APPROF_EINVAL, "swin: unknown dataset '%s' (imagenet, cifar100)", ds);
    if (o->image_size)
        img = o->image_size;
    if (o->num_classes)
        classes = o->num_classes;
    if (img % (patch * 8))
        return zb_fail(b, APPROF_EINVAL, "swin: image size must be a multiple of 32");
    {
        int64_t d4[4] = {bs, 3, img, img};
        x = zb_input(b, "images", 4, d4, 0, b->dt);
        labels = zb_input(b, "labels", 1, d4, 0, APPROF_F32);
    }
    res = img / patch;
    x = zb_conv(b, "patch_embed/proj", x, c, (int)patch, (int)patch, 0, 1);
    {
        int64_t d3[3] = {bs, c, res * res};
        static const int perm[3] = {0, 2, 1};
        x = zb_reshape(b, "patch_embed", "flatten", x, 3, d3);
        x = zb_transpose(b, "patch_embed", "transpose", x, 3, perm);
        x = zb_norm(b, APPROF_OP_LAYER_NORM, "patch_embed/norm", x);
    }
    for (int s = 0; s < 4; s++) {
        int64_t w = res <= win ? res : win;
        if (res % w)
            return zb_fail(b, APPROF_EINVAL, "swin: resolution %lld not divisible by window %lld", (long long)res, (long long)w);
        {
            char nm[48];
            int64_t id[2] = {w * w, w * w};
            snprintf(nm, sizeof nm, "relative_position_index_%lld", (long long)w);
            rel_idx[s] = -1;
            for (int t = 0; t < s; t++)
                if (b->g->tensors[rel_idx[t]].dims[0] == w * w)
                    rel_idx[s] = rel_idx[t];
            if (rel_idx[s] < 0)
                rel_idx[s] = zb_input(b, nm, 2, id, -1, APPROF_F32);
        }
        for (int i = 0; i < depths[s]; i++) {
            char pre[48], p[80];
            int y, table;
            int64_t td[2] = {(2 * w - 1) * (2 * w - 1), heads[s]};
            snprintf(pre, sizeof pre, "layers.%d.blocks.%d", s, i);
            snprintf(p, sizeof p, "%s/norm1", pre);
            y = zb_norm(b, APPROF_OP_LAYER_NORM, p, x);
            y = windows(b, pre, y, res, w, 0);
            snprintf(p, sizeof p, "%s/attn", pre);
            table = zb_param(b, p, "relative_position_bias_table", 2, td);
            y = attention(b, p, y, heads[s], rel_idx[s], table, 0);
            y = windows(b, pre, y, res, w, 1);
            x = zb_binary(b, APPROF_OP_ADD, pre, "residual_1", x, y);
            snprintf(p, sizeof p, "%s/norm2", pre);
            y = mlp_block(b, pre, zb_norm(b, APPROF_OP_LAYER_NORM, p, x), 4 * c);
            x = zb_binary(b, APPROF_OP_ADD, pre, "residual_2", x, y);
            blk++;
            if (o->manual_boundaries && !(s == 3 && i == depths[s] - 1))
                x = zb_boundary(b, pre, x);
        }
        if (s < 3) {
            static const int perm[6] = {0, 1, 3, 4, 2, 5};
            char pre[48], p[80];
            int64_t six[6] = {bs, res / 2, 2, res / 2, 2, c}, m3[3] = {bs, (res / 2) * (res / 2), 4 * c};
            snprintf(pre, sizeof pre, "layers.%d.downsample", s);
            x = zb_reshape(b, pre, "split", x, 6, six);
            x = zb_transpose(b, pre, "transpose", x, 6, perm);
            x = zb_reshape(b, pre, "merge", x, 3, m3);
            snprintf(p, sizeof p, "%s/norm", pre);
            x = zb_norm(b, APPROF_OP_LAYER_NORM, p, x);
            snprintf(p, sizeof p, "%s/reduction", pre);
            x = zb_dense(b, p, x, 2 * c, 0);
            c *= 2;
            res /= 2;
        }
    }
    (void)blk;
    x = zb_norm(b, APPROF_OP_LAYER_NORM, "norm", x);
    {
        static const int perm[3] = {0, 2, 1};
        x = zb_transpose(b, "avgpool", "transpose", x, 3, perm);
    }
    x = zb_unary(b, APPROF_OP_GLOBAL_POOL, "avgpool", NULL, x);
    x = zb_dense(b, "head", x, classes, 1);
    zb_binary(b, APPROF_OP_CROSS_ENTROPY, "loss", NULL, x, labels);
    return b->rc;
}
