/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ONNX operators onto the IR, the ones the model-zoo CNNs and exporters'
 * plain layers use (schemas/model-format.md, section ONNX; docs/models.md):
 * Conv and pooling with any padding (pads, auto_pad SAME_UPPER, SAME_LOWER,
 * VALID, ceil_mode) as the IR's symmetric padding of the same output size,
 * LRN, Sum (n-ary add), Squeeze and Unsqueeze (axes as an attribute before
 * opset 13, as an input from it on), and Gemm (transA, transB, alpha, beta,
 * a bias of any broadcast shape). Called by onnx_ops.c's ox_map_node.
 */
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"

/* The output size ONNX gives a window of k at stride s over in with pads
 * pb + pe (ceil_mode: a last window that starts inside the input or the
 * leading pad counts), or -1 when the window does not fit. */
static int64_t onnx_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int ceil)
{
    int64_t span = in + pb + pe - k, out;
    if (span < 0)
        return -1;
    out = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (out - 1) * s >= in + pb)
        out--;
    return out;
}

static int pad_gives(int64_t in, int64_t k, int64_t s, int64_t p, int64_t want)
{
    return in + 2 * p - k >= 0 && (in + 2 * p - k) / s + 1 == want;
}

/* A symmetric padding p with floor((in + 2p - k) / s) + 1 == want (the IR
 * pads both ends alike; a conv's or pool's cost depends on its output size
 * and window, not on where the padding lies): half the total pads when that
 * fits (rounded down, then up), else the smallest that does (the least p
 * with in + 2p - k >= (want - 1) s); or -1. */
static int64_t fit_pad(int64_t in, int64_t k, int64_t s, int64_t total, int64_t want)
{
    int64_t lo = (want - 1) * s + k - in;
    if (pad_gives(in, k, s, total / 2, want))
        return total / 2;
    if (pad_gives(in, k, s, (total + 1) / 2, want))
        return (total + 1) / 2;
    lo = lo > 0 ? (lo + 1) / 2 : 0;
    return lo <= MAX_WINDOW && pad_gives(in, k, s, lo, want) ? lo : -1;
}

static int attr_is(const Onnx__AttributeProto *ap, const char *s)
{
    return ap && ap->has_s && ap->s.len == strlen(s) && !memcmp(ap->s.data, s, ap->s.len);
}

/* kernel_shape (else the weight w's), strides and the padding of a 2-D conv
 * or pool over x: pads, or auto_pad SAME_UPPER / SAME_LOWER (output
 * ceil(in / stride)) or VALID, and ceil_mode, as one symmetric padding per
 * dim of the same output size. */
