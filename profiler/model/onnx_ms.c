/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The com.microsoft operators that onnxruntime's transformer optimizer
 * (onnxruntime.transformers, `convert_to_onnx` / `optimizer.py`) writes into
 * a torch.onnx export of GPT-2 (the fusions of
 * onnxruntime/python/tools/transformers/fusion_*.py), onto the IR, with the
 * semantics of onnxruntime's docs/ContribOperators.md (the operators'
 * reference, version 1 of the com.microsoft domain, as onnxruntime 1.17
 * documents them: the producer version of the real export
 * shared/onnx-real/ort-gpt2 was written by):
 *
 * - EmbedLayerNormalization: word (+ position, + segment) embedding lookups,
 *   their sum, a LayerNorm; output 2 is the sum before the norm;
 * - SkipLayerNormalization: input + skip (+ bias), a LayerNorm; output 3 is
 *   the sum before the norm (the next residual);
 * - FastGelu: GELU (tanh form) of x (+ bias);
 * - Attention: the fused qkv projection (one GEMM with bias), split into
 *   q, k, v per head, scaled dot-product attention (causal when
 *   unidirectional), heads merged; the mask is applied inside the kernel and
 *   costs no operator. A past (KV cache: inference) must be empty: a
 *   training step has none; the present output is then k and v, which the
 *   training step does not keep beyond the attention, and is not built.
 *
 * And what onnxruntime-genai's model builder writes for Llama, Mistral and
 * Qwen2 (src/python/py/models/builders/base.py at a0c04eb13), with the
 * semantics ContribOperators.md gives them (com.microsoft version 1,
 * onnxruntime 1.17 to 1.20):
 *
 * - SimplifiedLayerNormalization (registered in the default domain) and
 *   SkipSimplifiedLayerNormalization: RMSNorm (x + skip (+ bias)), output
 *   3 the sum before the norm;
 * - RotaryEmbedding: rope of its input; cos_cache and sin_cache are
 *   precomputed tables read by the kernel, not parameters;
 * - GroupQueryAttention: causal attention of H query heads over Hkv key
 *   and value heads (q [B, S, H D], k and v [B, S, Hkv D], or one packed
 *   query), rope of q and k first with do_rotary; seqlens_k and
 *   total_sequence_length are lengths; MultiHeadAttention: the same with
 *   H key/value heads, causal when unidirectional. A past must be empty,
 *   as for Attention.
 *
 * Anything these operators can do that the IR cannot express is refused
 * naming the node, the operator and the field.
 */
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"

/* An IR op named "NODE/suffix" (or NODE when suffix is NULL) that binds no
 * node output: its first output tensor or a negative code. */
static int ms_op(Ox *c, const OxNode *nd, const char *suffix, ApprofOpKind kind, const int *in, int n_in,
                 const ApprofOpAttrs *a, const int64_t *shape, int shape_n, int *outs)
{
    char nm[APPROF_NAME_MAX], emsg[512];
    int r;
    if (suffix)
        snprintf(nm, sizeof nm, "%s/%s", nd->name, suffix);  /* fits: OX_NODE_NAME_MAX */
    else
        snprintf(nm, sizeof nm, "%s", nd->name);
    r = approf_graph_add_op(c->g, nm, kind, in, n_in, a, shape, shape_n, emsg, sizeof emsg);
    if (r == APPROF_ENOMEM)
        return r;
    if (r < 0)
        return ox_err(c, APPROF_EINVAL, "%s: %s", nd->what, emsg);
    if (outs)
        for (int j = 0; j < c->g->ops[r].n_outputs; j++)
            outs[j] = c->g->ops[r].outputs[j];
    return c->g->ops[r].outputs[0];
}

/* Binds node output k to IR tensor t. */
static int bind_out(Ox *c, const OxNode *nd, int k, int t)
{
    int rc;
    if ((size_t)k >= nd->n->n_output || !nd->n->output[k] || !*nd->n->output[k])
        return 0;
    rc = ox_val_def(c, nd->n->output[k], V_TENSOR, t, NULL);
    return rc < 0 ? ox_err(c, rc, "%s: field output[%d]: too many values", nd->what, k) : 0;
}

