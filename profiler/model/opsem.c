/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-operator semantics of the IR: the iteration space each operator
 * exposes to intra-op sharding, its lowering to device kernels for given
 * per-device loop sizes (forward and backward), and, derived from that
 * lowering with the full sizes, its FLOPs and bytes moved. Which tensors the
 * backward pass reads (the saved mask) is also here.
 *
 * Iteration-space choices (the loops each kind exposes; P parallel, R
 * reduce, F fixed):
 *   matmul        x[b.., k] @ w[k, n]: {b.. P, n P, k R}
 *   batch_matmul  {B.. P, m P, n P, k R}
 *   conv2d        {N P, K P, C R (F when grouped), Ho F, Wo F}; the window
 *                 is not a loop; input H/W map to the Ho/Wo loops
 *   batch_norm    {N P, C P, spatial F}: N is a batch loop; the statistics
 *                 all-reduce a split batch needs (2·C values) is ignored
 *   layer_norm, softmax   one P loop per dim, the normalised axis F
 *   relu/gelu/add/mul/transpose/boundary   one P loop per output dim
 *   concat        one P loop per output dim, the concat axis F
 *   max/avg_pool  {N P, C P, Ho F, Wo F}
 *   global_pool   {N P, C P, spatial R}
 *   embedding     {ids dims P, H P, V R} (vocabulary-parallel lookup)
 *   reshape       one P loop per output dim; an input dim maps to the
 *                 loop of the output dim that starts at the same flat offset
 *                 (surviving dims, the outer factor of a split/merged dim)
 *   cross_entropy {logit dims but the last R, V F}; mse_loss all R
 *   rms_norm, topk_router   one P loop per dim, the last (normalised,
 *                 experts) F
 *   silu/dropout  one P loop per dim; rope too, but the head dim F (its
 *                 halves rotate together)
 *   slice         one P loop per output dim, the sliced axis F and not
 *                 mapped to the input (a split input is gathered first)
 *   split         one P loop per input dim, the axis F, not mapped to the
 *                 outputs
 *   attention     {B P, S P, Hkv P, G P, S' F, D F}: heads and queries
 *                 split freely, keys and the head dim never (no ring
 *                 attention)
 *   moe_dispatch  {B P, E P, C F, H P}: a split E takes the tokens
 *                 replicated (Megatron's all-gather dispatcher); a B split
 *                 feeding an E-split expert GEMM is resharded by an
 *                 all-to-all (the all-to-all dispatcher)
 *   moe_combine   {B P, S P, H P, E R, C F}: a split E leaves partial sums
 *   batch_matmul  broadcast batch dims map to no loop in the operand that
 *                 has size 1 there (a [1, E, k, n] expert weight follows E
 *                 only: expert parallelism is splitting the E loop)
 * The batch loop (is_batch) is the one indexing the sample dimension of the
 * first input (of the output for boundary).
 */
#include <string.h>

#include "graph.h"
#include "graph_int.h"
#include "opsem_eager.h"

#define MAP_NONE -1

static void space_init(ApprofIterSpace *sp)
{
    memset(sp, 0, sizeof *sp);
    for (int i = 0; i < APPROF_MAX_INPUTS; i++)
        for (int d = 0; d < APPROF_MAX_DIMS; d++)
            sp->in_map[i][d] = MAP_NONE;
    for (int j = 0; j < APPROF_MAX_OUTPUTS; j++)
        for (int d = 0; d < APPROF_MAX_DIMS; d++)
            sp->out_map[j][d] = MAP_NONE;
}

static int add_loop(ApprofIterSpace *sp, int64_t size, ApprofIterKind kind)
{
    int i = sp->n_iter++;
    sp->size[i] = size;
    sp->kind[i] = kind;
    return i;
}

/* One loop per dim of t, the given axis (or -1) of kind axis_kind. */
static void loops_like(ApprofIterSpace *sp, const ApprofTensor *t, int axis, ApprofIterKind axis_kind,
                       ApprofIterKind other)
{
    for (int d = 0; d < t->ndim; d++)
        add_loop(sp, t->dims[d], d == axis ? axis_kind : other);
}

int approf_op_iter_space(const ApprofGraph *g, int opi, ApprofIterSpace *sp)
{
    const ApprofOp *op;
    const ApprofTensor *x, *y, *w;
    int batch_loop = -1;

    if (!g || !sp || opi < 0 || (size_t)opi >= g->n_ops)
        return APPROF_EINVAL;
    op = &g->ops[opi];
    x = &g->tensors[op->inputs[0]];
    w = op->n_inputs > 1 ? &g->tensors[op->inputs[1]] : NULL;
    y = &g->tensors[op->outputs[0]];
    space_init(sp);

    switch (op->kind) {
    case APPROF_OP_MATMUL: {
        int nl, kl, lead = x->ndim - 1;
        for (int d = 0; d < lead; d++) {
            add_loop(sp, x->dims[d], APPROF_ITER_PARALLEL);
            sp->in_map[0][d] = sp->out_map[0][d] = d;
        }
        nl = add_loop(sp, y->dims[lead], APPROF_ITER_PARALLEL);
        kl = add_loop(sp, x->dims[lead], APPROF_ITER_REDUCE);
        sp->in_map[0][lead] = kl;
        sp->out_map[0][lead] = nl;
        sp->in_map[1][0] = op->attrs.transpose_b ? nl : kl;
        sp->in_map[1][1] = op->attrs.transpose_b ? kl : nl;
        if (op->attrs.has_bias)
            sp->in_map[2][0] = nl;
        if (x->batch_dim >= 0 && x->batch_dim < lead)
            batch_loop = x->batch_dim;
        break;
    }
    case APPROF_OP_BATCH_MATMUL: {
        int r = x->ndim, ml, nl, kl;
        for (int d = 0; d < r - 2; d++) {
            add_loop(sp, y->dims[d], APPROF_ITER_PARALLEL);
            sp->in_map[0][d] = x->dims[d] == y->dims[d] ? d : MAP_NONE;
            sp->in_map[1][d] = w->dims[d] == y->dims[d] ? d : MAP_NONE;
            sp->out_map[0][d] = d;
        }
        ml = add_loop(sp, y->dims[r - 2], APPROF_ITER_PARALLEL);
        nl = add_loop(sp, y->dims[r - 1], APPROF_ITER_PARALLEL);
        kl = add_loop(sp, op->attrs.transpose_a ? x->dims[r - 2] : x->dims[r - 1], APPROF_ITER_REDUCE);
        sp->in_map[0][r - 2] = op->attrs.transpose_a ? kl : ml;
        sp->in_map[0][r - 1] = op->attrs.transpose_a ? ml : kl;
        sp->in_map[1][r - 2] = op->attrs.transpose_b ? nl : kl;
        sp->in_map[1][r - 1] = op->attrs.transpose_b ? kl : nl;
        sp->out_map[0][r - 2] = ml;
        sp->out_map[0][r - 1] = nl;
        if (x->batch_dim >= 0 && x->batch_dim < r - 2)
            batch_loop = x->batch_dim;
        break;
    }
    case APPROF_OP_CONV2D: {
        int grouped = op->attrs.groups > 1;
        add_loop(sp, x->dims[0], APPROF_ITER_PARALLEL);                  /* N */
        add_loop(sp, w->dims[0], APPROF_ITER_PARALLEL);                  /* K */
        add_loop(sp, w->dims[1], grouped ? APPROF_ITER_FIXED : APPROF_ITER_REDUCE); /* C/g */
        add_loop(sp, y->dims[2], APPROF_ITER_FIXED);                     /* Ho */
        add_loop(sp, y->dims[3], APPROF_ITER_FIXED);                     /* Wo */
        sp->in_map[0][0] = 0;
        sp->in_map[0][1] = grouped ? MAP_NONE : 2;
        sp->in_map[0][2] = 3;
        sp->in_map[0][3] = 4;
        sp->in_map[1][0] = 1;
        sp->in_map[1][1] = 2;
        if (op->attrs.has_bias)
            sp->in_map[2][0] = 1;
        sp->out_map[0][0] = 0;
        sp->out_map[0][1] = 1;
        sp->out_map[0][2] = 3;
        sp->out_map[0][3] = 4;
        batch_loop = x->batch_dim == 0 ? 0 : -1;
        break;
    }
    case APPROF_OP_BATCH_NORM:
        for (int d = 0; d < x->ndim; d++) {
            add_loop(sp, x->dims[d], d < 2 ? APPROF_ITER_PARALLEL : APPROF_ITER_FIXED);
            sp->in_map[0][d] = sp->out_map[0][d] = d;
        }
        sp->in_map[1][0] = sp->in_map[2][0] = 1;
        batch_loop = x->batch_dim;
        break;
    case APPROF_OP_LAYER_NORM: case APPROF_OP_SOFTMAX: case APPROF_OP_RMS_NORM:
    case APPROF_OP_TOPK_ROUTER: case APPROF_OP_ROPE: {
        int axis = op->kind == APPROF_OP_SOFTMAX ? op->attrs.axis : x->ndim - 1;
        loops_like(sp, x, axis, APPROF_ITER_FIXED, APPROF_ITER_PARALLEL);
        for (int d = 0; d < x->ndim; d++)
            sp->in_map[0][d] = sp->out_map[0][d] = d;
        if (op->kind == APPROF_OP_LAYER_NORM)
            sp->in_map[1][0] = sp->in_map[2][0] = axis;
        if (op->kind == APPROF_OP_RMS_NORM)
            sp->in_map[1][0] = axis;
        batch_loop = x->batch_dim;
        break;
    }
    case APPROF_OP_SLICE:
        loops_like(sp, y, op->attrs.axis, APPROF_ITER_FIXED, APPROF_ITER_PARALLEL);
        for (int d = 0; d < y->ndim; d++) {
            sp->out_map[0][d] = d;
            sp->in_map[0][d] = d == op->attrs.axis ? MAP_NONE : d;
        }
        batch_loop = y->batch_dim;
        break;
    case APPROF_OP_SPLIT:
        loops_like(sp, x, op->attrs.axis, APPROF_ITER_FIXED, APPROF_ITER_PARALLEL);
        for (int d = 0; d < x->ndim; d++) {
            sp->in_map[0][d] = d;
            for (int j = 0; j < op->n_outputs; j++)
                sp->out_map[j][d] = d == op->attrs.axis ? MAP_NONE : d;
        }
        batch_loop = x->batch_dim == op->attrs.axis ? -1 : x->batch_dim;
        break;
    case APPROF_OP_ATTENTION:
        /* loops: 0 B, 1 S, 2 Hkv, 3 G, 4 S', 5 D */
        add_loop(sp, x->dims[0], APPROF_ITER_PARALLEL);
        add_loop(sp, x->dims[1], APPROF_ITER_PARALLEL);
        add_loop(sp, x->dims[2], APPROF_ITER_PARALLEL);
        add_loop(sp, x->dims[3], APPROF_ITER_PARALLEL);
        add_loop(sp, w->dims[1], APPROF_ITER_FIXED);
        add_loop(sp, x->dims[4], APPROF_ITER_FIXED);
        for (int d = 0; d < 5; d++)
            sp->in_map[0][d] = sp->out_map[0][d] = d == 4 ? 5 : d;
        for (int i = 1; i < 3; i++) {
            sp->in_map[i][0] = 0;
            sp->in_map[i][1] = 4;
            sp->in_map[i][2] = 2;
            sp->in_map[i][3] = 5;
        }
        batch_loop = x->batch_dim == 0 ? 0 : -1;
        break;
    case APPROF_OP_MOE_DISPATCH:
        /* loops: 0 B, 1 E, 2 C, 3 H */
        add_loop(sp, y->dims[0], APPROF_ITER_PARALLEL);
        add_loop(sp, y->dims[1], APPROF_ITER_PARALLEL);
        add_loop(sp, y->dims[2], APPROF_ITER_FIXED);
        add_loop(sp, y->dims[3], APPROF_ITER_PARALLEL);
        for (int d = 0; d < 4; d++)
            sp->out_map[0][d] = d;
        sp->in_map[0][0] = 0;
        sp->in_map[0][2] = 3;
        sp->in_map[1][0] = 0;
        sp->in_map[1][2] = 1;
        batch_loop = y->batch_dim == 0 ? 0 : -1;
        break;
    case APPROF_OP_MOE_COMBINE:
        /* loops: 0 B, 1 S, 2 H, 3 E, 4 C */
        add_loop(sp, y->dims[0], APPROF_ITER_PARALLEL);
        add_loop(sp, y->dims[1], APPROF_ITER_PARALLEL);
        add_loop(sp, y->dims[2], APPROF_ITER_PARALLEL);
        add_loop(sp, x->dims[1], APPROF_ITER_REDUCE);
        add_loop(sp, x->dims[2], APPROF_ITER_FIXED);
        sp->in_map[0][0] = 0;
        sp->in_map[0][1] = 3;
        sp->in_map[0][2] = 4;
        sp->in_map[0][3] = 2;
        sp->in_map[1][0] = 0;
        sp->in_map[1][1] = 1;
        sp->in_map[1][2] = 3;
        for (int d = 0; d < 3; d++)
            sp->out_map[0][d] = d;
        batch_loop = y->batch_dim == 0 ? 0 : -1;
        break;
    case APPROF_OP_RELU: case APPROF_OP_GELU: case APPROF_OP_BOUNDARY:
    case APPROF_OP_ADD: case APPROF_OP_MUL: case APPROF_OP_SILU: case APPROF_OP_DROPOUT:
        loops_like(sp, y, -1, APPROF_ITER_PARALLEL, APPROF_ITER_PARALLEL);
        for (int d = 0; d < y->ndim; d++)
            sp->in_map[0][d] = sp->out_map[0][d] = d;
        if (w) {
            int off = y->ndim - w->ndim;
            for (int d = 0; d < w->ndim; d++)
                sp->in_map[1][d] = w->dims[d] == y->dims[d + off] ? d + off : MAP_NONE;
        }
        batch_loop = y->batch_dim;
        break;
    case APPROF_OP_MAX_POOL: case APPROF_OP_AVG_POOL:
        for (int d = 0; d < 4; d++) {
            add_loop(sp, y->dims[d], d < 2 ? APPROF_ITER_PARALLEL : APPROF_ITER_FIXED);
            sp->in_map[0][d] = sp->out_map[0][d] = d;
        }
        batch_loop = x->batch_dim;
        break;
    case APPROF_OP_GLOBAL_POOL:
        for (int d = 0; d < x->ndim; d++) {
            add_loop(sp, x->dims[d], d < 2 ? APPROF_ITER_PARALLEL : APPROF_ITER_REDUCE);
            sp->in_map[0][d] = d;
        }
        sp->out_map[0][0] = 0;
        sp->out_map[0][1] = 1;
        batch_loop = x->batch_dim < 2 ? x->batch_dim : -1;
        break;
    case APPROF_OP_EMBEDDING: {
        int hl, vl;
        for (int d = 0; d < x->ndim; d++) {
            add_loop(sp, x->dims[d], APPROF_ITER_PARALLEL);
            sp->in_map[0][d] = sp->out_map[0][d] = d;
        }
        hl = add_loop(sp, w->dims[1], APPROF_ITER_PARALLEL);
        vl = add_loop(sp, w->dims[0], APPROF_ITER_REDUCE);
        sp->in_map[1][0] = vl;
        sp->in_map[1][1] = hl;
        sp->out_map[0][x->ndim] = hl;
        batch_loop = x->batch_dim;
        break;
    }
    case APPROF_OP_RESHAPE: {
        int64_t pin = 1;
        loops_like(sp, y, -1, APPROF_ITER_PARALLEL, APPROF_ITER_PARALLEL);
        for (int d = 0; d < y->ndim; d++)
            sp->out_map[0][d] = d;
        for (int d = 0; d < x->ndim; d++) {
            int64_t pout = 1;
            for (int e = 0; e < y->ndim; e++) {
                if (pout == pin) {
                    /* The outer factor only: both sides must be split alike. */
                    if (x->dims[d] % y->dims[e] == 0 || y->dims[e] % x->dims[d] == 0)
                        sp->in_map[0][d] = e;
                    break;
                }
                if (pout > pin)
                    break;
                pout *= y->dims[e];
            }
            pin *= x->dims[d];
        }
        batch_loop = y->batch_dim;
        break;
    }
    case APPROF_OP_TRANSPOSE:
        loops_like(sp, y, -1, APPROF_ITER_PARALLEL, APPROF_ITER_PARALLEL);
        for (int d = 0; d < y->ndim; d++) {
            sp->out_map[0][d] = d;
            sp->in_map[0][op->attrs.perm[d]] = d;
        }
        batch_loop = y->batch_dim;
        break;
    case APPROF_OP_CONCAT:
        loops_like(sp, y, op->attrs.axis, APPROF_ITER_FIXED, APPROF_ITER_PARALLEL);
        for (int d = 0; d < y->ndim; d++) {
            sp->out_map[0][d] = d;
            for (int i = 0; i < op->n_inputs; i++)
                sp->in_map[i][d] = d == op->attrs.axis ? MAP_NONE : d;
        }
        batch_loop = y->batch_dim;
        break;
    case APPROF_OP_CROSS_ENTROPY:
        loops_like(sp, x, x->ndim - 1, APPROF_ITER_FIXED, APPROF_ITER_REDUCE);
        for (int d = 0; d < x->ndim; d++)
            sp->in_map[0][d] = d;
        for (int d = 0; d < w->ndim; d++)
            sp->in_map[1][d] = d;
        batch_loop = x->batch_dim < x->ndim - 1 ? x->batch_dim : -1;
        break;
    case APPROF_OP_MSE_LOSS:
        loops_like(sp, x, -1, APPROF_ITER_REDUCE, APPROF_ITER_REDUCE);
        for (int d = 0; d < x->ndim; d++)
            sp->in_map[0][d] = sp->in_map[1][d] = d;
        batch_loop = x->batch_dim;
        break;
    default:
        return APPROF_EINVAL;
    }
    if (batch_loop >= 0 && batch_loop < sp->n_iter)
        sp->is_batch[batch_loop] = 1;
    return 0;
}

/* ---- lowering ------------------------------------------------------------ */

static void kinit(ApprofKernel *k, ApprofKernelKind kind, int op, ApprofDtype dt)
{
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->op = op;
    k->dtype = dt;
    k->batch = 1;
}

static void gemm(ApprofKernel *k, int op, ApprofDtype dt, int64_t batch, int64_t m, int64_t n, int64_t kk)
{
    double es = (double)approf_dtype_size(dt);
    kinit(k, APPROF_K_GEMM, op, dt);
    k->batch = batch;
    k->m = m;
    k->n = n;
    k->k = kk;
    k->flops = 2.0 * (double)m * (double)n * (double)kk * (double)batch;
    k->bytes = es * (double)batch * ((double)m * kk + (double)kk * n + (double)m * n);
    k->store_bytes = es * (double)batch * (double)m * (double)n;
}

static void simple(ApprofKernel *k, ApprofKernelKind kind, int op, ApprofDtype dt, int64_t elems,
                   double flops, double bytes)
{
    kinit(k, kind, op, dt);
    k->elements = elems;
    k->flops = flops;
    k->bytes = bytes;
}

/* The copies around an unpadded flash attention (ApprofOpAttrs.unpad), as
 * one copy kernel per phase over the attention's local sizes (loc: batch,
 * query positions, key/value heads, query heads per key/value head, key
 * positions, head dim). llm-foundry's flash_attn_fn (llmfoundry/models/
 * layers/attention.py at 5e85bd62d) calls flash-attn 2.4.2's unpad_input on
 * q, k and v and pad_input on the output (flash_attn/bert_padding.py at
 * v2.4.2). Forward: IndexFirstAxis gathers each of q, k, v (read and write
 * its elements, one int64 index a row), IndexPutFirstAxis zero-fills the
 * padded output and index-puts the packed one into it (write, then read and
 * write, one index a row). Backward: the output's gradient gathered (read
 * and write, one index a row), then each of dq, dk, dv zero-filled and
 * scattered (write, then read and write, one index a row). With a mask of
 * all ones every token is kept: the packed tensors are the padded ones'
 * size. The mask's sum, nonzero, max().item() and cumsum (tiny kernels and
 * two host syncs a call) are not priced. */
static void unpad_copies(ApprofKernel *k, int op, ApprofDtype dt, const int64_t *loc, int phase)
{
    double es = (double)approf_dtype_size(dt), idx = 8.0;
    double tq = (double)loc[0] * loc[1], tkv = (double)loc[0] * loc[4];
    double eo = tq * loc[2] * loc[3] * loc[5], ekv = tkv * loc[2] * loc[5];
    double packed = eo + 2.0 * ekv, rows = 2.0 * tq + 2.0 * tkv;
    double bytes = phase ? es * (2.0 * eo + 3.0 * packed) + idx * rows
                         : es * (2.0 * packed + 3.0 * eo) + idx * rows;
    simple(k, APPROF_K_COPY, op, dt, (int64_t)(packed + eo), 0, bytes);
}

/* Flops per element (forward, backward) of the memory-bound kinds. */
static void ew_factors(ApprofOpKind kind, double *f, double *b)
{
    switch (kind) {
    case APPROF_OP_BATCH_NORM: case APPROF_OP_LAYER_NORM: *f = 5; *b = 8; break;
    case APPROF_OP_GELU: *f = 8; *b = 8; break;
    case APPROF_OP_MUL: *f = 1; *b = 2; break;
    case APPROF_OP_SOFTMAX: *f = 5; *b = 4; break;
    case APPROF_OP_CROSS_ENTROPY: *f = 5; *b = 3; break;
    case APPROF_OP_MSE_LOSS: *f = 3; *b = 2; break;
    case APPROF_OP_TRANSPOSE: case APPROF_OP_CONCAT: *f = 0; *b = 0; break;
    case APPROF_OP_EMBEDDING: *f = 0; *b = 1; break;
    case APPROF_OP_RMS_NORM: *f = 4; *b = 6; break;
    case APPROF_OP_SILU: *f = 4; *b = 6; break;
    case APPROF_OP_ROPE: *f = 3; *b = 3; break;
    case APPROF_OP_DROPOUT: *f = 2; *b = 1; break;
    case APPROF_OP_TOPK_ROUTER: *f = 8; *b = 4; break;
    case APPROF_OP_MOE_DISPATCH: *f = 0; *b = 1; break;
    case APPROF_OP_MOE_COMBINE: *f = 2; *b = 4; break;
    default: *f = 1; *b = 1; break;
    }
}

int approf_op_kernels(const ApprofGraph *g, int opi, const int64_t *local, int phase,
                      ApprofKernel *out, int max)
{
    ApprofIterSpace sp;
    int rc;

    if (!g || opi < 0 || (size_t)opi >= g->n_ops || (phase != 0 && phase != 1) || (!out && max > 0))
        return APPROF_EINVAL;
    rc = approf_op_iter_space(g, opi, &sp);
    if (rc < 0)
        return rc;
    return approf_op_kernels_in(g, opi, &sp, local, phase, out, max);
}

int approf_op_kernels_in(const ApprofGraph *g, int opi, const ApprofIterSpace *sp,
                         const int64_t *local, int phase, ApprofKernel *out, int max)
{
    const ApprofOp *op;
    const ApprofTensor *x, *y;
    ApprofKernel ks[APPROF_MAX_KERNELS];
    int nk = 0;
    ApprofDtype dt;
    double es;
    int64_t loc[APPROF_MAX_ITER];

    if (!g || !sp || opi < 0 || (size_t)opi >= g->n_ops || (phase != 0 && phase != 1) ||
        (!out && max > 0))
        return APPROF_EINVAL;
    for (int i = 0; i < sp->n_iter; i++) {
        loc[i] = local ? local[i] : sp->size[i];
        if (loc[i] <= 0 || loc[i] > sp->size[i])
            return APPROF_EINVAL;
    }
    op = &g->ops[opi];
    x = &g->tensors[op->inputs[0]];
    y = &g->tensors[op->outputs[0]];
    dt = y->dtype;
    es = (double)approf_dtype_size(dt);

    switch (op->kind) {
    case APPROF_OP_MATMUL: {
        int lead = x->ndim - 1;
        int64_t m = 1, n = loc[lead], k = loc[lead + 1];
        int need_dx = x->role != APPROF_TENSOR_INPUT;
        for (int d = 0; d < lead; d++)
            m *= loc[d];
        if (phase == 0) {
            gemm(&ks[nk++], opi, dt, 1, m, n, k);
            if (op->attrs.has_bias) {
                simple(&ks[nk++], APPROF_K_ELEMENTWISE, opi, dt, m * n, (double)(m * n), es * (2.0 * m * n + n));
                approf_kernel_op_bias(&ks[nk - 1], m, n, 0);
            }
        } else {
            if (need_dx)
                gemm(&ks[nk++], opi, dt, 1, m, k, n);     /* dx = dy @ w^T */
            gemm(&ks[nk++], opi, dt, 1, k, n, m);         /* dw = x^T @ dy */
            ks[nk - 1].wgrad = 1;
            if (op->attrs.has_bias) {
                simple(&ks[nk++], APPROF_K_REDUCTION, opi, dt, m * n, (double)(m * n), es * ((double)m * n + n));
                approf_kernel_op_bias(&ks[nk - 1], m, n, 1);
                ks[nk - 1].wgrad = 1;                     /* db = sum dy */
            }
        }
        break;
    }
    case APPROF_OP_BATCH_MATMUL: {
        int r = x->ndim;
        int64_t b = 1, ba = 1, bb = 1, m = loc[r - 2], n = loc[r - 1], k = loc[r];
        for (int d = 0; d < r - 2; d++) {
            b *= loc[d];
            ba *= sp->in_map[0][d] >= 0 ? loc[d] : 1;
            bb *= sp->in_map[1][d] >= 0 ? loc[d] : 1;
        }
        int first = nk, expert = g->tensors[op->inputs[1]].role == APPROF_TENSOR_PARAM;
        if (phase == 0) {
            gemm(&ks[nk++], opi, dt, b, m, n, k);
        } else {
            /* A broadcast operand's gradient sums over the dims it repeats
             * along: they join the contraction. */
            if (x->role != APPROF_TENSOR_INPUT)
                gemm(&ks[nk++], opi, dt, ba, m, k, n * (b / ba)); /* da = dc @ b^T */
            if (g->tensors[op->inputs[1]].role != APPROF_TENSOR_INPUT) {
                gemm(&ks[nk++], opi, dt, bb, k, n, m * (b / bb)); /* db = a^T @ dc */
                ks[nk - 1].experts_k = expert;
                ks[nk - 1].wgrad = expert;  /* a weight's gradient, not an activation's */
            }
        }
        /* A weight per batch entry (the experts' [1, E, k, n]): the bb
         * experts on this device, one grouped GEMM (graph.h) */
        for (int i = first; i < nk && expert; i++)
            ks[i].experts = bb;
        break;
    }
    case APPROF_OP_ATTENTION: {
        /* Flash attention as its GEMMs: forward S = QK^T and O = PV; the
         * backward recomputes S, then dV = P^T dO, dP = dO V^T, dQ = dS K,
         * dK = dS^T Q. The causal mask skips the upper triangle: half the
         * key columns on average. Scores stay on chip, so the kernels'
         * bytes are the fused kernel's (q, k, v, o, dO, the f32
         * log-sum-exp rows; dq, dk, dv) on the first GEMM, none on the rest,
         * and no epilogue store of their own (store_bytes 0). */
        int64_t bh = loc[0] * loc[2] * loc[3], sq = loc[1], skv = loc[4], d = loc[5];
        int64_t kv = op->attrs.causal ? (skv + 1) / 2 : skv;
        double qo = es * (double)bh * sq * d, kvb = 2.0 * es * (double)loc[0] * loc[2] * skv * d;
        double lse = 4.0 * (double)bh * sq;
        if (phase == 0) {
            gemm(&ks[nk++], opi, dt, bh, sq, kv, d);
            ks[nk - 1].bytes = qo + kvb + qo + lse;
            gemm(&ks[nk++], opi, dt, bh, sq, d, kv);
            ks[nk - 1].bytes = 0;
        } else {
            gemm(&ks[nk++], opi, dt, bh, sq, kv, d);        /* S again */
            ks[nk - 1].bytes = 3.0 * qo + kvb + lse + qo + kvb;
            gemm(&ks[nk++], opi, dt, bh, kv, d, sq);        /* dV */
            gemm(&ks[nk++], opi, dt, bh, sq, kv, d);        /* dP */
            gemm(&ks[nk++], opi, dt, bh, sq, d, kv);        /* dQ */
            gemm(&ks[nk++], opi, dt, bh, kv, d, sq);        /* dK */
            for (int i = nk - 4; i < nk; i++)
                ks[i].bytes = 0;
        }
        for (int i = 0; i < nk; i++) {
            ks[i].store_bytes = 0;
            ks[i].attention = 1;
            ks[i].attn_b = loc[0];
            ks[i].attn_hq = loc[2] * loc[3];
            ks[i].attn_hkv = loc[2];
            ks[i].attn_sq = sq;
            ks[i].attn_skv = skv;
            ks[i].attn_d = d;
            ks[i].attn_causal = op->attrs.causal != 0;
            ks[i].attn_lead = i == 0 ? 1 + (phase != 0) : 0;
        }
        if (op->attrs.unpad)
            unpad_copies(&ks[nk++], opi, dt, loc, phase);
        break;
    }
    case APPROF_OP_SLICE: case APPROF_OP_SPLIT: {
        /* A copy of the selected part forward; backward writes the input's
         * gradient (zeros outside a slice; a concat of the parts for split). */
        int64_t e0 = approf_local_elems(x, sp->in_map[0], sp, loc), eo = 0;
        for (int j = 0; j < op->n_outputs; j++)
            eo += approf_local_elems(&g->tensors[op->outputs[j]], sp->out_map[j], sp, loc);
        if (op->kind == APPROF_OP_SPLIT)
            e0 = eo;
        simple(&ks[nk++], APPROF_K_COPY, opi, dt, phase ? e0 : eo, 0,
               es * (phase ? (double)eo + (double)e0 : 2.0 * (double)eo));
        break;
    }
    case APPROF_OP_CONV2D: {
        const ApprofTensor *w = &g->tensors[op->inputs[1]];
        int groups = op->attrs.groups > 0 ? op->attrs.groups : 1;
        int64_t n = loc[0], kk = loc[1], cg = loc[2], ho = loc[3], wo = loc[4];
        int64_t h = approf_ceil_div(x->dims[2] * ho, sp->size[3]), wi = approf_ceil_div(x->dims[3] * wo, sp->size[4]);
        int64_t r = w->dims[2], s = w->dims[3];
        double flops = 2.0 * n * kk * ho * wo * (double)cg * r * s;
        double bytes = es * ((double)n * cg * groups * h * wi + (double)kk * cg * r * s + (double)n * kk * ho * wo);
        ApprofKernelKind kinds[3] = {APPROF_K_CONV_FWD, APPROF_K_CONV_BWD_DATA, APPROF_K_CONV_BWD_FILTER};
        int first = phase == 0 ? 0 : (x->role == APPROF_TENSOR_INPUT ? 2 : 1);
        int last = phase == 0 ? 0 : 2;
        for (int i = first; i <= last; i++) {
            ApprofKernel *k = &ks[nk++];
            kinit(k, kinds[i], opi, dt);
            k->conv_n = n;
            k->conv_c = cg * groups;
            k->conv_h = h;
            k->conv_w = wi;
            k->conv_k = kk;
            k->conv_r = r;
            k->conv_s = s;
            k->conv_stride[0] = op->attrs.stride[0] > 0 ? op->attrs.stride[0] : 1;
            k->conv_stride[1] = op->attrs.stride[1] > 0 ? op->attrs.stride[1] : 1;
            k->conv_pad[0] = op->attrs.padding[0];
            k->conv_pad[1] = op->attrs.padding[1];
            k->conv_groups = groups;
            k->flops = flops;
            k->bytes = bytes;
            k->wgrad = kinds[i] == APPROF_K_CONV_BWD_FILTER;
        }
        if (op->attrs.has_bias) {
            int64_t e = n * kk * ho * wo;
            simple(&ks[nk++], phase ? APPROF_K_REDUCTION : APPROF_K_ELEMENTWISE, opi, dt, e, (double)e,
                   es * (phase ? (double)e + kk : 2.0 * e + kk));
            ks[nk - 1].wgrad = phase;
        }
        break;
    }
    case APPROF_OP_RESHAPE: case APPROF_OP_BOUNDARY:
        break;
    default: {
        /* Memory-bound kinds: one kernel over the local elements. */
        int64_t eo = approf_local_elems(y, sp->out_map[0], sp, loc);
        int64_t e0 = approf_local_elems(x, sp->in_map[0], sp, loc);
        int64_t work = eo > e0 ? eo : e0;
        double in_bytes = 0, f, b, flops;
        ApprofKernelKind kk = APPROF_K_ELEMENTWISE;
        for (int i = 0; i < op->n_inputs; i++) {
            const ApprofTensor *t = &g->tensors[op->inputs[i]];
            in_bytes += (double)approf_local_elems(t, sp->in_map[i], sp, loc) * (double)approf_dtype_size(t->dtype);
        }
        ew_factors(op->kind, &f, &b);
        switch (op->kind) {
        case APPROF_OP_BATCH_NORM: case APPROF_OP_LAYER_NORM: case APPROF_OP_SOFTMAX:
        case APPROF_OP_GLOBAL_POOL: case APPROF_OP_CROSS_ENTROPY: case APPROF_OP_MSE_LOSS:
        case APPROF_OP_MAX_POOL: case APPROF_OP_AVG_POOL: case APPROF_OP_RMS_NORM:
        case APPROF_OP_TOPK_ROUTER:
            kk = APPROF_K_REDUCTION;
            break;
        case APPROF_OP_EMBEDDING: case APPROF_OP_MOE_DISPATCH: case APPROF_OP_MOE_COMBINE:
            kk = APPROF_K_GATHER;
            break;
        case APPROF_OP_TRANSPOSE: case APPROF_OP_CONCAT: kk = APPROF_K_COPY; break;
        default: break;
        }
        if (op->kind == APPROF_OP_MAX_POOL || op->kind == APPROF_OP_AVG_POOL) {
            work = eo;
            f = b = (double)op->attrs.kernel[0] * op->attrs.kernel[1];
        }
        flops = (phase ? b : f) * (double)work;
        if (op->kind == APPROF_OP_EMBEDDING) {
            /* Forward reads only the looked-up rows; backward scatter-adds them. */
            in_bytes = (double)approf_local_elems(x, sp->in_map[0], sp, loc) * approf_dtype_size(x->dtype)
                       + (double)eo * es;
        }
        simple(&ks[nk++], kk, opi, dt, work, flops,
               phase ? in_bytes + 2.0 * (double)eo * es : in_bytes + (double)eo * es);
        approf_kernel_op_set(g, op, sp, loc, phase, &ks[nk - 1]);
        /* an embedding's backward is its table's gradient (its input is
         * token ids, which have none) */
        if (op->kind == APPROF_OP_EMBEDDING && phase)
            ks[nk - 1].wgrad = 1;
        if (op->kind == APPROF_OP_CROSS_ENTROPY)
            ks[nk - 1].loss = phase ? 2 : 1;
        break;
    }
    }
    if (op->attrs.eager && phase == 0)
        nk = approf_eager_kernels(g, opi, sp, loc, ks, nk, APPROF_MAX_KERNELS);
    if (nk < 0 || nk > max)
        return APPROF_EINVAL;
    if (nk)
        memcpy(out, ks, sizeof ks[0] * (size_t)nk);
    return nk;
}

/* Sums the op's kernels for the full sizes. */
static void totals(const ApprofGraph *g, int op, int phase, double *flops, double *bytes)
{
    ApprofKernel ks[APPROF_MAX_KERNELS];
    int n = approf_op_kernels(g, op, NULL, phase, ks, APPROF_MAX_KERNELS);
    *flops = *bytes = 0;
    for (int i = 0; i < n; i++) {
        *flops += ks[i].flops;
        *bytes += ks[i].bytes;
    }
}

double approf_op_flops(const ApprofGraph *g, int op, int phase)
{
    double f, b;
    totals(g, op, phase, &f, &b);
    return f;
}

double approf_op_bytes(const ApprofGraph *g, int op, int phase)
{
    double f, b;
    totals(g, op, phase, &f, &b);
    return b;
}

unsigned approf_op_saved_mask(const ApprofGraph *g, int opi)
{
    const ApprofOp *op;
    if (!g || opi < 0 || (size_t)opi >= g->n_ops)
        return 0;
    op = &g->ops[opi];
    switch (op->kind) {
    case APPROF_OP_MATMUL: case APPROF_OP_BATCH_MATMUL: case APPROF_OP_CONV2D:
    case APPROF_OP_BATCH_NORM: case APPROF_OP_LAYER_NORM: case APPROF_OP_MUL:
    case APPROF_OP_CROSS_ENTROPY: case APPROF_OP_MSE_LOSS: case APPROF_OP_RMS_NORM:
        return APPROF_SAVED_INPUT(0) | APPROF_SAVED_INPUT(1);
    case APPROF_OP_MOE_COMBINE:
        /* the weights' gradient reads the experts' outputs, unless the
         * experts applied the weights themselves (probs_in_experts): then
         * only the routing (which slot goes back to which token) */
        return op->attrs.probs_in_experts ? APPROF_SAVED_INPUT(1)
                                          : APPROF_SAVED_INPUT(0) | APPROF_SAVED_INPUT(1);
    case APPROF_OP_RELU:
        /* in place, the input is gone: the mask comes from the output */
        return op->attrs.inplace ? APPROF_SAVED_OUTPUT(0) : APPROF_SAVED_INPUT(0);
    case APPROF_OP_GELU: case APPROF_OP_EMBEDDING: case APPROF_OP_SILU:
        return APPROF_SAVED_INPUT(0);
    case APPROF_OP_MAX_POOL:
        return APPROF_SAVED_INPUT(0) | APPROF_SAVED_OUTPUT(0);
    case APPROF_OP_SOFTMAX: case APPROF_OP_DROPOUT: case APPROF_OP_TOPK_ROUTER:
        return APPROF_SAVED_OUTPUT(0);
    case APPROF_OP_ATTENTION:
        /* q, k, v and the output (with its log-sum-exp rows): never S x S */
        return APPROF_SAVED_INPUT(0) | APPROF_SAVED_INPUT(1) | APPROF_SAVED_INPUT(2) |
               APPROF_SAVED_OUTPUT(0);
    case APPROF_OP_MOE_DISPATCH:
        /* the routing (which slot holds which token) */
        return APPROF_SAVED_INPUT(1);
    default:
        return 0;
    }
}
