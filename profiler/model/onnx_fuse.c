/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decomposed operators older exporters write (docs/models.md, section
 * ONNX), fused back into one IR operator when their first node (for GELU
 * as Erf, the Erf: the Div before it is an alias of x) is mapped:
 *   LayerNorm (torch.onnx before opset 17): ReduceMean(x) = m; Sub(x, m) =
 *     d; Pow(d, 2) = p; ReduceMean(p) = v; Add(v, eps); Sqrt; Div(d, sqrt)
 *     (or Div of a second Sub(x, m)); an optional Cast; Mul by a scale; Add
 *     of a bias -> layer_norm (axes over the last axis, as attribute before
 *     opset 18 or as input);
 *   GELU as Erf: Div(x, sqrt 2) (or Mul by 1/sqrt 2); Erf; Add(1); the
 *     products by x and by 0.5 in any order -> gelu;
 *   GELU's tanh form: Pow(x, 3) or x * (x * x); * 0.044715; + x;
 *     * sqrt(2 / pi); Tanh; + 1; the same products -> gelu;
 *   RMSNorm (transformers' LlamaRMSNorm through torch.onnx): Pow(x, 2);
 *     ReduceMean over the last axis; Add(eps); Sqrt; Div(1, .) or
 *     Reciprocal; Mul(x, .); an optional Cast; Mul by a scale -> rms_norm;
 *   Megatron-LM's (and BLOOM's) tanh GELU: x * 0.5, sqrt(2 / pi) * x, 0.044715 * x;
 *     (0.044715 x) * x; + 1; * (sqrt(2 / pi) x); Tanh; + 1; the products
 *     -> gelu (at its first node).
 * A pattern is fused only when nothing outside it reads an intermediate;
 * otherwise the node whose output is read elsewhere is named and refused.
 * Called by onnx_ops.c's ox_map_node for ReduceMean, Erf, Pow and Mul.
 */
#include <stdio.h>
#include <string.h>

#include "onnx_int.h"

#define MAX_PAT 12

static const char *nname(const Onnx__NodeProto *n)
{
    return n->name && *n->name ? n->name : "(unnamed)";
}

static const char *out0(const Onnx__NodeProto *n)
{
    return n->n_output && n->output[0] ? n->output[0] : "";
}

static int is(const Onnx__NodeProto *n, const char *op)
{
    return n->op_type && !strcmp(n->op_type, op);
}

/* 1 when one of the first max inputs of n is name. */
static int reads(const Onnx__NodeProto *n, const char *name, size_t max)
{
    for (size_t k = 0; k < n->n_input && k < max; k++)
        if (n->input[k] && !strcmp(n->input[k], name))
            return 1;
    return 0;
}

/* Exporters write a pattern's nodes together (Constants between them):
 * the searches look this many nodes around, which keeps a file of many
 * Erf or ReduceMean nodes linear. */
#define NEAR 64

/* The first node after from (and at most NEAR nodes after it) of type op
 * that reads name, or -1. */
static long reader(const Ox *c, const char *name, const char *op, size_t from)
{
    int v = ox_val_find(c, name);
    size_t i = v >= 0 && c->first_user[v] > (int)from ? (size_t)c->first_user[v] : from + 1;
    if (!*name)
        return -1;
    for (; i < c->gp->n_node && i <= from + NEAR; i++)
        if (is(c->gp->node[i], op) && reads(c->gp->node[i], name, 2))
            return (long)i;
    return -1;
}

/* The node within NEAR of node near whose output 0 is name, or -1. */
static long producer(const Ox *c, const char *name, size_t near)
{
    size_t i = near > NEAR ? near - NEAR : 0;
    if (!*name)
        return -1;
    for (; i < c->gp->n_node && i <= near + NEAR; i++)
        if (!strcmp(out0(c->gp->node[i]), name))
            return (long)i;
    return -1;
}

/* The other input of a two-input node than name, or NULL. */
static const char *other(const Onnx__NodeProto *n, const char *name)
{
    if (n->n_input != 2 || !n->input[0] || !n->input[1])
        return NULL;
    return !strcmp(n->input[0], name) ? n->input[1] : !strcmp(n->input[1], name) ? n->input[0] : NULL;
}

/* The constant named name: an initializer, a Constant's output (also one
 * the walk has not reached yet), or NULL. */
