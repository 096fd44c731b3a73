/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Buffers among the initializers (docs/models.md, section ONNX). torch.onnx
 * writes a module's registered buffers and its parameters alike as
 * initializers, so the file does not say which ones train. One buffer has
 * a shape the data flow gives away: the inverse frequencies of a rotary
 * embedding (transformers' LlamaRotaryEmbedding.inv_freq, registered with
 * persistent=False), which the export keeps as an initializer and reads as
 * inv_freq[None, :, None].expand(B, -1, 1) @ positions, then cat, cos and
 * sin. The rule: a float initializer is a buffer when
 *   - every path from it runs through position math only (Expand,
 *     Unsqueeze, Squeeze, Reshape, Cast, Transpose, Identity, Slice,
 *     Concat, MatMul, Mul, Div) and ends in a Cos or a Sin, none in a graph
 *     output or any other operator, and
 *   - every other operand those nodes read is computed from integer graph
 *     inputs (ids, positions), constants and integer or one-element
 *     initializers only: never a parameter nor float data (sin(x W) of a
 *     SIREN trains W: it stays a parameter and its Sin is refused).
 * What it computes needs no gradient, so nothing trains it. A parameter
 * that only reaches Cos or Sin (a learned frequency) would read as a
 * buffer too: no exporter we read writes one.
 */
#include <string.h>

#include "onnx_int.h"

#define MAX_PATH 32     /* values on the paths from one initializer */
#define MAX_DEPTH 24    /* producers walked back from an operand */

static int op_is(const Onnx__NodeProto *n, const char *const *ops)
{
    for (int i = 0; ops[i]; i++)
        if (n->op_type && !strcmp(n->op_type, ops[i]))
            return 1;
    return 0;
}

static const char *const path_ops[] = {"Expand", "Unsqueeze", "Squeeze", "Reshape", "Cast", "Transpose",
                                       "Identity", "Slice", "Concat", "MatMul", "Mul", "Div", NULL};
static const char *const ends[] = {"Cos", "Sin", NULL};

static int is_output(const Ox *c, const char *name)
{
    for (size_t i = 0; i < c->gp->n_output; i++)
        if (c->gp->output[i]->name && !strcmp(c->gp->output[i]->name, name))
            return 1;
    return 0;
}

/* 1 when name is computed from graph inputs, constants and integer or
 * one-element initializers only (or is self). */
static int no_param(const Ox *c, const char *name, const char *self, int depth)
{
    int v;
    if (!name || !*name || !strcmp(name, self))
        return 1;
    if (depth > MAX_DEPTH)
        return 0;
    v = ox_val_find(c, name);
    if (v >= 0 && c->vals[v].kind == V_INIT) {
        ApprofDtype dt;
        return !ox_dtype_of(c->vals[v].tp->data_type, APPROF_F32, &dt) || ox_tp_elements(c->vals[v].tp) == 1;
    }
    for (size_t i = 0; i < c->gp->n_node; i++) {
        const Onnx__NodeProto *n = c->gp->node[i];
        for (size_t o = 0; o < n->n_output; o++)
            if (n->output[o] && !strcmp(n->output[o], name)) {
                for (size_t k = 0; k < n->n_input; k++)
                    if (!no_param(c, n->input[k], self, depth + 1))
                        return 0;
                return 1;
            }
    }
    for (size_t i = 0; i < c->gp->n_input; i++) {
        const Onnx__ValueInfoProto *in = c->gp->input[i];
        ApprofDtype dt;
        if (in->name && !strcmp(in->name, name))
            return !(in->type && in->type->tensor_type &&
                     ox_dtype_of(in->type->tensor_type->elem_type, APPROF_F32, &dt));
    }
    return 1;
}

int ox_is_buffer(const Ox *c, const char *name)
{
    const char *work[MAX_PATH];
    size_t from[MAX_PATH];
    const Onnx__NodeProto *via[MAX_PATH];
    int nw = 0, nv = 0, ended = 0, v = ox_val_find(c, name);
    ApprofDtype dt;
    if (v < 0 || c->vals[v].kind != V_INIT || !ox_dtype_of(c->vals[v].tp->data_type, APPROF_F32, &dt))
        return 0;
    work[nw] = name;
    from[nw++] = c->first_user[v] > 0 ? (size_t)c->first_user[v] : 0;
    for (int w = 0; w < nw; w++) {
        int wv = ox_val_find(c, work[w]), left = wv >= 0 ? c->uses[wv] : -1;
        if (is_output(c, work[w]))
            return 0;
        /* the scan stops at the value's last reader (exporters sort the
         * nodes, so the readers follow their producer) */
        for (size_t i = from[w]; i < c->gp->n_node && left != 0; i++) {
            const Onnx__NodeProto *n = c->gp->node[i];
            int r = 0;
            for (size_t k = 0; k < n->n_input; k++)
                r |= n->input[k] && !strcmp(n->input[k], work[w]);
            if (!r)
                continue;
            left--;
            if (op_is(n, ends)) {
                ended = 1;
                continue;
            }
            if (!op_is(n, path_ops) || n->n_output != 1 || !n->output[0] || nw == MAX_PATH)
                return 0;
            via[nv++] = n;
            work[nw] = n->output[0];
            from[nw++] = i + 1;
        }
    }
    for (int i = 0; i < nv; i++)
        for (size_t k = 0; k < via[i]->n_input; k++)
            if (!no_param(c, via[i]->input[k], name, 0)) {
                /* an operand on the path that is itself on it is fine */
                int on = 0;
                for (int w = 0; w < nw; w++)
                    on |= !strcmp(work[w], via[i]->input[k]);
                if (!on)
                    return 0;
            }
    return ended;
}