/* Output k, which this mapping does not build, must be read by no node. */
static int unread(Ox *c, const OxNode *nd, int k, const char *what)
{
    if (ox_output_used(c, nd, k))
        return ox_err(c, APPROF_EPARSE, "%s: field output[%d]: %s, which a node reads, is not supported",
                      nd->what, k, what);
    return 0;
}

/* The first symbolic dimension of graph input name other than the batch's
 * (a past cache's length), or "NAME". */
static const char *past_dim_name(const Ox *c, const char *name)
{
    for (size_t i = 0; i < c->gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = c->gp->input[i];
        const Onnx__TensorShapeProto *sh;
        if (!vi->name || strcmp(vi->name, name) || !vi->type ||
            vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !(sh = vi->type->tensor_type->shape))
            continue;
        for (size_t d = 0; d < sh->n_dim; d++)
            if (sh->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                sh->dim[d]->dim_param && *sh->dim[d]->dim_param &&
                (!c->batch_sym || strcmp(sh->dim[d]->dim_param, c->batch_sym)))
                return sh->dim[d]->dim_param;
    }
    return "NAME";
}

static int ms_embed_layer_norm(Ox *c, const OxNode *nd)
{
    int ids, x, e, in[3];
    if (ox_operand(c, nd, 0, &ids) < 0 || ox_operand(c, nd, 2, &in[1]) < 0)
        return APPROF_EPARSE;
    if (T(c, ids)->ndim != 2)
        return ox_err(c, APPROF_EPARSE, "%s: field input[0]: expected input_ids [batch, sequence]", nd->what);
    in[0] = ids;
    if ((x = ms_op(c, nd, "word", APPROF_OP_EMBEDDING, in, 2, NULL, NULL, 0, NULL)) < 0)
        return x;
    if (ox_has_input(nd, 3)) {
        /* position_ids (input 8) or, without them, positions 0..S-1: one
         * row per position, shared by the batch, as the zoo's GPT builds it */
        if (ox_has_input(nd, 8)) {
            if (ox_operand(c, nd, 8, &in[0]) < 0)
                return APPROF_EPARSE;
        } else {
            char nm[APPROF_NAME_MAX];
            int64_t s = T(c, ids)->dims[1];
            snprintf(nm, sizeof nm, "%s/position_ids", nd->name);
            in[0] = approf_graph_add_tensor(c->g, nm, APPROF_TENSOR_INPUT, APPROF_F32, 1, &s, -1);
            if (in[0] < 0)
                return in[0] == APPROF_ENOMEM ? in[0] : ox_err(c, APPROF_EINVAL, "%s: position ids", nd->what);
        }
        if (ox_operand(c, nd, 3, &in[1]) < 0)
            return APPROF_EPARSE;
        if ((e = ms_op(c, nd, "position", APPROF_OP_EMBEDDING, in, 2, NULL, NULL, 0, NULL)) < 0)
            return e;
        in[0] = x;
        in[1] = e;
        if ((x = ms_op(c, nd, "add_position", APPROF_OP_ADD, in, 2, NULL, NULL, 0, NULL)) < 0)
            return x;
    }
    if (ox_has_input(nd, 1)) {
        if (!ox_has_input(nd, 4))
            return ox_err(c, APPROF_EPARSE, "%s: field input[4]: segment_ids without a segment_embedding", nd->what);
        if (ox_operand(c, nd, 1, &in[0]) < 0 || ox_operand(c, nd, 4, &in[1]) < 0)
            return APPROF_EPARSE;
        if ((e = ms_op(c, nd, "segment", APPROF_OP_EMBEDDING, in, 2, NULL, NULL, 0, NULL)) < 0)
            return e;
        in[0] = x;
        in[1] = e;
        if ((x = ms_op(c, nd, "add_segment", APPROF_OP_ADD, in, 2, NULL, NULL, 0, NULL)) < 0)
            return x;
    }
    if (!ox_has_input(nd, 6))
        return ox_err(c, APPROF_EPARSE, "%s: field input[6]: the IR's norms have a bias: give beta", nd->what);
    if (unread(c, nd, 1, "the mask index") < 0)
        return APPROF_EPARSE;
    in[0] = x;
    if (ox_operand(c, nd, 5, &in[1]) < 0 || ox_operand(c, nd, 6, &in[2]) < 0)
        return APPROF_EPARSE;
    if ((e = ms_op(c, nd, NULL, APPROF_OP_LAYER_NORM, in, 3, NULL, NULL, 0, NULL)) < 0)
        return e;
    if (bind_out(c, nd, 0, e) < 0 || bind_out(c, nd, 2, x) < 0)
        return APPROF_EPARSE;
    return e;
}