static const Onnx__TensorProto *const_val(const Ox *c, const char *name, size_t near)
{
    int v = name ? ox_val_find(c, name) : -1;
    long p;
    if (v >= 0 && (c->vals[v].kind == V_INIT || c->vals[v].kind == V_CONST) && c->vals[v].tp)
        return c->vals[v].tp;
    p = name ? producer(c, name, near) : -1;
    if (p >= 0 && is(c->gp->node[p], "Constant")) {
        const Onnx__AttributeProto *a = ox_attr(c->gp->node[p], "value");
        return a ? a->t : NULL;
    }
    return NULL;
}

/* 1 when name is a one-element float constant within tol of want. */
static int scalar_is(const Ox *c, const char *name, size_t near, double want, double tol)
{
    const Onnx__TensorProto *tp = const_val(c, name, near);
    double f;
    if (!tp || ox_tp_elements(tp) != 1)
        return 0;
    if (tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        float x;
        if (tp->n_float_data == 1)
            x = tp->float_data[0];
        else if (tp->has_raw_data && tp->raw_data.len == 4)
            memcpy(&x, tp->raw_data.data, 4);   /* little-endian hosts */
        else
            return 0;
        f = x;
    } else if (tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
        if (tp->n_double_data == 1)
            f = tp->double_data[0];
        else if (tp->has_raw_data && tp->raw_data.len == 8)
            memcpy(&f, tp->raw_data.data, 8);
        else
            return 0;
    } else {
        return 0;
    }
    return f - want <= tol && want - f <= tol;
}

/* 0 when only nodes of pat[0..np) read node p's output, else
 * APPROF_EPARSE naming node p and the outside reader (graph outputs are
 * not looked at, as onnx_ops.c's fusions do not). */
static int inside(Ox *c, long p, const long *pat, int np, const char *what)
{
    const Onnx__NodeProto *n = c->gp->node[p];
    const char *o = out0(n);
    int v = ox_val_find(c, o), mine = 0;
    for (int j = 0; j < np; j++)
        for (size_t k = 0; k < c->gp->node[pat[j]]->n_input && k < 2; k++)
            mine += c->gp->node[pat[j]]->input[k] && !strcmp(c->gp->node[pat[j]]->input[k], o);
    /* the uses say whether someone else reads it; the scan, once, who */
    for (size_t i = 0; v >= 0 && c->uses[v] > mine && i < c->gp->n_node; i++) {
        int in = 0;
        for (int j = 0; j < np; j++)
            in |= pat[j] == (long)i;
        if (!in && reads(c->gp->node[i], o, (size_t)-1))
            return ox_err(c, APPROF_EPARSE, "node '%s' (%s): field output[0]: read by node '%s' (%s) outside the %s "
                          "it is part of; only a pattern whose intermediates nothing else reads is fused",
                          nname(n), n->op_type, nname(c->gp->node[i]),
                          c->gp->node[i]->op_type ? c->gp->node[i]->op_type : "", what);
    }
    return 0;
}

/* 1 when ReduceMean n averages over the last of ndim axes, keeping them. */
static int mean_last(Ox *c, const Onnx__NodeProto *n, int ndim, size_t near)
{
    int64_t ax[2];
    int k = ox_attr_ints(n, "axes", ax, 2);
    if (k == -1 && n->n_input >= 2) {
        const Onnx__TensorProto *tp = const_val(c, n->input[1], near);
        k = tp ? ox_tp_ints(tp, ax, 2) : -1;
    }
    return k == 1 && norm_axis(ax[0], ndim) == ndim - 1 && ox_attr_i(n, "keepdims", 1) == 1;
}

/* Skips pat[1..np) and binds the output of node last to t. */
static int finish(Ox *c, const OxNode *nd, const long *pat, int np, long last, int t)
{
    OxNode ln = {c->gp->node[last], nd->name, ""};
    if (t < 0)
        return t;
    snprintf(ln.what, sizeof ln.what, "%s", nd->what);
    for (int j = 1; j < np; j++)
        c->skip[pat[j]] = 1;
    return ox_alias(c, &ln, t);
}

/* The denominator both decomposed norms share, after node p whose output
 * is the square: ReduceMean over the last of ndim axes, + a one-element
 * eps, Sqrt. The Sqrt's index (*rm, *ad the two before it), or -1. */
