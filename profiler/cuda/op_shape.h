/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operators the CUDA module runs with kernels of their own (kernels.cu)
 * and the arrays each one reads and writes. Plain C, no CUDA: read by
 * nvcc (C++), the module, the host library (kernel_plan.c computes the
 * layouts; unit-tested without a GPU) and tests/cuda/test_kernels.c.
 */
#ifndef APPROF_CUDA_OP_SHAPE_H
#define APPROF_CUDA_OP_SHAPE_H

#include <stdint.h>

#include "../model/kernel_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One operator's kernel(s): op is an APPROF_CUDA_OP_* value (kernel_op.h;
 * the graph's kernels carry it as ApprofKernel.kop). R = rows, C = cols.
 *
 * Buffers: `in`, `out` and `aux`; each holds the arrays named below back
 * to back, every array starting at a multiple of 256 bytes
 * (approf_op_layout gives the offsets and sizes). "es" arrays are in the
 * dtype, "f32" in float, "i32" in int32. Math is in f32 throughout.
 *
 * LAYER_NORM (row-wise over C; Apex/Megatron's fused layer norm):
 *   fwd: in x[R*C]; out y[R*C]; aux gamma[C] es, beta[C] es, mean[R] f32, rstd[R] f32.
 *        y = (x - mean) * rstd * gamma + beta, rstd = 1/sqrt(var + 1e-5) (biased var);
 *        mean and rstd are written.
 *   bwd: in x[R*C], dy[R*C]; out dx[R*C]; aux as fwd (mean, rstd read) then
 *        dgamma[C] f32, dbeta[C] f32 (overwritten).
 * RMS_NORM: as LAYER_NORM with mean 0 (no beta term, dbeta not written);
 *   rstd = 1/sqrt(mean(x^2) + 1e-5).
 * SOFTMAX (row-wise over C): fwd in x; out y. bwd in y, dy; out dx =
 *   y * (dy - sum_row(dy * y)).
 * GELU (tanh form, Megatron's bias_gelu and GPT-2's gelu_new), SILU, RELU:
 *   fwd in x; out y. bwd in x (RELU: y), dy; out dx = f'(x) dy.
 * DROPOUT (rate p; keep iff hash(i, seed) / 2^32 >= p): fwd in x; out
 *   y = keep ? x / (1 - p) : 0. bwd in y, dy; out dx = y != 0 ? dy / (1 - p) : 0.
 * ADD, MUL: fwd in a[R*C], b[E] (E = extent: R*C, or C for a row
 *   broadcast); out y = a op b[i % E]. bwd: ADD in dy[R*C]; out db[E] =
 *   column sums of dy when E < R*C (PyTorch passes the full-size gradient
 *   through without a kernel: none is run when E == R*C); MUL in a, b[E],
 *   dy; out da[R*C] = dy * b, db[E] = dy * a (column sums when E < R*C,
 *   f32 then).
 * BIAS (a linear layer's bias): fwd in x[R*C]; out y = x + bias[col]; aux
 *   bias[C] es. bwd in dy[R*C]; out db[C] f32 = column sums.
 * EMBEDDING (table of E rows of C): fwd in ids[R] i32; out y[R*C] =
 *   table[ids[r]]; aux table[E*C] es. bwd in ids[R] i32, dy[R*C]; out
 *   dtable[E*C] f32, zeroed then scatter-added (atomics).
 * CROSS_ENTROPY (logits R x C, C the vocabulary): fwd in logits[R*C]; out
 *   loss[R] f32 = lse - logit[label]; aux labels[R] i32, lse[R] f32
 *   (written). bwd in logits[R*C]; out dlogits[R*C] = softmax - onehot;
 *   aux labels, lse (read).
 * BATCH_NORM (NCHW x of n, c, h, w; per channel; cuDNN's spatial mode):
 *   fwd in x; out y; aux gamma[c], beta[c], mean[c], rstd[c], running
 *   mean[c], running var[c], all f32 (PyTorch keeps a batch norm's
 *   parameters and statistics in f32 under mixed precision, and cuDNN takes
 *   f32 scale and bias for 16-bit data; the own kernel leaves the running
 *   statistics alone, cuDNN updates them). bwd in x, dy; out dx; aux as fwd
 *   then dgamma[c] f32, dbeta[c] f32.
 * MAX_POOL, AVG_POOL (NCHW, window r x s, stride, pad; output oh x ow;
 *   average over the whole window, padding counted): fwd in x; out y.
 *   bwd in x, dy[n*c*oh*ow]; out dx[n*c*h*w] f32, zeroed then
 *   scatter-added.
 * GLOBAL_POOL (mean over C = h*w of R = n*c rows): fwd in x[R*C]; out
 *   y[R]. bwd in dy[R]; out dx[R*C] = dy / C.
 * ROPE (rotate-half, head dim C even, position = row % E, or the row when
 *   E is 0, theta 10000): fwd in x; out y. bwd in dy; out dx (the inverse
 *   rotation).
 * ADAM (APPROF_CUDA_OP_ADAM below: the optimizer step over N = R*C
 *   parameters, no graph kernel's operator; forward only): one fused
 *   multi-tensor AdamW step as Transformer Engine's FusedAdam
 *   (multi_tensor/adam.cu, AdamFunctorMaster) and Apex's run it, the
 *   hyperparameters of Megatron-LM's defaults: lr 1e-3, beta1 0.9, beta2
 *   0.999, eps 1e-8, decoupled weight decay 0.01, step 1 (bias corrections
 *   1 - beta^1). m' = beta1 m + (1 - beta1) g; v' = beta2 v + (1 - beta2) g^2;
 *   p' = p - lr (m' / (1 - beta1) / (sqrt(v' / (1 - beta2)) + eps) + 0.01 p).
 *   f32: in g[N] f32; out p[N] f32 (read and written); aux m[N] f32, v[N]
 *   f32 (read and written). f16, bf16 (mixed precision: an f32 master copy):
 *   in g[N] es; out p[N] es (written: the master rounded); aux master[N]
 *   f32, m[N] f32, v[N] f32 (read and written; p in the formula is the
 *   master).
 */

/* The optimizer step's operator: after the graph kernels' (no
 * ApprofKernel.kop names it, so approf_kernel_buffers never runs it). */
#define APPROF_CUDA_OP_ADAM APPROF_CUDA_OP_COUNT

typedef struct ApprofOpShape {
    int op;               /* APPROF_CUDA_OP_* */
    int backward;         /* 0 forward, 1 backward */
    int dtype;            /* 0 f32, 1 f16, 2 bf16 */
    int64_t rows, cols;   /* row-wise view (see above) */
    int64_t extent;       /* E: second operand, table rows, positions */
    int64_t n, c, h, w;   /* batch norm, pooling: NCHW input */
    int r, s, stride[2], pad[2];
    int64_t oh, ow;       /* pooling output */
    float rate;           /* dropout */
} ApprofOpShape;

#define APPROF_OP_MAX_ARRAYS 8

/* Where the arrays of one buffer lie: offset[i] and bytes[i] of its n
 * arrays (each offset a multiple of 256), total the buffer's size. */
typedef struct ApprofOpArrays {
    int n;
    int64_t offset[APPROF_OP_MAX_ARRAYS], bytes[APPROF_OP_MAX_ARRAYS];
    int64_t total;
} ApprofOpArrays;

/* The three buffers of shape s ([0] in, [1] out, [2] aux), as documented
 * above. 0, or -1 for an unknown operator, a non-positive size the
 * operator needs, or a size that overflows. Plain C, no CUDA: kernel_plan.c
 * (host side, unit-tested without a GPU). */
int approf_op_layout(const ApprofOpShape *s, ApprofOpArrays out[3]);
/* Appends an array of elems elements of esz bytes to a (at the next
 * multiple of 256 bytes); -1 when a size is not positive or overflows, or
 * a is full. */
int approf_op_arrays_add(ApprofOpArrays *a, int64_t elems, int64_t esz);

#ifdef __cplusplus
}
#endif
#endif