static int ms_skip_layer_norm(Ox *c, const OxNode *nd)
{
    int x, in[3];
    if (ox_operand(c, nd, 0, &in[0]) < 0 || ox_operand(c, nd, 1, &in[1]) < 0)
        return APPROF_EPARSE;
    if (ox_has_input(nd, 4)) {
        int sum;
        if ((sum = ms_op(c, nd, "skip", APPROF_OP_ADD, in, 2, NULL, NULL, 0, NULL)) < 0)
            return sum;
        in[0] = sum;
        if (ox_operand(c, nd, 4, &in[1]) < 0)
            return APPROF_EPARSE;
        if ((x = ms_op(c, nd, "bias", APPROF_OP_ADD, in, 2, NULL, NULL, 0, NULL)) < 0)
            return x;
    } else if ((x = ms_op(c, nd, "skip", APPROF_OP_ADD, in, 2, NULL, NULL, 0, NULL)) < 0) {
        return x;
    }
    if (!ox_has_input(nd, 3))
        return ox_err(c, APPROF_EPARSE, "%s: field input[3]: the IR's norms have a bias: give beta", nd->what);
    if (unread(c, nd, 1, "the mean") < 0 || unread(c, nd, 2, "the inverse standard deviation") < 0)
        return APPROF_EPARSE;
    in[0] = x;
    if (ox_operand(c, nd, 2, &in[1]) < 0 || ox_operand(c, nd, 3, &in[2]) < 0)
        return APPROF_EPARSE;
    if ((in[0] = ms_op(c, nd, NULL, APPROF_OP_LAYER_NORM, in, 3, NULL, NULL, 0, NULL)) < 0)
        return in[0];
    if (bind_out(c, nd, 0, in[0]) < 0 || bind_out(c, nd, 3, x) < 0)
        return APPROF_EPARSE;
    return in[0];
}

static int ms_fast_gelu(Ox *c, const OxNode *nd)
{
    int x, in[2];
    if (ox_operand(c, nd, 0, &x) < 0)
        return APPROF_EPARSE;
    if (ox_has_input(nd, 1)) {
        in[0] = x;
        if (ox_operand(c, nd, 1, &in[1]) < 0)
            return APPROF_EPARSE;
        if ((x = ms_op(c, nd, "bias", APPROF_OP_ADD, in, 2, NULL, NULL, 0, NULL)) < 0)
            return x;
    }
    if ((x = ms_op(c, nd, NULL, APPROF_OP_GELU, &x, 1, NULL, NULL, 0, NULL)) < 0)
        return x;
    return bind_out(c, nd, 0, x) < 0 ? APPROF_EPARSE : x;
}