static long mean_eps_sqrt(Ox *c, long p, int ndim, size_t at, long *rm, long *ad)
{
    const char *s;
    if ((*rm = reader(c, out0(c->gp->node[p]), "ReduceMean", (size_t)p)) < 0 ||
        !mean_last(c, c->gp->node[*rm], ndim, at))
        return -1;
    if ((*ad = reader(c, out0(c->gp->node[*rm]), "Add", (size_t)*rm)) < 0 ||
        !(s = other(c->gp->node[*ad], out0(c->gp->node[*rm]))) || !const_val(c, s, at) ||
        ox_tp_elements(const_val(c, s, at)) != 1)
        return -1;
    return reader(c, out0(c->gp->node[*ad]), "Sqrt", (size_t)*ad);
}

#define LN_WHAT "decomposed LayerNormalization"

/* ReduceMean nd (index at) starting a decomposed LayerNorm: 1 with *rc, or
 * 0 when it does not start one. */
static int fuse_layer_norm(Ox *c, const OxNode *nd, size_t at, int *rc)
{
    const Onnx__NodeProto *n = nd->n, *q;
    long pat[MAX_PAT], sub, sub2 = -1, pw, rm, ad, sq, dv, cs = -1, mu, ab;
    const char *x, *d, *s;
    int np = 0, xt, in[3];
    OxNode mn, an;
    if (n->n_input < 1 || !n->input[0] || ox_val_find(c, n->input[0]) < 0 ||
        c->vals[ox_val_find(c, n->input[0])].kind != V_TENSOR)
        return 0;
    x = n->input[0];
    xt = c->vals[ox_val_find(c, x)].idx;
    if (!mean_last(c, n, T(c, xt)->ndim, at))
        return 0;
    /* the chain, found through the readers of each value */
    if ((sub = reader(c, out0(n), "Sub", at)) < 0 || (q = c->gp->node[sub])->n_input != 2 ||
        strcmp(q->input[0], x) || strcmp(q->input[1], out0(n)))
        return 0;
    d = out0(c->gp->node[sub]);
    if ((pw = reader(c, d, "Pow", (size_t)sub)) < 0 || c->gp->node[pw]->n_input != 2 ||
        strcmp(c->gp->node[pw]->input[0], d) || !scalar_is(c, c->gp->node[pw]->input[1], at, 2.0, 0))
        return 0;
    if ((sq = mean_eps_sqrt(c, pw, T(c, xt)->ndim, at, &rm, &ad)) < 0)
        return 0;
    if ((dv = reader(c, out0(c->gp->node[sq]), "Div", (size_t)sq)) < 0 || c->gp->node[dv]->n_input != 2 ||
        strcmp(c->gp->node[dv]->input[1], out0(c->gp->node[sq])))
        return 0;
    if (strcmp(c->gp->node[dv]->input[0], d)) {
        /* x - m computed a second time for the division (torch.onnx of
         * (x - u) / sqrt(s + eps) after s = (x - u).pow(2).mean(...):
         * Megatron-LM's and BERT's Python LayerNorm) */
        if ((sub2 = producer(c, c->gp->node[dv]->input[0], (size_t)dv)) < 0 || sub2 == sub ||
            !is(q = c->gp->node[sub2], "Sub") || q->n_input != 2 || strcmp(q->input[0], x) ||
            strcmp(q->input[1], out0(n)))
            return 0;
    }
    pat[np++] = (long)at;
    pat[np++] = sub;
    pat[np++] = pw;
    pat[np++] = rm;
    pat[np++] = ad;
    pat[np++] = sq;
    if (sub2 >= 0)
        pat[np++] = sub2;
    pat[np++] = dv;
    /* a Cast back to the input's type (`.type_as(x)`, mixed-precision
     * code) between the division and the scale */
    s = out0(c->gp->node[dv]);
    if ((cs = reader(c, s, "Cast", (size_t)dv)) >= 0) {
        pat[np++] = cs;
        s = out0(c->gp->node[cs]);
    }
    /* the scale and the bias: initializers, as LayerNormalization's */
    mu = reader(c, s, "Mul", (size_t)(cs >= 0 ? cs : dv));
    ab = mu >= 0 ? reader(c, out0(c->gp->node[mu]), "Add", (size_t)mu) : -1;
    if (mu < 0 || ab < 0) {
        *rc = ox_err(c, APPROF_EPARSE, "%s: the %s has no Mul by a scale and Add of a bias after its Div: "
                     "the IR's norms have both", nd->what, LN_WHAT);
        return 1;
    }
    pat[np++] = mu;
    pat[np++] = ab;
    for (int j = 0; j < np - 1; j++)
        if ((*rc = inside(c, pat[j], pat, np, LN_WHAT)) < 0)
            return 1;
    mn = (OxNode){c->gp->node[mu], nd->name, ""};
    an = (OxNode){c->gp->node[ab], nd->name, ""};
    snprintf(mn.what, sizeof mn.what, "node '%s' (Mul)", nname(mn.n));
    snprintf(an.what, sizeof an.what, "node '%s' (Add)", nname(an.n));
    {
        int ks = strcmp(mn.n->input[0], s) ? 0 : 1;
        int kb = strcmp(an.n->input[0], out0(mn.n)) ? 0 : 1;
        if (!ox_const_in(c, &mn, ks) || !ox_const_in(c, &an, kb)) {
            *rc = ox_err(c, APPROF_EPARSE, "%s: the %s's scale and bias: expected initializers", nd->what, LN_WHAT);
            return 1;
        }
        in[0] = xt;
        if (ox_operand(c, &mn, ks, &in[1]) < 0 || ox_operand(c, &an, kb, &in[2]) < 0) {
            *rc = APPROF_EPARSE;
            return 1;
        }
    }
    *rc = finish(c, nd, pat, np, ab, ox_emit(c, nd, APPROF_OP_LAYER_NORM, in, 3, NULL, NULL, 0));
    return 1;
}

