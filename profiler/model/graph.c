/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator IR's construction half: dtype and operator names, graph and
 * tensor creation, shape inference and checking for every operator kind
 * (approf_graph_add_op). Whole-graph validation, the structural hash and
 * canonical tensor order live in graph_check.c; per-operator semantics
 * (FLOPs, iteration spaces, kernels) in opsem.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "graph_int.h"
#include "grow.h"

#define MAX_DIM_SIZE ((int64_t)1 << 31)
#define MAX_ELEMENTS ((int64_t)1 << 42)

static const char *const kind_names[APPROF_OP_KIND_COUNT] = {
    "matmul", "batch_matmul", "conv2d", "batch_norm", "layer_norm", "relu", "gelu",
    "add", "mul", "max_pool", "avg_pool", "global_pool", "softmax", "embedding",
    "reshape", "transpose", "concat", "cross_entropy", "boundary", "mse_loss",
    "rms_norm", "silu", "rope", "slice", "split", "attention", "dropout", "topk_router",
    "moe_dispatch", "moe_combine",
};

const char *approf_strerror(int err)
{
    switch (err) {
    case APPROF_OK: return "success";
    case APPROF_ENOMEM: return "out of memory";
    case APPROF_EINVAL: return "invalid argument";
    case APPROF_EPARSE: return "malformed model file";
    case APPROF_EIO: return "input/output error";
    case APPROF_EUNSUPPORTED: return "unsupported";
    case APPROF_EINFEASIBLE: return "infeasible";
    case APPROF_EDB: return "cost database failure";
    case APPROF_ENODEV: return "backend not available";
    case APPROF_EINTR: return "interrupted";
    case APPROF_ENOVARIANT: return "no such stage variant";
    default: return "unknown error";
    }
}

size_t approf_dtype_size(ApprofDtype dt)
{
    return dt == APPROF_F32 ? 4 : 2;
}

const char *approf_dtype_name(ApprofDtype dt)
{
    switch (dt) {
    case APPROF_F32: return "f32";
    case APPROF_F16: return "f16";
    case APPROF_BF16: return "bf16";
    }
    return "?";
}

int approf_dtype_parse(const char *s, ApprofDtype *out)
{
    if (!s)
        return APPROF_EINVAL;
    if (!strcmp(s, "f32") || !strcmp(s, "float32") || !strcmp(s, "fp32"))
        *out = APPROF_F32;
    else if (!strcmp(s, "f16") || !strcmp(s, "float16") || !strcmp(s, "fp16"))
        *out = APPROF_F16;
    else if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16"))
        *out = APPROF_BF16;
    else
        return APPROF_EINVAL;
    return 0;
}

const char *approf_op_kind_name(ApprofOpKind k)
{
    if ((int)k < 0 || k >= APPROF_OP_KIND_COUNT)
        return "?";
    return kind_names[k];
}

int approf_op_kind_parse(const char *s, ApprofOpKind *out)
{
    if (!s)
        return APPROF_EINVAL;
    for (int k = 0; k < APPROF_OP_KIND_COUNT; k++)
        if (!strcmp(s, kind_names[k])) {
            *out = (ApprofOpKind)k;
            return 0;
        }
    return APPROF_EINVAL;
}

int approf_graph_new(const char *name, ApprofDtype dtype, int64_t batch_size, ApprofGraph **out)
{
    ApprofGraph *g;
    if (!out || batch_size <= 0)
        return APPROF_EINVAL;
    g = calloc(1, sizeof *g);
    if (!g)
        return APPROF_ENOMEM;
    snprintf(g->name, sizeof g->name, "%s", name ? name : "model");
    g->dtype = dtype;
    g->batch_size = batch_size;
    *out = g;
    return 0;
}

void approf_graph_free(ApprofGraph **g)
{
    if (!g || !*g)
        return;
    free((*g)->tensors);
    free((*g)->ops);
    free(*g);
    *g = NULL;
}

int64_t approf_tensor_elements(const ApprofTensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->dims[d];
    return n;
}

int64_t approf_tensor_bytes(const ApprofTensor *t)
{
    return approf_tensor_elements(t) * (int64_t)approf_dtype_size(t->dtype);
}