static int ms_attention(Ox *c, const OxNode *nd)
{
    const Onnx__NodeProto *n = nd->n;
    ApprofOpAttrs a = {0};
    int x, w, in[3], qkv[APPROF_MAX_OUTPUTS], o;
    int64_t heads = ox_attr_i(n, "num_heads", 0), sizes[3], B, S, H, D, q5[5], k4[4], m3[3];
    int k = ox_attr_ints(n, "qkv_hidden_sizes", sizes, 3);
    static const char *const refused[] = {"do_rotary", "past_present_share_buffer", NULL};
    for (int i = 0; refused[i]; i++)
        if (ox_attr_i(n, refused[i], 0))
            return ox_err(c, APPROF_EPARSE, "%s: field attribute %s: not supported (only 0)", nd->what, refused[i]);
    for (int i = 5; i < (int)n->n_input; i++)
        if (ox_has_input(nd, i))
            return ox_err(c, APPROF_EPARSE, "%s: field input[%d]: not supported (relative position bias, "
                          "past sequence length and later inputs)", nd->what, i);
    if (ox_operand(c, nd, 0, &x) < 0 || ox_operand(c, nd, 1, &w) < 0)
        return APPROF_EPARSE;
    if (T(c, x)->ndim != 3 || T(c, w)->ndim != 2 || T(c, w)->dims[0] != T(c, x)->dims[2])
        return ox_err(c, APPROF_EPARSE, "%s: field input[1]: expected input [batch, sequence, hidden] and "
                      "weights [hidden, 3 x hidden]", nd->what);
    B = T(c, x)->dims[0];
    S = T(c, x)->dims[1];
    if (k == -1) {
        if (T(c, w)->dims[1] % 3)
            return ox_err(c, APPROF_EPARSE, "%s: field input[1]: %lld columns are not q, k and v of one size",
                          nd->what, (long long)T(c, w)->dims[1]);
        sizes[0] = sizes[1] = sizes[2] = T(c, w)->dims[1] / 3;
    } else if (k != 3 || sizes[0] != sizes[1] || sizes[1] != sizes[2] ||
               sizes[0] + sizes[1] + sizes[2] != T(c, w)->dims[1]) {
        return ox_err(c, APPROF_EPARSE, "%s: field attribute qkv_hidden_sizes: only q, k and v of one size "
                      "summing to the weights' columns are supported", nd->what);
    }
    H = sizes[0];
    if (heads < 1 || heads > H || H % heads)
        return ox_err(c, APPROF_EPARSE, "%s: field attribute num_heads: %lld does not divide the hidden size %lld",
                      nd->what, (long long)heads, (long long)H);
    D = H / heads;
    /* the past (input 4, [2, B, heads, P, D]) must be empty: P bound to 0 */
    if (ox_has_input(nd, 4)) {
        int v = ox_val_find(c, n->input[4]);
        if (v < 0 || c->vals[v].kind != V_EMPTY)
            return ox_err(c, APPROF_EPARSE, "%s: field input[4]: a past key/value cache ('%s') is inference, not a "
                          "training step: bind its length to 0 (--dim %s=0)", nd->what, n->input[4],
                          past_dim_name(c, n->input[4]));
    }
    /* a 2-D mask [B, total] must cover the keys: past (0) + sequence */
    if (ox_has_input(nd, 3)) {
        int mv = ox_val_find(c, n->input[3]);
        if (mv >= 0 && c->vals[mv].kind == V_TENSOR) {
            const ApprofTensor *mt = T(c, c->vals[mv].idx);
            if (mt->ndim == 2 && mt->dims[1] != S)
                return ox_err(c, APPROF_EPARSE, "%s: field input[3]: the mask '%s' has %lld key positions, the past "
                              "(0) and the sequence (%lld) give %lld (bind its length to the sequence's)",
                              nd->what, n->input[3], (long long)mt->dims[1], (long long)S, (long long)S);
        }
    }
    in[0] = x;
    in[1] = w;
    a.has_bias = ox_has_input(nd, 2);
    if (a.has_bias && ox_operand(c, nd, 2, &in[2]) < 0)
        return APPROF_EPARSE;
    if ((o = ms_op(c, nd, "qkv", APPROF_OP_MATMUL, in, a.has_bias ? 3 : 2, &a, NULL, 0, NULL)) < 0)
        return o;
    memset(&a, 0, sizeof a);
    a.axis = 2;
    a.sizes[0] = a.sizes[1] = a.sizes[2] = H;
    if ((o = ms_op(c, nd, "split", APPROF_OP_SPLIT, &o, 1, &a, NULL, 0, qkv)) < 0)
        return o;
    q5[0] = k4[0] = m3[0] = B;
    q5[1] = k4[1] = m3[1] = S;
    q5[2] = k4[2] = heads;
    q5[3] = 1;
    q5[4] = k4[3] = D;
    m3[2] = H;
    if ((in[0] = ms_op(c, nd, "q_heads", APPROF_OP_RESHAPE, &qkv[0], 1, NULL, q5, 5, NULL)) < 0 ||
        (in[1] = ms_op(c, nd, "k_heads", APPROF_OP_RESHAPE, &qkv[1], 1, NULL, k4, 4, NULL)) < 0 ||
        (in[2] = ms_op(c, nd, "v_heads", APPROF_OP_RESHAPE, &qkv[2], 1, NULL, k4, 4, NULL)) < 0)
        return APPROF_EINVAL;
    memset(&a, 0, sizeof a);
    a.causal = ox_attr_i(n, "unidirectional", 0) != 0;
    if ((o = ms_op(c, nd, NULL, APPROF_OP_ATTENTION, in, 3, &a, NULL, 0, NULL)) < 0)
        return o;
    if ((o = ms_op(c, nd, "merge_heads", APPROF_OP_RESHAPE, &o, 1, NULL, m3, 3, NULL)) < 0)
        return o;
    if (unread(c, nd, 1, "the present key/value cache") < 0)
        return APPROF_EPARSE;
    return bind_out(c, nd, 0, o) < 0 ? APPROF_EPARSE : o;
}

