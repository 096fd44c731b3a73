/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to the ONNX reader, between its two halves: onnx.c walks the
 * protobuf (values, inputs, initializers, node order) and onnx_ops.c maps
 * one node onto IR operators. Only built with ONNX support (HAVE_ONNX).
 */
#ifndef APPROF_ONNX_INT_H
#define APPROF_ONNX_INT_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "onnx.h"
#include "onnx.pb-c.h"

/* What a value name stands for: an IR tensor, an initializer not yet read,
 * a Constant node's output, an input with a dimension bound to 0 (a past
 * key/value cache of length 0: no IR tensor); -1 while a node output is
 * not yet defined. */
enum { V_TENSOR = 0, V_INIT, V_CONST, V_EMPTY };

typedef struct {
    const char *name;
    int kind;                       /* V_TENSOR: IR tensor idx; V_INIT / V_CONST: tp */
    int idx;
    const Onnx__TensorProto *tp;
} OxVal;

/* One conversion: the file's graph, the IR graph being built, the value
 * table (open addressing over slot, cap_slot a power of two) and the
 * per-value use counts the fusions look at. */
typedef struct {
    const char *origin;
    char *err;
    size_t errlen;
    ApprofGraph *g;
    Onnx__GraphProto *gp;
    OxVal *vals;
    size_t n_vals, cap_vals;
    int *slot;                      /* val index + 1, 0 empty */
    size_t cap_slot;
    int *uses;                      /* per val: consuming node inputs */
    int *first_user;                /* per val: the first consuming node, -1 */
    unsigned char *skip;            /* per node: fused into an earlier node */
    const char *batch_sym;
    int64_t batch;
    const ApprofOnnxDims *dims;     /* symbolic dimensions' values */
    unsigned char dim_used[APPROF_ONNX_MAX_BINDINGS];
    void **folds;                   /* onnx_fold.c's constants, freed with Ox */
    size_t n_folds, cap_folds;
    int opset;                      /* of the default domain; 0 unknown */
} Ox;

/* onnx_external.c: an initializer's external data (data_location
 * EXTERNAL) looked at beside the model, warnings into approf_onnx_notice;
 * a malformed offset or length is an error. ox_notice_reset before a
 * parse, ox_notice_end after it. */
int ox_check_external(Ox *c, Onnx__TensorProto *tp);
void ox_notice_reset(void);
void ox_notice_end(void);

/* The node being mapped. */
typedef struct {
    const Onnx__NodeProto *n;
    const char *name;   /* IR op name */
    char what[192];     /* "node 'NAME' (OpType)" */
} OxNode;

/* The longest node name kept: the IR appends "/keepdims" and ":outN" to
 * it and keeps names of at most APPROF_NAME_MAX - 1 bytes. */
#define OX_NODE_NAME_MAX ((size_t)APPROF_NAME_MAX - 18)

/* Records "ORIGIN: " and the formatted message in c->err; returns rc. */
int ox_err(Ox *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* 0 when name is valid UTF-8 of at most max bytes, else APPROF_EPARSE
 * with "WHAT: field FIELD: ..." recorded. */
int ox_name_ok(Ox *c, const char *what, const char *field, const char *name, size_t max);
/* The value named name, or -1 (also for NULL or ""). */
int ox_val_find(const Ox *c, const char *name);
/* Defines (or redefines) name; APPROF_EINVAL when the table is full. */
int ox_val_def(Ox *c, const char *name, int kind, int idx, const Onnx__TensorProto *tp);
/* The IR dtype of an ONNX element type: 1 when it is a float type, else 0
 * with def (ids and labels count as 4-byte elements). */
int ox_dtype_of(int32_t et, ApprofDtype def, ApprofDtype *out);
/* onnx_ops.c's helpers, shared with onnx_cnn.c. */
/* The largest conv or pooling window, stride and padding, and conv group
 * count: the bounds the JSON model files have. */
#define MAX_WINDOW ((int64_t)1 << 16)
#define MAX_GROUPS ((int64_t)1 << 20)
static inline const ApprofTensor *T(const Ox *c, int t)
{
    return &c->g->tensors[t];
}
static inline int norm_axis(int64_t axis, int ndim)
{
    if (axis < 0)
        axis += ndim;
    return axis >= 0 && axis < ndim ? (int)axis : -1;
}
/* Attribute name of n, or NULL; its int (def when absent); its ints (at
 * most max: their count, -1 absent, -2 too many). */
const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name);
int64_t ox_attr_i(const Onnx__NodeProto *n, const char *name, int64_t def);
int ox_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max);
/* n values of attribute name within lo..hi: 0, else APPROF_EPARSE naming it. */
int ox_attr_range(Ox *c, const OxNode *nd, const char *name, const int64_t *v, int n,
                  int64_t lo, int64_t hi);