int64_t approf_graph_num_params(const ApprofGraph *g)
{
    int64_t n = 0;
    for (size_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].role == APPROF_TENSOR_PARAM)
            n += approf_tensor_elements(&g->tensors[i]);
    return n;
}

int approf_graph_has_rerun(const ApprofGraph *g)
{
    for (size_t i = 0; g && i < g->n_ops; i++)
        if (g->ops[i].attrs.rerun)
            return 1;
    return 0;
}

/* Checks rank and sizes of a shape; 0 or APPROF_EINVAL. */
static int shape_ok(int ndim, const int64_t *dims)
{
    int64_t n = 1;
    if (ndim < 0 || ndim > APPROF_MAX_DIMS)
        return APPROF_EINVAL;
    for (int d = 0; d < ndim; d++) {
        if (dims[d] <= 0 || dims[d] > MAX_DIM_SIZE)
            return APPROF_EINVAL;
        n *= dims[d];
        if (n > MAX_ELEMENTS)
            return APPROF_EINVAL;
    }
    return 0;
}

int approf_graph_add_tensor(ApprofGraph *g, const char *name, ApprofTensorRole role,
                            ApprofDtype dtype, int ndim, const int64_t *dims, int batch_dim)
{
    ApprofTensor *t;
    if (!g || (ndim > 0 && !dims) || shape_ok(ndim, dims) < 0)
        return APPROF_EINVAL;
    if (batch_dim < -1 || batch_dim >= ndim || (int)dtype < 0 || dtype > APPROF_BF16)
        return APPROF_EINVAL;
    if (UTIL_GROW(g->tensors, g->cap_tensors, g->n_tensors + 1) < 0)
        return APPROF_ENOMEM;
    t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
    t->role = role;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t->dims[d] = dims[d];
    t->batch_dim = batch_dim;
    t->producer = -1;
    t->requires_grad = role == APPROF_TENSOR_PARAM;
    return (int)g->n_tensors++;
}

/* ---- shape inference ---------------------------------------------------- */

typedef struct {
    int ndim[APPROF_MAX_OUTPUTS];
    int64_t dims[APPROF_MAX_OUTPUTS][APPROF_MAX_DIMS];
    int batch_dim[APPROF_MAX_OUTPUTS];
    ApprofDtype dtype[APPROF_MAX_OUTPUTS];
    int n;
} OutInfo;