/* SimplifiedLayerNormalization (the onnx domain, onnxruntime's contrib
 * op) and SkipSimplifiedLayerNormalization: RMSNorm of x (+ skip, +
 * bias), output 3 the sum before the norm (the next residual). */
static int ms_simplified_norm(Ox *c, const OxNode *nd, int skip)
{
    int x, in[2];
    if (ox_operand(c, nd, 0, &x) < 0)
        return APPROF_EPARSE;
    if (skip) {
        in[0] = x;
        if (ox_operand(c, nd, 1, &in[1]) < 0)
            return APPROF_EPARSE;
        if ((x = ms_op(c, nd, "skip", APPROF_OP_ADD, in, 2, NULL, NULL, 0, NULL)) < 0)
            return x;
        if (ox_has_input(nd, 3)) {
            in[0] = x;
            if (ox_operand(c, nd, 3, &in[1]) < 0)
                return APPROF_EPARSE;
            if ((x = ms_op(c, nd, "bias", APPROF_OP_ADD, in, 2, NULL, NULL, 0, NULL)) < 0)
                return x;
        }
        if (unread(c, nd, 1, "the mean") < 0 || unread(c, nd, 2, "the inverse standard deviation") < 0)
            return APPROF_EPARSE;
    } else if (unread(c, nd, 1, "the inverse standard deviation") < 0) {
        return APPROF_EPARSE;
    }
    if (!skip && norm_axis(ox_attr_i(nd->n, "axis", -1), T(c, x)->ndim) != T(c, x)->ndim - 1)
        return ox_err(c, APPROF_EPARSE, "%s: field attribute axis: only the last axis is supported", nd->what);
    in[0] = x;
    if (ox_operand(c, nd, skip ? 2 : 1, &in[1]) < 0)
        return APPROF_EPARSE;
    if ((in[0] = ms_op(c, nd, NULL, APPROF_OP_RMS_NORM, in, 2, NULL, NULL, 0, NULL)) < 0)
        return in[0];
    if (bind_out(c, nd, 0, in[0]) < 0 || (skip && bind_out(c, nd, 3, x) < 0))
        return APPROF_EPARSE;
    return in[0];
}

/* RotaryEmbedding: rope over the head dim of x ([B, S, heads x D] or
 * [B, heads, S, D]); position_ids and the cos and sin caches are tables
 * it reads (the caches are precomputed buffers, no parameters). Only a
 * rotation of the whole head: rotary_embedding_dim 0 or D. */
