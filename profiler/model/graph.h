/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator IR: a model is a DAG of operators over typed tensors, stored
 * with its operators in a topological order. This header is the contract
 * between model construction (zoo, model files, layer construction), the
 * intra-op sharding pass and the backends: every operator describes itself
 * as an iteration space (which loop dimensions exist, which are reductions,
 * how each operand dimension maps to them) and lowers to device kernels
 * (GEMMs, convolutions, elementwise, reductions) for given per-device loop
 * sizes, forward or backward.
 */
#ifndef APPROF_GRAPH_H
#define APPROF_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "kernel_op.h"

#define APPROF_MAX_DIMS 6      /* tensor rank */
#define APPROF_MAX_INPUTS 4    /* operator inputs */
#define APPROF_MAX_OUTPUTS 4   /* operator outputs (split) */
#define APPROF_MAX_ITER 8      /* loop dimensions of one operator */
#define APPROF_MAX_KERNELS 6   /* kernels one operator lowers to per phase */
#define APPROF_NAME_MAX 128

typedef enum { APPROF_F32 = 0, APPROF_F16, APPROF_BF16 } ApprofDtype;

typedef enum {
    APPROF_TENSOR_INPUT = 0, /* model input: data, labels */
    APPROF_TENSOR_PARAM,     /* trainable parameter owned by the model */
    APPROF_TENSOR_ACT,       /* produced by an operator */
} ApprofTensorRole;

typedef struct ApprofTensor {
    char name[APPROF_NAME_MAX];   /* parameters: a path such as "layer3/conv1/kernel" */
    ApprofTensorRole role;
    ApprofDtype dtype;
    int ndim;
    int64_t dims[APPROF_MAX_DIMS];
    int batch_dim;                /* dimension indexed by the sample, or -1 */
    int producer;                 /* operator index, -1 for inputs and params */
    int requires_grad;            /* a parameter, or computed from one: the backward pass
                                   * produces its gradient (set by the graph builder) */
} ApprofTensor;

typedef enum {
    APPROF_OP_MATMUL = 0,     /* dense: x[..., k] @ w[k, n] (+ b[n]) -> y[..., n];
                               * attrs.transpose_b: w is stored [n, k] (tied embeddings) */
    APPROF_OP_BATCH_MATMUL,   /* a[B..., m, k] @ b[B..., k, n] (transposes in attrs); a batch
                               * dim of size 1 in one operand broadcasts (grouped-query
                               * attention without repeating K/V; experts [1, E, k, n]) */
    APPROF_OP_CONV2D,         /* NCHW x, w[K, C/groups, R, S] (+ b[K]) */
    APPROF_OP_BATCH_NORM,     /* per channel (dim 1), scale and bias params */
    APPROF_OP_LAYER_NORM,     /* over the last dim, scale and bias params */
    APPROF_OP_RELU,
    APPROF_OP_GELU,
    APPROF_OP_ADD,            /* elementwise, second operand may broadcast */
    APPROF_OP_MUL,
    APPROF_OP_MAX_POOL,
    APPROF_OP_AVG_POOL,
    APPROF_OP_GLOBAL_POOL,    /* NCHW -> NC */
    APPROF_OP_SOFTMAX,        /* over attrs.axis */
    APPROF_OP_EMBEDDING,      /* ids[B, S] (int), table[V, H] -> [B, S, H] */
    APPROF_OP_RESHAPE,
    APPROF_OP_TRANSPOSE,      /* attrs.perm */
    APPROF_OP_CONCAT,         /* along attrs.axis */
    APPROF_OP_CROSS_ENTROPY,  /* logits[..., V], labels[...] -> scalar loss */
    APPROF_OP_BOUNDARY,       /* mark_pipeline_boundary: identity, cuts layers */
    APPROF_OP_MSE_LOSS,       /* pred[...], target[same shape] -> scalar mean squared error */
    /* Kinds after this line hash their extra attributes (start, length,
     * sizes, causal, top_k, capacity, rate); the ones above never do, so
     * graphs built from them keep their hashes. */
    APPROF_OP_RMS_NORM,       /* over the last dim, one scale param (no bias, no mean) */
    APPROF_OP_SILU,           /* x * sigmoid(x); SwiGLU = silu(gate) * up */
    APPROF_OP_ROPE,           /* rotary position embedding over the last dim (head dim) */
    APPROF_OP_SLICE,          /* attrs.axis, attrs.start, attrs.length */
    APPROF_OP_SPLIT,          /* along attrs.axis into attrs.sizes[0..n_outputs) */
    APPROF_OP_ATTENTION,      /* fused memory-efficient (flash) attention:
                               * q[B, S, Hkv, G, D], k[B, S', Hkv, D], v[B, S', Hkv, D]
                               * -> [B, S, Hkv, G, D]; G query heads share one kv head;
                               * attrs.causal. No S x S tensor is kept */
    APPROF_OP_DROPOUT,        /* attrs.rate; the backward reads the output (mask = y != 0) */
    APPROF_OP_TOPK_ROUTER,    /* logits[..., E] -> combine weights [..., E]: softmax, top
                               * attrs.top_k kept, the rest 0 */
    APPROF_OP_MOE_DISPATCH,   /* x[B, S, H], weights[B, S, E] -> [B, E, C, H]: each sample's
                               * tokens to their top_k experts, attrs.capacity slots each */
    APPROF_OP_MOE_COMBINE,    /* y[B, E, C, H], weights[B, S, E] -> [B, S, H]: weighted sum
                               * of each token's expert outputs */
    APPROF_OP_KIND_COUNT
} ApprofOpKind;