/* A constant's element count (-1: absurd) and integer values (count or -1). */
int64_t ox_tp_elements(const Onnx__TensorProto *tp);
int ox_tp_ints(const Onnx__TensorProto *tp, int64_t *out, int max);
/* The IR tensor of input k (an initializer becomes a parameter): 0 or
 * APPROF_EPARSE; the constant behind input k or NULL; 1 when input k is given. */
int ox_operand(Ox *c, const OxNode *nd, int k, int *t);
const Onnx__TensorProto *ox_const_in(Ox *c, const OxNode *nd, int k);
int ox_has_input(const OxNode *nd, int k);
/* 1 when a node reads output k of nd. */
int ox_output_used(const Ox *c, const OxNode *nd, int k);
/* Adds an op named nd->name, its outputs bound to the node's: the first
 * output's tensor or a negative code. ox_alias binds output 0 to t. */
int ox_emit(Ox *c, const OxNode *nd, ApprofOpKind kind, const int *in, int n_in,
            const ApprofOpAttrs *a, const int64_t *shape, int shape_n);
int ox_alias(Ox *c, const OxNode *nd, int t);
/* x reshaped to want[0..n) (0: keep that dim, -1: inferred); an alias when
 * nothing changes. n < 0: no constant shape, refused. */
int ox_reshape(Ox *c, const OxNode *nd, int x, const int64_t *want, int n);
/* onnx_cnn.c: Conv and pooling (pads, auto_pad), LRN, Sum, Squeeze,
 * Unsqueeze, Gemm. 1 with *rc (a tensor or a negative code) when op is one
 * of them, else 0. */
int ox_map_more(Ox *c, const OxNode *nd, int *rc);

/* onnx_ms.c: onnxruntime's com.microsoft operators (EmbedLayerNormalization,
 * SkipLayerNormalization, FastGelu, Attention): 1 with *rc (a tensor or a
 * negative code) when nd is of that domain, else 0. */
int ox_map_ms(Ox *c, const OxNode *nd, int *rc);

/* onnx_fold.c: shape arithmetic on small integer constants (Shape,
 * Gather, Unsqueeze, Squeeze, Concat, Slice, Add, Sub, Mul, Div, Cast,
 * Identity; ConstantOfShape of an integer fill, Equal, Less, Greater,
 * Not, And, Or, Where) defines a constant: 1 with *rc (0 or a negative
 * code), else 0. */
int ox_fold(Ox *c, const OxNode *nd, int *rc);
/* Defines name as an empty input (V_EMPTY) of shape dims[0..n) that Shape
 * folds: 0 or a negative code. */
int ox_def_empty(Ox *c, const char *name, const int64_t *dims, int n);
/* Defines name as a value of kind (V_EMPTY, V_CONST) of shape dims[0..n)
 * and element type dtype with no values: 0 or a negative code. */
int ox_def_shaped(Ox *c, const char *name, int kind, int32_t dtype, const int64_t *dims, int n);

/* onnx_buffer.c: 1 when the initializer name is a buffer (its every path
 * is position math ending in Cos or Sin; docs/models.md), read as a
 * non-trainable input, else 0. */
int ox_is_buffer(const Ox *c, const char *name);

/* onnx_mask.c: the attention masks exporters build as tensors
 * (ConstantOfShape, Trilu, Expand, the comparisons and logic ops, Not,
 * Neg): 1 with *rc (a tensor or a negative code) when op is one of them,
 * else 0. */
int ox_map_mask(Ox *c, const OxNode *nd, int *rc);

/* onnx_fuse.c: a decomposed LayerNorm starting at ReduceMean nd, GELU as
 * Erf at Erf nd, GELU's tanh form at its Pow or Mul(x, x) nd (index at):
 * 1 with *rc (a tensor or a negative code), the pattern's other nodes
 * skipped; 0 when nd starts none. */
int ox_fuse(Ox *c, const OxNode *nd, size_t at, int *rc);

/* Maps node nd (index at in the graph) onto IR operators: the IR tensor of
 * its first output (>= 0) or a negative APPROF_E* code, message recorded. */
int ox_map_node(Ox *c, const OxNode *nd, size_t at);

#endif
