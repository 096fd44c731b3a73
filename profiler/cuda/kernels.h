/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The small CUDA kernels of the approf-cuda module (kernels.cu, compiled by
 * nvcc): a bandwidth kernel standing in for elementwise, reduction, gather
 * and copy kernels (it reads n_in and writes n_out elements of the dtype),
 * and a fill kernel that gives buffers finite pseudo-random values.
 * Launchers return the cudaError_t of the launch as an int.
 */
#ifndef APPROF_CUDA_KERNELS_H
#define APPROF_CUDA_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dtype is an ApprofDtype value (0 f32, 1 f16, 2 bf16); pattern 0 streams,
 * 1 reads 64-element rows in a scattered order (an embedding gather). */
int approf_cuda_launch_bw(int dtype, int pattern, const void *in, int64_t n_in, void *out,
                          int64_t n_out, cudaStream_t stream);
/* Fills n elements with values in [-1, 1) derived from seed. */
int approf_cuda_launch_fill(int dtype, void *p, int64_t n, uint32_t seed, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