typedef struct ApprofOpAttrs {
    int kernel[2], stride[2], padding[2]; /* conv and pooling (h, w) */
    int groups;                           /* conv; 0 means 1 */
    int axis;                             /* softmax, concat (>= 0) */
    int perm[APPROF_MAX_DIMS];            /* transpose */
    int transpose_a, transpose_b;         /* batch matmul */
    int has_bias;                         /* matmul, conv: last input is the bias */
    int64_t start, length;                /* slice: [start, start + length) along axis */
    int64_t sizes[APPROF_MAX_OUTPUTS];    /* split: one size per output along axis */
    int causal;                           /* attention: causal mask (half the work) */
    int top_k;                            /* topk_router, moe_dispatch: experts per token */
    int64_t capacity;                     /* moe_dispatch: slots per expert and sample */
    double rate;                          /* dropout probability, 0 <= rate < 1 */
    int inplace;                          /* relu: overwrites its input and saves its output
                                           * for the backward (PyTorch's nn.ReLU(inplace=True),
                                           * as torchvision's ResNets use); the input must be
                                           * an operator output read by nothing else */
    int rerun;                            /* silu, gelu: a fused gated activation that saves
                                           * only its input: its output is not kept for the
                                           * backward, which reruns the forward (Megatron-Core's
                                           * SwiGLUFunction, megatron/core/fusions/
                                           * fused_bias_swiglu.py at 92c8482e6d, saves the fc1
                                           * output alone; docs/models.md, "Activation
                                           * fusion") */
    int probs_in_experts;                 /* moe_combine: the routing weights are applied
                                           * inside the experts, not by the combine, which
                                           * then sums their outputs and keeps none of them
                                           * for the backward (Megatron-Core from r0.12:
                                           * the dispatchers permute the probabilities with
                                           * the tokens and unpermute without them, and
                                           * TEGroupedMLP's fused weighted_bias_swiglu_impl
                                           * multiplies them in and takes their gradient
                                           * from its saved input; docs/models.md,
                                           * "Activation fusion") */
    int unpad;                            /* attention: flash-attn's varlen kernel called
                                           * through bert_padding's unpad_input/pad_input
                                           * (llm-foundry's flash_attn_fn, llmfoundry/models/
                                           * layers/attention.py at 5e85bd62d; flash-attn
                                           * 2.4.2 flash_attn/bert_padding.py): q, k and v
                                           * gathered into packed copies before the kernel,
                                           * the output zero-filled and index-put back after
                                           * it, the reverse in the backward; priced as
                                           * copy kernels (docs/models.md, "Unpadded flash
                                           * attention") */
    int eager;                            /* rms_norm, rope, attention: the forward as
                                           * torchtitan's eager PyTorch modules run it
                                           * (torchtitan 9dec370 models/norms.py RMSNorm,
                                           * models/llama/model.py apply_rotary_emb and
                                           * repeat_kv): the f32 upcasts, the separate
                                           * element-wise kernels and, for attention,
                                           * k and v copied to the query heads; the
                                           * backward stays the fused kernel's (opsem_eager.c,
                                           * docs/models.md, "Eager element-wise ops") */
} ApprofOpAttrs;

