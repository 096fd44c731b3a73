/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ONNX operators onto the IR (schemas/model-format.md, section ONNX): one
 * node at a time, called by onnx.c's walk in the file's order. Reads node
 * attributes and constant tensors, resolves operands (an initializer becomes
 * a parameter the first time an operator reads it) and fuses the exporter
 * patterns: MatMul + Add of a bias vector, x * Sigmoid(x), and a Mul or Div
 * by a one-element constant; decomposed LayerNorm and GELU as Erf are
 * onnx_fuse.c's. Conv, pooling, LRN, Sum, Squeeze, Unsqueeze
 * and Gemm are in onnx_cnn.c; the helpers both use are in onnx_int.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_int.h"

const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
            return n->attribute[i];
    return NULL;
}

int64_t ox_attr_i(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    return a && a->has_i ? a->i : def;
}

/* The ints of attribute name (at most max), or -1 when absent. */
int ox_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    if (!a)
        return -1;
    if (a->n_ints > (size_t)max)
        return -2;
    for (size_t i = 0; i < a->n_ints; i++)
        out[i] = a->ints[i];
    return (int)a->n_ints;
}

/* Checks n values of int64 attribute name against lo..hi before anything
 * narrows them to int (2^32 + 3 would read as 3); 0 or APPROF_EPARSE with
 * the node and the attribute named. */
int ox_attr_range(Ox *c, const OxNode *nd, const char *name, const int64_t *v, int n,
                      int64_t lo, int64_t hi)
{
    for (int i = 0; i < n; i++)
        if (v[i] < lo || v[i] > hi)
            return ox_err(c, APPROF_EPARSE, "%s: field attribute %s: value %lld outside %lld..%lld",
                          nd->what, name, (long long)v[i], (long long)lo, (long long)hi);
    return 0;
}

/* Elements of a constant, or -1 when a dim is negative or the count is
 * absurd (above 2^42: the IR's own bound). */
int64_t ox_tp_elements(const Onnx__TensorProto *tp)
{
    int64_t n = 1;
    for (size_t d = 0; d < tp->n_dims; d++) {
        if (tp->dims[d] < 0 || tp->dims[d] > ((int64_t)1 << 31))
            return -1;
        n *= tp->dims[d];
        if (n > ((int64_t)1 << 42))
            return -1;
    }
    return n;
}

/* The integer values of a constant tensor (int64 or int32, in the typed
 * field or raw little-endian bytes); count or -1. */
int ox_tp_ints(const Onnx__TensorProto *tp, int64_t *out, int max)
{
    int64_t n = ox_tp_elements(tp);
    if (n < 0 || n > max)
        return -1;
    if (tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        if (tp->n_int64_data == (size_t)n) {
            if (n)  /* a tensor of no elements has no int64_data at all */
                memcpy(out, tp->int64_data, sizeof(int64_t) * (size_t)n);
            return (int)n;
        }
        if (tp->has_raw_data && tp->raw_data.len == (size_t)n * 8) {
            for (int64_t i = 0; i < n; i++) {
                uint64_t u = 0;
                for (int b = 7; b >= 0; b--)
                    u = u << 8 | tp->raw_data.data[i * 8 + b];
                out[i] = (int64_t)u;
            }
            return (int)n;
        }
    } else if (tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) {
        if (tp->n_int32_data == (size_t)n) {
            for (int64_t i = 0; i < n; i++)
                out[i] = tp->int32_data[i];
            return (int)n;
        }
        if (tp->has_raw_data && tp->raw_data.len == (size_t)n * 4) {
            for (int64_t i = 0; i < n; i++) {
                uint32_t u = 0;
                for (int b = 3; b >= 0; b--)
                    u = u << 8 | tp->raw_data.data[i * 4 + b];
                out[i] = (int32_t)u;
            }
            return (int)n;
        }
    }
    return -1;
}


/* The IR tensor of input k; an initializer becomes a parameter (a Constant
 * a non-trainable input) the first time it is read. */
