/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA kernels of the approf-cuda module (kernels.cu, compiled by
 * nvcc): the memory-bound operators as the frameworks run them (norms,
 * softmax, activations, dropout, bias, embedding, cross-entropy, batch
 * norm, pooling, rotary embedding; forward and backward), the optimizer
 * step (adam.cu: a fused multi-tensor AdamW), a bandwidth
 * kernel for what has no kernel of its own (copies, the MoE dispatch, the
 * gradient accumulation add), and a fill kernel. Launchers return the
 * cudaError_t of the launch as an int. Plain C types only: this header is
 * read by nvcc (C++), the module and tests/cuda/test_kernels.c.
 */
#ifndef APPROF_CUDA_KERNELS_H
#define APPROF_CUDA_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "op_shape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dtype is an ApprofDtype value (0 f32, 1 f16, 2 bf16); pattern 0 streams,
 * 1 reads 64-element rows in a scattered order (an embedding gather). */
int approf_cuda_launch_bw(int dtype, int pattern, const void *in, int64_t n_in, void *out,
                          int64_t n_out, cudaStream_t stream);
/* Fills n elements with values in [-1, 1) derived from seed. */
int approf_cuda_launch_fill(int dtype, void *p, int64_t n, uint32_t seed, cudaStream_t stream);

/* Fills n bytes with E4M3 values from seed: positive, finite (the
 * exponent never all ones), so an FP8 GEMM reads no NaN. */
int approf_cuda_launch_fill_fp8(void *p, int64_t n, uint32_t seed, cudaStream_t stream);

/* Writes what the kernels index with (ids, labels: hash(i) mod E or C) into
 * the buffers; call once before approf_cuda_launch_op. Other arrays keep
 * whatever they hold (the fill kernel's values). */
int approf_cuda_op_init(const ApprofOpShape *s, void *in, void *out, void *aux,
                        cudaStream_t stream);
/* Runs shape s's kernel(s) on the stream (the zeroing of a scatter-add's
 * output included); APPROF_CUDA_OP_ADAM through approf_cuda_launch_adam. */
int approf_cuda_launch_op(const ApprofOpShape *s, void *in, void *out, void *aux,
                          cudaStream_t stream);
/* The optimizer step (adam.cu; op_shape.h, ADAM): one fused AdamW step
 * over s->rows * s->cols parameters, in place. */
int approf_cuda_launch_adam(const ApprofOpShape *s, void *in, void *out, void *aux,
                            cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
