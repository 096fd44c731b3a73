/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The module's error conversion (CUDA, cuBLAS, cuDNN status to an APPROF_*
 * code and a message) and its environment switches, shared by every file
 * of the module and by tests/cuda/test_kernels.c (which runs
 * grouped_gemm.c's GEMMs against a CPU reference).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "module_int.h"

int cuda_ck(cudaError_t e, const char *what, char *err, size_t errlen)
{
    if (e == cudaSuccess)
        return 0;
    snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e));
    return e == cudaErrorMemoryAllocation ? APPROF_ENOMEM : APPROF_EIO;
}

int cublas_ck(cublasStatus_t s, const char *what, char *err, size_t errlen)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    snprintf(err, errlen, "%s: %s", what, cublasLtGetStatusString(s));
    return s == CUBLAS_STATUS_ALLOC_FAILED ? APPROF_ENOMEM : APPROF_EIO;
}

int cudnn_ck(cudnnStatus_t s, const char *what, char *err, size_t errlen)
{
    if (s == CUDNN_STATUS_SUCCESS)
        return 0;
    snprintf(err, errlen, "%s: %s", what, cudnnGetErrorString(s));
    return (s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
            s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED) ? APPROF_ENOMEM : APPROF_EIO;
}

int cuda_env_int(const char *name, int def, int lo, int hi)
{
    const char *s = getenv(name);
    char *end = NULL;
    long v;
    if (!s || !*s)
        return def;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return def;
    return (int)v;
}