int ox_operand(Ox *c, const OxNode *nd, int k, int *t)
{
    const char *vn = (size_t)k < nd->n->n_input ? nd->n->input[k] : NULL;
    int v = ox_val_find(c, vn);
    if (!vn || !*vn)
        return ox_err(c, APPROF_EPARSE, "%s: field input[%d]: missing", nd->what, k);
    if (v >= 0 && c->vals[v].kind == V_EMPTY)
        return ox_err(c, APPROF_EPARSE, "%s: field input[%d]: '%s' is empty (a dimension bound to 0); only Shape, "
                      "Identity, Cast, Transpose, (Un)Squeeze, Split, Concat and the past of a com.microsoft Attention, "
                      "GroupQueryAttention or MultiHeadAttention may read it", nd->what, k, vn);
    if (v < 0 || c->vals[v].kind < 0 || (c->vals[v].kind != V_TENSOR && !c->vals[v].tp))
        return ox_err(c, APPROF_EPARSE, "%s: field input[%d]: unknown value '%s' (not an input, initializer or earlier output)",
                    nd->what, k, vn);
    if (c->vals[v].kind != V_TENSOR) {
        const Onnx__TensorProto *tp = c->vals[v].tp;
        int64_t dims[APPROF_MAX_DIMS];
        ApprofDtype dt;
        int r;
        if (tp->n_dims > APPROF_MAX_DIMS)
            return ox_err(c, APPROF_EPARSE, "initializer '%s': field dims: rank %zu above %d", vn, tp->n_dims, APPROF_MAX_DIMS);
        if (ox_name_ok(c, "initializer", "name", vn, APPROF_NAME_MAX - 1) < 0)
            return APPROF_EPARSE;
        for (size_t d = 0; d < tp->n_dims; d++)
            dims[d] = tp->dims[d];
        ox_dtype_of(tp->data_type, c->g->dtype, &dt);
        r = approf_graph_add_tensor(c->g, vn, c->vals[v].kind == V_INIT && !ox_is_buffer(c, vn) ? APPROF_TENSOR_PARAM
                                    : APPROF_TENSOR_INPUT,
                                    dt, (int)tp->n_dims, dims, -1);
        if (r == APPROF_ENOMEM)
            return r;
        if (r < 0)
            return ox_err(c, APPROF_EINVAL, "initializer '%s': field dims: absurd size (each dim 1..2^31, at most 2^42 elements)", vn);
        c->vals[v].kind = V_TENSOR;
        c->vals[v].idx = r;
        c->vals[v].tp = NULL;
    }
    *t = c->vals[v].idx;
    return 0;
}

/* The constant (initializer or Constant output) behind input k, or NULL. */
const Onnx__TensorProto *ox_const_in(Ox *c, const OxNode *nd, int k)
{
    int v = (size_t)k < nd->n->n_input ? ox_val_find(c, nd->n->input[k]) : -1;
    return v >= 0 && (c->vals[v].kind == V_INIT || c->vals[v].kind == V_CONST) ? c->vals[v].tp : NULL;
}

int ox_has_input(const OxNode *nd, int k)
{
    return (size_t)k < nd->n->n_input && nd->n->input[k] && *nd->n->input[k];
}

/* Adds the op and binds the node's outputs to the op's outputs. */
int ox_emit(Ox *c, const OxNode *nd, ApprofOpKind kind, const int *in, int n_in,
                const ApprofOpAttrs *a, const int64_t *shape, int shape_n)
{
    char emsg[512];
    int r = approf_graph_add_op(c->g, nd->name, kind, in, n_in, a, shape, shape_n, emsg, sizeof emsg);
    if (r == APPROF_ENOMEM)
        return r;
    if (r < 0)
        return ox_err(c, APPROF_EINVAL, "%s: %s", nd->what, emsg);
    for (int j = 0; j < c->g->ops[r].n_outputs && (size_t)j < nd->n->n_output; j++) {
        int rc = ox_val_def(c, nd->n->output[j], V_TENSOR, c->g->ops[r].outputs[j], NULL);
        if (rc < 0)
            return ox_err(c, rc, "%s: field output[%d]: too many values", nd->what, j);
    }
    return c->g->ops[r].outputs[0];
}

int ox_output_used(const Ox *c, const OxNode *nd, int k)
{
    int v = (size_t)k < nd->n->n_output ? ox_val_find(c, nd->n->output[k]) : -1;
    return v >= 0 && c->uses[v] > 0;
}