static int window(Ox *c, const OxNode *nd, ApprofOpAttrs *a, const ApprofTensor *x, const ApprofTensor *w)
{
    int64_t v[8], pads[4] = {0, 0, 0, 0};
    int n, same = 0, ceil;
    const Onnx__AttributeProto *ap = ox_attr(nd->n, "auto_pad");
    if (x->ndim != 4)
        return ox_err(c, APPROF_EPARSE, "%s: field input[0]: expected NCHW (2-D only)", nd->what);
    if (attr_is(ap, "SAME_UPPER") || attr_is(ap, "SAME_LOWER"))
        same = 1;
    else if (ap && ap->has_s && ap->s.len && !attr_is(ap, "NOTSET") && !attr_is(ap, "VALID"))
        return ox_err(c, APPROF_EPARSE, "%s: field attribute auto_pad: expected NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                      nd->what);
    n = ox_attr_ints(nd->n, "kernel_shape", v, 2);
    if (n == 2) {
        if (ox_attr_range(c, nd, "kernel_shape", v, 2, 1, MAX_WINDOW) < 0)
            return APPROF_EPARSE;
    } else if (n == -1 && w) {
        v[0] = w->dims[2];
        v[1] = w->dims[3];
        if (ox_attr_range(c, nd, "kernel_shape (from the weight's dims)", v, 2, 1, MAX_WINDOW) < 0)
            return APPROF_EPARSE;
    } else {
        return ox_err(c, APPROF_EPARSE, "%s: field attribute kernel_shape: expected 2 values (2-D only)", nd->what);
    }
    a->kernel[0] = (int)v[0];
    a->kernel[1] = (int)v[1];
    a->stride[0] = a->stride[1] = 1;
    n = ox_attr_ints(nd->n, "strides", v, 2);
    if (n == 2) {
        if (ox_attr_range(c, nd, "strides", v, 2, 1, MAX_WINDOW) < 0)
            return APPROF_EPARSE;
        a->stride[0] = (int)v[0];
        a->stride[1] = (int)v[1];
    } else if (n != -1) {
        return ox_err(c, APPROF_EPARSE, "%s: field attribute strides: expected 2 values", nd->what);
    }
    n = ox_attr_ints(nd->n, "pads", pads, 4);
    if (n == 4) {
        if (ox_attr_range(c, nd, "pads", pads, 4, 0, MAX_WINDOW) < 0)
            return APPROF_EPARSE;
        if (ap && ap->has_s && ap->s.len && !attr_is(ap, "NOTSET"))
            return ox_err(c, APPROF_EPARSE, "%s: field attribute pads: given with auto_pad", nd->what);
    } else if (n != -1) {
        return ox_err(c, APPROF_EPARSE, "%s: field attribute pads: expected 4 values", nd->what);
    }
    n = ox_attr_ints(nd->n, "dilations", v, 2);
    if (n >= 0 && (n != 2 || v[0] != 1 || v[1] != 1))
        return ox_err(c, APPROF_EPARSE, "%s: field attribute dilations: only 1 is supported", nd->what);
    ceil = ox_attr_i(nd->n, "ceil_mode", 0) != 0;
    for (int d = 0; d < 2; d++) {
        int64_t in = x->dims[2 + d], k = a->kernel[d], s = a->stride[d], want, p, total;
        want = same ? (in + s - 1) / s : onnx_out(in, k, s, pads[d], pads[d + 2], ceil);
        total = same ? (want - 1) * s + k - in : pads[d] + pads[d + 2];
        if (want < 1)
            return ox_err(c, APPROF_EINVAL, "%s: field attribute kernel_shape: window %lld does not fit input %lld",
                          nd->what, (long long)k, (long long)in);
        p = fit_pad(in, k, s, total > 0 ? total : 0, want);
        if (p < 0 && want == 1) {
            /* one window along d (the zoo's Caffe2 GoogLeNet: a 7x7
             * average over 6x6 with pads [0, 0, 1, 1]): where it starts
             * and the stride change nothing it computes, so the least
             * symmetric padding that fits the window and a stride past the
             * rest of the span give the one output */
            p = k > in ? (k - in + 1) / 2 : 0;
            if (p <= MAX_WINDOW && in + 2 * p - k + 1 <= MAX_WINDOW)
                a->stride[d] = (int)(in + 2 * p - k + 1);
            else
                p = -1;
        }
        if (p < 0)
            return ox_err(c, APPROF_EPARSE, "%s: field attribute %s: no symmetric padding gives the output size %lld "
                          "(input %lld, kernel %lld, stride %lld)", nd->what, same ? "auto_pad" : ceil ? "ceil_mode" : "pads",
                          (long long)want, (long long)in, (long long)k, (long long)s);
        a->padding[d] = (int)p;
    }
    return 0;
}

static int map_conv(Ox *c, const OxNode *nd)
{
    ApprofOpAttrs a = {0};
    int in[3], k = 2;
    int64_t g;
    if (ox_operand(c, nd, 0, &in[0]) < 0 || ox_operand(c, nd, 1, &in[1]) < 0)
        return APPROF_EPARSE;
    if (T(c, in[1])->ndim != 4)
        return ox_err(c, APPROF_EPARSE, "%s: field input[1]: expected a 4-D weight (2-D convolutions only)", nd->what);
    if (window(c, nd, &a, T(c, in[0]), T(c, in[1])) < 0)
        return APPROF_EPARSE;
    g = ox_attr_i(nd->n, "group", 1);
    if (ox_attr_range(c, nd, "group", &g, 1, 1, MAX_GROUPS) < 0)
        return APPROF_EPARSE;
    a.groups = (int)g;
    if (ox_has_input(nd, 2)) {
        if (ox_operand(c, nd, 2, &in[2]) < 0)
            return APPROF_EPARSE;
        a.has_bias = 1;
        k = 3;
    }
    return ox_emit(c, nd, APPROF_OP_CONV2D, in, k, &a, NULL, 0);
}

static int map_pool(Ox *c, const OxNode *nd, int max)
{
    ApprofOpAttrs a = {0};
    int x;
    if (ox_operand(c, nd, 0, &x) < 0 || window(c, nd, &a, T(c, x), NULL) < 0)
        return APPROF_EPARSE;
    if (ox_output_used(c, nd, 1))
        return ox_err(c, APPROF_EPARSE, "%s: field output[1]: MaxPool indices that a node reads are not supported", nd->what);
    return ox_emit(c, nd, max ? APPROF_OP_MAX_POOL : APPROF_OP_AVG_POOL, &x, 1, &a, NULL, 0);
}

/* Sum: an add per further operand, the largest operand first (the IR's
 * add broadcasts its second operand); the last one carries the node's name. */
static int map_sum(Ox *c, const OxNode *nd)
{
    enum { MAX_SUM = 64 };
    int t[MAX_SUM] = {0}, n = (int)(nd->n->n_input < MAX_SUM + 1 ? nd->n->n_input : MAX_SUM + 1), big = 0, acc;
    char nm[APPROF_NAME_MAX];
    if (n < 1 || n > MAX_SUM)
        return ox_err(c, APPROF_EPARSE, "%s: field input: 1 to %d inputs supported", nd->what, MAX_SUM);
    for (int k = 0; k < n; k++) {
        if (ox_operand(c, nd, k, &t[k]) < 0)
            return APPROF_EPARSE;
        if (T(c, t[k])->ndim > T(c, t[big])->ndim ||
            approf_tensor_elements(T(c, t[k])) > approf_tensor_elements(T(c, t[big])))
            big = k;
    }
    acc = t[big];
    if (n == 1)
        return ox_alias(c, nd, acc);
    for (int k = 0, done = 1; k < n; k++) {
        OxNode sn = *nd;
        int in[2] = {acc, t[k]};
        if (k == big)
            continue;
        if (++done < n) {
            snprintf(nm, sizeof nm, "%s/add%d", nd->name, done - 1);  /* fits: OX_NODE_NAME_MAX */
            sn.name = nm;
        }
        acc = ox_emit(c, &sn, APPROF_OP_ADD, in, 2, NULL, NULL, 0);
        if (acc < 0)
            return acc;
    }
    return acc;
}

/* Squeeze / Unsqueeze: a reshape (it costs nothing). The axes are input 1
 * (opset 13 on) or the attribute axes (before); Squeeze without axes drops
 * every dim of 1. */
static int map_squeeze(Ox *c, const OxNode *nd, int un)
{
    int64_t axes[APPROF_MAX_DIMS], d[APPROF_MAX_DIMS];
    const Onnx__TensorProto *ta = ox_has_input(nd, 1) ? ox_const_in(c, nd, 1) : NULL;
    int x, na, r, out_r, n = 0;
    unsigned char mark[APPROF_MAX_DIMS] = {0};
    if (ox_operand(c, nd, 0, &x) < 0)
        return APPROF_EPARSE;
    if (ox_has_input(nd, 1) && !ta)
        return ox_err(c, APPROF_EPARSE, "%s: field input[1]: expected constant axes", nd->what);
    na = ta ? ox_tp_ints(ta, axes, APPROF_MAX_DIMS) : ox_attr_ints(nd->n, "axes", axes, APPROF_MAX_DIMS);
    if (na < -1 || (ta && na < 0) || (un && na < 1))
        return ox_err(c, APPROF_EPARSE, "%s: field %s: expected 1 to %d axes", nd->what, ta ? "input[1]" : "attribute axes",
                      APPROF_MAX_DIMS);
    r = T(c, x)->ndim;
    out_r = un ? r + na : r;
    if (out_r > APPROF_MAX_DIMS)
        return ox_err(c, APPROF_EPARSE, "%s: field axes: rank %d above %d", nd->what, out_r, APPROF_MAX_DIMS);
    for (int i = 0; i < na; i++) {
        int ax = norm_axis(axes[i], out_r);
        if (ax < 0 || mark[ax] || (!un && T(c, x)->dims[ax] != 1))
            return ox_err(c, APPROF_EPARSE, "%s: field axes: axis %lld %s", nd->what, (long long)axes[i],
                          ax < 0 ? "out of range" : mark[ax] ? "given twice" : "is not of size 1");
        mark[ax] = 1;
    }
    if (un) {
        for (int i = 0, j = 0; i < out_r; i++)
            d[n++] = mark[i] ? 1 : T(c, x)->dims[j++];
    } else {
        for (int i = 0; i < r; i++)
            if (na > 0 ? !mark[i] : T(c, x)->dims[i] != 1)
                d[n++] = T(c, x)->dims[i];
    }
    return ox_reshape(c, nd, x, d, n);
}

/* A bias initializer of n elements ([n] or [1, n]) read as the parameter
 * [n]: 0 with *t, or 1 when it is not one (another shape, or read before). */
static int bias_vector(Ox *c, const OxNode *nd, int k, int64_t n, int *t)
{
    int v = ox_val_find(c, nd->n->input[k]);
    const Onnx__TensorProto *tp;
    ApprofDtype dt;
    int r;
    if (v < 0 || c->vals[v].kind != V_INIT || !(tp = c->vals[v].tp) || ox_tp_elements(tp) != n ||
        !(tp->n_dims == 1 || (tp->n_dims == 2 && tp->dims[0] == 1)) ||
        ox_name_ok(c, "initializer", "name", nd->n->input[k], APPROF_NAME_MAX - 1) < 0)
        return 1;
    ox_dtype_of(tp->data_type, c->g->dtype, &dt);
    r = approf_graph_add_tensor(c->g, nd->n->input[k], APPROF_TENSOR_PARAM, dt, 1, &n, -1);
    if (r < 0)
        return r == APPROF_ENOMEM ? r : ox_err(c, APPROF_EINVAL, "%s: field input[%d]: absurd size", nd->what, k);
    c->vals[v].kind = V_TENSOR;
    c->vals[v].idx = r;
    c->vals[v].tp = NULL;
    *t = r;
    return 0;
}

/* Gemm: alpha * A' B' + beta * C. alpha is folded away (as a Mul by a
 * one-element constant is); beta 0 drops C. transA: a batch_matmul that
 * reads A transposed; else a matmul (transB: the weight [n, k]) whose
 * bias is C when C is a vector of n, else an add of C after it. */
static int map_gemm(Ox *c, const OxNode *nd)
{
    ApprofOpAttrs a = {0};
    const Onnx__AttributeProto *bp = ox_attr(nd->n, "beta");
    int in[3], y, ta = ox_attr_i(nd->n, "transA", 0) != 0, n_in = 2;
    int has_c = ox_has_input(nd, 2) && !(bp && bp->has_f && bp->f == 0.0f);
    int64_t nn;
    if (ox_operand(c, nd, 0, &in[0]) < 0 || ox_operand(c, nd, 1, &in[1]) < 0)
        return APPROF_EPARSE;
    if (T(c, in[0])->ndim != 2 || T(c, in[1])->ndim != 2)
        return ox_err(c, APPROF_EPARSE, "%s: field input[%d]: Gemm needs matrices", nd->what, T(c, in[0])->ndim != 2 ? 0 : 1);
    a.transpose_b = ox_attr_i(nd->n, "transB", 0) != 0;
    nn = T(c, in[1])->dims[a.transpose_b ? 0 : 1];
    if (ta) {
        a.transpose_a = 1;
        y = ox_emit(c, nd, APPROF_OP_BATCH_MATMUL, in, 2, &a, NULL, 0);
    } else {
        if (has_c) {
            int r = bias_vector(c, nd, 2, nn, &in[2]);
            if (r < 0)
                return r;
            if (r == 0) {
                a.has_bias = 1;
                n_in = 3;
                has_c = 0;
            }
        }
        y = ox_emit(c, nd, APPROF_OP_MATMUL, in, n_in, &a, NULL, 0);
    }
    if (y < 0 || !has_c)
        return y;
    {
        char nm[APPROF_NAME_MAX];
        OxNode bn = *nd;
        int add[2] = {y, 0};
        snprintf(nm, sizeof nm, "%s/bias", nd->name);  /* fits: OX_NODE_NAME_MAX */
        bn.name = nm;
        if (ox_operand(c, nd, 2, &add[1]) < 0)
            return APPROF_EPARSE;
        return ox_emit(c, &bn, APPROF_OP_ADD, add, 2, NULL, NULL, 0);
    }
}

int ox_map_more(Ox *c, const OxNode *nd, int *rc)
{
    const char *op = nd->n->op_type ? nd->n->op_type : "";
    int x;
    if (!strcmp(op, "Conv"))
        *rc = map_conv(c, nd);
    else if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool"))
        *rc = map_pool(c, nd, op[0] == 'M');
    else if (!strcmp(op, "Sum"))
        *rc = map_sum(c, nd);
    else if (!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze"))
        *rc = map_squeeze(c, nd, op[0] == 'U');
    else if (!strcmp(op, "Gemm"))
        *rc = map_gemm(c, nd);
    else if (!strcmp(op, "LRN"))
        /* across channels: square, a window sum of size, scale, power and
         * divide, about 8 operations an element each way: what gelu costs */
        *rc = ox_operand(c, nd, 0, &x) < 0 ? APPROF_EPARSE : ox_emit(c, nd, APPROF_OP_GELU, &x, 1, NULL, NULL, 0);
    else
        return 0;
    return 1;
}