#define RMS_WHAT "decomposed RMSNorm"

/* Pow nd (index at) starting a decomposed RMSNorm as torch.onnx writes
 * transformers' LlamaRMSNorm (x.pow(2).mean(-1, keepdim=True); x *
 * torch.rsqrt(v + eps); weight * x.to(dtype)): Pow(x, 2), ReduceMean over
 * the last axis, Add(eps), Sqrt, Div(1, sqrt) or Reciprocal, Mul(x, .), an
 * optional Cast, Mul by the scale -> rms_norm. 1 with *rc, else 0. */
static int fuse_rms_norm(Ox *c, const OxNode *nd, size_t at, int *rc)
{
    const Onnx__NodeProto *n = nd->n;
    long pat[MAX_PAT], rm, ad, sq, dv, mx, cs = -1, mw;
    const char *x, *s, *o;
    int np = 0, xt, in[2], v;
    OxNode wn;
    if (n->n_input != 2 || !n->input[0] || (v = ox_val_find(c, n->input[0])) < 0 || c->vals[v].kind != V_TENSOR ||
        !scalar_is(c, n->input[1], at, 2.0, 0))
        return 0;
    x = n->input[0];
    xt = c->vals[v].idx;
    if ((sq = mean_eps_sqrt(c, (long)at, T(c, xt)->ndim, at, &rm, &ad)) < 0)
        return 0;
    s = out0(c->gp->node[sq]);
    if ((dv = reader(c, s, "Reciprocal", (size_t)sq)) < 0 &&
        ((dv = reader(c, s, "Div", (size_t)sq)) < 0 || c->gp->node[dv]->n_input != 2 ||
         strcmp(c->gp->node[dv]->input[1], s) || !scalar_is(c, c->gp->node[dv]->input[0], at, 1.0, 0)))
        return 0;
    s = out0(c->gp->node[dv]);
    if ((mx = reader(c, s, "Mul", (size_t)dv)) < 0 || !(o = other(c->gp->node[mx], s)) || strcmp(o, x))
        return 0;
    pat[np++] = (long)at;
    pat[np++] = rm;
    pat[np++] = ad;
    pat[np++] = sq;
    pat[np++] = dv;
    pat[np++] = mx;
    s = out0(c->gp->node[mx]);
    if ((cs = reader(c, s, "Cast", (size_t)mx)) >= 0) {
        pat[np++] = cs;
        s = out0(c->gp->node[cs]);
    }
    if ((mw = reader(c, s, "Mul", (size_t)(cs >= 0 ? cs : mx))) < 0) {
        *rc = ox_err(c, APPROF_EPARSE, "%s: the %s has no Mul by a scale: the IR's rms_norm has one", nd->what,
                     RMS_WHAT);
        return 1;
    }
    pat[np++] = mw;
    for (int j = 0; j < np - 1; j++)
        if ((*rc = inside(c, pat[j], pat, np, RMS_WHAT)) < 0)
            return 1;
    wn = (OxNode){c->gp->node[mw], nd->name, ""};
    snprintf(wn.what, sizeof wn.what, "node '%s' (Mul)", nname(wn.n));
    {
        int ks = strcmp(wn.n->input[0], s) ? 0 : 1;
        if (!ox_const_in(c, &wn, ks)) {
            *rc = ox_err(c, APPROF_EPARSE, "%s: the %s's scale: expected an initializer", nd->what, RMS_WHAT);
            return 1;
        }
        in[0] = xt;
        if (ox_operand(c, &wn, ks, &in[1]) < 0) {
            *rc = APPROF_EPARSE;
            return 1;
        }
    }
    *rc = finish(c, nd, pat, np, mw, ox_emit(c, nd, APPROF_OP_RMS_NORM, in, 2, NULL, NULL, 0));
    return 1;
}

