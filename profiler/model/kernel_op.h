/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator a memory-bound kernel implements (ApprofKernel.kop): what the
 * measuring backend runs for it (profiler/cuda/ops.cu, its arrays in
 * cuda/op_shape.h). APPROF_CUDA_OP_NONE: no kernel of its own (a copy, the
 * MoE dispatch, a gradient accumulation add, an operand layout the kernels
 * do not take); the backend then runs its bandwidth kernel over the
 * kernel's bytes. Plain C with no includes: nvcc reads it too.
 */
#ifndef APPROF_KERNEL_OP_H
#define APPROF_KERNEL_OP_H

enum {
    APPROF_CUDA_OP_NONE = 0,
    APPROF_CUDA_OP_LAYER_NORM,
    APPROF_CUDA_OP_RMS_NORM,
    APPROF_CUDA_OP_SOFTMAX,
    APPROF_CUDA_OP_GELU,
    APPROF_CUDA_OP_SILU,
    APPROF_CUDA_OP_RELU,
    APPROF_CUDA_OP_DROPOUT,
    APPROF_CUDA_OP_ADD,
    APPROF_CUDA_OP_MUL,
    APPROF_CUDA_OP_BIAS,
    APPROF_CUDA_OP_EMBEDDING,
    APPROF_CUDA_OP_CROSS_ENTROPY,
    APPROF_CUDA_OP_BATCH_NORM,
    APPROF_CUDA_OP_MAX_POOL,
    APPROF_CUDA_OP_AVG_POOL,
    APPROF_CUDA_OP_GLOBAL_POOL,
    APPROF_CUDA_OP_ROPE,
    APPROF_CUDA_OP_COUNT
};

#endif