typedef struct ApprofOp {
    char name[APPROF_NAME_MAX];
    ApprofOpKind kind;
    int n_inputs, n_outputs;
    int inputs[APPROF_MAX_INPUTS];        /* tensor indices */
    int outputs[APPROF_MAX_OUTPUTS];
    ApprofOpAttrs attrs;
} ApprofOp;

/* A model graph. Operators are in topological order; tensors are owned by
 * the graph. Create with approf_graph_new, free with approf_graph_free. */
typedef struct ApprofGraph {
    char name[APPROF_NAME_MAX];
    ApprofDtype dtype;
    int64_t batch_size;          /* samples per global batch the graph is built for */
    ApprofTensor *tensors;
    size_t n_tensors, cap_tensors;
    ApprofOp *ops;
    size_t n_ops, cap_ops;
} ApprofGraph;

/* ---- iteration spaces: what intra-op sharding splits ------------------- */

typedef enum {
    APPROF_ITER_PARALLEL = 0, /* splitting it splits the work, no communication */
    APPROF_ITER_REDUCE,       /* splitting it leaves partial sums: all-reduce the outputs */
    APPROF_ITER_FIXED,        /* may not be split (softmax axis, conv window, ...) */
} ApprofIterKind;

typedef struct ApprofIterSpace {
    int n_iter;
    int64_t size[APPROF_MAX_ITER];
    ApprofIterKind kind[APPROF_MAX_ITER];
    int is_batch[APPROF_MAX_ITER];        /* the sample dimension */
    /* For operand dimension d: the loop dimension it is indexed by, or -1
     * (broadcast or not splittable along any loop). */
    int in_map[APPROF_MAX_INPUTS][APPROF_MAX_DIMS];
    int out_map[APPROF_MAX_OUTPUTS][APPROF_MAX_DIMS];
} ApprofIterSpace;

/* ---- kernels: what a backend executes or estimates --------------------- */

typedef enum {
    APPROF_K_GEMM = 0,        /* batch x (m x k) @ (k x n) */
    APPROF_K_CONV_FWD,
    APPROF_K_CONV_BWD_DATA,
    APPROF_K_CONV_BWD_FILTER,
    APPROF_K_ELEMENTWISE,     /* memory bound: elements, bytes */
    APPROF_K_REDUCTION,       /* norms, softmax, pooling, loss */
    APPROF_K_GATHER,          /* embedding lookup / its scatter-add gradient */
    APPROF_K_COPY,            /* transpose, concat (reshape lowers to nothing) */
} ApprofKernelKind;