static int ms_rotary(Ox *c, const OxNode *nd)
{
    int x;
    int64_t heads = ox_attr_i(nd->n, "num_heads", 0), rd = ox_attr_i(nd->n, "rotary_embedding_dim", 0), d;
    if (ox_operand(c, nd, 0, &x) < 0)
        return APPROF_EPARSE;
    if (T(c, x)->ndim != 3 && T(c, x)->ndim != 4)
        return ox_err(c, APPROF_EPARSE, "%s: field input[0]: expected [batch, sequence, hidden] or [batch, heads, "
                      "sequence, head_size]", nd->what);
    d = T(c, x)->dims[T(c, x)->ndim - 1];
    if (T(c, x)->ndim == 3 && heads > 0) {
        if (d % heads)
            return ox_err(c, APPROF_EPARSE, "%s: field attribute num_heads: %lld does not divide %lld", nd->what,
                          (long long)heads, (long long)d);
        d /= heads;
    }
    if (rd != 0 && rd != d)
        return ox_err(c, APPROF_EPARSE, "%s: field attribute rotary_embedding_dim: a partial rotation (%lld of "
                      "%lld) is not supported", nd->what, (long long)rd, (long long)d);
    if ((x = ms_op(c, nd, NULL, APPROF_OP_ROPE, &x, 1, NULL, NULL, 0, NULL)) < 0)
        return x;
    return bind_out(c, nd, 0, x) < 0 ? APPROF_EPARSE : x;
}

/* A past cache input k of an attention must be absent or empty. */
static int no_past(Ox *c, const OxNode *nd, int k)
{
    int v;
    if (!ox_has_input(nd, k))
        return 0;
    v = ox_val_find(c, nd->n->input[k]);
    if (v < 0 || c->vals[v].kind != V_EMPTY)
        return ox_err(c, APPROF_EPARSE, "%s: field input[%d]: a past key/value cache ('%s') is inference, not a "
                      "training step: bind its length to 0 (--dim %s=0)", nd->what, k, nd->n->input[k],
                      past_dim_name(c, nd->n->input[k]));
    return 0;
}

/* The fused attention of q [B, S, H x D], k and v [B, S, Hkv x D]: heads
 * split (q as [B, S, Hkv, H / Hkv, D]), the IR's attention, heads merged;
 * causal when asked. */
static int gqa_core(Ox *c, const OxNode *nd, int q, int k, int v, int64_t H, int64_t Hkv, int causal)
{
    ApprofOpAttrs a = {0};
    int in[3], o;
    int64_t B = T(c, q)->dims[0], S = T(c, q)->dims[1], D, q5[5], k4[4], m3[3];
    if (T(c, q)->ndim != 3 || T(c, k)->ndim != 3 || T(c, v)->ndim != 3 || T(c, k)->dims[0] != B ||
        T(c, v)->dims[0] != B || T(c, k)->dims[1] != T(c, v)->dims[1])
        return ox_err(c, APPROF_EPARSE, "%s: field input[0..2]: expected query, key and value [batch, sequence, "
                      "heads x head_size]", nd->what);
    if (H < 1 || Hkv < 1 || H % Hkv || T(c, q)->dims[2] % H)
        return ox_err(c, APPROF_EPARSE, "%s: field attribute num_heads: %lld query heads over %lld key/value heads "
                      "do not divide the hidden size %lld", nd->what, (long long)H, (long long)Hkv,
                      (long long)T(c, q)->dims[2]);
    D = T(c, q)->dims[2] / H;
    if (T(c, k)->dims[2] != Hkv * D || T(c, v)->dims[2] != Hkv * D)
        return ox_err(c, APPROF_EPARSE, "%s: field input[1]: key and value of %lld heads of %lld expected", nd->what,
                      (long long)Hkv, (long long)D);
    q5[0] = k4[0] = m3[0] = B;
    q5[1] = m3[1] = S;
    k4[1] = T(c, k)->dims[1];
    q5[2] = k4[2] = Hkv;
    q5[3] = H / Hkv;
    q5[4] = k4[3] = D;
    m3[2] = H * D;
    if ((in[0] = ms_op(c, nd, "q_heads", APPROF_OP_RESHAPE, &q, 1, NULL, q5, 5, NULL)) < 0 ||
        (in[1] = ms_op(c, nd, "k_heads", APPROF_OP_RESHAPE, &k, 1, NULL, k4, 4, NULL)) < 0 ||
        (in[2] = ms_op(c, nd, "v_heads", APPROF_OP_RESHAPE, &v, 1, NULL, k4, 4, NULL)) < 0)
        return APPROF_EINVAL;
    a.causal = causal;
    if ((o = ms_op(c, nd, NULL, APPROF_OP_ATTENTION, in, 3, &a, NULL, 0, NULL)) < 0)
        return o;
    if ((o = ms_op(c, nd, "merge_heads", APPROF_OP_RESHAPE, &o, 1, NULL, m3, 3, NULL)) < 0)
        return o;
    if (unread(c, nd, 1, "the present key") < 0 || unread(c, nd, 2, "the present value") < 0)
        return APPROF_EPARSE;
    return bind_out(c, nd, 0, o) < 0 ? APPROF_EPARSE : o;
}

