/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Model files (schemas/model-format.md) through jansson: a JSON object with
 * the leaf tensors (inputs and parameters) and the operators in topological
 * order, each naming its input tensors; operator outputs are inferred and
 * optionally declared (name, shape) so that a mismatch is reported. Names
 * are resolved through a small open-addressing hash table.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "graph_int.h"
#include "grow.h"
#include "modelfile.h"
#include "onnx.h"
#include "fnv.h"

#if HAVE_JANSSON
#include <jansson.h>

#define MAX_BATCH ((int64_t)1 << 24)

typedef struct {
    int *slot;     /* tensor index + 1, 0 empty */
    size_t cap;
} NameMap;

static uint64_t hstr(const char *s)
{
    return costdb_fnv1a_str(COSTDB_FNV_BASIS_V1, s);
}

static int map_find(const NameMap *m, const ApprofGraph *g, const char *name)
{
    size_t i = (size_t)(hstr(name) & (m->cap - 1));
    while (m->slot[i]) {
        if (!strcmp(g->tensors[m->slot[i] - 1].name, name))
            return m->slot[i] - 1;
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

static int map_put(NameMap *m, const ApprofGraph *g, int t)
{
    size_t i = (size_t)(hstr(g->tensors[t].name) & (m->cap - 1));
    while (m->slot[i])
        i = (i + 1) & (m->cap - 1);
    m->slot[i] = t + 1;
    return 0;
}

typedef struct {
    char *err;
    size_t errlen;
    const char *origin;
} Ctx;

static int perr(Ctx *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int perr(Ctx *c, int rc, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        va_list ap;
        int n = snprintf(c->err, c->errlen, "%s: ", c->origin ? c->origin : "model");
        if (n >= 0 && (size_t)n < c->errlen) {
            va_start(ap, fmt);
            vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

/* Reads an int array of at most max entries; -1 on a type error. */
static int int_array(json_t *a, int64_t *out, int max, int64_t lo, int64_t hi)
{
    size_t i;
    json_t *v;
    if (!json_is_array(a) || (int)json_array_size(a) > max)
        return -1;
    json_array_foreach(a, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
            return -1;
        out[i] = json_integer_value(v);
    }
    return (int)json_array_size(a);
}

static int get_int(json_t *o, const char *key, int64_t lo, int64_t hi, int64_t def, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return *out >= lo && *out <= hi ? 0 : -1;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = json_integer_value(v);
    return 0;
}

static int pair(json_t *o, const char *key, int lo, int hi, int *out)
{
    json_t *v = json_object_get(o, key);
    int64_t t[2];
    if (!v)
        return 0;
    if (int_array(v, t, 2, lo, hi) != 2)
        return -1;
    out[0] = (int)t[0];
    out[1] = (int)t[1];
    return 0;
}

static const char *const op_keys[] = {"name", "op", "inputs", "outputs", "bias", "transpose_a",
                                      "transpose_b", "kernel", "stride", "padding", "groups",
                                      "axis", "perm", "shape", "start", "length", "sizes",
                                      "causal", "top_k", "capacity", "rate", "inplace", "rerun",
                                      "unpad", "probs_in_experts", "eager", NULL};
static const char *const top_keys[] = {"format", "version", "name", "dtype", "batch_size",
                                       "tensors", "ops", NULL};
static const char *const tensor_keys[] = {"name", "role", "dtype", "shape", "batch_dim", NULL};

/* The first key of object o not in the NULL-terminated list, or NULL. */
static const char *unknown_key(json_t *o, const char *const *keys)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        int known = 0;
        for (int q = 0; keys[q]; q++)
            known |= !strcmp(keys[q], key);
        if (!known)
            return key;
    }
    return NULL;
}

static int load_tensor(Ctx *c, ApprofGraph *g, NameMap *m, json_t *t, size_t i)
{
    json_t *jn = json_object_get(t, "name"), *jr = json_object_get(t, "role");
    json_t *jd = json_object_get(t, "dtype"), *js = json_object_get(t, "shape");
    const char *name, *role;
    ApprofDtype dt = g->dtype;
    ApprofTensorRole r;
    int64_t dims[APPROF_MAX_DIMS], bd;
    int nd, idx;

    if (!json_is_object(t) || !json_is_string(jn) || !json_string_length(jn))
        return perr(c, APPROF_EPARSE, "tensors[%zu]: field name: expected a non-empty string", i);
    name = json_string_value(jn);
    if (strlen(name) >= APPROF_NAME_MAX)
        return perr(c, APPROF_EPARSE, "tensor '%.40s...': field name: longer than %d bytes", name, APPROF_NAME_MAX - 1);
    if ((role = unknown_key(t, tensor_keys)))
        return perr(c, APPROF_EPARSE, "tensor '%s': field %s: unknown field", name, role);
    role = json_is_string(jr) ? json_string_value(jr) : "";
    if (!strcmp(role, "param"))
        r = APPROF_TENSOR_PARAM;
    else if (!strcmp(role, "input"))
        r = APPROF_TENSOR_INPUT;
    else
        return perr(c, APPROF_EPARSE, "tensor '%s': field role: expected \"param\" or \"input\"", name);
    if (jd && (!json_is_string(jd) || approf_dtype_parse(json_string_value(jd), &dt) < 0))
        return perr(c, APPROF_EPARSE, "tensor '%s': field dtype: expected f32, f16 or bf16", name);
    nd = js ? int_array(js, dims, APPROF_MAX_DIMS, INT64_MIN, INT64_MAX) : -1;
    if (nd < 0)
        return perr(c, APPROF_EPARSE, "tensor '%s': field shape: expected an array of at most %d integers", name, APPROF_MAX_DIMS);
    if (get_int(t, "batch_dim", -1, nd - 1, -1, &bd) < 0)
        return perr(c, APPROF_EPARSE, "tensor '%s': field batch_dim: expected -1 or a dimension below %d", name, nd);
    if (map_find(m, g, name) >= 0)
        return perr(c, APPROF_EINVAL, "tensor '%s': field name: defined twice", name);
    idx = approf_graph_add_tensor(g, name, r, dt, nd, dims, (int)bd);
    if (idx == APPROF_ENOMEM)
        return idx;
    if (idx < 0)
        return perr(c, APPROF_EINVAL, "tensor '%s': field shape: absurd size (each dim 1..2^31, at most 2^42 elements)", name);
    return map_put(m, g, idx);
}

static int defined_later(json_t *ops, size_t from, const char *name)
{
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op) {
        json_t *outs = json_object_get(op, "outputs"), *o;
        json_t *jn = json_object_get(op, "name");
        size_t j;
        if (i <= from)
            continue;
        if (json_is_string(jn)) {
            char buf[APPROF_NAME_MAX + 8];
            snprintf(buf, sizeof buf, "%s:out0", json_string_value(jn));
            if (!strcmp(buf, name))
                return 1;
        }
        json_array_foreach(outs, j, o) {
            json_t *on = json_object_get(o, "name");
            if (json_is_string(on) && !strcmp(json_string_value(on), name))
                return 1;
        }
    }
    return 0;
}

static int load_op(Ctx *c, ApprofGraph *g, NameMap *m, json_t *ops, json_t *o, size_t i)
{
    json_t *jn = json_object_get(o, "name"), *jk = json_object_get(o, "op");
    json_t *ji = json_object_get(o, "inputs"), *jo = json_object_get(o, "outputs"), *v;
    const char *name, *key;
    ApprofOpKind kind;
    ApprofOpAttrs a;
    int in[APPROF_MAX_INPUTS], n_in, r;
    int64_t shape[APPROF_MAX_DIMS], t;
    int shape_n = 0;
    char emsg[512];
    size_t k;

    if (!json_is_object(o) || !json_is_string(jn) || !json_string_length(jn) ||
        json_string_length(jn) >= APPROF_NAME_MAX)
        return perr(c, APPROF_EPARSE, "ops[%zu]: field name: expected a non-empty string", i);
    name = json_string_value(jn);
    if ((key = unknown_key(o, op_keys)))
        return perr(c, APPROF_EPARSE, "op '%s': field %s: unknown field", name, key);
    if (!json_is_string(jk) || approf_op_kind_parse(json_string_value(jk), &kind) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field op: unknown operator '%s'", name,
                    json_is_string(jk) ? json_string_value(jk) : "(not a string)");
    if (!json_is_array(ji) || json_array_size(ji) < 1 || json_array_size(ji) > APPROF_MAX_INPUTS)
        return perr(c, APPROF_EPARSE, "op '%s': field inputs: expected 1 to %d tensor names", name, APPROF_MAX_INPUTS);
    n_in = (int)json_array_size(ji);
    json_array_foreach(ji, k, v) {
        const char *tn = json_is_string(v) ? json_string_value(v) : NULL;
        if (!tn)
            return perr(c, APPROF_EPARSE, "op '%s': field inputs[%zu]: expected a tensor name", name, k);
        in[k] = map_find(m, g, tn);
        if (in[k] < 0)
            return perr(c, APPROF_EINVAL, defined_later(ops, i, tn)
                        ? "op '%s': field inputs[%zu]: tensor '%s' used before its definition (cycle?)"
                        : "op '%s': field inputs[%zu]: unknown tensor '%s' (missing parameter or input?)",
                        name, k, tn);
    }
    memset(&a, 0, sizeof a);
    if (get_int(o, "bias", 0, 1, 0, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field bias: expected a boolean", name);
    a.has_bias = (int)t;
    if (get_int(o, "transpose_a", 0, 1, 0, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field transpose_a: expected a boolean", name);
    a.transpose_a = (int)t;
    if (get_int(o, "transpose_b", 0, 1, 0, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field transpose_b: expected a boolean", name);
    a.transpose_b = (int)t;
    if (get_int(o, "groups", 1, 1 << 20, 1, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field groups: expected a positive integer", name);
    a.groups = (int)t;
    if (get_int(o, "axis", 0, APPROF_MAX_DIMS - 1, 0, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field axis: expected 0..%d", name, APPROF_MAX_DIMS - 1);
    a.axis = (int)t;
    if (pair(o, "kernel", 1, 1 << 16, a.kernel) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field kernel: expected [h, w], each 1..65536", name);
    if (pair(o, "stride", 1, 1 << 16, a.stride) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field stride: expected [h, w], each 1..65536", name);
    if (pair(o, "padding", 0, 1 << 16, a.padding) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field padding: expected [h, w], each 0..65536", name);
    if ((v = json_object_get(o, "perm"))) {
        int64_t p[APPROF_MAX_DIMS];
        int np = int_array(v, p, APPROF_MAX_DIMS, 0, APPROF_MAX_DIMS - 1);
        if (np < 0 || np != g->tensors[in[0]].ndim)
            return perr(c, APPROF_EPARSE, "op '%s': field perm: expected a permutation of the input's %d dims",
                        name, g->tensors[in[0]].ndim);
        for (int d = 0; d < np; d++)
            a.perm[d] = (int)p[d];
    } else if (kind == APPROF_OP_TRANSPOSE) {
        return perr(c, APPROF_EPARSE, "op '%s': field perm: missing", name);
    }
    if (get_int(o, "start", 0, INT64_MAX, 0, &a.start) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field start: expected a non-negative integer", name);
    if (get_int(o, "length", 0, INT64_MAX, 0, &a.length) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field length: expected a non-negative integer", name);
    if ((v = json_object_get(o, "sizes")) &&
        int_array(v, a.sizes, APPROF_MAX_OUTPUTS, 1, INT64_MAX) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field sizes: expected at most %d positive integers", name, APPROF_MAX_OUTPUTS);
    if (get_int(o, "causal", 0, 1, 0, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field causal: expected a boolean", name);
    a.causal = (int)t;
    if (get_int(o, "top_k", 1, 1 << 20, 1, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field top_k: expected a positive integer", name);
    a.top_k = (int)t;
    if (get_int(o, "capacity", 1, INT64_MAX, 1, &a.capacity) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field capacity: expected a positive integer", name);
    if (get_int(o, "inplace", 0, 1, 0, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field inplace: expected a boolean", name);
    if (t && kind != APPROF_OP_RELU)
        return perr(c, APPROF_EINVAL, "op '%s': field inplace: only relu runs in place", name);
    a.inplace = (int)t;
    if (get_int(o, "rerun", 0, 1, 0, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field rerun: expected a boolean", name);
    if (t && kind != APPROF_OP_SILU && kind != APPROF_OP_GELU)
        return perr(c, APPROF_EINVAL, "op '%s': field rerun: only silu and gelu rerun", name);
    a.rerun = (int)t;
    if (get_int(o, "unpad", 0, 1, 0, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field unpad: expected a boolean", name);
    if (t && kind != APPROF_OP_ATTENTION)
        return perr(c, APPROF_EINVAL, "op '%s': field unpad: only attention unpads", name);
    a.unpad = (int)t;
    if (get_int(o, "eager", 0, 1, 0, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field eager: expected a boolean", name);
    if (t && kind != APPROF_OP_RMS_NORM && kind != APPROF_OP_ROPE && kind != APPROF_OP_ATTENTION)
        return perr(c, APPROF_EINVAL, "op '%s': field eager: only rms_norm, rope and attention "
                    "run eager", name);
    a.eager = (int)t;
    if (get_int(o, "probs_in_experts", 0, 1, 0, &t) < 0)
        return perr(c, APPROF_EPARSE, "op '%s': field probs_in_experts: expected a boolean", name);
    if (t && kind != APPROF_OP_MOE_COMBINE)
        return perr(c, APPROF_EINVAL,
                    "op '%s': field probs_in_experts: only moe_combine takes it", name);
    a.probs_in_experts = (int)t;
    if ((v = json_object_get(o, "rate"))) {
        if (!json_is_number(v))
            return perr(c, APPROF_EPARSE, "op '%s': field rate: expected a number", name);
        a.rate = json_number_value(v);
    }
    if ((v = json_object_get(o, "shape"))) {
        shape_n = int_array(v, shape, APPROF_MAX_DIMS, INT64_MIN, INT64_MAX);
        if (shape_n < 0)
            return perr(c, APPROF_EPARSE, "op '%s': field shape: expected an array of at most %d integers", name, APPROF_MAX_DIMS);
    } else if (kind == APPROF_OP_RESHAPE) {
        return perr(c, APPROF_EPARSE, "op '%s': field shape: missing", name);
    }
    r = approf_graph_add_op(g, name, kind, in, n_in, &a, shape, shape_n, emsg, sizeof emsg);
    if (r == APPROF_ENOMEM)
        return r;
    if (r < 0)
        return perr(c, APPROF_EINVAL, "%s", emsg);
    if (jo && (!json_is_array(jo) || (int)json_array_size(jo) > g->ops[r].n_outputs))
        return perr(c, APPROF_EPARSE, "op '%s': field outputs: expected at most %d output objects", name, g->ops[r].n_outputs);
    json_array_foreach(jo, k, v) {
        ApprofTensor *ot = &g->tensors[g->ops[r].outputs[k]];
        json_t *on = json_object_get(v, "name"), *os = json_object_get(v, "shape");
        if (!json_is_object(v))
            return perr(c, APPROF_EPARSE, "op '%s': field outputs[%zu]: expected an object", name, k);
        if (os) {
            int64_t d[APPROF_MAX_DIMS];
            int nd = int_array(os, d, APPROF_MAX_DIMS, INT64_MIN, INT64_MAX);
            if (nd < 0)
                return perr(c, APPROF_EPARSE, "op '%s': field outputs[%zu].shape: expected an array of integers", name, k);
            if (nd != ot->ndim || memcmp(d, ot->dims, sizeof(int64_t) * (size_t)nd))
                return perr(c, APPROF_EINVAL, "op '%s': field outputs[%zu].shape: declared shape differs from the inferred one (producer/consumer mismatch)", name, k);
        }
        if (on) {
            if (!json_is_string(on) || !json_string_length(on) || json_string_length(on) >= APPROF_NAME_MAX)
                return perr(c, APPROF_EPARSE, "op '%s': field outputs[%zu].name: expected a non-empty string", name, k);
            snprintf(ot->name, sizeof ot->name, "%s", json_string_value(on));
        }
    }
    for (int j = 0; j < g->ops[r].n_outputs; j++) {
        int ti = g->ops[r].outputs[j];
        if (map_find(m, g, g->tensors[ti].name) >= 0)
            return perr(c, APPROF_EINVAL, "op '%s': field outputs[%d].name: tensor '%s' defined twice", name, j, g->tensors[ti].name);
        map_put(m, g, ti);
    }
    return 0;
}

int approf_model_parse(const char *text, const char *origin, ApprofGraph **out,
                       char *err, size_t errlen)
{
    Ctx c = {err, errlen, origin};
    json_error_t je;
    json_t *root = NULL, *tensors, *ops, *v;
    ApprofGraph *g = NULL;
    NameMap m = {NULL, 0};
    ApprofDtype dt = APPROF_F32;
    int64_t batch;
    int rc = 0;
    size_t i;

    if (err && errlen)
        err[0] = '\0';
    if (!text || !out)
        return APPROF_EINVAL;
    *out = NULL;
    root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return perr(&c, APPROF_EPARSE, "line %d, column %d: %s", je.line, je.column, je.text);
    if (!json_is_object(root)) {
        rc = perr(&c, APPROF_EPARSE, "field (top): expected a JSON object");
        goto cleanup;
    }
    {
        const char *bad = unknown_key(root, top_keys);
        if (bad) {
            rc = perr(&c, APPROF_EPARSE, "field %s: unknown field", bad);
            goto cleanup;
        }
    }
    v = json_object_get(root, "format");
    if (!json_is_string(v) || strcmp(json_string_value(v), "approf-model")) {
        rc = perr(&c, APPROF_EPARSE, "field format: expected \"approf-model\"");
        goto cleanup;
    }
    v = json_object_get(root, "version");
    if (!json_is_integer(v) || json_integer_value(v) != 1) {
        rc = perr(&c, APPROF_EPARSE, "field version: expected 1");
        goto cleanup;
    }
    v = json_object_get(root, "dtype");
    if (v && (!json_is_string(v) || approf_dtype_parse(json_string_value(v), &dt) < 0)) {
        rc = perr(&c, APPROF_EPARSE, "field dtype: expected f32, f16 or bf16");
        goto cleanup;
    }
    if (get_int(root, "batch_size", 1, MAX_BATCH, -1, &batch) < 0 || batch < 1) {
        rc = perr(&c, APPROF_EPARSE, "field batch_size: expected an integer in 1..%lld", (long long)MAX_BATCH);
        goto cleanup;
    }
    v = json_object_get(root, "name");
    if (v && !json_is_string(v)) {
        rc = perr(&c, APPROF_EPARSE, "field name: expected a string");
        goto cleanup;
    }
    /* kept whole or refused: a name cut to fit would not be the file's */
    if (v && json_string_length(v) >= APPROF_NAME_MAX) {
        rc = perr(&c, APPROF_EPARSE, "field name: %zu bytes, at most %d", json_string_length(v),
                  APPROF_NAME_MAX - 1);
        goto cleanup;
    }
    tensors = json_object_get(root, "tensors");
    ops = json_object_get(root, "ops");
    if (!json_is_array(tensors) || !json_is_array(ops) || json_array_size(ops) == 0) {
        rc = perr(&c, APPROF_EPARSE, "field %s: expected an array%s", json_is_array(tensors) ? "ops" : "tensors",
                  json_is_array(tensors) ? " of at least one operator" : "");
        goto cleanup;
    }
    if (json_array_size(tensors) + json_array_size(ops) * APPROF_MAX_OUTPUTS > (1u << 26)) {
        rc = perr(&c, APPROF_EINVAL, "field ops: absurd number of tensors or operators");
        goto cleanup;
    }
    rc = approf_graph_new(v ? json_string_value(v) : "model", dt, batch, &g);
    if (rc < 0)
        goto cleanup;
    for (m.cap = 64; m.cap < 2 * (json_array_size(tensors) + json_array_size(ops) * APPROF_MAX_OUTPUTS) + 2;)
        m.cap *= 2;
    m.slot = calloc(m.cap, sizeof *m.slot);
    if (!m.slot) {
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    json_array_foreach(tensors, i, v) {
        rc = load_tensor(&c, g, &m, v, i);
        if (rc < 0)
            goto cleanup;
    }
    json_array_foreach(ops, i, v) {
        rc = load_op(&c, g, &m, ops, v, i);
        if (rc < 0)
            goto cleanup;
    }
    {
        char emsg[512];
        rc = approf_graph_validate(g, emsg, sizeof emsg);
        if (rc == APPROF_ENOMEM)
            goto cleanup;
        if (rc < 0) {
            rc = perr(&c, APPROF_EINVAL, "%s", emsg);
            goto cleanup;
        }
    }
    rc = approf_graph_canonicalize(g);
    if (rc < 0)
        goto cleanup;
    *out = g;
    g = NULL;
cleanup:
    free(m.slot);
    approf_graph_free(&g);
    json_decref(root);
    return rc;
}

static json_t *dims_json(const int64_t *d, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_integer(d[i])) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *pair_json(const int *p)
{
    int64_t d[2] = {p[0], p[1]};
    return dims_json(d, 2);
}

static json_t *op_json(const ApprofGraph *g, const ApprofOp *op)
{
    const ApprofOpAttrs *a = &op->attrs;
    json_t *o = json_object(), *in = json_array(), *outs = json_array();
    if (!o || !in || !outs)
        goto fail;
    json_object_set_new(o, "name", json_string(op->name));
    json_object_set_new(o, "op", json_string(approf_op_kind_name(op->kind)));
    for (int k = 0; k < op->n_inputs; k++)
        json_array_append_new(in, json_string(g->tensors[op->inputs[k]].name));
    json_object_set_new(o, "inputs", in);
    in = NULL;
    switch (op->kind) {
    case APPROF_OP_MATMUL:
        json_object_set_new(o, "bias", json_boolean(a->has_bias));
        if (a->transpose_b)
            json_object_set_new(o, "transpose_b", json_true());
        break;
    case APPROF_OP_BATCH_MATMUL:
        json_object_set_new(o, "transpose_a", json_boolean(a->transpose_a));
        json_object_set_new(o, "transpose_b", json_boolean(a->transpose_b));
        break;
    case APPROF_OP_CONV2D: case APPROF_OP_MAX_POOL: case APPROF_OP_AVG_POOL:
        json_object_set_new(o, "kernel", pair_json(a->kernel));
        json_object_set_new(o, "stride", pair_json(a->stride));
        json_object_set_new(o, "padding", pair_json(a->padding));
        if (op->kind == APPROF_OP_CONV2D) {
            json_object_set_new(o, "groups", json_integer(a->groups > 0 ? a->groups : 1));
            json_object_set_new(o, "bias", json_boolean(a->has_bias));
        }
        break;
    case APPROF_OP_SOFTMAX: case APPROF_OP_CONCAT:
        json_object_set_new(o, "axis", json_integer(a->axis));
        break;
    case APPROF_OP_TRANSPOSE: {
        int64_t p[APPROF_MAX_DIMS];
        int nd = g->tensors[op->inputs[0]].ndim;
        for (int d = 0; d < nd; d++)
            p[d] = a->perm[d];
        json_object_set_new(o, "perm", dims_json(p, nd));
        break;
    }
    case APPROF_OP_RESHAPE: {
        const ApprofTensor *t = &g->tensors[op->outputs[0]];
        json_object_set_new(o, "shape", dims_json(t->dims, t->ndim));
        break;
    }
    case APPROF_OP_SLICE:
        json_object_set_new(o, "axis", json_integer(a->axis));
        json_object_set_new(o, "start", json_integer(a->start));
        json_object_set_new(o, "length", json_integer(a->length));
        break;
    case APPROF_OP_SPLIT:
        json_object_set_new(o, "axis", json_integer(a->axis));
        json_object_set_new(o, "sizes", dims_json(a->sizes, op->n_outputs));
        break;
    case APPROF_OP_ATTENTION:
        json_object_set_new(o, "causal", json_boolean(a->causal));
        if (a->unpad)
            json_object_set_new(o, "unpad", json_true());
        if (a->eager)
            json_object_set_new(o, "eager", json_true());
        break;
    case APPROF_OP_RMS_NORM: case APPROF_OP_ROPE:
        if (a->eager)
            json_object_set_new(o, "eager", json_true());
        break;
    case APPROF_OP_DROPOUT:
        json_object_set_new(o, "rate", json_real(a->rate));
        break;
    case APPROF_OP_RELU:
        if (a->inplace)
            json_object_set_new(o, "inplace", json_true());
        break;
    case APPROF_OP_SILU:
    case APPROF_OP_GELU:
        if (a->rerun)
            json_object_set_new(o, "rerun", json_true());
        break;
    case APPROF_OP_TOPK_ROUTER:
        json_object_set_new(o, "top_k", json_integer(a->top_k));
        break;
    case APPROF_OP_MOE_DISPATCH:
        json_object_set_new(o, "capacity", json_integer(a->capacity));
        break;
    case APPROF_OP_MOE_COMBINE:
        if (a->probs_in_experts)
            json_object_set_new(o, "probs_in_experts", json_true());
        break;
    default:
        break;
    }
    for (int j = 0; j < op->n_outputs; j++) {
        const ApprofTensor *t = &g->tensors[op->outputs[j]];
        json_t *ot = json_object();
        if (!ot)
            goto fail;
        json_object_set_new(ot, "name", json_string(t->name));
        json_object_set_new(ot, "shape", dims_json(t->dims, t->ndim));
        json_array_append_new(outs, ot);
    }
    json_object_set_new(o, "outputs", outs);
    return o;
fail:
    json_decref(o);
    json_decref(in);
    json_decref(outs);
    return NULL;
}

int approf_model_to_json(const ApprofGraph *g, char **out)
{
    json_t *root, *tensors, *ops;
    int rc = 0;
    if (!g || !out)
        return APPROF_EINVAL;
    *out = NULL;
    root = json_object();
    tensors = json_array();
    ops = json_array();
    if (!root || !tensors || !ops) {
        json_decref(tensors);
        json_decref(ops);
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    json_object_set_new(root, "format", json_string("approf-model"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "name", json_string(g->name));
    json_object_set_new(root, "dtype", json_string(approf_dtype_name(g->dtype)));
    json_object_set_new(root, "batch_size", json_integer(g->batch_size));
    for (size_t i = 0; i < g->n_tensors; i++) {
        const ApprofTensor *t = &g->tensors[i];
        json_t *jt;
        if (t->role == APPROF_TENSOR_ACT)
            continue;
        jt = json_object();
        if (!jt || json_array_append_new(tensors, jt) < 0) {
            rc = APPROF_ENOMEM;
            break;
        }
        json_object_set_new(jt, "name", json_string(t->name));
        json_object_set_new(jt, "role", json_string(t->role == APPROF_TENSOR_PARAM ? "param" : "input"));
        json_object_set_new(jt, "dtype", json_string(approf_dtype_name(t->dtype)));
        json_object_set_new(jt, "shape", dims_json(t->dims, t->ndim));
        json_object_set_new(jt, "batch_dim", json_integer(t->batch_dim));
    }
    json_object_set_new(root, "tensors", tensors);
    for (size_t i = 0; rc == 0 && i < g->n_ops; i++) {
        json_t *o = op_json(g, &g->ops[i]);
        if (!o || json_array_append_new(ops, o) < 0)
            rc = APPROF_ENOMEM;
    }
    json_object_set_new(root, "ops", ops);
    if (rc == 0) {
        *out = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        if (!*out)
            rc = APPROF_ENOMEM;
    }
cleanup:
    json_decref(root);
    return rc;
}

#else /* !HAVE_JANSSON */

int approf_model_parse(const char *text, const char *origin, ApprofGraph **out,
                       char *err, size_t errlen)
{
    (void)text;
    (void)out;
    if (err && errlen)
        snprintf(err, errlen, "%s: model files need jansson, which this build lacks", origin ? origin : "model");
    return APPROF_EUNSUPPORTED;
}

int approf_model_to_json(const ApprofGraph *g, char **out)
{
    (void)g;
    (void)out;
    return APPROF_EUNSUPPORTED;
}

#endif

int approf_model_load(const char *path, ApprofGraph **out, char *err, size_t errlen)
{
    return approf_model_load_batch(path, 0, out, err, errlen);
}

int approf_model_load_batch(const char *path, int64_t batch, ApprofGraph **out, char *err,
                            size_t errlen)
{
    FILE *f;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc;
    if (!path || !out)
        return APPROF_EINVAL;
    f = fopen(path, "rb");
    if (!f) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return APPROF_EIO;
    }
    for (;;) {
        size_t n;
        /* room for 64 KiB more and the terminating NUL */
        if (len + 65537 > cap) {
            if (len > ((size_t)1 << 31)) {
                free(buf);
                fclose(f);
                if (err && errlen)
                    snprintf(err, errlen, "%s: file larger than 2 GiB", path);
                return APPROF_EINVAL;
            }
            if (util_grow((void **)&buf, &cap, len + 65537, 1) < 0) {
                free(buf);
                fclose(f);
                return APPROF_ENOMEM;
            }
        }
        n = fread(buf + len, 1, cap - 1 - len, f);
        len += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        fclose(f);
        if (err && errlen)
            snprintf(err, errlen, "%s: read error", path);
        return APPROF_EIO;
    }
    fclose(f);
    buf[len] = '\0';
    /* Content, not the extension, decides: JSON starts (after blanks) with
     * a printable character; a serialised ONNX ModelProto with a field tag
     * (ir_version: 0x08), which is not. */
    {
        size_t i = 0;
        while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
            i++;
        if (i < len && ((unsigned char)buf[i] < 0x21 || (unsigned char)buf[i] > 0x7e)) {
            rc = approf_onnx_parse(buf, len, path, batch, out, err, errlen);
            free(buf);
            return rc;
        }
    }
    rc = approf_model_parse(buf, path, out, err, errlen);
    free(buf);
    return rc;
}
