/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attention masks built as tensors (docs/models.md, section ONNX): what
 * torch.onnx writes for the causal mask of transformers 4.36 and later
 * (modeling_attn_mask_utils.py's AttentionMaskConverter and the decoders'
 * _update_causal_mask: torch.full(min), triu(diagonal=1), arange >
 * cache_position, [None, None].expand(B, 1, -1, -1), eq(0), masked_fill)
 * once the shape math around it has folded (onnx_fold.c). The semantics
 * are those of onnx/docs/Operators.md (opset 17 to 21):
 *
 * - ConstantOfShape over a folded shape: a fill, a non-trainable input of
 *   that shape (as Range is: it writes what no operator reads back), unless
 *   it is integer shape math, which onnx_fold.c folds;
 * - Trilu, Not, Neg: one operation an element (a compare of the row and
 *   column index, a logical or arithmetic negation), as relu;
 * - Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor over
 *   tensors: one operation an element of the broadcast result, as add;
 *   against a one-element constant (mask.eq(0.0)), one operation an
 *   element of the tensor, as relu;
 * - Expand: numpy broadcasting to the given shape. PyTorch's expand is a
 *   view (no copy; the operator that reads it iterates over the broadcast
 *   shape), so an Expand of data that needs no gradient is a non-trainable
 *   input of the broadcast shape and costs nothing itself. An Expand of a
 *   tensor that needs a gradient along one axis of size 1 (repeat_kv of
 *   grouped-query attention, materialized by the reshape after it) is
 *   that many copies concatenated (repeat below); others are refused;
 * - Cos, Sin (opset 7): one operation an element, as relu, when the input
 *   needs no gradient (the rotary tables of positions times a buffer,
 *   onnx_buffer.c); of a tensor that needs one, refused;
 * - Where with two one-element branches (masked_fill of a constant into a
 *   constant): one operation an element over the condition.
 *
 * The same rules give the operands that broadcast each other ([S, 1] >
 * [T]): the operand of lower rank is viewed at the broadcast shape first.
 */
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"

/* The numpy broadcast of a[0..na) and b[0..nb) into o: its rank, or -1. */
static int broadcast(const int64_t *a, int na, const int64_t *b, int nb, int64_t *o)
{
    int n = na > nb ? na : nb;
    if (n > APPROF_MAX_DIMS)
        return -1;
    for (int i = 0; i < n; i++) {
        int64_t x = i - (n - na) >= 0 ? a[i - (n - na)] : 1, y = i - (n - nb) >= 0 ? b[i - (n - nb)] : 1;
        if (x != y && x != 1 && y != 1)
            return -1;
        o[i] = x == 1 ? y : x;
    }
    return n;
}

/* Tensor t viewed at shape d[0..n) (its broadcast): t itself when it has
 * that shape, else a non-trainable input named NODE/SUFFIX; refused when t
 * needs a gradient. */
static int view_as(Ox *c, const OxNode *nd, const char *suffix, int k, int t, const int64_t *d, int n)
{
    char nm[APPROF_NAME_MAX];
    int r;
    if (T(c, t)->ndim == n && !memcmp(T(c, t)->dims, d, sizeof(int64_t) * (size_t)n))
        return t;
    if (T(c, t)->requires_grad)
        return ox_err(c, APPROF_EPARSE, "%s: field input[%d]: broadcasting '%s', which needs a gradient (a "
                      "parameter or computed from one), is not supported: the IR has no broadcast copy", nd->what,
                      k, nd->n->input[k]);
    snprintf(nm, sizeof nm, "%s%s", nd->name, suffix);  /* fits: OX_NODE_NAME_MAX */
    r = approf_graph_add_tensor(c->g, nm, APPROF_TENSOR_INPUT, T(c, t)->dtype, n, d, -1);
    if (r < 0)
        return r == APPROF_ENOMEM ? r : ox_err(c, APPROF_EINVAL, "%s: field output[0]: a tensor named '%s' exists "
                                               "or the shape is absurd", nd->what, nm);
    return r;
}