/* GroupQueryAttention (always causal: each query sees the keys up to its
 * position, within local_window_size when that is set): query, key, value
 * or a packed query of (H + 2 Hkv) x D columns; seqlens_k and
 * total_sequence_length are lengths, no operands; with do_rotary, rope of
 * q and k from cos_cache and sin_cache first. */
static int ms_gqa(Ox *c, const OxNode *nd)
{
    const Onnx__NodeProto *n = nd->n;
    const Onnx__AttributeProto *sc = ox_attr(n, "softcap");
    int64_t H = ox_attr_i(n, "num_heads", 0), Hkv = ox_attr_i(n, "kv_num_heads", 0);
    int q, k, v, qkv[APPROF_MAX_OUTPUTS];
    if (ox_attr_i(n, "local_window_size", -1) > 0)
        return ox_err(c, APPROF_EPARSE, "%s: field attribute local_window_size: a sliding window is not supported "
                      "(the IR's attention is causal over the whole sequence)", nd->what);
    if (sc && sc->has_f && sc->f != 0.0f)
        return ox_err(c, APPROF_EPARSE, "%s: field attribute softcap: not supported (only 0)", nd->what);
    for (int i = 9; i < (int)n->n_input; i++)
        if (ox_has_input(nd, i))
            return ox_err(c, APPROF_EPARSE, "%s: field input[%d]: not supported (position_ids, attention_bias, "
                          "head sinks, quantized caches, q/k norm weights)", nd->what, i);
    if (no_past(c, nd, 3) < 0 || no_past(c, nd, 4) < 0 || ox_operand(c, nd, 0, &q) < 0)
        return APPROF_EPARSE;
    if (!ox_has_input(nd, 1) && !ox_has_input(nd, 2)) {
        ApprofOpAttrs a = {0};
        int64_t D = H > 0 && Hkv > 0 && T(c, q)->ndim == 3 ? T(c, q)->dims[2] / (H + 2 * Hkv) : 0;
        if (D < 1 || (H + 2 * Hkv) * D != T(c, q)->dims[2])
            return ox_err(c, APPROF_EPARSE, "%s: field input[0]: a packed query of %lld + 2 x %lld heads expected",
                          nd->what, (long long)H, (long long)Hkv);
        a.axis = 2;
        a.sizes[0] = H * D;
        a.sizes[1] = a.sizes[2] = Hkv * D;
        if ((q = ms_op(c, nd, "split", APPROF_OP_SPLIT, &q, 1, &a, NULL, 0, qkv)) < 0)
            return q;
        k = qkv[1];
        v = qkv[2];
    } else if (ox_operand(c, nd, 1, &k) < 0 || ox_operand(c, nd, 2, &v) < 0) {
        return APPROF_EPARSE;
    }
    if (ox_attr_i(n, "do_rotary", 0)) {
        if (!ox_has_input(nd, 7) || !ox_has_input(nd, 8))
            return ox_err(c, APPROF_EPARSE, "%s: field input[7..8]: do_rotary without cos_cache and sin_cache",
                          nd->what);
        if ((q = ms_op(c, nd, "q_rotary", APPROF_OP_ROPE, &q, 1, NULL, NULL, 0, NULL)) < 0 ||
            (k = ms_op(c, nd, "k_rotary", APPROF_OP_ROPE, &k, 1, NULL, NULL, 0, NULL)) < 0)
            return APPROF_EINVAL;
    }
    return gqa_core(c, nd, q, k, v, H, Hkv, 1);
}