int approf_op_fail(char *err, size_t errlen, const char *op, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        int n = snprintf(err, errlen, "op '%s': ", op);
        if (n >= 0 && (size_t)n < errlen) {
            va_start(ap, fmt);
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return APPROF_EINVAL;
}

static void shape_str(const ApprofTensor *t, char *buf, size_t len)
{
    size_t o = 0;
    int n = snprintf(buf, len, "[");
    o = n > 0 ? (size_t)n : 0;
    for (int d = 0; d < t->ndim && o < len; d++) {
        n = snprintf(buf + o, len - o, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
        if (n > 0)
            o += (size_t)n;
    }
    if (o < len)
        snprintf(buf + o, len - o, "]");
}

static int pool_out(int64_t in, int k, int s, int p, int64_t *out)
{
    int64_t num = in + 2 * (int64_t)p - k;
    if (k <= 0 || s <= 0 || p < 0 || num < 0)
        return -1;
    *out = num / s + 1;
    return 0;
}

/* Output batch dimension of a reshape: the output dimension starting at the
 * same flat offset as the input's batch dimension (its outer factor). */
static int reshape_batch_dim(const ApprofTensor *in, int ndim, const int64_t *dims)
{
    int64_t pin = 1, pout = 1;
    if (in->batch_dim < 0)
        return -1;
    for (int d = 0; d < in->batch_dim; d++)
        pin *= in->dims[d];
    for (int d = 0; d < ndim; d++) {
        if (pout == pin)
            return d;
        if (pout > pin)
            return -1;
        pout *= dims[d];
    }
    return -1;
}

/* Keeps only the attributes the kind uses and fills defaults (stride 1,
 * groups 1, the conv window from the weight), so that equal operators
 * compare, hash and export equal. */
static void normalize_attrs(const ApprofGraph *g, ApprofOpKind kind, const int *in, int n_in,
                            ApprofOpAttrs *a)
{
    ApprofOpAttrs n;
    memset(&n, 0, sizeof n);
    switch (kind) {
    case APPROF_OP_MATMUL:
        n.has_bias = a->has_bias ? 1 : 0;
        n.transpose_b = a->transpose_b ? 1 : 0;
        break;
    case APPROF_OP_BATCH_MATMUL:
        n.transpose_a = a->transpose_a ? 1 : 0;
        n.transpose_b = a->transpose_b ? 1 : 0;
        break;
    case APPROF_OP_CONV2D: case APPROF_OP_MAX_POOL: case APPROF_OP_AVG_POOL:
        for (int k = 0; k < 2; k++) {
            n.kernel[k] = a->kernel[k];
            n.stride[k] = a->stride[k] > 0 ? a->stride[k] : 1;
            n.padding[k] = a->padding[k];
        }
        if (kind == APPROF_OP_CONV2D) {
            const ApprofTensor *w = &g->tensors[in[n_in > 1 ? 1 : 0]];
            n.groups = a->groups > 0 ? a->groups : 1;
            n.has_bias = a->has_bias ? 1 : 0;
            if (n_in > 1 && w->ndim == 4 && !n.kernel[0] && !n.kernel[1]) {
                n.kernel[0] = (int)w->dims[2];
                n.kernel[1] = (int)w->dims[3];
            }
        }
        break;
    case APPROF_OP_SOFTMAX: case APPROF_OP_CONCAT:
        n.axis = a->axis;
        break;
    case APPROF_OP_TRANSPOSE:
        memcpy(n.perm, a->perm, sizeof n.perm);
        for (int d = g->tensors[in[0]].ndim; d < APPROF_MAX_DIMS; d++)
            n.perm[d] = 0;
        break;
    case APPROF_OP_SLICE:
        n.axis = a->axis;
        n.start = a->start;
        n.length = a->length;
        break;
    case APPROF_OP_SPLIT:
        n.axis = a->axis;
        for (int j = 0; j < APPROF_MAX_OUTPUTS && a->sizes[j] > 0; j++)
            n.sizes[j] = a->sizes[j];
        break;
    case APPROF_OP_ATTENTION:
        n.causal = a->causal ? 1 : 0;
        n.unpad = a->unpad ? 1 : 0;
        n.eager = a->eager ? 1 : 0;
        break;
    case APPROF_OP_RMS_NORM: case APPROF_OP_ROPE:
        n.eager = a->eager ? 1 : 0;
        break;
    case APPROF_OP_DROPOUT:
        n.rate = a->rate;
        break;
    case APPROF_OP_RELU:
        n.inplace = a->inplace ? 1 : 0;
        break;
    case APPROF_OP_SILU:
    case APPROF_OP_GELU:
        n.rerun = a->rerun ? 1 : 0;
        break;
    case APPROF_OP_TOPK_ROUTER:
        n.top_k = a->top_k;
        break;
    case APPROF_OP_MOE_DISPATCH:
        n.capacity = a->capacity;
        break;
    case APPROF_OP_MOE_COMBINE:
        n.probs_in_experts = a->probs_in_experts ? 1 : 0;
        break;
    default:
        break;
    }
    *a = n;
}

static int infer(const ApprofGraph *g, const char *name, ApprofOpKind kind, const int *in, int n_in,
                 const ApprofOpAttrs *a, const int64_t *rdims, int rndim, OutInfo *o,
                 char *err, size_t errlen)
{
    const ApprofTensor *x = &g->tensors[in[0]];
    const ApprofTensor *w = n_in > 1 ? &g->tensors[in[1]] : NULL;
    char s1[96], s2[96];
    int need_min = 1, need_max = 1;

    switch (kind) {
    case APPROF_OP_MATMUL: need_min = need_max = 2 + (a->has_bias ? 1 : 0); break;
    case APPROF_OP_BATCH_MATMUL: case APPROF_OP_ADD: case APPROF_OP_MUL:
    case APPROF_OP_EMBEDDING: case APPROF_OP_CROSS_ENTROPY: case APPROF_OP_MSE_LOSS:
        need_min = need_max = 2; break;
    case APPROF_OP_CONV2D: need_min = need_max = 2 + (a->has_bias ? 1 : 0); break;
    case APPROF_OP_BATCH_NORM: case APPROF_OP_LAYER_NORM: need_min = need_max = 3; break;
    case APPROF_OP_RMS_NORM: case APPROF_OP_MOE_DISPATCH: case APPROF_OP_MOE_COMBINE:
        need_min = need_max = 2; break;
    case APPROF_OP_ATTENTION: need_min = need_max = 3; break;
    case APPROF_OP_CONCAT: need_min = 2; need_max = APPROF_MAX_INPUTS; break;
    default: break;
    }
    if (n_in < need_min || n_in > need_max)
        return approf_op_fail(err, errlen, name, "field inputs: %s takes %d%s input(s), got %d",
                    approf_op_kind_name(kind), need_min, need_max > need_min ? " or more" : "",
                    n_in);
    if (a->inplace && x->role != APPROF_TENSOR_ACT)
        return approf_op_fail(err, errlen, name, "field inplace: input '%s' is a model input or "
                              "parameter; only an operator's output can be overwritten", x->name);
    o->n = 1;
    o->dtype[0] = x->dtype;
    o->ndim[0] = x->ndim;
    memcpy(o->dims[0], x->dims, sizeof x->dims);
    o->batch_dim[0] = x->batch_dim;
    shape_str(x, s1, sizeof s1);
    if (w)
        shape_str(w, s2, sizeof s2);

    switch (kind) {
    case APPROF_OP_MATMUL: {
        int64_t k, n;
        if (x->ndim < 1 || w->ndim != 2)
            return approf_op_fail(err, errlen, name, "field inputs: matmul needs x[..., k] and a 2-D weight, got %s and %s", s1, s2);
        k = a->transpose_b ? w->dims[1] : w->dims[0];
        n = a->transpose_b ? w->dims[0] : w->dims[1];
        if (x->dims[x->ndim - 1] != k)
            return approf_op_fail(err, errlen, name, "field inputs[1]: weight %s does not contract with x %s", s2, s1);
        if (a->has_bias) {
            const ApprofTensor *b = &g->tensors[in[2]];
            if (b->ndim != 1 || b->dims[0] != n)
                return approf_op_fail(err, errlen, name, "field inputs[2]: bias must be [%lld]", (long long)n);
        }
        o->dims[0][x->ndim - 1] = n;
        if (x->batch_dim == x->ndim - 1)
            o->batch_dim[0] = -1;
        break;
    }
    case APPROF_OP_BATCH_MATMUL: {
        int r = x->ndim;
        int64_t m, k, k2, n;
        if (r < 2 || w->ndim != r)
            return approf_op_fail(err, errlen, name, "field inputs: batch_matmul operands %s and %s must have the same rank >= 2", s1, s2);
        /* Batch dims broadcast numpy-style: a size 1 on one side repeats. */
        for (int d = 0; d < r - 2; d++) {
            if (x->dims[d] != w->dims[d] && x->dims[d] != 1 && w->dims[d] != 1)
                return approf_op_fail(err, errlen, name, "field inputs[1]: batch dimension %d differs: %s vs %s", d, s1, s2);
            if (w->dims[d] > x->dims[d])
                o->dims[0][d] = w->dims[d];
        }
        m = a->transpose_a ? x->dims[r - 1] : x->dims[r - 2];
        k = a->transpose_a ? x->dims[r - 2] : x->dims[r - 1];
        k2 = a->transpose_b ? w->dims[r - 1] : w->dims[r - 2];
        n = a->transpose_b ? w->dims[r - 2] : w->dims[r - 1];
        if (k != k2)
            return approf_op_fail(err, errlen, name, "field inputs[1]: contraction sizes differ: %s vs %s", s1, s2);
        o->dims[0][r - 2] = m;
        o->dims[0][r - 1] = n;
        if (x->batch_dim >= r - 2)
            o->batch_dim[0] = -1;
        break;
    }
    case APPROF_OP_CONV2D: {
        int groups = a->groups > 0 ? a->groups : 1;
        int64_t ho, wo;
        if (x->ndim != 4 || w->ndim != 4)
            return approf_op_fail(err, errlen, name, "field inputs: conv2d needs x[N, C, H, W] and w[K, C/g, R, S], got %s and %s", s1, s2);
        if (x->dims[1] % groups || w->dims[0] % groups || w->dims[1] * groups != x->dims[1])
            return approf_op_fail(err, errlen, name, "field inputs[1]: weight %s does not match %lld input channels in %d groups", s2, (long long)x->dims[1], groups);
        if ((a->kernel[0] && a->kernel[0] != w->dims[2]) || (a->kernel[1] && a->kernel[1] != w->dims[3]))
            return approf_op_fail(err, errlen, name, "field kernel: attribute differs from weight %s", s2);
        if (pool_out(x->dims[2], (int)w->dims[2], a->stride[0] ? a->stride[0] : 1, a->padding[0], &ho) < 0 ||
            pool_out(x->dims[3], (int)w->dims[3], a->stride[1] ? a->stride[1] : 1, a->padding[1], &wo) < 0)
            return approf_op_fail(err, errlen, name, "field stride/padding: window does not fit input %s", s1);
        if (a->has_bias) {
            const ApprofTensor *b = &g->tensors[in[2]];
            if (b->ndim != 1 || b->dims[0] != w->dims[0])
                return approf_op_fail(err, errlen, name, "field inputs[2]: bias must be [%lld]", (long long)w->dims[0]);
        }
        o->dims[0][1] = w->dims[0];
        o->dims[0][2] = ho;
        o->dims[0][3] = wo;
        break;
    }
    case APPROF_OP_BATCH_NORM: case APPROF_OP_LAYER_NORM: {
        int cd = kind == APPROF_OP_BATCH_NORM ? 1 : x->ndim - 1;
        if (x->ndim < (kind == APPROF_OP_BATCH_NORM ? 2 : 1))
            return approf_op_fail(err, errlen, name, "field inputs[0]: rank of %s too small", s1);
        for (int i = 1; i < 3; i++) {
            const ApprofTensor *p = &g->tensors[in[i]];
            if (p->ndim != 1 || p->dims[0] != x->dims[cd])
                return approf_op_fail(err, errlen, name, "field inputs[%d]: %s must be [%lld]", i,
                            i == 1 ? "scale" : "bias", (long long)x->dims[cd]);
        }
        break;
    }
    case APPROF_OP_RELU: case APPROF_OP_GELU: case APPROF_OP_BOUNDARY: case APPROF_OP_SILU:
        break;
    case APPROF_OP_DROPOUT:
        if (!(a->rate >= 0.0 && a->rate < 1.0))
            return approf_op_fail(err, errlen, name, "field rate: %g is not in [0, 1)", a->rate);
        break;
    case APPROF_OP_ROPE:
        if (x->ndim < 2 || x->dims[x->ndim - 1] % 2)
            return approf_op_fail(err, errlen, name, "field inputs[0]: rope needs [..., seq, ..., head_dim] with an even head_dim, got %s", s1);
        break;
    case APPROF_OP_RMS_NORM: {
        const ApprofTensor *p = w;
        if (x->ndim < 1 || p->ndim != 1 || p->dims[0] != x->dims[x->ndim - 1])
            return approf_op_fail(err, errlen, name, "field inputs[1]: scale %s must be [%lld]", s2,
                        (long long)x->dims[x->ndim > 0 ? x->ndim - 1 : 0]);
        break;
    }
    case APPROF_OP_SLICE:
        if (a->axis < 0 || a->axis >= x->ndim)
            return approf_op_fail(err, errlen, name, "field axis: %d out of range for %s", a->axis, s1);
        /* start <= dim first, so that dim - start cannot overflow */
        if (a->start < 0 || a->length < 1 || a->start > x->dims[a->axis] ||
            a->length > x->dims[a->axis] - a->start)
            return approf_op_fail(err, errlen, name, "field length: %lld elements from %lld are not inside "
                        "dimension %d of %s", (long long)a->length, (long long)a->start, a->axis, s1);
        o->dims[0][a->axis] = a->length;
        if (x->batch_dim == a->axis && a->length != x->dims[a->axis])
            o->batch_dim[0] = -1;
        break;
    case APPROF_OP_SPLIT: {
        int64_t sum = 0;
        int n = 0;
        if (a->axis < 0 || a->axis >= x->ndim)
            return approf_op_fail(err, errlen, name, "field axis: %d out of range for %s", a->axis, s1);
        /* each size at most what is left of the dimension: the sum never overflows */
        while (n < APPROF_MAX_OUTPUTS && a->sizes[n] > 0 && sum <= x->dims[a->axis]) {
            if (a->sizes[n] > x->dims[a->axis] - sum) {
                sum = -1;
                break;
            }
            sum += a->sizes[n++];
        }
        if (n < 2 || sum != x->dims[a->axis])
            return approf_op_fail(err, errlen, name, "field sizes: 2 to %d sizes summing to dimension %d of %s needed",
                        APPROF_MAX_OUTPUTS, a->axis, s1);
        o->n = n;
        for (int j = 0; j < n; j++) {
            o->dtype[j] = x->dtype;
            o->ndim[j] = x->ndim;
            memcpy(o->dims[j], x->dims, sizeof x->dims);
            o->dims[j][a->axis] = a->sizes[j];
            o->batch_dim[j] = x->batch_dim == a->axis ? -1 : x->batch_dim;
        }
        break;
    }
    case APPROF_OP_ATTENTION: {
        const ApprofTensor *v = &g->tensors[in[2]];
        char s3[96];
        shape_str(v, s3, sizeof s3);
        if (x->ndim != 5 || w->ndim != 4 || v->ndim != 4)
            return approf_op_fail(err, errlen, name, "field inputs: attention needs q[B, S, Hkv, G, D], k and v [B, S', Hkv, D], got %s, %s, %s", s1, s2, s3);
        if (w->dims[0] != x->dims[0] || w->dims[2] != x->dims[2] || w->dims[3] != x->dims[4])
            return approf_op_fail(err, errlen, name, "field inputs[1]: k %s does not fit q %s", s2, s1);
        if (memcmp(v->dims, w->dims, sizeof(int64_t) * 4))
            return approf_op_fail(err, errlen, name, "field inputs[2]: v %s differs from k %s", s3, s2);
        if (a->causal && w->dims[1] != x->dims[1])
            return approf_op_fail(err, errlen, name, "field causal: needs as many keys as queries, got %s and %s", s1, s2);
        break;
    }
    case APPROF_OP_TOPK_ROUTER:
        if (x->ndim < 1 || a->top_k < 1 || a->top_k > x->dims[x->ndim - 1])
            return approf_op_fail(err, errlen, name, "field top_k: %d is not in 1..%lld experts of %s", a->top_k,
                        (long long)x->dims[x->ndim > 0 ? x->ndim - 1 : 0], s1);
        break;
    case APPROF_OP_MOE_DISPATCH:
        if (x->ndim != 3 || w->ndim != 3 || w->dims[0] != x->dims[0] || w->dims[1] != x->dims[1])
            return approf_op_fail(err, errlen, name, "field inputs: moe_dispatch needs x[B, S, H] and weights[B, S, E], got %s and %s", s1, s2);
        if (a->capacity < 1)
            return approf_op_fail(err, errlen, name, "field capacity: %lld slots per expert", (long long)a->capacity);
        o->ndim[0] = 4;
        o->dims[0][0] = x->dims[0];
        o->dims[0][1] = w->dims[2];
        o->dims[0][2] = a->capacity;
        o->dims[0][3] = x->dims[2];
        o->batch_dim[0] = x->batch_dim == 0 ? 0 : -1;
        break;
    case APPROF_OP_MOE_COMBINE:
        if (x->ndim != 4 || w->ndim != 3 || w->dims[0] != x->dims[0] || w->dims[2] != x->dims[1])
            return approf_op_fail(err, errlen, name, "field inputs: moe_combine needs y[B, E, C, H] and weights[B, S, E], got %s and %s", s1, s2);
        o->ndim[0] = 3;
        o->dims[0][0] = x->dims[0];
        o->dims[0][1] = w->dims[1];
        o->dims[0][2] = x->dims[3];
        o->batch_dim[0] = x->batch_dim == 0 || w->batch_dim == 0 ? 0 : -1;
        break;
    case APPROF_OP_ADD: case APPROF_OP_MUL: {
        int off = x->ndim - w->ndim;
        if (off < 0)
            return approf_op_fail(err, errlen, name, "field inputs[1]: %s has a higher rank than %s", s2, s1);
        for (int d = 0; d < w->ndim; d++)
            if (w->dims[d] != 1 && w->dims[d] != x->dims[d + off])
                return approf_op_fail(err, errlen, name, "field inputs[1]: %s does not broadcast to %s", s2, s1);
        if (x->batch_dim < 0 && w->batch_dim >= 0 && w->dims[w->batch_dim] == x->dims[w->batch_dim + off])
            o->batch_dim[0] = w->batch_dim + off;
        break;
    }
    case APPROF_OP_MAX_POOL: case APPROF_OP_AVG_POOL: {
        int64_t ho, wo;
        if (x->ndim != 4)
            return approf_op_fail(err, errlen, name, "field inputs[0]: pooling needs NCHW, got %s", s1);
        if (pool_out(x->dims[2], a->kernel[0], a->stride[0] ? a->stride[0] : 1, a->padding[0], &ho) < 0 ||
            pool_out(x->dims[3], a->kernel[1], a->stride[1] ? a->stride[1] : 1, a->padding[1], &wo) < 0)
            return approf_op_fail(err, errlen, name, "field kernel: window does not fit input %s", s1);
        o->dims[0][2] = ho;
        o->dims[0][3] = wo;
        break;
    }
    case APPROF_OP_GLOBAL_POOL:
        if (x->ndim < 3)
            return approf_op_fail(err, errlen, name, "field inputs[0]: global_pool needs [N, C, spatial...], got %s", s1);
        o->ndim[0] = 2;
        if (x->batch_dim > 1)
            o->batch_dim[0] = -1;
        break;
    case APPROF_OP_SOFTMAX:
        if (a->axis < 0 || a->axis >= x->ndim)
            return approf_op_fail(err, errlen, name, "field axis: %d out of range for %s", a->axis, s1);
        break;
    case APPROF_OP_EMBEDDING:
        if (w->ndim != 2 || x->ndim + 1 > APPROF_MAX_DIMS)
            return approf_op_fail(err, errlen, name, "field inputs[1]: table must be [V, H], got %s", s2);
        o->ndim[0] = x->ndim + 1;
        o->dims[0][x->ndim] = w->dims[1];
        o->dtype[0] = w->dtype;
        break;
    case APPROF_OP_RESHAPE:
        if (!rdims || shape_ok(rndim, rdims) < 0)
            return approf_op_fail(err, errlen, name, "field shape: missing or absurd target shape");
        {
            int64_t ne = 1;
            for (int d = 0; d < rndim; d++)
                ne *= rdims[d];
            if (ne != approf_tensor_elements(x))
                return approf_op_fail(err, errlen, name, "field shape: %lld elements cannot come from %s", (long long)ne, s1);
        }
        o->ndim[0] = rndim;
        for (int d = 0; d < rndim; d++)
            o->dims[0][d] = rdims[d];
        o->batch_dim[0] = reshape_batch_dim(x, rndim, rdims);
        break;
    case APPROF_OP_TRANSPOSE: {
        int seen[APPROF_MAX_DIMS] = {0};
        o->batch_dim[0] = -1;
        for (int d = 0; d < x->ndim; d++) {
            int p = a->perm[d];
            if (p < 0 || p >= x->ndim || seen[p]++)
                return approf_op_fail(err, errlen, name, "field perm: not a permutation of %d dimensions", x->ndim);
            o->dims[0][d] = x->dims[p];
            if (p == x->batch_dim)
                o->batch_dim[0] = d;
        }
        break;
    }
    case APPROF_OP_CONCAT:
        if (a->axis < 0 || a->axis >= x->ndim)
            return approf_op_fail(err, errlen, name, "field axis: %d out of range for %s", a->axis, s1);
        for (int i = 1; i < n_in; i++) {
            const ApprofTensor *t = &g->tensors[in[i]];
            if (t->ndim != x->ndim)
                return approf_op_fail(err, errlen, name, "field inputs[%d]: rank differs from %s", i, s1);
            for (int d = 0; d < x->ndim; d++)
                if (d != a->axis && t->dims[d] != x->dims[d])
                    return approf_op_fail(err, errlen, name, "field inputs[%d]: dimension %d differs from %s", i, d, s1);
            o->dims[0][a->axis] += t->dims[a->axis];
        }
        break;
    case APPROF_OP_CROSS_ENTROPY:
        if (x->ndim < 1 || w->ndim != x->ndim - 1)
            return approf_op_fail(err, errlen, name, "field inputs[1]: labels %s must be logits %s without the class dim", s2, s1);
        for (int d = 0; d < w->ndim; d++)
            if (w->dims[d] != x->dims[d])
                return approf_op_fail(err, errlen, name, "field inputs[1]: labels %s do not match logits %s", s2, s1);
        o->ndim[0] = 0;
        o->batch_dim[0] = -1;
        break;
    case APPROF_OP_MSE_LOSS:
        if (w->ndim != x->ndim || memcmp(w->dims, x->dims, sizeof(int64_t) * (size_t)x->ndim))
            return approf_op_fail(err, errlen, name, "field inputs[1]: target %s does not match prediction %s", s2, s1);
        o->ndim[0] = 0;
        o->batch_dim[0] = -1;
        break;
    default:
        return approf_op_fail(err, errlen, name, "field op: unknown operator kind %d", (int)kind);
    }
    for (int j = 0; j < o->n; j++)
        if (shape_ok(o->ndim[j], o->dims[j]) < 0)
            return approf_op_fail(err, errlen, name, "field outputs[%d]: absurd output size", j);
    return 0;
}

int approf_graph_add_op(ApprofGraph *g, const char *name, ApprofOpKind kind,
                        const int *inputs, int n_inputs, const ApprofOpAttrs *attrs,
                        const int64_t *out_dims, int out_ndim, char *err, size_t errlen)
{
    ApprofOpAttrs a;
    OutInfo o;
    ApprofOp *op;
    int rc;
    const char *nm = name ? name : "?";

    if (err && errlen)
        err[0] = '\0';
    if (!g || !inputs || n_inputs < 1 || n_inputs > APPROF_MAX_INPUTS)
        return approf_op_fail(err, errlen, nm, "field inputs: between 1 and %d inputs needed", APPROF_MAX_INPUTS);
    if ((int)kind < 0 || kind >= APPROF_OP_KIND_COUNT)
        return approf_op_fail(err, errlen, nm, "field op: unknown operator kind %d", (int)kind);
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] < 0 || (size_t)inputs[i] >= g->n_tensors)
            return approf_op_fail(err, errlen, nm, "field inputs[%d]: no tensor %d", i, inputs[i]);
    if (attrs)
        a = *attrs;
    else
        memset(&a, 0, sizeof a);
    memset(&o, 0, sizeof o);
    normalize_attrs(g, kind, inputs, n_inputs, &a);
    rc = infer(g, nm, kind, inputs, n_inputs, &a, out_dims, out_ndim, &o, err, errlen);
    if (rc < 0)
        return rc;
    if (UTIL_GROW(g->ops, g->cap_ops, g->n_ops + 1) < 0)
        return APPROF_ENOMEM;
    op = &g->ops[g->n_ops];
    memset(op, 0, sizeof *op);
    snprintf(op->name, sizeof op->name, "%s", nm);
    op->kind = kind;
    op->n_inputs = n_inputs;
    for (int i = 0; i < n_inputs; i++)
        op->inputs[i] = inputs[i];
    op->attrs = a;
    op->n_outputs = o.n;
    int grad = 0;
    for (int i = 0; i < n_inputs; i++)
        grad |= g->tensors[inputs[i]].requires_grad;
    for (int j = 0; j < o.n; j++) {
        char tn[APPROF_NAME_MAX + 8];
        int t;
        snprintf(tn, sizeof tn, "%s:out%d", nm, j);
        t = approf_graph_add_tensor(g, tn, APPROF_TENSOR_ACT, o.dtype[j], o.ndim[j], o.dims[j], o.batch_dim[j]);
        if (t < 0)
            return t;
        g->tensors[t].producer = (int)g->n_ops;
        g->tensors[t].requires_grad = grad;
        op = &g->ops[g->n_ops];
        op->outputs[j] = t;
    }
    return (int)g->n_ops++;
}