typedef struct ApprofKernel {
    ApprofKernelKind kind;
    int op;                    /* source operator */
    ApprofDtype dtype;
    double flops;              /* floating-point operations */
    double bytes;              /* bytes read + written from device memory */
    int64_t batch, m, n, k;    /* GEMM (batch = 1 for plain); a fused attention
                                * lowers to GEMMs whose bytes are the fused kernel's */
    double store_bytes;        /* GEMM: the bytes of C (part of bytes) its epilogue
                                * stores after the main loop; 0 for a fused kernel's
                                * GEMMs, whose outputs stay on chip */
    int attention;             /* 1: one of a fused attention's GEMMs (priced at the
                                * spec's attention_efficiency) */
    int loss;                  /* 1 / 2: the forward / backward kernel of a cross-entropy
                                * over logits (the spec's loss_f32 prices it as an f32
                                * copy's kernels); 0: any other */
    int64_t conv_n, conv_c, conv_h, conv_w, conv_k, conv_r, conv_s;
    int conv_stride[2], conv_pad[2], conv_groups;
    int64_t elements;          /* elementwise / reduction / gather / copy */
    int async_group;           /* backward GEMM of a linear layer: the collectives of the
                                * same group (ApprofCollective.async_group) may run under it
                                * (the spec's tp_async_grad); 0: none */
    int async_wgrad;           /* 1: that GEMM computes the weight gradient (it hides the
                                * input gradient's reduction); 0: the input gradient (it
                                * hides the input's re-gather) */
    int wgrad;                 /* 1: a backward kernel that computes a parameter's gradient
                                * (a linear layer's dW and bias gradient, an expert
                                * weight's, a convolution's filter gradient, an
                                * embedding table's scatter-add), as the op's backward is
                                * lowered (model/opsem.c): the W pass of the zero-bubble
                                * schedules; 0: any other (a norm's kernel computes its
                                * input's and its scale's gradients at once: 0) */
    /* The operator a memory-bound kernel implements, for a backend that runs
     * it (kernel_op.h; the CUDA module's op_shape.h says what each reads and
     * writes): kop (APPROF_CUDA_OP_NONE: none of its own), its direction,
     * the row-wise view rows x cols, extent (a broadcast operand's
     * elements, an embedding's table rows, rotary positions), the dropout
     * rate; batch norm and pooling use the conv_* fields for their NCHW
     * input and window. Pricing reads only an embedding's table extent x
     * cols (hw/cost.c: the last gradient bucket holds the whole table). */
    int kop, kop_backward;
    int64_t rows, cols, extent;
    double rate;
    int fp8;                   /* GEMM: 1 when its A and B operands are FP8 (Transformer
                                * Engine's linear layers under approf sweep --fp8): priced
                                * at the spec's peak_flops_fp8 (hw/cost.c, docs/fp8.md);
                                * 0: its dtype's */
    /* GEMM of a MoE layer's experts (a batch matmul whose second operand
     * is a parameter, [1, E, k, n] in the zoo: one weight per expert): the
     * E experts on this device, which Megatron-Core runs as one grouped
     * GEMM (TEGroupedMLP: Transformer Engine's GroupedLinear, one GEMM per
     * expert over its own tokens_per_expert rows). Each expert's problem is
     * (batch / experts) x m rows of m x n x k joined (the samples' slots of
     * one expert are its tokens); experts_k 1: the tokens are the k
     * dimension instead (the weight gradient, x_e^T dy_e), already joined.
     * 0: not an expert GEMM. Read by the CUDA module only; pricing reads
     * neither. */
    int64_t experts;
    int experts_k;
    /* One of a fused attention's GEMMs (attention 1): the attention's
     * per-device problem, for a backend that runs the fused kernel itself
     * (the CUDA module: cuDNN's fused flash attention, cuda/sdpa.c):
     * batch, query heads, key/value heads (fewer under GQA), query and key
     * lengths, head dim, causal. attn_lead on the first GEMM of the
     * attention's forward (1) or backward (2) kernels (the kernel the
     * fused one stands for, with the rest up to the next lead; a
     * recomputed forward sits in the backward phase), 0 on the others and
     * on every other kernel. Read by the
     * CUDA module; pricing reads attn_skv only (hw/attention_rate.c, the
     * efficiency by key length), the signature none. */
    int64_t attn_b, attn_hq, attn_hkv, attn_sq, attn_skv, attn_d;
    int attn_causal, attn_lead;
} ApprofKernel;

#define APPROF_SAVED_INPUT(i) (1u << (i))
#define APPROF_SAVED_OUTPUT(j) (1u << (8 + (j)))

/* ---- construction -------------------------------------------------------- */

enum {
    APPROF_OK = 0,
    APPROF_ENOMEM = -1,
    APPROF_EINVAL = -2,     /* bad argument, shape mismatch, unknown name */
    APPROF_EPARSE = -3,     /* malformed model file */
    APPROF_EIO = -4,
    APPROF_EUNSUPPORTED = -5,
    APPROF_EINFEASIBLE = -6,/* no sharding / layering satisfies the constraints */
    APPROF_EDB = -7,        /* cost database failure (see costdb_errmsg) */
    APPROF_ENODEV = -8,     /* backend not available on this machine */
    APPROF_EINTR = -9,      /* interrupted by a signal */
    APPROF_ENOVARIANT = -10,/* the stage variant asked for does not exist */
};
const char *approf_strerror(int err);

size_t approf_dtype_size(ApprofDtype dt);
const char *approf_dtype_name(ApprofDtype dt);
int approf_dtype_parse(const char *s, ApprofDtype *out);
const char *approf_op_kind_name(ApprofOpKind k);
int approf_op_kind_parse(const char *s, ApprofOpKind *out);