/* MultiHeadAttention: query, key and value [B, S, H x D] (separate; the
 * packed and BNSH layouts are refused), key_padding_mask applied inside
 * the kernel; causal with unidirectional. */
static int ms_mha(Ox *c, const OxNode *nd)
{
    int64_t H = ox_attr_i(nd->n, "num_heads", 0);
    int q, k, v;
    if (ox_has_input(nd, 3))
        return ox_err(c, APPROF_EPARSE, "%s: field input[3]: a q/k/v bias is not supported (give it as an Add)",
                      nd->what);
    for (int i = 5; i < (int)nd->n->n_input; i++)
        if (i != 6 && i != 7 && ox_has_input(nd, i))
            return ox_err(c, APPROF_EPARSE, "%s: field input[%d]: not supported (attention bias and later inputs)",
                          nd->what, i);
    if (!ox_has_input(nd, 1) || !ox_has_input(nd, 2))
        return ox_err(c, APPROF_EPARSE, "%s: field input[1..2]: packed q/k/v is not supported (give key and value)",
                      nd->what);
    if (no_past(c, nd, 6) < 0 || no_past(c, nd, 7) < 0 || ox_operand(c, nd, 0, &q) < 0 ||
        ox_operand(c, nd, 1, &k) < 0 || ox_operand(c, nd, 2, &v) < 0)
        return APPROF_EPARSE;
    return gqa_core(c, nd, q, k, v, H, H, ox_attr_i(nd->n, "unidirectional", 0) != 0);
}

int ox_map_ms(Ox *c, const OxNode *nd, int *rc)
{
    const char *dom = nd->n->domain, *op = nd->n->op_type ? nd->n->op_type : "";
    if ((!dom || !*dom || !strcmp(dom, "ai.onnx")) && !strcmp(op, "SimplifiedLayerNormalization")) {
        *rc = ms_simplified_norm(c, nd, 0);
        return 1;
    }
    if (!dom || strcmp(dom, "com.microsoft"))
        return 0;
    if (!strcmp(op, "EmbedLayerNormalization"))
        *rc = ms_embed_layer_norm(c, nd);
    else if (!strcmp(op, "SkipLayerNormalization"))
        *rc = ms_skip_layer_norm(c, nd);
    else if (!strcmp(op, "FastGelu"))
        *rc = ms_fast_gelu(c, nd);
    else if (!strcmp(op, "Attention"))
        *rc = ms_attention(c, nd);
    else if (!strcmp(op, "SimplifiedLayerNormalization") || !strcmp(op, "SkipSimplifiedLayerNormalization"))
        *rc = ms_simplified_norm(c, nd, op[0] == 'S' && op[1] == 'k');
    else if (!strcmp(op, "RotaryEmbedding"))
        *rc = ms_rotary(c, nd);
    else if (!strcmp(op, "GroupQueryAttention"))
        *rc = ms_gqa(c, nd);
    else if (!strcmp(op, "MultiHeadAttention"))
        *rc = ms_mha(c, nd);
    else
        *rc = ox_err(c, APPROF_EPARSE, "%s: unsupported operator 'com.microsoft.%s' (of onnxruntime's contrib "
                     "operators only EmbedLayerNormalization, SkipLayerNormalization, FastGelu, Attention, "
                     "SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization, RotaryEmbedding, "
                     "GroupQueryAttention and MultiHeadAttention are read)", nd->what, op);
    return 1;
}