#define GELU_WHAT "GELU written with Erf"

/* A Mul node reading name by the one-element constant half: 1. */
static int by_half(const Ox *c, const Onnx__NodeProto *m, const char *name, size_t near)
{
    const char *o = other(m, name);
    return o && scalar_is(c, o, near, 0.5, 1e-6);
}

/* From the Add of 1 (node ad) on: the products by x and 0.5 in any order.
 * Appends ad and the products to pat (the Mul x * 0.5 of the third order,
 * written before, last: *h); *fin is the last node. 1 when they match. */
static int gelu_tail(const Ox *c, const char *x, long ad, size_t at, long *pat, int *np, long *fin, long *h)
{
    const char *a = out0(c->gp->node[ad]), *o;
    const Onnx__NodeProto *m1;
    long r1;
    *h = -1;
    if ((r1 = reader(c, a, "Mul", (size_t)ad)) < 0 || !(o = other(c->gp->node[r1], a)))
        return 0;
    m1 = c->gp->node[r1];
    if (!strcmp(o, x)) {                                /* (x * a) * 0.5 */
        if ((*fin = reader(c, out0(m1), "Mul", (size_t)r1)) < 0 || !by_half(c, c->gp->node[*fin], out0(m1), at))
            return 0;
    } else if (scalar_is(c, o, at, 0.5, 1e-6)) {        /* x * (a * 0.5) */
        if ((*fin = reader(c, out0(m1), "Mul", (size_t)r1)) < 0 || !(o = other(c->gp->node[*fin], out0(m1))) ||
            strcmp(o, x))
            return 0;
    } else if ((*h = producer(c, o, at)) >= 0 && is(c->gp->node[*h], "Mul") && reads(c->gp->node[*h], x, 2) &&
               by_half(c, c->gp->node[*h], x, at)) {   /* (x * 0.5) * a */
        *fin = r1;
    } else {
        return 0;
    }
    pat[(*np)++] = ad;
    pat[(*np)++] = r1;
    if (*fin != r1)
        pat[(*np)++] = *fin;
    if (*h >= 0)
        pat[(*np)++] = *h;
    return 1;
}

/* Checks that nothing outside pat reads an intermediate (every node but
 * fin), skips pat[skip0..np) but the x * 0.5 node h (mapped on its own, an
 * alias of x) and emits the gelu of tensor xt at nd. */
static int gelu_emit(Ox *c, const OxNode *nd, long *pat, int np, int skip0, long fin, long h, int xt,
                     const char *what)
{
    int rc;
    for (int j = 0; j < np; j++)
        if (pat[j] != fin && (rc = inside(c, pat[j], pat, np, what)) < 0)
            return rc;
    if (h >= 0)
        np--;   /* h is last */
    return finish(c, nd, pat + skip0, np - skip0, fin, ox_emit(c, nd, APPROF_OP_GELU, &xt, 1, NULL, NULL, 0));
}

/* Erf nd (index at) inside x * 0.5 * (1 + erf(x / sqrt 2)): 1 with *rc, or
 * 0 when it is not. */
