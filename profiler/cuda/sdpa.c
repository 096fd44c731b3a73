/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fused attention kernel through cuDNN's backend (graph) API, in C: the
 * operation graph sdpa_plan.c describes becomes backend descriptors
 * (tensors, matmul / pointwise / reduction / reshape operations, the
 * operation graph), cuDNN's heuristics (mode A, then the fallback list)
 * give engine configurations, and the first whose execution plan
 * finalizes runs it (cudnnBackendExecute with a variant pack of the
 * arrays' device pointers, the host scalars and the workspace). Any
 * refusal (NOT_SUPPORTED from a finalize, no engine, a workspace larger
 * than the one the module holds) is returned with cuDNN's text so that
 * the caller falls back to the attention's GEMMs and says why. Plans
 * (and refusals) are kept per shape in the module's context: a sweep
 * measures the same attention in many entries, and the fused engine
 * compiles its kernel when the plan is made; only the variant pack is
 * remade when the arrays move. docs/cudnn-attention.md.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module_int.h"
#include "sdpa.h"

/* tensors, two per operation, the graph, and per heuristics mode: the query,
 * its engine configurations and a plan tried for each */
#define SDPA_MAX_CFG 64
#define SDPA_MAX_DESC \
    (APPROF_SDPA_MAX_TENSORS + 2 * APPROF_SDPA_MAX_OPS + 1 + 2 * (1 + 2 * SDPA_MAX_CFG))

typedef struct CudaSdpa {
    ApprofSdpaShape key;
    int refused;                 /* cuDNN refused the shape: why says why */
    char why[256];
    ApprofSdpaGraph g;
    cudnnBackendDescriptor_t desc[SDPA_MAX_DESC]; /* every descriptor made, freed at release */
    int ndesc;
    cudnnBackendDescriptor_t tens[APPROF_SDPA_MAX_TENSORS];
    cudnnBackendDescriptor_t plan, pack;
    cudnnBackendDescriptor_t dev;  /* deviceless check: the device described */
    int compiled_only;             /* deviceless: the plan compiled, not loadable */
    int64_t engine;                /* the plan's engine (global index), -1 unknown */
    void *pack_bufs[3], *pack_ws;  /* what the pack points at */
    int64_t uids[APPROF_SDPA_MAX_TENSORS];
    void *ptrs[APPROF_SDPA_MAX_TENSORS];
    int nptr;
    size_t ws_need;
    void *acc;                   /* dQ's accumulator (backward) */
    size_t acc_bytes;
    int zero_acc;                /* cuDNN before 9.6 wants it zeroed before each run */
} CudaSdpa;

/* cuDNN's status and its last error text into err; APPROF_EUNSUPPORTED
 * for NOT_SUPPORTED (any of its sub-codes), else cudnn_ck's code. */
static int dnn(cudnnStatus_t s, const char *what, char *err, size_t errlen)
{
    char last[200] = "";
    if (s == CUDNN_STATUS_SUCCESS)
        return 0;
    cudnnGetLastErrorString(last, sizeof last);
    snprintf(err, errlen, "%s: %s%s%.190s", what, cudnnGetErrorString(s), last[0] ? ": " : "",
             last);
    if (s / 1000 == CUDNN_STATUS_NOT_SUPPORTED / 1000)
        return APPROF_EUNSUPPORTED;
    return (s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
            s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED) ? APPROF_ENOMEM : APPROF_EIO;
}

static int make(CudaSdpa *p, cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t *out,
                char *err, size_t errlen)
{
    if (p->ndesc >= SDPA_MAX_DESC) {
        snprintf(err, errlen, "cuDNN attention: too many descriptors");
        return APPROF_EIO;
    }
    int rc = dnn(cudnnBackendCreateDescriptor(type, out), "cudnnBackendCreateDescriptor", err,
                 errlen);
    if (rc == 0)
        p->desc[p->ndesc++] = *out;
    return rc;
}

#define SET(d, attr, type, n, ptr)                                                              \
    do {                                                                                        \
        rc = dnn(cudnnBackendSetAttribute((d), (attr), (type), (n), (ptr)), #attr, err, errlen); \
        if (rc < 0)                                                                             \
            return rc;                                                                          \
    } while (0)

static cudnnDataType_t dtype_of(int t)
{
    switch (t) {
    case APPROF_SDPA_F16: return CUDNN_DATA_HALF;
    case APPROF_SDPA_BF16: return CUDNN_DATA_BFLOAT16;
    case APPROF_SDPA_I32: return CUDNN_DATA_INT32;
    case APPROF_SDPA_BOOL: return CUDNN_DATA_BOOLEAN;
    default: return CUDNN_DATA_FLOAT;
    }
}

static cudnnPointwiseMode_t pw_mode(int m)
{
    switch (m) {
    case APPROF_SDPA_PW_ADD: return CUDNN_POINTWISE_ADD;
    case APPROF_SDPA_PW_SUB: return CUDNN_POINTWISE_SUB;
    case APPROF_SDPA_PW_MUL: return CUDNN_POINTWISE_MUL;
    case APPROF_SDPA_PW_DIV: return CUDNN_POINTWISE_DIV;
    case APPROF_SDPA_PW_EXP: return CUDNN_POINTWISE_EXP;
    case APPROF_SDPA_PW_LOG: return CUDNN_POINTWISE_LOG;
    case APPROF_SDPA_PW_GEN_INDEX: return CUDNN_POINTWISE_GEN_INDEX;
    case APPROF_SDPA_PW_CMP_GE: return CUDNN_POINTWISE_CMP_GE;
    case APPROF_SDPA_PW_BINARY_SELECT: return CUDNN_POINTWISE_BINARY_SELECT;
    default: return CUDNN_POINTWISE_IDENTITY;
    }
}

static int make_tensor(CudaSdpa *p, int i, char *err, size_t errlen)
{
    const ApprofSdpaTensor *t = &p->g.t[i];
    cudnnBackendDescriptor_t d;
    cudnnDataType_t dt = dtype_of(t->dtype);
    int64_t align = 16;
    bool yes = true;
    int rc = make(p, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &d, err, errlen);
    if (rc < 0)
        return rc;
    SET(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    SET(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, t->dim);
    SET(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, t->stride);
    SET(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &t->uid);
    SET(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    if (t->virt)
        SET(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
    if (t->by_value)
        SET(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes);
    rc = dnn(cudnnBackendFinalize(d), "tensor descriptor", err, errlen);
    p->tens[i] = d;
    return rc;
}

static int make_op(CudaSdpa *p, const ApprofSdpaOp *o, cudnnBackendDescriptor_t *out, char *err,
                   size_t errlen)
{
    cudnnBackendDescriptor_t d, op;
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT, math = dtype_of(o->math);
    float one = 1.0f;
    int rc;

    switch (o->kind) {
    case APPROF_SDPA_MATMUL:
        if ((rc = make(p, CUDNN_BACKEND_MATMUL_DESCRIPTOR, &d, err, errlen)) < 0)
            return rc;
        SET(d, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
        if ((rc = dnn(cudnnBackendFinalize(d), "matmul descriptor", err, errlen)) < 0)
            return rc;
        if ((rc = make(p, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &op, err, errlen)) < 0)
            return rc;
        SET(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &p->tens[o->x]);
        SET(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &p->tens[o->b]);
        SET(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &p->tens[o->y]);
        SET(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
        break;
    case APPROF_SDPA_POINTWISE: {
        cudnnPointwiseMode_t mode = pw_mode(o->mode);
        int64_t axis = o->axis;
        if ((rc = make(p, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &d, err, errlen)) < 0)
            return rc;
        SET(d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
        SET(d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math);
        if (o->mode == APPROF_SDPA_PW_GEN_INDEX)
            SET(d, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
        if ((rc = dnn(cudnnBackendFinalize(d), "pointwise descriptor", err, errlen)) < 0)
            return rc;
        if ((rc = make(p, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op, err, errlen)) < 0)
            return rc;
        SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
        SET(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &p->tens[o->x]);
        if (o->b >= 0)
            SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &p->tens[o->b]);
        if (o->t >= 0)
            SET(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                &p->tens[o->t]);
        SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &p->tens[o->y]);
        SET(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
        SET(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
        break;
    }
    case APPROF_SDPA_REDUCTION: {
        cudnnReduceTensorOp_t red = o->mode == APPROF_SDPA_RED_MAX ? CUDNN_REDUCE_TENSOR_MAX
                                                                  : CUDNN_REDUCE_TENSOR_ADD;
        if ((rc = make(p, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &d, err, errlen)) < 0)
            return rc;
        SET(d, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &red);
        SET(d, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
        if ((rc = dnn(cudnnBackendFinalize(d), "reduction descriptor", err, errlen)) < 0)
            return rc;
        if ((rc = make(p, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, &op, err, errlen)) < 0)
            return rc;
        SET(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &p->tens[o->x]);
        SET(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &p->tens[o->y]);
        SET(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
        break;
    }
    default:
        if ((rc = make(p, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, &op, err, errlen)) < 0)
            return rc;
        SET(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &p->tens[o->x]);
        SET(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &p->tens[o->y]);
        break;
    }
    *out = op;
    return dnn(cudnnBackendFinalize(op), "operation descriptor", err, errlen);
}

/* The first engine configuration of heuristics mode `mode` whose plan
 * finalizes: 0 with p->plan set; APPROF_EUNSUPPORTED when none does. */
static int plan_with(CudaSdpa *p, cudnnHandle_t h, cudnnBackendDescriptor_t graph,
                     cudnnBackendHeurMode_t mode, char *err, size_t errlen)
{
    cudnnBackendDescriptor_t heur, cfg[SDPA_MAX_CFG];
    int64_t n = 0;
    int rc = make(p, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur, err, errlen);
    if (rc < 0)
        return rc;
    SET(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    SET(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (p->dev)
        SET(heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->dev);
    if ((rc = dnn(cudnnBackendFinalize(heur), "heuristics", err, errlen)) < 0)
        return rc;
    if ((rc = dnn(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL),
                  "heuristics' result count", err, errlen)) < 0)
        return rc;
    if (n > SDPA_MAX_CFG)
        n = SDPA_MAX_CFG;
    for (int64_t i = 0; i < n; i++)
        if ((rc = make(p, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[i], err, errlen)) < 0)
            return rc;
    if (n > 0 && (rc = dnn(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &n, cfg),
                           "heuristics' results", err, errlen)) < 0)
        return rc;
    snprintf(err, errlen, "cuDNN attention: heuristics gave no engine configuration");
    rc = APPROF_EUNSUPPORTED;
    for (int64_t i = 0; i < n; i++) {
        cudnnBackendDescriptor_t plan;
        int r = make(p, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan, err, errlen);
        if (r < 0)
            return r;
        if (p->dev)
            r = dnn(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->dev),
                    "plan device properties", err, errlen);
        else
            r = dnn(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                             CUDNN_TYPE_HANDLE, 1, &h),
                    "plan handle", err, errlen);
        if (r == 0)
            r = dnn(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]),
                    "plan engine configuration", err, errlen);
        if (r == 0) {
            cudnnStatus_t fs = cudnnBackendFinalize(plan);
            /* deviceless: the engine took the graph and compiled its kernel;
             * only loading it needs the driver */
            if (p->dev && fs == CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER) {
                p->compiled_only = 1;
                fs = CUDNN_STATUS_SUCCESS;
            }
            r = dnn(fs, "execution plan", err, errlen);
        }
        if (r == 0) {
            cudnnBackendDescriptor_t eng;
            int64_t got = 0;
            p->plan = plan;
            p->engine = -1;
            if (make(p, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng, err, errlen) == 0 &&
                cudnnBackendGetAttribute(cfg[i], CUDNN_ATTR_ENGINECFG_ENGINE,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                         &eng) == CUDNN_STATUS_SUCCESS)
                cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                         &got, &p->engine);
            return 0;
        }
        if (r == APPROF_ENOMEM)
            return r;
        rc = r == APPROF_EUNSUPPORTED ? r : rc;
    }
    return rc;
}

/* Heuristics mode A, then the fallback list; when both fail, mode A's
 * reason (the informative one) with the fallback's after it. */
static int plan_modes(CudaSdpa *p, cudnnHandle_t h, cudnnBackendDescriptor_t graph, char *err,
                      size_t errlen)
{
    char first[256];
    int rc = plan_with(p, h, graph, CUDNN_HEUR_MODE_A, err, errlen);
    if (rc != APPROF_EUNSUPPORTED)
        return rc;
    snprintf(first, sizeof first, "%s", err);
    rc = plan_with(p, h, graph, CUDNN_HEUR_MODE_FALLBACK, err, errlen);
    if (rc < 0) {
        char second[256];
        snprintf(second, sizeof second, "%s", err);
        snprintf(err, errlen, "%s (fallback list: %.100s)", first, second);
    }
    return rc;
}

/* Builds the variant pack over arrays placed at bufs[buf] + offset. */
static int make_pack(CudaSdpa *p, void *const bufs[3], void *ws, char *err, size_t errlen)
{
    int rc;
    p->nptr = 0;
    for (int i = 0; i < p->g.nt; i++) {
        ApprofSdpaTensor *t = &p->g.t[i];
        if (t->virt)
            continue;
        p->uids[p->nptr] = t->uid;
        if (t->by_value)
            p->ptrs[p->nptr] = &t->value;
        else if (i == p->g.dq_accum)
            p->ptrs[p->nptr] = p->acc;
        else
            p->ptrs[p->nptr] = (char *)bufs[t->buf] + p->g.arrays[t->buf].offset[t->array];
        p->nptr++;
    }
    if (p->pack)
        cudnnBackendDestroyDescriptor(p->pack);
    p->pack = NULL;
    if ((rc = dnn(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &p->pack),
                  "variant pack", err, errlen)) < 0)
        return rc;
    for (int i = 0; i < 3; i++)
        p->pack_bufs[i] = bufs[i];
    p->pack_ws = ws;
    SET(p->pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, p->nptr, p->ptrs);
    SET(p->pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, p->nptr, p->uids);
    SET(p->pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    return dnn(cudnnBackendFinalize(p->pack), "variant pack", err, errlen);
}

/* Destroys p's descriptors (a refused shape keeps only its reason). */
static void sdpa_free_descriptors(CudaSdpa *p)
{
    if (p->pack)
        cudnnBackendDestroyDescriptor(p->pack);
    for (int i = p->ndesc - 1; i >= 0; i--)
        cudnnBackendDestroyDescriptor(p->desc[i]);
    p->pack = p->plan = NULL;
    p->ndesc = 0;
}

static void sdpa_free(CudaSdpa *p)
{
    if (!p)
        return;
    sdpa_free_descriptors(p);
    free(p);
}

static int same_shape(const ApprofSdpaShape *a, const ApprofSdpaShape *b)
{
    return a->b == b->b && a->hq == b->hq && a->hkv == b->hkv && a->sq == b->sq &&
           a->skv == b->skv && a->d == b->d && a->causal == b->causal &&
           a->backward == b->backward && a->dtype == b->dtype;
}

/* Keeps p in the context's cache (which then owns it): 1, or 0 when the
 * cache is full (the caller keeps it). */
static int cache_put(CudaCtx *c, CudaSdpa *p)
{
    if (c->n_sdpa_cache >= (int)(sizeof c->sdpa_cache / sizeof c->sdpa_cache[0]))
        return 0;
    c->sdpa_cache[c->n_sdpa_cache++] = p;
    return 1;
}

void cuda_sdpa_cache_free(CudaCtx *c)
{
    for (int i = 0; i < c->n_sdpa_cache; i++)
        sdpa_free(c->sdpa_cache[i]);
    c->n_sdpa_cache = 0;
}

/* The arrays' state before a run: dQ's accumulator zeroed; the backward's
 * softmax statistics 0 (exp of the scores stays finite on the fill
 * kernel's values in [-1, 1)). */
static int init_arrays(CudaCtx *c, CudaSdpa *p, void *const bufs[3], char *err, size_t errlen)
{
    int rc = 0;
    if (p->g.dq_accum >= 0) {
        /* in the aux buffer the module allocated with the others */
        const ApprofSdpaTensor *t = &p->g.t[p->g.dq_accum];
        p->acc = (char *)bufs[t->buf] + p->g.arrays[t->buf].offset[t->array];
        p->acc_bytes = (size_t)p->g.arrays[t->buf].bytes[t->array];
        rc = cuda_ck(cudaMemsetAsync(p->acc, 0, p->acc_bytes, c->stream), "dQ accumulator", err,
                     errlen);
    }
    if (rc == 0 && p->key.backward) {
        const ApprofOpArrays *in = &p->g.arrays[0];
        rc = cuda_ck(cudaMemsetAsync((char *)bufs[0] + in->offset[5], 0, (size_t)in->bytes[5],
                                     c->stream),
                     "softmax statistics", err, errlen);
    }
    return rc;
}

int cuda_sdpa_prepare(CudaCtx *c, CudaOp *op, const ApprofSdpaShape *s, void *const bufs[3],
                      void *ws, size_t ws_size, char *err, size_t errlen)
{
    cudnnBackendDescriptor_t ops[APPROF_SDPA_MAX_OPS], graph;
    size_t ver = cudnnGetVersion();
    int64_t need = 0, got = 0;
    int rc;
    CudaSdpa *p;

    /* a shape seen before: its plan (or cuDNN's refusal) again, the
     * variant pack remade when the arrays moved */
    for (int i = 0; i < c->n_sdpa_cache; i++) {
        p = c->sdpa_cache[i];
        if (!same_shape(&p->key, s))
            continue;
        if (p->refused) {
            snprintf(err, errlen, "%s", p->why);
            return APPROF_EUNSUPPORTED;
        }
        if (p->ws_need > ws_size) {
            snprintf(err, errlen,
                     "cuDNN attention: the plan needs %zu bytes of workspace, %zu held",
                     p->ws_need, ws_size);
            return APPROF_EUNSUPPORTED;
        }
        rc = init_arrays(c, p, bufs, err, errlen);
        if (rc == 0 && (p->pack_bufs[0] != bufs[0] || p->pack_bufs[1] != bufs[1] ||
                        p->pack_bufs[2] != bufs[2] || p->pack_ws != (p->ws_need ? ws : NULL)))
            rc = make_pack(p, bufs, p->ws_need ? ws : NULL, err, errlen);
        if (rc < 0)
            return rc;
        op->sdpa = p;
        op->sdpa_cached = 1;
        return 0;
    }
    p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of host memory");
        return APPROF_ENOMEM;
    }
    p->key = *s;
    /* -inf for the masked scores from cuDNN 9.10, the lowest float before
     * (cudnn-frontend's get_negative_inf_value) */
    if (approf_sdpa_graph(s, ver >= 91000 ? -__builtin_inff() : -3.40282347e38f, &p->g) < 0) {
        snprintf(err, errlen, "cuDNN attention: no graph for this shape");
        rc = APPROF_EUNSUPPORTED;
        goto fail;
    }
    for (int i = 0; i < p->g.nt; i++)
        if ((rc = make_tensor(p, i, err, errlen)) < 0)
            goto fail;
    for (int i = 0; i < p->g.nop; i++)
        if ((rc = make_op(p, &p->g.op[i], &ops[i], err, errlen)) < 0)
            goto fail;
    if ((rc = make(p, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph, err, errlen)) < 0)
        goto fail;
    rc = dnn(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, p->g.nop, ops),
             "operation graph's operations", err, errlen);
    if (rc == 0)
        rc = dnn(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                          CUDNN_TYPE_HANDLE, 1, &c->dnn),
                 "operation graph's handle", err, errlen);
    if (rc == 0)
        rc = dnn(cudnnBackendFinalize(graph), "operation graph", err, errlen);
    if (rc == 0)
        rc = plan_modes(p, c->dnn, graph, err, errlen);
    if (rc == 0)
        rc = dnn(cudnnBackendGetAttribute(p->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                          CUDNN_TYPE_INT64, 1, &got, &need),
                 "plan workspace size", err, errlen);
    if (rc < 0)
        goto fail;
    p->ws_need = need > 0 ? (size_t)need : 0;
    p->zero_acc = ver < 90600;
    if (p->ws_need > ws_size) {
        snprintf(err, errlen, "cuDNN attention: the plan needs %zu bytes of workspace, %zu held",
                 p->ws_need, ws_size);
        if (!cache_put(c, p))   /* kept: the next entry with this shape falls back at once */
            sdpa_free(p);
        return APPROF_EUNSUPPORTED;
    }
    rc = init_arrays(c, p, bufs, err, errlen);
    if (rc == 0)
        rc = make_pack(p, bufs, p->ws_need ? ws : NULL, err, errlen);
    if (rc < 0)
        goto fail;
    op->sdpa = p;
    op->sdpa_cached = cache_put(c, p);
    return 0;

fail:
    if (rc == APPROF_EUNSUPPORTED || rc == APPROF_EIO) {
        /* remembered: the next entry with this shape falls back at once */
        sdpa_free_descriptors(p);
        p->refused = 1;
        snprintf(p->why, sizeof p->why, "%s", err);
        if (cache_put(c, p))
            return rc;
    }
    sdpa_free(p);
    return rc;
}

int cuda_sdpa_check(const ApprofSdpaShape *s, const char *device_json, char *engine,
                    size_t enginelen, char *err, size_t errlen)
{
    cudnnBackendDescriptor_t ops[APPROF_SDPA_MAX_OPS], graph, dev = NULL;
    int rc = 0;
    CudaSdpa *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of host memory");
        return APPROF_ENOMEM;
    }
    if (approf_sdpa_graph(s, -__builtin_inff(), &p->g) < 0) {
        snprintf(err, errlen, "no graph for this shape");
        rc = APPROF_EINVAL;
    }
    for (int i = 0; rc == 0 && i < p->g.nt; i++)
        rc = make_tensor(p, i, err, errlen);
    for (int i = 0; rc == 0 && i < p->g.nop; i++) {
        char what[64];
        rc = make_op(p, &p->g.op[i], &ops[i], err, errlen);
        if (rc < 0) {
            snprintf(what, sizeof what, "operation %d (kind %d, mode %d): ", i, p->g.op[i].kind,
                     p->g.op[i].mode);
            size_t l = strlen(what), e = strlen(err);
            if (l + e < errlen) {
                memmove(err + l, err, e + 1);
                memcpy(err, what, l);
            }
        }
    }
    if (rc == 0)
        rc = make(p, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph, err, errlen);
    if (rc == 0)
        rc = dnn(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, p->g.nop, ops),
                 "operation graph's operations", err, errlen);
    if (rc == 0 && device_json) {
        /* deviceless (cuDNN 9.8 on): the graph, heuristics and a plan
         * against a device described in JSON */
        rc = make(p, CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, &dev, err, errlen);
        if (rc == 0)
            rc = dnn(cudnnBackendSetAttribute(dev, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION,
                                              CUDNN_TYPE_CHAR, (int64_t)strlen(device_json) + 1,
                                              device_json),
                     "device properties", err, errlen);
        if (rc == 0)
            rc = dnn(cudnnBackendFinalize(dev), "device properties", err, errlen);
        if (rc == 0)
            rc = dnn(cudnnBackendFinalize(graph), "operation graph", err, errlen);
        if (rc == 0) {
            p->dev = dev;
            rc = plan_modes(p, NULL, graph, err, errlen);
        }
        if (rc == 0 && engine)
            snprintf(engine, enginelen, "engine %lld%s", (long long)p->engine,
                     p->compiled_only ? ", kernel compiled (loading it needs the driver)" : "");
    }
    sdpa_free(p);
    return rc;
}

int cuda_sdpa_run(CudaCtx *c, CudaOp *op, char *err, size_t errlen)
{
    CudaSdpa *p = op->sdpa;
    int rc;
    if (p->zero_acc &&
        (rc = cuda_ck(cudaMemsetAsync(p->acc, 0, p->acc_bytes, c->stream), "dQ accumulator", err,
                      errlen)) < 0)
        return rc;
    return dnn(cudnnBackendExecute(c->dnn, p->plan, p->pack), "cudnnBackendExecute", err, errlen);
}

void cuda_sdpa_release(CudaOp *op)
{
    if (!op->sdpa_cached)
        sdpa_free(op->sdpa);
    op->sdpa = NULL;
    op->sdpa_cached = 0;
}