/* A binary elementwise operator over tensors, as add over the broadcast. */
static int binary(Ox *c, const OxNode *nd)
{
    int in[2], t, first = 0;
    int64_t o[APPROF_MAX_DIMS];
    int n;
    for (int k = 0; k < 2; k++) {
        /* against a one-element constant (x == 0): one operation an
         * element of the other operand, the constant no operand */
        const Onnx__TensorProto *tp = ox_const_in(c, nd, k);
        if (tp && ox_tp_elements(tp) == 1)
            return ox_operand(c, nd, 1 - k, &t) < 0 ? APPROF_EPARSE
                   : ox_emit(c, nd, APPROF_OP_RELU, &t, 1, NULL, NULL, 0);
    }
    if (ox_operand(c, nd, 0, &in[0]) < 0 || ox_operand(c, nd, 1, &in[1]) < 0)
        return APPROF_EPARSE;
    n = broadcast(T(c, in[0])->dims, T(c, in[0])->ndim, T(c, in[1])->dims, T(c, in[1])->ndim, o);
    if (n < 0)
        return ox_err(c, APPROF_EPARSE, "%s: field input[1]: '%s' and '%s' do not broadcast", nd->what,
                      T(c, in[0])->name, T(c, in[1])->name);
    if (approf_tensor_elements(T(c, in[1])) > approf_tensor_elements(T(c, in[0])) ||
        T(c, in[1])->ndim > T(c, in[0])->ndim) {
        t = in[0];
        in[0] = in[1];
        in[1] = t;
        first = 1;
    }
    if ((in[0] = view_as(c, nd, "/broadcast", first, in[0], o, n)) < 0)
        return in[0];
    return ox_emit(c, nd, APPROF_OP_ADD, in, 2, NULL, NULL, 0);
}

/* A concat of in[0..2) along a->axis into d[0..n), named NODE/repeat_I. */
static int emit_part(Ox *c, const OxNode *nd, int i, const int *in, const ApprofOpAttrs *a, const int64_t *d, int n)
{
    char nm[APPROF_NAME_MAX], emsg[512];
    int r;
    snprintf(nm, sizeof nm, "%s/repeat_%d", nd->name, i);  /* fits: OX_NODE_NAME_MAX */
    r = approf_graph_add_op(c->g, nm, APPROF_OP_CONCAT, in, 2, a, d, n, emsg, sizeof emsg);
    if (r < 0)
        return r == APPROF_ENOMEM ? r : ox_err(c, APPROF_EINVAL, "%s: %s", nd->what, emsg);
    return c->g->ops[r].outputs[0];
}

/* The Expand of x (needing a gradient) to o[0..n) of x's rank: when one
 * axis of size 1 grows to r, r copies of x concatenated along it (torch's
 * repeat_kv: expand, then the reshape copies), as doubling concats of two
 * (the IR's operator takes at most 4 inputs); their backward slices the
 * gradient back, and the r slices summed into x's gradient are the
 * accumulation of a tensor read r times. Other broadcasts are refused. */
static int repeat(Ox *c, const OxNode *nd, int x, const int64_t *o, int n)
{
    ApprofOpAttrs a;
    int axis = -1, acc = -1, i = 0;
    int64_t r, d[APPROF_MAX_DIMS];
    for (int j = 0; j < n; j++)
        if (T(c, x)->dims[j] != o[j]) {
            if (axis >= 0 || T(c, x)->dims[j] != 1)
                return ox_err(c, APPROF_EPARSE, "%s: field input[1]: broadcasting '%s', which needs a gradient "
                              "(a parameter or computed from one), along more than one axis of size 1 is not "
                              "supported", nd->what, nd->n->input[0]);
            axis = j;
        }
    if (axis < 0)
        return ox_alias(c, nd, x);
    memset(&a, 0, sizeof a);
    a.axis = axis;
    memcpy(d, T(c, x)->dims, sizeof(int64_t) * (size_t)n);
    r = o[axis];
    while (r > 0) {
        if (r & 1) {
            if (acc < 0) {
                acc = x;
            } else {
                int in[2] = {acc, x};
                int64_t s0 = T(c, acc)->dims[axis] + T(c, x)->dims[axis];
                d[axis] = s0;
                if ((acc = emit_part(c, nd, i++, in, &a, d, n)) < 0)
                    return acc;
            }
        }
        r >>= 1;
        if (r) {
            int in[2] = {x, x};
            d[axis] = 2 * T(c, x)->dims[axis];
            if ((x = emit_part(c, nd, i++, in, &a, d, n)) < 0)
                return x;
        }
    }
    return ox_alias(c, nd, acc);
}