static int fuse_gelu(Ox *c, const OxNode *nd, size_t at, int *rc)
{
    const Onnx__NodeProto *n = nd->n, *dn;
    long pat[MAX_PAT], dv, ad, fin, h;
    const char *x, *e = out0(n), *o;
    int np = 0, v;
    if (n->n_input != 1 || (dv = producer(c, n->input[0], at)) < 0)
        return 0;
    dn = c->gp->node[dv];
    if (!((is(dn, "Div") && dn->n_input == 2 && scalar_is(c, dn->input[1], at, 1.4142135623730951, 1e-4)) ||
          (is(dn, "Mul") && dn->n_input == 2 && scalar_is(c, dn->input[1], at, 0.7071067811865476, 1e-4))))
        return 0;
    x = dn->input[0];
    v = ox_val_find(c, x);
    if (v < 0 || c->vals[v].kind != V_TENSOR)
        return 0;
    if ((ad = reader(c, e, "Add", at)) < 0 || !(o = other(c->gp->node[ad], e)) || !scalar_is(c, o, at, 1.0, 1e-6))
        return 0;
    pat[np++] = dv;     /* ran already, an alias of x: not skipped */
    pat[np++] = (long)at;
    if (!gelu_tail(c, x, ad, at, pat, &np, &fin, &h))
        return 0;
    *rc = gelu_emit(c, nd, pat, np, 1, fin, h, c->vals[v].idx, GELU_WHAT);
    return 1;
}

/* One step along a decomposed pattern: the reader by op of *cur after node
 * from whose other operand is the one-element constant want (within tol):
 * appended to pat, *cur its output. Its index, or -1. */
static long step_scalar(const Ox *c, const char **cur, const char *op, long from, size_t at,
                        double want, double tol, long *pat, int *np)
{
    long k = reader(c, *cur, op, (size_t)from);
    const char *o;
    if (k < 0 || !(o = other(c->gp->node[k], *cur)) || !scalar_is(c, o, at, want, tol))
        return -1;
    pat[(*np)++] = k;
    *cur = out0(c->gp->node[k]);
    return k;
}

/* The same step whose other operand is the value named name. */
static long step_with(const Ox *c, const char **cur, const char *op, long from, const char *name,
                      long *pat, int *np)
{
    long k = reader(c, *cur, op, (size_t)from);
    const char *o;
    if (k < 0 || !(o = other(c->gp->node[k], *cur)) || strcmp(o, name))
        return -1;
    pat[(*np)++] = k;
    *cur = out0(c->gp->node[k]);
    return k;
}

/* The end both tanh forms share after node k (output cur): Tanh, + 1, then
 * gelu_tail's times x and times 0.5. 1, or 0 when it is not there. */
static int tanh_one_tail(const Ox *c, const char *cur, long k, const char *x, size_t at, long *pat,
                         int *np, long *fin, long *h)
{
    long ad;
    const char *o;
    if ((k = reader(c, cur, "Tanh", (size_t)k)) < 0)
        return 0;
    pat[(*np)++] = k;
    cur = out0(c->gp->node[k]);
    if ((ad = reader(c, cur, "Add", (size_t)k)) < 0 || !(o = other(c->gp->node[ad], cur)) ||
        !scalar_is(c, o, at, 1.0, 1e-6))
        return 0;
    return gelu_tail(c, x, ad, at, pat, np, fin, h);
}

#define TANH_WHAT "GELU written with Tanh"

/* Pow(x, 3) or Mul(x, x) nd (index at) starting x * 0.5 * (1 + tanh(
 * sqrt(2 / pi) * (x + 0.044715 * x^3))): 1 with *rc, or 0 when it is not. */
static int fuse_gelu_tanh(Ox *c, const OxNode *nd, size_t at, int *rc)
{
    const Onnx__NodeProto *n = nd->n;
    long pat[MAX_PAT], k, fin, h;
    const char *x, *cur;
    int np = 0, v;
    if (n->n_input != 2 || !(x = n->input[0]) || (v = ox_val_find(c, x)) < 0 || c->vals[v].kind != V_TENSOR)
        return 0;
    pat[np++] = (long)at;
    cur = out0(n);
    if (is(n, "Mul")) {         /* x * x, then times x */
        if (strcmp(n->input[1], x) || step_with(c, &cur, "Mul", (long)at, x, pat, &np) < 0)
            return 0;
    } else if (!scalar_is(c, n->input[1], at, 3.0, 0)) {
        return 0;
    }
    /* * 0.044715, + x, * sqrt(2 / pi), Tanh, + 1 */
    if ((k = step_scalar(c, &cur, "Mul", pat[np - 1], at, 0.044715, 1e-6, pat, &np)) < 0 ||
        (k = step_with(c, &cur, "Add", k, x, pat, &np)) < 0 ||
        (k = step_scalar(c, &cur, "Mul", k, at, 0.7978845608028654, 1e-4, pat, &np)) < 0 ||
        !tanh_one_tail(c, cur, k, x, at, pat, &np, &fin, &h))
        return 0;
    *rc = gelu_emit(c, nd, pat, np, 0, fin, h, c->vals[v].idx, TANH_WHAT);
    return 1;
}