int ox_alias(Ox *c, const OxNode *nd, int t)
{
    int rc = nd->n->n_output ? ox_val_def(c, nd->n->output[0], V_TENSOR, t, NULL) : 0;
    return rc < 0 ? ox_err(c, rc, "%s: field output[0]: too many values", nd->what) : t;
}

/* The only consumer of node nd's output 0, when there is exactly one. */
static const Onnx__NodeProto *sole_user(Ox *c, const OxNode *nd, size_t *at)
{
    int v = nd->n->n_output ? ox_val_find(c, nd->n->output[0]) : -1;
    if (v < 0 || c->uses[v] != 1 || c->first_user[v] < 0)
        return NULL;
    *at = (size_t)c->first_user[v];
    return c->gp->node[*at];
}

static int is_op(const Onnx__NodeProto *n, const char *op)
{
    return n && n->op_type && !strcmp(n->op_type, op);
}

/* MatMul; a 2-D right operand is a dense layer (matmul), and the Add of a
 * bias vector that is its only consumer is its bias. Gemm: onnx_cnn.c. */
static int map_matmul(Ox *c, const OxNode *nd)
{
    ApprofOpAttrs a = {0};
    int in[3], x, w;
    size_t at;
    const Onnx__NodeProto *u;
    if (ox_operand(c, nd, 0, &x) < 0 || ox_operand(c, nd, 1, &w) < 0)
        return APPROF_EPARSE;
    in[0] = x;
    in[1] = w;
    if (T(c, w)->ndim == 2 && T(c, x)->ndim >= 1) {
        int64_t n = T(c, w)->dims[1];
        if ((u = sole_user(c, nd, &at)) && is_op(u, "Add") && u->n_input == 2) {
            int other = !strcmp(u->input[0], nd->n->output[0]) ? 1 : 0;
            int v = ox_val_find(c, u->input[other]);
            if (v >= 0 && c->vals[v].kind == V_INIT && c->vals[v].tp->n_dims == 1 &&
                c->vals[v].tp->dims[0] == n) {
                OxNode bn = {u, nd->name, ""};
                snprintf(bn.what, sizeof bn.what, "%s", nd->what);
                if (ox_operand(c, &bn, other, &in[2]) < 0)
                    return APPROF_EPARSE;
                c->skip[at] = 1;
                a.has_bias = 1;
                x = ox_emit(c, nd, APPROF_OP_MATMUL, in, 3, &a, NULL, 0);
                if (x < 0)
                    return x;
                return ox_alias(c, &bn, x) < 0 ? APPROF_EPARSE : x;
            }
        }
        return ox_emit(c, nd, APPROF_OP_MATMUL, in, 2, &a, NULL, 0);
    }
    return ox_emit(c, nd, APPROF_OP_BATCH_MATMUL, in, 2, &a, NULL, 0);
}

int ox_reshape(Ox *c, const OxNode *nd, int x, const int64_t *want, int n)
{
    int64_t d[APPROF_MAX_DIMS], known = 1, total = approf_tensor_elements(T(c, x));
    int infer = -1;
    if (n < 0 || n > APPROF_MAX_DIMS)
        return ox_err(c, APPROF_EPARSE, "%s: field input[1]: expected a constant shape of at most %d dims", nd->what, APPROF_MAX_DIMS);
    for (int i = 0; i < n; i++) {
        d[i] = want[i];
        if (d[i] == 0 && i < T(c, x)->ndim)
            d[i] = T(c, x)->dims[i];
        if (d[i] == -1 && infer < 0)
            infer = i;
        else if (d[i] < 1 || d[i] > ((int64_t)1 << 31))
            return ox_err(c, APPROF_EPARSE, "%s: field input[1]: bad dimension %lld", nd->what, (long long)want[i]);
        else if ((known *= d[i]) > ((int64_t)1 << 42))
            return ox_err(c, APPROF_EINVAL, "%s: field input[1]: absurd shape", nd->what);
    }
    if (infer >= 0) {
        if (known < 1 || total % known)
            return ox_err(c, APPROF_EINVAL, "%s: field input[1]: %lld elements do not fit the shape", nd->what, (long long)total);
        d[infer] = total / known;
    }
    if (n == T(c, x)->ndim && !memcmp(d, T(c, x)->dims, sizeof(int64_t) * (size_t)n))
        return ox_alias(c, nd, x);
    return ox_emit(c, nd, APPROF_OP_RESHAPE, &x, 1, NULL, d, n);
}