static int expand(Ox *c, const OxNode *nd)
{
    const Onnx__TensorProto *s = ox_const_in(c, nd, 1);
    int64_t want[APPROF_MAX_DIMS], o[APPROF_MAX_DIMS];
    int x, k, n;
    if (ox_operand(c, nd, 0, &x) < 0)
        return APPROF_EPARSE;
    if (!s || (k = ox_tp_ints(s, want, APPROF_MAX_DIMS)) < 0)
        return ox_err(c, APPROF_EPARSE, "%s: field input[1]: expected a constant shape of at most %d dims (bind the "
                      "symbolic dimensions it is computed from)", nd->what, APPROF_MAX_DIMS);
    for (int i = 0; i < k; i++)
        if (want[i] < 1 || want[i] > ((int64_t)1 << 31))
            return ox_err(c, APPROF_EPARSE, "%s: field input[1]: bad dimension %lld", nd->what, (long long)want[i]);
    if ((n = broadcast(T(c, x)->dims, T(c, x)->ndim, want, k, o)) < 0)
        return ox_err(c, APPROF_EPARSE, "%s: field input[1]: '%s' does not broadcast to the shape", nd->what,
                      T(c, x)->name);
    if (T(c, x)->requires_grad && n == T(c, x)->ndim)
        return repeat(c, nd, x, o, n);
    if ((x = view_as(c, nd, "", 0, x, o, n)) < 0)
        return x;
    return ox_alias(c, nd, x);
}

static int constant_of_shape(Ox *c, const OxNode *nd)
{
    const Onnx__TensorProto *s = ox_const_in(c, nd, 0);
    const Onnx__AttributeProto *v = ox_attr(nd->n, "value");
    int64_t d[APPROF_MAX_DIMS];
    ApprofDtype dt = APPROF_F32;
    int k, x;
    if (!s || (k = ox_tp_ints(s, d, APPROF_MAX_DIMS)) < 0)
        return ox_err(c, APPROF_EPARSE, "%s: field input[0]: expected a constant shape of at most %d dims (bind the "
                      "symbolic dimensions it is computed from)", nd->what, APPROF_MAX_DIMS);
    for (int i = 0; i < k; i++)
        if (d[i] < 1 || d[i] > ((int64_t)1 << 31))
            return ox_err(c, APPROF_EPARSE, "%s: field input[0]: bad dimension %lld", nd->what, (long long)d[i]);
    if (v && v->t)
        ox_dtype_of(v->t->data_type, APPROF_F32, &dt);
    x = approf_graph_add_tensor(c->g, nd->name, APPROF_TENSOR_INPUT, dt, k, d, -1);
    if (x < 0)
        return x == APPROF_ENOMEM ? x : ox_err(c, APPROF_EINVAL, "%s: field output[0]: a tensor of that name exists "
                                               "or the shape is absurd", nd->what);
    return ox_alias(c, nd, x);
}

/* ReduceSum over trailing axes (onnxruntime-genai's seqlens_k: the sum of
 * the 2-D attention_mask's row): one add an element, the reduction
 * global_pool does over the trailing dims of [rows, 1, reduced]. */
