/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ONNX graphs (schemas/model-format.md, section ONNX): the ModelProto is
 * unpacked by protobuf-c from code generated at build time out of Debian's
 * onnx.proto, then each node is mapped onto IR operators in the file's
 * (topological) order. Values are resolved by name through a small
 * open-addressing table; an initializer becomes a trainable parameter the
 * first time an operator reads it as an operand (so BatchNormalization's
 * running statistics and Reshape's shape constants never become
 * parameters). A few exporter patterns are fused so that an exported model
 * costs what the zoo's does: MatMul + Add of a bias vector is one matmul
 * with bias, x * Sigmoid(x) is silu, and a Mul or Div by a one-element
 * constant (attention's 1/sqrt(d)) is folded into its operand.
 * This file walks the protobuf (values, inputs, initializers, node order);
 * onnx_ops.c maps each node and does the fusions.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "graph_int.h"
#include "hash.h"
#include "onnx.h"

#if HAVE_ONNX
#include "onnx_int.h"

#define MAX_BATCH ((int64_t)1 << 24)
/* protobuf-c unpacks (and frees) nested messages recursively, one stack
 * frame per level: about 3000 subgraphs (Graph -> Node -> Attribute ->
 * Graph ...) overflowed an 8 MiB stack. Real models nest a handful of
 * subgraphs (If and Loop bodies: 3 levels each) and shapes (5 levels). */
#define MAX_NEST 100

/* One varint at *pos below end; 0, or -1 when it runs past end or 10 bytes. */
static int wire_varint(const uint8_t *p, size_t *pos, size_t end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70 && *pos < end; shift += 7) {
        uint8_t c = p[(*pos)++];
        v |= (uint64_t)(c & 0x7f) << (shift < 64 ? shift : 0);
        if (!(c & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* How deep len bytes of protobuf nest, without recursion: every
 * length-delimited field whose bytes read as a message counts as one level
 * (a string that happens to read as one too, so this is an upper bound of
 * what an unpacker would recurse through). A field that does not read as a
 * message is a leaf. 1 when some field lies more than limit levels deep,
 * else 0. */
static int wire_too_deep(const uint8_t *p, size_t len, int limit)
{
    struct { size_t pos, end; } st[MAX_NEST + 1];
    int top = 0;
    if (limit > MAX_NEST)
        limit = MAX_NEST;
    st[0].pos = 0;
    st[0].end = len;
    while (top >= 0) {
        uint64_t tag, v;
        size_t *pos = &st[top].pos, end = st[top].end;
        if (*pos >= end || wire_varint(p, pos, end, &tag) < 0 || (tag >> 3) == 0) {
            top--;      /* the end of this message, or it is not one */
            continue;
        }
        switch (tag & 7) {
        case 0:
            if (wire_varint(p, pos, end, &v) < 0)
                top--;
            break;
        case 1: case 5: {
            size_t w = (tag & 7) == 1 ? 8 : 4;
            if (end - *pos < w)
                top--;
            else
                *pos += w;
            break;
        }
        case 2:
            if (wire_varint(p, pos, end, &v) < 0 || v > end - *pos) {
                top--;
                break;
            }
            if (v > 0) {
                if (top + 1 > limit)
                    return 1;
                st[top + 1].pos = *pos;
                st[top + 1].end = *pos + (size_t)v;
                *pos += (size_t)v;
                top++;
            }
            break;
        default:
            top--;      /* groups and unknown wire types: not a message */
            break;
        }
    }
    return 0;
}


int ox_err(Ox *c, int rc, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        va_list ap;
        int n = snprintf(c->err, c->errlen, "%s: ", c->origin ? c->origin : "model.onnx");
        if (n >= 0 && (size_t)n < c->errlen) {
            va_start(ap, fmt);
            vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

int ox_val_find(const Ox *c, const char *name)
{
    size_t i;
    if (!name || !*name)
        return -1;
    assert(c->cap_slot && (c->cap_slot & (c->cap_slot - 1)) == 0);  /* masks, not modulo */
    i = (size_t)(approf_hash_text(name) & (c->cap_slot - 1));
    while (c->slot[i]) {
        if (!strcmp(c->vals[c->slot[i] - 1].name, name))
            return c->slot[i] - 1;
        i = (i + 1) & (c->cap_slot - 1);
    }
    return -1;
}

/* Defines (or redefines: SSA says it will not happen) name. */
int ox_val_def(Ox *c, const char *name, int kind, int idx, const Onnx__TensorProto *tp)
{
    int v = ox_val_find(c, name);
    size_t i;
    if (!name || !*name)
        return 0;
    if (v >= 0) {
        c->vals[v].kind = kind;
        c->vals[v].idx = idx;
        c->vals[v].tp = tp;
        return 0;
    }
    if (c->n_vals >= c->cap_vals)
        return APPROF_EINVAL;
    assert(2 * c->cap_vals <= c->cap_slot);  /* the probe below finds a free slot */
    c->vals[c->n_vals] = (OxVal){name, kind, idx, tp};
    i = (size_t)(approf_hash_text(name) & (c->cap_slot - 1));
    while (c->slot[i])
        i = (i + 1) & (c->cap_slot - 1);
    c->slot[i] = (int)++c->n_vals;
    return 0;
}

/* 1 when s is valid UTF-8 (no overlong forms, surrogates or code points
 * above U+10FFFF), as the JSON writer and reader require. */
static int utf8_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p++;
        int more;
        unsigned cp, min;
        if (c < 0x80)
            continue;
        if ((c & 0xe0) == 0xc0) {
            more = 1, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            more = 2, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            more = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        while (more--) {
            if ((*p & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (*p++ & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
    }
    return 1;
}

/* A name from the file that becomes an IR name: valid UTF-8 and at most
 * max bytes, never cut short (two names cut to one would export a model
 * that does not load back). 0 or APPROF_EPARSE naming what and field. */
int ox_name_ok(Ox *c, const char *what, const char *field, const char *name, size_t max)
{
    size_t n = strlen(name);
    if (!utf8_ok(name))
        return ox_err(c, APPROF_EPARSE, "%s: field %s: not valid UTF-8", what, field);
    if (n > max)
        return ox_err(c, APPROF_EPARSE, "%s: field %s: %zu bytes, at most %zu ('%.40s...')", what, field, n, max, name);
    return 0;
}

/* The IR name of node i (its own name, else OpType_i), checked: the IR adds
 * ":outN" (and "/keepdims") to it and keeps at most APPROF_NAME_MAX - 1. */
static int node_name(Ox *c, const Onnx__NodeProto *n, size_t i, char *buf, size_t len)
{
    char what[64];
    if (n->name && *n->name) {
        snprintf(what, sizeof what, "graph.node[%zu]", i);
        if (ox_name_ok(c, what, "name", n->name, OX_NODE_NAME_MAX) < 0)
            return APPROF_EPARSE;
        snprintf(buf, len, "%s", n->name);
    } else {
        /* unique by its index; only supported (short, ASCII) op types
         * become operators, the others are refused by name later */
        snprintf(buf, len, "%.40s_%zu", n->op_type ? n->op_type : "node", i);
    }
    return 0;
}

/* Every IR tensor name once (the JSON reader refuses a second definition),
 * and at least one operator; 0 or APPROF_EPARSE / APPROF_ENOMEM. */
static int check_ir_names(Ox *c)
{
    const ApprofGraph *g = c->g;
    size_t cap = 64;
    int *slot, rc = 0;
    if (!g->n_ops)
        return ox_err(c, APPROF_EPARSE, "field graph.node: no operator left once Identity, Cast, Constant and "
                      "the folded scalings are removed: nothing to profile");
    while (cap < 2 * g->n_tensors + 2)
        cap *= 2;
    slot = calloc(cap, sizeof *slot);
    if (!slot)
        return APPROF_ENOMEM;
    for (size_t t = 0; t < g->n_tensors && !rc; t++) {
        size_t i = (size_t)(approf_hash_text(g->tensors[t].name) & (cap - 1));
        while (slot[i] && strcmp(g->tensors[slot[i] - 1].name, g->tensors[t].name))
            i = (i + 1) & (cap - 1);
        if (slot[i])
            rc = ox_err(c, APPROF_EPARSE, "tensor '%s' defined twice (two nodes of one name, or an input "
                        "named like a node's output)", g->tensors[t].name);
        slot[i] = (int)t + 1;
    }
    free(slot);
    return rc;
}

int ox_dtype_of(int32_t et, ApprofDtype def, ApprofDtype *out)
{
    switch (et) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *out = APPROF_F32; return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *out = APPROF_F16; return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *out = APPROF_BF16; return 1;
    default: *out = def; return 0;  /* ids, labels: 4-byte elements like f32 */
    }
}
static int name_in(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (!strcasecmp(name, *list))
            return 1;
    return 0;
}

static const char *const batch_names[] = {"batch", "batch_size", "batchsize", NULL};
static const char *const seq_names[] = {"seq", "seq_len", "seqlen", "seq_length", "sequence",
                                        "sequence_len", "sequence_length", "decoder_sequence_length",
                                        "encoder_sequence_length", NULL};

/* The value of symbolic dim d (named p) of input nm: 1 when it is the
 * batch, 0 another bound dim (*val), or APPROF_EPARSE naming the input, the
 * dim and the name. */
static int bind_dim(Ox *c, const char *nm, size_t d, const char *p, int first, int64_t *val)
{
    const ApprofOnnxDims *b = c->dims;
    int batchish = name_in(p, batch_names) || (c->batch_sym && !strcmp(p, c->batch_sym)) ||
                   (first && d == 0 && !c->batch_sym && !name_in(p, seq_names));
    for (int j = 0; b && j < b->n && j < APPROF_ONNX_MAX_BINDINGS; j++)
        if (!strcmp(b->names[j], p)) {
            if (batchish)
                return ox_err(c, APPROF_EPARSE, "input '%s': field type.tensor_type.shape.dim[%zu]: symbolic dimension "
                              "'%s' is the batch: give the batch (--batch), not --dim %s=%lld", nm, d, p, p,
                              (long long)b->values[j]);
            c->dim_used[j] = 1;
            *val = b->values[j];
            return 0;
        }
    if (batchish) {
        if (first && d == 0 && !c->batch_sym)
            c->batch_sym = p;
        *val = c->batch;
        return 1;
    }
    if (name_in(p, seq_names) && b && b->seq_len > 0) {
        *val = b->seq_len;
        return 0;
    }
    return ox_err(c, APPROF_EPARSE, "input '%s': field type.tensor_type.shape.dim[%zu]: symbolic dimension '%s' is "
                  "not bound (give %s%s=N%s)", nm, d, p, name_in(p, seq_names) ? "--seq-len N or --dim " : "--dim ",
                  p, d == 0 && first ? "" : "; only the batch is bound by default");
}

static int load_input(Ox *c, const Onnx__ValueInfoProto *vi, size_t i, int first)
{
    const Onnx__TypeProto *tp = vi->type;
    const Onnx__TensorShapeProto *sh;
    int64_t dims[APPROF_MAX_DIMS];
    int batch_dim = -1, r;
    ApprofDtype dt;
    const char *nm = vi->name ? vi->name : "";
    if (!*nm || strlen(nm) >= APPROF_NAME_MAX)
        return ox_err(c, APPROF_EPARSE, "graph.input[%zu]: field name: expected a name of 1 to %d bytes", i, APPROF_NAME_MAX - 1);
    if (!utf8_ok(nm))
        return ox_err(c, APPROF_EPARSE, "graph.input[%zu]: field name: not valid UTF-8", i);
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type->shape)
        return ox_err(c, APPROF_EPARSE, "input '%s': field type.tensor_type.shape: expected a tensor with a shape", nm);
    sh = tp->tensor_type->shape;
    if (sh->n_dim > APPROF_MAX_DIMS)
        return ox_err(c, APPROF_EPARSE, "input '%s': field type.tensor_type.shape: rank %zu above %d", nm, sh->n_dim, APPROF_MAX_DIMS);
    for (size_t d = 0; d < sh->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = sh->dim[d];
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            dims[d] = dm->dim_value;
            if (first && d == 0) {
                if (dims[0] < 1 || dims[0] > MAX_BATCH)
                    return ox_err(c, APPROF_EPARSE, "input '%s': field type.tensor_type.shape.dim[0]: batch %lld outside 1..%lld",
                                nm, (long long)dims[0], (long long)MAX_BATCH);
                c->batch = dims[0];
            }
            if (d == 0 && !c->batch_sym && dims[0] == c->batch)
                batch_dim = 0;
        } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param &&
                   *dm->dim_param) {
            r = bind_dim(c, nm, d, dm->dim_param, first, &dims[d]);
            if (r < 0)
                return r;
            if (r == 1 && batch_dim < 0)
                batch_dim = (int)d;
        } else {
            return ox_err(c, APPROF_EPARSE, "input '%s': field type.tensor_type.shape.dim[%zu]: unknown dimension (neither "
                          "a value nor a symbolic name)", nm, d);
        }
    }
    for (size_t d = 0; d < sh->n_dim; d++)
        if (dims[d] == 0) {
            /* empty (a past key/value cache of length 0): no IR tensor;
             * only a com.microsoft Attention may read it (onnx_ms.c) */
            if (first)
                return ox_err(c, APPROF_EPARSE, "input '%s': field type.tensor_type.shape.dim[%zu]: the first input "
                              "cannot be empty", nm, d);
            r = ox_def_empty(c, nm, dims, (int)sh->n_dim);
            return r == APPROF_ENOMEM ? r : r < 0 ? ox_err(c, APPROF_EINVAL, "too many values") : 0;
        }
    if (first) {
        ox_dtype_of(tp->tensor_type->elem_type, APPROF_F32, &dt);
        c->g->dtype = dt;
    }
    ox_dtype_of(tp->tensor_type->elem_type, c->g->dtype, &dt);
    r = approf_graph_add_tensor(c->g, nm, APPROF_TENSOR_INPUT, dt, (int)sh->n_dim, dims, batch_dim);
    if (r == APPROF_ENOMEM)
        return r;
    if (r < 0)
        return ox_err(c, APPROF_EINVAL, "input '%s': field type.tensor_type.shape: absurd size", nm);
    return ox_val_def(c, nm, V_TENSOR, r, NULL) < 0 ? ox_err(c, APPROF_EINVAL, "too many values") : 0;
}

/* Through the value table, where only initializers are defined yet when
 * the inputs are read (a scan of the initializers per input was quadratic:
 * 6.4 s for a 1.1 MB file). */
static int is_initializer(const Ox *c, const char *name)
{
    int v = ox_val_find(c, name);
    return v >= 0 && c->vals[v].kind == V_INIT;
}

static int convert(Ox *c, int64_t batch)
{
    Onnx__GraphProto *gp = c->gp;
    size_t n_vals = gp->n_initializer + gp->n_input, first = 1;
    int rc;
    for (size_t i = 0; i < gp->n_node; i++)
        n_vals += gp->node[i]->n_output;
    if (n_vals > ((size_t)1 << 24) || gp->n_node > ((size_t)1 << 22))
        return ox_err(c, APPROF_EINVAL, "field graph.node: absurd number of nodes or values");
    c->cap_vals = n_vals + 1;
    for (c->cap_slot = 64; c->cap_slot < 2 * c->cap_vals;)
        c->cap_slot *= 2;
    c->vals = calloc(c->cap_vals, sizeof *c->vals);
    c->slot = calloc(c->cap_slot, sizeof *c->slot);
    c->uses = calloc(c->cap_vals, sizeof *c->uses);
    c->first_user = malloc(c->cap_vals * sizeof *c->first_user);
    c->skip = calloc(gp->n_node + 1, 1);
    if (!c->vals || !c->slot || !c->uses || !c->first_user || !c->skip)
        return APPROF_ENOMEM;
    for (size_t i = 0; i < c->cap_vals; i++)
        c->first_user[i] = -1;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name)
            return ox_err(c, APPROF_EPARSE, "graph.initializer[%zu]: field name: missing", i);
        for (size_t d = 0; d < tp->n_dims; d++)
            if (tp->dims[d] < 0 || tp->dims[d] > ((int64_t)1 << 31))
                return ox_err(c, APPROF_EPARSE, "initializer '%s': field dims: dimension %lld out of range", tp->name, (long long)tp->dims[d]);
        if ((rc = ox_check_external(c, gp->initializer[i])) < 0)
            return rc;
        if ((rc = ox_val_def(c, tp->name, V_INIT, -1, tp)) < 0)
            return ox_err(c, rc, "too many values");
    }
    c->batch = batch > 0 ? batch : 1;
    for (size_t i = 0; i < gp->n_input; i++) {
        if (gp->input[i]->name && is_initializer(c, gp->input[i]->name))
            continue;
        if ((rc = load_input(c, gp->input[i], i, (int)first)) < 0)
            return rc;
        if (first)
            c->g->batch_size = c->batch;
        first = 0;
    }
    if (first)
        return ox_err(c, APPROF_EPARSE, "field graph.input: no input besides the initializers");
    for (int j = 0; c->dims && j < c->dims->n && j < APPROF_ONNX_MAX_BINDINGS; j++)
        if (!c->dim_used[j])
            return ox_err(c, APPROF_EPARSE, "field graph.input: no input has a symbolic dimension '%s' (--dim %s=%lld)",
                          c->dims->names[j], c->dims->names[j], (long long)c->dims->values[j]);
    /* consumers, for the fusions */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            int v = ox_val_find(c, n->input[k]);
            if (v >= 0) {
                c->uses[v]++;
                if (c->first_user[v] < 0)
                    c->first_user[v] = (int)i;
            }
        }
        for (size_t k = 0; k < n->n_output; k++)
            if (n->output[k] && *n->output[k] && ox_val_find(c, n->output[k]) < 0 &&
                (rc = ox_val_def(c, n->output[k], V_CONST, -1, NULL)) < 0)
                return ox_err(c, rc, "too many values");
    }
    /* outputs are placeholders until their node runs: unknown again */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t k = 0; k < n->n_output; k++) {
            int v = ox_val_find(c, n->output[k]);
            if (v >= 0 && c->vals[v].kind == V_CONST && !c->vals[v].tp)
                c->vals[v].kind = -1;
        }
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        char nm[APPROF_NAME_MAX];
        OxNode nd;
        if (c->skip[i])
            continue;
        nd.n = gp->node[i];
        if ((rc = node_name(c, nd.n, i, nm, sizeof nm)) < 0)
            return rc;
        nd.name = nm;
        snprintf(nd.what, sizeof nd.what, "node '%s' (%s)", nd.name, nd.n->op_type ? nd.n->op_type : "");
        for (size_t k = 0; k < nd.n->n_input; k++) {
            int v = ox_val_find(c, nd.n->input[k]);
            if (v >= 0 && c->vals[v].kind == -1)
                return ox_err(c, APPROF_EPARSE, "%s: field input[%zu]: value '%s' used before the node defining it (not topological)",
                            nd.what, k, nd.n->input[k]);
        }
        rc = ox_map_node(c, &nd, i);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int approf_onnx_available(void)
{
    return 1;
}

int approf_onnx_parse_dims(const void *data, size_t len, const char *origin,
                           const ApprofOnnxDims *dims, ApprofGraph **out, char *err,
                           size_t errlen)
{
    Ox c;
    Onnx__ModelProto *mp = NULL;
    int rc;
    char emsg[512];

    memset(&c, 0, sizeof c);
    ox_notice_reset();
    c.origin = origin;
    c.dims = dims;
    c.err = err;
    c.errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
    if (!data || !out)
        return APPROF_EINVAL;
    *out = NULL;
    if (wire_too_deep(data, len, MAX_NEST))
        return ox_err(&c, APPROF_EPARSE, "field graph: messages nested deeper than %d levels (subgraphs in "
                      "node attributes, nested types); refused before unpacking", MAX_NEST);
    mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp)
        return ox_err(&c, APPROF_EPARSE, "field (ModelProto): not a valid ONNX protobuf message (truncated or not ONNX)");
    if (!mp->graph || !mp->graph->n_node) {
        rc = ox_err(&c, APPROF_EPARSE, "field graph%s: missing or without nodes", mp->graph ? ".node" : "");
        goto cleanup;
    }
    c.gp = mp->graph;
    for (size_t i = 0; i < mp->n_opset_import; i++)
        if (!mp->opset_import[i]->domain || !*mp->opset_import[i]->domain ||
            !strcmp(mp->opset_import[i]->domain, "ai.onnx"))
            c.opset = mp->opset_import[i]->version > 0 && mp->opset_import[i]->version < 1000
                          ? (int)mp->opset_import[i]->version : 0;
    if (mp->graph->name && (rc = ox_name_ok(&c, "graph", "graph.name", mp->graph->name, APPROF_NAME_MAX - 1)) < 0)
        goto cleanup;
    rc = approf_graph_new(mp->graph->name && *mp->graph->name ? mp->graph->name : "onnx", APPROF_F32, 1, &c.g);
    if (rc < 0)
        goto cleanup;
    rc = convert(&c, dims ? dims->batch : 1);
    if (rc == 0)
        rc = check_ir_names(&c);
    if (rc < 0)
        goto cleanup;
    rc = approf_graph_validate(c.g, emsg, sizeof emsg);
    if (rc == APPROF_ENOMEM)
        goto cleanup;
    if (rc < 0) {
        rc = ox_err(&c, APPROF_EINVAL, "%s", emsg);
        goto cleanup;
    }
    rc = approf_graph_canonicalize(c.g);
    if (rc < 0)
        goto cleanup;
    ox_notice_end();
    *out = c.g;
    c.g = NULL;
cleanup:
    if (rc == APPROF_ENOMEM && err && errlen && !err[0])
        ox_err(&c, rc, "out of memory");
    approf_graph_free(&c.g);
    free(c.vals);
    free(c.slot);
    free(c.uses);
    free(c.first_user);
    free(c.skip);
    for (size_t i = 0; i < c.n_folds; i++)
        free(c.folds[i]);
    free(c.folds);
    onnx__model_proto__free_unpacked(mp, NULL);
    return rc;
}