int ox_map_node(Ox *c, const OxNode *nd, size_t at)
{
    const Onnx__NodeProto *n = nd->n;
    const char *op = n->op_type ? n->op_type : "";
    ApprofOpAttrs a = {0};
    int x, in[APPROF_MAX_INPUTS];
    int64_t v[APPROF_MAX_DIMS * 2];
    int k;

    if (!strcmp(op, "Constant")) {
        const Onnx__AttributeProto *ap = ox_attr(n, "value");
        if (!ap || !ap->t || !n->n_output)
            return ox_err(c, APPROF_EPARSE, "%s: field attribute value: expected a tensor", nd->what);
        return ox_val_def(c, n->output[0], V_CONST, -1, ap->t) < 0
                   ? ox_err(c, APPROF_EINVAL, "%s: too many values", nd->what) : 0;
    }
    if (ox_map_ms(c, nd, &x) || ox_fold(c, nd, &x) || ox_fuse(c, nd, at, &x))
        return x;
    if (!strcmp(op, "Identity") || !strcmp(op, "Cast"))
        return ox_operand(c, nd, 0, &x) < 0 ? APPROF_EPARSE : ox_alias(c, nd, x);
    if (!strcmp(op, "MatMul"))
        return map_matmul(c, nd);
    if (ox_map_more(c, nd, &x) || ox_map_mask(c, nd, &x))
        return x;
    if (!strcmp(op, "BatchNormalization") || !strcmp(op, "LayerNormalization")) {
        int ln = op[0] == 'L';
        if (ox_operand(c, nd, 0, &in[0]) < 0 || ox_operand(c, nd, 1, &in[1]) < 0)
            return APPROF_EPARSE;
        if (!ox_has_input(nd, 2))
            return ox_err(c, APPROF_EPARSE, "%s: field input[2]: the IR's norms have a bias: give B", nd->what);
        if (ox_operand(c, nd, 2, &in[2]) < 0)
            return APPROF_EPARSE;
        if (ln && norm_axis(ox_attr_i(n, "axis", -1), T(c, in[0])->ndim) != T(c, in[0])->ndim - 1)
            return ox_err(c, APPROF_EPARSE, "%s: field attribute axis: only the last axis is supported", nd->what);
        return ox_emit(c, nd, ln ? APPROF_OP_LAYER_NORM : APPROF_OP_BATCH_NORM, in, 3, NULL, NULL, 0);
    }
    /* standalone activations: LeakyRelu and Clip (ReLU6) cost what relu
     * does (a compare and a multiply or a second compare), Tanh and a lone Sigmoid what silu does (one exponential
     * and a few operations an element; the IR has no sigmoid of its own) */
    if (!strcmp(op, "Relu") || !strcmp(op, "Gelu") || !strcmp(op, "LeakyRelu") || !strcmp(op, "Tanh") ||
        !strcmp(op, "Clip"))
        return ox_operand(c, nd, 0, &x) < 0 ? APPROF_EPARSE
               : ox_emit(c, nd, op[0] == 'G' ? APPROF_OP_GELU : op[0] == 'T' ? APPROF_OP_SILU : APPROF_OP_RELU,
                         &x, 1, NULL, NULL, 0);
    if (!strcmp(op, "Sigmoid")) {
        size_t u_at;
        const Onnx__NodeProto *u = sole_user(c, nd, &u_at);
        if (is_op(u, "Mul") && u->n_input == 2 && n->n_input >= 1 &&
            (!strcmp(u->input[0], n->input[0]) || !strcmp(u->input[1], n->input[0]))) {
            OxNode un = {u, nd->name, ""};
            snprintf(un.what, sizeof un.what, "%s", nd->what);
            if (ox_operand(c, nd, 0, &x) < 0)
                return APPROF_EPARSE;
            c->skip[u_at] = 1;
            x = ox_emit(c, nd, APPROF_OP_SILU, &x, 1, NULL, NULL, 0);
            return x < 0 ? x : ox_alias(c, &un, x);
        }
        return ox_operand(c, nd, 0, &x) < 0 ? APPROF_EPARSE : ox_emit(c, nd, APPROF_OP_SILU, &x, 1, NULL, NULL, 0);
    }
    /* Sub costs what add does, Div by a tensor what mul does */
    if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div")) {
        const Onnx__TensorProto *c0 = ox_const_in(c, nd, 0), *c1 = ox_const_in(c, nd, 1);
        int add = op[0] == 'A' || op[0] == 'S';
        if (op[0] != 'A' && c1 && ox_tp_elements(c1) == 1)
            return ox_operand(c, nd, 0, &x) < 0 ? APPROF_EPARSE : ox_alias(c, nd, x);
        if ((op[0] == 'M' || op[0] == 'S') && c0 && ox_tp_elements(c0) == 1)
            return ox_operand(c, nd, 1, &x) < 0 ? APPROF_EPARSE : ox_alias(c, nd, x);
        if (ox_operand(c, nd, 0, &in[0]) < 0 || ox_operand(c, nd, 1, &in[1]) < 0)
            return APPROF_EPARSE;
        if (T(c, in[1])->ndim > T(c, in[0])->ndim ||
            approf_tensor_elements(T(c, in[1])) > approf_tensor_elements(T(c, in[0]))) {
            x = in[0];
            in[0] = in[1];
            in[1] = x;
        }
        return ox_emit(c, nd, add ? APPROF_OP_ADD : APPROF_OP_MUL, in, 2, NULL, NULL, 0);
    }
    if (!strcmp(op, "GlobalAveragePool")) {
        int64_t d[4];
        if (ox_operand(c, nd, 0, &x) < 0)
            return APPROF_EPARSE;
        if (T(c, x)->ndim != 4)
            return ox_err(c, APPROF_EPARSE, "%s: field input[0]: expected NCHW", nd->what);
        d[0] = T(c, x)->dims[0];
        d[1] = T(c, x)->dims[1];
        d[2] = d[3] = 1;
        x = ox_emit(c, nd, APPROF_OP_GLOBAL_POOL, &x, 1, NULL, NULL, 0);
        if (x < 0)
            return x;
        {
            /* ONNX keeps the [N, C, 1, 1] shape */
            char nm[APPROF_NAME_MAX];
            OxNode rn = *nd;
            snprintf(nm, sizeof nm, "%s/keepdims", nd->name);  /* fits: OX_NODE_NAME_MAX */
            rn.name = nm;
            return ox_emit(c, &rn, APPROF_OP_RESHAPE, &x, 1, NULL, d, 4);
        }
    }
    if (!strcmp(op, "Softmax")) {
        if (ox_operand(c, nd, 0, &x) < 0)
            return APPROF_EPARSE;
        /* before opset 13 the default axis is 1 (of the input coerced to 2-D) */
        a.axis = norm_axis(ox_attr_i(n, "axis", c->opset && c->opset < 13 ? 1 : -1), T(c, x)->ndim);
        if (a.axis < 0)
            return ox_err(c, APPROF_EPARSE, "%s: field attribute axis: out of range", nd->what);
        return ox_emit(c, nd, APPROF_OP_SOFTMAX, &x, 1, &a, NULL, 0);
    }
    if (!strcmp(op, "Reshape")) {
        const Onnx__TensorProto *s = ox_const_in(c, nd, 1);
        if (ox_operand(c, nd, 0, &x) < 0)
            return APPROF_EPARSE;
        /* opset < 5: the shape is an attribute */
        k = s ? ox_tp_ints(s, v, APPROF_MAX_DIMS) : ox_has_input(nd, 1) ? -1 : ox_attr_ints(n, "shape", v, APPROF_MAX_DIMS);
        return ox_reshape(c, nd, x, v, k);
    }
    if (!strcmp(op, "Flatten")) {
        int ax;
        if (ox_operand(c, nd, 0, &x) < 0)
            return APPROF_EPARSE;
        v[0] = ox_attr_i(n, "axis", 1);
        if (ox_attr_range(c, nd, "axis", v, 1, -T(c, x)->ndim, T(c, x)->ndim) < 0)
            return APPROF_EPARSE;
        ax = (int)v[0];
        if (ax < 0)
            ax += T(c, x)->ndim;
        v[0] = v[1] = 1;
        for (int d = 0; d < T(c, x)->ndim; d++)
            v[d >= ax] *= T(c, x)->dims[d];
        return ox_reshape(c, nd, x, v, 2);
    }
    if (!strcmp(op, "Transpose")) {
        int nd_ = 0;
        if (ox_operand(c, nd, 0, &x) < 0)
            return APPROF_EPARSE;
        nd_ = T(c, x)->ndim;
        k = ox_attr_ints(n, "perm", v, APPROF_MAX_DIMS);
        if (k == -1)
            for (k = 0; k < nd_; k++)
                v[k] = nd_ - 1 - k;
        if (k != nd_)
            return ox_err(c, APPROF_EPARSE, "%s: field attribute perm: expected %d values", nd->what, nd_);
        if (ox_attr_range(c, nd, "perm", v, nd_, 0, nd_ - 1) < 0)
            return APPROF_EPARSE;
        for (int d = 0; d < nd_; d++)
            a.perm[d] = (int)v[d];
        return ox_emit(c, nd, APPROF_OP_TRANSPOSE, &x, 1, &a, NULL, 0);
    }
    if (!strcmp(op, "Concat")) {
        if (n->n_input < 2 || n->n_input > APPROF_MAX_INPUTS)
            return ox_err(c, APPROF_EPARSE, "%s: field input: 2 to %d inputs supported", nd->what, APPROF_MAX_INPUTS);
        /* an empty operand (a past cache of length 0) adds nothing */
        x = 0;
        for (k = 0; k < (int)n->n_input; k++) {
            int ve = ox_val_find(c, n->input[k]);
            if (ve >= 0 && c->vals[ve].kind == V_EMPTY)
                continue;
            if (ox_operand(c, nd, k, &in[x++]) < 0)
                return APPROF_EPARSE;
        }
        if (x == 0)
            return ox_err(c, APPROF_EPARSE, "%s: field input: every operand is empty", nd->what);
        if (x == 1)
            return ox_alias(c, nd, in[0]);
        a.axis = norm_axis(ox_attr_i(n, "axis", 0), T(c, in[0])->ndim);
        if (a.axis < 0)
            return ox_err(c, APPROF_EPARSE, "%s: field attribute axis: out of range", nd->what);
        return ox_emit(c, nd, APPROF_OP_CONCAT, in, x, &a, NULL, 0);
    }
    if (!strcmp(op, "Slice")) {
        int64_t st, en, ax = 0, step = 1, dim, d[APPROF_MAX_DIMS];
        const Onnx__TensorProto *ts = ox_const_in(c, nd, 1), *te = ox_const_in(c, nd, 2);
        const Onnx__TensorProto *ta = ox_has_input(nd, 3) ? ox_const_in(c, nd, 3) : NULL;
        const Onnx__TensorProto *tt = ox_has_input(nd, 4) ? ox_const_in(c, nd, 4) : NULL;
        const Onnx__TensorProto *src = ox_const_in(c, nd, 0);
        ApprofDtype sdt;
        /* a constant that is no float (a boolean or uint8 mask buffer, as
         * Hugging Face's GPT-2 registers its causal mask `bias`): its slice
         * is a constant of the slice's shape, not a parameter */
        int mask = src && src->n_dims >= 1 && src->n_dims <= APPROF_MAX_DIMS &&
                   !ox_dtype_of(src->data_type, APPROF_F32, &sdt);
        int rank;
        if (!mask && ox_operand(c, nd, 0, &x) < 0)
            return APPROF_EPARSE;
        rank = mask ? (int)src->n_dims : T(c, x)->ndim;
        for (int i = 0; i < rank; i++)
            d[i] = mask ? src->dims[i] : T(c, x)->dims[i];
        if (!ts || !te || ox_tp_ints(ts, &st, 1) != 1 || ox_tp_ints(te, &en, 1) != 1 ||
            (ox_has_input(nd, 3) && (!ta || ox_tp_ints(ta, &ax, 1) != 1)) ||
            (ox_has_input(nd, 4) && (!tt || ox_tp_ints(tt, &step, 1) != 1)))
            return ox_err(c, APPROF_EPARSE, "%s: field input[1..4]: expected constant starts, ends, axes, steps over one axis", nd->what);
        a.axis = norm_axis(ax, rank);
        if (a.axis < 0 || step != 1)
            return ox_err(c, APPROF_EPARSE, "%s: field input[%d]: %s", nd->what, a.axis < 0 ? 3 : 4,
                        a.axis < 0 ? "axis out of range" : "only step 1 is supported");
        dim = d[a.axis];
        if (st < 0) st += dim;
        if (en < 0) en += dim;
        st = st < 0 ? 0 : st > dim ? dim : st;
        en = en < 0 ? 0 : en > dim ? dim : en;
        a.start = st;
        a.length = en - st;
        if (mask) {
            if (a.length < 1)
                return ox_err(c, APPROF_EPARSE, "%s: field input[1..2]: an empty slice", nd->what);
            d[a.axis] = a.length;
            k = nd->n->n_output ? ox_def_shaped(c, nd->n->output[0], V_CONST, src->data_type, d, rank) : 0;
            return k == APPROF_ENOMEM ? k : k < 0 ? ox_err(c, APPROF_EINVAL, "%s: too many values", nd->what) : 0;
        }
        if (a.length == dim)
            return ox_alias(c, nd, x);
        return ox_emit(c, nd, APPROF_OP_SLICE, &x, 1, &a, NULL, 0);
    }
    if (!strcmp(op, "Split")) {
        const Onnx__TensorProto *ts = ox_has_input(nd, 1) ? ox_const_in(c, nd, 1) : NULL;
        int cnt = (int)n->n_output;
        if (ox_operand(c, nd, 0, &x) < 0)
            return APPROF_EPARSE;
        a.axis = norm_axis(ox_attr_i(n, "axis", 0), T(c, x)->ndim);
        if (a.axis < 0)
            return ox_err(c, APPROF_EPARSE, "%s: field attribute axis: out of range", nd->what);
        if (cnt < 2 || cnt > APPROF_MAX_OUTPUTS)
            return ox_err(c, APPROF_EPARSE, "%s: field output: 2 to %d outputs supported", nd->what, APPROF_MAX_OUTPUTS);
        k = ts ? ox_tp_ints(ts, a.sizes, APPROF_MAX_OUTPUTS) : ox_attr_ints(n, "split", a.sizes, APPROF_MAX_OUTPUTS);
        if (ox_has_input(nd, 1) && !ts)
            return ox_err(c, APPROF_EPARSE, "%s: field input[1]: expected constant split sizes", nd->what);
        if (k < 0) {
            int64_t dim = T(c, x)->dims[a.axis];
            if (dim % cnt)
                return ox_err(c, APPROF_EINVAL, "%s: field output: %lld does not split in %d", nd->what, (long long)dim, cnt);
            for (k = 0; k < cnt; k++)
                a.sizes[k] = dim / cnt;
        }
        if (k != cnt)
            return ox_err(c, APPROF_EPARSE, "%s: field split: %d sizes for %d outputs", nd->what, k, cnt);
        if (ox_attr_range(c, nd, "split", a.sizes, k, 1, T(c, x)->dims[a.axis]) < 0)
            return APPROF_EPARSE;
        return ox_emit(c, nd, APPROF_OP_SPLIT, &x, 1, &a, NULL, 0);
    }
    if (!strcmp(op, "Gather")) {
        const Onnx__TensorProto *tab = ox_const_in(c, nd, 0);
        if (!tab || tab->n_dims != 2 || ox_attr_i(n, "axis", 0) != 0)
            return ox_err(c, APPROF_EPARSE, "%s: unsupported operator: Gather only as an embedding (axis 0 of a 2-D initializer)", nd->what);
        if (ox_operand(c, nd, 1, &in[0]) < 0 || ox_operand(c, nd, 0, &in[1]) < 0)
            return APPROF_EPARSE;
        return ox_emit(c, nd, APPROF_OP_EMBEDDING, in, 2, NULL, NULL, 0);
    }
    if (!strcmp(op, "Dropout")) {
        const Onnx__TensorProto *r = ox_has_input(nd, 1) ? ox_const_in(c, nd, 1) : NULL;
        const Onnx__AttributeProto *ra = ox_attr(n, "ratio");
        if (ox_operand(c, nd, 0, &x) < 0)
            return APPROF_EPARSE;
        a.rate = 0.5;
        if (ra && ra->has_f)
            a.rate = ra->f;
        else if (r && r->n_float_data == 1)
            a.rate = r->float_data[0];
        else if (r && r->has_raw_data && r->raw_data.len == 4 &&
                 r->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
            float f;
            memcpy(&f, r->raw_data.data, 4);
            a.rate = f;
        }
        /* the mask output (opset >= 7 exporters write it) when nothing reads it */
        if (ox_output_used(c, nd, 1))
            return ox_err(c, APPROF_EPARSE, "%s: field output[1]: a dropout mask that a node reads is not supported", nd->what);
        return ox_emit(c, nd, APPROF_OP_DROPOUT, &x, 1, &a, NULL, 0);
    }
    if (!strcmp(op, "Range")) {
        /* positions (torch.arange: Hugging Face's GPT-2 position_ids from
         * the past length): integer data, a non-trainable input of the
         * range's length */
        int64_t r3[3], len;
        for (k = 0; k < 3; k++) {
            const Onnx__TensorProto *t = ox_const_in(c, nd, k);
            if (!t || ox_tp_ints(t, &r3[k], 1) != 1)
                return ox_err(c, APPROF_EPARSE, "%s: field input[%d]: expected a constant integer", nd->what, k);
        }
        if (r3[2] == 0)
            return ox_err(c, APPROF_EPARSE, "%s: field input[2]: a delta of 0", nd->what);
        len = (r3[1] - r3[0] + r3[2] + (r3[2] > 0 ? -1 : 1)) / r3[2];
        if (len < 1 || len > ((int64_t)1 << 31))
            return ox_err(c, APPROF_EPARSE, "%s: field input: a range of %lld elements", nd->what, (long long)len);
        x = approf_graph_add_tensor(c->g, nd->name, APPROF_TENSOR_INPUT, APPROF_F32, 1, &len, -1);
        if (x < 0)
            return x == APPROF_ENOMEM ? x : ox_err(c, APPROF_EINVAL, "%s: field output[0]: a tensor of that name exists", nd->what);
        return ox_alias(c, nd, x);
    }
    if (!strcmp(op, "Where")) {
        /* a masked fill (Hugging Face's GPT-2: where(causal, scores,
         * -10000)): what a select costs, one operation an element, as an
         * add of the condition to the larger branch; a one-element
         * constant branch (the fill value, a buffer) is no operand */
        const Onnx__TensorProto *c1 = ox_const_in(c, nd, 1), *c2 = ox_const_in(c, nd, 2);
        int b1 = !(c1 && ox_tp_elements(c1) == 1), b2 = !(c2 && ox_tp_elements(c2) == 1);
        if (ox_operand(c, nd, 0, &in[1]) < 0)
            return APPROF_EPARSE;
        if (b1 && ox_operand(c, nd, 1, &in[0]) < 0)
            return APPROF_EPARSE;
        if (b2 && ox_operand(c, nd, 2, &in[2]) < 0)
            return APPROF_EPARSE;
        if (!b1 && !b2)
            return ox_err(c, APPROF_EPARSE, "%s: field input[1..2]: both branches are one-element constants", nd->what);
        if (!b1 || (b2 && approf_tensor_elements(T(c, in[2])) > approf_tensor_elements(T(c, in[0]))))
            in[0] = in[2];
        if (approf_tensor_elements(T(c, in[1])) > approf_tensor_elements(T(c, in[0])) ||
            T(c, in[1])->ndim > T(c, in[0])->ndim)
            return ox_err(c, APPROF_EPARSE, "%s: field input[0]: a condition larger than the values is not supported",
                          nd->what);
        return ox_emit(c, nd, APPROF_OP_ADD, in, 2, NULL, NULL, 0);
    }
    if (!strcmp(op, "SoftmaxCrossEntropyLoss")) {
        if (ox_operand(c, nd, 0, &in[0]) < 0 || ox_operand(c, nd, 1, &in[1]) < 0)
            return APPROF_EPARSE;
        return ox_emit(c, nd, APPROF_OP_CROSS_ENTROPY, in, 2, NULL, NULL, 0);
    }
    return ox_err(c, APPROF_EPARSE, "%s: unsupported operator '%s%s%s'", nd->what,
                n->domain && *n->domain ? n->domain : "", n->domain && *n->domain ? "." : "", op);
}