/* Creates an empty graph; the caller owns *out (approf_graph_free). */
int approf_graph_new(const char *name, ApprofDtype dtype, int64_t batch_size, ApprofGraph **out);
void approf_graph_free(ApprofGraph **g);
/* Adds a tensor; returns its index (>= 0) or a negative error. */
int approf_graph_add_tensor(ApprofGraph *g, const char *name, ApprofTensorRole role,
                            ApprofDtype dtype, int ndim, const int64_t *dims, int batch_dim);
/* Adds an operator over existing tensors, infers and creates its outputs
 * (named "<op name>:out<j>"), checks shapes; returns the op index or a
 * negative error with a message in err naming the op and the field. */
int approf_graph_add_op(ApprofGraph *g, const char *name, ApprofOpKind kind,
                        const int *inputs, int n_inputs, const ApprofOpAttrs *attrs,
                        const int64_t *out_dims, int out_ndim, /* RESHAPE only */
                        char *err, size_t errlen);
/* Checks the whole graph (topological order, shapes, every param used,
 * sizes sane). 0 or APPROF_EINVAL with a message naming the op and field. */
int approf_graph_validate(const ApprofGraph *g, char *err, size_t errlen);
/* Stable hex hash of the graph's structure, shapes and dtypes. */
void approf_graph_hash(const ApprofGraph *g, char *out, size_t len);

int64_t approf_tensor_elements(const ApprofTensor *t);
int64_t approf_tensor_bytes(const ApprofTensor *t);
/* Total number of trainable parameter elements (exact). */
int64_t approf_graph_num_params(const ApprofGraph *g);
/* 1 when an op of g is a fused gated activation that reruns in the
 * backward (the op's rerun: Megatron-Core's fused SwiGLU/GeGLU). */
int approf_graph_has_rerun(const ApprofGraph *g);

/* ---- per-operator semantics -------------------------------------------- */

/* Forward (phase 0) or backward (phase 1) FLOPs of the whole, unsharded op. */
double approf_op_flops(const ApprofGraph *g, int op, int phase);
/* Bytes moved (read + written) by the whole op in the given phase. */
double approf_op_bytes(const ApprofGraph *g, int op, int phase);
/* Which inputs/outputs the backward pass reads (APPROF_SAVED_* bits). */
unsigned approf_op_saved_mask(const ApprofGraph *g, int op);
/* The op's loops (per-kind choices are listed at the top of model/opsem.c). */
int approf_op_iter_space(const ApprofGraph *g, int op, ApprofIterSpace *out);
/* Lowers op to kernels for per-device loop sizes local[n_iter] (the
 * iteration space sizes divided by the sharding). Phase 1 gives the backward
 * kernels (matmul/conv: data-gradient and weight-gradient). Returns the
 * number of kernels written (<= APPROF_MAX_KERNELS) or a negative error. */
int approf_op_kernels(const ApprofGraph *g, int op, const int64_t *local, int phase,
                      ApprofKernel *out, int max);
/* The same, with the op's iteration space already at hand (sp: what
 * approf_op_iter_space gives for op; the sharding's hot path keeps it). */
int approf_op_kernels_in(const ApprofGraph *g, int op, const ApprofIterSpace *sp,
                         const int64_t *local, int phase, ApprofKernel *out, int max);

/* ---- layers ------------------------------------------------------------ */

/* A split of the operators into contiguous layers [op_begin, op_end). */
typedef struct ApprofLayering {
    int n_layers;
    int *op_begin;             /* n_layers entries */
    int *op_end;
    char option[64];           /* "auto:eps=0.5" or "manual" */
} ApprofLayering;

typedef struct ApprofLayerStats {
    double fwd_flops, bwd_flops;
    int64_t param_bytes;       /* parameters used inside the layer */
    int64_t activation_bytes;  /* tensors produced inside the layer */
    int64_t inbound_bytes;     /* produced before the layer, consumed inside */
} ApprofLayerStats;

/* Alpa's AutoLayerOption(layer_num, eps): see docs/alpa-semantics.md. */
int approf_layers_auto(const ApprofGraph *g, int layer_num, double eps, ApprofLayering *out);
/* Layers cut at APPROF_OP_BOUNDARY operators. */
int approf_layers_manual(const ApprofGraph *g, ApprofLayering *out);
void approf_layering_free(ApprofLayering *l);
int approf_layer_stats(const ApprofGraph *g, const ApprofLayering *l, int layer,
                       ApprofLayerStats *out);

#endif