#else /* !HAVE_ONNX */

int approf_onnx_available(void)
{
    return 0;
}

int approf_onnx_parse_dims(const void *data, size_t len, const char *origin,
                           const ApprofOnnxDims *dims, ApprofGraph **out, char *err,
                           size_t errlen)
{
    (void)data;
    (void)len;
    (void)dims;
    if (out)
        *out = NULL;
    if (err && errlen)
        snprintf(err, errlen, "%s: not JSON, so read as ONNX, but this build has no ONNX support: "
                 "install libprotobuf-c-dev and protobuf-c-compiler and rebuild",
                 origin ? origin : "model");
    return APPROF_EUNSUPPORTED;
}

#endif

/* The bindings of the model commands' --seq-len and --dim (onnx.h). */
static ApprofOnnxDims process_dims;

int approf_onnx_parse(const void *data, size_t len, const char *origin, int64_t batch,
                      ApprofGraph **out, char *err, size_t errlen)
{
    ApprofOnnxDims d = process_dims;
    d.batch = batch > 0 ? batch : 1;
    return approf_onnx_parse_dims(data, len, origin, &d, out, err, errlen);
}

int approf_onnx_bind(const char *spec, char *err, size_t errlen)
{
    const char *eq = spec ? strchr(spec, '=') : NULL;
    size_t n = eq ? (size_t)(eq - spec) : 0;
    char *end;
    long long v;
    int j;
    if (!eq || n == 0 || n >= APPROF_ONNX_DIM_NAME_MAX) {
        if (err && errlen) snprintf(err, errlen, "NAME=N with a name of 1 to %d bytes", APPROF_ONNX_DIM_NAME_MAX - 1);
        return APPROF_EINVAL;
    }
    v = strtoll(eq + 1, &end, 10);
    if (!eq[1] || *end || v < 0 || v > ((long long)1 << 24)) {
        if (err && errlen) snprintf(err, errlen, "NAME=N with N in 0..%lld", (long long)1 << 24);
        return APPROF_EINVAL;
    }
    for (j = 0; j < process_dims.n; j++)
        if (strlen(process_dims.names[j]) == n && !memcmp(process_dims.names[j], spec, n))
            break;
    if (j == APPROF_ONNX_MAX_BINDINGS) {
        if (err && errlen) snprintf(err, errlen, "at most %d names", APPROF_ONNX_MAX_BINDINGS);
        return APPROF_EINVAL;
    }
    memcpy(process_dims.names[j], spec, n);
    process_dims.names[j][n] = '\0';
    process_dims.values[j] = v;
    if (j == process_dims.n)
        process_dims.n++;
    return 0;
}

void approf_onnx_set_seq_len(int64_t seq_len)
{
    process_dims.seq_len = seq_len > 0 ? seq_len : 0;
}

int approf_onnx_bound(void)
{
    return process_dims.n;
}