static int reduce_sum(Ox *c, const OxNode *nd)
{
    int64_t ax[APPROF_MAX_DIMS], d3[3] = {1, 1, 1}, o[APPROF_MAX_DIMS];
    int x, k, keep = ox_attr_i(nd->n, "keepdims", 1) != 0, nd_, first, m = 0;
    char nm[APPROF_NAME_MAX];
    OxNode sub = *nd;
    const Onnx__TensorProto *ta = ox_has_input(nd, 1) ? ox_const_in(c, nd, 1) : NULL;
    if (ox_operand(c, nd, 0, &x) < 0)
        return APPROF_EPARSE;
    nd_ = T(c, x)->ndim;
    k = ta ? ox_tp_ints(ta, ax, APPROF_MAX_DIMS) : ox_has_input(nd, 1) ? -2 : ox_attr_ints(nd->n, "axes", ax, APPROF_MAX_DIMS);
    if (k == -1 || k == 0) {
        for (k = 0; k < nd_; k++)
            ax[k] = k;
    }
    if (k < 1)
        return ox_err(c, APPROF_EPARSE, "%s: field axes: expected constant axes", nd->what);
    first = nd_;
    for (int i = 0; i < k; i++) {
        int a = norm_axis(ax[i], nd_);
        if (a < 0)
            return ox_err(c, APPROF_EPARSE, "%s: field axes: axis %lld out of range", nd->what, (long long)ax[i]);
        first = a < first ? a : first;
    }
    if (first != nd_ - k)
        return ox_err(c, APPROF_EPARSE, "%s: field axes: only the trailing axes are supported", nd->what);
    for (int i = 0; i < nd_; i++) {
        if (i < first)
            d3[0] *= T(c, x)->dims[i], o[m++] = T(c, x)->dims[i];
        else
            d3[2] *= T(c, x)->dims[i];
        if (i >= first && keep)
            o[m++] = 1;
    }
    snprintf(nm, sizeof nm, "%s/rows", nd->name);  /* fits: OX_NODE_NAME_MAX */
    sub.name = nm;
    if ((x = ox_emit(c, &sub, APPROF_OP_RESHAPE, &x, 1, NULL, d3, 3)) < 0)
        return x;
    snprintf(nm, sizeof nm, "%s/sum", nd->name);
    if ((x = ox_emit(c, &sub, APPROF_OP_GLOBAL_POOL, &x, 1, NULL, NULL, 0)) < 0)
        return x;
    if (m == 0)
        o[m++] = 1;
    return ox_emit(c, nd, APPROF_OP_RESHAPE, &x, 1, NULL, o, m);
}

int ox_map_mask(Ox *c, const OxNode *nd, int *rc)
{
    const char *op = nd->n->op_type ? nd->n->op_type : "";
    static const char *const cmp[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or",
                                      "Xor", NULL};
    int x;
    if (!strcmp(op, "ConstantOfShape")) {
        *rc = constant_of_shape(c, nd);
        return 1;
    }
    if (!strcmp(op, "ReduceSum")) {
        *rc = reduce_sum(c, nd);
        return 1;
    }
    if (!strcmp(op, "Expand")) {
        *rc = expand(c, nd);
        return 1;
    }
    if (!strcmp(op, "Cos") || !strcmp(op, "Sin")) {
        if (ox_operand(c, nd, 0, &x) < 0)
            *rc = APPROF_EPARSE;
        else if (T(c, x)->requires_grad)
            *rc = ox_err(c, APPROF_EPARSE, "%s: field input[0]: '%s' needs a gradient (a parameter or computed "
                         "from one): only the position tables of a rotary embedding are supported", nd->what,
                         nd->n->input[0]);
        else
            *rc = ox_emit(c, nd, APPROF_OP_RELU, &x, 1, NULL, NULL, 0);
        return 1;
    }
    if (!strcmp(op, "Trilu") || !strcmp(op, "Not") || !strcmp(op, "Neg")) {
        *rc = ox_operand(c, nd, 0, &x) < 0 ? APPROF_EPARSE : ox_emit(c, nd, APPROF_OP_RELU, &x, 1, NULL, NULL, 0);
        return 1;
    }
    for (int i = 0; cmp[i]; i++)
        if (!strcmp(op, cmp[i])) {
            *rc = binary(c, nd);
            return 1;
        }
    if (!strcmp(op, "Where")) {
        const Onnx__TensorProto *c1 = ox_const_in(c, nd, 1), *c2 = ox_const_in(c, nd, 2);
        if (!(c1 && ox_tp_elements(c1) == 1 && c2 && ox_tp_elements(c2) == 1))
            return 0;   /* onnx_ops.c: a masked fill of a tensor */
        *rc = ox_operand(c, nd, 0, &x) < 0 ? APPROF_EPARSE : ox_emit(c, nd, APPROF_OP_RELU, &x, 1, NULL, NULL, 0);
        return 1;
    }
    return 0;
}