#define MEGA_WHAT "GELU written as x * 0.5 * (1 + tanh(0.79788 * x * (1 + 0.044715 * x * x)))"

/* The Mul node within NEAR of near that multiplies x by the one-element
 * constant want, or -1. */
static long mul_by(const Ox *c, const char *x, double want, double tol, size_t near)
{
    size_t i = near > NEAR ? near - NEAR : 0;
    const char *o;
    for (; i < c->gp->n_node && i <= near + NEAR; i++)
        if (is(c->gp->node[i], "Mul") && (o = other(c->gp->node[i], x)) && scalar_is(c, o, near, want, tol))
            return (long)i;
    return -1;
}

/* Mul nd (index at) of x by 0.5, sqrt(2 / pi) or 0.044715, the first node
 * of x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))
 * as torch.onnx writes it (Megatron-LM's bias_gelu,
 * megatron/model/fused_bias_gelu.py; transformers' bloom_gelu_forward,
 * models/bloom/modeling_bloom.py): 1 with *rc, or 0 when it is not. */
static int fuse_gelu_mega(Ox *c, const OxNode *nd, size_t at, int *rc)
{
    const Onnx__NodeProto *n = nd->n;
    long pat[MAX_PAT], bm, cm, k, fin, h, lo = (long)at;
    const char *x = NULL, *o, *cur;
    int np = 0, v = -1;
    for (int i = 0; i < 2 && n->n_input == 2; i++)
        if ((v = ox_val_find(c, n->input[i])) >= 0 && c->vals[v].kind == V_TENSOR) {
            x = n->input[i];
            break;
        }
    if (!x || (o = other(n, x)) == NULL ||
        !(scalar_is(c, o, at, 0.5, 1e-6) || scalar_is(c, o, at, 0.7978845608028654, 1e-4) ||
          scalar_is(c, o, at, 0.044715, 1e-6)))
        return 0;
    if ((bm = mul_by(c, x, 0.7978845608028654, 1e-4, at)) < 0 || (cm = mul_by(c, x, 0.044715, 1e-6, at)) < 0)
        return 0;
    pat[np++] = (long)at;
    if (bm != (long)at)
        pat[np++] = bm;
    if (cm != (long)at)
        pat[np++] = cm;
    /* (0.044715 x) * x, + 1, * (0.79788 x), Tanh, + 1 */
    cur = out0(c->gp->node[cm]);
    if ((k = step_with(c, &cur, "Mul", cm, x, pat, &np)) < 0 ||
        (k = step_scalar(c, &cur, "Add", k, at, 1.0, 1e-6, pat, &np)) < 0 ||
        (k = step_with(c, &cur, "Mul", k, out0(c->gp->node[bm]), pat, &np)) < 0 ||
        !tanh_one_tail(c, cur, k, x, at, pat, &np, &fin, &h))
        return 0;
    /* fused at the pattern's first node: one before nd was mapped already */
    for (int j = 0; j < np; j++)
        lo = pat[j] < lo ? pat[j] : lo;
    if (lo != (long)at)
        return 0;
    if (h == (long)at)
        np--, h = -1;   /* nd is x * 0.5 itself: pat[0] */
    *rc = gelu_emit(c, nd, pat, np, 0, fin, h, c->vals[v].idx, MEGA_WHAT);
    return 1;
}

int ox_fuse(Ox *c, const OxNode *nd, size_t at, int *rc)
{
    if (is(nd->n, "ReduceMean"))
        return fuse_layer_norm(c, nd, at, rc);
    if (is(nd->n, "Erf"))
        return fuse_gelu(c, nd, at, rc);
    if (is(nd->n, "Pow"))
        return fuse_rms_norm(c, nd, at, rc) || fuse_gelu_tanh(c, nd, at, rc);
    if (is(nd->n, "Mul"))
        return fuse_gelu_tanh(c, nd, at, rc) || fuse_gelu_mega(c, nd, at, rc);
    return 0;
}
