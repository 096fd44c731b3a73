/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which operator a memory-bound kernel implements (ApprofKernel.kop,
 * kernel_op.h) and its shape, for a backend that runs the operator's own
 * kernel (the CUDA module's ops.cu); and the per-device extents of an
 * operator's tensors that opsem.c's kernels are sized by. Pricing reads
 * none of the kop fields.
 */
#include <string.h>

#include "graph_int.h"

/* Per-device elements of one operand given the loop sizes. */
int64_t approf_local_elems(const ApprofTensor *t, const int *map, const ApprofIterSpace *sp,
                           const int64_t *local)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        int l = map[d];
        int64_t v = t->dims[d];
        if (l >= 0 && sp->size[l] > 0 && local[l] != sp->size[l])
            v = approf_ceil_div(v * local[l], sp->size[l]);
        n *= v;
    }
    return n;
}

/* Extent of dim d of t on one device. */
int64_t approf_local_dim(const ApprofTensor *t, const int *map, const ApprofIterSpace *sp,
                         const int64_t *local, int d)
{
    int l = map[d];
    int64_t v = t->dims[d];
    if (l >= 0 && sp->size[l] > 0 && local[l] != sp->size[l])
        v = approf_ceil_div(v * local[l], sp->size[l]);
    return v;
}

/* The operator a memory-bound kernel k of op runs on a measuring backend
 * (ApprofKernel.kop; kernel_op.h): its row-wise view (the last dim of the
 * first input, softmax's axis when it is the last), a broadcast operand,
 * an embedding's table, NCHW and the window of batch norm and pooling.
 * Operand layouts the kernels do not take stay APPROF_CUDA_OP_NONE. */
void approf_kernel_op_set(const ApprofGraph *g, const ApprofOp *op, const ApprofIterSpace *sp,
                    const int64_t *loc, int phase, ApprofKernel *k)
{
    const ApprofTensor *x = &g->tensors[op->inputs[0]];
    int last = x->ndim - 1, kop = APPROF_CUDA_OP_NONE;
    int64_t n = last >= 0 ? approf_local_elems(x, sp->in_map[0], sp, loc) : 0;
    int64_t cols = last >= 0 ? approf_local_dim(x, sp->in_map[0], sp, loc, last) : 0;

    k->kop_backward = phase;
    switch (op->kind) {
    case APPROF_OP_LAYER_NORM: kop = APPROF_CUDA_OP_LAYER_NORM; break;
    case APPROF_OP_RMS_NORM: kop = APPROF_CUDA_OP_RMS_NORM; break;
    case APPROF_OP_SOFTMAX:
        if (op->attrs.axis == last)
            kop = APPROF_CUDA_OP_SOFTMAX;
        break;
    case APPROF_OP_GELU: kop = APPROF_CUDA_OP_GELU; break;
    case APPROF_OP_SILU: kop = APPROF_CUDA_OP_SILU; break;
    case APPROF_OP_RELU: kop = APPROF_CUDA_OP_RELU; break;
    case APPROF_OP_DROPOUT:
        kop = APPROF_CUDA_OP_DROPOUT;
        k->rate = op->attrs.rate;
        break;
    case APPROF_OP_ROPE: kop = cols % 2 == 0 ? APPROF_CUDA_OP_ROPE : APPROF_CUDA_OP_NONE; break;
    case APPROF_OP_CROSS_ENTROPY: kop = APPROF_CUDA_OP_CROSS_ENTROPY; break;
    case APPROF_OP_ADD: case APPROF_OP_MUL: {
        const ApprofTensor *b = op->n_inputs > 1 ? &g->tensors[op->inputs[1]] : NULL;
        int64_t e = b ? approf_local_elems(b, sp->in_map[1], sp, loc) : 0;
        /* A full-size add's backward has no kernel of its own (PyTorch's
         * AddBackward0 hands the gradient on), but the residual stream it
         * belongs to fans out, and autograd sums the two gradients where it
         * does (InputBuffer::accumulate): the bandwidth kernel over this
         * kernel's bytes measures that add. */
        if (op->kind == APPROF_OP_ADD && phase == 1 && e == n)
            break;
        if (b && (e == n || (e == cols && b->ndim >= 1 &&
                             approf_local_dim(b, sp->in_map[1], sp, loc, b->ndim - 1) == cols))) {
            kop = op->kind == APPROF_OP_ADD ? APPROF_CUDA_OP_ADD : APPROF_CUDA_OP_MUL;
            k->extent = e;
        }
        break;
    }
    case APPROF_OP_EMBEDDING: {
        /* ids[...] and table[V, H]: rows are the looked-up ids. */
        const ApprofTensor *t = &g->tensors[op->inputs[1]];
        if (t->ndim == 2) {
            kop = APPROF_CUDA_OP_EMBEDDING;
            k->rows = n;
            k->cols = approf_local_dim(t, sp->in_map[1], sp, loc, 1);
            k->extent = approf_local_dim(t, sp->in_map[1], sp, loc, 0);
            k->kop = kop;
            return;
        }
        break;
    }
    case APPROF_OP_BATCH_NORM: case APPROF_OP_MAX_POOL: case APPROF_OP_AVG_POOL:
    case APPROF_OP_GLOBAL_POOL:
        if (x->ndim != 4)
            break;
        k->conv_n = approf_local_dim(x, sp->in_map[0], sp, loc, 0);
        k->conv_c = approf_local_dim(x, sp->in_map[0], sp, loc, 1);
        k->conv_h = approf_local_dim(x, sp->in_map[0], sp, loc, 2);
        k->conv_w = approf_local_dim(x, sp->in_map[0], sp, loc, 3);
        if (op->kind == APPROF_OP_GLOBAL_POOL) {
            k->kop = APPROF_CUDA_OP_GLOBAL_POOL;
            k->rows = k->conv_n * k->conv_c;
            k->cols = k->conv_h * k->conv_w;
            return;
        }
        if (op->kind != APPROF_OP_BATCH_NORM) {
            k->conv_r = op->attrs.kernel[0];
            k->conv_s = op->attrs.kernel[1];
            k->conv_stride[0] = op->attrs.stride[0] > 0 ? op->attrs.stride[0] : 1;
            k->conv_stride[1] = op->attrs.stride[1] > 0 ? op->attrs.stride[1] : 1;
            k->conv_pad[0] = op->attrs.padding[0];
            k->conv_pad[1] = op->attrs.padding[1];
            if (k->conv_r <= 0 || k->conv_s <= 0)
                break;
        }
        k->kop = op->kind == APPROF_OP_BATCH_NORM ? APPROF_CUDA_OP_BATCH_NORM
                 : op->kind == APPROF_OP_MAX_POOL ? APPROF_CUDA_OP_MAX_POOL : APPROF_CUDA_OP_AVG_POOL;
        return;
    default: break;
    }
    if (kop == APPROF_CUDA_OP_NONE || cols <= 0 || n % cols)
        return;
    k->kop = kop;
    k->rows = n / cols;
    k->cols = cols;
}

/* A linear layer's bias over m rows of n: added forward, its gradient
 * summed over the rows backward. */
void approf_kernel_op_bias(ApprofKernel *k, int64_t m, int64_t n, int phase)
{
    k->kop = APPROF_CUDA_OP_BIAS;
    k->kop_backward = phase;
    k->rows = m;
    k->cols = n;
}
